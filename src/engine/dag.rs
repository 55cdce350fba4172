//! The reasoning DAG: every chat request is logged as a small graph of what happened (the
//! user's request, the orchestrator's plan, each retrieval tool call and what it observed,
//! the gate and budget decisions, the model call and its answer), so a session can be audited
//! afterwards from the CLI (`docdex dag list|view`), HTTP (`/v1/dag/...`) and the TUI.
//!
//! One SQLite file per repository (`state/repos/<fingerprint>/dag.db`, WAL mode so a chat
//! can write while another process reads): `sessions` (id, agent id, created, title),
//! `nodes` (kind, label, payload JSON, timestamp) and `edges` (parent → child). The schema
//! itself keeps the graph a DAG inside one session: an edge's parent is always an older node
//! (`parent < child`) and a trigger refuses edges between sessions.

use crate::engine::fsutil::now_ms;
use crate::engine::repos::RepoRef;
use crate::engine::Engine;
use crate::error::{Error, Result};
use rusqlite::{params, Connection, OptionalExtension};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The DAG file name inside a repo's state directory.
pub const DAG_FILE: &str = crate::engine::repos::DAG_DB;
/// Version of the `dag.db` schema.
pub const DAG_SCHEMA_VERSION: u32 = 1;
/// Sessions a listing answers when not told how many: every chat request without a session
/// starts one, so a repository gathers thousands, and listing them all answered megabytes.
pub const DAG_LIST_DEFAULT: usize = 50;
/// Most sessions one listing answers.
pub const DAG_LIST_MAX: usize = 10_000;
/// Nodes one view of a session answers when not told how many (the newest): a session a
/// client keeps continuing grows without end, and viewing it answered all of them at once.
pub const DAG_VIEW_DEFAULT: usize = 1_000;
/// Most nodes one view of a session answers.
pub const DAG_VIEW_MAX: usize = 10_000;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS dag_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    agent_id TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    title TEXT NOT NULL,
    turns INTEGER NOT NULL DEFAULT 0,
    node_count INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS nodes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK (kind IN ('UserRequest', 'Thought', 'ToolCall', 'Observation', 'Decision')),
    label TEXT NOT NULL,
    payload TEXT NOT NULL CHECK (json_valid(payload)),
    created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS nodes_by_session ON nodes(session_id, id);
CREATE TABLE IF NOT EXISTS edges (
    parent INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    child INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    PRIMARY KEY (parent, child),
    CHECK (parent < child)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS edges_by_child ON edges(child);
CREATE TRIGGER IF NOT EXISTS edges_stay_in_their_session BEFORE INSERT ON edges
WHEN (SELECT session_id FROM nodes WHERE id = NEW.parent) IS NOT (SELECT session_id FROM nodes WHERE id = NEW.child)
BEGIN SELECT RAISE(ABORT, 'reasoning DAG edges never cross sessions'); END;
";

/// Keeps each session's `turns` (its `UserRequest` nodes) and `node_count` on its row, so a new
/// turn and a listing read them instead of counting the session's nodes (a chat continued for
/// weeks scanned thousands per turn). A trigger, not the code, counts: it lives in the file, so a
/// node inserted by any path (or an older docdex writing to a migrated file) is counted too.
const COUNTERS_TRIGGER: &str = "
CREATE TRIGGER IF NOT EXISTS nodes_count_in_their_session AFTER INSERT ON nodes
BEGIN
    UPDATE sessions SET node_count = node_count + 1, turns = turns + (NEW.kind = 'UserRequest')
    WHERE id = NEW.session_id;
END;
";

/// The next turn of session `?1` and its newest node: two indexed lookups (the session's row and
/// `MAX(id)` from `nodes_by_session`), whatever the session's length.
const CURSOR_SQL: &str =
    "SELECT s.turns, (SELECT MAX(n.id) FROM nodes n WHERE n.session_id = s.id) FROM sessions s WHERE s.id = ?1";

/// What a node records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum NodeKind {
    /// The question as asked.
    UserRequest,
    /// The orchestrator's plan.
    Thought,
    /// A tool or tier being run (search, memory recall, git diff, the model).
    ToolCall,
    /// What a tool call returned.
    Observation,
    /// A choice made from observations (the gate, the budget).
    Decision,
}

impl NodeKind {
    /// The name stored and shown.
    pub fn name(self) -> &'static str {
        match self {
            NodeKind::UserRequest => "UserRequest",
            NodeKind::Thought => "Thought",
            NodeKind::ToolCall => "ToolCall",
            NodeKind::Observation => "Observation",
            NodeKind::Decision => "Decision",
        }
    }

    fn parse(s: &str) -> Option<NodeKind> {
        [NodeKind::UserRequest, NodeKind::Thought, NodeKind::ToolCall, NodeKind::Observation, NodeKind::Decision]
            .into_iter()
            .find(|k| k.name() == s)
    }
}

/// A session as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DagSessionSummary {
    /// Session id (a UUID unless the caller chose one).
    pub id: String,
    /// The agent that asked, if any.
    pub agent_id: Option<String>,
    /// Created, epoch ms.
    pub created_at_ms: u64,
    /// Last node added, epoch ms.
    pub updated_at_ms: u64,
    /// The first question, shortened.
    pub title: String,
    /// Requests logged in it.
    pub turns: u32,
    /// Nodes in it.
    pub nodes: u32,
}

/// One node with its parents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DagNode {
    /// Node id (increasing across the repo's DAG).
    pub id: i64,
    /// What it records.
    pub kind: NodeKind,
    /// One line for humans.
    pub label: String,
    /// The details.
    pub payload: Value,
    /// When, epoch ms.
    pub created_at_ms: u64,
    /// The nodes it follows from.
    pub parents: Vec<i64>,
}

/// A session with all its nodes (`docdex dag view`, `/v1/dag/{session}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DagSession {
    /// [`DAG_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The session.
    pub session: DagSessionSummary,
    /// Its nodes, oldest first: the newest [`DAG_VIEW_DEFAULT`] (or the `limit` asked) before
    /// `before` when one was given.
    pub nodes: Vec<DagNode>,
    /// How many older nodes of the session were not returned.
    #[serde(default)]
    pub older_nodes: u64,
    /// When `older_nodes` > 0: the `before` that returns the nodes preceding these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_before: Option<i64>,
}

/// The sessions of a repo, newest first (`docdex dag list`, `/v1/dag/sessions`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DagSessionList {
    /// [`DAG_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Repo root.
    pub repo: PathBuf,
    /// Sessions in the repository (`sessions` holds the newest `limit` of them).
    #[serde(default)]
    pub total: u64,
    /// Newest first.
    pub sessions: Vec<DagSessionSummary>,
}

/// One question of a logged session and the answer it got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DagTurn {
    /// The question as asked.
    pub question: String,
    /// The answer (the last answer observation after the question), `None` when none was given.
    pub answer: Option<String>,
}

/// A logged session's conversation as a chat continuing it needs it
/// ([`Engine::dag_conversation`]): its newest turns, as many as the chat's history can hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DagConversation {
    /// The session's full id.
    pub session_id: String,
    /// The turns kept, oldest first.
    pub turns: Vec<DagTurn>,
    /// The session's older turns left out: the history would not hold them.
    pub older_turns: u32,
    /// The tokens the turns kept may take: the context share of the configured window, the
    /// most history a chat turn can send.
    pub budget_tokens: u32,
}

/// A request or answer node as a conversation reads it: id, kind, the question (a request's) and
/// the answer (an observation's).
type TurnNode = (i64, NodeKind, String, Option<String>);

/// Request and answer nodes a conversation reads at a time, newest first.
const CONVERSATION_PAGE: usize = 500;

/// Where a session stands when a request joins it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionCursor {
    /// The session id.
    pub id: String,
    /// This request's 1-based turn number.
    pub turn: u32,
    /// The session's newest node, which the new request follows from.
    pub last_node: Option<i64>,
}

/// The request that opens a turn ([`DagStore::begin_turn`]).
#[derive(Debug, Clone, Copy)]
pub struct TurnRequest<'a> {
    /// The session to continue (`None` starts one).
    pub session: Option<&'a str>,
    /// The agent asking, recorded when the session is new.
    pub agent_id: Option<&'a str>,
    /// The session's title when it is new (the question; shortened).
    pub title: &'a str,
    /// The request node's label.
    pub label: &'a str,
}

/// An open `dag.db`.
pub struct DagStore {
    conn: Connection,
    path: PathBuf,
}

fn db_err(path: &Path, e: rusqlite::Error) -> Error {
    Error::CorruptState {
        path: path.to_path_buf(),
        message: format!("{e}; delete the file to start a new reasoning log"),
    }
}

/// Gives a `dag.db` from before the per-session counters its `turns` and `node_count` columns
/// (counted once from its nodes) and the trigger that keeps them. Checked with a read first, so
/// an up-to-date file costs no write lock; done in one `BEGIN IMMEDIATE` transaction that checks
/// again, so two processes opening an old file at once migrate it once and no node is inserted
/// between the count and the trigger.
fn ensure_counters(conn: &Connection) -> rusqlite::Result<()> {
    if counters_in_place(conn)? {
        return Ok(());
    }
    let tx = rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Immediate)?;
    let has_column = |name: &str| -> rusqlite::Result<bool> {
        tx.query_row("SELECT COUNT(*) FROM pragma_table_info('sessions') WHERE name = ?1", [name], |r| {
            r.get::<_, i64>(0)
        })
        .map(|n| n > 0)
    };
    if !has_column("turns")? {
        tx.execute_batch("ALTER TABLE sessions ADD COLUMN turns INTEGER NOT NULL DEFAULT 0")?;
        tx.execute_batch(
            "UPDATE sessions SET turns = (SELECT COUNT(*) FROM nodes n WHERE n.session_id = sessions.id AND n.kind = 'UserRequest')",
        )?;
    }
    if !has_column("node_count")? {
        tx.execute_batch("ALTER TABLE sessions ADD COLUMN node_count INTEGER NOT NULL DEFAULT 0")?;
        tx.execute_batch(
            "UPDATE sessions SET node_count = (SELECT COUNT(*) FROM nodes n WHERE n.session_id = sessions.id)",
        )?;
    }
    tx.execute_batch(COUNTERS_TRIGGER)?;
    tx.commit()
}

/// True when the counters' columns and trigger are all there (read only).
fn counters_in_place(conn: &Connection) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT (SELECT COUNT(*) FROM pragma_table_info('sessions') WHERE name IN ('turns', 'node_count')) = 2
            AND EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = 'nodes_count_in_their_session')",
        [],
        |r| r.get(0),
    )
}

/// True for ids a caller may choose: 1 to 64 letters, digits, `-` and `_`.
pub fn valid_session_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl DagStore {
    /// Opens (creating when missing) the DAG of `repo`.
    pub fn open(repo: &RepoRef) -> Result<DagStore> {
        crate::engine::fsutil::create_private_dir(&repo.state_dir)
            .map_err(|e| Error::io("creating", &repo.state_dir, e))?;
        Self::open_path(&repo.state_dir.join(DAG_FILE))
    }

    /// Opens the DAG of `repo` only if it exists.
    pub fn open_existing(repo: &RepoRef) -> Result<Option<DagStore>> {
        let path = repo.state_dir.join(DAG_FILE);
        if !path.exists() {
            return Ok(None);
        }
        Self::open_path(&path).map(Some)
    }

    fn open_path(path: &Path) -> Result<DagStore> {
        crate::engine::fsutil::ensure_private_file(path)?;
        let conn = Connection::open(path).map_err(|e| db_err(path, e))?;
        conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(|e| db_err(path, e))?;
        // WAL with NORMAL sync: a crash may lose the last few nodes, never corrupt the file,
        // and a node costs no fsync on the chat's path.
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")
            .map_err(|e| db_err(path, e))?;
        conn.execute_batch(SCHEMA).map_err(|e| db_err(path, e))?;
        ensure_counters(&conn).map_err(|e| db_err(path, e))?;
        let version: Option<String> = conn
            .query_row("SELECT value FROM dag_meta WHERE key = 'schema_version'", [], |r| r.get(0))
            .optional()
            .map_err(|e| db_err(path, e))?;
        match version.as_deref().map(str::parse::<u32>) {
            None => {
                conn.execute(
                    "INSERT OR IGNORE INTO dag_meta (key, value) VALUES ('schema_version', ?1)",
                    params![DAG_SCHEMA_VERSION.to_string()],
                )
                .map_err(|e| db_err(path, e))?;
            }
            Some(Ok(v)) if v <= DAG_SCHEMA_VERSION => {}
            Some(_) => {
                return Err(Error::CorruptState {
                    path: path.to_path_buf(),
                    message: format!(
                        "written by a newer docdex (schema {}); upgrade docdex to read it",
                        version.unwrap_or_default()
                    ),
                })
            }
        }
        Ok(DagStore { conn, path: path.to_path_buf() })
    }

    fn err(&self, e: rusqlite::Error) -> Error {
        db_err(&self.path, e)
    }

    /// Joins session `id` (creating it, titled `title`, when it does not exist), or starts a
    /// new session when `id` is `None`. The turn it answers is only a guess when requests
    /// continue the session at once: a turn that logs its request uses [`DagStore::begin_turn`].
    pub fn join_session(&self, id: Option<&str>, agent_id: Option<&str>, title: &str) -> Result<SessionCursor> {
        let id = Self::session_id_for(id)?;
        self.cursor(&self.conn, id, agent_id, title)
    }

    /// Joins (or starts) a session and logs the `UserRequest` node opening this turn, after the
    /// session's newest node, in one `BEGIN IMMEDIATE` transaction. Reading the turn and logging
    /// the request in two steps let requests continuing one session at once read the same
    /// turn and both log it; here the second waits for the first (`busy_timeout`).
    /// `payload` gets the turn number. Returns where the session stood and the new node.
    pub fn begin_turn(
        &self,
        request: TurnRequest<'_>,
        payload: impl FnOnce(u32) -> Value,
    ) -> Result<(SessionCursor, i64)> {
        let id = Self::session_id_for(request.session)?;
        let tx = rusqlite::Transaction::new_unchecked(&self.conn, rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| self.err(e))?;
        let cursor = self.cursor(&tx, id, request.agent_id, request.title)?;
        let parents: Vec<i64> = cursor.last_node.into_iter().collect();
        let node =
            self.insert_node(&tx, &cursor.id, NodeKind::UserRequest, request.label, &payload(cursor.turn), &parents)?;
        tx.commit().map_err(|e| self.err(e))?;
        Ok((cursor, node))
    }

    /// The id a request names (checked), or a new one.
    fn session_id_for(id: Option<&str>) -> Result<String> {
        match id {
            Some(id) if !valid_session_id(id) => {
                Err(Error::BadRequest(format!("bad session id {id:?}: use 1 to 64 letters, digits, '-' or '_'")))
            }
            Some(id) => Ok(id.to_string()),
            None => Ok(uuid::Uuid::new_v4().to_string()),
        }
    }

    /// Creates session `id` when missing and reads its next turn and newest node, on `conn`
    /// (the connection, or a transaction on it).
    fn cursor(&self, conn: &Connection, id: String, agent_id: Option<&str>, title: &str) -> Result<SessionCursor> {
        let title: String = title.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(80).collect();
        let now = now_ms() as i64;
        conn.execute(
            "INSERT OR IGNORE INTO sessions (id, agent_id, created_at, updated_at, title) VALUES (?1, ?2, ?3, ?3, ?4)",
            params![id, agent_id, now, title],
        )
        .map_err(|e| self.err(e))?;
        let (turns, last): (u32, Option<i64>) =
            conn.query_row(CURSOR_SQL, params![id], |r| Ok((r.get(0)?, r.get(1)?))).map_err(|e| self.err(e))?;
        Ok(SessionCursor { id, turn: turns + 1, last_node: last })
    }

    /// Appends a node with edges from `parents` (which must be older nodes of the same session).
    pub fn add_node(
        &self,
        session: &str,
        kind: NodeKind,
        label: &str,
        payload: &Value,
        parents: &[i64],
    ) -> Result<i64> {
        let tx = self.conn.unchecked_transaction().map_err(|e| self.err(e))?;
        let id = self.insert_node(&tx, session, kind, label, payload, parents)?;
        tx.commit().map_err(|e| self.err(e))?;
        Ok(id)
    }

    /// Inserts a node, its edges and the session's new `updated_at` inside the caller's
    /// transaction `conn`.
    fn insert_node(
        &self,
        conn: &Connection,
        session: &str,
        kind: NodeKind,
        label: &str,
        payload: &Value,
        parents: &[i64],
    ) -> Result<i64> {
        let now = now_ms() as i64;
        conn.execute(
            "INSERT INTO nodes (session_id, kind, label, payload, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![session, kind.name(), label, payload.to_string(), now],
        )
        .map_err(|e| self.err(e))?;
        let id = conn.last_insert_rowid();
        for p in parents {
            conn.execute("INSERT OR IGNORE INTO edges (parent, child) VALUES (?1, ?2)", params![p, id])
                .map_err(|e| self.err(e))?;
        }
        conn.execute("UPDATE sessions SET updated_at = ?2 WHERE id = ?1", params![session, now])
            .map_err(|e| self.err(e))?;
        Ok(id)
    }

    const SUMMARY: &'static str =
        "SELECT s.id, s.agent_id, s.created_at, s.updated_at, s.title, s.turns, s.node_count FROM sessions s";

    fn summary(r: &rusqlite::Row<'_>) -> rusqlite::Result<DagSessionSummary> {
        Ok(DagSessionSummary {
            id: r.get(0)?,
            agent_id: r.get(1)?,
            created_at_ms: r.get::<_, i64>(2)?.max(0) as u64,
            updated_at_ms: r.get::<_, i64>(3)?.max(0) as u64,
            title: r.get(4)?,
            turns: r.get(5)?,
            nodes: r.get(6)?,
        })
    }

    /// The newest `limit` sessions, newest first.
    pub fn sessions(&self, limit: usize) -> Result<Vec<DagSessionSummary>> {
        let sql = format!("{} ORDER BY s.created_at DESC, s.rowid DESC LIMIT ?1", Self::SUMMARY);
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let rows = stmt.query_map([limit as i64], Self::summary).map_err(|e| self.err(e))?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(|e| self.err(e))
    }

    /// How many sessions there are.
    pub fn session_count(&self) -> Result<u64> {
        self.conn
            .query_row("SELECT COUNT(*) FROM sessions", [], |r| r.get::<_, i64>(0))
            .map(|n| n.max(0) as u64)
            .map_err(|e| self.err(e))
    }

    /// The session whose id is exactly `id`, if there is one (never a prefix).
    pub fn summary_of(&self, id: &str) -> Result<Option<DagSessionSummary>> {
        let sql = format!("{} WHERE s.id = ?1", Self::SUMMARY);
        self.conn.query_row(&sql, params![id], Self::summary).optional().map_err(|e| self.err(e))
    }

    /// The session `id`, or the one session whose id starts with `id` (at least 4 characters),
    /// with its newest `limit` nodes whose id is below `before` (all when `None`). The session
    /// row, the nodes and the older count are read in one snapshot, so `older_nodes` plus the
    /// nodes answered (plus those from `before` on) is the row's `node_count`: read one by one,
    /// a turn logged meanwhile made them disagree.
    pub fn session(&self, id: &str, limit: usize, before: Option<i64>) -> Result<DagSession> {
        let full = self.resolve(id)?;
        // A read transaction: its reads share one snapshot of the WAL file.
        let tx = self.conn.unchecked_transaction().map_err(|e| self.err(e))?;
        let sql = format!("{} WHERE s.id = ?1", Self::SUMMARY);
        let session = tx.query_row(&sql, params![full], Self::summary).map_err(|e| self.err(e))?;
        let nodes = self.page(&tx, &full, limit, before.unwrap_or(i64::MAX))?;
        let oldest = nodes.first().map_or(before.unwrap_or(i64::MAX), |n| n.id);
        let older_nodes = match before {
            // The newest nodes: the rest are the session's count less those (no count of rows).
            None => u64::from(session.nodes).saturating_sub(nodes.len() as u64),
            Some(_) => tx
                .query_row("SELECT COUNT(*) FROM nodes WHERE session_id = ?1 AND id < ?2", params![full, oldest], |r| {
                    r.get::<_, i64>(0)
                })
                .map(|n| n.max(0) as u64)
                .map_err(|e| self.err(e))?,
        };
        tx.finish().map_err(|e| self.err(e))?;
        let next_before = (older_nodes > 0).then_some(oldest);
        Ok(DagSession { schema_version: DAG_SCHEMA_VERSION, session, nodes, older_nodes, next_before })
    }

    /// The newest `limit` nodes of session `full` whose id is below `before`, oldest first, read
    /// on `conn` (the view's snapshot).
    fn page(&self, conn: &Connection, full: &str, limit: usize, before: i64) -> Result<Vec<DagNode>> {
        let mut stmt = conn
            .prepare(
                "SELECT n.id, n.kind, n.label, n.payload, n.created_at,
                        COALESCE((SELECT group_concat(e.parent) FROM edges e WHERE e.child = n.id), '')
                 FROM nodes n WHERE n.session_id = ?1 AND n.id < ?2 ORDER BY n.id DESC LIMIT ?3",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![full, before, limit as i64], |r| {
                let kind: String = r.get(1)?;
                let payload: String = r.get(3)?;
                let parents: String = r.get(5)?;
                Ok((r.get::<_, i64>(0)?, kind, r.get::<_, String>(2)?, payload, r.get::<_, i64>(4)?, parents))
            })
            .map_err(|e| self.err(e))?;
        let mut nodes = Vec::new();
        for row in rows {
            let (id, kind, label, payload, at, parents) = row.map_err(|e| self.err(e))?;
            let mut parents: Vec<i64> = parents.split(',').filter_map(|p| p.trim().parse().ok()).collect();
            parents.sort_unstable();
            nodes.push(DagNode {
                id,
                kind: NodeKind::parse(&kind).unwrap_or(NodeKind::Thought),
                label,
                payload: serde_json::from_str(&payload).unwrap_or(Value::Null),
                created_at_ms: at.max(0) as u64,
                parents,
            });
        }
        nodes.reverse();
        Ok(nodes)
    }

    /// The newest turns of session `id` (or a unique prefix) whose questions and answers, each
    /// priced by `cost` (tokens with the message overhead), fit in `budget` tokens: the stretch
    /// of the conversation a chat continuing it can send back. The newest turn is kept however
    /// long. Reads the request and answer nodes newest first, a page at a time, and stops when
    /// the budget is spent, so a session of any length costs what the kept turns cost.
    pub fn conversation(&self, id: &str, budget: u32, cost: &dyn Fn(&str) -> u32) -> Result<DagConversation> {
        let full = self.resolve(id)?;
        let total: u32 = self
            .conn
            .query_row("SELECT turns FROM sessions WHERE id = ?1", params![full], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        let (mut turns, mut used, mut answer, mut before) = (Vec::new(), 0u32, None::<String>, i64::MAX);
        'pages: loop {
            let page = self.turn_nodes(&full, before)?;
            let Some(last) = page.last() else { break };
            before = last.0;
            for (_, kind, question, said) in page {
                if kind != NodeKind::UserRequest {
                    // Newest first: the first answer met is the turn's last one.
                    answer = answer.or(said.filter(|a| !a.trim().is_empty()));
                    continue;
                }
                let answer = answer.take();
                let tokens = cost(&question).saturating_add(answer.as_deref().map_or(0, cost));
                if !turns.is_empty() && used.saturating_add(tokens) > budget {
                    break 'pages;
                }
                used = used.saturating_add(tokens);
                turns.push(DagTurn { question, answer });
            }
        }
        turns.reverse();
        let older_turns = total.saturating_sub(turns.len() as u32);
        Ok(DagConversation { session_id: full, turns, older_turns, budget_tokens: budget })
    }

    /// The request and answer nodes of `session` below id `before`, newest first: id, kind,
    /// the question (a request's `query`, else its label) and the `answer` an observation holds.
    fn turn_nodes(&self, session: &str, before: i64) -> Result<Vec<TurnNode>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, kind, COALESCE(CASE json_type(payload, '$.query') WHEN 'text' THEN json_extract(payload, '$.query') END, label),
                        CASE json_type(payload, '$.answer') WHEN 'text' THEN json_extract(payload, '$.answer') END
                 FROM nodes WHERE session_id = ?1 AND id < ?2 AND kind IN ('UserRequest', 'Observation')
                 ORDER BY id DESC LIMIT ?3",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![session, before, CONVERSATION_PAGE as i64], |r| {
                let kind: String = r.get(1)?;
                let kind = NodeKind::parse(&kind).unwrap_or(NodeKind::Observation);
                Ok((r.get(0)?, kind, r.get(2)?, r.get(3)?))
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(|e| self.err(e))
    }

    /// The full id for `id` or a unique prefix of one.
    fn resolve(&self, id: &str) -> Result<String> {
        let not_found =
            || Error::NotFound(format!("no reasoning session {id:?} in this repository; `docdex dag list` shows them"));
        if id.trim().is_empty() {
            return Err(Error::BadRequest(
                "give a session id, or 4 or more of its first characters (`docdex dag list` shows them)".into(),
            ));
        }
        if !valid_session_id(id) {
            return Err(not_found());
        }
        let mut stmt = self
            .conn
            // A prefix in either case: ids are printed in lower case, and `4A25` typed from a
            // screen found nothing (tour37 F11).
            .prepare("SELECT id FROM sessions WHERE lower(substr(id, 1, length(?1))) = lower(?1) ORDER BY id LIMIT 5")
            .map_err(|e| self.err(e))?;
        let ids: Vec<String> = stmt
            .query_map(params![id], |r| r.get(0))
            .map_err(|e| self.err(e))?
            .collect::<rusqlite::Result<_>>()
            .map_err(|e| self.err(e))?;
        if ids.iter().any(|i| i == id) {
            return Ok(id.to_string());
        }
        match ids.as_slice() {
            [one] if id.len() >= 4 => Ok(one.clone()),
            [] => Err(not_found()),
            [_] => Err(Error::BadRequest(format!(
                "session prefix {id:?} is too short: give at least 4 characters of the id (`docdex dag list` shows them)"
            ))),
            many => Err(Error::BadRequest(format!(
                "session prefix {id:?} is ambiguous: it matches {}; give more characters",
                many.join(", ")
            ))),
        }
    }
}

impl Engine {
    /// The newest [`DAG_LIST_DEFAULT`] reasoning sessions logged for a repository.
    pub fn dag_sessions(&self, repo_path: &Path) -> Result<DagSessionList> {
        self.dag_sessions_up_to(repo_path, None)
    }

    /// The newest `limit` reasoning sessions (default [`DAG_LIST_DEFAULT`], 1 to
    /// [`DAG_LIST_MAX`]) with how many the repository has.
    pub fn dag_sessions_up_to(&self, repo_path: &Path, limit: Option<usize>) -> Result<DagSessionList> {
        let repo = self.resolve_repo(repo_path)?;
        let limit = dag_limit(limit, DAG_LIST_DEFAULT, DAG_LIST_MAX)?;
        let (total, sessions) = match DagStore::open_existing(&repo)? {
            Some(store) => (store.session_count()?, store.sessions(limit)?),
            None => (0, Vec::new()),
        };
        Ok(DagSessionList { schema_version: DAG_SCHEMA_VERSION, repo: repo.root, total, sessions })
    }

    /// The session whose id is exactly `id`, without its nodes; `None` when the repository has
    /// none by that id, even if ids start with it (a client continuing or naming a session
    /// means that id, where `dag_session` takes a prefix for people).
    pub fn dag_session_by_id(&self, repo_path: &Path, id: &str) -> Result<Option<DagSessionSummary>> {
        let repo = self.resolve_repo(repo_path)?;
        match DagStore::open_existing(&repo)? {
            Some(store) => store.summary_of(id),
            None => Ok(None),
        }
    }

    /// One reasoning session with its newest [`DAG_VIEW_DEFAULT`] nodes and their edges
    /// (`session` may be a unique prefix).
    pub fn dag_session(&self, repo_path: &Path, session: &str) -> Result<DagSession> {
        self.dag_session_page(repo_path, session, None, None)
    }

    /// The conversation of a logged session (`session` may be a unique prefix) as a chat
    /// continuing it needs it: its newest turns, as many as fit in the history a chat turn can
    /// send (the context share of `[llm] context_tokens`, counted with the chat model's
    /// tokenizer), however far back that reaches; the rest are counted in `older_turns`. A
    /// fixed number of nodes (the view's 1,000) cut a long session's history short, or read
    /// nodes the chat could never send.
    pub fn dag_conversation(&self, repo_path: &Path, session: &str) -> Result<DagConversation> {
        let repo = self.resolve_repo(repo_path)?;
        let llm = &self.config().llm;
        let budget = crate::engine::waterfall::budget::plan(llm.context_tokens, llm.max_answer_tokens).context;
        let counter = crate::engine::waterfall::budget::TokenCounter::for_model(&llm.default_model, None);
        let overhead = crate::engine::waterfall::budget::MESSAGE_OVERHEAD;
        let cost = |text: &str| -> u32 {
            let tokens = match &counter {
                Ok(c) => c.count(text),
                // No tokenizer: about four characters a token.
                Err(_) => (text.chars().count() as u32).div_ceil(4),
            };
            tokens.saturating_add(overhead)
        };
        match DagStore::open_existing(&repo)? {
            Some(store) => store.conversation(session, budget, &cost),
            None => Err(Error::NotFound(format!(
                "no reasoning sessions in {} yet; `docdex chat` logs one per conversation",
                repo.root.display()
            ))),
        }
    }

    /// One reasoning session with its newest `limit` nodes (default [`DAG_VIEW_DEFAULT`], 1 to
    /// [`DAG_VIEW_MAX`]) whose id is below `before`; `older_nodes` counts the rest and
    /// `next_before` pages back to them.
    pub fn dag_session_page(
        &self,
        repo_path: &Path,
        session: &str,
        limit: Option<usize>,
        before: Option<i64>,
    ) -> Result<DagSession> {
        let repo = self.resolve_repo(repo_path)?;
        let limit = dag_limit(limit, DAG_VIEW_DEFAULT, DAG_VIEW_MAX)?;
        match DagStore::open_existing(&repo)? {
            Some(store) => store.session(session, limit, before),
            None => Err(Error::NotFound(format!(
                "no reasoning sessions in {} yet; `docdex chat` logs one per conversation",
                repo.root.display()
            ))),
        }
    }
}

/// A request's `limit` (`default` when absent), cut to `max`; 0 is refused naming the range. It
/// was taken as 1, so `GET /v1/dag/sessions?limit=0` (and `docdex dag list --limit 0`) answered
/// one session without a word.
fn dag_limit(limit: Option<usize>, default: usize, max: usize) -> Result<usize> {
    match limit {
        Some(0) => Err(Error::BadRequest(format!(
            "limit 0 asks for nothing: give 1 to {max} (more is cut to {max}), or leave it out"
        ))),
        other => Ok(other.unwrap_or(default).min(max)),
    }
}

/// `2026-11-23 02:13:11 UTC` for epoch milliseconds.
pub fn utc(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// The session as text: a header, then one line per node with its parents and payload.
pub fn to_text(s: &DagSession) -> String {
    let mut out = format!(
        "session {}\ntitle   {}\nagent   {}\ncreated {}\nturns   {}, nodes {}\n\n",
        s.session.id,
        s.session.title,
        s.session.agent_id.as_deref().unwrap_or("-"),
        utc(s.session.created_at_ms),
        s.session.turns,
        s.session.nodes
    );
    if let Some(before) = s.next_before.filter(|_| s.older_nodes > 0) {
        out.push_str(&format!(
            "... {} older nodes not shown (the newest {} are); `--before {before}` shows the ones before, `-n N` up to {DAG_VIEW_MAX}\n\n",
            s.older_nodes,
            s.nodes.len()
        ));
    }
    if s.nodes.is_empty() && s.session.nodes > 0 {
        // Paging back past the oldest node (`--before` of its id or less) printed the header
        // and nothing else, as if the session were empty (tour16 F8).
        out.push_str(&format!(
            "no nodes on this page: the session has {} nodes, none before the `--before` given (it names the oldest or an earlier id); leave it out to see the newest\n",
            s.session.nodes
        ));
    }
    let start = s.nodes.first().map(|n| n.created_at_ms).unwrap_or(0);
    for n in &s.nodes {
        if n.kind == NodeKind::UserRequest && n.id != s.nodes[0].id {
            out.push('\n');
        }
        let parents = if n.parents.is_empty() {
            String::new()
        } else {
            format!("  <- {}", n.parents.iter().map(|p| format!("#{p}")).collect::<Vec<_>>().join(", "))
        };
        out.push_str(&format!(
            "#{:<5} {:<12} +{:<6} {}{parents}\n",
            n.id,
            n.kind.name(),
            format!("{}ms", n.created_at_ms.saturating_sub(start)),
            n.label
        ));
        let payload = n.payload.to_string();
        if payload != "{}" && payload != "null" {
            let short: String = payload.chars().take(200).collect();
            let more = if payload.chars().count() > 200 { " ..." } else { "" };
            out.push_str(&format!("       {short}{more}\n"));
        }
    }
    out
}

/// The session as a Graphviz digraph (`dot -Tsvg`).
pub fn to_dot(s: &DagSession) -> String {
    let mut out = format!(
        "digraph \"{}\" {{\n  graph [rankdir=TB, label=\"{}\", labelloc=t, fontname=\"Helvetica\"];\n  node [fontname=\"Helvetica\", fontsize=10, style=filled];\n  edge [color=\"#64748b\"];\n",
        dot_escape(&format!("docdex session {}", s.session.id)),
        dot_escape(&s.session.title)
    );
    for n in &s.nodes {
        let (shape, color) = match n.kind {
            NodeKind::UserRequest => ("oval", "#dbeafe"),
            NodeKind::Thought => ("note", "#fef9c3"),
            NodeKind::ToolCall => ("box", "#e0e7ff"),
            NodeKind::Observation => ("box", "#dcfce7"),
            NodeKind::Decision => ("diamond", "#fee2e2"),
        };
        let label = wrap(&n.label, 40, 3).iter().map(|l| dot_escape(l)).collect::<Vec<_>>().join("\\n");
        out.push_str(&format!(
            "  n{} [shape={shape}, fillcolor=\"{color}\", label=\"{} #{}\\n{label}\"];\n",
            n.id,
            n.kind.name(),
            n.id,
        ));
    }
    // In a cut view a parent may be among the older nodes: one placeholder stands for them
    // (Graphviz drew each as a bare, unlabelled node).
    let shown: std::collections::HashSet<i64> = s.nodes.iter().map(|n| n.id).collect();
    if let Some(before) = s.next_before {
        out.push_str(&format!(
            "  older [shape=plaintext, label=\"{} older nodes (--before {before})\"];\n",
            s.older_nodes
        ));
    }
    let mut from_older = std::collections::HashSet::new();
    for n in &s.nodes {
        for p in &n.parents {
            if shown.contains(p) {
                out.push_str(&format!("  n{p} -> n{};\n", n.id));
            } else if s.next_before.is_some() && from_older.insert(n.id) {
                out.push_str(&format!("  older -> n{} [style=dashed];\n", n.id));
            }
        }
    }
    out.push_str("}\n");
    out
}

/// Splits `text` into at most `max_lines` lines of about `width` characters at spaces; the
/// last line ends in `...` when text was left out.
fn wrap(text: &str, width: usize, max_lines: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for w in text.split_whitespace() {
        if !cur.is_empty() && cur.chars().count() + 1 + w.chars().count() > width {
            lines.push(std::mem::take(&mut cur));
            if lines.len() == max_lines {
                if let Some(last) = lines.last_mut() {
                    last.push_str(" ...");
                }
                return lines;
            }
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        let room = width.saturating_sub(cur.chars().count()).max(1);
        cur.extend(w.chars().take(room));
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// Escapes text for a double-quoted DOT string.
fn dot_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' | '\t' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn store() -> (tempfile::TempDir, DagStore) {
        let dir = tempfile::tempdir().unwrap();
        let s = DagStore::open_path(&dir.path().join(DAG_FILE)).unwrap();
        (dir, s)
    }

    #[test]
    fn sessions_nodes_and_edges_round_trip() {
        let (_d, s) = store();
        let c = s.join_session(None, Some("mcoda_frontend"), "  how are\nsessions expired?  ").unwrap();
        assert_eq!((c.turn, c.last_node), (1, None));
        let a = s.add_node(&c.id, NodeKind::UserRequest, "how?", &json!({"query": "how?"}), &[]).unwrap();
        let b = s.add_node(&c.id, NodeKind::ToolCall, "search", &json!({}), &[a]).unwrap();
        let d = s.add_node(&c.id, NodeKind::Decision, "gate", &json!({"passed": true}), &[a, b]).unwrap();
        let again = s.join_session(Some(&c.id), None, "ignored").unwrap();
        assert_eq!((again.turn, again.last_node), (2, Some(d)));
        let got = s.session(&c.id[..8], DAG_VIEW_DEFAULT, None).unwrap();
        assert_eq!(got.session.title, "how are sessions expired?");
        assert_eq!(got.session.agent_id.as_deref(), Some("mcoda_frontend"));
        assert_eq!((got.session.turns, got.session.nodes), (1, 3));
        assert_eq!(got.nodes[2].parents, vec![a, b]);
        assert_eq!(got.nodes[2].payload["passed"], true);
        assert_eq!(s.sessions(50).unwrap().len(), 1);
    }

    #[test]
    fn a_long_session_answers_its_newest_nodes_and_pages_back_to_the_rest() {
        // A session continued without end answered every node at once (no bound).
        let (_d, s) = store();
        let c = s.join_session(Some("long"), None, "q").unwrap();
        let ids: Vec<i64> =
            (0..25).map(|i| s.add_node(&c.id, NodeKind::Thought, &format!("n{i}"), &json!({}), &[]).unwrap()).collect();
        let page = s.session("long", 10, None).unwrap();
        assert_eq!(page.nodes.iter().map(|n| n.id).collect::<Vec<_>>(), ids[15..]);
        assert_eq!((page.older_nodes, page.next_before), (15, Some(ids[15])));
        assert!(
            to_text(&page).contains(&format!("15 older nodes not shown (the newest 10 are); `--before {}`", ids[15]))
        );
        let back = s.session("long", 10, page.next_before).unwrap();
        assert_eq!(back.nodes.iter().map(|n| n.id).collect::<Vec<_>>(), ids[5..15]);
        let last = s.session("long", 10, back.next_before).unwrap();
        assert_eq!(last.nodes.iter().map(|n| n.id).collect::<Vec<_>>(), ids[..5]);
        assert_eq!((last.older_nodes, last.next_before), (0, None));
        assert!(!to_text(&last).contains("older nodes"));
        // tour16 F8: a page before the oldest node printed the header alone.
        let past = s.session("long", 10, Some(ids[0])).unwrap();
        assert!(past.nodes.is_empty());
        assert!(to_text(&past)
            .contains("no nodes on this page: the session has 25 nodes, none before the `--before` given"));
        assert!(!to_text(&page).contains("no nodes on this page"));
        let c2 = s.join_session(Some("chain"), None, "q").unwrap();
        let mut prev = Vec::new();
        for i in 0..4 {
            prev = vec![s.add_node(&c2.id, NodeKind::Thought, &format!("c{i}"), &json!({}), &prev).unwrap()];
        }
        let dot = to_dot(&s.session("chain", 2, None).unwrap());
        assert!(dot.contains("older [shape=plaintext, label=\"2 older nodes (--before "), "{dot}");
        assert_eq!(dot.matches("older -> n").count(), 1, "{dot}");
        assert_eq!(dot.matches(" -> n").count(), 2, "one edge shown, one from the older nodes: {dot}");
        assert_eq!(s.session("long", DAG_VIEW_DEFAULT, None).unwrap().nodes.len(), 25);
    }

    #[test]
    fn a_view_counts_its_nodes_as_the_session_row_does_while_a_chat_writes() {
        // The header's node count (the session row's node_count), the nodes answered and the
        // older count were three reads: a turn logged between them made a view whose older and
        // shown nodes did not add up to the count it showed.
        let (dir, s) = store();
        let c = s.join_session(Some("busy"), None, "q").unwrap();
        for i in 0..40 {
            s.add_node(&c.id, NodeKind::Thought, &format!("n{i}"), &json!({}), &[]).unwrap();
        }
        let path = dir.path().join(DAG_FILE);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writer = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let w = DagStore::open_path(&path).unwrap();
                let mut n = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) && n < 20_000 {
                    w.add_node("busy", NodeKind::Observation, "o", &json!({"n": n}), &[]).unwrap();
                    n += 1;
                }
            })
        };
        let mut views = 0;
        for _ in 0..400 {
            let v = s.session("busy", 30, None).unwrap();
            assert_eq!(
                v.older_nodes + v.nodes.len() as u64,
                u64::from(v.session.nodes),
                "older and shown nodes add up to the session's count"
            );
            views += 1;
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        writer.join().unwrap();
        assert_eq!(views, 400);
    }

    #[test]
    fn turns_begun_at_once_on_one_session_are_distinct_and_consecutive() {
        // Each thread its own connection, as each chat request opens `dag.db` on its own.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(DAG_FILE);
        DagStore::open_path(&path).unwrap();
        let n = 16;
        let barrier = std::sync::Barrier::new(n);
        let begun: Vec<(u32, i64)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..n)
                .map(|i| {
                    let (path, barrier) = (&path, &barrier);
                    s.spawn(move || {
                        let store = DagStore::open_path(path).unwrap();
                        barrier.wait();
                        let label = format!("q{i}");
                        let request =
                            TurnRequest { session: Some("shared"), agent_id: None, title: "q", label: &label };
                        let (cursor, node) = store.begin_turn(request, |turn| json!({ "turn": turn })).unwrap();
                        (cursor.turn, node)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut turns: Vec<u32> = begun.iter().map(|b| b.0).collect();
        turns.sort_unstable();
        assert_eq!(turns, (1..=n as u32).collect::<Vec<_>>());
        let s = DagStore::open_path(&path).unwrap();
        let got = s.session("shared", DAG_VIEW_MAX, None).unwrap();
        assert_eq!((got.session.turns, got.nodes.len()), (n as u32, n));
        // In id order the turns count up, and each request follows the one before it.
        for (k, node) in got.nodes.iter().enumerate() {
            assert_eq!(node.payload["turn"], k + 1, "{:?}", got.nodes);
            let before: Vec<i64> = got.nodes[..k].last().map(|p| p.id).into_iter().collect();
            assert_eq!(node.parents, before);
        }
    }

    /// The `sessions` table and nodes as a docdex from before the counters wrote them.
    const OLD_SCHEMA: &str = "
        CREATE TABLE dag_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO dag_meta VALUES ('schema_version', '1');
        CREATE TABLE sessions (id TEXT PRIMARY KEY, agent_id TEXT, created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL, title TEXT NOT NULL);
        CREATE TABLE nodes (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            kind TEXT NOT NULL, label TEXT NOT NULL, payload TEXT NOT NULL, created_at INTEGER NOT NULL);
        CREATE INDEX nodes_by_session ON nodes(session_id, id);
        INSERT INTO sessions VALUES ('old', NULL, 1, 1, 'q'), ('empty', NULL, 1, 1, 'e');";

    #[test]
    fn an_old_dag_db_gets_its_session_counters_on_first_use_and_keeps_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(DAG_FILE);
        let old = Connection::open(&path).unwrap();
        old.execute_batch(OLD_SCHEMA).unwrap();
        for (i, kind) in ["UserRequest", "Thought", "Observation", "UserRequest", "ToolCall", "UserRequest", "Decision"]
            .iter()
            .enumerate()
        {
            old.execute(
                "INSERT INTO nodes (session_id, kind, label, payload, created_at) VALUES ('old', ?1, ?2, '{}', 1)",
                params![kind, format!("n{i}")],
            )
            .unwrap();
        }
        drop(old);
        let s = DagStore::open_path(&path).unwrap();
        let row: (u32, u32) = s
            .conn
            .query_row("SELECT turns, node_count FROM sessions WHERE id = 'old'", [], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap();
        assert_eq!(row, (3, 7), "the counts are on the session row after the migration");
        let summary = s.summary_of("empty").unwrap().unwrap();
        assert_eq!((summary.turns, summary.nodes), (0, 0));
        let request = TurnRequest { session: Some("old"), agent_id: None, title: "q", label: "again" };
        let (cursor, node) = s.begin_turn(request, |t| json!({ "turn": t })).unwrap();
        assert_eq!((cursor.turn, cursor.last_node), (4, Some(node - 1)));
        // A node written by any path (here plain SQL, as an older docdex would) is counted.
        s.conn
            .execute(
                "INSERT INTO nodes (session_id, kind, label, payload, created_at) VALUES ('old', 'UserRequest', 'x', '{}', 1)",
                [],
            )
            .unwrap();
        let got = s.summary_of("old").unwrap().unwrap();
        assert_eq!((got.turns, got.nodes), (5, 9));
        drop(s);
        // Opening again migrates nothing twice.
        let again = DagStore::open_path(&path).unwrap();
        assert_eq!(again.summary_of("old").unwrap().map(|x| (x.turns, x.nodes)), Some((5, 9)));
    }

    #[test]
    fn a_new_turn_reads_its_number_from_the_session_row_by_index() {
        let (_d, s) = store();
        let request = TurnRequest { session: Some("long"), agent_id: None, title: "q", label: "first" };
        s.begin_turn(request, |t| json!({ "turn": t })).unwrap();
        // The row's count is what the next turn follows (the nodes are not counted again).
        s.conn.execute("UPDATE sessions SET turns = 41 WHERE id = 'long'", []).unwrap();
        let (cursor, _) = s.begin_turn(TurnRequest { label: "next", ..request }, |t| json!({ "turn": t })).unwrap();
        assert_eq!(cursor.turn, 42);
        let mut stmt = s.conn.prepare(&format!("EXPLAIN QUERY PLAN {CURSOR_SQL}")).unwrap();
        let plan: Vec<String> =
            stmt.query_map(["long"], |r| r.get::<_, String>(3)).unwrap().collect::<rusqlite::Result<_>>().unwrap();
        assert!(plan.iter().all(|step| !step.starts_with("SCAN")), "no step scans a table: {plan:?}");
        assert!(plan.iter().any(|step| step.contains("nodes_by_session")), "{plan:?}");
    }

    #[test]
    fn a_conversation_is_the_newest_turns_the_budget_holds_however_many_nodes_they_span() {
        // "Continue in chat" rebuilt the turns among the newest 1,000 nodes: a few hundred turns
        // of a long session, whatever the chat's history could hold.
        let (_d, s) = store();
        let session = "long";
        for k in 1..=400 {
            let request = TurnRequest { session: Some(session), agent_id: None, title: "q", label: "label" };
            let (_, r) = s.begin_turn(request, |_| json!({ "query": format!("question {k}") })).unwrap();
            for step in 0..5 {
                s.add_node(session, NodeKind::Thought, &format!("step {step}"), &json!({}), &[r]).unwrap();
            }
            if k == 399 {
                continue; // no answer recorded
            }
            let first = if k == 398 { "draft" } else { "" };
            s.add_node(session, NodeKind::Observation, "a", &json!({ "answer": first }), &[r]).unwrap();
            s.add_node(session, NodeKind::Observation, "answer", &json!({ "answer": format!("answer {k}") }), &[r])
                .unwrap();
        }
        assert!(s.summary_of(session).unwrap().unwrap().nodes > 3_000);
        let cost = |t: &str| t.len() as u32 + 4;
        let all = s.conversation(session, u32::MAX, &cost).unwrap();
        assert_eq!((all.turns.len(), all.older_turns), (400, 0), "every turn, far past 1,000 nodes");
        assert_eq!(all.turns[0], DagTurn { question: "question 1".into(), answer: Some("answer 1".into()) });
        assert_eq!(all.turns[397].answer.as_deref(), Some("answer 398"), "the turn's last answer");
        assert_eq!(all.turns[398].answer, None);
        // A budget of 250 turns' worth keeps the newest that fit, and counts the rest.
        let price = |t: &DagTurn| cost(&t.question) + t.answer.as_deref().map_or(0, cost);
        let budget: u32 = all.turns[150..].iter().map(price).sum();
        let some = s.conversation(&session[..4], budget, &cost).unwrap();
        assert_eq!(some.turns, all.turns[150..].to_vec());
        assert_eq!((some.older_turns, some.budget_tokens, some.session_id.as_str()), (150, budget, session));
        let less = s.conversation(session, budget - 1, &cost).unwrap();
        assert_eq!((less.turns.len(), less.older_turns), (249, 151));
        // The newest turn is kept even alone over the budget: the chat shows what it continues.
        let one = s.conversation(session, 1, &cost).unwrap();
        assert_eq!(one.turns, all.turns[399..].to_vec());
        // A question logged without a query in its payload is its label.
        let c = s.join_session(Some("bare"), None, "x").unwrap();
        s.add_node(&c.id, NodeKind::UserRequest, "asked as a label", &json!({ "query": 3 }), &[]).unwrap();
        let bare = s.conversation("bare", 100, &cost).unwrap();
        assert_eq!(bare.turns, vec![DagTurn { question: "asked as a label".into(), answer: None }]);
    }

    #[test]
    fn a_listing_takes_the_newest_sessions_and_counts_them_all() {
        let (_d, s) = store();
        for i in 0..5 {
            s.join_session(Some(&format!("s{i}")), None, &format!("question {i}")).unwrap();
        }
        let newest: Vec<String> = s.sessions(2).unwrap().into_iter().map(|x| x.id).collect();
        assert_eq!(newest, ["s4", "s3"]);
        assert_eq!(s.session_count().unwrap(), 5);
    }

    #[test]
    fn the_schema_refuses_cycles_and_cross_session_edges() {
        let (_d, s) = store();
        let one = s.join_session(None, None, "one").unwrap();
        let two = s.join_session(None, None, "two").unwrap();
        let a = s.add_node(&one.id, NodeKind::UserRequest, "a", &json!({}), &[]).unwrap();
        let b = s.add_node(&two.id, NodeKind::UserRequest, "b", &json!({}), &[]).unwrap();
        assert!(s.add_node(&two.id, NodeKind::Thought, "x", &json!({}), &[a]).is_err(), "cross-session edge");
        let forward = s.conn.execute("INSERT INTO edges (parent, child) VALUES (?1, ?2)", params![b, b - 1]);
        assert!(forward.is_err(), "an edge from a newer node to an older one would allow cycles");
    }

    #[test]
    fn unknown_and_ambiguous_ids_say_so() {
        let (_d, s) = store();
        s.join_session(Some("abcd-1"), None, "x").unwrap();
        s.join_session(Some("abcd-2"), None, "y").unwrap();
        assert!(matches!(s.session("zzzz", DAG_VIEW_DEFAULT, None), Err(Error::NotFound(_))));
        assert!(
            matches!(s.session("abcd", DAG_VIEW_DEFAULT, None), Err(Error::BadRequest(m)) if m.contains("ambiguous"))
        );
        // One match, but under 4 characters: said so, not "no session" (it exists).
        s.join_session(Some("xyz-1"), None, "z").unwrap();
        assert!(
            matches!(s.session("xyz", DAG_VIEW_DEFAULT, None), Err(Error::BadRequest(m)) if m.contains("at least 4 characters"))
        );
        assert_eq!(s.summary_of("abcd").unwrap(), None, "a prefix is not an id");
        assert_eq!(s.summary_of("abcd-1").unwrap().map(|x| x.id), Some("abcd-1".to_string()));
        assert!(s.session("abcd-2", DAG_VIEW_DEFAULT, None).is_ok());
        assert!(s.join_session(Some("../etc"), None, "x").is_err());
    }

    #[test]
    fn dot_escapes_labels_and_lists_every_edge() {
        let (_d, s) = store();
        let c = s.join_session(None, None, "say \"hi\"").unwrap();
        let a = s.add_node(&c.id, NodeKind::UserRequest, "a \"quoted\" \\ label\nline", &json!({}), &[]).unwrap();
        let b = s.add_node(&c.id, NodeKind::Decision, "gate", &json!({}), &[a]).unwrap();
        let dot = to_dot(&s.session(&c.id, DAG_VIEW_DEFAULT, None).unwrap());
        assert!(dot.contains(r#"a \"quoted\" \\ label line"#), "{dot}");
        assert!(dot.contains(r#"label="say \"hi\"""#), "{dot}");
        assert!(dot.contains(&format!("n{a} -> n{b};")));
        assert!(dot.contains("shape=diamond"));
    }

    #[test]
    fn labels_wrap_into_a_few_lines() {
        assert_eq!(
            wrap("plan: search the code index; recall repo memory", 20, 3),
            ["plan: search the", "code index; recall", "repo memory"]
        );
        assert_eq!(wrap("a b c d e f", 3, 2), ["a b", "c d ..."]);
        assert_eq!(wrap("", 10, 3), Vec::<String>::new());
    }

    #[test]
    fn utc_formats_epoch_milliseconds() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_709_210_096_000), "2024-02-29 12:34:56 UTC");
    }
}
