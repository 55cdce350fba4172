//! `docdex mcp` over stdio when docdex cannot start (a `config.toml` that does not parse, a
//! state directory it cannot write). Exiting at once, the process left an MCP client only a
//! closed pipe: hosts show "connection closed" and the reason sat on stderr, which many drop.
//! Here every request, `initialize` first, is answered with a JSON-RPC error whose message is
//! that reason, until stdin closes; notifications and responses get nothing, as JSON-RPC says.

use super::jsonrpc::{check_message, error_object, Checked};
use super::stdio::MAX_LINE_BYTES;
use serde_json::Value;
use std::io::{BufRead, Read, Write};

/// The JSON-RPC error code of the answer: a server error (the range -32000 to -32099 is the
/// implementation's), not one of the protocol's own codes.
pub const CANNOT_START: i64 = -32000;

/// Answers each request read from `input` with `message` under [`CANNOT_START`], until
/// `input` ends or `output` cannot be written (the client went away): both end the session
/// normally. A line over [`MAX_LINE_BYTES`] is skipped to its end and answered with `id: null`.
pub fn answer_until_closed(message: &str, input: &mut impl BufRead, output: &mut impl Write) -> std::io::Result<()> {
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = input.by_ref().take(MAX_LINE_BYTES as u64).read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(());
        }
        let id = if n == MAX_LINE_BYTES && line.last() != Some(&b'\n') {
            input.skip_until(b'\n')?;
            Some(Value::Null)
        } else {
            request_id(&line)
        };
        let Some(id) = id else { continue };
        let mut reply = error_object(id, CANNOT_START, message).to_string();
        reply.push('\n');
        if output.write_all(reply.as_bytes()).and_then(|()| output.flush()).is_err() {
            return Ok(());
        }
    }
}

/// The id to answer a line under, or None when the line wants no answer (blank, a
/// notification, a response). A line that is not a JSON-RPC request is answered too (with the
/// id it had, else `null`): the reason docdex cannot start is what the client needs to see.
fn request_id(line: &[u8]) -> Option<Value> {
    match check_message(line) {
        Checked::Empty => None,
        Checked::Reply(rejection) => Some(rejection.id),
        Checked::Forward(msg) => match (msg.get("method"), msg.get("id")) {
            (Some(_), Some(id)) => Some(id.clone()),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answers(input: &str) -> Vec<Value> {
        let mut out = Vec::new();
        answer_until_closed("invalid config /h/config.toml: bad", &mut input.as_bytes(), &mut out).unwrap();
        String::from_utf8(out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    #[test]
    fn requests_get_the_reason_and_notifications_nothing() {
        let got = answers(concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
            "\n\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":"b","method":"tools/list"}"#,
            "\nnot json\n",
        ));
        let ids: Vec<Value> = got.iter().map(|v| v["id"].clone()).collect();
        assert_eq!(ids, vec![json!(1), json!("b"), Value::Null]);
        for v in &got {
            assert_eq!(v["error"]["code"], CANNOT_START, "{v}");
            assert_eq!(v["error"]["message"], "invalid config /h/config.toml: bad", "{v}");
        }
    }

    #[test]
    fn a_line_over_the_limit_is_skipped_and_answered_with_a_null_id() {
        let long = format!("{}\n{}\n", "x".repeat(MAX_LINE_BYTES + 10), r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#);
        let ids: Vec<Value> = answers(&long).iter().map(|v| v["id"].clone()).collect();
        assert_eq!(ids, vec![Value::Null, json!(7)]);
    }
}
