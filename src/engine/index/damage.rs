//! A damaged index: detected, reported, repaired, never a panic. Tantivy keeps a CRC32 in the
//! footer of every file it writes; a writer checks them when it opens the live generation for
//! an explicit `docdex index` (or `--repair`), and a search that meets a damaged index (an open
//! error, a read error, a panic inside Tantivy) says so and leaves a marker in the state
//! directory. Status reports the marker; the next index run builds a new generation beside the
//! damaged one and switches to it.

use crate::engine::fsutil::{now_ms, read_json, replace_json};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use tantivy::Index;

const MARKER: &str = "index_damaged.json";

/// What the marker says.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Marker {
    detail: String,
    at_ms: u64,
}

fn marker_path(state_dir: &Path) -> PathBuf {
    state_dir.join(MARKER)
}

/// What was found damaged, if a reader or writer recorded it.
pub fn read_marker(state_dir: &Path) -> Option<String> {
    read_json::<Marker>(&marker_path(state_dir)).ok().flatten().map(|m| m.detail)
}

/// Records that the live generation was found damaged (by any process; advisory).
pub fn write_marker(state_dir: &Path, detail: &str) {
    let m = Marker { detail: detail.to_string(), at_ms: now_ms() };
    if let Err(e) = replace_json(&marker_path(state_dir), &m) {
        tracing::warn!("could not record the damaged index: {e}");
    }
}

/// Forgets the marker (a new generation replaced the damaged one).
pub fn clear_marker(state_dir: &Path) {
    let _ = std::fs::remove_file(marker_path(state_dir));
}

/// Opens every segment of the index (which checks each file's footer) and, with
/// `checksums`, checks every file of the live segments against its CRC32; `Some(what)` when
/// something is damaged. Tantivy panics on some damage (a segment file shorter than its
/// footer): that is damage found too.
pub fn check(index: &Index, checksums: bool) -> Option<String> {
    match crate::engine::quiet_panics(|| check_files(index, checksums)) {
        Ok(found) => found,
        Err(panic) => Some(format!("reading it panicked inside Tantivy: {}", panic_text(&panic))),
    }
}

fn check_files(index: &Index, checksums: bool) -> Option<String> {
    if checksums {
        match index.validate_checksum() {
            Ok(bad) if bad.is_empty() => {}
            Ok(bad) => {
                let mut names: Vec<String> = bad.iter().map(|p| p.display().to_string()).collect();
                names.sort();
                return Some(format!("checksum mismatch in {}", names.join(", ")));
            }
            Err(e) => return Some(e.to_string()),
        }
    }
    let opened = index.reader_builder().reload_policy(tantivy::ReloadPolicy::Manual).try_into();
    match opened {
        Ok(reader) => {
            let _: tantivy::IndexReader = reader;
            None
        }
        Err(e) => Some(e.to_string()),
    }
}

/// Runs a read of the index at `dir`, a panic inside Tantivy (damaged bytes) becoming an
/// [`Error::Index`] that callers report as a damaged index, never a crash.
pub fn guarded<T>(dir: &Path, read: impl FnOnce() -> Result<T>) -> Result<T> {
    crate::engine::quiet_panics(read).unwrap_or_else(|panic| {
        Err(Error::Index {
            path: dir.to_path_buf(),
            message: format!("Tantivy panicked reading it: {}", panic_text(&panic)),
        })
    })
}

/// The message a caught panic carried.
fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic".into())
}

/// What status should say about the live generation's two bookkeeping files, `meta.json`
/// (Tantivy's commit) and `manifest.json` (docdex's file list), when one is gone or unreadable
/// (removed or cut short by hand, a crash of a filesystem without ordered writes). Status said
/// "not indexed yet" while search answered (manifest gone), or "ready" with 0 files (manifest
/// not JSON); the next `docdex index` rebuilds what is missing, so the warning says that.
/// `files`: the summary's file count; the manifest is parsed only when it is 0, so a healthy
/// status costs nothing more.
pub fn bookkeeping_warning(index_dir: &Path, manifest: &Path, files: u64, repo: &Path) -> Option<String> {
    let meta = index_dir.join("meta.json");
    let problem = if !meta.exists() {
        format!("{} is missing", meta.display())
    } else if !manifest.exists() {
        format!("{} is missing", manifest.display())
    } else if files == 0 && read_json::<serde_json::Value>(manifest).is_err() {
        format!("{} is not valid JSON", manifest.display())
    } else {
        return None;
    };
    Some(format!(
        "the index's state is damaged ({problem}); run `docdex index --repo {} --repair` to rebuild it (memories and profiles are kept)",
        crate::error::shell_path(repo)
    ))
}
