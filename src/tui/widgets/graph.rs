//! The impact graph as a node-link diagram in box-drawing characters.
//!
//! A small view-model ([`GraphView`]: nodes, directed import edges with a
//! confidence, a centre file) is laid out in columns: files that import the
//! centre on the left (one column per level), the centre in the middle, files
//! it imports on the right. Every arrow points right and reads "imports".
//! Edges are rasterised into a grid of connection bits and drawn with the
//! matching box glyphs; edges the resolver only guessed (confidence < 0.8) are
//! dashed. Nodes and edges on import cycles take the theme's danger colour.
//! The risk overlay adds marks from [`RiskRule`]s: cycles, unresolved imports, and the
//! constraint rules of profile memory a node breaks ([`ConstraintRule`]: the engine decides
//! which, `Engine::rule_marks`; the widget only marks, colours and names them).
//!
//! The layout is computed once per graph ([`GraphModel`]); a frame only draws.

use super::{scroll_to, truncate, truncate_left, width};
use crate::tui::theme::{Slot, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use std::collections::VecDeque;

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

/// What a node stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// A file of the repository.
    File,
    /// A package outside the repository (`serde`, `react`).
    External,
    /// An import that could not be resolved to anything.
    Unresolved,
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

/// Flags nodes that break constraint rules of profile memory ("avoid circular dependencies",
/// "deprecate moment.js"), naming each rule broken.
pub struct ConstraintRule;

impl RiskRule for ConstraintRule {
    fn assess(&self, model: &GraphModel, node: usize) -> Option<RiskMark> {
        let flags = &model.view.nodes[node].rules;
        if flags.is_empty() {
            return None;
        }
        let icon = if flags.iter().any(|f| f.danger) { RULE_DANGER_ICON } else { RULE_ICON };
        let reason = flags.iter().map(|f| format!("breaks `{}`: {}", f.rule, f.reason)).collect::<Vec<_>>().join("; ");
        Some(RiskMark { icon, reason })
    }
}

/// The rules the overlay applies.
pub fn default_rules() -> Vec<Box<dyn RiskRule>> {
    vec![Box::new(CycleRule), Box::new(UnresolvedRule), Box::new(ConstraintRule)]
}

/// A graph laid out in columns, with cycles found and risk marks applied.
#[derive(Debug, Clone, Default)]
pub struct GraphModel {
    /// The graph.
    pub view: GraphView,
    /// Columns left to right; each lists node indices top to bottom.
    pub columns: Vec<Vec<usize>>,
    /// Index of the centre's column.
    pub center_col: usize,
    /// Per node: on a cycle (a strongly connected component of two or more, or a self-import).
    cycle_nodes: Vec<bool>,
    /// Per edge: both ends in one cycle.
    cycle_edges: Vec<bool>,
    /// Per node: risk marks.
    marks: Vec<Vec<RiskMark>>,
    /// Per node: its column, if shown.
    column_of: Vec<Option<usize>>,
}

impl GraphModel {
    /// Lays out `view` to `depth` levels each way and applies `rules`.
    pub fn new(view: GraphView, depth: u32, rules: &[Box<dyn RiskRule>]) -> GraphModel {
        let n = view.nodes.len();
        let depth = depth.clamp(1, MAX_DEPTH) as usize;
        let mut model = GraphModel { view, ..Default::default() };
        if n == 0 || model.view.center >= n {
            return model;
        }
        let (mut cycle_nodes, comp) = cycles(&model.view);
        for (i, n) in model.view.nodes.iter().enumerate() {
            cycle_nodes[i] |= n.in_cycle || n.rules.iter().any(|f| f.danger);
        }
        model.cycle_edges =
            model.view.edges.iter().map(|e| comp[e.from] == comp[e.to] && cycle_nodes[e.from]).collect();
        model.cycle_nodes = cycle_nodes;
        let out_dist = bfs(&model.view, model.view.center, depth, true);
        let in_dist = bfs(&model.view, model.view.center, depth, false);
        // Level of each node: negative = importers, positive = imports.
        let mut levels: Vec<Option<i64>> = vec![None; n];
        for i in 0..n {
            levels[i] = match (in_dist[i], out_dist[i]) {
                _ if i == model.view.center => Some(0),
                (Some(a), Some(b)) => Some(if b <= a { b as i64 } else { -(a as i64) }),
                (Some(a), None) => Some(-(a as i64)),
                (None, Some(b)) => Some(b as i64),
                (None, None) => None,
            };
        }
        let d = depth as i64;
        let mut columns: Vec<Vec<usize>> = vec![Vec::new(); 2 * depth + 1];
        for (i, l) in levels.iter().enumerate() {
            if let Some(l) = l {
                columns[(l + d) as usize].push(i);
            }
        }
        model.center_col = depth;
        model.columns = columns;
        model.order_columns();
        model.column_of = vec![None; n];
        for (c, col) in model.columns.iter().enumerate() {
            for &i in col {
                model.column_of[i] = Some(c);
            }
        }
        model.marks = (0..n).map(|i| rules.iter().filter_map(|r| r.assess(&model, i)).collect()).collect();
        model
    }

    /// Orders each column by the mean position of its neighbours nearer the centre, then by name,
    /// which keeps most edges from crossing.
    fn order_columns(&mut self) {
        let view = &self.view;
        let c0 = self.center_col;
        let name_key = |i: usize| (view.nodes[i].kind != NodeKind::File, view.nodes[i].id.clone());
        for step in 1..=c0 {
            for (col, inner, outward) in [(c0 + step, c0 + step - 1, true), (c0 - step, c0 - step + 1, false)] {
                let inner_pos: Vec<(usize, usize)> =
                    self.columns[inner].iter().enumerate().map(|(p, &node)| (node, p)).collect();
                let mut keyed: Vec<(f64, (bool, String), usize)> = self.columns[col]
                    .iter()
                    .map(|&node| {
                        let ps: Vec<usize> = view
                            .edges
                            .iter()
                            .filter_map(|e| {
                                let (a, b) = if outward { (e.from, e.to) } else { (e.to, e.from) };
                                (b == node).then(|| inner_pos.iter().find(|(n, _)| *n == a).map(|(_, p)| *p)).flatten()
                            })
                            .collect();
                        let bary =
                            if ps.is_empty() { f64::MAX } else { ps.iter().sum::<usize>() as f64 / ps.len() as f64 };
                        (bary, name_key(node), node)
                    })
                    .collect();
                keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
                self.columns[col] = keyed.into_iter().map(|k| k.2).collect();
            }
        }
    }

    /// True when the node is on an import cycle.
    pub fn on_cycle(&self, node: usize) -> bool {
        self.cycle_nodes.get(node).copied().unwrap_or(false)
    }

    /// True when the edge is part of a cycle.
    pub fn edge_on_cycle(&self, edge: usize) -> bool {
        self.cycle_edges.get(edge).copied().unwrap_or(false)
    }

    /// Risk marks of a node.
    pub fn marks(&self, node: usize) -> &[RiskMark] {
        self.marks.get(node).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The column a node is shown in.
    pub fn column_of(&self, node: usize) -> Option<usize> {
        self.column_of.get(node).copied().flatten()
    }

    /// Nodes shown.
    pub fn shown(&self) -> usize {
        self.columns.iter().map(Vec::len).sum()
    }

    /// The level of a column (negative = importers).
    pub fn level(&self, col: usize) -> i64 {
        col as i64 - self.center_col as i64
    }

    /// Edges out of and into a node.
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

/// Tarjan's strongly connected components, iteratively. Returns per node "on a cycle" and its component.
fn cycles(view: &GraphView) -> (Vec<bool>, Vec<usize>) {
    let n = view.nodes.len();
    let mut adj: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut self_loop = vec![false; n];
    for e in &view.edges {
        if e.from < n && e.to < n {
            adj[e.from].push(e.to);
            if e.from == e.to {
                self_loop[e.from] = true;
            }
        }
    }
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut comp = vec![usize::MAX; n];
    let mut comp_size = Vec::new();
    let mut next = 0;
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work: Vec<(usize, usize)> = vec![(root, 0)];
        while let Some((v, i)) = work.pop() {
            if i == 0 {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if i < adj[v].len() {
                work.push((v, i + 1));
                let w = adj[v][i];
                if index[w] == usize::MAX {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            if low[v] == index[v] {
                let id = comp_size.len();
                let mut size = 0;
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    comp[w] = id;
                    size += 1;
                    if w == v {
                        break;
                    }
                }
                comp_size.push(size);
            }
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
        }
    }
    let on = (0..n).map(|v| comp_size.get(comp[v]).is_some_and(|&s| s > 1) || self_loop[v]).collect();
    (on, comp)
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
        let linked = current.and_then(|cur| {
            target.iter().position(|&t| {
                model.view.edges.iter().any(|e| (e.from == cur && e.to == t) || (e.to == cur && e.from == t))
            })
        });
        self.idx = linked.unwrap_or_else(|| self.idx.min(target.len() - 1));
        self.col = c as usize;
    }
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
        let theme = self.theme;
        if model.columns.is_empty() || area.height < 4 || area.width < MIN_COL {
            return GraphFrame::default();
        }
        let details_h = if area.height >= 16 { 4 } else { 2 };
        let header = Rect { height: 1, ..area };
        let canvas_area = Rect { y: area.y + 1, height: area.height - 1 - details_h, ..area };
        let details = Rect { y: area.y + area.height - details_h, height: details_h, ..area };

        // How many levels each side fit the width.
        let total = model.columns.len() as u16;
        let side = levels_that_fit((total - 1) / 2, area.width);
        let first = model.center_col - side as usize;
        let last = model.center_col + side as usize;
        let ncols = (last - first + 1) as u16;
        let col_w = ((area.width - GAP * (ncols - 1)) / ncols).max(1);
        let col_x = |c: usize| area.x + (c - first) as u16 * (col_w + GAP);

        let boxed =
            model.columns[first..=last].iter().map(Vec::len).max().unwrap_or(1) * 3 <= canvas_area.height as usize;
        let row_h: u16 = if boxed { 3 } else { 1 };
        let rows_per_column = ((canvas_area.height / row_h) as usize).max(1);
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
        let frame = GraphFrame { rows_per_column, shown_columns: (first, last), offsets: offsets.clone() };

        // Rows of visible nodes.
        let mut anchor: Vec<Option<(u16, usize)>> = vec![None; model.view.nodes.len()];
        for (c, (col, &offset)) in model.columns.iter().zip(&offsets).enumerate().take(last + 1).skip(first) {
            let visible = col.len().saturating_sub(offset).min(rows_per_column);
            let used = visible as u16 * row_h;
            let top = canvas_area.y + (canvas_area.height - used) / 2;
            for (k, &node) in col.iter().skip(offset).take(visible).enumerate() {
                anchor[node] = Some((top + k as u16 * row_h + row_h / 2, c));
            }
            self.header(buf, header, col_x(c), col_w, c, offset, visible);
        }

        // Edges between adjacent columns, rasterised.
        let mut canvas = Canvas::new(canvas_area);
        let selected = self.cursor.node(model);
        for c in first..last {
            let x_start = col_x(c) + col_w;
            let x_arrow = col_x(c + 1) - 1;
            let lanes = (GAP - 3).max(1);
            let sources: Vec<usize> = model.columns[c].iter().copied().filter(|&n| anchor[n].is_some()).collect();
            let mut arrows: Vec<(u16, u8)> = Vec::new();
            for (si, &s) in sources.iter().enumerate() {
                let lane_x =
                    if sources.len() == 1 { x_start + 1 + lanes / 2 } else { x_start + 1 + (si as u16 % lanes) };
                let Some((sy, _)) = anchor[s] else { continue };
                for (k, e) in model.view.edges.iter().enumerate() {
                    if e.from != s {
                        continue;
                    }
                    let Some((ty, tc)) = anchor[e.to] else { continue };
                    if tc != c + 1 {
                        continue;
                    }
                    let solid = e.confidence >= WEAK_CONFIDENCE;
                    let rank = if selected == Some(e.from) || selected == Some(e.to) {
                        3
                    } else if model.edge_on_cycle(k) {
                        2
                    } else {
                        1
                    };
                    canvas.hline(x_start, lane_x, sy, solid, rank);
                    canvas.vline(lane_x, sy, ty, solid, rank);
                    canvas.hline(lane_x, x_arrow - 1, ty, solid, rank);
                    arrows.push((ty, rank));
                }
            }
            for (y, rank) in arrows {
                canvas.add(x_arrow - 1, y, RIGHT, true, rank);
                if y >= canvas_area.y && y < canvas_area.y + canvas_area.height {
                    let style = self.edge_styles()[rank as usize];
                    buf[(x_arrow, y)].set_symbol("▶").set_style(style);
                }
            }
        }
        canvas.draw(buf, &self.edge_styles());

        // Nodes over the edges.
        for c in first..=last {
            for &node in &model.columns[c] {
                if let Some((y, _)) = anchor[node] {
                    self.node(buf, node, col_x(c), y, col_w, boxed, selected == Some(node));
                }
            }
            let beside_centre = c + 1 == model.center_col || c == model.center_col + 1;
            if beside_centre && model.columns[c].is_empty() {
                // A file on a cycle with the centre is drawn once, on the imports side; say so
                // rather than claim nothing imports the centre.
                let centre = model.view.center;
                let elsewhere = model.view.edges.iter().any(|e| {
                    if c < model.center_col {
                        e.to == centre && e.from != centre
                    } else {
                        e.from == centre && e.to != centre
                    }
                });
                let text = match (c < model.center_col, elsewhere) {
                    (true, false) => "(nothing imports it)",
                    (true, true) => "(imported only by files on its right: a cycle ↻)",
                    (false, false) => "(imports nothing here)",
                    (false, true) => "(imports only files on its left: a cycle ↻)",
                };
                let y = canvas_area.y + canvas_area.height / 2;
                for (k, line) in super::wrap(text, col_w as usize).iter().enumerate() {
                    buf.set_stringn(col_x(c), y + k as u16, line, col_w as usize, theme.style(Slot::Muted));
                }
            }
        }
        self.details(buf, details, selected);
        frame
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
        let level = model.level(c);
        let name = match level {
            0 => "centre".to_string(),
            l if l < 0 => format!("importers{} ({len})", if l < -1 { format!(" ·{}", -l) } else { String::new() }),
            l => format!("imports{} ({len})", if l > 1 { format!(" ·{l}") } else { String::new() }),
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
        if width(&text) > w as usize && !markers.is_empty() {
            text = format!("{markers}({len})");
        }
        buf.set_stringn(x, header.y, truncate(&text, w as usize), w as usize, self.theme.style(Slot::Muted));
    }

    fn label(&self, node: usize, w: usize) -> String {
        let model = self.model;
        let n = &model.view.nodes[node];
        let mut prefix = String::new();
        if self.risk {
            for m in model.marks(node) {
                prefix.push_str(m.icon);
            }
            if !prefix.is_empty() {
                prefix.push(' ');
            }
        }
        let name = match n.kind {
            NodeKind::File => n.id.clone(),
            NodeKind::External => format!("pkg {}", n.id),
            NodeKind::Unresolved => format!("? {}", n.id),
        };
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
        let shown = if width(&name) <= room { name } else { truncate_left(&name, room) };
        format!("{prefix}{shown}{conf}")
    }

    #[allow(clippy::too_many_arguments)]
    fn node(&self, buf: &mut Buffer, node: usize, x: u16, y: u16, w: u16, boxed: bool, selected: bool) {
        let model = self.model;
        let t = self.theme;
        let n = &model.view.nodes[node];
        let mut style = match n.kind {
            NodeKind::File => t.style(Slot::GraphNode),
            NodeKind::External => t.style(Slot::GraphExternal),
            NodeKind::Unresolved => t.style(Slot::GraphUnresolved),
        };
        if node == model.view.center {
            style = t.style(Slot::GraphCenter);
        }
        if model.on_cycle(node) {
            style = t.style(Slot::GraphCycle);
        }
        let border = if selected {
            t.style(Slot::GraphEdgeHighlight)
        } else if model.on_cycle(node) {
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
        }
        if self.risk && !model.marks(node).is_empty() && !selected {
            // Colour the marks themselves.
            let mx = if boxed { x + 2 } else { x + 1 };
            for (k, m) in model.marks(node).iter().enumerate() {
                let slot =
                    if m.icon == CYCLE_ICON || m.icon == RULE_DANGER_ICON { Slot::GraphCycle } else { Slot::GraphRisk };
                buf.set_string(mx + k as u16, y, m.icon, t.style(slot));
            }
        }
    }

    fn details(&self, buf: &mut Buffer, area: Rect, selected: Option<usize>) {
        let model = self.model;
        let t = self.theme;
        let w = area.width as usize;
        let Some(node) = selected else { return };
        let n = &model.view.nodes[node];
        let kind = match n.kind {
            NodeKind::File if node == model.view.center => "centre",
            NodeKind::File => "file",
            NodeKind::External => "package",
            NodeKind::Unresolved => "unresolved import",
        };
        let (imports, importers) = model.neighbours(node);
        let list = |v: &[Link]| -> String {
            v.iter()
                .map(|(o, c, cyc)| {
                    let name = &model.view.nodes[*o].id;
                    let short = name.rsplit('/').next().unwrap_or(name);
                    format!("{short} {c:.2}{}", if *cyc { CYCLE_ICON } else { "" })
                })
                .collect::<Vec<_>>()
                .join(" · ")
        };
        let mut lines: Vec<(String, Style)> = vec![(format!("▶ {} ({kind})", n.id), t.style(Slot::Accent))];
        lines.push((format!("imports {}: {}", imports.len(), list(&imports)), t.style(Slot::Text)));
        lines.push((format!("imported by {}: {}", importers.len(), list(&importers)), t.style(Slot::Text)));
        let reasons: Vec<String> = model.marks(node).iter().map(|m| format!("{} {}", m.icon, m.reason)).collect();
        if self.risk && !reasons.is_empty() {
            lines.push((format!("risk: {}", reasons.join(" · ")), t.style(Slot::GraphRisk)));
        } else {
            lines.push((
                format!("A ─▶ B: A imports B · ╌ guessed (<{WEAK_CONFIDENCE:.1}) · {CYCLE_ICON} cycle · {WARN_ICON} unresolved · risk overlay {}", if self.risk { "on" } else { "off" }),
                t.style(Slot::Muted),
            ));
        }
        let take = area.height as usize;
        let chosen: Vec<&(String, Style)> = if take >= 4 { lines.iter().collect() } else { vec![&lines[0], &lines[1]] };
        for (k, (text, style)) in chosen.into_iter().take(take).enumerate() {
            buf.set_stringn(area.x, area.y + k as u16, truncate(text, w), w, *style);
        }
    }
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

    /// main -> session -> store -> session (cycle); app -> session; store -> util
    fn sample() -> GraphView {
        GraphView {
            nodes: vec![
                node("src/main.rs"),
                node("src/session.rs"),
                node("src/store.rs"),
                node("web/app.ts"),
                node("src/util.rs"),
            ],
            edges: vec![edge(0, 1), edge(1, 2), edge(2, 1), edge(3, 1), edge(2, 4)],
            center: 1,
            depth: 2,
        }
    }

    #[test]
    fn columns_by_direction_and_depth() {
        let m = GraphModel::new(sample(), 2, &default_rules());
        assert_eq!(m.columns.len(), 5);
        assert_eq!(m.columns[2], vec![1]);
        let left: Vec<&str> = m.columns[1].iter().map(|&i| m.view.nodes[i].id.as_str()).collect();
        assert_eq!(left, vec!["src/main.rs", "web/app.ts"]);
        // store is both importer and import of session: shown on the imports side.
        assert_eq!(m.columns[3], vec![2]);
        assert_eq!(m.columns[4], vec![4]);
        let shallow = GraphModel::new(sample(), 1, &default_rules());
        assert_eq!(shallow.shown(), 4, "util is two levels away");
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
            nodes: (0..n).map(|i| node(&format!("f{i}"))).collect(),
            edges: (0..n).map(|i| edge(i, (i + 1) % n)).collect(),
            center: 0,
            depth: 4,
        };
        let m = GraphModel::new(v, 4, &default_rules());
        assert!((0..n).all(|i| m.on_cycle(i)));
        assert_eq!(m.shown(), 9);
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
