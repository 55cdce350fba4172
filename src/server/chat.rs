//! `POST /v1/chat/completions`: the OpenAI chat API over the waterfall chat
//! ([`Engine::chat`]), so any OpenAI client can ask docdex about a repository.
//!
//! The conversation becomes a `ChatTurnRequest` (the last user message is the question, the
//! messages before it the history); docdex's own options ride in a `docdex` object in the
//! body (`repo`, `agent_id`, `force_web`, `no_web`, `diff`, `session_id`). The answer is the
//! OpenAI shape plus a `docdex` extension field with the session, sources, model outcome and
//! the waterfall trace: in the response, or in the final chunk of a stream.
//!
//! Streaming waits for the first answer token before it sends headers, so everything that can
//! go wrong before the model speaks (unknown repo, bad input, no model) is a proper HTTP error
//! with the error contract; a failure after that arrives as an OpenAI-style `{"error": ...}`
//! chunk. A client that disconnects stops the model: the turn's [`CancelToken`] is tripped when
//! the request's future or its response stream is dropped (hyper drops them when the
//! connection closes), even while the model is still silent.

use super::error::ApiError;
use super::extract::{confine, selector, ApiJson, ApiQuery, JsonBody, RepoQuery};
use super::openapi::{Operation, Routes};
use super::state::AppState;
use crate::engine::protocol::{
    AnswerStatus, CancelToken, ChatSource, ChatTrace, ChatTurnEvent, ChatTurnRequest, ChatTurnResponse, DiffRequest,
    LlmOutcome, Sampling, WebPolicy,
};
use crate::engine::protocol::{ChatMessage, Role};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::convert::Infallible;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::time::Duration;

/// Header naming the agent that asks (recorded in the reasoning DAG).
pub const AGENT_HEADER: &str = "x-docdex-agent-id";

/// Model names that mean "the configured default" (`[llm] default_model`).
const DEFAULT_MODEL_NAMES: [&str; 3] = ["", "docdex", "default"];

/// `POST /v1/chat/completions` body: the OpenAI request plus the `docdex` options. Sampling
/// fields the model server takes (`temperature`, `top_p`, the two penalties, `stop`,
/// `max_tokens`) are passed to it; `seed`, `tools`, `logprobs` and `user` are accepted and
/// ignored; ones the answer could not honour (`n` above 1, an unknown `response_format`, a
/// `tool_choice` forcing a tool call) are refused rather than silently dropped.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ChatCompletionRequest {
    /// The chat model; `docdex`, `default` or absent use `[llm] default_model`.
    #[serde(default)]
    pub model: Option<String>,
    /// The conversation, oldest first; the last `user` message is the question.
    pub messages: Vec<OpenAiMessage>,
    /// Stream the answer as server-sent `chat.completion.chunk` events ending with `data: [DONE]`.
    #[serde(default)]
    pub stream: bool,
    /// Streaming options.
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    /// Cap on generated tokens (`max_completion_tokens` is accepted too).
    #[serde(default, alias = "max_completion_tokens")]
    pub max_tokens: Option<u32>,
    /// `temperature` (0 to 2), `top_p` (0 to 1) and the two penalties (-2 to 2), at the top
    /// level of the body as OpenAI takes them.
    #[serde(flatten)]
    pub sampling: Sampling,
    /// `"auto"` or `"none"`: docdex calls no tools, so `"required"` or a named function (which
    /// would force a call) is refused.
    #[serde(default)]
    pub tool_choice: Option<Value>,
    /// How many answers: docdex gives one, so only 1 (or absent) is accepted.
    #[serde(default)]
    pub n: Option<u32>,
    /// `{"type": "text"}`, `{"type": "json_object"}` (any JSON object) or `{"type":
    /// "json_schema", "json_schema": {"schema": {...}}}` (an answer following the schema).
    #[serde(default)]
    pub response_format: Option<Value>,
    /// Where the answer ends: a string or up to 4 strings the model stops at (not included).
    #[serde(default)]
    pub stop: Option<Value>,
    /// docdex's options.
    #[serde(default)]
    pub docdex: Option<DocdexChatOptions>,
}

/// Open: OpenAI clients send fields docdex does not use (`seed`, `store`, `metadata`, ...),
/// which OpenAI's own API accepts; its `docdex` object is checked instead.
impl JsonBody for ChatCompletionRequest {
    const STRICT: bool = false;
}

/// OpenAI's `stop`: absent or null, a string, or an array of up to 4 strings.
fn stop_sequences(stop: Option<&Value>) -> Result<Vec<String>, ApiError> {
    let bad =
        || ApiError::bad_request("stop must be a string or an array of up to 4 non-empty strings").on_param("stop");
    let list: Vec<String> = match stop {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => {
            items.iter().map(|v| v.as_str().map(str::to_string)).collect::<Option<Vec<_>>>().ok_or_else(bad)?
        }
        Some(_) => return Err(bad()),
    };
    if list.len() > 4 || list.iter().any(|s| s.is_empty()) {
        return Err(bad());
    }
    Ok(list)
}

/// OpenAI's `tool_choice`: absent, `"auto"` or `"none"` are what docdex does (it calls no
/// tool); `"required"` or a named function would force a call docdex never makes, so the
/// caller's loop is told now instead of getting a plain answer that breaks its contract.
fn tool_choice(choice: Option<&Value>) -> Result<(), ApiError> {
    match choice {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(s)) if s == "auto" || s == "none" => Ok(()),
        Some(other) => Err(ApiError::bad_request(format!(
            "tool_choice {other}: docdex answers from the repository and calls no tools, so it cannot force a tool call; leave tool_choice out, or use \"auto\" or \"none\""
        ))
        .on_param("tool_choice")),
    }
}

/// One OpenAI message.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct OpenAiMessage {
    /// `system`, `developer`, `user`, `assistant`, or `tool` (a tool's result, kept in the
    /// history as what the caller's tool returned; `function` is its old name).
    pub role: String,
    /// A string, or an array of parts of which the `text` ones are used.
    #[serde(default)]
    pub content: Option<Value>,
    /// The tool calls an assistant message made (`function.name`, `function.arguments`).
    #[serde(default)]
    pub tool_calls: Option<Vec<Value>>,
    /// Which call a `tool` message answers.
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// The function a `function` message answers.
    #[serde(default)]
    pub name: Option<String>,
}

/// `stream_options`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct StreamOptions {
    /// Send a last chunk with `usage` (and no choices) before `[DONE]`.
    #[serde(default)]
    pub include_usage: bool,
}

/// The `docdex` object of a chat request. Unknown keys are refused: a misspelt option (say
/// `no-web`) silently ignored would answer a different question than the caller asked.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DocdexChatOptions {
    /// The repository: absolute path, file:// URI or repo id (after the `x-docdex-repo` header;
    /// defaults to the served repo).
    #[serde(default)]
    pub repo: Option<String>,
    /// The agent asking (after the `x-docdex-agent-id` header).
    #[serde(default)]
    pub agent_id: Option<String>,
    /// Ask the web tier even when local results are confident.
    #[serde(default)]
    pub force_web: bool,
    /// Never ask the web tier.
    #[serde(default)]
    pub no_web: bool,
    /// Put these git changes first in the context: `working`, `staged`, a range such as
    /// `main..HEAD`, or `{"target": ..., "paths": [...]}`.
    #[serde(default)]
    pub diff: Option<DiffOption>,
    /// Continue this reasoning-DAG session (a new one when absent); an id the repository has no
    /// session for is `404 unknown_session`, unless `new_session` is set.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Start a new session under `session_id` (a caller-chosen id) instead of continuing one;
    /// an id the repository already has is `409 session_exists`.
    #[serde(default)]
    pub new_session: bool,
}

/// `docdex.diff`: a target alone, or a target with paths.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum DiffOption {
    /// `working`, `staged` or a git range.
    Target(String),
    /// Target and paths.
    Request(DiffRequest),
}

/// What the `docdex` extension field of a response (or final chunk) carries.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct DocdexExtension {
    /// The reasoning-DAG session the turn was logged in (`GET /v1/dag/{session}`).
    pub session_id: String,
    /// 1-based turn number in the session.
    pub turn: u32,
    /// Repo root.
    pub repo: PathBuf,
    /// Everything placed in the prompt, in prompt order.
    pub sources: Vec<ChatSource>,
    /// When no model answered: the best repository sources' lines (the search snippets).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excerpts: Vec<crate::engine::protocol::SourceExcerpt>,
    /// How the model part went.
    pub llm: LlmOutcome,
    /// The waterfall trace: steps, gate, budget, drops, timings.
    pub trace: ChatTrace,
}

impl DocdexExtension {
    fn of(resp: ChatTurnResponse) -> DocdexExtension {
        DocdexExtension {
            session_id: resp.session_id,
            turn: resp.turn,
            repo: resp.repo,
            sources: resp.sources,
            excerpts: resp.excerpts,
            llm: resp.llm,
            trace: resp.trace,
        }
    }
}

/// `chat.completion`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ChatCompletion {
    /// `chatcmpl-<uuid>`.
    pub id: String,
    /// Always `chat.completion`.
    pub object: String,
    /// Unix seconds.
    pub created: u64,
    /// The model that answered.
    pub model: String,
    /// One choice.
    pub choices: Vec<CompletionChoice>,
    /// Token counts (the model's own when it reports them).
    pub usage: Usage,
    /// docdex's extension: session, sources, model outcome, waterfall trace.
    pub docdex: DocdexExtension,
}

/// A choice of a [`ChatCompletion`].
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct CompletionChoice {
    /// Always 0.
    pub index: u32,
    /// The answer.
    pub message: AssistantMessage,
    /// `stop`, `length`, ...
    pub finish_reason: String,
}

/// The assistant's message.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct AssistantMessage {
    /// Always `assistant`.
    pub role: String,
    /// The answer text.
    pub content: String,
}

/// Token counts.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    /// Prompt tokens.
    pub prompt_tokens: u32,
    /// Answer tokens.
    pub completion_tokens: u32,
    /// Their sum.
    pub total_tokens: u32,
}

/// `chat.completion.chunk`, one server-sent event of a stream.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ChatCompletionChunk {
    /// Same for every chunk of a stream.
    pub id: String,
    /// Always `chat.completion.chunk`.
    pub object: String,
    /// Unix seconds.
    pub created: u64,
    /// The model.
    pub model: String,
    /// One delta (none in the usage chunk).
    pub choices: Vec<ChunkChoice>,
    /// In the usage chunk (`stream_options.include_usage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// In the final chunk: the session, sources, model outcome and trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docdex: Option<DocdexExtension>,
}

/// A choice of a chunk.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ChunkChoice {
    /// Always 0.
    pub index: u32,
    /// The next piece.
    pub delta: Delta,
    /// Set in the final chunk.
    pub finish_reason: Option<String>,
}

/// A piece of the answer.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct Delta {
    /// `assistant` in the first chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// The text of a message's content: a string, or the `text` parts of an array.
fn content_text(content: Option<&Value>) -> Result<String, ApiError> {
    match content {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => Ok(parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str).is_none_or(|t| t == "text"))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")),
        Some(other) => Err(ApiError::bad_request(format!(
            "message content must be a string or an array of text parts, got {other}"
        ))
        .on_param("messages")),
    }
}

/// The conversation as the engine takes it.
///
/// An agent's tool calls and their results stay in the history as text (the assistant said
/// which tool it called, a user message says what it returned): dropped, the model answered
/// without what the agent had already found.
fn messages(body: &[OpenAiMessage]) -> Result<Vec<ChatMessage>, ApiError> {
    let mut out = Vec::with_capacity(body.len());
    let mut called: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    for m in body {
        let text = content_text(m.content.as_ref())?;
        let (role, text) = match m.role.as_str() {
            "user" => (Role::User, text),
            "assistant" => (Role::Assistant, with_tool_calls(text, m.tool_calls.as_deref(), &mut called)),
            "system" | "developer" => (Role::System, text),
            "tool" | "function" => {
                let id = m.tool_call_id.as_deref().and_then(|id| called.get(id));
                let tool = m.name.as_deref().or(id.map(String::as_str)).unwrap_or("a tool");
                (Role::User, format!("[{tool} returned]\n{text}"))
            }
            other => {
                return Err(ApiError::bad_request(format!(
                    "unknown message role {other:?}: use system, developer, user, assistant, tool or function"
                ))
                .on_param("messages"))
            }
        };
        out.push(ChatMessage::new(role, text));
    }
    Ok(out)
}

/// Why the last user message asks nothing: empty, or only parts docdex does not read (an image
/// alone was called "empty", which reads as a client bug rather than an unsupported input).
fn empty_question(content: Option<&Value>) -> String {
    let mut unread: Vec<&str> = match content {
        Some(Value::Array(parts)) => {
            parts.iter().filter_map(|p| p.get("type").and_then(Value::as_str)).filter(|t| *t != "text").collect()
        }
        _ => Vec::new(),
    };
    unread.dedup();
    match unread.as_slice() {
        [] => "the last user message is empty: ask a question".to_string(),
        kinds => format!(
            "the last user message has no text: docdex answers from text and does not read its {} parts; ask the question in a text part",
            kinds.join(", ")
        ),
    }
}

/// An assistant message's text followed by one `[called name(arguments)]` line per tool call;
/// remembers each call's name under its id for the `tool` message that answers it.
fn with_tool_calls(
    mut text: String,
    calls: Option<&[Value]>,
    called: &mut std::collections::HashMap<String, String>,
) -> String {
    for call in calls.unwrap_or_default() {
        let name = call.pointer("/function/name").and_then(Value::as_str).unwrap_or("a tool");
        let args = call.pointer("/function/arguments").and_then(Value::as_str).unwrap_or("");
        if let Some(id) = call.get("id").and_then(Value::as_str) {
            called.insert(id.to_string(), name.to_string());
        }
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!("[called {name}({args})]"));
    }
    text
}

/// The answer format a `response_format` asks for: `None` for text, `"json"` for any JSON
/// object, or the schema of a `json_schema` format.
fn answer_format(rf: Option<&Value>) -> Result<Option<Value>, ApiError> {
    let Some(rf) = rf.filter(|v| !v.is_null()) else { return Ok(None) };
    let bad = |why: &str| {
        ApiError::bad_request(format!(
            "response_format {rf}: {why}; use {{\"type\": \"text\"}}, {{\"type\": \"json_object\"}} or {{\"type\": \"json_schema\", \"json_schema\": {{\"name\": ..., \"schema\": {{...}}}}}}"
        ))
        .on_param("response_format")
    };
    match rf.get("type").and_then(Value::as_str) {
        Some("text") => Ok(None),
        Some("json_object") => Ok(Some(Value::String("json".into()))),
        Some("json_schema") => match rf.pointer("/json_schema/schema") {
            Some(schema @ Value::Object(_)) => Ok(Some(schema.clone())),
            _ => Err(bad("json_schema.schema must be a JSON Schema object")),
        },
        Some(other) => Err(bad(&format!("unknown type {other:?}"))),
        None => Err(bad("it needs a `type`")),
    }
}

/// Refuses a `docdex.diff` target the engine would refuse, in the body's words: the engine's
/// message names the CLI's `--diff`, which an HTTP client never sent.
fn diff_target(target: &str) -> Result<(), ApiError> {
    match crate::engine::protocol::DiffTarget::parse(target) {
        Ok(_) => Ok(()),
        Err(_) => Err(ApiError::bad_request(format!(
            "bad docdex.diff {}: use working, staged, or a git range such as main..HEAD or HEAD~3",
            crate::error::quoted(target.trim())
        ))
        .on_param("docdex")),
    }
}

/// A sampling value out of range, naming its field as `param`.
fn out_of_range(sampling: &crate::engine::protocol::Sampling, e: crate::Error) -> ApiError {
    let field = sampling.fields().into_iter().find(|(_, v, range)| v.is_some_and(|v| !range.contains(&v)));
    let e = ApiError::from(e);
    match field {
        Some((name, ..)) => e.on_param(name),
        None => e,
    }
}

/// A chat turn from an OpenAI body and the request's headers.
pub fn turn_request(body: &ChatCompletionRequest, headers: &HeaderMap) -> Result<ChatTurnRequest, ApiError> {
    let mut msgs = messages(&body.messages)?;
    // The question is the caller's last `user` message, not a tool result after it (tool
    // results become user messages): those move before it, into the history.
    let no_user = || {
        ApiError::bad_request("no user message: `messages` needs at least one with role `user`").on_param("messages")
    };
    let last = body.messages.iter().rposition(|m| m.role == "user").ok_or_else(no_user)?;
    let question = msgs.remove(last);
    msgs.push(question);
    let mut req = ChatTurnRequest::from_messages(&msgs).ok_or_else(no_user)?;
    if req.query.trim().is_empty() {
        return Err(ApiError::bad_request(empty_question(body.messages[last].content.as_ref())).on_param("messages"));
    }
    let opts = body.docdex.as_ref();
    req.model = body.model.clone().filter(|m| !DEFAULT_MODEL_NAMES.contains(&m.trim()));
    req.max_answer_tokens = body.max_tokens;
    if let Some(n) = body.n.filter(|n| *n != 1) {
        return Err(ApiError::bad_request(format!(
            "n = {n}: docdex gives one answer per request; leave `n` out (or 1) and send another request for another answer"
        ))
        .on_param("n"));
    }
    // An out-of-range value is refused, as OpenAI refuses it, rather than sent to a model
    // server that may not.
    body.sampling.check().map_err(|e| out_of_range(&body.sampling, e))?;
    req.sampling = body.sampling;
    tool_choice(body.tool_choice.as_ref())?;
    req.format = answer_format(body.response_format.as_ref())?;
    req.stop = stop_sequences(body.stop.as_ref())?;
    req.agent_id = headers
        .get(AGENT_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| opts.and_then(|o| o.agent_id.clone()))
        .filter(|a| !a.trim().is_empty());
    if let Some(o) = opts {
        req.web = match (o.force_web, o.no_web) {
            (true, true) => {
                return Err(ApiError::bad_request("docdex.force_web and docdex.no_web contradict each other")
                    .on_param("docdex"))
            }
            (true, false) => WebPolicy::Force,
            (false, true) => WebPolicy::Off,
            (false, false) => WebPolicy::Auto,
        };
        req.diff = o.diff.as_ref().map(|d| match d {
            DiffOption::Target(t) => DiffRequest { target: t.clone(), paths: Vec::new() },
            DiffOption::Request(r) => r.clone(),
        });
        if let Some(d) = &req.diff {
            diff_target(&d.target)?;
        }
        req.session_id = o.session_id.clone();
    }
    Ok(req)
}

/// Refuses to continue a session the repository does not have: the engine would silently
/// start a new one under that id (turn 1, the history the client thinks it continues lost).
/// A caller that means a new session says so with `docdex.new_session`.
fn existing_session(state: &AppState, repo: &crate::engine::protocol::RepoRef, id: &str) -> Result<(), ApiError> {
    if !crate::engine::protocol::valid_session_id(id) {
        return Ok(()); // the engine refuses it as a bad request, naming the rule
    }
    match state.engine().dag_session_by_id(&repo.root, id) {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_session",
            format!(
                "repository {} has no reasoning session {id:?}; omit docdex.session_id to start one (every response names its session), or set docdex.new_session to start one under this id; GET /v1/dag/sessions lists them",
                repo.root.display()
            ),
        )),
        Err(e) => Err(state.explain(repo, e)),
    }
}

/// Refuses `docdex.new_session` under an id the repository already has: the engine would
/// continue that session (its next turn, its history), not start the new one the caller asked for.
fn free_session_id(state: &AppState, repo: &crate::engine::protocol::RepoRef, id: &str) -> Result<(), ApiError> {
    if !crate::engine::protocol::valid_session_id(id) {
        return Ok(()); // the engine refuses it as a bad request, naming the rule
    }
    match state.engine().dag_session_by_id(&repo.root, id) {
        Ok(Some(s)) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "session_exists",
            format!(
                "repository {} already has reasoning session {id:?} ({} turns); omit docdex.new_session to continue it, or choose another id for a new session",
                repo.root.display(),
                s.turns
            ),
        )),
        Ok(None) => Ok(()),
        Err(e) => Err(state.explain(repo, e)),
    }
}

fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

fn usage(trace: &ChatTrace) -> Usage {
    let prompt = trace.model.prompt_tokens_reported.unwrap_or(trace.model.prompt_tokens_estimated);
    let completion = trace.model.completion_tokens.unwrap_or(0);
    Usage { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion }
}

fn finish_reason(resp: &ChatTurnResponse) -> String {
    resp.trace.model.finish_reason.clone().unwrap_or_else(|| "stop".into())
}

/// A turn whose model part did not answer, as the error contract (with the engine's code and
/// message) plus the `docdex` extension: an OpenAI client asked for an answer, but the sources
/// retrieved are still useful.
///
/// A model the server does not have is 404 `model_not_found` in OpenAI's shape (`type`
/// `invalid_request_error`, `param` `model`), as OpenAI answers an unknown model: asking again
/// cannot help, and OpenAI clients retry a 503. A server that is down or failed stays 503. A
/// model that failed part-way leaves the text that arrived as `error.partial_answer`.
///
/// `named_model` is whether the client's body named the model. When it did not, the model at
/// fault is the server's own `[llm] default_model`: a missing or non-chat default is the
/// server's configuration, not the client's request, so it is `503` with OpenAI's
/// `server_error` type, no `param`, and a message naming the default and its fix (it was a
/// `404 invalid_request_error` on `param: model`, blaming a field the client never sent).
fn no_answer(resp: ChatTurnResponse, named_model: bool) -> Response {
    let code = resp.llm.error_code.clone().unwrap_or_else(|| "upstream_unavailable".into());
    let mut message = resp.llm.message.clone().unwrap_or_else(|| "the model did not answer".into());
    let (mut status, mut param) = no_answer_status(&code);
    let servers_default = !named_model && param == Some("model");
    if servers_default {
        status = StatusCode::SERVICE_UNAVAILABLE;
        param = None;
        message = default_model_message(&resp.llm, &code);
    }
    let mut error = json!({"code": code, "message": message});
    if let Some(param) = param {
        error["type"] = json!("invalid_request_error");
        error["param"] = json!(param);
    } else if servers_default {
        error["type"] = json!("server_error");
    }
    if let Some(partial) = resp.answer.as_deref().filter(|a| !a.is_empty()) {
        error["partial_answer"] = json!(partial);
    }
    let body = json!({"error": error, "docdex": DocdexExtension::of(resp)});
    (status, Json(body)).into_response()
}

/// Why a request that named no model got no answer: the server's default chat model (named)
/// is missing or cannot chat, and what the server's operator does about it.
fn default_model_message(llm: &crate::engine::protocol::LlmOutcome, code: &str) -> String {
    let (model, url) = (&llm.model, &llm.base_url);
    let what = if code == "model_cannot_chat" {
        format!("cannot chat (it is an embedding model, or its server runs it for embeddings only) on {url}")
    } else {
        format!("is not available on {url}")
    };
    let fix = if llm.provider == "ollama" {
        format!("`docdex llm-setup --model {model} --yes` (or `ollama pull {model}`) where the server runs, or set `[llm] default_model` to an installed chat model (`docdex llm-list`) and restart it")
    } else {
        format!("load a chat model in the {} server at {url}, or set `[llm] default_model` to one it serves (`docdex llm-list`) and restart docdex", llm.provider)
    };
    format!(
        "this docdex server's default chat model {model} (`[llm] default_model`; the request named no `model`) {what}: the server needs {fix}. A client may name a model the server has in `model`. The sources retrieved are in `docdex`"
    )
}

/// The status of a turn the model did not answer, and the request field at fault when asking
/// again cannot help (then it is an OpenAI `invalid_request_error`, which clients do not retry):
/// a model the server does not have (404, `model`), an embedding model asked to chat (400,
/// `model`, `model_cannot_chat`: it was a 503 that clients retried), a prompt over the
/// server's window (400, `messages`, OpenAI's `context_length_exceeded`). Anything else is 503.
fn no_answer_status(code: &str) -> (StatusCode, Option<&'static str>) {
    match code {
        "model_not_found" => (StatusCode::NOT_FOUND, Some("model")),
        "model_cannot_chat" => (StatusCode::BAD_REQUEST, Some("model")),
        "context_length_exceeded" => (StatusCode::BAD_REQUEST, Some("messages")),
        _ => (StatusCode::SERVICE_UNAVAILABLE, None),
    }
}

/// What the engine worker tells the response.
enum Update {
    Token(String),
    Done(Box<Result<ChatTurnResponse, ApiError>>),
}

/// Runs the turn on the blocking pool, sending answer tokens (when `stream`) and the result.
/// The `slots` (a chat-gate permit and a work-gate permit) are held until the turn ends, so a
/// chat occupies one of [`AppState::chat_slots`] and one of `[server] max_concurrent_work`
/// for exactly as long as it holds a blocking thread.
fn spawn_turn(
    state: AppState,
    sel: Option<String>,
    req: ChatTurnRequest,
    stream: bool,
    new_session: bool,
    slots: ChatSlots,
) -> tokio::sync::mpsc::Receiver<Update> {
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    tokio::task::spawn_blocking(move || {
        let _slots = slots;
        let result = (|| {
            let repo = state.repo(sel.as_deref())?;
            for p in req.diff.iter().flat_map(|d| d.paths.iter()) {
                confine(&repo, p)?;
            }
            match req.session_id.as_deref() {
                Some(id) if new_session => free_session_id(&state, &repo, id)?,
                Some(id) => existing_session(&state, &repo, id)?,
                None => {}
            }
            let mut on_event = |ev: ChatTurnEvent| match ev {
                ChatTurnEvent::Token { text } if stream => match tx.blocking_send(Update::Token(text)) {
                    Ok(()) => ControlFlow::Continue(()),
                    Err(_) => ControlFlow::Break(()),
                },
                _ => ControlFlow::Continue(()),
            };
            state.engine().chat(&repo.root, &req, &mut on_event).map_err(|e| state.explain(&repo, e))
        })();
        let _ = tx.blocking_send(Update::Done(Box::new(result)));
    });
    rx
}

/// A turn's permits: its chat slot, then its work slot (taken in that order by every chat, so
/// chats waiting for work slots are never more than the chat slots).
struct ChatSlots {
    _chat: tokio::sync::OwnedSemaphorePermit,
    _work: tokio::sync::OwnedSemaphorePermit,
}

/// Takes a chat slot, then a work slot ([`super::work::WorkGate::slot`]: `503 busy` when every
/// one stays taken for `[server] work_wait_ms`), the answer to send otherwise.
async fn chat_slots(state: &AppState) -> Result<ChatSlots, Response> {
    let chat = chat_slot(state).await?;
    let work = state.work().slot().await.map_err(IntoResponse::into_response)?;
    Ok(ChatSlots { _chat: chat, _work: work })
}

/// How long a chat waits for a free slot before it is refused with `503 busy`.
const CHAT_SLOT_WAIT: Duration = Duration::from_secs(10);

/// What a refused chat's `Retry-After` says, in seconds.
const BUSY_RETRY_AFTER_SECS: u64 = 5;

/// Takes a chat slot, waiting up to [`CHAT_SLOT_WAIT`]; else `503 busy` with `Retry-After`.
/// The wait is async (no thread is held), so queued chats cost nothing but their socket.
/// A shutdown ends the wait at once with `503 shutting_down` and no `Retry-After`: this server
/// will not have a slot again, so advice to retry it would be wrong.
async fn chat_slot(state: &AppState) -> Result<tokio::sync::OwnedSemaphorePermit, Response> {
    let gate = state.chat_gate().clone();
    let shutdown = state.shutdown_token().clone();
    let waited = tokio::select! {
        biased;
        _ = shutdown.cancelled() => {
            return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "shutting_down",
                "the server is shutting down; this chat was waiting for a free slot and was not started; ask again when the server is back",
            )
            .into_response());
        }
        waited = tokio::time::timeout(CHAT_SLOT_WAIT, gate.acquire_owned()) => waited,
    };
    match waited {
        Ok(Ok(permit)) => Ok(permit),
        _ => {
            let slots = state.chat_slots();
            let e = ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "busy",
                format!(
                    "all {slots} chat slots are generating and none freed within {}s; retry after {BUSY_RETRY_AFTER_SECS}s (searches and other requests are not affected)",
                    CHAT_SLOT_WAIT.as_secs()
                ),
            );
            let mut resp = e.into_response();
            resp.headers_mut()
                .insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from(BUSY_RETRY_AFTER_SECS));
            Err(resp)
        }
    }
}

/// Trips the turn's cancel token when dropped: the handler future and then the response
/// stream own it, so a client hanging up stops the model instead of letting it generate (and
/// hold a chat slot) for an answer nobody reads. Tripping it after the turn ended is harmless.
struct CancelOnDrop(CancelToken);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// How long a chat may go on after a shutdown signal: within the server's 10 s drain, with
/// time left to send the end of the answer.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(8);

/// Resolves [`SHUTDOWN_GRACE`] after the server starts shutting down; never before.
fn shutdown_grace(state: &AppState) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    let shutdown = state.shutdown_token().clone();
    Box::pin(async move {
        shutdown.cancelled_owned().await;
        tokio::time::sleep(SHUTDOWN_GRACE).await;
    })
}

fn shutting_down() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "shutting_down",
        format!(
            "the server is shutting down and the answer did not finish within {}s; ask again when it is back",
            SHUTDOWN_GRACE.as_secs()
        ),
    )
}

/// The end of a stream cut by a shutdown: the error, then `[DONE]`.
fn shutdown_events() -> Vec<Event> {
    let e = shutting_down();
    vec![
        Event::default().data(json!({"error": {"code": e.code, "message": e.message}}).to_string()),
        Event::default().data("[DONE]"),
    ]
}

/// The worker's next update, or `503 shutting_down` once the shutdown grace is over.
async fn recv_within(
    rx: &mut tokio::sync::mpsc::Receiver<Update>,
    grace: &mut std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
) -> Result<Option<Update>, ApiError> {
    tokio::select! {
        biased;
        update = rx.recv() => Ok(update),
        _ = grace.as_mut() => Err(shutting_down()),
    }
}

/// How long a non-streamed chat cut by a shutdown waits for the stopped turn (the engine checks
/// the cancel token every 20 ms), to answer with the text that arrived.
const STOPPED_TURN_WAIT: Duration = Duration::from_secs(1);

/// A non-streamed chat cut by a shutdown: the turn is stopped and answered like a model failing
/// part-way ([`no_answer`]): `503 shutting_down` with the text that arrived as
/// `error.partial_answer` and the `docdex` extension (sources, session, trace). A turn that does
/// not stop within [`STOPPED_TURN_WAIT`] leaves the bare error.
async fn cut_by_shutdown(
    cancel: &CancelOnDrop,
    rx: &mut tokio::sync::mpsc::Receiver<Update>,
    cut: ApiError,
) -> Response {
    cancel.0.cancel();
    let stopped = tokio::time::timeout(STOPPED_TURN_WAIT, async {
        loop {
            match rx.recv().await {
                Some(Update::Done(r)) => return (*r).ok(),
                Some(Update::Token(_)) => continue,
                None => return None,
            }
        }
    })
    .await;
    let Ok(Some(mut resp)) = stopped else {
        return cut.into_response();
    };
    resp.llm.error_code = Some(cut.code.to_string());
    resp.llm.message = Some(cut.message);
    no_answer(resp, true)
}

fn lost_worker() -> ApiError {
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "the chat worker stopped without an answer")
}

/// `POST /v1/chat/completions`: the turn, its failures in OpenAI's shape ([`openai_error`]).
async fn completions(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<RepoQuery>,
    body: Result<ApiJson<ChatCompletionRequest>, ApiError>,
) -> Response {
    let answered = match body {
        Ok(ApiJson(body)) => completion(state, headers, q, body).await,
        Err(e) => Err(e),
    };
    answered.unwrap_or_else(openai_error)
}

/// A refused chat request as OpenAI answers one: a `400` also carries `type:
/// invalid_request_error` and, where one field is at fault, `param` (`messages` for a prompt
/// over the model's window, `context_length_exceeded`, as when the model server says so).
/// Clients act on these (LiteLLM trims the history on `context_length_exceeded`); the rest
/// of the API keeps its plain `{code, message}`.
fn openai_error(e: ApiError) -> Response {
    if e.status != StatusCode::BAD_REQUEST {
        return e.into_response();
    }
    let param = e.param.or((e.code == "context_length_exceeded").then_some("messages"));
    let mut error = json!({"code": e.code, "message": e.message, "type": "invalid_request_error"});
    if let Some(param) = param {
        error["param"] = json!(param);
    }
    (e.status, Json(json!({"error": error}))).into_response()
}

async fn completion(
    state: AppState,
    headers: HeaderMap,
    q: RepoQuery,
    body: ChatCompletionRequest,
) -> Result<Response, ApiError> {
    let mut req = turn_request(&body, &headers)?;
    req.agent_id = state.agent(req.agent_id.as_deref());
    let sel = selector(&headers, body.docdex.as_ref().and_then(|d| d.repo.as_deref()), q.repo.as_deref());
    let id = format!("chatcmpl-{}", uuid::Uuid::new_v4().simple());
    let named_model = req.model.is_some();
    let model = match &req.model {
        Some(m) => m.clone(),
        None => state.engine().config().llm.default_model.clone(),
    };
    // Dropped with this future (the client went away while we wait) or with the response
    // stream (it went away mid-answer): either way the turn stops within a cancel tick.
    let cancel = CancelOnDrop(req.cancel.clone());
    let stop_turn = req.cancel.clone();
    let slots = match chat_slots(&state).await {
        Ok(slots) => slots,
        Err(busy) => return Ok(busy),
    };
    let new_session = body.docdex.as_ref().is_some_and(|d| d.new_session);
    let mut rx = spawn_turn(state.clone(), sel, req, body.stream, new_session, slots);
    let mut grace = shutdown_grace(&state);
    if !body.stream {
        let resp = match recv_within(&mut rx, &mut grace).await {
            Ok(Some(Update::Done(r))) => (*r)?,
            Ok(_) => return Err(lost_worker()),
            Err(cut) => return Ok(cut_by_shutdown(&cancel, &mut rx, cut).await),
        };
        if matches!(resp.llm.status, AnswerStatus::Unavailable | AnswerStatus::Failed) {
            return Ok(no_answer(resp, named_model));
        }
        let completion = ChatCompletion {
            id,
            object: "chat.completion".into(),
            created: now_secs(),
            model: resp.trace.model.model.clone(),
            choices: vec![CompletionChoice {
                index: 0,
                message: AssistantMessage {
                    role: "assistant".into(),
                    content: resp.answer.clone().unwrap_or_default(),
                },
                finish_reason: finish_reason(&resp),
            }],
            usage: usage(&resp.trace),
            docdex: DocdexExtension::of(resp),
        };
        return Ok(Json(completion).into_response());
    }
    // Streaming: headers go out with the first token; until then, failures are HTTP errors.
    let first = match recv_within(&mut rx, &mut grace).await? {
        Some(Update::Token(t)) => Some(t),
        Some(Update::Done(r)) => {
            let resp = (*r)?;
            if matches!(resp.llm.status, AnswerStatus::Unavailable | AnswerStatus::Failed) {
                return Ok(no_answer(resp, named_model));
            }
            let chunks = Chunks { id, model, created: now_secs(), include_usage: include_usage(&body) };
            let events = vec![chunks.first(String::new()), chunks.last(resp)].into_iter().flatten();
            return Ok(sse(futures::stream::iter(events.map(Ok))));
        }
        None => return Err(lost_worker()),
    };
    let chunks = Chunks { id, model, created: now_secs(), include_usage: include_usage(&body) };
    // Set when the shutdown grace is over: the stopped turn's response then ends the stream
    // as an error that carries the `docdex` extension.
    let cut = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let events = answer_events(rx, chunks, first, cut.clone());
    use futures::StreamExt;
    let events = cut_at_shutdown(events, grace, cut, stop_turn).map(move |event| {
        let _ = &cancel;
        event
    });
    Ok(sse(events))
}

/// The events of a streamed answer: the first piece, the deltas, then the end ([`Chunks::last`],
/// or the shutdown error with the stopped turn's `docdex` extension once `cut` is set).
fn answer_events(
    rx: tokio::sync::mpsc::Receiver<Update>,
    chunks: Chunks,
    first: Option<String>,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> impl futures::Stream<Item = Event> + Send {
    use futures::StreamExt;
    let state = (rx, chunks, first, false, cut);
    futures::stream::unfold(state, |(mut rx, chunks, first, done, cut)| async move {
        if done {
            return None;
        }
        if let Some(t) = first {
            return Some((chunks.first(t), (rx, chunks, None, false, cut)));
        }
        let events = match rx.recv().await {
            Some(Update::Token(t)) => return Some((vec![chunks.delta(t)], (rx, chunks, None, false, cut))),
            Some(Update::Done(r)) => match *r {
                Ok(resp) if cut.load(std::sync::atomic::Ordering::SeqCst) => chunks.ended_by(resp, &shutting_down()),
                Ok(resp) => chunks.last(resp),
                Err(e) => chunks.error(&e),
            },
            None => chunks.error(&lost_worker()),
        };
        Some((events, (rx, chunks, None, true, cut)))
    })
    .flat_map(futures::stream::iter)
}

/// A shutdown lets a streamed answer go on for the grace period, then stops the turn and waits
/// up to [`STOPPED_TURN_WAIT`] for its end (the shutdown error with the `docdex` extension,
/// see [`answer_events`]); a turn that does not stop by then gets the bare error. Either way
/// the stream ends with `[DONE]`, so the client can tell a cut answer from a whole one.
fn cut_at_shutdown(
    events: impl futures::Stream<Item = Event> + Send + 'static,
    grace: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
    stop_turn: CancelToken,
) -> impl futures::Stream<Item = Result<Event, Infallible>> + Send {
    use futures::StreamExt;
    let state = (Box::pin(events), grace, None::<std::pin::Pin<Box<tokio::time::Sleep>>>, false);
    futures::stream::unfold(state, move |(mut events, mut grace, mut stopping, ended)| {
        let (cut, stop_turn) = (cut.clone(), stop_turn.clone());
        async move {
            if ended {
                return None;
            }
            let Some(wait) = stopping.as_mut() else {
                return tokio::select! {
                    biased;
                    event = events.next() => event.map(|e| (vec![e], (events, grace, None, false))),
                    _ = &mut grace => {
                        cut.store(true, std::sync::atomic::Ordering::SeqCst);
                        stop_turn.cancel();
                        let wait = Box::pin(tokio::time::sleep(STOPPED_TURN_WAIT));
                        Some((Vec::new(), (events, grace, Some(wait), false)))
                    }
                };
            };
            tokio::select! {
                biased;
                event = events.next() => event.map(|e| (vec![e], (events, grace, stopping, false))),
                _ = wait.as_mut() => Some((shutdown_events(), (events, grace, None, true))),
            }
        }
    })
    .flat_map(|batch| futures::stream::iter(batch.into_iter().map(Ok::<_, Infallible>)))
}

fn include_usage(body: &ChatCompletionRequest) -> bool {
    body.stream_options.as_ref().is_some_and(|o| o.include_usage)
}

fn sse<S>(events: S) -> Response
where
    S: futures::Stream<Item = Result<Event, Infallible>> + Send + 'static,
{
    Sse::new(events).keep_alive(KeepAlive::default()).into_response()
}

/// Builds the events of one stream.
struct Chunks {
    id: String,
    model: String,
    created: u64,
    include_usage: bool,
}

impl Chunks {
    fn chunk(&self, choices: Vec<ChunkChoice>) -> ChatCompletionChunk {
        ChatCompletionChunk {
            id: self.id.clone(),
            object: "chat.completion.chunk".into(),
            created: self.created,
            model: self.model.clone(),
            choices,
            usage: None,
            docdex: None,
        }
    }

    fn event(chunk: &ChatCompletionChunk) -> Event {
        Event::default().data(serde_json::to_string(chunk).unwrap_or_else(|_| "{}".into()))
    }

    /// The first chunk: the role, and the first piece of text.
    fn first(&self, text: String) -> Vec<Event> {
        let delta = Delta { role: Some("assistant".into()), content: Some(text) };
        vec![Self::event(&self.chunk(vec![ChunkChoice { index: 0, delta, finish_reason: None }]))]
    }

    fn delta(&self, text: String) -> Event {
        let delta = Delta { role: None, content: Some(text) };
        Self::event(&self.chunk(vec![ChunkChoice { index: 0, delta, finish_reason: None }]))
    }

    /// The final chunk (finish reason and the `docdex` extension), the usage chunk when asked
    /// for, and `[DONE]`.
    fn last(&self, resp: ChatTurnResponse) -> Vec<Event> {
        let mut out = Vec::with_capacity(3);
        if matches!(resp.llm.status, AnswerStatus::Failed) {
            // The error event ends the stream: a `finish_reason: "stop"` chunk after it would
            // make a cut answer look whole to clients that only read the chunks.
            let message = resp.llm.message.clone().unwrap_or_else(|| "the model failed part-way".into());
            let code = resp.llm.error_code.clone().unwrap_or_else(|| "upstream_unavailable".into());
            return Self::error_with(&code, &message, resp);
        }
        let usage = usage(&resp.trace);
        let reason = finish_reason(&resp);
        let mut last = self.chunk(vec![ChunkChoice { index: 0, delta: Delta::default(), finish_reason: Some(reason) }]);
        last.model = resp.trace.model.model.clone();
        last.docdex = Some(DocdexExtension::of(resp));
        out.push(Self::event(&last));
        if self.include_usage {
            let mut u = self.chunk(Vec::new());
            u.usage = Some(usage);
            out.push(Self::event(&u));
        }
        out.push(Event::default().data("[DONE]"));
        out
    }

    /// A turn that ended because of `e` (a shutdown): its error event with the turn's `docdex`
    /// extension (sources, session, trace), then `[DONE]`.
    fn ended_by(&self, mut resp: ChatTurnResponse, e: &ApiError) -> Vec<Event> {
        resp.llm.error_code = Some(e.code.to_string());
        resp.llm.message = Some(e.message.clone());
        Self::error_with(e.code, &e.message, resp)
    }

    fn error_with(code: &str, message: &str, resp: ChatTurnResponse) -> Vec<Event> {
        let error = json!({"error": {"code": code, "message": message}, "docdex": DocdexExtension::of(resp)});
        vec![Event::default().data(error.to_string()), Event::default().data("[DONE]")]
    }

    /// An error after the stream started, OpenAI style, then `[DONE]`.
    fn error(&self, e: &ApiError) -> Vec<Event> {
        vec![
            Event::default().data(json!({"error": {"code": e.code, "message": e.message}}).to_string()),
            Event::default().data("[DONE]"),
        ]
    }
}

/// Adds `POST /v1/chat/completions` to `routes`.
pub fn routes(routes: Routes<AppState>) -> Routes<AppState> {
    routes.post(
        "/v1/chat/completions",
        completions,
        Operation::new("OpenAI-compatible chat about the repository (the waterfall chat)")
            .describe("The OpenAI request and response; `stream: true` answers with `chat.completion.chunk` server-sent events ending with `data: [DONE]`. The repository comes from `x-docdex-repo`, `docdex.repo` or `?repo=`; the agent from `x-docdex-agent-id` or `docdex.agent_id`. `docdex.force_web`, `docdex.no_web`, `docdex.diff` and `docdex.session_id` steer the waterfall. The `docdex` field of the response (or of the final chunk) carries the session, sources, model outcome and waterfall trace. No reachable model: 503 `upstream_unavailable`; a model the request names that the server does not have: 404 `model_not_found` (OpenAI's shape); no `model` and the server's `[llm] default_model` missing or unable to chat: 503 with `type: server_error`, naming it; an embedding model asked to chat: 400 `model_cannot_chat`; all with the retrieved sources in `docdex`.")
            // The handler answers a bare `Response` (JSON or an event stream): name the JSON.
            .response::<ChatCompletion>(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_asking_again_cannot_help_is_no_503() {
        assert_eq!(no_answer_status("model_not_found"), (StatusCode::NOT_FOUND, Some("model")));
        assert_eq!(no_answer_status("context_length_exceeded"), (StatusCode::BAD_REQUEST, Some("messages")));
        assert_eq!(no_answer_status("model_cannot_chat"), (StatusCode::BAD_REQUEST, Some("model")));
        assert_eq!(no_answer_status("upstream_unavailable"), (StatusCode::SERVICE_UNAVAILABLE, None));
    }

    fn body(v: Value) -> ChatCompletionRequest {
        serde_json::from_value(v).unwrap()
    }

    /// `temperature`, `top_p` and the penalties are one `Sampling` in the code but stay at the
    /// body's top level, in the published schema (which the unknown-field check reads) as in
    /// what is read.
    #[test]
    fn sampling_fields_stay_at_the_top_level_of_the_body() {
        let schema = schemars::schema_for!(ChatCompletionRequest).to_value();
        for field in ["temperature", "top_p", "presence_penalty", "frequency_penalty"] {
            assert_eq!(schema["properties"][field]["type"], json!(["number", "null"]), "{field}: {schema}");
        }
        assert!(schema["properties"].get("sampling").is_none(), "{schema}");
        let b = body(json!({"messages": [{"role": "user", "content": "hi"}], "top_p": 0.5, "frequency_penalty": -1}));
        let turn = turn_request(&b, &HeaderMap::new()).unwrap();
        assert_eq!(turn.sampling, Sampling { top_p: Some(0.5), frequency_penalty: Some(-1.0), ..Sampling::default() });
    }

    #[test]
    fn an_image_alone_is_named_as_unread_not_as_empty() {
        let image = json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}});
        let b = body(json!({"messages": [{"role": "user", "content": [image.clone(), image]}]}));
        let e = turn_request(&b, &HeaderMap::new()).unwrap_err();
        assert_eq!(e.code, "bad_request");
        assert!(e.message.contains("does not read its image_url parts"), "{}", e.message);
        let b = body(json!({"messages": [{"role": "user", "content": ""}]}));
        let e = turn_request(&b, &HeaderMap::new()).unwrap_err();
        assert_eq!(e.message, "the last user message is empty: ask a question");
    }

    #[test]
    fn openai_bodies_become_turns() {
        let mut headers = HeaderMap::new();
        headers.insert(AGENT_HEADER, "agent-7".parse().unwrap());
        let b = body(json!({
            "model": "docdex",
            "temperature": 0.2,
            "max_completion_tokens": 99,
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": "first"}]},
                {"role": "assistant", "content": "an answer"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": "{\"q\":\"ttl\"}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "src/auth.rs:12 ttl"},
                {"role": "user", "content": "where are sessions expired?"}
            ],
            "docdex": {"force_web": true, "diff": "staged", "agent_id": "body-agent", "session_id": "s1"}
        }));
        let req = turn_request(&b, &headers).unwrap();
        assert_eq!(req.query, "where are sessions expired?");
        assert_eq!(req.history.len(), 4, "system left out: {:?}", req.history);
        // Before, the call and its result were dropped: the model never saw what grep found.
        assert_eq!(req.history[2].content, "[called grep({\"q\":\"ttl\"})]");
        assert_eq!(req.history[3], ChatMessage::new(Role::User, "[grep returned]\nsrc/auth.rs:12 ttl"));
        assert_eq!(req.instructions.as_deref(), Some("be brief"), "the system message is the caller's instructions");
        assert_eq!(req.history[0].content, "first");
        assert_eq!(req.model, None, "`docdex` means the configured model");
        assert_eq!(req.max_answer_tokens, Some(99));
        assert_eq!(req.agent_id.as_deref(), Some("agent-7"), "the header wins");
        assert_eq!(req.web, WebPolicy::Force);
        assert_eq!(req.diff, Some(DiffRequest { target: "staged".into(), paths: vec![] }));
        assert_eq!(req.session_id.as_deref(), Some("s1"));

        let b = body(json!({"model": "llama3.2:1b", "messages": [{"role": "user", "content": "q"}],
            "docdex": {"no_web": true, "diff": {"target": "main..HEAD", "paths": ["src"]}, "agent_id": "a"}}));
        let req = turn_request(&b, &HeaderMap::new()).unwrap();
        assert_eq!(req.model.as_deref(), Some("llama3.2:1b"));
        assert_eq!(req.web, WebPolicy::Off);
        assert_eq!(req.agent_id.as_deref(), Some("a"));
        assert_eq!(req.diff.unwrap().paths, ["src"]);
        // A conversation ending in a tool result still asks the last user question.
        let b = body(json!({"messages": [
            {"role": "user", "content": "where is the ttl?"},
            {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "grep", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "src/auth.rs:12"}]}));
        let req = turn_request(&b, &HeaderMap::new()).unwrap();
        assert_eq!(req.query, "where is the ttl?");
        assert_eq!(req.history.len(), 2, "{:?}", req.history);
        assert_eq!(req.history[1].content, "[grep returned]\nsrc/auth.rs:12");
    }

    #[test]
    fn bad_conversations_are_bad_requests() {
        let h = HeaderMap::new();
        for v in [
            json!({"messages": []}),
            json!({"messages": [{"role": "assistant", "content": "hi"}]}),
            json!({"messages": [{"role": "tool", "tool_call_id": "x", "content": "a result is no question"}]}),
            json!({"messages": [{"role": "user", "content": "  "}]}),
            json!({"messages": [{"role": "wizard", "content": "q"}]}),
            json!({"messages": [{"role": "user", "content": 5}]}),
            json!({"messages": [{"role": "user", "content": "q"}], "docdex": {"force_web": true, "no_web": true}}),
            // Before, these were answered as if they had not been asked.
            json!({"messages": [{"role": "user", "content": "q"}], "n": 2}),
            json!({"messages": [{"role": "user", "content": "q"}], "temperature": 3.5}),
            json!({"messages": [{"role": "user", "content": "q"}], "response_format": {"type": "xml"}}),
            json!({"messages": [{"role": "user", "content": "q"}], "response_format": {"type": "json_schema"}}),
            json!({"messages": [{"role": "user", "content": "q"}], "stop": ["a", "b", "c", "d", "e"]}),
            json!({"messages": [{"role": "user", "content": "q"}], "stop": [1]}),
            json!({"messages": [{"role": "user", "content": "q"}], "stop": ""}),
        ] {
            let e = turn_request(&body(v.clone()), &h).unwrap_err();
            assert_eq!(e.code, "bad_request", "{v}");
        }
        let typo = serde_json::from_value::<ChatCompletionRequest>(
            json!({"messages": [{"role": "user", "content": "q"}], "docdex": {"no-web": true}}),
        );
        assert!(
            typo.unwrap_err().to_string().contains("unknown field `no-web`"),
            "a misspelt docdex option is refused"
        );
    }

    #[test]
    fn sampling_and_answer_formats_reach_the_turn() {
        let h = HeaderMap::new();
        let schema = json!({"type": "object", "properties": {"file": {"type": "string"}}, "required": ["file"]});
        let b = body(json!({"messages": [{"role": "user", "content": "q"}], "n": 1, "temperature": 0,
            "response_format": {"type": "json_schema", "json_schema": {"name": "where", "schema": schema}}}));
        let req = turn_request(&b, &h).unwrap();
        assert_eq!((req.sampling.temperature, req.format), (Some(0.0), Some(schema)));
        let b =
            body(json!({"messages": [{"role": "user", "content": "q"}], "response_format": {"type": "json_object"}}));
        assert_eq!(turn_request(&b, &h).unwrap().format, Some(json!("json")));
        let stop =
            |v: Value| turn_request(&body(json!({"messages": [{"role": "user", "content": "q"}], "stop": v})), &h);
        assert_eq!(stop(json!("END")).unwrap().stop, ["END"]);
        assert_eq!(stop(json!(["\n\n", "Q:"])).unwrap().stop, ["\n\n", "Q:"]);
        assert!(stop(Value::Null).unwrap().stop.is_empty());
        let b = body(json!({"messages": [{"role": "user", "content": "q"}], "response_format": {"type": "text"}}));
        assert_eq!(turn_request(&b, &h).unwrap().format, None);
    }
}
