//! testify's failure blocks in go test output. `assert.Equal` and the rest report through
//! `t.Errorf("\n%s", ...)`, so go prints a location line with no message (`calc_test.go:11: `)
//! and testify's labeled lines below it, indented deeper:
//!
//! ```text
//!     calc_test.go:15:
//!         <TAB>Error Trace:<TAB>/abs/calc/calc_test.go:15
//!         <TAB>            <TAB><TAB><TAB><TAB>/abs/calc/calc_test.go:19
//!         <TAB>Error:      <TAB>Not equal:
//!         <TAB>            <TAB>expected: 4
//!         <TAB>            <TAB>actual  : 3
//!         <TAB>Test:       <TAB>TestHelper
//!         <TAB>Messages:   <TAB>one and one
//! ```
//!
//! The location line alone was no place (go's `file.go:N: message` needs a message), and the
//! failure was placed at a `t.Log` line the test printed before, or nowhere. The block gives the
//! message (`Error`, `Messages`) and the call stack (`Error Trace`: innermost first, ending in the
//! test function; absolute paths since testify 1.8, base names before).

/// The labels testify prints, longest first (`Error Trace` before `Error`).
const LABELS: [&str; 4] = ["Error Trace", "Messages", "Error", "Test"];

/// A testify block being read, below its location line.
#[derive(Debug, Default)]
pub(super) struct Block {
    /// The location line's indentation: the block's lines are indented deeper.
    pub indent: usize,
    /// The label whose content the next unlabeled line continues.
    label: &'static str,
    /// `Error Trace` frames, `(file, line)`, innermost first.
    frames: Vec<(String, u32)>,
    /// `Error` content lines, up to a `Diff:` line.
    error: Vec<String>,
    /// Whether the `Error` content reached its `Diff:` (the rest is left out of the message).
    diff: bool,
    /// `Messages` content lines.
    messages: Vec<String>,
}

/// The indentation of `line` (spaces and tabs before its text).
pub(super) fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches([' ', '\t']).len()
}

impl Block {
    /// A block below a location line indented `indent`.
    pub(super) fn new(indent: usize) -> Self {
        Block { indent, ..Block::default() }
    }

    /// Reads one line of the block (`t`: trimmed). `module_relative` makes a frame's path
    /// relative to the module when it lies inside it.
    pub(super) fn feed(&mut self, t: &str, module_relative: &dyn Fn(&str) -> String) {
        let mut text = t;
        for label in LABELS {
            if let Some(rest) = t.strip_prefix(label).and_then(|r| r.strip_prefix(':')) {
                self.label = label;
                text = rest.trim();
                break;
            }
        }
        if text.is_empty() {
            return;
        }
        match self.label {
            "Error Trace" => {
                for frame in text.split_whitespace() {
                    if let Some((file, line)) = frame.rsplit_once(':') {
                        if let (true, Ok(line)) = (file.ends_with(".go"), line.parse::<u32>()) {
                            self.frames.push((module_relative(file), line));
                        }
                    }
                }
            }
            "Error" if text == "Diff:" => self.diff = true,
            "Error" if !self.diff => self.error.push(text.to_string()),
            "Messages" => self.messages.push(text.to_string()),
            _ => {}
        }
    }

    /// Where the test failed: the innermost frame in the test function's file (the trace's last
    /// frame is in the test function), so a helper in another file gives the test's line that
    /// called it, as pytest's deepest frame in the test's own file does. `None` without frames.
    pub(super) fn place(&self) -> Option<(String, u32)> {
        let (test_file, _) = self.frames.last()?;
        self.frames.iter().find(|(f, _)| f == test_file).cloned()
    }

    /// The failure's message: `Error`'s lines as one (`Not equal: expected: 4 actual : 3`),
    /// then `Messages`, and where the assertion was when that is not the place given.
    pub(super) fn message(&self) -> String {
        let words = |lines: &[String]| lines.join(" ").split_whitespace().collect::<Vec<_>>().join(" ");
        let mut msg = words(&self.error);
        if !self.messages.is_empty() {
            if !msg.is_empty() {
                msg.push_str("; ");
            }
            msg.push_str(&words(&self.messages));
        }
        if let (Some((file, line)), Some(placed)) = (self.frames.first(), self.place()) {
            if placed != (file.clone(), *line) {
                msg.push_str(&format!(" (asserted at {file}:{line})"));
            }
        }
        msg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_helper_in_another_file_places_the_failure_at_the_tests_line() {
        let mut b = Block::new(4);
        let rel = |f: &str| f.strip_prefix("/m/").unwrap_or(f).to_string();
        for line in [
            "Error Trace:\t/m/calc/helpers_test.go:5",
            "\t\t\t\t/m/calc/calc_test.go:15",
            "\t\t\t\t/m/calc/calc_test.go:19",
            "Error:      \tNot equal: ",
            "expected: \"a\"",
            "actual  : \"b\"",
            "",
            "Diff:",
            "--- Expected",
            "Test:       \tTestHelper",
            "Messages:   \tone and one",
        ] {
            b.feed(line.trim(), &rel);
        }
        assert_eq!(b.place(), Some(("calc/calc_test.go".to_string(), 15)));
        assert_eq!(
            b.message(),
            "Not equal: expected: \"a\" actual : \"b\"; one and one (asserted at calc/helpers_test.go:5)"
        );
        assert_eq!(Block::new(4).place(), None);
    }
}
