//! The contracts of profile memory: agents, preferences, the requests every surface sends
//! (the CLI's flags, the HTTP bodies, the MCP tools' arguments) and what comes back. These are
//! re-exported by `protocol.rs`; nothing here does any work.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Version of the profile JSON shapes (list, search, export manifest).
pub const PROFILE_SCHEMA_VERSION: u32 = 1;

/// The agent whose preferences every agent follows (the team's shared rules).
pub const TEAM_AGENT: &str = "team";

/// What a preference is for; the category decides how it is used (spec 001 §4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    /// Soft advice in the system prompt ("prefer functional components").
    Style,
    /// Tools and libraries; also steers the project map ("use vitest" finds vitest.config.ts).
    Tooling,
    /// Enforced: a constraint with a machine-checkable `rule` is checked by the pre-commit
    /// gatekeeper; without one it is advice.
    Constraint,
    /// How to work; guides the planning of an answer ("write the test first").
    Workflow,
}

impl Category {
    /// Every category, in display order.
    pub const ALL: [Category; 4] = [Category::Style, Category::Tooling, Category::Constraint, Category::Workflow];

    /// The name as stored and serialized.
    pub fn name(self) -> &'static str {
        match self {
            Category::Style => "style",
            Category::Tooling => "tooling",
            Category::Constraint => "constraint",
            Category::Workflow => "workflow",
        }
    }

    /// Parses a category name, with an error that lists the valid ones.
    pub fn parse(s: &str) -> Result<Category, String> {
        let s = s.trim().to_ascii_lowercase();
        Category::ALL.into_iter().find(|c| c.name() == s).ok_or_else(|| {
            format!("unknown category {s:?}: use style, tooling, constraint or workflow (see docs/PROFILES.md)")
        })
    }

    /// The next category (for "move to the next category").
    pub fn next(self) -> Category {
        let i = Category::ALL.iter().position(|c| *c == self).unwrap_or(0);
        Category::ALL[(i + 1) % Category::ALL.len()]
    }
}

impl std::fmt::Display for Category {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a preference came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PreferenceSource {
    /// Added or edited by hand (`profile add`, the TUI, `/v1/profile/add`).
    Manual,
    /// Written by the evolution pipeline (a statement or a chat turn).
    Evolution,
    /// Merged from a sync manifest that did not say where the row came from.
    Import,
    /// The factory defaults (`defaults.json`).
    Seed,
}

impl PreferenceSource {
    /// The name as stored and serialized.
    pub fn name(self) -> &'static str {
        match self {
            PreferenceSource::Manual => "manual",
            PreferenceSource::Evolution => "evolution",
            PreferenceSource::Import => "import",
            PreferenceSource::Seed => "seed",
        }
    }

    /// Parses a stored name.
    pub fn parse(s: &str) -> Option<PreferenceSource> {
        [PreferenceSource::Manual, PreferenceSource::Evolution, PreferenceSource::Import, PreferenceSource::Seed]
            .into_iter()
            .find(|p| p.name() == s)
    }
}

/// One learned or given preference of an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Preference {
    /// UUID.
    pub id: String,
    /// The agent it belongs to.
    pub agent_id: String,
    /// The preference in plain language.
    pub content: String,
    /// How it is used.
    pub category: Category,
    /// A machine-checkable rule (constraints only; see docs/PROFILES.md for the grammar).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// When it last changed, epoch milliseconds (last write wins on import).
    pub last_updated: i64,
    /// Where it came from.
    pub source: PreferenceSource,
    /// Whether it has a vector (recall by meaning can find it).
    #[serde(default)]
    pub embedded: bool,
}

/// An agent with its preference counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AgentSummary {
    /// The agent id (`mcoda_frontend`).
    pub id: String,
    /// What it does.
    pub role: String,
    /// When it was created, epoch milliseconds.
    pub created_at: i64,
    /// Preferences in all.
    pub preference_count: u64,
    /// Preferences per category.
    pub by_category: BTreeMap<Category, u64>,
}

/// `profile list`: every agent, and one agent's preferences when named.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ProfileListRequest {
    /// Also list this agent's preferences.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// The agent's preferences one page answers: 50 by default, at most 200 (more is cut to
    /// 200 and `note` says so; 0 is refused).
    #[serde(default)]
    pub limit: Option<usize>,
    /// The id of the last preference of the previous page (its `next_after`): this page starts
    /// after it.
    #[serde(default)]
    pub after: Option<String>,
}

/// What profile memory holds.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ProfileListResponse {
    /// [`PROFILE_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Every agent, by id.
    pub agents: Vec<AgentSummary>,
    /// The named agent's preferences by category, newest first within one: one page of them
    /// (`limit`, `after`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preferences: Vec<Preference>,
    /// The database.
    pub db: PathBuf,
    /// With an agent named: how many preferences it holds in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// When more of the agent's preferences follow: the id of the last one answered, to pass
    /// as `after` (`--after`) for the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_after: Option<String>,
    /// The most preferences one agent keeps (`[memory.profile] max_preferences_per_agent`).
    #[serde(default)]
    pub max_per_agent: u64,
    /// What a person should know about this page: that it is one of several and how to get
    /// the next, or that the limit asked for was cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `profile add`: teach an agent a preference directly, bypassing the evolution pipeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProfileAddRequest {
    /// The agent (created when new); empty means the default agent.
    #[serde(default)]
    pub agent_id: String,
    /// How the preference is used; read from its words when absent, as `learn` reads them
    /// ("never", "avoid", "must": constraint; "before", "commit", "review": workflow; a tool's
    /// name: tooling; else style), and the answer's `category_note` says so.
    #[serde(default)]
    pub category: Option<Category>,
    /// The preference in plain language.
    pub content: String,
    /// A machine-checkable rule for a constraint; recognised from common phrasings when absent.
    #[serde(default)]
    pub rule: Option<String>,
    /// The agent's role ("Frontend developer"): a new agent's, or a new role for an existing
    /// one (the answer's `previous_role` says what it replaced).
    #[serde(default)]
    pub role: Option<String>,
}

/// A stored preference and what happened on the way.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ProfileWriteResponse {
    /// The preference as stored.
    pub preference: Preference,
    /// True when the agent did not exist and was created.
    #[serde(default)]
    pub created_agent: bool,
    /// What became of the rule: given, recognised from the text, or advice only.
    pub rule_note: String,
    /// Set when it was stored without a vector, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
    /// Set when the agent was created: "created agent X", with the existing agent the name
    /// most likely mistypes and the undo (HTTP and MCP clients created a typo silently).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_note: Option<String>,
    /// Set when the request's `role` replaced the existing agent's role: the role it had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_role: Option<String>,
    /// Set when the request named no category: the one read from the words, and how to choose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category_note: Option<String>,
}

/// `profile role`: set an agent's role alone, no preference added (`profile add --role` adds one).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ProfileRoleRequest {
    /// The agent (created when new); empty means the default agent.
    #[serde(default)]
    pub agent_id: String,
    /// The role, one line of plain text ("Frontend developer"); it steers the project map.
    pub role: String,
}

/// What `profile role` did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProfileRoleResponse {
    /// The agent.
    pub agent_id: String,
    /// Its role now.
    pub role: String,
    /// False when the agent had this role already (nothing written, its stamp kept).
    pub changed: bool,
    /// The role it replaced, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_role: Option<String>,
    /// When the role was set, epoch ms: the stamp a sync compares (the newer role wins).
    pub role_updated: i64,
    /// True when the agent did not exist and was created.
    #[serde(default)]
    pub created_agent: bool,
    /// Set when the agent was created: "created agent X", with the existing agent the name
    /// most likely mistypes and the undo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_note: Option<String>,
}

/// `profile edit`: change a preference's text, category or rule (absent fields stay).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ProfileEditRequest {
    /// The preference's id.
    pub id: String,
    /// New text.
    #[serde(default)]
    pub content: Option<String>,
    /// New category.
    #[serde(default)]
    pub category: Option<Category>,
    /// New rule; an empty string removes it.
    #[serde(default)]
    pub rule: Option<String>,
    /// The preference's `last_updated` when the caller read it: if it has changed since (edited
    /// in another window, on the CLI, by a sync), the edit is refused with `conflict` instead of
    /// overwriting that change unseen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_last_updated: Option<i64>,
}

/// `profile remove`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProfileRemoveRequest {
    /// A preference id, or (with `agent: true`) an agent id.
    pub id: String,
    /// Remove the agent named by `id` with all its preferences.
    #[serde(default)]
    pub agent: bool,
    /// The preference's `last_updated` when the caller read it: if it has changed since, the
    /// removal is refused with `conflict` (the caller confirmed removing another text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_last_updated: Option<i64>,
}

/// What was removed.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ProfileRemoveResponse {
    /// The id removed.
    pub id: String,
    /// The agent it belonged to (or the agent removed).
    pub agent_id: String,
    /// Preferences removed.
    pub removed: u64,
}

/// `profile search` and the MCP `docdex_get_profile`: an agent's preferences closest to a query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProfileSearchRequest {
    /// The agent; empty means the default agent.
    #[serde(default)]
    pub agent_id: String,
    /// The topic ("testing frameworks", "how should I write this button").
    pub query: String,
    /// How many (default 10, at most 100).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Leave out the shared `team` preferences (included by default).
    #[serde(default)]
    pub without_team: bool,
}

/// How preferences were recalled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RecallMode {
    /// By meaning (embeddings).
    Vector,
    /// By shared words (no embedder answered).
    Text,
}

/// A recalled preference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PreferenceHit {
    /// The preference.
    #[serde(flatten)]
    pub preference: Preference,
    /// Cosine similarity (vector mode) or the share of the query's words found (text mode).
    pub similarity_score: f32,
}

/// Recalled preferences.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ProfileSearchResponse {
    /// The agent.
    pub agent_id: String,
    /// The query.
    pub query: String,
    /// By meaning or by words.
    pub mode: RecallMode,
    /// Best first.
    pub results: Vec<PreferenceHit>,
    /// Why recall matched words rather than meaning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

/// An agent in a sync manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SyncAgent {
    /// The agent id.
    pub id: String,
    /// Its role.
    #[serde(default)]
    pub role: String,
    /// Epoch milliseconds.
    #[serde(default)]
    pub created_at: i64,
    /// When the role was last set (`profile add --role`, a sync that took another machine's),
    /// epoch milliseconds; 0 for a factory role, or one set before docdex kept this (older
    /// manifests have none). On import the newer role wins, as the newer preference does: a
    /// role changed on one machine reached no other, which kept the old one for good.
    #[serde(default)]
    pub role_updated: i64,
}

/// A preference in a sync manifest (no vector: vectors are made where it is imported).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SyncPreference {
    /// UUID.
    pub id: String,
    /// The agent.
    pub agent_id: String,
    /// The text.
    pub content: String,
    /// The category.
    pub category: Category,
    /// The rule, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Epoch milliseconds; the newer side wins on import.
    pub last_updated: i64,
    /// Where it came from (`import` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<PreferenceSource>,
}

/// A deleted preference, so a removal travels through sync like an edit does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SyncTombstone {
    /// The preference id that was removed.
    pub id: String,
    /// Its agent.
    pub agent_id: String,
    /// When it was removed, epoch milliseconds.
    pub deleted_at: i64,
}

/// A removed agent (`profile remove --agent`), so the removal travels through sync: an agent
/// may hold no preferences (a role set alone), and then no preference's removal says it went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SyncAgentRemoval {
    /// The agent id that was removed.
    pub id: String,
    /// When it was removed, epoch milliseconds (after its creation and its role's stamp).
    pub removed_at: i64,
}

/// `profile_sync.json` (spec 001 §4.5): everything needed to merge one profile into another.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProfileManifest {
    /// Always `docdex.profile_sync`.
    pub format: String,
    /// [`PROFILE_SCHEMA_VERSION`].
    pub version: u32,
    /// Every agent, by id.
    pub agents: Vec<SyncAgent>,
    /// Every preference, by id.
    pub preferences: Vec<SyncPreference>,
    /// Removed preferences, by id.
    #[serde(default)]
    pub tombstones: Vec<SyncTombstone>,
    /// Removed agents, by id. `None` in a manifest of a docdex from before agents synced on
    /// their own (it carried an agent only with its preferences): its import keeps that rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed_agents: Option<Vec<SyncAgentRemoval>>,
}

/// What `profile export` wrote.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ProfileExportResponse {
    /// The file written.
    pub path: PathBuf,
    /// Agents exported.
    pub agents: usize,
    /// Preferences exported.
    pub preferences: usize,
    /// Removals exported.
    pub tombstones: usize,
}

/// A manifest row that was not merged, and why.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RejectedRow {
    /// Its id.
    pub id: String,
    /// Why.
    pub reason: String,
}

/// What `profile import` merged (last write wins per id).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ProfileImportResponse {
    /// The manifest read.
    pub source: PathBuf,
    /// Its copy in `profiles/sync/`, kept for the record.
    pub staged: PathBuf,
    /// Agents that were new here.
    pub agents_added: usize,
    /// Preferences that were new here.
    pub added: usize,
    /// Local preferences replaced by newer incoming ones.
    pub updated: usize,
    /// Incoming preferences older than (or equal to) the local ones, so not taken.
    pub kept_local: usize,
    /// Local preferences removed by newer incoming removals.
    pub deleted: usize,
    /// Copies of a text an agent already held (letter case, runs of spaces and a closing full
    /// stop aside, with the same rule) merged into one: the oldest copy is kept and the others
    /// removed, as `profile add` refuses a repeat. Not counted in `added`.
    #[serde(default)]
    pub merged: usize,
    /// Agents removed: by the manifest's agent removals (`profile remove --agent` on the other
    /// machine), or left with no preferences by its preference removals.
    #[serde(default)]
    pub agents_removed: usize,
    /// Agents whose role the manifest changed (its role was set later than this side's).
    #[serde(default)]
    pub roles_updated: usize,
    /// Rows refused (bad category, bad rule, unknown agent, ...).
    pub rejected: Vec<RejectedRow>,
    /// Incoming preferences stamped more than a minute after this machine's clock (the
    /// exporting machine's clock runs ahead): each wins every merge until then.
    #[serde(default)]
    pub ahead_of_clock: usize,
}

/// `profile reembed`: every preference embedded again with the configured model.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ProfileReembedResponse {
    /// The model used.
    pub model: String,
    /// Its vector size.
    pub dim: usize,
    /// Preferences embedded.
    pub embedded: usize,
}

/// `docdex_save_preference` / `profile learn` / `POST /v1/profile/learn`: a statement that may
/// carry a preference, run through the evolution pipeline (recall, decide, write).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SavePreferenceRequest {
    /// The agent learning it; empty means the default agent.
    #[serde(default)]
    pub agent_id: String,
    /// What the user said ("we are switching to vitest", "stop using any").
    pub preference: String,
    /// The category, when the caller knows it (the model decides otherwise).
    #[serde(default)]
    pub category: Option<Category>,
    /// A rule for a constraint, when the caller has one.
    #[serde(default)]
    pub rule: Option<String>,
}

/// The operation the evolution pipeline chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum EvolutionAction {
    /// A new preference was stored.
    Add,
    /// An existing preference (`target_preference_id`) was rewritten.
    Update,
    /// Nothing was written: noise, already known, or the model's answer was unusable.
    Ignore,
    /// Nothing was written: the preference is harmful or contradicts itself or a kept rule.
    Refuse,
}

/// Who made the decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    /// The model (structured JSON).
    Model,
    /// docdex's own policy (harmful or contradictory input), before or after the model.
    Policy,
    /// No model answered: an exact or near duplicate is ignored, anything else added.
    Fallback,
}

/// What the evolution pipeline did with a statement.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct EvolutionOutcome {
    /// The agent.
    pub agent_id: String,
    /// The statement.
    pub input: String,
    /// ADD, UPDATE, IGNORE or REFUSE.
    pub action: EvolutionAction,
    /// The preference written (ADD, UPDATE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preference: Option<Preference>,
    /// The preference UPDATE rewrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_preference_id: Option<String>,
    /// Its text before the update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_content: Option<String>,
    /// Why (the model's reasoning, or the policy's reason for a refusal).
    pub reasoning: String,
    /// Who decided.
    pub decided_by: DecidedBy,
    /// Model calls made (a reply that is not valid JSON is retried once).
    pub attempts: u32,
    /// The existing preferences the decision was made against, closest first.
    pub recalled: Vec<PreferenceHit>,
    /// Degradations (no embedder, no model).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
    /// A chat message's statement that was not learnt because no model could weigh it against
    /// the profile: the `docdex profile add` command that stores it as it reads (category and
    /// rule as docdex reads them), for the user to run if they mean it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
}

/// A staged file sent by the pre-commit hook.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StagedFile {
    /// Repo-relative path.
    pub path: String,
    /// The staged content (absent for deletions; a file sent without it is read from the
    /// working tree).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The file is deleted in the commit.
    #[serde(default)]
    pub deleted: bool,
}

/// `POST /v1/hooks/validate`: staged files checked against the agent's constraint rules.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct HookValidateRequest {
    /// The agent whose constraints apply (with the shared `team` ones); the server's
    /// `--agent-id`, then `[memory.profile] default_agent`, when absent; with none of them,
    /// every agent's constraints (spec 001 §5.1).
    #[serde(default)]
    pub agent_id: Option<String>,
    /// The staged files (at most 5,000; contents over 2 MiB are not checked). A file sent
    /// without content is read from the working tree.
    pub files: Vec<StagedFile>,
}

/// The verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum HookStatus {
    /// No rule is violated.
    Pass,
    /// At least one rule is violated.
    Fail,
}

/// One broken rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Violation {
    /// The rule as written (`forbid-import moment`).
    pub rule: String,
    /// Repo-relative path.
    pub file: String,
    /// 1-based line (0 when the whole file is meant).
    pub line: u32,
    /// What is wrong, in words.
    pub message: String,
    /// The preference carrying the rule.
    pub preference_id: String,
    /// Whose preference it is.
    pub agent_id: String,
    /// The preference's text ("Deprecate usage of moment.js").
    pub preference: String,
}

/// A checkable constraint in force.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ActiveRule {
    /// The rule as written.
    pub rule: String,
    /// The preference carrying it.
    pub preference_id: String,
    /// Its agent (the asked agent or `team`).
    pub agent_id: String,
    /// The preference's text.
    pub content: String,
}

/// The gatekeeper's answer.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct HookValidateResponse {
    /// pass or fail.
    pub status: HookStatus,
    /// Every violation, by file and line.
    pub violations: Vec<Violation>,
    /// The agent whose rules applied with the team's (absent: every agent's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Files checked (deleted and skipped ones not counted).
    pub checked_files: usize,
    /// The rules checked.
    pub rules: Vec<ActiveRule>,
    /// Constraints without a rule: advice only, not checked.
    pub advice_only: Vec<String>,
    /// Things worth knowing (no import graph yet, a file not parsed, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
    /// Time spent checking, in milliseconds.
    pub elapsed_ms: f64,
}

/// `docdex map`: the project map for an agent.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ProjectMapRequest {
    /// The agent whose role and tooling steer the map (the default agent when absent).
    #[serde(default)]
    pub agent_id: Option<String>,
    /// Build it again even when a cached map exists.
    #[serde(default)]
    pub refresh: bool,
}

/// A skeleton of the repository: the paths that matter to an agent, the rest collapsed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProjectMap {
    /// The agent (absent: no agent; the map then shows the project's own files at the root and
    /// the files most of the repository imports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The words the spotlight looked for (from the role and tooling preferences).
    pub keywords: Vec<String>,
    /// The files shown, best match first.
    pub paths: Vec<String>,
    /// Files of the index not shown.
    pub hidden_files: u64,
    /// The tree as text (what the chat prompt gets).
    pub tree: String,
    /// Its size in tokens (cl100k), at most the map's cap.
    pub tokens: u32,
    /// Directory levels shown (deeper ones are collapsed to fit the cap).
    pub depth: u32,
    /// When it was built, epoch milliseconds.
    pub generated_at: i64,
    /// True when it came from `maps/<agent>.json`.
    #[serde(default)]
    pub cached: bool,
    /// What the map's reader should know: an agent profile memory does not hold (the map
    /// still answers, led by the name's words and the team's tooling), a spotlight that found
    /// no file (the map is then the agent-less view). `--json` and `GET /v1/map` showed neither.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
    /// For an agent profile memory does not hold: the existing agent it most likely mistypes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closest_agent: Option<String>,
}

/// A constraint rule a file of the impact graph breaks as the repository stands: what the
/// TUI's risk overlay draws.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RuleMark {
    /// The file (repo-relative).
    pub file: String,
    /// The rule broken (`no-import-cycles`, `forbid-import moment`).
    pub rule: String,
    /// True for a cycle the rules forbid (drawn in the danger colour), false for a warning.
    pub danger: bool,
    /// What is wrong, in words.
    pub message: String,
    /// The constraint carrying the rule.
    pub preference_id: String,
    /// Whose constraint it is.
    pub agent_id: String,
    /// The constraint's text.
    pub preference: String,
}
