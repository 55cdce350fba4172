//! Statements and what they claim, for `audit conflicts`: documentation text cut into
//! statements (sentences, list items, table rows) with their lines, each reduced to a
//! *shape* (its words with the values masked and negation taken out) and the values it states,
//! each value keyed by the words just before it (`read timeout` in "the read timeout is 30
//! seconds"). Two statements of the same shape that give one key different values, or where
//! only one is negated, disagree.

use std::collections::{BTreeMap, BTreeSet};

/// What kind of value a claim states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ValueKind {
    /// A number, with its unit folded in (durations in seconds, sizes in bytes).
    Number,
    /// A version (`1.2`, `v3.0.1`).
    Version,
    /// An on/off word (`enabled`, `true`, `required`), negation applied.
    Flag,
    /// The word a `default` names (`defaults to lz4`).
    Word,
}

/// One statement.
#[derive(Debug, Clone)]
pub struct Statement {
    /// First line (1-based) of the file.
    pub line_start: u32,
    /// Last line.
    pub line_end: u32,
    /// The statement's text, whitespace collapsed.
    pub text: String,
    /// Its words with values masked (`#num`, `#ver`, `#flag`) and negation words removed.
    pub shape: BTreeSet<String>,
    /// Values by key: the one or two content words before the value.
    pub values: BTreeMap<String, (ValueKind, BTreeSet<String>)>,
    /// Says `not`, `never`, `cannot`, ... (after antonym folding: "not required" is "optional").
    pub negated: bool,
    /// Mentions a default.
    pub default: bool,
    /// Speaks of the past or of a change ("was", "previously", "deprecated", "since",
    /// "changed from 3 to 5", "in 5.2 the default is ..."), or is a per-version list item
    /// ("- 5.2.1: ..."): a different value there is history, not a contradiction.
    pub historical: bool,
    /// Opens with "Example", "For example", "For instance" or "E.g.": one case among several a
    /// document shows side by side (fastify's redirect examples with and without a status
    /// call), whose differences are the point, not a contradiction.
    pub example: bool,
}

const STOP: &[&str] = &[
    "a",
    "an",
    "the",
    "is",
    "are",
    "be",
    "to",
    "of",
    "in",
    "on",
    "at",
    "for",
    "by",
    "with",
    "and",
    "or",
    "it",
    "its",
    "this",
    "that",
    "these",
    "those",
    "as",
    "from",
    "into",
    "after",
    "every",
    "each",
    "per",
    "than",
    "then",
    "set",
    "value",
    "will",
    "can",
    "may",
    "should",
    "must",
    "you",
    "your",
    "we",
    "our",
    "has",
    "have",
    "which",
    "when",
    "if",
    "up",
    "all",
    "any",
    "also",
    "only",
    "default",
    "defaults",
    "defaulted",
];
const NEGATIONS: &[&str] = &[
    "not",
    "no",
    "never",
    "cannot",
    "can't",
    "don't",
    "doesn't",
    "isn't",
    "aren't",
    "won't",
    "shouldn't",
    "mustn't",
    "didn't",
    "wasn't",
    "none",
    "nothing",
    "neither",
    "nor",
    "without",
];
const HISTORY: &[&str] = &[
    "was",
    "were",
    "previously",
    "formerly",
    "deprecated",
    "until",
    "since",
    "before",
    "used",
    "older",
    "earlier",
    "changed",
    "now",
    "legacy",
    // A change between versions: "raised from 3 to 5 in 5.2", "renamed in 4.0", ".. versionchanged:: 5.2".
    "introduced",
    "added",
    "removed",
    "renamed",
    "replaced",
    "increased",
    "decreased",
    "reduced",
    "raised",
    "lowered",
    "bumped",
    "became",
    "upgrade",
    "upgraded",
    "upgrading",
    "versionadded",
    "versionchanged",
];
/// Words that put a version or year right after them in the past or at a change ("in 5.2",
/// "since 4.0", "as of 2019", "until version 3"): the statement describes a release, not the
/// project as it is.
const AT_VERSION: &[&str] = &["in", "since", "from", "until", "after", "before", "starting"];
/// Flags and their opposites.
const FLAGS: &[(&str, &str)] = &[
    ("enabled", "disabled"),
    ("enable", "disable"),
    ("true", "false"),
    ("on", "off"),
    ("yes", "no"),
    ("required", "optional"),
    ("supported", "unsupported"),
    ("allowed", "forbidden"),
    ("mandatory", "optional"),
    ("synchronous", "asynchronous"),
    ("sync", "async"),
];

fn flag(word: &str) -> Option<(&'static str, bool)> {
    FLAGS.iter().find_map(|(on, off)| {
        if word == *on {
            Some((*on, true))
        } else if word == *off {
            Some((*on, false))
        } else {
            None
        }
    })
}

/// A unit after (or glued to) a number, as a factor to seconds or bytes and the dimension.
fn unit(u: &str) -> Option<(f64, &'static str)> {
    Some(match u {
        "ms" | "millisecond" | "milliseconds" => (0.001, "s"),
        "s" | "sec" | "secs" | "second" | "seconds" => (1.0, "s"),
        "m" | "min" | "mins" | "minute" | "minutes" => (60.0, "s"),
        "h" | "hr" | "hrs" | "hour" | "hours" => (3600.0, "s"),
        "d" | "day" | "days" => (86_400.0, "s"),
        "w" | "week" | "weeks" => (604_800.0, "s"),
        "b" | "byte" | "bytes" => (1.0, "B"),
        "kb" | "kib" | "k" => (1024.0, "B"),
        "mb" | "mib" => (1_048_576.0, "B"),
        "gb" | "gib" => (1_073_741_824.0, "B"),
        "%" | "percent" => (1.0, "%"),
        _ => return None,
    })
}

/// Number words a statement may use instead of digits.
fn number_word(w: &str) -> Option<f64> {
    let n = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "twelve"];
    n.iter().position(|x| *x == w).map(|i| if i == 11 { 12.0 } else { i as f64 })
}

/// A token as a value: a version, or a number (with the unit glued to it).
fn value_of(tok: &str) -> Option<(ValueKind, String, Option<&str>)> {
    let t = tok.strip_prefix('v').filter(|r| r.starts_with(|c: char| c.is_ascii_digit())).unwrap_or(tok);
    if !t.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let digits_end = t.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ',')).unwrap_or(t.len());
    let (num, rest) = t.split_at(digits_end);
    let num = num.trim_end_matches(['.', ',']);
    let dots = num.matches('.').count();
    if dots >= 2 || (tok.starts_with('v') && dots == 1) {
        return Some((ValueKind::Version, num.to_string(), None));
    }
    let rest = (!rest.is_empty()).then_some(rest);
    if rest.is_some_and(|r| unit(r).is_none()) {
        return None; // `2x`, `sha256`, `h2`: not a quantity
    }
    Some((ValueKind::Number, num.replace(',', ""), rest))
}

/// A number with its unit folded in (`2 minutes` is `120s`); without a unit, as written:
/// `3.10` is not `3.1` (a Python version), so it is never read as a float.
fn normalized(num: &str, unit_word: Option<&str>) -> String {
    let Some((factor, dim)) = unit_word.and_then(unit) else { return num.to_string() };
    match num.parse::<f64>() {
        Ok(x) => format!("{}{dim}", x * factor),
        Err(_) => num.to_string(),
    }
}

/// The most words one statement holds: a sentence rarely has more, and text without sentence
/// punctuation (a wall of words) is cut at this many, so no statement is a whole document.
pub const MAX_STATEMENT_WORDS: usize = 60;

/// Cuts a document's text (lines `first..`) into statements: paragraphs are joined across
/// their wrapped lines and split into sentences, or, in a paragraph with no sentence
/// punctuation at all (a README of one fact per line), split at each line that the next does
/// not continue in lower case; list items (`-`, `*`, `+`, `•`, `1.`, `1)`, `a)`, ...), table
/// rows and headings stand alone; fenced code is skipped; no statement is longer than
/// [`MAX_STATEMENT_WORDS`].
pub fn statements(text: &str, first_line: u32) -> Vec<Statement> {
    let mut out = Vec::new();
    let mut para: Vec<(u32, &str)> = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        let n = first_line + i as u32;
        let t = line.trim();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
            flush(&mut para, &mut out);
            continue;
        }
        if fenced {
            continue;
        }
        if t.is_empty() {
            flush(&mut para, &mut out);
            continue;
        }
        if list_item(t) {
            flush(&mut para, &mut out);
            para.push((n, t));
            flush(&mut para, &mut out);
        } else {
            para.push((n, t));
        }
    }
    flush(&mut para, &mut out);
    out
}

/// reStructuredText directives whose body is code or program output, not prose.
const CODE_DIRECTIVES: &[&str] = &[
    "code",
    "code-block",
    "sourcecode",
    "parsed-literal",
    "doctest",
    "testcode",
    "testoutput",
    "testsetup",
    "ipython",
    "jupyter-execute",
    "highlight",
];

/// `text` with its reStructuredText literal blocks blanked, line for line (numbers stay): the
/// indented block after a paragraph ending in `::` (or a line of `::` alone), the body of a
/// code directive (`.. code-block:: python`, [`CODE_DIRECTIVES`], with the directive's line),
/// and doctest blocks (`>>>` to the next blank line). Their code is no claim: `TIMEOUT = 30`
/// in one example and `TIMEOUT = 60` in another were reported as conflicting statements. A
/// block is the lines indented deeper than the line that opened it, and the blank ones between.
/// Done on a whole file, before it is cut at chunk boundaries, so a chunk that starts inside a
/// block knows it.
pub fn mask_literal_blocks(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains("::") && !text.contains(">>>") {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut block = LiteralBlock::default();
    for line in text.split_inclusive('\n') {
        if block.masks(line) {
            out.push_str(&line[line.trim_end_matches(['\n', '\r']).len()..]);
        } else {
            out.push_str(line);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Where [`mask_literal_blocks`] is: the indentation of the line that opened a block (waiting
/// for its first indented line, or inside it), or inside a doctest block.
#[derive(Default)]
struct LiteralBlock {
    opened_at: Option<usize>,
    inside: bool,
    doctest: bool,
}

impl LiteralBlock {
    /// Whether `line` is code of a literal block (and so blanked), moving along.
    fn masks(&mut self, line: &str) -> bool {
        let body = line.trim_end_matches(['\n', '\r']);
        let t = body.trim();
        let indent = body.len() - body.trim_start().len();
        if self.doctest {
            self.doctest = !t.is_empty();
            return self.doctest;
        }
        if let Some(base) = self.opened_at {
            if t.is_empty() {
                return self.inside;
            }
            if indent > base {
                self.inside = true;
                return true;
            }
            self.opened_at = None;
            self.inside = false;
        }
        if t.starts_with(">>>") {
            self.doctest = true;
            return true;
        }
        let directive = code_directive(t);
        // Another directive's body (`.. note::`) is prose.
        if directive || (t.ends_with("::") && !t.starts_with("..")) {
            self.opened_at = Some(indent);
        }
        // The directive's own line and a lone `::` are markup; `Example::` is prose.
        directive || t == "::"
    }
}

/// `.. code-block:: python` and the like ([`CODE_DIRECTIVES`]).
fn code_directive(t: &str) -> bool {
    let Some(rest) = t.strip_prefix("..") else { return false };
    let Some((name, _)) = rest.trim_start().split_once("::") else { return false };
    CODE_DIRECTIVES.contains(&name.trim())
}

/// Bullets that start a list item, besides `-`, `*` and `+`.
const BULLETS: &[char] = &['•', '◦', '▪', '▫', '‣', '⁃', '∙', '·', '●', '○', '■', '□', '–', '—', '→', '✓', '✔', '✗'];

/// A line that stands alone: a list item, a table row, a heading or a quote.
fn list_item(t: &str) -> bool {
    if t.starts_with(['-', '*', '+', '|', '#', '>']) || t.starts_with(BULLETS) {
        return true;
    }
    // `1. `, `1) `, `a) `, `(1) `, `(a) `.
    let t = t.strip_prefix('(').unwrap_or(t);
    let Some((marker, _)) = t.split_once([' ', '\t']) else { return false };
    let Some(label) = marker.strip_suffix(['.', ')']) else { return false };
    !label.is_empty()
        && (label.chars().all(|c| c.is_ascii_digit())
            || (label.len() == 1 && label.chars().all(|c| c.is_ascii_lowercase()) && marker.ends_with(')')))
}

fn flush(para: &mut Vec<(u32, &str)>, out: &mut Vec<Statement>) {
    if para.is_empty() {
        return;
    }
    if para.len() > 1 && !para.iter().any(|(_, l)| sentence_end(l).is_some()) {
        // No sentence punctuation anywhere: a line is a statement unless the next continues it.
        let mut start = 0;
        for i in 1..=para.len() {
            let continued = para.get(i).is_some_and(|(_, l)| l.starts_with(|c: char| c.is_lowercase()));
            if !continued {
                split_sentences(&para[start..i], out);
                start = i;
            }
        }
    } else {
        split_sentences(para, out);
    }
    para.clear();
}

fn split_sentences(para: &[(u32, &str)], out: &mut Vec<Statement>) {
    let mut cur = String::new();
    let mut start = para[0].0;
    for (n, line) in para {
        let mut rest = *line;
        if cur.is_empty() {
            start = *n;
        }
        while let Some(i) = sentence_end(rest) {
            cur.push_str(&rest[..=i]);
            push_bounded(&cur, start, *n, out);
            cur.clear();
            start = *n;
            rest = rest[i + 1..].trim_start();
        }
        if !rest.is_empty() {
            cur.push_str(rest);
            cur.push(' ');
        }
    }
    push_bounded(&cur, start, para[para.len() - 1].0, out);
}

/// Pushes the statement of `text`, cut into pieces of at most [`MAX_STATEMENT_WORDS`] words.
fn push_bounded(text: &str, start: u32, end: u32, out: &mut Vec<Statement>) {
    let words: Vec<&str> = text.split_whitespace().collect();
    for piece in words.chunks(MAX_STATEMENT_WORDS) {
        if let Some(s) = statement(&piece.join(" "), start, end) {
            out.push(s);
        }
    }
}

/// The end of the first sentence in `s`: `.`, `!` or `?` before a space and a capital (or at
/// the end), not inside a number (`1.5`) or an abbreviation-like token (`e.g.`).
fn sentence_end(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    for (i, c) in b.iter().enumerate() {
        if matches!(c, b'.' | b'!' | b'?') {
            let at_end = i + 1 == b.len();
            let next_cap = b.get(i + 1) == Some(&b' ') && b.get(i + 2).is_some_and(|c| c.is_ascii_uppercase());
            let abbrev = i >= 2 && b[i - 2] == b'.';
            if (at_end || next_cap) && !abbrev {
                return Some(i);
            }
        }
    }
    None
}

/// One word of a statement.
#[derive(Debug, Clone, PartialEq)]
struct Tok {
    /// Lowercased, markup stripped, apostrophes and dots inside kept.
    text: String,
    /// Inside an inline code span (`` `x` ``, ``` ``x`` ```): a literal, never a value.
    code: bool,
    /// Right after the previous word, at most one space between and no punctuation: only
    /// then is it that word's unit ("30 s", not "30 (s)" or "30, m").
    adjacent: bool,
}

/// Characters a word is made of; anything else separates words.
fn word_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '.' | '\'' | '_' | '%' | '-' | '#')
}

/// `text` with its URLs made a separator: a link's path (`/en/v5.2.0/`) is no version claim.
fn without_urls(text: &str) -> String {
    let url = |w: &str| w.contains("://") || w.trim_start_matches(['<', '(', '[']).starts_with("www.");
    // Its backticks stay: `` `guide <https://...>`_ `` closes a span in the URL's word.
    let keep = |w: &str| format!("|{}", w.chars().filter(|c| *c == '`').collect::<String>());
    text.split(' ').map(|w| if url(w) { keep(w) } else { w.to_string() }).collect::<Vec<_>>().join(" ")
}

/// `text` with its HTML tags and character entities made separators: Markdown embeds HTML
/// (`<img src="logo.png" height="25">`, `&nbsp;`), whose attributes are layout, not claims (a
/// README's two logos of heights 25 and 35 were a "conflict"). A tag is `<` then a name of
/// letters ending at a space, `/` or `>` (or `</name>`, `<!-- -->`), so `<https://...>` and
/// `a < b` stay text.
fn without_markup(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['<', '&']) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(['<', '&']) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        match markup_len(tail) {
            Some(n) => {
                out.push_str(" | ");
                rest = &tail[n..];
            }
            None => {
                out.push_str(&tail[..1]);
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

/// The byte length of the HTML tag or entity `s` starts with, if it starts with one.
fn markup_len(s: &str) -> Option<usize> {
    if let Some(body) = s.strip_prefix('&') {
        let name = body.find(';')?;
        let ok = (1..=8).contains(&name) && body[..name].chars().all(|c| c.is_ascii_alphanumeric() || c == '#');
        return ok.then_some(name + 2);
    }
    let body = s.strip_prefix('<')?;
    let name = body.strip_prefix(['/', '!']).unwrap_or(body);
    let letters = name.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-')).unwrap_or(name.len());
    let comment = name.starts_with("--");
    let opens_name = letters > 0 && name.starts_with(|c: char| c.is_ascii_alphabetic());
    let ends_name = name[letters..].starts_with([' ', '/', '>']) || name.len() == letters;
    if !(comment || (opens_name && ends_name)) {
        return None;
    }
    // An unclosed `<` on this statement is text ("a <b"), not a tag.
    s.find('>').map(|end| end + 1)
}

/// Words of a statement (see [`Tok`]); URLs, HTML tags and entities are left out.
fn tokens(text: &str) -> Vec<Tok> {
    let text = without_urls(&without_markup(text));
    let mut out = Vec::new();
    let (mut cur, mut gap) = (String::new(), String::new());
    let (mut in_code, mut cur_code, mut prev) = (false, false, ' ');
    let mut trail = false;
    for c in text.chars().chain([' ']) {
        if word_char(c) {
            if cur.is_empty() {
                cur_code = in_code;
            }
            cur.push(c);
        } else {
            if !cur.is_empty() {
                trail = push_tok(&mut out, &cur, cur_code, &gap, trail);
                cur.clear();
                gap.clear();
            }
            // A run of backticks opens or closes one span (reStructuredText's ``x``).
            if c == '`' && prev != '`' {
                in_code = !in_code;
            }
            gap.push(c);
        }
        prev = c;
    }
    out
}

/// Pushes a raw word, trimmed of outer dots, apostrophes and dashes; returns whether its end
/// was trimmed (then the next word is not adjacent to it).
fn push_tok(out: &mut Vec<Tok>, raw: &str, code: bool, gap: &str, prev_trimmed: bool) -> bool {
    let trim = ['.', '\'', '-'];
    let t = raw.trim_matches(trim);
    if t.is_empty() {
        return true;
    }
    let lead = raw.len() != raw.trim_start_matches(trim).len();
    let adjacent = !prev_trimmed && !lead && matches!(gap, "" | " ");
    out.push(Tok { text: t.to_lowercase(), code, adjacent });
    raw.len() != raw.trim_end_matches(trim).len()
}

/// `text` without the marker of a numbered or lettered list item (`1. `, `3) `, `(a) `).
fn without_list_marker(text: &str) -> &str {
    let t = text.strip_prefix('(').unwrap_or(text);
    let Some((marker, rest)) = t.split_once(' ') else { return text };
    let Some(label) = marker.strip_suffix(['.', ')']) else { return text };
    let numbered = !label.is_empty() && label.chars().all(|c| c.is_ascii_digit());
    let lettered = label.len() == 1 && label.chars().all(|c| c.is_ascii_lowercase()) && marker.ends_with(')');
    if numbered || lettered {
        rest
    } else {
        text
    }
}

/// A list item keyed by a version ("- 5.2.1: fixed ...", "* **4.0** - ...", "- v5.2: ..."):
/// one release's entry, history however it is worded.
fn version_keyed(text: &str) -> bool {
    let t = text.trim_start_matches(|c: char| !c.is_alphanumeric());
    let t = t.strip_prefix(['v', 'V']).filter(|r| r.starts_with(|c: char| c.is_ascii_digit())).unwrap_or(t);
    let end = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (ver, rest) = t.split_at(end);
    let ver = ver.trim_end_matches('.');
    if !ver.contains('.') || !ver.starts_with(|c: char| c.is_ascii_digit()) {
        return false;
    }
    let rest = rest.trim_start_matches(['*', '`', '_']);
    ver.matches('.').count() >= 2
        || rest.is_empty()
        || rest.starts_with([':', ')', ']'])
        || [" -", " –", " —", " ("].iter().any(|s| rest.starts_with(s))
}

/// Whether a statement presents an example ("Example (no redirect call) sets ...", "For
/// example, a timeout of 5 s ...").
fn opens_an_example(text: &str) -> bool {
    let t = text.trim_start_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
    ["example", "for example", "for instance", "e.g."].iter().any(|w| {
        t.strip_prefix(w).is_some_and(|rest| rest.is_empty() || rest.starts_with(|c: char| !c.is_alphanumeric()))
    })
}

/// Reduces one statement to its shape and claims; `None` for a statement of fewer than two
/// content words (one when it names a default): too short to compare.
pub fn statement(text: &str, line_start: u32, line_end: u32) -> Option<Statement> {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    // A numbered item's marker (`1.`, `3)`) is its place in a list, not a value.
    let toks = tokens(without_list_marker(&text));
    let mut scan = Scan::default();
    let mut i = 0;
    while i < toks.len() {
        i += scan.step(&toks, i);
    }
    let keyed = list_item(&text) && version_keyed(&text);
    let Scan { shape, values, negations, default, historical, .. } = scan;
    let historical = historical || keyed;
    let negated = negations % 2 == 1;
    let words = shape.iter().filter(|w| !w.starts_with('#')).count();
    // "Step 1" and "Step 2" are not claims; "the default port is 8080" is one.
    if words < 2 && !(words == 1 && default) {
        return None;
    }
    let example = opens_an_example(without_list_marker(&text));
    Some(Statement { line_start, line_end, text, shape, values, negated, default, historical, example })
}

/// What [`statement`] has gathered so far, one token at a time.
#[derive(Default)]
struct Scan {
    shape: BTreeSet<String>,
    values: BTreeMap<String, (ValueKind, BTreeSet<String>)>,
    negations: usize,
    default: bool,
    historical: bool,
    /// Content words so far (the keys).
    content: Vec<String>,
    /// The next content word is a default's value ("defaults to lz4").
    pending_default: bool,
    /// The last two words taken, any kind, latest first.
    before: [String; 2],
}

impl Scan {
    /// Takes in the token at `i` (and a unit after it); returns how many tokens it used.
    fn step(&mut self, toks: &[Tok], i: usize) -> usize {
        let used = self.take(toks, i);
        self.before = [toks[i].text.clone(), std::mem::take(&mut self.before[0])];
        used
    }

    fn take(&mut self, toks: &[Tok], i: usize) -> usize {
        let t = toks[i].text.as_str();
        let next = toks.get(i + 1).map(|n| n.text.as_str());
        // The next word is a unit of this one only when adjacent ("30 s", not "30, m").
        let unit_next = toks.get(i + 1).filter(|n| n.adjacent && !n.code).map(|n| n.text.as_str());
        // `#123` (an issue or pull request) and Markdown's `##` are references and markup,
        // not claims.
        if t.starts_with('#') {
            return 1;
        }
        if HISTORY.contains(&t) {
            self.historical = true;
        }
        if toks[i].code {
            return self.code_word(t);
        }
        if t.starts_with("default") {
            self.default = true;
            // "defaults to lz4", "the default is json": the next content word is the value;
            // in "the default port is 8080" it is the subject.
            self.pending_default = next.is_some_and(|n| matches!(n, "to" | "is" | "was" | ":"));
            return 1;
        }
        if NEGATIONS.contains(&t) {
            self.negations += 1;
            return 1;
        }
        if let Some((kind, v, glued)) = value_of(t) {
            return self.value(kind, v, glued, unit_next);
        }
        if let Some(n) = number_word(t).filter(|_| unit_next.is_some_and(|u| unit(u).is_some())) {
            let v = normalized(&n.to_string(), unit_next);
            self.shape.insert("#num".into());
            self.claim(ValueKind::Number, v);
            return 2;
        }
        if let Some((name, on)) = flag(t) {
            self.shape.insert("#flag".into());
            let on = if self.negations % 2 == 1 { !on } else { on };
            self.negations = 0; // the negation was folded into the flag
            self.claim(ValueKind::Flag, format!("{name}={on}"));
            self.pending_default = false;
            return 1;
        }
        if STOP.contains(&t) || t.len() < 2 {
            return 1;
        }
        if self.pending_default {
            // "defaults to lz4", "the default is `json`": the named word is the default's value.
            self.shape.insert("#word".into());
            self.claim(ValueKind::Word, t.to_string());
            self.pending_default = false;
            return 1;
        }
        self.shape.insert(t.to_string());
        self.content.push(t.to_string());
        1
    }

    /// A word of inline code: a literal (`` `-c 4` ``, ``` ``True`` ```), so never a value;
    /// a name in it (a setting, a function) still keys what follows.
    fn code_word(&mut self, t: &str) -> usize {
        self.pending_default = false;
        let literal = value_of(t).is_some() || number_word(t).is_some() || flag(t).is_some();
        if !literal && !STOP.contains(&t) && t.len() >= 2 {
            self.shape.insert(t.to_string());
            self.content.push(t.to_string());
        }
        1
    }

    /// A number or version, with its unit glued on or in the next token; returns the tokens used.
    /// A version, or a dotted number or year without a unit, right after "in", "since", "as of",
    /// ... (or "in version") puts the statement at a release: history.
    fn value(&mut self, kind: ValueKind, v: String, glued: Option<&str>, next: Option<&str>) -> usize {
        let (v, used, has_unit) = match (kind, glued) {
            (ValueKind::Number, Some(u)) => (normalized(&v, Some(u)), 1, true),
            (ValueKind::Number, None) => match next.filter(|u| unit(u).is_some()) {
                Some(u) => (normalized(&v, Some(u)), 2, true),
                None => (normalized(&v, None), 1, false),
            },
            _ => (v, 1, false),
        };
        let [b1, b2] = [self.before[0].as_str(), self.before[1].as_str()];
        let year = v.len() == 4 && (v.starts_with("19") || v.starts_with("20"));
        let versioned = matches!(b1, "version" | "versions" | "release");
        let release_like = kind == ValueKind::Version || (!has_unit && (v.contains('.') || year || versioned));
        let at = AT_VERSION.contains(&b1) || (b1, b2) == ("of", "as") || (versioned && AT_VERSION.contains(&b2));
        if release_like && at {
            self.historical = true;
        }
        self.shape.insert(if kind == ValueKind::Version { "#ver".into() } else { "#num".into() });
        self.claim(kind, v);
        self.pending_default = false;
        used
    }

    /// Records value `v` under the key of the last two content words.
    fn claim(&mut self, kind: ValueKind, v: String) {
        let key = self.content.iter().rev().take(2).rev().cloned().collect::<Vec<_>>().join(" ");
        self.values.entry(key).or_insert((kind, BTreeSet::new())).1.insert(v);
    }
}

/// Jaccard similarity of two shapes.
pub fn similarity(a: &Statement, b: &Statement) -> f32 {
    let inter = a.shape.intersection(&b.shape).count();
    let union = a.shape.len() + b.shape.len() - inter;
    if union == 0 {
        0.0
    } else {
        inter as f32 / union as f32
    }
}

pub use super::types::ConflictKind;

/// Whether two similar statements disagree, and how (`None` when they agree or cannot be
/// compared): a key both give a value for, with no value in common; else one negated and the
/// other not, with the same values.
pub fn disagreement(a: &Statement, b: &Statement) -> Option<(ConflictKind, String)> {
    if a.historical || b.historical || a.example || b.example {
        return None;
    }
    for (key, (kind_a, va)) in &a.values {
        let Some((kind_b, vb)) = b.values.get(key) else { continue };
        if kind_a != kind_b || !va.is_disjoint(vb) {
            continue;
        }
        let subject = if key.is_empty() { "the value".to_string() } else { format!("`{key}`") };
        let shown = |vs: &BTreeSet<String>| vs.iter().map(|v| pretty(v)).collect::<Vec<_>>().join(", ");
        let kind = match kind_a {
            ValueKind::Version => ConflictKind::Version,
            _ if a.default && b.default => ConflictKind::Default,
            ValueKind::Flag => ConflictKind::Negation,
            ValueKind::Word => ConflictKind::Default,
            ValueKind::Number => ConflictKind::Number,
        };
        let what = match kind {
            ConflictKind::Default => "default",
            ConflictKind::Version => "version",
            ConflictKind::Negation => "setting",
            ConflictKind::Number => "number",
        };
        return Some((kind, format!("{what} of {subject}: {} in a, {} in b", shown(va), shown(vb))));
    }
    if a.negated != b.negated {
        let same_values = a.values.len() == b.values.len()
            && a.values.iter().all(|(k, (_, v))| b.values.get(k).is_some_and(|(_, w)| w == v));
        if same_values {
            let (yes, no) = if a.negated { ("b", "a") } else { ("a", "b") };
            return Some((ConflictKind::Negation, format!("negation: {no} says not what {yes} says")));
        }
    }
    None
}

/// A normalized value for people: `86400s` back to `1 d`, flags as their word.
fn pretty(v: &str) -> String {
    if let Some((name, on)) = v.split_once('=') {
        return match (on, FLAGS.iter().find(|(n, _)| *n == name)) {
            ("false", Some((_, off))) => off.to_string(),
            _ => name.to_string(),
        };
    }
    if let Some(secs) = v.strip_suffix('s').and_then(|n| n.parse::<f64>().ok()) {
        if secs == 0.0 {
            return "0 s".into(); // not "0 ms": no unit is below zero
        }
        for (f, u) in [(86_400.0, "day"), (3600.0, "h"), (60.0, "min"), (1.0, "s")] {
            if secs >= f && (secs / f).fract() == 0.0 {
                return format!("{} {u}", secs / f);
            }
        }
        return format!("{} ms", secs * 1000.0);
    }
    if let Some(bytes) = v.strip_suffix('B').and_then(|n| n.parse::<f64>().ok()) {
        for (f, u) in [(1_073_741_824.0, "GiB"), (1_048_576.0, "MiB"), (1024.0, "KiB")] {
            if bytes >= f && (bytes / f).fract() == 0.0 {
                return format!("{} {u}", bytes / f);
            }
        }
        return format!("{bytes} bytes");
    }
    v.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t: &str) -> Statement {
        statement(t, 1, 1).unwrap_or_else(|| panic!("no claim in {t:?}"))
    }

    fn conflict(a: &str, b: &str) -> Option<(ConflictKind, String)> {
        disagreement(&s(a), &s(b))
    }

    #[test]
    fn numbers_with_units_are_compared_as_quantities() {
        let (k, why) =
            conflict("Refresh tokens rotate every 24 hours.", "Refresh tokens rotate every 7 days.").unwrap();
        assert_eq!(k, ConflictKind::Number);
        assert!(why.contains("`refresh tokens rotate`") || why.contains("`tokens rotate`"), "{why}");
        assert!(why.contains("1 day") && why.contains("7 day"), "{why}");
        assert!(conflict("Sessions expire after 24 hours.", "Sessions expire after 1 day.").is_none());
        assert!(conflict("Uploads are limited to 10MB per file.", "Uploads are limited to 10 MB per file.").is_none());
    }

    #[test]
    fn a_two_part_version_keeps_its_digits_and_issue_numbers_are_no_claims() {
        let (_, why) =
            conflict("This release requires Python 3.10 or later.", "This release requires Python 3.1 or later.")
                .unwrap();
        assert!(why.contains("3.10") && why.contains("3.1 in"), "{why}");
        assert!(conflict(
            "Retries were fixed in the worker (see issue #122).",
            "Retries were fixed in the worker (see issue #143)."
        )
        .is_none());
    }

    #[test]
    fn values_of_different_keys_do_not_conflict() {
        assert!(conflict("The read timeout is 30 seconds.", "The write timeout is 60 seconds.").is_none());
    }

    #[test]
    fn versions_defaults_and_negations() {
        let (k, _) =
            conflict("The server requires Python 3.10.2 or later.", "The server requires Python 3.11.4 or later.")
                .unwrap();
        assert_eq!(k, ConflictKind::Version);
        let (k, why) =
            conflict("Compression defaults to lz4 for new tables.", "Compression defaults to zstd for new tables.")
                .unwrap();
        assert_eq!(k, ConflictKind::Default, "{why}");
        let (k, _) = conflict("Telemetry is enabled by default.", "Telemetry is disabled by default.").unwrap();
        assert_eq!(k, ConflictKind::Default);
        let (k, _) = conflict(
            "The cache directory is shared between users.",
            "The cache directory is not shared between users.",
        )
        .unwrap();
        assert_eq!(k, ConflictKind::Negation);
        // "not required" is "optional": they agree.
        assert!(
            conflict("A token is not required for local clients.", "A token is optional for local clients.").is_none()
        );
        assert!(conflict("Never run the indexer as root.", "Never run the indexer as root in production.").is_none());
        // History is not contradiction.
        assert!(conflict("The default port was 8080 before version 2.", "The default port is 9090.").is_none());
    }

    #[test]
    fn statements_follow_paragraphs_items_and_lines() {
        let text = "# Limits\n\nThe default port is 8080. Requests time out\nafter 30 seconds.\n\n- Uploads are limited to 10 MB.\n```\nport = 1\n```\n";
        let st = statements(text, 1);
        let lines: Vec<(u32, u32)> = st.iter().map(|s| (s.line_start, s.line_end)).collect();
        assert_eq!(lines, [(3, 3), (3, 4), (6, 6)], "{st:#?}");
        assert!(st[1].text.starts_with("Requests time out after 30 seconds"), "{}", st[1].text);
    }

    #[test]
    fn lines_without_sentence_punctuation_and_bullets_are_statements_of_their_own() {
        let text = "Port 8080 serves the public API
Read timeout is 30 seconds for
slow clients on mobile networks
                    Retries 3 before the job fails

• Uploads are limited to 10 MB
1) Backups run every night
                    (a) Logs are kept for 14 days
";
        let st = statements(text, 1);
        let got: Vec<(u32, u32, &str)> = st.iter().map(|s| (s.line_start, s.line_end, s.text.as_str())).collect();
        assert_eq!(
            got,
            [
                (1, 1, "Port 8080 serves the public API"),
                (2, 3, "Read timeout is 30 seconds for slow clients on mobile networks"),
                (4, 4, "Retries 3 before the job fails"),
                (6, 6, "• Uploads are limited to 10 MB"),
                (7, 7, "1) Backups run every night"),
                (8, 8, "(a) Logs are kept for 14 days"),
            ]
        );
        // Wrapped prose with sentences is joined as before, even where a line starts a name.
        let prose = statements(
            "The port is chosen by
Kubernetes at deploy time. It is 8080
in tests.
",
            1,
        );
        assert_eq!(prose[0].text, "The port is chosen by Kubernetes at deploy time.");
        assert!(!list_item("1.5 GB is the upload limit") && !list_item("e.g. this one") && list_item("12. Twelfth"));
    }

    #[test]
    fn a_wall_of_words_is_cut_into_bounded_statements() {
        let wall: Vec<String> = (0..1000).map(|i| format!("word{}", i % 97)).collect();
        let st = statements(&wall.join(" "), 1);
        assert_eq!(st.len(), 1000usize.div_ceil(MAX_STATEMENT_WORDS));
        assert!(st.iter().all(|s| s.text.split_whitespace().count() <= MAX_STATEMENT_WORDS));
    }

    /// Code in reStructuredText literal blocks (after `::`, in a `.. code-block::`, a doctest)
    /// was cut into statements like prose: `TIMEOUT = 30` in one example and `TIMEOUT = 60`
    /// in another were a conflict. They are blanked, line numbers kept; prose around stays.
    #[test]
    fn rst_literal_blocks_are_no_statements() {
        let text = "Set the timeout in settings::\n\n    TIMEOUT = 30\n    RETRIES = 3\n\n\
                    The read timeout is 30 seconds.\n\n\
                    .. code-block:: python\n   :linenos:\n\n   TIMEOUT = 60\n\n\
                    >>> retries = 4\n>>> print(retries)\n4\n\n\
                    .. note::\n\n   The write timeout is 60 seconds.\n\n::\n\n  port = 8080\n\nThe port is set in the config file.\n";
        let masked = mask_literal_blocks(text);
        assert_eq!(masked.lines().count(), text.lines().count(), "line numbers kept");
        for code in ["TIMEOUT", "RETRIES", "retries", "code-block", "8080", "linenos"] {
            assert!(!masked.contains(code), "{code}: {masked}");
        }
        let st: Vec<(u32, String)> = statements(&masked, 1).into_iter().map(|s| (s.line_start, s.text)).collect();
        let texts: Vec<&str> = st.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(
            texts,
            [
                "Set the timeout in settings::",
                "The read timeout is 30 seconds.",
                "The write timeout is 60 seconds.",
                "The port is set in the config file."
            ],
            "{st:?}"
        );
        assert_eq!(st[1].0, 6);
        assert_eq!(st[2].0, 19, "{st:?}");
        let plain = "No literal blocks here.\n    An indented line stays.\n";
        assert!(matches!(mask_literal_blocks(plain), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn changes_between_versions_and_dates_are_history() {
        for t in [
            "The prefetch multiplier changed from 3 to 5 in 5.2 for all workers.",
            "Since version 4.0 the default serializer is json.",
            "In 5.2 the default concurrency is 8 workers.",
            "In version 4 the default concurrency is 8 workers.",
            "As of 2019 the default concurrency is 8 workers.",
            "The visibility timeout was 1 hour, now 2 hours.",
            "The default concurrency was raised to 8 workers.",
        ] {
            assert!(s(t).historical, "{t}");
        }
        // Without the release, the same words are a claim and do conflict.
        assert!(conflict("The default concurrency is 8 workers.", "The default concurrency is 4 workers.").is_some());
        assert!(
            conflict("In 5.2 the default concurrency is 8 workers.", "The default concurrency is 4 workers.").is_none()
        );
        // A number after "in" that is no release is still a value.
        assert!(!s("Results are kept in 3 tables for every worker.").historical);
        assert!(!s("Tasks time out in 2.5 seconds on the worker.").historical);
    }

    #[test]
    fn version_list_items_urls_and_inline_code_give_no_values() {
        for item in ["- 5.2.1: the worker pool restarts its children", "* **4.0** - the pool restarts its children"] {
            assert!(s(item).historical, "{item}");
        }
        assert!(!s("- 1.5 GB is the upload limit for every file").historical);
        assert!(!s("1. The worker pool restarts its children").historical);
        let url = s("See https://docs.example.org/en/v5.2.0/guide.html for the worker settings.");
        assert!(url.values.is_empty(), "{:?}", url.values);
        // A link in a role or a reference keeps the span it closes: "no" after it is prose.
        let linked = s("Detailed info on `assert statements <https://docs.pytest.org/en/assert.html>`_ (no need to remember names)");
        assert!(linked.negated, "{linked:?}");
        // A numbered item's place in its list is no value.
        assert!(conflict(
            "1. by scanning the command line for the option",
            "3. by scanning the command line for the option"
        )
        .is_none());
        let www = s("See www.example.org/v5.2.0/guide for the worker settings.");
        assert!(www.values.is_empty(), "{:?}", www.values);
        assert!(conflict(
            "Start the worker with ``celery worker --concurrency 4`` on each host.",
            "Start the worker with ``celery worker --concurrency 8`` on each host."
        )
        .is_none());
        assert!(
            conflict("The flag is `true` in the worker config.", "The flag is `false` in the worker config.").is_none()
        );
        // A name in code still keys the value given outside it.
        let keyed = s("The :setting:`worker_prefetch_multiplier` is 4 by default.");
        let (key, (_, values)) = keyed.values.iter().next().unwrap();
        assert!(key.contains("worker_prefetch_multiplier") && values.contains("4"), "{:?}", keyed.values);
    }

    #[test]
    fn examples_shown_side_by_side_are_not_contradictions() {
        let a = "Example (no `reply.code()` call) sets status code to `302` and redirects to the page";
        let b = "Example (`reply.code()` call) sets status code to `303` and redirects to the page";
        assert!(s(a).example && s(b).example);
        assert_eq!(conflict(a, b), None);
        assert!(s("For example, the worker waits 5 s for a reply").example);
        assert!(!s("Examples are kept for 3 days in the cache").example);
        assert!(!s("The examples folder holds 3 projects").example);
        // The same statements without the lead-in still disagree.
        let (a, b) = ("Refresh tokens rotate every 24 hours.", "Refresh tokens rotate every 7 days.");
        assert!(conflict(a, b).is_some());
        assert_eq!(conflict(&format!("For example, {a}"), &format!("For example, {b}")), None);
    }

    #[test]
    fn html_tags_and_entities_in_markdown_give_no_values() {
        let a = r#"<img align="center" src="doc/nuclia.png" alt="Nuclia" height="25" width="auto" /> &nbsp;"#;
        let b = r#"<img align="center" src="doc/nuclia-dark.png" alt="Nuclia" height="35" width="auto" /> &nbsp;"#;
        let values = |t: &str| statement(t, 1, 1).map_or(0, |s| s.values.len());
        assert_eq!((values(a), values(b)), (0, 0));
        // Text around a tag still claims; a comparison and an autolink are text, not tags.
        let t = statement("the <b>default</b> timeout is 30 s", 1, 1).expect("a statement");
        assert!(!t.values.is_empty(), "{t:?}");
        assert_eq!(without_markup("if a < b and c > d"), "if a < b and c > d");
        assert_eq!(without_markup("see <https://example.org/a>"), "see <https://example.org/a>");
        assert_eq!(without_markup("x<br/>y &amp; z"), "x | y  |  z");
    }

    #[test]
    fn a_unit_attaches_only_to_the_number_beside_it_and_zero_is_zero() {
        let v = |t: &str| s(t).values.into_values().flat_map(|(_, v)| v).collect::<Vec<_>>();
        assert_eq!(v("The soft time limit is 30 s for each task."), ["30s"]);
        assert_eq!(v("The soft time limit is 30s for each task."), ["30s"]);
        assert_eq!(v("Uploads are capped at 5 MB for each task."), ["5242880B"]);
        assert_eq!(v("The retry count is 3 (m) for each task."), ["3"]);
        assert_eq!(v("The retry count is 3, m for each task."), ["3"]);
        assert_eq!(v("The retry count is five minutes for each task."), ["300s"]);
        let (_, why) =
            conflict("The countdown is 0 s for each retry.", "The countdown is 10 s for each retry.").unwrap();
        assert!(why.contains("0 s in a, 10 s in b"), "{why}");
        assert_eq!(pretty("0s"), "0 s");
        assert_eq!(pretty("0.5s"), "500 ms");
    }
}
