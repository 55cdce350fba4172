//! One way for the engine to run git: in the repository's own directory, paths unquoted, never
//! prompting, and blind to `GIT_DIR` / `GIT_WORK_TREE` inherited from the caller (a git hook
//! sets them, and they would point git at another repository than the one asked about).

use crate::engine::process::{output_within, Bounds, RunError};
use crate::error::{Error, Result};
use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

/// A git command rooted at `root`, set up as above; callers add arguments and run it.
pub fn command(root: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(root)
        .args(["-c", "core.quotepath=off"])
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE");
    cmd
}

/// Runs git with `args` in `root` and returns what it printed, whatever its exit status.
/// `purpose` names what needs git ("--from-git", "changed files") for the error a user sees
/// when git is missing.
pub fn output<S: AsRef<OsStr>>(root: &Path, args: &[S], purpose: &str) -> Result<Output> {
    run(command(root).args(args), root, purpose)
}

/// What one git run may take: a git stuck on a lock or a network file system must not hold a
/// request, and a diff over a vendored tree must not fill memory.
pub const BOUNDS: Bounds = Bounds { time: Duration::from_secs(120), stdout_bytes: 256 * 1024 * 1024 };

/// Runs a prepared [`command`] within [`BOUNDS`] (and the caller's cancellation); errors as
/// [`output`].
pub fn run(cmd: &mut Command, root: &Path, purpose: &str) -> Result<Output> {
    run_within(cmd, root, purpose, BOUNDS)
}

/// [`run`] with bounds of its own (a search waits for git less long than a command does).
pub fn run_within(cmd: &mut Command, root: &Path, purpose: &str, bounds: Bounds) -> Result<Output> {
    output_within(cmd, bounds).map_err(|e| match e {
        // A directory that is gone fails the start with the same `NotFound` as a missing git.
        RunError::Start(e) if e.kind() == std::io::ErrorKind::NotFound && root.is_dir() => {
            Error::BadRequest(format!("{purpose} runs git, which is not installed or not on PATH"))
        }
        RunError::Start(e) | RunError::Wait(e) => Error::io("running git in", root, e),
        RunError::Cancelled => Error::Cancelled,
        e @ RunError::TimedOut(_) => Error::Upstream(format!(
            "git, run in {} for {purpose}: {e}. Is another git process holding the repository's lock?",
            root.display()
        )),
        e @ RunError::TooLarge(_) => Error::BadRequest(format!(
            "git, run in {} for {purpose}: {e}; narrow it to fewer paths or commits",
            root.display()
        )),
    })
}

/// The first non-empty line of git's complaint, for an error message.
pub fn first_line(stderr: &str, fallback: &'static str) -> String {
    stderr.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or(fallback).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_runs_in_the_given_repository() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        assert!(output(&repo, &["init", "-q"], "test").unwrap().status.success());
        let out = output(&repo, &["rev-parse", "--show-toplevel"], "test").unwrap();
        let top = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert_eq!(std::fs::canonicalize(top).unwrap(), std::fs::canonicalize(&repo).unwrap());
    }

    #[test]
    fn a_git_run_past_its_bounds_says_which_bound_and_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        assert!(output(repo, &["init", "-q"], "test").unwrap().status.success());
        let tight = Bounds { time: Duration::from_secs(20), stdout_bytes: 4 };
        let mut cmd = command(repo);
        cmd.args(["rev-parse", "--absolute-git-dir"]);
        let err = run_within(&mut cmd, repo, "the test", tight).unwrap_err();
        assert!(matches!(&err, Error::BadRequest(m) if m.contains("narrow it")), "{err}");
        let missing = tempfile::tempdir().unwrap();
        let gone = missing.path().join("gone");
        let err = run_within(command(&gone).arg("status"), &gone, "the test", BOUNDS).unwrap_err();
        assert!(err.to_string().contains("running git in"), "a missing directory is an I/O error: {err}");
    }

    #[test]
    fn first_line_skips_blank_lines() {
        assert_eq!(first_line("\n  \nfatal: bad revision 'x'\nmore", "git failed"), "fatal: bad revision 'x'");
        assert_eq!(first_line("", "git failed"), "git failed");
    }
}
