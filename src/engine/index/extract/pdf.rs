//! PDF: the text of each page (pdf-extract over lopdf), pages in order, with the first line of
//! each page recorded so hits carry page ranges and `docdex get --page N` finds a page.

use super::pdf_bound::{check_inflation, drop_images, load_options};
use super::{tidy_lines, Extracted, Refusal};
use pdf_extract::{Document, PlainTextOutput};

/// Pages beyond this many are not read (a 10 MB file can hold tens of thousands).
const MAX_PAGES: u32 = 5_000;

/// Extracts the text of every page.
pub(super) fn extract(bytes: &[u8]) -> Result<Extracted, Refusal> {
    super::pdf_scan::check_xref(bytes)?;
    let mut doc = match Document::load_mem_with_options(bytes, load_options()) {
        Ok(d) => d,
        Err(_) if memchr::memmem::find(bytes, b"/Encrypt").is_some() => return Err(Refusal::Encrypted),
        Err(e) => return Err(Refusal::Corrupt(e.to_string())),
    };
    // Loaded but not decrypted: the empty user password did not open it. (`is_encrypted` only
    // sees an encryption dictionary by reference; one written in the trailer itself counts too.)
    if (doc.is_encrypted() || doc.trailer.get(b"Encrypt").is_ok()) && !doc.was_encrypted() {
        return Err(Refusal::Encrypted);
    }
    let pages = doc.get_pages();
    if pages.is_empty() {
        return Err(Refusal::Corrupt("no pages".into()));
    }
    drop_images(&mut doc);
    let sizes = check_inflation(&doc, &pages)?;
    super::pdf_work::check_work(&doc, &pages, &sizes, MAX_PAGES as usize)?;
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
