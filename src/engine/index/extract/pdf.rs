//! PDF: the text of each page (pdf-extract over lopdf; a page in two columns column by column,
//! see `pdf_text`), pages in order, with the first line of
//! each page recorded so hits carry page ranges and `docdex get --page N` finds a page.

use super::pdf_bound::{check_inflation, drop_images};
use super::pdf_tree::{flatten, reachable_pages};
use super::{tidy_lines, Extracted, Refusal};
use pdf_extract::Document;

/// Pages beyond this many are not read (a 10 MB file can hold tens of thousands).
const MAX_PAGES: u32 = 5_000;

/// The pages extraction reads (at most [`MAX_PAGES`]), the page tree cut to them, and a note
/// naming the loop when the page tree loops (its pages outside the loop are read).
fn pages_to_read(
    doc: &mut Document,
) -> Result<(std::collections::BTreeMap<u32, pdf_extract::ObjectId>, Option<String>), Refusal> {
    let (reachable, looped) = reachable_pages(doc);
    if let Some(tree_loop) = looped {
        if reachable.is_empty() {
            return Err(Refusal::Corrupt(format!("{}, and no page is outside the loop", tree_loop.words())));
        }
        flatten(doc, reachable.iter().copied().take(MAX_PAGES as usize));
        let n = reachable.len().min(MAX_PAGES as usize);
        let note = format!(
            "{}; the {n} page{} outside the loop {} read (the file is malformed: re-saving it, or printing it to PDF, repairs it)",
            tree_loop.words(),
            if n == 1 { "" } else { "s" },
            if n == 1 { "is" } else { "are" },
        );
        return Ok((doc.get_pages(), Some(note)));
    }
    let pages = doc.get_pages();
    if pages.is_empty() {
        return Err(Refusal::Corrupt("no pages".into()));
    }
    if pages.len() <= MAX_PAGES as usize {
        return Ok((pages, None));
    }
    // pdf-extract walks the whole tree again for every page it reads, so 40,000 pages (a
    // 3.5 MB file) took over a minute for the 5,000 read: it walks only the pages read.
    flatten(doc, pages.values().copied().take(MAX_PAGES as usize));
    Ok((doc.get_pages(), None))
}

/// The most `/Parent` links followed up from a page: a balanced tree of a million pages is
/// some ten levels deep.
const MAX_PARENT_DEPTH: usize = 64;

/// Cuts every page's `/Parent` chain where it loops or passes [`MAX_PARENT_DEPTH`] links.
/// pdf-extract looks up an inherited attribute (`/MediaBox`, `/Resources`) by recursing up
/// `/Parent` with no check, so two page-tree nodes naming each other as parent (a 700-byte
/// file) overflowed the stack and aborted the whole index run. The node whose link closes the
/// loop keeps no parent; what it inherited before the loop it still inherits.
fn cut_parent_loops(doc: &mut Document, pages: &std::collections::BTreeMap<u32, pdf_extract::ObjectId>) {
    for &page in pages.values() {
        let mut seen = std::collections::HashSet::from([page]);
        let mut node = page;
        while let Some(parent) = doc.get_dictionary(node).ok().and_then(|d| d.get(b"Parent").ok()?.as_reference().ok())
        {
            if seen.len() > MAX_PARENT_DEPTH || !seen.insert(parent) {
                tracing::debug!(?node, ?parent, "PDF page tree: /Parent loop or chain cut");
                if let Ok(dict) = doc.get_dictionary_mut(node) {
                    dict.remove(b"Parent");
                }
                break;
            }
            node = parent;
        }
    }
}

/// Gives a page that neither has nor inherits a `/MediaBox` (an array) US Letter's, as
/// lenient readers do: pdf-extract panics without one, so one such page made the whole file
/// `the parser failed on this file`, naming nothing (tour25 F3). Runs after
/// [`cut_parent_loops`], so every chain ends.
fn default_media_box(doc: &mut Document, pages: &std::collections::BTreeMap<u32, pdf_extract::ObjectId>) {
    use pdf_extract::Object;
    for &page in pages.values() {
        let mut node = Some(page);
        let mut found = false;
        while let Some(dict) = node.and_then(|id| doc.get_dictionary(id).ok()) {
            let media_box = dict.get(b"MediaBox").ok().map(|o| doc.dereference(o).map(|(_, o)| o));
            if media_box.is_some_and(|o| o.is_ok_and(|o| o.as_array().is_ok())) {
                found = true;
                break;
            }
            node = dict.get(b"Parent").ok().and_then(|p| p.as_reference().ok());
        }
        if !found {
            if let Ok(dict) = doc.get_dictionary_mut(page) {
                let letter = [0, 0, 612, 792].map(Object::Integer).to_vec();
                dict.set("MediaBox", Object::Array(letter));
            }
        }
    }
}

/// Extracts the text of every page.
pub(super) fn extract(bytes: &[u8]) -> Result<Extracted, Refusal> {
    super::pdf_scan::check_xref(bytes)?;
    let mut doc = super::pdf_load::load(bytes)?;
    // Loaded but not decrypted: the empty user password did not open it. (`is_encrypted` only
    // sees an encryption dictionary by reference; one written in the trailer itself counts too.)
    if (doc.is_encrypted() || doc.trailer.get(b"Encrypt").is_ok()) && !doc.was_encrypted() {
        return Err(Refusal::Encrypted);
    }
    let (pages, note) = pages_to_read(&mut doc)?;
    cut_parent_loops(&mut doc, &pages);
    default_media_box(&mut doc, &pages);
    drop_images(&mut doc);
    let sizes = check_inflation(&doc, &pages)?;
    super::pdf_work::check_work(&doc, &pages, &sizes, MAX_PAGES as usize)?;
    let mut out = Extracted { notes: note.into_iter().collect(), ..Extracted::default() };
    let mut lines = 0u32;
    let mut failed = 0usize;
    for (&number, _) in pages.iter().take(MAX_PAGES as usize) {
        let mut sink = super::pdf_text::PageText::new();
        let ok = pdf_extract::output_doc_page(&doc, &mut sink, number).is_ok();
        let page = if ok { sink.finish() } else { String::new() };
        if !ok {
            failed += 1;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_tree_pdf_extract_walks_holds_only_the_pages_read() {
        let n = MAX_PAGES as usize + 1_000;
        let mut doc = Document::with_version("1.5");
        let tree = doc.new_object_id();
        let page = |doc: &mut Document, i: usize| {
            let mut d = pdf_extract::Dictionary::new();
            d.set("Type", pdf_extract::Object::Name(b"Page".to_vec()));
            d.set("Parent", pdf_extract::Object::Reference(tree));
            d.set("Rotate", pdf_extract::Object::Integer(i as i64));
            pdf_extract::Object::Reference(doc.add_object(d))
        };
        let kids: Vec<_> = (0..n).map(|i| page(&mut doc, i)).collect();
        let mut pages = pdf_extract::Dictionary::new();
        pages.set("Type", pdf_extract::Object::Name(b"Pages".to_vec()));
        pages.set("Count", pdf_extract::Object::Integer(n as i64));
        pages.set("Kids", pdf_extract::Object::Array(kids));
        doc.objects.insert(tree, pdf_extract::Object::Dictionary(pages));
        let mut catalog = pdf_extract::Dictionary::new();
        catalog.set("Type", pdf_extract::Object::Name(b"Catalog".to_vec()));
        catalog.set("Pages", pdf_extract::Object::Reference(tree));
        let root = doc.add_object(catalog);
        doc.trailer.set("Root", pdf_extract::Object::Reference(root));
        let (read, note) = pages_to_read(&mut doc).unwrap();
        assert_eq!(note, None);
        assert_eq!(read.len(), MAX_PAGES as usize);
        assert_eq!(doc.get_pages().len(), MAX_PAGES as usize, "what pdf-extract walks per page");
        let last = doc.get_dictionary(read[&MAX_PAGES]).unwrap();
        assert_eq!(last.get(b"Rotate").unwrap().as_i64().unwrap(), i64::from(MAX_PAGES) - 1, "in order");
    }
}
