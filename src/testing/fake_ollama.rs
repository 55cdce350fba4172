//! A deterministic server that speaks the Ollama HTTP API (and the OpenAI-compatible
//! `/v1` endpoints Ollama also serves) over real loopback HTTP.
//!
//! Ollama itself cannot be installed where the tests run, so tests start this instead:
//! - embeddings are hashed bags of words (identifiers split into parts), L2-normalised,
//!   so texts sharing words are near each other, and the same text always embeds the same;
//! - chat streams a fixed-shape answer word by word: `FAKE ANSWER to "<last user message>"`
//!   followed by every `path:line-line` citation found in the prompt, so tests can check
//!   that context reached the model;
//! - every request body is recorded (`requests()`, or `GET /fake/requests`) for assertions;
//! - replies can be scripted (`script`): a chat whose messages contain a marker gets the next
//!   scripted reply verbatim (the evolution pipeline's JSON decisions in tests);
//! - failures can be injected (`fail_first`) and tokens slowed (`token_delay_ms`, and
//!   `first_token_delay_ms` for a model that takes long to read the prompt);
//! - `openai_only` serves just the `/v1` endpoints, like llama.cpp's server or vLLM;
//! - `chunk_bytes` cuts streamed bodies into tiny network writes (even inside a character);
//! - `cut_after_pieces` ends a streamed Ollama chat answer early, without its `done` line (a
//!   model that crashed mid-answer);
//! - `open_streams()` counts streamed bodies still being sent, so a test can see the caller
//!   hang up (a huge `first_token_delay_ms` is a model that never answers);
//! - `keep_alive_only_ms` answers a streamed chat with keep-alives only, forever (blank lines,
//!   SSE comments and empty-content messages: a stuck server behind a chatty proxy);
//! - `prompt_tokens_seen` caps the prompt token count a chat reports (a server that silently
//!   cut the prompt to fit a smaller context window);
//! - `v1_context_window` makes `/v1/chat/completions` refuse longer prompts with llama.cpp's
//!   400 `exceed_context_size_error`; `props_n_ctx` serves llama.cpp's `/props` with the
//!   window it runs with;
//! - `v1_refuses_embedding_chat` makes `/v1/chat/completions` refuse an embedding model (a
//!   name with `embed` in it) with a given status and body: how llama.cpp, vLLM, LM Studio or
//!   OpenAI itself answer a chat they cannot hold.
//!
//! Real models behind the same API: `../shared/tools/ollama-shim`.

use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How the fake behaves.
#[derive(Debug, Clone)]
pub struct FakeOllamaOptions {
    /// Installed models (as `/api/tags` lists them). Names without a tag get `:latest`.
    pub models: Vec<String>,
    /// Models `/api/pull` can fetch (they become installed).
    pub pullable: Vec<String>,
    /// Embedding dimension.
    pub embed_dim: usize,
    /// Delay before each streamed chat token.
    pub token_delay_ms: u64,
    /// Delay before the first streamed chat token (a model reading a long prompt); the
    /// response headers are sent at once.
    pub first_token_delay_ms: u64,
    /// The first N requests to `/api/*` and `/v1/*` (other than `/`) answer 500.
    pub fail_first: u32,
    /// Port to bind on 127.0.0.1 (0 picks a free one).
    pub port: u16,
    /// Serve only the OpenAI-compatible `/v1/*` endpoints (everything else is 404).
    pub openai_only: bool,
    /// When non-zero, streamed bodies are written in pieces of at most this many bytes.
    pub chunk_bytes: usize,
    /// Context window the models report (`/api/show` `model_info`, `/v1/models`
    /// `max_model_len`); none when `None`.
    pub context_length: Option<u64>,
    /// When non-zero, a streamed `/api/chat` answer stops after this many pieces, without the
    /// final `done` line.
    pub cut_after_pieces: usize,
    /// Delay before each `/api/embed` answer of more than one text (a slow embedder, for runs
    /// killed mid-phase; a one-text probe answers at once, as a warm server's would).
    pub embed_delay_ms: u64,
    /// Delay before each `/api/embed` answer of one text (an indexer's probe meeting a model
    /// still loading).
    pub embed_probe_delay_ms: u64,
    /// When non-zero, a streamed chat (either API) sends nothing but a keep-alive every this
    /// many milliseconds, until the caller hangs up: never a token, never `done`.
    pub keep_alive_only_ms: u64,
    /// When set, a chat reports at most this many prompt tokens (`prompt_eval_count`,
    /// `usage.prompt_tokens`): what a server that truncated the prompt to its window says.
    pub prompt_tokens_seen: Option<usize>,
    /// When set, `/v1/chat/completions` refuses a prompt of more tokens (as reported) as
    /// llama.cpp's server does: 400 `exceed_context_size_error` with `n_ctx`.
    pub v1_context_window: Option<usize>,
    /// When set, `/props` answers as llama.cpp's does, with this as
    /// `default_generation_settings.n_ctx` (the window it runs with); 404 otherwise.
    pub props_n_ctx: Option<u64>,
    /// When set, `/v1/chat/completions` with an embedding model (a name containing `embed`)
    /// answers this status and JSON body (a server's own words for "not a chat model").
    pub v1_refuses_embedding_chat: Option<(u16, Value)>,
    /// Installed models that are embedding models whatever their name: `/api/show` lists
    /// their capabilities as `["embedding"]` and `/api/chat` refuses them, as Ollama does.
    /// (Names holding `embed` or starting `all-minilm` are embedding models anyway.)
    pub embedding_models: Vec<String>,
    /// `/api/tags` lists each model by `name` alone, as some Ollama-compatible servers do
    /// (no `modified_at`, `size`, `digest` or `details`).
    pub bare_tags: bool,
    /// The prompt tokens a chat reports, in percent of `cl100k_base` (plus 4 per message):
    /// 90 by default, as Llama 3 counts code; more for a model whose tokenizer counts a prompt
    /// denser than the one its ratio was measured on.
    pub prompt_count_percent: usize,
}

impl Default for FakeOllamaOptions {
    fn default() -> Self {
        FakeOllamaOptions {
            models: vec!["fake-chat:latest".into(), "fake-embed:latest".into()],
            pullable: vec!["llama3.2:1b".into(), "nomic-embed-text:latest".into()],
            embed_dim: 64,
            token_delay_ms: 0,
            first_token_delay_ms: 0,
            fail_first: 0,
            port: 0,
            openai_only: false,
            chunk_bytes: 0,
            context_length: None,
            cut_after_pieces: 0,
            embed_delay_ms: 0,
            embed_probe_delay_ms: 0,
            keep_alive_only_ms: 0,
            prompt_tokens_seen: None,
            v1_context_window: None,
            props_n_ctx: None,
            v1_refuses_embedding_chat: None,
            embedding_models: Vec::new(),
            bare_tags: false,
            prompt_count_percent: 90,
        }
    }
}

struct Shared {
    opts: FakeOllamaOptions,
    installed: Mutex<Vec<String>>,
    requests: Mutex<Vec<(String, Value)>>,
    failures_left: AtomicU32,
    /// (marker, replies left, delay before the first piece in ms) in the order scripted.
    scripts: Mutex<Vec<(String, std::collections::VecDeque<String>, u64)>>,
    /// Streamed bodies not yet finished or dropped (the caller closing the connection drops one).
    open_streams: Arc<std::sync::atomic::AtomicUsize>,
}

/// A running fake; stops when dropped.
pub struct FakeOllama {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeOllama {
    /// Starts the server on its own thread and runtime (usable from sync and async tests).
    pub fn start(opts: FakeOllamaOptions) -> std::io::Result<FakeOllama> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", opts.port))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            installed: Mutex::new(opts.models.iter().map(|m| with_tag(m)).collect()),
            failures_left: AtomicU32::new(opts.fail_first),
            requests: Mutex::new(Vec::new()),
            scripts: Mutex::new(Vec::new()),
            open_streams: Arc::default(),
            opts,
        });
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let app = router(shared.clone());
        let thread = std::thread::Builder::new().name("fake-ollama".into()).spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
            rt.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else { return };
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async move {
                        let _ = rx.await;
                    })
                    .await;
            });
        })?;
        Ok(FakeOllama { addr, shared, shutdown: Some(tx), thread: Some(thread) })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request so far: (path, JSON body or null).
    pub fn requests(&self) -> Vec<(String, Value)> {
        self.shared.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// Scripts the replies to chats whose messages contain `marker`: each such chat gets the
    /// next reply, verbatim and in order; when they run out, the usual fixed-shape answer.
    pub fn script(&self, marker: &str, replies: Vec<String>) {
        self.script_delayed(marker, replies, 0);
    }

    /// [`FakeOllama::script`] with each reply's first piece held back `delay_ms` (a model
    /// thinking), so tests can tell whether a caller waited for it.
    pub fn script_delayed(&self, marker: &str, replies: Vec<String>, delay_ms: u64) {
        if let Ok(mut s) = self.shared.scripts.lock() {
            s.push((marker.to_string(), replies.into(), delay_ms));
        }
    }

    /// Chat requests so far whose messages contain `marker`.
    pub fn chats_with(&self, marker: &str) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|(p, b)| (p == "/api/chat" || p == "/v1/chat/completions") && b.to_string().contains(marker))
            .map(|(_, b)| b)
            .collect()
    }

    /// Streamed bodies (chat answers, pulls) being sent right now: one drops when it is sent
    /// in full or when the caller closes its connection.
    pub fn open_streams(&self) -> usize {
        self.shared.open_streams.load(Ordering::SeqCst)
    }

    /// Blocks until the server is stopped by a signal-free wait (for `docdex dev fake-ollama`).
    pub fn wait(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for FakeOllama {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn with_tag(m: &str) -> String {
    if m.contains(':') {
        m.to_string()
    } else {
        format!("{m}:latest")
    }
}

fn router(shared: Arc<Shared>) -> Router {
    let v1 = Router::new()
        .route("/props", get(props))
        .route("/v1/models", get(v1_models))
        .route("/v1/chat/completions", post(v1_chat))
        .route("/v1/embeddings", post(v1_embeddings))
        .route("/fake/requests", get(all_requests));
    if shared.opts.openai_only {
        return v1.with_state(shared);
    }
    Router::new()
        .route("/", get(|| async { "Ollama is running" }).head(|| async { "" }))
        .route("/api/version", get(|| async { Json(json!({"version": "0.0.0-fake"})) }))
        .route("/api/tags", get(tags))
        .route("/api/show", post(show))
        .route("/api/pull", post(pull))
        .route("/api/chat", post(chat))
        .route("/api/embed", post(embed))
        .route("/api/embeddings", post(embeddings_legacy))
        .merge(v1)
        .with_state(shared)
}

type S = State<Arc<Shared>>;

/// Records the request and consumes one injected failure, if any.
fn record(s: &Shared, path: &str, body: &Value) -> Option<Response> {
    if let Ok(mut r) = s.requests.lock() {
        r.push((path.to_string(), body.clone()));
    }
    let left = s.failures_left.load(Ordering::SeqCst);
    if left > 0 && s.failures_left.compare_exchange(left, left - 1, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
        return Some((StatusCode::INTERNAL_SERVER_ERROR, Json(json!({"error": "injected failure"}))).into_response());
    }
    None
}

fn installed(s: &Shared) -> Vec<String> {
    s.installed.lock().map(|m| m.clone()).unwrap_or_default()
}

fn model_missing(model: &str) -> Response {
    (StatusCode::NOT_FOUND, Json(json!({"error": format!("model '{model}' not found, try pulling it first")})))
        .into_response()
}

fn is_installed(s: &Shared, model: &str) -> bool {
    installed(s).contains(&with_tag(model))
}

async fn tags(State(s): S) -> Response {
    if let Some(r) = record(&s, "/api/tags", &Value::Null) {
        return r;
    }
    let models: Vec<Value> = installed(&s)
        .iter()
        .map(|m| {
            if s.opts.bare_tags {
                return json!({ "name": m });
            }
            json!({"name": m, "model": m, "modified_at": "2026-01-01T00:00:00Z", "size": 1_000_000u64,
                   "digest": format!("sha256:{:016x}", xxhash_rust::xxh3::xxh3_64(m.as_bytes())),
                   "details": {"format": "gguf", "family": "fake", "parameter_size": "1B", "quantization_level": "Q4_0"}})
        })
        .collect();
    Json(json!({ "models": models })).into_response()
}

async fn show(State(s): S, Json(body): Json<Value>) -> Response {
    if let Some(r) = record(&s, "/api/show", &body) {
        return r;
    }
    let model = body["model"].as_str().or(body["name"].as_str()).unwrap_or("");
    if !is_installed(&s, model) {
        return model_missing(model);
    }
    let model_info = match s.opts.context_length {
        Some(n) => json!({"general.architecture": "fake", "fake.context_length": n}),
        None => json!({}),
    };
    let capabilities =
        if is_embedding_model(&s, model) { json!(["embedding"]) } else { json!(["completion", "embedding"]) };
    Json(json!({"modelfile": "", "parameters": "", "template": "{{ .Prompt }}",
                "details": {"format": "gguf", "family": "fake"}, "model_info": model_info, "capabilities": capabilities}))
    .into_response()
}

/// An embedding model: by a name Ollama's embedders carry, or listed in `embedding_models`.
fn is_embedding_model(s: &Shared, model: &str) -> bool {
    model.contains("embed")
        || model.starts_with("all-minilm")
        || s.opts.embedding_models.iter().any(|m| with_tag(m) == with_tag(model))
}

async fn pull(State(s): S, Json(body): Json<Value>) -> Response {
    if let Some(r) = record(&s, "/api/pull", &body) {
        return r;
    }
    let model = with_tag(body["model"].as_str().or(body["name"].as_str()).unwrap_or(""));
    let known = s.opts.pullable.iter().any(|p| with_tag(p) == model) || is_installed(&s, &model);
    if !known {
        return (StatusCode::NOT_FOUND, Json(json!({"error": "pull model manifest: file does not exist"})))
            .into_response();
    }
    if let Ok(mut m) = s.installed.lock() {
        if !m.contains(&model) {
            m.push(model);
        }
    }
    if body["stream"].as_bool() == Some(false) {
        return Json(json!({"status": "success"})).into_response();
    }
    let lines = [
        json!({"status": "pulling manifest"}),
        json!({"status": "downloading", "digest": "sha256:fake", "total": 100, "completed": 50}),
        json!({"status": "downloading", "digest": "sha256:fake", "total": 100, "completed": 100}),
        json!({"status": "success"}),
    ];
    ndjson(lines.iter().map(|l| l.to_string()).collect(), Pace::default(), s.opts.chunk_bytes, &s)
}

/// The words of a text as the fake embeds and answers them.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for raw in text.split(|c: char| !c.is_alphanumeric()) {
        if raw.is_empty() {
            continue;
        }
        // Split camelCase into parts as well as keeping the whole word.
        let mut part = String::new();
        let mut prev_lower = false;
        for ch in raw.chars() {
            if ch.is_uppercase() && prev_lower && !part.is_empty() {
                out.push(part.to_lowercase());
                part.clear();
            }
            prev_lower = ch.is_lowercase() || ch.is_ascii_digit();
            part.push(ch);
        }
        if !part.is_empty() && part.len() != raw.len() {
            out.push(part.to_lowercase());
        }
        out.push(raw.to_lowercase());
    }
    out
}

/// A deterministic embedding: hashed bag of words, L2-normalised (all zeros never happen).
pub fn embed_text(text: &str, dim: usize) -> Vec<f32> {
    let dim = dim.max(2);
    let mut v = vec![0f32; dim];
    for w in words(text) {
        let h = xxhash_rust::xxh3::xxh3_64(w.as_bytes());
        let i = (h % dim as u64) as usize;
        let sign = if (h >> 63) == 0 { 1.0 } else { -1.0 };
        v[i] += sign;
    }
    v[dim - 1] += 0.01;
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

fn inputs(body: &Value) -> Vec<String> {
    match &body["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect(),
        _ => body["prompt"].as_str().map(|s| vec![s.to_string()]).unwrap_or_default(),
    }
}

async fn embed(State(s): S, Json(body): Json<Value>) -> Response {
    if let Some(r) = record(&s, "/api/embed", &body) {
        return r;
    }
    let model = body["model"].as_str().unwrap_or("");
    if !is_installed(&s, model) {
        return model_missing(model);
    }
    let delay_ms = if inputs(&body).len() > 1 { s.opts.embed_delay_ms } else { s.opts.embed_probe_delay_ms };
    if delay_ms > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
    }
    let dim = s.opts.embed_dim;
    let embeddings: Vec<Vec<f32>> = inputs(&body).iter().map(|t| embed_text(t, dim)).collect();
    Json(json!({"model": model, "embeddings": embeddings, "total_duration": 1000, "load_duration": 0, "prompt_eval_count": 1}))
        .into_response()
}

async fn embeddings_legacy(State(s): S, Json(body): Json<Value>) -> Response {
    if let Some(r) = record(&s, "/api/embeddings", &body) {
        return r;
    }
    let model = body["model"].as_str().unwrap_or("");
    if !is_installed(&s, model) {
        return model_missing(model);
    }
    let text = body["prompt"].as_str().unwrap_or("");
    Json(json!({"embedding": embed_text(text, s.opts.embed_dim)})).into_response()
}

/// The next scripted reply for a chat with these messages and its delay, if a script matches.
fn scripted(s: &Shared, messages: &[Value]) -> Option<(String, u64)> {
    let text: String = messages.iter().filter_map(|m| m["content"].as_str()).collect::<Vec<_>>().join("\n");
    let mut scripts = s.scripts.lock().ok()?;
    let (_, left, delay) =
        scripts.iter_mut().find(|(marker, left, _)| !left.is_empty() && text.contains(marker.as_str()))?;
    left.pop_front().map(|r| (r, *delay))
}

/// The answer the fake gives to a chat: built only from the request, so tests can predict it.
pub fn answer_for(messages: &[Value]) -> String {
    let last_user = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .lines()
        .last()
        .unwrap_or("")
        .trim()
        .to_string();
    let mut cites: Vec<String> = Vec::new();
    for m in messages {
        let mut prev = "";
        for tok in m["content"].as_str().unwrap_or("").split_whitespace() {
            let t = tok.trim_matches(|c: char| matches!(c, '(' | ')' | '[' | ']' | ',' | ';' | '`' | '"'));
            // A web page is cited by the address its passage is headed with (`### https://...`).
            let page = prev == "###" && (t.starts_with("http://") || t.starts_with("https://"));
            if (is_citation(t) || page) && !cites.iter().any(|c| c == t) {
                cites.push(t.to_string());
            }
            prev = tok;
        }
    }
    let mut out = format!("FAKE ANSWER to \"{last_user}\".");
    if !cites.is_empty() {
        out.push_str(" Sources: ");
        out.push_str(&cites.join(" "));
    }
    out
}

/// `path:12-30` or `path:12`.
fn is_citation(t: &str) -> bool {
    let Some((path, lines)) = t.rsplit_once(':') else { return false };
    !path.is_empty()
        && path.contains('.')
        && !path.contains("//")
        && !lines.is_empty()
        && lines.split('-').all(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// Splits an answer into streamed pieces (words with their trailing space).
fn pieces(answer: &str) -> Vec<String> {
    let mut out: Vec<String> = answer.split_inclusive(' ').map(str::to_string).collect();
    if out.is_empty() {
        out.push(String::new());
    }
    out
}

/// The prompt tokens a chat reports, counted as a local model's tokenizer would: 90% of
/// `cl100k_base` (`prompt_count_percent`) (Llama 3's counts code about that much lower) plus 4 per message, capped by
/// `prompt_tokens_seen`. Words were counted before: on code a third of a real count, which
/// read as a server that cut the prompt.
fn prompt_tokens(s: &Shared, messages: &[Value]) -> usize {
    let bpe = tiktoken_rs::cl100k_base_singleton();
    let raw: usize = messages.iter().map(|m| bpe.encode_ordinary(m["content"].as_str().unwrap_or("")).len() + 4).sum();
    let count = (raw * s.opts.prompt_count_percent).div_ceil(100);
    s.opts.prompt_tokens_seen.map_or(count, |cap| cap.min(count))
}

/// A streamed body of `beats` sent every `every_ms`, round and round, until the caller hangs up.
fn keep_alives(content_type: &str, beats: Vec<String>, every_ms: u64, open: &Shared) -> Response {
    let stream = futures::stream::iter(beats.into_iter().cycle()).then(move |beat| async move {
        tokio::time::sleep(Duration::from_millis(every_ms)).await;
        Ok::<_, std::convert::Infallible>(beat.into_bytes())
    });
    counted_body(content_type, stream, open)
}

fn ndjson(lines: Vec<String>, pace: Pace, chunk_bytes: usize, open: &Shared) -> Response {
    let pieces: Vec<String> = lines.into_iter().map(|l| format!("{l}\n")).collect();
    streamed("application/x-ndjson", pieces, pace, chunk_bytes, open)
}

/// Delays of a streamed body, in milliseconds.
#[derive(Clone, Copy, Default)]
struct Pace {
    /// Before the first piece.
    first_ms: u64,
    /// Before each later piece.
    each_ms: u64,
}

impl Pace {
    fn chat(opts: &FakeOllamaOptions) -> Pace {
        Pace { first_ms: opts.first_token_delay_ms, each_ms: opts.token_delay_ms }
    }
}

/// A streamed body: one write per piece (after its `pace` delay), each cut into `chunk_bytes` writes.
fn streamed(content_type: &str, pieces: Vec<String>, pace: Pace, chunk_bytes: usize, open: &Shared) -> Response {
    let stream = futures::stream::iter(pieces.into_iter().enumerate())
        .then(move |(i, p)| async move {
            let delay_ms = if i == 0 { pace.first_ms } else { pace.each_ms };
            if delay_ms > 0 {
                tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            }
            let bytes = p.into_bytes();
            let size = if chunk_bytes == 0 { bytes.len().max(1) } else { chunk_bytes };
            futures::stream::iter(
                bytes.chunks(size).map(|c| Ok::<_, std::convert::Infallible>(c.to_vec())).collect::<Vec<_>>(),
            )
        })
        .flatten();
    counted_body(content_type, stream, open)
}

/// A streamed response whose stream counts as open (`open_streams`) until it is dropped.
fn counted_body<S>(content_type: &str, stream: S, open: &Shared) -> Response
where
    S: futures::Stream<Item = Result<Vec<u8>, std::convert::Infallible>> + Send + 'static,
{
    let guard = OpenStream::new(open.open_streams.clone());
    let stream = stream.map(move |piece| {
        let _ = &guard;
        piece
    });
    Response::builder()
        .header("content-type", content_type)
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

use futures::StreamExt;

/// Counts a streamed body as open until it is dropped.
struct OpenStream(Arc<std::sync::atomic::AtomicUsize>);

impl OpenStream {
    fn new(count: Arc<std::sync::atomic::AtomicUsize>) -> OpenStream {
        count.fetch_add(1, Ordering::SeqCst);
        OpenStream(count)
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn chat(State(s): S, Json(body): Json<Value>) -> Response {
    if let Some(r) = record(&s, "/api/chat", &body) {
        return r;
    }
    let model = body["model"].as_str().unwrap_or("").to_string();
    if !is_installed(&s, &model) {
        return model_missing(&model);
    }
    if is_embedding_model(&s, &model) {
        // As Ollama answers a chat with an embedding model.
        let error = format!("\"{model}\" does not support chat");
        return (StatusCode::BAD_REQUEST, Json(json!({ "error": error }))).into_response();
    }
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let (answer, delay) = scripted(&s, &messages).unwrap_or_else(|| (answer_for(&messages), 0));
    let limit = body["options"]["num_predict"].as_i64().filter(|n| *n > 0).map(|n| n as usize);
    let mut parts = pieces(&answer);
    let mut reason = "stop";
    if let Some(n) = limit.filter(|n| *n < parts.len()) {
        parts.truncate(n);
        reason = "length";
    }
    let eval = parts.len();
    let prompt = prompt_tokens(&s, &messages);
    let final_fields = json!({"total_duration": 1_000_000u64, "load_duration": 0, "prompt_eval_count": prompt,
                              "prompt_eval_duration": 1000, "eval_count": eval, "eval_duration": 1000});
    if s.opts.keep_alive_only_ms > 0 && body["stream"].as_bool() != Some(false) {
        let empty = json!({"model": model, "created_at": "2026-01-01T00:00:00Z",
                           "message": {"role": "assistant", "content": ""}, "done": false});
        let beats = vec!["\n".to_string(), " \n".to_string(), format!("{empty}\n")];
        return keep_alives("application/x-ndjson", beats, s.opts.keep_alive_only_ms, &s);
    }
    if body["stream"].as_bool() == Some(false) {
        let mut v = json!({"model": model, "created_at": "2026-01-01T00:00:00Z",
                           "message": {"role": "assistant", "content": parts.concat()}, "done": true, "done_reason": reason});
        merge(&mut v, &final_fields);
        return Json(v).into_response();
    }
    let mut lines: Vec<String> = parts
        .iter()
        .map(|p| {
            json!({"model": model, "created_at": "2026-01-01T00:00:00Z",
                   "message": {"role": "assistant", "content": p}, "done": false})
            .to_string()
        })
        .collect();
    let mut last = json!({"model": model, "created_at": "2026-01-01T00:00:00Z",
                          "message": {"role": "assistant", "content": ""}, "done": true, "done_reason": reason});
    merge(&mut last, &final_fields);
    lines.push(last.to_string());
    if s.opts.cut_after_pieces > 0 {
        lines.truncate(s.opts.cut_after_pieces);
    }
    let mut pace = Pace::chat(&s.opts);
    pace.first_ms += delay;
    ndjson(lines, pace, s.opts.chunk_bytes, &s)
}

fn merge(into: &mut Value, from: &Value) {
    if let (Some(a), Some(b)) = (into.as_object_mut(), from.as_object()) {
        for (k, v) in b {
            a.insert(k.clone(), v.clone());
        }
    }
}

async fn v1_models(State(s): S) -> Response {
    if let Some(r) = record(&s, "/v1/models", &Value::Null) {
        return r;
    }
    let data: Vec<Value> = installed(&s)
        .iter()
        .map(|m| {
            let mut v = json!({"id": m, "object": "model", "created": 0, "owned_by": "fake"});
            if let Some(n) = s.opts.context_length {
                v["max_model_len"] = json!(n);
            }
            v
        })
        .collect();
    Json(json!({"object": "list", "data": data})).into_response()
}

/// llama.cpp's `/props`, when the fake plays llama.cpp (`props_n_ctx`); else 404.
async fn props(State(s): S) -> Response {
    if let Some(r) = record(&s, "/props", &Value::Null) {
        return r;
    }
    match s.opts.props_n_ctx {
        Some(n) => Json(json!({"default_generation_settings": {"n_ctx": n, "params": {}}, "total_slots": 1,
                               "model_path": "model.gguf", "build_info": "fake"}))
        .into_response(),
        None => {
            (StatusCode::NOT_FOUND, Json(json!({"error": {"code": 404, "message": "File Not Found"}}))).into_response()
        }
    }
}

async fn v1_embeddings(State(s): S, Json(body): Json<Value>) -> Response {
    if let Some(r) = record(&s, "/v1/embeddings", &body) {
        return r;
    }
    let model = body["model"].as_str().unwrap_or("").to_string();
    if !is_installed(&s, &model) {
        return (
            StatusCode::NOT_FOUND,
            Json(json!({"error": {"message": format!("model '{model}' not found"), "type": "invalid_request_error"}})),
        )
            .into_response();
    }
    let data: Vec<Value> = inputs(&body)
        .iter()
        .enumerate()
        .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": embed_text(t, s.opts.embed_dim)}))
        .collect();
    Json(json!({"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": 1, "total_tokens": 1}}))
        .into_response()
}

async fn v1_chat(State(s): S, Json(body): Json<Value>) -> Response {
    if let Some(r) = record(&s, "/v1/chat/completions", &body) {
        return r;
    }
    let model = body["model"].as_str().unwrap_or("").to_string();
    if !is_installed(&s, &model) {
        return (
            StatusCode::NOT_FOUND,
            Json(json!({"error": {"message": format!("model '{model}' not found"), "type": "invalid_request_error"}})),
        )
            .into_response();
    }
    if let Some((status, refusal)) = s.opts.v1_refuses_embedding_chat.as_ref().filter(|_| model.contains("embed")) {
        let status = StatusCode::from_u16(*status).unwrap_or(StatusCode::BAD_REQUEST);
        return (status, Json(refusal.clone())).into_response();
    }
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    if let Some(n_ctx) = s.opts.v1_context_window.filter(|n| prompt_tokens(&s, &messages) > *n) {
        let n = prompt_tokens(&s, &messages);
        let message =
            format!("request ({n} tokens) exceeds the available context size ({n_ctx} tokens), try increasing it");
        let error = json!({"code": 400, "message": message, "type": "exceed_context_size_error",
                           "n_prompt_tokens": n, "n_ctx": n_ctx});
        return (StatusCode::BAD_REQUEST, Json(json!({ "error": error }))).into_response();
    }
    let (answer, delay) = scripted(&s, &messages).unwrap_or_else(|| (answer_for(&messages), 0));
    let mut parts = pieces(&answer);
    let mut reason = "stop";
    if let Some(n) = body["max_tokens"].as_u64().map(|n| n as usize).filter(|n| *n > 0 && *n < parts.len()) {
        parts.truncate(n);
        reason = "length";
    }
    let prompt = prompt_tokens(&s, &messages);
    let usage =
        json!({"prompt_tokens": prompt, "completion_tokens": parts.len(), "total_tokens": prompt + parts.len()});
    if body["stream"].as_bool() != Some(true) {
        return Json(json!({"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": parts.concat()}, "finish_reason": reason}],
            "usage": usage}))
        .into_response();
    }
    if s.opts.keep_alive_only_ms > 0 {
        let empty = json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model,
                           "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": null}]});
        let role = json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model,
                          "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": null}]});
        let beats = vec![
            ": keep-alive\n\n".to_string(),
            "\n".to_string(),
            format!("data: {empty}\n\n"),
            format!("data: {role}\n\n"),
        ];
        return keep_alives("text/event-stream", beats, s.opts.keep_alive_only_ms, &s);
    }
    let mut events: Vec<String> = parts
        .iter()
        .map(|p| {
            format!(
                "data: {}\n\n",
                json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model,
                "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": null}]})
            )
        })
        .collect();
    events.push(format!(
        "data: {}\n\n",
        json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model,
        "choices": [{"index": 0, "delta": {}, "finish_reason": reason}], "usage": usage})
    ));
    events.push("data: [DONE]\n\n".into());
    let mut pace = Pace::chat(&s.opts);
    pace.first_ms += delay;
    streamed("text/event-stream", events, pace, s.opts.chunk_bytes, &s)
}

async fn all_requests(State(s): S) -> Response {
    let reqs: Vec<Value> =
        s.requests.lock().map(|r| r.iter().map(|(p, b)| json!({"path": p, "body": b})).collect()).unwrap_or_default();
    Json(json!({ "requests": reqs })).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embeddings_are_deterministic_and_word_sensitive() {
        let a = embed_text("expire stale sessions", 64);
        let b = embed_text("expire stale sessions", 64);
        let c = embed_text("render the dashboard", 64);
        assert_eq!(a, b);
        let dot = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| p * q).sum::<f32>();
        assert!(dot(&a, &a) > 0.99);
        assert!(dot(&a, &c) < 0.5);
    }

    #[test]
    fn answers_cite_what_the_prompt_cites() {
        let msgs = vec![
            json!({"role": "system", "content": "Context: src/auth.rs:10-20 and (lib/x.py:3)"}),
            json!({"role": "user", "content": "how are sessions expired?"}),
        ];
        let a = answer_for(&msgs);
        assert!(a.starts_with("FAKE ANSWER to \"how are sessions expired?\"."), "{a}");
        assert!(a.contains("src/auth.rs:10-20") && a.contains("lib/x.py:3"), "{a}");
        assert!(!is_citation("http://x.y:80"));
    }
}
