//! The evolution pipeline (spec 001 §3.2, §3.3): a statement that may carry a preference goes
//! through recall (the agent's closest preferences), a decision (the model answers strict JSON
//! `{action: ADD|UPDATE|IGNORE, target_preference_id, new_content, category, rule, reasoning}`,
//! with the provider's JSON schema mode), then the write, so the profile is curated rather than
//! appended to.
//!
//! docdex's policy (`policy.rs`) runs before and after the model: a harmful or
//! self-contradicting preference is refused with the reason whatever the model says. An answer
//! that is not valid JSON (or breaks the schema: unknown action, an UPDATE of a preference that
//! was not recalled, a bad rule) is retried once with the error, then treated as IGNORE, so no
//! corrupt row is ever written. Without a model the decision falls back to "ignore an exact or
//! near duplicate, add anything else", and says so. From a chat turn the pipeline runs in the
//! background ([`Engine::profile_learn_in_background`]) and never delays the answer; each
//! decision is recorded in the turn's reasoning DAG.

use super::policy;
use super::recall::recall_agents;
use super::rules::{self, Rule};
use super::store;
use super::types::*;
use crate::engine::dag::{DagStore, NodeKind};
use crate::engine::fsutil::now_ms;
use crate::engine::llm::{ChatMessage, ChatRequest, Role, Sampling};
use crate::engine::repos::RepoRef;
use crate::engine::Engine;
use crate::error::{Error, Result};
use serde::Deserialize;
use serde_json::{json, Value};
use std::ops::ControlFlow;
use std::sync::Mutex;
use std::time::Duration;

/// Existing preferences shown to the model.
const RECALL_LIMIT: usize = 5;
/// A recalled preference at least this similar counts as already known without a model.
const DUPLICATE_SIMILARITY: f32 = 0.95;
/// Generated tokens allowed for the decision.
const DECISION_TOKENS: u32 = 400;
/// Marker the prompt starts with (and tests script the fake model by).
pub const PROMPT_MARKER: &str = "You are the Memory Manager for an AI coding assistant.";

/// Evolutions running in the background, each under the chat turn's request id so the caller
/// can collect its outcome ([`Engine::profile_learn_outcome`]).
#[derive(Default)]
pub(crate) struct Jobs {
    handles: Mutex<Vec<(String, std::thread::JoinHandle<Option<EvolutionOutcome>>)>>,
}

/// Who may decide a statement.
#[derive(Debug, Clone, PartialEq)]
enum Judge {
    /// The model, else the fallback (`profile learn`, `POST /v1/profile/learn`, MCP): the
    /// statement was given to be remembered.
    ModelOrFallback,
    /// The model alone (a chat message): without one the statement is not stored, and the
    /// outcome carries the command that stores it. A chat message is no request to remember
    /// anything, so the fallback's "add anything else" wrote commit-blocking rules unseen.
    ModelOnly,
    /// No model (the turn that carried it found none, for the reason given): not asked again.
    NoModel(String),
}

/// Where a decision is logged: a reasoning-DAG session of a repository, after a node.
#[derive(Debug, Clone)]
pub struct DagTarget {
    /// The repository whose `dag.db` holds the session.
    pub repo: RepoRef,
    /// The session (created when it does not exist).
    pub session: Option<String>,
    /// The node the decision follows (a chat turn's request).
    pub parent: Option<i64>,
}

/// The model's answer, before it is checked.
#[derive(Debug, Deserialize)]
struct ModelAnswer {
    action: String,
    #[serde(default)]
    target_preference_id: Option<String>,
    #[serde(default)]
    new_content: Option<String>,
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    rule: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
}

/// A checked decision.
#[derive(Debug, Clone)]
struct Decision {
    action: EvolutionAction,
    target: Option<String>,
    content: String,
    category: Category,
    rule: Option<String>,
    reasoning: String,
}

/// The JSON schema the model must answer with (Ollama `format`, OpenAI `response_format`).
pub fn decision_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["ADD", "UPDATE", "IGNORE"]},
            "target_preference_id": {"type": ["string", "null"]},
            "new_content": {"type": ["string", "null"]},
            "category": {"type": ["string", "null"], "enum": ["style", "tooling", "constraint", "workflow", null]},
            "rule": {"type": ["string", "null"]},
            "reasoning": {"type": "string"}
        },
        "required": ["action", "target_preference_id", "new_content", "category", "rule", "reasoning"],
        "additionalProperties": false
    })
}

fn system_prompt() -> String {
    format!(
        "{PROMPT_MARKER}\n\
         You keep an agent's preferences (how it should write code) clean and non-contradictory.\n\
         Given the agent's current preferences on the topic and a new user input, choose one operation:\n\
         1. ADD: the input is a new preference.\n\
         2. UPDATE: the input contradicts or refines an existing preference; give its id as target_preference_id and the rewritten preference as new_content.\n\
         3. IGNORE: the input is conversational noise, not a preference, or already known.\n\
         Refuse harmful preferences (switching off tests, linters, type checks or security controls, bypassing review or commit hooks, putting secrets in code): answer IGNORE with reasoning starting with \"REFUSED:\".\n\
         category is one of style (advice on how code looks), tooling (tools and libraries), constraint (something that must or must not happen), workflow (how to work).\n\
         A constraint may carry a machine-checkable rule, else rule is null. Rules: {}.\n\
         new_content is one short self-contained sentence.\n\
         Return ONLY a JSON object with the keys action, target_preference_id, new_content, category, rule, reasoning.",
        rules::GRAMMAR
    )
}

fn user_prompt(recalled: &[PreferenceHit], input: &str) -> String {
    let now = now_ms() as i64;
    let state: Vec<Value> = recalled
        .iter()
        .map(|h| {
            let p = &h.preference;
            json!({"id": p.id, "content": p.content, "category": p.category, "rule": p.rule,
                   "recency": recency(now - p.last_updated)})
        })
        .collect();
    format!(
        "Current Memory State regarding topic: {}\nNew User Input: {}\nDetermine the correct memory operation. Return ONLY a JSON object.",
        serde_json::to_string_pretty(&state).unwrap_or_else(|_| "[]".into()),
        serde_json::to_string(input).unwrap_or_default()
    )
}

fn recency(ms: i64) -> String {
    let days = ms.max(0) / 86_400_000;
    match days {
        0 => "today".into(),
        1 => "yesterday".into(),
        d if d < 14 => format!("{d} days ago"),
        d if d < 60 => format!("{} weeks ago", d / 7),
        d => format!("{} months ago", d / 30),
    }
}

/// True when `statement` repeats the recalled preference: the same words (letter case, runs of
/// spaces and a closing full stop aside) or a near duplicate ([`DUPLICATE_SIMILARITY`]). Close
/// is not the same when the two say opposite things: "use tabs" recalled "Never use tabs for
/// indentation" (by words it holds every word of the statement) and was ignored as already
/// known; written, it is refused as contradicting that preference.
fn repeats(hit: &PreferenceHit, statement: &str) -> bool {
    let p = &hit.preference.content;
    store::text_key(p) == store::text_key(statement)
        || (hit.similarity_score >= DUPLICATE_SIMILARITY && !policy::opposed(p, statement))
}

/// The preference of `p`'s agent, else of the team, that holds `p`'s words and rule.
fn kept_same_text(c: &rusqlite::Connection, p: &Preference) -> Result<Option<Preference>> {
    let rule = p.rule.as_deref();
    // Not `p` itself: an UPDATE keeping its words is no repeat.
    if let Some(own) = store::same_text(c, &p.agent_id, &p.content, rule, &p.id)? {
        return Ok(Some(own));
    }
    if p.agent_id == TEAM_AGENT {
        return Ok(None);
    }
    store::same_text(c, TEAM_AGENT, &p.content, rule, "")
}

/// Why a write the model decided was not made, found under the writer lock.
enum Skipped {
    /// The UPDATE's target changed while the model decided: what it reads now.
    ChangedMeanwhile(Preference),
    /// The words are this kept preference's (the agent's own or the team's).
    Repeat(Preference),
}

impl Skipped {
    /// The outcome's reasoning for `agent`, quoting the model's decision `d`.
    fn reason(&self, d: &Decision, agent: &str) -> String {
        let decided = match (d.action, d.target.as_deref()) {
            (EvolutionAction::Update, Some(id)) => format!("UPDATE of {id}"),
            _ => "ADD".to_string(),
        };
        match self {
            Skipped::ChangedMeanwhile(now) => format!(
                "preference {} changed while the model decided (it now reads \"{}\"); nothing was written over that change: state it again to weigh it against the new text (the model had decided UPDATE: {})",
                now.id, now.content, d.reasoning
            ),
            Skipped::Repeat(same) if same.agent_id == agent => {
                format!("already known as {} (\"{}\"); the model had decided {decided}: {}", same.id, same.content, d.reasoning)
            }
            Skipped::Repeat(team) => {
                format!("{} (the model had decided {decided}: {})", covered_by_team(team, agent), d.reasoning)
            }
        }
    }
}

/// Why nothing was written for `agent`: the team's preference `team` says it already.
fn covered_by_team(team: &Preference, agent: &str) -> String {
    format!(
        "already covered by the team profile: {} \"{}\" ({}) applies to every agent, so nothing was written for {agent}",
        team.id, team.content, team.category
    )
}

/// The first JSON object in a reply (models wrap it in fences or prose despite the schema).
fn json_object(reply: &str) -> Option<&str> {
    let start = reply.find('{')?;
    let end = reply.rfind('}')?;
    (end > start).then(|| &reply[start..=end])
}

/// Parses and checks a reply against the schema and what was recalled.
fn check_answer(
    reply: &str,
    recalled: &[PreferenceHit],
    req: &SavePreferenceRequest,
) -> std::result::Result<Decision, String> {
    let text = json_object(reply).ok_or("the answer holds no JSON object")?;
    let a: ModelAnswer =
        serde_json::from_str(text).map_err(|e| format!("the answer is not the JSON asked for: {e}"))?;
    let action = match a.action.trim().to_ascii_uppercase().as_str() {
        "ADD" => EvolutionAction::Add,
        "UPDATE" => EvolutionAction::Update,
        "IGNORE" => EvolutionAction::Ignore,
        other => return Err(format!("unknown action {other:?}: use ADD, UPDATE or IGNORE")),
    };
    let reasoning = a.reasoning.unwrap_or_default().trim().to_string();
    if action == EvolutionAction::Ignore {
        return Ok(Decision {
            action,
            target: None,
            content: String::new(),
            category: Category::Style,
            rule: None,
            reasoning,
        });
    }
    let content = a.new_content.as_deref().map(str::trim).filter(|c| !c.is_empty()).ok_or("new_content is empty")?;
    let content = super::valid_content(content).map_err(|e| e.to_string())?;
    let target = match action {
        EvolutionAction::Update => {
            let id = a.target_preference_id.as_deref().map(str::trim).filter(|t| !t.is_empty());
            let id = id.ok_or("UPDATE needs target_preference_id")?;
            if !recalled.iter().any(|h| h.preference.id == id && h.preference.agent_id == req.agent_id) {
                return Err(format!("target_preference_id {id} is not one of the agent's preferences listed"));
            }
            Some(id.to_string())
        }
        _ => None,
    };
    let rule = match a.rule.as_deref().map(str::trim).filter(|r| !r.is_empty() && *r != "null") {
        Some(r) => Some(Rule::parse(r).map_err(|e| format!("bad rule: {e}"))?.canonical()),
        None => None,
    };
    let category = match a.category.as_deref().map(str::trim).filter(|c| !c.is_empty()) {
        Some(c) => Category::parse(c)?,
        None => req.category.unwrap_or_else(|| policy::classify(&content)),
    };
    // A rule makes it a constraint.
    let category = if rule.is_some() { Category::Constraint } else { category };
    Ok(Decision { action, target, content, category, rule, reasoning })
}

/// The `docdex profile add` command that stores `text` for `agent` as it reads, quoted for a
/// POSIX shell.
fn add_command(agent: &str, category: Category, rule: Option<&str>, text: &str) -> String {
    let quote = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
    let rule = rule.map(|r| format!(" --rule {}", quote(r))).unwrap_or_default();
    format!("docdex profile add --agent {agent} --category {}{rule} {}", category.name(), quote(text))
}

/// Shortest run of characters two notices must share to count as one reason said twice.
const SAME_REASON_CHARS: usize = 40;

/// Says a long reason once: a dead model server is behind the recall, the decision and the
/// write alike, and each notice quoted its whole error (three times the same 250 characters).
/// A later notice's longest run shared with an earlier one, when long enough to be a reason
/// rather than a phrase, becomes "the same reason as above".
fn said_once(notices: &mut [String]) {
    for i in 1..notices.len() {
        let later: Vec<char> = notices[i].chars().collect();
        let best = (0..i)
            .map(|j| longest_shared_run(&notices[j].chars().collect::<Vec<_>>(), &later))
            .max_by_key(|&(_, len)| len);
        if let Some((start, len)) =
            best.map(|(start, len)| balanced(&later, start, len)).filter(|&(_, len)| len >= SAME_REASON_CHARS)
        {
            let mut text: String = later[..start].iter().collect();
            text.push_str("the same reason as above");
            text.extend(&later[start + len..]);
            notices[i] = text;
        }
    }
}

/// The run `start..start + len` of `text` without the punctuation around it: leading spaces
/// and opening brackets, and trailing spaces and closing brackets the run does not open
/// (so "ago (reason (os error 111))" gives "reason (os error 111)").
fn balanced(text: &[char], mut start: usize, mut len: usize) -> (usize, usize) {
    while len > 0 && (text[start].is_whitespace() || text[start] == '(') {
        start += 1;
        len -= 1;
    }
    loop {
        let run = &text[start..start + len];
        let unopened = run.iter().filter(|&&c| c == ')').count() > run.iter().filter(|&&c| c == '(').count();
        match run.last() {
            Some(c) if c.is_whitespace() || (*c == ')' && unopened) => len -= 1,
            _ => return (start, len),
        }
    }
}

/// Where in `b` the longest run of characters shared with `a` starts, and its length.
fn longest_shared_run(a: &[char], b: &[char]) -> (usize, usize) {
    let mut prev = vec![0usize; b.len() + 1];
    let (mut start, mut len) = (0, 0);
    for &ca in a {
        let mut row = vec![0usize; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            if ca == cb {
                row[j + 1] = prev[j] + 1;
                if row[j + 1] > len {
                    len = row[j + 1];
                    start = j + 1 - len;
                }
            }
        }
        prev = row;
    }
    (start, len)
}

impl Engine {
    /// Runs a statement through the evolution pipeline and returns the decision (the write is
    /// done when this returns). `dag` logs the decision in a reasoning-DAG session.
    pub fn profile_learn(&self, req: &SavePreferenceRequest, dag: Option<DagTarget>) -> Result<EvolutionOutcome> {
        self.learn_judged(req, dag, Judge::ModelOrFallback)
    }

    /// A chat message's statement when the turn found no chat model (`why`): nothing is
    /// stored; the outcome says why (a repeat, a contradiction, harm) or carries, as
    /// `suggestion`, the `docdex profile add` command that stores it.
    pub fn profile_learn_without_model(
        &self,
        req: &SavePreferenceRequest,
        dag: Option<DagTarget>,
        why: &str,
    ) -> Result<EvolutionOutcome> {
        self.learn_judged(req, dag, Judge::NoModel(why.to_string()))
    }

    fn learn_judged(
        &self,
        req: &SavePreferenceRequest,
        dag: Option<DagTarget>,
        judge: Judge,
    ) -> Result<EvolutionOutcome> {
        let mut outcome = self.learn_statement(req, dag, &judge)?;
        said_once(&mut outcome.notices);
        Ok(outcome)
    }

    /// [`Engine::profile_learn`] before its notices are tidied.
    fn learn_statement(
        &self,
        req: &SavePreferenceRequest,
        dag: Option<DagTarget>,
        judge: &Judge,
    ) -> Result<EvolutionOutcome> {
        let agent = self.require_agent(&req.agent_id)?;
        let input = super::valid_content(&req.preference)?;
        let req = SavePreferenceRequest { agent_id: agent.clone(), preference: input.clone(), ..req.clone() };
        let given_rule = match req.rule.as_deref().map(str::trim).filter(|r| !r.is_empty()) {
            Some(r) => Some(Rule::parse(r).map_err(Error::BadRequest)?.canonical()),
            None => None,
        };
        let mut outcome = EvolutionOutcome {
            agent_id: agent.clone(),
            input: input.clone(),
            action: EvolutionAction::Ignore,
            preference: None,
            target_preference_id: None,
            previous_content: None,
            reasoning: String::new(),
            decided_by: DecidedBy::Policy,
            attempts: 0,
            recalled: Vec::new(),
            notices: Vec::new(),
            suggestion: None,
        };
        if let Some(why) = policy::harmful(&input).or_else(|| policy::self_contradiction(&input)) {
            outcome.action = EvolutionAction::Refuse;
            outcome.reasoning = why;
            self.log_decision(&outcome, dag.as_ref());
            return Ok(outcome);
        }
        // Recall: the agent's own preferences closest to the statement.
        let known = self.profile_read(|c| Ok(store::agent(c, &agent)?.is_some()))?;
        if known {
            let r = self.profile_recall(&[agent.as_str()], &input, RECALL_LIMIT, false)?;
            outcome.notices.extend(r.notice);
            outcome.recalled = r.hits;
        }
        if let Some(team) = self.team_repeat(&agent, &input, &mut outcome)? {
            outcome.reasoning = covered_by_team(&team.preference, &agent);
            outcome.recalled.push(team);
            self.log_decision(&outcome, dag.as_ref());
            return Ok(outcome);
        }
        let decision = self.decide_evolution(&req, given_rule.as_deref(), judge, &mut outcome);
        if outcome.decided_by == DecidedBy::Fallback && *judge != Judge::ModelOrFallback {
            self.suggest_instead(decision, judge, &mut outcome)?;
        } else {
            self.apply_decision(decision, &mut outcome)?;
        }
        tracing::info!(agent = %agent, action = ?outcome.action, by = ?outcome.decided_by, "evolution decided");
        self.log_decision(&outcome, dag.as_ref());
        Ok(outcome)
    }

    /// The team's preference `input` repeats, by the rule that makes a statement a repeat of
    /// the agent's own ([`repeats`]), when `agent` is not the team: every agent follows the
    /// team's preferences, so learning one again for an agent only stored a second copy (the
    /// model was shown the agent's preferences alone, and the fallback compared with them).
    fn team_repeat(&self, agent: &str, input: &str, outcome: &mut EvolutionOutcome) -> Result<Option<PreferenceHit>> {
        if agent == TEAM_AGENT {
            return Ok(None);
        }
        let r = self.profile_recall(&[TEAM_AGENT], input, RECALL_LIMIT, false)?;
        let hit = r.hits.into_iter().find(|h| repeats(h, input));
        if hit.is_some() {
            outcome.decided_by = DecidedBy::Policy;
            if outcome.notices.is_empty() {
                outcome.notices.extend(r.notice);
            }
        }
        Ok(hit)
    }

    /// The decision: the model's (retried once), or the fallback without a model.
    fn decide_evolution(
        &self,
        req: &SavePreferenceRequest,
        given_rule: Option<&str>,
        judge: &Judge,
        outcome: &mut EvolutionOutcome,
    ) -> Decision {
        let mut messages = vec![
            ChatMessage::new(Role::System, system_prompt()),
            ChatMessage::new(Role::User, user_prompt(&outcome.recalled, &req.preference)),
        ];
        if let Judge::NoModel(_) = judge {
            outcome.attempts = 0;
            return self.evolution_fallback(req, given_rule, outcome);
        }
        if let Some(why) = self.profile_server_down() {
            outcome.attempts = 0;
            outcome.notices.push(format!("the model server did not answer moments ago ({why}); decided without it"));
            return self.evolution_fallback(req, given_rule, outcome);
        }
        let mut last_error = String::new();
        for attempt in 1..=2 {
            outcome.attempts = attempt;
            let reply = match self.ask_evolution_model(&messages) {
                Ok(r) => r,
                Err(e) => {
                    self.profile_note_server_failure(&e);
                    outcome.attempts = attempt - 1;
                    outcome.notices.push(format!("no model answered ({e}); decided without one"));
                    return self.evolution_fallback(req, given_rule, outcome);
                }
            };
            match check_answer(&reply, &outcome.recalled, req) {
                Ok(mut d) => {
                    outcome.decided_by = DecidedBy::Model;
                    if let (Some(r), EvolutionAction::Add | EvolutionAction::Update) = (given_rule, d.action) {
                        d.rule = Some(r.to_string());
                        d.category = Category::Constraint;
                    }
                    return d;
                }
                Err(why) => {
                    tracing::info!(attempt, %why, "the model's evolution answer was unusable");
                    last_error = why.clone();
                    messages.push(ChatMessage::new(Role::Assistant, reply));
                    messages.push(ChatMessage::new(
                        Role::User,
                        format!("That answer is not valid: {why}. Answer again with ONLY the JSON object."),
                    ));
                }
            }
        }
        outcome.decided_by = DecidedBy::Model;
        Decision {
            action: EvolutionAction::Ignore,
            target: None,
            content: String::new(),
            category: Category::Style,
            rule: None,
            reasoning: format!("the model's answer was not valid twice ({last_error}); nothing was written"),
        }
    }

    /// Asks the chat model for a decision in JSON mode; the whole reply.
    fn ask_evolution_model(&self, messages: &[ChatMessage]) -> Result<String> {
        let req = ChatRequest {
            model: String::new(),
            messages: messages.to_vec(),
            max_tokens: Some(DECISION_TOKENS),
            sampling: Sampling::temperature(0.0),
            context_tokens: None,
            format: Some(decision_schema()),
            stop: Vec::new(),
        };
        let reply = self.stream_chat(req, &mut |_| ControlFlow::Continue(()))?;
        Ok(reply.text)
    }

    /// Without a model: an exact or near duplicate is ignored, anything else added.
    fn evolution_fallback(
        &self,
        req: &SavePreferenceRequest,
        given_rule: Option<&str>,
        outcome: &mut EvolutionOutcome,
    ) -> Decision {
        outcome.decided_by = DecidedBy::Fallback;
        let same = outcome.recalled.iter().find(|h| repeats(h, &req.preference));
        // Nobody can ask whether a question was meant as a rule: it is not written down as one.
        if policy::asks(&req.preference) {
            return Decision {
                action: EvolutionAction::Ignore,
                target: None,
                content: String::new(),
                category: Category::Style,
                rule: None,
                reasoning: "a question, not a preference: state it (\"use tabs\") to have it remembered".into(),
            };
        }
        if let Some(h) = same {
            return Decision {
                action: EvolutionAction::Ignore,
                target: None,
                content: String::new(),
                category: h.preference.category,
                rule: None,
                reasoning: format!("already known as {} (\"{}\")", h.preference.id, h.preference.content),
            };
        }
        let category = if given_rule.is_some() {
            Category::Constraint
        } else {
            req.category.unwrap_or_else(|| policy::classify(&req.preference))
        };
        let rule = given_rule.map(str::to_string).or_else(|| {
            (category == Category::Constraint)
                .then(|| rules::recognise(&req.preference).map(|r| r.canonical()))
                .flatten()
        });
        Decision {
            action: EvolutionAction::Add,
            target: None,
            content: req.preference.clone(),
            category,
            rule,
            reasoning: "no model to compare it with the agent's preferences: added as a new one".into(),
        }
    }

    /// Without a model to judge a chat message's statement: nothing is written. The fallback's
    /// decision stands when it writes nothing (a question, a repeat); an ADD it would have made
    /// is checked against the policy (harm, a contradiction with a kept preference: REFUSE,
    /// naming the one to edit) and otherwise becomes IGNORE with the command that adds it.
    fn suggest_instead(&self, d: Decision, judge: &Judge, outcome: &mut EvolutionOutcome) -> Result<()> {
        if d.action != EvolutionAction::Add {
            outcome.reasoning = d.reasoning;
            return Ok(());
        }
        if let Some(why) = self.refusal(&d, &outcome.agent_id)? {
            outcome.action = EvolutionAction::Refuse;
            outcome.decided_by = DecidedBy::Policy;
            outcome.reasoning = format!("{why}; nothing was stored");
            return Ok(());
        }
        let rule = d.rule.clone().or_else(|| {
            (d.category == Category::Constraint).then(|| rules::recognise(&d.content).map(|r| r.canonical())).flatten()
        });
        let command = add_command(&outcome.agent_id, d.category, rule.as_deref(), &d.content);
        let why = match judge {
            Judge::NoModel(why) => why.clone(),
            _ => "no chat model answered".to_string(),
        };
        outcome.action = EvolutionAction::Ignore;
        outcome.reasoning = format!(
            "{why}, so nothing weighed it against the preferences of {} and nothing was stored; to keep it as it reads, run: {command}",
            outcome.agent_id
        );
        outcome.suggestion = Some(command);
        Ok(())
    }

    /// Checks a decision against the policy, then writes it.
    fn apply_decision(&self, d: Decision, outcome: &mut EvolutionOutcome) -> Result<()> {
        outcome.reasoning = d.reasoning.clone();
        if d.action == EvolutionAction::Ignore {
            if d.reasoning.trim_start().to_ascii_uppercase().starts_with("REFUSED") {
                outcome.action = EvolutionAction::Refuse;
            }
            return Ok(());
        }
        if let Some(why) = self.refusal(&d, &outcome.agent_id)? {
            outcome.action = EvolutionAction::Refuse;
            outcome.decided_by = DecidedBy::Policy;
            outcome.reasoning = format!("{why} (the model had decided {:?}: {})", d.action, d.reasoning);
            return Ok(());
        }
        // A constraint without a rule gets the one its text states, when recognised.
        let rule = d.rule.clone().or_else(|| {
            (d.category == Category::Constraint).then(|| rules::recognise(&d.content).map(|r| r.canonical())).flatten()
        });
        let written = match (d.action, d.target.as_deref()) {
            (EvolutionAction::Update, Some(id)) => self.apply_update(&d, id, rule, outcome)?,
            _ => self.apply_add(&d, rule, outcome)?,
        };
        let Some(written) = written else { return Ok(()) };
        outcome.action = d.action;
        let r = self.profile_written(written, false, String::new())?;
        outcome.notices.extend(r.notice);
        outcome.preference = Some(r.preference);
        Ok(())
    }

    /// Why the policy refuses the model's decision (harmful, contradicting itself or a kept
    /// preference of the agent or the team), if it does.
    fn refusal(&self, d: &Decision, agent: &str) -> Result<Option<String>> {
        let kept = self.profile_read(|c| store::preferences_of(c, &recall_agents(agent, true)))?;
        let text = format!("{} {}", d.content, d.rule.clone().unwrap_or_default());
        Ok(policy::harmful(&text)
            .or_else(|| policy::self_contradiction(&d.content))
            .or_else(|| policy::contradicts_kept(&d.content, d.rule.as_deref(), &kept, d.target.as_deref())))
    }

    /// Writes the model's UPDATE of preference `id`; `None` (the outcome IGNORE, saying why) when
    /// the preference changed while the model decided (an edit made meanwhile was overwritten
    /// unseen), or when the new words are another preference's the agent or the team keeps (an
    /// agent's preference rewritten into a team preference's words was kept as a second copy).
    /// Both are checked under the writer lock.
    fn apply_update(
        &self,
        d: &Decision,
        id: &str,
        rule: Option<String>,
        outcome: &mut EvolutionOutcome,
    ) -> Result<Option<Preference>> {
        let seen = outcome.recalled.iter().find(|h| h.preference.id == id).map(|h| h.preference.last_updated);
        let now = now_ms() as i64;
        let written = self.profile_write(|w| {
            let old = store::preference(w.conn(), id)?
                .ok_or_else(|| Error::NotFound(format!("preference {id} was removed while the model decided")))?;
            if Some(old.last_updated) != seen {
                return Ok(Err(Skipped::ChangedMeanwhile(old)));
            }
            let updated = Preference {
                content: d.content.clone(),
                category: d.category,
                rule,
                last_updated: now.max(old.last_updated + 1),
                source: PreferenceSource::Evolution,
                ..old.clone()
            };
            if let Some(same) = kept_same_text(w.conn(), &updated)? {
                return Ok(Err(Skipped::Repeat(same)));
            }
            w.update(&updated, updated.content != old.content)?;
            Ok(Ok((updated, old)))
        })?;
        match written {
            Ok((updated, old)) => {
                outcome.target_preference_id = Some(id.to_string());
                outcome.previous_content = Some(old.content);
                Ok(Some(updated))
            }
            Err(skipped) => {
                outcome.action = EvolutionAction::Ignore;
                outcome.reasoning = skipped.reason(d, &outcome.agent_id);
                Ok(None)
            }
        }
    }

    /// Writes the model's ADD; `None` (the outcome IGNORE, saying why) when its words are a
    /// preference the agent or the team keeps (it was stored as a second copy). Checked under
    /// the writer lock, so two statements learnt at once (a chat turn's and the CLI's) do not
    /// both add it.
    fn apply_add(
        &self,
        d: &Decision,
        rule: Option<String>,
        outcome: &mut EvolutionOutcome,
    ) -> Result<Option<Preference>> {
        let now = now_ms() as i64;
        let p = Preference {
            id: uuid::Uuid::new_v4().to_string(),
            agent_id: outcome.agent_id.clone(),
            content: d.content.clone(),
            category: d.category,
            rule,
            last_updated: now,
            source: PreferenceSource::Evolution,
            embedded: false,
        };
        let written = self.profile_write(|w| {
            if let Some(same) = kept_same_text(w.conn(), &p)? {
                return Ok(Err(Skipped::Repeat(same)));
            }
            self.profile_room(w.conn(), &p.agent_id)?;
            self.profile_agent_room(w.conn(), &p.agent_id)?;
            let created = w.ensure_agent(&p.agent_id, "", now, 0)?;
            w.insert(&p)?;
            Ok(Ok(created))
        })?;
        match written {
            Ok(created) => {
                if created {
                    outcome.notices.push(self.profile_created_agent_note(&p.agent_id));
                }
                Ok(Some(p))
            }
            Err(skipped) => {
                outcome.action = EvolutionAction::Ignore;
                outcome.reasoning = skipped.reason(d, &outcome.agent_id);
                Ok(None)
            }
        }
    }

    /// Records the decision in the reasoning DAG (never fails the pipeline).
    fn log_decision(&self, o: &EvolutionOutcome, dag: Option<&DagTarget>) {
        let Some(t) = dag else { return };
        let result = (|| -> Result<()> {
            let store = DagStore::open(&t.repo)?;
            let cursor =
                store.join_session(t.session.as_deref(), Some(&o.agent_id), &format!("profile: {}", o.input))?;
            let mut parents: Vec<i64> = t.parent.or(cursor.last_node).into_iter().collect();
            if t.session.is_none() {
                // A session of its own: the statement is its request.
                let label: String = o.input.chars().take(120).collect();
                let root = store.add_node(
                    &cursor.id,
                    NodeKind::UserRequest,
                    &label,
                    &json!({"query": o.input, "agent_id": o.agent_id, "tool": "profile_learn"}),
                    &[],
                )?;
                parents = vec![root];
            }
            let action = match o.action {
                EvolutionAction::Add => "ADD",
                EvolutionAction::Update => "UPDATE",
                EvolutionAction::Ignore => "IGNORE",
                EvolutionAction::Refuse => "REFUSE",
            };
            let label = format!("profile evolution for {}: {action}", o.agent_id);
            let payload = json!({"decision": "profile_evolution", "agent_id": o.agent_id, "input": o.input,
                "action": o.action, "target_preference_id": o.target_preference_id,
                "preference": o.preference.as_ref().map(|p| json!({"id": p.id, "content": p.content, "category": p.category, "rule": p.rule})),
                "previous_content": o.previous_content, "reasoning": o.reasoning, "decided_by": o.decided_by,
                "attempts": o.attempts, "recalled": o.recalled.iter().map(|h| json!({"id": h.preference.id, "score": h.similarity_score})).collect::<Vec<_>>()});
            store.add_node(&cursor.id, NodeKind::Decision, &label, &payload, &parents)?;
            Ok(())
        })();
        if let Err(e) = result {
            tracing::warn!(error = %e, "could not log the evolution decision in the reasoning DAG");
        }
    }

    /// Runs a chat turn's statement through the pipeline on a thread of its own: the caller
    /// does not wait. Only the model decides: when none answers, nothing is stored and the
    /// outcome carries the command that would store it. `key` (the turn's request id) names
    /// the run for [`Engine::profile_learn_outcome`]; [`Engine::profile_settle`] waits for all.
    pub fn profile_learn_in_background(&self, req: SavePreferenceRequest, dag: Option<DagTarget>, key: String) {
        let engine = self.clone();
        let spawned = std::thread::Builder::new().name("docdex-evolution".into()).spawn(move || {
            match engine.learn_judged(&req, dag, Judge::ModelOnly) {
                Ok(o) => Some(o),
                Err(e) => {
                    tracing::warn!(error = %e, "the background profile evolution failed");
                    None
                }
            }
        });
        match spawned {
            Ok(h) => {
                if let Ok(mut hs) = self.profiles().jobs.handles.lock() {
                    hs.retain(|(_, h)| !h.is_finished());
                    hs.push((key, h));
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not start the background profile evolution"),
        }
    }

    /// The outcome of the background run started under `key` (a chat turn's request id),
    /// waiting at most `timeout` for it: what a chat message taught the profile, for the
    /// surface to show (it was said nowhere but the reasoning DAG). `None` when no such run is
    /// known, it failed, or it is still running at the deadline (it then goes on).
    pub fn profile_learn_outcome(&self, key: &str, timeout: Duration) -> Option<EvolutionOutcome> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let finished = {
                let mut hs = self.profiles().jobs.handles.lock().ok()?;
                let i = hs.iter().position(|(k, _)| k == key)?;
                hs[i].1.is_finished().then(|| hs.remove(i).1)
            };
            if let Some(h) = finished {
                return h.join().ok().flatten();
            }
            if std::time::Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits (at most `timeout`) for background evolutions to finish; true when none is left.
    /// A one-shot CLI calls it after printing its answer, so a decision is not lost on exit.
    pub fn profile_settle(&self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let pending = self
                .profiles()
                .jobs
                .handles
                .lock()
                .map(|mut hs| {
                    hs.retain(|(_, h)| !h.is_finished());
                    hs.len()
                })
                .unwrap_or(0);
            if pending == 0 {
                return true;
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_quoted_by_several_notices_is_said_once() {
        let why = "cannot reach the ollama server at http://127.0.0.1:11434: Connection refused (os error 111)";
        let mut notes = vec![
            format!("recalled by matching words, not meaning: no embedder answered ({why})"),
            format!("the model server did not answer moments ago ({why}); decided without it"),
            format!("stored without an embedding ({why}); recall matches its words until an embedder answers"),
            "the agent was created".to_string(),
        ];
        said_once(&mut notes);
        assert!(notes[0].contains(why), "{notes:?}");
        assert_eq!(
            notes[1],
            "the model server did not answer moments ago (the same reason as above); decided without it"
        );
        assert!(notes[2].starts_with("stored without an embedding (the same reason as above); recall"), "{notes:?}");
        assert_eq!(notes[3], "the agent was created");
        // Short shared phrases are not a reason: left as they are.
        let mut short = vec!["no embedder answered".to_string(), "no embedder answered here".to_string()];
        said_once(&mut short);
        assert_eq!(short[1], "no embedder answered here");
    }

    fn hit(id: &str, agent: &str) -> PreferenceHit {
        PreferenceHit {
            preference: Preference {
                id: id.into(),
                agent_id: agent.into(),
                content: "Prefer using Jest for unit tests".into(),
                category: Category::Tooling,
                rule: None,
                last_updated: 1,
                source: PreferenceSource::Manual,
                embedded: true,
            },
            similarity_score: 0.9,
        }
    }

    fn req() -> SavePreferenceRequest {
        SavePreferenceRequest {
            agent_id: "a".into(),
            preference: "We are switching to Vitest".into(),
            category: None,
            rule: None,
        }
    }

    #[test]
    fn answers_are_checked_against_the_schema_and_the_recall() {
        let recalled = vec![hit("uuid-1", "a")];
        let ok = check_answer(
            "```json\n{\"action\": \"UPDATE\", \"target_preference_id\": \"uuid-1\", \"new_content\": \"Prefer Vitest for unit tests\", \"category\": \"tooling\", \"rule\": null, \"reasoning\": \"switch\"}\n```",
            &recalled,
            &req(),
        )
        .unwrap();
        assert_eq!(
            (ok.action, ok.target.as_deref(), ok.category),
            (EvolutionAction::Update, Some("uuid-1"), Category::Tooling)
        );
        for (bad, why) in [
            ("not json at all", "no JSON"),
            ("{\"action\": \"DELETE\"}", "unknown action"),
            ("{\"action\": \"UPDATE\", \"target_preference_id\": \"uuid-9\", \"new_content\": \"x\"}", "not one of"),
            ("{\"action\": \"UPDATE\", \"new_content\": \"x\"}", "needs target"),
            ("{\"action\": \"ADD\", \"new_content\": \"  \"}", "empty"),
            ("{\"action\": \"ADD\", \"new_content\": \"x\", \"rule\": \"forbid-everything\"}", "bad rule"),
            ("{\"action\": \"ADD\", \"new_content\": \"x\", \"category\": \"mood\"}", "unknown category"),
        ] {
            let e = check_answer(bad, &recalled, &req()).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        // Another agent's preference cannot be updated.
        assert!(check_answer(
            "{\"action\": \"UPDATE\", \"target_preference_id\": \"uuid-2\", \"new_content\": \"x\"}",
            &[hit("uuid-2", "b")],
            &req()
        )
        .is_err());
        // A rule makes it a constraint.
        let r = check_answer("{\"action\": \"ADD\", \"new_content\": \"No cycles\", \"category\": \"style\", \"rule\": \"no-import-cycles\", \"reasoning\": \"\"}", &recalled, &req()).unwrap();
        assert_eq!(r.category, Category::Constraint);
    }

    #[test]
    fn the_prompt_has_the_spec_shape() {
        let p = user_prompt(&[hit("uuid-1", "a")], "We are switching to Vitest for this project.");
        assert!(p.starts_with("Current Memory State regarding topic: ["), "{p}");
        assert!(p.contains("\"id\": \"uuid-1\"") && p.contains("New User Input: \"We are switching"), "{p}");
        assert!(system_prompt().starts_with(PROMPT_MARKER));
        assert_eq!(decision_schema()["properties"]["action"]["enum"], json!(["ADD", "UPDATE", "IGNORE"]));
    }
}
