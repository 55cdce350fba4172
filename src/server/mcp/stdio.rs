//! MCP over stdio (`docdex mcp`). Stdout carries only JSON-RPC: logs go to
//! stderr (set up by the CLI before this runs).
//!
//! Stdin is read as lines of at most [`MAX_LINE_BYTES`], as bytes (no line can
//! grow memory without bound, and invalid UTF-8 cannot end the session). Every
//! line that is not a JSON-RPC message is answered here, so a client waiting for
//! a reply never hangs: `-32700` for text that is not JSON, `-32600` for JSON
//! that is not a JSON-RPC 2.0 request, notification or response (a batch
//! included), and for a line over the limit. Valid messages go on to rmcp; the
//! `initialize` one is also inspected for the docdex extras rmcp's typed params
//! drop (`rootUri`, `auth_token`). One writer task puts rmcp's messages and
//! these replies on stdout, whole lines each.

use super::{DocdexMcp, InitExtras, InitSlot};
use crate::server::state::AppState;
use rmcp::ServiceExt;
use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The longest message a client may send on one line.
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// Serves MCP on stdin/stdout until stdin closes or a signal arrives.
pub async fn serve(app: AppState) -> anyhow::Result<()> {
    let slot = InitSlot::default();
    let handler = DocdexMcp::new(app.clone(), slot.clone(), true);
    let (out_tx, out_rx) = mpsc::channel::<Vec<u8>>(64);
    let writer = tokio::spawn(write_lines(out_rx));
    // rmcp reads what the pump lets through and writes into a pipe the writer task drains.
    let (mut to_rmcp, rmcp_in) = tokio::io::duplex(256 * 1024);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(256 * 1024);
    let forward = tokio::spawn(forward_lines(BufReader::new(from_rmcp), out_tx.clone()));
    let pump = tokio::spawn(async move {
        let mut input = BufReader::new(tokio::io::stdin());
        loop {
            let line = match read_bounded_line(&mut input, MAX_LINE_BYTES).await {
                Ok(Line::Eof) | Err(_) => break,
                Ok(Line::TooLong(n)) => {
                    let reply = error_reply(
                        Value::Null,
                        -32600,
                        &format!("message too long: more than {MAX_LINE_BYTES} bytes on one line ({n} read); the limit is {MAX_LINE_BYTES} bytes"),
                    );
                    if out_tx.send(reply).await.is_err() {
                        break;
                    }
                    continue;
                }
                Ok(Line::Text(bytes)) => bytes,
            };
            match check_message(&line) {
                Checked::Empty => continue,
                Checked::Reply(reply) => {
                    if out_tx.send(reply).await.is_err() {
                        break;
                    }
                }
                Checked::Forward(v) => {
                    if let Some(extras) = InitExtras::from_message(&v) {
                        if let Ok(mut s) = slot.lock() {
                            *s = Some(extras);
                        }
                    }
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

/// What to do with a line.
pub enum Checked {
    /// Blank: nothing.
    Empty,
    /// A JSON-RPC message for rmcp.
    Forward(Value),
    /// Not one: this error reply goes back.
    Reply(Vec<u8>),
}

/// Sorts a line into a message for rmcp or the error the client gets instead.
pub fn check_message(line: &[u8]) -> Checked {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Checked::Empty;
    }
    let v: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => return Checked::Reply(error_reply(Value::Null, -32700, &format!("parse error: not JSON ({e})"))),
    };
    let Some(obj) = v.as_object() else {
        let why = if v.is_array() {
            "batches are not supported; send one message per line"
        } else {
            "a message must be a JSON object"
        };
        return Checked::Reply(error_reply(Value::Null, -32600, &format!("invalid request: {why}")));
    };
    let id = obj.get("id").cloned();
    let id_ok = id.as_ref().is_none_or(|i| i.is_string() || i.is_number() || i.is_null());
    let reply_id = if id_ok { id.clone().unwrap_or(Value::Null) } else { Value::Null };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Checked::Reply(error_reply(reply_id, -32600, "invalid request: `jsonrpc` must be \"2.0\""));
    }
    if !id_ok {
        return Checked::Reply(error_reply(Value::Null, -32600, "invalid request: `id` must be a string or a number"));
    }
    let is_request = obj.get("method").is_some_and(Value::is_string);
    let is_response = id.is_some() && (obj.contains_key("result") || obj.contains_key("error"));
    if !is_request && !is_response {
        return Checked::Reply(error_reply(
            reply_id,
            -32600,
            "invalid request: a message needs a string `method` (a request or notification) or an `id` with `result` or `error` (a response)",
        ));
    }
    if let Some(params) = obj.get("params") {
        if !params.is_object() && !params.is_array() {
            return Checked::Reply(error_reply(reply_id, -32600, "invalid request: `params` must be an object"));
        }
    }
    Checked::Forward(v)
}

/// A JSON-RPC error response, as one line's bytes.
pub fn error_reply(id: Value, code: i64, message: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
        .unwrap_or_default()
}

/// Passes rmcp's output on, line by line.
async fn forward_lines<R: AsyncBufRead + Unpin>(mut from: R, out: mpsc::Sender<Vec<u8>>) {
    loop {
        let mut line = Vec::new();
        match from.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                while line.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
                    line.pop();
                }
                if !line.is_empty() && out.send(line).await.is_err() {
                    break;
                }
            }
        }
    }
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

    fn reply_of(line: &str) -> Value {
        match check_message(line.as_bytes()) {
            Checked::Reply(r) => serde_json::from_slice(&r).unwrap(),
            _ => panic!("no reply for {line}"),
        }
    }

    #[test]
    fn non_messages_get_the_json_rpc_error_they_deserve() {
        assert_eq!(reply_of("hello")["error"]["code"], -32700);
        assert_eq!(reply_of("{\"jsonrpc\":\"2.0\",")["error"]["code"], -32700);
        assert_eq!(reply_of("[1,2]")["error"]["code"], -32600);
        assert_eq!(reply_of("42")["error"]["code"], -32600);
        let r = reply_of(r#"{"jsonrpc":"2.0","id":7}"#);
        assert_eq!((r["error"]["code"].as_i64(), r["id"].as_i64()), (Some(-32600), Some(7)));
        assert_eq!(reply_of(r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#)["error"]["code"], -32600);
        assert_eq!(reply_of(r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#)["id"], Value::Null);
        assert!(matches!(check_message(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#), Checked::Forward(_)));
        assert!(matches!(
            check_message(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Checked::Forward(_)
        ));
        assert!(matches!(check_message(b"  "), Checked::Empty));
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
