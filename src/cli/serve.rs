//! `docdex serve`, `docdex daemon` and `docdex mcp`: flags to
//! [`ServerOptions`], then [`crate::server::run`]. All logic is in `src/server/`.

use crate::engine::Engine;
use crate::server::{run, Mode, ServerOptions};
use std::path::PathBuf;

/// Flags shared by the HTTP processes.
#[derive(Debug, clap::Args)]
pub struct HttpArgs {
    /// Address to listen on (default `[server] http_bind_addr`, 127.0.0.1:3210).
    #[arg(long)]
    bind: Option<String>,
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
    #[arg(long)]
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
        o.expose = h.expose;
        o.auth_token = h.auth_token;
        o.enable_mcp = if h.disable_mcp { Some(false) } else { None };
        o.max_body_bytes = h.max_body_bytes;
    }
    o
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

/// The repository an agent host that starts `docdex mcp` in a project means, as every other
/// command takes it without `--repo`: the git repository (or the indexed folder) holding the
/// current directory. None when the directory is in neither.
fn repo_of_current_dir(engine: &Engine) -> Option<PathBuf> {
    let cwd = std::env::current_dir().ok()?;
    let root = engine.discover_repo(&cwd);
    let indexed = || engine.resolve_repo(&root).is_ok_and(|r| engine.has_index(&r));
    (root.join(".git").exists() || root != cwd || indexed()).then_some(root)
}
