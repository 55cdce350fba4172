//! The legacy MCP HTTP+SSE transport (protocol 2024-11-05), which rmcp 3 does
//! not serve: `GET /sse` opens an event stream whose first `endpoint` event
//! names `/v1/mcp/message?sessionId=...`; the client POSTs JSON-RPC messages
//! there (answered `202 Accepted`) and reads the responses as `message`
//! events. Each stream is one rmcp session over channels, with the same
//! [`DocdexMcp`] handler as the other transports. Closing the stream ends the
//! session; server shutdown closes every stream.

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
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

/// Open SSE sessions by id.
#[derive(Default)]
pub struct SseSessions {
    map: Mutex<HashMap<String, Session>>,
}

struct Session {
    to_server: UnboundedSender<ClientJsonRpcMessage>,
    init: InitSlot,
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

    fn get(&self, id: &str) -> Option<(UnboundedSender<ClientJsonRpcMessage>, InitSlot)> {
        self.map.lock().ok()?.get(id).map(|s| (s.to_server.clone(), s.init.clone()))
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

/// `GET /sse`: opens a session and streams its messages.
pub async fn connect(
    State(state): State<AppState>,
    Extension(sessions): Extension<Arc<SseSessions>>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let id = uuid::Uuid::new_v4().simple().to_string();
    let (to_server, from_client) = unbounded::<ClientJsonRpcMessage>();
    let (to_client, from_server) = unbounded::<ServerJsonRpcMessage>();
    let init = InitSlot::default();
    sessions.insert(id.clone(), Session { to_server, init: init.clone() });
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
    let messages = from_server.map(|m| {
        let data = serde_json::to_string(&m).unwrap_or_default();
        Event::default().event("message").data(data)
    });
    let stream = futures::stream::once(async move { endpoint })
        .chain(messages)
        .take_until(shutdown.cancelled_owned())
        .map(move |e| {
            let _alive = &guard;
            Ok(e)
        });
    Sse::new(stream).keep_alive(KeepAlive::default())
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

/// `POST /v1/mcp/message?sessionId=`: hands one client message to its session.
pub async fn message(
    Extension(sessions): Extension<Arc<SseSessions>>,
    ApiQuery(q): ApiQuery<SessionQuery>,
    RpcBody(body): RpcBody,
) -> Result<StatusCode, ApiError> {
    let (tx, init) = sessions.get(&q.session_id).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_session",
            format!("no open SSE session {}; open one with GET /sse", q.session_id),
        )
    })?;
    if let Some(extras) = InitExtras::from_message(&body) {
        if let Ok(mut slot) = init.lock() {
            *slot = Some(extras);
        }
    }
    let msg: ClientJsonRpcMessage =
        serde_json::from_value(body).map_err(|e| ApiError::bad_request(format!("not a JSON-RPC message: {e}")))?;
    tx.unbounded_send(msg).map_err(|_| {
        ApiError::new(StatusCode::GONE, "session_closed", format!("SSE session {} has closed", q.session_id))
    })?;
    Ok(StatusCode::ACCEPTED)
}
