//! The waterfall's view of the capabilities other parts of the engine own: repo memory
//! (Tier 3's highest-priority context) and the impact graph (the diff's one-hop expansion).
//! Each is one narrow function, so the orchestrator never depends on how they are built and
//! a missing capability reads as "unavailable" in the trace rather than as an error.

use crate::engine::code::impact::Relation;
use crate::engine::memory::MemoryRecallRequest;
use crate::engine::repos::RepoRef;
use crate::engine::Engine;
use crate::error::Result;
use std::collections::HashMap;

/// A memory recalled for the question.
#[derive(Debug, Clone, PartialEq)]
pub struct RecalledMemory {
    /// The memory's id.
    pub id: String,
    /// What was stored.
    pub content: String,
    /// Similarity to the question (higher is closer).
    pub score: f32,
}

/// A file one import away from a changed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbour {
    /// The neighbour (repo-relative).
    pub path: String,
    /// The changed file it is linked to.
    pub changed: String,
    /// True when the neighbour imports the changed file (so the change may affect it);
    /// false when the changed file imports the neighbour.
    pub dependent: bool,
    /// The line of the import statement in the importing file, when known.
    pub line: Option<u32>,
}

/// Why a capability gave nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Availability<T> {
    /// It answered.
    Ready(T),
    /// It does not exist for this repo or build yet; the text says why.
    Unavailable(String),
}

/// Repo memories closest to `query`, best first (`Engine::memory_recall`), with the recall's
/// notice when it fell back to matching words. Recall leaves out memories barely related in
/// meaning (`memory::MIN_MEMORY_SIMILARITY`), which matters most here: the memory slot has the
/// highest priority in the budget, so an unrelated note would push out repo code.
pub fn recall_memory(
    engine: &Engine,
    repo: &RepoRef,
    query: &str,
    limit: usize,
) -> Result<Availability<(Vec<RecalledMemory>, Option<String>)>> {
    let query = crate::engine::limits::fit_query(query);
    let req = MemoryRecallRequest { query: query.into_owned(), limit: Some(limit) };
    let resp = engine.memory_recall(&repo.root, &req)?;
    let hits = resp
        .results
        .into_iter()
        .map(|h| RecalledMemory { id: h.memory.id, content: h.memory.content, score: h.score })
        .collect();
    Ok(Availability::Ready((hits, resp.notice)))
}

/// At most `limit` files one import away from `changed` (both directions), dependents first,
/// through the impact graph (`Engine::impact_neighbors`). Unavailable when the repository has
/// no graph yet.
pub fn one_hop(
    engine: &Engine,
    repo: &RepoRef,
    changed: &[String],
    limit: usize,
) -> Result<Availability<Vec<Neighbour>>> {
    let (_, graph) = engine.impact_graph(&repo.root)?;
    if graph.graph.files.is_empty() {
        let why = graph.graph.warnings.first().cloned().unwrap_or_else(|| {
            "the impact graph has no code files for this repository; `docdex graph rebuild` builds it".into()
        });
        return Ok(Availability::Unavailable(why));
    }
    let near = engine.impact_neighbors(&repo.root, changed, 1)?;
    let mut out: Vec<Neighbour> = near
        .files
        .into_iter()
        .map(|n| Neighbour {
            changed: n.changed.first().cloned().unwrap_or_default(),
            dependent: n.relation != Relation::ImportedByChanged,
            line: None,
            path: n.path,
        })
        .collect();
    // Files that use a changed file matter most: the change may alter their behaviour.
    out.sort_by_key(|n| !n.dependent);
    out.truncate(limit);
    // Where each dependent imports its changed file, so its context shows the use.
    let wanted: HashMap<(&str, &str), usize> = out
        .iter()
        .enumerate()
        .filter(|(_, n)| n.dependent)
        .map(|(i, n)| ((n.path.as_str(), n.changed.as_str()), i))
        .collect();
    let lines: Vec<(usize, u32)> = graph
        .graph
        .edges
        .iter()
        .filter_map(|e| wanted.get(&(e.source.as_str(), e.target.as_str())).map(|&i| (i, e.line)))
        .collect();
    for (i, line) in lines {
        out[i].line = Some(line);
    }
    Ok(Availability::Ready(out))
}
