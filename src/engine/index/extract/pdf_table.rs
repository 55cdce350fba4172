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
}

/// A blank band across the columns parts two rows when it is this many times the cells'
/// leading.
const ROW_GAP: f64 = 1.5;
/// A cell starts its row when its first baseline is within this many ems of the row's.
const SAME_ROW: f64 = 0.3;

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
