//! HTML: the readable text as Markdown, through the web tier's extraction (Readability, with
//! the page's body text as the fallback), so a page reads the same indexed or fetched.

use super::{tidy_lines, Extracted};

/// Pages larger than this are read flat (their text, no Readability): parsing and
/// Readability were superlinear on large files (9.5 MB of `&amp;` took 48 s, 2 MB 2.5 s).
const MAX_READABLE_BYTES: usize = 2 * 1024 * 1024;
/// A tag with more attributes than this is read flat: the parser compares each attribute with
/// every one before it (one tag of 600,000 attributes, 7 MB, ran for minutes).
const MAX_ATTRIBUTES: usize = 1_000;

/// Extracts the readable text of an HTML file in its character set (its BOM or `<meta
/// charset>`, else UTF-8; never fails, may be empty).
pub(super) fn extract(bytes: &[u8]) -> Extracted {
    use crate::engine::web::{extract::Extracted as Page, shallow};
    let html = crate::engine::web::fetch::decode_text(bytes, "");
    let page = if html.len() > MAX_READABLE_BYTES || attributes_over(html.as_bytes(), MAX_ATTRIBUTES) {
        tracing::debug!("large HTML or a tag of over {MAX_ATTRIBUTES} attributes: read flat");
        let (title, markdown) = shallow::flat_text(&html);
        Page { title, markdown, readable: false }
    } else {
        crate::engine::web::extract::extract(&html, "file:///document.html")
    };
    let mut text = String::new();
    // A file with nothing readable has no text, whatever its title says.
    if page.markdown.trim().is_empty() {
        return Extracted::default();
    }
    if !page.title.is_empty() && !says_title(&page.markdown, &page.title) {
        text.push_str("# ");
        text.push_str(&page.title);
        text.push_str("\n\n");
    }
    text.push_str(&page.markdown);
    let mut out = Extracted::default();
    tidy_lines(text.lines(), &mut out.text);
    out
}

/// Whether some tag of `html` has more than `limit` attributes, by one linear pass (quoted
/// values skipped; comments and scripts may over-count, which only reads a page flat).
fn attributes_over(html: &[u8], limit: usize) -> bool {
    let (mut in_tag, mut quote, mut count) = (false, 0u8, 0usize);
    let mut prev = b' ';
    for &c in html {
        match (in_tag, quote, c) {
            (false, _, b'<') => (in_tag, count) = (true, 0),
            (true, 0, b'>') => in_tag = false,
            (true, 0, b'"' | b'\'') => quote = c,
            (true, q, _) if q != 0 && c == q => quote = 0,
            (true, 0, _) if prev.is_ascii_whitespace() && !c.is_ascii_whitespace() && c != b'/' => {
                count += 1;
                if count > limit {
                    return true;
                }
            }
            _ => {}
        }
        prev = c;
    }
    false
}

/// Whether the page's first line is a heading holding every word of its `<title>`: then the
/// title would only repeat it. A title with words of its own (a site name, a section) is kept.
fn says_title(markdown: &str, title: &str) -> bool {
    let first = markdown.trim_start().lines().next().unwrap_or("");
    if !first.starts_with('#') {
        return false;
    }
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
    };
    let heading = words(first);
    words(title).iter().all(|w| heading.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_title_is_kept_unless_the_first_heading_says_it() {
        let page = |title: &str, h1: &str| {
            format!(
                "<html><head><title>{title}</title></head><body><article><h1>{h1}</h1>\
                <p>Pangolins eat ants and termites; keepers weigh them every week at dawn.</p>\
                <p>Their scales are keratin, the same protein as hair and nails.</p></article></body></html>"
            )
        };
        for (title, h1) in [("Zoo handbook", "Pangolin care"), ("Zoo handbook: pangolin care", "Pangolin care")] {
            let text = extract(page(title, h1).as_bytes()).text.to_lowercase();
            assert!(text.contains("zoo handbook"), "the title's own words are indexed: {text}");
            assert!(text.contains("pangolin care") && text.contains("termites"), "{text}");
        }
        let text = extract(page("Pangolin care", "Pangolin care").as_bytes()).text.to_lowercase();
        assert_eq!(text.matches("pangolin care").count(), 1, "a title the heading repeats is not doubled: {text}");
    }

    #[test]
    fn attributes_are_counted_per_tag_outside_quotes() {
        assert!(!attributes_over(br#"<p a="1 2 3 4" b='x y'>one two three four</p>"#, 2));
        assert!(attributes_over(b"<p a b c>text</p>", 2));
        assert!(!attributes_over(b"<p a b> c d e f g </p><q x y>", 2));
    }
}
