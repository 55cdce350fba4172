//! What a repository's state holds that no index run can make again (its memories and chat
//! sessions), and carrying that state to where the repository's folder moved.
//!
//! A repository's state directory is named by its path's fingerprint, so a moved folder starts
//! from nothing: its memories stayed under the old path, which no command could reach, and the
//! way out `repo list` named (`repo remove OLD --purge`) deleted them without a word (tour35 F1).
//! `docdex repo move OLD NEW` renames the state directory to the new path's fingerprint; the
//! index keeps repository-relative paths, so it stays valid and the next run reads only what
//! changed.

use super::{fingerprint, normalize, Registry, RepoMeta, RepoRecord, RepoRef};
use crate::engine::fsutil::{read_json, write_json_atomic, FileLock};
use crate::error::{shell_path, Error, IoContext, Result};
use std::path::{Path, PathBuf};

/// What a state directory holds that only its user made: lost for good when it is deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UserData {
    /// Notes in `memory.db`.
    pub memories: u64,
    /// Chat sessions in `dag.db`.
    pub sessions: u64,
    /// A database that exists but could not be read (counted as holding data).
    pub unreadable: bool,
}

impl UserData {
    /// Counts the memories and chat sessions kept in `state_dir`.
    pub fn of(state_dir: &Path) -> UserData {
        let (memories, m_bad) = count_rows(&state_dir.join(super::MEMORY_DB), "memories");
        let (sessions, s_bad) = count_rows(&state_dir.join(super::DAG_DB), "sessions");
        UserData { memories, sessions, unreadable: m_bad || s_bad }
    }

    /// True when deleting the state would lose something an index run cannot rebuild.
    pub fn any(&self) -> bool {
        self.memories > 0 || self.sessions > 0 || self.unreadable
    }

    /// `20 memories and 3 chat sessions`, for messages.
    pub fn describe(&self) -> String {
        use crate::engine::fsutil::count;
        let mut parts = Vec::new();
        if self.memories > 0 {
            parts.push(count(self.memories, "memory"));
        }
        if self.sessions > 0 {
            parts.push(count(self.sessions, "chat session"));
        }
        if self.unreadable {
            parts.push("a memory or session database docdex could not read".into());
        }
        parts.join(" and ")
    }
}

/// Rows of `table` in the SQLite file at `path` (0 when there is no file); true when the file
/// exists and could not be read.
fn count_rows(path: &Path, table: &str) -> (u64, bool) {
    if !path.exists() {
        return (0, false);
    }
    let counted = crate::engine::sqlite::open_for_reading(path)
        .ok()
        .and_then(|db| db.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get::<_, i64>(0)).ok());
    match counted {
        Some(n) => (u64::try_from(n).unwrap_or(0), false),
        // A database made before its first row was written has no table yet.
        None => (0, !table_missing(path, table)),
    }
}

fn table_missing(path: &Path, table: &str) -> bool {
    crate::engine::sqlite::open_for_reading(path).ok().is_some_and(|db| {
        db.query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", [table], |r| {
            r.get::<_, i64>(0)
        })
        .is_ok_and(|n| n == 0)
    })
}

/// What `docdex repo move` did.
#[derive(Debug, Clone)]
pub struct Moved {
    /// The record as it was, at the old path.
    pub from: RepoRecord,
    /// The repository at its new path.
    pub to: RepoRef,
    /// The memories and sessions that came along.
    pub carried: UserData,
    /// The new path already had state (an index only), which was replaced.
    pub replaced: bool,
}

impl Registry {
    /// Carries the state of the repository registered at `old` (a folder that moved) to the
    /// folder `new`: index, memories, chat sessions and sources. Refused while the old folder
    /// is still there, when `new`'s state holds memories or sessions of its own (they would be
    /// lost), and while a docdex process writes either index.
    pub fn relocate(&self, old: &Path, new: &Path) -> Result<Moved> {
        let from = self.record_at(old)?;
        if from.path.is_dir() {
            return Err(Error::BadRequest(format!(
                "{} is still there: `docdex repo move` carries the state of a repository whose folder moved away",
                from.path.display()
            )));
        }
        let root = normalize(new)?;
        let to = RepoRef::new(root.clone(), fingerprint(&root), self.paths.repo_state(&fingerprint(&root)));
        let old_dir = self.paths.repo_state(&from.fingerprint);
        if !old_dir.is_dir() {
            return Err(Error::BadRequest(format!(
                "{} has no state left to move (it was purged); index {} as a new repository",
                from.path.display(),
                to.root.display()
            )));
        }
        let locks = self.paths.locks();
        let _old_lock = writer_lock(&locks, &from.fingerprint, &from.path)?;
        let _new_lock = writer_lock(&locks, &to.fingerprint, &to.root)?;
        let replaced = self.clear_target(&to, old)?;
        std::fs::rename(&old_dir, &to.state_dir).at("moving the state directory", &old_dir)?;
        let _ = std::fs::remove_file(to.state_dir.join(super::recover::FORGOTTEN));
        self.rewrite_meta(&to)?;
        self.update(|records| {
            records.retain(|r| r.fingerprint != from.fingerprint && r.fingerprint != to.fingerprint);
            records.push(RepoRecord { path: to.root.clone(), fingerprint: to.fingerprint.clone(), ..from.clone() });
        })?;
        Ok(Moved { carried: UserData::of(&to.state_dir), from, to, replaced })
    }

    /// The registered (or forgotten but kept) repository at `path`.
    fn record_at(&self, path: &Path) -> Result<RepoRecord> {
        let wanted = normalize(path).or_else(|_| std::path::absolute(path)).unwrap_or_else(|_| path.to_path_buf());
        match self.list()?.into_iter().find(|r| r.path == wanted || r.path == path) {
            Some(r) => Ok(r),
            None => self.forgotten(&wanted),
        }
    }

    /// Makes room for the moved state at `to`: an index of its own there is replaced (it can
    /// be built again), memories or sessions are not. True when something was replaced.
    fn clear_target(&self, to: &RepoRef, old: &Path) -> Result<bool> {
        if !to.state_dir.exists() {
            return Ok(false);
        }
        let held = UserData::of(&to.state_dir);
        if held.any() {
            return Err(Error::BadRequest(format!(
                "{} already holds {} of its own, which moving {} there would replace; keep them, or delete them \
                 with `docdex repo remove {} --purge --yes` and move again",
                to.root.display(),
                held.describe(),
                old.display(),
                shell_path(&to.root)
            )));
        }
        std::fs::remove_dir_all(&to.state_dir).at("replacing the index at the new path", &to.state_dir)?;
        Ok(true)
    }

    /// `repo_meta.json` names the new path and fingerprint, so a rebuilt registry lists the
    /// repository where it is now.
    fn rewrite_meta(&self, to: &RepoRef) -> Result<()> {
        let meta_path = to.meta_path();
        let now = crate::engine::fsutil::now_ms();
        let meta = match read_json::<RepoMeta>(&meta_path).ok().flatten() {
            Some(m) => RepoMeta {
                fingerprint_sha256: to.fingerprint.clone(),
                canonical_path: to.root.clone(),
                last_seen_at_epoch_ms: now,
                ..m
            },
            None => RepoMeta {
                fingerprint_sha256: to.fingerprint.clone(),
                fingerprint_version: super::FINGERPRINT_VERSION,
                canonical_path: to.root.clone(),
                created_at_epoch_ms: now,
                last_seen_at_epoch_ms: now,
            },
        };
        write_json_atomic(&meta_path, &meta)
    }
}

/// The index writer's lock of a repository, so no run or watcher writes its state while it
/// moves or is purged.
pub(super) fn writer_lock(locks: &Path, fingerprint: &str, root: &Path) -> Result<FileLock> {
    let path: PathBuf = locks.join(format!("{fingerprint}.writer.lock"));
    FileLock::try_acquire(&path)?
        .ok_or_else(|| Error::IndexBusy { repo: root.to_path_buf(), pid: FileLock::holder_pid(&path) })
}
