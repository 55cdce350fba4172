//! Search: BM25 over chunk text and paths with the code-aware analyzer, then
//! ranking a developer would expect (source before lockfiles and changelogs,
//! several files before many chunks of one), snippets from disk, a
//! confidence for the waterfall gate, and deterministic cursors.
//!
//! How confidence is computed is documented in `docs/SEARCH.md`.

pub(crate) mod collect;
pub mod file_bm25;
pub mod file_rank;
pub mod filter_note;
pub mod history;
pub mod hybrid;
pub mod import_prior;
pub mod query;
pub mod snippet;
pub mod symbol_rank;
pub mod syntax;
pub mod types;

use crate::config::SearchConfig;
use crate::engine::analysis;
use crate::engine::cancel::CancelToken;
use crate::engine::index::files::FileClass;
use crate::engine::index::schema::{self, Fields};
use crate::engine::index::types::{IndexState, SCHEMA_VERSION};
use crate::engine::index::{extract, sources};
use crate::engine::repos::RepoRef;
use crate::error::{Error, Result};
use file_bm25::{FileScores, FileTable};
use file_rank::{FileSignals, PooledChunk, RankedChunk};
use history::CommitHistory;
use import_prior::ImportPrior;
use query::QueryPlan;
use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};
use symbol_rank::{DefinitionBoosts, RankingFlags};
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, RegexQuery, TermQuery};
use tantivy::schema::{IndexRecordOption, Value};
use tantivy::{DocAddress, IndexReader, ReloadPolicy, Searcher, TantivyDocument, Term};
use types::{ContextLine, RetrievalInfo, SearchHit, SearchRequest, SearchResponse, SearchTiming, BM25};

/// Chunks considered for ranking; pages beyond this many hits are not served.
pub const CANDIDATE_POOL: usize = 1000;
/// How long a searcher trusts the commit history it read before looking at `HEAD` again.
const HISTORY_RECHECK: std::time::Duration = std::time::Duration::from_secs(2);
/// Weight of a path match relative to a body match.
const PATH_BOOST: f32 = 1.0;
/// Queries up to this many terms get the all-words-in-the-path clause.
const MAX_PATH_CONJUNCTION_TERMS: usize = 4;

/// The symbol store as last opened: keyed by (index generation, store file inode); `None` when
/// there is no usable store.
type CachedSymbols = ((u64, u64), Option<crate::engine::code::store::SymbolReader>);

/// The import prior table as last read, keyed by the file's identity (inode, size, mtime).
type CachedImports = ((u64, u64, u64), Arc<ImportPrior>);

/// An open, reloadable reader over one repo's index.
pub struct RepoSearcher {
    reader: IndexReader,
    fields: Fields,
    /// Hash of the `meta.json` last loaded, and the generation it carried.
    seen: Mutex<(u64, u64)>,
    /// Set until the first search: a searcher that was just opened needs no reload check.
    just_opened: AtomicBool,
    index_dir: std::path::PathBuf,
    /// The symbol store, opened on first need and reopened when the index generation or the
    /// store file (a rebuilt store is a new file) changes.
    symbols: Mutex<Option<CachedSymbols>>,
    /// Importers per file ([`import_prior`]), reread when the table file changes.
    imports: Mutex<Option<CachedImports>>,
    /// Which file each document is ([`file_bm25`]), for the searcher's segments.
    files: Mutex<Option<Arc<FileTable>>>,
    /// The commit history as last read ([`history`], `[search] history`), and when `HEAD` was
    /// last looked at.
    history: Mutex<Option<(Instant, Option<Arc<CommitHistory>>)>>,
}

impl RepoSearcher {
    /// Opens the repo's index; [`Error::NotIndexed`] if there is none yet.
    pub fn open(repo: &RepoRef) -> Result<Self> {
        let dir = repo.index_dir();
        // Read before the reader opens, so a commit landing in between is seen as new later.
        let (hash, generation) = meta_state(&dir);
        if generation == 0 {
            if let Some(message) = unreadable_meta(&dir) {
                return Err(Error::Index { path: dir, message });
            }
            return Err(Error::NotIndexed { path: repo.root.clone() });
        }
        // Tantivy panics on some damage (a segment file shorter than its footer).
        let (reader, fields) = crate::engine::index::damage::guarded(&dir, || {
            let (index, fields) = schema::open(&dir)?;
            let reader = index
                .reader_builder()
                .reload_policy(ReloadPolicy::Manual)
                .try_into()
                .map_err(|e: tantivy::TantivyError| Error::Index { path: dir.clone(), message: e.to_string() })?;
            Ok((reader, fields))
        })?;
        Ok(RepoSearcher {
            reader,
            fields,
            seen: Mutex::new((hash, generation)),
            just_opened: AtomicBool::new(true),
            index_dir: dir,
            symbols: Mutex::new(None),
            imports: Mutex::new(None),
            files: Mutex::new(None),
            history: Mutex::new(None),
        })
    }

    /// Picks up new commits; returns the searcher and its generation. Cheap when nothing
    /// changed: one small read and hash of `meta.json` (mtimes are too coarse: two commits can
    /// share one). The first call after opening skips even that: the reader is microseconds old.
    fn searcher(&self) -> (Searcher, u64) {
        if self.just_opened.swap(false, Ordering::AcqRel) {
            if let Ok(seen) = self.seen.lock() {
                return (self.reader.searcher(), seen.1);
            }
        }
        let (hash, generation) = meta_state(&self.index_dir);
        if let Ok(mut seen) = self.seen.lock() {
            if seen.0 != hash {
                let _ = self.reader.reload();
                *seen = (hash, generation);
            }
            return (self.reader.searcher(), seen.1);
        }
        (self.reader.searcher(), generation)
    }

    /// Current generation.
    pub fn generation(&self) -> u64 {
        self.searcher().1
    }

    /// Where the symbols the query names are defined (empty when none, when the store is
    /// missing or stale, or when symbol ranking is off). [`Error::Cancelled`] once the thread's
    /// ambient token trips: looked at before the store is opened and between the names looked up.
    fn definition_boosts(
        &self,
        searcher: &Searcher,
        repo: &RepoRef,
        generation: u64,
        query: &str,
    ) -> Result<DefinitionBoosts> {
        // Most plain-language queries name no symbol: then the store is not even opened.
        let names = symbol_rank::candidate_names(query);
        // A name no indexed text contains is not defined anywhere: skip the store (opening
        // SQLite costs a cold process about a millisecond).
        let names: Vec<(String, bool)> = names.into_iter().filter(|(n, _)| self.may_be_defined(searcher, n)).collect();
        if names.is_empty() {
            return Ok(DefinitionBoosts::default());
        }
        let cancel = CancelToken::current();
        cancel.check()?;
        let Ok(mut cache) = self.symbols.lock() else { return Ok(DefinitionBoosts::default()) };
        let key = (generation, file_identity(&crate::engine::code::store::db_path(repo)));
        if cache.as_ref().is_none_or(|(k, _)| *k != key) {
            let reader = crate::engine::code::store::SymbolReader::open(repo)
                .ok()
                .flatten()
                .filter(|r| r.ensure_current(&repo.root).is_ok());
            *cache = Some((key, reader));
        }
        match cache.as_ref().and_then(|(_, r)| r.as_ref()) {
            Some(reader) => DefinitionBoosts::lookup_until(reader, &names, query.trim(), &cancel),
            None => Ok(DefinitionBoosts::default()),
        }
    }

    /// Whether some chunk holds `name` (a normalized symbol name) as a term: whole, as the
    /// analyzer writes multi-part identifiers, or analyzed, as it writes one-part names. Long
    /// names are always looked up: their written form (separators included) may have been too
    /// long to be a term at all.
    fn may_be_defined(&self, searcher: &tantivy::Searcher, name: &str) -> bool {
        if name.len() > analysis::MAX_WORD_BYTES / 2 {
            return true;
        }
        let present =
            |t: &str| searcher.doc_freq(&Term::from_field_text(self.fields.body, t)).map(|n| n > 0).unwrap_or(true);
        present(name) || analysis::terms(name).iter().any(|t| present(t))
    }

    /// The repo's import prior table (empty when there is none), reread only when the file
    /// changed: one `stat` per search. It lives in the repo's state directory, beside the
    /// index generations (the index's own parent is a generation directory).
    fn import_prior(&self, state_dir: &Path) -> Arc<ImportPrior> {
        let path = import_prior::path(state_dir);
        let key = file_stamp(&path);
        let Ok(mut cache) = self.imports.lock() else { return Arc::default() };
        if let Some((k, table)) = cache.as_ref() {
            if *k == key {
                return table.clone();
            }
        }
        let table = Arc::new(ImportPrior::load(&path));
        *cache = Some((key, table.clone()));
        table
    }

    /// The repository's commit history ([`history`]): read again when `HEAD` moved, which is
    /// looked at (in the git directory's files, or one `git rev-parse`) at most every
    /// [`HISTORY_RECHECK`].
    fn commit_history(&self, repo: &RepoRef) -> Option<Arc<CommitHistory>> {
        let Ok(mut cache) = self.history.lock() else { return None };
        if let Some((checked, h)) = cache.as_ref() {
            if checked.elapsed() < HISTORY_RECHECK {
                return h.clone();
            }
        }
        let h = CommitHistory::load(&repo.root, &repo.state_dir).map(Arc::new);
        *cache = Some((Instant::now(), h.clone()));
        h
    }

    /// Runs a search.
    pub fn search(
        &self,
        repo: &RepoRef,
        req: &SearchRequest,
        cfg: &SearchConfig,
        state: IndexState,
    ) -> Result<SearchResponse> {
        self.search_with(repo, req, cfg, state, RankingFlags::from_config(cfg, false))
    }

    /// Runs a search with explicit symbol/AST ranking flags (the chat waterfall uses its own).
    /// Ends with [`Error::Cancelled`] once the thread's ambient token trips (its client left):
    /// looked at between the candidate pool, the file ranking and each file read for snippets.
    pub fn search_with(
        &self,
        repo: &RepoRef,
        req: &SearchRequest,
        cfg: &SearchConfig,
        state: IndexState,
        flags: RankingFlags,
    ) -> Result<SearchResponse> {
        let t0 = Instant::now();
        let cancel = CancelToken::current();
        let window = PageWindow::of(req, cfg)?;
        let (searcher, generation) = self.searcher();
        let plan = QueryPlan::of(&req.query);
        let terms = plan.term_list();
        let mut resp = empty_response(repo, req, state, generation);
        resp.note = window.moved_note(generation).or_else(|| syntax::note(&req.query));
        if plan.is_empty() {
            if !req.query.trim().is_empty() {
                resp.note = Some(no_terms_note(&req.query));
            }
            return Ok(resp);
        }
        let priors = Priors::for_query(&req.query, cfg.demote_noise_files);
        let boosts = if flags.symbols {
            self.definition_boosts(&searcher, repo, generation, &req.query)?
        } else {
            DefinitionBoosts::default()
        };
        let (pool, total) = self.loading_tables(&searcher, &repo.state_dir, || {
            self.bm25_pool(&searcher, &plan, req, flags, &priors, &boosts)
        })?;
        let t_search = t0.elapsed();
        cancel.check()?;

        let mut ranked = self.rank_files(&searcher, (&plan, &priors), pool, cfg, repo, req.history_before);
        if let Some(name) = named_file(&req.query) {
            self.named_file_first(&searcher, &mut ranked, &name);
        }
        cancel.check()?;
        resp.total_hits = total;
        let t_rank = t0.elapsed();

        let (offset, limit, query_hash) = (window.offset, window.limit, window.query_hash);
        let page: Vec<(f32, Stored)> = ranked
            .iter()
            .skip(offset)
            .take(limit)
            .filter_map(|c| {
                let d: TantivyDocument = searcher.doc(c.addr).ok()?;
                Some((c.score, Stored::from_doc(&d, &self.fields)))
            })
            .collect();
        if offset + page.len() < ranked.len() {
            resp.next_cursor = encode_cursor(offset + page.len(), query_hash, generation);
        }
        let (hits, matched_sets) = self.hits(repo, generation, &terms, &page, &cancel)?;
        resp.results = hits;
        resp.retrieval = RetrievalInfo::keyword_only(resp.results.len());
        let first_page = self.first_page_matched(repo, &terms, (offset, limit), matched_sets, &cancel, |n| {
            ranked
                .iter()
                .take(n)
                .filter_map(|c| {
                    let d: TantivyDocument = searcher.doc(c.addr).ok()?;
                    Some((c.score, Stored::from_doc(&d, &self.fields)))
                })
                .collect()
        })?;
        resp.confidence = confidence(&searcher, self.fields.body, &terms, &first_page);
        resp.timing_ms = phase_timing(t_search, t_rank, t0.elapsed());
        Ok(resp)
    }

    /// Puts the file a query names (`bar.py`, `src/auth/session.rs`) first (hybrid search does
    /// the same over its fusion): its words also fill
    /// `progress_bar.py` and `foobar.py`, which BM25 may rank above it. Looks among the first
    /// [`NAMED_FILE_SCAN`] files of the ranking, reading one stored path per file.
    fn named_file_first(&self, searcher: &Searcher, ranked: &mut Vec<RankedChunk>, name: &str) {
        let named = |c: &RankedChunk| {
            searcher
                .doc::<TantivyDocument>(c.addr)
                .is_ok_and(|d| is_named(&Stored::from_doc(&d, &self.fields).path, name))
        };
        lift_named_file(ranked, |c| c.file, |c| &mut c.score, named);
    }

    /// The pool ranked by file ([`file_rank`]), with whole-file BM25 ([`file_bm25`]).
    fn rank_files(
        &self,
        searcher: &Searcher,
        (plan, priors): (&QueryPlan, &Priors),
        pool: Vec<PooledChunk>,
        cfg: &SearchConfig,
        repo: &RepoRef,
        history_before: Option<i64>,
    ) -> Vec<RankedChunk> {
        let imports = self.import_prior(&repo.state_dir);
        let history = cfg
            .history
            .then(|| self.commit_history(repo))
            .flatten()
            .map(|h| h.file_shares(&plan.terms, history_before));
        let table = self.file_table(searcher);
        // Joined words count as the chunk query counts them.
        let mut whole_terms = plan.terms.clone();
        whole_terms.extend(plan.joined.iter().map(|j| (j.clone(), query::JOINED_WEIGHT)));
        let whole = table.as_ref().map(|t| {
            FileScores::compute(t, searcher, self.fields.body, self.fields.path_text, &whole_terms, &|c| {
                priors.factor(c)
            })
        });
        let signals = FileSignals {
            searcher,
            body: self.fields.body,
            terms: &plan.terms,
            imports: &imports,
            max_chunks_per_file: cfg.max_chunks_per_file.max(1) as usize,
            whole_files: table.as_deref().zip(whole.as_ref()),
            history: history.as_ref(),
        };
        file_rank::rank(pool, &signals)
    }

    /// Runs `search` (the BM25 pool); on the first search of these segments (every one-shot
    /// `docdex search`) the file table and the import prior load on the other core meanwhile
    /// (about 2 ms of 9 on a 146,000-chunk index; docs/PERFORMANCE.md).
    fn loading_tables<T>(&self, searcher: &Searcher, state_dir: &Path, search: impl FnOnce() -> T) -> T {
        if self.file_table_loaded(searcher) {
            return search();
        }
        std::thread::scope(|s| {
            // Without a thread (a process at its limit) the tables load when ranking needs them.
            let _ = std::thread::Builder::new().name("docdex-tables".into()).spawn_scoped(s, || {
                self.file_table(searcher);
                self.import_prior(state_dir);
            });
            search()
        })
    }

    /// Loads the file table of the current segments, tabulating it and keeping it on disk when
    /// none describes them: an index run ends with this, so the first search after it maps the
    /// kept table instead of tabulating every document (about 24M instructions on a
    /// 146,000-chunk index, more than the rest of a one-shot search; docs/PERFORMANCE.md).
    pub fn prepare_tables(&self) {
        let (searcher, _) = self.searcher();
        self.file_table(&searcher);
    }

    /// Reads the commit history for the current `HEAD` into memory and its cache file, ahead
    /// of the first search that ranks by it.
    pub fn prepare_history(&self, repo: &RepoRef) {
        self.commit_history(repo);
    }

    /// Whether the file table of `searcher`'s segments is in memory already.
    fn file_table_loaded(&self, searcher: &Searcher) -> bool {
        self.files.lock().is_ok_and(|t| t.as_ref().is_some_and(|t| t.is_for(searcher)))
    }

    /// The file table of `searcher`'s segments, loaded or built on first need after the index
    /// changed.
    fn file_table(&self, searcher: &Searcher) -> Option<Arc<FileTable>> {
        let mut cache = self.files.lock().ok()?;
        if let Some(t) = cache.as_ref().filter(|t| t.is_for(searcher)) {
            return Some(t.clone());
        }
        let table = Arc::new(FileTable::load_or_build(searcher, self.fields.body, &self.index_dir));
        *cache = Some(table.clone());
        Some(table)
    }

    /// The BM25 candidate pool for `terms` (filters applied), with file-class priors and
    /// definition boosts, before diversification; also the number of raw candidates.
    /// Plain top-k lets Tantivy prune with block-max WAND; priors apply to the pool after.
    /// [`Error::Cancelled`] once the thread's ambient token trips, looked at inside Tantivy's
    /// collection ([`collect::Cancellable`]).
    fn bm25_pool(
        &self,
        searcher: &Searcher,
        plan: &QueryPlan,
        req: &SearchRequest,
        flags: RankingFlags,
        priors: &Priors,
        boosts: &DefinitionBoosts,
    ) -> Result<(Vec<PooledChunk>, usize)> {
        let query = self.build_query(plan, req, flags.ast)?;
        let top = self.top_chunks(searcher, query)?;
        let total = top.len();
        Ok((with_priors(searcher, top, priors, boosts), total))
    }

    /// The [`CANDIDATE_POOL`] best chunks for `query`, best first. [`Error::Cancelled`] once the
    /// thread's ambient token trips during the collection (this runs on the searching thread).
    fn top_chunks(&self, searcher: &Searcher, query: Box<dyn Query>) -> Result<Vec<(f32, DocAddress)>> {
        let query = collect::Cancellable::new(query, &CancelToken::current());
        let top = searcher.search(&query, &TopDocs::with_limit(CANDIDATE_POOL).order_by_score());
        if query.stopped() {
            return Err(Error::Cancelled);
        }
        top.map_err(|e| Error::Index { path: self.index_dir.clone(), message: e.to_string() })
    }

    /// Search hits for a page of chunks (snippets cut from the files on disk), with the query
    /// terms each one matched (for confidence). Every hit is marked as a BM25 hit; hybrid
    /// search overwrites that. [`Error::Cancelled`] once `cancel` trips (between files read).
    fn hits(
        &self,
        repo: &RepoRef,
        generation: u64,
        terms: &[String],
        page: &[(f32, Stored)],
        cancel: &CancelToken,
    ) -> Result<(Vec<SearchHit>, Vec<HashSet<String>>)> {
        let commit_time = meta_mtime(&self.index_dir);
        let qset: HashSet<String> = terms.iter().cloned().collect();
        let cut = cut_snippets(repo, commit_time, &qset, page, cancel)?;
        let missing = missing_sources(repo, page);
        let mut matched_sets = Vec::with_capacity(page.len());
        let mut results = Vec::with_capacity(page.len());
        for ((score, s), (snip, context, fresh, pages)) in page.iter().zip(cut) {
            matched_sets.push(snip.matched);
            let source_missing = sources::split(&s.path).is_some_and(|(name, _)| missing.iter().any(|m| *m == name));
            results.push(SearchHit {
                chunk_id: format!("{}:{}-{}", s.path, s.line_start, s.line_end),
                path: s.path.clone(),
                lang: s.lang.clone(),
                line_start: s.line_start,
                line_end: s.line_end,
                page_start: pages.map(|p| p.0),
                page_end: pages.map(|p| p.1),
                source: sources::split(&s.path).map(|(name, _)| name.to_string()),
                source_missing,
                score: round3(*score),
                snippet_line_start: snip.line_start,
                snippet: snip.text,
                highlights: snip.highlights,
                generation,
                stale: fresh != Freshness::Current,
                // A missing source's hits say so on their own (`source_missing`).
                gone: fresh == Freshness::Gone && !source_missing,
                context,
                retrievers: vec![BM25.to_string()],
            });
        }
        Ok((results, matched_sets))
    }

    /// The terms matched by the hits confidence reads: the best hit and the top five of the
    /// query's first page, whichever page was asked (a cursor's page reported its own
    /// confidence, so one query's confidence changed from page to page). On the first page
    /// those are the page's own (`page_matched`); a later page reads them for the first
    /// [`CONFIDENCE_TOP`] hits of the ranking, as `top(n)` gives them.
    fn first_page_matched(
        &self,
        repo: &RepoRef,
        terms: &[String],
        (offset, limit): (usize, usize),
        page_matched: Vec<HashSet<String>>,
        cancel: &CancelToken,
        top: impl FnOnce(usize) -> Vec<(f32, Stored)>,
    ) -> Result<Vec<HashSet<String>>> {
        if offset == 0 {
            return Ok(page_matched);
        }
        let rows = top(limit.min(CONFIDENCE_TOP));
        let qset: HashSet<String> = terms.iter().cloned().collect();
        let cut = cut_snippets(repo, meta_mtime(&self.index_dir), &qset, &rows, cancel)?;
        Ok(cut.into_iter().map(|(snip, ..)| snip.matched).collect())
    }

    fn build_query(&self, plan: &QueryPlan, req: &SearchRequest, defs: bool) -> Result<Box<dyn Query>> {
        let f = &self.fields;
        let mut should: Vec<(Occur, Box<dyn Query>)> = Vec::with_capacity(plan.terms.len() * 3 + plan.joined.len() * 2);
        let term = |field, t: &str, record| -> Box<dyn Query> {
            Box::new(TermQuery::new(Term::from_field_text(field, t), record))
        };
        let boosted = |q: Box<dyn Query>, w: f32| -> Box<dyn Query> {
            if (w - 1.0).abs() < f32::EPSILON {
                q
            } else {
                Box::new(BoostQuery::new(q, w))
            }
        };
        for (t, w) in &plan.terms {
            if defs {
                let q = term(f.defs, t, IndexRecordOption::WithFreqs);
                should.push((Occur::Should, boosted(q, w * symbol_rank::DEFS_BOOST)));
            }
            should.push((Occur::Should, boosted(term(f.body, t, IndexRecordOption::WithFreqs), *w)));
            should.push((Occur::Should, boosted(term(f.path_text, t, IndexRecordOption::Basic), w * PATH_BOOST)));
        }
        // Adjacent words joined, as one identifier would be indexed whole.
        for j in &plan.joined {
            should.push((Occur::Should, boosted(term(f.body, j, IndexRecordOption::WithFreqs), query::JOINED_WEIGHT)));
            if defs {
                let q = term(f.defs, j, IndexRecordOption::WithFreqs);
                should.push((Occur::Should, boosted(q, query::JOINED_WEIGHT * symbol_rank::DEFS_BOOST)));
            }
        }
        // A short query whose every word is in a file's path names that file: score it again.
        let terms = &plan.terms;
        if (2..=MAX_PATH_CONJUNCTION_TERMS).contains(&terms.len()) {
            let all: Vec<(Occur, Box<dyn Query>)> =
                terms.iter().map(|(t, _)| (Occur::Must, term(f.path_text, t, IndexRecordOption::Basic))).collect();
            should.push((Occur::Should, Box::new(BoostQuery::new(Box::new(BooleanQuery::new(all)), PATH_BOOST))));
        }
        let text_query: Box<dyn Query> = Box::new(BooleanQuery::new(should));
        let mut must: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, text_query)];
        if let Some(lang) = req.lang.as_deref().filter(|l| !l.is_empty()) {
            must.push((
                Occur::Must,
                Box::new(TermQuery::new(
                    Term::from_field_text(f.lang, &lang.to_ascii_lowercase()),
                    IndexRecordOption::Basic,
                )),
            ));
        }
        if let Some(prefix) = req.path_prefix.as_deref().map(normalize_prefix).filter(|p| !p.is_empty()) {
            // Whole components, as `repos::under_prefix`: `src` is the file or the folder.
            let pattern = if prefix.ends_with('/') {
                format!("{}.*", regex_escape(&prefix))
            } else {
                format!("{}(/.*)?", regex_escape(&prefix))
            };
            let q = RegexQuery::from_pattern(&pattern, f.path)
                .map_err(|e| Error::BadRequest(format!("bad --path prefix {prefix:?}: {e}")))?;
            must.push((Occur::Must, Box::new(q)));
        }
        Ok(if must.len() == 1 { must.remove(0).1 } else { Box::new(BooleanQuery::new(must)) })
    }
}

/// Stored fields of a hit.
#[derive(Debug, Clone)]
struct Stored {
    path: String,
    lang: String,
    line_start: u32,
    line_end: u32,
    context: Vec<u32>,
}

impl Stored {
    fn from_doc(d: &TantivyDocument, f: &Fields) -> Stored {
        let text = |field| d.get_first(field).and_then(|v| v.as_str()).unwrap_or("").to_string();
        let num = |field| d.get_first(field).and_then(|v| v.as_u64()).unwrap_or(0) as u32;
        Stored {
            path: text(f.path),
            lang: text(f.lang),
            line_start: num(f.line_start),
            line_end: num(f.line_end),
            context: d.get_all(f.context).filter_map(|v| v.as_u64()).map(|l| l as u32).collect(),
        }
    }
}

/// The signature lines a chunk is a piece of, read from the file.
fn context_lines(text: &str, lines: &[u32]) -> Vec<ContextLine> {
    let mut want: Vec<u32> = lines.to_vec();
    want.sort_unstable();
    want.dedup();
    let mut out = Vec::with_capacity(want.len());
    for n in want.into_iter().filter(|n| *n >= 1) {
        if let Some(l) = from_line(text, n).lines().next() {
            out.push(ContextLine { line: n, text: l.trim().chars().take(200).collect() });
        }
    }
    out
}

/// Per-class multipliers: demote noise unless the query asks for it.
#[derive(Debug, Clone, Copy)]
struct Priors([f32; 9]);

impl Priors {
    fn for_query(query: &str, demote: bool) -> Priors {
        if !demote {
            return Priors([1.0; 9]);
        }
        let q = query.to_ascii_lowercase();
        let asks = |words: &[&str]| words.iter().any(|w| q.split(|c: char| !c.is_alphanumeric()).any(|t| t == *w));
        // Order: source, test, docs, config, changelog, lockfile, generated, test data,
        // examples. A described change lands in source: tests, docs and examples share its
        // words (a test of the fix, a guide to the feature) but are not where it is made, so
        // they are held well below (docs/SEARCH.md); a query that asks for them lifts them.
        let mut p = [1.0, 0.3, 0.2, 0.5, 0.2, 0.1, 0.3, 0.2, 0.4];
        if asks(&["test", "tests", "testing", "spec", "specs", "fixture", "fixtures"]) {
            p[FileClass::Test as usize] = 1.0;
            p[FileClass::TestData as usize] = 1.0;
        }
        if asks(&["doc", "docs", "documentation", "readme", "guide", "tutorial", "manual"]) {
            p[FileClass::Docs as usize] = 1.0;
        }
        if asks(&["config", "configuration", "settings", "yaml", "json", "toml"]) {
            p[FileClass::Config as usize] = 1.0;
        }
        if asks(&["changelog", "changes", "release", "releases", "history", "news"]) {
            p[FileClass::Changelog as usize] = 1.0;
        }
        if asks(&["lock", "lockfile", "lockfiles", "pinned", "version", "versions"]) {
            p[FileClass::Lockfile as usize] = 1.0;
        }
        if asks(&["example", "examples", "demo", "sample", "samples", "bench", "benchmark", "benchmarks"]) {
            p[FileClass::Example as usize] = 1.0;
        }
        if asks(&["generated", "vendor", "vendored", "minified"]) {
            p[FileClass::Generated as usize] = 1.0;
        }
        Priors(p)
    }

    fn factor(&self, class: FileClass) -> f32 {
        self.0[class as usize]
    }
}

/// Multiplies each pooled hit by its file-class prior and, when the query names a symbol, the
/// boost of a definition it holds; attaches its file id (fast fields, read once per segment;
/// the line columns only for hits in files with a definition).
fn with_priors(
    searcher: &Searcher,
    top: Vec<(f32, DocAddress)>,
    priors: &Priors,
    boosts: &DefinitionBoosts,
) -> Vec<PooledChunk> {
    type Col = Option<tantivy::columnar::Column<u64>>;
    // Per segment ordinal, opened on first need.
    let segments = searcher.segment_readers().len();
    let mut columns: Vec<Option<(Col, Col)>> = (0..segments).map(|_| None).collect();
    let mut lines: Vec<Option<(Col, Col)>> = (0..segments).map(|_| None).collect();
    let mut scored: Vec<(f32, u64, DocAddress, bool)> = top
        .into_iter()
        .map(|(score, addr)| {
            let (class, file) = columns[addr.segment_ord as usize].get_or_insert_with(|| {
                let ff = searcher.segment_reader(addr.segment_ord).fast_fields();
                (ff.u64("class").ok(), ff.u64("file_id").ok())
            });
            let class = class.as_ref().and_then(|c| c.first(addr.doc_id)).unwrap_or(0);
            let file = file.as_ref().and_then(|c| c.first(addr.doc_id)).unwrap_or(0);
            let score = score * priors.factor(FileClass::from_u64(class));
            if !boosts.has_file(file) {
                return (score, file, addr, false);
            }
            let (ls, le) = lines[addr.segment_ord as usize].get_or_insert_with(|| {
                let ff = searcher.segment_reader(addr.segment_ord).fast_fields();
                (ff.u64("line_start").ok(), ff.u64("line_end").ok())
            });
            let a = ls.as_ref().and_then(|c| c.first(addr.doc_id)).unwrap_or(0) as u32;
            let b = le.as_ref().and_then(|c| c.first(addr.doc_id)).unwrap_or(0) as u32;
            let (factor, pinned) = boosts.factor(file, a, b);
            (score * factor, file, addr, pinned)
        })
        .collect();
    // Definitions the whole query names go above every other hit, in their own order.
    if scored.iter().any(|c| c.3) {
        let lift = scored.iter().map(|c| c.0).fold(0.0, f32::max);
        for c in scored.iter_mut().filter(|c| c.3) {
            c.0 += lift;
        }
    }
    scored.into_iter().map(|(score, file, addr, pinned)| PooledChunk { score, file, addr, pinned }).collect()
}

/// Files of the ranking looked at for the one a query names by its file name.
const NAMED_FILE_SCAN: usize = 50;

/// The file a query names, lowercased: one word that is a path (`src/auth/session.rs`) or a
/// file name with an extension the index knows (`bar.py`, `package.json`, `Makefile`), quotes
/// and a leading `./` dropped. `os.path.join` is not one (`join` is no file type).
pub(super) fn named_file(query: &str) -> Option<String> {
    let q = query.trim().trim_matches(|c| matches!(c, '"' | '\'' | '`')).trim_start_matches("./");
    if q.is_empty() || q.chars().any(char::is_whitespace) || q.len() > 512 {
        return None;
    }
    let name = q.rsplit('/').next().filter(|n| !n.is_empty())?;
    let known =
        crate::engine::index::files::language(Path::new(name)) != "text" || name.to_ascii_lowercase().ends_with(".txt");
    (known && (q.contains('/') || name.contains('.') || name.chars().next().is_some_and(char::is_uppercase)))
        .then(|| q.to_ascii_lowercase())
}

/// The one reordering behind a file-name query, for BM25's ranked chunks and hybrid's fused
/// ones alike: the first file among the first [`NAMED_FILE_SCAN`] for which `named` holds
/// (asked once per file, of its best chunk) goes on top, every chunk of it lifted above the
/// former first hit, in the file's own order.
pub(super) fn lift_named_file<T>(
    ranked: &mut Vec<T>,
    file_of: impl Fn(&T) -> u64,
    score: impl Fn(&mut T) -> &mut f32,
    named: impl Fn(&T) -> bool,
) {
    let mut seen: Vec<u64> = Vec::new();
    let mut found = None;
    for c in ranked.iter() {
        let file = file_of(c);
        if seen.contains(&file) {
            continue;
        }
        if seen.len() >= NAMED_FILE_SCAN {
            break;
        }
        seen.push(file);
        if named(c) {
            found = Some(file);
            break;
        }
    }
    let Some(file) = found else { return };
    if seen.len() == 1 {
        return; // already first
    }
    let top = ranked.first_mut().map_or(0.0, |c| *score(c));
    let (mut first, rest): (Vec<T>, Vec<T>) = ranked.drain(..).partition(|c| file_of(c) == file);
    first.iter_mut().for_each(|c| *score(c) += top);
    first.extend(rest);
    *ranked = first;
}

/// Whether `path` is the file `name` (from [`named_file`]) names: the same path, or ending
/// in it at a directory boundary.
pub(super) fn is_named(path: &str, name: &str) -> bool {
    let path = path.to_ascii_lowercase();
    path == name || path.ends_with(&format!("/{name}"))
}

/// Most hits one page holds; a larger `limit` is cut to it (and says so, [`page_note`]).
pub const MAX_PAGE: usize = 200;

/// What a request's `limit` outside `1..=MAX_PAGE` was taken as, or `None` when it was in range.
pub(crate) fn page_note(limit: Option<usize>) -> Option<String> {
    match limit? {
        0 => Some("limit 0 was taken as 1: a page holds at least one hit".into()),
        n if n > MAX_PAGE => Some(format!(
            "limit {n} was cut to {MAX_PAGE}, the most one page holds; follow next_cursor (`--cursor` on the command line) for the rest"
        )),
        _ => None,
    }
}

/// Which slice of the ranking a request asks for: page size, offset from its cursor, the
/// request hash cursors are tied to, and the index generation the cursor's page was cut from.
pub(crate) struct PageWindow {
    pub limit: usize,
    pub offset: usize,
    pub query_hash: u64,
    pub cursor_generation: Option<u64>,
}

impl PageWindow {
    /// The window of `req`; a cursor from another query is refused. The hash is over the page
    /// size as served, so a first page asked without `limit` and its next page asked with the
    /// default spelled out (or `limit` 0 and 1, 500 and 200) share their cursors.
    pub(crate) fn of(req: &SearchRequest, cfg: &SearchConfig) -> Result<PageWindow> {
        let limit = req.limit.unwrap_or(cfg.default_limit as usize).clamp(1, MAX_PAGE);
        let query_hash = hash_request(req, limit);
        let (offset, cursor_generation) = match req.cursor.as_deref().filter(|c| !c.is_empty()) {
            Some(c) => decode_cursor(c, query_hash)?,
            None => (0, None),
        };
        Ok(PageWindow { limit, offset, query_hash, cursor_generation })
    }

    /// The note of a page cut from a newer index than its cursor's: the ranking the cursor
    /// counted into has changed, so the page may repeat hits of the pages before it or leave
    /// some out (a cursor holds only an offset, and the index keeps no old rankings).
    pub(crate) fn moved_note(&self, generation: u64) -> Option<String> {
        let given = self.cursor_generation.filter(|g| *g != generation)?;
        Some(format!(
            "the index changed since this cursor was given (generation {given}, now {generation}): this page is cut from the new ranking, so it may repeat hits of earlier pages or miss some; search again without the cursor for a consistent list"
        ))
    }
}

/// A response with no hits yet, for `req` against `generation` of `repo`'s index.
pub(crate) fn empty_response(
    repo: &RepoRef,
    req: &SearchRequest,
    state: IndexState,
    generation: u64,
) -> SearchResponse {
    SearchResponse {
        schema_version: SCHEMA_VERSION,
        project_id: repo.fingerprint.clone(),
        repo: repo.root.clone(),
        query: req.query.clone(),
        index_state: state,
        generation,
        confidence: 0.0,
        results: Vec::new(),
        total_hits: 0,
        next_cursor: String::new(),
        pii_redacted: false,
        timing_ms: SearchTiming::default(),
        retrieval: RetrievalInfo::keyword_only(0),
        libs: Vec::new(),
        note: None,
    }
}

/// The note of a query with no searchable word: what is not indexed, and where a short name is
/// found instead.
fn no_terms_note(query: &str) -> String {
    format!(
        "\"{}\" has no searchable words: single characters, common English words (the, how, does) and words over 48 characters (hashes, encoded blobs) are not indexed; use other words, or look a short name up with symbol search (`docdex symbols`, MCP docdex_symbols)",
        query.trim()
    )
}

/// How many of a query's first hits confidence reads (the best one, and these together).
const CONFIDENCE_TOP: usize = 5;

/// Share of the query's information (IDF-weighted terms) the results account for:
/// 0.7 x the best hit's share + 0.3 x the top five hits' combined share.
fn confidence(searcher: &Searcher, body: tantivy::schema::Field, terms: &[String], matched: &[HashSet<String>]) -> f64 {
    if matched.is_empty() {
        return 0.0;
    }
    let n = searcher.num_docs().max(1) as f64;
    let idf = |t: &String| {
        // Document frequencies still count deleted documents until segments merge: never let
        // one exceed the live count, or its weight turns negative (a confidence of -0.00).
        let df = (searcher.doc_freq(&Term::from_field_text(body, t)).unwrap_or(0) as f64).min(n);
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    };
    let weights: Vec<(&String, f64)> = terms.iter().map(|t| (t, idf(t))).collect();
    let total: f64 = weights.iter().map(|(_, w)| w).sum();
    if total <= 0.0 {
        return 0.0;
    }
    // A fold from +0.0: an empty f64 `sum()` is -0.0, which printed as a confidence of -0.00.
    let share = |set: &dyn Fn(&String) -> bool| {
        weights.iter().filter(|(t, _)| set(t)).fold(0.0, |acc: f64, (_, w)| acc + w) / total
    };
    let best = share(&|t| matched[0].contains(t));
    let top = &matched[..matched.len().min(CONFIDENCE_TOP)];
    let any = share(&|t| top.iter().any(|m| m.contains(t)));
    ((0.7 * best + 0.3 * any) * 1000.0).round() / 1000.0
}

/// The names of the registered sources whose folders are gone, when the page has hits from any.
fn missing_sources(repo: &RepoRef, page: &[(f32, Stored)]) -> Vec<String> {
    if !page.iter().any(|(_, s)| s.path.starts_with(sources::PREFIX)) {
        return Vec::new();
    }
    sources::load(&repo.state_dir).into_iter().filter(sources::is_missing).map(|s| s.name).collect()
}

/// One hit's snippet, context lines, staleness and page range (documents only).
type Cut = (snippet::SnippetOut, Vec<ContextLine>, Freshness, Option<(u32, u32)>);

/// Whether a hit's file is as indexed, changed since, or gone (unreadable: no snippet).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Freshness {
    #[default]
    Current,
    Changed,
    Gone,
}

/// A page's snippets, context lines and staleness, in page order. Hits are grouped by file
/// (first appearance order) and each file is read once, into one reused buffer, only as far as
/// the last line a hit on this page shows. A document's snippet is cut from the text extracted
/// when it was indexed (`index::extract`), and its hits carry their page range.
/// [`Error::Cancelled`] once `cancel` trips, looked at before each file is read.
fn cut_snippets(
    repo: &RepoRef,
    commit_time: Option<SystemTime>,
    qset: &HashSet<String>,
    page: &[(f32, Stored)],
    cancel: &CancelToken,
) -> Result<Vec<Cut>> {
    let srcs = match page.iter().any(|(_, s)| s.path.starts_with(sources::PREFIX)) {
        true => sources::load(&repo.state_dir),
        false => Vec::new(),
    };
    let mut groups: Vec<(&str, u32, Vec<usize>)> = Vec::new();
    for (i, (_, s)) in page.iter().enumerate() {
        let needed = s.context.iter().copied().fold(s.line_end, u32::max);
        match groups.iter_mut().find(|g| g.0 == s.path) {
            Some(g) => {
                g.1 = g.1.max(needed);
                g.2.push(i);
            }
            None => groups.push((s.path.as_str(), needed, vec![i])),
        }
    }
    let mut cut: Vec<Option<Cut>> = page.iter().map(|_| None).collect();
    let mut buf = Vec::new();
    for (path, up_to, members) in groups {
        // Each file is a read from disk (a cold one can take milliseconds): look between them.
        cancel.check()?;
        let mut pages = Vec::new();
        // Read beneath the repo's root or the registered source's the hit came from.
        let stale = match (extract::Format::of(path), sources::locate(repo, &srcs, path)) {
            // A document of a missing source: its text was kept when it was indexed (the file
            // is not read; the hit is stale, as gone).
            (Some(_), Err(_)) if sources::in_missing_source(&srcs, path) => {
                read_extracted(repo, path, Path::new(""), commit_time, &mut buf, &mut pages)
            }
            (_, Err(_)) => {
                buf.clear();
                None
            }
            (None, Ok((root, rel))) => read_file(&root, &rel, up_to, commit_time, &mut buf),
            (Some(_), Ok((root, rel))) => {
                read_extracted(repo, path, &root.join(rel), commit_time, &mut buf, &mut pages)
            }
        };
        let text = crate::engine::fsutil::decode_text(&buf);
        for i in members {
            let s = &page[i].1;
            let range = extract::page_of(&pages, s.line_start).zip(extract::page_of(&pages, s.line_end));
            cut[i] = Some(match stale {
                Some(stale) => {
                    let snip = snippet::snippet(&text, &s.path, s.line_start, s.line_end, qset);
                    let context = if s.context.is_empty() { Vec::new() } else { context_lines(&text, &s.context) };
                    let fresh = if stale { Freshness::Changed } else { Freshness::Current };
                    (snip, context, fresh, range)
                }
                None => (
                    snippet::SnippetOut { line_start: s.line_start, ..Default::default() },
                    Vec::new(),
                    Freshness::Gone,
                    range,
                ),
            });
        }
    }
    Ok(cut.into_iter().map(Option::unwrap_or_default).collect())
}

/// A document's extracted text into `buf` and its page starts into `pages`, with whether the
/// source file changed after the index commit; `None` when there is no extracted text.
fn read_extracted(
    repo: &RepoRef,
    rel: &str,
    source_file: &Path,
    commit_time: Option<SystemTime>,
    buf: &mut Vec<u8>,
    pages: &mut Vec<u32>,
) -> Option<bool> {
    buf.clear();
    let doc = extract::load(&repo.data_dir(), rel)?;
    let modified = std::fs::symlink_metadata(source_file).and_then(|m| m.modified()).ok();
    let stale = match (modified, commit_time) {
        (Some(m), Some(c)) => m > c,
        (None, _) => true, // gone since it was indexed
        _ => false,
    };
    buf.extend_from_slice(doc.text.as_bytes());
    *pages = doc.pages;
    Some(stale)
}

/// Reads the first `up_to` lines of a repo file (the whole file when shorter) into `buf`, and
/// says whether the file changed after the index commit; `None` (and `buf` empty) when it cannot
/// be read. Hits near the top of a large file do not pay for reading all of it.
fn read_file(root: &Path, rel: &str, up_to: u32, commit_time: Option<SystemTime>, buf: &mut Vec<u8>) -> Option<bool> {
    buf.clear();
    let mut file = crate::engine::fsutil::open_repo_file(root, rel).ok()?;
    let meta = file.metadata().ok()?;
    let stale = match (meta.modified().ok(), commit_time) {
        (Some(m), Some(c)) => m > c,
        _ => false,
    };
    if read_lines(&mut file, meta.len(), up_to, buf).is_err() {
        buf.clear();
        return None;
    }
    Some(stale)
}

/// Reads `reader` into `buf` up to and including the `lines`-th newline, at most 64 KiB per
/// read, and no further than `size` bytes (the file's length when opened: no extra read to find
/// the end).
fn read_lines(reader: &mut impl std::io::Read, size: u64, lines: u32, buf: &mut Vec<u8>) -> std::io::Result<()> {
    const STEP: usize = 64 * 1024;
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    buf.clear();
    let mut newlines = 0u32;
    let mut whole = false;
    while buf.len() < size {
        let start = buf.len();
        buf.resize(start + (size - start).min(STEP), 0);
        let n = loop {
            match reader.read(&mut buf[start..]) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        buf.truncate(start + n);
        if n == 0 {
            break; // the file shrank since it was opened
        }
        // UTF-16: a 0x0A byte is not always a newline there; the whole file is read.
        whole = whole || (start == 0 && (buf.starts_with(b"\xFF\xFE") || buf.starts_with(b"\xFE\xFF")));
        if whole {
            continue;
        }
        for at in memchr::memchr_iter(b'\n', &buf[start..]) {
            newlines += 1;
            if newlines >= lines {
                buf.truncate(start + at + 1);
                return Ok(());
            }
        }
    }
    Ok(())
}

/// The text from the start of 1-based line `line` to the end (empty past the last line),
/// found with a vectorized newline scan instead of walking the lines before it.
pub(crate) fn from_line(text: &str, line: u32) -> &str {
    if line <= 1 {
        return text;
    }
    match memchr::memchr_iter(b'\n', text.as_bytes()).nth(line as usize - 2) {
        Some(i) => &text[i + 1..],
        None => "",
    }
}

/// A file's identity and version (inode, size, mtime in ns; zeros when missing): a file
/// rewritten in place or replaced by rename reads as changed.
fn file_stamp(path: &Path) -> (u64, u64, u64) {
    let Ok(m) = std::fs::metadata(path) else { return (0, 0, 0) };
    let mtime = m
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    #[cfg(unix)]
    let inode = {
        use std::os::unix::fs::MetadataExt;
        m.ino()
    };
    #[cfg(not(unix))]
    let inode = 0;
    (inode, m.len(), mtime)
}

/// The inode of a file (0 when missing), to notice a file replaced under the same name.
fn file_identity(path: &Path) -> u64 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).map(|m| m.ino()).unwrap_or(0)
    }
    #[cfg(not(unix))]
    {
        std::fs::metadata(path)
            .and_then(|m| m.modified())
            .map(|t| t.elapsed().map(|e| e.as_nanos() as u64).unwrap_or(1))
            .unwrap_or(0)
    }
}

/// Hash and docdex generation of the index's `meta.json` ((0, 0) when unreadable).
fn meta_state(dir: &Path) -> (u64, u64) {
    #[derive(serde::Deserialize)]
    struct Meta {
        payload: Option<String>,
    }
    let Ok(bytes) = std::fs::read(dir.join("meta.json")) else { return (0, 0) };
    let generation = serde_json::from_slice::<Meta>(&bytes)
        .ok()
        .and_then(|m| m.payload)
        .and_then(|p| serde_json::from_str::<schema::CommitPayload>(&p).ok())
        .map(|p| p.generation)
        .unwrap_or(0);
    (xxhash_rust::xxh3::xxh3_64(&bytes), generation)
}

/// Why an index directory that reads as generation 0 is damaged rather than not built yet:
/// its `meta.json` is not Tantivy's JSON (truncated, overwritten), or it is gone while segment
/// files remain. Such an index was called "not indexed yet" while status said ready, and the
/// advice (`docdex index`) did not name the repair. A `meta.json` without a commit payload is a
/// first index still running: not damage.
fn unreadable_meta(dir: &Path) -> Option<String> {
    let meta = dir.join("meta.json");
    match std::fs::read(&meta) {
        Ok(bytes) => serde_json::from_slice::<serde_json::Value>(&bytes)
            .err()
            .map(|e| format!("{} cannot be read ({e})", meta.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => schema::holds_segments(dir)
            .then(|| format!("{} is missing while the index holds segment files", meta.display())),
        Err(_) => None,
    }
}

fn meta_mtime(dir: &Path) -> Option<SystemTime> {
    std::fs::metadata(dir.join("meta.json")).and_then(|m| m.modified()).ok()
}

fn normalize_prefix(p: &str) -> String {
    let p = p.trim();
    // A registered source's key (`//notes/`) keeps its slashes: its files' paths start with them.
    if p.starts_with(sources::PREFIX) {
        return p.replace('\\', "/");
    }
    p.trim_start_matches("./").trim_start_matches('/').replace('\\', "/")
}

fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2);
    for c in s.chars() {
        if "\\.+*?()|[]{}^$#&-~\"<>@".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The hash a request's cursors carry: its query, filters and page size as served (`limit`).
fn hash_request(req: &SearchRequest, limit: usize) -> u64 {
    let key = format!(
        "{}\u{0}{}\u{0}{}\u{0}{}",
        req.query,
        req.path_prefix.as_deref().unwrap_or(""),
        req.lang.as_deref().unwrap_or(""),
        limit
    );
    xxhash_rust::xxh3::xxh3_64(key.as_bytes())
}

/// `c1.<offset>.<request hash>.<generation>`, all hex.
fn encode_cursor(offset: usize, query_hash: u64, generation: u64) -> String {
    format!("c1.{offset:x}.{query_hash:016x}.{generation:x}")
}

/// The offset and index generation of a cursor of the request hashing to `query_hash` (a
/// cursor written before generations were part of it has none).
fn decode_cursor(c: &str, query_hash: u64) -> Result<(usize, Option<u64>)> {
    let bad = || {
        Error::BadRequest(format!("invalid cursor {c:?}: pass the next_cursor of a previous page of the same query"))
    };
    let hex = |p: &str| (!p.is_empty() && p.bytes().all(|b| b.is_ascii_hexdigit())).then_some(());
    let parts: Vec<&str> = c.split('.').collect();
    let (["c1", offset, hash] | ["c1", offset, hash, _]) = parts.as_slice() else { return Err(bad()) };
    if parts[1..].iter().any(|p| hex(p).is_none()) {
        return Err(bad());
    }
    let offset = usize::from_str_radix(offset, 16).map_err(|_| bad())?;
    let hash = u64::from_str_radix(hash, 16).map_err(|_| bad())?;
    let generation = parts.get(3).map(|g| u64::from_str_radix(g, 16)).transpose().map_err(|_| bad())?;
    if hash != query_hash {
        return Err(Error::BadRequest(
            "this cursor belongs to a different query, filters or page size (limit): pass the query, path, lang and limit of the page that gave it".into(),
        ));
    }
    Ok((offset, generation))
}

/// Timings of a search whose retrieval ended at `searched`, ranking at `ranked` and everything,
/// snippets last, at `total` (all measured from the start).
pub(crate) fn phase_timing(
    searched: std::time::Duration,
    ranked: std::time::Duration,
    total: std::time::Duration,
) -> SearchTiming {
    SearchTiming { search: ms(searched), rank: ms(ranked - searched), snippets: ms(total - ranked), total: ms(total) }
}

fn ms(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

fn round3(x: f32) -> f32 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_lines_stops_after_the_last_line_asked_for() {
        // Long enough to need several 64 KiB steps.
        let text: String = (1..=20_000).map(|i| format!("line {i}\n")).collect();
        for want in [1u32, 2, 9_000, 19_999, 20_000, 25_000] {
            let mut got = Vec::new();
            read_lines(&mut text.as_bytes(), text.len() as u64, want, &mut got).unwrap();
            let got = String::from_utf8(got).unwrap();
            let expect: String = text.lines().take(want as usize).map(|l| format!("{l}\n")).collect();
            assert_eq!(got, expect, "up to line {want}");
        }
        // No newline at the end: the last line still comes back whole.
        let mut got = b"left over".to_vec();
        read_lines(&mut "a\nb".as_bytes(), 3, 5, &mut got).unwrap();
        assert_eq!(got, b"a\nb");
    }

    #[test]
    fn from_line_agrees_with_lines() {
        for text in ["", "a", "a\n", "a\nb", "a\r\nb\r\n\nd", "\n\n\n", "é\nü\nx"] {
            let total = text.lines().count() as u32;
            for n in 0..=total + 2 {
                let want: Vec<&str> = text.lines().skip(n.saturating_sub(1) as usize).collect();
                let got: Vec<&str> = from_line(text, n).lines().collect();
                assert_eq!(got, want, "line {n} of {text:?}");
            }
        }
        let ctx = context_lines("fn a() {\n  x\n}\nfn b() {\n", &[4, 1, 4, 9]);
        let got: Vec<(u32, &str)> = ctx.iter().map(|c| (c.line, c.text.as_str())).collect();
        assert_eq!(got, [(1, "fn a() {"), (4, "fn b() {")]);
    }

    #[test]
    fn cursor_round_trip_and_mismatch() {
        let c = encode_cursor(20, 7, 3);
        assert_eq!(decode_cursor(&c, 7).unwrap(), (20, Some(3)));
        assert_eq!(decode_cursor("c1.14.0000000000000007", 7).unwrap(), (20, None), "a cursor without a generation");
        for forged in ["c1.+14.0000000000000007", "c1.14.0000000000000007.3.x", "c1.14.0000000000000007.zz", "c1.14"] {
            assert!(decode_cursor(forged, 7).is_err(), "{forged}");
        }
        assert!(decode_cursor(&c, 8).is_err());
        assert!(decode_cursor("garbage", 7).is_err());
    }

    #[test]
    fn priors_lift_when_asked() {
        let p = Priors::for_query("where is the changelog entry", true);
        assert_eq!(p.factor(FileClass::Changelog), 1.0);
        assert!(p.factor(FileClass::Lockfile) < 0.5);
        assert_eq!(Priors::for_query("x", false).factor(FileClass::Lockfile), 1.0);
    }
}
