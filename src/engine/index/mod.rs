//! Indexing: walk the repo, read what changed, parse code once, chunk it, and
//! write Tantivy and the symbol store.
//!
//! An [`IndexSession`] owns the repo's single writer (an OS lock in
//! `state/locks/`, so two processes never write one index). `docdex index`
//! opens a session for one run; the watcher keeps one open and feeds it the
//! paths that changed. Every run ends in an atomic Tantivy commit followed by
//! an atomic manifest write, so a kill at any point leaves the previous
//! generation searchable and the next run finishes the job.

pub mod chunk;
mod code_pass;
pub mod damage;
pub mod extract;
pub mod files;
pub mod generation;
mod gitconfig;
pub mod gitrules;
pub mod manifest;
pub mod rule_files;
pub mod schema;
pub mod served;
pub mod sources;
pub mod status;
pub mod types;
pub mod walk;

use crate::config::IndexConfig;
use crate::engine::code::{CodeOutcome, Lang};
use crate::engine::fsutil::FileLock;
use crate::engine::repos::RepoRef;
use crate::error::{Error, Result};
use code_pass::{CodePass, CodeResult};
use manifest::{FileEntry, Manifest};
use rayon::prelude::*;
use schema::{CommitPayload, Fields};
use status::StatusFile;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Mutex;
use std::time::Instant;
use tantivy::{Index, IndexWriter, TantivyDocument, Term};
pub use types::ProgressSink;
use types::{IndexProgress, IndexSummary, LastEvent, SkippedFile};

/// Commit (and save the manifest) after this many bytes, so a huge first index
/// keeps its progress if it is interrupted.
const COMMIT_EVERY_BYTES: u64 = 256 * 1024 * 1024;
/// Tantivy writer memory per indexing thread. Smaller arenas flushed mid-run even on a 14 MB
/// repo; larger ones did not measurably help a 186 MB tree (docs/PERFORMANCE.md).
const WRITER_MEMORY_PER_THREAD: usize = 48 * 1024 * 1024;
/// Bytes sniffed for NUL to decide a file is binary.
use crate::engine::fsutil::BINARY_SNIFF;

/// What a run should look at.
#[derive(Debug, Clone)]
pub enum Scope {
    /// The whole repository.
    Full,
    /// Only these absolute paths (files or directories; deleted ones included).
    Paths(Vec<PathBuf>),
}

/// What every batch of one index run shares: its progress, where progress goes, when it
/// started, and the flag that stops it.
struct Run<'a> {
    progress: &'a Progress,
    sink: &'a dyn ProgressSink,
    started: Instant,
    stop: &'a AtomicBool,
}

/// How one pass over a list of files is cut and read.
#[derive(Clone, Copy)]
struct Batching {
    /// Bytes read before the first commit.
    first: u64,
    /// Whether files the code pass knows are parsed now (else indexed as text, parsed later).
    parse: bool,
}

/// What one run must do, decided before anything is written.
struct Plan {
    /// New and changed files to read and index.
    todo: Vec<walk::Candidate>,
    /// Manifest paths the walk no longer found.
    deleted: Vec<String>,
    /// Files the text index has whose symbols must be re-extracted.
    repair: Vec<walk::Candidate>,
    /// Indexed files found unchanged (size and mtime match the manifest).
    unchanged: u64,
    /// Entries the walk passed over (binary, too large, symlinks, unreadable).
    issues: Vec<walk::WalkIssue>,
    /// Registered sources whose folder is gone, one warning each (their files are kept).
    missing: Vec<String>,
}

/// An open writer on one repo's index.
pub struct IndexSession {
    /// The repo, with `data_dir` the generation this session writes (`gen.next/` while a new
    /// generation is built beside the live one).
    repo: RepoRef,
    cfg: IndexConfig,
    index: Index,
    /// Created on first need, so a run that finds nothing to do costs no writer threads or arenas.
    writer: Option<IndexWriter>,
    fields: Fields,
    manifest: Manifest,
    generation: u64,
    rebuilt: bool,
    /// Building a new generation beside the live one; the next update switches to it when done.
    staging: Option<Staging>,
    /// A failed build of a new generation; the session can do nothing more.
    broken: Option<String>,
    /// A merge of the fresh index's segments is under way (see [`Self::start_compaction`]).
    compacting: bool,
    /// The manifest lags the index (a run died between commit and manifest write), so
    /// any path may have chunks the manifest does not know about.
    manifest_behind: bool,
    /// The pid of a run an earlier process left unfinished, until this session's first
    /// complete run (which finishes its work) reports it.
    resumed: Option<u32>,
    /// Manifest entries changed that need no index commit (a file touched but not changed, a
    /// file newly skipped): saved at the end of a run that commits nothing, so the next run
    /// does not read those files again.
    manifest_dirty: bool,
    /// Bytes this run read from disk (what the summary reports: a file skipped for its size
    /// before any read, or found binary by its first bytes, counts what was read of it).
    bytes_read: AtomicU64,
    status: StatusFile,
    /// The symbol store's writer; `None` when the code pass is off (plain-index benchmarks).
    /// Behind a mutex only because `process` runs on rayon threads through `&self`; it is
    /// touched from the session's own thread.
    code: Option<Mutex<CodePass>>,
    with_code: bool,
    graph_options: Option<crate::engine::code::graph::GraphOptions>,
    /// Registered source folders (`sources.json`), reloaded at each run.
    sources: Vec<sources::Source>,
    /// The root directory's identity when the session opened: a root deleted, moved away or
    /// replaced under a run must not read as every file deleted.
    root_identity: Option<(u64, u64)>,
    _lock: FileLock,
}

/// Why and from which generation a new one is being built.
#[derive(Debug, Clone)]
struct Staging {
    reason: String,
    /// The live generation's number (0 when it could not be read): the searchable one until
    /// the switch.
    live_generation: u64,
}

/// Fails before a run touches anything when the repository's state (its directory, the live
/// generation's directories and stores) is read-only: such a run used to take the read-only
/// symbol store for a damaged one, try to delete it and fail with `removing symbols.db:
/// Permission denied`.
fn check_state_writable(repo: &RepoRef) -> Result<()> {
    let live = repo.with_data_dir(repo.state_dir.join(generation::LIVE));
    let data = live.data_dir();
    let mut paths = vec![repo.state_dir.clone(), repo.status_path(), data.clone(), live.index_dir()];
    for file in ["symbols.db", "symbols.db-wal", "symbols.db-shm", "vectors.db", "manifest.json"] {
        paths.push(data.join(file));
    }
    match crate::engine::fsutil::first_unwritable(&paths) {
        None => Ok(()),
        Some((path, e)) => {
            let what = match path == repo.state_dir {
                true => e.to_string(),
                false => format!("{} cannot be written ({e})", path.display()),
            };
            let reason = format!("{what}, so {} cannot be indexed; nothing was changed", repo.root.display());
            Err(Error::StateNotWritable { path: repo.state_dir.clone(), reason })
        }
    }
}

impl IndexSession {
    /// Takes the writer lock (failing with [`Error::IndexBusy`] if another process has it)
    /// and opens or creates the index and the symbol store.
    pub fn open(repo: &RepoRef, locks_dir: &Path, cfg: &IndexConfig, rebuild: bool) -> Result<Self> {
        Self::open_with(repo, locks_dir, cfg, rebuild, true)
    }

    /// [`Self::open`], choosing whether the code pass (Tree-sitter symbols, AST, imports) runs.
    /// Without it the index is plain text, as benchmarks compare.
    ///
    /// The live generation is opened for incremental updates; with `rebuild`, or when it was
    /// built under another schema, cannot be opened, or was found damaged, a new generation is
    /// started beside it and the live one stays searchable until the new one is complete.
    pub fn open_with(repo: &RepoRef, locks_dir: &Path, cfg: &IndexConfig, rebuild: bool, code: bool) -> Result<Self> {
        let lock_path = locks_dir.join(format!("{}.writer.lock", repo.fingerprint));
        let lock = FileLock::try_acquire(&lock_path)?
            .ok_or_else(|| Error::IndexBusy { repo: repo.root.clone(), pid: FileLock::holder_pid(&lock_path) })?;
        // Whatever fails from here on is this run's failure: status must say so.
        Self::open_locked(repo, cfg, rebuild, code, lock).inspect_err(|e| {
            StatusFile::new(repo.status_path()).finish_err(&e.to_string());
        })
    }

    fn open_locked(repo: &RepoRef, cfg: &IndexConfig, rebuild: bool, code: bool, lock: FileLock) -> Result<Self> {
        check_state_writable(repo)?;
        generation::migrate_legacy(&repo.state_dir)?;
        generation::recover(&repo.state_dir)?;
        let status = StatusFile::new(repo.status_path());
        let WriteTarget { index, fields, created, repo: write_repo, staging } = WriteTarget::open(repo, rebuild)?;
        let manifest = if created {
            Manifest::load(Path::new("/nonexistent"))
        } else {
            Manifest::load(&write_repo.manifest_path())
        };
        let generation = match &staging {
            // Generations keep counting across rebuilds, so a number names one generation.
            Some(s) => s.live_generation,
            None => schema::read_payload(&index).generation,
        };
        let manifest_behind = !created && manifest.generation != generation;
        if manifest_behind {
            tracing::info!(index = generation, manifest = manifest.generation, "manifest lags the index; repairing");
        }
        let code_pass = match code {
            true => match CodePass::open(&write_repo, created, generation) {
                Ok(c) => Some(Mutex::new(c)),
                Err(e) if staging.is_some() => {
                    generation::discard_next(&repo.state_dir);
                    return Err(disk_full_or(e, repo, Some(generation)));
                }
                Err(e) => return Err(disk_full_or(e, repo, Some(generation))),
            },
            false => None,
        };
        Ok(IndexSession {
            repo: write_repo,
            cfg: cfg.clone(),
            index,
            writer: None,
            fields,
            manifest,
            generation,
            rebuilt: created,
            staging,
            broken: None,
            compacting: false,
            manifest_behind,
            manifest_dirty: false,
            bytes_read: AtomicU64::new(0),
            resumed: status.interrupted_run(),
            status,
            code: code_pass,
            with_code: code,
            graph_options: None,
            sources: sources::load_indexable(&repo.state_dir),
            root_identity: crate::engine::fsutil::dir_identity(&repo.root),
            _lock: lock,
        })
    }

    /// The repo as this session writes it; after an update, its live generation.
    pub fn repo(&self) -> &RepoRef {
        &self.repo
    }

    /// Whether this session is building a new generation beside the live one, and why.
    pub fn rebuilding(&self) -> Option<&str> {
        self.staging.as_ref().map(|s| s.reason.as_str())
    }

    /// Checks that every segment of the live index opens and, with `checksums`, every file
    /// against the checksum Tantivy keeps in its footer. A damaged index is not repaired in
    /// place: a new generation is started beside it (the next update builds and switches to
    /// it). Returns what was found damaged.
    pub fn verify(&mut self, checksums: bool) -> Result<Option<String>> {
        if self.staging.is_some() || self.rebuilt {
            return Ok(None);
        }
        let t = Instant::now();
        let found = damage::check(&self.index, checksums);
        tracing::debug!(checksums, ms = t.elapsed().as_secs_f64() * 1e3, "index verified");
        let Some(why) = found else { return Ok(None) };
        tracing::warn!(repo = %self.repo.root.display(), "index damaged: {why}");
        self.restart_as_new_generation(format!("the index was found damaged ({why})"))?;
        Ok(Some(why))
    }

    /// Drops what this session has open on the live generation and starts a new one beside it.
    fn restart_as_new_generation(&mut self, reason: String) -> Result<()> {
        self.writer = None;
        self.code = None;
        let live_generation = self.generation;
        let (next, index, fields) = start_next(&self.repo, live_generation)?;
        self.code = match self.with_code {
            true => match CodePass::open(&next, true, live_generation) {
                Ok(c) => Some(Mutex::new(c)),
                Err(e) => {
                    generation::discard_next(&self.repo.state_dir);
                    self.broken = Some(format!("starting a new generation failed: {e}"));
                    return Err(disk_full_or(e, &self.repo, Some(live_generation)));
                }
            },
            false => None,
        };
        self.index = index;
        self.fields = fields;
        self.repo = next;
        self.manifest = Manifest::load(Path::new("/nonexistent"));
        self.manifest_behind = false;
        self.manifest_dirty = false;
        self.rebuilt = true;
        self.staging = Some(Staging { reason, live_generation });
        if let Some(o) = self.graph_options.clone() {
            self.set_graph_options(o);
        }
        Ok(())
    }

    /// Forgets what a failed run changed in memory (uncommitted documents, symbol rows, manifest
    /// entries) and takes the last committed state from disk again, so the next run redoes it.
    fn reload_committed(&mut self) -> Result<()> {
        self.writer = None;
        self.code = None;
        self.compacting = false;
        self.generation = schema::read_payload(&self.index).generation;
        self.manifest = Manifest::load(&self.repo.manifest_path());
        self.manifest_behind = self.manifest.generation != self.generation;
        self.manifest_dirty = false;
        if self.with_code {
            self.code = Some(Mutex::new(CodePass::open(&self.repo, false, self.generation)?));
            if let Some(o) = self.graph_options.clone() {
                self.set_graph_options(o);
            }
        }
        Ok(())
    }

    /// Makes the finished new generation live: waits for its merges, closes it, switches the
    /// directories atomically, then reopens the session on the live generation.
    fn switch_generation(&mut self) -> Result<()> {
        let Some(staging) = self.staging.take() else { return Ok(()) };
        let dir = self.repo.index_dir();
        if let Some(w) = self.writer.take() {
            w.wait_merging_threads().map_err(|e| Error::Index { path: dir.clone(), message: e.to_string() })?;
        }
        self.compacting = false;
        self.code = None; // closes symbols.db, checkpointing its WAL into the file
        crate::engine::fault::pause_point("before-generation-switch");
        generation::switch(&self.repo.state_dir)?;
        damage::clear_marker(&self.repo.state_dir);
        let live = self.repo.with_data_dir(self.repo.state_dir.join(generation::LIVE));
        let (index, fields) = schema::open(&live.index_dir())?;
        self.code =
            if self.with_code { Some(Mutex::new(CodePass::open(&live, false, self.generation)?)) } else { None };
        if let Some(o) = self.graph_options.clone() {
            self.set_graph_options(o);
        }
        self.index = index;
        self.fields = fields;
        self.repo = live;
        tracing::info!(
            repo = %self.repo.root.display(),
            generation = self.generation,
            replaced = staging.live_generation,
            reason = %staging.reason,
            "new generation live"
        );
        Ok(())
    }

    /// The code pass, from the session's own thread.
    fn code_mut(&mut self) -> Option<&mut CodePass> {
        self.code.as_mut().map(|m| m.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }

    /// The open writer (after [`Self::ensure_writer`]).
    fn writer(&self) -> Result<&IndexWriter> {
        self.writer
            .as_ref()
            .ok_or_else(|| Error::Index { path: self.repo.index_dir(), message: "index writer is not open".into() })
    }

    /// Opens the Tantivy writer if it is not open yet.
    fn ensure_writer(&mut self) -> Result<()> {
        if self.writer.is_none() {
            let threads = thread_count(&self.cfg);
            let w = self
                .index
                .writer_with_num_threads(threads, WRITER_MEMORY_PER_THREAD * threads)
                .map_err(|e| Error::Index { path: self.repo.index_dir(), message: e.to_string() })?;
            // A fresh index is merged into one segment at its end; a background merge of some
            // of its segments meanwhile would make that merge fail (its segments gone).
            if self.rebuilt && !self.compacting {
                w.set_merge_policy(Box::new(tantivy::merge_policy::NoMergePolicy));
            }
            self.writer = Some(w);
        }
        Ok(())
    }

    /// The manifest as of the last commit.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The status file this session maintains.
    pub fn status(&self) -> &StatusFile {
        &self.status
    }

    /// Brings the index up to date for `scope`. While a new generation is being built, the
    /// scope is the whole repository and the run ends by switching to it.
    pub fn update(&mut self, scope: &Scope, sink: &dyn ProgressSink) -> Result<IndexSummary> {
        self.update_until(scope, sink, &AtomicBool::new(false))
    }

    /// [`Self::update`], ending early with [`Error::IndexStopped`] once `stop` is set (a server
    /// shutting down): the batch being read is dropped, what was committed stays, and the next
    /// run goes on from there, as after a kill.
    pub fn update_until(&mut self, scope: &Scope, sink: &dyn ProgressSink, stop: &AtomicBool) -> Result<IndexSummary> {
        let paths = match scope {
            Scope::Full => None,
            Scope::Paths(p) => Some(p.len()),
        };
        let _span = tracing::info_span!("index_run", repo = %self.repo.root.display(), paths).entered();
        self.bytes_read.store(0, Ordering::Relaxed);
        if let Some(why) = &self.broken {
            return Err(Error::Index { path: self.repo.state_dir.clone(), message: why.clone() });
        }
        let started = Instant::now();
        let scope = if self.staging.is_some() { &Scope::Full } else { scope };
        self.status.begin(&IndexProgress { phase: "walking".into(), ..Default::default() });
        self.status.rebuilding(self.staging.as_ref().map(|s| s.live_generation));
        let result = self.update_inner(scope, sink, started, stop).and_then(|summary| {
            self.switch_generation()?;
            // The next run of this session (a watcher's) updates a live index.
            self.rebuilt = false;
            // Only this session's first complete run finished the interrupted one's work.
            Ok(IndexSummary { resumed: self.resumed.take(), ..summary })
        });
        let result = result.map_err(|e| self.failed(e));
        match &result {
            Ok(s) => {
                tracing::info!(
                    files = s.files,
                    added = s.added,
                    updated = s.updated,
                    deleted = s.deleted,
                    seconds = s.seconds,
                    "index run done"
                );
                self.status.finish_ok(s)
            }
            Err(Error::IndexStopped { .. }) => {
                tracing::info!("index run stopped (a shutdown, or the client that asked for it left)");
                self.status.finish_stopped()
            }
            Err(e) => {
                tracing::warn!("index run failed: {e}");
                self.status.finish_err(&e.to_string())
            }
        }
        result
    }

    /// What a failed run leaves: a half-built new generation is deleted (it may be what filled
    /// the disk) and the live one is untouched; a full disk becomes [`Error::DiskFull`], saying
    /// which generation stays searchable.
    fn failed(&mut self, e: Error) -> Error {
        let staging = self.staging.clone();
        if staging.is_some() {
            self.writer = None;
            self.code = None;
            generation::discard_next(&self.repo.state_dir);
            self.broken = Some(format!("building a new generation failed: {e}"));
        } else if let Err(again) = self.reload_committed() {
            self.broken = Some(format!("after a failed run ({e}), reopening the index failed: {again}"));
        }
        let live = match &staging {
            Some(s) => s.live_generation,
            None => self.generation,
        };
        disk_full_or(e, &self.repo, Some(live))
    }

    /// One run: plan it from the walk and the manifest, write the deletions and the walk's
    /// issues, index the changed files in committed batches, then sum it up.
    fn update_inner(
        &mut self,
        scope: &Scope,
        sink: &dyn ProgressSink,
        started: Instant,
        stop: &AtomicBool,
    ) -> Result<IndexSummary> {
        let plan = self.plan(scope, started)?;
        let capped = |c: &walk::Candidate| c.size.min(self.cfg.max_file_size_bytes);
        let bytes_total: u64 = plan.todo.iter().chain(&plan.repair).map(capped).sum();
        // Files a run cut short left searchable as text only need their parse, not a text pass.
        let new_text: u64 = plan.todo.iter().filter(|c| !self.awaits_parse(&c.rel)).map(capped).sum();
        let text_first = self.text_first(new_text);
        // A text-first run reads the files it parses twice: its text pass counts the files it
        // reads as text, and the parse pass ([`Progress::start_parsing`]) counts its own from 0
        // (the two were one sum, 63,522 "files" for a tree of 46,266).
        let progress = match text_first {
            true => {
                let text = plan.todo.iter().filter(|c| !self.awaits_parse(&c.rel));
                let (n, b) = text.fold((0, 0), |(n, b), c| (n + 1, b + capped(c)));
                Progress::new(n, b)
            }
            false => Progress::new((plan.todo.len() + plan.repair.len()) as u64, bytes_total),
        };
        let mut summary =
            IndexSummary { repo: self.repo.root.clone(), unchanged: plan.unchanged, ..Default::default() };
        let free = crate::engine::fsutil::available_bytes(&self.repo.state_dir);
        if let Some(w) = disk_warning(bytes_total, free, &self.repo.state_dir) {
            // The summary carries it to every surface; a log line too would print it twice.
            tracing::debug!("{w}");
            summary.warnings.push(w);
        }
        summary.warnings.extend(plan.missing.iter().cloned());

        let issue_deletes =
            plan.issues.iter().any(|i| self.manifest.files.get(&i.rel).is_some_and(|e| e.skipped.is_none()));
        if !plan.todo.is_empty() || !plan.deleted.is_empty() || issue_deletes {
            self.ensure_writer()?;
        }
        // Hashes of vanished files, read before their entries go: a new file with one is a rename.
        let mut renames_left = self.hashes_of(&plan.deleted);
        // Removals from the index: a file it skipped (binary, too large) was never in it.
        let was_indexed = |p: &&String| self.manifest.files.get(*p).is_none_or(|e| e.skipped.is_none());
        summary.deleted = plan.deleted.iter().filter(was_indexed).count() as u64;
        let mut changed = self.remove_deleted(&plan.deleted)?;
        changed |= self.record_walk_issues(&plan.issues, &mut summary)?;

        let run = Run { progress: &progress, sink, started, stop };
        self.index_files(&plan, text_first, &run, &mut summary, &mut renames_left, changed)?;
        if self.generation == 0 && self.staging.is_none() && matches!(scope, Scope::Full) {
            // Nothing to index (an empty repository, or every file ignored): commit an empty
            // first generation anyway. Without one every surface said "not indexed yet; run
            // `docdex index`" however often it was indexed.
            self.ensure_writer()?;
            self.commit_counted(sink, &progress, &mut summary, started)?;
        }
        self.save_manifest_if_dirty()?;
        self.start_compaction();
        let generation = self.generation;
        summary.code = match self.code_mut() {
            Some(code) => Some(code.finish(generation, stop)?),
            None => None,
        };
        tracing::debug!(ms = started.elapsed().as_millis() as u64, "committed");
        if matches!(scope, Scope::Full) {
            self.manifest_behind = false;
        }
        self.sum_up(&mut summary, started);
        sink.progress(&IndexProgress { phase: "done".into(), ..progress.snapshot("done") });
        Ok(summary)
    }

    /// What a run must do, from the walk and the manifest, before anything is written: the files
    /// to (re)index, the ones gone, the ones whose symbols alone must be re-extracted.
    /// Fails when the root is no longer the directory the session opened on: a walk of a
    /// vanished root finds nothing, and planning from it would delete every file's entry.
    fn check_root(&self) -> Result<()> {
        let now = crate::engine::fsutil::dir_identity(&self.repo.root);
        if self.root_identity.is_none() || now == self.root_identity {
            return Ok(());
        }
        let what = if now.is_none() { "was deleted or moved away" } else { "was replaced by another directory" };
        Err(Error::Index {
            path: self.repo.root.clone(),
            message: format!("the repository root {what} during the run; its index is kept as it was"),
        })
    }

    fn plan(&mut self, scope: &Scope, started: Instant) -> Result<Plan> {
        let threads = thread_count(&self.cfg);
        let root = self.repo.root.clone();
        self.sources = sources::load_indexable(&self.repo.state_dir);
        let (starts, gone): (Vec<PathBuf>, Vec<String>) = match scope {
            Scope::Full => (vec![root.clone()], Vec::new()),
            Scope::Paths(paths) => {
                let in_repo: Vec<PathBuf> =
                    paths.iter().filter(|p| !self.sources.iter().any(|s| p.starts_with(&s.path))).cloned().collect();
                split_scope(&root, &in_repo)
            }
        };
        let mut walked = match scope {
            Scope::Full => walk::walk(&root, &self.cfg, threads),
            Scope::Paths(_) => walk::walk_paths(&root, &starts, &self.cfg, threads, walk::Globs::default()),
        };
        // Covered key prefixes: every manifest key under one was looked at by this walk.
        let mut prefixes: Vec<String> = starts.iter().map(|s| walk::rel_path(&root, s)).chain(gone).collect();
        // A source whose folder is gone (deleted, moved, unmounted) is not walked, and its files
        // stay indexed as they were: the user may mount it again, or remove the source.
        let (kept, missing): (Vec<String>, Vec<String>) =
            sources::missing(&self.sources, |prefix| self.manifest.entries_under(prefix)).into_iter().unzip();
        for warning in &missing {
            tracing::debug!("{warning}"); // the summary carries it to every surface
        }
        // A root whose ignore files must not be read was not walked: its files are not gone.
        if let Some(why) = walked.refused_root.take() {
            return Err(Error::BadRequest(format!("{why}; its index is kept as it was")));
        }
        self.walk_sources(scope, threads, &mut walked, &mut prefixes)?;
        tracing::debug!(files = walked.files.len(), ms = started.elapsed().as_millis() as u64, "walk done");
        self.check_root()?;

        // What the walk covered: every manifest path under a walked start, or under a vanished
        // path (for a full walk, everything: the files of a removed source go too).
        // Looked up by each key's folders (a set), not compared with every start: a batch of
        // 10,000 paths in a 20,000-file repository took 11 s comparing each with each.
        let starts: HashSet<&str> = prefixes.iter().map(String::as_str).collect();
        let covered = |rel: &str| match scope {
            _ if kept.iter().any(|k| rel.starts_with(k.as_str())) => false,
            Scope::Full => true,
            // The repo root covers the repo's paths, not the sources' keys.
            Scope::Paths(_) if starts.contains("") && !rel.starts_with(sources::PREFIX) => true,
            Scope::Paths(_) => {
                starts.contains(rel)
                    || rel.match_indices('/').any(|(i, _)| i > 0 && !rel[..i].is_empty() && starts.contains(&rel[..i]))
            }
        };
        let seen: HashSet<&str> =
            walked.files.iter().map(|c| c.rel.as_str()).chain(walked.issues.iter().map(|i| i.rel.as_str())).collect();
        let deleted: Vec<String> =
            self.manifest.files.keys().filter(|p| covered(p) && !seen.contains(p.as_str())).cloned().collect();

        let (mut todo, unchanged) = self.changed(&walked.files);
        // Files of a known language first (in path order still): a first index goes live at its
        // first commit, which should hold code and docs rather than the binaries and data files
        // an unknown extension mostly means (`.pyc`, `.so`, images).
        todo.sort_by_key(|c| files::language(Path::new(&c.rel)) == "text");

        // Files whose symbols must be re-extracted though the text index has them.
        let busy: HashSet<&str> =
            todo.iter().map(|c| c.rel.as_str()).chain(deleted.iter().map(String::as_str)).collect();
        let manifest = &self.manifest;
        let repair = match self.code.as_mut() {
            Some(m) => m.get_mut().unwrap_or_else(|p| p.into_inner()).plan_repair(manifest, &root, &busy)?,
            None => Vec::new(),
        };
        drop(busy);
        drop(seen);
        Ok(Plan { todo, deleted, repair, unchanged, issues: walked.issues, missing })
    }

    /// Walks every source folder that is present under `scope`, adding its files and issues
    /// (under their source keys) to `walked`, and the key prefixes it looked at to `prefixes`.
    fn walk_sources(
        &self,
        scope: &Scope,
        threads: usize,
        walked: &mut walk::WalkOutput,
        prefixes: &mut Vec<String>,
    ) -> Result<()> {
        for src in self.sources.iter().filter(|s| !sources::is_missing(s)) {
            let globs = walk::Globs { include: &src.include, exclude: &src.exclude };
            let (src_starts, src_gone) = match scope {
                Scope::Full => (vec![src.path.clone()], Vec::new()),
                Scope::Paths(paths) => split_scope(&src.path, paths),
            };
            if src_starts.is_empty() && src_gone.is_empty() {
                continue;
            }
            let mut w = match scope {
                Scope::Full => walk::walk_with(&src.path, &self.cfg, threads, globs),
                Scope::Paths(_) => walk::walk_paths(&src.path, &src_starts, &self.cfg, threads, globs),
            };
            if let Some(why) = w.refused_root.take() {
                return Err(Error::BadRequest(format!("source {}: {why}; the index is kept as it was", src.name)));
            }
            let prefix = |rel: &str| match rel {
                "" => format!("{}{}", sources::PREFIX, src.name),
                rel => sources::key(&src.name, rel),
            };
            prefixes.extend(src_starts.iter().map(|s| prefix(&walk::rel_path(&src.path, s))));
            prefixes.extend(src_gone.iter().map(|g| prefix(g)));
            walked
                .files
                .extend(w.files.drain(..).map(|c| walk::Candidate { rel: sources::key(&src.name, &c.rel), ..c }));
            walked.issues.extend(
                w.issues
                    .drain(..)
                    .filter(|i| !i.rel.is_empty() && !Path::new(&i.rel).is_absolute())
                    .map(|i| walk::WalkIssue { rel: sources::key(&src.name, &i.rel), ..i }),
            );
        }
        Ok(())
    }

    /// The walked files that are new or changed since the manifest (size or mtime differ, or the
    /// last run failed on them), and how many indexed files are unchanged.
    fn changed(&self, files: &[walk::Candidate]) -> (Vec<walk::Candidate>, u64) {
        let mut todo = Vec::new();
        let mut unchanged = 0u64;
        for c in files {
            match self.manifest.files.get(&c.rel) {
                Some(e)
                    if !e.error
                        && !e.text_only
                        && e.size == c.size
                        && e.mtime_ns == c.mtime_ns
                        && e.ctime_ns == c.ctime_ns
                        && !e.extracted_by_older(&c.rel) =>
                {
                    // A file skipped before and untouched since is listed as skipped, not counted here.
                    unchanged += u64::from(e.skipped.is_none());
                }
                _ => todo.push(c.clone()),
            }
        }
        (todo, unchanged)
    }

    /// How many vanished files had each content hash (for counting renames).
    fn hashes_of(&self, deleted: &[String]) -> HashMap<u64, usize> {
        deleted.iter().filter_map(|p| self.manifest.files.get(p)).filter(|e| e.hash != 0).fold(
            HashMap::new(),
            |mut m, e| {
                *m.entry(e.hash).or_default() += 1;
                m
            },
        )
    }

    /// Deletes the chunks, symbols and manifest entries of vanished paths; true when any went.
    fn remove_deleted(&mut self, deleted: &[String]) -> Result<bool> {
        for p in deleted {
            self.writer()?.delete_term(Term::from_field_text(self.fields.path, p));
            if let Some(code) = self.code_mut() {
                code.forget(p)?;
                code.touched(p);
            }
            self.manifest.files.remove(p);
            self.forget_extracted(p);
            self.status.event(LastEvent {
                kind: "delete".into(),
                path: p.clone(),
                at: crate::engine::fsutil::now_ms(),
            });
        }
        Ok(!deleted.is_empty())
    }

    /// Walk issues become manifest entries, and whatever was indexed under those paths goes;
    /// true when something indexed went. An issue the manifest did not hold yet goes into the
    /// summary as this run's.
    fn record_walk_issues(&mut self, issues: &[walk::WalkIssue], s: &mut IndexSummary) -> Result<bool> {
        let mut changed = false;
        for issue in issues {
            if issue.rel.is_empty() {
                continue;
            }
            let known = self.manifest.files.get(&issue.rel).and_then(|e| e.skipped.as_deref());
            if !issue.error && known != Some(issue.reason.as_str()) {
                s.skipped.push(SkippedFile { path: issue.rel.clone(), reason: issue.reason.clone(), this_run: true });
                self.manifest_dirty = true;
            }
            if self.manifest.files.get(&issue.rel).is_some_and(|e| e.skipped.is_none()) {
                self.forget_extracted(&issue.rel);
                self.writer()?.delete_term(Term::from_field_text(self.fields.path, &issue.rel));
                if let Some(code) = self.code_mut() {
                    code.forget(&issue.rel)?;
                }
                // Its chunks left the index (a file replaced by a symlink): a removal.
                s.deleted += 1;
                changed = true;
            }
            match issue.error {
                true => self.note_error(issue.rel.clone(), issue.reason.clone()),
                false => {
                    let entry = FileEntry::not_indexed(issue.reason.clone(), false, 0, 0);
                    self.manifest.files.insert(issue.rel.clone(), entry);
                }
            }
        }
        Ok(changed)
    }

    /// Records a file this run could not read. A new or changed reason is saved even when
    /// nothing else changed: without it, a file (or folder) that became unreadable was named
    /// by that run's summary only, never by `docdex status`.
    fn note_error(&mut self, rel: String, reason: String) {
        let known = self.manifest.files.get(&rel).is_some_and(|e| e.error && e.skipped.as_deref() == Some(&reason));
        self.manifest_dirty |= !known;
        self.manifest.files.insert(rel, FileEntry::not_indexed(reason, true, 0, 0));
    }

    /// Reads, parses and indexes the planned files in parallel, committing every
    /// [`COMMIT_EVERY_BYTES`], then re-extracts the symbols of the files to repair; a ticker
    /// thread reports progress meanwhile. `changed` says an earlier step already wrote. With
    /// `text_first`, every file is indexed as text and committed first, and the files the code
    /// pass knows are then parsed and indexed again, so the whole tree answers searches long
    /// before its symbols are done.
    #[allow(clippy::too_many_arguments)]
    fn index_files(
        &mut self,
        plan: &Plan,
        text_first: bool,
        run: &Run<'_>,
        summary: &mut IndexSummary,
        renames_left: &mut HashMap<u64, usize>,
        changed: bool,
    ) -> Result<()> {
        let (progress, sink, started) = (run.progress, run.sink, run.started);
        let status = self.status.clone();
        let (stop_ticker, ticker_stopped) = std::sync::mpsc::channel::<()>();
        std::thread::scope(|s| {
            s.spawn(move || loop {
                let snap = progress.snapshot(progress.stage());
                status.progress(&snap);
                sink.progress(&snap);
                // Wakes at once when the sender goes, so the scope's join never waits out a tick.
                if ticker_stopped.recv_timeout(std::time::Duration::from_millis(100)) != Err(RecvTimeoutError::Timeout)
                {
                    break;
                }
            });
            // Dropped however this closure ends, panics included, which stops the ticker.
            let _stop_ticker = stop_ticker;
            // A first index goes live at its first commit: make that one early, so search
            // answers within seconds on a large tree. (A rebuild beside a live generation
            // switches at its end; an early commit would only cost it time.)
            let first = match self.rebuilt && self.staging.is_none() {
                true => self.cfg.first_commit_bytes.max(1),
                false => COMMIT_EVERY_BYTES,
            };
            let batch = Batching { first, parse: !text_first };
            match text_first {
                true => {
                    let text: Vec<walk::Candidate> =
                        plan.todo.iter().filter(|c| !self.awaits_parse(&c.rel)).cloned().collect();
                    self.index_in_batches(&text, batch, run, summary, renames_left, changed)?
                }
                false => self.index_in_batches(&plan.todo, batch, run, summary, renames_left, changed)?,
            }
            if summary.commits > 0 {
                summary.searchable_seconds = started.elapsed().as_secs_f64();
            }
            if text_first {
                summary.text_first = true;
                let pending: Vec<walk::Candidate> =
                    plan.todo.iter().filter(|c| self.awaits_parse(&c.rel)).cloned().collect();
                let capped = |c: &walk::Candidate| c.size.min(self.cfg.max_file_size_bytes);
                let parse_files = (pending.len() + plan.repair.len()) as u64;
                progress.start_parsing(parse_files, pending.iter().chain(&plan.repair).map(capped).sum());
                let snap = progress.snapshot(progress.stage());
                self.status.phase(&snap);
                sink.progress(&snap);
                crate::engine::fault::pause_point("after-text-pass");
                tracing::debug!(files = pending.len(), ms = started.elapsed().as_millis() as u64, "text pass live");
                let batch = Batching { first: COMMIT_EVERY_BYTES, parse: true };
                self.index_in_batches(&pending, batch, run, summary, renames_left, false)?;
            }
            self.repair_symbols(&plan.repair, run)
        })
    }

    /// Symbols only for `repair`: the text index already has these files. A stop leaves them
    /// unrecorded: the store stays out of step and the next run repairs it.
    fn repair_symbols(&mut self, repair: &[walk::Candidate], run: &Run<'_>) -> Result<()> {
        let progress = run.progress;
        let repaired: Vec<(String, Option<(u64, CodeResult)>)> = repair
            .par_iter()
            .map(|c| {
                if run.stop.load(Ordering::Relaxed) {
                    return (c.rel.clone(), None);
                }
                let r = self.extract_only(c);
                progress.done(c.size.min(self.cfg.max_file_size_bytes));
                (c.rel.clone(), r)
            })
            .collect();
        if run.stop.load(Ordering::Relaxed) {
            return Err(Error::IndexStopped { repo: self.repo.root.clone() });
        }
        for (rel, result) in repaired {
            if let (Some((hash, r)), Some(code)) = (result, self.code_mut()) {
                code.record(&rel, hash, &r, true)?;
            }
        }
        Ok(())
    }

    /// Indexes `files` in parallel, one batch at a time, committing after each batch that
    /// changed the index (the first batch ends at `batch.first` bytes, the rest at
    /// [`COMMIT_EVERY_BYTES`]).
    fn index_in_batches(
        &mut self,
        files: &[walk::Candidate],
        batch: Batching,
        run: &Run<'_>,
        summary: &mut IndexSummary,
        renames_left: &mut HashMap<u64, usize>,
        mut changed: bool,
    ) -> Result<()> {
        let (progress, sink, started) = (run.progress, run.sink, run.started);
        let steps = batches(files, batch.first, COMMIT_EVERY_BYTES);
        let last = steps.len().saturating_sub(1);
        for (b, step) in steps.into_iter().enumerate() {
            let outcomes: Vec<(String, Option<Outcome>)> = step
                .par_iter()
                .map(|c| {
                    if run.stop.load(Ordering::Relaxed) {
                        return (c.rel.clone(), None);
                    }
                    let o = self.process(c, batch.parse);
                    progress.done(c.size.min(self.cfg.max_file_size_bytes));
                    (c.rel.clone(), Some(o))
                })
                .collect();
            if run.stop.load(Ordering::Relaxed) {
                // Nothing of this batch is committed: the failure path drops the writer's
                // pending documents and reloads the last commit.
                return Err(Error::IndexStopped { repo: self.repo.root.clone() });
            }
            let outcomes = outcomes.into_iter().filter_map(|(rel, o)| Some((rel, o?)));
            tracing::debug!(files = step.len(), ms = started.elapsed().as_millis() as u64, "batch read and queued");
            for (rel, outcome) in outcomes {
                changed |= self.apply(rel, outcome, summary, renames_left);
            }
            tracing::debug!(ms = started.elapsed().as_millis() as u64, "batch applied");
            if changed {
                let first_of_run = summary.commits == 0;
                self.commit_counted(sink, progress, summary, started)?;
                changed = false;
                if first_of_run && b < last {
                    crate::engine::fault::pause_point("after-first-commit");
                }
            }
        }
        if changed {
            self.commit_counted(sink, progress, summary, started)?;
        }
        Ok(())
    }

    /// Fills in the totals of a finished run: counts, bytes read, generation, skipped files.
    fn sum_up(&self, summary: &mut IndexSummary, started: Instant) {
        let (files, chunks) = self.manifest.counts();
        summary.files = files;
        summary.chunks = chunks;
        summary.bytes_read = self.bytes_read.load(Ordering::Relaxed);
        summary.generation = self.generation;
        summary.rebuilt = self.rebuilt;
        summary.first_index = self.rebuilt && self.staging.is_none();
        // `apply` and `record_walk_issues` listed the files this run skipped anew.
        let this_run: HashSet<String> = summary.skipped.drain(..).map(|f| f.path).collect();
        for (path, e) in &self.manifest.files {
            match not_indexed(path, e, &this_run) {
                Some((true, f)) => summary.errors.push(f),
                Some((false, f)) => summary.skipped.push(f),
                None => {}
            }
        }
        summary.seconds = started.elapsed().as_secs_f64();
    }

    /// Reads, sniffs, hashes and chunks one file, sending its chunks to the writer; with
    /// `parse`, a file of a language the code pass knows is parsed first (its symbols, and
    /// chunks cut at its definitions), else it is chunked as text and marked for the parse.
    fn process(&self, c: &walk::Candidate, parse: bool) -> Outcome {
        let file = match self.read_extracted(c) {
            Ok(file) => file,
            Err(outcome) => return *outcome,
        };
        let ReadFile { text, lang, pages, hash, notes } = file;
        let style = files::chunk_style(lang);
        let parses = self.parses(&c.rel, lang);
        let code = match Lang::from_index_lang(lang) {
            Some(l) if parses && parse => Some(code_pass::analyze(l, &text, &c.rel)),
            _ => None,
        };
        let symbols = match code.as_ref().map(|r| &r.outcome) {
            Some(CodeOutcome::Parsed(p)) => Some(p.analysis.symbols.as_slice()),
            _ => None,
        };
        let chunks = match symbols {
            Some(symbols) => chunk::chunk_code(&text, symbols),
            // A chunk never spans pages, so a hit's page range is the page it is on.
            None if !pages.is_empty() => chunk::chunk_pages(&text, style, &pages),
            None => chunk::chunk(&text, style),
        };
        // Deletes cost a query per segment at commit; only paths that may be indexed need one.
        if self.manifest_behind || self.manifest.files.get(&c.rel).is_some_and(|e| e.skipped.is_none() || e.error) {
            if let Ok(w) = self.writer() {
                w.delete_term(Term::from_field_text(self.fields.path, &c.rel));
            }
        }
        let Ok(writer) = self.writer() else { return Outcome::Error("index writer is not open".into()) };
        // Private key bodies are not index terms (docs/PRIVACY.md); offsets and lines are kept.
        let indexed = crate::engine::privacy::without_key_material(&text);
        let doc = FileDocs {
            fields: &self.fields,
            rel: &c.rel,
            lang,
            class: files::classify_text(&c.rel, lang, &text) as u64,
            file_id: xxhash_rust::xxh3::xxh3_64(c.rel.as_bytes()),
            line_starts: if chunks.iter().any(|c| !c.context.is_empty()) { line_offsets(&text) } else { Vec::new() },
            text: &indexed,
            symbols,
        };
        for ch in &chunks {
            if let Err(e) = writer.add_document(doc.chunk(ch)) {
                return Outcome::Error(format!("index writer: {e}"));
            }
        }
        Outcome::Indexed {
            entry: FileEntry {
                size: c.size,
                mtime_ns: c.mtime_ns,
                ctime_ns: c.ctime_ns,
                hash,
                chunks: chunks.len() as u32,
                lang: lang.to_string(),
                skipped: None,
                error: false,
                text_only: parses && !parse,
                extractor: if extract::Format::of(&c.rel).is_some() { extract::EXTRACTOR_VERSION } else { 0 },
            },
            code,
            notes,
        }
    }

    /// A candidate's text to index (a document's extracted text, kept for snippets), or the
    /// outcome that ends its processing here: skipped, unreadable, or unchanged (touched).
    fn read_extracted(&self, c: &walk::Candidate) -> std::result::Result<ReadFile, Box<Outcome>> {
        let max = self.cfg.max_file_size_bytes;
        let skipped = |reason: String| Box::new(Outcome::Skipped { reason, seen: Seen::of(c) });
        let touched = || Box::new(Outcome::Touched { seen: Seen::of(c) });
        if c.size > max {
            return Err(skipped(format!("too large ({:.1} MB > {:.1} MB limit)", mb(c.size), mb(max))));
        }
        // Documents are binary by nature: only plain text is sniffed for NUL bytes.
        let format = extract::Format::of(&c.rel);
        // A registered source's file is read beneath that source's root, the rest beneath the repo's.
        let Ok((root, rel)) = sources::locate(&self.repo, &self.sources, &c.rel) else {
            return Err(Box::new(Outcome::Error("its source is no longer registered".into())));
        };
        let bytes = match read_text(&root, &rel, c.size, max, format.is_none(), &self.bytes_read) {
            Ok(Read::Text(b)) => b,
            Ok(Read::Binary) => return Err(skipped("binary".into())),
            Ok(Read::TooLarge) => return Err(skipped(format!("too large (> {:.1} MB limit)", mb(max)))),
            Ok(Read::NotRegular(why)) => return Err(skipped(why.into())),
            Err(e) if vanished(&e) => return Err(Box::new(Outcome::Vanished)),
            Err(e) => return Err(Box::new(Outcome::Error(format!("unreadable: {e}")))),
        };
        let Some(fmt) = format else {
            // Valid UTF-8 (nearly every file) is taken as is, without a copy.
            let text = crate::engine::fsutil::decode_text_owned(bytes);
            let hash = xxhash_rust::xxh3::xxh3_64(text.as_bytes());
            if self.unchanged(&c.rel, hash) {
                return Err(touched());
            }
            let lang = files::language(Path::new(&c.rel));
            return Ok(ReadFile { text, lang, pages: Vec::new(), hash, notes: Vec::new() });
        };
        // The extract step: a document's text, hashed, chunked and kept for snippets.
        let doc = extract::extract(fmt, &bytes).map_err(|refusal| skipped(refusal.note(fmt)))?;
        let hash = xxhash_rust::xxh3::xxh3_64(doc.text.as_bytes());
        if self.unchanged(&c.rel, hash) {
            return Err(touched());
        }
        if let Err(e) = extract::store(&self.repo.data_dir(), &c.rel, &doc) {
            return Err(Box::new(Outcome::Error(format!("keeping the extracted text: {e}"))));
        }
        Ok(ReadFile { text: doc.text, lang: fmt.lang(), pages: doc.pages, hash, notes: doc.notes })
    }

    /// Whether the code pass parses `rel`: a language it knows, in the repository itself
    /// (registered sources are indexed as text; the symbol store and graph are the repo's).
    fn parses(&self, rel: &str, lang: &str) -> bool {
        self.code.is_some() && !rel.starts_with(sources::PREFIX) && Lang::from_index_lang(lang).is_some()
    }

    /// Whether this run indexes every new or changed file as text before parsing any: the code
    /// pass is on, the index it writes is live (not a new generation, which switches only at
    /// its end), and more than `[index] first_commit_bytes` of text is to be read (a first
    /// index, its resumption after a stop, a large checkout). Parsing is most of such a run's
    /// time; this way search covers every file after the text pass, and symbols and the graph
    /// follow.
    fn text_first(&self, new_text_bytes: u64) -> bool {
        self.staging.is_none() && self.code.is_some() && new_text_bytes > self.cfg.first_commit_bytes
    }

    /// Whether `rel` is indexed as text and waits for its parse (a text-first run cut short).
    fn awaits_parse(&self, rel: &str) -> bool {
        self.manifest.files.get(rel).is_some_and(|e| e.text_only)
    }

    /// True when the manifest has `rel` indexed with this content hash.
    fn unchanged(&self, rel: &str, hash: u64) -> bool {
        self.manifest
            .files
            .get(rel)
            .is_some_and(|e| e.hash == hash && e.skipped.is_none() && !e.text_only && !e.extracted_by_older(rel))
    }

    /// Drops a document's kept extracted text (it left the index).
    fn forget_extracted(&self, rel: &str) {
        if extract::Format::of(rel).is_some() {
            extract::forget(&self.repo.data_dir(), rel);
        }
    }

    /// The code pass alone, for a file the text index already has (symbol store repair).
    fn extract_only(&self, c: &walk::Candidate) -> Option<(u64, CodeResult)> {
        let lang = Lang::from_path(Path::new(&c.rel))?;
        let bytes =
            match read_text(&self.repo.root, &c.rel, c.size, self.cfg.max_file_size_bytes, true, &self.bytes_read) {
                Ok(Read::Text(b)) => b,
                _ => return None, // gone, unreadable or no longer text now: the next full update sees it
            };
        let text = crate::engine::fsutil::decode_text(&bytes);
        let hash = xxhash_rust::xxh3::xxh3_64(text.as_bytes());
        Some((hash, code_pass::analyze(lang, &text, &c.rel)))
    }

    /// Applies one file's outcome to the manifest; returns whether the index changed.
    fn apply(&mut self, rel: String, o: Outcome, s: &mut IndexSummary, renames: &mut HashMap<u64, usize>) -> bool {
        let previous = self.manifest.files.get(&rel).cloned();
        let was_indexed = previous.as_ref().is_some_and(|e| e.skipped.is_none());
        // A file indexed as text earlier in this run (or a run cut short) now parsed: the same
        // content, so neither a change to count nor an event to report.
        let completes = |hash: u64| previous.as_ref().is_some_and(|e| e.text_only && e.hash == hash);
        if !matches!(o, Outcome::Touched { .. }) {
            if let Some(code) = self.code_mut() {
                code.touched(&rel);
            }
        }
        match o {
            Outcome::Indexed { entry, code, notes } => {
                // A document read in part says so with the run that read it.
                s.warnings.extend(notes.iter().map(|n| format!("{rel}: {n}")));
                if let (Some(r), Some(pass)) = (code, self.code_mut()) {
                    if let Err(e) = pass.record(&rel, entry.hash, &r, false) {
                        tracing::warn!("symbol store: {e}");
                    }
                }
                if completes(entry.hash) {
                    self.manifest.files.insert(rel, entry);
                    return true;
                }
                let kind = if was_indexed { "modify" } else { "create" };
                if was_indexed {
                    s.updated += 1;
                } else {
                    s.added += 1;
                    if let Some(n) = renames.get_mut(&entry.hash).filter(|n| **n > 0) {
                        *n -= 1;
                        s.renamed += 1;
                    }
                }
                self.status.event(LastEvent {
                    kind: kind.into(),
                    path: rel.clone(),
                    at: crate::engine::fsutil::now_ms(),
                });
                self.manifest.files.insert(rel, entry);
                true
            }
            Outcome::Touched { seen } => {
                s.unchanged += 1;
                self.manifest_dirty = true;
                if let Some(e) = self.manifest.files.get_mut(&rel) {
                    (e.size, e.mtime_ns, e.ctime_ns) = (seen.size, seen.mtime_ns, seen.ctime_ns);
                }
                false
            }
            Outcome::Skipped { reason, seen } => {
                s.skipped.push(SkippedFile { path: rel.clone(), reason: reason.clone(), this_run: true });
                self.unindex(&rel, was_indexed, s);
                let entry = FileEntry::not_indexed(reason, false, seen.size, seen.mtime_ns);
                self.manifest.files.insert(rel, FileEntry { ctime_ns: seen.ctime_ns, ..entry });
                self.manifest_dirty = true;
                was_indexed
            }
            Outcome::Error(reason) => {
                self.unindex(&rel, was_indexed, s);
                self.note_error(rel, reason);
                was_indexed
            }
            Outcome::Vanished => {
                s.vanished += 1;
                self.unindex(&rel, was_indexed, s);
                self.manifest_dirty |= self.manifest.files.remove(&rel).is_some();
                was_indexed
            }
        }
    }

    /// Takes a file out of the index (its chunks, symbols and kept text) when it was in it, and
    /// counts that as a removal: a file turned into a symlink, grown past the size limit or
    /// deleted mid-run left the index while the watcher's line said `-0`.
    fn unindex(&mut self, rel: &str, was_indexed: bool, s: &mut IndexSummary) {
        self.forget_extracted(rel);
        if !was_indexed {
            return;
        }
        if let Ok(w) = self.writer() {
            w.delete_term(Term::from_field_text(self.fields.path, rel));
        }
        self.forget_code(rel);
        s.deleted += 1;
        self.status.event(LastEvent {
            kind: "delete".into(),
            path: rel.to_string(),
            at: crate::engine::fsutil::now_ms(),
        });
    }

    /// Drops a file's symbols (it left the index).
    fn forget_code(&mut self, rel: &str) {
        if let Some(pass) = self.code_mut() {
            if let Err(e) = pass.forget(rel) {
                tracing::warn!("symbol store: {e}");
            }
        }
    }

    /// [`Self::commit`], counted and timed in the run's summary.
    fn commit_counted(
        &mut self,
        sink: &dyn ProgressSink,
        progress: &Progress,
        summary: &mut IndexSummary,
        started: Instant,
    ) -> Result<()> {
        let t = Instant::now();
        self.commit(sink, progress)?;
        if summary.commits == 0 {
            summary.first_commit_seconds = started.elapsed().as_secs_f64();
        }
        summary.commits += 1;
        summary.commit_seconds += t.elapsed().as_secs_f64();
        Ok(())
    }

    /// Commits Tantivy with the next generation, then the symbol store, then saves the manifest.
    fn commit(&mut self, sink: &dyn ProgressSink, progress: &Progress) -> Result<()> {
        sink.progress(&progress.snapshot("committing"));
        let next = CommitPayload { generation: self.generation + 1, schema: schema::SCHEMA_VERSION };
        let err = |e: tantivy::TantivyError| Error::Index { path: self.repo.index_dir(), message: e.to_string() };
        let writer = self
            .writer
            .as_mut()
            .ok_or_else(|| Error::Index { path: self.repo.index_dir(), message: "commit without a writer".into() })?;
        let t = Instant::now();
        let mut prepared = writer.prepare_commit().map_err(err)?;
        tracing::debug!(ms = t.elapsed().as_millis() as u64, "tantivy prepare_commit");
        prepared.set_payload(&serde_json::to_string(&next).unwrap_or_default());
        let t = Instant::now();
        prepared.commit().map_err(err)?;
        tracing::debug!(ms = t.elapsed().as_millis() as u64, "tantivy commit");
        self.generation = next.generation;
        if let Some(code) = self.code_mut() {
            let t = Instant::now();
            code.commit(next.generation)?;
            tracing::debug!(ms = t.elapsed().as_millis() as u64, "symbol store commit");
        }
        self.manifest.generation = next.generation;
        self.manifest.save(&self.repo.manifest_path())?;
        self.manifest_dirty = false;
        // Only after a full scope has been applied can every path be trusted again.
        Ok(())
    }

    /// Saves manifest entries a run changed without a commit (see `manifest_dirty`). Only
    /// while the manifest matches the live index: a lagging one, or a generation being built
    /// that has no commit yet, waits for the next commit.
    fn save_manifest_if_dirty(&mut self) -> Result<()> {
        if !self.manifest_dirty || self.manifest_behind || self.staging.is_some() {
            return Ok(());
        }
        if self.manifest.generation != self.generation || self.generation == 0 {
            return Ok(());
        }
        self.manifest.save(&self.repo.manifest_path())?;
        self.manifest_dirty = false;
        Ok(())
    }

    /// After a from-scratch build that left more segments than indexing threads (it spanned
    /// several commits), starts merging them all into one. Every cold `docdex search` process
    /// opens every segment: one segment instead of six cut a whole-process search on a
    /// 30k-file tree by about 3 ms of CPU (docs/PERFORMANCE.md). The merge runs on Tantivy's
    /// merge thread while the code pass finishes; [`Self::finish`] waits for it, and Tantivy
    /// swaps the merged segment in with its own commit (the old segments stay valid until then,
    /// so an interrupted merge loses nothing). A one-commit first index is left alone: there the
    /// merge would only add to the first-index time; one that holds deletes (the text chunks a
    /// text-first run replaced) is merged too. Until then the fresh index's writer merges
    /// nothing by itself: a background merge of some segments would make this one fail.
    fn start_compaction(&mut self) {
        if !self.rebuilt || self.compacting {
            return;
        }
        let Some(writer) = self.writer.as_mut() else { return };
        let metas = self.index.searchable_segment_metas().unwrap_or_default();
        let ids: Vec<tantivy::index::SegmentId> = metas.iter().map(|m| m.id()).collect();
        // Many segments, or the deleted text chunks of a text-first run: merge them away.
        if ids.len() > thread_count(&self.cfg) || metas.iter().any(|m| m.has_deletes()) {
            tracing::debug!(segments = ids.len(), "merging the fresh index into one segment");
            // Not awaited here: `finish` waits for Tantivy's merging threads.
            drop(writer.merge(&ids));
        }
        // Later runs of this session update a live index: Tantivy's own merges again.
        writer.set_merge_policy(Box::<tantivy::merge_policy::LogMergePolicy>::default());
        self.compacting = true;
    }

    /// Lets background merges finish, then releases the writer and lock.
    pub fn finish(self) -> Result<()> {
        let dir = self.repo.index_dir();
        let t = Instant::now();
        let r = match self.writer {
            Some(w) => w.wait_merging_threads().map_err(|e| Error::Index { path: dir, message: e.to_string() }),
            None => Ok(()),
        };
        tracing::debug!(ms = t.elapsed().as_millis() as u64, "merges finished");
        r
    }

    /// The Tantivy index (for tests and the bench).
    pub fn index(&self) -> &Index {
        &self.index
    }
}

/// Where an index run writes: the live generation in place, or a new one staged beside it
/// (a rebuild, a damaged or unusable index) that keeps answering searches until the switch.
struct WriteTarget {
    index: Index,
    fields: Fields,
    /// A new index, or a first one that never committed: everything is added.
    created: bool,
    repo: RepoRef,
    staging: Option<Staging>,
}

impl WriteTarget {
    fn open(repo: &RepoRef, rebuild: bool) -> Result<WriteTarget> {
        let live = repo.with_data_dir(repo.state_dir.join(generation::LIVE));
        let damaged = damage::read_marker(&repo.state_dir);
        let opened = match schema::open_live(&live.index_dir()) {
            schema::Live::Missing => None,
            schema::Live::Usable(index, fields) if !rebuild && damaged.is_none() => Some(Ok((index, fields))),
            schema::Live::Usable(index, _) => {
                let why = match &damaged {
                    Some(d) => format!("the index was found damaged ({d})"),
                    None => "--rebuild".to_string(),
                };
                Some(Err((why, schema::read_payload(&index).generation)))
            }
            schema::Live::Unusable(why) => Some(Err((why, Manifest::load(&live.manifest_path()).generation))),
        };
        Ok(match opened {
            Some(Ok((index, fields))) => {
                // A first index that never committed is still being built from scratch.
                let fresh = index.load_metas().map(|m| m.payload.is_none()).unwrap_or(true);
                WriteTarget { index, fields, created: fresh, repo: live, staging: None }
            }
            // The first index is built in place: there is nothing to keep searchable, and a huge
            // first run keeps its progress across interruptions.
            None => {
                let (index, fields) = schema::create(&live.index_dir()).map_err(|e| disk_full_or(e, repo, None))?;
                WriteTarget { index, fields, created: true, repo: live, staging: None }
            }
            Some(Err((reason, live_generation))) => {
                tracing::info!(%reason, live_generation, "building a new generation beside the live one");
                let (next, index, fields) = start_next(repo, live_generation)?;
                WriteTarget {
                    index,
                    fields,
                    created: true,
                    repo: next,
                    staging: Some(Staging { reason, live_generation }),
                }
            }
        })
    }
}

/// An empty new generation beside the live one (`gen.next/`), or, when that fails, nothing
/// left behind and a full disk said as such.
fn start_next(repo: &RepoRef, live_generation: u64) -> Result<(RepoRef, Index, Fields)> {
    let made = generation::prepare_next(&repo.state_dir).and_then(|dir| {
        let next = repo.with_data_dir(dir);
        schema::create(&next.index_dir()).map(|(index, fields)| (next, index, fields))
    });
    made.map_err(|e| {
        generation::discard_next(&repo.state_dir);
        disk_full_or(e, repo, Some(live_generation))
    })
}

/// `e`, or [`Error::DiskFull`] naming the generation that stays live when `e` is a full disk.
fn disk_full_or(e: Error, repo: &RepoRef, live_generation: Option<u64>) -> Error {
    if matches!(e, Error::DiskFull { .. }) || !(e.is_disk_full() || io_failure_on_a_full_disk(&e, &repo.state_dir)) {
        return e;
    }
    Error::DiskFull {
        repo: repo.root.clone(),
        state_dir: repo.state_dir.clone(),
        detail: e.to_string(),
        kept: live_generation.filter(|g| *g > 0),
    }
}

/// SQLite reports some writes that fail for want of space as a plain "disk I/O error" (the
/// shared-memory file of a WAL database, for one): when the filesystem is indeed (nearly) full,
/// that is what it was.
fn io_failure_on_a_full_disk(e: &Error, state_dir: &Path) -> bool {
    let io = match e {
        Error::Io { .. } => true,
        Error::Index { message, .. } | Error::Database { message, .. } => message.contains("disk I/O error"),
        _ => false,
    };
    io && crate::engine::fsutil::available_bytes(state_dir).is_some_and(|b| b < 1024 * 1024)
}

/// Index bytes a run may write per byte of text it reads: the Tantivy index measured at about
/// 0.2 of the text (docs/PERFORMANCE.md: 2.5 MiB for 13.6 MiB, 37 MiB for 186 MB), doubled for
/// merges that hold old and new segments at once, plus the symbol store and vectors.
const INDEX_BYTES_PER_TEXT_BYTE: f64 = 0.5;
/// A run is only checked for free space past this many bytes to read.
const DISK_CHECK_FROM: u64 = 16 * 1024 * 1024;

/// The free-disk check before a large run: a warning when the estimated index growth exceeds
/// 80 % of the free space on the state directory's filesystem (the run still goes ahead; a
/// disk that does fill ends in [`Error::DiskFull`] with the live generation kept).
fn disk_warning(bytes_to_read: u64, free: Option<u64>, state_dir: &Path) -> Option<String> {
    let free = free?;
    if bytes_to_read < DISK_CHECK_FROM {
        return None;
    }
    let estimate = (bytes_to_read as f64 * INDEX_BYTES_PER_TEXT_BYTE) as u64;
    (estimate as f64 > 0.8 * free as f64).then(|| {
        format!(
            "low disk space: this run may write about {:.0} MB of index, more than 80% of the {:.0} MB free on {}; \
             free space or move the state directory ([core] global_state_dir)",
            mb(estimate),
            mb(free),
            state_dir.display()
        )
    })
}

/// What reading a candidate found.
enum Read {
    Text(Vec<u8>),
    /// A NUL in the first [`BINARY_SNIFF`] bytes (only those were read).
    Binary,
    /// It grew past the size limit since the walk (only the limit and a byte were read).
    TooLarge,
    /// It is no longer a regular file (swapped for a symlink, FIFO, device... since the walk).
    NotRegular(&'static str),
}

/// Reads a file under the walk's policy, whatever happened to it since the walk: no symlink
/// is followed at any component and nothing outside the repo is reached
/// ([`crate::engine::fsutil::open_repo_file`]), a FIFO or device is never waited on, and no
/// more than `max` bytes are read.
fn read_text(root: &Path, rel: &str, size_hint: u64, max: u64, sniff: bool, read: &AtomicU64) -> std::io::Result<Read> {
    use std::io::Read as _;
    let mut f = match crate::engine::fsutil::open_repo_file(root, rel) {
        Ok(f) => f,
        Err(e) if crate::engine::fsutil::is_symlink_refusal(&e) => {
            return Ok(Read::NotRegular("symlink (not followed)"))
        }
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => return Ok(Read::NotRegular("not a regular file")),
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::with_capacity(size_hint.min(max) as usize + 1);
    let counted = |bytes: &[u8]| read.fetch_add(bytes.len() as u64, Ordering::Relaxed);
    (&mut f).take(BINARY_SNIFF as u64).read_to_end(&mut bytes)?;
    if sniff && crate::engine::fsutil::looks_binary(&bytes) {
        counted(&bytes);
        return Ok(Read::Binary);
    }
    let left = (max + 1).saturating_sub(bytes.len() as u64);
    let rest = f.take(left).read_to_end(&mut bytes);
    counted(&bytes);
    rest?;
    if bytes.len() as u64 > max {
        return Ok(Read::TooLarge);
    }
    Ok(Read::Text(bytes))
}

/// A file's text as the index takes it (see [`IndexSession::read_extracted`]).
struct ReadFile {
    text: String,
    lang: &'static str,
    /// Where each page starts (documents with pages), else empty.
    pages: Vec<u32>,
    hash: u64,
    /// What extraction says of a document read in part ([`extract::Extracted::notes`]).
    notes: Vec<String>,
}

/// What every chunk of one file shares in the index: [`FileDocs::chunk`] makes a chunk's document.
struct FileDocs<'a> {
    fields: &'a Fields,
    rel: &'a str,
    lang: &'a str,
    class: u64,
    file_id: u64,
    text: &'a str,
    line_starts: Vec<usize>,
    symbols: Option<&'a [crate::engine::code::Symbol]>,
}

impl FileDocs<'_> {
    /// The Tantivy document of one chunk.
    fn chunk(&self, ch: &chunk::Chunk) -> TantivyDocument {
        let f = self.fields;
        let mut d = TantivyDocument::new();
        d.add_text(f.path_text, self.rel);
        d.add_text(f.path, self.rel);
        d.add_text(f.lang, self.lang);
        d.add_u64(f.class, self.class);
        d.add_text(f.body, &self.text[ch.byte_start..ch.byte_end]);
        d.add_u64(f.file_id, self.file_id);
        d.add_u64(f.line_start, ch.line_start as u64);
        d.add_u64(f.line_end, ch.line_end as u64);
        // A piece of a larger definition is found by its signature too.
        for line in &ch.context {
            d.add_u64(f.context, *line as u64);
            if let Some(sig) = line_text(self.text, &self.line_starts, *line) {
                d.add_text(f.body, sig);
            }
        }
        if let Some(symbols) = self.symbols {
            let defs = code_pass::definitions_in(symbols, ch.line_start, ch.line_end);
            if !defs.is_empty() {
                d.add_text(f.defs, &defs);
            }
        }
        d
    }
}

/// The version of a file the walk saw, kept in the manifest when its content was not indexed.
#[derive(Clone, Copy)]
struct Seen {
    size: u64,
    mtime_ns: i64,
    ctime_ns: i64,
}

impl Seen {
    fn of(c: &walk::Candidate) -> Seen {
        Seen { size: c.size, mtime_ns: c.mtime_ns, ctime_ns: c.ctime_ns }
    }
}

/// What became of one file. `Vanished`: gone between the walk and the read (deleted or renamed
/// meanwhile), no error; the next walk sees what took its place.
enum Outcome {
    Indexed { entry: FileEntry, code: Option<CodeResult>, notes: Vec<String> },
    Touched { seen: Seen },
    Skipped { reason: String, seen: Seen },
    Error(String),
    Vanished,
}

/// Whether a read failed because the file (or a directory on its way) is no longer there.
fn vanished(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory)
}

/// Byte offsets of line starts.
fn line_offsets(text: &str) -> Vec<usize> {
    std::iter::once(0).chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1)).collect()
}

/// Line `line` (1-based) without its newline.
fn line_text<'t>(text: &'t str, starts: &[usize], line: u32) -> Option<&'t str> {
    let i = (line as usize).checked_sub(1)?;
    let s = *starts.get(i)?;
    let e = starts.get(i + 1).copied().unwrap_or(text.len());
    text.get(s..e).map(|l| l.trim_end())
}

fn mb(b: u64) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

/// Threads for reading and for the writer: config (at most [`crate::config::MAX_INDEX_THREADS`],
/// which config validation enforces for files), else one per core.
pub fn thread_count(cfg: &IndexConfig) -> usize {
    if cfg.threads > 0 {
        cfg.threads.min(crate::config::MAX_INDEX_THREADS) as usize
    } else {
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2)
    }
}

/// Splits requested paths into ones to walk (existing, inside the repo) and vanished ones.
fn split_scope(root: &Path, paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<String>) {
    let mut starts = Vec::new();
    let mut gone = Vec::new();
    for p in paths {
        if !p.starts_with(root) {
            continue;
        }
        if std::fs::symlink_metadata(p).is_ok() {
            starts.push(p.clone());
        } else {
            gone.push(walk::rel_path(root, p));
        }
    }
    (starts, gone)
}

/// Splits candidates into consecutive batches: the first of about `first` bytes, the others
/// of about `budget`.
fn batches(todo: &[walk::Candidate], first: u64, budget: u64) -> Vec<&[walk::Candidate]> {
    let mut out = Vec::new();
    let mut begin = 0;
    let mut acc = 0;
    for (i, c) in todo.iter().enumerate() {
        acc += c.size;
        if acc >= if out.is_empty() { first } else { budget } {
            out.push(&todo[begin..=i]);
            begin = i + 1;
            acc = 0;
        }
    }
    if begin < todo.len() {
        out.push(&todo[begin..]);
    }
    out
}

/// A run's progress, counted per phase: a text-first run's parse pass starts its own count
/// ([`Progress::start_parsing`]), so `files_total` is never more than the files a phase reads.
struct Progress {
    files_total: AtomicU64,
    bytes_total: AtomicU64,
    files_done: AtomicU64,
    bytes_done: AtomicU64,
    /// Set once a text-first run has its text pass live and is parsing.
    parsing: std::sync::atomic::AtomicBool,
}

impl Progress {
    fn new(files_total: u64, bytes_total: u64) -> Self {
        Progress {
            files_total: AtomicU64::new(files_total),
            bytes_total: AtomicU64::new(bytes_total),
            files_done: AtomicU64::new(0),
            bytes_done: AtomicU64::new(0),
            parsing: Default::default(),
        }
    }
    /// The parse pass of a text-first run begins: `files` files of `bytes` to parse, counted
    /// from 0 under the phase `parsing`.
    fn start_parsing(&self, files: u64, bytes: u64) {
        self.bytes_done.store(0, Ordering::Relaxed);
        self.files_done.store(0, Ordering::Relaxed);
        self.files_total.store(files, Ordering::Relaxed);
        self.bytes_total.store(bytes, Ordering::Relaxed);
        self.parsing.store(true, Ordering::Relaxed);
    }
    /// The phase the ticker reports: `indexing`, or `parsing` after a text pass went live.
    fn stage(&self) -> &'static str {
        if self.parsing.load(Ordering::Relaxed) {
            "parsing"
        } else {
            "indexing"
        }
    }
    /// A file is done: the bar moves past its bytes, read or not.
    fn done(&self, bytes: u64) {
        self.files_done.fetch_add(1, Ordering::Relaxed);
        self.bytes_done.fetch_add(bytes, Ordering::Relaxed);
    }
    fn snapshot(&self, phase: &str) -> IndexProgress {
        IndexProgress {
            phase: phase.into(),
            files_done: self.files_done.load(Ordering::Relaxed),
            files_total: self.files_total.load(Ordering::Relaxed),
            bytes_done: self.bytes_done.load(Ordering::Relaxed),
            bytes_total: self.bytes_total.load(Ordering::Relaxed),
            ..Default::default()
        }
    }
}

/// How a manifest entry that is not indexed goes into a run's summary: `(true, _)` a file that
/// could not be read (`errors`), `(false, _)` one skipped. A directory the walk could not read is
/// skipped (kept as an error in the manifest, so every run retries it, and so found by this run
/// too): the summary counted it among the files that could not be read (tour17).
fn not_indexed(path: &str, e: &FileEntry, this_run: &HashSet<String>) -> Option<(bool, SkippedFile)> {
    let reason = e.skipped.as_ref()?;
    let mut f = SkippedFile { path: path.to_string(), reason: reason.clone(), this_run: this_run.contains(path) };
    if e.error && f.is_directory() {
        f.this_run = true;
        return Some((false, f));
    }
    Some((e.error, f))
}

#[cfg(test)]
mod summary_tests {
    use super::*;

    /// An unreadable directory (`chmod 000`; root reads through it, so the entry is built as the
    /// walk records it) was counted in `errors: 2 files could not be read`; it is skipped now,
    /// named as a directory, while an unreadable file stays an error.
    #[test]
    fn an_unreadable_directory_is_skipped_as_a_directory_not_a_file_that_could_not_be_read() {
        let dir = FileEntry::not_indexed("unreadable directory: Permission denied (os error 13)".into(), true, 0, 0);
        let file = FileEntry::not_indexed("unreadable: Permission denied (os error 13)".into(), true, 0, 0);
        let binary = FileEntry::not_indexed("binary".into(), false, 0, 0);
        let none = HashSet::new();
        let (error, f) = not_indexed("private", &dir, &none).expect("listed");
        assert!(!error && f.is_directory() && f.this_run, "{f:?}");
        let (error, f) = not_indexed("a.txt", &file, &none).expect("listed");
        assert!(error && !f.is_directory(), "{f:?}");
        let (error, f) = not_indexed("b.bin", &binary, &none).expect("listed");
        assert!(!error && !f.is_directory() && !f.this_run, "{f:?}");
    }
}

#[cfg(test)]
mod disk_tests {
    use super::*;

    /// A file deleted after the walk listed it (a checkout, a build cleaning up) was reported
    /// as "could not be read (retried next run)": 2,782 such errors in a run beside a churning
    /// tree. It is a removal, not an error.
    #[test]
    fn a_file_gone_between_the_walk_and_the_read_is_a_removal_not_an_error() {
        let (home, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(root.path().join("gone.txt"), "okapi gone\n").unwrap();
        std::fs::write(root.path().join("kept.txt"), "okapi kept\n").unwrap();
        let engine = crate::engine::Engine::open_at(home.path()).unwrap();
        let repo = engine.resolve_repo(root.path()).unwrap();
        let mut session = engine.open_index_session(&repo, false).unwrap();
        session.update(&Scope::Full, &|_: &IndexProgress| {}).unwrap();
        let abs = root.path().join("gone.txt");
        let listed = walk::Candidate { rel: "gone.txt".into(), abs: abs.clone(), size: 11, mtime_ns: 1, ctime_ns: 1 };
        std::fs::remove_file(&abs).unwrap();
        let mut summary = IndexSummary::default();
        let outcome = session.process(&listed, true);
        session.ensure_writer().unwrap();
        assert!(session.apply("gone.txt".into(), outcome, &mut summary, &mut HashMap::new()));
        session.sum_up(&mut summary, Instant::now());
        assert!(summary.errors.is_empty(), "{:?}", summary.errors);
        assert_eq!((summary.deleted, summary.vanished, summary.files), (1, 1, 1), "{summary:?}");
        assert!(!session.manifest.files.contains_key("gone.txt"));
    }

    #[test]
    fn a_run_is_cut_into_a_small_first_batch_then_large_ones() {
        let c = |i: usize| walk::Candidate {
            rel: format!("f{i}"),
            abs: PathBuf::from(format!("/r/f{i}")),
            size: 10,
            mtime_ns: 0,
            ctime_ns: 0,
        };
        let todo: Vec<walk::Candidate> = (0..25).map(c).collect();
        let sizes: Vec<usize> = batches(&todo, 20, 100).iter().map(|b| b.len()).collect();
        assert_eq!(sizes, [2, 10, 10, 3], "the first batch ends at its own budget, the rest at theirs");
        let sizes: Vec<usize> = batches(&todo, 1000, 1000).iter().map(|b| b.len()).collect();
        assert_eq!(sizes, [25], "a small run is one batch");
        assert!(batches(&[], 20, 100).is_empty());
    }

    #[test]
    fn disk_warning_past_eighty_percent_of_free_space() {
        let dir = Path::new("/state");
        let gb = 1024 * 1024 * 1024;
        assert!(disk_warning(4 * gb, Some(gb), dir).is_some_and(|w| w.contains("low disk space")));
        assert_eq!(disk_warning(gb, Some(4 * gb), dir), None, "0.5 GB of 4 GB free");
        assert_eq!(disk_warning(1024, Some(10), dir), None, "small runs are not checked");
        assert_eq!(disk_warning(4 * gb, None, dir), None, "unknown free space");
    }
}
