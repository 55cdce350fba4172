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

use crate::engine::index::files::FileClass;
use std::collections::HashMap;
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{Searcher, Term};

/// BM25 term-frequency saturation (the usual value).
const K1: f32 = 1.2;
/// BM25 length normalisation (the usual value).
const B: f32 = 0.75;
/// Marks a deleted document in [`FileTable::file_of`].
const NO_FILE: u32 = u32::MAX;

/// Per searcher: which file each document is, and each file's length and class.
pub struct FileTable {
    /// Identity of the segment set this table describes.
    key: u64,
    /// Per segment ordinal: document id to dense file index (or [`NO_FILE`]).
    file_of: Vec<Vec<u32>>,
    /// Dense file index to file id (xxh3 of the path).
    ids: Vec<u64>,
    /// File id to dense index.
    index: HashMap<u64, u32>,
    /// Body tokens per file (sum of its chunks' field norms).
    len: Vec<f32>,
    /// File class per file.
    class: Vec<u8>,
    /// Mean of `len`.
    avg_len: f32,
}

/// The identity of a searcher's segment set (ids and delete counts).
pub fn searcher_key(searcher: &Searcher) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for r in searcher.segment_readers() {
        r.segment_id().hash(&mut h);
        r.num_deleted_docs().hash(&mut h);
    }
    h.finish()
}

impl FileTable {
    /// Tabulates `searcher`'s documents (one pass over two fast fields and a field norm).
    pub fn build(searcher: &Searcher, body: Field) -> FileTable {
        let mut t = FileTable {
            key: searcher_key(searcher),
            file_of: Vec::new(),
            ids: Vec::new(),
            index: HashMap::new(),
            len: Vec::new(),
            class: Vec::new(),
            avg_len: 1.0,
        };
        for reader in searcher.segment_readers() {
            let max = reader.max_doc();
            let mut of = vec![NO_FILE; max as usize];
            let ff = reader.fast_fields();
            let (Ok(ids), Ok(classes)) = (ff.u64("file_id"), ff.u64("class")) else {
                t.file_of.push(of);
                continue;
            };
            let norms = reader.get_fieldnorms_reader(body).ok();
            let alive = reader.alive_bitset();
            let mut last: Option<(u64, u32)> = None;
            for doc in 0..max {
                if alive.is_some_and(|a| a.is_deleted(doc)) {
                    continue;
                }
                let Some(id) = ids.first(doc) else { continue };
                // A file's chunks are written together: most documents repeat the last file.
                let f = match last {
                    Some((last_id, f)) if last_id == id => f,
                    _ => {
                        let next = t.ids.len() as u32;
                        let f = *t.index.entry(id).or_insert(next);
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

    /// Number of files.
    pub fn files(&self) -> usize {
        self.ids.len()
    }
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
            let body_term = Term::from_field_text(body, term);
            for (ord, reader) in searcher.segment_readers().iter().enumerate() {
                let Some(of) = table.file_of.get(ord) else { continue };
                let Ok(inverted) = reader.inverted_index(body) else { continue };
                let Ok(Some(mut block)) = inverted.read_block_postings(&body_term, IndexRecordOption::WithFreqs) else {
                    continue;
                };
                loop {
                    let docs = block.docs();
                    if docs.is_empty() {
                        break;
                    }
                    for (&doc, &freq) in docs.iter().zip(block.freqs()) {
                        let f = of.get(doc as usize).copied().unwrap_or(NO_FILE);
                        if f == NO_FILE {
                            continue;
                        }
                        let fi = f as usize;
                        if tf[fi] == 0.0 {
                            hit.push(f);
                        }
                        tf[fi] += freq.max(1) as f32;
                    }
                    block.advance();
                }
            }
            // A term in the file's path counts once more (the path is part of what a file says).
            let path_term = Term::from_field_text(path, term);
            let mark = ti as u32 + 1;
            for (ord, reader) in searcher.segment_readers().iter().enumerate() {
                let Some(of) = table.file_of.get(ord) else { continue };
                let Ok(inverted) = reader.inverted_index(path) else { continue };
                let Ok(Some(mut block)) = inverted.read_block_postings(&path_term, IndexRecordOption::Basic) else {
                    continue;
                };
                loop {
                    let docs = block.docs();
                    if docs.is_empty() {
                        break;
                    }
                    for &doc in docs {
                        let f = of.get(doc as usize).copied().unwrap_or(NO_FILE);
                        if f == NO_FILE || path_mark[f as usize] == mark {
                            continue;
                        }
                        let fi = f as usize;
                        path_mark[fi] = mark;
                        if tf[fi] == 0.0 {
                            hit.push(f);
                        }
                        tf[fi] += 1.0;
                    }
                    block.advance();
                }
            }
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

    /// The score of file `id` (0 when it holds no query term).
    pub fn of(&self, table: &FileTable, id: u64) -> f32 {
        table.index.get(&id).map(|&f| self.score[f as usize]).unwrap_or(0.0)
    }
}
