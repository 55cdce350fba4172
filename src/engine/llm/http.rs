//! HTTP plumbing both providers share: one reqwest client with a connect timeout,
//! per-request timeouts, retries with backoff for idempotent calls, failures
//! classified into the engine's typed errors (unreachable server, missing model,
//! upstream trouble), and a byte-safe line reader for streamed bodies (Ollama's
//! NDJSON and OpenAI's server-sent events).
//!
//! Retry policy: a refused connection is never retried (nothing listens, and a
//! dead server must fail fast), nor is a timeout (a server that let a whole
//! `request_timeout_secs` pass is stuck or overloaded: three attempts would triple
//! the wait); dropped connections, 429 and 5xx are retried for idempotent calls
//! only; a stream is never retried once it started.

use super::{ChatEvent, ChatStream, ChatUsage};
use crate::config::LlmConfig;
use crate::error::{Error, Result};
use futures::stream::BoxStream;
use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::time::Duration;

/// What to do when a model server stops an answer part-way: it usually crashed (out of
/// memory) or was restarted.
pub(crate) const STREAM_CUT_ADVICE: &str =
    "It may have crashed or restarted (out of memory, a model swap): check it (for Ollama: `ollama ps` and its log), then ask again";

/// Attempts for an idempotent call (the first try included).
const ATTEMPTS: u32 = 3;
/// First backoff; doubled after each failed attempt.
const BACKOFF: Duration = Duration::from_millis(200);
/// How long a missing model's advice waits for the server's list of installed models.
const INSTALLED_WAIT: Duration = Duration::from_secs(2);

/// What a failed attempt means for the next one.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Worth another attempt (timeouts, resets, 429, 5xx).
    Retry(Error),
    /// Final: unreachable server, missing model, a request the server refuses.
    Fatal(Error),
}

impl Failure {
    fn into_error(self) -> Error {
        match self {
            Failure::Retry(e) | Failure::Fatal(e) => e,
        }
    }
}

/// A client for one server.
#[derive(Debug, Clone)]
pub(crate) struct Http {
    pub client: reqwest::Client,
    /// Base URL without a trailing slash.
    pub base: String,
    /// `ollama` or `openai`, for messages.
    pub provider: &'static str,
    /// Bound on a non-streamed request, and on silence inside a stream.
    pub request_timeout: Duration,
    /// Sent as `Authorization: Bearer` when set.
    pub bearer: Option<String>,
}

impl Http {
    /// A client for `base` with the timeouts from `cfg`.
    pub fn new(provider: &'static str, base: &str, cfg: &LlmConfig, bearer: Option<String>) -> Result<Http> {
        let parsed = reqwest::Url::parse(base).map_err(|e| Error::Config {
            path: "[llm] base_url".into(),
            message: format!("{base:?} is not a URL ({e}); use e.g. http://127.0.0.1:11434"),
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(Error::Config {
                path: "[llm] base_url".into(),
                message: format!("{base:?} must start with http:// or https://"),
            });
        }
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_millis(cfg.connect_timeout_ms.max(1)))
            .pool_idle_timeout(Duration::from_secs(30))
            .user_agent(concat!("docdex/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Error::Upstream(format!("cannot create an HTTP client: {e}")))?;
        Ok(Http {
            client,
            base: base.trim_end_matches('/').to_string(),
            provider,
            request_timeout: Duration::from_secs(cfg.request_timeout_secs.max(1)),
            bearer,
        })
    }

    /// `base + path` (`path` starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn unreachable(&self, reason: String) -> Error {
        Error::LlmUnreachable { provider: self.provider.to_string(), url: self.base.clone(), reason }
    }

    /// Classifies an error from sending a request or reading its body.
    pub fn classify_send(&self, e: &reqwest::Error) -> Failure {
        if e.is_connect() {
            return Failure::Fatal(self.unreachable(root_cause(e)));
        }
        if e.is_timeout() {
            return Failure::Fatal(self.timed_out());
        }
        Failure::Retry(Error::Upstream(format!("{} server at {}: {}", self.provider, self.base, root_cause(e))))
    }

    /// The error for a request that took longer than the request timeout.
    pub fn timed_out(&self) -> Error {
        Error::LlmTimeout {
            provider: self.provider.to_string(),
            url: self.base.clone(),
            waited: format!("{}s", self.request_timeout.as_secs()),
            setting: "request_timeout_secs",
        }
    }

    /// Classifies a non-success response. `model` names the model the request used, if any.
    pub async fn classify_status(&self, resp: reqwest::Response, model: &str) -> Failure {
        let status = resp.status();
        let body = resp.text().await.unwrap_or_default();
        let message = error_message(&body);
        let lower = message.to_ascii_lowercase();
        // Before the missing-model check: LM Studio says "Failed to load model" with code
        // `model_not_found` for a model it has but cannot chat with.
        if !model.is_empty() && cannot_chat(&lower) {
            return Failure::Fatal(Error::ModelCannotChat {
                provider: self.provider.to_string(),
                model: model.to_string(),
                url: self.base.clone(),
                said: message,
            });
        }
        let says_missing = lower.contains("not found") || lower.contains("does not exist") || lower.contains("no such");
        if !model.is_empty() && says_missing && (status.as_u16() == 404 || lower.contains("model")) {
            let installed = self.installed_names().await;
            return Failure::Fatal(Error::ModelNotFound {
                provider: self.provider.to_string(),
                model: model.to_string(),
                url: self.base.clone(),
                advice: super::advice::missing_model_advice(self.provider, model, installed.as_deref()),
            });
        }
        let advice = context_overflow_advice(&body, &message);
        let said = format!(
            "the {} server at {} answered {}: {}{advice}",
            self.provider,
            self.base,
            status.as_u16(),
            if message.is_empty() { status.canonical_reason().unwrap_or("error").to_string() } else { message }
        );
        if !advice.is_empty() {
            // A prompt over the server's window fails the same way every time: no retry.
            return Failure::Fatal(Error::ContextOverflow(said));
        }
        let err = Error::Upstream(said);
        if status.as_u16() == 429 || status.is_server_error() {
            Failure::Retry(err)
        } else {
            Failure::Fatal(err)
        }
    }

    /// The models the server lists (Ollama's `/api/tags`, else `/v1/models`), for a missing
    /// model's advice: one attempt of at most [`INSTALLED_WAIT`]; `None` when it does not say.
    async fn installed_names(&self) -> Option<Vec<String>> {
        let (path, list, key) = match self.provider {
            "ollama" => ("/api/tags", "models", "name"),
            _ => ("/v1/models", "data", "id"),
        };
        let send = self.request(reqwest::Method::GET, path, None).send();
        let wait = INSTALLED_WAIT.min(self.request_timeout);
        let resp = tokio::time::timeout(wait, send).await.ok()?.ok()?.error_for_status().ok()?;
        let v: Value = tokio::time::timeout(wait, resp.json()).await.ok()?.ok()?;
        let names = v[list].as_array()?.iter().filter_map(|m| m[key].as_str().map(str::to_string)).collect();
        Some(names)
    }

    fn request(&self, method: reqwest::Method, path: &str, body: Option<&Value>) -> reqwest::RequestBuilder {
        let mut rb = self.client.request(method, self.url(path));
        if let Some(token) = &self.bearer {
            rb = rb.bearer_auth(token);
        }
        if let Some(b) = body {
            rb = rb.json(b);
        }
        rb
    }

    /// One attempt: sends and waits for a success status (headers only).
    async fn attempt(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        model: &str,
    ) -> Result<reqwest::Response, Failure> {
        let send = self.request(method, path, body).send();
        let resp = match tokio::time::timeout(self.request_timeout, send).await {
            Err(_) => return Err(Failure::Fatal(self.timed_out())),
            Ok(Err(e)) => return Err(self.classify_send(&e)),
            Ok(Ok(r)) => r,
        };
        if resp.status().is_success() {
            Ok(resp)
        } else {
            Err(self.classify_status(resp, model).await)
        }
    }

    /// Sends an idempotent request and parses the JSON answer, retrying with backoff.
    pub async fn json<T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        model: &str,
    ) -> Result<T> {
        retry(|| async {
            let resp = self.attempt(method.clone(), path, body, model).await?;
            let bytes = match tokio::time::timeout(self.request_timeout, resp.bytes()).await {
                Err(_) => return Err(Failure::Fatal(self.timed_out())),
                Ok(Err(e)) => return Err(self.classify_send(&e)),
                Ok(Ok(b)) => b,
            };
            serde_json::from_slice::<T>(&bytes).map_err(|e| {
                Failure::Fatal(Error::Upstream(format!(
                    "the {} server at {} sent an answer to {path} docdex cannot read ({e}): {}",
                    self.provider,
                    self.base,
                    String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
                )))
            })
        })
        .await
    }

    /// Starts a streamed request. Failures before the server accepted it (connection,
    /// status) are retried when they are retryable: nothing has been generated yet.
    pub async fn stream(&self, path: &str, body: &Value, model: &str) -> Result<Lines> {
        let resp = retry(|| self.attempt(reqwest::Method::POST, path, Some(body), model)).await?;
        let provider = self.provider;
        let base = self.base.clone();
        let bytes = resp
            .bytes_stream()
            .map(move |r| {
                r.map(|b| b.to_vec()).map_err(|e| {
                    Error::Upstream(format!(
                        "the {provider} server at {base} broke off the stream: {}. {STREAM_CUT_ADVICE}",
                        root_cause(&e)
                    ))
                })
            })
            .boxed();
        Ok(Lines::new(bytes, self.request_timeout, self.timed_out().to_string()))
    }
}

/// Runs `attempt` up to [`ATTEMPTS`] times while it fails with [`Failure::Retry`].
pub(crate) async fn retry<T, F, Fut>(mut attempt: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Failure>>,
{
    let mut wait = BACKOFF;
    let mut n = 1;
    loop {
        match attempt().await {
            Ok(v) => return Ok(v),
            Err(Failure::Retry(e)) if n < ATTEMPTS => {
                tracing::debug!(attempt = n, error = %e, "retrying model server request");
                tokio::time::sleep(wait).await;
                wait *= 2;
                n += 1;
            }
            Err(f) => return Err(f.into_error()),
        }
    }
}

/// A streamed body cut into lines without ever splitting a multi-byte character: bytes are
/// buffered until a newline, so a character cut across two network reads is rejoined.
///
/// The idle timer counts the time spent waiting on the server since the last
/// [`Lines::progressed`], not since the last bytes: a server (or a proxy before it) that sends
/// keep-alives, blank lines or empty deltas forever would otherwise hold a turn, and its chat
/// slot, for good. Time the caller spends between reads (a slow reader, with TCP holding the
/// server back) is not the server's silence and does not count.
pub(crate) struct Lines {
    body: BoxStream<'static, Result<Vec<u8>>>,
    buf: Vec<u8>,
    idle: Duration,
    /// Time spent waiting on the body since the last progress.
    waited: Duration,
    /// Bytes arrived since the last progress (keep-alives): said in the timeout's message.
    chatter: bool,
    ended: bool,
    what: String,
}

impl Lines {
    /// Lines of `body`, given up on after `idle` without progress; `what` is the timeout's message.
    pub fn new(body: BoxStream<'static, Result<Vec<u8>>>, idle: Duration, what: String) -> Lines {
        Lines { body, buf: Vec::new(), idle, waited: Duration::ZERO, chatter: false, ended: false, what }
    }

    /// Real progress (an answer token, reasoning, the end): the idle timer starts again.
    pub fn progressed(&mut self) {
        self.waited = Duration::ZERO;
        self.chatter = false;
    }

    /// The next non-empty line (without `\r\n`), `None` at the end of the body. Gives up when
    /// the request timeout passes without [`Lines::progressed`], whatever bytes arrive meanwhile.
    pub async fn next_line(&mut self) -> Option<Result<String>> {
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf) {
                let line: Vec<u8> = self.buf.drain(..=i).collect();
                let text = String::from_utf8_lossy(&line).trim_end_matches(['\r', '\n']).to_string();
                if text.trim().is_empty() {
                    continue;
                }
                return Some(Ok(text));
            }
            if self.ended {
                if self.buf.iter().all(|b| b.is_ascii_whitespace()) {
                    return None;
                }
                let text = String::from_utf8_lossy(&std::mem::take(&mut self.buf)).trim().to_string();
                return Some(Ok(text));
            }
            let left = self.idle.saturating_sub(self.waited);
            let started = tokio::time::Instant::now();
            let read = match left.is_zero() {
                true => Err(()),
                false => tokio::time::timeout(left, self.body.next()).await.map_err(|_| ()),
            };
            self.waited += started.elapsed();
            match read {
                Err(()) => {
                    self.ended = true;
                    self.buf.clear();
                    let what = match self.chatter {
                        true => format!(
                            "{}. It sent only keep-alives or empty pieces meanwhile, which are not an answer",
                            self.what
                        ),
                        false => self.what.clone(),
                    };
                    return Some(Err(Error::Upstream(what)));
                }
                Ok(None) => self.ended = true,
                Ok(Some(Ok(bytes))) => {
                    self.chatter = true;
                    self.buf.extend_from_slice(&bytes)
                }
                Ok(Some(Err(e))) => {
                    self.ended = true;
                    self.buf.clear();
                    return Some(Err(e));
                }
            }
        }
    }
}

/// What one line of a streamed answer meant.
pub(crate) enum Step {
    /// A piece of the answer.
    Token(String),
    /// The answer is complete.
    Done(ChatUsage),
    /// The model is working but has no answer text yet (a reasoning model's thinking): keeps
    /// the stream alive, shows nothing.
    Progress,
    /// Nothing to report (keep-alives, role headers, empty deltas): does not count as progress.
    Nothing,
}

/// A provider's streamed wire format, line by line.
pub(crate) trait ChatWire: Send + 'static {
    /// Interprets one line.
    fn on_line(&mut self, line: &str) -> Result<Step>;
    /// The body ended; `Done` if the format allows ending here, else an error.
    fn on_end(&mut self) -> Result<Step>;
}

/// Turns a streamed body into [`ChatEvent`]s: tokens, then exactly one `Done`, or an error.
/// Nothing is read ahead: the body is pulled only as fast as the consumer pulls events, so a
/// slow reader slows the server down (TCP backpressure) instead of buffering the answer.
pub(crate) fn chat_events<W: ChatWire>(lines: Lines, wire: W) -> ChatStream {
    struct State<W> {
        lines: Lines,
        wire: W,
        finished: bool,
    }
    futures::stream::unfold(State { lines, wire, finished: false }, |mut st| async move {
        if st.finished {
            return None;
        }
        loop {
            let step = match st.lines.next_line().await {
                Some(Ok(line)) => st.wire.on_line(&line),
                Some(Err(e)) => Err(e),
                None => st.wire.on_end(),
            };
            match step {
                Ok(Step::Nothing) => continue,
                Ok(Step::Progress) => st.lines.progressed(),
                Ok(Step::Token(t)) => {
                    st.lines.progressed();
                    return Some((Ok(ChatEvent::Token(t)), st));
                }
                Ok(Step::Done(u)) => {
                    st.finished = true;
                    return Some((Ok(ChatEvent::Done(u)), st));
                }
                Err(e) => {
                    st.finished = true;
                    return Some((Err(e), st));
                }
            }
        }
    })
    .boxed()
}

/// The innermost cause of an error ("Connection refused (os error 111)").
pub(crate) fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur: &(dyn std::error::Error + 'static) = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// What to do when a server refused a prompt longer than the context window it runs with
/// (llama.cpp's `exceed_context_size_error` with `n_ctx`, vLLM's "maximum context length is N
/// tokens", LM Studio's "greater than the context length"); empty for other errors. Such a
/// server was started with a smaller window than `[llm] context_tokens` budgets for, and says
/// nothing about it in its model list.
pub(crate) fn context_overflow_advice(body: &str, message: &str) -> String {
    let lower = message.to_ascii_lowercase();
    let overflow = body.contains("exceed_context_size")
        || lower.contains("maximum context length")
        || lower.contains("context_length_exceeded")
        || (lower.contains("context")
            && ["exceed", "greater than", "too long", "overflow"].iter().any(|w| lower.contains(w)));
    if !overflow {
        return String::new();
    }
    let n_ctx = serde_json::from_str::<Value>(body).ok().and_then(|v| v["error"]["n_ctx"].as_u64()).or_else(|| {
        let rest = &lower[lower.find("maximum context length is ")? + "maximum context length is ".len()..];
        rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
    });
    let window = n_ctx.map(|n| format!(" ({n} tokens)")).unwrap_or_default();
    format!(
        ". The prompt is longer than the context window the server runs with{window}: set `[llm] context_tokens` to that window so docdex budgets the prompt to fit it, or restart the server with a larger one (llama.cpp: `--ctx-size`; vLLM: `--max-model-len`; LM Studio: the model's context length)"
    )
}

/// The human message inside an error body: Ollama's `{"error": "..."}`, OpenAI's
/// `{"error": {"message": "..."}}`, or the text itself.
pub(crate) fn error_message(body: &str) -> String {
    match serde_json::from_str::<Value>(body) {
        Ok(v) => match &v["error"] {
            Value::String(s) => s.clone(),
            Value::Object(o) => o.get("message").and_then(|m| m.as_str()).unwrap_or_default().to_string(),
            _ => v["message"].as_str().unwrap_or_default().to_string(),
        },
        Err(_) => body.trim().chars().take(300).collect(),
    }
}

/// What servers say, lowercased, when the model (or the server) cannot chat at all. Only
/// these words count: a status alone (llama.cpp's 501, OpenAI's 404) also means a missing
/// route or an unimplemented feature, and a dead or failing server must stay "unavailable".
const CANNOT_CHAT_SAID: [&str; 6] = [
    // Ollama, both APIs: 400 `"all-minilm" does not support chat`; vLLM serving a pooling
    // model: "The model does not support Chat Completions API" (400, 501 from v0.10).
    "does not support chat",
    // Ollama's `/api/generate`; Ollama before 0.3.
    "does not support generate",
    "embedding models do not support",
    // llama.cpp's server started with `--embeddings`: 501 "This server does not support
    // completions. Start it without `--embeddings`".
    "does not support completions",
    // OpenAI: 404 "This is not a chat model and thus not supported in the
    // v1/chat/completions endpoint".
    "not a chat model",
    // LM Studio: "Failed to load model \"x\". Error: Model is not llm." (as it says "Model is
    // not embedding." of a chat model asked to embed).
    "model is not llm",
];

/// Whether a server's error message (lowercased) says the model cannot chat.
fn cannot_chat(lower: &str) -> bool {
    CANNOT_CHAT_SAID.iter().any(|said| lower.contains(said))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_from_both_wire_formats() {
        assert_eq!(error_message(r#"{"error":"model 'x' not found"}"#), "model 'x' not found");
        assert_eq!(error_message(r#"{"error":{"message":"nope","type":"invalid"}}"#), "nope");
        assert_eq!(error_message("plain text\n"), "plain text");
    }

    #[test]
    fn only_a_servers_words_say_a_model_cannot_chat() {
        for said in [
            "\"all-minilm\" does not support chat",
            "The model does not support Chat Completions API",
            "This server does not support completions. Start it without `--embeddings`",
            "This is not a chat model and thus not supported in the v1/chat/completions endpoint.",
            "Failed to load model \"nomic\". Error: Model is not llm.",
        ] {
            assert!(cannot_chat(&said.to_ascii_lowercase()), "{said}");
        }
        for said in ["Not Implemented", "File Not Found", "model 'x' not found", "Model is not embedding.", ""] {
            assert!(!cannot_chat(&said.to_ascii_lowercase()), "{said}");
        }
    }

    #[test]
    fn a_prompt_over_the_servers_window_gets_advice_naming_it() {
        let cpp = r#"{"error":{"code":400,"message":"request (4476 tokens) exceeds the available context size (4096 tokens)","type":"exceed_context_size_error","n_prompt_tokens":4476,"n_ctx":4096}}"#;
        let a = context_overflow_advice(cpp, &error_message(cpp));
        assert!(a.contains("(4096 tokens)") && a.contains("[llm] context_tokens"), "{a}");
        let vllm = r#"{"object":"error","message":"This model's maximum context length is 2048 tokens. However, you requested 6000 tokens.","type":"BadRequestError"}"#;
        assert!(context_overflow_advice(vllm, &error_message(vllm)).contains("(2048 tokens)"));
        let lms =
            r#"{"error":"The number of tokens to keep from the initial prompt is greater than the context length"}"#;
        assert!(context_overflow_advice(lms, &error_message(lms)).contains("--ctx-size"));
        let other = r#"{"error":{"message":"invalid temperature"}}"#;
        assert_eq!(context_overflow_advice(other, &error_message(other)), "");
    }

    /// Keep-alives do not restart the idle timer; a reader that takes its time between lines
    /// does not use it up.
    #[tokio::test]
    async fn only_progress_restarts_the_idle_timer_and_a_slow_reader_does_not_run_it_down() {
        let paced = |lines: Vec<&'static str>| {
            futures::stream::iter(lines)
                .then(|l| async move {
                    tokio::time::sleep(Duration::from_millis(60)).await;
                    Ok(l.as_bytes().to_vec())
                })
                .boxed()
        };
        let mut chatty = Lines::new(paced(vec!["\n"; 20]), Duration::from_millis(300), "silent".into());
        let started = std::time::Instant::now();
        let err = chatty.next_line().await.unwrap().unwrap_err().to_string();
        assert!(err.contains("only keep-alives") && started.elapsed() < Duration::from_millis(600), "{err}");
        let mut slow = Lines::new(paced(vec!["a\n", "b\n", "c\n"]), Duration::from_millis(300), "silent".into());
        for want in ["a", "b", "c"] {
            assert_eq!(slow.next_line().await.unwrap().unwrap(), want);
            slow.progressed();
            tokio::time::sleep(Duration::from_millis(400)).await; // longer than the idle bound
        }
    }

    #[tokio::test]
    async fn lines_rejoin_characters_split_across_reads() {
        let text = "{\"a\":\"é\"}\n\n{\"b\":1}\r\nlast";
        let bytes = text.as_bytes();
        // Split inside the two-byte é.
        let cut = text.find('é').unwrap() + 1;
        let parts: Vec<Result<Vec<u8>>> = vec![Ok(bytes[..cut].to_vec()), Ok(bytes[cut..].to_vec())];
        let mut lines = Lines::new(futures::stream::iter(parts).boxed(), Duration::from_secs(1), String::new());
        assert_eq!(lines.next_line().await.unwrap().unwrap(), "{\"a\":\"é\"}");
        assert_eq!(lines.next_line().await.unwrap().unwrap(), "{\"b\":1}");
        assert_eq!(lines.next_line().await.unwrap().unwrap(), "last");
        assert!(lines.next_line().await.is_none());
    }

    #[tokio::test]
    async fn retry_stops_on_fatal_and_gives_up_after_attempts() {
        let mut calls = 0;
        let r: Result<()> = retry(|| {
            calls += 1;
            async { Err(Failure::Fatal(Error::Upstream("no".into()))) }
        })
        .await;
        assert!(r.is_err());
        assert_eq!(calls, 1);
        let mut calls = 0;
        let r: Result<()> = retry(|| {
            calls += 1;
            async { Err(Failure::Retry(Error::Upstream("again".into()))) }
        })
        .await;
        assert!(r.is_err());
        assert_eq!(calls, ATTEMPTS);
    }
}
