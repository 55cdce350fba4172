//! Bounds on the work one request may ask for, checked at the engine's edge so every surface
//! (command line, HTTP, MCP, TUI) gets the same answer. A query is analysed term by term and
//! each distinct term becomes clauses over three fields: a 2 MiB query of 300,000 distinct words
//! once took 13 s and 1.9 GB of memory. Past these limits a request is refused with an error
//! naming the limit (HTTP 400, exit code 2); chat, whose question may be long prose, searches with
//! the part of it that fits instead.

use crate::engine::analysis;
use crate::error::{Error, Result};
use std::borrow::Cow;

/// The longest query, in bytes (UTF-8).
pub const MAX_QUERY_BYTES: usize = 4096;
/// The most distinct terms a query may have after analysis (identifier parts and stems count).
pub const MAX_QUERY_TERMS: usize = 128;

/// A count a request asks for (`name` `given`, `default` when absent), refused outside 1..=`max`
/// on every surface: a 0 taken as 1, or 20,000 as 10,000, would answer something other than what
/// was asked, and the command line refuses both.
pub fn count_in_range(name: &str, given: Option<usize>, default: usize, max: usize) -> Result<usize> {
    match given.unwrap_or(default) {
        n if (1..=max).contains(&n) => Ok(n),
        n => Err(Error::BadRequest(format!("{name} {n} is out of range: give 1 to {max}"))),
    }
}

/// [`count_in_range`] for a count typed on the command line, where a negative one is read as
/// a number (`-n -5`, not an unknown flag `-5`) and refused with the same words.
pub fn signed_count_in_range(name: &str, given: i64, max: usize) -> Result<usize> {
    match usize::try_from(given) {
        Ok(n) => count_in_range(name, Some(n), n, max),
        Err(_) => Err(Error::BadRequest(format!("{name} {given} is out of range: give 1 to {max}"))),
    }
}

/// The longest symbol name a symbol or AST query may look for (qualified names included):
/// fuzzy matching compares it with every stored name.
pub const MAX_SYMBOL_QUERY_BYTES: usize = 256;

/// The most distinct node kinds one AST search or query takes. Each is a condition over every
/// file's stored kinds; without a bound, a 1.5 MB body of 100,000 kinds held a worker for 47 s
/// (their duplicates were removed by comparing each with every other).
pub const MAX_AST_KINDS: usize = 64;

/// Refuses a symbol name over [`MAX_SYMBOL_QUERY_BYTES`].
pub fn check_symbol_query(name: &str) -> Result<()> {
    if name.len() > MAX_SYMBOL_QUERY_BYTES {
        return Err(Error::BadRequest(format!(
            "symbol name too long: {} bytes; the limit is {MAX_SYMBOL_QUERY_BYTES} bytes",
            name.len()
        )));
    }
    Ok(())
}

/// Refuses a query over [`MAX_QUERY_BYTES`] or [`MAX_QUERY_TERMS`]. The length is checked
/// first, so an oversized query costs nothing to refuse.
pub fn check_query(query: &str) -> Result<()> {
    if query.len() > MAX_QUERY_BYTES {
        return Err(Error::BadRequest(format!(
            "query too long: {} bytes; the limit is {MAX_QUERY_BYTES} bytes (describe the task in fewer words)",
            query.len()
        )));
    }
    let terms = analysis::query_terms(query).len();
    if terms > MAX_QUERY_TERMS {
        return Err(Error::BadRequest(too_many_terms(query, terms)));
    }
    Ok(())
}

/// Says the refusal in what the user gave, words, as well as in search terms: "390 distinct
/// terms" for a 200-word query read as a miscount, since a word can make several terms (the
/// parts of `parseHttpHeader`, a number split from letters, CJK character pairs).
fn too_many_terms(query: &str, terms: usize) -> String {
    let words = query.split_whitespace().count().max(1);
    // As many words as, at this query's terms per word, stay within the limit.
    let fit = (words * MAX_QUERY_TERMS / terms).max(1);
    format!(
        "query too long: its {} make {terms} distinct search terms (a word can make several: \
         identifier parts, numbers, CJK character pairs); the limit is {MAX_QUERY_TERMS} terms, \
         about {} like these: describe the task in fewer words",
        crate::engine::fsutil::count(words, "word"),
        crate::engine::fsutil::count(fit, "word"),
    )
}

/// The longest prefix of `query` (cut at a word boundary) within both limits: what chat
/// searches with when a question is longer than a search may be.
pub fn fit_query(query: &str) -> Cow<'_, str> {
    if check_query(query).is_ok() {
        return Cow::Borrowed(query);
    }
    let mut end = floor_boundary(query, MAX_QUERY_BYTES);
    loop {
        let cut = &query[..end];
        // Back off to the last whitespace, so no word is cut in half.
        let cut = cut.rfind(char::is_whitespace).map_or(cut, |i| &query[..i]);
        let terms = analysis::query_terms(cut).len();
        if terms <= MAX_QUERY_TERMS || cut.is_empty() {
            return Cow::Owned(cut.to_string());
        }
        // Shrink in proportion to the excess (never by less than one byte), then re-check.
        let target = (cut.len() * MAX_QUERY_TERMS / terms).min(cut.len().saturating_sub(1));
        end = floor_boundary(query, target);
    }
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_out_of_range_is_refused_naming_the_range() {
        assert_eq!(count_in_range("limit", None, 10, 100).unwrap(), 10);
        assert_eq!(count_in_range("limit", Some(100), 10, 100).unwrap(), 100);
        for bad in [0, 101] {
            let e = count_in_range("top", Some(bad), 10, 100).unwrap_err();
            assert_eq!(e.to_string(), format!("top {bad} is out of range: give 1 to 100"));
        }
    }

    #[test]
    fn long_or_wordy_queries_are_refused_naming_the_limit() {
        assert!(check_query("where are sessions expired").is_ok());
        let long = "a".repeat(MAX_QUERY_BYTES + 1);
        let e = check_query(&long).unwrap_err().to_string();
        assert!(e.contains("4096 bytes"), "{e}");
        let wordy: String = (0..200).map(|i| format!("w{i}x ")).collect();
        assert!(wordy.len() < MAX_QUERY_BYTES);
        let e = check_query(&wordy).unwrap_err().to_string();
        assert!(e.contains("limit is 128"), "{e}");
    }

    #[test]
    fn a_wordy_query_is_refused_counting_the_words_given_and_how_many_fit() {
        // 200 words that make 400 terms (`w17x` is `w`, `17`, `x` less the repeats): the message
        // said "too many distinct terms: 390" for 200 words, which read as a miscount.
        let wordy: String = (0..200).map(|i| format!("alpha{i}beta ")).collect();
        let terms = analysis::query_terms(&wordy).len();
        assert!(terms > 200, "{terms}");
        let e = check_query(&wordy).unwrap_err().to_string();
        assert!(e.contains("its 200 words make ") && e.contains(&format!("make {terms} distinct search terms")), "{e}");
        let fit = 200 * MAX_QUERY_TERMS / terms;
        assert!(e.contains(&format!("the limit is 128 terms, about {fit} words like these")), "{e}");
        let cut: String = (0..fit).map(|i| format!("alpha{i}beta ")).collect();
        assert!(check_query(&cut).is_ok(), "the advice is true: {fit} such words pass");
    }

    #[test]
    fn fitting_keeps_a_prefix_within_both_limits() {
        let wordy: String = (0..2000).map(|i| format!("wörd{i}q ")).collect();
        let fit = fit_query(&wordy);
        assert!(check_query(&fit).is_ok());
        assert!(wordy.starts_with(fit.as_ref()) && fit.len() > 100, "{}", fit.len());
        assert!(matches!(fit_query("short question"), Cow::Borrowed(_)));
    }
}
