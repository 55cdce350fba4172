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
//! beside the index ([`FILE_NAME`]), keyed by the segment set and checksummed, and loaded
//! instead when it still describes the searcher. A stale or damaged file is rebuilt over.

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
/// Marks a deleted document in [`FileTable::file_of`].
const NO_FILE: u32 = u32::MAX;
/// The table's file, in the index directory.
pub const FILE_NAME: &str = "file_table.bin";
/// First bytes of [`FILE_NAME`]; the digit is the format version.
const MAGIC: &[u8; 8] = b"DDXFT01\n";

/// File ids are xxh3 hashes already: hashing them again only costs time.
#[derive(Default)]
struct IdHasher(u64);

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

/// Per searcher: which file each document is, and each file's length and class.
pub struct FileTable {
    /// Identity of the segment set this table describes.
    key: u64,
    /// Per segment ordinal: document id to dense file index (or [`NO_FILE`]).
    file_of: Vec<Vec<u32>>,
    /// Dense file index to file id (xxh3 of the path).
    ids: Vec<u64>,
    /// Body tokens per file (sum of its chunks' field norms).
    len: Vec<f32>,
    /// File class per file.
    class: Vec<u8>,
    /// Mean of `len`.
    avg_len: f32,
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

impl FileTable {
    /// The table for `searcher`: read from `index_dir` when the kept one describes it, else
    /// tabulated and kept there for the next process (best effort: a read-only state directory
    /// only costs the next process the tabulation).
    pub fn load_or_build(searcher: &Searcher, body: Field, index_dir: &Path) -> FileTable {
        let file = path(index_dir);
        if let Some(t) = std::fs::read(&file).ok().and_then(|b| FileTable::decode(&b, searcher)) {
            return t;
        }
        let t = FileTable::build(searcher, body);
        if let Err(e) = t.save(&file) {
            tracing::debug!(path = %file.display(), error = %e, "file table not kept");
        }
        t
    }

    /// Tabulates `searcher`'s documents (one pass over two fast fields and a field norm).
    pub fn build(searcher: &Searcher, body: Field) -> FileTable {
        let docs: u32 = searcher.segment_readers().iter().map(|r| r.num_docs()).sum();
        // File id to dense index, while tabulating (searches address files by document).
        let mut index = IdMap::with_capacity_and_hasher(docs as usize / 4, Default::default());
        let mut t = FileTable {
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

    /// Whether this table describes `searcher`'s segments.
    pub fn is_for(&self, searcher: &Searcher) -> bool {
        self.key == searcher_key(searcher)
    }

    /// Writes the table to `file` (owner-only, by rename, so a reader never sees half of it),
    /// ending in an xxh3 of everything before.
    fn save(&self, file: &Path) -> crate::error::Result<()> {
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
        crate::engine::fsutil::replace_bytes(file, &b)
    }

    /// Reads a kept table; `None` unless it is whole (checksum) and describes `searcher`
    /// (key, segment count and sizes).
    fn decode(b: &[u8], searcher: &Searcher) -> Option<FileTable> {
        let (body, sum) = b.split_at_checked(b.len().checked_sub(8)?)?;
        if !body.starts_with(MAGIC) || xxhash_rust::xxh3::xxh3_64(body).to_le_bytes() != sum {
            return None;
        }
        let mut r = Reader(&body[MAGIC.len()..]);
        let key = r.u64()?;
        let readers = searcher.segment_readers();
        if key != searcher_key(searcher) || r.u32()? as usize != readers.len() {
            return None;
        }
        let files = r.u32()? as usize;
        let mut file_of = Vec::with_capacity(readers.len());
        for reader in readers {
            let max = r.u32()?;
            if max != reader.max_doc() {
                return None;
            }
            let of: Vec<u32> = r.take(max as usize * 4)?.chunks_exact(4).map(le_u32).collect();
            if of.iter().any(|&f| f != NO_FILE && f as usize >= files) {
                return None;
            }
            file_of.push(of);
        }
        let ids: Vec<u64> = r.take(files * 8)?.chunks_exact(8).map(le_u64).collect();
        let len: Vec<f32> = r.take(files * 4)?.chunks_exact(4).map(|c| f32::from_bits(le_u32(c))).collect();
        let class = r.take(files)?.to_vec();
        let avg_len = f32::from_bits(r.u32()?);
        if !r.0.is_empty() {
            return None;
        }
        Some(FileTable { key, file_of, ids, len, class, avg_len })
    }

    /// Number of files.
    pub fn files(&self) -> usize {
        self.ids.len()
    }

    /// The dense index of the file document `addr` belongs to.
    fn file_at(&self, addr: DocAddress) -> Option<usize> {
        let f = *self.file_of.get(addr.segment_ord as usize)?.get(addr.doc_id as usize)?;
        (f != NO_FILE).then_some(f as usize)
    }
}

/// A cursor over a kept table's bytes.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4).map(le_u32)
    }
    fn u64(&mut self) -> Option<u64> {
        self.take(8).map(le_u64)
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
                let norm = K1 * (1.0 - B + B * table.len[fi] / table.avg_len);
                if out.score[fi] == 0.0 {
                    touched.push(f);
                }
                out.score[fi] += weight * idf * x * (K1 + 1.0) / (x + norm);
                tf[fi] = 0.0;
            }
        }
        for &f in &touched {
            let fi = f as usize;
            out.score[fi] *= prior(FileClass::from_u64(table.class[fi] as u64));
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
        let Some(of) = table.file_of.get(ord) else { continue };
        let Ok(inverted) = reader.inverted_index(field) else { continue };
        let Ok(Some(mut block)) = inverted.read_block_postings(&term, option) else { continue };
        loop {
            let docs = block.docs();
            if docs.is_empty() {
                break;
            }
            let freqs = if with_freqs { block.freqs() } else { &[] };
            for (i, &doc) in docs.iter().enumerate() {
                let f = of.get(doc as usize).copied().unwrap_or(NO_FILE);
                if f != NO_FILE {
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
        let Some(f) = t.ids.iter().position(|&x| x == id) else { return 0.0 };
        let addr = (t.file_of.iter().enumerate())
            .find_map(|(ord, of)| {
                of.iter().position(|&x| x as usize == f).map(|d| DocAddress::new(ord as u32, d as u32))
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
        let loaded = FileTable::decode(&kept, &searcher).expect("the kept table describes the index");
        assert_eq!((loaded.ids.clone(), loaded.file_of.clone()), (built.ids.clone(), built.file_of.clone()));
        assert_eq!(
            (loaded.len.clone(), loaded.class.clone(), loaded.avg_len),
            (built.len.clone(), built.class.clone(), built.avg_len)
        );
        for p in ["src/parser.rs", "src/lexer.rs", "README.md"] {
            assert_eq!(scores(&loaded, &searcher, body, path, p), scores(&built, &searcher, body, path, p), "{p}");
        }
        assert!(
            scores(&loaded, &searcher, body, path, "src/parser.rs")
                > scores(&loaded, &searcher, body, path, "src/lexer.rs")
        );

        // A torn or altered file is not trusted.
        assert!(FileTable::decode(&kept[..kept.len() - 1], &searcher).is_none());
        let mut flipped = kept.clone();
        flipped[20] ^= 1;
        assert!(FileTable::decode(&flipped, &searcher).is_none());
        assert!(FileTable::decode(b"", &searcher).is_none());

        // After a commit the kept table describes other segments: it is rebuilt and kept anew.
        let mut w: IndexWriter = index.writer(15_000_000).unwrap();
        let fid = xxhash_rust::xxh3::xxh3_64(b"src/lexer.rs");
        w.delete_term(Term::from_field_u64(index.schema().get_field("file_id").unwrap(), fid));
        w.commit().unwrap();
        let reader = index.reader().unwrap();
        reader.reload().unwrap();
        let after = reader.searcher();
        assert!(FileTable::decode(&kept, &after).is_none(), "a table of the old segments must not be used");
        let rebuilt = FileTable::load_or_build(&after, body, dir.path());
        assert_eq!(scores(&rebuilt, &after, body, path, "src/lexer.rs"), 0.0);
        assert!(FileTable::decode(&std::fs::read(super::path(dir.path())).unwrap(), &after).is_some());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(super::path(dir.path())).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "the table is owner-only, like every file docdex writes");
        }
    }
}
