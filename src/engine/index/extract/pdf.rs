//! PDF: the text of each page (pdf-extract over lopdf), pages in order, with the first line of
//! each page recorded so hits carry page ranges and `docdex get --page N` finds a page.

use super::{tidy_lines, Extracted, Refusal};
use pdf_extract::{Document, PlainTextOutput};

/// Pages beyond this many are not read (a 10 MB file can hold tens of thousands).
const MAX_PAGES: u32 = 5_000;

/// The most one stream may inflate to. Extraction holds a page's decoded content and its
/// parsed operators in memory (about 30 times the content for dense text), so a stream that
/// inflates past this (a few KB of zeros or repeated operators can become gigabytes) is
/// refused before anything is decoded.
const MAX_STREAM_BYTES: u64 = 16 * 1024 * 1024;
/// The most one page's content streams may inflate to together.
const MAX_PAGE_BYTES: u64 = 32 * 1024 * 1024;
/// The most all of a document's decoded streams may inflate to.
const MAX_INFLATED_BYTES: u64 = 128 * 1024 * 1024;

/// Extracts the text of every page.
pub(super) fn extract(bytes: &[u8]) -> Result<Extracted, Refusal> {
    let doc = match Document::load_mem(bytes) {
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

/// Refuses a document whose streams inflate past the bounds above, measuring each compressed
/// stream by inflating it into nothing (constant memory) before pdf-extract decodes any.
/// Images are never decoded for text and are not counted.
fn check_inflation(
    doc: &Document,
    pages: &std::collections::BTreeMap<u32, pdf_extract::ObjectId>,
) -> Result<(), Refusal> {
    let mb = |n: u64| n / (1024 * 1024);
    let mut sizes = std::collections::HashMap::new();
    let mut total = 0u64;
    for (id, object) in &doc.objects {
        let Ok(stream) = object.as_stream() else { continue };
        let image = stream.dict.get(b"Subtype").and_then(|s| s.as_name()).is_ok_and(|n| n == b"Image");
        if image {
            continue;
        }
        let size = decoded_size(stream, MAX_STREAM_BYTES + 1);
        if size > MAX_STREAM_BYTES {
            return Err(Refusal::TooLarge(format!("a stream inflates to over {} MiB", mb(MAX_STREAM_BYTES))));
        }
        total += size;
        if total > MAX_INFLATED_BYTES {
            return Err(Refusal::TooLarge(format!("its streams inflate to over {} MiB", mb(MAX_INFLATED_BYTES))));
        }
        sizes.insert(*id, size);
    }
    for (number, page) in pages {
        let content: u64 = doc.get_page_contents(*page).iter().filter_map(|id| sizes.get(id)).sum();
        if content > MAX_PAGE_BYTES {
            return Err(Refusal::TooLarge(format!(
                "page {number}'s content inflates to over {} MiB",
                mb(MAX_PAGE_BYTES)
            )));
        }
    }
    Ok(())
}

/// What a stream decodes to, counted up to `limit`: Flate (the usual compression) is inflated
/// and counted; other filters are counted at their stored size.
fn decoded_size(stream: &pdf_extract::Stream, limit: u64) -> u64 {
    use std::io::Read;
    let stored = stream.content.len() as u64;
    let flate_first = stream.filters().is_ok_and(|f| f.first().is_some_and(|n| *n == b"FlateDecode"));
    if !flate_first {
        return stored;
    }
    let mut inflater = flate2::read::ZlibDecoder::new(&stream.content[..]).take(limit);
    std::io::copy(&mut inflater, &mut std::io::sink()).unwrap_or(stored)
}
