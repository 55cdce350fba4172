//! The web tier's contracts: what `docdex web-search`, `web-fetch`, the HTTP routes, the MCP
//! `docdex_web_research` tool and the waterfall's trace carry.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Version of the web JSON shapes.
pub const WEB_SCHEMA_VERSION: u32 = 1;

/// A discovery query.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct WebSearchRequest {
    /// What to search the web for.
    pub query: String,
    /// Results to return at most (default `[search] max_web_hits`, at most 30).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WebResult {
    /// 1-based rank on the results page (ads and blocked hosts removed).
    pub rank: u32,
    /// The target page (the redirect link decoded).
    pub url: String,
    /// The result's title.
    pub title: String,
    /// The result's snippet.
    pub snippet: String,
    /// The URL as the results page displays it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub display_url: String,
}

/// How a discovery query went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DiscoveryStatus {
    /// Results (possibly none: the page said "no results").
    Ok,
    /// The endpoint answered with a bot challenge ("anomaly") page or kept refusing (429):
    /// nothing is known about the query's results.
    Blocked,
    /// The endpoint could not be reached or answered an error.
    Failed,
}

/// The answer to a discovery query.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct WebSearchResponse {
    /// [`WEB_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The query.
    pub query: String,
    /// How it went.
    pub status: DiscoveryStatus,
    /// The results, best first.
    pub results: Vec<WebResult>,
    /// `primary` or `proxy` (the endpoint that answered), `cache`.
    pub source: String,
    /// From the results cache (`[web] cache_ttl_secs`): no request was made.
    pub cached: bool,
    /// Time spent waiting for the discovery rate limit, in milliseconds.
    pub waited_ms: u64,
    /// Whole call, in milliseconds.
    pub ms: f64,
    /// Results dropped because their host is blocklisted or not allowed.
    pub filtered: u32,
    /// What went wrong or is worth knowing (blocked, backoff, proxy used, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A page fetch.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct WebFetchRequest {
    /// The page (http or https).
    pub url: String,
    /// Skip the cache and fetch again.
    #[serde(default)]
    pub refresh: bool,
    /// The user typed this URL (the command line): loopback and private hosts are allowed.
    /// Never set from the wire.
    #[serde(skip)]
    #[schemars(skip)]
    pub explicit: bool,
}

/// How a page was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FetchVia {
    /// Headless Chromium rendered it.
    Chromium,
    /// A plain HTTP request (no browser available, or `[web.scraper] engine = "http"`).
    Http,
}

/// A fetched page, cleaned: what is cached as JSON under `cache/web/pages/`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WebPage {
    /// The URL asked for.
    pub url: String,
    /// Where the page ended up after redirects.
    pub final_url: String,
    /// The page title.
    pub title: String,
    /// The readable article as Markdown.
    pub markdown: String,
    /// When it was fetched (milliseconds since the Unix epoch).
    pub fetched_at: u64,
    /// SHA-256 of `markdown`, hex.
    pub content_hash: String,
    /// How it was fetched.
    pub via: FetchVia,
    /// HTTP status of the document, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Bytes of raw HTML.
    pub html_bytes: u64,
    /// Readability found an article (false: the whole body's text was kept).
    pub readable: bool,
}

/// The answer to a fetch.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct WebFetchResponse {
    /// [`WEB_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The page.
    pub page: WebPage,
    /// Served from `cache/web` within `[web] cache_ttl_secs`: the network was not touched.
    pub cached: bool,
    /// Time spent waiting for the per-domain delay, in milliseconds.
    pub waited_ms: u64,
    /// Whole call, in milliseconds.
    pub ms: f64,
    /// Where the cache files are (raw HTML and cleaned JSON).
    pub cache_key: String,
    /// Worth knowing (no browser found, so plain HTTP was used; ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Research a question: search, fetch the best pages, keep their best passages. The
/// `docdex_web_research` tool's parameters are this type; its doc comments are what agents read.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct WebResearchRequest {
    /// The question to research on the web, in plain words (e.g. "tokio select cancellation safety").
    pub query: String,
    /// Pages to fetch at most (default `[search] max_web_hits`).
    #[serde(default)]
    pub max_pages: Option<usize>,
    /// Passages kept per page at most (default 3).
    #[serde(default)]
    pub passages_per_page: Option<usize>,
    /// `false` lets the waterfall's gate decide: the web is researched only when the
    /// repository's own search answers the question with a confidence below `[search]
    /// web_trigger_threshold`. Omitted or `true`: always research (asking is the explicit request).
    #[serde(default)]
    pub force_web: Option<bool>,
}

/// Why a research request with `force_web: false` went to the web or stayed local.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WebGate {
    /// The repository search's confidence for the question (0..1).
    pub local_confidence: f64,
    /// `[search] web_trigger_threshold`.
    pub threshold: f64,
    /// The web was researched (local confidence below the threshold).
    pub researched: bool,
}

/// A passage of a fetched page that answers the query best.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WebPassage {
    /// The page's URL (final, after redirects): the citation.
    pub url: String,
    /// The page title.
    pub title: String,
    /// The passage (Markdown).
    pub text: String,
    /// How well it matches the query (0..1, share of the query's weighted terms it contains).
    pub score: f32,
}

/// What happened to one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PageStatus {
    /// Fetched over the network.
    Fetched,
    /// From the cache.
    Cached,
    /// Refused by the URL rules.
    Refused,
    /// The fetch failed or timed out.
    Failed,
}

/// One page of a research run, for the trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PageTrace {
    /// The URL.
    pub url: String,
    /// What happened.
    pub status: PageStatus,
    /// How it was fetched (absent when it was not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<FetchVia>,
    /// Time spent, in milliseconds.
    pub ms: f64,
    /// Time spent waiting for the per-domain delay, in milliseconds.
    pub waited_ms: u64,
    /// Passages kept from it.
    pub passages: u32,
    /// Why it failed or was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The web tier's part of a request: the waterfall trace's `web` and the research answer's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WebTrace {
    /// The query sent to discovery.
    pub query: String,
    /// `ok`, `blocked`, `failed` (absent when discovery did not run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discovery: Option<DiscoveryStatus>,
    /// `primary`, `proxy` or `cache`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub discovery_source: String,
    /// Results the search returned.
    pub results: u32,
    /// Waited for the discovery rate limit, in milliseconds.
    pub discovery_waited_ms: u64,
    /// Discovery time, in milliseconds.
    pub discovery_ms: f64,
    /// Every page tried, in order.
    pub pages: Vec<PageTrace>,
    /// Whole web tier, in milliseconds.
    pub ms: f64,
    /// Problems and fallbacks, in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The answer to a research request.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct WebResearchResponse {
    /// [`WEB_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The question.
    pub query: String,
    /// The search results considered.
    pub results: Vec<WebResult>,
    /// The best passages, best page first.
    pub passages: Vec<WebPassage>,
    /// What happened, step by step.
    pub trace: WebTrace,
    /// The gate's decision, when the request let it decide (`force_web: false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<WebGate>,
}

/// A browser docdex found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BrowserCandidate {
    /// The executable.
    pub path: String,
    /// `chromium`, `chrome`, `edge`, `brave` or `vivaldi`.
    pub kind: String,
    /// `config` (`[web.scraper] chrome_binary_path`) or `path` (found on PATH) or `known`
    /// (a usual install location).
    pub source: String,
    /// This is the one the web tier uses.
    pub selected: bool,
}

/// A browser left running by a process that is gone, found and stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReapedBrowser {
    /// The process that had started it.
    pub owner_pid: u32,
    /// Browser processes stopped.
    pub killed: u32,
}

/// `docdex browser list`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct BrowserList {
    /// [`WEB_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Every browser found, the selected one marked.
    pub browsers: Vec<BrowserCandidate>,
    /// Browsers of live docdex processes (their lock files).
    pub running: Vec<RunningBrowser>,
    /// Leftovers of killed processes stopped by this call.
    pub reaped: Vec<ReapedBrowser>,
    /// What to do when none is found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// A browser a live docdex process runs (from its lock file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunningBrowser {
    /// The docdex process.
    pub owner_pid: u32,
    /// The browser's main process.
    pub pid: u32,
    /// The executable.
    pub binary: String,
    /// When it started (milliseconds since the Unix epoch).
    pub started_at: u64,
}

/// `docdex browser setup`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct BrowserSetupReport {
    /// The browser saved in the config.
    pub path: String,
    /// Its kind.
    pub kind: String,
    /// Its version, from launching it once.
    pub version: String,
    /// The config file written.
    pub config_path: String,
    /// Keys whose value changed.
    pub changed: Vec<String>,
}

/// A browser launched once to prove it works (`docdex check`, `browser setup`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct BrowserProbe {
    /// The executable.
    pub path: String,
    /// The product string the browser reports (`Chrome/126.0...`).
    pub version: String,
    /// Time from spawn to a usable DevTools connection, in milliseconds.
    pub start_ms: f64,
}
