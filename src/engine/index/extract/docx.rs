//! DOCX: the document body as Markdown. Heading styles become `#` headings (the Markdown
//! chunker then cuts by section), list paragraphs become `-` items, tables become pipe tables.

use super::{tidy_lines, Extracted, Refusal};
use docx_rs::{DocumentChild, Paragraph, ParagraphChild, RunChild, Table, TableCellContent};

/// Parts every Word document has, with what each holds.
const REQUIRED_PARTS: [(&str, &str); 2] =
    [("_rels/.rels", "the package relationships"), ("word/document.xml", "the document body")];

/// The deepest the body's XML may nest. docx-rs parses nested elements (tables in table cells)
/// recursively, so 50,000 nested tables (2 MB) overflowed the stack and aborted docdex; Word's
/// own documents nest a few dozen levels.
const MAX_XML_DEPTH: usize = 200;

/// Whether `xml` nests elements deeper than `limit`, by one linear pass over its tags.
fn xml_too_deep(xml: &[u8], limit: usize) -> bool {
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(p) = memchr::memchr(b'<', &xml[i..]) {
        let at = i + p;
        let Some(end) = memchr::memchr(b'>', &xml[at..]).map(|q| at + q) else { return false };
        match xml.get(at + 1) {
            Some(b'/') => depth = depth.saturating_sub(1),
            Some(b'?') | Some(b'!') => {}
            _ if xml[end - 1] == b'/' => {}
            _ => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
        }
        i = end + 1;
    }
    false
}

/// The most paragraphs and runs a body may hold together. docx-rs holds each in about 5 KB
/// (its properties are large structs, filled in or not): 5 million empty paragraphs (30 MB
/// of XML, 30 KB zipped) took over 5 GB. A thousand-page report has some tens of thousands.
const MAX_PARAGRAPHS_AND_RUNS: usize = 60_000;

/// Whether `xml` holds more than `limit` paragraph and run elements (`p`, `r`, whatever
/// their namespace prefix), by one linear pass over its tags.
fn too_many_paragraphs(xml: &[u8], limit: usize) -> bool {
    let mut count = 0usize;
    for at in memchr::memchr_iter(b'<', xml) {
        let name_end = xml[at + 1..]
            .iter()
            .position(|c| matches!(c, b'>' | b'/' | b' ' | b'\t' | b'\r' | b'\n'))
            .map_or(xml.len(), |n| at + 1 + n);
        let name = &xml[at + 1..name_end];
        let local = name.iter().rposition(|&c| c == b':').map_or(name, |i| &name[i + 1..]);
        if local == b"p" || local == b"r" {
            count += 1;
            if count > limit {
                return true;
            }
        }
    }
    false
}

/// The most a document body may inflate to (a ZIP bomb stops here, not in memory). Parsing
/// holds about five times the XML, and a thousand-page report's body is a few MiB.
const MAX_BODY_BYTES: u64 = 32 * 1024 * 1024;

fn refusal(e: docx_rs::ReaderError) -> Refusal {
    match e.to_string() {
        s if s.to_ascii_lowercase().contains("encrypt") => Refusal::Encrypted,
        s => Refusal::Corrupt(s),
    }
}

/// `word/document.xml` parsed on its own, read through a bound. The text needs nothing else:
/// docx-rs's whole-package reader also inflates headers, footers, comments, styles, themes and
/// images, each without a limit (a 600 KB file held 3 GB), and refuses a package without the
/// optional document relationships.
fn body_alone(bytes: &[u8]) -> Result<docx_rs::Document, Refusal> {
    use docx_rs::FromXML;
    use std::io::Read;
    let corrupt = |e: &dyn std::fmt::Display| Refusal::Corrupt(e.to_string());
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| corrupt(&e))?;
    let part = zip.by_name("word/document.xml").map_err(|e| corrupt(&e))?;
    let mut xml = Vec::new();
    part.take(MAX_BODY_BYTES + 1).read_to_end(&mut xml).map_err(|e| corrupt(&e))?;
    if xml.len() as u64 > MAX_BODY_BYTES {
        return Err(Refusal::TooLarge(format!(
            "the document body inflates to over {} MiB",
            MAX_BODY_BYTES / (1024 * 1024)
        )));
    }
    // docx-rs's XML reader refuses a DTD with only "Failed to read xml.": name it instead.
    if memchr::memmem::find(&xml, b"<!DOCTYPE").is_some() {
        return Err(Refusal::Corrupt(
            "the document body declares a DTD (<!DOCTYPE>, entities), which Word never writes; it is not expanded"
                .into(),
        ));
    }
    if xml_too_deep(&xml, MAX_XML_DEPTH) {
        return Err(Refusal::Corrupt(format!("the document body nests elements deeper than {MAX_XML_DEPTH} levels")));
    }
    if too_many_paragraphs(&xml, MAX_PARAGRAPHS_AND_RUNS) {
        return Err(Refusal::TooLarge(format!(
            "the document body holds over {MAX_PARAGRAPHS_AND_RUNS} paragraphs and runs"
        )));
    }
    docx_rs::Document::from_xml(&xml[..]).map_err(refusal)
}

/// Extracts a DOCX file's text as Markdown.
pub(super) fn extract(bytes: &[u8]) -> Result<Extracted, Refusal> {
    if !bytes.starts_with(b"PK") {
        return Err(Refusal::Corrupt("not a ZIP archive".into()));
    }
    // The parser names neither the part it missed nor why ("Failed to read from zip."): say
    // which required part is absent. Part names are stored uncompressed in the ZIP headers.
    for (name, what) in REQUIRED_PARTS {
        if memchr::memmem::find(bytes, name.as_bytes()).is_none() {
            return Err(Refusal::Corrupt(format!("not a Word document: the archive has no {name} ({what})")));
        }
    }
    let document = body_alone(bytes)?;
    let mut md = String::new();
    for child in &document.children {
        match child {
            DocumentChild::Paragraph(p) => paragraph(p, &mut md),
            DocumentChild::Table(t) => table(t, &mut md),
            _ => {}
        }
    }
    let mut out = Extracted::default();
    tidy_lines(md.lines(), &mut out.text);
    Ok(out)
}

/// One paragraph as a Markdown block followed by a blank line.
fn paragraph(p: &Paragraph, md: &mut String) {
    let text = paragraph_text(p);
    let text = text.trim();
    if text.is_empty() {
        return;
    }
    let style = p.property.style.as_ref().map(|s| s.val.to_ascii_lowercase()).unwrap_or_default();
    if let Some(level) = heading_level(&style) {
        md.push_str(&"#".repeat(level));
        md.push(' ');
    } else if p.property.numbering_property.is_some() || style.contains("list") {
        md.push_str("- ");
    }
    md.push_str(text);
    md.push_str("\n\n");
}

/// `Heading1`..`Heading9` (and `heading 2`, `Title`) as a Markdown heading level.
fn heading_level(style: &str) -> Option<usize> {
    if style == "title" {
        return Some(1);
    }
    let rest = style.strip_prefix("heading")?.trim();
    match rest.parse::<usize>() {
        Ok(n) if (1..=6).contains(&n) => Some(n),
        Ok(_) => Some(6),
        Err(_) => None,
    }
}

/// The visible text of a paragraph's runs (insertions and links included, deletions not).
fn paragraph_text(p: &Paragraph) -> String {
    let mut s = String::new();
    for child in &p.children {
        child_text(child, &mut s);
    }
    s
}

fn child_text(child: &ParagraphChild, s: &mut String) {
    match child {
        ParagraphChild::Run(r) => run_text(&r.children, s),
        ParagraphChild::Hyperlink(h) => {
            for c in &h.children {
                child_text(c, s);
            }
        }
        ParagraphChild::Insert(ins) => {
            for c in &ins.children {
                if let docx_rs::InsertChild::Run(r) = c {
                    run_text(&r.children, s);
                }
            }
        }
        _ => {}
    }
}

fn run_text(children: &[RunChild], s: &mut String) {
    for c in children {
        match c {
            RunChild::Text(t) => s.push_str(&t.text),
            RunChild::Tab(_) | RunChild::PTab(_) => s.push('\t'),
            // A line break inside a paragraph stays inside the Markdown block.
            RunChild::Break(_) | RunChild::CarriageReturn(_) => s.push(' '),
            _ => {}
        }
    }
}

/// A table as a Markdown pipe table (the first row is the header).
fn table(t: &Table, md: &mut String) {
    let mut rows: Vec<Vec<String>> = Vec::new();
    for docx_rs::TableChild::TableRow(row) in &t.rows {
        let mut cells = Vec::new();
        for docx_rs::TableRowChild::TableCell(cell) in &row.cells {
            let mut text = Vec::new();
            for content in &cell.children {
                if let TableCellContent::Paragraph(p) = content {
                    let t = paragraph_text(p);
                    if !t.trim().is_empty() {
                        text.push(t.trim().replace('|', "\\|"));
                    }
                }
            }
            cells.push(text.join(" "));
        }
        rows.push(cells);
    }
    let width = rows.iter().map(Vec::len).max().unwrap_or(0);
    if width == 0 {
        return;
    }
    for (i, row) in rows.iter().enumerate() {
        let mut cells = row.clone();
        cells.resize(width, String::new());
        md.push_str(&format!("| {} |\n", cells.join(" | ")));
        if i == 0 {
            md.push_str(&format!("|{}\n", " --- |".repeat(width)));
        }
    }
    md.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packed() -> Vec<u8> {
        let mut buf = std::io::Cursor::new(Vec::new());
        docx_rs::Docx::new()
            .add_paragraph(Paragraph::new().add_run(docx_rs::Run::new().add_text("Heron survey notes")))
            .build()
            .pack(&mut buf)
            .expect("pack docx");
        buf.into_inner()
    }

    /// `from` renamed to `to` (same length) in the archive's headers: a valid ZIP without that part.
    fn renamed(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
        assert_eq!(from.len(), to.len());
        let mut out = bytes.to_vec();
        let mut at = 0;
        while let Some(i) = memchr::memmem::find(&out[at..], from.as_bytes()) {
            out[at + i..at + i + to.len()].copy_from_slice(to.as_bytes());
            at += i + to.len();
        }
        out
    }

    #[test]
    fn a_document_is_read_and_a_missing_part_is_named() {
        let good = packed();
        assert!(extract(&good).expect("reads").text.contains("Heron survey notes"));
        let no_rels = renamed(&good, "_rels/.rels", "_rels/.relz");
        let Err(Refusal::Corrupt(why)) = extract(&no_rels) else {
            panic!("a DOCX without _rels/.rels must be refused")
        };
        assert!(why.contains("_rels/.rels") && why.contains("relationships"), "{why}");
        // The document's own relationships are optional: the text is read without them.
        let no_doc_rels = renamed(&good, "word/_rels/document.xml.rels", "word/_rels/documenX.xml.rels");
        assert!(extract(&no_doc_rels).expect("reads without them").text.contains("Heron survey notes"));
        let no_body = renamed(&good, "word/document.xml", "word/documenX.xml");
        let Err(Refusal::Corrupt(why)) = extract(&no_body) else { panic!("a DOCX without its body must be refused") };
        assert!(why.contains("word/document.xml"), "{why}");
    }
}
