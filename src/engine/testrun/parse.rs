//! Reading a test runner's output: counts, failing tests and where they failed, for cargo's
//! libtest, pytest (`-rfE --tb=line`), node's test runner (`--test-reporter=tap`), go test,
//! and jest / vitest summaries.

use super::types::TestFailure;
use regex::Regex;
use std::collections::HashMap;
use std::sync::OnceLock;

/// What a run's output says.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Tests that passed.
    pub passed: u32,
    /// Tests that failed (errors included).
    pub failed: u32,
    /// Tests skipped or ignored.
    pub skipped: u32,
    /// The failing tests.
    pub failures: Vec<TestFailure>,
}

fn re(cell: &'static OnceLock<Option<Regex>>, pattern: &str) -> Option<&'static Regex> {
    cell.get_or_init(|| Regex::new(pattern).ok()).as_ref()
}

/// `path:line` at the end of a location (`/abs/x.test.js:5:3`, `src/lib.rs:10:5`), relative to
/// `root` when it is inside it.
fn location(loc: &str, root: &str) -> (Option<String>, Option<u32>) {
    let loc = loc.trim().trim_matches(|c| c == '\'' || c == '"');
    let loc = loc.strip_prefix("file://").unwrap_or(loc);
    let mut parts = loc.rsplitn(3, ':');
    let (a, b, c) = (parts.next(), parts.next(), parts.next());
    let (file, line) = match (a, b, c) {
        (Some(col), Some(line), Some(file)) if col.parse::<u32>().is_ok() && line.parse::<u32>().is_ok() => {
            (file, line.parse().ok())
        }
        (Some(line), Some(file), _) if line.parse::<u32>().is_ok() => {
            let file = match c {
                Some(head) => format!("{head}:{file}"),
                None => file.to_string(),
            };
            return (Some(relative(&file, root)), line.parse().ok());
        }
        _ => return (None, None),
    };
    (Some(relative(file, root)), line)
}

fn relative(file: &str, root: &str) -> String {
    let root = root.trim_end_matches('/');
    file.strip_prefix(root).map(|r| r.trim_start_matches('/').to_string()).unwrap_or_else(|| file.to_string())
}

/// cargo test (libtest): `test a::b ... FAILED`, `thread 'a::b' panicked at src/x.rs:3:5:`,
/// and each binary's `test result:` line, summed.
pub fn cargo(out: &str, root: &str) -> Outcome {
    static RESULT: OnceLock<Option<Regex>> = OnceLock::new();
    static PANIC: OnceLock<Option<Regex>> = OnceLock::new();
    let mut o = Outcome::default();
    let mut at: HashMap<String, (String, u32, String)> = HashMap::new();
    let mut lines = out.lines().peekable();
    // The current test binary's results line by line: its summary replaces them, and a
    // binary killed at the timeout (no summary) is counted from them.
    let mut unsummed = (0u32, 0u32, 0u32);
    while let Some(line) = lines.next() {
        if let Some(c) = re(&RESULT, r"^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored")
            .and_then(|r| r.captures(line))
        {
            o.passed += c[1].parse::<u32>().unwrap_or(0);
            o.failed += c[2].parse::<u32>().unwrap_or(0);
            o.skipped += c[3].parse::<u32>().unwrap_or(0);
            unsummed = (0, 0, 0);
        } else if line.starts_with("test ") && line.ends_with(" ... ok") {
            unsummed.0 += 1;
        } else if line.starts_with("test ") && line.contains(" ... ignored") {
            unsummed.2 += 1;
        } else if let Some(c) =
            re(&PANIC, r"^thread '([^']+)' \([0-9]+\) panicked at ([^:]+):(\d+):\d+:?$|^thread '([^']+)' panicked at ([^:]+):(\d+):\d+:?$")
                .and_then(|r| r.captures(line))
        {
            let (name, file, l) = match (c.get(1), c.get(4)) {
                (Some(n), _) => (n.as_str(), &c[2], &c[3]),
                (None, Some(n)) => (n.as_str(), &c[5], &c[6]),
                _ => continue,
            };
            let message = lines.peek().map(|m| m.trim().to_string()).unwrap_or_default();
            at.insert(name.to_string(), (relative(file, root), l.parse().unwrap_or(0), message));
        } else if let Some(name) = line.strip_prefix("test ").and_then(|l| l.strip_suffix(" ... FAILED")) {
            o.failures.push(TestFailure { name: name.to_string(), file: None, line: None, message: None });
            unsummed.1 += 1;
        }
    }
    o.passed += unsummed.0;
    o.failed += unsummed.1;
    o.skipped += unsummed.2;
    for f in &mut o.failures {
        if let Some((file, line, message)) = at.get(&f.name) {
            f.file = Some(file.clone());
            f.line = Some(*line);
            f.message = Some(message.clone()).filter(|m| !m.is_empty());
        }
    }
    o
}

/// pytest with `-rfE --tb=line`: the final `N failed, M passed, K skipped in 0.1s` line,
/// `FAILED path::name - message` summaries and `path:line: message` traceback lines.
pub fn pytest(out: &str, root: &str) -> Outcome {
    static COUNT: OnceLock<Option<Regex>> = OnceLock::new();
    static TB: OnceLock<Option<Regex>> = OnceLock::new();
    let mut o = Outcome::default();
    let mut where_: HashMap<String, u32> = HashMap::new();
    for line in out.lines() {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("FAILED ").or_else(|| trimmed.strip_prefix("ERROR ")) {
            let (id, message) = rest.split_once(" - ").unwrap_or((rest, ""));
            let file = id.split("::").next().map(str::to_string);
            o.failures.push(TestFailure {
                name: id.trim().to_string(),
                file,
                line: None,
                message: Some(message.trim().to_string()).filter(|m| !m.is_empty()),
            });
        } else if let Some(c) = re(&TB, r"^(\S+\.py):(\d+): ").and_then(|r| r.captures(trimmed)) {
            where_.entry(relative(&c[1], root)).or_insert(c[2].parse().unwrap_or(0));
        }
        let is_summary = trimmed.starts_with('=') && trimmed.contains(" in ") || trimmed.ends_with('s');
        if is_summary {
            let mut counts = (0, 0, 0);
            let mut any = false;
            for c in re(&COUNT, r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")
                .map(|r| r.captures_iter(trimmed).collect::<Vec<_>>())
                .unwrap_or_default()
            {
                any = true;
                let n: u32 = c[1].parse().unwrap_or(0);
                match &c[2] {
                    "passed" | "xpassed" => counts.0 += n,
                    "failed" | "error" | "errors" => counts.1 += n,
                    _ => counts.2 += n,
                }
            }
            if any && trimmed.contains(" in ") {
                (o.passed, o.failed, o.skipped) = counts;
            }
        }
    }
    for f in &mut o.failures {
        if let Some(file) = &f.file {
            f.line = where_.get(file).copied();
        }
    }
    o
}

/// TAP (node's test runner with `--test-reporter=tap`): `not ok N - name`, the YAML block's
/// `location:`, and the `# pass` / `# fail` / `# skipped` / `# todo` totals.
pub fn tap(out: &str, root: &str) -> Outcome {
    let mut o = Outcome::default();
    let mut current: Option<usize> = None;
    let mut subtest_failures: Vec<usize> = Vec::new();
    for line in out.lines() {
        let t = line.trim_start();
        let indent = line.len() - t.len();
        if let Some(rest) = t.strip_prefix("not ok ") {
            let name = rest.split_once(" - ").map(|(_, n)| n).unwrap_or(rest);
            let name = name.split(" # ").next().unwrap_or(name).trim().to_string();
            o.failures.push(TestFailure { name, file: None, line: None, message: None });
            current = Some(o.failures.len() - 1);
            if indent > 0 {
                subtest_failures.push(o.failures.len() - 1);
            }
        } else if t.starts_with("ok ") {
            current = None;
        } else if let (Some(i), Some(loc)) = (current, t.strip_prefix("location: ")) {
            let (file, l) = location(loc, root);
            o.failures[i].file = file;
            o.failures[i].line = l;
        } else if let (Some(i), Some(err)) = (current, t.strip_prefix("error: ")) {
            let msg = err.trim().trim_matches(|c| c == '\'' || c == '|' || c == '-').trim();
            if !msg.is_empty() && o.failures[i].message.is_none() {
                o.failures[i].message = Some(msg.to_string());
            }
        } else if let Some(n) = t.strip_prefix("# pass ") {
            o.passed = n.trim().parse().unwrap_or(0);
        } else if let Some(n) = t.strip_prefix("# fail ") {
            o.failed = n.trim().parse().unwrap_or(0);
        } else if let Some(n) = t.strip_prefix("# skipped ").or_else(|| t.strip_prefix("# todo ")) {
            o.skipped += n.trim().parse::<u32>().unwrap_or(0);
        }
    }
    // A failing file (a top-level `not ok` named after it) repeats its failing subtests:
    // keep the subtests when there are any.
    if !subtest_failures.is_empty() {
        let keep: std::collections::HashSet<usize> = subtest_failures.into_iter().collect();
        let mut i = 0;
        o.failures.retain(|_| {
            i += 1;
            keep.contains(&(i - 1))
        });
    }
    o
}

/// go test (plain output): `--- FAIL: TestX (0.00s)` followed by `file_test.go:12: message`,
/// `--- PASS`, `--- SKIP`.
pub fn go(out: &str, _root: &str) -> Outcome {
    let mut o = Outcome::default();
    let mut current: Option<usize> = None;
    for line in out.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("--- FAIL: ") {
            let name = rest.split_whitespace().next().unwrap_or(rest).to_string();
            o.failed += 1;
            o.failures.push(TestFailure { name, file: None, line: None, message: None });
            current = Some(o.failures.len() - 1);
        } else if t.starts_with("--- PASS: ") {
            o.passed += 1;
            current = None;
        } else if t.starts_with("--- SKIP: ") {
            o.skipped += 1;
            current = None;
        } else if let Some(i) = current {
            if let Some((loc, msg)) = t.split_once(": ") {
                if let Some((file, l)) = loc.rsplit_once(':') {
                    if file.ends_with(".go") && o.failures[i].file.is_none() {
                        o.failures[i].file = Some(file.to_string());
                        o.failures[i].line = l.parse().ok();
                        o.failures[i].message = Some(msg.to_string());
                    }
                }
            }
        }
    }
    o
}

/// jest (`Tests: 1 failed, 2 passed, 3 total`, `● Suite › name`) and vitest (`Tests  1 failed |
/// 2 passed (3)`, `FAIL file > name`).
pub fn jest_like(out: &str, _root: &str) -> Outcome {
    static COUNT: OnceLock<Option<Regex>> = OnceLock::new();
    let mut o = Outcome::default();
    for line in out.lines() {
        let t = line.trim();
        if t.starts_with("Tests:") || t.starts_with("Tests ") {
            for c in re(&COUNT, r"(\d+) (passed|failed|skipped|todo)")
                .map(|r| r.captures_iter(t).collect::<Vec<_>>())
                .unwrap_or_default()
            {
                let n: u32 = c[1].parse().unwrap_or(0);
                match &c[2] {
                    "passed" => o.passed = n,
                    "failed" => o.failed = n,
                    _ => o.skipped += n,
                }
            }
        } else if let Some(name) = t.strip_prefix("● ").filter(|n| n.contains(" › ")) {
            o.failures.push(TestFailure { name: name.to_string(), file: None, line: None, message: None });
        } else if let Some(rest) = t.strip_prefix("FAIL ").or_else(|| t.strip_prefix("× ")) {
            if let Some((file, name)) = rest.split_once(" > ") {
                o.failures.push(TestFailure {
                    name: name.trim().to_string(),
                    file: Some(file.trim().to_string()),
                    line: None,
                    message: None,
                });
            }
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_sums_binaries_and_finds_panic_locations() {
        let out = "running 2 tests\ntest tests::good ... ok\ntest tests::bad ... FAILED\n\nfailures:\n\n---- tests::bad stdout ----\n\nthread 'tests::bad' (123) panicked at src/lib.rs:9:9:\nassertion `left == right` failed\n\ntest result: FAILED. 1 passed; 1 failed; 2 ignored; 0 measured; 0 filtered out\n\nrunning 1 test\ntest it ... ok\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured\n";
        let o = cargo(out, "/r");
        assert_eq!((o.passed, o.failed, o.skipped), (2, 1, 2));
        assert_eq!(o.failures[0].name, "tests::bad");
        assert_eq!((o.failures[0].file.as_deref(), o.failures[0].line), (Some("src/lib.rs"), Some(9)));
        assert_eq!(o.failures[0].message.as_deref(), Some("assertion `left == right` failed"));
    }

    #[test]
    fn a_cargo_binary_killed_before_its_summary_is_counted_from_its_lines() {
        let out = "running 1 test\ntest a ... ok\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured\n\nrunning 4 tests\ntest b ... ok\ntest c ... ignored, later\ntest d ... FAILED\ntest e has been running for over 60 seconds\n";
        let o = cargo(out, "/r");
        assert_eq!((o.passed, o.failed, o.skipped), (2, 1, 1));
    }

    #[test]
    fn pytest_reads_the_summary_and_the_line_tracebacks() {
        let out = "..F.s\n=================================== FAILURES ===================================\n/r/tests/test_x.py:7: assert 1 == 2\n=========================== short test summary info ============================\nFAILED tests/test_x.py::test_bad - assert 1 == 2\n==================== 1 failed, 3 passed, 1 skipped in 0.05s ====================\n";
        let o = pytest(out, "/r");
        assert_eq!((o.passed, o.failed, o.skipped), (3, 1, 1));
        assert_eq!(o.failures[0].name, "tests/test_x.py::test_bad");
        assert_eq!((o.failures[0].file.as_deref(), o.failures[0].line), (Some("tests/test_x.py"), Some(7)));
        assert_eq!(o.failures[0].message.as_deref(), Some("assert 1 == 2"));
    }

    #[test]
    fn tap_keeps_the_failing_subtests_with_their_locations() {
        let out = "TAP version 13\n# Subtest: /r/t/a.test.js\n    # Subtest: adds\n    ok 1 - adds\n    # Subtest: breaks\n    not ok 2 - breaks\n      ---\n      location: '/r/t/a.test.js:8:3'\n      error: 'Expected values to be strictly equal'\n      ...\n    1..2\nnot ok 1 - /r/t/a.test.js\n  ---\n  location: '/r/t/a.test.js:1:1'\n  ...\n# pass 1\n# fail 1\n# skipped 0\n# todo 0\n";
        let o = tap(out, "/r");
        assert_eq!((o.passed, o.failed, o.skipped), (1, 1, 0));
        assert_eq!(o.failures.len(), 1, "{:?}", o.failures);
        assert_eq!(o.failures[0].name, "breaks");
        assert_eq!((o.failures[0].file.as_deref(), o.failures[0].line), (Some("t/a.test.js"), Some(8)));
        assert_eq!(o.failures[0].message.as_deref(), Some("Expected values to be strictly equal"));
    }

    #[test]
    fn go_and_jest_summaries() {
        let o = go(
            "=== RUN   TestA\n--- FAIL: TestA (0.00s)\n    a_test.go:12: want 2\n--- PASS: TestB (0.00s)\nFAIL\n",
            "/r",
        );
        assert_eq!((o.passed, o.failed), (1, 1));
        assert_eq!((o.failures[0].file.as_deref(), o.failures[0].line), (Some("a_test.go"), Some(12)));
        let j = jest_like("  ● math › adds\nTests:       1 failed, 2 passed, 3 total\n", "/r");
        assert_eq!((j.passed, j.failed, j.failures.len()), (2, 1, 1));
    }
}
