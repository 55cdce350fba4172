//! `vectors.db`, one per repo: which files are embedded (by content hash), their
//! chunks with line ranges, the chunk vectors in a sqlite-vec `vec0` table for
//! nearest-neighbour search, and a content-addressed cache of vectors (keyed by
//! the hash of the text embedded, so an unchanged chunk is never embedded twice,
//! even after a rename or a revert). The model name and dimension are stored;
//! vectors from another model are never mixed in.
//!
//! Vectors are stored normalized to unit length and searched exactly with
//! sqlite-vec's Euclidean distance, which ranks unit vectors as cosine does at
//! half the cost of its cosine distance (cosine similarity = 1 - d²/2). A one-bit
//! quantized prefilter was measured and dropped: with the few hundred candidates
//! that keep sqlite-vec's top-k selection cheap it found only two thirds of the
//! true ten nearest on clustered vectors (docs/PERFORMANCE.md).
//!
//! Every file is replaced in one transaction (its chunks, vectors and hash
//! together), so a crash leaves each file either fully old or fully new, and a
//! file whose recorded hash differs from the manifest is simply embedded again.

use crate::engine::repos::RepoRef;
use crate::engine::sqlite::{blob_vec, db_err, open, vec_blob};
use crate::error::{Error, Result};
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The file name inside the repo's state directory.
pub const VECTORS_DB: &str = "vectors.db";
/// Bump when the tables change; an old file is rebuilt.
pub const STORE_SCHEMA: u32 = 2;

/// A hash of the text that was embedded (xxh3-128).
pub type TextHash = [u8; 16];

/// Hash of an embedding input.
pub fn text_hash(text: &str) -> TextHash {
    xxhash_rust::xxh3::xxh3_128(text.as_bytes()).to_le_bytes()
}

/// The model a store's vectors came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredModel {
    /// Model name as configured when the vectors were made.
    pub model: String,
    /// Vector length.
    pub dim: usize,
}

/// How far a store's vectors cover the index: files with chunks to embed, and how many of
/// them have no vectors for their current content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coverage {
    /// Files without current vectors.
    pub missing: u64,
    /// Files the index holds with chunks to embed.
    pub wanted: u64,
}

/// One chunk of a file to store.
#[derive(Debug, Clone)]
pub struct ChunkEntry {
    /// First line.
    pub line_start: u32,
    /// Last line.
    pub line_end: u32,
    /// Hash of the text embedded for it.
    pub hash: TextHash,
}

/// A whole file to store: replaces whatever the store had for the path.
#[derive(Debug, Clone)]
pub struct FileEntry {
    /// Repo-relative path.
    pub path: String,
    /// The manifest's content hash of the file this was made from.
    pub file_hash: u64,
    /// Language name.
    pub lang: String,
    /// Its chunks (each has a vector in the cache or in the batch being written).
    pub chunks: Vec<ChunkEntry>,
}

/// A nearest-neighbour hit.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorHit {
    /// Repo-relative path.
    pub path: String,
    /// Language name.
    pub lang: String,
    /// First line.
    pub line_start: u32,
    /// Last line.
    pub line_end: u32,
    /// Cosine similarity to the query (1 = same direction).
    pub similarity: f32,
}

/// An open `vectors.db`.
pub struct VectorStore {
    conn: Connection,
    path: PathBuf,
}

impl VectorStore {
    /// Where the repo's store lives.
    pub fn path_for(repo: &RepoRef) -> PathBuf {
        repo.state_dir.join(VECTORS_DB)
    }

    /// Opens the store, creating it (and replacing one of an older schema).
    pub fn open(repo: &RepoRef) -> Result<VectorStore> {
        let path = Self::path_for(repo);
        let conn = open(&path)?;
        let mut store = VectorStore { conn, path };
        store.ensure_schema()?;
        Ok(store)
    }

    /// Opens the store if the repo has one.
    pub fn open_existing(repo: &RepoRef) -> Result<Option<VectorStore>> {
        if Self::path_for(repo).exists() {
            Self::open(repo).map(Some)
        } else {
            Ok(None)
        }
    }

    fn err(&self) -> impl Fn(rusqlite::Error) -> Error + '_ {
        db_err(&self.path)
    }

    fn ensure_schema(&mut self) -> Result<()> {
        let path = self.path.clone();
        let err = db_err(&path);
        self.conn
            .execute_batch(
                "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                 CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, file_hash TEXT NOT NULL, chunks INTEGER NOT NULL);
                 CREATE TABLE IF NOT EXISTS chunks (id INTEGER PRIMARY KEY, path TEXT NOT NULL, lang TEXT NOT NULL,
                     line_start INTEGER NOT NULL, line_end INTEGER NOT NULL, hash BLOB NOT NULL);
                 CREATE INDEX IF NOT EXISTS chunks_by_path ON chunks(path);
                 CREATE TABLE IF NOT EXISTS cache (hash BLOB PRIMARY KEY, vector BLOB NOT NULL);",
            )
            .map_err(&err)?;
        let version: Option<String> = self.meta("schema_version")?;
        match version.as_deref() {
            None => self.set_meta("schema_version", &STORE_SCHEMA.to_string())?,
            Some(v) if v == STORE_SCHEMA.to_string() => {}
            Some(_) => {
                self.reset()?;
                self.set_meta("schema_version", &STORE_SCHEMA.to_string())?;
            }
        }
        Ok(())
    }

    fn meta(&self, key: &str) -> Result<Option<String>> {
        self.conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0)).optional().map_err(self.err())
    }

    fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        self.conn
            .execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)", [key, value])
            .map(|_| ())
            .map_err(self.err())
    }

    /// The model and dimension of the stored vectors, once any exist.
    pub fn model(&self) -> Result<Option<StoredModel>> {
        let model = self.meta("model")?;
        let dim = self.meta("dim")?.and_then(|d| d.parse::<usize>().ok());
        Ok(match (model, dim) {
            (Some(model), Some(dim)) if dim > 0 => Some(StoredModel { model, dim }),
            _ => None,
        })
    }

    /// Records how many of the files the index holds with chunks to embed (`wanted`) have no
    /// current vectors (`missing`), as the last embedding run left them. Readers (search,
    /// `status`, `check`) learn from it what an interrupted run left out without reading the
    /// manifest; a run stopped part-way used to leave hybrid search over a fraction of the
    /// files saying nothing (tour28 F1).
    pub fn set_coverage(&self, coverage: Coverage) -> Result<()> {
        self.set_meta("files_missing", &coverage.missing.to_string())?;
        self.set_meta("files_wanted", &coverage.wanted.to_string())
    }

    /// What [`VectorStore::set_coverage`] recorded; none before any run recorded it.
    pub fn coverage(&self) -> Result<Option<Coverage>> {
        let number = |key: &str| -> Result<Option<u64>> { Ok(self.meta(key)?.and_then(|v| v.parse().ok())) };
        Ok(match (number("files_missing")?, number("files_wanted")?) {
            (Some(missing), Some(wanted)) => Some(Coverage { missing, wanted }),
            _ => None,
        })
    }

    /// Records the model and dimension and creates the vector table for it.
    pub fn init_model(&mut self, model: &str, dim: usize) -> Result<()> {
        let tx = self.conn.transaction().map_err(db_err(&self.path))?;
        tx.execute_batch(&format!("CREATE VIRTUAL TABLE IF NOT EXISTS chunk_vec USING vec0(embedding float[{dim}]);"))
            .map_err(db_err(&self.path))?;
        tx.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('model', ?1)", [model])
            .map_err(db_err(&self.path))?;
        tx.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('dim', ?1)", [dim.to_string()])
            .map_err(db_err(&self.path))?;
        bump_revision(&tx).map_err(db_err(&self.path))?;
        tx.commit().map_err(db_err(&self.path))
    }

    /// Forgets every vector, chunk, cache entry and the model (for `--reembed`).
    pub fn reset(&mut self) -> Result<()> {
        self.conn
            .execute_batch(
                "BEGIN;
                 DROP TABLE IF EXISTS chunk_vec;
                 DELETE FROM chunks; DELETE FROM files; DELETE FROM cache;
                 DELETE FROM meta WHERE key IN ('model', 'dim', 'files_missing', 'files_wanted');
                 INSERT INTO meta(key, value) VALUES ('revision', '1')
                     ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1;
                 COMMIT;",
            )
            .map_err(self.err())?;
        // Return the space: a re-embed of a large repo would otherwise double the file.
        self.conn.execute_batch("VACUUM;").map_err(self.err())
    }

    /// Embedded files and the manifest hash each was embedded from.
    pub fn file_hashes(&self) -> Result<HashMap<String, u64>> {
        let mut st = self.conn.prepare("SELECT path, file_hash FROM files").map_err(self.err())?;
        let rows = st
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .map_err(self.err())?
            .filter_map(|r| r.ok())
            .filter_map(|(p, h)| h.parse::<u64>().ok().map(|h| (p, h)))
            .collect();
        Ok(rows)
    }

    /// Removes files (their chunks and vectors) from the store.
    pub fn remove_files(&mut self, paths: &[String]) -> Result<()> {
        if paths.is_empty() {
            return Ok(());
        }
        let has_vec = self.has_vec_table()?;
        let path = self.path.clone();
        let tx = self.conn.transaction().map_err(db_err(&path))?;
        for p in paths {
            delete_file(&tx, p, has_vec).map_err(db_err(&path))?;
        }
        bump_revision(&tx).map_err(db_err(&path))?;
        tx.commit().map_err(db_err(&path))
    }

    fn has_vec_table(&self) -> Result<bool> {
        self.conn
            .query_row("SELECT 1 FROM sqlite_master WHERE name = 'chunk_vec'", [], |_| Ok(()))
            .optional()
            .map(|o| o.is_some())
            .map_err(self.err())
    }

    /// Cached vectors for the given text hashes.
    pub fn cached(&self, hashes: &[TextHash]) -> Result<HashMap<TextHash, Vec<f32>>> {
        let mut out = HashMap::new();
        let mut st = self.conn.prepare_cached("SELECT vector FROM cache WHERE hash = ?1").map_err(self.err())?;
        for h in hashes {
            if out.contains_key(h) {
                continue;
            }
            let v: Option<Vec<u8>> =
                st.query_row([h.as_slice()], |r| r.get(0)).optional().map_err(db_err(&self.path))?;
            if let Some(v) = v {
                out.insert(*h, blob_vec(&v));
            }
        }
        Ok(out)
    }

    /// In one transaction: adds `fresh` vectors to the cache, then replaces each file's chunks
    /// and vectors. Every chunk's vector must be in `vectors` (cached or fresh).
    pub fn write(
        &mut self,
        fresh: &[(TextHash, Vec<f32>)],
        vectors: &HashMap<TextHash, Vec<f32>>,
        files: &[FileEntry],
    ) -> Result<()> {
        let path = self.path.clone();
        let e = db_err(&path);
        let tx = self.conn.transaction().map_err(&e)?;
        {
            let mut put =
                tx.prepare_cached("INSERT OR REPLACE INTO cache(hash, vector) VALUES (?1, ?2)").map_err(&e)?;
            for (h, v) in fresh {
                put.execute(params![h.as_slice(), vec_blob(v)]).map_err(&e)?;
            }
            let mut chunk = tx
                .prepare_cached(
                    "INSERT INTO chunks(path, lang, line_start, line_end, hash) VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(&e)?;
            let mut vec = tx.prepare_cached("INSERT INTO chunk_vec(rowid, embedding) VALUES (?1, ?2)").map_err(&e)?;
            let mut file = tx
                .prepare_cached("INSERT OR REPLACE INTO files(path, file_hash, chunks) VALUES (?1, ?2, ?3)")
                .map_err(&e)?;
            for f in files {
                delete_file(&tx, &f.path, true).map_err(&e)?;
                for c in &f.chunks {
                    let v = vectors.get(&c.hash).ok_or_else(|| Error::Database {
                        path: path.clone(),
                        message: format!("no vector for a chunk of {}", f.path),
                    })?;
                    chunk.execute(params![f.path, f.lang, c.line_start, c.line_end, c.hash.as_slice()]).map_err(&e)?;
                    let id = tx.last_insert_rowid();
                    vec.execute(params![id, vec_blob(&unit(v))]).map_err(&e)?;
                }
                file.execute(params![f.path, f.file_hash.to_string(), f.chunks.len() as i64]).map_err(&e)?;
            }
        }
        bump_revision(&tx).map_err(&e)?;
        tx.commit().map_err(&e)
    }

    /// The `k` chunks nearest to `query` by cosine similarity, most similar first.
    pub fn knn(&self, query: &[f32], k: usize) -> Result<Vec<VectorHit>> {
        if k == 0 || !self.has_vec_table()? {
            return Ok(Vec::new());
        }
        let mut st = self
            .conn
            .prepare_cached(
                "WITH knn AS (SELECT rowid, distance FROM chunk_vec WHERE embedding MATCH ?1 AND k = ?2)
                 SELECT c.path, c.lang, c.line_start, c.line_end, knn.distance
                 FROM knn JOIN chunks c ON c.id = knn.rowid ORDER BY knn.distance, c.path, c.line_start",
            )
            .map_err(self.err())?;
        let rows = st
            .query_map(params![vec_blob(&unit(query)), k as i64], |r| {
                let d = r.get::<_, f64>(4)? as f32;
                Ok(VectorHit {
                    path: r.get(0)?,
                    lang: r.get(1)?,
                    line_start: r.get(2)?,
                    line_end: r.get(3)?,
                    similarity: 1.0 - d * d / 2.0,
                })
            })
            .map_err(self.err())?
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(self.err())?;
        Ok(rows)
    }

    /// Changes whenever chunks or vectors change (an in-memory copy is current while it matches).
    pub fn revision(&self) -> Result<u64> {
        Ok(self.meta("revision")?.and_then(|r| r.parse().ok()).unwrap_or(0))
    }

    /// Every chunk with its unit vector, for an in-memory copy. Read from the plain cache table,
    /// which holds every live chunk's vector (a vec0 full scan returns rows several times slower).
    pub fn all(&self) -> Result<Vec<(VectorHit, Vec<f32>)>> {
        let mut st = self
            .conn
            .prepare(
                "SELECT c.path, c.lang, c.line_start, c.line_end, k.vector
                 FROM chunks c JOIN cache k ON k.hash = c.hash",
            )
            .map_err(self.err())?;
        let rows = st
            .query_map([], |r| {
                Ok((
                    VectorHit {
                        path: r.get(0)?,
                        lang: r.get(1)?,
                        line_start: r.get(2)?,
                        line_end: r.get(3)?,
                        similarity: 0.0,
                    },
                    unit(&blob_vec(&r.get::<_, Vec<u8>>(4)?)),
                ))
            })
            .map_err(self.err())?
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(self.err())?;
        Ok(rows)
    }

    /// The vectors of a file's chunks (for `similar`).
    pub fn file_vectors(&self, path: &str) -> Result<Vec<Vec<f32>>> {
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT v.embedding FROM chunks c JOIN chunk_vec v ON v.rowid = c.id WHERE c.path = ?1 ORDER BY c.line_start",
            )
            .map_err(self.err())?;
        let rows = st
            .query_map([path], |r| r.get::<_, Vec<u8>>(0))
            .map_err(self.err())?
            .filter_map(|r| r.ok())
            .map(|b| blob_vec(&b))
            .collect();
        Ok(rows)
    }

    /// Files, chunks and cached vectors stored.
    pub fn counts(&self) -> Result<(u64, u64, u64)> {
        let count = |sql: &str| self.conn.query_row(sql, [], |r| r.get::<_, i64>(0)).map(|n| n as u64);
        Ok((
            count("SELECT COUNT(*) FROM files").map_err(self.err())?,
            count("SELECT COUNT(*) FROM chunks").map_err(self.err())?,
            count("SELECT COUNT(*) FROM cache").map_err(self.err())?,
        ))
    }

    /// Drops cached vectors no chunk uses once they outnumber the live ones (plus slack), so
    /// the cache keeps recent renames and reverts but cannot grow without bound.
    pub fn trim_cache(&mut self) -> Result<u64> {
        let (_, chunks, cached) = self.counts()?;
        if cached <= chunks * 2 + 1000 {
            return Ok(0);
        }
        self.conn
            .execute("DELETE FROM cache WHERE hash NOT IN (SELECT hash FROM chunks)", [])
            .map(|n| n as u64)
            .map_err(self.err())
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Deletes a file's rows. Vectors go one rowid at a time: vec0 answers a rowid lookup
/// directly, while `rowid IN (subquery)` would scan the whole vector table per file.
/// Bumps `meta.revision`, which in-memory copies of the vectors compare against.
fn bump_revision(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO meta(key, value) VALUES ('revision', '1')
         ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
        [],
    )
    .map(|_| ())
}

/// `v` scaled to unit length (a zero vector stays zero).
pub fn unit(v: &[f32]) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter().map(|x| x / norm).collect()
    } else {
        v.to_vec()
    }
}

fn delete_file(tx: &rusqlite::Transaction<'_>, path: &str, has_vec: bool) -> rusqlite::Result<()> {
    if has_vec {
        let ids: Vec<i64> = {
            let mut st = tx.prepare_cached("SELECT id FROM chunks WHERE path = ?1")?;
            let rows = st.query_map([path], |r| r.get(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let mut del = tx.prepare_cached("DELETE FROM chunk_vec WHERE rowid = ?1")?;
        for id in ids {
            del.execute([id])?;
        }
    }
    tx.execute("DELETE FROM chunks WHERE path = ?1", [path])?;
    tx.execute("DELETE FROM files WHERE path = ?1", [path])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_neighbours_are_exact_cosine_on_any_vector_length() {
        let dir = tempfile::tempdir().unwrap();
        let repo = RepoRef::new(dir.path().into(), "x".into(), dir.path().join("state"));
        let mut store = VectorStore::open(&repo).unwrap();
        store.init_model("m", 3).unwrap();
        // Not unit length on purpose: providers do not all normalize.
        let raw = [("a.rs", [2.0f32, 0.0, 0.0]), ("b.rs", [0.0, 3.0, 0.0]), ("c.rs", [1.0, 1.0, 0.0])];
        let mut cache = HashMap::new();
        let files: Vec<FileEntry> = raw
            .iter()
            .map(|(p, v)| {
                let hash = text_hash(p);
                cache.insert(hash, v.to_vec());
                FileEntry {
                    path: p.to_string(),
                    file_hash: 1,
                    lang: "rust".into(),
                    chunks: vec![ChunkEntry { line_start: 1, line_end: 3, hash }],
                }
            })
            .collect();
        store.write(&[], &cache, &files).unwrap();
        let hits = store.knn(&[5.0, 0.0, 0.0], 3).unwrap();
        let got: Vec<(&str, f32)> =
            hits.iter().map(|h| (h.path.as_str(), (h.similarity * 1000.0).round() / 1000.0)).collect();
        assert_eq!(got, [("a.rs", 1.0), ("c.rs", 0.707), ("b.rs", 0.0)]);
        assert_eq!(store.file_vectors("b.rs").unwrap(), vec![vec![0.0, 1.0, 0.0]]);
        store.remove_files(&["a.rs".to_string()]).unwrap();
        assert_eq!(store.knn(&[1.0, 0.0, 0.0], 3).unwrap().len(), 2);
        assert_eq!(store.counts().unwrap(), (2, 2, 0));
    }
}
