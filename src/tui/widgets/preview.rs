//! The file preview beside search results: highlighted source with line
//! numbers, the hit's lines marked in the gutter and given the theme's hit
//! background, and the matched query terms emphasised.

use crate::tui::highlight::StyledLine;
use crate::tui::theme::{Slot, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

/// A highlighted window of a file, produced by the engine worker.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PreviewDoc {
    /// Repo-relative path.
    pub path: String,
    /// Line number of `lines[0]`.
    pub first_line: u32,
    /// Lines in the whole file.
    pub total_lines: u32,
    /// Highlighted lines.
    pub lines: Vec<StyledLine>,
    /// The line to bring into view.
    pub focus_line: u32,
    /// The hit's line range, marked in the gutter.
    pub hit: (u32, u32),
    /// Matched terms: (line, first char, end char) on the displayed text.
    pub matches: Vec<(u32, usize, usize)>,
}

impl PreviewDoc {
    /// The first line to show in `height` rows: the focus line a third of the way down,
    /// moved by `scroll` lines and kept inside the document.
    pub fn top_line(&self, height: usize, scroll: i64) -> u32 {
        let last = self.first_line as i64 + self.lines.len() as i64 - 1;
        let base = self.focus_line as i64 - (height as i64 / 3);
        let top = (base + scroll).min(last - height as i64 + 1).max(self.first_line as i64);
        top.max(1) as u32
    }

    /// The scroll that moves the shown lines by `delta` from where `scroll` shows them (the
    /// first and last lines stop it): near the top of a file the focus cannot sit a third of the
    /// way down, so a plain `scroll + delta` would first use up that slack and move nothing.
    pub fn scrolled(&self, height: usize, scroll: i64, delta: i64) -> i64 {
        let base = self.focus_line as i64 - (height as i64 / 3);
        let now = self.top_line(height, scroll) as i64;
        self.top_line(height, now + delta - base) as i64 - base
    }

    /// Draws the document into `area` (no frame).
    pub fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme, scroll: i64) {
        if area.height == 0 || self.lines.is_empty() {
            return;
        }
        let top = self.top_line(area.height as usize, scroll);
        let last_shown = (top as usize + area.height as usize - 1).min(self.first_line as usize + self.lines.len() - 1);
        let num_w = last_shown.to_string().len().max(3);
        for row in 0..area.height {
            let n = top + row as u32;
            let Some(idx) = n.checked_sub(self.first_line).map(|i| i as usize) else { continue };
            let Some(segments) = self.lines.get(idx) else { break };
            let in_hit = n >= self.hit.0 && n <= self.hit.1;
            let hit_style = if in_hit { theme.style(Slot::PreviewHitLine) } else { Style::default() };
            let mut spans = vec![
                Span::styled(format!("{n:>num_w$}"), theme.style(Slot::PreviewLineNumber).patch(hit_style)),
                Span::styled(if in_hit { "▌" } else { " " }, theme.style(Slot::PreviewGutter).patch(hit_style)),
            ];
            let matches: Vec<(usize, usize)> =
                self.matches.iter().filter(|(l, _, _)| *l == n).map(|(_, a, b)| (*a, *b)).collect();
            let mut col = 0usize;
            for (class, text) in segments {
                let base =
                    class.slot().map(|s| theme.style(s)).unwrap_or_else(|| theme.style(Slot::Text)).patch(hit_style);
                split_matches(text, col, &matches, base, base.patch(theme.style(Slot::SearchMatch)), &mut spans);
                col += text.chars().count();
            }
            let y = area.y + row;
            if in_hit {
                buf.set_style(Rect { x: area.x, y, width: area.width, height: 1 }, hit_style);
            }
            buf.set_line(area.x, y, &Line::from(spans), area.width);
        }
    }
}

/// Pushes `text` (starting at char column `col`) as spans, emphasising the char ranges in `matches`.
fn split_matches(
    text: &str,
    col: usize,
    matches: &[(usize, usize)],
    base: Style,
    hl: Style,
    out: &mut Vec<Span<'static>>,
) {
    if matches.is_empty() {
        out.push(Span::styled(text.to_string(), base));
        return;
    }
    let chars: Vec<char> = text.chars().collect();
    let mut run = String::new();
    let mut run_hl = false;
    for (i, c) in chars.iter().enumerate() {
        let at = col + i;
        let is_hl = matches.iter().any(|(a, b)| at >= *a && at < *b);
        if is_hl != run_hl && !run.is_empty() {
            out.push(Span::styled(std::mem::take(&mut run), if run_hl { hl } else { base }));
        }
        run_hl = is_hl;
        run.push(*c);
    }
    if !run.is_empty() {
        out.push(Span::styled(run, if run_hl { hl } else { base }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::highlight::SyntaxClass;

    fn doc(n: u32) -> PreviewDoc {
        PreviewDoc {
            path: "a.rs".into(),
            first_line: 1,
            total_lines: n,
            lines: (1..=n).map(|i| vec![(SyntaxClass::Plain, format!("line {i}"))]).collect(),
            focus_line: 50,
            hit: (50, 52),
            matches: vec![(50, 0, 4)],
        }
    }

    #[test]
    fn focus_sits_a_third_down_and_clamps() {
        let d = doc(100);
        assert_eq!(d.top_line(30, 0), 40);
        assert_eq!(d.top_line(30, -100), 1);
        assert_eq!(d.top_line(30, 100), 71);
        assert_eq!(doc(5).top_line(30, 0), 1);
    }

    #[test]
    fn every_scroll_step_moves_the_lines_even_near_the_top_and_stops_at_the_ends() {
        // A hit on the first lines: the focus cannot sit a third of the way down.
        let d = PreviewDoc { focus_line: 1, hit: (1, 3), ..doc(100) };
        let mut scroll = 0;
        assert_eq!(d.top_line(30, scroll), 1);
        for want in [4, 7, 10] {
            scroll = d.scrolled(30, scroll, 3);
            assert_eq!(d.top_line(30, scroll), want, "three lines per step from the first");
        }
        scroll = d.scrolled(30, scroll, -3);
        assert_eq!(d.top_line(30, scroll), 7);
        // The ends stop it, and a step back from an end moves at once.
        scroll = d.scrolled(30, scroll, -100);
        assert_eq!(d.top_line(30, scroll), 1);
        assert_eq!(d.top_line(30, d.scrolled(30, scroll, 1)), 2);
        scroll = d.scrolled(30, scroll, 1000);
        assert_eq!(d.top_line(30, scroll), 71);
        assert_eq!(d.top_line(30, d.scrolled(30, scroll, -1)), 70);
    }

    #[test]
    fn renders_numbers_marker_and_text() {
        let d = doc(100);
        let mut buf = Buffer::empty(Rect::new(0, 0, 20, 3));
        let theme = Theme::plain();
        d.render(Rect::new(0, 0, 20, 3), &mut buf, &theme, 0);
        let row = |y: u16| (0..20).map(|x| buf[(x, y)].symbol().to_string()).collect::<String>();
        assert_eq!(row(0), " 49 line 49         ");
        assert_eq!(row(1), " 50▌line 50         ");
    }
}
