//! The legacy MCP HTTP+SSE transport (protocol 2024-11-05), which rmcp 3 does
//! not serve: `GET /sse` opens an event stream whose first `endpoint` event
//! names `/v1/mcp/message?sessionId=...`; the client POSTs JSON-RPC messages
//! there (answered `202 Accepted`) and reads the responses as `message`
//! events. Each stream is one rmcp session over channels, with the same
//! [`DocdexMcp`] handler as the other transports. Closing the stream ends the
//! session; server shutdown closes every stream.
//!
//! Bounds: at most [`MAX_SSE_SESSIONS`] streams open at once (each holds a connection that
//! is never idle, so without a cap they could take every connection slot), and at most
//! [`MAX_BACKLOG`] requests per session whose answers the stream has not yet delivered, or
//! answers waiting in it. A `202` only queues a message: a client that posted requests
//! and never read the stream grew the process without bound (6,000 `tools/list` took it
//! from 90 MB to 790 MB), so past the backlog a request is refused `503` with `-32000`.

use super::{DocdexMcp, InitExtras, InitSlot};
use crate::server::error::ApiError;
use crate::server::extract::ApiQuery;
use crate::server::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::Extension;
use futures::channel::mpsc::{unbounded, UnboundedSender};
use futures::{Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// SSE sessions open at once.
pub const MAX_SSE_SESSIONS: usize = 128;

/// Requests one SSE session may have unanswered on its stream (and answers queued in it).
pub const MAX_BACKLOG: usize = 64;

/// Open SSE sessions by id.
#[derive(Default)]
pub struct SseSessions {
    map: Mutex<HashMap<String, Session>>,
}

struct Session {
    to_server: UnboundedSender<ClientJsonRpcMessage>,
    init: InitSlot,
    backlog: Arc<Backlog>,
}

/// What one session holds for a client that may not be reading its stream.
#[derive(Default)]
struct Backlog {
    /// Ids (as JSON text) of requests posted whose answer the stream has not delivered.
    unanswered: Mutex<HashSet<String>>,
    /// Messages rmcp has queued for the stream that it has not taken yet.
    queued: AtomicUsize,
}

impl Backlog {
    /// Counts a client message in: a request takes a place (false when none is left), a
    /// `notifications/cancelled` frees its request's (rmcp sends no answer for it).
    fn admit(&self, msg: &Value) -> bool {
        let Ok(mut unanswered) = self.unanswered.lock() else { return false };
        match (msg.get("method").and_then(Value::as_str), msg.get("id")) {
            (Some(_), Some(id)) => {
                let full = unanswered.len() >= MAX_BACKLOG || self.queued.load(Ordering::SeqCst) >= MAX_BACKLOG;
                if full && !unanswered.contains(&id.to_string()) {
                    return false;
                }
                unanswered.insert(id.to_string());
            }
            (Some("notifications/cancelled"), None) => {
                if let Some(id) = msg.pointer("/params/requestId") {
                    unanswered.remove(&id.to_string());
                }
            }
            _ => {}
        }
        true
    }

    /// Counts a server message out as the stream takes it; an answer frees its request's place.
    fn delivered(&self, msg: &Value) {
        let _ = self.queued.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| Some(n.saturating_sub(1)));
        if msg.get("method").is_none() {
            if let (Some(id), Ok(mut unanswered)) = (msg.get("id"), self.unanswered.lock()) {
                unanswered.remove(&id.to_string());
            }
        }
    }
}

impl SseSessions {
    fn insert(&self, id: String, s: Session) {
        if let Ok(mut m) = self.map.lock() {
            m.insert(id, s);
        }
    }

    fn remove(&self, id: &str) {
        if let Ok(mut m) = self.map.lock() {
            m.remove(id);
        }
    }

    fn get(&self, id: &str) -> Option<(UnboundedSender<ClientJsonRpcMessage>, InitSlot, Arc<Backlog>)> {
        self.map.lock().ok()?.get(id).map(|s| (s.to_server.clone(), s.init.clone(), s.backlog.clone()))
    }

    /// Open sessions.
    pub fn len(&self) -> usize {
        self.map.lock().map(|m| m.len()).unwrap_or(0)
    }

    /// True when no session is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// `?sessionId=` of `POST /v1/mcp/message`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SessionQuery {
    /// The id from the `endpoint` event of `GET /sse`.
    #[serde(rename = "sessionId")]
    pub session_id: String,
}

/// Removes the session when its event stream is dropped (client gone or shutdown).
struct SessionGuard {
    sessions: Arc<SseSessions>,
    id: String,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        self.sessions.remove(&self.id);
        tracing::debug!(session = %self.id, "SSE session closed");
    }
}

/// How long a client refused for a full session table or backlog is asked to wait.
const RETRY_AFTER_SECS: u64 = 5;

/// `GET /sse`: opens a session and streams its messages; `503 busy` when
/// [`MAX_SSE_SESSIONS`] are open.
pub async fn connect(
    State(state): State<AppState>,
    Extension(sessions): Extension<Arc<SseSessions>>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, axum::response::Response> {
    use axum::response::IntoResponse;
    if sessions.len() >= MAX_SSE_SESSIONS {
        let why = format!(
            "all {MAX_SSE_SESSIONS} MCP SSE sessions are open; close a GET /sse stream you no longer read, or use streamable HTTP at /v1/mcp"
        );
        let mut resp = ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "busy", why).into_response();
        resp.headers_mut().insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from(RETRY_AFTER_SECS));
        return Err(resp);
    }
    let id = uuid::Uuid::new_v4().simple().to_string();
    let (to_server, from_client) = unbounded::<ClientJsonRpcMessage>();
    let (to_client, from_server) = unbounded::<ServerJsonRpcMessage>();
    let backlog = Arc::new(Backlog::default());
    let to_client = {
        let backlog = backlog.clone();
        futures::SinkExt::with(to_client, move |m: ServerJsonRpcMessage| {
            backlog.queued.fetch_add(1, Ordering::SeqCst);
            futures::future::ready(Ok::<_, futures::channel::mpsc::SendError>(m))
        })
    };
    let init = InitSlot::default();
    sessions.insert(id.clone(), Session { to_server, init: init.clone(), backlog: backlog.clone() });
    let handler = DocdexMcp::new(state.clone(), init, false);
    let shutdown = state.shutdown_token().clone();
    {
        let (shutdown, id) = (shutdown.clone(), id.clone());
        tokio::spawn(async move {
            match rmcp::serve_server(handler, (to_client, from_client)).await {
                Ok(running) => {
                    let ct = running.cancellation_token();
                    tokio::select! {
                        _ = running.waiting() => {}
                        _ = shutdown.cancelled() => ct.cancel(),
                    }
                }
                Err(e) => tracing::debug!(session = %id, "SSE session ended before initialize: {e}"),
            }
        });
    }
    let guard = SessionGuard { sessions, id: id.clone() };
    let endpoint = Event::default().event("endpoint").data(format!("/v1/mcp/message?sessionId={id}"));
    let messages = from_server.map(move |m| {
        let value = serde_json::to_value(&m).unwrap_or_default();
        backlog.delivered(&value);
        Event::default().event("message").data(value.to_string())
    });
    let stream = futures::stream::once(async move { endpoint })
        .chain(messages)
        .take_until(shutdown.cancelled_owned())
        .map(move |e| {
            let _alive = &guard;
            Ok(e)
        });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// The body of `POST /v1/mcp/message`: one JSON-RPC message, checked as `/v1/mcp` checks it
/// ([`super::jsonrpc::check_message`]). Every failure is a JSON-RPC error object (as on
/// `/v1/mcp`), not the HTTP error contract: not JSON `400` `-32700`, not one message `-32600`,
/// a known method's unreadable params `-32602`; a body of another media type, too large or
/// stalled `415` / `413` / `408` with `-32000`.
#[derive(Debug)]
pub struct RpcBody(pub Value);

impl<S: Send + Sync> axum::extract::FromRequest<S> for RpcBody {
    type Rejection = axum::response::Response;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, Self::Rejection> {
        use super::jsonrpc::{Checked, Rejection};
        use super::{rpc_error, TRANSPORT_ERROR};
        let transport = |status, why: String| rpc_error(status, Rejection::new(Value::Null, TRANSPORT_ERROR, why));
        let content_type = req.headers().get(axum::http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
        if !content_type.is_some_and(crate::server::extract::is_json_media_type) {
            let got = content_type.map_or("no Content-Type".to_string(), |c| format!("{c:?}"));
            let why = format!("send the JSON-RPC message with `Content-Type: application/json` (got {got})");
            return Err(transport(StatusCode::UNSUPPORTED_MEDIA_TYPE, why));
        }
        let limit = req.extensions().get::<crate::server::extract::BodyLimit>().map(|l| l.0).unwrap_or(0);
        let bytes = axum::body::Bytes::from_request(req, state).await.map_err(|rejection| {
            match crate::server::extract::stalled_body(&rejection) {
                Some(stalled) => transport(StatusCode::REQUEST_TIMEOUT, stalled),
                None if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                    transport(StatusCode::PAYLOAD_TOO_LARGE, ApiError::payload_too_large(limit).message)
                }
                None => {
                    transport(StatusCode::BAD_REQUEST, format!("could not read the body: {}", rejection.body_text()))
                }
            }
        })?;
        match super::jsonrpc::check_message(&bytes) {
            Checked::Forward(v) => Ok(RpcBody(v)),
            Checked::Reply(rejection) => Err(rpc_error(StatusCode::BAD_REQUEST, rejection)),
            Checked::Empty => Err(rpc_error(
                StatusCode::BAD_REQUEST,
                Rejection::new(
                    Value::Null,
                    super::jsonrpc::PARSE_ERROR,
                    "parse error: the body is empty; POST one JSON-RPC message",
                ),
            )),
        }
    }
}

/// `POST /v1/mcp/message?sessionId=`: hands one client message to its session; a request
/// past the session's [`MAX_BACKLOG`] is `503` with JSON-RPC `-32000` and `Retry-After`.
pub async fn message(
    Extension(sessions): Extension<Arc<SseSessions>>,
    ApiQuery(q): ApiQuery<SessionQuery>,
    RpcBody(body): RpcBody,
) -> Result<StatusCode, axum::response::Response> {
    use axum::response::IntoResponse;
    let (tx, init, backlog) = sessions.get(&q.session_id).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_session",
            format!("no open SSE session {}; open one with GET /sse", q.session_id),
        )
        .into_response()
    })?;
    if !backlog.admit(&body) {
        let why = format!(
            "SSE session {} has {MAX_BACKLOG} requests whose answers its event stream has not delivered; read the GET /sse stream's `message` events, then send more",
            q.session_id
        );
        let id = body.get("id").cloned().unwrap_or(Value::Null);
        let rejection = super::jsonrpc::Rejection::new(id, super::TRANSPORT_ERROR, why);
        let mut resp = super::rpc_error(StatusCode::SERVICE_UNAVAILABLE, rejection);
        resp.headers_mut().insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from(RETRY_AFTER_SECS));
        return Err(resp);
    }
    if let Some(extras) = InitExtras::from_message(&body) {
        if let Ok(mut slot) = init.lock() {
            *slot = Some(extras);
        }
    }
    let msg: ClientJsonRpcMessage = serde_json::from_value(body)
        .map_err(|e| ApiError::bad_request(format!("not a JSON-RPC message: {e}")).into_response())?;
    tx.unbounded_send(msg).map_err(|_| {
        ApiError::new(StatusCode::GONE, "session_closed", format!("SSE session {} has closed", q.session_id))
            .into_response()
    })?;
    Ok(StatusCode::ACCEPTED)
}
