//! The server-wide bound on engine work, and its cancellation when the client goes away.
//!
//! Every endpoint and MCP tool that runs an engine call (search, lookups, memory, audits,
//! tool calls) runs it through [`WorkGate::run`]: it takes one of a fixed number of slots
//! (`[server] max_concurrent_work`, default twice the cores, at least 4) before it takes a
//! blocking thread, so a burst of requests queues here, asynchronously and for a bounded time
//! (`[server] work_wait_ms`), instead of growing the blocking pool to its limit; a request
//! that finds no slot in that time is `503 busy` with `Retry-After`. Health and status are not
//! gated (`extract::blocking`), so a loaded server still says how it is.
//!
//! A chat turn holds a slot too, for its whole generation ([`WorkGate::slot`], beside its chat
//! slot), so `max_concurrent_work` bounds all engine work; chats are capped at half the slots
//! (`state::chat_slots_within`), so searches keep the rest.
//!
//! The call gets its own [`CancelToken`], ambient on its thread, tripped when the request's
//! future is dropped: hyper drops it when the client closes the connection, and the MCP
//! handler drops it when the request is cancelled or its session ends. Every wait on the model
//! server inside the call (the query's embedding in search, memory and profile recall, a
//! conflict's explanation) then ends within 20 ms, and a call still queued for a slot never
//! starts. Searches, graph walks, audits, the project map, the pre-commit gatekeeper, an index
//! run and a test run look at the token at their loop boundaries and end with `cancelled` (a
//! test run kills its process group).
//!
//! A client that stays connected does not hold a slot for ever: every call has a [`Deadline`]
//! (`[server] request_timeout_secs`, default 120 s, counted from when the call takes its slot).
//! Past it the gate trips the call's token, so the work stops at its next boundary and frees
//! its slot, and answers `504 deadline_exceeded` naming the limit and the setting at once,
//! without waiting for that boundary. Work with a bound of its own gets a deadline past it
//! instead ([`WorkGate::run_within`]: a test run, its `timeout_secs` plus
//! [`DEADLINE_MARGIN`]); an index run has none ([`WorkGate::run_without_deadline`], see there
//! why). A chat turn holds its slot through [`WorkGate::slot`], bounded by the `[llm]`
//! timeouts of its model calls and its client's connection, not by the deadline: its tokens
//! stream out while it runs, and cutting a slow answer mid-sentence would help nobody.

use super::error::ApiError;
use crate::engine::protocol::CancelToken;
use axum::http::StatusCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// What a `503 busy` from the gate asks the client to wait, in seconds.
pub const BUSY_RETRY_AFTER_SECS: u64 = 2;

/// What a call with a bound of its own gets beyond it before its deadline (a test run's
/// `timeout_secs`): time to kill the runner's processes and read their output into a result.
pub const DEADLINE_MARGIN: Duration = Duration::from_secs(30);

/// How long one engine call may run once it has its slot, and what to do for longer work (for
/// the `504 deadline_exceeded` message).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deadline {
    /// The limit.
    pub after: Duration,
    /// What to do for longer work: the setting that raises the limit.
    pub advice: &'static str,
}

impl Deadline {
    /// The server-wide deadline of ordinary calls.
    pub fn server(after: Duration) -> Deadline {
        Deadline {
            after,
            advice: "raise `[server] request_timeout_secs` for longer work, or ask for less (a narrower query, a smaller limit or budget)",
        }
    }

    /// `504 deadline_exceeded`: the call ran past this deadline and was stopped.
    pub fn exceeded(&self) -> ApiError {
        ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            "deadline_exceeded",
            format!("the request ran past its deadline of {} and was stopped; {}", seconds(self.after), self.advice),
        )
    }
}

/// `120 s`, `1.5 s`.
fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// The default number of slots: twice the cores, at least 4 (what the blocking pool keeps for
/// requests beside the chat threads).
pub fn default_slots() -> usize {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
    (2 * cores).max(4)
}

/// The bound on engine calls running at once (see the module docs). Cheap to clone.
#[derive(Clone)]
pub struct WorkGate {
    permits: Arc<Semaphore>,
    slots: usize,
    wait: Duration,
    deadline: Duration,
    shutdown: CancellationToken,
}

impl WorkGate {
    /// A gate of `slots` (0 means [`default_slots`]) whose callers wait at most `wait` for one
    /// and whose calls run at most `deadline` ([`WorkGate::run`]); a shutdown ends every wait
    /// at once.
    pub fn new(slots: usize, wait: Duration, deadline: Duration, shutdown: CancellationToken) -> WorkGate {
        let slots = if slots == 0 { default_slots() } else { slots };
        WorkGate { permits: Arc::new(Semaphore::new(slots)), slots, wait, deadline, shutdown }
    }

    /// The deadline of ordinary calls (`[server] request_timeout_secs`).
    pub fn deadline(&self) -> Deadline {
        Deadline::server(self.deadline)
    }

    /// How many engine calls may run at once.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Runs `f` on the blocking pool once a slot is free (see the module docs): `503 busy` with
    /// `Retry-After` when none frees within the wait, `503 shutting_down` when the server stops
    /// meanwhile, `504 deadline_exceeded` when `f` runs past the server's deadline. Dropping
    /// the returned future trips the call's [`CancelToken`], and so does the deadline; the slot
    /// is held until `f` returns, so the gate bounds the threads really in use.
    pub async fn run<T, F>(&self, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce() -> Result<T, ApiError> + Send + 'static,
    {
        self.run_bounded(Some(self.deadline()), f).await
    }

    /// [`WorkGate::run`] with a deadline of the call's own, for work bounded by a setting of
    /// its own that may exceed the server's (a test run's `timeout_secs`).
    pub async fn run_within<T, F>(&self, deadline: Deadline, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce() -> Result<T, ApiError> + Send + 'static,
    {
        self.run_bounded(Some(deadline), f).await
    }

    /// [`WorkGate::run`] without a deadline, for an index run (`docdex_index`): how long it
    /// takes grows with the repository and its embedder (a first index of a large monorepo
    /// takes many minutes, and there is no setting that says how many), no surface bounds it
    /// (`docdex index` neither), and cut, it would be taken up again by the next run anyway. It
    /// still stops when its client leaves or cancels, and at shutdown.
    pub async fn run_without_deadline<T, F>(&self, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce() -> Result<T, ApiError> + Send + 'static,
    {
        self.run_bounded(None, f).await
    }

    async fn run_bounded<T, F>(&self, deadline: Option<Deadline>, f: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce() -> Result<T, ApiError> + Send + 'static,
    {
        let permit = self.slot().await?;
        let token = CancelToken::new();
        let _stop = CancelOnDrop(token.clone());
        let call = token.clone();
        let mut task = tokio::task::spawn_blocking(move || {
            let _slot = permit;
            if call.is_cancelled() {
                return Err(gone());
            }
            let _ambient = call.enter();
            f()
        });
        let joined = match deadline {
            None => task.await,
            Some(deadline) => match tokio::time::timeout(deadline.after, &mut task).await {
                Ok(joined) => joined,
                Err(_) => {
                    // The work stops at its next boundary and frees the slot; nobody waits
                    // for that here.
                    token.cancel();
                    tracing::warn!(secs = deadline.after.as_secs_f64(), "engine call stopped at its deadline");
                    return Err(deadline.exceeded());
                }
            },
        };
        joined.map_err(|e| {
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", format!("request worker failed: {e}"))
        })?
    }

    /// Takes a slot for work that runs on its own thread rather than through [`WorkGate::run`]
    /// (a chat turn, which streams its tokens): held until the permit drops. The same waits
    /// and refusals as `run` (`503 busy` with `Retry-After`, `503 shutting_down`).
    pub async fn slot(&self) -> Result<OwnedSemaphorePermit, ApiError> {
        // A free slot is taken even while the server shuts down: a request already in flight
        // (its body still arriving when SIGTERM landed) is finished, not refused.
        if let Ok(permit) = self.permits.clone().try_acquire_owned() {
            return Ok(permit);
        }
        let waited = tokio::select! {
            biased;
            _ = self.shutdown.cancelled() => return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "shutting_down",
                "the server is shutting down; this request was waiting for a free slot and was not started",
            )),
            waited = tokio::time::timeout(self.wait, self.permits.clone().acquire_owned()) => waited,
        };
        match waited {
            Ok(Ok(permit)) => Ok(permit),
            _ => Err(self.busy()),
        }
    }

    /// `503 busy`: every slot ran an engine call for the whole wait.
    pub fn busy(&self) -> ApiError {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy",
            format!(
                "the server is running {} requests at once (`[server] max_concurrent_work`) and none finished within {} ms; retry after {BUSY_RETRY_AFTER_SECS} s (GET /healthz and /v1/status still answer)",
                self.slots,
                self.wait.as_millis()
            ),
        )
        .with_retry_after(BUSY_RETRY_AFTER_SECS)
    }
}

/// The error of a call whose client left before it started (nobody reads it).
fn gone() -> ApiError {
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "cancelled", "the request was cancelled before it started")
}

/// Trips the call's token when the request's future is dropped (the client hung up, the MCP
/// request was cancelled). Tripping it after the call returned is harmless.
struct CancelOnDrop(CancelToken);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(slots: usize, wait_ms: u64) -> WorkGate {
        WorkGate::new(slots, Duration::from_millis(wait_ms), Duration::from_secs(60), CancellationToken::new())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_call_past_the_slots_is_busy_with_retry_after_after_the_wait() {
        let g = gate(1, 100);
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let held = tokio::spawn({
            let g = g.clone();
            async move { g.run(move || Ok(rx.recv_timeout(Duration::from_secs(10)).is_ok())).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let e = g.run(|| Ok(())).await.unwrap_err();
        assert_eq!((e.status, e.code, e.retry_after), (StatusCode::SERVICE_UNAVAILABLE, "busy", Some(2)));
        tx.send(()).unwrap();
        assert!(held.await.unwrap().unwrap());
        g.run(|| Ok(())).await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn during_shutdown_a_free_slot_still_runs_the_call_and_only_waiters_are_refused() {
        let shutdown = CancellationToken::new();
        let g = WorkGate::new(1, Duration::from_secs(5), Duration::from_secs(60), shutdown.clone());
        shutdown.cancel();
        assert_eq!(g.run(|| Ok(7)).await.unwrap(), 7, "a request in flight is finished");
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let held = tokio::spawn({
            let g = g.clone();
            async move { g.run(move || Ok(rx.recv_timeout(Duration::from_secs(10)).is_ok())).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let e = g.run(|| Ok(0)).await.unwrap_err();
        assert_eq!((e.status, e.code), (StatusCode::SERVICE_UNAVAILABLE, "shutting_down"));
        tx.send(()).unwrap();
        assert!(held.await.unwrap().unwrap());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn dropping_the_request_trips_the_ambient_token_of_its_call() {
        let g = gate(1, 1000);
        let (tx, rx) = std::sync::mpsc::channel::<bool>();
        let call = tokio::spawn({
            let g = g.clone();
            async move {
                g.run(move || {
                    let token = CancelToken::ambient();
                    while token.as_ref().is_some_and(|t| !t.is_cancelled()) {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    let _ = tx.send(token.is_some());
                    Ok(())
                })
                .await
            }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        call.abort();
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok(true), "the call saw its token trip");
        // Its slot is free again.
        g.run(|| Ok(())).await.unwrap();
    }

    /// Waits for the ambient token to trip (or 10 s), then says whether it tripped.
    fn until_tripped() -> bool {
        let token = CancelToken::ambient();
        let started = std::time::Instant::now();
        while token.as_ref().is_some_and(|t| !t.is_cancelled()) && started.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
        }
        token.is_some_and(|t| t.is_cancelled())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_call_past_its_deadline_is_504_its_token_trips_and_its_slot_frees() {
        let g = WorkGate::new(1, Duration::from_secs(5), Duration::from_millis(300), CancellationToken::new());
        let (tx, rx) = std::sync::mpsc::channel::<bool>();
        let started = std::time::Instant::now();
        let e = g
            .run(move || {
                let _ = tx.send(until_tripped());
                Ok(())
            })
            .await
            .unwrap_err();
        let waited = started.elapsed();
        assert_eq!((e.status, e.code), (StatusCode::GATEWAY_TIMEOUT, "deadline_exceeded"));
        assert!(e.message.contains("0.3 s") && e.message.contains("`[server] request_timeout_secs`"), "{}", e.message);
        assert!(waited >= Duration::from_millis(300) && waited < Duration::from_secs(3), "answered after {waited:?}");
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok(true), "the call saw its token trip");
        assert_eq!(g.run(|| Ok(3)).await.unwrap(), 3, "the slot is free again");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_call_with_its_own_deadline_or_none_runs_past_the_servers() {
        let g = WorkGate::new(1, Duration::from_secs(5), Duration::from_millis(100), CancellationToken::new());
        let slow = || {
            std::thread::sleep(Duration::from_millis(400));
            Ok(CancelToken::ambient().is_some_and(|t| t.is_cancelled()))
        };
        let own = Deadline { after: Duration::from_secs(5), advice: "raise `timeout_secs`" };
        assert!(!g.run_within(own, slow).await.unwrap(), "not cut at the server's deadline");
        assert!(!g.run_without_deadline(slow).await.unwrap());
        let short = Deadline { after: Duration::from_millis(100), advice: "raise `timeout_secs`" };
        let e = g.run_within(short, slow).await.unwrap_err();
        assert!(e.code == "deadline_exceeded" && e.message.contains("raise `timeout_secs`"), "{}", e.message);
    }
}
