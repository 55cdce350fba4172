//! Rebuilding `state/registry.json`, which only lists what the per-repository state
//! directories already record: each `state/repos/<fingerprint>/repo_meta.json` names its
//! repository's root, and its manifest says how many files and chunks are indexed.
//!
//! A damaged registry (an empty file after a crash or a full disk, a half-written one) made
//! `docdex index` and `docdex repo list` fail, with no way out named. It is now moved aside as
//! `registry.json.damaged-<epoch ms>` (kept, never deleted), rebuilt, and the user told so; a
//! missing one beside existing state directories is rebuilt the same way.

use super::{fingerprint, RegistryFile, RepoMeta, RepoRecord, RepoRef};
use crate::config::Paths;
use crate::engine::fsutil::{now_ms, read_json, write_json_atomic};
use crate::error::{shell_path, Error, Result};
use serde::Deserialize;
use std::path::Path;

/// What a rebuild reads of `manifest_summary.json`, the summary the index writes beside each
/// manifest (`index::manifest::Summary`), read by name: importing `index::manifest` would
/// make an import loop, as it reaches `repos` through `index::sources`.
#[derive(Deserialize)]
struct Counts {
    files: u64,
    chunks: u64,
}

/// The file `docdex repo remove` (without `--purge`) leaves in the state directory it keeps,
/// so that a rebuilt registry does not list the repository again.
pub(super) const FORGOTTEN: &str = "forgotten";

/// True when `state/repos/` holds any repository's state: a missing registry then has
/// something to be rebuilt from (a fresh home has nothing, and costs one directory read).
pub(super) fn has_repo_state(paths: &Paths) -> bool {
    std::fs::read_dir(paths.repos()).is_ok_and(|mut d| d.next().is_some())
}

/// Moves the damaged registry aside and rebuilds it from the state directories. Called
/// holding the registry lock. When it cannot be moved, the error names the file and the
/// command that fixes it.
pub(super) fn rebuild_damaged(paths: &Paths, why: &str) -> Result<RegistryFile> {
    let path = paths.registry();
    let aside = path.with_file_name(format!("registry.json.damaged-{}", now_ms()));
    if let Err(e) = std::fs::rename(&path, &aside) {
        return Err(Error::CorruptState {
            path: path.clone(),
            message: format!(
                "{why}; it could not be moved aside ({e}): run `mv {0} {0}.damaged`, and the next docdex command rebuilds it from the repositories' state",
                shell_path(&path)
            ),
        });
    }
    let file = rebuilt(paths);
    tracing::warn!(
        "{} was damaged ({why}): kept it as {} and rebuilt the registry from the state of {} under {} (their indexes are untouched)",
        path.display(),
        aside.display(),
        crate::engine::fsutil::count(file.repos.len() as u64, "repository"),
        paths.repos().display()
    );
    save(&path, &file);
    Ok(file)
}

/// Rebuilds a missing registry from the state directories (it was deleted, or a rebuild could
/// not be saved). Called holding the registry lock.
pub(super) fn rebuild_missing(paths: &Paths) -> RegistryFile {
    let path = paths.registry();
    let file = rebuilt(paths);
    // The first registration of a fresh home gets here too (its state directory is made
    // first): only a rebuild that found indexed repositories is news.
    if file.repos.iter().any(|r| r.last_indexed_ms.is_some()) {
        tracing::warn!(
            "{} was missing: rebuilt it from the state of {} under {}",
            path.display(),
            crate::engine::fsutil::count(file.repos.len() as u64, "repository"),
            paths.repos().display()
        );
    }
    save(&path, &file);
    file
}

/// Writes the rebuilt registry. A failure is a warning: the records are returned anyway,
/// and the next command, finding no registry, rebuilds it again from the same state.
fn save(path: &Path, file: &RegistryFile) {
    if let Err(e) = write_json_atomic(path, file) {
        tracing::warn!("could not save the rebuilt registry: {e}");
    }
}

fn rebuilt(paths: &Paths) -> RegistryFile {
    let mut repos: Vec<RepoRecord> = match std::fs::read_dir(paths.repos()) {
        Ok(dir) => dir.flatten().filter_map(|e| record(paths, &e.path())).collect(),
        Err(_) => Vec::new(),
    };
    repos.sort_by(|a, b| a.path.cmp(&b.path));
    RegistryFile { schema_version: 1, repos }
}

/// The record of one state directory: its root from `repo_meta.json` (which must fingerprint
/// to the directory's name), its counts from the live manifest's summary and, for when it was last
/// indexed, the manifest's time (it is saved when a run commits). `None` for a directory that
/// is no repository's or was forgotten.
fn record(paths: &Paths, state_dir: &Path) -> Option<RepoRecord> {
    let name = state_dir.file_name()?.to_str()?;
    if state_dir.join(FORGOTTEN).exists() {
        return None;
    }
    let meta = match read_json::<RepoMeta>(&state_dir.join("repo_meta.json")) {
        Ok(m) => m?,
        Err(e) => {
            tracing::warn!("left out of the rebuilt registry: {e}");
            return None;
        }
    };
    if meta.fingerprint_sha256 != name || fingerprint(&meta.canonical_path) != name {
        tracing::warn!(
            "left out of the rebuilt registry: {} names {}, which is not the repository of that state directory",
            state_dir.join("repo_meta.json").display(),
            meta.canonical_path.display()
        );
        return None;
    }
    let repo = RepoRef::new(meta.canonical_path, name.to_string(), paths.repo_state(name));
    let manifest = repo.manifest_path();
    let indexed_at = std::fs::metadata(&manifest).and_then(|m| m.modified()).ok();
    // A summary missing or unreadable leaves the counts 0 until the next index run records them.
    let counts = read_json::<Counts>(&manifest.with_file_name("manifest_summary.json")).ok().flatten();
    let (files, chunks) = counts.map_or((0, 0), |c| (c.files, c.chunks));
    let last_indexed_ms = indexed_at
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    Some(RepoRecord { path: repo.root, fingerprint: repo.fingerprint, last_indexed_ms, files, chunks, missing: false })
}
