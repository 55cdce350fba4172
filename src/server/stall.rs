//! A connection's stream whose writes fail when the client stops reading. hyper has no write
//! timeout: a response larger than the socket buffers, sent to a client that never reads it,
//! waits forever, and its connection counts as serving a request, so the connection cap never
//! closes it to make room. 64 such clients (each asking for a 4 MB file and reading nothing)
//! held every connection of a server capped at 64 and every later client, `/healthz` included,
//! was refused; each held its whole answer in memory as well (4,096 of them, the default cap,
//! would hold gigabytes). [`StalledWrites`] fails a write that has made no progress for
//! [`crate::server::listen::Limits::write_stall_timeout`] with `TimedOut`, which ends the
//! connection: its response is dropped, which stops the request's work (a chat's generation
//! included) as a client hanging up does.
//!
//! HTTP/2 stalls without a blocked write: a client that grants no flow-control window (an
//! initial window of 0, or never a `WINDOW_UPDATE`) keeps hyper from sending, so no write is
//! ever pending, and it answers pings, so the connection looks alive. One such client held 200
//! answers (hyper's streams per connection) for ever, a 4.4 MB file each, and ten of them grew
//! the server by 4.4 MB a request without bound. [`ResponseWaits`] times each response from
//! the moment it (or its last piece) was handed over until its body is asked for more: a
//! response nobody takes anything of for the limit ends the connection, on either protocol.

use axum::body::Bytes;
use futures::Stream;
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// A stream whose writes time out after `limit` without progress.
pub struct StalledWrites<S> {
    inner: S,
    limit: Duration,
    /// Running while a write waits for room in the socket; `None` while writes go through.
    stalled_since: Option<Pin<Box<Sleep>>>,
}

impl<S> StalledWrites<S> {
    /// Wraps a connection's stream; a write pending for `limit` fails.
    pub fn new(inner: S, limit: Duration) -> StalledWrites<S> {
        StalledWrites { inner, limit, stalled_since: None }
    }

    /// Passes `poll` (a write or flush on the inner stream) through, timing how long it has
    /// been pending: progress resets the clock, `limit` of waiting fails it with `TimedOut`.
    fn timed<T>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if poll.is_ready() {
            self.stalled_since = None;
            return poll;
        }
        let limit = self.limit;
        let timer = self.stalled_since.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        if timer.as_mut().poll(cx).is_ready() {
            tracing::debug!(secs = limit.as_secs(), "a client stopped reading its answer; closing its connection");
            let why = format!("the client read nothing of its answer for {} s", limit.as_secs());
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, why)));
        }
        Poll::Pending
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for StalledWrites<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for StalledWrites<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.timed(cx, poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.timed(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_flush(cx);
        self.timed(cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.timed(cx, poll)
    }
}

/// The responses of one connection that wait for their client to take more of them, and
/// since when: a response waits from when it is handed to hyper, and again after each piece
/// of its body, until hyper asks its body for the next piece.
#[derive(Default)]
pub struct ResponseWaits {
    next_id: AtomicU64,
    waiting: Mutex<HashMap<u64, Instant>>,
}

impl ResponseWaits {
    fn set(&self, id: u64, since: Option<Instant>) {
        if let Ok(mut waiting) = self.waiting.lock() {
            match since {
                Some(t) => waiting.insert(id, t),
                None => waiting.remove(&id),
            };
        }
    }

    /// When the longest-waiting response will have waited `limit`; `limit` from now when none
    /// waits (a response handed over meanwhile is then looked at before its own deadline).
    pub fn deadline(&self, limit: Duration) -> Instant {
        let oldest = self.waiting.lock().ok().and_then(|w| w.values().min().copied());
        oldest.unwrap_or_else(Instant::now) + limit
    }

    /// Whether a response has waited `limit` or longer for its client.
    pub fn stalled(&self, limit: Duration) -> bool {
        self.deadline(limit) <= Instant::now()
    }
}

/// The most of a body handed over at once. hyper asks for the next piece once it has room
/// for it (HTTP/1.1's write buffer, HTTP/2's flow-control window), so a client taking an
/// answer slowly but steadily asks for a piece well within the limit, where one 4 MB piece
/// would have waited for all of it to be sent.
const PIECE: usize = 64 * 1024;

/// A response body that tells its connection's [`ResponseWaits`] when it waits for the
/// client: from its creation and from each piece it yields until it is polled again. A body
/// waiting for its own producer (a chat between tokens: `Pending`) is not waiting for the
/// client. Large chunks are handed over [`PIECE`] at a time.
pub struct WatchedBody<S> {
    inner: S,
    rest: Bytes,
    waits: Arc<ResponseWaits>,
    id: u64,
}

impl<S> WatchedBody<S> {
    /// Watches `inner`, a response body just handed over.
    pub fn new(inner: S, waits: Arc<ResponseWaits>) -> WatchedBody<S> {
        let id = waits.next_id.fetch_add(1, Ordering::Relaxed);
        waits.set(id, Some(Instant::now()));
        WatchedBody { inner, rest: Bytes::new(), waits, id }
    }
}

impl<S, E> Stream for WatchedBody<S>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
{
    type Item = Result<Bytes, E>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.waits.set(self.id, None);
        let poll = if self.rest.is_empty() {
            Pin::new(&mut self.inner).poll_next(cx)
        } else {
            Poll::Ready(Some(Ok(std::mem::take(&mut self.rest))))
        };
        let poll = match poll {
            Poll::Ready(Some(Ok(mut chunk))) if chunk.len() > PIECE => {
                self.rest = chunk.split_off(PIECE);
                Poll::Ready(Some(Ok(chunk)))
            }
            other => other,
        };
        if let Poll::Ready(Some(_)) = poll {
            self.waits.set(self.id, Some(Instant::now()));
        }
        poll
    }
}

impl<S> Drop for WatchedBody<S> {
    fn drop(&mut self) {
        self.waits.set(self.id, None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn a_write_the_reader_never_takes_fails_after_the_limit_and_reading_resets_it() {
        let (near, mut far) = tokio::io::duplex(1024);
        let mut w = StalledWrites::new(near, Duration::from_millis(400));
        // Progress: the far side reads a little every 250 ms, so the writer waits 2 s in all,
        // but never 400 ms without progress.
        let reader = tokio::spawn(async move {
            let mut buf = vec![0u8; 1024];
            for _ in 0..8 {
                tokio::time::sleep(Duration::from_millis(250)).await;
                let _ = far.read(&mut buf).await;
            }
            far
        });
        w.write_all(&[7u8; 8 * 1024]).await.expect("a reader that keeps reading is never cut");
        let _far = reader.await.unwrap();
        // Nobody reads now: the buffer fills and the next write fails at the limit.
        let started = std::time::Instant::now();
        let err = w.write_all(&[7u8; 4096]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(400) && took < Duration::from_secs(2), "failed after {took:?}");
    }

    #[tokio::test]
    async fn a_response_waits_until_polled_and_not_while_its_producer_is_pending() {
        use futures::StreamExt;
        let waits = Arc::new(ResponseWaits::default());
        let limit = Duration::from_millis(300);
        let nap = |ms| tokio::time::sleep(Duration::from_millis(ms));
        let (tx, rx) = futures::channel::mpsc::unbounded::<Result<Bytes, ()>>();
        let mut body = WatchedBody::new(rx, waits.clone());
        // Handed over and never asked for anything: stalled at the limit.
        nap(150).await;
        assert!(!waits.stalled(limit));
        nap(200).await;
        assert!(waits.stalled(limit), "a response nobody asked anything of past the limit");
        // Asked, and waiting on its producer (a chat between tokens): not the client's fault.
        assert!(futures::poll!(body.next()).is_pending());
        nap(450).await;
        assert!(!waits.stalled(limit));
        // A piece handed over and not asked for again: stalled once the limit has passed.
        tx.unbounded_send(Ok(Bytes::from(vec![7u8; PIECE + 10]))).unwrap();
        assert_eq!(body.next().await.unwrap().unwrap().len(), PIECE, "a large chunk goes a piece at a time");
        assert!(!waits.stalled(limit));
        nap(350).await;
        assert!(waits.stalled(limit));
        assert_eq!(body.next().await.unwrap().unwrap().len(), 10);
        assert!(!waits.stalled(limit), "taking the next piece is progress");
        drop(body);
        assert!(!waits.stalled(limit), "a dropped response waits no more");
    }
}
