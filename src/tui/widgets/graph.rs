//! The impact graph as a node-link diagram in box-drawing characters.
//!
//! A small view-model ([`GraphView`]: nodes, directed import edges with a
//! confidence, a centre file) is laid out in columns: files that import the
//! centre on the left (one column per level), the centre in the middle, files
//! it imports on the right. Every arrow points right and reads "imports".
//! Edges are rasterised into a grid of connection bits and drawn with the
//! matching box glyphs; edges the resolver only guessed (confidence < 0.8) are
//! dashed. Nodes and edges on a cycle through the centre that fits the depth shown take the
//! theme's danger colour (without colours, `NO_COLOR`, such nodes carry `⇄` instead); the
//! selected entry's edges are drawn over the others, in their own layer, and the entries they
//! reach are outlined.
//! The risk overlay adds marks from [`RiskRule`]s: cycles, unresolved imports, and the
//! constraint rules of profile memory a node breaks ([`ConstraintRule`]: the engine decides
//! which, `Engine::rule_marks`; the widget only marks, colours and names them).
//!
//! The layout is computed once per graph ([`GraphModel`]); a frame only draws.

use super::{scroll_to, truncate, truncate_left, width};
use crate::tui::theme::{Slot, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

/// Below this confidence an edge is drawn dashed (the resolver guessed).
pub const WEAK_CONFIDENCE: f32 = 0.8;
/// Deepest level the pane asks for.
pub const MAX_DEPTH: u32 = 4;
/// Cycle mark.
pub const CYCLE_ICON: &str = "↻";
/// Unresolved-import mark.
pub const WARN_ICON: &str = "⚠";
/// A broken constraint rule (a forbidden import, ...).
pub const RULE_ICON: &str = "✖";
/// A broken rule against cycles (drawn in the danger colour).
pub const RULE_DANGER_ICON: &str = "⊘";
/// What the danger colour says, for a theme without colours (`NO_COLOR`): on a cycle back to
/// the centre within the depth shown. Drawn with the risk overlay on or off, as the colour is.
pub const CENTRE_CYCLE_ICON: &str = "⇄";

/// What a node stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// A file of the repository.
    File,
    /// A package outside the repository (`serde`, `react`).
    External,
    /// An import that could not be resolved to anything.
    Unresolved,
    /// Several nodes of one column summarised by folder (`src/runtime/ 23`) or as "+N more";
    /// `enter` expands it. Only [`GraphModel`] makes these.
    Group,
}

/// One node.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphNode {
    /// Repo-relative path, package name or import specifier.
    pub id: String,
    /// What it is.
    pub kind: NodeKind,
    /// Imports of this file the resolver could not place.
    pub unresolved_imports: u32,
    /// On an import cycle in the whole repository (the cycle may run outside this view).
    pub in_cycle: bool,
    /// Constraint rules of profile memory this node breaks (from the engine).
    pub rules: Vec<RuleFlag>,
}

/// A constraint rule a node breaks, as the engine found it.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleFlag {
    /// The rule (`no-import-cycles`, `forbid-import moment`).
    pub rule: String,
    /// A cycle the rules forbid: drawn in the danger colour.
    pub danger: bool,
    /// Whose rule and what is wrong, for the details line.
    pub reason: String,
}

/// A directed edge: `from` imports `to`.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphEdge {
    /// Importing node index.
    pub from: usize,
    /// Imported node index.
    pub to: usize,
    /// How sure the resolver is, 0..1.
    pub confidence: f32,
}

/// The graph around one file, as the engine returns it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GraphView {
    /// Nodes; edges refer to them by index.
    pub nodes: Vec<GraphNode>,
    /// Import edges.
    pub edges: Vec<GraphEdge>,
    /// Index of the centre file.
    pub center: usize,
    /// Levels requested each way.
    pub depth: u32,
    /// Sides the engine cut at its node limit (`[importers, imports]`): the outermost level
    /// shown on such a side holds only the first of its files, and its count says `2000+`.
    pub cut: [bool; 2],
    /// Why the constraint rules could not be read (a damaged profile database): the risk
    /// overlay then shows cycles and unresolved imports only, and says so instead of looking
    /// as if no rule were broken.
    pub rules_error: Option<String>,
}

impl GraphView {
    /// Index of the node with this id.
    pub fn find(&self, id: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.id == id)
    }
}

/// An edge seen from one end: (other node, confidence, on a cycle).
pub type Link = (usize, f32, bool);

/// A mark the risk overlay puts on a node.
#[derive(Debug, Clone, PartialEq)]
pub struct RiskMark {
    /// One-cell icon.
    pub icon: &'static str,
    /// Why, for the details line.
    pub reason: String,
}

/// A rule of the risk overlay.
pub trait RiskRule: Send + Sync {
    /// The mark for `node`, if the rule flags it.
    fn assess(&self, model: &GraphModel, node: usize) -> Option<RiskMark>;
}

/// Flags files on an import cycle.
pub struct CycleRule;

impl RiskRule for CycleRule {
    fn assess(&self, model: &GraphModel, node: usize) -> Option<RiskMark> {
        model.on_cycle(node).then(|| RiskMark { icon: CYCLE_ICON, reason: "on an import cycle".into() })
    }
}

/// Flags files with unresolved imports, and unresolved import nodes.
pub struct UnresolvedRule;

impl RiskRule for UnresolvedRule {
    fn assess(&self, model: &GraphModel, node: usize) -> Option<RiskMark> {
        let n = &model.view.nodes[node];
        match (n.kind, n.unresolved_imports) {
            (NodeKind::Unresolved, _) => {
                Some(RiskMark { icon: WARN_ICON, reason: "import could not be resolved".into() })
            }
            (_, 0) => None,
            (_, k) => Some(RiskMark {
                icon: WARN_ICON,
                reason: format!("{k} unresolved import{}", if k == 1 { "" } else { "s" }),
            }),
        }
    }
}

/// Flags nodes that break constraint rules of profile memory ("deprecate moment.js": a
/// `forbid-import`), naming each rule broken, with `✖`. A file that also sits on a cycle a rule
/// forbids gets [`ForbiddenCycleRule`]'s `⊘` beside it: one mark never hides the other.
pub struct ConstraintRule;

impl RiskRule for ConstraintRule {
    fn assess(&self, model: &GraphModel, node: usize) -> Option<RiskMark> {
        rule_mark(model, node, false, RULE_ICON)
    }
}

/// Flags nodes on an import cycle a constraint rule forbids ("avoid circular dependencies":
/// `no-import-cycles`), with `⊘` in the danger colour.
pub struct ForbiddenCycleRule;

impl RiskRule for ForbiddenCycleRule {
    fn assess(&self, model: &GraphModel, node: usize) -> Option<RiskMark> {
        rule_mark(model, node, true, RULE_DANGER_ICON)
    }
}

/// The mark of `node`'s rule flags of one kind (danger or not), each rule named.
fn rule_mark(model: &GraphModel, node: usize, danger: bool, icon: &'static str) -> Option<RiskMark> {
    let flags: Vec<&RuleFlag> = model.view.nodes[node].rules.iter().filter(|f| f.danger == danger).collect();
    if flags.is_empty() {
        return None;
    }
    let reason = flags.iter().map(|f| format!("breaks `{}`: {}", f.rule, f.reason)).collect::<Vec<_>>().join("; ");
    Some(RiskMark { icon, reason })
}

/// The rules the overlay applies.
pub fn default_rules() -> Vec<Box<dyn RiskRule>> {
    // In this order on a node and in its details line: the short reasons first, the cycle a
    // rule forbids (a long path) last.
    vec![Box::new(CycleRule), Box::new(ConstraintRule), Box::new(UnresolvedRule), Box::new(ForbiddenCycleRule)]
}

/// A column entry while grouping: its members and, for a group, its key and label.
type ColumnEntry = (Vec<usize>, Option<(String, String)>);

/// A column with more nodes than this is summarised by folder.
pub const GROUP_OVER: usize = 12;

/// An edge between entries of two adjacent columns: `from` (in column `col`) imports `to`
/// (in column `col + 1`). Entries may be groups; the link then stands for every edge between
/// their members.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnLink {
    /// Column of `from`; `to` is in the next one.
    pub col: usize,
    /// Importing entry (node index).
    pub from: usize,
    /// Imported entry (node index).
    pub to: usize,
    /// Best confidence among the edges it stands for.
    pub confidence: f32,
    /// On a cycle through the centre.
    pub cycle: bool,
}

/// A graph laid out in columns, with cycles found and risk marks applied.
///
/// Columns come from one source of truth, the breadth-first levels the engine also reports
/// (`docdex impact --json`: `inbound` / `outbound` with their `depth`): a file at import distance
/// `d` from the centre is in column `-d` (importers) and/or `+d` (imports). A file on a cycle
/// with the centre both imports it and is imported by it, so it is shown on both sides; every
/// column's count is the engine's count at that level.
#[derive(Debug, Clone, Default)]
pub struct GraphModel {
    /// The graph, with one node appended per group.
    pub view: GraphView,
    /// Columns left to right; each lists entries (node indices, maybe groups) top to bottom.
    pub columns: Vec<Vec<usize>>,
    /// Index of the centre's column.
    pub center_col: usize,
    /// Edges drawn between adjacent columns.
    pub links: Vec<ColumnLink>,
    /// Per node: on a cycle (a strongly connected component of two or more, or a self-import)
    /// anywhere in the repository.
    cycle_nodes: Vec<bool>,
    /// Per node: on a cycle through the centre within the depth shown (the only cycles drawn
    /// in the danger colour).
    centre_cycle: Vec<bool>,
    /// Per edge of the source graph: both ends on one cycle through the centre.
    cycle_edges: Vec<bool>,
    /// Per node: risk marks.
    marks: Vec<Vec<RiskMark>>,
    /// Per node: the columns it is shown in.
    columns_of: Vec<Vec<usize>>,
    /// Per group node: its members, and its key for [`GraphModel::expand_key`].
    groups: Vec<(usize, Vec<usize>, String)>,
    /// Per node: its label, the shortest path suffix no other node shown shares.
    labels: Vec<String>,
    /// Files per column (group members counted), the engine's count at that level.
    counts: Vec<usize>,
}

impl GraphModel {
    /// Lays out `view` to `depth` levels each way and applies `rules`; columns longer than
    /// [`GROUP_OVER`] are summarised by folder.
    pub fn new(view: GraphView, depth: u32, rules: &[Box<dyn RiskRule>]) -> GraphModel {
        GraphModel::with_expanded(view, depth, rules, &BTreeSet::new())
    }

    /// As [`GraphModel::new`], with the groups whose keys are in `expanded` shown file by file.
    pub fn with_expanded(
        view: GraphView,
        depth: u32,
        rules: &[Box<dyn RiskRule>],
        expanded: &BTreeSet<String>,
    ) -> GraphModel {
        let n = view.nodes.len();
        let depth = depth.clamp(1, MAX_DEPTH) as usize;
        let mut model = GraphModel { view, ..Default::default() };
        if n == 0 || model.view.center >= n {
            return model;
        }
        let centre = model.view.center;
        // On a cycle is the engine's word (`in_cycle`, its cycle list): the view's edges include
        // module declarations (`mod client;` answered by `use super::...`) and type-only imports,
        // which the engine leaves out of cycles. A search of its own over them marked files of
        // hyper with `↻` that `docdex graph cycles` puts on none.
        model.cycle_nodes = model.view.nodes.iter().map(|v| v.in_cycle).collect();
        let out_dist = bfs(&model.view, centre, depth, true);
        let in_dist = bfs(&model.view, centre, depth, false);
        // The danger colour: files on an engine cycle that a change to the centre (on one too)
        // comes back to within the depth shown (the centre reaches them and they reach it, so
        // they are drawn on both sides). In a crate where every module sits on one big cycle
        // this is a few files at depth 1 (the mutual imports), more as the depth grows, never
        // everything.
        let engine_cycle = |i: usize| model.view.nodes[i].in_cycle;
        let round_trip: Vec<bool> = (0..n)
            .map(|i| {
                i != centre && engine_cycle(i) && engine_cycle(centre) && in_dist[i].is_some() && out_dist[i].is_some()
            })
            .collect();
        let centre_back = round_trip.iter().any(|&b| b)
            || (engine_cycle(centre) && model.view.edges.iter().any(|e| e.from == centre && e.to == centre));
        model.centre_cycle = (0..n).map(|i| round_trip[i] || (i == centre && centre_back)).collect();
        let on = |i: usize| model.centre_cycle.get(i).copied().unwrap_or(false);
        model.cycle_edges = model.view.edges.iter().map(|e| on(e.from) && on(e.to)).collect();
        let mut columns: Vec<Vec<usize>> = vec![Vec::new(); 2 * depth + 1];
        columns[depth].push(centre);
        for i in (0..n).filter(|&i| i != centre) {
            if let Some(a) = in_dist[i] {
                columns[depth - a].push(i);
            }
            if let Some(b) = out_dist[i] {
                columns[depth + b].push(i);
            }
        }
        model.center_col = depth;
        // Unresolved imports are drawn but not counted: the engine lists them apart (diagnostics).
        let counted = |c: &Vec<usize>| c.iter().filter(|&&i| model.view.nodes[i].kind != NodeKind::Unresolved).count();
        model.counts = columns.iter().map(counted).collect();
        model.columns = columns;
        model.group(expanded);
        model.columns_of = vec![Vec::new(); model.view.nodes.len()];
        for (c, col) in model.columns.iter().enumerate() {
            for &i in col {
                model.columns_of[i].push(c);
            }
        }
        model.link();
        model.order_columns();
        model.labels = labels(&model.view, &model.columns);
        let total = model.view.nodes.len();
        model.cycle_nodes.resize(total, false);
        model.centre_cycle.resize(total, false);
        let group_flags: Vec<(usize, bool, bool)> = model
            .groups
            .iter()
            .map(|(g, members, _)| {
                let any = |v: &[bool]| members.iter().any(|&m| v.get(m).copied().unwrap_or(false));
                (*g, any(&model.cycle_nodes), any(&model.centre_cycle))
            })
            .collect();
        for (g, cycle, centre_cycle) in group_flags {
            model.cycle_nodes[g] = cycle;
            model.centre_cycle[g] = centre_cycle;
        }
        model.marks = (0..total).map(|i| rules.iter().filter_map(|r| r.assess(&model, i)).collect()).collect();
        model
    }

    /// Summarises each long column by folder: a folder with more than one file there becomes a
    /// group node (unless its key is in `expanded`); past [`GROUP_OVER`] entries the smallest
    /// are folded into one "+N more" group.
    fn group(&mut self, expanded: &BTreeSet<String>) {
        for c in 0..self.columns.len() {
            if c == self.center_col || self.columns[c].len() <= GROUP_OVER {
                continue;
            }
            let level = c as i64 - self.center_col as i64;
            let mut by_folder: BTreeMap<String, Vec<usize>> = BTreeMap::new();
            for &i in &self.columns[c] {
                by_folder.entry(folder_of(&self.view.nodes[i])).or_default().push(i);
            }
            // (members, key and label of a group); singles and expanded folders stay as files.
            let mut entries: Vec<ColumnEntry> = Vec::new();
            let mut opened = 0;
            for (folder, members) in by_folder {
                let key = format!("{level}:{folder}");
                if expanded.contains(&key) {
                    // An opened folder's files come first and never fold into "+N more".
                    opened += members.len();
                    let files: Vec<_> = members.into_iter().map(|m| (vec![m], None)).collect();
                    entries.splice(0..0, files);
                } else if members.len() == 1 {
                    entries.push((members, None));
                } else {
                    let label = format!("{folder} ({})", members.len());
                    entries.push((members, Some((key, label))));
                }
            }
            if entries.len() > GROUP_OVER {
                let more_key = format!("{level}:+");
                if expanded.contains(&more_key) {
                    // Shown in full: the column scrolls.
                } else {
                    // The opened folders' files and the biggest groups stay; the rest go into "+N more".
                    entries[opened..].sort_by_key(|(m, _)| std::cmp::Reverse(m.len()));
                    let keep = (GROUP_OVER - 1).max(opened);
                    let rest: Vec<usize> = entries.drain(keep.min(entries.len())..).flat_map(|(m, _)| m).collect();
                    if !rest.is_empty() {
                        let label = format!("+{} more", rest.len());
                        entries.push((rest, Some((more_key, label))));
                    }
                }
            }
            let mut col = Vec::new();
            for (members, group) in entries {
                match group {
                    None => col.push(members[0]),
                    Some((key, label)) => {
                        let g = self.view.nodes.len();
                        let unresolved = members.iter().map(|&m| self.view.nodes[m].unresolved_imports).sum();
                        let in_cycle = members.iter().any(|&m| self.view.nodes[m].in_cycle);
                        self.view.nodes.push(GraphNode {
                            id: label,
                            kind: NodeKind::Group,
                            unresolved_imports: unresolved,
                            in_cycle,
                            rules: Vec::new(),
                        });
                        self.groups.push((g, members, key));
                        col.push(g);
                    }
                }
            }
            self.columns[c] = col;
        }
    }

    /// The links between adjacent columns: every edge of the source graph from an entry of
    /// column `c` (or one of its members) to an entry of column `c + 1`, once per entry pair.
    fn link(&mut self) {
        let n_cols = self.columns.len();
        // (column, member node) -> entry shown for it.
        let mut entry_of: HashMap<(usize, usize), usize> = HashMap::new();
        for (c, col) in self.columns.iter().enumerate() {
            for &e in col {
                entry_of.insert((c, e), e);
            }
        }
        for (g, members, _) in &self.groups {
            for &c in &self.columns_of[*g] {
                for &m in members {
                    entry_of.insert((c, m), *g);
                }
            }
        }
        let mut seen: HashMap<(usize, usize, usize), usize> = HashMap::new();
        let mut links: Vec<ColumnLink> = Vec::new();
        for (k, e) in self.view.edges.iter().enumerate() {
            for c in 0..n_cols.saturating_sub(1) {
                let (Some(&from), Some(&to)) = (entry_of.get(&(c, e.from)), entry_of.get(&(c + 1, e.to))) else {
                    continue;
                };
                let cycle = self.cycle_edges.get(k).copied().unwrap_or(false);
                match seen.get(&(c, from, to)) {
                    Some(&l) => {
                        links[l].confidence = links[l].confidence.max(e.confidence);
                        links[l].cycle |= cycle;
                    }
                    None => {
                        seen.insert((c, from, to), links.len());
                        links.push(ColumnLink { col: c, from, to, confidence: e.confidence, cycle });
                    }
                }
            }
        }
        self.links = links;
    }

    /// Orders each column by the mean position of its neighbours nearer the centre, then by name,
    /// which keeps most edges from crossing; groups and "+N more" go last.
    fn order_columns(&mut self) {
        let c0 = self.center_col;
        for step in 1..=c0 {
            for (col, inner) in [(c0 + step, c0 + step - 1), (c0 - step, c0 - step + 1)] {
                let inner_pos: HashMap<usize, usize> =
                    self.columns[inner].iter().enumerate().map(|(p, &node)| (node, p)).collect();
                let view = &self.view;
                let links = &self.links;
                let mut keyed: Vec<(f64, (u8, String), usize)> = self.columns[col]
                    .iter()
                    .map(|&node| {
                        let ps: Vec<usize> = links
                            .iter()
                            .filter_map(|l| {
                                let (near, far) = if col > c0 {
                                    ((l.col == inner).then_some(l.from), l.to)
                                } else {
                                    ((l.col == col).then_some(l.to), l.from)
                                };
                                near.filter(|_| far == node).and_then(|a| inner_pos.get(&a).copied())
                            })
                            .collect();
                        let bary =
                            if ps.is_empty() { f64::MAX } else { ps.iter().sum::<usize>() as f64 / ps.len() as f64 };
                        let kind = match view.nodes[node].kind {
                            NodeKind::File => 0,
                            NodeKind::External | NodeKind::Unresolved => 1,
                            NodeKind::Group if view.nodes[node].id.starts_with('+') => 3,
                            NodeKind::Group => 2,
                        };
                        (bary, (kind, view.nodes[node].id.clone()), node)
                    })
                    .collect();
                keyed.sort_by(|a, b| a.1 .0.cmp(&b.1 .0).then(a.0.total_cmp(&b.0)).then_with(|| a.1.cmp(&b.1)));
                self.columns[col] = keyed.into_iter().map(|k| k.2).collect();
            }
        }
    }

    /// True when the node is on an import cycle (anywhere in the repository).
    pub fn on_cycle(&self, node: usize) -> bool {
        self.cycle_nodes.get(node).copied().unwrap_or(false)
    }

    /// True when the node is on a cycle through the centre that fits the depth shown: the
    /// centre imports it and it imports the centre, each within the depth, so a change to the
    /// centre comes back to it that soon. Only these are drawn in the danger colour, so the
    /// colour keeps its meaning in repositories where most files sit on some cycle.
    pub fn on_centre_cycle(&self, node: usize) -> bool {
        self.centre_cycle.get(node).copied().unwrap_or(false)
    }

    /// True when the edge (of the source graph) is on a cycle through the centre.
    pub fn edge_on_cycle(&self, edge: usize) -> bool {
        self.cycle_edges.get(edge).copied().unwrap_or(false)
    }

    /// Risk marks of a node.
    pub fn marks(&self, node: usize) -> &[RiskMark] {
        self.marks.get(node).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The first column a node is shown in (a file on a cycle with the centre is in two).
    pub fn column_of(&self, node: usize) -> Option<usize> {
        self.columns_of.get(node).and_then(|c| c.first()).copied()
    }

    /// Every column a node is shown in.
    pub fn columns_of(&self, node: usize) -> &[usize] {
        self.columns_of.get(node).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Entries shown (a group counts once).
    pub fn shown(&self) -> usize {
        self.columns.iter().map(Vec::len).sum()
    }

    /// Files (and packages) in a column, group members counted: the engine's count of
    /// dependencies at that level.
    pub fn count(&self, col: usize) -> usize {
        self.counts.get(col).copied().unwrap_or(0)
    }

    /// True when `col` is the outermost level holding files on a side the engine cut at its
    /// node limit: its count is a lower bound (a hub imported by 5,000 files read `(2000)`).
    pub fn cut(&self, col: usize) -> bool {
        let level = self.level(col);
        let (side, outward) = match level {
            0 => return false,
            l if l < 0 => (0, col.checked_sub(1)),
            _ => (1, Some(col + 1)),
        };
        self.view.cut[side] && self.count(col) > 0 && outward.is_none_or(|o| self.count(o) == 0)
    }

    /// The members of a group node (empty for any other node).
    pub fn members(&self, node: usize) -> &[usize] {
        self.groups.iter().find(|(g, _, _)| *g == node).map_or(&[], |(_, m, _)| m.as_slice())
    }

    /// The key that expands a group node ([`GraphModel::with_expanded`]).
    pub fn expand_key(&self, node: usize) -> Option<&str> {
        self.groups.iter().find(|(g, _, _)| *g == node).map(|(_, _, k)| k.as_str())
    }

    /// The label of a node: its shortest path suffix that no other node shown shares.
    pub fn label(&self, node: usize) -> &str {
        self.labels.get(node).map_or("", String::as_str)
    }

    /// The level of a column (negative = importers).
    pub fn level(&self, col: usize) -> i64 {
        col as i64 - self.center_col as i64
    }

    /// Edges out of and into a node, in the source graph (for the centre: every direct import
    /// and importer, as `docdex impact --json` lists them at depth 1).
    pub fn neighbours(&self, node: usize) -> (Vec<Link>, Vec<Link>) {
        let mut imports = Vec::new();
        let mut importers = Vec::new();
        for (k, e) in self.view.edges.iter().enumerate() {
            if e.from == node {
                imports.push((e.to, e.confidence, self.edge_on_cycle(k)));
            }
            if e.to == node {
                importers.push((e.from, e.confidence, self.edge_on_cycle(k)));
            }
        }
        (imports, importers)
    }
}

/// The folder a node is grouped under: a file's parent folder (`src/runtime/`), `packages`, or
/// `unresolved`.
fn folder_of(node: &GraphNode) -> String {
    match node.kind {
        NodeKind::File => match node.id.rsplit_once('/') {
            Some((dir, _)) => format!("{dir}/"),
            None => "./".into(),
        },
        NodeKind::External => "packages".into(),
        NodeKind::Unresolved => "unresolved".into(),
        NodeKind::Group => node.id.clone(),
    }
}

/// Labels for every node: for files the shortest suffix of whole path parts that no other
/// file shown shares (`json/__init__.py` beside `flask/__init__.py`); packages, imports and
/// groups by their id.
fn labels(view: &GraphView, columns: &[Vec<usize>]) -> Vec<String> {
    let shown: BTreeSet<usize> = columns.iter().flatten().copied().collect();
    let files: Vec<usize> = shown.iter().copied().filter(|&i| view.nodes[i].kind == NodeKind::File).collect();
    let parts: HashMap<usize, Vec<&str>> = files.iter().map(|&i| (i, view.nodes[i].id.split('/').collect())).collect();
    let suffix = |i: usize, k: usize| -> String {
        let p = &parts[&i];
        p[p.len().saturating_sub(k)..].join("/")
    };
    let mut out: Vec<String> = view
        .nodes
        .iter()
        .map(|n| match n.kind {
            NodeKind::File => n.id.clone(),
            NodeKind::External => format!("pkg {}", n.id),
            NodeKind::Unresolved => format!("? {}", n.id),
            NodeKind::Group => format!("▸ {}", n.id),
        })
        .collect();
    for &i in &files {
        let len = parts[&i].len();
        let mut k = 1;
        while k < len {
            let mine = suffix(i, k);
            if !files.iter().any(|&j| j != i && view.nodes[j].id != view.nodes[i].id && suffix(j, k) == mine) {
                break;
            }
            k += 1;
        }
        out[i] = suffix(i, k);
    }
    // Folder groups: the shortest suffix of whole folders no other group shown shares
    // (`io/ (4)` beside `sync/ (8)`, `runtime/io/` beside `src/io/`); drawing adds the
    // folders above it while they fit.
    let groups: Vec<(usize, Vec<&str>, &str)> = shown
        .iter()
        .copied()
        .filter(|&i| view.nodes[i].kind == NodeKind::Group)
        .filter_map(|i| {
            let (folder, count) = view.nodes[i].id.rsplit_once(" (")?;
            let folder = folder.strip_suffix('/')?;
            Some((i, folder.split('/').collect(), count))
        })
        .collect();
    let gsuffix = |p: &[&str], k: usize| p[p.len().saturating_sub(k)..].join("/");
    for (i, parts, count) in &groups {
        let mut k = 1;
        while k < parts.len() {
            let mine = gsuffix(parts, k);
            // The same folder grouped in two columns is one folder, not a clash.
            if !groups.iter().any(|(j, p, _)| j != i && p != parts && gsuffix(p, k) == mine) {
                break;
            }
            k += 1;
        }
        out[*i] = format!("▸ {}/ ({count}", gsuffix(parts, k));
    }
    out
}

/// A folder group's label in `room` cells. The count and the unique folder suffix of `unique`
/// (`▸ io/ (4)`) always show whole if they can; the room left is filled with the folders
/// above, cut from the left (`▸ …untime/io/ (4)`). Where even the suffix does not fit the
/// `▸ ` goes, then the suffix is cut at its end, so its start still reads (`multi_th…/ (7)`).
fn group_label(id: &str, unique: &str, room: usize) -> String {
    let Some((folder, count)) = id.rsplit_once(" (") else { return truncate_left(unique, room) };
    let tail = format!(" ({count}");
    let parts: Vec<&str> = folder.trim_end_matches('/').split('/').collect();
    let min = unique
        .trim_start_matches("▸ ")
        .rsplit_once(" (")
        .map_or(1, |(f, _)| f.trim_end_matches('/').split('/').count())
        .clamp(1, parts.len());
    let suffix = format!("{}/", parts[parts.len() - min..].join("/"));
    let above = parts[..parts.len() - min].iter().map(|p| format!("{p}/")).collect::<String>();
    let whole = format!("▸ {suffix}{tail}");
    if width(&whole) <= room {
        let avail = room - width(&whole);
        if above.is_empty() || avail < 2 {
            return whole;
        }
        if width(&above) <= avail {
            return format!("▸ {above}{suffix}{tail}");
        }
        // As many whole folders as fit after `…/`; only when none does, the room is filled
        // from the left (`…untime/io/`).
        let mut kept = String::new();
        for p in parts[..parts.len() - min].iter().rev() {
            let next = format!("{p}/{kept}");
            if width(&next) + 2 > avail {
                break;
            }
            kept = next;
        }
        if !kept.is_empty() {
            return format!("▸ …/{kept}{suffix}{tail}");
        }
        return format!("▸ {}{suffix}{tail}", truncate_left(&above, avail));
    }
    let bare = format!("{suffix}{tail}");
    if width(&bare) <= room {
        return bare;
    }
    format!("{}{tail}", truncate(&suffix, room.saturating_sub(width(&tail))))
}

/// Breadth-first distances from `start` along (or against) edges, up to `depth`.
fn bfs(view: &GraphView, start: usize, depth: usize, forward: bool) -> Vec<Option<usize>> {
    let n = view.nodes.len();
    let mut adj: Vec<Vec<usize>> = vec![Vec::new(); n];
    for e in &view.edges {
        if e.from < n && e.to < n {
            if forward {
                adj[e.from].push(e.to);
            } else {
                adj[e.to].push(e.from);
            }
        }
    }
    let mut dist = vec![None; n];
    dist[start] = Some(0);
    let mut queue = VecDeque::from([start]);
    while let Some(u) = queue.pop_front() {
        let du = dist[u].unwrap_or(0);
        if du == depth {
            continue;
        }
        for &v in &adj[u] {
            if dist[v].is_none() {
                dist[v] = Some(du + 1);
                queue.push_back(v);
            }
        }
    }
    dist
}

/// Where the selection is and how each column is scrolled.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GraphCursor {
    /// Selected column.
    pub col: usize,
    /// Selected row within the column.
    pub idx: usize,
    /// First shown row per column.
    pub offsets: Vec<usize>,
}

impl GraphCursor {
    /// The cursor on the centre of a model.
    pub fn at_center(model: &GraphModel) -> GraphCursor {
        GraphCursor { col: model.center_col, idx: 0, offsets: vec![0; model.columns.len()] }
    }

    /// The selected node.
    pub fn node(&self, model: &GraphModel) -> Option<usize> {
        model.columns.get(self.col).and_then(|c| c.get(self.idx)).copied()
    }

    /// Moves within the column.
    pub fn vertical(&mut self, model: &GraphModel, delta: i64) {
        let len = model.columns.get(self.col).map_or(0, Vec::len);
        if len > 0 {
            self.idx = (self.idx as i64 + delta).clamp(0, len as i64 - 1) as usize;
        }
    }

    /// Moves to the nearest non-empty column left (`-1`) or right (`1`), picking the
    /// neighbour of the current node if there is one, else the row at the same position.
    pub fn horizontal(&mut self, model: &GraphModel, dir: i64) {
        let mut c = self.col as i64 + dir;
        while c >= 0 && (c as usize) < model.columns.len() && model.columns[c as usize].is_empty() {
            c += dir;
        }
        if c < 0 || c as usize >= model.columns.len() {
            return;
        }
        let target = &model.columns[c as usize];
        let current = self.node(model);
        let (from_col, to_col) = (self.col, c as usize);
        let linked = current.and_then(|cur| {
            target.iter().position(|&t| {
                model.links.iter().any(|l| {
                    (l.col == from_col && l.from == cur && l.to == t && to_col == from_col + 1)
                        || (l.col == to_col && l.from == t && l.to == cur && from_col == to_col + 1)
                })
            })
        });
        self.idx = linked.unwrap_or_else(|| self.idx.min(target.len() - 1));
        self.col = c as usize;
    }
}

/// A lane (0-based, `< lanes`) for each link of one gap between columns, given as (from, to,
/// row of from, row of to). Links that share an end run on one lane, a trunk: the end with
/// more links in the gap (the target of a fan-in, the source of a fan-out). Trunks are handed
/// lanes in order of their rows, each the first lane free over its rows; when none is free,
/// the one that frees soonest. The trunks of the selected entry's links go first, and no other
/// trunk is put on their lane over their rows while another lane will do, so the selection's
/// edges never merge with edges it does not share an end with. A single trunk takes the
/// middle lane.
fn assign_lanes(links: &[(usize, usize, u16, u16)], selected: Option<usize>, lanes: u16) -> Vec<u16> {
    let lanes = lanes.max(1) as usize;
    let mut outs: HashMap<usize, usize> = HashMap::new();
    let mut ins: HashMap<usize, usize> = HashMap::new();
    for &(f, t, _, _) in links {
        *outs.entry(f).or_default() += 1;
        *ins.entry(t).or_default() += 1;
    }
    // A trunk: (side, entry); side 0 = a source's fan-out, 1 = a target's fan-in. Its span:
    // (top row, bottom row, carries a link of the selection).
    type Trunk = (u8, usize);
    type Span = (u16, u16, bool);
    let keys: Vec<Trunk> = links.iter().map(|&(f, t, _, _)| if ins[&t] > outs[&f] { (1, t) } else { (0, f) }).collect();
    let mut spans: BTreeMap<Trunk, Span> = BTreeMap::new();
    for (k, &(f, t, sy, ty)) in keys.iter().zip(links) {
        let focus = selected == Some(f) || selected == Some(t);
        let span = spans.entry(*k).or_insert((sy.min(ty), sy.max(ty), focus));
        *span = (span.0.min(sy).min(ty), span.1.max(sy).max(ty), span.2 || focus);
    }
    // A dense gap (most sources link most targets, as folder groups do) drawn as separate
    // trunks is a lattice of crossings that says no more than "all of these import all of
    // those": its links share one lane, a bus, except the selection's, which keep theirs.
    let sources: HashSet<usize> = links.iter().map(|l| l.0).collect();
    let targets: HashSet<usize> = links.iter().map(|l| l.1).collect();
    let dense = spans.len() > 2 && 2 * links.len() >= sources.len() * targets.len();
    if dense {
        return bus_lanes(links, selected, lanes);
    }
    let mut order: Vec<(Trunk, Span)> = spans.into_iter().collect();
    order.sort_by_key(|(_, (top, bottom, focus))| (!focus, *top, *bottom));
    let mut lane_of: HashMap<Trunk, usize> = HashMap::new();
    if order.len() == 1 {
        lane_of.insert(order[0].0, lanes / 2);
    } else {
        // Per lane: the last row a trunk on it takes, and the selection's rows on it.
        let mut ends: Vec<Option<u16>> = vec![None; lanes];
        let mut held: Vec<Vec<(u16, u16)>> = vec![Vec::new(); lanes];
        for (k, (top, bottom, focus)) in order {
            let free = ends.iter().position(|e| e.is_none_or(|e| e < top));
            let clear = |i: usize| held[i].iter().all(|&(a, b)| b < top || a > bottom);
            let lane = free
                .or_else(|| (0..lanes).filter(|&i| clear(i)).min_by_key(|&i| ends[i]))
                .or_else(|| (0..lanes).min_by_key(|&i| ends[i]))
                .unwrap_or(0);
            ends[lane] = Some(ends[lane].map_or(bottom, |e| e.max(bottom)));
            if focus {
                held[lane].push((top, bottom));
            }
            lane_of.insert(k, lane);
        }
    }
    keys.iter().map(|k| lane_of.get(k).copied().unwrap_or(0) as u16).collect()
}

/// Lanes of a dense gap ([`assign_lanes`]): every link on one bus lane, the middle one,
/// except the selected entry's, which run together on the lane beside it.
fn bus_lanes(links: &[(usize, usize, u16, u16)], selected: Option<usize>, lanes: usize) -> Vec<u16> {
    let bus = (lanes / 2) as u16;
    let own = if lanes < 2 {
        bus
    } else if bus > 0 {
        bus - 1
    } else {
        bus + 1
    };
    links.iter().map(|&(f, t, _, _)| if selected == Some(f) || selected == Some(t) { own } else { bus }).collect()
}

/// How many of `levels` levels each side of the centre fit in `width` cells.
pub fn levels_that_fit(levels: u16, width: u16) -> u16 {
    let mut side = levels;
    while side > 0 && (2 * side + 1) * MIN_COL + 2 * side * GAP > width {
        side -= 1;
    }
    side
}

/// Draws a [`GraphModel`] with a cursor.
pub struct GraphWidget<'a> {
    /// The laid-out graph.
    pub model: &'a GraphModel,
    /// Selection and scrolling.
    pub cursor: &'a GraphCursor,
    /// Colours.
    pub theme: &'a Theme,
    /// Show the risk overlay's marks.
    pub risk: bool,
}

/// Connection bits of a canvas cell.
const LEFT: u8 = 1;
const RIGHT: u8 = 2;
const UP: u8 = 4;
const DOWN: u8 = 8;

/// Gap between columns, in cells (room for lanes and the arrowhead).
const GAP: u16 = 6;
/// Narrowest useful column.
const MIN_COL: u16 = 12;

/// What a render showed, so the pane can page and keep its scroll positions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GraphFrame {
    /// Node rows that fit per column.
    pub rows_per_column: usize,
    /// Columns actually drawn (first, last) when the width forced fewer levels.
    pub shown_columns: (usize, usize),
    /// First shown row per column, with the selection scrolled into view.
    pub offsets: Vec<usize>,
}

/// Where the diagram's columns and rows go in one frame (see [`GraphWidget::layout`]).
struct Layout {
    /// The diagram's area, between the header row and the details.
    canvas: Rect,
    /// The left edge of the widget.
    x: u16,
    /// The first and last columns shown.
    first: usize,
    last: usize,
    col_w: u16,
    /// Entries drawn as 3-row boxes (they fit), else one row each.
    boxed: bool,
    row_h: u16,
    rows_per_column: usize,
    /// Each column's scroll offset.
    offsets: Vec<usize>,
}

impl Layout {
    /// The left edge of column `c` (shown).
    fn col_x(&self, c: usize) -> u16 {
        self.x + (c - self.first) as u16 * (self.col_w + GAP)
    }
}

struct Canvas {
    x: u16,
    y: u16,
    w: u16,
    h: u16,
    bits: Vec<u8>,
    solid: Vec<bool>,
    rank: Vec<u8>,
}

impl Canvas {
    fn new(area: Rect) -> Canvas {
        let n = area.width as usize * area.height as usize;
        Canvas {
            x: area.x,
            y: area.y,
            w: area.width,
            h: area.height,
            bits: vec![0; n],
            solid: vec![false; n],
            rank: vec![0; n],
        }
    }

    fn add(&mut self, x: u16, y: u16, bits: u8, solid: bool, rank: u8) {
        if x < self.x || y < self.y || x >= self.x + self.w || y >= self.y + self.h {
            return;
        }
        let i = (y - self.y) as usize * self.w as usize + (x - self.x) as usize;
        self.bits[i] |= bits;
        self.solid[i] |= solid;
        self.rank[i] = self.rank[i].max(rank);
    }

    fn hline(&mut self, x0: u16, x1: u16, y: u16, solid: bool, rank: u8) {
        for x in x0..=x1 {
            let mut b = 0;
            if x > x0 {
                b |= LEFT;
            }
            if x < x1 {
                b |= RIGHT;
            }
            self.add(x, y, b, solid, rank);
        }
    }

    fn vline(&mut self, x: u16, y0: u16, y1: u16, solid: bool, rank: u8) {
        let (a, b) = if y0 <= y1 { (y0, y1) } else { (y1, y0) };
        for y in a..=b {
            let mut bits = 0;
            if y > a {
                bits |= UP;
            }
            if y < b {
                bits |= DOWN;
            }
            self.add(x, y, bits, solid, rank);
        }
    }

    fn glyph(bits: u8, solid: bool) -> Option<&'static str> {
        Some(match bits {
            0 => return None,
            b if b == LEFT | RIGHT || b == LEFT || b == RIGHT => {
                if solid {
                    "─"
                } else {
                    "╌"
                }
            }
            b if b == UP | DOWN || b == UP || b == DOWN => {
                if solid {
                    "│"
                } else {
                    "╎"
                }
            }
            b if b == RIGHT | DOWN => "╭",
            b if b == LEFT | DOWN => "╮",
            b if b == RIGHT | UP => "╰",
            b if b == LEFT | UP => "╯",
            b if b == LEFT | RIGHT | DOWN => "┬",
            b if b == LEFT | RIGHT | UP => "┴",
            b if b == UP | DOWN | RIGHT => "├",
            b if b == UP | DOWN | LEFT => "┤",
            _ => "┼",
        })
    }

    fn draw(&self, buf: &mut Buffer, styles: &[Style; 4]) {
        for row in 0..self.h {
            for col in 0..self.w {
                let i = row as usize * self.w as usize + col as usize;
                if let Some(g) = Self::glyph(self.bits[i], self.solid[i]) {
                    let style = styles[(self.rank[i] as usize).min(3)];
                    buf[(self.x + col, self.y + row)].set_symbol(g).set_style(style);
                }
            }
        }
    }
}

impl GraphWidget<'_> {
    /// Draws into `area` (no frame): a header row, the diagram, and details of the selection.
    pub fn render(&self, area: Rect, buf: &mut Buffer) -> GraphFrame {
        let model = self.model;
        if model.columns.is_empty() || area.height < 4 || area.width < MIN_COL {
            return GraphFrame::default();
        }
        let selected = self.cursor.node(model);
        // The risk line gets rows of its own, wrapped, above the key to the marks (it used to
        // take the key's row and was cut before the cycle it names); the diagram keeps
        // `MIN_CANVAS` rows.
        // Below 16 rows the details are the selected node's line, the risk line cut to one row
        // (the overlay's point: it keeps its row before the node's line does) and the key to
        // the marks (on as many rows as leave the diagram two), without the edges.
        let roomy = area.height >= 16;
        let w = area.width as usize;
        let risk =
            selected
                .and_then(|n| self.risk_line(n))
                .map(|r| if roomy { wrap_rows(&r, w) } else { vec![truncate(&r, w)] });
        let small_risk = if roomy { 0 } else { risk.as_ref().map_or(0, Vec::len) };
        let cap =
            if roomy { KEY_ROWS } else { KEY_ROWS_SMALL.min((area.height as usize).saturating_sub(4 + small_risk)) };
        let key = self.key_rows(w, cap, self.columns_that_fit(area.width));
        let key_h = key.len() as u16;
        let risk_room = area.height.saturating_sub(1 + 3 + key_h + MIN_CANVAS).clamp(1, MAX_RISK_ROWS) as usize;
        let risk_rows = risk.as_ref().map_or(0, |r| r.len().min(risk_room)) as u16;
        let details_h = if roomy { 3 + risk_rows + key_h } else { (1 + risk_rows + key_h).min(area.height - 3) };
        let header = Rect { height: 1, ..area };
        let details = Rect { y: area.y + area.height - details_h, height: details_h, ..area };
        let layout = self.layout(area, Rect { y: area.y + 1, height: area.height - 1 - details_h, ..area });
        let frame = GraphFrame {
            rows_per_column: layout.rows_per_column,
            shown_columns: (layout.first, layout.last),
            offsets: layout.offsets.clone(),
        };
        // Row of each visible entry, per column (a file on a cycle with the centre is in two).
        let mut anchor: HashMap<(usize, usize), u16> = HashMap::new();
        for (c, (col, &offset)) in
            model.columns.iter().zip(&layout.offsets).enumerate().take(layout.last + 1).skip(layout.first)
        {
            let visible = col.len().saturating_sub(offset).min(layout.rows_per_column);
            let used = visible as u16 * layout.row_h;
            let top = layout.canvas.y + (layout.canvas.height - used) / 2;
            for (k, &node) in col.iter().skip(offset).take(visible).enumerate() {
                anchor.insert((c, node), top + k as u16 * layout.row_h + layout.row_h / 2);
            }
            self.header(buf, header, layout.col_x(c), layout.col_w, c, offset, visible);
        }
        let linked = self.draw_links(buf, &layout, &anchor, selected);
        self.draw_nodes(buf, &layout, &anchor, selected, &linked);
        self.details(buf, details, selected, risk.unwrap_or_default(), key);
        frame
    }

    /// The first and last column shown: as many levels each side as fit `width`.
    fn columns_that_fit(&self, width: u16) -> (usize, usize) {
        let model = self.model;
        let side = levels_that_fit((model.columns.len() as u16 - 1) / 2, width) as usize;
        (model.center_col - side, model.center_col + side)
    }

    /// Which columns fit `area`'s width, how wide each is, and how each scrolls.
    fn layout(&self, area: Rect, canvas: Rect) -> Layout {
        let model = self.model;
        let (first, last) = self.columns_that_fit(area.width);
        let ncols = (last - first + 1) as u16;
        let col_w = ((area.width - GAP * (ncols - 1)) / ncols).max(1);
        let boxed = model.columns[first..=last].iter().map(Vec::len).max().unwrap_or(1) * 3 <= canvas.height as usize;
        let row_h: u16 = if boxed { 3 } else { 1 };
        let rows_per_column = ((canvas.height / row_h) as usize).max(1);
        let offsets: Vec<usize> = model
            .columns
            .iter()
            .enumerate()
            .map(|(c, col)| {
                let stored = self.cursor.offsets.get(c).copied().unwrap_or(0);
                if c == self.cursor.col {
                    scroll_to(self.cursor.idx, stored, rows_per_column, col.len())
                } else {
                    stored.min(col.len().saturating_sub(rows_per_column))
                }
            })
            .collect();
        Layout { canvas, x: area.x, first, last, col_w, boxed, row_h, rows_per_column, offsets }
    }

    /// Edges between adjacent columns, rasterised. The links of a gap that share an end meet
    /// on one vertical lane (a trunk: a fan-in or a fan-out reads as one bracket), and trunks
    /// whose rows overlap get different lanes where the gap has room; a trunk the selected
    /// entry's links run on is never shared with another that overlaps it. The selection's
    /// links are highlighted, drawn over the others; returns the entries they reach (outlined).
    fn draw_links(
        &self,
        buf: &mut Buffer,
        layout: &Layout,
        anchor: &HashMap<(usize, usize), u16>,
        selected: Option<usize>,
    ) -> BTreeSet<(usize, usize)> {
        let mut canvas = Canvas::new(layout.canvas);
        let mut linked: BTreeSet<(usize, usize)> = BTreeSet::new();
        let mut arrows: Vec<(u16, u16, u8)> = Vec::new();
        for c in layout.first..layout.last {
            let x_start = layout.col_x(c) + layout.col_w;
            let x_arrow = layout.col_x(c + 1) - 1;
            let lanes = (GAP - 3).max(1);
            let drawn: Vec<(&ColumnLink, u16, u16)> = self
                .model
                .links
                .iter()
                .filter(|l| l.col == c)
                .filter_map(|l| Some((l, *anchor.get(&(c, l.from))?, *anchor.get(&(c + 1, l.to))?)))
                .collect();
            let ends: Vec<(usize, usize, u16, u16)> =
                drawn.iter().map(|(l, sy, ty)| (l.from, l.to, *sy, *ty)).collect();
            let lane_of = assign_lanes(&ends, selected, lanes);
            for ((l, sy, ty), lane) in drawn.iter().zip(lane_of) {
                let (sy, ty) = (*sy, *ty);
                let lane_x = x_start + 1 + lane;
                let solid = l.confidence >= WEAK_CONFIDENCE;
                let focused = selected == Some(l.from) || selected == Some(l.to);
                let rank = if focused {
                    3
                } else if l.cycle {
                    2
                } else {
                    1
                };
                canvas.hline(x_start, lane_x, sy, solid, rank);
                canvas.vline(lane_x, sy, ty, solid, rank);
                canvas.hline(lane_x, x_arrow - 1, ty, solid, rank);
                canvas.add(x_arrow - 1, ty, RIGHT, true, rank);
                arrows.push((x_arrow, ty, rank));
                if focused {
                    linked.insert((c, l.from));
                    linked.insert((c + 1, l.to));
                }
            }
        }
        canvas.draw(buf, &self.edge_styles());
        // Arrowheads, the selection's over any other into the same entry.
        arrows.sort_by_key(|a| a.2);
        let rows = layout.canvas.y..layout.canvas.y + layout.canvas.height;
        for (x, y, rank) in arrows {
            if rows.contains(&y) {
                buf[(x, y)].set_symbol("▶").set_style(self.edge_styles()[rank as usize]);
            }
        }
        linked
    }

    /// The entries over the edges, and a word where a column beside the centre is empty.
    fn draw_nodes(
        &self,
        buf: &mut Buffer,
        layout: &Layout,
        anchor: &HashMap<(usize, usize), u16>,
        selected: Option<usize>,
        linked: &BTreeSet<(usize, usize)>,
    ) {
        let model = self.model;
        for c in layout.first..=layout.last {
            for &node in &model.columns[c] {
                if let Some(&y) = anchor.get(&(c, node)) {
                    let here = selected == Some(node) && self.cursor.col == c;
                    // (With the centre selected every entry beside it is linked: no outlines.)
                    let link = !here && selected != Some(model.view.center) && linked.contains(&(c, node));
                    self.node(buf, node, layout.col_x(c), y, layout.col_w, layout.boxed, here, link);
                }
            }
            let beside_centre = c + 1 == model.center_col || c == model.center_col + 1;
            if beside_centre && model.columns[c].is_empty() {
                let y = layout.canvas.y + layout.canvas.height / 2;
                for (k, line) in super::wrap(self.empty_side(c), layout.col_w as usize).iter().enumerate() {
                    let style = self.theme.style(Slot::Muted);
                    buf.set_stringn(layout.col_x(c), y + k as u16, line, layout.col_w as usize, style);
                }
            }
        }
    }

    /// What an empty column beside the centre says. A file on a cycle with the centre is drawn
    /// once, on the imports side; say so rather than claim nothing imports the centre.
    fn empty_side(&self, c: usize) -> &'static str {
        let model = self.model;
        let centre = model.view.center;
        let elsewhere = model.view.edges.iter().any(|e| {
            if c < model.center_col {
                e.to == centre && e.from != centre
            } else {
                e.from == centre && e.to != centre
            }
        });
        match (c < model.center_col, elsewhere) {
            (true, false) => "(nothing imports it)",
            (true, true) => "(imported only by itself)",
            (false, false) => "(imports nothing here)",
            (false, true) => "(imports only itself)",
        }
    }

    fn edge_styles(&self) -> [Style; 4] {
        let t = self.theme;
        [
            t.style(Slot::GraphEdge),
            t.style(Slot::GraphEdge),
            t.style(Slot::GraphCycle),
            t.style(Slot::GraphEdgeHighlight),
        ]
    }

    #[allow(clippy::too_many_arguments)]
    fn header(&self, buf: &mut Buffer, header: Rect, x: u16, w: u16, c: usize, offset: usize, visible: usize) {
        let model = self.model;
        let len = model.columns[c].len();
        let files = format!("{}{}", model.count(c), if model.cut(c) { "+" } else { "" });
        let level = model.level(c);
        let name = match level {
            0 => "centre".to_string(),
            l if l < 0 => format!("importers{} ({files})", if l < -1 { format!(" ·{}", -l) } else { String::new() }),
            l => format!("imports{} ({files})", if l > 1 { format!(" ·{l}") } else { String::new() }),
        };
        let mut markers = String::new();
        if offset > 0 {
            markers.push_str(&format!("↑{offset} "));
        }
        let below = len.saturating_sub(offset + visible);
        if below > 0 {
            markers.push_str(&format!("↓{below} "));
        }
        let mut text = format!("{markers}{name}");
        // Narrow: the direction as an arrow, so the level and the count still show
        // (`◀·3 (12)`, `▶·2 (5)`), then the count alone.
        if width(&text) > w as usize && level != 0 {
            let arrow = if level < 0 { "◀" } else { "▶" };
            let depth = if level.abs() > 1 { format!("·{}", level.abs()) } else { String::new() };
            text = format!("{markers}{arrow}{depth} ({files})");
        }
        if width(&text) > w as usize && !markers.is_empty() {
            text = format!("{markers}({files})");
        }
        buf.set_stringn(x, header.y, truncate(&text, w as usize), w as usize, self.theme.style(Slot::Muted));
    }

    fn label(&self, node: usize, w: usize) -> String {
        let model = self.model;
        let n = &model.view.nodes[node];

        let mut prefix: String = self.shown_marks(node).iter().map(|(icon, _)| *icon).collect();
        if !prefix.is_empty() {
            prefix.push(' ');
        }
        let name = model.label(node).to_string();
        // The confidence of a first-level edge, when the resolver was not sure.
        let conf = model
            .view
            .edges
            .iter()
            .find(|e| (e.from == node && e.to == model.view.center) || (e.to == node && e.from == model.view.center))
            .filter(|e| e.confidence < 0.995 && node != model.view.center)
            .map(|e| format!(" {:.2}", e.confidence))
            .unwrap_or_default();
        let room = w.saturating_sub(width(&prefix) + width(&conf));
        let shown = if n.kind == NodeKind::Group {
            // Its unique folder suffix; with room, the folders above it join.
            group_label(&n.id, &name, room)
        } else if width(&name) <= room {
            name
        } else {
            truncate_left(&name, room)
        };
        format!("{prefix}{shown}{conf}")
    }

    #[allow(clippy::too_many_arguments)]
    fn node(&self, buf: &mut Buffer, node: usize, x: u16, y: u16, w: u16, boxed: bool, selected: bool, linked: bool) {
        let model = self.model;
        let t = self.theme;
        let n = &model.view.nodes[node];
        let mut style = match n.kind {
            NodeKind::File => t.style(Slot::GraphNode),
            NodeKind::External => t.style(Slot::GraphExternal),
            NodeKind::Unresolved => t.style(Slot::GraphUnresolved),
            NodeKind::Group => t.style(Slot::Muted),
        };
        if node == model.view.center {
            style = t.style(Slot::GraphCenter);
        }
        // Danger only for cycles through the centre within the depth shown: elsewhere the ↻
        // mark says it (and a rule's ⊘ mark, in the danger colour, that a rule forbids it).
        let danger = model.on_centre_cycle(node);
        if danger {
            style = t.style(Slot::GraphCycle);
        }
        // The entries the selection links to are outlined like its edges (underlined when the
        // column has no room for boxes).
        let border = if selected || linked {
            t.style(Slot::GraphEdgeHighlight)
        } else if danger {
            style
        } else {
            t.style(Slot::GraphEdge)
        };
        let label_style = if selected { t.style(Slot::GraphSelected) } else { style };
        let inner = if boxed { w.saturating_sub(2) } else { w };
        let label = self.label(node, inner.saturating_sub(2) as usize);
        if boxed && w >= 4 {
            let line = "─".repeat(w as usize - 2);
            buf.set_string(x, y - 1, format!("╭{line}╮"), border);
            buf.set_string(x, y + 1, format!("╰{line}╯"), border);
            buf.set_string(x, y, "│", border);
            buf.set_string(x + w - 1, y, "│", border);
            buf.set_stringn(x + 1, y, super::fit(&format!(" {label}"), inner as usize), inner as usize, label_style);
        } else {
            buf.set_stringn(x, y, super::fit(&format!(" {label}"), w as usize), w as usize, label_style);
            if linked {
                // The label's text (not its padding) underlined.
                let cells = (width(&label) as u16).min(w.saturating_sub(1));
                let underline = Style::default().add_modifier(Modifier::UNDERLINED);
                buf.set_style(Rect { x: x + 1, y, width: cells, height: 1 }, underline);
            }
        }
        if !selected {
            // Colour the marks themselves.
            let mx = if boxed { x + 2 } else { x + 1 };
            for (k, (icon, slot)) in self.shown_marks(node).into_iter().enumerate() {
                buf.set_string(mx + k as u16, y, icon, t.style(slot));
            }
        }
    }

    /// The marks before a node's label, each with the slot it is drawn in: the risk overlay's
    /// (when on; `↻` and `⊘` in the danger colour where a cycle comes back to the centre).
    /// Without colours the danger colour says nothing (under `NO_COLOR` it was bold, like the
    /// centre and the selection's edges), so a file on a cycle back to the centre carries
    /// [`CENTRE_CYCLE_ICON`] instead, overlay on or off, in place of the overlay's `↻`.
    fn shown_marks(&self, node: usize) -> Vec<(&'static str, Slot)> {
        let model = self.model;
        let centre_cycle = model.on_centre_cycle(node);
        let plain = self.theme.no_color && centre_cycle;
        let mut out = Vec::new();
        if plain {
            out.push((CENTRE_CYCLE_ICON, Slot::GraphCycle));
        }
        if self.risk {
            for m in model.marks(node).iter().filter(|m| !(plain && m.icon == CYCLE_ICON)) {
                let danger = (m.icon == CYCLE_ICON && centre_cycle) || m.icon == RULE_DANGER_ICON;
                out.push((m.icon, if danger { Slot::GraphCycle } else { Slot::GraphRisk }));
            }
        }
        out
    }

    /// The selected node's lines, its risk rows and the key to the marks (`key`, on the bottom
    /// rows). The risk's first row is the last thing a small area gives up: the node's lines go
    /// before it (below 16 rows the area holds the node's first line, the risk line cut to one
    /// row, and the key; with one row for both, the risk line).
    fn details(&self, buf: &mut Buffer, area: Rect, selected: Option<usize>, risk: Vec<String>, key: Vec<String>) {
        let Some(node) = selected else { return };
        let t = self.theme;
        let (w, height) = (area.width as usize, area.height as usize);
        let mut lines = self.node_lines(node);
        let room = height.saturating_sub(key.len());
        let kept_risk = risk.len().min(1).min(room);
        lines.truncate(room - kept_risk);
        // The risk rows take what the node's lines leave (the last one cut if they do not all
        // fit), then the key to the marks on the bottom rows.
        let risk_rows = room - lines.len();
        let mut risk = risk;
        if risk.len() > risk_rows {
            let rest = risk.split_off(risk_rows.saturating_sub(1));
            risk.push(truncate(&rest.join(" "), w));
            risk.truncate(risk_rows);
        }
        let (risk_style, muted) = (t.style(Slot::GraphRisk), t.style(Slot::Muted));
        lines.extend(risk.into_iter().map(|r| (r, risk_style)));
        lines.extend(key.into_iter().map(|k| (k, muted)));
        for (k, (text, style)) in lines.iter().take(height).enumerate() {
            buf.set_stringn(area.x, area.y + k as u16, truncate(text, w), w, *style);
        }
    }

    /// The selected node's lines: what it is, and its edges (a group: its files).
    fn node_lines(&self, node: usize) -> Vec<(String, Style)> {
        let model = self.model;
        let t = self.theme;
        let n = &model.view.nodes[node];
        let kind = match n.kind {
            NodeKind::File if node == model.view.center => "centre",
            NodeKind::File => "file",
            NodeKind::External => "package",
            NodeKind::Unresolved => "unresolved import",
            NodeKind::Group => "group",
        };
        let mut lines: Vec<(String, Style)> = Vec::new();
        if n.kind == NodeKind::Group {
            let members = model.members(node);
            let names: Vec<&str> = members.iter().map(|&m| model.view.nodes[m].id.as_str()).collect();
            lines.push((
                format!("▶ {}: enter lists them", super::count(members.len() as u64, "file", "files")),
                t.style(Slot::Accent),
            ));
            lines.push((names.join(" · "), t.style(Slot::Text)));
        } else {
            let (imports, importers) = model.neighbours(node);
            // The centre's direct neighbours on a side cut at the engine's node limit are a lower bound.
            let centre_cut = |col: Option<usize>| node == model.view.center && col.is_some_and(|c| model.cut(c));
            let plus = |cut: bool| if cut { "+" } else { "" };
            let imports_cut = plus(centre_cut(Some(model.center_col + 1)));
            let importers_cut = plus(centre_cut(model.center_col.checked_sub(1)));
            let list = |what: &str, v: &[Link], more: &str| -> String {
                let (v, unresolved): (Vec<Link>, Vec<Link>) =
                    v.iter().partition(|(o, _, _)| model.view.nodes[*o].kind != NodeKind::Unresolved);
                let unresolved =
                    if unresolved.is_empty() { String::new() } else { format!(" (+{} unresolved)", unresolved.len()) };
                if v.is_empty() {
                    return format!("{what} nothing{unresolved}");
                }
                let names: Vec<String> = v
                    .iter()
                    .map(|(o, c, cyc)| {
                        let name = model.label(*o);
                        let name = if name.is_empty() { model.view.nodes[*o].id.as_str() } else { name };
                        let conf = if *c < 0.995 { format!(" {c:.2}") } else { String::new() };
                        format!("{name}{conf}{}", if *cyc { CYCLE_ICON } else { "" })
                    })
                    .collect();
                format!("{what} {}{more}{unresolved}: {}", v.len(), names.join(" · "))
            };
            // The centre's edges are all in the view; another node's may run outside it.
            let scope = if node == model.view.center { "" } else { ", edges in this view" };
            lines.push((format!("▶ {} ({kind}{scope})", n.id), t.style(Slot::Accent)));
            lines.push((list("imports", &imports, imports_cut), t.style(Slot::Text)));
            lines.push((list("imported by", &importers, importers_cut), t.style(Slot::Text)));
        }
        lines
    }

    /// The key to every glyph the view draws, in `w` columns on at most `cap` rows: the
    /// arrow always, each mark only when some entry shown carries it (`⊘` and `✖` with the risk
    /// overlay on). The widest wording that fits one row, else the tightest packed item by item
    /// (an item is never split); an item past `cap` rows is left out whole, never cut.
    fn key_rows(&self, w: usize, cap: usize, columns: (usize, usize)) -> Vec<String> {
        if cap == 0 {
            return Vec::new();
        }
        let items = self.key_items(columns);
        let risk = format!("risk overlay {}", if self.risk { "on" } else { "off" });
        let full: Vec<&str> = items.iter().map(|i| i.full.as_str()).chain([risk.as_str()]).collect();
        let short: Vec<&str> = items.iter().map(|i| i.short).collect();
        let tight: Vec<&str> = items.iter().map(|i| i.tight).collect();
        for (words, sep) in [(&full, " · "), (&short, " · "), (&tight, " · "), (&tight, " ")] {
            let row = words.join(sep);
            if super::width(&row) <= w {
                return vec![row];
            }
        }
        let mut rows: Vec<String> = Vec::new();
        for item in tight {
            let fits = rows.last().is_some_and(|row| super::width(row) + 1 + super::width(item) <= w);
            if let (true, Some(row)) = (fits, rows.last_mut()) {
                row.push(' ');
                row.push_str(item);
            } else if rows.len() < cap {
                rows.push(item.to_string());
            } else {
                break;
            }
        }
        rows
    }

    /// The key's items: each glyph the columns `first..=last` draw, with its meaning in three
    /// widths.
    fn key_items(&self, (first, last): (usize, usize)) -> Vec<KeyItem> {
        let model = self.model;
        let shown: BTreeSet<usize> = model.columns[first..=last].iter().flatten().copied().collect();
        let marked = |icon: &str| self.risk && shown.iter().any(|&n| model.marks(n).iter().any(|m| m.icon == icon));
        let kind = |k: NodeKind| shown.iter().any(|&n| model.view.nodes[n].kind == k);
        let links: Vec<&ColumnLink> = model.links.iter().filter(|l| l.col >= first && l.col < last).collect();
        let mut items = Vec::new();
        if !links.is_empty() {
            items.push(KeyItem::new("A ─▶ B: A imports B".into(), "─▶ imports", "─▶ imports"));
        }
        if links.iter().any(|l| l.confidence < WEAK_CONFIDENCE) {
            items.push(KeyItem::new(format!("╌ guessed (<{WEAK_CONFIDENCE:.1})"), "╌ guessed", "╌ guessed"));
        }
        if shown.iter().any(|&n| model.on_cycle(n)) && !self.theme.no_color {
            let full = format!("{CYCLE_ICON} on a cycle (red: back to the centre within this depth)");
            items.push(KeyItem::new(full, "↻ cycle (red: to centre)", "↻ cycle"));
        } else if shown.iter().any(|&n| model.on_cycle(n)) {
            items.push(KeyItem::new(format!("{CYCLE_ICON} on a cycle"), "↻ cycle", "↻ cycle"));
        }
        if self.theme.no_color && shown.iter().any(|&n| model.on_centre_cycle(n)) {
            let full = format!("{CENTRE_CYCLE_ICON} on a cycle back to the centre within this depth");
            items.push(KeyItem::new(full, "⇄ cycle to centre", "⇄ to centre"));
        }
        match (marked(WARN_ICON), kind(NodeKind::Unresolved)) {
            (true, true) => items.push(KeyItem::new("⚠ ? unresolved".into(), "⚠ ? unresolved", "⚠ ? unresolved")),
            (true, false) => items.push(KeyItem::new("⚠ unresolved".into(), "⚠ unresolved", "⚠ unresolved")),
            (false, true) => items.push(KeyItem::new("? unresolved".into(), "? unresolved", "? unresolved")),
            (false, false) => {}
        }
        if kind(NodeKind::Group) {
            items.push(KeyItem::new("▸ folder group".into(), "▸ folder", "▸ folder"));
        }
        if marked(RULE_DANGER_ICON) {
            let full = format!("{RULE_DANGER_ICON} on a cycle a rule forbids");
            items.push(KeyItem::new(full, "⊘ cycle a rule forbids", "⊘ cycle rule"));
        }
        if marked(RULE_ICON) {
            let full = format!("{RULE_ICON} imports what a rule forbids");
            items.push(KeyItem::new(full, "✖ import a rule forbids", "✖ import rule"));
        }
        items
    }

    /// The risk overlay's line for `node`: its marks and why, or that the constraint rules
    /// could not be read. `None` with the overlay off or nothing to say.
    fn risk_line(&self, node: usize) -> Option<String> {
        if !self.risk {
            return None;
        }
        let model = self.model;
        let reasons: Vec<String> = model.marks(node).iter().map(|m| format!("{} {}", m.icon, m.reason)).collect();
        if let Some(e) = model.view.rules_error.as_deref() {
            // The notice first: a mark's reason can be long.
            let marks = if reasons.is_empty() { String::new() } else { format!(" · {}", reasons.join(" · ")) };
            return Some(format!("risk: constraint rules not checked ({e}){marks}"));
        }
        (!reasons.is_empty()).then(|| format!("risk: {}", reasons.join(" · ")))
    }
}

/// One glyph of the key to the marks, in three widths.
struct KeyItem {
    full: String,
    short: &'static str,
    tight: &'static str,
}

impl KeyItem {
    fn new(full: String, short: &'static str, tight: &'static str) -> KeyItem {
        KeyItem { full, short, tight }
    }
}

/// Rows the key to the marks may take: on a small terminal it needs two at 40 columns (the
/// diagram keeps the rest), on a larger one it has room for three.
const KEY_ROWS_SMALL: usize = 2;
/// Rows the key may take when the pane has room for the details' lines.
const KEY_ROWS: usize = 3;

/// Rows the diagram keeps when the risk line takes rows of the details.
const MIN_CANVAS: u16 = 9;
/// Rows the risk line may take at most.
const MAX_RISK_ROWS: u16 = 6;

/// `text` wrapped to `w` cells (at least one row).
fn wrap_rows(text: &str, w: usize) -> Vec<String> {
    super::wrap(text, w.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: &str) -> GraphNode {
        GraphNode { id: id.into(), kind: NodeKind::File, unresolved_imports: 0, in_cycle: false, rules: Vec::new() }
    }

    fn edge(from: usize, to: usize) -> GraphEdge {
        GraphEdge { from, to, confidence: 1.0 }
    }

    fn cyclic(id: &str) -> GraphNode {
        GraphNode { in_cycle: true, ..node(id) }
    }

    /// main -> session -> store -> session (cycle); app -> session; store -> util
    fn sample() -> GraphView {
        GraphView {
            nodes: vec![
                node("src/main.rs"),
                cyclic("src/session.rs"),
                cyclic("src/store.rs"),
                node("web/app.ts"),
                node("src/util.rs"),
            ],
            edges: vec![edge(0, 1), edge(1, 2), edge(2, 1), edge(3, 1), edge(2, 4)],
            center: 1,
            depth: 2,
            cut: [false; 2],
            rules_error: None,
        }
    }

    #[test]
    fn columns_by_direction_and_depth() {
        let m = GraphModel::new(sample(), 2, &default_rules());
        assert_eq!(m.columns.len(), 5);
        assert_eq!(m.columns[2], vec![1]);
        let left: Vec<&str> = m.columns[1].iter().map(|&i| m.view.nodes[i].id.as_str()).collect();
        // store is both importer and import of session: shown on both sides, so each side's
        // count is the engine's (`inbound` / `outbound` at depth 1).
        assert_eq!(left, vec!["src/main.rs", "src/store.rs", "web/app.ts"]);
        assert_eq!(m.columns[3], vec![2]);
        assert_eq!(m.columns_of(2), &[1, 3]);
        assert_eq!(m.columns[4], vec![4]);
        assert_eq!((m.count(1), m.count(3), m.count(4)), (3, 1, 1));
        let shallow = GraphModel::new(sample(), 1, &default_rules());
        assert_eq!(shallow.shown(), 5, "util is two levels away");
        // Every drawn link joins adjacent columns and reads "imports".
        for l in &m.links {
            assert!(m.view.edges.iter().any(|e| e.from == l.from && e.to == l.to), "{l:?}");
            assert!(m.columns[l.col].contains(&l.from) && m.columns[l.col + 1].contains(&l.to), "{l:?}");
        }
    }

    #[test]
    fn cycles_are_found() {
        let m = GraphModel::new(sample(), 2, &default_rules());
        assert!(m.on_cycle(1) && m.on_cycle(2));
        assert!(!m.on_cycle(0) && !m.on_cycle(4));
        assert!(m.edge_on_cycle(1) && m.edge_on_cycle(2) && !m.edge_on_cycle(0));
        assert_eq!(m.marks(2)[0].icon, CYCLE_ICON);
    }

    #[test]
    fn a_loop_the_engine_puts_on_no_cycle_is_not_marked() {
        // hyper: lib.rs declares `mod client;` and client.rs uses `crate::Body`. The view holds
        // both edges, but a module declaration closes no import cycle and the engine's cycle
        // list has neither file: no `↻`, no danger colour (a search over the view's edges
        // marked them at depth 3).
        let v = GraphView {
            nodes: vec![node("src/lib.rs"), node("src/client/mod.rs"), node("src/body.rs")],
            edges: vec![edge(0, 1), edge(1, 0), edge(1, 2)],
            center: 1,
            depth: 3,
            cut: [false; 2],
            rules_error: None,
        };
        let m = GraphModel::new(v.clone(), 3, &default_rules());
        for i in 0..3 {
            assert!(!m.on_cycle(i) && !m.on_centre_cycle(i), "node {i}");
            assert!(m.marks(i).iter().all(|k| k.icon != CYCLE_ICON), "node {i}: {:?}", m.marks(i));
        }
        assert!((0..3).all(|k| !m.edge_on_cycle(k)));
        // The same loop on an engine cycle is marked and drawn in the danger colour.
        let mut on = v;
        on.nodes[0].in_cycle = true;
        on.nodes[1].in_cycle = true;
        let m = GraphModel::new(on, 3, &default_rules());
        assert!(m.on_cycle(0) && m.on_centre_cycle(0) && m.on_centre_cycle(1) && m.edge_on_cycle(1));
        assert!(!m.on_cycle(2));
    }

    #[test]
    fn unresolved_imports_are_marked() {
        let mut v = sample();
        v.nodes[0].unresolved_imports = 2;
        v.nodes.push(GraphNode {
            id: "./missing".into(),
            kind: NodeKind::Unresolved,
            unresolved_imports: 0,
            in_cycle: false,
            rules: Vec::new(),
        });
        v.edges.push(GraphEdge { from: 1, to: 5, confidence: 0.3 });
        let m = GraphModel::new(v, 1, &default_rules());
        assert_eq!(m.marks(0)[0].reason, "2 unresolved imports");
        assert_eq!(m.marks(5)[0].icon, WARN_ICON);
    }

    #[test]
    fn cursor_moves_between_linked_nodes() {
        let m = GraphModel::new(sample(), 2, &default_rules());
        let mut c = GraphCursor::at_center(&m);
        assert_eq!(c.node(&m), Some(1));
        c.horizontal(&m, 1);
        assert_eq!(c.node(&m), Some(2));
        c.horizontal(&m, 1);
        assert_eq!(c.node(&m), Some(4));
        c.horizontal(&m, 1);
        assert_eq!(c.node(&m), Some(4), "no column further right");
        c.horizontal(&m, -1);
        c.horizontal(&m, -1);
        c.horizontal(&m, -1);
        assert_eq!(c.node(&m), Some(0));
        c.vertical(&m, 5);
        assert_eq!(c.node(&m), Some(3));
    }

    #[test]
    fn large_cycle_graph_is_iterative() {
        // A 5,000-node ring: recursion would overflow; every node is on the cycle.
        let n = 5000;
        let v = GraphView {
            nodes: (0..n).map(|i| cyclic(&format!("f{i}"))).collect(),
            edges: (0..n).map(|i| edge(i, (i + 1) % n)).collect(),
            center: 0,
            depth: 4,
            cut: [false; 2],
            rules_error: None,
        };
        let m = GraphModel::new(v, 4, &default_rules());
        assert!((0..n).all(|i| m.on_cycle(i)));
        assert_eq!(m.shown(), 9);
    }

    #[test]
    fn group_labels_keep_the_folder_that_tells_them_apart() {
        let io = "tokio/src/runtime/io/ (4)";
        assert_eq!(group_label(io, "▸ io/ (4)", 40), "▸ tokio/src/runtime/io/ (4)");
        assert_eq!(group_label(io, "▸ io/ (4)", 17), "▸ …untime/io/ (4)", "no whole folder fits: filled from the left");
        assert_eq!(group_label(io, "▸ io/ (4)", 20), "▸ …/runtime/io/ (4)", "whole folders, never a cut one");
        let blocking = "tokio/src/runtime/blocking/ (3)";
        assert_eq!(group_label(blocking, "▸ blocking/ (3)", 30), "▸ …/src/runtime/blocking/ (3)");
        assert_eq!(group_label(io, "▸ runtime/io/ (4)", 17), "▸ runtime/io/ (4)", "the unique part whole");
        let mt = "tokio/src/runtime/scheduler/multi_thread/ (7)";
        assert_eq!(
            group_label(mt, "▸ multi_thread/ (7)", 17),
            "multi_thread/ (7)",
            "the marker goes before the name is cut"
        );
        assert_eq!(group_label(mt, "▸ multi_thread/ (7)", 12), "multi_t… (7)", "then the name's end, never its start");
        assert_eq!(group_label("+17 more", "▸ +17 more", 20), "▸ +17 more");
    }

    #[test]
    fn one_folder_grouped_in_two_columns_keeps_its_short_label() {
        let group = |id: &str| GraphNode { kind: NodeKind::Group, ..node(id) };
        let v = GraphView {
            nodes: vec![group("src/api/ (5)"), group("src/api/ (3)"), group("lib/api/ (2)"), group("src/db/ (4)")],
            edges: vec![],
            center: 0,
            depth: 2,
            cut: [false; 2],
            rules_error: None,
        };
        let l = labels(&v, &[vec![0, 3], vec![1], vec![2]]);
        assert_eq!(
            l,
            ["▸ src/api/ (5)", "▸ src/api/ (3)", "▸ lib/api/ (2)", "▸ db/ (4)"],
            "a real clash still lengthens"
        );
        let v = GraphView { nodes: v.nodes[..2].to_vec(), ..v };
        assert_eq!(labels(&v, &[vec![0], vec![1]]), ["▸ api/ (5)", "▸ api/ (3)"]);
    }

    #[test]
    fn labels_are_the_shortest_unique_path_suffix() {
        let v = GraphView {
            nodes: vec![
                node("src/flask/app.py"),
                node("src/flask/__init__.py"),
                node("src/flask/json/__init__.py"),
                node("tests/__init__.py"),
                node("src/flask/sansio/app.py"),
                node("src/flask/cli.py"),
            ],
            edges: vec![edge(1, 0), edge(2, 0), edge(3, 0), edge(0, 4), edge(5, 0)],
            center: 0,
            depth: 1,
            cut: [false; 2],
            rules_error: None,
        };
        let m = GraphModel::new(v, 1, &default_rules());
        let l: Vec<&str> = (0..6).map(|i| m.label(i)).collect();
        assert_eq!(
            l,
            ["flask/app.py", "flask/__init__.py", "json/__init__.py", "tests/__init__.py", "sansio/app.py", "cli.py"]
        );
    }

    #[test]
    fn a_wide_column_is_summarised_by_folder_and_expands() {
        // 40 importers in 5 folders, 3 loose files, and one lonely file per folder of 8 more.
        let mut nodes = vec![node("src/core.rs")];
        for k in 0..40 {
            nodes.push(node(&format!("src/d{}/f{k}.rs", k % 5)));
        }
        for k in 0..8 {
            nodes.push(node(&format!("src/lone{k}/only.rs")));
        }
        let n = nodes.len();
        let v = GraphView {
            nodes,
            edges: (1..n).map(|i| edge(i, 0)).collect(),
            center: 0,
            depth: 1,
            cut: [false; 2],
            rules_error: None,
        };
        let m = GraphModel::new(v.clone(), 1, &default_rules());
        let left = &m.columns[0];
        assert!(left.len() <= GROUP_OVER, "{} entries", left.len());
        assert_eq!(m.count(0), 48, "the header counts files, not entries");
        let groups: Vec<usize> = left.iter().copied().filter(|&e| m.view.nodes[e].kind == NodeKind::Group).collect();
        let members: usize = groups.iter().map(|&g| m.members(g).len()).sum();
        let files = left.len() - groups.len();
        assert_eq!(members + files, 48, "every importer is in exactly one entry");
        assert!(m.view.nodes[groups[0]].id.starts_with("src/d0/ (8)"), "{:?}", m.view.nodes[groups[0]].id);
        let more = *groups.last().expect("a +N more group");
        assert!(m.view.nodes[more].id.starts_with('+') && m.view.nodes[more].id.ends_with(" more"));
        // One link per group, not one per file.
        assert_eq!(m.links.len(), left.len());
        // Expanding src/d0/ shows its eight files in the column.
        let key = m.expand_key(groups[0]).expect("key").to_string();
        let open = GraphModel::with_expanded(v, 1, &default_rules(), &BTreeSet::from([key]));
        let shown: Vec<&str> = open.columns[0].iter().map(|&e| open.view.nodes[e].id.as_str()).collect();
        assert_eq!(shown.iter().filter(|s| s.starts_with("src/d0/f")).count(), 8, "{shown:?}");
        assert_eq!(open.count(0), 48);
    }

    #[test]
    fn only_cycles_through_the_centre_take_the_danger_colour() {
        let mut v = sample();
        v.nodes[3].in_cycle = true; // web/app.ts is on some cycle elsewhere in the repository
        let m = GraphModel::new(v, 2, &default_rules());
        assert!(m.on_cycle(3) && !m.on_centre_cycle(3));
        assert!(m.on_centre_cycle(1) && m.on_centre_cycle(2));
        assert_eq!(m.marks(3)[0].icon, CYCLE_ICON, "the mark is there at any depth");
        let shallow = GraphModel::new(sample_with_cycle_flag(), 1, &default_rules());
        let deep = GraphModel::new(sample_with_cycle_flag(), 2, &default_rules());
        assert_eq!(shallow.marks(3).len(), deep.marks(3).len(), "marks do not depend on the depth");
    }

    #[test]
    fn the_danger_colour_marks_the_cycles_that_fit_the_depth_shown() {
        // c -> a -> b -> c, a cycle of three through the centre; c <-> m, a mutual import; x
        // only imports the centre.
        let v = GraphView {
            nodes: vec![cyclic("c.rs"), cyclic("a.rs"), cyclic("b.rs"), cyclic("m.rs"), node("x.rs")],
            edges: vec![edge(0, 1), edge(1, 2), edge(2, 0), edge(0, 3), edge(3, 0), edge(4, 0)],
            center: 0,
            depth: 2,
            cut: [false; 2],
            rules_error: None,
        };
        let d1 = GraphModel::new(v.clone(), 1, &default_rules());
        assert!(d1.on_centre_cycle(3) && d1.on_centre_cycle(0), "a mutual import comes back at depth 1");
        assert!(!d1.on_centre_cycle(1) && !d1.on_centre_cycle(2), "the longer cycle is not red at depth 1");
        assert!(d1.on_cycle(1) && d1.marks(1)[0].icon == CYCLE_ICON, "but carries its mark");
        assert!(!d1.on_centre_cycle(4));
        let d2 = GraphModel::new(v, 2, &default_rules());
        assert!(d2.on_centre_cycle(1) && d2.on_centre_cycle(2) && d2.on_centre_cycle(3));
        assert!(!d2.on_centre_cycle(4));
    }

    #[test]
    fn links_sharing_an_end_share_a_lane_and_overlapping_trunks_do_not() {
        // Five sources into one target: one trunk.
        let fan: Vec<(usize, usize, u16, u16)> = (0..5u16).map(|i| (i as usize + 1, 0, 10 + 3 * i, 16)).collect();
        let lanes = assign_lanes(&fan, None, 3);
        assert!(lanes.iter().all(|&l| l == lanes[0]), "{lanes:?}");
        assert_eq!(lanes[0], 1, "a single trunk takes the middle lane");
        // Two fan-ins whose rows overlap get two lanes; a third, below both, reuses one.
        let two = vec![(1, 10, 0, 6), (2, 10, 3, 6), (3, 11, 2, 9), (4, 11, 5, 9), (5, 12, 20, 22), (6, 12, 21, 22)];
        let l = assign_lanes(&two, None, 3);
        assert!(l[0] == l[1] && l[2] == l[3] && l[4] == l[5], "{l:?}");
        assert_ne!(l[0], l[2], "{l:?}");
        // The selection's trunk keeps its lane over its rows: with two lanes, a trunk that
        // finds none free shares the other one.
        let sel = vec![(1, 10, 0, 8), (1, 11, 0, 4), (2, 20, 1, 3), (3, 21, 2, 5)];
        let l = assign_lanes(&sel, Some(1), 2);
        assert_eq!(l[0], l[1], "{l:?}");
        assert!(l[2] != l[0] && l[3] != l[0], "{l:?}");
    }

    #[test]
    fn a_dense_gap_shares_one_bus_except_the_selections_links() {
        // Four groups each importing the same three: twelve links, which as trunks would cross.
        let mut dense = Vec::new();
        for s in 0..4usize {
            for t in 0..3usize {
                dense.push((s, 10 + t, 2 + 3 * s as u16, 3 + 4 * t as u16));
            }
        }
        let l = assign_lanes(&dense, None, 4);
        assert!(l.iter().all(|&x| x == l[0]), "one bus: {l:?}");
        assert_eq!(l[0], 2, "the bus takes the middle lane");
        // With a source selected, its links run on a lane of their own, apart from the bus.
        let l = assign_lanes(&dense, Some(1), 4);
        let (mine, rest): (Vec<_>, Vec<_>) = dense.iter().zip(&l).partition(|(d, _)| d.0 == 1);
        assert!(mine.iter().all(|(_, &x)| x == *mine[0].1), "{l:?}");
        assert!(rest.iter().all(|(_, &x)| x == *rest[0].1), "{l:?}");
        assert_ne!(mine[0].1, rest[0].1, "the selection never merges with the bus: {l:?}");
        // A sparse gap keeps its trunks (two separate fan-ins).
        let sparse = vec![(1, 10, 0, 6), (2, 10, 3, 6), (3, 11, 2, 9), (4, 11, 5, 9), (5, 12, 20, 22), (6, 12, 21, 22)];
        let l = assign_lanes(&sparse, None, 3);
        assert_ne!(l[0], l[2], "{l:?}");
    }

    fn sample_with_cycle_flag() -> GraphView {
        let mut v = sample();
        v.nodes[3].in_cycle = true;
        v
    }

    #[test]
    fn glyphs_join() {
        assert_eq!(Canvas::glyph(LEFT | RIGHT, true), Some("─"));
        assert_eq!(Canvas::glyph(LEFT | RIGHT, false), Some("╌"));
        assert_eq!(Canvas::glyph(UP | DOWN | RIGHT, true), Some("├"));
        assert_eq!(Canvas::glyph(LEFT | DOWN, true), Some("╮"));
        assert_eq!(Canvas::glyph(0, true), None);
    }
}
