//! The reading order of a PDF page set in columns: its column gutters, found from where its
//! runs of text start and end, whatever order the page draws them in and whatever their
//! baselines; then the page read top down, a block that spans a gutter (a title, a figure's
//! caption, an abstract) where it stands, and the column lines between two such blocks column
//! by column, the left one first.
//!
//! A gutter is a vertical band no run crosses but a few (the full-width blocks), at whose right
//! edge at least [`MIN_COLUMN_LINES`] runs start, left of which at least as many end, the runs
//! on both sides averaging [`MIN_COLUMN_RUN_CHARS`] characters: column lines are text. A table's
//! short cells make no gutter, so its rows stay rows (read as drawn, a cell after a wide gap
//! after a space); a table whose cells on both sides of a gap are all long is read as columns.

/// One run of a page's text: what lies between two breaks or wide gaps.
#[derive(Debug, Default, Clone)]
pub(super) struct Run {
    /// What comes before it in drawing order: a space, one or two line breaks, or nothing.
    pub sep: &'static str,
    /// It starts a run of its own on its line: after a gap wider than `pdf_text::COLUMN_GAP` ems, or
    /// back left by as much (a column to the right drawn before one to the left, their
    /// baselines a little apart).
    pub after_gap: bool,
    /// Where its first glyph starts.
    pub x: f64,
    /// Where its last glyph ends.
    pub x1: f64,
    /// Its first glyph's baseline, downwards from the top of the page.
    pub y: f64,
    /// Its first glyph's size (an em).
    pub size: f64,
    pub text: String,
}

/// Runs starting at one place that make it the edge of a column.
const MIN_COLUMN_LINES: usize = 3;
/// Characters per run, on average, on both sides of a gutter: column lines are text, not the
/// short cells of a table.
const MIN_COLUMN_RUN_CHARS: usize = 16;
/// Blank between the end of a column's lines and the start of the next column's, in ems at
/// least (LaTeX's default gutter is one em).
const MIN_GUTTER: f64 = 0.8;
/// Points: runs starting within this of each other start at one place (a column's edge).
const ALIGN: f64 = 4.0;
/// Baselines closer than this many ems are one line.
const SAME_LINE: f64 = 0.3;

/// A column gutter: the blank band between the end of the lines left of it and the start of
/// those right of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Gutter {
    pub left: f64,
    pub right: f64,
}

impl Gutter {
    fn mid(&self) -> f64 {
        (self.left + self.right) / 2.0
    }
}

/// The page's column gutters, left to right; `None` for a page in one column (or a table).
pub(super) fn gutters(runs: &[Run]) -> Option<Vec<Gutter>> {
    let mut found: Vec<Gutter> = Vec::new();
    for edge in column_edges(runs) {
        if let Some(g) = gutter_at(runs, edge) {
            if !found.iter().any(|f| f.left < g.right && g.left < f.right) {
                found.push(g);
            }
        }
    }
    found.sort_by(|a, b| a.mid().total_cmp(&b.mid()));
    (!found.is_empty()).then_some(found)
}

/// The places where at least [`MIN_COLUMN_LINES`] runs start (within [`ALIGN`] points of one
/// another), each as its leftmost start.
fn column_edges(runs: &[Run]) -> Vec<f64> {
    let mut starts: Vec<f64> = runs.iter().map(|r| r.x).filter(|x| x.is_finite()).collect();
    starts.sort_by(f64::total_cmp);
    starts.chunk_by(|a, b| b - a <= ALIGN).filter(|c| c.len() >= MIN_COLUMN_LINES).map(|c| c[0]).collect()
}

/// The gutter whose right edge is `edge`, if the runs make one there.
fn gutter_at(runs: &[Run], edge: f64) -> Option<Gutter> {
    let starts_here = |r: &Run| r.x >= edge - 0.5 && r.x - edge <= ALIGN * 2.0;
    let ends_before = |r: &Run| r.x < edge && r.x1 <= edge - MIN_GUTTER * r.size;
    let (mut right, mut left, mut crossing) = (Vec::new(), Vec::new(), 0usize);
    for r in runs {
        if starts_here(r) {
            right.push(r);
        } else if ends_before(r) {
            left.push(r);
        } else if r.x < edge {
            crossing += 1;
        }
    }
    // Few runs cross it (a title, a caption), fewer than start at it: a paragraph indent, which
    // the other lines of its column cross, is no gutter.
    if left.len() < MIN_COLUMN_LINES || right.len() < MIN_COLUMN_LINES || crossing > right.len() {
        return None;
    }
    let textual =
        |rs: &[&Run]| rs.iter().map(|r| r.text.chars().count()).sum::<usize>() >= MIN_COLUMN_RUN_CHARS * rs.len();
    if !textual(&left) || !textual(&right) {
        return None;
    }
    let start = left.iter().map(|r| r.x1).fold(f64::NEG_INFINITY, f64::max);
    Some(Gutter { left: start, right: edge })
}

/// Where a run goes in the page's reading order.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Place {
    /// `2k` for the column lines below `k` spanning runs, `2k + 1` for the `k`th spanning run.
    block: usize,
    column: usize,
    line_y: f64,
}

/// The page's text read in `gutters`' columns (see the module's doc).
pub(super) fn read(runs: &[Run], gutters: &[Gutter]) -> String {
    let mids: Vec<f64> = gutters.iter().map(Gutter::mid).collect();
    let line_y = line_ys(runs);
    let spans = |r: &Run| mids.iter().any(|&m| r.x < m && r.x1 > m);
    let mut spanning: Vec<usize> = (0..runs.len()).filter(|&i| spans(&runs[i])).collect();
    spanning.sort_by(|&a, &b| line_y[a].total_cmp(&line_y[b]));
    let span_ys: Vec<f64> = spanning.iter().map(|&i| line_y[i]).collect();
    let mut places: Vec<(Place, usize)> = Vec::with_capacity(runs.len());
    for (k, &i) in spanning.iter().enumerate() {
        places.push((Place { block: 2 * k + 1, column: 0, line_y: line_y[i] }, i));
    }
    for (i, r) in runs.iter().enumerate().filter(|(_, r)| !spans(r)) {
        let above = span_ys.partition_point(|&y| y < line_y[i]);
        let column = mids.iter().filter(|&&m| r.x >= m).count();
        places.push((Place { block: 2 * above, column, line_y: line_y[i] }, i));
    }
    places.sort_by(|(a, i), (b, j)| {
        (a.block, a.column).cmp(&(b.block, b.column)).then(a.line_y.total_cmp(&b.line_y)).then(i.cmp(j))
    });
    let mut out = String::new();
    let mut prev: Option<(Place, &Run)> = None;
    for &(place, i) in &places {
        let run = &runs[i];
        if let Some((p, before)) = prev {
            out.push_str(separator((p, before), (place, run)));
        }
        out.push_str(&run.text);
        prev = Some((place, run));
    }
    out
}

/// What goes between two runs read one after the other: a space on one line, a blank line
/// between a full-width block and column lines or where the text skips a line, else a break.
fn separator((p, before): (Place, &Run), (place, run): (Place, &Run)) -> &'static str {
    let same_block = p.block == place.block;
    if same_block && p.column == place.column && p.line_y == place.line_y && run.x >= before.x1 - 1.0 {
        return " ";
    }
    let spanning = |b: usize| b % 2 == 1;
    if !same_block && spanning(p.block) != spanning(place.block) {
        return "\n\n";
    }
    if same_block && p.column != place.column {
        return "\n";
    }
    if place.line_y - p.line_y > 1.5 * run.size.max(before.size) {
        "\n\n"
    } else {
        "\n"
    }
}

/// Each run's line's baseline: a run within [`SAME_LINE`] ems of the baseline of the run drawn
/// before it is on that run's line (a superscript, a cell), so runs of one line sort together.
fn line_ys(runs: &[Run]) -> Vec<f64> {
    let mut ys: Vec<f64> = Vec::with_capacity(runs.len());
    for (i, r) in runs.iter().enumerate() {
        let y = match i.checked_sub(1) {
            Some(p) if (r.y - runs[p].y).abs() < SAME_LINE * r.size.max(runs[p].size) => ys[p],
            _ => r.y,
        };
        ys.push(y);
    }
    ys
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(x: f64, y: f64, text: &str) -> Run {
        // 10 pt Helvetica-ish: half an em a character.
        let x1 = x + 5.0 * text.chars().count() as f64;
        Run { sep: "\n", after_gap: false, x, x1, y, size: 10.0, text: text.to_string() }
    }

    /// Three wide word spaces of a long justified page that line up are no gutter: the lines
    /// that cross the band outnumber those starting at it.
    #[test]
    fn a_few_aligned_wide_spaces_of_a_long_page_are_no_gutter() {
        let mut runs = Vec::new();
        for i in 0..40 {
            let y = 72.0 + 14.0 * i as f64;
            if i % 10 == 0 {
                runs.push(run(72.0, y, "a line of justified text that"));
                runs.push(run(240.0, y, "and its end after a wide space here"));
            } else {
                runs.push(run(72.0, y, "a line of justified text that runs on to the right margin of the page"));
            }
        }
        assert_eq!(gutters(&runs), None);
    }

    /// A paragraph indent in the right column is no second gutter: that column's other lines
    /// cross it.
    #[test]
    fn a_paragraph_indent_is_no_gutter() {
        let mut runs = Vec::new();
        for i in 0..12 {
            let y = 72.0 + 14.0 * i as f64;
            runs.push(run(72.0, y, "the left column's lines of text"));
            let x = if i % 4 == 0 { 335.0 } else { 320.0 };
            runs.push(run(x, y, "the right column's lines of text"));
        }
        let g = gutters(&runs).expect("two columns");
        assert_eq!(g.len(), 1, "{g:?}");
        assert_eq!(g[0].right, 320.0);
    }
}
