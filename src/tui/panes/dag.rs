//! The reasoning DAG viewer: recorded sessions on the left, the selected
//! session's steps as a tree or in layers on the right, with the selected
//! step's details (drawn by `widgets::dag`). Sessions arrive as engine events
//! once the DAG store exists; until then the pane says so.

use super::{needs, Cx, Pane, PaneId, RenderCtx};
use crate::tui::clock::ago;
use crate::tui::event::EngineEvent;
use crate::tui::keymap::Command;
use crate::tui::theme::Slot;
use crate::tui::widgets::dag::DagView;
use crate::tui::widgets::{fit, frame, scroll_to};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;
use std::cell::Cell;

/// The DAG pane's state.
#[derive(Debug, Default)]
pub struct DagPane {
    view: Option<DagView>,
    layered: bool,
    selected: usize,
    scroll: Cell<usize>,
}

impl DagPane {
    /// The view shown.
    pub fn view(&self) -> Option<&DagView> {
        self.view.as_ref()
    }

    fn node_count(&self) -> usize {
        self.view.as_ref().map_or(0, |v| v.nodes.len())
    }
}

impl Pane for DagPane {
    fn id(&self) -> PaneId {
        PaneId::Dag
    }

    fn command(&mut self, cmd: Command, _cx: &mut Cx<'_>) -> bool {
        let n = self.node_count();
        match cmd {
            Command::ToggleLayout => self.layered = !self.layered,
            Command::Down => self.selected = (self.selected + 1).min(n.saturating_sub(1)),
            Command::Up => self.selected = self.selected.saturating_sub(1),
            Command::Top => self.selected = 0,
            Command::Bottom => self.selected = n.saturating_sub(1),
            Command::NextSession | Command::PrevSession => {
                // Selecting another session asks the DAG store for its nodes; the store does not exist yet.
                if let Some(v) = self.view.as_mut() {
                    let len = v.sessions.len();
                    if len > 0 {
                        let d: isize = if cmd == Command::NextSession { 1 } else { -1 };
                        v.selected_session = (v.selected_session as isize + d).rem_euclid(len as isize) as usize;
                    }
                }
            }
            _ => return false,
        }
        true
    }

    fn engine(&mut self, event: &EngineEvent, _cx: &mut Cx<'_>) {
        if let EngineEvent::Dag(v) = event {
            self.view = Some(v.clone());
            self.selected = 0;
        }
    }

    fn hints(&self) -> Vec<(Command, &'static str)> {
        vec![(Command::ToggleLayout, "tree/layers"), (Command::NextSession, "session")]
    }

    fn render(&self, area: Rect, buf: &mut Buffer, cx: &RenderCtx<'_>) -> Option<(u16, u16)> {
        let t = cx.theme;
        let Some(view) = &self.view else {
            let block = frame(" Reasoning DAG ", cx.focused, t);
            let inner = block.inner(area);
            block.render(area, buf);
            needs(
                inner,
                buf,
                t,
                "The DAG viewer needs the reasoning DAG store",
                &[
                    "Each chat session records its steps (question, local search, web fetches, memory recalls, the answer) as a directed graph in dag.db; this pane lists the sessions and draws the selected one as a tree or in layers, with each step's details.",
                    "The engine does not record sessions yet, so there is nothing to show.",
                ],
            );
            return None;
        };
        let list_w = (area.width / 3).clamp(20, 40);
        let left = Rect { width: list_w, ..area };
        let right = Rect { x: area.x + list_w, width: area.width - list_w, ..area };
        let lblock = frame(format!(" Sessions ({}) ", view.sessions.len()), false, t);
        let linner = lblock.inner(left);
        lblock.render(left, buf);
        for (k, s) in view.sessions.iter().take(linner.height as usize).enumerate() {
            let y = linner.y + k as u16;
            let text = format!("{} · {} steps · {}", s.title, s.nodes, ago(cx.epoch_ms, s.started_ms));
            let style = if k == view.selected_session { t.style(Slot::Selection) } else { t.style(Slot::Text) };
            buf.set_stringn(linner.x, y, fit(&text, linner.width as usize), linner.width as usize, style);
        }
        let mode = if self.layered { "layers" } else { "tree" };
        let rblock = frame(format!(" Steps · {mode} ({} to switch) ", cx.key(Command::ToggleLayout)), cx.focused, t);
        let rinner = rblock.inner(right);
        rblock.render(right, buf);
        let rows = if self.layered { view.layers().len() * 2 } else { view.nodes.len() };
        let sel_row = if self.layered {
            let order = view.order(true);
            let node = order.get(self.selected).copied();
            view.layers().iter().position(|l| node.is_some_and(|n| l.contains(&n))).unwrap_or(0) * 2
        } else {
            self.selected
        };
        let list_h = rinner.height.saturating_sub((rinner.height / 3).clamp(3, 8) + 1) as usize;
        let scroll = scroll_to(sel_row, self.scroll.get(), list_h.max(1), rows);
        self.scroll.set(scroll);
        view.render_nodes(rinner, buf, t, self.layered, self.selected, scroll);
        None
    }
}
