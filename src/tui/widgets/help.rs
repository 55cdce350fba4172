//! The `?` overlay, generated from the keymap in effect (so it is never out of
//! date): the focused pane's keys first, then navigation, then global keys,
//! plus the theme and keymap in use and any problems loading them.

use super::{centered, frame, truncate};
use crate::tui::keymap::{Context, Keymap};
use crate::tui::theme::{Slot, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Widget};

/// The help lines for a pane context.
pub fn help_lines(keymap: &Keymap, pane: Context, theme: &Theme, problems: &[String]) -> Vec<Line<'static>> {
    let mut lines: Vec<Line<'static>> = Vec::new();
    lines.push(Line::from(vec![
        Span::styled("keymap ", theme.style(Slot::Muted)),
        Span::styled(keymap.name.clone(), theme.style(Slot::Accent)),
        Span::styled("  theme ", theme.style(Slot::Muted)),
        Span::styled(theme.name.clone(), theme.style(Slot::Accent)),
        Span::styled("  (~/.docdex/keymaps/, ~/.docdex/themes/; docs/TUI.md)", theme.style(Slot::Muted)),
    ]));
    for p in problems {
        lines.push(Line::styled(format!("⚠ {p}"), theme.style(Slot::Warning)));
    }
    for (ctx, rows) in keymap.help(&[pane, Context::Navigate, Context::Global]) {
        lines.push(Line::default());
        lines.push(Line::styled(format!("[{}]", ctx.name()), theme.style(Slot::HelpSection)));
        let key_w = rows.iter().map(|(k, _)| super::width(k)).max().unwrap_or(0).min(28);
        for (keys, what) in rows {
            lines.push(Line::from(vec![
                Span::styled(format!("  {}", super::fit(&keys, key_w)), theme.style(Slot::HelpKey)),
                Span::styled(format!("  {what}"), theme.style(Slot::Text)),
            ]));
        }
    }
    lines
}

/// Draws the overlay centred in `area`, scrolled by `scroll` lines.
pub fn render(area: Rect, buf: &mut Buffer, lines: &[Line<'static>], theme: &Theme, scroll: usize) {
    let w = (area.width.saturating_sub(4)).min(96);
    let h = area.height.saturating_sub(2).min(lines.len() as u16 + 2);
    let r = centered(area, w, h);
    Clear.render(r, buf);
    let more = lines.len().saturating_sub(scroll + h.saturating_sub(2) as usize);
    let title =
        if more > 0 { format!(" Keys · ↓ {more} more · esc closes ") } else { " Keys · esc closes ".to_string() };
    let block = frame(title, true, theme);
    let inner = block.inner(r);
    block.render(r, buf);
    for (row, line) in lines.iter().skip(scroll).take(inner.height as usize).enumerate() {
        let mut l = line.clone();
        if l.width() > inner.width as usize {
            let text: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
            l = Line::styled(
                truncate(&text, inner.width as usize),
                l.spans.first().map(|s| s.style).unwrap_or_default(),
            );
        }
        buf.set_line(inner.x, inner.y + row as u16, &l, inner.width);
    }
}
