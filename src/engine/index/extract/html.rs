//! HTML: the readable text as Markdown, through the web tier's extraction (Readability, with
//! the page's body text as the fallback), so a page reads the same indexed or fetched.

use super::{tidy_lines, Extracted};

/// Extracts the readable text of an HTML file (lossy UTF-8; never fails, may be empty).
pub(super) fn extract(bytes: &[u8]) -> Extracted {
    let html = String::from_utf8_lossy(bytes);
    let page = crate::engine::web::extract::extract(&html, "file:///document.html");
    let mut text = String::new();
    // With no body text, the web tier keeps the input as it is (a plain-text page); a file that
    // is markup with nothing readable has no text.
    if !page.readable && page.markdown.trim_start().starts_with('<') {
        return Extracted::default();
    }
    if !page.title.is_empty() && !page.markdown.trim_start().starts_with('#') {
        text.push_str("# ");
        text.push_str(&page.title);
        text.push_str("\n\n");
    }
    text.push_str(&page.markdown);
    let mut out = Extracted::default();
    tidy_lines(text.lines(), &mut out.text);
    out
}
