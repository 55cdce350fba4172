//! Keeping a repository fresh for a long-running process (a server's mount,
//! the workbench's watch toggle): watch it as its single index writer, or,
//! when another process already writes it (a `docdex watch`, another server, a
//! long `docdex index`), only read and take over once that writer is gone.
//! Failures are retried with backoff. Surfaces call [`Engine::keep_fresh`] on a
//! thread of their own and show the [`FreshState`] it reports; none of them
//! touches the writer lock or the status file itself.

use crate::engine::fsutil::{pid_alive, FileLock};
use crate::engine::index::status::StatusData;
use crate::engine::index::types::{IndexProgress, IndexState};
use crate::engine::index::Scope;
use crate::engine::repos::RepoRef;
use crate::engine::watch::WatchReport;
use crate::engine::Engine;
use crate::error::Error;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Where a repository's keeper stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum FreshState {
    /// The watcher's catch-up run is bringing the index up to date (or building it).
    CatchingUp,
    /// Caught up; the watcher applies changes as files are saved.
    Watching,
    /// Another process holds the writer; this one reads and retries taking over.
    Deferred {
        /// The writer's pid as its lock file names it (0 when unknown or no longer running).
        writer_pid: u32,
    },
    /// The watcher failed; the last good index (if any) still answers. Retried with backoff.
    Failed {
        /// Why.
        message: String,
    },
    /// Stopped (the process is shutting down or the user turned watching off).
    Stopped,
}

/// What [`Engine::keep_fresh`] reports as it goes.
// One event per state change or batch, handed to a callback by reference: boxing the large
// variant would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum FreshEvent {
    /// The keeper's state changed.
    State(FreshState),
    /// The watcher's own report: the catch-up run's summary, an applied batch, a failed batch.
    Watch(WatchReport),
}

/// A kept-fresh repository as a client sees it (`POST /v1/initialize`, `/v1/status`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Freshness {
    /// `ready` (searchable and current), `indexing` (no usable index yet; a first index
    /// runs in the background), `stale` (searchable, and a catch-up run or another
    /// process is bringing it up to date) or `missing` (its folder is gone: deleted or moved).
    pub status: String,
    /// The repo id (SHA-256 fingerprint of the canonical path); accepted wherever a repo is named.
    pub repo_id: String,
    /// Canonical root.
    pub repo: PathBuf,
    /// The keeper's state.
    pub watcher: FreshState,
    /// Progress of a run in flight.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress: Option<IndexProgress>,
}

impl Engine {
    /// Keeps `repo_path`'s index current until `stop` is set: watches it as the single
    /// writer (catch-up run, then debounced updates); defers to another process that holds
    /// the writer, taking over when it lets go; retries failures with backoff (1 s doubling
    /// to 60 s). Reports every state change and the watcher's batches through `report`.
    pub fn keep_fresh(&self, repo_path: &Path, stop: &AtomicBool, report: &dyn Fn(FreshEvent)) {
        let span = tracing::info_span!("keep_fresh", repo = %repo_path.display());
        let _entered = span.enter();
        let mut backoff = Duration::from_secs(1);
        // The folder mounted, by its real path: a restart resolved `repo_path` again, and a
        // root swapped for a link led the watcher into the link's target for good (tour36 F1).
        let mounted = self.resolve_repo(repo_path).map(|r| r.root).unwrap_or_else(|_| repo_path.to_path_buf());
        while !stop.load(Ordering::SeqCst) {
            if let Some(why) = root_gone(&mounted) {
                report(FreshEvent::State(FreshState::Failed { message: why }));
                sleep_unless_stopped(stop, Duration::from_secs(1));
                continue;
            }
            report(FreshEvent::State(FreshState::CatchingUp));
            let watch_report = |r: WatchReport| {
                let ready = matches!(r, WatchReport::Ready(_));
                report(FreshEvent::Watch(r));
                if ready {
                    report(FreshEvent::State(FreshState::Watching));
                }
            };
            match self.watch(&mounted, stop, &watch_report) {
                Ok(()) => break,
                Err(Error::IndexStopped { .. }) if stop.load(Ordering::SeqCst) => break,
                Err(Error::IndexBusy { pid, .. }) => {
                    report(FreshEvent::State(FreshState::Deferred { writer_pid: pid }));
                    // Said at the default log level: a second server on the same repository
                    // otherwise starts silently without a watcher of its own.
                    tracing::warn!(
                        "another docdex process (pid {pid}) keeps {} fresh; this one reads its index and takes over when it exits",
                        repo_path.display()
                    );
                    self.wait_for_writer(repo_path, stop);
                }
                Err(e) => {
                    tracing::warn!("watcher failed: {e}; retrying in {backoff:?}");
                    report(FreshEvent::State(FreshState::Failed { message: e.to_string() }));
                    sleep_unless_stopped(stop, backoff);
                    backoff = (backoff * 2).min(Duration::from_secs(60));
                }
            }
        }
        report(FreshEvent::State(FreshState::Stopped));
    }

    /// Waits until no process holds the repo's writer (a cheap lock probe every half second,
    /// no state-file churn meanwhile) or `stop` is set.
    fn wait_for_writer(&self, repo_path: &Path, stop: &AtomicBool) {
        let Ok(repo) = self.resolve_repo(repo_path) else { return };
        let lock = self.writer_lock_path(&repo);
        while !stop.load(Ordering::SeqCst) && !matches!(FileLock::try_acquire(&lock), Ok(Some(_))) {
            sleep_unless_stopped(stop, Duration::from_millis(500));
        }
    }

    /// `locks/<fingerprint>.writer.lock`: the index writer's lock (also `graph rebuild`'s).
    pub(crate) fn writer_lock_path(&self, repo: &RepoRef) -> PathBuf {
        self.paths().locks().join(format!("{}.writer.lock", repo.fingerprint))
    }

    /// The process writing `repo`'s index, as its writer lock file names it now, or 0 when
    /// that is unknown, this process, or a process that has exited. Read each time it is
    /// asked: a keeper that defers learns the writer's pid once, and the writer can change
    /// while it waits (it stopped and a third process took over), so the pid it learned goes
    /// stale; and a dead pid is never a writer.
    pub fn writer_pid(&self, repo: &RepoRef) -> u32 {
        let pid = FileLock::holder_pid(&self.writer_lock_path(repo));
        if pid == std::process::id() || !pid_alive(pid) {
            return 0;
        }
        pid
    }

    /// Brings the index up to date for `files` (repo-relative) that changed after its last
    /// commit, when no other process writes it: a context pack cites lines, and the lines of a
    /// file edited since were another function's (tour35 F2). Does nothing when a watcher or a
    /// run holds the writer (it is bringing them in) or there is no index yet. Embeddings wait
    /// for the next run. `Some(true)` when the index changed, `None` when it was not looked at.
    pub(crate) fn refresh_files(&self, repo: &RepoRef, files: &[String]) -> Option<bool> {
        if files.is_empty() || !self.has_index(repo) || self.writer_pid(repo) != 0 {
            return None;
        }
        let mut session = match self.open_index_session(repo, false) {
            Ok(s) if s.rebuilding().is_none() => s,
            Ok(_) => return None,
            Err(e) => {
                tracing::debug!("index not refreshed before citing lines: {e}");
                return None;
            }
        };
        let paths = files.iter().map(|f| repo.root.join(f)).collect();
        let changed = match session.update(&Scope::Paths(paths), &|_: &IndexProgress| {}) {
            Ok(s) => {
                let _ = self.record_indexed(repo, &s);
                self.prepare_search(repo);
                Some(s.added + s.updated + s.deleted > 0)
            }
            Err(e) => {
                tracing::warn!("index not refreshed before citing lines: {e}");
                None
            }
        };
        let _ = session.finish();
        changed
    }

    /// Whether `rel` (repo-relative) was modified or renamed (its status-change time) after
    /// the index's last commit, so what the index says of it may be out of date.
    pub(crate) fn edited_since_commit(repo: &RepoRef, rel: &str) -> bool {
        use crate::engine::fsutil::{ctime_ns, mtime_ns};
        let commit = std::fs::metadata(repo.index_dir().join("meta.json")).map(|m| mtime_ns(&m)).ok();
        let touched = std::fs::symlink_metadata(repo.root.join(rel)).map(|m| mtime_ns(&m).max(ctime_ns(&m))).ok();
        matches!((touched, commit), (Some(t), Some(c)) if t > c)
    }

    /// True when the repo has a committed index on disk.
    pub fn has_index(&self, repo: &RepoRef) -> bool {
        repo.index_dir().join("meta.json").exists() && repo.manifest_path().exists()
    }

    /// The `ready` / `indexing` / `stale` view of a kept-fresh repo whose keeper is in `watcher`.
    /// A deferred keeper's `writer_pid` is read afresh ([`Engine::writer_pid`]), not the one it
    /// recorded when it began to wait.
    pub fn freshness(&self, repo: &RepoRef, watcher: FreshState) -> Freshness {
        let watcher = match watcher {
            FreshState::Deferred { .. } => FreshState::Deferred { writer_pid: self.writer_pid(repo) },
            other => other,
        };
        let indexed = self.has_index(repo);
        let live = StatusData::read(&repo.status_path()).filter(|(_, interrupted)| !interrupted).map(|(d, _)| d);
        let updating = live.as_ref().is_some_and(|d| d.state == IndexState::Updating || d.queued > 0);
        let status = match (&watcher, indexed) {
            // Deleted or moved while mounted: its index answers for files that are gone (it
            // read `ready`, tour32 F5).
            _ if root_gone(&repo.root).is_some() => "missing",
            (_, false) => "indexing",
            (FreshState::CatchingUp, true) => "stale",
            (FreshState::Deferred { .. }, true) if updating => "stale",
            (FreshState::Watching, true) if updating => "stale",
            _ => "ready",
        };
        Freshness {
            status: status.into(),
            repo_id: repo.fingerprint.clone(),
            repo: repo.root.clone(),
            watcher,
            progress: live.and_then(|d| d.progress),
        }
    }
}

fn sleep_unless_stopped(stop: &AtomicBool, total: Duration) {
    let step = Duration::from_millis(100);
    let mut slept = Duration::ZERO;
    while slept < total && !stop.load(Ordering::SeqCst) {
        std::thread::sleep(step);
        slept += step;
    }
}

/// Why the mounted folder `root` (a real path) cannot be watched now: gone, no longer a folder,
/// or replaced by a symbolic link (whose target is not the repository). `None` when it is there.
pub(crate) fn root_gone(root: &Path) -> Option<String> {
    let shown = crate::error::shell_path(root);
    match std::fs::symlink_metadata(root) {
        Err(_) => Some(format!("{shown} is missing (deleted or moved); watching resumes when it is back")),
        Ok(m) if m.file_type().is_symlink() => Some(format!(
            "{shown} was replaced by a symbolic link; docdex follows no link out of a repository, so watching resumes when the folder itself is back"
        )),
        Ok(m) if !m.is_dir() => Some(format!("{shown} is no longer a folder; watching resumes when it is back")),
        Ok(_) => None,
    }
}
