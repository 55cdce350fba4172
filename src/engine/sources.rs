//! `Engine::add_source`, `list_sources`, `remove_source`: folders outside the repository
//! registered into its index (`index::sources`), listed with what the index holds from them.

use crate::engine::index::manifest::Manifest;
use crate::engine::index::sources::{self, AddSourceRequest, Source, SourceInfo};
use crate::engine::Engine;
use crate::error::{Error, Result};
use std::path::Path;

impl Engine {
    /// Registers a folder into the repository's index; the next index run (or a running
    /// watcher, within a second) indexes it.
    pub fn add_source(&self, repo_path: &Path, req: &AddSourceRequest) -> Result<Source> {
        let repo = self.resolve_repo(repo_path)?;
        crate::engine::fsutil::create_private_dir(&repo.state_dir)
            .map_err(|e| Error::io("creating", &repo.state_dir, e))?;
        let mut all = sources::load(&repo.state_dir);
        let source = sources::make(&repo, &all, req, &self.paths().home)?;
        all.push(source.clone());
        sources::save(&repo.state_dir, &all)?;
        Ok(source)
    }

    /// The repository's registered sources with their file counts, sizes and formats.
    pub fn list_sources(&self, repo_path: &Path) -> Result<Vec<SourceInfo>> {
        let repo = self.resolve_repo(repo_path)?;
        let manifest = Manifest::load(&repo.manifest_path());
        Ok(sources::load(&repo.state_dir)
            .into_iter()
            .map(|source| {
                let prefix = sources::key(&source.name, "");
                let missing_why = sources::why_missing(&source);
                let missing = missing_why.is_some();
                let formats = Default::default();
                let mut info = SourceInfo { source, files: 0, bytes: 0, formats, skipped: 0, missing, missing_why };
                for (_, e) in manifest.files.range(prefix.clone()..).take_while(|(k, _)| k.starts_with(&prefix)) {
                    if e.skipped.is_some() {
                        info.skipped += 1;
                        continue;
                    }
                    info.files += 1;
                    info.bytes += e.size;
                    *info.formats.entry(e.lang.clone()).or_default() += 1;
                }
                info
            })
            .collect())
    }

    /// Unregisters a source, by name or path; the next index run drops its files.
    pub fn remove_source(&self, repo_path: &Path, which: &str) -> Result<Source> {
        let repo = self.resolve_repo(repo_path)?;
        let mut all = sources::load(&repo.state_dir);
        // The name, then the path as typed (a folder gone from disk, or a link now in its place,
        // still names its own source), then the path with links followed.
        let typed = std::path::absolute(which).ok();
        let real = std::fs::canonicalize(which).ok();
        let by_name = all.iter().position(|s| s.name == which);
        let by_typed = || all.iter().position(|s| Some(&s.path) == typed.as_ref());
        let by_real = || all.iter().position(|s| Some(&s.path) == real.as_ref());
        let Some(i) = by_name.or_else(by_typed).or_else(by_real) else {
            let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
            return Err(Error::BadRequest(format!(
                "no source {which} in {} (sources: {})",
                repo.root.display(),
                if names.is_empty() { "none".to_string() } else { names.join(", ") }
            )));
        };
        let gone = all.remove(i);
        sources::save(&repo.state_dir, &all)?;
        Ok(gone)
    }
}
