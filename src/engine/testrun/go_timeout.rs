//! go test's own `-timeout` (`runs::with_go_timeout` passes it, a little below docdex's): a
//! package's test binary still running at it panics with `panic: test timed out after 8s`,
//! its goroutines' stacks below, and go test prints the package's held-back output and its
//! `FAIL` line. Killed by docdex instead, a package tested beside others (`go test ./...`)
//! showed nothing, as go test holds a package's output back until the package ends; now each
//! package it stops names the tests it was running, where each was (its goroutine's frame in a
//! test file), and its package.
//!
//! The tests running: go 1.20 and later list them below the panic (`running tests:`, then
//! `\tTestHang/slow (8s)`); go 1.19 does not, so they are the tests the package's `-v` output
//! announced and never ended (`hung::go`).

use super::location::{module_relative, package_line};
use super::types::TestFailure;
use std::path::Path;

/// The panic go's test binary raises at its `-timeout`.
const TIMEOUT_PANIC: &str = "panic: test timed out after ";
/// Tests named per package stopped, at most.
const MAX_NAMED: usize = 5;

/// What the packages go's `-timeout` stopped leave: a failure per test they were running, and
/// the packages.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Stopped {
    pub failures: Vec<TestFailure>,
    pub packages: Vec<String>,
}

/// The packages of `out` (go test `-v` output) that go's `-timeout` stopped, each section (the
/// lines since the previous package line) read for its running tests. `src`: the module's
/// directory, against which the stacks' absolute paths are made relative.
pub(super) fn stopped(out: &str, src: Option<&Path>) -> Stopped {
    let lines: Vec<&str> = out.lines().collect();
    let mut found = Stopped::default();
    let mut start = 0;
    for (i, line) in lines.iter().enumerate() {
        let Some(pkg) = package_line(line) else { continue };
        let section = &lines[start..i];
        start = i + 1;
        let Some(at) = section.iter().position(|l| l.starts_with(TIMEOUT_PANIC)) else { continue };
        let after = section[at].trim_start_matches(TIMEOUT_PANIC).trim();
        let below = &section[at + 1..];
        let names = running_list(below)
            .unwrap_or_else(|| super::hung::go(&section[..at].join("\n")).into_iter().rev().map(|r| r.name).collect());
        let stacks = goroutines(below);
        found.packages.push(pkg.to_string());
        for name in names.iter().take(MAX_NAMED) {
            let (file, line) = place(&stacks, name, src).unzip();
            let message = Some(format!(
                "timed out after {after} while running {name} in package {pkg} (go test's -timeout stopped it)"
            ));
            found.failures.push(TestFailure { name: name.clone(), file, line, message, runner: None });
        }
    }
    found
}

/// go 1.20+'s list below the panic, `running tests:` then `\tTestHang (8s)` per test, parents
/// included: the leaves. `None` without the list (go 1.19).
fn running_list(below: &[&str]) -> Option<Vec<String>> {
    let from = below.iter().position(|l| l.trim() == "running tests:")?;
    let names: Vec<String> = below[from + 1..]
        .iter()
        .take_while(|l| l.starts_with('\t'))
        .map(|l| l.trim().rsplit_once(" (").map_or(l.trim(), |(n, _)| n).to_string())
        .collect();
    let leaf = |n: &String| !names.iter().any(|o| o.starts_with(&format!("{n}/")));
    Some(names.iter().filter(|n| leaf(n)).cloned().collect())
}

/// One stack frame: the function (`example.com/m/hang.TestHang.func1`), its file and line.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Frame {
    func: String,
    file: String,
    line: u32,
}

/// The goroutines' stacks below the panic, each its frames innermost first: a `goroutine 7
/// [sleep]:` header, then a function line and its `\t/abs/file.go:9 +0x25` line per frame.
fn goroutines(below: &[&str]) -> Vec<Vec<Frame>> {
    let mut all: Vec<Vec<Frame>> = Vec::new();
    let mut func: Option<&str> = None;
    for line in below {
        if line.starts_with("goroutine ") && line.trim_end().ends_with(':') {
            all.push(Vec::new());
            func = None;
        } else if let Some(loc) = line.strip_prefix('\t') {
            let loc = loc.split(" +0x").next().unwrap_or(loc).trim();
            let parsed = loc.rsplit_once(':').and_then(|(f, l)| Some((f.to_string(), l.parse::<u32>().ok()?)));
            if let (Some(stack), Some(f), Some((file, line))) = (all.last_mut(), func.take(), parsed) {
                let f = f.rsplit_once('(').map_or(f, |(name, _)| name);
                stack.push(Frame { func: f.to_string(), file, line });
            }
        } else if !line.trim().is_empty() {
            func = Some(line.trim());
        }
    }
    all
}

/// Where the test `name` was when it was stopped: in the goroutine running it (one whose stack
/// has `testing.tRunner` called for a function of its top-level test, not waiting in `t.Run` for
/// its subtests nor paused in `t.Parallel`), the innermost frame in a test file of the module,
/// else in the module. Several goroutines fit (parallel subtests of one test, whose functions
/// are the same closure): a place only when they all agree.
fn place(stacks: &[Vec<Frame>], name: &str, src: Option<&Path>) -> Option<(String, u32)> {
    let top = name.split('/').next().unwrap_or(name);
    let mut places = stacks.iter().filter_map(|frames| {
        let runner = frames.iter().position(|f| f.func == "testing.tRunner")?;
        let test_fn = frames.get(runner.checked_sub(1)?)?;
        let short = test_fn.func.rsplit('/').next().unwrap_or(&test_fn.func);
        let of_test = short.split('.').nth(1) == Some(top);
        let waiting = frames.first().is_some_and(|f| f.func.starts_with("testing.(*T)."));
        (of_test && !waiting).then(|| frame_place(&frames[..runner], src))
    });
    let first = places.next()?;
    places.all(|p| p == first).then_some(first).flatten()
}

/// The innermost of `frames` in a `_test.go` file of the module (`src`), else in the module,
/// repo-relative to it.
fn frame_place(frames: &[Frame], src: Option<&Path>) -> Option<(String, u32)> {
    let inside = |f: &&Frame| match src {
        Some(src) => !module_relative(&f.file, Some(src)).starts_with('/'),
        None => f.file.ends_with("_test.go"),
    };
    let f =
        frames.iter().filter(inside).find(|f| f.file.ends_with("_test.go")).or_else(|| frames.iter().find(inside))?;
    Some((module_relative(&f.file, src), f.line))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// go 1.19's output for `go test -v -timeout=3s ./...` (trimmed): package hang stopped in a
    /// subtest, package fine passed, package slow2 stopped in a top-level test.
    const GO119: &str = "=== RUN   TestQuick\n--- PASS: TestQuick (0.00s)\n=== RUN   TestHang\n=== RUN   TestHang/slow\npanic: test timed out after 3s\n\ngoroutine 5 [running]:\ntesting.(*M).startAlarm.func1()\n\t/usr/lib/go-1.19/src/testing/testing.go:2036 +0x8e\ncreated by time.goFunc\n\t/usr/lib/go-1.19/src/time/sleep.go:176 +0x32\n\ngoroutine 19 [chan receive]:\ntesting.(*T).Run(0xc0000969c0, {0x524105?, 0xc000034760?}, 0x52f2f0)\n\t/usr/lib/go-1.19/src/testing/testing.go:1494 +0x37a\nexample.com/gh/hang.TestHang(0xc000096680?)\n\t/m/hang/h_test.go:11 +0x2c\ntesting.tRunner(0xc0000969c0, 0x52f2f8)\n\t/usr/lib/go-1.19/src/testing/testing.go:1446 +0x10b\n\ngoroutine 20 [sleep]:\ntime.Sleep(0x45d964b800)\n\t/usr/lib/go-1.19/src/runtime/time.go:195 +0x135\nexample.com/gh/hang.TestHang.func1(0xc000096680?)\n\t/m/hang/h_test.go:12 +0x25\ntesting.tRunner(0xc000096b60, 0x52f2f0)\n\t/usr/lib/go-1.19/src/testing/testing.go:1446 +0x10b\ncreated by testing.(*T).Run\n\t/usr/lib/go-1.19/src/testing/testing.go:1493 +0x35f\nFAIL\texample.com/gh/hang\t3.008s\n=== RUN   TestFine\n--- PASS: TestFine (0.00s)\nPASS\nok  \texample.com/gh/fine\t0.003s\n=== RUN   TestStuck\npanic: test timed out after 3s\n\ngoroutine 7 [sleep]:\ntime.Sleep(0x45d964b800)\n\t/usr/lib/go-1.19/src/runtime/time.go:195 +0x135\nexample.com/gh/slow2.TestStuck(0xc000007860?)\n\t/m/slow2/s_test.go:9 +0x25\ntesting.tRunner(0xc000007ba0, 0x52f3a0)\n\t/usr/lib/go-1.19/src/testing/testing.go:1446 +0x10b\nFAIL\texample.com/gh/slow2\t3.013s\nFAIL\n";

    fn rows(s: &Stopped) -> Vec<(&str, Option<&str>, Option<u32>)> {
        s.failures.iter().map(|f| (f.name.as_str(), f.file.as_deref(), f.line)).collect()
    }

    #[test]
    fn each_stopped_package_names_its_running_test_where_it_was() {
        let s = stopped(GO119, Some(Path::new("/m")));
        assert_eq!(s.packages, ["example.com/gh/hang", "example.com/gh/slow2"]);
        assert_eq!(
            rows(&s),
            [("TestHang/slow", Some("hang/h_test.go"), Some(12)), ("TestStuck", Some("slow2/s_test.go"), Some(9))]
        );
        assert_eq!(
            s.failures[0].message.as_deref(),
            Some("timed out after 3s while running TestHang/slow in package example.com/gh/hang (go test's -timeout stopped it)")
        );
        assert_eq!(stopped("=== RUN   TestA\n--- PASS: TestA (0.00s)\nok  \tm/p\t0.1s\n", None), Stopped::default());
    }

    #[test]
    fn go_120s_running_list_names_the_leaves_and_same_closures_must_agree() {
        let out = "=== RUN   TestPar\npanic: test timed out after 2s\nrunning tests:\n\tTestPar (2s)\n\tTestPar/x (2s)\n\tTestPar/y (2s)\n\ngoroutine 8 [sleep]:\nexample.com/p.TestPar.func1(0x0)\n\t/m/p/p_test.go:7 +0x25\ntesting.tRunner(0x0, 0x0)\n\t/go/testing.go:1 +0x1\n\ngoroutine 9 [sleep]:\nexample.com/p.TestPar.func1(0x0)\n\t/m/p/p_test.go:7 +0x25\ntesting.tRunner(0x0, 0x0)\n\t/go/testing.go:1 +0x1\nFAIL\texample.com/p\t2.01s\n";
        let s = stopped(out, Some(Path::new("/m")));
        assert_eq!(
            rows(&s),
            [("TestPar/x", Some("p/p_test.go"), Some(7)), ("TestPar/y", Some("p/p_test.go"), Some(7))]
        );
        let apart = out.replacen("p_test.go:7", "p_test.go:8", 1);
        assert_eq!(rows(&stopped(&apart, Some(Path::new("/m"))))[0], ("TestPar/x", None, None));
    }
}
