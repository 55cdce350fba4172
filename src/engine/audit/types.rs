//! The audits' requests and answers (spec 002 §12.3-12.4), a floor below the audits so
//! `protocol.rs` can gather them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Default least similarity of near duplicates.
pub const DEFAULT_DUPLICATE_THRESHOLD: f32 = 0.92;
/// Default least similarity of two passages before their disagreement is looked at.
pub const DEFAULT_CONFLICT_MIN_SIM: f32 = 0.80;
/// Default number of conflicts returned.
pub const DEFAULT_CONFLICT_TOP: usize = 20;
/// Default number of duplicate groups returned.
pub const DEFAULT_DUPLICATE_LIMIT: usize = 100;
/// Most duplicate groups one answer may ask for (a larger `limit` is refused, as is 0).
pub const MAX_DUPLICATE_LIMIT: usize = 10_000;
/// Most conflicts one answer may ask for (a larger `top` is refused, as is 0).
pub const MAX_CONFLICT_TOP: usize = 500;

/// `docdex audit duplicates`: repeated chunks.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct DuplicatesRequest {
    /// Least similarity (0..1, default 0.92) for two chunks to be near duplicates: the cosine of
    /// their embeddings when the repository has them, else the estimated Jaccard similarity of
    /// their word 3-shingles (MinHash). Exact duplicates are found either way.
    #[serde(default)]
    #[schemars(range(max = 1), extend("exclusiveMinimum" = 0))]
    pub threshold: Option<f32>,
    /// Most groups returned, largest first (default 100, 1 to 10000; `groups_total` counts them
    /// all).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// How near duplicates were compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SimilarityMethod {
    /// Cosine of the chunks' stored embeddings.
    Embeddings,
    /// Estimated Jaccard similarity of word 3-shingles (64 MinHash functions).
    Minhash,
}

/// Whether a group's chunks are the same text or only alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DuplicateKind {
    /// The same text (whitespace aside): same hash.
    Exact,
    /// Similar at or above the threshold.
    Near,
}

/// A chunk in an audit answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AuditItem {
    /// Repo-relative path (`//source/...` for a registered source).
    pub path: String,
    /// First line (1-based).
    pub line_start: u32,
    /// Last line (inclusive).
    pub line_end: u32,
    /// Similarity to the closest other chunk of its group (1 for an exact copy).
    pub score: f32,
}

/// Chunks that repeat one another.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DuplicateGroup {
    /// Stable id: a hash of the members' paths and lines.
    pub group_id: String,
    /// `exact` or `near`.
    pub kind: DuplicateKind,
    /// The chunks, in path and line order.
    pub items: Vec<AuditItem>,
}

/// The answer to [`DuplicatesRequest`] (spec 002 §12.3, plus how it was computed).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DuplicatesResponse {
    /// 1.
    pub schema_version: u32,
    /// The repository's fingerprint.
    pub project_id: String,
    /// Repo root.
    pub repo: PathBuf,
    /// `duplicates`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The threshold used.
    pub threshold: f32,
    /// How near duplicates were compared: `embeddings` or `minhash`.
    pub method: SimilarityMethod,
    /// Why MinHash was used, or what else the reader should know.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
    /// Chunks compared (chunks of fewer than 12 words are left out).
    pub chunks: u64,
    /// Candidate pairs whose similarity was computed.
    pub pairs_compared: u64,
    /// True when a bound on chunks or pairs was reached: some duplicates may be missing
    /// (`limits` says which bound).
    pub capped: bool,
    /// The bounds that were reached.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<String>,
    /// Groups found in all (before `limit`).
    pub groups_total: usize,
    /// Exact groups first, then near ones; larger groups first.
    pub groups: Vec<DuplicateGroup>,
    /// Wall time.
    pub elapsed_ms: f64,
}

/// `docdex audit conflicts`: similar passages that disagree.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ConflictsRequest {
    /// Least similarity (0..1, default 0.80) of two statements' words, values masked, before
    /// their disagreement is looked at.
    #[serde(default)]
    #[schemars(range(max = 1), extend("exclusiveMinimum" = 0))]
    pub min_sim: Option<f32>,
    /// Most conflicts returned, most similar first (default 20, at most 500).
    #[serde(default)]
    pub top: Option<usize>,
    /// Ask the configured chat model to explain each conflict (default true); without a model
    /// that answers, the heuristic reason is the explanation.
    #[serde(default)]
    pub explain: Option<bool>,
}

/// How two passages disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ConflictKind {
    /// Different numbers for the same thing (units folded: 24 h equals 1 day).
    Number,
    /// Different versions.
    Version,
    /// Different defaults.
    Default,
    /// One says not what the other says (or the opposite flag: enabled/disabled).
    Negation,
}

/// A passage in a conflict.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Passage {
    /// Repo-relative path.
    pub path: String,
    /// First line (1-based).
    pub line_start: u32,
    /// Last line (inclusive).
    pub line_end: u32,
    /// The statement, whitespace collapsed.
    pub text: String,
    /// How many other places state it word for word (compared once, as this one; left out
    /// when none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub copies: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Two passages that disagree.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ConflictPair {
    /// One passage.
    pub a: Passage,
    /// The other.
    pub b: Passage,
    /// Jaccard similarity of their words with values masked.
    pub similarity: f32,
    /// What disagrees.
    pub kind: ConflictKind,
    /// The heuristic's reason (always there).
    pub reason: String,
    /// The model's one-sentence explanation, or the reason when no model answered.
    pub explanation: String,
    /// `model` or `heuristic`.
    pub explained_by: String,
}

/// The answer to [`ConflictsRequest`] (spec 002 §12.4, plus how it was computed).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ConflictsResponse {
    /// 1.
    pub schema_version: u32,
    /// The repository's fingerprint.
    pub project_id: String,
    /// Repo root.
    pub repo: PathBuf,
    /// `conflicts`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The least similarity used.
    pub min_similarity: f32,
    /// Documentation files read.
    pub files: u64,
    /// Statements (sentences, list items, table rows of two content words or more) compared.
    pub statements: u64,
    /// Candidate pairs compared.
    pub pairs_compared: u64,
    /// True when a bound cut the search (`limits` says which).
    pub capped: bool,
    /// The bounds that were reached.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<String>,
    /// Conflicts found in all (before `top`).
    pub pairs_total: usize,
    /// Most similar first.
    pub pairs: Vec<ConflictPair>,
    /// Files skipped, the model's state, and other things to know.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
    /// Wall time.
    pub elapsed_ms: f64,
}
