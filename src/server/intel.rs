//! The code-intelligence, memory and reasoning-DAG endpoints: symbols, the symbol
//! store's status, AST search and query, the impact graph, repo memory and the
//! logged chat sessions. Each handler resolves the repository the request names
//! (header, body, query; see [`super::extract::selector`]), checks that any path it carries
//! stays inside that repository, and runs one `Engine` call on the blocking pool.
//!
//! Requests are the engine's own types: a JSON body flattens the engine request
//! beside the transport's `repo`; a query string is read twice, once as the
//! engine request and once as [`RepoQuery`] (serde's `flatten` cannot turn a query
//! string's text into numbers, two plain reads can).

use super::error::ApiError;
use super::extract::{confine, selector, ApiJson, ApiQuery, JsonBody, RepoQuery};
use super::openapi::{Operation, Routes};
use super::state::AppState;
use crate::engine::protocol::RepoRef;
use crate::engine::protocol::{
    AstQueryRequest, AstQueryResponse, AstSearchRequest, AstSearchResponse, ConflictsRequest, ConflictsResponse,
    ContextPack, ContextRequest, DagSession, DagSessionList, DuplicatesRequest, DuplicatesResponse, ImpactRequest,
    ImpactResponse, MemoryRecallRequest, MemoryRecallResponse, MemoryStoreRequest, MemoryStoreResponse, SymbolsRequest,
    SymbolsResponse, SymbolsStatus,
};
use crate::engine::protocol::{
    CyclesResponse, DiagnosticsRequest, DiagnosticsResponse, MemoryDeleteResponse, MemoryListResponse, SimilarRequest,
    SimilarResponse, TestsRequest, TestsResponse, DEFAULT_LISTED,
};
use crate::engine::Engine;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use schemars::JsonSchema;
use serde::Deserialize;

/// `POST /v1/ast/query` body: an [`AstQueryRequest`] plus the repository.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AstQueryBody {
    /// The repository: absolute path, file:// URI or repo id (defaults to the served repo).
    #[serde(default)]
    pub repo: Option<String>,
    /// The query.
    #[serde(flatten)]
    pub query: AstQueryRequest,
}

impl JsonBody for AstQueryBody {
    /// [`AstQueryRequest`]'s camelCase spellings.
    const ALIASES: &'static [&'static str] = &["pathPrefix", "sampleLimit"];
}
impl JsonBody for MemoryStoreBody {}
impl JsonBody for MemoryRecallBody {}
impl JsonBody for MemoryDeleteBody {}
impl JsonBody for SimilarBody {}
impl JsonBody for ContextBody {}
impl JsonBody for DuplicatesBody {}
impl JsonBody for ConflictsBody {}

/// `POST /v1/memory/store` body.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct MemoryStoreBody {
    /// The repository: absolute path, file:// URI or repo id (defaults to the served repo).
    #[serde(default)]
    pub repo: Option<String>,
    /// What to remember.
    #[serde(flatten)]
    pub memory: MemoryStoreRequest,
}

/// `POST /v1/memory/recall` body.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct MemoryRecallBody {
    /// The repository: absolute path, file:// URI or repo id (defaults to the served repo).
    #[serde(default)]
    pub repo: Option<String>,
    /// What to recall.
    #[serde(flatten)]
    pub recall: MemoryRecallRequest,
}

/// `GET /v1/dag/{session}` query.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DagViewQuery {
    /// The repository: absolute path, file:// URI or repo id (defaults to the served repo).
    #[serde(default)]
    pub repo: Option<String>,
    /// How many nodes, newest first (default 1000, at most 10000); `older_nodes` counts the rest.
    #[serde(default)]
    pub limit: Option<usize>,
    /// Only nodes whose id is below this: the `next_before` of the previous page.
    #[serde(default)]
    pub before: Option<i64>,
}

/// `GET /v1/dag/sessions` query.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DagListQuery {
    /// The repository: absolute path, file:// URI or repo id (defaults to the served repo).
    #[serde(default)]
    pub repo: Option<String>,
    /// How many, newest first (default 50, at most 10000); `total` counts them all.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// `GET /v1/memory` query.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct MemoryListQuery {
    /// The repository: absolute path, file:// URI or repo id (defaults to the served repo).
    #[serde(default)]
    pub repo: Option<String>,
    /// How many, newest first (default 50, at most 200; a page also stops at about 1 MiB of
    /// content).
    #[serde(default)]
    pub limit: Option<usize>,
    /// The `next_after` of the previous page: list the memories older than that one.
    #[serde(default)]
    pub after: Option<String>,
}

/// `POST /v1/memory/delete` body.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct MemoryDeleteBody {
    /// The repository: absolute path, file:// URI or repo id (defaults to the served repo).
    #[serde(default)]
    pub repo: Option<String>,
    /// The memory's id, or its first 6 or more characters when they name one memory.
    pub id: String,
}

/// `POST /v1/similar` body.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SimilarBody {
    /// The repository: absolute path, file:// URI or repo id (defaults to the served repo).
    #[serde(default)]
    pub repo: Option<String>,
    /// The file and how many like it.
    #[serde(flatten)]
    pub similar: SimilarRequest,
}

/// `POST /v1/context` body: a [`ContextRequest`] plus the repository.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ContextBody {
    /// The repository: absolute path, file:// URI or repo id (defaults to the served repo).
    #[serde(default)]
    pub repo: Option<String>,
    /// The task and budget.
    #[serde(flatten)]
    pub context: ContextRequest,
}

/// `POST /v1/audit/duplicates` body: a [`DuplicatesRequest`] plus the repository.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DuplicatesBody {
    /// The repository: absolute path, file:// URI or repo id (defaults to the served repo).
    #[serde(default)]
    pub repo: Option<String>,
    /// Threshold and limit.
    #[serde(flatten)]
    pub audit: DuplicatesRequest,
}

/// `POST /v1/audit/conflicts` body: a [`ConflictsRequest`] plus the repository.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ConflictsBody {
    /// The repository: absolute path, file:// URI or repo id (defaults to the served repo).
    #[serde(default)]
    pub repo: Option<String>,
    /// Least similarity, how many, whether the model explains.
    #[serde(flatten)]
    pub audit: ConflictsRequest,
}

/// Resolves the repository, confines `paths` to it, and runs `call` on the blocking pool;
/// engine errors are explained against the mount (a first index in flight says so).
async fn run<T, F>(state: AppState, sel: Option<String>, paths: Vec<String>, call: F) -> Result<Json<T>, ApiError>
where
    T: Send + 'static,
    F: FnOnce(&Engine, &RepoRef) -> crate::Result<T> + Send + 'static,
{
    run_as(state, sel, true, paths, call).await
}

/// [`run`] for a `GET`: naming a repository does not mount it ([`AppState::repo_to_read`]).
async fn read<T, F>(state: AppState, sel: Option<String>, paths: Vec<String>, call: F) -> Result<Json<T>, ApiError>
where
    T: Send + 'static,
    F: FnOnce(&Engine, &RepoRef) -> crate::Result<T> + Send + 'static,
{
    run_as(state, sel, false, paths, call).await
}

/// [`run`] and [`read`]: `may_mount` says which.
async fn run_as<T, F>(
    state: AppState,
    sel: Option<String>,
    may_mount: bool,
    paths: Vec<String>,
    call: F,
) -> Result<Json<T>, ApiError>
where
    T: Send + 'static,
    F: FnOnce(&Engine, &RepoRef) -> crate::Result<T> + Send + 'static,
{
    let gate = state.work().clone();
    gate.run(move || {
        let repo = if may_mount { state.repo(sel.as_deref())? } else { state.repo_to_read(sel.as_deref())? };
        for p in &paths {
            confine(&repo, p)?;
        }
        call(state.engine(), &repo).map(Json).map_err(|e| state.explain(&repo, e))
    })
    .await
}

async fn symbols(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<RepoQuery>,
    ApiQuery(req): ApiQuery<SymbolsRequest>,
) -> Result<Json<SymbolsResponse>, ApiError> {
    let sel = selector(&headers, None, q.repo.as_deref());
    let paths = req.file.iter().chain(req.path_prefix.iter()).cloned().collect();
    read(state, sel, paths, move |engine, repo| engine.symbols(&repo.root, &req)).await
}

async fn symbols_status(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<RepoQuery>,
) -> Result<Json<SymbolsStatus>, ApiError> {
    let sel = selector(&headers, None, q.repo.as_deref());
    read(state, sel, Vec::new(), |engine, repo| engine.symbols_status(&repo.root)).await
}

async fn ast_search(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<RepoQuery>,
    ApiQuery(req): ApiQuery<AstSearchRequest>,
) -> Result<Json<AstSearchResponse>, ApiError> {
    let sel = selector(&headers, None, q.repo.as_deref());
    if req.kinds.is_empty() {
        return Err(ApiError::bad_request(
            "no node kinds: pass `kinds`, comma-separated Tree-sitter node kinds such as function_item,struct_item",
        ));
    }
    let paths = req.path_prefix.iter().cloned().collect();
    read(state, sel, paths, move |engine, repo| engine.ast_search(&repo.root, &req)).await
}

async fn ast_query(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<RepoQuery>,
    ApiJson(body): ApiJson<AstQueryBody>,
) -> Result<Json<AstQueryResponse>, ApiError> {
    let sel = selector(&headers, body.repo.as_deref(), q.repo.as_deref());
    if body.query.kinds.iter().all(|k| k.trim().is_empty()) {
        return Err(ApiError::bad_request("no node kinds: pass `kinds`, e.g. [\"function_item\"]"));
    }
    let paths = body.query.path_prefix.iter().cloned().collect();
    let req = body.query;
    run(state, sel, paths, move |engine, repo| engine.ast_query(&repo.root, &req)).await
}

async fn impact(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<RepoQuery>,
    ApiQuery(req): ApiQuery<ImpactRequest>,
) -> Result<Json<ImpactResponse>, ApiError> {
    let sel = selector(&headers, None, q.repo.as_deref());
    let paths = if req.file.starts_with("ext:") { Vec::new() } else { vec![req.file.clone()] };
    read(state, sel, paths, move |engine, repo| engine.impact(&repo.root, &req)).await
}

/// The paths of a graph request to confine to the repository (`ext:<package>` names no path).
fn graph_paths(file: Option<&String>) -> Vec<String> {
    file.filter(|f| !f.starts_with("ext:")).cloned().into_iter().collect()
}

async fn graph_tests(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<RepoQuery>,
    ApiQuery(mut req): ApiQuery<TestsRequest>,
) -> Result<Json<TestsResponse>, ApiError> {
    let sel = selector(&headers, None, q.repo.as_deref());
    req.limit = req.limit.or(Some(DEFAULT_LISTED));
    let paths = graph_paths(Some(&req.file));
    read(state, sel, paths, move |engine, repo| engine.impact_tests(&repo.root, &req)).await
}

async fn graph_diagnostics(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<RepoQuery>,
    ApiQuery(mut req): ApiQuery<DiagnosticsRequest>,
) -> Result<Json<DiagnosticsResponse>, ApiError> {
    let sel = selector(&headers, None, q.repo.as_deref());
    req.limit = req.limit.or(Some(DEFAULT_LISTED));
    let paths = graph_paths(req.file.as_ref());
    read(state, sel, paths, move |engine, repo| engine.impact_diagnostics(&repo.root, &req)).await
}

async fn context(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<RepoQuery>,
    ApiJson(body): ApiJson<ContextBody>,
) -> Result<Json<ContextPack>, ApiError> {
    let sel = selector(&headers, body.repo.as_deref(), q.repo.as_deref());
    if body.context.task.trim().is_empty() {
        return Err(ApiError::bad_request("empty task: describe what you are about to do in `task`"));
    }
    let req = body.context;
    run(state, sel, Vec::new(), move |engine, repo| engine.context(&repo.root, &req)).await
}

async fn audit_duplicates(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<RepoQuery>,
    ApiJson(body): ApiJson<DuplicatesBody>,
) -> Result<Json<DuplicatesResponse>, ApiError> {
    let sel = selector(&headers, body.repo.as_deref(), q.repo.as_deref());
    let req = body.audit;
    run(state, sel, Vec::new(), move |engine, repo| engine.audit_duplicates(&repo.root, &req)).await
}

async fn audit_conflicts(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<RepoQuery>,
    ApiJson(body): ApiJson<ConflictsBody>,
) -> Result<Json<ConflictsResponse>, ApiError> {
    let sel = selector(&headers, body.repo.as_deref(), q.repo.as_deref());
    let req = body.audit;
    run(state, sel, Vec::new(), move |engine, repo| engine.audit_conflicts(&repo.root, &req)).await
}

async fn memory_store(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<RepoQuery>,
    ApiJson(body): ApiJson<MemoryStoreBody>,
) -> Result<Json<MemoryStoreResponse>, ApiError> {
    let sel = selector(&headers, body.repo.as_deref(), q.repo.as_deref());
    let req = body.memory;
    run(state, sel, Vec::new(), move |engine, repo| engine.memory_store(&repo.root, &req)).await
}

async fn memory_recall(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<RepoQuery>,
    ApiJson(body): ApiJson<MemoryRecallBody>,
) -> Result<Json<MemoryRecallResponse>, ApiError> {
    let sel = selector(&headers, body.repo.as_deref(), q.repo.as_deref());
    let req = body.recall;
    run(state, sel, Vec::new(), move |engine, repo| engine.memory_recall(&repo.root, &req)).await
}

async fn memory_list(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<MemoryListQuery>,
) -> Result<Json<MemoryListResponse>, ApiError> {
    let sel = selector(&headers, None, q.repo.as_deref());
    let (limit, after) = (q.limit, q.after);
    read(state, sel, Vec::new(), move |engine, repo| engine.memory_list_page(&repo.root, limit, after.as_deref())).await
}

async fn memory_delete(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<RepoQuery>,
    ApiJson(body): ApiJson<MemoryDeleteBody>,
) -> Result<Json<MemoryDeleteResponse>, ApiError> {
    let sel = selector(&headers, body.repo.as_deref(), q.repo.as_deref());
    let id = body.id;
    run(state, sel, Vec::new(), move |engine, repo| engine.memory_delete(&repo.root, &id)).await
}

async fn similar(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<RepoQuery>,
    ApiJson(body): ApiJson<SimilarBody>,
) -> Result<Json<SimilarResponse>, ApiError> {
    let sel = selector(&headers, body.repo.as_deref(), q.repo.as_deref());
    let req = body.similar;
    run(state, sel, Vec::new(), move |engine, repo| engine.similar(&repo.root, &req)).await
}

async fn graph_cycles(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<RepoQuery>,
) -> Result<Json<CyclesResponse>, ApiError> {
    let sel = selector(&headers, None, q.repo.as_deref());
    read(state, sel, Vec::new(), |engine, repo| engine.graph_cycles(&repo.root)).await
}

async fn dag_sessions(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<DagListQuery>,
) -> Result<Json<DagSessionList>, ApiError> {
    let sel = selector(&headers, None, q.repo.as_deref());
    let limit = q.limit;
    read(state, sel, Vec::new(), move |engine, repo| engine.dag_sessions_up_to(&repo.root, limit)).await
}

async fn dag_session(
    State(state): State<AppState>,
    headers: HeaderMap,
    UrlPath(session): UrlPath<String>,
    ApiQuery(q): ApiQuery<DagViewQuery>,
) -> Result<Json<DagSession>, ApiError> {
    let sel = selector(&headers, None, q.repo.as_deref());
    if session.trim().is_empty() {
        return Err(ApiError::new(StatusCode::BAD_REQUEST, "bad_request", "empty session id"));
    }
    let (limit, before) = (q.limit, q.before);
    read(state, sel, Vec::new(), move |engine, repo| engine.dag_session_page(&repo.root, &session, limit, before)).await
}

/// Adds the symbols, AST, impact, memory and DAG endpoints to `routes`.
pub fn routes(routes: Routes<AppState>) -> Routes<AppState> {
    cycle_and_dag_routes(memory_routes(pack_routes(code_routes(routes))))
}

/// Symbols, AST queries and the impact graph's files, tests and diagnostics.
fn code_routes(routes: Routes<AppState>) -> Routes<AppState> {
    routes
        .get(
            "/v1/symbols",
            symbols,
            Operation::new("Symbols by name, or a file's outline")
                .describe("`query` searches declarations by name (exact, prefix, word parts, fuzzy), filtered by `kind`, `file`, `path_prefix`, `lang`; `file` alone returns the file's outline. 409 `stale_index` when the symbol store must be rebuilt (parser drift: run `docdex index`); 403 `path_outside_repo` for a file outside the repository."),
        )
        .get(
            "/v1/symbols/status",
            symbols_status,
            Operation::new("The symbol store's state: counts per language, parser drift")
                .describe("`symbols_reindex_required: true` means symbol and AST queries answer 409 `stale_index` until `docdex index` runs."),
        )
        .get(
            "/v1/ast/search",
            ast_search,
            Operation::new("Files containing Tree-sitter node kinds")
                .describe("`kinds` is comma-separated (`function_item,struct_item`); `mode=all` needs every kind in a file."),
        )
        .post(
            "/v1/ast/query",
            ast_query,
            Operation::new("Node kinds per file with sample nodes, optionally by declared name"),
        )
        .get(
            "/v1/graph/impact",
            impact,
            Operation::new("What a file imports and what imports it, to a depth")
                .describe("`affected` lists every file whose behaviour may change if `file` changes. 403 `path_outside_repo` for paths leaving the repository; 404 `not_found` for a file the graph does not know."),
        )
        .get(
            "/v1/graph/tests",
            graph_tests,
            Operation::new("The test files that exercise a file, nearest first")
                .describe("By import at any depth, by name (`test_session.py`, `session_test.go`, ...), or the file itself; each with `depth`, `via` (the import chain) and `reason`. `limit` (default 200, at most 1000) with `total` and `truncated`. 403 `path_outside_repo`; 404 `not_found` for a file the graph does not know."),
        )
        .get(
            "/v1/graph/diagnostics",
            graph_diagnostics,
            Operation::new("Imports that could not be resolved, by file")
                .describe("Every file's, or one `file`'s: dynamic imports, specifiers no file matches, import-map entries naming no repository file, each with line, `code` and `reason`; `by_code` counts them. `limit` (default 200, at most 1000) with `total` and `truncated`. 403 `path_outside_repo`; 404 `not_found` for a file the graph does not know."),
        )
}

/// Context packs and audits.
fn pack_routes(routes: Routes<AppState>) -> Routes<AppState> {
    routes
        .post(
            "/v1/context",
            context,
            Operation::new("A bounded, cited context pack for a task (no model needed)")
                .describe("Changed lines (since `since`, staged, dirty, untracked), search hits, the definitions they name, the tests that exercise them and their importers, each with path, lines, role, reason and tokens, fitted into `budget` tokens (cl100k_base, default 8000). `format: md` (default) adds the pack as Markdown in `markdown`."),
        )
        .post(
            "/v1/audit/duplicates",
            audit_duplicates,
            Operation::new("Exact and near-duplicate chunk groups")
                .describe("Exact copies by a whitespace-blind hash; near copies at `threshold` (default 0.92) by the cosine of the chunks' embeddings, or by MinHash of word 3-shingles without them (`method` says which). Bounded: `capped` and `limits` say when a bound cut the search."),
        )
        .post(
            "/v1/audit/conflicts",
            audit_conflicts,
            Operation::new("Similar documentation passages that disagree")
                .describe("Statements of the documentation files (changelogs aside) at `min_sim` similarity (default 0.80, words with values masked) that give one thing different numbers (units folded), versions or defaults, or where only one is negated; each with `kind`, the heuristic's `reason` and an `explanation` (the chat model's, when one answers and `explain` is not false). `top` (default 20) most similar first. 400 `bad_request` for a similarity outside 0..1."),
        )
}

/// Repo memory and similar files.
fn memory_routes(routes: Routes<AppState>) -> Routes<AppState> {
    routes
        .post(
            "/v1/memory/store",
            memory_store,
            Operation::new("Remember a fact about the repository")
                .describe("Stored in the repository's memory.db with an embedding when an embedder answers (a `notice` says when not); chat recalls memories into its context."),
        )
        .post(
            "/v1/memory/recall",
            memory_recall,
            Operation::new("Memories most related to a query")
                .describe("By meaning (`mode: vector`), or by shared words (`mode: text`, with a `notice`) when no embedder answers."),
        )
        .get(
            "/v1/memory",
            memory_list,
            Operation::new("The repository's memories, newest first")
                .describe("`limit` (default 50). A repository docdex never touched answers an empty list."),
        )
        .post(
            "/v1/memory/delete",
            memory_delete,
            Operation::new("Forget one memory")
                .describe("`id` is the memory's id or its first 6 or more characters when they name one memory; 404 `not_found` for an id of another repository or none."),
        )
        .post(
            "/v1/similar",
            similar,
            Operation::new("The files most like a given file")
                .describe("By the file's embeddings (`mode: vector`, cosine scores), or by its most distinctive words as a query without them (`mode: bm25`, scores relative to the closest file)."),
        )
}

/// Import cycles and the reasoning DAG's sessions.
fn cycle_and_dag_routes(routes: Routes<AppState>) -> Routes<AppState> {
    routes
        .get(
            "/v1/graph/cycles",
            graph_cycles,
            Operation::new("Import cycles, largest first")
                .describe("Strongly connected components of the file edges, each with one concrete loop; module declarations (Rust `mod`, Dart `part`) are not cycle edges."),
        )
        .get(
            "/v1/dag/sessions",
            dag_sessions,
            Operation::new("Reasoning sessions logged by chat, newest first")
                .describe("The newest `limit` (default 50, at most 10000); `total` counts every session."),
        )
        .get(
            "/v1/dag/{session}",
            dag_session,
            Operation::new("One reasoning session with its nodes and edges")
                .describe("`session` is the id or a unique prefix; 404 `not_found` when no session matches."),
        )
}
