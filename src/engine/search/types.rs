//! Search's shapes: the request every surface sends (CLI flags, HTTP body, MCP
//! tool parameters) and the ranked answer with its snippets, timings and how it
//! was retrieved. A floor below the searcher, so the chat waterfall and the
//! surfaces can name them without importing it.

use crate::engine::index::types::IndexState;
use crate::engine::libs::types::LibHit;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Name of the keyword retriever in responses.
pub const BM25: &str = "bm25";
/// Name of the vector retriever in responses.
pub const VECTOR: &str = "vector";

/// A search request: the CLI's flags, the `POST /v1/search` body and the `docdex_search`
/// tool's parameters are this type (each transport adds only how it names the repository).
/// Its doc comments are what agents read as the tool's parameter descriptions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchRequest {
    /// What to look for: identifiers (`getUserName`), paths (`auth session`), or a
    /// plain-language description of the code ("where are expired sessions removed").
    pub query: String,
    /// Results per page (default `[search] default_limit`, 10).
    #[serde(default)]
    pub limit: Option<usize>,
    /// `next_cursor` from a previous result, for the next page.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Only files whose repo-relative path starts with this prefix (e.g. `src/auth/`).
    #[serde(default)]
    pub path_prefix: Option<String>,
    /// Only this language (as results show it: `rust`, `python`, `typescript`, `markdown`, ...).
    #[serde(default)]
    pub lang: Option<String>,
    /// Also search the documentation of the repository's dependencies (`docdex libs fetch`
    /// ingests it): passages labelled with package and version come back in `libs`, on the
    /// first page only.
    #[serde(default)]
    pub libs: bool,
    /// Rank with the chat waterfall's flags (`[search] chat_symbol_ranking_enabled` and
    /// `chat_ast_ranking_enabled`) instead of the search flags. Set by the chat's repo tier;
    /// not part of any transport's contract.
    #[serde(skip)]
    #[schemars(skip)]
    pub for_chat: bool,
    /// With `[search] history`, only commits made before this time (Unix seconds) lend their
    /// files a score. Set by `docdex eval` for a query built from a commit, which must not
    /// see that commit; not part of any transport's contract.
    #[serde(skip)]
    #[schemars(skip)]
    pub history_before: Option<i64>,
}

/// A highlighted term inside a snippet: line number and byte range within that line of the
/// snippet.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct Highlight {
    /// 1-based line number in the file.
    pub line: u32,
    /// Byte offset of the match within the line.
    pub start: usize,
    /// Byte offset just past the match.
    pub end: usize,
    /// Where the snippet's text of this line starts in the file's line, in bytes: 0 unless the
    /// line is longer than a snippet, which then shows a window around the line's first match
    /// (`start` and `end` count from the window's start).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub shown_from: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
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
    /// The registered source folder (`docdex add`) the hit came from; null for the repository
    /// itself. Its `path` is then `//<source>/<path inside the source>`.
    #[serde(default)]
    pub source: Option<String>,
    /// Final ranking score (BM25 with priors and diversity applied). In hybrid search, 0..1:
    /// the hit's fused score relative to the best, times the response's `confidence`, so it
    /// is never above it (the order is the fused one either way).
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
    /// True when the hit's source folder (`source`) is gone from disk (deleted, moved,
    /// unmounted): its files stay indexed, but cannot be read (`docdex sources` says so).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub source_missing: bool,
    /// True when the file is gone since it was indexed (deleted, renamed away, made
    /// unreadable or replaced by a link), so there is no snippet: `stale` alone read as
    /// "changed since indexed" over an empty snippet (tour36 F5). The next index run drops it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gone: bool,
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
    /// [`SCHEMA_VERSION`](crate::engine::index::types::SCHEMA_VERSION).
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
    /// True when something in the snippets was masked as PII or a secret (`[privacy]
    /// redact_snippets`, on by default; see docs/PRIVACY.md).
    pub pii_redacted: bool,
    /// Timings.
    pub timing_ms: SearchTiming,
    /// How the results were retrieved (BM25 alone or fused with vectors) and why.
    #[serde(default)]
    pub retrieval: RetrievalInfo,
    /// Library documentation passages when the request asked for `libs` (best first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub libs: Vec<LibHit>,
    /// Why there are no results when the query itself explains it: none of its words is
    /// searchable (single characters and common English words are not indexed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// How a search's results were retrieved.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct RetrievalInfo {
    /// `bm25` or `hybrid`.
    pub mode: String,
    /// Retrievers that contributed hits to this page.
    pub retrievers: Vec<String>,
    /// BM25 candidates that entered ranking.
    pub bm25_candidates: usize,
    /// Vector candidates that entered the fusion (0 in `bm25` mode).
    pub vector_candidates: usize,
    /// The embedding model (hybrid mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding_model: Option<String>,
    /// Time the embedder took for the query, in milliseconds (hybrid mode; not in `timing_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embed_ms: Option<f64>,
    /// Why vectors did not take part, when they did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

impl Default for RetrievalInfo {
    fn default() -> Self {
        RetrievalInfo::keyword_only(0)
    }
}

impl RetrievalInfo {
    /// BM25 alone, with `candidates` hits.
    pub fn keyword_only(candidates: usize) -> RetrievalInfo {
        RetrievalInfo {
            mode: BM25.into(),
            retrievers: if candidates > 0 { vec![BM25.into()] } else { Vec::new() },
            bm25_candidates: candidates,
            vector_candidates: 0,
            embedding_model: None,
            embed_ms: None,
            notice: None,
        }
    }
}

/// One query's answer in a batch (`docdex search --batch`): the response, or the error that
/// query alone met.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct BatchItem {
    /// Position in the batch (0-based).
    pub index: usize,
    /// The query as given.
    pub query: String,
    /// The answer, exactly what a single search returns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<SearchResponse>,
    /// The error's stable code (as in every error contract), when the query failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// The error, when the query failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
