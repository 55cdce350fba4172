//! jest's and vitest's default output: counts, and each failure with its message and place.
//! Both print a failure as a header (jest `● Suite › name` below its file's `FAIL file`, vitest
//! `FAIL  file > suite > name`), the error's lines, a code frame, and the stack (jest `at fn
//! (path:line:col)`, vitest `❯ fn path:line:col`); the failure is placed at the stack's frame in
//! its test file (`js_stack`). Read with the real jest 30.5 and vitest 3.2; their failures had
//! names only.

use super::js_stack;
use super::parse::Outcome;
use super::types::TestFailure;
use regex::Regex;
use std::sync::OnceLock;

/// The failure being read: its index, its test file (jest's `FAIL` line, vitest's header), the
/// error's lines before the code frame, and the stack's frames as `at path:line:col`.
struct Block {
    at: usize,
    file: Option<String>,
    message: Vec<String>,
    frames: Vec<String>,
    in_frame: bool,
    /// vitest's: ended only by its `⎯` rule (or the next header), as vitest prints failures on
    /// stderr and its summary on stdout, whose lines docdex may read in the middle of a block.
    vitest: bool,
}

/// Reads jest's or vitest's output (colours off) from a run in `root`.
pub(super) fn read(out: &str, root: &str) -> Outcome {
    let mut o = Outcome::default();
    let mut file: Option<String> = None;
    let mut block: Option<Block> = None;
    for line in out.lines() {
        let t = line.trim();
        if let Some(next) = header(t, &mut file, &mut o) {
            finish(block.take(), &mut o, root);
            block = next.map(|at| Block {
                at,
                file: o.failures[at].file.clone().or_else(|| file.clone()),
                message: Vec::new(),
                frames: Vec::new(),
                in_frame: false,
                vitest: t.starts_with("FAIL"),
            });
        } else if ends_block(t) {
            if !block.as_ref().is_some_and(|b| b.vitest && !t.starts_with('⎯')) {
                finish(block.take(), &mut o, root);
            }
            counts(t, &mut o);
        } else if block.as_ref().is_some_and(|b| b.vitest) && (t.starts_with("Start at ") || t.starts_with("Duration "))
        {
            // The rest of vitest's summary, read inside a block: no line of the failure.
        } else if let Some(b) = block.as_mut() {
            gather(b, t);
        }
    }
    finish(block, &mut o, root);
    o.hung = super::reporters::running(out, root);
    o
}

/// A header line: a failure's (its index: a new block) or a file's (`FAIL file`, `PASS file`:
/// the file of jest's failures below it; no block). `None` for any other line.
fn header(t: &str, file: &mut Option<String>, o: &mut Outcome) -> Option<Option<usize>> {
    if let Some(name) = t.strip_prefix("● ").map(str::trim) {
        // jest's console output (`● Console`) is no failure.
        if name == "Console" {
            return Some(None);
        }
        o.failures.push(failure(name.to_string(), file.clone()));
        return Some(Some(o.failures.len() - 1));
    }
    let rest = t.strip_prefix("FAIL ").or_else(|| t.strip_prefix("PASS ")).map(str::trim)?;
    match rest.split_once(" > ") {
        // vitest's header; its list of a file's tests (`× suite > name 6ms`) names no file.
        Some((f, name)) if t.starts_with("FAIL") && (f.contains('.') || f.contains('/')) => {
            if o.failures.iter().any(|x| x.name == name && x.file.as_deref() == Some(f)) {
                return Some(None);
            }
            o.failures.push(failure(name.to_string(), Some(f.to_string())));
            Some(Some(o.failures.len() - 1))
        }
        Some(_) => None,
        None => {
            *file = Some(rest.split_whitespace().next().unwrap_or(rest).to_string());
            Some(None)
        }
    }
}

fn failure(name: String, file: Option<String>) -> TestFailure {
    TestFailure { name, file, line: None, message: None, runner: None }
}

/// Lines that end a failure's block: vitest's `⎯⎯⎯` rules, and the summary.
fn ends_block(t: &str) -> bool {
    t.starts_with('⎯')
        || t.starts_with("Tests:")
        || t.starts_with("Tests ")
        || t.starts_with("Test Suites:")
        || t.starts_with("Test Files ")
        || t.starts_with("No tests found")
        || t.starts_with("No test files found")
}

/// A line of a failure's block: the error's lines until the code frame or the stack, then the
/// stack's frames.
fn gather(b: &mut Block, t: &str) {
    static FRAME: OnceLock<Option<Regex>> = OnceLock::new();
    let code = FRAME.get_or_init(|| Regex::new(r"^(>\s*)?\d+\s*\||^\|").ok()).as_ref();
    if let Some(rest) = t.strip_prefix("❯ ") {
        // vitest: `❯ fn path:1:2` or `❯ path:1:2`.
        b.frames.push(format!("at {}", rest.rsplit(' ').next().unwrap_or(rest)));
        b.in_frame = true;
    } else if t.starts_with("at ") {
        b.frames.push(t.to_string());
        b.in_frame = true;
    } else if code.is_some_and(|r| r.is_match(t)) {
        b.in_frame = true;
    } else if !b.in_frame && !t.is_empty() {
        b.message.push(t.to_string());
    }
}

/// Ends a block: its message, and its place at the frame in its test file (else the test
/// function's or the innermost in the repository), a helper's noted.
fn finish(b: Option<Block>, o: &mut Outcome, root: &str) {
    let Some(b) = b else { return };
    let Some(f) = o.failures.get_mut(b.at) else { return };
    f.message = super::parse::joined(&b.message);
    let test_file = b.file.as_deref().map(|x| super::location::relative(x, root));
    f.file = None;
    js_stack::place_failure_in(f, &b.frames, root, test_file.as_deref());
    if f.file.is_none() {
        f.file = test_file;
    }
}

/// jest's `Tests: 1 failed, 2 passed, 3 total` and vitest's `Tests  1 failed | 2 passed (3)`;
/// `No tests found` (jest) and `No test files found` (vitest).
fn counts(t: &str, o: &mut Outcome) {
    static COUNT: OnceLock<Option<Regex>> = OnceLock::new();
    if t.starts_with("No tests found") || t.starts_with("No test files found") {
        o.none_found = true;
    } else if t.starts_with("Tests:") || t.starts_with("Tests ") {
        o.counted = true;
        let re = COUNT.get_or_init(|| Regex::new(r"(\d+) (passed|failed|skipped|todo)").ok());
        for c in re.as_ref().map(|r| r.captures_iter(t).collect::<Vec<_>>()).unwrap_or_default() {
            let n: u32 = c[1].parse().unwrap_or(0);
            match &c[2] {
                "passed" => o.passed = n,
                "failed" => o.failed = n,
                _ => o.skipped += n,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jest_failures_have_their_message_and_the_line_in_their_test_file() {
        // jest 30.5, `--ci`, colours off.
        let out = "FAIL test/a.test.js\n  math\n    ✓ adds (8 ms)\n    ✕ breaks (3 ms)\n\n  ● math › breaks\n\n    expect(received).toBe(expected) // Object.is equality\n\n    Expected: 3\n    Received: 2\n\n      4 |   test('breaks', () => {\n    > 5 |     expect(1 + 1).toBe(3);\n        |                   ^\n\n      at Object.toBe (test/a.test.js:5:19)\n\n  ● math › checks\n\n    n should be one\n\n    > 2 |   if (n !== 1) throw new Error('n should be one');\n\n      at exports.check (test/helper.js:2:22)\n      at Object.check (test/a.test.js:7:26)\n\n  ● top level\n\n    boom\n\n      at Object.<anonymous> (test/a.test.js:9:9)\n\n  ● Console\n\n    console.log\n      hi\n\nTest Suites: 1 failed, 1 total\nTests:       3 failed, 1 passed, 4 total\n";
        let o = read(out, "/r");
        assert_eq!((o.passed, o.failed, o.counted), (1, 3, true));
        let got: Vec<_> =
            o.failures.iter().map(|f| (f.name.as_str(), f.file.as_deref(), f.line, f.message.as_deref())).collect();
        assert_eq!(
            got,
            [
                (
                    "math › breaks",
                    Some("test/a.test.js"),
                    Some(5),
                    Some("expect(received).toBe(expected) // Object.is equality Expected: 3 Received: 2")
                ),
                (
                    "math › checks",
                    Some("test/a.test.js"),
                    Some(7),
                    Some("n should be one (asserted at test/helper.js:2)")
                ),
                ("top level", Some("test/a.test.js"), Some(9), Some("boom")),
            ]
        );
    }

    #[test]
    fn vitest_failures_have_their_message_and_line_and_its_list_of_tests_is_no_failure() {
        // vitest 3.2's default reporter, not a terminal.
        let out = " ❯ test/a.test.js (3 tests | 2 failed) 9ms\n   ✓ math > adds 1ms\n   × math > breaks 6ms\n     → expected 2 to be 3 // Object.is equality\n\n⎯⎯⎯⎯⎯⎯⎯ Failed Tests 2 ⎯⎯⎯⎯⎯⎯⎯\n\n FAIL  test/a.test.js > math > breaks\nAssertionError: expected 2 to be 3 // Object.is equality\n\n- Expected\n+ Received\n\n ❯ test/a.test.js:6:19\n      4|   test('adds', () => {\n      6|     expect(1 + 1).toBe(3);\n       |                   ^\n\n⎯⎯⎯⎯⎯⎯⎯⎯⎯[1/2]⎯\n\n FAIL  test/a.test.js > math > checks\nError: n should be one\n ❯ check test/helper.js:2:22\n      2|   if (n !== 1) throw new Error('n should be one');\n ❯ test/a.test.js:8:31\n\n⎯⎯⎯⎯⎯⎯⎯⎯⎯[2/2]⎯\n\n Test Files  1 failed (1)\n      Tests  2 failed | 1 passed (3)\n";
        let o = read(out, "/r");
        assert_eq!((o.passed, o.failed, o.counted), (1, 2, true));
        let got: Vec<_> =
            o.failures.iter().map(|f| (f.name.as_str(), f.file.as_deref(), f.line, f.message.as_deref())).collect();
        assert_eq!(
            got,
            [
                (
                    "math > breaks",
                    Some("test/a.test.js"),
                    Some(6),
                    Some("AssertionError: expected 2 to be 3 // Object.is equality - Expected + Received")
                ),
                (
                    "math > checks",
                    Some("test/a.test.js"),
                    Some(8),
                    Some("Error: n should be one (asserted at test/helper.js:2)")
                ),
            ]
        );
    }

    #[test]
    fn vitest_summary_read_inside_a_failure_block_leaves_it_whole() {
        // vitest 3.2.7 printing its failure on stderr and its summary on stdout, read interleaved
        // (seen in a run): the summary ended the block, and the failure lost its line.
        let out = " FAIL  test/math.test.mjs > math > breaks
AssertionError: expected 2 to be 3 // Object.is equality

 Test Files  1 failed (1)
      Tests  1 failed | 1 passed (2)
   Start at  21:57:37
   Duration  457ms (transform 53ms)

- Expected
+ Received

 ❯ test/math.test.mjs:7:19
      7|     expect(1 + 1).toBe(3);

⎯⎯⎯⎯⎯⎯⎯⎯⎯[1/1]⎯
";
        let o = read(out, "/r");
        assert_eq!((o.passed, o.failed, o.counted), (1, 1, true));
        let f = &o.failures[0];
        assert_eq!((f.file.as_deref(), f.line), (Some("test/math.test.mjs"), Some(7)));
        assert_eq!(
            f.message.as_deref(),
            Some("AssertionError: expected 2 to be 3 // Object.is equality - Expected + Received")
        );
    }
}
