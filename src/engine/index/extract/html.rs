//! HTML: the readable text as Markdown, through the web tier's extraction (Readability, with
//! the page's body text as the fallback), so a page reads the same indexed or fetched.

use super::{tidy_lines, Extracted};

/// Extracts the readable text of an HTML file in its character set (its BOM or `<meta
/// charset>`, else UTF-8; never fails, may be empty). A page too costly to parse is read flat
/// by the web tier's extraction itself.
pub(super) fn extract(bytes: &[u8]) -> Extracted {
    let html = crate::engine::web::fetch::decode_text(bytes, "");
    let page = crate::engine::web::extract::extract_document(&html);
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

    /// Relative links and images were made absolute against a made-up `file:///document.html`,
    /// so an indexed guide read `[the guide](file:///care/feeding.html)`, a path that is
    /// nowhere; they stay as the document wrote them. A definition list's term was glued to its
    /// description ("Scalea plate of keratin"); each is a line of its own now, in an article
    /// (Readability) and in a page read whole (the fallback) alike.
    #[test]
    fn relative_links_stay_relative_and_definitions_are_separated() {
        let article = r##"<html><head><title>Guide</title></head><body><article><h1>Guide</h1>
<p>Pangolins eat ants and termites; keepers weigh them every week at dawn. See <a href="care/feeding.html">the
feeding guide</a>, <a href="../index.html#top">home</a>, <a href="https://example.org/x">elsewhere</a> and <a href="#sec">below</a>.</p>
<img src="img/pangolin.png" alt="a pangolin">
<dl><dt>Scale</dt><dd>a plate of keratin</dd><dt>Claw</dt><dd>used to dig</dd></dl>
<p>Their scales are keratin, the same protein as hair and nails, and they roll into a ball.</p></article></body></html>"##;
        let short = r#"<html><body><p>See <a href="a.html">Alpha</a></p><dl><dt>Term</dt><dd>description</dd></dl></body></html>"#;
        for html in [article, short] {
            let text = extract(html.as_bytes()).text;
            assert!(!text.contains("file://"), "{text}");
            assert!(!text.contains("Scalea plate") && !text.contains("Termdescription"), "{text}");
        }
        let text = extract(article.as_bytes()).text;
        for kept in
            ["(care/feeding.html)", "(../index.html#top)", "(https://example.org/x)", "(#sec)", "(img/pangolin.png)"]
        {
            assert!(text.contains(kept), "{kept}: {text}");
        }
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        assert!(lines.contains(&"Scale") && lines.contains(&"a plate of keratin"), "{text}");
        let text = extract(short.as_bytes()).text;
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        assert!(text.contains("(a.html)") && lines.contains(&"Term") && lines.contains(&"description"), "{text}");
    }
}
