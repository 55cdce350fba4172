//! The repo switcher: every registered repository with its index state, file
//! and chunk counts, when it was last indexed, and watcher activity (from any
//! process). Add (asks for a path, then indexes), re-index, remove, start or
//! stop a watcher, and open a repository. Refreshes itself every few seconds.

use super::{Cx, Pane, PaneId, RenderCtx};
use crate::engine::protocol::ago;
use crate::engine::protocol::{
    FirstRunEnd, IndexProgress, IndexSummary, LastEvent, ProgressUnit, RepoOverview, RepoState,
};
use crate::tui::action::{Action, Level, PromptKind};
use crate::tui::event::{EngineEvent, Request, WatchActivity};
use crate::tui::keymap::Command;
use crate::tui::theme::Slot;
use crate::tui::widgets::{self, bar_spans, fit, frame, scroll_to, thousands, truncate, truncate_left, width};
use crossterm::event::{MouseEvent, MouseEventKind};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;
use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How often the list refreshes while the app runs.
pub const POLL: Duration = Duration::from_secs(2);

/// The repo switcher's state.
#[derive(Debug, Default)]
pub struct ReposPane {
    rows: Vec<RepoOverview>,
    loaded: bool,
    error: Option<String>,
    selected: usize,
    offset: Cell<usize>,
    list_area: Cell<Rect>,
    /// Progress of index runs this app started.
    progress: HashMap<PathBuf, IndexProgress>,
    /// Outcome of the last run or watcher batch, per repo.
    outcome: HashMap<PathBuf, (Level, String)>,
    last_poll: Option<Instant>,
    /// Re-index runs asked for with `r` and not ended yet: their end is said in the status bar.
    asked: HashSet<PathBuf>,
    /// Watched repositories re-indexed with `r`: the watcher paused for the run, and its
    /// restart must not put "watcher started" over the run's outcome (tour18 F2).
    resuming: HashSet<PathBuf>,
}

impl ReposPane {
    /// New rows: the selection stays on the row it was on, else goes to the current repository.
    fn repos_loaded(&mut self, rows: &[RepoOverview], cx: &mut Cx<'_>) {
        let keep = self.selected_row().map(|r| r.path.clone());
        self.rows = rows.to_vec();
        self.loaded = true;
        self.error = None;
        let wanted = keep.as_deref().unwrap_or(cx.repo);
        if let Some(i) = self.rows.iter().position(|r| r.path == wanted) {
            self.selected = i;
        }
        self.select(self.selected as isize);
    }

    /// The overviews shown.
    pub fn rows(&self) -> &[RepoOverview] {
        &self.rows
    }

    /// Progress of a run this app started on `repo`.
    pub fn progress(&self, repo: &Path) -> Option<&IndexProgress> {
        self.progress.get(repo)
    }

    fn selected_row(&self) -> Option<&RepoOverview> {
        self.rows.get(self.selected)
    }

    fn select(&mut self, i: isize) {
        if !self.rows.is_empty() {
            self.selected = i.clamp(0, self.rows.len() as isize - 1) as usize;
        }
    }

    fn state_text(&self, r: &RepoOverview, step: u64) -> (String, Slot) {
        if let Some(p) = self.progress.get(&r.path).or(r.progress.as_ref()) {
            let pct = (p.bytes_done * 100).checked_div(p.bytes_total).unwrap_or(0);
            return (format!("{} {pct}%", widgets::spinner(step)), Slot::Warning);
        }
        if !r.exists {
            return ("missing".into(), Slot::Error);
        }
        // Listed only because it is the current repository: removed from the registry, its index
        // kept (a repository not indexed yet is registered by its first run).
        if !r.registered && r.state != RepoState::NotIndexed {
            return ("unregistered".into(), Slot::Muted);
        }
        match r.state {
            RepoState::NotIndexed => match r.first_run.map(|f| f.end) {
                None => ("not indexed".into(), Slot::Warning),
                Some(FirstRunEnd::Interrupted) => ("interrupted".into(), Slot::Warning),
                Some(FirstRunEnd::Stopped) => ("stopped".into(), Slot::Warning),
            },
            RepoState::Ready => ("ready".into(), Slot::Ok),
            RepoState::Updating => (format!("{} updating", widgets::spinner(step)), Slot::Warning),
            RepoState::Error => ("error".into(), Slot::Error),
        }
    }

    /// The watcher column. Without a watcher the last change recorded is what the last index
    /// run saw, not a watcher's event (`no watcher; last: create index.js` read as one): it says
    /// the watcher is off and that the run indexed the file (`off · indexed index.js 38 s ago`,
    /// `off · dropped old.js 2 min ago`).
    fn watch_text(r: &RepoOverview, now_ms: u64) -> String {
        let recent = r.last_event.as_ref().filter(|e| r.watching || now_ms.saturating_sub(e.at) < 3_600_000);
        let name = |e: &LastEvent| e.path.rsplit('/').next().unwrap_or(&e.path).to_string();
        if !r.watching {
            return match recent {
                Some(e) if e.kind == "delete" => format!("off · dropped {} {}", name(e), ago(now_ms, e.at)),
                Some(e) => format!("off · indexed {} {}", name(e), ago(now_ms, e.at)),
                None => "off".into(),
            };
        }
        let mut s = "watching".to_string();
        if r.queued > 0 {
            s.push_str(&format!(" ({} queued)", r.queued));
        }
        if let Some(e) = recent {
            s.push_str(&format!(" · {} {} {}", e.kind, name(e), ago(now_ms, e.at)));
        }
        s
    }
}

/// `~/code/x` for paths under `$HOME`.
pub fn tilde(p: &Path) -> String {
    if let Some(home) = std::env::var_os("HOME").map(PathBuf::from).filter(|h| h.as_os_str().len() > 1) {
        if let Ok(rest) = p.strip_prefix(&home) {
            return format!("~/{}", rest.display());
        }
    }
    p.display().to_string()
}

impl Pane for ReposPane {
    fn id(&self) -> PaneId {
        PaneId::Repos
    }

    fn command(&mut self, cmd: Command, cx: &mut Cx<'_>) -> bool {
        let page = self.list_area.get().height.max(1) as isize;
        match cmd {
            Command::Up => self.select(self.selected as isize - 1),
            Command::Down => self.select(self.selected as isize + 1),
            Command::PageUp => self.select(self.selected as isize - page),
            Command::PageDown => self.select(self.selected as isize + page),
            Command::Top => self.select(0),
            Command::Bottom => self.select(isize::MAX / 2),
            Command::Select => {
                if let Some(r) = self.selected_row() {
                    if !r.exists {
                        cx.notify(Level::Error, format!("{} no longer exists; remove it with d", r.path.display()));
                    } else {
                        cx.emit(Action::SwitchRepo(r.path.clone()));
                        cx.emit(Action::Focus(PaneId::Search));
                    }
                }
            }
            Command::AddRepo => cx.emit(Action::Prompt(PromptKind::AddRepo)),
            Command::Reindex => {
                if let Some(r) = self.selected_row() {
                    let (path, watching) = (r.path.clone(), r.watching);
                    cx.request(Request::Index { repo: path.clone(), rebuild: false });
                    if watching {
                        self.resuming.insert(path.clone());
                    }
                    self.asked.insert(path);
                }
            }
            Command::RemoveRepo => {
                if let Some(r) = self.selected_row() {
                    cx.emit(Action::Prompt(PromptKind::ConfirmRemove(r.path.clone())));
                }
            }
            Command::ToggleWatch => {
                if let Some(r) = self.selected_row() {
                    cx.request(Request::Watch { repo: r.path.clone(), on: !r.watching });
                }
            }
            Command::Refresh => {
                self.last_poll = Some(cx.now);
                cx.request(Request::LoadRepos { current: cx.repo.to_path_buf() });
            }
            _ => return false,
        }
        true
    }

    fn engine(&mut self, event: &EngineEvent, cx: &mut Cx<'_>) {
        match event {
            EngineEvent::Repos(Ok(rows)) => self.repos_loaded(rows, cx),
            EngineEvent::Repos(Err(e)) => {
                self.loaded = true;
                self.error = Some(e.clone());
            }
            EngineEvent::IndexStarted { repo } => {
                self.progress.insert(repo.clone(), IndexProgress { phase: "walking".into(), ..Default::default() });
                self.outcome.remove(repo);
            }
            EngineEvent::IndexProgress { repo, progress } => {
                self.progress.insert(repo.clone(), progress.clone());
            }
            EngineEvent::IndexFinished { repo, result } => {
                self.progress.remove(repo);
                self.outcome.insert(repo.clone(), index_outcome(result));
                if self.asked.remove(repo) {
                    if let Ok(s) = result {
                        // Asked for with `r`: say how it ended, also when nothing changed.
                        cx.notify(Level::Info, reindexed(repo, s));
                    }
                }
                cx.request(Request::LoadRepos { current: cx.repo.to_path_buf() });
            }
            EngineEvent::RepoRemoved { repo, result } => {
                match result {
                    Ok(()) => self.outcome.remove(repo),
                    Err(e) => self.outcome.insert(repo.clone(), (Level::Error, e.clone())),
                };
                cx.request(Request::LoadRepos { current: cx.repo.to_path_buf() });
            }
            EngineEvent::Watch { repo, activity: WatchActivity::Ready } if self.resuming.remove(repo) => {
                // The watcher is back after the re-index: the run's outcome stays in view.
                if let Some((_, text)) = self.outcome.get_mut(repo) {
                    text.push_str("; watcher resumed");
                }
                cx.request(Request::LoadRepos { current: cx.repo.to_path_buf() });
            }
            EngineEvent::Watch { activity: WatchActivity::Stopped, repo } if self.resuming.contains(repo) => {}
            EngineEvent::Watch { repo, activity } => {
                self.outcome.insert(repo.clone(), watch_outcome(repo, activity, cx));
                cx.request(Request::LoadRepos { current: cx.repo.to_path_buf() });
            }
            _ => {}
        }
    }

    fn tick(&mut self, cx: &mut Cx<'_>) {
        let due = self.last_poll.is_none_or(|t| cx.now.saturating_duration_since(t) >= POLL);
        if due {
            self.last_poll = Some(cx.now);
            cx.request(Request::LoadRepos { current: cx.repo.to_path_buf() });
        }
    }

    fn mouse(&mut self, event: &MouseEvent, _area: Rect, _cx: &mut Cx<'_>) {
        let list = self.list_area.get();
        match event.kind {
            MouseEventKind::Down(_) if widgets::contains(list, event.column, event.row) => {
                self.select((self.offset.get() + (event.row - list.y) as usize) as isize);
            }
            MouseEventKind::ScrollDown => self.select(self.selected as isize + 1),
            MouseEventKind::ScrollUp => self.select(self.selected as isize - 1),
            _ => {}
        }
    }

    fn moves(&self) -> &'static [Command] {
        super::LIST_MOVES
    }

    fn hints(&self) -> Vec<(Command, &'static str)> {
        vec![(Command::Select, "open"), (Command::AddRepo, "add"), (Command::Reindex, "re-index")]
    }

    fn render(&self, area: Rect, buf: &mut Buffer, cx: &RenderCtx<'_>) -> Option<(u16, u16)> {
        let t = cx.theme;
        let block = frame(format!(" Repositories ({}) ", self.rows.len()), cx.focused, t);
        let inner = block.inner(area);
        block.render(area, buf);
        if inner.height < 3 || inner.width < 20 {
            return None;
        }
        let w = inner.width as usize;
        if !self.loaded {
            buf.set_stringn(inner.x + 1, inner.y, "reading the registry…", w, t.style(Slot::Muted));
            return None;
        }
        if let Some(e) = &self.error {
            buf.set_stringn(
                inner.x + 1,
                inner.y,
                truncate(&format!("cannot read the registry: {e}"), w - 1),
                w,
                t.style(Slot::Error),
            );
        }
        let cols = Columns::of(w, &self.rows);
        let Columns { path_w, state_w, num_w, when_w, watch_w, wide } = cols;
        let header = format!(
            "  {}{}{:>num_w$}{:>num_w$} {}{}",
            fit("repository", path_w),
            fit(" state", state_w),
            "files",
            "chunks",
            fit("indexed", when_w),
            if wide { fit("watcher", watch_w) } else { String::new() },
        );
        buf.set_stringn(inner.x, inner.y, &header, w, t.style(Slot::Muted));
        let details_h: u16 = 4;
        let list = Rect { y: inner.y + 1, height: inner.height.saturating_sub(1 + details_h), ..inner };
        self.list_area.set(list);
        let offset = scroll_to(self.selected, self.offset.get(), list.height as usize, self.rows.len());
        self.offset.set(offset);
        if self.rows.is_empty() {
            let add = cx.key(Command::AddRepo);
            buf.set_stringn(
                list.x + 2,
                list.y,
                format!("no repositories yet: press {add} to add one"),
                w - 2,
                t.style(Slot::Muted),
            );
        }
        for (row, r) in self.rows.iter().enumerate().skip(offset).take(list.height as usize) {
            let y = list.y + (row - offset) as u16;
            let line_area = Rect { y, height: 1, ..list };
            buf.set_line(list.x, y, &Line::from(self.row_spans(r, &cols, cx)), list.width);
            if row == self.selected {
                let sel = if cx.focused { t.style(Slot::Selection) } else { t.style(Slot::SelectionUnfocused) };
                buf.set_style(line_area, sel);
            }
        }
        // Details of the selection.
        let dy = inner.y + inner.height - details_h;
        buf.set_stringn(inner.x, dy, "─".repeat(w), w, t.style(Slot::Border));
        if let Some(r) = self.selected_row() {
            let lines = self.details(r, w, cx);
            for (k, l) in lines.iter().take(details_h as usize - 1).enumerate() {
                buf.set_line(inner.x, dy + 1 + k as u16, l, inner.width);
            }
        }
        None
    }
}

impl ReposPane {
    /// One repository's row: current marker, path, state, counts, last index, watcher.
    fn row_spans(&self, r: &RepoOverview, cols: &Columns, cx: &RenderCtx<'_>) -> Vec<Span<'static>> {
        let t = cx.theme;
        let Columns { path_w, state_w, num_w, when_w, watch_w, wide } = *cols;
        let current = r.path == cx.repo;
        let (state, slot) = self.state_text(r, cx.step);
        // A repository whose index is gone shows no counts of the index it had.
        let gone = r.state == RepoState::NotIndexed;
        let when = r.last_indexed_ms.filter(|_| !gone).map(|ms| ago(cx.epoch_ms, ms)).unwrap_or_else(|| "never".into());
        let count = |n: u64| if gone { "—".to_string() } else { thousands(n) };
        let mut spans = vec![
            Span::styled(if current { "▸ " } else { "  " }, t.style(Slot::Accent)),
            Span::styled(
                fit(&truncate_left(&tilde(&r.path), path_w - 1), path_w),
                t.style(if current { Slot::Accent } else { Slot::Text }),
            ),
            Span::styled(fit(&format!(" {state}"), state_w), t.style(slot)),
            Span::styled(format!("{:>num_w$}", count(r.files)), t.style(Slot::Text)),
            Span::styled(format!("{:>num_w$}", count(r.chunks)), t.style(Slot::Text)),
            Span::styled(format!(" {}", fit(&when, when_w)), t.style(Slot::Muted)),
        ];
        if wide {
            spans.push(Span::styled(
                fit(&Self::watch_text(r, cx.epoch_ms), watch_w),
                t.style(if r.watching { Slot::Ok } else { Slot::Muted }),
            ));
        }
        spans
    }

    /// The selection's details: path and fingerprint, then progress, the last outcome or
    /// error, and the watcher.
    fn details(&self, r: &RepoOverview, w: usize, cx: &RenderCtx<'_>) -> Vec<Line<'static>> {
        let t = cx.theme;
        let mut lines: Vec<Line<'static>> = Vec::new();
        let mut head = vec![
            Span::styled(r.path.display().to_string(), t.style(Slot::SearchPath)),
            Span::styled(format!("  {}", &r.fingerprint[..r.fingerprint.len().min(12)]), t.style(Slot::Muted)),
        ];
        // What the list's ▸ means, said where the selection is described.
        if r.path == cx.repo {
            head.push(Span::styled("  ▸ the panes work on this one", t.style(Slot::Accent)));
        }
        lines.push(Line::from(head));
        if let Some(p) = self.progress.get(&r.path).or(r.progress.as_ref()) {
            let mut spans = vec![Span::styled(format!("{} ", fit(&p.phase, 10)), t.style(Slot::Warning))];
            spans.extend(bar_spans(p.ratio(), (w / 3).max(10), t, Slot::ProgressFilled, Slot::ProgressEmpty));
            // The embedding phase counts chunks, and no bytes; its files are files.
            let (done, total, unit) = p.measure();
            let text = if unit == ProgressUnit::Chunks {
                format!(
                    " {}/{} {} · {}/{}",
                    thousands(done),
                    thousands(total),
                    unit.noun(total),
                    thousands(p.files_done),
                    widgets::count(p.files_total, "file", "files")
                )
            } else {
                format!(
                    " {}/{} · {:.1}/{:.1} MB",
                    thousands(p.files_done),
                    widgets::count(p.files_total, "file", "files"),
                    p.bytes_done as f64 / 1e6,
                    p.bytes_total as f64 / 1e6
                )
            };
            spans.push(Span::styled(text, t.style(Slot::Text)));
            lines.push(Line::from(spans));
        } else if let Some((level, text)) = self.outcome.get(&r.path) {
            let slot = if *level == Level::Error { Slot::Error } else { Slot::Ok };
            lines.push(Line::styled(text.clone(), t.style(slot)));
        } else if let Some(f) = r.first_run.filter(|_| r.state == RepoState::NotIndexed) {
            // As `docdex status` says it, with the key that finishes it.
            let how = match f.end {
                FirstRunEnd::Interrupted => "was interrupted",
                FirstRunEnd::Stopped => "stopped",
            };
            let text = format!(
                "its first index run (pid {}) {how} before its first commit; {} to finish",
                f.pid,
                cx.key(Command::Reindex)
            );
            lines.push(Line::styled(truncate(&text, w), t.style(Slot::Warning)));
        } else if let Some(e) = &r.last_error {
            lines.push(Line::styled(format!("last run failed: {e}"), t.style(Slot::Error)));
        }
        lines.push(Line::styled(format!("watcher: {}", Self::watch_text(r, cx.epoch_ms)), t.style(Slot::Muted)));
        lines
    }
}

/// The list's column widths for a pane `w` wide: paths and the watcher share what is left.
#[derive(Clone, Copy)]
struct Columns {
    path_w: usize,
    state_w: usize,
    num_w: usize,
    when_w: usize,
    watch_w: usize,
    wide: bool,
}

impl Columns {
    fn of(w: usize, rows: &[RepoOverview]) -> Self {
        // Columns: marker, path, state, files, chunks, indexed, watcher.
        let (state_w, num_w, when_w) = (13usize, 9usize, 11usize);
        let wide = w >= 110;
        // Paths and the watcher share what is left: half each, more for paths that need it
        // while the watcher keeps 34 columns (its last change is cut first).
        let fixed = 2 + state_w + 2 * num_w + when_w + 1;
        let longest = rows.iter().map(|r| width(&tilde(&r.path)) + 2).max().unwrap_or(10);
        let (path_w, watch_w) = if wide {
            let free = w.saturating_sub(fixed);
            let path_w = longest.max(free / 2).clamp(12, free.saturating_sub(34).max(12));
            (path_w, w.saturating_sub(fixed + path_w))
        } else {
            (w.saturating_sub(fixed).max(10), 0)
        };
        Columns { path_w, state_w, num_w, when_w, watch_w, wide }
    }
}

/// The row's line after an index run: its note, its counts, or the error.
fn index_outcome(result: &Result<IndexSummary, String>) -> (Level, String) {
    match result {
        Ok(s) if s.note.is_some() => (Level::Info, s.note.clone().unwrap_or_default()),
        Ok(s) => (
            Level::Info,
            format!(
                "indexed {}, {} (+{} ~{} -{}) in {:.1} s",
                widgets::count(s.files, "file", "files"),
                widgets::count(s.chunks, "chunk", "chunks"),
                s.added,
                s.updated,
                s.deleted,
                s.seconds
            ),
        ),
        Err(e) => (Level::Error, e.clone()),
    }
}

/// The status line for a re-index asked for with `r`: how it ended, "nothing changed" too
/// (it was silent then, and looked as if the key did nothing).
fn reindexed(repo: &Path, s: &IndexSummary) -> String {
    let name = repo.file_name().map_or_else(|| repo.display().to_string(), |n| n.to_string_lossy().into_owned());
    if let Some(note) = &s.note {
        return format!("re-indexed {name}: {note}");
    }
    let files = widgets::count(s.files, "file", "files");
    match s.added + s.updated + s.deleted {
        0 => format!("re-indexed {name}: nothing changed ({files})"),
        n => {
            format!("re-indexed {name}: {} changed (+{} ~{} -{}), {files}", thousands(n), s.added, s.updated, s.deleted)
        }
    }
}

/// The row's line for what its watcher did; a failure also goes to the message log, so it
/// does not show only in a row the user may not be looking at.
fn watch_outcome(repo: &Path, activity: &WatchActivity, cx: &mut Cx<'_>) -> (Level, String) {
    match activity {
        WatchActivity::Ready => (Level::Info, "watcher started; saved edits are indexed within a second".into()),
        WatchActivity::Applied { paths } => (
            Level::Info,
            format!("watcher applied {}", widgets::count(paths.len() as u64, "changed path", "changed paths")),
        ),
        WatchActivity::Deferred { writer_pid } => (
            Level::Info,
            format!("another process (pid {writer_pid}) keeps this index fresh; watching takes over when it stops"),
        ),
        WatchActivity::Failed(e) => {
            let name = repo.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            cx.notify(Level::Warn, format!("watcher of {name}: {e}"));
            (Level::Error, format!("watcher: {e}"))
        }
        WatchActivity::Stopped => (Level::Info, "watcher stopped".into()),
        WatchActivity::Running => (Level::Info, "the watcher is already running".into()),
    }
}
