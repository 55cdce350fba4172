//! Starting and stopping a server process: binding rules (loopback unless
//! `--expose`, which needs a token), the daemon lock, the runtime, and graceful
//! shutdown on SIGINT/SIGTERM: stop accepting, let in-flight requests finish,
//! close MCP streams, stop the watchers (releasing the index writers), release
//! the daemon lock.

use super::auth::Auth;
use super::lockfile::DaemonLock;
use super::mcp;
use super::router;
use super::shutdown::shutdown_signal;
use super::state::{AppState, Mode};
use crate::engine::protocol::{CheckOptions, CheckStatus};
use crate::engine::Engine;
use anyhow::{bail, Context};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Default request body limit (search and initialize bodies are tiny; chat bodies are not).
pub const DEFAULT_BODY_LIMIT: usize = 2 * 1024 * 1024;

/// The range `--max-body-bytes` takes: below 4 KiB every request with a body is `413` (0 and 1
/// were accepted), above 1 GiB one request can hold that much memory while it is read.
pub const BODY_LIMIT_RANGE: std::ops::RangeInclusive<usize> = 4 * 1024..=1024 * 1024 * 1024;

/// How long in-flight requests get to finish after a shutdown signal.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Everything `serve`, `daemon` and `mcp` take from the command line.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// serve, daemon or stdio MCP.
    pub mode: Mode,
    /// The repository (required for serve; optional default for stdio; unused by the daemon).
    pub repo: Option<PathBuf>,
    /// Overrides `[server] http_bind_addr`.
    pub bind: Option<String>,
    /// Overrides only the port of the configured address (`--port`), keeping its host.
    pub port: Option<u16>,
    /// Allow a non-loopback bind (requires a token).
    pub expose: bool,
    /// Overrides the configured token.
    pub auth_token: Option<String>,
    /// Run watchers (the default); false only reads.
    pub watch: bool,
    /// Serve MCP beside HTTP (`[server] enable_mcp` when `None`).
    pub enable_mcp: Option<bool>,
    /// Request body limit in bytes.
    pub max_body_bytes: usize,
    /// Run the preflight check before serving and refuse to start when it fails.
    pub preflight_check: bool,
    /// The agent chat, profile and hook requests get when they name none (`--agent-id`).
    pub agent_id: Option<String>,
    /// Stdio without `repo`: the repository a session binds to when `initialize` names none
    /// (the one holding the working directory); other repositories stay reachable.
    pub session_root: Option<PathBuf>,
}

impl ServerOptions {
    /// Defaults for `mode`.
    pub fn new(mode: Mode) -> ServerOptions {
        ServerOptions {
            mode,
            repo: None,
            bind: None,
            port: None,
            expose: false,
            auth_token: None,
            watch: true,
            enable_mcp: None,
            max_body_bytes: DEFAULT_BODY_LIMIT,
            preflight_check: false,
            agent_id: None,
            session_root: None,
        }
    }
}

/// Runs the process until it is told to stop.
pub fn run(engine: Engine, opts: ServerOptions) -> anyhow::Result<()> {
    if !BODY_LIMIT_RANGE.contains(&opts.max_body_bytes) {
        bail!(
            "--max-body-bytes {} is out of range: it takes {} (4 KiB) to {} (1 GiB); the default is {DEFAULT_BODY_LIMIT} (2 MiB)",
            opts.max_body_bytes,
            BODY_LIMIT_RANGE.start(),
            BODY_LIMIT_RANGE.end()
        );
    }
    let work_slots = work_slots(&engine)?;
    limit_malloc_arenas();
    if opts.preflight_check {
        // Before the runtime: the check talks to the model server through the engine's own
        // blocking client.
        preflight(&engine, &opts, token(&engine, &opts)?.as_deref())?;
    }
    // Searches are CPU-bound: more blocking threads than about two per core only add memory
    // (stacks, allocator arenas) and contention. Engine calls take one of `work_slots` first
    // (`AppState::work`), so requests beyond them wait their turn without a thread, then get
    // `503 busy`. Chats hold a thread while the model generates, and a work slot with it; a
    // gate (`AppState::chat_gate`) keeps them to half the work slots, so a burst of slow chats
    // never makes a search, symbol lookup or status wait. (The `chat_slots()` threads on top
    // are spare since chats hold work slots.) The last `UNGATED_THREADS` serve what is never
    // gated: status, mounting, stopping the watchers.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(work_slots + super::state::chat_slots() + UNGATED_THREADS)
        .thread_keep_alive(Duration::from_secs(5))
        .thread_name("docdex-server")
        .enable_all()
        .build()
        .context("starting the server runtime")?;
    let result = runtime.block_on(run_async(engine, opts));
    runtime.shutdown_timeout(Duration::from_secs(1));
    result
}

/// Blocking threads kept beside the engine-call and chat slots for what is never gated
/// (`/v1/status`, `docdex_status`, mounting a repository, stopping the watchers).
const UNGATED_THREADS: usize = 4;

/// The most `[server] max_concurrent_work` takes: each slot can hold a blocking thread (and
/// its stack and allocator arena) for as long as its call runs.
pub const MAX_WORK_SLOTS: usize = 256;

/// The longest `[server] work_wait_ms` takes: a request waiting longer is better refused
/// (clients time out around a minute).
pub const MAX_WORK_WAIT_MS: u64 = 60_000;

/// The longest `[server] request_timeout_secs` takes: a day. There is no "no limit" (the
/// product bounds every request in time); work that needs longer has a bound of its own.
pub const MAX_REQUEST_TIMEOUT_SECS: u64 = 86_400;

/// The most `[server] max_repos` takes: each mount holds about 7 descriptors, and the
/// connection cap leaves the engine a fixed few hundred.
pub const MAX_REPOS: usize = 1024;

/// The number of engine calls the server runs at once (`[server] max_concurrent_work`, 0 for
/// the default), refusing a setting out of range rather than silently using another.
fn work_slots(engine: &Engine) -> anyhow::Result<usize> {
    let server = &engine.config().server;
    if server.max_concurrent_work > MAX_WORK_SLOTS {
        bail!(
            "[server] max_concurrent_work = {} is out of range: it takes 1 to {MAX_WORK_SLOTS}, or 0 for twice the cores (here {})",
            server.max_concurrent_work,
            super::work::default_slots()
        );
    }
    if server.work_wait_ms > MAX_WORK_WAIT_MS {
        bail!("[server] work_wait_ms = {} is out of range: it takes 0 to {MAX_WORK_WAIT_MS}", server.work_wait_ms);
    }
    if !(1..=MAX_REQUEST_TIMEOUT_SECS).contains(&server.request_timeout_secs) {
        bail!(
            "[server] request_timeout_secs = {} is out of range: it takes 1 to {MAX_REQUEST_TIMEOUT_SECS} (0 is not \"no limit\": give the longest a request may run)",
            server.request_timeout_secs
        );
    }
    let most = super::mcp::sessions::MAX_SESSIONS;
    if !(1..=most).contains(&server.max_mcp_sessions) {
        bail!("[server] max_mcp_sessions = {} is out of range: it takes 1 to {most}", server.max_mcp_sessions);
    }
    if !(1..=MAX_REPOS).contains(&server.max_repos) {
        bail!("[server] max_repos = {} is out of range: it takes 1 to {MAX_REPOS}", server.max_repos);
    }
    Ok(if server.max_concurrent_work == 0 { super::work::default_slots() } else { server.max_concurrent_work })
}

/// The token requests must carry, if any. A token given but only whitespace is refused: the
/// caller meant to guard the server, and treating it as "no token" served everyone, silently.
fn token(engine: &Engine, opts: &ServerOptions) -> anyhow::Result<Option<String>> {
    let (token, from) = match &opts.auth_token {
        Some(t) => (t.clone(), "--auth-token (or DOCDEX_AUTH_TOKEN)"),
        None => (engine.config().server.auth_token.clone(), "[server] auth_token"),
    };
    if token.is_empty() {
        return Ok(None);
    }
    if token.trim().is_empty() {
        bail!("{from} is only whitespace, which would leave the server open to every request; set a real token (e.g. `openssl rand -hex 24`), or leave it unset to serve without one");
    }
    if opts.mode != Mode::Stdio {
        if let Some(why) = unsendable(token.trim()) {
            bail!("{from} {why}; an HTTP client sends the token in `Authorization: Bearer <token>`, which carries visible ASCII only (letters, digits and punctuation, no spaces), so no client could send this one: use such a token, e.g. `openssl rand -hex 24`");
        }
    }
    Ok(Some(token))
}

/// What keeps `token` out of an `Authorization` header, if anything: its first character that
/// is not visible ASCII. Such a token was accepted, then refused to every client, whose header
/// could not carry it. The character is named, never the token.
fn unsendable(token: &str) -> Option<String> {
    let (at, c) = token.chars().enumerate().find(|(_, c)| !c.is_ascii_graphic())?;
    let which = match c {
        ' ' => "a space".to_string(),
        c if c.is_control() => format!("the control character U+{:04X}", c as u32),
        c => format!("{c:?} (U+{:04X})", c as u32),
    };
    Some(format!("holds {which} at character {}", at + 1))
}

/// The shortest token `--expose` accepts: beyond this machine, a token is all that stands
/// between the network and the repository, and a short one is guessed.
pub const MIN_EXPOSED_TOKEN_LEN: usize = 16;

/// Fewest different characters in that token: a repeated pattern is no secret, while a random
/// 16-character hex token has fewer than 5 about once in a million.
pub const MIN_EXPOSED_TOKEN_DISTINCT: usize = 5;

/// Resolves and checks the bind address against the exposure rules. `localhost:PORT` means
/// `127.0.0.1:PORT` (never a resolver's answer, which could be anything).
pub fn bind_addr(engine: &Engine, opts: &ServerOptions, token: Option<&str>) -> anyhow::Result<SocketAddr> {
    let text = opts.bind.clone().unwrap_or_else(|| engine.config().server.http_bind_addr.clone());
    let mut addr: SocketAddr = match text.strip_prefix("localhost:") {
        Some(port) => port.parse::<u16>().ok().map(|p| SocketAddr::from(([127, 0, 0, 1], p))),
        None => text.parse().ok(),
    }
    .with_context(|| format!("bad bind address {text:?}: use HOST:PORT, e.g. 127.0.0.1:3210 or localhost:3210"))?;
    if let Some(port) = opts.port {
        addr.set_port(port);
    }
    if !addr.ip().is_loopback() && !opts.expose {
        bail!("binding {addr} would expose docdex beyond this machine; pass --expose (with a token) or bind 127.0.0.1");
    }
    if opts.expose {
        let Some(token) = token else {
            bail!("--expose requires a token: set DOCDEX_AUTH_TOKEN (or [server] auth_token, or --auth-token); every request must then send `Authorization: Bearer <token>`");
        };
        if token.trim().chars().count() < MIN_EXPOSED_TOKEN_LEN {
            bail!("--expose requires a token of at least {MIN_EXPOSED_TOKEN_LEN} characters (this one has {}): a short token can be guessed over the network; e.g. `openssl rand -hex 24`", token.trim().chars().count());
        }
        let distinct = token.trim().chars().collect::<std::collections::BTreeSet<_>>().len();
        if distinct < MIN_EXPOSED_TOKEN_DISTINCT {
            bail!("--expose requires a random token: this one uses only {distinct} different characters (`aaaa...`, `abab...` are guessed first); e.g. `openssl rand -hex 24`");
        }
    }
    Ok(addr)
}

async fn run_async(engine: Engine, opts: ServerOptions) -> anyhow::Result<()> {
    let token = token(&engine, &opts)?;
    let auth = Auth::new(token.as_deref());
    if opts.mode == Mode::Stdio {
        let state =
            AppState::new(engine, Mode::Stdio, opts.repo.as_deref(), auth, opts.watch, opts.max_body_bytes, false)
                .context("starting the MCP server")?;
        state.set_default_agent(opts.agent_id.as_deref().unwrap_or(""));
        if let Some(root) = opts.session_root.clone().filter(|_| opts.repo.is_none()) {
            state.set_session_root(root);
        }
        let result = mcp::stdio::serve(state.clone()).await;
        stop_watchers(&state).await;
        return result;
    }
    let addr = bind_addr(&engine, &opts, token.as_deref())?;
    let mut lock = match opts.mode {
        Mode::Daemon => Some(DaemonLock::acquire(&engine.paths().home.join("daemon.lock"), &addr.to_string())?),
        _ => None,
    };
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| {
        format!("cannot listen on {addr} (another docdex serve or daemon there?); choose another with --bind")
    })?;
    let local = listener.local_addr().context("reading the bound address")?;
    if let Some(l) = lock.as_mut() {
        l.set_addr(&local.to_string())?;
    }
    let repo = match opts.mode {
        Mode::Serve => {
            Some(opts.repo.clone().context("docdex serve needs a repository (--repo, default: the current git root)")?)
        }
        _ => None,
    };
    let state =
        AppState::new(engine.clone(), opts.mode, repo.as_deref(), auth, opts.watch, opts.max_body_bytes, opts.expose)
            .context("mounting the repository")?;
    state.set_default_agent(opts.agent_id.as_deref().unwrap_or(""));
    let with_mcp = opts.enable_mcp.unwrap_or(engine.config().server.enable_mcp);
    let (app, _) = router::app(state.clone(), with_mcp);
    let mode = match opts.mode {
        Mode::Daemon => "daemon",
        _ => "serve",
    };
    // Before announcing the address: a client may signal as soon as it can connect.
    let signal = shutdown_signal();
    println!("docdex {mode} listening on http://{local}");
    let _ = std::io::stdout().flush();
    tracing::info!(%local, "listening");

    let trimmer = tokio::spawn(trim_memory_periodically(Duration::from_secs(30)));
    let cancel = state.shutdown_token().clone();
    let (signalled_tx, signalled_rx) = tokio::sync::oneshot::channel::<()>();
    let serve = super::listen::serve(listener, app, super::listen::Limits::for_process(), async move {
        signal.await;
        // A second Ctrl-C (or SIGTERM) ends the process at once, as users expect of a CLI.
        super::shutdown::exit_on_next_signal();
        eline!("docdex: shutting down (finishing in-flight requests; Ctrl-C again to exit now)");
        cancel.cancel();
        let _ = signalled_tx.send(());
    });
    tokio::select! {
        r = serve => r.context("serving HTTP")?,
        _ = async { let _ = signalled_rx.await; tokio::time::sleep(DRAIN_TIMEOUT).await } => {
            tracing::warn!("requests still open after {DRAIN_TIMEOUT:?}; closing them");
        }
    }
    trimmer.abort();
    stop_watchers(&state).await;
    drop(lock);
    eline!("docdex: stopped");
    Ok(())
}

async fn stop_watchers(state: &AppState) {
    let s = state.clone();
    let _ = tokio::task::spawn_blocking(move || s.mounts().shutdown()).await;
}

/// Checks what the server needs before it starts and refuses to start on a failure: the
/// whole `docdex check` ([`Engine::check`]: config, state and locks writable, the registry, the
/// repository's index and state; a missing model server is only a warning, since search works
/// without one), then the server's own rules for the address it is about to bind (loopback
/// unless exposed with a token, and free).
fn preflight(engine: &Engine, opts: &ServerOptions, token: Option<&str>) -> anyhow::Result<()> {
    let report = engine.check(&CheckOptions { repo: opts.repo.clone(), require_llm: false, require_bind: false });
    for item in report.items.iter().filter(|i| matches!(i.status, CheckStatus::Fail | CheckStatus::Warn)) {
        let hint = item.hint.as_deref().map(|h| format!(" ({h})")).unwrap_or_default();
        let level = if item.status == CheckStatus::Fail { "FAIL" } else { "warn" };
        eline!("docdex: preflight {level} {}: {}{hint}", item.name, item.message);
    }
    if !report.ok {
        bail!(
            "preflight check failed ({} failed, {} warnings): fix the items marked FAIL above (`docdex check` shows the full report)",
            report.failures,
            report.warnings
        );
    }
    if opts.mode != Mode::Stdio {
        let addr = bind_addr(engine, opts, token).context("preflight")?;
        std::net::TcpListener::bind(addr).with_context(|| format!("preflight: cannot bind {addr}"))?;
    }
    eline!("docdex: preflight check passed ({} checks, {} warnings)", report.items.len(), report.warnings);
    Ok(())
}

/// Caps glibc's per-thread malloc arenas: by default each thread that allocates may get its
/// own arena (up to 8 per core), which keeps freed memory resident long after a burst of
/// concurrent requests. Two arenas serve a server of this size without measurable contention.
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only tunes the allocator; called before the server's threads start.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// Gives memory freed by bursts of requests back to the OS every `period` while running.
async fn trim_memory_periodically(period: Duration) {
    let mut tick = tokio::time::interval(period);
    tick.tick().await;
    loop {
        tick.tick().await;
        let _ = tokio::task::spawn_blocking(super::mounts::release_free_memory).await;
    }
}

#[cfg(test)]
mod tests {
    use super::unsendable;

    #[test]
    fn a_token_no_header_can_carry_is_named_by_its_first_such_character() {
        assert_eq!(unsendable("s3cret-token_+/=~."), None);
        assert_eq!(unsendable("tøken-ünïcode-€€€").as_deref(), Some("holds 'ø' (U+00F8) at character 2"));
        assert_eq!(unsendable("two words").as_deref(), Some("holds a space at character 4"));
        assert_eq!(unsendable("tab\there").as_deref(), Some("holds the control character U+0009 at character 4"));
    }
}
