//! The test a run was in when its timeout struck, read from the runner's output: the last test
//! the runner announced as started and never finished. A timed-out run gave only `timed_out`
//! and the killed output, so an agent could not tell which test hangs; it now carries a failure
//! per such test, `timed out after 60 s while running tests::hangs`.
//!
//! What each runner announces: libtest prints `test NAME ... ` before the result only when it
//! runs one test at a time (`--test-threads=1`, or one core), and `test NAME has been running
//! for over 60 seconds` in any case (running several at a time, the killed binary's own list of
//! its tests tells which had not ended: `cargo::running_at_timeout`); go test `-v` prints `=== RUN   TestX` (and `=== CONT`) and
//! later `--- PASS/FAIL/SKIP: TestX`; pytest `-v` prints the node id, then its outcome on the
//! same line, and pytest's default progress prints a file's name, then a character per test.
//! The JavaScript runners print nothing of a test until it ends (node's and mocha's TAP, jest
//! and vitest a whole file once it ends), so docdex's reporters beside theirs print a line as
//! each test starts and ends, read by `reporters::running`; go test holds back a package's output until
//! the package ends while it tests several at once, so only a run of one package (or the
//! package printing last) shows its test here (go's own `-timeout`, set below docdex's, names
//! those of each package it stops: `go_timeout`). Where no test can be named, `unnamed` says why.

use super::types::TestFailure;
use super::Runner;

/// Tests named as running at the timeout, at most.
const MAX_NAMED: usize = 5;

/// A test the output shows running when it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Running {
    /// The test's name as its runner gives it (`tests::hangs`, `TestHang/case`,
    /// `tests/test_x.py::test_hang`), or the file for pytest's default output.
    pub name: String,
    /// Its repo-relative file, where the output gives it (pytest).
    pub file: Option<String>,
    /// What it was running, as the message says it (the name, or `the 3rd test of FILE`).
    pub what: String,
}

impl Running {
    fn named(name: &str) -> Running {
        Running { name: name.to_string(), file: None, what: name.to_string() }
    }
}

/// The failures for the tests running when the timeout of `secs` seconds struck.
pub(super) fn failures(running: &[Running], secs: u64) -> Vec<TestFailure> {
    running
        .iter()
        .take(MAX_NAMED)
        .map(|r| TestFailure {
            name: r.name.clone(),
            file: r.file.clone(),
            line: None,
            message: Some(format!("timed out after {secs} s while running {}", r.what)),
            runner: None,
        })
        .collect()
}

/// Why a run of `runner` killed at its timeout names no test, where its output cannot say.
pub(super) fn unnamed(runner: Runner) -> Option<String> {
    match runner {
        Runner::Cargo => Some(
            "the output named no test running at the timeout: libtest running several tests at a time names one only when it ends or has run 60 s, and the killed test binary's own list of its tests (to tell which had not ended) could not be read, or no test binary had started (with RUST_TEST_THREADS=1 libtest names each test as it starts)"
                .into(),
        ),
        // go test buffers a package's output while it tests several at once (`./...`).
        Runner::Go => Some(
            "the output named no test running at the timeout: go test shows a package's output only once the package ends while it tests several packages at once, and docdex's timeout struck before go test's own -timeout (set a little below it, so that go names the tests it stops) had stopped the package, or too little time was left to set one; give the hung package's directory as the target to have its test named"
                .into(),
        ),
        // docdex's reporters (`reporters`) name a test as it starts; what they cannot see:
        Runner::Node => Some(
            "the output named no test running at the timeout: docdex's reporter beside node's TAP names each test as node starts it (node's test:dequeue event, from node 18.17 and 20.5), and it printed none left running"
                .into(),
        ),
        Runner::Jest => Some(
            "the output named no test running at the timeout: docdex's reporter beside jest's writes a line as each test file and each test starts, and none was left running (a hang before jest started a test file, or in jest itself)"
                .into(),
        ),
        Runner::Vitest => Some(
            "the output named no test running at the timeout: docdex's reporter beside vitest's names each test file and test as vitest reports it started (vitest 3 and later), and none was left running (a hang before vitest started a test file, or in vitest itself)"
                .into(),
        ),
        Runner::Npm => Some(
            "the output named no test running at the timeout: docdex names a hung test when it runs mocha itself (a test script that calls mocha alone, not with --parallel), not a script run through npm test"
                .into(),
        ),
        _ => None,
    }
}

/// libtest: the `test NAME ... ` line left without its result (one test at a time), and the
/// tests that were reported running for over 60 seconds and never finished, of the test binary
/// running last.
pub(super) fn cargo(out: &str) -> Vec<Running> {
    let mut slow: Vec<String> = Vec::new();
    let mut started: Option<String> = None;
    for line in out.lines() {
        if line.trim_start().starts_with("Running ") || line.trim_start().starts_with("Doc-tests ") {
            slow.clear();
            started = None;
        } else if let Some(rest) = line.strip_prefix("test ") {
            if let Some(name) = rest.strip_suffix(" has been running for over 60 seconds") {
                slow.push(name.to_string());
            } else if let Some((name, result)) = rest.split_once(" ... ") {
                slow.retain(|s| s != name);
                started = result.trim().is_empty().then(|| name.to_string());
            } else if let Some(name) = rest.trim_end().strip_suffix(" ...") {
                started = Some(name.to_string());
            }
        }
    }
    slow.retain(|s| started.as_ref() != Some(s));
    let names: Vec<String> = started.into_iter().chain(slow).collect();
    names.iter().map(|n| Running::named(n)).collect()
}

/// go test `-v`: the tests `=== RUN` announced and no `--- PASS/FAIL/SKIP` ended, in the package
/// printing last, neither paused (`=== PAUSE`, waiting for its turn) nor the parent of another
/// still running. A top-level `=== RUN` while another top-level test runs is text that test
/// printed (go runs top-level tests one at a time, parallel ones paused until the rest end).
pub(super) fn go(out: &str) -> Vec<Running> {
    let mut open: Vec<String> = Vec::new();
    let mut paused: Vec<String> = Vec::new();
    let mut active: Option<String> = None;
    for line in out.lines() {
        let t = line.trim();
        let top = !line.starts_with([' ', '\t']);
        let word = |p: &str| t.strip_prefix(p).map(|r| r.split_whitespace().next().unwrap_or_default().to_string());
        if let Some(name) = word("=== RUN ") {
            let top_test = !name.contains('/');
            if !top || (top_test && active.as_ref().is_some_and(|a| *a != name)) {
                continue;
            }
            if top_test {
                active = Some(name.clone());
            }
            // A subtest starts once its sibling before it ended (unless paused: parallel), and go
            // prints the sibling's result only with its parent's.
            if let Some((parent, _)) = name.rsplit_once('/') {
                let sibling = format!("{parent}/");
                let waits = |o: &String| paused.iter().any(|p| o == p || o.starts_with(&format!("{p}/")));
                open.retain(|o| !o.starts_with(&sibling) || waits(o));
            }
            open.push(name);
        } else if let Some(name) = word("=== PAUSE ") {
            active = active.filter(|a| *a != name);
            paused.push(name);
        } else if let Some(name) = word("=== CONT ").or_else(|| word("=== NAME ")) {
            paused.retain(|p| *p != name);
            if !name.contains('/') {
                active = Some(name.clone());
            }
            open.retain(|o| *o != name);
            open.push(name);
        } else if let Some(name) = ["--- PASS: ", "--- FAIL: ", "--- SKIP: "].iter().find_map(|p| word(p)) {
            open.retain(|o| *o != name);
            active = active.filter(|a| *a != name);
        } else if ["ok  \t", "FAIL\t", "?   \t"].iter().any(|p| line.starts_with(p)) {
            (open, paused, active) = (Vec::new(), Vec::new(), None);
        }
    }
    let leaf = |name: &String| !open.iter().any(|o| o.starts_with(&format!("{name}/")));
    let running: Vec<&String> = open.iter().filter(|o| !paused.contains(o) && leaf(o)).collect();
    running.into_iter().rev().map(|n| Running::named(n)).collect()
}

/// pytest: with `-v`, the node id printed without its outcome (`tests/test_x.py::test_hang `);
/// by default, a file's progress line without its `[ 50%]` (`tests/test_x.py ..`), the test
/// after the last character printed, which only `-v` would name. Paths are relative to where
/// pytest ran (`run_dir`, repo-relative).
pub(super) fn pytest(out: &str, run_dir: &str) -> Vec<Running> {
    let at = |p: &str| if run_dir.is_empty() { p.to_string() } else { format!("{run_dir}/{p}") };
    let Some(last) = out.lines().rev().map(str::trim).find(|l| !l.is_empty()) else { return Vec::new() };
    let mut words = last.split_whitespace();
    let first = words.next().unwrap_or_default();
    let rest: Vec<&str> = words.collect();
    if let Some((file, _)) = first.split_once("::").filter(|(f, _)| f.ends_with(".py")) {
        return match rest.as_slice() {
            [] => vec![Running { name: at(first), file: Some(at(file)), what: at(first) }],
            _ => Vec::new(),
        };
    }
    let progress: String = rest.concat();
    let is_progress = !progress.is_empty() && progress.chars().all(|c| ".FEsxX".contains(c));
    if first.ends_with(".py") && (rest.is_empty() || is_progress) {
        let file = at(first);
        let what = format!("the {} test of {file} (pytest -v would name it)", ordinal(progress.chars().count() + 1));
        return vec![Running { name: file.clone(), file: Some(file), what }];
    }
    Vec::new()
}

/// `1st`, `2nd`, `3rd`, `4th`, `11th`, `22nd`.
fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(r: Vec<Running>) -> Vec<String> {
        r.into_iter().map(|r| r.name).collect()
    }

    #[test]
    fn libtest_names_the_test_left_without_its_result() {
        // One test at a time: the started line is left open.
        let one = "     Running unittests src/lib.rs (target/debug/deps/c-1)\n\nrunning 2 tests\ntest tests::quick ... ok\ntest tests::hangs ... ";
        assert_eq!(names(cargo(one)), ["tests::hangs"]);
        // Several at a time: only libtest's 60-second warning names it; one that finished is not.
        let many = "running 3 tests\ntest a ... ok\ntest slow has been running for over 60 seconds\ntest hangs has been running for over 60 seconds\ntest slow ... ok\n";
        assert_eq!(names(cargo(many)), ["hangs"]);
        // A binary that ended: its warned tests finished.
        let next = format!("{many}\ntest result: ok. 3 passed;\n     Running tests/api.rs (target/debug/deps/api-2)\n");
        assert!(cargo(&next).is_empty());
        assert!(cargo("test a ... ok\ntest result: ok.").is_empty());
    }

    #[test]
    fn go_names_the_innermost_test_announced_and_not_ended() {
        let out = "=== RUN   TestQuick\n--- PASS: TestQuick (0.00s)\n=== RUN   TestTable\n=== RUN   TestTable/one\n=== RUN   TestTable/one/deep\n=== RUN   TestTable/two\n";
        assert_eq!(names(go(out)), ["TestTable/two"]);
        // Parallel subtests continued run side by side.
        let par = "=== RUN   TestPar\n=== RUN   TestPar/a\n=== PAUSE TestPar/a\n=== RUN   TestPar/b\n=== PAUSE TestPar/b\n=== CONT  TestPar/a\n=== CONT  TestPar/b\n";
        assert_eq!(names(go(par)), ["TestPar/b", "TestPar/a"]);
        // A test printing a fake announcement: its own name stays the one running.
        let fake = "=== RUN   TestReal\n=== RUN   TestFake\n--- FAIL: TestFake (0.00s)\n";
        assert_eq!(names(go(fake)), ["TestReal"]);
        // Paused parallel tests wait; the one continued runs.
        let par = "=== RUN   TestP1\n=== PAUSE TestP1\n=== RUN   TestP2\n=== PAUSE TestP2\n=== CONT  TestP1\n";
        assert_eq!(names(go(par)), ["TestP1"]);
        assert!(go("=== RUN   TestA\n--- PASS: TestA (0.00s)\nok  \tm/p\t0.1s\n").is_empty());
    }

    #[test]
    fn pytest_names_the_node_id_or_the_test_of_the_file() {
        let v = "tests/test_a.py::test_ok PASSED   [ 50%]\ntests/test_a.py::test_hang ";
        let r = pytest(v, "svc");
        assert_eq!(r[0].name, "svc/tests/test_a.py::test_hang");
        assert_eq!(r[0].file.as_deref(), Some("svc/tests/test_a.py"));
        let plain = "collected 4 items\n\ntests/test_a.py .. [ 50%]\ntests/test_b.py .F";
        let r = pytest(plain, "");
        assert_eq!(
            (r[0].name.as_str(), r[0].what.as_str()),
            ("tests/test_b.py", "the 3rd test of tests/test_b.py (pytest -v would name it)")
        );
        assert!(pytest("tests/test_a.py .. [100%]\n\n==== 2 passed in 0.01s ====", "").is_empty());
        assert_eq!(ordinal(12), "12th");
        assert_eq!(ordinal(22), "22nd");
    }

    #[test]
    fn the_failure_says_how_long_and_what_ran() {
        let f = failures(&[Running::named("tests::hangs")], 5);
        assert_eq!(f[0].message.as_deref(), Some("timed out after 5 s while running tests::hangs"));
    }
}
