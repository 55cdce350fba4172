//! The import/impact graph: every file's raw imports resolved to files in the
//! repository (or recorded as external / unresolved), stored as
//! `impact_graph.json`.

use super::imports::RawImport;
use super::Lang;
use crate::engine::repos::RepoRef;
use crate::error::Result;
use serde::{Deserialize, Serialize};

/// The imports of one file, as the per-file pass stored them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileImports {
    /// Repo-relative path with `/` separators.
    pub path: String,
    /// The file's language.
    pub lang: Lang,
    /// Its imports in source order.
    pub imports: Vec<RawImport>,
}

/// Rebuilds `impact_graph.json` from every code file's imports. Called after each index run
/// that changed code files; `files` lists all of them, not only the changed ones.
pub fn rebuild(_repo: &RepoRef, _files: &[FileImports]) -> Result<()> {
    Ok(())
}
