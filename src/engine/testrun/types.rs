//! `docdex run-tests` / MCP `docdex_run_tests`: the request and the structured result.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What to run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct RunTestsRequest {
    /// A repo-relative test file or directory to run (default: the whole suite); for pytest
    /// also a node id, `tests/test_x.py::test_y`.
    #[serde(default)]
    pub target: Option<String>,
    /// Run only the test files the change reaches (uncommitted work, plus the branch's
    /// commits since `since`), found through the import graph and by name; needs an index.
    #[serde(default)]
    pub affected: bool,
    /// With `affected`: a git ref; the branch's commits since its merge base with it count too.
    #[serde(default)]
    pub since: Option<String>,
    /// Stop the run after this many seconds (default `[tests] timeout_secs`, 600).
    #[serde(default)]
    pub timeout_secs: Option<u64>,
}

/// One failing test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TestFailure {
    /// The test's name as the runner reports it (`tests::bad`, `tests/test_x.py::test_bad`).
    pub name: String,
    /// Repo-relative file where it failed, when the runner says.
    pub file: Option<String>,
    /// The line, when the runner says.
    pub line: Option<u32>,
    /// The failure message's first line (a TAP `error: |-` block's lines joined into one, at most
    /// 400 characters), when the runner gives one.
    pub message: Option<String>,
    /// The runner that reported it, in a run of several runners (`cargo`, `pytest`); absent in
    /// a run of one, whose runner is the response's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TestStatus {
    /// Exit code 0.
    Passed,
    /// The runner exited non-zero.
    Failed,
    /// Killed at the timeout.
    TimedOut,
    /// No test ran: `affected` found no test the change reaches (nothing was run), pytest
    /// collected none (exit 5), or the runner's counts were all 0 (cargo's filter matched none).
    /// The CLI exits 5 for it (0 would read as a pass).
    NoTests,
}

/// The structured result of a run.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RunTestsResponse {
    /// Version of this shape.
    pub schema_version: u32,
    /// Repo root.
    pub repo: PathBuf,
    /// The runner: `cargo`, `pytest`, `node`, `npm`, `jest`, `vitest`, `go`, or `config`.
    pub runner: String,
    /// Why that runner (`Cargo.toml at the root`, `[tests] command in the config`).
    pub detected_by: String,
    /// The command line, argument by argument (empty when nothing was run).
    pub command: Vec<String>,
    /// Passed, failed, timed out, or no tests.
    pub status: TestStatus,
    /// The runner's exit code (`None` when killed or not run).
    pub exit_code: Option<i32>,
    /// Wall time, ms.
    pub duration_ms: f64,
    /// Tests passed, as the runner counted them.
    pub passed: u32,
    /// Tests failed.
    pub failed: u32,
    /// Tests skipped or ignored.
    pub skipped: u32,
    /// The failing tests, with file and line where the runner gives them.
    pub failures: Vec<TestFailure>,
    /// With `affected`: the test files chosen, each with why.
    pub selected: Vec<String>,
    /// The last lines of the output (stdout and stderr interleaved as they came).
    pub output_tail: String,
    /// What else to know (a timeout, counts the output did not give).
    pub notes: Vec<String>,
    /// When the run took more than one runner process (pytest once per configuration, go test
    /// once per module), each of them; `command` is then the first's, and the counts, failures
    /// and `exit_code` are all of them merged. Empty for a run of one process.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<TestRun>,
    /// When the run covered several runners (a Rust crate and a Python package in one
    /// repository: cargo, then pytest), each runner's share, in the order they ran; `runner`,
    /// `detected_by` and `command` are then the first's, and the status, counts, failures and
    /// `exit_code` are all of them merged. Empty for a run of one runner.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runners: Vec<RunnerResult>,
}

/// One runner's share of a run that covered several.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RunnerResult {
    /// The runner (`cargo`, `go`, `pytest`, ...).
    pub runner: String,
    /// Why it ran (`Cargo.toml at the root`).
    pub detected_by: String,
    /// How its tests went; `no_tests` also when it did not run (`not_run` says why).
    pub status: TestStatus,
    /// Its exit code (the merged one when it ran several processes; `None` when killed or not run).
    pub exit_code: Option<i32>,
    /// Its wall time, ms.
    pub duration_ms: f64,
    /// Its tests passed.
    pub passed: u32,
    /// Its tests failed.
    pub failed: u32,
    /// Its tests skipped.
    pub skipped: u32,
    /// Its (first) command line, empty when it did not run.
    pub command: Vec<String>,
    /// Why its tests did not run (its program missing, the timeout already struck), if they did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_run: Option<String>,
}

impl RunnerResult {
    /// `runner`'s share as `run`, its own response, reports it: status, exit code, time, counts
    /// and (first) command; `not_run` says why its tests did not run, if they did not. The one
    /// place a share is built, whether the runner ran or not.
    pub fn of(runner: &str, detected_by: String, run: &RunTestsResponse, not_run: Option<String>) -> RunnerResult {
        RunnerResult {
            runner: runner.into(),
            detected_by,
            status: run.status,
            exit_code: run.exit_code,
            duration_ms: run.duration_ms,
            passed: run.passed,
            failed: run.failed,
            skipped: run.skipped,
            command: run.command.clone(),
            not_run,
        }
    }
}

impl RunTestsResponse {
    /// A run of `runner` on `repo` before anything ran: no tests, no counts, nothing to say yet.
    pub fn not_run(repo: PathBuf, runner: &str, detected_by: String) -> RunTestsResponse {
        RunTestsResponse {
            schema_version: 1,
            repo,
            runner: runner.into(),
            detected_by,
            command: Vec::new(),
            status: TestStatus::NoTests,
            exit_code: None,
            duration_ms: 0.0,
            passed: 0,
            failed: 0,
            skipped: 0,
            failures: Vec::new(),
            selected: Vec::new(),
            output_tail: String::new(),
            notes: Vec::new(),
            runs: Vec::new(),
            runners: Vec::new(),
        }
    }
}

/// One runner process of a run that took several.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TestRun {
    /// The repo-relative directory it ran in (`""` for the root): its configuration's or
    /// module's.
    pub dir: String,
    /// Its command line.
    pub command: Vec<String>,
    /// Its exit code (`None` when killed, or not started as the timeout had struck).
    pub exit_code: Option<i32>,
    /// Its tests passed, failed, skipped.
    pub passed: u32,
    /// Tests failed.
    pub failed: u32,
    /// Tests skipped.
    pub skipped: u32,
    /// Its runner, in a run of several runners; absent in a run of one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A share is built one way: from the runner's response, counts and command copied, or from
    /// a response of nothing run with the reason.
    #[test]
    fn a_runner_share_is_its_response_in_brief() {
        let mut ran = RunTestsResponse::not_run(PathBuf::from("/r"), "cargo", "Cargo.toml at the root".into());
        (ran.status, ran.exit_code, ran.duration_ms) = (TestStatus::Failed, Some(101), 12.5);
        (ran.passed, ran.failed, ran.skipped, ran.command) = (3, 1, 2, vec!["cargo".into(), "test".into()]);
        let share = RunnerResult::of("cargo", "Cargo.toml at the root".into(), &ran, None);
        assert_eq!((share.status, share.exit_code, share.duration_ms), (TestStatus::Failed, Some(101), 12.5));
        assert_eq!((share.passed, share.failed, share.skipped), (3, 1, 2));
        assert_eq!((share.command.len(), share.not_run), (2, None));
        let nothing = RunTestsResponse::not_run(PathBuf::new(), "go", "go.mod at the root".into());
        let share = RunnerResult::of("go", "go.mod at the root".into(), &nothing, Some("go is not on PATH".into()));
        assert_eq!((share.status, share.exit_code, share.passed + share.failed), (TestStatus::NoTests, None, 0));
        assert_eq!((share.runner.as_str(), share.not_run.as_deref()), ("go", Some("go is not on PATH")));
    }
}
