//! The file manifest: for every path the indexer has seen, its size, mtime and
//! content hash, so a re-index reads only what changed. It is written after
//! each Tantivy commit; because every file's chunks are deleted by path before
//! being re-added, an index that ran ahead of its manifest (a crash between
//! the two) is repaired by the next run rather than corrupted.

use crate::engine::fsutil::{read_json, replace_json, write_json_atomic};
use crate::error::Result;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Current manifest schema.
pub const MANIFEST_SCHEMA: u32 = 1;

/// What happened to a file the last time it was looked at.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FileEntry {
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i64,
    /// Status-change time, nanoseconds (0: recorded before docdex kept it, or no such time
    /// here). A file whose ctime moved is read again even when size and mtime match.
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub ctime_ns: i64,
    /// xxh3-64 of the content (0 when not read).
    pub hash: u64,
    /// Chunks in the index for this file.
    pub chunks: u32,
    /// Language name.
    pub lang: String,
    /// Why it is not in the index (binary, too large, unreadable), if it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// True when the reason is an error worth retrying on every run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub error: bool,
    /// Indexed as text only, its parse still to come: a large first index makes every file
    /// searchable before the code pass, and a run that finds this set parses the file again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub text_only: bool,
    /// For a document (PDF, DOCX, HTML): the [`super::extract::EXTRACTOR_VERSION`] its text was
    /// extracted with (0: before versions were kept). A run with a newer extractor reads the
    /// document again, so an upgrade's better text reaches files that did not change.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub extractor: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_zero_i64(n: &i64) -> bool {
    *n == 0
}

impl FileEntry {
    /// An entry for a file that is not in the index: skipped on purpose (binary, too large,
    /// symlink) or, with `error`, unreadable and retried on every run.
    pub fn not_indexed(reason: String, error: bool, size: u64, mtime_ns: i64) -> FileEntry {
        FileEntry {
            size,
            mtime_ns,
            ctime_ns: 0,
            hash: 0,
            chunks: 0,
            lang: String::new(),
            skipped: Some(reason),
            error,
            text_only: false,
            extractor: 0,
        }
    }

    /// A document whose text an older extractor made (it is read again), or not a document.
    pub fn extracted_by_older(&self, rel: &str) -> bool {
        self.skipped.is_none()
            && super::extract::Format::of(rel).is_some()
            && self.extractor != super::extract::EXTRACTOR_VERSION
    }
}

/// The manifest file.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Manifest {
    /// [`MANIFEST_SCHEMA`].
    pub schema_version: u32,
    /// Index generation this manifest was written for.
    pub generation: u64,
    /// Repo-relative path (forward slashes) to entry.
    pub files: BTreeMap<String, FileEntry>,
}

impl Manifest {
    /// Loads the manifest; a missing, corrupt or old-schema file means "start over".
    pub fn load(path: &Path) -> Manifest {
        match read_json::<Manifest>(path) {
            Ok(Some(m)) if m.schema_version == MANIFEST_SCHEMA => m,
            _ => Manifest { schema_version: MANIFEST_SCHEMA, ..Default::default() },
        }
    }

    /// Writes it atomically, and its [`Summary`] beside it (a summary that cannot be written
    /// is only logged: readers then parse the manifest itself).
    pub fn save(&self, path: &Path) -> Result<()> {
        write_json_atomic(path, self)?;
        let summary = Summary::of(self, Stamp::of(path));
        if let Err(e) = replace_json(&summary_path(path), &summary) {
            tracing::debug!("manifest summary not written: {e}");
        }
        Ok(())
    }

    /// The folders holding indexed files whose path starts with `typed` (repo-relative, `/`
    /// separated): one level below what is typed, each ending in `/`, sorted. A path that
    /// climbs (`..`) or is absolute names nothing here.
    pub fn folders_completing(&self, typed: &str, limit: usize) -> Vec<String> {
        let typed = typed.trim_start_matches("./");
        if typed.starts_with('/') || typed.split('/').any(|part| part == "..") {
            return Vec::new();
        }
        let mut out = std::collections::BTreeSet::new();
        for path in self.files.iter().filter(|(_, e)| e.skipped.is_none()).map(|(p, _)| p) {
            let Some(rest) = path.strip_prefix(typed) else { continue };
            if let Some(i) = rest.find('/') {
                out.insert(&rest[..=i]);
            }
        }
        out.into_iter().take(limit).map(|folder| format!("{typed}{folder}")).collect()
    }

    /// Files and chunks currently in the index.
    pub fn counts(&self) -> (u64, u64) {
        self.files.values().filter(|e| e.skipped.is_none()).fold((0, 0), |(f, c), e| (f + 1, c + e.chunks as u64))
    }

    /// Skipped files with their reasons, sorted by path.
    pub fn skipped(&self) -> Vec<(String, String)> {
        self.files.iter().filter_map(|(p, e)| e.skipped.as_ref().map(|r| (p.clone(), r.clone()))).collect()
    }

    /// Entries kept under a source's key prefix (`//name/`).
    pub fn entries_under(&self, prefix: &str) -> usize {
        self.files.range(prefix.to_string()..).take_while(|(k, _)| k.starts_with(prefix)).count()
    }
}

/// How many skipped files [`Summary`] names one by one.
pub const SUMMARY_SKIPPED_NAMED: usize = 20;

/// What status needs of the manifest, written beside it on each save: `docdex status`, the
/// HTTP and MCP status and `symbols-status` are polled, and parsing a manifest of 46,000
/// entries (10 MB) took 40 ms a read, twice per `docdex status`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    /// The manifest file this summarizes (size, mtime, inode): another means a stale summary.
    pub stamp: Stamp,
    /// [`Manifest::generation`].
    pub generation: u64,
    /// [`Manifest::counts`].
    pub files: u64,
    /// Chunks of those files.
    pub chunks: u64,
    /// Skipped files, per reason (the reason's first clause: `binary`, `too large`).
    pub skipped_by_reason: BTreeMap<String, usize>,
    /// The first [`SUMMARY_SKIPPED_NAMED`] skipped files by path, with their reasons.
    pub skipped_first: Vec<(String, String)>,
    /// Entries per registered source (`//name/` key prefix), skipped ones included.
    pub source_entries: BTreeMap<String, usize>,
}

impl Summary {
    fn of(m: &Manifest, stamp: Stamp) -> Summary {
        let (files, chunks) = m.counts();
        let mut s = Summary { stamp, generation: m.generation, files, chunks, ..Default::default() };
        for (path, entry) in &m.files {
            if let Some(reason) = &entry.skipped {
                *s.skipped_by_reason.entry(reason_kind(reason)).or_default() += 1;
                if s.skipped_first.len() < SUMMARY_SKIPPED_NAMED {
                    s.skipped_first.push((path.clone(), reason.clone()));
                }
            }
            if let Some((name, _)) = super::sources::split(path) {
                *s.source_entries.entry(super::sources::key(name, "")).or_default() += 1;
            }
        }
        s
    }

    /// The summary of the manifest at `path`: the one saved beside it when it still describes
    /// that file, else computed from the manifest (an index written before summaries existed,
    /// or a summary that could not be written) and saved for the next reader. A writer racing
    /// that save costs only speed: its manifest's stamp differs, so the next read recomputes.
    pub fn load(path: &Path) -> Summary {
        let stamp = Stamp::of(path);
        match read_json::<Summary>(&summary_path(path)) {
            Ok(Some(s)) if s.stamp == stamp && stamp != Stamp::default() => s,
            _ => {
                let summary = Summary::of(&Manifest::load(path), stamp);
                if stamp != Stamp::default() && Stamp::of(path) == stamp {
                    let _ = replace_json(&summary_path(path), &summary);
                }
                summary
            }
        }
    }

    /// Skipped files in all.
    pub fn skipped_total(&self) -> usize {
        self.skipped_by_reason.values().sum()
    }
}

/// A skip reason's kind, for counting: its text before any detail (`too large (3.1 MB)`,
/// `unreadable: permission denied`).
fn reason_kind(reason: &str) -> String {
    reason.split(" (").next().unwrap_or(reason).split(':').next().unwrap_or(reason).to_string()
}

/// Identifies one version of a file: a manifest is replaced by rename, so its inode changes
/// with every save even when size and mtime do not.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Stamp {
    len: u64,
    mtime_ns: i64,
    inode: u64,
}

impl Stamp {
    fn of(path: &Path) -> Stamp {
        let Ok(meta) = std::fs::metadata(path) else { return Stamp::default() };
        Stamp { len: meta.len(), mtime_ns: crate::engine::fsutil::mtime_ns(&meta), inode: inode(&meta) }
    }
}

#[cfg(unix)]
fn inode(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(meta)
}

#[cfg(not(unix))]
fn inode(_meta: &std::fs::Metadata) -> u64 {
    0
}

fn summary_path(manifest: &Path) -> std::path::PathBuf {
    manifest.with_file_name("manifest_summary.json")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(chunks: u32, skipped: Option<&str>) -> FileEntry {
        FileEntry { chunks, skipped: skipped.map(str::to_string), ..FileEntry::not_indexed(String::new(), false, 1, 1) }
    }

    fn manifest(generation: u64) -> Manifest {
        let mut m = Manifest { schema_version: MANIFEST_SCHEMA, generation, files: BTreeMap::new() };
        m.files.insert("a.rs".into(), entry(3, None));
        m.files.insert("b.bin".into(), entry(0, Some("binary")));
        m.files.insert("big.log".into(), entry(0, Some("too large (3.1 MB)")));
        m.files.insert("//notes/x.md".into(), entry(2, None));
        m
    }

    #[test]
    fn a_saved_manifest_is_summarized_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("manifest.json");
        manifest(4).save(&path).unwrap();
        let saved: Summary = read_json(&summary_path(&path)).unwrap().unwrap();
        assert_eq!((saved.generation, saved.files, saved.chunks), (4, 2, 5));
        assert_eq!(saved.skipped_total(), 2);
        assert_eq!(saved.skipped_by_reason.get("too large"), Some(&1));
        assert_eq!(saved.skipped_first[0], ("b.bin".to_string(), "binary".to_string()));
        assert_eq!(saved.source_entries.get("//notes/"), Some(&1));
        assert_eq!(Summary::load(&path), saved);
    }

    #[test]
    fn a_summary_of_another_manifest_is_not_believed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("manifest.json");
        manifest(4).save(&path).unwrap();
        // A manifest written without its summary (an older docdex, or a summary write that
        // failed) must not be described by the previous one.
        let mut newer = manifest(5);
        newer.files.insert("c.rs".into(), entry(7, None));
        write_json_atomic(&path, &newer).unwrap();
        let s = Summary::load(&path);
        assert_eq!((s.generation, s.files, s.chunks), (5, 3, 12));
        // The reader saved what it computed, for the next one.
        let saved: Summary = read_json(&summary_path(&path)).unwrap().unwrap();
        assert_eq!(saved, s);
        // No manifest at all: an empty summary, not the stale one.
        std::fs::remove_file(&path).unwrap();
        assert_eq!(Summary::load(&path).files, 0);
    }
}
