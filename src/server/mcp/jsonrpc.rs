//! Checking a client's JSON-RPC message before rmcp sees it, for every MCP
//! transport (stdio and streamable HTTP), so a client always gets an answer in
//! the JSON-RPC contract.
//!
//! rmcp answers what it cannot read outside that contract: over HTTP with a
//! `415` whose body is plain text (`fail to deserialize request body ...`),
//! over stdio with nothing at all. And its request type is an untagged enum
//! ending in a catch-all, so a request for a method it knows whose `params` do
//! not fit (`tools/call` without params, or with `"arguments": "x"`) lands in
//! the catch-all and is answered `-32601` (method not found) with the method as
//! the whole message. [`check_message`] sorts a message out first: `-32700` for
//! text that is not JSON, `-32600` for JSON that is not one JSON-RPC 2.0
//! message (a batch included), `-32602` naming what is wrong for a known
//! method's params rmcp would not read.

use rmcp::model::{
    CallToolRequest, ClientJsonRpcMessage, ClientRequest, CompleteRequest, ConstString, GetPromptRequest,
    InitializeRequest, JsonRpcMessage, ListPromptsRequest, ListResourceTemplatesRequest, ListResourcesRequest,
    ListToolsRequest, PingRequest, ReadResourceRequest, Request, RequestNoParam, RequestOptionalParam,
};
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

/// Not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON, but not a JSON-RPC 2.0 message this server takes.
pub const INVALID_REQUEST: i64 = -32600;
/// A known method whose `params` do not fit it.
pub const INVALID_PARAMS: i64 = -32602;
/// A method this server does not answer.
pub const METHOD_NOT_FOUND: i64 = -32601;

/// What the server answers, said after every method-not-found message so a client learns the
/// methods there are.
const ANSWERS: &str = "this MCP server answers initialize, ping, tools/list and tools/call (tools/list names the \
     tools, tools/call runs one); prompts/list, resources/list and resources/templates/list answer empty lists";

/// The message of the method-not-found error (`-32601`) for a method MCP does not define:
/// the method, and the ones this server answers (its only capability is tools).
pub fn unknown_method(method: &str) -> String {
    format!("unknown method {method}: {ANSWERS}")
}

/// The message of the method-not-found error (`-32601`) for an MCP method of a capability this
/// server does not declare (`prompts/get`, `resources/read`, `completion/complete`,
/// `logging/setLevel`, ...): what it lacks, and the methods there are. rmcp's message was the
/// method alone.
pub fn not_offered(method: &str) -> String {
    let lacks = match method.split('/').next().unwrap_or_default() {
        "prompts" => "has no prompts",
        "resources" => "has no resources",
        "completion" => "completes no arguments (it has no prompts or resource templates)",
        "logging" => "sends no log messages over MCP (it logs to stderr; DOCDEX_LOG sets the level)",
        "tasks" => "runs no tasks (it declares no tasks extension: a tools/call answers when it is done)",
        "skills" => "has no skills (it declares no skills extension)",
        "subscriptions" => "has nothing to subscribe to (no resources, no list changes)",
        _ => "does not offer it",
    };
    format!("{method} is not offered: this server {lacks} (its only capability is tools); {ANSWERS}")
}

/// The method-not-found message for a method rmcp could not read (its catch-all): an
/// extension method MCP defines (`tasks/*`, `skills/*`, `resources/directory/read`,
/// `subscriptions/listen`, sent with params rmcp does not take) is [`not_offered`], as it is
/// with well-formed params; anything else is [`unknown_method`]. It was "unknown method
/// tasks/get", as though MCP did not define it.
pub fn method_not_found(method: &str) -> String {
    if answered_by_rmcp(method) {
        not_offered(method)
    } else {
        unknown_method(method)
    }
}

/// Whether rmcp answers `method` itself, before any `ServerHandler` method could: the tasks
/// extension (`tasks/*`), the skills extension (`skills/*`, `resources/directory/read`), checked
/// against capabilities docdex does not declare, and `subscriptions/listen`, which rmcp refuses
/// when the handler accepts no subscription. Its answer was `-32601` with the method alone.
pub fn answered_by_rmcp(method: &str) -> bool {
    method.starts_with("tasks/")
        || method.starts_with("skills/")
        || matches!(method, "resources/directory/read" | "subscriptions/listen")
}

/// Method not found (`-32601`) saying what the server lacks ([`not_offered`]) for a request
/// (a message with a `method` and an `id`) of a method [`answered_by_rmcp`]; `None` for every
/// other message, notifications included (they get no answer).
pub fn not_offered_reply(message: &Value) -> Option<Rejection> {
    let method = message.get("method")?.as_str()?;
    let id = message.get("id").filter(|id| !id.is_null())?;
    answered_by_rmcp(method).then(|| Rejection::new(id.clone(), METHOD_NOT_FOUND, not_offered(method)))
}

/// A message refused before rmcp: the JSON-RPC error the client gets instead.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    /// The request's id when it had a usable one, else `null`.
    pub id: Value,
    /// The JSON-RPC error code.
    pub code: i64,
    /// What is wrong and what to send instead.
    pub message: String,
}

impl Rejection {
    /// A rejection with `id`, `code` and `message`.
    pub fn new(id: Value, code: i64, message: impl Into<String>) -> Rejection {
        Rejection { id, code, message: message.into() }
    }

    /// The JSON-RPC error response.
    pub fn to_json(&self) -> Value {
        error_object(self.id.clone(), self.code, &self.message)
    }

    /// The JSON-RPC error response as bytes (one stdio line, or an HTTP body).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(&self.to_json()).unwrap_or_default()
    }
}

/// A JSON-RPC error response.
pub fn error_object(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// What to do with a message.
#[derive(Debug)]
pub enum Checked {
    /// Blank: nothing.
    Empty,
    /// A JSON-RPC message for rmcp.
    Forward(Value),
    /// Not one rmcp should see: this error goes back instead.
    Reply(Rejection),
}

/// Sorts a message into one for rmcp or the error the client gets instead.
pub fn check_message(bytes: &[u8]) -> Checked {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Checked::Empty;
    }
    let v: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => return Checked::Reply(unreadable(bytes, &e)),
    };
    match check_value(&v, bytes) {
        Some(rejection) => Checked::Reply(rejection),
        None => Checked::Forward(v),
    }
}

/// The parse error for a message serde could not read. Two kinds keep their request's id, as
/// the message is JSON but for them: a string that is not Unicode (bytes that are not UTF-8, or a
/// lone surrogate escape such as `\ud800`, which a Python client writes for a file name it could
/// not decode), and nesting deeper than serde reads (128 levels). Answered with `id: null`, a
/// client waiting on its id waited forever.
fn unreadable(bytes: &[u8], e: &serde_json::Error) -> Rejection {
    let mended = without_lone_surrogates(&String::from_utf8_lossy(bytes));
    let deep = e.to_string().contains("recursion limit exceeded");
    let usable = |id: &Value| id.is_string() || id.is_number();
    let id = match deep {
        true => top_level_id(&mended),
        false => serde_json::from_str::<Value>(&mended).ok().and_then(|v| v.get("id").cloned()),
    };
    let why =
        if deep { "the message is nested more than 128 levels deep" } else { "a string in the message is not Unicode" };
    match id.filter(usable) {
        Some(id) => Rejection::new(
            id,
            PARSE_ERROR,
            format!(
                "parse error: {why} ({e}): send UTF-8 text, with no lone surrogate escapes (\\ud800 to \\udfff), nested at most 128 levels"
            ),
        ),
        None => Rejection::new(Value::Null, PARSE_ERROR, format!("parse error: not JSON ({e})")),
    }
}

/// The value of the top-level `id` of a JSON object, read without parsing what is nested (a
/// message too deep for serde); `None` when it is not a plain scalar.
fn top_level_id(text: &str) -> Option<Value> {
    let b = text.as_bytes();
    let (mut depth, mut i) = (0usize, 0usize);
    while i < b.len() {
        match b[i] {
            b'"' => {
                let end = string_end(b, i)?;
                let key = depth == 1 && &text[i..=end] == "\"id\"";
                if let Some(value) = text[end + 1..].trim_start().strip_prefix(':').filter(|_| key) {
                    let value = value.trim_start();
                    let stop = value.find([',', '}']).unwrap_or(value.len());
                    return serde_json::from_str(value[..stop].trim()).ok();
                }
                i = end;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    None
}

/// The index of the quote closing the JSON string opened at `start`.
fn string_end(b: &[u8], start: usize) -> Option<usize> {
    let mut j = start + 1;
    loop {
        match b.get(j)? {
            b'\\' => j += 2,
            b'"' => return Some(j),
            _ => j += 1,
        }
    }
}

/// `text` with every `\uD800`..`\uDFFF` escape written `\uFFFD`: pairs are broken too, which
/// does not matter to [`unreadable`], which reads only the id of the result.
fn without_lone_surrogates(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut i = 0;
    while i + 6 <= b.len() {
        let surrogate = b[i] == b'\\'
            && b[i + 1] == b'u'
            && b[i + 2].eq_ignore_ascii_case(&b'd')
            && matches!(b[i + 3].to_ascii_lowercase(), b'8'..=b'9' | b'a'..=b'f')
            && b[i + 4].is_ascii_hexdigit()
            && b[i + 5].is_ascii_hexdigit();
        if surrogate {
            out.push_str(&text[last..i]);
            out.push_str("\\ufffd");
            i += 6;
            last = i;
        } else {
            i += 1;
        }
    }
    out.push_str(&text[last..]);
    out
}

fn check_value(v: &Value, bytes: &[u8]) -> Option<Rejection> {
    let invalid = |id: Value, why: &str| Some(Rejection::new(id, INVALID_REQUEST, format!("invalid request: {why}")));
    let Some(obj) = v.as_object() else {
        return invalid(
            Value::Null,
            if v.is_array() {
                "batches are not supported; send one message at a time"
            } else {
                "a message must be a JSON object"
            },
        );
    };
    let id = obj.get("id").cloned();
    let id_ok = id.as_ref().is_none_or(|i| i.is_string() || i.is_number() || i.is_null());
    let reply_id = if id_ok { id.clone().unwrap_or(Value::Null) } else { Value::Null };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid(reply_id, "`jsonrpc` must be \"2.0\"");
    }
    if !id_ok {
        return invalid(Value::Null, "`id` must be a string or a number");
    }
    let is_request = obj.get("method").is_some_and(Value::is_string);
    let is_response = id.is_some() && (obj.contains_key("result") || obj.contains_key("error"));
    if !is_request && !is_response {
        return invalid(
            reply_id,
            "a message needs a string `method` (a request or notification) or an `id` with `result` or `error` (a response)",
        );
    }
    if let Some(params) = obj.get("params") {
        if !params.is_object() && !params.is_array() {
            return invalid(reply_id, "`params` must be an object");
        }
    }
    // What rmcp will make of it, read from the bytes as rmcp reads them: a message it cannot
    // read at all would be dropped (stdio) or answered in plain text (HTTP); a known method
    // that became the catch-all had bad params.
    match serde_json::from_slice::<ClientJsonRpcMessage>(bytes) {
        Err(e) => invalid(reply_id, &format!("not an MCP message this server reads ({e})")),
        Ok(JsonRpcMessage::Request(r)) => match &r.request {
            ClientRequest::CustomRequest(custom) => invalid_params(&custom.method, obj)
                .map(|why| Rejection::new(reply_id, INVALID_PARAMS, format!("invalid params: {why}"))),
            _ => None,
        },
        Ok(_) => None,
    }
}

/// A request type's method name, so the reason a message failed can be asked of the type
/// that owns its method.
trait Typed: DeserializeOwned {
    const METHOD: &'static str;
}

impl<M: ConstString + DeserializeOwned, P: DeserializeOwned> Typed for Request<M, P> {
    const METHOD: &'static str = M::VALUE;
}

impl<M: ConstString + DeserializeOwned, P: DeserializeOwned> Typed for RequestOptionalParam<M, P> {
    const METHOD: &'static str = M::VALUE;
}

impl<M: ConstString + DeserializeOwned> Typed for RequestNoParam<M> {
    const METHOD: &'static str = M::VALUE;
}

/// Why `method`'s params do not fit its type, when `method` is one of the MCP methods a
/// client sends a server (those rmcp marks deprecated left out); `None` for other methods
/// (answered method not found, with [`unknown_method`]'s words).
fn invalid_params(method: &str, msg: &Map<String, Value>) -> Option<String> {
    fn why<T: Typed>(method: &str, msg: &Map<String, Value>) -> Option<Option<String>> {
        if method != T::METHOD {
            return None;
        }
        let mut probe = Map::new();
        probe.insert("method".into(), Value::String(method.to_string()));
        if let Some(params) = msg.get("params") {
            probe.insert("params".into(), params.clone());
        }
        Some(serde_json::from_value::<T>(Value::Object(probe)).err().map(|e| describe(method, msg, &e)))
    }
    macro_rules! first {
        ($($t:ty),*) => { None $(.or_else(|| why::<$t>(method, msg)))* };
    }
    first!(
        InitializeRequest,
        PingRequest,
        CallToolRequest,
        ListToolsRequest,
        GetPromptRequest,
        ListPromptsRequest,
        ListResourcesRequest,
        ListResourceTemplatesRequest,
        ReadResourceRequest,
        CompleteRequest
    )
    .flatten()
}

/// The reason in words: the field at fault and the shape expected.
fn describe(method: &str, msg: &Map<String, Value>, e: &serde_json::Error) -> String {
    let params = msg.get("params");
    let shape = match method {
        "tools/call" => " (expected `params`: {\"name\": \"<tool>\", \"arguments\": {...}}; tools/list names the tools)",
        "initialize" => {
            " (expected `params`: {\"protocolVersion\": \"2025-06-18\", \"capabilities\": {}, \"clientInfo\": {\"name\": ..., \"version\": ...}})"
        }
        _ => "",
    };
    if params.is_none() {
        return format!("{method} needs `params`{shape}");
    }
    if method == "tools/call" {
        if let Some(args) = params.and_then(|p| p.get("arguments")).filter(|a| !a.is_object() && !a.is_null()) {
            return format!(
                "tools/call `arguments` must be an object of the tool's arguments, not {}{shape}",
                kind(args)
            );
        }
        if !params.and_then(|p| p.get("name")).is_some_and(Value::is_string) {
            return format!("tools/call needs the tool's `name`, a string{shape}");
        }
    }
    format!("{method}: {e}{shape}")
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request that is JSON but for a string that is not Unicode is a parse error answered
    /// with its own id (it was `null`, and the client waited on its id forever).
    #[test]
    fn a_string_that_is_not_unicode_keeps_the_request_id() {
        let lone = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"query":"\ud800x"}}}"#;
        let bytes: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"ping\",\"params\":{\"q\":\"\xff\xfe\"}}";
        for (line, id) in [(&lone[..], json!(7)), (bytes, json!("a"))] {
            let Checked::Reply(r) = check_message(line) else { panic!("forwarded") };
            assert_eq!((r.id, r.code), (id, PARSE_ERROR), "{}", r.message);
            assert!(r.message.contains("not Unicode") && r.message.contains("UTF-8"), "{}", r.message);
        }
        // Nested past serde's limit: the id is read at the top level.
        let deep = format!(
            r#"{{"jsonrpc":"2.0","method":"ping","params":{{"a":{}1{}}},"id":"d 1"}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        let Checked::Reply(r) = check_message(deep.as_bytes()) else { panic!("forwarded") };
        assert_eq!((r.id, r.code), (json!("d 1"), PARSE_ERROR), "{}", r.message);
        assert!(r.message.contains("nested more than 128 levels"), "{}", r.message);
        assert_eq!(top_level_id(r#"{"x":{"id":1},"m":"id","s":"\"id\":2","id" : 3}"#), Some(json!(3)));
        // Not JSON at all: no id to find.
        let Checked::Reply(r) = check_message(br#"{"id": 3, "method": "#) else { panic!("forwarded") };
        assert_eq!((r.id, r.code), (Value::Null, PARSE_ERROR));
        // A pair is JSON: passed on.
        assert!(matches!(
            check_message(br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"q":"\ud83d\ude00"}}"#),
            Checked::Forward(_)
        ));
        assert_eq!(without_lone_surrogates(r#"a\uD800b\\u0041"#), r#"a\ufffdb\\u0041"#);
    }

    fn reply_of(line: &str) -> Rejection {
        match check_message(line.as_bytes()) {
            Checked::Reply(r) => r,
            other => panic!("no reply for {line}: {other:?}"),
        }
    }

    #[test]
    fn non_messages_get_the_json_rpc_error_they_deserve() {
        assert_eq!(reply_of("hello").code, PARSE_ERROR);
        assert_eq!(reply_of("{\"jsonrpc\":\"2.0\",").code, PARSE_ERROR);
        assert_eq!(reply_of("[1,2]").code, INVALID_REQUEST);
        assert_eq!(reply_of("42").code, INVALID_REQUEST);
        let r = reply_of(r#"{"jsonrpc":"2.0","id":7}"#);
        assert_eq!((r.code, r.id), (INVALID_REQUEST, json!(7)));
        assert_eq!(reply_of(r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#).code, INVALID_REQUEST);
        assert_eq!(reply_of(r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#).id, Value::Null);
        assert!(matches!(check_message(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#), Checked::Forward(_)));
        assert!(matches!(
            check_message(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Checked::Forward(_)
        ));
        assert!(matches!(check_message(b"  "), Checked::Empty));
    }

    #[test]
    fn a_known_method_with_params_rmcp_cannot_read_is_invalid_params_naming_the_fault() {
        let r = reply_of(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#);
        assert_eq!((r.code, &r.id), (INVALID_PARAMS, &json!(1)), "{r:?}");
        assert!(r.message.contains("tools/call needs `params`"), "{}", r.message);
        let r = reply_of(
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"docdex_search","arguments":"x"}}"#,
        );
        assert_eq!((r.code, &r.id), (INVALID_PARAMS, &json!("a")), "{r:?}");
        assert!(r.message.contains("`arguments` must be an object") && r.message.contains("a string"), "{}", r.message);
        let r = reply_of(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{}}}"#);
        assert!(r.code == INVALID_PARAMS && r.message.contains("`name`"), "{r:?}");
        let r = reply_of(r#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{}}"#);
        assert!(r.code == INVALID_PARAMS && r.message.starts_with("invalid params: initialize"), "{r:?}");
        // Well-formed requests, and methods rmcp does not type, go on to rmcp.
        for ok in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"docdex_search","arguments":{"query":"q"}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"docdex_status"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"no/such/method","params":{"a":1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
        ] {
            assert!(matches!(check_message(ok.as_bytes()), Checked::Forward(_)), "{ok}");
        }
    }
}
