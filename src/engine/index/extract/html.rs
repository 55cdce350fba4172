//! HTML: the readable text as Markdown, through the web tier's extraction (Readability, with
//! the page's body text as the fallback), so a page reads the same indexed or fetched.

use super::{tidy_lines, Extracted};

/// Extracts the readable text of an HTML file in its character set (its BOM or `<meta
/// charset>`, else UTF-8; never fails, may be empty). A page too costly to parse is read flat
/// by the web tier's extraction itself.
pub(super) fn extract(bytes: &[u8]) -> Extracted {
    let html = crate::engine::web::fetch::decode_text(bytes, "");
    let page = crate::engine::web::extract::extract(&html, "file:///document.html");
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
}
