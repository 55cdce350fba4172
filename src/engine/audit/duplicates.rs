//! `docdex audit duplicates`: exact duplicates by a whitespace-blind hash of the chunk text,
//! near duplicates by the cosine of the chunks' embeddings when the repo has usable ones,
//! else by MinHash over word 3-shingles. Candidates come from banded LSH (never all pairs),
//! each candidate's similarity is then computed, and pairs at or above the threshold are
//! joined into groups (connected components). An exact copy takes part once in the near
//! comparison and is listed with its twins.

use super::minhash::{self, Hyperplanes, SIGNATURE_LEN};
use super::types::*;
use super::{
    check_unit, group_id, indexed_files, line_starts, lines, map_files, round3, score_pairs, MAX_CHUNKS, MAX_PAIRS,
    MIN_WORDS,
};
use crate::engine::embed::store::VectorHit;
use crate::engine::embed::Vectors;
use crate::engine::index::files::FileClass;
use crate::engine::repos::RepoRef;
use crate::engine::Engine;
use crate::error::Result;
use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

/// One chunk's fingerprints.
struct Print {
    path: String,
    line_start: u32,
    line_end: u32,
    exact: u64,
    sig: Option<[u32; SIGNATURE_LEN]>,
}

/// Candidate pairs of representatives (indexes into the representatives) with their
/// similarity, and how the comparison went.
struct NearPairs {
    method: SimilarityMethod,
    scored: Vec<(usize, usize, f32)>,
    compared: usize,
    capped: bool,
}

/// The groups asked for, refused out of range as `audit conflicts` refuses its `top`.
fn checked_limit(limit: Option<usize>) -> Result<usize> {
    crate::engine::limits::count_in_range("limit", limit, DEFAULT_DUPLICATE_LIMIT, MAX_DUPLICATE_LIMIT)
}

impl Engine {
    /// Chunk groups that repeat one another: exact copies, and near copies at `threshold`
    /// similarity or more (see [`DuplicatesRequest`]).
    pub fn audit_duplicates(&self, repo_path: &Path, req: &DuplicatesRequest) -> Result<DuplicatesResponse> {
        let started = Instant::now();
        let threshold = check_unit("threshold", req.threshold.unwrap_or(DEFAULT_DUPLICATE_THRESHOLD))?;
        let limit = checked_limit(req.limit)?;
        let repo = self.resolve_repo(repo_path)?;
        let (mut prints, stale) = fingerprint_chunks(&repo)?;
        let mut limits = Vec::new();
        if prints.len() > MAX_CHUNKS {
            limits.push(format!("only the first {MAX_CHUNKS} of {} chunks (in path order) were audited", prints.len()));
            prints.truncate(MAX_CHUNKS);
        }
        let mut notes = Vec::new();
        if stale > 0 {
            notes.push(format!(
                "{} changed since indexed and skipped (run `docdex index`)",
                crate::engine::fsutil::count(stale, "file")
            ));
        }
        let classes = exact_classes(&prints);
        let mut groups: Vec<DuplicateGroup> = classes
            .iter()
            .filter(|c| c.len() > 1)
            .map(|c| group(DuplicateKind::Exact, c.iter().map(|&i| item(&prints[i], 1.0)).collect()))
            .collect();
        // Near duplicates among the classes' representatives.
        let reps: Vec<usize> = classes.iter().map(|c| c[0]).collect();
        let near = match self.vectors(&repo) {
            Vectors::Usable(store, _) => near_by_embeddings(&store.all()?, &prints, &reps, &mut notes)?,
            Vectors::Unusable(why) => {
                notes.push(format!("near duplicates by MinHash of word 3-shingles: {why}"));
                near_by_minhash(&prints, &reps)?
            }
        };
        if near.capped {
            limits.push(format!(
                "candidate pairs were capped ({MAX_PAIRS} pairs, {} chunks per LSH bucket): some near duplicates may be missing",
                minhash::MAX_BUCKET
            ));
        }
        let mut near_groups = near_groups(&near.scored, &prints, &classes, threshold);
        let order =
            |g: &DuplicateGroup| (std::cmp::Reverse(g.items.len()), g.items[0].path.clone(), g.items[0].line_start);
        groups.sort_by_key(order);
        near_groups.sort_by_key(order);
        groups.extend(near_groups);
        let groups_total = groups.len();
        groups.truncate(limit);

        Ok(DuplicatesResponse {
            schema_version: 1,
            project_id: repo.fingerprint.clone(),
            repo: repo.root.clone(),
            kind: "duplicates".into(),
            threshold,
            method: near.method,
            notice: (!notes.is_empty()).then(|| notes.join("; ")),
            chunks: prints.len() as u64,
            pairs_compared: near.compared as u64,
            capped: !limits.is_empty(),
            limits,
            groups_total,
            groups,
            elapsed_ms: (started.elapsed().as_secs_f64() * 10_000.0).round() / 10.0,
        })
    }
}

/// Every indexed chunk's fingerprints (lockfiles left out: they repeat their entries by
/// design), with how many files changed since indexing and were skipped.
fn fingerprint_chunks(repo: &RepoRef) -> Result<(Vec<Print>, usize)> {
    let files: Vec<_> = indexed_files(repo)?.into_iter().filter(|f| f.class != FileClass::Lockfile).collect();
    let (per_file, stale) = map_files(repo, &files, |file, text| {
        let starts = line_starts(text);
        let mut out = Vec::new();
        for &(a, b) in &file.ranges {
            let chunk = lines(text, &starts, a, b);
            let words = minhash::words(chunk);
            if words.len() < MIN_WORDS {
                continue;
            }
            out.push(Print {
                path: file.path.clone(),
                line_start: a,
                line_end: b,
                exact: minhash::exact_hash(chunk),
                sig: minhash::signature(&words),
            });
        }
        out
    })?;
    Ok((per_file.into_iter().flatten().collect(), stale))
}

/// Chunks with the same whitespace-blind hash, in first-seen order; each class's first
/// member represents it in the near comparison.
fn exact_classes(prints: &[Print]) -> Vec<Vec<usize>> {
    let mut class_of: HashMap<u64, usize> = HashMap::new();
    let mut classes: Vec<Vec<usize>> = Vec::new();
    for (i, p) in prints.iter().enumerate() {
        let c = *class_of.entry(p.exact).or_insert_with(|| {
            classes.push(Vec::new());
            classes.len() - 1
        });
        classes[c].push(i);
    }
    classes
}

fn item(p: &Print, score: f32) -> AuditItem {
    AuditItem { path: p.path.clone(), line_start: p.line_start, line_end: p.line_end, score: round3(score) }
}

fn group(kind: DuplicateKind, items: Vec<AuditItem>) -> DuplicateGroup {
    DuplicateGroup { group_id: group_id(&items), kind, items }
}

/// Near pairs by the cosine of the representatives' embeddings, candidates from
/// random-hyperplane LSH; a chunk not embedded yet is compared by exact hash only.
fn near_by_embeddings(
    vectors: &[(VectorHit, Vec<f32>)],
    prints: &[Print],
    reps: &[usize],
    notes: &mut Vec<String>,
) -> Result<NearPairs> {
    let by_range: HashMap<(&str, u32, u32), &Vec<f32>> =
        vectors.iter().map(|(hit, v)| ((hit.path.as_str(), hit.line_start, hit.line_end), v)).collect();
    let with: Vec<(usize, &Vec<f32>)> = reps
        .iter()
        .enumerate()
        .filter_map(|(r, &i)| {
            let p = &prints[i];
            by_range.get(&(p.path.as_str(), p.line_start, p.line_end)).map(|v| (r, *v))
        })
        .collect();
    if with.len() < reps.len() {
        notes.push(format!(
            "{} no embedding yet and were compared by exact hash only (run `docdex index`)",
            match reps.len() - with.len() {
                1 => "1 chunk has".to_string(),
                n => format!("{n} chunks have"),
            }
        ));
    }
    let dim = with.first().map(|(_, v)| v.len()).unwrap_or(0);
    let planes = Hyperplanes::for_corpus(with.len(), dim);
    let keys: Vec<Vec<u64>> = with.iter().map(|(_, v)| planes.bands(v)).collect();
    let (pairs, capped) = minhash::candidate_pairs(with.len(), |i| keys[i].clone(), MAX_PAIRS);
    let scored = score_pairs(&pairs, |a, b| {
        let (x, y) = (&with[a as usize], &with[b as usize]);
        Some((x.0, y.0, minhash::cosine(x.1, y.1)))
    })?;
    Ok(NearPairs { method: SimilarityMethod::Embeddings, scored, compared: pairs.len(), capped })
}

/// Near pairs by MinHash-estimated Jaccard similarity of word 3-shingles, candidates from
/// banded LSH.
fn near_by_minhash(prints: &[Print], reps: &[usize]) -> Result<NearPairs> {
    let with: Vec<(usize, [u32; SIGNATURE_LEN])> =
        reps.iter().enumerate().filter_map(|(r, &i)| prints[i].sig.map(|s| (r, s))).collect();
    let keys: Vec<Vec<u64>> = with.iter().map(|(_, s)| minhash::minhash_bands(s)).collect();
    let (pairs, capped) = minhash::candidate_pairs(with.len(), |i| keys[i].clone(), MAX_PAIRS);
    let scored = score_pairs(&pairs, |a, b| {
        let (x, y) = (&with[a as usize], &with[b as usize]);
        Some((x.0, y.0, minhash::estimated_jaccard(&x.1, &y.1)))
    })?;
    Ok(NearPairs { method: SimilarityMethod::Minhash, scored, compared: pairs.len(), capped })
}

/// Groups of near copies: connected components of the pairs at `threshold` or more
/// (overlapping ranges of one file never pair), each representative expanded to its exact
/// class, scored by its closest pair.
fn near_groups(
    scored: &[(usize, usize, f32)],
    prints: &[Print],
    classes: &[Vec<usize>],
    threshold: f32,
) -> Vec<DuplicateGroup> {
    let reps: Vec<usize> = classes.iter().map(|c| c[0]).collect();
    let mut parent: Vec<usize> = (0..reps.len()).collect();
    fn find(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    let mut best = vec![0f32; reps.len()];
    for &(a, b, sim) in scored {
        let (pa, pb) = (&prints[reps[a]], &prints[reps[b]]);
        let overlapping = pa.path == pb.path && pa.line_start <= pb.line_end && pb.line_start <= pa.line_end;
        if sim < threshold || overlapping {
            continue;
        }
        best[a] = best[a].max(sim);
        best[b] = best[b].max(sim);
        let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
        if ra != rb {
            parent[ra.max(rb)] = ra.min(rb);
        }
    }
    let mut components: HashMap<usize, Vec<usize>> = HashMap::new();
    for (r, b) in best.iter().enumerate() {
        if *b > 0.0 {
            let root = find(&mut parent, r);
            components.entry(root).or_default().push(r);
        }
    }
    let best = &best;
    components
        .into_values()
        .filter(|members| members.len() > 1)
        .map(|members| {
            let mut items: Vec<AuditItem> = members
                .iter()
                .flat_map(|&r| classes[r].iter().map(move |&i| (i, best[r])))
                .map(|(i, s)| item(&prints[i], s.min(1.0)))
                .collect();
            items.sort_by(|x, y| x.path.cmp(&y.path).then(x.line_start.cmp(&y.line_start)));
            group(DuplicateKind::Near, items)
        })
        .collect()
}
