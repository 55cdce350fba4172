//! The impact pane: the import graph around one file (importers left, imports
//! right), navigable node to node, re-centred with Enter, depth adjustable,
//! cycles in the danger colour and a risk overlay (see `widgets::graph`).
//! It follows the file selected in search when opened, and asks for the graph again when the
//! index changes: the workbench's own run ends, its watcher applies a batch, or the repository
//! overview the workbench polls (every 2 s) shows that another process (`docdex index`, a
//! server's watcher) wrote the index. Hidden, it only marks itself stale and asks when shown.

use super::{Cx, Pane, PaneId, RenderCtx};
use crate::engine::protocol::{RepoOverview, RepoState};
use crate::tui::action::{Action, Level};
use crate::tui::event::{EngineEvent, Request, WatchActivity};
use crate::tui::keymap::Command;
use crate::tui::theme::Slot;
use crate::tui::widgets::graph::{
    default_rules, levels_that_fit, GraphCursor, GraphFrame, GraphModel, GraphView, GraphWidget, NodeKind, MAX_DEPTH,
};
use crate::tui::widgets::{frame, truncate_left, wrap};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;
use std::cell::RefCell;
use std::collections::BTreeSet;

/// The impact pane's state.
#[derive(Debug)]
pub struct ImpactPane {
    center: Option<String>,
    history: Vec<String>,
    depth: u32,
    risk: bool,
    seq: u64,
    loading: bool,
    error: Option<String>,
    /// This workbench is indexing the current repository: a file "not parsed yet" is being
    /// parsed by that run, and the graph is asked for again when it ends.
    indexing: bool,
    /// Another writer (a `docdex index` in another terminal, a watcher) is updating the index,
    /// as the last repository overview said: its pid.
    writer: Option<u32>,
    /// What the last overview said of the index (`None`: take the next one as it is, without
    /// asking again; the pane has just asked for the graph after a change it was told of).
    seen: Option<IndexMark>,
    /// The pane is on screen (the app says so when the focus moves).
    shown: bool,
    /// The index changed while the pane was hidden: ask again when it is shown.
    stale: bool,
    /// The engine's graph as it came; `model` is it laid out with `expanded` groups open.
    view: Option<GraphView>,
    expanded: BTreeSet<String>,
    model: Option<GraphModel>,
    cursor: GraphCursor,
    frame: RefCell<GraphFrame>,
}

impl Default for ImpactPane {
    fn default() -> Self {
        ImpactPane {
            center: None,
            history: Vec::new(),
            depth: 1,
            risk: true,
            seq: 0,
            loading: false,
            error: None,
            indexing: false,
            writer: None,
            seen: None,
            shown: false,
            stale: false,
            view: None,
            expanded: BTreeSet::new(),
            model: None,
            cursor: GraphCursor::default(),
            frame: RefCell::new(GraphFrame::default()),
        }
    }
}

impl ImpactPane {
    /// The file in the centre.
    pub fn center(&self) -> Option<&str> {
        self.center.as_deref()
    }

    /// The laid-out graph shown.
    pub fn model(&self) -> Option<&GraphModel> {
        self.model.as_ref()
    }

    /// The selection.
    pub fn cursor(&self) -> &GraphCursor {
        &self.cursor
    }

    /// Levels shown each way.
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Centres the graph on `path` (remembering the previous centre) and asks for it.
    pub fn set_center(&mut self, path: &str, cx: &mut Cx<'_>) {
        if self.center.as_deref() == Some(path) && (self.model.is_some() || self.loading) {
            return;
        }
        if let Some(old) = self.center.take() {
            if old != path {
                self.history.push(old);
            }
        }
        self.center = Some(path.to_string());
        self.fetch(cx);
    }

    fn fetch(&mut self, cx: &mut Cx<'_>) {
        let Some(file) = self.center.clone() else { return };
        self.seq += 1;
        self.loading = true;
        self.stale = false;
        self.error = None;
        cx.request(Request::Impact { seq: self.seq, repo: cx.repo.to_path_buf(), file, depth: self.depth });
    }

    /// Takes over the scroll positions the last frame settled on.
    fn sync_scroll(&mut self) {
        let offsets = self.frame.borrow().offsets.clone();
        if !offsets.is_empty() {
            self.cursor.offsets = offsets;
        }
    }

    /// Lays the graph out again (after a group was expanded); the cursor goes to the centre.
    fn relayout(&mut self) {
        let Some(view) = &self.view else { return };
        let model = GraphModel::with_expanded(view.clone(), self.depth, &default_rules(), &self.expanded);
        self.cursor = GraphCursor::at_center(&model);
        *self.frame.borrow_mut() = GraphFrame::default();
        self.model = Some(model);
    }

    /// Forgets everything (the repository changed).
    pub fn reset(&mut self) {
        *self = ImpactPane { depth: self.depth, risk: self.risk, shown: self.shown, ..Default::default() };
    }

    /// Whether the pane is on screen; the app tells it when the focus moves. A pane that is not
    /// shown asks for nothing when the index changes, only marks itself stale.
    pub fn set_shown(&mut self, shown: bool) {
        self.shown = shown;
    }

    /// The index changed (a run or a watcher batch, here or in another process): ask for the
    /// graph again now if it is shown, else when it is.
    fn index_changed(&mut self, cx: &mut Cx<'_>) {
        if self.center.is_none() {
            return;
        }
        if self.shown {
            self.fetch(cx);
        } else {
            self.stale = true;
        }
    }

    /// Takes the polled overview of the current repository: a change of what it says of the
    /// last index run or change applied, once no writer is running, means the graph on disk
    /// may be another one. The first overview (and the first after the pane asked by itself)
    /// is only remembered.
    fn overview(&mut self, rows: &[RepoOverview], cx: &mut Cx<'_>) {
        let Some(o) = rows.iter().find(|r| r.path == cx.repo) else { return };
        if o.state == RepoState::Updating {
            self.writer = o.writer_pid;
            return;
        }
        self.writer = None;
        let mark = IndexMark::of(o);
        match self.seen.replace(mark.clone()) {
            Some(before) if before != mark => self.index_changed(cx),
            _ => {}
        }
    }

    /// What to show for the engine's error: `(text, waiting)`. An answer that sends the user to
    /// `docdex index` (a file not parsed yet, no graph yet) while an index run goes on (this
    /// workbench's, or another writer's the overview names) is no error but a wait: it says
    /// what is happening and that the graph comes by itself (the command would collide with
    /// that run). Any other error reads as one, with the engine's advice.
    fn shown_error(&self, error: &str) -> (String, bool) {
        let waits_for_a_run = error.contains("`docdex index --repo") || error.contains("`docdex graph rebuild --repo");
        let c = self.center.as_deref().unwrap_or("this file");
        let by = match (self.indexing, self.writer) {
            (true, _) => Some("this workbench's index run".to_string()),
            (false, Some(pid)) => Some(format!("the index run of process {pid}")),
            (false, None) => None,
        };
        match by {
            Some(by) if waits_for_a_run => (
                format!("Parsing now: {c} is not in the impact graph until {by} ends. The graph shows here by itself then; nothing to do meanwhile."),
                true,
            ),
            _ if waits_for_a_run => (
                format!("Cannot draw the graph: {error}. The pane asks again by itself once the index changes."),
                false,
            ),
            _ => (format!("Cannot draw the graph: {error}"), false),
        }
    }

    /// Takes the engine's answer to the newest request.
    fn answer(&mut self, result: &Result<GraphView, String>) {
        self.loading = false;
        match result {
            Ok(view) => {
                let centre = view.nodes.get(view.center).map(|n| n.id.clone());
                let same_centre =
                    self.view.as_ref().and_then(|v| v.nodes.get(v.center)).map(|n| &n.id) == centre.as_ref();
                // A reload of the same centre (a depth change, an index run) keeps the selection.
                let selected =
                    self.model.as_ref().and_then(|m| self.cursor.node(m).map(|n| m.view.nodes[n].id.clone()));
                if !same_centre {
                    self.expanded.clear();
                }
                self.view = Some(view.clone());
                self.relayout();
                if let (true, Some(id)) = (same_centre, selected) {
                    self.reselect(&id);
                }
                self.error = None;
            }
            Err(e) => {
                self.error = Some(e.clone());
                self.model = None;
                self.view = None;
            }
        }
    }

    /// The frame's title around the centre `c` in `width` columns: the widest that leaves the
    /// centre's name 12 cells (or all of it), cut from the left. At 40 columns it was
    /// ` Impact ·  · depth 1 (0 fit; widen for`: no name, and the end cut.
    fn title(&self, c: &str, width: u16) -> String {
        let fits = levels_that_fit(self.depth as u16, width.saturating_sub(2)) as u32;
        let what = if fits == 0 { "centre only".to_string() } else { format!("{fits} fit") };
        let (shown, short) = match fits < self.depth {
            true => (format!(" ({what}; widen for more)"), format!(" ({what})")),
            false => (String::new(), String::new()),
        };
        let (d, risk) = (self.depth, if self.risk { "on" } else { "off" });
        let tails = [
            format!(" · depth {d}{shown} · risk overlay {risk} "),
            format!(" · depth {d}{short} · risk {risk} "),
            format!(" · depth {d}{short} "),
            format!(" · depth {d} "),
            format!(" · d{d} "),
        ];
        let room = |tail: &str| {
            (width as usize)
                .saturating_sub(2 + crate::tui::widgets::width(" Impact · ") + crate::tui::widgets::width(tail))
        };
        let want = crate::tui::widgets::width(c).min(12);
        let tail = tails.iter().find(|t| room(t) >= want).unwrap_or(&tails[4]);
        format!(" Impact · {}{tail}", truncate_left(c, room(tail).max(1)))
    }

    /// Puts the cursor back on the node `id` after a reload of the same centre (else it stays
    /// on the centre).
    fn reselect(&mut self, id: &str) {
        let Some(model) = &self.model else { return };
        for (col, entries) in model.columns.iter().enumerate() {
            if let Some(idx) = entries.iter().position(|&n| model.view.nodes[n].id == id) {
                self.cursor.col = col;
                self.cursor.idx = idx;
                return;
            }
        }
    }
}

impl Pane for ImpactPane {
    fn id(&self) -> PaneId {
        PaneId::Impact
    }

    fn command(&mut self, cmd: Command, cx: &mut Cx<'_>) -> bool {
        self.sync_scroll();
        let page = self.frame.borrow().rows_per_column.max(1) as i64;
        match cmd {
            Command::DepthMore | Command::DepthLess => {
                let d = if cmd == Command::DepthMore { self.depth + 1 } else { self.depth.saturating_sub(1) };
                let d = d.clamp(1, MAX_DEPTH);
                if d != self.depth {
                    self.depth = d;
                    self.fetch(cx);
                }
                return true;
            }
            Command::ToggleRisk => {
                self.risk = !self.risk;
                return true;
            }
            Command::HistoryBack => {
                if let Some(prev) = self.history.pop() {
                    self.center = Some(prev);
                    self.fetch(cx);
                } else {
                    cx.notify(Level::Info, "no earlier centre");
                }
                return true;
            }
            _ => {}
        }
        let Some(model) = &self.model else { return false };
        match cmd {
            Command::Up => self.cursor.vertical(model, -1),
            Command::Down => self.cursor.vertical(model, 1),
            Command::PageUp => self.cursor.vertical(model, -page),
            Command::PageDown => self.cursor.vertical(model, page),
            Command::Top => self.cursor.vertical(model, -i64::from(u32::MAX)),
            Command::Bottom => self.cursor.vertical(model, i64::from(u32::MAX)),
            Command::Left => self.cursor.horizontal(model, -1),
            Command::Right => self.cursor.horizontal(model, 1),
            Command::Recenter | Command::Select => {
                if let Some(n) = self.cursor.node(model) {
                    let node = &model.view.nodes[n];
                    if let Some(key) = model.expand_key(n) {
                        // A group opens in place: its files, with the cursor on the first.
                        let first = model.members(n).first().copied();
                        let col = self.cursor.col;
                        self.expanded.insert(key.to_string());
                        self.relayout();
                        if let (Some(first), Some(model)) = (first, &self.model) {
                            if let Some(idx) = model.columns.get(col).and_then(|c| c.iter().position(|&e| e == first)) {
                                self.cursor.col = col;
                                self.cursor.idx = idx;
                            }
                        }
                    } else if node.kind == NodeKind::File {
                        let id = node.id.clone();
                        self.set_center(&id, cx);
                    } else {
                        cx.notify(Level::Info, format!("{} is not a file of this repository", node.id));
                    }
                }
            }
            Command::ImpactOpenInEditor => {
                if let Some(n) = self.cursor.node(model) {
                    let node = &model.view.nodes[n];
                    if node.kind == NodeKind::File {
                        cx.emit(Action::OpenEditor { path: node.id.clone(), line: 1 });
                    } else {
                        let what = if model.expand_key(n).is_some() {
                            "a folder group (enter lists its files)"
                        } else {
                            "not a file of this repository"
                        };
                        cx.notify(Level::Info, format!("{} is {what}: nothing to open", node.id));
                    }
                }
            }
            _ => return false,
        }
        true
    }

    fn engine(&mut self, event: &EngineEvent, cx: &mut Cx<'_>) {
        match event {
            EngineEvent::IndexStarted { repo } if repo == cx.repo => self.indexing = true,
            EngineEvent::IndexFinished { repo, result } if repo == cx.repo => {
                self.indexing = false;
                // The run wrote a new graph: ask again, so an answer from before it (a file
                // "not parsed yet", a partial graph) does not stay.
                if result.is_ok() && self.center.is_some() {
                    self.seen = None;
                    self.stale = false;
                    self.fetch(cx);
                }
            }
            EngineEvent::Watch { repo, activity: WatchActivity::Applied { .. } } if repo == cx.repo => {
                // The watcher's batch may have rewritten the graph (its overview change is
                // this one: not asked for twice).
                self.seen = None;
                self.index_changed(cx);
            }
            EngineEvent::Repos(Ok(rows)) => self.overview(rows, cx),
            EngineEvent::Impact { seq, result } if *seq == self.seq => self.answer(result),
            _ => {}
        }
    }

    fn focused(&mut self, cx: &mut Cx<'_>) {
        self.shown = true;
        if std::mem::take(&mut self.stale) && self.center.is_some() {
            self.fetch(cx);
        }
    }

    fn hints(&self) -> Vec<(Command, &'static str)> {
        // Nothing to centre or deepen while no graph is shown (an error says why).
        if self.model.is_none() {
            return Vec::new();
        }
        vec![(Command::Recenter, "centre"), (Command::DepthMore, "depth"), (Command::ToggleRisk, "risk")]
    }

    fn render(&self, area: Rect, buf: &mut Buffer, cx: &RenderCtx<'_>) -> Option<(u16, u16)> {
        let t = cx.theme;
        let title = match &self.center {
            Some(c) => self.title(c, area.width),
            None => " Impact ".into(),
        };
        let block = frame(title, cx.focused, t);
        let inner = block.inner(area);
        block.render(area, buf);
        let muted = t.style(Slot::Muted);
        match (&self.center, &self.model, &self.error) {
            (None, _, _) => {
                // Wrapped: at 40x10 the key (`ctrl+g`) is at the end of the line.
                let hint = format!(
                    "Select a search result and press {} to see its imports and importers.",
                    cx.key(Command::OpenImpact)
                );
                write_wrapped(buf, inner, &hint, muted);
            }
            (Some(_), _, Some(e)) => {
                // Wrapped: the reason and what to do are at its end. A wait reads as one (muted,
                // like loading), an error in the error colour.
                let (text, waiting) = self.shown_error(e);
                write_wrapped(buf, inner, &text, if waiting { muted } else { t.style(Slot::Error) });
            }
            (Some(c), None, None) => write_wrapped(buf, inner, &format!("loading the graph around {c}…"), muted),
            (Some(_), Some(model), None) => {
                let f = GraphWidget { model, cursor: &self.cursor, theme: t, risk: self.risk }.render(inner, buf);
                *self.frame.borrow_mut() = f;
            }
        }
        None
    }
}

/// What the repository overview says of the index's last change: a different one means a run
/// or a watcher batch (of any process) has ended since.
#[derive(Debug, Clone, PartialEq)]
struct IndexMark {
    last_indexed_ms: Option<u64>,
    last_event_ms: Option<u64>,
    files: u64,
    chunks: u64,
}

impl IndexMark {
    fn of(o: &RepoOverview) -> IndexMark {
        IndexMark {
            last_indexed_ms: o.last_indexed_ms,
            last_event_ms: o.last_event.as_ref().map(|e| e.at),
            files: o.files,
            chunks: o.chunks,
        }
    }
}

/// Writes `text` wrapped to `area` (one cell in from the left), as many rows as fit.
fn write_wrapped(buf: &mut Buffer, area: Rect, text: &str, style: ratatui::style::Style) {
    let w = (area.width as usize).saturating_sub(1);
    for (row, line) in wrap(text, w.max(1)).iter().take(area.height as usize).enumerate() {
        buf.set_stringn(area.x + 1, area.y + row as u16, line, w, style);
    }
}
