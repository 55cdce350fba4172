//! Accepting connections with bounds: at most [`Limits::max_connections`] open at once (from
//! the process's descriptor limit, which is first raised to its hard limit), a connection that
//! sends no complete request head for [`Limits::header_read_timeout`] (idle keep-alive, or a
//! slow client dribbling headers) is closed, and when the cap is reached the connection idle
//! the longest is closed to make room, so a flood of idle connections can neither exhaust the
//! descriptors nor keep `/healthz` from answering. Connections serving a request (a streamed
//! chat answer included) are never the ones closed, and a connection asked to make room is
//! closed at once (a half-sent head included) and never asked twice. A request body must keep
//! arriving: [`Limits::body_idle_timeout`] without a byte, or [`Limits::body_total_timeout`]
//! in all, ends it with `408 request_timeout` and the connection, so a stalled body cannot hold
//! a slot. Graceful shutdown as `axum::serve` does it: stop accepting, let connections finish
//! their requests.
//!
//! Request heads: hyper answers a head it will not parse (more header fields than its cap, or
//! larger than its read buffer) with `431` and an empty body. Its field cap is set to
//! [`HYPER_MAX_HEADERS`], well above docdex's own [`MAX_HEADERS`] and [`MAX_HEADER_BYTES`],
//! which [`headers_within_limits`] enforces with the error contract (`431 headers_too_large`,
//! naming the limit); heads beyond hyper's bounds, and URIs over its 65,534 bytes (`414`), get
//! hyper's bare answer, which [`ShapedErrors`] rewrites into the contract on the way out.

use super::error::ApiError;
use super::head_errors::ShapedErrors;
use super::stall::{ResponseWaits, StalledWrites, WatchedBody};
use axum::body::Body;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Router;
use futures::StreamExt;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::{watch, Notify, OwnedSemaphorePermit, Semaphore};
use tower_service::Service;

/// Descriptors kept for everything but connections (index files, databases, watchers, logs).
const RESERVED_DESCRIPTORS: u64 = 192;
pub use super::head_errors::{MAX_HEADERS, MAX_HEADER_BYTES};
/// hyper's cap on header fields: heads between [`MAX_HEADERS`] and this get docdex's `431`
/// with the error contract rather than hyper's empty one. hyper allocates room for this many
/// fields per parsed head (about 64 bytes each), so it stays modest.
const HYPER_MAX_HEADERS: usize = 512;
/// The most connections whatever the descriptor limit.
const MAX_CONNECTIONS: usize = 4096;
/// HTTP/2's bound on a request's header list (names, values and 32 bytes a field, as RFC 7541
/// counts them): room for every head within [`MAX_HEADER_BYTES`] and [`MAX_HEADERS`], so HTTP/2
/// serves the heads HTTP/1.1 does and answers larger ones with the same `431
/// headers_too_large`. hyper's default, 16 KiB, answered a 20 KB head with a bare `431` (no
/// body) and a 70 KB one with the connection's end, no answer at all.
const H2_MAX_HEADER_LIST: u32 = (MAX_HEADER_BYTES + 32 * 1024) as u32;
/// HTTP/2 streams at once on a connection (hyper's default, stated so it cannot change
/// unseen): each holds a request, so this times the connection cap bounds them.
const H2_MAX_STREAMS: u32 = 200;
/// Streams a client may reset before the server has taken them (h2's default): past it the
/// connection ends with `GOAWAY ENHANCE_YOUR_CALM` (rapid reset, CVE-2023-44487).
const H2_MAX_PENDING_RESETS: usize = 20;
/// Streams the server may reset for a client's errors (hyper's default) before it ends the
/// connection (a client making it reset streams in a loop, CVE-2025-8671).
const H2_MAX_LOCAL_RESETS: usize = 1024;

/// How many connections, and how long one may wait before sending a request.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections open at once.
    pub max_connections: usize,
    /// Time to receive a request head, counted from the connection's start or the end of its
    /// previous request (so it is also the keep-alive idle timeout).
    pub header_read_timeout: Duration,
    /// Longest wait for the next bytes of a request body.
    pub body_idle_timeout: Duration,
    /// Longest time to receive a whole request body (the largest, a 32 MiB hook body, takes
    /// well under a second on any link docdex is meant for).
    pub body_total_timeout: Duration,
    /// Longest a response may wait for a client that reads none of it (`super::stall`).
    pub write_stall_timeout: Duration,
}

impl Limits {
    /// Limits for this process: raises the soft descriptor limit to the hard one, then leaves
    /// [`RESERVED_DESCRIPTORS`] of it for the engine.
    pub fn for_process() -> Limits {
        let nofile = raise_descriptor_limit();
        let max_connections = (nofile.saturating_sub(RESERVED_DESCRIPTORS) as usize).clamp(32, MAX_CONNECTIONS);
        tracing::debug!(nofile, max_connections, "connection limits");
        Limits {
            max_connections,
            header_read_timeout: Duration::from_secs(10),
            body_idle_timeout: Duration::from_secs(10),
            body_total_timeout: Duration::from_secs(60),
            write_stall_timeout: Duration::from_secs(30),
        }
    }
}

/// Raises `RLIMIT_NOFILE`'s soft limit to its hard limit; returns the soft limit in force.
fn raise_descriptor_limit() -> u64 {
    #[cfg(unix)]
    {
        let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit/setrlimit read and write the struct we own.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
                return 1024;
            }
            if lim.rlim_cur < lim.rlim_max {
                let raised = libc::rlimit { rlim_cur: lim.rlim_max, rlim_max: lim.rlim_max };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                    lim.rlim_cur = lim.rlim_max;
                }
            }
        }
        #[allow(clippy::unnecessary_cast)] // rlim_t is not u64 everywhere
        let cur = lim.rlim_cur as u64;
        cur
    }
    #[cfg(not(unix))]
    {
        1024
    }
}

/// One open connection, as the accept loop sees it.
struct Conn {
    /// Requests being served (until their response body is done).
    in_flight: AtomicUsize,
    /// When a request last started or ended (ms since the server started).
    last_active: AtomicU64,
    /// Asks the connection to close now if idle (gracefully if a request started meanwhile).
    close: Notify,
    /// Set once the connection was asked to make room, so eviction never picks it twice.
    evicted: AtomicBool,
    /// Its responses waiting for the client to take more of them.
    waits: Arc<ResponseWaits>,
}

/// The open connections.
#[derive(Default)]
struct Registry {
    conns: Mutex<HashMap<u64, Arc<Conn>>>,
}

impl Registry {
    /// Registers a new connection, active now.
    fn open(&self, id: u64, clock: Clock) -> Arc<Conn> {
        let conn = Arc::new(Conn {
            in_flight: AtomicUsize::new(0),
            last_active: AtomicU64::new(clock.now_ms()),
            close: Notify::new(),
            evicted: AtomicBool::new(false),
            waits: Arc::new(ResponseWaits::default()),
        });
        if let Ok(mut conns) = self.conns.lock() {
            conns.insert(id, conn.clone());
        }
        conn
    }

    /// Forgets a connection that ended.
    fn close(&self, id: u64) {
        if let Ok(mut conns) = self.conns.lock() {
            conns.remove(&id);
        }
    }

    /// Asks the connection idle the longest (no request in flight, not already asked) to
    /// close; false if every connection is busy.
    fn evict_idle(&self) -> bool {
        let Ok(conns) = self.conns.lock() else { return false };
        let oldest = conns
            .values()
            .filter(|c| c.in_flight.load(Ordering::SeqCst) == 0 && !c.evicted.load(Ordering::SeqCst))
            .min_by_key(|c| c.last_active.load(Ordering::SeqCst));
        match oldest {
            Some(c) => {
                c.evicted.store(true, Ordering::SeqCst);
                c.close.notify_one();
                true
            }
            None => false,
        }
    }
}

/// Serves `app` on `listener` until `shutdown` resolves, then lets open connections finish.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let clock = Clock(Instant::now());
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let registry = Arc::new(Registry::default());
    let (stop_tx, stop_rx) = watch::channel(false);
    // Every connection task holds a clone; `recv()` returns `None` when all have ended.
    let (done_tx, mut done_rx) = tokio::sync::mpsc::channel::<()>(1);
    let mut shutdown = std::pin::pin!(shutdown);
    let mut next_id = 0u64;
    loop {
        let (stream, _addr) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(s) => s,
                Err(e) => {
                    // Out of descriptors (or another transient error): make room, back off.
                    tracing::warn!("accept failed: {e}");
                    registry.evict_idle();
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Some(permit) = take_permit(&permits, &registry, limits.max_connections).await else {
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        next_id += 1;
        let id = next_id;
        let conn = registry.open(id, clock);
        let (registry, app, stop_rx, done_tx) = (registry.clone(), app.clone(), stop_rx.clone(), done_tx.clone());
        tokio::spawn(async move {
            serve_connection(stream, conn, app, limits, clock, stop_rx).await;
            registry.close(id);
            drop(permit);
            drop(done_tx);
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    drop(done_tx);
    // Every connection task dropped its sender: all finished.
    let _ = done_rx.recv().await;
    Ok(())
}

/// Milliseconds since the server started, for [`Conn::last_active`].
#[derive(Clone, Copy)]
struct Clock(Instant);

impl Clock {
    fn now_ms(self) -> u64 {
        self.0.elapsed().as_millis() as u64
    }
}

/// A slot for one more connection. At the cap, the connection idle the longest is asked to
/// close and its slot awaited; `None` (the connection is refused) when every one is busy.
async fn take_permit(permits: &Arc<Semaphore>, registry: &Registry, max: usize) -> Option<OwnedSemaphorePermit> {
    if let Ok(p) = permits.clone().try_acquire_owned() {
        return Some(p);
    }
    let evicted = registry.evict_idle();
    let wait = if evicted { Duration::from_secs(2) } else { Duration::from_millis(500) };
    match tokio::time::timeout(wait, permits.clone().acquire_owned()).await {
        Ok(Ok(p)) => Some(p),
        _ => {
            tracing::warn!(max, "too many connections, all busy; refusing one");
            None
        }
    }
}

/// HTTP/1 with the head timeout and field cap, HTTP/2 with keep-alive pings and its bounds.
fn connection_builder(limits: Limits) -> Builder<TokioExecutor> {
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_headers(HYPER_MAX_HEADERS);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(Duration::from_secs(20)))
        .keep_alive_timeout(Duration::from_secs(10))
        .max_header_list_size(H2_MAX_HEADER_LIST)
        .max_concurrent_streams(H2_MAX_STREAMS)
        .max_pending_accept_reset_streams(H2_MAX_PENDING_RESETS)
        .max_local_error_reset_streams(H2_MAX_LOCAL_RESETS);
    builder
}

/// Serves one connection until it ends, is evicted (at once when idle) or the server stops
/// (gracefully: its requests finish first).
async fn serve_connection(
    stream: tokio::net::TcpStream,
    conn: Arc<Conn>,
    app: Router,
    limits: Limits,
    clock: Clock,
    mut stop_rx: watch::Receiver<bool>,
) {
    let service = {
        let conn = conn.clone();
        hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
            let mut app = app.clone();
            let guard = InFlight::start(conn.clone(), clock);
            let req = req.map(|b| Body::new(TimedBody::new(b, limits)));
            let waits = conn.waits.clone();
            async move {
                let resp = app.call(req).await.unwrap_or_else(|never| match never {});
                Ok::<_, std::convert::Infallible>(watched(resp, guard, waits))
            }
        })
    };
    let builder = connection_builder(limits);
    let stream = TokioIo::new(ShapedErrors::new(StalledWrites::new(stream, limits.write_stall_timeout)));
    let served = builder.serve_connection_with_upgrades(stream, service);
    let mut served = std::pin::pin!(served);
    let mut closing = false;
    loop {
        tokio::select! {
            r = served.as_mut() => {
                if let Err(e) = r {
                    tracing::trace!("connection ended: {e}");
                }
                return;
            }
            _ = conn.close.notified(), if !closing => {
                // Evicted: an idle connection (a half-sent head included, which a graceful
                // shutdown would wait on) is dropped now, so its slot frees at once; one
                // whose request started meanwhile finishes it first.
                if conn.in_flight.load(Ordering::SeqCst) == 0 {
                    return;
                }
                closing = true;
                served.as_mut().graceful_shutdown();
            }
            _ = stop_rx.changed(), if !closing => {
                closing = true;
                served.as_mut().graceful_shutdown();
            }
            _ = tokio::time::sleep_until(conn.waits.deadline(limits.write_stall_timeout)) => {
                if conn.waits.stalled(limits.write_stall_timeout) {
                    let secs = limits.write_stall_timeout.as_secs();
                    tracing::debug!(secs, "a client took nothing of an answer; closing its connection");
                    return;
                }
            }
            _ = tokio::time::sleep_until(idle_deadline(&conn, clock, limits.header_read_timeout)) => {
                // Idle past the head timeout with no request: hyper's own timeout does not
                // cover a connection that has sent nothing (or part of HTTP/2's preface), whose
                // protocol is still unknown, nor HTTP/2 between requests.
                let idle = limits.header_read_timeout;
                if conn.in_flight.load(Ordering::SeqCst) == 0 && idle_deadline(&conn, clock, idle) <= tokio::time::Instant::now() {
                    tracing::trace!("idle connection closed");
                    return;
                }
            }
        }
    }
}

/// `resp` with its body watched for a client that takes none of it ([`WatchedBody`]; HTTP/2's
/// flow control stalls a response without blocking a write, which [`StalledWrites`] cannot
/// see), its request in flight (`guard`) until the body has been sent or dropped.
fn watched(resp: Response, guard: InFlight, waits: Arc<ResponseWaits>) -> Response {
    resp.map(|body| {
        let chunks = body.into_data_stream().map(move |chunk| {
            let _ = &guard;
            chunk
        });
        Body::from_stream(WatchedBody::new(chunks, waits))
    })
}

/// When the connection, if it stays without a request, has been idle for `idle`: from its
/// last request's end (or its start); while a request is in flight, `idle` from now, to look
/// again then.
fn idle_deadline(conn: &Conn, clock: Clock, idle: Duration) -> tokio::time::Instant {
    if conn.in_flight.load(Ordering::SeqCst) > 0 {
        return tokio::time::Instant::now() + idle;
    }
    let last = clock.0 + Duration::from_millis(conn.last_active.load(Ordering::SeqCst));
    tokio::time::Instant::from_std(last + idle)
}

/// Refuses a request with more than [`MAX_HEADERS`] header fields or [`MAX_HEADER_BYTES`] of
/// them: `431 headers_too_large` with the error contract (hyper's own refusal, past its higher
/// caps, has an empty body a client cannot learn from).
pub async fn headers_within_limits(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let headers = req.headers();
    // Each field on the wire is `name: value\r\n`.
    let bytes: usize = headers.iter().map(|(name, value)| name.as_str().len() + value.len() + 4).sum();
    let why = if headers.len() > MAX_HEADERS {
        format!("the request has {} header fields; the limit is {MAX_HEADERS}", headers.len())
    } else if bytes > MAX_HEADER_BYTES {
        format!("the request's header fields take {bytes} bytes; the limit is {MAX_HEADER_BYTES}")
    } else {
        return next.run(req).await;
    };
    let message = format!("{why}: send fewer or smaller headers");
    ApiError::new(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, "headers_too_large", message).into_response()
}

/// Marks a request in flight on its connection until dropped.
struct InFlight {
    conn: Arc<Conn>,
    clock: Clock,
}

impl InFlight {
    fn start(conn: Arc<Conn>, clock: Clock) -> InFlight {
        conn.in_flight.fetch_add(1, Ordering::SeqCst);
        conn.last_active.store(clock.now_ms(), Ordering::SeqCst);
        InFlight { conn, clock }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.conn.last_active.store(self.clock.now_ms(), Ordering::SeqCst);
        self.conn.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A request body that fails with [`BodyStalled`] when its next bytes take longer than
/// [`Limits::body_idle_timeout`] or the whole body longer than [`Limits::body_total_timeout`]:
/// hyper has no body-read timeout, and a client that sends a head and part of a body would
/// otherwise hold its connection (which eviction skips, a request being in flight) forever.
struct TimedBody {
    inner: hyper::body::Incoming,
    idle: Duration,
    total: Duration,
    next_bytes: std::pin::Pin<Box<tokio::time::Sleep>>,
    whole: std::pin::Pin<Box<tokio::time::Sleep>>,
}

impl TimedBody {
    fn new(inner: hyper::body::Incoming, limits: Limits) -> TimedBody {
        TimedBody {
            inner,
            idle: limits.body_idle_timeout,
            total: limits.body_total_timeout,
            next_bytes: Box::pin(tokio::time::sleep(limits.body_idle_timeout)),
            whole: Box::pin(tokio::time::sleep(limits.body_total_timeout)),
        }
    }
}

/// A request body stopped arriving (see [`TimedBody`]); the extractors answer it with
/// `408 request_timeout`.
#[derive(Debug, thiserror::Error)]
#[error("the request body stopped arriving: send it whole within {total_secs} s, with no pause over {idle_secs} s")]
pub struct BodyStalled {
    idle_secs: u64,
    total_secs: u64,
}

impl hyper::body::Body for TimedBody {
    type Data = hyper::body::Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        use std::task::Poll;
        let this = &mut *self;
        match std::pin::Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                let deadline = tokio::time::Instant::now() + this.idle;
                this.next_bytes.as_mut().reset(deadline);
                Poll::Ready(frame.map(|f| f.map_err(Into::into)))
            }
            Poll::Pending => {
                if this.next_bytes.as_mut().poll(cx).is_ready() || this.whole.as_mut().poll(cx).is_ready() {
                    let stalled = BodyStalled { idle_secs: this.idle.as_secs(), total_secs: this.total.as_secs() };
                    return Poll::Ready(Some(Err(Box::new(stalled))));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}
