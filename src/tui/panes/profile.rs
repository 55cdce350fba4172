//! The profile editor. Profile (preference) memory does not exist yet; the
//! pane says what it will hold and how it will be used, so the tab is honest
//! rather than empty.

use super::{needs, Cx, Pane, PaneId, RenderCtx};
use crate::tui::keymap::Command;
use crate::tui::widgets::frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;

/// The profile pane (static until profile memory exists).
#[derive(Debug, Default)]
pub struct ProfilePane;

impl Pane for ProfilePane {
    fn id(&self) -> PaneId {
        PaneId::Profile
    }

    fn command(&mut self, _cmd: Command, _cx: &mut Cx<'_>) -> bool {
        false
    }

    fn render(&self, area: Rect, buf: &mut Buffer, cx: &RenderCtx<'_>) -> Option<(u16, u16)> {
        let block = frame(" Profile ", cx.focused, cx.theme);
        let inner = block.inner(area);
        block.render(area, buf);
        let status = "Profile memory is not built yet, so there is nothing to edit here.";
        needs(
            inner,
            buf,
            cx.theme,
            "The profile editor will hold your agents' preferences",
            &[
                status,
                "It will list agent personas (for example a frontend or a security reviewer) and, for each, the preferences and constraints learned or set by hand: style rules (\"use semantic versioning\"), constraints (\"avoid circular dependencies\", \"deprecate moment.js\"), and facts, each with its category, source and when it last changed.",
                "You will be able to add, edit and remove them here. Constraint rules will also feed the impact graph's risk overlay, which today marks only cycles and unresolved imports.",
            ],
        );
        None
    }
}
