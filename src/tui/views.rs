//! Engine answers turned into the view-models the panes draw: a chat turn's `ChatTrace` into
//! the waterfall pane's [`TraceView`], the reasoning DAG's sessions and nodes into
//! [`DagView`], a turn's sources into the chat's numbered [`Citation`]s. Pure functions, so
//! the mapping is tested without a terminal and every surface of the engine means the same
//! thing in the TUI as in `docdex chat --trace` and `docdex dag view`.

use super::event::{Citation, Conversation};
use super::widgets::dag::{DagNode, DagPage, DagSession, DagView};
use super::widgets::thousands;
use super::widgets::trace::fmt_ms;
use super::widgets::trace::{DroppedSnippet, SlotBudget, TierRun, TraceView, WebPageRun, WebRun};
use crate::engine::protocol::{ChatSource, ChatTrace, StepStatus, StepTrace};
use crate::engine::protocol::{DagConversation, DagSession as EngineDagSession, DagSessionList, DagSessionSummary};
use crate::engine::protocol::{DiscoveryStatus, FetchVia, PageStatus, WebTrace};
use serde_json::Value;

/// The name of a step's status, as the trace prints it.
fn status_name(s: StepStatus) -> &'static str {
    match s {
        StepStatus::Ran => "ran",
        StepStatus::Skipped => "skipped",
        StepStatus::Absent => "absent",
        StepStatus::Unavailable => "unavailable",
        StepStatus::Failed => "failed",
    }
}

/// One line for a finished step while the turn runs: `code_index ran · 12 items · 14 ms`.
pub fn step_text(step: &StepTrace) -> String {
    let mut out = format!("{} {}", step.name, status_name(step.status));
    if step.items > 0 {
        out.push_str(&format!(" · {} items", step.items));
    }
    if !step.detail.is_empty() {
        out.push_str(&format!(" · {}", step.detail));
    }
    out
}

/// The waterfall pane's view of a turn's trace: every step in run order (the gate with its
/// confidence against the threshold), the budget per slot, the drops, the context window and
/// model call, timings and notices.
pub fn trace_view(turn: u64, question: &str, trace: &ChatTrace) -> TraceView {
    let tiers = trace
        .steps
        .iter()
        .map(|s| {
            let gate = s.name == "gate";
            let outcome = if gate && !trace.gate.reason.is_empty() {
                // The bar already shows the score against the threshold; keep the decision.
                let r = &trace.gate.reason;
                r.rsplit_once(": ").map_or(r.as_str(), |(_, decision)| decision).to_string()
            } else if s.detail.is_empty() {
                status_name(s.status).to_string()
            } else if s.status == StepStatus::Ran {
                s.detail.clone()
            } else {
                format!("{}: {}", status_name(s.status), s.detail)
            };
            TierRun {
                name: s.name.clone(),
                ran: s.status == StepStatus::Ran,
                score: gate.then_some(trace.gate.confidence),
                threshold: gate.then_some(trace.gate.threshold),
                outcome,
                ms: s.ms,
            }
        })
        .collect();
    let budget = trace
        .budget
        .slots
        .iter()
        .map(|s| SlotBudget {
            slot: s.slot.name().to_string(),
            used: s.used,
            limit: s.allotted,
            items: s.items,
            dropped: s.dropped,
        })
        .collect();
    let dropped = trace
        .drops
        .iter()
        .map(|d| DroppedSnippet {
            source: format!("{} {}", d.slot.name(), d.source),
            tokens: d.tokens,
            reason: d.reason.clone(),
        })
        .collect();
    let t = &trace.timings_ms;
    let mut timings = vec![
        ("retrieval".to_string(), t.retrieval),
        ("memory".to_string(), t.memory),
        ("diff".to_string(), t.diff),
        ("assembly".to_string(), t.assembly),
    ];
    timings.extend(t.first_token.map(|ms| ("first token".to_string(), ms)));
    timings.extend(t.generation.map(|ms| ("generation".to_string(), ms)));
    TraceView {
        turn,
        question: question.to_string(),
        tiers,
        budget,
        dropped,
        timings,
        total_ms: t.total,
        context: context_lines(trace),
        notices: trace.notices.clone(),
        web: trace.web.as_ref().map(web_run),
    }
}

/// The web tier's part of a trace, as the waterfall pane draws it.
fn web_run(web: &WebTrace) -> WebRun {
    let mut summary = format!("search \"{}\"", web.query);
    match web.discovery {
        Some(d) => {
            let status = match d {
                DiscoveryStatus::Ok => "ok",
                DiscoveryStatus::Blocked => "blocked",
                DiscoveryStatus::Failed => "failed",
            };
            summary.push_str(&format!(" · {status}"));
            if !web.discovery_source.is_empty() {
                summary.push_str(&format!(" ({})", web.discovery_source));
            }
            summary.push_str(&format!(" · {}", crate::tui::widgets::count(web.results as u64, "result", "results")));
        }
        None => summary.push_str(" · not searched"),
    }
    if web.discovery_waited_ms > 0 {
        summary.push_str(&format!(" · waited {} for the rate limit", fmt_ms(web.discovery_waited_ms as f64)));
    }
    summary.push_str(&format!(" · {}", fmt_ms(web.ms)));
    let pages = web
        .pages
        .iter()
        .map(|p| {
            let (status, ok) = match p.status {
                PageStatus::Fetched => ("fetched", true),
                PageStatus::Cached => ("cached", true),
                PageStatus::Refused => ("refused", false),
                PageStatus::Failed => ("failed", false),
            };
            let mut outcome = status.to_string();
            if let Some(via) = p.via {
                outcome.push_str(match via {
                    FetchVia::Chromium => " · chromium",
                    FetchVia::Http => " · http",
                });
            }
            if ok {
                outcome.push_str(&format!(" · {} passage{}", p.passages, if p.passages == 1 { "" } else { "s" }));
            }
            if p.waited_ms > 0 {
                outcome.push_str(&format!(" · waited {}", fmt_ms(p.waited_ms as f64)));
            }
            outcome.push_str(&format!(" · {}", fmt_ms(p.ms)));
            if let Some(e) = &p.error {
                outcome.push_str(&format!(": {e}"));
            }
            WebPageRun { url: p.url.clone(), ok, outcome }
        })
        .collect();
    WebRun { summary, pages, notes: web.notes.clone() }
}

/// The window, tokenizer and model call in words.
fn context_lines(trace: &ChatTrace) -> Vec<String> {
    let b = &trace.budget;
    let m = &trace.model;
    let mut out = Vec::new();
    if b.context_window > 0 {
        let exact = if b.tokenizer.exact { "exact" } else { "approximate" };
        out.push(format!(
            "window {} tokens from {} · prompt {} · answer up to {} · {} {exact}, ratio {:.2}",
            thousands(b.context_window as u64),
            b.window_source,
            thousands(b.prompt_tokens as u64),
            thousands(b.max_answer_tokens as u64),
            b.tokenizer.name,
            b.tokenizer.ratio,
        ));
    }
    if !m.model.is_empty() {
        let mut line = format!("model {} on {} ({})", m.model, m.provider, m.base_url);
        if let Some(r) = m.prompt_tokens_reported {
            line.push_str(&format!(" · prompt {} reported", thousands(r as u64)));
        }
        if let Some(c) = m.completion_tokens {
            line.push_str(&format!(" · {} generated", thousands(c as u64)));
        }
        if let Some(f) = &m.finish_reason {
            line.push_str(&format!(" · finish {f}"));
        }
        out.push(line);
    }
    out
}

/// The answer's sources as the chat numbers them: the file and web-page sources the answer
/// cites, in prompt order; when it cites none (no model, or a model that does not cite), every
/// such source it was given, so the user can still open what was found.
pub fn citations(sources: &[ChatSource]) -> Vec<Citation> {
    let file = |s: &&ChatSource| (s.path.is_some() && s.line_start.is_some()) || s.url.is_some();
    let cited: Vec<&ChatSource> = sources.iter().filter(file).filter(|s| s.cited).collect();
    let chosen: Vec<&ChatSource> = if cited.is_empty() { sources.iter().filter(file).collect() } else { cited };
    let mut out: Vec<Citation> = Vec::new();
    for s in chosen {
        let c = Citation {
            path: s.path.clone().unwrap_or_default(),
            line_start: s.line_start.unwrap_or(1),
            line_end: s.line_end.or(s.line_start).unwrap_or(1),
            cited: s.cited,
            url: s.url.clone(),
        };
        if !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

/// Adds ` [n]` after each place the answer names citation `n`, so the markdown renderer makes
/// it selectable (the answer itself cites as `path:a-b`).
pub fn mark_citations(answer: &str, citations: &[Citation]) -> String {
    let mut out = answer.to_string();
    for (k, c) in citations.iter().enumerate().filter(|(_, c)| c.cited) {
        let label = c.label();
        let mark = format!("{label} [{}]", k + 1);
        let mut rebuilt = String::with_capacity(out.len() + 8);
        let mut rest = out.as_str();
        while let Some(i) = rest.find(&label) {
            let end = i + label.len();
            // `a.rs:1-2` must not match inside `a.rs:1-20`.
            let longer = rest[end..].chars().next().is_some_and(|ch| ch.is_ascii_digit());
            // A model that already wrote the mark (`a.rs:1-2 [1]`) keeps its one.
            let marked = rest[end..].trim_start_matches(' ').starts_with(&mark[label.len() + 1..]);
            rebuilt.push_str(&rest[..end]);
            if !longer && !marked {
                rebuilt.push_str(&mark[label.len()..]);
            }
            rest = &rest[end..];
        }
        rebuilt.push_str(rest);
        out = rebuilt;
    }
    out
}

fn session_summary(s: &DagSessionSummary) -> DagSession {
    DagSession {
        id: s.id.clone(),
        title: if s.title.is_empty() { s.id.chars().take(8).collect() } else { s.title.clone() },
        nodes: s.nodes as usize,
        started_ms: s.created_at_ms,
    }
}

/// A node's payload as `key: value` lines (strings unquoted, nested values as compact JSON).
fn payload_text(v: &Value) -> String {
    match v {
        Value::Object(map) => map
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}: {s}"),
                other => format!("{k}: {other}"),
            })
            .collect::<Vec<_>>()
            .join("; "),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A logged session's conversation as the engine answers it for a chat continuing it
/// (`Engine::dag_conversation`: the newest turns the chat's history holds), oldest first.
pub fn conversation(c: &DagConversation) -> Conversation {
    Conversation {
        session_id: c.session_id.clone(),
        turns: c.turns.iter().map(|t| (t.question.clone(), t.answer.clone())).collect(),
        older_turns: c.older_turns,
    }
}

/// The DAG pane's view: every session (newest first) and the nodes of `shown` (when given).
/// The shown session's line takes its row as read with its nodes (`shown`), not as listed a
/// moment before: a turn logged in between (the server, another window) made the line count
/// fewer nodes than the steps and the older ones shown add up to.
pub fn dag_view(list: &DagSessionList, shown: Option<&EngineDagSession>) -> DagView {
    let sessions = &list.sessions;
    let selected_session = shown.and_then(|d| sessions.iter().position(|s| s.id == d.session.id)).unwrap_or_default();
    let listed = sessions.iter().map(|s| match shown {
        Some(d) if d.session.id == s.id => session_summary(&d.session),
        _ => session_summary(s),
    });
    DagView {
        sessions: listed.collect(),
        total_sessions: list.total,
        selected_session,
        nodes: shown.map(dag_nodes).unwrap_or_default(),
        older_nodes: shown.map_or(0, |d| d.older_nodes),
        next_before: shown.and_then(|d| d.next_before),
    }
}

/// The nodes of a session before `before` (the DAG pane's "load older"), as the pane adds them.
pub fn dag_page(session: &EngineDagSession, before: i64) -> DagPage {
    DagPage {
        session: session.session.id.clone(),
        before,
        nodes: dag_nodes(session),
        older_nodes: session.older_nodes,
        next_before: session.next_before,
    }
}

/// A session's nodes as the DAG pane draws them.
fn dag_nodes(session: &EngineDagSession) -> Vec<DagNode> {
    session
        .nodes
        .iter()
        .map(|n| DagNode {
            id: n.id.to_string(),
            kind: n.kind.name().to_string(),
            label: n.label.clone(),
            parents: n.parents.iter().map(|p| p.to_string()).collect(),
            detail: payload_text(&n.payload),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::protocol::Slot;

    fn source(path: &str, a: u32, b: u32, cited: bool) -> ChatSource {
        ChatSource {
            citation: format!("{path}:{a}-{b}"),
            slot: Slot::Repo,
            path: Some(path.into()),
            line_start: Some(a),
            line_end: Some(b),
            score: 1.0,
            note: String::new(),
            cited,
            url: None,
            package: None,
        }
    }

    #[test]
    fn the_shown_sessions_line_counts_the_nodes_read_with_its_steps() {
        // The list is read first, the session's nodes after: a turn logged in between made its
        // line say 8 nodes over 10 steps shown.
        use crate::engine::dag::{DagNode as Node, DagSession as Shown, NodeKind};
        let summary = |id: &str, nodes: u32| DagSessionSummary {
            id: id.into(),
            agent_id: None,
            created_at_ms: 0,
            updated_at_ms: 0,
            title: id.into(),
            turns: 1,
            nodes,
        };
        let node = |id: i64| Node {
            id,
            kind: NodeKind::Thought,
            label: String::new(),
            payload: Value::Null,
            created_at_ms: 0,
            parents: Vec::new(),
        };
        let listed = vec![summary("a", 8), summary("b", 3)];
        let shown = Shown {
            schema_version: 1,
            session: summary("a", 10),
            nodes: (1..=6).map(node).collect(),
            older_nodes: 4,
            next_before: Some(1),
        };
        let list = DagSessionList { schema_version: 1, repo: "/r".into(), total: 300, sessions: listed };
        let v = dag_view(&list, Some(&shown));
        assert_eq!(v.total_sessions, 300);
        assert_eq!(v.sessions.iter().map(|s| s.nodes).collect::<Vec<_>>(), [10, 3]);
        assert_eq!(v.nodes.len() as u64 + v.older_nodes, v.sessions[0].nodes as u64);
    }

    #[test]
    fn cited_sources_first_else_all_file_sources() {
        let mut memory = source("x", 1, 1, true);
        memory.path = None;
        let sources = vec![memory, source("a.rs", 1, 5, false), source("b.rs", 3, 9, true)];
        let c = citations(&sources);
        assert_eq!(c.iter().map(Citation::label).collect::<Vec<_>>(), vec!["b.rs:3-9"]);
        let none: Vec<ChatSource> = sources[1..2].to_vec();
        let c = citations(&none);
        assert_eq!((c.len(), c[0].cited), (1, false));
    }

    #[test]
    fn citations_are_marked_where_the_answer_names_them() {
        let c = vec![
            Citation { path: "a.rs".into(), line_start: 1, line_end: 2, cited: true, url: None },
            Citation { path: "b.rs".into(), line_start: 3, line_end: 4, cited: true, url: None },
        ];
        let out = mark_citations("See a.rs:1-2 and a.rs:1-20, then b.rs:3-4.", &c);
        assert_eq!(out, "See a.rs:1-2 [1] and a.rs:1-20, then b.rs:3-4 [2].");
        // tour12 F22: a mark the model wrote itself is not doubled.
        let out = mark_citations("See a.rs:1-2 [1], b.rs:3-4[2] and a.rs:1-2.", &c);
        assert_eq!(out, "See a.rs:1-2 [1], b.rs:3-4[2] and a.rs:1-2 [1].");
    }

    #[test]
    fn the_gate_step_carries_confidence_and_threshold() {
        let mut trace = ChatTrace::default();
        trace.steps.push(StepTrace { tier: 1, name: "gate".into(), ms: 0.1, ..Default::default() });
        trace.gate.confidence = 0.42;
        trace.gate.threshold = 0.7;
        trace.gate.reason = "confidence 0.42 < threshold 0.70".into();
        trace.timings_ms.total = 12.0;
        let v = trace_view(3, "q", &trace);
        assert_eq!((v.tiers[0].score, v.tiers[0].threshold), (Some(0.42), Some(0.7)));
        assert_eq!(v.tiers[0].outcome, "confidence 0.42 < threshold 0.70");
        trace.gate.reason = "confidence 1.00 >= threshold 0.70: stay local".into();
        assert_eq!(trace_view(3, "q", &trace).tiers[0].outcome, "stay local");
        assert_eq!((v.turn, v.total_ms), (3, 12.0));
    }
}
