//! The library-docs contracts: `docdex libs fetch|list`, library hits in search and chat.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Version of the libs JSON shapes.
pub const LIBS_SCHEMA_VERSION: u32 = 1;

/// A package ecosystem.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Ecosystem {
    /// Rust crates (Cargo.toml, Cargo.lock).
    Crates,
    /// npm packages (package.json and its lockfile).
    Npm,
    /// Python packages (requirements*.txt, pyproject.toml, poetry.lock, uv.lock).
    Pypi,
}

impl Ecosystem {
    /// Where its published docs come from, for messages.
    pub fn registry(self) -> &'static str {
        match self {
            Ecosystem::Crates => "docs.rs",
            Ecosystem::Npm => "the npm registry",
            Ecosystem::Pypi => "PyPI",
        }
    }

    /// The name used in paths and labels.
    pub fn name(self) -> &'static str {
        match self {
            Ecosystem::Crates => "crates",
            Ecosystem::Npm => "npm",
            Ecosystem::Pypi => "pypi",
        }
    }
}

/// A direct dependency pinned to its locked version.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
pub struct Dependency {
    /// Its ecosystem.
    pub ecosystem: Ecosystem,
    /// The package name.
    pub name: String,
    /// The locked (or installed) version.
    pub version: String,
    /// Where the version came from (`Cargo.lock`, `package-lock.json`, `node_modules`, ...).
    pub locked_by: String,
}

/// `docdex libs fetch`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct LibsFetchRequest {
    /// Read sources and fetch published docs again even when `cache/libs` has them.
    #[serde(default)]
    pub refresh: bool,
    /// Only local sources (installed packages); no network.
    #[serde(default)]
    pub offline: bool,
}

/// One package's docs after a fetch.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct LibPackage {
    /// Its ecosystem.
    pub ecosystem: Ecosystem,
    /// The package.
    pub name: String,
    /// The version documented.
    pub version: String,
    /// Documents from the installed sources (README, doc comments, docstrings).
    pub local_docs: u32,
    /// Documents from the published docs (docs.rs, the npm README, PyPI).
    pub published_docs: u32,
    /// Passages in the repo's libs index.
    pub chunks: u32,
    /// Served from `cache/libs` without reading or fetching anything.
    pub cached: bool,
    /// Why something is missing (no installed sources, offline, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// What `libs fetch` reports as it goes: each package as it starts (its registry may take
/// the page timeout) and as it is done.
#[derive(Debug, Clone, Copy)]
pub enum LibsProgress<'a> {
    /// Reading and fetching the `index`-th package (from 1) of `total`.
    Started {
        /// The package.
        dep: &'a Dependency,
        /// Its place, from 1.
        index: usize,
        /// Packages this fetch documents.
        total: usize,
    },
    /// A package done.
    Done(&'a LibPackage),
}

/// The answer to `docdex libs fetch`, and `docdex libs list`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct LibsReport {
    /// [`LIBS_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The repository.
    pub repo: String,
    /// Every direct dependency found, with its docs.
    pub packages: Vec<LibPackage>,
    /// Passages in the repo's libs index.
    pub chunks: u32,
    /// Whole call, in milliseconds.
    pub ms: f64,
    /// Manifests read and anything worth knowing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Set when a registry (docs.rs, npm, PyPI) could not be reached at all (no network, DNS,
    /// TLS, a timeout): which, for how many packages, and what to do. The installed sources
    /// were still indexed, so the fetch succeeds; this says why published docs are missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry_unreachable: Option<String>,
}

/// A search of the repo's libs index.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct LibsSearchRequest {
    /// The query.
    pub query: String,
    /// Hits at most (default 5).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// A passage of library documentation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LibHit {
    /// How to cite it: `<ecosystem>:<name>@<version>` then ` <title>`.
    pub citation: String,
    /// Its ecosystem.
    pub ecosystem: Ecosystem,
    /// The package.
    pub package: String,
    /// The version.
    pub version: String,
    /// The document's title (README, an item, a module).
    pub title: String,
    /// Where it came from (a file under the installed sources, or a URL).
    pub source: String,
    /// The passage.
    pub text: String,
    /// BM25 score.
    pub score: f32,
}

/// Library hits for a query.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct LibsSearchResponse {
    /// Best first.
    pub hits: Vec<LibHit>,
}
