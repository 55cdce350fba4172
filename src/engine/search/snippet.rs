//! Snippets are cut from the file on disk at query time (the index does not
//! store text): the best line of the chunk by query-term matches, with a
//! little context, and the byte ranges of the matched terms.

use super::types::Highlight;
use crate::engine::analysis::{terms, terms_with_offsets};
use std::collections::HashSet;

/// Longest snippet returned, in bytes (spec 002: about 900 characters).
const MAX_SNIPPET_BYTES: usize = 900;
/// Lines of context before and after the best line.
const CONTEXT_BEFORE: u32 = 1;
const CONTEXT_AFTER: u32 = 3;

/// What the snippet step learns about one hit.
#[derive(Debug, Default)]
pub struct SnippetOut {
    /// First line of the snippet.
    pub line_start: u32,
    /// The snippet text.
    pub text: String,
    /// Matched terms inside the snippet.
    pub highlights: Vec<Highlight>,
    /// Query terms present anywhere in the chunk (or its path).
    pub matched: HashSet<String>,
}

/// Builds the snippet for lines `ls..=le` of `file_text`.
pub fn snippet(file_text: &str, path: &str, ls: u32, le: u32, query: &HashSet<String>) -> SnippetOut {
    let mut out = SnippetOut { line_start: ls, ..Default::default() };
    for t in terms(path) {
        if query.contains(&t) {
            out.matched.insert(t);
        }
    }
    let lines: Vec<&str> = super::from_line(file_text, ls).lines().take((le + 1 - ls.min(le + 1)) as usize).collect();
    if lines.is_empty() {
        return out;
    }
    // Score each line by distinct matched terms; remember matches for highlighting. Stemming
    // only rewrites a word's end (`happy` -> `happi`), so a stem less its last letter is a
    // prefix of the word: a line without one of those as a substring cannot match and skips
    // the analyzer.
    let finders: Vec<memchr::memmem::Finder> = query
        .iter()
        .map(|t| if t.len() >= 4 && t.is_ascii() { &t[..t.len() - 1] } else { t.as_str() })
        .map(|t| memchr::memmem::Finder::new(t.as_bytes()))
        .collect();
    let mut lower = Vec::new();
    let mut best = (0usize, 0usize);
    let mut per_line: Vec<Vec<(String, usize, usize)>> = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        lower.clear();
        lower.extend(line.bytes().map(|b| b.to_ascii_lowercase()));
        let maybe = !line.is_ascii() || finders.iter().any(|f| f.find(&lower).is_some());
        let hits: Vec<(String, usize, usize)> = if maybe {
            terms_with_offsets(line).into_iter().filter(|(t, _, _)| query.contains(t)).collect()
        } else {
            Vec::new()
        };
        let distinct: HashSet<&str> = hits.iter().map(|(t, _, _)| t.as_str()).collect();
        if distinct.len() > best.1 {
            best = (i, distinct.len());
        }
        for (t, _, _) in &hits {
            out.matched.insert(t.clone());
        }
        per_line.push(hits);
    }
    let first = best.0.saturating_sub(CONTEXT_BEFORE as usize);
    let last = (best.0 + CONTEXT_AFTER as usize).min(lines.len() - 1);
    out.line_start = ls + first as u32;
    for i in first..=last {
        let line = lines[i];
        if out.text.len() + line.len() > MAX_SNIPPET_BYTES && i > best.0 {
            break;
        }
        let offset = out.text.len();
        let kept = truncate_at_char(line, MAX_SNIPPET_BYTES);
        out.text.push_str(kept);
        out.text.push('\n');
        let _ = offset;
        let mut ranges: Vec<(usize, usize)> =
            per_line[i].iter().map(|(_, s, e)| (*s, *e)).filter(|(_, e)| *e <= kept.len()).collect();
        ranges.sort_unstable();
        for (s, e) in merge(ranges) {
            out.highlights.push(Highlight { line: ls + i as u32, start: s, end: e });
        }
    }
    out
}

fn truncate_at_char(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Merges overlapping ranges (a whole identifier and its parts overlap).
fn merge(sorted: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(sorted.len());
    for (s, e) in sorted {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems_that_rewrite_the_word_end_still_match() {
        let q: HashSet<String> = crate::engine::analysis::terms("happy").into_iter().collect();
        let s = snippet("x\nso happy today\n", "a.txt", 1, 2, &q);
        assert_eq!(s.highlights, vec![Highlight { line: 2, start: 3, end: 8 }]);
    }

    #[test]
    fn picks_best_line_and_marks_terms() {
        let text = "fn a() {}\nfn b() {}\n// nothing here\nfn parse_config(path) {\n    read(path)\n}\n";
        let q: HashSet<String> = ["pars", "config"].iter().map(|s| s.to_string()).collect();
        let s = snippet(text, "src/lib.rs", 1, 6, &q);
        assert_eq!(s.line_start, 3);
        assert!(s.text.starts_with("// nothing here\nfn parse_config"));
        assert_eq!(
            s.highlights,
            vec![Highlight { line: 4, start: 3, end: 8 }, Highlight { line: 4, start: 9, end: 15 }]
        );
        assert!(s.matched.contains("config"));
    }
}
