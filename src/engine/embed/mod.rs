//! Embeddings of a repo's chunks, for hybrid search and `similar`.
//!
//! `store` is the per-repo `vectors.db` (sqlite-vec); `phase` fills it after each
//! index commit from the chunks the index holds; this module adds the types the
//! surfaces see and [`Engine::similar`]. Everything here is optional: a repo without
//! embeddings (no embedding server, or `[search] hybrid = false`) searches with BM25
//! and says so.

pub mod phase;
pub mod resident;
pub mod store;
pub mod types;

use crate::engine::index::types::FileRequest;
use crate::engine::llm::model_matches;
use crate::engine::repos::RepoRef;
use crate::engine::Engine;
use crate::error::Result;
use std::collections::HashMap;
use store::{StoredModel, VectorHit, VectorStore};
pub use types::{EmbedState, EmbedSummary, SimilarFile, SimilarRequest, SimilarResponse};

/// Whether a repo's vectors can serve queries with the configured model.
pub(crate) enum Vectors {
    /// Usable: the store and the model it holds.
    Usable(VectorStore, StoredModel),
    /// Not usable, and why (for the notice).
    Unusable(String),
}

/// Said when a repo has no embeddings.
pub const NO_EMBEDDINGS: &str =
    "keyword search only: this repo has no embeddings yet (an embedding model makes search find meaning: `docdex llm-setup`, then `docdex index`)";

/// What a store whose last embedding run left files without vectors says (search's notice,
/// `status`, `check`); none when every file has its vectors or nothing was recorded.
pub(crate) fn coverage_notice(store: &VectorStore, root: &std::path::Path) -> Option<String> {
    let c = store.coverage().ok().flatten().filter(|c| c.missing > 0)?;
    let missing = if c.missing == 1 { "1 file has".to_string() } else { format!("{} files have", c.missing) };
    Some(format!(
        "embeddings cover {} of {} files: {missing} no vectors yet (the last embedding run did not finish), \
         so hybrid search finds them by keywords only; `docdex index --repo {}` embeds them once the embedder answers",
        c.wanted - c.missing.min(c.wanted),
        c.wanted,
        crate::error::shell_path(root)
    ))
}

/// Terms of a file used as its keyword fingerprint.
const SIMILAR_QUERY_TERMS: usize = 24;
/// Nearest chunks looked at per similar-files query.
const SIMILAR_POOL: usize = 400;

impl Engine {
    /// Opens a repo's vectors if they exist and match `[llm] embedding_model`.
    pub(crate) fn vectors(&self, repo: &RepoRef) -> Vectors {
        if !self.config().search.hybrid {
            return Vectors::Unusable("hybrid search is off ([search] hybrid = false); BM25 only".into());
        }
        let store = match VectorStore::open_existing(repo) {
            Ok(Some(s)) => s,
            Ok(None) => return Vectors::Unusable(NO_EMBEDDINGS.into()),
            Err(e) => return Vectors::Unusable(format!("vectors unreadable ({e}); BM25 only")),
        };
        match store.model() {
            Ok(Some(m)) => {
                let configured = &self.config().llm.embedding_model;
                if model_matches(&m.model, configured) {
                    Vectors::Usable(store, m)
                } else {
                    Vectors::Unusable(phase::stale_notice(&m.model, m.dim, configured, &repo.root))
                }
            }
            Ok(None) => Vectors::Unusable(NO_EMBEDDINGS.into()),
            Err(e) => Vectors::Unusable(format!("vectors unreadable ({e}); BM25 only")),
        }
    }

    /// What `status` warns of when the last embedding run left indexed files without vectors.
    pub(crate) fn embedding_gap(&self, repo: &RepoRef) -> Option<String> {
        match self.vectors(repo) {
            Vectors::Usable(store, _) => coverage_notice(&store, &repo.root),
            Vectors::Unusable(_) => None,
        }
    }

    /// The `k` chunks nearest to `query` in `store`: from the engine's in-memory copy of the
    /// repo's vectors when it is small enough to keep, else from sqlite-vec.
    pub(crate) fn nearest(
        &self,
        repo: &RepoRef,
        store: &VectorStore,
        model: &StoredModel,
        query: &[f32],
        k: usize,
    ) -> Result<Vec<VectorHit>> {
        self.inner.resident.knn(&repo.fingerprint, store, model.dim, query, k)
    }

    /// The files most like `req.file`: by the mean of its chunk vectors when the repo has
    /// embeddings (no model call needed), else by BM25 over its most distinctive terms.
    pub fn similar(&self, repo_path: &std::path::Path, req: &SimilarRequest) -> Result<SimilarResponse> {
        let repo = self.resolve_repo(repo_path)?;
        let limit = req.limit.unwrap_or(10).clamp(1, 200);
        let (given, _) = crate::engine::repos::split_citation(&repo.root, &req.file);
        let content = self.file_lines(&repo.root, &FileRequest::new(given, None), false)?;
        let file = content.path.clone();
        let mut resp = SimilarResponse {
            repo: repo.root.clone(),
            file: file.clone(),
            mode: "vector".into(),
            // A count outside 1..=200 is answered at the nearest bound, and said so.
            notice: req
                .limit
                .filter(|n| *n != limit)
                .map(|n| format!("limit {n} was taken as {limit}: similar lists 1 to 200 files")),
            results: Vec::new(),
        };
        let vectors = self.vectors(&repo);
        if let Some(empty) = nothing_to_compare(&file, &content.text) {
            // Said in the mode the repository would compare in: an empty file in a keyword-only
            // repository was "by embeddings" (tour37 F8).
            if !matches!(vectors, Vectors::Usable(..)) {
                resp.mode = "bm25".into();
            }
            resp.notice = Some(resp.notice.take().map_or(empty.clone(), |limit| format!("{empty}; {limit}")));
            return Ok(resp);
        }
        let notice = match vectors {
            Vectors::Usable(store, model) => {
                let vectors = store.file_vectors(&file)?;
                if let Some(mean) = mean_direction(&vectors) {
                    let hits = self.nearest(&repo, &store, &model, &mean, SIMILAR_POOL)?;
                    resp.results = similar_files(hits, &file, limit);
                    return Ok(resp);
                }
                format!("{file} has no embeddings yet (run `docdex index`); similarity by keywords instead")
            }
            Vectors::Unusable(why) => why,
        };
        resp.mode = "bm25".into();
        resp.notice = Some(match resp.notice.take() {
            Some(limit) => format!("{notice}; {limit}"),
            None => notice,
        });
        resp.results = self.similar_by_terms(&repo, &file, &content.text, limit)?;
        Ok(resp)
    }

    fn similar_by_terms(&self, repo: &RepoRef, file: &str, text: &str, limit: usize) -> Result<Vec<SimilarFile>> {
        let searcher = self.searcher(repo)?;
        let terms = searcher.distinctive_terms(text, SIMILAR_QUERY_TERMS);
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let pool = searcher.keyword_files(&terms, &self.config().search)?;
        let best = pool.iter().filter(|(p, _, _)| p != file).map(|(_, _, s)| *s).fold(0f32, f32::max).max(1e-6);
        Ok(pool
            .into_iter()
            .filter(|(p, _, _)| p != file)
            .take(limit)
            .map(|(path, lang, score)| SimilarFile { path, lang, score: ((score / best) * 1000.0).round() / 1000.0 })
            .collect())
    }
}

/// Why an empty (or whitespace-only) file has no similar files: it has neither words nor
/// embeddings, and "no similar files" alone did not say so (tour24 F10).
fn nothing_to_compare(file: &str, text: &str) -> Option<String> {
    let what = if text.is_empty() {
        "is empty"
    } else if text.trim().is_empty() {
        "holds only whitespace"
    } else {
        return None;
    };
    Some(format!("{file} {what}: it has no words or embeddings to compare, so no file is like it"))
}

/// The normalized mean of a file's chunk vectors (its overall direction).
fn mean_direction(vectors: &[Vec<f32>]) -> Option<Vec<f32>> {
    let dim = vectors.first()?.len();
    let mut mean = vec![0f32; dim];
    for v in vectors.iter().filter(|v| v.len() == dim) {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-9);
        mean.iter_mut().zip(v).for_each(|(m, x)| *m += x / norm);
    }
    let norm = mean.iter().map(|x| x * x).sum::<f32>().sqrt();
    (norm > 1e-9).then(|| mean.into_iter().map(|x| x / norm).collect())
}

/// Files ranked by their best chunk's similarity to the file's mean vector, plus a little for
/// each further close chunk (a file close in several places is closer than one close in one).
fn similar_files(hits: Vec<VectorHit>, file: &str, limit: usize) -> Vec<SimilarFile> {
    let mut by_file: HashMap<String, (String, f32, f32)> = HashMap::new();
    for h in hits.into_iter().filter(|h| h.path != file) {
        let e = by_file.entry(h.path).or_insert((h.lang, f32::MIN, 0.0));
        if h.similarity > e.1 {
            e.2 += e.1.max(0.0) * 0.05;
            e.1 = h.similarity;
        } else {
            e.2 += h.similarity.max(0.0) * 0.05;
        }
    }
    let mut out: Vec<SimilarFile> = by_file
        .into_iter()
        .map(|(path, (lang, best, extra))| SimilarFile { path, lang, score: round3(best + extra.min(0.05)) })
        .collect();
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.path.cmp(&b.path)));
    out.truncate(limit);
    out
}

fn round3(x: f32) -> f32 {
    (x * 1000.0).round() / 1000.0
}
