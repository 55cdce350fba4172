//! Which pane is which: the identifiers actions, the layout and the app use to
//! name a pane, below the panes themselves so none of those imports a pane.

use super::keymap::{Command, Context};

/// The panes, in tab order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PaneId {
    /// Registered repositories.
    Repos,
    /// Search as you type with preview.
    Search,
    /// Chat with the repository.
    Chat,
    /// The waterfall trace of a chat turn.
    Trace,
    /// The reasoning DAG viewer.
    Dag,
    /// The impact graph.
    Impact,
    /// The profile editor.
    Profile,
}

impl PaneId {
    /// All panes in tab order.
    pub const ALL: [PaneId; 7] =
        [PaneId::Repos, PaneId::Search, PaneId::Chat, PaneId::Trace, PaneId::Dag, PaneId::Impact, PaneId::Profile];

    /// Tab label.
    pub fn title(self) -> &'static str {
        match self {
            PaneId::Repos => "Repos",
            PaneId::Search => "Search",
            PaneId::Chat => "Chat",
            PaneId::Trace => "Trace",
            PaneId::Dag => "DAG",
            PaneId::Impact => "Impact",
            PaneId::Profile => "Profile",
        }
    }

    /// Tab label where the full titles do not fit (never more than four characters).
    pub fn short_title(self) -> &'static str {
        match self {
            PaneId::Repos => "Repo",
            PaneId::Search => "Srch",
            PaneId::Chat => "Chat",
            PaneId::Trace => "Trce",
            PaneId::Dag => "DAG",
            PaneId::Impact => "Impt",
            PaneId::Profile => "Prof",
        }
    }

    /// The keymap context of the pane.
    pub fn context(self) -> Context {
        match self {
            PaneId::Repos => Context::Repos,
            PaneId::Search => Context::Search,
            PaneId::Chat => Context::Chat,
            PaneId::Trace => Context::Trace,
            PaneId::Dag => Context::Dag,
            PaneId::Impact => Context::Impact,
            PaneId::Profile => Context::Profile,
        }
    }

    /// The `goto_*` command that focuses it.
    pub fn goto(self) -> Command {
        match self {
            PaneId::Repos => Command::GotoRepos,
            PaneId::Search => Command::GotoSearch,
            PaneId::Chat => Command::GotoChat,
            PaneId::Trace => Command::GotoTrace,
            PaneId::Dag => Command::GotoDag,
            PaneId::Impact => Command::GotoImpact,
            PaneId::Profile => Command::GotoProfile,
        }
    }

    /// Position in tab order.
    pub fn index(self) -> usize {
        PaneId::ALL.iter().position(|p| *p == self).unwrap_or(0)
    }
}
