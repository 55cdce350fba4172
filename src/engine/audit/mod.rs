//! Audits of what a repository says (spec 002 §12.3-12.4): [`Engine::audit_duplicates`]
//! (chunks that repeat one another) and [`Engine::audit_conflicts`] (similar passages that
//! disagree).
//!
//! Both read the chunks the index holds: their line ranges come from the index (chunking
//! lives in one place), their text from the files as indexed (extracted text for documents,
//! through [`fsutil::open_repo_file`](crate::engine::fsutil::open_repo_file)), and a file
//! changed since it was indexed is skipped and counted, never audited against stale lines.
//! Both are bounded: at most [`MAX_CHUNKS`] chunks and [`MAX_PAIRS`] compared pairs, and an
//! answer that hit a bound says so (`capped`, `limits`).

pub mod claims;
pub mod conflicts;
pub mod duplicates;
pub mod minhash;
pub mod types;

use crate::engine::cancel::CancelToken;
use crate::engine::index::files::FileClass;
use crate::engine::index::manifest::Manifest;
use crate::engine::index::schema;
use crate::engine::repos::RepoRef;
use crate::error::{Error, Result};
use rayon::prelude::*;
use std::collections::BTreeMap;
use tantivy::schema::Value;
use tantivy::TantivyDocument;

/// Chunks audited at most (the rest are left out, and the answer says so).
pub const MAX_CHUNKS: usize = 200_000;
/// Candidate pairs whose similarity is computed at most.
pub const MAX_PAIRS: usize = 2_000_000;
/// Chunks with fewer words are not audited (closing braces, one-line headings).
pub const MIN_WORDS: usize = 12;

/// A file the index holds and its chunks' line ranges, in order.
pub(crate) struct IndexedFile {
    pub path: String,
    pub class: FileClass,
    pub ranges: Vec<(u32, u32)>,
}

/// Every file of the repo's live index with its chunks' line ranges, by path.
pub(crate) fn indexed_files(repo: &RepoRef) -> Result<Vec<IndexedFile>> {
    let dir = repo.index_dir();
    if !dir.join("meta.json").exists() {
        return Err(Error::NotIndexed { path: repo.root.clone() });
    }
    let index_err = |e: tantivy::TantivyError| Error::Index { path: dir.clone(), message: e.to_string() };
    let (index, fields) = schema::open(&dir)?;
    let reader = index.reader().map_err(index_err)?;
    let searcher = reader.searcher();
    let mut files: BTreeMap<String, IndexedFile> = BTreeMap::new();
    for segment in searcher.segment_readers() {
        let store = segment.get_store_reader(64).map_err(|e| Error::io("reading", &dir, e))?;
        for doc in store.iter::<TantivyDocument>(segment.alive_bitset()) {
            let Ok(doc) = doc else { continue };
            let num = |f| doc.get_first(f).and_then(|v| v.as_u64()).unwrap_or(0);
            let Some(path) = doc.get_first(fields.path).and_then(|v| v.as_str()).map(str::to_string) else {
                continue;
            };
            let (a, b) = (num(fields.line_start) as u32, num(fields.line_end) as u32);
            if a == 0 || b < a {
                continue;
            }
            let class = FileClass::from_u64(num(fields.class));
            files
                .entry(path.clone())
                .or_insert_with(|| IndexedFile { path, class, ranges: Vec::new() })
                .ranges
                .push((a, b));
        }
    }
    let mut out: Vec<IndexedFile> = files.into_values().collect();
    for f in &mut out {
        f.ranges.sort_unstable();
        f.ranges.dedup();
    }
    Ok(out)
}

/// A file's text as indexed, `None` when it cannot be read or changed since it was indexed.
pub(crate) fn indexed_text(repo: &RepoRef, manifest: &Manifest, path: &str) -> Option<String> {
    let bytes = crate::engine::index::extract::indexed_text(repo, path).ok()?;
    let entry = manifest.files.get(path)?;
    // The manifest hashes the text as indexed (decoded as every reader decodes it).
    let text = crate::engine::fsutil::decode_text(&bytes);
    if xxhash_rust::xxh3::xxh3_64(text.as_bytes()) != entry.hash {
        return None;
    }
    Some(text.into_owned())
}

/// Byte offsets where each line starts.
pub(crate) fn line_starts(text: &str) -> Vec<usize> {
    let mut v = vec![0];
    v.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1).filter(|i| *i < text.len()));
    v
}

/// The text of lines `a..=b` (1-based).
pub(crate) fn lines<'t>(text: &'t str, starts: &[usize], a: u32, b: u32) -> &'t str {
    let from = starts.get(a.saturating_sub(1) as usize).copied().unwrap_or(text.len());
    let to = starts.get(b as usize).copied().unwrap_or(text.len());
    &text[from.min(to)..to]
}

/// Reads the files (in parallel) and maps each readable one with `f`; returns the results in
/// path order and how many files were skipped because they changed since they were indexed.
/// [`Error::Cancelled`] when the calling thread's ambient token trips: the files not yet read
/// are left unread (the token is taken here, on the caller's thread, for rayon's).
pub(crate) fn map_files<T: Send>(
    repo: &RepoRef,
    files: &[IndexedFile],
    f: impl Fn(&IndexedFile, &str) -> T + Sync,
) -> Result<(Vec<T>, usize)> {
    let cancel = CancelToken::current();
    let manifest = Manifest::load(&repo.manifest_path());
    let results: Vec<Option<T>> = files
        .par_iter()
        .map(|file| {
            if cancel.is_cancelled() {
                return None;
            }
            indexed_text(repo, &manifest, &file.path).map(|text| f(file, &text))
        })
        .collect();
    cancel.check()?;
    let skipped = results.iter().filter(|r| r.is_none()).count();
    Ok((results.into_iter().flatten().collect(), skipped))
}

/// Pairs scored between looks at the cancellation token (a few milliseconds of work).
const CANCEL_EVERY_PAIRS: usize = 16_384;

/// `score` over every pair, in order; [`Error::Cancelled`] (looked at every
/// [`CANCEL_EVERY_PAIRS`] pairs) once the calling thread's ambient token trips. Up to
/// [`MAX_PAIRS`] comparisons take seconds on a large repository.
pub(crate) fn score_pairs<T>(pairs: &[(u32, u32)], mut score: impl FnMut(u32, u32) -> Option<T>) -> Result<Vec<T>> {
    let cancel = CancelToken::current();
    let mut out = Vec::new();
    for block in pairs.chunks(CANCEL_EVERY_PAIRS) {
        cancel.check()?;
        out.extend(block.iter().filter_map(|&(a, b)| score(a, b)));
    }
    Ok(out)
}

/// A stable short id for a set of chunks.
pub(crate) fn group_id(items: &[types::AuditItem]) -> String {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for i in items {
        h.update(i.path.as_bytes());
        h.update(&i.line_start.to_le_bytes());
        h.update(&i.line_end.to_le_bytes());
    }
    format!("{:016x}", h.digest())
}

/// Rounds a similarity for output.
pub(crate) fn round3(x: f32) -> f32 {
    (x * 1000.0).round() / 1000.0
}

/// Checks a similarity bound given by the user.
pub(crate) fn check_unit(name: &str, v: f32) -> Result<f32> {
    if !(v > 0.0 && v <= 1.0) {
        return Err(Error::BadRequest(format!("{name} {v} is out of range: give a similarity above 0 and at most 1")));
    }
    Ok(v)
}
