//! Recalling preferences: by meaning with the `[memory.profile]` embedder (sqlite-vec, one
//! partition per agent), or by shared words when no embedder answers, with a notice. Vectors
//! are made lazily (after a write, on the first recall), and a stored model or dimension that
//! differs from the configured one is a clear error with a way out (`docdex profile reembed`),
//! never a panic or a silent mix of vector spaces.

use super::store;
use super::types::*;
use crate::engine::analysis;
use crate::engine::llm::model_matches;
use crate::engine::Engine;
use crate::error::{Error, Result};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Preferences embedded per request when catching up.
const BACKFILL_BATCH: usize = 32;
/// How long a failed embedder stays failed before it is tried again.
const RETRY_AFTER: Duration = Duration::from_secs(30);
/// Query vectors kept (a chat turn and its evolution embed the same text).
const CACHED_QUERIES: usize = 32;
/// The most preferences one recall considers.
pub const MAX_RECALL: usize = 256;

/// A cached query vector: (model, text, vector).
type CachedQuery = (String, String, Arc<Vec<f32>>);

/// A failed model-server call: when, why, and whether the server itself failed (a timeout or
/// a refused connection, as opposed to a missing model).
type Failure = (Instant, String, bool);

/// The recall side of the profile state.
#[derive(Default)]
pub(crate) struct RecallCache {
    failure: Mutex<Option<Failure>>,
    queries: Mutex<VecDeque<CachedQuery>>,
}

/// Why vectors cannot be used right now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VectorTrouble {
    /// No embedder answered (server down, model missing).
    Unavailable(String),
    /// The stored vectors and the configured embedder disagree.
    Mismatch(String),
}

impl std::fmt::Display for VectorTrouble {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VectorTrouble::Unavailable(s) | VectorTrouble::Mismatch(s) => f.write_str(s),
        }
    }
}

/// What a recall found.
#[derive(Debug, Clone)]
pub struct Recalled {
    /// By meaning or by words.
    pub mode: RecallMode,
    /// Best first.
    pub hits: Vec<PreferenceHit>,
    /// Why it fell back to words.
    pub notice: Option<String>,
}

impl Engine {
    /// The model embedding preferences: `[memory.profile] embedding_model`, else `[llm] embedding_model`.
    pub fn profile_embedding_model(&self) -> String {
        let m = self.config().memory.profile.embedding_model.trim();
        if m.is_empty() {
            self.config().llm.embedding_model.clone()
        } else {
            m.to_string()
        }
    }

    /// Embeds `texts` with the profile model; a failure is remembered for a short while so a
    /// dead server costs one attempt, not one per call. A server that does not answer the
    /// liveness check ([`Engine::profile_server_answers`]) is not asked to embed at all, and
    /// inside a chat turn a stop ends the wait.
    fn profile_embed(&self, texts: Vec<String>) -> std::result::Result<Vec<Vec<f32>>, VectorTrouble> {
        let cache = &self.profiles().recall;
        if let Some((at, why, _)) = cache.failure.lock().ok().and_then(|f| f.clone()) {
            if at.elapsed() < RETRY_AFTER {
                return Err(VectorTrouble::Unavailable(why));
            }
        }
        let model = self.profile_embedding_model();
        let provider = self.provider().map_err(|e| VectorTrouble::Unavailable(e.to_string()))?;
        self.profile_server_answers(provider.as_ref())?;
        // A model off this machine gets preferences and queries masked, as chunks are.
        let texts = crate::engine::privacy::guard_embed_inputs(provider.base_url(), texts);
        let n = texts.len();
        let result =
            self.block_on_server(async move { provider.embed(&model, texts).await }).and_then(|r| r).and_then(|v| {
                if v.len() == n && v.iter().all(|x| !x.is_empty()) {
                    Ok(v)
                } else {
                    Err(Error::Upstream(format!("the embedder returned {} vectors for {n} texts", v.len())))
                }
            });
        if let Err(Error::Cancelled) = result {
            // The turn was stopped: that says nothing about the server.
            return Err(VectorTrouble::Unavailable("the request was stopped".into()));
        }
        match result {
            Ok(v) => {
                if let Ok(mut f) = cache.failure.lock() {
                    *f = None;
                }
                Ok(v)
            }
            Err(e) => {
                let why = e.to_string();
                self.profile_remember_failure(
                    why.clone(),
                    matches!(e, Error::LlmTimeout { .. } | Error::LlmUnreachable { .. }),
                );
                Err(VectorTrouble::Unavailable(why))
            }
        }
    }

    /// Remembers a failed call for [`RETRY_AFTER`]; `down` when the server itself failed.
    fn profile_remember_failure(&self, why: String, down: bool) {
        if let Ok(mut f) = self.profiles().recall.failure.lock() {
            *f = Some((Instant::now(), why, down));
        }
    }

    /// The engine's liveness check of the model server ([`Engine::server_answers`]); one that
    /// does not answer is remembered as down for [`RETRY_AFTER`], so profile memory stores and
    /// matches by words meanwhile.
    fn profile_server_answers(
        &self,
        provider: &dyn crate::engine::llm::Provider,
    ) -> std::result::Result<(), VectorTrouble> {
        match self.server_answers(provider) {
            Ok(()) => Ok(()),
            Err(Error::Cancelled) => Err(VectorTrouble::Unavailable("the request was stopped".into())),
            Err(e) => {
                let why = e.to_string();
                self.profile_remember_failure(why.clone(), true);
                Err(VectorTrouble::Unavailable(why))
            }
        }
    }

    /// Why the model server itself failed moments ago (timed out or refused a call from
    /// profile memory), if it did: the embedder and the evolution's model share it, so one
    /// stuck server costs a statement one timeout, not one per call.
    pub(crate) fn profile_server_down(&self) -> Option<String> {
        let failure = self.profiles().recall.failure.lock().ok().and_then(|f| f.clone());
        failure.filter(|(at, _, down)| *down && at.elapsed() < RETRY_AFTER).map(|(_, why, _)| why)
    }

    /// Remembers a model-server failure seen outside the embedder (the evolution's model call).
    pub(crate) fn profile_note_server_failure(&self, e: &Error) {
        if matches!(e, Error::LlmTimeout { .. } | Error::LlmUnreachable { .. }) {
            if let Ok(mut f) = self.profiles().recall.failure.lock() {
                *f = Some((Instant::now(), e.to_string(), true));
            }
        }
    }

    /// The vector of one query (cached per model and text).
    pub(crate) fn profile_query_vector(&self, text: &str) -> std::result::Result<Arc<Vec<f32>>, VectorTrouble> {
        let model = self.profile_embedding_model();
        let cache = &self.profiles().recall;
        if let Some(v) = cache
            .queries
            .lock()
            .ok()
            .and_then(|q| q.iter().find(|(m, t, _)| *m == model && t == text).map(|(_, _, v)| v.clone()))
        {
            return Ok(v);
        }
        let v = Arc::new(self.profile_embed(vec![text.to_string()])?.pop().unwrap_or_default());
        if let Ok(mut q) = cache.queries.lock() {
            if q.len() >= CACHED_QUERIES {
                q.pop_front();
            }
            q.push_back((model, text.to_string(), v.clone()));
        }
        Ok(v)
    }

    /// Checks a vector size against `[memory.profile] embedding_dim` and the stored vectors.
    fn profile_check_dim(&self, dim: usize) -> std::result::Result<(), VectorTrouble> {
        let model = self.profile_embedding_model();
        let want = self.config().memory.profile.embedding_dim as usize;
        if want != 0 && dim != want {
            return Err(VectorTrouble::Mismatch(format!(
                "the profile embedder {model} returns {dim}-dimensional vectors, but [memory.profile] embedding_dim is {want} in {}; set embedding_dim = {dim} (or 0 to take the model's size)",
                self.config_path().display()
            )));
        }
        let stored = self
            .profile_read(|c| {
                Ok((store::has_vectors(c)?, store::meta(c, "embedding_model")?, store::meta(c, "embedding_dim")?))
            })
            .map_err(|e| VectorTrouble::Unavailable(e.to_string()))?;
        if let (true, Some(m), Some(d)) = stored {
            let d: usize = d.parse().unwrap_or(0);
            if d != dim || !model_matches(&m, &model) {
                return Err(VectorTrouble::Mismatch(format!(
                    "the preferences in {} were embedded by {m} ({d} dimensions), but the configured profile embedder is {model} ({dim} dimensions); run `docdex profile reembed` to embed them again with {model}, or set [memory.profile] embedding_model = \"{m}\"",
                    self.profile_db_path().display()
                )));
            }
        }
        Ok(())
    }

    /// Embeds every preference that has no vector yet (after writes, or after a reset), and
    /// checks `query_dim` (a query vector's size) against the stored vectors.
    pub(crate) fn profile_vectors_ready(&self, query_dim: Option<usize>) -> std::result::Result<(), VectorTrouble> {
        let unavailable = |e: Error| VectorTrouble::Unavailable(e.to_string());
        if let Some(d) = query_dim {
            self.profile_check_dim(d)?;
        }
        loop {
            let todo = self.profile_read(|c| store::unembedded(c, BACKFILL_BATCH)).map_err(unavailable)?;
            if todo.is_empty() {
                return Ok(());
            }
            let vectors = self.profile_embed(todo.iter().map(|(_, _, t)| t.clone()).collect())?;
            let dim = vectors[0].len();
            if vectors.iter().any(|v| v.len() != dim) {
                return Err(VectorTrouble::Unavailable("the embedder returned vectors of different sizes".into()));
            }
            self.profile_check_dim(dim)?;
            let model = self.profile_embedding_model();
            self.profile_write(|w| {
                if !store::has_vectors(w.conn())? {
                    w.reset_vectors(&model, dim)?;
                }
                for ((id, agent, _), v) in todo.iter().zip(&vectors) {
                    w.set_vector(id, agent, v)?;
                }
                Ok(())
            })
            .map_err(unavailable)?;
        }
    }

    /// Embeds every preference again with the configured model (after changing it).
    pub fn profile_reembed(&self) -> Result<ProfileReembedResponse> {
        let model = self.profile_embedding_model();
        let probe = self.profile_embed(vec!["docdex profile probe".into()]).map_err(|t| {
            Error::Upstream(format!("cannot re-embed: the profile embedder {model} did not answer ({t})"))
        })?;
        let dim = probe[0].len();
        let want = self.config().memory.profile.embedding_dim as usize;
        if want != 0 && want != dim {
            return Err(Error::EmbeddingMismatch(format!(
                "{model} returns {dim}-dimensional vectors, but [memory.profile] embedding_dim is {want}; set embedding_dim = {dim} (or 0) first"
            )));
        }
        let total = self.profile_write(|w| {
            w.reset_vectors(&model, dim)?;
            Ok(store::unembedded(w.conn(), usize::MAX >> 1)?.len())
        })?;
        self.profile_vectors_ready(None).map_err(|t| Error::Upstream(format!("re-embedding stopped: {t}")))?;
        tracing::info!(model, dim, total, "profile re-embedded");
        Ok(ProfileReembedResponse { model, dim, embedded: total })
    }

    /// The preferences of `agents` closest to `query`, best first (at most `limit`). By meaning
    /// when the embedder answers and the stored vectors match it; otherwise by shared words
    /// with a notice, or (with `strict`) a mismatch is an error.
    pub(crate) fn profile_recall(&self, agents: &[&str], query: &str, limit: usize, strict: bool) -> Result<Recalled> {
        let limit = limit.clamp(1, MAX_RECALL);
        let vector =
            self.profile_query_vector(query).and_then(|q| self.profile_vectors_ready(Some(q.len())).map(|_| q));
        let trouble = match vector {
            Ok(q) => {
                let hits = self.profile_read(|c| {
                    let mut scored: Vec<(String, f32)> = Vec::new();
                    for a in agents {
                        scored.extend(store::knn(c, a, &q, limit)?);
                    }
                    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                    scored.truncate(limit);
                    let mut hits = Vec::new();
                    for (id, score) in scored {
                        if let Some(p) = store::preference(c, &id)? {
                            hits.push(PreferenceHit { preference: p, similarity_score: round3(score) });
                        }
                    }
                    Ok(hits)
                })?;
                return Ok(Recalled { mode: RecallMode::Vector, hits, notice: None });
            }
            Err(t) => t,
        };
        if let (true, VectorTrouble::Mismatch(m)) = (strict, &trouble) {
            return Err(Error::EmbeddingMismatch(m.clone()));
        }
        let all = self.profile_read(|c| store::preferences_of(c, agents))?;
        let hits = text_recall(all, query, limit);
        let why = match trouble {
            VectorTrouble::Unavailable(w) => format!("no embedder answered ({w})"),
            VectorTrouble::Mismatch(m) => m,
        };
        Ok(Recalled {
            mode: RecallMode::Text,
            hits,
            notice: Some(format!("recalled by matching words, not meaning: {why}")),
        })
    }

    /// `profile search` / `docdex_get_profile`: an agent's preferences (and the team's, unless
    /// left out) closest to a query.
    pub fn profile_search(&self, req: &ProfileSearchRequest) -> Result<ProfileSearchResponse> {
        let agent = self.require_agent(&req.agent_id)?;
        let agent = agent.as_str();
        self.profile_agent_exists(agent)?;
        if req.query.trim().is_empty() {
            return Err(Error::BadRequest("empty query: say what to look for (\"testing frameworks\")".into()));
        }
        // The bounds every other query has (a 2 MB body was embedded and word-matched whole).
        crate::engine::limits::check_query(&req.query)?;
        let agents = recall_agents(agent, !req.without_team);
        let limit = search_limit(req.limit)?;
        let r = self.profile_recall(&agents, req.query.trim(), limit, true)?;
        let results = match r.mode {
            RecallMode::Vector => r.hits,
            RecallMode::Text => r.hits.into_iter().filter(|h| h.similarity_score > 0.0).collect(),
        };
        Ok(ProfileSearchResponse {
            agent_id: agent.to_string(),
            query: req.query.clone(),
            mode: r.mode,
            results,
            notice: r.notice,
        })
    }
}

/// The most preferences one profile search lists.
const MAX_SEARCH_LIMIT: usize = 100;

/// A profile search's limit (10 when not given), refused out of range as the command line
/// refuses it (0 was taken as 1 over HTTP and MCP).
fn search_limit(given: Option<usize>) -> Result<usize> {
    crate::engine::limits::count_in_range("limit", given, 10, MAX_SEARCH_LIMIT)
}

/// The agents whose preferences apply to `agent`: itself, then the team's.
pub fn recall_agents(agent: &str, with_team: bool) -> Vec<&str> {
    let mut v = vec![agent];
    if with_team && agent != TEAM_AGENT {
        v.push(TEAM_AGENT);
    }
    v
}

fn round3(x: f32) -> f32 {
    (x * 1000.0).round() / 1000.0
}

/// Every preference scored by the share of the query's words (weighted by rarity) it holds,
/// best first; ties by category (constraints first) and recency.
fn text_recall(all: Vec<Preference>, query: &str, limit: usize) -> Vec<PreferenceHit> {
    let q: Vec<String> = analysis::query_terms(query);
    let sets: Vec<HashSet<String>> = all.iter().map(|p| analysis::terms(&p.content).into_iter().collect()).collect();
    let n = all.len().max(1) as f64;
    let df: HashMap<&String, usize> = q.iter().map(|t| (t, sets.iter().filter(|s| s.contains(t)).count())).collect();
    let weight = |t: &String| (1.0 + (n - df[t] as f64 + 0.5) / (df[t] as f64 + 0.5)).ln();
    let total: f64 = q.iter().map(weight).sum::<f64>().max(1e-9);
    let mut hits: Vec<PreferenceHit> = all
        .into_iter()
        .zip(&sets)
        .map(|(p, s)| {
            let got: f64 = q.iter().filter(|t| s.contains(*t)).map(weight).sum();
            PreferenceHit { preference: p, similarity_score: round3((got / total) as f32) }
        })
        .collect();
    let rank = |c: Category| match c {
        Category::Constraint => 0,
        Category::Style => 1,
        Category::Tooling => 2,
        Category::Workflow => 3,
    };
    hits.sort_by(|a, b| {
        b.similarity_score
            .total_cmp(&a.similarity_score)
            .then(rank(a.preference.category).cmp(&rank(b.preference.category)))
            .then(b.preference.last_updated.cmp(&a.preference.last_updated))
    });
    hits.truncate(limit);
    hits
}
