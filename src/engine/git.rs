//! One way for the engine to run git: in the repository's own directory, paths unquoted, never
//! prompting, and blind to `GIT_DIR` / `GIT_WORK_TREE` inherited from the caller (a git hook
//! sets them, and they would point git at another repository than the one asked about).

use crate::error::{Error, Result};
use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};

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

/// Runs a prepared [`command`]; errors as [`output`].
pub fn run(cmd: &mut Command, root: &Path, purpose: &str) -> Result<Output> {
    cmd.output().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::BadRequest(format!("{purpose} runs git, which is not installed or not on PATH"))
        } else {
            Error::io("running git in", root, e)
        }
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
    fn first_line_skips_blank_lines() {
        assert_eq!(first_line("\n  \nfatal: bad revision 'x'\nmore", "git failed"), "fatal: bad revision 'x'");
        assert_eq!(first_line("", "git failed"), "git failed");
    }
}
