//! The reasoning DAG viewer: recorded sessions on the left, the selected
//! session's steps as a tree or in layers on the right, with the selected
//! step's details (drawn by `widgets::dag`). The sessions come from
//! `Engine::dag_sessions` and the selected one from `Engine::dag_session`
//! (through `Request::LoadDag`), reloaded when the pane gets focus, when
//! another session is selected, and after every chat turn. A session longer
//! than one view (the engine answers its newest 1,000 nodes) says how many
//! older nodes it has; `load_older` asks for the ones before the oldest shown
//! (`Request::LoadDagOlder`, off the UI thread like every load) and puts them
//! in front, and a reload of the same session keeps them. The pane holds at most
//! `DAG_PANE_MAX_NODES` (5,000) nodes: at that many it says so and names the
//! `docdex dag view --before` that reads further back. The node list is laid out
//! once per view, layout and width; a frame builds only the rows in view.

use super::{needs, Cx, Pane, PaneId, RenderCtx};
use crate::engine::protocol::ago;
use crate::tui::event::{EngineEvent, Request};
use crate::tui::keymap::Command;
use crate::tui::theme::Slot;
use crate::tui::widgets::dag::{DagPage, DagView, NodeList, DAG_PANE_MAX_NODES};
use crate::tui::widgets::{fit, frame};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// Steps `pageup` / `pagedown` move the selection.
const DAG_PAGE: usize = 10;

/// The DAG pane's state.
#[derive(Debug, Default)]
pub struct DagPane {
    view: Option<DagView>,
    /// Why the DAG could not be read, when it could not.
    error: Option<String>,
    layered: bool,
    selected: usize,
    scroll: Cell<usize>,
    /// The `before` cursor of the older nodes asked for and not yet answered.
    loading_older: Option<i64>,
    /// Why the older nodes could not be read, when they could not.
    older_error: Option<String>,
    /// Counts the changes of `view`, so the laid-out list knows when it is stale.
    generation: u64,
    /// The node list as last laid out, with the `generation` it was laid out for.
    list: RefCell<Option<(u64, Rc<NodeList>)>>,
}

impl DagPane {
    /// The view shown.
    pub fn view(&self) -> Option<&DagView> {
        self.view.as_ref()
    }

    /// The id of the selected node, in whichever view is shown.
    pub fn selected_node(&self) -> Option<&str> {
        let v = self.view.as_ref()?;
        let i = *v.order(self.layered).get(self.selected)?;
        v.nodes.get(i).map(|n| n.id.as_str())
    }

    /// True while older nodes asked for are on their way.
    pub fn loading_older(&self) -> bool {
        self.loading_older.is_some()
    }

    fn node_count(&self) -> usize {
        self.view.as_ref().map_or(0, |v| v.nodes.len())
    }

    /// The id of the session shown.
    pub fn session_id(&self) -> Option<&str> {
        self.view.as_ref().and_then(|v| v.sessions.get(v.selected_session)).map(|s| s.id.as_str())
    }

    /// Forgets what was shown (another repository became current).
    pub fn reset(&mut self) {
        *self = DagPane::default();
    }

    /// Asks for the sessions and the nodes of `session` (the newest when `None`).
    fn load(&self, session: Option<String>, cx: &mut Cx<'_>) {
        cx.request(Request::LoadDag { repo: cx.repo.to_path_buf(), session });
    }

    /// Asks for the nodes before the oldest shown, once per cursor (a second press while
    /// they load does nothing).
    fn load_older(&mut self, cx: &mut Cx<'_>) {
        let Some(before) =
            self.view.as_ref().filter(|v| !v.at_cap()).and_then(|v| v.next_before.filter(|_| v.older_nodes > 0))
        else {
            return;
        };
        let Some(session) = self.session_id().map(str::to_string) else { return };
        if self.loading_older == Some(before) {
            return;
        }
        self.loading_older = Some(before);
        self.older_error = None;
        cx.request(Request::LoadDagOlder { repo: cx.repo.to_path_buf(), session, before });
    }

    /// Selects the node `id` in the view shown, if it is there.
    fn select_node(&mut self, id: &str) -> bool {
        let Some(v) = self.view.as_ref() else { return false };
        let found = v.order(self.layered).iter().position(|&i| v.nodes.get(i).is_some_and(|n| n.id == id));
        if let Some(pos) = found {
            self.selected = pos;
        }
        found.is_some()
    }

    /// Adds older nodes that arrived to the view; the newest of them is selected, right above
    /// where the view used to start.
    fn older_arrived(&mut self, page: &DagPage) {
        if self.loading_older == Some(page.before) {
            self.loading_older = None;
        }
        let newest = page.nodes.last().map(|n| n.id.clone());
        let added = self.view.as_mut().is_some_and(|v| v.prepend(page.clone()));
        self.generation += u64::from(added);
        if let (true, Some(id)) = (added, newest) {
            self.select_node(&id);
        }
    }

    /// A new answer for the sessions; a reload of the session shown keeps its older nodes
    /// and the selected node.
    fn view_arrived(&mut self, v: &DagView) {
        let same = self.session_id().is_some()
            && self.session_id() == v.sessions.get(v.selected_session).map(|s| s.id.as_str());
        let picked = self.selected_node().map(str::to_string);
        let mut v = v.clone();
        match self.view.take() {
            Some(previous) if same => v.keep_older(previous),
            _ => {
                self.loading_older = None;
                self.older_error = None;
            }
        }
        self.view = Some(v);
        self.generation += 1;
        self.error = None;
        if !same {
            self.selected = 0;
        }
        if !(same && picked.is_some_and(|id| self.select_node(&id))) {
            self.selected = self.selected.min(self.node_count().saturating_sub(1));
        }
    }

    /// The lines above the steps of a cut session: how many older nodes there are and the
    /// key that loads them (or that they are loading, or why they could not be read, or that
    /// the pane holds all it may and the command that reads further back).
    fn older_lines(&self, view: &DagView, cx: &RenderCtx<'_>) -> Vec<String> {
        if view.older_nodes > 0 && view.at_cap() && self.loading_older.is_none() {
            let session: String = self.session_id().unwrap_or("SESSION").chars().take(8).collect();
            return vec![
                format!(
                    "↑ {} older not shown ({} loaded, the most)",
                    crate::tui::widgets::thousands(view.older_nodes),
                    crate::tui::widgets::thousands(DAG_PANE_MAX_NODES as u64)
                ),
                format!("docdex dag view {session} --before {} reads them", view.next_before.unwrap_or_default()),
            ];
        }
        self.older_line(view, cx).into_iter().collect()
    }

    /// The one line of [`DagPane::older_lines`] below the cap.
    fn older_line(&self, view: &DagView, cx: &RenderCtx<'_>) -> Option<String> {
        let older = crate::tui::widgets::count(view.older_nodes, "older node", "older nodes");
        if self.loading_older.is_some() {
            return Some(format!("↑ {older}: loading them…"));
        }
        if let Some(e) = &self.older_error {
            return Some(format!("↑ {older}; they could not be read ({} retries): {e}", cx.key(Command::LoadOlder)));
        }
        (view.older_nodes > 0).then(|| format!("↑ {older} not shown · {} loads them", cx.key(Command::LoadOlder)))
    }

    /// The node list of `view` laid out at `width`, laid out again only when the view, the
    /// layout or the width changed since the last frame.
    fn laid_out(&self, view: &DagView, width: usize, cx: &RenderCtx<'_>) -> Rc<NodeList> {
        let mut kept = self.list.borrow_mut();
        match kept.as_ref() {
            Some((g, l)) if *g == self.generation && l.layered == self.layered && l.width == width => l.clone(),
            _ => {
                let list = Rc::new(view.node_list(self.layered, width, cx.theme));
                *kept = Some((self.generation, list.clone()));
                list
            }
        }
    }
}

/// The session list's title: how many sessions it shows and, when the repository has more
/// (the engine lists the newest 50), how many there are (it said `Sessions (50)` of 300).
fn sessions_title(view: &DagView) -> String {
    let shown = view.sessions.len() as u64;
    if view.total_sessions > shown {
        format!(" Sessions ({} of {}) ", shown, crate::tui::widgets::thousands(view.total_sessions))
    } else {
        format!(" Sessions ({shown}) ")
    }
}

impl Pane for DagPane {
    fn id(&self) -> PaneId {
        PaneId::Dag
    }

    fn command(&mut self, cmd: Command, cx: &mut Cx<'_>) -> bool {
        let n = self.node_count();
        match cmd {
            Command::ToggleLayout => {
                // The selected node stays selected: its position differs between the views.
                if let Some(v) = self.view.as_ref() {
                    let node = v.order(self.layered).get(self.selected).copied();
                    let other = v.order(!self.layered);
                    self.selected = node.and_then(|n| other.iter().position(|&m| m == n)).unwrap_or(0);
                }
                self.layered = !self.layered;
            }
            Command::LoadOlder => self.load_older(cx),
            Command::Select => {
                // Continue the session shown in the Chat pane.
                if let Some(id) = self.session_id() {
                    cx.request(Request::LoadConversation { repo: cx.repo.to_path_buf(), session: id.to_string() });
                }
            }
            Command::Down => self.selected = (self.selected + 1).min(n.saturating_sub(1)),
            Command::Up => self.selected = self.selected.saturating_sub(1),
            // Help lists the paging keys under [navigate] for every pane: here they move by
            // ten steps (a session of several turns has dozens).
            Command::PageDown => self.selected = (self.selected + DAG_PAGE).min(n.saturating_sub(1)),
            Command::PageUp => self.selected = self.selected.saturating_sub(DAG_PAGE),
            Command::Top => self.selected = 0,
            Command::Bottom => self.selected = n.saturating_sub(1),
            Command::NextSession | Command::PrevSession => {
                if let Some(v) = self.view.as_mut() {
                    let len = v.sessions.len();
                    if len > 0 {
                        let d: isize = if cmd == Command::NextSession { 1 } else { -1 };
                        v.selected_session = (v.selected_session as isize + d).rem_euclid(len as isize) as usize;
                        let id = v.sessions[v.selected_session].id.clone();
                        self.load(Some(id), cx);
                    }
                }
            }
            _ => return false,
        }
        true
    }

    fn engine(&mut self, event: &EngineEvent, _cx: &mut Cx<'_>) {
        match event {
            EngineEvent::Dag(Ok(v)) => self.view_arrived(v),
            EngineEvent::Dag(Err(e)) => self.error = Some(e.clone()),
            EngineEvent::DagOlder(Ok(page)) => self.older_arrived(page),
            // Unless the pane moved on meanwhile (another session: nothing is loading).
            EngineEvent::DagOlder(Err(e)) if self.loading_older.is_some() => {
                self.loading_older = None;
                self.older_error = Some(e.clone());
            }
            _ => {}
        }
    }

    fn focused(&mut self, cx: &mut Cx<'_>) {
        // Another process (the CLI, the server) may have logged sessions since the last look.
        self.load(self.session_id().map(str::to_string), cx);
    }

    fn moves(&self) -> &'static [Command] {
        super::LIST_MOVES
    }

    fn hints(&self) -> Vec<(Command, &'static str)> {
        // First when there is something older: the status bar cuts the hints at its width.
        let older = self.view.as_ref().is_some_and(|v| v.older_nodes > 0 && !v.at_cap());
        let mut hints = if older { vec![(Command::LoadOlder, "older steps")] } else { Vec::new() };
        hints.extend([
            (Command::ToggleLayout, "tree/layers"),
            (Command::NextSession, "session"),
            (Command::Select, "continue in chat"),
        ]);
        hints
    }

    fn render(&self, area: Rect, buf: &mut Buffer, cx: &RenderCtx<'_>) -> Option<(u16, u16)> {
        let t = cx.theme;
        let empty = |title: &str, lines: &[&str], buf: &mut Buffer| {
            let block = frame(" Reasoning DAG ", cx.focused, t);
            let inner = block.inner(area);
            block.render(area, buf);
            needs(inner, buf, t, title, lines);
        };
        if let Some(e) = &self.error {
            empty("The reasoning log could not be read", &[e.as_str()], buf);
            return None;
        }
        let view = match &self.view {
            None => {
                empty("Loading the reasoning sessions…", &[], buf);
                return None;
            }
            Some(v) if v.sessions.is_empty() => {
                empty(
                    "No reasoning sessions yet",
                    &[
                        "Every chat turn (here in the Chat pane, docdex chat, the HTTP and MCP servers) is logged as a small graph: the question, the plan, each retrieval and what it found, the gate and budget decisions, the model call and its answer.",
                        "Ask something in the Chat pane and its session appears here.",
                    ],
                    buf,
                );
                return None;
            }
            Some(v) => v,
        };
        let list_w = (area.width / 3).clamp(20, 40);
        let left = Rect { width: list_w, ..area };
        let right = Rect { x: area.x + list_w, width: area.width - list_w, ..area };
        let lblock = frame(sessions_title(view), false, t);
        let linner = lblock.inner(left);
        lblock.render(left, buf);
        for (k, s) in view.sessions.iter().take(linner.height as usize).enumerate() {
            let y = linner.y + k as u16;
            let text = format!(
                "{} · {} · {}",
                s.title,
                crate::tui::widgets::count(s.nodes as u64, "node", "nodes"),
                ago(cx.epoch_ms, s.started_ms)
            );
            let style = if k == view.selected_session { t.style(Slot::Selection) } else { t.style(Slot::Text) };
            buf.set_stringn(linner.x, y, fit(&text, linner.width as usize), linner.width as usize, style);
        }
        let mode = if self.layered { "layers" } else { "tree" };
        let rblock = frame(format!(" Steps · {mode} ({} to switch) ", cx.key(Command::ToggleLayout)), cx.focused, t);
        let mut rinner = rblock.inner(right);
        rblock.render(right, buf);
        for line in self.older_lines(view, cx) {
            if rinner.height <= 4 {
                break;
            }
            let w = rinner.width as usize;
            buf.set_stringn(rinner.x, rinner.y, fit(&line, w), w, t.style(Slot::Accent));
            rinner = Rect { y: rinner.y + 1, height: rinner.height - 1, ..rinner };
        }
        let list = self.laid_out(view, rinner.width as usize, cx);
        let scroll = view.render_nodes(rinner, buf, t, &list, self.selected, self.scroll.get());
        self.scroll.set(scroll);
        None
    }
}
