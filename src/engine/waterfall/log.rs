//! The turn's reasoning-DAG writer: joins or starts the session, logs the request, and
//! appends one node per step. Logging never fails a chat: a problem with `dag.db` becomes a
//! notice and logging stops for the rest of the turn.

use super::types::ChatTurnRequest;
use crate::engine::dag::{DagStore, NodeKind, TurnRequest};
use crate::engine::repos::RepoRef;
use crate::error::Error;
use serde_json::{json, Value};

/// The turn's reasoning-DAG writer. Logging never fails a chat: a problem with `dag.db`
/// becomes a notice and logging stops for the turn.
#[derive(Default)]
pub(super) struct DagLog {
    store: Option<DagStore>,
    /// The session id (also when logging is off).
    pub(super) session: String,
    /// This request's turn in the session.
    pub(super) turn: u32,
    /// The budget decision, which the model call follows from.
    pub(super) budget_node: Option<i64>,
    /// The newest node logged (what a failure follows from).
    last: Option<i64>,
    /// Problems met while logging.
    pub(super) notices: Vec<String>,
}

impl DagLog {
    /// Joins (or starts) the session and logs the user's request, as one step: requests
    /// continuing one session at once get distinct, consecutive turns.
    pub(super) fn begin(repo: &RepoRef, req: &ChatTurnRequest) -> (DagLog, Option<i64>) {
        let mut log = DagLog { turn: 1, session: req.session_id.clone().unwrap_or_default(), ..Default::default() };
        // A long question is cut, and says so (the payload keeps it whole).
        let label = if req.query.chars().count() > 120 {
            format!("{}…", req.query.chars().take(119).collect::<String>())
        } else {
            req.query.clone()
        };
        let request = TurnRequest {
            session: req.session_id.as_deref(),
            agent_id: req.agent_id.as_deref(),
            title: &req.query,
            label: &label,
        };
        let payload = |turn: u32| {
            json!({"query": req.query, "agent_id": req.agent_id, "web": req.web, "diff": req.diff,
                   "history_messages": req.history.len(), "turn": turn})
        };
        let opened = DagStore::open(repo).and_then(|s| {
            let (cursor, root) = s.begin_turn(request, payload)?;
            Ok((s, cursor, root))
        });
        match opened {
            Ok((store, cursor, root)) => {
                log.session = cursor.id;
                log.turn = cursor.turn;
                log.store = Some(store);
                log.last = Some(root);
                (log, Some(root))
            }
            Err(e) => {
                if log.session.is_empty() {
                    log.session = uuid::Uuid::new_v4().to_string();
                }
                log.notices.push(format!("the reasoning log (dag.db) is unavailable, this turn is not logged: {e}"));
                (log, None)
            }
        }
    }

    /// Ends a turn that failed after its request was logged (a search error, a question too
    /// long for the window) with an `answer: failed` node saying why, so the session does not
    /// hold a request that seems never to have ended.
    pub(super) fn failed(&mut self, e: &Error) {
        let payload = json!({"status": "failed", "answer": null, "error": e.to_string(), "code": e.code()});
        let last = self.last;
        self.node(NodeKind::Observation, "answer: failed", payload, &[last]);
    }

    /// Appends a node; `None` when logging is off.
    pub(super) fn node(&mut self, kind: NodeKind, label: &str, payload: Value, parents: &[Option<i64>]) -> Option<i64> {
        let store = self.store.as_ref()?;
        let parents: Vec<i64> = parents.iter().flatten().copied().collect();
        match store.add_node(&self.session, kind, label, &payload, &parents) {
            Ok(id) => {
                self.last = Some(id);
                Some(id)
            }
            Err(e) => {
                self.notices.push(format!("the reasoning log stopped part-way through this turn: {e}"));
                self.store = None;
                None
            }
        }
    }
}
