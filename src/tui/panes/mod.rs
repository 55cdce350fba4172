//! The panes of the workbench and the [`Pane`] trait they share. A pane owns
//! its state, turns commands and typed text into state changes and
//! [`Action`]s, takes engine events, and draws itself from `&self`. It never
//! calls the engine or another pane: the app routes its actions.

pub mod chat;
pub mod dag;
pub mod impact;
pub mod profile;
pub mod repos;
pub mod search;
pub mod trace;

use super::action::{Action, Level};
use super::event::{EngineEvent, Request};
use super::keymap::{Command, Keymap};
pub use super::pane_id::PaneId;
use super::theme::Theme;
use crossterm::event::{KeyEvent, MouseEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use std::path::Path;
use std::time::{Duration, Instant};

/// What a pane may read and emit while handling input or events.
pub struct Cx<'a> {
    /// Monotonic now (from the injected clock).
    pub now: Instant,
    /// Wall clock, epoch ms (from the injected clock).
    pub epoch_ms: u64,
    /// The current repository.
    pub repo: &'a Path,
    /// Quiet time before search-as-you-type fires.
    pub debounce: Duration,
    /// Bindings (to name a key in a notice).
    pub keymap: &'a Keymap,
    /// Actions emitted, routed by the app afterwards.
    pub out: &'a mut Vec<Action>,
}

impl Cx<'_> {
    /// Emits an action.
    pub fn emit(&mut self, a: Action) {
        self.out.push(a);
    }

    /// Emits an engine request.
    pub fn request(&mut self, r: Request) {
        self.out.push(Action::Request(r));
    }

    /// Emits a status-bar notice.
    pub fn notify(&mut self, level: Level, text: impl Into<String>) {
        self.out.push(Action::Notify(level, text.into()));
    }

    /// The first key bound to `cmd` that works in a text field too, else its first key, for a
    /// notice ("ctrl+s"), or "unbound".
    pub fn key(&self, cmd: Command) -> String {
        self.keymap.hint_for(cmd, Some(true)).or_else(|| self.keymap.hint(cmd)).unwrap_or_else(|| "unbound".into())
    }
}

/// What a pane may read while drawing.
pub struct RenderCtx<'a> {
    /// Colours.
    pub theme: &'a Theme,
    /// Bindings (for hints).
    pub keymap: &'a Keymap,
    /// Whether this pane has focus.
    pub focused: bool,
    /// Wall clock, epoch ms.
    pub epoch_ms: u64,
    /// Animation step (advances with ticks).
    pub step: u64,
    /// The current repository.
    pub repo: &'a Path,
    /// `Some(multi_line)` while a text field has focus (insert mode): hints then name keys
    /// the field does not take.
    pub field: Option<bool>,
}

impl RenderCtx<'_> {
    /// The first key bound to a command that works in the current mode, for hints ("ctrl+t"),
    /// or "unbound".
    pub fn key(&self, cmd: Command) -> String {
        self.keymap.hint_for(cmd, self.field).unwrap_or_else(|| "unbound".into())
    }
}

/// Every `[navigate]` move.
pub const ALL_MOVES: &[Command] = &[
    Command::Up,
    Command::Down,
    Command::Left,
    Command::Right,
    Command::PageUp,
    Command::PageDown,
    Command::Top,
    Command::Bottom,
    Command::Select,
    Command::Back,
];

/// The moves of a list without sideways moves (`left`/`right`, `h`/`l` do nothing there).
pub const LIST_MOVES: &[Command] = &[
    Command::Up,
    Command::Down,
    Command::PageUp,
    Command::PageDown,
    Command::Top,
    Command::Bottom,
    Command::Select,
    Command::Back,
];

/// A pane of the workbench.
pub trait Pane {
    /// Which pane this is.
    fn id(&self) -> PaneId;

    /// True while a text field has focus: printable keys are typed instead of resolved as commands.
    fn typing(&self) -> bool {
        false
    }

    /// `Some(multi_line)` when the pane has a text field (the search query, the chat message).
    fn text_field(&self) -> Option<bool> {
        None
    }

    /// True while the pane asks a yes/no question in place of its text field: keys still go
    /// to the pane first, but nothing is typed, so the mode tag says NOR.
    fn asking(&self) -> bool {
        false
    }

    /// What `esc` does in the pane's text field, for the footer: `normal` (leaves the field,
    /// the text stays) unless the field belongs to a form that `esc` closes.
    fn esc_label(&self) -> &'static str {
        "normal"
    }

    /// Gives the pane's text field focus (normal mode -> insert mode); false without one.
    fn focus_text(&mut self) -> bool {
        false
    }

    /// Handles a command from the keymap; returns false when the pane has no use for it.
    fn command(&mut self, cmd: Command, cx: &mut Cx<'_>) -> bool;

    /// Handles a key while [`Pane::typing`] (text editing); returns false if it was not an editing key.
    fn text(&mut self, _key: &KeyEvent, _cx: &mut Cx<'_>) -> bool {
        false
    }

    /// Pasted text while typing.
    fn paste(&mut self, _text: &str, _cx: &mut Cx<'_>) {}

    /// An engine event (every pane sees every event and picks what concerns it).
    fn engine(&mut self, _event: &EngineEvent, _cx: &mut Cx<'_>) {}

    /// Time passed (debounce deadlines, polling).
    fn tick(&mut self, _cx: &mut Cx<'_>) {}

    /// The pane became visible.
    fn focused(&mut self, _cx: &mut Cx<'_>) {}

    /// A mouse event inside the pane's area.
    fn mouse(&mut self, _event: &MouseEvent, _area: Rect, _cx: &mut Cx<'_>) {}

    /// The earliest time the pane needs a tick (a debounce deadline), if any.
    fn deadline(&self) -> Option<Instant> {
        None
    }

    /// Key hints for the status bar: (command, short label).
    fn hints(&self) -> Vec<(Command, &'static str)> {
        Vec::new()
    }

    /// The `[navigate]` moves the pane acts on: help lists these alone, so it never names a
    /// key that does something else here (in NOR a letter that is no move is typed).
    fn moves(&self) -> &'static [Command] {
        ALL_MOVES
    }

    /// Draws the pane into `area`; returns the terminal cursor position when a text field has focus.
    fn render(&self, area: Rect, buf: &mut Buffer, cx: &RenderCtx<'_>) -> Option<(u16, u16)>;
}

/// A pane that says plainly what it needs before it can work.
pub fn needs(area: Rect, buf: &mut Buffer, theme: &Theme, title: &str, lines: &[&str]) {
    use super::theme::Slot;
    let w = area.width.saturating_sub(4) as usize;
    let mut y = area.y + 1;
    let x = area.x + 2;
    buf.set_stringn(x, y, super::widgets::truncate(title, w), w, theme.style(Slot::Accent));
    y += 2;
    for l in lines {
        for piece in super::widgets::wrap(l, w) {
            if y >= area.y + area.height {
                return;
            }
            buf.set_stringn(x, y, &piece, w, theme.style(Slot::Text));
            y += 1;
        }
    }
}
