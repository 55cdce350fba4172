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

/// The tab labels (` 1 Repos `, ...) with their x ranges, given each pane's key label.
pub fn tabs(area: Rect, keys: &[(PaneId, String)]) -> Vec<(PaneId, String, u16, u16)> {
    let mut x = area.x;
    let mut out = Vec::new();
    for (id, key) in keys {
        let label = format!(" {key} {} ", id.title());
        let w = super::widgets::width(&label) as u16;
        if x + w > area.x + area.width {
            break;
        }
        out.push((*id, label, x, x + w));
        x += w + 1;
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
        let t = tabs(Rect::new(0, 0, 80, 1), &keys);
        assert_eq!(t.len(), 7);
        assert_eq!(tab_at(&t, t[1].2), Some(PaneId::Search));
        assert_eq!(tab_at(&t, 79), None);
    }
}
