//! The repository files a context pack quotes, taken in no further than the pack shows them.
//!
//! A file up to [`WHOLE_FILE_BYTES`] is read whole and split into lines. A larger one (a
//! minified bundle, a one-line JSON dump of megabytes) is scanned once in blocks for where its
//! lines start and end, and only the lines a snippet shows, or the window of an excerpt, are
//! read, decoded and masked: a pack on two 8 MB one-line files read, decoded and masked both
//! whole to show 900 bytes of each. A large file that is not UTF-8 throughout, or that holds a
//! PEM marker (whose key lines only the whole file tells apart), is read whole as before.
//!
//! Masking (`[privacy] redact_snippets`) applies to what is shown, through the file's
//! [`FileMasker`]; an excerpt's window is masked with a margin on each side, so a secret its edge
//! cuts is seen whole (and shown masked whole, or not at all).

use crate::engine::fsutil;
use crate::engine::index::{extract, sources};
use crate::engine::privacy::{self, FileMasker, Finding};
use crate::engine::repos::RepoRef;
use crate::engine::waterfall::excerpt::{self, Excerpt, MAX_EXCERPT_BYTES};
use memchr::memmem;
use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::Arc;

/// Files up to this size are read whole; larger ones are scanned and read by the lines shown.
pub(crate) const WHOLE_FILE_BYTES: u64 = 1 << 20;
/// Bytes read at a time when a large file is scanned.
const BLOCK_BYTES: usize = 64 * 1024;
/// Bytes masked on each side of an excerpt's window beyond what it shows.
const MASK_MARGIN: usize = 256;
/// The markers that make a large file be read whole (see [`FileMasker`]).
const PEM_MARKERS: [&[u8]; 2] = [b"-----BEGIN ", b"-----END "];

/// Lines `line_start..=line_end` of a file as the pack shows them (masked when asked).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Slice {
    pub line_start: u32,
    pub line_end: u32,
    pub text: String,
}

/// What a range of lines holds, known without reading it: clamped lines, its bytes (newlines
/// between lines included), and whether a line of it is longer than an excerpt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Extent {
    pub line_start: u32,
    pub line_end: u32,
    pub bytes: u64,
    pub long_line: bool,
}

/// A file as the reader holds it.
enum Held {
    /// Read whole: its lines, and the masker that knows its key blocks.
    Whole { lines: Vec<String>, masker: Option<FileMasker> },
    /// Scanned: where each line is, read again by range.
    Large(Large),
}

/// A large UTF-8 file without PEM markers: each line's byte span (its line end excluded).
struct Large {
    root: PathBuf,
    rel: String,
    spans: Vec<(u64, u64)>,
}

/// Reads the files of one pack, each scanned or read once, refusing anything that resolves
/// outside the repository (the one opener, as every repository read).
pub(crate) struct PackFiles {
    repo: RepoRef,
    mask: bool,
    cache: HashMap<String, Option<Arc<Held>>>,
    /// Findings masked in each range handed out, by (path, first line, last line).
    masked: HashMap<(String, u32, u32), usize>,
    /// Bytes of files taken in as text (decoded, masked): the pack's reading cost.
    text_bytes: u64,
}

impl PackFiles {
    /// A reader for `repo`, masking secrets and personal data in what it hands out when `mask`.
    pub fn new(repo: &RepoRef, mask: bool) -> PackFiles {
        PackFiles { repo: repo.clone(), mask, cache: HashMap::new(), masked: HashMap::new(), text_bytes: 0 }
    }

    /// Bytes taken in as text so far: whole small files, and of large files the lines and
    /// windows handed out.
    pub fn text_bytes(&self) -> u64 {
        self.text_bytes
    }

    fn held(&mut self, rel: &str) -> Option<Arc<Held>> {
        if let Some(hit) = self.cache.get(rel) {
            return hit.clone();
        }
        let held = self.load(rel).map(Arc::new);
        self.cache.insert(rel.to_string(), held.clone());
        held
    }

    /// A small file (or a document's extracted text) whole; a large one scanned.
    fn load(&mut self, rel: &str) -> Option<Held> {
        if extract::Format::of(rel).is_some() {
            return self.whole(extract::indexed_text(&self.repo, rel).ok()?);
        }
        let (root, inner) = sources::locate(&self.repo, &sources::load(&self.repo.state_dir), rel).ok()?;
        let mut file = fsutil::open_repo_file(&root, &inner).ok()?;
        let size = file.metadata().ok()?.len();
        if size > fsutil::read_ceiling() {
            return None;
        }
        if size > WHOLE_FILE_BYTES {
            match scan(&mut file) {
                Ok(Scan::Lines(spans)) => return Some(Held::Large(Large { root, rel: inner, spans })),
                Ok(Scan::Binary) | Err(_) => return None,
                Ok(Scan::ReadWhole) => {}
            }
            file.seek(SeekFrom::Start(0)).ok()?;
        }
        let mut bytes = Vec::with_capacity(size as usize + 1);
        file.take(fsutil::read_ceiling().saturating_add(1)).read_to_end(&mut bytes).ok()?;
        self.whole(bytes)
    }

    fn whole(&mut self, bytes: Vec<u8>) -> Option<Held> {
        if fsutil::looks_binary(&bytes) {
            return None;
        }
        self.text_bytes += bytes.len() as u64;
        let text = fsutil::decode_text_owned(bytes);
        let masker = self.mask.then(|| FileMasker::new(&text));
        Some(Held::Whole { lines: text.lines().map(str::to_string).collect(), masker })
    }

    /// How many lines the file has, or `None` when it is missing, binary or outside the repository.
    pub fn total(&mut self, rel: &str) -> Option<u32> {
        Some(match &*self.held(rel)? {
            Held::Whole { lines, .. } => lines.len() as u32,
            Held::Large(l) => l.spans.len() as u32,
        })
    }

    /// Lines `a..=b` (1-based, clamped) measured, or `None` when the range is empty.
    pub fn extent(&mut self, rel: &str, a: u32, b: u32) -> Option<Extent> {
        let held = self.held(rel)?;
        let lens: Vec<u64> = match &*held {
            Held::Whole { lines, .. } => range(lines.len(), a, b)?.map(|i| lines[i].len() as u64).collect(),
            Held::Large(l) => range(l.spans.len(), a, b)?.map(|i| l.spans[i].1 - l.spans[i].0).collect(),
        };
        let a = a.max(1);
        Some(Extent {
            line_start: a,
            line_end: a + lens.len() as u32 - 1,
            bytes: lens.iter().sum::<u64>() + lens.len() as u64 - 1,
            long_line: lens.iter().any(|&n| n > MAX_EXCERPT_BYTES as u64),
        })
    }

    /// Lines `a..=b` (1-based, clamped) as shown, or `None` when the range is empty or the
    /// file unreadable. The caller bounds the range ([`PackFiles::extent`]): it is read whole.
    pub fn slice(&mut self, rel: &str, a: u32, b: u32) -> Option<Slice> {
        let held = self.held(rel)?;
        let lines = range(self.total(rel)? as usize, a, b)?;
        let (first, last) = (lines.start as u32 + 1, lines.end as u32);
        let text = match &*held {
            Held::Whole { lines: all, .. } => all[lines].join("\n"),
            Held::Large(l) => l.read_lines(lines).ok()?,
        };
        self.text_bytes += text.len() as u64;
        let (text, found) = self.mask_lines(&held, &text, first);
        self.masked.insert((rel.to_string(), first, last), found);
        Some(Slice { line_start: first, line_end: last, text })
    }

    /// At most `max` bytes of lines `a..=b` from their start, masked (the names a seed holds:
    /// a minified line's first bytes name as many as the pack looks up).
    pub fn head(&mut self, rel: &str, a: u32, b: u32, max: usize) -> Option<String> {
        let held = self.held(rel)?;
        let lines = range(self.total(rel)? as usize, a, b)?;
        let first = lines.start as u32 + 1;
        let text = match &*held {
            Held::Whole { lines: all, .. } => {
                let mut text = String::new();
                for line in &all[lines] {
                    if text.len() >= max {
                        break;
                    }
                    text.push_str(line);
                    text.push('\n');
                }
                text.truncate(excerpt::floor_boundary(&text, max));
                text
            }
            Held::Large(l) => {
                let end = l.spans[lines.end - 1].1.min(l.spans[lines.start].0 + max as u64);
                let bytes = l.read(l.spans[lines.start].0, end).ok()?;
                String::from_utf8_lossy(utf8_prefix(&bytes)).lines().collect::<Vec<_>>().join("\n")
            }
        };
        self.text_bytes += text.len() as u64;
        Some(self.mask_lines(&held, &text, first).0)
    }

    /// The first line of `rel` holding `needle` (case and all).
    pub fn first_line_with(&mut self, rel: &str, needle: &str) -> Option<u32> {
        match &*self.held(rel)? {
            Held::Whole { lines, .. } => lines.iter().position(|l| l.contains(needle)).map(|i| i as u32 + 1),
            Held::Large(l) => {
                let at = l.find_first(needle.as_bytes()).ok()??;
                Some(l.spans.partition_point(|s| s.0 <= at) as u32)
            }
        }
    }

    /// The excerpt of lines `a..=b` around the rarest of `terms` ([`excerpt::excerpt`]), read
    /// and masked no further than its window; `None` when the range is empty.
    pub fn excerpt(&mut self, rel: &str, a: u32, b: u32, terms: &[String]) -> Option<Excerpt> {
        let held = self.held(rel)?;
        let lines = range(self.total(rel)? as usize, a, b)?;
        let first = lines.start;
        let lens: Vec<usize> = match &*held {
            Held::Whole { lines: all, .. } => all[lines.clone()].iter().map(String::len).collect(),
            Held::Large(l) => l.spans[lines.clone()].iter().map(|s| (s.1 - s.0) as usize).collect(),
        };
        let (idx, pos) = match &*held {
            Held::Whole { lines: all, .. } => excerpt::rarest_match(&all[lines], terms),
            Held::Large(l) => l.rarest(lines, terms).ok()?,
        }
        .unwrap_or((0, 0));
        let n = (first + idx) as u32 + 1;
        if lens[idx] <= MAX_EXCERPT_BYTES {
            let (from, to) = excerpt::around(&lens, idx);
            let (a, b) = (first as u32 + from as u32 + 1, first as u32 + to as u32 + 1);
            let s = self.slice(rel, a, b)?;
            return Some(Excerpt { line_start: s.line_start, line_end: s.line_end, text: s.text, cut: false });
        }
        let (start, end) = excerpt::long_span(lens[idx], pos);
        let (w_from, w_to) = (start.saturating_sub(MASK_MARGIN), (end + MASK_MARGIN).min(lens[idx]));
        let (window, w_off) = match &*held {
            Held::Whole { lines: all, .. } => {
                let line = &all[first + idx];
                let from = excerpt::floor_boundary(line, w_from);
                (line[from..excerpt::floor_boundary(line, w_to)].to_string(), from)
            }
            Held::Large(l) => {
                let (ls, _) = l.spans[first + idx];
                let bytes = l.read(ls + w_from as u64, ls + w_to as u64).ok()?;
                let skip = bytes.iter().take(3).take_while(|b| (**b & 0xC0) == 0x80).count();
                let text = String::from_utf8_lossy(utf8_prefix(&bytes[skip..])).into_owned();
                (text, w_from + skip)
            }
        };
        self.text_bytes += window.len() as u64;
        let cs = excerpt::floor_boundary(&window, start.saturating_sub(w_off));
        let ce = excerpt::floor_boundary(&window, cs + MAX_EXCERPT_BYTES).max(cs);
        let (text, found) = self.masked_cut(&held, &window, (cs, ce), (w_off, lens[idx]), n);
        self.masked.insert((rel.to_string(), n, n), found);
        Some(Excerpt { line_start: n, line_end: n, text, cut: true })
    }

    /// How many findings were masked in the range handed out as lines `a..=b` of `rel` last.
    pub fn masked_in(&self, rel: &str, a: u32, b: u32) -> usize {
        self.masked.get(&(rel.to_string(), a, b)).copied().unwrap_or(0)
    }

    fn mask_with(&self, held: &Held, text: &str, first_line: u32) -> (String, Vec<Finding>) {
        match held {
            Held::Whole { masker: Some(m), .. } => m.mask(text, first_line),
            _ => privacy::mask(text),
        }
    }

    /// Whole lines masked, with the number of findings.
    fn mask_lines(&self, held: &Held, text: &str, first_line: u32) -> (String, usize) {
        if !self.mask {
            return (text.to_string(), 0);
        }
        let (masked, found) = self.mask_with(held, text, first_line);
        (masked, found.len())
    }

    /// `window[cut]` of a line (the window starting at byte `w_off` of a line of `line_len`
    /// bytes), masked as the whole window shows it: the cut's edges move out to take in a
    /// finding they fall inside, and past one its text alone does not show (a secret whose name
    /// is left of the cut), so the cut never shows a secret's part unmasked. `…` marks where the
    /// line goes on.
    fn masked_cut(
        &self,
        held: &Held,
        window: &str,
        cut: (usize, usize),
        (w_off, line_len): (usize, usize),
        line: u32,
    ) -> (String, usize) {
        let (mut s, mut e) = cut;
        let mut shown = (window[s..e].to_string(), 0);
        if self.mask {
            let wide = self.mask_with(held, window, line).1;
            for f in &wide {
                if f.range.start < s && s < f.range.end {
                    s = f.range.start;
                }
                if f.range.start < e && e < f.range.end {
                    e = f.range.end;
                }
            }
            loop {
                let (text, found) = self.mask_with(held, &window[s..e], line);
                let seen = |f: &Finding| {
                    found.iter().any(|g| g.range.start + s < f.range.end && f.range.start < g.range.end + s)
                };
                match wide.iter().find(|f| s <= f.range.start && f.range.end <= e && !seen(f)) {
                    Some(f) => s = f.range.end.min(e),
                    None => {
                        shown = (text, found.len());
                        break;
                    }
                }
            }
        }
        let lead = if w_off + s > 0 { "…" } else { "" };
        let tail = if w_off + e < line_len { "…" } else { "" };
        (format!("{lead}{}{tail}", shown.0), shown.1)
    }
}

/// Indexes (0-based) of lines `a..=b` (1-based) of a file of `total` lines, clamped; `None`
/// when empty.
fn range(total: usize, a: u32, b: u32) -> Option<std::ops::Range<usize>> {
    let a = a.max(1) as usize;
    let b = (b as usize).min(total);
    (a <= b).then(|| a - 1..b)
}

/// The longest prefix of `bytes` that is UTF-8 but for a bad byte inside (a character cut at
/// the end is dropped).
fn utf8_prefix(bytes: &[u8]) -> &[u8] {
    match std::str::from_utf8(bytes) {
        Err(e) if e.error_len().is_none() => &bytes[..e.valid_up_to()],
        _ => bytes,
    }
}

/// What a scan of a large file found.
enum Scan {
    /// Each line's byte span.
    Lines(Vec<(u64, u64)>),
    /// Not UTF-8 throughout, UTF-16, or with a PEM marker: read it whole.
    ReadWhole,
    /// Binary: not served.
    Binary,
}

/// One pass over a large file in blocks: its lines' spans (as `str::lines` splits the text: a
/// `\r` before `\n` is no part of the line, a last `\n` ends the last line), and whether it must
/// be read whole after all.
fn scan(file: &mut File) -> std::io::Result<Scan> {
    let mut block = vec![0u8; BLOCK_BYTES];
    let mut spans = Vec::new();
    let (mut at, mut line_start, mut prev) = (0u64, 0u64, 0u8);
    let mut pending: Vec<u8> = Vec::new();
    let mut tail: Vec<u8> = Vec::new();
    loop {
        let n = file.read(&mut block)?;
        if n == 0 {
            break;
        }
        let data = &block[..n];
        if at == 0 {
            if fsutil::looks_binary(data) {
                return Ok(Scan::Binary);
            }
            if data.starts_with(b"\xFF\xFE") || data.starts_with(b"\xFE\xFF") {
                return Ok(Scan::ReadWhole);
            }
            if data.starts_with(b"\xEF\xBB\xBF") {
                line_start = 3;
            }
        }
        pending.extend_from_slice(data);
        match std::str::from_utf8(&pending) {
            Ok(_) => pending.clear(),
            Err(e) if e.error_len().is_none() => pending = pending.split_off(e.valid_up_to()),
            Err(_) => return Ok(Scan::ReadWhole),
        }
        tail.extend_from_slice(&data[..data.len().min(16)]);
        if PEM_MARKERS.iter().any(|m| memmem::find(&tail, m).is_some() || memmem::find(data, m).is_some()) {
            return Ok(Scan::ReadWhole);
        }
        tail = data[data.len().saturating_sub(16)..].to_vec();
        for i in memchr::memchr_iter(b'\n', data) {
            let nl = at + i as u64;
            let before = if i > 0 { data[i - 1] } else { prev };
            let end = if before == b'\r' && nl > line_start { nl - 1 } else { nl };
            spans.push((line_start, end));
            line_start = nl + 1;
        }
        prev = data[n - 1];
        at += n as u64;
    }
    if !pending.is_empty() {
        return Ok(Scan::ReadWhole);
    }
    if line_start < at {
        spans.push((line_start, at));
    }
    Ok(Scan::Lines(spans))
}

impl Large {
    fn open(&self) -> std::io::Result<File> {
        fsutil::open_repo_file(&self.root, &self.rel)
    }

    /// Bytes `from..to` of the file.
    fn read(&self, from: u64, to: u64) -> std::io::Result<Vec<u8>> {
        let mut file = self.open()?;
        file.seek(SeekFrom::Start(from))?;
        let mut bytes = Vec::with_capacity(to.saturating_sub(from) as usize);
        file.take(to.saturating_sub(from)).read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// Lines `range` (0-based indexes) joined by `\n`.
    fn read_lines(&self, range: std::ops::Range<usize>) -> std::io::Result<String> {
        let bytes = self.read(self.spans[range.start].0, self.spans[range.end - 1].1)?;
        let text = String::from_utf8_lossy(&bytes);
        Ok(text.lines().collect::<Vec<_>>().join("\n"))
    }

    /// Calls `each` with the file's bytes from `from` to `to` in blocks, each with the absolute
    /// offset of its first byte; stops when `each` says so.
    fn blocks(&self, from: u64, to: u64, mut each: impl FnMut(u64, &[u8]) -> bool) -> std::io::Result<()> {
        let mut file = self.open()?;
        file.seek(SeekFrom::Start(from))?;
        let mut reader = file.take(to.saturating_sub(from));
        let mut block = vec![0u8; BLOCK_BYTES];
        let mut at = from;
        loop {
            let n = reader.read(&mut block)?;
            if n == 0 || !each(at, &block[..n]) {
                return Ok(());
            }
            at += n as u64;
        }
    }

    /// The offset of the first `needle` in the file.
    fn find_first(&self, needle: &[u8]) -> std::io::Result<Option<u64>> {
        let keep = needle.len().saturating_sub(1);
        let (mut carry, mut found) = (Vec::new(), None);
        let end = self.spans.last().map_or(0, |s| s.1);
        self.blocks(0, end, |at, data| {
            let hay = [carry.as_slice(), data].concat();
            if let Some(i) = memmem::find(&hay, needle) {
                found = Some(at + i as u64 - carry.len() as u64);
                return false;
            }
            carry = hay[hay.len().saturating_sub(keep)..].to_vec();
            true
        })?;
        Ok(found)
    }

    /// (line index in `range`, byte in that line) of the first occurrence of the rarest of
    /// `terms` in lines `range`, as [`excerpt::rarest_match`] finds it in lines held, scanned
    /// in blocks (lowercased, as the terms are).
    fn rarest(&self, range: std::ops::Range<usize>, terms: &[String]) -> std::io::Result<Option<(usize, usize)>> {
        let terms: Vec<&String> = terms.iter().filter(|t| !t.is_empty()).collect();
        let finders: Vec<memmem::Finder> = terms.iter().map(|t| memmem::Finder::new(t.as_bytes())).collect();
        let keep = terms.iter().map(|t| t.len()).max().unwrap_or(1) - 1;
        let mut found: Vec<(usize, Option<u64>)> = vec![(0, None); terms.len()];
        let mut carry: Vec<u8> = Vec::new();
        let (from, to) = (self.spans[range.start].0, self.spans[range.end - 1].1);
        self.blocks(from, to, |at, data| {
            let mut hay = std::mem::take(&mut carry);
            let old = hay.len();
            hay.extend(data.iter().map(u8::to_ascii_lowercase));
            for (f, (count, first)) in finders.iter().zip(found.iter_mut()) {
                for p in f.find_iter(&hay).filter(|p| p + f.needle().len() > old) {
                    *count += 1;
                    first.get_or_insert(at + p as u64 - old as u64);
                }
            }
            carry = hay[hay.len().saturating_sub(keep)..].to_vec();
            true
        })?;
        let spans = &self.spans[range];
        let hits = found.iter().zip(&terms).filter_map(|((count, first), t)| Some((*count, t.len(), (*first)?)));
        Ok(excerpt::rarest(hits).map(|off| {
            let idx = spans.partition_point(|s| s.0 <= off).saturating_sub(1);
            (idx, (off - spans[idx].0) as usize)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scanned(text: &[u8]) -> Vec<(u64, u64)> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, text).unwrap();
        match scan(&mut File::open(&path).unwrap()).unwrap() {
            Scan::Lines(spans) => spans,
            _ => panic!("read whole"),
        }
    }

    #[test]
    fn a_scan_splits_lines_as_str_lines_does() {
        for text in ["a\nbb\r\n\nccc", "a\n", "", "\n\n", "x\r\ny\r\n", "\u{feff}bom\nz"] {
            let spans = scanned(text.as_bytes());
            let got: Vec<&str> = spans.iter().map(|&(s, e)| &text[s as usize..e as usize]).collect();
            let want: Vec<&str> = text.trim_start_matches('\u{feff}').lines().collect();
            assert_eq!(got, want, "{text:?}");
        }
        // A `\r\n` split across two blocks.
        let mut text = "y".repeat(BLOCK_BYTES - 1);
        text.push_str("\r\nend");
        let spans = scanned(text.as_bytes());
        assert_eq!(spans, [(0, BLOCK_BYTES as u64 - 1), (BLOCK_BYTES as u64 + 1, BLOCK_BYTES as u64 + 4)]);
    }

    #[test]
    fn large_files_with_markers_or_not_utf8_are_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        for (i, text) in [b"-----BEGIN RSA PRIVATE KEY-----\n".to_vec(), b"caf\xe9\n".to_vec()].iter().enumerate() {
            let path = dir.path().join(format!("f{i}"));
            let mut bytes = b"x".repeat(BLOCK_BYTES - 5);
            bytes.extend_from_slice(text);
            std::fs::write(&path, &bytes).unwrap();
            assert!(matches!(scan(&mut File::open(&path).unwrap()).unwrap(), Scan::ReadWhole), "{i}");
        }
    }
}
