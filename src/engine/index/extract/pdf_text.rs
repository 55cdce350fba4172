//! A page's text from pdf-extract's glyphs, as its `PlainTextOutput` writes it (a space at a
//! gap between words, a line break where the text moves down) but for text set in columns: a
//! page that draws both columns of each line in turn came out with the two columns' lines
//! glued into one ("that eat ants Keepers weigh every"). The glyphs are kept as runs (what lies
//! between two breaks or two gaps wider than [`COLUMN_GAP`] ems on one line); when several lines
//! have such a gap at one place, the page is in columns, and each column is written whole, the
//! left one first. A wide gap elsewhere (a table's cells, a figure's label) stays a space.

use pdf_extract::{MediaBox, OutputDev, OutputError, Transform};

/// A gap between two glyphs of one line wider than this many ems (the font size) may be a
/// column gutter: word spaces are about a third of an em, and rarely one em even in a justified
/// narrow column.
const COLUMN_GAP: f64 = 1.5;
/// Lines with a gap at one place that make a page two columns.
const MIN_COLUMN_LINES: usize = 3;
/// Glyphs on both sides of a gutter, on average per run: column lines are text, not the short
/// cells of a table.
const MIN_COLUMN_RUN_CHARS: usize = 16;

/// One run of a page's text: what lies between two breaks or wide gaps.
#[derive(Debug, Default)]
struct Run {
    /// What comes before it in reading order: a space, one or two line breaks, or nothing.
    sep: &'static str,
    /// It starts after a gap wider than [`COLUMN_GAP`] on its line.
    after_gap: bool,
    /// Where its first glyph is.
    x: f64,
    text: String,
}

/// The [`OutputDev`] of a page's text (see the module's doc); [`PageText::finish`] gives it.
pub(super) struct PageText {
    runs: Vec<Run>,
    height: f64,
    last_end: f64,
    last_y: f64,
    first_char: bool,
}

impl PageText {
    pub(super) fn new() -> PageText {
        PageText { runs: Vec::new(), height: 0.0, last_end: 100_000.0, last_y: 0.0, first_char: false }
    }

    /// The page's text: its columns one after the other when it has them, else as drawn.
    pub(super) fn finish(self) -> String {
        let gutter = gutter(&self.runs);
        let order: Vec<&Run> = match gutter {
            Some(x) => {
                let (left, right): (Vec<&Run>, Vec<&Run>) = self.runs.iter().partition(|r| r.x < x);
                left.into_iter().chain(right).collect()
            }
            None => self.runs.iter().collect(),
        };
        let mut out = String::new();
        for (i, run) in order.iter().enumerate() {
            // A run after a gap starts a line in a page of columns, and is spaced as before in
            // any other (a table's cells stay on their row).
            let sep = match (i, run.after_gap) {
                (0, _) => "",
                (_, true) if gutter.is_some() => "\n",
                (_, true) => " ",
                _ => run.sep,
            };
            out.push_str(sep);
            out.push_str(&run.text);
        }
        out
    }

    fn push(&mut self, sep: &'static str, after_gap: bool, x: f64, c: &str) {
        let new_run = self.runs.is_empty() || after_gap || sep.contains('\n');
        match self.runs.last_mut() {
            Some(run) if !new_run => {
                run.text.push_str(sep);
                run.text.push_str(c);
            }
            _ => self.runs.push(Run { sep, after_gap, x, text: c.to_string() }),
        }
    }
}

/// Where the page's column gutter ends (the x at which the right column starts) when enough
/// lines of text (3, and a quarter of the page's) have a wide gap there; none for a page in one
/// column.
fn gutter(runs: &[Run]) -> Option<f64> {
    let gaps: Vec<&Run> = runs.iter().filter(|r| r.after_gap).collect();
    if gaps.len() < MIN_COLUMN_LINES {
        return None;
    }
    // The most common start of a run after a gap, to the nearest 10 points.
    let mut starts: Vec<i64> = gaps.iter().map(|r| (r.x / 10.0).round() as i64).collect();
    starts.sort_unstable();
    let (bucket, count) = starts.chunk_by(|a, b| a == b).map(|c| (c[0], c.len())).max_by_key(|(_, n)| *n)?;
    // A quarter of the page's lines at least: a few wide word spaces of a justified page that
    // happen to line up are no gutter.
    let lines = 1 + runs.iter().filter(|r| r.sep.contains('\n')).count();
    if count < MIN_COLUMN_LINES || count * 4 < lines {
        return None;
    }
    let right: Vec<&&Run> = gaps.iter().filter(|r| (r.x / 10.0).round() as i64 == bucket).collect();
    let chars = |rs: &mut dyn Iterator<Item = &Run>| -> (usize, usize) {
        rs.fold((0, 0), |(c, n), r| (c + r.text.chars().count(), n + 1))
    };
    let (right_chars, right_runs) = chars(&mut right.iter().map(|r| **r));
    let (all_chars, all_runs) = chars(&mut runs.iter());
    let left_runs = all_runs.saturating_sub(right_runs).max(1);
    let textual = right_chars >= MIN_COLUMN_RUN_CHARS * right_runs
        && all_chars.saturating_sub(right_chars) >= MIN_COLUMN_RUN_CHARS * left_runs;
    let x = right.iter().map(|r| r.x).fold(f64::INFINITY, f64::min);
    textual.then_some(x - 1.0)
}

impl OutputDev for PageText {
    fn begin_page(&mut self, _: u32, media_box: &MediaBox, _: Option<(f64, f64, f64, f64)>) -> Result<(), OutputError> {
        self.height = media_box.ury - media_box.lly;
        Ok(())
    }

    fn end_page(&mut self) -> Result<(), OutputError> {
        Ok(())
    }

    /// As `PlainTextOutput::output_character`, but for a gap wider than [`COLUMN_GAP`] ems on
    /// the same line, which starts a run of its own.
    fn output_character(
        &mut self,
        trm: &Transform,
        width: f64,
        _: f64,
        font_size: f64,
        c: &str,
    ) -> Result<(), OutputError> {
        // The glyph's origin with y downwards (pdf-extract flips by the media box's height).
        let (x, y) = (trm.m31, self.height - trm.m32);
        let (vx, vy) = (font_size * (trm.m11 + trm.m21), font_size * (trm.m12 + trm.m22));
        let size = (vx * vy).sqrt();
        let mut sep = "";
        let mut after_gap = false;
        if self.first_char {
            let down = (y - self.last_y).abs();
            let new_line = down > size * 1.5;
            let back = x < self.last_end && down > size * 0.5;
            sep = match (new_line, back) {
                (true, true) => "\n\n",
                (true, false) | (false, true) => "\n",
                _ => "",
            };
            if x > self.last_end + size * 0.1 {
                after_gap = sep.is_empty() && x > self.last_end + size * COLUMN_GAP;
                if sep.is_empty() {
                    sep = " ";
                }
            }
        }
        self.push(sep, after_gap, x, c);
        self.first_char = false;
        self.last_y = y;
        self.last_end = x + width * size;
        Ok(())
    }

    fn begin_word(&mut self) -> Result<(), OutputError> {
        self.first_char = true;
        Ok(())
    }

    fn end_word(&mut self) -> Result<(), OutputError> {
        Ok(())
    }

    fn end_line(&mut self) -> Result<(), OutputError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(sep: &'static str, after_gap: bool, x: f64, text: &str) -> Run {
        Run { sep, after_gap, x, text: text.to_string() }
    }

    /// Three wide word spaces of a long justified page that line up are no gutter: the page
    /// keeps its order (taking them for one moved those line ends to the end of the page).
    #[test]
    fn a_few_aligned_wide_spaces_of_a_long_page_are_no_gutter() {
        let mut runs = Vec::new();
        for i in 0..40 {
            let sep = if i == 0 { "" } else { "\n" };
            runs.push(run(sep, false, 72.0, "a line of justified text that runs on"));
            if i % 10 == 0 {
                runs.push(run(" ", true, 320.0, "and its end after a wide space"));
            }
        }
        assert_eq!(gutter(&runs), None);
        let page = PageText { runs, height: 792.0, last_end: 0.0, last_y: 0.0, first_char: false }.finish();
        assert_eq!(page.lines().count(), 40, "{page}");
        assert!(page.starts_with("a line of justified text that runs on and its end"), "{page}");
    }
}
