//! The waterfall's contracts: what a chat turn asks for, what it streams while it runs, what it
//! returns, and the trace that explains it. These types are the CLI's `--json`, the HTTP
//! `/v1/chat/completions` extension fields and what the TUI's waterfall pane draws, so every
//! field means the same thing on every surface.

use crate::engine::cancel::CancelToken;
use crate::engine::llm::{ChatMessage, Sampling};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Version of the chat JSON shapes below.
pub const CHAT_SCHEMA_VERSION: u32 = 1;

/// Whether the web tier (Tier 2) may be asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WebPolicy {
    /// Only when local confidence is below `[search] web_trigger_threshold`.
    #[default]
    Auto,
    /// Always (`--force-web`).
    Force,
    /// Never (`--no-web`).
    Off,
}

/// Which changes the Diff slot describes (`--diff`, HTTP `docdex.diff`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DiffRequest {
    /// `working` (unstaged changes: `git diff`), `staged` (`git diff --cached`), or a git
    /// range or revision (`main..HEAD`, `HEAD~3`, `a1b2c3...d4e5f6`).
    #[serde(default = "default_diff_target")]
    pub target: String,
    /// Only changes under these repo-relative paths (`--path`, repeatable).
    #[serde(default)]
    pub paths: Vec<String>,
}

fn default_diff_target() -> String {
    "working".into()
}

impl Default for DiffRequest {
    fn default() -> Self {
        DiffRequest { target: default_diff_target(), paths: Vec::new() }
    }
}

/// One chat turn: the CLI's flags, the HTTP body's extension fields, an MCP tool's parameters.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ChatTurnRequest {
    /// The question.
    pub query: String,
    /// Earlier messages of the conversation, oldest first (the REPL keeps them; HTTP clients
    /// send them). They share the context budget and the oldest go first when it is tight.
    #[serde(default)]
    pub history: Vec<ChatMessage>,
    /// Continue this reasoning-DAG session (created when it does not exist yet); a new
    /// session when absent.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The agent asking (spec 001 §6.2 `agent_id`): recorded in the DAG session; its
    /// preferences and project map fill Tier 0 (`[memory.profile] default_agent` when absent).
    #[serde(default)]
    pub agent_id: Option<String>,
    /// Whether the web tier may be asked for.
    #[serde(default)]
    pub web: WebPolicy,
    /// Add a Diff slot built from these git changes, expanded one hop through the impact graph.
    #[serde(default)]
    pub diff: Option<DiffRequest>,
    /// The chat model (`[llm] default_model` when absent).
    #[serde(default)]
    pub model: Option<String>,
    /// Cap on generated tokens (`[llm] max_answer_tokens` when absent).
    #[serde(default)]
    pub max_answer_tokens: Option<u32>,
    /// The caller's own instructions (an OpenAI client's system messages: the answer's
    /// language, format, tone), added to docdex's in the system message and never dropped.
    #[serde(default)]
    pub instructions: Option<String>,
    /// How the answer is sampled: `temperature`, `top_p` and the two penalties, at the top
    /// level of the JSON (each the model server's default when absent).
    #[serde(flatten)]
    pub sampling: Sampling,
    /// The answer's shape: a JSON schema it must follow, or the string `"json"` for any JSON
    /// object; free text when absent (see [`ChatRequest::format`](crate::engine::llm::ChatRequest)).
    #[serde(default)]
    pub format: Option<serde_json::Value>,
    /// Sequences that end the answer where the model writes them (at most 4, as OpenAI takes).
    #[serde(default)]
    pub stop: Vec<String>,
    /// Trip it from another thread to stop the turn, even while the model still reads the
    /// prompt: the turn ends `stopped`, like a `ControlFlow::Break` from the event callback.
    /// Not part of any wire format; the default is never tripped.
    #[serde(skip)]
    #[schemars(skip)]
    pub cancel: CancelToken,
}

impl ChatTurnRequest {
    /// A request from an OpenAI-style conversation (HTTP `/v1/chat/completions`): the last user
    /// message is the question, the messages before it are the history, and the client's own
    /// system messages become [`ChatTurnRequest::instructions`] (docdex writes the system
    /// message, with them in it). `None` when there is no user message.
    pub fn from_messages(messages: &[ChatMessage]) -> Option<ChatTurnRequest> {
        use crate::engine::llm::Role;
        let last = messages.iter().rposition(|m| m.role == Role::User)?;
        let system: Vec<&str> = messages
            .iter()
            .filter(|m| m.role == Role::System)
            .map(|m| m.content.trim())
            .filter(|c| !c.is_empty())
            .collect();
        Some(ChatTurnRequest {
            query: messages[last].content.clone(),
            history: messages[..last].iter().filter(|m| m.role != Role::System).cloned().collect(),
            instructions: (!system.is_empty()).then(|| system.join("\n\n")),
            ..Default::default()
        })
    }
}

/// A slot of the context budget, highest priority first: lower slots lose their snippets
/// first when the budget is tight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Slot {
    /// Instructions and the question itself (never dropped).
    System,
    /// The agent's (and the team's) preferences, most similar to the question first (Tier 0;
    /// at most 1,000 tokens, the least similar dropped first).
    Profile,
    /// The project map for the agent (Tier 0; at most 500 tokens).
    Map,
    /// Repo memory recalled for the question.
    Memory,
    /// The git diff asked for and its one-hop neighbours.
    Diff,
    /// Repository code and docs from the index.
    Repo,
    /// Earlier turns of the conversation.
    History,
    /// Library documentation (the libs index).
    Library,
    /// Web pages (Tier 2).
    Web,
    /// Room kept for the answer.
    Generation,
}

impl Slot {
    /// The slot's name as serialized.
    pub fn name(self) -> &'static str {
        match self {
            Slot::System => "system",
            Slot::Profile => "profile",
            Slot::Map => "map",
            Slot::Memory => "memory",
            Slot::Diff => "diff",
            Slot::Repo => "repo",
            Slot::History => "history",
            Slot::Library => "library",
            Slot::Web => "web",
            Slot::Generation => "generation",
        }
    }
}

/// A source placed in the prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChatSource {
    /// How the prompt cites it: `path:line_start-line_end` (or `memory:<id>`).
    pub citation: String,
    /// The slot it filled.
    pub slot: Slot,
    /// Repo-relative path, for file sources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// First line included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_start: Option<u32>,
    /// Last line included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_end: Option<u32>,
    /// Retrieval score (search score, memory similarity; 0 for diff content).
    pub score: f32,
    /// What it is, briefly (`modified`, `imports src/a.rs`, `search hit`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
    /// The answer cites it.
    pub cited: bool,
    /// The page, for web sources (the citation is the URL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `name@version` (with the ecosystem: `crates:serde@1.0.228`), for library docs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
}

/// How the model part of a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AnswerStatus {
    /// The model answered completely.
    Answered,
    /// The caller stopped the answer early.
    Stopped,
    /// No model could be used (server unreachable, model missing): the sources stand alone.
    Unavailable,
    /// The model failed part-way; `answer` holds what arrived.
    Failed,
}

/// The model side of a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LlmOutcome {
    /// How it ended.
    pub status: AnswerStatus,
    /// `ollama` or `openai`.
    pub provider: String,
    /// The model asked.
    pub model: String,
    /// The server.
    pub base_url: String,
    /// The engine error code when something failed (`upstream_unavailable`, `model_not_found`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// What went wrong, with the command that fixes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The result of a chat turn.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ChatTurnResponse {
    /// [`CHAT_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The reasoning-DAG session this turn was logged in.
    pub session_id: String,
    /// 1-based turn number within the session.
    pub turn: u32,
    /// Repo root.
    pub repo: PathBuf,
    /// The question.
    pub query: String,
    /// The answer as streamed (partial when the model failed or was stopped); `None` when no
    /// model could be used.
    pub answer: Option<String>,
    /// Everything placed in the prompt, in prompt order.
    pub sources: Vec<ChatSource>,
    /// The model side.
    pub llm: LlmOutcome,
    /// Why the context is what it is.
    pub trace: ChatTrace,
    /// When no model answered (`answer` is `None`): the best repository sources' lines, as
    /// `docdex search` shows them (the hit's snippet, secrets masked), so a turn without a
    /// model still shows what was found, not a bare list of citations. Empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excerpts: Vec<SourceExcerpt>,
}

/// The lines of a source shown when there is no answer to read them (see
/// [`ChatTurnResponse::excerpts`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SourceExcerpt {
    /// The source's citation, as in `sources`.
    pub citation: String,
    /// Repo-relative path.
    pub path: String,
    /// Line number of the first line of `text`.
    pub line_start: u32,
    /// The lines (the search hit's snippet).
    pub text: String,
    /// Retrieval score.
    pub score: f32,
}

/// Appended to a cut-off answer sent back to the model as history, so the next turn does not
/// take half an answer for a whole one.
pub const CUT_OFF_MARK: &str = "\n\n[This answer was cut off before its end.]";

/// An answer as a conversation's history carries it: marked with [`CUT_OFF_MARK`] when the
/// turn was stopped or the model failed part-way; `None` when there is no text.
pub fn answer_for_history(answer: &str, cut_off: bool) -> Option<String> {
    if answer.trim().is_empty() {
        return None;
    }
    Some(if cut_off { format!("{answer}{CUT_OFF_MARK}") } else { answer.to_string() })
}

impl ChatTurnResponse {
    /// The answer for the next turn's history (see [`answer_for_history`]).
    pub fn history_answer(&self) -> Option<String> {
        let cut_off = matches!(self.llm.status, AnswerStatus::Stopped | AnswerStatus::Failed);
        answer_for_history(self.answer.as_deref()?, cut_off)
    }
}

/// Something a chat turn reports while it runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum ChatTurnEvent {
    /// A tier or step finished (code index, gate, web, memory, diff).
    Step(StepTrace),
    /// The context is assembled; generation starts next.
    Context {
        /// What went into the prompt.
        sources: Vec<ChatSource>,
        /// The budget as spent.
        budget: BudgetTrace,
    },
    /// The next piece of the answer.
    Token {
        /// The text.
        text: String,
    },
    /// Something the user should know (no model, a slot dropped entirely, ...).
    Notice {
        /// The message.
        message: String,
    },
}

/// What happened in one request, for `--trace`, HTTP and the TUI's waterfall pane.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChatTrace {
    /// Unique per request.
    pub request_id: String,
    /// The agent asking, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Every tier and step in the order it ran.
    pub steps: Vec<StepTrace>,
    /// The confidence gate.
    pub gate: GateTrace,
    /// The token budget per slot.
    pub budget: BudgetTrace,
    /// Snippets left out, each with its reason, in the order they were dropped.
    pub drops: Vec<DropTrace>,
    /// The model call.
    pub model: ModelTrace,
    /// Where the time went.
    pub timings_ms: TimingTrace,
    /// Things worth knowing (degraded tiers, DAG logging problems).
    pub notices: Vec<String>,
    /// The web tier when it ran: the query, discovery, each page (URL, cache hit, fetcher,
    /// waits for rate limits, failures) and timings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub web: Option<crate::engine::web::types::WebTrace>,
}

/// How a step went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// It ran and produced its results.
    #[default]
    Ran,
    /// Not needed for this request (gate passed, no diff asked, memory off).
    Skipped,
    /// Its data does not exist for this repo (no libs index).
    Absent,
    /// Wanted but not available (web tier off, offline or blocked, no model reachable).
    Unavailable,
    /// It failed; `detail` says why.
    Failed,
}

/// One tier or step of the waterfall.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StepTrace {
    /// 0 profile and project map, 1 local indexes, 2 web, 3 memory/diff/model; the gate is
    /// between 1 and 2.
    pub tier: u8,
    /// `profile`, `project_map`, `code_index`, `libs_index`, `gate`, `web`, `memory`, `diff`,
    /// `impact`, `privacy` (what was masked before a non-loopback model), `llm`.
    pub name: String,
    /// How it went.
    pub status: StepStatus,
    /// Wall time.
    pub ms: f64,
    /// Results it produced (hits, memories, files).
    pub items: u32,
    /// One line for humans.
    pub detail: String,
}

/// A ranked hit as the gate saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScoredHit {
    /// `path:line_start-line_end`.
    pub citation: String,
    /// Search score.
    pub score: f32,
}

/// The gate between the local tier and the web tier.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GateTrace {
    /// Local confidence (`SearchResponse.confidence`, 0..1).
    pub confidence: f64,
    /// `[search] web_trigger_threshold`.
    pub threshold: f64,
    /// `confidence >= threshold`.
    pub passed: bool,
    /// The best local hits with their scores.
    pub top_hits: Vec<ScoredHit>,
    /// The request's web policy.
    pub web_policy: WebPolicy,
    /// Whether the web tier was wanted.
    pub web_wanted: bool,
    /// Why (`confidence 0.42 < threshold 0.70`, `--force-web`, `--no-web`, ...).
    pub reason: String,
    /// Whether the web tier can run (`[web] enabled`).
    pub web_available: bool,
}

/// How tokens were counted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TokenizerTrace {
    /// `cl100k_base` or `o200k_base`.
    pub name: String,
    /// True when it is the model's own tokenizer (OpenAI models).
    pub exact: bool,
    /// Correction factor applied to the count (measured against the model's own counts on
    /// earlier requests; 1.0 until measured).
    pub ratio: f64,
    /// In words.
    pub note: String,
}

/// One slot of the budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SlotTrace {
    /// Which slot.
    pub slot: Slot,
    /// Tokens it could use when its turn came (its share plus what higher slots left).
    pub allotted: u32,
    /// Tokens it used (for `generation`: the answer's tokens once known).
    pub used: u32,
    /// Snippets kept.
    pub items: u32,
    /// Snippets dropped.
    pub dropped: u32,
}

/// The token budget of a request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BudgetTrace {
    /// The model's context window in tokens.
    pub context_window: u32,
    /// Where the window came from (`provider`, `config`).
    pub window_source: String,
    /// The cap on generated tokens sent to the model.
    pub max_answer_tokens: u32,
    /// How tokens were counted.
    pub tokenizer: TokenizerTrace,
    /// The shares of the window, in percent.
    pub shares: BudgetShares,
    /// Per slot, in priority order.
    pub slots: Vec<SlotTrace>,
    /// Estimated prompt tokens in all.
    pub prompt_tokens: u32,
}

/// The shares of the context window, in percent (spec: about 10/20/50/20). What a slot
/// leaves unused passes to the slots below it; the generation share is kept whole.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BudgetShares {
    /// Instructions, profile rules and the question.
    pub system: u32,
    /// Repo memory.
    pub memory: u32,
    /// Diff, repo, history, library and web, in that order.
    pub context: u32,
    /// Room for the answer.
    pub generation: u32,
}

/// A snippet left out of the prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DropTrace {
    /// Its slot.
    pub slot: Slot,
    /// Its citation.
    pub source: String,
    /// Tokens it would have taken.
    pub tokens: u32,
    /// Why it was dropped.
    pub reason: String,
}

/// The model call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModelTrace {
    /// `ollama` or `openai`.
    pub provider: String,
    /// The model asked.
    pub model: String,
    /// The server.
    pub base_url: String,
    /// Prompt tokens by our count.
    pub prompt_tokens_estimated: u32,
    /// Prompt tokens by the model's count, when it reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_reported: Option<u32>,
    /// True when the server reported reading far fewer prompt tokens than were sent: it cut
    /// the prompt to fit a smaller context window (a notice says how to fix it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub prompt_truncated: bool,
    /// Tokens generated, when reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u32>,
    /// `stop`, `length`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
}

/// Where the time of a request went, in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TimingTrace {
    /// Tier 1: the local indexes.
    pub retrieval: f64,
    /// Tier 2: the web (discovery, fetches, passages); 0 when it did not run.
    #[serde(default)]
    pub web: f64,
    /// Memory recall.
    pub memory: f64,
    /// Git diff and its one-hop expansion.
    pub diff: f64,
    /// Reading snippets, counting tokens, fitting the budget, rendering the prompt.
    pub assembly: f64,
    /// From the start of the request to the first answer token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_token: Option<f64>,
    /// From sending the prompt to the last token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<f64>,
    /// The whole request.
    pub total: f64,
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_cut_off_answer_is_marked_and_an_empty_one_is_left_out() {
        assert_eq!(answer_for_history("Whole.", false).as_deref(), Some("Whole."));
        assert_eq!(answer_for_history("Half", true), Some(format!("Half{CUT_OFF_MARK}")));
        assert_eq!(answer_for_history("  \n", true), None);
    }

    use super::*;
    use crate::engine::llm::Role;

    #[test]
    fn openai_messages_become_question_and_history() {
        let msgs = vec![
            ChatMessage::new(Role::System, "be brief"),
            ChatMessage::new(Role::User, "first"),
            ChatMessage::new(Role::Assistant, "answer"),
            ChatMessage::new(Role::User, "second"),
        ];
        let req = ChatTurnRequest::from_messages(&msgs).unwrap();
        assert_eq!(req.query, "second");
        assert_eq!(req.history, msgs[1..3].to_vec());
        assert_eq!(req.instructions.as_deref(), Some("be brief"), "the client's system message is kept");
        assert!(ChatTurnRequest::from_messages(&msgs[..1]).is_none());
    }
}
