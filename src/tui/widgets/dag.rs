//! The reasoning DAG of a chat session: each step (query, retrieval, tool
//! call, answer) a node, edges from the steps it used. Shown as a tree (nodes
//! under their first parent, other parents noted) or as layers (by longest
//! path from a root), with the selected node's details. A view-model the DAG
//! store fills; the widget only draws it.

use super::{wrap, wrap_line};
use crate::tui::theme::{Slot, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use std::collections::{HashMap, HashSet};

/// Most nodes the DAG pane holds loaded (five of the engine's 1,000-node pages). `load older`
/// stops there: every loaded node is laid out when the view changes, and a session continued
/// for months grew the pane without end. `docdex dag view --before` reads further back.
pub const DAG_PANE_MAX_NODES: usize = 5_000;

/// A recorded session.
#[derive(Debug, Clone, PartialEq)]
pub struct DagSession {
    /// Session id.
    pub id: String,
    /// First question or a title.
    pub title: String,
    /// Nodes recorded.
    pub nodes: usize,
    /// Start, epoch ms.
    pub started_ms: u64,
}

/// One step.
#[derive(Debug, Clone, PartialEq)]
pub struct DagNode {
    /// Node id, unique in the session.
    pub id: String,
    /// `query`, `search`, `web`, `memory`, `llm`, `answer`, ...
    pub kind: String,
    /// Short label.
    pub label: String,
    /// Ids of the steps it used.
    pub parents: Vec<String>,
    /// Full details.
    pub detail: String,
}

/// Sessions plus the nodes of the selected one.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DagView {
    /// The newest sessions (the engine lists 50), newest first.
    pub sessions: Vec<DagSession>,
    /// How many sessions the repository has (`sessions` may hold fewer); 0 when not known.
    pub total_sessions: u64,
    /// Index of the session whose nodes are given.
    pub selected_session: usize,
    /// Nodes of that session, oldest first: its newest ones (the engine answers at most
    /// `DAG_VIEW_DEFAULT` at a time) and any older ones loaded since.
    pub nodes: Vec<DagNode>,
    /// How many older nodes of the session are not loaded.
    pub older_nodes: u64,
    /// The engine's `before` cursor for the nodes preceding `nodes` (when `older_nodes` > 0).
    pub next_before: Option<i64>,
}

/// Older nodes of a session, asked for with the `before` cursor of the view showing it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DagPage {
    /// The session.
    pub session: String,
    /// The cursor asked for (the view's `next_before` then).
    pub before: i64,
    /// The nodes, oldest first.
    pub nodes: Vec<DagNode>,
    /// Nodes of the session older still.
    pub older_nodes: u64,
    /// The cursor for those.
    pub next_before: Option<i64>,
}

/// One row of the tree view: the node and its drawn prefix.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeRow {
    /// Index into `nodes`.
    pub node: usize,
    /// `├─ `, `│  └─ `, ...
    pub prefix: String,
    /// Other parents, shown after the label.
    pub also: Vec<String>,
}

/// Depth-first walk building tree rows.
struct TreeWalk<'a> {
    view: &'a DagView,
    children: Vec<Vec<usize>>,
    seen: Vec<bool>,
    rows: Vec<TreeRow>,
}

impl TreeWalk<'_> {
    /// Visits `i`, drawn after `prefix`; `cont` is what rows under it start with (its wrapped
    /// label's continuation rows, its children). An only child goes straight below its parent,
    /// with no branch of its own: a chain of steps reads as a sequence, and the tree widens only
    /// where it forks (a session chains each turn under the last one's answer, so one level
    /// per step put the second turn's labels past the edge of an 80-column pane).
    /// With a stack of its own, not recursion: a long session is a chain thousands of steps
    /// deep once older nodes are loaded, one stack frame per step on the UI thread.
    fn walk(&mut self, start: usize) {
        let mut stack = vec![(start, String::new(), String::new())];
        while let Some((i, prefix, cont)) = stack.pop() {
            if self.seen[i] {
                continue;
            }
            self.seen[i] = true;
            let also = self.view.nodes[i].parents.iter().skip(1).cloned().collect();
            self.rows.push(TreeRow { node: i, prefix, also });
            let kids: Vec<usize> = self.children[i].iter().copied().filter(|&c| !self.seen[c]).collect();
            if let [only] = kids[..] {
                stack.push((only, cont.clone(), cont));
                continue;
            }
            // Pushed last first, so the first child's subtree is drawn before the second child.
            for (k, &c) in kids.iter().enumerate().rev() {
                let last = k + 1 == kids.len();
                let (branch, under) = if last { ("└─ ", "   ") } else { ("├─ ", "│  ") };
                stack.push((c, format!("{cont}{branch}"), format!("{cont}{under}")));
            }
        }
    }
}

impl DagView {
    /// The id of the session whose nodes are given.
    fn shown_session(&self) -> Option<&str> {
        self.sessions.get(self.selected_session).map(|s| s.id.as_str())
    }

    /// Puts `page` in front of the nodes; false (and nothing changes) when it does not
    /// continue them: another session is shown, or the page was added already.
    pub fn prepend(&mut self, page: DagPage) -> bool {
        if self.shown_session() != Some(page.session.as_str()) || self.next_before != Some(page.before) {
            return false;
        }
        let known: HashSet<&str> = self.nodes.iter().map(|n| n.id.as_str()).collect();
        let mut nodes: Vec<DagNode> = page.nodes.into_iter().filter(|n| !known.contains(n.id.as_str())).collect();
        nodes.append(&mut self.nodes);
        self.nodes = nodes;
        self.older_nodes = page.older_nodes;
        self.next_before = page.next_before;
        self.cap();
        true
    }

    /// True when the pane holds as many nodes as it may ([`DAG_PANE_MAX_NODES`]).
    pub fn at_cap(&self) -> bool {
        self.nodes.len() >= DAG_PANE_MAX_NODES
    }

    /// Drops the oldest nodes beyond [`DAG_PANE_MAX_NODES`]; they count as older nodes again,
    /// the cursor before the oldest node kept.
    fn cap(&mut self) {
        let extra = self.nodes.len().saturating_sub(DAG_PANE_MAX_NODES);
        if extra == 0 {
            return;
        }
        self.nodes.drain(..extra);
        self.older_nodes += extra as u64;
        self.next_before = self.nodes.first().and_then(|n| n.id.parse().ok()).or(self.next_before);
    }

    /// After a reload of the same session (which answers its newest nodes only), keeps the
    /// older nodes `previous` had loaded, so a new chat turn or a return to the pane does not
    /// drop the pages read with "load older".
    pub fn keep_older(&mut self, previous: DagView) {
        let Some(cut_at) = self.next_before else { return };
        if self.shown_session().is_none() || self.shown_session() != previous.shown_session() {
            return;
        }
        // `previous` reached further back: it had the whole session, or a lower cursor.
        let further = previous.next_before.map_or(previous.older_nodes == 0, |b| b < cut_at);
        // And it reaches the newest nodes: more nodes logged between the two loads than one
        // page holds leave a gap neither has, which its older count would leave out (and `o`
        // could never load), so the shown and older nodes no longer add up to the session's.
        let below = previous.nodes.iter().filter(|n| n.id.parse::<i64>().is_ok_and(|id| id < cut_at)).count();
        if !further || previous.older_nodes + below as u64 != self.older_nodes {
            return;
        }
        let known: HashSet<&str> = self.nodes.iter().map(|n| n.id.as_str()).collect();
        let mut nodes: Vec<DagNode> = previous.nodes.into_iter().filter(|n| !known.contains(n.id.as_str())).collect();
        nodes.append(&mut self.nodes);
        self.nodes = nodes;
        self.older_nodes = previous.older_nodes;
        self.next_before = previous.next_before;
        self.cap();
    }

    /// Tree rows in display order: roots first, children under their first parent.
    pub fn tree(&self) -> Vec<TreeRow> {
        let index: HashMap<&str, usize> = self.nodes.iter().enumerate().map(|(i, n)| (n.id.as_str(), i)).collect();
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); self.nodes.len()];
        let mut roots = Vec::new();
        for (i, n) in self.nodes.iter().enumerate() {
            match n.parents.iter().find_map(|p| index.get(p.as_str())) {
                Some(&p) if p != i => children[p].push(i),
                _ => roots.push(i),
            }
        }
        let mut w = TreeWalk { view: self, children, seen: vec![false; self.nodes.len()], rows: Vec::new() };
        for r in roots {
            w.walk(r);
        }
        // Nodes only reachable through a cycle have no root; show them as roots too.
        for i in 0..self.nodes.len() {
            w.walk(i);
        }
        w.rows
    }

    /// Layers by longest path from a root; each lists node indices.
    pub fn layers(&self) -> Vec<Vec<usize>> {
        let index: HashMap<&str, usize> = self.nodes.iter().enumerate().map(|(i, n)| (n.id.as_str(), i)).collect();
        let mut depth: Vec<Option<usize>> = vec![None; self.nodes.len()];
        // Relax repeatedly (the DAG is small); bounded by the node count so a bad cycle cannot hang.
        for _ in 0..=self.nodes.len() {
            let mut changed = false;
            for (i, n) in self.nodes.iter().enumerate() {
                let d = n
                    .parents
                    .iter()
                    .filter_map(|p| index.get(p.as_str()).and_then(|&j| depth[j]))
                    .max()
                    .map_or(0, |m| m + 1)
                    .min(self.nodes.len());
                if depth[i] != Some(d) {
                    depth[i] = Some(d);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let mut layers: Vec<Vec<usize>> = Vec::new();
        for (i, d) in depth.iter().enumerate() {
            let d = d.unwrap_or(0);
            if layers.len() <= d {
                layers.resize(d + 1, Vec::new());
            }
            layers[d].push(i);
        }
        layers
    }

    /// Node indices in the order the selection walks them, for a view.
    pub fn order(&self, layered: bool) -> Vec<usize> {
        if layered {
            self.layers().into_iter().flatten().collect()
        } else {
            self.tree().into_iter().map(|r| r.node).collect()
        }
    }

    /// The node list laid out at `width` (tree or layers): what each item is and the rows it
    /// takes. Every item is wrapped once here; the pane keeps the list until the view, the layout
    /// or the width changes, so a frame draws only the rows in view.
    pub fn node_list(&self, layered: bool, width: usize, t: &Theme) -> NodeList {
        let mut items = Vec::new();
        let mut order = Vec::new();
        let mut item_of = Vec::new();
        if layered {
            let layers = self.layers();
            let count = layers.len();
            for (d, layer) in layers.into_iter().enumerate() {
                item_of.extend(std::iter::repeat_n(items.len(), layer.len()));
                order.extend(layer.iter().copied());
                items.push(ListItem::Layer(d, layer));
                if d + 1 < count {
                    items.push(ListItem::Arrow);
                }
            }
        } else {
            for row in self.tree() {
                order.push(row.node);
                item_of.push(items.len());
                items.push(ListItem::Node(row));
            }
        }
        let mut starts = Vec::with_capacity(items.len() + 1);
        let mut next = 0;
        for item in &items {
            starts.push(next);
            next += self.item_lines(item, None, width, t).len();
        }
        starts.push(next);
        NodeList { layered, width, items, starts, order, item_of }
    }

    /// The rows of the node list at a width (all of them; a frame draws [`NodeList`]'s window),
    /// with the item each row belongs to (a node in the tree; a layer, `usize::MAX` for the
    /// arrows between layers).
    pub fn rows(&self, layered: bool, sel_node: Option<usize>, width: usize, t: &Theme) -> Vec<(usize, Line<'static>)> {
        let list = self.node_list(layered, width, t);
        list.items
            .iter()
            .flat_map(|item| self.item_lines(item, sel_node, width, t).into_iter().map(|l| (item.id(), l)))
            .collect()
    }

    /// The rows of one item: its line wrapped with a hanging indent (continuation rows keep the
    /// tree's guides and start under the label).
    fn item_lines(&self, item: &ListItem, sel_node: Option<usize>, width: usize, t: &Theme) -> Vec<Line<'static>> {
        let edge = t.style(Slot::DagEdge);
        match item {
            ListItem::Arrow => vec![Line::styled("   ┃   ↓", edge)],
            ListItem::Layer(d, layer) => {
                let mut body = Vec::new();
                for (k, &i) in layer.iter().enumerate() {
                    if k > 0 {
                        body.push(Span::styled("  ", edge));
                    }
                    body.extend(self.label(i, sel_node, t));
                }
                let first = Span::styled(format!("L{d:<2}┃ "), edge);
                hanging(first, Span::styled("   ┃ ", edge), body, 0, width)
            }
            ListItem::Node(row) => {
                let mut body = self.label(row.node, sel_node, t);
                if !row.also.is_empty() {
                    // Ids alone name nodes only the details line shows: say what each one is.
                    let kind = |id: &str| self.nodes.iter().find(|n| n.id == id).map(|n| one_line(&n.kind));
                    let also: Vec<String> = row
                        .also
                        .iter()
                        .map(|id| kind(id).map_or_else(|| id.clone(), |k| format!("{id} [{k}]")))
                        .collect();
                    body.push(Span::styled(format!(" ↖ also after {}", also.join(", ")), t.style(Slot::Muted)));
                }
                let hang = super::width(&self.nodes[row.node].kind) + 3;
                // Under a node, the guides of the levels above go on (`│`), its own branch does not.
                let cont = row.prefix.replace("├─ ", "│  ").replace("└─ ", "   ");
                hanging(Span::styled(row.prefix.clone(), edge), Span::styled(cont, edge), body, hang, width)
            }
        }
    }

    /// A node's kind and label, the label styled as selected when it is.
    fn label(&self, i: usize, sel_node: Option<usize>, t: &Theme) -> Vec<Span<'static>> {
        let n = &self.nodes[i];
        let style = if Some(i) == sel_node { t.style(Slot::DagNodeSelected) } else { t.style(Slot::DagNode) };
        vec![
            Span::styled(format!("[{}]", one_line(&n.kind)), t.style(Slot::DagKind)),
            Span::styled(format!(" {} ", one_line(&n.label)), style),
        ]
    }

    /// Draws the selected session's nodes as `list` lays them out (only the rows in view are
    /// built) and the selected node's details; returns the first row shown, kept so the
    /// selected node's rows are all in view and moved as little as possible from `scroll`.
    pub fn render_nodes(
        &self,
        area: Rect,
        buf: &mut Buffer,
        theme: &Theme,
        list: &NodeList,
        selected: usize,
        scroll: usize,
    ) -> usize {
        let t = theme;
        let sel_node = list.order.get(selected).copied();
        let detail_h = (area.height / 3).clamp(3, 8);
        let list_h = area.height.saturating_sub(detail_h + 1) as usize;
        let scroll = list.scroll_to(list.item_of.get(selected).copied(), scroll, list_h);
        for (row, line) in self.window(list, sel_node, scroll, list_h, t).iter().enumerate() {
            buf.set_line(area.x, area.y + row as u16, line, area.width);
        }
        let sep_y = area.y + list_h as u16;
        buf.set_stringn(area.x, sep_y, "─".repeat(area.width as usize), area.width as usize, t.style(Slot::Border));
        if let Some(n) = sel_node.and_then(|i| self.nodes.get(i)) {
            let head = format!(
                "{} · {} · after {}",
                one_line(&n.id),
                one_line(&n.kind),
                if n.parents.is_empty() { "nothing (root)".to_string() } else { n.parents.join(", ") }
            );
            let head = wrap(&head, area.width as usize);
            let heads = head.len();
            let detail: Vec<String> = n.detail.lines().map(crate::tui::highlight::sanitize).collect();
            let detail = detail.join("\n");
            let text: Vec<String> = head.into_iter().chain(wrap(&detail, area.width as usize)).collect();
            for (k, l) in text.iter().take(detail_h as usize).enumerate() {
                let style = if k < heads { t.style(Slot::Accent) } else { t.style(Slot::Text) };
                buf.set_stringn(area.x, sep_y + 1 + k as u16, l, area.width as usize, style);
            }
        }
        scroll
    }

    /// The `height` rows from row `scroll` of `list`: only the items they cross are built.
    pub fn window(
        &self,
        list: &NodeList,
        sel_node: Option<usize>,
        scroll: usize,
        height: usize,
        t: &Theme,
    ) -> Vec<Line<'static>> {
        // The item holding row `scroll`: the last one starting at or before it.
        let first = list.starts.partition_point(|&s| s <= scroll).saturating_sub(1);
        let mut out = Vec::with_capacity(height);
        let mut skip = scroll.saturating_sub(list.starts.get(first).copied().unwrap_or(0));
        for item in list.items.iter().skip(first) {
            if out.len() >= height {
                break;
            }
            let lines = self.item_lines(item, sel_node, list.width, t);
            out.extend(lines.into_iter().skip(skip).take(height - out.len()));
            skip = 0;
        }
        out
    }
}

/// What the node list shows, item by item.
#[derive(Debug, Clone, PartialEq)]
enum ListItem {
    /// A node of the tree.
    Node(TreeRow),
    /// A layer: its depth and its nodes.
    Layer(usize, Vec<usize>),
    /// The arrow between two layers.
    Arrow,
}

impl ListItem {
    /// The item a row belongs to, as [`DagView::rows`] names it.
    fn id(&self) -> usize {
        match self {
            ListItem::Node(r) => r.node,
            ListItem::Layer(d, _) => *d,
            ListItem::Arrow => usize::MAX,
        }
    }
}

/// The node list laid out at one width ([`DagView::node_list`]).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeList {
    /// Layers (true) or the tree.
    pub layered: bool,
    /// The width it was wrapped at.
    pub width: usize,
    items: Vec<ListItem>,
    /// The row each item starts at, then the row count.
    starts: Vec<usize>,
    /// Node indices in the order the selection walks them.
    pub order: Vec<usize>,
    /// The item of each position in `order`.
    item_of: Vec<usize>,
}

impl NodeList {
    /// Rows in the list.
    pub fn row_count(&self) -> usize {
        self.starts.last().copied().unwrap_or(0)
    }

    /// The first row to show in `height` rows from `scroll`, moved as little as possible so
    /// every row of `item` (the selected one) is in view.
    fn scroll_to(&self, item: Option<usize>, scroll: usize, height: usize) -> usize {
        let mut scroll = scroll.min(self.row_count().saturating_sub(height));
        if let Some(item) = item.filter(|&i| i < self.items.len()) {
            let (first, last) = (self.starts[item], self.starts[item + 1].saturating_sub(1).max(self.starts[item]));
            if last >= scroll + height {
                scroll = (last + 1).saturating_sub(height);
            }
            if first < scroll {
                scroll = first;
            }
        }
        scroll
    }
}

/// `body` wrapped to `width` after `first` (the first row's lead) or `cont` (the continuation
/// rows', padded to the lead's width), continuation text indented by `hang`.
fn hanging(
    first: Span<'static>,
    cont: Span<'static>,
    body: Vec<Span<'static>>,
    hang: usize,
    width: usize,
) -> Vec<Line<'static>> {
    let lead = super::width(&first.content);
    let cont_w = super::width(&cont.content);
    let cont = Span::styled(format!("{}{}", cont.content, " ".repeat(lead.saturating_sub(cont_w))), cont.style);
    // Exactly the columns left of the guides: wrapping wider than that cut a character off
    // every row of a deeply indented node.
    let pieces = wrap_line(&Line::from(body), width.saturating_sub(lead).max(2), hang);
    pieces
        .into_iter()
        .enumerate()
        .map(|(k, piece)| {
            let mut spans = vec![if k == 0 { first.clone() } else { cont.clone() }];
            spans.extend(piece.spans);
            Line::from(spans)
        })
        .collect()
}

/// Text for one row: line breaks and tabs become spaces, other control characters go.
fn one_line(s: &str) -> String {
    s.chars()
        .filter_map(|c| if matches!(c, '\n' | '\r' | '\t') { Some(' ') } else { (!c.is_control()).then_some(c) })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(id: &str, parents: &[&str]) -> DagNode {
        DagNode {
            id: id.into(),
            kind: "k".into(),
            label: id.into(),
            parents: parents.iter().map(|s| s.to_string()).collect(),
            detail: String::new(),
        }
    }

    #[test]
    fn tree_and_layers() {
        let v = DagView {
            nodes: vec![n("q", &[]), n("s", &["q"]), n("m", &["q"]), n("a", &["s", "m"])],
            ..Default::default()
        };
        let tree = v.tree();
        let shown: Vec<(String, &str)> = tree.iter().map(|r| (r.prefix.clone(), v.nodes[r.node].id.as_str())).collect();
        // `a` is `s`'s only child: straight below it, no branch of its own.
        assert_eq!(shown, vec![("".into(), "q"), ("├─ ".into(), "s"), ("│  ".into(), "a"), ("└─ ".into(), "m")]);
        assert_eq!(tree[2].also, vec!["m".to_string()]);
        assert_eq!(v.layers(), vec![vec![0], vec![1, 2], vec![3]]);
    }

    #[test]
    fn a_deeply_indented_label_loses_no_character_in_a_narrow_column() {
        // A chain forking at every step (a leaf beside each next step), so its guides leave
        // fewer than 8 columns at width 20.
        let ids = ["a", "b", "c", "d", "e", "f"];
        let mut nodes: Vec<_> =
            ids.iter().enumerate().map(|(k, id)| n(id, if k == 0 { &[] } else { &ids[k - 1..k] })).collect();
        nodes.extend(ids[..5].iter().map(|id| n(&format!("leaf-{id}"), &[id])));
        let mut v = DagView { nodes, ..Default::default() };
        v.nodes[5].label = "answer: unavailable".into();
        let rows = v.rows(false, None, 20, &Theme::plain());
        let text: Vec<String> =
            rows.iter().map(|(_, l)| l.spans.iter().map(|s| s.content.as_ref()).collect::<String>()).collect();
        assert!(text.iter().all(|l| super::super::width(l) <= 20), "{text:#?}");
        let last: String = rows
            .iter()
            .zip(&text)
            .filter(|((i, _), _)| *i == 5)
            .map(|(_, t)| t.trim_start_matches(['│', '├', '└', '─', ' ']).to_string())
            .collect();
        assert_eq!(last.replace(' ', ""), "[k]answer:unavailable", "every character is drawn: {text:#?}");
    }

    #[test]
    fn long_labels_wrap_under_themselves_and_keep_the_tree_guides() {
        let mut v =
            DagView { nodes: vec![n("q", &[]), n("s", &["q"]), n("a", &["s"]), n("m", &["q"])], ..Default::default() };
        v.nodes[1].label = "searched the index for where stale sessions are expired\tand kept 3".into();
        let t = Theme::plain();
        let rows = v.rows(false, Some(1), 30, &t);
        let text: Vec<String> =
            rows.iter().map(|(_, l)| l.spans.iter().map(|s| s.content.as_ref()).collect::<String>()).collect();
        assert!(text.iter().all(|l| super::super::width(l) <= 30), "{text:#?}");
        let s_rows: Vec<&String> = rows.iter().zip(&text).filter(|((i, _), _)| *i == 1).map(|(_, t)| t).collect();
        assert!(s_rows.len() > 1, "the long label wraps: {text:#?}");
        assert!(s_rows[0].starts_with("├─ [k] searched"), "{text:#?}");
        // Continuation rows: the parent's guide goes on, the text starts under the label.
        for r in &s_rows[1..] {
            assert!(r.starts_with("│      ") && !r.starts_with("│       "), "{r:?} in {text:#?}");
        }
        assert!(!text.concat().contains('\t'));
        let joined: String =
            s_rows.iter().map(|r| r.trim_start_matches(['│', '├', '─', ' '])).collect::<Vec<_>>().join(" ");
        assert!(joined.contains("stale sessions") && joined.contains("kept 3"), "nothing is cut: {joined}");
        // Layers wrap too, under the layer's bar.
        let rows = v.rows(true, None, 24, &t);
        let text: Vec<String> =
            rows.iter().map(|(_, l)| l.spans.iter().map(|s| s.content.as_ref()).collect::<String>()).collect();
        assert!(text.iter().all(|l| super::super::width(l) <= 24), "{text:#?}");
        assert!(text.iter().any(|l| l.starts_with("   ┃ ") && !l.contains('↓')), "{text:#?}");
    }

    #[test]
    fn a_chain_thousands_of_steps_deep_draws_without_recursing() {
        // Each only child was one recursive call: a long session with its older nodes loaded
        // overflowed the stack (a test thread's 2 MiB at this depth).
        let nodes = (0..200_000)
            .map(|k| DagNode {
                id: format!("n{k}"),
                kind: "k".into(),
                label: String::new(),
                parents: if k == 0 { Vec::new() } else { vec![format!("n{}", k - 1)] },
                detail: String::new(),
            })
            .collect();
        let v = DagView { nodes, ..Default::default() };
        let tree = v.tree();
        assert_eq!(tree.len(), 200_000);
        assert!(tree.iter().enumerate().all(|(k, r)| r.node == k && r.prefix.is_empty()));
    }

    fn session(id: &str) -> DagSession {
        DagSession { id: id.into(), title: id.into(), nodes: 0, started_ms: 0 }
    }

    #[test]
    fn an_older_page_goes_in_front_once_and_only_for_its_session() {
        let mut v = DagView {
            sessions: vec![session("s")],
            nodes: vec![n("3", &["2"]), n("4", &["3"])],
            older_nodes: 2,
            next_before: Some(3),
            ..Default::default()
        };
        let page = DagPage {
            session: "s".into(),
            before: 3,
            nodes: vec![n("1", &[]), n("2", &["1"])],
            older_nodes: 0,
            next_before: None,
        };
        assert!(!v.prepend(DagPage { session: "other".into(), ..page.clone() }), "another session's page");
        assert!(v.prepend(page.clone()));
        assert_eq!(v.nodes.iter().map(|n| n.id.as_str()).collect::<Vec<_>>(), ["1", "2", "3", "4"]);
        assert_eq!((v.older_nodes, v.next_before), (0, None));
        assert!(!v.prepend(page), "a page answered twice is added once");
        assert_eq!(v.nodes.len(), 4);
        // A reload answering the newest nodes only keeps the older ones loaded before.
        let mut reload = DagView {
            sessions: vec![session("s")],
            nodes: vec![n("4", &["3"]), n("5", &["4"])],
            older_nodes: 3,
            next_before: Some(4),
            ..Default::default()
        };
        reload.keep_older(v.clone());
        assert_eq!(reload.nodes.iter().map(|n| n.id.as_str()).collect::<Vec<_>>(), ["1", "2", "3", "4", "5"]);
        assert_eq!((reload.older_nodes, reload.next_before), (0, None));
        // Not for another session, nor when the earlier view reached less far back.
        let mut other =
            DagView { sessions: vec![session("t")], next_before: Some(9), older_nodes: 8, ..Default::default() };
        other.keep_older(v);
        assert!(other.nodes.is_empty());
        let shallow = DagView {
            sessions: vec![session("s")],
            nodes: vec![n("5", &[])],
            older_nodes: 4,
            next_before: Some(5),
            ..Default::default()
        };
        let mut deeper = DagView {
            sessions: vec![session("s")],
            nodes: vec![n("4", &[]), n("5", &["4"])],
            older_nodes: 3,
            next_before: Some(4),
            ..Default::default()
        };
        deeper.keep_older(shallow);
        assert_eq!((deeper.nodes.len(), deeper.older_nodes), (2, 3));
    }

    /// A chain `from..to` (ids are the numbers), each node after the one before.
    fn chain(from: usize, to: usize) -> Vec<DagNode> {
        (from..to)
            .map(|k| {
                let parents: Vec<String> = if k == from { Vec::new() } else { vec![(k - 1).to_string()] };
                DagNode {
                    id: k.to_string(),
                    kind: "k".into(),
                    label: format!("step {k}"),
                    parents,
                    detail: String::new(),
                }
            })
            .collect()
    }

    #[test]
    fn a_reload_past_more_new_nodes_than_a_page_does_not_keep_the_older_ones_across_the_gap() {
        // Nodes 0..120 of a session, 100..120 loaded with `o` (100 older). Meanwhile the
        // server logged 1,880 more: the reload answers 1,990..2,000, 1,990 older. Keeping the
        // loaded ones in front left 1,890 nodes between them counted nowhere and never loadable:
        // 30 shown and 100 older of a session of 2,000.
        let previous = DagView {
            sessions: vec![session("s")],
            nodes: chain(100, 120),
            older_nodes: 100,
            next_before: Some(100),
            ..Default::default()
        };
        let mut reload = DagView {
            sessions: vec![session("s")],
            nodes: chain(1_990, 2_000),
            older_nodes: 1_990,
            next_before: Some(1_990),
            ..Default::default()
        };
        reload.keep_older(previous.clone());
        assert_eq!((reload.nodes.len(), reload.older_nodes, reload.next_before), (10, 1_990, Some(1_990)));
        // Without a gap (the reload's page reaches the loaded nodes) they are kept.
        let mut near = DagView {
            sessions: vec![session("s")],
            nodes: chain(110, 130),
            older_nodes: 110,
            next_before: Some(110),
            ..Default::default()
        };
        near.keep_older(previous);
        assert_eq!((near.nodes.len(), near.older_nodes, near.next_before), (30, 100, Some(100)));
    }

    #[test]
    fn loading_older_pages_stops_at_the_cap_and_counts_the_rest_as_older() {
        // Every page `o` loaded stayed, without a bound.
        let mut v = DagView {
            sessions: vec![session("s")],
            nodes: chain(9_000, 10_000),
            older_nodes: 9_000,
            next_before: Some(9_000),
            ..Default::default()
        };
        for page in 0..5 {
            let before = v.next_before.unwrap();
            let from = before as usize - 1_000;
            let page = DagPage {
                session: "s".into(),
                before,
                nodes: chain(from, before as usize),
                older_nodes: from as u64,
                next_before: Some(from as i64).filter(|_| page < 8),
            };
            assert!(v.prepend(page));
        }
        assert_eq!(v.nodes.len(), DAG_PANE_MAX_NODES);
        assert!(v.at_cap());
        assert_eq!(v.nodes.first().map(|n| n.id.as_str()), Some("5000"), "the oldest beyond the cap are dropped");
        assert_eq!((v.older_nodes, v.next_before), (5_000, Some(5_000)));
        // A reload of the newest nodes with a new one keeps the loaded ones, still capped.
        let mut reload = DagView {
            sessions: vec![session("s")],
            nodes: chain(9_001, 10_001),
            older_nodes: 9_001,
            next_before: Some(9_001),
            ..Default::default()
        };
        reload.keep_older(v);
        assert_eq!(reload.nodes.len(), DAG_PANE_MAX_NODES);
        assert_eq!((reload.nodes[0].id.as_str(), reload.older_nodes, reload.next_before), ("5001", 5_001, Some(5_001)));
    }

    #[test]
    fn a_window_builds_only_its_rows_and_they_are_the_full_lists_rows() {
        let mut nodes = chain(0, 300);
        nodes.extend((0..40).map(|k| n(&format!("leaf{k}"), &[&(k * 7).to_string()])));
        nodes[3].label = "a label long enough to wrap over several rows of a narrow pane, twice at least".into();
        let v = DagView { nodes, ..Default::default() };
        let t = Theme::plain();
        let text = |l: &Line<'_>| l.spans.iter().map(|s| s.content.as_ref()).collect::<String>();
        for layered in [false, true] {
            let list = v.node_list(layered, 30, &t);
            let all: Vec<String> = v.rows(layered, Some(5), 30, &t).iter().map(|(_, l)| text(l)).collect();
            assert_eq!(list.row_count(), all.len());
            for scroll in [0, 1, 4, 5, 6, 150, all.len() - 3] {
                let window: Vec<String> = v.window(&list, Some(5), scroll, 12, &t).iter().map(text).collect();
                let want: Vec<String> = all.iter().skip(scroll).take(12).cloned().collect();
                assert_eq!(window, want, "layered {layered}, scroll {scroll}");
            }
        }
        // The selected node's rows are brought into view, moving as little as possible.
        let list = v.node_list(false, 30, &t);
        let pos = list.order.iter().position(|&i| i == 3).unwrap();
        let at = list.scroll_to(list.item_of.get(pos).copied(), 100, 5);
        assert_eq!(at, list.starts[list.item_of[pos]]);
        assert!(list.starts[list.item_of[pos] + 1] - at <= 5);
    }

    #[test]
    fn cycles_do_not_hang() {
        let v = DagView { nodes: vec![n("a", &["b"]), n("b", &["a"])], ..Default::default() };
        assert_eq!(v.layers().iter().map(Vec::len).sum::<usize>(), 2);
        assert_eq!(v.tree().len(), 2, "a pure cycle is still shown");
    }
}
