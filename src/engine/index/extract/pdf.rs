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
    check_inflation(&doc, &pages)?;
    check_forms(&doc)?;
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

/// How deeply Form XObjects may draw one another (real documents nest a few).
const MAX_FORM_DEPTH: usize = 32;

/// Refuses a document whose Form XObjects draw themselves (directly or round a loop) or nest
/// deeper than [`MAX_FORM_DEPTH`]: pdf-extract follows them recursively, so a form that drew
/// itself overflowed the stack and aborted docdex.
fn check_forms(doc: &Document) -> Result<(), Refusal> {
    use std::collections::HashMap;
    let mut forms: HashMap<pdf_extract::ObjectId, Vec<pdf_extract::ObjectId>> = HashMap::new();
    for (id, object) in &doc.objects {
        let Ok(stream) = object.as_stream() else { continue };
        if stream.dict.get(b"Subtype").and_then(|s| s.as_name()).is_ok_and(|n| n == b"Form") {
            forms.insert(*id, form_children(doc, &stream.dict));
        }
    }
    // Longest chain from each form, iteratively (0 = unseen, 1 = on the path, 2 = done).
    let mut state: HashMap<pdf_extract::ObjectId, (u8, usize)> = HashMap::new();
    for start in forms.keys() {
        let mut path = vec![(*start, 0usize)];
        while let Some(&(id, next)) = path.last() {
            if next == 0 {
                state.insert(id, (1, 0));
            }
            let children = forms.get(&id).map(Vec::as_slice).unwrap_or(&[]);
            match children.get(next) {
                Some(child) => {
                    if let Some(top) = path.last_mut() {
                        top.1 += 1;
                    }
                    match state.get(child).map(|s| s.0) {
                        Some(1) => return Err(Refusal::Corrupt("a form XObject draws itself".into())),
                        Some(_) => {}
                        None if forms.contains_key(child) => path.push((*child, 0)),
                        None => {}
                    }
                }
                None => {
                    let depth = 1 + children.iter().filter_map(|c| state.get(c)).map(|s| s.1).max().unwrap_or(0);
                    if depth > MAX_FORM_DEPTH {
                        return Err(Refusal::Corrupt(format!(
                            "form XObjects nest deeper than {MAX_FORM_DEPTH} levels"
                        )));
                    }
                    state.insert(id, (2, depth));
                    path.pop();
                }
            }
        }
    }
    Ok(())
}

/// The XObjects a form's resources name (by reference).
fn form_children(doc: &Document, dict: &pdf_extract::Dictionary) -> Vec<pdf_extract::ObjectId> {
    let Some(resources) = dict.get(b"Resources").ok().and_then(|o| deref_dict(doc, o)) else { return Vec::new() };
    let Some(xobjects) = resources.get(b"XObject").ok().and_then(|o| deref_dict(doc, o)) else { return Vec::new() };
    xobjects.iter().filter_map(|(_, v)| v.as_reference().ok()).collect()
}

fn deref_dict<'a>(doc: &'a Document, o: &'a pdf_extract::Object) -> Option<&'a pdf_extract::Dictionary> {
    doc.dereference(o).ok().and_then(|(_, o)| o.as_dict().ok())
}
