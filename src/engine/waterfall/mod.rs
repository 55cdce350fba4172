//! The waterfall orchestrator: one chat turn, the same for every surface (`docdex chat`,
//! HTTP `/v1/chat/completions`, MCP, the TUI), each of which calls [`Engine::chat`].
//!
//! A turn runs the tiers in order and records each in the trace and the reasoning DAG:
//! Tier 0 (the agent's profile and project map, `tier0`), Tier 1 (the code index, and the libs
//! index when a repo has one), the confidence gate against `[search] web_trigger_threshold`,
//! Tier 2 (the web: wanted on low confidence or when forced; discovery, the top pages fetched
//! and their best passages, or a note when offline or blocked), then Tier 3 (repo memory, the git diff with its one-hop neighbours, and the
//! model). Context is assembled Profile > Map > Memory > Diff > Repo > History > Library/Web within the token
//! budget (`budget`), the answer streams as it is generated, and without a reachable model
//! the turn still returns everything it retrieved, with the commands that set a model up.

mod answer;
pub mod budget;
pub mod context;
pub mod diff;
pub mod excerpt;
mod log;
pub mod sources;
mod tier0;
mod tiers;
pub mod types;

pub use answer::no_model_message;
pub use tiers::decide_gate;

use crate::engine::repos::RepoRef;
use crate::engine::search::types::SearchResponse;
use crate::engine::Engine;
use crate::error::{Error, Result};
use budget::RatioBook;
use diff::{DiffTarget, FileDiff};
use log::DagLog;
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;
use types::*;

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
    /// Returning `ControlFlow::Break` from `on_event`, or tripping `req.cancel` from another
    /// thread, stops the turn: the tiers not yet run are skipped, the model is not asked or its
    /// answer is cut off (even before the first token), and the turn still returns, with status
    /// `stopped`, its DAG session logged. Bad input (an empty question, a bad diff range, not a git
    /// repository) is an error; an unreachable server or a missing model is not: the response
    /// then has no answer, status `unavailable`, and the retrieved sources.
    pub fn chat(&self, repo_path: &Path, req: &ChatTurnRequest, on_event: OnChatEvent<'_>) -> Result<ChatTurnResponse> {
        let _span = tracing::info_span!("chat_turn", repo = %repo_path.display(), session = req.session_id.as_deref())
            .entered();
        validate(req)?;
        budget::warm_up();
        let repo = self.resolve_repo(repo_path)?;
        // An unindexed repository fails here, before anything is logged.
        self.searcher(&repo)?;
        // The tiers' own waits on the model server (the query's embedding in search and
        // recall, the window lookup) answer to the turn's token too.
        let ambient = req.cancel.enter();
        let mut resp = Turn::new(self, &repo, req, &mut *on_event).run()?;
        drop(ambient);
        self.evolve_from_turn(req, &mut resp, on_event);
        Ok(resp)
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
    if req.max_answer_tokens == Some(0) {
        return Err(Error::BadRequest(
            "max_tokens 0 asks for no answer: give 1 or more, or leave it out for [llm] max_answer_tokens".into(),
        ));
    }
    if let Some(id) = req.session_id.as_deref().filter(|id| !crate::engine::dag::valid_session_id(id)) {
        return Err(Error::BadRequest(format!(
            "bad session id {}: use 1 to 64 letters, digits, '-' or '_'",
            crate::error::quoted(id)
        )));
    }
    if let Some(agent) = &req.agent_id {
        if !crate::engine::dag::valid_session_id(agent) {
            return Err(Error::BadRequest(format!(
                "bad agent id {}: use 1 to 64 letters, digits, '-' or '_' (e.g. mcoda_frontend)",
                crate::error::quoted(agent)
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

/// What the tiers found.
#[derive(Default)]
struct Found {
    profile: Vec<crate::engine::profiles::types::PreferenceHit>,
    /// What the profile step said of them, restated once the budget has run.
    profile_note: Option<tier0::ProfileNote>,
    map: Option<crate::engine::profiles::types::ProjectMap>,
    search: Option<SearchResponse>,
    memories: Vec<sources::RecalledMemory>,
    diff: Vec<FileDiff>,
    diff_label: String,
    neighbours: Vec<sources::Neighbour>,
    web: Vec<crate::engine::web::types::WebPassage>,
    libs: Vec<crate::engine::libs::types::LibHit>,
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
                agent_id: engine.resolve_agent(req.agent_id.as_deref()),
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

    /// Whether the turn should stop: the callback returned `Break` or `req.cancel` was tripped.
    fn stop_requested(&mut self) -> bool {
        if !self.stopped && self.req.cancel.is_cancelled() {
            tracing::info!("chat turn cancelled");
            self.stopped = true;
        }
        self.stopped
    }

    /// Records `name` as skipped when the turn was stopped before it; true when it was.
    fn skipped_for_stop(&mut self, tier: u8, name: &str) -> bool {
        if !self.stop_requested() {
            return false;
        }
        self.step(tier, name, StepStatus::Skipped, Instant::now(), 0, "the turn was stopped before this step".into());
        true
    }

    fn step(&mut self, tier: u8, name: &str, status: StepStatus, since: Instant, items: u32, detail: String) {
        let step = StepTrace { tier, name: name.into(), status, ms: ms(since), items, detail };
        self.trace.steps.push(step.clone());
        self.emit(ChatTurnEvent::Step(step));
    }

    /// The reasoning log's problems as notices, sent like the others: kept for the trace
    /// alone, `docdex chat` (without `--trace`), the workbench and streams never showed that
    /// a turn went unlogged, and the CLI still pointed at `docdex dag view` for it.
    fn log_notices(&mut self) {
        for message in std::mem::take(&mut self.dag.notices) {
            self.notice(message);
        }
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
        self.log_notices();
        match self.retrieve_and_assemble(root, diff, diff_ms) {
            Ok(assembled) => self.finish(assembled),
            Err(e) => {
                self.dag.failed(&e);
                Err(e)
            }
        }
    }

    /// The tiers and the budgeted prompt, after the request was logged as `root`.
    fn retrieve_and_assemble(
        &mut self,
        root: Option<i64>,
        diff: Option<(DiffTarget, Vec<FileDiff>)>,
        diff_ms: f64,
    ) -> Result<answer::Assembled> {
        let mut found = Found::default();
        let profile_obs = self.profile_step(root, &mut found);
        let map_obs = self.map_step(root, &mut found);
        let workflow = Self::workflow_steps(&found);
        let plan_node = self.plan_thought(&[root, profile_obs, map_obs], diff.as_ref(), &workflow);
        let search_obs = self.code_index(plan_node, &mut found)?;
        self.libs_step(plan_node, &mut found);
        let gate_node = self.gate(search_obs, found.search.as_ref());
        let web_obs = self.web_step(gate_node, &mut found);
        let memory_obs = self.memory_step(plan_node, &mut found);
        let diff_obs = self.diff_step(plan_node, diff, diff_ms, &mut found);
        self.assemble(&found, &[gate_node, web_obs, memory_obs, diff_obs])
    }
}

fn ms(since: Instant) -> f64 {
    (since.elapsed().as_secs_f64() * 1e6).round() / 1e3
}
