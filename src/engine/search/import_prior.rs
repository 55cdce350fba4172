//! How many repository files import each file, from the import graph, as a ranking prior: a
//! module many others depend on is where a described change more often lands (measured in
//! docs/SEARCH.md). Written next to `impact_graph.json` whenever the graph is rebuilt, as a
//! small sorted binary table (`import_prior.bin`: little-endian `u64` file id, the xxh3 of the
//! path as the index's `file_id` field has it, then `u32` importers), so that a one-shot search
//! reads a few kilobytes instead of parsing the graph.

use crate::engine::fsutil;
use crate::error::Result;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// File name in the repo's state directory.
pub const FILE_NAME: &str = "import_prior.bin";
/// Bytes per entry.
const ENTRY: usize = 12;

/// Where a repo's table lives.
pub fn path(state_dir: &Path) -> PathBuf {
    state_dir.join(FILE_NAME)
}

/// Writes the table for a graph's in-repository edges, `(importer, imported)` (importers
/// counted once per importing file; self-imports do not count). Takes plain pairs so the
/// graph, which calls this, is not imported back.
pub fn write<'a>(state_dir: &Path, edges: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<()> {
    let mut importers: HashMap<&str, HashSet<&str>> = HashMap::new();
    for (source, target) in edges.into_iter().filter(|(s, t)| s != t) {
        importers.entry(target).or_default().insert(source);
    }
    let mut rows: Vec<(u64, u32)> = importers
        .into_iter()
        .map(|(target, sources)| (xxhash_rust::xxh3::xxh3_64(target.as_bytes()), sources.len() as u32))
        .collect();
    rows.sort_unstable();
    let mut bytes = Vec::with_capacity(rows.len() * ENTRY);
    for (id, n) in rows {
        bytes.extend_from_slice(&id.to_le_bytes());
        bytes.extend_from_slice(&n.to_le_bytes());
    }
    fsutil::write_atomic(&path(state_dir), &bytes)
}

/// A loaded table. Empty when the repo has no graph (no code files, or indexed before the
/// table existed): then every file counts 0 importers and the prior is neutral.
#[derive(Debug, Default, Clone)]
pub struct ImportPrior {
    rows: Vec<(u64, u32)>,
}

impl ImportPrior {
    /// Reads the table at `path`; a missing or malformed file gives an empty table.
    pub fn load(path: &Path) -> ImportPrior {
        let Ok(bytes) = std::fs::read(path) else { return ImportPrior::default() };
        if bytes.len() % ENTRY != 0 {
            tracing::debug!(path = %path.display(), "malformed import prior table ignored");
            return ImportPrior::default();
        }
        let rows = bytes
            .chunks_exact(ENTRY)
            .map(|c| {
                let mut id = [0u8; 8];
                let mut n = [0u8; 4];
                id.copy_from_slice(&c[..8]);
                n.copy_from_slice(&c[8..]);
                (u64::from_le_bytes(id), u32::from_le_bytes(n))
            })
            .collect();
        ImportPrior { rows }
    }

    /// Importers of the file with this id (0 when none or unknown).
    pub fn importers(&self, file_id: u64) -> u32 {
        match self.rows.binary_search_by(|(id, _)| id.cmp(&file_id)) {
            Ok(i) => self.rows[i].1,
            Err(_) => 0,
        }
    }

    /// Files with at least one importer.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// No file has importers.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_distinct_importers_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let edges = [
            ("a.py", "core.py"),
            ("b.py", "core.py"),
            ("b.py", "core.py"),
            ("core.py", "core.py"),
            ("core.py", "util.py"),
        ];
        write(dir.path(), edges).unwrap();
        let prior = ImportPrior::load(&path(dir.path()));
        let id = |p: &str| xxhash_rust::xxh3::xxh3_64(p.as_bytes());
        assert_eq!(prior.importers(id("core.py")), 2);
        assert_eq!(prior.importers(id("util.py")), 1);
        assert_eq!(prior.importers(id("a.py")), 0);
        assert_eq!(prior.len(), 2);
        // A damaged table is ignored, not trusted.
        std::fs::write(path(dir.path()), b"12345").unwrap();
        assert!(ImportPrior::load(&path(dir.path())).is_empty());
        assert!(ImportPrior::load(&dir.path().join("missing")).is_empty());
    }
}
