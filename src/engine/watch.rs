//! Keeping an index fresh: a debounced file watcher, watching only the directories the index
//! walks, feeding changed paths to an open [`IndexSession`]. Events are deduplicated per path
//! and batched;
//! while one update runs, new events queue up and are applied together
//! (throttling), and search keeps answering from the last commit throughout.

use crate::engine::index::gitrules::GitRules;
use crate::engine::index::sources::{self, Source};
use crate::engine::index::status::Unwatched;
use crate::engine::index::types::{IndexProgress, IndexSummary, ProgressSink};
use crate::engine::index::walk::{self, DOCDEX_IGNORE};
use crate::engine::index::{IndexSession, Scope};
use crate::engine::repos::RepoRef;
use crate::engine::Engine;
use crate::error::{Error, Result};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, RwLock};
use std::time::Duration;

/// What the watcher reports after each applied batch.
#[derive(Debug, Clone)]
pub enum WatchReport {
    /// The initial catch-up run finished.
    Ready(IndexSummary),
    /// A batch of changes was applied.
    Applied {
        /// The changed paths, repo-relative.
        paths: Vec<String>,
        /// The run's summary.
        summary: IndexSummary,
    },
    /// A batch failed; the watcher keeps going.
    Failed(String),
}

impl Engine {
    /// Watches a repository until `stop` is set, keeping its index current.
    /// Holds the repo's writer for the whole time.
    pub fn watch(&self, repo_path: &std::path::Path, stop: &AtomicBool, report: &dyn Fn(WatchReport)) -> Result<()> {
        self.watch_with_progress(repo_path, stop, report, &|_: &IndexProgress| {})
    }

    /// [`Self::watch`], showing the catch-up run's progress on `sink` (a first index of a large
    /// tree takes minutes, and `docdex watch` said nothing between its start and `ready`).
    pub fn watch_with_progress(
        &self,
        repo_path: &std::path::Path,
        stop: &AtomicBool,
        report: &dyn Fn(WatchReport),
        sink: &dyn ProgressSink,
    ) -> Result<()> {
        let repo = self.resolve_repo(repo_path)?;
        let root_id = crate::engine::fsutil::dir_identity(&repo.root);
        let mut session = self.open_index_session(&repo, false)?;
        // The writer is the watcher's from here, catch-up included: an `index` asked for
        // meanwhile (another surface of this process, or another process) must learn that
        // a watcher owns it rather than fail as busy.
        session.status().queued(0, true);
        let result = self.watch_session(repo, root_id, &mut session, stop, &Watching { report, catch_up: sink });
        session.status().queued(0, false);
        session.status().unwatched(None);
        result.and_then(|()| session.finish())
    }

    /// [`Self::watch`] once the writer is held: catch up, then apply batches until stopped.
    fn watch_session(
        &self,
        repo: RepoRef,
        root_id: Option<(u64, u64)>,
        session: &mut IndexSession,
        stop: &AtomicBool,
        watching: &Watching,
    ) -> Result<()> {
        let report = watching.report;
        if let Some(why) = session.verify(true)? {
            report(WatchReport::Failed(format!("the index was damaged ({why}); rebuilding it beside the damaged one")));
        }
        // Watch first, then catch up: an edit made during or right after the catch-up run is
        // queued by the watcher instead of falling between the two.
        let (watcher, rx, rule_files) = self.start_watcher(&repo.root)?;
        let mut watches = Watches::new(watcher, &repo.root, self.config().index.clone(), rule_files);
        watches.sync(report);
        session.status().unwatched(watches.unwatched_summary());
        // Registered sources with `watch` are followed too; `docdex add` / `remove-source` while
        // this runs are picked up within a second (a full run indexes or drops the folder).
        let mut sources = sources::load_indexable(&repo.state_dir);
        follow_sources(&mut watches.watcher, &[], &sources, report);
        let mut source_dirs = source_identities(&sources);
        let mut sources_checked = std::time::Instant::now();
        // A first index can take a while: a shutdown stops it at the next batch (what it
        // committed stays; the next start goes on from there).
        let mut summary = session.update_until(&Scope::Full, watching.catch_up, stop)?;
        // Its live generation (the catch-up run may have moved or replaced it).
        let repo = session.repo().clone();
        // Recorded before embedding: the text index is committed and searchable.
        self.record_indexed(&repo, &summary)?;
        summary.embeddings = Some(self.embed_index(&repo, session, false, watching.catch_up));
        session.status().queued(0, true);
        report(WatchReport::Ready(summary));
        let debounce = Duration::from_millis(self.config().index.watch_debounce_ms);

        while !stop.load(Ordering::Relaxed) {
            if sources_checked.elapsed() >= Duration::from_secs(1) {
                sources_checked = std::time::Instant::now();
                check_index_and_root(session, &repo.root, root_id)?;
                let now = sources::load_indexable(&repo.state_dir);
                // A source folder deleted and made again (a remount, a checkout) is another
                // directory: the OS watch on the old one is gone, so it is watched again, and a
                // full run takes what it holds now.
                let dirs = source_identities(&now);
                if now != sources || dirs != source_dirs {
                    follow_sources(&mut watches.watcher, &sources, &now, report);
                    sources = now;
                    source_dirs = dirs;
                    session.status().queued(1, true);
                    self.apply(&repo, session, BTreeSet::from([repo.root.clone()]), report);
                    session.status().queued(0, true);
                }
            }
            let events = match next_batch(&rx, debounce) {
                Next::Batch(events) => events,
                Next::Idle => continue,
                Next::Closed => break,
            };
            let mut batch = Batch::default();
            let rules = watches.rule_files();
            for ev in events {
                collect(&repo, &sources, &rules, ev, &mut batch, report);
            }
            for gone in &batch.gone {
                watches.forget(gone);
            }
            if batch.paths.contains(&repo.root) || touches_ignore_file(&batch.paths) {
                // What is ignored may have changed anywhere: watch what a full walk enters now,
                // and no longer what it leaves out (the full run follows).
                watches.sync(report);
            } else {
                // Sorted, so a directory comes before those inside it, which its walk covers.
                let mut done: Vec<&PathBuf> = Vec::new();
                for dir in &batch.opened {
                    if !done.iter().any(|d| dir.starts_with(d)) {
                        watches.watch_tree(dir, report);
                        done.push(dir);
                    }
                }
            }
            session.status().unwatched(watches.unwatched_summary());
            if batch.dirs_changed {
                // The directory structure changed: cached project maps are stale.
                self.invalidate_maps(&repo);
            }
            if batch.paths.is_empty() {
                continue;
            }
            // A root deleted or moved away reads as every file deleted: end the watch before
            // that batch empties an index the root may well come back to.
            check_root(&repo.root, root_id)?;
            session.status().queued(batch.paths.len() as u64, true);
            self.apply(&repo, session, batch.paths, report);
            session.status().queued(0, true);
        }
        Ok(())
    }

    /// The OS watcher (nothing watched yet), its events on the returned channel, and the git
    /// rule files it passes on (see [`Watches::rule_files`]). Access events (every open and
    /// close, git's own reads of `.git/config` included) and events of `.git/` other than those
    /// files are dropped as they arrive, so they never wake the loop or delay a batch.
    fn start_watcher(&self, root: &Path) -> Result<(RecommendedWatcher, mpsc::Receiver<WatchEvent>, RuleFiles)> {
        let (tx, rx) = mpsc::channel::<WatchEvent>();
        let rules: RuleFiles = Default::default();
        let dot_git = root.join(".git");
        let passed = rules.clone();
        let handler = move |ev: WatchEvent| {
            if let Ok(e) = &ev {
                if e.kind.is_access() && !e.need_rescan() {
                    return;
                }
                let inside_git = |p: &PathBuf| p.starts_with(&dot_git) && !passed.read().is_ok_and(|r| r.contains(p));
                if !e.paths.is_empty() && e.paths.iter().all(inside_git) {
                    return;
                }
            }
            let _ = tx.send(ev);
        };
        // Symlinks are never followed: a link to a directory outside the repo must not even be
        // watched (its events would name paths inside the repo).
        let config = notify::Config::default().with_follow_symlinks(false);
        let watcher = RecommendedWatcher::new(handler, config).map_err(|e| Error::Watch(e.to_string()))?;
        Ok((watcher, rx, rules))
    }

    fn apply(
        &self,
        repo: &RepoRef,
        session: &mut IndexSession,
        paths: BTreeSet<PathBuf>,
        report: &dyn Fn(WatchReport),
    ) {
        // A changed ignore file can change what belongs in the index anywhere below it. The
        // repository root itself stands for a full run (sources or git's rules changed).
        let full = touches_ignore_file(&paths) || paths.contains(&repo.root);
        let scope = if full { Scope::Full } else { Scope::Paths(paths.iter().cloned().collect()) };
        let rel: Vec<String> = paths.iter().map(|p| crate::engine::index::walk::rel_path(&repo.root, p)).collect();
        let quiet = |_: &IndexProgress| {};
        match session.update(&scope, &quiet) {
            Ok(mut summary) => {
                let _ = self.record_indexed(repo, &summary);
                summary.embeddings = Some(self.embed_index(repo, session, false, &quiet));
                report(WatchReport::Applied { paths: rel, summary });
            }
            Err(e) => report(WatchReport::Failed(e.to_string())),
        }
    }
}

/// Where a watch reports: its batches, and the catch-up run's progress.
struct Watching<'a> {
    report: &'a dyn Fn(WatchReport),
    catch_up: &'a dyn ProgressSink,
}

/// One event (or error) as the OS watcher reports it.
type WatchEvent = notify::Result<notify::Event>;

/// The git rule files the watcher passes on from `.git/` (shared with its event handler).
type RuleFiles = Arc<RwLock<HashSet<PathBuf>>>;

/// A batch waits until no event came for the debounce time (an editor's save is several
/// events), but never longer than this after its first event: a file written without pause
/// (a log) must not hold the batch back for ever.
const MAX_BATCH_WAIT: Duration = Duration::from_secs(2);

/// What the loop waits for next.
enum Next {
    /// Events, until a quiet debounce time.
    Batch(Vec<WatchEvent>),
    /// None within 200 ms: the loop checks its stop flag and sources.
    Idle,
    /// The OS watcher is gone.
    Closed,
}

/// The next batch of events: the first, then every one that follows it until none came for
/// `debounce` (or [`MAX_BATCH_WAIT`] passed).
fn next_batch(rx: &mpsc::Receiver<WatchEvent>, debounce: Duration) -> Next {
    let first = match rx.recv_timeout(Duration::from_millis(200)) {
        Ok(ev) => ev,
        Err(mpsc::RecvTimeoutError::Timeout) => return Next::Idle,
        Err(mpsc::RecvTimeoutError::Disconnected) => return Next::Closed,
    };
    let started = std::time::Instant::now();
    let mut events = vec![first];
    loop {
        let left = MAX_BATCH_WAIT.saturating_sub(started.elapsed());
        if left.is_zero() {
            return Next::Batch(events);
        }
        match rx.recv_timeout(debounce.min(left)) {
            Ok(ev) => events.push(ev),
            Err(_) => return Next::Batch(events),
        }
    }
}

/// What a batch of events asks for.
#[derive(Default)]
struct Batch {
    /// Changed paths to update (the root stands for a full run).
    paths: BTreeSet<PathBuf>,
    /// A directory was created, removed or renamed.
    dirs_changed: bool,
    /// Directories made, moved in, or whose permissions changed: to watch, with what is
    /// under them.
    opened: BTreeSet<PathBuf>,
    /// Paths removed or renamed away: no longer watched.
    gone: BTreeSet<PathBuf>,
}

/// The OS watches on the repository: one non-recursive watch on each directory a full index
/// walk enters ([`walk::walk_dirs`]), and on the directories of git's rule files inside the
/// repository (`.git/info/exclude`, `.git/config`, a submodule's). Ignored trees
/// (`node_modules/`, `target/`, `.git/objects/`, anything `.gitignore` or `.docdexignore`
/// names) get none: a recursive watch on the root cost one inotify watch per directory of
/// them, which can exhaust `fs.inotify.max_user_watches` on a large JS or Rust tree, and woke
/// the watcher for every build. A directory that refuses a watch (permissions, a path longer
/// than the OS takes, the watch limit) is logged, reported once, and listed in the index
/// status; the rest is watched.
struct Watches {
    watcher: RecommendedWatcher,
    root: PathBuf,
    cfg: crate::config::IndexConfig,
    threads: usize,
    /// Directories with a watch.
    watched: HashSet<PathBuf>,
    /// Directories the walk enters that refused a watch, and why.
    unwatched: BTreeMap<PathBuf, String>,
    /// Refused directories already reported (each is named once, not at every sync).
    reported: HashSet<PathBuf>,
    /// Git's rule files (shared with the event handler).
    rules: RuleFiles,
    /// Their directories inside `.git/`, watched.
    rule_dirs: HashSet<PathBuf>,
}

/// At most this many refused directories are named one by one at a time; the rest are
/// counted in one line (the watch limit can refuse thousands).
const NAMED_REFUSALS: usize = 10;

impl Watches {
    fn new(watcher: RecommendedWatcher, root: &Path, cfg: crate::config::IndexConfig, rules: RuleFiles) -> Watches {
        let threads = crate::engine::index::thread_count(&cfg);
        Watches {
            watcher,
            root: root.to_path_buf(),
            cfg,
            threads,
            watched: Default::default(),
            unwatched: Default::default(),
            reported: Default::default(),
            rules,
            rule_dirs: Default::default(),
        }
    }

    /// Watches every directory a full walk enters now, and no longer those it does not (they
    /// became ignored or went); the rule files are looked up again.
    fn sync(&mut self, report: &dyn Fn(WatchReport)) {
        let visited = self.watch_walk(None, true, report);
        let stale: Vec<PathBuf> = self.watched.difference(&visited).cloned().collect();
        for dir in stale {
            let _ = self.watcher.unwatch(&dir);
            self.watched.remove(&dir);
        }
        self.unwatched.retain(|d, _| visited.contains(d));
        self.watch_rules();
        self.report_refused(report);
    }

    /// Watches `dir` and every directory under it the walk enters (made, moved in, opened up:
    /// each is watched anew, as it may be another directory than the one watched before).
    fn watch_tree(&mut self, dir: &Path, report: &dyn Fn(WatchReport)) {
        self.watch_walk(Some(dir), false, report);
        self.report_refused(report);
    }

    /// Walks (all, or under `under`) and watches each directory as the walk reaches it;
    /// returns the directories walked. With `skip_watched`, those already watched are left.
    fn watch_walk(
        &mut self,
        under: Option<&Path>,
        skip_watched: bool,
        report: &dyn Fn(WatchReport),
    ) -> HashSet<PathBuf> {
        struct Pass<'a> {
            watcher: &'a mut RecommendedWatcher,
            visited: HashSet<PathBuf>,
            added: Vec<PathBuf>,
            failed: Vec<(PathBuf, notify::Error)>,
        }
        let watched = &self.watched;
        let pass = std::sync::Mutex::new(Pass {
            watcher: &mut self.watcher,
            visited: HashSet::new(),
            added: Vec::new(),
            failed: Vec::new(),
        });
        walk::walk_dirs(&self.root, under, &self.cfg, self.threads, &|dir: &Path| {
            let Ok(mut p) = pass.lock() else { return };
            p.visited.insert(dir.to_path_buf());
            if skip_watched && watched.contains(dir) {
                return;
            }
            match p.watcher.watch(dir, RecursiveMode::NonRecursive) {
                Ok(()) => p.added.push(dir.to_path_buf()),
                Err(e) => p.failed.push((dir.to_path_buf(), e)),
            }
        });
        let pass = pass.into_inner().unwrap_or_else(|p| p.into_inner());
        for dir in pass.added {
            self.unwatched.remove(&dir);
            self.reported.remove(&dir);
            self.watched.insert(dir);
        }
        let mut limit_hit = false;
        for (dir, err) in pass.failed {
            if matches!(err.kind, notify::ErrorKind::PathNotFound) {
                continue; // gone meanwhile: its removal is in the next batch
            }
            let why = cause(&err);
            limit_hit |= matches!(err.kind, notify::ErrorKind::MaxFilesWatch);
            tracing::warn!(dir = %dir.display(), reason = %why, "not watching a directory the index walks");
            self.watched.remove(&dir);
            self.unwatched.insert(dir, why);
        }
        if limit_hit {
            report(WatchReport::Failed(format!("{LIMIT_REACHED}: some directories are not watched")));
        }
        pass.visited
    }

    /// Watches the directories of git's rule files inside the repository (`.git/info/`,
    /// `.git/`, a submodule's), and shares the files' list with the event handler.
    fn watch_rules(&mut self) {
        let files: HashSet<PathBuf> = GitRules::load(&self.root).files().iter().cloned().collect();
        let dirs: HashSet<PathBuf> = files
            .iter()
            .filter_map(|f| f.parent())
            .filter(|d| d.starts_with(&self.root) && d.is_dir())
            .map(Path::to_path_buf)
            .collect();
        for gone in self.rule_dirs.difference(&dirs) {
            if !self.watched.contains(gone) {
                let _ = self.watcher.unwatch(gone);
            }
        }
        for dir in &dirs {
            if let Err(e) = self.watcher.watch(dir, RecursiveMode::NonRecursive) {
                tracing::debug!(dir = %dir.display(), "not watching git's rules: {e}");
            }
        }
        self.rule_dirs = dirs;
        if let Ok(mut r) = self.rules.write() {
            *r = files;
        }
    }

    /// The rule files as last looked up.
    fn rule_files(&self) -> HashSet<PathBuf> {
        self.rules.read().map(|r| r.clone()).unwrap_or_default()
    }

    /// A path removed or renamed away: it and what was under it have no watch any more (the
    /// OS dropped them; notify forgot them).
    fn forget(&mut self, gone: &Path) {
        self.watched.retain(|d| !d.starts_with(gone));
        self.unwatched.retain(|d, _| !d.starts_with(gone));
    }

    /// What the index status lists: the refused directories, counted by reason.
    fn unwatched_summary(&self) -> Option<Unwatched> {
        Unwatched::of(self.unwatched.iter().map(|(d, why)| (walk::rel_path(&self.root, d), why.as_str())))
    }

    /// Names each directory newly refused (at most [`NAMED_REFUSALS`] one by one).
    fn report_refused(&mut self, report: &dyn Fn(WatchReport)) {
        let fresh: Vec<(PathBuf, String)> = self
            .unwatched
            .iter()
            .filter(|(d, _)| !self.reported.contains(*d))
            .map(|(d, w)| (d.clone(), w.clone()))
            .collect();
        for (i, (dir, why)) in fresh.iter().enumerate() {
            self.reported.insert(dir.clone());
            if i == NAMED_REFUSALS {
                report(WatchReport::Failed(format!(
                    "{} more directories are not watched; `docdex status` counts them by reason",
                    fresh.len() - NAMED_REFUSALS
                )));
            }
            if i >= NAMED_REFUSALS {
                continue;
            }
            let rel = walk::rel_path(&self.root, dir);
            let then = if why.contains("ermission denied") {
                format!("{rel}/ is watched and indexed once this user may read it")
            } else {
                format!("changes under {rel}/ wait for the next full `docdex index`")
            };
            report(WatchReport::Failed(format!(
                "not watching {rel}/ ({why}); the rest of the repository is watched, and {then}"
            )));
        }
        self.reported.retain(|d| self.unwatched.contains_key(d));
    }
}

/// What the watch limit is called when the OS refuses a watch for it.
const LIMIT_REACHED: &str =
    "the OS limit on watched directories is reached (fs.inotify.max_user_watches; raise it with `sysctl`)";

/// A notify error's cause without the paths notify appends.
fn cause(err: &notify::Error) -> String {
    match &err.kind {
        notify::ErrorKind::Io(e) => e.to_string(),
        notify::ErrorKind::MaxFilesWatch => LIMIT_REACHED.to_string(),
        other => format!("{other:?}"),
    }
}

/// Whether a batch touched an ignore file, which can change what is ignored below it (or
/// `.gitmodules`: a submodule added or removed brings or takes its own rules).
fn touches_ignore_file(paths: &BTreeSet<PathBuf>) -> bool {
    paths.iter().any(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| matches!(n, ".gitignore" | ".ignore" | ".gitmodules" | DOCDEX_IGNORE))
    })
}

/// Which directory each source folder is now (none while it is missing).
fn source_identities(sources: &[Source]) -> Vec<Option<(u64, u64)>> {
    sources.iter().map(|s| crate::engine::fsutil::dir_identity(&s.path)).collect()
}

/// Moves the watch from the sources `before` to the sources `now` (those with `watch`).
fn follow_sources(watcher: &mut RecommendedWatcher, before: &[Source], now: &[Source], report: &dyn Fn(WatchReport)) {
    for s in before.iter().filter(|s| s.watch) {
        let _ = watcher.unwatch(&s.path);
    }
    for s in now.iter().filter(|s| s.watch) {
        if let Err(e) = watcher.watch(&s.path, RecursiveMode::Recursive) {
            report(WatchReport::Failed(format!("cannot watch source {} ({}): {e}", s.name, s.path.display())));
        }
    }
}

/// The once-a-second checks that end a watch: the index deleted under it (`rm -rf` of the
/// state directory, a purge by hand; ending releases the writer, so the keeper's next start
/// rebuilds it instead of writing into files no one can read), or the root gone.
fn check_index_and_root(session: &IndexSession, root: &Path, root_id: Option<(u64, u64)>) -> Result<()> {
    if !session.repo().index_dir().join("meta.json").exists() {
        return Err(Error::Index {
            path: session.repo().index_dir(),
            message: "the index was deleted while it was being watched; rebuilding it".into(),
        });
    }
    check_root(root, root_id)
}

/// Fails when the watched root was deleted, moved away or replaced: the watcher would go on
/// watching nothing (or the moved tree) while reporting updates. The index is left as it was.
fn check_root(root: &Path, watched: Option<(u64, u64)>) -> Result<()> {
    let now = crate::engine::fsutil::dir_identity(root);
    if now.is_some() && now == watched {
        return Ok(());
    }
    let what = if now.is_none() { "was deleted or moved away" } else { "was replaced by another directory" };
    Err(Error::Watch(format!(
        "the repository root {} {what} while it was being watched; its index is kept as it was. \
         Put it back and watch again (a server retries on its own), or index it where it is now",
        root.display()
    )))
}

/// Adds the relevant paths of one event to `batch` (skipping `.git/` and docdex's own state; a
/// watched source's paths included; the root when the OS dropped events or a git rule file
/// changed), and notes directories made, opened up or gone.
fn collect(
    repo: &RepoRef,
    sources: &[Source],
    rules: &HashSet<PathBuf>,
    ev: WatchEvent,
    batch: &mut Batch,
    report: &dyn Fn(WatchReport),
) {
    let ev = match ev {
        Ok(ev) => ev,
        Err(e) => {
            report(WatchReport::Failed(format!("watch error: {e}")));
            return;
        }
    };
    if ev.need_rescan() {
        // The OS dropped events (inotify's queue overflowed: a checkout of thousands of files
        // while this process was busy or stopped). Which paths changed is unknown, so the whole
        // tree is compared with the manifest; the root stands for a full run. (Ignored, such a
        // checkout left hundreds of files searchable with their old content.)
        tracing::info!("the OS dropped file events; comparing the whole tree");
        batch.paths.insert(repo.root.clone());
        batch.dirs_changed = true;
        return;
    }
    if ev.kind.is_access() {
        return;
    }
    for p in &ev.paths {
        if sources.iter().any(|s| s.watch && p.starts_with(&s.path)) {
            batch.paths.insert(p.clone());
            continue;
        }
        if !p.starts_with(&repo.root) || p.starts_with(&repo.state_dir) {
            continue;
        }
        if rules.contains(p) {
            // git's own ignore lists (`.git/info/exclude`, a submodule's, `core.excludesFile`
            // in a config), as `.gitignore`: a full run (the root stands for one) drops what
            // they now exclude and adds what they no longer do.
            batch.paths.insert(repo.root.clone());
            continue;
        }
        let rel = p.strip_prefix(&repo.root).unwrap_or(p);
        if rel.components().next().is_some_and(|c| c.as_os_str() == ".git") {
            continue;
        }
        batch.dirs_changed |= is_dir_event(&ev.kind, p);
        if opens_dir(&ev.kind, p) {
            batch.opened.insert(p.clone());
        } else if gone(&ev.kind, p) {
            batch.gone.insert(p.clone());
        }
        batch.paths.insert(p.clone());
    }
}

/// A path removed or renamed away (it no longer exists).
fn gone(kind: &notify::EventKind, p: &Path) -> bool {
    use notify::event::ModifyKind;
    use notify::EventKind;
    matches!(kind, EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_))) && p.symlink_metadata().is_err()
}

/// A directory made, moved in, or whose permissions or owner changed (never through a link):
/// each directory has its own watch, so a new one is watched by the loop (with what is under
/// it), and one the OS refused is watched again once it may be read (a container's volume
/// made `700` and chowned later).
fn opens_dir(kind: &notify::EventKind, p: &Path) -> bool {
    use notify::event::ModifyKind;
    use notify::EventKind;
    matches!(kind, EventKind::Create(_) | EventKind::Modify(ModifyKind::Metadata(_) | ModifyKind::Name(_)))
        && p.symlink_metadata().is_ok_and(|m| m.is_dir())
}

/// A directory created, removed or renamed (a rename's old name no longer exists, so a path
/// gone without a file extension counts too).
fn is_dir_event(kind: &notify::EventKind, p: &std::path::Path) -> bool {
    use notify::event::{CreateKind, ModifyKind, RemoveKind};
    use notify::EventKind;
    match kind {
        EventKind::Create(CreateKind::Folder) | EventKind::Remove(RemoveKind::Folder) => true,
        EventKind::Create(_) => p.is_dir(),
        EventKind::Modify(ModifyKind::Name(_)) => p.is_dir() || (!p.exists() && p.extension().is_none()),
        _ => false,
    }
}
