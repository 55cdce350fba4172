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
//!
//! A stream whose client went away without closing its connection (a stopped or hung
//! process, a machine asleep) stays open: the keep-alive comments it is sent never fail on
//! loopback. Such streams held their places forever (128 opened by a stopped client refused
//! every other SSE client until it was killed), so a session is also closed when its client
//! sends no `initialize` within [`SSE_INIT_TIMEOUT`] or no message for [`SSE_IDLE_TIMEOUT`],
//! and at the cap the session idle the longest among those that never sent a request is
//! closed for the new one (as [`super::sessions`] does for streamable HTTP); only when every
//! session has sent requests is a new stream refused.

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
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// SSE sessions open at once by default; `[server] max_mcp_sessions` sets it (1 to 128).
pub const MAX_SSE_SESSIONS: usize = 128;

/// How long a new stream's client has to POST `initialize` (rmcp's own limit for a
/// streamable-HTTP session; a real client sends it as soon as it reads the `endpoint` event).
pub const SSE_INIT_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a session may go without a message from its client before its stream is closed.
/// Longer than rmcp's 5 minutes for streamable HTTP: a legacy client cannot resume a closed
/// stream (it must reconnect and initialize again), and an agent may sit idle between tasks.
pub const SSE_IDLE_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// The bounds of [`SseSessions`]: the constants above, smaller in tests.
#[derive(Debug, Clone, Copy)]
pub struct SseLimits {
    /// Streams open at once.
    pub max_sessions: usize,
    /// Time from opening the stream to the client's `initialize`.
    pub init_timeout: Duration,
    /// Time without a message from the client.
    pub idle_timeout: Duration,
}

impl Default for SseLimits {
    fn default() -> Self {
        SseLimits { max_sessions: MAX_SSE_SESSIONS, init_timeout: SSE_INIT_TIMEOUT, idle_timeout: SSE_IDLE_TIMEOUT }
    }
}

/// Requests one SSE session may have unanswered on its stream (and answers queued in it).
pub const MAX_BACKLOG: usize = 64;

/// Open SSE sessions by id.
#[derive(Default)]
pub struct SseSessions {
    map: Mutex<HashMap<String, Session>>,
    limits: SseLimits,
}

struct Session {
    to_server: UnboundedSender<ClientJsonRpcMessage>,
    init: InitSlot,
    backlog: Arc<Backlog>,
    usage: Usage,
    /// Cancelled to close the stream and end the rmcp session (idle, evicted, shutdown).
    close: CancellationToken,
}

/// What a session's client has done, for its timeouts and for choosing one to close.
#[derive(Debug, Clone, Copy)]
struct Usage {
    opened: Instant,
    /// The client's last message (the stream's opening until it sends one).
    last: Instant,
    /// It has POSTed `initialize`.
    initialized: bool,
    /// It has POSTed a request other than `initialize`.
    used: bool,
}

impl Usage {
    fn new(now: Instant) -> Usage {
        Usage { opened: now, last: now, initialized: false, used: false }
    }

    /// When the session is to be closed if its client sends nothing more, and why.
    fn deadline(&self, limits: &SseLimits) -> (Instant, Expired) {
        if self.initialized {
            (self.last + limits.idle_timeout, Expired::Idle(limits.idle_timeout))
        } else {
            (self.opened + limits.init_timeout, Expired::NoInitialize(limits.init_timeout))
        }
    }
}

/// Why a session's watch ended.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expired {
    /// No `initialize` within the init timeout.
    NoInitialize(Duration),
    /// No message within the idle timeout.
    Idle(Duration),
    /// The session is no longer open (stream closed or evicted).
    Gone,
}

/// The stream refused: every place is held by a session that has sent requests.
#[derive(Debug)]
struct Full;

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
    /// Sessions with these bounds instead of the constants'.
    pub fn with_limits(limits: SseLimits) -> SseSessions {
        SseSessions { map: Mutex::default(), limits }
    }

    /// The table (a poisoned lock still holds a consistent one: each change is one insert,
    /// remove or field update).
    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a session; at the cap, first closes the one idle the longest among those that never
    /// sent a request (its id is returned), or refuses when every session has.
    fn admit(&self, id: String, s: Session) -> Result<Option<String>, Full> {
        let mut map = self.table();
        let mut evicted = None;
        if map.len() >= self.limits.max_sessions {
            let victim = map.iter().filter(|(_, s)| !s.usage.used).min_by_key(|(_, s)| s.usage.last);
            let victim = victim.map(|(id, _)| id.clone()).ok_or(Full)?;
            if let Some(old) = map.remove(&victim) {
                old.close.cancel();
            }
            evicted = Some(victim);
        }
        map.insert(id, s);
        Ok(evicted)
    }

    fn remove(&self, id: &str) {
        self.table().remove(id);
    }

    /// Records a message from the session's client.
    fn touch(&self, id: &str, msg: &Value) {
        if let Some(s) = self.table().get_mut(id) {
            s.usage.last = Instant::now();
            match (msg.get("method").and_then(Value::as_str), msg.get("id")) {
                (Some("initialize"), _) => s.usage.initialized = true,
                (Some(_), Some(_)) => s.usage.used = true,
                _ => {}
            }
        }
    }

    /// Resolves when session `id` is to be closed for its client's silence, or is gone.
    async fn expiry(&self, id: &str) -> Expired {
        loop {
            let Some((deadline, why)) = self.table().get(id).map(|s| s.usage.deadline(&self.limits)) else {
                return Expired::Gone;
            };
            if Instant::now() >= deadline {
                return why;
            }
            tokio::time::sleep_until(deadline.into()).await;
        }
    }

    fn get(&self, id: &str) -> Option<(UnboundedSender<ClientJsonRpcMessage>, InitSlot, Arc<Backlog>)> {
        self.table().get(id).map(|s| (s.to_server.clone(), s.init.clone(), s.backlog.clone()))
    }

    /// Open sessions.
    pub fn len(&self) -> usize {
        self.table().len()
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

/// `GET /sse`: opens a session and streams its messages. At the cap (`[server] max_mcp_sessions`) the session
/// idle the longest among those that never sent a request is closed for it; when every session
/// has sent requests, `503 busy`.
pub async fn connect(
    State(state): State<AppState>,
    Extension(sessions): Extension<Arc<SseSessions>>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, axum::response::Response> {
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
    let close = state.shutdown_token().child_token();
    let session = Session {
        to_server,
        init: init.clone(),
        backlog: backlog.clone(),
        usage: Usage::new(Instant::now()),
        close: close.clone(),
    };
    match sessions.admit(id.clone(), session) {
        Ok(Some(evicted)) => tracing::info!(
            session = %evicted,
            cap = sessions.limits.max_sessions,
            "MCP SSE session cap reached: closing the least recently active session that sent no request"
        ),
        Ok(None) => {}
        Err(Full) => return Err(busy(sessions.limits.max_sessions)),
    }
    let handler = super::service::McpService(DocdexMcp::new(state.clone(), init, false));
    tokio::spawn(run_session(handler, (to_client, from_client), sessions.clone(), id.clone(), close.clone()));
    let guard = SessionGuard { sessions, id: id.clone() };
    let endpoint = Event::default().event("endpoint").data(format!("/v1/mcp/message?sessionId={id}"));
    let messages = from_server.map(move |m| {
        let value = serde_json::to_value(&m).unwrap_or_default();
        backlog.delivered(&value);
        Event::default().event("message").data(value.to_string())
    });
    let stream = futures::stream::once(async move { endpoint })
        .chain(messages)
        .take_until(close.cancelled_owned())
        .map(move |e| {
            let _alive = &guard;
            Ok(e)
        });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// `503 busy` with `Retry-After`: every session has sent requests.
fn busy(max: usize) -> axum::response::Response {
    use axum::response::IntoResponse;
    let why = format!(
        "all {max} MCP SSE sessions are in use; close a GET /sse stream you no longer read, or use streamable HTTP at /v1/mcp"
    );
    let mut resp = ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "busy", why).into_response();
    resp.headers_mut().insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from(RETRY_AFTER_SECS));
    resp
}

/// Runs one session's rmcp server until it ends by itself (its client's stream closed, a refused
/// `initialize`: its stream then ends once the answers queued in it are sent), or until its
/// client's silence outlasts [`SseLimits`] or it is closed (evicted, shutdown): then `close` ends
/// the stream at once.
async fn run_session<T, E, A>(
    handler: super::service::McpService,
    transport: T,
    sessions: Arc<SseSessions>,
    id: String,
    close: CancellationToken,
) where
    T: rmcp::transport::IntoTransport<rmcp::RoleServer, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let serve = async {
        match rmcp::ServiceExt::serve_with_ct(handler, transport, close.clone()).await {
            Ok(running) => {
                let _ = running.waiting().await;
            }
            Err(e) => tracing::debug!(session = %id, "SSE session ended before initialize: {e}"),
        }
    };
    tokio::select! {
        _ = serve => {}
        why = sessions.expiry(&id) => {
            match why {
                Expired::NoInitialize(t) => tracing::info!(session = %id, "closing an MCP SSE session whose client sent no initialize within {} s", t.as_secs()),
                Expired::Idle(t) => tracing::info!(session = %id, "closing an MCP SSE session whose client sent nothing for {} s", t.as_secs()),
                Expired::Gone => {}
            }
            close.cancel();
        }
    }
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
    sessions.touch(&q.session_id, &body);
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn session(close: &CancellationToken) -> Session {
        Session {
            to_server: unbounded().0,
            init: InitSlot::default(),
            backlog: Arc::default(),
            usage: Usage::new(Instant::now()),
            close: close.clone(),
        }
    }

    fn limits(max_sessions: usize, init_ms: u64, idle_ms: u64) -> SseLimits {
        SseLimits {
            max_sessions,
            init_timeout: Duration::from_millis(init_ms),
            idle_timeout: Duration::from_millis(idle_ms),
        }
    }

    #[test]
    fn at_the_cap_the_longest_idle_unused_session_is_closed_and_sessions_in_use_never_are() {
        let sessions = SseSessions::with_limits(limits(3, 60_000, 60_000));
        let tokens: Vec<CancellationToken> = (0..5).map(|_| CancellationToken::new()).collect();
        for (i, t) in tokens.iter().take(3).enumerate() {
            assert_eq!(sessions.admit(format!("s{i}"), session(t)).unwrap(), None);
        }
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        sessions.touch("s0", &request);
        // s1 is the oldest that never sent a request; s2 sent only initialize (no request yet).
        sessions.touch("s2", &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize"}));
        assert_eq!(sessions.admit("s3".into(), session(&tokens[3])).unwrap(), Some("s1".into()));
        assert!(tokens[1].is_cancelled() && !tokens[0].is_cancelled() && !tokens[2].is_cancelled());
        assert_eq!(sessions.len(), 3);
        sessions.touch("s2", &request);
        sessions.touch("s3", &request);
        assert!(sessions.admit("s4".into(), session(&tokens[4])).is_err(), "every session is in use");
        assert_eq!(sessions.len(), 3);
        assert!(tokens.iter().filter(|t| t.is_cancelled()).count() == 1);
    }

    #[tokio::test]
    async fn a_session_is_closed_without_initialize_or_after_its_client_goes_silent() {
        let sessions = SseSessions::with_limits(limits(8, 100, 300));
        let close = CancellationToken::new();
        sessions.admit("quiet".into(), session(&close)).unwrap();
        let started = Instant::now();
        assert_eq!(sessions.expiry("quiet").await, Expired::NoInitialize(Duration::from_millis(100)));
        assert!(started.elapsed() >= Duration::from_millis(100));

        sessions.admit("busy".into(), session(&close)).unwrap();
        sessions.touch("busy", &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize"}));
        let started = Instant::now();
        let expiry = sessions.expiry("busy");
        tokio::pin!(expiry);
        // Messages every 100 ms keep it open past the idle timeout...
        for _ in 0..6 {
            tokio::select! {
                why = &mut expiry => panic!("closed while its client talks: {why:?}"),
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
            sessions.touch("busy", &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        }
        // ...then silence closes it one idle timeout after the last message.
        assert_eq!(expiry.await, Expired::Idle(Duration::from_millis(300)));
        assert!(started.elapsed() >= Duration::from_millis(900));

        sessions.remove("busy");
        assert_eq!(sessions.expiry("busy").await, Expired::Gone);
    }
}
