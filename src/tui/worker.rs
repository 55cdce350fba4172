//! The engine worker: turns the UI's [`Request`]s into engine calls on
//! blocking threads (the Engine API is synchronous) and sends the outcomes
//! back as [`EngineEvent`]s on the app's channel. Search, preview and impact
//! run in latest-wins slots; index runs report progress as they go; chat turns
//! run the waterfall (`Engine::chat`) and stream their answer until done or
//! stopped; watchers are the engine's keepers (`Engine::keep_fresh`) and run until
//! stopped. Nothing here ever blocks the event loop.

use super::event::{
    AppEvent, ChatUpdate, EngineEvent, ProfileJob, ProfileUpdate, ProviderState, ProviderStatus, Request, SymbolHit,
    WatchActivity,
};
use super::highlight::{highlight, sanitize};
use super::jobs::LatestWins;
use super::views;
use super::widgets::graph::{GraphEdge, GraphNode, GraphView, NodeKind, RuleFlag};
use super::widgets::preview::PreviewDoc;
use crate::engine::protocol::{missing_model_advice, model_matches, ChatMessage};
use crate::engine::protocol::{
    AnswerStatus, ChatTurnEvent, ChatTurnRequest, ChatTurnResponse, Highlight, IndexProgress,
};
use crate::engine::protocol::{CancelToken, FileRequest, ImpactRequest, ImpactResponse, RuleMark, SymbolsRequest};
use crate::engine::protocol::{FreshEvent, FreshState, WatchReport};
use crate::engine::{Engine, IndexOptions};
use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

/// Symbols asked for per symbol search (the title says when more matched).
const SYMBOL_LIMIT: usize = 500;
/// Lines read before the focus line for a preview (the highlighter starts there).
const PREVIEW_BEFORE: u32 = 400;
/// Lines read after the focus line.
const PREVIEW_AFTER: u32 = 400;
/// Files up to this many lines are highlighted from their first line, so block comments and
/// strings that open above the window are coloured correctly.
const HIGHLIGHT_FROM_START: u32 = 2000;

type Slot = Arc<Mutex<LatestWins<Request>>>;

/// The cancellation token of the job a latest-wins slot runs, for a slot whose superseded job
/// is worth stopping (the impact diagram: its risk overlay walks every cycle the diagram
/// shows, `Engine::rule_marks`). Changed only under the slot's lock, so a trip always reaches
/// the job that was running when the newer one was submitted.
#[derive(Debug, Clone, Default)]
struct Running(Arc<Mutex<CancelToken>>);

impl Running {
    /// A job was submitted: when it starts at once it gets a fresh token; when one runs, that
    /// one is stopped (the newer job replaces it and its answer would be thrown away).
    fn submitted(&self, starts: bool) {
        if starts {
            self.fresh();
        } else {
            self.stop();
        }
    }

    /// The next job starts: a fresh token for it.
    fn fresh(&self) {
        if let Ok(mut t) = self.0.lock() {
            *t = CancelToken::new();
        }
    }

    /// Stops the running job (the workbench quits, or a newer one replaces it).
    fn stop(&self) {
        if let Ok(t) = self.0.lock() {
            t.cancel();
        }
    }

    /// The running job's token, made ambient while it runs.
    fn token(&self) -> CancelToken {
        self.0.lock().map(|t| t.clone()).unwrap_or_default()
    }
}

/// Runs engine work for the app.
pub struct Worker {
    engine: Engine,
    tx: UnboundedSender<AppEvent>,
    search: Slot,
    preview: Slot,
    impact: Slot,
    /// The impact job's token: a newer diagram or quitting stops the one being computed.
    impact_running: Running,
    indexing: Arc<Mutex<HashSet<PathBuf>>>,
    watchers: HashMap<PathBuf, (Arc<AtomicBool>, JoinHandle<()>)>,
    /// Cancel tokens of answers being streamed, by turn (the stop key trips them).
    chats: Arc<Mutex<HashMap<u64, CancelToken>>>,
}

impl Worker {
    /// A worker sending its events to `tx`. Must be used inside a tokio runtime.
    pub fn new(engine: Engine, tx: UnboundedSender<AppEvent>) -> Worker {
        Worker {
            engine,
            tx,
            search: Slot::default(),
            preview: Slot::default(),
            impact: Slot::default(),
            impact_running: Running::default(),
            indexing: Arc::default(),
            watchers: HashMap::new(),
            chats: Arc::default(),
        }
    }

    /// Starts a request; returns at once.
    pub fn dispatch(&mut self, req: Request) {
        match req {
            Request::Search { .. } | Request::Symbols { .. } => self.latest(self.search.clone(), req, None),
            Request::Preview { .. } => self.latest(self.preview.clone(), req, None),
            Request::Impact { .. } => self.latest(self.impact.clone(), req, Some(self.impact_running.clone())),
            Request::Index { repo, rebuild } => self.index(repo, rebuild),
            Request::Watch { repo, on: true } => self.watch(repo),
            Request::Watch { repo, on: false } => {
                if let Some((stop, _)) = self.watchers.get(&repo) {
                    stop.store(true, Ordering::Relaxed);
                }
            }
            Request::LoadRepos { current } => {
                let engine = self.engine.clone();
                self.blocking(move || load_repos(&engine, &current));
            }
            Request::CheckProvider => {
                let engine = self.engine.clone();
                self.blocking(move || EngineEvent::Provider(check_provider(&engine)));
            }
            Request::Chat { turn, repo, query, history, session_id } => {
                self.chat(turn, ChatJob { repo, query, history, session_id })
            }
            Request::LoadDag { repo, session } => {
                let engine = self.engine.clone();
                self.blocking(move || load_dag(&engine, &repo, session.as_deref()));
            }
            Request::LoadDagOlder { repo, session, before } => {
                let engine = self.engine.clone();
                self.blocking(move || load_dag_older(&engine, &repo, &session, before));
            }
            Request::LoadConversation { repo, session } => {
                let engine = self.engine.clone();
                self.blocking(move || load_conversation(&engine, &repo, &session));
            }
            Request::StopChat { turn } => {
                if let Some(cancel) = self.chats.lock().ok().and_then(|c| c.get(&turn).cloned()) {
                    cancel.cancel();
                }
            }
            Request::RemoveRepo { repo } => {
                let engine = self.engine.clone();
                self.blocking(move || remove_repo(&engine, repo));
            }
            Request::CompletePath { repo, typed } => {
                let engine = self.engine.clone();
                self.blocking(move || complete_path(&engine, repo, typed));
            }
            Request::Edit { repo, path, line } => {
                let engine = self.engine.clone();
                self.blocking(move || edit_target(&engine, &repo, &path, line));
            }
            Request::Profile(job) => {
                let engine = self.engine.clone();
                self.blocking(move || EngineEvent::Profile(profile_run(&engine, job)));
            }
        }
    }

    /// Stops watchers and waits (briefly) for them to release their writers.
    pub async fn shutdown(&mut self) {
        self.impact_running.stop();
        for (_, (stop, _)) in self.watchers.iter() {
            stop.store(true, Ordering::Relaxed);
        }
        for (_, (_, handle)) in self.watchers.drain() {
            let _ = tokio::time::timeout(Duration::from_secs(3), handle).await;
        }
    }

    fn blocking(&self, f: impl FnOnce() -> EngineEvent + Send + 'static) {
        let tx = self.tx.clone();
        tokio::task::spawn_blocking(move || {
            if let Some(e) = guarded("a background task", f) {
                let _ = tx.send(AppEvent::Engine(e));
            }
        });
    }

    /// Runs `req` in `slot` (latest wins). With `running`, each job runs under its own
    /// cancellation token, tripped when a newer job is submitted: the stopped job's answer
    /// (`cancelled`, or one that came anyway) is not sent, the newer job's follows.
    fn latest(&self, slot: Slot, req: Request, running: Option<Running>) {
        let start = slot
            .lock()
            .map(|mut s| {
                let start = s.submit(req);
                if let Some(r) = &running {
                    r.submitted(start.is_some());
                }
                start
            })
            .unwrap_or(None);
        let Some(first) = start else { return };
        let engine = self.engine.clone();
        let tx = self.tx.clone();
        tokio::task::spawn_blocking(move || {
            let mut job = Some(first);
            while let Some(j) = job.take() {
                let token = running.as_ref().map(Running::token).unwrap_or_default();
                let fallback = failure_event(&j);
                let event = guarded("a search", || {
                    let _ambient = token.enter();
                    execute(&engine, j)
                })
                .unwrap_or(fallback);
                if !token.is_cancelled() {
                    let _ = tx.send(AppEvent::Engine(event));
                }
                job = slot
                    .lock()
                    .map(|mut s| {
                        let next = s.finish();
                        if let (Some(r), Some(_)) = (&running, &next) {
                            r.fresh();
                        }
                        next
                    })
                    .unwrap_or(None);
            }
        });
    }

    fn index(&mut self, repo: PathBuf, rebuild: bool) {
        let fresh = self.indexing.lock().map(|mut s| s.insert(repo.clone())).unwrap_or(false);
        if !fresh {
            return;
        }
        // This workbench's own watcher holds the repository's writer, so a run beside it would
        // be refused as "another process". Stop it, run, then watch again (one task, kept as the
        // repository's watcher so toggling or quitting still stops it).
        let watcher = self.watchers.remove(&repo).filter(|(_, h)| !h.is_finished());
        let was_watching = watcher.is_some();
        let engine = self.engine.clone();
        let tx = self.tx.clone();
        let running = self.indexing.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let path = repo.clone();
        let handle = tokio::task::spawn_blocking(move || {
            let send = |e: EngineEvent| {
                let _ = tx.send(AppEvent::Engine(e));
            };
            let rewatch = watcher.map(|(old, handle)| {
                old.store(true, Ordering::Relaxed);
                // It lets go at its next check (within a fraction of a second).
                let deadline = std::time::Instant::now() + Duration::from_secs(10);
                while !handle.is_finished() && std::time::Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(20));
                }
            });
            let finished = guarded("an index run", || index_run(&engine, &path, rebuild, &send)).unwrap_or_else(|| {
                EngineEvent::IndexFinished {
                    repo: path.clone(),
                    result: Err("internal error while indexing (details in state/logs/tui.log)".into()),
                }
            });
            if let Ok(mut s) = running.lock() {
                s.remove(&path);
            }
            send(finished);
            if rewatch.is_some() && !flag.load(Ordering::Relaxed) {
                keep_fresh(&engine, &tx, &path, &flag);
            }
        });
        if was_watching {
            self.watchers.insert(repo, (stop, handle));
        }
    }

    fn chat(&self, turn: u64, job: ChatJob) {
        let cancel = CancelToken::new();
        if let Ok(mut c) = self.chats.lock() {
            c.insert(turn, cancel.clone());
        }
        let engine = self.engine.clone();
        let tx = self.tx.clone();
        let chats = self.chats.clone();
        tokio::task::spawn_blocking(move || {
            let send = |e: EngineEvent| {
                let _ = tx.send(AppEvent::Engine(e));
            };
            let done = guarded("a chat answer", || chat_run(&engine, turn, job, cancel, &send)).unwrap_or_else(|| {
                EngineEvent::Chat(ChatUpdate::Failed {
                    turn,
                    session_id: None,
                    message: "internal error (details in state/logs/tui.log)".into(),
                })
            });
            if let Ok(mut c) = chats.lock() {
                c.remove(&turn);
            }
            send(done);
        });
    }

    fn watch(&mut self, repo: PathBuf) {
        if self.watchers.get(&repo).is_some_and(|(_, h)| !h.is_finished()) {
            // Say so: a second `w` on a repository whose status file is gone would otherwise
            // look like a key that does nothing.
            let activity = WatchActivity::Running;
            let _ = self.tx.send(AppEvent::Engine(EngineEvent::Watch { repo, activity }));
            return;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let engine = self.engine.clone();
        let tx = self.tx.clone();
        let flag = stop.clone();
        let path = repo.clone();
        let handle = tokio::task::spawn_blocking(move || keep_fresh(&engine, &tx, &path, &flag));
        self.watchers.insert(repo, (stop, handle));
    }
}

/// Keeps `repo` fresh until `stop` is set (`Engine::keep_fresh`), reporting to the app.
fn keep_fresh(engine: &Engine, tx: &UnboundedSender<AppEvent>, repo: &Path, stop: &AtomicBool) {
    let send = |activity: WatchActivity| {
        let _ = tx.send(AppEvent::Engine(EngineEvent::Watch { repo: repo.to_path_buf(), activity }));
    };
    let report = |e: FreshEvent| {
        let activity = match e {
            FreshEvent::Watch(WatchReport::Ready(_)) => WatchActivity::Ready,
            FreshEvent::Watch(WatchReport::Applied { paths, .. }) => WatchActivity::Applied { paths },
            FreshEvent::Watch(WatchReport::Failed(e)) => WatchActivity::Failed(e),
            FreshEvent::State(FreshState::Deferred { writer_pid }) => WatchActivity::Deferred { writer_pid },
            FreshEvent::State(FreshState::Failed { message }) => WatchActivity::Failed(message),
            FreshEvent::State(FreshState::Stopped) => WatchActivity::Stopped,
            FreshEvent::State(FreshState::CatchingUp | FreshState::Watching) => return,
        };
        send(activity)
    };
    if guarded("a watcher", || engine.keep_fresh(repo, stop, &report)).is_none() {
        send(WatchActivity::Failed("the watcher stopped on an internal error (see state/logs/tui.log)".into()));
    }
}

/// Runs `f`, turning a panic into `None` (logged) so one bad request cannot take the app down.
fn guarded<T>(what: &str, f: impl FnOnce() -> T) -> Option<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(v) => Some(v),
        Err(_) => {
            tracing::error!("{what} panicked; see the message above");
            None
        }
    }
}

/// The event reporting that a latest-wins request failed inside the engine.
fn failure_event(req: &Request) -> EngineEvent {
    let msg = "internal error in the engine (details in the TUI log, state/logs/tui.log)".to_string();
    match req {
        Request::Search { seq, more, .. } => EngineEvent::SearchResults { seq: *seq, more: *more, result: Err(msg) },
        Request::Preview { seq, .. } => EngineEvent::Preview { seq: *seq, result: Err(msg) },
        Request::Symbols { seq, .. } => EngineEvent::SymbolResults { seq: *seq, result: Err(msg), total: 0 },
        Request::Impact { seq, .. } => EngineEvent::Impact { seq: *seq, result: Err(msg) },
        _ => EngineEvent::Repos(Err(msg)),
    }
}

/// Runs any request to completion on the calling thread and returns every event it produced,
/// in order (scenario tests drive the app with the real engine this way). Watchers are the one
/// exception: they run until stopped, so they only run through [`Worker`].
pub fn run_sync(engine: &Engine, req: Request) -> Vec<EngineEvent> {
    let events = Mutex::new(Vec::new());
    let send = |e: EngineEvent| {
        if let Ok(mut v) = events.lock() {
            v.push(e);
        }
    };
    match req {
        Request::LoadRepos { current } => send(load_repos(engine, &current)),
        Request::RemoveRepo { repo } => send(remove_repo(engine, repo)),
        Request::CompletePath { repo, typed } => send(complete_path(engine, repo, typed)),
        Request::Edit { repo, path, line } => send(edit_target(engine, &repo, &path, line)),
        Request::CheckProvider => send(EngineEvent::Provider(check_provider(engine))),
        Request::Index { repo, rebuild } => send(index_run(engine, &repo, rebuild, &send)),
        Request::Chat { turn, repo, query, history, session_id } => {
            let job = ChatJob { repo, query, history, session_id };
            send(chat_run(engine, turn, job, CancelToken::new(), &send))
        }
        Request::LoadDag { repo, session } => send(load_dag(engine, &repo, session.as_deref())),
        Request::LoadDagOlder { repo, session, before } => send(load_dag_older(engine, &repo, &session, before)),
        Request::LoadConversation { repo, session } => send(load_conversation(engine, &repo, &session)),
        Request::Watch { repo, .. } => send(EngineEvent::Watch {
            repo,
            activity: WatchActivity::Failed("watchers run only in the event loop".into()),
        }),
        Request::StopChat { .. } => {}
        Request::Profile(job) => send(EngineEvent::Profile(profile_run(engine, job))),
        latest @ (Request::Search { .. }
        | Request::Symbols { .. }
        | Request::Preview { .. }
        | Request::Impact { .. }) => send(execute(engine, latest)),
    }
    events.into_inner().unwrap_or_default()
}

/// One profile-memory call.
fn profile_run(engine: &Engine, job: ProfileJob) -> ProfileUpdate {
    let err = |e: crate::error::Error| e.to_string();
    match job {
        ProfileJob::List { agent } => {
            let result = engine.profile_list_whole(agent.clone()).map_err(err);
            ProfileUpdate::Listed { agent, result }
        }
        ProfileJob::Add(req) => ProfileUpdate::Saved(engine.profile_add(&req).map_err(err)),
        ProfileJob::Edit(req) => ProfileUpdate::Saved(engine.profile_edit(&req).map_err(err)),
        ProfileJob::Remove(req) => ProfileUpdate::Removed(engine.profile_remove(&req).map_err(err)),
        ProfileJob::Search(req) => ProfileUpdate::Searched(engine.profile_search(&req).map_err(err)),
        ProfileJob::Export => ProfileUpdate::Exported(engine.profile_export_to(None).map_err(err)),
        ProfileJob::Import(path) => ProfileUpdate::Imported(engine.profile_import(&path).map_err(err)),
    }
}

fn load_repos(engine: &Engine, current: &Path) -> EngineEvent {
    EngineEvent::Repos(engine.repo_overviews(Some(current)).map_err(|e| format!("{e:#}")))
}

/// The file on disk the editor opens for an index key, or why not.
fn edit_target(engine: &Engine, repo: &Path, path: &str, line: u32) -> EngineEvent {
    EngineEvent::EditTarget { result: engine.editable_path(repo, path).map_err(|e| format!("{e:#}")), line }
}

/// Folders completing `typed`: inside a repository, those its index holds files under (so
/// only what the filter can match, and nothing outside the repository); else on disk.
fn complete_path(engine: &Engine, repo: Option<PathBuf>, typed: String) -> EngineEvent {
    let result = match &repo {
        Some(repo) => engine.indexed_folders(repo, &typed).map_err(|e| format!("{e:#}")),
        None => folders_on_disk(&typed),
    };
    EngineEvent::PathCompletions { typed, result }
}

/// The most folders a completion lists.
const MAX_COMPLETIONS: usize = 200;

/// Folders on disk whose path starts with `typed` (`~/` is the home folder), as typed: the
/// part up to the last `/` is kept, the rest completed from that folder's entries. Hidden
/// folders only when the typed name starts with a dot.
fn folders_on_disk(typed: &str) -> Result<Vec<String>, String> {
    let (dir, partial) = match typed.rfind('/') {
        Some(i) => (&typed[..=i], &typed[i + 1..]),
        None => ("", typed),
    };
    let read_from = if dir.is_empty() { PathBuf::from(".") } else { crate::engine::protocol::expand_tilde(dir) };
    let entries = std::fs::read_dir(&read_from).map_err(|e| format!("cannot list {}: {e}", read_from.display()))?;
    let mut out: Vec<String> = entries
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| name.starts_with(partial) && (partial.starts_with('.') || !name.starts_with('.')))
        .map(|name| format!("{dir}{name}/"))
        .collect();
    out.sort();
    out.truncate(MAX_COMPLETIONS);
    Ok(out)
}

fn remove_repo(engine: &Engine, repo: PathBuf) -> EngineEvent {
    let result = engine.remove_repo(&repo, false, false).map(|_| ()).map_err(|e| format!("{e:#}"));
    EngineEvent::RepoRemoved { repo, result }
}

/// Indexes with progress events; returns the final event.
fn index_run(engine: &Engine, repo: &Path, rebuild: bool, send: &(dyn Fn(EngineEvent) + Sync)) -> EngineEvent {
    send(EngineEvent::IndexStarted { repo: repo.to_path_buf() });
    let sink = |p: &IndexProgress| send(EngineEvent::IndexProgress { repo: repo.to_path_buf(), progress: p.clone() });
    let result =
        engine.index(repo, &IndexOptions { rebuild, ..Default::default() }, &sink).map_err(|e| format!("{e:#}"));
    EngineEvent::IndexFinished { repo: repo.to_path_buf(), result }
}

/// A chat turn to run.
struct ChatJob {
    repo: PathBuf,
    query: String,
    history: Vec<ChatMessage>,
    session_id: Option<String>,
}

/// Runs one waterfall turn, streaming steps and answer tokens as events until it ends or
/// `cancel` is tripped (the engine sees it even before the first token); sends the trace and
/// the provider state the turn met, and returns the final event.
fn chat_run(engine: &Engine, turn: u64, job: ChatJob, cancel: CancelToken, send: &dyn Fn(EngineEvent)) -> EngineEvent {
    let req = ChatTurnRequest {
        query: job.query.clone(),
        history: job.history,
        session_id: job.session_id,
        cancel,
        ..Default::default()
    };
    let mut on_event = |e: ChatTurnEvent| {
        let update = match e {
            ChatTurnEvent::Token { text } => ChatUpdate::Token { turn, text },
            ChatTurnEvent::Step(step) => ChatUpdate::Progress { turn, text: views::step_text(&step) },
            ChatTurnEvent::Notice { message } => ChatUpdate::Notice { turn, text: message },
            ChatTurnEvent::Context { sources, budget } => ChatUpdate::Progress {
                turn,
                text: format!(
                    "context: {}, {}; asking the model",
                    crate::tui::widgets::count(sources.len() as u64, "source", "sources"),
                    crate::tui::widgets::count(budget.prompt_tokens as u64, "prompt token", "prompt tokens")
                ),
            },
        };
        send(EngineEvent::Chat(update));
        ControlFlow::Continue(())
    };
    match engine.chat(&job.repo, &req, &mut on_event) {
        Ok(resp) => {
            send(EngineEvent::Trace(views::trace_view(turn, &job.query, &resp.trace)));
            if let Some(p) = provider_seen(&resp) {
                send(EngineEvent::Provider(p));
            }
            EngineEvent::Chat(chat_done(turn, &resp))
        }
        Err(e) => EngineEvent::Chat(ChatUpdate::Failed { turn, session_id: None, message: format!("{e:#}") }),
    }
}

/// The final chat event for a response.
fn chat_done(turn: u64, resp: &ChatTurnResponse) -> ChatUpdate {
    let llm = &resp.llm;
    match llm.status {
        AnswerStatus::Failed => ChatUpdate::Failed {
            turn,
            session_id: Some(resp.session_id.clone()),
            message: llm.message.clone().unwrap_or_else(|| "the model failed part-way".into()),
        },
        status => ChatUpdate::Done {
            turn,
            session_id: Some(resp.session_id.clone()),
            citations: views::citations(&resp.sources),
            stopped: status == AnswerStatus::Stopped,
            unavailable: (status == AnswerStatus::Unavailable)
                .then(|| llm.message.clone().unwrap_or_else(|| "no model could answer".into())),
        },
    }
}

/// What a turn learnt about the provider: ready when the model answered. (When no model could
/// answer, the app asks for a provider check, whose reason is worded for the status bar.)
fn provider_seen(resp: &ChatTurnResponse) -> Option<ProviderStatus> {
    let llm = &resp.llm;
    matches!(llm.status, AnswerStatus::Answered | AnswerStatus::Stopped).then(|| ProviderStatus {
        provider: llm.provider.clone(),
        model: llm.model.clone(),
        state: ProviderState::Ready,
    })
}

/// A logged session's questions and answers, as many as the chat's history holds.
fn load_conversation(engine: &Engine, repo: &Path, session: &str) -> EngineEvent {
    EngineEvent::Conversation(
        engine.dag_conversation(repo, session).map(|c| views::conversation(&c)).map_err(|e| format!("{e:#}")),
    )
}

/// The DAG sessions of a repository with the nodes of `session` (the newest when `None`).
fn load_dag(engine: &Engine, repo: &Path, session: Option<&str>) -> EngineEvent {
    let view = engine.dag_sessions(repo).and_then(|list| {
        let id = session.map(str::to_string).or_else(|| list.sessions.first().map(|s| s.id.clone()));
        let shown = match id {
            Some(id) => Some(engine.dag_session(repo, &id)?),
            None => None,
        };
        Ok(views::dag_view(&list, shown.as_ref()))
    });
    EngineEvent::Dag(view.map_err(|e| format!("{e:#}")))
}

/// The nodes of `session` before `before` (the engine's page size), for the DAG pane.
fn load_dag_older(engine: &Engine, repo: &Path, session: &str, before: i64) -> EngineEvent {
    let page = engine.dag_session_page(repo, session, None, Some(before)).map(|s| views::dag_page(&s, before));
    EngineEvent::DagOlder(page.map_err(|e| format!("{e:#}")))
}

/// The impact graph's answer as the diagram's view-model: its nodes (packages shown by name), its
/// edges, and the queried file's unresolved imports as nodes of their own, so the risk overlay
/// can point at them.
pub fn impact_view(resp: &ImpactResponse) -> GraphView {
    let mut nodes: Vec<GraphNode> = resp
        .nodes
        .iter()
        .map(|n| GraphNode {
            id: if n.external { n.id.strip_prefix("ext:").unwrap_or(&n.id).to_string() } else { n.id.clone() },
            kind: if n.external { NodeKind::External } else { NodeKind::File },
            unresolved_imports: n.unresolved_imports as u32,
            in_cycle: n.in_cycle,
            rules: Vec::new(),
        })
        .collect();
    let index: std::collections::HashMap<&str, usize> =
        resp.nodes.iter().enumerate().map(|(i, n)| (n.id.as_str(), i)).collect();
    let mut edges: Vec<GraphEdge> = resp
        .edges
        .iter()
        .filter_map(|e| {
            let (from, to) = (*index.get(e.source.as_str())?, *index.get(e.target.as_str())?);
            Some(GraphEdge { from, to, confidence: e.confidence })
        })
        .collect();
    let center = index.get(resp.file.as_str()).copied().unwrap_or(0);
    for d in &resp.diagnostics {
        nodes.push(GraphNode {
            id: d.spec.clone(),
            kind: NodeKind::Unresolved,
            unresolved_imports: 0,
            in_cycle: false,
            rules: Vec::new(),
        });
        edges.push(GraphEdge { from: center, to: nodes.len() - 1, confidence: 0.0 });
    }
    // A side the engine stopped at its node limit holds only the nearest files: say so.
    let limit = crate::engine::protocol::MAX_NODES_PER_SIDE;
    let cut = [resp.truncated && resp.inbound.len() >= limit, resp.truncated && resp.outbound.len() >= limit];
    GraphView { nodes, edges, center, depth: resp.depth, cut, rules_error: None }
}

/// Puts the constraint rules the engine found broken on the nodes they concern.
pub fn attach_rule_marks(view: &mut GraphView, marks: &[RuleMark]) {
    for m in marks {
        if let Some(i) = view.find(&m.file) {
            view.nodes[i].rules.push(RuleFlag {
                rule: m.rule.clone(),
                danger: m.danger,
                reason: format!("{} ({}: \"{}\")", m.message, m.agent_id, m.preference),
            });
        }
    }
}

/// Whether the provider answers and has the configured chat model.
fn check_provider(engine: &Engine) -> ProviderStatus {
    let cfg = &engine.config().llm;
    let state = match engine.models() {
        Ok(models) if models.iter().any(|m| model_matches(&cfg.default_model, &m.name)) => ProviderState::Ready,
        // The engine's advice, true of the name: `ollama pull` only for a model some registry
        // holds (a Modelfile model is created, not pulled).
        Ok(models) => ProviderState::Unavailable(format!(
            "{} is not installed on {}; {}",
            cfg.default_model,
            cfg.base_url,
            missing_model_advice(
                &cfg.provider,
                &cfg.default_model,
                Some(&models.iter().map(|m| m.name.clone()).collect::<Vec<_>>())
            )
        )),
        Err(e) => ProviderState::Unavailable(format!("{e:#}")),
    };
    ProviderStatus { provider: cfg.provider.clone(), model: cfg.default_model.clone(), state }
}

/// Runs one latest-wins request.
fn execute(engine: &Engine, req: Request) -> EngineEvent {
    match req {
        Request::Search { seq, repo, req, more } => {
            let result = engine.search(&repo, &req).map_err(|e| format!("{e:#}"));
            EngineEvent::SearchResults { seq, more, result }
        }
        Request::Preview { seq, repo, path, line, lang, hit, highlights } => {
            EngineEvent::Preview { seq, result: preview(engine, &repo, &path, line, &lang, hit, &highlights) }
        }
        Request::Symbols { seq, repo, query, path_prefix, lang } => {
            let req = SymbolsRequest {
                query: Some(query),
                path_prefix,
                lang,
                limit: Some(SYMBOL_LIMIT),
                ..Default::default()
            };
            let mut total = 0;
            let result = engine
                .symbols(&repo, &req)
                .map(|resp| {
                    if resp.truncated {
                        total = resp.total.max(resp.results.len());
                    }
                    resp.results
                        .into_iter()
                        .map(|h| SymbolHit {
                            name: h.name,
                            kind: h.kind.name().to_string(),
                            path: h.path,
                            line_start: h.line_start,
                            line_end: h.line_end,
                            signature: h.signature,
                        })
                        .collect()
                })
                .map_err(|e| format!("{e:#}"));
            EngineEvent::SymbolResults { seq, result, total }
        }
        Request::Impact { seq, repo, file, depth } => {
            let req = ImpactRequest { file, depth: Some(depth), direction: None };
            let result = engine
                .impact(&repo, &req)
                .map(|resp| {
                    let mut view = impact_view(&resp);
                    let files: Vec<String> = resp.nodes.iter().filter(|n| !n.external).map(|n| n.id.clone()).collect();
                    // The overlay is a bonus: a profile that cannot be read leaves the graph as it is.
                    match engine.rule_marks(&repo, engine.resolve_agent(None).as_deref(), &files) {
                        Ok(marks) => attach_rule_marks(&mut view, &marks),
                        // A newer diagram replaced this one: its answer is not shown.
                        Err(crate::error::Error::Cancelled) => {}
                        Err(e) => {
                            tracing::warn!(error = %e, "constraint rules unreadable; the risk overlay shows cycles only");
                            view.rules_error = Some(format!("{e:#}"));
                        }
                    }
                    view
                })
                .map_err(|e| format!("{e:#}"));
            EngineEvent::Impact { seq, result }
        }
        other => EngineEvent::Repos(Err(format!("unexpected request in a latest-wins slot: {other:?}"))),
    }
}

/// Bytes of one line a preview shows: a minified bundle's one 8 MB line would otherwise be
/// highlighted and laid out whole.
const PREVIEW_LINE_BYTES: usize = 4096;

/// Line `n` as the preview shows it, with its byte offset in the file's line: the whole line, or
/// for a longer one a window starting a little before its first highlight.
fn clip_line<'a>(text: &'a str, n: u32, highlights: &[Highlight]) -> (usize, &'a str) {
    if text.len() <= PREVIEW_LINE_BYTES {
        return (0, text);
    }
    let at = highlights.iter().filter(|h| h.line == n).map(|h| h.start + h.shown_from).min().unwrap_or(0);
    let mut from = at.saturating_sub(256).min(text.len());
    while !text.is_char_boundary(from) {
        from -= 1;
    }
    let mut end = (from + PREVIEW_LINE_BYTES).min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (from, &text[from..end])
}

/// Reads a window of a file around `line` and highlights it.
pub fn preview(
    engine: &Engine,
    repo: &Path,
    path: &str,
    line: u32,
    lang: &str,
    hit: (u32, u32),
    highlights: &[Highlight],
) -> Result<PreviewDoc, String> {
    let line = line.max(1);
    let start = if line <= HIGHLIGHT_FROM_START { 1 } else { line - PREVIEW_BEFORE };
    let file = match engine.get_file(repo, &FileRequest::new(path, Some((start, line + PREVIEW_AFTER)))) {
        // A stale hit past the end of a file that shrank since it was indexed: show the file.
        Err(crate::error::Error::BadRequest(m)) if m.contains("past its end") => {
            engine.get_file(repo, &FileRequest::new(path, None))
        }
        r => r,
    }
    .map_err(|e| format!("{e:#}"))?;
    let raw: Vec<&str> = file.text.split('\n').collect();
    let raw: Vec<&str> = if file.text.is_empty() { Vec::new() } else { raw };
    let clipped: Vec<(usize, &str)> =
        raw.iter().enumerate().map(|(i, l)| clip_line(l, file.line_start + i as u32, highlights)).collect();
    let raw: Vec<&str> = clipped.iter().map(|(_, l)| *l).collect();
    let lines = highlight(path, lang, &raw);
    let mut matches = Vec::new();
    for h in highlights {
        let Some(i) = h.line.checked_sub(file.line_start).map(|i| i as usize) else { continue };
        let (Some(text), Some((from, _))) = (raw.get(i), clipped.get(i)) else { continue };
        // A long line's snippet is a window of it, and so is its preview: a highlight counts
        // from the snippet's window, and is placed in the preview's.
        let (start, end) =
            match (h.start + h.shown_from).checked_sub(*from).zip((h.end + h.shown_from).checked_sub(*from)) {
                Some(r) => r,
                None => continue,
            };
        let h = Highlight { start, end, ..h.clone() };
        if h.end > text.len() || h.start > h.end || !text.is_char_boundary(h.start) || !text.is_char_boundary(h.end) {
            continue;
        }
        let a = sanitize(&text[..h.start]).chars().count();
        let b = a + sanitize(&text[h.start..h.end]).chars().count();
        matches.push((h.line, a, b));
    }
    Ok(PreviewDoc {
        path: file.path,
        first_line: file.line_start,
        total_lines: file.total_lines,
        lines,
        focus_line: line.min(file.total_lines.max(1)),
        hit,
        matches,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_submitted_while_one_runs_stops_that_one_and_starts_with_its_own_token() {
        let running = Running::default();
        running.submitted(true);
        let first = running.token();
        running.submitted(false);
        assert!(first.is_cancelled(), "the running job is replaced: stopped");
        running.fresh();
        let next = running.token();
        assert!(!next.is_cancelled(), "the job that follows runs under a fresh token");
        running.stop();
        assert!(next.is_cancelled(), "quitting stops the job that runs");
    }
}
