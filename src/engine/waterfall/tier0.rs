//! Tier 0 (spec 001 §2.2, §3.4): before any repository retrieval, the asking agent's
//! preferences (with the team's), most similar to the question first, and its project map.
//! Both fill slots of their own ahead of the repository context, which follows them in the
//! prompt so it wins where they conflict ("hierarchy of truth"). Workflow preferences also
//! become steps of the turn's plan. A message that states a preference is handed to the
//! evolution pipeline in the background after the answer.

use super::budget::Fitted;
use super::context::profile_citation;
use super::types::*;
use super::{Found, Turn};
use crate::engine::dag::NodeKind;
use crate::engine::profiles::evolution::DagTarget;
use crate::engine::profiles::policy::carries_preference;
use crate::engine::profiles::recall::{recall_agents, MAX_RECALL};
use crate::engine::profiles::store::text_key;
use crate::engine::profiles::types::{
    Category, PreferenceHit, ProjectMapRequest, RecallMode, SavePreferenceRequest, TEAM_AGENT,
};
use crate::engine::Engine;
use crate::error::Error;
use serde_json::json;
use std::collections::HashSet;
use std::time::Instant;

impl Turn<'_> {
    /// The agent this turn answers as: the request's, else `[memory.profile] default_agent`.
    pub(super) fn agent(&self) -> Option<String> {
        self.engine.resolve_agent(self.req.agent_id.as_deref())
    }

    /// Tier 0: the agent's and the team's preferences, all of them, most similar first (the
    /// budget keeps as many as fit its cap). Returns the DAG observation node.
    pub(super) fn profile_step(&mut self, root: Option<i64>, found: &mut Found) -> Option<i64> {
        if self.skipped_for_stop(0, "profile") {
            return None;
        }
        let started = Instant::now();
        let Some(agent) = self.agent() else {
            let detail = "no agent id (--agent, x-docdex-agent-id, [memory.profile] default_agent): the profile slot stays empty";
            self.step(0, "profile", StepStatus::Skipped, started, 0, detail.into());
            return None;
        };
        let known = match self.engine.profile_agent_exists(&agent) {
            Ok(()) => true,
            Err(Error::UnknownAgent(_)) => false,
            Err(e) => {
                self.step(0, "profile", StepStatus::Failed, started, 0, format!("profile memory failed: {e}"));
                return None;
            }
        };
        let unknown_note = (!known).then(|| self.engine.profile_unknown_agent_note(&agent));
        if let Some(note) = &unknown_note {
            // Said, not only traced: a mistyped --agent otherwise answers without its preferences.
            self.notice(note.clone());
        }
        let agents = if known { recall_agents(&agent, true) } else { vec![TEAM_AGENT] };
        let call = self.dag.node(
            NodeKind::ToolCall,
            &format!("recall the profile of {agent}"),
            json!({"tool": "profile_recall", "agent_id": agent, "agents": agents}),
            &[root],
        );
        let (status, detail, payload) = match self.engine.profile_recall(&agents, &self.req.query, MAX_RECALL, false) {
            Ok(r) => {
                let (hits, repeats) = without_repeats(r.hits, &agent);
                let mut tail = String::new();
                if repeats > 0 {
                    tail.push_str(&format!("; {repeats} left out as repeating one of {agent}'s own"));
                }
                if let Some(note) = &unknown_note {
                    tail.push_str(&format!("; {note}"));
                }
                if let Some(n) = &r.notice {
                    tail.push_str(&format!(" ({n})"));
                }
                let note = ProfileNote { agents: agents.join(" + "), mode: r.mode, tail };
                let detail = note.detail(&hits, None);
                let payload = json!({"mode": r.mode, "preferences": hits.iter().map(|h| json!({"id": h.preference.id,
                    "agent_id": h.preference.agent_id, "category": h.preference.category, "score": h.similarity_score})).collect::<Vec<_>>()});
                found.profile = hits;
                found.profile_note = Some(note);
                (StepStatus::Ran, detail, payload)
            }
            Err(e) => (StepStatus::Failed, format!("profile recall failed: {e}"), json!({"error": e.to_string()})),
        };
        let obs = self.dag.node(NodeKind::Observation, &detail, payload, &[call]);
        let items = found.profile.len() as u32;
        self.step(0, "profile", status, started, items, detail);
        obs
    }

    /// Restates the profile step once the budget has run: it said how many preferences were
    /// recalled, which read as "in the prompt" when the slot's cap had dropped most of them
    /// ("11 preferences recalled" with one kept); it now says how many were used and dropped.
    pub(super) fn settle_profile_step(&mut self, found: &Found, fitted: &Fitted) {
        let Some(note) = &found.profile_note else { return };
        let kept: HashSet<&str> =
            fitted.kept.iter().filter(|p| p.slot == Slot::Profile).map(|p| p.citation.as_str()).collect();
        let cap = fitted.slots.iter().find(|s| s.slot == Slot::Profile).map_or(0, |s| s.allotted);
        let detail = note.detail(&found.profile, Some((&kept, cap)));
        if let Some(step) = self.trace.steps.iter_mut().find(|s| s.name == "profile" && s.status == StepStatus::Ran) {
            step.detail = detail;
        }
    }

    /// Tier 0: the agent's project map (cached per agent). Returns the DAG observation node.
    pub(super) fn map_step(&mut self, root: Option<i64>, found: &mut Found) -> Option<i64> {
        if self.skipped_for_stop(0, "project_map") {
            return None;
        }
        let started = Instant::now();
        let Some(agent) = self.agent() else {
            self.step(0, "project_map", StepStatus::Skipped, started, 0, "no agent id: no project map".into());
            return None;
        };
        let req = ProjectMapRequest { agent_id: Some(agent.clone()), refresh: false };
        let call = self.dag.node(
            NodeKind::ToolCall,
            &format!("project map for {agent}"),
            json!({"tool": "project_map", "agent_id": agent}),
            &[root],
        );
        let (status, detail, payload) = match self.engine.project_map(&self.repo.root, &req) {
            Ok(m) => {
                let detail = format!(
                    "{} paths shown, {} hidden, depth {}, {} tokens{}",
                    m.paths.len(),
                    m.hidden_files,
                    m.depth,
                    m.tokens,
                    if m.cached { " (cached)" } else { "" }
                );
                let payload = json!({"keywords": m.keywords, "paths": m.paths, "cached": m.cached, "tokens": m.tokens});
                found.map = Some(m);
                (StepStatus::Ran, detail, payload)
            }
            Err(e) => (StepStatus::Failed, format!("project map failed: {e}"), json!({"error": e.to_string()})),
        };
        let obs = self.dag.node(NodeKind::Observation, &detail, payload, &[call]);
        let items = found.map.as_ref().map_or(0, |m| m.paths.len() as u32);
        self.step(0, "project_map", status, started, items, detail);
        obs
    }

    /// The workflow preferences Tier 0 found, for the plan.
    pub(super) fn workflow_steps(found: &Found) -> Vec<String> {
        found
            .profile
            .iter()
            .filter(|h| h.preference.category == Category::Workflow)
            .take(5)
            .map(|h| format!("follow the workflow preference \"{}\"", h.preference.content))
            .collect()
    }
}

/// `hits` without the team's preferences that repeat one of `agent`'s own (same words and
/// rule; an agent may hold a team text, `learn` compares only the agent's own), and without a
/// second copy of any text: the profile slot carried such a line twice. Returns how many went.
fn without_repeats(hits: Vec<PreferenceHit>, agent: &str) -> (Vec<PreferenceHit>, usize) {
    let key = |h: &PreferenceHit| (text_key(&h.preference.content), h.preference.rule.clone());
    let own: HashSet<_> = hits.iter().filter(|h| h.preference.agent_id == agent).map(key).collect();
    let mut seen = HashSet::new();
    let before = hits.len();
    let kept: Vec<PreferenceHit> = hits
        .into_iter()
        .filter(|h| {
            let k = key(h);
            (h.preference.agent_id == agent || !own.contains(&k)) && seen.insert(k)
        })
        .collect();
    let gone = before - kept.len();
    (kept, gone)
}

/// What the profile step found, to say it again once the budget has decided what is used.
pub(super) struct ProfileNote {
    /// Whose preferences (`tara + team`).
    agents: String,
    /// By meaning or by words.
    mode: RecallMode,
    /// The unknown-agent note and the recall's notice, as said.
    tail: String,
}

impl ProfileNote {
    /// The step's line: what was recalled and, with `used` (the kept citations and the slot's
    /// tokens), how many of those the prompt holds and how many were dropped.
    fn detail(&self, hits: &[PreferenceHit], used: Option<(&HashSet<&str>, u32)>) -> String {
        let n = hits.len();
        let how = if self.mode == RecallMode::Vector { "by meaning" } else { "by words" };
        let agents = &self.agents;
        let ruled = |h: &PreferenceHit| h.preference.rule.is_some();
        let head = match used {
            Some((kept, cap)) if n > 0 => {
                let in_prompt: Vec<&PreferenceHit> =
                    hits.iter().filter(|h| kept.contains(profile_citation(&h.preference.id).as_str())).collect();
                let (k, r) = (in_prompt.len(), in_prompt.iter().filter(|h| ruled(h)).count());
                if k == n {
                    format!("{n} preferences of {agents} recalled {how}, all used, {r} with a rule")
                } else {
                    format!(
                        "{k} of {n} preferences of {agents} used (recalled {how}), {r} with a rule; {} dropped: the least similar, past the profile slot's {cap} tokens",
                        n - k
                    )
                }
            }
            _ => {
                format!(
                    "{n} preferences of {agents} recalled {how}, {} with a rule",
                    hits.iter().filter(|h| ruled(h)).count()
                )
            }
        };
        format!("{head}{}", self.tail)
    }
}

impl Engine {
    /// After a turn: a message that states a preference goes to the evolution pipeline, which
    /// the chat model decides in the background (never delaying the answer; its decision joins
    /// the turn's DAG session and [`Engine::profile_learn_outcome`] answers it under the turn's
    /// request id). When the turn found no chat model, nothing can weigh the statement against
    /// the profile: it is not stored, and the notice says why or gives the `docdex profile add`
    /// command that stores it. Either way the notice is sent as an event, not only kept in
    /// the trace (it showed in `--json` alone).
    pub(super) fn evolve_from_turn(
        &self,
        req: &ChatTurnRequest,
        resp: &mut ChatTurnResponse,
        on_event: super::OnChatEvent<'_>,
    ) {
        let Some(agent) = self.resolve_agent(req.agent_id.as_deref()) else { return };
        if !carries_preference(&req.query) {
            return;
        }
        let target = self.resolve_repo(&resp.repo).ok().map(|repo| DagTarget {
            repo,
            session: Some(resp.session_id.clone()),
            parent: None,
        });
        let learn = SavePreferenceRequest {
            agent_id: agent.clone(),
            preference: req.query.clone(),
            category: None,
            rule: None,
        };
        let note = if resp.llm.status == AnswerStatus::Unavailable {
            let why = format!(
                "no chat model answered this turn ({}: {})",
                resp.llm.model,
                resp.llm.error_code.as_deref().unwrap_or("unavailable")
            );
            match self.profile_learn_without_model(&learn, target, &why) {
                Ok(o) => {
                    format!("this message states a preference, but it was not learnt for {agent}: {}", o.reasoning)
                }
                Err(e) => format!("this message states a preference, but it was not learnt for {agent}: {e}"),
            }
        } else {
            self.profile_learn_in_background(learn, target, resp.trace.request_id.clone());
            format!(
                "this message states a preference: the profile of {agent} is being updated in the background (the decision is logged in this session)"
            )
        };
        tracing::info!(%agent, "chat turn handed to the evolution pipeline");
        resp.trace.notices.push(note.clone());
        let _ = on_event(ChatTurnEvent::Notice { message: note });
    }
}
