//! The MCP tools: argument types, descriptions, and the dispatch from a tool
//! name to one engine call. Each tool's arguments are the engine's request type
//! flattened beside [`RepoArgs`], so the parameter descriptions agents read are
//! the engine types' doc comments, and a new field is added once, in the engine.
//! Adding a tool is an argument struct, one entry in [`definitions`] and one arm
//! in [`call`].

use super::{tool_error, DocdexMcp};
use crate::engine::protocol::{
    AstQueryRequest, DagTarget, FileRequest, ImpactRequest, MemoryRecallRequest, MemoryStoreRequest,
    ProfileRoleRequest, ProfileSearchRequest, SavePreferenceRequest, SearchRequest, SymbolsRequest,
};
use crate::engine::protocol::{
    ConflictsRequest, ContextFormat, ContextRequest, DiagnosticsRequest, DiscoveryStatus, DuplicatesRequest,
    RunTestsRequest, SimilarRequest, TestsRequest, WebResearchRequest, DEFAULT_LISTED,
};
use crate::engine::Engine;
use crate::server::error::ApiError;
use crate::server::extract::{blocking, confine};
use crate::server::work::{Deadline, WorkGate, DEADLINE_MARGIN};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use rmcp::ErrorData as McpError;
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

/// The repository a tool call works on.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct RepoArgs {
    /// Absolute path of the repository (or its file:// URI or repo id). Optional when the
    /// server serves one repository or the session was initialized with `rootUri`.
    #[serde(default)]
    pub project_root: Option<String>,
    /// Same as `project_root`.
    #[serde(default)]
    pub repo_path: Option<String>,
}

impl RepoArgs {
    fn named(&self) -> Option<String> {
        self.project_root.clone().or_else(|| self.repo_path.clone())
    }
}

/// `docdex_search` arguments: a [`SearchRequest`] and the repository.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchArgs {
    /// The search.
    #[serde(flatten)]
    pub search: SearchRequest,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArgs,
}

/// `docdex_open` arguments: a [`FileRequest`] and the repository.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct OpenArgs {
    /// The lines to read.
    #[serde(flatten)]
    pub file: FileRequest,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArgs,
}

/// `docdex_similar_files` arguments: a [`SimilarRequest`] and the repository.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SimilarArgs {
    /// The file to compare with.
    #[serde(flatten)]
    pub similar: SimilarRequest,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArgs,
}

/// `docdex_server_info` arguments: optionally a repository to include the index status of.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ServerInfoArgs {
    /// The repository (optional).
    #[serde(flatten)]
    pub repo: RepoArgs,
}

/// `docdex_status` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct StatusArgs {
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArgs,
}

/// `docdex_web_research` arguments: a [`WebResearchRequest`] and the repository.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WebResearchArgs {
    /// The research.
    #[serde(flatten)]
    pub research: WebResearchRequest,
    /// The repository whose context the research is for.
    #[serde(flatten)]
    pub repo: RepoArgs,
}

/// `docdex_symbols` arguments: a [`SymbolsRequest`] and the repository.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SymbolsArgs {
    /// The symbol query.
    #[serde(flatten)]
    pub symbols: SymbolsRequest,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArgs,
}

/// `docdex_impact` arguments: an [`ImpactRequest`] and the repository.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ImpactArgs {
    /// The impact query.
    #[serde(flatten)]
    pub impact: ImpactRequest,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArgs,
}

/// `docdex_ast_query` arguments: an [`AstQueryRequest`] and the repository. The CLI
/// (`docdex ast query`) and HTTP (`POST /v1/ast/query`) answered structural questions that MCP
/// could not ask.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AstQueryArgs {
    /// The node kinds and filters.
    #[serde(flatten)]
    pub query: AstQueryRequest,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArgs,
}

/// `docdex_impact_cycles` arguments: the repository alone.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CyclesArgs {
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArgs,
}

/// `docdex_impact_tests` arguments: a [`TestsRequest`] and the repository.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ImpactTestsArgs {
    /// The file and how many of its tests.
    #[serde(flatten)]
    pub tests: TestsRequest,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArgs,
}

/// `docdex_impact_diagnostics` arguments: a [`DiagnosticsRequest`] and the repository.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ImpactDiagnosticsArgs {
    /// Which file's unresolved imports (all without one), and how many.
    #[serde(flatten)]
    pub diagnostics: DiagnosticsRequest,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArgs,
}

/// `docdex_context` arguments: a [`ContextRequest`] and the repository.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ContextArgs {
    /// The task and budget.
    #[serde(flatten)]
    pub context: ContextRequest,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArgs,
}

/// `docdex_audit_duplicates` arguments: a [`DuplicatesRequest`] and the repository.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DuplicatesArgs {
    /// Threshold and limit.
    #[serde(flatten)]
    pub audit: DuplicatesRequest,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArgs,
}

/// `docdex_audit_conflicts` arguments: a [`ConflictsRequest`] and the repository.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ConflictsArgs {
    /// Least similarity, how many, whether the model explains.
    #[serde(flatten)]
    pub audit: ConflictsRequest,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArgs,
}

/// `docdex_run_tests` arguments: a [`RunTestsRequest`] and the repository.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RunTestsArgs {
    /// What to run.
    #[serde(flatten)]
    pub run: RunTestsRequest,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArgs,
}

/// `docdex_index` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct IndexArgs {
    /// Build the index again from scratch (beside the current one, which keeps answering
    /// until the new one is complete). Default: incremental, only changed files are touched.
    #[serde(default)]
    pub rebuild: bool,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArgs,
}

/// `docdex_memory_save` arguments: a [`MemoryStoreRequest`] and the repository.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct MemorySaveArgs {
    /// What to remember.
    #[serde(flatten)]
    pub memory: MemoryStoreRequest,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArgs,
}

/// `docdex_memory_recall` arguments: a [`MemoryRecallRequest`] and the repository.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct MemoryRecallArgs {
    /// What to recall.
    #[serde(flatten)]
    pub recall: MemoryRecallRequest,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArgs,
}

/// `docdex_memory_list` arguments: a page of the repository's memories. MCP could save, recall
/// and delete memories but not list them, and a refused delete told the agent to run
/// `docdex memory list`, a command line it may not have.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct MemoryListArgs {
    /// How many, newest first (default 50, at most 200; a page also stops at about 1 MiB of
    /// content).
    #[serde(default)]
    pub limit: Option<usize>,
    /// The `next_after` of the previous page: list the memories older than that one.
    #[serde(default)]
    pub after: Option<String>,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArgs,
}

/// `docdex_memory_delete` arguments: the memory's id and the repository.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct MemoryDeleteArgs {
    /// The memory's id (from docdex_memory_save or docdex_memory_recall), or its first 6 or
    /// more characters when they name one memory.
    pub id: String,
    /// The repository.
    #[serde(flatten)]
    pub repo: RepoArgs,
}

/// `docdex_get_profile` arguments: the engine's profile search.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GetProfileArgs {
    /// The agent and the topic.
    #[serde(flatten)]
    pub search: ProfileSearchRequest,
    /// Accepted like every tool's (agents pass it everywhere); profile memory is global, so
    /// the answer does not depend on it.
    #[serde(flatten)]
    #[allow(dead_code)]
    pub repo: RepoArgs,
}

/// `docdex_save_preference` arguments: the engine's evolution request, and optionally the
/// repository whose reasoning DAG records the decision.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SavePreferenceArgs {
    /// The agent, the statement and (optionally) its category and rule.
    #[serde(flatten)]
    pub learn: SavePreferenceRequest,
    /// The repository (the session's bound one when absent).
    #[serde(flatten)]
    pub repo: RepoArgs,
}

/// `docdex_set_role` arguments: the engine's role request. An agent could read and teach its
/// preferences over MCP but not say what it does (`docdex profile role` and
/// `POST /v1/profile/role` could).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SetRoleArgs {
    /// The agent and its role.
    #[serde(flatten)]
    pub role: ProfileRoleRequest,
    /// Accepted like every tool's (agents pass it everywhere); profile memory is global, so
    /// the answer does not depend on it.
    #[serde(flatten)]
    #[allow(dead_code)]
    pub repo: RepoArgs,
}

fn schema<T: JsonSchema>() -> Arc<JsonObject> {
    let mut value = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if let Some(o) = value.as_object_mut() {
        o.remove("title");
    }
    Arc::new(value.as_object().cloned().unwrap_or_default())
}

fn read_only() -> ToolAnnotations {
    ToolAnnotations::new().read_only(true).destructive(false).idempotent(true).open_world(false)
}

/// Every tool the server offers.
pub fn definitions() -> Vec<Tool> {
    let mut tools = all_tools();
    for tool in &mut tools {
        narrow_ranges(tool);
    }
    tools
}

/// The numbers a tool refuses outside a range although its type's schema says `minimum: 0`
/// (the types are `u32`/`usize`, checked in the engine): `(tool, argument, minimum, maximum)`.
/// An agent read 0 as allowed and got a `bad_request` (`limit 0 asks for nothing`). Limits the
/// engine takes at 0 (search, similar files, duplicates, profile recall, web pages) stay 0.
const RANGES: &[(&str, &str, u64, Option<u64>)] = &[
    ("docdex_open", "start_line", 1, None),
    ("docdex_open", "end_line", 1, None),
    ("docdex_open", "page", 1, None),
    ("docdex_symbols", "limit", 1, None),
    ("docdex_impact", "depth", 1, Some(64)),
    ("docdex_impact_tests", "limit", 1, None),
    ("docdex_ast_query", "limit", 1, None),
    ("docdex_impact_diagnostics", "limit", 1, None),
    ("docdex_context", "budget", 200, Some(200_000)),
    ("docdex_audit_conflicts", "top", 1, Some(500)),
    ("docdex_audit_duplicates", "limit", 1, Some(10_000)),
    ("docdex_get_profile", "limit", 1, Some(100)),
    ("docdex_run_tests", "timeout_secs", 1, None),
    ("docdex_memory_recall", "limit", 1, None),
    ("docdex_memory_list", "limit", 1, None),
];

/// Writes [`RANGES`] into `tool`'s `inputSchema`.
fn narrow_ranges(tool: &mut Tool) {
    for (_, field, min, max) in RANGES.iter().filter(|(name, ..)| *name == tool.name) {
        let schema = Arc::make_mut(&mut tool.input_schema);
        let Some(prop) = schema.get_mut("properties").and_then(|p| p.get_mut(*field)).and_then(Value::as_object_mut)
        else {
            continue;
        };
        prop.insert("minimum".into(), (*min).into());
        if let Some(max) = max {
            prop.insert("maximum".into(), (*max).into());
        }
    }
}

fn all_tools() -> Vec<Tool> {
    [reading_tools(), code_tools(), graph_tools(), action_tools(), memory_tools(), web_tools()].concat()
}

/// Finding and reading: search, files, similar files, the server and index state.
fn reading_tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "docdex_search",
            "Search the repository's index. Returns ranked hits (path, line range, snippet, score) and a \
             confidence in 0..1 saying how much of the query the results account for. Use plain language \
             or identifiers; follow up with docdex_open on a hit's path and lines. Page with `cursor`.",
            schema::<SearchArgs>(),
        )
        .annotate(read_only()),
        Tool::new(
            "docdex_open",
            "Read lines of a file inside the repository, e.g. the range a docdex_search hit points at. \
             Paths outside the repository are refused.",
            schema::<OpenArgs>(),
        )
        .annotate(read_only()),
        Tool::new(
            "docdex_similar_files",
            "The files most like a given file (by their embeddings when the index has them, else by the \
             file's distinctive terms), best first with a score: related implementations, duplicates, \
             the docs of a module.",
            schema::<SimilarArgs>(),
        )
        .annotate(read_only()),
        Tool::new(
            "docdex_server_info",
            "What this docdex server is: version, mode, uptime, the repositories it serves with their \
             index state, and the tools it offers. Call it first to learn which repositories exist.",
            schema::<ServerInfoArgs>(),
        )
        .annotate(read_only()),
        Tool::new(
            "docdex_status",
            "Index state of the repository: ready / updating, files and chunks indexed, progress of a run \
             in flight, and warnings (skipped files). Use it when search says the index is not ready.",
            schema::<StatusArgs>(),
        )
        .annotate(read_only()),
    ]
}

/// Code intelligence: symbols, syntax trees, context packs, audits.
fn code_tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "docdex_symbols",
            "Find declarations (functions, methods, types, ...) by name, with file, line range and \
             signature, or list a file's outline (pass `file` without `query`). Better than docdex_search \
             when you know or can guess the identifier. Fails with stale_index when the repository must be \
             re-indexed (`docdex index`).",
            schema::<SymbolsArgs>(),
        )
        .annotate(read_only()),
        Tool::new(
            "docdex_ast_query",
            "Structural search over the parsed code: files holding Tree-sitter node kinds (`kinds`, e.g. \
             [\"function_definition\"] in Python, [\"function_item\"] in Rust; `mode` any or all), with counts \
             per kind and sample nodes (line, column, text). `name` keeps declarations of that name, `field` \
             nodes filling that field of their parent (`name`, `body`, `parameters`, ...). An unknown kind \
             or field is refused naming the close ones. Use docdex_symbols for declarations by name alone.",
            schema::<AstQueryArgs>(),
        )
        .annotate(read_only()),
        Tool::new(
            "docdex_context",
            "Before working on a task, get what to read first in one bounded pack: the lines changed on this branch \
             (since `since`, plus staged, dirty and untracked files), the best search hits for the task, the \
             definitions they name, the tests that exercise them and the files importing them. Every snippet has \
             path, lines, role (changed, hit, definition, importer, import, test, doc), why it was chosen and its \
             tokens; the pack fits `budget` tokens (default 8000). Markdown by default; `format: json` for the \
             structured pack.",
            schema::<ContextArgs>(),
        )
        .annotate(read_only()),
        Tool::new(
            "docdex_audit_duplicates",
            "Find text the repository repeats: groups of exact copies and of near copies (similarity at or above \
             `threshold`, default 0.92, by embeddings when the repository has them, else by MinHash of word \
             3-shingles; `method` says which), each chunk with path, lines and score. Use it before editing docs \
             to update every copy, or to find copy-pasted code.",
            schema::<DuplicatesArgs>(),
        )
        .annotate(read_only()),
        Tool::new(
            "docdex_audit_conflicts",
            "Find places where the repository's documentation contradicts itself: pairs of similar statements \
             that give one thing different numbers (units folded), versions or defaults, or where one is negated, \
             each with path, lines, the statements, `kind`, the heuristic's `reason` and an `explanation` (the \
             local chat model's when one answers). Use it before trusting a documented value.",
            schema::<ConflictsArgs>(),
        )
        .annotate(read_only()),
    ]
}

/// The import graph: what depends on a file, its tests, what could not be resolved, cycles.
fn graph_tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "docdex_impact",
            "Before changing a file, see what depends on it: files importing it (inbound), what it imports \
             (outbound) to `depth` hops, and `affected`, every file whose behaviour may change with it. \
             Paths are repo-relative; paths outside the repository are refused.",
            schema::<ImpactArgs>(),
        )
        .annotate(read_only()),
        Tool::new(
            "docdex_impact_cycles",
            "Import cycles of the repository, largest first: each a set of files that import one another \
             (directly or through each other). A change to one file of a cycle can reach every other; \
             docdex_impact marks the files it finds in one.",
            schema::<CyclesArgs>(),
        )
        .annotate(read_only()),
        Tool::new(
            "docdex_impact_tests",
            "Which test files exercise a file, nearest first: those importing it at any depth (with the import \
             chain `via`), those named after it (`test_session.py`, `session_test.go`, `session.test.ts`) and \
             the file itself when it holds tests. Run these after changing the file. `limit` (default 200); \
             `total` and `truncated` say when more exist.",
            schema::<ImpactTestsArgs>(),
        )
        .annotate(read_only()),
        Tool::new(
            "docdex_impact_diagnostics",
            "Imports the impact graph could not resolve, by file (all files, or one `file`): dynamic imports, \
             specifiers no file matches, import-map entries naming no repository file, each with line, code and \
             reason. Edges from these imports are missing, so docdex_impact cannot see through them. `limit` \
             (default 200); `total`, `by_code` and `truncated` count them all.",
            schema::<ImpactDiagnosticsArgs>(),
        )
        .annotate(read_only()),
    ]
}

/// Tools that run work: tests, indexing.
fn action_tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "docdex_run_tests",
            "Run the repository's tests with its own runner (cargo test, pytest, go test, node's runner, npm test, \
             jest, vitest, or `[tests] command`): all of them, a `target` file or directory, or with `affected` only \
             the test files the uncommitted change (and with `since`, the branch's commits) reaches through the \
             import graph. Returns command, status, exit code, duration, passed/failed/skipped, the failing tests \
             with file and line where the runner gives them, and the output tail. Killed at `timeout_secs`. Needs no \
             index (only `affected` does).",
            schema::<RunTestsArgs>(),
        )
        .annotate(ToolAnnotations::new().read_only(false).destructive(false).idempotent(true).open_world(false)),
        Tool::new(
            "docdex_index",
            "Index (or re-index) the repository: incremental by default (new, changed, deleted and renamed files \
             only), `rebuild: true` from scratch. Returns the run's summary (files, chunks, added, updated, deleted, \
             skipped with reasons). Fails with index_busy while another process is writing the index.",
            schema::<IndexArgs>(),
        )
        .annotate(ToolAnnotations::new().read_only(false).destructive(false).idempotent(true).open_world(false)),
    ]
}

/// Repo memory and profile memory.
fn memory_tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "docdex_memory_save",
            "Remember a fact about this repository for later sessions and agents (a convention, a gotcha, \
             a decision). Stored locally per repository; docdex_memory_recall and docdex's chat find it again. \
             Returns the stored memory with its id (the one already stored, with a notice, when the same \
             text was saved before: it is kept once).",
            schema::<MemorySaveArgs>(),
        )
        .annotate(ToolAnnotations::new().read_only(false).destructive(false).idempotent(false).open_world(false)),
        Tool::new(
            "docdex_memory_recall",
            "Recall facts saved with docdex_memory_save that relate to a question, best first with a score. \
             `mode` says whether they matched by meaning (vector) or by shared words (text).",
            schema::<MemoryRecallArgs>(),
        )
        .annotate(read_only()),
        Tool::new(
            "docdex_memory_list",
            "List the facts saved for this repository, newest first, with their ids (to check what later \
             sessions will be told, or find one to forget with docdex_memory_delete). `limit` (default 50, \
             at most 200); `next_after` pages on (pass it as `after`); `total` counts them all.",
            schema::<MemoryListArgs>(),
        )
        .annotate(read_only()),
        Tool::new(
            "docdex_memory_delete",
            "Forget a fact saved with docdex_memory_save that is wrong or outdated, by its id (from save or \
             recall) or its first 6+ characters: recall and docdex's chat stop using it. Answers the id \
             forgotten; not_found for an id this repository does not have.",
            schema::<MemoryDeleteArgs>(),
        )
        .annotate(ToolAnnotations::new().read_only(false).destructive(true).idempotent(true).open_world(false)),
        Tool::new(
            "docdex_get_profile",
            "Before writing code, retrieve how this agent (and the team) wants it written: the preferences \
             closest to your task (style, tooling, constraints, workflow), each with a similarity score. \
             Constraints with a `rule` are enforced at commit time by docdex's pre-commit gatekeeper. \
             `agent_id` defaults to the server's agent.",
            schema::<GetProfileArgs>(),
        )
        .annotate(read_only()),
        Tool::new(
            "docdex_save_preference",
            "Teach the agent a preference from user feedback (\"we use vitest now\", \"stop using any\"). \
             docdex recalls the agent's closest preferences and decides: ADD a new one, UPDATE the one it \
             refines or contradicts (`target_preference_id`), IGNORE noise or what is already known, or \
             REFUSE a harmful or contradicting preference with the reason. Returns the decision and the \
             preference written.",
            schema::<SavePreferenceArgs>(),
        )
        .annotate(ToolAnnotations::new().read_only(false).destructive(false).idempotent(false).open_world(false)),
        Tool::new(
            "docdex_set_role",
            "Say what the agent does (\"Frontend developer\"): its role, one line of plain text, which steers \
             the project map docdex's chat shows it. Creates the agent when new (`agent_note` says so and names \
             an existing agent the id may mistype); replaces its role otherwise (`previous_role`), stamped so the \
             new role wins the next profile sync. `changed: false` when it had this role already. No preference \
             is added. `agent_id` defaults to the server's agent.",
            schema::<SetRoleArgs>(),
        )
        .annotate(ToolAnnotations::new().read_only(false).destructive(false).idempotent(true).open_world(false)),
    ]
}

/// The web tier.
fn web_tools() -> Vec<Tool> {
    vec![Tool::new(
        "docdex_web_research",
        "Research a question on the web: DuckDuckGo discovery (rate-limited, cached), the top pages fetched by \
             headless Chromium (plain HTTP without one) and cleaned to Markdown, and their best passages with their \
             URLs to cite. The trace says what was cached, waited for or failed. Fails when discovery is blocked or \
             the network is unreachable; use docdex_search for local results.",
        schema::<WebResearchArgs>(),
    )
    .annotate(ToolAnnotations::new().read_only(true).open_world(true))]
}

/// A tool error naming the first argument tool `name` does not take, with the ones it does.
/// serde ignores an argument the tool's type does not declare, so a misspelt one changed the
/// answer without a word (`docdex_context {"budjet": 300}` answered the default 8,000-token
/// pack); HTTP bodies are refused the same way (`extract::JsonBody`). The names taken are the
/// tool's `inputSchema` properties, the ones `tools/list` shows. An unknown tool passes (to be
/// refused as one).
fn refuse_unknown_arguments(name: &str, args: &Value) -> Result<(), ApiError> {
    let (Some(taken), Some(given)) = (tool_arguments().get(name), args.as_object()) else {
        return Ok(());
    };
    let Some(unknown) = given.keys().find(|k| !taken.contains(k)) else {
        return Ok(());
    };
    Err(ApiError::bad_request(format!(
        "unknown argument {} for {name}: it takes {} (tools/list describes them)",
        crate::error::quoted(unknown),
        taken.join(", ")
    )))
}

/// Each tool's argument names, from its `inputSchema`, computed once.
fn tool_arguments() -> &'static std::collections::HashMap<String, Vec<String>> {
    static NAMES: std::sync::OnceLock<std::collections::HashMap<String, Vec<String>>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| {
        definitions()
            .into_iter()
            .map(|tool| {
                let schema = Value::Object((*tool.input_schema).clone());
                let mut names = Vec::new();
                crate::server::extract::schema_properties(&schema, &schema, &mut names, 0);
                (tool.name.to_string(), names)
            })
            .collect()
    })
}

/// Each tool's `inputSchema`, computed once.
fn tool_schemas() -> &'static std::collections::HashMap<String, Value> {
    static SCHEMAS: std::sync::OnceLock<std::collections::HashMap<String, Value>> = std::sync::OnceLock::new();
    SCHEMAS.get_or_init(|| {
        definitions()
            .into_iter()
            .map(|tool| (tool.name.to_string(), Value::Object((*tool.input_schema).clone())))
            .collect()
    })
}

/// Tool `name`'s arguments as `T`; a refusal names the argument at fault and what it takes
/// ([`crate::server::arguments::explain`]).
fn parse<T: DeserializeOwned>(name: &str, args: Value) -> Result<T, ApiError> {
    T::deserialize(&args).map_err(|e| {
        let schema = tool_schemas().get(name).cloned().unwrap_or_default();
        ApiError::bad_request(format!(
            "bad arguments for {name}: {}",
            crate::server::arguments::explain(&schema, &args, &e)
        ))
    })
}

fn ok_json<T: Serialize>(value: &T) -> CallToolResult {
    match serde_json::to_string_pretty(value) {
        Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Err(e) => tool_error(&ApiError::bad_request(format!("could not encode the result: {e}"))),
    }
}

/// The shape most tools share: resolve the repository the arguments name, check that
/// `confined` paths stay inside it, run `run` on the blocking pool, and answer its result as
/// JSON or its error explained for that repository.
async fn on_repo<T, F>(server: &DocdexMcp, named: Option<String>, confined: Vec<String>, run: F) -> ToolResult
where
    T: Serialize,
    F: FnOnce(&Engine, &Path) -> crate::Result<T> + Send + 'static,
{
    let server = server.clone();
    let gate = server.app.work().clone();
    gate.run(move || {
        let repo = server.repo_for(named)?;
        for path in &confined {
            confine(&repo, path)?;
        }
        run(server.app.engine(), &repo.root).map(|r| ok_json(&r)).map_err(|e| server.app.explain(&repo, e))
    })
    .await
}

type ToolResult = Result<CallToolResult, ApiError>;

/// Runs tool `name`; repository and argument problems are tool errors, an unknown tool a
/// protocol error.
pub async fn call(server: &DocdexMcp, name: &str, args: Value) -> Result<CallToolResult, McpError> {
    if let Err(e) = refuse_unknown_arguments(name, &args) {
        return Ok(tool_error(&e));
    }
    let result = match name {
        "docdex_search" => search(server, args).await,
        "docdex_open" => open(server, args).await,
        "docdex_status" => status(server, args).await,
        "docdex_similar_files" => similar(server, args).await,
        "docdex_server_info" => server_info(server, args).await,
        "docdex_web_research" => web_research(server, args).await,
        "docdex_symbols" => symbols(server, args).await,
        "docdex_impact" => impact(server, args).await,
        "docdex_impact_tests" => impact_tests(server, args).await,
        "docdex_impact_cycles" => impact_cycles(server, args).await,
        "docdex_ast_query" => ast_query(server, args).await,
        "docdex_impact_diagnostics" => impact_diagnostics(server, args).await,
        "docdex_context" => context(server, args).await,
        "docdex_run_tests" => run_tests(server, args).await,
        "docdex_audit_duplicates" => audit_duplicates(server, args).await,
        "docdex_audit_conflicts" => audit_conflicts(server, args).await,
        "docdex_index" => index(server, args).await,
        "docdex_memory_save" => memory_save(server, args).await,
        "docdex_memory_recall" => memory_recall(server, args).await,
        "docdex_memory_list" => memory_list(server, args).await,
        "docdex_memory_delete" => memory_delete(server, args).await,
        "docdex_get_profile" => get_profile(server, args).await,
        "docdex_save_preference" => save_preference(server, args).await,
        "docdex_set_role" => set_role(server, args).await,
        other => return Err(McpError::invalid_params(unknown_tool(other), None)),
    };
    Ok(result.unwrap_or_else(|e| tool_error(&over_mcp(e))))
}

/// Command lines the engine's refusals advise, and the tool that does the same over MCP (an
/// agent may have no shell; `repo_for` does the same for HTTP's `POST /v1/initialize`).
const MCP_EQUIVALENTS: &[(&str, &str)] = &[
    ("`docdex memory list", "the docdex_memory_list tool"),
    ("`docdex index --repo", "the docdex_index tool"),
    ("`docdex profile add --agent", "docdex_save_preference or docdex_set_role with this agent_id creates it"),
];

/// `e` with the MCP tool beside each command line it advises: a refused memory delete said
/// only `docdex memory list --repo ...`, an unknown agent `docdex profile add ...`, a store
/// to rebuild `docdex index --repo ...`.
fn over_mcp(mut e: ApiError) -> ApiError {
    let tools: Vec<&str> =
        MCP_EQUIVALENTS.iter().filter(|(command, _)| e.message.contains(command)).map(|(_, tool)| *tool).collect();
    if !tools.is_empty() {
        e.message.push_str(&format!(" (over MCP: {})", tools.join("; ")));
    }
    e
}

/// The error for a tool this server does not have: its name cut to a readable length (a 1 MB
/// name came back whole) and the tool it likely means, misspelt or without the `docdex_` prefix
/// (`search`, `docdex_serch`).
fn unknown_tool(name: &str) -> String {
    let names = tool_arguments();
    let prefixed = format!("docdex_{name}");
    let close = names.keys().find(|t| **t == prefixed).or_else(|| {
        (name.len() <= 64)
            .then(|| {
                names
                    .keys()
                    .filter_map(|t| crate::engine::protocol::edit_distance(name, t, 3).map(|d| (d, t)))
                    .min()
                    .map(|(_, t)| t)
            })
            .flatten()
    });
    let hint = close.map(|t| format!("did you mean {t}? ")).unwrap_or_default();
    format!("unknown tool {}; {hint}tools/list names the available ones", crate::error::quoted(name))
}

async fn search(server: &DocdexMcp, args: Value) -> ToolResult {
    let a: SearchArgs = parse("docdex_search", args)?;
    if a.search.query.trim().is_empty() {
        return Err(ApiError::bad_request("empty query: pass words to search for"));
    }
    on_repo(server, a.repo.named(), vec![], move |engine, root| engine.search(root, &a.search)).await
}

async fn open(server: &DocdexMcp, args: Value) -> ToolResult {
    let a: OpenArgs = parse("docdex_open", args)?;
    on_repo(server, a.repo.named(), vec![], move |engine, root| engine.get_file(root, &a.file)).await
}

async fn status(server: &DocdexMcp, args: Value) -> ToolResult {
    let a: StatusArgs = parse("docdex_status", args)?;
    let server = server.clone();
    blocking(move || {
        // No repository named, bound or served by default: what the process serves, as
        // `docdex_server_info` lists it (this was an error saying to pass one).
        let unbound = server.bound.lock().map(|b| b.is_none()).unwrap_or(false);
        if a.repo.named().is_none() && unbound && server.app.default_repo().is_none() {
            let repos: Vec<_> = server.app.mounts().all().iter().map(|m| m.info()).collect();
            return Ok(ok_json(&serde_json::json!({
                "mount": null,
                "index": null,
                "repos": repos,
                "note": "no repository is bound to this session: these are the repositories this process serves; pass `project_root` for one's index status",
            })));
        }
        let repo = server.repo_for(a.repo.named())?;
        let mount = server.app.mounts().get(&repo.fingerprint).map(|m| m.info());
        let index = server.app.engine().status(&repo.root).map_err(|e| server.app.explain(&repo, e))?;
        Ok(ok_json(&serde_json::json!({ "mount": mount, "index": index })))
    })
    .await
}

async fn similar(server: &DocdexMcp, args: Value) -> ToolResult {
    let a: SimilarArgs = parse("docdex_similar_files", args)?;
    on_repo(server, a.repo.named(), vec![], move |engine, root| engine.similar(root, &a.similar)).await
}

async fn server_info(server: &DocdexMcp, args: Value) -> ToolResult {
    let a: ServerInfoArgs = parse("docdex_server_info", if args.is_null() { serde_json::json!({}) } else { args })?;
    let server = server.clone();
    blocking(move || {
        let app = &server.app;
        let repo = match a.repo.named() {
            Some(named) => {
                let repo = server.repo_for(Some(named))?;
                Some(app.engine().status(&repo.root).map_err(|e| app.explain(&repo, e))?)
            }
            None => None,
        };
        let repos: Vec<_> = app.mounts().all().iter().map(|m| m.info()).collect();
        let tools: Vec<String> = definitions().iter().map(|t| t.name.to_string()).collect();
        Ok(ok_json(&serde_json::json!({
            "name": "docdex",
            "version": env!("CARGO_PKG_VERSION"),
            "mode": app.mode(),
            "uptime_ms": app.uptime_ms(),
            "repos": repos,
            "repo": repo,
            "tools": tools,
        })))
    })
    .await
}

async fn symbols(server: &DocdexMcp, args: Value) -> ToolResult {
    let a: SymbolsArgs = parse("docdex_symbols", args)?;
    let confined = a.symbols.file.iter().chain(a.symbols.path_prefix.iter()).cloned().collect();
    on_repo(server, a.repo.named(), confined, move |engine, root| engine.symbols(root, &a.symbols)).await
}

async fn impact(server: &DocdexMcp, args: Value) -> ToolResult {
    let a: ImpactArgs = parse("docdex_impact", args)?;
    let confined = if a.impact.file.starts_with("ext:") { vec![] } else { vec![a.impact.file.clone()] };
    on_repo(server, a.repo.named(), confined, move |engine, root| engine.impact(root, &a.impact)).await
}

async fn impact_cycles(server: &DocdexMcp, args: Value) -> ToolResult {
    let a: CyclesArgs = parse("docdex_impact_cycles", args)?;
    on_repo(server, a.repo.named(), vec![], move |engine, root| engine.graph_cycles(root)).await
}

async fn ast_query(server: &DocdexMcp, args: Value) -> ToolResult {
    let a: AstQueryArgs = parse("docdex_ast_query", args)?;
    let confined = a.query.path_prefix.iter().cloned().collect();
    on_repo(server, a.repo.named(), confined, move |engine, root| engine.ast_query(root, &a.query)).await
}

async fn impact_tests(server: &DocdexMcp, args: Value) -> ToolResult {
    let mut a: ImpactTestsArgs = parse("docdex_impact_tests", args)?;
    a.tests.limit = a.tests.limit.or(Some(DEFAULT_LISTED));
    let confined = if a.tests.file.starts_with("ext:") { vec![] } else { vec![a.tests.file.clone()] };
    on_repo(server, a.repo.named(), confined, move |engine, root| engine.impact_tests(root, &a.tests)).await
}

async fn impact_diagnostics(server: &DocdexMcp, args: Value) -> ToolResult {
    let mut a: ImpactDiagnosticsArgs = parse("docdex_impact_diagnostics", args)?;
    a.diagnostics.limit = a.diagnostics.limit.or(Some(DEFAULT_LISTED));
    let confined = a.diagnostics.file.iter().filter(|f| !f.starts_with("ext:")).cloned().collect();
    on_repo(server, a.repo.named(), confined, move |engine, root| engine.impact_diagnostics(root, &a.diagnostics)).await
}

async fn context(server: &DocdexMcp, args: Value) -> ToolResult {
    let a: ContextArgs = parse("docdex_context", args)?;
    if a.context.task.trim().is_empty() {
        return Err(ApiError::bad_request("empty task: describe what you are about to do in `task`"));
    }
    let server = server.clone();
    let gate = server.app.work().clone();
    gate.run(move || {
        let repo = server.repo_for(a.repo.named())?;
        let pack = server.app.engine().context(&repo.root, &a.context).map_err(|e| server.app.explain(&repo, e))?;
        match (a.context.format.unwrap_or_default(), pack.markdown) {
            (ContextFormat::Md, Some(md)) => Ok(CallToolResult::success(vec![ContentBlock::text(md)])),
            (_, markdown) => Ok(ok_json(&crate::engine::protocol::ContextPack { markdown, ..pack })),
        }
    })
    .await
}

async fn audit_duplicates(server: &DocdexMcp, args: Value) -> ToolResult {
    let a: DuplicatesArgs = parse("docdex_audit_duplicates", args)?;
    on_repo(server, a.repo.named(), vec![], move |engine, root| engine.audit_duplicates(root, &a.audit)).await
}

async fn audit_conflicts(server: &DocdexMcp, args: Value) -> ToolResult {
    let a: ConflictsArgs = parse("docdex_audit_conflicts", args)?;
    on_repo(server, a.repo.named(), vec![], move |engine, root| engine.audit_conflicts(root, &a.audit)).await
}

/// Runs on a repository not indexed yet too, as `docdex run-tests` does: it was refused as
/// `not_indexed`, though only `affected` needs the index (and says so). Its deadline is its own
/// timeout plus a margin ([`run_tests_deadline`]), not the server's.
async fn run_tests(server: &DocdexMcp, args: Value) -> ToolResult {
    let a: RunTestsArgs = parse("docdex_run_tests", args)?;
    let server = server.clone();
    let gate = server.app.work().clone();
    let deadline = run_tests_deadline(&gate, a.run.timeout_secs, server.app.engine().config().tests.timeout_secs);
    gate.run_within(deadline, move || {
        let repo = server.repo_even_unindexed(a.repo.named())?;
        if let Some(target) = &a.run.target {
            confine(&repo, target)?;
        }
        let engine = server.app.engine();
        engine.run_tests(&repo.root, &a.run).map(|r| ok_json(&r)).map_err(|e| server.app.explain(&repo, e))
    })
    .await
}

/// No deadline: see [`crate::server::work::WorkGate::run_without_deadline`] for why.
async fn index(server: &DocdexMcp, args: Value) -> ToolResult {
    let a: IndexArgs = parse("docdex_index", args)?;
    let server = server.clone();
    let gate = server.app.work().clone();
    gate.run_without_deadline(move || {
        // Indexing is how a repository becomes indexed: not being indexed yet is no error here.
        let repo = server.repo_even_unindexed(a.repo.named())?;
        let opts = crate::engine::IndexOptions { rebuild: a.rebuild, ..Default::default() };
        let quiet = |_: &crate::engine::protocol::IndexProgress| {};
        server
            .app
            .engine()
            .index(&repo.root, &opts, &quiet)
            .map(|r| ok_json(&r))
            .map_err(|e| server.app.explain(&repo, e))
    })
    .await
}

/// A test run's deadline: its timeout (the request's `timeout_secs`, else `[tests]
/// timeout_secs`, 600 s by default) plus [`DEADLINE_MARGIN`] to kill its processes and report,
/// never shorter than the server's. The run's own timeout ends it with a result first; the
/// deadline only answers for a run that does not end then.
fn run_tests_deadline(gate: &WorkGate, asked: Option<u64>, configured: u64) -> Deadline {
    let timeout = std::time::Duration::from_secs(asked.unwrap_or(configured).max(1));
    let after = (timeout + DEADLINE_MARGIN).max(gate.deadline().after);
    Deadline {
        after,
        advice:
            "the test run did not end at its own `timeout_secs` (default `[tests] timeout_secs`); give it a longer one",
    }
}

async fn memory_save(server: &DocdexMcp, args: Value) -> ToolResult {
    let a: MemorySaveArgs = parse("docdex_memory_save", args)?;
    on_repo(server, a.repo.named(), vec![], move |engine, root| engine.memory_store(root, &a.memory)).await
}

/// An agent could save a memory but never take back a wrong one, which chat then fed to
/// every answer: the CLI and HTTP could delete, MCP could not.
async fn memory_delete(server: &DocdexMcp, args: Value) -> ToolResult {
    let a: MemoryDeleteArgs = parse("docdex_memory_delete", args)?;
    on_repo(server, a.repo.named(), vec![], move |engine, root| engine.memory_delete(root, &a.id)).await
}

async fn memory_list(server: &DocdexMcp, args: Value) -> ToolResult {
    let a: MemoryListArgs = parse("docdex_memory_list", args)?;
    on_repo(server, a.repo.named(), vec![], move |engine, root| {
        engine.memory_list_page(root, a.limit, a.after.as_deref())
    })
    .await
}

async fn memory_recall(server: &DocdexMcp, args: Value) -> ToolResult {
    let a: MemoryRecallArgs = parse("docdex_memory_recall", args)?;
    on_repo(server, a.repo.named(), vec![], move |engine, root| engine.memory_recall(root, &a.recall)).await
}

async fn get_profile(server: &DocdexMcp, args: Value) -> ToolResult {
    let mut a: GetProfileArgs = parse("docdex_get_profile", args)?;
    if a.search.agent_id.trim().is_empty() {
        a.search.agent_id = server.app.agent(None).unwrap_or_default();
    }
    let server = server.clone();
    let gate = server.app.work().clone();
    gate.run(move || Ok(ok_json(&server.app.engine().profile_search(&a.search)?))).await
}

async fn save_preference(server: &DocdexMcp, args: Value) -> ToolResult {
    let mut a: SavePreferenceArgs = parse("docdex_save_preference", args)?;
    if a.learn.agent_id.trim().is_empty() {
        a.learn.agent_id = server.app.agent(None).unwrap_or_default();
    }
    let server = server.clone();
    let gate = server.app.work().clone();
    gate.run(move || {
        // The decision is logged in the repository's DAG when there is one to log it in.
        let dag = server.repo_for(a.repo.named()).ok().map(|repo| DagTarget { repo, session: None, parent: None });
        Ok(ok_json(&server.app.engine().profile_learn(&a.learn, dag)?))
    })
    .await
}

async fn set_role(server: &DocdexMcp, args: Value) -> ToolResult {
    let mut a: SetRoleArgs = parse("docdex_set_role", args)?;
    if a.role.agent_id.trim().is_empty() {
        a.role.agent_id = server.app.agent(None).unwrap_or_default();
    }
    let server = server.clone();
    let gate = server.app.work().clone();
    gate.run(move || Ok(ok_json(&server.app.engine().profile_set_role(&a.role)?))).await
}

async fn web_research(server: &DocdexMcp, args: Value) -> ToolResult {
    let a: WebResearchArgs = parse("docdex_web_research", args)?;
    if a.research.query.trim().is_empty() {
        return Err(ApiError::bad_request("empty query: pass the question to research"));
    }
    let server = server.clone();
    let gate = server.app.work().clone();
    gate.run(move || {
        // The repository is validated, so a wrong one is reported as such.
        let repo = server.repo_for(a.repo.named())?;
        let r = server.app.engine().web_research_for(&repo.root, &a.research).map_err(|e| server.app.explain(&repo, e))?;
        match r.trace.discovery {
            Some(DiscoveryStatus::Ok) | None => Ok(ok_json(&r)),
            Some(status) => Err(ApiError::new(
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                "upstream_unavailable",
                format!(
                    "web research found nothing for {:?}: discovery {} ({}). Use docdex_search on {} for local results.",
                    r.query,
                    if status == DiscoveryStatus::Blocked { "is blocked" } else { "failed" },
                    r.trace.notes.join("; "),
                    repo.root.display()
                ),
            )),
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each [`RANGES`] entry names an integer argument of its tool (a renamed one would leave
    /// `minimum: 0` again without a word), and `tools/list` shows its range.
    #[test]
    fn every_narrowed_range_names_an_argument_and_is_listed() {
        let tools = definitions();
        for (name, field, min, max) in RANGES {
            let tool = tools.iter().find(|t| t.name == *name).unwrap_or_else(|| panic!("no tool {name}"));
            let prop = &tool.input_schema["properties"][*field];
            assert!(prop.to_string().contains("integer"), "{name}.{field}: {prop}");
            assert_eq!(prop["minimum"], *min, "{name}.{field}");
            assert_eq!(prop.get("maximum").and_then(Value::as_u64), *max, "{name}.{field}");
        }
    }

    /// The properties of `T`'s tool schema, by name.
    fn properties<T: JsonSchema>() -> serde_json::Map<String, Value> {
        schema::<T>().get("properties").and_then(Value::as_object).cloned().unwrap_or_default()
    }

    fn described_alike<Args: JsonSchema, Engine: JsonSchema>() {
        let tool = properties::<Args>();
        let engine = properties::<Engine>();
        assert!(!engine.is_empty());
        for (name, prop) in &engine {
            assert_eq!(tool.get(name), Some(prop), "{name}: the tool's parameter is the engine's field");
        }
        assert!(tool.contains_key("project_root"), "{tool:?}");
        assert_eq!(tool.len(), engine.len() + 2, "only the repository is added: {:?}", tool.keys());
    }

    #[test]
    fn tool_parameters_are_the_engine_requests_plus_the_repository() {
        described_alike::<SearchArgs, SearchRequest>();
        described_alike::<OpenArgs, FileRequest>();
        described_alike::<SymbolsArgs, SymbolsRequest>();
        described_alike::<ImpactArgs, ImpactRequest>();
        described_alike::<ContextArgs, ContextRequest>();
        described_alike::<RunTestsArgs, RunTestsRequest>();
        described_alike::<DuplicatesArgs, DuplicatesRequest>();
        described_alike::<ConflictsArgs, ConflictsRequest>();
        described_alike::<MemorySaveArgs, MemoryStoreRequest>();
        described_alike::<MemoryRecallArgs, MemoryRecallRequest>();
        described_alike::<WebResearchArgs, WebResearchRequest>();
        described_alike::<SetRoleArgs, ProfileRoleRequest>();
        described_alike::<AstQueryArgs, AstQueryRequest>();
        let kind = &properties::<SymbolsArgs>()["kind"]["description"];
        assert!(kind.as_str().is_some_and(|d| d.contains("`variant`")), "{kind}");
        let search = schema::<SearchArgs>();
        assert_eq!(search["required"], serde_json::json!(["query"]), "{search:?}");
    }
}
