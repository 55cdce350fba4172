//! The application state: the panes, which one has focus, overlays (help, a
//! prompt), the status line, and the routing of everything that happens.
//! `App` is synchronous and does no I/O: events go in through
//! [`App::handle`], engine requests come out of [`App::take_requests`], and a
//! frame is drawn from `&self`. The event loop (`runtime`) owns the terminal
//! and the worker; scenario tests drive `App` directly with keys and engine
//! events and check the requests it sent.

use super::action::{Action, Level, PromptKind};
use super::clock::Clock;
use super::event::{AppEvent, ChatUpdate, EngineEvent, ProviderState, ProviderStatus, Request};
use super::keymap::{Command, Context, KeyChord, Keymap};
use super::layout::{self, AppLayout};
use super::panes::chat::ChatPane;
use super::panes::dag::DagPane;
use super::panes::impact::ImpactPane;
use super::panes::profile::ProfilePane;
use super::panes::repos::ReposPane;
use super::panes::search::SearchPane;
use super::panes::trace::TracePane;
use super::panes::{Cx, Pane, PaneId, RenderCtx};
use super::theme::{Slot, Theme};
use super::widgets::status_bar::StatusInfo;
use super::widgets::text_field::{self, TextField};
use super::widgets::{self, centered, frame, help};
use crate::engine::protocol as files;
use crate::engine::protocol::{IndexSummary, RepoOverview, RepoState};
use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Widget};
use ratatui::Frame;
use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a notice stays in the status bar.
const NOTICE_FOR: Duration = Duration::from_secs(6);
/// Messages kept for the message log (older ones stay in `logs/tui.log`).
const LOG_KEEP: usize = 500;

/// Everything the app needs to start.
pub struct AppOptions {
    /// The repository to open.
    pub repo: PathBuf,
    /// Colours.
    pub theme: Theme,
    /// Bindings.
    pub keymap: Keymap,
    /// Problems found loading theme, keymap or config (shown at start and in help).
    pub problems: Vec<String>,
    /// Search-as-you-type quiet time.
    pub debounce: Duration,
    /// The configured model provider.
    pub provider: ProviderStatus,
    /// `DOCDEX_HOME`, shown in help (user keymaps and themes live there).
    pub home: PathBuf,
}

/// Something the event loop must do outside the app (it owns the terminal).
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Suspend the TUI, run the editor on `path` at `line`, then resume.
    OpenEditor {
        /// Absolute path.
        path: PathBuf,
        /// 1-based line.
        line: u32,
    },
    /// Give the terminal back and stop the process (`ctrl+z`); `fg` resumes.
    Suspend,
}

pub use super::action::{Message, Mode};

/// A modal layer over the panes.
#[derive(Debug)]
enum Overlay {
    Help {
        scroll: usize,
    },
    /// `q` (a letter) asks before quitting.
    ConfirmQuit,
    /// The message log, scrolled up by `scroll` lines from the newest.
    Messages {
        scroll: usize,
    },
    Prompt {
        kind: PromptKind,
        input: Box<TextField>,
        error: Option<String>,
        /// What `tab` offered last (cycled by the next `tab` while the text is one of them).
        completion: Option<Completion>,
    },
}

/// Completions `tab` offered in a prompt.
#[derive(Debug, Default)]
struct Completion {
    items: Vec<String>,
    /// The one in the field (`None`: the field holds their common prefix).
    pick: Option<usize>,
}

impl Completion {
    /// Puts what `tab` should into `input`: the common prefix when it is longer than the text,
    /// else the first (or next) candidate.
    fn apply(items: Vec<String>, input: &mut TextField) -> Option<Completion> {
        let first = items.first()?;
        let common = items.iter().skip(1).fold(first.clone(), |acc, s| {
            acc.chars().zip(s.chars()).take_while(|(a, b)| a == b).map(|(a, _)| a).collect()
        });
        let mut c = Completion { items, pick: None };
        if common.chars().count() > input.text().chars().count() && c.items.len() > 1 {
            input.set(&common);
        } else {
            c.pick = Some(0);
            input.set(&c.items[0]);
        }
        Some(c)
    }

    /// The next `tab` on text it put there: the next candidate.
    fn cycle(&mut self, input: &mut TextField) -> bool {
        if self.items.len() < 2 {
            // One folder: the next tab goes into it (asks again).
            return false;
        }
        let current = match self.pick {
            Some(i) => self.items.get(i).map(String::as_str),
            None => None,
        };
        let at_prefix = self.pick.is_none() && self.items.iter().all(|s| s.starts_with(input.text()));
        if current != Some(input.text()) && !at_prefix {
            return false;
        }
        let next = self.pick.map_or(0, |i| (i + 1) % self.items.len());
        self.pick = Some(next);
        input.set(&self.items[next]);
        true
    }
}

/// The workbench.
pub struct App {
    repo: PathBuf,
    home: PathBuf,
    focus: PaneId,
    repos: ReposPane,
    search: SearchPane,
    chat: ChatPane,
    trace: TracePane,
    dag: DagPane,
    impact: ImpactPane,
    profile: ProfilePane,
    overlay: Option<Overlay>,
    /// The prompt that help or the message log was opened over; it comes back when they close.
    under: Option<Overlay>,
    keymap: Keymap,
    theme: Theme,
    problems: Vec<String>,
    clock: Arc<dyn Clock>,
    debounce: Duration,
    requests: Vec<Request>,
    effects: Vec<Effect>,
    quit: bool,
    dirty: bool,
    step: u64,
    overview: Option<RepoOverview>,
    provider: ProviderStatus,
    notice: Option<(Level, String, Instant)>,
    messages: Vec<Message>,
    /// Whether the start-up index of the current repo was requested.
    started_index: bool,
    /// A repository added through the prompt and what was typed: if its first index is refused
    /// (a home or system directory), the prompt comes back with the text and the reason.
    pending_add: Option<(PathBuf, String)>,
    /// The search selection the impact pane last followed.
    impact_followed: Option<String>,
    /// The chat turn the trace pane was last pointed at.
    trace_followed: Option<u64>,
    layout: Cell<Option<AppLayout>>,
    /// The last frame was below [`layout::MIN_SIZE`]: only the size message is on the screen.
    too_small: Cell<bool>,
    /// How far the help or message log drawn last can scroll, so a key past either end is
    /// not counted (after `end`, `up` scrolls back at once).
    overlay_max: Cell<usize>,
}

impl App {
    /// A new app on `opts.repo`; its first requests load the repo list.
    pub fn new(opts: AppOptions, clock: Arc<dyn Clock>) -> App {
        let mut app = App {
            repo: opts.repo,
            home: opts.home,
            focus: PaneId::Search,
            repos: ReposPane::default(),
            search: SearchPane::default(),
            chat: ChatPane::new(opts.provider.clone()),
            trace: TracePane::default(),
            dag: DagPane::default(),
            impact: ImpactPane::default(),
            profile: ProfilePane::default(),
            overlay: None,
            under: None,
            keymap: opts.keymap,
            theme: opts.theme,
            problems: opts.problems,
            clock,
            debounce: opts.debounce,
            requests: Vec::new(),
            effects: Vec::new(),
            quit: false,
            dirty: true,
            step: 0,
            overview: None,
            provider: opts.provider,
            notice: None,
            messages: Vec::new(),
            started_index: false,
            pending_add: None,
            impact_followed: None,
            trace_followed: None,
            layout: Cell::new(None),
            too_small: Cell::new(false),
            overlay_max: Cell::new(usize::MAX / 2),
        };
        app.requests.push(Request::LoadRepos { current: app.repo.clone() });
        app.requests.push(Request::CheckProvider);
        if let Some(first) = app.problems.first().cloned() {
            // Each problem is a message of its own in the log (alt+m) and tui.log; the status
            // bar shows the first (the log only ever held that one, pointing at help).
            for p in app.problems.clone() {
                app.log_message(Level::Warn, &p);
            }
            let more = if app.problems.len() > 1 {
                format!(" (+{} more; f1 or alt+m shows all)", app.problems.len() - 1)
            } else {
                String::new()
            };
            app.show_notice(Level::Warn, format!("{first}{more}"));
        }
        app
    }

    /// The current repository.
    pub fn repo(&self) -> &Path {
        &self.repo
    }

    /// The focused pane.
    pub fn focus(&self) -> PaneId {
        self.focus
    }

    /// True once the user asked to quit.
    pub fn should_quit(&self) -> bool {
        self.quit
    }

    /// True when something changed since the last frame.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// Requests the engine worker should run, oldest first.
    pub fn take_requests(&mut self) -> Vec<Request> {
        std::mem::take(&mut self.requests)
    }

    /// Effects the event loop should perform.
    pub fn take_effects(&mut self) -> Vec<Effect> {
        std::mem::take(&mut self.effects)
    }

    /// The search pane (read-only, for tests and benchmarks).
    pub fn search(&self) -> &SearchPane {
        &self.search
    }

    /// The impact pane (read-only).
    pub fn impact(&self) -> &ImpactPane {
        &self.impact
    }

    /// The repo switcher (read-only).
    pub fn repos(&self) -> &ReposPane {
        &self.repos
    }

    /// The chat pane (read-only).
    pub fn chat(&self) -> &ChatPane {
        &self.chat
    }

    /// The waterfall trace pane (read-only).
    pub fn trace(&self) -> &TracePane {
        &self.trace
    }

    /// The profile editor.
    pub fn profile(&self) -> &ProfilePane {
        &self.profile
    }

    /// The reasoning DAG pane (read-only).
    pub fn dag(&self) -> &DagPane {
        &self.dag
    }

    /// The latest notice text.
    pub fn notice(&self) -> Option<&str> {
        self.notice.as_ref().map(|(_, t, _)| t.as_str())
    }

    /// Whether the help overlay is open.
    pub fn help_open(&self) -> bool {
        matches!(self.overlay, Some(Overlay::Help { .. }))
    }

    /// Whether a prompt is open.
    pub fn prompt_open(&self) -> bool {
        matches!(self.overlay, Some(Overlay::Prompt { .. }))
    }

    /// The earliest time a pane needs a tick (debounce), so the loop can sleep until then.
    pub fn deadline(&self) -> Option<Instant> {
        PaneId::ALL.iter().filter_map(|p| self.pane(*p).deadline()).min()
    }

    /// True while something animates (a spinner), so ticks should redraw.
    fn animating(&self) -> bool {
        self.repos.progress(&self.repo).is_some()
            || self.overview.as_ref().is_some_and(|o| o.state == RepoState::Updating)
            || self.chat.streaming()
    }

    /// The frame was drawn.
    pub fn mark_drawn(&mut self) {
        self.dirty = false;
    }

    /// Every message of this run, oldest first (the message log).
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Whether the message log is open.
    pub fn messages_open(&self) -> bool {
        matches!(self.overlay, Some(Overlay::Messages { .. }))
    }

    fn set_notice(&mut self, level: Level, text: String) {
        self.log_message(level, &text);
        self.show_notice(level, text);
    }

    /// Keeps a message for the log overlay and `logs/tui.log`; a repeat of the last one is
    /// counted on it rather than kept again.
    fn log_message(&mut self, level: Level, text: &str) {
        match level {
            Level::Info => tracing::info!(target: "docdex::tui::message", "{text}"),
            Level::Warn => tracing::warn!(target: "docdex::tui::message", "{text}"),
            Level::Error => tracing::error!(target: "docdex::tui::message", "{text}"),
        }
        let epoch_ms = self.clock.epoch_ms();
        if let Some(last) = self.messages.last_mut().filter(|m| m.level == level && m.text == text) {
            last.repeats += 1;
            last.epoch_ms = epoch_ms;
            return;
        }
        if self.messages.len() >= LOG_KEEP {
            self.messages.remove(0);
        }
        self.messages.push(Message { epoch_ms, level, text: text.to_string(), repeats: 1 });
    }

    /// Shows a notice in the status bar (or on its own line) without logging it: for hints
    /// about a key, which would flood the log while someone types.
    fn show_notice(&mut self, level: Level, text: String) {
        let now = self.clock.now();
        // Good news does not hide a problem the user has not had time to read.
        if let Some((current, _, at)) = &self.notice {
            if level == Level::Info && *current != Level::Info && now.saturating_duration_since(*at) < NOTICE_FOR {
                return;
            }
        }
        self.notice = Some((level, text, now));
        self.dirty = true;
    }

    /// Feeds one event.
    pub fn handle(&mut self, event: AppEvent) {
        match event {
            AppEvent::Input(Event::Key(key)) => self.on_key(key),
            AppEvent::Input(Event::Mouse(m)) => self.on_mouse(m),
            AppEvent::Input(Event::Paste(text)) => self.on_paste(&text),
            AppEvent::Input(Event::Resize(_, _)) => self.dirty = true,
            AppEvent::Input(_) => {}
            AppEvent::Tick => self.on_tick(),
            AppEvent::Engine(e) => self.on_engine(e),
        }
        self.follow_chat_turn();
    }

    /// Feeds events queued together, in order. A run of characters typed into a pane's text
    /// field goes in as one insertion: the text area lays out its whole text again after every
    /// edit, so a burst delivered as keys (a paste on a terminal without bracketed paste, a held
    /// key) cost time quadratic in its length and froze the workbench.
    pub fn handle_all(&mut self, events: impl IntoIterator<Item = AppEvent>) {
        let mut typed = String::new();
        for event in events {
            match self.typed_char(&event) {
                Some(c) => typed.push(c),
                None => {
                    self.type_run(&mut typed);
                    self.handle(event);
                }
            }
        }
        self.type_run(&mut typed);
    }

    /// The character `event` types into the focused pane's text field, when it does nothing else
    /// (a plain or shifted key while the pane takes text; a pane asking yes/no reads its keys).
    fn typed_char(&self, event: &AppEvent) -> Option<char> {
        let AppEvent::Input(Event::Key(key)) = event else { return None };
        let KeyCode::Char(c) = key.code else { return None };
        let plain = !key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        if key.kind == KeyEventKind::Release
            || !plain
            || c.is_control()
            || self.overlay.is_some()
            || self.too_small.get()
        {
            return None;
        }
        let pane = self.pane(self.focus);
        (pane.typing() && pane.text_field().is_some() && !pane.asking()).then_some(c)
    }

    /// Inserts the characters collected by [`App::handle_all`] (as a paste does) and empties it.
    fn type_run(&mut self, typed: &mut String) {
        if typed.is_empty() {
            return;
        }
        let text = std::mem::take(typed);
        self.dirty = true;
        self.with_pane(self.focus, |p, cx| p.paste(&text, cx));
        self.follow_chat_turn();
    }

    /// Points the trace pane at the chat turn the chat pane shows, when that changed (so
    /// `[`/`]` in the trace pane keep their choice until the chat moves).
    fn follow_chat_turn(&mut self) {
        let turn = self.chat.selected_turn();
        if self.trace_followed != turn {
            self.trace_followed = turn;
            match turn {
                Some(turn) => self.trace.follow(turn),
                // A new conversation: no turn of it to show yet (`[`/`]` still browse).
                None => self.trace.follow_nothing(),
            }
            self.dirty = true;
        }
    }

    /// The editor the app asked for has exited.
    pub fn editor_finished(&mut self, result: Result<String, String>) {
        // The screen was handed over: everything must be drawn again.
        self.dirty = true;
        match result {
            Ok(msg) => self.set_notice(Level::Info, msg),
            Err(e) => self.set_notice(Level::Error, e),
        }
    }

    /// The process was resumed after `ctrl+z`.
    pub fn resumed(&mut self, result: Result<(), String>) {
        self.dirty = true;
        if let Err(e) = result {
            self.set_notice(Level::Error, e);
        }
    }

    /// Runs `f` on a pane with a fresh context, then routes what it emitted.
    fn with_pane<R>(&mut self, id: PaneId, f: impl FnOnce(&mut dyn Pane, &mut Cx<'_>) -> R) -> R {
        let (r, out) = in_cx(&*self.clock, &self.repo, self.debounce, &self.keymap, |cx| {
            let pane: &mut dyn Pane = match id {
                PaneId::Repos => &mut self.repos,
                PaneId::Search => &mut self.search,
                PaneId::Chat => &mut self.chat,
                PaneId::Trace => &mut self.trace,
                PaneId::Dag => &mut self.dag,
                PaneId::Impact => &mut self.impact,
                PaneId::Profile => &mut self.profile,
            };
            f(pane, cx)
        });
        self.route(out);
        r
    }

    fn pane(&self, id: PaneId) -> &dyn Pane {
        match id {
            PaneId::Repos => &self.repos,
            PaneId::Search => &self.search,
            PaneId::Chat => &self.chat,
            PaneId::Trace => &self.trace,
            PaneId::Dag => &self.dag,
            PaneId::Impact => &self.impact,
            PaneId::Profile => &self.profile,
        }
    }

    fn route(&mut self, actions: Vec<Action>) {
        for a in actions {
            self.dirty = true;
            match a {
                Action::Request(r) => self.requests.push(r),
                Action::Focus(p) => self.focus_pane(p),
                Action::OpenEditor { path, line } => {
                    self.requests.push(Request::Edit { repo: self.repo.clone(), path, line })
                }
                Action::ShowInPreview { path, line, line_end } => {
                    self.with_search(|s, cx| s.show_file(&path, (line, line_end), cx))
                }
                Action::OpenImpact { path } => {
                    self.impact_followed = Some(path.clone());
                    self.with_impact(|i, cx| i.set_center(&path, cx));
                    self.focus_pane(PaneId::Impact);
                }
                Action::SwitchRepo(p) => self.switch_repo(p),
                Action::Prompt(kind) => {
                    let text = match &kind {
                        PromptKind::PathFilter(v) | PromptKind::LangFilter(v) => v.clone(),
                        _ => String::new(),
                    };
                    // The current filter is shown selected: typing replaces it, a movement key
                    // keeps it to edit (never `lang:htmlpy`).
                    let mut input = TextField::single_line(&text);
                    input.select_all();
                    self.overlay =
                        Some(Overlay::Prompt { kind, input: Box::new(input), error: None, completion: None });
                }
                Action::Notify(level, text) => self.set_notice(level, text),
            }
        }
    }

    fn with_search(&mut self, f: impl FnOnce(&mut SearchPane, &mut Cx<'_>)) {
        let ((), out) = in_cx(&*self.clock, &self.repo, self.debounce, &self.keymap, |cx| f(&mut self.search, cx));
        self.route(out);
    }

    fn with_impact(&mut self, f: impl FnOnce(&mut ImpactPane, &mut Cx<'_>)) {
        let ((), out) = in_cx(&*self.clock, &self.repo, self.debounce, &self.keymap, |cx| f(&mut self.impact, cx));
        self.route(out);
    }

    fn focus_pane(&mut self, p: PaneId) {
        self.focus = p;
        // Hidden, the impact pane only marks itself stale when the index changes.
        self.impact.set_shown(p == PaneId::Impact);
        self.dirty = true;
        if p == PaneId::Chat && self.provider.state != ProviderState::Ready {
            // The model server may have been started since the last check.
            self.requests.push(Request::CheckProvider);
        }
        if p == PaneId::Impact {
            // Follow the search selection when it changed since the graph last followed it.
            if let Some(path) = self.search.selected_path() {
                if self.impact_followed.as_deref() != Some(path.as_str()) {
                    self.impact_followed = Some(path.clone());
                    self.with_impact(|i, cx| i.set_center(&path, cx));
                }
            }
        }
        self.with_pane(p, |pane, cx| pane.focused(cx));
    }

    fn switch_repo(&mut self, p: PathBuf) {
        if p == self.repo {
            return;
        }
        self.repo = p;
        self.overview = None;
        self.started_index = false;
        self.impact.reset();
        self.dag.reset();
        self.impact_followed = None;
        self.with_search(|s, cx| s.reset_for_repo(cx));
        // The chat shows a conversation about this repository (a follow-up continued the
        // other one's session, its answers as history, its citations opened here).
        self.chat.repo_switched(&self.repo);
        self.follow_chat_turn();
        self.requests.push(Request::LoadRepos { current: self.repo.clone() });
        let name = self.repo_name();
        self.set_notice(Level::Info, format!("switched to {name}"));
    }

    fn repo_name(&self) -> String {
        self.repo
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.repo.display().to_string())
    }

    /// The input mode: insert while a text field (of the pane or a prompt) has focus.
    pub fn mode(&self) -> Mode {
        match &self.overlay {
            Some(Overlay::Prompt { kind: PromptKind::ConfirmRemove(_), .. }) | Some(Overlay::ConfirmQuit) => {
                Mode::Normal
            }
            Some(Overlay::Prompt { .. }) => Mode::Insert,
            Some(_) => Mode::Normal,
            None if self.pane(self.focus).typing() && !self.pane(self.focus).asking() => Mode::Insert,
            None => Mode::Normal,
        }
    }

    /// Keys: overlays first; then, in a text field, its editing keys before any binding;
    /// then the keymap (pane, navigate, global). In normal mode a printable key that is no
    /// command of the pane goes to the pane's text field, so typing never runs away.
    fn on_key(&mut self, key: KeyEvent) {
        if key.kind == KeyEventKind::Release {
            return;
        }
        if self.too_small.get() {
            // Only the size message is drawn: a key would act on panes no one sees (`d` then
            // `y` in Repos removed a repository, `q` `y` quit). `ctrl+c` still quits.
            self.quit |= key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL);
            return;
        }
        self.dirty = true;
        let chord = KeyChord::from_event(&key);
        if self.overlay.is_some() {
            self.overlay_key(&key, chord);
            return;
        }
        let ctx = self.focus.context();
        let pane = self.pane(self.focus);
        let typing = pane.typing();
        let field = pane.text_field();
        if typing
            && text_field::claims(&key, field.unwrap_or(false))
            && self.with_pane(self.focus, |p, cx| p.text(&key, cx))
        {
            return;
        }
        let printable = is_printable(&key);
        match self.keymap.resolve(ctx, chord) {
            Some(Command::Quit) if printable => {
                // A letter never quits on its own: typing in normal mode must be harmless.
                self.overlay = Some(Overlay::ConfirmQuit);
            }
            Some(cmd) => {
                let used = self.command(cmd);
                if !used && printable && !typing {
                    self.type_into_field(&key, Some(cmd));
                } else if !used && !typing && self.unlisted_move(cmd) {
                    // `enter` in Trace did nothing and said nothing: name it as no key here.
                    self.key_hint(&key, None);
                }
            }
            None if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) => self.quit = true,
            None if printable && !typing => self.type_into_field(&key, None),
            None => {}
        }
    }

    /// A printable key in normal mode that did nothing as a command (`bound`, if it is one):
    /// back to the pane's text field with it, or a hint where the pane has none. A key help
    /// lists for the pane is never called "not a key": it has nothing to act on yet.
    fn type_into_field(&mut self, key: &KeyEvent, bound: Option<Command>) {
        if self.with_pane(self.focus, |p, _| p.focus_text()) {
            self.with_pane(self.focus, |p, cx| p.text(key, cx));
            return;
        }
        // A move the pane has no use for is not in its help either: not a key here.
        let bound = bound.filter(|c| !self.unlisted_move(*c));
        self.key_hint(key, bound);
    }

    /// A `[navigate]` move the focused pane does not act on (and its help does not list).
    fn unlisted_move(&self, cmd: Command) -> bool {
        cmd.context() == super::keymap::Context::Navigate && !self.pane(self.focus).moves().contains(&cmd)
    }

    /// Says in the status bar that a key did nothing: `bound` names what it would do (the pane
    /// has nothing to act on yet), else it is no key of the pane.
    fn key_hint(&mut self, key: &KeyEvent, bound: Option<Command>) {
        let help = self.keymap.hint(Command::Help).unwrap_or_else(|| "f1".into());
        let k = KeyChord::from_event(key);
        let pane = self.focus.title();
        let text = match bound {
            Some(cmd) => {
                let what = cmd.description();
                let what = what
                    .chars()
                    .next()
                    .map_or_else(String::new, |c| c.to_lowercase().chain(what.chars().skip(1)).collect());
                format!("`{k}` ({what}): nothing to act on in {pane} yet")
            }
            None => format!("`{k}` is not a key in {pane}; {help} lists them"),
        };
        self.show_notice(Level::Info, text);
    }

    /// Runs a command; false when nothing had a use for it.
    fn command(&mut self, cmd: Command) -> bool {
        let n = PaneId::ALL.len();
        match cmd {
            Command::Quit => self.quit = true,
            Command::Help => self.overlay = Some(Overlay::Help { scroll: 0 }),
            Command::Suspend => self.effects.push(Effect::Suspend),
            Command::Messages => self.overlay = Some(Overlay::Messages { scroll: 0 }),
            Command::NextPane => self.focus_pane(PaneId::ALL[(self.focus.index() + 1) % n]),
            Command::PrevPane => self.focus_pane(PaneId::ALL[(self.focus.index() + n - 1) % n]),
            c => {
                if let Some(p) = PaneId::ALL.iter().find(|p| p.goto() == c) {
                    self.focus_pane(*p);
                } else {
                    return self.with_pane(self.focus, |p, cx| p.command(c, cx));
                }
            }
        }
        true
    }

    fn overlay_key(&mut self, key: &KeyEvent, chord: KeyChord) {
        // `ctrl+c` quits at once from anywhere, every pop-up included.
        if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
            self.quit = true;
            return;
        }
        // Help and the message log open from a prompt too (`f1`, `alt+m`: keys a prompt never
        // types), and give the prompt back, text and all, when they close.
        if matches!(self.overlay, Some(Overlay::Prompt { .. })) {
            let opens = match self.keymap.lookup(super::keymap::Context::Global, chord) {
                Some(Command::Help) if !is_printable(key) => Some(Overlay::Help { scroll: 0 }),
                Some(Command::Messages) if !is_printable(key) => Some(Overlay::Messages { scroll: 0 }),
                _ => None,
            };
            if let Some(opens) = opens {
                self.under = self.overlay.replace(opens);
                return;
            }
        }
        self.overlay_answer(key, chord);
        if self.overlay.is_none() {
            self.overlay = self.under.take();
        }
    }

    /// A key for the pop-up on top.
    fn overlay_answer(&mut self, key: &KeyEvent, chord: KeyChord) {
        match self.overlay {
            Some(Overlay::Help { .. }) => self.help_key(key, chord),
            Some(Overlay::Messages { .. }) => self.messages_key(key, chord),
            Some(Overlay::ConfirmQuit) => self.confirm_quit_key(key, chord),
            Some(Overlay::Prompt { .. }) => self.prompt_key(key),
            None => {}
        }
    }

    /// Help scrolls with the navigation keys; any other key closes it (the quit chord quits).
    fn help_key(&mut self, key: &KeyEvent, chord: KeyChord) {
        match scroll_step(key, self.keymap.lookup(Context::Navigate, chord)) {
            Some(step) => {
                if let Some(Overlay::Help { scroll }) = self.overlay.as_mut() {
                    *scroll = step.apply(*scroll, self.overlay_max.get());
                }
            }
            None => {
                let cmd = self.keymap.lookup(Context::Global, chord);
                if cmd == Some(Command::Quit) && key.code != KeyCode::Char('q') {
                    self.quit = true;
                }
                self.overlay = None;
            }
        }
    }

    /// Messages scroll like help, newest at the bottom: `scroll` counts rows up from it, so
    /// the steps turn round.
    fn messages_key(&mut self, key: &KeyEvent, chord: KeyChord) {
        match scroll_step(key, self.keymap.lookup(Context::Navigate, chord)) {
            Some(step) => {
                if let Some(Overlay::Messages { scroll }) = self.overlay.as_mut() {
                    *scroll = step.reversed().apply(*scroll, self.overlay_max.get());
                }
            }
            None => self.overlay = None,
        }
    }

    /// "Quit?": yes, Enter or the quit chord quit; no, Esc or q stay; any other key closes the
    /// question and does what it would have done.
    fn confirm_quit_key(&mut self, key: &KeyEvent, chord: KeyChord) {
        self.overlay = None;
        if matches!(key.code, KeyCode::Char('y' | 'Y') | KeyCode::Enter)
            || self.keymap.lookup(Context::Global, chord) == Some(Command::Quit) && key.code != KeyCode::Char('q')
        {
            self.quit = true;
        } else if !matches!(key.code, KeyCode::Esc | KeyCode::Char('q' | 'n' | 'N')) {
            // Not an answer: the key does what it would have done (`qu...` typed in
            // normal mode keeps the `u`).
            self.on_key(*key);
        }
    }

    /// A text prompt: Enter submits, Esc cancels, Tab completes, other keys edit. A removal
    /// question takes only y or n.
    fn prompt_key(&mut self, key: &KeyEvent) {
        if let Some(Overlay::Prompt { kind: PromptKind::ConfirmRemove(path), .. }) = &self.overlay {
            let path = path.clone();
            match key.code {
                KeyCode::Char('y') | KeyCode::Char('Y') => {
                    self.overlay = None;
                    self.requests.push(Request::RemoveRepo { repo: path });
                }
                KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Esc => self.overlay = None,
                _ => {}
            }
            return;
        }
        match key.code {
            KeyCode::Esc => self.overlay = None,
            KeyCode::Enter => self.submit_open_prompt(),
            KeyCode::Tab => self.complete_prompt(),
            _ => {
                if let Some(Overlay::Prompt { input, error, completion, .. }) = self.overlay.as_mut() {
                    input.edit(key);
                    *error = None;
                    *completion = None;
                }
            }
        }
    }

    /// Submits the open prompt; closes it, or keeps it with the engine's reason.
    fn submit_open_prompt(&mut self) {
        let Some(Overlay::Prompt { kind, input, .. }) = self.overlay.as_ref() else { return };
        let (kind, text) = (kind.clone(), input.text().to_string());
        match self.submit_prompt(kind, &text) {
            Ok(()) => self.overlay = None,
            Err(e) => {
                if let Some(Overlay::Prompt { error, .. }) = self.overlay.as_mut() {
                    *error = Some(e);
                }
            }
        }
    }

    /// Tab in a prompt: the next completion, else languages from the index's names, folders
    /// from the worker (the index, or the disk; the answer fills the field if the text is
    /// still what was typed).
    fn complete_prompt(&mut self) {
        let Some(Overlay::Prompt { kind, input, error, completion }) = self.overlay.as_mut() else { return };
        *error = None;
        if completion.as_mut().is_some_and(|c| c.cycle(input)) {
            return;
        }
        match kind {
            PromptKind::LangFilter(_) => {
                let items: Vec<String> = files::complete_language(input.text()).into_iter().map(String::from).collect();
                *completion = Completion::apply(items, input);
                if completion.is_none() {
                    *error = Some(format!("no language starts with `{}`", input.text().trim()));
                }
            }
            PromptKind::PathFilter(_) => self
                .requests
                .push(Request::CompletePath { repo: Some(self.repo.clone()), typed: input.text().to_string() }),
            PromptKind::AddRepo => {
                self.requests.push(Request::CompletePath { repo: None, typed: input.text().to_string() })
            }
            PromptKind::ConfirmRemove(_) => {}
        }
    }

    /// The add prompt again, with what was typed and why the engine refused it, when the
    /// repository just added failed its first index and no other overlay is open.
    fn reopen_refused_add(&mut self, repo: &Path, err: &str) {
        let Some((path, typed)) = self.pending_add.take() else { return };
        if path != repo || self.overlay.is_some() {
            return;
        }
        let input = TextField::single_line(&typed);
        self.overlay = Some(Overlay::Prompt {
            kind: PromptKind::AddRepo,
            input: Box::new(input),
            error: Some(err.to_string()),
            completion: None,
        });
    }

    fn submit_prompt(&mut self, kind: PromptKind, text: &str) -> Result<(), String> {
        match kind {
            PromptKind::AddRepo => {
                let path = crate::engine::protocol::expand_tilde(text.trim());
                if text.trim().is_empty() {
                    return Err("type the path of a directory".into());
                }
                if !path.exists() {
                    return Err(format!("{} does not exist (tab completes folders)", path.display()));
                }
                if !path.is_dir() {
                    return Err(format!("{} is not a directory", path.display()));
                }
                let path = std::fs::canonicalize(&path).unwrap_or(path);
                self.pending_add = Some((path.clone(), text.to_string()));
                self.requests.push(Request::Index { repo: path.clone(), rebuild: false });
                self.set_notice(Level::Info, format!("indexing {}", path.display()));
                Ok(())
            }
            PromptKind::PathFilter(_) => {
                let v = text.to_string();
                self.with_search(|s, cx| s.set_path_filter(&v, cx));
                Ok(())
            }
            PromptKind::LangFilter(_) => {
                let v = text.trim().to_string();
                if !v.is_empty() && files::canonical_language(&v).is_none() {
                    let like = files::complete_language(&v[..v.chars().next().map_or(0, char::len_utf8)]);
                    let like = if like.is_empty() { String::new() } else { format!(" (like {})", join_some(&like, 4)) };
                    return Err(format!("`{v}` is no language docdex indexes{like}; tab completes"));
                }
                self.with_search(|s, cx| s.set_lang_filter(&v, cx));
                Ok(())
            }
            PromptKind::ConfirmRemove(path) => {
                self.requests.push(Request::RemoveRepo { repo: path });
                Ok(())
            }
        }
    }

    /// Folders the worker found for `tab` in the path filter or the add-repo prompt.
    fn path_completions(&mut self, typed: &str, result: &Result<Vec<String>, String>) {
        let Some(Overlay::Prompt { kind, input, error, completion }) = self.overlay.as_mut() else { return };
        if input.text() != typed || !matches!(kind, PromptKind::PathFilter(_) | PromptKind::AddRepo) {
            return;
        }
        match result {
            Ok(items) => {
                *completion = Completion::apply(items.clone(), input);
                if completion.is_none() {
                    *error = Some(match kind {
                        PromptKind::PathFilter(_) => format!("no indexed folder starts with `{typed}`"),
                        _ => format!("no folder starts with `{typed}`"),
                    });
                }
            }
            Err(e) => *error = Some(e.clone()),
        }
    }

    fn on_paste(&mut self, text: &str) {
        if self.too_small.get() {
            return;
        }
        self.dirty = true;
        if let Some(Overlay::Prompt { input, .. }) = self.overlay.as_mut() {
            input.insert_str(text);
            return;
        }
        if self.overlay.is_some() {
            return;
        }
        // Like a typed letter in NOR: a paste goes back to the pane's text field (it was dropped).
        if self.pane(self.focus).typing() || self.with_pane(self.focus, |p, _| p.focus_text()) {
            self.with_pane(self.focus, |p, cx| p.paste(text, cx));
        } else {
            self.show_notice(Level::Info, format!("{} has no text field to paste into", self.focus.title()));
        }
    }

    fn on_mouse(&mut self, m: MouseEvent) {
        let Some(l) = self.layout.get() else { return };
        if self.overlay.is_some() {
            return;
        }
        if matches!(m.kind, MouseEventKind::Moved | MouseEventKind::Drag(_) | MouseEventKind::Up(_)) {
            return;
        }
        self.dirty = true;
        if widgets::contains(l.tabs, m.column, m.row) {
            if let MouseEventKind::Down(_) = m.kind {
                if let Some(p) = layout::tab_at(&layout::tabs(l.tabs, &self.tab_keys(), self.focus), m.column) {
                    self.focus_pane(p);
                }
            }
            return;
        }
        if widgets::contains(l.main, m.column, m.row) {
            self.with_pane(self.focus, |p, cx| p.mouse(&m, l.main, cx));
        }
    }

    fn on_tick(&mut self) {
        self.step = self.step.wrapping_add(1);
        if self.animating() {
            self.dirty = true;
        }
        if let Some((_, _, at)) = &self.notice {
            if self.clock.now().saturating_duration_since(*at) >= NOTICE_FOR {
                self.notice = None;
                self.dirty = true;
            }
        }
        for p in PaneId::ALL {
            self.with_pane(p, |pane, cx| pane.tick(cx));
        }
    }

    /// The status line for an index run that ended well: what changed in the current
    /// repository (nothing said when nothing did), that an added one is ready, or that the
    /// current one holds nothing to search.
    fn index_finished(&mut self, repo: &Path, s: &IndexSummary) {
        let changed = s.added + s.updated + s.deleted;
        if repo != self.repo {
            // `indexing <repo>` (an added repository) ends with its run.
            let files = widgets::count(s.files, "file", "files");
            self.set_notice(Level::Info, format!("{} is ready: {files} indexed", repo.display()));
        } else if s.note.is_some() {
            self.clear_started(repo);
        } else if s.files == 0 {
            // "indexed 0 files (0 changed)" left a newcomer in the wrong folder guessing.
            let text = format!(
                "{} holds no file docdex indexes: nothing to search; add the right folder in Repos ({}, a)",
                self.repo.display(),
                self.keymap.hint(Command::GotoRepos).unwrap_or_else(|| "alt+1".into())
            );
            self.set_notice(Level::Warn, text);
        } else if changed > 0 || s.rebuilt {
            let files = widgets::count(s.files, "file", "files");
            self.set_notice(Level::Info, format!("indexed {files} ({} changed)", widgets::thousands(changed)));
        } else {
            self.clear_started(repo);
        }
    }

    /// Drops the `indexing <repo>` notice of a run that ended with nothing to say.
    fn clear_started(&mut self, repo: &Path) {
        let started = format!("indexing {}", repo.display());
        if self.notice.as_ref().is_some_and(|(_, t, _)| *t == started) {
            self.notice = None;
        }
    }

    fn on_engine(&mut self, e: EngineEvent) {
        self.dirty = true;
        if let EngineEvent::Chat(ChatUpdate::Done { unavailable: Some(_), .. }) = &e {
            // No model could answer: check the provider, so the status bar says why.
            self.requests.push(Request::CheckProvider);
        }
        if let EngineEvent::IndexFinished { repo, result: Ok(_) } = &e {
            if self.pending_add.as_ref().is_some_and(|(p, _)| p == repo) {
                self.pending_add = None;
            }
        }
        match &e {
            EngineEvent::Repos(Ok(rows)) => self.repos_loaded(rows),
            EngineEvent::IndexFinished { repo, result: Err(err) } => {
                let name = repo.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                self.set_notice(Level::Error, format!("indexing {name} failed: {err}"));
                self.reopen_refused_add(repo, err);
            }
            EngineEvent::IndexFinished { repo, result: Ok(s) } => self.index_finished(repo, s),
            EngineEvent::RepoRemoved { repo, result: Ok(()) } => {
                // The current repository stays listed (the workbench still works on it).
                let still = if *repo == self.repo { "; it stays listed as the current repository" } else { "" };
                self.set_notice(
                    Level::Info,
                    format!("removed {} from the registry (its index is kept){still}", repo.display()),
                );
            }
            EngineEvent::Provider(p) => self.provider = p.clone(),
            EngineEvent::PathCompletions { typed, result } => self.path_completions(typed, result),
            EngineEvent::EditTarget { result: Ok(path), line } => {
                self.effects.push(Effect::OpenEditor { path: path.clone(), line: *line })
            }
            EngineEvent::EditTarget { result: Err(why), .. } => self.show_notice(Level::Warn, why.clone()),
            EngineEvent::Conversation(Ok(_)) => self.focus_pane(PaneId::Chat),
            EngineEvent::Conversation(Err(e)) => {
                self.set_notice(Level::Error, format!("cannot open that session: {e}"))
            }
            EngineEvent::Chat(
                ChatUpdate::Done { session_id: Some(id), .. } | ChatUpdate::Failed { session_id: Some(id), .. },
            ) => {
                // The turn was logged: show its session in the DAG pane.
                self.requests.push(Request::LoadDag { repo: self.repo.clone(), session: Some(id.clone()) });
            }
            _ => {}
        }
        for p in PaneId::ALL {
            self.with_pane(p, |pane, cx| pane.engine(&e, cx));
        }
    }

    /// Keeps the current repository's overview; the first time, brings its index up to date in
    /// the background (builds it when missing, catches up with edits made since the last run).
    fn repos_loaded(&mut self, rows: &[RepoOverview]) {
        self.overview = rows.iter().find(|r| r.path == self.repo).cloned();
        if self.started_index {
            return;
        }
        if let Some(o) = &self.overview {
            self.started_index = true;
            if o.state != RepoState::Updating && !o.watching {
                self.requests.push(Request::Index { repo: self.repo.clone(), rebuild: false });
            }
        }
    }

    fn tab_keys(&self) -> Vec<(PaneId, String)> {
        PaneId::ALL
            .iter()
            .map(|p| {
                let keys = self.keymap.keys(p.goto());
                let short = keys
                    .iter()
                    .map(|k| k.to_string())
                    .find(|k| k.chars().count() == 1)
                    .or_else(|| keys.first().map(|k| k.to_string()))
                    .unwrap_or_default();
                (*p, short)
            })
            .collect()
    }

    /// "alt+m: all messages", for lines that cut a message.
    fn messages_hint(&self) -> String {
        match self.keymap.hint_for(Command::Messages, Some(false)) {
            Some(k) => format!("{k}: all messages"),
            None => String::new(),
        }
    }

    /// `Some(multi_line)` while the focused pane's text field has focus.
    fn field_in_focus(&self) -> Option<bool> {
        let p = self.pane(self.focus);
        if p.typing() {
            p.text_field()
        } else {
            None
        }
    }

    /// Key hints for the status bar, for the mode: only keys that work in it.
    fn hints(&self, budget: usize) -> Vec<(String, &'static str)> {
        let close = match &self.overlay {
            Some(Overlay::Help { .. } | Overlay::Messages { .. }) => Some("close"),
            Some(Overlay::ConfirmQuit) => Some("stay"),
            Some(Overlay::Prompt { .. }) => Some("cancel"),
            None => None,
        };
        if let Some(what) = close {
            let mut out = vec![("esc".to_string(), what)];
            if let Some(k) = self.keymap.hint_for(Command::Quit, Some(false)) {
                out.push((k, "quit"));
            }
            return out;
        }
        let field = self.field_in_focus();
        let mut out: Vec<(String, &'static str)> = Vec::new();
        let mut used = 0;
        let mut push = |out: &mut Vec<(String, &'static str)>, k: String, label: &'static str, must: bool| {
            let w = k.len() + label.len() + 2;
            if used + w > budget && !must {
                return;
            }
            used += w;
            out.push((k, label));
        };
        if let Some(k) = self.keymap.hint_for(Command::Help, field) {
            push(&mut out, k, "help", true);
        }
        match field {
            Some(_) => push(&mut out, "esc".into(), self.pane(self.focus).esc_label(), true),
            None if self.pane(self.focus).text_field().is_some() => {
                let cmd = if self.focus == PaneId::Chat { Command::FocusInput } else { Command::FocusQuery };
                if let Some(k) = self.keymap.hint_for(cmd, None) {
                    push(&mut out, k, "type", false);
                }
            }
            None => {}
        }
        if self.pane(self.focus).asking() {
            // A yes/no question: its own line says the answers; the state keeps its room.
        } else if field.is_some() {
            // Digits are text here: say how to switch panes without leaving the field.
            let first = self.keymap.hint_for(Command::GotoRepos, field);
            let last = self.keymap.hint_for(Command::GotoProfile, field);
            if let (Some(a), Some(b)) = (first, last) {
                let b = b.rsplit('+').next().unwrap_or_default().to_string();
                push(&mut out, format!("{a}…{b}"), "pane", false);
            }
        } else if let Some(k) = self.keymap.hint_for(Command::NextPane, None) {
            push(&mut out, k, "pane", false);
        }
        for (c, label) in self.pane(self.focus).hints() {
            if let Some(k) = self.keymap.hint_for(c, field) {
                push(&mut out, k, label, false);
            }
        }
        if let Some(k) = self.keymap.hint_for(Command::Quit, field) {
            push(&mut out, k, "quit", true);
        }
        out
    }

    /// Draws the whole screen.
    pub fn render(&self, frame: &mut Frame<'_>) {
        let area = frame.area();
        let cursor = self.render_buffer(area, frame.buffer_mut());
        if let Some((x, y)) = cursor {
            frame.set_cursor_position((x, y));
        }
    }

    /// Draws into a buffer; returns where the terminal cursor goes, if a text field has focus.
    pub fn render_buffer(&self, area: Rect, buf: &mut Buffer) -> Option<(u16, u16)> {
        let Some(l) = layout::layout(area) else {
            self.layout.set(None);
            self.too_small.set(true);
            self.render_too_small(area, buf);
            return None;
        };
        self.layout.set(Some(l));
        self.too_small.set(false);
        self.render_tabs(l.tabs, buf);
        let rc = RenderCtx {
            theme: &self.theme,
            keymap: &self.keymap,
            focused: self.overlay.is_none(),
            epoch_ms: self.clock.epoch_ms(),
            step: self.step,
            repo: &self.repo,
            field: self.field_in_focus(),
        };
        let cursor = self.pane(self.focus).render(l.main, buf, &rc);
        self.render_status(l, buf);
        match &self.overlay {
            Some(overlay) => self.render_overlay(overlay, l.main, buf),
            None => cursor,
        }
    }

    /// The whole screen's message when the terminal is below [`layout::MIN_SIZE`].
    fn render_too_small(&self, area: Rect, buf: &mut Buffer) {
        let (w, h) = layout::MIN_SIZE;
        let msg = format!(
            "docdex needs at least {w}x{h} (this is {}x{}); enlarge the window; keys wait for it (ctrl+c quits)",
            area.width, area.height
        );
        for (k, line) in widgets::wrap(&msg, area.width as usize).iter().take(area.height as usize).enumerate() {
            buf.set_stringn(area.x, area.y + k as u16, line, area.width as usize, self.theme.style(Slot::Warning));
        }
    }

    /// The tab row, the focused pane's tab highlighted, and the brand when there is room.
    fn render_tabs(&self, tabs: Rect, buf: &mut Buffer) {
        let t = &self.theme;
        for (id, label, x, _) in layout::tabs(tabs, &self.tab_keys(), self.focus) {
            let style = if id == self.focus { t.style(Slot::TabActive) } else { t.style(Slot::Tab) };
            buf.set_string(x, tabs.y, label, style);
        }
        let brand = " docdex ";
        if tabs.width > 80 {
            buf.set_string(tabs.x + tabs.width - brand.len() as u16, tabs.y, brand, t.style(Slot::Muted));
        }
    }

    /// The status bar, and the current notice: in the bar, or on its own lines above it.
    fn render_status(&self, l: layout::AppLayout, buf: &mut Buffer) {
        let t = &self.theme;
        let name = self.repo_name();
        let bar = |hints: &[(String, &'static str)], buf: &mut Buffer| {
            StatusInfo {
                repo: &name,
                overview: self.overview.as_ref(),
                progress: self.repos.progress(&self.repo),
                provider: &self.provider,
                notice: self.notice.as_ref().map(|(l, t, _)| (*l, t.as_str())),
                hints,
                mode: self.mode(),
                step: self.step,
            }
            .render(l.status, buf, t)
        };
        let budget = l.status.width as usize * 2 / 5;
        let mut notice_shown = bar(&self.hints(budget), buf);
        if !notice_shown {
            // A notice lasts seconds: while it shows, hints give way (the pane's first, down to
            // the ones that always stay: help, the mode key, quit) if that lets it into the bar;
            // when even that is not enough it takes a line of its own and the hints stay whole.
            let clear = |buf: &mut Buffer| {
                let w = l.status.width as usize;
                buf.set_stringn(l.status.x, l.status.y, " ".repeat(w), w, t.style(Slot::StatusBar));
            };
            for smaller in [budget * 2 / 3, budget / 3, 0] {
                clear(buf);
                notice_shown = bar(&self.hints(smaller), buf);
                if notice_shown {
                    break;
                }
            }
            if !notice_shown {
                clear(buf);
                bar(&self.hints(budget), buf);
            }
        }
        if !notice_shown && self.overlay.is_none() {
            if let Some((level, text, _)) = &self.notice {
                // A notice that does not fit the bar gets its own line(s) above it.
                let hint = self.messages_hint();
                widgets::messages::own_lines(l.main, l.status.y, buf, *level, text, &hint, t);
            }
        }
    }

    /// Draws an overlay over the main area; returns the cursor of its text field, if any.
    fn render_overlay(&self, overlay: &Overlay, main: Rect, buf: &mut Buffer) -> Option<(u16, u16)> {
        let t = &self.theme;
        match overlay {
            Overlay::Help { scroll } => {
                let home = self.home.display().to_string();
                let hc = help::HelpCtx {
                    pane: self.focus.context(),
                    field: self.pane(self.focus).text_field(),
                    home: &home,
                    problems: &self.problems,
                    moves: self.pane(self.focus).moves(),
                };
                let lines = help::help_lines(&self.keymap, t, &hc);
                self.overlay_max.set(help::render(main, buf, &lines, t, *scroll));
                None
            }
            Overlay::Messages { scroll } => {
                let max = widgets::messages::render(main, buf, &self.messages, t, *scroll, self.messages_hint());
                self.overlay_max.set(max);
                None
            }
            Overlay::ConfirmQuit => {
                self.render_confirm_quit(main, buf);
                None
            }
            Overlay::Prompt { kind, input, error, completion } => {
                self.render_prompt(main, buf, kind, input, error.as_deref(), completion.as_ref())
            }
        }
    }

    /// The quit confirmation box.
    fn render_confirm_quit(&self, main: Rect, buf: &mut Buffer) {
        let t = &self.theme;
        let chord = self.keymap.hint_for(Command::Quit, Some(false)).unwrap_or_else(|| "ctrl+c".into());
        let text = format!("y or enter quits; any other key stays. {chord} quits at once.");
        let w = main.width.saturating_sub(8).min(52);
        // As many rows as the question wraps to (three at 40 columns, where two cut it).
        let lines = widgets::wrap(&text, w.saturating_sub(4) as usize);
        let r = centered(main, w, (lines.len() as u16 + 2).min(main.height));
        Clear.render(r, buf);
        let block = frame(" Quit docdex? ", true, t);
        let inner = block.inner(r);
        block.render(r, buf);
        for (k, piece) in lines.iter().take(inner.height as usize).enumerate() {
            buf.set_stringn(
                inner.x + 1,
                inner.y + k as u16,
                piece,
                inner.width.saturating_sub(1) as usize,
                t.style(Slot::Text),
            );
        }
    }

    fn render_prompt(
        &self,
        area: Rect,
        buf: &mut Buffer,
        kind: &PromptKind,
        input: &TextField,
        error: Option<&str>,
        completion: Option<&Completion>,
    ) -> Option<(u16, u16)> {
        let t = &self.theme;
        let (title, hint) = prompt_texts(kind);
        let (msg, style) = match error {
            Some(e) => (e, t.style(Slot::Error)),
            None => (hint, t.style(Slot::Muted)),
        };
        // The box grows for a message longer than 3 rows (an engine refusal with its advice),
        // up to 8; what still does not fit ends in `…` rather than stopping mid-sentence.
        let width = area.width.saturating_sub(8).min(72);
        let mut lines = widgets::wrap(msg, (width as usize).saturating_sub(3));
        let r = centered(area, width, lines.len().clamp(3, 8) as u16 + 4);
        Clear.render(r, buf);
        let block = frame(title, true, t);
        let inner = block.inner(r);
        block.render(r, buf);
        if let PromptKind::ConfirmRemove(path) = kind {
            self.render_remove_question(inner, buf, path);
            return None;
        }
        buf.set_string(inner.x, inner.y, "›", t.style(Slot::Accent));
        let field = Rect { x: inner.x + 2, width: inner.width.saturating_sub(3), height: 1, y: inner.y };
        let cursor = input.render_line(field, buf, t.style(Slot::Input), None);
        // What tab offers (the language prompt: as you type), the one in the field marked.
        let live;
        let offered: Option<(&[String], Option<usize>)> = match (completion, kind) {
            (Some(c), _) => Some((&c.items, c.pick)),
            (None, PromptKind::LangFilter(_)) if !input.text().trim().is_empty() && !input.is_selected() => {
                live = files::complete_language(input.text()).into_iter().map(String::from).collect::<Vec<_>>();
                Some((&live, None))
            }
            _ => None,
        };
        if let Some((items, pick)) = offered {
            buf.set_line(inner.x + 1, inner.y + 1, &completion_line(items, pick, t), inner.width.saturating_sub(2));
        }
        let rows = inner.height.saturating_sub(2) as usize;
        if lines.len() > rows && rows > 0 {
            let last = format!("{} …", lines[rows - 1]);
            lines[rows - 1] = widgets::truncate(&last, inner.width as usize - 1);
        }
        for (k, l) in lines.iter().take(rows).enumerate() {
            buf.set_line(
                inner.x + 1,
                inner.y + 2 + k as u16,
                &Line::from(Span::styled(l.clone(), style)),
                inner.width - 1,
            );
        }
        Some(cursor)
    }

    /// The removal question in place of a text field.
    fn render_remove_question(&self, inner: Rect, buf: &mut Buffer, path: &std::path::Path) {
        let t = &self.theme;
        buf.set_stringn(
            inner.x + 1,
            inner.y,
            widgets::truncate(&format!("Forget {}?", path.display()), inner.width as usize - 2),
            inner.width as usize,
            t.style(Slot::Text),
        );
        buf.set_stringn(
            inner.x + 1,
            inner.y + 1,
            "Its index stays on disk. y removes, n or esc keeps it.",
            inner.width as usize - 1,
            t.style(Slot::Muted),
        );
        // How to delete the index too (the pane does not purge), on the rows left.
        let purge = format!("To delete its index too: docdex repo remove {} --purge", path.display());
        let rows = inner.height.saturating_sub(3) as usize;
        for (k, l) in widgets::wrap(&purge, inner.width as usize - 2).iter().take(rows).enumerate() {
            buf.set_stringn(inner.x + 1, inner.y + 2 + k as u16, l, inner.width as usize - 1, t.style(Slot::Muted));
        }
    }
}

/// A prompt's title and the hint shown under its field.
fn prompt_texts(kind: &PromptKind) -> (&'static str, &'static str) {
    match kind {
        PromptKind::AddRepo => (
            " Add a repository ",
            "Path of a directory to index (~ works). tab completes folders, enter adds, esc cancels.",
        ),
        PromptKind::PathFilter(_) => (
            " Path filter ",
            "Only files under this path prefix (empty clears). tab completes the index's folders, enter applies.",
        ),
        PromptKind::LangFilter(_) => (
            " Language filter ",
            "python, rust, typescript, markdown, ... or py, rs, ts, md (empty clears). tab completes, enter applies.",
        ),
        PromptKind::ConfirmRemove(_) => (" Remove repository ", ""),
    }
}

/// What tab offers, the pick marked.
fn completion_line(items: &[String], pick: Option<usize>, t: &Theme) -> Line<'static> {
    let mut spans = vec![Span::styled("tab: ", t.style(Slot::Muted))];
    if items.is_empty() {
        spans.push(Span::styled("nothing to complete", t.style(Slot::Muted)));
    }
    for (i, item) in items.iter().enumerate() {
        let style = if pick == Some(i) { t.style(Slot::Selection) } else { t.style(Slot::Text) };
        spans.push(Span::styled(item.clone(), style));
        spans.push(Span::raw("  "));
    }
    Line::from(spans)
}

/// The first `n` names, comma-separated, with `…` when there are more.
fn join_some(names: &[&str], n: usize) -> String {
    let mut s = names.iter().take(n).copied().collect::<Vec<_>>().join(", ");
    if names.len() > n {
        s.push_str(", …");
    }
    s
}

/// A key that types a character (no `ctrl` or `alt`).
/// A move through the help or the message log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ScrollStep {
    Down(usize),
    Up(usize),
    Top,
    Bottom,
}

impl ScrollStep {
    /// The offset from the top after the step, kept within `0..=max`.
    fn apply(self, scroll: usize, max: usize) -> usize {
        let scroll = scroll.min(max);
        match self {
            ScrollStep::Down(n) => scroll.saturating_add(n).min(max),
            ScrollStep::Up(n) => scroll.saturating_sub(n),
            ScrollStep::Top => 0,
            ScrollStep::Bottom => max,
        }
    }

    /// The same step for a list read from the bottom up.
    fn reversed(self) -> ScrollStep {
        match self {
            ScrollStep::Down(n) => ScrollStep::Up(n),
            ScrollStep::Up(n) => ScrollStep::Down(n),
            ScrollStep::Top => ScrollStep::Bottom,
            ScrollStep::Bottom => ScrollStep::Top,
        }
    }
}

/// The scroll a key means in an overlay: the arrows, `j`/`k`, `space` and the paging keys,
/// and whatever the keymap binds to moving in `[navigate]` (`g`/`G`, vim's `ctrl+f`/`ctrl+b`),
/// so the keys help lists for moving also move through help. `None`: the key closes it.
fn scroll_step(key: &KeyEvent, nav: Option<Command>) -> Option<ScrollStep> {
    match (key.code, nav) {
        (KeyCode::Down | KeyCode::Char('j'), _) | (_, Some(Command::Down)) => Some(ScrollStep::Down(1)),
        (KeyCode::Up | KeyCode::Char('k'), _) | (_, Some(Command::Up)) => Some(ScrollStep::Up(1)),
        (KeyCode::PageDown | KeyCode::Char(' '), _) | (_, Some(Command::PageDown)) => Some(ScrollStep::Down(10)),
        (KeyCode::PageUp, _) | (_, Some(Command::PageUp)) => Some(ScrollStep::Up(10)),
        (KeyCode::Home, _) | (_, Some(Command::Top)) => Some(ScrollStep::Top),
        (KeyCode::End, _) | (_, Some(Command::Bottom)) => Some(ScrollStep::Bottom),
        _ => None,
    }
}

fn is_printable(key: &KeyEvent) -> bool {
    matches!(key.code, KeyCode::Char(_)) && !key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
}

/// The provider as configured, before any check.
pub fn configured_provider(cfg: &crate::config::LlmConfig) -> ProviderStatus {
    ProviderStatus { provider: cfg.provider.clone(), model: cfg.default_model.clone(), state: ProviderState::Unchecked }
}

/// Runs `f` with a fresh pane context (the app's clock, repository and bindings); returns
/// what it returned and the actions it emitted, for the app to route.
fn in_cx<R>(
    clock: &dyn Clock,
    repo: &Path,
    debounce: Duration,
    keymap: &Keymap,
    f: impl FnOnce(&mut Cx<'_>) -> R,
) -> (R, Vec<Action>) {
    let mut out = Vec::new();
    let mut cx = Cx { now: clock.now(), epoch_ms: clock.epoch_ms(), repo, debounce, keymap, out: &mut out };
    let r = f(&mut cx);
    (r, out)
}
