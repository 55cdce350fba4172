//! Opening the per-repo SQLite databases (vectors, memory) the same way everywhere:
//! sqlite-vec registered for every connection, WAL so a search reads while an index
//! run writes, and a busy timeout instead of instant `database is locked` errors.

use crate::error::{Error, Result};
use rusqlite::Connection;
use std::path::Path;
use std::sync::Once;

/// How long a connection waits for another writer before giving up.
const BUSY_TIMEOUT_MS: u64 = 10_000;

/// Registers sqlite-vec as an auto extension (once per process).
fn register_vec() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: `sqlite3_vec_init` has the signature SQLite expects of an extension entry
        // point; registering it before any connection is opened is what sqlite-vec documents.
        unsafe {
            type Init = unsafe extern "C" fn(
                *mut rusqlite::ffi::sqlite3,
                *mut *mut std::os::raw::c_char,
                *const rusqlite::ffi::sqlite3_api_routines,
            ) -> std::os::raw::c_int;
            let init: Init = std::mem::transmute::<*const (), Init>(sqlite_vec::sqlite3_vec_init as *const ());
            rusqlite::ffi::sqlite3_auto_extension(Some(init));
        }
    });
}

/// Maps a SQLite error on `path`.
pub fn db_err(path: &Path) -> impl Fn(rusqlite::Error) -> Error + '_ {
    move |e| Error::Database { path: path.to_path_buf(), message: with_space_hint(path, e.to_string()) }
}

/// SQLite's message, with what to do when it failed for want of space. On a full disk a WAL
/// database cannot even be read (its shared-memory file needs room), and SQLite says only
/// "disk I/O error": `memory list` and `memory store` answered that and nothing else. Checked
/// only on such an error, and said only when under 1 MiB is free.
fn with_space_hint(path: &Path, message: String) -> String {
    if !(message.contains("disk I/O error") || message.contains("database or disk is full")) {
        return message;
    }
    match free_when_full(path) {
        Some(free) => format!(
            "{message}: the disk holding it is full ({} KiB free); free space there and run the command again (nothing stored in it was lost)",
            free / 1024
        ),
        None => message,
    }
}

/// The bytes free on the filesystem holding `path` when they are under 1 MiB (a full disk),
/// else `None`.
fn free_when_full(path: &Path) -> Option<u64> {
    path.parent().and_then(crate::engine::fsutil::available_bytes).filter(|free| *free < 1024 * 1024)
}

/// Opens an existing database for reading only. Normally that is [`open`]; but on a full disk a
/// WAL database cannot be opened at all (SQLite must make room for its shared-memory file), and
/// `memory list` failed although reading needs no space (tour26 F4). Then, if its write-ahead
/// log is absent or empty (as after every clean close, which folds the log into the file), the
/// file alone holds every committed row, and it is opened read-only as immutable (no lock, no
/// shared memory, nothing written). No writer can change it meanwhile: one would first have to
/// grow the log, on a disk with no room for it. Any other failure is [`open`]'s.
pub fn open_for_reading(path: &Path) -> Result<Connection> {
    match open(path) {
        Err(e) if free_when_full(path).is_some() && log_is_empty(path) => open_immutable(path).map_err(|_| e),
        other => other,
    }
}

/// Whether `path`'s write-ahead log (`-wal`) is absent or empty: no committed row waits in it.
fn log_is_empty(path: &Path) -> bool {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::metadata(std::path::PathBuf::from(wal)).map_or(true, |m| m.len() == 0)
}

/// `path` opened read-only with SQLite's `immutable` flag (a URI, with `%`, `?` and `#` escaped).
fn open_immutable(path: &Path) -> Result<Connection> {
    register_vec();
    let escaped = path.to_string_lossy().replace('%', "%25").replace('?', "%3f").replace('#', "%23");
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
        | rusqlite::OpenFlags::SQLITE_OPEN_URI
        | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(format!("file:{escaped}?immutable=1"), flags).map_err(db_err(path))?;
    // Fails here, not at the first query, when the file is not a database.
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(())).map_err(db_err(path))?;
    tracing::info!(path = %path.display(), "the disk is full: reading the database read-only, from its file alone");
    Ok(conn)
}

/// The fewest characters of an id that [`id_by_prefix`] takes as a prefix: UUIDs share
/// their first few characters often enough that a shorter one would name another row as soon
/// as a few hundred exist.
pub const MIN_ID_PREFIX: usize = 6;

/// Matches an ambiguity error lists at most.
const MAX_LISTED_IDS: usize = 10;

/// The whole id `given` names in `table` (its `id` column): itself when it is one, else the
/// one id it starts (case aside), as git takes hashes, since nobody types a UUID whole.
/// `Ok(None)` when none matches, so the caller says what was not found; an error when `given`
/// is shorter than [`MIN_ID_PREFIX`] or starts several ids (listed). `what` names the rows
/// ("memory", "preference") and `listed_by` the command that shows their ids.
pub fn id_by_prefix(
    conn: &Connection,
    table: &'static str,
    given: &str,
    what: &str,
    listed_by: &str,
) -> Result<Option<String>> {
    let path = conn.path().map(std::path::PathBuf::from).unwrap_or_default();
    let exact = conn
        .query_row(&format!("SELECT id FROM {table} WHERE id = ?1"), [given], |r| r.get::<_, String>(0))
        .map(Some)
        .or_else(|e| if e == rusqlite::Error::QueryReturnedNoRows { Ok(None) } else { Err(e) })
        .map_err(db_err(&path))?;
    if exact.is_some() {
        return Ok(exact);
    }
    if given.chars().count() < MIN_ID_PREFIX {
        return Err(Error::BadRequest(format!(
            "no {what} {given}, and an id prefix must have at least {MIN_ID_PREFIX} characters: give more of the id (`{listed_by}` shows them)"
        )));
    }
    let mut st = conn
        .prepare(&format!(
            "SELECT id FROM {table} WHERE lower(substr(id, 1, length(?1))) = lower(?1) ORDER BY id LIMIT ?2"
        ))
        .map_err(db_err(&path))?;
    let ids = st
        .query_map(rusqlite::params![given, MAX_LISTED_IDS as i64 + 1], |r| r.get::<_, String>(0))
        .map_err(db_err(&path))?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(db_err(&path))?;
    match ids.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one.clone())),
        many => {
            let more = if many.len() > MAX_LISTED_IDS { ", ..." } else { "" };
            Err(Error::BadRequest(format!(
                "{given} starts more than one {what} id ({}{more}): give more of it",
                many[..many.len().min(MAX_LISTED_IDS)].join(", ")
            )))
        }
    }
}

/// Opens (creating) a database with sqlite-vec available.
pub fn open(path: &Path) -> Result<Connection> {
    register_vec();
    if let Some(dir) = path.parent() {
        crate::engine::fsutil::create_private_dir(dir).map_err(|e| Error::io("creating", dir, e))?;
    }
    crate::engine::fsutil::ensure_private_file(path)?;
    let conn = Connection::open(path).map_err(db_err(path))?;
    conn.busy_timeout(std::time::Duration::from_millis(BUSY_TIMEOUT_MS)).map_err(db_err(path))?;
    set_wal(&conn, path)?;
    conn.pragma_update(None, "synchronous", "NORMAL").map_err(db_err(path))?;
    Ok(conn)
}

/// Switches to WAL, waiting (up to the busy timeout) for other connections doing the same: on
/// a new database the switch upgrades a read lock to an exclusive one, and SQLite answers
/// "database is locked" at once there instead of calling the busy handler (two upgraders
/// would deadlock), so one of 30 processes opening a fresh `memory.db` together failed.
fn set_wal(conn: &Connection, path: &Path) -> Result<()> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(BUSY_TIMEOUT_MS);
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Ok(()) => return Ok(()),
            Err(e)
                if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(e) => return Err(db_err(path)(e)),
        }
    }
}

/// A vector as sqlite-vec's float32 blob (little-endian).
pub fn vec_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A float32 blob back into a vector.
pub fn blob_vec(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vec0_knn_works_on_a_real_file() {
        let dir = tempfile::tempdir().unwrap();
        let conn = open(&dir.path().join("t.db")).unwrap();
        conn.execute_batch("CREATE VIRTUAL TABLE v USING vec0(embedding float[3] distance_metric=cosine)").unwrap();
        for (id, vec) in [(1i64, [1.0f32, 0.0, 0.0]), (2, [0.0, 1.0, 0.0]), (3, [0.7, 0.7, 0.0])] {
            conn.execute("INSERT INTO v(rowid, embedding) VALUES (?1, ?2)", rusqlite::params![id, vec_blob(&vec)])
                .unwrap();
        }
        let mut st = conn.prepare("SELECT rowid, distance FROM v WHERE embedding MATCH ?1 AND k = 2").unwrap();
        let rows: Vec<(i64, f64)> = st
            .query_map([vec_blob(&[1.0, 0.1, 0.0])], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<std::result::Result<_, _>>()
            .unwrap();
        assert_eq!(rows.iter().map(|r| r.0).collect::<Vec<_>>(), [1, 3]);
        assert!(rows[0].1 < rows[1].1);
        assert_eq!(blob_vec(&vec_blob(&[0.5, -2.0])), [0.5, -2.0]);
    }

    #[test]
    fn ids_by_unique_prefix_of_six_or_more_characters() {
        let dir = tempfile::tempdir().unwrap();
        let conn = open(&dir.path().join("t.db")).unwrap();
        conn.execute_batch(
            "CREATE TABLE t(id TEXT PRIMARY KEY); INSERT INTO t VALUES ('abcdef-1'), ('abcdef-2'), ('abcxyz-3'), ('ab');",
        )
        .unwrap();
        let by = |g: &str| id_by_prefix(&conn, "t", g, "row", "list");
        assert_eq!(by("ab").unwrap().as_deref(), Some("ab"), "a whole id, however short");
        assert_eq!(by("ABCXYZ").unwrap().as_deref(), Some("abcxyz-3"));
        assert_eq!(by("abcdef-2").unwrap().as_deref(), Some("abcdef-2"));
        assert_eq!(by("zzzzzz").unwrap(), None);
        let short = by("abcx").unwrap_err().to_string();
        assert!(short.contains("at least 6 characters") && short.contains("`list`"), "{short}");
        let many = by("abcdef").unwrap_err().to_string();
        assert!(many.contains("abcdef-1, abcdef-2") && many.contains("give more"), "{many}");
    }
}
