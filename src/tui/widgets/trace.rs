//! The waterfall trace of one chat turn: which tiers ran (local search, web,
//! model), each gate's score against its threshold, the token budget per
//! context slot as bars, the snippets that were dropped and why, and timings.
//! A view-model the waterfall chat fills; the widget only draws it.

use super::{bar_spans, fit, thousands, truncate, wrap};
use crate::tui::theme::{Slot, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

/// One tier of the waterfall.
#[derive(Debug, Clone, PartialEq)]
pub struct TierRun {
    /// `local`, `web`, `memory`, `llm`, ...
    pub name: String,
    /// Whether it ran.
    pub ran: bool,
    /// The gate score it produced (local confidence, ...), 0..1.
    pub score: Option<f64>,
    /// The threshold the score was compared with.
    pub threshold: Option<f64>,
    /// What the gate decided, in words ("confident enough: web skipped").
    pub outcome: String,
    /// Time spent, in milliseconds.
    pub ms: f64,
}

/// Tokens used and allowed in one context slot.
#[derive(Debug, Clone, PartialEq)]
pub struct SlotBudget {
    /// `system`, `memory`, `repo`, `web`, `history`, `answer`, ...
    pub slot: String,
    /// Tokens used.
    pub used: u32,
    /// Tokens allowed.
    pub limit: u32,
    /// Snippets kept.
    pub items: u32,
    /// Snippets dropped.
    pub dropped: u32,
}

/// A snippet that did not make it into the context.
#[derive(Debug, Clone, PartialEq)]
pub struct DroppedSnippet {
    /// Where it came from (`src/a.rs:10-40`, a URL).
    pub source: String,
    /// Its size in tokens.
    pub tokens: u32,
    /// Why it was dropped.
    pub reason: String,
}

/// A page the web tier tried.
#[derive(Debug, Clone, PartialEq)]
pub struct WebPageRun {
    /// The page's address.
    pub url: String,
    /// It gave text (fetched or from the cache).
    pub ok: bool,
    /// `fetched`, `cached`, `refused` or `failed`, with how and how long (`fetched · chromium ·
    /// 2 passages · 310 ms`) or why it failed.
    pub outcome: String,
}

/// What the web tier did in a turn (Tier 2): the search, the pages, the notes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WebRun {
    /// The discovery query, its status and source, results, rate-limit wait and time.
    pub summary: String,
    /// Every page tried, in order.
    pub pages: Vec<WebPageRun>,
    /// Problems and fallbacks, in words.
    pub notes: Vec<String>,
}

/// The trace of one turn.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TraceView {
    /// The chat turn it belongs to.
    pub turn: u64,
    /// The question asked.
    pub question: String,
    /// Tiers in the order they were considered.
    pub tiers: Vec<TierRun>,
    /// Budget per slot.
    pub budget: Vec<SlotBudget>,
    /// Snippets left out.
    pub dropped: Vec<DroppedSnippet>,
    /// Named timings in milliseconds, in order.
    pub timings: Vec<(String, f64)>,
    /// The whole turn, in milliseconds.
    pub total_ms: f64,
    /// The context window, tokenizer and model call, one line each.
    pub context: Vec<String>,
    /// Degraded tiers and other things worth knowing.
    pub notices: Vec<String>,
    /// The web tier's search and pages, when it ran.
    pub web: Option<WebRun>,
}

/// One tier's row: ran or not, its name, its score bar against the gate, outcome and time.
fn tier_line(tier: &TierRun, bar_w: usize, tier_w: usize, t: &Theme) -> Line<'static> {
    let mut spans = vec![Span::styled(
        format!("  {} ", if tier.ran { "✓" } else { "·" }),
        t.style(if tier.ran { Slot::Ok } else { Slot::Muted }),
    )];
    spans.push(Span::styled(format!("{} ", fit(&tier.name, tier_w)), t.style(Slot::TraceTier)));
    match (tier.score, tier.threshold) {
        (Some(score), threshold) => {
            let mut bar = bar_spans(score, bar_w, t, Slot::TraceBarFilled, Slot::TraceBarEmpty);
            if let Some(th) = threshold {
                // Mark the threshold inside the bar.
                let pos = ((th.clamp(0.0, 1.0) * bar_w as f64).round() as usize).min(bar_w.saturating_sub(1));
                bar = mark_threshold(bar, pos, t);
            }
            spans.extend(bar);
            let passed = threshold.is_none_or(|th| score >= th);
            let cmp = match threshold {
                Some(th) => format!(" {score:.2} {} {th:.2} ", if passed { "≥" } else { "<" }),
                None => format!(" {score:.2} "),
            };
            spans.push(Span::styled(cmp, t.style(if passed { Slot::TraceGatePass } else { Slot::TraceGateFail })));
        }
        (None, _) => spans.push(Span::styled(format!("{} ", " ".repeat(bar_w)), t.style(Slot::Muted))),
    }
    spans.push(Span::styled(tier.outcome.clone(), t.style(Slot::Text)));
    if tier.ran {
        spans.push(Span::styled(format!("  {}", fmt_ms(tier.ms)), t.style(Slot::Muted)));
    }
    Line::from(spans)
}

/// One budget slot's row: a bar of used against allotted (over-budget coloured), kept and dropped.
fn budget_line(b: &SlotBudget, name_w: usize, bar_w: usize, t: &Theme) -> Line<'static> {
    let ratio = if b.limit == 0 { 0.0 } else { b.used as f64 / b.limit as f64 };
    let filled = if b.used > b.limit { Slot::TraceBarOver } else { Slot::TraceBarFilled };
    let mut spans = vec![Span::styled(format!("  {} ", fit(&b.slot, name_w)), t.style(Slot::TraceTier))];
    spans.extend(bar_spans(ratio, bar_w, t, filled, Slot::TraceBarEmpty));
    spans.push(Span::styled(
        format!(" {} / {}", thousands(b.used as u64), thousands(b.limit as u64)),
        t.style(Slot::Text),
    ));
    if b.items + b.dropped > 0 {
        let dropped = if b.dropped > 0 { format!(", {} dropped", b.dropped) } else { String::new() };
        spans.push(Span::styled(format!("  {} kept{dropped}", b.items), t.style(Slot::Muted)));
    }
    Line::from(spans)
}

/// Formats milliseconds: `850 ms`, `1.2 s`.
pub fn fmt_ms(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.1} s", ms / 1000.0)
    } else {
        format!("{ms:.0} ms")
    }
}

impl TraceView {
    /// The lines of the trace for a width (the pane scrolls them).
    pub fn lines(&self, w: usize, theme: &Theme) -> Vec<Line<'static>> {
        let t = theme;
        let mut out: Vec<Line<'static>> = Vec::new();
        let total = self.total_ms;
        out.push(Line::from(vec![
            Span::styled(format!("Turn {}", self.turn), t.style(Slot::Accent)),
            Span::styled(
                format!("  {}", truncate(&format!("\"{}\"", self.question), w.saturating_sub(24))),
                t.style(Slot::Text),
            ),
            Span::styled(format!("  total {}", fmt_ms(total)), t.style(Slot::Muted)),
        ]));
        out.push(Line::default());
        out.push(Line::styled("Tiers", t.style(Slot::HelpSection)));
        let bar_w = (w / 5).clamp(6, 20);
        let tier_w = self.tiers.iter().map(|t| t.name.chars().count()).max().unwrap_or(8).clamp(5, 12);
        out.extend(self.tiers.iter().map(|tier| tier_line(tier, bar_w, tier_w, t)));
        if let Some(web) = &self.web {
            out.push(Line::default());
            out.extend(web_lines(web, w, t));
        }
        out.push(Line::default());
        out.push(Line::styled("Token budget", t.style(Slot::HelpSection)));
        let name_w = self.budget.iter().map(|b| b.slot.len()).max().unwrap_or(4).max(4);
        out.extend(self.budget.iter().map(|b| budget_line(b, name_w, bar_w, t)));
        for c in &self.context {
            for l in wrap(c, w.saturating_sub(4).max(10)) {
                out.push(Line::styled(format!("  {l}"), t.style(Slot::Muted)));
            }
        }
        out.push(Line::default());
        self.dropped_lines(w, t, &mut out);
        out.push(Line::default());
        out.push(Line::styled("Timings", t.style(Slot::HelpSection)));
        let parts: Vec<String> = self.timings.iter().map(|(n, ms)| format!("{n} {}", fmt_ms(*ms))).collect();
        out.push(Line::styled(format!("  {}", parts.join(" · ")), t.style(Slot::Text)));
        if !self.notices.is_empty() {
            out.push(Line::default());
            out.push(Line::styled("Notices", t.style(Slot::HelpSection)));
            for n in &self.notices {
                out.push(Line::styled(format!("  {n}"), t.style(Slot::Warning)));
            }
        }
        // Nothing is cut at the pane edge: long lines wrap, continuation rows indented.
        out.iter().flat_map(|l| super::wrap_line(l, w, 6)).collect()
    }

    /// The "Dropped (N)" section: each left-out snippet with its size and reason.
    fn dropped_lines(&self, w: usize, t: &Theme, out: &mut Vec<Line<'static>>) {
        out.push(Line::styled(format!("Dropped ({})", self.dropped.len()), t.style(Slot::HelpSection)));
        if self.dropped.is_empty() {
            out.push(Line::styled("  nothing was dropped", t.style(Slot::Muted)));
        }
        for d in &self.dropped {
            let head = format!("  {} ", d.source);
            out.push(Line::from(vec![
                Span::styled(truncate(&head, w / 2), t.style(Slot::SearchPath)),
                Span::styled(format!("{} tokens  ", thousands(d.tokens as u64)), t.style(Slot::Muted)),
                Span::styled(d.reason.clone(), t.style(Slot::TraceDropped)),
            ]));
        }
    }

    /// Draws the trace from line `scroll` on; returns how many lines it has at this width.
    pub fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme, scroll: usize) -> usize {
        let lines = self.lines(area.width as usize, theme);
        let total = lines.len();
        for (row, line) in lines.into_iter().skip(scroll).take(area.height as usize).enumerate() {
            buf.set_line(area.x, area.y + row as u16, &line, area.width);
        }
        total
    }
}

/// The web section: the search in one line, then each page (its outcome, then its address on
/// the next line, wrapped so the whole URL stays readable at 80 columns), then the notes.
fn web_lines(web: &WebRun, w: usize, t: &Theme) -> Vec<Line<'static>> {
    let inner = w.saturating_sub(6).max(10);
    let mut out = vec![Line::styled("Web", t.style(Slot::HelpSection))];
    for l in wrap(&web.summary, w.saturating_sub(4).max(10)) {
        out.push(Line::styled(format!("  {l}"), t.style(Slot::Text)));
    }
    for page in &web.pages {
        out.push(Line::from(vec![
            Span::styled(
                format!("  {} ", if page.ok { "✓" } else { "✗" }),
                t.style(if page.ok { Slot::Ok } else { Slot::Warning }),
            ),
            Span::styled(truncate(&page.outcome, w.saturating_sub(4)), t.style(Slot::Text)),
        ]));
        for l in wrap(&page.url, inner) {
            out.push(Line::styled(format!("    {l}"), t.style(Slot::SearchPath)));
        }
    }
    for n in &web.notes {
        for l in wrap(n, w.saturating_sub(4).max(10)) {
            out.push(Line::styled(format!("  {l}"), t.style(Slot::Warning)));
        }
    }
    out
}

/// Replaces the cell at `pos` of a two-span bar with a threshold mark.
fn mark_threshold(bar: Vec<Span<'static>>, pos: usize, theme: &Theme) -> Vec<Span<'static>> {
    let mut cells: Vec<(String, ratatui::style::Style)> = Vec::new();
    for s in &bar {
        for c in s.content.chars() {
            cells.push((c.to_string(), s.style));
        }
    }
    if let Some(cell) = cells.get_mut(pos) {
        *cell = ("┃".to_string(), theme.style(Slot::TraceThreshold));
    }
    cells.into_iter().map(|(c, s)| Span::styled(c, s)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gate_shows_score_against_threshold() {
        let v = TraceView {
            turn: 1,
            question: "q".into(),
            tiers: vec![TierRun {
                name: "local".into(),
                ran: true,
                score: Some(0.5),
                threshold: Some(0.7),
                outcome: "web next".into(),
                ms: 12.0,
            }],
            ..Default::default()
        };
        let lines = v.lines(80, &Theme::plain());
        let tier: String = lines[3].spans.iter().map(|s| s.content.as_ref()).collect();
        assert!(tier.contains("0.50 < 0.70"), "{tier}");
        assert!(tier.contains('┃'), "{tier}");
        assert_eq!(fmt_ms(1234.0), "1.2 s");
    }
}
