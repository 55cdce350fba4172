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

pub mod sse;
pub mod stdio;
mod tools;

use super::error::ApiError;
use super::extract::blocking;
use super::openapi::{Operation, Routes};
use super::state::AppState;
use crate::engine::protocol::RepoRef;
use axum::http::Method;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, InitializeRequestParams,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
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
        self.app.repo(named.as_deref())
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
                 or docdex_symbols (declarations by name), then docdex_open to read the lines a hit points at. Before \
                 changing a file, docdex_impact lists what depends on it. docdex_memory_save keeps a fact for later \
                 sessions; docdex_memory_recall finds it again. docdex_get_profile recalls how the agent and the \
                 team want code written before you write it; docdex_save_preference teaches it a preference. Pass project_root (the repository's absolute path) \
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
            return Err(McpError::invalid_request(
                "unauthorized: this server requires `auth_token` in the initialize params (the value of DOCDEX_AUTH_TOKEN)",
                None,
            ));
        }
        if let Some(root) = extras.root {
            let app = self.app.clone();
            let mount = blocking(move || app.initialize(&root))
                .await
                .map_err(|e| McpError::invalid_params(format!("{}: {}", e.code, e.message), None))?;
            if let Ok(mut b) = self.bound.lock() {
                *b = Some(mount.repo.clone());
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

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        let named =
            args.get("project_root").or_else(|| args.get("repo_path")).and_then(Value::as_str).map(str::to_string);
        tracing::info!(tool = %request.name, repo = named.as_deref().unwrap_or("(bound)"), "tool call");
        let result = tools::call(self, &request.name, args).await?;
        Ok(result.into())
    }
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
    let service = StreamableHttpService::new(
        move || Ok(DocdexMcp::new(app.clone(), InitSlot::default(), false)),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let service = tower_service_with_init_extras(service, state.body_limit());
    let sessions = Arc::new(sse::SseSessions::default());
    routes
        .route_many(
            &[Method::POST, Method::GET, Method::DELETE],
            "/v1/mcp",
            service,
            Operation::new("MCP over streamable HTTP")
                .describe("JSON-RPC MCP: POST messages, GET the server stream, DELETE the session. Tools: docdex_search, docdex_open, docdex_status, docdex_symbols, docdex_impact, docdex_memory_save, docdex_memory_recall, docdex_get_profile, docdex_save_preference, docdex_web_research. `rootUri`/`workspace_root` in the initialize params binds the session to a repository."),
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

/// Wraps the streamable HTTP service so `initialize` POSTs have their docdex extras
/// (`rootUri`, ...) read from the raw body and put in the request's extensions, where
/// [`DocdexMcp::initialize`] finds them (rmcp's typed params drop unknown fields).
fn tower_service_with_init_extras<S>(service: S, limit: usize) -> axum::routing::MethodRouter<AppState>
where
    S: tower_service::Service<axum::extract::Request, Error = std::convert::Infallible> + Clone + Send + Sync + 'static,
    S::Response: axum::response::IntoResponse,
    S::Future: Send + 'static,
{
    use axum::response::IntoResponse;
    let handler = move |req: axum::extract::Request| {
        let mut service = service.clone();
        async move {
            let req = if req.method() == Method::POST {
                let (mut parts, body) = req.into_parts();
                let bytes = match axum::body::to_bytes(body, limit).await {
                    Ok(b) => b,
                    Err(_) => return ApiError::payload_too_large(limit).into_response(),
                };
                if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
                    if let Some(extras) = InitExtras::from_message(&v) {
                        parts.extensions.insert(extras);
                    }
                }
                axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes))
            } else {
                req
            };
            match tower_service::Service::call(&mut service, req).await {
                Ok(resp) => resp.into_response(),
                Err(never) => match never {},
            }
        }
    };
    axum::routing::any(handler)
}
