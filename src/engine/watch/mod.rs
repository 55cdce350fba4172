//! Keeping an index fresh: a debounced file watcher, watching only the directories the index
//! walks, feeding changed paths to an open [`IndexSession`]. Events are deduplicated per path
//! and batched;
//! while one update runs, new events queue up and are applied together
//! (throttling), and search keeps answering from the last commit throughout.

mod watches;

use crate::engine::index::sources::{self, Source};
use crate::engine::index::types::{IndexProgress, IndexSummary, ProgressSink};
use crate::engine::index::walk::DOCDEX_IGNORE;
use crate::engine::index::{IndexSession, Scope};
use crate::engine::repos::RepoRef;
use crate::engine::Engine;
use crate::error::{Error, Result};
use notify::{RecommendedWatcher, Watcher};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;
use watches::{Filter, SharedFilter, Watches};

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
        let (watcher, rx, filter) = self.start_watcher()?;
        let mut watches = Watches::new(watcher, &repo.root, self.config().index.clone(), filter);
        watches.sync(report);
        // Registered sources with `watch` are followed too, watched as the repository is;
        // `docdex add` / `remove-source` while this runs are picked up within a second (a full
        // run indexes or drops the folder).
        let mut followed = FollowedSources::read(&repo.state_dir);
        watches.set_sources(&followed.list, report);
        session.status().unwatched(watches.unwatched_summary());
        // A first index can take a while: a shutdown stops it at the next batch (what it
        // committed stays; the next start goes on from there).
        let mut summary = session.update_until(&Scope::Full, watching.catch_up, stop)?;
        // Its live generation (the catch-up run may have moved or replaced it).
        let repo = session.repo().clone();
        // Recorded before embedding: the text index is committed and searchable.
        self.record_indexed(&repo, &summary)?;
        self.prepare_search(&repo);
        // The embedding phase stops at a shutdown too (a first embedding of a large tree takes
        // minutes): what it embedded stays, and the next start goes on from there.
        summary.embeddings = Some(self.embed_index(&repo, session, false, watching.catch_up, stop));
        if stop.load(Ordering::SeqCst) {
            return Ok(());
        }
        session.status().queued(0, true);
        session.status().sources_indexed(followed.version);
        report(WatchReport::Ready(summary));
        let debounce = Duration::from_millis(self.config().index.watch_debounce_ms);
        let mut retry = Retry::default();

        while !stop.load(Ordering::Relaxed) {
            if followed.checked.elapsed() >= Duration::from_secs(1) {
                check_index_and_root(session, &repo.root, root_id)?;
                if !self.follow_sources(&repo, session, &mut watches, &mut followed, (report, stop)) {
                    retry.after(false, session);
                }
            }
            if retry.due() {
                let done = self.apply(&repo, session, BTreeSet::from([repo.root.clone()]), (report, stop));
                retry.after(done, session);
            }
            let events = match next_batch(&rx, debounce) {
                Next::Batch(events) => events,
                Next::Idle => continue,
                Next::Closed => break,
            };
            let batch = gather(&repo, &mut watches, events, report);
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
            let mut paths = batch.paths;
            if retry.owed() {
                // What a failed batch held is unknown now: compare the whole tree.
                paths.insert(repo.root.clone());
            }
            session.status().queued(paths.len() as u64, true);
            let done = self.apply(&repo, session, paths, (report, stop));
            session.status().queued(0, true);
            retry.after(done, session);
        }
        Ok(())
    }

    /// Re-reads the registered sources (once a second): a changed list, or a source folder
    /// deleted and made again (a remount, a checkout: the OS watch on the old one is gone), is
    /// watched anew and taken in by a full run; then the list's version is marked indexed,
    /// which `docdex add` waits for. `false` when that run failed.
    fn follow_sources(
        &self,
        repo: &RepoRef,
        session: &mut IndexSession,
        watches: &mut Watches,
        followed: &mut FollowedSources,
        (report, stop): (&dyn Fn(WatchReport), &AtomicBool),
    ) -> bool {
        let now = FollowedSources::read(&repo.state_dir);
        let mut done = true;
        if now.list != followed.list || now.dirs != followed.dirs {
            watches.set_sources(&now.list, report);
            session.status().unwatched(watches.unwatched_summary());
            session.status().queued(1, true);
            done = self.apply(repo, session, BTreeSet::from([repo.root.clone()]), (report, stop));
            session.status().queued(0, true);
        }
        if now.version != followed.version && done {
            session.status().sources_indexed(now.version);
        }
        *followed = now;
        done
    }

    /// The OS watcher (nothing watched yet), its events on the returned channel, and the
    /// filter it applies ([`Filter`], kept current by [`Watches`]). Access events (every open
    /// and close, git's own reads of `.git/config` included), events of `.git/` other than
    /// git's rule files, and those of a directory watched for a rule file (a home directory)
    /// other than that file are dropped as they arrive, so they never wake the loop or delay a
    /// batch.
    fn start_watcher(&self) -> Result<(RecommendedWatcher, mpsc::Receiver<WatchEvent>, SharedFilter)> {
        let (tx, rx) = mpsc::channel::<WatchEvent>();
        let filter: SharedFilter = Default::default();
        let passed = filter.clone();
        let handler = move |ev: WatchEvent| {
            if let Ok(e) = &ev {
                if e.kind.is_access() && !e.need_rescan() {
                    return;
                }
                let wanted = |p: &PathBuf| passed.read().is_ok_and(|f| f.wants(p));
                if !e.need_rescan() && !e.paths.is_empty() && !e.paths.iter().any(wanted) {
                    return;
                }
            }
            let _ = tx.send(ev);
        };
        // Symlinks are never followed: a link to a directory outside the repo must not even be
        // watched (its events would name paths inside the repo).
        let config = notify::Config::default().with_follow_symlinks(false);
        let watcher = RecommendedWatcher::new(handler, config).map_err(|e| Error::Watch(e.to_string()))?;
        Ok((watcher, rx, filter))
    }

    /// Indexes one batch; `false` when it failed (the disk full, the index unwritable), its
    /// changes then owed to a full run ([`Retry`]).
    fn apply(
        &self,
        repo: &RepoRef,
        session: &mut IndexSession,
        paths: BTreeSet<PathBuf>,
        (report, stop): (&dyn Fn(WatchReport), &AtomicBool),
    ) -> bool {
        // A changed ignore file can change what belongs in the index anywhere below it. The
        // repository root itself stands for a full run (sources or git's rules changed).
        let full = touches_ignore_file(&paths) || paths.contains(&repo.root);
        let scope = if full { Scope::Full } else { Scope::Paths(paths.iter().cloned().collect()) };
        let rel: Vec<String> = paths.iter().map(|p| crate::engine::index::walk::rel_path(&repo.root, p)).collect();
        let quiet = |_: &IndexProgress| {};
        match session.update(&scope, &quiet) {
            Ok(mut summary) => {
                // The batch is searchable now: only its embeddings are left, which the queue
                // does not count (it said `ready` beside the whole batch queued while a large
                // one was embedded).
                session.status().queued(0, true);
                let _ = self.record_indexed(repo, &summary);
                // The next search (often this process's own: the workbench, a server) maps the
                // batch's file table instead of tabulating it.
                self.prepare_search(repo);
                summary.embeddings = Some(self.embed_index(repo, session, false, &quiet, stop));
                report(WatchReport::Applied { paths: rel, summary });
                true
            }
            Err(e) => {
                report(WatchReport::Failed(format!("{e}; the watcher retries the whole tree until a run succeeds")));
                false
            }
        }
    }
}

/// A failed batch's changes, owed to a full run: retried on a back-off (2 s doubling to a
/// minute) and folded into the next batch. A batch that failed for a full disk was dropped: the
/// index stayed behind the disk after space was freed, status said `ready`, and `docdex index`
/// said the watcher kept it current.
#[derive(Default)]
struct Retry {
    /// When the next full run is due; `None` when nothing is owed.
    due: Option<std::time::Instant>,
    backoff: Duration,
}

impl Retry {
    const FIRST: Duration = Duration::from_secs(2);
    const MAX: Duration = Duration::from_secs(60);

    fn owed(&self) -> bool {
        self.due.is_some()
    }

    fn due(&self) -> bool {
        self.due.is_some_and(|at| std::time::Instant::now() >= at)
    }

    /// After a run: forgets what was owed when it succeeded, else schedules the next try and
    /// keeps one change queued in status, so it does not read as caught up.
    fn after(&mut self, succeeded: bool, session: &IndexSession) {
        if succeeded {
            *self = Retry::default();
            return;
        }
        self.backoff = if self.backoff.is_zero() { Self::FIRST } else { (self.backoff * 2).min(Self::MAX) };
        self.due = Some(std::time::Instant::now() + self.backoff);
        session.status().queued(1, true);
    }
}

/// Where a watch reports: its batches, and the catch-up run's progress.
struct Watching<'a> {
    report: &'a dyn Fn(WatchReport),
    catch_up: &'a dyn ProgressSink,
}

/// One event (or error) as the OS watcher reports it.
type WatchEvent = notify::Result<notify::Event>;

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

/// Whether a batch touched an ignore file, which can change what is ignored below it (or
/// `.gitmodules`: a submodule added or removed brings or takes its own rules).
fn touches_ignore_file(paths: &BTreeSet<PathBuf>) -> bool {
    paths.iter().any(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| matches!(n, ".gitignore" | ".ignore" | ".gitmodules" | DOCDEX_IGNORE))
    })
}

/// The registered sources a watch follows, as last read.
struct FollowedSources {
    /// The list's saved version, read before the list (a save in between is seen next time).
    version: u64,
    list: Vec<Source>,
    /// Each source folder's identity: one deleted and made again is another directory.
    dirs: Vec<Option<(u64, u64)>>,
    checked: std::time::Instant,
}

impl FollowedSources {
    fn read(state_dir: &Path) -> FollowedSources {
        let version = sources::saved_version(state_dir);
        let list = sources::load_indexable(state_dir);
        let dirs = source_identities(&list);
        FollowedSources { version, list, dirs, checked: std::time::Instant::now() }
    }
}

/// One debounced batch of events as paths to apply; the watches follow what it shows (a
/// directory made is watched with what it holds, a changed ignore file or root re-syncs them
/// all to what a full walk enters now, one gone is forgotten).
fn gather(repo: &RepoRef, watches: &mut Watches, events: Vec<WatchEvent>, report: &dyn Fn(WatchReport)) -> Batch {
    let mut batch = Batch::default();
    let filter = watches.filter();
    for ev in events {
        collect(repo, &filter, ev, &mut batch, report);
    }
    for gone in &batch.gone {
        watches.forget(gone);
    }
    if batch.paths.contains(&repo.root) || touches_ignore_file(&batch.paths) {
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
    batch
}

/// Which directory each source folder is now (none while it is missing).
fn source_identities(sources: &[Source]) -> Vec<Option<(u64, u64)>> {
    sources.iter().map(|s| crate::engine::fsutil::dir_identity(&s.path)).collect()
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

/// Adds the relevant paths of one event to `batch` (those of the repository and of a watched
/// source, skipping `.git/` and docdex's own state; the root when the OS dropped events or a
/// git rule file changed), and notes directories made, opened up or gone.
fn collect(repo: &RepoRef, filter: &Filter, ev: WatchEvent, batch: &mut Batch, report: &dyn Fn(WatchReport)) {
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
        if filter.names_rule(p) || filter.names_repo(p) {
            // git's own ignore lists (`.git/info/exclude`, a submodule's or a nested
            // repository's, `core.excludesFile` in a config, the user's excludes file), or a
            // repository made inside: as `.gitignore`, a full run (the root stands for one)
            // drops what they now exclude and adds what they no longer do.
            batch.paths.insert(repo.root.clone());
            continue;
        }
        if !filter.in_tree(p) || p.starts_with(&repo.state_dir) {
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
