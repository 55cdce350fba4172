//! Query syntax other search tools read, which docdex does not: `lang:rust`, `path:src`, a
//! leading `-word`, `*.rs`. Every word of a query is a ranking term, so such a query searched
//! for the words `lang` and `rust` (a filter silently not applied) or ranked files holding the
//! word it meant to exclude higher. The search is run as typed (no ranking change); its `note`
//! says what was not interpreted and what does the job instead.

/// Field prefixes that ask for a folder, and those that ask for a language.
const PATH_FIELDS: [&str; 5] = ["path", "file", "dir", "filename", "in"];
const LANG_FIELDS: [&str; 4] = ["lang", "language", "ext", "extension"];

/// The note of a query using syntax docdex does not read, or `None`.
pub fn note(query: &str) -> Option<String> {
    let mut said: Vec<String> = Vec::new();
    for word in query.split_whitespace() {
        let part = match field(word) {
            Some((f, _)) if PATH_FIELDS.contains(&f.as_str()) => {
                format!("`{word}` is not a filter (pass the folder as --path, `path_prefix` over HTTP and MCP)")
            }
            Some((f, _)) if LANG_FIELDS.contains(&f.as_str()) => {
                format!("`{word}` is not a filter (pass --lang, `lang` over HTTP and MCP)")
            }
            _ if excludes(word) => {
                format!("`{word}` does not exclude: its word is searched and ranks like any other")
            }
            _ if word.contains('*') && word.chars().any(|c| c.is_alphanumeric()) => {
                format!("`{word}` is not a pattern: `*` is not expanded (--path takes a folder)")
            }
            _ => continue,
        };
        if !said.contains(&part) {
            said.push(part);
        }
    }
    (!said.is_empty())
        .then(|| format!("search reads no query syntax, every word is a search term: {}", said.join("; ")))
}

/// `name:value` with a known field name (lower-cased) and a non-empty value; `Foo::bar` and
/// `http://x` are not fields.
fn field(word: &str) -> Option<(String, &str)> {
    let (name, value) = word.split_once(':')?;
    if value.is_empty() || value.starts_with(':') || value.starts_with('/') {
        return None;
    }
    let name = name.to_ascii_lowercase();
    (PATH_FIELDS.contains(&name.as_str()) || LANG_FIELDS.contains(&name.as_str())).then_some((name, value))
}

/// A word meant as an exclusion: `-` then a letter (`-test`), not a flag-like `--x`, a number
/// (`-1`) or a dash inside a word (`x-ray`).
fn excludes(word: &str) -> bool {
    let mut c = word.chars();
    c.next() == Some('-') && c.next().is_some_and(char::is_alphabetic)
}

#[cfg(test)]
mod tests {
    use super::note;

    #[test]
    fn syntax_is_named_and_plain_queries_get_no_note() {
        for plain in [
            "where are expired sessions removed",
            "Registry::register",
            "x-ray re-index",
            "http://example.com fetch",
            "offset -1 bug",
            "a * b",
            "fn foo(x: u32)",
        ] {
            assert_eq!(note(plain), None, "{plain}");
        }
        let n = note("lang:rust checksum").unwrap_or_default();
        assert!(n.contains("`lang:rust` is not a filter") && n.contains("--lang"), "{n}");
        let n = note("Path:src/auth session -test").unwrap_or_default();
        assert!(n.contains("`Path:src/auth`") && n.contains("--path") && n.contains("`-test` does not exclude"), "{n}");
        let n = note("src/*.rs").unwrap_or_default();
        assert!(n.contains("not expanded"), "{n}");
    }
}
