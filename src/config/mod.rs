//! Configuration: defaults < `~/.docdex/config.toml` < environment < flags.
//!
//! The file is created with every section and default on first run, so users
//! can see and edit what exists. Unknown keys warn (they are usually typos);
//! bad values are errors that name the key and the file.

pub mod edit;
mod paths;

pub use paths::{home_dir, Paths};

use crate::error::{Error, IoContext, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The whole configuration, one struct per TOML section.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct Config {
    /// `[core]`: state location, logging, global concurrency.
    pub core: CoreConfig,
    /// `[index]`: what the indexer reads and how hard it works.
    pub index: IndexConfig,
    /// `[llm]`: the model provider.
    pub llm: LlmConfig,
    /// `[search]`: ranking and the web-escalation gate.
    pub search: SearchConfig,
    /// `[web]` (with `[web.scraper]`): the web tier.
    pub web: WebConfig,
    /// `[libs]`: library documentation (Tier 1).
    pub libs: LibsConfig,
    /// `[memory]`: repo memory.
    pub memory: MemoryConfig,
    /// `[server]`: HTTP and MCP binding.
    pub server: ServerConfig,
    /// `[tui]`: the terminal workbench.
    pub tui: TuiConfig,
    /// `[code_intelligence]`: import-graph inputs beyond the source itself.
    pub code_intelligence: CodeIntelligenceConfig,
    /// `[tests]`: how `docdex run-tests` runs a repository's tests.
    pub tests: TestsConfig,
    /// `[privacy]`: PII and secret masking.
    pub privacy: PrivacyConfig,
}

/// `[privacy]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct PrivacyConfig {
    /// Mask e-mails, phone numbers, keys, tokens, JWTs, private keys, IBANs and card numbers in
    /// search snippets (agents forward them to remote models); `pii_redacted` says when it did.
    pub redact_snippets: bool,
    /// Refuse a model endpoint that is not on this machine (`[llm] base_url` off loopback)
    /// unless `allow_remote`.
    pub local_only: bool,
    /// Allow a non-loopback model endpoint; what is sent to it is masked first and the chat
    /// trace carries the redaction report.
    pub allow_remote: bool,
}

impl Default for PrivacyConfig {
    fn default() -> Self {
        Self { redact_snippets: true, local_only: true, allow_remote: false }
    }
}

/// `[core]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct CoreConfig {
    /// Where per-repo state lives; empty means `<DOCDEX_HOME>/state`.
    pub global_state_dir: String,
    /// `error`, `warn`, `info`, `debug` or `trace`.
    pub log_level: String,
    /// Upper bound on concurrent web fetches.
    pub max_concurrent_fetches: u32,
}

impl Default for CoreConfig {
    fn default() -> Self {
        Self { global_state_dir: String::new(), log_level: "info".into(), max_concurrent_fetches: 4 }
    }
}

/// `[index]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct IndexConfig {
    /// Files larger than this are skipped with a warning.
    pub max_file_size_bytes: u64,
    /// Indexing threads; 0 means one per core.
    pub threads: u32,
    /// Extra glob patterns to ignore, on top of .gitignore/.ignore/.docdexignore.
    pub exclude: Vec<String>,
    /// Index hidden files and directories (dot-files) too.
    pub include_hidden: bool,
    /// Walk into file systems mounted inside the repository (a bind mount, a volume, a disk).
    /// Off, a mount point is not walked, indexed or served, and is named in status: a bind
    /// mount of `/etc` made `/etc/shadow` part of the repository.
    pub cross_file_systems: bool,
    /// Watcher debounce window in milliseconds (200 to 500).
    pub watch_debounce_ms: u64,
    /// A repository's first index commits once it has read this many bytes, so search answers
    /// over the files read so far while the rest is indexed (later commits come every 256 MB);
    /// a run with more new text than this indexes it all as text before parsing any. 1 B to 1 TiB.
    pub first_commit_bytes: u64,
    /// docdex's own home and state directories ([`Paths::own_dirs`], set by the engine, never
    /// read from a file): a repository that holds them indexes around them.
    #[serde(skip)]
    pub own_dirs: Vec<PathBuf>,
}

impl Default for IndexConfig {
    fn default() -> Self {
        Self {
            max_file_size_bytes: 10 * 1024 * 1024,
            threads: 0,
            exclude: Vec::new(),
            include_hidden: false,
            cross_file_systems: false,
            watch_debounce_ms: 250,
            first_commit_bytes: 32 * 1024 * 1024,
            own_dirs: Vec::new(),
        }
    }
}

/// `[llm]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct LlmConfig {
    /// `ollama` (default) or `openai` (any OpenAI-compatible server).
    pub provider: String,
    /// The provider's base URL.
    pub base_url: String,
    /// The chat model.
    pub default_model: String,
    /// The embedding model.
    pub embedding_model: String,
    /// Cap on generated tokens per answer.
    pub max_answer_tokens: u32,
    /// The context window chat budgets for, in tokens, when the provider does not report the
    /// model's (a smaller window the provider reports wins). Sent to Ollama as `num_ctx`.
    pub context_tokens: u32,
    /// How long to wait for a TCP connection to the server, in milliseconds.
    pub connect_timeout_ms: u64,
    /// Upper bound on one non-streamed request (embeddings, model lists), and on the silence
    /// between two pieces of a streamed answer, in seconds.
    pub request_timeout_secs: u64,
    /// Chunks per embedding request while indexing.
    pub embed_batch_size: u32,
    /// Embedding requests in flight at once while indexing.
    pub embed_concurrency: u32,
}

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            provider: "ollama".into(),
            base_url: "http://127.0.0.1:11434".into(),
            default_model: "phi3.5:3.8b".into(),
            embedding_model: "nomic-embed-text".into(),
            max_answer_tokens: 1024,
            context_tokens: 8192,
            connect_timeout_ms: 2000,
            request_timeout_secs: 120,
            embed_batch_size: 32,
            embed_concurrency: 4,
        }
    }
}

/// `[search]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct SearchConfig {
    /// Local confidence below this escalates to the web tier.
    pub web_trigger_threshold: f64,
    /// Repo hits fed to chat context.
    pub max_repo_hits: u32,
    /// Web hits fed to chat context, 1 to 30 (the default `web-search` limit; chat and
    /// `web-research` read at most 10 pages). `[web] enabled = false` keeps chat off the web.
    pub max_web_hits: u32,
    /// Results per page when `--limit` is not given.
    pub default_limit: u32,
    /// Demote lockfiles, changelogs, generated and minified files unless the query asks for them.
    pub demote_noise_files: bool,
    /// At most this many chunks of one file in a row before others get a turn (diversity).
    pub max_chunks_per_file: u32,
    /// A query that names a symbol ranks the chunk defining it first (weighted by kind).
    pub symbol_ranking_enabled: bool,
    /// Query words matching the names of definitions in a chunk (from its syntax tree) add score.
    pub ast_ranking_enabled: bool,
    /// [`Self::symbol_ranking_enabled`] for the chat waterfall's repo search.
    pub chat_symbol_ranking_enabled: bool,
    /// [`Self::ast_ranking_enabled`] for the chat waterfall's repo search.
    pub chat_ast_ranking_enabled: bool,
    /// Fuse vector results with BM25 when the repo has embeddings and the embedder answers.
    pub hybrid: bool,
    /// How the two rankings are fused: vectors boosting BM25's file scores (the default),
    /// reciprocal rank fusion, or a weighted merge of normalized scores (spec 002 §10.2).
    pub fusion: Fusion,
    /// Weight of the vector (semantic) ranking in the fusion (spec 002 §6.1).
    pub semantic_weight: f64,
    /// Weight of the BM25 (keyword) ranking in the fusion.
    pub keyword_weight: f64,
    /// The RRF constant `k` in `weight / (k + rank)`.
    pub rrf_k: u32,
    /// Rank with the repository's git history too: files that earlier commits with messages
    /// like the query touched are lifted (docs/SEARCH.md, "History as a signal"). Off by
    /// default: a query set built from the same history would read its own answers.
    pub history: bool,
}

impl Default for SearchConfig {
    fn default() -> Self {
        Self {
            web_trigger_threshold: 0.7,
            max_repo_hits: 20,
            max_web_hits: 5,
            default_limit: 10,
            demote_noise_files: true,
            max_chunks_per_file: 2,
            symbol_ranking_enabled: true,
            ast_ranking_enabled: true,
            chat_symbol_ranking_enabled: true,
            chat_ast_ranking_enabled: true,
            hybrid: true,
            fusion: Fusion::Boost,
            semantic_weight: 0.75,
            keyword_weight: 0.25,
            rrf_k: 60,
            history: false,
        }
    }
}

/// `[search] fusion`: how hybrid search combines the BM25 and vector rankings of files.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Fusion {
    /// BM25 ranks and closeness in meaning boosts: a file scores `its BM25 file score / the
    /// best × e^((semantic_weight / keyword_weight) × (closeness − the lowest closeness))`, its
    /// closeness the mean cosine of its two nearest chunks. A small general-purpose embedder
    /// (MiniLM) then reorders close keyword matches without overruling strong ones; rank
    /// fusion let it push weak files into the top ten (measured in docs/SEARCH.md).
    #[default]
    Boost,
    /// Weighted reciprocal rank fusion: `weight / (rrf_k + rank)` per retriever. Uses ranks
    /// only, so it needs no calibration between BM25 scores and cosine similarities; lets a
    /// strong embedder outvote BM25.
    Rrf,
    /// Weighted merge of each retriever's best score per file, normalized to 0..1 within the
    /// query's candidates. Keeps margins: a strong keyword match is not outvoted by a weakly
    /// closer vector, which suits small general-purpose embedding models.
    Weighted,
}

/// `[web]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct WebConfig {
    /// Only `duckduckgo_html` exists.
    pub discovery_provider: String,
    /// User agent for discovery and fetches.
    pub user_agent: String,
    /// DuckDuckGo HTML endpoint.
    pub ddg_base_url: String,
    /// Optional fallback endpoint when the primary is blocked.
    pub ddg_proxy_base_url: String,
    /// Minimum spacing between discovery queries (at least 2000).
    pub min_spacing_ms: u64,
    /// Web cache time-to-live.
    pub cache_ttl_secs: u64,
    /// Domain suffixes never fetched.
    pub blocklist: Vec<String>,
    /// The web tier on or off. Off, chat stays local and the web commands refuse.
    pub enabled: bool,
    /// Hosts (or domain suffixes, or IP addresses) that discovered URLs may point at even when
    /// they are loopback or private-network addresses. URLs given on the command line and the
    /// configured endpoints are allowed anyway; everything else private is refused.
    pub allow_hosts: Vec<String>,
    /// Largest page (or discovery answer) read, in bytes; bigger responses are refused.
    pub max_page_bytes: u64,
    /// `[web.scraper]`.
    pub scraper: ScraperConfig,
}

impl Default for WebConfig {
    fn default() -> Self {
        Self {
            discovery_provider: "duckduckgo_html".into(),
            user_agent: concat!("docdex/", env!("CARGO_PKG_VERSION")).into(),
            ddg_base_url: "https://html.duckduckgo.com/html/".into(),
            ddg_proxy_base_url: String::new(),
            min_spacing_ms: 2000,
            cache_ttl_secs: 7 * 24 * 3600,
            blocklist: Vec::new(),
            enabled: true,
            allow_hosts: Vec::new(),
            max_page_bytes: 5 * 1024 * 1024,
            scraper: ScraperConfig::default(),
        }
    }
}

/// `[web.scraper]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct ScraperConfig {
    /// `chrome` (headless Chrome/Chromium).
    pub engine: String,
    /// Run the browser headless.
    pub headless: bool,
    /// Explicit browser binary; empty means search PATH.
    pub chrome_binary_path: String,
    /// Never downloads a browser here; kept for compatibility with the spec.
    pub auto_install: bool,
    /// `chromium` or `chrome`.
    pub browser_kind: String,
    /// Minimum delay between fetches to one domain (at least 1000).
    pub request_delay_ms: u64,
    /// Page load timeout.
    pub page_load_timeout_secs: u64,
    /// A long-running process (server, workbench) closes its idle browser after this long.
    pub idle_shutdown_secs: u64,
    /// How long a starting browser may take to open its DevTools socket before it is taken for
    /// hung (pages then come over plain HTTP for a minute). Warm, Chromium opens it in under a
    /// second; from a cold disk it first reads some 200 MB of libraries, which took 12 to 16 s
    /// on a VM whose page cache had been dropped (8 s, the old fixed limit, failed those starts).
    pub launch_timeout_secs: u64,
}

impl Default for ScraperConfig {
    fn default() -> Self {
        Self {
            engine: "chrome".into(),
            headless: true,
            chrome_binary_path: String::new(),
            auto_install: false,
            browser_kind: "chromium".into(),
            request_delay_ms: 1000,
            page_load_timeout_secs: 15,
            idle_shutdown_secs: 120,
            launch_timeout_secs: 20,
        }
    }
}

/// `[libs]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct LibsConfig {
    /// Chat searches the repo's libs index (Tier 1) when it has one.
    pub enabled: bool,
    /// `libs fetch` also fetches published docs (docs.rs, npm, PyPI) through the web tier.
    pub fetch_published: bool,
    /// Where the cargo registry's sources are; empty means `$CARGO_HOME`, else `~/.cargo`.
    pub cargo_home: String,
    /// docs.rs (or a mirror).
    pub docs_rs_url: String,
    /// Where crate archives are downloaded (`<url>/<name>/<name>-<version>.crate`, as on
    /// crates.io's static host): the docs of a crate not installed here.
    pub crates_download_url: String,
    /// The npm registry.
    pub npm_registry_url: String,
    /// PyPI (its JSON API is under `/pypi/<name>/<version>/json`).
    pub pypi_url: String,
    /// Dependencies documented at most per repository, 1 to 10,000.
    pub max_packages: u32,
    /// Library passages given to chat per question, 1 to 100 (`enabled = false` gives none).
    pub max_chat_hits: u32,
}

impl Default for LibsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            fetch_published: true,
            cargo_home: String::new(),
            docs_rs_url: "https://docs.rs".into(),
            crates_download_url: "https://static.crates.io/crates".into(),
            npm_registry_url: "https://registry.npmjs.org".into(),
            pypi_url: "https://pypi.org".into(),
            max_packages: 200,
            max_chat_hits: 6,
        }
    }
}

/// `[memory]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct MemoryConfig {
    /// Repo memory on or off.
    pub enabled: bool,
    /// Only `sqlite`.
    pub backend: String,
    /// `[memory.profile]`: global profile (preference) memory.
    pub profile: ProfileConfig,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self { enabled: true, backend: "sqlite".into(), profile: ProfileConfig::default() }
    }
}

/// `[memory.profile]` (spec 001 §4.3): the embedder of profile memory, the agent used when
/// a request names none, and how many preferences one agent keeps.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct ProfileConfig {
    /// The embedding model for preferences; empty means `[llm] embedding_model`. Never the
    /// chat model.
    pub embedding_model: String,
    /// The vector size that model returns; 0 takes whatever it returns on first use (then
    /// pinned in `profile_meta`). A model answering with another size is a clear error.
    pub embedding_dim: u32,
    /// The agent chat, the pre-commit hook and the TUI use when none is named (empty: none;
    /// chat then uses only the shared `team` preferences, the hook every agent's constraints).
    pub default_agent: String,
    /// The most preferences one agent keeps, 1 to 100,000: an add, a learnt preference or an
    /// import past it is refused (an import whole), so no agent's list or recall grows without
    /// bound (an import of 60,000 was accepted and listed as one 10.9 MB answer).
    pub max_preferences_per_agent: u32,
    /// The most agents profile memory keeps, 1 to 100,000: an add, a role or a learnt
    /// preference that would create one more, or an import that would, is refused (an import
    /// whole), so the agents list stays small (60,000 agents of one preference each were one
    /// huge `profile list` answer).
    pub max_agents: u32,
}

/// Agents profile memory keeps by default: one per person, team and tool of a large
/// organisation (the factory holds a few), and a `profile list` answer of at most ~150 KB.
pub const DEFAULT_MAX_AGENTS: u32 = 1_000;

/// Preferences one agent keeps by default: far more than a person writes or a chat teaches
/// (the factory personas hold about ten), few enough to list in 25 pages and recall fast.
pub const DEFAULT_MAX_PREFERENCES_PER_AGENT: u32 = 5_000;

impl Default for ProfileConfig {
    fn default() -> Self {
        Self {
            embedding_model: String::new(),
            embedding_dim: 0,
            default_agent: String::new(),
            max_preferences_per_agent: DEFAULT_MAX_PREFERENCES_PER_AGENT,
            max_agents: DEFAULT_MAX_AGENTS,
        }
    }
}

/// `[server]`.
#[derive(Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct ServerConfig {
    /// HTTP bind address.
    pub http_bind_addr: String,
    /// Serve MCP beside HTTP.
    pub enable_mcp: bool,
    /// Bearer token required when exposed; empty means none (env `DOCDEX_AUTH_TOKEN` wins).
    pub auth_token: String,
    /// Engine calls (searches, lookups, tool calls) a server runs at once; 0 means twice the
    /// cores, at least 4. Requests beyond it wait up to `work_wait_ms`, then get `503 busy`.
    pub max_concurrent_work: usize,
    /// How long a request waits for one of the `max_concurrent_work` slots (milliseconds).
    pub work_wait_ms: u64,
    /// How long one request's engine work may run once it has its slot, 1 to 86,400 seconds:
    /// past it the work is stopped and the request answered `504 deadline_exceeded`. A test
    /// run gets its own `timeout_secs` plus 30 s instead; index runs and chats are not cut.
    pub request_timeout_secs: u64,
    /// Live MCP sessions a server keeps at most, 1 to 128, for streamable HTTP (`/v1/mcp`) and
    /// legacy SSE (`/sse`) each: past it the least recently used session that never sent a
    /// request is ended, and when every one is in use a new one is refused (`503`).
    pub max_mcp_sessions: usize,
    /// Repositories a daemon keeps mounted (each with its watcher and index writer), 1 to
    /// 1024: mounting one more lets go of the least recently used, mounted again when named.
    pub max_repos: usize,
}

impl std::fmt::Debug for ServerConfig {
    /// Never prints the token (logs and panics included).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("http_bind_addr", &self.http_bind_addr)
            .field("enable_mcp", &self.enable_mcp)
            .field("auth_token", &if self.auth_token.is_empty() { "" } else { MASKED_TOKEN })
            .field("max_concurrent_work", &self.max_concurrent_work)
            .field("work_wait_ms", &self.work_wait_ms)
            .field("request_timeout_secs", &self.request_timeout_secs)
            .field("max_mcp_sessions", &self.max_mcp_sessions)
            .field("max_repos", &self.max_repos)
            .finish()
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            http_bind_addr: "127.0.0.1:3210".into(),
            enable_mcp: true,
            auth_token: String::new(),
            max_concurrent_work: 0,
            work_wait_ms: 5_000,
            request_timeout_secs: 120,
            max_mcp_sessions: 128,
            max_repos: 64,
        }
    }
}

/// `[tui]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct TuiConfig {
    /// Theme name: `dark`, `light`, `high-contrast`, or a file in `<DOCDEX_HOME>/themes/`.
    pub theme: String,
    /// Keymap name: `default`, `vim`, or a file in `<DOCDEX_HOME>/keymaps/`.
    pub keymap: String,
    /// Editor command for "open at line"; empty means `$VISUAL`, then `$EDITOR`, then `vi`.
    /// `{file}` and `{line}` placeholders are substituted when present.
    pub editor: String,
    /// Capture the mouse (click to select, wheel to scroll).
    pub mouse: bool,
    /// Quiet time after the last keystroke before search-as-you-type runs.
    pub search_debounce_ms: u64,
}

impl Default for TuiConfig {
    fn default() -> Self {
        Self {
            theme: "dark".into(),
            keymap: "default".into(),
            editor: String::new(),
            mouse: true,
            search_debounce_ms: 120,
        }
    }
}

/// `[code_intelligence]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct CodeIntelligenceConfig {
    /// Add the edges of runtime import traces (`docdex.import_traces.jsonl` at the repo root,
    /// `import_traces.jsonl` in the repo's state directory) to the impact graph.
    pub import_traces_enabled: bool,
    /// The most candidate values of one dynamic import (`require(base + name)` with several
    /// possible bindings) that are resolved into edges.
    pub dynamic_import_scan_limit: u32,
}

impl Default for CodeIntelligenceConfig {
    fn default() -> Self {
        Self { import_traces_enabled: true, dynamic_import_scan_limit: 8 }
    }
}

/// `[tests]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct TestsConfig {
    /// The test command, run by `sh -c` in the repository with the selected test files
    /// appended, or put where it says `{targets}` (each quoted for the shell); empty means
    /// detect the runner (cargo, go, node/npm/jest/vitest, pytest).
    pub command: String,
    /// Seconds before a run is killed (its whole process group), 1 to a week
    /// ([`MAX_TEST_TIMEOUT_SECS`]); there is no "no limit".
    pub timeout_secs: u64,
}

impl Default for TestsConfig {
    fn default() -> Self {
        Self { command: String::new(), timeout_secs: 600 }
    }
}

/// The most indexing threads `[index] threads` may ask for (Tantivy's writer also needs
/// 48 MiB of arena per thread: 64 threads is 3 GiB).
pub const MAX_INDEX_THREADS: u32 = 64;

/// The longest `[tests] timeout_secs`: a week. A run always has a timeout; 0 does not mean
/// "none" (it was made 1 s, so every run longer than a second "timed out").
pub const MAX_TEST_TIMEOUT_SECS: u64 = 7 * 24 * 3600;

/// The most `[search] max_web_hits` takes: `web-search` returns at most 30 results (chat and
/// `web-research` read at most 10 pages of them).
const MAX_WEB_HITS: u64 = 30;

/// What to set instead of `[search] max_web_hits = 0` (it was made 1 silently).
const NO_WEB: &str = "to keep chat off the web, set `[web] enabled = false`";
/// What to set instead of `[libs] max_chat_hits = 0` (it was made 1 silently).
const NO_LIBS: &str = "to keep library docs out of chat, set `[libs] enabled = false`";
/// What to set instead of `[tests] timeout_secs = 0`.
const NO_TIMEOUT: &str = "0 is not \"no limit\" (a run always has a timeout): give the longest a run may take";

/// The `[llm] provider` values docdex knows.
pub const KNOWN_PROVIDERS: &[&str] = &["ollama", "openai"];
const LOG_LEVELS: &[&str] = &["error", "warn", "info", "debug", "trace"];

/// A loaded configuration plus the warnings found while loading it.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    /// The effective configuration (file and environment applied).
    pub config: Config,
    /// The file it came from.
    pub path: PathBuf,
    /// Non-fatal problems: unknown keys, unknown provider, clamped values.
    pub warnings: Vec<String>,
    /// True when this load created the file.
    pub created: bool,
}

impl Config {
    /// Loads `<home>/config.toml`, creating it with defaults when missing, then applies
    /// environment overrides and validates.
    pub fn load_or_create(home: &Path) -> Result<LoadedConfig> {
        let path = home.join("config.toml");
        let created = create_default_file(home, &path)?;
        let text = std::fs::read_to_string(&path).at("reading", &path)?;
        let (mut config, mut warnings) = Self::parse(&text, &path)?;
        if !config.server.auth_token.trim().is_empty() {
            warnings.extend(make_owner_only(&path));
        }
        warnings.extend(config.apply_env(|k| std::env::var(k).ok()));
        config.validate(&path, &mut warnings)?;
        Ok(LoadedConfig { config, path, warnings, created })
    }

    /// Parses TOML text; unknown keys become warnings, bad values errors naming the key.
    pub fn parse(text: &str, path: &Path) -> Result<(Config, Vec<String>)> {
        let value: toml::Table =
            text.parse().map_err(|e: toml::de::Error| Error::Config { path: path.into(), message: e.to_string() })?;
        let defaults = toml::Table::try_from(Config::default())
            .map_err(|e| Error::Config { path: path.into(), message: e.to_string() })?;
        let mut warnings = Vec::new();
        collect_unknown(&value, &defaults, "", path, &mut warnings);
        // From the table already parsed (every command loads the config: a second parse of
        // the text cost a one-shot search about 0.25M instructions). A value the table does
        // not fit is reported from the text, whose errors carry line, column and key.
        match value.try_into::<Config>() {
            Ok(config) => Ok((config, warnings)),
            Err(_) => {
                let config: Config = toml::from_str(text).map_err(|e: toml::de::Error| Error::Config {
                    path: path.into(),
                    message: e.to_string().trim_end().to_string(),
                })?;
                Ok((config, warnings))
            }
        }
    }

    /// Parses and validates the text of a configuration file other than `<home>/config.toml`
    /// (`docdex eval --compare FILE`); the environment is not applied.
    pub fn parse_validated(text: &str, path: &Path) -> Result<(Config, Vec<String>)> {
        let (mut config, mut warnings) = Self::parse(text, path)?;
        config.validate(path, &mut warnings)?;
        Ok((config, warnings))
    }

    /// Applies the spec's environment overrides; returns warnings for values it had to clamp.
    pub fn apply_env(&mut self, var: impl Fn(&str) -> Option<String>) -> Vec<String> {
        let mut warnings = Vec::new();
        if let Some(v) = var("DOCDEX_WEB_BLOCKLIST") {
            self.web.blocklist = v.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
        }
        let mut number = |name: &str, min: u64, slot: &mut u64| {
            if let Some(v) = var(name) {
                match v.trim().parse::<u64>() {
                    Ok(n) if n < min => {
                        warnings.push(format!("{name}={n} is below the minimum {min}; using {min}"));
                        *slot = min;
                    }
                    Ok(n) => *slot = n,
                    Err(_) => warnings.push(format!("{name}={v:?} is not a number; ignored")),
                }
            }
        };
        number("DOCDEX_WEB_MIN_SPACING_MS", 2000, &mut self.web.min_spacing_ms);
        number("DOCDEX_WEB_REQUEST_DELAY_MS", 1000, &mut self.web.scraper.request_delay_ms);
        if let Some(v) = var("DOCDEX_DDG_BASE_URL") {
            self.web.ddg_base_url = v;
        }
        if let Some(v) = var("DOCDEX_DDG_PROXY_BASE_URL") {
            self.web.ddg_proxy_base_url = v;
        }
        if let Some(v) = var("DOCDEX_WEB_ALLOW_HOSTS") {
            self.web.allow_hosts = v.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
        }
        if let Some(v) = var("DOCDEX_WEB_ENABLED") {
            self.web.enabled = truthy(&v);
        }
        if let Some(v) = var("DOCDEX_ENABLE_MCP") {
            self.server.enable_mcp = truthy(&v);
        }
        if let Some(v) = var("DOCDEX_BROWSER_AUTO_INSTALL") {
            self.web.scraper.auto_install = truthy(&v);
        }
        if let Some(v) = var("DOCDEX_AUTH_TOKEN") {
            self.server.auth_token = v;
        }
        if let Some(v) = var("DOCDEX_LOG_LEVEL") {
            self.core.log_level = v;
        }
        if let Some(v) = var("DOCDEX_ENABLE_IMPORT_TRACES") {
            self.code_intelligence.import_traces_enabled = truthy(&v);
        }
        if let Some(v) = var("DOCDEX_DYNAMIC_IMPORT_SCAN_LIMIT") {
            match v.trim().parse::<u32>() {
                Ok(n) if n >= 1 => self.code_intelligence.dynamic_import_scan_limit = n,
                _ => warnings
                    .push(format!("DOCDEX_DYNAMIC_IMPORT_SCAN_LIMIT={v:?} is not a number of at least 1; ignored")),
            }
        }
        for (name, slot) in [
            ("DOCDEX_SYMBOL_RANKING_ENABLED", &mut self.search.symbol_ranking_enabled),
            ("DOCDEX_AST_RANKING_ENABLED", &mut self.search.ast_ranking_enabled),
            ("DOCDEX_CHAT_SYMBOL_RANKING_ENABLED", &mut self.search.chat_symbol_ranking_enabled),
            ("DOCDEX_CHAT_AST_RANKING_ENABLED", &mut self.search.chat_ast_ranking_enabled),
        ] {
            if let Some(v) = var(name) {
                *slot = truthy(&v);
            }
        }
        warnings
    }

    fn validate(&mut self, path: &Path, warnings: &mut Vec<String>) -> Result<()> {
        let bad = |key: &str, why: String| Error::Config { path: path.into(), message: format!("`{key}` {why}") };
        if !(0.0..=1.0).contains(&self.search.web_trigger_threshold) {
            return Err(bad(
                "search.web_trigger_threshold",
                format!("must be between 0 and 1, got {}", self.search.web_trigger_threshold),
            ));
        }
        if self.server.http_bind_addr.parse::<std::net::SocketAddr>().is_err() {
            return Err(bad(
                "server.http_bind_addr",
                format!("must be an address like 127.0.0.1:3210, got {:?}", self.server.http_bind_addr),
            ));
        }
        if !LOG_LEVELS.contains(&self.core.log_level.as_str()) {
            return Err(bad("core.log_level", format!("must be one of {LOG_LEVELS:?}, got {:?}", self.core.log_level)));
        }
        self.check_ranges(path)?;
        if !(200..=500).contains(&self.index.watch_debounce_ms) {
            warnings.push(format!(
                "index.watch_debounce_ms={} is outside 200..=500; clamped",
                self.index.watch_debounce_ms
            ));
            self.index.watch_debounce_ms = self.index.watch_debounce_ms.clamp(200, 500);
        }
        if !KNOWN_PROVIDERS.contains(&self.llm.provider.as_str()) {
            warnings.push(format!(
                "unknown llm.provider {:?} in {} (known: {}); using ollama",
                self.llm.provider,
                path.display(),
                KNOWN_PROVIDERS.join(", ")
            ));
        }
        if !self.search.semantic_weight.is_finite() || !self.search.keyword_weight.is_finite() {
            return Err(bad("search.semantic_weight", "and search.keyword_weight must be finite numbers".into()));
        }
        if self.search.semantic_weight < 0.0 || self.search.keyword_weight < 0.0 {
            return Err(bad("search.semantic_weight", "and search.keyword_weight must not be negative".into()));
        }
        if self.search.semantic_weight + self.search.keyword_weight <= 0.0 {
            return Err(bad("search.semantic_weight", "plus search.keyword_weight must be greater than 0".into()));
        }
        if self.web.min_spacing_ms < 2000 {
            warnings.push("web.min_spacing_ms is below 2000; using 2000".into());
            self.web.min_spacing_ms = 2000;
        }
        if self.web.scraper.page_load_timeout_secs == 0 {
            return Err(bad("web.scraper.page_load_timeout_secs", "must be at least 1".into()));
        }
        if self.web.max_page_bytes < 1024 {
            return Err(bad("web.max_page_bytes", format!("must be at least 1024, got {}", self.web.max_page_bytes)));
        }
        if self.web.scraper.request_delay_ms < 1000 {
            warnings.push("web.scraper.request_delay_ms is below 1000; using 1000".into());
            self.web.scraper.request_delay_ms = 1000;
        }
        Ok(())
    }

    /// Every numeric setting against the range docdex can work with: a value outside it is an
    /// error naming the key, the range and the file, never a run that spawns 100,000 threads or
    /// waits a year, nor a value quietly made another (`[tests] timeout_secs = 0` was a 1 s
    /// timeout). (Settings that were always clamped with a warning stay clamped.)
    fn check_ranges(&self, path: &Path) -> Result<()> {
        for &(key, value, lo, hi, hint) in &self.ranges() {
            if value < lo || value > hi {
                let hint = if hint.is_empty() || value > hi { String::new() } else { format!("; {hint}") };
                return Err(Error::Config {
                    path: path.into(),
                    message: format!("`{key}` must be between {lo} and {hi}, got {value}{hint}"),
                });
            }
        }
        Ok(())
    }

    /// Each numeric key with its value, its allowed range, and what to do instead of a value
    /// below it (a user's likely meaning of 0).
    fn ranges(&self) -> [(&'static str, u64, u64, u64, &'static str); 26] {
        const MIB: u64 = 1024 * 1024;
        let (ix, llm, search) = (&self.index, &self.llm, &self.search);
        [
            ("index.threads", ix.threads.into(), 0, MAX_INDEX_THREADS.into(), ""),
            ("index.max_file_size_bytes", ix.max_file_size_bytes, 1, 1024 * MIB, ""),
            ("index.first_commit_bytes", ix.first_commit_bytes, 1, 1 << 40, ""),
            ("core.max_concurrent_fetches", self.core.max_concurrent_fetches.into(), 1, 64, ""),
            ("llm.max_answer_tokens", llm.max_answer_tokens.into(), 1, 1 << 20, ""),
            ("llm.context_tokens", llm.context_tokens.into(), 1024, 1 << 24, ""),
            ("llm.connect_timeout_ms", llm.connect_timeout_ms, 1, 600_000, ""),
            ("llm.request_timeout_secs", llm.request_timeout_secs, 1, 3600, ""),
            ("llm.embed_batch_size", llm.embed_batch_size.into(), 1, 4096, ""),
            ("llm.embed_concurrency", llm.embed_concurrency.into(), 1, 64, ""),
            ("search.max_repo_hits", search.max_repo_hits.into(), 1, 1000, ""),
            ("search.max_web_hits", search.max_web_hits.into(), 1, MAX_WEB_HITS, NO_WEB),
            ("search.default_limit", search.default_limit.into(), 1, 1000, ""),
            ("search.max_chunks_per_file", search.max_chunks_per_file.into(), 1, 1000, ""),
            ("search.rrf_k", search.rrf_k.into(), 0, 100_000, ""),
            ("web.min_spacing_ms", self.web.min_spacing_ms, 0, 3_600_000, ""),
            ("web.scraper.request_delay_ms", self.web.scraper.request_delay_ms, 0, 3_600_000, ""),
            ("web.scraper.page_load_timeout_secs", self.web.scraper.page_load_timeout_secs, 1, 600, ""),
            ("web.scraper.launch_timeout_secs", self.web.scraper.launch_timeout_secs, 1, 600, ""),
            ("tui.search_debounce_ms", self.tui.search_debounce_ms, 0, 10_000, ""),
            (
                "code_intelligence.dynamic_import_scan_limit",
                self.code_intelligence.dynamic_import_scan_limit.into(),
                1,
                1024,
                "",
            ),
            (
                "memory.profile.max_preferences_per_agent",
                self.memory.profile.max_preferences_per_agent.into(),
                1,
                100_000,
                "",
            ),
            ("memory.profile.max_agents", self.memory.profile.max_agents.into(), 1, 100_000, ""),
            ("libs.max_packages", self.libs.max_packages.into(), 1, 10_000, ""),
            ("libs.max_chat_hits", self.libs.max_chat_hits.into(), 1, 100, NO_LIBS),
            ("tests.timeout_secs", self.tests.timeout_secs, 1, MAX_TEST_TIMEOUT_SECS, NO_TIMEOUT),
        ]
    }

    /// The default file's text: every section and key, with a header.
    pub fn default_file_text() -> String {
        let body = toml::to_string_pretty(&Config::default()).unwrap_or_default();
        format!(
            "# docdex configuration. Every key is shown with its default.\n\
             # Environment overrides: DOCDEX_HOME, DOCDEX_AUTH_TOKEN, DOCDEX_WEB_BLOCKLIST,\n\
             # DOCDEX_WEB_MIN_SPACING_MS, DOCDEX_WEB_REQUEST_DELAY_MS, DOCDEX_DDG_BASE_URL,\n\
             # DOCDEX_DDG_PROXY_BASE_URL, DOCDEX_WEB_ALLOW_HOSTS, DOCDEX_WEB_ENABLED,\n\
             # DOCDEX_ENABLE_MCP, DOCDEX_LOG_LEVEL,\n\
             # DOCDEX_SYMBOL_RANKING_ENABLED, DOCDEX_AST_RANKING_ENABLED,\n\
             # DOCDEX_CHAT_SYMBOL_RANKING_ENABLED, DOCDEX_CHAT_AST_RANKING_ENABLED,\n\
             # DOCDEX_ENABLE_IMPORT_TRACES, DOCDEX_DYNAMIC_IMPORT_SCAN_LIMIT.\n\n{body}"
        )
    }
}

/// Restricts a config file that holds a token to its owner; returns a warning when it had to.
fn make_owner_only(path: &Path) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            let fixed = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & 0o700)).is_ok();
            return Some(if fixed {
                format!(
                    "{} holds auth_token and was readable by others (mode {mode:o}); made it owner-only (600)",
                    path.display()
                )
            } else {
                format!(
                    "{} holds auth_token and is readable by others (mode {mode:o}); run `chmod 600 {}`",
                    path.display(),
                    path.display()
                )
            });
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    None
}

/// What `docdex config` prints for a token: that one is set, never the token.
pub const MASKED_TOKEN: &str = "<set; hidden>";

impl Config {
    /// This configuration with secrets masked, for printing.
    pub fn redacted(&self) -> Config {
        let mut c = self.clone();
        if !c.server.auth_token.is_empty() {
            c.server.auth_token = MASKED_TOKEN.into();
        }
        c
    }
}

fn truthy(v: &str) -> bool {
    matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on")
}

/// Creates the default config atomically; returns true if this call created it.
fn create_default_file(home: &Path, path: &Path) -> Result<bool> {
    if path.exists() {
        return Ok(false);
    }
    crate::engine::fsutil::create_private_dir(home)
        .map_err(|e| Error::StateNotWritable { path: home.into(), reason: e.to_string() })?;
    let tmp = home.join(format!(".config.toml.{}.tmp", std::process::id()));
    // Owner-only: the file is where a token goes.
    crate::engine::fsutil::create_private(&tmp)
        .and_then(|mut f| std::io::Write::write_all(&mut f, Config::default_file_text().as_bytes()))
        .map_err(|e| Error::StateNotWritable { path: home.into(), reason: e.to_string() })?;
    // hard_link fails if the target exists, so a racing process never clobbers a user's file.
    let created = std::fs::hard_link(&tmp, path).is_ok();
    let _ = std::fs::remove_file(&tmp);
    Ok(created)
}

/// Warns about every key in `value` that `defaults` does not have (usually a typo).
fn collect_unknown(value: &toml::Table, defaults: &toml::Table, prefix: &str, path: &Path, warnings: &mut Vec<String>) {
    for (key, v) in value {
        let full = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        match (defaults.get(key), v) {
            (None, _) => warnings.push(format!("unknown key `{full}` in {} (ignored)", path.display())),
            (Some(toml::Value::Table(d)), toml::Value::Table(t)) => collect_unknown(t, d, &full, path, warnings),
            _ => {}
        }
    }
}
