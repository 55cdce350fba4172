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

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

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
}
