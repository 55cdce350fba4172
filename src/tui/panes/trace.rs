//! The waterfall trace pane: for the selected chat turn, the tiers that ran,
//! gate scores against the threshold, token budget bars per slot, dropped
//! snippets and timings (drawn by `widgets::trace`). Each chat turn's trace
//! arrives as an engine event when the turn ends (the worker converts the
//! engine's `ChatTrace` with `tui::views::trace_view`); the newest is shown,
//! and earlier turns are a key away.

use super::{needs, Cx, Pane, PaneId, RenderCtx};
use crate::tui::event::EngineEvent;
use crate::tui::keymap::Command;
use crate::tui::widgets::frame;
use crate::tui::widgets::trace::TraceView;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;

/// The trace pane's state.
#[derive(Debug, Default)]
pub struct TracePane {
    traces: Vec<TraceView>,
    selected: usize,
    scroll: usize,
}

impl TracePane {
    /// Traces received, in turn order.
    pub fn traces(&self) -> &[TraceView] {
        &self.traces
    }
}

impl Pane for TracePane {
    fn id(&self) -> PaneId {
        PaneId::Trace
    }

    fn command(&mut self, cmd: Command, _cx: &mut Cx<'_>) -> bool {
        match cmd {
            Command::NextTurn | Command::Right => {
                self.selected = (self.selected + 1).min(self.traces.len().saturating_sub(1));
                self.scroll = 0;
            }
            Command::PrevTurn | Command::Left => {
                self.selected = self.selected.saturating_sub(1);
                self.scroll = 0;
            }
            Command::Down => self.scroll += 1,
            Command::Up => self.scroll = self.scroll.saturating_sub(1),
            Command::PageDown => self.scroll += 10,
            Command::PageUp => self.scroll = self.scroll.saturating_sub(10),
            Command::Top => self.scroll = 0,
            _ => return false,
        }
        true
    }

    fn engine(&mut self, event: &EngineEvent, _cx: &mut Cx<'_>) {
        if let EngineEvent::Trace(t) = event {
            match self.traces.iter().position(|x| x.turn == t.turn) {
                Some(i) => self.traces[i] = t.clone(),
                None => {
                    self.traces.push(t.clone());
                    self.traces.sort_by_key(|x| x.turn);
                }
            }
            // Follow the newest turn.
            self.selected = self.traces.len() - 1;
            self.scroll = 0;
        }
    }

    fn hints(&self) -> Vec<(Command, &'static str)> {
        vec![(Command::PrevTurn, "prev turn"), (Command::NextTurn, "next turn")]
    }

    fn render(&self, area: Rect, buf: &mut Buffer, cx: &RenderCtx<'_>) -> Option<(u16, u16)> {
        let t = cx.theme;
        let title = if self.traces.is_empty() {
            " Waterfall trace ".to_string()
        } else {
            format!(" Waterfall trace · turn {} of {} ", self.selected + 1, self.traces.len())
        };
        let block = frame(title, cx.focused, t);
        let inner = block.inner(area);
        block.render(area, buf);
        match self.traces.get(self.selected) {
            Some(trace) => trace.render(inner, buf, t, self.scroll),
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
