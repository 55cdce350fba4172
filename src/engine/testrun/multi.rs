//! A run across every runner the repository holds tests for (a Rust crate and a Python package
//! at one root: cargo, then pytest): which runners (`detect_all`), which of them a target is
//! for (`route`), and their results as one response (`merge`). docdex ran the first runner
//! detected alone, and a green cargo run said nothing of the pytest suite beside it.

use super::types::{RunTestsResponse, RunnerResult, TestRun, TestStatus};
use super::{detect, is_placeholder, nested_go_modules, node_runner, pytest_config, runs, Runner, PLACEHOLDER_SCRIPT};
use crate::engine::code::test_files::is_test_path;
use crate::error::{Error, Result};
use std::path::Path;

/// Directories a walk for a directory target's test files looks into, at most.
const ROUTE_DIRS: usize = 5_000;
/// Directories a walk for a directory target's test files never enters.
const ROUTE_SKIP: [&str; 7] = ["node_modules", "target", "vendor", "venv", "__pycache__", "site-packages", "dist"];
/// Python project files that, with test files in `tests/` or `test/`, mean a pytest suite.
const PYTHON_PROJECT: [&str; 4] = ["pyproject.toml", "setup.py", "setup.cfg", "tox.ini"];

/// A runner detected for the repository, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Detected {
    pub runner: Runner,
    pub why: String,
}

/// Every runner the repository holds a suite for: the first (`detect`'s rules, first match
/// wins), then each other runner family's whose suite the repository holds (`other_runners`),
/// in detection order. `[tests] command` is the only runner when set. Notes name suites that
/// cannot be run (a secondary `package.json` that is not JSON).
pub(super) fn detect_all(root: &Path, configured: &str) -> Result<(Vec<Detected>, Vec<String>)> {
    let (runner, why) = detect(root, configured)?;
    let mut all = vec![Detected { runner, why }];
    let mut notes = Vec::new();
    if runner != Runner::Config {
        all.extend(other_runners(root, runner, &mut notes));
        // npm's placeholder runs no test and fails: no node suite (it was run, a failed suite).
        if root.join("package.json").is_file() && super::package_test_script(root).is_ok_and(|s| is_placeholder(&s)) {
            notes.push(format!(
                "package.json's test script is npm's placeholder (`{PLACEHOLDER_SCRIPT}`): it holds no tests, so no node suite was run"
            ));
        }
    }
    Ok((all, notes))
}

/// Runner families: node, npm, jest and vitest run the same `package.json` suite.
fn family(r: Runner) -> Runner {
    match r {
        Runner::Npm | Runner::Jest | Runner::Vitest => Runner::Node,
        r => r,
    }
}

/// The other runners the repository holds tests for, besides `runner` (its family is run
/// already), each with why. Only markers of a suite count: `Cargo.toml`; `go.mod` / `go.work`
/// or modules below the root; a `package.json` test script (not npm's `no test specified`
/// placeholder); a pytest configuration or `conftest.py` at the root, or a Python project file
/// (`pyproject.toml`, `setup.py`, `setup.cfg`, `tox.ini`) with test files in `tests/` or `test/`.
/// A `requirements.txt` for a Rust crate's scripts starts no pytest.
pub(super) fn other_runners(root: &Path, runner: Runner, notes: &mut Vec<String>) -> Vec<Detected> {
    let mut out = Vec::new();
    let mut add = |r: Runner, why: String| {
        if family(r) != family(runner) {
            out.push(Detected { runner: r, why });
        }
    };
    let has = |f: &str| root.join(f).is_file();
    if has("Cargo.toml") {
        add(Runner::Cargo, "Cargo.toml at the root".into());
    }
    if has("go.mod") {
        add(Runner::Go, "go.mod at the root".into());
    } else if has("go.work") {
        add(Runner::Go, "go.work at the root (a Go workspace)".into());
    } else if let Some(why) = (family(runner) != Runner::Go).then(|| nested_go_modules(root)).flatten() {
        add(Runner::Go, why);
    }
    if has("package.json") && family(runner) != Runner::Node {
        match super::package_test_script(root) {
            Ok(script) if !script.trim().is_empty() && !is_placeholder(&script) => {
                if let Ok((r, why)) = node_runner(root) {
                    add(r, why);
                }
            }
            Ok(_) => {}
            Err(e) => notes.push(format!("package.json's tests were not run: {}", why_of(&e))),
        }
    }
    if let Some(why) = pytest_suite(root) {
        add(Runner::Pytest, why);
    }
    out
}

/// Why the root holds a pytest suite beside another runner's, if it does.
fn pytest_suite(root: &Path) -> Option<String> {
    if let Some(source) = pytest_config::read(root, "").source {
        return Some(format!("{source} at the root"));
    }
    if root.join("conftest.py").is_file() {
        return Some("conftest.py at the root".into());
    }
    let project = PYTHON_PROJECT.iter().find(|f| root.join(f).is_file())?;
    let dir = ["tests", "test"].into_iter().find(|d| {
        std::fs::read_dir(root.join(d)).into_iter().flatten().flatten().any(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.ends_with(".py") && (name.starts_with("test_") || name.ends_with("_test.py"))
        })
    })?;
    Some(format!("{project} at the root, with test files in {dir}/"))
}

fn why_of(e: &Error) -> String {
    match e {
        Error::BadRequest(why) => why.clone(),
        other => other.to_string(),
    }
}

/// The runners (indices into `detected`) a run of `target` (repo-relative and confined; `None`
/// or `""`: the whole suite, every runner) is for: a pytest node id is pytest's; a path inside a
/// Go module below the root is go's alone; a file is the runners that run its kind of file
/// (`calc.py` pytest's, `src/lib.rs` cargo's); a directory the runners that have a test file in
/// it. A target none of them claims goes to the first runner, as every target did before.
pub(super) fn route(root: &Path, detected: &[Detected], target: Option<&str>) -> Vec<usize> {
    let all: Vec<usize> = (0..detected.len()).collect();
    let Some(target) = target.filter(|t| !t.is_empty()) else { return all };
    if detected.len() < 2 {
        return all;
    }
    let find = |r: Runner| detected.iter().position(|d| family(d.runner) == family(r));
    let (path, node) = match target.split_once("::") {
        Some((p, _)) => (p, true),
        None => (target, false),
    };
    if node {
        return vec![find(Runner::Pytest).unwrap_or(0)];
    }
    let path = path.trim_end_matches('/');
    if let Some(go) = find(Runner::Go) {
        let inside =
            runs::go_modules(root).iter().any(|m| !m.is_empty() && (path == m || path.starts_with(&format!("{m}/"))));
        if inside {
            return vec![go];
        }
    }
    let claimed: Vec<usize> = if root.join(path).is_dir() {
        let kinds = test_kinds_below(root, path);
        all.into_iter().filter(|i| kinds.iter().any(|k| family(*k) == family(detected[*i].runner))).collect()
    } else {
        all.into_iter().filter(|i| detected[*i].runner.runs(path)).collect()
    };
    if claimed.is_empty() {
        vec![0]
    } else {
        claimed
    }
}

/// The runner families with a test file below the repo-relative directory `dir`: any `.rs`
/// (cargo's unit tests live in the source), `*_test.go`, `test_*.py` / `*_test.py`, a JS or TS
/// file named as a test or under a test directory. Hidden directories, virtualenvs, build
/// output and installed packages are not looked into.
fn test_kinds_below(root: &Path, dir: &str) -> Vec<Runner> {
    let mut kinds: Vec<Runner> = Vec::new();
    let mut stack = vec![dir.to_string()];
    let mut budget = ROUTE_DIRS;
    while let Some(rel) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&rel)) else { continue };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let sub = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                let skip = name.starts_with('.') || ROUTE_SKIP.contains(&name.as_str());
                if !skip && budget > 0 && !e.path().join("pyvenv.cfg").is_file() {
                    budget -= 1;
                    stack.push(sub);
                }
                continue;
            }
            let kind = test_kind(&name, &sub);
            if let Some(k) = kind.filter(|k| !kinds.contains(k)) {
                kinds.push(k);
            }
        }
    }
    kinds
}

/// The runner family whose test file `name` (at repo-relative `rel`) is, if any.
fn test_kind(name: &str, rel: &str) -> Option<Runner> {
    if name.ends_with(".rs") {
        Some(Runner::Cargo)
    } else if name.ends_with("_test.go") {
        Some(Runner::Go)
    } else if name.ends_with(".py") && (name.starts_with("test_") || name.ends_with("_test.py")) {
        Some(Runner::Pytest)
    } else if Runner::Node.runs(name)
        && (name.contains(".test.") || name.contains(".spec.") || name.contains("_test.") || is_test_path(rel))
    {
        Some(Runner::Node)
    } else {
        None
    }
}

/// How one runner's share of a run of several went.
pub(super) enum Share {
    /// It ran (or ran no test: `--affected` reached none of its files).
    Ran(RunTestsResponse),
    /// Its program is missing (not installed, not on PATH): the error a run of it alone gives.
    Missing(Error),
    /// The timeout had struck before its turn.
    NotStarted,
}

/// The shares of several runners, in the order they ran, as one response: counts summed,
/// failures in order (each naming its runner), the status the worst that ran (timed out, then
/// failed, then passed, else no tests), `exit_code` as for several processes, each runner's
/// notes prefixed with its name (a note they share said once), `runs` every process (each naming
/// its runner), `runners` each share, and the output's tail a section per runner. A runner whose
/// program is missing leaves the status as the others made it (a note names the tests not run:
/// a toolchain absent from the machine is no failing suite, and a Rust crate with a
/// `conftest.py` for its scripts passed before); when every runner is missing, the first's
/// error is the answer.
pub(super) fn merge(root: &Path, shares: Vec<(Detected, Share)>, timeout_secs: u64) -> Result<RunTestsResponse> {
    if shares.iter().all(|(_, s)| matches!(s, Share::Missing(_))) {
        if let Some((_, Share::Missing(e))) = shares.into_iter().next() {
            return Err(e);
        }
        return Err(Error::BadRequest("no test runner could be started".into()));
    }
    let first =
        shares.first().map(|(d, _)| d.clone()).unwrap_or(Detected { runner: Runner::Config, why: String::new() });
    let mut resp = RunTestsResponse::not_run(root.to_path_buf(), first.runner.name(), first.why);
    let names: Vec<&str> = shares.iter().map(|(d, _)| d.runner.name()).collect();
    resp.notes.push(format!(
        "ran {} runners one after another ({}), the {timeout_secs} s timeout covering them all; the counts, failures and status are theirs merged (`runners` has each)",
        shares.len(),
        names.join(", ")
    ));
    let mut codes = Vec::new();
    let mut statuses = Vec::new();
    let mut tails = Vec::new();
    let n = shares.len();
    for (det, share) in shares {
        let name = det.runner.name();
        let summary = match share {
            Share::Ran(r) => {
                statuses.push(r.status);
                if !r.command.is_empty() {
                    codes.push(r.exit_code);
                    tails.push(section(name, &r.command, &r.output_tail, n));
                }
                absorb(&mut resp, name, r, &det)
            }
            Share::Missing(e) => {
                let why = why_of(&e);
                resp.notes.push(format!("{name}'s tests did not run: {why} (detected by {})", det.why));
                not_run(&det, why)
            }
            Share::NotStarted => {
                statuses.push(TestStatus::TimedOut);
                let why = format!("not started: the {timeout_secs} s timeout had struck");
                resp.notes.push(format!("{name}'s tests did not run: {why}"));
                not_run(&det, why)
            }
        };
        resp.runners.push(summary);
    }
    resp.status = merged_status(&statuses);
    resp.exit_code = if resp.status == TestStatus::TimedOut { None } else { runs::merged_exit(&codes) };
    resp.duration_ms = (resp.duration_ms * 1e3).round() / 1e3;
    resp.output_tail = tails.join("\n");
    Ok(resp)
}

/// Adds one runner's response to the merged one and gives its summary.
fn absorb(resp: &mut RunTestsResponse, name: &str, r: RunTestsResponse, det: &Detected) -> RunnerResult {
    let summary = RunnerResult::of(name, det.why.clone(), &r, None);
    if resp.command.is_empty() {
        resp.command = r.command.clone();
    }
    resp.duration_ms += r.duration_ms;
    resp.passed += r.passed;
    resp.failed += r.failed;
    resp.skipped += r.skipped;
    resp.failures.extend(r.failures.into_iter().map(|mut f| {
        f.runner = Some(name.to_string());
        f
    }));
    resp.selected.extend(r.selected);
    for note in r.notes {
        let said = resp.notes.iter().any(|n| n == &note || n.split_once(": ").is_some_and(|(_, rest)| rest == note));
        if !said {
            resp.notes.push(format!("{name}: {note}"));
        }
    }
    if !r.command.is_empty() {
        let mut processes = r.runs;
        if processes.is_empty() {
            processes.push(TestRun {
                dir: String::new(),
                command: r.command,
                exit_code: r.exit_code,
                passed: r.passed,
                failed: r.failed,
                skipped: r.skipped,
                runner: None,
            });
        }
        resp.runs.extend(processes.into_iter().map(|mut p| {
            p.runner = Some(name.to_string());
            p
        }));
    }
    summary
}

/// The share of a runner whose tests did not run: no counts, no command, `why` said.
fn not_run(det: &Detected, why: String) -> RunnerResult {
    let name = det.runner.name();
    let nothing = RunTestsResponse::not_run(std::path::PathBuf::new(), name, det.why.clone());
    RunnerResult::of(name, det.why.clone(), &nothing, Some(why))
}

/// The worst status of those that ran: timed out, failed, passed, else no tests.
fn merged_status(statuses: &[TestStatus]) -> TestStatus {
    [TestStatus::TimedOut, TestStatus::Failed, TestStatus::Passed]
        .into_iter()
        .find(|s| statuses.contains(s))
        .unwrap_or(TestStatus::NoTests)
}

/// One runner's part of the output's tail: a `[docdex] NAME: COMMAND` line, then its last lines,
/// each runner given an equal share of the tail's lines and bytes (the last runner's output
/// alone hid the failing one's).
fn section(name: &str, command: &[String], tail: &str, runners: usize) -> String {
    let lines_each = (super::TAIL_LINES / runners.max(1)).max(1);
    let bytes_each = super::TAIL_BYTES / runners.max(1);
    let lines: Vec<&str> = tail.lines().collect();
    let mut text = lines[lines.len().saturating_sub(lines_each)..].join("\n");
    if text.len() > bytes_each {
        let mut cut = text.len() - bytes_each;
        while !text.is_char_boundary(cut) {
            cut += 1;
        }
        text = text[cut..].to_string();
    }
    format!("[docdex] {name}: {}\n{text}", command.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (rel, text) in files {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        dir
    }

    #[test]
    fn every_runner_with_a_suite_is_detected_in_order() {
        let dir = tree(&[
            ("Cargo.toml", "[package]\nname = \"x\"\n"),
            ("pyproject.toml", "[project]\nname = \"x\"\n"),
            ("tests/test_x.py", ""),
            ("svc/go.mod", "module example.com/svc\n"),
            ("package.json", "{\"scripts\": {\"test\": \"echo \\\"Error: no test specified\\\" && exit 1\"}}"),
        ]);
        let (all, notes) = detect_all(dir.path(), "").unwrap();
        let got: Vec<(Runner, &str)> = all.iter().map(|d| (d.runner, d.why.as_str())).collect();
        assert_eq!(
            got,
            [
                (Runner::Cargo, "Cargo.toml at the root"),
                (Runner::Go, "go.mod in svc/ (none at the root, and no go.work)"),
                (Runner::Pytest, "pyproject.toml at the root, with test files in tests/"),
            ]
        );
        // npm's placeholder is no node suite, and a note says it was not run.
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("npm's placeholder") && notes[0].contains("no node suite"), "{notes:?}");
        // `[tests] command` runs alone; a broken secondary package.json is a note, not an error.
        assert_eq!(detect_all(dir.path(), "make test").unwrap().0.len(), 1);
        std::fs::write(dir.path().join("package.json"), "{not json").unwrap();
        let (all, notes) = detect_all(dir.path(), "").unwrap();
        assert_eq!(all.len(), 3);
        assert!(notes[0].starts_with("package.json's tests were not run: "), "{notes:?}");
    }

    #[test]
    fn npms_placeholder_script_is_no_node_suite() {
        let placeholder = "{\"scripts\": {\"test\": \"echo \\\"Error: no test specified\\\" && exit 1\"}}";
        // It came first (node's runner, or a failed `npm test`): now pytest is the runner.
        let dir = tree(&[("package.json", placeholder), ("pyproject.toml", ""), ("tests/test_x.py", "")]);
        let (all, notes) = detect_all(dir.path(), "").unwrap();
        assert_eq!(all.iter().map(|d| d.runner).collect::<Vec<_>>(), [Runner::Pytest]);
        assert!(notes[0].contains("npm's placeholder"), "{notes:?}");
        // Alone, it is no runner, and the error says why.
        let alone = tree(&[("package.json", placeholder), ("index.js", "")]);
        let err = detect_all(alone.path(), "").unwrap_err().to_string();
        assert!(err.contains("npm's placeholder") && err.contains("scripts.test"), "{err}");
        // A real script is still node's.
        let real = tree(&[("package.json", "{\"scripts\": {\"test\": \"node --import tsx --test\"}}")]);
        assert_eq!(detect_all(real.path(), "").unwrap().0[0].runner, Runner::Node);
    }

    #[test]
    fn a_python_project_file_without_test_files_starts_no_pytest() {
        let dir = tree(&[("Cargo.toml", ""), ("setup.py", ""), ("tests/api.rs", ""), ("requirements.txt", "")]);
        let (all, _) = detect_all(dir.path(), "").unwrap();
        assert_eq!(all.iter().map(|d| d.runner).collect::<Vec<_>>(), [Runner::Cargo]);
    }

    #[test]
    fn a_target_runs_the_runners_it_holds_tests_of() {
        let dir = tree(&[
            ("Cargo.toml", ""),
            ("pytest.ini", "[pytest]\n"),
            ("src/lib.rs", ""),
            ("tests/api.rs", ""),
            ("tests/test_api.py", ""),
            ("py/calc.py", ""),
            ("tools/go.mod", "module t\n"),
            ("tools/gen/gen_test.go", ""),
            ("tools/gen/helper.py", ""),
            ("docs/guide.md", ""),
        ]);
        let root = dir.path();
        let (all, _) = detect_all(root, "").unwrap();
        assert_eq!(all.iter().map(|d| d.runner).collect::<Vec<_>>(), [Runner::Cargo, Runner::Go, Runner::Pytest]);
        let r = |t: Option<&str>| route(root, &all, t);
        assert_eq!(r(None), [0, 1, 2]);
        assert_eq!(r(Some("")), [0, 1, 2]);
        assert_eq!(r(Some("tests")), [0, 2]);
        assert_eq!(r(Some("tests/")), [0, 2]);
        assert_eq!(r(Some("src/lib.rs")), [0]);
        assert_eq!(r(Some("py/calc.py")), [2]);
        assert_eq!(r(Some("tests/test_api.py::test_x")), [2]);
        // Inside a Go module below the root: go's alone, whatever else lies there.
        assert_eq!(r(Some("tools/gen/helper.py")), [1]);
        assert_eq!(r(Some("tools")), [1]);
        // Claimed by none: the first runner's, as before.
        assert_eq!(r(Some("docs/guide.md")), [0]);
        assert_eq!(r(Some("docs")), [0]);
    }

    #[test]
    fn shares_merge_into_one_response() {
        let root = Path::new("/r");
        let det = |r: Runner| Detected { runner: r, why: format!("{} marker", r.name()) };
        let cargo = RunTestsResponse {
            command: vec!["cargo".into(), "test".into()],
            status: TestStatus::Passed,
            exit_code: Some(0),
            duration_ms: 10.0,
            passed: 3,
            output_tail: "test result: ok. 3 passed".into(),
            notes: vec!["killed nothing".into()],
            ..RunTestsResponse::not_run(root.into(), "cargo", String::new())
        };
        let failure = super::super::types::TestFailure {
            name: "tests/test_x.py::test_bad".into(),
            file: Some("tests/test_x.py".into()),
            line: Some(3),
            message: None,
            runner: None,
        };
        let pytest = RunTestsResponse {
            command: vec!["python3".into(), "-m".into(), "pytest".into()],
            status: TestStatus::Failed,
            exit_code: Some(1),
            duration_ms: 5.0,
            passed: 1,
            failed: 1,
            failures: vec![failure],
            output_tail: "1 failed, 1 passed".into(),
            notes: vec!["killed nothing".into()],
            ..RunTestsResponse::not_run(root.into(), "pytest", String::new())
        };
        let shares = vec![(det(Runner::Cargo), Share::Ran(cargo)), (det(Runner::Pytest), Share::Ran(pytest))];
        let m = merge(root, shares, 600).unwrap();
        assert_eq!((m.runner.as_str(), m.status, m.exit_code), ("cargo", TestStatus::Failed, Some(1)));
        assert_eq!((m.passed, m.failed, m.duration_ms), (4, 1, 15.0));
        assert_eq!(m.failures[0].runner.as_deref(), Some("pytest"));
        let runs: Vec<(Option<&str>, Option<i32>)> =
            m.runs.iter().map(|r| (r.runner.as_deref(), r.exit_code)).collect();
        assert_eq!(runs, [(Some("cargo"), Some(0)), (Some("pytest"), Some(1))]);
        assert_eq!(m.runners.iter().map(|r| r.status).collect::<Vec<_>>(), [TestStatus::Passed, TestStatus::Failed]);
        assert_eq!(m.notes[1..], ["cargo: killed nothing"]);
        assert_eq!(
            m.output_tail,
            "[docdex] cargo: cargo test\ntest result: ok. 3 passed\n[docdex] pytest: python3 -m pytest\n1 failed, 1 passed"
        );

        // A missing runner leaves the status to the others; all missing is the first's error.
        let missing = || Share::Missing(Error::BadRequest("the test runner `go` is not installed".into()));
        let passed = RunTestsResponse {
            command: vec!["cargo".into()],
            status: TestStatus::Passed,
            exit_code: Some(0),
            ..RunTestsResponse::not_run(root.into(), "cargo", String::new())
        };
        let m = merge(root, vec![(det(Runner::Cargo), Share::Ran(passed)), (det(Runner::Go), missing())], 600).unwrap();
        assert_eq!(
            (m.status, m.runners[1].not_run.as_deref()),
            (TestStatus::Passed, Some("the test runner `go` is not installed"))
        );
        assert!(m.notes.iter().any(|n| n.starts_with("go's tests did not run: the test runner `go` is not installed")));
        let e = merge(root, vec![(det(Runner::Go), missing()), (det(Runner::Pytest), missing())], 600).unwrap_err();
        assert!(matches!(e, Error::BadRequest(w) if w.contains("`go`")));
        // One not started for the timeout: timed out, no exit code.
        let m = merge(
            root,
            vec![
                (det(Runner::Cargo), Share::Ran(RunTestsResponse { status: TestStatus::TimedOut, ..m })),
                (det(Runner::Pytest), Share::NotStarted),
            ],
            7,
        )
        .unwrap();
        assert_eq!((m.status, m.exit_code), (TestStatus::TimedOut, None));
        assert_eq!(m.runners[1].not_run.as_deref(), Some("not started: the 7 s timeout had struck"));
    }
}
