//! Short labels for library-doc citations. A passage's citation is `name@version/source`, and
//! its source is often a whole URL (`https://docs.rs/.../struct.Client.html?search=...`) or a
//! page title of a hundred characters: chat listed those in full under every answer. The label
//! keeps the package and what tells the page apart (the host and the path's last segments);
//! the full address stays in the source's `url` (and in `LibHit.source`).

/// The longest label, in characters.
pub const MAX_LABEL: usize = 64;

/// The longest note (a page title), in characters.
pub const MAX_NOTE: usize = 80;

/// `name@version/<short source>[#n]` for a citation `name@version/<source>[#n]`: a URL loses
/// its scheme, query and the middle of its path; anything still over [`MAX_LABEL`] is cut in
/// the middle. A URL is always shortened, so every page reads alike (a PyPI page's label was
/// the whole `http://host/pypi/...` when it fit); any other short citation stays as it is.
pub fn short_citation(package: &str, version: &str, source: &str, citation: &str) -> String {
    if !source.contains("://") && citation.chars().count() <= MAX_LABEL {
        return citation.to_string();
    }
    let prefix = format!("{package}@{version}/");
    // The `#n` of a second passage from one source, kept so labels stay apart.
    let seq = citation.strip_prefix(&prefix).and_then(|rest| rest.strip_prefix(source)).unwrap_or("");
    let label = format!("{prefix}{}{seq}", short_source(source));
    middle_cut(&label, MAX_LABEL)
}

/// A title in at most [`MAX_NOTE`] characters, cut at a word with `…`.
pub fn short_note(title: &str) -> String {
    let title = title.trim();
    if title.chars().count() <= MAX_NOTE {
        return title.to_string();
    }
    let head: String = title.chars().take(MAX_NOTE - 1).collect();
    let cut = head.rfind(' ').filter(|i| *i > MAX_NOTE / 2).map_or(head.as_str(), |i| &head[..i]);
    format!("{}…", cut.trim_end())
}

/// A URL as host and the last two segments of its path (`docs.rs/…/serde/trait.Serialize.html`),
/// without scheme or query; a fragment (the file in a tarball) is kept. Not a URL: as it is.
fn short_source(source: &str) -> String {
    let Some((_, rest)) = source.split_once("://") else { return source.to_string() };
    let (rest, fragment) = match rest.split_once('#') {
        Some((r, f)) => (r, format!("#{f}")),
        None => (rest, String::new()),
    };
    let rest = rest.split(['?', ';']).next().unwrap_or(rest);
    let mut parts = rest.split('/').filter(|p| !p.is_empty());
    let host = parts.next().unwrap_or("");
    let segments: Vec<&str> = parts.collect();
    let path = match segments.len() {
        0 => String::new(),
        1 | 2 => format!("/{}", segments.join("/")),
        n => format!("/…/{}", segments[n - 2..].join("/")),
    };
    format!("{host}{path}{fragment}")
}

/// `s` in at most `max` characters, its middle replaced by `…`: the package in front and the
/// page's name at the end both stay.
fn middle_cut(s: &str, max: usize) -> String {
    let chars: Vec<char> = s.chars().collect();
    if chars.len() <= max {
        return s.to_string();
    }
    let keep = max.saturating_sub(1);
    let head = keep / 2;
    let tail = keep - head;
    let mut out: String = chars[..head].iter().collect();
    out.push('…');
    out.extend(&chars[chars.len() - tail..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_docs_url_with_a_query_becomes_host_and_page() {
        let source = "https://docs.rs/reqwest/0.12.9/reqwest/blocking/struct.Client.html?search=timeout&utm_source=docdex&utm_medium=chat";
        let citation = format!("reqwest@0.12.9/{source}");
        let label = short_citation("reqwest", "0.12.9", source, &citation);
        assert_eq!(label, "reqwest@0.12.9/docs.rs/…/blocking/struct.Client.html");
        assert!(label.chars().count() <= MAX_LABEL);
        // The second passage of one page keeps its number.
        let second = short_citation("reqwest", "0.12.9", source, &format!("{citation}#2"));
        assert_eq!(second, "reqwest@0.12.9/docs.rs/…/blocking/struct.Client.html#2");
    }

    #[test]
    fn a_short_url_is_shortened_too() {
        let source = "http://127.0.0.1:8768/pypi/fakepkg/1.0.0/json";
        let citation = format!("fakepkg@1.0.0/{source}");
        assert!(citation.chars().count() <= MAX_LABEL);
        assert_eq!(short_citation("fakepkg", "1.0.0", source, &citation), "fakepkg@1.0.0/127.0.0.1:8768/…/1.0.0/json");
        let home = "https://example.org/";
        assert_eq!(short_citation("a", "1.0.0", home, &format!("a@1.0.0/{home}#2")), "a@1.0.0/example.org#2");
    }

    #[test]
    fn short_citations_and_paths_stay_as_they_are_and_long_ones_are_cut_in_the_middle() {
        assert_eq!(
            short_citation("serde", "1.0.0", "src/lib.rs", "serde@1.0.0/src/lib.rs#3"),
            "serde@1.0.0/src/lib.rs#3"
        );
        let deep = format!("{}/mod.rs", ["very_long_module_name"; 6].join("/"));
        let label = short_citation("x", "1.0.0", &deep, &format!("x@1.0.0/{deep}"));
        assert_eq!(label.chars().count(), MAX_LABEL);
        assert!(label.starts_with("x@1.0.0/very") && label.ends_with("/mod.rs") && label.contains('…'), "{label}");
    }

    #[test]
    fn a_tarball_keeps_the_file_inside_it() {
        let source = "https://registry.npmjs.org/left-pad-with-a-long-name/-/left-pad-with-a-long-name-1.3.0.tgz#package/README.md";
        let label = short_citation(
            "left-pad-with-a-long-name",
            "1.3.0",
            source,
            &format!("left-pad-with-a-long-name@1.3.0/{source}"),
        );
        assert!(label.ends_with("#package/README.md"), "{label}");
        assert!(label.chars().count() <= MAX_LABEL, "{label}");
    }

    #[test]
    fn a_long_title_is_cut_at_a_word() {
        let title = "Client in reqwest::blocking - Rust: A `Client` to make Requests with, which holds a connection pool internally";
        let note = short_note(title);
        assert!(note.chars().count() <= MAX_NOTE && note.ends_with('…'), "{note}");
        assert!(title.starts_with(note.trim_end_matches('…')), "{note}");
        assert!(!note.trim_end_matches('…').ends_with(' '));
        assert_eq!(short_note(" README "), "README");
    }
}
