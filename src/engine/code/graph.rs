//! The import/impact graph: every file's raw imports resolved to files in the
//! repository (or recorded as external / unresolved), stored as
//! `impact_graph.json` in the repo's state directory.
//!
//! [`rebuild`] is called by the indexing pipeline after each run that changed code files, with
//! every code file's stored imports; it resolves them ([`super::resolve`], after the overrides
//! of `docdex.import_map.json`), finds the import cycles, and writes the file atomically. The
//! queries over a loaded graph live in [`super::impact`].
//!
//! Edge direction: `source -> target` means *source imports target*, so a change to the target
//! may change the source's behaviour. External packages are nodes named `ext:<package>`; they
//! are never bound to repository files.
//!
//! The file format is version 2 of `docdex.impact_graph`. Version 1 (no `schema` tag: just
//! `{"edges": [{"source": "...", "target": "..."}]}`, every edge a resolved file import) is
//! still read and migrated in memory; the next index run writes version 2.

use super::import_map::ImportMap;
use super::imports::RawImport;
use super::resolve::{RepoFiles, Resolution, Resolver};
pub use super::types::{FileImports, Method};
use super::Lang;
use crate::engine::cancel::CancelToken;
use crate::engine::fsutil;
use crate::engine::repos::RepoRef;
use crate::error::{Error, Result};
use petgraph::algo::kosaraju_scc;
use petgraph::graph::{DiGraph, NodeIndex};
use rayon::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The schema name written in `impact_graph.json` and in impact responses.
pub const SCHEMA_NAME: &str = "docdex.impact_graph";
/// The current version of the stored graph.
pub const SCHEMA_VERSION: u32 = 2;
/// Prefix of external package node ids (`ext:react`).
pub const EXTERNAL_PREFIX: &str = "ext:";
/// The stored graph's file name inside the repo state directory.
pub const FILE_NAME: &str = "impact_graph.json";

/// `{"name": "docdex.impact_graph", "version": 2}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SchemaTag {
    /// Always [`SCHEMA_NAME`].
    pub name: String,
    /// The format version.
    pub version: u32,
}

impl SchemaTag {
    /// The current tag.
    pub fn current() -> SchemaTag {
        SchemaTag { name: SCHEMA_NAME.to_string(), version: SCHEMA_VERSION }
    }
}

/// One directed edge: `source` imports `target`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Edge {
    /// The importing file (repo-relative).
    pub source: String,
    /// The imported file, or `ext:<package>` for an external package.
    pub target: String,
    /// True when `target` is an external package.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub external: bool,
    /// The statement form (`import`, `require`, `use`, `mod`, `include`, ...).
    pub kind: String,
    /// How the edge was found.
    pub method: Method,
    /// How sure we are that the source depends on the target, 0..1.
    pub confidence: f32,
    /// 1-based line of the (first) import statement.
    pub line: u32,
    /// The specifier as written (folded for dynamic imports).
    pub spec: String,
}

/// Why an import stayed unresolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosticCode {
    /// A dynamic import whose target is only known at run time.
    Dynamic,
    /// A specifier that should name a repository file (relative path, own package or module),
    /// but no file matches.
    NotFound,
    /// A `docdex.import_map.json` entry matched but its targets are not repository files.
    ImportMap,
}

impl DiagnosticCode {
    /// The serialized name (`dynamic`, `not_found`, `import_map`).
    pub fn name(self) -> &'static str {
        match self {
            DiagnosticCode::Dynamic => "dynamic",
            DiagnosticCode::NotFound => "not_found",
            DiagnosticCode::ImportMap => "import_map",
        }
    }
}

/// An import that produced no edge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Diagnostic {
    /// The importing file.
    pub source: String,
    /// 1-based line.
    pub line: u32,
    /// The specifier (a `*` pattern for dynamic imports).
    pub spec: String,
    /// The statement form.
    pub kind: String,
    /// Machine-readable reason.
    pub code: DiagnosticCode,
    /// What went wrong and what would fix it.
    pub reason: String,
    /// For dynamic imports, the expression as written.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub expr: String,
}

/// An import cycle: a strongly connected set of files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Cycle {
    /// The files of the cycle, sorted.
    pub files: Vec<String>,
    /// One concrete loop through them, starting and ending at the same file (`a -> b -> a`).
    pub path: Vec<String>,
}

/// Counts from the last build.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GraphStats {
    /// Code files whose imports were read.
    pub files: usize,
    /// Import records (declarations excluded).
    pub imports: usize,
    /// File-to-file edges.
    pub edges: usize,
    /// Edges to external packages.
    pub external_edges: usize,
    /// Imports left unresolved (see `diagnostics`).
    pub unresolved: usize,
    /// Edges per method.
    pub by_method: BTreeMap<String, usize>,
    /// Build time in milliseconds.
    pub build_ms: f64,
}

/// The stored graph (`impact_graph.json`, version 2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImpactGraph {
    /// [`SchemaTag::current`].
    pub schema: SchemaTag,
    /// When it was built, epoch ms.
    pub generated_at_ms: u64,
    /// Every code file in the graph and its language.
    pub files: BTreeMap<String, Lang>,
    /// Edges sorted by source, then target; one per (source, target) pair.
    pub edges: Vec<Edge>,
    /// Unresolved imports, sorted by source and line.
    pub diagnostics: Vec<Diagnostic>,
    /// Import cycles, largest first.
    pub cycles: Vec<Cycle>,
    /// Problems with the inputs (an unreadable `docdex.import_map.json`, ...).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Counts.
    pub stats: GraphStats,
    /// The import rules version per language ([`super::imports::rules_version`]) of a graph
    /// built from the files on disk (`docdex graph rebuild`), whose imports this build
    /// extracted whatever `symbols.db` holds; empty for a graph built from the store, whose
    /// `meta` records the versions instead.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub import_rules: BTreeMap<String, u32>,
}

/// What goes into a graph beyond the source itself (`[code_intelligence]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphOptions {
    /// Read runtime import traces (see [`super::import_traces`]).
    pub import_traces: bool,
    /// The most candidate values of one dynamic import that are resolved.
    pub dynamic_import_scan_limit: usize,
    /// The repo's state directory (for its `import_traces.jsonl`); set by [`rebuild`].
    pub state_dir: Option<PathBuf>,
}

impl Default for GraphOptions {
    fn default() -> Self {
        GraphOptions { import_traces: true, dynamic_import_scan_limit: 8, state_dir: None }
    }
}

impl GraphOptions {
    /// The options `[code_intelligence]` asks for.
    pub fn from_config(cfg: &crate::config::CodeIntelligenceConfig) -> GraphOptions {
        GraphOptions {
            import_traces: cfg.import_traces_enabled,
            dynamic_import_scan_limit: (cfg.dynamic_import_scan_limit as usize).max(1),
            state_dir: None,
        }
    }
}

/// How imports are resolved to files (which roots a Python import sees, which file a
/// specifier names, ...). Bump it with any change that can move an edge or a diagnostic: a
/// graph built under another number is rebuilt by the next index run, as no import changed.
/// 3: a TypeScript emitted name (`./a.js`) also finds a declaration file (`a.d.ts`).
pub const RESOLUTION_VERSION: u32 = 3;

/// Where a repo's graph is stored.
pub fn graph_path(repo: &RepoRef) -> PathBuf {
    repo.data_dir().join(FILE_NAME)
}

/// Whether the stored graph is missing or not JSON (truncated or overwritten by hand, or by a
/// crash of a filesystem without ordered writes). The index run treats such a graph as missing
/// and builds it again: `impact` tells the user to run `docdex index`, which otherwise found
/// nothing changed and left the damaged file in place for ever. A syntax scan only (no tree is
/// built), so it costs a few milliseconds per megabyte on each run.
pub fn unreadable(path: &Path) -> bool {
    let Ok(file) = std::fs::File::open(path) else {
        return true;
    };
    let reader = std::io::BufReader::new(file);
    serde_json::from_reader::<_, serde::de::IgnoredAny>(reader).is_err()
}

/// Rebuilds `impact_graph.json` from every code file's imports. Called after each index run
/// that changed code files; `files` lists all of them, not only the changed ones. Call it after
/// the run's manifest is saved: non-code targets (`include_str!` data, JSON imports) are looked
/// up in the manifest.
pub fn rebuild(repo: &RepoRef, files: &[FileImports], opts: &GraphOptions) -> Result<()> {
    rebuild_until(repo, files, opts, &AtomicBool::new(false))
}

/// [`rebuild`], ending with [`Error::Cancelled`] once `stop` is set (an index run stopped by
/// a shutdown or by the client that asked for it): the files not yet resolved are passed over
/// and nothing is written, so the graph on disk stays the last one built and the store's
/// pending mark has the next run build it.
pub fn rebuild_until(repo: &RepoRef, files: &[FileImports], opts: &GraphOptions, stop: &AtomicBool) -> Result<()> {
    let graph = build_in(repo, files, opts, stop);
    if stop.load(Ordering::Relaxed) {
        return Err(Error::Cancelled);
    }
    write(repo, &graph)
}

/// The graph [`rebuild`] writes, not written yet: `files` resolved against the repository's
/// manifest. Incomplete once `stop` is set (see [`build_over_until`]): the caller drops it.
pub fn build_in(repo: &RepoRef, files: &[FileImports], opts: &GraphOptions, stop: &AtomicBool) -> ImpactGraph {
    let manifest = crate::engine::index::manifest::Manifest::load(&repo.manifest_path());
    let mut known: BTreeSet<String> =
        manifest.files.iter().filter(|(_, e)| e.skipped.is_none()).map(|(p, _)| p.clone()).collect();
    known.extend(files.iter().map(|f| f.path.clone()));
    let opts = GraphOptions { state_dir: Some(repo.state_dir.clone()), ..opts.clone() };
    let index = RepoFiles::new(known.iter().chain(files.iter().map(|f| &f.path)));
    let graph = build_over_until(&repo.root, files, &known, Arc::new(index), &opts, stop);
    tracing::debug!(
        files = graph.stats.files,
        edges = graph.stats.edges,
        unresolved = graph.stats.unresolved,
        ms = graph.stats.build_ms,
        "impact graph rebuilt"
    );
    graph
}

/// Writes `graph` as the repository's `impact_graph.json`, and the search's import prior from it.
pub fn write(repo: &RepoRef, graph: &ImpactGraph) -> Result<()> {
    save(&graph_path(repo), graph)?;
    let internal = graph.edges.iter().filter(|e| !e.external).map(|e| (e.source.as_str(), e.target.as_str()));
    crate::engine::search::import_prior::write(&repo.state_dir, internal)
}

/// Reads, parses and extracts the imports of every code file among `paths` (repo-relative,
/// under `root`), in parallel: what the indexing pipeline does file by file, for rebuilding a
/// graph without re-indexing and for benchmarks. Unreadable files are skipped. `on_file` is
/// called (from worker threads) with the size of each file read.
pub fn extract_from_disk(root: &Path, paths: &[String], on_file: &(dyn Fn(u64) + Sync)) -> Vec<FileImports> {
    extract_from_disk_until(root, paths, on_file, &AtomicBool::new(false))
}

/// [`extract_from_disk`] that reads and parses no further file once `stop` is set (looked at
/// before each one: a parse takes up to milliseconds): what it returns then is incomplete, and
/// the caller, which set `stop`, drops it.
pub fn extract_from_disk_until(
    root: &Path,
    paths: &[String],
    on_file: &(dyn Fn(u64) + Sync),
    stop: &AtomicBool,
) -> Vec<FileImports> {
    let mut out: Vec<FileImports> = paths
        .par_iter()
        .filter_map(|rel| {
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            let lang = Lang::from_path(Path::new(rel))?;
            let bytes = crate::engine::fsutil::read_repo_file(root, rel).ok()?;
            on_file(bytes.len() as u64);
            let text = crate::engine::fsutil::decode_text(&bytes);
            let tree = super::lang::parse(lang, &text)?;
            Some(FileImports { path: rel.clone(), lang, imports: super::imports::extract(lang, &tree, &text) })
        })
        .collect();
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// Writes a graph atomically.
pub fn save(path: &Path, graph: &ImpactGraph) -> Result<()> {
    let bytes =
        serde_json::to_vec(graph).map_err(|e| Error::CorruptState { path: path.into(), message: e.to_string() })?;
    fsutil::write_atomic(path, &bytes)
}

/// Builds the graph of `files` (every code file's imports) in the repository at `root`, whose
/// files (code or not, repo-relative) are `known`.
pub fn build(root: &Path, files: &[FileImports], known: &BTreeSet<String>, opts: &GraphOptions) -> ImpactGraph {
    let repo = RepoFiles::new(known.iter().chain(files.iter().map(|f| &f.path)));
    build_over(root, files, known, Arc::new(repo), opts)
}

/// [`build`] over an already indexed file set: `repo` must list `known` and every path of
/// `files` (the gatekeeper keeps one per index generation).
pub fn build_over(
    root: &Path,
    files: &[FileImports],
    known: &BTreeSet<String>,
    repo: Arc<RepoFiles>,
    opts: &GraphOptions,
) -> ImpactGraph {
    build_over_until(root, files, known, repo, opts, &AtomicBool::new(false))
}

/// [`build_over`] that stops early once `stop` is set: the files not yet resolved are passed
/// over and cycles are not searched, so the graph is incomplete and the caller, which set
/// `stop`, must drop it. Resolving every import of a large repository takes seconds.
pub fn build_over_until(
    root: &Path,
    files: &[FileImports],
    known: &BTreeSet<String>,
    repo: Arc<RepoFiles>,
    opts: &GraphOptions,
    stop: &AtomicBool,
) -> ImpactGraph {
    let started = std::time::Instant::now();
    let (map, mut warnings) = ImportMap::load(root);
    let resolver = Resolver::over(root, files, repo);
    warnings.extend(resolver.warnings().iter().cloned());
    let stopped = || stop.load(Ordering::Relaxed);
    let per_file: Vec<(Vec<Edge>, Vec<Diagnostic>, usize)> = files
        .par_iter()
        .map(|f| match stopped() {
            true => Default::default(),
            false => resolve_file(f, &resolver, map.as_ref(), opts.dynamic_import_scan_limit),
        })
        .collect();
    let mut edges = Vec::new();
    let mut diagnostics = Vec::new();
    let mut imports = 0;
    for (e, d, n) in per_file {
        edges.extend(e);
        diagnostics.extend(d);
        imports += n;
    }
    if opts.import_traces && !files.is_empty() {
        let (traced, trace_warnings) = super::import_traces::load(root, opts.state_dir.as_deref(), known);
        warnings.extend(trace_warnings);
        add_traces(traced, &mut edges, &mut diagnostics);
    }
    let edges = dedupe(edges);
    diagnostics.sort_by(|a, b| (&a.source, a.line, &a.spec).cmp(&(&b.source, b.line, &b.spec)));
    let cycles = if stopped() { Vec::new() } else { find_cycles(&edges) };
    let mut by_method: BTreeMap<String, usize> = BTreeMap::new();
    for e in edges.iter().filter(|e| !e.external) {
        *by_method.entry(e.method.name().to_string()).or_default() += 1;
    }
    let stats = GraphStats {
        files: files.len(),
        imports,
        edges: edges.iter().filter(|e| !e.external).count(),
        external_edges: edges.iter().filter(|e| e.external).count(),
        unresolved: diagnostics.len(),
        by_method,
        build_ms: started.elapsed().as_secs_f64() * 1000.0,
    };
    ImpactGraph {
        schema: SchemaTag::current(),
        generated_at_ms: fsutil::now_ms(),
        files: files.iter().map(|f| (f.path.clone(), f.lang)).collect(),
        edges,
        diagnostics,
        cycles,
        warnings,
        stats,
        import_rules: BTreeMap::new(),
    }
}

/// Adds traced edges; a trace that names the line of an unresolved import of its source
/// resolves that diagnostic.
fn add_traces(traced: Vec<super::import_traces::TraceEdge>, edges: &mut Vec<Edge>, diagnostics: &mut Vec<Diagnostic>) {
    for t in traced {
        let mut spec = t.target.clone();
        if let Some(line) = t.line {
            if let Some(i) = diagnostics.iter().position(|d| d.source == t.source && d.line == line) {
                spec = diagnostics.remove(i).spec;
            }
        }
        edges.push(Edge {
            source: t.source,
            target: t.target,
            external: false,
            kind: t.kind,
            method: Method::Trace,
            confidence: t.confidence,
            line: t.line.unwrap_or(0),
            spec,
        });
    }
}

/// Confidence of an edge found through a folded dynamic expression.
const DYNAMIC_CONFIDENCE: f32 = 0.8;
/// Confidence of each edge when a dynamic expression has several candidate values.
const CANDIDATE_CONFIDENCE: f32 = 0.6;

/// Resolves one file's imports into edges and diagnostics; also returns the import count.
fn resolve_file(
    file: &FileImports,
    resolver: &Resolver,
    map: Option<&ImportMap>,
    scan_limit: usize,
) -> (Vec<Edge>, Vec<Diagnostic>, usize) {
    let mut edges = Vec::new();
    let mut diags = Vec::new();
    let mut count = 0;
    for imp in file.imports.iter().filter(|i| !i.is_declaration()) {
        count += 1;
        let diag = |code: DiagnosticCode, reason: String| Diagnostic {
            source: file.path.clone(),
            line: imp.line,
            spec: imp.spec.clone(),
            kind: imp.kind.clone(),
            code,
            reason,
            expr: imp.expr.clone(),
        };
        if let Some(mapped) = map.and_then(|m| m.apply(file, imp, resolver)) {
            match mapped {
                Ok(res) => push_resolution(file, imp, &imp.spec, res, &mut edges, &mut diags),
                Err(reason) => diags.push(diag(DiagnosticCode::ImportMap, reason)),
            }
            continue;
        }
        if imp.unresolvable {
            let reason = format!(
                "dynamic import built at run time from `{}`; add a `docdex.import_map.json` entry for \"{}\" to map it",
                if imp.expr.is_empty() { imp.spec.as_str() } else { imp.expr.as_str() },
                imp.spec
            );
            diags.push(diag(DiagnosticCode::Dynamic, reason));
            continue;
        }
        let specs: Vec<&str> = imp.specs().take(scan_limit.max(1)).collect();
        if specs.len() == 1 {
            let res = adjust(resolver.resolve(file, imp, &imp.spec), imp.dynamic, DYNAMIC_CONFIDENCE);
            push_resolution(file, imp, &imp.spec, res, &mut edges, &mut diags);
            continue;
        }
        // Several static candidates: an edge to each one that resolves.
        let mut any = false;
        for spec in &specs {
            match adjust(resolver.resolve(file, imp, spec), true, CANDIDATE_CONFIDENCE) {
                Resolution::NotFound(_) => {}
                Resolution::Files(t) if t.is_empty() => {}
                res => {
                    any = true;
                    push_resolution(file, imp, spec, res, &mut edges, &mut diags);
                }
            }
        }
        if !any {
            let reason = format!("none of the candidates {} matches a repository file", specs.join(", "));
            diags.push(diag(DiagnosticCode::NotFound, reason));
        }
    }
    (edges, diags, count)
}

/// Marks the targets of a folded dynamic import as heuristic, capping their confidence.
fn adjust(res: Resolution, dynamic: bool, cap: f32) -> Resolution {
    match res {
        Resolution::Files(mut targets) if dynamic => {
            for t in &mut targets {
                if t.method == Method::Static {
                    t.method = Method::Heuristic;
                }
                t.confidence = t.confidence.min(cap);
            }
            Resolution::Files(targets)
        }
        other => other,
    }
}

/// Records a resolution outcome for one import (`spec` is the candidate that was resolved).
fn push_resolution(
    file: &FileImports,
    imp: &RawImport,
    spec: &str,
    res: Resolution,
    edges: &mut Vec<Edge>,
    diags: &mut Vec<Diagnostic>,
) {
    match res {
        Resolution::Files(targets) => push_targets(file, imp, spec, targets, edges),
        Resolution::External(package) => edges.push(Edge {
            source: file.path.clone(),
            target: format!("{EXTERNAL_PREFIX}{package}"),
            external: true,
            kind: edge_kind(imp),
            method: Method::Static,
            confidence: 1.0,
            line: imp.line,
            spec: spec.to_string(),
        }),
        Resolution::NotFound(reason) => diags.push(Diagnostic {
            source: file.path.clone(),
            line: imp.line,
            spec: imp.spec.clone(),
            kind: imp.kind.clone(),
            code: DiagnosticCode::NotFound,
            reason,
            expr: imp.expr.clone(),
        }),
    }
}

/// An edge's kind: the statement's, or [`kind::TYPE_IMPORT`] for a type-only import.
fn edge_kind(imp: &RawImport) -> String {
    if imp.type_only {
        super::imports::kind::TYPE_IMPORT.to_string()
    } else {
        imp.kind.clone()
    }
}

/// Adds file edges; an import of the file itself is dropped.
fn push_targets(
    file: &FileImports,
    imp: &RawImport,
    spec: &str,
    targets: Vec<super::resolve::Target>,
    edges: &mut Vec<Edge>,
) {
    for t in targets {
        if t.path == file.path {
            continue;
        }
        edges.push(Edge {
            source: file.path.clone(),
            target: t.path,
            external: false,
            kind: edge_kind(imp),
            method: t.method,
            confidence: t.confidence.clamp(0.0, 1.0),
            line: imp.line,
            spec: spec.to_string(),
        });
    }
}

/// One edge per (source, target): the most confident, then an import before a module
/// declaration, then the earliest line. A Rust parent's `mod client; pub use client::Client;`
/// must keep the `use`: keeping the `mod` (the earlier line) hid the re-export from
/// [`find_cycles`], which leaves declarations out, and a real loop of `use`s went unreported.
fn dedupe(mut edges: Vec<Edge>) -> Vec<Edge> {
    let declares = |e: &Edge| DECLARATIONS.contains(&e.kind.as_str());
    // A pair imported at run time somewhere keeps that edge over a type-only one, however
    // confident: the run-time import is what can close a cycle.
    let types = |e: &Edge| e.kind == super::imports::kind::TYPE_IMPORT;
    edges.sort_by(|a, b| {
        (&a.source, &a.target)
            .cmp(&(&b.source, &b.target))
            .then(types(a).cmp(&types(b)))
            .then(b.confidence.total_cmp(&a.confidence))
            .then(declares(a).cmp(&declares(b)))
            .then(a.line.cmp(&b.line))
    });
    edges.dedup_by(|later, first| later.source == first.source && later.target == first.target);
    edges
}

/// Edge kinds that declare a module's parts rather than import them: left out of cycles.
pub const DECLARATIONS: [&str; 4] = [
    super::imports::kind::MOD,
    super::imports::kind::MOD_PATH,
    super::imports::kind::PART,
    super::imports::kind::PART_OF,
];

/// Whether an edge can close an import cycle: a file edge that is neither a module declaration
/// ([`DECLARATIONS`]) nor a type-only import (TypeScript `import type`, Python's `if
/// TYPE_CHECKING:`), the very way those languages break a cycle.
fn counts_for_cycles(e: &Edge) -> bool {
    !e.external && !DECLARATIONS.contains(&e.kind.as_str()) && e.kind != super::imports::kind::TYPE_IMPORT
}

/// Import cycles: the strongly connected components of the file edges with more than one
/// file, largest first, each with one concrete loop.
///
/// Module declarations do not count ([`DECLARATIONS`]): a Rust parent declares `mod child;`
/// and the child reaches back with `use super::...`, a Dart library names its `part`s and each
/// part names its library. Those pairs are how the languages build one unit, not a dependency
/// loop; counted, they joined nearly every Rust module into one "cycle" (104 of docdex's own
/// files, against a largest real `use` cycle of 5). They stay in the graph for impact.
///
/// petgraph's Kosaraju, not its Tarjan: that one recurses once per node of a path, and a long
/// import chain must not overflow the stack (`long_chains_do_not_overflow_the_stack`).
pub fn find_cycles(edges: &[Edge]) -> Vec<Cycle> {
    let mut g: DiGraph<&str, ()> = DiGraph::new();
    let mut ids: HashMap<&str, NodeIndex> = HashMap::new();
    for e in edges.iter().filter(|e| counts_for_cycles(e)) {
        let s = *ids.entry(e.source.as_str()).or_insert_with(|| g.add_node(e.source.as_str()));
        let t = *ids.entry(e.target.as_str()).or_insert_with(|| g.add_node(e.target.as_str()));
        g.add_edge(s, t, ());
    }
    let components: Vec<Vec<NodeIndex>> = kosaraju_scc(&g).into_iter().filter(|c| c.len() > 1).collect();
    let mut component_of = vec![usize::MAX; g.node_count()];
    for (n, comp) in components.iter().enumerate() {
        for v in comp {
            component_of[v.index()] = n;
        }
    }
    let mut finder = LoopFinder::new(&g);
    let mut cycles: Vec<Cycle> = components
        .iter()
        .enumerate()
        .map(|(n, comp)| {
            let mut files: Vec<String> = comp.iter().map(|&i| g[i].to_string()).collect();
            files.sort();
            let start = ids[files[0].as_str()];
            let path = finder
                .loop_through(start, |w| component_of[w.index()] == n)
                .into_iter()
                .map(|i| g[i].to_string())
                .collect();
            Cycle { files, path }
        })
        .collect();
    cycles.sort_by(|a, b| b.files.len().cmp(&a.files.len()).then(a.files.cmp(&b.files)));
    cycles
}

/// Hops of a loop spelled out in a message before its middle is elided ([`loop_text`]).
pub const LOOP_TEXT_HOPS: usize = 12;

/// Files kept at the end of an elided loop: the last is the file the loop starts from, so the
/// file importing it (its other neighbour on the loop) stays visible too.
const LOOP_TEXT_TAIL: usize = 3;

/// A loop `a -> b -> a` as text, its middle elided past `hops` hops (the first `hops` files and
/// the last [`LOOP_TEXT_TAIL`] are kept): the rule marks of a 5,000-file cycle each carried the
/// whole loop (100 kB per file, 200 MB for the files one impact view shows, built for 20 s
/// before the workbench's graph appeared), and so did each gatekeeper message.
pub fn loop_text<S: AsRef<str>>(path: &[S], hops: usize) -> String {
    let names = |p: &[S]| p.iter().map(AsRef::as_ref).collect::<Vec<&str>>().join(" -> ");
    // Eliding a single file would not shorten anything.
    if path.len() <= hops + LOOP_TEXT_TAIL + 1 {
        return names(path);
    }
    let skipped = path.len() - hops - LOOP_TEXT_TAIL;
    format!("{} -> ... {skipped} more -> {}", names(&path[..hops]), names(&path[path.len() - LOOP_TEXT_TAIL..]))
}

/// The loop `path` (`a -> b -> c -> a`) walked from its `start`-th file instead
/// (`b -> c -> a -> b`), so a message about that file begins and ends with it.
pub fn loop_from<S: AsRef<str>>(path: &[S], start: usize) -> Vec<&str> {
    let body = &path[..path.len().saturating_sub(1)];
    if start >= body.len() {
        return path.iter().map(AsRef::as_ref).collect();
    }
    body[start..].iter().chain(&body[..=start]).map(AsRef::as_ref).collect()
}

/// A shortest loop through each of `files` inside `cycle` (`a -> b -> a`, starting and ending
/// at that file), from `edges` (the same rules as [`find_cycles`]), as [`loop_text`] with
/// [`LOOP_TEXT_HOPS`]: what to show for a file on a large cycle, whose own [`Cycle::path`] may
/// not pass through that file at all. [`Error::Cancelled`] once `cancel` trips (looked at
/// every [`LOOPS_PER_CHECK`] files: one file's walk covers the whole cycle, and the workbench's
/// risk overlay asks for every file of the diagram).
pub fn loops_through(
    edges: &[Edge],
    cycle: &Cycle,
    files: &[&str],
    cancel: &CancelToken,
) -> Result<HashMap<String, String>> {
    let paths = loop_paths_until(edges, cycle, files, cancel)?;
    Ok(paths.into_iter().map(|(f, path)| (f, loop_text(&path, LOOP_TEXT_HOPS))).collect())
}

/// Files whose loops [`loops_through`] walks between two looks at its token.
const LOOPS_PER_CHECK: usize = 16;

/// [`loops_through`] before it becomes text: each file's shortest loop, file by file
/// (`[f, ..., f]`, borrowed from `edges`). The gatekeeper needs the loop's first hop for the
/// line it names.
pub fn loop_paths_through<'a>(edges: &'a [Edge], cycle: &Cycle, files: &[&str]) -> HashMap<String, Vec<&'a str>> {
    loop_paths_until(edges, cycle, files, &CancelToken::new()).unwrap_or_default()
}

/// [`loop_paths_through`], ending with [`Error::Cancelled`] once `cancel` trips.
fn loop_paths_until<'a>(
    edges: &'a [Edge],
    cycle: &Cycle,
    files: &[&str],
    cancel: &CancelToken,
) -> Result<HashMap<String, Vec<&'a str>>> {
    let members: HashSet<&str> = cycle.files.iter().map(String::as_str).collect();
    let mut g: DiGraph<&str, ()> = DiGraph::new();
    let mut ids: HashMap<&str, NodeIndex> = HashMap::new();
    let inside =
        |e: &&Edge| counts_for_cycles(e) && members.contains(e.source.as_str()) && members.contains(e.target.as_str());
    for e in edges.iter().filter(inside) {
        let s = *ids.entry(e.source.as_str()).or_insert_with(|| g.add_node(e.source.as_str()));
        let t = *ids.entry(e.target.as_str()).or_insert_with(|| g.add_node(e.target.as_str()));
        g.add_edge(s, t, ());
    }
    let mut finder = LoopFinder::new(&g);
    let mut out = HashMap::new();
    for (i, f) in files.iter().enumerate() {
        if i % LOOPS_PER_CHECK == 0 {
            cancel.check()?;
        }
        let Some(&start) = ids.get(f) else { continue };
        let path: Vec<&str> = finder.loop_through(start, |_| true).into_iter().map(|i| g[i]).collect();
        out.insert(f.to_string(), path);
    }
    Ok(out)
}

/// Shortest loops from a node back to itself inside one component: breadth-first from the
/// node's successors until it comes round again. petgraph's walkers do not keep predecessors,
/// and its shortest-path searches treat the start as already reached, so this is a small walk
/// of our own. The successor lists and the predecessor table are built once per graph and
/// reused for every start: rebuilt per file (and the component as a set with them), a
/// 3,000-file cycle took 8 s of the workbench's risk overlay.
struct LoopFinder {
    /// Successors per node, in the order the edges were stored (petgraph lists the newest
    /// first), so the loop chosen among equally short ones does not depend on that.
    succ: Vec<Vec<NodeIndex>>,
    /// Predecessor per node in the current walk (`NodeIndex::end()`: not reached).
    prev: Vec<NodeIndex>,
    /// The entries of `prev` the current walk set, to reset them for the next.
    touched: Vec<NodeIndex>,
}

impl LoopFinder {
    fn new(g: &DiGraph<&str, ()>) -> Self {
        let succ = g
            .node_indices()
            .map(|v| {
                let mut n: Vec<NodeIndex> = g.neighbors(v).collect();
                n.reverse();
                n
            })
            .collect();
        LoopFinder { succ, prev: vec![NodeIndex::end(); g.node_count()], touched: Vec::new() }
    }

    /// A shortest loop `start -> ... -> start` through nodes for which `member` holds.
    fn loop_through(&mut self, start: NodeIndex, member: impl Fn(NodeIndex) -> bool) -> Vec<NodeIndex> {
        for t in self.touched.drain(..) {
            self.prev[t.index()] = NodeIndex::end();
        }
        let mut queue = VecDeque::from([start]);
        while let Some(v) = queue.pop_front() {
            if v == start && !self.touched.is_empty() {
                break;
            }
            for &w in &self.succ[v.index()] {
                if member(w) && self.prev[w.index()] == NodeIndex::end() {
                    self.prev[w.index()] = v;
                    self.touched.push(w);
                    queue.push_back(w);
                }
            }
        }
        let mut path = vec![start];
        let mut cur = start;
        while let Some(&p) = self.prev.get(cur.index()).filter(|p| **p != NodeIndex::end()) {
            if p == start || path.len() > self.succ.len() {
                break;
            }
            path.push(p);
            cur = p;
        }
        path.push(start);
        path.reverse();
        path
    }
}

/// Version 1 of the stored graph: untagged, resolved file edges only.
#[derive(Debug, Deserialize)]
struct GraphV1 {
    edges: Vec<EdgeV1>,
}

#[derive(Debug, Deserialize)]
struct EdgeV1 {
    source: String,
    target: String,
}

/// Loads a stored graph, migrating version 1 in memory (the next index run persists
/// version 2). `Ok(None)` when there is no file.
pub fn load(path: &Path) -> Result<Option<ImpactGraph>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("reading", path, e)),
    };
    let corrupt = |message: String| Error::CorruptState {
        path: path.into(),
        message: format!(
            "{message}; run `docdex index` (or `docdex graph rebuild`) in its repository to rebuild the impact graph"
        ),
    };
    let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
    match value.get("schema") {
        Some(tag) => {
            let tag: SchemaTag = serde_json::from_value(tag.clone()).map_err(|e| corrupt(e.to_string()))?;
            if tag.name != SCHEMA_NAME {
                return Err(corrupt(format!("schema is {:?}, expected {SCHEMA_NAME:?}", tag.name)));
            }
            match tag.version {
                SCHEMA_VERSION => serde_json::from_value(value).map(Some).map_err(|e| corrupt(e.to_string())),
                1 => migrate_v1(value).map(Some).map_err(corrupt),
                v => Err(corrupt(format!(
                    "{SCHEMA_NAME} version {v} is newer than this docdex understands ({SCHEMA_VERSION})"
                ))),
            }
        }
        None => migrate_v1(value).map(Some).map_err(corrupt),
    }
}

/// Version 1 → 2: every edge becomes a static import with confidence 1 at line 0; files are
/// the edges' endpoints (languages from their extensions).
fn migrate_v1(value: serde_json::Value) -> std::result::Result<ImpactGraph, String> {
    let old: GraphV1 =
        serde_json::from_value(value).map_err(|e| format!("not a version 1 impact graph either: {e}"))?;
    let mut files = BTreeMap::new();
    let mut edges = Vec::new();
    for e in old.edges {
        for p in [&e.source, &e.target] {
            if let Some(lang) = Lang::from_path(Path::new(p)) {
                files.insert(p.clone(), lang);
            }
        }
        edges.push(Edge {
            spec: e.target.clone(),
            source: e.source,
            target: e.target,
            external: false,
            kind: "import".to_string(),
            method: Method::Static,
            confidence: 1.0,
            line: 0,
        });
    }
    let edges = dedupe(edges);
    let cycles = find_cycles(&edges);
    let stats = GraphStats {
        files: files.len(),
        edges: edges.len(),
        by_method: BTreeMap::from([("static".to_string(), edges.len())]),
        ..Default::default()
    };
    Ok(ImpactGraph {
        schema: SchemaTag::current(),
        generated_at_ms: 0,
        files,
        edges,
        diagnostics: Vec::new(),
        cycles,
        warnings: vec![format!(
            "migrated in memory from {SCHEMA_NAME} version 1 (no methods, confidences, lines or diagnostics); re-index to write version {SCHEMA_VERSION}"
        )],
        stats,
        import_rules: BTreeMap::new(),
    })
}

/// A static import of `t` by `s` at `line`, for tests that build graphs by hand.
#[cfg(test)]
pub(crate) fn test_import(s: &str, t: &str, line: u32) -> Edge {
    Edge {
        source: s.into(),
        target: t.into(),
        external: false,
        kind: "import".into(),
        method: Method::Static,
        confidence: 1.0,
        line,
        spec: t.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(s: &str, t: &str) -> Edge {
        test_import(s, t, 1)
    }

    #[test]
    fn cycles_are_strongly_connected_components() {
        let edges = vec![
            edge("a", "b"),
            edge("b", "c"),
            edge("c", "a"),
            edge("c", "d"),
            edge("d", "e"),
            edge("e", "d"),
            edge("f", "a"),
        ];
        let cycles = find_cycles(&edges);
        assert_eq!(cycles.len(), 2);
        assert_eq!(cycles[0].files, vec!["a", "b", "c"]);
        assert_eq!(cycles[0].path, vec!["a", "b", "c", "a"]);
        assert_eq!(cycles[1].files, vec!["d", "e"]);
        assert_eq!(cycles[1].path, vec!["d", "e", "d"]);
    }

    #[test]
    fn each_file_of_a_cycle_gets_a_loop_through_itself() {
        // One component: a -> b -> c -> a, and c <-> d. Its example path leaves d out.
        let edges =
            vec![edge("a", "b"), edge("b", "c"), edge("c", "a"), edge("c", "d"), edge("d", "c"), edge("x", "a")];
        let cycles = find_cycles(&edges);
        assert_eq!(cycles.len(), 1);
        assert!(!cycles[0].path.contains(&"d".to_string()), "{:?}", cycles[0].path);
        let loops = loops_through(&edges, &cycles[0], &["d", "b", "x"], &CancelToken::new()).unwrap();
        assert_eq!(loops["d"], "d -> c -> d");
        assert_eq!(loops["b"], "b -> c -> a -> b");
        assert!(!loops.contains_key("x"), "x is not on the cycle");
    }

    #[test]
    fn a_loop_through_a_huge_cycle_is_elided_in_the_middle() {
        let n = 3_000;
        let names: Vec<String> = (0..n).map(|i| format!("f{i}")).collect();
        let edges: Vec<Edge> = (0..n).map(|i| edge(&names[i], &names[(i + 1) % n])).collect();
        let cycles = find_cycles(&edges);
        let on: Vec<&str> = names.iter().map(String::as_str).collect();
        let loops = loops_through(&edges, &cycles[0], &on, &CancelToken::new()).unwrap();
        assert_eq!(loops.len(), n);
        let expected = format!(
            "f5 -> f6 -> f7 -> f8 -> f9 -> f10 -> f11 -> f12 -> f13 -> f14 -> f15 -> f16 -> ... {} more -> f3 -> f4 -> f5",
            n - 14
        );
        assert_eq!(loops["f5"], expected);
        assert!(loops.values().all(|t| t.len() < 200), "every message stays short");
        assert_eq!(loop_text(&["a", "b", "a"], 2), "a -> b -> a", "short loops are whole");
        assert_eq!(
            loop_text(&["a", "b", "c", "d", "e", "a"], 2),
            "a -> b -> c -> d -> e -> a",
            "one file is not elided"
        );
        assert_eq!(loop_text(&["a", "b", "c", "d", "e", "f", "a"], 2), "a -> b -> ... 2 more -> e -> f -> a");
    }

    #[test]
    fn a_tripped_token_stops_the_loops_through_a_cycle() {
        let names: Vec<String> = (0..500).map(|i| format!("f{i}")).collect();
        let edges: Vec<Edge> = (0..500).map(|i| edge(&names[i], &names[(i + 1) % 500])).collect();
        let cycles = find_cycles(&edges);
        let on: Vec<&str> = names.iter().map(String::as_str).collect();
        let token = CancelToken::new();
        token.cancel();
        assert!(matches!(loops_through(&edges, &cycles[0], &on, &token), Err(Error::Cancelled)));
    }

    #[test]
    fn a_loop_is_walked_from_any_of_its_files() {
        let path = ["a", "b", "c", "a"];
        assert_eq!(loop_from(&path, 0), vec!["a", "b", "c", "a"]);
        assert_eq!(loop_from(&path, 1), vec!["b", "c", "a", "b"]);
        assert_eq!(loop_from(&path, 2), vec!["c", "a", "b", "c"]);
        assert_eq!(loop_from(&path, 9), vec!["a", "b", "c", "a"], "out of range: as it was");
    }

    #[test]
    fn module_declarations_make_no_cycle_but_a_real_use_loop_does() {
        let declared = |s: &str, t: &str, kind: &str| Edge { kind: kind.into(), ..edge(s, t) };
        // src/lib.rs declares `mod a; mod b;`, each reaches back with `use super::...` / `use crate::...`.
        let mut edges = vec![
            declared("src/lib.rs", "src/a.rs", "mod"),
            declared("src/lib.rs", "src/b.rs", "mod"),
            declared("src/a.rs", "src/lib.rs", "use"),
            declared("src/b.rs", "src/lib.rs", "use"),
            declared("lib/x.dart", "lib/x_part.dart", "part"),
            declared("lib/x_part.dart", "lib/x.dart", "part_of"),
        ];
        assert!(find_cycles(&edges).is_empty(), "{:?}", find_cycles(&edges));
        // a and b use each other: that is a cycle.
        edges.push(declared("src/a.rs", "src/b.rs", "use"));
        edges.push(declared("src/b.rs", "src/a.rs", "use"));
        let cycles = find_cycles(&edges);
        assert_eq!(cycles.len(), 1);
        assert_eq!(cycles[0].files, vec!["src/a.rs", "src/b.rs"]);
    }

    #[test]
    fn long_chains_do_not_overflow_the_stack() {
        let n = 200_000;
        let names: Vec<String> = (0..n).map(|i| format!("f{i}")).collect();
        let edges: Vec<Edge> = (0..n).map(|i| edge(&names[i], &names[(i + 1) % n])).collect();
        let cycles = find_cycles(&edges);
        assert_eq!(cycles.len(), 1);
        assert_eq!(cycles[0].files.len(), n);
        assert_eq!(cycles[0].path.len(), n + 1, "the one loop goes round every file");
    }

    #[test]
    fn dedupe_keeps_the_most_confident_edge() {
        let mut weak = edge("a", "b");
        weak.confidence = 0.5;
        weak.line = 1;
        let mut strong = edge("a", "b");
        strong.line = 9;
        let out = dedupe(vec![weak, strong]);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].line, 9);
    }

    #[test]
    fn a_re_export_beside_a_mod_declaration_keeps_its_cycle() {
        let at = |s: &str, t: &str, kind: &str, line: u32| Edge { kind: kind.into(), line, ..edge(s, t) };
        // net/mod.rs: `pub mod client;` (line 1) then `pub use self::client::Client;` (line 2);
        // util.rs uses net::Client, client.rs uses crate::util: a loop of three `use`s.
        let edges = dedupe(vec![
            at("src/net/mod.rs", "src/net/client.rs", "mod", 1),
            at("src/net/mod.rs", "src/net/client.rs", "use", 2),
            at("src/util.rs", "src/net/mod.rs", "use", 1),
            at("src/net/client.rs", "src/util.rs", "use", 1),
        ]);
        assert_eq!(edges.len(), 3);
        let kept = edges.iter().find(|e| e.source == "src/net/mod.rs").map(|e| (e.kind.as_str(), e.line));
        assert_eq!(kept, Some(("use", 2)));
        let cycles = find_cycles(&edges);
        assert_eq!(cycles.len(), 1);
        assert_eq!(cycles[0].files, vec!["src/net/client.rs", "src/net/mod.rs", "src/util.rs"]);
    }
}
