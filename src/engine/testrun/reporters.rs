//! docdex's own reporters for the JavaScript runners (`reporters/`): a TAP one for mocha, and one
//! beside node's TAP and beside jest's and vitest's default reporters. Each prints a
//! `# docdex:start {...}` / `# docdex:end {...}` line (JSON: the test's name and file) as a test,
//! a test file or a mocha hook begins and ends. None of these runners prints a test before it
//! ends (node's and mocha's TAP print it once it ends, jest and vitest a whole file once the file
//! ends), so a run killed at its timeout named no test; the lines left without their end do.
//!
//! What they cannot name (checked with node 20.20, mocha 11.8 and 12.0, jest 30.5, vitest 3.2): a test
//! that blocks its process's event loop (`for (;;) {}`) under vitest (its worker sends a test's
//! start in batches, on a timer the loop never lets fire) and under node (the file's process
//! sends nothing while it spins): only its file is named, `in FILE`, the test unknown. mocha and
//! jest name it, in band too (jest's reporter writes its line at once, past the default
//! reporter's buffer of stdout, flushed on a timer). vitest 3.2 may also leave a test that waits
//! (not blocking) unannounced: its worker's throttled send (100 ms) is dropped when its timer
//! fires exactly 100 ms after the last send, and nothing sends again while the test waits.
//! vitest before 3 has no per-test events, and mocha's `--parallel` reports a file's tests only
//! once the file ends.

use super::hung::Running;
use super::location::relative;
use super::Runner;
use crate::engine::fsutil;
use crate::error::{Error, Result};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Each reporter's file name and source, written under docdex's state for the repository.
const FILES: [(&str, &str); 4] = [
    (MOCHA, include_str!("reporters/mocha.cjs")),
    (NODE, include_str!("reporters/node.mjs")),
    (JEST, include_str!("reporters/jest.cjs")),
    (VITEST, include_str!("reporters/vitest.mjs")),
];
/// mocha's: its TAP, with the lines.
pub(super) const MOCHA: &str = "mocha.cjs";
/// node's test runner's second reporter, beside TAP.
pub(super) const NODE: &str = "node.mjs";
/// jest's, beside its default reporter.
pub(super) const JEST: &str = "jest.cjs";
/// vitest's, beside its default reporter.
pub(super) const VITEST: &str = "vitest.mjs";

/// Writes the reporters into `data_dir/reporters` (only those whose text changed, each by
/// rename, so a run of another docdex at the same time never reads half a file) and returns
/// that directory.
pub(super) fn install(data_dir: &Path) -> Result<PathBuf> {
    let dir = data_dir.join("reporters");
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("creating the test reporters' directory", &dir, e))?;
    for (name, text) in FILES {
        let path = dir.join(name);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text) {
            fsutil::replace_bytes(&path, text.as_bytes())?;
        }
    }
    Ok(dir)
}

/// The reporters' directory for a run of `runner` (the JavaScript runners'), written under
/// `data_dir`; when it cannot be written the run goes on with the runner's reporters alone,
/// and a note says a hung test cannot be named.
pub(super) fn for_runner(runner: Runner, data_dir: &Path, notes: &mut Vec<String>) -> Option<PathBuf> {
    if !matches!(runner, Runner::Node | Runner::Npm | Runner::Jest | Runner::Vitest) {
        return None;
    }
    match install(data_dir) {
        Ok(dir) => Some(dir),
        Err(e) => {
            tracing::warn!(error = %e, "docdex's test reporters could not be written");
            notes.push(format!(
                "docdex's test reporters could not be written ({e}): the run uses the runner's own, and a test that hangs cannot be named"
            ));
            None
        }
    }
}

/// One `# docdex:` line: a test (`name`), or a test file (`name` null, or, from node, the
/// file's own path), and where node declares it.
#[derive(Debug, Deserialize, PartialEq, Eq)]
struct Said {
    name: Option<String>,
    file: Option<String>,
    #[serde(default)]
    line: Option<u32>,
    /// node's depth of a subtest, mocha's hooks 1 (they run inside the test they are for).
    #[serde(default)]
    nesting: i32,
}

impl Said {
    /// A test file as a whole (jest's and vitest's per file, node's file run in its process).
    fn is_file(&self) -> bool {
        self.name.is_none() || self.name == self.file
    }

    /// How deep it runs: a file outside its tests, a subtest or a hook inside its test.
    fn level(&self) -> i32 {
        if self.is_file() {
            -1
        } else {
            self.nesting
        }
    }

    fn same(&self, other: &Said) -> bool {
        self.name == other.name && self.file == other.file && (self.line == other.line || other.line.is_none())
    }
}

/// The tests (or test files) the reporters' lines show started and never ended, the innermost
/// of each file (a subtest, not its parent; a test, not its file), the latest first. Paths are
/// made relative to `root`.
pub(super) fn running(out: &str, root: &str) -> Vec<Running> {
    let mut open: Vec<Said> = Vec::new();
    for line in out.lines() {
        let Some((what, json)) = line.trim_start().strip_prefix("# docdex:").and_then(|r| r.split_once(' ')) else {
            continue;
        };
        let Ok(said) = serde_json::from_str::<Said>(json) else { continue };
        match what {
            "start" => open.push(said),
            "end" => {
                if let Some(i) = open.iter().rposition(|o| o.same(&said)) {
                    open.remove(i);
                }
            }
            _ => {}
        }
    }
    let inner = |i: usize, s: &Said| !open[i + 1..].iter().any(|o| o.file == s.file && o.level() > s.level());
    let kept: Vec<&Said> = open.iter().enumerate().filter(|(i, s)| inner(*i, s)).map(|(_, s)| s).collect();
    kept.into_iter().rev().map(|s| named(s, root)).collect()
}

/// What the failure says of a test left running: its name and where it is declared, or, for a
/// file none of whose tests was seen running, the file, `in FILE`, saying the test is unknown
/// (node's process for a file and vitest's worker send no event while a test blocks their event
/// loop): a name is never guessed.
fn named(s: &Said, root: &str) -> Running {
    let file = s.file.as_deref().map(|f| relative(f.strip_prefix("file://").unwrap_or(f), root));
    match (s.is_file(), &file) {
        (true, Some(f)) => Running {
            name: f.clone(),
            file: file.clone(),
            what: format!(
                "in {f}, the test unknown (none of its tests was reported running: a hang loading it, in a hook, in a handle it left open, or in a test blocking the event loop before the runner sent its start)"
            ),
        },
        _ => {
            let name = s.name.clone().unwrap_or_default();
            let at = match (&file, s.line) {
                (Some(f), Some(l)) => format!(" ({f}:{l})"),
                _ => String::new(),
            };
            Running { what: format!("{name}{at}"), name, file }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(what: &str, json: &str) -> String {
        format!("# docdex:{what} {json}\n")
    }

    #[test]
    fn the_innermost_test_left_open_is_named_with_its_file() {
        // node: the file's own entry, a parent and its hung subtest; a finished test.
        let f = r#""file":"/r/test/h.test.js""#;
        let out = [
            said("start", &format!(r#"{{"name":"/r/test/h.test.js",{f},"line":1,"nesting":0}}"#)),
            said("start", &format!(r#"{{"name":"quick",{f},"line":2,"nesting":0}}"#)),
            said("end", &format!(r#"{{"name":"quick",{f},"line":2,"nesting":0}}"#)),
            "ok 1 - quick\n".to_string(),
            said("start", &format!(r#"{{"name":"outer",{f},"line":3,"nesting":0}}"#)),
            said("start", &format!(r#"{{"name":"inner hangs",{f},"line":5,"nesting":1}}"#)),
        ]
        .concat();
        let r = running(&out, "/r");
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!((r[0].name.as_str(), r[0].file.as_deref()), ("inner hangs", Some("test/h.test.js")));
        assert_eq!(r[0].what, "inner hangs (test/h.test.js:5)");
    }

    #[test]
    fn a_file_whose_tests_all_ended_is_named_as_the_file_and_files_run_side_by_side_each_name_theirs() {
        let out = [
            said("start", r#"{"name":null,"file":"/r/a.test.js"}"#),
            said("start", r#"{"name":null,"file":"/r/b.test.js"}"#),
            said("start", r#"{"name":"math › adds","file":"/r/a.test.js"}"#),
            said("start", r#"{"name":"b one","file":"/r/b.test.js"}"#),
            said("end", r#"{"name":"b one","file":"/r/b.test.js"}"#),
        ]
        .concat();
        let r = running(&out, "/r");
        assert_eq!(r.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["math › adds", "b.test.js"]);
        assert!(
            r[1].what.starts_with("in b.test.js, the test unknown (none of its tests was reported running"),
            "{r:?}"
        );
        // Every test and file ended: nothing is named; garbage lines are passed over.
        let done = format!(
            "{}{}# docdex:start not json\n",
            said("start", r#"{"name":"x","file":"/r/a.js"}"#),
            said("end", r#"{"name":"x","file":"/r/a.js"}"#)
        );
        assert!(running(&done, "/r").is_empty());
    }

    #[test]
    fn a_mocha_hook_is_named_inside_its_test() {
        let out = [
            said("start", r#"{"name":"s t","file":"/r/t.spec.js"}"#),
            said("start", r#"{"name":"s \"before each\" hook for \"t\"","file":"/r/t.spec.js","nesting":1}"#),
        ]
        .concat();
        let r = running(&out, "/r");
        assert_eq!(r.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["s \"before each\" hook for \"t\""]);
    }

    #[test]
    fn the_reporters_are_written_once_and_rewritten_when_changed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = install(tmp.path()).unwrap();
        let mocha = dir.join(MOCHA);
        assert!(std::fs::read_to_string(&mocha).unwrap().contains("docdex:start"));
        std::fs::write(&mocha, "stale").unwrap();
        install(tmp.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&mocha).unwrap(), include_str!("reporters/mocha.cjs"));
    }
}
