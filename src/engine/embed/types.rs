//! The embedding phase's report and the `similar` request and answer, a floor
//! below the embedder so the index's summary can carry them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// How the embedding phase of an index run ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EmbedState {
    /// Every indexed chunk has a vector from the configured model.
    #[default]
    Ready,
    /// Some files were embedded before the embedder failed; the next run continues.
    Partial,
    /// No embedder answered; nothing was embedded.
    Unavailable,
    /// The stored vectors come from another model: `docdex index --reembed`.
    Stale,
    /// `[search] hybrid = false`.
    Off,
    /// Something else went wrong (the notice says what); the index itself is fine.
    Failed,
}

/// What the embedding phase did.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct EmbedSummary {
    /// The outcome.
    pub state: EmbedState,
    /// `[llm] embedding_model`.
    pub model: String,
    /// Vector length, once known.
    pub dim: Option<usize>,
    /// Files whose vectors were (re)written this run.
    pub files_embedded: u64,
    /// Chunks the model embedded this run.
    pub chunks_embedded: u64,
    /// Chunks whose vector came from the cache (same text embedded before).
    pub chunks_cached: u64,
    /// Chunks whose text another chunk of this run has too (one vector serves both), so
    /// `chunks_embedded + chunks_cached + chunks_repeated` is every chunk given a vector.
    #[serde(default)]
    pub chunks_repeated: u64,
    /// Chunks with nothing to embed (blank lines only): the index has them, no vector does.
    #[serde(default)]
    pub chunks_blank: u64,
    /// Files whose vectors were removed (gone from the index).
    pub files_removed: u64,
    /// Chunk vectors stored after the run.
    pub chunks: u64,
    /// Wall time of the phase.
    pub seconds: f64,
    /// Why it is not `ready`, or what to do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

/// `docdex similar`: files most like a given file.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct SimilarRequest {
    /// Repo-relative path of the file to compare with.
    pub file: String,
    /// How many files to return (default 10).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// One similar file.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SimilarFile {
    /// Repo-relative path.
    pub path: String,
    /// Language.
    pub lang: String,
    /// Cosine similarity of the two files' mean vectors (vector mode), or a relative BM25
    /// score in 0..1 (keyword mode).
    pub score: f32,
}

/// The answer to [`SimilarRequest`].
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SimilarResponse {
    /// Repo root.
    pub repo: PathBuf,
    /// The file compared with (repo-relative).
    pub file: String,
    /// `vector` (embeddings) or `bm25` (the file's most distinctive terms as a query).
    pub mode: String,
    /// Why the keyword fallback was used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
    /// Most similar first; never the file itself.
    pub results: Vec<SimilarFile>,
}
