//! The scriptable command line: clap parsing, then one call into [`Engine`]
//! per command, printed for humans (colored on a terminal) or as `--json`.
//! No engine logic lives here.

mod audit;
mod batch;
mod bench;
mod chat;
mod check;
mod code;
mod context;
mod dag;
mod eval;
mod examples;
mod hook;
mod impact;
mod interrupt;
mod libs;
mod llm;
mod memory;
mod output;
mod profile;
mod progress;
mod run_tests;
mod serve;
mod similar;
mod sources;
mod tui;
mod web;

use crate::engine::protocol::WatchReport;
use crate::engine::protocol::{EmbedState, FileRequest, SearchRequest};
use crate::engine::{Engine, IndexOptions};
use crate::error::Error;
use anyhow::Context;
use clap::{Parser, Subcommand};
use output::Out;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Local-first code and documentation intelligence.
#[derive(Debug, Parser)]
#[command(name = "docdex", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// More logging on stderr (-v debug, -vv trace).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    /// The docdex home (config and state); wins over DOCDEX_HOME, default ~/.docdex. For MCP
    /// client configurations, which pass arguments but usually not environment variables.
    #[arg(long, global = true, value_name = "DIR")]
    home: Option<PathBuf>,
    /// With no command, `docdex` opens the workbench on a terminal (and prints this help otherwise).
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Open the terminal workbench: search, preview, repositories, impact graph, chat.
    Tui(tui::TuiArgs),
    /// Index a repository (incremental: only new, changed, deleted and renamed files are touched).
    Index {
        #[command(flatten)]
        repo: RepoArg,
        /// Build the index again from scratch, beside the current one (which answers searches
        /// until the new one is complete).
        #[arg(long)]
        rebuild: bool,
        /// Check every index file against its checksum and rebuild the index if it is damaged.
        #[arg(long)]
        repair: bool,
        /// Throw the embeddings away and embed every chunk again (after changing [llm] embedding_model).
        #[arg(long)]
        reembed: bool,
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
        /// No progress bar.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Search a repository's index.
    Search {
        #[command(flatten)]
        repo: RepoArg,
        /// What to look for: identifiers, paths, or a plain-language description.
        query: Vec<String>,
        /// Run every query of a file in one process (a JSON array, or lines: each a query in
        /// plain words, a JSON string or a search request object): one JSON result per query
        /// with --json.
        #[arg(long, value_name = "QUERIES.json|jsonl", conflicts_with_all = ["query", "cursor"])]
        batch: Option<PathBuf>,
        /// Results per page.
        #[arg(long, short = 'n')]
        limit: Option<usize>,
        /// Cursor from a previous page (`next_cursor`).
        #[arg(long)]
        cursor: Option<String>,
        /// Only this file or folder (whole path components: `src` is not `src2/`).
        #[arg(long = "path")]
        path_prefix: Option<String>,
        /// Only this language (rust, python, markdown, ...).
        #[arg(long)]
        lang: Option<String>,
        /// Also search the library docs `docdex libs fetch` ingested (hits labelled package@version).
        #[arg(long, conflicts_with = "no_libs")]
        libs: bool,
        /// Only the repository's own files (the default).
        #[arg(long)]
        no_libs: bool,
        /// Print the results as JSON (hits with paths, lines, scores and snippets; `libs` hits
        /// with --libs; the shape is in docs/SEARCH.md and GET /v1/openapi.json).
        #[arg(long)]
        json: bool,
    },
    /// Ask about a repository: local retrieval, memory and diff context within a token budget,
    /// answered by the configured model as it streams (a session on stdin without a question).
    Chat(chat::ChatArgs),
    /// Find symbols by name (exact, prefix, word part, fuzzy), or list a file's outline (--file).
    Symbols(code::SymbolsArgs),
    /// A file's import dependencies and dependents, and what may change if it changes.
    Impact(impact::ImpactArgs),
    /// A bounded, cited context pack for a task: changed lines, hits, definitions, tests, importers.
    Context(context::ContextArgs),
    /// Print a file of the repository with line numbers.
    Get {
        #[command(flatten)]
        repo: RepoArg,
        /// The file (repo-relative, or relative to the current directory inside the repo).
        file: String,
        /// Line range A-B (or a single line A).
        #[arg(long, conflicts_with = "page")]
        lines: Option<String>,
        /// One page of a PDF (1-based), as lines of its extracted text.
        #[arg(long)]
        page: Option<u32>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Index state, counts, queue and warnings.
    Status {
        #[command(flatten)]
        repo: RepoArg,
        /// Print the status as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Keep a repository's index fresh as files change (Ctrl-C to stop).
    Watch {
        #[command(flatten)]
        repo: RepoArg,
        /// One JSON object per applied batch on stdout.
        #[arg(long)]
        json: bool,
    },
    /// The repository's memory: notes recalled by meaning in chat and by agents.
    Memory {
        #[command(subcommand)]
        action: memory::MemoryCommand,
    },
    /// Profile memory: agents and how each wants code written (list, add, search, edit, remove,
    /// export, import, reembed, learn).
    Profile(profile::ProfileArgs),
    /// The project map: the files that matter to an agent (its role and tooling), the rest
    /// collapsed, within 500 tokens (what chat puts in its map slot).
    Map(profile::MapArgs),
    /// The files most like a given file (by embeddings; by its distinctive terms without them).
    Similar(similar::SimilarArgs),
    /// Run the repository's tests (all, --target, or --affected by the change) with its own runner; structured JSON.
    RunTests(run_tests::RunTestsArgs),
    /// How well search finds the files a change touched here: queries from the git history (or
    /// a file) scored as R@1/5/10 and MRR, with the worst misses; --compare a second config.
    Eval(eval::EvalArgs),
    /// Serve one repository over HTTP and MCP, keeping its index fresh (Ctrl-C to stop).
    Serve {
        #[command(flatten)]
        repo: RepoArg,
        #[command(flatten)]
        http: serve::HttpArgs,
    },
    /// One process serving many repositories, mounted with `POST /v1/initialize` (Ctrl-C or
    /// `docdex daemon stop` to stop); `docdex daemon status` says whether one runs, and where.
    #[command(args_conflicts_with_subcommands = true)]
    Daemon {
        #[command(subcommand)]
        action: Option<serve::DaemonAction>,
        #[command(flatten)]
        http: serve::HttpArgs,
    },
    /// MCP over stdio for coding agents (stdout carries only JSON-RPC; logs go to stderr).
    Mcp {
        /// The repository tools default to (without it, tools take `project_root`).
        #[arg(long, short = 'r')]
        repo: Option<PathBuf>,
        /// Token the client must send as `auth_token` in the initialize params.
        #[arg(long, env = "DOCDEX_AUTH_TOKEN", hide_env_values = true)]
        auth_token: Option<String>,
        #[command(flatten)]
        common: serve::CommonArgs,
    },
    /// The semantic gatekeeper's git hook: `pre-commit` checks the staged files against the
    /// constraints' rules on the running server (fails open when none answers); `install`, `uninstall`.
    Hook(hook::HookArgs),
    /// Known repositories.
    Repo {
        #[command(subcommand)]
        action: RepoAction,
    },
    /// Register a folder outside the repository (docs, notes) into its index, and index it.
    Add(sources::AddArgs),
    /// The registered source folders, with file counts, sizes and formats.
    Sources(sources::ListArgs),
    /// Unregister a source folder (by path or name); its files leave the index.
    RemoveSource(sources::RemoveArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) for every command and flag.
    Completions {
        /// The shell to complete in.
        shell: clap_complete::Shell,
    },
    /// Show the config file's location and the effective settings.
    Config {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Is this machine ready? Config, state, registry, model server and models, hardware, bind address.
    Check(check::CheckArgs),
    /// Recommend models for this machine (RAM, GPU) and show which are installed.
    LlmList {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check the model server, pull the chosen models (only with --yes) and point [llm] at them.
    LlmSetup(llm::SetupArgs),
    /// The import graph: cycles, rebuild.
    Graph {
        #[command(subcommand)]
        action: impact::GraphCommand,
    },
    /// The symbol index: counts per language, grammar versions, parser drift.
    SymbolsStatus(code::StatusArgs),
    /// Search Tree-sitter node kinds: files containing them, or per-file counts and samples.
    Ast {
        #[command(subcommand)]
        action: code::AstCommand,
    },
    /// Audits: duplicate chunks, conflicting passages.
    Audit {
        #[command(subcommand)]
        action: audit::AuditAction,
    },
    /// The reasoning DAG chat logs per session: list sessions, view one as text, DOT or JSON.
    Dag {
        #[command(subcommand)]
        action: dag::DagAction,
    },
    /// Search the web (DuckDuckGo HTML): titles, URLs and snippets, rate-limited and cached.
    WebSearch(web::WebSearchArgs),
    /// Fetch a page (headless Chromium, else plain HTTP) and print its readable text as Markdown.
    WebFetch(web::WebFetchArgs),
    /// Ask about a repository with the web tier forced: local context plus web passages.
    WebRag(web::WebRagArgs),
    /// The browser the web tier drives: list, setup (save one in the config), install (how to).
    Browser {
        #[command(subcommand)]
        action: web::BrowserCommand,
    },
    /// Library docs of the repository's dependencies: fetch (detect, read, fetch, ingest), list.
    Libs {
        #[command(subcommand)]
        action: libs::LibsCommand,
    },
    /// Measure indexing and search on a corpus, against ripgrep (figures for docs/PERFORMANCE.md).
    Bench(bench::BenchArgs),
    /// Measure the code pass's indexing cost against a plain index and the bare Tree-sitter parse.
    BenchIndex(bench::index::BenchIndexArgs),
    /// Measure context packs on a copied corpus with branch changes (figures for docs/PERFORMANCE.md).
    BenchContext(bench::context::BenchContextArgs),
    /// Measure indexing with embeddings and hybrid query latency (figures for docs/PERFORMANCE.md).
    BenchHybrid(bench::hybrid::HybridBenchArgs),
    /// Measure the server: many repos under concurrent load, warm HTTP latency, idle RSS (docs/PERFORMANCE.md).
    BenchServe(bench::serve::BenchServeArgs),
    /// Measure the web tier on a loopback site with your `[web.scraper]` browser: its start, fetches through it and HTTP, Tier 2 latency.
    BenchWeb(bench::web::BenchWebArgs),
    /// Measure profile memory: the pre-commit gatekeeper's endpoint and Tier 0 recall (docs/PERFORMANCE.md).
    BenchProfile(bench::profile::BenchProfileArgs),
    /// Developer tools for tests and demos (debug builds, or `--features test-support`).
    #[cfg(any(debug_assertions, feature = "test-support"))]
    #[command(hide = true, subcommand)]
    Dev(DevCommand),
}

#[cfg(any(debug_assertions, feature = "test-support"))]
#[derive(Debug, Subcommand)]
enum DevCommand {
    /// Serve the deterministic fake Ollama API on 127.0.0.1 until killed (for end-to-end tests).
    FakeOllama {
        /// Port (0 picks a free one).
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// Write the chosen port to this file once listening.
        #[arg(long)]
        port_file: Option<PathBuf>,
        /// Delay before each streamed token, in milliseconds.
        #[arg(long, default_value_t = 0)]
        token_delay_ms: u64,
        /// Installed models (repeatable); default fake-chat and fake-embed.
        #[arg(long = "model")]
        models: Vec<String>,
        /// Embedding dimension.
        #[arg(long, default_value_t = 64)]
        embed_dim: usize,
        /// Serve only the OpenAI-compatible /v1 endpoints (like llama.cpp's server).
        #[arg(long)]
        openai_only: bool,
    },
}

#[derive(Debug, Subcommand)]
enum RepoAction {
    /// List registered repositories.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Forget a repository (its index stays unless --purge).
    Remove {
        /// The repository path.
        path: PathBuf,
        /// Delete its state directory too: its index, and (only with --yes) its memories and
        /// chat sessions.
        #[arg(long)]
        purge: bool,
        /// With --purge: delete its memories and chat sessions too (refused without it).
        #[arg(long, requires = "purge")]
        yes: bool,
    },
    /// Carry a moved repository's index, memories, chat sessions and sources to its folder's
    /// new path (its state is kept by path).
    Move {
        /// Where the repository was (as `docdex repo list` shows it).
        from: PathBuf,
        /// Where its folder is now.
        to: PathBuf,
    },
}

#[derive(Debug, clap::Args)]
pub(crate) struct RepoArg {
    /// The repository (default: the git root containing the current directory, else the nearest
    /// indexed repository containing it, else the directory).
    #[arg(long, short = 'r', global = true)]
    repo: Option<PathBuf>,
}

/// The engine of the running command, so [`RepoArg::resolve`] can find registered
/// repositories without every command threading the engine into its arguments.
static CURRENT_ENGINE: std::sync::Mutex<Option<Engine>> = std::sync::Mutex::new(None);

/// Publishes an engine in [`CURRENT_ENGINE`] for one run and takes it back when dropped, so
/// the engine is still dropped (and its state closed) when the run ends.
struct EngineScope;

impl EngineScope {
    fn enter(engine: &Engine) -> EngineScope {
        if let Ok(mut slot) = CURRENT_ENGINE.lock() {
            *slot = Some(engine.clone());
        }
        EngineScope
    }
}

impl Drop for EngineScope {
    fn drop(&mut self) {
        if let Ok(mut slot) = CURRENT_ENGINE.lock() {
            *slot = None;
        }
    }
}

/// The repository meant by a command run in `dir`: [`Engine::discover_repo`] (git root, else
/// the nearest indexed repository above), or just the git root when no engine is open.
fn discover_here(dir: &Path) -> PathBuf {
    let engine = CURRENT_ENGINE.lock().ok().and_then(|slot| slot.clone());
    match engine {
        Some(engine) => engine.discover_repo(dir),
        None => crate::engine::protocol::discover_root(dir),
    }
}

impl RepoArg {
    pub(crate) fn resolve(&self) -> anyhow::Result<PathBuf> {
        match &self.repo {
            Some(p) => Ok(p.clone()),
            None => {
                let cwd = std::env::current_dir().context("reading the current directory")?;
                Ok(discover_here(&cwd))
            }
        }
    }

    /// [`Self::resolve`] for a command that changes or lists what a repository holds beside its
    /// own files (`add`, `sources`, `remove-source`): with no `--repo`, a folder that is neither
    /// in a git work tree nor a registered repository is no repository yet, and is not made one
    /// behind the user's back (`docdex add ~/notes` typed in `~/Downloads` indexed all of it).
    pub(crate) fn resolve_existing(&self, engine: &crate::engine::Engine) -> anyhow::Result<PathBuf> {
        let root = self.resolve()?;
        if self.repo.is_some() || root.join(".git").exists() {
            return Ok(root);
        }
        let real = root.canonicalize().unwrap_or_else(|_| root.clone());
        match engine.list_repos()?.iter().any(|r| r.path == real) {
            true => Ok(root),
            false => Err(crate::error::Error::NotIndexed { path: real }.into()),
        }
    }

    /// A file or directory argument as the engine takes it. Typed in a subdirectory of the
    /// repository, a relative path that exists there means what the shell means (`docdex
    /// impact lib.rs` in `src/` is `src/lib.rs`, as tab completion offers it), so it is passed
    /// absolute; the engine makes it repo-relative again and refuses it outside the repository.
    pub(crate) fn user_path(&self, given: &str) -> String {
        let (Ok(root), Ok(cwd)) = (self.resolve(), std::env::current_dir()) else {
            return given.to_string();
        };
        cwd_relative(&root, &cwd, &split_citation(&root, given).0)
    }
}

/// [`split_citation`](crate::engine::protocol::split_citation), unless `given` names a file relative to the current directory.
fn split_citation(root: &Path, given: &str) -> (String, Option<(u32, u32)>) {
    match Path::new(given).exists() {
        true => (given.to_string(), None),
        false => crate::engine::protocol::split_citation(root, given),
    }
}

/// `given` resolved against `cwd` when `cwd` lies strictly inside `root` and the path exists
/// there, or when `cwd` is the root and the path climbs (`../proj/src` typed in `proj`, which
/// leads back inside: taken repo-relative it left the repository and was refused); otherwise
/// unchanged (repo-relative, absolute, `ext:` packages, `//source/` keys).
fn cwd_relative(root: &Path, cwd: &Path, given: &str) -> String {
    let path = Path::new(given);
    if given.is_empty() || path.is_absolute() || given.starts_with("//") || given.starts_with("ext:") {
        return given.to_string();
    }
    let (Ok(root), Ok(cwd)) = (root.canonicalize(), cwd.canonicalize()) else {
        return given.to_string();
    };
    let climbs = path.components().any(|c| c == std::path::Component::ParentDir);
    if (cwd == root && !climbs) || !cwd.starts_with(&root) {
        return given.to_string();
    }
    match cwd.join(path).canonicalize() {
        // A directory typed with its slash (`auth/`) keeps it: as a path prefix it means the
        // directory, not every name starting with it.
        Ok(real) if given.ends_with('/') => format!("{}/", real.to_string_lossy()),
        Ok(real) => real.to_string_lossy().into_owned(),
        Err(_) => climbing_inside(&root, &cwd, path).unwrap_or_else(|| given.to_string()),
    }
}

/// A missing path that climbs (`../gone.py` typed in `src/`) but stays inside the repository,
/// made absolute lexically: taken repo-relative it left the repository and was refused as
/// "outside the repository" where the answer is that no such file exists.
fn climbing_inside(root: &Path, cwd: &Path, path: &Path) -> Option<String> {
    use std::path::Component;
    if !path.components().any(|c| c == Component::ParentDir) {
        return None;
    }
    let mut out = cwd.to_path_buf();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out.starts_with(root).then(|| out.to_string_lossy().into_owned())
}

/// For a directory that is not indexed but lies inside a git repository (`--repo .` typed in
/// a subdirectory): that repository is likely the one meant, and indexing the directory would
/// build a second, nested index.
fn nested_repo_hint(err: &anyhow::Error) -> Option<String> {
    let Some(Error::NotIndexed { path }) = err.downcast_ref::<Error>() else { return None };
    crate::engine::protocol::enclosing_root(path, &[]).map(|root| {
        format!(
            "hint: {} lies inside the git repository {}; leave out --repo (or pass --repo {}) to search that one",
            path.display(),
            root.display(),
            root.display()
        )
    })
}

/// Process exit codes: 0 ok, 1 error, 2 usage (bad input, or it names something that does not
/// exist), 3 unknown repo, not indexed, stale or damaged index (re-index), 4 index busy, 130
/// stopped by Ctrl-C (as a shell reports an interrupted command).
fn exit_code(err: &anyhow::Error) -> u8 {
    match err.downcast_ref::<Error>() {
        Some(Error::Cancelled) => 130,
        Some(
            Error::RepoNotFound { .. }
            | Error::UnknownRepo { .. }
            | Error::NotIndexed { .. }
            | Error::FirstIndexPending { .. }
            | Error::AffectedNeedsIndex { .. }
            | Error::StaleIndex(_)
            | Error::IndexDamaged { .. },
        ) => 3,
        Some(Error::IndexBusy { .. } | Error::ReembedWhileWatched { .. } | Error::GraphBusy { .. }) => 4,
        Some(
            Error::BadRequest(_)
            | Error::ContextOverflow(_)
            | Error::OutsideRepo { .. }
            | Error::OutsideSource { .. }
            | Error::SourceTextOnly { .. }
            | Error::NotServed { .. }
            | Error::NotFound(_)
            | Error::UnknownAgent(_)
            | Error::Conflict(_)
            | Error::UnsafeRoot { .. }
            | Error::InsideRepo { .. },
        ) => 2,
        _ => 1,
    }
}

/// The fixed query set of `docdex bench` (for evaluation examples).
pub fn bench_queries() -> &'static [&'static str] {
    bench::QUERIES
}

/// The command line, parsed as `Cli::parse` does. The clap command tree it is parsed with is
/// never dropped: a process parses once and exits soon after, and freeing the tree of every
/// subcommand and argument cost a one-shot search about 0.6M instructions (docs/PERFORMANCE.md).
fn parse_command_line() -> Cli {
    use clap::{CommandFactory, FromArgMatches};
    let mut command = examples::attach(Cli::command());
    let parsed = command.try_get_matches_from_mut(std::env::args_os()).and_then(|m| Cli::from_arg_matches(&m));
    let cli = parsed.unwrap_or_else(|e| e.format(&mut command).exit());
    std::mem::forget(command);
    cli
}

/// Entry point for both binaries.
pub fn main() -> ExitCode {
    let mut cli = parse_command_line();
    if cli.command.is_none() {
        if !tui::interactive() {
            use clap::CommandFactory;
            eline!("{}", examples::attach(Cli::command()).render_help());
            return ExitCode::from(2);
        }
        cli.command = Some(Command::Tui(tui::TuiArgs { repo: RepoArg { repo: None } }));
    }
    let json = cli.wants_json();
    // The workbench owns the screen: it logs to a file instead of stderr.
    if !matches!(cli.command, Some(Command::Tui(_))) {
        init_logging(cli.verbose);
    }
    match run(cli) {
        // A human line that could not be written (a full disk under a redirect): the output
        // is incomplete, which exit 0 hid.
        Ok(_) if output::stdout_failure().is_some() => {
            let why = output::stdout_failure().unwrap_or_default();
            eline!("{} writing to stdout: {why}; the output is incomplete", output::error_prefix());
            ExitCode::from(1)
        }
        Ok(code) => code,
        Err(err) => {
            if json {
                let code = err.downcast_ref::<Error>().map(|e| e.code()).unwrap_or("error");
                let body = serde_json::json!({"error": {"code": code, "message": format!("{err:#}")}});
                let _ = output::write_stdout(format!("{body}\n").as_bytes());
            }
            // An error may quote a path or a value with an escape sequence in it.
            eline!("{} {}", output::error_prefix(), output::guard(&format!("{err:#}"), false));
            if let Some(hint) = nested_repo_hint(&err) {
                eline!("{hint}");
            }
            ExitCode::from(exit_code(&err))
        }
    }
}

impl Cli {
    fn wants_json(&self) -> bool {
        match &self.command {
            Some(
                Command::Index { json, .. }
                | Command::Search { json, .. }
                | Command::Get { json, .. }
                | Command::Status { json, .. }
                | Command::Watch { json, .. }
                | Command::Config { json }
                | Command::LlmList { json },
            ) => *json,
            Some(Command::LlmSetup(a)) => a.json,
            Some(Command::Check(a)) => a.json,
            Some(Command::WebSearch(a)) => a.json,
            Some(Command::WebFetch(a)) => a.json,
            Some(Command::WebRag(a)) => a.json,
            Some(Command::Browser { action }) => action.json(),
            Some(Command::Libs { action }) => action.json(),
            Some(Command::Similar(a)) => a.json,
            Some(Command::Audit { action }) => action.json(),
            Some(Command::Add(a)) => a.json,
            Some(Command::Sources(a)) => a.json,
            Some(Command::RemoveSource(a)) => a.json,
            Some(Command::Eval(a)) => a.json,
            Some(Command::Memory { action }) => action.json(),
            Some(Command::Profile(a)) => a.json(),
            Some(Command::Map(a)) => a.json,
            Some(Command::Hook(a)) => a.json(),
            Some(Command::Repo { action: RepoAction::List { json } }) => *json,
            Some(Command::Chat(args)) => args.json(),
            Some(Command::Dag { action }) => action.json(),
            Some(Command::Impact(args)) => args.json(),
            Some(Command::Context(args)) => args.json(),
            Some(Command::RunTests(args)) => args.json,
            Some(Command::Graph { action }) => action.json(),
            Some(Command::Symbols(a)) => a.json,
            Some(Command::SymbolsStatus(a)) => a.json,
            Some(Command::Ast { action }) => action.json(),
            _ => false,
        }
    }
}

fn init_logging(verbose: u8) {
    // headless_chrome logs its own connection teardown as warnings; lopdf and pdf-extract log
    // what they think of each PDF (encrypted, objects that do not load), which the index
    // reports as the file's note: noise for users. notify warns when a watch on a folder that
    // is gone is removed (`WatchNotFound`), which the watcher does on purpose and ignores.
    let default = match verbose {
        0 => "warn,headless_chrome=error,lopdf=off,pdf_extract=off,notify=error",
        // Tantivy's per-file "Open Read" lines would bury docdex's own at debug.
        1 => "debug,headless_chrome=info,tungstenite=info,tantivy=info",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("DOCDEX_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(output::color_enabled(std::io::IsTerminal::is_terminal(&std::io::stderr())))
        .with_target(false)
        .log_internal_errors(false)
        .try_init();
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    if let Some(Command::Completions { shell }) = &cli.command {
        return completions(*shell);
    }
    let engine = match &cli.home {
        Some(home) => Engine::open_at(home),
        None => Engine::open(),
    };
    let engine = match (engine, &cli.command) {
        (Ok(e), _) => e,
        // The git hook fails open: a broken docdex never blocks a commit.
        (Err(e), Some(Command::Hook(h))) if h.fails_open() => return Ok(hook::skip(&format!("{e}"), h.json())),
        // An MCP client sees only a closed pipe if the process exits: the reason is answered.
        (Err(e), Some(Command::Mcp { .. })) => {
            let err = anyhow::Error::new(e).context("opening docdex state");
            return Ok(serve::mcp_unstarted(&err, exit_code(&err)));
        }
        (Err(e), _) => return Err(anyhow::Error::new(e).context("opening docdex state")),
    };
    let _scope = EngineScope::enter(&engine);
    let out = Out::stdout();
    let Some(command) = cli.command else { return Ok(ExitCode::SUCCESS) };
    if let Command::Tui(args) = &command {
        // The workbench shows config warnings itself.
        tui::run(engine, args)?;
        return Ok(ExitCode::SUCCESS);
    }
    // Said once, to the person (a log line as well printed it twice).
    for w in engine.config_warnings() {
        eline!("{} {}", output::warn_prefix(), output::visible(&w.to_string()));
    }
    dispatch(engine, &out, cli.home.as_deref(), command).map_err(|e| refused_root_instead(cli.home.as_deref(), e))
}

/// A read on a root docdex never indexes (`/etc`, `/`, the home directory, docdex's own home)
/// said "not indexed yet; run `docdex index --repo /etc` first", a command that is refused:
/// the refusal is the answer (exit 2), as the server gives it (`403 forbidden_repo`). The
/// engine is opened again only on that error (the command's own one is gone with it). A first
/// index run going on in another process, or one killed before its first commit, is named
/// instead of "run `docdex index`" ([`Engine::explain_not_indexed`]).
fn refused_root_instead(home: Option<&Path>, err: anyhow::Error) -> anyhow::Error {
    let Some(Error::NotIndexed { path }) = err.downcast_ref::<Error>() else { return err };
    let Ok(engine) = home.map_or_else(Engine::open, Engine::open_at) else { return err };
    let refusal = engine.resolve_repo(path).and_then(|repo| engine.check_servable(&repo));
    match refusal {
        Err(e @ Error::UnsafeRoot { .. }) => anyhow::Error::new(e),
        // A first run going on in another process, or one that ended before its first commit:
        // said so, not "run `docdex index`" while it runs.
        _ => match engine.explain_not_indexed(Error::NotIndexed { path: path.clone() }) {
            e @ Error::FirstIndexPending { .. } => anyhow::Error::new(e),
            _ => err,
        },
    }
}

/// One call per command: a flat table, exhaustive so that a new command does not compile
/// until it is routed. Commands that decide their own exit code return it.
fn dispatch(engine: Engine, out: &Out, home: Option<&Path>, command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Index { repo, rebuild, repair, reembed, json, quiet } => {
            index(&engine, out, &repo, IndexOptions { rebuild, reembed, repair, ..Default::default() }, json, quiet)?
        }
        Command::Search { repo, batch: Some(file), limit, path_prefix, lang, libs, json, .. } => {
            let path_prefix = path_prefix.map(|p| repo.user_path(&p));
            let defaults = SearchRequest { limit, path_prefix, lang, libs, ..Default::default() };
            return batch::run(&engine, out, &repo.resolve()?, &file, &defaults, json);
        }
        Command::Search { repo, query, limit, cursor, path_prefix, lang, libs, no_libs: _, json, batch: None } => {
            let path_prefix = path_prefix.map(|p| repo.user_path(&p));
            let req =
                SearchRequest { query: query.join(" "), limit, cursor, path_prefix, lang, libs, ..Default::default() };
            search(&engine, out, &repo, req, json)?
        }
        Command::Libs { action } => return libs::run(&engine, out, action),
        Command::Similar(args) => similar::run(&engine, out, args)?,
        Command::Audit { action } => audit::run(&engine, out, action)?,
        Command::Add(args) => sources::add(&engine, out, args)?,
        Command::Sources(args) => sources::list(&engine, out, args)?,
        Command::RemoveSource(args) => sources::remove(&engine, out, args)?,
        Command::Eval(args) => eval::run(&engine, out, args)?,
        Command::Memory { action } => memory::run(&engine, out, action)?,
        Command::Profile(args) => profile::run(&engine, out, args)?,
        Command::Map(args) => profile::run_map(&engine, out, args)?,
        Command::Hook(args) => return hook::run(&engine, out, home, args),
        Command::Get { repo, file, lines, page, json } => {
            get(&engine, out, &repo, &file, lines.as_deref(), page, json)?
        }
        Command::Status { repo, json } => status(&engine, out, &repo, json)?,
        Command::Watch { repo, json } => watch(&engine, out, &repo, json)?,
        Command::Repo { action: RepoAction::List { json } } => list_repos(&engine, out, json)?,
        Command::Repo { action: RepoAction::Remove { path, purge, yes } } => {
            remove_repo(&engine, out, &path, purge, yes)?
        }
        Command::Repo { action: RepoAction::Move { from, to } } => move_repo(&engine, out, &from, &to)?,
        Command::Config { json } => show_config(&engine, out, json)?,
        Command::Chat(args) => return chat::run(&engine, out, args),
        Command::Dag { action } => dag::run(&engine, out, action)?,
        Command::Impact(args) => impact::run_impact(&engine, out, args)?,
        Command::Context(args) => context::run(&engine, out, args)?,
        Command::RunTests(args) => return run_tests::run(&engine, out, args),
        Command::Graph { action } => impact::run_graph(&engine, out, action)?,
        Command::Symbols(args) => code::symbols(&engine, out, args)?,
        Command::SymbolsStatus(args) => return code::status(&engine, out, args),
        Command::Ast { action } => code::ast(&engine, out, action)?,
        Command::Serve { repo, http } => serve::serve(engine, repo.resolve()?, http)?,
        Command::Daemon { action: Some(action), .. } => return serve::daemon_action(&engine, out, action),
        Command::Daemon { action: None, http } => serve::daemon(engine, http)?,
        Command::Mcp { repo, auth_token, common } => serve::mcp(engine, repo, auth_token, common)?,
        Command::Bench(args) => bench::run(&engine, out, args)?,
        Command::BenchIndex(args) => bench::index::run(out, args)?,
        Command::BenchContext(args) => bench::context::run(out, args)?,
        Command::BenchHybrid(args) => bench::hybrid::run(out, args)?,
        Command::Check(args) => return check::run(&engine, out, args),
        Command::WebSearch(args) => return web::search(&engine, out, args),
        Command::WebFetch(args) => return web::fetch(&engine, out, args),
        Command::WebRag(args) => return web::rag(&engine, out, args),
        Command::Browser { action } => return web::browser(&engine, out, action),
        Command::LlmList { json } => return llm::list(&engine, out, json),
        Command::LlmSetup(args) => return llm::setup(&engine, out, args),
        // Handled by `run` before the table.
        Command::Tui(_) | Command::Completions { .. } => {}
        Command::BenchServe(args) => bench::serve::run(out, args)?,
        Command::BenchWeb(args) => bench::web::run(out, args, &engine.config().web.scraper)?,
        Command::BenchProfile(args) => bench::profile::run(out, args)?,
        #[cfg(any(debug_assertions, feature = "test-support"))]
        Command::Dev(dev) => run_dev(out, dev)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `docdex get`: a file, a line range or a page of it; a citation pasted from a hit
/// (`src/a.rs:10-20`) reads those lines.
fn get(
    engine: &Engine,
    out: &Out,
    repo: &RepoArg,
    file: &str,
    lines: Option<&str>,
    page: Option<u32>,
    json: bool,
) -> anyhow::Result<()> {
    let path = repo.resolve()?;
    let (file, cited) = split_citation(&path, file);
    let file = repo.user_path(&file);
    let range = lines.map(parse_range).transpose()?.or(cited);
    let content = engine.get_file(&path, &FileRequest { page, ..FileRequest::new(file, range) })?;
    if json {
        out.json(&content)?;
    } else {
        output::print_file(out, &content);
    }
    Ok(())
}

/// `docdex repo list`.
fn list_repos(engine: &Engine, out: &Out, json: bool) -> anyhow::Result<()> {
    let repos = engine.list_repos()?;
    if json {
        out.json(&serde_json::json!({ "schema_version": 1, "repos": repos }))?;
    } else {
        output::print_repos(out, &repos);
    }
    Ok(())
}

/// `docdex repo remove`.
fn remove_repo(engine: &Engine, out: &Out, path: &Path, purge: bool, yes: bool) -> anyhow::Result<()> {
    let (record, held) = engine.remove_repo(path, purge, yes)?;
    let deleted = match (purge, held.any()) {
        (false, _) => " (index kept; --purge deletes it)".to_string(),
        (true, false) => " and deleted its index".to_string(),
        (true, true) => format!(" and deleted its index, {}", held.describe()),
    };
    out.line(&format!("removed {} from the registry{deleted}", output::shown(&record.path)));
    Ok(())
}

/// `docdex repo move`.
fn move_repo(engine: &Engine, out: &Out, from: &Path, to: &Path) -> anyhow::Result<()> {
    let moved = engine.move_repo(from, to)?;
    let carried = match moved.carried.any() {
        true => format!("its index, {}", moved.carried.describe()),
        false => "its index".to_string(),
    };
    let replaced = if moved.replaced { " (replacing the index built there)" } else { "" };
    out.line(&format!(
        "moved {} to {}: {carried}{replaced}; `docdex index --repo {}` brings the index up to date",
        output::shown(&moved.from.path),
        output::shown(&moved.to.root),
        crate::error::shell_path(&moved.to.root)
    ));
    Ok(())
}

/// `docdex completions SHELL`: the script clap_complete writes from the very command tree
/// `docdex` parses with (examples attached), so it completes every command, flag and alias
/// there is. It needs no home: it opens no state.
fn completions(shell: clap_complete::Shell) -> anyhow::Result<ExitCode> {
    use clap::CommandFactory;
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut examples::attach(Cli::command()), "docdex", &mut script);
    output::write_stdout(&script).context("writing the completion script")?;
    Ok(ExitCode::SUCCESS)
}

/// `docdex config`: the config file's path, the state directory and the config, secrets redacted.
fn show_config(engine: &Engine, out: &Out, json: bool) -> anyhow::Result<()> {
    if json {
        out.json(&serde_json::json!({ "path": engine.config_path(), "state_dir": engine.paths().state, "config": engine.config().redacted() }))?;
    } else {
        out.line(&format!("# {}", engine.config_path().display()));
        out.line(&format!("# state: {}", engine.paths().state.display()));
        out.line(&toml::to_string_pretty(&engine.config().redacted()).unwrap_or_default());
    }
    Ok(())
}

/// `docdex dev fake-ollama`: the deterministic fake Ollama API until killed.
#[cfg(any(debug_assertions, feature = "test-support"))]
fn run_dev(out: &Out, dev: DevCommand) -> anyhow::Result<()> {
    let DevCommand::FakeOllama { port, port_file, token_delay_ms, models, embed_dim, openai_only } = dev;
    let mut opts = crate::testing::fake_ollama::FakeOllamaOptions {
        port,
        token_delay_ms,
        embed_dim,
        openai_only,
        ..Default::default()
    };
    if !models.is_empty() {
        opts.models = models;
    }
    let server = crate::testing::fake_ollama::FakeOllama::start(opts).context("starting the fake Ollama")?;
    if let Some(f) = port_file {
        std::fs::write(&f, server.addr().port().to_string()).with_context(|| format!("writing {}", f.display()))?;
    }
    out.line(&format!("fake Ollama listening on {}", server.url()));
    server.wait();
    Ok(())
}

/// `docdex index`: progress on a terminal, the summary, and a failed `--reembed` as an error.
fn index(
    engine: &Engine,
    out: &Out,
    repo: &RepoArg,
    opts: IndexOptions,
    json: bool,
    quiet: bool,
) -> anyhow::Result<()> {
    let path = repo.resolve()?;
    // A root no one should index is refused before "indexing ..." is said.
    engine.check_servable(&engine.resolve_repo(&path)?)?;
    if !json {
        out.note(&format!("indexing {}", display_repo(&path)));
    }
    let bar = progress::Bar::new(!json && !quiet);
    let summary = engine.index(&path, &opts, &bar)?;
    bar.finish();
    if json {
        out.json(&summary)?;
    } else {
        output::print_index_summary(out, &summary);
    }
    // --reembed asked for vectors: a run that made none (no embedder answered) failed
    // at what it was asked, though the text index is up to date.
    let embedded = summary
        .embeddings
        .as_ref()
        .is_some_and(|e| !matches!(e.state, EmbedState::Unavailable | EmbedState::Failed | EmbedState::Off));
    if opts.reembed && !embedded {
        return Err(Error::Upstream(
            "--reembed made no embeddings: no embedder answered (the text index is up to date); `docdex check` says why"
                .into(),
        )
        .into());
    }
    Ok(())
}

/// `docdex search QUERY`: one query, printed or as JSON (library hits under `--libs`).
fn search(engine: &Engine, out: &Out, repo: &RepoArg, req: SearchRequest, json: bool) -> anyhow::Result<()> {
    let path = repo.resolve()?;
    if req.query.trim().is_empty() {
        return Err(Error::BadRequest("empty query: pass words to search for".into()).into());
    }
    let resp = engine.search(&path, &req)?;
    if json {
        out.json(&resp)?;
    } else {
        output::print_search(out, &resp);
        if req.libs {
            libs::print_hits(out, &resp.libs);
        }
    }
    Ok(())
}

/// `docdex status`: the index, and one line for the code pass.
fn status(engine: &Engine, out: &Out, repo: &RepoArg, json: bool) -> anyhow::Result<()> {
    let path = repo.resolve()?;
    let status = engine.status(&path)?;
    if json {
        out.json(&status)?;
    } else {
        output::print_status(out, &status);
        // The code pass's side, one line (`docdex symbols-status` has the detail).
        if let Ok(s) = engine.symbols_status(&path) {
            let state = if s.state == "ready" { String::new() } else { format!(" ({})", s.state.replace('_', " ")) };
            out.line(&format!("symbols     {} in {}{state}", s.symbols, output::count(s.files, "code file")));
        }
    }
    Ok(())
}

/// `docdex watch`: reports each applied change until Ctrl-C or until stdout's reader goes.
fn watch(engine: &Engine, out: &Out, repo: &RepoArg, json: bool) -> anyhow::Result<()> {
    let path = repo.resolve()?;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    install_stop_handler(stop.clone());
    if !json {
        out.note(&format!("watching {} (Ctrl-C to stop)", display_repo(&path)));
    }
    // The catch-up run (a first index can take minutes) draws the index's bar on a terminal.
    let bar = progress::Bar::new(!json);
    let report = |r: WatchReport| {
        if matches!(r, WatchReport::Ready(_)) {
            bar.finish();
        }
        output::print_watch(out, &r, json);
        // `docdex watch --json | head -1`: no one reads on, so the watch ends.
        if output::stdout_closed() {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    };
    let result = engine.watch_with_progress(&path, &stop, &report, &bar);
    bar.finish();
    match result {
        // Ctrl-C during the catch-up run: what it committed stays.
        Err(crate::Error::IndexStopped { .. }) if stop.load(std::sync::atomic::Ordering::SeqCst) => {
            out.note("stopped before the catch-up run finished; the next run goes on from its last commit")
        }
        r => r?,
    }
    Ok(())
}

/// A count flag (`--limit`/`-n`) taking 1 to `MAX`: a value the engine would clamp is a usage
/// error that says the range, not a silently different page.
pub(crate) fn count_up_to<const MAX: usize>(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=MAX).contains(&n) => Ok(n),
        Ok(_) => Err(format!("takes 1 to {MAX}")),
        Err(e) => Err(format!("not a count ({e})")),
    }
}

/// The repository as a line names it: canonical, its control characters shown.
fn display_repo(p: &Path) -> String {
    output::shown(&std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf()))
}

/// Parses `A-B` or `A` into an inclusive line range.
fn parse_range(s: &str) -> anyhow::Result<(u32, u32)> {
    let bad = || Error::BadRequest(format!("bad --lines {s:?}: use A-B, e.g. 10-40, or a single line"));
    let (a, b) = match s.split_once('-') {
        Some((a, b)) => (a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?),
        None => {
            let a = s.trim().parse().map_err(|_| bad())?;
            (a, a)
        }
    };
    Ok((a, b))
}

/// Sets `stop` on SIGINT/SIGTERM so the watcher can release its writer cleanly; a second
/// signal exits at once with status 130.
fn install_stop_handler(stop: std::sync::Arc<std::sync::atomic::AtomicBool>) {
    #[cfg(unix)]
    {
        static STOP: std::sync::OnceLock<std::sync::Arc<std::sync::atomic::AtomicBool>> = std::sync::OnceLock::new();
        let _ = STOP.set(stop);
        extern "C" fn on_signal(_: libc::c_int) {
            if let Some(s) = STOP.get() {
                // A second Ctrl-C while the watch stops (a batch of embedding requests in
                // flight) ends the process at once, as `docdex serve` does: index writes are
                // transactions and the writer lock is an OS lock.
                if s.swap(true, std::sync::atomic::Ordering::SeqCst) {
                    // SAFETY: `_exit` is async-signal-safe.
                    unsafe { libc::_exit(130) };
                }
            }
        }
        // SAFETY: the handler only performs an atomic swap and `_exit`, both async-signal-safe.
        unsafe {
            libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
            libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        }
    }
    #[cfg(not(unix))]
    let _ = stop;
}
