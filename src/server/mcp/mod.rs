//! MCP: one handler ([`DocdexMcp`]) behind three transports: stdio
//! (`docdex mcp`), streamable HTTP at `/v1/mcp`, and the legacy SSE pair
//! (`GET /sse` + `POST /v1/mcp/message?sessionId=`) that older clients use and
//! rmcp 3 has no server transport for ([`sse`] adapts it over the same handler).
//!
//! Each tool is a forward to one engine call. A tool names its repository with
//! `project_root` (or `repo_path`); without one it uses the repository the
//! session was bound to (`docdex serve`/`docdex mcp --repo`, or `rootUri` /
//! `workspace_root` in the `initialize` params). Repository problems (unknown,
//! not indexed, outside the served repo) are tool errors (`isError: true`)
//! whose text says what to do, so an agent can act on them.

pub mod jsonrpc;
pub mod service;
pub mod sessions;
pub mod sse;
pub mod stdio;
pub mod streams;
mod tools;
pub mod unstarted;

use super::error::ApiError;
use super::extract::{blocking, stalled_body};
use super::openapi::{Operation, Routes};
use super::state::AppState;
use crate::engine::protocol::RepoRef;
use axum::http::{header, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use jsonrpc::{Checked, Rejection};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestMethod, CompleteRequestParams,
    CompleteResult, ConstString, ContentBlock, CustomRequest, CustomResult, ErrorCode, GetPromptRequestMethod,
    GetPromptRequestParams, GetPromptResponse, Implementation, InitializeRequestParams, InitializeResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestMethod, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    SetLevelRequestMethod, SubscribeRequestMethod, SubscribeRequestParams, UnsubscribeRequestMethod,
    UnsubscribeRequestParams,
};
// Logging is deprecated by SEP-2577; `logging/setLevel` is still answered (not offered).
#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;
use std::sync::{Arc, Mutex};

/// Extra `initialize` params docdex understands (beyond the MCP schema, which rmcp drops):
/// the repository to bind and, on stdio, the auth token.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InitExtras {
    /// `rootUri` / `root_uri` / `workspace_root` / `project_root`.
    pub root: Option<String>,
    /// `auth_token`.
    pub auth_token: Option<String>,
}

impl InitExtras {
    /// Reads the extras of a raw JSON-RPC message when it is an `initialize` request.
    pub fn from_message(msg: &Value) -> Option<InitExtras> {
        if msg.get("method")?.as_str()? != "initialize" {
            return None;
        }
        let params = msg.get("params")?;
        let meta = params.get("_meta");
        let field = |names: &[&str]| -> Option<String> {
            names.iter().find_map(|n| {
                params.get(*n).or_else(|| meta.and_then(|m| m.get(*n))).and_then(Value::as_str).map(str::to_string)
            })
        };
        Some(InitExtras {
            root: field(&["rootUri", "root_uri", "workspace_root", "project_root", "repo_path"]),
            auth_token: field(&["auth_token", "authToken"]),
        })
    }
}

/// Where a transport leaves the extras of the `initialize` it saw, for the handler to take.
pub type InitSlot = Arc<Mutex<Option<InitExtras>>>;

/// The MCP server handler; one per session.
#[derive(Clone)]
pub struct DocdexMcp {
    app: AppState,
    bound: Arc<Mutex<Option<RepoRef>>>,
    init: InitSlot,
    token_in_initialize: bool,
}

impl DocdexMcp {
    /// A handler for one session. `token_in_initialize`: the transport has no HTTP header
    /// (stdio), so a configured token must come as `auth_token` in the initialize params.
    pub fn new(app: AppState, init: InitSlot, token_in_initialize: bool) -> DocdexMcp {
        DocdexMcp { app, bound: Arc::new(Mutex::new(None)), init, token_in_initialize }
    }

    /// The repository a tool call works on: its `project_root`/`repo_path`, else the
    /// session's bound repo, else the process default.
    fn repo_for(&self, named: Option<String>) -> Result<RepoRef, ApiError> {
        if named.is_none() {
            if let Some(r) = self.bound.lock().ok().and_then(|b| b.clone()) {
                return Ok(r);
            }
            if self.app.default_repo().is_none() {
                return Err(ApiError::bad_request(
                    "no repository: pass `project_root` (the repository's absolute path), or bind one with `rootUri` in initialize",
                ));
            }
        }
        match self.app.repo(named.as_deref()) {
            // The HTTP advice (`POST /v1/initialize`) is no call an MCP client can make: its
            // way to index a repository is the `docdex_index` tool.
            Err(e) if e.code == "not_indexed" && e.message.contains("/v1/initialize") => {
                let root = named.as_deref().and_then(|n| self.app.lookup(n).ok()).map(|r| r.root);
                let root = root.as_deref().map_or_else(|| "the repository".to_string(), |r| r.display().to_string());
                Err(ApiError::new(
                    e.status,
                    e.code,
                    format!(
                        "repository {root} is not indexed; call the `docdex_index` tool with `project_root` set to it (it returns once the index is built), then ask again"
                    ),
                ))
            }
            other => other,
        }
    }

    /// [`Self::repo_for`], taking a repository not indexed yet as it is, for the tools that
    /// need no index: `docdex_index` builds it, and `docdex_run_tests` runs the tests as
    /// `docdex run-tests` does (its `affected` says itself that it needs the index).
    fn repo_even_unindexed(&self, named: Option<String>) -> Result<RepoRef, ApiError> {
        match (self.repo_for(named.clone()), named) {
            (Err(e), Some(named)) if e.code == "not_indexed" => self.app.lookup(&named),
            (found, _) => found,
        }
    }

    fn take_extras(&self, context: &RequestContext<RoleServer>) -> InitExtras {
        if let Some(e) = self.init.lock().ok().and_then(|mut s| s.take()) {
            return e;
        }
        context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.extensions.get::<InitExtras>().cloned())
            .unwrap_or_default()
    }
}

/// A tool error an agent can read (`isError: true`, `code: message`).
pub fn tool_error(e: &ApiError) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(format!("{}: {}", e.code, e.message))])
}

impl ServerHandler for DocdexMcp {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("docdex", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "docdex searches a local code repository's index. Start with docdex_search (plain language or identifiers) \
                 or docdex_symbols (declarations by name), then docdex_open to read the lines a hit points at. docdex_ast_query \
                 finds code by syntax-tree node kinds. Before \
                 changing a file, docdex_impact lists what depends on it and docdex_impact_tests the tests that exercise it. docdex_memory_save keeps a fact for later \
                 sessions; docdex_memory_recall finds it again, docdex_memory_list lists them, docdex_memory_delete forgets a wrong one. docdex_get_profile recalls how the agent and the \
                 team want code written before you write it; docdex_save_preference teaches it a preference, docdex_set_role says what the agent does. Pass project_root (the repository's absolute path) \
                 unless the server is bound to one.",
            )
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        let extras = self.take_extras(&context);
        if self.token_in_initialize && !self.app.auth().accepts(extras.auth_token.as_deref()) {
            // Said apart, as HTTP says them: a client that sent a token needs another one.
            let why = match extras.auth_token {
                None => "unauthorized: this server requires `auth_token` in the initialize params (the value of DOCDEX_AUTH_TOKEN)",
                Some(_) => "unauthorized: the `auth_token` sent is not this server's; send the value of DOCDEX_AUTH_TOKEN it was started with",
            };
            return Err(McpError::invalid_request(why, None));
        }
        if let Some(root) = extras.root {
            let app = self.app.clone();
            let mount = blocking(move || app.initialize(&root))
                .await
                .map_err(|e| McpError::invalid_params(format!("{}: {}", e.code, e.message), None))?;
            if let Ok(mut b) = self.bound.lock() {
                *b = Some(mount.repo.clone());
            }
        } else if let Some(root) = self.app.session_root().map(|r| r.to_string_lossy().into_owned()) {
            // Started in a project without `--repo`: that project, as a `rootUri` would bind
            // it; a repository docdex cannot serve leaves the session unbound, not failed.
            let app = self.app.clone();
            match blocking(move || app.initialize(&root)).await {
                Ok(mount) => {
                    if let Ok(mut b) = self.bound.lock() {
                        *b = Some(mount.repo.clone());
                    }
                }
                Err(e) => tracing::info!("not binding the working directory's repository: {}", e.message),
            }
        }
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools::definitions()))
    }

    /// A method MCP does not define (rmcp's catch-all) is method not found (`-32601`) naming
    /// it and the methods there are, on every transport: rmcp's message was the method alone.
    /// An extension method whose params rmcp could not read lands here too, and says it is
    /// not offered ([`jsonrpc::method_not_found`]), as [`service::McpService`] does for it.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        tracing::info!(method = %request.method, "unknown MCP method");
        Err(McpError::new(ErrorCode::METHOD_NOT_FOUND, jsonrpc::method_not_found(&request.method), None))
    }

    /// `prompts/list` without the prompts capability: an empty list, not `-32601`. Clients such
    /// as Cline and opencode ask for prompts and resources on connect whatever the capabilities
    /// say and count method not found as a failed connection; no prompts is the true answer.
    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::default())
    }

    /// `resources/list`: an empty list, as [`Self::list_prompts`].
    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::default())
    }

    /// `resources/templates/list`: an empty list, as [`Self::list_prompts`].
    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::default())
    }

    /// `prompts/get`: there is no prompt to get ([`not_offered`]).
    async fn get_prompt(
        &self,
        _request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        Err(not_offered::<GetPromptRequestMethod>())
    }

    /// `resources/read`: there is no resource to read ([`not_offered`]).
    async fn read_resource(
        &self,
        _request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        Err(not_offered::<ReadResourceRequestMethod>())
    }

    /// `completion/complete`: nothing takes completions ([`not_offered`]).
    async fn complete(
        &self,
        _request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        Err(not_offered::<CompleteRequestMethod>())
    }

    /// `logging/setLevel`: no log messages go to the client ([`not_offered`]).
    #[allow(deprecated)]
    async fn set_level(
        &self,
        _request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        Err(not_offered::<SetLevelRequestMethod>())
    }

    /// `resources/subscribe` (legacy lifecycle): no resource to watch ([`not_offered`]).
    #[allow(deprecated)]
    async fn subscribe(
        &self,
        _request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        Err(not_offered::<SubscribeRequestMethod>())
    }

    /// `resources/unsubscribe` (legacy lifecycle): as [`Self::subscribe`].
    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        _request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        Err(not_offered::<UnsubscribeRequestMethod>())
    }

    /// A tool call stops when rmcp cancels its request (`notifications/cancelled`, the session
    /// ended or deleted, the client hung up on the POST: see [`CancelOnHangUp`]): the call's
    /// future is dropped, which trips its engine work's token ([`super::work`]).
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        let named =
            args.get("project_root").or_else(|| args.get("repo_path")).and_then(Value::as_str).map(str::to_string);
        tracing::info!(tool = %request.name, repo = named.as_deref().unwrap_or("(bound)"), "tool call");
        tokio::select! {
            result = tools::call(self, &request.name, args) => Ok(result?.into()),
            _ = context.ct.cancelled() => {
                tracing::info!(tool = %request.name, id = %context.id, "tool call cancelled; its engine work is stopped");
                Err(McpError::invalid_request(format!("cancelled: the request {} was cancelled", context.id), None))
            }
        }
    }
}

/// Method not found (`-32601`) for MCP method `M` of a capability docdex does not declare,
/// saying so and naming the methods there are ([`jsonrpc::not_offered`]); rmcp's message was
/// the method alone.
fn not_offered<M: ConstString>() -> McpError {
    tracing::info!(method = M::VALUE, "MCP method of a capability this server does not declare");
    McpError::new(ErrorCode::METHOD_NOT_FOUND, jsonrpc::not_offered(M::VALUE), None)
}

/// Adds the MCP transports to the routes: streamable HTTP at `/v1/mcp`, legacy SSE at
/// `/sse` + `/v1/mcp/message`.
pub fn routes(routes: Routes<AppState>, state: &AppState) -> Routes<AppState> {
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(state.shutdown_token().child_token())
        .with_max_request_body_bytes(state.body_limit());
    if state.exposed() {
        // Reached by other hosts' names; the bearer token guards every request instead.
        config = config.disable_allowed_hosts();
    }
    let app = state.clone();
    // `run` refused a setting out of range; the clamp keeps a state built elsewhere (tests)
    // within the stream places' arithmetic (`streams::MAX_STREAMS_PER_SESSION`).
    let cap = state.engine().config().server.max_mcp_sessions.clamp(1, sessions::MAX_SESSIONS);
    let bounded = Arc::new(sessions::BoundedSessions::new(cap, state.mcp_sessions().clone()));
    let service = StreamableHttpService::new(
        move || Ok(DocdexMcp::new(app.clone(), InitSlot::default(), false)),
        bounded.clone(),
        config,
    );
    let service = streamable_http(service, state.body_limit(), bounded);
    // Legacy SSE streams take the same setting: each also holds a connection, and a user who
    // lowers the cap for one transport means it for both.
    let sse_limits = sse::SseLimits { max_sessions: cap, ..sse::SseLimits::default() };
    let sessions = Arc::new(sse::SseSessions::with_limits(sse_limits));
    routes
        .route_many(
            &[Method::POST, Method::GET, Method::DELETE],
            "/v1/mcp",
            service,
            Operation::new("MCP over streamable HTTP")
                .describe("JSON-RPC MCP: POST messages, GET the server stream, DELETE the session. Tools: `tools/list` names them all (docs/SERVER.md describes each). `rootUri`/`workspace_root` in the initialize params binds the session to a repository."),
        )
        .route(
            Method::GET,
            "/sse",
            axum::routing::get(sse::connect).layer(axum::Extension(sessions.clone())),
            Operation::new("Legacy MCP SSE stream (protocol 2024-11-05)")
                .reads(&sse::connect)
                .describe("The first event (`endpoint`) names the URL to POST messages to; responses arrive as `message` events.")
                .event_stream::<Value>(),
        )
        .route(
            Method::POST,
            "/v1/mcp/message",
            axum::routing::post(sse::message).layer(axum::Extension(sessions)),
            Operation::new("Legacy MCP: a client message for an SSE session").reads(&sse::message).accepted(),
        )
}

/// Transport-level rejection (no session, wrong media type, body too large or stalled, wrong
/// HTTP method), as the MCP TypeScript SDK numbers it.
const TRANSPORT_ERROR: i64 = -32000;
/// The `Mcp-Session-Id` names no session this server has.
const SESSION_NOT_FOUND: i64 = -32001;
/// rmcp failed inside (a 5xx).
const INTERNAL_ERROR: i64 = -32603;

/// Wraps rmcp's streamable HTTP service, which answers what it cannot read outside the JSON-RPC
/// contract (a malformed body is `415` with a plain-text body; a missing or unknown session is
/// plain text too), so MCP clients always get a JSON-RPC error object:
///
/// - a POST's body is read here (within the body limit) and checked
///   ([`jsonrpc::check_message`]): not JSON is `400` with `-32700`, not one JSON-RPC message
///   `-32600`, a known method's unreadable params `-32602`, each with the request's id or
///   `null`; an `initialize` also has its docdex extras (`rootUri`, ...) put in the request's
///   extensions, where [`DocdexMcp::initialize`] finds them (rmcp's typed params drop unknown
///   fields);
/// - rmcp's plain-text rejections keep their status (MCP clients rely on `400` for a missing
///   session and `404` for an expired one) and get a JSON-RPC body saying what to do.
///
/// The token, `Origin` and `Host` checks are layers around the router, so they run first.
fn streamable_http<S>(
    service: S,
    limit: usize,
    sessions: Arc<sessions::BoundedSessions>,
) -> axum::routing::MethodRouter<AppState>
where
    S: tower_service::Service<axum::extract::Request, Error = std::convert::Infallible> + Clone + Send + Sync + 'static,
    S::Response: IntoResponse,
    S::Future: Send + 'static,
{
    let places = Arc::new(streams::StreamPlaces::default());
    let handler = move |req: axum::extract::Request| {
        let (service, places, sessions) = (service.clone(), places.clone(), sessions.clone());
        async move {
            let session =
                req.headers().get("mcp-session-id").map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
            match *req.method() {
                Method::GET => {
                    let slot = match places.take(session.as_deref()) {
                        Ok(slot) => slot,
                        Err(refusal) => return *refusal,
                    };
                    let response = forward(service, req).await;
                    match response.status().is_success() {
                        true => slot.held_by(response),
                        false => plain_text_as_json_rpc(response, Value::Null, session).await,
                    }
                }
                Method::POST => post(service, req, limit, session, &sessions).await,
                Method::DELETE => match session.as_deref().filter(|s| !sessions.holds(s)) {
                    // rmcp ends an unknown session without a word and answers it as ended.
                    Some(_) => {
                        plain_text_as_json_rpc(StatusCode::NOT_FOUND.into_response(), Value::Null, session).await
                    }
                    None => {
                        let response = session_ended(forward(service, req).await);
                        plain_text_as_json_rpc(response, Value::Null, session).await
                    }
                },
                _ => plain_text_as_json_rpc(forward(service, req).await, Value::Null, session).await,
            }
        }
    };
    axum::routing::any(handler)
}

/// Calls rmcp's service.
async fn forward<S>(mut service: S, req: axum::extract::Request) -> Response
where
    S: tower_service::Service<axum::extract::Request, Error = std::convert::Infallible>,
    S::Response: IntoResponse,
{
    match tower_service::Service::call(&mut service, req).await {
        Ok(resp) => resp.into_response(),
        Err(never) => match never {},
    }
}

/// A POST: its body read and checked (see [`streamable_http`]), then forwarded; a request's
/// answer stream cancels the request when its client hangs up before the answer
/// ([`streams::cancel_on_hang_up`]).
async fn post<S>(
    service: S,
    req: axum::extract::Request,
    limit: usize,
    session: Option<String>,
    sessions: &sessions::BoundedSessions,
) -> Response
where
    S: tower_service::Service<axum::extract::Request, Error = std::convert::Infallible> + Clone + Send + Sync + 'static,
    S::Response: IntoResponse,
    S::Future: Send + 'static,
{
    let (mut parts, body) = req.into_parts();
    let (message, bytes) = match read_message(&parts, body, limit).await {
        Ok(read) => read,
        Err(refusal) => return *refusal,
    };
    let mut id = Value::Null;
    if message.get("method").is_some() {
        id = message.get("id").cloned().unwrap_or(Value::Null);
    }
    // rmcp's dispatch answers these before any handler method, with the method alone; a
    // session it does not hold is still rmcp's to refuse (400 / 404).
    if let Some(refused) = session.as_deref().filter(|s| sessions.holds(s)).and(jsonrpc::not_offered_reply(&message)) {
        tracing::info!(method = ?message.get("method"), "MCP method of an extension this server does not declare");
        return rpc_error(StatusCode::OK, refused);
    }
    if let Some(extras) = InitExtras::from_message(&message) {
        parts.extensions.insert(extras);
    }
    let headers = parts.headers.clone();
    let uri = parts.uri.clone();
    let response =
        forward(service.clone(), axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes))).await;
    let is_request = !id.is_null() && message.get("method").and_then(Value::as_str) != Some("initialize");
    let streamed =
        response.headers().get(header::CONTENT_TYPE).is_some_and(|c| c.as_bytes().starts_with(b"text/event-stream"));
    if is_request && streamed && response.status().is_success() {
        let request_id = id.clone();
        return streams::cancel_on_hang_up(response, move || {
            tokio::spawn(send_cancelled(service, uri, headers, request_id));
        });
    }
    plain_text_as_json_rpc(response, id, session).await
}

/// The body of a POST as one checked JSON-RPC message, or the JSON-RPC error answering it.
async fn read_message(
    parts: &axum::http::request::Parts,
    body: axum::body::Body,
    limit: usize,
) -> Result<(Value, axum::body::Bytes), Box<Response>> {
    let content_type = parts.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
    let essence = content_type.map(|c| c.split(';').next().unwrap_or("").trim());
    if !essence.is_some_and(|e| e.eq_ignore_ascii_case("application/json")) {
        let got = content_type.map_or("no Content-Type".to_string(), |c| format!("{c:?}"));
        let why = format!("send the JSON-RPC message with `Content-Type: application/json` (got {got})");
        return Err(Box::new(rpc_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Rejection::new(Value::Null, TRANSPORT_ERROR, why),
        )));
    }
    let bytes = axum::body::to_bytes(body, limit).await.map_err(|e| {
        let (status, why) = match stalled_body(&e) {
            Some(stalled) => (StatusCode::REQUEST_TIMEOUT, stalled),
            None => (StatusCode::PAYLOAD_TOO_LARGE, ApiError::payload_too_large(limit).message),
        };
        Box::new(rpc_error(status, Rejection::new(Value::Null, TRANSPORT_ERROR, why)))
    })?;
    match jsonrpc::check_message(&bytes) {
        Checked::Empty => {
            let why = "parse error: the body is empty; POST one JSON-RPC message";
            Err(Box::new(rpc_error(StatusCode::BAD_REQUEST, Rejection::new(Value::Null, jsonrpc::PARSE_ERROR, why))))
        }
        Checked::Reply(rejection) => Err(Box::new(rpc_error(StatusCode::BAD_REQUEST, rejection))),
        Checked::Forward(v) => Ok((v, bytes)),
    }
}

/// Tells rmcp the client of request `id` is gone, as the client itself would
/// (`notifications/cancelled`, on the same session): rmcp cancels the request's token, and the
/// tool call stops ([`DocdexMcp::call_tool`]).
async fn send_cancelled<S>(service: S, uri: axum::http::Uri, mut headers: axum::http::HeaderMap, id: Value)
where
    S: tower_service::Service<axum::extract::Request, Error = std::convert::Infallible>,
    S::Response: IntoResponse,
{
    let note = serde_json::json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": id, "reason": "the client closed the connection before the answer"},
    });
    headers.remove(header::CONTENT_LENGTH);
    headers.remove(header::TRANSFER_ENCODING);
    let mut req = axum::extract::Request::new(axum::body::Body::from(note.to_string()));
    *req.method_mut() = Method::POST;
    *req.uri_mut() = uri;
    *req.headers_mut() = headers;
    let status = forward(service, req).await.status();
    tracing::info!(%id, %status, "MCP client hung up before the answer; request cancelled");
}

/// rmcp answers a DELETE that ended its session `202 Accepted`, which MCP clients take as a
/// failure (the Python SDK accepts only 200, 204 or 405, and logged "Session termination failed:
/// 202" on every close): the session is gone by then, so it is `200 OK`. A session this server
/// does not hold is `404` `-32001` before rmcp sees it (rmcp answered it as ended, so a client
/// could not tell a typo'd id from a closed session). Other statuses (400 no session) pass
/// untouched.
fn session_ended(mut response: Response) -> Response {
    if response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::OK;
    }
    response
}

/// A JSON-RPC error response with an HTTP status.
fn rpc_error(status: StatusCode, rejection: Rejection) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], rejection.to_bytes()).into_response()
}

/// rmcp's error responses that are not JSON (nor a stream) become JSON-RPC errors with the same
/// status and a message saying what to do; everything else passes untouched.
async fn plain_text_as_json_rpc(response: Response, id: Value, session: Option<String>) -> Response {
    let status = response.status();
    let typed = response.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|c| {
        let c = c.to_ascii_lowercase();
        c.starts_with("application/json") || c.starts_with("text/event-stream")
    });
    if typed || !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 64 * 1024)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    let (code, message) = if status == StatusCode::NOT_FOUND {
        let which = session.map_or(String::new(), |s| format!(" {s:?}"));
        (
            SESSION_NOT_FOUND,
            format!(
                "unknown MCP session{which}: it has ended or expired (or the server restarted); send `initialize` again, without the Mcp-Session-Id header, and use the session id it answers with"
            ),
        )
    } else if status == StatusCode::BAD_REQUEST && text.contains("Session ID is required") {
        (
            TRANSPORT_ERROR,
            "no MCP session: send an `initialize` request first (without the Mcp-Session-Id header), then send the `Mcp-Session-Id` header it answers with on every other request".to_string(),
        )
    } else if status == StatusCode::METHOD_NOT_ALLOWED {
        let allow = parts.headers.get(header::ALLOW).and_then(|v| v.to_str().ok()).unwrap_or("POST");
        (TRANSPORT_ERROR, format!("/v1/mcp does not answer this HTTP method; it answers {allow}"))
    } else if let Some(at) = text.find(sessions::SESSIONS_FULL_MARK) {
        // rmcp answers a refused session `500 Encounter an error when create session: ...`.
        let mut out =
            rpc_error(StatusCode::SERVICE_UNAVAILABLE, Rejection::new(id, TRANSPORT_ERROR, text[at..].to_string()));
        out.headers_mut().insert(header::RETRY_AFTER, axum::http::HeaderValue::from_static("60"));
        return out;
    } else if status.is_server_error() {
        (INTERNAL_ERROR, text)
    } else {
        (TRANSPORT_ERROR, text)
    };
    let mut out = rpc_error(status, Rejection::new(id, code, message));
    if let Some(allow) = parts.headers.get(header::ALLOW) {
        out.headers_mut().insert(header::ALLOW, allow.clone());
    }
    out
}
