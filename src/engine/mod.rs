//! The engine: [`Engine`], one cheap-to-clone handle over configuration, the
//! repo registry and every capability (indexing, search, code intelligence,
//! chat, memory, ...; each in its own module, adding its methods to `Engine`).
//! Every surface (the CLI, the TUI, the HTTP and MCP servers) calls these
//! methods with the types [`protocol`] gathers, and nothing below them, so a
//! capability is written once. The engine never imports terminal or server
//! crates.

pub mod analysis;
pub mod audit;
pub mod cancel;
pub mod check;
pub mod code;
pub mod context;
pub mod dag;
pub mod embed;
pub mod eval;
pub mod fault;
pub mod fresh;
pub mod fsutil;
pub mod git;
pub mod index;
pub mod libs;
pub mod limits;
pub mod llm;
pub mod memory;
pub mod overview;
pub mod privacy;
pub mod probe;
pub mod process;
pub mod profiles;
pub mod protocol;
pub mod repos;
pub mod search;
pub mod sources;
pub mod sqlite;
pub mod testrun;
pub mod watch;
pub mod waterfall;
pub mod web;

use crate::config::{home_dir, Config, Paths};
use crate::error::{Error, Result};
use cancel::CancelToken;
use index::status::StatusData;
use index::types::{FileContent, FileRequest, IndexState, IndexSummary, StatusResponse, SCHEMA_VERSION};
use index::{IndexSession, ProgressSink, Scope};
use repos::{Registry, RepoRecord, RepoRef};
use search::types::{BatchItem, SearchRequest, SearchResponse};
use search::RepoSearcher;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// How long a watcher's run may report nothing before `index` stops waiting for it (a run
/// writes its status at least every few seconds, a long commit included).
const WATCHER_SILENCE_MS: u64 = 120_000;

/// How long `index` waits for an idle watcher to take in a changed source list (it checks the
/// list every second) before reporting that it has not yet.
const SOURCES_PICKUP_MS: u64 = 5_000;

/// Whether a running watcher has indexed the source list as saved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SourcesTaken {
    /// It had before `index` asked: nothing changed.
    Already,
    /// It did while `index` waited.
    Now,
    /// Not (yet): its run goes on, it is gone, or it did not within [`SOURCES_PICKUP_MS`].
    NotYet,
}

/// Options for an index run.
#[derive(Debug, Clone, Default)]
pub struct IndexOptions {
    /// Throw the index away and build it again.
    pub rebuild: bool,
    /// Throw the embeddings away and embed every chunk again (after a model change).
    pub reembed: bool,
    /// Index text only, without the code pass (symbols, AST, imports, impact graph): the
    /// plain index benchmarks compare against. The next normal run catches the symbols up.
    pub skip_code: bool,
    /// The run was asked to repair: every run checks the index's files against their checksums
    /// and rebuilds a damaged index beside the live one; this only makes the summary say what
    /// the check found even when nothing was damaged.
    pub repair: bool,
}

/// An open searcher and the identity of the generation directory it reads.
type CachedSearcher = (Option<(u64, u64)>, Arc<RepoSearcher>);

/// The engine handle. Clones share state.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    config_path: PathBuf,
    warnings: Vec<String>,
    paths: Paths,
    registry: Registry,
    /// Open searchers per repo, with the identity of the generation directory they read.
    searchers: Mutex<HashMap<String, CachedSearcher>>,
    /// Loaded impact graphs per repo (reloaded when `impact_graph.json` changes).
    impact_graphs: code::impact::GraphCache,
    /// Runtime for the engine's own network I/O (LLM and embedding calls), created on first use.
    runtime: std::sync::OnceLock<tokio::runtime::Runtime>,
    /// The model provider and embedder health.
    llm: llm::api::LlmState,
    /// In-memory copies of repos' vectors for fast nearest-neighbour search.
    resident: embed::resident::ResidentVectors,
    /// Chat: context windows reported by the provider, measured token ratios.
    waterfall: waterfall::WaterfallState,
    /// The web tier: the shared browser, fetch permits, the HTTP client.
    web: web::WebState,
    /// Profile memory: the writer, idle readers, recall and hook caches, background evolutions.
    profiles: profiles::ProfileState,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The browser goes first, while the runtime its connection may use still exists.
        if let Ok(mut slot) = self.web.browser_slot() {
            slot.take();
        }
        // A runtime dropped inside an async context panics; the last engine handle may go there.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl Engine {
    /// Opens the engine at `DOCDEX_HOME` (default `~/.docdex`), creating config and state on first run.
    pub fn open() -> Result<Engine> {
        Self::open_at(&home_dir())
    }

    /// Opens the engine with an explicit home directory.
    pub fn open_at(home: &Path) -> Result<Engine> {
        let loaded = Config::load_or_create(home)?;
        Self::with_config(home, loaded.config, loaded.path, loaded.warnings)
    }

    /// Opens the engine with an already-built configuration (tests, benchmarks).
    pub fn with_config(home: &Path, mut config: Config, config_path: PathBuf, warnings: Vec<String>) -> Result<Engine> {
        let paths = Paths::new(home, &config.core.global_state_dir);
        paths.ensure_layout()?;
        config.index.own_dirs = paths.own_dirs();
        // No repository file is read past this engine's size limit, by any reader.
        fsutil::raise_read_ceiling(config.index.max_file_size_bytes);
        let registry = Registry::new(paths.clone());
        Ok(Engine {
            inner: Arc::new(Inner {
                config,
                config_path,
                warnings,
                paths,
                registry,
                searchers: Mutex::new(HashMap::new()),
                impact_graphs: Default::default(),
                runtime: std::sync::OnceLock::new(),
                llm: Default::default(),
                resident: Default::default(),
                waterfall: Default::default(),
                web: Default::default(),
                profiles: Default::default(),
            }),
        })
    }

    /// The effective configuration.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The config file path.
    pub fn config_path(&self) -> &Path {
        &self.inner.config_path
    }

    /// Warnings found while loading the configuration.
    pub fn config_warnings(&self) -> &[String] {
        &self.inner.warnings
    }

    /// Global locations.
    pub fn paths(&self) -> &Paths {
        &self.inner.paths
    }

    /// Runs async engine I/O (LLM and embedding calls) to completion on the engine's runtime.
    ///
    /// The engine API is synchronous so every surface calls it the same way; async surfaces
    /// (HTTP, MCP, TUI) call engine methods from `spawn_blocking`, where this is allowed.
    /// Must not be called from inside an async task.
    pub(crate) fn block_on<F: std::future::Future>(&self, fut: F) -> Result<F::Output> {
        Ok(self.runtime()?.block_on(fut))
    }

    /// The engine's I/O runtime, created on first use.
    pub(crate) fn runtime(&self) -> Result<&tokio::runtime::Runtime> {
        if let Some(rt) = self.inner.runtime.get() {
            return Ok(rt);
        }
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("docdex-io")
            .enable_all()
            .build()
            .map_err(|e| Error::io("starting", PathBuf::from("the engine's I/O runtime"), e))?;
        let _ = self.inner.runtime.set(rt);
        self.inner.runtime.get().ok_or_else(|| Error::Internal("the engine's I/O runtime did not start".into()))
    }

    /// Resolves a repository path (it must exist) to its identity and state locations.
    pub fn resolve_repo(&self, path: &Path) -> Result<RepoRef> {
        self.inner.registry.resolve(path)
    }

    /// The repository a command run in `dir` without naming one means: the git root, else
    /// the nearest registered repository above it, else `dir` ([`repos::discover_known_root`]).
    pub fn discover_repo(&self, dir: &Path) -> PathBuf {
        let registered = match self.inner.registry.list() {
            Ok(list) => list.into_iter().map(|r| r.path).collect(),
            Err(e) => {
                tracing::warn!("reading the repository registry: {e}");
                Vec::new()
            }
        };
        repos::discover_known_root(dir, &registered)
    }

    /// Refuses a repository no one should index or serve: `/`, the home directory itself (or
    /// a directory above it), docdex's own home, a system directory
    /// ([`repos::check_servable_root`]).
    pub fn check_servable(&self, repo: &RepoRef) -> Result<()> {
        let user_home = std::env::var_os("HOME").map(PathBuf::from);
        repos::check_servable_root(&repo.root, user_home.as_deref(), &self.inner.paths.home)
    }

    /// Refuses a folder of a registered repository as a repository of its own, unless that
    /// repository's walk leaves it out ([`repos::covering_repo`], [`Error::InsideRepo`]): every surface that adds one (`index
    /// --repo`, the workbench's add prompt, a server's initialize) comes through here.
    fn check_not_covered(&self, repo: &RepoRef) -> Result<()> {
        match self.covering_repo(repo)? {
            None => Ok(()),
            Some(outer) => {
                let prefix = repo.root.strip_prefix(&outer).unwrap_or(&repo.root).to_string_lossy().into_owned();
                Err(Error::InsideRepo { path: repo.root.clone(), repo: outer, prefix })
            }
        }
    }

    /// The registered repository that already indexes `repo`'s folder (the nearest above it),
    /// or `None`: `repo` is registered itself, its own git top-level, in no registered
    /// repository, or in a folder that repository's walk leaves out (`vendor/` ignored, a dot
    /// folder), which may be a repository of its own. A server's `initialize` of such a folder
    /// mounts that repository instead.
    pub fn covering_repo(&self, repo: &RepoRef) -> Result<Option<PathBuf>> {
        let registered: Vec<PathBuf> =
            self.inner.registry.list()?.into_iter().filter(|r| !r.missing).map(|r| r.path).collect();
        let Some(outer) = repos::covering_repo(&repo.root, &registered) else { return Ok(None) };
        let prefix = repo.root.strip_prefix(&outer).unwrap_or(&repo.root).to_string_lossy().into_owned();
        match index::served::folder_left_out(&outer, &prefix, &self.inner.config.index) {
            true => Ok(None),
            false => Ok(Some(outer)),
        }
    }

    /// Opens a writer session on a repo (registering it), for one run or a watcher.
    pub fn open_index_session(&self, repo: &RepoRef, rebuild: bool) -> Result<IndexSession> {
        self.open_index_session_with(repo, rebuild, true)
    }

    /// [`Self::open_index_session`], choosing whether the code pass runs.
    pub fn open_index_session_with(&self, repo: &RepoRef, rebuild: bool, code: bool) -> Result<IndexSession> {
        // Whichever surface asks (`index`, a watcher, the workbench's add prompt, a server),
        // `/`, the home directory, a system directory or docdex's own home is never indexed:
        // it would read `/etc/shadow` as readily as source, and fill the disk with state.
        self.check_servable(repo)?;
        self.check_not_covered(repo)?;
        self.inner.registry.ensure(repo)?;
        let mut session =
            IndexSession::open_with(repo, &self.inner.paths.locks(), &self.inner.config.index, rebuild, code)?;
        session.set_graph_options(code::graph::GraphOptions::from_config(&self.inner.config.code_intelligence));
        Ok(session)
    }

    /// Indexes (or incrementally re-indexes) a repository. Ends with [`Error::Cancelled`] once
    /// the thread's ambient token trips (a server's client left): between batches of files,
    /// as a shutdown stops a run (what was committed stays, the next run goes on from it),
    /// and in its waits on another run or the watcher.
    pub fn index(&self, repo_path: &Path, opts: &IndexOptions, sink: &dyn ProgressSink) -> Result<IndexSummary> {
        let repo = self.resolve_repo(repo_path)?;
        let cancel = CancelToken::current();
        let mut waiter = index::status::RunWaiter::default();
        let mut session = loop {
            cancel.check()?;
            match self.open_index_session_with(&repo, opts.rebuild, !opts.skip_code) {
                Ok(s) => break s,
                Err(Error::IndexBusy { pid, .. }) if !opts.rebuild && self.watcher_pid(&repo) == Some(pid) => {
                    if opts.reembed {
                        return Err(Error::ReembedWhileWatched { repo: repo.root.clone(), pid });
                    }
                    let running = self.await_watcher_run(&repo, pid, sink);
                    let sources =
                        if running { SourcesTaken::NotYet } else { self.await_watcher_sources(&repo, pid, sink) };
                    cancel.check()?;
                    return Ok(self.watched_summary(&repo, pid, running, sources));
                }
                // Another `index` is running: wait for it, then run (incrementally) after it.
                Err(Error::IndexBusy { .. }) if waiter.wait(&repo.status_path(), sink) => continue,
                Err(e) => return Err(e),
            }
        };
        // Every explicit run checks the live index against its checksums (about 20 ms for a
        // 37 MB index): a damaged index is never reported as indexed and ready.
        let damaged = session.verify(true)?;
        let replaced = session.rebuilding().filter(|_| !opts.rebuild).map(str::to_string);
        let mut summary = session.update_until(&Scope::Full, sink, cancel.flag()).map_err(|e| match e {
            Error::IndexStopped { .. } if cancel.is_cancelled() => Error::Cancelled,
            e => e,
        })?;
        // The session's repo: its live generation (moved or switched by the run).
        let repo = session.repo().clone();
        // Recorded before embedding, which can take minutes: the text index is committed and
        // searchable, and a run killed while embedding must not leave it listed as never indexed.
        self.record_indexed(&repo, &summary)?;
        // A one-off run has no shutdown flag: Ctrl-C ends the process, and what the phase
        // wrote stays (one transaction per group of files). A server's run stops with its
        // request, as the phase stops for a shutdown.
        summary.embeddings = Some(self.embed_index(&repo, &session, opts.reembed, sink, cancel.flag()));
        session.finish()?;
        cancel.check()?;
        self.prepare_search(&repo);
        if let Some(why) = damaged {
            summary.note = Some(format!("the index was damaged ({why}); a new generation replaced it"));
        } else if let Some(why) = replaced {
            summary.note = Some(format!("rebuilt because {why}; the new generation replaced it"));
        } else if opts.repair {
            summary.note = Some("every index file matches its checksum; nothing to repair".into());
        }
        Ok(summary)
    }

    /// Readies what the repo's next search reads (best effort: a search tabulates whatever
    /// is missing itself), the commit history too when `[search] history` ranks by it: an
    /// index run or a watcher's batch pays for `git log`, not the next search.
    fn prepare_search(&self, repo: &RepoRef) {
        match self.searcher(repo) {
            Ok(s) => {
                s.prepare_tables();
                if self.config().search.history {
                    s.prepare_history(repo);
                }
            }
            Err(e) => tracing::debug!(error = %e, "search tables not prepared"),
        }
    }

    /// The pid of a live watcher that owns this repo's writer, if any.
    fn watcher_pid(&self, repo: &RepoRef) -> Option<u32> {
        match StatusData::read(&repo.status_path()) {
            Some((d, false)) if d.watching => Some(d.pid),
            _ => None,
        }
    }

    /// Waits out a run the watcher `pid` is making (its catch-up after start, or a batch),
    /// showing its progress: `index` then returns with the index as current as the watcher
    /// made it, which is what a caller who searches next expects. A run whose status has not
    /// moved for [`WATCHER_SILENCE_MS`] is not waited for any longer (a wedged watcher must
    /// not hold an agent's request, or its thread, for ever). Returns whether it still runs.
    fn await_watcher_run(&self, repo: &RepoRef, pid: u32, sink: &dyn ProgressSink) -> bool {
        let cancel = CancelToken::current();
        loop {
            if cancel.is_cancelled() {
                return true;
            }
            match StatusData::read(&repo.status_path()) {
                Some((d, false)) if d.pid == pid && d.watching && d.state == IndexState::Updating => {
                    if fsutil::now_ms().saturating_sub(d.updated_ms) > WATCHER_SILENCE_MS {
                        return true;
                    }
                    if let Some(p) = &d.progress {
                        sink.progress(p);
                    }
                }
                _ => return false,
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// Waits, when the source list was saved after the running watcher `pid` last took it in
    /// (`docdex add` / `remove-source` just now), for the watcher to index it (it checks the
    /// list every second), showing its run's progress; `index` then reports the index with the
    /// sources in it, which is what `docdex sources` shows next. Not waited for: a watcher
    /// idle for [`SOURCES_PICKUP_MS`] without taking the list in (one from an older docdex),
    /// or running without progress for [`WATCHER_SILENCE_MS`].
    fn await_watcher_sources(&self, repo: &RepoRef, pid: u32, sink: &dyn ProgressSink) -> SourcesTaken {
        let saved = index::sources::saved_version(&repo.state_dir);
        let mut waited = false;
        let mut idle_since = None;
        let cancel = CancelToken::current();
        loop {
            if cancel.is_cancelled() {
                return SourcesTaken::NotYet;
            }
            let Some((d, false)) = StatusData::read(&repo.status_path()) else { return SourcesTaken::NotYet };
            if d.pid != pid || !d.watching {
                return SourcesTaken::NotYet;
            }
            let now = fsutil::now_ms();
            match d.state {
                IndexState::Updating => {
                    idle_since = None;
                    if now.saturating_sub(d.updated_ms) > WATCHER_SILENCE_MS {
                        return SourcesTaken::NotYet;
                    }
                    if let Some(p) = &d.progress {
                        sink.progress(p);
                    }
                }
                _ if saved == 0 || d.sources_version == saved => {
                    return if waited { SourcesTaken::Now } else { SourcesTaken::Already };
                }
                _ if now.saturating_sub(*idle_since.get_or_insert(now)) > SOURCES_PICKUP_MS => {
                    return SourcesTaken::NotYet;
                }
                _ => {}
            }
            waited = true;
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// What `index` reports when a watcher keeps the index current (`running`: its run goes
    /// on; search answers from its last commit meanwhile; `sources`: whether it has indexed
    /// the source list as saved).
    fn watched_summary(&self, repo: &RepoRef, pid: u32, running: bool, sources: SourcesTaken) -> IndexSummary {
        let summary = index::manifest::Summary::load(&repo.manifest_path());
        let (files, chunks) = (summary.files, summary.chunks);
        let note = match (running, sources) {
            (true, _) => format!(
                "a watcher (pid {pid}) is updating this index and has reported no progress for a while; searches answer from its last commit meanwhile (`docdex status` shows its state)"
            ),
            (false, SourcesTaken::Already) => format!("a watcher (pid {pid}) keeps this index current; nothing to do"),
            (false, SourcesTaken::Now) => {
                format!("the running watcher (pid {pid}) indexed the changed sources; it keeps this index current")
            }
            (false, SourcesTaken::NotYet) => format!(
                "the running watcher (pid {pid}) has not indexed the changed sources yet; it does within seconds (`docdex sources` shows their files once it has, `docdex status` its state)"
            ),
        };
        IndexSummary {
            repo: repo.root.clone(),
            files,
            chunks,
            unchanged: files,
            generation: summary.generation,
            note: Some(note),
            pending: running || sources == SourcesTaken::NotYet,
            ..Default::default()
        }
    }

    /// Records an index run's counts in the registry (used by the watcher).
    pub fn record_indexed(&self, repo: &RepoRef, summary: &IndexSummary) -> Result<()> {
        if summary.added > 0 || summary.deleted > 0 || summary.renamed > 0 {
            // New or vanished files may mean new or vanished directories, and a map lists
            // files: every run records here (`index`, a watcher's batch, a refresh before an
            // answer), and the watcher's only threw maps away for a changed folder, so a
            // deleted file stayed on the map (tour36 F3).
            self.invalidate_maps(repo);
        }
        self.inner.registry.record_indexed(repo, summary.files, summary.chunks)
    }

    /// The cached searcher of the repo's live generation (reopened when a rebuild switched
    /// generations: another directory now sits at the generation's path).
    fn searcher(&self, repo: &RepoRef) -> Result<Arc<RepoSearcher>> {
        let mut cache = self.inner.searchers.lock().map_err(|_| Error::poisoned("the searcher cache"))?;
        let mut attempt = 0;
        loop {
            let id = index::generation::identity(&repo.data_dir());
            if let Some((seen, s)) = cache.get(&repo.fingerprint) {
                if *seen == id && id.is_some() {
                    return Ok(s.clone());
                }
            }
            match RepoSearcher::open(repo) {
                Ok(s) => {
                    let s = Arc::new(s);
                    cache.insert(repo.fingerprint.clone(), (id, s.clone()));
                    return Ok(s);
                }
                // A rebuild switched generations while this open read the old one's file list
                // (the segments it names are gone from the path): open the new one instead.
                Err(_) if attempt < 3 && index::generation::identity(&repo.data_dir()) != id => {
                    attempt += 1;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(e) => return Err(damaged(repo, e)),
            }
        }
    }

    /// Runs a search against the live index, turning what a damaged index does (an error from
    /// Tantivy, a panic inside it) into [`Error::IndexDamaged`], recorded for status and the
    /// next index run.
    fn guarded_search(&self, repo: &RepoRef, run: impl FnOnce() -> Result<SearchResponse>) -> Result<SearchResponse> {
        match quiet_panics(run) {
            Ok(r) => r.map_err(|e| damaged(repo, e)),
            Err(panic) => {
                let what = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "a panic while reading it".into());
                if let Ok(mut cache) = self.inner.searchers.lock() {
                    cache.remove(&repo.fingerprint);
                }
                Err(damaged(repo, Error::Index { path: repo.index_dir(), message: what }))
            }
        }
    }

    /// Searches a repository's index. A user's query longer than a search may be is refused;
    /// the chat waterfall's (`req.for_chat`, ranked with the chat flags) is searched by the part
    /// of it that fits ([`limits::fit_query`]).
    pub fn search(&self, repo_path: &Path, req: &SearchRequest) -> Result<SearchResponse> {
        // `py`, `.py`, `Python` filter as `python` (the index's name for it); a name the index
        // never gives is refused rather than matching nothing.
        let lang = match req.lang.as_deref().filter(|l| !l.trim().is_empty()) {
            Some(l) => Some(checked_lang(l)?),
            None => None,
        };
        let repo = self.resolve_repo(repo_path)?;
        // `./src`, `src/` and an absolute directory filter alike; outside the repo is refused;
        // a registered source's key (`//notes/`) narrows to that source.
        let prefix = match req.path_prefix.as_deref().filter(|p| !p.trim().is_empty()) {
            Some(p) => match index::sources::prefix(&repo, p)? {
                Some(source) => Some(source),
                None => Some(repos::repo_prefix(&repo.root, p)?).filter(|p| !p.is_empty()),
            },
            None => None,
        };
        let named;
        let req = if lang != req.lang || prefix != req.path_prefix {
            named = SearchRequest { lang, path_prefix: prefix, ..req.clone() };
            &named
        } else {
            req
        };
        let fitted;
        let req = if req.for_chat {
            match limits::fit_query(&req.query) {
                std::borrow::Cow::Borrowed(_) => req,
                std::borrow::Cow::Owned(q) => {
                    fitted = SearchRequest { query: q, ..req.clone() };
                    &fitted
                }
            }
        } else {
            limits::check_query(&req.query)?;
            req
        };
        let searcher = self.searcher(&repo)?;
        let state = StatusData::read(&repo.status_path())
            .map(|(d, interrupted)| if interrupted { IndexState::Ready } else { d.state })
            .unwrap_or(IndexState::Ready);
        let flags = search::symbol_rank::RankingFlags::from_config(&self.inner.config.search, req.for_chat);
        let mut resp = self.guarded_search(&repo, || self.retrieve(&repo, &searcher, req, state, flags))?;
        let cancel = CancelToken::current();
        if self.inner.config.privacy.redact_snippets {
            // A hit's file is read again only when its snippet shows base64 (key body lines).
            let read = |rel: &str| index::extract::indexed_text(&repo, rel).ok().map(fsutil::decode_text_owned);
            let found = redact_page(&mut resp.results, read, &cancel)?;
            resp.pii_redacted = !found.is_empty();
            if resp.pii_redacted {
                tracing::debug!(masked = %privacy::summarize(&found), "snippets redacted");
            }
        }
        if req.libs && req.cursor.is_none() {
            cancel.check()?;
            let libs_req = libs::types::LibsSearchRequest { query: req.query.clone(), limit: req.limit };
            resp.libs = self.libs_search(repo_path, &libs_req)?.hits;
        }
        if resp.note.is_none() {
            resp.note = search::page_note(req.limit);
        }
        if resp.results.is_empty() && req.cursor.is_none() {
            let filter = req.path_prefix.as_deref().and_then(|p| search::filter_note::unmatched(&repo, p));
            resp.note = match (resp.note.take(), filter) {
                (Some(a), Some(b)) => Some(format!("{b}; {a}")),
                (a, b) => b.or(a),
            };
        }
        Ok(resp)
    }

    /// Many searches in one call (a regression suite): the repository is resolved once and
    /// every query shares its cached searcher; a query that fails is that item's error, never
    /// the batch's. Each response is exactly what [`Self::search`] returns for that request.
    /// The batch ends with [`Error::Cancelled`] once the thread's ambient token trips (its
    /// client left): the queries not yet run are not run.
    pub fn search_batch(&self, repo_path: &Path, reqs: &[SearchRequest]) -> Result<Vec<BatchItem>> {
        let repo = self.resolve_repo(repo_path)?;
        self.searcher(&repo)?;
        let cancel = CancelToken::current();
        let mut items = Vec::with_capacity(reqs.len());
        for (index, req) in reqs.iter().enumerate() {
            cancel.check()?;
            let answer = match req.query.trim().is_empty() {
                true => Err(Error::BadRequest("empty query: pass words to search for".into())),
                false => self.search(&repo.root, req),
            };
            let (response, error) = match answer {
                Ok(r) => (Some(r), None),
                Err(Error::Cancelled) => return Err(Error::Cancelled),
                Err(e) => (None, Some(e)),
            };
            items.push(BatchItem {
                index,
                query: req.query.clone(),
                response,
                error_code: error.as_ref().map(|e| e.code().to_string()),
                error: error.map(|e| e.to_string()),
            });
        }
        Ok(items)
    }

    /// Index state, counts, progress and warnings for a repository.
    pub fn status(&self, repo_path: &Path) -> Result<StatusResponse> {
        let repo = self.resolve_repo(repo_path)?;
        let live = StatusData::read(&repo.status_path());
        let (has_meta, has_manifest) = (repo.index_dir().join("meta.json").exists(), repo.manifest_path().exists());
        let indexed = has_meta && has_manifest;
        let running = matches!(&live, Some((d, false)) if d.state == IndexState::Updating);
        let generation = if has_meta { committed_generation(&repo.index_dir()) } else { 0 };
        // A manifest without a commit, or a commit without its manifest, is damage (reported
        // below), not "not indexed"; an interrupted run (a first one killed between its commit
        // and its manifest) is named as such instead.
        let interrupted = matches!(&live, Some((_, true)));
        let broken = !running && !interrupted && (has_manifest || generation > 0);
        if !indexed && !running && !broken {
            // A first run killed or stopped before its first commit is named, with what to run
            // (`/v1/status` and `docdex_status` said only "not indexed").
            return Err(self.explain_not_indexed(Error::NotIndexed { path: repo.root.clone() }));
        }
        let summary = index::manifest::Summary::load(&repo.manifest_path());
        let (documents, chunks) = (summary.files, summary.chunks);
        let mut warnings: Vec<String> = self.inner.warnings.clone();
        let mut state = IndexState::Ready;
        let (mut queued, mut progress, mut last_event) = (Some(0), None, None);
        let generation = if indexed { generation } else { 0 };
        if let Some((d, interrupted)) = live {
            state = if interrupted { IndexState::Ready } else { d.state };
            warnings.extend(live_warnings(&d, interrupted, indexed, generation, &repo.root));
            // Killed mid-run, or a watcher killed: its queue (the status file's count is the
            // last one written, or none) is not known.
            let queue_lost = interrupted || (d.watching && !fsutil::pid_alive(d.pid));
            if queue_lost {
                queued = None;
                warnings.push(QUEUE_LOST.into());
            } else {
                queued = Some(d.queued);
                progress = d.progress;
            }
            last_event = d.last_event;
        }
        if let Some(detail) = index::damage::read_marker(&repo.state_dir) {
            state = IndexState::Error;
            warnings.push(format!(
                "the index is damaged ({detail}); run `docdex index --repo {} --repair` to rebuild it",
                crate::error::shell_path(&repo.root)
            ));
        }
        let bookkeeping = broken.then(|| {
            index::damage::bookkeeping_warning(&repo.index_dir(), &repo.manifest_path(), documents, &repo.root)
        });
        if let Some(w) = bookkeeping.flatten() {
            state = IndexState::Error;
            warnings.push(w);
        }
        warnings.extend(skip_warnings(&summary));
        let srcs = index::sources::load(&repo.state_dir);
        let entries_under = |prefix: &str| summary.source_entries.get(prefix).copied().unwrap_or(0);
        warnings.extend(index::sources::missing(&srcs, entries_under).into_iter().map(|(_, warning)| warning));
        if !running {
            // A run in progress rebuilds what these name.
            warnings.extend(code::api::index_run_notes(&repo));
            warnings.extend(self.embedding_gap(&repo));
        }
        let record = self.inner.registry.get(&repo.fingerprint)?;
        Ok(StatusResponse {
            schema_version: SCHEMA_VERSION,
            project_id: repo.fingerprint.clone(),
            repo: repo.root.clone(),
            index_state: state,
            generation,
            queued_files: queued,
            documents,
            chunks,
            last_indexed_ms: record.and_then(|r| r.last_indexed_ms),
            progress,
            last_event,
            warnings,
            state_dir: repo.state_dir.clone(),
        })
    }

    /// Lines of a file inside the repository; paths resolving outside it are refused. Secrets
    /// and personal data in them are masked under `[privacy] redact_snippets` (the default), as
    /// search snippets are: `docdex get`, `GET /v1/open` and MCP `docdex_open` all answer from
    /// here, and agents forward what they read to remote models. `pii_redacted` says so.
    pub fn get_file(&self, repo_path: &Path, req: &FileRequest) -> Result<FileContent> {
        self.file_lines(repo_path, req, self.config().privacy.redact_snippets)
    }

    /// The file on disk an editor opens for an index key (`src/a.rs`, or `//source/x.md` in a
    /// folder added with `docdex add`): resolved beneath its root and served (the workbench
    /// joined keys to the repository, so a source's hit opened `/source/x.md` at the
    /// filesystem's root). PDF and DOCX are refused: an editor shows their bytes, not the text
    /// docdex read from them (HTML is text, and opens).
    pub fn editable_path(&self, repo_path: &Path, key: &str) -> Result<PathBuf> {
        let repo = self.resolve_repo(repo_path)?;
        let found = locate_file(&repo, key)?;
        self.check_served(&found, key)?;
        match index::extract::Format::of(&found.rel) {
            Some(f @ (index::extract::Format::Pdf | index::extract::Format::Docx)) => Err(Error::BadRequest(format!(
                "{key} is a {} document: an editor would show its bytes, not the text docdex reads from it \
                 (the preview shows that text; `docdex get {key}` prints it)",
                f.lang().to_uppercase()
            ))),
            _ => Ok(found.real),
        }
    }

    /// [`Self::get_file`], masked or not (`similar` reads a file's own terms unmasked).
    pub(crate) fn file_lines(&self, repo_path: &Path, req: &FileRequest, redact: bool) -> Result<FileContent> {
        let file = req.path.as_str();
        let repo = self.resolve_repo(repo_path)?;
        let found = locate_file(&repo, file)?;
        self.check_served(&found, file)?;
        let limit = self.config().index.max_file_size_bytes;
        let bytes = fsutil::read_repo_file_capped(&found.root, &found.rel, limit)
            .map_err(|e| unreadable(&found, file, &e))?
            .ok_or_else(|| grown_past(file, limit))?;
        let format = index::extract::Format::of(&found.rel);
        let doc = match format {
            Some(fmt) => Some(extracted_document(fmt, &bytes, file)?),
            None if fsutil::looks_binary(&bytes) => {
                return Err(Error::BadRequest(format!("{file} is a binary file")));
            }
            None => None,
        };
        let text = match &doc {
            Some(d) => std::borrow::Cow::Borrowed(d.text.as_str()),
            None => fsutil::decode_text(&bytes),
        };
        let all: Vec<&str> = text.lines().collect();
        let total = all.len() as u32;
        let (a, b) = asked_lines(req, doc.as_ref(), file, total)?;
        let slice = if a > total { &[][..] } else { &all[(a - 1) as usize..b as usize] };
        let last = b.max(a.min(total));
        let (text, masked) = shown_lines(&text, slice, a, redact);
        if !masked.is_empty() {
            tracing::debug!(file, masked = %privacy::summarize(&masked), "file text redacted");
        }
        Ok(FileContent {
            path: found.shown,
            line_start: a,
            line_end: last,
            total_lines: total,
            text,
            pii_redacted: !masked.is_empty(),
            format: format.map(|f| f.lang().to_string()),
            page_start: doc.as_ref().and_then(|d| d.page_of(a)),
            page_end: doc.as_ref().and_then(|d| d.page_of(last)),
            total_pages: doc.as_ref().filter(|d| !d.pages.is_empty()).map(|d| d.pages.len() as u32),
        })
    }

    /// Refuses a file the index would not take: hidden or ignored (where `.env` files and
    /// credentials live; the same walk rules as indexing, `.gitignore`, `.docdexignore` and
    /// `[index] exclude`), in a document format it does not read (`.odt`, named as `docdex
    /// status` names it), over `[index] max_file_size_bytes` (a read is bounded in memory), or
    /// left out by its source's `--exclude` / `--include` (kept from agents on purpose). The rule
    /// is `index::served`, which context packs and chat's diff apply too.
    fn check_served(&self, found: &LocatedFile, given: &str) -> Result<()> {
        let rel = repos_rel(&found.root, &found.real);
        let globs = found
            .source
            .as_ref()
            .map_or_else(Default::default, |s| index::walk::Globs { include: &s.include, exclude: &s.exclude });
        let refused = index::served::refusals(&found.root, std::slice::from_ref(&rel), &self.config().index, globs);
        match refused.get(&rel) {
            None => Ok(()),
            Some(r) => Err(Error::NotServed { path: given.to_string(), reason: r.reason(), hint: r.hint() }),
        }
    }

    /// All registered repositories.
    pub fn list_repos(&self) -> Result<Vec<RepoRecord>> {
        self.inner.registry.list()
    }

    /// Unregisters a repository; `purge` deletes its state too, and with it the memories and
    /// chat sessions it holds only when `lose_user_data` (else refused, saying how many).
    pub fn remove_repo(&self, path: &Path, purge: bool, lose_user_data: bool) -> Result<(RepoRecord, repos::UserData)> {
        let (record, held) = self.inner.registry.remove(path, purge, lose_user_data)?;
        self.forget_cached(&record.fingerprint);
        Ok((record, held))
    }

    /// Carries a moved repository's state (index, memories, chat sessions, sources) from its
    /// old path to its folder's new one (`docdex repo move`).
    pub fn move_repo(&self, old: &Path, new: &Path) -> Result<repos::Moved> {
        let moved = self.inner.registry.relocate(old, new)?;
        self.forget_cached(&moved.from.fingerprint);
        self.forget_cached(&moved.to.fingerprint);
        Ok(moved)
    }

    fn forget_cached(&self, fingerprint: &str) {
        if let Ok(mut cache) = self.inner.searchers.lock() {
            cache.remove(fingerprint);
        }
        self.inner.resident.forget(fingerprint);
    }
}

/// Hits masked between two looks at the cancellation token (a page holds up to 200).
const REDACT_STEP: usize = 8;

/// Masks secrets and personal data in a page's snippets and context lines
/// ([`privacy::redact_hits`]), [`REDACT_STEP`] hits at a time: [`Error::Cancelled`] once
/// `cancel` trips between them (a hit showing base64 has its whole file, from `read`, scanned
/// for key blocks, milliseconds each). Every hit is masked alone, so the steps change no hit.
fn redact_page(
    hits: &mut [search::types::SearchHit],
    mut read: impl FnMut(&str) -> Option<String>,
    cancel: &CancelToken,
) -> Result<Vec<privacy::Finding>> {
    let mut found = Vec::new();
    for step in hits.chunks_mut(REDACT_STEP) {
        cancel.check()?;
        found.extend(privacy::redact_hits(step, &mut read));
    }
    Ok(found)
}

/// The lines `slice` of `file_text` (the first is line `first`), masked when `redact`: with the
/// whole file at hand, so a private key whose `BEGIN` line is above the range is masked too.
fn shown_lines(file_text: &str, slice: &[&str], first: u32, redact: bool) -> (String, Vec<privacy::Finding>) {
    let text = slice.join("\n");
    match redact {
        true => privacy::FileMasker::new(file_text).mask(&text, first),
        false => (text, Vec::new()),
    }
}

/// A document's text, extracted from the file's bytes by the same deterministic step indexing
/// runs, so its lines are the lines search hits cite; a document docdex cannot read is an
/// error carrying its note.
fn extracted_document(fmt: index::extract::Format, bytes: &[u8], shown: &str) -> Result<index::extract::Extracted> {
    index::extract::extract(fmt, bytes).map_err(|r| Error::BadRequest(format!("{shown}: {}", r.note(fmt))))
}

thread_local! {
    static QUIET_PANICS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, catching a panic: it is logged (not printed as a crash) and returned as `Err`.
/// Tantivy may panic on bytes a damaged index file holds; that is a damaged index, not a bug
/// docdex should crash on.
pub(crate) fn quiet_panics<T>(f: impl FnOnce() -> T) -> std::thread::Result<T> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET_PANICS.with(|q| q.get()) {
                tracing::debug!("caught a panic while reading an index: {info}");
            } else {
                previous(info);
            }
        }));
    });
    let was = QUIET_PANICS.with(|q| q.replace(true));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET_PANICS.with(|q| q.set(was));
    r
}

/// The generation of the index's last commit (0 when it has none or does not open).
fn committed_generation(index_dir: &Path) -> u64 {
    index::schema::open(index_dir).map(|(i, _)| index::schema::read_payload(&i).generation).unwrap_or(0)
}

/// An index error met while reading the live index means it is damaged: say so, and record
/// it so status reports it and the next index run replaces the generation.
fn damaged(repo: &RepoRef, e: Error) -> Error {
    match e {
        // Opening a reader writes a lock file beside the index: a read-only state directory is
        // not damage, and a repair (a rebuild) could not help.
        Error::Index { message, .. }
            if message.contains("PermissionDenied") || message.contains("ReadOnlyFilesystem") =>
        {
            Error::StateNotWritable {
                path: repo.state_dir.clone(),
                reason: format!("searching opens a lock file in {}: {message}", repo.index_dir().display()),
            }
        }
        Error::Index { message, .. } => {
            index::damage::write_marker(&repo.state_dir, &message);
            Error::IndexDamaged { repo: repo.root.clone(), detail: message }
        }
        other => other,
    }
}

/// Why the one opener refused a located file: a link, or a `..` that leaves the folder it is
/// read beneath on the way (`/r/../r/x`), which the opener refuses as it refuses a link out.
fn unreadable(found: &LocatedFile, file: &str, e: &std::io::Error) -> Error {
    if !fsutil::is_symlink_refusal(e) {
        return Error::BadRequest(format!("cannot read {file}: {e}"));
    }
    if Path::new(&found.rel).components().any(|c| c == std::path::Component::ParentDir) {
        return Error::BadRequest(format!(
            "{file} has a `..` component that leaves {} before coming back; docdex reads a path only beneath it: give the path without `..`",
            found.root.display()
        ));
    }
    Error::BadRequest(format!("{file} is reached through a symbolic link; docdex does not follow links"))
}

/// A file that passed the size check but held more than `limit` bytes when read (replaced or
/// grown in between): refused as over the limit, having read at most `limit + 1` bytes.
fn grown_past(file: &str, limit: u64) -> Error {
    Error::NotServed {
        path: file.to_string(),
        reason: format!("over the {limit}-byte limit when it was read (it changed after it was checked)"),
        hint: "; raise `[index] max_file_size_bytes` to index and read it".into(),
    }
}

/// A file `get` was asked for, found inside the repository or one of its registered sources.
struct LocatedFile {
    /// The root it is read beneath: the repository's, or the source's.
    root: PathBuf,
    /// The resolved path (links followed), for the served-file check.
    real: PathBuf,
    /// The path under `root` the one opener reads (no link followed).
    rel: String,
    /// The path as responses name it: repo-relative, or a source's `//name/...` key.
    shown: String,
    /// The registered source it is in (its globs decide what is served), or `None`.
    source: Option<index::sources::Source>,
}

/// Finds `file` (repo-relative, absolute, or a `//source/...` key) beneath the repository or a
/// registered source. Outside (through `..` or a link) is said before whether the file exists,
/// so the answer is no oracle for paths outside.
fn locate_file(repo: &repos::RepoRef, file: &str) -> Result<LocatedFile> {
    if file.trim().is_empty() {
        return Err(Error::BadRequest(
            "no file given: pass a path relative to the repository (src/main.rs), an absolute path inside it, or a //source/... key".into(),
        ));
    }
    repos::check_given_path(file.trim())?;
    let srcs = index::sources::load(&repo.state_dir);
    let source = match index::sources::split(file) {
        Some((name, rel)) => match srcs.iter().find(|s| s.name == name) {
            Some(s) => Some((s, rel)),
            None => return Err(index::sources::unknown(file.trim(), name, &srcs)),
        },
        // `//notes` or `//`: a source (or none) named, no file in it.
        None if file.trim().starts_with(index::sources::PREFIX) => {
            let name = file.trim().trim_start_matches('/');
            return Err(match srcs.iter().find(|s| s.name == name) {
                Some(s) => Error::BadRequest(format!(
                    "{file} is the source folder {}: give a file in it ({file}/FILE)",
                    s.path.display()
                )),
                None => index::sources::unknown(file.trim(), name, &srcs),
            });
        }
        None => None,
    };
    // The source the file is read from (None: the repository), and the path to open.
    let (owner, candidate) = match source {
        Some((s, rel)) => (Some(s), s.path.join(rel)),
        None if Path::new(file).is_absolute() => {
            let real = repos::resolve_existing(Path::new(file));
            let owner = srcs.iter().find(|s| real.starts_with(&s.path));
            if owner.is_none() && !real.starts_with(&repo.root) {
                return Err(Error::OutsideRepo { path: file.to_string(), repo: repo.root.clone() });
            }
            (owner, PathBuf::from(file))
        }
        None => {
            repos::repo_relative(&repo.root, file)?;
            (None, repo.root.join(file))
        }
    };
    let root = owner.map_or_else(|| repo.root.clone(), |s| s.path.clone());
    if let Some((s, why)) = owner.and_then(|s| Some((s, index::sources::why_missing(s)?))) {
        return Err(Error::NotFound(format!(
            "{file}: the source {} is missing ({} {why}); mount or restore it, or `docdex remove-source {}`",
            s.name,
            root.display(),
            s.name
        )));
    }
    let outside = || match owner {
        Some(s) => Error::OutsideSource { path: file.to_string(), source_name: s.name.clone(), root: root.clone() },
        None => Error::OutsideRepo { path: file.to_string(), repo: root.clone() },
    };
    if !repos::resolve_existing(&candidate).starts_with(&root) {
        return Err(outside());
    }
    let real = std::fs::canonicalize(&candidate).map_err(|e| match e.kind() {
        // A folder on the way that this user may not enter: the file may well be there
        // (tour31: it said "no such file").
        std::io::ErrorKind::PermissionDenied => {
            Error::BadRequest(format!("cannot read {file}: a folder on its path is not readable ({e})"))
        }
        _ => Error::NotFound(format!("no such file in {}: {file}", root.display())),
    })?;
    if !real.starts_with(&root) {
        return Err(outside());
    }
    if real.is_dir() {
        return Err(Error::BadRequest(format!("{file} is a directory: give a file in it")));
    }
    if !real.is_file() {
        return Err(Error::BadRequest(format!("{file} is not a regular file")));
    }
    let rel = match candidate.strip_prefix(&root) {
        Ok(lexical) => lexical.to_string_lossy().into_owned(),
        Err(_) => repos_rel(&root, &real),
    };
    let shown = match owner {
        Some(s) => index::sources::key(&s.name, &repos_rel(&root, &real)),
        None => repos_rel(&repo.root, &real),
    };
    Ok(LocatedFile { root, real, rel, shown, source: owner.cloned() })
}

/// The inclusive line range `get` returns: the request's page (PDF) or lines, else the whole
/// file; the end is cut to the file's last line, a start past it is an error. Errors are worded
/// for every surface (HTTP and MCP fields, the command line's --lines) and quote only what the
/// caller gave: an unset end was shown as 4294967295.
fn asked_lines(
    req: &FileRequest,
    doc: Option<&index::extract::Extracted>,
    file: &str,
    total: u32,
) -> Result<(u32, u32)> {
    let page_lines = match (req.page, doc) {
        (None, _) => None,
        (Some(n), Some(d)) if !d.pages.is_empty() => Some(d.page_lines(n).ok_or_else(|| {
            Error::BadRequest(format!("{file} has {} pages; page {n} does not exist", d.pages.len()))
        })?),
        (Some(n), _) => {
            return Err(Error::BadRequest(format!(
                "page {n} asked of {file}, which has no pages: page is for PDF files; give lines instead"
            )))
        }
    };
    let asked = page_lines.or(req.lines());
    let (a, b) = asked.unwrap_or((1, total.max(1)));
    let given = || given_range(req.start_line, req.end_line);
    if a == 0 {
        return Err(Error::BadRequest(format!("bad line range ({}): lines start at 1", given())));
    }
    if b < a {
        return Err(Error::BadRequest(format!("bad line range ({}): the end is before the start", given())));
    }
    if asked.is_some() && a > total {
        return Err(Error::BadRequest(format!(
            "bad line range ({}): {file} has {total} lines, so line {a} is past its end",
            given()
        )));
    }
    Ok((a, b.min(total)))
}

/// The line range a request gave, in its own terms: both ends, or the one it set.
fn given_range(start: Option<u32>, end: Option<u32>) -> String {
    match (start, end) {
        (Some(a), Some(b)) => format!("lines {a}-{b}"),
        (Some(a), None) => format!("from line {a}"),
        (None, Some(b)) => format!("up to line {b}"),
        (None, None) => "the whole file".into(),
    }
}

fn repos_rel(root: &Path, p: &Path) -> String {
    index::walk::rel_path(root, p)
}

/// What `docdex status` says when the process holding the queue of changes was killed.
const QUEUE_LOST: &str = "the files it had queued are not known (the queue went with the killed process); the next index run, or a watcher starting, compares every file with the index and picks up each change";

/// The warnings a status file adds: an interrupted or stopped run (and what to run to finish
/// it), a rebuild in progress, the last run's error, and what the running watcher could not watch.
fn live_warnings(d: &StatusData, interrupted: bool, indexed: bool, generation: u64, root: &Path) -> Vec<String> {
    // Quoted: the user pastes these commands into a shell.
    let root = crate::error::shell_path(root);
    let mut warnings = Vec::new();
    match (interrupted, d.rebuilding_from) {
        (true, Some(_)) => warnings.push(format!(
            "a rebuild (pid {}) was interrupted before it finished; generation {generation} stays live and searchable, and the next `docdex index --repo {root} --rebuild` starts over",
            d.pid
        )),
        (true, None) if indexed && d.progress.as_ref().is_some_and(|p| p.phase == "embedding") => {
            warnings.push(format!(
                "the last index run (pid {}) was interrupted while embedding; generation {generation} is searchable (hybrid search uses the chunks embedded so far). Run `docdex index --repo {root}` to finish",
                d.pid
            ))
        }
        (true, None) if indexed => warnings.push(format!(
            "the last index run (pid {}) was interrupted; generation {generation} is searchable. Run `docdex index --repo {root}` to finish",
            d.pid
        )),
        (true, None) => warnings.push(format!(
            "the first index run (pid {}) was interrupted before its first commit; run `docdex index --repo {root}` to finish",
            d.pid
        )),
        (false, Some(_)) => warnings.push(format!(
            "building a new generation beside generation {generation}, which answers searches until the switch"
        )),
        (false, None) => {}
    }
    if d.stopped && !interrupted {
        warnings.push(match indexed {
            true => format!(
                "the last index run (pid {}) stopped for shutdown before it finished (or the client that asked for it left); generation {generation} is searchable. Run `docdex index --repo {root}` (or start the server again) to finish",
                d.pid
            ),
            false => format!(
                "the first index run (pid {}) stopped for shutdown before its first commit (or the client that asked for it left); run `docdex index --repo {root}` to finish",
                d.pid
            ),
        });
    }
    if let Some(e) = &d.last_error {
        warnings.push(format!("last index run failed: {e}"));
    }
    // What the running watcher could not watch, as skipped files are listed (a watcher
    // killed outright left its list behind: its pid says whether it still runs).
    if let (true, Some(u)) = (d.watching && crate::engine::fsutil::pid_alive(d.pid), &d.unwatched) {
        warnings.extend(u.warnings());
    }
    warnings
}

/// Human warnings about skipped and failed files (counts by reason, then a few examples).
fn skip_warnings(m: &index::manifest::Summary) -> Vec<String> {
    let total = m.skipped_total();
    if total == 0 {
        return Vec::new();
    }
    let dirs = m.skipped_by_reason.get(index::types::UNREADABLE_DIR).copied().unwrap_or(0);
    let mut out = vec![format!(
        "{} not indexed: {}",
        crate::engine::fsutil::files_and_dirs(total - dirs, dirs),
        m.skipped_by_reason.iter().map(|(r, n)| format!("{n} {r}")).collect::<Vec<_>>().join(", ")
    )];
    for (p, r) in &m.skipped_first {
        out.push(format!("skipped {p}: {r}"));
    }
    out
}

/// The error for a `--lang` the index never gives, with the names it does.
fn unknown_language(typed: &str) -> Error {
    let names: Vec<&str> = index::files::LANGUAGES.iter().map(|l| l.name).collect();
    Error::BadRequest(format!(
        "unknown language {typed:?}: use a name the index gives ({}), an extension (py, rs, ts) or an alias (golang, c++)",
        names.join(", ")
    ))
}

/// A language filter as the index names it: an alias or extension (`py`) becomes the name
/// (`python`); a name the index never gives is a bad request naming those it does (search and
/// symbols alike: symbols kept an unknown one, which matched nothing and said nothing).
pub(crate) fn checked_lang(typed: &str) -> Result<String> {
    index::files::canonical_language(typed).map(str::to_string).ok_or_else(|| unknown_language(typed))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hit `i` of a page: a different file each, its snippet a base64 line (its file is read)
    /// and an e-mail address (masked).
    fn hit(i: u32) -> search::types::SearchHit {
        search::types::SearchHit {
            chunk_id: format!("f{i}.txt:1-2"),
            path: format!("f{i}.txt"),
            lang: "text".into(),
            line_start: 1,
            line_end: 2,
            page_start: None,
            page_end: None,
            source: None,
            score: 1.0,
            snippet_line_start: 1,
            snippet: format!("QUJDREVGR0hJSktMTU5PUFFSU1RVVldY{i}\nmail ada{i}@example.com\n"),
            highlights: Vec::new(),
            generation: 1,
            stale: false,
            source_missing: false,
            gone: false,
            context: Vec::new(),
            retrievers: Vec::new(),
        }
    }

    #[test]
    fn a_page_is_masked_as_a_whole_untripped_and_stops_between_steps_when_tripped() {
        let file = |_: &str| Some("plain text\n".to_string());
        let mut whole: Vec<_> = (0..40).map(hit).collect();
        let expected = privacy::redact_hits(&mut whole, file);
        let mut stepped: Vec<_> = (0..40).map(hit).collect();
        let found = redact_page(&mut stepped, file, &CancelToken::new()).expect("untripped");
        assert_eq!(found.len(), expected.len());
        assert!(found.len() >= 40, "every address is found: {}", found.len());
        let snippets = |h: &[search::types::SearchHit]| h.iter().map(|h| h.snippet.clone()).collect::<Vec<_>>();
        assert_eq!(snippets(&stepped), snippets(&whole), "the steps change no hit");

        // Tripped while the first step reads its files: no later step runs.
        let token = CancelToken::new();
        let reads = std::cell::Cell::new(0);
        let tripping = |_: &str| {
            reads.set(reads.get() + 1);
            token.cancel();
            Some("plain text\n".to_string())
        };
        let mut page: Vec<_> = (0..40).map(hit).collect();
        assert!(matches!(redact_page(&mut page, tripping, &token), Err(Error::Cancelled)));
        assert_eq!(reads.get(), REDACT_STEP, "only the first step's files were read");
        assert!(page[REDACT_STEP].snippet.contains("@example.com"), "the hits after it were not masked");
    }

    fn run(pid: u32) -> StatusData {
        StatusData { state: IndexState::Updating, pid, ..StatusData::default() }
    }

    #[test]
    fn an_interrupted_runs_command_quotes_a_repository_path_a_shell_would_split() {
        let root = Path::new("/tmp/it's my repo");
        let w = live_warnings(&run(7), true, true, 3, root);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains(r"`docdex index --repo '/tmp/it'\''s my repo'`"), "{w:?}");
        let mut rebuild = run(7);
        rebuild.rebuilding_from = Some(3);
        let w = live_warnings(&rebuild, true, true, 3, root);
        assert!(w[0].contains(r"--repo '/tmp/it'\''s my repo' --rebuild"), "{w:?}");
        // A plain path stays as it is.
        let w = live_warnings(&run(7), true, false, 0, Path::new("/srv/repo"));
        assert!(w[0].contains("`docdex index --repo /srv/repo`"), "{w:?}");
    }

    #[test]
    fn a_running_rebuild_is_named_and_a_finished_run_adds_nothing() {
        let mut d = run(7);
        d.rebuilding_from = Some(3);
        let w = live_warnings(&d, false, true, 3, Path::new("/srv/repo"));
        assert!(w[0].contains("beside generation 3"), "{w:?}");
        assert!(live_warnings(&run(7), false, true, 3, Path::new("/srv/repo")).is_empty());
    }
}
