//! The engine's typed errors. Every variant's message says what went wrong and,
//! where it can, what to run next; [`Error::code`] gives the stable code the
//! CLI's `--json` errors, the HTTP error contract and MCP tool errors share.
//! Surfaces add context with `anyhow` (printed with `{:#}` so the chain shows).

use std::path::PathBuf;

/// How much of a caller's value an error message quotes: enough to recognise it.
pub const QUOTED_CHARS: usize = 200;

/// A caller's value as an error message quotes it: `{:?}` of its first [`QUOTED_CHARS`]
/// characters, then `… (N bytes)` when it is longer, so a 1 MB value does not come back in a
/// 1 MB error (or fill a log line).
pub fn quoted(value: &str) -> String {
    match value.char_indices().nth(QUOTED_CHARS) {
        None => format!("{value:?}"),
        Some((cut, _)) => format!("{:?}… ({} bytes)", &value[..cut], value.len()),
    }
}

/// A caller's JSON value as an error message names it: `the string "5"`, `the number -1`,
/// `a list`, `an object` (the string [`quoted`], so a long one stays short).
pub fn described(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::String(s) => format!("the string {}", quoted(s)),
        Value::Number(n) => format!("the number {n}"),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".to_string(),
        Value::Array(_) => "a list".to_string(),
        Value::Object(_) => "an object".to_string(),
    }
}

/// `value` as one word of a POSIX shell command a message tells the user to run (`docdex index
/// --repo PATH`): unchanged when it holds only characters no shell treats specially, else in
/// single quotes (each `'` written `'\''`), so a path with a space, a quote or a `$` pastes
/// as the path it is.
pub fn shell_word(value: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./,:@%+=".contains(c);
    if !value.is_empty() && value.chars().all(plain) {
        return value.to_string();
    }
    format!("'{}'", value.replace('\'', "'\\''"))
}

/// A path as one word of a shell command in a message ([`shell_word`]).
pub fn shell_path(path: &std::path::Path) -> String {
    shell_word(&path.to_string_lossy())
}

/// Crate-wide result alias.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything the engine can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An I/O failure on a specific path.
    #[error("{action} {path}: {os}")]
    Io {
        /// What we were doing ("reading", "creating directory", ...).
        action: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The underlying OS error: in the message, and deliberately not a `source()`, which
        /// `{:#}` (every CLI error) would print a second time.
        os: std::io::Error,
    },
    /// The config file exists but a key holds a bad value or the TOML is malformed.
    #[error("invalid config {path}: {message}")]
    Config {
        /// The config file.
        path: PathBuf,
        /// Which key and why.
        message: String,
    },
    /// The state directory cannot be created or written.
    #[error("state directory {path} is not writable: {reason}. Set DOCDEX_HOME to a writable directory or fix its permissions")]
    StateNotWritable {
        /// The directory.
        path: PathBuf,
        /// The OS reason.
        reason: String,
    },
    /// The repository path does not exist or is not a directory.
    #[error("repository {path} does not exist or is not a directory")]
    RepoNotFound {
        /// The path as given.
        path: PathBuf,
    },
    /// The repository is known but has no index yet.
    #[error("repository {} is not indexed yet; run `docdex index --repo {}` first", .path.display(), shell_path(.path))]
    NotIndexed {
        /// The repository root.
        path: PathBuf,
    },
    /// The repository has no index yet, and a first index run is under way in another process
    /// or ended before its first commit: `detail` says which (and what to run), where
    /// [`Error::NotIndexed`] told the user to start the run that was already going.
    #[error("repository {} is not indexed yet: {detail}", .path.display())]
    FirstIndexPending {
        /// The repository root.
        path: PathBuf,
        /// The run's state: its pid and progress, or that it was interrupted, and what to do.
        detail: String,
    },
    /// The repository is not in the registry (for remove and similar).
    #[error("repository {path} is not registered with docdex; `docdex repo list` shows the known ones")]
    UnknownRepo {
        /// The path, made absolute.
        path: PathBuf,
    },
    /// A path given by the user resolves outside the repository.
    #[error("{path} is outside the repository {repo}; docdex reads, searches and serves only what is inside it")]
    OutsideRepo {
        /// The path as given.
        path: String,
        /// The repository root.
        repo: PathBuf,
    },
    /// A file inside the repository that docdex does not index, and so does not serve either:
    /// hidden (`.env`, `.git/config`), ignored (`.gitignore`, `.docdexignore`, `[index]
    /// exclude`) or over the size limit. Agents forward what they read to remote models, and
    /// such files are where secrets live.
    #[error("{path} is {reason}, so docdex neither indexes nor serves it{hint}")]
    NotServed {
        /// The path as given.
        path: String,
        /// Why ("hidden or ignored by .gitignore / .docdexignore / [index] exclude", "12.3 MB, over ...").
        reason: String,
        /// What to do, starting with "; " (or empty).
        hint: String,
    },
    /// A path under a registered source (`//name/...`, or an absolute path inside it) resolves
    /// outside that source's folder: the same refusal as [`Error::OutsideRepo`], naming the
    /// source, since the repository is not what the path escaped.
    #[error("{path} is outside the registered source {source_name} ({root}); docdex reads only what is inside it")]
    OutsideSource {
        /// The path as given.
        path: String,
        /// The source's name (`docdex sources`).
        source_name: String,
        /// The source's folder.
        root: PathBuf,
    },
    /// A registered source's file or folder (`//notes/pool.md`, or an absolute path inside a
    /// source) given to what reads only the repository's own code: symbols, impact and
    /// run-tests. Sources are indexed as text only (not parsed into the symbol store or the
    /// import graph, a documented decision); "outside the repository" alone left a reader
    /// holding the path a search hit had just given with no word of why.
    #[error("{path} lies in the registered source {source_name}, and sources are indexed as text only: search and get/open read their files, while symbols, AST queries, impact and run-tests take only the repository's own files")]
    SourceTextOnly {
        /// The path as given.
        path: String,
        /// The source's name (`docdex sources`).
        source_name: String,
    },
    /// `run-tests --affected` on a repository with no index: the tests a change reaches are
    /// found through the index's import graph. A run without it needs no index (the command
    /// line ran one; MCP refused it), so the message offers that too.
    #[error("--affected (`affected`) finds the tests a change reaches through the index's import graph, and {} is not indexed yet: index it first (`docdex index --repo {}`, or the `docdex_index` tool), or run the tests without it (the whole suite or a target), which needs no index", .path.display(), shell_path(.path))]
    AffectedNeedsIndex {
        /// The repository root.
        path: PathBuf,
    },
    /// The request itself is wrong (a bad range, an empty query, a binary file asked for as
    /// text); the message says how to fix it.
    #[error("{0}")]
    BadRequest(String),
    /// A directory that must not be served as a repository (`/`, the home directory itself, a
    /// system directory).
    #[error("refusing to index or serve {path} as a repository: {reason}; name the repository's own directory")]
    UnsafeRoot {
        /// The directory.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A folder of an already registered repository asked to be indexed as a repository of its
    /// own: its files would sit in two indexes. A folder that is its own git top-level (a
    /// submodule, a nested clone) is a repository and is not refused.
    #[error("{} lies inside the repository {}, which already indexes it; to search only that folder, filter by its path: `--path {prefix}/` on the command line, alt+p in the workbench", .path.display(), .repo.display())]
    InsideRepo {
        /// The folder asked for.
        path: PathBuf,
        /// The registered repository around it.
        repo: PathBuf,
        /// The folder relative to `repo`.
        prefix: String,
    },
    /// Something inside docdex broke (a lock poisoned by a panic elsewhere, a runtime that
    /// did not start): not the caller's fault, and worth reporting.
    #[error("internal error: {0} (a bug in docdex; the log has the details)")]
    Internal(String),
    /// Another process holds the index writer lock for this repo.
    #[error("another docdex process (pid {pid}) is writing the index of {repo}; it keeps the index up to date, so search it directly or stop that process first")]
    IndexBusy {
        /// The repository root.
        repo: PathBuf,
        /// The holder's pid, when known (0 otherwise).
        pid: u32,
    },
    /// `docdex index --reembed` while a keeper (`docdex serve`, `daemon`, `watch`, the
    /// workbench) holds the writer: the keeper embeds with the `[llm]` settings it started
    /// with and never re-embeds, and a second process writing the vectors beside it would
    /// break the single writer, so the re-embed waits for the keeper to stop.
    #[error(
        "--reembed needs the index writer of {}, which a running docdex process (pid {pid}: a `docdex serve`, `daemon`, `watch` or workbench) holds; it embeds with the [llm] settings it started with and does not re-embed. Stop it (Ctrl-C), run `docdex index --repo {} --reembed`, then start it again",
        repo.display(),
        shell_path(repo)
    )]
    ReembedWhileWatched {
        /// The repository root.
        repo: PathBuf,
        /// The watcher's pid.
        pid: u32,
    },
    /// `docdex graph rebuild` while another process holds the repo's index writer lock: the
    /// rebuild reads the manifest and writes the graph and `symbols.db`'s meta under that lock,
    /// so a run half-way through its update never hands it a half-updated state. A one-off
    /// `docdex index` is waited for first; a keeper (serve, daemon, watch, the workbench)
    /// holds the lock for as long as it runs, so `advice` says to stop it.
    #[error("the impact graph of {} cannot be rebuilt now: another docdex process (pid {pid}) holds its index writer lock{advice}", repo.display())]
    GraphBusy {
        /// The repository root.
        repo: PathBuf,
        /// The holder's pid, when known (0 otherwise).
        pid: u32,
        /// The rest of the sentence: what holds the lock and what to do (stop the keeper, or run
        /// again once the run is done).
        advice: String,
    },
    /// An index run stopped early because its process is shutting down; what it committed
    /// stays, and the next run goes on from there.
    #[error("the index run of {repo} stopped for shutdown; the next run goes on from its last commit")]
    IndexStopped {
        /// The repository root.
        repo: PathBuf,
    },
    /// The caller stopped the request (its `CancelToken` tripped: a client that hung up, an
    /// MCP `notifications/cancelled`) while it waited on a model server or ran a long walk,
    /// audit, index run or test run; nothing is wrong with the server or the repository.
    #[error("the request was stopped by its caller before it finished")]
    Cancelled,
    /// The on-disk index could not be opened or written.
    #[error("index error in {path}: {message}. If it persists, run `docdex index --rebuild` in its repository")]
    Index {
        /// The index directory.
        path: PathBuf,
        /// Tantivy's message.
        message: String,
    },
    /// The live index is damaged (a checksum mismatch, a file that does not open, a read that
    /// failed). Nothing is repaired in place: `--repair` builds a new generation beside it.
    #[error("the index of {repo} is damaged ({detail}); run `docdex index --repo {repo} --repair` to rebuild it")]
    IndexDamaged {
        /// The repository root.
        repo: PathBuf,
        /// What was found.
        detail: String,
    },
    /// The disk filled up while indexing. The run was abandoned; `kept` names the generation
    /// that stays live and searchable.
    #[error("{}", disk_full_message(repo, state_dir, detail, *kept))]
    DiskFull {
        /// The repository root.
        repo: PathBuf,
        /// Where the index lives (the filesystem that is full).
        state_dir: PathBuf,
        /// The underlying error.
        detail: String,
        /// The generation that stays searchable, if there was one.
        kept: Option<u64>,
    },
    /// Watching the filesystem failed.
    #[error("file watcher: {0}")]
    Watch(String),
    /// A derived index (symbols, AST, embeddings) was built by another parser or model
    /// version and must be rebuilt before it can answer.
    #[error("{0}")]
    StaleIndex(String),
    /// The model server accepted the connection but did not answer in time: retrying would
    /// only multiply the wait, so the caller gives up on it for this request.
    #[error("the {provider} server at {url} did not answer within {waited} (`[llm] {setting}`): it may be overloaded or stuck. Check it (for Ollama: `ollama ps`), raise the timeout for a slow machine, or point `[llm] base_url` at another server")]
    LlmTimeout {
        /// `ollama` or `openai`.
        provider: String,
        /// The base URL tried.
        url: String,
        /// How long it was given (`120s`, `2000 ms`).
        waited: String,
        /// The setting that bounds the wait: `request_timeout_secs` for a request, or
        /// `connect_timeout_ms` for the liveness check before one.
        setting: &'static str,
    },
    /// The LLM or embedding server cannot be reached.
    #[error("cannot reach the {provider} server at {url}: {reason}. Start it (for Ollama: `ollama serve`), or point `[llm] base_url` at a running server; `docdex check` diagnoses the setup")]
    LlmUnreachable {
        /// `ollama` or `openai`.
        provider: String,
        /// The base URL tried.
        url: String,
        /// What the connection attempt said.
        reason: String,
    },
    /// The server is up but does not have the model.
    #[error("{}", model_not_found_text(provider, model, url, advice))]
    ModelNotFound {
        /// `ollama` or `openai`: only Ollama pulls a model on request.
        provider: String,
        /// The model asked for.
        model: String,
        /// The server.
        url: String,
        /// What to do, true of this name and server (`engine::llm::advice`): pull it, create it
        /// from its Modelfile, or pick one of the installed models it names.
        advice: String,
    },
    /// The model exists but cannot chat (an embedding model such as `all-minilm`, or a
    /// llama.cpp server started with `--embeddings`): asking again cannot help, so it is bad
    /// input (HTTP 400), not an unavailable server.
    #[error("{}", model_cannot_chat_text(provider, model, url, said))]
    ModelCannotChat {
        /// `ollama` or `openai`: the advice differs.
        provider: String,
        /// The model asked for.
        model: String,
        /// The server.
        url: String,
        /// The server's own message (llama.cpp's says how to restart it).
        said: String,
    },
    /// Another service answered with an error.
    #[error("{0}")]
    Upstream(String),
    /// The prompt is longer than the context window the model runs with, as the model server
    /// said or as the chat's budget found before asking it: asking again cannot help (the
    /// message says which setting fits the prompt to the window).
    #[error("{0}")]
    ContextOverflow(String),
    /// Something named by the request does not exist (a session, a memory, a file in the graph).
    #[error("{0}")]
    NotFound(String),
    /// The agent a request names is not in profile memory (the message names the agents and the
    /// one it likely mistypes). A code of its own, `unknown_agent`, so the gatekeeper hook and
    /// clients tell it from any other not-found (a missing route, a session) without reading
    /// the message.
    #[error("{0}")]
    UnknownAgent(String),
    /// A per-repo SQLite database (vectors, memory) could not be opened, read or written.
    #[error("database {path}: {message}")]
    Database {
        /// The database file.
        path: PathBuf,
        /// SQLite's message.
        message: String,
    },
    /// Stored vectors and the configured embedder disagree (model or dimension).
    #[error("{0}")]
    EmbeddingMismatch(String),
    /// The request meets something stored that it would repeat or overwrite unseen (a
    /// preference the agent already has, one changed since the caller read it); the message
    /// names it and what to do.
    #[error("{0}")]
    Conflict(String),
    /// JSON (de)serialization of a state file failed.
    #[error("corrupt state file {path}: {message}")]
    CorruptState {
        /// The file.
        path: PathBuf,
        /// What serde said.
        message: String,
    },
}

fn disk_full_message(repo: &std::path::Path, state_dir: &std::path::Path, detail: &str, kept: Option<u64>) -> String {
    let kept = match kept {
        Some(g) => format!("nothing was lost: generation {g} stays live and searchable"),
        None => "the partial first index is kept and the next run continues it".to_string(),
    };
    format!(
        "disk full while indexing {} ({detail}); {kept}. Free space on the filesystem of {} and run `docdex index --repo {}` again",
        repo.display(),
        state_dir.display(),
        repo.display()
    )
}

impl Error {
    /// True when the failure is a full disk or an exhausted quota, wherever it surfaced (an OS
    /// error, Tantivy's or SQLite's message).
    pub fn is_disk_full(&self) -> bool {
        fn io_full(e: &std::io::Error) -> bool {
            matches!(e.kind(), std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded)
                || matches!(e.raw_os_error(), Some(28) | Some(122))
        }
        let text = |m: &str| {
            m.contains("No space left on device")
                || m.contains("os error 28")
                || m.contains("Disk quota exceeded")
                || m.contains("database or disk is full")
        };
        match self {
            Error::DiskFull { .. } => true,
            Error::Io { os, .. } => io_full(os) || text(&os.to_string()),
            Error::Index { message, .. } | Error::Database { message, .. } | Error::CorruptState { message, .. } => {
                text(message)
            }
            Error::StateNotWritable { reason, .. } => text(reason),
            _ => false,
        }
    }

    /// Builds an [`Error::Io`] for `path`.
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { action, path: path.into(), os: source }
    }

    /// A lock another thread poisoned by panicking while holding it.
    pub fn poisoned(what: &str) -> Self {
        Error::Internal(format!("{what} is unusable after a panic in another thread"))
    }

    /// A short machine-readable code, shared by the CLI's JSON errors, the HTTP error
    /// contract and MCP tool errors.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Io { .. } => "io_error",
            Error::Config { .. } => "invalid_config",
            Error::StateNotWritable { .. } => "state_not_writable",
            Error::RepoNotFound { .. } | Error::UnknownRepo { .. } => "unknown_repo",
            Error::NotIndexed { .. } | Error::FirstIndexPending { .. } | Error::AffectedNeedsIndex { .. } => {
                "not_indexed"
            }
            Error::OutsideRepo { .. } | Error::OutsideSource { .. } | Error::SourceTextOnly { .. } => {
                "path_outside_repo"
            }
            Error::NotServed { .. } => "path_not_served",
            Error::BadRequest(_) | Error::InsideRepo { .. } => "bad_request",
            Error::UnsafeRoot { .. } => "forbidden_repo",
            Error::Internal(_) => "internal",
            Error::IndexBusy { .. } | Error::ReembedWhileWatched { .. } | Error::GraphBusy { .. } => "index_busy",
            Error::IndexStopped { .. } => "index_stopped",
            Error::Cancelled => "cancelled",
            Error::Index { .. } => "index_error",
            Error::IndexDamaged { .. } => "index_damaged",
            Error::DiskFull { .. } => "disk_full",
            Error::Watch(_) => "watch_error",
            Error::CorruptState { .. } => "corrupt_state",
            Error::Database { .. } => "database_error",
            Error::StaleIndex(_) => "stale_index",
            Error::LlmUnreachable { .. } | Error::LlmTimeout { .. } | Error::Upstream(_) => "upstream_unavailable",
            Error::ModelNotFound { .. } => "model_not_found",
            Error::ModelCannotChat { .. } => "model_cannot_chat",
            Error::ContextOverflow(_) => "context_length_exceeded",
            Error::NotFound(_) => "not_found",
            Error::UnknownAgent(_) => "unknown_agent",
            Error::EmbeddingMismatch(_) => "embedding_mismatch",
            Error::Conflict(_) => "conflict",
        }
    }
}

/// A model the server lacks, and the advice for it: Ollama has models installed or pulls
/// them; an OpenAI-compatible server serves what it was started with.
fn model_not_found_text(provider: &str, model: &str, url: &str, advice: &str) -> String {
    if provider == "ollama" {
        format!("model {model} is not available on {url}; {advice}")
    } else {
        format!("model {model} is not served by the {provider} server at {url}; {advice}")
    }
}

/// What to do about a model that cannot chat. Ollama runs any installed model, so another
/// name is the fix; an OpenAI-compatible server may run embeddings only (llama.cpp with
/// `--embeddings`, LM Studio or vLLM with an embedding model loaded), so its own words are kept
/// and a chat model may have to be started there first.
fn model_cannot_chat_text(provider: &str, model: &str, url: &str, said: &str) -> String {
    if provider == "ollama" {
        return format!("model {model} on {url} cannot chat (it is an embedding model); name a chat model (the request's `model`, or `[llm] default_model`): `docdex llm-list` lists the installed ones");
    }
    let said = match said.trim() {
        "" => String::new(),
        s => format!(" (the server said: {s})"),
    };
    format!("model {model} on {url} cannot chat: the {provider} server runs it for embeddings only{said}. Set `[llm] default_model` (or the request's `model`) to a chat model it serves (`docdex llm-list` lists them), or run a chat model there (llama.cpp: a chat model, started without `--embeddings`)")
}

/// Extension to attach a path and action to `std::io::Result`.
pub trait IoContext<T> {
    /// Maps an I/O error into [`Error::Io`] naming `path`.
    fn at(self, action: &'static str, path: &std::path::Path) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, action: &'static str, path: &std::path::Path) -> Result<T> {
        self.map_err(|e| Error::io(action, path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shell_word_pastes_as_the_value_it_stands_for() {
        assert_eq!(shell_word("/home/me/src/docdex-1.2_x"), "/home/me/src/docdex-1.2_x");
        for value in ["/tmp/my repo", "/tmp/it's", "$HOME/x", "a\"b", "~/x", "x;rm -rf y", "`id`", "", "tab\there"] {
            let word = shell_word(value);
            let out = std::process::Command::new("sh").args(["-c", &format!("printf %s {word}")]).output().unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout), value, "{word}");
        }
    }

    #[test]
    fn a_poisoned_lock_is_an_internal_error_not_the_callers() {
        let e = Error::poisoned("the searcher cache");
        assert_eq!(e.code(), "internal");
        assert_eq!(
            e.to_string(),
            "internal error: the searcher cache is unusable after a panic in another thread (a bug in docdex; the log has the details)"
        );
    }
}
