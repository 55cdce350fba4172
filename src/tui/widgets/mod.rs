//! Reusable drawing pieces: text fitting, scrolling windows, bars, framed
//! blocks, and the bigger widgets (preview, impact graph, trace, DAG,
//! markdown) that render view-models the panes hold.

pub mod dag;
pub mod graph;
pub mod help;
pub mod markdown;
pub mod messages;
pub mod preview;
pub mod status_bar;
pub mod text_field;
pub mod trace;

use super::theme::{Slot, Theme};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// A pane's frame: rounded borders, the title, focus shown by colour.
pub fn frame<'a>(title: impl Into<Line<'a>>, focused: bool, theme: &Theme) -> Block<'a> {
    let (border, title_style) = if focused {
        (theme.style(Slot::BorderFocused), theme.style(Slot::TitleFocused))
    } else {
        (theme.style(Slot::Border), theme.style(Slot::Title))
    };
    Block::default()
        .borders(Borders::ALL)
        .border_type(BorderType::Rounded)
        .border_style(border)
        .title(title.into().style(title_style))
}

/// Display width of a string in terminal cells.
pub fn width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// Cuts `s` to at most `max` cells, ending in `…` when cut.
pub fn truncate(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > max - 1 {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// Cuts a line of styled spans to at most `max` cells, ending in `…` (in the style of the span
/// it ends in) when cut: a snippet drawn past its column was cut by the frame mid-word with no
/// sign that more followed. Widths are terminal cells, so a wide (CJK, emoji) character that
/// would straddle the edge is left out whole.
pub fn truncate_spans(spans: Vec<Span<'static>>, max: usize) -> Vec<Span<'static>> {
    if spans.iter().map(|s| width(&s.content)).sum::<usize>() <= max {
        return spans;
    }
    let mut out = Vec::new();
    let mut left = max;
    for span in spans {
        let w = width(&span.content);
        if w < left {
            left -= w;
            out.push(span);
            continue;
        }
        if left > 0 {
            let mut cut = String::new();
            let mut used = 0;
            for c in span.content.chars() {
                let cw = c.width().unwrap_or(0);
                if used + cw > left - 1 {
                    break;
                }
                cut.push(c);
                used += cw;
            }
            cut.push('…');
            out.push(Span::styled(cut, span.style));
        }
        break;
    }
    out
}

/// Cuts `s` from the left to at most `max` cells (`…/auth/session.rs`), keeping the end of paths.
pub fn truncate_left(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut tail: Vec<char> = Vec::new();
    let mut used = 0;
    for c in s.chars().rev() {
        let w = c.width().unwrap_or(0);
        if used + w > max - 1 {
            break;
        }
        tail.push(c);
        used += w;
    }
    let mut out = String::from("…");
    out.extend(tail.into_iter().rev());
    out
}

/// Cuts `s` to at most `max` cells at a space, ending in `…` when cut, so a title loses whole
/// words ("100 of 2,048 hits" → "100 of…") rather than ending in half of one; a first word
/// wider than `max` is cut by characters, the only way left.
pub fn truncate_words(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_string();
    }
    let mut best: Option<&str> = None;
    for (i, _) in s.match_indices(' ') {
        let head = s[..i].trim_end();
        if !head.is_empty() && width(head) < max {
            best = Some(head);
        }
    }
    match best {
        Some(head) => format!("{head}…"),
        None => truncate(s, max),
    }
}

/// A pane title in `max` cells: the first of `candidates` (most to least complete) that fits,
/// else the last one cut at a word. A narrow pane drops a title's least important parts
/// (the timing, then the confidence) instead of having the frame cut it mid-word.
pub fn fit_title(candidates: &[String], max: usize) -> String {
    if let Some(fits) = candidates.iter().find(|c| width(c) <= max) {
        return fits.clone();
    }
    let Some(last) = candidates.last() else { return String::new() };
    // Keep the frame's space on each side while there is room for it.
    let inner = last.trim();
    if max < 3 {
        return truncate_words(inner, max);
    }
    format!(" {} ", truncate_words(inner, max - 2))
}

/// Pads or cuts `s` to exactly `w` cells.
pub fn fit(s: &str, w: usize) -> String {
    let t = truncate(s, w);
    let pad = w.saturating_sub(width(&t));
    format!("{t}{}", " ".repeat(pad))
}

/// The first visible row so that `selected` is inside a window of `height` rows,
/// moving the previous `offset` as little as possible.
pub fn scroll_to(selected: usize, offset: usize, height: usize, len: usize) -> usize {
    if height == 0 || len == 0 {
        return 0;
    }
    let max_offset = len.saturating_sub(height);
    let offset = if selected < offset {
        selected
    } else if selected >= offset + height {
        selected + 1 - height
    } else {
        offset
    };
    offset.min(max_offset)
}

/// A horizontal bar of `cells` cells filled to `ratio` (0..1), as filled and empty parts.
pub fn bar(ratio: f64, cells: usize) -> (String, String) {
    let ratio = if ratio.is_finite() { ratio.clamp(0.0, 1.0) } else { 0.0 };
    let filled = ((ratio * cells as f64).round() as usize).min(cells);
    ("█".repeat(filled), "░".repeat(cells - filled))
}

/// A bar as styled spans.
pub fn bar_spans(ratio: f64, cells: usize, theme: &Theme, filled: Slot, empty: Slot) -> Vec<Span<'static>> {
    let (f, e) = bar(ratio, cells);
    vec![Span::styled(f, theme.style(filled)), Span::styled(e, theme.style(empty))]
}

/// A rectangle of at most `w` x `h` centred in `area`.
pub fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect { x: area.x + (area.width - w) / 2, y: area.y + (area.height - h) / 2, width: w, height: h }
}

/// Thousands separators: 12345 → "12,345".
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `n` and the noun in the form that agrees with it, digits grouped: `1 hit`, `2,048 hits`.
pub fn count(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", thousands(n), if n == 1 { one } else { many })
}

/// A spinner frame for an animation step.
pub fn spinner(step: u64) -> &'static str {
    const FRAMES: [&str; 8] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧"];
    FRAMES[(step % FRAMES.len() as u64) as usize]
}

/// Is `(col, row)` inside `r`?
pub fn contains(r: Rect, col: u16, row: u16) -> bool {
    col >= r.x && col < r.x + r.width && row >= r.y && row < r.y + r.height
}

/// Word-wraps plain text to `w` cells (at least one line).
pub fn wrap(text: &str, w: usize) -> Vec<String> {
    let w = w.max(1);
    let mut lines = Vec::new();
    for para in text.split('\n') {
        let mut line = String::new();
        for word in para.split(' ') {
            let candidate = if line.is_empty() { word.to_string() } else { format!("{line} {word}") };
            if width(&candidate) <= w {
                line = candidate;
            } else {
                if !line.is_empty() {
                    lines.push(std::mem::take(&mut line));
                }
                let mut word = word.to_string();
                while width(&word) > w {
                    let head = truncate_exact(&word, w);
                    word = word[head.len()..].to_string();
                    lines.push(head);
                }
                line = word;
            }
        }
        lines.push(line);
    }
    lines
}

/// Wraps a styled line to `w` cells: breaks after the last space that fits (inside a word only
/// when a word is longer than a row), and indents continuation rows by `hang` cells so they read
/// as part of the line above. Styles are kept.
pub fn wrap_line(line: &Line<'static>, w: usize, hang: usize) -> Vec<Line<'static>> {
    let w = w.max(2);
    let hang = hang.min(w / 2);
    let cells: Vec<(char, ratatui::style::Style)> =
        line.spans.iter().flat_map(|s| s.content.chars().map(move |c| (c, line.style.patch(s.style)))).collect();
    let total: usize = cells.iter().map(|(c, _)| c.width().unwrap_or(0)).sum();
    if total <= w {
        return vec![line.clone()];
    }
    let mut rows: Vec<Vec<(char, ratatui::style::Style)>> = Vec::new();
    let mut start = 0;
    while start < cells.len() {
        let room = if rows.is_empty() { w } else { w - hang };
        let mut used = 0;
        let mut end = start;
        let mut last_space = None;
        while end < cells.len() {
            let cw = cells[end].0.width().unwrap_or(0);
            if used + cw > room {
                break;
            }
            if cells[end].0 == ' ' && end > start {
                last_space = Some(end);
            }
            used += cw;
            end += 1;
        }
        if end < cells.len() {
            if let Some(sp) = last_space {
                end = sp + 1;
            }
        }
        if end == start {
            end = start + 1;
        }
        let mut row: Vec<(char, ratatui::style::Style)> = Vec::new();
        if !rows.is_empty() {
            row.extend(std::iter::repeat_n((' ', ratatui::style::Style::default()), hang));
        }
        // A continuation row does not start with the space it was broken at.
        let mut from = start;
        while !rows.is_empty() && from < end && cells[from].0 == ' ' {
            from += 1;
        }
        row.extend_from_slice(&cells[from..end]);
        while row.len() > hang && row.last().is_some_and(|(c, _)| *c == ' ') {
            row.pop();
        }
        rows.push(row);
        start = end;
    }
    rows.into_iter()
        .map(|row| {
            let mut spans: Vec<Span<'static>> = Vec::new();
            let mut text = String::new();
            let mut style = None;
            for (c, st) in row {
                if style.is_some_and(|s| s != st) {
                    spans.push(Span::styled(std::mem::take(&mut text), style.unwrap_or_default()));
                }
                style = Some(st);
                text.push(c);
            }
            if !text.is_empty() {
                spans.push(Span::styled(text, style.unwrap_or_default()));
            }
            Line::from(spans)
        })
        .collect()
}

/// The longest prefix of `s` that fits in `w` cells (no ellipsis).
fn truncate_exact(s: &str, w: usize) -> String {
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let cw = c.width().unwrap_or(0);
        if used + cw > w {
            break;
        }
        out.push(c);
        used += cw;
    }
    if out.is_empty() {
        s.chars().next().map(String::from).unwrap_or_default()
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// tour18 F14: a snippet line is cut at the width with `…`, counting wide characters as two
    /// cells (a CJK character that would straddle the edge is left out, never half drawn).
    #[test]
    fn styled_spans_are_cut_at_the_display_width_with_an_ellipsis() {
        use ratatui::style::Style;
        let text = |spans: &[Span<'_>]| spans.iter().map(|s| s.content.to_string()).collect::<String>();
        let line = || vec![Span::raw("   "), Span::styled("会话", Style::new().bold()), Span::raw(" expires")];
        assert_eq!(text(&truncate_spans(line(), 15)), "   会话 expires", "fits: unchanged");
        let cut = truncate_spans(line(), 10);
        assert_eq!(text(&cut), "   会话 e…");
        assert_eq!(width(&text(&cut)), 10);
        // The cut falls inside the wide characters: the second would need cells 6-7, so it goes.
        let cut = truncate_spans(line(), 7);
        assert_eq!(text(&cut), "   会…");
        assert!(width(&text(&cut)) <= 7);
        assert_eq!(cut[1].style, Style::new().bold(), "the ellipsis keeps the style it ends in");
        assert!(truncate_spans(line(), 0).is_empty());
    }

    #[test]
    fn a_title_drops_its_least_important_parts_before_it_is_cut() {
        let c = [
            " 100 of 2,048 hits · confidence 0.91 ·   12 ms ".to_string(),
            " 100 of 2,048 hits · confidence 0.91 ".into(),
            " 100 of 2,048 hits ".into(),
        ];
        assert_eq!(fit_title(&c, 60), c[0]);
        assert_eq!(fit_title(&c, 43), c[1], "the timing goes first");
        assert_eq!(fit_title(&c, 25), c[2], "then the confidence");
        // Narrower still: whole words, never half of one.
        assert_eq!(fit_title(&c, 14), " 100 of… ");
        assert_eq!(fit_title(&c, 4), " 1… ");
        assert!(fit_title(&c, 1).chars().count() <= 1);
        assert_eq!(fit_title(&[], 10), "");
    }

    #[test]
    fn truncate_words_cuts_at_a_space() {
        assert_eq!(truncate_words("first 200 of 1,234 symbols", 15), "first 200 of…");
        assert_eq!(truncate_words("short", 10), "short");
        assert_eq!(truncate_words("abcdefghij", 5), "abcd…");
    }

    #[test]
    fn styled_lines_wrap_at_spaces_with_a_hanging_indent() {
        let red = ratatui::style::Style::default().fg(ratatui::style::Color::Red);
        let line = Line::from(vec![
            Span::raw("  src/lib.rs "),
            Span::styled("1,200 tokens  over the library budget (libs slot)", red),
        ]);
        let rows = wrap_line(&line, 30, 4);
        let text: Vec<String> = rows.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect();
        assert_eq!(text, ["  src/lib.rs 1,200 tokens", "    over the library budget", "    (libs slot)"]);
        assert!(text.iter().all(|t| width(t) <= 30));
        assert_eq!(rows[1].spans.last().map(|s| s.style), Some(red), "styles survive the wrap");
        assert_eq!(wrap_line(&Line::raw("short"), 30, 4).len(), 1);
    }

    #[test]
    fn truncation_keeps_width() {
        assert_eq!(truncate("session.rs", 20), "session.rs");
        assert_eq!(truncate("session.rs", 6), "sessi…");
        assert_eq!(truncate_left("src/auth/session.rs", 12), "…/session.rs");
        assert_eq!(fit("ab", 4), "ab  ");
        assert_eq!(width(&truncate("日本語のテキスト", 7)), 7);
    }

    #[test]
    fn scrolling_moves_minimally() {
        assert_eq!(scroll_to(0, 0, 10, 100), 0);
        assert_eq!(scroll_to(12, 0, 10, 100), 3);
        assert_eq!(scroll_to(5, 3, 10, 100), 3);
        assert_eq!(scroll_to(2, 3, 10, 100), 2);
        assert_eq!(scroll_to(99, 0, 10, 100), 90);
        assert_eq!(scroll_to(3, 50, 10, 5), 0);
    }

    #[test]
    fn bars_and_numbers() {
        assert_eq!(bar(0.5, 4), ("██".into(), "░░".into()));
        assert_eq!(bar(2.0, 3).0.chars().count(), 3);
        assert_eq!(bar(f64::NAN, 3).1.chars().count(), 3);
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(12), "12");
    }

    #[test]
    fn wrapping() {
        assert_eq!(wrap("one two three", 7), vec!["one two", "three"]);
        assert_eq!(wrap("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
        assert_eq!(wrap("", 4), vec![""]);
    }
}
