//! Keeping an index fresh: a debounced file watcher feeding changed paths to
//! an open [`IndexSession`]. Events are deduplicated per path and batched;
//! while one update runs, new events queue up and are applied together
//! (throttling), and search keeps answering from the last commit throughout.

use crate::engine::index::sources::{self, Source};
use crate::engine::index::types::{IndexProgress, IndexSummary, ProgressSink};
use crate::engine::index::walk::DOCDEX_IGNORE;
use crate::engine::index::{IndexSession, Scope};
use crate::engine::repos::RepoRef;
use crate::engine::Engine;
use crate::error::{Error, Result};
use notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{new_debouncer_opt, DebounceEventResult, RecommendedCache};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
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
        let (mut debouncer, rx) = self.start_debouncer()?;
        let mut root_watch = RootWatch::start(&mut debouncer, &repo.root)?;
        root_watch.report_refused(&repo.root, report);
        // Registered sources with `watch` are followed too; `docdex add` / `remove-source` while
        // this runs are picked up within a second (a full run indexes or drops the folder).
        let mut sources = sources::load_indexable(&repo.state_dir);
        follow_sources(&mut debouncer, &[], &sources, report);
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
                    follow_sources(&mut debouncer, &sources, &now, report);
                    sources = now;
                    source_dirs = dirs;
                    session.status().queued(1, true);
                    self.apply(&repo, session, BTreeSet::from([repo.root.clone()]), report);
                    session.status().queued(0, true);
                }
            }
            let first = match rx.recv_timeout(Duration::from_millis(200)) {
                Ok(batch) => batch,
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            };
            let mut paths = BTreeSet::new();
            let mut dirs_changed = false;
            let mut opened = BTreeSet::new();
            collect(&repo, &sources, first, &mut paths, (&mut dirs_changed, &mut opened), report);
            // Anything that arrived meanwhile joins this batch.
            while let Ok(more) = rx.try_recv() {
                collect(&repo, &sources, more, &mut paths, (&mut dirs_changed, &mut opened), report);
            }
            if root_watch.must_rewatch(&paths) {
                // A directory appeared, went or changed beside one that refused a watch: watch
                // again (it may be readable now), and compare the whole tree.
                check_root(&repo.root, root_id)?;
                root_watch.rewatch(&mut debouncer)?;
                root_watch.report_refused(&repo.root, report);
                paths.insert(repo.root.clone());
            } else {
                // Sorted, so a directory comes before those inside it, which its watch covers.
                let mut done: Vec<&PathBuf> = Vec::new();
                for dir in &opened {
                    if !done.iter().any(|d| dir.starts_with(d)) {
                        root_watch.watch_dir(&mut debouncer, dir, report);
                        done.push(dir);
                    }
                }
            }
            if dirs_changed {
                // The directory structure changed: cached project maps are stale.
                self.invalidate_maps(&repo);
            }
            if paths.is_empty() {
                continue;
            }
            // A root deleted or moved away reads as every file deleted: end the watch before
            // that batch empties an index the root may well come back to.
            check_root(&repo.root, root_id)?;
            session.status().queued(paths.len() as u64, true);
            self.apply(&repo, session, paths, report);
            session.status().queued(0, true);
        }
        Ok(())
    }

    /// A debounced watcher (nothing watched yet), its batches on the returned channel.
    fn start_debouncer(&self) -> Result<(Debouncer, mpsc::Receiver<DebounceEventResult>)> {
        let (tx, rx) = mpsc::channel::<DebounceEventResult>();
        let debounce = Duration::from_millis(self.config().index.watch_debounce_ms);
        // Symlinks are never followed: a link to a directory outside the repo must not even be
        // watched (its events would name paths inside the repo).
        let config = notify::Config::default().with_follow_symlinks(false);
        let debouncer = new_debouncer_opt::<_, RecommendedWatcher, RecommendedCache>(
            debounce,
            None,
            tx,
            RecommendedCache::new(),
            config,
        )
        .map_err(|e| Error::Watch(e.to_string()))?;
        Ok((debouncer, rx))
    }

    fn apply(
        &self,
        repo: &RepoRef,
        session: &mut IndexSession,
        paths: BTreeSet<PathBuf>,
        report: &dyn Fn(WatchReport),
    ) {
        // A changed ignore file can change what belongs in the index anywhere below it.
        let ignore_changed = paths.iter().any(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| matches!(n, ".gitignore" | ".ignore" | DOCDEX_IGNORE))
        });
        // The repository root itself stands for a full run (sources changed).
        let full = ignore_changed || paths.contains(&repo.root);
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

/// The watcher this module runs: notify's recommended backend, debounced.
type Debouncer = notify_debouncer_full::Debouncer<RecommendedWatcher, RecommendedCache>;

/// At most this many directories may refuse a watch before the watch fails: each costs one
/// more registration pass over the tree.
const MAX_REFUSED: usize = 64;

/// The OS watches on the repository: one recursive watch on the root, or, when directories
/// refuse a watch (permission denied: a container's data volume owned by another user), a
/// non-recursive watch on each directory above them (the spine) and a recursive one on every
/// other directory beside it. (A recursive watch fails whole at the first such directory, so
/// one unreadable folder kept `docdex watch` and a server's live re-index from ever starting.)
struct RootWatch {
    root: PathBuf,
    /// Directories that refused a watch, and why.
    refused: Vec<(PathBuf, String)>,
    /// Directories above a refused one, watched without their subdirectories.
    spine: std::collections::HashSet<PathBuf>,
    /// Every path watched, to unwatch them all.
    watched: Vec<PathBuf>,
    /// Refused directories already reported (each is named once, not at every rewatch).
    reported: std::collections::HashSet<PathBuf>,
}

impl RootWatch {
    fn start(debouncer: &mut Debouncer, root: &Path) -> Result<RootWatch> {
        let mut w = RootWatch {
            root: root.to_path_buf(),
            refused: Vec::new(),
            spine: Default::default(),
            watched: Vec::new(),
            reported: Default::default(),
        };
        w.rewatch(debouncer)?;
        Ok(w)
    }

    /// Drops every watch and registers again, finding the refused directories anew.
    fn rewatch(&mut self, debouncer: &mut Debouncer) -> Result<()> {
        self.refused.clear();
        loop {
            self.unwatch(debouncer);
            let root = self.root.clone();
            let err = match self.register(debouncer, &root) {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            self.unwatch(debouncer);
            match refused_dir(&err, &self.root) {
                Some(dir) if self.refused.len() < MAX_REFUSED && !self.refused.iter().any(|(d, _)| *d == dir) => {
                    self.refused.push((dir, cause(&err)));
                }
                _ => return Err(Error::Watch(err.to_string())),
            }
        }
    }

    /// Watches `dir`: recursively when no refused directory is inside it.
    fn register(&mut self, debouncer: &mut Debouncer, dir: &Path) -> notify::Result<()> {
        if !self.refused.iter().any(|(r, _)| r.starts_with(dir)) {
            self.watched.push(dir.to_path_buf());
            return debouncer.watch(dir, RecursiveMode::Recursive);
        }
        self.watched.push(dir.to_path_buf());
        self.spine.insert(dir.to_path_buf());
        debouncer.watch(dir, RecursiveMode::NonRecursive)?;
        let subdirs: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| notify::Error::io(e).add_path(dir.to_path_buf()))?
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .filter(|p| !self.refused.iter().any(|(r, _)| r == p))
            .collect();
        for sub in subdirs {
            self.register(debouncer, &sub)?;
        }
        Ok(())
    }

    /// Watches a directory made or opened up while watching (see [`opens_dir`]); one the OS
    /// refuses is named like those found at the start.
    fn watch_dir(&mut self, debouncer: &mut Debouncer, dir: &Path, report: &dyn Fn(WatchReport)) {
        match debouncer.watch(dir, RecursiveMode::Recursive) {
            Ok(()) => {
                self.watched.push(dir.to_path_buf());
                self.refused.retain(|(r, _)| r != dir);
            }
            Err(e) => match refused_dir(&e, &self.root) {
                Some(d) if !self.refused.iter().any(|(r, _)| *r == d) => {
                    self.refused.push((d, cause(&e)));
                    let root = self.root.clone();
                    self.report_refused(&root, report);
                }
                _ => tracing::debug!(dir = %dir.display(), "not watching: {e}"),
            },
        }
    }

    fn unwatch(&mut self, debouncer: &mut Debouncer) {
        for p in self.watched.drain(..).rev() {
            let _ = debouncer.unwatch(&p);
        }
        self.spine.clear();
    }

    /// Whether a batch touched a directory of the spine or a directory (or a name gone) right
    /// under one: notify adds no watch for a directory made in a non-recursive one.
    fn must_rewatch(&self, paths: &BTreeSet<PathBuf>) -> bool {
        !self.spine.is_empty()
            && paths.iter().any(|p| {
                self.spine.contains(p)
                    || p.parent().is_some_and(|d| self.spine.contains(d)) && (p.is_dir() || !p.exists())
            })
    }

    /// Names each directory newly refused (its files stay out of the index: no run can read
    /// them either).
    fn report_refused(&mut self, root: &Path, report: &dyn Fn(WatchReport)) {
        for (dir, why) in &self.refused {
            if !self.reported.insert(dir.clone()) {
                continue;
            }
            let rel = crate::engine::index::walk::rel_path(root, dir);
            tracing::debug!(dir = %dir.display(), "not watching: {why}");
            report(WatchReport::Failed(format!(
                "not watching {rel}/ ({why}); the rest of the repository is watched, and {rel}/ \
                 is watched and indexed once this user may read it"
            )));
        }
        self.reported.retain(|d| self.refused.iter().any(|(r, _)| r == d));
    }
}

/// The directory inside `root` (not `root` itself) that a failed watch names, when the OS
/// refused it for permissions.
fn refused_dir(err: &notify::Error, root: &Path) -> Option<PathBuf> {
    let denied = match &err.kind {
        notify::ErrorKind::Io(e) => e.kind() == std::io::ErrorKind::PermissionDenied,
        _ => false,
    };
    let path = err.paths.first()?;
    (denied && path != root && path.starts_with(root)).then(|| path.clone())
}

/// A notify error's cause without the paths notify appends.
fn cause(err: &notify::Error) -> String {
    match &err.kind {
        notify::ErrorKind::Io(e) => e.to_string(),
        other => format!("{other:?}"),
    }
}

/// Which directory each source folder is now (none while it is missing).
fn source_identities(sources: &[Source]) -> Vec<Option<(u64, u64)>> {
    sources.iter().map(|s| crate::engine::fsutil::dir_identity(&s.path)).collect()
}

/// Moves the watch from the sources `before` to the sources `now` (those with `watch`).
fn follow_sources(debouncer: &mut Debouncer, before: &[Source], now: &[Source], report: &dyn Fn(WatchReport)) {
    for s in before.iter().filter(|s| s.watch) {
        let _ = debouncer.unwatch(&s.path);
    }
    for s in now.iter().filter(|s| s.watch) {
        if let Err(e) = debouncer.watch(&s.path, RecursiveMode::Recursive) {
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

/// Adds the relevant paths of a debounced batch (skipping `.git/` and docdex's own state; a
/// watched source's paths included; the root when the OS dropped events), and notes whether a directory was created, removed or
/// renamed in the repository.
fn collect(
    repo: &RepoRef,
    sources: &[Source],
    batch: DebounceEventResult,
    out: &mut BTreeSet<PathBuf>,
    (dirs_changed, opened): (&mut bool, &mut BTreeSet<PathBuf>),
    report: &dyn Fn(WatchReport),
) {
    match batch {
        Ok(events) => {
            for ev in events {
                if ev.event.need_rescan() {
                    // The OS dropped events (inotify's queue overflowed: a checkout of
                    // thousands of files while this process was busy or stopped). Which paths
                    // changed is unknown, so the whole tree is compared with the manifest; the
                    // root stands for a full run. (Ignored, such a checkout left hundreds of
                    // files searchable with their old content.)
                    tracing::info!("the OS dropped file events; comparing the whole tree");
                    out.insert(repo.root.clone());
                    *dirs_changed = true;
                    continue;
                }
                if ev.kind.is_access() {
                    continue;
                }
                for p in &ev.event.paths {
                    if sources.iter().any(|s| s.watch && p.starts_with(&s.path)) {
                        out.insert(p.clone());
                        continue;
                    }
                    if !p.starts_with(&repo.root) || p.starts_with(&repo.state_dir) {
                        continue;
                    }
                    let rel = p.strip_prefix(&repo.root).unwrap_or(p);
                    if rel == Path::new(".git/info/exclude") {
                        // The repository's own ignore list, as `.gitignore`: a full run (the
                        // root stands for one) drops what it now excludes and adds what it no
                        // longer does.
                        out.insert(repo.root.clone());
                        continue;
                    }
                    if rel.components().next().is_some_and(|c| c.as_os_str() == ".git") {
                        continue;
                    }
                    *dirs_changed |= is_dir_event(&ev.kind, p);
                    if opens_dir(&ev.kind, p) {
                        opened.insert(p.clone());
                    }
                    out.insert(p.clone());
                }
            }
        }
        Err(errors) => {
            for e in errors {
                report(WatchReport::Failed(format!("watch error: {e}")));
            }
        }
    }
}

/// A directory made, or whose permissions or owner changed (never through a link): notify
/// watches a directory made in a watched one, but passes over one it may not read then, and
/// never watched it again once readable (a container's volume made `700` and chowned later).
fn opens_dir(kind: &notify::EventKind, p: &Path) -> bool {
    use notify::event::ModifyKind;
    use notify::EventKind;
    matches!(kind, EventKind::Create(_) | EventKind::Modify(ModifyKind::Metadata(_)))
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
