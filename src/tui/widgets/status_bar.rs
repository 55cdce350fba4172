//! The bottom line: which repository, the index state (with progress while a
//! run is going), the model provider, the latest notice, and key hints for
//! the focused pane taken from the active keymap.

use super::{bar, fit, spinner, thousands, truncate, width};
use crate::engine::protocol::{IndexProgress, RepoOverview, RepoState};
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

/// The index part: `● ready 1,234 files`, `⠋ indexing 45% ███░░ 3/5 files`, `○ not indexed`;
/// `compact` drops the bar and counts.
pub fn index_text(
    overview: Option<&RepoOverview>,
    progress: Option<&IndexProgress>,
    step: u64,
    compact: bool,
) -> (String, Slot) {
    if let Some(p) = progress.or(overview.and_then(|o| o.progress.as_ref())) {
        let ratio = if p.bytes_total > 0 { p.bytes_done as f64 / p.bytes_total as f64 } else { 0.0 };
        let pct = (ratio * 100.0).round() as u32;
        let phase = if p.phase.is_empty() { "indexing" } else { p.phase.as_str() };
        if compact {
            return (format!("{} {phase} {pct}%", spinner(step)), Slot::Warning);
        }
        let (f, e) = bar(ratio, 8);
        return (
            format!(
                "{} {phase} {pct}% {f}{e} {}/{}",
                spinner(step),
                thousands(p.files_done),
                super::count(p.files_total, "file", "files")
            ),
            Slot::Warning,
        );
    }
    match overview {
        None => ("… checking index".into(), Slot::Muted),
        Some(o) => match o.state {
            RepoState::NotIndexed => ("○ not indexed".into(), Slot::Warning),
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
        let (index, index_slot) = index_text(self.overview, self.progress, self.step, false);
        let (short_index, _) = index_text(self.overview, self.progress, self.step, true);
        let (provider, provider_slot) = provider_text(self.provider);
        // `llm ✓ phi3.5:3.8b` → `llm ✓` when the model name does not fit.
        let short_provider: String = provider.split(' ').take(2).collect::<Vec<_>>().join(" ");
        let repo = format!(" {} ", truncate(self.repo, 24));
        // The state (index and model, short forms) comes before the middle hints: those go
        // first, from the last but one; the first (help) and the last (quit) stay while they fit.
        let state_w =
            width(self.mode.tag()) + 2 + width(&repo) + 2 + width(&short_index) + 3 + width(&short_provider) + 1;
        let hint_w = |(k, what): &(String, &str)| width(k) + width(what) + 2;
        let mut kept: Vec<&(String, &'static str)> = self.hints.iter().collect();
        while kept.len() > 2 && state_w + kept.iter().map(|h| hint_w(h)).sum::<usize>() + 1 > w {
            kept.remove(kept.len() - 2);
        }
        // Very narrow (40 columns): help alone, which lists every key, quit included.
        if kept.len() == 2 && state_w + kept.iter().map(|h| hint_w(h)).sum::<usize>() + 1 > w {
            kept.truncate(1);
        }
        let hints: Vec<Span<'static>> = kept
            .iter()
            .flat_map(|(k, what)| {
                [Span::styled(format!(" {k}"), theme.style(Slot::StatusKey)), Span::styled(format!(" {what}"), base)]
            })
            .collect();
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
        let mut used = width(&tag) + width(&repo) + 2;
        let mut middle: Vec<(String, Slot)> = vec![(index, index_slot), (provider, provider_slot)];
        if let Some((level, text)) = self.notice {
            let slot = match level {
                Level::Info => Slot::Ok,
                Level::Warn => Slot::Warning,
                Level::Error => Slot::Error,
            };
            middle.push((text.to_string(), slot));
        }
        let last = middle.len() - 1;
        let mut shown = 0;
        let mut notice_shown = self.notice.is_none();
        for (k, (text, slot)) in middle.into_iter().enumerate() {
            let room = left_w.saturating_sub(used);
            let sep = if shown == 0 { "" } else { "│ " };
            let piece = format!("{sep}{text}");
            // State parts show whole (the index part in short form if need be) or not at all;
            // the notice (last) may be cut.
            // The index part leaves room for the model's short form after it.
            let reserve = if k == 0 { width(&short_provider) + 3 } else { 0 };
            let piece = if width(&piece) + reserve < room {
                piece
            } else if k == 0 && width(&short_index) < room {
                short_index.clone()
            } else if k == 1 && width(&format!("{sep}{short_provider}")) < room {
                format!("{sep}{short_provider}")
            } else {
                continue;
            };
            if k == last && self.notice.is_some() {
                notice_shown = true;
            }
            shown += 1;
            used += width(&piece) + 1;
            spans.push(Span::styled(format!("{piece} "), theme.style(slot).patch(bg_only(base))));
        }
        let pad = left_w.saturating_sub(used);
        spans.push(Span::styled(fit("", pad), base));
        if hints_w <= w {
            spans.extend(hints);
        }
        buf.set_line(area.x, area.y, &Line::from(spans), area.width);
        notice_shown
    }
}

/// Only the background of a style, so coloured text keeps the bar's background.
fn bg_only(s: ratatui::style::Style) -> ratatui::style::Style {
    ratatui::style::Style { bg: s.bg, ..Default::default() }
}
