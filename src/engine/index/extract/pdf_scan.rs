//! Checks a PDF's cross-reference streams before lopdf loads the file. lopdf decodes each one
//! whole while loading (no hook runs before), sizes two buffers by its `/W` field widths, and
//! inserts one entry per object its `/Index` counts even when `/W` is all zeros and no byte is
//! read: a 700-byte file asking for 30 million entries took over 4.8 GB. The chain lopdf
//! follows (`startxref`, then `/Prev` and `/XRefStm`) is walked here with a small reader of
//! PDF objects, and a stream over the bounds refuses the file.

use super::pdf_bound::{decoded_size, MAX_STREAM_BYTES};
use super::Refusal;
use pdf_extract::{Dictionary, Object, Stream, StringFormat};
use std::collections::HashSet;

/// The most objects a document's cross-reference streams may list together (a 10 MB PDF
/// holds far fewer; each costs lopdf a map entry).
const MAX_XREF_ENTRIES: i64 = 2_000_000;
/// The widest a cross-reference field may be (lopdf reads them into 32 bits; real files use
/// 1 to 4 bytes).
const MAX_FIELD_WIDTH: i64 = 8;
/// Cross-reference sections followed at most (incremental updates each add one).
const MAX_SECTIONS: usize = 256;
/// How deeply arrays and dictionaries may nest in the dictionaries read here.
const MAX_DEPTH: usize = 32;

/// Refuses a document whose cross-reference streams lopdf could not load within bounds.
pub(super) fn check_xref(bytes: &[u8]) -> Result<(), Refusal> {
    let buf = memchr::memmem::find(bytes, b"%PDF-").map_or(bytes, |at| &bytes[at..]);
    let Some(first) = startxref(buf) else { return Ok(()) }; // lopdf refuses it itself
    let mut todo = vec![first];
    let mut seen = HashSet::new();
    let mut entries = 0i64;
    while let Some(offset) = todo.pop() {
        if !seen.insert(offset) || seen.len() > MAX_SECTIONS {
            continue;
        }
        let Some(dict) = section(buf, offset, &mut entries)? else { continue };
        for key in [b"Prev".as_slice(), b"XRefStm"] {
            if let Some(next) = dict.get(key).ok().and_then(|o| o.as_i64().ok()).and_then(|n| usize::try_from(n).ok()) {
                todo.push(next);
            }
        }
    }
    Ok(())
}

/// Where the newest trailer (the one lopdf keeps: the dictionary after the table at
/// `startxref`, or that cross-reference stream's own) names `key`, as read by lopdf (escapes
/// decoded).
pub(super) enum TrailerKey {
    /// The trailer was read and has no such key.
    Absent,
    /// The byte range of the key's name token in `bytes`.
    At(std::ops::Range<usize>),
    /// The trailer could not be read here (lopdf may still read it).
    Unreadable,
}

/// Finds `key` in the newest trailer of `bytes` (see [`TrailerKey`]).
pub(super) fn trailer_key(bytes: &[u8], key: &[u8]) -> TrailerKey {
    let start = memchr::memmem::find(bytes, b"%PDF-").unwrap_or(0);
    let buf = &bytes[start..];
    let Some(offset) = startxref(buf) else { return TrailerKey::Unreadable };
    let Some(at) = buf.get(offset..) else { return TrailerKey::Unreadable };
    let mut r = Reader { b: at, i: 0 };
    r.skip_space();
    if r.rest().starts_with(b"xref") {
        let Some(t) = memchr::memmem::find(r.rest(), b"trailer") else { return TrailerKey::Unreadable };
        r.i += t + b"trailer".len();
    } else if r.int().is_none() || r.int().is_none() || !r.keyword(b"obj") {
        return TrailerKey::Unreadable;
    }
    r.skip_space();
    if !r.rest().starts_with(b"<<") {
        return TrailerKey::Unreadable;
    }
    r.i += 2;
    loop {
        r.skip_space();
        if r.rest().starts_with(b">>") {
            return TrailerKey::Absent;
        }
        let token = r.i;
        match r.name() {
            Some(name) if name == key => return TrailerKey::At(start + offset + token..start + offset + r.i),
            Some(_) if r.object(1).is_some() => {}
            _ => return TrailerKey::Unreadable,
        }
    }
}

/// Where lopdf starts: the `startxref` just before the last `%%EOF` of the file's last 512 bytes.
fn startxref(buf: &[u8]) -> Option<usize> {
    let tail = buf.len().saturating_sub(512);
    let eof = tail + memchr::memmem::rfind(&buf[tail..], b"%%EOF")?;
    let at = memchr::memmem::rfind(&buf[..eof], b"startxref")?;
    let mut r = Reader { b: &buf[at + b"startxref".len()..eof], i: 0 };
    r.int().and_then(|n| usize::try_from(n).ok())
}

/// The trailer (a table's) or stream dictionary (a stream's) of the section at `offset`,
/// checking a stream's bounds; `None` where lopdf will fail to read a section anyway.
fn section(buf: &[u8], offset: usize, entries: &mut i64) -> Result<Option<Dictionary>, Refusal> {
    let Some(at) = buf.get(offset..) else { return Ok(None) };
    let mut r = Reader { b: at, i: 0 };
    r.skip_space();
    if r.rest().starts_with(b"xref") {
        let Some(t) = memchr::memmem::find(r.rest(), b"trailer") else { return Ok(None) };
        r.i += t + b"trailer".len();
        return Ok(r.object(0).and_then(|o| o.as_dict().ok().cloned()));
    }
    if r.int().is_none() || r.int().is_none() || !r.keyword(b"obj") {
        return Ok(None);
    }
    let Some(Object::Dictionary(dict)) = r.object(0) else { return Ok(None) };
    r.skip_space();
    if !r.keyword(b"stream") {
        return Ok(Some(dict));
    }
    let data = stream_data(&r.rest()[eol_len(r.rest())..], &dict);
    check_stream(&dict, data, entries)?;
    Ok(Some(dict))
}

/// A stream's bytes: `/Length` of them when it is a number that fits, else up to `endstream`.
fn stream_data<'a>(after: &'a [u8], dict: &Dictionary) -> &'a [u8] {
    let length = dict.get(b"Length").ok().and_then(|o| o.as_i64().ok()).and_then(|n| usize::try_from(n).ok());
    match length.and_then(|n| after.get(..n)) {
        Some(data) => data,
        None => memchr::memmem::find(after, b"endstream").map_or(after, |end| &after[..end]),
    }
}

fn eol_len(after_keyword: &[u8]) -> usize {
    match after_keyword {
        [b'\r', b'\n', ..] => 2,
        [b'\r' | b'\n', ..] => 1,
        _ => 0,
    }
}

/// One cross-reference stream's field widths, object count and decoded size.
fn check_stream(dict: &Dictionary, data: &[u8], entries: &mut i64) -> Result<(), Refusal> {
    let ints = |key: &[u8]| -> Option<Vec<i64>> {
        let array = dict.get(key).ok()?.as_array().ok()?;
        array.iter().map(|o| o.as_i64().ok()).collect()
    };
    if ints(b"W").is_some_and(|w| w.iter().any(|&n| n > MAX_FIELD_WIDTH)) {
        return Err(Refusal::Corrupt(format!("a cross-reference field is wider than {MAX_FIELD_WIDTH} bytes")));
    }
    let count: i64 = match ints(b"Index") {
        Some(index) => index.chunks(2).filter_map(|p| p.get(1)).map(|&n| n.max(0)).fold(0, i64::saturating_add),
        None => dict.get(b"Size").ok().and_then(|o| o.as_i64().ok()).unwrap_or(0).max(0),
    };
    *entries = entries.saturating_add(count);
    if *entries > MAX_XREF_ENTRIES {
        return Err(Refusal::Corrupt(format!("its cross-reference streams list over {MAX_XREF_ENTRIES} objects")));
    }
    let stream = Stream::new(dict.clone(), data.to_vec());
    if decoded_size(&stream, MAX_STREAM_BYTES + 1) > MAX_STREAM_BYTES {
        let mib = MAX_STREAM_BYTES / (1024 * 1024);
        return Err(Refusal::TooLarge(format!("a cross-reference stream inflates to over {mib} MiB")));
    }
    Ok(())
}

/// A reader of the PDF objects a dictionary holds: names (with `#xx` escapes), numbers,
/// references, strings, arrays and dictionaries, nested at most [`MAX_DEPTH`].
struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Reader<'a> {
    fn rest(&self) -> &'a [u8] {
        self.b.get(self.i..).unwrap_or_default()
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn skip_space(&mut self) {
        while let Some(c) = self.peek() {
            match c {
                b'%' => {
                    while self.peek().is_some_and(|c| c != b'\n' && c != b'\r') {
                        self.i += 1;
                    }
                }
                b' ' | b'\t' | b'\r' | b'\n' | b'\x0c' | b'\0' => self.i += 1,
                _ => return,
            }
        }
    }

    fn keyword(&mut self, word: &[u8]) -> bool {
        self.skip_space();
        let ok = self.rest().starts_with(word) && self.rest().get(word.len()).is_none_or(|c| delimiter_or_space(*c));
        if ok {
            self.i += word.len();
        }
        ok
    }

    fn int(&mut self) -> Option<i64> {
        self.skip_space();
        let start = self.i;
        if matches!(self.peek(), Some(b'+' | b'-')) {
            self.i += 1;
        }
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        let n = std::str::from_utf8(&self.b[start..self.i]).ok()?.parse().ok();
        if n.is_none() {
            self.i = start;
        }
        n
    }

    fn object(&mut self, depth: usize) -> Option<Object> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.skip_space();
        match self.peek()? {
            b'<' if self.rest().starts_with(b"<<") => self.dictionary(depth),
            b'<' => {
                let end = memchr::memchr(b'>', self.rest())?;
                self.i += end + 1;
                Some(Object::String(Vec::new(), StringFormat::Hexadecimal))
            }
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                loop {
                    self.skip_space();
                    if self.peek()? == b']' {
                        self.i += 1;
                        return Some(Object::Array(items));
                    }
                    items.push(self.object(depth + 1)?);
                }
            }
            b'(' => self.literal_string(),
            b'/' => self.name().map(Object::Name),
            b'0'..=b'9' | b'+' | b'-' | b'.' => self.number(),
            _ if self.keyword(b"true") => Some(Object::Boolean(true)),
            _ if self.keyword(b"false") => Some(Object::Boolean(false)),
            _ if self.keyword(b"null") => Some(Object::Null),
            _ => None,
        }
    }

    fn dictionary(&mut self, depth: usize) -> Option<Object> {
        self.i += 2;
        let mut dict = Dictionary::new();
        loop {
            self.skip_space();
            if self.rest().starts_with(b">>") {
                self.i += 2;
                return Some(Object::Dictionary(dict));
            }
            let key = self.name()?;
            let value = self.object(depth + 1)?;
            dict.set(key, value);
        }
    }

    fn name(&mut self) -> Option<Vec<u8>> {
        if self.peek()? != b'/' {
            return None;
        }
        self.i += 1;
        let mut name = Vec::new();
        while let Some(c) = self.peek().filter(|c| !delimiter_or_space(*c)) {
            let escaped = (c == b'#').then(|| self.b.get(self.i + 1..self.i + 3)).flatten();
            match escaped.and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()) {
                Some(byte) => {
                    name.push(byte);
                    self.i += 3;
                }
                None => {
                    name.push(c);
                    self.i += 1;
                }
            }
        }
        Some(name)
    }

    /// An integer, a real, or a reference (`12 0 R`, read as its object number: never used).
    fn number(&mut self) -> Option<Object> {
        let start = self.i;
        if let Some(n) = self.int() {
            if self.peek() != Some(b'.') {
                let after = self.i;
                if self.int().is_some() && self.keyword(b"R") {
                    return Some(Object::Reference((u32::try_from(n).unwrap_or(0), 0)));
                }
                self.i = after;
                return Some(Object::Integer(n));
            }
        }
        self.i = start;
        while self.peek().is_some_and(|c| c.is_ascii_digit() || matches!(c, b'.' | b'+' | b'-')) {
            self.i += 1;
        }
        let text = std::str::from_utf8(&self.b[start..self.i]).ok()?;
        text.parse::<f32>().ok().map(Object::Real)
    }

    fn literal_string(&mut self) -> Option<Object> {
        self.i += 1;
        let mut depth = 1usize;
        while depth > 0 {
            match self.peek()? {
                b'\\' => self.i += 1,
                b'(' => depth += 1,
                b')' => depth -= 1,
                _ => {}
            }
            self.i += 1;
        }
        Some(Object::String(Vec::new(), StringFormat::Literal))
    }
}

fn delimiter_or_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n' | b'\x0c' | b'\0' | b'/' | b'[' | b']' | b'<' | b'>' | b'(' | b')' | b'%')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dictionaries_are_read_with_escaped_names_references_and_nesting() {
        let mut r = Reader {
            b: b"<< /Type /X#52ef /W [1 4 1] /Prev 12 /Root 3 0 R /DecodeParms << /Columns 5 >> /T (a (b) \\)) >>",
            i: 0,
        };
        let d = r.object(0).unwrap().as_dict().unwrap().clone();
        assert_eq!(d.get(b"Type").unwrap().as_name().unwrap(), b"XRef");
        assert_eq!(d.get(b"W").unwrap().as_array().unwrap().len(), 3);
        assert_eq!(d.get(b"Prev").unwrap().as_i64().unwrap(), 12);
        assert!(d.get(b"Root").unwrap().as_reference().is_ok());
        assert!(d.get(b"T").is_ok());
        let deep = "[".repeat(100);
        assert!(Reader { b: deep.as_bytes(), i: 0 }.object(0).is_none());
    }

    #[test]
    fn the_newest_trailer_key_is_found_escaped_or_not() {
        let file = |trailer: &str| {
            let body = "%PDF-1.4\nxref\n0 1\n0000000000 65535 f \n";
            format!("{body}trailer\n{trailer}\nstartxref\n9\n%%EOF\n")
        };
        let plain = file("<< /Size 1 /ID [<ab> (x)] /Encrypt 3 0 R >>");
        let TrailerKey::At(at) = trailer_key(plain.as_bytes(), b"Encrypt") else { panic!("not found") };
        assert_eq!(&plain[at], "/Encrypt");
        let escaped = file("<< /Size 1 /Encr#79pt << /Filter /Standard >> >>");
        let TrailerKey::At(at) = trailer_key(escaped.as_bytes(), b"Encrypt") else { panic!("not found") };
        assert_eq!(&escaped[at], "/Encr#79pt");
        assert!(matches!(trailer_key(file("<< /Size 1 >>").as_bytes(), b"Encrypt"), TrailerKey::Absent));
        assert!(matches!(trailer_key(file("<< /Size ! >>").as_bytes(), b"Encrypt"), TrailerKey::Unreadable));
    }
}
