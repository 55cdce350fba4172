//! Messages that can be read: a notice too long for the status bar gets its own line(s) above
//! it, and the message log overlay lists every message of the run with its time (the same
//! messages go to `<state>/logs/tui.log`).

use super::{centered, frame, truncate, width, wrap};
use crate::tui::action::Level;
use crate::tui::action::Message;
use crate::tui::theme::{Slot, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Widget};

fn glyph(level: Level) -> (&'static str, Slot) {
    match level {
        Level::Info => ("·", Slot::Ok),
        Level::Warn => ("⚠", Slot::Warning),
        Level::Error => ("✗", Slot::Error),
    }
}

/// Draws a notice that did not fit the status bar on a line of its own: in the bottom border
/// of the panes right above the bar (row `status_y - 1`, like a frame title, so the frame stays
/// whole), and when it is longer, over the last row inside the frame too. A notice longer than
/// both ends with `hint` ("alt+m: all messages").
pub fn own_lines(main: Rect, status_y: u16, buf: &mut Buffer, level: Level, text: &str, hint: &str, theme: &Theme) {
    let w = main.width as usize;
    if w < 12 || main.height < 4 || status_y == 0 {
        return;
    }
    let (g, slot) = glyph(level);
    // Room on a row: the border's corner and one dash on each side stay.
    let room = w - 4;
    let mut lines = wrap(&format!("{g} {text}"), room - 2);
    let rows = if lines.len() > 1 && main.height >= 8 { 2 } else { 1 };
    if lines.len() > rows {
        lines.truncate(rows);
        let keep = (room - 2).saturating_sub(width(hint) + 3);
        let last = truncate(&lines[rows - 1], keep);
        lines[rows - 1] = format!("{last} ({hint})");
    }
    let style = theme.style(slot);
    for (k, l) in lines.iter().enumerate() {
        let y = status_y - (rows - k) as u16;
        let x = main.x + 2;
        if k + 1 < rows {
            // Inside the frame: blank the row between the side borders first.
            buf.set_stringn(main.x + 1, y, " ".repeat(w - 2), w - 2, theme.style(Slot::Text));
        }
        buf.set_stringn(x, y, format!(" {l} "), room, style);
    }
}

/// `HH:MM:SS` (UTC) of an epoch-ms time.
fn clock(epoch_ms: u64) -> String {
    let s = (epoch_ms / 1000) % 86_400;
    format!("{:02}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
}

/// Draws the message log centred in `area`: newest at the bottom, `scroll` lines up from it.
/// Returns how far it can scroll.
pub fn render(
    area: Rect,
    buf: &mut Buffer,
    messages: &[Message],
    theme: &Theme,
    scroll: usize,
    _hint: String,
) -> usize {
    let w = area.width.saturating_sub(4).min(110);
    let h = area.height.saturating_sub(2);
    let r = centered(area, w, h);
    Clear.render(r, buf);
    let mut lines: Vec<Line<'static>> = Vec::new();
    let text_w = (w as usize).saturating_sub(2 + 11 + 2);
    for m in messages {
        let (g, slot) = glyph(m.level);
        let text = if m.repeats > 1 { format!("{} (×{})", m.text, m.repeats) } else { m.text.clone() };
        for (k, piece) in wrap(&text, text_w.max(10)).into_iter().enumerate() {
            let lead = if k == 0 { format!("{} {g} ", clock(m.epoch_ms)) } else { " ".repeat(11) };
            lines.push(Line::from(vec![
                Span::styled(lead, theme.style(Slot::Muted)),
                Span::styled(piece, theme.style(if k == 0 && m.level != Level::Info { slot } else { Slot::Text })),
            ]));
        }
    }
    if lines.is_empty() {
        lines.push(Line::styled("No messages yet.", theme.style(Slot::Muted)));
    }
    let inner_h = h.saturating_sub(2) as usize;
    let max_scroll = lines.len().saturating_sub(inner_h);
    let scroll = scroll.min(max_scroll);
    let start = lines.len().saturating_sub(inner_h + scroll);
    let title = format!(" Messages ({}) · ↑↓ scroll · esc closes · also in logs/tui.log ", messages.len());
    let block = frame(title, true, theme);
    let inner = block.inner(r);
    block.render(r, buf);
    for (row, line) in lines.iter().skip(start).take(inner.height as usize).enumerate() {
        buf.set_line(inner.x + 1, inner.y + row as u16, line, inner.width.saturating_sub(1));
    }
    max_scroll
}
