//! A page's text from pdf-extract's glyphs, as its `PlainTextOutput` writes it (a space at a
//! gap between words, a line break where the text moves down) but for text set in columns.
//! The glyphs are kept as runs (what lies between two breaks or two gaps wider than
//! [`COLUMN_GAP`] ems on one line, with where it starts, ends and sits); when the page has
//! column gutters ([`super::pdf_columns`]), it is read block by block and column by column,
//! else as drawn, a wide gap (a table's cells, a figure's label) a space.

use super::pdf_columns::{self, Run};
use pdf_extract::{MediaBox, OutputDev, OutputError, Transform};

/// A gap between two glyphs of one line wider than this many ems (the font size) starts a run
/// of its own, which may begin a column: word spaces are about a third of an em, and rarely one
/// em even in a justified narrow column.
const COLUMN_GAP: f64 = 1.5;

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

    /// The page's text: its blocks and columns in reading order when it has columns, else as
    /// drawn.
    pub(super) fn finish(self) -> String {
        match pdf_columns::gutters(&self.runs) {
            Some(gutters) => pdf_columns::read(&self.runs, &gutters),
            None => as_drawn(&self.runs),
        }
    }

    fn push(&mut self, sep: &'static str, after_gap: bool, (x, y, size): (f64, f64, f64), end: f64, c: &str) {
        let new_run = self.runs.is_empty() || after_gap || sep.contains('\n');
        match self.runs.last_mut() {
            Some(run) if !new_run => {
                run.text.push_str(sep);
                run.text.push_str(c);
                run.x1 = run.x1.max(end);
            }
            _ => self.runs.push(Run { sep, after_gap, x, x1: end, y, size, text: c.to_string() }),
        }
    }
}

/// The runs in the order drawn, each after its separator; a run after a wide gap (or a jump
/// back) on its line after a space (a table's cells stay on their row).
fn as_drawn(runs: &[Run]) -> String {
    let mut out = String::new();
    for (i, run) in runs.iter().enumerate() {
        let sep = match (i, run.after_gap) {
            (0, _) => "",
            (_, true) => " ",
            _ => run.sep,
        };
        out.push_str(sep);
        out.push_str(&run.text);
    }
    out
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
    /// the same line, or a jump back left as far, which starts a run of its own (before, the
    /// jump glued the glyphs: "line 2 toothe left column").
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
            after_gap = sep.is_empty() && x < self.last_end - size * COLUMN_GAP;
            if x > self.last_end + size * 0.1 {
                after_gap |= sep.is_empty() && x > self.last_end + size * COLUMN_GAP;
                if sep.is_empty() {
                    sep = " ";
                }
            }
        }
        let end = x + width * size;
        self.push(sep, after_gap, (x, y, size), end, c);
        self.first_char = false;
        self.last_y = y;
        self.last_end = end;
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
