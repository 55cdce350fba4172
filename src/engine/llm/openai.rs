//! The OpenAI-compatible provider, for llama.cpp's server, LM Studio, vLLM (and
//! Ollama's own `/v1`): streamed `/v1/chat/completions` (server-sent events),
//! `/v1/embeddings` and `/v1/models`. `[llm] base_url` may or may not end in `/v1`.
//! A bearer token is sent when `DOCDEX_LLM_API_KEY` is set (some servers want one).

use super::http::{chat_events, ChatWire, Http, Step};
use super::ollama::check_count;
use super::{ChatRequest, ChatStream, ChatUsage, ModelInfo, Provider, Role};
use crate::config::LlmConfig;
use crate::error::{Error, Result};
use futures::future::BoxFuture;
use futures::FutureExt;
use serde::Deserialize;
use serde_json::{json, Value};

/// Environment variable holding an API key for OpenAI-compatible servers that want one.
pub const API_KEY_ENV: &str = "DOCDEX_LLM_API_KEY";

/// An OpenAI-compatible server.
pub struct OpenAiProvider {
    http: Http,
    default_model: String,
    max_tokens: u32,
}

impl OpenAiProvider {
    /// A provider for `[llm] base_url` (with or without a trailing `/v1`).
    pub fn new(cfg: &LlmConfig) -> Result<OpenAiProvider> {
        let base = cfg.base_url.trim_end_matches('/');
        let base = base.strip_suffix("/v1").unwrap_or(base);
        let key = std::env::var(API_KEY_ENV).ok().filter(|k| !k.trim().is_empty());
        Ok(OpenAiProvider {
            http: Http::new("openai", base, cfg, key)?,
            default_model: cfg.default_model.clone(),
            max_tokens: cfg.max_answer_tokens,
        })
    }
}

fn role(r: Role) -> &'static str {
    match r {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    /// A reasoning model's thinking (llama.cpp, older vLLM): progress, not answer text.
    #[serde(default)]
    reasoning_content: Option<String>,
    /// The same under the name newer servers use (some send both, so not a serde alias).
    #[serde(default)]
    reasoning: Option<String>,
}

impl Delta {
    /// True when the delta carries reasoning text.
    fn reasons(&self) -> bool {
        [&self.reasoning_content, &self.reasoning].iter().any(|r| r.as_deref().is_some_and(|r| !r.trim().is_empty()))
    }
}

#[derive(Debug, Deserialize, Default, Clone, Copy)]
struct Usage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Debug, Deserialize, Default, Clone, Copy)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: u64,
}

/// Server-sent events of a chat completion: `data: {chunk}` lines, then `data: [DONE]`.
/// Usage may arrive in a chunk of its own after the one carrying `finish_reason`.
struct SseWire {
    base: String,
    finish: Option<String>,
    usage: Usage,
    tokens: u64,
}

impl SseWire {
    fn done(&mut self) -> Step {
        let completion = if self.usage.completion_tokens > 0 { self.usage.completion_tokens } else { self.tokens };
        Step::Done(ChatUsage {
            prompt_tokens: self.usage.prompt_tokens as u32,
            cached_prompt_tokens: self.usage.prompt_tokens_details.map_or(0, |d| d.cached_tokens) as u32,
            completion_tokens: completion as u32,
            finish_reason: self.finish.take().unwrap_or_else(|| "stop".into()),
        })
    }
}

impl SseWire {
    /// The error a server put outside `data:` framing: llama.cpp before late 2025 streams a
    /// failure (a prompt over its window, above all) as an `error: {...}` line at HTTP 200,
    /// some proxies forward the backend's bare JSON error body. Read as nothing, the first
    /// ended as an empty answer that looked complete and the second lost the server's words.
    fn framing_error(&self, line: &str) -> Option<Error> {
        let json = match line.strip_prefix("error:") {
            Some(rest) => rest.trim(),
            None if line.starts_with('{') => line,
            None => return None,
        };
        let v: Value = serde_json::from_str(json).ok()?;
        let body = if v.get("error").is_some() { v } else { json!({ "error": v }) };
        let body = body.to_string();
        let msg = super::http::error_message(&body);
        let advice = super::http::context_overflow_advice(&body, &msg);
        Some(Error::Upstream(format!("the openai server at {} stopped the answer: {msg}{advice}", self.base)))
    }
}

impl ChatWire for SseWire {
    fn on_line(&mut self, line: &str) -> Result<Step> {
        // Comments (`: ping`), `event:` and `id:` lines carry nothing for us.
        let Some(data) = line.strip_prefix("data:") else {
            return match self.framing_error(line) {
                Some(e) => Err(e),
                None => Ok(Step::Nothing),
            };
        };
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(self.done());
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
            Error::Upstream(format!("the openai server at {} sent an event docdex cannot read ({e})", self.base))
        })?;
        if let Some(err) = chunk.error {
            let body = json!({ "error": err }).to_string();
            let msg = super::http::error_message(&body);
            let advice = super::http::context_overflow_advice(&body, &msg);
            return Err(Error::Upstream(format!(
                "the openai server at {} stopped the answer: {msg}{advice}",
                self.base
            )));
        }
        if let Some(u) = chunk.usage {
            self.usage = u;
        }
        let mut text = String::new();
        let mut reasoning = false;
        for c in chunk.choices {
            if let Some(d) = c.delta {
                reasoning |= d.reasons();
                text.push_str(d.content.as_deref().unwrap_or_default());
            }
            if let Some(f) = c.finish_reason {
                self.finish = Some(f);
            }
        }
        if text.is_empty() {
            Ok(if reasoning { Step::Progress } else { Step::Nothing })
        } else {
            self.tokens += 1;
            Ok(Step::Token(text))
        }
    }

    fn on_end(&mut self) -> Result<Step> {
        // Some servers close the stream without `[DONE]`; a finish reason means it was complete.
        if self.finish.is_some() {
            Ok(self.done())
        } else {
            Err(Error::Upstream(format!(
                "the openai server at {} ended the answer before it was complete. {}",
                self.base,
                super::http::STREAM_CUT_ADVICE
            )))
        }
    }
}

#[derive(Debug, Deserialize)]
struct EmbeddingList {
    data: Vec<EmbeddingItem>,
}

#[derive(Debug, Deserialize)]
struct EmbeddingItem {
    #[serde(default)]
    index: usize,
    embedding: Vec<f32>,
}

#[derive(Debug, Deserialize)]
struct ModelList {
    data: Vec<ModelItem>,
}

#[derive(Debug, Deserialize)]
struct ModelItem {
    id: String,
}

impl Provider for OpenAiProvider {
    fn kind(&self) -> &'static str {
        "openai"
    }

    fn base_url(&self) -> &str {
        &self.http.base
    }

    fn chat(&self, req: ChatRequest) -> BoxFuture<'_, Result<ChatStream>> {
        async move {
            let model = if req.model.is_empty() { self.default_model.clone() } else { req.model.clone() };
            let messages: Vec<Value> =
                req.messages.iter().map(|m| json!({"role": role(m.role), "content": m.content})).collect();
            let mut body = json!({
                "model": model,
                "messages": messages,
                "stream": true,
                "stream_options": {"include_usage": true},
                "max_tokens": req.max_tokens.unwrap_or(self.max_tokens),
            });
            for (key, value, _) in req.sampling.fields() {
                if let Some(v) = value {
                    body[key] = json!(v);
                }
            }
            if !req.stop.is_empty() {
                body["stop"] = json!(req.stop);
            }
            match &req.format {
                None => {}
                Some(Value::String(s)) if s == "json" => body["response_format"] = json!({"type": "json_object"}),
                Some(schema) => {
                    body["response_format"] = json!({"type": "json_schema",
                        "json_schema": {"name": "docdex_answer", "strict": true, "schema": schema}})
                }
            }
            let lines = self.http.stream("/v1/chat/completions", &body, &model).await?;
            let wire = SseWire { base: self.http.base.clone(), finish: None, usage: Usage::default(), tokens: 0 };
            Ok(chat_events(lines, wire))
        }
        .boxed()
    }

    fn embed(&self, model: &str, inputs: Vec<String>) -> BoxFuture<'_, Result<Vec<Vec<f32>>>> {
        let model = model.to_string();
        async move {
            if inputs.is_empty() {
                return Ok(Vec::new());
            }
            let n = inputs.len();
            let body = json!({"model": model, "input": inputs, "encoding_format": "float"});
            let mut list: EmbeddingList =
                self.http.json(reqwest::Method::POST, "/v1/embeddings", Some(&body), &model).await?;
            list.data.sort_by_key(|d| d.index);
            check_count(&self.http.base, n, list.data.into_iter().map(|d| d.embedding).collect())
        }
        .boxed()
    }

    fn models(&self) -> BoxFuture<'_, Result<Vec<ModelInfo>>> {
        async move {
            let list: ModelList = self.http.json(reqwest::Method::GET, "/v1/models", None, "").await?;
            Ok(list.data.into_iter().map(|m| ModelInfo { name: m.id, size_bytes: None }).collect())
        }
        .boxed()
    }

    fn context_window<'a>(&'a self, model: &'a str) -> BoxFuture<'a, Result<Option<u32>>> {
        async move {
            let model = if model.is_empty() { self.default_model.as_str() } else { model };
            let list: Value = self.http.json(reqwest::Method::GET, "/v1/models", None, "").await?;
            let listed = models_context_window(&list, model);
            if matches!(listed, Some(Window::Running(_))) {
                return Ok(listed.map(Window::tokens));
            }
            // llama.cpp lists the window the model was trained for; the one it runs with
            // (`--ctx-size`, often far smaller) is in `/props`. Other servers have no `/props`.
            match self.http.json::<Value>(reqwest::Method::GET, "/props", None, "").await {
                Ok(props) => Ok(props_context_window(&props).or(listed.map(Window::tokens))),
                Err(e) => {
                    tracing::debug!(error = %e, "no /props on the openai server: its model list's window stands");
                    Ok(listed.map(Window::tokens))
                }
            }
        }
        .boxed()
    }
}

/// A context window as a model list gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Window {
    /// The window the server runs the model with (vLLM's `max_model_len`, ...).
    Running(u32),
    /// The window the model was trained for (llama.cpp's `n_ctx_train`): an upper bound only.
    Trained(u32),
}

impl Window {
    fn tokens(self) -> u32 {
        match self {
            Window::Running(n) | Window::Trained(n) => n,
        }
    }
}

/// The window llama.cpp's server runs with per request: `/props`
/// `default_generation_settings.n_ctx`.
fn props_context_window(props: &Value) -> Option<u32> {
    let n = props["default_generation_settings"]["n_ctx"].as_u64().or_else(|| props["n_ctx"].as_u64())?;
    Some(n.min(u64::from(u32::MAX)) as u32).filter(|n| *n > 0)
}

/// The context window a model list gives for `model`: vLLM's `max_model_len`, LM Studio's
/// `max_context_length`, `context_length`/`context_window` elsewhere, llama.cpp's `meta.n_ctx_train`.
fn models_context_window(list: &Value, model: &str) -> Option<Window> {
    let entry =
        list["data"].as_array()?.iter().find(|m| m["id"].as_str().is_some_and(|id| super::model_matches(model, id)))?;
    let clamp = |n: u64| Some(n.min(u64::from(u32::MAX)) as u32).filter(|n| *n > 0);
    let running = ["max_model_len", "max_context_length", "context_length", "context_window"]
        .iter()
        .find_map(|k| entry[*k].as_u64())
        .and_then(clamp)
        .map(Window::Running);
    running.or_else(|| entry["meta"]["n_ctx_train"].as_u64().and_then(clamp).map(Window::Trained))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_outside_data_framing_fail_the_answer_with_the_servers_words() {
        let wire = || SseWire { base: "b".into(), finish: None, usage: Usage::default(), tokens: 0 };
        // llama.cpp through 2025, then `data: [DONE]`: before, an empty answer finished `stop`.
        let cpp = r#"error: {"code":400,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"invalid_request_error"}"#;
        let e = wire().on_line(cpp).err().expect("an error");
        assert!(
            e.to_string().contains("exceeds the available context size")
                && e.to_string().contains("[llm] context_tokens"),
            "{e}"
        );
        let bare = r#"{"error":{"message":"backend crashed"}}"#;
        assert!(wire().on_line(bare).err().expect("an error").to_string().contains("backend crashed"));
        assert!(matches!(wire().on_line("event: message"), Ok(Step::Nothing)));
        assert!(matches!(wire().on_line(": ping"), Ok(Step::Nothing)));
    }

    #[test]
    fn reasoning_deltas_are_progress_and_empty_ones_are_not() {
        let mut wire = SseWire { base: "b".into(), finish: None, usage: Usage::default(), tokens: 0 };
        let mut step = |delta: Value| {
            let chunk = json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]});
            wire.on_line(&format!("data: {chunk}")).unwrap()
        };
        assert!(matches!(step(json!({"reasoning_content": "hmm"})), Step::Progress));
        assert!(matches!(step(json!({"reasoning": "hmm", "reasoning_content": "hmm"})), Step::Progress));
        assert!(matches!(step(json!({"content": "", "reasoning_content": " "})), Step::Nothing));
        assert!(matches!(step(json!({"role": "assistant"})), Step::Nothing));
        assert!(matches!(step(json!({"content": "Yes"})), Step::Token(t) if t == "Yes"));
        let usage = json!({"choices": [], "usage": {"prompt_tokens": 90, "completion_tokens": 1,
                           "prompt_tokens_details": {"cached_tokens": 80}}});
        wire.on_line(&format!("data: {usage}")).unwrap();
        let Step::Done(u) = wire.on_line("data: [DONE]").unwrap() else { panic!("not done") };
        assert_eq!((u.prompt_tokens, u.cached_prompt_tokens), (90, 80));
    }

    #[test]
    fn context_window_from_the_model_list() {
        let list = json!({"data": [{"id": "other", "max_model_len": 1}, {"id": "qwen", "max_model_len": 32768}]});
        assert_eq!(models_context_window(&list, "qwen"), Some(Window::Running(32768)));
        let cpp = json!({"data": [{"id": "model.gguf", "meta": {"n_ctx_train": 4096}}]});
        assert_eq!(models_context_window(&cpp, "model.gguf"), Some(Window::Trained(4096)));
        assert_eq!(models_context_window(&list, "missing"), None);
        let props = json!({"default_generation_settings": {"n_ctx": 2048}, "total_slots": 1});
        assert_eq!(props_context_window(&props), Some(2048));
        assert_eq!(props_context_window(&json!({"default_generation_settings": {"n_ctx": 0}})), None);
    }
}
