//! The engine's public face: every type a surface (the CLI, the TUI, the HTTP and
//! MCP servers) sends to or reads from [`Engine`](super::Engine), and the few pure
//! helpers that go with them. The CLI's `--json` output, the HTTP bodies and the
//! MCP tool results are these types serialized, so a field means the same thing
//! everywhere. Surfaces import this module and `Engine`, nothing else of the
//! engine (a test in `tests/all/architecture.rs` checks it).
//!
//! Each type is defined next to the capability that produces it, a floor below it
//! (`index/types.rs`, `search/types.rs`, `code/types.rs`, `waterfall/types.rs`, ...);
//! this file only gathers them, so nothing inside the engine imports it.

pub use super::analysis::edit_distance;
pub use super::audit::types::*;
pub use super::cancel::CancelToken;
pub use super::check::{CheckItem, CheckOptions, CheckReport, CheckStatus};
/// The most results one symbol, AST or impact request returns.
pub use super::code::api::MAX_LIMIT as MAX_CODE_RESULTS;
pub use super::code::graph::{loop_text, Diagnostic, DiagnosticCode, Edge, EXTERNAL_PREFIX};
pub use super::code::impact::{
    CyclesResponse, Dependency, DiagnosticsRequest, DiagnosticsResponse, Direction, FileDiagnostics, GraphInfo,
    ImpactNode, ImpactRequest, ImpactResponse, Neighbor, NeighborsResponse, RebuildSummary, Relation, Side,
    DEFAULT_DEPTH, DEFAULT_LISTED, MAX_DEPTH, MAX_NODES_PER_SIDE,
};
pub use super::code::test_files::{is_test_path, TestFile, TestsRequest, TestsResponse};
pub use super::code::types::{
    AstFileHit, AstMode, AstNode, AstQueryFile, AstQueryRequest, AstQueryResponse, AstSearchRequest, AstSearchResponse,
    CodeIndexSummary, LanguageStatus, LanguageTiming, MatchKind, SymbolHit, SymbolKind, SymbolsRequest,
    SymbolsResponse, SymbolsStatus,
};
pub use super::context::render_markdown as render_context_markdown;
pub use super::context::types::*;
pub use super::dag::{
    to_dot, to_text, utc, valid_session_id, DagConversation, DagNode, DagSession, DagSessionList, DagSessionSummary,
    DagTurn, NodeKind,
};
pub use super::embed::types::{EmbedState, EmbedSummary, SimilarFile, SimilarRequest, SimilarResponse};
pub use super::eval::gitset::{GitSetOptions, GitSetStats};
pub use super::eval::{CompareWith, EvalReport, EvalRequest, EvalRun, QueryOutcome, QuerySource, KEPT_RANKING};
pub use super::fresh::{FreshEvent, FreshState, Freshness};
pub use super::fsutil::{ago, count, expand_tilde, files_and_dirs, noun_for, now_ms};
/// Language names: the index's name for a path, and what a user may type for one (`py`).
pub use super::index::files::{canonical_language, complete_language, language};
pub use super::index::sources::{text_only as source_text_only, AddSourceRequest, Source, SourceInfo};
pub use super::index::types::{
    FileContent, FileRequest, IndexProgress, IndexState, IndexSummary, LastEvent, ProgressSink, ProgressUnit,
    SkippedFile, StatusResponse, SCHEMA_VERSION,
};
pub use super::libs::label::{short_citation as short_lib_citation, short_note as short_lib_note};
pub use super::libs::types::*;
pub use super::limits::signed_count_in_range;
pub use super::llm::advice::{missing_model_advice, setup_by_hand};
pub use super::llm::models::{CatalogModel, ListedModel, LlmListResponse};
pub use super::llm::setup::{LlmSetupReport, LlmSetupRequest, SetupModel};
pub use super::llm::{model_matches, ChatMessage, PullProgress, Role, Sampling};
pub use super::memory::{
    MemoryDeleteResponse, MemoryHit, MemoryItem, MemoryListResponse, MemoryRecallRequest, MemoryRecallResponse,
    MemoryStoreRequest, MemoryStoreResponse, MAX_LIST as MAX_MEMORY_LIST, MAX_MEMORIES,
};
pub use super::overview::{FirstRun, FirstRunEnd, RepoOverview, RepoState};
pub use super::probe::CodeSource;
pub use super::profiles::evolution::DagTarget;
pub use super::profiles::gate::{staged_text, MAX_STAGED_BYTES, MAX_STAGED_FILES};
pub use super::profiles::policy::carries_preference;
pub use super::profiles::rules::{recognise as recognise_rule, Rule, GRAMMAR as RULE_GRAMMAR};
pub use super::profiles::store::default_agents;
pub use super::profiles::types::*;
pub use super::profiles::{
    behaviour as category_behaviour, settle_rule, valid_agent, CHANGED_MEANWHILE, MAX_CONTENT_BYTES,
};
pub use super::repos::{discover_root, enclosing_root, split_citation, RepoRecord, RepoRef};
pub use super::search::types::{
    BatchItem, ContextLine, Highlight, RetrievalInfo, SearchHit, SearchRequest, SearchResponse, SearchTiming,
};
pub use super::search::CANDIDATE_POOL;
pub use super::testrun::types::*;
pub use super::watch::WatchReport;
pub use super::waterfall::diff::DiffTarget;
pub use super::waterfall::types::*;
pub use super::web::browser::install_help as browser_install_help;
pub use super::web::types::*;
