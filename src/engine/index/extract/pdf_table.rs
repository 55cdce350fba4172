//! Whether the column lines between two blocks of a page are a table whose cells hold long
//! text (which makes gutters as columns of text do), and its rows: a table is then read row by
//! row, each cell whole, not column by column.
//!
//! The sign is where the text stops and starts again across the columns. A table's rows are
//! parted by a blank band across every column, wider than its cells' leading, and each row
//! starts with a line in every column at the same baseline; a cell with fewer lines than its
//! neighbours leaves its column blank down to the next row. Flowing columns of prose do not do
//! that: a column's paragraph break rarely falls where the next column's does, and when breaks
//! are spaced alike, two columns whose paragraphs start together at every break also end
//! together. So it takes at least two rows, each starting in every column, a cell of more than one
//! line, and either three rows or a row (not the last) whose cells differ in their count of
//! lines.
//!
//! A table without row gaps ([`grid`]: rows one line high, evenly spaced as a column's lines
//! are) is told by its cells' ends instead. Prose is broken into lines where the next word
//! does not fit: a column's line ends so near the column's right edge that the next line's
//! first word would not have fitted after it, but where a paragraph ends. A table's cell ends
//! where its text does, and the next row's first word would often have fitted after it. So
//! at least [`MIN_GRID_ROWS`] rows in a stretch of lines, each starting with a line in every
//! column at one baseline (a line in only some columns, with no gap above it, a cell wrapped
//! onto it), in one column of which the next row's first word would have fitted after more
//! than half of the cells, are a table.

/// A run's place among a page's columns: the first and last column it lies in (the same for
/// a column's line, more for a run crossing a gutter), its line's baseline and its size (an em).
#[derive(Debug, Clone, Copy)]
pub(super) struct Item {
    /// The run's index in the page's runs.
    pub run: usize,
    pub lo: usize,
    pub hi: usize,
    pub y: f64,
    pub size: f64,
    /// Where its last glyph ends.
    pub x1: f64,
    /// The width of its first word and a space before it.
    pub lead: f64,
    /// It ends in a hyphen: the word goes on onto the next line.
    pub open: bool,
}

/// A blank band across the columns parts two rows when it is this many times the cells'
/// leading.
const ROW_GAP: f64 = 1.5;
/// A cell starts its row when its first baseline is within this many ems of the row's.
const SAME_ROW: f64 = 0.3;
/// Rows at least of a table without row gaps.
const MIN_GRID_ROWS: usize = 3;

/// A table without row gaps ([`grid`]).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Grid {
    /// The baselines at which its rows start, top down.
    pub tops: Vec<f64>,
    /// The lowest baseline of its last row's first line: the lines below it are not the table's.
    pub end: f64,
}

/// One line across the columns: its baselines' span and, in each column it has text in, its
/// first run's lead and its last run's end.
struct Line {
    y: f64,
    end: f64,
    cells: Vec<Option<Ends>>,
}

/// Where a line's text in one column starts and ends.
#[derive(Clone, Copy)]
struct Ends {
    lead: f64,
    x1: f64,
    open: bool,
}

/// The baselines at which the table's rows start, top down; `None` when `items` (the lines of
/// two or more columns, none crossing a gutter) are no table (see the module's doc).
pub(super) fn rows(items: &[Item]) -> Option<Vec<f64>> {
    let (lo, hi) = items.iter().fold((usize::MAX, 0), |(lo, hi), it| (lo.min(it.lo), hi.max(it.lo)));
    if lo >= hi {
        return None;
    }
    let leading = leading(items)?;
    let mut lines: Vec<f64> = items.iter().map(|it| it.y).collect();
    lines.sort_by(f64::total_cmp);
    let mut tops = vec![*lines.first()?];
    for w in lines.windows(2) {
        if w[1] - w[0] > ROW_GAP * leading {
            tops.push(w[1]);
        }
    }
    if tops.len() < 2 {
        return None;
    }
    let counts = cell_lines(items, &tops, lo, hi)?;
    let uneven = counts[..counts.len() - 1].iter().any(|row| row.iter().any(|&n| n != row[0]));
    let wrapped = counts.iter().flatten().any(|&n| n > 1);
    (wrapped && (tops.len() >= 3 || uneven)).then_some(tops)
}

/// The cells' leading: the most common distance between two successive lines of one column
/// (a row's gap, a superscript's offset or a footnote's tighter lines are rarer), to half a
/// point.
fn leading(items: &[Item]) -> Option<f64> {
    let mut lines: Vec<(usize, f64)> = items.iter().map(|it| (it.lo, it.y)).collect();
    lines.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let mut steps: Vec<i64> = lines
        .windows(2)
        .filter(|w| w[0].0 == w[1].0)
        .map(|w| ((w[1].1 - w[0].1) * 2.0).round() as i64)
        .filter(|&s| s > 0)
        .collect();
    steps.sort_unstable();
    let mode = steps.chunk_by(|a, b| a == b).max_by_key(|run| (run.len(), std::cmp::Reverse(run[0])))?;
    Some(mode[0] as f64 / 2.0)
}

/// The count of lines of each cell, row by row; `None` when a row does not start with a line in
/// every column.
fn cell_lines(items: &[Item], tops: &[f64], lo: usize, hi: usize) -> Option<Vec<Vec<usize>>> {
    let width = hi - lo + 1;
    let mut firsts: Vec<Option<f64>> = vec![None; tops.len() * width];
    let mut ys: Vec<Vec<f64>> = vec![Vec::new(); tops.len() * width];
    for it in items {
        let row = tops.partition_point(|&t| t <= it.y).saturating_sub(1);
        let cell = row * width + it.lo - lo;
        if (it.y - tops[row]).abs() <= SAME_ROW * it.size {
            firsts[cell] = Some(it.y);
        }
        ys[cell].push(it.y);
    }
    if firsts.iter().any(Option::is_none) {
        return None;
    }
    let counts: Vec<usize> = ys
        .into_iter()
        .map(|mut v| {
            v.sort_by(f64::total_cmp);
            v.dedup();
            v.len()
        })
        .collect();
    Some(counts.chunks(width).map(<[usize]>::to_vec).collect())
}

/// The first table without row gaps among `items` (the lines of two or more columns, none
/// crossing a gutter), top down; `None` when there is none (see the module's doc).
pub(super) fn grid(items: &[Item]) -> Option<Grid> {
    let (lo, hi) = items.iter().fold((usize::MAX, 0), |(lo, hi), it| (lo.min(it.lo), hi.max(it.lo)));
    if lo >= hi {
        return None;
    }
    let leading = leading(items)?;
    let mut right = vec![f64::NEG_INFINITY; hi - lo + 1];
    for it in items {
        right[it.lo - lo] = right[it.lo - lo].max(it.x1);
    }
    let lines = lines(items, lo, hi);
    let full = |l: &Line| l.cells.iter().all(Option::is_some);
    let mut rows: Vec<usize> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let gap = i > 0 && line.y - lines[i - 1].y > ROW_GAP * leading;
        if full(line) {
            rows.push(i);
            continue;
        }
        if !gap && !rows.is_empty() {
            continue; // a cell of the row above wrapped onto this line
        }
        if let Some(found) = table_of(&lines, &rows, &right) {
            return Some(found);
        }
        rows.clear();
    }
    table_of(&lines, &rows, &right)
}

/// The table whose rows start at `lines[rows]` (and whose wrapped cells lie between them),
/// when they are enough and some column's cells end where the text does (the module's doc).
fn table_of(lines: &[Line], rows: &[usize], right: &[f64]) -> Option<Grid> {
    if rows.len() < MIN_GRID_ROWS {
        return None;
    }
    let short_cells = (0..right.len()).any(|c| {
        let fits = rows
            .windows(2)
            .filter(|w| {
                // The cell's last line in column c, and the next row's first word there.
                let last = lines[w[0]..w[1]].iter().rev().find_map(|l| l.cells[c]);
                let next = lines[w[1]].cells[c];
                matches!((last, next), (Some(a), Some(b)) if !a.open && a.x1 + b.lead <= right[c])
            })
            .count();
        2 * fits > rows.len() - 1
    });
    let last = lines[*rows.last()?].end;
    short_cells.then(|| Grid { tops: rows.iter().map(|&r| lines[r].y).collect(), end: last })
}

/// `items`' lines across columns `lo..=hi`, top down: baselines within [`SAME_ROW`] ems of a
/// line's first are on it.
fn lines(items: &[Item], lo: usize, hi: usize) -> Vec<Line> {
    let mut sorted: Vec<&Item> = items.iter().collect();
    sorted.sort_by(|a, b| a.y.total_cmp(&b.y).then(a.run.cmp(&b.run)));
    let mut out: Vec<Line> = Vec::new();
    for it in sorted {
        let new_line = out.last().is_none_or(|l| it.y - l.y > SAME_ROW * it.size);
        if new_line {
            out.push(Line { y: it.y, end: it.y, cells: vec![None; hi - lo + 1] });
        }
        let Some(line) = out.last_mut() else { continue };
        line.end = it.y;
        let cell = &mut line.cells[it.lo - lo];
        *cell = Some(match *cell {
            // Runs of one cell's line: the leftmost one's lead, the rightmost one's end.
            Some(e) if it.x1 > e.x1 => Ends { lead: e.lead, x1: it.x1, open: it.open },
            Some(e) => Ends { lead: it.lead, ..e },
            None => Ends { lead: it.lead, x1: it.x1, open: it.open },
        });
    }
    out
}
