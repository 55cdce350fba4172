//! Hybrid retrieval (spec 002 §10): BM25 and vector nearest neighbours, fused
//! per file. By default (`fusion = "boost"`) BM25 ranks and closeness in meaning
//! boosts:
//!
//! ```text
//! boost(file) = bm25_file_score / best × e^(semantic_weight / keyword_weight × (closeness − lowest))
//! ```
//!
//! with a file's closeness the mean cosine of its two nearest chunks among the
//! [`VECTOR_SCAN`] nearest (3 with spec 002 §6.1's weights 0.75 and 0.25). With
//! `fusion = "rrf"`, weighted reciprocal rank fusion
//! (`keyword_weight / (rrf_k + bm25_file_rank) + semantic_weight / (rrf_k + vector_file_rank)`);
//! with `fusion = "weighted"`, a weighted merge of each file's normalized best BM25
//! score and cosine similarity. Rank fusion lets a small embedder's near-misses into
//! the first page; the boost only reorders what the words found, and a file the
//! words missed enters at the score where the keyword hits were cut (measured in docs/SEARCH.md).
//! Files, not chunks, are fused: the two retrievers
//! often find the same file through different chunks, and that agreement is the
//! strongest evidence there is (measured in `docs/SEARCH.md`). Both lists get the
//! file-class priors first (a lockfile close in meaning still ranks after source),
//! a file's chunks follow in their chunk-level RRF order with the same per-file
//! diversity as BM25, and every hit says which retrievers found it. [`Engine`]'s search decides
//! whether vectors can take part at all ([`Engine::retrieve`]): when the repo has
//! none, the model changed, or the embedder does not answer, the answer is BM25's
//! with a notice saying why. Plain BM25 pays nothing for this: a repo without
//! embeddings never calls the embedder.

use super::file_rank::FIRST_FILES;
use super::query::QueryPlan;
use super::symbol_rank::{DefinitionBoosts, RankingFlags};
use super::types::{RetrievalInfo, SearchHit, SearchRequest, SearchResponse, BM25, VECTOR};
use super::{encode_cursor, ms, PageWindow};
use super::{normalize_prefix, with_priors, Priors, RepoSearcher, Stored, CANDIDATE_POOL};
use crate::config::{Fusion, SearchConfig};
use crate::engine::analysis;
use crate::engine::cancel::CancelToken;
use crate::engine::embed::store::VectorHit;
use crate::engine::embed::Vectors;
use crate::engine::index::files;
use crate::engine::index::types::IndexState;
use crate::engine::repos::{under_prefix, RepoRef};
use crate::engine::Engine;
use crate::error::{Error, Result};
use std::collections::{HashMap, HashSet};
use std::time::Instant;
use tantivy::{TantivyDocument, Term};

/// A BM25 candidate: its file-ranked score, stored fields and file id.
type KeywordHit = (f32, Stored, u64);

/// Candidates each retriever brings to the fusion.
pub const FUSION_POOL: usize = 200;
/// Nearest chunks read for the boost fusion's closeness of each file (a brute-force scan
/// ranks every chunk anyway; this bounds the sort and the per-file table).
pub const VECTOR_SCAN: usize = 1000;
/// Cosine similarity at which semantic confidence starts, and where it is full.
const SIM_FLOOR: f32 = 0.2;
const SIM_FULL: f32 = 0.7;

impl Engine {
    /// Search with vectors when they can take part, else BM25 with a notice saying why.
    pub(crate) fn retrieve(
        &self,
        repo: &RepoRef,
        searcher: &RepoSearcher,
        req: &SearchRequest,
        state: IndexState,
        flags: RankingFlags,
    ) -> Result<SearchResponse> {
        let cfg = &self.config().search;
        let keyword_only = |notice: String| -> Result<SearchResponse> {
            let mut resp = searcher.search_with(repo, req, cfg, state, flags)?;
            resp.retrieval.notice = Some(notice);
            Ok(resp)
        };
        let t_open = Instant::now();
        let (store, model) = match self.vectors(repo) {
            Vectors::Usable(store, model) => (store, model),
            Vectors::Unusable(why) => return keyword_only(why),
        };
        tracing::debug!(open_ms = ms(t_open.elapsed()), "vectors opened");
        if req.query.trim().is_empty() {
            return searcher.search_with(repo, req, cfg, state, flags);
        }
        let t = Instant::now();
        let query_vec = match self.embed_query(&req.query) {
            Ok(v) => v,
            // Stopped while the model server had the query: its client left, so BM25 is not
            // run for nobody in its place.
            Err(Error::Cancelled) => return Err(Error::Cancelled),
            Err(e) => return keyword_only(format!("vector search unavailable ({e}); BM25 only")),
        };
        let embed_ms = ms(t.elapsed());
        if query_vec.len() != model.dim {
            return keyword_only(format!(
                "the embedder now returns {} dimensions but this repo's vectors have {}; run `docdex index --repo {} --reembed`",
                query_vec.len(),
                model.dim,
                crate::error::shell_path(&repo.root)
            ));
        }
        let nearest = |k: usize| self.nearest(repo, &store, &model, &query_vec, k);
        let mut resp = searcher.hybrid_search(repo, req, cfg, state, flags, &nearest)?;
        resp.retrieval.embedding_model = Some(model.model);
        resp.retrieval.embed_ms = Some(embed_ms);
        // Not a ranking input: says which files the vectors could not have found.
        resp.retrieval.notice = crate::engine::embed::coverage_notice(&store, &repo.root);
        Ok(resp)
    }
}

/// A chunk in the fusion.
#[derive(Debug, Clone)]
struct Fused {
    stored: Stored,
    /// The file's fused score, decayed for the file's later chunks: the ranking.
    score: f32,
    /// The chunk's own weighted RRF over the two lists: the order within its file.
    chunk_rrf: f32,
    file: u64,
    keyword: bool,
    vector: Option<f32>,
    /// Holds a definition the whole query names (symbol ranking): ranked first.
    pinned: bool,
    /// The file's best chunk by BM25: shown first among the file's chunks.
    lexical_best: bool,
}

/// The fused ranking of one hybrid query, before paging.
struct FusedRanking {
    ranked: Vec<Fused>,
    bm25_total: usize,
    vector_total: usize,
    t_vector: std::time::Duration,
    t_fuse: std::time::Duration,
}

impl RepoSearcher {
    /// BM25 and vector candidates fused per file, then paged and rendered like a BM25 answer.
    /// Ends with [`Error::Cancelled`] once the thread's ambient token trips: looked at between
    /// the keyword candidates, the vector candidates, the fusion and each file read for snippets.
    pub(crate) fn hybrid_search(
        &self,
        repo: &RepoRef,
        req: &SearchRequest,
        cfg: &SearchConfig,
        state: IndexState,
        flags: RankingFlags,
        nearest: &dyn Fn(usize) -> Result<Vec<VectorHit>>,
    ) -> Result<SearchResponse> {
        let t0 = Instant::now();
        let cancel = CancelToken::current();
        let window = PageWindow::of(req, cfg)?;
        let PageWindow { limit, offset, query_hash, .. } = window;
        let (searcher, generation) = self.searcher();
        let plan = QueryPlan::of(&req.query);
        let terms = plan.term_list();
        let fused =
            self.fused_ranking((&searcher, generation), repo, req, cfg, flags, &plan, nearest, (t0, &cancel))?;
        let ranked = &fused.ranked;
        let best = best_score(cfg, ranked);
        let page: Vec<&Fused> = ranked.iter().skip(offset).take(limit).collect();
        let rows = self.page_rows(&searcher, &page, best);
        let (mut hits, matched) = self.hits(repo, generation, &terms, &rows, &cancel)?;
        let contributed = mark_retrievers(&mut hits, &page);
        // Confidence is the first page's, whichever page this is (see `first_page_matched`).
        let first_page = self.first_page_matched(repo, &terms, (offset, limit), matched, &cancel, |n| {
            let top: Vec<&Fused> = ranked.iter().take(n).collect();
            self.page_rows(&searcher, &top, best)
        })?;
        let lexical =
            if terms.is_empty() { 0.0 } else { super::confidence(&searcher, self.fields.body, &terms, &first_page) };
        let best_sim = ranked.iter().take(limit).filter_map(|f| f.vector).fold(f32::MIN, f32::max);
        let confidence = combined_confidence(lexical, best_sim, cfg);
        scale_scores(&mut hits, &rows, confidence);

        let mut resp = SearchResponse {
            confidence,
            results: hits,
            total_hits: ranked.len(),
            retrieval: RetrievalInfo {
                mode: "hybrid".into(),
                retrievers: contributed,
                bm25_candidates: fused.bm25_total,
                vector_candidates: fused.vector_total,
                embedding_model: None,
                embed_ms: None,
                notice: None,
            },
            note: window.moved_note(generation).or_else(|| super::syntax::note(&req.query)),
            ..super::empty_response(repo, req, state, generation)
        };
        if offset + page.len() < ranked.len() {
            resp.next_cursor = encode_cursor(offset + page.len(), query_hash, generation);
        }
        resp.timing_ms = super::phase_timing(fused.t_vector, fused.t_fuse, t0.elapsed());
        Ok(resp)
    }

    /// Both retrievers' candidates and their per-file fusion, with the phase times since `t0`;
    /// [`Error::Cancelled`] between the phases once `cancel` trips.
    #[allow(clippy::too_many_arguments)]
    fn fused_ranking(
        &self,
        (searcher, generation): (&tantivy::Searcher, u64),
        repo: &RepoRef,
        req: &SearchRequest,
        cfg: &SearchConfig,
        flags: RankingFlags,
        plan: &QueryPlan,
        nearest: &dyn Fn(usize) -> Result<Vec<VectorHit>>,
        (t0, cancel): (Instant, &CancelToken),
    ) -> Result<FusedRanking> {
        let priors = Priors::for_query(&req.query, cfg.demote_noise_files);
        let boosts = if flags.symbols && !plan.term_list().is_empty() {
            self.definition_boosts(searcher, repo, generation, &req.query)?
        } else {
            DefinitionBoosts::default()
        };
        let (keyword, bm25_total, whole_query) =
            self.keyword_candidates(searcher, repo, req, cfg, flags, (plan, &priors, &boosts))?;
        let t_keyword = t0.elapsed();
        cancel.check()?;
        let mut vector = self.vector_candidates(searcher, req, cfg, nearest)?;
        let closeness = closeness_by_file(&vector);
        vector.truncate(FUSION_POOL);
        let vector_total = vector.len();
        let t_vector = t0.elapsed();
        cancel.check()?;

        // A definition the whole query names stays above everything, as in BM25 search.
        let pinned = |path: &str, a: u32, b: u32| {
            !boosts.is_empty() && boosts.factor(xxhash_rust::xxh3::xxh3_64(path.as_bytes()), a, b).1
        };
        // When every chunk holding a query word is a keyword candidate, the files holding the
        // whole query are known: a file the words did not reach follows them (`boost_scores`).
        let floor_files = if bm25_total <= FUSION_POOL { whole_query } else { HashSet::new() };
        let mut ranked = fuse(keyword, vector, &closeness, cfg, &floor_files, &pinned);
        if let Some(name) = super::named_file(&req.query) {
            named_file_first(&mut ranked, &name);
        }
        let t_fuse = t0.elapsed();
        cancel.check()?;
        tracing::debug!(
            keyword_ms = ms(t_keyword),
            vector_ms = ms(t_vector - t_keyword),
            fuse_ms = ms(t_fuse - t_vector),
            "hybrid retrieval"
        );
        Ok(FusedRanking { ranked, bm25_total, vector_total, t_vector, t_fuse })
    }

    /// A page's hits as (score relative to the best, stored fields) rows for rendering.
    fn page_rows(&self, searcher: &tantivy::Searcher, page: &[&Fused], best: f32) -> Vec<(f32, Stored)> {
        page.iter()
            .map(|f| {
                // Vector-only hits carry no stored fields yet: read the chunk's, for its context lines.
                let stored = if f.keyword {
                    f.stored.clone()
                } else {
                    self.stored_chunk(searcher, &f.stored).unwrap_or_else(|| f.stored.clone())
                };
                ((f.score / best).min(1.0), stored)
            })
            .collect()
    }

    /// Keyword candidates: the BM25 ranking as plain search has it, the top [`FUSION_POOL`]
    /// hits, with how many chunks BM25 matched.
    fn keyword_candidates(
        &self,
        searcher: &tantivy::Searcher,
        repo: &RepoRef,
        req: &SearchRequest,
        cfg: &SearchConfig,
        flags: RankingFlags,
        (plan, priors, boosts): (&QueryPlan, &Priors, &DefinitionBoosts),
    ) -> Result<(Vec<KeywordHit>, usize, HashSet<u64>)> {
        if plan.term_list().is_empty() {
            return Ok((Vec::new(), 0, HashSet::new()));
        }
        let (pool, total) = self
            .loading_tables(searcher, &repo.state_dir, || self.bm25_pool(searcher, plan, req, flags, priors, boosts))?;
        // The history is left out where the vectors take part: with MiniLM it added nothing to
        // hybrid search and cost MRR (docs/SEARCH.md, "History as a signal").
        let keyword_only = SearchConfig { history: false, ..cfg.clone() };
        let ranked = self.rank_files(searcher, (plan, priors), pool, &keyword_only, repo, req.history_before);
        let whole_query: HashSet<u64> = ranked.iter().filter(|c| c.whole_query).map(|c| c.file).collect();
        let keyword = ranked
            .into_iter()
            .take(FUSION_POOL)
            .filter_map(|c| {
                let d = searcher.doc::<TantivyDocument>(c.addr).ok()?;
                Some((c.score, Stored::from_doc(&d, &self.fields), c.file))
            })
            .collect();
        Ok((keyword, total, whole_query))
    }

    /// Vector candidates: the nearest chunks, filtered like the BM25 query, each times its
    /// file's class prior, best first.
    fn vector_candidates(
        &self,
        searcher: &tantivy::Searcher,
        req: &SearchRequest,
        cfg: &SearchConfig,
        nearest: &dyn Fn(usize) -> Result<Vec<VectorHit>>,
    ) -> Result<Vec<(f32, VectorHit)>> {
        let filtered = req.lang.as_deref().is_some_and(|l| !l.is_empty())
            || req.path_prefix.as_deref().is_some_and(|p| !p.trim().is_empty());
        let k = match cfg.fusion {
            Fusion::Boost => VECTOR_SCAN,
            _ if filtered => (FUSION_POOL * 5).min(CANDIDATE_POOL),
            _ => FUSION_POOL,
        };
        let mut classes: HashMap<String, files::FileClass> = HashMap::new();
        // Vectors get the class priors without the query's lifts: a query that mentions tests
        // or docs lifts them for BM25 on the strength of that word, but every test and guide is
        // close in meaning to a task description (measured: docs/SEARCH.md).
        let vector_priors = Priors::for_query("", cfg.demote_noise_files);
        let mut vector: Vec<(f32, VectorHit)> = nearest(k)?
            .into_iter()
            .filter(|h| passes_filters(h, req))
            .map(|h| {
                let class =
                    *classes.entry(h.path.clone()).or_insert_with(|| self.indexed_class(searcher, &h.path, &h.lang));
                (h.similarity * vector_priors.factor(class), h)
            })
            .collect();
        vector.sort_by(|a, b| {
            b.0.total_cmp(&a.0).then(a.1.path.cmp(&b.1.path)).then(a.1.line_start.cmp(&b.1.line_start))
        });
        Ok(vector)
    }

    /// The stored fields of the indexed chunk at `s.path`, lines `s.line_start..=s.line_end`.
    /// The class the index recorded for a file (content markers included, see
    /// [`files::classify_text`]), for vector candidates, which come without a document: path
    /// rules decide when they say anything but source, or when the file is not in this snapshot.
    fn indexed_class(&self, searcher: &tantivy::Searcher, path: &str, lang: &str) -> files::FileClass {
        use tantivy::DocSet;
        let by_path = files::classify(path, lang);
        if by_path != files::FileClass::Source {
            return by_path;
        }
        let term = Term::from_field_text(self.fields.path, path);
        for segment in searcher.segment_readers() {
            let Ok(inverted) = segment.inverted_index(self.fields.path) else { continue };
            let Ok(Some(mut postings)) = inverted.read_postings(&term, tantivy::schema::IndexRecordOption::Basic)
            else {
                continue;
            };
            let mut doc = postings.doc();
            while doc != tantivy::TERMINATED && segment.is_deleted(doc) {
                doc = postings.advance();
            }
            if doc == tantivy::TERMINATED {
                continue;
            }
            let class = segment.fast_fields().u64("class").ok().and_then(|c| c.first(doc));
            return class.map(files::FileClass::from_u64).unwrap_or(by_path);
        }
        by_path
    }

    fn stored_chunk(&self, searcher: &tantivy::Searcher, s: &Stored) -> Option<Stored> {
        let q = tantivy::query::TermQuery::new(
            Term::from_field_text(self.fields.path, &s.path),
            tantivy::schema::IndexRecordOption::Basic,
        );
        let docs = searcher.search(&q, &tantivy::collector::DocSetCollector).ok()?;
        docs.into_iter()
            .filter_map(|addr| searcher.doc::<TantivyDocument>(addr).ok())
            .map(|d| Stored::from_doc(&d, &self.fields))
            .find(|x| x.line_start == s.line_start && x.line_end == s.line_end)
    }

    /// The `n` terms of `text` that best tell it apart in this index (term frequency times
    /// inverse document frequency over chunk bodies).
    pub(crate) fn distinctive_terms(&self, text: &str, n: usize) -> Vec<String> {
        let (searcher, _) = self.searcher();
        let docs = searcher.num_docs().max(1) as f64;
        let mut tf: HashMap<String, u32> = HashMap::new();
        for t in analysis::terms(text) {
            if t.len() > 2 && !t.chars().all(|c| c.is_ascii_digit()) {
                *tf.entry(t).or_default() += 1;
            }
        }
        let mut scored: Vec<(f64, String)> = tf
            .into_iter()
            .filter_map(|(t, f)| {
                let df = searcher.doc_freq(&Term::from_field_text(self.fields.body, &t)).unwrap_or(0) as f64;
                (df > 0.0).then(|| ((1.0 + f as f64).ln() * (1.0 + docs / df).ln(), t))
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.into_iter().take(n).map(|(_, t)| t).collect()
    }

    /// Files matching `terms` by BM25 (body only), best first: (path, lang, score of its best
    /// chunk plus a share of the rest).
    pub(crate) fn keyword_files(&self, terms: &[String], cfg: &SearchConfig) -> Result<Vec<(String, String, f32)>> {
        let (searcher, _) = self.searcher();
        let req = SearchRequest { query: terms.join(" "), ..Default::default() };
        let plan = QueryPlan { terms: terms.iter().map(|t| (t.clone(), 1.0)).collect(), joined: Vec::new() };
        let query = self.build_query(&plan, &req, false)?;
        let top = self.top_chunks(&searcher, query)?;
        let priors = Priors::for_query("", cfg.demote_noise_files);
        let mut by_file: HashMap<u64, (f32, f32, Option<tantivy::DocAddress>)> = HashMap::new();
        for c in with_priors(&searcher, top, &priors, &DefinitionBoosts::default()) {
            let (score, file, addr) = (c.score, c.file, c.addr);
            let e = by_file.entry(file).or_insert((0.0, 0.0, None));
            if score > e.0 {
                e.1 += e.0 * 0.2;
                e.0 = score;
                e.2 = Some(addr);
            } else {
                e.1 += score * 0.2;
            }
        }
        let mut out: Vec<(String, String, f32)> = by_file
            .into_values()
            .filter_map(|(best, rest, addr)| {
                let d: TantivyDocument = searcher.doc(addr?).ok()?;
                let s = Stored::from_doc(&d, &self.fields);
                Some((s.path, s.lang, best + rest.min(best)))
            })
            .collect();
        out.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
        Ok(out)
    }
}

/// The fusion's side of [`super::RepoSearcher::named_file_first`] (the same
/// [`super::lift_named_file`], with the paths the fused chunks carry).
fn named_file_first(ranked: &mut Vec<Fused>, name: &str) {
    super::lift_named_file(ranked, |f| f.file, |f| &mut f.score, |f| super::is_named(&f.stored.path, name));
}

fn passes_filters(h: &VectorHit, req: &SearchRequest) -> bool {
    if let Some(lang) = req.lang.as_deref().filter(|l| !l.is_empty()) {
        if !h.lang.eq_ignore_ascii_case(lang) {
            return false;
        }
    }
    if let Some(prefix) = req.path_prefix.as_deref().map(normalize_prefix).filter(|p| !p.is_empty()) {
        if !under_prefix(&h.path, &prefix) {
            return false;
        }
    }
    true
}

/// Fuses the two ranked lists by file, the unit a reader (and the judging of search) cares
/// about: each file gets one fused score from where each retriever ranks it (`[search] fusion`:
/// weighted RRF over file ranks, or a weighted merge of normalized best scores), so a file both
/// retrievers find through different chunks is reinforced instead of split. A file's chunks
/// follow in their chunk-level RRF order, the second at ×0.7 and later ones decaying faster (the
/// per-file diversity of BM25 search); ties break by path and line for a stable order. Chunks
/// `pinned` says hold a definition the whole query names come first. Within a file, its best
/// chunk by BM25 leads: the one holding the words asked (`marker500` on page 501 of an 800-page
/// manual, `char_height` in a 2,600-line module) was passed by chunks the vectors found alike
/// (pages 281 and 2; a chunk with only `height`), so the match a user typed went unseen.
/// The files' order does not change.
fn fuse(
    keyword: Vec<KeywordHit>,
    vector: Vec<(f32, VectorHit)>,
    closeness: &HashMap<u64, f32>,
    cfg: &SearchConfig,
    floor_files: &HashSet<u64>,
    pinned: &dyn Fn(&str, u32, u32) -> bool,
) -> Vec<Fused> {
    let keyword_files: Vec<(f32, u64)> = keyword.iter().map(|(score, _, file)| (*score, *file)).collect();
    let vector_files: Vec<(f32, u64)> =
        vector.iter().map(|(score, h)| (*score, xxhash_rust::xxh3::xxh3_64(h.path.as_bytes()))).collect();
    let by_file = match cfg.fusion {
        Fusion::Boost => {
            let lists = (best_per_file(&keyword_files), best_per_file(&vector_files));
            let cut = keyword_files.last().map_or(0.0, |k| k.0);
            boost_scores((&lists.0, cut), &lists.1, closeness, cfg, floor_files)
        }
        _ => file_scores(&keyword_files, &vector_files, cfg),
    };

    let mut all = chunks_by_rrf(keyword, vector, &vector_files, cfg);
    for f in all.iter_mut() {
        f.pinned = pinned(&f.stored.path, f.stored.line_start, f.stored.line_end);
    }
    // Within a file, chunks in their own fused order after its best BM25 chunk; across files,
    // the file's score.
    all.sort_by(|a, b| {
        b.pinned
            .cmp(&a.pinned)
            .then(b.lexical_best.cmp(&a.lexical_best))
            .then(b.chunk_rrf.total_cmp(&a.chunk_rrf))
            .then_with(|| a.stored.path.cmp(&b.stored.path))
            .then(a.stored.line_start.cmp(&b.stored.line_start))
    });
    score_by_file(&mut all, &by_file, cfg);
    all.sort_by(|a, b| {
        b.pinned
            .cmp(&a.pinned)
            .then(b.score.total_cmp(&a.score))
            .then(b.chunk_rrf.total_cmp(&a.chunk_rrf))
            .then_with(|| a.stored.path.cmp(&b.stored.path))
            .then(a.stored.line_start.cmp(&b.stored.line_start))
    });
    all
}

/// Every chunk either list holds, once, with its chunk-level RRF score over both lists.
fn chunks_by_rrf(
    keyword: Vec<KeywordHit>,
    vector: Vec<(f32, VectorHit)>,
    vector_files: &[(f32, u64)],
    cfg: &SearchConfig,
) -> Vec<Fused> {
    let k = cfg.rrf_k as f32;
    let (kw, sem) = (cfg.keyword_weight as f32, cfg.semantic_weight as f32);
    let mut by_chunk: HashMap<(String, u32, u32), Fused> = HashMap::new();
    let mut files_seen: HashSet<u64> = HashSet::new();
    for (rank, (_, stored, file)) in keyword.into_iter().enumerate() {
        let key = (stored.path.clone(), stored.line_start, stored.line_end);
        let e = by_chunk.entry(key).or_insert(Fused {
            stored,
            score: 0.0,
            chunk_rrf: 0.0,
            file,
            keyword: false,
            vector: None,
            pinned: false,
            lexical_best: false,
        });
        e.chunk_rrf += kw / (k + rank as f32 + 1.0);
        e.keyword = true;
        // The keyword list is best first: a file's first chunk in it is its best.
        e.lexical_best |= files_seen.insert(file);
    }
    for (rank, ((_, h), (_, file))) in vector.into_iter().zip(vector_files).enumerate() {
        let key = (h.path.clone(), h.line_start, h.line_end);
        let e = by_chunk.entry(key).or_insert_with(|| Fused {
            stored: Stored {
                path: h.path.clone(),
                lang: h.lang.clone(),
                line_start: h.line_start,
                line_end: h.line_end,
                context: Vec::new(),
            },
            score: 0.0,
            chunk_rrf: 0.0,
            file: *file,
            keyword: false,
            vector: None,
            pinned: false,
            lexical_best: false,
        });
        e.chunk_rrf += sem / (k + rank as f32 + 1.0);
        e.vector = Some(h.similarity);
    }
    by_chunk.into_values().collect()
}

/// Gives each chunk (in its file's own order) its file's score: the best chunk the whole
/// score, the next ×0.7, later ones decaying faster. As in BM25 search, the first files each
/// show their best chunk before any file shows a second one: a file's further chunks rank
/// below the FIRST_FILES-th file.
fn score_by_file(all: &mut [Fused], by_file: &HashMap<u64, f32>, cfg: &SearchConfig) {
    let mut file_order: Vec<f32> = by_file.values().copied().collect();
    let cap = if file_order.len() > FIRST_FILES {
        file_order.select_nth_unstable_by(FIRST_FILES - 1, |a, b| b.total_cmp(a));
        let kth = file_order[FIRST_FILES - 1];
        f32::from_bits(kth.to_bits().saturating_sub(1)).max(0.0)
    } else {
        f32::INFINITY
    };
    let max_per_file = cfg.max_chunks_per_file.max(1) as usize;
    let mut seen: HashMap<u64, usize> = HashMap::new();
    for f in all.iter_mut() {
        let n = seen.entry(f.file).or_default();
        let file_score = by_file.get(&f.file).copied().unwrap_or(0.0);
        f.score = match *n {
            0 => file_score,
            n if n < max_per_file => (file_score * 0.7).min(cap),
            n => (file_score * 0.7 * 0.35f32.powi((n + 1 - max_per_file) as i32)).min(cap),
        };
        *n += 1;
    }
}

/// Each file's fused score from the two candidate lists, each `(score, file)` best first with
/// the class priors applied. RRF: `weight / (rrf_k + rank)` with the file's rank among the
/// distinct files of the list. Weighted: `weight × normalized best score`, BM25 divided by the
/// list's best, cosine scaled from the list's lowest (0) to its highest (1). A file missing
/// from a list gets nothing from it.
fn file_scores(keyword: &[(f32, u64)], vector: &[(f32, u64)], cfg: &SearchConfig) -> HashMap<u64, f32> {
    let weights = [cfg.keyword_weight as f32, cfg.semantic_weight as f32];
    let mut out: HashMap<u64, f32> = HashMap::new();
    for (i, list) in [keyword, vector].into_iter().enumerate() {
        let best = best_per_file(list);
        let top = best.iter().map(|b| b.1).fold(f32::MIN, f32::max);
        let low = if i == 0 { 0.0 } else { best.iter().map(|b| b.1).fold(f32::MAX, f32::min) };
        for (rank, (file, score)) in best.into_iter().enumerate() {
            let part = match cfg.fusion {
                Fusion::Rrf | Fusion::Boost => weights[i] / (cfg.rrf_k as f32 + rank as f32 + 1.0),
                Fusion::Weighted if top - low > 1e-6 => weights[i] * (score - low) / (top - low),
                Fusion::Weighted => weights[i],
            };
            *out.entry(file).or_default() += part;
        }
    }
    out
}

/// Each file once, at its first (best) score in a list sorted best first.
fn best_per_file(list: &[(f32, u64)]) -> Vec<(u64, f32)> {
    let mut seen: std::collections::HashSet<u64> = std::collections::HashSet::new();
    list.iter().filter(|(_, file)| seen.insert(*file)).map(|(score, file)| (*file, *score)).collect()
}

/// Each file's closeness to the query among the scanned vector hits (best first, priors
/// applied): the mean of its two nearest chunks, or its only one. Two chunks say more than one
/// lucky match, as in BM25's file ranking.
fn closeness_by_file(vector: &[(f32, VectorHit)]) -> HashMap<u64, f32> {
    let mut top2: HashMap<u64, (f32, u32)> = HashMap::new();
    for (score, h) in vector {
        let e = top2.entry(xxhash_rust::xxh3::xxh3_64(h.path.as_bytes())).or_insert((0.0, 0));
        if e.1 < 2 {
            *e = (e.0 + score, e.1 + 1);
        }
    }
    top2.into_iter().map(|(file, (sum, n))| (file, sum / n.max(1) as f32)).collect()
}

/// [`Fusion::Boost`]: `bm25 / best × e^(semantic_weight / keyword_weight × (closeness −
/// lowest))` over the files of both lists (each `(file, score)` best first). A file the vectors
/// did not reach gets no boost; a file only the vectors found takes the score at which the
/// keyword hits were cut (`cut`, the last hit's): its best chunk ranked below every keyword hit,
/// so it can score no more than that. (The weakest keyword *file* is not that bound: when one
/// file holds all 200 hits, as an 800-page manual holding the one word asked for, it is the best
/// file, and any file close in meaning passed it.) With no keyword candidates (no query word is
/// in the repo), closeness alone ranks.
/// `floor_files` are keyword files known to hold every query term (given only when every chunk
/// holding a query word is a candidate, as for a rare word): a file only the vectors found
/// ranks after all of them, in its own order, so a guide holding the one word asked for is not
/// passed by code that merely reads alike, while a lockfile holding one stray word still is.
fn boost_scores(
    (keyword, cut): (&[(u64, f32)], f32),
    vector: &[(u64, f32)],
    closeness: &HashMap<u64, f32>,
    cfg: &SearchConfig,
    floor_files: &HashSet<u64>,
) -> HashMap<u64, f32> {
    let (kw, sem) = (cfg.keyword_weight as f32, cfg.semantic_weight as f32);
    let lowest = closeness.values().copied().fold(f32::MAX, f32::min);
    let close = |file: &u64| closeness.get(file).map_or(0.0, |c| (c - lowest).max(0.0));
    let best = keyword.first().map_or(0.0, |k| k.1);
    let weakest = keyword.last().map_or(0.0, |k| k.1).min(cut);
    let files = keyword.iter().chain(vector).map(|(file, _)| *file);
    if best <= 0.0 || kw <= 0.0 {
        return files.map(|f| (f, close(&f) + 1e-6)).collect();
    }
    let lexical: HashMap<u64, f32> = keyword.iter().copied().collect();
    let mut scores: HashMap<u64, f32> = files
        .map(|f| {
            let share = lexical.get(&f).copied().unwrap_or(weakest).max(0.0) / best;
            (f, share * (sem / kw * close(&f)).exp())
        })
        .collect();
    let floor = floor_files.iter().filter_map(|f| scores.get(f)).copied().fold(f32::MAX, f32::min);
    if floor < f32::MAX && floor > 0.0 {
        // Below the lowest whole-query file, keeping their order among themselves.
        for (_, s) in scores.iter_mut().filter(|(f, _)| !lexical.contains_key(*f)) {
            *s = floor * *s / (*s + floor);
        }
    }
    scores
}

/// The score against which hits' scores are scaled to 0..1: the best possible (a file at the
/// top of both lists) for rank fusion and the weighted merge, the best fused file for boost.
fn best_score(cfg: &SearchConfig, ranked: &[Fused]) -> f32 {
    let total = (cfg.keyword_weight + cfg.semantic_weight) as f32;
    match cfg.fusion {
        Fusion::Rrf => total / (cfg.rrf_k as f32 + 1.0),
        Fusion::Weighted => total,
        Fusion::Boost => ranked.iter().filter(|f| !f.pinned).map(|f| f.score).fold(f32::MIN_POSITIVE, f32::max),
    }
}

/// Confidence with vectors: the lexical share (as in BM25 search) or, when higher, the
/// weighted blend with a semantic share read from the best cosine similarity on the page
/// (0 at [`SIM_FLOOR`], 1 at [`SIM_FULL`]). A query whose words are all found keeps its
/// lexical confidence; one that shares no words with a close match still gets some.
fn combined_confidence(lexical: f64, best_sim: f32, cfg: &SearchConfig) -> f64 {
    if best_sim == f32::MIN {
        return lexical;
    }
    let semantic = (((best_sim - SIM_FLOOR) / (SIM_FULL - SIM_FLOOR)).clamp(0.0, 1.0)) as f64;
    let total = (cfg.keyword_weight + cfg.semantic_weight).max(1e-9);
    let blend = (cfg.keyword_weight * lexical + cfg.semantic_weight * semantic) / total;
    (lexical.max(blend) * 1000.0).round() / 1000.0
}

/// Each hit's score as shown: its fused score relative to the best (0..1, the order) times
/// the query's confidence, so no hit claims more than the results account for. Relative
/// alone, the first hit was 1.00 whatever it matched: a file only the vectors found, sharing
/// no word with the query and barely close to it, read 1.00 beside a confidence of 0.00.
/// Scaling every hit by one number keeps their order.
fn scale_scores(hits: &mut [SearchHit], rows: &[(f32, Stored)], confidence: f64) {
    for (hit, (relative, _)) in hits.iter_mut().zip(rows) {
        hit.score = super::round3(relative * confidence as f32);
    }
}

/// Names on each hit the retrievers that found it, and returns every retriever that
/// contributed to the page, sorted.
fn mark_retrievers(hits: &mut [SearchHit], page: &[&Fused]) -> Vec<String> {
    let mut contributed: Vec<String> = Vec::new();
    for (hit, f) in hits.iter_mut().zip(page) {
        hit.retrievers.clear();
        if f.keyword {
            hit.retrievers.push(BM25.into());
        }
        if f.vector.is_some() {
            hit.retrievers.push(VECTOR.into());
        }
        for r in &hit.retrievers {
            if !contributed.contains(r) {
                contributed.push(r.clone());
            }
        }
    }
    contributed.sort();
    contributed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(path: &str, ls: u32) -> Stored {
        Stored { path: path.into(), lang: "rust".into(), line_start: ls, line_end: ls + 9, context: Vec::new() }
    }

    fn vhit(path: &str, ls: u32, sim: f32) -> (f32, VectorHit) {
        (sim, VectorHit { path: path.into(), lang: "rust".into(), line_start: ls, line_end: ls + 9, similarity: sim })
    }

    fn file(p: &str) -> u64 {
        xxhash_rust::xxh3::xxh3_64(p.as_bytes())
    }

    fn rrf() -> SearchConfig {
        SearchConfig { fusion: Fusion::Rrf, ..SearchConfig::default() }
    }

    /// Fusion without the boost's closeness table (rank fusion and the weighted merge).
    fn fuse_lists(keyword: Vec<KeywordHit>, vector: Vec<(f32, VectorHit)>, cfg: &SearchConfig) -> Vec<Fused> {
        let closeness = closeness_by_file(&vector);
        fuse(keyword, vector, &closeness, cfg, &HashSet::new(), &|_, _, _| false)
    }

    #[test]
    fn files_holding_the_whole_query_stay_above_files_only_the_vectors_found() {
        // One rare word: BM25 finds the code and a guide (a doc, so a low score) and a lockfile
        // holding another, stray word; the vectors rank an unrelated file far closer.
        let cfg = SearchConfig { fusion: Fusion::Boost, ..SearchConfig::default() };
        let order = |floor: &[&str]| -> Vec<String> {
            let keyword = vec![
                (9.0, stored("proto.py", 1), file("proto.py")),
                (0.9, stored("guide.md", 1), file("guide.md")),
                (0.5, stored("Cargo.lock", 1), file("Cargo.lock")),
            ];
            let vector = vec![
                vhit("proto.py", 1, 0.9),
                vhit("argparse.py", 1, 0.8),
                vhit("guide.md", 1, 0.2),
                vhit("Cargo.lock", 1, 0.1),
            ];
            let closeness = closeness_by_file(&vector);
            let floor: HashSet<u64> = floor.iter().map(|p| file(p)).collect();
            let fused = fuse(keyword, vector, &closeness, &cfg, &floor, &|_, _, _| false);
            fused.iter().map(|f| f.stored.path.clone()).collect()
        };
        // No floor (long descriptions, or nothing holds the whole query): near misses may lead.
        assert_eq!(order(&[]), ["proto.py", "argparse.py", "guide.md", "Cargo.lock"]);
        // The guide holds the whole query; the lockfile only a stray word.
        assert_eq!(order(&["proto.py", "guide.md"]), ["proto.py", "guide.md", "argparse.py", "Cargo.lock"]);
    }

    #[test]
    fn a_file_only_the_vectors_found_enters_below_the_keyword_hits_cut() {
        // Every keyword hit is one manual's: the page holding the word asked for, then pages
        // holding only a common part of it, their scores decaying as file ranking gives them.
        // An unrelated module the vectors find closer than the manual must not pass it: its best
        // chunk ranked below the manual's weakest page.
        let cfg = SearchConfig { fusion: Fusion::Boost, ..SearchConfig::default() };
        let keyword: Vec<KeywordHit> = (0..20)
            .map(|i| (10.0 * 0.3f32.powi(i), stored("manual.pdf", 1 + 40 * i as u32), file("manual.pdf")))
            .collect();
        let vector = vec![vhit("pkg/__init__.py", 1, 0.55), vhit("manual.pdf", 1, 0.35), vhit("other.py", 1, 0.3)];
        let fused = fuse_lists(keyword, vector, &cfg);
        assert_eq!(
            fused[0].stored.path,
            "manual.pdf",
            "{:?}",
            fused.iter().map(|f| &f.stored.path).collect::<Vec<_>>()
        );
        assert_eq!(fused[0].stored.line_start, 1, "the page holding the word leads");
        let init = fused.iter().find(|f| f.stored.path == "pkg/__init__.py").map(|f| f.score).unwrap_or(-1.0);
        assert!(init > 0.0 && init < fused[0].score / 10.0, "{init} against {}", fused[0].score);
    }

    #[test]
    fn rrf_puts_chunks_both_retrievers_found_first_and_weights_semantics() {
        let cfg = rrf();
        let keyword = vec![(9.0, stored("a.rs", 1), file("a.rs")), (8.0, stored("b.rs", 1), file("b.rs"))];
        let vector = vec![vhit("c.rs", 1, 0.9), vhit("b.rs", 1, 0.8)];
        let fused = fuse_lists(keyword, vector, &cfg);
        let order: Vec<&str> = fused.iter().map(|f| f.stored.path.as_str()).collect();
        // b: both lists; c: first by vectors (weight 0.75); a: first by BM25 (weight 0.25).
        assert_eq!(order, ["b.rs", "c.rs", "a.rs"]);
        assert!(fused[0].keyword && fused[0].vector.is_some());
        assert!(!fused[1].keyword && fused[1].vector == Some(0.9));
        let expected_b = 0.25 / 62.0 + 0.75 / 62.0;
        assert!((fused[0].score - expected_b).abs() < 1e-6);

        // Keyword-heavy weights flip the two single-retriever hits.
        let cfg = SearchConfig { semantic_weight: 0.2, keyword_weight: 0.8, ..rrf() };
        let keyword = vec![(9.0, stored("a.rs", 1), file("a.rs"))];
        let fused = fuse_lists(keyword, vec![vhit("c.rs", 1, 0.9)], &cfg);
        assert_eq!(fused[0].stored.path, "a.rs");
    }

    #[test]
    fn a_files_further_chunks_yield_to_other_files() {
        let cfg = rrf();
        let vector = vec![vhit("a.rs", 1, 0.9), vhit("a.rs", 20, 0.89), vhit("a.rs", 40, 0.88), vhit("b.rs", 1, 0.5)];
        let fused = fuse_lists(Vec::new(), vector, &cfg);
        let order: Vec<(&str, u32)> = fused.iter().map(|f| (f.stored.path.as_str(), f.stored.line_start)).collect();
        assert_eq!(order[0], ("a.rs", 1));
        assert_eq!(order[1], ("b.rs", 1), "{order:?}");
    }

    #[test]
    fn a_file_both_retrievers_find_through_different_chunks_ranks_first() {
        let cfg = rrf();
        let keyword = vec![(9.0, stored("a.rs", 1), file("a.rs")), (8.0, stored("b.rs", 1), file("b.rs"))];
        let vector = vec![vhit("c.rs", 1, 0.9), vhit("b.rs", 30, 0.8)];
        let fused = fuse_lists(keyword, vector, &cfg);
        let order: Vec<(&str, u32)> = fused.iter().map(|f| (f.stored.path.as_str(), f.stored.line_start)).collect();
        // b is second in both lists, by different chunks: as a file it beats c (first by
        // vectors only) and a (first by BM25 only); its keyword chunk (the words asked) leads
        // and its vector chunk follows c at the second-chunk discount.
        assert_eq!(order, [("b.rs", 1), ("c.rs", 1), ("b.rs", 30), ("a.rs", 1)]);
        assert!((fused[0].score - (0.25 / 62.0 + 0.75 / 62.0)).abs() < 1e-6);
    }

    #[test]
    fn a_files_chunk_holding_the_words_asked_comes_before_chunks_that_only_read_alike() {
        // An 800-page manual: BM25 finds `marker500` on page 501 only; the vectors rank pages
        // 281 and 2 above it. The manual is the one file either way; its first hit must be
        // the page holding the word.
        for cfg in [SearchConfig::default(), rrf()] {
            let keyword = vec![(7.5, stored("manual.pdf", 23514), file("manual.pdf"))];
            let vector = vec![vhit("manual.pdf", 13000, 0.31), vhit("manual.pdf", 40, 0.30)];
            let fused = fuse_lists(keyword, vector, &cfg);
            let first: Vec<u32> = fused.iter().map(|f| f.stored.line_start).collect();
            assert_eq!(first[0], 23514, "{:?}: {first:?}", cfg.fusion);
            assert!(fused[0].keyword);
        }
    }

    #[test]
    fn a_weighted_merge_keeps_a_keyword_margin_that_rank_fusion_drops() {
        // a is by far the best keyword match and a close second by vectors; b barely matches
        // the words but is (just) the nearest vector.
        let lists = || {
            (
                vec![(10.0, stored("a.rs", 1), file("a.rs")), (1.0, stored("b.rs", 1), file("b.rs"))],
                vec![vhit("b.rs", 1, 0.50), vhit("a.rs", 1, 0.49), vhit("z.rs", 1, 0.20)],
            )
        };
        let (keyword, vector) = lists();
        let by_rank = fuse_lists(keyword, vector, &rrf());
        assert_eq!(by_rank[0].stored.path, "b.rs", "ranks alone favour the semantic side's first");

        let cfg = SearchConfig { fusion: Fusion::Weighted, ..SearchConfig::default() };
        let (keyword, vector) = lists();
        let merged = fuse_lists(keyword, vector, &cfg);
        let order: Vec<&str> = merged.iter().map(|f| f.stored.path.as_str()).collect();
        assert_eq!(order, ["a.rs", "b.rs", "z.rs"]);
        // a: 0.25 × 10/10 + 0.75 × (0.49 − 0.20)/(0.50 − 0.20); scaled by the best possible (1).
        assert!((merged[0].score - (0.25 + 0.75 * 0.29 / 0.30)).abs() < 1e-4);
        assert!((best_score(&cfg, &merged) - 1.0).abs() < 1e-6);
        assert_eq!(merged[2].score, 0.0, "the farthest vector with no keyword match adds nothing");
    }

    #[test]
    fn boost_lets_vectors_reorder_close_keyword_matches_but_not_overrule_strong_ones() {
        let cfg = SearchConfig::default();
        assert_eq!(cfg.fusion, Fusion::Boost);
        // a and b are close by BM25 (10 vs 9); b is much nearer in meaning (two chunks): b
        // first. z is far behind by BM25 (1) and only a little nearer than the farthest: it
        // stays behind a. y only the vectors found, at the lowest closeness: last.
        let keyword = vec![
            (10.0, stored("a.rs", 1), file("a.rs")),
            (9.0, stored("b.rs", 1), file("b.rs")),
            (1.0, stored("z.rs", 1), file("z.rs")),
        ];
        let vector = vec![
            vhit("b.rs", 1, 0.60),
            vhit("b.rs", 40, 0.60),
            vhit("z.rs", 1, 0.45),
            vhit("a.rs", 1, 0.40),
            vhit("y.rs", 1, 0.30),
        ];
        let fused = fuse_lists(keyword, vector, &cfg);
        let files: Vec<&str> = fused.iter().filter(|f| f.score > 0.0).map(|f| f.stored.path.as_str()).collect();
        let mut order: Vec<&str> = Vec::new();
        for f in files {
            if !order.contains(&f) {
                order.push(f);
            }
        }
        assert_eq!(order, ["b.rs", "a.rs", "z.rs", "y.rs"], "{order:?}");
        // b: 9/10 × e^(0.75/0.25 × (0.60 − 0.30)); the page is scaled so the best file scores 1.
        assert!((fused[0].score - 0.9 * (3.0f32 * 0.3).exp()).abs() < 1e-4, "{}", fused[0].score);
        assert!((best_score(&cfg, &fused) - fused[0].score).abs() < 1e-6);
        // a: 10/10 × e^(3 × 0.10); z: 1/10 × e^(3 × 0.15); y: the weakest keyword share, no boost.
        let score_of = |p: &str| fused.iter().find(|f| f.stored.path == p).map(|f| f.score).unwrap_or(-1.0);
        assert!((score_of("a.rs") - (3.0f32 * 0.1).exp()).abs() < 1e-4);
        assert!((score_of("y.rs") - 0.1).abs() < 1e-4, "{}", score_of("y.rs"));

        // Without keyword candidates (no query word is in the repo) closeness alone ranks.
        let fused = fuse_lists(Vec::new(), vec![vhit("d.rs", 1, 0.7), vhit("c.rs", 1, 0.5)], &cfg);
        assert_eq!(fused[0].stored.path, "d.rs");
    }

    #[test]
    fn the_first_ten_hits_name_ten_files() {
        // Twelve files, each with two chunks both retrievers find: a file's second chunk
        // waits until ten files have shown their best.
        let mut keyword = Vec::new();
        let mut vector = Vec::new();
        for i in 0..12u32 {
            let p = format!("f{i:02}.rs");
            let score = 20.0 - i as f32;
            keyword.push((score, stored(&p, 1), file(&p)));
            keyword.push((score * 0.99, stored(&p, 50), file(&p)));
            vector.push(vhit(&p, 1, 0.5));
        }
        for cfg in [SearchConfig::default(), rrf(), SearchConfig { fusion: Fusion::Weighted, ..rrf() }] {
            let fused = fuse_lists(keyword.clone(), vector.clone(), &cfg);
            let first: std::collections::HashSet<&str> =
                fused.iter().take(10).map(|f| f.stored.path.as_str()).collect();
            assert_eq!(
                first.len(),
                10,
                "{:?}: {:?}",
                cfg.fusion,
                fused.iter().take(10).map(|f| &f.stored.path).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn confidence_keeps_lexical_and_lets_semantics_raise_it() {
        let cfg = SearchConfig::default();
        assert_eq!(combined_confidence(0.9, 0.1, &cfg), 0.9);
        assert_eq!(combined_confidence(0.0, 0.7, &cfg), 0.75);
        assert_eq!(combined_confidence(0.0, 0.1, &cfg), 0.0);
        assert_eq!(combined_confidence(0.4, f32::MIN, &cfg), 0.4);
        assert_eq!(combined_confidence(0.5, 0.6, &cfg), 0.725);
    }
}
