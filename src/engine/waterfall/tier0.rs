//! Tier 0 (spec 001 §2.2, §3.4): before any repository retrieval, the asking agent's
//! preferences (with the team's), most similar to the question first, and its project map.
//! Both fill slots of their own ahead of the repository context, which follows them in the
//! prompt so it wins where they conflict ("hierarchy of truth"). Workflow preferences also
//! become steps of the turn's plan. A message that states a preference is handed to the
//! evolution pipeline in the background after the answer.

use super::types::*;
use super::{Found, Turn};
use crate::engine::dag::NodeKind;
use crate::engine::profiles::evolution::DagTarget;
use crate::engine::profiles::policy::carries_preference;
use crate::engine::profiles::recall::{recall_agents, MAX_RECALL};
use crate::engine::profiles::types::{Category, ProjectMapRequest, RecallMode, SavePreferenceRequest, TEAM_AGENT};
use crate::engine::Engine;
use crate::error::Error;
use serde_json::json;
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
            Err(Error::NotFound(_)) => false,
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
                let how = if r.mode == RecallMode::Vector { "by meaning" } else { "by words" };
                let rules = r.hits.iter().filter(|h| h.preference.rule.is_some()).count();
                let mut detail = format!(
                    "{} preferences of {} recalled {how}, {rules} with a rule",
                    r.hits.len(),
                    agents.join(" + ")
                );
                if let Some(note) = &unknown_note {
                    detail.push_str(&format!("; {note}"));
                }
                if let Some(n) = &r.notice {
                    detail.push_str(&format!(" ({n})"));
                }
                let payload = json!({"mode": r.mode, "preferences": r.hits.iter().map(|h| json!({"id": h.preference.id,
                    "agent_id": h.preference.agent_id, "category": h.preference.category, "score": h.similarity_score})).collect::<Vec<_>>()});
                found.profile = r.hits;
                (StepStatus::Ran, detail, payload)
            }
            Err(e) => (StepStatus::Failed, format!("profile recall failed: {e}"), json!({"error": e.to_string()})),
        };
        let obs = self.dag.node(NodeKind::Observation, &detail, payload, &[call]);
        let items = found.profile.len() as u32;
        self.step(0, "profile", status, started, items, detail);
        obs
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

impl Engine {
    /// After a turn: a message that states a preference goes to the evolution pipeline in the
    /// background (never delaying the answer); its decision joins the turn's DAG session.
    pub(super) fn evolve_from_turn(&self, req: &ChatTurnRequest, resp: &mut ChatTurnResponse) {
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
        self.profile_learn_in_background(learn, target);
        let note = format!(
            "this message states a preference: the profile of {agent} is being updated in the background (the decision is logged in this session)"
        );
        tracing::info!(%agent, "chat turn handed to the evolution pipeline");
        resp.trace.notices.push(note);
    }
}
