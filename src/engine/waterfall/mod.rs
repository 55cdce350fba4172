//! The waterfall orchestrator: one chat turn, the same for every surface (`docdex chat`,
//! HTTP `/v1/chat/completions`, MCP, the TUI), each of which calls [`Engine::chat`].
//!
//! A turn runs the tiers in order and records each in the trace and the reasoning DAG:
//! Tier 0 (profile rules: reserved until profiles exist), Tier 1 (the code index, and the libs
//! index when a repo has one), the confidence gate against `[search] web_trigger_threshold`,
//! Tier 2 (the web: wanted on low confidence or when forced, not built yet, so recorded as
//! unavailable), then Tier 3 (repo memory, the git diff with its one-hop neighbours, and the
//! model). Context is assembled Memory > Diff > Repo > History > Library/Web within the token
//! budget (`budget`), the answer streams as it is generated, and without a reachable model
//! the turn still returns everything it retrieved, with the commands that set a model up.

pub mod budget;
pub mod context;
pub mod diff;
pub mod sources;
pub mod types;

use crate::engine::dag::{DagStore, NodeKind};
use crate::engine::llm::{ChatRequest, Provider};
use crate::engine::protocol::{SearchRequest, SearchResponse};
use crate::engine::repos::RepoRef;
use crate::engine::Engine;
use crate::error::{Error, Result};
use budget::{Piece, Plan, RatioBook, TokenCounter};
use context::Files;
use diff::{DiffTarget, FileDiff};
use serde_json::{json, Value};
use sources::Availability;
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;
use types::*;

/// What the user is told when no model can answer: the error, the commands that fix it (when
/// the error does not already name them), and that retrieval still worked.
pub fn no_model_message(e: &Error) -> String {
    let msg = e.to_string();
    let mut hint = String::new();
    if !msg.contains("docdex llm-setup") {
        hint.push_str(" `docdex llm-setup` installs and configures a model.");
    }
    if !msg.contains("docdex check") {
        hint.push_str(" `docdex check` diagnoses the setup.");
    }
    format!("no answer: {msg}.{hint} The sources below were found without a model.")
}

/// Hits shown to the gate in the trace.
const GATE_TOP_HITS: usize = 5;
/// Memories recalled per question.
const MEMORY_LIMIT: usize = 8;
/// Neighbours added for a diff at most.
const MAX_NEIGHBOURS: usize = 12;

/// The waterfall's per-engine state: context windows the provider reported (per server and
/// model) and measured token ratios.
#[derive(Default)]
pub(crate) struct WaterfallState {
    windows: Mutex<HashMap<String, Option<u32>>>,
    ratios: OnceLock<RatioBook>,
}

/// An event callback: return `ControlFlow::Break` to stop the answer.
pub type OnChatEvent<'a> = &'a mut dyn FnMut(ChatTurnEvent) -> ControlFlow<()>;

impl Engine {
    /// Answers one chat turn about the repository at `repo_path`, streaming events (steps as
    /// they finish, the assembled context, answer tokens, notices) into `on_event`.
    ///
    /// Returning `ControlFlow::Break` from `on_event` stops the answer (the turn still returns,
    /// with status `stopped`). Bad input (an empty question, a bad diff range, not a git
    /// repository) is an error; an unreachable server or a missing model is not: the response
    /// then has no answer, status `unavailable`, and the retrieved sources.
    pub fn chat(&self, repo_path: &Path, req: &ChatTurnRequest, on_event: OnChatEvent<'_>) -> Result<ChatTurnResponse> {
        validate(req)?;
        budget::warm_up();
        let repo = self.resolve_repo(repo_path)?;
        let searcher = self.searcher(&repo)?;
        drop(searcher);
        Turn::new(self, &repo, req, on_event).run()
    }

    fn waterfall(&self) -> &WaterfallState {
        &self.inner.waterfall
    }

    fn token_ratios(&self) -> &RatioBook {
        self.waterfall().ratios.get_or_init(|| RatioBook::new(self.inner.paths.state.join("cache/token_ratios.json")))
    }
}

fn validate(req: &ChatTurnRequest) -> Result<()> {
    if req.query.trim().is_empty() {
        return Err(Error::BadRequest("empty question: pass --query TEXT (or type one at the prompt)".into()));
    }
    if let Some(agent) = &req.agent_id {
        if !crate::engine::dag::valid_session_id(agent) {
            return Err(Error::BadRequest(format!(
                "bad agent id {agent:?}: use 1 to 64 letters, digits, '-' or '_' (e.g. mcoda_frontend)"
            )));
        }
    }
    Ok(())
}

/// One request in flight.
struct Turn<'a> {
    engine: &'a Engine,
    repo: &'a RepoRef,
    req: &'a ChatTurnRequest,
    on_event: OnChatEvent<'a>,
    started: Instant,
    trace: ChatTrace,
    dag: DagLog,
    stopped: bool,
}

/// What Tier 1 and Tier 3 retrieval found.
#[derive(Default)]
struct Found {
    search: Option<SearchResponse>,
    memories: Vec<sources::RecalledMemory>,
    diff: Vec<FileDiff>,
    diff_label: String,
    neighbours: Vec<sources::Neighbour>,
}

impl<'a> Turn<'a> {
    fn new(engine: &'a Engine, repo: &'a RepoRef, req: &'a ChatTurnRequest, on_event: OnChatEvent<'a>) -> Turn<'a> {
        Turn {
            engine,
            repo,
            req,
            on_event,
            started: Instant::now(),
            trace: ChatTrace {
                request_id: uuid::Uuid::new_v4().to_string(),
                agent_id: req.agent_id.clone(),
                ..Default::default()
            },
            dag: DagLog::default(),
            stopped: false,
        }
    }

    fn emit(&mut self, ev: ChatTurnEvent) {
        if (self.on_event)(ev).is_break() {
            self.stopped = true;
        }
    }

    fn step(&mut self, tier: u8, name: &str, status: StepStatus, since: Instant, items: u32, detail: String) {
        let step = StepTrace { tier, name: name.into(), status, ms: ms(since), items, detail };
        self.trace.steps.push(step.clone());
        self.emit(ChatTurnEvent::Step(step));
    }

    fn notice(&mut self, message: String) {
        tracing::info!(%message, "chat notice");
        self.trace.notices.push(message.clone());
        self.emit(ChatTurnEvent::Notice { message });
    }

    fn run(mut self) -> Result<ChatTurnResponse> {
        // Bad diff input fails the request before anything is logged.
        let diff_started = Instant::now();
        let diff = self.collect_diff()?;
        let diff_ms = ms(diff_started);
        let (dag, root) = DagLog::begin(self.repo, self.req);
        self.dag = dag;
        let plan_node = self.plan_thought(root, diff.as_ref());
        self.profile_step();
        let mut found = Found::default();
        let search_obs = self.code_index(plan_node, &mut found)?;
        self.libs_step();
        let gate_node = self.gate(search_obs, found.search.as_ref());
        let web_obs = self.web_step(gate_node);
        let memory_obs = self.memory_step(plan_node, &mut found);
        let diff_obs = self.diff_step(plan_node, diff, diff_ms, &mut found);
        let assembled = self.assemble(&found, &[gate_node, web_obs, memory_obs, diff_obs])?;
        self.finish(assembled)
    }

    fn collect_diff(&self) -> Result<Option<(DiffTarget, Vec<FileDiff>)>> {
        let Some(d) = &self.req.diff else { return Ok(None) };
        let target = DiffTarget::parse(&d.target)?;
        let files = diff::collect(&self.repo.root, &target, &d.paths)?;
        Ok(Some((target, files)))
    }

    fn plan_thought(&mut self, root: Option<i64>, diff: Option<&(DiffTarget, Vec<FileDiff>)>) -> Option<i64> {
        let mut plan = vec!["search the code index".to_string()];
        if self.engine.config().memory.enabled {
            plan.push("recall repo memory".into());
        }
        if let Some((target, files)) = diff {
            plan.push(format!(
                "read the diff ({}, {} files) and its one-hop neighbours",
                target.describe(),
                files.len()
            ));
        }
        plan.push("gate on local confidence, budget the context, ask the model".into());
        let label = format!("plan: {}", plan.join("; "));
        let payload = json!({"steps": plan, "web": self.req.web, "agent_id": self.req.agent_id});
        self.dag.node(NodeKind::Thought, &label, payload, &[root])
    }

    fn profile_step(&mut self) {
        let detail = match &self.req.agent_id {
            Some(a) => format!("agent {a}: profiles are not built yet, so the profile slot stays empty"),
            None => "no agent id; the profile slot stays empty until profiles exist".into(),
        };
        self.step(0, "profile", StepStatus::Unavailable, Instant::now(), 0, detail);
    }

    /// Tier 1: the code index. Returns the DAG observation node.
    fn code_index(&mut self, plan: Option<i64>, found: &mut Found) -> Result<Option<i64>> {
        let started = Instant::now();
        let limit = self.engine.config().search.max_repo_hits.max(1) as usize;
        let sreq = SearchRequest { query: self.req.query.clone(), limit: Some(limit), ..Default::default() };
        let call = self.dag.node(
            NodeKind::ToolCall,
            "search the code index",
            json!({"tool": "search", "index": "code", "query": self.req.query, "limit": limit}),
            &[plan],
        );
        let resp = match self.engine.search(&self.repo.root, &sreq) {
            Ok(r) => r,
            Err(e) => {
                self.dag.node(NodeKind::Observation, "search failed", json!({"error": e.to_string()}), &[call]);
                return Err(e);
            }
        };
        let top: Vec<Value> = resp
            .results
            .iter()
            .take(GATE_TOP_HITS)
            .map(|h| json!({"citation": h.chunk_id, "score": h.score}))
            .collect();
        let detail = format!("{} hits, confidence {:.2}", resp.results.len(), resp.confidence);
        self.trace.timings_ms.retrieval = ms(started);
        let obs = self.dag.node(
            NodeKind::Observation,
            &detail,
            json!({"hits": resp.results.len(), "total_hits": resp.total_hits, "confidence": resp.confidence, "top": top}),
            &[call],
        );
        self.step(1, "code_index", StepStatus::Ran, started, resp.results.len() as u32, detail);
        found.search = Some(resp);
        Ok(obs)
    }

    fn libs_step(&mut self) {
        let exists = self.repo.state_dir.join("libs_index").join("meta.json").exists();
        let (status, detail) = if exists {
            (StepStatus::Skipped, "a libs index exists but this build does not search it yet".to_string())
        } else {
            (StepStatus::Absent, "no libs index for this repository (library docs ingestion is not built yet)".into())
        };
        self.step(1, "libs_index", status, Instant::now(), 0, detail);
    }

    /// The confidence gate. Returns the DAG decision node.
    fn gate(&mut self, obs: Option<i64>, search: Option<&SearchResponse>) -> Option<i64> {
        let threshold = self.engine.config().search.web_trigger_threshold;
        let confidence = search.map(|s| s.confidence).unwrap_or(0.0);
        let top_hits = search
            .map(|s| {
                s.results
                    .iter()
                    .take(GATE_TOP_HITS)
                    .map(|h| ScoredHit { citation: h.chunk_id.clone(), score: h.score })
                    .collect()
            })
            .unwrap_or_default();
        let gate = decide_gate(confidence, threshold, self.req.web, top_hits);
        tracing::info!(confidence, threshold, web_wanted = gate.web_wanted, reason = %gate.reason, "waterfall gate");
        let label = format!("gate: {}", gate.reason);
        let node = self.dag.node(
            NodeKind::Decision,
            &label,
            json!({"decision": "gate", "confidence": confidence, "threshold": threshold, "passed": gate.passed,
                   "web_policy": gate.web_policy, "web_wanted": gate.web_wanted, "web_available": false}),
            &[obs],
        );
        let detail = gate.reason.clone();
        self.trace.gate = gate;
        self.step(1, "gate", StepStatus::Ran, Instant::now(), 0, detail);
        node
    }

    /// Tier 2. Returns the DAG observation node when the web was wanted.
    fn web_step(&mut self, gate: Option<i64>) -> Option<i64> {
        if !self.trace.gate.web_wanted {
            let why =
                if self.req.web == WebPolicy::Off { "web not wanted (--no-web)" } else { "local results suffice" };
            self.step(2, "web", StepStatus::Skipped, Instant::now(), 0, why.into());
            return None;
        }
        let call =
            self.dag.node(NodeKind::ToolCall, "web search", json!({"tool": "web", "query": self.req.query}), &[gate]);
        let detail = "the web tier is not built yet (a later issue): answering from local context".to_string();
        let obs = self.dag.node(
            NodeKind::Observation,
            "web unavailable",
            json!({"available": false, "detail": detail}),
            &[call],
        );
        self.step(2, "web", StepStatus::Unavailable, Instant::now(), 0, detail);
        let why = if self.req.web == WebPolicy::Force {
            "web search was asked for".to_string()
        } else {
            format!("local confidence is low ({})", self.trace.gate.reason)
        };
        self.notice(format!("{why}, but the web tier is not available yet; the answer uses local context only"));
        obs
    }

    /// Tier 3: repo memory. Returns the DAG observation node.
    fn memory_step(&mut self, plan: Option<i64>, found: &mut Found) -> Option<i64> {
        let started = Instant::now();
        if !self.engine.config().memory.enabled {
            self.step(3, "memory", StepStatus::Skipped, started, 0, "[memory] enabled = false".into());
            return None;
        }
        let call = self.dag.node(
            NodeKind::ToolCall,
            "recall repo memory",
            json!({"tool": "memory_recall", "limit": MEMORY_LIMIT}),
            &[plan],
        );
        let (status, detail, payload) =
            match sources::recall_memory(self.engine, self.repo, &self.req.query, MEMORY_LIMIT) {
                Ok(Availability::Ready(m)) => {
                    let detail = format!("{} memories recalled", m.len());
                    let ids: Vec<&str> = m.iter().map(|x| x.id.as_str()).collect();
                    let payload = json!({"memories": ids});
                    found.memories = m;
                    (StepStatus::Ran, detail, payload)
                }
                Ok(Availability::Unavailable(why)) => {
                    (StepStatus::Unavailable, why.clone(), json!({"available": false, "detail": why}))
                }
                Err(e) => (StepStatus::Failed, format!("memory recall failed: {e}"), json!({"error": e.to_string()})),
            };
        self.trace.timings_ms.memory = ms(started);
        let obs = self.dag.node(NodeKind::Observation, &detail, payload, &[call]);
        let items = found.memories.len() as u32;
        self.step(3, "memory", status, started, items, detail);
        obs
    }

    /// Tier 3: the diff and its one-hop neighbours. Returns the DAG observation node.
    fn diff_step(
        &mut self,
        plan: Option<i64>,
        diff: Option<(DiffTarget, Vec<FileDiff>)>,
        diff_ms: f64,
        found: &mut Found,
    ) -> Option<i64> {
        let Some((target, files)) = diff else {
            self.step(3, "diff", StepStatus::Skipped, Instant::now(), 0, "no --diff asked".into());
            return None;
        };
        let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        let call = self.dag.node(
            NodeKind::ToolCall,
            &format!("git diff ({})", target.describe()),
            json!({"tool": "git diff", "target": self.req.diff.as_ref().map(|d| d.target.clone()), "paths": self.req.diff.as_ref().map(|d| d.paths.clone())}),
            &[plan],
        );
        let detail = format!("{} changed files ({})", files.len(), target.describe());
        let obs = self.dag.node(NodeKind::Observation, &detail, json!({"files": paths}), &[call]);
        let step = StepTrace {
            tier: 3,
            name: "diff".into(),
            status: StepStatus::Ran,
            ms: diff_ms,
            items: files.len() as u32,
            detail,
        };
        self.trace.steps.push(step.clone());
        self.emit(ChatTurnEvent::Step(step));
        let started = Instant::now();
        let changed: Vec<String> =
            files.iter().filter(|f| f.change != diff::Change::Deleted).map(|f| f.path.clone()).collect();
        let mut last = obs;
        if !changed.is_empty() {
            let call = self.dag.node(
                NodeKind::ToolCall,
                "impact graph: one hop",
                json!({"tool": "impact", "files": changed}),
                &[obs],
            );
            let (status, detail, payload) = match sources::one_hop(self.engine, self.repo, &changed) {
                Ok(Availability::Ready(mut n)) => {
                    n.retain(|x| !changed.contains(&x.path));
                    n.truncate(MAX_NEIGHBOURS);
                    let detail = format!("{} neighbours one import away", n.len());
                    let payload = json!({"neighbours": n.iter().map(|x| json!({"path": x.path, "changed": x.changed, "dependent": x.dependent})).collect::<Vec<_>>()});
                    found.neighbours = n;
                    (StepStatus::Ran, detail, payload)
                }
                Ok(Availability::Unavailable(why)) => {
                    (StepStatus::Unavailable, why.clone(), json!({"available": false, "detail": why}))
                }
                Err(e) => {
                    (StepStatus::Failed, format!("impact expansion failed: {e}"), json!({"error": e.to_string()}))
                }
            };
            last = self.dag.node(NodeKind::Observation, &detail, payload, &[call]);
            let items = found.neighbours.len() as u32;
            self.step(3, "impact", status, started, items, detail);
        }
        self.trace.timings_ms.diff = diff_ms + ms(started);
        found.diff_label = target.describe();
        found.diff = files;
        last
    }

    /// Counts, budgets and renders the prompt; logs the budget decision.
    fn assemble(&mut self, found: &Found, parents: &[Option<i64>]) -> Result<Assembled> {
        let started = Instant::now();
        let provider = self.engine.provider()?;
        let model = self.req.model.clone().unwrap_or_else(|| self.engine.config().llm.default_model.clone());
        let (window, window_source, preflight) = self.context_window(provider.as_ref(), &model);
        let max_answer = self.req.max_answer_tokens.unwrap_or(self.engine.config().llm.max_answer_tokens);
        let plan = budget::plan(window, max_answer);
        let ratio_key = format!("{}|{}|{model}", provider.kind(), provider.base_url());
        let counter = TokenCounter::for_model(&model, self.engine.token_ratios().get(&ratio_key))?;
        let repo_name = self.repo.root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let instructions = context::instructions(&repo_name);
        let mandatory = counter.count(&instructions) + counter.count(&self.req.query) + 2 * budget::MESSAGE_OVERHEAD;
        let pieces = self.pieces(found);
        let agent = self.req.agent_id.as_deref();
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
        let messages = context::render(&instructions, &self.req.query, &fitted.kept, &heading);
        self.trace.budget = budget::trace(&plan, &window_source, counter.trace(&model), &fitted);
        self.trace.drops = fitted.drops.clone();
        let sources: Vec<ChatSource> = fitted.kept.iter().filter_map(|p| p.source.clone()).collect();
        self.log_budget(&fitted, parents);
        self.trace.timings_ms.assembly = ms(started);
        self.emit(ChatTurnEvent::Context { sources: sources.clone(), budget: self.trace.budget.clone() });
        let raw_prompt_tokens = if counter.exact() {
            0
        } else {
            let raw = TokenCounter::for_model(&model, None)?;
            messages.iter().map(|m| raw.count(&m.content) + budget::MESSAGE_OVERHEAD).sum()
        };
        Ok(Assembled { provider, model, plan, messages, sources, preflight, ratio_key, raw_prompt_tokens })
    }

    fn pieces(&self, found: &Found) -> Vec<Piece> {
        let mut files = Files::new(&self.repo.root);
        let mut pieces = context::memory_pieces(&found.memories);
        let diff = context::diff_pieces(&found.diff);
        let next = diff.len();
        pieces.extend(diff);
        pieces.extend(context::neighbour_pieces(&mut files, &found.neighbours, next));
        if let Some(s) = &found.search {
            pieces.extend(context::repo_pieces(&mut files, &s.results));
        }
        pieces.extend(context::history_pieces(&self.req.history));
        pieces
    }

    fn log_budget(&mut self, fitted: &budget::Fitted, parents: &[Option<i64>]) {
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
    /// model pointless (unreachable server, missing model).
    fn context_window(&mut self, provider: &dyn Provider, model: &str) -> (u32, String, Option<Error>) {
        let configured = self.engine.config().llm.context_tokens;
        let key = format!("{}|{}|{model}", provider.kind(), provider.base_url());
        let cached = self.engine.waterfall().windows.lock().ok().and_then(|m| m.get(&key).copied());
        let (reported, preflight) = match cached {
            Some(w) => (w, None),
            None => match self.engine.block_on(provider.context_window(model)) {
                Ok(Ok(w)) => {
                    if let Ok(mut m) = self.engine.waterfall().windows.lock() {
                        m.insert(key, w);
                    }
                    (w, None)
                }
                Ok(Err(e @ (Error::LlmUnreachable { .. } | Error::ModelNotFound { .. }))) => (None, Some(e)),
                Ok(Err(e)) => {
                    tracing::debug!(error = %e, "the provider did not say the model's context window");
                    (None, None)
                }
                Err(e) => (None, Some(e)),
            },
        };
        let (window, source) = match reported {
            Some(w) if w <= configured => (w.max(1024), format!("provider ({model} reports {w})")),
            Some(w) => (configured, format!("config ([llm] context_tokens; {model} allows {w})")),
            None => (configured, "config ([llm] context_tokens; the provider does not report one)".into()),
        };
        (window, source, preflight)
    }

    /// Tier 3: the model. Streams tokens; never fails the turn for model trouble.
    fn finish(mut self, a: Assembled) -> Result<ChatTurnResponse> {
        let Assembled { provider, model, plan, messages, mut sources, preflight, ratio_key, raw_prompt_tokens } = a;
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
                   "prompt_tokens": self.trace.budget.prompt_tokens, "max_tokens": plan.answer_cap, "window": plan.window}),
            &[self.dag.budget_node],
        );
        let started = Instant::now();
        let mut outcome = LlmOutcome {
            status: AnswerStatus::Answered,
            provider: provider.kind().into(),
            model: model.clone(),
            base_url: provider.base_url().into(),
            error_code: None,
            message: None,
        };
        let mut answer: Option<String> = None;
        if self.stopped {
            outcome.status = AnswerStatus::Stopped;
        } else if let Some(e) = preflight {
            self.unavailable(&mut outcome, &e);
        } else {
            answer = self.generate(&model, &plan, messages, &mut outcome, &ratio_key, raw_prompt_tokens);
        }
        let gen_ms = ms(started);
        if answer.is_some() {
            self.trace.timings_ms.generation = Some(gen_ms);
        }
        context::mark_cited(&mut sources, answer.as_deref().unwrap_or(""));
        if let Some(g) = self.trace.budget.slots.iter_mut().find(|s| s.slot == Slot::Generation) {
            g.used = self.trace.model.completion_tokens.unwrap_or(0);
        }
        let cited: Vec<&str> = sources.iter().filter(|s| s.cited).map(|s| s.citation.as_str()).collect();
        self.dag.node(
            NodeKind::Observation,
            &format!("answer: {}", status_name(outcome.status)),
            json!({"status": outcome.status, "answer": answer, "cited": cited, "error": outcome.message,
                   "completion_tokens": self.trace.model.completion_tokens, "finish_reason": self.trace.model.finish_reason}),
            &[call],
        );
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
        self.step(3, "llm", status, started, 0, detail);
        self.trace.notices.append(&mut self.dag.notices);
        self.trace.timings_ms.total = ms(self.started);
        Ok(ChatTurnResponse {
            schema_version: CHAT_SCHEMA_VERSION,
            session_id: self.dag.session.clone(),
            turn: self.dag.turn,
            repo: self.repo.root.clone(),
            query: self.req.query.clone(),
            answer,
            sources,
            llm: outcome,
            trace: self.trace,
        })
    }

    fn unavailable(&mut self, outcome: &mut LlmOutcome, e: &Error) {
        outcome.status = AnswerStatus::Unavailable;
        outcome.error_code = Some(e.code().into());
        let message = no_model_message(e);
        outcome.message = Some(message.clone());
        self.notice(message);
    }

    /// Streams the answer; returns what arrived (`None` when nothing could be generated).
    fn generate(
        &mut self,
        model: &str,
        plan: &Plan,
        messages: Vec<crate::engine::llm::ChatMessage>,
        outcome: &mut LlmOutcome,
        ratio_key: &str,
        raw_prompt_tokens: u32,
    ) -> Option<String> {
        let is_ollama = outcome.provider == "ollama";
        let req = ChatRequest {
            model: model.to_string(),
            messages,
            max_tokens: Some(plan.answer_cap),
            temperature: None,
            context_tokens: is_ollama.then_some(plan.window),
        };
        let mut text = String::new();
        let mut first: Option<f64> = None;
        let started = self.started;
        let on_event = &mut self.on_event;
        let mut stopped = false;
        let result = self.engine.stream_chat(req, &mut |t: &str| {
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
                    self.trace.model.prompt_tokens_reported = Some(u.prompt_tokens).filter(|n| *n > 0);
                    self.trace.model.completion_tokens = Some(u.completion_tokens);
                    self.trace.model.finish_reason = Some(u.finish_reason.clone());
                    if raw_prompt_tokens > 0 {
                        self.engine.token_ratios().record(ratio_key, raw_prompt_tokens, u.prompt_tokens);
                    }
                }
                if reply.stopped || stopped {
                    outcome.status = AnswerStatus::Stopped;
                }
                Some(reply.text)
            }
            Err(e @ (Error::LlmUnreachable { .. } | Error::ModelNotFound { .. })) if text.is_empty() => {
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

/// The prompt, ready to send.
struct Assembled {
    provider: Arc<dyn Provider>,
    model: String,
    plan: Plan,
    messages: Vec<crate::engine::llm::ChatMessage>,
    sources: Vec<ChatSource>,
    preflight: Option<Error>,
    ratio_key: String,
    raw_prompt_tokens: u32,
}

/// The gate: stay local when `confidence >= threshold`; want the web below it or when forced;
/// never with `--no-web`.
pub fn decide_gate(confidence: f64, threshold: f64, policy: WebPolicy, top_hits: Vec<ScoredHit>) -> GateTrace {
    let passed = confidence >= threshold;
    let cmp = if passed { ">=" } else { "<" };
    let (web_wanted, reason) = match policy {
        WebPolicy::Off => {
            (false, format!("web suppressed (--no-web); confidence {confidence:.2} {cmp} threshold {threshold:.2}"))
        }
        WebPolicy::Force => {
            (true, format!("web forced (--force-web); confidence {confidence:.2} {cmp} threshold {threshold:.2}"))
        }
        WebPolicy::Auto if passed => {
            (false, format!("confidence {confidence:.2} >= threshold {threshold:.2}: stay local"))
        }
        WebPolicy::Auto => (true, format!("confidence {confidence:.2} < threshold {threshold:.2}: web wanted")),
    };
    GateTrace { confidence, threshold, passed, top_hits, web_policy: policy, web_wanted, reason, web_available: false }
}

fn status_name(s: AnswerStatus) -> &'static str {
    match s {
        AnswerStatus::Answered => "answered",
        AnswerStatus::Stopped => "stopped",
        AnswerStatus::Unavailable => "unavailable",
        AnswerStatus::Failed => "failed",
    }
}

fn ms(since: Instant) -> f64 {
    (since.elapsed().as_secs_f64() * 1e6).round() / 1e3
}

/// The turn's reasoning-DAG writer. Logging never fails a chat: a problem with `dag.db`
/// becomes a notice and logging stops for the turn.
#[derive(Default)]
struct DagLog {
    store: Option<DagStore>,
    session: String,
    turn: u32,
    budget_node: Option<i64>,
    notices: Vec<String>,
}

impl DagLog {
    /// Joins (or starts) the session and logs the user's request.
    fn begin(repo: &RepoRef, req: &ChatTurnRequest) -> (DagLog, Option<i64>) {
        let mut log = DagLog { turn: 1, session: req.session_id.clone().unwrap_or_default(), ..Default::default() };
        let opened = DagStore::open(repo).and_then(|s| {
            let cursor = s.join_session(req.session_id.as_deref(), req.agent_id.as_deref(), &req.query)?;
            Ok((s, cursor))
        });
        match opened {
            Ok((store, cursor)) => {
                log.session = cursor.id;
                log.turn = cursor.turn;
                log.store = Some(store);
                let payload = json!({"query": req.query, "agent_id": req.agent_id, "web": req.web, "diff": req.diff,
                                     "history_messages": req.history.len(), "turn": cursor.turn});
                let label: String = req.query.chars().take(120).collect();
                let root = log.node(NodeKind::UserRequest, &label, payload, &[cursor.last_node]);
                (log, root)
            }
            Err(e) => {
                if log.session.is_empty() {
                    log.session = uuid::Uuid::new_v4().to_string();
                }
                log.notices.push(format!("the reasoning log (dag.db) is unavailable, this turn is not logged: {e}"));
                (log, None)
            }
        }
    }

    /// Appends a node; `None` when logging is off.
    fn node(&mut self, kind: NodeKind, label: &str, payload: Value, parents: &[Option<i64>]) -> Option<i64> {
        let store = self.store.as_ref()?;
        let parents: Vec<i64> = parents.iter().flatten().copied().collect();
        match store.add_node(&self.session, kind, label, &payload, &parents) {
            Ok(id) => Some(id),
            Err(e) => {
                self.notices.push(format!("the reasoning log stopped part-way through this turn: {e}"));
                self.store = None;
                None
            }
        }
    }
}
