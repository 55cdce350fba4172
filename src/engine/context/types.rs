//! The shapes of a context pack: `docdex context`, `POST /v1/context` and the MCP tool
//! `docdex_context` take a [`ContextRequest`] and answer a [`ContextPack`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The default token budget of a pack.
pub const DEFAULT_CONTEXT_BUDGET: u32 = 8_000;
/// The smallest budget accepted (the pack's heading alone takes a few dozen tokens).
pub const MIN_CONTEXT_BUDGET: u32 = 200;
/// The largest budget accepted.
pub const MAX_CONTEXT_BUDGET: u32 = 200_000;

/// Changed files a pack's JSON lists in `left_out` at most (its note counts them all): a
/// virtualenv made in the repository without a `.gitignore` entry is thousands.
pub const MAX_LEFT_OUT_LISTED: usize = 200;

/// How a surface renders a pack.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ContextFormat {
    /// Markdown, ready to paste into a prompt: a heading per snippet with its citation, role
    /// and reason, the code fenced.
    #[default]
    Md,
    /// The pack as structured JSON.
    Json,
}

/// `docdex context` / `POST /v1/context` / MCP `docdex_context` parameters.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ContextRequest {
    /// The task, in plain language (`make sessions expire after the configured ttl`).
    pub task: String,
    /// A git ref (`main`, `origin/main`, a commit): also include what this branch committed
    /// since it forked from the ref. Uncommitted work (staged, dirty, untracked files) is
    /// always included.
    #[serde(default)]
    pub since: Option<String>,
    /// Most tokens the pack may take, counted with the cl100k_base tokenizer over the rendered
    /// Markdown (default 8000, 200 to 200000).
    #[serde(default)]
    pub budget: Option<u32>,
    /// `md` (default) or `json`: how the pack is returned.
    #[serde(default)]
    pub format: Option<ContextFormat>,
}

/// Why a snippet is in the pack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ContextRole {
    /// Lines changed on the branch, staged, dirty, or an untracked file.
    Changed,
    /// A search hit for the task in code.
    Hit,
    /// The declaration of a symbol a changed region or a hit names.
    Definition,
    /// A file that imports a changed file or a hit (its use of it).
    Importer,
    /// A file a changed file or a hit imports.
    Import,
    /// A test file that exercises a changed file or a hit.
    Test,
    /// A documentation hit for the task (Markdown, text).
    Doc,
}

impl ContextRole {
    /// `changed`, `hit`, ...
    pub fn name(self) -> &'static str {
        match self {
            ContextRole::Changed => "changed",
            ContextRole::Hit => "hit",
            ContextRole::Definition => "definition",
            ContextRole::Importer => "importer",
            ContextRole::Import => "import",
            ContextRole::Test => "test",
            ContextRole::Doc => "doc",
        }
    }
}

/// One snippet of the pack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ContextSnippet {
    /// Repo-relative path.
    pub path: String,
    /// First line (1-based).
    pub line_start: u32,
    /// Last line (inclusive).
    pub line_end: u32,
    /// The file's language.
    pub lang: String,
    /// Why it is here.
    pub role: ContextRole,
    /// Why it was chosen, in words (`modified on the branch since main`, `defines SessionStore,
    /// named by src/auth/login.rs:3-20`); a snippet that several reasons chose lists them all.
    pub reason: String,
    /// Tokens the snippet takes in the Markdown pack (heading, reason and fenced text).
    pub tokens: u32,
    /// True when the snippet was cut short to fit the budget.
    pub trimmed: bool,
    /// The lines.
    pub text: String,
}

/// Where a changed file's change sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChangeState {
    /// Committed on this branch since `since`.
    Committed,
    /// In the index (staged).
    Staged,
    /// Edited in the working tree, not staged.
    Dirty,
    /// A new file git does not track (and does not ignore).
    Untracked,
}

/// A changed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ChangedFile {
    /// Repo-relative path.
    pub path: String,
    /// `added`, `modified`, `deleted` or `renamed`, against the base.
    pub change: String,
    /// Where the change is: committed, staged, dirty, untracked (several at once is common).
    pub states: Vec<ChangeState>,
    /// The path a renamed file had (it said `renamed` and not from where, tour35 F5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
}

/// A changed file left out of the pack because docdex does not serve it (the index would not
/// take it), and the reason that applies to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LeftOutFile {
    /// Repo-relative path.
    pub path: String,
    /// Why: `symbolic link (never followed)`, `untracked binary`, or the size limit with the
    /// file's size (`...: 14.3 MB, over the 10.0 MB limit`).
    pub reason: String,
}

/// A candidate left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OmittedSnippet {
    /// `path:a-b`.
    pub citation: String,
    /// Its role.
    pub role: ContextRole,
    /// Tokens it would have taken.
    pub tokens: u32,
    /// Why it was left out.
    pub reason: String,
}

/// Where the time went (ms), and how much of the files was read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ContextTiming {
    /// The whole call.
    pub total_ms: f64,
    /// Searching for the task.
    pub search_ms: f64,
    /// Asking git for the changes.
    pub git_ms: f64,
    /// Graph, symbol and test expansion.
    pub expand_ms: f64,
    /// Counting tokens and fitting the budget.
    pub fit_ms: f64,
    /// Bytes of repository files taken in as text (decoded, masked, counted): files up to 1 MiB
    /// whole, of larger ones only the lines and excerpt windows shown (each is scanned once
    /// for its line ends, and a range cut to an excerpt for the task's words, in blocks).
    #[serde(default)]
    pub text_bytes: u64,
}

/// A bounded, cited context for a coding agent.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ContextPack {
    /// Version of this shape.
    pub schema_version: u32,
    /// Repo root.
    pub repo: PathBuf,
    /// The task.
    pub task: String,
    /// The ref given as `since`.
    pub since: Option<String>,
    /// The commit changes are measured from (the merge base with `since`, else HEAD).
    pub base: Option<String>,
    /// The budget, tokens.
    pub budget: u32,
    /// Tokens the rendered Markdown pack takes (never more than `budget`).
    pub tokens: u32,
    /// The tokenizer (`cl100k_base`).
    pub tokenizer: String,
    /// The snippets, in the order they are rendered (changed first, then by priority).
    pub snippets: Vec<ContextSnippet>,
    /// Every changed file, whether or not its lines made it into the pack.
    pub changed: Vec<ChangedFile>,
    /// Candidates left out for the budget (or folded into another snippet), in order.
    pub omitted: Vec<OmittedSnippet>,
    /// Changed files left out because docdex does not serve them, each with its reason, in
    /// path order (at most [`MAX_LEFT_OUT_LISTED`]; a note counts them all).
    #[serde(default)]
    pub left_out: Vec<LeftOutFile>,
    /// What was unavailable or skipped (no git, no impact graph, a binary file, ...).
    pub notes: Vec<String>,
    /// Timings.
    pub timing: ContextTiming,
    /// The pack rendered as Markdown (the text `tokens` counts), when the format is `md`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub markdown: Option<String>,
}
