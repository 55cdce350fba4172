//! The output of a test run kept for reading its results: its start and its end, with what
//! was dropped between them counted and said.
//!
//! A runner can print gigabytes, so not all of it is kept. Keeping only the newest lines (as
//! docdex did) lost what runners print first and need later: cargo's `test result:` line of
//! each test binary before the last one that printed a lot (a run of 1 passed and 2 failed
//! read "0 passed, 1 failed"), pytest's `FAILURES` header that the `path:line:` lines after a
//! loud test's captured output belong to (every failure lost its line). Nothing said the
//! output had been cut. So the first [`HEAD_LINES`] lines are kept too, a marker line stands
//! where lines were dropped, and [`Kept::note`] says how many and what may be missing.

use std::collections::VecDeque;

/// Lines of output kept for parsing, at most (the start's and the end's).
pub(super) const MAX_KEPT_LINES: usize = 50_000;
/// Bytes of output kept for parsing, at most.
pub(super) const MAX_KEPT_BYTES: usize = 32 * 1024 * 1024;
/// Lines at the start of the output always kept: what a runner prints before its tests'
/// output (pytest's section headers, the first test binaries' results).
const HEAD_LINES: usize = 10_000;
/// Bytes of those first lines, at most.
const HEAD_BYTES: usize = 8 * 1024 * 1024;

/// The output kept for parsing: the first lines up to [`HEAD_LINES`] / [`HEAD_BYTES`], then
/// the newest within the rest of [`MAX_KEPT_LINES`] / [`MAX_KEPT_BYTES`] (each line already
/// cut at the reader's limit), so a runner printing gigabytes cannot take the memory.
#[derive(Default)]
pub(super) struct Kept {
    head: Vec<String>,
    head_bytes: usize,
    tail: VecDeque<String>,
    tail_bytes: usize,
    dropped_lines: usize,
    dropped_bytes: usize,
}

impl Kept {
    /// Keeps `line`: in the head while it has room and nothing went past it, else at the end,
    /// dropping the oldest lines after the head once the end is full.
    pub(super) fn push(&mut self, line: String) {
        let head_room = self.head.len() < HEAD_LINES && self.head_bytes + line.len() <= HEAD_BYTES;
        if self.tail.is_empty() && head_room {
            self.head_bytes += line.len();
            self.head.push(line);
            return;
        }
        self.tail_bytes += line.len();
        self.tail.push_back(line);
        while self.tail.len() > MAX_KEPT_LINES - HEAD_LINES || self.tail_bytes > MAX_KEPT_BYTES - HEAD_BYTES {
            let Some(old) = self.tail.pop_front() else { break };
            self.tail_bytes -= old.len();
            self.dropped_lines += 1;
            self.dropped_bytes += old.len();
        }
    }

    /// The kept lines in order, with one marker line where lines were dropped (it matches no
    /// runner's result line, so the parsers read past it).
    pub(super) fn lines(&self) -> Vec<String> {
        let mut lines = Vec::with_capacity(self.head.len() + self.tail.len() + 1);
        lines.extend(self.head.iter().cloned());
        if self.dropped_lines > 0 {
            lines.push(format!(
                "[docdex: {} lines ({}) of output not kept here]",
                self.dropped_lines,
                bytes_shown(self.dropped_bytes)
            ));
        }
        lines.extend(self.tail.iter().cloned());
        lines
    }

    /// What the result cannot hold when lines were dropped, for the response's notes.
    pub(super) fn note(&self) -> Option<String> {
        (self.dropped_lines > 0).then(|| {
            format!(
                "the runner printed more output than docdex reads ({} lines or {} MiB): its first {} and last {} lines were read, the {} lines ({}) between them were not, so counts and failures printed only there are missing from this result (run the runner itself, or a --target, to see them)",
                MAX_KEPT_LINES,
                MAX_KEPT_BYTES >> 20,
                self.head.len(),
                self.tail.len(),
                self.dropped_lines,
                bytes_shown(self.dropped_bytes)
            )
        })
    }
}

/// A byte count as people read it (`812 bytes`, `80.4 MB`).
fn bytes_shown(bytes: usize) -> String {
    if bytes < 1_000_000 {
        format!("{bytes} bytes")
    } else {
        format!("{:.1} MB", bytes as f64 / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_output_keeps_its_start_and_its_end_and_says_what_it_dropped() {
        let mut k = Kept::default();
        for i in 0..(MAX_KEPT_LINES + 25_000) {
            k.push(format!("line {i}"));
        }
        let lines = k.lines();
        assert_eq!(lines.len(), MAX_KEPT_LINES + 1, "the kept lines and one marker");
        assert_eq!(lines[0], "line 0");
        assert_eq!(lines[HEAD_LINES - 1], format!("line {}", HEAD_LINES - 1), "the start is kept whole");
        assert!(lines[HEAD_LINES].starts_with("[docdex: 25000 lines ("), "{}", lines[HEAD_LINES]);
        assert_eq!(lines[HEAD_LINES + 1], format!("line {}", HEAD_LINES + 25_000));
        assert_eq!(lines.last().map(String::as_str), Some(format!("line {}", MAX_KEPT_LINES + 24_999).as_str()));
        let note = k.note().unwrap_or_default();
        assert!(note.contains("the 25000 lines"), "{note}");
        assert!(note.contains("counts and failures printed only there are missing"), "{note}");
    }

    #[test]
    fn an_output_within_the_limits_is_kept_whole_without_a_note() {
        let mut k = Kept::default();
        for i in 0..(MAX_KEPT_LINES - 1) {
            k.push(format!("{i}"));
        }
        assert_eq!(k.lines().len(), MAX_KEPT_LINES - 1);
        assert!(k.lines().iter().all(|l| !l.starts_with("[docdex:")));
        assert_eq!(k.note(), None);
    }

    #[test]
    fn the_byte_limit_drops_from_the_middle_too() {
        let mut k = Kept::default();
        let line = "x".repeat(16 * 1024);
        // 64 MiB of 16 KiB lines: 4,096 lines, far fewer than the line limit.
        for _ in 0..4096 {
            k.push(line.clone());
        }
        let kept: usize = k.lines().iter().filter(|l| !l.starts_with("[docdex:")).map(String::len).sum();
        assert!(kept <= MAX_KEPT_BYTES, "{kept}");
        assert_eq!(k.head.len(), HEAD_BYTES / line.len(), "the head holds its bytes' worth");
        assert!(k.note().is_some());
    }
}
