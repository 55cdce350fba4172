//! `symbols.db`: the per-repo SQLite store of what the per-file code pass extracted: one row
//! per parsed file (content hash, language, imports as JSON, node-kind counts and samples) and
//! one row per symbol.
//!
//! Only the index writer writes it, inside the writer lock, in one transaction per Tantivy
//! commit (but for the `graph_resolution` and `graph_imports:` meta keys, which `docdex graph
//! rebuild` sets in a transaction of its own: [`record_graph_rebuilt`]). The transaction commits after Tantivy and before the manifest, and records the
//! generation, so after a kill the store is never ahead of the manifest's view of a file; if it
//! lags the index (a kill between the two commits, a deleted or corrupt file, a parser
//! upgrade), the next run compares it with the manifest and re-extracts what differs
//! (see `IndexSession`). Readers (queries, search ranking) open it separately; WAL mode lets
//! them read the last committed state while a run writes.

use super::types::FileImports;
use super::types::SymbolKind;
use super::{CodeOutcome, Lang, Symbol};
use crate::engine::repos::RepoRef;
use crate::error::{Error, Result};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Version of the tables below; a store with another version is rebuilt by the next index run
/// (every code file parsed again; until then symbol and AST queries say to run `docdex index`).
/// 2: AST samples record their start column (`kind:line.column-end`), so the samples of a
/// minified file's one line each show their own node.
pub const STORE_SCHEMA: u32 = 2;

const SCHEMA_SQL: &str = "
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS files(
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    lang TEXT NOT NULL,
    hash INTEGER NOT NULL,
    parsed INTEGER NOT NULL,
    note TEXT,
    parse_errors INTEGER NOT NULL,
    symbol_count INTEGER NOT NULL,
    imports TEXT NOT NULL,
    ast_kinds TEXT NOT NULL,
    ast_samples TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS symbols(
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL,
    ord INTEGER NOT NULL,
    parent INTEGER,
    depth INTEGER NOT NULL,
    name TEXT NOT NULL,
    norm TEXT NOT NULL,
    parts TEXT NOT NULL,
    kind TEXT NOT NULL,
    node_kind TEXT NOT NULL,
    line_start INTEGER NOT NULL,
    line_end INTEGER NOT NULL,
    signature TEXT NOT NULL,
    container TEXT
);
CREATE INDEX IF NOT EXISTS symbols_norm ON symbols(norm);
CREATE INDEX IF NOT EXISTS symbols_file ON symbols(file_id);
";

/// Where a repo's store lives.
pub fn db_path(repo: &RepoRef) -> PathBuf {
    repo.data_dir().join("symbols.db")
}

pub use super::symbols::norm;

/// How [`parts`] spells a name's parts: 2 adds a part's umlaut spelling (`über_x` as
/// ` uber ueber x `). A store that records less (none: written before it was recorded) has its
/// parts respelled from the names by the next index run ([`SymbolStore::open_write`]), no file
/// parsed again; until then a query reads it as it is and is told ([`SymbolReader::parts_note`]).
pub const PARTS_VERSION: u32 = 2;

/// A name's parts for word matching, space-separated with spaces at both ends
/// (` get user name `), so `instr(parts, ' user')` finds a part starting with `user`. Parts are
/// folded as search folds words (`café` as `cafe`), and a part with a German umlaut is also
/// given as German writes it without one (`über` as `uber ueber`, `größe` as `grosse
/// groesse`), as the analyzer indexes text: so `ueber` finds `über_x`, while a query's own
/// words are taken as typed (`queue` meets only parts starting `queue`).
pub fn parts(name: &str) -> String {
    let mut out = String::from(" ");
    for word in name.split(|c: char| !c.is_alphanumeric() && c != '_') {
        for (p, written) in crate::engine::analysis::identifier_part_spellings(word) {
            out.push_str(&p);
            out.push(' ');
            if let Some(u) = umlaut_spelling(&written).filter(|u| *u != p) {
                out.push_str(&u);
                out.push(' ');
            }
        }
    }
    out
}

/// A part (lowercased as written) with `ä`, `ö`, `ü` written `ae`, `oe`, `ue` (composed or as a
/// vowel and a combining diaeresis), then folded (`größe` -> `groesse`); none without an umlaut.
/// Mirrors the analyzer's umlaut terms for text (`analysis::umlaut_variant`); the exact and
/// prefix tiers meet a name by it too (`query::accented_names`).
pub(crate) fn umlaut_spelling(written: &str) -> Option<String> {
    if written.is_ascii() {
        return None;
    }
    let (mut spelled, mut any) = (String::with_capacity(written.len() + 4), false);
    for c in written.chars() {
        let e = match c {
            'ä' | 'Ä' => "ae",
            'ö' | 'Ö' => "oe",
            'ü' | 'Ü' => "ue",
            '\u{308}' if spelled.ends_with(['a', 'o', 'u', 'A', 'O', 'U']) => "e",
            _ => {
                spelled.push(c);
                continue;
            }
        };
        spelled.push_str(e);
        any = true;
    }
    any.then(|| crate::engine::analysis::fold(&spelled))
}

/// What the store's `meta` table says.
#[derive(Debug, Clone, Default)]
pub struct StoreMeta {
    /// [`STORE_SCHEMA`] of the data (0 when unknown).
    pub schema: u32,
    /// [`PARTS_VERSION`] of the stored parts (0: written before it was recorded).
    pub parts: u32,
    /// Index generation the store was last committed for.
    pub generation: u64,
    /// Grammar version per language, as recorded when its files were extracted.
    pub grammars: BTreeMap<String, String>,
    /// [`super::imports::rules_version`] per language, as recorded with the grammars (absent
    /// in stores written before the import rules were versioned).
    pub import_rules: BTreeMap<String, u32>,
    /// [`super::rules::symbol_rules_version`] per language, as recorded with the grammars
    /// (absent in stores written before symbol rules were versioned: read as 1).
    pub symbol_rules: BTreeMap<String, u32>,
    /// Imports (or the files import resolution reads) changed in a committed run whose impact
    /// graph was not written yet: the next writer rebuilds it.
    pub graph_pending: bool,
    /// The generation the impact graph was last built from (0 when unknown).
    pub graph_generation: u64,
    /// [`super::graph::RESOLUTION_VERSION`] of the graph last built (0: written before it
    /// was recorded).
    pub graph_resolution: u32,
    /// [`super::imports::rules_version`] per language of a graph `docdex graph rebuild` built
    /// from the files on disk (`graph_imports:<lang>`), whatever the stored imports' rules;
    /// empty when the graph was built from the store (an index run clears it).
    pub graph_import_rules: BTreeMap<String, u32>,
}

impl StoreMeta {
    /// Languages whose stored files the next index run re-extracts: their grammar changed
    /// ([`Self::grammar_drifted`]) or their import rules did ([`Self::imports_outdated`]).
    pub fn drifted(&self) -> Vec<Lang> {
        let imports = self.imports_outdated();
        let symbols = self.symbols_outdated();
        Lang::ALL
            .into_iter()
            .filter(|l| self.grammar_drifted_for(*l) || imports.contains(l) || symbols.contains(l))
            .collect()
    }

    /// Languages whose stored symbols were extracted by other symbol rules than this build's
    /// (an older docdex): the next index run re-extracts their files; queries answer from the
    /// stored symbols meanwhile. Only languages with a recorded grammar count.
    pub fn symbols_outdated(&self) -> Vec<Lang> {
        Lang::ALL
            .into_iter()
            .filter(|l| {
                self.grammars.contains_key(l.name())
                    && self.symbol_rules.get(l.name()).copied().unwrap_or(1) != super::rules::symbol_rules_version(*l)
            })
            .collect()
    }

    /// Languages whose recorded grammar differs from the one compiled into this build: their
    /// symbols cannot be trusted, so symbol and AST queries refuse until re-indexed.
    pub fn grammar_drifted(&self) -> Vec<Lang> {
        Lang::ALL.into_iter().filter(|l| self.grammar_drifted_for(*l)).collect()
    }

    fn grammar_drifted_for(&self, l: Lang) -> bool {
        self.grammars.get(l.name()).is_some_and(|v| v != l.grammar_version())
    }

    /// Languages whose stored imports were extracted by other import rules than this build's
    /// (an older docdex): the impact graph built from them may miss marks such as type-only.
    /// Only languages with a recorded grammar count (a store that recorded none is new).
    pub fn imports_outdated(&self) -> Vec<Lang> {
        Lang::ALL
            .into_iter()
            .filter(|l| {
                self.grammars.contains_key(l.name())
                    && self.import_rules.get(l.name()) != Some(&super::imports::rules_version(*l))
            })
            .collect()
    }

    /// [`Self::imports_outdated`] less the languages whose impact graph `docdex graph rebuild`
    /// extracted from disk with this build's rules: the graph is current, only the store lags.
    pub fn graph_imports_outdated(&self) -> Vec<Lang> {
        let rebuilt = |l: &Lang| self.graph_import_rules.get(l.name()) == Some(&super::imports::rules_version(*l));
        self.imports_outdated().into_iter().filter(|l| !rebuilt(l)).collect()
    }
}

/// Records in the store's meta that `docdex graph rebuild` wrote the impact graph: resolved
/// under this build's [`super::graph::RESOLUTION_VERSION`], from imports extracted by this
/// build's [`super::imports::rules_version`]. Without it `docdex status` (and the next index
/// run) still took the rebuilt graph for an older docdex's. Only an existing store of this
/// schema is written (never created or reset: that is the index writer's); Ok(false) when
/// there is none. The generation and the pending mark are left to the index writer.
pub fn record_graph_rebuilt(repo: &RepoRef) -> Result<bool> {
    let path = db_path(repo);
    if !path.is_file() {
        return Ok(false);
    }
    let err = sql_err(&path);
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    let mut conn = Connection::open_with_flags(&path, flags).map_err(&err)?;
    conn.busy_timeout(Duration::from_secs(10)).map_err(&err)?;
    if read_meta(&conn).map_err(&err)?.schema != STORE_SCHEMA {
        return Ok(false);
    }
    let tx = conn.transaction().map_err(&err)?;
    let resolution = super::graph::RESOLUTION_VERSION.to_string();
    tx.execute("INSERT OR REPLACE INTO meta VALUES('graph_resolution', ?1)", [resolution]).map_err(&err)?;
    for l in Lang::ALL {
        let key = format!("graph_imports:{}", l.name());
        let rules = super::imports::rules_version(l).to_string();
        tx.execute("INSERT OR REPLACE INTO meta VALUES(?1, ?2)", [key, rules]).map_err(&err)?;
    }
    tx.commit().map_err(&err)?;
    Ok(true)
}

/// The store's meta alone, for `docdex status`, which is polled: one small query, waiting at
/// most 100 ms for a lock (readers of a WAL store wait only on recovery). None when there is no
/// store or it cannot be read now.
pub fn peek_meta(repo: &RepoRef) -> Option<StoreMeta> {
    let path = db_path(repo);
    if !path.is_file() {
        return None;
    }
    // Read-write without create, as `SymbolReader::open`: a WAL reader needs the shared memory.
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(&path, flags).ok()?;
    conn.busy_timeout(Duration::from_millis(100)).ok()?;
    read_meta(&conn).ok()
}

/// Why the symbol store cannot be read, when the file itself is damaged (not a database,
/// corrupt, or emptied: no `meta` table), as opposed to busy or absent. Status said ready with
/// no word of it while symbol lookups said "an index run is extracting them" and search lost its
/// definition boosts; the next index run rebuilds such a store.
pub fn damage(repo: &RepoRef) -> Option<String> {
    let path = db_path(repo);
    if !path.is_file() {
        return None;
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    let read = Connection::open_with_flags(&path, flags).and_then(|conn| {
        conn.busy_timeout(Duration::from_millis(100))?;
        read_meta(&conn)
    });
    let e = read.err()?;
    let damaged =
        matches!(e.sqlite_error_code(), Some(rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt))
            || e.to_string().contains("no such table: meta");
    damaged.then(|| format!("{} ({e})", path.display()))
}

fn read_meta(conn: &Connection) -> rusqlite::Result<StoreMeta> {
    let mut meta = StoreMeta::default();
    let mut stmt = conn.prepare("SELECT key, value FROM meta")?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
    for row in rows {
        let (k, v) = row?;
        match k.as_str() {
            "schema" => meta.schema = v.parse().unwrap_or(0),
            "generation" => meta.generation = v.parse().unwrap_or(0),
            "parts" => meta.parts = v.parse().unwrap_or(0),
            "graph_pending" => meta.graph_pending = v == "1",
            "graph_generation" => meta.graph_generation = v.parse().unwrap_or(0),
            "graph_resolution" => meta.graph_resolution = v.parse().unwrap_or(0),
            _ => {
                if let Some(lang) = k.strip_prefix("grammar:") {
                    meta.grammars.insert(lang.to_string(), v);
                } else if let Some(lang) = k.strip_prefix("imports:") {
                    // An unreadable number is no version this build has: re-extracted.
                    meta.import_rules.insert(lang.to_string(), v.parse().unwrap_or(0));
                } else if let Some(lang) = k.strip_prefix("symbols:") {
                    meta.symbol_rules.insert(lang.to_string(), v.parse().unwrap_or(0));
                } else if let Some(lang) = k.strip_prefix("graph_imports:") {
                    meta.graph_import_rules.insert(lang.to_string(), v.parse().unwrap_or(0));
                }
            }
        }
    }
    Ok(meta)
}

fn sql_err(path: &Path) -> impl Fn(rusqlite::Error) -> Error + '_ {
    move |e| Error::Index { path: path.to_path_buf(), message: format!("symbol store: {e}") }
}

fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(Duration::from_secs(10))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    Ok(())
}

/// Whether an error opening a store means its file is damaged (not a database, corrupt,
/// another schema's leftovers), as opposed to the disk or the OS failing.
fn is_damage(e: &rusqlite::Error) -> bool {
    use rusqlite::ffi::ErrorCode;
    !matches!(
        e.sqlite_error_code(),
        Some(
            ErrorCode::DiskFull
                | ErrorCode::SystemIoFailure
                | ErrorCode::CannotOpen
                | ErrorCode::PermissionDenied
                | ErrorCode::DatabaseBusy
                | ErrorCode::DatabaseLocked
                | ErrorCode::OutOfMemory
        )
    )
}

/// Removes a store and its WAL files.
fn remove_db(path: &Path) -> Result<()> {
    for suffix in ["", "-wal", "-shm"] {
        let p = PathBuf::from(format!("{}{suffix}", path.display()));
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("removing", p, e)),
        }
    }
    Ok(())
}

/// What writing one file changed, for deciding whether the impact graph needs a rebuild.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileChange {
    /// The file was not in the store before.
    pub added: bool,
    /// Its imports differ from what was stored (or it is new).
    pub imports_changed: bool,
}

/// The writer's handle, owned by `IndexSession` (and so by the writer lock).
pub struct SymbolStore {
    conn: Connection,
    path: PathBuf,
    in_tx: bool,
    meta: StoreMeta,
    /// The store was created (or rebuilt) by this open.
    created: bool,
}

impl SymbolStore {
    /// Opens (creating if needed) the store for writing. `reset` (the Tantivy index was
    /// rebuilt), a different schema or an unreadable file start it empty.
    pub fn open_write(path: &Path, reset: bool) -> Result<SymbolStore> {
        if reset {
            remove_db(path)?;
        }
        match Self::try_open(path) {
            Ok(mut s) if s.meta.schema == STORE_SCHEMA || s.created => {
                if s.meta.parts < PARTS_VERSION {
                    s.respell_parts()?;
                }
                Ok(s)
            }
            Ok(s) => {
                tracing::info!(
                    found = s.meta.schema,
                    want = STORE_SCHEMA,
                    "symbol store schema changed; rebuilding it"
                );
                drop(s);
                remove_db(path)?;
                Self::try_open(path).map_err(sql_err(path))
            }
            // A full disk or an I/O error says nothing about the file: keep it, fail the run.
            Err(e) if !is_damage(&e) => Err(sql_err(path)(e)),
            Err(e) => {
                tracing::warn!(path = %path.display(), "symbol store unreadable ({e}); rebuilding it");
                remove_db(path)?;
                Self::try_open(path).map_err(sql_err(path))
            }
        }
    }

    fn try_open(path: &Path) -> rusqlite::Result<SymbolStore> {
        let existed = path.exists();
        if !existed {
            // Owner-only, like every docdex file (SQLite gives the WAL the same mode).
            let _ = crate::engine::fsutil::ensure_private_file(path);
        }
        let conn = Connection::open(path)?;
        configure(&conn)?;
        conn.execute_batch(SCHEMA_SQL)?;
        let mut meta = read_meta(&conn)?;
        let created = !existed || meta.schema == 0;
        if created {
            conn.execute("INSERT OR REPLACE INTO meta VALUES('schema', ?1)", [STORE_SCHEMA.to_string()])?;
            conn.execute("INSERT OR REPLACE INTO meta VALUES('parts', ?1)", [PARTS_VERSION.to_string()])?;
            meta.schema = STORE_SCHEMA;
            meta.parts = PARTS_VERSION;
        }
        Ok(SymbolStore { conn, path: path.to_path_buf(), in_tx: false, meta, created })
    }

    /// The meta as of the last commit.
    pub fn meta(&self) -> &StoreMeta {
        &self.meta
    }

    /// Rewrites every symbol's parts as this build spells them ([`PARTS_VERSION`]), from the
    /// names, in one transaction: a store an older docdex wrote gets the umlaut spellings
    /// without parsing a file again. Only rows whose parts change are written.
    fn respell_parts(&mut self) -> Result<()> {
        let err = sql_err(&self.path);
        tracing::info!(found = self.meta.parts, want = PARTS_VERSION, "respelling the symbol store's name parts");
        let tx = self.conn.unchecked_transaction().map_err(&err)?;
        {
            let mut read = tx.prepare("SELECT id, name, parts FROM symbols").map_err(&err)?;
            let mut write = tx.prepare("UPDATE symbols SET parts = ?2 WHERE id = ?1").map_err(&err)?;
            let mut rows = read.query([]).map_err(&err)?;
            while let Some(row) = rows.next().map_err(&err)? {
                let (id, name, old): (i64, String, String) =
                    (row.get(0).map_err(&err)?, row.get(1).map_err(&err)?, row.get(2).map_err(&err)?);
                let new = parts(&name);
                if new != old {
                    write.execute(params![id, new]).map_err(&err)?;
                }
            }
        }
        tx.execute("INSERT OR REPLACE INTO meta VALUES('parts', ?1)", [PARTS_VERSION.to_string()]).map_err(&err)?;
        tx.commit().map_err(&err)?;
        self.meta.parts = PARTS_VERSION;
        Ok(())
    }

    /// Whether this open created the store (so nothing is in it yet).
    pub fn created(&self) -> bool {
        self.created
    }

    /// Path -> (content hash, language) of every file in the store.
    pub fn file_hashes(&self) -> Result<HashMap<String, (u64, String)>> {
        let err = sql_err(&self.path);
        let mut stmt = self.conn.prepare("SELECT path, hash, lang FROM files").map_err(&err)?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, (r.get::<_, i64>(1)? as u64, r.get::<_, String>(2)?))))
            .map_err(&err)?;
        rows.collect::<rusqlite::Result<HashMap<_, _>>>().map_err(err)
    }

    fn begin(&mut self) -> Result<()> {
        if !self.in_tx {
            self.conn.execute_batch("BEGIN IMMEDIATE").map_err(sql_err(&self.path))?;
            self.in_tx = true;
        }
        Ok(())
    }

    /// Replaces everything stored for `path` with what the code pass produced.
    pub fn put_file(&mut self, path: &str, hash: u64, lang: Lang, outcome: &CodeOutcome) -> Result<FileChange> {
        self.begin()?;
        let err = sql_err(&self.path);
        let old: Option<(i64, String)> = self
            .conn
            .prepare_cached("SELECT id, imports FROM files WHERE path = ?1")
            .and_then(|mut s| s.query_row([path], |r| Ok((r.get(0)?, r.get(1)?))).optional())
            .map_err(&err)?;
        let row = FileRow::of(outcome);
        let change =
            FileChange { added: old.is_none(), imports_changed: old.as_ref().is_none_or(|(_, i)| *i != row.imports) };
        if let Some((id, _)) = old {
            self.conn
                .prepare_cached("DELETE FROM symbols WHERE file_id = ?1")
                .and_then(|mut s| s.execute([id]))
                .map_err(&err)?;
        }
        // An upsert keeps an existing row's id.
        let file_id: i64 = self
            .conn
            .prepare_cached(
                "INSERT INTO files(path, lang, hash, parsed, note, parse_errors, symbol_count, imports,
                 ast_kinds, ast_samples) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
                 ON CONFLICT(path) DO UPDATE SET lang=excluded.lang, hash=excluded.hash, parsed=excluded.parsed,
                 note=excluded.note, parse_errors=excluded.parse_errors, symbol_count=excluded.symbol_count,
                 imports=excluded.imports, ast_kinds=excluded.ast_kinds, ast_samples=excluded.ast_samples
                 RETURNING id",
            )
            .and_then(|mut s| {
                s.query_row(
                    params![
                        path,
                        lang.name(),
                        hash as i64,
                        row.parsed,
                        row.note,
                        row.errors,
                        row.symbols.len() as i64,
                        row.imports,
                        row.kinds,
                        row.samples
                    ],
                    |r| r.get(0),
                )
            })
            .map_err(&err)?;
        self.insert_symbols(file_id, row.symbols)?;
        Ok(change)
    }

    /// Writes a file's symbols in extraction order (`ord`, which their parent indices refer to).
    fn insert_symbols(&self, file_id: i64, symbols: &[Symbol]) -> Result<()> {
        let err = sql_err(&self.path);
        let mut insert = self
            .conn
            .prepare_cached(
                "INSERT INTO symbols(file_id, ord, parent, depth, name, norm, parts, kind, node_kind, line_start,
                 line_end, signature, container) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            )
            .map_err(&err)?;
        for (i, s) in symbols.iter().enumerate() {
            insert
                .execute(params![
                    file_id,
                    i as i64,
                    s.parent.map(i64::from),
                    s.depth,
                    s.name,
                    norm(&s.name),
                    parts(&s.name),
                    s.kind.name(),
                    s.node_kind,
                    s.line_start,
                    s.line_end,
                    s.signature,
                    s.container
                ])
                .map_err(&err)?;
        }
        Ok(())
    }

    /// Removes a file's rows; returns whether it was there.
    pub fn remove_file(&mut self, path: &str) -> Result<bool> {
        self.begin()?;
        let err = sql_err(&self.path);
        let id: Option<i64> = self
            .conn
            .prepare_cached("SELECT id FROM files WHERE path = ?1")
            .and_then(|mut s| s.query_row([path], |r| r.get(0)).optional())
            .map_err(&err)?;
        let Some(id) = id else { return Ok(false) };
        self.conn
            .prepare_cached("DELETE FROM symbols WHERE file_id = ?1")
            .and_then(|mut s| s.execute([id]))
            .map_err(&err)?;
        self.conn.prepare_cached("DELETE FROM files WHERE id = ?1").and_then(|mut s| s.execute([id])).map_err(&err)?;
        Ok(true)
    }

    /// Commits the open transaction (if any) as `generation`. With `grammars`, records this
    /// build's grammar version and import rules version for every language: every file of a
    /// drifted language has been re-extracted.
    pub fn commit(&mut self, generation: u64, grammars: bool) -> Result<()> {
        if !self.in_tx && generation == self.meta.generation && !grammars {
            return Ok(());
        }
        self.begin()?;
        let err = sql_err(&self.path);
        self.conn
            .execute("INSERT OR REPLACE INTO meta VALUES('generation', ?1)", [generation.to_string()])
            .map_err(&err)?;
        if grammars {
            let put = |key: String, value: String| {
                self.conn.execute("INSERT OR REPLACE INTO meta VALUES(?1, ?2)", [key, value]).map_err(&err)
            };
            for l in Lang::ALL {
                let (imports, symbols) = (super::imports::rules_version(l), super::rules::symbol_rules_version(l));
                put(format!("grammar:{}", l.name()), l.grammar_version().to_string())?;
                put(format!("imports:{}", l.name()), imports.to_string())?;
                put(format!("symbols:{}", l.name()), symbols.to_string())?;
            }
            for l in Lang::ALL {
                let name = l.name().to_string();
                self.meta.grammars.insert(name.clone(), l.grammar_version().to_string());
                self.meta.import_rules.insert(name.clone(), super::imports::rules_version(l));
                self.meta.symbol_rules.insert(name, super::rules::symbol_rules_version(l));
            }
        }
        self.conn.execute_batch("COMMIT").map_err(&err)?;
        self.in_tx = false;
        self.meta.generation = generation;
        Ok(())
    }

    /// Records, in the transaction of the symbols that caused it, that the impact graph must
    /// be rebuilt: a kill before the graph is written leaves the mark for the next run.
    pub fn mark_graph_pending(&mut self) -> Result<()> {
        if self.meta.graph_pending && self.in_tx {
            return Ok(());
        }
        self.begin()?;
        self.conn
            .execute("INSERT OR REPLACE INTO meta VALUES('graph_pending', '1')", [])
            .map_err(sql_err(&self.path))?;
        self.meta.graph_pending = true;
        Ok(())
    }

    /// Records that the impact graph was written from `generation` (clears the pending mark).
    pub fn graph_written(&mut self, generation: u64) -> Result<()> {
        self.begin()?;
        let err = sql_err(&self.path);
        self.conn.execute("DELETE FROM meta WHERE key = 'graph_pending'", []).map_err(&err)?;
        // Built from the store now, not from disk by `docdex graph rebuild`.
        self.conn.execute("DELETE FROM meta WHERE key LIKE 'graph_imports:%'", []).map_err(&err)?;
        self.conn
            .execute("INSERT OR REPLACE INTO meta VALUES('graph_generation', ?1)", [generation.to_string()])
            .map_err(&err)?;
        let resolution = super::graph::RESOLUTION_VERSION;
        self.conn
            .execute("INSERT OR REPLACE INTO meta VALUES('graph_resolution', ?1)", [resolution.to_string()])
            .map_err(&err)?;
        self.conn.execute_batch("COMMIT").map_err(&err)?;
        self.in_tx = false;
        self.meta.graph_pending = false;
        self.meta.graph_generation = generation;
        self.meta.graph_resolution = resolution;
        self.meta.graph_import_rules.clear();
        Ok(())
    }

    /// Every stored file's imports, for the impact graph.
    pub fn all_imports(&self) -> Result<Vec<FileImports>> {
        all_imports(&self.conn, &self.path)
    }
}

impl Drop for SymbolStore {
    fn drop(&mut self) {
        if self.in_tx {
            // An uncommitted batch (an error mid-run) is discarded; the next run redoes it.
            let _ = self.conn.execute_batch("ROLLBACK");
        }
    }
}

fn all_imports(conn: &Connection, path: &Path) -> Result<Vec<FileImports>> {
    let err = sql_err(path);
    let mut stmt = conn.prepare("SELECT path, lang, imports FROM files ORDER BY path").map_err(&err)?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?)))
        .map_err(&err)?;
    let mut out = Vec::new();
    for row in rows {
        let (path, lang, imports) = row.map_err(&err)?;
        let Some(lang) = Lang::ALL.into_iter().find(|l| l.name() == lang) else { continue };
        let imports = serde_json::from_str(&imports).unwrap_or_default();
        out.push(FileImports { path, lang, imports });
    }
    Ok(out)
}

/// A read-only view for queries. Opening it does not create anything.
pub struct SymbolReader {
    conn: Connection,
    path: PathBuf,
    meta: StoreMeta,
}

/// One stored symbol with its file.
#[derive(Debug, Clone)]
pub struct StoredSymbol {
    /// Row id.
    pub id: i64,
    /// Repo-relative path of its file.
    pub path: String,
    /// The file's language.
    pub lang: String,
    /// Order within the file.
    pub ord: u32,
    /// Parent's order within the file.
    pub parent: Option<u32>,
    /// Nesting depth.
    pub depth: u32,
    /// Name as written.
    pub name: String,
    /// Kind.
    pub kind: SymbolKind,
    /// Tree-sitter node kind.
    pub node_kind: String,
    /// First line.
    pub line_start: u32,
    /// Last line.
    pub line_end: u32,
    /// Signature.
    pub signature: String,
    /// Container name.
    pub container: Option<String>,
}

/// The columns [`StoredSymbol::from_row`] reads, in order.
pub const SYMBOL_COLUMNS: &str = "s.id, f.path, f.lang, s.ord, s.parent, s.depth, s.name, s.kind, s.node_kind, \
     s.line_start, s.line_end, s.signature, s.container";

impl StoredSymbol {
    /// Reads a row selected with [`SYMBOL_COLUMNS`].
    pub fn from_row(r: &rusqlite::Row) -> rusqlite::Result<StoredSymbol> {
        let kind: String = r.get(7)?;
        Ok(StoredSymbol {
            id: r.get(0)?,
            path: r.get(1)?,
            lang: r.get(2)?,
            ord: r.get(3)?,
            parent: r.get(4)?,
            depth: r.get(5)?,
            name: r.get(6)?,
            kind: SymbolKind::parse(&kind).unwrap_or(SymbolKind::Variable),
            node_kind: r.get(8)?,
            line_start: r.get(9)?,
            line_end: r.get(10)?,
            signature: r.get(11)?,
            container: r.get(12)?,
        })
    }
}

impl SymbolReader {
    /// Opens the repo's store; `None` when there is none yet.
    pub fn open(repo: &RepoRef) -> Result<Option<SymbolReader>> {
        let path = db_path(repo);
        if !path.exists() {
            return Ok(None);
        }
        let err = |e: rusqlite::Error| sql_err(&path)(e);
        // Read-write without create: WAL readers need the shared-memory file, which a read-only
        // connection may not be able to create. Nothing is ever written through this handle.
        let conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI,
        )
        .map_err(&err)?;
        conn.busy_timeout(Duration::from_secs(10)).map_err(&err)?;
        // Scans (word-part and fuzzy name search, AST search) read the whole table: map it
        // instead of copying every page through read().
        conn.pragma_update(None, "mmap_size", 1i64 << 30).map_err(&err)?;
        // A store another build is creating right now, or a damaged one, reads as empty meta
        // (schema 0): queries then say to re-index, and the next index run rebuilds it.
        let meta = read_meta(&conn).unwrap_or_default();
        Ok(Some(SymbolReader { conn, path, meta }))
    }

    /// The connection, for the query module.
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// The meta read at open.
    pub fn meta(&self) -> &StoreMeta {
        &self.meta
    }

    /// A note for a name query when the store's parts predate [`PARTS_VERSION`] and the query
    /// could be an umlaut written out (`ueber`, `groesse`): such a name is not found that way
    /// until the next index run respells the parts. `repo` names the repo in the message.
    pub fn parts_note(&self, query: &str, repo: &Path) -> Option<String> {
        let lower = query.to_ascii_lowercase();
        let spelled = ["ae", "oe", "ue"].iter().any(|u| lower.contains(u));
        (self.meta.parts < PARTS_VERSION && spelled).then(|| {
            format!(
                "this symbol index was written by an older docdex: a name with ä, ö or ü is found by its \
                 plain letters (`uber` for `über`) and from its start written out (`ueber` for `über_x`), but not \
                 yet by a later word written out (`x ueber`) until `docdex index --repo {}` respells the stored \
                 names (no file is parsed again)",
                crate::error::shell_path(repo)
            )
        })
    }

    /// Maps SQLite errors to engine errors naming this store.
    pub fn err(&self) -> impl Fn(rusqlite::Error) -> Error + '_ {
        sql_err(&self.path)
    }

    /// Fails with [`Error::StaleIndex`] when the store cannot answer: built by another store
    /// schema, or by other grammar versions (parser drift). `repo` names the repo in the message.
    pub fn ensure_current(&self, repo: &Path) -> Result<()> {
        if self.meta.schema != STORE_SCHEMA {
            return Err(Error::StaleIndex(format!(
                "the symbol index of {} was built by another docdex version (store schema {}, this build reads {}); \
                 run `docdex index --repo {}` to rebuild it",
                repo.display(),
                self.meta.schema,
                STORE_SCHEMA,
                crate::error::shell_path(repo)
            )));
        }
        let drifted = self.meta.grammar_drifted();
        if !drifted.is_empty() {
            let which: Vec<String> = drifted
                .iter()
                .map(|l| {
                    format!(
                        "{} (indexed with {}, this build has {})",
                        l.name(),
                        self.meta.grammars.get(l.name()).map(String::as_str).unwrap_or("?"),
                        l.grammar_version()
                    )
                })
                .collect();
            return Err(Error::StaleIndex(format!(
                "symbols_reindex_required: the Tree-sitter grammars changed for {}; symbol and AST queries are \
                 disabled until you run `docdex index --repo {}`",
                which.join(", "),
                crate::error::shell_path(repo)
            )));
        }
        Ok(())
    }

    /// Every stored file's imports.
    pub fn all_imports(&self) -> Result<Vec<FileImports>> {
        all_imports(&self.conn, &self.path)
    }
}

/// The `files` row a code pass outcome makes (its symbols go to their own table).
struct FileRow<'a> {
    parsed: bool,
    note: Option<&'a str>,
    errors: bool,
    symbols: &'a [Symbol],
    imports: String,
    kinds: String,
    samples: String,
}

impl<'a> FileRow<'a> {
    fn of(outcome: &'a CodeOutcome) -> Self {
        match outcome {
            CodeOutcome::Parsed(p) => FileRow {
                parsed: true,
                note: None,
                errors: p.analysis.has_errors,
                symbols: p.analysis.symbols.as_slice(),
                imports: serde_json::to_string(&p.imports).unwrap_or_else(|_| "[]".into()),
                kinds: super::ast::encode_counts(&p.analysis.ast),
                samples: super::ast::encode_samples(&p.analysis.ast),
            },
            CodeOutcome::NotParsed(reason) => FileRow {
                parsed: false,
                note: Some(reason.as_str()),
                errors: false,
                symbols: &[],
                imports: "[]".into(),
                kinds: " ".into(),
                samples: String::new(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta_of(grammars: &[Lang], rules: &[(Lang, u32)]) -> StoreMeta {
        StoreMeta {
            grammars: grammars.iter().map(|l| (l.name().to_string(), l.grammar_version().to_string())).collect(),
            import_rules: rules.iter().map(|(l, v)| (l.name().to_string(), *v)).collect(),
            symbol_rules: grammars
                .iter()
                .map(|l| (l.name().to_string(), super::super::rules::symbol_rules_version(*l)))
                .collect(),
            ..Default::default()
        }
    }

    /// Stored imports from other import rules (an older docdex: no number, or another one) are
    /// re-extracted like a grammar drift, yet symbol queries stay open: only grammars block them.
    #[test]
    fn outdated_import_rules_are_drift_for_extraction_only() {
        let ts = Lang::TypeScript;
        let current = crate::engine::code::imports::rules_version(ts);
        let unversioned = meta_of(&[ts, Lang::Rust], &[]);
        assert_eq!(unversioned.imports_outdated(), [Lang::Rust, ts]);
        assert_eq!(unversioned.drifted(), [Lang::Rust, ts]);
        assert!(unversioned.grammar_drifted().is_empty());
        let older = meta_of(&[ts], &[(ts, current - 1)]);
        assert_eq!(older.drifted(), [ts]);
        let up_to_date = meta_of(&[ts], &[(ts, current)]);
        assert!(up_to_date.drifted().is_empty() && up_to_date.imports_outdated().is_empty());
        assert!(StoreMeta::default().drifted().is_empty(), "a new store records no grammar: nothing to redo");
    }

    /// Stored symbols from older symbol rules are re-extracted by the next run: a store that
    /// recorded none counts as rules 1, so only languages whose rules changed since redo theirs.
    #[test]
    fn outdated_symbol_rules_are_drift_for_extraction() {
        let (go, rust) = (Lang::Go, Lang::Rust);
        let imports = [(go, crate::engine::code::imports::rules_version(go)), (rust, 1)];
        let current = meta_of(&[go, rust], &imports);
        assert!(current.drifted().is_empty());
        let unversioned = StoreMeta { symbol_rules: BTreeMap::new(), ..current };
        assert_eq!(unversioned.symbols_outdated(), [go], "Go's rules are past 1, Rust's are not");
        assert_eq!(unversioned.drifted(), [go]);
    }
}
