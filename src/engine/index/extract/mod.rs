//! The step between reading a file's bytes and chunking them: documents (PDF, DOCX, HTML,
//! Jupyter notebooks) become plain text or Markdown with stable line numbers; everything else
//! passes through untouched.
//!
//! One file per format (`pdf`, `docx`, `html`, `notebook`); a new format is one more file and one more arm
//! in [`Format`]. What was extracted is kept beside the index (`<generation>/extracted/`), so
//! snippets, `docdex get`, embeddings and chat context all read the very text the index was
//! built from, with the same line numbers, without extracting again.
//!
//! A document that yields no text (a scanned PDF without a text layer), needs a password, or
//! cannot be parsed is a per-file note ([`Refusal`]), never a failed run.

mod docx;
mod html;
mod notebook;
mod pdf;
mod pdf_bound;
mod pdf_columns;
mod pdf_load;
mod pdf_scan;
mod pdf_table;
mod pdf_text;
mod pdf_tree;
mod pdf_work;
mod sniff;

use crate::engine::repos::RepoRef;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The version of document extraction (PDF, DOCX, HTML text): bump it when a change alters the
/// text of existing documents, and the next index run extracts every document again (the
/// manifest keeps each one's version). 1: PDF columns read column by column, HTML definition
/// lists separated and relative links kept (2026-11-30). 2: PDF pages in three or more columns,
/// with full-width blocks between column blocks, or with columns at different baselines, read
/// block by block and column by column (2026-11-30). 3: HTML without its chrome (navigation,
/// site header and footer, asides, cookie banners, ads, blocks of links) on short pages too.
/// 4: PDF tables whose cells hold long text read row by row, and a block spanning some of a
/// page's columns read within them. 5: PDF tables without row gaps (rows of one-line cells,
/// or cells wrapped with no blank band between rows) read row by row, a row of one-line cells
/// on one line.
pub const EXTRACTOR_VERSION: u32 = 5;

/// A document format docdex extracts text from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// PDF: text per page.
    Pdf,
    /// Word (OOXML): Markdown with headings, lists and tables.
    Docx,
    /// HTML: the readable text as Markdown (the web tier's Readability extraction).
    Html,
    /// Jupyter notebook (`.ipynb`): each cell's source after a `# %%` marker line, no outputs.
    Notebook,
}

impl Format {
    /// The format of a path, by extension; `None` for files indexed as they are.
    pub fn of(rel: &str) -> Option<Format> {
        let ext = rel.rsplit_once('.')?.1;
        if ext.len() > 5 {
            return None;
        }
        match ext.to_ascii_lowercase().as_str() {
            "pdf" => Some(Format::Pdf),
            "docx" => Some(Format::Docx),
            "html" | "htm" | "xhtml" => Some(Format::Html),
            "ipynb" => Some(Format::Notebook),
            _ => None,
        }
    }

    /// The language name the index stores for this format.
    pub fn lang(self) -> &'static str {
        match self {
            Format::Pdf => "pdf",
            Format::Docx => "docx",
            Format::Html => "html",
            Format::Notebook => "notebook",
        }
    }
}

/// Text extracted from a document.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Extracted {
    /// The text (Markdown for DOCX and HTML), lines separated by `\n`.
    pub text: String,
    /// For paged formats (PDF), the 1-based first line of each page, in page order; empty
    /// otherwise.
    #[serde(default)]
    pub pages: Vec<u32>,
    /// What a reader should know of a document read only in part (a PDF page tree that
    /// loops: the pages outside the loop were read): reported with the index run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Extracted {
    /// The page (1-based) holding 1-based `line`; `None` for unpaged text.
    pub fn page_of(&self, line: u32) -> Option<u32> {
        page_of(&self.pages, line)
    }

    /// The inclusive line range of page `page` (1-based); `None` when there is no such page.
    pub fn page_lines(&self, page: u32) -> Option<(u32, u32)> {
        let i = (page as usize).checked_sub(1)?;
        let start = *self.pages.get(i)?;
        let total = self.text.lines().count() as u32;
        let end = self.pages.get(i + 1).map_or(total, |next| next.saturating_sub(1));
        Some((start, end.max(start)))
    }
}

/// The page holding `line`, given the first line of each page.
pub fn page_of(pages: &[u32], line: u32) -> Option<u32> {
    if pages.is_empty() {
        return None;
    }
    let i = pages.partition_point(|&first| first <= line);
    Some(i.max(1) as u32)
}

/// Why a document was not indexed: shown as the file's note in status, never a failed run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No text layer at all (a scan); OCR is not done.
    NoText,
    /// Needs a password.
    Encrypted,
    /// Not a valid file of its format.
    Corrupt(String),
    /// Inflates past what extraction may hold in memory (a ZIP or stream bomb, or simply huge).
    TooLarge(String),
    /// Its first bytes are another kind of file (a PNG named `.pdf`): what it is instead.
    OtherKind(&'static str),
}

impl Refusal {
    /// The note stored for the file (the manifest's skip reason); its first words group notes
    /// in status.
    pub fn note(&self, format: Format) -> String {
        let kind = match format {
            Format::Pdf => "PDF",
            Format::Docx => "DOCX",
            Format::Html => "HTML",
            Format::Notebook => "Jupyter notebook",
        };
        match self {
            Refusal::NoText if format == Format::Pdf => "scanned PDF (no text layer; docdex does not OCR)".to_string(),
            Refusal::NoText => format!("empty {kind} (no text)"),
            Refusal::Encrypted => format!("encrypted {kind} (needs a password)"),
            Refusal::Corrupt(why) => format!("corrupt {kind} ({})", one_line(why)),
            Refusal::TooLarge(why) => format!("{kind} too large to extract ({})", one_line(why)),
            Refusal::OtherKind(what) => format!("not {} {kind} (its bytes are {what})", article(format)),
        }
    }
}

/// "a" or "an" before the format's name in a note.
fn article(format: Format) -> &'static str {
    match format {
        Format::Html => "an",
        Format::Pdf | Format::Docx | Format::Notebook => "a",
    }
}

fn one_line(s: &str) -> String {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    match s.char_indices().nth(120) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

/// Extracts the text of a document. Panics inside the format libraries (they parse hostile
/// input) are caught and reported as a corrupt file; a file that fails and whose first bytes are
/// another kind of file is named for what it is ([`Refusal::OtherKind`]).
pub fn extract(format: Format, bytes: &[u8]) -> Result<Extracted, Refusal> {
    extract_as_named(format, bytes).map_err(|refusal| match refusal {
        Refusal::Corrupt(_) | Refusal::NoText => sniff::other_kind(bytes, format).map_or(refusal, Refusal::OtherKind),
        other => other,
    })
}

/// [`extract`] trusting the extension.
fn extract_as_named(format: Format, bytes: &[u8]) -> Result<Extracted, Refusal> {
    let run = || match format {
        Format::Pdf => pdf::extract(bytes),
        Format::Docx => docx::extract(bytes),
        Format::Html => Ok(html::extract(bytes)),
        Format::Notebook => notebook::extract(bytes),
    };
    let out = crate::engine::quiet_panics(run)
        .unwrap_or_else(|_| Err(Refusal::Corrupt("the parser failed on this file".into())))?;
    if out.text.trim().is_empty() {
        return Err(Refusal::NoText);
    }
    Ok(out)
}

/// Tidies extracted lines: trailing spaces go, runs of blank lines become one, no blank lines
/// at the start or end. Returns the text and its line count.
pub(crate) fn tidy_lines<'a>(lines: impl Iterator<Item = &'a str>, out: &mut String) -> u32 {
    let mut count = 0u32;
    let mut blank_run = true; // no leading blank lines
    for line in lines {
        let line = line.trim_end();
        if line.trim().is_empty() {
            if blank_run {
                continue;
            }
            blank_run = true;
        } else {
            blank_run = false;
        }
        out.push_str(line);
        out.push('\n');
        count += 1;
    }
    // A trailing blank line.
    if out.ends_with("\n\n") {
        out.pop();
        count -= 1;
    }
    count
}

/// Where the extracted text of one file is kept: `<generation>/extracted/<xxh3 of path>.json`.
fn stored_path(data_dir: &Path, rel: &str) -> PathBuf {
    data_dir.join("extracted").join(format!("{:016x}.json", xxhash_rust::xxh3::xxh3_64(rel.as_bytes())))
}

/// What is kept per document.
#[derive(Serialize, Deserialize)]
struct Stored {
    path: String,
    #[serde(flatten)]
    doc: Extracted,
}

/// Keeps a document's extracted text beside the index generation in `data_dir`.
pub fn store(data_dir: &Path, rel: &str, doc: &Extracted) -> crate::error::Result<()> {
    let path = stored_path(data_dir, rel);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| crate::error::Error::io("creating", dir, e))?;
    }
    let stored = Stored { path: rel.to_string(), doc: doc.clone() };
    let json = serde_json::to_vec(&stored).unwrap_or_default();
    crate::engine::fsutil::write_atomic(&path, &json)
}

/// Drops a document's kept text (it left the index).
pub fn forget(data_dir: &Path, rel: &str) {
    let _ = std::fs::remove_file(stored_path(data_dir, rel));
}

/// The extracted text the index holds for `rel` (a document), from the generation in
/// `data_dir`; `None` when there is none.
pub fn load(data_dir: &Path, rel: &str) -> Option<Extracted> {
    let bytes = std::fs::read(stored_path(data_dir, rel)).ok()?;
    let stored: Stored = serde_json::from_slice(&bytes).ok()?;
    (stored.path == rel).then_some(stored.doc)
}

/// The text the index was built from for `rel`: a document's extracted text, or the file's own
/// bytes, read through the one opener beneath the repo's root or its registered source's (no
/// link followed, nothing outside the root).
pub fn indexed_text(repo: &RepoRef, rel: &str) -> std::io::Result<Vec<u8>> {
    if Format::of(rel).is_some() {
        return load(&repo.data_dir(), rel)
            .map(|d| d.text.into_bytes())
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no extracted text for this document"));
    }
    super::sources::read(repo, rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_pages() {
        assert_eq!(Format::of("docs/Guide.PDF"), Some(Format::Pdf));
        assert_eq!(Format::of("a/b.docx"), Some(Format::Docx));
        assert_eq!(Format::of("site/index.htm"), Some(Format::Html));
        assert_eq!(Format::of("docs/analysis.ipynb"), Some(Format::Notebook));
        assert_eq!(Format::of("src/main.rs"), None);
        assert_eq!(Format::of("Makefile"), None);
        let doc = Extracted { text: "a\nb\nc\nd\ne\n".into(), pages: vec![1, 3, 5], ..Extracted::default() };
        assert_eq!(doc.page_of(1), Some(1));
        assert_eq!(doc.page_of(2), Some(1));
        assert_eq!(doc.page_of(3), Some(2));
        assert_eq!(doc.page_of(9), Some(3));
        assert_eq!(doc.page_lines(2), Some((3, 4)));
        assert_eq!(doc.page_lines(3), Some((5, 5)));
        assert_eq!(doc.page_lines(4), None);
        assert_eq!(doc.page_lines(0), None);
        assert_eq!(page_of(&[], 3), None);
    }

    #[test]
    fn tidy_collapses_blank_runs() {
        let mut out = String::new();
        let n = tidy_lines("\n\n a  \n\n\n\nb\n\n".lines(), &mut out);
        assert_eq!(out, " a\n\nb\n");
        assert_eq!(n, 3);
    }

    #[test]
    fn refusals_are_notes() {
        assert!(Refusal::NoText.note(Format::Pdf).starts_with("scanned PDF"));
        assert!(Refusal::Encrypted.note(Format::Pdf).starts_with("encrypted PDF"));
        assert_eq!(Refusal::Corrupt("bad\nxref".into()).note(Format::Docx), "corrupt DOCX (bad xref)");
        assert_eq!(extract(Format::Html, b"<html><body>  </body></html>"), Err(Refusal::NoText));
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
        let refusal = extract(Format::Pdf, png).expect_err("a PNG is no PDF");
        assert_eq!(refusal.note(Format::Pdf), "not a PDF (its bytes are a PNG image)");
    }
}
