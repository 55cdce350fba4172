//! Tier 3's model step: the context window (from the provider or the config), token counting
//! and the budget, the rendered prompt, and the streamed answer. Model trouble never fails a
//! turn: an unreachable server or a missing model leaves the sources and says how to fix it.

use super::budget::{self, Piece, Plan, TokenCounter};
use super::context::{self, Files};
use super::types::*;
use super::{ms, Found, Turn};
use crate::engine::dag::NodeKind;
use crate::engine::llm::{ChatMessage, ChatRequest, ChatUsage, Provider};
use crate::error::{Error, Result};
use serde_json::json;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Instant;

/// What the user is told when no model can answer: the error, the commands that fix it (when
/// the error does not already name them), and that retrieval still worked.
pub fn no_model_message(e: &Error) -> String {
    let msg = e.to_string();
    let mut hint = String::new();
    // llm-setup pulls through Ollama: no advice for a model an OpenAI-compatible server lacks.
    let other_server = matches!(e, Error::ModelNotFound { provider, .. } if provider != "ollama");
    if !msg.contains("docdex llm-setup") && !other_server {
        hint.push_str(" `docdex llm-setup` installs and configures a model.");
    }
    if !msg.contains("docdex check") {
        hint.push_str(" `docdex check` diagnoses the setup.");
    }
    format!("no answer: {msg}.{hint} The sources below were found without a model.")
}

/// The prompt, ready to send.
pub(super) struct Assembled {
    provider: Arc<dyn Provider>,
    model: String,
    plan: Plan,
    messages: Vec<ChatMessage>,
    sources: Vec<ChatSource>,
    preflight: Option<Error>,
    ratio_key: String,
    raw_prompt_tokens: u32,
    /// How long asking the server for the model's window took: the model step's time, not
    /// the assembly's (a stuck server spends its whole timeout here).
    window_wait: std::time::Duration,
    /// The repository sources' lines, answered when the model does not answer.
    excerpts: Vec<SourceExcerpt>,
}

impl Turn<'_> {
    /// Counts, budgets and renders the prompt; logs the budget decision.
    pub(super) fn assemble(&mut self, found: &Found, parents: &[Option<i64>]) -> Result<Assembled> {
        let started = Instant::now();
        let provider = self.engine.provider()?;
        let model = self.req.model.clone().unwrap_or_else(|| self.engine.config().llm.default_model.clone());
        let asked = Instant::now();
        let (window, window_source, preflight) = self.window_unless_refused(provider.as_ref(), &model);
        let window_wait = asked.elapsed();
        let max_answer = self.req.max_answer_tokens.unwrap_or(self.engine.config().llm.max_answer_tokens);
        let plan = budget::plan(window, max_answer);
        if let Some(asked) = self.req.max_answer_tokens.filter(|a| *a > plan.answer_cap) {
            // Said, because a caller who asked for more would otherwise read `length` as the
            // model running out of its own budget.
            self.notice(format!(
                "max_tokens {asked} was lowered to {}, the answer's {}% share of the {window}-token context window; raise `[llm] context_tokens` (and the model server's window) for longer answers",
                plan.answer_cap,
                budget::SHARES.generation
            ));
        }
        let ratio_key = format!("{}|{}|{model}", provider.kind(), provider.base_url());
        let measured = self.engine.token_ratios().get(&ratio_key);
        let counter = TokenCounter::for_model(&model, measured.map(budget::with_margin))?;
        let repo_name = self.repo.root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let instructions = context::with_caller(context::instructions(&repo_name), self.req.instructions.as_deref());
        let mandatory = counter.count(&instructions) + counter.count(&self.req.query) + 2 * budget::MESSAGE_OVERHEAD;
        let pieces = self.pieces(found);
        let agent = self.trace.agent_id.clone();
        let agent = agent.as_deref();
        let heading = |slot: Slot| context::heading(slot, &found.diff_label, agent);
        let section_cost = |slot: Slot| {
            let h = heading(slot);
            if h.is_empty() {
                0
            } else {
                counter.count(&format!("\n\n{h}"))
            }
        };
        let fitted = budget::fit(&plan, &counter, mandatory, pieces, &section_cost)?;
        let mut messages = context::render(&instructions, &self.req.query, &fitted.kept, &heading);
        self.mask_outgoing(provider.base_url(), &mut messages);
        self.trace.budget = budget::trace(&plan, &window_source, counter.trace(&model), &fitted);
        tracing::info!(
            repo = %self.repo.fingerprint,
            model = %model,
            window,
            window_source = %window_source,
            prompt_tokens = fitted.prompt_tokens,
            drops = fitted.drops.len(),
            "chat context budgeted"
        );
        self.trace.drops = fitted.drops.clone();
        self.settle_profile_step(found, &fitted);
        let sources: Vec<ChatSource> = fitted.kept.iter().filter_map(|p| p.source.clone()).collect();
        self.log_budget(&fitted, parents);
        self.trace.timings_ms.assembly = ms_of(started.elapsed().saturating_sub(window_wait));
        self.emit(ChatTurnEvent::Context { sources: sources.clone(), budget: self.trace.budget.clone() });
        // The unscaled count, to measure the ratio against the server's own count afterwards.
        let raw_prompt_tokens =
            if counter.exact() { 0 } else { (f64::from(fitted.prompt_tokens) / counter.ratio()).round() as u32 };
        let excerpts = excerpts(&sources, found.search.as_ref().map_or(&[][..], |s| s.results.as_slice()));
        Ok(Assembled {
            provider,
            model,
            plan,
            messages,
            sources,
            preflight,
            ratio_key,
            raw_prompt_tokens,
            window_wait,
            excerpts,
        })
    }

    /// The model's context window, unless the model cannot chat: then the configured one and
    /// the refusal, so the sources are not budgeted down to an embedding model's 512 tokens
    /// only for the chat to be refused afterwards.
    fn window_unless_refused(&mut self, provider: &dyn Provider, model: &str) -> (u32, String, Option<Error>) {
        match cannot_chat(provider, model) {
            Some(e) => {
                let source = format!("config ([llm] context_tokens; {model} cannot chat, so its window was not asked)");
                (self.engine.config().llm.context_tokens, source, Some(e))
            }
            None => self.context_window(provider, model),
        }
    }

    /// Masks context leaving the machine (a model off loopback); the trace says what was.
    fn mask_outgoing(&mut self, base_url: &str, messages: &mut [ChatMessage]) {
        let started = Instant::now();
        let Some(found) = crate::engine::privacy::guard_messages(base_url, messages.iter_mut().map(|m| &mut m.content))
        else {
            return;
        };
        let detail = match found.is_empty() {
            true => format!("non-loopback model at {base_url}: nothing to mask"),
            false => format!("non-loopback model at {base_url}: masked {}", crate::engine::privacy::summarize(&found)),
        };
        self.step(3, "privacy", StepStatus::Ran, started, found.len() as u32, detail);
    }

    pub(super) fn pieces(&self, found: &Found) -> Vec<Piece> {
        let mut files = Files::new(self.repo);
        let mut pieces = context::profile_pieces(&found.profile);
        pieces.extend(found.map.as_ref().map(context::map_piece));
        pieces.extend(context::memory_pieces(&found.memories));
        let diff = context::diff_pieces(&found.diff);
        let next = diff.len();
        pieces.extend(diff);
        pieces.extend(context::neighbour_pieces(&mut files, &found.neighbours, next));
        if let Some(s) = &found.search {
            pieces.extend(context::repo_pieces(
                &mut files,
                &s.results,
                &crate::engine::analysis::query_terms(&self.req.query),
            ));
        }
        pieces.extend(context::history_pieces(&self.req.history));
        pieces.extend(context::library_pieces(&found.libs));
        pieces.extend(context::web_pieces(&found.web));
        // The same lines offered twice (a diff neighbour that is also a search hit) keep only
        // their highest-priority place.
        let mut seen = std::collections::HashSet::new();
        pieces.retain(|p| p.slot == Slot::History || seen.insert(p.citation.clone()));
        pieces
    }

    pub(super) fn log_budget(&mut self, fitted: &budget::Fitted, parents: &[Option<i64>]) {
        let b = &self.trace.budget;
        let label = format!(
            "budget: {} of {} prompt tokens used, {} snippets dropped",
            fitted.prompt_tokens,
            b.context_window.saturating_sub(b.context_window * budget::SHARES.generation / 100),
            fitted.drops.len()
        );
        let payload = json!({"decision": "budget", "window": b.context_window, "window_source": b.window_source,
            "tokenizer": b.tokenizer.name, "exact": b.tokenizer.exact, "slots": b.slots, "drops": fitted.drops});
        let node = self.dag.node(NodeKind::Decision, &label, payload, parents);
        self.dag.budget_node = node;
    }

    /// The window to budget for: the provider's (when it says and it is smaller than the
    /// configured one) or `[llm] context_tokens`. Also returns an error that makes asking the
    /// model pointless (unreachable or stuck server, missing model).
    pub(super) fn context_window(&mut self, provider: &dyn Provider, model: &str) -> (u32, String, Option<Error>) {
        let configured = self.engine.config().llm.context_tokens;
        let (reported, preflight) = match self.server_down(provider) {
            Some(e) => (None, Some(e)),
            None => self.reported_window(provider, model),
        };
        // The model's own limit is honoured however small (it was raised to 1,024 before, so
        // an OpenAI-compatible server refused the prompt and Ollama was run beyond the
        // Modelfile's `num_ctx`); a server saying 0 says nothing.
        let (window, source) = match reported.filter(|w| *w > 0) {
            Some(w) if w <= configured => (w, format!("provider ({model} reports {w})")),
            Some(w) => (configured, format!("config ([llm] context_tokens; {model} allows {w})")),
            None => (configured, "config ([llm] context_tokens; the provider does not report one)".into()),
        };
        (window, source, preflight)
    }

    /// Why the model server is not worth asking this turn: the embedder on it just timed out
    /// or was unreachable ([`crate::Engine::recent_server_failure`]), or it does not answer the
    /// liveness check ([`crate::Engine::server_answers`], `[llm] connect_timeout_ms`). A
    /// server that accepts and never answers otherwise held the window lookup (or, with the
    /// window known, the chat) for the whole `[llm] request_timeout_secs` before the turn gave
    /// up; one that answers but is slow to generate still gets that timeout between pieces.
    /// `None` for a stopped turn (a stop is no verdict on the server).
    fn server_down(&mut self, provider: &dyn Provider) -> Option<Error> {
        if self.stop_requested() {
            return None;
        }
        if let Some(e) = self.engine.recent_server_failure() {
            return Some(e);
        }
        match self.engine.server_answers(provider) {
            Ok(()) | Err(Error::Cancelled) => None,
            Err(e) => Some(e),
        }
    }

    /// The window the provider reports for `model` (remembered per server and model), and an
    /// error that makes asking the model pointless.
    fn reported_window(&mut self, provider: &dyn Provider, model: &str) -> (Option<u32>, Option<Error>) {
        let key = format!("{}|{}|{model}", provider.kind(), provider.base_url());
        let cached = self.engine.waterfall().windows.lock().ok().and_then(|m| m.get(&key).copied());
        match cached {
            Some(w) => (w, None),
            // A stopped turn does not ask the server anything more.
            None if self.stop_requested() => (None, None),
            // Stoppable: a server that accepts and never answers holds this for the timeout.
            None => match self.engine.block_on_server(provider.context_window(model)) {
                Err(Error::Cancelled) => (None, None),
                Ok(Ok(w)) => {
                    if let Ok(mut m) = self.engine.waterfall().windows.lock() {
                        m.insert(key, w);
                    }
                    (w, None)
                }
                Ok(Err(
                    e @ (Error::LlmUnreachable { .. }
                    | Error::LlmTimeout { .. }
                    | Error::ModelNotFound { .. }
                    | Error::ModelCannotChat { .. }),
                )) => (None, Some(e)),
                Ok(Err(e)) => {
                    tracing::debug!(error = %e, "the provider did not say the model's context window");
                    (None, None)
                }
                Err(e) => (None, Some(e)),
            },
        }
    }

    /// Tier 3: the model. Streams tokens; never fails the turn for model trouble.
    pub(super) fn finish(mut self, a: Assembled) -> Result<ChatTurnResponse> {
        let Assembled {
            provider,
            model,
            plan,
            messages,
            mut sources,
            preflight,
            ratio_key,
            raw_prompt_tokens,
            window_wait,
            excerpts,
        } = a;
        self.trace.model = ModelTrace {
            provider: provider.kind().into(),
            model: model.clone(),
            base_url: provider.base_url().into(),
            prompt_tokens_estimated: self.trace.budget.prompt_tokens,
            ..Default::default()
        };
        let call = self.dag.node(
            NodeKind::ToolCall,
            &format!("ask {model}"),
            json!({"tool": "llm", "provider": provider.kind(), "model": model, "base_url": provider.base_url(),
                   "prompt_tokens": self.trace.budget.prompt_tokens, "max_tokens": plan.answer_cap, "window": plan.window,
                   "window_lookup_ms": ms_of(window_wait)}),
            &[self.dag.budget_node],
        );
        let started = Instant::now();
        let (answer, outcome) =
            self.ask(&provider, &model, &plan, messages, preflight, (&ratio_key, raw_prompt_tokens));
        if answer.is_some() {
            self.trace.timings_ms.generation = Some(ms(started));
        }
        context::mark_cited(&mut sources, answer.as_deref().unwrap_or(""));
        if let Some(g) = self.trace.budget.slots.iter_mut().find(|s| s.slot == Slot::Generation) {
            g.used = self.trace.model.completion_tokens.unwrap_or(0);
        }
        self.log_answer(call, answer.as_deref(), &outcome, &sources);
        // The step's time includes the window lookup, the first thing asked of the server.
        self.answer_step(&model, &outcome, started.checked_sub(window_wait).unwrap_or(started));
        self.log_notices();
        self.trace.timings_ms.total = ms(self.started);
        Ok(ChatTurnResponse {
            schema_version: CHAT_SCHEMA_VERSION,
            session_id: self.dag.session.clone(),
            turn: self.dag.turn,
            repo: self.repo.root.clone(),
            query: self.req.query.clone(),
            sources,
            excerpts: if answer.is_none() && outcome.status != AnswerStatus::Stopped { excerpts } else { Vec::new() },
            answer,
            llm: outcome,
            trace: self.trace,
        })
    }

    /// Asks the model unless the turn was stopped or the preflight already failed; the
    /// outcome says which, and why.
    fn ask(
        &mut self,
        provider: &Arc<dyn Provider>,
        model: &str,
        plan: &Plan,
        messages: Vec<ChatMessage>,
        preflight: Option<Error>,
        (ratio_key, raw_prompt_tokens): (&str, u32),
    ) -> (Option<String>, LlmOutcome) {
        let mut outcome = LlmOutcome {
            status: AnswerStatus::Answered,
            provider: provider.kind().into(),
            model: model.to_string(),
            base_url: provider.base_url().into(),
            error_code: None,
            message: None,
        };
        let mut answer = None;
        if self.stop_requested() {
            outcome.status = AnswerStatus::Stopped;
        } else if let Some(e) = preflight {
            self.unavailable(&mut outcome, &e);
        } else {
            answer = self.generate(model, plan, messages, &mut outcome, ratio_key, raw_prompt_tokens);
        }
        (answer, outcome)
    }

    /// The answer's observation node in the reasoning DAG, under the model call.
    fn log_answer(&mut self, call: Option<i64>, answer: Option<&str>, outcome: &LlmOutcome, sources: &[ChatSource]) {
        let cited: Vec<&str> = sources.iter().filter(|s| s.cited).map(|s| s.citation.as_str()).collect();
        self.dag.node(
            NodeKind::Observation,
            &format!("answer: {}", status_name(outcome.status)),
            json!({"status": outcome.status, "answer": answer, "cited": cited, "error": outcome.message,
                   "completion_tokens": self.trace.model.completion_tokens, "finish_reason": self.trace.model.finish_reason}),
            &[call],
        );
    }

    /// Tier 3's step in the trace: ran, unavailable or failed, with what happened.
    fn answer_step(&mut self, model: &str, outcome: &LlmOutcome, from: Instant) {
        let detail = match outcome.status {
            AnswerStatus::Answered => {
                format!("{model} answered ({} tokens)", self.trace.model.completion_tokens.unwrap_or(0))
            }
            _ => outcome.message.clone().unwrap_or_else(|| status_name(outcome.status).into()),
        };
        let status = match outcome.status {
            AnswerStatus::Answered | AnswerStatus::Stopped => StepStatus::Ran,
            AnswerStatus::Unavailable => StepStatus::Unavailable,
            AnswerStatus::Failed => StepStatus::Failed,
        };
        self.step(3, "llm", status, from, 0, detail);
    }

    /// Puts the server's counts in the trace; flags a prompt the server cut (see
    /// [`prompt_cut`]), else measures the model's token ratio against its count.
    fn record_usage(&mut self, u: &ChatUsage, provider: &str, ratio_key: &str, raw_prompt_tokens: u32) {
        self.trace.model.prompt_tokens_reported = Some(u.prompt_tokens).filter(|n| *n > 0);
        self.trace.model.completion_tokens = Some(u.completion_tokens);
        self.trace.model.finish_reason = Some(u.finish_reason.clone());
        let sent = self.trace.budget.prompt_tokens;
        let seen = u.prompt_tokens.saturating_add(u.cached_prompt_tokens);
        if prompt_cut(sent, seen) {
            self.trace.model.prompt_truncated = true;
            self.notice(prompt_cut_notice(provider, seen, sent));
        } else if raw_prompt_tokens > 0 {
            // A cut prompt's count says nothing about the tokenizer.
            self.engine.token_ratios().record(ratio_key, raw_prompt_tokens, u.prompt_tokens);
        }
    }

    pub(super) fn unavailable(&mut self, outcome: &mut LlmOutcome, e: &Error) {
        outcome.status = AnswerStatus::Unavailable;
        outcome.error_code = Some(e.code().into());
        let message = no_model_message(e);
        outcome.message = Some(message.clone());
        self.notice(message);
    }

    /// Streams the answer; returns what arrived (`None` when nothing could be generated).
    pub(super) fn generate(
        &mut self,
        model: &str,
        plan: &Plan,
        messages: Vec<ChatMessage>,
        outcome: &mut LlmOutcome,
        ratio_key: &str,
        raw_prompt_tokens: u32,
    ) -> Option<String> {
        let is_ollama = outcome.provider == "ollama";
        let req = ChatRequest {
            model: model.to_string(),
            messages,
            max_tokens: Some(plan.answer_cap),
            sampling: self.req.sampling,
            context_tokens: is_ollama.then_some(plan.window),
            format: self.req.format.clone(),
            stop: self.req.stop.clone(),
        };
        let mut text = String::new();
        let mut first: Option<f64> = None;
        let started = self.started;
        let on_event = &mut self.on_event;
        let mut stopped = false;
        let cancel = &self.req.cancel;
        let result = self.engine.stream_chat_cancellable(req, cancel, &mut |t: &str| {
            if first.is_none() {
                first = Some(ms(started));
            }
            text.push_str(t);
            if on_event(ChatTurnEvent::Token { text: t.to_string() }).is_break() {
                stopped = true;
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        });
        self.trace.timings_ms.first_token = first;
        match result {
            Ok(reply) => {
                if let Some(u) = &reply.usage {
                    self.record_usage(u, &outcome.provider, ratio_key, raw_prompt_tokens);
                }
                if reply.stopped || stopped {
                    outcome.status = AnswerStatus::Stopped;
                    // Stopped before the first token: there is no answer, not an empty one.
                    if reply.text.is_empty() {
                        return None;
                    }
                }
                Some(reply.text)
            }
            Err(e @ (Error::LlmUnreachable { .. } | Error::LlmTimeout { .. } | Error::ModelNotFound { .. }))
                if text.is_empty() =>
            {
                self.unavailable(outcome, &e);
                None
            }
            Err(e) => {
                outcome.status = AnswerStatus::Failed;
                outcome.error_code = Some(e.code().into());
                outcome.message = Some(format!("the answer failed: {e}"));
                self.notice(format!("the answer failed: {e}"));
                (!text.is_empty()).then_some(text)
            }
        }
    }
}

/// Most excerpts a turn without an answer carries: the best hits, as a search page opens.
const MAX_EXCERPTS: usize = 5;

/// The lines of the best repository sources (their search hit's snippet), in prompt order.
fn excerpts(sources: &[ChatSource], hits: &[crate::engine::search::types::SearchHit]) -> Vec<SourceExcerpt> {
    sources
        .iter()
        .filter(|s| s.slot == Slot::Repo)
        .filter_map(|s| {
            let (path, a, b) = (s.path.as_deref()?, s.line_start?, s.line_end?);
            let h = hits.iter().find(|h| h.path == path && h.line_start <= b && a <= h.line_end)?;
            (!h.snippet.trim().is_empty()).then(|| SourceExcerpt {
                citation: s.citation.clone(),
                path: path.to_string(),
                line_start: h.snippet_line_start,
                text: h.snippet.clone(),
                score: h.score,
            })
        })
        .take(MAX_EXCERPTS)
        .collect()
}

/// The refusal for a model known to be an embedding model, asked to chat through Ollama: docdex's
/// model catalog lists it as one (`all-minilm`, `nomic-embed-text`, `mxbai-embed-large`), or its
/// name says so (`embed`, `minilm`). Ollama would refuse the chat ("does not support chat")
/// after docdex had asked for the model's window (512 tokens for `all-minilm`) and budgeted the
/// sources down to it. Other names are refused when the window is asked: Ollama's `/api/show`
/// lists an embedding model's capabilities without `completion`. OpenAI-compatible servers
/// are left to their own refusal, which carries their own advice (llama.cpp's `--embeddings`).
fn cannot_chat(provider: &dyn Provider, model: &str) -> Option<Error> {
    if provider.kind() != "ollama" || model.is_empty() {
        return None;
    }
    let lower = model.to_ascii_lowercase();
    let catalogued = crate::engine::llm::models::catalog()
        .ok()
        .and_then(|c| crate::engine::llm::models::lookup(&c, model).map(|m| m.kind == "embedding"));
    let embedding = catalogued.unwrap_or_else(|| lower.contains("embed") || lower.contains("minilm"));
    embedding.then(|| Error::ModelCannotChat {
        provider: provider.kind().into(),
        model: model.into(),
        url: provider.base_url().into(),
        said: String::new(),
    })
}

/// Prompts smaller than this (by docdex's count) are not checked for a cut: every context
/// window servers run with holds them, and a small prompt's count differs between tokenizers
/// and chat templates by more than its share.
const PROMPT_CUT_MIN_TOKENS: u32 = 1024;

/// True when a server that read `seen` prompt tokens (cached ones included) was sent a prompt
/// docdex counted as `sent`, and cut it. Honest counts come within ~30% of docdex's: its
/// estimate is cl100k with a 1.25 margin until the model's own ratio is measured, and the
/// local tokenizers in use count code from ~0.9x (Llama 3) to ~1.3x (SentencePiece) cl100k,
/// so an honest server reports at least ~70% of the estimate. A count under half of it is a
/// server that ran out of window and dropped the rest; 0 (no count, as older Ollama says
/// for a cached prompt) is no evidence.
fn prompt_cut(sent: u32, seen: u32) -> bool {
    sent >= PROMPT_CUT_MIN_TOKENS && seen > 0 && u64::from(seen) * 2 < u64::from(sent)
}

/// The notice for a cut prompt: what the model saw, and the two ways to make it see it all.
fn prompt_cut_notice(provider: &str, seen: u32, sent: u32) -> String {
    let server = match provider {
        "ollama" => "Ollama: `OLLAMA_CONTEXT_LENGTH`, or `num_ctx` in the model's Modelfile",
        _ => "llama.cpp: `--ctx-size`; vLLM: `--max-model-len`; LM Studio: the model's context length; Ollama's /v1: `OLLAMA_CONTEXT_LENGTH`",
    };
    format!(
        "the model saw only {seen} of the ~{sent} prompt tokens docdex sent: its server cut the prompt to fit a smaller context window, so the answer may miss the sources and question cut away. Raise the server's context size ({server}) to hold the prompt and the answer, or set `[llm] context_tokens` to the window the server really runs with so docdex budgets for it"
    )
}

fn status_name(s: AnswerStatus) -> &'static str {
    match s {
        AnswerStatus::Answered => "answered",
        AnswerStatus::Stopped => "stopped",
        AnswerStatus::Unavailable => "unavailable",
        AnswerStatus::Failed => "failed",
    }
}

fn ms_of(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_counts_as_cut_only_when_the_server_saw_well_under_half_of_a_large_one() {
        assert!(prompt_cut(6000, 2048), "a 2,048-token server given ~6,000");
        assert!(!prompt_cut(6000, 4200), "a tokenizer counting 30% fewer is honest");
        assert!(!prompt_cut(6000, 3000), "exactly half is within the estimate's error");
        assert!(!prompt_cut(6000, 0), "no count is no evidence");
        assert!(!prompt_cut(900, 100), "a small prompt is not checked");
        let n = prompt_cut_notice("openai", 2048, 6000);
        assert!(
            n.contains("saw only 2048 of the ~6000") && n.contains("--ctx-size") && n.contains("[llm] context_tokens"),
            "{n}"
        );
    }
}
