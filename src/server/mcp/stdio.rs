//! MCP over stdio (`docdex mcp`). Stdout carries only JSON-RPC: logs go to
//! stderr (set up by the CLI before this runs).
//!
//! Stdin is read as lines of at most [`MAX_LINE_BYTES`], as bytes (no line can
//! grow memory without bound, and invalid UTF-8 cannot end the session). Every
//! line that is not a JSON-RPC message is answered here, so a client waiting for
//! a reply never hangs: `-32700` for text that is not JSON, `-32600` for JSON
//! that is not a JSON-RPC 2.0 request, notification or response (a batch
//! included), and for a line over the limit, `-32602` for a known method's
//! params rmcp cannot read ([`super::jsonrpc`]). Valid messages go on to rmcp; the
//! `initialize` one is also inspected for the docdex extras rmcp's typed params
//! drop (`rootUri`, `auth_token`). One writer task puts rmcp's messages and
//! these replies on stdout, whole lines each.
//!
//! At most [`MAX_IN_FLIGHT`] requests are with rmcp at once: rmcp reads requests as fast as
//! they come and holds every one and its answer until stdout takes it, so a client that wrote
//! requests without reading its replies grew the process without bound (100,000 `tools/list`
//! took it past 2.6 GB in 16 s). Past the limit stdin is not read until an answer goes out:
//! the client's writes wait, as on any pipe.

use super::jsonrpc::{check_message, Checked, Rejection, INVALID_REQUEST};
use super::{DocdexMcp, InitExtras, InitSlot};
use crate::server::state::AppState;
use rmcp::ServiceExt;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, Notify};

/// The longest message a client may send on one line.
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// Requests rmcp may hold at once, unanswered or answered but not yet taken off its output
/// (the SSE transport's `MAX_BACKLOG` alike); an agent has a few in flight.
pub const MAX_IN_FLIGHT: usize = 64;

/// Requests handed to rmcp whose answers have not come out of it, by id as JSON text (a
/// client may reuse an id, so each counts its requests).
#[derive(Debug, Default)]
pub struct InFlight {
    ids: Mutex<(HashMap<String, usize>, usize)>,
    freed: Notify,
}

impl InFlight {
    /// Counts a client message in before it goes to rmcp: a request waits for a place while
    /// `max` are taken; a `notifications/cancelled` frees its request's place (rmcp sends no
    /// answer for it).
    pub async fn admit(&self, msg: &Value, max: usize) {
        match (msg.get("method").and_then(Value::as_str), msg.get("id")) {
            (Some(_), Some(id)) => {
                let key = id.to_string();
                while !self.try_take(&key, max) {
                    self.freed.notified().await;
                }
            }
            (Some("notifications/cancelled"), None) => {
                if let Some(id) = msg.pointer("/params/requestId") {
                    self.answered(id);
                }
            }
            _ => {}
        }
    }

    fn try_take(&self, key: &str, max: usize) -> bool {
        let mut guard = self.ids.lock().unwrap_or_else(|p| p.into_inner());
        let (ids, total) = &mut *guard;
        if *total >= max {
            return false;
        }
        *ids.entry(key.to_string()).or_default() += 1;
        *total += 1;
        true
    }

    /// Frees the place of the request `id` (its answer left rmcp, or it was cancelled).
    pub fn answered(&self, id: &Value) {
        let mut guard = self.ids.lock().unwrap_or_else(|p| p.into_inner());
        let (ids, total) = &mut *guard;
        let key = id.to_string();
        if let Some(n) = ids.get_mut(&key) {
            *n -= 1;
            if *n == 0 {
                ids.remove(&key);
            }
            *total -= 1;
            self.freed.notify_one();
        }
    }

    /// Requests counted in.
    pub fn len(&self) -> usize {
        self.ids.lock().unwrap_or_else(|p| p.into_inner()).1
    }

    /// True when no request is counted in.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Serves MCP on stdin/stdout until stdin closes or a signal arrives.
pub async fn serve(app: AppState) -> anyhow::Result<()> {
    let slot = InitSlot::default();
    let handler = super::service::McpService(DocdexMcp::new(app.clone(), slot.clone(), true));
    let (out_tx, out_rx) = mpsc::channel::<Vec<u8>>(64);
    let writer = tokio::spawn(write_lines(out_rx));
    // rmcp reads what the pump lets through and writes into a pipe the writer task drains.
    let (mut to_rmcp, rmcp_in) = tokio::io::duplex(256 * 1024);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(256 * 1024);
    let in_flight = Arc::new(InFlight::default());
    let forward = tokio::spawn(forward_lines(BufReader::new(from_rmcp), out_tx.clone(), in_flight.clone()));
    let pump = tokio::spawn(async move {
        let mut input = BufReader::new(tokio::io::stdin());
        let mut initialize_seen = false;
        loop {
            let line = match read_bounded_line(&mut input, MAX_LINE_BYTES).await {
                Ok(Line::Eof) | Err(_) => break,
                Ok(Line::TooLong(n)) => {
                    let reply = Rejection::new(
                        Value::Null,
                        INVALID_REQUEST,
                        format!("message too long: more than {MAX_LINE_BYTES} bytes on one line ({n} read); the limit is {MAX_LINE_BYTES} bytes"),
                    )
                    .to_bytes();
                    if out_tx.send(reply).await.is_err() {
                        break;
                    }
                    continue;
                }
                Ok(Line::Text(bytes)) => bytes,
            };
            match check_message(&line) {
                Checked::Empty => continue,
                Checked::Reply(rejection) => {
                    if out_tx.send(rejection.to_bytes()).await.is_err() {
                        break;
                    }
                }
                Checked::Forward(v) => {
                    if let Some(rejection) = before_initialize(&v, &mut initialize_seen) {
                        if out_tx.send(rejection.to_bytes()).await.is_err() {
                            break;
                        }
                        continue;
                    }
                    if let Some(extras) = InitExtras::from_message(&v) {
                        if let Ok(mut s) = slot.lock() {
                            *s = Some(extras);
                        }
                    }
                    in_flight.admit(&v, MAX_IN_FLIGHT).await;
                    if to_rmcp.write_all(&line).await.is_err() || to_rmcp.write_all(b"\n").await.is_err() {
                        break;
                    }
                }
            }
        }
        // Dropping the writer closes rmcp's input: the session ends.
    });
    let running = match handler.serve((rmcp_in, rmcp_out)).await {
        Ok(r) => r,
        Err(e) => {
            // A refused initialize (bad token, unknown repo) was already answered to the client.
            tracing::warn!("MCP session did not start: {e}");
            pump.abort();
            let _ = forward.await;
            let _ = writer.await;
            return Ok(());
        }
    };
    let ct = running.cancellation_token();
    tokio::select! {
        r = running.waiting() => { if let Err(e) = r { tracing::warn!("MCP session ended: {e}"); } }
        _ = crate::server::shutdown::shutdown_signal() => ct.cancel(),
    }
    pump.abort();
    // rmcp's output pipe closes with the session; then every reply queued is written.
    let _ = forward.await;
    let _ = writer.await;
    Ok(())
}

/// JSON-RPC's "server not initialized" (LSP's code, which MCP clients know).
const SERVER_NOT_INITIALIZED: i64 = -32002;

/// The reply to a request sent before `initialize`: the MCP handshake comes first. (rmcp
/// answered such a request with a complaint about missing `_meta` protocol fields, which
/// tells a client author nothing about the order.) Notifications and `ping` pass.
fn before_initialize(message: &Value, initialize_seen: &mut bool) -> Option<Rejection> {
    if *initialize_seen {
        return None;
    }
    let method = message.get("method").and_then(Value::as_str)?;
    if method == "initialize" {
        *initialize_seen = true;
        return None;
    }
    let id = message.get("id").filter(|id| !id.is_null())?;
    (method != "ping").then(|| {
        Rejection::new(
            id.clone(),
            SERVER_NOT_INITIALIZED,
            format!("`{method}` before `initialize`: send `initialize` first, then `notifications/initialized` (the MCP handshake)"),
        )
    })
}

/// One line of input.
#[derive(Debug, PartialEq)]
pub enum Line {
    /// The line's bytes, without the newline.
    Text(Vec<u8>),
    /// A line longer than the limit, skipped to its end (how many bytes it had).
    TooLong(usize),
    /// End of input.
    Eof,
}

/// Reads one line of at most `max` bytes; a longer one is read to its end and discarded,
/// holding no more than `max` bytes at any time.
pub async fn read_bounded_line<R: AsyncBufRead + Unpin>(r: &mut R, max: usize) -> std::io::Result<Line> {
    let mut line = Vec::new();
    let mut seen = 0usize;
    let mut too_long = false;
    loop {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            return Ok(match (seen, too_long) {
                (0, _) => Line::Eof,
                (n, true) => Line::TooLong(n),
                _ => Line::Text(line),
            });
        }
        let (chunk, done) = match memchr::memchr(b'\n', buf) {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        seen += chunk.len();
        if !too_long {
            if line.len() + chunk.len() > max {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let consumed = done.unwrap_or(buf.len());
        r.consume(consumed);
        if done.is_some() {
            if too_long {
                return Ok(Line::TooLong(seen));
            }
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Line::Text(line));
        }
    }
}

/// Passes rmcp's output on, line by line; an answer frees its request's place.
async fn forward_lines<R: AsyncBufRead + Unpin>(mut from: R, out: mpsc::Sender<Vec<u8>>, in_flight: Arc<InFlight>) {
    loop {
        let mut line = Vec::new();
        match from.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                while line.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                    line.pop();
                }
                if let Some(id) = answer_id(&line) {
                    in_flight.answered(&id);
                }
                if !line.is_empty() && out.send(line).await.is_err() {
                    break;
                }
            }
        }
    }
}

/// The id of an answer (a message with an id and no method) rmcp wrote.
fn answer_id(line: &[u8]) -> Option<Value> {
    #[derive(serde::Deserialize)]
    struct Head {
        id: Option<Value>,
        method: Option<serde::de::IgnoredAny>,
    }
    let head: Head = serde_json::from_slice(line).ok()?;
    if head.method.is_some() {
        return None;
    }
    head.id
}

/// Writes each message as one line on stdout.
async fn write_lines(mut rx: mpsc::Receiver<Vec<u8>>) {
    let mut stdout = tokio::io::stdout();
    while let Some(mut msg) = rx.recv().await {
        msg.push(b'\n');
        if stdout.write_all(&msg).await.is_err() || stdout.flush().await.is_err() {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    #[tokio::test]
    async fn requests_past_the_limit_wait_for_an_answer_and_reused_ids_count_each() {
        let in_flight = Arc::new(InFlight::default());
        let request = |id: i64| json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"});
        in_flight.admit(&request(1), 3).await;
        in_flight.admit(&request(1), 3).await;
        in_flight.admit(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), 3).await;
        in_flight.admit(&request(2), 3).await;
        assert_eq!(in_flight.len(), 3);
        let waiting = tokio::spawn({
            let in_flight = in_flight.clone();
            async move { in_flight.admit(&request(3), 3).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "a fourth request went through");
        in_flight.answered(&json!(9));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "an answer to no request freed a place");
        in_flight.answered(&json!(1));
        tokio::time::timeout(Duration::from_secs(5), waiting).await.unwrap().unwrap();
        // id 1 is still in flight once: a cancel frees it, and answers empty the count.
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
        in_flight.admit(&cancel, 3).await;
        in_flight.answered(&json!(2));
        in_flight.answered(&json!(3));
        assert!(in_flight.is_empty());
    }

    #[test]
    fn only_answers_free_a_place() {
        assert_eq!(answer_id(br#"{"jsonrpc":"2.0","id":7,"result":{}}"#), Some(json!(7)));
        assert_eq!(answer_id(br#"{"jsonrpc":"2.0","id":"a","error":{"code":1,"message":"x"}}"#), Some(json!("a")));
        assert_eq!(answer_id(br#"{"jsonrpc":"2.0","id":8,"method":"roots/list"}"#), None);
        assert_eq!(answer_id(br#"{"jsonrpc":"2.0","method":"notifications/progress"}"#), None);
        assert_eq!(answer_id(b"not json"), None);
    }

    #[tokio::test]
    async fn lines_are_bounded_and_bytes_need_not_be_utf8() {
        let input: Vec<u8> = [&b"short\n"[..], &[b'x'; 100], b"\n\xff\xfe\n", b"tail"].concat();
        let mut r = BufReader::with_capacity(16, &input[..]);
        assert_eq!(read_bounded_line(&mut r, 50).await.unwrap(), Line::Text(b"short".to_vec()));
        assert_eq!(read_bounded_line(&mut r, 50).await.unwrap(), Line::TooLong(100));
        assert_eq!(read_bounded_line(&mut r, 50).await.unwrap(), Line::Text(vec![0xff, 0xfe]));
        assert_eq!(read_bounded_line(&mut r, 50).await.unwrap(), Line::Text(b"tail".to_vec()));
        assert_eq!(read_bounded_line(&mut r, 50).await.unwrap(), Line::Eof);
    }
}
