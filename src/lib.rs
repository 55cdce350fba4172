//! docdex: local-first code and documentation intelligence.
//!
//! The crate is the engine; every surface (the `docdex` command line, the `tui`
//! workbench, and the HTTP and MCP servers) is a thin adapter over [`Engine`]. Start at
//! `docs/ARCHITECTURE.md` for the map of modules and how data flows through them.

#![warn(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

/// `eprintln!` that shrugs off a closed stderr (`docdex ... 2>&1 | head`) instead of
/// panicking: a message nobody can read any more is not a failure of the command.
macro_rules! eline {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `eprint!` without the newline, with the same indifference to a closed stderr.
macro_rules! eline_partial {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut err = std::io::stderr();
        let _ = write!(err, $($arg)*);
        let _ = err.flush();
    }};
}

pub mod cli;
pub mod config;
pub mod engine;
pub mod error;
pub mod server;
#[cfg(any(debug_assertions, feature = "test-support"))]
#[doc(hidden)]
pub mod testing;
pub mod tui;

pub use engine::Engine;
pub use error::{Error, Result};
