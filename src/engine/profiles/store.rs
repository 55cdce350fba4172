//! `state/profiles/main.db`: the agents, their preferences, the vectors that recall them by
//! meaning (`preference_vec`, sqlite-vec, one partition per agent), removals kept for sync
//! (`tombstones`) and `profile_meta` (schema version, embedding model and dimension).
//!
//! Reads are plain functions over a [`Connection`] (WAL: a reader sees the last commit and is
//! never blocked by a writer); writes go through [`Write`], one `BEGIN IMMEDIATE` transaction
//! that the caller runs under the profile writer lock. The schema's CHECK constraints refuse a
//! row with an unknown category or source or an empty text, so nothing corrupt is ever stored.

use super::rules::Rule;
use super::types::*;
use crate::engine::sqlite::{blob_vec, db_err, vec_blob};
use crate::error::{Error, Result};
use rusqlite::{params, Connection, OptionalExtension, Transaction};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `profile_meta` key: the newest preference removal time dropped by the count bound
/// ([`Write::bound_removals`]); an unknown incoming row stamped at or before it is refused.
pub const FORGOTTEN_REMOVALS: &str = "removals_forgotten_through";
/// `profile_meta` key: the same for agent removals.
pub const FORGOTTEN_AGENT_REMOVALS: &str = "agent_removals_forgotten_through";
/// `profile_meta.schema_version`.
pub const SCHEMA_VERSION: u32 = 1;
/// The factory defaults, embedded in the binary.
const DEFAULTS: &str = include_str!("defaults.json");
/// `last_updated` and `created_at` of seed rows: fixed, so two installations agree on them.
pub const SEED_EPOCH_MS: i64 = 1_767_225_600_000;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS agents (
    id TEXT PRIMARY KEY NOT NULL CHECK (length(id) BETWEEN 1 AND 64),
    role TEXT NOT NULL DEFAULT '',
    created_at INT NOT NULL,
    role_updated INT NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS preferences (
    id UUID PRIMARY KEY NOT NULL,
    agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    content TEXT NOT NULL CHECK (length(trim(content)) > 0),
    category TEXT NOT NULL CHECK (category IN ('style', 'tooling', 'constraint', 'workflow')),
    rule TEXT CHECK (rule IS NULL OR category = 'constraint'),
    embedding BLOB,
    last_updated INT NOT NULL,
    source TEXT NOT NULL CHECK (source IN ('manual', 'evolution', 'import', 'seed')));
CREATE INDEX IF NOT EXISTS preferences_by_agent ON preferences(agent_id, category, last_updated);
CREATE TABLE IF NOT EXISTS tombstones (
    id TEXT PRIMARY KEY NOT NULL,
    agent_id TEXT NOT NULL,
    deleted_at INT NOT NULL);
CREATE TABLE IF NOT EXISTS agent_tombstones (
    agent_id TEXT PRIMARY KEY NOT NULL,
    removed_at INT NOT NULL);
CREATE TABLE IF NOT EXISTS profile_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
";

const PREF_COLUMNS: &str = "id, agent_id, content, category, rule, embedding IS NOT NULL, last_updated, source";

/// Opens a connection to `main.db` (created when missing) with foreign keys on.
pub fn open(path: &Path) -> Result<Connection> {
    let conn = crate::engine::sqlite::open(path)?;
    conn.pragma_update(None, "foreign_keys", "ON").map_err(db_err(path))?;
    Ok(conn)
}

/// A connection for reading `main.db`: [`open`], or on a full disk the file read alone
/// ([`crate::engine::sqlite::open_for_reading`]: a WAL database needs room for its shared-memory
/// file to be opened as usual). Such a connection is read-only: [`poolable`] says not to keep it,
/// since it would not see later writes.
pub fn open_read(path: &Path) -> Result<Connection> {
    let conn = crate::engine::sqlite::open_for_reading(path)?;
    conn.pragma_update(None, "foreign_keys", "ON").map_err(db_err(path))?;
    Ok(conn)
}

/// Whether a reader may be kept for the next read: not one opened read-only from the file
/// alone on a full disk ([`open_read`]).
pub fn poolable(conn: &Connection) -> bool {
    !conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(true)
}

/// The path a connection was opened on (for errors).
fn path_of(conn: &Connection) -> PathBuf {
    conn.path().map(PathBuf::from).unwrap_or_else(|| PathBuf::from("profiles/main.db"))
}

fn err(conn: &Connection) -> impl Fn(rusqlite::Error) -> Error {
    let path = path_of(conn);
    move |e| Error::Database { path: path.clone(), message: e.to_string() }
}

/// True when `agents` lacks a column this docdex keeps (`role_updated`, added after the first
/// release) or the file lacks `agent_tombstones`: the next write adds them ([`Write::begin`]),
/// and readers wait for that.
pub fn needs_migration(conn: &Connection) -> Result<bool> {
    if !has_schema(conn)? {
        return Ok(false);
    }
    let tombstones: i64 = conn
        .query_row("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'agent_tombstones'", [], |r| {
            r.get(0)
        })
        .map_err(err(conn))?;
    Ok(tombstones == 0 || lacks_role_stamp(conn)? || has_case_variants(conn)?)
}

/// True when an agent is stored under an id with upper-case letters (written before ids were
/// folded to lower case): the next write folds it into its lower-case agent
/// ([`Write::fold_agent_case`]).
fn has_case_variants(conn: &Connection) -> Result<bool> {
    conn.query_row("SELECT EXISTS(SELECT 1 FROM agents WHERE id <> lower(id))", [], |r| r.get(0)).map_err(err(conn))
}

/// True when `agents` has no `role_updated` column (a database from before roles were stamped).
fn lacks_role_stamp(conn: &Connection) -> Result<bool> {
    let n: i64 = conn
        .query_row("SELECT COUNT(*) FROM pragma_table_info('agents') WHERE name = 'role_updated'", [], |r| r.get(0))
        .map_err(err(conn))?;
    Ok(n == 0)
}

/// True when the schema exists (a fresh file has none until the first write).
pub fn has_schema(conn: &Connection) -> Result<bool> {
    conn.query_row("SELECT 1 FROM sqlite_master WHERE name = 'profile_meta'", [], |_| Ok(()))
        .optional()
        .map(|o| o.is_some())
        .map_err(err(conn))
}

/// A `profile_meta` value.
pub fn meta(conn: &Connection, key: &str) -> Result<Option<String>> {
    if !has_schema(conn)? {
        return Ok(None);
    }
    conn.query_row("SELECT value FROM profile_meta WHERE key = ?1", [key], |r| r.get(0)).optional().map_err(err(conn))
}

fn row_to_pref(r: &rusqlite::Row<'_>) -> rusqlite::Result<Preference> {
    let category: String = r.get(3)?;
    let source: String = r.get(7)?;
    Ok(Preference {
        id: r.get(0)?,
        agent_id: r.get(1)?,
        content: r.get(2)?,
        // The schema's CHECK constraints keep these valid.
        category: Category::parse(&category).unwrap_or(Category::Style),
        rule: r.get(4)?,
        embedded: r.get(5)?,
        last_updated: r.get(6)?,
        source: PreferenceSource::parse(&source).unwrap_or(PreferenceSource::Import),
    })
}

fn prefs(conn: &Connection, sql: &str, args: &[&dyn rusqlite::ToSql]) -> Result<Vec<Preference>> {
    let mut st = conn.prepare_cached(sql).map_err(err(conn))?;
    let rows = st.query_map(args, row_to_pref).map_err(err(conn))?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map_err(err(conn))
}

/// One preference.
pub fn preference(conn: &Connection, id: &str) -> Result<Option<Preference>> {
    Ok(prefs(conn, &format!("SELECT {PREF_COLUMNS} FROM preferences WHERE id = ?1"), &[&id])?.pop())
}

/// An agent id as profile memory keeps it: trimmed and in lower case, so `TEAM`, `Team` and
/// `team` are one agent (the team's). Ids are ASCII (letters, digits, `-`, `_`). A case-only
/// variant used to become an agent of its own that applied to nobody. Every read and write
/// of this module folds the ids it is given, so no caller can store or miss an agent by case.
pub fn agent_key(id: &str) -> String {
    id.trim().to_ascii_lowercase()
}

/// The preferences of these agents, by agent, category, then newest first.
pub fn preferences_of(conn: &Connection, agents: &[&str]) -> Result<Vec<Preference>> {
    let mut out = Vec::new();
    for a in agents {
        let a = agent_key(a);
        out.extend(prefs(
            conn,
            &format!(
                "SELECT {PREF_COLUMNS} FROM preferences WHERE agent_id = ?1 ORDER BY {CATEGORY_RANK}, last_updated DESC, id"
            ),
            &[&a],
        )?);
    }
    Ok(out)
}

/// The order an agent's preferences are listed in: by category, newest first, then by id.
const CATEGORY_RANK: &str =
    "CASE category WHEN 'style' THEN 0 WHEN 'tooling' THEN 1 WHEN 'constraint' THEN 2 ELSE 3 END";

/// Up to `take` of `agent`'s preferences in [`preferences_of`]'s order, from the one after
/// `after` (a preference of that agent): a keyset page, so a page deep in a long list costs
/// what the first does and a preference added meanwhile never shifts one into two pages.
pub fn preferences_page(
    conn: &Connection,
    agent: &str,
    after: Option<&Preference>,
    take: usize,
) -> Result<Vec<Preference>> {
    let agent = agent_key(agent);
    let take = take as i64;
    let order = format!("ORDER BY {CATEGORY_RANK}, last_updated DESC, id LIMIT");
    match after {
        None => prefs(
            conn,
            &format!("SELECT {PREF_COLUMNS} FROM preferences WHERE agent_id = ?1 {order} ?2"),
            &[&agent, &take],
        ),
        Some(c) => {
            let rank = Category::ALL.iter().position(|x| *x == c.category).unwrap_or(0) as i64;
            prefs(
                conn,
                &format!(
                    "SELECT {PREF_COLUMNS} FROM preferences WHERE agent_id = ?1 AND ({CATEGORY_RANK} > ?2
                     OR ({CATEGORY_RANK} = ?2 AND (last_updated < ?3 OR (last_updated = ?3 AND id > ?4)))) {order} ?5"
                ),
                &[&agent, &rank, &c.last_updated, &c.id, &take],
            )
        }
    }
}

/// How many preferences each agent holds (agents with none are left out).
pub fn counts(conn: &Connection) -> Result<BTreeMap<String, u64>> {
    let mut st =
        conn.prepare_cached("SELECT agent_id, COUNT(*) FROM preferences GROUP BY agent_id").map_err(err(conn))?;
    let rows = st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))).map_err(err(conn))?;
    rows.map(|r| r.map(|(a, n)| (a, n.max(0) as u64))).collect::<rusqlite::Result<_>>().map_err(err(conn))
}

/// How many agents profile memory holds.
pub fn agent_count(conn: &Connection) -> Result<u64> {
    let n: i64 = conn.query_row("SELECT COUNT(*) FROM agents", [], |r| r.get(0)).map_err(err(conn))?;
    Ok(n.max(0) as u64)
}

/// How many preferences `agent` holds.
pub fn count_of(conn: &Connection, agent: &str) -> Result<u64> {
    let n: i64 = conn
        .query_row("SELECT COUNT(*) FROM preferences WHERE agent_id = ?1", [agent_key(agent)], |r| r.get(0))
        .map_err(err(conn))?;
    Ok(n.max(0) as u64)
}

/// The agent's preference (other than `except`) whose text is `content`'s, letter case,
/// runs of spaces and a closing full stop aside, with the same rule: adding it again would
/// only repeat it. One wording may carry several rules (a team's "keep it tidy" as a line
/// limit and as a test requirement): those are different preferences.
pub fn same_text(
    conn: &Connection,
    agent: &str,
    content: &str,
    rule: Option<&str>,
    except: &str,
) -> Result<Option<Preference>> {
    let want = text_key(content);
    Ok(preferences_of(conn, &[agent])?
        .into_iter()
        .find(|p| p.id != except && p.rule.as_deref() == rule && text_key(&p.content) == want))
}

/// A preference's words as compared for repeats: letter case, runs of spaces, a closing full
/// stop, invisible characters (a zero-width space pasted in made a second, identical-looking
/// preference) and how an accent is encoded (`é` as one character or as `e` + U+0301) aside.
pub fn text_key(content: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let visible: String = content.nfc().filter(|c| !is_invisible(*c)).collect();
    visible.trim_end_matches(['.', '!']).split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

/// Characters that take no room on screen: zero-width space, joiners, word joiner, byte-order
/// mark, soft hyphen.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200D}' | '\u{2060}' | '\u{FEFF}' | '\u{00AD}')
}

/// Every preference, by id.
pub fn all_preferences(conn: &Connection) -> Result<Vec<Preference>> {
    prefs(conn, &format!("SELECT {PREF_COLUMNS} FROM preferences ORDER BY id"), &[])
}

const AGENT_COLUMNS: &str = "id, role, created_at, role_updated";

fn row_to_agent(r: &rusqlite::Row<'_>) -> rusqlite::Result<SyncAgent> {
    Ok(SyncAgent { id: r.get(0)?, role: r.get(1)?, created_at: r.get(2)?, role_updated: r.get(3)? })
}

/// One agent's role, creation time and when its role was set.
pub fn agent(conn: &Connection, id: &str) -> Result<Option<SyncAgent>> {
    conn.query_row(&format!("SELECT {AGENT_COLUMNS} FROM agents WHERE id = ?1"), [agent_key(id)], row_to_agent)
        .optional()
        .map_err(err(conn))
}

/// Every agent with its counts, by id.
pub fn agents(conn: &Connection) -> Result<Vec<AgentSummary>> {
    let rows = sync_agents(conn)?;
    let mut counts: BTreeMap<String, BTreeMap<Category, u64>> = BTreeMap::new();
    let mut st = conn
        .prepare_cached("SELECT agent_id, category, COUNT(*) FROM preferences GROUP BY agent_id, category")
        .map_err(err(conn))?;
    let tallies = st
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, i64>(2)?)))
        .map_err(err(conn))?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(err(conn))?;
    for (a, c, n) in tallies {
        if let Ok(c) = Category::parse(&c) {
            counts.entry(a).or_default().insert(c, n as u64);
        }
    }
    Ok(rows
        .into_iter()
        .map(|a| {
            let by_category = counts.remove(&a.id).unwrap_or_default();
            AgentSummary {
                preference_count: by_category.values().sum(),
                by_category,
                id: a.id,
                role: a.role,
                created_at: a.created_at,
            }
        })
        .collect())
}

/// Every agent as a sync row, by id.
pub fn sync_agents(conn: &Connection) -> Result<Vec<SyncAgent>> {
    let mut st = conn.prepare_cached(&format!("SELECT {AGENT_COLUMNS} FROM agents ORDER BY id")).map_err(err(conn))?;
    let rows = st.query_map([], row_to_agent).map_err(err(conn))?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map_err(err(conn))
}

/// Every removal kept for sync, by id.
pub fn tombstones(conn: &Connection) -> Result<Vec<SyncTombstone>> {
    let mut st =
        conn.prepare_cached("SELECT id, agent_id, deleted_at FROM tombstones ORDER BY id").map_err(err(conn))?;
    let rows = st
        .query_map([], |r| Ok(SyncTombstone { id: r.get(0)?, agent_id: r.get(1)?, deleted_at: r.get(2)? }))
        .map_err(err(conn))?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map_err(err(conn))
}

/// Every agent removal kept for sync, by agent id.
pub fn agent_removals(conn: &Connection) -> Result<Vec<SyncAgentRemoval>> {
    let mut st = conn
        .prepare_cached("SELECT agent_id, removed_at FROM agent_tombstones ORDER BY agent_id")
        .map_err(err(conn))?;
    let rows =
        st.query_map([], |r| Ok(SyncAgentRemoval { id: r.get(0)?, removed_at: r.get(1)? })).map_err(err(conn))?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map_err(err(conn))
}

/// When the agent `id` was last removed here (or by a sync that carried its removal), if ever.
pub fn agent_removed_at(conn: &Connection, id: &str) -> Result<Option<i64>> {
    conn.query_row("SELECT removed_at FROM agent_tombstones WHERE agent_id = ?1", [agent_key(id)], |r| r.get(0))
        .optional()
        .map_err(err(conn))
}

/// When an agent was last touched: created or given its role. A removal after it wins.
pub fn agent_stamp(a: &SyncAgent) -> i64 {
    a.created_at.max(a.role_updated)
}

fn tombstone(conn: &Connection, id: &str) -> Result<Option<i64>> {
    conn.query_row("SELECT deleted_at FROM tombstones WHERE id = ?1", [id], |r| r.get(0)).optional().map_err(err(conn))
}

/// Preferences stored without a vector (oldest first).
pub fn unembedded(conn: &Connection, limit: usize) -> Result<Vec<(String, String, String)>> {
    let mut st = conn
        .prepare_cached(
            "SELECT id, agent_id, content FROM preferences WHERE embedding IS NULL ORDER BY last_updated, id LIMIT ?1",
        )
        .map_err(err(conn))?;
    let rows = st.query_map([limit as i64], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).map_err(err(conn))?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map_err(err(conn))
}

/// True when `preference_vec` exists.
pub fn has_vectors(conn: &Connection) -> Result<bool> {
    conn.query_row("SELECT 1 FROM sqlite_master WHERE name = 'preference_vec'", [], |_| Ok(()))
        .optional()
        .map(|o| o.is_some())
        .map_err(err(conn))
}

/// The `k` preferences of `agent` nearest to `q` by cosine similarity (sqlite-vec, the agent's
/// partition only), closest first.
pub fn knn(conn: &Connection, agent: &str, q: &[f32], k: usize) -> Result<Vec<(String, f32)>> {
    if !has_vectors(conn)? {
        return Ok(Vec::new());
    }
    let mut st = conn
        .prepare_cached(
            "SELECT pref_id, distance FROM preference_vec WHERE embedding MATCH ?1 AND k = ?2 AND agent_id = ?3",
        )
        .map_err(err(conn))?;
    let rows = st
        .query_map(params![vec_blob(q), k as i64, agent_key(agent)], |r| {
            Ok((r.get::<_, String>(0)?, 1.0 - r.get::<_, f64>(1)? as f32))
        })
        .map_err(err(conn))?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map_err(err(conn))
}

/// A preference's stored vector.
pub fn vector(conn: &Connection, id: &str) -> Result<Option<Vec<f32>>> {
    let blob: Option<Option<Vec<u8>>> = conn
        .query_row("SELECT embedding FROM preferences WHERE id = ?1", [id], |r| r.get(0))
        .optional()
        .map_err(err(conn))?;
    Ok(blob.flatten().map(|b| blob_vec(&b)))
}

/// One write transaction (`BEGIN IMMEDIATE`); run it under the profile writer lock.
pub struct Write<'c> {
    tx: Transaction<'c>,
    path: PathBuf,
}

impl<'c> Write<'c> {
    /// Starts a write on `conn`, creating the schema when the file is new.
    pub fn begin(conn: &'c mut Connection) -> Result<Write<'c>> {
        let path = path_of(conn);
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(db_err(&path))?;
        tx.execute_batch(SCHEMA).map_err(db_err(&path))?;
        if lacks_role_stamp(&tx)? {
            // A database from before roles were stamped: its roles count as never set (0), so
            // a manifest's role set later replaces them and an older manifest's does not.
            tx.execute_batch("ALTER TABLE agents ADD COLUMN role_updated INT NOT NULL DEFAULT 0")
                .map_err(db_err(&path))?;
        }
        let w = Write { tx, path };
        if w.get_meta("schema_version")?.is_none() {
            w.set_meta("schema_version", &SCHEMA_VERSION.to_string())?;
        }
        if has_case_variants(&w.tx)? {
            let folded = w.fold_agent_case()?;
            let merged = w.merge_repeats(crate::engine::fsutil::now_ms() as i64)?;
            tracing::info!(folded, merged = merged.len(), "agent ids folded to lower case");
        }
        Ok(w)
    }

    /// Reads inside the transaction.
    pub fn conn(&self) -> &Connection {
        &self.tx
    }

    fn e(&self) -> impl Fn(rusqlite::Error) -> Error + '_ {
        db_err(&self.path)
    }

    /// Commits.
    pub fn commit(self) -> Result<()> {
        let path = self.path.clone();
        self.tx.commit().map_err(db_err(&path))
    }

    fn get_meta(&self, key: &str) -> Result<Option<String>> {
        self.tx
            .query_row("SELECT value FROM profile_meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(self.e())
    }

    /// Sets a `profile_meta` value.
    pub fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        self.tx
            .execute("INSERT OR REPLACE INTO profile_meta(key, value) VALUES (?1, ?2)", [key, value])
            .map(|_| ())
            .map_err(self.e())
    }

    /// Loads the factory defaults when the database has never been seeded and has no agents.
    /// Returns the number of preferences seeded.
    pub fn seed_if_empty(&self) -> Result<usize> {
        if self.get_meta("seeded")?.is_some() {
            return Ok(0);
        }
        let agents: i64 = self.tx.query_row("SELECT COUNT(*) FROM agents", [], |r| r.get(0)).map_err(self.e())?;
        let mut n = 0;
        if agents == 0 {
            for a in defaults()? {
                self.ensure_agent(&a.id, &a.role, SEED_EPOCH_MS, 0)?;
                for p in a.preferences {
                    let rule = p.rule.as_deref().map(Rule::parse).transpose().map_err(|e| Error::CorruptState {
                        path: PathBuf::from("defaults.json"),
                        message: format!("seed rule for {}: {e}", a.id),
                    })?;
                    self.insert(&Preference {
                        id: seed_id(&a.id, &p.content),
                        agent_id: a.id.clone(),
                        content: p.content,
                        category: p.category,
                        rule: rule.map(|r| r.canonical()),
                        last_updated: SEED_EPOCH_MS,
                        source: PreferenceSource::Seed,
                        embedded: false,
                    })?;
                    n += 1;
                }
            }
        }
        self.set_meta("seeded", &crate::engine::fsutil::now_ms().to_string())?;
        Ok(n)
    }

    /// Creates the agent when missing (an empty role is filled in when one is given), its role
    /// stamped `role_updated` (0: a factory role, or none); returns true when it was created.
    pub fn ensure_agent(&self, id: &str, role: &str, created_at: i64, role_updated: i64) -> Result<bool> {
        let id = agent_key(id);
        let n = self
            .tx
            .execute(
                "INSERT OR IGNORE INTO agents(id, role, created_at, role_updated) VALUES (?1, ?2, ?3, ?4)",
                params![id, role, created_at, role_updated],
            )
            .map_err(self.e())?;
        if n == 0 && !role.trim().is_empty() {
            self.tx
                .execute(
                    "UPDATE agents SET role = ?2, role_updated = ?3 WHERE id = ?1 AND role = ''",
                    params![id, role, role_updated],
                )
                .map_err(self.e())?;
        }
        Ok(n > 0)
    }

    /// Sets an agent's role, stamped `at` (the newer stamp wins a sync).
    pub fn set_role(&self, id: &str, role: &str, at: i64) -> Result<()> {
        self.tx
            .execute("UPDATE agents SET role = ?2, role_updated = ?3 WHERE id = ?1", params![agent_key(id), role, at])
            .map(|_| ())
            .map_err(self.e())
    }

    /// Inserts a new preference (no vector; the id must be new). A tombstone of the same id
    /// is cleared: the row is alive again.
    pub fn insert(&self, p: &Preference) -> Result<()> {
        self.tx
            .execute(
                "INSERT INTO preferences(id, agent_id, content, category, rule, embedding, last_updated, source)
                 VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6, ?7)",
                params![
                    p.id,
                    agent_key(&p.agent_id),
                    p.content,
                    p.category.name(),
                    p.rule,
                    p.last_updated,
                    p.source.name()
                ],
            )
            .map_err(self.e())?;
        self.tx.execute("DELETE FROM tombstones WHERE id = ?1", [&p.id]).map_err(self.e())?;
        Ok(())
    }

    /// Replaces a preference's fields (its vector is dropped when the text or the agent
    /// changed: vectors live in their agent's partition).
    pub fn update(&self, p: &Preference, text_changed: bool) -> Result<()> {
        let agent = agent_key(&p.agent_id);
        let moved = preference(&self.tx, &p.id)?.is_some_and(|old| old.agent_id != agent);
        self.tx
            .execute(
                "UPDATE preferences SET agent_id = ?2, content = ?3, category = ?4, rule = ?5, last_updated = ?6, source = ?7
                 WHERE id = ?1",
                params![p.id, agent, p.content, p.category.name(), p.rule, p.last_updated, p.source.name()],
            )
            .map_err(self.e())?;
        if text_changed || moved {
            self.clear_vector(&p.id)?;
        }
        Ok(())
    }

    fn clear_vector(&self, id: &str) -> Result<()> {
        self.tx.execute("UPDATE preferences SET embedding = NULL WHERE id = ?1", [id]).map_err(self.e())?;
        if has_vectors(&self.tx)? {
            self.tx.execute("DELETE FROM preference_vec WHERE pref_id = ?1", [id]).map_err(self.e())?;
        }
        Ok(())
    }

    /// Folds every agent stored under an id with upper-case letters (`TEAM`, `Mcoda_Frontend`,
    /// written before ids were folded) into its lower-case agent, created when missing: its
    /// preferences move there (their vectors dropped, as vectors live in their agent's
    /// partition; a later recall embeds them again), the role set later is kept and the earlier
    /// creation time. The removal of a case variant is dropped: it removed what is now another
    /// spelling of a kept agent. Returns how many agents were folded; repeats the move makes are
    /// left to [`Self::merge_repeats`].
    pub fn fold_agent_case(&self) -> Result<usize> {
        let mixed: Vec<SyncAgent> = {
            let mut st = self
                .tx
                .prepare(&format!("SELECT {AGENT_COLUMNS} FROM agents WHERE id <> lower(id) ORDER BY id"))
                .map_err(self.e())?;
            let rows = st.query_map([], row_to_agent).map_err(self.e())?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map_err(self.e())?
        };
        for a in &mixed {
            let key = agent_key(&a.id);
            match agent(&self.tx, &key)? {
                None => {
                    self.ensure_agent(&key, &a.role, a.created_at, a.role_updated)?;
                }
                Some(kept) => {
                    let later = (a.role_updated, a.role.as_str()) > (kept.role_updated, kept.role.as_str());
                    if !a.role.is_empty() && (kept.role.is_empty() || later) {
                        self.set_role(&key, &a.role, a.role_updated.max(kept.role_updated))?;
                    }
                    self.tx
                        .execute(
                            "UPDATE agents SET created_at = MIN(created_at, ?2) WHERE id = ?1",
                            params![key, a.created_at],
                        )
                        .map_err(self.e())?;
                }
            }
            let moved: Vec<String> = {
                let mut st = self.tx.prepare("SELECT id FROM preferences WHERE agent_id = ?1").map_err(self.e())?;
                let rows = st.query_map([&a.id], |r| r.get(0)).map_err(self.e())?;
                rows.collect::<rusqlite::Result<Vec<_>>>().map_err(self.e())?
            };
            for id in &moved {
                self.clear_vector(id)?;
            }
            self.tx
                .execute("UPDATE preferences SET agent_id = ?2 WHERE agent_id = ?1", params![a.id, key])
                .map_err(self.e())?;
            self.tx.execute("DELETE FROM agents WHERE id = ?1", [&a.id]).map_err(self.e())?;
        }
        self.tx
            .execute_batch(
                "UPDATE tombstones SET agent_id = lower(agent_id) WHERE agent_id <> lower(agent_id);
                 DELETE FROM agent_tombstones WHERE agent_id <> lower(agent_id);",
            )
            .map_err(self.e())?;
        Ok(mixed.len())
    }

    /// Keeps one preference per agent, text (as [`text_key`] compares them) and rule, so an
    /// agent holds a text once whatever way it arrived (`add` refuses a repeat, but a sync of
    /// the same convention written on two machines, a hand-made manifest, or agents folded
    /// together brought copies). The oldest is kept (earliest `last_updated`, then the lowest
    /// id), so every machine keeps the same one; the others are removed with a tombstone, and
    /// the removal travels to the machines that hold them. Returns each removed row with the
    /// id of the one kept.
    pub fn merge_repeats(&self, now: i64) -> Result<Vec<(Preference, String)>> {
        let mut all = all_preferences(&self.tx)?;
        all.sort_by(|a, b| (a.last_updated, &a.id).cmp(&(b.last_updated, &b.id)));
        let mut kept: std::collections::HashMap<(String, String, Option<String>), String> = Default::default();
        let mut repeats = Vec::new();
        for p in all {
            let key = (p.agent_id.clone(), text_key(&p.content), p.rule.clone());
            match kept.get(&key) {
                Some(first) => repeats.push((p, first.clone())),
                None => {
                    kept.insert(key, p.id.clone());
                }
            }
        }
        for (p, first) in &repeats {
            self.delete(&p.id, now)?;
            tracing::info!(agent = %p.agent_id, removed = %p.id, kept = %first, "a repeated preference merged");
        }
        Ok(repeats)
    }

    /// Removes a preference, leaving a tombstone so sync carries the removal. Returns the
    /// removed row. The tombstone is stamped after the row (as an edit is): a row from a
    /// machine whose clock runs ahead would otherwise outlive its removal, which the other
    /// side ignores as older and the next import here undoes.
    pub fn delete(&self, id: &str, deleted_at: i64) -> Result<Option<Preference>> {
        let Some(p) = preference(&self.tx, id)? else { return Ok(None) };
        let deleted_at = deleted_at.max(p.last_updated.saturating_add(1));
        self.clear_vector(id)?;
        self.tx.execute("DELETE FROM preferences WHERE id = ?1", [id]).map_err(self.e())?;
        self.tx
            .execute(
                "INSERT OR REPLACE INTO tombstones(id, agent_id, deleted_at) VALUES (?1, ?2, ?3)",
                params![id, p.agent_id, deleted_at],
            )
            .map_err(self.e())?;
        Ok(Some(p))
    }

    /// Removes an agent and all its preferences (each leaving a tombstone). Returns how many.
    pub fn delete_agent(&self, id: &str, deleted_at: i64) -> Result<u64> {
        let id = agent_key(id);
        let ids: Vec<String> = preferences_of(&self.tx, &[&id])?.into_iter().map(|p| p.id).collect();
        for p in &ids {
            self.delete(p, deleted_at)?;
        }
        self.tx.execute("DELETE FROM agents WHERE id = ?1", [id]).map_err(self.e())?;
        Ok(ids.len() as u64)
    }

    /// Keeps the removal of agent `id` at `at` for sync (a later one than any kept already).
    pub fn record_agent_removal(&self, id: &str, at: i64) -> Result<()> {
        self.tx
            .execute(
                "INSERT INTO agent_tombstones(agent_id, removed_at) VALUES (?1, ?2)
                 ON CONFLICT(agent_id) DO UPDATE SET removed_at = MAX(removed_at, excluded.removed_at)",
                params![agent_key(id), at],
            )
            .map(|_| ())
            .map_err(self.e())
    }

    /// Keeps the newest `keep` removals of each kind (preference tombstones, agent removals)
    /// and drops the older ones, raising the kind's forgotten horizon ([`FORGOTTEN_REMOVALS`],
    /// [`FORGOTTEN_AGENT_REMOVALS`]) to the newest time dropped, so the sync still refuses a
    /// copy stamped at or before it (it could be one whose removal was dropped). Removals used
    /// to be dropped after 180 days with no horizon, and a stale copy then came back. Returns
    /// how many went.
    pub fn bound_removals(&self, keep: usize) -> Result<usize> {
        let prefs = self.bound_table("tombstones", "id", "deleted_at", FORGOTTEN_REMOVALS, keep)?;
        let agents = self.bound_table("agent_tombstones", "agent_id", "removed_at", FORGOTTEN_AGENT_REMOVALS, keep)?;
        if prefs + agents > 0 {
            tracing::info!(prefs, agents, keep, "oldest removals past the bound dropped; older copies stay refused");
        }
        Ok(prefs + agents)
    }

    /// [`Self::bound_removals`] for one table (names are this file's constants, never input).
    fn bound_table(&self, table: &str, key: &str, at: &str, horizon_key: &str, keep: usize) -> Result<usize> {
        let cut: Option<i64> = self
            .tx
            .query_row(
                &format!("SELECT {at} FROM {table} ORDER BY {at} DESC, {key} DESC LIMIT 1 OFFSET ?1"),
                [keep as i64],
                |r| r.get(0),
            )
            .optional()
            .map_err(self.e())?;
        let Some(cut) = cut else { return Ok(0) };
        // Every removal at or before the cut goes (ties too): the horizon covers them all.
        let n = self.tx.execute(&format!("DELETE FROM {table} WHERE {at} <= ?1"), [cut]).map_err(self.e())?;
        let horizon = self.forgotten_through(horizon_key)?.map_or(cut, |h| h.max(cut));
        self.set_meta(horizon_key, &horizon.to_string())?;
        Ok(n)
    }

    /// The newest removal time dropped by [`Self::bound_removals`] under `key`, if any was.
    pub fn forgotten_through(&self, key: &str) -> Result<Option<i64>> {
        Ok(self.get_meta(key)?.and_then(|v| v.parse().ok()))
    }

    /// A removal from a sync manifest, applied when it is newer than the local row (and kept
    /// either way, so it travels on). Returns true when it removed a row.
    pub fn apply_tombstone(&self, t: &SyncTombstone) -> Result<bool> {
        let newer_than_stored = tombstone(&self.tx, &t.id)?.is_none_or(|at| t.deleted_at > at);
        let removed = match preference(&self.tx, &t.id)? {
            Some(local) if t.deleted_at > local.last_updated => self.delete(&t.id, t.deleted_at)?.is_some(),
            Some(_) => false,
            None => {
                if newer_than_stored {
                    self.tx
                        .execute(
                            "INSERT OR REPLACE INTO tombstones(id, agent_id, deleted_at) VALUES (?1, ?2, ?3)",
                            params![t.id, agent_key(&t.agent_id), t.deleted_at],
                        )
                        .map_err(self.e())?;
                }
                false
            }
        };
        Ok(removed)
    }

    /// The time a preference was removed here, if it was.
    pub fn tombstone_of(&self, id: &str) -> Result<Option<i64>> {
        tombstone(&self.tx, id)
    }

    /// Makes `preference_vec` hold `dim`-dimensional vectors of `model`: creates it, or (on a
    /// re-embed) drops every vector so all are embedded again.
    pub fn reset_vectors(&self, model: &str, dim: usize) -> Result<()> {
        self.tx
            .execute_batch(&format!(
                "DROP TABLE IF EXISTS preference_vec;
                 UPDATE preferences SET embedding = NULL;
                 CREATE VIRTUAL TABLE preference_vec USING vec0(
                     pref_id TEXT PRIMARY KEY, agent_id TEXT PARTITION KEY,
                     embedding float[{dim}] distance_metric=cosine);"
            ))
            .map_err(self.e())?;
        self.set_meta("embedding_model", model)?;
        self.set_meta("embedding_dim", &dim.to_string())
    }

    /// Stores a preference's vector.
    pub fn set_vector(&self, id: &str, agent: &str, v: &[f32]) -> Result<()> {
        let n = self
            .tx
            .execute("UPDATE preferences SET embedding = ?2 WHERE id = ?1", params![id, vec_blob(v)])
            .map_err(self.e())?;
        if n == 0 {
            // Removed meanwhile.
            return Ok(());
        }
        self.tx.execute("DELETE FROM preference_vec WHERE pref_id = ?1", [id]).map_err(self.e())?;
        self.tx
            .execute(
                "INSERT INTO preference_vec(pref_id, agent_id, embedding) VALUES (?1, ?2, ?3)",
                params![id, agent_key(agent), vec_blob(v)],
            )
            .map(|_| ())
            .map_err(self.e())
    }
}

#[derive(Deserialize)]
struct SeedFile {
    agents: Vec<SeedAgent>,
}

#[derive(Deserialize)]
struct SeedAgent {
    id: String,
    role: String,
    preferences: Vec<SeedPreference>,
}

#[derive(Deserialize)]
struct SeedPreference {
    category: Category,
    content: String,
    #[serde(default)]
    rule: Option<String>,
}

fn defaults() -> Result<Vec<SeedAgent>> {
    serde_json::from_str::<SeedFile>(DEFAULTS)
        .map(|f| f.agents)
        .map_err(|e| Error::CorruptState { path: PathBuf::from("defaults.json"), message: e.to_string() })
}

/// The factory personas' ids and roles (for help texts and the TUI).
pub fn default_agents() -> Vec<(String, String)> {
    defaults().map(|a| a.into_iter().map(|a| (a.id, a.role)).collect()).unwrap_or_default()
}

/// A seed preference's id: UUID-shaped, derived from its agent and text, so it is the same on
/// every installation.
pub fn seed_id(agent: &str, content: &str) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(format!("docdex-seed\0{agent}\0{content}").as_bytes());
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    b[6] = (b[6] & 0x0f) | 0x50;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pref(id: &str, agent: &str, content: &str) -> Preference {
        Preference {
            id: id.into(),
            agent_id: agent.into(),
            content: content.into(),
            category: Category::Style,
            rule: None,
            last_updated: 1,
            source: PreferenceSource::Manual,
            embedded: false,
        }
    }

    #[test]
    fn seeds_once_with_stable_ids_and_valid_rules() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = open(&dir.path().join("main.db")).unwrap();
        let w = Write::begin(&mut conn).unwrap();
        let n = w.seed_if_empty().unwrap();
        w.commit().unwrap();
        assert!(n >= 20, "{n}");
        let agents = agents(&conn).unwrap();
        let ids: Vec<&str> = agents.iter().map(|a| a.id.as_str()).collect();
        assert!(ids.contains(&"team") && ids.contains(&"mcoda_frontend") && ids.contains(&"mcoda_security"), "{ids:?}");
        let front = preferences_of(&conn, &["mcoda_frontend"]).unwrap();
        assert!(front.iter().any(|p| p.rule.as_deref() == Some("forbid-node typescript predefined_type any")));
        assert_eq!(seed_id("a", "b"), seed_id("a", "b"));
        assert_ne!(seed_id("a", "b"), seed_id("a", "c"));
        assert!(uuid::Uuid::parse_str(&seed_id("a", "b")).is_ok());
        // Removing every agent does not bring the seeds back.
        let w = Write::begin(&mut conn).unwrap();
        for a in &ids {
            w.delete_agent(a, 5).unwrap();
        }
        assert_eq!(w.seed_if_empty().unwrap(), 0);
        w.commit().unwrap();
        assert!(agents_empty(&conn));
    }

    fn agents_empty(conn: &Connection) -> bool {
        agents(conn).unwrap().is_empty()
    }

    #[test]
    fn the_schema_refuses_corrupt_rows() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = open(&dir.path().join("main.db")).unwrap();
        let w = Write::begin(&mut conn).unwrap();
        w.ensure_agent("a", "", 1, 0).unwrap();
        assert!(w.insert(&pref("1", "a", "   ")).is_err(), "empty text");
        assert!(w.insert(&pref("2", "nobody", "x")).is_err(), "unknown agent");
        let mut ruled = pref("3", "a", "x");
        ruled.rule = Some("no-import-cycles".into());
        assert!(w.insert(&ruled).is_err(), "a rule on a style preference");
        w.tx.execute(
            "INSERT INTO preferences(id, agent_id, content, category, last_updated, source) VALUES ('4', 'a', 'x', 'mood', 1, 'manual')",
            [],
        )
        .unwrap_err();
    }

    const U1: &str = "0b7f6a4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b";
    const U2: &str = "1c8a7b5f-2d3e-4f60-9bac-1d2e3f4a5b6c";
    const U3: &str = "2d9b8c60-3e4f-4071-acbd-2e3f4a5b6c7d";

    #[test]
    fn vectors_are_partitioned_by_agent() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = open(&dir.path().join("main.db")).unwrap();
        let w = Write::begin(&mut conn).unwrap();
        w.ensure_agent("a", "", 1, 0).unwrap();
        w.ensure_agent("b", "", 1, 0).unwrap();
        w.reset_vectors("m", 3).unwrap();
        for (id, agent, v) in [(U1, "a", [1.0, 0.0, 0.0]), (U2, "a", [0.0, 1.0, 0.0]), (U3, "b", [1.0, 0.0, 0.0])] {
            w.insert(&pref(id, agent, "x")).unwrap();
            w.set_vector(id, agent, &v).unwrap();
        }
        w.commit().unwrap();
        let hits = knn(&conn, "a", &[0.9, 0.1, 0.0], 5).unwrap();
        assert_eq!(hits.iter().map(|h| h.0.as_str()).collect::<Vec<_>>(), [U1, U2]);
        assert!(hits[0].1 > 0.9);
        assert_eq!(knn(&conn, "b", &[1.0, 0.0, 0.0], 5).unwrap().len(), 1);
        // Deleting removes the vector and leaves a tombstone.
        let w = Write::begin(&mut conn).unwrap();
        assert!(w.delete(U1, 9).unwrap().is_some());
        w.commit().unwrap();
        assert_eq!(knn(&conn, "a", &[1.0, 0.0, 0.0], 5).unwrap().len(), 1);
        assert_eq!(tombstones(&conn).unwrap()[0].id, U1);
    }

    /// A database written before agent ids were folded holds `TEAM` beside `team`: the first
    /// write folds it in (role set later kept, vectors dropped), merges the repeat the move
    /// makes (the older copy kept, the other removed with a tombstone) and drops the case
    /// variant's removal; case-differing ids are one agent for every read from then on.
    #[test]
    fn case_variant_agents_fold_into_their_lower_case_agent_and_their_repeats_merge() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = open(&dir.path().join("main.db")).unwrap();
        let w = Write::begin(&mut conn).unwrap();
        w.ensure_agent("team", "Everyone", 1, 5).unwrap();
        w.insert(&Preference { last_updated: 10, ..pref(U1, "team", "Squash commits before merging") }).unwrap();
        w.commit().unwrap();
        // What an older docdex stored (its writes did not fold).
        conn.execute_batch(&format!(
            "INSERT INTO agents(id, role, created_at, role_updated) VALUES ('TEAM', 'The whole team', 0, 7);
             INSERT INTO preferences(id, agent_id, content, category, last_updated, source) VALUES
                 ('{U2}', 'TEAM', 'squash commits before merging.', 'style', 20, 'manual'),
                 ('{U3}', 'TEAM', 'Use UTF-8 everywhere', 'style', 30, 'manual');
             INSERT INTO agent_tombstones(agent_id, removed_at) VALUES ('Team', 40);"
        ))
        .unwrap();
        assert!(needs_migration(&conn).unwrap(), "readers wait for the fold");
        assert!(preferences_of(&conn, &["TEAM"]).unwrap().len() == 1, "read before the fold: team's own row");
        Write::begin(&mut conn).unwrap().commit().unwrap();
        assert!(!needs_migration(&conn).unwrap());
        let ids: Vec<String> = agents(&conn).unwrap().into_iter().map(|a| a.id).collect();
        assert_eq!(ids, ["team"]);
        let team = agent(&conn, "Team").unwrap().unwrap();
        assert_eq!((team.role.as_str(), team.created_at, team.role_updated), ("The whole team", 0, 7));
        let kept: Vec<(String, String)> =
            preferences_of(&conn, &["TEAM"]).unwrap().into_iter().map(|p| (p.id, p.content)).collect();
        assert_eq!(
            kept,
            [
                (U3.to_string(), "Use UTF-8 everywhere".to_string()),
                (U1.to_string(), "Squash commits before merging".to_string())
            ]
        );
        let tombs = tombstones(&conn).unwrap();
        assert_eq!((tombs.len(), tombs[0].id.as_str(), tombs[0].agent_id.as_str()), (1, U2, "team"));
        assert!(agent_removals(&conn).unwrap().is_empty(), "the variant's removal would remove the team");
    }

    #[test]
    fn repeats_are_found_through_invisible_characters_and_accent_encodings() {
        let key = text_key("Prefer early returns.");
        assert_eq!(text_key("Prefer\u{200B} early returns"), key);
        assert_eq!(text_key("\u{FEFF}prefer  early\u{00AD} RETURNS!"), key);
        assert_eq!(text_key("Pre\u{301}fer early returns"), text_key("Pr\u{e9}fer early returns"));
        assert_ne!(text_key("Pr\u{e9}fer early returns"), key, "an accent is a different word");
    }
}
