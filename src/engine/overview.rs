//! A live, cheap summary of every known repository: what a repo switcher
//! (the TUI's, or a future `/v1/repos`) shows and refreshes every few seconds.
//! It reads only the registry and each repo's small status file, never a
//! manifest or an index, so polling it costs next to nothing.

use crate::engine::fsutil::pid_alive;
use crate::engine::index::status::StatusData;
use crate::engine::index::types::{IndexProgress, IndexState, LastEvent};
use crate::engine::repos::{RepoRecord, RepoRef};
use crate::engine::Engine;
use crate::error::Result;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where a repository's index stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RepoState {
    /// No index on disk yet.
    NotIndexed,
    /// Searchable, no writer running.
    Ready,
    /// A writer (an index run or a watcher batch) is applying changes.
    Updating,
    /// The last run failed.
    Error,
}

/// How a repository's first index run ended before its first commit, so that it still has no
/// index: what `docdex status` says of it, for a switcher to say too (the TUI said only "not
/// indexed" of a repository whose first run another process was killed in).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FirstRun {
    /// The process that ran it.
    pub pid: u32,
    /// How it ended.
    pub end: FirstRunEnd,
}

/// How a first index run ended before its first commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FirstRunEnd {
    /// Its process died (killed, crashed) with the run going on.
    Interrupted,
    /// Its process stopped it (a shutdown, or the client that asked for it left).
    Stopped,
}

/// One repository as a switcher shows it.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RepoOverview {
    /// Canonical root.
    pub path: PathBuf,
    /// Fingerprint (SHA-256 of the canonical path).
    pub fingerprint: String,
    /// True when the registry knows it.
    pub registered: bool,
    /// False when the directory no longer exists.
    pub exists: bool,
    /// Index state.
    pub state: RepoState,
    /// Files in the index after the last completed run.
    pub files: u64,
    /// Chunks in the index after the last completed run.
    pub chunks: u64,
    /// Last completed run, epoch ms.
    pub last_indexed_ms: Option<u64>,
    /// True while a live watcher owns the repo's writer.
    pub watching: bool,
    /// The writer's pid while one is running.
    pub writer_pid: Option<u32>,
    /// Paths waiting in a watcher's queue.
    pub queued: u64,
    /// Progress of a run in flight.
    pub progress: Option<IndexProgress>,
    /// Last change a watcher or indexer applied.
    pub last_event: Option<LastEvent>,
    /// Error of the last run, if it failed.
    pub last_error: Option<String>,
    /// With no index yet: the first run that ended before its first commit, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_run: Option<FirstRun>,
}

impl Engine {
    /// `err` made specific when it is [`crate::Error::NotIndexed`] and the repository's status
    /// file knows of a first index run (going on in another process, or ended before its first
    /// commit): [`crate::Error::FirstIndexPending`], saying so and what to run. Any other error
    /// is returned as it is.
    pub fn explain_not_indexed(&self, err: crate::Error) -> crate::Error {
        let crate::Error::NotIndexed { path } = &err else { return err };
        let Ok(repo) = self.resolve_repo(path) else { return err };
        match crate::engine::index::status::first_run_detail(&repo.status_path(), &repo.root) {
            Some(detail) => crate::Error::FirstIndexPending { path: repo.root.clone(), detail },
            None => err,
        }
    }

    /// Folders of the repository's index that complete a typed path prefix (the TUI's `tab`
    /// in the path filter): only folders holding indexed files, so nothing outside the
    /// repository or left out of the index is ever offered.
    pub fn indexed_folders(&self, repo_path: &Path, typed: &str) -> Result<Vec<String>> {
        let repo = self.resolve_repo(repo_path)?;
        Ok(crate::engine::index::manifest::Manifest::load(&repo.manifest_path()).folders_completing(typed, 200))
    }

    /// Every registered repository, plus `current` when it is not registered yet, sorted by path.
    pub fn repo_overviews(&self, current: Option<&Path>) -> Result<Vec<RepoOverview>> {
        let records = self.list_repos()?;
        let mut out: Vec<RepoOverview> = records.iter().map(|r| self.overview_of_record(r)).collect();
        // The current repository, when it is a folder docdex can open: one deleted while the
        // workbench runs is listed from its record (as missing), and the rest of the list
        // still refreshes (it failed as a whole, so the Repos pane froze on its last rows).
        if let Some(repo) = current.and_then(|path| self.resolve_repo(path).ok()) {
            if !out.iter().any(|o| o.fingerprint == repo.fingerprint) {
                out.push(overview(&repo, None, true));
                out.sort_by(|a, b| a.path.cmp(&b.path));
            }
        }
        Ok(out)
    }

    /// The overview of one repository (which must exist), registered or not.
    pub fn repo_overview(&self, path: &Path) -> Result<RepoOverview> {
        let repo = self.resolve_repo(path)?;
        let record = self.list_repos()?.into_iter().find(|r| r.fingerprint == repo.fingerprint);
        Ok(overview(&repo, record.as_ref(), true))
    }

    fn overview_of_record(&self, record: &RepoRecord) -> RepoOverview {
        let repo =
            RepoRef::new(record.path.clone(), record.fingerprint.clone(), self.paths().repo_state(&record.fingerprint));
        overview(&repo, Some(record), record.path.is_dir())
    }
}

/// An index no run finished counting: a first run killed after its first commit (the registry
/// counts a run when it ends) was listed `0 files · 0 chunks · never` beside a searchable index
/// `docdex status` counted. Its counts come from the manifest's summary (cached, cheap), its
/// time from the manifest's last write.
fn count_uncounted(repo: &RepoRef, o: &mut RepoOverview) {
    let manifest = repo.manifest_path();
    let summary = crate::engine::index::manifest::Summary::load(&manifest);
    o.files = summary.files;
    o.chunks = summary.chunks;
    o.last_indexed_ms = std::fs::metadata(&manifest)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as u64);
}

fn overview(repo: &RepoRef, record: Option<&RepoRecord>, exists: bool) -> RepoOverview {
    let indexed = repo.index_dir().join("meta.json").exists() && repo.manifest_path().exists();
    let live = StatusData::read(&repo.status_path());
    let mut o = RepoOverview {
        path: repo.root.clone(),
        fingerprint: repo.fingerprint.clone(),
        registered: record.is_some(),
        exists,
        state: if indexed { RepoState::Ready } else { RepoState::NotIndexed },
        files: record.map_or(0, |r| r.files),
        chunks: record.map_or(0, |r| r.chunks),
        last_indexed_ms: record.and_then(|r| r.last_indexed_ms),
        watching: false,
        writer_pid: None,
        queued: 0,
        progress: None,
        last_event: None,
        last_error: None,
        first_run: None,
    };
    if indexed && o.last_indexed_ms.is_none() {
        count_uncounted(repo, &mut o);
    }
    if let Some((d, interrupted)) = live {
        o.first_run = first_run(&d, interrupted).filter(|_| !indexed);
        o.last_event = d.last_event.clone();
        o.last_error = d.last_error.clone();
        let alive = !interrupted && pid_alive(d.pid);
        match d.state {
            IndexState::Updating if alive => {
                o.state = RepoState::Updating;
                o.writer_pid = Some(d.pid);
                o.progress = d.progress.clone();
            }
            IndexState::Error if !indexed => o.state = RepoState::Error,
            _ => {}
        }
        if d.watching && alive {
            o.watching = true;
            o.writer_pid = Some(d.pid);
            o.queued = d.queued;
        }
    }
    o
}

/// How the run a status file tells of ended, if it ended before it finished: killed
/// (`interrupted`, as [`StatusData::read`] tells it) or stopped by its process.
fn first_run(d: &StatusData, interrupted: bool) -> Option<FirstRun> {
    let end = match (interrupted, d.stopped) {
        (true, _) => FirstRunEnd::Interrupted,
        (false, true) => FirstRunEnd::Stopped,
        (false, false) => return None,
    };
    Some(FirstRun { pid: d.pid, end })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unindexed_then_indexed() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = dir.path().join("home");
        let repo = dir.path().join("r");
        std::fs::create_dir_all(&repo).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(repo.join("a.rs"), "fn alpha() {}\n").unwrap_or_else(|e| panic!("{e}"));
        let engine = Engine::open_at(&home).unwrap_or_else(|e| panic!("{e}"));
        let before = engine.repo_overviews(Some(&repo)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(before.len(), 1);
        assert_eq!((before[0].state, before[0].registered), (RepoState::NotIndexed, false));
        let quiet = |_: &IndexProgress| {};
        engine.index(&repo, &Default::default(), &quiet).unwrap_or_else(|e| panic!("{e}"));
        let after = engine.repo_overview(&repo).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((after.state, after.registered, after.files), (RepoState::Ready, true, 1));
        assert!(after.last_indexed_ms.is_some());
        assert!(!after.watching);
    }
}
