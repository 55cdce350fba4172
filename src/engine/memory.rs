//! Repo memory: notes an agent or a person asks docdex to remember about one
//! repository, recalled by meaning and fed first into chat context.
//!
//! `memory.db` lives in the repo's own state directory, so nothing is ever read
//! across repositories. Its tables are the spec's: `memories` (id UUID, content,
//! embedding, created_at, metadata JSON), `memory_vec` (sqlite-vec, keyed by the
//! memory id) and `memory_meta` (embedding_dim, schema_version, and the model the
//! vectors came from). Without an embedder a memory is stored without a vector and
//! embedded later, and recall falls back to matching words, saying so. When the
//! embedding model changes, memories are re-embedded from their text on next use.

use crate::engine::analysis;
use crate::engine::fsutil::now_ms;
use crate::engine::llm::model_matches;
use crate::engine::privacy;
use crate::engine::repos::RepoRef;
use crate::engine::sqlite::{db_err, id_by_prefix, open, open_for_reading, vec_blob};
use crate::engine::Engine;
use crate::error::{Error, Result};
use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// The database file in the repo's state directory.
pub const MEMORY_DB: &str = crate::engine::repos::MEMORY_DB;
/// `memory_meta.schema_version`.
pub const MEMORY_SCHEMA: u32 = 1;
/// Longest memory accepted, in bytes.
const MAX_CONTENT_BYTES: usize = 64 * 1024;
/// Largest metadata object accepted, as JSON text: without it the content's bound meant
/// nothing (a 2 MB metadata string was stored, and every list and recall answered it).
const MAX_METADATA_BYTES: usize = 16 * 1024;
/// Memories embedded per request when catching up.
const BACKFILL_BATCH: usize = 32;
/// Memories one repository keeps at most: a store beyond it is refused, naming it. An agent
/// saving in a loop stored 300 memories of 60 KB at 40 a second, with nothing to stop it.
pub const MAX_MEMORIES: u64 = 10_000;
/// Memories one list answers at most (as search answers at most 200 hits); `next_after` pages on.
pub const MAX_LIST: usize = 200;
/// Most memories one recall answers.
const MAX_RECALL: usize = 100;
/// Content and metadata one list answers at most, in bytes (at least one memory is answered):
/// 200 memories of 64 KB would still be 13 MB. `GET /v1/memory?limit=1000000000` answered
/// every memory, 18 MB, in one response.
const MAX_LIST_BYTES: usize = 1024 * 1024;

/// `memory store`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryStoreRequest {
    /// The fact to remember, self-contained (e.g. "integration tests need REDIS_URL set").
    pub content: String,
    /// Optional JSON object stored with it (source, tags, author, ...).
    #[serde(default)]
    #[schemars(with = "Option<serde_json::Map<String, Value>>")]
    pub metadata: Option<Value>,
}

/// One memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryItem {
    /// UUID.
    pub id: String,
    /// The text remembered.
    pub content: String,
    /// When it was stored, epoch milliseconds.
    pub created_at: i64,
    /// The metadata object given when it was stored.
    pub metadata: Value,
    /// Whether it has a vector (recall by meaning can find it).
    pub embedded: bool,
}

/// The stored memory.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryStoreResponse {
    /// Repo root.
    pub repo: PathBuf,
    /// The memory as stored.
    pub memory: MemoryItem,
    /// Set when it was stored without a vector, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

/// `memory recall`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryRecallRequest {
    /// What you want to know; memories are matched by meaning (or shared words when no
    /// embedding model answers).
    pub query: String,
    /// Memories to return (default 5, at most 100).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// A recalled memory.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryHit {
    /// The memory.
    #[serde(flatten)]
    pub memory: MemoryItem,
    /// Cosine similarity (vector mode) or the share of the query's words found (text mode).
    pub score: f32,
}

/// Recalled memories.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryRecallResponse {
    /// Repo root.
    pub repo: PathBuf,
    /// The query.
    pub query: String,
    /// `vector` (by meaning) or `text` (by shared words, when no embedder answers).
    pub mode: String,
    /// Best first.
    pub results: Vec<MemoryHit>,
    /// Why recall fell back to text matching.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

/// `memory list`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryListResponse {
    /// Repo root.
    pub repo: PathBuf,
    /// Memories in the repo.
    pub total: u64,
    /// Newest first.
    pub memories: Vec<MemoryItem>,
    /// When older memories follow: the id of the last one answered, to pass as `after` for the
    /// next page (a page is at most 200 memories and about 1 MiB of content).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_after: Option<String>,
}

/// `memory delete`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryDeleteResponse {
    /// Repo root.
    pub repo: PathBuf,
    /// The id deleted.
    pub id: String,
}

/// An open `memory.db`.
struct MemoryDb {
    conn: Connection,
    path: PathBuf,
}

impl MemoryDb {
    fn open(repo: &RepoRef) -> Result<MemoryDb> {
        let path = repo.state_dir.join(MEMORY_DB);
        Self::open_at(path.clone()).map_err(|e| explain_damage(&path, e))
    }

    /// Opens the store to read it only (list, count): as [`MemoryDb::open`], but on a full disk,
    /// where that fails, read-only from the file alone ([`open_for_reading`]). The
    /// tables are not created: a `memory.db` that exists has them.
    fn open_read(repo: &RepoRef) -> Result<MemoryDb> {
        let path = repo.state_dir.join(MEMORY_DB);
        match open_for_reading(&path) {
            Ok(conn) if conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(false) => Ok(MemoryDb { conn, path }),
            Ok(conn) => Self::with_schema(conn, path.clone()).map_err(|e| explain_damage(&path, e)),
            Err(e) => Err(explain_damage(&path, e)),
        }
    }

    fn open_at(path: PathBuf) -> Result<MemoryDb> {
        Self::with_schema(open(&path)?, path)
    }

    /// The store on `conn`, its tables created if missing.
    fn with_schema(conn: Connection, path: PathBuf) -> Result<MemoryDb> {
        let db = MemoryDb { conn, path };
        db.conn
            .execute_batch(
                "CREATE TABLE IF NOT EXISTS memories (
                     id UUID PRIMARY KEY NOT NULL,
                     content TEXT NOT NULL,
                     embedding BLOB,
                     created_at INT NOT NULL,
                     metadata JSON NOT NULL DEFAULT '{}' CHECK (json_valid(metadata)));
                 CREATE INDEX IF NOT EXISTS memories_by_time ON memories(created_at);
                 CREATE TABLE IF NOT EXISTS memory_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);",
            )
            .map_err(db.err())?;
        if db.meta("schema_version")?.is_none() {
            db.set_meta("schema_version", &MEMORY_SCHEMA.to_string())?;
        }
        Ok(db)
    }

    /// Whether this is the read-only view [`MemoryDb::open_read`] falls back to on a full disk.
    fn read_only(&self) -> bool {
        self.conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(false)
    }

    fn err(&self) -> impl Fn(rusqlite::Error) -> Error + '_ {
        db_err(&self.path)
    }

    fn meta(&self, key: &str) -> Result<Option<String>> {
        self.conn
            .query_row("SELECT value FROM memory_meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(self.err())
    }

    fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        self.conn
            .execute("INSERT OR REPLACE INTO memory_meta(key, value) VALUES (?1, ?2)", [key, value])
            .map(|_| ())
            .map_err(self.err())
    }

    fn has_vec(&self) -> Result<bool> {
        table_exists(&self.conn, "memory_vec").map_err(self.err())
    }

    /// Makes the vectors match (model, dim): creates `memory_vec`, or on a model change drops
    /// every vector so the memories are embedded again from their text. Checked again under
    /// the write lock: writers storing at once all saw no `memory_vec` and each dropped the
    /// vectors the others had just set.
    fn prepare_vectors(&mut self, model: &str, dim: usize) -> Result<()> {
        if vectors_match(&self.conn, model, dim).map_err(self.err())? {
            return Ok(());
        }
        let path = self.path.clone();
        let tx = write_tx(&mut self.conn, &path)?;
        if vectors_match(&tx, model, dim).map_err(db_err(&path))? {
            return Ok(());
        }
        tx.execute_batch(&format!(
            "DROP TABLE IF EXISTS memory_vec;
             UPDATE memories SET embedding = NULL;
             CREATE VIRTUAL TABLE memory_vec USING vec0(memory_id TEXT PRIMARY KEY, embedding float[{dim}] distance_metric=cosine);"
        ))
        .map_err(db_err(&path))?;
        tx.execute("INSERT OR REPLACE INTO memory_meta(key, value) VALUES ('embedding_dim', ?1)", [dim.to_string()])
            .map_err(db_err(&path))?;
        tx.execute("INSERT OR REPLACE INTO memory_meta(key, value) VALUES ('embedding_model', ?1)", [model])
            .map_err(db_err(&path))?;
        tx.commit().map_err(db_err(&path))
    }

    fn set_vector(&mut self, id: &str, v: &[f32]) -> Result<()> {
        let path = self.path.clone();
        let tx = write_tx(&mut self.conn, &path)?;
        tx.execute("UPDATE memories SET embedding = ?2 WHERE id = ?1", params![id, vec_blob(v)])
            .map_err(db_err(&path))?;
        tx.execute("DELETE FROM memory_vec WHERE memory_id = ?1", [id]).map_err(db_err(&path))?;
        tx.execute("INSERT INTO memory_vec(memory_id, embedding) VALUES (?1, ?2)", params![id, vec_blob(v)])
            .map_err(db_err(&path))?;
        tx.commit().map_err(db_err(&path))
    }

    /// Inserts `item` unless a memory with the same content is stored, whose id it answers
    /// then; one write transaction, so writers storing the same fact at once keep one copy,
    /// and a repository holding [`MAX_MEMORIES`] is refused.
    fn insert_new(&mut self, item: &MemoryItem) -> Result<Option<String>> {
        let path = self.path.clone();
        let tx = write_tx(&mut self.conn, &path)?;
        let same: Option<String> = tx
            .query_row(
                "SELECT id FROM memories WHERE content = ?1 ORDER BY created_at, id LIMIT 1",
                [&item.content],
                |r| r.get(0),
            )
            .optional()
            .map_err(db_err(&path))?;
        if same.is_none() {
            let stored: i64 = tx.query_row("SELECT COUNT(*) FROM memories", [], |r| r.get(0)).map_err(db_err(&path))?;
            if stored as u64 >= MAX_MEMORIES {
                return Err(Error::BadRequest(format!(
                    "this repository already keeps {stored} memories, the most docdex stores ({MAX_MEMORIES}); forget outdated ones (`docdex memory list`, `docdex memory delete ID`) before storing more"
                )));
            }
            tx.execute(
                "INSERT INTO memories(id, content, embedding, created_at, metadata) VALUES (?1, ?2, NULL, ?3, ?4)",
                params![item.id, item.content, item.created_at, item.metadata.to_string()],
            )
            .map_err(db_err(&path))?;
        }
        tx.commit().map_err(db_err(&path))?;
        Ok(same)
    }

    fn unembedded(&self, limit: usize) -> Result<Vec<(String, String)>> {
        let mut st = self
            .conn
            .prepare("SELECT id, content FROM memories WHERE embedding IS NULL ORDER BY created_at LIMIT ?1")
            .map_err(self.err())?;
        let rows = st
            .query_map([limit as i64], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(self.err())?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.err())?;
        Ok(rows)
    }

    fn items(&self, sql: &str, args: &[&dyn rusqlite::ToSql]) -> Result<Vec<MemoryItem>> {
        let mut st = self.conn.prepare(sql).map_err(self.err())?;
        let rows = st
            .query_map(args, |r| {
                let meta: String = r.get(4)?;
                Ok(MemoryItem {
                    id: r.get(0)?,
                    content: r.get(1)?,
                    embedded: r.get::<_, Option<Vec<u8>>>(2)?.is_some(),
                    created_at: r.get(3)?,
                    metadata: serde_json::from_str(&meta).unwrap_or(Value::Null),
                })
            })
            .map_err(self.err())?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.err())?;
        Ok(rows)
    }

    fn get(&self, id: &str) -> Result<Option<MemoryItem>> {
        Ok(self.items("SELECT id, content, embedding, created_at, metadata FROM memories WHERE id = ?1", &[&id])?.pop())
    }

    fn count(&self) -> Result<u64> {
        self.conn
            .query_row("SELECT COUNT(*) FROM memories", [], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(self.err())
    }

    fn knn(&self, q: &[f32], k: usize) -> Result<Vec<(String, f32)>> {
        if !self.has_vec()? {
            return Ok(Vec::new());
        }
        let mut st = self
            .conn
            .prepare("SELECT memory_id, distance FROM memory_vec WHERE embedding MATCH ?1 AND k = ?2")
            .map_err(self.err())?;
        let rows = st
            .query_map(params![vec_blob(q), k as i64], |r| {
                Ok((r.get::<_, String>(0)?, 1.0 - r.get::<_, f64>(1)? as f32))
            })
            .map_err(self.err())?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.err())?;
        Ok(rows)
    }

    fn delete(&mut self, id: &str) -> Result<bool> {
        let path = self.path.clone();
        let tx = write_tx(&mut self.conn, &path)?;
        let has_vec = table_exists(&tx, "memory_vec").map_err(db_err(&path))?;
        let n = tx.execute("DELETE FROM memories WHERE id = ?1", [id]).map_err(db_err(&path))?;
        if has_vec {
            tx.execute("DELETE FROM memory_vec WHERE memory_id = ?1", [id]).map_err(db_err(&path))?;
        }
        tx.commit().map_err(db_err(&path))?;
        Ok(n > 0)
    }
}

/// A write transaction holding the write lock from its start (waiting up to the busy timeout).
/// A deferred one that reads, then writes after another writer committed, gets "database is
/// locked" at once: SQLite cannot wait for a read snapshot that is already stale.
fn write_tx<'c>(conn: &'c mut Connection, path: &Path) -> Result<rusqlite::Transaction<'c>> {
    conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(db_err(path))
}

fn table_exists(conn: &Connection, name: &str) -> rusqlite::Result<bool> {
    conn.query_row("SELECT 1 FROM sqlite_master WHERE name = ?1", [name], |_| Ok(())).optional().map(|o| o.is_some())
}

/// Whether `memory_vec` exists and holds vectors of this model and length.
fn vectors_match(conn: &Connection, model: &str, dim: usize) -> rusqlite::Result<bool> {
    let meta = |key: &str| {
        conn.query_row("SELECT value FROM memory_meta WHERE key = ?1", [key], |r| r.get::<_, String>(0)).optional()
    };
    let same_dim = meta("embedding_dim")?.and_then(|d| d.parse::<usize>().ok()) == Some(dim);
    let same_model = meta("embedding_model")?.is_some_and(|m| model_matches(&m, model));
    Ok(same_dim && same_model && table_exists(conn, "memory_vec")?)
}

impl Engine {
    fn memory_enabled(&self) -> Result<()> {
        if !self.config().memory.enabled {
            return Err(Error::BadRequest("repo memory is disabled ([memory] enabled = false in config.toml)".into()));
        }
        Ok(())
    }

    fn memory_db(&self, repo_path: &Path) -> Result<(RepoRef, MemoryDb)> {
        self.memory_enabled()?;
        let repo = self.resolve_repo(repo_path)?;
        if !repo.meta_path().exists() {
            // First touch of this repo: give it a state directory and a registry entry, unless
            // no one should index it (`/`, the home directory, docdex's home): registered, `/`
            // became the repository of every command run outside git, one `index` refuses.
            self.check_servable(&repo)?;
            self.check_memory_root(&repo)?;
            self.inner.registry.ensure(&repo)?;
        }
        let db = MemoryDb::open(&repo)?;
        Ok((repo, db))
    }

    /// Refuses a first store in a folder of a repository (`--repo src/` typed in a checkout):
    /// it made a second, empty store that recall in the repository never saw (tour35 F3).
    fn check_memory_root(&self, repo: &RepoRef) -> Result<()> {
        let registered: Vec<PathBuf> = self.list_repos()?.into_iter().map(|r| r.path).collect();
        let outer = match self.covering_repo(repo)? {
            Some(outer) => Some(outer),
            None => crate::engine::repos::enclosing_root(&repo.root, &registered),
        };
        let Some(outer) = outer else { return Ok(()) };
        Err(Error::BadRequest(format!(
            "{} lies inside the repository {}, whose memories are kept for the whole repository: \
             pass --repo {} (or leave out --repo anywhere in it)",
            repo.root.display(),
            outer.display(),
            crate::error::shell_path(&outer)
        )))
    }

    /// Embeds memories that have no vector yet (stored while no embedder answered, or
    /// before a model change). Returns the vector length, or why embedding is unavailable.
    fn memory_vectors_ready(&self, db: &mut MemoryDb, probe: Option<Vec<f32>>) -> std::result::Result<usize, String> {
        let model = self.config().llm.embedding_model.clone();
        let dim = match probe {
            Some(v) => v.len(),
            None => {
                if let Some(why) = self.recent_embed_failure() {
                    return Err(why);
                }
                // The liveness check first, as for a query: a server that accepts and never
                // answers held every store for `[llm] request_timeout_secs` (tour16 F1).
                let answered = self.provider().and_then(|p| self.server_answers(p.as_ref()));
                match answered.and_then(|()| self.embed(vec!["docdex memory probe".into()])) {
                    Ok(v) => v.first().map(|x| x.len()).unwrap_or(0),
                    Err(e) => {
                        self.note_embed_failure(&e);
                        return Err(e.to_string());
                    }
                }
            }
        };
        if dim == 0 {
            return Err("the embedder returned an empty vector".into());
        }
        db.prepare_vectors(&model, dim).map_err(|e| e.to_string())?;
        loop {
            let todo = db.unembedded(BACKFILL_BATCH).map_err(|e| e.to_string())?;
            if todo.is_empty() {
                return Ok(dim);
            }
            let vectors = self.embed(todo.iter().map(|(_, c)| c.clone()).collect()).map_err(|e| {
                self.note_embed_failure(&e);
                e.to_string()
            })?;
            for ((id, _), v) in todo.iter().zip(vectors) {
                if v.len() != dim {
                    return Err(format!("the embedder changed its vector size (expected {dim}, got {})", v.len()));
                }
                db.set_vector(id, &v).map_err(|e| e.to_string())?;
            }
        }
    }

    /// How many memories the repo has (`None` when it has no `memory.db`); for `check`.
    pub(crate) fn memory_count(&self, repo: &RepoRef) -> Result<Option<u64>> {
        if !repo.state_dir.join(MEMORY_DB).exists() {
            return Ok(None);
        }
        MemoryDb::open_read(repo)?.count().map(Some)
    }

    /// Remembers `req.content` for this repository (`memory_store`).
    pub fn memory_store(&self, repo_path: &Path, req: &MemoryStoreRequest) -> Result<MemoryStoreResponse> {
        let content = req.content.trim();
        if content.is_empty() {
            return Err(Error::BadRequest("nothing to remember: the memory's content is empty".into()));
        }
        if content.len() > MAX_CONTENT_BYTES {
            return Err(Error::BadRequest(format!(
                "a memory holds at most {} KiB ({MAX_CONTENT_BYTES} bytes); this one has {} bytes: store the fact, and point at the file or page that holds the detail",
                MAX_CONTENT_BYTES / 1024,
                content.len()
            )));
        }
        let metadata = match &req.metadata {
            None | Some(Value::Null) => Value::Object(Default::default()),
            Some(v @ Value::Object(_)) => v.clone(),
            Some(other) => {
                return Err(Error::BadRequest(format!("memory metadata must be a JSON object, got {other}")));
            }
        };
        let metadata_len = metadata.to_string().len();
        if metadata_len > MAX_METADATA_BYTES {
            return Err(Error::BadRequest(format!(
                "a memory's metadata holds at most {} KB of JSON; this one has {} KB (keep tags and sources there, the fact in content)",
                MAX_METADATA_BYTES / 1024,
                metadata_len.div_ceil(1024)
            )));
        }
        let (repo, mut db) = self.memory_db(repo_path)?;
        let item = MemoryItem {
            id: uuid::Uuid::new_v4().to_string(),
            content: content.to_string(),
            created_at: now_ms() as i64,
            metadata,
            embedded: false,
        };
        if let Some(id) = db.insert_new(&item)? {
            // An agent saving the same fact every session filled chat's memory slot with copies.
            let kept = db.get(&id)?.ok_or_else(|| Error::NotFound(format!("memory {id} vanished while storing")))?;
            let notice = already_remembered(&kept, &item.metadata);
            return Ok(MemoryStoreResponse { repo: repo.root, memory: kept, notice: Some(notice) });
        }
        let notice = match self.memory_vectors_ready(&mut db, None) {
            Ok(_) => None,
            Err(why) => Some(format!(
                "stored without an embedding ({why}); it is embedded when an embedder answers, and recall matches its words until then"
            )),
        };
        let memory = db.get(&item.id)?.unwrap_or(item);
        tracing::info!(repo = %repo.root.display(), embedded = memory.embedded, "memory stored");
        Ok(MemoryStoreResponse { repo: repo.root, memory, notice })
    }

    /// The memories most related to `req.query` in this repository (`memory_recall`): by
    /// meaning, or by shared words (with a notice) when no embedder answers.
    pub fn memory_recall(&self, repo_path: &Path, req: &MemoryRecallRequest) -> Result<MemoryRecallResponse> {
        let limit = positive_limit(req.limit, 5)?.min(MAX_RECALL);
        if req.query.trim().is_empty() {
            return Err(Error::BadRequest("empty query: say what to recall".into()));
        }
        crate::engine::limits::check_query(&req.query)?;
        self.memory_enabled()?;
        let untouched = self.resolve_repo(repo_path)?;
        if !untouched.meta_path().exists() {
            // Nothing stored here yet, and recalling does not register the directory.
            return Ok(MemoryRecallResponse {
                repo: untouched.root,
                query: req.query.clone(),
                mode: "vector".into(),
                results: Vec::new(),
                notice: None,
            });
        }
        // Reading needs no space: on a full disk the memories are read from the file alone.
        let mut db = MemoryDb::open_read(&untouched)?;
        let repo = untouched;
        let mut resp = MemoryRecallResponse {
            repo: repo.root.clone(),
            query: req.query.clone(),
            mode: "vector".into(),
            results: Vec::new(),
            notice: None,
        };
        if db.count()? == 0 {
            return Ok(resp);
        }
        let query_vec = self.embed_query(&req.query).map_err(|e| e.to_string());
        let embedded = query_vec.is_ok();
        let ready = match query_vec {
            Ok(q) => self.memory_vectors_ready(&mut db, Some(q.clone())).map(|_| q),
            Err(why) => Err(why),
        };
        match ready {
            Ok(q) => {
                let (hits, nearest_below) = vector_recall(&db, &q, limit)?;
                resp.results = hits;
                if let (true, Some(best)) = (resp.results.is_empty(), nearest_below) {
                    resp.notice = Some(format!(
                        "no memory is close in meaning to the query: the nearest scored {best:.3}, under the {MIN_MEMORY_SIMILARITY} floor of related texts"
                    ));
                }
            }
            Err(why) if embedded && db.read_only() => {
                // The query was embedded; the store could not take the memories' missing vectors.
                resp.mode = "text".into();
                resp.notice = Some(format!(
                    "recalled by matching words, not meaning: the disk holding the memories is full, so those without a vector could not be embedded now ({why})"
                ));
                resp.results = text_recall(&db, &req.query, limit)?;
            }
            Err(why) => {
                resp.mode = "text".into();
                resp.notice = Some(format!("recalled by matching words, not meaning: no embedder answered ({why})"));
                resp.results = text_recall(&db, &req.query, limit)?;
            }
        }
        for hit in &mut resp.results {
            self.mask_memory(&mut hit.memory);
        }
        // At most about 1 MiB, as a list page: 100 memories of 64 KiB were 6.4 MiB.
        let items: Vec<MemoryItem> = resp.results.iter().map(|h| h.memory.clone()).collect();
        let kept = fit_page(&items, limit);
        if kept < resp.results.len() {
            let cut = resp.results.len() - kept;
            resp.results.truncate(kept);
            let note = format!("{cut} more matched but were left out: a recall answers about 1 MiB of memories");
            resp.notice = Some(match resp.notice.take() {
                Some(n) => format!("{n}; {note}"),
                None => note,
            });
        }
        Ok(resp)
    }

    /// The repository's newest memories (`limit`, default 50, at most [`MAX_LIST`]).
    pub fn memory_list(&self, repo_path: &Path, limit: Option<usize>) -> Result<MemoryListResponse> {
        self.memory_list_page(repo_path, limit, None)
    }

    /// The repository's memories, newest first, from the one after `after` (an id a previous
    /// page answered as `next_after`): at most `limit` ([`MAX_LIST`]) and about 1 MiB of
    /// content, so no list answers a whole store at once.
    pub fn memory_list_page(
        &self,
        repo_path: &Path,
        limit: Option<usize>,
        after: Option<&str>,
    ) -> Result<MemoryListResponse> {
        self.memory_enabled()?;
        let repo = self.resolve_repo(repo_path)?;
        if !repo.meta_path().exists() {
            // Never touched: nothing to list, and listing does not register the directory.
            return Ok(MemoryListResponse { repo: repo.root, total: 0, memories: Vec::new(), next_after: None });
        }
        // Reading needs no space: on a full disk the list is read from the file alone.
        let db = MemoryDb::open_read(&repo)?;
        let limit = positive_limit(limit, 50)?.min(MAX_LIST);
        let list = format!("docdex memory list --repo {}", repo.root.display());
        let cursor = match after.map(str::trim).filter(|a| !a.is_empty()) {
            None => None,
            // A unique prefix of 6+ characters names the memory, as `memory delete` takes it.
            Some(given) => {
                let id = id_by_prefix(&db.conn, "memories", given, "memory", &list)?;
                Some(db.get(id.as_deref().unwrap_or(given))?.ok_or_else(|| {
                    Error::NotFound(format!(
                        "no memory {given} in {} to list after (deleted meanwhile?); list again from the newest",
                        repo.root.display()
                    ))
                })?)
            }
        };
        // One more than asked, to know whether older ones follow.
        let take = (limit + 1) as i64;
        let cols = "SELECT id, content, embedding, created_at, metadata FROM memories";
        let mut memories = match &cursor {
            None => db.items(&format!("{cols} ORDER BY created_at DESC, id LIMIT ?1"), &[&take])?,
            Some(c) => db.items(
                &format!("{cols} WHERE created_at < ?1 OR (created_at = ?1 AND id > ?2) ORDER BY created_at DESC, id LIMIT ?3"),
                &[&c.created_at, &c.id, &take],
            )?,
        };
        let kept = fit_page(&memories, limit);
        let more = memories.len() > kept;
        memories.truncate(kept);
        let next_after = more.then(|| memories.last().map(|m| m.id.clone())).flatten();
        for memory in &mut memories {
            self.mask_memory(memory);
        }
        Ok(MemoryListResponse { repo: repo.root, total: db.count()?, memories, next_after })
    }

    /// Masks the secrets and personal data in a memory's content as search snippets are
    /// (`[privacy] redact_snippets`, [`privacy::mask`]): recall and list handed a stored AWS key or
    /// password back verbatim to agents, which pass results on to models. Only the answer is
    /// masked (chat's memory slot too, as context packs are); the stored text stays whole, so
    /// duplicates are still found and turning `redact_snippets` off shows it again.
    fn mask_memory(&self, memory: &mut MemoryItem) {
        if !self.config().privacy.redact_snippets {
            return;
        }
        let (masked, found) = privacy::mask(&memory.content);
        if !found.is_empty() {
            tracing::debug!(id = %memory.id, masked = %privacy::summarize(&found), "memory content redacted");
            memory.content = masked;
        }
    }

    /// Forgets one memory of this repository; an id from another repository is not found.
    pub fn memory_delete(&self, repo_path: &Path, id: &str) -> Result<MemoryDeleteResponse> {
        self.memory_enabled()?;
        let untouched = self.resolve_repo(repo_path)?;
        // The first characters of an id do, as with git hashes, when they name one memory.
        let given = id.trim();
        let list = format!("docdex memory list --repo {}", untouched.root.display());
        if given.is_empty() {
            return Err(Error::BadRequest(format!("no memory id given: `{list}` shows them")));
        }
        if !untouched.meta_path().exists() {
            // Nothing stored here, and a delete that finds nothing does not register the directory.
            return Err(Error::NotFound(format!("no memories in {} yet: nothing to forget", untouched.root.display())));
        }
        let (repo, mut db) = self.memory_db(repo_path)?;
        let id = id_by_prefix(&db.conn, "memories", given, "memory", &list)?.unwrap_or_else(|| given.to_string());
        if !db.delete(&id)? {
            return Err(Error::NotFound(format!(
                "no memory {id} in {}; `{list}` shows this repository's memories",
                repo.root.display()
            )));
        }
        Ok(MemoryDeleteResponse { repo: repo.root, id })
    }
}

/// `limit`, or `default` when absent; 0 is refused. It was taken as 1 over HTTP and MCP (the
/// command line refuses it), so an agent asking for none got one memory and no word. A limit
/// above the maximum is cut to it, as documented.
fn positive_limit(limit: Option<usize>, default: usize) -> Result<usize> {
    match limit {
        Some(0) => Err(Error::BadRequest("limit 0 asks for no memory: give 1 or more (or leave it out)".into())),
        Some(n) => Ok(n),
        None => Ok(default),
    }
}

/// How many of `memories` (newest first) one page answers: at most `limit`, and no more than
/// [`MAX_LIST_BYTES`] of content and metadata, one memory at least.
fn fit_page(memories: &[MemoryItem], limit: usize) -> usize {
    let mut bytes = 0usize;
    for (i, m) in memories.iter().take(limit).enumerate() {
        bytes += m.content.len() + m.metadata.to_string().len();
        if bytes > MAX_LIST_BYTES && i > 0 {
            return i;
        }
    }
    memories.len().min(limit)
}

/// The notice for a store of content already remembered as `kept`.
fn already_remembered(kept: &MemoryItem, metadata: &Value) -> String {
    let when = crate::engine::dag::utc(kept.created_at.max(0) as u64);
    let meta = if &kept.metadata == metadata {
        ""
    } else {
        "; its metadata is the one stored then (delete it and store again to change that)"
    };
    format!("already remembered as {} ({when}): not stored again{meta}", kept.id)
}

/// A `memory.db` that is not SQLite (overwritten, or another file moved over it) said only
/// "file is not a database": it now says what that means and how to go on, and leaves the file
/// alone (its rows may still be rescued).
fn explain_damage(path: &Path, e: Error) -> Error {
    use std::io::Read;
    let mut header = [0u8; 16];
    let read = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut header));
    if read.is_err() || &header == b"SQLite format 3\0" {
        return e;
    }
    Error::CorruptState {
        path: path.to_path_buf(),
        message: format!(
            "{e}; it is not an SQLite database, so this repository's memories cannot be read. It was left as it is: move it aside (`sqlite3 {} .recover` may rescue its rows) and the next `docdex memory store` starts a new one",
            path.display()
        ),
    }
}

/// The least cosine similarity of a memory recalled by meaning. Sentence embedders score
/// unrelated texts around 0 to 0.15, and recall handed every memory back for any query
/// ("banana smoothie recipe" listed all five, down to -0.068), where matching words answers
/// none; chat's memory slot, the highest priority in its budget, had the same floor.
pub const MIN_MEMORY_SIMILARITY: f32 = 0.2;

/// The `limit` memories nearest `query` at [`MIN_MEMORY_SIMILARITY`] or more, and, when some
/// were nearer than nothing but under it, the best of those (for the notice).
fn vector_recall(db: &MemoryDb, query: &[f32], limit: usize) -> Result<(Vec<MemoryHit>, Option<f32>)> {
    let mut hits = Vec::new();
    let mut nearest_below: Option<f32> = None;
    for (id, score) in db.knn(query, limit)? {
        let score = round_score(score);
        if score < MIN_MEMORY_SIMILARITY {
            nearest_below = Some(nearest_below.map_or(score, |b| b.max(score)));
            continue;
        }
        if let Some(memory) = db.get(&id)? {
            hits.push(MemoryHit { memory, score });
        }
    }
    Ok((hits, nearest_below))
}

/// A similarity rounded to three decimals, never `-0.0`: a cosine a hair below 0 (orthogonal
/// vectors) rounded to `-0.0`, which the CLI and JSON printed as such.
fn round_score(score: f32) -> f32 {
    // -0.0 + 0.0 is +0.0; every other value is unchanged.
    (score * 1000.0).round() / 1000.0 + 0.0
}

/// Memories scored by the share of the query's words (weighted by rarity among the
/// memories) they contain.
fn text_recall(db: &MemoryDb, query: &str, limit: usize) -> Result<Vec<MemoryHit>> {
    let q: Vec<String> = analysis::query_terms(query);
    if q.is_empty() {
        return Ok(Vec::new());
    }
    let all = db.items("SELECT id, content, embedding, created_at, metadata FROM memories", &[])?;
    let sets: Vec<HashSet<String>> = all.iter().map(|m| analysis::terms(&m.content).into_iter().collect()).collect();
    let n = all.len().max(1) as f64;
    let df: HashMap<&String, usize> = q.iter().map(|t| (t, sets.iter().filter(|s| s.contains(t)).count())).collect();
    let weight = |t: &String| (1.0 + (n - df[t] as f64 + 0.5) / (df[t] as f64 + 0.5)).ln();
    let total: f64 = q.iter().map(weight).sum::<f64>().max(1e-9);
    let mut hits: Vec<MemoryHit> = all
        .into_iter()
        .zip(&sets)
        .filter_map(|(m, s)| {
            let got: f64 = q.iter().filter(|t| s.contains(*t)).map(weight).sum();
            (got > 0.0).then(|| MemoryHit { memory: m, score: ((got / total) * 1000.0).round() as f32 / 1000.0 })
        })
        .collect();
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(b.memory.created_at.cmp(&a.memory.created_at)));
    hits.truncate(limit);
    Ok(hits)
}

#[cfg(test)]
mod tests {
    use super::round_score;

    #[test]
    fn a_score_a_hair_below_zero_is_zero_not_minus_zero() {
        for s in [-0.0_f32, -1e-7, -0.0004] {
            let r = round_score(s);
            assert!(r == 0.0 && r.is_sign_positive(), "{s} rounded to {r}");
            assert_eq!(format!("{r:.3}"), "0.000");
            assert_eq!(serde_json::to_string(&r).unwrap(), "0.0");
        }
        assert_eq!(round_score(-0.25), -0.25, "a real negative similarity stays");
        assert_eq!(round_score(0.81234), 0.812);
    }
}
