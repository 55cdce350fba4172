//! Tiers 1 to 3 up to the model (Tier 0 is `tier0.rs`): the code and libs indexes, the
//! confidence gate, the web tier (wanted or not), repo memory, and the git diff
//! with its one-hop neighbours. Each step lands in the trace, as an event, and in the DAG.

use super::diff::{self, DiffTarget, FileDiff};
use super::sources::{self, Availability};
use super::types::*;
use super::{ms, Found, Turn};
use crate::engine::dag::NodeKind;
use crate::engine::fsutil::count;
use crate::engine::index::served;
use crate::engine::libs::types::LibsSearchRequest;
use crate::engine::search::types::{SearchRequest, SearchResponse};
use crate::engine::web::types::{
    DiscoveryStatus, FetchVia, PageStatus, WebResearchRequest, WebResearchResponse, WebTrace,
};
use crate::error::{Error, Result};
use serde_json::{json, Value};
use std::time::Instant;

/// Hits shown to the gate in the trace.
const GATE_TOP_HITS: usize = 5;
/// Memories recalled per question.
const MEMORY_LIMIT: usize = 8;
/// Neighbours added for a diff at most.
const MAX_NEIGHBOURS: usize = 12;
/// Passages taken from each web page.
const WEB_PASSAGES_PER_PAGE: usize = 2;

impl Turn<'_> {
    /// The diff `--diff` asks for. When git cannot diff the working tree because a tracked
    /// path is now a FIFO, socket or device ("unsupported file type"), those paths are left
    /// out and named in a notice, and the rest of the diff is read. Changed files docdex does
    /// not serve (a tracked `.env`, an ignored or oversized file: `index::served`, as `open`
    /// and context packs judge them) are left out too, named in a notice with why.
    pub(super) fn collect_diff(&mut self) -> Result<Option<(DiffTarget, Vec<FileDiff>)>> {
        let Some(d) = &self.req.diff else { return Ok(None) };
        let (target, paths) = (DiffTarget::parse(&d.target)?, d.paths.clone());
        let root = self.repo.root.clone();
        let files = match diff::collect(&root, &target, &paths) {
            Ok(files) => files,
            Err(e) => {
                let special = diff::special_files(&root).unwrap_or_default();
                if special.is_empty() {
                    return Err(e);
                }
                let files = diff::collect(&root, &target, &[paths, diff::excluding(&special)].concat())?;
                if let Some(note) = diff::special_note(&special) {
                    self.notice(note);
                }
                files
            }
        };
        Ok(Some((target, self.leave_out_unserved(files))))
    }

    /// `files` without those docdex does not serve; a notice names what went and why. A
    /// rename is judged by both its names: a secret moved under a served name is still shown
    /// whole in the patch.
    fn leave_out_unserved(&mut self, mut files: Vec<FileDiff>) -> Vec<FileDiff> {
        let paths: Vec<String> =
            files.iter().flat_map(|f| std::iter::once(&f.path).chain(&f.old_path)).cloned().collect();
        let refused = served::refusals(&self.repo.root, &paths, &self.engine.config().index, Default::default());
        if refused.is_empty() {
            return files;
        }
        files
            .retain(|f| !refused.contains_key(&f.path) && f.old_path.as_ref().is_none_or(|o| !refused.contains_key(o)));
        if let Some(note) = served::left_out_note(&refused, "the diff") {
            tracing::info!(repo = %self.repo.root.display(), "{note}");
            self.notice(note);
        }
        files
    }

    pub(super) fn plan_thought(
        &mut self,
        parents: &[Option<i64>],
        diff: Option<&(DiffTarget, Vec<FileDiff>)>,
        workflow: &[String],
    ) -> Option<i64> {
        let mut plan = vec!["search the code index".to_string()];
        if self.engine.config().memory.enabled {
            plan.push("recall repo memory".into());
        }
        if let Some((target, files)) = diff {
            plan.push(format!(
                "read the diff ({}, {}) and its one-hop neighbours",
                target.describe(),
                crate::engine::fsutil::count(files.len(), "file")
            ));
        }
        plan.push("gate on local confidence, budget the context, ask the model".into());
        plan.extend(workflow.iter().cloned());
        let label = format!("plan: {}", plan.join("; "));
        let payload = json!({"steps": plan, "web": self.req.web, "agent_id": self.trace.agent_id});
        self.dag.node(NodeKind::Thought, &label, payload, parents)
    }

    /// Tier 1: the code index. Returns the DAG observation node.
    pub(super) fn code_index(&mut self, plan: Option<i64>, found: &mut Found) -> Result<Option<i64>> {
        if self.skipped_for_stop(1, "code_index") {
            return Ok(None);
        }
        let started = Instant::now();
        let limit = self.engine.config().search.max_repo_hits.max(1) as usize;
        let sreq =
            SearchRequest { query: self.req.query.clone(), limit: Some(limit), for_chat: true, ..Default::default() };
        let call = self.dag.node(
            NodeKind::ToolCall,
            "search the code index",
            json!({"tool": "search", "index": "code", "query": self.req.query, "limit": limit}),
            &[plan],
        );
        let resp = match self.engine.search(&self.repo.root, &sreq) {
            Ok(r) => r,
            // Stopped mid-search (the query's embedding, the file ranking): a stop, not an error.
            Err(Error::Cancelled) => {
                self.stopped = true;
                self.dag.node(NodeKind::Observation, "search stopped", json!({"error": "cancelled"}), &[call]);
                let detail = "stopped while searching the code index (cancelled)".to_string();
                self.step(1, "code_index", StepStatus::Skipped, started, 0, detail);
                return Ok(None);
            }
            Err(e) => {
                self.dag.node(NodeKind::Observation, "search failed", json!({"error": e.to_string()}), &[call]);
                return Err(e);
            }
        };
        let top: Vec<Value> = resp
            .results
            .iter()
            .take(GATE_TOP_HITS)
            .map(|h| json!({"citation": h.chunk_id, "score": h.score}))
            .collect();
        let detail =
            format!("{}, confidence {:.2}", crate::engine::fsutil::count(resp.results.len(), "hit"), resp.confidence);
        self.trace.timings_ms.retrieval = ms(started);
        let obs = self.dag.node(
            NodeKind::Observation,
            &detail,
            json!({"hits": resp.results.len(), "total_hits": resp.total_hits, "confidence": resp.confidence, "top": top}),
            &[call],
        );
        self.step(1, "code_index", StepStatus::Ran, started, resp.results.len() as u32, detail);
        found.search = Some(resp);
        Ok(obs)
    }

    /// Tier 1: library docs from this repository's own libs index (`docdex libs fetch`).
    pub(super) fn libs_step(&mut self, plan: Option<i64>, found: &mut Found) {
        if self.skipped_for_stop(1, "libs_index") {
            return;
        }
        let started = Instant::now();
        if !self.engine.config().libs.enabled {
            self.step(1, "libs_index", StepStatus::Skipped, started, 0, "[libs] enabled = false".into());
            return;
        }
        if !crate::engine::libs::has_index(self.repo) {
            let detail = format!(
                "no libs index for this repository (`docdex libs fetch --repo {}` builds it)",
                self.repo.root.display()
            );
            self.step(1, "libs_index", StepStatus::Absent, started, 0, detail);
            return;
        }
        let limit = self.engine.config().libs.max_chat_hits.max(1) as usize;
        let call = self.dag.node(
            NodeKind::ToolCall,
            "search the libs index",
            json!({"tool": "search", "index": "libs", "query": self.req.query, "limit": limit}),
            &[plan],
        );
        let req = LibsSearchRequest { query: self.req.query.clone(), limit: Some(limit) };
        match self.engine.libs_search(&self.repo.root, &req) {
            Ok(r) => {
                let packages: std::collections::BTreeSet<String> =
                    r.hits.iter().map(|h| format!("{}@{}", h.package, h.version)).collect();
                let detail = format!(
                    "{} library passages{}",
                    r.hits.len(),
                    if packages.is_empty() {
                        String::new()
                    } else {
                        format!(" from {}", packages.into_iter().collect::<Vec<_>>().join(", "))
                    }
                );
                let cites: Vec<&str> = r.hits.iter().map(|h| h.citation.as_str()).collect();
                self.dag.node(NodeKind::Observation, &detail, json!({"hits": cites}), &[call]);
                let items = r.hits.len() as u32;
                found.libs = r.hits;
                self.step(1, "libs_index", StepStatus::Ran, started, items, detail);
            }
            Err(e) => {
                self.dag.node(NodeKind::Observation, "libs search failed", json!({"error": e.to_string()}), &[call]);
                self.step(1, "libs_index", StepStatus::Failed, started, 0, format!("libs index search failed: {e}"));
            }
        }
    }

    /// The confidence gate. Returns the DAG decision node.
    pub(super) fn gate(&mut self, obs: Option<i64>, search: Option<&SearchResponse>) -> Option<i64> {
        if self.skipped_for_stop(1, "gate") {
            return None;
        }
        let threshold = self.engine.config().search.web_trigger_threshold;
        let confidence = search.map(|s| s.confidence).unwrap_or(0.0);
        let top_hits = search
            .map(|s| {
                s.results
                    .iter()
                    .take(GATE_TOP_HITS)
                    .map(|h| ScoredHit { citation: h.chunk_id.clone(), score: h.score })
                    .collect()
            })
            .unwrap_or_default();
        let mut gate = decide_gate(confidence, threshold, self.req.web, top_hits);
        gate.web_available = self.engine.config().web.enabled;
        tracing::info!(confidence, threshold, web_wanted = gate.web_wanted, reason = %gate.reason, "waterfall gate");
        let label = format!("gate: {}", gate.reason);
        let node = self.dag.node(
            NodeKind::Decision,
            &label,
            json!({"decision": "gate", "confidence": confidence, "threshold": threshold, "passed": gate.passed,
                   "web_policy": gate.web_policy, "web_wanted": gate.web_wanted, "web_available": gate.web_available}),
            &[obs],
        );
        let detail = gate.reason.clone();
        self.trace.gate = gate;
        self.step(1, "gate", StepStatus::Ran, Instant::now(), 0, detail);
        node
    }

    /// Tier 2: discovery, the top `[search] max_web_hits` pages fetched, their best passages
    /// into the Web slot. Offline, blocked or failing, the step says why in a notice and the
    /// answer goes on from local context. Returns the DAG observation node when the web was wanted.
    pub(super) fn web_step(&mut self, gate: Option<i64>, found: &mut Found) -> Option<i64> {
        if self.skipped_for_stop(2, "web") {
            return None;
        }
        if !self.trace.gate.web_wanted {
            let why =
                if self.req.web == WebPolicy::Off { "web not wanted (--no-web)" } else { "local results suffice" };
            self.step(2, "web", StepStatus::Skipped, Instant::now(), 0, why.into());
            return None;
        }
        let started = Instant::now();
        let why_wanted = if self.req.web == WebPolicy::Force {
            "web search was asked for".to_string()
        } else {
            format!("local confidence is low ({})", self.trace.gate.reason)
        };
        let max_pages = self.engine.config().search.max_web_hits.max(1) as usize;
        let call = self.dag.node(
            NodeKind::ToolCall,
            "web research",
            json!({"tool": "web", "query": self.req.query, "max_pages": max_pages}),
            &[gate],
        );
        if !self.engine.config().web.enabled {
            let detail = "the web tier is off ([web] enabled = false)".to_string();
            let obs = self.dag.node(NodeKind::Observation, "web off", json!({"available": false}), &[call]);
            self.step(2, "web", StepStatus::Unavailable, started, 0, detail.clone());
            self.notice(format!("{why_wanted}, but {detail}; the answer uses local context only"));
            return obs;
        }
        let req = WebResearchRequest {
            query: self.req.query.clone(),
            max_pages: Some(max_pages),
            passages_per_page: Some(WEB_PASSAGES_PER_PAGE),
            force_web: Some(true),
        };
        let (status, detail, payload) = match self.engine.web_research(&req) {
            Ok(r) => {
                let (detail, payload) = describe_research(&r);
                let status = if r.passages.is_empty() { StepStatus::Unavailable } else { StepStatus::Ran };
                if r.passages.is_empty() {
                    self.notice(format!(
                        "{why_wanted}, but {}; the answer uses local context only",
                        why_no_passages(&r.trace)
                    ));
                }
                self.trace.web = Some(r.trace.clone());
                found.web = r.passages;
                (status, detail, payload)
            }
            Err(Error::Cancelled) => {
                // Stopped mid-fetch: the turn ends like any stop, with no "failed" notice.
                tracing::info!("chat turn cancelled during the web tier");
                self.stopped = true;
                let detail = "stopped while the web tier was searching and fetching (cancelled)".to_string();
                (StepStatus::Skipped, detail, json!({"error": "cancelled"}))
            }
            Err(e) => {
                self.notice(format!("{why_wanted}, but the web tier failed ({e}); the answer uses local context only"));
                (StepStatus::Failed, format!("web research failed: {e}"), json!({"error": e.to_string()}))
            }
        };
        tracing::info!(%detail, "waterfall web tier");
        self.trace.timings_ms.web = ms(started);
        let obs = self.dag.node(NodeKind::Observation, &detail, payload, &[call]);
        let items = found.web.len() as u32;
        self.step(2, "web", status, started, items, detail);
        obs
    }

    /// Tier 3: repo memory. Returns the DAG observation node.
    pub(super) fn memory_step(&mut self, plan: Option<i64>, found: &mut Found) -> Option<i64> {
        if self.skipped_for_stop(3, "memory") {
            return None;
        }
        let started = Instant::now();
        if !self.engine.config().memory.enabled {
            self.step(3, "memory", StepStatus::Skipped, started, 0, "[memory] enabled = false".into());
            return None;
        }
        let call = self.dag.node(
            NodeKind::ToolCall,
            "recall repo memory",
            json!({"tool": "memory_recall", "limit": MEMORY_LIMIT}),
            &[plan],
        );
        let (status, detail, payload) =
            match sources::recall_memory(self.engine, self.repo, &self.req.query, MEMORY_LIMIT) {
                Ok(Availability::Ready((m, notice))) => {
                    let mut detail = format!("{} recalled", crate::engine::fsutil::count(m.len(), "memory"));
                    if let Some(notice) = notice {
                        detail.push_str(&format!(" ({notice})"));
                    }
                    let ids: Vec<&str> = m.iter().map(|x| x.id.as_str()).collect();
                    let payload = json!({"memories": ids});
                    found.memories = m;
                    (StepStatus::Ran, detail, payload)
                }
                Ok(Availability::Unavailable(why)) => {
                    (StepStatus::Unavailable, why.clone(), json!({"available": false, "detail": why}))
                }
                Err(e) => (StepStatus::Failed, format!("memory recall failed: {e}"), json!({"error": e.to_string()})),
            };
        self.trace.timings_ms.memory = ms(started);
        let obs = self.dag.node(NodeKind::Observation, &detail, payload, &[call]);
        let items = found.memories.len() as u32;
        self.step(3, "memory", status, started, items, detail);
        obs
    }

    /// Tier 3: the diff and its one-hop neighbours. Returns the DAG observation node.
    pub(super) fn diff_step(
        &mut self,
        plan: Option<i64>,
        diff: Option<(DiffTarget, Vec<FileDiff>)>,
        diff_ms: f64,
        found: &mut Found,
    ) -> Option<i64> {
        if self.skipped_for_stop(3, "diff") {
            return None;
        }
        let Some((target, files)) = diff else {
            self.step(3, "diff", StepStatus::Skipped, Instant::now(), 0, "no --diff asked".into());
            return None;
        };
        let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        let call = self.dag.node(
            NodeKind::ToolCall,
            &format!("git diff ({})", target.describe()),
            json!({"tool": "git diff", "target": self.req.diff.as_ref().map(|d| d.target.clone()), "paths": self.req.diff.as_ref().map(|d| d.paths.clone())}),
            &[plan],
        );
        let detail = format!("{} changed files ({})", files.len(), target.describe());
        let obs = self.dag.node(NodeKind::Observation, &detail, json!({"files": paths}), &[call]);
        let step = StepTrace {
            tier: 3,
            name: "diff".into(),
            status: StepStatus::Ran,
            ms: diff_ms,
            items: files.len() as u32,
            detail,
        };
        self.trace.steps.push(step.clone());
        self.emit(ChatTurnEvent::Step(step));
        let started = Instant::now();
        let changed: Vec<String> =
            files.iter().filter(|f| f.change != diff::Change::Deleted).map(|f| f.path.clone()).collect();
        let mut last = obs;
        if !changed.is_empty() {
            let call = self.dag.node(
                NodeKind::ToolCall,
                "impact graph: one hop",
                json!({"tool": "impact", "files": changed}),
                &[obs],
            );
            let (status, detail, payload) = match sources::one_hop(self.engine, self.repo, &changed, MAX_NEIGHBOURS) {
                Ok(Availability::Ready(n)) => {
                    let detail = format!("{} neighbours one import away", n.len());
                    let payload = json!({"neighbours": n.iter().map(|x| json!({"path": x.path, "changed": x.changed, "dependent": x.dependent})).collect::<Vec<_>>()});
                    found.neighbours = n;
                    (StepStatus::Ran, detail, payload)
                }
                Ok(Availability::Unavailable(why)) => {
                    (StepStatus::Unavailable, why.clone(), json!({"available": false, "detail": why}))
                }
                Err(e) => {
                    (StepStatus::Failed, format!("impact expansion failed: {e}"), json!({"error": e.to_string()}))
                }
            };
            last = self.dag.node(NodeKind::Observation, &detail, payload, &[call]);
            let items = found.neighbours.len() as u32;
            self.step(3, "impact", status, started, items, detail);
        }
        // Rounded again: the sum of two rounded figures can print as 16.224999999999998.
        self.trace.timings_ms.diff = ((diff_ms + ms(started)) * 1e3).round() / 1e3;
        found.diff_label = target.describe();
        found.diff = files;
        last
    }
}

/// The gate: stay local when `confidence >= threshold`; want the web below it or when forced;
/// never with `--no-web`.
pub fn decide_gate(confidence: f64, threshold: f64, policy: WebPolicy, top_hits: Vec<ScoredHit>) -> GateTrace {
    let passed = confidence >= threshold;
    let cmp = if passed { ">=" } else { "<" };
    let (web_wanted, reason) = match policy {
        WebPolicy::Off => {
            (false, format!("web suppressed (--no-web); confidence {confidence:.2} {cmp} threshold {threshold:.2}"))
        }
        WebPolicy::Force => {
            (true, format!("web forced (--force-web); confidence {confidence:.2} {cmp} threshold {threshold:.2}"))
        }
        WebPolicy::Auto if passed => {
            (false, format!("confidence {confidence:.2} >= threshold {threshold:.2}: stay local"))
        }
        WebPolicy::Auto => (true, format!("confidence {confidence:.2} < threshold {threshold:.2}: web wanted")),
    };
    GateTrace { confidence, threshold, passed, top_hits, web_policy: policy, web_wanted, reason, web_available: false }
}

/// The web step's trace line (discovery, pages by outcome and fetcher, passages, rate-limit
/// waits) and its DAG payload.
fn describe_research(r: &WebResearchResponse) -> (String, Value) {
    let t = &r.trace;
    let fetched = t.pages.iter().filter(|p| p.status == PageStatus::Fetched).count();
    let cached = t.pages.iter().filter(|p| p.status == PageStatus::Cached).count();
    let failed = t.pages.len() - fetched - cached;
    let vias: std::collections::BTreeSet<&str> = t
        .pages
        .iter()
        .filter_map(|p| p.via)
        .map(|v| if v == FetchVia::Chromium { "chromium" } else { "http" })
        .collect();
    let discovery = match t.discovery {
        Some(DiscoveryStatus::Ok) => format!("{} ({})", count(t.results, "result"), t.discovery_source),
        Some(DiscoveryStatus::Blocked) => "discovery blocked".into(),
        Some(DiscoveryStatus::Failed) | None => "discovery failed".into(),
    };
    let via = if vias.is_empty() {
        String::new()
    } else {
        format!(" (via {})", vias.into_iter().collect::<Vec<_>>().join(", "))
    };
    let mut detail = format!(
        "{discovery}; {}: {fetched} fetched, {cached} cached, {failed} failed{via}; {}",
        count(t.pages.len(), "page"),
        count(r.passages.len(), "passage")
    );
    let waited = t.discovery_waited_ms + t.pages.iter().map(|p| p.waited_ms).sum::<u64>();
    if waited > 0 {
        detail.push_str(&format!("; waited {waited} ms for rate limits"));
    }
    let pages: Vec<Value> =
        t.pages.iter().map(|p| json!({"url": p.url, "status": p.status, "via": p.via, "error": p.error})).collect();
    let payload = json!({"discovery": t.discovery, "results": t.results, "pages": pages, "passages": r.passages.len()});
    (detail, payload)
}

/// Why web research gave no passage, in the words of the notice the user sees.
fn why_no_passages(t: &WebTrace) -> String {
    match t.discovery {
        Some(DiscoveryStatus::Blocked) => {
            "the search endpoint is blocking queries (bot challenge or rate limit)".into()
        }
        Some(DiscoveryStatus::Failed) | None => {
            format!("the web could not be reached ({})", t.notes.first().cloned().unwrap_or_else(|| "offline?".into()))
        }
        Some(DiscoveryStatus::Ok) if t.results == 0 => "the web search found nothing".into(),
        Some(DiscoveryStatus::Ok) => "no fetched page had a passage matching the question".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_compares_confidence_with_the_threshold_inclusively() {
        let at = decide_gate(0.7, 0.7, WebPolicy::Auto, vec![]);
        assert!(at.passed && !at.web_wanted, "{at:?}");
        let below = decide_gate(0.69, 0.7, WebPolicy::Auto, vec![]);
        assert!(!below.passed && below.web_wanted && !below.web_available);
        let forced = decide_gate(0.95, 0.7, WebPolicy::Force, vec![]);
        assert!(forced.passed && forced.web_wanted);
        let off = decide_gate(0.1, 0.7, WebPolicy::Off, vec![]);
        assert!(!off.passed && !off.web_wanted);
        assert!(off.reason.contains("0.10 < threshold 0.70"), "{}", off.reason);
    }
}
