//! Bounded excerpts for chat and context packs. A search hit whose chunk is one long line
//! (minified code, a one-line JSON file) fits no budget whole, and cutting it by lines leaves
//! nothing, so the one file that answered was dropped. Its excerpt is a window of at most
//! [`MAX_EXCERPT_BYTES`] around the rarest of the question's terms in it (the start of the
//! range when none is there), which any budget can hold.

use memchr::memmem;

/// Bytes an excerpt takes from a long line at most (about a search snippet's ~900 characters).
pub const MAX_EXCERPT_BYTES: usize = 900;
/// Bytes of the window before the match, so the excerpt shows what leads to it.
const LEAD_BYTES: usize = 300;

/// A window of a file's text: the lines it spans (1-based) and the text, `…` marking where it
/// starts or ends inside a line.
#[derive(Debug, Clone, PartialEq)]
pub struct Excerpt {
    /// First line of the window.
    pub line_start: u32,
    /// Last line of the window.
    pub line_end: u32,
    /// The window's text.
    pub text: String,
    /// True when the window cut a line (it starts or ends inside one).
    pub cut: bool,
}

/// Whether `text` holds a line longer than an excerpt: cutting it by lines cannot shorten it.
pub fn has_long_line(text: &str) -> bool {
    text.len() > MAX_EXCERPT_BYTES && text.split('\n').any(|l| l.len() > MAX_EXCERPT_BYTES)
}

/// The excerpt of lines `a..=b` (1-based, clamped) of `lines` around the rarest of `terms`
/// (lowercased query terms, matched case-insensitively as substrings: a stemmed term matches its
/// word), or `None` when the range is empty. A matching line short enough is taken whole, with
/// its neighbours while the excerpt stays within [`MAX_EXCERPT_BYTES`].
pub fn excerpt(lines: &[String], a: u32, b: u32, terms: &[String]) -> Option<Excerpt> {
    let a = a.max(1);
    let b = b.min(lines.len() as u32);
    if a > b {
        return None;
    }
    let range = &lines[(a - 1) as usize..b as usize];
    let (idx, pos) = rarest_match(range, terms).unwrap_or((0, 0));
    let line = &range[idx];
    if line.len() > MAX_EXCERPT_BYTES {
        let (start, end) = long_cut(line, pos);
        let n = a + idx as u32;
        return Some(Excerpt { line_start: n, line_end: n, text: marked(line, start, end), cut: true });
    }
    let lens: Vec<usize> = range.iter().map(String::len).collect();
    let (first, last) = around(&lens, idx);
    Some(Excerpt {
        line_start: a + first as u32,
        line_end: a + last as u32,
        text: range[first..=last].join("\n"),
        cut: false,
    })
}

/// Where the excerpt of a line longer than [`MAX_EXCERPT_BYTES`] starts and ends (bytes, on char
/// boundaries): from [`LEAD_BYTES`] before `pos` (the match), at most [`MAX_EXCERPT_BYTES`] long,
/// moved back to end at the line's end. `line` may be a window of the whole line (what a reader
/// that never holds the line read of it), `pos` counted in it.
pub fn long_cut(line: &str, pos: usize) -> (usize, usize) {
    let from = pos.saturating_sub(LEAD_BYTES).min(line.len().saturating_sub(MAX_EXCERPT_BYTES));
    let start = floor_boundary(line, from);
    (start, floor_boundary(line, start + MAX_EXCERPT_BYTES))
}

/// The bytes [`long_cut`] takes of a line of `line_len` bytes around `pos` (char boundaries
/// aside): what a reader must fetch of a line it does not hold.
pub fn long_span(line_len: usize, pos: usize) -> (usize, usize) {
    let start = pos.saturating_sub(LEAD_BYTES).min(line_len.saturating_sub(MAX_EXCERPT_BYTES));
    (start, (start + MAX_EXCERPT_BYTES).min(line_len))
}

/// `line[start..end]` with `…` where it cuts the line.
pub fn marked(line: &str, start: usize, end: usize) -> String {
    let lead = if start > 0 { "…" } else { "" };
    let tail = if end < line.len() { "…" } else { "" };
    format!("{lead}{}{tail}", &line[start..end])
}

/// The lines (indexes into `lens`, the lengths of a range's lines) an excerpt of short lines
/// takes around line `idx`: its neighbours below and above, one at a time, while the text
/// (newlines included) stays within [`MAX_EXCERPT_BYTES`].
pub fn around(lens: &[usize], idx: usize) -> (usize, usize) {
    let (mut first, mut last, mut len) = (idx, idx, lens[idx]);
    loop {
        let before = len;
        if last + 1 < lens.len() && len + 1 + lens[last + 1] <= MAX_EXCERPT_BYTES {
            last += 1;
            len += 1 + lens[last];
        }
        if first > 0 && len + 1 + lens[first - 1] <= MAX_EXCERPT_BYTES {
            first -= 1;
            len += 1 + lens[first];
        }
        if len == before {
            break;
        }
    }
    (first, last)
}

/// Of terms found `counts` times, first at `at`, the one to centre an excerpt on: the term
/// found least often (the longer on a tie), as [`excerpt`] picks it. Each entry is (count,
/// term length, where); a term never found is left out by the caller.
pub fn rarest<T: Copy>(found: impl IntoIterator<Item = (usize, usize, T)>) -> Option<T> {
    let mut best: Option<(usize, usize, T)> = None;
    for (count, len, at) in found {
        if best.is_none_or(|(c, l, _)| count < c || (count == c && len > l)) {
            best = Some((count, len, at));
        }
    }
    best.map(|(_, _, at)| at)
}

/// (line index, byte offset) of the first occurrence of the term found least often in the
/// range (the longer on a tie): a word the question shares with every line says nothing of
/// where the answer is.
pub fn rarest_match(range: &[String], terms: &[String]) -> Option<(usize, usize)> {
    let lowered: Vec<String> = range.iter().map(|l| l.to_ascii_lowercase()).collect();
    let found = terms.iter().filter(|t| !t.is_empty()).filter_map(|term| {
        let finder = memmem::Finder::new(term.as_bytes());
        let mut count = 0;
        let mut first = None;
        for (i, l) in lowered.iter().enumerate() {
            for pos in finder.find_iter(l.as_bytes()) {
                count += 1;
                first.get_or_insert((i, pos));
            }
        }
        first.map(|at| (count, term.len(), at))
    });
    rarest(found)
}

/// The largest char boundary of `s` at or below `i`.
pub(crate) fn floor_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn a_long_line_is_cut_around_its_rarest_term() {
        let json = format!(
            "{{\"items\": [{}, {{\"secret_field\": \"persimmonword2\"}}]}}",
            (0..3000).map(|i| format!("{{\"id\": {i}, \"item\": \"n{i}\"}}")).collect::<Vec<_>>().join(",")
        );
        let terms = ["item".to_string(), "persimmonword".to_string(), "2".to_string()];
        let e = excerpt(&lines(&json), 1, 1, &terms).expect("excerpt");
        assert!(e.text.contains("persimmonword2"), "{}", e.text);
        assert!(e.text.len() <= MAX_EXCERPT_BYTES + 2 * '…'.len_utf8(), "{}", e.text.len());
        assert!(e.text.starts_with('…') && e.cut && (e.line_start, e.line_end) == (1, 1));
        // No term there: the start of the line, still bounded.
        let e = excerpt(&lines(&json), 1, 1, &["zzz".to_string()]).expect("excerpt");
        assert!(e.text.starts_with("{\"items\"") && e.text.ends_with('…') && e.text.len() < 1000);
    }

    #[test]
    fn multibyte_text_is_cut_on_char_boundaries_and_short_lines_keep_their_neighbours() {
        let line = "é".repeat(2000) + "needle" + &"ü".repeat(2000);
        let e = excerpt(&[line], 1, 1, &["needle".to_string()]).expect("excerpt");
        assert!(e.text.contains("needle"));
        let text = "one\ntwo\nthree needle\nfour\nfive";
        let e = excerpt(&lines(text), 2, 5, &["needle".to_string()]).expect("excerpt");
        assert_eq!((e.line_start, e.line_end, e.text.as_str(), e.cut), (2, 5, "two\nthree needle\nfour\nfive", false));
        assert!(excerpt(&lines(text), 7, 9, &[]).is_none());
        assert!(has_long_line(&"x".repeat(1000)) && !has_long_line(&"x\n".repeat(1000)));
    }
}
