//! `docdex serve`, `docdex daemon` and `docdex mcp`: flags to
//! [`ServerOptions`], then [`crate::server::run`]; `docdex daemon status|stop` read and act on
//! the daemon's lock file. All logic is in `src/server/`.

use crate::cli::output::Out;
use crate::engine::protocol::{ago, now_ms, utc};
use crate::engine::Engine;
use crate::server::lockfile::{self, DaemonInfo, StopOutcome};
use crate::server::{run, Mode, ServerOptions};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Exit code of `docdex daemon status|stop` when no daemon of this home is running (as an
/// init script's `status` says "not running").
pub const NOT_RUNNING: u8 = 3;

/// How long `docdex daemon stop` waits for the lock to be released: the daemon's own 10 s
/// grace for requests in flight, and a little.
const STOP_WAIT: Duration = Duration::from_secs(12);

/// `docdex daemon status` and `docdex daemon stop` (bare `docdex daemon` starts one).
#[derive(Debug, clap::Subcommand)]
pub enum DaemonAction {
    /// Is this home's daemon running, and where: pid, address, since when. Exit 0 running, 3 not.
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Stop this home's daemon: SIGTERM, then wait up to 12 s for it to release its lock.
    /// Exit 0 stopped, 3 none running, 1 refused or still running.
    Stop {
        #[arg(long)]
        json: bool,
    },
}

/// Flags shared by the HTTP processes.
#[derive(Debug, clap::Args)]
pub struct HttpArgs {
    /// Address to listen on (default `[server] http_bind_addr`, 127.0.0.1:3210).
    #[arg(long, conflicts_with = "port")]
    bind: Option<String>,
    /// Port to listen on, on the configured address's host (127.0.0.1 unless `[server]
    /// http_bind_addr` says otherwise); 0 picks a free one, printed at start.
    #[arg(long, short = 'p')]
    port: Option<u16>,
    /// Allow binding beyond loopback; requires a token (DOCDEX_AUTH_TOKEN or [server] auth_token).
    #[arg(long)]
    expose: bool,
    /// Bearer token every HTTP and MCP request must carry (overrides the configured one).
    #[arg(long, env = "DOCDEX_AUTH_TOKEN", hide_env_values = true)]
    auth_token: Option<String>,
    /// Do not serve MCP (`/v1/mcp`, `/sse`) beside HTTP.
    #[arg(long)]
    disable_mcp: bool,
    /// Request body limit in bytes.
    #[arg(long, default_value_t = crate::server::run::DEFAULT_BODY_LIMIT)]
    max_body_bytes: usize,
    #[command(flatten)]
    common: CommonArgs,
}

/// Flags shared by every server process.
#[derive(Debug, clap::Args)]
pub struct CommonArgs {
    /// Only read the indexes: run no watcher (another process keeps them fresh).
    #[arg(long)]
    no_watch: bool,
    /// Run the preflight check first and refuse to start if it fails.
    #[arg(long, env = "DOCDEX_PREFLIGHT_CHECK", value_parser = clap::builder::BoolishValueParser::new(), default_value_t = false)]
    preflight_check: bool,
    /// The agent (profile memory persona) used when a request names none, e.g. mcoda_frontend.
    #[arg(long = "agent", visible_alias = "agent-id", value_name = "AGENT")]
    agent_id: Option<String>,
}

fn options(mode: Mode, repo: Option<PathBuf>, http: Option<HttpArgs>, common: &CommonArgs) -> ServerOptions {
    let mut o = ServerOptions::new(mode);
    o.repo = repo;
    o.watch = !common.no_watch;
    o.preflight_check = common.preflight_check;
    o.agent_id = common.agent_id.clone();
    if let Some(h) = http {
        o.bind = h.bind;
        o.port = h.port;
        o.expose = h.expose;
        if h.auth_token.is_some() && token_on_command_line() {
            eline!("docdex: warning: --auth-token puts the token in the process list, where every user of this machine can read it (ps, /proc/PID/cmdline); set DOCDEX_AUTH_TOKEN or [server] auth_token instead");
        }
        o.auth_token = h.auth_token;
        o.enable_mcp = if h.disable_mcp { Some(false) } else { None };
        o.max_body_bytes = h.max_body_bytes;
    }
    o
}

/// Whether the token came as `--auth-token` on the command line (clap also reads it from
/// `DOCDEX_AUTH_TOKEN`, which other users cannot read).
fn token_on_command_line() -> bool {
    std::env::args_os().any(|a| a.to_str().is_some_and(|a| a == "--auth-token" || a.starts_with("--auth-token=")))
}

/// `docdex serve`.
pub fn serve(engine: Engine, repo: PathBuf, args: HttpArgs) -> anyhow::Result<()> {
    let common = CommonArgs {
        no_watch: args.common.no_watch,
        preflight_check: args.common.preflight_check,
        agent_id: args.common.agent_id.clone(),
    };
    run(engine, options(Mode::Serve, Some(repo), Some(args), &common))
}

/// `docdex daemon`.
pub fn daemon(engine: Engine, args: HttpArgs) -> anyhow::Result<()> {
    let common = CommonArgs {
        no_watch: args.common.no_watch,
        preflight_check: args.common.preflight_check,
        agent_id: args.common.agent_id.clone(),
    };
    run(engine, options(Mode::Daemon, None, Some(args), &common))
}

/// `docdex daemon status|stop`: what `<home>/daemon.lock` says while its lock is held.
pub fn daemon_action(engine: &Engine, out: &Out, action: DaemonAction) -> anyhow::Result<ExitCode> {
    match action {
        DaemonAction::Status { json } => status(engine, out, json),
        DaemonAction::Stop { json } => stop(engine, out, json),
    }
}

fn status(engine: &Engine, out: &Out, json: bool) -> anyhow::Result<ExitCode> {
    let lock = &lockfile::path(engine);
    let Some(d) = lockfile::running(engine) else {
        let stale = lockfile::stale(engine);
        if json {
            out.json(&json!({"running": false, "lock": lock, "stale_pid": stale.map(|s| s.pid)}))?;
        } else {
            out.line(&format!("no docdex daemon is running (lock {}){}", lock.display(), stale_note(stale.as_ref())));
        }
        return Ok(ExitCode::from(NOT_RUNNING));
    };
    if json {
        let since = (d.started_ms > 0).then_some(d.started_ms);
        out.json(&json!({"running": true, "pid": d.pid, "addr": d.addr, "started_ms": since, "lock": lock}))?;
    } else {
        out.line(&format!("a docdex daemon is running: pid {} on http://{}{}", d.pid, d.addr, since(&d)));
        out.line(&format!("lock {}; stop it with `docdex daemon stop`", lock.display()));
    }
    Ok(ExitCode::SUCCESS)
}

fn stop(engine: &Engine, out: &Out, json: bool) -> anyhow::Result<ExitCode> {
    let lock = &lockfile::path(engine);
    let outcome = lockfile::stop(engine, STOP_WAIT);
    let (code, state, message) = match &outcome {
        StopOutcome::NotRunning(stale) => (
            NOT_RUNNING,
            "not_running",
            format!("no docdex daemon is running (lock {}){}", lock.display(), stale_note(stale.as_ref())),
        ),
        StopOutcome::Refused(d, why) => {
            (1, "refused", format!("not stopping pid {}: {why}; nothing was signalled (lock {})", d.pid, lock.display()))
        }
        StopOutcome::Stopped(d) => (0, "stopped", format!("stopped the docdex daemon (pid {} on {}); its lock is released", d.pid, d.addr)),
        StopOutcome::StillRunning(d) => (1, "still_running", format!(
            "sent SIGTERM to the docdex daemon (pid {} on {}), but it still holds its lock after {} s; `docdex daemon status` tells when it is gone",
            d.pid, d.addr, STOP_WAIT.as_secs()
        )),
    };
    if json {
        let pid = match &outcome {
            StopOutcome::NotRunning(_) => None,
            StopOutcome::Refused(d, _) | StopOutcome::Stopped(d) | StopOutcome::StillRunning(d) => Some(d.pid),
        };
        out.json(&json!({"state": state, "pid": pid, "message": message, "lock": lock}))?;
    } else if code == 0 || code == NOT_RUNNING {
        out.line(&message);
    } else {
        eline!("{message}");
    }
    Ok(ExitCode::from(code))
}

/// ", since 2026-11-30 09:12:00 UTC (5 min ago)" when the lock file says.
fn since(d: &DaemonInfo) -> String {
    match d.started_ms {
        0 => String::new(),
        ms => format!(", since {} ({})", utc(ms), ago(now_ms(), ms)),
    }
}

/// What a lock file nobody holds names: said, so the user sees it is ignored, not signalled.
fn stale_note(stale: Option<&DaemonInfo>) -> String {
    match stale {
        Some(s) => format!(
            "; the file names pid {}, left by a daemon that did not exit cleanly: ignored, never signalled, replaced by the next daemon",
            s.pid
        ),
        None => String::new(),
    }
}

/// `docdex mcp`.
pub fn mcp(
    engine: Engine,
    repo: Option<PathBuf>,
    auth_token: Option<String>,
    common: CommonArgs,
) -> anyhow::Result<()> {
    let mut o = options(Mode::Stdio, repo, None, &common);
    o.auth_token = auth_token;
    // Stderr is the client's log: which home this process uses is the first thing to check
    // when it does not see what a `docdex serve` sees.
    eline!("docdex mcp: docdex home {}", engine.paths().home.display());
    if o.repo.is_none() {
        o.session_root = repo_of_current_dir(&engine);
        if let Some(r) = &o.session_root {
            eline!("docdex mcp: sessions bind to {} (the current directory's repository) unless `rootUri` names another; `project_root` reaches any", r.display());
        }
    }
    run(engine, o)
}

/// `docdex mcp` when docdex cannot start (a `config.toml` that does not parse, ...): the
/// reason is said on stderr and given to the client as the error of every request, `initialize`
/// first, until stdin closes ([`crate::server::mcp::unstarted`]); exiting at once left the
/// client only a closed pipe. Exits with `code`, the error's usual exit code.
pub fn mcp_unstarted(err: &anyhow::Error, code: u8) -> ExitCode {
    let reason = format!("{err:#}");
    eline!("{} {}", crate::cli::output::error_prefix(), crate::cli::output::guard(&reason, false));
    eline!("docdex mcp: answering every request with this error until stdin closes");
    let message = format!("docdex mcp cannot start: {reason}\nFix this, then restart the MCP server.");
    let (mut stdin, mut stdout) = (std::io::stdin().lock(), std::io::stdout().lock());
    if let Err(e) = crate::server::mcp::unstarted::answer_until_closed(&message, &mut stdin, &mut stdout) {
        eline!("docdex mcp: reading stdin: {e}");
    }
    ExitCode::from(code)
}

/// The repository an agent host that starts `docdex mcp` in a project means, as every other
/// command takes it without `--repo`: the git repository (or the indexed folder) holding the
/// current directory. None when the directory is in neither.
fn repo_of_current_dir(engine: &Engine) -> Option<PathBuf> {
    let cwd = std::env::current_dir().ok()?;
    let root = engine.discover_repo(&cwd);
    let indexed = || engine.resolve_repo(&root).is_ok_and(|r| engine.has_index(&r));
    (root.join(".git").exists() || root != cwd || indexed()).then_some(root)
}
