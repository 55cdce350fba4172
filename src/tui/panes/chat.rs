//! The chat pane: a message box (the shared multi-line `TextField`) and the conversation as
//! cells. Finished cells never change; the one active cell grows as the
//! answer streams, committing markdown line by line. Each turn runs the
//! waterfall chat (`Engine::chat`, through the worker) in the session's
//! reasoning-DAG session, so follow-up turns continue it. The sources the answer
//! cites are numbered (`[n]`), selectable, and jump to the search preview.
//! Without a reachable model the turn still lists what retrieval found, with
//! the engine's explanation of how to set a model up; search keeps working.

use super::{Cx, Pane, PaneId, RenderCtx};
use crate::engine::protocol::{answer_for_history, setup_by_hand, ChatMessage, Role as LlmRole};
use crate::tui::action::{Action, Level};
use crate::tui::event::{ChatUpdate, Citation, Conversation, EngineEvent, ProviderState, ProviderStatus, Request};
use crate::tui::keymap::Command;
use crate::tui::theme::Slot;
use crate::tui::views::mark_citations;
use crate::tui::widgets::markdown::{to_line, wrap_runs, MarkdownStream, MdClass, MdLine};
use crate::tui::widgets::text_field::TextField;
use crate::tui::widgets::{frame, spinner};
use crossterm::event::{KeyEvent, MouseEvent, MouseEventKind};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;
use std::cell::Cell;
use std::path::{Path, PathBuf};

/// Who a cell is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The person typing.
    User,
    /// The model.
    Assistant,
    /// docdex itself (setup help, errors).
    Notice,
}

/// A finished cell: never changes once pushed.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatCell {
    /// Who.
    pub role: Role,
    /// The text as written or streamed (sent back to the model as history).
    pub text: String,
    /// Parsed lines.
    pub lines: Vec<MdLine>,
    /// Sources cited by `[n]`.
    pub citations: Vec<Citation>,
    /// The turn of this run it belongs to (`None` for a conversation rebuilt from the DAG log).
    pub turn: Option<u64>,
    /// An answer stopped or cut off by a failure: history marks it so for the model.
    pub partial: bool,
}

/// The answer being streamed.
#[derive(Debug)]
struct ActiveCell {
    turn: u64,
    /// The session (index in this run) the turn belongs to.
    session: usize,
    stream: MarkdownStream,
    text: String,
    /// The latest step the waterfall reported.
    progress: Option<String>,
    /// Notices that came after the answer began (a prompt the server cut short): shown under
    /// the answer when it is committed, not only as a passing progress line.
    late_notices: Vec<String>,
}

/// A conversation: its reasoning-DAG session id (known after its first answer), cells, and
/// the repository it is about (set by its first question, or by the DAG pane it came from).
/// Its turns search that repository and its session is logged there, so it is never
/// continued in another one.
#[derive(Debug, Clone, Default)]
struct Session {
    id: Option<String>,
    cells: Vec<ChatCell>,
    repo: Option<PathBuf>,
}

/// The chat pane's state.
pub struct ChatPane {
    input: TextField,
    typing: bool,
    active: Option<ActiveCell>,
    /// "an answer is still coming" was said: when the turn ends, a true notice replaces it.
    said_still_coming: bool,
    turn: u64,
    /// Selected citation: (cell index, citation number).
    citation: Option<(usize, usize)>,
    scroll_from_bottom: usize,
    provider: ProviderStatus,
    /// The conversations of this run, oldest first (earlier runs' are in the DAG pane).
    sessions: Vec<Session>,
    /// The one shown and added to.
    current: usize,
    /// Which session each turn of this run was asked in.
    turn_sessions: Vec<(u64, usize)>,
    height: Cell<u16>,
    /// Width of the conversation as last drawn (to find the turn at the bottom of the view).
    width: Cell<u16>,
}

impl std::fmt::Debug for ChatPane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatPane").field("sessions", &self.sessions.len()).field("turn", &self.turn).finish()
    }
}

fn new_input() -> TextField {
    TextField::multi_line("Ask about this repository…")
}

impl ChatPane {
    /// The selected citation: (cell index, 1-based citation number).
    pub fn citation(&self) -> Option<(usize, usize)> {
        self.citation
    }

    /// A pane for a provider.
    pub fn new(provider: ProviderStatus) -> Self {
        ChatPane {
            said_still_coming: false,
            input: new_input(),
            typing: true,
            active: None,
            turn: 0,
            citation: None,
            scroll_from_bottom: 0,
            provider,
            sessions: vec![Session::default()],
            current: 0,
            turn_sessions: Vec::new(),
            height: Cell::new(0),
            width: Cell::new(0),
        }
    }

    /// Finished cells of the session shown.
    pub fn cells(&self) -> &[ChatCell] {
        &self.sessions[self.current].cells
    }

    /// The reasoning-DAG session id of the conversation shown, once its first turn answered.
    pub fn session_id(&self) -> Option<&str> {
        self.sessions[self.current].id.as_deref()
    }

    fn cells_mut(&mut self) -> &mut Vec<ChatCell> {
        &mut self.sessions[self.current].cells
    }

    /// Sessions in this run and the index of the one shown.
    pub fn session(&self) -> (usize, usize) {
        (self.current, self.sessions.len())
    }

    /// The turn the user is looking at, which the trace pane follows: the turn of the selected
    /// citation, else the newest turn when scrolled to the bottom, else the turn with the most
    /// rows in view. `None` when the view shows no turn of this run (a conversation from the log).
    pub fn selected_turn(&self) -> Option<u64> {
        let cells = self.cells();
        if let Some(turn) = self.citation.and_then(|(ci, _)| cells.get(ci)).and_then(|c| c.turn) {
            return Some(turn);
        }
        let active = self.active.as_ref().filter(|a| a.session == self.current);
        let w = self.width.get() as usize;
        if self.scroll_from_bottom == 0 || w == 0 {
            return active.map(|a| a.turn).or_else(|| cells.iter().rev().find_map(|c| c.turn));
        }
        // The rows each cell takes, as `rows` draws them.
        let mut blocks: Vec<(Option<u64>, usize)> =
            cells.iter().map(|c| (c.turn, cell_rows(&c.lines, c.citations.len(), w))).collect();
        if let Some(a) = active {
            let mut lines: Vec<MdLine> = a.stream.lines().to_vec();
            lines.extend(a.stream.pending_preview());
            blocks.push((Some(a.turn), cell_rows(&lines, 0, w)));
        }
        let total: usize = blocks.iter().map(|(_, n)| n).sum();
        let h = self.height.get() as usize;
        let from_bottom = self.scroll_from_bottom.min(total.saturating_sub(h));
        let view_end = total - from_bottom;
        let view = view_end.saturating_sub(h)..view_end;
        // The turn with the most rows in view (the later one on a tie).
        let mut shown: Vec<(u64, usize)> = Vec::new();
        let mut start = 0;
        for (turn, n) in blocks {
            let rows = (start + n).min(view.end).saturating_sub(start.max(view.start));
            start += n;
            match (turn, shown.last_mut()) {
                (None, _) => {}
                (Some(t), Some((last, sum))) if *last == t => *sum += rows,
                (Some(t), _) => shown.push((t, rows)),
            }
        }
        shown.into_iter().filter(|(_, rows)| *rows > 0).max_by_key(|&(t, rows)| (rows, t)).map(|(t, _)| t)
    }

    /// The repository the conversation shown is about, when it is not `repo`.
    fn other_repo(&self, repo: &Path) -> Option<&Path> {
        self.sessions[self.current].repo.as_deref().filter(|r| *r != repo)
    }

    /// Shows an empty conversation about `repo`: the last one when it is empty, else a new one.
    fn start_session(&mut self, repo: &Path) {
        self.citation = None;
        self.scroll_from_bottom = 0;
        let last = self.sessions.len() - 1;
        let empty = |s: &Session| s.cells.is_empty() && s.id.is_none();
        if !empty(&self.sessions[last]) {
            self.sessions.push(Session::default());
        }
        self.current = self.sessions.len() - 1;
        self.sessions[self.current].repo = Some(repo.to_path_buf());
    }

    /// The workbench now works on `repo`: a conversation about another repository gives way to
    /// this one's newest of this run, or to a new one, so the next question never continues a
    /// session of the repository left (an answer still streaming goes on into its own).
    pub fn repo_switched(&mut self, repo: &Path) {
        if self.other_repo(repo).is_none() {
            return;
        }
        match self.sessions.iter().rposition(|s| s.repo.as_deref() == Some(repo)) {
            Some(i) => {
                self.current = i;
                self.citation = None;
                self.scroll_from_bottom = 0;
            }
            None => self.start_session(repo),
        }
    }

    /// The text in the message box.
    pub fn input_text(&self) -> String {
        self.input.joined()
    }

    /// True while an answer streams.
    pub fn streaming(&self) -> bool {
        self.active.is_some()
    }

    /// Starts the streamed answer of a turn.
    fn begin_answer(&mut self, turn: u64) {
        self.finish_active(Vec::new());
        self.active = Some(ActiveCell {
            turn,
            session: self.current,
            stream: MarkdownStream::new(),
            text: String::new(),
            progress: None,
            late_notices: Vec::new(),
        });
        self.scroll_from_bottom = 0;
    }

    /// Commits the answer being streamed (nothing when it is empty) with its citations, which
    /// become selectable `[n]` marks where the answer names them.
    fn finish_active(&mut self, citations: Vec<Citation>) {
        let Some(a) = self.active.take() else { return };
        if a.text.trim().is_empty() {
            return;
        }
        let lines = if citations.is_empty() {
            a.stream.finish()
        } else {
            MarkdownStream::parse(&mark_citations(&a.text, &citations))
        };
        let session = a.session.min(self.sessions.len() - 1);
        let cell =
            ChatCell { role: Role::Assistant, lines, citations, text: a.text, turn: Some(a.turn), partial: false };
        self.sessions[session].cells.push(cell);
    }

    /// Marks turn `turn`'s committed answer as cut off (stopped, or the model failed part-way).
    fn mark_partial(&mut self, turn: u64) {
        let answer = self.sessions.iter_mut().flat_map(|s| s.cells.iter_mut()).rev();
        if let Some(c) = answer.filter(|c| c.role == Role::Assistant).find(|c| c.turn == Some(turn)) {
            c.partial = true;
        }
    }

    fn notice(&mut self, turn: u64, text: String, citations: Vec<Citation>) {
        let lines = MarkdownStream::parse(&text);
        self.cells_mut().push(ChatCell {
            role: Role::Notice,
            lines,
            citations,
            text,
            turn: Some(turn),
            partial: false,
        });
        self.scroll_from_bottom = 0;
    }

    /// How to get a model running, with what is configured now.
    fn setup_help(&self) -> String {
        format!(
            "## Setting up a model\n\
             - `docdex llm-setup` installs and configures one (by hand: {by_hand}).\n\
             - Or an OpenAI-compatible server: `[llm] provider = \"openai\"` and `base_url` in config.toml.\n\
             - `docdex check` diagnoses the setup. Configured: `{provider}`, model `{model}`.\n\n\
             Questions still list the sources docdex finds; search works without a model (`alt+2`).",
            by_hand = setup_by_hand(&self.provider.provider, &self.provider.model),
            model = self.provider.model,
            provider = self.provider.provider,
        )
    }

    /// The conversation as model messages (notices and empty answers left out).
    fn messages(&self) -> Vec<ChatMessage> {
        self.sessions[self.current]
            .cells
            .iter()
            .filter(|c| !c.text.trim().is_empty())
            .filter_map(|c| match c.role {
                Role::User => Some(ChatMessage::new(LlmRole::User, c.text.clone())),
                Role::Assistant => {
                    answer_for_history(&c.text, c.partial).map(|t| ChatMessage::new(LlmRole::Assistant, t))
                }
                Role::Notice => None,
            })
            .collect()
    }

    fn send(&mut self, cx: &mut Cx<'_>) {
        let text = self.input_text();
        if text.trim().is_empty() {
            return;
        }
        if self.active.is_some() {
            // One turn at a time; the message waits in the box, and the user hears why.
            cx.notify(
                Level::Info,
                format!(
                    "an answer is still coming: {} stops it; your message stays in the box to send after",
                    cx.key(Command::StopGeneration)
                ),
            );
            self.said_still_coming = true;
            return;
        }
        if let Some(other) = self.other_repo(cx.repo).map(repo_name) {
            // A follow-up would continue another repository's session with its answers as
            // history: ask in a new conversation about this one (tour18 F1).
            self.start_session(cx.repo);
            cx.notify(
                Level::Info,
                format!(
                    "asked in a new conversation about {}: the one shown was about {other} ({} goes back to it)",
                    repo_name(cx.repo),
                    cx.key(Command::ChatPrevSession)
                ),
            );
        }
        self.sessions[self.current].repo.get_or_insert_with(|| cx.repo.to_path_buf());
        self.input = new_input();
        self.turn += 1;
        // The new turn is what the user looks at now (and what the trace pane follows).
        self.citation = None;
        let history = self.messages();
        let turn = Some(self.turn);
        self.cells_mut().push(ChatCell {
            role: Role::User,
            lines: MarkdownStream::parse(&text),
            citations: Vec::new(),
            text: text.clone(),
            turn,
            partial: false,
        });
        self.turn_sessions.push((self.turn, self.current));
        cx.request(Request::Chat {
            turn: self.turn,
            repo: cx.repo.to_path_buf(),
            query: text,
            history,
            session_id: self.sessions[self.current].id.clone(),
        });
        self.begin_answer(self.turn);
    }

    /// The turn ended: the "still coming" hint, if it was said, would now be false (tour12
    /// F22), so a notice that the message in the box can be sent takes its place.
    fn replace_still_coming(&mut self, turn: u64, cx: &mut Cx<'_>) {
        if std::mem::take(&mut self.said_still_coming) {
            cx.notify(Level::Info, format!("turn {turn} ended: {} sends your message", cx.key(Command::Send)));
        }
    }

    /// The turn ended: commit the answer, remember the DAG session, and say what the user
    /// must know (stopped, no model).
    fn done(
        &mut self,
        turn: u64,
        session_id: &Option<String>,
        citations: &[Citation],
        stopped: bool,
        unavailable: &Option<String>,
    ) {
        self.remember_session(turn, session_id);
        let late = self.active.as_mut().map(|a| std::mem::take(&mut a.late_notices)).unwrap_or_default();
        match unavailable {
            Some(why) => {
                self.finish_active(Vec::new());
                // The engine's message already says that the sources below stand without a model.
                let found = if citations.is_empty() { "Retrieval found nothing to list. " } else { "" };
                let why = why.strip_prefix("no answer: ").unwrap_or(why);
                let text = format!(
                    "**No answer**: {why}\n\n{found}Configured: provider `{}`, model `{}`.",
                    self.provider.provider, self.provider.model
                );
                self.notice(turn, text, citations.to_vec());
            }
            None => {
                let answered = self.active.as_ref().is_some_and(|a| !a.text.trim().is_empty());
                self.finish_active(citations.to_vec());
                if stopped && answered {
                    self.mark_partial(turn);
                    self.notice(turn, format!("Stopped turn {turn}; the answer above is partial."), Vec::new());
                } else if stopped {
                    self.notice(turn, format!("Stopped turn {turn} before the model answered."), Vec::new());
                }
            }
        }
        for text in late {
            self.notice(turn, format!("**Note**: {text}"), Vec::new());
        }
        self.scroll_from_bottom = 0;
    }

    /// Records the DAG session a turn was logged in, so the next turn of its conversation
    /// continues it (also when the user moved to another conversation meanwhile).
    fn remember_session(&mut self, turn: u64, session_id: &Option<String>) {
        let Some(id) = session_id else { return };
        if let Some(&(_, i)) = self.turn_sessions.iter().find(|(t, _)| *t == turn) {
            if let Some(s) = self.sessions.get_mut(i) {
                s.id.get_or_insert_with(|| id.clone());
            }
        }
    }

    /// Shows a logged conversation (a DAG session) and makes it the one the next question
    /// continues: the one of this run with that id, or a new one rebuilt from the log.
    fn resume(&mut self, c: &Conversation, repo: &Path) {
        // An answer still streaming keeps going into its own conversation (`ActiveCell::session`).
        self.citation = None;
        self.scroll_from_bottom = 0;
        if let Some(i) = self.sessions.iter().position(|s| s.id.as_deref() == Some(c.session_id.as_str())) {
            self.current = i;
            return;
        }
        let cell = |role: Role, text: &str| ChatCell {
            role,
            lines: MarkdownStream::parse(text),
            citations: Vec::new(),
            text: text.to_string(),
            turn: None,
            partial: false,
        };
        let mut cells = Vec::new();
        if c.older_turns > 0 {
            let older = crate::tui::widgets::count(u64::from(c.older_turns), "earlier turn", "earlier turns");
            let id: String = c.session_id.chars().take(8).collect();
            let text =
                format!("({older} left out: more than the model's history holds; `docdex dag view {id}` shows them)");
            cells.push(cell(Role::Notice, &text));
        }
        for (q, a) in &c.turns {
            cells.push(cell(Role::User, q));
            match a {
                Some(a) => cells.push(cell(Role::Assistant, a)),
                None => cells.push(cell(Role::Notice, "(no answer was recorded for this question)")),
            }
        }
        let session = Session { id: Some(c.session_id.clone()), cells, repo: Some(repo.to_path_buf()) };
        if self.sessions[self.current].cells.is_empty() && self.sessions[self.current].id.is_none() {
            self.sessions[self.current] = session;
        } else {
            self.sessions.push(session);
            self.current = self.sessions.len() - 1;
        }
    }

    /// All citations in order: (cell, number).
    fn citation_stops(&self) -> Vec<(usize, usize)> {
        self.sessions[self.current]
            .cells
            .iter()
            .enumerate()
            .flat_map(|(i, c)| (1..=c.citations.len()).map(move |n| (i, n)))
            .collect()
    }

    fn move_citation(&mut self, delta: isize) {
        let stops = self.citation_stops();
        if stops.is_empty() {
            return;
        }
        let cur = self.citation.and_then(|c| stops.iter().position(|s| *s == c));
        let next = match cur {
            None if delta > 0 => 0,
            None => stops.len() - 1,
            Some(i) => (i as isize + delta).rem_euclid(stops.len() as isize) as usize,
        };
        self.citation = Some(stops[next]);
    }

    /// `o` on a citation: its lines in the search preview (a web page: where to read it).
    fn open_citation(&mut self, cx: &mut Cx<'_>) {
        if let Some(other) = self.other_repo(cx.repo).filter(|_| self.citation.is_some()) {
            // Its paths are another repository's: the search pane would look them up here.
            let text = format!(
                "this conversation is about {}: make it current in Repos ({}) to open its files",
                other.display(),
                cx.key(Command::GotoRepos)
            );
            cx.notify(Level::Info, text);
            return;
        }
        if let Some((ci, n)) = self.citation {
            match self.cells().get(ci).and_then(|c| c.citations.get(n - 1)) {
                // A web page is not a repository file: say where it is and how to read
                // the cached text the answer was given.
                Some(Citation { url: Some(url), .. }) => cx.notify(
                    Level::Info,
                    format!("web source {url} · `docdex web-fetch {url}` prints the text the answer used"),
                ),
                Some(c) => {
                    cx.emit(Action::ShowInPreview { path: c.path.clone(), line: c.line_start, line_end: c.line_end });
                    cx.emit(Action::Focus(PaneId::Search));
                }
                None => {}
            }
        }
    }

    /// Rendered rows of the whole conversation at a width.
    fn rows(&self, w: usize, cx: &RenderCtx<'_>) -> Vec<Line<'static>> {
        let t = cx.theme;
        let mut out: Vec<Line<'static>> = Vec::new();
        let push_cell =
            |role: Role, lines: &[MdLine], sel: Option<usize>, citations: &[Citation], out: &mut Vec<Line<'static>>| {
                let (label, slot) = match role {
                    Role::User => ("you", Slot::ChatUser),
                    Role::Assistant => ("docdex", Slot::ChatAssistant),
                    Role::Notice => ("notice", Slot::ChatNotice),
                };
                out.push(Line::styled(format!("▌{label}"), t.style(slot)));
                for l in lines {
                    for row in wrap_runs(l, w.saturating_sub(2)) {
                        let mut line = to_line(&row, t, sel);
                        line.spans.insert(0, Span::raw("  "));
                        out.push(line);
                    }
                }
                for (k, c) in citations.iter().enumerate() {
                    let n = k + 1;
                    let style =
                        if sel == Some(n) { t.style(Slot::MdCitationSelected) } else { t.style(Slot::MdCitation) };
                    let note = if c.cited { "" } else { " (in context)" };
                    let label = citation_label(c, w.saturating_sub(2 + format!("[{n}] {note}").len()));
                    let mut spans = vec![Span::raw("  "), Span::styled(format!("[{n}] {label}"), style)];
                    if !c.cited {
                        spans.push(Span::styled(note, t.style(Slot::Muted)));
                    }
                    out.push(Line::from(spans));
                }
                out.push(Line::default());
            };
        for (i, c) in self.sessions[self.current].cells.iter().enumerate() {
            let sel = self.citation.filter(|(ci, _)| *ci == i).map(|(_, n)| n);
            push_cell(c.role, &c.lines, sel, &c.citations, &mut out);
        }
        if let Some(a) = self.active.as_ref().filter(|a| a.session == self.current) {
            let mut lines: Vec<MdLine> = a.stream.lines().to_vec();
            lines.extend(a.stream.pending_preview());
            push_cell(Role::Assistant, &lines, None, &[], &mut out);
            out.pop();
            let doing = a.progress.as_deref().filter(|_| a.text.is_empty()).unwrap_or("");
            out.push(Line::styled(
                crate::tui::widgets::truncate(&format!("  {} {doing}…", spinner(cx.step)), w),
                t.style(Slot::Muted),
            ));
        }
        out
    }

    fn intro(&self, w: usize, cx: &RenderCtx<'_>) -> Vec<Line<'static>> {
        let t = cx.theme;
        let repo = cx.repo.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let about = format!(
            "Ask in plain language about **{repo}**; answers cite the files they use, and `{}` jumps to a citation in the search preview.",
            cx.key(Command::OpenCitation)
        );
        let state = match &self.provider.state {
            ProviderState::Ready => format!("Model: `{}` on {} is ready.", self.provider.model, self.provider.provider),
            ProviderState::Unchecked => {
                format!("Model: `{}` on {} (checking…).", self.provider.model, self.provider.provider)
            }
            ProviderState::Unavailable(why) => format!("The model is not available: {why}\n\n{}", self.setup_help()),
        };
        let lines = MarkdownStream::parse(&format!("{about}\n\n{state}"));
        lines.iter().flat_map(|l| wrap_runs(l, w)).map(|r| to_line(&r, t, None)).collect()
    }
}

impl Pane for ChatPane {
    fn id(&self) -> PaneId {
        PaneId::Chat
    }

    fn typing(&self) -> bool {
        self.typing
    }

    fn text_field(&self) -> Option<bool> {
        Some(self.input.is_multi_line())
    }

    fn focus_text(&mut self) -> bool {
        self.typing = true;
        true
    }

    fn command(&mut self, cmd: Command, cx: &mut Cx<'_>) -> bool {
        let page = self.height.get().max(2) as usize / 2;
        match cmd {
            Command::Send => self.send(cx),
            Command::Newline => self.input.insert_newline(),
            Command::StopGeneration => {
                if let Some(a) = &self.active {
                    cx.request(Request::StopChat { turn: a.turn });
                }
            }
            Command::FocusInput => self.typing = true,
            Command::LeaveInput | Command::Back => self.typing = false,
            Command::NextCitation => self.move_citation(1),
            Command::PrevCitation => self.move_citation(-1),
            Command::OpenCitation | Command::Select => self.open_citation(cx),
            Command::NewSession => {
                if let Some(a) = &self.active {
                    cx.request(Request::StopChat { turn: a.turn });
                }
                self.finish_active(Vec::new());
                self.citation = None;
                if !self.sessions[self.current].cells.is_empty() {
                    self.sessions.push(Session::default());
                    self.current = self.sessions.len() - 1;
                }
            }
            Command::ChatPrevSession | Command::ChatNextSession => {
                // Switching away ends the answer being streamed into the current session.
                if let Some(a) = &self.active {
                    cx.request(Request::StopChat { turn: a.turn });
                }
                self.finish_active(Vec::new());
                self.citation = None;
                let n = self.sessions.len();
                self.current =
                    if cmd == Command::ChatNextSession { (self.current + 1) % n } else { (self.current + n - 1) % n };
                self.scroll_from_bottom = 0;
            }
            Command::Up => self.scroll_from_bottom += 1,
            Command::Down => self.scroll_from_bottom = self.scroll_from_bottom.saturating_sub(1),
            Command::PageUp => self.scroll_from_bottom += page,
            Command::PageDown => self.scroll_from_bottom = self.scroll_from_bottom.saturating_sub(page),
            Command::Bottom => self.scroll_from_bottom = 0,
            Command::Top => self.scroll_from_bottom = usize::MAX / 2,
            _ => return false,
        }
        true
    }

    fn text(&mut self, key: &KeyEvent, _cx: &mut Cx<'_>) -> bool {
        self.input.edit(key)
    }

    fn paste(&mut self, text: &str, _cx: &mut Cx<'_>) {
        self.input.insert_str(text);
    }

    fn engine(&mut self, event: &EngineEvent, cx: &mut Cx<'_>) {
        match event {
            EngineEvent::Provider(p) => self.provider = p.clone(),
            EngineEvent::Chat(ChatUpdate::Token { turn, text }) => {
                // Only the answer being waited for grows; late pieces of a stopped one are dropped.
                if let Some(a) = self.active.as_mut().filter(|a| a.turn == *turn) {
                    a.stream.push(text);
                    a.text.push_str(text);
                }
            }
            EngineEvent::Conversation(Ok(c)) => self.resume(c, cx.repo),
            EngineEvent::Chat(ChatUpdate::Progress { turn, text }) => {
                if let Some(a) = self.active.as_mut().filter(|a| a.turn == *turn) {
                    a.progress = Some(text.clone());
                }
            }
            EngineEvent::Chat(ChatUpdate::Notice { turn, text }) => {
                if let Some(a) = self.active.as_mut().filter(|a| a.turn == *turn) {
                    a.progress = Some(text.clone());
                    if !a.text.trim().is_empty() {
                        a.late_notices.push(text.clone());
                    }
                }
            }
            EngineEvent::Chat(ChatUpdate::Done { turn, session_id, citations, stopped, unavailable }) => {
                if self.active.as_ref().is_some_and(|a| a.turn == *turn) {
                    self.done(*turn, session_id, citations, *stopped, unavailable);
                    self.replace_still_coming(*turn, cx);
                } else {
                    self.remember_session(*turn, session_id);
                }
            }
            EngineEvent::Chat(ChatUpdate::Failed { turn, session_id, message }) => {
                self.remember_session(*turn, session_id);
                if self.active.as_ref().is_some_and(|a| a.turn == *turn) {
                    // What arrived before the failure stays, marked as partial.
                    self.finish_active(Vec::new());
                    self.mark_partial(*turn);
                    self.notice(*turn, format!("This turn failed: {message}"), Vec::new());
                }
            }
            _ => {}
        }
    }

    fn mouse(&mut self, event: &MouseEvent, _area: Rect, _cx: &mut Cx<'_>) {
        match event.kind {
            MouseEventKind::ScrollUp => self.scroll_from_bottom += 3,
            MouseEventKind::ScrollDown => self.scroll_from_bottom = self.scroll_from_bottom.saturating_sub(3),
            _ => {}
        }
    }

    fn moves(&self) -> &'static [Command] {
        super::LIST_MOVES
    }

    fn hints(&self) -> Vec<(Command, &'static str)> {
        if self.active.is_some() {
            // While an answer streams, stopping it is the key that matters (send waits).
            return vec![(Command::StopGeneration, "stop"), (Command::NextCitation, "cite")];
        }
        vec![
            (Command::Send, "send"),
            (Command::NextCitation, "cite"),
            (Command::StopGeneration, "stop"),
            (Command::NewSession, "new"),
        ]
    }

    fn render(&self, area: Rect, buf: &mut Buffer, cx: &RenderCtx<'_>) -> Option<(u16, u16)> {
        let t = cx.theme;
        // The message box grows with its wrapped text, to 8 rows (the text area scrolls past).
        let rows = self.input.wrapped_rows(area.width.saturating_sub(2) as usize);
        let input_h = (rows.min(6) as u16 + 2).clamp(3, 8).min(area.height / 2);
        let convo = Rect { height: area.height - input_h, ..area };
        let input_area = Rect { y: area.y + convo.height, height: input_h, ..area };
        let turns = self.cells().iter().filter(|c| c.role == Role::User).count();
        // A conversation about another repository than the current one (reached with
        // `alt+left`) names it, so a question there is not taken to be about this one.
        let about = self.other_repo(cx.repo).map(|r| format!("about {} · ", repo_name(r))).unwrap_or_default();
        let title = format!(
            " Chat · {about}session {} of {} · {turns} turn{} ",
            self.current + 1,
            self.sessions.len(),
            if turns == 1 { "" } else { "s" }
        );
        let block = frame(title, cx.focused && !self.typing, t);
        let inner = block.inner(convo);
        block.render(convo, buf);
        self.height.set(inner.height);
        self.width.set(inner.width);
        // An answer streaming into another conversation (of the repository left) is not this
        // one's: an empty conversation still shows its introduction.
        let empty = self.cells().is_empty() && self.active.as_ref().is_none_or(|a| a.session != self.current);
        let rows = if empty { self.intro(inner.width as usize, cx) } else { self.rows(inner.width as usize, cx) };
        let h = inner.height as usize;
        let max_scroll = rows.len().saturating_sub(h);
        let from_bottom = self.scroll_from_bottom.min(max_scroll);
        let start = if empty { 0 } else { rows.len().saturating_sub(h + from_bottom) };
        for (k, line) in rows.iter().skip(start).take(h).enumerate() {
            buf.set_line(inner.x, inner.y + k as u16, line, inner.width);
        }
        let label = if self.typing && self.active.is_some() {
            format!(
                " Message · {} stops the answer · {} sends once it ends ",
                cx.key(Command::StopGeneration),
                cx.key(Command::Send)
            )
        } else if self.typing {
            format!(" Message · {} send · {} newline ", cx.key(Command::Send), cx.key(Command::Newline))
        } else {
            " Message ".into()
        };
        let iblock = frame(label, cx.focused && self.typing, t);
        let iinner = iblock.inner(input_area);
        iblock.render(input_area, buf);
        // The text area draws its own cursor (reverse video) while it has focus.
        self.input.widget().render(iinner, buf);
        None
    }
}

/// A repository's folder name, for messages.
fn repo_name(repo: &Path) -> String {
    repo.file_name().map_or_else(|| repo.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// A citation's label in `max` cells. A path is cut from the left (`…/while/db_session.rs:1-2`):
/// cut at the pane's edge, a deep path lost its file name and lines, the part that tells
/// citations apart. A web page's address keeps its start (the site), cut with `…`.
fn citation_label(c: &Citation, max: usize) -> String {
    let label = c.label();
    if c.url.is_some() {
        crate::tui::widgets::truncate(&label, max)
    } else {
        crate::tui::widgets::truncate_left(&label, max)
    }
}

/// Rows a cell takes at width `w`: its label, its wrapped lines, its citations and a blank line
/// (an answer being streamed has its spinner line in place of the blank one).
fn cell_rows(lines: &[MdLine], citations: usize, w: usize) -> usize {
    let text: usize = lines.iter().map(|l| wrap_runs(l, w.saturating_sub(2)).len()).sum();
    2 + text + citations
}

/// Citation classes in a line, for tests and hit-testing.
pub fn citations_in(line: &MdLine) -> Vec<usize> {
    line.iter().filter_map(|(c, _)| if let MdClass::Citation(n) = c { Some(*n) } else { None }).collect()
}
