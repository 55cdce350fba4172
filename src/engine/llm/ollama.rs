//! The Ollama provider (the default): streamed chat over `/api/chat`, embeddings over
//! `/api/embed`, the installed models, and pulls with progress.
//!
//! Requests are built and answers parsed with ollama-rs's wire types; model listing and
//! pulls go through its client. Chat and embeddings are sent through [`Http`] instead of
//! ollama-rs's methods because those turn every HTTP status into a string (so a missing
//! model cannot be told from a server error, and nothing can be retried safely) and its
//! streamed chat drops network reads that end inside a multi-byte character.

use super::http::{chat_events, ChatWire, Failure, Http, Step};
use super::{ChatRequest, ChatStream, ChatUsage, ModelInfo, Provider, PullProgress, Role};
use crate::config::LlmConfig;
use crate::error::{Error, Result};
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use ollama_rs::error::OllamaError;
use ollama_rs::generation::chat::request::ChatMessageRequest;
use ollama_rs::generation::chat::{ChatMessage as OllamaMessage, MessageRole};
use ollama_rs::generation::embeddings::request::GenerateEmbeddingsRequest;
use ollama_rs::generation::embeddings::GenerateEmbeddingsResponse;
use ollama_rs::models::ModelOptions;
use ollama_rs::Ollama;
use serde::Deserialize;
use serde_json::Value;

/// An Ollama server.
pub struct OllamaProvider {
    http: Http,
    client: Ollama,
    default_model: String,
    max_tokens: u32,
}

impl OllamaProvider {
    /// A provider for `[llm] base_url` with the configured timeouts.
    pub fn new(cfg: &LlmConfig) -> Result<OllamaProvider> {
        let http = Http::new("ollama", &cfg.base_url, cfg, None)?;
        // ollama-rs joins paths onto the URL, so it must end in a slash.
        let url = reqwest::Url::parse(&format!("{}/", http.base))
            .map_err(|e| Error::Config { path: "[llm] base_url".into(), message: e.to_string() })?;
        let client = Ollama::builder().url(url).reqwest_client(http.client.clone()).build();
        Ok(OllamaProvider { http, client, default_model: cfg.default_model.clone(), max_tokens: cfg.max_answer_tokens })
    }

    /// Maps an ollama-rs error (model list, pull) onto a retry decision.
    fn classify(&self, e: OllamaError, model: &str) -> Failure {
        match e {
            OllamaError::ReqwestError(e) => self.http.classify_send(&e),
            OllamaError::InternalError(e) => Failure::Fatal(self.upstream(model, &e.message)),
            OllamaError::Other(body) => {
                let msg = super::http::error_message(&body);
                if !model.is_empty() && msg.contains("not found") {
                    Failure::Fatal(Error::ModelNotFound {
                        provider: "ollama".into(),
                        model: model.into(),
                        url: self.http.base.clone(),
                        advice: super::advice::missing_model_advice("ollama", model, None),
                    })
                } else {
                    Failure::Retry(self.upstream(model, &msg))
                }
            }
            other => Failure::Fatal(self.upstream(model, &other.to_string())),
        }
    }

    fn upstream(&self, model: &str, msg: &str) -> Error {
        let what = if model.is_empty() { String::new() } else { format!(" for {model}") };
        Error::Upstream(format!("the ollama server at {}{what}: {msg}", self.http.base))
    }

    async fn pull_model(&self, model: &str, progress: &(dyn Fn(&PullProgress) + Send + Sync)) -> Result<()> {
        let mut stream = match self.client.pull_model_stream(model.to_string(), false).await {
            Ok(s) => s,
            Err(e) => {
                return Err(match self.classify(e, "") {
                    Failure::Fatal(e) | Failure::Retry(e) => match e {
                        Error::Upstream(m) => Error::Upstream(format!("cannot pull {model}: {m}")),
                        other => other,
                    },
                });
            }
        };
        let mut last = String::new();
        loop {
            let next = tokio::time::timeout(self.http.request_timeout, stream.next()).await;
            match next {
                Err(_) => return Err(self.http.timed_out()),
                Ok(None) => break,
                Ok(Some(Err(e))) => {
                    let (Failure::Fatal(e) | Failure::Retry(e)) = self.classify(e, "");
                    return Err(Error::Upstream(format!("pulling {model} failed: {e}")));
                }
                Ok(Some(Ok(s))) => {
                    last = s.message.clone();
                    progress(&PullProgress { status: s.message, completed: s.completed, total: s.total });
                }
            }
        }
        if last == "success" {
            Ok(())
        } else {
            Err(Error::Upstream(format!("pulling {model} ended without success (last status: {last:?})")))
        }
    }
}

fn to_ollama(m: &super::ChatMessage) -> OllamaMessage {
    let role = match m.role {
        Role::System => MessageRole::System,
        Role::User => MessageRole::User,
        Role::Assistant => MessageRole::Assistant,
    };
    OllamaMessage::new(role, m.content.clone())
}

/// The body of a streamed `/api/chat` request.
fn chat_body(req: &ChatRequest, model: &str, max_tokens: u32) -> Result<Value> {
    let mut options = ModelOptions::default().num_predict(max_tokens.min(i32::MAX as u32) as i32);
    if let Some(t) = req.sampling.temperature {
        options = options.temperature(t);
    }
    if let Some(p) = req.sampling.top_p {
        options = options.top_p(p);
    }
    if let Some(n) = req.context_tokens {
        options = options.num_ctx(u64::from(n));
    }
    if !req.stop.is_empty() {
        options = options.stop(req.stop.clone());
    }
    let request =
        ChatMessageRequest::new(model.to_string(), req.messages.iter().map(to_ollama).collect()).options(options);
    let mut body =
        serde_json::to_value(&request).map_err(|e| Error::Upstream(format!("encoding a chat request: {e}")))?;
    body["stream"] = Value::Bool(true);
    // Ollama's options take both penalties; ollama-rs's `ModelOptions` has no setter for them.
    let penalties =
        [("presence_penalty", req.sampling.presence_penalty), ("frequency_penalty", req.sampling.frequency_penalty)];
    for (key, value) in penalties {
        if let (Some(v), Some(options)) = (value, body.get_mut("options").and_then(Value::as_object_mut)) {
            options.insert(key.into(), serde_json::json!(v));
        }
    }
    if let Some(schema) = &req.format {
        body["format"] = schema.clone();
    }
    Ok(body)
}

/// One line of Ollama's streamed chat.
#[derive(Debug, Deserialize)]
struct ChatLine {
    #[serde(default)]
    message: Option<LineMessage>,
    #[serde(default)]
    done: bool,
    #[serde(default)]
    done_reason: Option<String>,
    #[serde(default)]
    prompt_eval_count: Option<u64>,
    #[serde(default)]
    prompt_eval_cached_count: Option<u64>,
    #[serde(default)]
    eval_count: Option<u64>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Debug, Deserialize)]
struct LineMessage {
    #[serde(default)]
    content: String,
    /// A thinking model's reasoning (streamed before the answer): progress, not answer text.
    #[serde(default)]
    thinking: String,
}

/// Ollama's NDJSON chat stream.
struct OllamaWire {
    base: String,
}

impl ChatWire for OllamaWire {
    fn on_line(&mut self, line: &str) -> Result<Step> {
        let parsed: ChatLine = serde_json::from_str(line).map_err(|e| {
            Error::Upstream(format!("the ollama server at {} sent a chat line docdex cannot read ({e})", self.base))
        })?;
        if let Some(err) = parsed.error {
            return Err(Error::Upstream(format!("the ollama server at {} stopped the answer: {err}", self.base)));
        }
        if parsed.done {
            return Ok(Step::Done(ChatUsage {
                prompt_tokens: parsed.prompt_eval_count.unwrap_or(0) as u32,
                cached_prompt_tokens: parsed.prompt_eval_cached_count.unwrap_or(0) as u32,
                completion_tokens: parsed.eval_count.unwrap_or(0) as u32,
                finish_reason: parsed.done_reason.unwrap_or_else(|| "stop".into()),
            }));
        }
        match parsed.message {
            Some(m) if !m.content.is_empty() => Ok(Step::Token(m.content)),
            Some(m) if !m.thinking.trim().is_empty() => Ok(Step::Progress),
            _ => Ok(Step::Nothing),
        }
    }

    fn on_end(&mut self) -> Result<Step> {
        Err(Error::Upstream(format!(
            "the ollama server at {} ended the answer before it was complete. {}",
            self.base,
            super::http::STREAM_CUT_ADVICE
        )))
    }
}

impl Provider for OllamaProvider {
    fn kind(&self) -> &'static str {
        "ollama"
    }

    fn base_url(&self) -> &str {
        &self.http.base
    }

    fn chat(&self, req: ChatRequest) -> BoxFuture<'_, Result<ChatStream>> {
        async move {
            let model = if req.model.is_empty() { self.default_model.clone() } else { req.model.clone() };
            let body = chat_body(&req, &model, req.max_tokens.unwrap_or(self.max_tokens))?;
            let lines = self.http.stream("/api/chat", &body, &model).await?;
            Ok(chat_events(lines, OllamaWire { base: self.http.base.clone() }))
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
            let request = GenerateEmbeddingsRequest::new(model.clone(), inputs.into()).truncate(true);
            let body = serde_json::to_value(&request)
                .map_err(|e| Error::Upstream(format!("encoding an embedding request: {e}")))?;
            let resp: GenerateEmbeddingsResponse =
                self.http.json(reqwest::Method::POST, "/api/embed", Some(&body), &model).await?;
            check_count(&self.http.base, n, resp.embeddings)
        }
        .boxed()
    }

    fn models(&self) -> BoxFuture<'_, Result<Vec<ModelInfo>>> {
        async move {
            // Read by docdex's own lenient shape: ollama-rs requires `modified_at` and more,
            // which Ollama-compatible servers leave out, and said only "Ollama JSON error".
            let tags: Tags = self.http.json(reqwest::Method::GET, "/api/tags", None, "").await?;
            Ok(tags.models.into_iter().map(|m| ModelInfo { name: m.name, size_bytes: m.size }).collect())
        }
        .boxed()
    }

    fn pull<'a>(
        &'a self,
        model: &'a str,
        progress: &'a (dyn Fn(&PullProgress) + Send + Sync),
    ) -> BoxFuture<'a, Result<()>> {
        self.pull_model(model, progress).boxed()
    }

    fn context_window<'a>(&'a self, model: &'a str) -> BoxFuture<'a, Result<Option<u32>>> {
        async move {
            let model = if model.is_empty() { self.default_model.as_str() } else { model };
            let body = serde_json::json!({ "model": model });
            let info: Value = self.http.json(reqwest::Method::POST, "/api/show", Some(&body), model).await?;
            if embedding_only(&info) {
                // Ollama would refuse the chat only after the sources were budgeted to the
                // model's window (512 tokens for an embedder): its own capabilities say so now.
                return Err(Error::ModelCannotChat {
                    provider: "ollama".into(),
                    model: model.into(),
                    url: self.base_url().into(),
                    said: String::new(),
                });
            }
            Ok(show_context_window(&info))
        }
        .boxed()
    }
}

/// `/api/tags` as docdex reads it: a model's `name` is all it needs; every other field
/// (`modified_at`, `digest`, `details`, even `size`) is optional. A missing `name` is an error
/// naming the field ([`super::http::Http::json`] quotes serde's message).
#[derive(Debug, serde::Deserialize)]
struct Tags {
    #[serde(default)]
    models: Vec<TagModel>,
}

/// One model of `/api/tags`.
#[derive(Debug, serde::Deserialize)]
struct TagModel {
    name: String,
    #[serde(default)]
    size: Option<u64>,
}

/// Whether an `/api/show` answer lists the model's capabilities (Ollama 0.6 and later) without
/// `completion`: an embedding model, whatever its name (the catalog and names like `*embed*`
/// only cover the well-known ones). An answer without the list says nothing.
fn embedding_only(info: &Value) -> bool {
    info["capabilities"].as_array().is_some_and(|caps| {
        let has = |c: &str| caps.iter().any(|v| v.as_str() == Some(c));
        has("embedding") && !has("completion")
    })
}

/// The context window in an `/api/show` answer: a `num_ctx` the model's Modelfile sets (what
/// Ollama runs it with), else the `<family>.context_length` it was trained for.
fn show_context_window(info: &Value) -> Option<u32> {
    let from_parameters = info["parameters"].as_str().and_then(|p| {
        p.lines().find_map(|l| {
            let mut parts = l.split_whitespace();
            (parts.next() == Some("num_ctx")).then(|| parts.next().and_then(|n| n.parse::<u32>().ok())).flatten()
        })
    });
    let from_info = info["model_info"]
        .as_object()
        .and_then(|m| m.iter().find(|(k, _)| k.ends_with(".context_length")).and_then(|(_, v)| v.as_u64()));
    from_parameters.or(from_info.map(|n| n.min(u64::from(u32::MAX)) as u32)).filter(|n| *n > 0)
}

/// One vector per input, or an error saying the server answered something else.
pub(crate) fn check_count(base: &str, wanted: usize, vectors: Vec<Vec<f32>>) -> Result<Vec<Vec<f32>>> {
    if vectors.len() != wanted || vectors.iter().any(|v| v.is_empty()) {
        return Err(Error::Upstream(format!(
            "the server at {base} returned {} embeddings for {wanted} inputs",
            vectors.len()
        )));
    }
    Ok(vectors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::llm::ChatEvent;
    use std::time::Duration;

    /// `lines` sent one every `every`, as a streamed body.
    fn paced(lines: Vec<String>, every: Duration) -> super::super::http::Lines {
        let body = futures::stream::iter(lines)
            .then(move |l| async move {
                tokio::time::sleep(every).await;
                Ok(format!("{l}\n").into_bytes())
            })
            .boxed();
        super::super::http::Lines::new(body, Duration::from_millis(300), "silent".into())
    }

    #[tokio::test]
    async fn thinking_keeps_a_stream_alive_and_empty_messages_do_not() {
        let line = |content: &str, thinking: &str| {
            serde_json::json!({"message": {"role": "assistant", "content": content, "thinking": thinking}, "done": false})
                .to_string()
        };
        let done = serde_json::json!({"done": true, "done_reason": "stop", "prompt_eval_count": 9}).to_string();
        // Ten pieces of thinking 100 ms apart: a second without a word of the answer.
        let mut thinking: Vec<String> = (0..10).map(|_| line("", "hmm")).collect();
        thinking.extend([line("Yes.", ""), done.clone()]);
        let events: Vec<_> =
            chat_events(paced(thinking, Duration::from_millis(100)), OllamaWire { base: "b".into() }).collect().await;
        assert!(
            matches!(events.as_slice(), [Ok(ChatEvent::Token(t)), Ok(ChatEvent::Done(_))] if t == "Yes."),
            "{events:?}"
        );
        let mut empty: Vec<String> = (0..10).map(|_| line("", "")).collect();
        empty.extend([line("Yes.", ""), done]);
        let events: Vec<_> =
            chat_events(paced(empty, Duration::from_millis(100)), OllamaWire { base: "b".into() }).collect().await;
        assert!(matches!(events.as_slice(), [Err(e)] if e.to_string().contains("only keep-alives")), "{events:?}");
    }

    #[test]
    fn a_tags_answer_needs_only_names_and_a_missing_name_is_named() {
        let tags: Tags =
            serde_json::from_str(r#"{"models": [{"name": "a:latest"}, {"name": "b", "size": 7}]}"#).unwrap();
        let sizes: Vec<_> = tags.models.iter().map(|m| (m.name.as_str(), m.size)).collect();
        assert_eq!(sizes, [("a:latest", None), ("b", Some(7))]);
        let e = serde_json::from_str::<Tags>(r#"{"models": [{"size": 7}]}"#).unwrap_err();
        assert!(e.to_string().contains("missing field `name`"), "{e}");
    }

    #[test]
    fn context_window_prefers_the_modelfile_num_ctx() {
        let trained =
            serde_json::json!({"parameters": "stop \"<|end|>\"", "model_info": {"llama.context_length": 131072}});
        assert_eq!(show_context_window(&trained), Some(131072));
        let set =
            serde_json::json!({"parameters": "num_ctx 4096\nstop x", "model_info": {"phi3.context_length": 131072}});
        assert_eq!(show_context_window(&set), Some(4096));
        assert_eq!(show_context_window(&serde_json::json!({"model_info": {}})), None);
    }

    #[test]
    fn capabilities_without_completion_mean_an_embedding_model() {
        assert!(embedding_only(&serde_json::json!({"capabilities": ["embedding"]})));
        assert!(!embedding_only(&serde_json::json!({"capabilities": ["completion", "tools"]})));
        assert!(!embedding_only(&serde_json::json!({"capabilities": ["completion", "embedding"]})));
        assert!(!embedding_only(&serde_json::json!({"model_info": {}})), "an older server says nothing");
    }
}
