//! Repositories a server keeps fresh. Mounting a repo runs the engine's keeper
//! ([`Engine::keep_fresh`]: a catch-up run, then debounced updates) on a thread
//! of its own, so the server is the repo's single index writer; when another
//! process already writes it, the keeper only reads and takes over when that
//! writer goes away. This file only tracks the mounts and publishes each
//! keeper's state for `/v1/status`, `/v1/initialize` and `docdex_status`.
//!
//! `docdex serve` mounts its one repo at start; `docdex daemon` mounts repos on
//! `POST /v1/initialize` (and, for indexed repos, on first use).
//!
//! A keeper holds the repository's index writer, an OS watch per directory and a thread or
//! eight (the writer's merge and indexing threads): about 2.5 MB, 8 threads and 7 descriptors a
//! repository. A daemon mounted every repository a client named, for ever (150 mounts took
//! 430 MB, 1,151 threads and 1,012 descriptors, which the connection cap counts on). At most
//! `[server] max_repos` are kept: mounting one more stops the keeper of the one used least
//! recently, which is mounted again (and caught up) when next named.

use crate::engine::protocol::{FreshEvent, FreshState, Freshness, RepoRef, WatchReport};
use crate::engine::Engine;
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::watch;

/// One mounted repo.
pub struct Mount {
    /// The repo.
    pub repo: RepoRef,
    engine: Engine,
    state: watch::Sender<FreshState>,
    /// Set to stop this mount's keeper (at shutdown, or when it is let go for another).
    stop: Arc<AtomicBool>,
    /// When a request last named it (ms since the Unix epoch): the least recent is let go.
    used: AtomicU64,
}

impl Mount {
    fn touch(&self) {
        self.used.store(crate::engine::protocol::now_ms(), Ordering::Relaxed);
    }

    /// The keeper's current state.
    pub fn state(&self) -> FreshState {
        self.state.borrow().clone()
    }

    /// Waits up to `max` for the keeper to leave the catch-up state.
    pub async fn settle(&self, max: Duration) {
        let mut rx = self.state.subscribe();
        let _ = tokio::time::timeout(max, rx.wait_for(|s| *s != FreshState::CatchingUp)).await;
    }

    /// The `ready` / `indexing` / `stale` view of this mount.
    pub fn info(&self) -> Freshness {
        self.engine.freshness(&self.repo, self.state())
    }
}

/// The set of mounted repos and their watcher threads.
pub struct Mounts {
    engine: Engine,
    mounts: Mutex<HashMap<String, Arc<Mount>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    stop: Arc<AtomicBool>,
    watch: bool,
    /// The most mounts kept (`[server] max_repos`).
    max: usize,
}

impl Mounts {
    /// An empty set keeping at most `max` mounts; with `watch` false, mounts only read (no
    /// watcher, no writer).
    pub fn new(engine: Engine, watch: bool, max: usize) -> Mounts {
        Mounts {
            engine,
            mounts: Mutex::new(HashMap::new()),
            threads: Mutex::new(Vec::new()),
            stop: Arc::new(AtomicBool::new(false)),
            watch,
            max: max.max(1),
        }
    }

    /// The mount for a fingerprint, if mounted (it counts as used).
    pub fn get(&self, fingerprint: &str) -> Option<Arc<Mount>> {
        let m = self.mounts.lock().ok()?.get(fingerprint).cloned()?;
        m.touch();
        Some(m)
    }

    /// Makes room for one more mount: stops the keeper of the least recently used one and
    /// forgets it (its thread ends at its next batch; shutdown still joins it). A mount still
    /// building its first index is let go only when every mount is: it would start over when
    /// next named, and the client that initialized it saw `indexing` turn into `not_indexed`
    /// with no word why.
    fn let_go_least_used(&self, mounts: &mut HashMap<String, Arc<Mount>>) {
        while mounts.len() >= self.max {
            let first_index = |m: &Arc<Mount>| m.state() == FreshState::CatchingUp && !self.engine.has_index(&m.repo);
            let least_used = |first: bool| {
                mounts
                    .iter()
                    .filter(|(_, m)| first_index(m) == first)
                    .min_by_key(|(_, m)| m.used.load(Ordering::Relaxed))
                    .map(|(fp, _)| fp.clone())
            };
            let Some(fp) = least_used(false).or_else(|| least_used(true)) else { return };
            if let Some(m) = mounts.remove(&fp) {
                let was_first = first_index(&m);
                m.stop.store(true, Ordering::SeqCst);
                m.state.send_replace(FreshState::Stopped);
                match was_first {
                    true => {
                        tracing::warn!(repo = %m.repo.root.display(), max = self.max, "let go of a mount during its first index, every mount being in one ([server] max_repos): it starts over when next initialized")
                    }
                    false => {
                        tracing::info!(repo = %m.repo.root.display(), max = self.max, "let go of the least recently used mount ([server] max_repos)")
                    }
                }
            }
        }
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
        self.engine.check_servable(&repo)?;
        let mut mounts = self.mounts.lock().map_err(|_| Error::poisoned("the mount table"))?;
        if let Some(m) = mounts.get(&repo.fingerprint) {
            m.touch();
            return Ok(m.clone());
        }
        if self.stop.load(Ordering::SeqCst) {
            return Err(Error::BadRequest("the server is shutting down".into()));
        }
        self.let_go_least_used(&mut mounts);
        let initial = if self.watch { FreshState::CatchingUp } else { FreshState::Deferred { writer_pid: 0 } };
        let (tx, _) = watch::channel(initial);
        let stop = Arc::new(AtomicBool::new(false));
        let mount = Arc::new(Mount {
            repo: repo.clone(),
            engine: self.engine.clone(),
            state: tx,
            stop: stop.clone(),
            used: AtomicU64::new(crate::engine::protocol::now_ms()),
        });
        mounts.insert(repo.fingerprint.clone(), mount.clone());
        drop(mounts);
        if self.watch {
            let (engine, m) = (self.engine.clone(), mount.clone());
            let name = format!("watch-{}", &repo.fingerprint[..8]);
            let handle = std::thread::Builder::new()
                .name(name)
                .spawn(move || keep_fresh(&engine, &m, &stop))
                .map_err(|e| Error::io("starting the watcher thread for", &repo.root, e))?;
            if let Ok(mut t) = self.threads.lock() {
                t.retain(|h| !h.is_finished());
                t.push(handle);
            }
        }
        tracing::info!(repo = %repo.root.display(), "mounted");
        Ok(mount)
    }

    /// Stops every watcher and waits for them to release their writers.
    pub fn shutdown(&self) {
        self.stop.store(true, Ordering::SeqCst);
        for m in self.all() {
            m.stop.store(true, Ordering::SeqCst);
        }
        let threads: Vec<JoinHandle<()>> = self.threads.lock().map(|mut t| t.drain(..).collect()).unwrap_or_default();
        for t in threads {
            let _ = t.join();
        }
        for m in self.all() {
            m.state.send_replace(FreshState::Stopped);
        }
    }
}

/// Runs the engine's keeper for one mount until stopped, publishing its state.
fn keep_fresh(engine: &Engine, mount: &Mount, stop: &AtomicBool) {
    let report = |e: FreshEvent| match e {
        FreshEvent::State(state) => {
            if state == FreshState::Watching {
                release_free_memory();
            }
            mount.state.send_replace(state);
        }
        FreshEvent::Watch(WatchReport::Ready(summary)) => {
            tracing::info!(repo = %mount.repo.root.display(), files = summary.files, "index current; watching")
        }
        FreshEvent::Watch(WatchReport::Applied { paths, .. }) => {
            tracing::debug!(files = paths.len(), "applied changes")
        }
        FreshEvent::Watch(WatchReport::Failed(message)) => {
            tracing::warn!(repo = %mount.repo.root.display(), "{message}")
        }
    };
    engine.keep_fresh(&mount.repo.root, stop, &report);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A daemon at `max_repos` let go of the least recently used mount even when it was
    /// building its first index: the work was lost, and the client that initialized it saw
    /// `indexing` turn into `not_indexed` with no word why.
    #[test]
    fn a_mount_building_its_first_index_is_let_go_last() {
        let dir = tempfile::tempdir().expect("tempdir");
        let engine = Engine::open_at(&dir.path().join("home")).expect("engine");
        let repo = |name: &str| {
            let p = dir.path().join(name);
            std::fs::create_dir_all(&p).expect("mkdir");
            p
        };
        // No keepers (watch off): the test sets each mount's state itself.
        let mounts = Mounts::new(engine, false, 2);
        let first = mounts.mount(&repo("first")).expect("mount");
        first.state.send_replace(FreshState::CatchingUp);
        first.used.store(1, Ordering::Relaxed);
        let other = mounts.mount(&repo("other")).expect("mount");
        mounts.mount(&repo("third")).expect("mount");
        let kept: Vec<String> = mounts.all().iter().map(|m| m.repo.root.display().to_string()).collect();
        assert_eq!(kept.len(), 2, "{kept:?}");
        assert!(mounts.get(&first.repo.fingerprint).is_some(), "the first index goes on: {kept:?}");
        assert!(mounts.get(&other.repo.fingerprint).is_none(), "the least used of the rest went: {kept:?}");
        // Every mount in a first index: the least used goes all the same (the bound holds).
        for m in mounts.all() {
            m.state.send_replace(FreshState::CatchingUp);
        }
        first.used.store(1, Ordering::Relaxed);
        mounts.mount(&repo("fourth")).expect("mount");
        assert!(mounts.get(&first.repo.fingerprint).is_none());
        assert_eq!(mounts.all().len(), 2);
    }
}
