//! Whole-file BM25: each file scored as one document, the way a developer's "which file does
//! this touch" treats it. Chunk BM25 rewards the one region that repeats the query's words;
//! a described change often spreads its words over a whole module (the function, its
//! callers, its error message), which only the file's totals show.
//!
//! Nothing is stored for it: a file's term frequencies are the sums over its chunks, read
//! from the chunk postings (one block pass per query term and segment), plus one for a term in
//! its path; a file's length is the sum of its chunks' field norms. Which file each document
//! belongs to, and each file's length and class, are tabulated once per searcher (segments
//! and deletes) in a [`FileTable`] and reused by every search until the index changes.
//!
//! Tabulating reads two fast fields of every document (about 5 ms for 146,000 chunks), which a
//! one-shot `docdex search` process would pay on every run; so the table is also kept on disk
//! beside the index ([`FILE_NAME`]), keyed by the segment set and checksummed, and mapped
//! and read in place when it still describes the searcher (no copy, no decoding: a cold
//! process touches only the pages it needs). A stale or damaged file is rebuilt over.

use crate::engine::index::files::FileClass;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::{Path, PathBuf};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocAddress, Searcher, Term};

/// BM25 term-frequency saturation (the usual value).
const K1: f32 = 1.2;
/// BM25 length normalisation (the usual value).
const B: f32 = 0.75;
/// Marks a deleted document in a segment's document-to-file array.
const NO_FILE: u32 = u32::MAX;
/// The table's file, in the index directory.
pub const FILE_NAME: &str = "file_table.bin";
/// First bytes of [`FILE_NAME`]; the digit is the format version.
const MAGIC: &[u8; 8] = b"DDXFT01\n";

/// File ids are xxh3 hashes already: hashing them again only costs time.
#[derive(Default)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | b as u64;
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type IdMap = HashMap<u64, u32, BuildHasherDefault<IdHasher>>;
/// A map keyed by file id ([`IdHasher`]).
pub type FileIdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;

/// Per searcher: which file each document is, and each file's length and class.
///
/// Held as its encoded bytes (the format of [`FILE_NAME`]) and read in place: a kept table is
/// memory-mapped, so a one-shot search process neither copies nor decodes it and touches only
/// the pages its query's postings reach.
pub struct FileTable {
    /// Identity of the segment set this table describes.
    key: u64,
    /// The encoded table.
    bytes: TableBytes,
    /// Per segment ordinal: the byte range of its document-to-file array (`u32` per document,
    /// a dense file index or [`NO_FILE`]).
    segments: Vec<std::ops::Range<usize>>,
    /// Number of files.
    files: usize,
    /// Where the file lengths (`f32`, body tokens) and classes (`u8`) start; the file ids
    /// (`u64`, xxh3 of the path) come just before the lengths.
    len_at: usize,
    class_at: usize,
    /// Mean file length.
    avg_len: f32,
}

/// A table's bytes: mapped from the kept file, or built in this process.
enum TableBytes {
    /// Safe to read while mapped: docdex replaces the file by rename, never in place, so the
    /// mapped inode stays whole (as for Tantivy's own mapped segment files).
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl std::ops::Deref for TableBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            TableBytes::Mapped(m) => m,
            TableBytes::Owned(v) => v,
        }
    }
}

/// A segment's document-to-file array, read in place, and the table's file count.
#[derive(Clone, Copy)]
struct SegmentFiles<'a>(&'a [u8], u32);

impl SegmentFiles<'_> {
    /// The dense file index of document `doc`, or `None` (deleted, past the segment, or an
    /// entry past the file count). Entries are range-checked here, per lookup, rather than all
    /// at load: a one-shot search reads a few thousand of a 30k-file table's entries, and
    /// checking every one at load cost a cold process about 2M instructions.
    fn file(self, doc: u32) -> Option<u32> {
        let at = doc as usize * 4;
        let f = le_u32(self.0.get(at..at + 4)?);
        (f < self.1).then_some(f)
    }
}

/// The identity of a searcher's segment set (ids, sizes and delete counts, in order), stable
/// across processes: a segment's deletes only grow, so equal counts mean equal deletes.
pub fn searcher_key(searcher: &Searcher) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for r in searcher.segment_readers() {
        h.update(r.segment_id().uuid_string().as_bytes());
        h.update(&r.max_doc().to_le_bytes());
        h.update(&r.num_deleted_docs().to_le_bytes());
    }
    h.digest()
}

/// Where the table of the index in `index_dir` is kept.
pub fn path(index_dir: &Path) -> PathBuf {
    index_dir.join(FILE_NAME)
}

/// A table being tabulated, before it is encoded.
struct Columns {
    key: u64,
    file_of: Vec<Vec<u32>>,
    ids: Vec<u64>,
    len: Vec<f32>,
    class: Vec<u8>,
    avg_len: f32,
}

impl Columns {
    /// The encoded table, ending in an xxh3 of everything before.
    fn encode(&self) -> Vec<u8> {
        let mut b =
            Vec::with_capacity(32 + self.file_of.iter().map(|f| f.len() * 4 + 4).sum::<usize>() + self.ids.len() * 13);
        b.extend_from_slice(MAGIC);
        b.extend_from_slice(&self.key.to_le_bytes());
        b.extend_from_slice(&(self.file_of.len() as u32).to_le_bytes());
        b.extend_from_slice(&(self.ids.len() as u32).to_le_bytes());
        for of in &self.file_of {
            b.extend_from_slice(&(of.len() as u32).to_le_bytes());
            of.iter().for_each(|f| b.extend_from_slice(&f.to_le_bytes()));
        }
        self.ids.iter().for_each(|id| b.extend_from_slice(&id.to_le_bytes()));
        self.len.iter().for_each(|l| b.extend_from_slice(&l.to_le_bytes()));
        b.extend_from_slice(&self.class);
        b.extend_from_slice(&self.avg_len.to_le_bytes());
        let sum = xxhash_rust::xxh3::xxh3_64(&b);
        b.extend_from_slice(&sum.to_le_bytes());
        b
    }
}

impl FileTable {
    /// The table for `searcher`: the kept one in `index_dir` when it describes it, else
    /// tabulated and kept there for the next process (best effort: a read-only state directory
    /// only costs the next process the tabulation).
    pub fn load_or_build(searcher: &Searcher, body: Field, index_dir: &Path) -> FileTable {
        let file = path(index_dir);
        if let Some(t) = map(&file).and_then(|m| FileTable::decode(TableBytes::Mapped(m), searcher)) {
            return t;
        }
        let t = FileTable::build(searcher, body);
        if let Err(e) = crate::engine::fsutil::replace_bytes(&file, &t.bytes) {
            tracing::debug!(path = %file.display(), error = %e, "file table not kept");
        }
        t
    }

    /// Tabulates `searcher`'s documents (one pass over two fast fields and a field norm).
    pub fn build(searcher: &Searcher, body: Field) -> FileTable {
        let t = tabulate(searcher, body);
        let key = t.key;
        let bytes = TableBytes::Owned(t.encode());
        FileTable::decode(bytes, searcher).unwrap_or_else(|| FileTable::empty(key))
    }

    /// A table of no files (what an encoding this process just wrote could not be read as:
    /// whole-file scores are then left out, never wrong).
    fn empty(key: u64) -> FileTable {
        let bytes = TableBytes::Owned(Vec::new());
        FileTable { key, bytes, segments: Vec::new(), files: 0, len_at: 0, class_at: 0, avg_len: 1.0 }
    }

    /// Whether this table describes `searcher`'s segments.
    pub fn is_for(&self, searcher: &Searcher) -> bool {
        self.key == searcher_key(searcher)
    }

    /// Reads an encoded table in place; `None` unless it is whole (checksum) and describes
    /// `searcher` (key, segment count and sizes, file indexes in range).
    fn decode(bytes: TableBytes, searcher: &Searcher) -> Option<FileTable> {
        let b: &[u8] = &bytes;
        let (body, sum) = b.split_at_checked(b.len().checked_sub(8)?)?;
        if !body.starts_with(MAGIC) || xxhash_rust::xxh3::xxh3_64(body).to_le_bytes() != sum {
            return None;
        }
        let mut r = Reader { bytes: body, at: MAGIC.len() };
        let key = r.u64()?;
        let readers = searcher.segment_readers();
        if key != searcher_key(searcher) || r.u32()? as usize != readers.len() {
            return None;
        }
        let files = r.u32()? as usize;
        let mut segments = Vec::with_capacity(readers.len());
        for reader in readers {
            let max = r.u32()?;
            if max != reader.max_doc() {
                return None;
            }
            segments.push(r.skip(max as usize * 4)?);
        }
        r.skip(files * 8)?;
        let len_at = r.skip(files * 4)?.start;
        let class_at = r.skip(files)?.start;
        let avg_len = f32::from_bits(r.u32()?);
        if r.at != body.len() {
            return None;
        }
        Some(FileTable { key, bytes, segments, files, len_at, class_at, avg_len })
    }

    /// Number of files.
    pub fn files(&self) -> usize {
        self.files
    }

    /// Segment `ord`'s document-to-file array.
    fn segment(&self, ord: usize) -> Option<SegmentFiles<'_>> {
        let files = u32::try_from(self.files).ok()?;
        self.bytes.get(self.segments.get(ord)?.clone()).map(|of| SegmentFiles(of, files))
    }

    /// The dense index of the file document `addr` belongs to.
    fn file_at(&self, addr: DocAddress) -> Option<usize> {
        self.segment(addr.segment_ord as usize)?.file(addr.doc_id).map(|f| f as usize)
    }

    /// File `f`'s length in body tokens (0 past the table).
    fn len(&self, f: usize) -> f32 {
        let at = self.len_at + f * 4;
        self.bytes.get(at..at + 4).map_or(0.0, |c| f32::from_bits(le_u32(c)))
    }

    /// File `f`'s class.
    fn class(&self, f: usize) -> FileClass {
        FileClass::from_u64(self.bytes.get(self.class_at + f).copied().unwrap_or(0) as u64)
    }

    /// File `f`'s id (xxh3 of its path).
    #[cfg(test)]
    fn id(&self, f: usize) -> u64 {
        let at = self.len_at - (self.files - f) * 8;
        self.bytes.get(at..at + 8).map_or(0, le_u64)
    }
}

/// The kept table at `file`, mapped, when there is one.
fn map(file: &Path) -> Option<memmap2::Mmap> {
    let f = std::fs::File::open(file).ok()?;
    // SAFETY: the file is only ever replaced by rename (`fsutil::replace_bytes`), never written
    // or truncated in place, so the mapping stays valid and unchanged while it is read.
    unsafe { memmap2::Mmap::map(&f) }.ok()
}

/// One pass over `searcher`'s documents: each one's file, and each file's id, length and class.
fn tabulate(searcher: &Searcher, body: Field) -> Columns {
    let docs: u32 = searcher.segment_readers().iter().map(|r| r.num_docs()).sum();
    // File id to dense index, while tabulating (searches address files by document).
    let mut index = IdMap::with_capacity_and_hasher(docs as usize / 4, Default::default());
    let mut t = Columns {
        key: searcher_key(searcher),
        file_of: Vec::new(),
        ids: Vec::new(),
        len: Vec::new(),
        class: Vec::new(),
        avg_len: 1.0,
    };
    let mut id_of_doc: Vec<u64> = Vec::new();
    for reader in searcher.segment_readers() {
        let max = reader.max_doc();
        let mut of = vec![NO_FILE; max as usize];
        let ff = reader.fast_fields();
        let (Ok(ids), Ok(classes)) = (ff.u64("file_id"), ff.u64("class")) else {
            t.file_of.push(of);
            continue;
        };
        // Every chunk has a file id: read the column in one sweep, not doc by doc.
        let dense = matches!(ids.index, tantivy::columnar::ColumnIndex::Full);
        if dense {
            id_of_doc.clear();
            id_of_doc.resize(max as usize, 0);
            ids.values.get_range(0, &mut id_of_doc);
        }
        let norms = reader.get_fieldnorms_reader(body).ok();
        let alive = reader.alive_bitset();
        let mut last: Option<(u64, u32)> = None;
        for doc in 0..max {
            if alive.is_some_and(|a| a.is_deleted(doc)) {
                continue;
            }
            let id = if dense { id_of_doc.get(doc as usize).copied() } else { ids.first(doc) };
            let Some(id) = id else { continue };
            // A file's chunks are written together: most documents repeat the last file.
            let f = match last {
                Some((last_id, f)) if last_id == id => f,
                _ => {
                    let next = t.ids.len() as u32;
                    let f = *index.entry(id).or_insert(next);
                    if f == next {
                        t.ids.push(id);
                        t.len.push(0.0);
                        t.class.push(classes.first(doc).unwrap_or(0) as u8);
                    }
                    last = Some((id, f));
                    f
                }
            };
            t.len[f as usize] += norms.as_ref().map(|n| n.fieldnorm(doc)).unwrap_or(1) as f32;
            of[doc as usize] = f;
        }
        t.file_of.push(of);
    }
    if !t.len.is_empty() {
        t.avg_len = (t.len.iter().sum::<f32>() / t.len.len() as f32).max(1.0);
    }
    t
}

/// A cursor over a kept table's bytes.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    /// Steps over `n` bytes, returning their range (`None` past the end).
    fn skip(&mut self, n: usize) -> Option<std::ops::Range<usize>> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len())?;
        let range = self.at..end;
        self.at = end;
        Some(range)
    }
    fn u32(&mut self) -> Option<u32> {
        let r = self.skip(4)?;
        self.bytes.get(r).map(le_u32)
    }
    fn u64(&mut self) -> Option<u64> {
        let r = self.skip(8)?;
        self.bytes.get(r).map(le_u64)
    }
}

fn le_u32(c: &[u8]) -> u32 {
    c.first_chunk().map_or(0, |b| u32::from_le_bytes(*b))
}

fn le_u64(c: &[u8]) -> u64 {
    c.first_chunk().map_or(0, |b| u64::from_le_bytes(*b))
}

/// Whole-file BM25 scores of one query: for every file holding a query term, its score (times
/// its class prior).
pub struct FileScores {
    /// Score per dense file index (0 for files with no query term).
    score: Vec<f32>,
}

impl FileScores {
    /// Scores the files of `table` for `terms` (with their plan weights): BM25 over each file's
    /// summed term frequencies, body and path, IDF over files; times `prior(class)`.
    pub fn compute(
        table: &FileTable,
        searcher: &Searcher,
        body: Field,
        path: Field,
        terms: &[(String, f32)],
        prior: &dyn Fn(FileClass) -> f32,
    ) -> FileScores {
        let n = table.files();
        let mut out = FileScores { score: vec![0.0; n] };
        if n == 0 {
            return out;
        }
        let mut tf = vec![0.0f32; n];
        // The last term (1-based) whose path match a file has counted.
        let mut path_mark: Vec<u32> = vec![0; n];
        let mut hit: Vec<u32> = Vec::new();
        let mut touched: Vec<u32> = Vec::new();
        for (ti, (term, weight)) in terms.iter().enumerate() {
            hit.clear();
            let mut count = |f: u32, freq: u32| {
                let fi = f as usize;
                if tf[fi] == 0.0 {
                    hit.push(f);
                }
                tf[fi] += freq.max(1) as f32;
            };
            each_posting(table, searcher, body, term, true, &mut count);
            // A term in the file's path counts once more (the path is part of what a file says).
            let mark = ti as u32 + 1;
            each_posting(table, searcher, path, term, false, |f, _| {
                if path_mark[f as usize] != mark {
                    path_mark[f as usize] = mark;
                    count(f, 1);
                }
            });
            let df = hit.len() as f32;
            let idf = (1.0 + (n as f32 - df + 0.5) / (df + 0.5)).ln();
            for &f in &hit {
                let fi = f as usize;
                let x = tf[fi];
                let norm = K1 * (1.0 - B + B * table.len(fi) / table.avg_len);
                if out.score[fi] == 0.0 {
                    touched.push(f);
                }
                out.score[fi] += weight * idf * x * (K1 + 1.0) / (x + norm);
                tf[fi] = 0.0;
            }
        }
        for &f in &touched {
            let fi = f as usize;
            out.score[fi] *= prior(table.class(fi));
        }
        out
    }

    /// The score of the file document `addr` belongs to (0 when it holds no query term).
    pub fn at(&self, table: &FileTable, addr: DocAddress) -> f32 {
        table.file_at(addr).and_then(|f| self.score.get(f)).copied().unwrap_or(0.0)
    }
}

/// Calls `visit(file, term frequency)` for every live document holding `text` in `field`, one
/// block of postings at a time (frequency 1 when `with_freqs` is off).
fn each_posting(
    table: &FileTable,
    searcher: &Searcher,
    field: Field,
    text: &str,
    with_freqs: bool,
    mut visit: impl FnMut(u32, u32),
) {
    let term = Term::from_field_text(field, text);
    let option = if with_freqs { IndexRecordOption::WithFreqs } else { IndexRecordOption::Basic };
    for (ord, reader) in searcher.segment_readers().iter().enumerate() {
        let Some(of) = table.segment(ord) else { continue };
        let Ok(inverted) = reader.inverted_index(field) else { continue };
        let Ok(Some(mut block)) = inverted.read_block_postings(&term, option) else { continue };
        loop {
            let docs = block.docs();
            if docs.is_empty() {
                break;
            }
            let freqs = if with_freqs { block.freqs() } else { &[] };
            for (i, &doc) in docs.iter().enumerate() {
                if let Some(f) = of.file(doc) {
                    visit(f, freqs.get(i).copied().unwrap_or(1));
                }
            }
            block.advance();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::schema::{Schema, FAST, INDEXED, TEXT};
    use tantivy::{doc, Index, IndexWriter};

    /// An index of `files` (path, chunk texts), the fields a [`FileTable`] reads.
    fn index(dir: &Path, files: &[(&str, &[&str])]) -> (Index, Field, Field) {
        let mut schema = Schema::builder();
        let body = schema.add_text_field("body", TEXT);
        let path = schema.add_text_field("path_text", TEXT);
        let id = schema.add_u64_field("file_id", FAST | INDEXED);
        let class = schema.add_u64_field("class", FAST);
        let index = Index::create_in_dir(dir, schema.build()).unwrap();
        let mut w: IndexWriter = index.writer(15_000_000).unwrap();
        for (p, chunks) in files {
            for text in *chunks {
                let fid = xxhash_rust::xxh3::xxh3_64(p.as_bytes());
                w.add_document(doc!(body => *text, path => *p, id => fid, class => 0u64)).unwrap();
            }
        }
        w.commit().unwrap();
        (index, body, path)
    }

    fn scores(t: &FileTable, searcher: &Searcher, body: Field, path: Field, p: &str) -> f32 {
        let terms = [("parser".to_string(), 1.0)];
        let s = FileScores::compute(t, searcher, body, path, &terms, &|_| 1.0);
        // The first live document of `p`'s file.
        let id = xxhash_rust::xxh3::xxh3_64(p.as_bytes());
        let Some(f) = (0..t.files()).find(|&f| t.id(f) == id) else { return 0.0 };
        let addr = (0..t.segments.len())
            .find_map(|ord| {
                let seg = t.segment(ord)?;
                let docs = (seg.0.len() / 4) as u32;
                (0..docs).find(|&d| seg.file(d) == Some(f as u32)).map(|d| DocAddress::new(ord as u32, d))
            })
            .expect("a tabulated file has a document");
        s.at(t, addr)
    }

    #[test]
    fn a_kept_table_is_reused_only_while_it_describes_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let files: &[(&str, &[&str])] = &[
            ("src/parser.rs", &["the parser reads tokens", "parser errors carry a line"]),
            ("src/lexer.rs", &["tokens for the parser"]),
            ("README.md", &["how to run"]),
        ];
        let (index, body, path) = index(dir.path(), files);
        let searcher = index.reader().unwrap().searcher();
        let built = FileTable::load_or_build(&searcher, body, dir.path());
        let kept = std::fs::read(super::path(dir.path())).unwrap();
        let loaded = FileTable::load_or_build(&searcher, body, dir.path());
        assert!(matches!(loaded.bytes, TableBytes::Mapped(_)), "the kept table is read in place");
        assert_eq!(&loaded.bytes[..], &kept[..]);
        assert_eq!(&built.bytes[..], &kept[..], "what is kept is what was built");
        assert_eq!((loaded.files(), loaded.avg_len), (3, built.avg_len));
        let classes: Vec<FileClass> = (0..3).map(|f| loaded.class(f)).collect();
        assert_eq!(classes, (0..3).map(|f| built.class(f)).collect::<Vec<_>>());
        assert!((0..3).all(|f| loaded.len(f) > 0.0 && loaded.len(f) == built.len(f)));
        for p in ["src/parser.rs", "src/lexer.rs", "README.md"] {
            assert_eq!(scores(&loaded, &searcher, body, path, p), scores(&built, &searcher, body, path, p), "{p}");
        }
        assert!(
            scores(&loaded, &searcher, body, path, "src/parser.rs")
                > scores(&loaded, &searcher, body, path, "src/lexer.rs")
        );

        // A torn or altered file is not trusted.
        assert!(FileTable::decode(TableBytes::Owned(kept[..kept.len() - 1].to_vec()), &searcher).is_none());
        let mut flipped = kept.clone();
        flipped[20] ^= 1;
        assert!(FileTable::decode(TableBytes::Owned(flipped), &searcher).is_none());
        assert!(FileTable::decode(TableBytes::Owned(Vec::new()), &searcher).is_none());

        // A well-formed table whose document entry names a file past the count (a crafted
        // file: the checksum matches) loads, but that entry reads as no file, never an index
        // out of range.
        let mut crafted = kept[..kept.len() - 8].to_vec();
        let first_entry = MAGIC.len() + 8 + 4 + 4 + 4;
        crafted[first_entry..first_entry + 4].copy_from_slice(&7u32.to_le_bytes());
        let sum = xxhash_rust::xxh3::xxh3_64(&crafted).to_le_bytes();
        crafted.extend_from_slice(&sum);
        let t = FileTable::decode(TableBytes::Owned(crafted), &searcher).expect("checksum matches");
        assert_eq!(t.segment(0).and_then(|s| s.file(0)), None);
        assert_eq!(t.segment(0).and_then(|s| s.file(1)), loaded.segment(0).and_then(|s| s.file(1)));
        let all = FileScores::compute(&t, &searcher, body, path, &[("parser".into(), 1.0)], &|_| 1.0);
        assert_eq!(all.at(&t, DocAddress::new(0, 0)), 0.0);

        // After a commit the kept table describes other segments: it is rebuilt and kept anew.
        let mut w: IndexWriter = index.writer(15_000_000).unwrap();
        let fid = xxhash_rust::xxh3::xxh3_64(b"src/lexer.rs");
        w.delete_term(Term::from_field_u64(index.schema().get_field("file_id").unwrap(), fid));
        w.commit().unwrap();
        let reader = index.reader().unwrap();
        reader.reload().unwrap();
        let after = reader.searcher();
        assert!(
            FileTable::decode(TableBytes::Owned(kept.clone()), &after).is_none(),
            "a table of the old segments must not be used"
        );
        let rebuilt = FileTable::load_or_build(&after, body, dir.path());
        assert_eq!(scores(&rebuilt, &after, body, path, "src/lexer.rs"), 0.0);
        assert!(FileTable::decode(TableBytes::Owned(std::fs::read(super::path(dir.path())).unwrap()), &after).is_some());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(super::path(dir.path())).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "the table is owner-only, like every file docdex writes");
        }
    }
}
