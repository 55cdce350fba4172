//! `docdex run-tests`: the repository's tests (all, a target, or those a change reaches) run
//! by their own runner with a timeout, reported as structured JSON or a short summary, over
//! [`Engine::run_tests`].

use super::output::{visible, visible_text, Out};
use super::RepoArg;
use crate::engine::protocol::{RunTestsRequest, RunTestsResponse, TestStatus};
use crate::engine::Engine;
use std::process::ExitCode;

/// `docdex run-tests`.
#[derive(Debug, clap::Args)]
pub struct RunTestsArgs {
    #[command(flatten)]
    repo: RepoArg,
    /// A test file or directory to run (repo-relative, or relative to the current directory
    /// inside the repo), for pytest also a node id (`tests/test_x.py::test_y`); default the
    /// whole suite.
    #[arg(long, value_name = "FILE|DIR")]
    target: Option<String>,
    /// Only the tests the change reaches (uncommitted work; with --since, the branch's commits too).
    #[arg(long)]
    affected: bool,
    /// With --affected: also the changes committed since the branch forked from REF.
    #[arg(long, value_name = "REF", requires = "affected")]
    since: Option<String>,
    /// Kill the run after this many seconds (default `[tests] timeout_secs`).
    #[arg(long, value_name = "SECS")]
    timeout: Option<u64>,
    /// Print the structured result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `docdex run-tests`: exit 0 when the tests pass (or none ran: status `no_tests`), 1 when
/// they fail or time out.
pub fn run(engine: &Engine, out: &Out, args: RunTestsArgs) -> anyhow::Result<ExitCode> {
    let req = RunTestsRequest {
        target: args.target.as_deref().map(|t| args.repo.user_path(t)),
        affected: args.affected,
        since: args.since,
        timeout_secs: args.timeout,
    };
    let resp = engine.run_tests(&args.repo.resolve()?, &req)?;
    if args.json {
        out.json(&resp)?;
    } else {
        print(out, &resp);
    }
    Ok(match resp.status {
        TestStatus::Passed | TestStatus::NoTests => ExitCode::SUCCESS,
        TestStatus::Failed | TestStatus::TimedOut => ExitCode::from(1),
    })
}

fn print(out: &Out, r: &RunTestsResponse) {
    for s in &r.selected {
        out.line(&format!("selected {}", visible(s)));
    }
    if !r.command.is_empty() {
        out.line(&visible(&format!("$ {}   ({}: {})", r.command.join(" "), r.runner, r.detected_by)));
        if !r.output_tail.is_empty() {
            out.block(&format!("{}\n", visible_text(&r.output_tail)));
        }
    }
    for f in &r.failures {
        let at = match (&f.file, f.line) {
            (Some(file), Some(line)) => format!("{file}:{line}  "),
            (Some(file), None) => format!("{file}  "),
            _ => String::new(),
        };
        out.line(&visible(&format!("FAILED {at}{}", f.name)));
    }
    let status = match r.status {
        TestStatus::Passed => "passed",
        TestStatus::Failed => "failed",
        TestStatus::TimedOut => "timed out",
        TestStatus::NoTests => "no tests",
    };
    out.line(&format!(
        "{status}: {} passed, {} failed, {} skipped in {:.2} s (exit {})",
        r.passed,
        r.failed,
        r.skipped,
        r.duration_ms / 1000.0,
        r.exit_code.map(|c| c.to_string()).unwrap_or_else(|| "-".into())
    ));
    for n in &r.notes {
        out.note(&visible(n));
    }
}
