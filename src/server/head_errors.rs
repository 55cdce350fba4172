//! hyper's own answers to request heads it will not parse, in docdex's error contract.
//!
//! hyper refuses a URI over 65,534 bytes (`414`), a head over its field cap or read buffer
//! (`431`) and a head it cannot parse at all (`400`) before any service runs, with a bare head
//! (`connection: close`, `content-length: 0`) that no setting or hook lets docdex shape; every
//! other docdex error has a JSON body. A connection's stream is wrapped in [`ShapedErrors`],
//! which recognises exactly that head among the bytes hyper writes and sends docdex's answer in
//! its place: the same status, `connection: close` (hyper closes the connection after it), and
//! `{"error": {"code", "message"}}`. docdex's own errors (and the MCP transport's) have bodies,
//! so nothing docdex writes matches.

use super::error::ApiError;
use axum::http::StatusCode;
use std::io::IoSlice;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Header fields a request may carry (hyper's own default, which HTTP clients are used to).
pub const MAX_HEADERS: usize = 100;
/// Bytes of header fields a request may carry (names, values and their separators); a
/// client of docdex's API never needs more, and a larger head is either a mistake or a probe.
pub const MAX_HEADER_BYTES: usize = 64 * 1024;
/// hyper's longest URI (`MAX_URI_LEN` in its HTTP/1 parser).
const HYPER_MAX_URI: usize = 65_534;
/// Longer than any bare head hyper writes (its status line, three fields and a date).
const BARE_HEAD_MAX: usize = 160;

/// A connection's stream whose writes of hyper's bare `400`/`414`/`431` become docdex's answer.
pub struct ShapedErrors<S> {
    inner: S,
    /// docdex's answer being written, how much of it is out, and the length of hyper's head it
    /// stands for (reported as written once the answer is out).
    pending: Option<(Vec<u8>, usize, usize)>,
}

impl<S> ShapedErrors<S> {
    /// Wraps a connection's stream.
    pub fn new(inner: S) -> ShapedErrors<S> {
        ShapedErrors { inner, pending: None }
    }
}

/// docdex's answer in place of `head` when `head` is, whole, hyper's bare answer to a request
/// head it would not parse: the status line, then only `connection: close`, `content-length:
/// 0` and `date`. Any other bytes are left alone.
pub fn replacement(head: &[u8]) -> Option<Vec<u8>> {
    // Cheap first: this runs on every slice hyper writes, response bodies included.
    if head.len() > BARE_HEAD_MAX || !head.starts_with(b"HTTP/1.1 4") {
        return None;
    }
    let text = std::str::from_utf8(head).ok()?;
    let lines = text.strip_suffix("\r\n\r\n")?;
    let mut lines = lines.split("\r\n");
    let status = match lines.next()? {
        "HTTP/1.1 400 Bad Request" => StatusCode::BAD_REQUEST,
        "HTTP/1.1 414 URI Too Long" => StatusCode::URI_TOO_LONG,
        "HTTP/1.1 431 Request Header Fields Too Large" => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        _ => return None,
    };
    let mut date = None;
    let mut fields = 0;
    for line in lines {
        match line.split_once(": ")? {
            ("connection", "close") | ("content-length", "0") => fields += 1,
            ("date", d) => date = Some(d),
            _ => return None,
        }
    }
    if fields != 2 {
        return None;
    }
    let err = match status {
        StatusCode::BAD_REQUEST => ApiError::bad_request(
            "the request head is not HTTP/1.1 the server can read (its method, URI, version or a header field): \
             check the client sending it",
        ),
        StatusCode::URI_TOO_LONG => ApiError::new(
            status,
            "uri_too_long",
            format!("the request's URI is over {HYPER_MAX_URI} bytes: send long values in a JSON body"),
        ),
        _ => ApiError::new(
            status,
            "headers_too_large",
            format!(
                "the request head is over what the server reads (512 header fields or about 400 KiB); the limit \
                 is {} header fields and {} bytes of them: send fewer or smaller headers",
                MAX_HEADERS, MAX_HEADER_BYTES
            ),
        ),
    };
    let body = serde_json::to_vec(&err.body()).ok()?;
    let mut out = format!(
        "HTTP/1.1 {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        &text[9..text.find("\r\n")?],
        body.len()
    );
    if let Some(d) = date {
        out.push_str(&format!("date: {d}\r\n"));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(&body);
    Some(out)
}

impl<S: AsyncWrite + Unpin> ShapedErrors<S> {
    /// Writes the pending answer out; `Ready` with the length of hyper's head once it is all out.
    fn drive_pending(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<usize>> {
        while let Some((bytes, done, stands_for)) = &mut self.pending {
            if *done == bytes.len() {
                let n = *stands_for;
                self.pending = None;
                return Poll::Ready(Ok(n));
            }
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &bytes[*done..]))?;
            if n == 0 {
                return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
            }
            *done += n;
        }
        Poll::Ready(Ok(0))
    }

    /// Starts replacing `head` if it is hyper's bare answer.
    fn take(&mut self, head: &[u8]) -> bool {
        match replacement(head) {
            Some(bytes) => {
                tracing::debug!("answering an unparsable request head with the error contract");
                self.pending = Some((bytes, 0, head.len()));
                true
            }
            None => false,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for ShapedErrors<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for ShapedErrors<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        // hyper writes the same bytes again after a `Pending`: the answer under way stands for them.
        if self.pending.is_some() || self.take(buf) {
            return self.drive_pending(cx);
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    /// hyper queues a response's head and its body chunks as separate slices: the bare head is
    /// one slice, replaced when it comes first; slices before it are written as they are.
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let mut slices = bufs.iter().filter(|b| !b.is_empty());
        if self.pending.is_some() || slices.next().is_some_and(|first| self.take(first)) {
            return self.drive_pending(cx);
        }
        // Up to (not including) a bare head further on, which the next call then starts with.
        let end = bufs.iter().skip(1).position(|b| replacement(b).is_some()).map_or(bufs.len(), |i| i + 1);
        Pin::new(&mut self.inner).poll_write_vectored(cx, &bufs[..end])
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BARE_431: &[u8] = b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ncontent-length: 0\r\ndate: Sun, 29 Nov 2026 07:33:14 GMT\r\n\r\n";

    #[test]
    fn only_hyper_s_bare_head_is_replaced() {
        let out = String::from_utf8(replacement(BARE_431).unwrap()).unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"), "{head}");
        assert!(head.contains(&format!("content-length: {}", body.len())), "{head}");
        assert!(head.contains("date: Sun, 29 Nov 2026 07:33:14 GMT"), "{head}");
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"]["code"], "headers_too_large");
        let bare_414 = b"HTTP/1.1 414 URI Too Long\r\nconnection: close\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        assert!(String::from_utf8(replacement(bare_414).unwrap()).unwrap().contains("\"uri_too_long\""));
        // docdex's own 431 (a body), another status, a head with more fields, or one cut short.
        for other in [
            &b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\ncontent-length: 2\r\ndate: x\r\n\r\n{}"[..],
            b"HTTP/1.1 404 Not Found\r\nconnection: close\r\ncontent-length: 0\r\ndate: x\r\n\r\n",
            b"HTTP/1.1 414 URI Too Long\r\nconnection: close\r\ncontent-length: 0\r\nx-a: b\r\ndate: x\r\n\r\n",
            b"HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\ndate: x\r\n\r\n",
            &BARE_431[..BARE_431.len() - 2],
        ] {
            assert!(replacement(other).is_none(), "{}", String::from_utf8_lossy(other));
        }
    }
}
