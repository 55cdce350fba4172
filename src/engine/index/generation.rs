//! Index generations on disk. Everything derived from the repository (the Tantivy index, the
//! manifest, `symbols.db`, `impact_graph.json`) lives in one directory, the live generation
//! `state/repos/<fp>/gen/`. Incremental runs update it in place, crash-safe commit by commit.
//! A rebuild (`--rebuild`, a schema change, a damaged index) builds a whole new generation
//! beside it in `gen.next/` while searches keep answering from `gen/`, then switches the two
//! directories with one atomic `renameat2(RENAME_EXCHANGE)` and deletes the old one. A kill at
//! any moment leaves either the old generation or the new one live, never neither.
//!
//! Where the exchange is not supported (some filesystems), the switch is two renames
//! (`gen` → `gen.old`, `gen.next` → `gen`); a kill between them is finished by the next writer
//! ([`recover`]), and readers in that window of microseconds see "not indexed".
//!
//! Repositories indexed before generations existed kept these files directly in the state
//! directory; readers still find them there, and the first writer moves them into `gen/`
//! ([`migrate_legacy`]).

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// The live generation's directory name.
pub const LIVE: &str = "gen";
/// Where a new generation is built.
pub const NEXT: &str = "gen.next";
/// The old generation between the two renames of a fallback switch.
const OLD: &str = "gen.old";
/// Where a legacy layout is assembled before it becomes `gen`.
const MIGRATING: &str = "gen.migrating";
/// What a generation holds (and what a legacy layout kept in the state directory).
const ITEMS: &[&str] =
    &["index", "manifest.json", "symbols.db", "symbols.db-wal", "symbols.db-shm", "impact_graph.json"];

/// The directory readers take a repo's derived data from: `gen/`, or the state directory
/// itself for a legacy layout no writer has migrated yet.
pub fn live_dir(state_dir: &Path) -> PathBuf {
    let live = state_dir.join(LIVE);
    if live.is_dir() || !state_dir.join("index").is_dir() {
        live
    } else {
        state_dir.to_path_buf()
    }
}

/// Identity of a directory (device, inode): it changes when a generation switch puts another
/// directory at the same path, which tells a cached reader to reopen.
pub fn identity(dir: &Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(dir).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        std::fs::metadata(dir).ok().and_then(|m| m.modified().ok()).map(|t| {
            let d = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            (d.as_secs(), u64::from(d.subsec_nanos()))
        })
    }
}

/// Moves a legacy layout's files into `gen/` (writer lock held). Idempotent: a kill midway is
/// finished by the next call.
pub fn migrate_legacy(state_dir: &Path) -> Result<()> {
    let live = state_dir.join(LIVE);
    let staging = state_dir.join(MIGRATING);
    if live.exists() {
        return Ok(());
    }
    let legacy: Vec<&str> = ITEMS.iter().copied().filter(|i| state_dir.join(i).exists()).collect();
    if legacy.is_empty() && !staging.exists() {
        return Ok(());
    }
    crate::engine::fsutil::create_private_dir(&staging).map_err(|e| Error::io("creating", &staging, e))?;
    for item in legacy {
        let (from, to) = (state_dir.join(item), staging.join(item));
        std::fs::rename(&from, &to).map_err(|e| Error::io("moving", &from, e))?;
    }
    std::fs::rename(&staging, &live).map_err(|e| Error::io("renaming into", &live, e))?;
    sync_dir(state_dir);
    tracing::info!(dir = %live.display(), "moved the index into its generation directory");
    Ok(())
}

/// Finishes or discards what a killed writer left (writer lock held): a fallback switch
/// interrupted between its renames is completed; a half-built next generation is removed.
pub fn recover(state_dir: &Path) -> Result<()> {
    let (live, next, old) = (state_dir.join(LIVE), state_dir.join(NEXT), state_dir.join(OLD));
    if !live.exists() && old.exists() && next.exists() {
        // Killed between the two renames: `next` is complete (only finished builds switch).
        std::fs::rename(&next, &live).map_err(|e| Error::io("renaming into", &live, e))?;
        sync_dir(state_dir);
    }
    if !live.exists() && old.exists() {
        std::fs::rename(&old, &live).map_err(|e| Error::io("renaming into", &live, e))?;
    }
    for leftover in [next, old] {
        if leftover.exists() {
            tracing::info!(dir = %leftover.display(), "removing an unfinished or retired generation");
            remove_dir(&leftover)?;
        }
    }
    Ok(())
}

/// An empty `gen.next/` for a new generation.
pub fn prepare_next(state_dir: &Path) -> Result<PathBuf> {
    let next = state_dir.join(NEXT);
    if next.exists() {
        remove_dir(&next)?;
    }
    crate::engine::fsutil::create_private_dir(&next).map_err(|e| Error::io("creating", &next, e))?;
    Ok(next)
}

/// Removes an unfinished next generation (after a failed build: frees its disk space).
pub fn discard_next(state_dir: &Path) {
    let next = state_dir.join(NEXT);
    if next.exists() {
        if let Err(e) = remove_dir(&next) {
            tracing::warn!("could not remove {}: {e}", next.display());
        }
    }
}

/// Makes the finished `gen.next/` live and deletes the generation it replaces. Readers that
/// have the old one open keep reading it (its files stay valid while open).
pub fn switch(state_dir: &Path) -> Result<()> {
    let (live, next, old) = (state_dir.join(LIVE), state_dir.join(NEXT), state_dir.join(OLD));
    sync_tree(&next);
    if !live.exists() {
        std::fs::rename(&next, &live).map_err(|e| Error::io("renaming into", &live, e))?;
        sync_dir(state_dir);
        return Ok(());
    }
    match exchange(&next, &live) {
        Ok(()) => {
            sync_dir(state_dir);
            // `next` now holds the old generation.
            if let Err(e) = remove_dir(&next) {
                tracing::warn!("could not remove the old generation {}: {e}", next.display());
            }
        }
        Err(e) => {
            tracing::debug!("atomic exchange unavailable ({e}); switching with two renames");
            std::fs::rename(&live, &old).map_err(|e| Error::io("renaming", &live, e))?;
            std::fs::rename(&next, &live).map_err(|e| Error::io("renaming into", &live, e))?;
            sync_dir(state_dir);
            if let Err(e) = remove_dir(&old) {
                tracing::warn!("could not remove the old generation {}: {e}", old.display());
            }
        }
    }
    Ok(())
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let ca = std::ffi::CString::new(a.as_os_str().as_bytes())?;
    let cb = std::ffi::CString::new(b.as_os_str().as_bytes())?;
    // SAFETY: both are valid NUL-terminated paths that outlive the call; renameat2 only reads them.
    let rc =
        unsafe { libc::renameat2(libc::AT_FDCWD, ca.as_ptr(), libc::AT_FDCWD, cb.as_ptr(), libc::RENAME_EXCHANGE) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn exchange(_: &Path, _: &Path) -> std::io::Result<()> {
    Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "no atomic directory exchange here"))
}

fn remove_dir(dir: &Path) -> Result<()> {
    std::fs::remove_dir_all(dir)
        .or_else(|e| if e.kind() == std::io::ErrorKind::NotFound { Ok(()) } else { Err(e) })
        .map_err(|e| Error::io("removing", dir, e))
}

/// Flushes a directory's entries (a rename's durability).
fn sync_dir(dir: &Path) {
    if let Ok(f) = std::fs::File::open(dir) {
        let _ = f.sync_all();
    }
}

/// Flushes a finished generation's files and directories before it becomes live (Tantivy and
/// SQLite already synced their data; the manifest and graph are written atomically).
fn sync_tree(dir: &Path) {
    sync_dir(dir);
    sync_dir(&dir.join("index"));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(p: &Path, text: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn switch_replaces_the_live_generation_and_removes_the_old_one() {
        let d = tempfile::tempdir().unwrap();
        let s = d.path();
        touch(&s.join("gen/manifest.json"), "old");
        let next = prepare_next(s).unwrap();
        touch(&next.join("manifest.json"), "new");
        let before = identity(&s.join(LIVE)).unwrap();
        switch(s).unwrap();
        assert_eq!(std::fs::read_to_string(s.join("gen/manifest.json")).unwrap(), "new");
        assert!(!s.join(NEXT).exists() && !s.join(OLD).exists());
        assert_ne!(identity(&s.join(LIVE)).unwrap(), before, "readers can tell the generation changed");
    }

    #[test]
    fn an_interrupted_fallback_switch_is_finished_and_a_half_build_discarded() {
        let d = tempfile::tempdir().unwrap();
        let s = d.path();
        // Killed between the two renames.
        touch(&s.join("gen.old/manifest.json"), "old");
        touch(&s.join("gen.next/manifest.json"), "new");
        recover(s).unwrap();
        assert_eq!(std::fs::read_to_string(s.join("gen/manifest.json")).unwrap(), "new");
        assert!(!s.join(OLD).exists() && !s.join(NEXT).exists());
        // Killed while building.
        touch(&s.join("gen.next/manifest.json"), "half");
        recover(s).unwrap();
        assert_eq!(std::fs::read_to_string(s.join("gen/manifest.json")).unwrap(), "new");
        assert!(!s.join(NEXT).exists());
    }

    #[test]
    fn a_legacy_layout_is_read_in_place_then_moved() {
        let d = tempfile::tempdir().unwrap();
        let s = d.path();
        touch(&s.join("index/meta.json"), "{}");
        touch(&s.join("manifest.json"), "m");
        touch(&s.join("memory.db"), "user data stays");
        assert_eq!(live_dir(s), s);
        migrate_legacy(s).unwrap();
        assert_eq!(live_dir(s), s.join(LIVE));
        assert!(s.join("gen/index/meta.json").exists() && s.join("gen/manifest.json").exists());
        assert!(s.join("memory.db").exists() && !s.join("gen/memory.db").exists());
        assert!(!s.join("index").exists());
        // A fresh state directory reads from `gen/`.
        let e = tempfile::tempdir().unwrap();
        assert_eq!(live_dir(e.path()), e.path().join(LIVE));
    }
}
