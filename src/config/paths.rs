//! Where docdex keeps things: `DOCDEX_HOME` (default `~/.docdex`) holds
//! `config.toml`, `state/` (per-repo state, caches, locks, logs) and user
//! theme and keymap overrides.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// The docdex home: `$DOCDEX_HOME`, else `~/.docdex`.
pub fn home_dir() -> PathBuf {
    if let Some(h) = std::env::var_os("DOCDEX_HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(h);
    }
    let base = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
    base.join(".docdex")
}

/// Resolved global locations.
#[derive(Debug, Clone)]
pub struct Paths {
    /// `DOCDEX_HOME`.
    pub home: PathBuf,
    /// `state/` (or `[core] global_state_dir`).
    pub state: PathBuf,
}

impl Paths {
    /// Resolves the state dir from config (`~` expanded; empty means `<home>/state`).
    pub fn new(home: &Path, global_state_dir: &str) -> Self {
        let state = match global_state_dir.trim() {
            "" => home.join("state"),
            s if s.starts_with("~/") => std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default().join(&s[2..]),
            s => PathBuf::from(s),
        };
        Self { home: home.to_path_buf(), state }
    }

    /// The home and the state directory, resolved through symlinks: docdex's own files (the
    /// config with its token, every index), which no walk enters wherever a root lies.
    pub fn own_dirs(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = [&self.home, &self.state]
            .into_iter()
            .map(|d| std::fs::canonicalize(d).unwrap_or_else(|_| d.clone()))
            .collect();
        dirs.dedup();
        dirs
    }

    /// `state/repos/`.
    pub fn repos(&self) -> PathBuf {
        self.state.join("repos")
    }
    /// `state/repos/<fingerprint>/`.
    pub fn repo_state(&self, fingerprint: &str) -> PathBuf {
        self.repos().join(fingerprint)
    }
    /// `state/locks/`.
    pub fn locks(&self) -> PathBuf {
        self.state.join("locks")
    }
    /// `state/logs/`.
    pub fn logs(&self) -> PathBuf {
        self.state.join("logs")
    }
    /// `state/registry.json`: the known repositories.
    pub fn registry(&self) -> PathBuf {
        self.state.join("registry.json")
    }

    /// Creates the shared layout and proves it writable with a probe file.
    pub fn ensure_layout(&self) -> Result<()> {
        // Every command opens the engine: when the layout is there (`logs/` is made last), one
        // stat and an access check replace five mkdirs and a probe file.
        if self.logs().is_dir() && crate::engine::fsutil::dir_writable(&self.state) {
            return Ok(());
        }
        for dir in
            [self.repos(), self.state.join("cache/web"), self.state.join("cache/libs"), self.locks(), self.logs()]
        {
            crate::engine::fsutil::create_private_dir(&dir)
                .map_err(|e| Error::StateNotWritable { path: dir.clone(), reason: e.to_string() })?;
        }
        let probe = self.state.join(format!(".write-probe-{}", std::process::id()));
        std::fs::write(&probe, b"ok")
            .map_err(|e| Error::StateNotWritable { path: self.state.clone(), reason: e.to_string() })?;
        let _ = std::fs::remove_file(&probe);
        Ok(())
    }
}
