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
#[command(after_help = EXIT_CODES)]
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

/// The exit codes, in `--help`: a script or CI step must tell "nothing ran" from "all passed".
const EXIT_CODES: &str = "Exit codes: 0 the tests passed; 1 a test failed or the run timed out; 2 bad input (a target \
outside the repository, no runner found, the runner not installed); 3 an unknown repository, or --affected on one not indexed; 5 no \
test ran (status no_tests: the change reaches no test file, the runner collected or matched none; pytest's code for \
the same). --json reports it as \"status\": \"no_tests\"; its exit_code is the runner's own.";

/// Exit code of a run that ran no test (status `no_tests`): pytest's own for "no tests
/// collected". It was 0, so a CI step could not tell nothing run from all passed.
const NO_TESTS_EXIT: u8 = 5;

/// Runs `docdex run-tests`: exit 0 when the tests pass, 1 when they fail or time out,
/// [`NO_TESTS_EXIT`] when none ran (status `no_tests`).
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
        TestStatus::Passed => ExitCode::SUCCESS,
        TestStatus::NoTests => ExitCode::from(NO_TESTS_EXIT),
        TestStatus::Failed | TestStatus::TimedOut => ExitCode::from(1),
    })
}

fn print(out: &Out, r: &RunTestsResponse) {
    for s in &r.selected {
        out.line(&format!("selected {}", visible(s)));
    }
    if !r.command.is_empty() {
        out.line(&visible(&format!("$ {}   ({}: {})", r.command.join(" "), r.runner, r.detected_by)));
        // A run of several processes: the others, each with where it ran.
        for run in r.runs.iter().skip(1) {
            let dir = if run.dir.is_empty() { "." } else { run.dir.as_str() };
            out.line(&visible(&format!("$ (cd {dir}) {}", run.command.join(" "))));
        }
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
        TestStatus::NoTests => "no tests (nothing ran)",
    };
    out.line(&format!(
        "{status}: {} passed, {} failed, {} skipped in {:.2} s (runner exit {})",
        r.passed,
        r.failed,
        r.skipped,
        r.duration_ms / 1000.0,
        r.exit_code.map(|c| c.to_string()).unwrap_or_else(|| "-".into())
    ));
    // A run of several runners: each one's share.
    for share in &r.runners {
        let how = match (&share.not_run, share.status) {
            (Some(why), _) => format!("not run ({why})"),
            (None, TestStatus::Passed) => "passed".into(),
            (None, TestStatus::Failed) => "failed".into(),
            (None, TestStatus::TimedOut) => "timed out".into(),
            (None, TestStatus::NoTests) => "no tests".into(),
        };
        out.line(&visible(&format!(
            "  {}: {how}: {} passed, {} failed, {} skipped",
            share.runner, share.passed, share.failed, share.skipped
        )));
    }
    for n in &r.notes {
        out.note(&visible(n));
    }
}
