//! The file manifest: for every path the indexer has seen, its size, mtime and
//! content hash, so a re-index reads only what changed. It is written after
//! each Tantivy commit; because every file's chunks are deleted by path before
//! being re-added, an index that ran ahead of its manifest (a crash between
//! the two) is repaired by the next run rather than corrupted.

use crate::engine::fsutil::{read_json, write_json_atomic};
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
}

impl FileEntry {
    /// An entry for a file that is not in the index: skipped on purpose (binary, too large,
    /// symlink) or, with `error`, unreadable and retried on every run.
    pub fn not_indexed(reason: String, error: bool, size: u64, mtime_ns: i64) -> FileEntry {
        FileEntry {
            size,
            mtime_ns,
            hash: 0,
            chunks: 0,
            lang: String::new(),
            skipped: Some(reason),
            error,
            text_only: false,
        }
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

    /// Writes it atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        write_json_atomic(path, self)
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
}
