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
    move |e| Error::Database { path: path.to_path_buf(), message: e.to_string() }
}

/// Opens (creating) a database with sqlite-vec available.
pub fn open(path: &Path) -> Result<Connection> {
    register_vec();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
    }
    crate::engine::fsutil::ensure_private_file(path)?;
    let conn = Connection::open(path).map_err(db_err(path))?;
    conn.busy_timeout(std::time::Duration::from_millis(BUSY_TIMEOUT_MS)).map_err(db_err(path))?;
    conn.pragma_update(None, "journal_mode", "WAL").map_err(db_err(path))?;
    conn.pragma_update(None, "synchronous", "NORMAL").map_err(db_err(path))?;
    Ok(conn)
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
}
