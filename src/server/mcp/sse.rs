//! The legacy MCP HTTP+SSE transport (protocol 2024-11-05), which rmcp 3 does
//! not serve: `GET /sse` opens an event stream whose first `endpoint` event
//! names `/v1/mcp/message?sessionId=...`; the client POSTs JSON-RPC messages
//! there (answered `202 Accepted`) and reads the responses as `message`
//! events. Each stream is one rmcp session over channels, with the same
//! [`DocdexMcp`] handler as the other transports. Closing the stream ends the
//! session; server shutdown closes every stream.

use super::{DocdexMcp, InitExtras, InitSlot};
use crate::server::error::ApiError;
use crate::server::extract::{ApiJson, ApiQuery};
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

/// `POST /v1/mcp/message?sessionId=`: hands one client message to its session.
pub async fn message(
    Extension(sessions): Extension<Arc<SseSessions>>,
    ApiQuery(q): ApiQuery<SessionQuery>,
    ApiJson(body): ApiJson<Value>,
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
