//! The HTTP API: one handler per endpoint, each a few lines over one `Engine`
//! call run on the blocking pool (engine calls are synchronous and touch
//! disk). The router is built through [`Routes`], so the OpenAPI document at
//! `/v1/openapi.json` lists exactly what is served.
//!
//! A request names its repository with the `x-docdex-repo` header, a `repo`
//! body field or a `?repo=` query (in that order of precedence); `docdex serve`
//! defaults to its repo.

use super::error::{ApiError, ApiJson, ApiQuery, BodyLimit, ErrorDetail};
use super::mounts::MountInfo;
use super::openapi::{self, Operation, Routes};
use super::{auth, mcp, AppState, Mode};
use crate::engine::protocol::{FileContent, SearchRequest, SearchResponse, StatusResponse, SCHEMA_VERSION};
use crate::engine::repos::{RepoRecord, RepoRef};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::routing::{get, post};
use axum::{middleware, Extension, Json, Router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::{Arc, OnceLock};

/// Header naming the repository of a request.
pub const REPO_HEADER: &str = "x-docdex-repo";

/// `?repo=`: the repository, when not given by header.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct RepoQuery {
    /// The repository: absolute path, file:// URI or repo id (defaults to the served repo).
    #[serde(default)]
    pub repo: Option<String>,
}

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

/// `GET /v1/open` query.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct OpenQuery {
    /// Repo-relative path of the file.
    pub path: String,
    /// Line range `A-B` (or one line `A`); the whole file when absent.
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
}

/// One repository in `GET /v1/status`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RepoStatus {
    /// Mount state (ready / indexing / stale, the watcher).
    pub mount: MountInfo,
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

/// `GET /v1/models`: the provider's models in the OpenAI list shape.
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

/// The selector a request carries: header first, then body, then query.
pub fn selector(headers: &HeaderMap, body: Option<&str>, query: Option<&str>) -> Option<String> {
    headers.get(REPO_HEADER).and_then(|v| v.to_str().ok()).or(body).or(query).map(str::to_string)
}

/// Runs an engine call on the blocking pool.
pub async fn blocking<T, F>(f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ApiError> + Send + 'static,
{
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", format!("request worker failed: {e}"))
    })?
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
        let mounts = match sel {
            Some(s) => {
                let repo = resolve(&st, Some(s))?;
                st.mounts().get(&repo.fingerprint).into_iter().collect()
            }
            None => st.mounts().all(),
        };
        Ok(mounts
            .iter()
            .map(|m| {
                let (index, error) = match engine.status(&m.repo.root) {
                    Ok(s) => (Some(s), None),
                    Err(e) => (None, Some(ApiError::from(e).body().error)),
                };
                RepoStatus { mount: m.info(), index, error }
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
) -> Result<Json<MountInfo>, ApiError> {
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
    if body.search.query.trim().is_empty() {
        return Err(ApiError::bad_request("empty query: pass words to search for in `query`"));
    }
    let engine = state.engine().clone();
    blocking(move || {
        let repo = resolve(&state, sel)?;
        engine.search(&repo.root, &body.search).map(Json).map_err(|e| state.explain(&repo, e))
    })
    .await
}

async fn open(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<OpenQuery>,
) -> Result<Json<FileContent>, ApiError> {
    let sel = selector(&headers, None, q.repo.as_deref());
    let lines = q.lines.as_deref().map(parse_lines).transpose()?;
    let engine = state.engine().clone();
    blocking(move || {
        let repo = resolve(&state, sel)?;
        engine.get_file(&repo.root, &q.path, lines).map(Json).map_err(|e| state.explain(&repo, e))
    })
    .await
}

async fn repos(State(state): State<AppState>) -> Result<Json<ReposResponse>, ApiError> {
    let engine = state.engine().clone();
    let repos = blocking(move || Ok(engine.list_repos()?)).await?;
    let mounted = state.mounts().all().iter().map(|m| m.repo.fingerprint.clone()).collect();
    Ok(Json(ReposResponse { repos, mounted }))
}

async fn models(State(state): State<AppState>) -> Result<Json<ModelList>, ApiError> {
    let engine = state.engine().clone();
    blocking(move || {
        let owner = engine.config().llm.provider.clone();
        let data = engine
            .models()?
            .into_iter()
            .map(|m| ModelEntry {
                id: m.name,
                object: "model".into(),
                created: 0,
                owned_by: owner.clone(),
                size_bytes: m.size_bytes,
            })
            .collect();
        Ok(Json(ModelList { object: "list".into(), data }))
    })
    .await
}

/// Parses `A-B` or `A` into an inclusive line range.
pub fn parse_lines(s: &str) -> Result<(u32, u32), ApiError> {
    let bad = || ApiError::bad_request(format!("bad lines {s:?}: use A-B, e.g. 10-40, or a single line"));
    match s.split_once('-') {
        Some((a, b)) => Ok((a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?)),
        None => {
            let a = s.trim().parse().map_err(|_| bad())?;
            Ok((a, a))
        }
    }
}

/// True for `Host` values naming this machine's loopback (`localhost`, `127.x.y.z`, `[::1]`),
/// with or without a port.
pub fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host
            .rsplit_once(':')
            .map_or(host, |(h, port)| if port.chars().all(|c| c.is_ascii_digit()) { h } else { host }),
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Refuses requests whose `Host` is not loopback when the server is not exposed: a web page
/// cannot reach a local docdex through DNS rebinding.
async fn loopback_host_only(
    State(exposed): State<bool>,
    req: axum::extract::Request,
    next: middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let host = req.headers().get(axum::http::header::HOST).and_then(|h| h.to_str().ok());
    match host {
        Some(h) if !exposed && !is_loopback_host(h) => ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden_host",
            format!("Host {h:?} is not this machine's loopback; docdex serves local clients only (use --expose with a token for others)"),
        )
        .into_response(),
        _ => next.run(req).await,
    }
}

async fn no_route(method: Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        format!("no endpoint {method} {}; GET /v1/openapi.json lists them", uri.path()),
    )
}

async fn wrong_method(method: Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("{} does not answer {method}; GET /v1/openapi.json lists the methods", uri.path()),
    )
}

/// The HTTP endpoints (without MCP), documented as they are registered.
pub fn api_routes(doc: Arc<OnceLock<Value>>) -> Routes<AppState> {
    Routes::default()
        .route(
            Method::GET,
            "/healthz",
            get(healthz),
            Operation::new("Liveness: the process answers").response::<Health>(),
        )
        .route(
            Method::GET,
            "/v1/status",
            get(status),
            Operation::new("Index state and progress per mounted repository")
                .describe("All mounted repositories, or only the one named by `x-docdex-repo` / `?repo=`.")
                .query::<RepoQuery>()
                .response::<ServerStatus>(),
        )
        .route(
            Method::POST,
            "/v1/initialize",
            post(initialize),
            Operation::new("Mount a repository and keep it fresh")
                .describe("Answers `ready`, `indexing` (no index yet; the first index runs in the background) or `stale` (searchable; a catch-up run is applying changes). `docdex serve` accepts only its own repository.")
                .body::<InitializeBody>()
                .response::<MountInfo>(),
        )
        .route(
            Method::POST,
            "/v1/search",
            post(search),
            Operation::new("Ranked search over a repository's index")
                .query::<RepoQuery>()
                .body::<SearchBody>()
                .response::<SearchResponse>(),
        )
        .route(
            Method::GET,
            "/v1/open",
            get(open),
            Operation::new("Lines of a file inside the repository (paths outside it are refused)")
                .query::<OpenQuery>()
                .response::<FileContent>(),
        )
        .route(
            Method::GET,
            "/v1/repos",
            get(repos),
            Operation::new("Registered repositories and which are mounted").response::<ReposResponse>(),
        )
        .route(
            Method::GET,
            "/v1/models",
            get(models),
            Operation::new("Models of the configured LLM provider (OpenAI list shape)")
                .describe("503 `upstream_unavailable` when the provider cannot be reached.")
                .response::<ModelList>(),
        )
        .route(
            Method::GET,
            "/v1/openapi.json",
            get(move || {
                let doc = doc.clone();
                async move { Json(doc.get().cloned().unwrap_or(Value::Null)) }
            }),
            Operation::new("This document"),
        )
}

/// The whole application: HTTP endpoints, MCP transports (when enabled), the error
/// contract for unknown routes and methods, body limits and the token check.
pub fn app(state: AppState, with_mcp: bool) -> (Router, Vec<Operation>) {
    let doc = Arc::new(OnceLock::new());
    let mut routes = super::chat::routes(super::intel::routes(api_routes(doc.clone())));
    if with_mcp {
        routes = mcp::routes(routes, &state);
    }
    let (router, ops) = routes.finish();
    let _ = doc.set(openapi::document(&ops));
    let limit = state.body_limit();
    let router = router
        .fallback(no_route)
        .method_not_allowed_fallback(wrong_method)
        .layer(Extension(BodyLimit(limit)))
        .layer(DefaultBodyLimit::max(limit))
        .layer(middleware::from_fn_with_state(state.auth().clone(), auth::require_token))
        .layer(middleware::from_fn_with_state(state.exposed(), loopback_host_only))
        .with_state(state);
    (router, ops)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for h in ["localhost", "localhost:3210", "127.0.0.1", "127.0.0.1:80", "[::1]:3210", "[::1]", "LOCALHOST:1"] {
            assert!(is_loopback_host(h), "{h}");
        }
        for h in
            ["evil.example", "evil.example:3210", "10.0.0.1:3210", "localhost.evil.example", "[::2]:1", "0.0.0.0:3210"]
        {
            assert!(!is_loopback_host(h), "{h}");
        }
    }

    #[test]
    fn line_ranges_parse() {
        assert_eq!(parse_lines("3-9").unwrap(), (3, 9));
        assert_eq!(parse_lines(" 4 ").unwrap(), (4, 4));
        assert_eq!(parse_lines("a-b").unwrap_err().code, "bad_request");
    }
}
