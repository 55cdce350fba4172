//! Screen layout as pure functions of the terminal size: the tab bar, the
//! focused pane's area and the status bar, plus where each tab sits for mouse
//! clicks. Panes lay out their own insides the same way (see
//! `panes::search::layout`), so every arrangement is testable without a
//! terminal.

use super::pane_id::PaneId;
use ratatui::layout::Rect;

/// Smallest size the workbench draws itself at.
pub const MIN_SIZE: (u16, u16) = (40, 10);

/// The three bands of the screen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AppLayout {
    /// Tab bar (one row).
    pub tabs: Rect,
    /// The focused pane.
    pub main: Rect,
    /// Status bar (one row).
    pub status: Rect,
}

/// Splits the screen; `None` when it is smaller than [`MIN_SIZE`].
pub fn layout(area: Rect) -> Option<AppLayout> {
    if area.width < MIN_SIZE.0 || area.height < MIN_SIZE.1 {
        return None;
    }
    Some(AppLayout {
        tabs: Rect { height: 1, ..area },
        main: Rect { y: area.y + 1, height: area.height - 2, ..area },
        status: Rect { y: area.y + area.height - 1, height: 1, ..area },
    })
}

/// The tab labels (` 1 Repos `, ...) with their x ranges, given each pane's key label. Every
/// pane keeps a tab: where the full titles do not fit they first lose the gaps between them,
/// then the tabs other than `focus` shrink to short titles (` 7 Prof `), then to their key
/// alone (` 7 `); the focused tab always keeps its whole title. Only a bar narrower than
/// [`MIN_SIZE`] (never drawn) could run out, and then the last tabs are cut with `…`.
pub fn tabs(area: Rect, keys: &[(PaneId, String)], focus: PaneId) -> Vec<(PaneId, String, u16, u16)> {
    let full = |id: PaneId, key: &str| format!(" {key} {} ", id.title());
    // (label of a tab, gap after it), widest first.
    #[allow(clippy::type_complexity)]
    let styles: [(&dyn Fn(PaneId, &str) -> String, u16); 4] = [
        (&full, 1),
        (&full, 0),
        (&|id: PaneId, key: &str| if id == focus { full(id, key) } else { format!(" {key} {} ", id.short_title()) }, 0),
        (&|id: PaneId, key: &str| if id == focus { full(id, key) } else { format!(" {key} ") }, 0),
    ];
    let mut labels: Vec<(PaneId, String)> = Vec::new();
    let mut gap = 0;
    for (label, g) in styles {
        labels = keys.iter().map(|(id, key)| (*id, label(*id, key))).collect();
        gap = g;
        let total: u16 = labels.iter().map(|(_, l)| super::widgets::width(l) as u16 + g).sum::<u16>();
        if total.saturating_sub(g) <= area.width {
            break;
        }
    }
    let mut x = area.x;
    let mut out = Vec::new();
    let end = area.x + area.width;
    for (id, label) in labels {
        let w = super::widgets::width(&label) as u16;
        if x + w > end {
            if x < end {
                out.push((id, "…".to_string(), x, x + 1));
            }
            break;
        }
        out.push((id, label, x, x + w));
        x += w + gap;
    }
    out
}

/// The tab under column `col`, if any.
pub fn tab_at(tabs: &[(PaneId, String, u16, u16)], col: u16) -> Option<PaneId> {
    tabs.iter().find(|(_, _, a, b)| col >= *a && col < *b).map(|(id, _, _, _)| *id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands_fill_the_screen() {
        let l = layout(Rect::new(0, 0, 80, 24)).unwrap_or_default();
        assert_eq!(l.tabs, Rect::new(0, 0, 80, 1));
        assert_eq!(l.main, Rect::new(0, 1, 80, 22));
        assert_eq!(l.status, Rect::new(0, 23, 80, 1));
        assert!(layout(Rect::new(0, 0, 39, 24)).is_none());
    }

    #[test]
    fn every_tab_fits_at_80_columns() {
        let keys: Vec<(PaneId, String)> =
            PaneId::ALL.iter().enumerate().map(|(i, p)| (*p, (i + 1).to_string())).collect();
        let t = tabs(Rect::new(0, 0, 80, 1), &keys, PaneId::Search);
        assert_eq!(t.len(), 7);
        assert_eq!(tab_at(&t, t[1].2), Some(PaneId::Search));
        assert_eq!(tab_at(&t, 79), None);
        assert!(t.iter().all(|(id, label, _, _)| label.contains(id.title())), "full titles at 80: {t:?}");
    }

    #[test]
    fn no_tab_is_dropped_down_to_the_smallest_width() {
        let keys: Vec<(PaneId, String)> =
            PaneId::ALL.iter().enumerate().map(|(i, p)| (*p, (i + 1).to_string())).collect();
        for width in MIN_SIZE.0..=80 {
            for focus in PaneId::ALL {
                let t = tabs(Rect::new(0, 0, width, 1), &keys, focus);
                let ids: Vec<PaneId> = t.iter().map(|(id, _, _, _)| *id).collect();
                assert_eq!(ids, PaneId::ALL, "every pane has a tab at {width} columns");
                assert!(t.iter().all(|(_, _, _, b)| *b <= width), "{width}: {t:?}");
                let mine = t.iter().find(|(id, _, _, _)| *id == focus).map(|(_, l, _, _)| l.clone());
                assert_eq!(mine, Some(format!(" {} {} ", focus.index() + 1, focus.title())), "{width}");
                // Clicks land on the tab drawn there.
                for (id, _, a, b) in &t {
                    assert_eq!(tab_at(&t, *a), Some(*id));
                    assert_eq!(tab_at(&t, b - 1), Some(*id));
                }
            }
        }
        let at60 = tabs(Rect::new(0, 0, 60, 1), &keys, PaneId::Search);
        assert!(at60.iter().any(|(_, l, _, _)| l == " 7 Prof "), "{at60:?}");
    }
}
