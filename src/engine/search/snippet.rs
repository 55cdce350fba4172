//! Snippets are cut from the file on disk at query time (the index does not
//! store text): the best line of the chunk by query-term matches, with a
//! little context, and the byte ranges of the matched terms. A line longer
//! than a snippet shows a window around its first match.

use super::types::Highlight;
use crate::engine::analysis::{terms, terms_with_offsets, terms_with_offsets_of_words};
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
    let finders = Finders::new(query);
    let mut lower = Vec::new();
    let mut best = (0usize, 0usize);
    let mut shown: Vec<ShownLine> = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        let s = show_line(line, &finders, query, &mut lower);
        if s.found.len() > best.1 {
            best = (i, s.found.len());
        }
        out.matched.extend(s.found.iter().cloned());
        shown.push(s);
    }
    let first = best.0.saturating_sub(CONTEXT_BEFORE as usize);
    let last = (best.0 + CONTEXT_AFTER as usize).min(lines.len() - 1);
    out.line_start = ls + first as u32;
    for (i, line) in shown.iter().enumerate().take(last + 1).skip(first) {
        if out.text.len() + line.text.len() > MAX_SNIPPET_BYTES && i > best.0 {
            break;
        }
        out.text.push_str(line.text);
        out.text.push('\n');
        let mut ranges: Vec<(usize, usize)> = line.hits.iter().map(|(_, s, e)| (*s, *e)).collect();
        ranges.sort_unstable();
        for (s, e) in merge(ranges) {
            out.highlights.push(Highlight { line: ls + i as u32, start: s, end: e, shown_from: line.from });
        }
    }
    out
}

/// One line as the snippet shows it: the whole line, or for a line longer than a snippet (a
/// minified bundle, a one-line JSON file) a window of it around its first match.
struct ShownLine<'a> {
    /// Byte in the file's line where `text` starts.
    from: usize,
    text: &'a str,
    /// Query terms matched in `text`, with their byte ranges in `text`.
    hits: Vec<(String, usize, usize)>,
    /// Query terms found anywhere in the line.
    found: HashSet<String>,
}

/// Cheap substring tests for the query terms. Stemming only rewrites a word's end (`happy` ->
/// `happi`), so a stem (less its last letter, when stemming may have written that letter) is a
/// prefix of the word: a line without one of those as a substring cannot match and skips the
/// analyzer.
struct Finders<'q> {
    each: Vec<(memchr::memmem::Finder<'q>, &'q str)>,
}

impl<'q> Finders<'q> {
    fn new(query: &'q HashSet<String>) -> Finders<'q> {
        let each = query
            .iter()
            .map(|t| {
                // Stemming leaves a stem's letters as the word has them but its last, which can be
                // an added `e` (`using` -> `use`: three letters too), an `i` for a `y` (`happy` ->
                // `happi`), the `l` of `-bility` (`visibility` -> `visibl`) or a `y` for `-ies`
                // (`skies` -> `sky`). Other stems (`socket`, `out`) are looked for whole: a
                // shorter needle (`ou`) passes most words of a line to the analyzer.
                let rewritable = matches!(t.as_bytes().last(), Some(b'e' | b'i' | b'l' | b'y'));
                let prefix = if t.len() >= 3 && t.is_ascii() && rewritable { &t[..t.len() - 1] } else { t.as_str() };
                (memchr::memmem::Finder::new(prefix.as_bytes()), t.as_str())
            })
            .collect();
        Finders { each }
    }

    fn any_in(&self, lower: &[u8]) -> bool {
        self.each.iter().any(|(f, _)| f.find(lower).is_some())
    }

    /// Whether the word `word` (with `lower` its bytes lower-cased) may hold a query term. A
    /// word with letters beyond ASCII is folded first, so it always may; a `snake_case` word is
    /// also a term without its underscores (`get_user` -> `getuser`).
    fn may_hold(&self, word: &str, lower: &[u8]) -> bool {
        if !word.is_ascii() || self.any_in(lower) {
            return true;
        }
        lower.contains(&b'_') && self.any_in(&lower.iter().copied().filter(|b| *b != b'_').collect::<Vec<u8>>())
    }
}

fn show_line<'a>(line: &'a str, finders: &Finders, query: &HashSet<String>, lower: &mut Vec<u8>) -> ShownLine<'a> {
    if line.len() > MAX_SNIPPET_BYTES {
        return long_line(line, finders, query, lower);
    }
    lower.clear();
    lower.extend(line.bytes().map(|b| b.to_ascii_lowercase()));
    let hits =
        if !line.is_ascii() || finders.any_in(lower) { matches_in(line, lower, finders, query) } else { Vec::new() };
    let found = hits.iter().map(|(t, _, _)| t.clone()).collect();
    ShownLine { from: 0, text: line, hits, found }
}

/// The query terms in `text` (`lower` is `text` lower-cased byte for byte) with their byte
/// ranges. Only the words that pass the substring test go through the analyzer: in a line with
/// one match, most words cannot match, and analyzing each (splitting, folding, stemming) was
/// the largest cost of a one-shot search's snippets.
fn matches_in(text: &str, lower: &[u8], finders: &Finders, query: &HashSet<String>) -> Vec<(String, usize, usize)> {
    terms_with_offsets_of_words(text, |s, e| finders.may_hold(&text[s..e], &lower[s..e]))
        .into_iter()
        .filter(|(t, _, _)| query.contains(t))
        .collect()
}

/// Bytes of a long line lower-cased and searched at a time.
const BLOCK_BYTES: usize = 1 << 16;
/// Candidates of one term checked with the analyzer before the term counts as absent (a short
/// stem such as `par` is a prefix of many words).
const CANDIDATES_PER_TERM: usize = 256;

/// A line longer than a snippet: analyzing all of it (an 8 MB minified file took 0.5 to 0.9 s
/// per hit) is replaced by a substring scan, a block at a time, with the analyzer run only
/// around candidates; the window shown starts a little before the first match.
fn long_line<'a>(line: &'a str, finders: &Finders, query: &HashSet<String>, lower: &mut Vec<u8>) -> ShownLine<'a> {
    let (first, mut found) = first_matches(line, finders, lower);
    let from = first.map_or(0, |at| window_start(line, at));
    let text = truncate_at_char(&line[from..], MAX_SNIPPET_BYTES);
    lower.clear();
    lower.extend(text.bytes().map(|b| b.to_ascii_lowercase()));
    let hits = matches_in(text, lower, finders, query);
    found.extend(hits.iter().map(|(t, _, _)| t.clone()));
    ShownLine { from, text, hits, found }
}

/// The earliest confirmed match of any query term in `line`, and every term confirmed.
fn first_matches(line: &str, finders: &Finders, lower: &mut Vec<u8>) -> (Option<usize>, HashSet<String>) {
    let bytes = line.as_bytes();
    let overlap = finders.each.iter().map(|(f, _)| f.needle().len()).max().unwrap_or(1).saturating_sub(1);
    let mut pending: Vec<(usize, usize)> = (0..finders.each.len()).map(|i| (i, 0)).collect();
    let (mut first, mut found) = (None::<usize>, HashSet::new());
    let mut start = 0;
    while start < bytes.len() && !pending.is_empty() {
        let end = (start + BLOCK_BYTES).min(bytes.len());
        lower.clear();
        lower.extend(bytes[start..(end + overlap).min(bytes.len())].iter().map(u8::to_ascii_lowercase));
        pending.retain_mut(|(i, tried)| {
            let (finder, term) = &finders.each[*i];
            for at in finder.find_iter(lower).map(|p| start + p).take_while(|p| *p < end) {
                if !may_end_as(bytes, at, term) {
                    continue;
                }
                *tried += 1;
                if let Some(pos) = confirm(line, at, term) {
                    first = Some(first.map_or(pos, |f| f.min(pos)));
                    found.insert(term.to_string());
                    return false;
                }
                if *tried >= CANDIDATES_PER_TERM {
                    return false;
                }
            }
            true
        });
        start = end;
    }
    (first, found)
}

/// Whether the word at `at`, which starts with all of `term` but its last letter, can have
/// `term` as its stem: the next letter is the term's last, or the stem may have rewritten it
/// (`happy` -> `happi`, `hoping` -> `hope`). `part` cannot stem to `pars`.
fn may_end_as(bytes: &[u8], at: usize, term: &str) -> bool {
    let t = term.as_bytes();
    if t.len() < 4 || !term.is_ascii() {
        return true;
    }
    let last = t[t.len() - 1];
    matches!(last, b'i' | b'e') || bytes.get(at + t.len() - 1).is_some_and(|b| b.to_ascii_lowercase() == last)
}

/// Where `term` starts in the words around byte `at` of `line`, if the analyzer finds it there.
fn confirm(line: &str, at: usize, term: &str) -> Option<usize> {
    const REACH: usize = 256;
    let word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_' || *b >= 0x80;
    let bytes = line.as_bytes();
    let back = bytes[at.saturating_sub(REACH)..at].iter().rev().take_while(|b| word(b)).count();
    let fwd = bytes[at..(at + REACH).min(bytes.len())].iter().take_while(|b| word(b)).count();
    let (mut a, mut b) = (at - back, at + fwd.max(1));
    while !line.is_char_boundary(a) {
        a += 1;
    }
    while b < line.len() && !line.is_char_boundary(b) {
        b += 1;
    }
    let b = b.min(line.len());
    terms_with_offsets(line.get(a..b)?).into_iter().find(|(t, _, _)| t == term).map(|(_, s, _)| a + s)
}

/// The start of the window shown around a match at byte `at`: a third of a snippet before it,
/// moved forward to the next blank when one is near, on a character boundary.
fn window_start(line: &str, at: usize) -> usize {
    let mut from = at.saturating_sub(MAX_SNIPPET_BYTES / 3);
    if from == 0 {
        return 0;
    }
    if let Some(blank) = line.as_bytes()[from..at].iter().take(40).position(|b| *b == b' ') {
        from += blank + 1;
    }
    while !line.is_char_boundary(from) {
        from += 1;
    }
    from
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
    fn analyzing_only_candidate_words_finds_what_analyzing_the_line_finds() {
        let lines = [
            "def get_user(self, name): return self.users[name]  # hoping for the happy path",
            "# Usually, a timeout using INTERNET_TIMEOUT should not mark a test as failed (use it)",
            "    let getUserName = HTTPServer2::new(config.retry_timeout, dying_lies);",
            "Über die Größe: a 测试b, naïve café_total résumé, the connection timed out",
            "configure configuration configured reconfigure; conf cfg CONFIG_PATH",
            "the visibility and ability of skies: early, only, ugly, gently; socket timed out (output)",
            "",
        ];
        let queries = [
            "get user",
            "getuser happy hoping",
            "use separate fd for ack reply",
            "username server",
            "ueber grösse cafe naive 测试",
            "connection timeout",
            "configure config",
            "path",
            "dying lie",
            "visible able ability visibility",
            "sky skies early only ugly gentle",
            "socket out outputs",
        ];
        for query in queries {
            let q: HashSet<String> = crate::engine::analysis::query_terms(query).into_iter().collect();
            let finders = Finders::new(&q);
            for line in lines {
                let lower: Vec<u8> = line.bytes().map(|b| b.to_ascii_lowercase()).collect();
                let all: Vec<_> = terms_with_offsets(line).into_iter().filter(|(t, _, _)| q.contains(t)).collect();
                assert_eq!(matches_in(line, &lower, &finders, &q), all, "{query:?} in {line:?}");
            }
        }
    }

    #[test]
    fn a_three_letter_stem_matches_the_word_it_came_from() {
        let q: HashSet<String> = crate::engine::analysis::terms("use").into_iter().collect();
        let s = snippet("x\nwe are using it\n", "a.txt", 1, 2, &q);
        assert_eq!(s.highlights, vec![Highlight { line: 2, start: 7, end: 12, shown_from: 0 }]);
    }

    #[test]
    fn stems_that_rewrite_the_word_end_still_match() {
        let q: HashSet<String> = crate::engine::analysis::terms("happy").into_iter().collect();
        let s = snippet("x\nso happy today\n", "a.txt", 1, 2, &q);
        assert_eq!(s.highlights, vec![Highlight { line: 2, start: 3, end: 8, shown_from: 0 }]);
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
            vec![
                Highlight { line: 4, start: 3, end: 8, shown_from: 0 },
                Highlight { line: 4, start: 9, end: 15, shown_from: 0 }
            ]
        );
        assert!(s.matched.contains("config"));
    }

    /// A match deep in a minified one-line file: the snippet is a window around it, with the
    /// highlight inside the window and `shown_from` saying where the window starts.
    #[test]
    fn a_long_line_shows_a_window_around_its_match() {
        let line = format!("var x=1;{} watermelonword end;", "alpha beta gamma ".repeat(20_000));
        let text = format!("{line}\nnext\n");
        let q: HashSet<String> = terms("watermelonword").into_iter().collect();
        let s = snippet(&text, "min.js", 1, 2, &q);
        assert!(s.text.len() <= MAX_SNIPPET_BYTES + 10, "{}", s.text.len());
        assert!(s.text.contains("watermelonword"), "{}", &s.text[..80]);
        let h = &s.highlights[..];
        assert_eq!(h.len(), 1, "{h:?}");
        let shown = s.text.lines().next().unwrap_or_default();
        assert_eq!(&shown[h[0].start..h[0].end], "watermelonword");
        assert_eq!(&line[h[0].shown_from + h[0].start..h[0].shown_from + h[0].end], "watermelonword");
        assert!(s.matched.contains("watermelonword"));
    }

    /// A term whose stem prefix is everywhere (`par` of `parse`) and a term absent from the
    /// line: both end in bounded time, the first found where it really is.
    #[test]
    fn a_long_line_with_common_prefixes_finds_the_real_word() {
        let line = format!("{} parse_config {}", "part partial parent ".repeat(5_000), "x".repeat(3000));
        let q: HashSet<String> = terms("parse zebrafish").into_iter().collect();
        let s = snippet(&line, "a.js", 1, 1, &q);
        let h = &s.highlights[..];
        assert_eq!(h.len(), 1, "{h:?}");
        let shown = s.text.lines().next().unwrap_or_default();
        assert_eq!(&shown[h[0].start..h[0].end], "parse");
        assert!(!s.matched.contains("zebrafish"));
    }

    /// A line just over a snippet whose match is in its first part keeps showing from its start.
    #[test]
    fn a_long_line_matched_early_shows_from_its_start() {
        let line = format!("fn parse_config() {{ {} }}", "y ".repeat(600));
        let q: HashSet<String> = terms("config").into_iter().collect();
        let s = snippet(&line, "a.rs", 1, 1, &q);
        assert!(s.text.starts_with("fn parse_config"));
        assert_eq!(s.highlights.first().map(|h| (h.start, h.shown_from)), Some((9, 0)));
    }
}
