//! A warm in-memory copy of a repo's vectors, so a long-running process (the
//! server, the TUI, MCP, a benchmark) answers nearest-neighbour queries from RAM
//! instead of scanning `vectors.db` on every query. sqlite-vec stays the store of
//! record and answers the first query of each store revision (a one-shot
//! `docdex search` never pays for a copy); the second query of a revision loads the
//! copy, and every write bumps the revision. Repos whose vectors exceed
//! [`RESIDENT_MAX_BYTES`] are always searched in sqlite-vec. Measured on 16.5k chunks
//! × 384 dimensions: sqlite-vec's exact scan costs tens of milliseconds a query; the
//! copy answers in a few (docs/PERFORMANCE.md).

use super::store::{unit, VectorHit, VectorStore};
use crate::error::Result;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Largest copy kept in memory per repo (vectors only).
pub const RESIDENT_MAX_BYTES: usize = 64 << 20;

/// One repo's vectors in memory.
pub struct Resident {
    revision: u64,
    dim: usize,
    hits: Vec<VectorHit>,
    /// `hits.len() × dim` unit-length components, row-major.
    flat: Vec<f32>,
}

impl Resident {
    /// Loads the store's vectors (all of the same dimension `dim`).
    pub fn load(store: &VectorStore, revision: u64, dim: usize) -> Result<Resident> {
        let all = store.all()?;
        let mut hits = Vec::with_capacity(all.len());
        let mut flat = Vec::with_capacity(all.len() * dim);
        for (hit, v) in all {
            if v.len() == dim {
                flat.extend_from_slice(&v);
                hits.push(hit);
            }
        }
        Ok(Resident { revision, dim, hits, flat })
    }

    /// The `k` chunks most similar to `query` (cosine), best first; ties by path and line.
    pub fn knn(&self, query: &[f32], k: usize) -> Vec<VectorHit> {
        if k == 0 || self.hits.is_empty() || query.len() != self.dim {
            return Vec::new();
        }
        let q = unit(query);
        let mut scored: Vec<(f32, usize)> =
            self.flat.chunks_exact(self.dim).enumerate().map(|(i, v)| (dot(&q, v), i)).collect();
        let k = k.min(scored.len());
        let order = |a: &(f32, usize), b: &(f32, usize)| {
            let (ha, hb) = (&self.hits[a.1], &self.hits[b.1]);
            b.0.total_cmp(&a.0).then_with(|| ha.path.cmp(&hb.path)).then(ha.line_start.cmp(&hb.line_start))
        };
        if k < scored.len() {
            scored.select_nth_unstable_by(k - 1, order);
            scored.truncate(k);
        }
        scored.sort_by(order);
        scored.into_iter().map(|(s, i)| VectorHit { similarity: s, ..self.hits[i].clone() }).collect()
    }
}

/// Dot product with independent accumulators (so the compiler can vectorize it).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let tail: f32 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    acc.iter().sum::<f32>() + tail
}

/// What the engine holds for a repo: its copy, or the revision it saw once (not copied yet).
enum Slot {
    Seen(u64),
    Loaded(Arc<Resident>),
}

/// The engine's copies, one per repo fingerprint.
#[derive(Default)]
pub struct ResidentVectors {
    map: Mutex<HashMap<String, Slot>>,
}

impl ResidentVectors {
    /// Nearest neighbours for a repo: from its in-memory copy (loaded or refreshed as
    /// needed), or from sqlite-vec when the vectors are too large to keep.
    pub fn knn(
        &self,
        fingerprint: &str,
        store: &VectorStore,
        dim: usize,
        query: &[f32],
        k: usize,
    ) -> Result<Vec<VectorHit>> {
        let revision = store.revision()?;
        let (_, chunks, _) = store.counts()?;
        if chunks as usize * dim * 4 > RESIDENT_MAX_BYTES {
            return store.knn(query, k);
        }
        let Ok(mut map) = self.map.lock() else { return store.knn(query, k) };
        let resident = match map.get(fingerprint) {
            Some(Slot::Loaded(r)) if r.revision == revision && r.dim == dim => r.clone(),
            Some(Slot::Seen(seen)) if *seen == revision => {
                let r = Arc::new(Resident::load(store, revision, dim)?);
                map.insert(fingerprint.to_string(), Slot::Loaded(r.clone()));
                r
            }
            _ => {
                map.insert(fingerprint.to_string(), Slot::Seen(revision));
                drop(map);
                return store.knn(query, k);
            }
        };
        drop(map);
        Ok(resident.knn(query, k))
    }

    /// Forgets a repo's copy (when it is removed).
    pub fn forget(&self, fingerprint: &str) {
        if let Ok(mut map) = self.map.lock() {
            map.remove(fingerprint);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::embed::store::{text_hash, ChunkEntry, FileEntry};
    use crate::engine::repos::RepoRef;

    #[test]
    fn the_resident_copy_ranks_like_sqlite_vec_and_follows_writes() {
        let dir = tempfile::tempdir().unwrap();
        let repo = RepoRef::new(dir.path().into(), "fp".into(), dir.path().join("s"));
        let mut store = VectorStore::open(&repo).unwrap();
        let dim = 24;
        store.init_model("m", dim).unwrap();
        let mut seed = 1u64;
        let mut rnd = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        };
        let write = |store: &mut VectorStore, from: usize, n: usize, rnd: &mut dyn FnMut() -> f32| {
            let mut cache = HashMap::new();
            let files: Vec<FileEntry> = (from..from + n)
                .map(|i| {
                    let hash = text_hash(&format!("chunk {i}"));
                    cache.insert(hash, (0..dim).map(|_| rnd()).collect::<Vec<f32>>());
                    FileEntry {
                        path: format!("f{i:03}.rs"),
                        file_hash: i as u64,
                        lang: "rust".into(),
                        chunks: vec![ChunkEntry { line_start: 1, line_end: 9, hash }],
                    }
                })
                .collect();
            let fresh: Vec<_> = cache.iter().map(|(h, v)| (*h, v.clone())).collect();
            store.write(&fresh, &cache, &files).unwrap();
        };
        write(&mut store, 0, 300, &mut rnd);
        let resident = ResidentVectors::default();
        let q: Vec<f32> = (0..dim).map(|_| rnd()).collect();
        let paths = |hits: &[VectorHit]| hits.iter().map(|h| h.path.clone()).collect::<Vec<_>>();
        let from_disk = store.knn(&q, 20).unwrap();
        // The first query of a revision is answered by sqlite-vec, the second from memory.
        assert_eq!(paths(&resident.knn("fp", &store, dim, &q, 20).unwrap()), paths(&from_disk));
        let from_ram = resident.knn("fp", &store, dim, &q, 20).unwrap();
        assert!(matches!(resident.map.lock().unwrap().get("fp"), Some(Slot::Loaded(_))));
        assert_eq!(paths(&from_ram), paths(&from_disk));
        for (a, b) in from_ram.iter().zip(&from_disk) {
            assert!((a.similarity - b.similarity).abs() < 1e-4, "{} vs {}", a.similarity, b.similarity);
        }
        // A write bumps the revision: the copy is reloaded and sees the new chunks.
        let before = store.revision().unwrap();
        write(&mut store, 300, 50, &mut rnd);
        assert!(store.revision().unwrap() > before);
        for _ in 0..2 {
            assert_eq!(resident.knn("fp", &store, dim, &q, 400).unwrap().len(), 350);
        }
        assert!(matches!(resident.map.lock().unwrap().get("fp"), Some(Slot::Loaded(r)) if r.hits.len() == 350));
        store.remove_files(&["f000.rs".to_string()]).unwrap();
        for _ in 0..2 {
            assert_eq!(resident.knn("fp", &store, dim, &q, 400).unwrap().len(), 349);
        }
    }
}
