//! The engine's model entry points: the configured provider, a blocking-friendly
//! streamed chat, and embeddings with the configured model. A failed embedder is
//! remembered for a short while so a dead server costs one attempt, not one per query.

use super::{build_provider, ChatEvent, ChatRequest, ChatUsage, ModelInfo, Provider, PullProgress};
use crate::engine::cancel::CancelToken;
use crate::engine::Engine;
use crate::error::{Error, Result};
use futures::StreamExt;
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Events buffered between the network task and a slow reader; beyond this the network task
/// waits (and TCP pushes back on the server), so an answer is never buffered whole.
const CHAT_CHANNEL: usize = 32;
/// How long a failed embedder is trusted to stay failed before it is tried again.
pub(crate) const EMBEDDER_RETRY_AFTER: Duration = Duration::from_secs(30);
/// How long a server failure met by the embedder stands for the chat model too (one turn's
/// worth: the server is asked again on the next turn).
const SERVER_FAILURE_TRUSTED: Duration = Duration::from_secs(10);
/// How long a model server that answered the liveness check is taken to be alive.
const ALIVE_FOR: Duration = Duration::from_secs(30);

/// The model side of the engine's state (one per engine).
#[derive(Default)]
pub(crate) struct LlmState {
    provider: OnceLock<Arc<dyn Provider>>,
    /// When the embedder last failed, and how.
    embed_failure: Mutex<Option<EmbedFailure>>,
    /// When the model server last answered the liveness check ([`Engine::server_answers`]).
    alive: Mutex<Option<Instant>>,
}

/// A remembered embedder failure.
struct EmbedFailure {
    at: Instant,
    /// The error's message.
    why: String,
    /// The server itself did not answer (unreachable, timed out), so a chat on it would fail
    /// the same way: kept to hand back to the next request of the turn.
    server: Option<Error>,
}

/// What a streamed chat produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatReply {
    /// The whole answer as streamed.
    pub text: String,
    /// Token counts and finish reason (absent when the reader stopped early).
    pub usage: Option<ChatUsage>,
    /// True when the callback or the cancel token stopped the answer before it was complete.
    pub stopped: bool,
}

impl Engine {
    /// The provider `[llm]` configures (created on first use, then shared).
    pub fn provider(&self) -> Result<Arc<dyn Provider>> {
        let state = &self.inner.llm;
        if let Some(p) = state.provider.get() {
            return Ok(p.clone());
        }
        let p = build_provider(&self.inner.config.llm)?;
        // After the URL itself was validated: a well-formed endpoint off this machine.
        crate::engine::privacy::check_model_endpoint(&self.inner.config.privacy, &self.inner.config.llm.base_url)?;
        Ok(state.provider.get_or_init(|| p).clone())
    }

    /// Streams a chat answer into `on_token`, one piece at a time, from a synchronous caller
    /// (async surfaces call this inside `spawn_blocking`, or use [`Engine::provider`] directly).
    ///
    /// An empty `req.model` means `[llm] default_model`; `max_tokens: None` means
    /// `[llm] max_answer_tokens`. Returning `ControlFlow::Break` from `on_token` stops
    /// generation (the connection is closed). A slow callback slows the stream down; nothing
    /// is buffered beyond a few dozen pieces.
    pub fn stream_chat(
        &self,
        req: ChatRequest,
        on_token: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Result<ChatReply> {
        self.stream_chat_cancellable(req, &CancelToken::default(), on_token)
    }

    /// [`Engine::stream_chat`] that also stops when `cancel` is tripped from another thread,
    /// even before the first token (while the model still reads the prompt): the wait on the
    /// server looks at the token every [`CANCEL_TICK`](crate::engine::cancel::CANCEL_TICK),
    /// and a stop closes the connection. A stopped reply is `Ok` with `stopped: true` and
    /// whatever text had arrived.
    pub fn stream_chat_cancellable(
        &self,
        req: ChatRequest,
        cancel: &CancelToken,
        on_token: &mut dyn FnMut(&str) -> ControlFlow<()>,
    ) -> Result<ChatReply> {
        let provider = self.provider()?;
        let rt = self.runtime()?;
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<ChatEvent>>(CHAT_CHANNEL);
        let watch = cancel.clone();
        // On a stop the task returns, dropping the stream (closing the connection) and the
        // sender, so the reader below wakes up to a closed channel.
        let task = rt.spawn(async move {
            tokio::select! {
                _ = watch.cancelled() => {}
                _ = forward_chat(provider, req, tx) => {}
            }
        });
        let mut reply = ChatReply::default();
        let result = loop {
            if cancel.is_cancelled() {
                reply.stopped = true;
                break Ok(());
            }
            match rx.blocking_recv() {
                None if cancel.is_cancelled() => {
                    reply.stopped = true;
                    break Ok(());
                }
                None => {
                    break Err(Error::Upstream(format!(
                        "the answer stream ended before it was complete. {}",
                        super::http::STREAM_CUT_ADVICE
                    )))
                }
                Some(Err(e)) => break Err(e),
                Some(Ok(ChatEvent::Done(u))) => {
                    reply.usage = Some(u);
                    break Ok(());
                }
                Some(Ok(ChatEvent::Token(t))) => {
                    reply.text.push_str(&t);
                    if on_token(&t).is_break() {
                        reply.stopped = true;
                        break Ok(());
                    }
                }
            }
        };
        drop(rx);
        task.abort();
        result.map(|_| reply)
    }

    /// Embeds `texts` with `[llm] embedding_model`, one vector per text, in order. A model off
    /// this machine gets them masked for PII and secrets, as it gets indexed chunks (search
    /// queries and memories went to it as typed).
    ///
    /// Inside a chat turn the wait ends with [`Error::Cancelled`] as soon as the turn is
    /// stopped (see [`Engine::block_on_server`]).
    pub fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>> {
        let provider = self.provider()?;
        let texts = crate::engine::privacy::guard_embed_inputs(provider.base_url(), texts);
        let model = self.inner.config.llm.embedding_model.clone();
        self.block_on_server(async move { provider.embed(&model, texts).await })?
    }

    /// Runs `fut`, a request to the model server, to completion, unless the thread's ambient
    /// [`CancelToken`] (a chat turn's, see [`CancelToken::enter`]) trips first: then the wait
    /// ends within a [`CANCEL_TICK`](crate::engine::cancel::CANCEL_TICK) with
    /// [`Error::Cancelled`] and the request is dropped (its connection closed). Without an
    /// ambient token this is a plain blocking wait.
    pub(crate) fn block_on_server<F: std::future::Future>(&self, fut: F) -> Result<F::Output> {
        let Some(token) = CancelToken::ambient() else {
            return self.block_on(fut);
        };
        if token.is_cancelled() {
            return Err(Error::Cancelled);
        }
        self.block_on(async move {
            tokio::select! {
                out = fut => Ok(out),
                _ = token.cancelled() => Err(Error::Cancelled),
            }
        })?
    }

    /// The models the provider's server has. A server that does not answer the liveness
    /// check ([`Engine::server_answers`]) is a [`Error::LlmTimeout`] within
    /// `[llm] connect_timeout_ms`: a list is no generation, and a stuck server held
    /// `/v1/models`, `docdex check` and `llm-list` for the whole `[llm] request_timeout_secs`.
    pub fn models(&self) -> Result<Vec<ModelInfo>> {
        let provider = self.provider()?;
        self.server_answers(provider.as_ref())?;
        self.block_on(async move { provider.models().await })?
    }

    /// Downloads `model` through the provider (Ollama only), reporting progress.
    pub fn pull_model(&self, model: &str, progress: &(dyn Fn(&PullProgress) + Send + Sync)) -> Result<()> {
        let provider = self.provider()?;
        self.block_on(async move { provider.pull(model, progress).await })?
    }

    /// Embeds one query for retrieval, unless the embedder failed within the last
    /// [`EMBEDDER_RETRY_AFTER`]: then the remembered failure comes back at once.
    pub(crate) fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        if let Some(reason) = self.recent_embed_failure() {
            return Err(Error::Upstream(reason));
        }
        let answered = self.provider().and_then(|p| self.server_answers(p.as_ref()));
        match answered.and_then(|()| self.embed(vec![text.to_string()])) {
            Ok(mut v) => {
                self.clear_embed_failure();
                v.pop().ok_or_else(|| Error::Upstream("the embedder returned no vector".into()))
            }
            // A stopped turn says nothing about the server.
            Err(Error::Cancelled) => Err(Error::Cancelled),
            Err(e) => {
                self.note_embed_failure(&e);
                Err(e)
            }
        }
    }

    /// Whether the model server answers at all: any HTTP answer to a GET of its base URL
    /// within `[llm] connect_timeout_ms` (at most the request timeout), trusted for
    /// [`ALIVE_FOR`]. A server that accepts connections and never answers (stuck, wedged
    /// behind a proxy) otherwise held each search, profile write and chat turn for a whole
    /// `[llm] request_timeout_secs` (two minutes by default) before it fell back to words; one
    /// that answers but is slow to embed (a model still loading) still gets the full timeout.
    /// Refused connections and TLS failures pass here: the real request reports them better.
    pub(crate) fn server_answers(&self, provider: &dyn Provider) -> Result<()> {
        let state = &self.inner.llm;
        if state.alive.lock().ok().and_then(|a| *a).is_some_and(|at| at.elapsed() < ALIVE_FOR) {
            return Ok(());
        }
        let llm = &self.inner.config.llm;
        let (connect, request) = (
            Duration::from_millis(llm.connect_timeout_ms.max(1)),
            Duration::from_secs(llm.request_timeout_secs.max(1)),
        );
        let wait = connect.min(request);
        let url = provider.base_url().to_string();
        let probe = url.clone();
        let answered = self.block_on_server(async move {
            let client = reqwest::Client::builder().timeout(wait).build().ok()?;
            match client.get(&probe).send().await {
                Ok(_) => Some(true),
                Err(e) if e.is_timeout() => Some(false),
                Err(_) => None,
            }
        })?;
        match answered {
            Some(false) => {
                tracing::info!(url, ms = wait.as_millis() as u64, "the model server did not answer the liveness check");
                let (waited, setting) = if connect <= request {
                    (format!("{} ms", connect.as_millis()), "connect_timeout_ms")
                } else {
                    (format!("{}s", request.as_secs()), "request_timeout_secs")
                };
                Err(Error::LlmTimeout { provider: provider.kind().to_string(), url, waited, setting })
            }
            Some(true) => {
                if let Ok(mut a) = state.alive.lock() {
                    *a = Some(Instant::now());
                }
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// The remembered embedder failure, if it is recent.
    pub(crate) fn recent_embed_failure(&self) -> Option<String> {
        let guard = self.inner.llm.embed_failure.lock().ok()?;
        guard.as_ref().filter(|f| f.at.elapsed() < EMBEDDER_RETRY_AFTER).map(|f| f.why.clone())
    }

    /// The model server's own failure (unreachable, timed out) when the embedder met it
    /// within the last [`SERVER_FAILURE_TRUSTED`]: the rest of a chat turn skips the server
    /// instead of waiting on it again.
    pub(crate) fn recent_server_failure(&self) -> Option<Error> {
        let guard = self.inner.llm.embed_failure.lock().ok()?;
        let f = guard.as_ref().filter(|f| f.at.elapsed() < SERVER_FAILURE_TRUSTED)?;
        server_error(f.server.as_ref()?)
    }

    /// Remembers that the embedder failed. A call stopped by its caller (a client that left, a
    /// server deadline) says nothing about the embedder: it is not remembered, else the next
    /// memory writes skipped embedding for a while ("stopped by its caller").
    pub(crate) fn note_embed_failure(&self, e: &Error) {
        if matches!(e, Error::Cancelled) {
            return;
        }
        let server = server_error(e);
        if let Ok(mut g) = self.inner.llm.embed_failure.lock() {
            *g = Some(EmbedFailure { at: Instant::now(), why: e.to_string(), server });
        }
    }

    /// Forgets a remembered failure (the embedder answered).
    pub(crate) fn clear_embed_failure(&self) {
        if let Ok(mut g) = self.inner.llm.embed_failure.lock() {
            *g = None;
        }
    }
}

/// A copy of `e` when it says the server itself failed (unreachable, timed out).
fn server_error(e: &Error) -> Option<Error> {
    match e {
        Error::LlmUnreachable { provider, url, reason } => {
            Some(Error::LlmUnreachable { provider: provider.clone(), url: url.clone(), reason: reason.clone() })
        }
        Error::LlmTimeout { provider, url, waited, setting } => {
            Some(Error::LlmTimeout { provider: provider.clone(), url: url.clone(), waited: waited.clone(), setting })
        }
        _ => None,
    }
}

/// Asks `provider` for the answer and forwards its events to `tx` until the last one, or until
/// the reader hangs up (dropping the stream closes the connection).
async fn forward_chat(provider: Arc<dyn Provider>, req: ChatRequest, tx: tokio::sync::mpsc::Sender<Result<ChatEvent>>) {
    let mut stream = match provider.chat(req).await {
        Ok(s) => s,
        Err(e) => {
            let _ = tx.send(Err(e)).await;
            return;
        }
    };
    while let Some(ev) = stream.next().await {
        let last = !matches!(ev, Ok(ChatEvent::Token(_)));
        if tx.send(ev).await.is_err() || last {
            return;
        }
    }
}
