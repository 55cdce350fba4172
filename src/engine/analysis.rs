//! The code-aware text analyzer shared by indexing, querying, snippets and
//! confidence, so that all four agree on what a "term" is.
//!
//! A word is a run of letters, digits and underscores. Each word yields its
//! whole form (lowercased, separators dropped, so `get_user_name` and
//! `getUserName` meet as `getusername`) and then its parts, split at
//! underscores, camelCase humps, acronym ends (`HTTPServer`) and letter/digit
//! changes (`utf8`). Parts are lowercased and English-stemmed, so a
//! plain-language query ("parsing configs") reaches code (`parse_config`).
//!
//! Letters with a plain Latin base are folded to ASCII in every term (`café` -> `cafe`,
//! `Straße` -> `strasse`, `ﬁle` -> `file`), at index and query time alike, so a query typed
//! without accents finds the accented text and the other way round; a term's byte range stays
//! the original text's, so highlights cover the accented word. Greek letters lose their
//! accents (`ά` -> `α`, final `ς` -> `σ`); other letters without an ASCII base (Cyrillic, CJK)
//! are only lowercased. A word with a German umlaut is also indexed as its transliteration
//! (`Über` -> `ueber` beside `uber`), so "ueber" finds `Über`; queries add no such variant.

use std::cell::RefCell;
use std::collections::HashMap;
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};
use unicode_normalization::char::{decompose_compatible, is_combining_mark};

/// Name under which the analyzer is registered with Tantivy.
pub const CODE_TOKENIZER: &str = "docdex_code";

/// What this analyzer makes of text, versioned: bumped with the index schema whenever a text's
/// terms change, so an index kept apart from the code index (a repository's `libs_index/`)
/// knows an older analyzer built it. 1 (never recorded): accented Latin folded, index schema 9;
/// 2: Greek accents folded and umlauts also transliterated, index schema 10.
pub const ANALYZER_VERSION: u32 = 2;

/// Words longer than this (hashes, base64, minified blobs) are not indexed.
pub const MAX_WORD_BYTES: usize = 48;

/// Longest word whose parts are still indexed when the word itself is too long.
const MAX_LONG_IDENTIFIER_BYTES: usize = 192;

/// A word over [`MAX_WORD_BYTES`] that is a snake_case identifier made of word-like segments
/// (`test_merge_sorted_index_u64_asc_nulls_only_in_first_segment`), not a hash or a blob.
fn long_identifier(word: &str) -> bool {
    if word.len() > MAX_LONG_IDENTIFIER_BYTES || !word.contains('_') {
        return false;
    }
    word.split('_').filter(|seg| !seg.is_empty()).all(|seg| {
        let letters = seg.chars().filter(|c| c.is_alphabetic()).count();
        let chars = seg.chars().count();
        seg.len() <= 24 && (letters * 2 >= chars || chars <= 4)
    })
}

/// The Tantivy tokenizer wrapper.
#[derive(Clone, Default)]
pub struct CodeTokenizer;

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream<'a>;
    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream<'a> {
        CodeTokenStream { terms: Terms::new(text), token: Token::default() }
    }
}

/// Token stream over [`Terms`].
pub struct CodeTokenStream<'a> {
    terms: Terms<'a>,
    token: Token,
}

impl TokenStream for CodeTokenStream<'_> {
    fn advance(&mut self) -> bool {
        let token = &mut self.token;
        match self.terms.next_into(&mut token.text) {
            Some((from, to)) => {
                token.offset_from = from;
                token.offset_to = to;
                token.position = token.position.wrapping_add(1);
                true
            }
            None => false,
        }
    }
    fn token(&self) -> &Token {
        &self.token
    }
    fn token_mut(&mut self) -> &mut Token {
        &mut self.token
    }
}

/// Iterator-like producer of normalized terms with byte offsets into the text.
pub struct Terms<'a> {
    text: &'a str,
    pos: usize,
    word: (usize, usize),
    parts: Vec<(usize, usize)>,
    next_part: usize,
    /// Umlaut transliterations are added (text to index or match against), not for a query.
    variants: bool,
    /// The span whose transliteration is the next term, and whether it is a whole word.
    pending: Option<(usize, usize, bool)>,
}

impl<'a> Terms<'a> {
    /// Starts analyzing `text` as indexed text: a word with a German umlaut also yields its
    /// transliteration (see [`umlaut_variant`]).
    pub fn new(text: &'a str) -> Self {
        Terms { text, pos: 0, word: (0, 0), parts: Vec::with_capacity(8), next_part: 0, variants: true, pending: None }
    }

    /// Starts analyzing `text` as a query: no umlaut transliterations, so a query's word counts
    /// once (the indexed variants already let "ueber" meet `Über`).
    pub fn query(text: &'a str) -> Self {
        Terms { variants: false, ..Terms::new(text) }
    }

    /// Remembers `text[s..e]`, just given as a term, for its transliteration when it has an umlaut.
    fn queue_variant(&mut self, s: usize, e: usize, whole: bool) {
        if self.variants && !self.text.as_bytes()[s..e].is_ascii() && has_umlaut(&self.text[s..e]) {
            self.pending = Some((s, e, whole));
        }
    }

    /// Writes the next term into `out` and returns its byte range in the text.
    pub fn next_into(&mut self, out: &mut String) -> Option<(usize, usize)> {
        loop {
            if let Some((s, e, whole)) = self.pending.take() {
                if umlaut_variant(&self.text[s..e], whole, out) {
                    return Some((s, e));
                }
            }
            if self.next_part < self.parts.len() {
                let (s, e) = self.parts[self.next_part];
                self.next_part += 1;
                if normalize_part(&self.text[s..e], out) {
                    self.queue_variant(s, e, false);
                    return Some((s, e));
                }
                continue;
            }
            let (s, e) = self.next_word()?;
            if self.text[s..e].chars().next().is_some_and(is_cjk) {
                // Chinese and Japanese write no spaces between words, and Korean words carry
                // endings: a run is indexed as its overlapping character pairs (one character
                // alone), so a phrase finds the text that contains it, at any length.
                self.word = (s, e);
                cjk_bigrams(self.text, s, e, &mut self.parts);
                self.next_part = 0;
                continue;
            }
            if e - s > MAX_WORD_BYTES {
                // Too long to be a useful whole term; a long snake_case name (a test named
                // after what it checks) still contributes its parts.
                if long_identifier(&self.text[s..e]) {
                    self.word = (s, e);
                    split_parts(self.text, s, e, &mut self.parts);
                    self.next_part = 0;
                }
                continue;
            }
            self.word = (s, e);
            split_parts(self.text, s, e, &mut self.parts);
            self.next_part = 0;
            if self.parts.len() > 1 {
                out.clear();
                let word = &self.text[s..e];
                if word.is_ascii() {
                    out.extend(word.bytes().filter(|b| *b != b'_').map(|b| b.to_ascii_lowercase() as char));
                } else {
                    for c in word.chars().filter(|c| *c != '_') {
                        push_folded(out, c);
                    }
                    self.queue_variant(s, e, true);
                }
                return Some((s, e));
            }
        }
    }

    fn next_word(&mut self) -> Option<(usize, usize)> {
        let bytes = self.text.as_bytes();
        let mut i = self.pos;
        // Skip separators.
        while i < bytes.len() {
            let b = bytes[i];
            if b < 0x80 {
                if is_word_byte(b) {
                    break;
                }
                i += 1;
            } else {
                let c = self.text[i..].chars().next()?;
                if c.is_alphanumeric() {
                    break;
                }
                i += c.len_utf8();
            }
        }
        if i >= bytes.len() {
            self.pos = i;
            return None;
        }
        let start = i;
        // A run of CJK characters is a word of its own, apart from letters around it.
        let cjk = self.text[i..].chars().next().is_some_and(is_cjk);
        while i < bytes.len() {
            let b = bytes[i];
            if b < 0x80 {
                if !is_word_byte(b) || cjk {
                    break;
                }
                i += 1;
            } else {
                match self.text[i..].chars().next() {
                    Some(c) if c.is_alphanumeric() && is_cjk(c) == cjk => i += c.len_utf8(),
                    // A combining accent (text in decomposed form, `e` + U+0301) belongs to the
                    // letter before it.
                    Some(c) if !cjk && is_combining_mark(c) => i += c.len_utf8(),
                    _ => break,
                }
            }
        }
        self.pos = i;
        Some((start, i))
    }
}

/// Whether `word` has a German umlaut: `ä`, `ö`, `ü` in either case, composed or as a vowel
/// followed by a combining diaeresis (U+0308).
fn has_umlaut(word: &str) -> bool {
    let mut prev = ' ';
    word.chars().any(|c| {
        let hit = matches!(c, 'ä' | 'ö' | 'ü' | 'Ä' | 'Ö' | 'Ü')
            || (c == '\u{308}' && matches!(prev, 'a' | 'o' | 'u' | 'A' | 'O' | 'U'));
        prev = c;
        hit
    })
}

/// The term of `word` (a whole word when `whole`, else one part) with its umlauts written as
/// German writes them without the letter, `ä` -> `ae`, `ö` -> `oe`, `ü` -> `ue` (`Über` ->
/// `ueber`, `Größe` -> `groess`), into `out`; false when that gives no term. Indexed beside the
/// folded term, so a query typed "ueber" or "Groesse" finds the umlaut; an English word never
/// has an umlaut, so no English query meets a variant it did not spell.
fn umlaut_variant(word: &str, whole: bool, out: &mut String) -> bool {
    let mut spelled = String::with_capacity(word.len() + 4);
    for c in word.chars() {
        match c {
            'ä' | 'Ä' => spelled.push_str("ae"),
            'ö' | 'Ö' => spelled.push_str("oe"),
            'ü' | 'Ü' => spelled.push_str("ue"),
            '\u{308}' if spelled.ends_with(['a', 'o', 'u', 'A', 'O', 'U']) => spelled.push('e'),
            _ => spelled.push(c),
        }
    }
    if whole {
        out.clear();
        for c in spelled.chars().filter(|c| *c != '_') {
            push_folded(out, c);
        }
        true
    } else {
        normalize_part(&spelled, out)
    }
}

/// Levenshtein distance if it is at most `max` (a misspelt name's suggestion: symbol names,
/// AST node kinds, agent ids).
pub fn edit_distance(a: &str, b: &str, max: usize) -> Option<usize> {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        let mut row_min = cur[0];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            row_min = row_min.min(cur[j]);
        }
        if row_min > max {
            return None;
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    (prev[b.len()] <= max).then_some(prev[b.len()])
}

/// Han ideographs, kana and Hangul: scripts written without spaces between words (or, for
/// Hangul, with endings glued on), which the analyzer indexes as character pairs.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // hiragana, katakana
        | 0x31F0..=0x31FF    // katakana phonetic extensions
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0x1100..=0x11FF    // Hangul jamo
        | 0x3130..=0x318F    // Hangul compatibility jamo
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0xFF66..=0xFF9F    // half-width katakana
        | 0x20000..=0x3134F) // CJK extensions B to G
}

/// The overlapping character pairs of `text[s..e]` (a CJK run), or its one character.
fn cjk_bigrams(text: &str, s: usize, e: usize, parts: &mut Vec<(usize, usize)>) {
    parts.clear();
    let mut bounds: Vec<usize> = text[s..e].char_indices().map(|(i, _)| s + i).collect();
    bounds.push(e);
    if bounds.len() == 2 {
        parts.push((bounds[0], bounds[1]));
        return;
    }
    parts.extend(bounds.windows(3).map(|w| (w[0], w[2])));
}

#[inline]
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

#[derive(Clone, Copy, PartialEq)]
enum Class {
    Lower,
    Upper,
    Digit,
    Sep,
    /// A combining mark: part of the letter before it, never a boundary.
    Mark,
}

fn class(c: char) -> Class {
    if c == '_' {
        Class::Sep
    } else if c.is_ascii_digit() || c.is_numeric() {
        Class::Digit
    } else if c.is_uppercase() {
        Class::Upper
    } else if is_combining_mark(c) {
        Class::Mark
    } else {
        Class::Lower
    }
}

/// Splits `text[s..e]` into identifier parts.
fn split_parts(text: &str, s: usize, e: usize, parts: &mut Vec<(usize, usize)>) {
    parts.clear();
    let word = &text[s..e];
    if word.is_ascii() {
        split_classes(word.bytes().enumerate().map(|(i, b)| (i, ascii_class(b))), s, e, parts);
    } else {
        split_classes(word.char_indices().map(|(i, c)| (i, class(c))), s, e, parts);
    }
}

/// The splitting rule over (offset, class) pairs of one word: a new part starts after an
/// underscore, at a lower-to-upper hump, at a letter/digit change, and at the last capital of
/// an acronym followed by lowercase (`HTTPServer` -> `HTTP`, `Server`).
fn split_classes(classes: impl Iterator<Item = (usize, Class)>, s: usize, e: usize, parts: &mut Vec<(usize, usize)>) {
    let mut iter = classes.peekable();
    let mut start: Option<usize> = None;
    let mut prev = Class::Sep;
    while let Some((i, cl)) = iter.next() {
        let boundary = match (prev, cl) {
            (_, Class::Sep) => {
                if let Some(ps) = start.take() {
                    parts.push((s + ps, s + i));
                }
                prev = Class::Sep;
                continue;
            }
            (_, Class::Mark) => {
                start = start.or(Some(i));
                continue;
            }
            (Class::Lower, Class::Upper) => true,
            (Class::Digit, Class::Lower | Class::Upper) | (Class::Lower | Class::Upper, Class::Digit) => true,
            (Class::Upper, Class::Upper) => matches!(iter.peek(), Some((_, Class::Lower))),
            _ => false,
        };
        if boundary {
            if let Some(ps) = start {
                parts.push((s + ps, s + i));
            }
            start = Some(i);
        } else if start.is_none() {
            start = Some(i);
        }
        prev = cl;
    }
    if let Some(ps) = start {
        parts.push((s + ps, e));
    }
}

fn ascii_class(b: u8) -> Class {
    match b {
        b'_' => Class::Sep,
        b'0'..=b'9' => Class::Digit,
        b'A'..=b'Z' => Class::Upper,
        _ => Class::Lower,
    }
}

/// `text` lowercased and folded as terms are (see [`push_folded`]), not split or stemmed: for
/// words a caller joins itself (the query's `eventloop` pairs), so `café crème` meets the
/// indexed `cafecreme` of `caféCrème`.
pub fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        push_folded(&mut out, c);
    }
    out
}

/// Appends `c` lowercased and, where it is a letter with a plain Latin base, folded to ASCII:
/// its compatibility decomposition less combining marks when that is ASCII (`é` -> `e`,
/// `ǆ` -> `dz`, `ﬁ` -> `fi`, fullwidth `Ａ` -> `a`), a few letters without one by
/// [`letter_fold`] (`ß` -> `ss`, `ø` -> `o`), a combining mark after an ASCII letter dropped.
/// Greek loses its accents by [`push_greek`] (`ά` -> `α`, `ς` -> `σ`). Anything else
/// (Cyrillic, CJK: no ASCII base) is only lowercased, so `й` stays `й`.
#[inline]
fn push_folded(out: &mut String, c: char) {
    if c.is_ascii() {
        out.push(c.to_ascii_lowercase());
        return;
    }
    for l in c.to_lowercase() {
        if l.is_ascii() {
            out.push(l);
        } else if let Some(s) = letter_fold(l) {
            out.push_str(s);
        } else if is_combining_mark(l) {
            if !out.ends_with(|p: char| p.is_ascii_alphanumeric() || is_greek(p)) {
                out.push(l);
            }
        } else if is_greek(l) {
            push_greek(out, l);
        } else {
            push_decomposed(out, l);
        }
    }
}

/// Appends the ASCII of `l`'s compatibility decomposition less its combining marks, or `l`
/// itself when that has a letter outside ASCII (or nothing).
fn push_decomposed(out: &mut String, l: char) {
    let start = out.len();
    let mut ascii = true;
    decompose_compatible(l, |d| {
        if d.is_ascii() {
            out.push(d.to_ascii_lowercase());
        } else if !is_combining_mark(d) {
            ascii = false;
        }
    });
    if !ascii || out.len() == start {
        out.truncate(start);
        out.push(l);
    }
}

/// Greek and Coptic, and Greek Extended (polytonic letters).
fn is_greek(c: char) -> bool {
    matches!(c as u32, 0x0370..=0x03FF | 0x1F00..=0x1FFF)
}

/// Appends a lowercase Greek letter without its accents and breathings: its decomposition less
/// combining marks (`ά` -> `α`, `ΐ` -> `ι`, `ἄ` -> `α`, `ϐ` -> `β`), final sigma as sigma (`ς` and lunate
/// `ϲ` -> `σ`, as `Σ` lowercases), so a word typed without its tonos finds the written one.
fn push_greek(out: &mut String, l: char) {
    let start = out.len();
    decompose_compatible(l, |d| {
        if d == 'ς' {
            out.push('σ');
        } else if !is_combining_mark(d) {
            out.extend(d.to_lowercase());
        }
    });
    if out.len() == start || !out[start..].chars().all(is_greek) {
        out.truncate(start);
        out.push(l);
    }
}

/// Lowercase letters with a plain Latin reading but no decomposition to one.
fn letter_fold(l: char) -> Option<&'static str> {
    Some(match l {
        'ß' => "ss",
        'æ' => "ae",
        'œ' => "oe",
        'ø' => "o",
        'ł' => "l",
        'đ' | 'ð' => "d",
        'þ' => "th",
        'ı' => "i",
        'ħ' => "h",
        'ŧ' => "t",
        'ŀ' => "l",
        'ƒ' => "f",
        _ => return None,
    })
}

thread_local! {
    static STEMS: RefCell<StemCache> = RefCell::new(StemCache::new());
}

/// A small fast hasher (FxHash's mixing) for the stem cache; SipHash showed up in profiles.
#[derive(Default, Clone, Copy)]
struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut buf = [0u8; 8];
            buf[..chunk.len()].copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(buf)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type FastMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<FxHasher>>;

struct StemCache {
    stemmer: rust_stemmers::Stemmer,
    cache: FastMap<Box<str>, Box<str>>,
}

impl StemCache {
    fn new() -> Self {
        StemCache {
            stemmer: rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English),
            // Starts empty: a short command (one search) stems a few hundred words, and a table
            // sized for indexing up front costs it ~40 page faults; indexing grows it quickly.
            cache: FastMap::default(),
        }
    }
}

/// Lowercases a part (folding its letters to ASCII where they have a plain base, see
/// [`push_folded`]) and stems it when it is an alphabetic word of 4+ letters. Returns false for
/// parts not worth a term: single ASCII characters and English function words (queries drop
/// those too, so indexing them would only cost time and space).
fn normalize_part(part: &str, out: &mut String) -> bool {
    out.clear();
    if !part.is_ascii() {
        for c in part.chars() {
            push_folded(out, c);
        }
        if !out.is_ascii() {
            return true;
        }
        // Folded to ASCII (`résumé` -> `resume`): a term as the plain word's, stemmed alike.
        let folded = std::mem::take(out);
        return normalize_ascii(&folded, out);
    }
    normalize_ascii(part, out)
}

/// [`normalize_part`] of an ASCII part.
fn normalize_ascii(part: &str, out: &mut String) -> bool {
    out.clear();
    if part.len() == 1 {
        return false;
    }
    out.push_str(part);
    out.make_ascii_lowercase();
    if out.len() <= MAX_STOPWORD_LEN && is_stopword(out) {
        return false;
    }
    if part.len() < 4 || !part.bytes().all(|b| b.is_ascii_alphabetic()) {
        return true;
    }
    STEMS.with(|cell| {
        let mut guard = cell.borrow_mut();
        let sc = &mut *guard;
        if let Some(stem) = sc.cache.get(out.as_str()) {
            out.clear();
            out.push_str(stem);
            return;
        }
        let stem: Box<str> = sc.stemmer.stem(out).into();
        if sc.cache.len() > 200_000 {
            sc.cache.clear();
        }
        sc.cache.insert(out.as_str().into(), stem.clone());
        out.clear();
        out.push_str(&stem);
    });
    true
}

/// All terms of `text`, in order (duplicates kept).
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut t = Terms::new(text);
    let mut buf = String::new();
    while t.next_into(&mut buf).is_some() {
        out.push(buf.clone());
    }
    out
}

/// Terms with their byte ranges, for highlighting.
pub fn terms_with_offsets(text: &str) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    let mut t = Terms::new(text);
    let mut buf = String::new();
    while let Some((s, e)) = t.next_into(&mut buf) {
        out.push((buf.clone(), s, e));
    }
    out
}

/// [`terms_with_offsets`] of only the words `keep` accepts (given each word's byte range in
/// `text`). A word's terms depend on that word alone, so a caller that can rule most words
/// out cheaply (the snippet's substring test) skips the analyzer for them.
pub fn terms_with_offsets_of_words(
    text: &str,
    mut keep: impl FnMut(usize, usize) -> bool,
) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    let mut words = Terms::new(text);
    let mut buf = String::new();
    while let Some((s, e)) = words.next_word() {
        if !keep(s, e) {
            continue;
        }
        let mut t = Terms::new(&text[s..e]);
        while let Some((a, b)) = t.next_into(&mut buf) {
            out.push((buf.clone(), s + a, s + b));
        }
    }
    out
}

/// The parts of one identifier, lowercased and folded as terms are ([`fold`]: `café_total` ->
/// `cafe`, `total`) but not stemmed (`getUserName` -> `get`, `user`, `name`), split by the same
/// rules as indexing. Used to match symbol names by word, so `cafe` finds `café_total`.
pub fn identifier_parts(word: &str) -> Vec<String> {
    identifier_part_spellings(word).into_iter().map(|(folded, _)| folded).collect()
}

/// Each part of [`identifier_parts`] folded and as written (lowercased only, as symbol stores
/// built before index schema 10 hold them: `café` -> (`cafe`, `café`)).
pub fn identifier_part_spellings(word: &str) -> Vec<(String, String)> {
    let mut spans = Vec::new();
    split_parts(word, 0, word.len(), &mut spans);
    spans
        .into_iter()
        .map(|(s, e)| (fold(&word[s..e]), word[s..e].to_lowercase()))
        .filter(|(p, _)| !p.is_empty())
        .collect()
}

/// English function words dropped from queries (never from the index), so a
/// plain-language question ranks on its content words.
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been", "before", "being",
    "both", "but", "by", "can", "could", "did", "do", "does", "doing", "each", "either", "even", "ever", "every",
    "few", "for", "from", "had", "has", "have", "having", "he", "her", "here", "him", "his", "how", "i", "if", "in",
    "into", "is", "it", "its", "just", "may", "me", "might", "more", "most", "much", "must", "my", "no", "nor", "not",
    "of", "on", "once", "only", "or", "other", "our", "out", "over", "own", "same", "shall", "she", "should", "so",
    "some", "such", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "those",
    "through", "to", "too", "under", "until", "up", "upon", "us", "very", "was", "we", "were", "what", "when", "where",
    "whether", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "because", "etc", "eg",
    "ie",
];

/// The distinct terms of a query. Function words are never indexed (see [`normalize_part`]),
/// so a query made only of them has no terms.
pub fn query_terms(query: &str) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut t = Terms::query(query);
    let mut out = Vec::new();
    let mut buf = String::new();
    while t.next_into(&mut buf).is_some() {
        if seen.insert(buf.clone()) {
            out.push(buf.clone());
        }
    }
    out
}

const MAX_STOPWORD_LEN: usize = 7;

fn is_stopword(word: &str) -> bool {
    static SET: std::sync::LazyLock<std::collections::HashSet<&'static str, std::hash::BuildHasherDefault<FxHasher>>> =
        std::sync::LazyLock::new(|| STOPWORDS.iter().copied().collect());
    SET.contains(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cjk_runs_are_indexed_as_character_pairs() {
        // Chinese: no spaces between words; a two-character word inside a sentence matches.
        let sentence = terms("这是对亚洲语言支持的测试");
        assert!(sentence.contains(&"测试".to_string()) && sentence.contains(&"亚洲".to_string()), "{sentence:?}");
        assert_eq!(terms("测试"), ["测试"]);
        assert_eq!(terms("中"), ["中"], "a lone ideograph is a term");
        // A run longer than the 48-byte word limit still yields its pairs.
        assert_eq!(terms(&"语言".repeat(20)).len(), 39);
        // Mixed with Latin letters: each side as usual, no pair across the boundary.
        assert_eq!(terms("parse日本語"), ["pars", "日本", "本語"], "parse is stemmed as ever");
        assert_eq!(terms("カタカナ"), ["カタ", "タカ", "カナ"]);
        assert_eq!(terms("한국어"), ["한국", "국어"]);
        // Offsets point at each pair, for highlights.
        let offs = terms_with_offsets("a 测试b");
        assert_eq!(offs.iter().map(|(t, s, e)| (t.as_str(), *s, *e)).collect::<Vec<_>>(), [("测试", 2, 8)]);
    }

    #[test]
    fn splits_identifiers_into_whole_and_parts() {
        assert_eq!(terms("getUserName"), ["getusername", "get", "user", "name"]);
        assert_eq!(terms("get_user_name"), ["getusername", "get", "user", "name"]);
        assert_eq!(terms("HTTPServer"), ["httpserver", "http", "server"]);
        assert_eq!(terms("utf8"), ["utf8", "utf"]);
        assert_eq!(terms("auth/session.rs"), ["auth", "session", "rs"]);
        assert_eq!(terms("kebab-case"), ["kebab", "case"]);
        assert_eq!(identifier_parts("HTTPServer_v2"), ["http", "server", "v", "2"]);
        assert_eq!(identifier_parts("caféTotal_Größe"), ["cafe", "total", "grosse"], "folded as terms are");
    }

    #[test]
    fn long_snake_case_names_keep_their_parts_and_blobs_stay_out() {
        let name = "test_merge_sorted_index_u64_asc_nulls_only_in_first_segment";
        assert!(name.len() > MAX_WORD_BYTES);
        let got = terms(name);
        assert!(!got.contains(&name.replace('_', "")), "the whole word is still too long: {got:?}");
        for part in ["test", "merg", "sort", "index", "64", "asc", "null", "first", "segment"] {
            assert!(got.contains(&part.to_string()), "{part} missing from {got:?}");
        }
        assert!(terms("d41d8cd98f00b204e9800998ecf8427ed41d8cd98f00b204e9800998ecf8427e").is_empty());
        assert!(terms("aGVsbG8gd29ybGQgdGhpcyBpcyBhIGxvbmcgYmFzZTY0IGJsb2I_x9f8e7d6c5b4a3f2e1d0c9b8a7").is_empty());
        assert!(terms(&"ab_".repeat(70)).is_empty(), "over the long-identifier bound");
    }

    #[test]
    fn stems_parts_but_not_whole_identifiers() {
        assert_eq!(terms("parsing"), ["pars"]);
        assert_eq!(terms("parse_configs"), ["parseconfigs", "pars", "config"]);
    }

    #[test]
    fn query_drops_function_words() {
        assert_eq!(query_terms("how does the parser handle errors"), ["parser", "handl", "error"]);
        assert!(query_terms("the").is_empty());
        assert_eq!(terms("is_valid x y2"), ["isvalid", "valid", "y2"]);
        assert_eq!(query_terms("non-ASCII: café Größe"), ["non", "ascii", "cafe", "gross"]);
        assert_eq!(terms("non-ASCII: café Größe"), ["non", "ascii", "cafe", "gross", "groess"], "umlaut variant");
    }

    /// A letter with a plain Latin base meets its ASCII spelling, in prose and identifiers, at
    /// index and query time alike (one analyzer): `cafe` finds `café` and the other way round.
    #[test]
    fn words_analyzed_alone_give_the_terms_of_the_whole_text() {
        let texts = [
            "fn getUserName(self) -> get_user_name: hoping the happy path; dying lies",
            "Über die Größe: a 测试b, CJK测试run, café_total x1 HTTPServer2 __init__",
            "e\u{301}te\u{301} naïve  résumé\tend_of_line_with_a_very_long_snake_case_identifier_name_that_goes_on",
            "",
            "  ,,, ;; ",
        ];
        for text in texts {
            assert_eq!(terms_with_offsets_of_words(text, |_, _| true), terms_with_offsets(text), "{text}");
            let kept = terms_with_offsets_of_words(text, |s, _| s == 0);
            let first_word_end = terms_with_offsets(text).iter().take_while(|(_, s, _)| *s == 0).count();
            assert_eq!(kept, terms_with_offsets(text)[..first_word_end].to_vec(), "{text}");
        }
    }

    #[test]
    fn accents_fold_to_ascii_both_ways() {
        for (accented, plain) in [
            ("café", "cafe"),
            ("résumé", "resume"),
            ("Über", "uber"),
            ("naïve", "naive"),
            ("Straße", "strasse"),
            ("Ærø", "aero"),
            ("Łódź", "lodz"),
            ("Øresund", "oresund"),
            ("Œuvre", "oeuvre"),
            ("Tiếng Việt", "tieng viet"),
            ("İstanbul ılık", "istanbul ilik"),
            ("ﬁle ﬂow", "file flow"),
            ("ÜberClient", "UberClient"),
            ("fahre_über_brücke", "fahre_uber_brucke"),
            ("ÉCOLE_NORMALE", "ECOLE_NORMALE"),
            ("Ｆｕｌｌｗｉｄｔｈ", "fullwidth"),
        ] {
            assert_eq!(query_terms(accented), query_terms(plain), "{accented} vs {plain}");
            // Indexed text has the plain word's terms (and an umlaut's transliteration besides).
            let indexed = terms(accented);
            assert!(terms(plain).iter().all(|t| indexed.contains(t)), "{accented}: {indexed:?}");
        }
        assert_eq!(query_terms("ÜberClient"), ["uberclient", "uber", "client"]);
        // Decomposed text (e + U+0301, as macOS writes names) is one word, folded the same.
        assert_eq!(terms("re\u{301}sume\u{301}"), terms("résumé"));
        assert_eq!(terms("E\u{301}COLE"), ["ecol"], "a mark is no boundary between capitals");
        // The range is the original text's, so a highlight covers the accented word.
        let offs = terms_with_offsets("un café noir");
        assert_eq!(offs[1], ("cafe".to_string(), 3, 8));
        assert_eq!(&"un café noir"[3..8], "café");
        // A single accented letter is a single letter, as its ASCII one: no term.
        assert!(terms("à é").is_empty());
    }

    /// A word with a German umlaut is also indexed as its transliteration (`ü` -> `ue`), so a
    /// query typed "ueber" finds `Über`; queries add no variant, and ASCII words never get one.
    #[test]
    fn umlauts_are_also_indexed_transliterated() {
        let indexed = |text: &str, query: &str| {
            let have = terms(text);
            let want = query_terms(query);
            !want.is_empty() && want.iter().all(|t| have.contains(t))
        };
        for (text, query) in [
            ("Über", "ueber"),
            ("Über", "uber"),
            ("die Größe", "Groesse"),
            ("Äpfel", "aepfel"),
            ("ÜberClient", "UeberClient"),
            ("ÜberClient", "ueber_client"),
            ("fahre_über_brücke", "fahreUeberBruecke"),
            ("U\u{308}bersicht", "uebersicht"),
        ] {
            assert!(indexed(text, query), "{query:?} should find {text:?}: {:?}", terms(text));
        }
        assert_eq!(terms("Über"), ["uber", "ueber"]);
        assert_eq!(query_terms("Über"), ["uber"], "a query's word counts once");
        assert_eq!(terms("ÜberClient"), ["uberclient", "ueberclient", "uber", "ueber", "client"]);
        // The variant covers the word as written, for highlights.
        assert_eq!(terms_with_offsets("a Über"), [("uber".into(), 2, 7), ("ueber".into(), 2, 7)]);
        // Only ä, ö, ü: no variant for other diaereses, nor for a lone letter or ASCII words.
        assert_eq!(terms("naïve Zoë"), ["naiv", "zoe"]);
        assert!(terms("ü").is_empty());
        assert_eq!(terms("queue blue"), ["queue", "blue"]);
    }

    /// Greek loses its accents and breathings (tonos, dialytika, polytonic marks) and writes
    /// final sigma as sigma, so a word typed without them finds the accented one.
    #[test]
    fn greek_accents_fold() {
        for (accented, plain) in [
            ("Ελληνικά", "ελληνικα"),
            ("λόγος", "ΛΟΓΟΣ"),
            ("Προϊόν", "προιον"),
            ("ἄνθρωπος", "ανθρωποσ"),
            ("ταΐζω", "ταιζω"),
            ("α\u{301}λφα", "άλφα"),
        ] {
            assert_eq!(terms(accented), terms(plain), "{accented} vs {plain}");
        }
        assert_eq!(terms("Ελληνικά"), ["ελληνικα"]);
        assert_eq!(terms("λόγος"), ["λογοσ"], "final sigma is sigma");
        assert_eq!(fold("ΐΰϲ"), "ιυσ");
        assert_eq!(terms("τονιζόμενοςΛόγος"), ["τονιζομενοσλογοσ", "τονιζομενοσ", "λογοσ"]);
    }

    /// Letters without an ASCII base (other than Greek, above) keep their marks: Cyrillic й is
    /// not и; CJK runs are character pairs as before, a kana's voicing mark kept.
    #[test]
    fn scripts_without_an_ascii_base_are_only_lowercased() {
        assert_eq!(terms("Йогурт"), ["йогурт"]);
        assert_ne!(terms("й"), terms("и"));
        assert_eq!(terms("がっこう"), ["がっ", "っこ", "こう"]);
        assert_eq!(terms("한국어"), ["한국", "국어"]);
        assert_eq!(terms("parse日本語"), ["pars", "日本", "本語"]);
    }
}
