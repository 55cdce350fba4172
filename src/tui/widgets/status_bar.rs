//! The bottom line: which repository, the index state (with progress while a
//! run is going), the model provider, the latest notice, and key hints for
//! the focused pane taken from the active keymap.

use super::{fit, spinner, thousands, truncate, width};
use crate::engine::protocol::{FirstRunEnd, IndexProgress, RepoOverview, RepoState};
use crate::tui::action::Level;
use crate::tui::action::Mode;
use crate::tui::event::{ProviderState, ProviderStatus};
use crate::tui::theme::{Slot, Theme};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

/// What the status bar shows.
#[derive(Debug, Clone)]
pub struct StatusInfo<'a> {
    /// Short name of the current repository.
    pub repo: &'a str,
    /// Its overview, once known.
    pub overview: Option<&'a RepoOverview>,
    /// Progress of an index run this app started.
    pub progress: Option<&'a IndexProgress>,
    /// The model provider.
    pub provider: &'a ProviderStatus,
    /// The latest notice.
    pub notice: Option<(Level, &'a str)>,
    /// (keys, what) hints.
    pub hints: &'a [(String, &'static str)],
    /// The input mode (its tag leads the bar).
    pub mode: Mode,
    /// Animation step.
    pub step: u64,
}

/// The index part: `● ready 1,234 files`, `⠋ indexing 45% of bytes · 3/5 files` (a phase
/// without bytes: `⠋ embedding 30% · 120/400 chunks`), `○ not indexed`, `✗ folder missing`
/// (the folder deleted, its index left); `compact` drops
/// the count, and with it the percent's unit (nothing beside it to disagree with).
pub fn index_text(
    overview: Option<&RepoOverview>,
    progress: Option<&IndexProgress>,
    step: u64,
    compact: bool,
) -> (String, Slot) {
    if let Some(p) = progress.or(overview.and_then(|o| o.progress.as_ref())) {
        // By bytes where the phase counts them, else by its own count (chunks while embedding,
        // which has no bytes: it read 0% throughout, beside chunks shown as "files").
        let ratio = p.ratio();
        let pct = (ratio * 100.0).round() as u32;
        let phase = if p.phase.is_empty() { "indexing" } else { p.phase.as_str() };
        if compact {
            return (format!("{} {phase} {pct}%", spinner(step)), Slot::Warning);
        }
        let (done, total, unit) = p.measure();
        // A percent by bytes beside a count of files read as wrong (58% next to 2,226/2,295
        // files): it says what it counts when that is not the count beside it, in the room the
        // bar took (the Repos pane has the bar).
        let of_bytes = if p.bytes_total > 0 { " of bytes" } else { "" };
        return (
            format!(
                "{} {phase} {pct}%{of_bytes} · {}/{} {}",
                spinner(step),
                thousands(done),
                thousands(total),
                unit.noun(total)
            ),
            Slot::Warning,
        );
    }
    match overview {
        None => ("… checking index".into(), Slot::Muted),
        // The index outlives its folder: "ready" beside searches failing with "does not
        // exist" read as all being well (the Repos pane says `missing`).
        Some(o) if !o.exists && compact => ("✗ missing".into(), Slot::Error),
        Some(o) if !o.exists => ("✗ folder missing".into(), Slot::Error),
        Some(o) => match o.state {
            RepoState::NotIndexed => (format!("○ {}", not_indexed(o)), Slot::Warning),
            RepoState::Updating => (format!("{} updating", spinner(step)), Slot::Warning),
            RepoState::Error => ("✗ index error".into(), Slot::Error),
            RepoState::Ready if compact => ("● ready".into(), Slot::Ok),
            RepoState::Ready => {
                let watch = if o.watching { " · watching" } else { "" };
                (format!("● ready {}{watch}", super::count(o.files, "file", "files")), Slot::Ok)
            }
        },
    }
}

/// A repository without an index: `not indexed`, or how its first run ended before its first
/// commit (`first index interrupted`, killed in another process; `first index stopped`), as
/// `docdex status` says it.
pub fn not_indexed(o: &RepoOverview) -> &'static str {
    match o.first_run.map(|f| f.end) {
        None => "not indexed",
        Some(FirstRunEnd::Interrupted) => "first index interrupted",
        Some(FirstRunEnd::Stopped) => "first index stopped",
    }
}

/// The provider part: `llm ✓ phi3.5:3.8b`, `llm ✗ ollama`, `llm ? ollama` (not checked yet).
pub fn provider_text(p: &ProviderStatus) -> (String, Slot) {
    match &p.state {
        ProviderState::Unchecked => (format!("llm ? {}", p.provider), Slot::Muted),
        ProviderState::Ready => (format!("llm ✓ {}", p.model), Slot::Ok),
        ProviderState::Unavailable(_) => (format!("llm ✗ {}", p.provider), Slot::Warning),
    }
}

impl StatusInfo<'_> {
    /// Draws the bar into one row; returns false when the notice did not fit (the caller
    /// gives it a line of its own).
    pub fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) -> bool {
        if area.height == 0 {
            return self.notice.is_none();
        }
        let base = theme.style(Slot::StatusBar);
        buf.set_style(area, base);
        let w = area.width as usize;
        let (short_index, _) = index_text(self.overview, self.progress, self.step, true);
        let (provider, _) = provider_text(self.provider);
        // `llm ✓ phi3.5:3.8b` → `llm ✓` when the model name does not fit.
        let short_provider: String = provider.split(' ').take(2).collect::<Vec<_>>().join(" ");
        let repo = format!(" {} ", truncate(self.repo, 24));
        // The state (index and model, short forms) comes before the middle hints.
        let state_w =
            width(self.mode.tag()) + 2 + width(&repo) + 2 + width(&short_index) + 3 + width(&short_provider) + 1;
        let hints = self.hint_spans(state_w, w, theme);
        let hints_w: usize = hints.iter().map(|s| width(&s.content)).sum::<usize>() + 1;
        let left_w = w.saturating_sub(hints_w);
        let tag = format!(" {} ", self.mode.tag());
        let tag_slot = match self.mode {
            Mode::Normal => Slot::ModeNormal,
            Mode::Insert => Slot::ModeInsert,
        };
        let mut spans = vec![
            Span::styled(tag.clone(), theme.style(tag_slot)),
            Span::styled(repo.clone(), theme.style(Slot::StatusKey)),
            Span::styled("│ ", base),
        ];
        let used = width(&tag) + width(&repo) + 2;
        let short = ShortForms { index: &short_index, provider: &short_provider };
        let (used, notice_shown) = self.push_middle(&mut spans, used, left_w, &short, theme);
        spans.push(Span::styled(fit("", left_w.saturating_sub(used)), base));
        if hints_w <= w {
            spans.extend(hints);
        }
        buf.set_line(area.x, area.y, &Line::from(spans), area.width);
        notice_shown
    }

    /// The key hints that fit beside `state_w` columns of state in a bar `w` wide: the middle
    /// ones go first, from the last but one; the first (help) and the last (quit) stay while
    /// they fit, and at 40 columns help alone stays (it lists every key, quit included).
    fn hint_spans(&self, state_w: usize, w: usize, theme: &Theme) -> Vec<Span<'static>> {
        let hint_w = |(k, what): &(String, &str)| width(k) + width(what) + 2;
        let over = |kept: &[&(String, &str)]| state_w + kept.iter().map(|h| hint_w(h)).sum::<usize>() + 1 > w;
        let mut kept: Vec<&(String, &'static str)> = self.hints.iter().collect();
        while kept.len() > 2 && over(&kept) {
            kept.remove(kept.len() - 2);
        }
        if kept.len() == 2 && over(&kept) {
            kept.truncate(1);
        }
        let base = theme.style(Slot::StatusBar);
        kept.iter()
            .flat_map(|(k, what)| {
                [Span::styled(format!(" {k}"), theme.style(Slot::StatusKey)), Span::styled(format!(" {what}"), base)]
            })
            .collect()
    }

    /// The index state, the model and the notice, as parts separated by `│`; pushes what fits
    /// before `left_w` and returns the columns used and whether the notice was shown.
    fn push_middle(
        &self,
        spans: &mut Vec<Span<'static>>,
        mut used: usize,
        left_w: usize,
        short: &ShortForms<'_>,
        theme: &Theme,
    ) -> (usize, bool) {
        let base = theme.style(Slot::StatusBar);
        let middle = self.middle_parts();
        let last = middle.len() - 1;
        let mut shown = 0;
        let mut notice_shown = self.notice.is_none();
        for (k, (text, slot)) in middle.into_iter().enumerate() {
            let room = left_w.saturating_sub(used);
            let sep = if shown == 0 { "" } else { "│ " };
            let Some(piece) = fit_part(k, sep, &text, room, short) else { continue };
            if k == last && self.notice.is_some() {
                notice_shown = true;
            }
            shown += 1;
            used += width(&piece) + 1;
            spans.push(Span::styled(format!("{piece} "), theme.style(slot).patch(bg_only(base))));
        }
        (used, notice_shown)
    }

    /// Index state, model, and the notice when there is one, each with its colour.
    fn middle_parts(&self) -> Vec<(String, Slot)> {
        let mut middle = vec![index_text(self.overview, self.progress, self.step, false), provider_text(self.provider)];
        if let Some((level, text)) = self.notice {
            let slot = match level {
                Level::Info => Slot::Ok,
                Level::Warn => Slot::Warning,
                Level::Error => Slot::Error,
            };
            middle.push((text.to_string(), slot));
        }
        middle
    }
}

/// The short forms of the index part and the model part, for a narrow bar.
struct ShortForms<'a> {
    index: &'a str,
    provider: &'a str,
}

/// Part `k` of the middle as it fits in `room` columns, or None. State parts show whole (the
/// index part in short form if need be, leaving room for the model's short form after it) or
/// not at all; the notice (last) may be cut.
fn fit_part(k: usize, sep: &str, text: &str, room: usize, short: &ShortForms<'_>) -> Option<String> {
    let piece = format!("{sep}{text}");
    let reserve = if k == 0 { width(short.provider) + 3 } else { 0 };
    if width(&piece) + reserve < room {
        Some(piece)
    } else if k == 0 && width(short.index) < room {
        Some(short.index.to_string())
    } else if k == 1 && width(&format!("{sep}{}", short.provider)) < room {
        Some(format!("{sep}{}", short.provider))
    } else {
        None
    }
}

/// Only the background of a style, so coloured text keeps the bar's background.
fn bg_only(s: ratatui::style::Style) -> ratatui::style::Style {
    ratatui::style::Style { bg: s.bg, ..Default::default() }
}
