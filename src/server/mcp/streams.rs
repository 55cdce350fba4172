//! What the streamable-HTTP transport holds open for clients, and its bounds: the server
//! streams (`GET /v1/mcp`), capped over all sessions and per session, and the answer stream of
//! a POSTed request, whose client hanging up cancels the request.

use super::{rpc_error, Rejection, TRANSPORT_ERROR};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::Value;
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

/// Server streams (`GET /v1/mcp`) open at once, over every session. rmcp keeps up to 33 per
/// session (a primary and 32 idle "shadows"), each a connection that is never idle and so never
/// closed for another: 128 sessions could hold 4,224, past the connection cap, and every other
/// request (`/healthz` included) was then refused.
pub const MAX_GET_STREAMS: usize = 256;

/// Server streams one session may hold open: a client reads one; the second covers a reconnect
/// made before the server saw the old stream close. The key is the session, not the peer's
/// address or token: on loopback every client has the same address, and a server has one
/// token. With [`MAX_SESSIONS`](super::sessions::MAX_SESSIONS) sessions of this many streams
/// each, sessions alone never fill [`MAX_GET_STREAMS`], so one client's streams cannot starve
/// another's (before, 8 sessions of 33 streams took every place).
pub const MAX_STREAMS_PER_SESSION: usize = 2;

/// The longest session id kept as a key: rmcp's ids are UUIDs; a longer header names no
/// session (rmcp answers it 404) and is kept by its first bytes only.
const MAX_KEY_BYTES: usize = 64;

/// The open server streams, in all and per session.
#[derive(Default)]
pub struct StreamPlaces {
    table: Mutex<Places>,
}

#[derive(Default)]
struct Places {
    open: usize,
    by_session: HashMap<String, usize>,
}

impl StreamPlaces {
    /// A place for one more stream of `session` (the `Mcp-Session-Id` header), or the refusal
    /// to answer: `503` when every place is taken, `429` when this session holds its share.
    pub fn take(self: &Arc<Self>, session: Option<&str>) -> Result<StreamSlot, Box<Response>> {
        let key = session.map(|s| s.chars().take(MAX_KEY_BYTES).collect::<String>()).unwrap_or_default();
        let mut places = self.table.lock().unwrap_or_else(|p| p.into_inner());
        if places.open >= MAX_GET_STREAMS {
            return Err(refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("all {MAX_GET_STREAMS} MCP server streams (GET /v1/mcp) are open; close one you no longer read, or retry later"),
            ));
        }
        let held = places.by_session.get(&key).copied().unwrap_or(0);
        if held >= MAX_STREAMS_PER_SESSION {
            return Err(refusal(
                StatusCode::TOO_MANY_REQUESTS,
                format!("this MCP session already holds {held} server streams (GET /v1/mcp), the most one session may; read the one you have, or close it before opening another"),
            ));
        }
        places.open += 1;
        *places.by_session.entry(key.clone()).or_default() += 1;
        Ok(StreamSlot { places: self.clone(), key })
    }

    fn give_back(&self, key: &str) {
        let mut places = self.table.lock().unwrap_or_else(|p| p.into_inner());
        places.open = places.open.saturating_sub(1);
        if let Some(n) = places.by_session.get_mut(key) {
            *n -= 1;
            if *n == 0 {
                places.by_session.remove(key);
            }
        }
    }
}

/// `status` with `-32000` and `Retry-After`.
fn refusal(status: StatusCode, why: String) -> Box<Response> {
    let mut out = rpc_error(status, Rejection::new(Value::Null, TRANSPORT_ERROR, why));
    out.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    Box::new(out)
}

/// One place of [`StreamPlaces`], given back when dropped.
pub struct StreamSlot {
    places: Arc<StreamPlaces>,
    key: String,
}

impl StreamSlot {
    /// The stream, holding this place until it is dropped (client gone, session ended, shutdown).
    pub fn held_by(self, response: Response) -> Response {
        use futures::StreamExt;
        let (parts, body) = response.into_parts();
        let body = axum::body::Body::from_stream(body.into_data_stream().map(move |chunk| {
            let _held = &self;
            chunk
        }));
        Response::from_parts(parts, body)
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.places.give_back(&self.key);
    }
}

/// A POSTed request's answer stream that runs `on_hang_up` when it is dropped before its end:
/// the client closed the connection before the answer came. rmcp keeps running a request whose
/// stream is gone, so the transport sends it the `notifications/cancelled` the client did not.
pub fn cancel_on_hang_up(response: Response, on_hang_up: impl FnOnce() + Send + 'static) -> Response {
    let (parts, body) = response.into_parts();
    let stream = UntilEnd { inner: body.into_data_stream(), on_hang_up: Some(Box::new(on_hang_up)) };
    Response::from_parts(parts, axum::body::Body::from_stream(stream))
}

struct UntilEnd<S> {
    inner: S,
    on_hang_up: Option<Box<dyn FnOnce() + Send>>,
}

impl<S: futures::Stream + Unpin> futures::Stream for UntilEnd<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let polled = Pin::new(&mut self.inner).poll_next(cx);
        if let Poll::Ready(None) = polled {
            self.on_hang_up = None;
        }
        polled
    }
}

impl<S> Drop for UntilEnd<S> {
    fn drop(&mut self) {
        if let Some(f) = self.on_hang_up.take() {
            f();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_holds_at_most_its_share_and_places_come_back() {
        let places = Arc::new(StreamPlaces::default());
        let a1 = places.take(Some("a")).ok();
        let a2 = places.take(Some("a")).ok();
        let refused = places.take(Some("a")).err().map(|r| r.status());
        assert_eq!(refused, Some(StatusCode::TOO_MANY_REQUESTS));
        assert!(places.take(Some("b")).is_ok(), "another session is not refused");
        drop((a1, a2));
        assert!(places.take(Some("a")).is_ok());
        let table = places.table.lock().unwrap();
        assert!(table.by_session.is_empty() && table.open == 0, "dropped places leave no key behind");
    }
}
