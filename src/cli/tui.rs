//! `docdex tui` (and `docdex` with no arguments on a terminal): opens the
//! workbench on a repository. Everything else lives in `crate::tui`.

use super::RepoArg;
use crate::engine::Engine;
use crate::tui::TuiOptions;
use std::io::IsTerminal;

/// Arguments of `docdex tui`.
#[derive(Debug, clap::Args)]
pub struct TuiArgs {
    #[command(flatten)]
    pub(super) repo: RepoArg,
}

/// True when both stdin and stdout are terminals (the workbench needs both).
pub fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// Runs the workbench.
pub fn run(engine: Engine, args: &TuiArgs) -> anyhow::Result<()> {
    if !interactive() {
        return Err(crate::error::Error::BadRequest(
            "docdex tui needs a terminal (stdin and stdout must be a TTY); use the other commands in scripts".into(),
        )
        .into());
    }
    let repo = args.repo.resolve()?;
    crate::tui::run(engine, TuiOptions { repo })
}
