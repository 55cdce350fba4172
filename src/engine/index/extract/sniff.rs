//! What a file is, from its first bytes: asked only when a document failed to extract, so that
//! a PNG named `.pdf` is called a PNG image rather than a corrupt PDF (tour25 F6).

use super::Format;

/// Leading bytes and what a file starting with them is.
const MAGIC: &[(&[u8], &str)] = &[
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"%PDF-", "a PDF"),
    (b"PK\x03\x04", "a ZIP archive"),
    (b"PK\x05\x06", "a ZIP archive"),
    (b"\x7fELF", "an ELF executable"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"BZh", "a bzip2 archive"),
    (b"\xfd7zXZ\x00", "an xz archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"\x28\xb5\x2f\xfd", "a zstd archive"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"MZ", "a Windows executable"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old (OLE) Office document"),
];

/// What `bytes` are when they are plainly not `format` (their first bytes belong to another
/// kind of file); `None` when they are unrecognised or of `format`'s own kind (a ZIP named
/// `.docx`, a PDF named `.pdf`: the extractor's own note says more then).
pub(super) fn other_kind(bytes: &[u8], format: Format) -> Option<&'static str> {
    let what = what(bytes)?;
    let own = match format {
        Format::Pdf => "a PDF",
        Format::Docx => "a ZIP archive",
        Format::Html | Format::Notebook => "",
    };
    (what != own).then_some(what)
}

/// The kind of file `bytes` start as, by their magic number.
fn what(bytes: &[u8]) -> Option<&'static str> {
    if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        return Some("a WebP image");
    }
    MAGIC.iter().find(|(magic, _)| bytes.starts_with(magic)).map(|&(_, what)| what)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_what_the_bytes_are_unless_the_format_is_their_own() {
        assert_eq!(other_kind(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", Format::Pdf), Some("a PNG image"));
        assert_eq!(other_kind(b"\x89PNG\r\n\x1a\n", Format::Notebook), Some("a PNG image"));
        assert_eq!(other_kind(b"PK\x03\x04rest", Format::Pdf), Some("a ZIP archive"));
        assert_eq!(other_kind(b"PK\x03\x04rest", Format::Docx), None);
        assert_eq!(other_kind(b"%PDF-1.7\n", Format::Pdf), None);
        assert_eq!(other_kind(b"%PDF-1.7\n", Format::Docx), Some("a PDF"));
        assert_eq!(other_kind(b"\x7fELF\x02\x01", Format::Docx), Some("an ELF executable"));
        assert_eq!(other_kind(b"RIFF\0\0\0\0WEBPVP8 ", Format::Pdf), Some("a WebP image"));
        assert_eq!(other_kind(b"{\"cells\": [", Format::Notebook), None);
        assert_eq!(other_kind(b"", Format::Pdf), None);
    }
}
