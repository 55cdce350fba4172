//! What every request handler shares: the engine, the mounted repositories, the
//! process mode and its default repo, the token check and the shutdown signal,
//! and how a request's repository selector becomes a mounted repo.

use super::auth::Auth;
use super::error::ApiError;
use super::mounts::{Mount, Mounts};
use super::repo_select::{parse_repo_selector, Selector};
use super::work::WorkGate;
use crate::engine::protocol::RepoRef;
use crate::engine::Engine;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// How many chats may generate at once: `max(2, cores)`. Each holds a blocking thread for its
/// whole generation (seconds to minutes, mostly waiting on the model), so the server's
/// blocking pool is sized as this plus the threads searches need (`run.rs`): chats beyond it
/// wait for a slot (then get `503 busy`) instead of queueing every search behind them.
pub fn chat_slots() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).max(2)
}

/// How many chats may generate at once beside `work_slots` ([`WorkGate::slots`]): a chat holds
/// a work slot too (one bound for all engine work), so chats are capped at half the work
/// slots, rounded up, and at [`chat_slots`]: the other half stays for searches and lookups
/// however many chats wait (with one work slot, a chat takes it).
pub fn chat_slots_within(work_slots: usize) -> usize {
    chat_slots().min(work_slots - work_slots / 2).max(1)
}

/// Which process this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// `docdex serve`: exactly one repository.
    Serve,
    /// `docdex daemon`: many repositories, mounted on initialize or first use.
    Daemon,
    /// `docdex mcp`: MCP over stdio, one repository when `--repo` is given, else any indexed one.
    Stdio,
}

/// Everything a request handler needs; cheap to clone.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<StateInner>,
}

struct StateInner {
    engine: Engine,
    mounts: Mounts,
    mode: Mode,
    default_repo: Option<RepoRef>,
    auth: Auth,
    started: Instant,
    shutdown: CancellationToken,
    body_limit: usize,
    exposed: bool,
    default_agent: std::sync::OnceLock<String>,
    /// The repository a stdio session binds to when its `initialize` names none.
    session_root: std::sync::OnceLock<PathBuf>,
    chat_gate: Arc<tokio::sync::Semaphore>,
    chat_slots: usize,
    work: WorkGate,
    mcp_sessions: Arc<std::sync::atomic::AtomicUsize>,
}

impl AppState {
    /// A state over `engine`; `default_repo` is mounted right away.
    pub fn new(
        engine: Engine,
        mode: Mode,
        default_repo: Option<&Path>,
        auth: Auth,
        watch: bool,
        body_limit: usize,
        exposed: bool,
    ) -> crate::Result<AppState> {
        let mounts = Mounts::new(engine.clone(), watch, engine.config().server.max_repos);
        let default_repo = match default_repo {
            Some(p) => Some(mounts.mount(p)?.repo.clone()),
            None => None,
        };
        let shutdown = CancellationToken::new();
        let server = &engine.config().server;
        let work_wait = std::time::Duration::from_millis(server.work_wait_ms);
        let deadline = std::time::Duration::from_secs(server.request_timeout_secs);
        let work = WorkGate::new(server.max_concurrent_work, work_wait, deadline, shutdown.clone());
        let chat_slots = chat_slots_within(work.slots());
        Ok(AppState {
            inner: Arc::new(StateInner {
                engine,
                mounts,
                mode,
                default_repo,
                auth,
                started: Instant::now(),
                shutdown,
                body_limit,
                exposed,
                default_agent: std::sync::OnceLock::new(),
                session_root: std::sync::OnceLock::new(),
                chat_gate: Arc::new(tokio::sync::Semaphore::new(chat_slots)),
                chat_slots,
                work,
                mcp_sessions: Arc::default(),
            }),
        })
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// Mounted repositories.
    pub fn mounts(&self) -> &Mounts {
        &self.inner.mounts
    }

    /// serve, daemon or stdio.
    pub fn mode(&self) -> Mode {
        self.inner.mode
    }

    /// The repo a single-repo process serves.
    pub fn default_repo(&self) -> Option<&RepoRef> {
        self.inner.default_repo.as_ref()
    }

    /// The token check.
    pub fn auth(&self) -> &Auth {
        &self.inner.auth
    }

    /// Cancelled when the server starts shutting down (ends SSE streams and MCP sessions).
    pub fn shutdown_token(&self) -> &CancellationToken {
        &self.inner.shutdown
    }

    /// The chat concurrency gate: a chat holds one of its [`chat_slots_within`] permits, and a
    /// work slot, for as long as it holds a blocking thread, so generation can never take the
    /// threads (or the work slots) retrieval needs.
    pub fn chat_gate(&self) -> &Arc<tokio::sync::Semaphore> {
        &self.inner.chat_gate
    }

    /// How many chats may generate at once (the chat gate's size).
    pub fn chat_slots(&self) -> usize {
        self.inner.chat_slots
    }

    /// The bound on engine calls running at once ([`WorkGate`]): every endpoint and tool but
    /// health and status runs its engine call through it.
    pub fn work(&self) -> &WorkGate {
        &self.inner.work
    }

    /// Live MCP streamable-HTTP sessions (kept up to date by the session manager).
    pub fn mcp_sessions(&self) -> &Arc<std::sync::atomic::AtomicUsize> {
        &self.inner.mcp_sessions
    }

    /// Milliseconds since start.
    pub fn uptime_ms(&self) -> u64 {
        self.inner.started.elapsed().as_millis() as u64
    }

    /// The request body limit in bytes.
    pub fn body_limit(&self) -> usize {
        self.inner.body_limit
    }

    /// Sets the agent requests get when they name none (`--agent-id`); once, at start.
    pub fn set_default_agent(&self, agent: &str) {
        let agent = agent.trim();
        if !agent.is_empty() {
            let _ = self.inner.default_agent.set(agent.to_string());
        }
    }

    /// Sets the repository a session binds to when its `initialize` names none (`docdex mcp`
    /// started in a project without `--repo`); once, at start.
    pub fn set_session_root(&self, root: PathBuf) {
        let _ = self.inner.session_root.set(root);
    }

    /// The repository a session binds to when its `initialize` names none.
    pub fn session_root(&self) -> Option<&Path> {
        self.inner.session_root.get().map(PathBuf::as_path)
    }

    /// The agent a request means: the one it names, else the server's `--agent-id`, else the
    /// engine's `[memory.profile] default_agent`.
    pub fn agent(&self, named: Option<&str>) -> Option<String> {
        let named = named.map(str::trim).filter(|a| !a.is_empty());
        match named.map(str::to_string).or_else(|| self.inner.default_agent.get().cloned()) {
            Some(a) => Some(a),
            None => self.engine().resolve_agent(None),
        }
    }

    /// True when bound beyond loopback (`--expose`).
    pub fn exposed(&self) -> bool {
        self.inner.exposed
    }

    /// Resolves the repository a request names (or the default) to a mounted repo.
    ///
    /// `selector` is an absolute path, a `file://` URI or a repo id. A single-repo process
    /// refuses any other repo; the daemon mounts indexed repos on first use and refuses
    /// unindexed ones with the call that would index them.
    pub fn repo(&self, selector: Option<&str>) -> Result<RepoRef, ApiError> {
        self.resolve_repo(selector, true)
    }

    /// [`Self::repo`] for a `GET`, which never mounts: the daemon reads an indexed repository's
    /// index as it stands and starts no keeper (no catch-up run, no watcher, no mount let go
    /// for it). Any page the user opens can make a browser send a `GET` (an `<img src>`, a
    /// link), and an old browser sends no `Origin` or `Sec-Fetch-Site` to refuse it by; a
    /// `GET ...?repo=` on the daemon used to start indexing that repository.
    pub fn repo_to_read(&self, selector: Option<&str>) -> Result<RepoRef, ApiError> {
        self.resolve_repo(selector, false)
    }

    fn resolve_repo(&self, selector: Option<&str>, may_mount: bool) -> Result<RepoRef, ApiError> {
        let selector = selector.map(str::trim).filter(|s| !s.is_empty());
        let repo = match (selector, self.default_repo()) {
            (None, Some(default)) => return Ok(default.clone()),
            (None, None) => {
                return Err(ApiError::bad_request(
                    "name the repository: header `x-docdex-repo`, body `repo` (or `docdex.repo`), or query `?repo=` with an absolute path, a file:// URI or a repo id",
                ))
            }
            (Some(s), _) => self.lookup(s)?,
        };
        if let Some(default) = self.default_repo() {
            if default.fingerprint != repo.fingerprint {
                // `/` or a home is refused as such, never offered as a `serve --repo` to start.
                self.engine().check_servable(&repo)?;
                if repo.root.starts_with(&default.root) {
                    let what = "the repository this server serves";
                    return Err(ApiError::unknown_repo(folder_of(
                        &repo.root,
                        &default.root,
                        what,
                        " (or leave it out)",
                    )));
                }
                return Err(ApiError::unknown_repo(format!(
                    "this server serves only {}; {} is another repository (start `docdex daemon` to serve many, or `docdex serve --repo {}`)",
                    default.root.display(),
                    repo.root.display(),
                    crate::error::shell_path(&repo.root)
                )));
            }
            return Ok(repo);
        }
        if self.mounts().get(&repo.fingerprint).is_some() {
            return Ok(repo);
        }
        self.engine().check_servable(&repo)?;
        if self.engine().has_index(&repo) {
            if may_mount {
                self.mounts().mount(&repo.root)?;
            }
            return Ok(repo);
        }
        if let Some(enclosing) = self.enclosing(&repo.root) {
            return Err(enclosing);
        }
        Err(ApiError::new(
            axum::http::StatusCode::CONFLICT,
            "not_indexed",
            format!(
                "repository {root} is not indexed; POST /v1/initialize {{\"rootUri\": \"file://{root}\"}} indexes it in the background (or run `docdex index --repo {shell}`)",
                root = repo.root.display(),
                shell = crate::error::shell_path(&repo.root)
            ),
        ))
    }

    /// `not_indexed` for a folder of another repository (the nearest git root above it, or an
    /// indexed folder above it), naming that one: the HTTP advice was to initialize the folder,
    /// MCP's to call `docdex_index` on it, which built a second index nested in the first
    /// (the CLI said so: `nested_repo_hint`). `None` when `root` lies in no repository.
    fn enclosing(&self, root: &Path) -> Option<ApiError> {
        let registered: Vec<PathBuf> = self.engine().list_repos().ok()?.into_iter().map(|r| r.path).collect();
        let outer = crate::engine::protocol::enclosing_root(root, &registered)?;
        let outer_ref = self.engine().resolve_repo(&outer).ok()?;
        let mut message = format!(
            "repository {} is not indexed: {} (indexing the folder itself would build a second index nested in the repository's)",
            root.display(),
            folder_of(root, &outer, "the repository", "")
        );
        if !self.engine().has_index(&outer_ref) {
            message.push_str(&format!("; {} is not indexed yet either: index it first", outer.display()));
        }
        Some(ApiError::new(axum::http::StatusCode::CONFLICT, "not_indexed", message))
    }

    /// Mounts the repo at `selector` (initialize): the daemon mounts any existing directory;
    /// a single-repo process only its own.
    pub fn initialize(&self, selector: &str) -> Result<Arc<Mount>, ApiError> {
        let repo = self.lookup(selector)?;
        // A folder of a repository docdex indexes (an agent host's working directory): that
        // repository, as `docdex mcp` started in the folder binds it. Mounted as named, its
        // index could never be built (the folder is the other's), so it said `indexing` for
        // ever, took a `max_repos` place and sent clients to retry.
        let repo = match self.engine().covering_repo(&repo)? {
            Some(outer) => {
                tracing::info!(folder = %repo.root.display(), repo = %outer.display(), "initialize of a folder of an indexed repository mounts that repository");
                self.engine().resolve_repo(&outer)?
            }
            None => repo,
        };
        // A root docdex never serves (`/etc`) is refused as such on `serve` too, before "this
        // server serves only ...": `unknown_repo` there, `forbidden_repo` on the daemon.
        self.engine().check_servable(&repo)?;
        if let Some(default) = self.default_repo() {
            if default.fingerprint != repo.fingerprint {
                return Err(ApiError::unknown_repo(format!(
                    "this server serves only {}; start `docdex daemon` to mount other repositories",
                    default.root.display()
                )));
            }
        }
        Ok(self.mounts().mount(&repo.root)?)
    }

    /// An engine error about `repo` as the client should read it: "not indexed" while this
    /// process is building the first index says so (and when to retry) instead of telling
    /// the client to run an index.
    pub fn explain(&self, repo: &RepoRef, e: crate::Error) -> ApiError {
        if let crate::Error::NotIndexed { .. } = e {
            if let Some(m) = self.mounts().get(&repo.fingerprint) {
                let info = m.info();
                if info.status == "indexing" {
                    let progress = info
                        .progress
                        .map(|p| format!(" ({}: {} of {} files)", p.phase, p.files_done, p.files_total))
                        .unwrap_or_default();
                    // A docdex process on another home (an MCP client that passes no
                    // DOCDEX_HOME, for one) may already keep this repo indexed: say which home
                    // this one uses, so two homes are seen instead of silently indexing twice.
                    return ApiError::new(
                        axum::http::StatusCode::CONFLICT,
                        "not_indexed",
                        format!(
                            "repository {} is being indexed for the first time in docdex home {} by this process{progress}; retry when GET /v1/status (or docdex_status) says ready. If a `docdex serve` or `daemon` already indexes this repository, it uses another home: start this process with the same DOCDEX_HOME, or `--home DIR` (MCP clients pass few environment variables)",
                            repo.root.display(),
                            self.engine().paths().home.display()
                        ),
                    );
                }
            }
        }
        e.into()
    }

    pub(crate) fn lookup(&self, selector: &str) -> Result<RepoRef, ApiError> {
        match parse_repo_selector(selector)? {
            Selector::Id(id) => {
                if let Some(m) = self.mounts().get(&id) {
                    return Ok(m.repo.clone());
                }
                let record = self.engine().list_repos()?.into_iter().find(|r| r.fingerprint == id);
                match record {
                    Some(r) => Ok(self.engine().resolve_repo(&r.path)?),
                    None => Err(ApiError::unknown_repo(format!(
                        "no repository with id {id} is mounted or registered; `docdex repo list` shows the known ones"
                    ))),
                }
            }
            Selector::Path(p) => Ok(self.engine().resolve_repo(&p)?),
        }
    }
}

/// `folder` lies inside `outer` (`what`: "the repository this server serves"; `or` another
/// way to name it): the request most likely means `outer`, and a path prefix narrows a search
/// to the folder.
fn folder_of(folder: &Path, outer: &Path, what: &str, or: &str) -> String {
    let rel = folder.strip_prefix(outer).map(|r| r.to_string_lossy().into_owned()).unwrap_or_default();
    format!(
        "{} is a folder of {what}, {}: name {} as the repository{or}; a path prefix `{rel}/` narrows a search to the folder",
        folder.display(),
        outer.display(),
        outer.display()
    )
}
