//! Ranking files, not chunks: what a developer looking for "the file this change touches"
//! needs. The BM25 pool of chunks is grouped by file and each file scored from
//!
//! - its best chunks together: `best + 0.35 × second + 0.2 × third` (a file that answers the
//!   query in several places beats one lucky chunk);
//! - how much of the query the file covers anywhere in the pool: the IDF-weighted share of the
//!   query's terms its chunks hold, as a factor `e^(0.5 × share)` (a file touching every
//!   aspect of a description beats one that repeats a single word);
//! - how many repository files import it ([`super::import_prior`]), as `(1 + importers)^0.1`
//!   (changes land in central modules more often than in leaves);
//! - plus its whole-file BM25 ([`super::file_bm25`]) at [`WHOLE_FILE_WEIGHT`] of the best
//!   file's chunk-based score (a change whose words spread over a whole module).
//!
//! Chunk scores already carry the file-class priors and symbol boosts, so a test or a
//! changelog stays below source unless the query asks for it. Hits are ordered by their
//! file's score: each file's best chunk at the file's score, its further chunks at
//! `0.3^k × (chunk / best)` of it but never above the [`FIRST_FILES`]-th file's best chunk, so
//! the first ten hits name ten files and a file's other strong regions follow. A definition the whole query names stays first.
//!
//! The weights were tuned on four eval-dev projects and checked on four held out
//! (docs/SEARCH.md).

use super::file_bm25::{FileIdMap, FileScores, FileTable};
use super::import_prior::ImportPrior;
use std::collections::HashMap;
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocAddress, DocSet, Searcher, Term, TERMINATED};

/// Weight of a file's second-best chunk in its score.
pub const SECOND_CHUNK: f32 = 0.35;
/// Weight of its third-best chunk.
pub const THIRD_CHUNK: f32 = 0.2;
/// Exponent weight of the file's query coverage (0..1).
pub const COVERAGE_WEIGHT: f32 = 0.5;
/// Exponent of `1 + importers`.
pub const IMPORT_WEIGHT: f32 = 0.1;
/// Weight of whole-file BM25 against the chunk-based file score (each relative to its best
/// file in the pool): 0.2 ranked best among 0.1 to 1 on the tuning projects; alone (weight
/// 100) it scored below the chunk-based score, so it refines rather than replaces it.
pub const WHOLE_FILE_WEIGHT: f32 = 0.2;
/// This many files show their best chunk before any file shows a second one: a first page of
/// ten hits names ten files.
pub const FIRST_FILES: usize = 10;
/// A file's k-th further chunk ranks at this power k of its file's score (times its share of
/// the best chunk).
pub const FURTHER_CHUNK_DECAY: f32 = 0.3;
/// Beyond `max_chunks_per_file`, each further chunk is scaled down by this again.
const OVERFLOW_DECAY: f32 = 0.35;
/// Query terms tracked for coverage (a bit each).
const MAX_COVERAGE_TERMS: usize = 64;

/// A pooled chunk: its score with class prior and symbol boosts, file, address, and whether it
/// holds a definition the whole query names.
#[derive(Debug, Clone, Copy)]
pub struct PooledChunk {
    /// BM25 × class prior × definition boost.
    pub score: f32,
    /// File id (xxh3 of the path).
    pub file: u64,
    /// Where the chunk is.
    pub addr: DocAddress,
    /// Holds a definition the whole query names: its file goes first.
    pub pinned: bool,
}

/// A ranked chunk.
#[derive(Debug, Clone, Copy)]
pub struct RankedChunk {
    /// The ranking score (its file's score, decayed for the file's further chunks).
    pub score: f32,
    /// File id.
    pub file: u64,
    /// Where the chunk is.
    pub addr: DocAddress,
    /// The file's pooled chunks hold every query term between them.
    pub whole_query: bool,
}

/// What file ranking needs besides the pool.
pub struct FileSignals<'a> {
    /// The searcher the pool came from (postings for coverage).
    pub searcher: &'a Searcher,
    /// The chunk body field.
    pub body: Field,
    /// Query terms with their weights ([`super::query::QueryPlan::terms`]).
    pub terms: &'a [(String, f32)],
    /// Importers per file.
    pub imports: &'a ImportPrior,
    /// `[search] max_chunks_per_file`.
    pub max_chunks_per_file: usize,
    /// Whole-file BM25 of the query ([`super::file_bm25`]), when computed.
    pub whole_files: Option<(&'a FileTable, &'a FileScores)>,
    /// Each file's share of the history signal ([`super::history`]), when `[search] history`.
    pub history: Option<&'a FileIdMap<f32>>,
}

/// A file's score from its chunks' scores (best first), its coverage and its importers.
pub fn file_score(chunks: &[f32], coverage: f32, importers: u32) -> f32 {
    let at = |i: usize| chunks.get(i).copied().unwrap_or(0.0);
    let agg = at(0) + SECOND_CHUNK * at(1) + THIRD_CHUNK * at(2);
    agg * (COVERAGE_WEIGHT * coverage).exp() * (1.0 + importers as f32).powf(IMPORT_WEIGHT)
}

/// Ranks the pool by file (see the module docs). Deterministic: ties break on file id, then
/// address.
pub fn rank(pool: Vec<PooledChunk>, signals: &FileSignals) -> Vec<RankedChunk> {
    if pool.is_empty() {
        return Vec::new();
    }
    let masks = term_masks(signals, &pool);
    let weights = coverage_weights(signals);
    let total: f32 = weights.iter().sum();
    // Per file: chunk indexes best first, the union of matched terms, pinned.
    let mut files: FileIdMap<(Vec<usize>, u64, bool)> =
        FileIdMap::with_capacity_and_hasher(pool.len(), Default::default());
    for (i, c) in pool.iter().enumerate() {
        let e = files.entry(c.file).or_default();
        e.0.push(i);
        e.1 |= masks[i];
        e.2 |= c.pinned;
    }
    let tracked = signals.terms.len().min(MAX_COVERAGE_TERMS);
    let every_term: u64 = if tracked >= 64 { u64::MAX } else { (1u64 << tracked) - 1 };
    let whole_query: FileIdMap<()> = files
        .iter()
        .filter(|(_, (_, mask, _))| tracked > 0 && mask & every_term == every_term)
        .map(|(file, _)| (*file, ()))
        .collect();
    let mut scored: Vec<(f32, bool, u64, Vec<usize>)> = files
        .into_iter()
        .map(|(file, (mut idx, mask, pinned))| {
            // Addresses are unique: an unstable sort gives the one order.
            idx.sort_unstable_by(|&a, &b| {
                pool[b].score.total_cmp(&pool[a].score).then(pool[a].addr.cmp(&pool[b].addr))
            });
            let scores: Vec<f32> = idx.iter().take(3).map(|&i| pool[i].score).collect();
            let covered: f32 = weights.iter().enumerate().filter(|(t, _)| mask >> t & 1 == 1).map(|(_, w)| w).sum();
            let coverage = if total > 0.0 { covered / total } else { 0.0 };
            (file_score(&scores, coverage, signals.imports.importers(file)), pinned, file, idx)
        })
        .collect();
    if let Some((table, whole)) = signals.whole_files {
        add_whole_file_scores(&mut scored, &pool, table, whole);
    }
    if let Some(shares) = signals.history {
        for s in scored.iter_mut() {
            if let Some(share) = shares.get(&s.2) {
                s.0 *= 1.0 + super::history::HISTORY_WEIGHT * share;
            }
        }
    }
    // Files holding a definition the whole query names go above every other file.
    let lift = scored.iter().map(|s| s.0).fold(0.0, f32::max);
    for s in scored.iter_mut().filter(|s| s.1) {
        s.0 += lift;
    }
    // The first files each show their best chunk before any file shows a second one.
    let cap = if scored.len() > FIRST_FILES {
        let mut order: Vec<f32> = scored.iter().map(|s| s.0).collect();
        order.select_nth_unstable_by(FIRST_FILES - 1, |a, b| b.total_cmp(a));
        let kth = order[FIRST_FILES - 1];
        f32::from_bits(kth.to_bits().saturating_sub(1)).max(0.0)
    } else {
        f32::INFINITY
    };
    let max_per_file = signals.max_chunks_per_file.max(1);
    let mut out: Vec<RankedChunk> = Vec::with_capacity(pool.len());
    for (score, _, file, idx) in scored {
        let best = pool[idx[0]].score.max(f32::MIN_POSITIVE);
        for (k, &i) in idx.iter().enumerate() {
            let c = &pool[i];
            let s = if k == 0 {
                score
            } else {
                let overflow = OVERFLOW_DECAY.powi((k + 1).saturating_sub(max_per_file) as i32);
                (score * FURTHER_CHUNK_DECAY.powi(k as i32) * (c.score / best).min(1.0) * overflow).min(cap)
            };
            out.push(RankedChunk { score: s, file, addr: c.addr, whole_query: whole_query.contains_key(&file) });
        }
    }
    out.sort_unstable_by(|a, b| b.score.total_cmp(&a.score).then(a.file.cmp(&b.file)).then(a.addr.cmp(&b.addr)));
    out
}

/// Adds each file's whole-file BM25 ([`super::file_bm25`]), scaled so that the best whole-file
/// score is [`WHOLE_FILE_WEIGHT`] of the best chunk-based file score.
fn add_whole_file_scores(
    scored: &mut [(f32, bool, u64, Vec<usize>)],
    pool: &[PooledChunk],
    table: &FileTable,
    whole: &FileScores,
) {
    // A file is found in the table through any of its chunks: its best one.
    let whole_of: Vec<f32> =
        scored.iter().map(|s| s.3.first().map_or(0.0, |&i| whole.at(table, pool[i].addr))).collect();
    let whole_max = whole_of.iter().copied().fold(0.0, f32::max);
    if whole_max <= 0.0 {
        return;
    }
    let chunk_max = scored.iter().map(|s| s.0).fold(0.0, f32::max);
    for (s, w) in scored.iter_mut().zip(whole_of) {
        s.0 += WHOLE_FILE_WEIGHT * chunk_max * w / whole_max;
    }
}

/// Each tracked term's coverage weight: its query weight times its IDF over chunk bodies.
fn coverage_weights(signals: &FileSignals) -> Vec<f32> {
    let n = signals.searcher.num_docs().max(1) as f32;
    signals
        .terms
        .iter()
        .take(MAX_COVERAGE_TERMS)
        .map(|(t, w)| {
            let df = signals.searcher.doc_freq(&Term::from_field_text(signals.body, t)).unwrap_or(0) as f32;
            w * (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
        })
        .collect()
}

/// For each pooled chunk, a bit per query term it contains (body), from the postings: one
/// forward pass per term and segment over the pool's sorted document ids.
fn term_masks(signals: &FileSignals, pool: &[PooledChunk]) -> Vec<u64> {
    let mut masks = vec![0u64; pool.len()];
    let mut by_segment: HashMap<u32, Vec<(u32, usize)>> = HashMap::new();
    for (i, c) in pool.iter().enumerate() {
        by_segment.entry(c.addr.segment_ord).or_default().push((c.addr.doc_id, i));
    }
    for docs in by_segment.values_mut() {
        docs.sort_unstable();
    }
    for (bit, (term, _)) in signals.terms.iter().take(MAX_COVERAGE_TERMS).enumerate() {
        let term = Term::from_field_text(signals.body, term);
        for (segment, docs) in &by_segment {
            let reader = signals.searcher.segment_reader(*segment);
            let Ok(inverted) = reader.inverted_index(signals.body) else { continue };
            let Ok(Some(mut postings)) = inverted.read_postings(&term, IndexRecordOption::Basic) else { continue };
            for &(doc, i) in docs {
                let mut at = postings.doc();
                if at == TERMINATED {
                    break;
                }
                if at < doc {
                    at = postings.seek(doc);
                }
                if at == doc {
                    masks[i] |= 1 << bit;
                }
            }
        }
    }
    masks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn several_good_chunks_coverage_and_importers_each_lift_a_file() {
        let one = file_score(&[10.0], 0.0, 0);
        assert!(file_score(&[10.0, 10.0], 0.0, 0) > one);
        assert!(
            (file_score(&[10.0, 10.0, 10.0, 10.0], 0.0, 0) - 10.0 * (1.0 + SECOND_CHUNK + THIRD_CHUNK)).abs() < 1e-4
        );
        assert!(file_score(&[10.0], 1.0, 0) > file_score(&[10.0], 0.5, 0));
        assert!(file_score(&[10.0], 0.0, 30) > one);
        // A much better chunk still beats a central file's weak one.
        assert!(file_score(&[10.0], 0.0, 0) > file_score(&[5.0], 0.0, 50));
    }
}
