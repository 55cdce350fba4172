//! Repositories a server keeps fresh. Mounting a repo starts its watcher on a
//! thread of its own (`Engine::watch`: a catch-up run, then debounced updates),
//! so the server is the repo's single index writer. When another process
//! already holds the writer (a `docdex watch`, another server, a long
//! `docdex index`), the mount only reads and retries taking over when that
//! writer goes away: a server never becomes a second writer.
//!
//! `docdex serve` mounts its one repo at start; `docdex daemon` mounts repos on
//! `POST /v1/initialize` (and, for indexed repos, on first use).

use crate::engine::fsutil::FileLock;
use crate::engine::index::status::StatusData;
use crate::engine::protocol::{IndexProgress, IndexState};
use crate::engine::repos::RepoRef;
use crate::engine::watch::WatchReport;
use crate::engine::Engine;
use crate::error::{Error, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::watch;

/// What a mount's watcher is doing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum MountState {
    /// The watcher's catch-up run is bringing the index up to date (or building it).
    CatchingUp,
    /// Caught up; the watcher applies changes as files are saved.
    Watching,
    /// Another process holds the writer; this server reads and retries taking over.
    Deferred {
        /// The writer's pid (0 when unknown).
        writer_pid: u32,
    },
    /// The watcher failed; the last good index (if any) still answers. Retried with backoff.
    Failed {
        /// Why.
        message: String,
    },
    /// The server is shutting down.
    Stopped,
}

/// The answer to `POST /v1/initialize` and a mount's entry in `/v1/status`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct MountInfo {
    /// `ready` (searchable and current), `indexing` (no usable index yet; a first index
    /// runs in the background) or `stale` (searchable, and a catch-up run or another
    /// process is bringing it up to date).
    pub status: String,
    /// The repo id (SHA-256 fingerprint of the canonical path); accepted wherever a repo is named.
    pub repo_id: String,
    /// Canonical root.
    pub repo: PathBuf,
    /// The watcher's state.
    pub watcher: MountState,
    /// Progress of a run in flight.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress: Option<IndexProgress>,
}

/// One mounted repo.
pub struct Mount {
    /// The repo.
    pub repo: RepoRef,
    state: watch::Sender<MountState>,
}

impl Mount {
    /// The watcher's current state.
    pub fn state(&self) -> MountState {
        self.state.borrow().clone()
    }

    /// Waits up to `max` for the watcher to leave the catch-up state.
    pub async fn settle(&self, max: Duration) {
        let mut rx = self.state.subscribe();
        let _ = tokio::time::timeout(max, rx.wait_for(|s| *s != MountState::CatchingUp)).await;
    }

    /// The `ready` / `indexing` / `stale` view of this mount.
    pub fn info(&self) -> MountInfo {
        let watcher = self.state();
        let indexed = has_index(&self.repo);
        let live = StatusData::read(&self.repo.status_path()).filter(|(_, interrupted)| !interrupted).map(|(d, _)| d);
        let updating = live.as_ref().is_some_and(|d| d.state == IndexState::Updating || d.queued > 0);
        let status = match (&watcher, indexed) {
            (_, false) => "indexing",
            (MountState::CatchingUp, true) => "stale",
            (MountState::Deferred { .. }, true) if updating => "stale",
            (MountState::Watching, true) if updating => "stale",
            _ => "ready",
        };
        MountInfo {
            status: status.into(),
            repo_id: self.repo.fingerprint.clone(),
            repo: self.repo.root.clone(),
            watcher,
            progress: live.and_then(|d| d.progress),
        }
    }
}

/// True when the repo has a committed index on disk.
pub fn has_index(repo: &RepoRef) -> bool {
    repo.index_dir().join("meta.json").exists() && repo.manifest_path().exists()
}

/// The set of mounted repos and their watcher threads.
pub struct Mounts {
    engine: Engine,
    mounts: Mutex<HashMap<String, Arc<Mount>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    stop: Arc<AtomicBool>,
    watch: bool,
}

impl Mounts {
    /// An empty set; with `watch` false, mounts only read (no watcher, no writer).
    pub fn new(engine: Engine, watch: bool) -> Mounts {
        Mounts {
            engine,
            mounts: Mutex::new(HashMap::new()),
            threads: Mutex::new(Vec::new()),
            stop: Arc::new(AtomicBool::new(false)),
            watch,
        }
    }

    /// The mount for a fingerprint, if mounted.
    pub fn get(&self, fingerprint: &str) -> Option<Arc<Mount>> {
        self.mounts.lock().ok()?.get(fingerprint).cloned()
    }

    /// Every mount, sorted by path.
    pub fn all(&self) -> Vec<Arc<Mount>> {
        let mut all: Vec<Arc<Mount>> = self.mounts.lock().map(|m| m.values().cloned().collect()).unwrap_or_default();
        all.sort_by(|a, b| a.repo.root.cmp(&b.repo.root));
        all
    }

    /// Mounts `path` (idempotent): registers it and starts its watcher.
    pub fn mount(&self, path: &Path) -> Result<Arc<Mount>> {
        let repo = self.engine.resolve_repo(path)?;
        let mut mounts = self.mounts.lock().map_err(|_| Error::BadRequest("mount table poisoned".into()))?;
        if let Some(m) = mounts.get(&repo.fingerprint) {
            return Ok(m.clone());
        }
        if self.stop.load(Ordering::SeqCst) {
            return Err(Error::BadRequest("the server is shutting down".into()));
        }
        let initial = if self.watch { MountState::CatchingUp } else { MountState::Deferred { writer_pid: 0 } };
        let (tx, _) = watch::channel(initial);
        let mount = Arc::new(Mount { repo: repo.clone(), state: tx });
        mounts.insert(repo.fingerprint.clone(), mount.clone());
        drop(mounts);
        if self.watch {
            let (engine, stop, m) = (self.engine.clone(), self.stop.clone(), mount.clone());
            let name = format!("watch-{}", &repo.fingerprint[..8]);
            let handle = std::thread::Builder::new()
                .name(name)
                .spawn(move || run_watcher(&engine, &m, &stop))
                .map_err(|e| Error::io("starting the watcher thread for", &repo.root, e))?;
            if let Ok(mut t) = self.threads.lock() {
                t.push(handle);
            }
        }
        tracing::info!(repo = %repo.root.display(), "mounted");
        Ok(mount)
    }

    /// Stops every watcher and waits for them to release their writers.
    pub fn shutdown(&self) {
        self.stop.store(true, Ordering::SeqCst);
        let threads: Vec<JoinHandle<()>> = self.threads.lock().map(|mut t| t.drain(..).collect()).unwrap_or_default();
        for t in threads {
            let _ = t.join();
        }
        for m in self.all() {
            m.state.send_replace(MountState::Stopped);
        }
    }
}

/// The watcher loop of one mount: watch until stopped; defer to another writer; retry failures.
fn run_watcher(engine: &Engine, mount: &Mount, stop: &AtomicBool) {
    let mut backoff = Duration::from_secs(1);
    while !stop.load(Ordering::SeqCst) {
        mount.state.send_replace(MountState::CatchingUp);
        let report = |r: WatchReport| match r {
            WatchReport::Ready(summary) => {
                tracing::info!(repo = %mount.repo.root.display(), files = summary.files, "index current; watching");
                release_free_memory();
                mount.state.send_replace(MountState::Watching);
            }
            WatchReport::Applied { paths, .. } => tracing::debug!(files = paths.len(), "applied changes"),
            WatchReport::Failed(message) => tracing::warn!(repo = %mount.repo.root.display(), "{message}"),
        };
        match engine.watch(&mount.repo.root, stop, &report) {
            Ok(()) => break,
            Err(Error::IndexBusy { pid, .. }) => {
                mount.state.send_replace(MountState::Deferred { writer_pid: pid });
                tracing::info!(pid, repo = %mount.repo.root.display(), "another process writes this index; reading only");
                // Retry once the writer lock is free: a cheap lock probe, no state-file churn meanwhile.
                let lock = engine.paths().locks().join(format!("{}.writer.lock", mount.repo.fingerprint));
                while !stop.load(Ordering::SeqCst) && !matches!(FileLock::try_acquire(&lock), Ok(Some(_))) {
                    sleep_unless_stopped(stop, Duration::from_millis(500));
                }
            }
            Err(e) => {
                tracing::warn!(repo = %mount.repo.root.display(), "watcher failed: {e}; retrying in {backoff:?}");
                mount.state.send_replace(MountState::Failed { message: e.to_string() });
                sleep_unless_stopped(stop, backoff);
                backoff = (backoff * 2).min(Duration::from_secs(60));
            }
        }
    }
    mount.state.send_replace(MountState::Stopped);
}

fn sleep_unless_stopped(stop: &AtomicBool, total: Duration) {
    let step = Duration::from_millis(100);
    let mut slept = Duration::ZERO;
    while slept < total && !stop.load(Ordering::SeqCst) {
        std::thread::sleep(step);
        slept += step;
    }
}

/// Returns memory freed by a large run (the catch-up walk) to the OS, so an idle server's
/// resident size reflects what it holds, not what indexing once needed.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free heap pages; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}
