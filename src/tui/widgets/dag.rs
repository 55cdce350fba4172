//! The reasoning DAG of a chat session: each step (query, retrieval, tool
//! call, answer) a node, edges from the steps it used. Shown as a tree (nodes
//! under their first parent, other parents noted) or as layers (by longest
//! path from a root), with the selected node's details. A view-model the DAG
//! store fills; the widget only draws it.

use super::{truncate, wrap};
use crate::tui::theme::{Slot, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use std::collections::HashMap;

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
    /// All sessions, newest first.
    pub sessions: Vec<DagSession>,
    /// Index of the session whose nodes are given.
    pub selected_session: usize,
    /// Nodes of that session.
    pub nodes: Vec<DagNode>,
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
    /// Visits `i`; `last` is `None` for a root, else whether it is its parent's last child.
    fn walk(&mut self, i: usize, lead: &str, last: Option<bool>) {
        if self.seen[i] {
            return;
        }
        self.seen[i] = true;
        let (prefix, next_lead) = match last {
            None => (String::new(), String::new()),
            Some(true) => (format!("{lead}└─ "), format!("{lead}   ")),
            Some(false) => (format!("{lead}├─ "), format!("{lead}│  ")),
        };
        let also = self.view.nodes[i].parents.iter().skip(1).cloned().collect();
        self.rows.push(TreeRow { node: i, prefix, also });
        let kids = self.children[i].clone();
        for (k, &c) in kids.iter().enumerate() {
            self.walk(c, &next_lead, Some(k + 1 == kids.len()));
        }
    }
}

impl DagView {
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
            w.walk(r, "", None);
        }
        // Nodes only reachable through a cycle have no root; show them as roots too.
        for i in 0..self.nodes.len() {
            w.walk(i, "", None);
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

    /// Draws the selected session's nodes (tree or layers) and the selected node's details.
    pub fn render_nodes(
        &self,
        area: Rect,
        buf: &mut Buffer,
        theme: &Theme,
        layered: bool,
        selected: usize,
        scroll: usize,
    ) {
        let t = theme;
        let mut lines: Vec<Line<'static>> = Vec::new();
        let sel_node = self.order(layered).get(selected).copied();
        let label = |i: usize| -> Vec<Span<'static>> {
            let n = &self.nodes[i];
            let style = if Some(i) == sel_node { t.style(Slot::DagNodeSelected) } else { t.style(Slot::DagNode) };
            vec![
                Span::styled(format!("[{}]", n.kind), t.style(Slot::DagKind)),
                Span::styled(format!(" {} ", n.label), style),
            ]
        };
        if layered {
            for (d, layer) in self.layers().iter().enumerate() {
                let mut spans = vec![Span::styled(format!("L{d:<2}┃ "), t.style(Slot::DagEdge))];
                for (k, &i) in layer.iter().enumerate() {
                    if k > 0 {
                        spans.push(Span::styled("  ", t.style(Slot::DagEdge)));
                    }
                    spans.extend(label(i));
                }
                lines.push(Line::from(spans));
                lines.push(Line::styled("   ┃   ↓", t.style(Slot::DagEdge)));
            }
            lines.pop();
        } else {
            for row in self.tree() {
                let mut spans = vec![Span::styled(row.prefix.clone(), t.style(Slot::DagEdge))];
                spans.extend(label(row.node));
                if !row.also.is_empty() {
                    spans.push(Span::styled(format!(" ↖ also after {}", row.also.join(", ")), t.style(Slot::Muted)));
                }
                lines.push(Line::from(spans));
            }
        }
        let detail_h = (area.height / 3).clamp(3, 8);
        let list_h = area.height.saturating_sub(detail_h + 1);
        for (row, line) in lines.iter().skip(scroll).take(list_h as usize).enumerate() {
            buf.set_line(area.x, area.y + row as u16, line, area.width);
        }
        let sep_y = area.y + list_h;
        buf.set_stringn(area.x, sep_y, "─".repeat(area.width as usize), area.width as usize, t.style(Slot::Border));
        if let Some(i) = sel_node {
            let n = &self.nodes[i];
            let mut text = vec![format!(
                "{} · {} · after {}",
                n.id,
                n.kind,
                if n.parents.is_empty() { "nothing (root)".to_string() } else { n.parents.join(", ") }
            )];
            text.extend(wrap(&n.detail, area.width as usize));
            for (k, l) in text.iter().take(detail_h as usize).enumerate() {
                let style = if k == 0 { t.style(Slot::Accent) } else { t.style(Slot::Text) };
                buf.set_stringn(
                    area.x,
                    sep_y + 1 + k as u16,
                    truncate(l, area.width as usize),
                    area.width as usize,
                    style,
                );
            }
        }
    }
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
        assert_eq!(shown, vec![("".into(), "q"), ("├─ ".into(), "s"), ("│  └─ ".into(), "a"), ("└─ ".into(), "m")]);
        assert_eq!(tree[2].also, vec!["m".to_string()]);
        assert_eq!(v.layers(), vec![vec![0], vec![1, 2], vec![3]]);
    }

    #[test]
    fn cycles_do_not_hang() {
        let v = DagView { nodes: vec![n("a", &["b"]), n("b", &["a"])], ..Default::default() };
        assert_eq!(v.layers().iter().map(Vec::len).sum::<usize>(), 2);
        assert_eq!(v.tree().len(), 2, "a pure cycle is still shown");
    }
}
