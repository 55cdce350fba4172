//! The waterfall trace pane: for the selected chat turn, the tiers that ran,
//! gate scores against the threshold, token budget bars per slot, dropped
//! snippets and timings (drawn by `widgets::trace`). Each chat turn's trace
//! arrives as an engine event when the turn ends (the worker converts the
//! engine's `ChatTrace` with `tui::views::trace_view`). The pane follows the turn
//! the chat pane shows (the app calls [`TracePane::follow`] when that changes:
//! the turn of the selected citation, else the newest when the chat is scrolled to
//! the bottom, else the turn taking most of the chat's view); `[`/`]` browse the
//! other turns.

use super::{needs, Cx, Pane, PaneId, RenderCtx};
use crate::tui::event::EngineEvent;
use crate::tui::keymap::Command;
use crate::tui::widgets::frame;
use crate::tui::widgets::trace::TraceView;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;

/// The moves of the trace: scrolling, `left`/`right` for the turns, and `esc` (which does
/// nothing more here, as everywhere); no `enter`: there is nothing to choose.
const TRACE_MOVES: &[Command] = &[
    Command::Up,
    Command::Down,
    Command::Left,
    Command::Right,
    Command::PageUp,
    Command::PageDown,
    Command::Top,
    Command::Bottom,
    Command::Back,
];

/// The trace pane's state.
#[derive(Debug, Default)]
pub struct TracePane {
    traces: Vec<TraceView>,
    selected: usize,
    scroll: usize,
    /// The chat turn to show, as the chat pane last said (its trace may not have arrived yet).
    followed: Option<u64>,
    /// The chat shows a conversation with no turn yet: nothing is shown until one arrives or
    /// `[`/`]` pick a turn.
    idle: bool,
    /// How far the shown trace scrolls before its last line reaches the bottom (set when drawn).
    max_scroll: std::cell::Cell<usize>,
}

impl TracePane {
    /// Traces received, in turn order.
    pub fn traces(&self) -> &[TraceView] {
        &self.traces
    }

    /// The trace shown.
    pub fn shown(&self) -> Option<&TraceView> {
        if self.idle {
            return None;
        }
        self.traces.get(self.selected)
    }

    /// The chat shows a conversation with no turn yet: show none (the earlier turns stay a
    /// `[`/`]` away), and the next trace to arrive.
    pub fn follow_nothing(&mut self) {
        self.followed = None;
        self.idle = !self.traces.is_empty();
        self.scroll = 0;
    }

    /// Shows the trace of chat turn `turn` now, or as soon as it arrives (a turn still being
    /// answered has none yet: the pane keeps what it shows until then).
    pub fn follow(&mut self, turn: u64) {
        self.followed = Some(turn);
        self.idle = false;
        if let Some(i) = self.traces.iter().position(|t| t.turn == turn) {
            self.selected = i;
            self.scroll = 0;
        }
    }
}

impl Pane for TracePane {
    fn id(&self) -> PaneId {
        PaneId::Trace
    }

    /// `left`/`right` go to the previous and next turn; there is nothing to choose with `enter`.
    fn moves(&self) -> &'static [Command] {
        TRACE_MOVES
    }

    fn command(&mut self, cmd: Command, _cx: &mut Cx<'_>) -> bool {
        match cmd {
            Command::NextTurn | Command::Right => {
                self.selected = if self.idle { self.traces.len() } else { self.selected + 1 };
                self.selected = self.selected.min(self.traces.len().saturating_sub(1));
                self.idle = false;
                self.scroll = 0;
            }
            Command::PrevTurn | Command::Left => {
                self.selected = if self.idle { self.traces.len() } else { self.selected }.saturating_sub(1);
                self.idle = false;
                self.scroll = 0;
            }
            // Scrolling stops where the last line reaches the bottom.
            Command::Down => self.scroll = (self.scroll + 1).min(self.max_scroll.get()),
            Command::Up => self.scroll = self.scroll.saturating_sub(1),
            Command::PageDown => self.scroll = (self.scroll + 10).min(self.max_scroll.get()),
            Command::PageUp => self.scroll = self.scroll.saturating_sub(10),
            Command::Top => self.scroll = 0,
            Command::Bottom => self.scroll = self.max_scroll.get(),
            _ => return false,
        }
        true
    }

    fn engine(&mut self, event: &EngineEvent, _cx: &mut Cx<'_>) {
        if let EngineEvent::Trace(t) = event {
            let shown = self.shown().map(|x| x.turn);
            match self.traces.iter().position(|x| x.turn == t.turn) {
                Some(i) => self.traces[i] = t.clone(),
                None => {
                    self.traces.push(t.clone());
                    self.traces.sort_by_key(|x| x.turn);
                }
            }
            // Show the arriving trace when it is the followed turn's; otherwise keep what is shown.
            let show = if self.followed.is_none_or(|f| f == t.turn) { Some(t.turn) } else { shown };
            self.idle = false;
            self.selected = show.and_then(|s| self.traces.iter().position(|x| x.turn == s)).unwrap_or(0);
            if show == Some(t.turn) {
                self.scroll = 0;
            }
        }
    }

    fn hints(&self) -> Vec<(Command, &'static str)> {
        vec![(Command::PrevTurn, "prev turn"), (Command::NextTurn, "next turn")]
    }

    fn render(&self, area: Rect, buf: &mut Buffer, cx: &RenderCtx<'_>) -> Option<(u16, u16)> {
        let t = cx.theme;
        let title = if self.traces.is_empty() || self.idle {
            " Waterfall trace ".to_string()
        } else {
            format!(" Waterfall trace · turn {} of {} ", self.selected + 1, self.traces.len())
        };
        let block = frame(title, cx.focused, t);
        let inner = block.inner(area);
        block.render(area, buf);
        match self.shown() {
            Some(trace) => {
                let lines = trace.render(inner, buf, t, self.scroll);
                self.max_scroll.set(lines.saturating_sub(inner.height as usize));
            }
            None if self.idle => needs(
                inner,
                buf,
                t,
                "No turn in this conversation yet",
                &["Its trace appears here once you ask something; [ and ] browse the turns of earlier conversations."],
            ),
            None => needs(
                inner,
                buf,
                t,
                "No chat turns yet",
                &["Ask something in the Chat pane; its trace appears here: the tiers that ran, the gate's confidence against its threshold, the token budget per slot, what was dropped, and where the time went."],
            ),
        }
        None
    }
}
