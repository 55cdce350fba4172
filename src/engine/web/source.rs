//! A document read as its source from the browser's own response. A document the browser does
//! not render as a page (XML, a text file, a `text/csv` Chromium would download;
//! `fetch::read_as_source`) is paused when its headers arrive and its body is read here, in
//! bounded chunks, from that same response. It used to be failed in the tab and fetched again
//! over plain HTTP: two requests, and against a server that answers one connection at a time
//! the second waited behind the browser's idle connection until the page timed out.

use headless_chrome::browser::transport::{SessionId, Transport};
use headless_chrome::protocol::cdp::Fetch::TakeResponseBodyAsStream;
use headless_chrome::protocol::cdp::IO;
use std::time::Instant;

/// Bytes asked for per read of the body's stream.
const CHUNK: u32 = 64 * 1024;

/// Why a body was not read whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum BodyFailure {
    /// More than the cap arrived.
    TooLarge,
    /// The deadline passed first.
    TimedOut,
    /// The browser would not hand the body over (the tab closed, the connection broke).
    Browser(String),
}

/// The body of the paused response `request_id`, as the server sent it (decompressed), at most
/// `max_bytes`, read before `deadline`. The request can only be failed afterwards (the
/// browser no longer holds its body), which the caller does: the tab never renders it.
pub(super) fn read_body(
    transport: &Transport,
    session: &SessionId,
    request_id: &str,
    max_bytes: u64,
    deadline: Instant,
) -> Result<Vec<u8>, BodyFailure> {
    let browser = |e: anyhow::Error| BodyFailure::Browser(e.to_string());
    let take = TakeResponseBodyAsStream { request_id: request_id.to_string() };
    let handle = transport.call_method_on_target(session.clone(), take).map_err(browser)?.stream;
    let read = read_stream(transport, session, &handle, max_bytes, deadline);
    let _ = transport.call_method_on_target(session.clone(), IO::Close { handle });
    read
}

fn read_stream(
    transport: &Transport,
    session: &SessionId,
    handle: &str,
    max_bytes: u64,
    deadline: Instant,
) -> Result<Vec<u8>, BodyFailure> {
    let mut body = Vec::new();
    loop {
        if Instant::now() >= deadline {
            return Err(BodyFailure::TimedOut);
        }
        let ask = IO::Read { handle: handle.to_string(), offset: None, size: Some(CHUNK) };
        let chunk =
            transport.call_method_on_target(session.clone(), ask).map_err(|e| BodyFailure::Browser(e.to_string()))?;
        // A chunk comes as text when it is valid UTF-8 (its bytes are then the bytes sent),
        // else in base64.
        if chunk.base_64_encoded == Some(true) {
            let bytes = decode_base64(&chunk.data)
                .ok_or_else(|| BodyFailure::Browser("the browser sent a body chunk that is not base64".into()))?;
            body.extend_from_slice(&bytes);
        } else {
            body.extend_from_slice(chunk.data.as_bytes());
        }
        if body.len() as u64 > max_bytes {
            return Err(BodyFailure::TooLarge);
        }
        if chunk.eof {
            return Ok(body);
        }
    }
}

/// Standard base64 (`A-Z a-z 0-9 + /`, `=` padding), as DevTools sends binary data; `None` for
/// anything else.
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use super::decode_base64;

    #[test]
    fn base64_decodes_as_devtools_sends_it() {
        assert_eq!(decode_base64("").unwrap(), b"");
        assert_eq!(decode_base64("Zg==").unwrap(), b"f");
        assert_eq!(decode_base64("Zm8=").unwrap(), b"fo");
        assert_eq!(decode_base64("Zm9v").unwrap(), b"foo");
        assert_eq!(decode_base64("PGE+Y2Fm6TwvYT4/").unwrap(), b"<a>caf\xe9</a>?");
        for bad in ["Zm9v!", "Z", "Zg===", "Zm 9v"] {
            assert_eq!(decode_base64(bad), None, "{bad}");
        }
    }
}
