//! `docdex check`: the readiness report, one line per check, or `--json`; exit
//! code 1 when a prerequisite failed.

use super::output::{count, visible, Out};
use crate::engine::protocol::{CheckOptions, CheckReport, CheckStatus};
use crate::engine::Engine;
use std::path::PathBuf;
use std::process::ExitCode;

/// `docdex check` flags.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Also check this repository's index, embeddings, symbols and memory (default: the
    /// repository of the current directory, when docdex has indexed it).
    #[arg(long)]
    repo: Option<PathBuf>,
    /// Treat a missing model server or model as a failure (default: a warning).
    #[arg(long)]
    require_llm: bool,
    /// Treat an HTTP bind address already in use as a failure (default: a warning).
    #[arg(long)]
    require_bind: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs the checks and prints them.
pub fn run(engine: &Engine, out: &Out, args: CheckArgs) -> anyhow::Result<ExitCode> {
    let repo = args.repo.or_else(|| indexed_here(engine));
    let opts = CheckOptions { repo, require_llm: args.require_llm, require_bind: args.require_bind };
    let report = engine.check(&opts);
    if args.json {
        out.json(&report)?;
    } else {
        print(out, &report);
    }
    Ok(if report.ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn print(out: &Out, r: &CheckReport) {
    for item in &r.items {
        let tag = match item.status {
            CheckStatus::Ok => out.paint("32", "ok  "),
            CheckStatus::Warn => out.paint("33", "warn"),
            CheckStatus::Fail => out.paint("1;31", "FAIL"),
            CheckStatus::Info => out.paint("2", "info"),
            CheckStatus::Skipped => out.paint("2", "skip"),
        };
        out.line(&format!("{tag} {:<16} {}", item.name, visible(&item.message)));
        if let Some(h) = &item.hint {
            if item.status != CheckStatus::Ok {
                out.line(&format!("     {:<16} -> {}", "", visible(h)));
            }
        }
    }
    let verdict = if r.ok { "ready" } else { "not ready" };
    out.line(&format!("{verdict}: {} failed, {}", r.failures, count(r.warnings, "warning")));
}

/// The repository of the current directory, when it has an index: run inside a project,
/// `docdex check` checks that project too.
fn indexed_here(engine: &Engine) -> Option<PathBuf> {
    let cwd = std::env::current_dir().ok()?;
    let repo = engine.resolve_repo(&engine.discover_repo(&cwd)).ok()?;
    repo.index_dir().join("meta.json").exists().then_some(repo.root)
}
