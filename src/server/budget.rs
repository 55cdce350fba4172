//! One memory budget for request bodies across all requests: each request's body is bounded
//! (`--max-body-bytes`, the hooks route 32 MiB), but with up to 4,096 connections the bodies
//! being read at once were bounded only by connections × limit (8 GiB; 128 GiB on the hooks
//! route). A request with a body takes a share of [`BODY_BUDGET`] before its handler runs (its
//! declared length, or its route's limit when it declares none, as a chunked body does) and
//! gives it back when its response has been sent; one whose share does not fit now is `503
//! busy` with `Retry-After`, its body never read. Bodies of up to [`SMALL_BODY`] may also use the
//! last [`SMALL_RESERVE`], which larger ones never take, so large uploads holding the budget
//! never refuse a search.

use super::error::ApiError;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper::body::Body as _;
use std::sync::{Arc, Mutex};

/// Request-body bytes in flight at once, all requests together: 128 bodies at the default
/// 2 MiB limit, or 7 hook bodies of 32 MiB, which no single client needs at once; a parsed
/// JSON body takes about its size again, so this keeps request bodies near half a GiB at
/// worst, beside an index, on any machine docdex runs on. A `--max-body-bytes` larger than it
/// raises it to fit one such body.
pub const BODY_BUDGET: usize = 256 * 1024 * 1024;
/// Bodies this small (searches, symbol lookups, memory writes) may use [`SMALL_RESERVE`].
pub const SMALL_BODY: usize = 64 * 1024;
/// The budget's last bytes, for small bodies only: 512 of them at [`SMALL_BODY`] each.
pub const SMALL_RESERVE: usize = 32 * 1024 * 1024;
/// What a refused request's `Retry-After` says: bodies are read within 60 s, most within one.
const RETRY_AFTER_SECS: u64 = 2;

/// The shared budget and the body limit of each route.
#[derive(Clone)]
pub struct BodyBudget {
    inner: Arc<Inner>,
}

struct Inner {
    total: usize,
    used: Mutex<usize>,
    default_limit: usize,
    /// Routes whose limit is not the default (path, limit).
    route_limits: Vec<(&'static str, usize)>,
}

impl BodyBudget {
    /// A budget of [`BODY_BUDGET`] (or more, so that one body at the largest limit fits beside
    /// the small bodies' reserve).
    pub fn new(default_limit: usize, route_limits: Vec<(&'static str, usize)>) -> BodyBudget {
        let largest = route_limits.iter().map(|r| r.1).chain([default_limit]).max().unwrap_or(default_limit);
        let total = BODY_BUDGET.max(largest + SMALL_RESERVE);
        BodyBudget { inner: Arc::new(Inner { total, used: Mutex::new(0), default_limit, route_limits }) }
    }

    /// The budget in bytes.
    pub fn total(&self) -> usize {
        self.inner.total
    }

    fn limit_for(&self, path: &str) -> usize {
        let route = self.inner.route_limits.iter().find(|(p, _)| *p == path);
        route.map_or(self.inner.default_limit, |r| r.1)
    }

    /// Takes `bytes` now, or says how many are in use.
    fn take(&self, bytes: usize) -> Result<Share, usize> {
        let room = if bytes <= SMALL_BODY { self.inner.total } else { self.inner.total - SMALL_RESERVE };
        let Ok(mut used) = self.inner.used.lock() else { return Err(self.inner.total) };
        if *used + bytes > room {
            return Err(*used);
        }
        *used += bytes;
        Ok(Share { inner: self.inner.clone(), bytes })
    }
}

/// Bytes of the budget one request holds, given back when dropped.
struct Share {
    inner: Arc<Inner>,
    bytes: usize,
}

impl Drop for Share {
    fn drop(&mut self) {
        if let Ok(mut used) = self.inner.used.lock() {
            *used -= self.bytes;
        }
    }
}

/// The bytes a request's body may take: its declared length (within its route's limit, which
/// refuses more with `413` as it reads), else the route's limit.
fn charge(req: &Request, limit: usize) -> usize {
    let hint = req.body().size_hint();
    let declared = hint.exact().or(hint.upper()).map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    declared.map_or(limit, |n| n.min(limit))
}

/// Runs the request with its share of the budget held until its response body is sent; `503
/// busy` with `Retry-After` (and the connection closed, the body unread) when it does not fit,
/// `413` at once when its declared length is over its route's limit.
pub async fn within_budget(State(budget): State<BodyBudget>, req: Request, next: Next) -> Response {
    let limit = budget.limit_for(req.uri().path());
    if let Some(declared) = declared_over(&req, limit) {
        return too_large(declared, limit);
    }
    let bytes = charge(&req, limit);
    if bytes == 0 {
        return next.run(req).await;
    }
    let share = match budget.take(bytes) {
        Ok(share) => share,
        Err(used) => return busy(bytes, used, budget.total()),
    };
    next.run(req).await.map(|body| Body::new(Held { body, _share: share }))
}

/// The length a request declares (`Content-Length`) when it is over its route's `limit`, for
/// every route but MCP's, whose transports answer in JSON-RPC and read their own bodies.
fn declared_over(req: &Request, limit: usize) -> Option<u64> {
    let declared = req.body().size_hint().exact()?;
    let over = declared > limit as u64 && !req.uri().path().starts_with(MCP_PATHS);
    over.then_some(declared)
}

/// Where MCP's transports are served (`/v1/mcp`, `/v1/mcp/message`).
const MCP_PATHS: &str = "/v1/mcp";

/// `413 payload_too_large` before a byte of the body is read, its connection closed. The body
/// was read up to the limit first: a client announcing 1 GB with `Expect: 100-continue` (curl
/// does so past 1 MiB) was told `100 Continue` and sent 2 MiB before its 413, and one that sent
/// the head alone waited 10 s for a `408`.
fn too_large(declared: u64, limit: usize) -> Response {
    let mut e = ApiError::payload_too_large(limit);
    e.message = format!("{} (its Content-Length is {declared})", e.message);
    let mut resp = e.into_response();
    resp.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}

fn busy(bytes: usize, used: usize, total: usize) -> Response {
    tracing::warn!(bytes, used, total, "request body refused: the body budget is taken");
    let message = format!(
        "the server is reading {used} bytes of request bodies (its budget is {total}); this {bytes}-byte body does not fit now: retry after {RETRY_AFTER_SECS} s (requests with small or no bodies are not affected)"
    );
    let mut resp = ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "busy", message).into_response();
    resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
    resp.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}

/// A response body holding its request's share until it is sent or dropped.
struct Held {
    body: Body,
    _share: Share,
}

impl hyper::body::Body for Held {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_bodies_leave_the_reserve_to_small_ones_and_shares_come_back() {
        let b = BodyBudget::new(32 << 20, vec![]);
        let large: Vec<Share> = (0..7).map(|_| b.take(32 << 20).unwrap()).collect();
        assert!(b.take(32 << 20).is_err(), "the reserve is not for large bodies");
        let small: Vec<Share> = (0..100).map(|_| b.take(SMALL_BODY).unwrap()).collect();
        drop(large);
        assert!(b.take(32 << 20).is_ok());
        drop(small);
        assert_eq!(*b.inner.used.lock().unwrap(), 0);
    }

    #[test]
    fn a_limit_beyond_the_budget_still_fits_one_body() {
        let b = BodyBudget::new(1 << 30, vec![("/v1/hooks/validate", 32 << 20)]);
        assert!(b.take(1 << 30).is_ok());
        assert_eq!(b.limit_for("/v1/hooks/validate"), 32 << 20);
        assert_eq!(b.limit_for("/v1/search"), 1 << 30);
    }
}
