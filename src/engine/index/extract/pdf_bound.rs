//! Bounds on what a PDF's streams decode to, measured before lopdf or pdf-extract decodes any
//! (object streams, which lopdf would unpack while loading, by `pdf_load` before it unpacks them).
//!
//! lopdf decodes a stream through its whole filter chain (Flate, with a raw-deflate retry when
//! the zlib header is bad; LZW, which expands thousands to one; ASCII85; then a PNG predictor
//! whose row buffers are sized by the stream's own `/Columns`), each stage held whole in
//! memory. The bound counts what every one of those stages would produce, into a capped
//! buffer or a counter, so a bomb costs at most the bound to find.

use super::Refusal;
use pdf_extract::{Dictionary, Document, Object, ObjectId, Stream};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;

/// The most one stream may inflate to. Extraction holds a page's decoded content and its
/// parsed operators in memory (about 30 times the content for dense text), so a stream that
/// inflates past this (a few KB of zeros or repeated operators can become gigabytes) is
/// refused before anything is decoded.
pub(super) const MAX_STREAM_BYTES: u64 = 16 * 1024 * 1024;
/// The most one page's content streams may inflate to together.
const MAX_PAGE_BYTES: u64 = 32 * 1024 * 1024;
/// The most all of a document's decoded streams may inflate to.
pub(super) const MAX_INFLATED_BYTES: u64 = 128 * 1024 * 1024;

pub(super) fn mib(n: u64) -> u64 {
    n / (1024 * 1024)
}

/// Empties every image XObject: pdf-extract decodes whatever a page draws with `Do` and reads
/// it as page content, so an image was decoded whole (unbounded) and its pixels parsed as text
/// operators. Text extraction needs no pixels.
pub(super) fn drop_images(doc: &mut Document) {
    for object in doc.objects.values_mut() {
        let Ok(stream) = object.as_stream_mut() else { continue };
        if stream.dict.get(b"Subtype").and_then(|s| s.as_name()).is_ok_and(|n| n == b"Image") {
            stream.set_plain_content(Vec::new());
        }
    }
}

/// Refuses a document whose streams decode past the bounds above (images are emptied by
/// [`drop_images`] first and cost nothing); each stream's decoded size otherwise.
pub(super) fn check_inflation(
    doc: &Document,
    pages: &BTreeMap<u32, ObjectId>,
) -> Result<HashMap<ObjectId, u64>, Refusal> {
    let mut sizes = HashMap::new();
    let mut total = 0u64;
    for (id, object) in &doc.objects {
        let Ok(stream) = object.as_stream() else { continue };
        let size = decoded_size(stream, MAX_STREAM_BYTES + 1);
        if size > MAX_STREAM_BYTES {
            return Err(Refusal::TooLarge(format!("a stream inflates to over {} MiB", mib(MAX_STREAM_BYTES))));
        }
        total += size;
        if total > MAX_INFLATED_BYTES {
            return Err(Refusal::TooLarge(format!("its streams inflate to over {} MiB", mib(MAX_INFLATED_BYTES))));
        }
        sizes.insert(*id, size);
    }
    for (number, page) in pages {
        let content: u64 = doc.get_page_contents(*page).iter().filter_map(|id| sizes.get(id)).sum();
        if content > MAX_PAGE_BYTES {
            return Err(Refusal::TooLarge(format!(
                "page {number}'s content inflates to over {} MiB",
                mib(MAX_PAGE_BYTES)
            )));
        }
    }
    Ok(sizes)
}

/// What lopdf holds in memory to decode `stream`, counted up to a little past `limit`: every
/// filter of its chain, in order. A filter lopdf cannot decode ends the chain (lopdf fails and
/// pdf-extract keeps the stored bytes).
pub(super) fn decoded_size(stream: &Stream, limit: u64) -> u64 {
    let stored = stream.content.len() as u64;
    let Ok(filters) = stream.filters() else { return stored };
    let params = stream.dict.get(b"DecodeParms").and_then(Object::as_dict).ok();
    let mut data: std::borrow::Cow<[u8]> = std::borrow::Cow::Borrowed(&stream.content);
    let mut size = stored;
    for (i, filter) in filters.iter().enumerate() {
        let last = i + 1 == filters.len();
        let mut out = Capped::new(limit, !last);
        match *filter {
            b"FlateDecode" => inflate(&data, &mut out),
            b"LZWDecode" => unlzw(&data, params, &mut out),
            b"ASCII85Decode" => un_ascii85(&data, &mut out),
            _ => return size.max(stored),
        }
        size = out.count.saturating_add(predictor_rows(filter, params));
        if size > limit {
            return size;
        }
        data = std::borrow::Cow::Owned(out.kept);
    }
    size
}

/// A PNG predictor (after Flate or LZW) allocates two rows of `/Columns` pixels, however
/// little data there is.
fn predictor_rows(filter: &[u8], params: Option<&Dictionary>) -> u64 {
    let Some(params) = params.filter(|_| filter == b"FlateDecode" || filter == b"LZWDecode") else { return 0 };
    let int = |key: &[u8], default: i64| params.get(key).and_then(Object::as_i64).unwrap_or(default);
    if !(10..=15).contains(&int(b"Predictor", 1)) {
        return 0;
    }
    let clamp = |v: i64| u64::try_from(v.max(1)).unwrap_or(1);
    let row = clamp(int(b"Colors", 1)).saturating_mul(clamp(int(b"BitsPerComponent", 8)).max(8)) / 8;
    row.saturating_mul(clamp(int(b"Columns", 1))).saturating_mul(2)
}

/// Flate as lopdf runs it: zlib, and when that fails before any output, raw deflate after the
/// two header bytes.
fn inflate(data: &[u8], out: &mut Capped) {
    if data.is_empty() {
        return;
    }
    let zlib = std::io::copy(&mut flate2::read::ZlibDecoder::new(data), out);
    if zlib.is_err() && out.count == 0 && data.len() > 2 {
        let _ = std::io::copy(&mut flate2::read::DeflateDecoder::new(&data[2..]), out);
    }
}

/// LZW as lopdf runs it (MSB first, 8-bit symbols, early change unless `/EarlyChange 0`);
/// a decoding error keeps what was decoded, as lopdf does.
fn unlzw(data: &[u8], params: Option<&Dictionary>, out: &mut Capped) {
    use weezl::{decode::Decoder, BitOrder};
    let early = params.and_then(|p| p.get(b"EarlyChange").ok()).and_then(|o| o.as_i64().ok()) != Some(0);
    let mut decoder =
        if early { Decoder::with_tiff_size_switch(BitOrder::Msb, 8) } else { Decoder::new(BitOrder::Msb, 8) };
    let mut stream = decoder.into_stream(out);
    stream.set_buffer_size(64 * 1024); // weezl's default is 16 MiB a step
    let _ = stream.decode_all(data);
}

/// ASCII85 (at most four bytes per input byte), decoded by lopdf itself.
fn un_ascii85(data: &[u8], out: &mut Capped) {
    let mut dict = Dictionary::new();
    dict.set("Filter", Object::Name(b"ASCII85Decode".to_vec()));
    if let Ok(decoded) = Stream::new(dict, data.to_vec()).decompressed_content() {
        let _ = out.write_all(&decoded);
    }
}

/// A writer that counts what it is given and keeps it (for the next filter) when asked,
/// failing once past its limit so a decoder stops there.
struct Capped {
    count: u64,
    limit: u64,
    keep: bool,
    kept: Vec<u8>,
}

impl Capped {
    fn new(limit: u64, keep: bool) -> Capped {
        Capped { count: 0, limit, keep, kept: Vec::new() }
    }
}

impl Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.count > self.limit {
            return Err(std::io::Error::other("past the bound"));
        }
        self.count += buf.len() as u64;
        if self.keep {
            self.kept.extend_from_slice(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(filter: Object, params: Option<Dictionary>, content: Vec<u8>) -> Stream {
        let mut dict = Dictionary::new();
        dict.set("Filter", filter);
        if let Some(p) = params {
            dict.set("DecodeParms", p);
        }
        Stream::new(dict, content)
    }

    fn lzw(data: &[u8]) -> Vec<u8> {
        weezl::encode::Encoder::with_tiff_size_switch(weezl::BitOrder::Msb, 8).encode(data).unwrap()
    }

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(data).unwrap();
        z.finish().unwrap()
    }

    #[test]
    fn every_filter_of_a_chain_is_counted_as_lopdf_decodes_it() {
        let text = b"BT (Heron) Tj ET ".repeat(1000);
        let name = |n: &str| Object::Name(n.as_bytes().to_vec());
        let s = stream(name("LZWDecode"), None, lzw(&text));
        assert_eq!(decoded_size(&s, 1 << 20), text.len() as u64);
        assert_eq!(s.decompressed_content().unwrap(), text, "the same LZW flavour as lopdf");
        let chain = Object::Array(vec![name("FlateDecode"), name("LZWDecode")]);
        assert_eq!(decoded_size(&stream(chain, None, zlib(&lzw(&text))), 1 << 20), text.len() as u64);
        let s = stream(name("ASCII85Decode"), None, b"zzzz~>".to_vec());
        assert_eq!(decoded_size(&s, 1 << 20), 16);
        // A bad zlib header: lopdf inflates what follows it as raw deflate.
        let mut raw = flate2::write::DeflateEncoder::new(vec![0u8, 0], flate2::Compression::best());
        raw.write_all(&text).unwrap();
        let s = stream(name("FlateDecode"), None, raw.finish().unwrap());
        assert_eq!(decoded_size(&s, 1 << 20), text.len() as u64);
        assert_eq!(s.decompressed_content().unwrap(), text, "lopdf's fallback");
        // Counting stops just past the limit.
        let big = vec![b' '; 4 << 20];
        let n = decoded_size(&stream(name("LZWDecode"), None, lzw(&big)), 1 << 20);
        assert!(n > 1 << 20 && n <= (1 << 20) + 64 * 1024, "{n}");
        let mut p = Dictionary::new();
        p.set("Predictor", 12);
        p.set("Columns", 1_000_000_000);
        assert!(decoded_size(&stream(name("FlateDecode"), Some(p), zlib(b"x")), 1 << 20) > 1 << 20);
        assert_eq!(decoded_size(&stream(name("DCTDecode"), None, vec![1, 2, 3]), 1 << 20), 3);
    }
}
