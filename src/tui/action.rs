//! Actions: what panes emit when something should happen outside them. The
//! app routes each one (to the engine worker, another pane, the editor, a
//! prompt), so panes never call each other or the engine (gitui's queue).

use super::event::Request;
use super::pane_id::PaneId;
use std::path::PathBuf;

/// Something a pane wants done.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Send work to the engine worker.
    Request(Request),
    /// Switch to a pane.
    Focus(PaneId),
    /// Suspend the TUI and open `$EDITOR` at a line.
    OpenEditor {
        /// Repo-relative path.
        path: String,
        /// 1-based line.
        line: u32,
    },
    /// Show a file's lines in the search pane (citations jump here).
    ShowInPreview {
        /// Repo-relative path.
        path: String,
        /// 1-based first line.
        line: u32,
        /// 1-based last line.
        line_end: u32,
    },
    /// Centre the impact graph on a file and switch to it.
    OpenImpact {
        /// Repo-relative path.
        path: String,
    },
    /// Make another repository the current one.
    SwitchRepo(PathBuf),
    /// Ask the user for a line of text.
    Prompt(PromptKind),
    /// Tell the user something in the status bar.
    Notify(Level, String),
}

/// What a prompt is for; the answer is routed accordingly.
#[derive(Debug, Clone, PartialEq)]
pub enum PromptKind {
    /// The path of a repository to add and index.
    AddRepo,
    /// A path prefix filter for search (pre-filled with the current one).
    PathFilter(String),
    /// A language filter for search (pre-filled with the current one).
    LangFilter(String),
    /// Confirm removing a repository from the registry.
    ConfirmRemove(PathBuf),
}

/// How loud a notice is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Good news or plain information.
    Info,
    /// Worth knowing; nothing failed.
    Warn,
    /// Something failed.
    Error,
}

/// The input mode, shown as a tag in the status bar (like helix's NOR / INS).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Keys are commands; a printable key that is none goes to the pane's text field.
    Normal,
    /// A text field has focus: printable and editing keys edit it.
    Insert,
}

impl Mode {
    /// The tag in the status bar.
    pub fn tag(self) -> &'static str {
        match self {
            Mode::Normal => "NOR",
            Mode::Insert => "INS",
        }
    }
}

/// One status message, kept for the message log.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// When (wall clock, epoch ms).
    pub epoch_ms: u64,
    /// How serious.
    pub level: Level,
    /// The whole text.
    pub text: String,
    /// How many times in a row it came (the time is the last one's).
    pub repeats: u32,
}
