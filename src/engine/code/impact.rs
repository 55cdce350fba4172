//! Impact queries over the stored import graph: a file's inbound and outbound dependencies to a
//! depth, the files whose behaviour may change when it changes, import cycles, unresolved
//! imports, and the one-hop neighbourhood of a set of changed files (diff-aware context).
//!
//! The responses are the JSON contracts of every surface: `docdex impact --json`, `GET
//! /v1/graph/impact?file=` and the MCP tool `docdex_impact` return [`ImpactResponse`] as is.
//! It carries what a node-link diagram needs: nodes with their depth and side (inbound,
//! outbound) and flags (in a cycle, unresolved imports, external), and the edges among them with
//! method and confidence. Edges always read `source -> target`: the source imports the target.
//!
//! Loaded graphs are cached per repository and reloaded when `impact_graph.json` changes.

use super::graph::{self, Cycle, Diagnostic, Edge, FileImports, GraphStats, ImpactGraph, SchemaTag, EXTERNAL_PREFIX};
use super::Lang;
use crate::engine::cancel::CancelToken;
use crate::engine::fsutil::FileLock;
use crate::engine::index::manifest::Manifest;
use crate::engine::index::status::{live_watcher, RunWaiter};
use crate::engine::index::types::IndexProgress;
use crate::engine::index::ProgressSink;
use crate::engine::repos::RepoRef;
use crate::engine::Engine;
use crate::error::{shell_path, Error, Result};
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;
use petgraph::Direction::{Incoming, Outgoing};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What every edge means, stated in each response.
pub const EDGE_SEMANTICS: &str =
    "source -> target: the source file imports the target; a change to the target may change the source";
/// Default traversal depth of `impact`.
pub const DEFAULT_DEPTH: u32 = 1;
/// Deepest traversal allowed.
pub const MAX_DEPTH: u32 = 64;
/// Most nodes listed per side before the response is marked truncated.
pub const MAX_NODES_PER_SIDE: usize = 2_000;
/// Nodes a walk over the whole graph (all transitive dependents) visits between looks at the
/// cancellation token: a few hundred microseconds of work.
const CANCEL_EVERY_NODES: usize = 4_096;

/// What [`LoadedGraph::impact`] finds: inbound and outbound dependencies, every transitive
/// dependent, and whether a side was cut at [`MAX_NODES_PER_SIDE`].
pub type ImpactWalk = (Vec<Dependency>, Vec<Dependency>, Vec<String>, bool);

/// Which dependencies to follow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Files that import the file (its dependents), transitively.
    In,
    /// What the file imports (its dependencies), transitively.
    Out,
    /// Both.
    #[default]
    Both,
}

/// `docdex impact` / `GET /v1/graph/impact` / MCP `docdex_impact` parameters.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ImpactRequest {
    /// Repo-relative path of the file you plan to change (e.g. `src/auth/session.rs`;
    /// absolute paths inside the repo are accepted), or `ext:<package>`.
    pub file: String,
    /// Import hops to follow (default 1, at most 64). `affected` always lists every
    /// transitive dependent, whatever the depth.
    #[serde(default)]
    pub depth: Option<u32>,
    /// `in`: files that import it (what may break); `out`: what it imports; `both` (default).
    #[serde(default)]
    pub direction: Option<Direction>,
}

/// Where a node sits relative to the queried file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The queried file.
    Root,
    /// Depends on the root (reached against edge direction).
    In,
    /// The root depends on it (reached along edge direction).
    Out,
    /// Both (the root is in a cycle with it).
    Both,
}

/// A node of the impact neighbourhood.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ImpactNode {
    /// The file path, or `ext:<package>`.
    pub id: String,
    /// An external package rather than a repository file.
    pub external: bool,
    /// The file's language (`rust`, `python`, ...), when it is a code file.
    pub lang: Option<String>,
    /// Import hops from the queried file (0 for the file itself).
    pub depth: u32,
    /// Inbound, outbound, both, or the root.
    pub side: Side,
    /// Part of an import cycle.
    pub in_cycle: bool,
    /// How many of its imports stayed unresolved (see `docdex impact diagnostics`).
    pub unresolved_imports: usize,
}

/// A dependency reached from the queried file, with the edge that reached it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Dependency {
    /// The file path, or `ext:<package>`.
    pub path: String,
    /// An external package.
    pub external: bool,
    /// Import hops from the queried file.
    pub depth: u32,
    /// Product of the confidences along the path from the queried file.
    pub confidence: f32,
    /// The edge linking it to the node one hop closer to the queried file
    /// (`edge.source` imports `edge.target`).
    pub edge: Edge,
}

/// Facts about the stored graph a response was computed from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GraphInfo {
    /// When the graph was built, epoch ms (0 for a migrated version 1 file).
    pub generated_at_ms: u64,
    /// Counts from the build.
    pub stats: GraphStats,
    /// Problems with the inputs, and migration notes.
    pub warnings: Vec<String>,
}

/// The answer to `impact`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ImpactResponse {
    /// `{"name": "docdex.impact_graph", "version": 2}`.
    pub schema: SchemaTag,
    /// Repo fingerprint.
    pub project_id: String,
    /// Repo root.
    pub repo: PathBuf,
    /// The queried file, repo-relative.
    pub file: String,
    /// Directions followed.
    pub direction: Direction,
    /// Depth followed.
    pub depth: u32,
    /// What an edge means.
    pub edge_semantics: String,
    /// Files that import the queried file, directly (depth 1) or transitively, nearest first.
    pub inbound: Vec<Dependency>,
    /// Files and packages the queried file imports, directly or transitively, nearest first.
    pub outbound: Vec<Dependency>,
    /// Every file whose behaviour may change if the queried file changes: all transitive
    /// dependents, whatever `depth` is. Nearest first.
    pub affected: Vec<String>,
    /// The queried file and every dependency listed, for drawing.
    pub nodes: Vec<ImpactNode>,
    /// The edges among `nodes`.
    pub edges: Vec<Edge>,
    /// The queried file's own unresolved imports.
    pub diagnostics: Vec<Diagnostic>,
    /// True when a side was cut at the node limit.
    pub truncated: bool,
    /// The stored graph.
    pub graph: GraphInfo,
}

/// The answer to `graph cycles`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CyclesResponse {
    /// Schema tag.
    pub schema: SchemaTag,
    /// Repo fingerprint.
    pub project_id: String,
    /// Repo root.
    pub repo: PathBuf,
    /// Import cycles (strongly connected sets of files), largest first.
    pub cycles: Vec<Cycle>,
    /// Distinct files in some cycle.
    pub files_in_cycles: usize,
    /// The stored graph.
    pub graph: GraphInfo,
}

/// Unresolved imports of one file.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct FileDiagnostics {
    /// The importing file.
    pub path: String,
    /// Its unresolved imports in line order.
    pub diagnostics: Vec<Diagnostic>,
}

/// Rows an HTTP or MCP answer lists when the request names no `limit` ([`DiagnosticsRequest`],
/// [`crate::engine::protocol::TestsRequest`]): an agent reads the nearest few, and a repository
/// with 40,000 unresolved imports is megabytes of JSON. The command line lists all.
pub const DEFAULT_LISTED: usize = 200;

/// A request's `limit` cut to `MAX_LIMIT` (0 refused, [`super::api::checked_limit`]); `None`
/// lists everything (the command line).
pub(crate) fn list_limit(limit: Option<usize>) -> Result<usize> {
    match limit {
        None => Ok(usize::MAX),
        some => super::api::checked_limit(some, super::api::MAX_LIMIT),
    }
}

/// `docdex impact diagnostics` / `GET /v1/graph/diagnostics` / MCP `docdex_impact_diagnostics`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct DiagnosticsRequest {
    /// Only this file's unresolved imports (repo-relative); all files' without it.
    #[serde(default)]
    pub file: Option<String>,
    /// Unresolved imports listed at most (1..1000; HTTP and MCP default to 200). `total` counts
    /// them all and `truncated` says when some were left out.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// The answer to `impact diagnostics`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DiagnosticsResponse {
    /// Schema tag.
    pub schema: SchemaTag,
    /// Repo fingerprint.
    pub project_id: String,
    /// Repo root.
    pub repo: PathBuf,
    /// Unresolved imports, grouped by importing file, files sorted by path (the first `limit`).
    pub files: Vec<FileDiagnostics>,
    /// Unresolved imports in all, listed or not.
    pub total: usize,
    /// True when `limit` left some out of `files`.
    #[serde(default)]
    pub truncated: bool,
    /// Per reason code, over all of them.
    pub by_code: BTreeMap<String, usize>,
    /// The stored graph.
    pub graph: GraphInfo,
}

/// How a neighbour relates to the changed files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    /// A changed file imports it (directly or through others).
    ImportedByChanged,
    /// It imports a changed file: its behaviour may change.
    ImportsChanged,
    /// Both.
    Both,
}

/// A file near a set of changed files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Neighbor {
    /// Repo-relative path.
    pub path: String,
    /// Hops from the nearest changed file.
    pub distance: u32,
    /// Direction of the link.
    pub relation: Relation,
    /// The changed files it is linked to.
    pub changed: Vec<String>,
    /// Highest path confidence among its links.
    pub confidence: f32,
}

/// The answer to `impact_neighbors`: the changed files' dependencies and dependents.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct NeighborsResponse {
    /// Hops followed.
    pub hops: u32,
    /// Neighbouring files (changed files excluded), nearest and most confident first.
    pub files: Vec<Neighbor>,
    /// Input paths that are not in the graph (deleted, not code, outside the repo).
    pub unknown: Vec<String>,
}

/// What `rebuild_impact_graph` did.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RebuildSummary {
    /// Repo root.
    pub repo: PathBuf,
    /// Where the graph was written.
    pub path: PathBuf,
    /// Time to read and parse the code files, ms.
    pub parse_ms: f64,
    /// Counts (including the graph build time).
    pub stats: GraphStats,
    /// Warnings from the build.
    pub warnings: Vec<String>,
}

/// A graph ready for queries: files and packages are petgraph nodes (weighted by their id),
/// each petgraph edge carries the index of its stored [`Edge`].
#[derive(Debug)]
pub struct LoadedGraph {
    /// The stored graph.
    pub graph: ImpactGraph,
    ids: HashMap<String, NodeIndex>,
    g: DiGraph<String, u32>,
    in_cycle: Vec<bool>,
    unresolved: Vec<usize>,
}

impl LoadedGraph {
    /// Builds the petgraph over the stored files and edges.
    pub fn new(graph: ImpactGraph) -> LoadedGraph {
        let mut ids: HashMap<String, NodeIndex> = HashMap::new();
        let mut g: DiGraph<String, u32> = DiGraph::with_capacity(graph.files.len(), graph.edges.len());
        let mut node = |name: &str, g: &mut DiGraph<String, u32>| -> NodeIndex {
            *ids.entry(name.to_string()).or_insert_with(|| g.add_node(name.to_string()))
        };
        for f in graph.files.keys() {
            node(f, &mut g);
        }
        let ends: Vec<(NodeIndex, NodeIndex)> =
            graph.edges.iter().map(|e| (node(&e.source, &mut g), node(&e.target, &mut g))).collect();
        // petgraph lists a node's newest edge first: added last to first, every walk sees a
        // node's edges in stored order (which ties between equally good paths depend on).
        for (i, &(s, t)) in ends.iter().enumerate().rev() {
            g.add_edge(s, t, i as u32);
        }
        let mut in_cycle = vec![false; g.node_count()];
        for f in graph.cycles.iter().flat_map(|c| c.files.iter()) {
            if let Some(&i) = ids.get(f) {
                in_cycle[i.index()] = true;
            }
        }
        let mut unresolved = vec![0; g.node_count()];
        for d in &graph.diagnostics {
            if let Some(&i) = ids.get(&d.source) {
                unresolved[i.index()] += 1;
            }
        }
        LoadedGraph { graph, ids, g, in_cycle, unresolved }
    }

    /// True if the id is a file of the graph, an edge endpoint, or a package it imports.
    pub fn contains(&self, id: &str) -> bool {
        self.ids.contains_key(id)
    }

    /// The node of a file or package id.
    pub(crate) fn node_of(&self, id: &str) -> Option<NodeIndex> {
        self.ids.get(id).copied()
    }

    fn info(&self) -> GraphInfo {
        GraphInfo {
            generated_at_ms: self.graph.generated_at_ms,
            stats: self.graph.stats.clone(),
            warnings: self.graph.warnings.clone(),
        }
    }

    fn node(&self, id: NodeIndex, depth: u32, side: Side) -> ImpactNode {
        let name = &self.g[id];
        ImpactNode {
            id: name.clone(),
            external: name.starts_with(EXTERNAL_PREFIX),
            lang: self.graph.files.get(name).map(|l| l.name().to_string()),
            depth,
            side,
            in_cycle: self.in_cycle[id.index()],
            unresolved_imports: self.unresolved[id.index()],
        }
    }

    /// Breadth-first from `root` along (`forward`) or against the edges, to `depth` hops;
    /// `limit` caps the nodes returned (the bool says whether it was hit). Each node keeps its
    /// shallowest depth and, at that depth, its most confident path. (A walk of our own over
    /// petgraph's adjacency: its `Bfs` yields nodes without the depth, the path confidence or
    /// a node budget, which are the answer here.) Ends with [`Error::Cancelled`] between levels
    /// once the thread's ambient token trips (a walk of a large graph to depth 64 is long).
    pub(crate) fn traverse(
        &self,
        root: NodeIndex,
        forward: bool,
        depth: u32,
        limit: usize,
    ) -> Result<(Vec<Dependency>, bool)> {
        let cancel = CancelToken::current();
        let dir = if forward { Outgoing } else { Incoming };
        // node -> (depth, path confidence, edge)
        let mut best: HashMap<NodeIndex, (u32, f32, u32)> = HashMap::new();
        let mut order: Vec<NodeIndex> = Vec::new();
        let mut frontier: Vec<(NodeIndex, f32)> = vec![(root, 1.0)];
        let mut truncated = false;
        for d in 1..=depth {
            cancel.check()?;
            let mut next: Vec<NodeIndex> = Vec::new();
            for &(node, conf) in &frontier {
                for e in self.g.edges_directed(node, dir) {
                    let ei = *e.weight();
                    let other = if forward { e.target() } else { e.source() };
                    if other == root {
                        continue;
                    }
                    let c = conf * self.graph.edges[ei as usize].confidence;
                    match best.get_mut(&other) {
                        Some(entry) if entry.0 == d && c > entry.1 => *entry = (d, c, ei),
                        Some(_) => {}
                        None => {
                            if order.len() >= limit {
                                truncated = true;
                                continue;
                            }
                            best.insert(other, (d, c, ei));
                            order.push(other);
                            next.push(other);
                        }
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            // Confidences of this level are final now; carry them forward.
            frontier = next.into_iter().map(|n| (n, best[&n].1)).collect();
        }
        let deps = order
            .into_iter()
            .map(|id| {
                let (depth, confidence, ei) = best[&id];
                let name = &self.g[id];
                Dependency {
                    path: name.clone(),
                    external: name.starts_with(EXTERNAL_PREFIX),
                    depth,
                    confidence,
                    edge: self.graph.edges[ei as usize].clone(),
                }
            })
            .collect();
        Ok((deps, truncated))
    }

    /// All transitive dependents of `root`, nearest first, then by path; [`Error::Cancelled`]
    /// (looked at every [`CANCEL_EVERY_NODES`] nodes) once the ambient token trips.
    fn dependents(&self, root: NodeIndex) -> Result<Vec<String>> {
        let cancel = CancelToken::current();
        let mut seen = vec![false; self.g.node_count()];
        seen[root.index()] = true;
        let mut queue = VecDeque::from([(root, 0u32)]);
        let mut found: Vec<(u32, &str)> = Vec::new();
        let mut visited = 0usize;
        while let Some((node, d)) = queue.pop_front() {
            visited += 1;
            if visited.is_multiple_of(CANCEL_EVERY_NODES) {
                cancel.check()?;
            }
            for s in self.g.neighbors_directed(node, Incoming) {
                if !seen[s.index()] {
                    seen[s.index()] = true;
                    found.push((d + 1, &self.g[s]));
                    queue.push_back((s, d + 1));
                }
            }
        }
        found.sort_unstable();
        Ok(found.into_iter().map(|(_, s)| s.to_string()).collect())
    }

    /// The impact of `file` (a node id): inbound and outbound dependencies to `depth`, all
    /// transitive dependents, and whether a side was cut at the node limit;
    /// [`Error::Cancelled`] when the thread's ambient token trips during the walks.
    pub fn impact(&self, file: &str, depth: u32, direction: Direction) -> Result<ImpactWalk> {
        let Some(&root) = self.ids.get(file) else { return Ok((Vec::new(), Vec::new(), Vec::new(), false)) };
        let (inbound, t1) = if direction != Direction::Out {
            self.traverse(root, false, depth, MAX_NODES_PER_SIDE)?
        } else {
            (Vec::new(), false)
        };
        let (outbound, t2) = if direction != Direction::In {
            self.traverse(root, true, depth, MAX_NODES_PER_SIDE)?
        } else {
            (Vec::new(), false)
        };
        Ok((inbound, outbound, self.dependents(root)?, t1 || t2))
    }

    /// Nodes (root first) and the edges among them.
    fn subgraph(&self, file: &str, inbound: &[Dependency], outbound: &[Dependency]) -> (Vec<ImpactNode>, Vec<Edge>) {
        let Some(&root) = self.ids.get(file) else { return (Vec::new(), Vec::new()) };
        let mut nodes: Vec<ImpactNode> = vec![self.node(root, 0, Side::Root)];
        let mut index: HashMap<NodeIndex, usize> = HashMap::from([(root, 0)]);
        for (deps, side) in [(inbound, Side::In), (outbound, Side::Out)] {
            for d in deps {
                let Some(&id) = self.ids.get(&d.path) else { continue };
                match index.get(&id) {
                    Some(&i) => {
                        nodes[i].side = Side::Both;
                        nodes[i].depth = nodes[i].depth.min(d.depth);
                    }
                    None => {
                        index.insert(id, nodes.len());
                        nodes.push(self.node(id, d.depth, side));
                    }
                }
            }
        }
        let mut edge_ids: Vec<u32> = index
            .keys()
            .flat_map(|&n| self.g.edges_directed(n, Outgoing))
            .filter(|e| index.contains_key(&e.target()))
            .map(|e| *e.weight())
            .collect();
        edge_ids.sort_unstable();
        (nodes, edge_ids.into_iter().map(|i| self.graph.edges[i as usize].clone()).collect())
    }

    /// Dependencies and dependents of `files` (node ids) to `hops`, files only;
    /// [`Error::Cancelled`] when the thread's ambient token trips during a walk.
    pub fn neighbors(&self, files: &[String], hops: u32) -> Result<Vec<Neighbor>> {
        let seeds: HashSet<&str> = files.iter().map(String::as_str).collect();
        let mut found: BTreeMap<String, Neighbor> = BTreeMap::new();
        for f in files {
            let Some(&root) = self.ids.get(f) else { continue };
            for (forward, relation) in [(true, Relation::ImportedByChanged), (false, Relation::ImportsChanged)] {
                let (deps, _) = self.traverse(root, forward, hops, usize::MAX)?;
                for d in deps.into_iter().filter(|d| !d.external && !seeds.contains(d.path.as_str())) {
                    let n = found.entry(d.path.clone()).or_insert_with(|| Neighbor {
                        path: d.path.clone(),
                        distance: d.depth,
                        relation,
                        changed: Vec::new(),
                        confidence: 0.0,
                    });
                    if n.relation != relation {
                        n.relation = Relation::Both;
                    }
                    n.distance = n.distance.min(d.depth);
                    n.confidence = n.confidence.max(d.confidence);
                    if !n.changed.contains(f) {
                        n.changed.push(f.clone());
                    }
                }
            }
        }
        let mut out: Vec<Neighbor> = found.into_values().collect();
        for n in &mut out {
            n.changed.sort();
        }
        out.sort_by(|a, b| {
            a.distance.cmp(&b.distance).then(b.confidence.total_cmp(&a.confidence)).then(a.path.cmp(&b.path))
        });
        Ok(out)
    }
}

/// Loaded graphs per repository, reloaded when the file's size or mtime changes.
#[derive(Debug, Default)]
pub struct GraphCache {
    entries: Mutex<HashMap<String, (FileStamp, Arc<LoadedGraph>)>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct FileStamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl GraphCache {
    /// The repo's graph, loading (or reloading) it when needed; `None` when there is none.
    fn get(&self, repo: &RepoRef) -> Result<Option<Arc<LoadedGraph>>> {
        let path = graph::graph_path(repo);
        let stamp = match std::fs::metadata(&path) {
            Ok(m) => FileStamp { len: m.len(), modified: m.modified().ok() },
            Err(_) => {
                if let Ok(mut entries) = self.entries.lock() {
                    entries.remove(&repo.fingerprint);
                }
                return Ok(None);
            }
        };
        if let Ok(entries) = self.entries.lock() {
            if let Some((s, g)) = entries.get(&repo.fingerprint) {
                if *s == stamp {
                    return Ok(Some(g.clone()));
                }
            }
        }
        let Some(graph) = graph::load(&path)? else { return Ok(None) };
        let loaded = Arc::new(LoadedGraph::new(graph));
        if let Ok(mut entries) = self.entries.lock() {
            entries.insert(repo.fingerprint.clone(), (stamp, loaded.clone()));
        }
        Ok(Some(loaded))
    }
}

impl Engine {
    /// The repository's loaded impact graph, or a not-indexed error saying what to run. An
    /// indexed repository without a graph (no code files, or indexed before graphs existed)
    /// answers from an empty graph whose warning says how to build it.
    pub fn impact_graph(&self, repo_path: &Path) -> Result<(RepoRef, Arc<LoadedGraph>)> {
        let repo = self.resolve_repo(repo_path)?;
        match self.inner.impact_graphs.get(&repo)? {
            Some(g) => Ok((repo, g)),
            None if repo.manifest_path().exists() => {
                let empty = graph::build(&repo.root, &[], &Default::default(), &Default::default());
                let mut g = LoadedGraph::new(empty);
                g.graph.warnings.push(no_graph_yet(&repo));
                Ok((repo, Arc::new(g)))
            }
            None => Err(Error::NotIndexed { path: repo.root.clone() }),
        }
    }

    /// Inbound and outbound dependencies of a file to a depth, and every file whose behaviour
    /// may change if it changes.
    pub fn impact(&self, repo_path: &Path, req: &ImpactRequest) -> Result<ImpactResponse> {
        let not_refreshed = self.refresh_edited(repo_path, &req.file);
        let (repo, g) = self.impact_graph(repo_path)?;
        let depth = req.depth.unwrap_or(DEFAULT_DEPTH);
        if depth == 0 || depth > MAX_DEPTH {
            return Err(Error::BadRequest(format!("depth must be between 1 and {MAX_DEPTH}, got {depth}")));
        }
        let direction = req.direction.unwrap_or_default();
        let file = normalize_file(&repo, &req.file)?;
        if !g.contains(&file) {
            return Err(unknown_file(&repo, &file, &g));
        }
        let (inbound, outbound, affected, truncated) = g.impact(&file, depth, direction)?;
        let (nodes, edges) = g.subgraph(&file, &inbound, &outbound);
        let diagnostics = g.graph.diagnostics.iter().filter(|d| d.source == file).cloned().collect();
        let mut graph = graph_info(&repo, &g);
        graph.warnings.extend(deleted_since_indexed(&repo, &file));
        graph.warnings.extend(imports_unread(&repo, &file));
        graph.warnings.extend(not_refreshed);
        Ok(ImpactResponse {
            schema: SchemaTag::current(),
            project_id: repo.fingerprint.clone(),
            repo: repo.root.clone(),
            file,
            direction,
            depth,
            edge_semantics: EDGE_SEMANTICS.to_string(),
            inbound,
            outbound,
            affected,
            nodes,
            edges,
            diagnostics,
            truncated,
            graph,
        })
    }

    /// Brings `file` into the index first when it was edited after the index's last commit,
    /// so its imports are the ones on disk now: the graph answered for the file as it was,
    /// without a word (tour35 F6). A warning when it could not (another process writes the
    /// index); `None` otherwise, errors included: the answer that follows reports them. A file's
    /// outline (`symbols --file`) comes through here too.
    pub(crate) fn refresh_edited(&self, repo_path: &Path, file: &str) -> Option<String> {
        let repo = self.resolve_repo(repo_path).ok()?;
        let file = normalize_file(&repo, file).ok()?;
        if file.starts_with(EXTERNAL_PREFIX) || !Engine::edited_since_commit(&repo, &file) {
            return None;
        }
        match self.refresh_files(&repo, std::slice::from_ref(&file)) {
            Some(_) => None,
            None if !self.has_index(&repo) => None,
            None => Some(format!(
                "{file} changed since the index's last run and could not be indexed first (a watcher or another docdex run is indexing it): its imports here are as of that run"
            )),
        }
    }

    /// The repository's import cycles.
    pub fn graph_cycles(&self, repo_path: &Path) -> Result<CyclesResponse> {
        let (repo, g) = self.impact_graph(repo_path)?;
        let files: HashSet<&String> = g.graph.cycles.iter().flat_map(|c| c.files.iter()).collect();
        Ok(CyclesResponse {
            schema: SchemaTag::current(),
            project_id: repo.fingerprint.clone(),
            repo: repo.root.clone(),
            files_in_cycles: files.len(),
            cycles: g.graph.cycles.clone(),
            graph: graph_info(&repo, &g),
        })
    }

    /// Unresolved imports by file (all files, or one), the first `limit` listed.
    pub fn impact_diagnostics(&self, repo_path: &Path, req: &DiagnosticsRequest) -> Result<DiagnosticsResponse> {
        let (repo, g) = self.impact_graph(repo_path)?;
        let only = match req.file.as_deref() {
            Some(f) => {
                let f = normalize_file(&repo, f)?;
                if !g.contains(&f) {
                    return Err(unknown_file(&repo, &f, &g));
                }
                Some(f)
            }
            None => None,
        };
        let mut grouped: BTreeMap<String, Vec<Diagnostic>> = BTreeMap::new();
        let mut by_code: BTreeMap<String, usize> = BTreeMap::new();
        for d in g.graph.diagnostics.iter().filter(|d| only.as_ref().is_none_or(|f| &d.source == f)) {
            grouped.entry(d.source.clone()).or_default().push(d.clone());
            *by_code.entry(d.code.name().to_string()).or_default() += 1;
        }
        let total = grouped.values().map(Vec::len).sum();
        let files = first_diagnostics(grouped, list_limit(req.limit)?);
        Ok(DiagnosticsResponse {
            schema: SchemaTag::current(),
            project_id: repo.fingerprint.clone(),
            repo: repo.root.clone(),
            truncated: files.iter().map(|f| f.diagnostics.len()).sum::<usize>() < total,
            files,
            total,
            by_code,
            graph: graph_info(&repo, &g),
        })
    }

    /// Files within `hops` imports of any of `files` (both directions), for diff-aware context:
    /// what the changed files use, and what uses them.
    pub fn impact_neighbors(&self, repo_path: &Path, files: &[String], hops: u32) -> Result<NeighborsResponse> {
        let (repo, g) = self.impact_graph(repo_path)?;
        if hops > MAX_DEPTH {
            return Err(Error::BadRequest(format!("hops must be at most {MAX_DEPTH}, got {hops}")));
        }
        let mut known = Vec::new();
        let mut unknown = Vec::new();
        for f in files {
            match normalize_file(&repo, f) {
                Ok(p) if g.contains(&p) => known.push(p),
                _ => unknown.push(f.clone()),
            }
        }
        known.sort();
        known.dedup();
        Ok(NeighborsResponse { hops, files: g.neighbors(&known, hops)?, unknown })
    }

    /// Re-reads and re-parses every code file of the index and rebuilds `impact_graph.json`,
    /// without re-indexing (recovery, and benchmarks of the graph build). Reports progress
    /// (`parsing`, then `resolving`) to `sink`. Ends with [`Error::Cancelled`] once the
    /// thread's ambient token trips (Ctrl-C at `docdex graph rebuild`): looked at while it
    /// waits for the writer lock, per file parsed and per file resolved. A stopped rebuild
    /// writes nothing: the graph on disk stays the last one built, whole and queryable.
    pub fn rebuild_impact_graph(&self, repo_path: &Path, sink: &dyn ProgressSink) -> Result<RebuildSummary> {
        let cancel = CancelToken::current();
        let repo = self.resolve_repo(repo_path)?;
        let _lock = self.graph_writer_lock(&repo, sink, &cancel)?;
        // Resolved again under the lock: a run waited for may have switched the live generation.
        let repo = self.resolve_repo(repo_path)?;
        // An indexed empty repository rebuilds an empty graph (0 files), as the index run does.
        if !repo.manifest_path().is_file() {
            return Err(Error::NotIndexed { path: repo.root.clone() });
        }
        let manifest = Manifest::load(&repo.manifest_path());
        // The same files the index's code pass parses (it leaves larger ones unparsed).
        let code: Vec<(&String, u64)> = manifest
            .files
            .iter()
            .filter(|(p, e)| {
                e.skipped.is_none()
                    && e.size <= super::MAX_PARSE_BYTES as u64
                    && Lang::from_path(Path::new(p.as_str())).is_some()
            })
            .map(|(p, e)| (p, e.size))
            .collect();
        let paths: Vec<String> = code.iter().map(|(p, _)| (*p).clone()).collect();
        let total = IndexProgress {
            phase: "parsing".into(),
            files_total: paths.len() as u64,
            bytes_total: code.iter().map(|(_, s)| s).sum(),
            ..Default::default()
        };
        sink.progress(&total);
        let done = AtomicU64::new(0);
        let bytes = AtomicU64::new(0);
        let on_file = |size: u64| {
            let n = done.fetch_add(1, Ordering::Relaxed) + 1;
            let b = bytes.fetch_add(size, Ordering::Relaxed) + size;
            if n.is_multiple_of(256) {
                sink.progress(&IndexProgress { files_done: n, bytes_done: b, ..total.clone() });
            }
        };
        let started = std::time::Instant::now();
        let files: Vec<FileImports> = graph::extract_from_disk_until(&repo.root, &paths, &on_file, cancel.flag());
        cancel.check()?;
        let parse_ms = started.elapsed().as_secs_f64() * 1000.0;
        let finished = IndexProgress { files_done: total.files_total, bytes_done: total.bytes_total, ..total.clone() };
        sink.progress(&IndexProgress { phase: "resolving".into(), ..finished.clone() });
        let opts = graph::GraphOptions::from_config(&self.config().code_intelligence);
        let mut g = graph::build_in(&repo, &files, &opts, cancel.flag());
        // Incomplete when the token tripped meanwhile: dropped, the last graph stays.
        cancel.check()?;
        // Extracted here by this build's rules, whatever the store holds: no outdated warning.
        g.import_rules =
            Lang::ALL.into_iter().map(|l| (l.name().to_string(), super::imports::rules_version(l))).collect();
        graph::write(&repo, &g)?;
        let mut warnings = g.warnings;
        warnings.extend(record_rebuilt(&repo));
        sink.progress(&IndexProgress { phase: "done".into(), ..finished });
        let path = graph::graph_path(&repo);
        Ok(RebuildSummary { repo: repo.root.clone(), path, parse_ms, stats: g.stats, warnings })
    }
}

impl Engine {
    /// Takes `repo`'s index writer lock for a graph rebuild, which reads the manifest and writes
    /// the graph and `symbols.db`: without it a rebuild raced an index run (a watcher's batch,
    /// `docdex index`) and wrote a graph from a half-updated state. A one-off run holding the
    /// lock is waited for while it reports progress (shown on `sink`), as a second `index` waits
    /// ([`RunWaiter`]: bounded by a stalled run and a few idle seconds); a keeper (serve, daemon,
    /// watch, the workbench) holds it as long as it runs, so that is refused at once, saying so.
    /// [`Error::Cancelled`] once `cancel` trips while it waits.
    fn graph_writer_lock(&self, repo: &RepoRef, sink: &dyn ProgressSink, cancel: &CancelToken) -> Result<FileLock> {
        let path = self.writer_lock_path(repo);
        let mut waiter = RunWaiter::default();
        loop {
            cancel.check()?;
            if let Some(lock) = FileLock::try_acquire(&path)? {
                return Ok(lock);
            }
            let pid = FileLock::holder_pid(&path);
            let advice = if self.watcher_pid(repo) == Some(pid) {
                format!(
                    " for as long as it runs (a `docdex serve`, `daemon`, `watch` or the workbench), and updates the graph with each batch it indexes. To rebuild it anyway, stop that process (Ctrl-C), run `docdex graph rebuild --repo {}`, then start it again",
                    shell_path(&repo.root)
                )
            } else if waiter.wait(&repo.status_path(), sink) {
                continue;
            } else {
                "; it is indexing (and reports no progress), or holds the lock idle: run `docdex graph rebuild` again once it is done".to_string()
            };
            tracing::info!(pid, "graph rebuild refused: the index writer lock is held");
            return Err(Error::GraphBusy { repo: repo.root.clone(), pid, advice });
        }
    }
}

/// Records the rebuilt graph's resolution and import rules in the symbol store's meta, which
/// `docdex status` and the next index run read: without it both still took the graph for an
/// older docdex's. A failure (the store busy past its timeout) is a warning: the graph is written.
fn record_rebuilt(repo: &RepoRef) -> Option<String> {
    let e = super::store::record_graph_rebuilt(repo).err()?;
    tracing::warn!("recording the rebuilt impact graph in symbols.db failed: {e}");
    Some(format!(
        "the graph is rebuilt, but recording it in symbols.db failed ({e}): `docdex status` may still call it an older docdex's until the next `docdex index`"
    ))
}

/// The first `limit` diagnostics of `grouped`, files in path order (a file may be cut short).
fn first_diagnostics(grouped: BTreeMap<String, Vec<Diagnostic>>, limit: usize) -> Vec<FileDiagnostics> {
    let mut left = limit;
    let mut files = Vec::new();
    for (path, mut diagnostics) in grouped {
        if left == 0 {
            break;
        }
        diagnostics.truncate(left);
        left -= diagnostics.len();
        files.push(FileDiagnostics { path, diagnostics });
    }
    files
}

/// A user-given path as a graph node id: repo-relative with `/`, no `./`; `ext:` ids pass.
pub(crate) fn normalize_file(repo: &RepoRef, file: &str) -> Result<String> {
    let (file, _) = crate::engine::repos::split_citation(&repo.root, file.trim());
    let file = file.as_str();
    if file.is_empty() {
        return Err(Error::BadRequest("no file given: pass a repo-relative path".into()));
    }
    if file.starts_with(EXTERNAL_PREFIX) {
        return Ok(file.to_string());
    }
    let rel = crate::engine::index::sources::code_path(repo, file)?;
    // The root itself is inside the repository: not a file, not "outside".
    if rel.is_empty() {
        return Err(Error::BadRequest(format!(
            "{file} is the repository root ({}), a directory: pass a file in it, e.g. src/main.rs",
            repo.root.display()
        )));
    }
    Ok(rel)
}

/// The graph's build facts for a response, with a warning when the stored imports it is
/// built from are outdated.
fn graph_info(repo: &RepoRef, g: &LoadedGraph) -> GraphInfo {
    let mut info = g.info();
    info.warnings.extend(outdated_rules(repo, g));
    info
}

/// A warning when the symbol store's imports of a language in the graph were extracted by
/// another docdex's import rules ([`super::imports::rules_version`]): the graph built from them
/// may lack marks this build makes (a type-only re-export closing a cycle) until the next
/// index run, which re-extracts those files. A graph `docdex graph rebuild` extracted with this
/// build's rules is not outdated, whatever the store holds. An unreadable store says nothing.
fn outdated_rules(repo: &RepoRef, g: &LoadedGraph) -> Option<String> {
    let reader = super::store::SymbolReader::open(repo).ok()??;
    let in_graph: HashSet<Lang> = g.graph.files.values().copied().collect();
    let rebuilt_here = |l: &Lang| g.graph.import_rules.get(l.name()) == Some(&super::imports::rules_version(*l));
    let outdated: Vec<&str> = reader
        .meta()
        .imports_outdated()
        .into_iter()
        .filter(|l| in_graph.contains(l) && !rebuilt_here(l))
        .map(Lang::name)
        .collect();
    if outdated.is_empty() {
        return None;
    }
    Some(format!(
        "the stored imports of {} files were extracted by an older docdex's import rules: edges and cycles built from them may be out of date; the next `docdex index --repo {}` (or a running `docdex watch`) re-reads those files",
        outdated.join(", "),
        crate::error::shell_path(&repo.root)
    ))
}

/// A warning when `file` was indexed as text but never parsed (over the parse size, or its
/// parse ran out of time): its imports are unknown, and "no imports" was said without a word.
/// Files importing it are still edges, so only the outbound side is in doubt.
fn imports_unread(repo: &RepoRef, file: &str) -> Option<String> {
    if file.starts_with(EXTERNAL_PREFIX) {
        return None;
    }
    let reader = super::store::SymbolReader::open(repo).ok()??;
    let note = super::query::file_row(&reader, file).ok()??.filter(|n| !n.is_empty())?;
    let why = note.strip_prefix("not parsed: ").unwrap_or(&note);
    Some(format!(
        "{file} was not parsed ({why}): its own imports are unknown, so `imports` may be missing edges; the files that import it are listed as usual"
    ))
}

/// A warning when `file` (a repository file of the graph) is gone from disk: the graph is as
/// of the last index run, and its answer for a deleted file was given without a word.
fn deleted_since_indexed(repo: &RepoRef, file: &str) -> Option<String> {
    let gone = !file.starts_with(EXTERNAL_PREFIX) && std::fs::symlink_metadata(repo.root.join(file)).is_err();
    gone.then(|| {
        format!(
            "{file} no longer exists on disk: this is the graph of the last index run; `docdex index` (or a running `docdex watch`) updates it"
        )
    })
}

/// The repo-relative file `file` resolves to when a symbolic link on its way leads elsewhere in
/// the repository (`alias.py -> pkg/core.py`); such a path was said to be "not a code file".
fn linked_to(repo: &RepoRef, on_disk: &Path, file: &str) -> Option<String> {
    let root = std::fs::canonicalize(&repo.root).ok()?;
    let real = std::fs::canonicalize(on_disk).ok()?;
    if real == root.join(file) {
        return None;
    }
    Some(real.strip_prefix(&root).ok()?.to_string_lossy().replace('\\', "/"))
}

/// Why an indexed repository has no graph file: its symbol store has commits, so the index run
/// that writes the graph (after parsing every code file) has not finished; else no code file
/// was indexed, or an index from before the graph. After a first index stopped part-way,
/// "the index predates the graph" was false: only this build had ever run.
fn no_graph_yet(repo: &RepoRef) -> String {
    let root = shell_path(&repo.root);
    match super::store::peek_meta(repo).is_some_and(|m| m.generation > 0) {
        true => format!(
            "no impact graph yet for {}: the index run that builds it, after parsing every code file, has not finished (it stopped, was killed, or is still parsing); `docdex index --repo {root}` finishes it",
            repo.root.display()
        ),
        false => format!(
            "no impact graph yet for {}: no code files were indexed, or the index predates the graph; `docdex graph rebuild --repo {root}` builds it",
            repo.root.display()
        ),
    }
}

/// Why a file on disk is not in the graph: not a language docdex parses, indexed as text but
/// not parsed yet (a first index stopped or still parsing), not indexed, or changed since the
/// last run. A `.py` file a stopped first index had not parsed was called "not a code file
/// docdex parses".
fn not_in_graph(repo: &RepoRef, file: &str) -> String {
    if Lang::from_path(Path::new(file)).is_none() {
        return "it exists but is not a code file docdex parses".to_string();
    }
    let act = |verb: &str| match live_watcher(&repo.status_path()) {
        Some(pid) => format!("the running watcher (pid {pid}) {verb} it within seconds: ask again then"),
        None => format!("`docdex index --repo {}` {verb} it", shell_path(&repo.root)),
    };
    let Some(entry) = Manifest::load(&repo.manifest_path()).files.remove(file) else {
        return format!("it is not indexed yet (new since the last index run); {}", act("adds"));
    };
    match (entry.text_only, entry.skipped) {
        (_, Some(why)) => format!("it is not indexed ({why})"),
        (true, None) => format!(
            "it is indexed as text but not parsed yet (the first index stopped before parsing it, or is parsing now); {}",
            act("parses")
        ),
        (false, None) => format!(
            "it changed since the last index run, or the run that parsed it has not written the graph yet; {}",
            act("updates")
        ),
    }
}

pub(crate) fn unknown_file(repo: &RepoRef, file: &str, g: &LoadedGraph) -> Error {
    let on_disk = repo.root.join(file);
    let hint = if let Some(package) = file.strip_prefix(EXTERNAL_PREFIX) {
        format!("no file of the repository imports the external package {package}")
    } else if let Some(real) = linked_to(repo, &on_disk, file) {
        format!("it is reached through a symbolic link, which the index does not follow: ask for {real}, the file it points to")
    } else if on_disk.is_dir() {
        "it is a directory: pass a file in it (the graph links files, not folders)".to_string()
    } else if on_disk.is_file() {
        not_in_graph(repo, file)
    } else {
        "no such file in the repository (a path is repo-relative, e.g. src/main.rs, or on the command line relative to the current directory)".to_string()
    };
    let note = g
        .graph
        .warnings
        .iter()
        .find(|w| w.starts_with("no impact graph yet"))
        .map(|w| format!(" ({w})"))
        .unwrap_or_default();
    Error::NotFound(format!(
        "{file} is not in the impact graph of {} ({} code files): {hint}{note}",
        repo.root.display(),
        g.graph.files.len()
    ))
}
