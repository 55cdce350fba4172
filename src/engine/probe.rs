//! Probes for the benchmark harness (`docdex bench`, `bench-index`): the
//! engine's phases timed apart from an index run (the walk alone, a bare
//! Tree-sitter parse, parse plus extraction) and the sizes of what a run wrote.
//! They live here so the harness, a surface, needs nothing below [`Engine`].

use crate::engine::code::{self, Lang};
use crate::engine::index::{self, manifest::Manifest, walk};
use crate::engine::repos::RepoRef;
use crate::engine::Engine;
use crate::error::{IoContext, Result};
use std::path::Path;

/// A source file of one of the grammars, read into memory for timing the parser alone.
#[derive(Debug, Clone)]
pub struct CodeSource {
    /// Its language.
    pub lang: Lang,
    /// Its text.
    pub text: String,
}

impl CodeSource {
    /// Parses it with Tree-sitter and drops the tree (the parser's own cost).
    pub fn parse(&self) {
        drop(code::parse_tree(self.lang, &self.text));
    }

    /// Parses it and extracts symbols, node-kind counts and imports, as the code pass does,
    /// without writing the store.
    pub fn analyze(&self) {
        drop(code::analyze(self.lang, &self.text, "x"));
    }
}

impl Engine {
    /// Worker threads an index run uses (`[index] threads`, or one per core).
    pub fn index_threads(&self) -> usize {
        index::thread_count(&self.config().index)
    }

    /// Walks the repo exactly as an index run does and returns how many files it found,
    /// reading none of them.
    pub fn probe_walk(&self, repo: &RepoRef) -> usize {
        let cfg = &self.config().index;
        walk::walk(&repo.root, cfg, self.index_threads()).files.len()
    }

    /// Bytes of the files the last run indexed (skipped files left out), from the manifest.
    pub fn indexed_bytes(&self, repo: &RepoRef) -> u64 {
        let manifest = Manifest::load(&repo.manifest_path());
        manifest.files.values().filter(|e| e.skipped.is_none()).map(|e| e.size).sum()
    }

    /// Size of the repo's symbol store on disk, its write-ahead log included.
    pub fn symbols_db_bytes(&self, repo: &RepoRef) -> u64 {
        let db = code::store::db_path(repo);
        ["", "-wal"]
            .iter()
            .filter_map(|s| std::fs::metadata(format!("{}{s}", db.display())).ok())
            .map(|m| m.len())
            .sum()
    }

    /// Every file under `root` in one of the grammars' languages that an index run would
    /// parse (within `[index] max_file_size_bytes`, not binary), read into memory.
    pub fn code_sources(&self, root: &Path) -> Result<Vec<CodeSource>> {
        let cfg = &self.config().index;
        let walked = walk::walk(root, cfg, self.index_threads());
        let mut out = Vec::new();
        for c in walked.files {
            let Some(lang) = Lang::from_path(Path::new(&c.rel)) else { continue };
            if c.size > cfg.max_file_size_bytes {
                continue;
            }
            let bytes = std::fs::read(&c.abs).at("reading", &c.abs)?;
            if crate::engine::fsutil::looks_binary(&bytes) {
                continue;
            }
            out.push(CodeSource { lang, text: String::from_utf8_lossy(&bytes).into_owned() });
        }
        Ok(out)
    }
}
