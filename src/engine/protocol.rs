//! Request, response and event types shared by every surface. The CLI's
//! `--json` output, the HTTP bodies and the MCP tool results are these types
//! serialized, so a field means the same thing everywhere.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

pub use super::code::api::{
    AstFileHit, AstMode, AstNode, AstQueryFile, AstQueryRequest, AstQueryResponse, AstSearchRequest, AstSearchResponse,
    CodeIndexSummary, LanguageStatus, LanguageTiming, MatchKind, SymbolHit, SymbolsRequest, SymbolsResponse,
    SymbolsStatus,
};
pub use super::code::impact::{
    CyclesResponse, DiagnosticsResponse, Direction, ImpactRequest, ImpactResponse, NeighborsResponse,
};
pub use super::dag::{DagNode, DagSession, DagSessionList, DagSessionSummary, NodeKind};
pub use super::overview::{RepoOverview, RepoState};
pub use super::waterfall::types::*;
pub use crate::engine::{
    check::{CheckItem, CheckOptions, CheckReport, CheckStatus},
    embed::{EmbedState, EmbedSummary, SimilarFile, SimilarRequest, SimilarResponse},
    llm::models::{CatalogModel, ListedModel, LlmListResponse},
    llm::setup::{LlmSetupReport, LlmSetupRequest, SetupModel},
    memory::{
        MemoryDeleteResponse, MemoryHit, MemoryItem, MemoryListResponse, MemoryRecallRequest, MemoryRecallResponse,
        MemoryStoreRequest, MemoryStoreResponse,
    },
    search::hybrid::RetrievalInfo,
};

/// Version of the JSON shapes below.
pub const SCHEMA_VERSION: u32 = 1;

/// Index state as the spec names it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum IndexState {
    /// Searchable and not being written.
    Ready,
    /// A writer is applying changes; search still answers from the last commit.
    Updating,
    /// The last run failed or there is no usable index.
    Error,
}

/// A search request (CLI flags, HTTP body, MCP tool parameters).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchRequest {
    /// The query text: words, identifiers, paths, or a plain-language description.
    pub query: String,
    /// Results per page (defaults to `[search] default_limit`).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Opaque cursor from a previous response's `next_cursor`.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Only paths starting with this prefix (repo-relative).
    #[serde(default)]
    pub path_prefix: Option<String>,
    /// Only this language (as shown in results, e.g. `rust`, `python`, `markdown`).
    #[serde(default)]
    pub lang: Option<String>,
}

/// A highlighted term inside a snippet: line number and byte range within that line.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct Highlight {
    /// 1-based line number in the file.
    pub line: u32,
    /// Byte offset of the match within the line.
    pub start: usize,
    /// Byte offset just past the match.
    pub end: usize,
}

/// One ranked hit.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SearchHit {
    /// Stable id: `path:line_start-line_end`.
    pub chunk_id: String,
    /// Repo-relative path.
    pub path: String,
    /// Language.
    pub lang: String,
    /// First line of the matching chunk.
    pub line_start: u32,
    /// Last line of the matching chunk.
    pub line_end: u32,
    /// Page range (documents only; null for text).
    pub page_start: Option<u32>,
    /// Page range end.
    pub page_end: Option<u32>,
    /// Final ranking score (BM25 with priors and diversity applied).
    pub score: f32,
    /// First line of the snippet.
    pub snippet_line_start: u32,
    /// The matching lines with a little context (at most ~900 characters).
    pub snippet: String,
    /// Query terms found in the snippet.
    pub highlights: Vec<Highlight>,
    /// Index generation the hit came from.
    pub generation: u64,
    /// True when the file changed on disk after this generation indexed it.
    pub stale: bool,
    /// When the chunk is a piece of a larger definition (a method of a long class, the middle
    /// of a long function): the signature lines of what it is inside, outermost first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context: Vec<ContextLine>,
    /// Which retrievers found this chunk: `bm25`, `vector`, or both.
    #[serde(default)]
    pub retrievers: Vec<String>,
}

/// A line shown above a snippet as context.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct ContextLine {
    /// 1-based line number.
    pub line: u32,
    /// The line as it is on disk (trimmed, at most 200 characters).
    pub text: String,
}

/// Search timings in milliseconds.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct SearchTiming {
    /// Query parsing and BM25 retrieval.
    pub search: f64,
    /// Priors, diversity and paging.
    pub rank: f64,
    /// Snippet extraction from files on disk.
    pub snippets: f64,
    /// Total.
    pub total: f64,
}

/// Spec 002 §12.1.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SearchResponse {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Repo fingerprint.
    pub project_id: String,
    /// Repo root.
    pub repo: PathBuf,
    /// The query as given.
    pub query: String,
    /// State of the index when the search ran.
    pub index_state: IndexState,
    /// Generation searched.
    pub generation: u64,
    /// How sure the results answer the query, 0..1 (see docs/SEARCH.md).
    pub confidence: f64,
    /// Ranked hits for this page.
    pub results: Vec<SearchHit>,
    /// Matching chunks considered for ranking (before paging); capped at the 1,000-chunk
    /// ranking pool, so it is a lower bound when it equals 1,000.
    pub total_hits: usize,
    /// Cursor for the next page; empty when there is none.
    pub next_cursor: String,
    /// Reserved for PII redaction (always false for now).
    pub pii_redacted: bool,
    /// Timings.
    pub timing_ms: SearchTiming,
    /// How the results were retrieved (BM25 alone or fused with vectors) and why.
    #[serde(default)]
    pub retrieval: RetrievalInfo,
}

/// A file that is not in the index, and why.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct SkippedFile {
    /// Repo-relative path.
    pub path: String,
    /// Reason: binary, too large, unreadable, symlink, ...
    pub reason: String,
}

/// Outcome of one index run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct IndexSummary {
    /// Repo root.
    pub repo: PathBuf,
    /// Files now in the index.
    pub files: u64,
    /// Chunks now in the index.
    pub chunks: u64,
    /// Files added this run.
    pub added: u64,
    /// Files whose content changed.
    pub updated: u64,
    /// Files removed.
    pub deleted: u64,
    /// Of added/deleted, pairs that were renames (same content, new path).
    pub renamed: u64,
    /// Files found unchanged (not re-read or not re-indexed).
    pub unchanged: u64,
    /// Bytes read this run.
    pub bytes_read: u64,
    /// Files passed over deliberately (binary, too large, symlinks).
    pub skipped: Vec<SkippedFile>,
    /// Files that could not be read (retried on the next run).
    pub errors: Vec<SkippedFile>,
    /// Index generation after the run.
    pub generation: u64,
    /// Wall time.
    pub seconds: f64,
    /// True when the index was rebuilt from scratch.
    pub rebuilt: bool,
    /// Set when nothing ran because another process already keeps the index current.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// What the code pass (symbols, AST, imports) did, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<CodeIndexSummary>,
    /// The embedding phase (absent when it did not run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embeddings: Option<EmbedSummary>,
}

/// Live progress of an index run (for bars, `/v1/status`, the TUI).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct IndexProgress {
    /// Phase: `walking`, `indexing`, `committing`, `done`.
    pub phase: String,
    /// Files processed so far.
    pub files_done: u64,
    /// Files to process.
    pub files_total: u64,
    /// Bytes processed so far.
    pub bytes_done: u64,
    /// Bytes to process.
    pub bytes_total: u64,
}

/// The last change a watcher or indexer applied.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct LastEvent {
    /// `create`, `modify`, `delete`, `rename` or `index`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Repo-relative path.
    pub path: String,
    /// When, epoch ms.
    pub at: u64,
}

/// Spec 002 §12.2.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StatusResponse {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Repo fingerprint.
    pub project_id: String,
    /// Repo root.
    pub repo: PathBuf,
    /// ready / updating / error.
    pub index_state: IndexState,
    /// Generation of the last commit.
    pub generation: u64,
    /// Files waiting for the watcher or a running index.
    pub queued_files: u64,
    /// Files in the index.
    pub documents: u64,
    /// Chunks in the index.
    pub chunks: u64,
    /// Last completed index run, epoch ms.
    pub last_indexed_ms: Option<u64>,
    /// Progress of a run in flight.
    pub progress: Option<IndexProgress>,
    /// Last change applied.
    pub last_event: Option<LastEvent>,
    /// Skipped files, errors and other things worth knowing.
    pub warnings: Vec<String>,
    /// Per-repo state directory.
    pub state_dir: PathBuf,
}

/// Lines of a file, for `docdex get`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct FileContent {
    /// Repo-relative path.
    pub path: String,
    /// First line returned.
    pub line_start: u32,
    /// Last line returned.
    pub line_end: u32,
    /// Lines in the file.
    pub total_lines: u32,
    /// The text of those lines.
    pub text: String,
}
