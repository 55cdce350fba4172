//! The code side of an index run: what `IndexSession` does with each parsed file beyond
//! Tantivy. It owns the writer's handle on `symbols.db`, keeps the store in step with the
//! manifest (re-extracting files whose stored symbols are missing, stale or from another
//! grammar version), and rebuilds the impact graph when imports changed.
//!
//! Ordering per commit: Tantivy commits, then [`CodePass::commit`], then the manifest. So the
//! store never claims a file the manifest does not, and a store that lags (killed between the
//! two commits, deleted, corrupt, built by other grammars) is detected at open by its
//! generation or its grammar versions and repaired by the next run ([`CodePass::plan_repair`]).

use super::manifest::Manifest;
use super::walk::Candidate;
use crate::engine::code::store::{self, SymbolStore};
use crate::engine::code::types::CodeIndexSummary;
use crate::engine::code::{graph, CodeOutcome, Lang, Symbol, SymbolKind};
use crate::engine::repos::RepoRef;
use crate::error::{Error, Result};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// What `process` hands back for a file of a language with a grammar.
pub(crate) struct CodeResult {
    pub lang: Lang,
    pub outcome: CodeOutcome,
    /// Parse and extraction CPU time on the worker thread (not wall time, so a busy machine
    /// does not inflate it).
    pub seconds: f64,
    pub bytes: u64,
}

/// Runs the per-file code pass on a file's text: one parse, timed in thread CPU time.
pub(crate) fn analyze(lang: Lang, text: &str, rel: &str) -> CodeResult {
    let t = thread_cpu_seconds();
    let outcome = crate::engine::code::analyze(lang, text, rel);
    CodeResult { lang, outcome, seconds: (thread_cpu_seconds() - t).max(0.0), bytes: text.len() as u64 }
}

/// CPU time of the calling thread, in seconds.
fn thread_cpu_seconds() -> f64 {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: clock_gettime writes into the timespec we own; CLOCK_THREAD_CPUTIME_ID is
        // supported on every Unix docdex builds for.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        if rc == 0 {
            return ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9;
        }
    }
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs_f64()
}

/// Names of the definitions that start in lines `a..=b`, for the `defs` field. Fields,
/// variables, constants and enum members are left out: they are many and rarely what a
/// search means.
pub(crate) fn definitions_in(symbols: &[Symbol], a: u32, b: u32) -> String {
    let mut out = String::new();
    for s in symbols.iter().filter(|s| s.line_start >= a && s.line_start <= b) {
        if matches!(
            s.kind,
            SymbolKind::Field | SymbolKind::Variable | SymbolKind::Constant | SymbolKind::Variant | SymbolKind::Impl
        ) {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&s.name);
    }
    out
}

/// Files besides source code that import resolution reads (module roots, path aliases, import
/// hints): a change to one of them rebuilds the impact graph even when no import changed.
const GRAPH_INPUTS: &[&str] = &[
    "tsconfig.json",
    "jsconfig.json",
    "package.json",
    "go.mod",
    "go.work",
    "composer.json",
    "cargo.toml",
    "pubspec.yaml",
    "pyproject.toml",
    "setup.cfg",
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "settings.gradle",
    "settings.gradle.kts",
    "package.swift",
    "docdex.import_map.json",
    "docdex.import_traces.jsonl",
];

/// Whether a repo-relative path is one of [`GRAPH_INPUTS`] (or a C# project file).
fn is_graph_input(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel).to_ascii_lowercase();
    GRAPH_INPUTS.contains(&name.as_str()) || name.ends_with(".csproj")
}

/// The writer's side of the symbol store for one session.
pub(crate) struct CodePass {
    store: SymbolStore,
    repo: RepoRef,
    /// The store may disagree with the manifest: compare them on the next update.
    repair: bool,
    /// Languages whose stored symbols came from another grammar version.
    drifted: Vec<Lang>,
    /// Imports or the set of code files changed since the graph was last rebuilt.
    graph_dirty: bool,
    /// How the impact graph is built (`[code_intelligence]`).
    graph_options: graph::GraphOptions,
    summary: CodeIndexSummary,
}

impl CodePass {
    /// Opens the store. `index_created`: the text index was (re)built, so the store starts
    /// empty too. `generation`: the text index's current generation.
    pub fn open(repo: &RepoRef, index_created: bool, generation: u64) -> Result<CodePass> {
        let store = SymbolStore::open_write(&store::db_path(repo), index_created)?;
        let drifted = store.meta().drifted();
        let lagging = store.meta().generation != generation;
        let repair = !index_created && (lagging || !drifted.is_empty() || store.created());
        if repair {
            tracing::info!(
                store = store.meta().generation,
                index = generation,
                drifted = ?drifted.iter().map(|l| l.name()).collect::<Vec<_>>(),
                "symbol store out of step with the index; re-extracting what differs"
            );
        }
        // A run killed after its symbols committed but before the graph was written left the
        // mark; a store with files but no graph file lost it some other way.
        // A graph file that is not JSON (truncated or overwritten) counts as missing.
        let graph_missing = !index_created && graph::unreadable(&graph::graph_path(repo)) && !store.created();
        // A graph an older docdex resolved (another `RESOLUTION_VERSION`) is rebuilt once; so is
        // a new store's (even with no code file to parse: a docs-only or empty repo), so that the
        // first run records this build's resolution and writes an (empty) graph.
        let resolved_otherwise = store.meta().graph_resolution != graph::RESOLUTION_VERSION;
        let graph_dirty = store.meta().graph_pending || graph_missing || resolved_otherwise;
        if graph_dirty {
            tracing::info!(
                built_from = store.meta().graph_generation,
                generation,
                "the impact graph is behind the symbol store; rebuilding it"
            );
        }
        Ok(CodePass {
            store,
            repo: repo.clone(),
            repair,
            drifted,
            graph_dirty,
            graph_options: Default::default(),
            summary: Default::default(),
        })
    }

    /// Files to re-extract although the text index has them (missing from the store, stored
    /// with another hash, or of a drifted language), and removal of stored files the manifest
    /// no longer indexes. `busy` holds paths this run processes anyway. Empty unless the store
    /// was found out of step at open.
    pub fn plan_repair(
        &mut self,
        manifest: &Manifest,
        root: &std::path::Path,
        busy: &HashSet<&str>,
    ) -> Result<Vec<Candidate>> {
        if !self.repair {
            return Ok(Vec::new());
        }
        let t = Instant::now();
        let stored = self.store.file_hashes()?;
        let drifted: HashSet<&str> = self.drifted.iter().map(|l| l.name()).collect();
        let mut todo = Vec::new();
        for (rel, e) in &manifest.files {
            if e.skipped.is_some()
                || busy.contains(rel.as_str())
                || rel.starts_with(super::sources::PREFIX) // source folders are indexed as text
                || Lang::from_path(std::path::Path::new(rel)).is_none()
            {
                continue;
            }
            let current = stored.get(rel).is_some_and(|(h, lang)| *h == e.hash && !drifted.contains(lang.as_str()));
            if !current {
                let (size, mtime_ns, ctime_ns) = (e.size, e.mtime_ns, e.ctime_ns);
                todo.push(Candidate { rel: rel.clone(), abs: root.join(rel), size, mtime_ns, ctime_ns });
            }
        }
        for rel in stored.keys() {
            let indexed = manifest.files.get(rel).is_some_and(|e| e.skipped.is_none());
            if !indexed && !busy.contains(rel.as_str()) {
                self.forget(rel)?;
            }
        }
        self.summary.drift_repaired = self.drifted.iter().map(|l| l.name().to_string()).collect();
        self.summary.store_seconds += t.elapsed().as_secs_f64();
        Ok(todo)
    }

    /// Stores one file's symbols (replacing what was there).
    pub fn record(&mut self, rel: &str, hash: u64, r: &CodeResult, repaired: bool) -> Result<()> {
        let t = Instant::now();
        let change = self.store.put_file(rel, hash, r.lang, &r.outcome)?;
        self.graph_dirty |= change.added || change.imports_changed;
        let s = &mut self.summary;
        match &r.outcome {
            CodeOutcome::Parsed(p) => {
                s.files_parsed += 1;
                s.symbols_extracted += p.analysis.symbols.len() as u64;
                s.files_with_parse_errors += u64::from(p.analysis.has_errors);
            }
            CodeOutcome::NotParsed(_) => s.files_not_parsed += 1,
        }
        s.files_repaired += u64::from(repaired);
        s.extract_seconds += r.seconds;
        let l = s.languages.entry(r.lang.name().to_string()).or_default();
        l.files += 1;
        l.bytes += r.bytes;
        l.seconds += r.seconds;
        s.store_seconds += t.elapsed().as_secs_f64();
        Ok(())
    }

    /// Notes that a path's content changed, was added or went away: a change to a file import
    /// resolution reads makes the impact graph stale.
    pub fn touched(&mut self, rel: &str) {
        if is_graph_input(rel) {
            self.graph_dirty = true;
        }
    }

    /// Drops a file that is gone or no longer indexed.
    pub fn forget(&mut self, rel: &str) -> Result<()> {
        let t = Instant::now();
        if self.store.remove_file(rel)? {
            self.graph_dirty = true;
            self.summary.files_removed += 1;
        }
        self.summary.store_seconds += t.elapsed().as_secs_f64();
        Ok(())
    }

    /// Commits the store as `generation` (between the Tantivy commit and the manifest write).
    pub fn commit(&mut self, generation: u64) -> Result<()> {
        let t = Instant::now();
        if self.graph_dirty {
            self.store.mark_graph_pending()?;
        }
        self.store.commit(generation, false)?;
        self.summary.store_seconds += t.elapsed().as_secs_f64();
        Ok(())
    }

    /// Ends an update: commits what is pending, records this build's grammar versions once the
    /// store has been brought in step, and rebuilds the impact graph if imports changed.
    /// Returns this update's figures and resets them. Once `stop` is set (a shutdown, or the
    /// client that asked for the run left) the graph is not built or is dropped half-built,
    /// and [`Error::IndexStopped`] says so: the store is committed with its graph-pending mark,
    /// so the graph on disk stays the last one built and the next run (or this session's next
    /// update) builds it, as after a kill between the two.
    pub fn finish(&mut self, generation: u64, stop: &AtomicBool) -> Result<CodeIndexSummary> {
        let t = Instant::now();
        let grammars = self.repair || self.store.created() || self.store.meta().grammars.len() < Lang::ALL.len();
        if self.graph_dirty {
            self.store.mark_graph_pending()?;
        }
        self.store.commit(generation, grammars)?;
        crate::engine::fault::pause_point("before-graph-write");
        self.repair = false;
        self.drifted.clear();
        self.summary.store_seconds += t.elapsed().as_secs_f64();
        if self.graph_dirty {
            let stopped = || Error::IndexStopped { repo: self.repo.root.clone() };
            if stop.load(Ordering::Relaxed) {
                return Err(stopped());
            }
            let t = Instant::now();
            let result = self
                .store
                .all_imports()
                .and_then(|files| graph::rebuild_until(&self.repo, &files, &self.graph_options, stop));
            self.summary.graph_seconds = Some(t.elapsed().as_secs_f64());
            match result.and_then(|()| self.store.graph_written(generation)) {
                Ok(()) => self.graph_dirty = false,
                Err(Error::Cancelled) => return Err(stopped()),
                Err(e) => {
                    tracing::warn!("impact graph rebuild failed: {e}");
                    self.summary.graph_error = Some(e.to_string());
                }
            }
        }
        Ok(std::mem::take(&mut self.summary))
    }
}

impl super::IndexSession {
    /// Sets how the impact graph is built after this session's runs (`[code_intelligence]`).
    pub fn set_graph_options(&mut self, options: graph::GraphOptions) {
        self.graph_options = Some(options.clone());
        if let Some(code) = self.code.as_mut() {
            if let Ok(pass) = code.get_mut() {
                pass.graph_options = options;
            }
        }
    }
}
