//! A run made of several runner processes, each in its own directory: pytest once per
//! configuration (files under a root `pytest.ini` and under a subproject's own ran in one pytest
//! from the root, which read only the root's), go test once per module (a `go.work` workspace, or
//! several `go.mod` under the repository: `go test ./...` from the root does not enter a nested
//! module, and with no root module it fails). Their counts, failures and exit codes are merged.

use super::types::{RunTestsResponse, TestRun, TestStatus};
use super::{execute, go_command, go_module, parse, within, Finished};
use crate::error::{Error, Result};
use std::path::Path;
use std::time::{Duration, Instant};

/// Directories a search for `go.mod` files does not enter.
const GO_SKIP: [&str; 3] = ["vendor", "testdata", "node_modules"];
/// How deep below the root a `go.mod` is looked for.
const GO_DEPTH: usize = 6;
/// go test's default `-timeout`, in seconds (10 minutes): docdex never sets a longer one.
const GO_DEFAULT_TIMEOUT: u64 = 600;

/// One runner process: the repo-relative directory it runs in and its command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Part {
    pub dir: String,
    pub command: Vec<String>,
}

/// The repo-relative directories of the Go modules to test: the `use` directories of the root's
/// `go.work` when it has one (a module outside the workspace fails to build there), else every
/// directory holding a `go.mod` (not under `vendor`, `testdata`, `node_modules`, or a directory
/// whose name starts with `.` or `_`, which go's `./...` passes over too). The root is `""`.
pub(super) fn go_modules(root: &Path) -> Vec<String> {
    let mut out = match std::fs::read_to_string(root.join("go.work")) {
        Ok(text) => go_work_uses(&text),
        Err(_) => {
            let mut found = Vec::new();
            find_go_mods(root, "", 0, &mut found);
            found
        }
    };
    out.sort();
    out.dedup();
    out
}

/// The directories of a `go.work`'s `use` directives (`use ./a`, `use ( ./a ./b )`).
fn go_work_uses(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut block = false;
    for line in text.lines() {
        let line = line.split("//").next().unwrap_or_default().trim();
        let dir = if block {
            if line.starts_with(')') {
                block = false;
                continue;
            }
            line
        } else if let Some(rest) = line.strip_prefix("use") {
            let rest = rest.trim();
            if rest.starts_with('(') {
                block = true;
                rest.trim_start_matches('(').trim()
            } else {
                rest
            }
        } else {
            continue;
        };
        let dir = dir.trim_matches('"').trim_start_matches("./").trim_end_matches('/');
        if !dir.is_empty() {
            out.push(if dir == "." { String::new() } else { dir.to_string() });
        }
    }
    out
}

fn find_go_mods(root: &Path, rel: &str, depth: usize, out: &mut Vec<String>) {
    if root.join(rel).join("go.mod").is_file() {
        out.push(rel.to_string());
    }
    if depth >= GO_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(root.join(rel)) else { return };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        // go's `./...` passes over `.` and `_` directories too.
        if name.starts_with(['.', '_']) || GO_SKIP.contains(&name.as_str()) || !e.file_type().is_ok_and(|t| t.is_dir())
        {
            continue;
        }
        let sub = if rel.is_empty() { name } else { format!("{rel}/{name}") };
        find_go_mods(root, &sub, depth + 1, out);
    }
}

/// go test once per module for a repository with more than one, or with its modules only below
/// the root (`None` with one module at the root, run as before): every module without targets,
/// else the modules holding the targets, each given its targets relative to it. A target in no
/// module is bad input: go test run where no go.mod is fails with go's own "go.mod file not found".
pub(super) fn go_parts(root: &Path, targets: &[String], notes: &mut Vec<String>) -> Result<Option<Vec<Part>>> {
    let modules = go_modules(root);
    if modules.is_empty() || modules == [String::new()] {
        return Ok(None);
    }
    let part = |dir: &str, targets: &[String]| {
        let inside: Vec<String> = targets.iter().map(|t| within(t, dir)).collect();
        Part { dir: dir.to_string(), command: go_command(&root.join(dir), &inside) }
    };
    let parts: Vec<Part> = if targets.is_empty() {
        modules.iter().map(|m| part(m, &[])).collect()
    } else {
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for t in targets {
            let module = modules
                .iter()
                .filter(|m| m.is_empty() || *t == **m || t.starts_with(&format!("{m}/")))
                .max_by_key(|m| m.len())
                .cloned()
                .ok_or_else(|| {
                    let shown: Vec<String> = modules.iter().map(|m| shown_dir(m)).collect();
                    Error::BadRequest(format!(
                        "{t} is in no Go module of the repository (its modules: {}): give a target inside one",
                        shown.join(", ")
                    ))
                })?;
            match groups.iter_mut().find(|(m, _)| *m == module) {
                Some((_, g)) => g.push(t.clone()),
                None => groups.push((module, vec![t.clone()])),
            }
        }
        groups.iter().map(|(m, g)| part(m, g)).collect()
    };
    let shown: Vec<String> = parts.iter().map(|p| shown_dir(&p.dir)).collect();
    if parts.len() > 1 {
        notes.push(format!(
            "go test ran once per module ({}), each in its own directory, and the results were merged",
            shown.join(", ")
        ));
    } else if let Some(p) = parts.first().filter(|p| !p.dir.is_empty()) {
        let which = if targets.is_empty() { "the repository's one Go module" } else { "the module holding the target" };
        notes.push(format!("go test ran in {}, {which}", shown_dir(&p.dir)));
    }
    Ok(Some(parts))
}

fn shown_dir(dir: &str) -> String {
    if dir.is_empty() {
        ".".to_string()
    } else {
        format!("{dir}/")
    }
}

/// The exit code of several runs: the first that is neither 0 nor pytest's 5 ("no tests
/// collected", which another run's tests outweigh), else 0 when any run passed, else the first.
pub(super) fn merged_exit(codes: &[Option<i32>]) -> Option<i32> {
    if let Some(c) = codes.iter().flatten().find(|c| !matches!(c, 0 | 5)) {
        return Some(*c);
    }
    if codes.contains(&Some(0)) {
        return Some(0);
    }
    codes.first().copied().flatten()
}

/// What several runs said, as one: counts summed, failures in order, counted when any counted,
/// none found only when all found none.
fn merged_outcome(outcomes: Vec<parse::Outcome>) -> parse::Outcome {
    let mut all = parse::Outcome { none_found: !outcomes.is_empty(), ..parse::Outcome::default() };
    for o in outcomes {
        all.passed += o.passed;
        all.failed += o.failed;
        all.skipped += o.skipped;
        all.failures.extend(o.failures);
        all.counted |= o.counted;
        all.none_found &= o.none_found;
        all.hung.extend(o.hung);
        all.stopped.extend(o.stopped);
        all.notes.extend(o.notes);
    }
    all
}

/// Reads one part's output (its text, its directory) into an outcome.
pub(super) type ReadOutput<'a> = &'a dyn Fn(&str, &str) -> parse::Outcome;
/// Fails when one part's output (its command, exit code, text) shows the runner missing.
pub(super) type MissingRunner<'a> = &'a dyn Fn(&[String], Option<i32>, &str) -> Result<()>;

/// A part whose runner is missing while others ran: where, and why (the error it would have been).
pub(super) struct NotRun {
    dir: String,
    why: String,
}

/// What `run_parts` gives back: the runs as one, their merged outcome, each run (also the one of
/// a run of one part: a run of several runners lists it with its directory), and the parts whose
/// runner was missing.
pub(super) type PartsRun = (Finished, parse::Outcome, Vec<TestRun>, Vec<NotRun>);

/// Each part run in turn within the one `timeout`: what each left, read by `read` (the part's
/// output and directory), merged. A part whose runner is missing (`missing` finds it in its
/// output, or the program cannot be started) is passed over, named in `NotRun`, and the others
/// run: a later configuration's virtualenv without pytest ended the run with that error and the
/// earlier runs' results were dropped. When every part's runner is missing, the first's error is
/// the answer. Parts the timeout left no time for are not started (a note says so).
pub(super) fn run_parts(
    root: &Path,
    parts: &[Part],
    timeout: Duration,
    read: ReadOutput<'_>,
    missing: MissingRunner<'_>,
) -> Result<PartsRun> {
    let started = Instant::now();
    let mut all = Finished {
        exit_code: None,
        timed_out: false,
        lines: Vec::new(),
        duration_ms: 0.0,
        notes: Vec::new(),
        runner_timeout: false,
    };
    let (mut outcomes, mut runs, mut codes) = (Vec::new(), Vec::new(), Vec::new());
    let mut killed = false;
    let mut not_run: Vec<(NotRun, Error)> = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let left = timeout.saturating_sub(started.elapsed());
        if all.timed_out || left.is_zero() {
            all.timed_out = true;
            all.notes.push(format!("{} of {} runs not started: the timeout had struck", parts.len() - i, parts.len()));
            break;
        }
        let (command, go_timeout) = with_go_timeout(&part.command, left);
        let shown = format!("[docdex] in {}: {}", shown_dir(&part.dir), command.join(" "));
        let mut done = match execute(&root.join(&part.dir), &command, left) {
            Ok(done) => done,
            Err(e @ Error::BadRequest(_)) if parts.len() > 1 => {
                all.lines.push(shown);
                not_run.push((NotRun { dir: part.dir.clone(), why: missing_why(&e) }, e));
                runs.push(run_of(part, &command, None, &parse::Outcome::default()));
                continue;
            }
            Err(e) => return Err(e),
        };
        let text = done.lines.join("\n");
        let absent = match missing(&part.command, done.exit_code, &text) {
            Err(e @ Error::BadRequest(_)) if parts.len() > 1 => Some(e),
            Err(e) => return Err(e),
            Ok(()) => None,
        };
        let mut outcome = if absent.is_some() { parse::Outcome::default() } else { read(&text, &part.dir) };
        killed |= done.timed_out;
        all.runner_timeout |= settle_timeout(&mut done, &mut outcome, go_timeout);
        runs.push(run_of(part, &command, done.exit_code, &outcome));
        if parts.len() > 1 {
            all.lines.push(shown);
        }
        codes.push(done.exit_code);
        all.lines.extend(done.lines);
        all.timed_out |= done.timed_out;
        all.duration_ms += done.duration_ms;
        all.notes.extend(done.notes);
        match absent {
            Some(e) => not_run.push((NotRun { dir: part.dir.clone(), why: missing_why(&e) }, e)),
            None => outcomes.push(outcome),
        }
    }
    if !not_run.is_empty() && not_run.len() == runs.len() && !all.timed_out {
        if let Some((_, e)) = not_run.into_iter().next() {
            return Err(e);
        }
        return Err(Error::BadRequest("no test runner could be started".into()));
    }
    all.runner_timeout &= !killed;
    all.exit_code = if all.timed_out { None } else { merged_exit(&codes) };
    all.duration_ms = (all.duration_ms * 1e3).round() / 1e3;
    Ok((all, merged_outcome(outcomes), runs, not_run.into_iter().map(|(n, _)| n).collect()))
}

/// go test's command line with `-timeout` a little below `left`, the time docdex's timeout
/// leaves it (less a tenth, 3 s to 30 s, for go to start the test binaries, print the stacks and end), and that value
/// (`7s`), rounded down to whole 10 s from 20 s and 30 s from 120 s; as given (and `None`) for
/// another command, or where go's own default (10 minutes) comes first or too little is left. go's timeout panic names the tests each package was
/// running (`go_timeout`): killed by docdex instead, a package tested beside others named none.
pub(super) fn with_go_timeout(command: &[String], left: Duration) -> (Vec<String>, Option<String>) {
    // Whole seconds, rounded: the few milliseconds spent before the run do not cost one.
    let left = u64::try_from(left.as_millis()).unwrap_or(u64::MAX).saturating_add(500) / 1000;
    let secs = left.saturating_sub((left / 10).clamp(3, 30));
    // go's test cache keys on the flag's value (go 1.19): coarse steps keep it the same from
    // run to run though what is left for a later module varies by a few seconds.
    let step = match secs {
        120.. => 30,
        20.. => 10,
        _ => 1,
    };
    let secs = secs / step * step;
    if !command.starts_with(&["go".to_string(), "test".to_string()]) || secs == 0 || secs >= GO_DEFAULT_TIMEOUT {
        return (command.to_vec(), None);
    }
    let value = format!("{secs}s");
    let mut cmd = command.to_vec();
    let at = if cmd.get(2).is_some_and(|a| a == "-v") { 3 } else { 2 };
    cmd.insert(at, format!("-timeout={value}"));
    (cmd, Some(value))
}

/// How a part's run ended: go test's own `-timeout` set from docdex's (`go_timeout`) stopping a
/// package is the run's timeout, though go test exited by itself (a note says which packages);
/// the tests a run that ended by itself left started are no hung tests. Whether go's stopped it.
fn settle_timeout(done: &mut Finished, outcome: &mut parse::Outcome, go_timeout: Option<String>) -> bool {
    let by_go = match go_timeout.filter(|_| !done.timed_out && !outcome.stopped.is_empty()) {
        Some(value) => {
            done.timed_out = true;
            done.notes.push(format!(
                "go test's own -timeout={value}, set a little below what docdex's timeout left so that go names the tests it stops, stopped {}: {}",
                crate::engine::fsutil::count(outcome.stopped.len(), "package"),
                outcome.stopped.join(", ")
            ));
            true
        }
        None => false,
    };
    if !done.timed_out {
        // Started and never finished in a run that ended by itself: not the hung test.
        outcome.hung.clear();
    }
    by_go
}

fn run_of(part: &Part, command: &[String], exit_code: Option<i32>, outcome: &parse::Outcome) -> TestRun {
    TestRun {
        dir: part.dir.clone(),
        command: command.to_vec(),
        exit_code,
        passed: outcome.passed,
        failed: outcome.failed.max(outcome.failures.len() as u32),
        skipped: outcome.skipped,
        runner: None,
    }
}

fn missing_why(e: &Error) -> String {
    match e {
        Error::BadRequest(why) => why.clone(),
        other => other.to_string(),
    }
}

/// Names each part whose runner was missing in the response's notes, and makes a run that
/// passed (or ran no test) `failed`: those tests did not run, and a green status would say
/// they passed.
pub(super) fn record_not_run(resp: &mut RunTestsResponse, not_run: Vec<NotRun>) {
    if not_run.is_empty() {
        return;
    }
    for n in &not_run {
        resp.notes.push(format!(
            "the run in {} did not start its tests: {}; the counts and failures are the other runs'",
            shown_dir(&n.dir),
            n.why
        ));
    }
    if matches!(resp.status, TestStatus::Passed | TestStatus::NoTests) {
        resp.status = TestStatus::Failed;
        resp.notes.push(format!(
            "status failed: the tests of {} did not run, as their runner is missing",
            crate::engine::fsutil::count(not_run.len(), "run")
        ));
    }
}

/// go test's failures in a module below the root placed repo-relative: its files are relative to
/// the module (`calc/calc_test.go` in module `svc/`).
pub(super) fn go_outcome(text: &str, root: &Path, dir: &str) -> parse::Outcome {
    let module_dir = root.join(dir);
    let mut o = parse::go(text, go_module(&module_dir).as_deref(), Some(&module_dir));
    if !dir.is_empty() {
        for f in &mut o.failures {
            if let Some(file) = f.file.as_mut().filter(|f| !f.starts_with('/')) {
                *file = format!("{dir}/{}", file.trim_start_matches("./"));
            }
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_work_uses_are_read_in_both_forms() {
        let text = "go 1.21\n\nuse ./tools // the tools\nuse (\n\t.\n\t./svc/api\n\t\"./lib\"\n)\n";
        assert_eq!(go_work_uses(text), ["tools", "", "svc/api", "lib"]);
    }

    #[test]
    fn go_modules_are_every_go_mod_but_those_go_passes_over() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for m in ["", "a", "a/b", "_examples", "vendor/x", "testdata", ".git/x"] {
            std::fs::create_dir_all(root.join(m)).unwrap();
            std::fs::write(root.join(m).join("go.mod"), "module x\n").unwrap();
        }
        assert_eq!(go_modules(root), ["", "a", "a/b"]);
        std::fs::write(root.join("go.work"), "go 1.19\nuse ./a\n").unwrap();
        assert_eq!(go_modules(root), ["a"]);
    }

    #[test]
    fn a_run_whose_runner_was_missing_is_never_green() {
        let mut resp = RunTestsResponse {
            status: TestStatus::Passed,
            exit_code: Some(0),
            passed: 3,
            ..RunTestsResponse::not_run("/r".into(), "pytest", String::new())
        };
        record_not_run(&mut resp, Vec::new());
        assert_eq!((resp.status, resp.notes.len()), (TestStatus::Passed, 0));
        let why = "the test runner `go` is not installed or not on PATH".to_string();
        record_not_run(&mut resp, vec![NotRun { dir: "svc".into(), why }]);
        assert_eq!(resp.status, TestStatus::Failed);
        assert_eq!(
            resp.notes,
            [
                "the run in svc/ did not start its tests: the test runner `go` is not installed or not on PATH; the counts and failures are the other runs'",
                "status failed: the tests of 1 run did not run, as their runner is missing",
            ]
        );
    }

    #[test]
    fn go_test_gets_a_timeout_a_little_below_what_is_left() {
        let cmd = |c: &str| c.split(' ').map(str::to_string).collect::<Vec<_>>();
        let go = cmd("go test -v ./...");
        let with = |secs: u64| {
            let (c, v) = with_go_timeout(&go, Duration::from_secs(secs));
            (c.join(" "), v)
        };
        assert_eq!(with(10), ("go test -v -timeout=7s ./...".into(), Some("7s".into())));
        assert_eq!(with(100).0, "go test -v -timeout=90s ./...");
        assert_eq!(with(600).1.as_deref(), Some("570s"));
        // What is left for a later module: the same value for a few seconds more or less.
        assert_eq!((with(588).1, with(592).1), (Some("540s".into()), Some("540s".into())));
        assert_eq!(with(25).1.as_deref(), Some("20s"));
        // Past go's own 10 minutes, and with too little left, go's default stays.
        assert_eq!(with(3600), ("go test -v ./...".into(), None));
        assert_eq!(with(3).1, None);
        assert_eq!(with_go_timeout(&cmd("pytest -q"), Duration::from_secs(60)).1, None);
    }

    #[test]
    fn exit_codes_merge_with_a_failure_first_and_no_tests_last() {
        assert_eq!(merged_exit(&[Some(5), Some(0)]), Some(0));
        assert_eq!(merged_exit(&[Some(0), Some(1), Some(2)]), Some(1));
        assert_eq!(merged_exit(&[Some(5), Some(5)]), Some(5));
        assert_eq!(merged_exit(&[]), None);
    }
}
