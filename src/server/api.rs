//! The repository API: health, status, mounting (`initialize`), search, reading
//! a file, the registered repositories and the provider's models. One handler
//! per endpoint, each a few lines over one `Engine` call run on the blocking
//! pool (engine calls are synchronous and touch disk), registered through
//! [`Routes`] so the OpenAPI document lists exactly what is served.
//!
//! A request names its repository with the `x-docdex-repo` header, a `repo`
//! body field or a `?repo=` query (in that order of precedence); `docdex serve`
//! defaults to its repo.

use super::error::{ApiError, ErrorDetail};
use super::extract::{blocking, parse_lines, selector, ApiJson, ApiQuery, JsonBody, RepoQuery};
use super::openapi::{Operation, Routes};
use super::state::{AppState, Mode};
use crate::engine::protocol::{
    FileContent, FileRequest, FreshState, Freshness, RepoRecord, RepoRef, SearchRequest, SearchResponse,
    StatusResponse, SCHEMA_VERSION,
};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::Json;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `POST /v1/search` body: a [`SearchRequest`] plus the repository.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchBody {
    /// The repository: absolute path, file:// URI or repo id (defaults to the served repo).
    #[serde(default)]
    pub repo: Option<String>,
    /// The search.
    #[serde(flatten)]
    pub search: SearchRequest,
}

impl JsonBody for SearchBody {}

/// `GET /v1/search` query string: a [`SearchRequest`]'s fields, `q` for `query`, so a search
/// from `curl` or a browser's address bar needs no JSON body (`?q=session+expiry&limit=5`).
/// Like every `GET`, it mounts no repository.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchQuery {
    /// What to look for (`q` for short): identifiers, paths, or a plain-language description.
    #[serde(alias = "q")]
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
    /// Only this language (`rust`, `python`, `typescript`, `markdown`, ...).
    #[serde(default)]
    pub lang: Option<String>,
    /// Also search the documentation of the repository's dependencies (`libs=true`).
    #[serde(default)]
    pub libs: bool,
}

impl From<SearchQuery> for SearchRequest {
    fn from(q: SearchQuery) -> SearchRequest {
        SearchRequest {
            query: q.query,
            limit: q.limit,
            cursor: q.cursor,
            path_prefix: q.path_prefix,
            lang: q.lang,
            libs: q.libs,
            for_chat: false,
            history_before: None,
        }
    }
}

/// `GET /v1/open`: the query string's own fields, beside a [`FileRequest`]'s.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct OpenQuery {
    /// Line range `A-B` (or one line `A`): the query string's short form of
    /// `start_line`/`end_line`; the whole file when neither is given.
    #[serde(default)]
    pub lines: Option<String>,
    /// The repository: absolute path, file:// URI or repo id (defaults to the served repo).
    #[serde(default)]
    pub repo: Option<String>,
}

/// `POST /v1/initialize` body.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct InitializeBody {
    /// The repository as a `file://` URI (an absolute path or repo id also works).
    #[serde(rename = "rootUri", alias = "root_uri", alias = "workspace_root", alias = "repo")]
    pub root_uri: String,
}

/// Open: `rootUri` is LSP's name, and a client may send the rest of an LSP `initialize`
/// (`processId`, `capabilities`); a misspelt `rootUri` is refused as missing anyway.
impl JsonBody for InitializeBody {
    const STRICT: bool = false;
}

/// `GET /healthz`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Health {
    /// Always `ok` when the process answers.
    pub status: String,
    /// docdex version.
    pub version: String,
    /// `serve` or `daemon`.
    pub mode: Mode,
    /// Milliseconds since start.
    pub uptime_ms: u64,
    /// Repositories mounted.
    pub repos_mounted: usize,
    /// Live MCP streamable-HTTP sessions (at most 128).
    #[serde(default)]
    pub mcp_sessions: usize,
}

/// One repository in `GET /v1/status`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RepoStatus {
    /// Mount state (ready / indexing / stale, the watcher).
    pub mount: Freshness,
    /// Index state, counts, progress and warnings (absent while a first index runs).
    pub index: Option<StatusResponse>,
    /// Why `index` is absent.
    pub error: Option<ErrorDetail>,
}

/// `GET /v1/status`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ServerStatus {
    /// Version of this JSON shape.
    pub schema_version: u32,
    /// docdex version.
    pub version: String,
    /// `serve` or `daemon`.
    pub mode: Mode,
    /// Milliseconds since start.
    pub uptime_ms: u64,
    /// Mounted repositories (or just the one named by the request).
    pub repos: Vec<RepoStatus>,
}

/// `GET /v1/repos`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReposResponse {
    /// Every registered repository.
    pub repos: Vec<RepoRecord>,
    /// Ids of the repositories this process has mounted.
    pub mounted: Vec<String>,
}

/// `GET /v1/models`: `docdex` (the configured default) and the provider's models, in the
/// OpenAI list shape.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ModelList {
    /// Always `list`.
    pub object: String,
    /// The models.
    pub data: Vec<ModelEntry>,
}

/// One model in [`ModelList`].
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ModelEntry {
    /// The model name as requests use it (`llama3.2:1b`).
    pub id: String,
    /// Always `model`.
    pub object: String,
    /// Unknown for local models: 0.
    pub created: u64,
    /// The provider serving it (`ollama`, `openai`).
    pub owned_by: String,
    /// Size on disk in bytes, when the provider says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
}

fn resolve(state: &AppState, sel: Option<String>) -> Result<RepoRef, ApiError> {
    state.repo(sel.as_deref())
}

async fn healthz(State(state): State<AppState>) -> Json<Health> {
    Json(Health {
        status: "ok".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        mode: state.mode(),
        uptime_ms: state.uptime_ms(),
        repos_mounted: state.mounts().all().len(),
        mcp_sessions: state.mcp_sessions().load(std::sync::atomic::Ordering::Relaxed),
    })
}

async fn status(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<RepoQuery>,
) -> Result<Json<ServerStatus>, ApiError> {
    let sel = selector(&headers, None, q.repo.as_deref());
    let engine = state.engine().clone();
    let st = state.clone();
    let repos = blocking(move || {
        // A GET mounts nothing ([`AppState::repo_to_read`]): a repository it names that is not
        // mounted answers its index's state, its watcher `stopped` (no keeper runs for it).
        let views: Vec<(RepoRef, Freshness)> = match sel {
            Some(s) => {
                let repo = st.repo_to_read(Some(&s))?;
                match st.mounts().get(&repo.fingerprint) {
                    Some(m) => vec![(repo, m.info())],
                    None => vec![(repo.clone(), engine.freshness(&repo, FreshState::Stopped))],
                }
            }
            None => st.mounts().all().iter().map(|m| (m.repo.clone(), m.info())).collect(),
        };
        Ok(views
            .into_iter()
            .map(|(repo, mount)| {
                let (index, error) = match engine.status(&repo.root) {
                    Ok(s) => (Some(s), None),
                    Err(e) => (None, Some(ApiError::from(e).body().error)),
                };
                RepoStatus { mount, index, error }
            })
            .collect())
    })
    .await?;
    Ok(Json(ServerStatus {
        schema_version: SCHEMA_VERSION,
        version: env!("CARGO_PKG_VERSION").into(),
        mode: state.mode(),
        uptime_ms: state.uptime_ms(),
        repos,
    }))
}

async fn initialize(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<InitializeBody>,
) -> Result<Json<Freshness>, ApiError> {
    let mount = {
        let state = state.clone();
        blocking(move || state.initialize(&body.root_uri)).await?
    };
    // An unchanged repo's catch-up run takes a moment: answer `ready` rather than `stale` then.
    mount.settle(std::time::Duration::from_millis(750)).await;
    blocking(move || Ok(Json(mount.info()))).await
}

async fn search(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<RepoQuery>,
    ApiJson(body): ApiJson<SearchBody>,
) -> Result<Json<SearchResponse>, ApiError> {
    let sel = selector(&headers, body.repo.as_deref(), q.repo.as_deref());
    run_search(state, sel, body.search, true, "`query`").await
}

/// `GET /v1/search`: the same search as the `POST`, its fields in the query string.
async fn search_get(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<RepoQuery>,
    ApiQuery(search): ApiQuery<SearchQuery>,
) -> Result<Json<SearchResponse>, ApiError> {
    let sel = selector(&headers, None, q.repo.as_deref());
    run_search(state, sel, search.into(), false, "`q` (or `query`)").await
}

/// Both searches: `may_mount` is the POST's (a GET only reads), `field` names the query's field
/// in the empty-query error.
async fn run_search(
    state: AppState,
    sel: Option<String>,
    request: SearchRequest,
    may_mount: bool,
    field: &str,
) -> Result<Json<SearchResponse>, ApiError> {
    if request.query.trim().is_empty() {
        return Err(ApiError::bad_request(format!("empty query: pass words to search for in {field}")));
    }
    let engine = state.engine().clone();
    let gate = state.work().clone();
    gate.run(move || {
        let repo = if may_mount { resolve(&state, sel)? } else { state.repo_to_read(sel.as_deref())? };
        engine.search(&repo.root, &request).map(Json).map_err(|e| state.explain(&repo, e))
    })
    .await
}

async fn open(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<OpenQuery>,
    ApiQuery(mut req): ApiQuery<FileRequest>,
) -> Result<Json<FileContent>, ApiError> {
    let sel = selector(&headers, None, q.repo.as_deref());
    if let Some((a, b)) = q.lines.as_deref().map(parse_lines).transpose()? {
        (req.start_line, req.end_line) = (Some(a), Some(b));
    }
    let engine = state.engine().clone();
    let gate = state.work().clone();
    gate.run(move || {
        let repo = state.repo_to_read(sel.as_deref())?;
        engine.get_file(&repo.root, &req).map(Json).map_err(|e| state.explain(&repo, e))
    })
    .await
}

async fn repos(State(state): State<AppState>) -> Result<Json<ReposResponse>, ApiError> {
    let engine = state.engine().clone();
    let repos = state.work().run(move || Ok(engine.list_repos()?)).await?;
    let mounted = state.mounts().all().iter().map(|m| m.repo.fingerprint.clone()).collect();
    Ok(Json(ReposResponse { repos, mounted }))
}

async fn models(State(state): State<AppState>) -> Result<Json<ModelList>, ApiError> {
    let engine = state.engine().clone();
    state
        .work()
        .run(move || {
            let owner = engine.config().llm.provider.clone();
            let entry = |id: String, owned_by: String, size_bytes| ModelEntry {
                id,
                object: "model".into(),
                created: 0,
                owned_by,
                size_bytes,
            };
            // `docdex` first: the name chat takes for `[llm] default_model`, which a client
            // that picks its model from this list would otherwise never see.
            let installed = engine.models()?;
            let data = std::iter::once(entry("docdex".into(), "docdex".into(), None))
                .chain(installed.into_iter().map(|m| entry(m.name, owner.clone(), m.size_bytes)))
                .collect();
            Ok(Json(ModelList { object: "list".into(), data }))
        })
        .await
}

/// Adds the repository endpoints to `routes`, documented as they are registered.
pub fn routes(routes: Routes<AppState>) -> Routes<AppState> {
    routes
        .get(
            "/healthz",
            healthz,
            Operation::new("Liveness: the process answers"),
        )
        .get(
            "/v1/status",
            status,
            Operation::new("Index state and progress per mounted repository")
                .describe("All mounted repositories, or only the one named by `x-docdex-repo` / `?repo=`. No GET mounts a repository: one named here that the daemon has not mounted answers its index's state with `watcher: stopped` (`POST /v1/initialize`, or any POST naming it, mounts it)."),
        )
        .post(
            "/v1/initialize",
            initialize,
            Operation::new("Mount a repository and keep it fresh")
                .describe("Answers `ready`, `indexing` (no index yet; the first index runs in the background) or `stale` (searchable; a catch-up run is applying changes). `docdex serve` accepts only its own repository."),
        )
        .post(
            "/v1/search",
            search,
            Operation::new("Ranked search over a repository's index"),
        )
        .get(
            "/v1/search",
            search_get,
            Operation::new("Ranked search, its fields in the query string")
                .describe("`?q=session+expiry&limit=5`: the POST's fields as query parameters (`q` or `query`), for `curl` and a browser bar. Mounts no repository: a daemon reads an indexed one it has not mounted as it stands, with no watcher (the POST mounts it)."),
        )
        .get(
            "/v1/open",
            open,
            Operation::new("Lines of a file inside the repository (paths outside it are refused)"),
        )
        .get(
            "/v1/repos",
            repos,
            Operation::new("Registered repositories and which are mounted"),
        )
        .get(
            "/v1/models",
            models,
            Operation::new("Models of the configured LLM provider (OpenAI list shape)")
                .describe("503 `upstream_unavailable` when the provider cannot be reached."),
        )
}
