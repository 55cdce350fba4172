//! PDF: the text of each page (pdf-extract over lopdf), pages in order, with the first line of
//! each page recorded so hits carry page ranges and `docdex get --page N` finds a page.

use super::{tidy_lines, Extracted, Refusal};
use pdf_extract::{Document, PlainTextOutput};

/// Pages beyond this many are not read (a 10 MB file can hold tens of thousands).
const MAX_PAGES: u32 = 5_000;

/// Extracts the text of every page.
pub(super) fn extract(bytes: &[u8]) -> Result<Extracted, Refusal> {
    let doc = match Document::load_mem(bytes) {
        Ok(d) => d,
        Err(_) if memchr::memmem::find(bytes, b"/Encrypt").is_some() => return Err(Refusal::Encrypted),
        Err(e) => return Err(Refusal::Corrupt(e.to_string())),
    };
    // Loaded but not decrypted: the empty user password did not open it.
    if doc.is_encrypted() && !doc.was_encrypted() {
        return Err(Refusal::Encrypted);
    }
    let pages = doc.get_pages();
    if pages.is_empty() {
        return Err(Refusal::Corrupt("no pages".into()));
    }
    let mut out = Extracted::default();
    let mut lines = 0u32;
    let mut failed = 0usize;
    for (&number, _) in pages.iter().take(MAX_PAGES as usize) {
        let mut page = String::new();
        let ok = {
            let mut sink = PlainTextOutput::new(&mut page);
            pdf_extract::output_doc_page(&doc, &mut sink, number).is_ok()
        };
        if !ok {
            failed += 1;
            page.clear();
        }
        if lines > 0 && !page.trim().is_empty() {
            out.text.push('\n'); // a blank line between pages
            lines += 1;
        }
        out.pages.push(lines + 1);
        lines += tidy_lines(page.lines(), &mut out.text);
    }
    if out.text.trim().is_empty() && failed == pages.len().min(MAX_PAGES as usize) {
        return Err(Refusal::Corrupt("no page could be read".into()));
    }
    Ok(out)
}
