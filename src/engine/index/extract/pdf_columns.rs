//! The reading order of a PDF page set in columns: its column gutters, found from where its
//! runs of text start and end, whatever order the page draws them in and whatever their
//! baselines; then the page read top down, a block that spans the gutters (a title, a figure's
//! caption, an abstract) where it stands, and the column lines between two such blocks column
//! by column, the left one first.
//!
//! A gutter is a vertical band no run crosses but a few (the full-width blocks), at whose right
//! edge at least [`MIN_COLUMN_LINES`] runs start, left of which at least as many end, the runs
//! on both sides averaging [`MIN_COLUMN_RUN_CHARS`] characters: column lines are text. A table's
//! short cells make no gutter, so its rows stay rows (read as drawn, a cell after a wide gap
//! after a space); a table whose cells on both sides of a gap are long makes one, and is told
//! from columns by its rows ([`super::pdf_table`]), read row by row, each cell whole (a row of
//! one-line cells on one line, its cells a space apart).
//!
//! A block crossing some of the gutters but not all (a caption over two columns of three) is
//! read within the columns it spans: the columns are cut into the narrowest groups no run
//! crosses out of, read left to right, and within a group the blocks spanning it stand where
//! they are, as full-width blocks do on the page.

use super::pdf_table::{self, Item};

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

/// A stretch of the reading order read as one: a column's lines between two blocks, a block
/// crossing a gutter, a table's cell.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Leaf {
    id: usize,
    spanning: bool,
    row: Option<Cell>,
}

/// Where a table's cell is: which table, which row; whether its row is one line (its cells a
/// space apart) and whether its table's rows have no gaps between them (a break apart, not a
/// blank line).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Cell {
    table: usize,
    row: usize,
    inline: bool,
    grid: bool,
}

/// The page's text read in `gutters`' columns (see the module's doc).
pub(super) fn read(runs: &[Run], gutters: &[Gutter]) -> String {
    let mids: Vec<f64> = gutters.iter().map(Gutter::mid).collect();
    let line_y = line_ys(runs);
    let items: Vec<Item> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let lo = mids.iter().filter(|&&m| r.x >= m).count();
            let hi = mids.iter().filter(|&&m| r.x1 > m).count().max(lo);
            let open = r.text.ends_with('-');
            Item { run: i, lo, hi, y: line_y[i], size: r.size, x1: r.x1, lead: lead(r), open }
        })
        .collect();
    let mut order = Order { read: Vec::with_capacity(runs.len()), leaves: 0, tables: 0 };
    order.region(items, 0, mids.len());
    let mut out = String::new();
    let mut prev: Option<(Leaf, Item)> = None;
    for &(leaf, item) in &order.read {
        if let Some(before) = prev {
            out.push_str(separator(runs, before, (leaf, item)));
        }
        out.push_str(&runs[item.run].text);
        prev = Some((leaf, item));
    }
    out
}

/// The reading order being built, region by region.
struct Order {
    read: Vec<(Leaf, Item)>,
    leaves: usize,
    tables: usize,
}

impl Order {
    /// Reads the runs of columns `lo..=hi` (none crossing out of them): the blocks spanning
    /// them all where they stand, with the column lines between two such blocks read group by
    /// group (columns no narrower block joins), each group the same way; a table's rows row by
    /// row; a column top down.
    fn region(&mut self, items: Vec<Item>, lo: usize, hi: usize) {
        if items.is_empty() {
            return;
        }
        if lo < hi && items.iter().any(|it| it.lo == lo && it.hi == hi) {
            return self.split(items, lo, hi, |it| it.lo == lo && it.hi == hi);
        }
        if lo < hi && items.iter().all(|it| it.lo == it.hi) {
            if let Some(tops) = pdf_table::rows(&items) {
                return self.table(items, lo, hi, &tops, false);
            }
            if let Some(grid) = pdf_table::grid(&items) {
                return self.grid(items, lo, hi, grid);
            }
        }
        let groups = groups(&items, lo, hi);
        if groups.len() > 1 {
            let mut inside: Vec<Vec<Item>> = vec![Vec::new(); groups.len()];
            for it in items {
                inside[groups.partition_point(|&(_, ghi)| ghi < it.lo)].push(it);
            }
            for ((glo, ghi), part) in groups.into_iter().zip(inside) {
                self.region(part, glo, ghi);
            }
        } else if lo == hi {
            self.leaf(items, false, None);
        } else {
            // Blocks over overlapping sets of columns, none over all: each splits them all.
            self.split(items, lo, hi, |it| it.lo < it.hi);
        }
    }

    /// Reads the `splits` blocks where they stand and the runs between two of them as regions
    /// of columns `lo..=hi`.
    fn split(&mut self, items: Vec<Item>, lo: usize, hi: usize, splits: impl Fn(&Item) -> bool) {
        let (mut blocks, rest): (Vec<Item>, Vec<Item>) = items.into_iter().partition(|it| splits(it));
        blocks.sort_by(|a, b| a.y.total_cmp(&b.y).then(a.run.cmp(&b.run)));
        let ys: Vec<f64> = blocks.iter().map(|b| b.y).collect();
        let mut between: Vec<Vec<Item>> = vec![Vec::new(); blocks.len() + 1];
        for it in rest {
            between[ys.partition_point(|&y| y < it.y)].push(it);
        }
        for (k, part) in between.into_iter().enumerate() {
            self.region(part, lo, hi);
            if let Some(&block) = blocks.get(k) {
                self.leaf(vec![block], true, None);
            }
        }
    }

    /// Reads the column lines above a table without row gaps as a region, the table row by
    /// row, and the lines below it as a region (which may hold another).
    fn grid(&mut self, items: Vec<Item>, lo: usize, hi: usize, grid: pdf_table::Grid) {
        let first = grid.tops.first().copied().unwrap_or(f64::NEG_INFINITY);
        let (mut above, mut table, mut below) = (Vec::new(), Vec::new(), Vec::new());
        for it in items {
            match it.y {
                y if y < first => above.push(it),
                y if y <= grid.end => table.push(it),
                _ => below.push(it),
            }
        }
        self.region(above, lo, hi);
        self.table(table, lo, hi, &grid.tops, true);
        self.region(below, lo, hi);
    }

    /// Reads a table of columns `lo..=hi` whose rows start at `tops`: row by row, each cell
    /// (a column's lines in the row) whole, left to right. In a table without row gaps
    /// (`grid`), rows are a break apart and a row of one-line cells is one line.
    fn table(&mut self, items: Vec<Item>, lo: usize, hi: usize, tops: &[f64], grid: bool) {
        let table = self.tables;
        self.tables += 1;
        let width = hi - lo + 1;
        let mut cells: Vec<Vec<Item>> = vec![Vec::new(); tops.len() * width];
        let mut inline = vec![grid; tops.len()];
        for it in items {
            let row = tops.partition_point(|&t| t <= it.y).saturating_sub(1);
            inline[row] &= it.y - tops[row] <= SAME_LINE * it.size;
            cells[row * width + it.lo - lo].push(it);
        }
        for (k, cell) in cells.into_iter().enumerate() {
            let row = k / width;
            self.leaf(cell, false, Some(Cell { table, row, inline: inline[row], grid }));
        }
    }

    /// One stretch read top down (by baseline, then as drawn).
    fn leaf(&mut self, mut items: Vec<Item>, spanning: bool, row: Option<Cell>) {
        if items.is_empty() {
            return;
        }
        items.sort_by(|a, b| a.y.total_cmp(&b.y).then(a.run.cmp(&b.run)));
        let leaf = Leaf { id: self.leaves, spanning, row };
        self.leaves += 1;
        self.read.extend(items.into_iter().map(|it| (leaf, it)));
    }
}

/// Columns `lo..=hi` cut into the narrowest groups that no run crosses out of, left to right.
fn groups(items: &[Item], lo: usize, hi: usize) -> Vec<(usize, usize)> {
    // How many runs lie in both column c and c + 1, by differences: linear in runs and columns.
    let mut joins = vec![0i64; hi - lo + 1];
    for it in items.iter().filter(|it| it.lo < it.hi) {
        joins[it.lo - lo] += 1;
        joins[it.hi - lo] -= 1;
    }
    let mut out = Vec::new();
    let (mut start, mut across) = (lo, 0i64);
    for c in lo..hi {
        across += joins[c - lo];
        if across == 0 {
            out.push((start, c));
            start = c + 1;
        }
    }
    out.push((start, hi));
    out
}

/// What goes between two runs read one after the other: a space on one line, a blank line
/// between a block crossing a gutter and column lines, between a table's rows, or where the
/// text skips a line; else a break.
fn separator(runs: &[Run], (a, first): (Leaf, Item), (b, second): (Leaf, Item)) -> &'static str {
    let (before, run) = (&runs[first.run], &runs[second.run]);
    if a.id == b.id {
        if first.y == second.y && run.x >= before.x1 - 1.0 {
            return " ";
        }
    } else if a.spanning != b.spanning {
        return "\n\n";
    } else if let (Some(x), Some(y)) = (a.row, b.row) {
        return match (x.table == y.table, x.row == y.row) {
            (true, true) if x.inline => " ",
            (true, false) if !x.grid => "\n\n",
            _ => "\n",
        };
    } else if !a.spanning {
        return "\n";
    }
    if second.y - first.y > 1.5 * run.size.max(before.size) {
        "\n\n"
    } else {
        "\n"
    }
}

/// The width of a run's first word and of a space before it (a third of an em): what the
/// run's line would have needed to hold that word.
fn lead(r: &Run) -> f64 {
    let chars = r.text.chars().count().max(1) as f64;
    let word = r.text.split_whitespace().next().map_or(0, |w| w.chars().count()) as f64;
    (r.x1 - r.x) * word / chars + r.size / 3.0
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

    /// Two columns of prose whose paragraphs break at the same baseline, a line of space
    /// between paragraphs, are no table: each column is still read whole, the left one first.
    #[test]
    fn prose_columns_breaking_together_are_read_column_by_column() {
        let mut runs = Vec::new();
        for i in 0..9 {
            if i == 4 {
                continue;
            }
            let y = 72.0 + 12.0 * i as f64;
            runs.push(run(72.0, y, &format!("left column of prose, line {i}")));
            runs.push(run(320.0, y, &format!("right column of prose, line {i}")));
        }
        let g = gutters(&runs).expect("two columns");
        let text = read(&runs, &g);
        let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
        assert!(lines[..8].iter().all(|l| l.starts_with("left")), "{text}");
        assert!(lines[8..].iter().all(|l| l.starts_with("right")), "{text}");
    }

    /// `text` broken into lines of at most `width` characters where the next word does not fit,
    /// as prose is set ragged right.
    fn wrap(text: &str, width: usize) -> Vec<String> {
        let mut lines: Vec<String> = vec![String::new()];
        for word in text.split_whitespace() {
            let line = lines.last_mut().expect("a line");
            if !line.is_empty() && line.len() + 1 + word.len() > width {
                lines.push(word.to_string());
            } else {
                if !line.is_empty() {
                    line.push(' ');
                }
                line.push_str(word);
            }
        }
        lines
    }

    /// Two ragged-right columns of prose whose lines share baselines, evenly spaced with no gap,
    /// a short paragraph's end in each, are no table without row gaps: a line ends where the
    /// next word would not have fitted, but at a paragraph's end.
    #[test]
    fn ragged_prose_columns_on_one_baseline_grid_are_read_column_by_column() {
        let para = |w: &str| {
            format!("{w} pangolins sleep in burrows by day and come out at dusk to eat ants and termites, which they find by smell")
        };
        let mut left = wrap(&para("Wild"), 36);
        left.extend(wrap(&para("Tame"), 36));
        let mut right = wrap(&para("Old"), 36);
        right.extend(wrap(&para("Young"), 36));
        let n = left.len().min(right.len());
        let mut runs = Vec::new();
        for i in 0..n {
            let y = 72.0 + 12.0 * i as f64;
            runs.push(run(72.0, y, &left[i]));
            runs.push(run(320.0, y, &right[i]));
        }
        let g = gutters(&runs).expect("two columns");
        let expected: Vec<&str> = left[..n].iter().chain(&right[..n]).map(String::as_str).collect();
        assert_eq!(read(&runs, &g).lines().collect::<Vec<_>>(), expected);
    }

    /// Three columns of one-line cells, evenly spaced with no row gaps, the middle one's cells
    /// ending where their text does: read row by row, each row on one line.
    #[test]
    fn a_table_of_one_line_cells_in_three_columns_is_read_row_by_row() {
        let rows = [
            ["the name of the animal kept", "what the keepers feed it at dusk", "where it sleeps in the day"],
            ["a pangolin from the south", "ants and termites", "a burrow of oak leaves here"],
            ["an aardvark from the plains", "termites", "a burrow in the sandy yard"],
            ["a tamandua from the forest", "ants, fruit and eggs", "a hollow log in the house"],
        ];
        let mut runs = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            for (c, cell) in row.iter().enumerate() {
                runs.push(run(72.0 + 180.0 * c as f64, 72.0 + 12.0 * i as f64, cell));
            }
        }
        let g = gutters(&runs).expect("a gutter between each column");
        assert_eq!(g.len(), 2, "{g:?}");
        let expected: Vec<String> = rows.iter().map(|r| r.join(" ")).collect();
        assert_eq!(read(&runs, &g).lines().collect::<Vec<_>>(), expected);
    }
}
