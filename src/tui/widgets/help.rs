//! The help overlay (f1 anywhere, `?` in normal mode), generated from the keymap in effect (so it is never out of
//! date): the focused pane's keys first, then navigation, then global keys,
//! plus the theme and keymap in use and any problems loading them.

use super::text_field;
use super::{centered, frame};
use crate::tui::keymap::{Command, Context, Keymap};
use crate::tui::theme::{Slot, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Widget};

/// What the help overlay describes besides the bindings.
pub struct HelpCtx<'a> {
    /// The focused pane's context.
    pub pane: Context,
    /// `Some(multi_line)` when the focused pane has a text field.
    pub field: Option<bool>,
    /// `DOCDEX_HOME` (where user keymaps, themes and logs live).
    pub home: &'a str,
    /// Problems found loading the theme or keymap.
    pub problems: &'a [String],
    /// The `[navigate]` moves the focused pane acts on ([`crate::tui::panes::Pane::moves`]).
    pub moves: &'a [Command],
}

/// The help lines for a pane context.
pub fn help_lines(keymap: &Keymap, theme: &Theme, hc: &HelpCtx<'_>) -> Vec<Line<'static>> {
    let pane = hc.pane;
    let home = hc.home.trim_end_matches('/');
    let mut lines: Vec<Line<'static>> = Vec::new();
    lines.push(Line::from(vec![
        Span::styled("keymap ", theme.style(Slot::Muted)),
        Span::styled(keymap.name.clone(), theme.style(Slot::Accent)),
        Span::styled("  theme ", theme.style(Slot::Muted)),
        Span::styled(theme.name.clone(), theme.style(Slot::Accent)),
    ]));
    for p in hc.problems {
        lines.push(Line::styled(format!("⚠ {p}"), theme.style(Slot::Warning)));
    }
    // A move the pane has no use for is left out: help listed `h` "Move left" in Search,
    // where it is typed into the query (tour18 F3).
    let used = |c: Command| c.context() != Context::Navigate || hc.moves.contains(&c);
    for (ctx, rows) in keymap.help(&[pane, Context::Navigate, Context::Global], used) {
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
    lines.push(Line::default());
    lines.push(Line::styled("[modes]", theme.style(Slot::HelpSection)));
    for text in [
        "NOR: keys are commands; a letter that is none goes back to the text field.",
        "INS: a text field has focus; letters and the editing keys below edit it.",
        "esc leaves the text field or closes an overlay, nothing more.",
    ] {
        lines.push(Line::styled(format!("  {text}"), theme.style(Slot::Text)));
    }
    if let Some(multi) = hc.field {
        lines.push(Line::default());
        lines.push(Line::styled("[text field (INS)]", theme.style(Slot::HelpSection)));
        let key_w = text_field::EDITING_KEYS.iter().map(|(k, _)| super::width(k)).max().unwrap_or(0).min(36);
        for (keys, what) in text_field::EDITING_KEYS {
            lines.push(Line::from(vec![
                Span::styled(format!("  {}", super::fit(keys, key_w)), theme.style(Slot::HelpKey)),
                Span::styled(format!("  {what}"), theme.style(Slot::Text)),
            ]));
        }
        let clashes = keymap.clashes(&[pane, Context::Navigate, Context::Global], multi, used);
        let chords: Vec<String> = clashes
            .iter()
            .filter(|(k, _)| !matches!(k.code, crossterm::event::KeyCode::Char(_)) || !k.mods.is_empty())
            .map(|(k, c)| format!("{k} ({})", c.name()))
            .collect();
        if !chords.is_empty() {
            let text = format!("  In INS these edit text; in NOR they are: {}", chords.join(", "));
            for piece in super::wrap(&text, 92) {
                lines.push(Line::styled(piece, theme.style(Slot::Warning)));
            }
        }
        lines.push(Line::styled(
            "  Letters, digits and ? are text in INS: use f1 for help, alt+1..7 for panes.",
            theme.style(Slot::Muted),
        ));
    }
    lines.push(Line::default());
    lines.push(Line::styled(
        format!("overrides in {home}/keymaps/ and {home}/themes/; docs/TUI.md"),
        theme.style(Slot::Muted),
    ));
    lines
}

/// Draws the overlay centred in `area`, scrolled by `scroll` rows. A line wider than the
/// overlay wraps (a binding's description under its column) instead of being cut, so a
/// problem with a user file or a long description reads whole at 80x24. Returns how far it
/// can scroll.
pub fn render(area: Rect, buf: &mut Buffer, lines: &[Line<'static>], theme: &Theme, scroll: usize) -> usize {
    let w = (area.width.saturating_sub(4)).min(96);
    let rows = wrapped(lines, w.saturating_sub(2) as usize);
    let h = area.height.saturating_sub(2).min(rows.len() as u16 + 2);
    let r = centered(area, w, h);
    Clear.render(r, buf);
    // Scrolling stops at the last page.
    let page = h.saturating_sub(2) as usize;
    let max = rows.len().saturating_sub(page);
    let scroll = scroll.min(max);
    let more = rows.len().saturating_sub(scroll + page);
    let title = if more > 0 {
        format!(" Keys · ↓ {more} more · j/k, pgdn/pgup scroll · esc closes ")
    } else {
        " Keys · esc closes ".to_string()
    };
    let block = frame(title, true, theme);
    let inner = block.inner(r);
    block.render(r, buf);
    for (row, line) in rows.iter().skip(scroll).take(inner.height as usize).enumerate() {
        buf.set_line(inner.x, inner.y + row as u16, line, inner.width);
    }
    max
}

/// The help lines wrapped to `w` cells: a binding's continuation rows start under its
/// description, a text line's under its text.
fn wrapped(lines: &[Line<'static>], w: usize) -> Vec<Line<'static>> {
    lines
        .iter()
        .flat_map(|l| {
            let hang = match l.spans.as_slice() {
                [keys, what, ..] => {
                    super::width(&keys.content) + super::width(&what.content) - super::width(what.content.trim_start())
                }
                _ => {
                    let text: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
                    let lead = text.len() - text.trim_start().len();
                    lead + if text.trim_start().starts_with('⚠') { 2 } else { 0 }
                }
            };
            super::wrap_line(l, w, hang)
        })
        .collect()
}
