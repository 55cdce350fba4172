//! The waterfall's view of the capabilities other parts of the engine own: repo memory
//! (Tier 3's highest-priority context) and the impact graph (the diff's one-hop expansion).
//! Each is one narrow function, so the orchestrator never depends on how they are built and
//! a missing capability reads as "unavailable" in the trace rather than as an error.

use crate::engine::repos::RepoRef;
use crate::engine::Engine;
use crate::error::Result;

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

/// Repo memories closest to `query`, best first.
///
/// Repo memory (`memory.db`, `Engine::memory_recall`) is being built in another part of the
/// engine; until it lands this reports it as unavailable.
pub fn recall_memory(
    engine: &Engine,
    repo: &RepoRef,
    query: &str,
    limit: usize,
) -> Result<Availability<Vec<RecalledMemory>>> {
    let _ = (engine, repo, query, limit);
    Ok(Availability::Unavailable("repo memory is not part of this build yet".into()))
}

/// Files one import away from `changed` (both directions), dependents first.
///
/// The impact graph (`impact_graph.json`, `Engine::impact`) is being built in another part of
/// the engine; until it lands this reports it as unavailable.
pub fn one_hop(engine: &Engine, repo: &RepoRef, changed: &[String]) -> Result<Availability<Vec<Neighbour>>> {
    let _ = (engine, repo, changed);
    Ok(Availability::Unavailable("the impact graph is not part of this build yet".into()))
}
