//! Where a JavaScript failure is in the test file, read from its error's stack: mocha's TAP gives
//! a failing test's message and stack and no location (node's TAP has `location:`), so its
//! failures had neither a message nor a `file:line`. Also the plain TAP body mocha prints
//! without `tapVersion=13`: the message, then the stack.

use super::location::location;
use super::types::TestFailure;

/// A failure's place: the test function's frame, and the innermost frame in the repository when
/// that is another place (a helper asserting for the test).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Place {
    pub file: String,
    pub line: Option<u32>,
    /// `path:line` of the assertion when it is not the test's own line.
    pub asserted_at: Option<String>,
}

/// A stack frame's `path:line:col` (`at fn (path:1:2)`, `at path:1:2`), repo-relative; `None`
/// for a frame of node itself, of a dependency, or outside the repository.
fn frame(line: &str, root: &str) -> Option<(String, u32, bool)> {
    let t = line.trim().strip_prefix("at ")?;
    let (func, loc) = match t.strip_suffix(')').and_then(|r| r.rsplit_once(" (")) {
        Some((func, loc)) => (func, loc),
        None => ("", t),
    };
    if loc.starts_with("node:") || loc.contains("/node_modules/") || loc.starts_with("internal/") {
        return None;
    }
    let (file, n) = location(loc, root);
    let (file, n) = (file?, n?);
    if file.starts_with('/') {
        return None;
    }
    // mocha calls a test's function (and a hook's) with its `Context` as `this`.
    let test_fn = func.trim_start_matches("async ").starts_with("Context.");
    Some((file, n, test_fn))
}

/// The failure's place from its stack: the test function's frame (mocha's `Context.<anonymous>`,
/// or the innermost in `test_file`, the failing test's file where the output names it), else the
/// innermost frame in the repository.
pub(super) fn place(stack: &[String], root: &str, test_file: Option<&str>) -> Option<Place> {
    let frames: Vec<(String, u32, bool)> = stack.iter().filter_map(|l| frame(l, root)).collect();
    let innermost = frames.first()?;
    let test = frames.iter().find(|f| f.2 || test_file == Some(f.0.as_str())).unwrap_or(innermost);
    let asserted_at =
        (test.0 != innermost.0 || test.1 != innermost.1).then(|| format!("{}:{}", innermost.0, innermost.1));
    Some(Place { file: test.0.clone(), line: Some(test.1), asserted_at })
}

/// The test file mocha's timeout names at the end of its message (`Timeout of 2000ms exceeded.
/// ... (/repo/test/a.spec.js)`), whose stack is mocha's own.
pub(super) fn timeout_file(message: &str, root: &str) -> Option<Place> {
    let inner = message.trim_end().strip_suffix(')')?.rsplit_once('(')?.1;
    let file = super::location::relative(inner, root);
    (message.starts_with("Timeout of ") && !file.starts_with('/') && !file.is_empty()).then_some(Place {
        file,
        line: None,
        asserted_at: None,
    })
}

/// Places a failure that has no place yet from its error's `stack` lines (mocha's): at the test
/// function's line, its message ending `(asserted at test/helper.js:2)` when a helper asserted;
/// a mocha timeout at its file.
pub(super) fn place_failure(f: &mut TestFailure, stack: &[String], root: &str) {
    place_failure_in(f, stack, root, None);
}

/// [`place_failure`], the test's own file known (jest's and vitest's headers name it).
pub(super) fn place_failure_in(f: &mut TestFailure, stack: &[String], root: &str, test_file: Option<&str>) {
    if f.file.is_some() {
        return;
    }
    let Some(p) = place(stack, root, test_file).or_else(|| f.message.as_deref().and_then(|m| timeout_file(m, root)))
    else {
        return;
    };
    (f.file, f.line) = (Some(p.file), p.line);
    if let Some(at) = p.asserted_at {
        f.message = Some(match f.message.take() {
            Some(m) => format!("{m} (asserted at {at})"),
            None => format!("asserted at {at}"),
        });
    }
}

/// mocha's plain TAP body of a failure, its lines without their indent: `err.message`'s lines,
/// then `err.stack`'s, whose first line repeats the message after the error's name
/// (`AssertionError [ERR_ASSERTION]: 1 == 2`). The message lines and the stack lines.
pub(super) fn split_plain(lines: &[String]) -> (&[String], &[String]) {
    let Some(first) = lines.first().map(|l| l.trim()) else { return (&[], &[]) };
    let header = format!(": {first}");
    let at = (1..lines.len())
        .find(|&k| lines[k].trim_end().ends_with(&header) || lines[k].trim() == first)
        .or_else(|| lines.iter().position(|l| l.trim_start().starts_with("at ")))
        .unwrap_or(lines.len());
    lines.split_at(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn the_test_functions_frame_places_it_and_a_helpers_is_named() {
        let stack = lines(
            "AssertionError [ERR_ASSERTION]: n should be one\n    at exports.check (test/helper.js:2:33)\n    at Context.<anonymous> (test/b.spec.js:2:28)\n    at process.processImmediate (node:internal/timers:483:21)",
        );
        let p = place(&stack, "/r", None).unwrap();
        assert_eq!(
            p,
            Place { file: "test/b.spec.js".into(), line: Some(2), asserted_at: Some("test/helper.js:2".into()) }
        );
        // ESM: file URLs, made relative; async frames.
        let esm = lines("Error: x\n    at async Context.<anonymous> (file:///r/test/c.spec.mjs:5:12)");
        assert_eq!(
            place(&esm, "/r", None).unwrap(),
            Place { file: "test/c.spec.mjs".into(), line: Some(5), asserted_at: None }
        );
        // Only node's and dependencies' frames: no place.
        let deps = lines(
            "Error: y\n    at listOnTimeout (node:internal/timers:581:17)\n    at x (/r/node_modules/m/a.js:1:1)",
        );
        assert_eq!(place(&deps, "/r", None), None);
    }

    #[test]
    fn a_mocha_timeout_names_its_file() {
        let m = "Timeout of 50ms exceeded. For async tests and hooks, ensure \"done()\" is called; if returning a Promise, ensure it resolves. (/r/test/c.spec.mjs)";
        assert_eq!(timeout_file(m, "/r").map(|p| p.file), Some("test/c.spec.mjs".to_string()));
        assert_eq!(timeout_file("boom (x)", "/r"), None);
    }

    #[test]
    fn the_plain_body_splits_where_the_stack_repeats_the_message() {
        let body = lines("Expected values to be strictly equal:\n\n2 !== 3\n\nAssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n\n2 !== 3\n\n    at Context.<anonymous> (test/a.spec.js:7:12)");
        let (message, stack) = split_plain(&body);
        assert_eq!(message.len(), 4);
        assert!(stack[0].starts_with("AssertionError"), "{stack:?}");
        // No message repeated: the stack starts at its first frame.
        let bare = lines("odd\n    at Context.<anonymous> (t.js:1:1)");
        assert_eq!(split_plain(&bare).0, &bare[..1]);
    }
}
