//! The profile-memory endpoints (`/v1/profile/*`). Profile memory is global, not per
//! repository, so these name no repository; a request without `agent_id` gets the server's
//! `--agent-id` (then `[memory.profile] default_agent`). Each handler is one `Engine` call on
//! the blocking pool; the bodies are the engine's request types as they are.

use super::error::ApiError;
use super::extract::{selector, ApiJson, ApiQuery, JsonBody, RepoQuery};
use super::openapi::{Operation, Routes};
use super::state::AppState;
use crate::engine::protocol::{DagTarget, EvolutionOutcome, ProjectMap, ProjectMapRequest, SavePreferenceRequest};
use crate::engine::protocol::{
    ProfileAddRequest, ProfileEditRequest, ProfileListRequest, ProfileListResponse, ProfileManifest,
    ProfileRemoveRequest, ProfileRemoveResponse, ProfileRoleRequest, ProfileRoleResponse, ProfileSearchRequest,
    ProfileSearchResponse, ProfileWriteResponse,
};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::Json;

/// `POST /v1/profile/learn` body: a [`SavePreferenceRequest`], and the repository whose
/// reasoning DAG records the decision (the served one when absent).
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct LearnBody {
    /// The repository: absolute path, file:// URI or repo id (default: the served repo; none
    /// on a daemon, then the decision is not logged in a DAG).
    #[serde(default)]
    pub repo: Option<String>,
    /// The statement.
    #[serde(flatten)]
    pub learn: SavePreferenceRequest,
}

impl JsonBody for LearnBody {}
impl JsonBody for ProfileAddRequest {}
impl JsonBody for ProfileRoleRequest {}
impl JsonBody for ProfileEditRequest {}
impl JsonBody for ProfileSearchRequest {}
impl JsonBody for ProfileRemoveRequest {}

/// Fills an empty agent id with the server's default.
fn with_agent(state: &AppState, agent: &mut String) {
    if agent.trim().is_empty() {
        if let Some(a) = state.agent(None) {
            *agent = a;
        }
    }
}

async fn list(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<ProfileListRequest>,
) -> Result<Json<ProfileListResponse>, ApiError> {
    let engine = state.engine().clone();
    state.work().run(move || Ok(Json(engine.profile_list(&q)?))).await
}

async fn add(
    State(state): State<AppState>,
    ApiJson(mut req): ApiJson<ProfileAddRequest>,
) -> Result<Json<ProfileWriteResponse>, ApiError> {
    with_agent(&state, &mut req.agent_id);
    let engine = state.engine().clone();
    state.work().run(move || Ok(Json(engine.profile_add(&req)?))).await
}

async fn role(
    State(state): State<AppState>,
    ApiJson(mut req): ApiJson<ProfileRoleRequest>,
) -> Result<Json<ProfileRoleResponse>, ApiError> {
    with_agent(&state, &mut req.agent_id);
    let engine = state.engine().clone();
    state.work().run(move || Ok(Json(engine.profile_set_role(&req)?))).await
}

async fn edit(
    State(state): State<AppState>,
    ApiJson(req): ApiJson<ProfileEditRequest>,
) -> Result<Json<ProfileWriteResponse>, ApiError> {
    let engine = state.engine().clone();
    state.work().run(move || Ok(Json(engine.profile_edit(&req)?))).await
}

async fn search(
    State(state): State<AppState>,
    ApiJson(mut req): ApiJson<ProfileSearchRequest>,
) -> Result<Json<ProfileSearchResponse>, ApiError> {
    with_agent(&state, &mut req.agent_id);
    let engine = state.engine().clone();
    state.work().run(move || Ok(Json(engine.profile_search(&req)?))).await
}

async fn remove(
    State(state): State<AppState>,
    ApiJson(req): ApiJson<ProfileRemoveRequest>,
) -> Result<Json<ProfileRemoveResponse>, ApiError> {
    let engine = state.engine().clone();
    state.work().run(move || Ok(Json(engine.profile_remove(&req)?))).await
}

async fn learn(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<RepoQuery>,
    ApiJson(mut body): ApiJson<LearnBody>,
) -> Result<Json<EvolutionOutcome>, ApiError> {
    with_agent(&state, &mut body.learn.agent_id);
    let sel = selector(&headers, body.repo.as_deref(), q.repo.as_deref());
    let gate = state.work().clone();
    gate.run(move || {
        let dag = match (&sel, state.default_repo()) {
            (None, None) => None,
            _ => Some(DagTarget { repo: state.repo(sel.as_deref())?, session: None, parent: None }),
        };
        Ok(Json(state.engine().profile_learn(&body.learn, dag)?))
    })
    .await
}

/// `GET /v1/map` query.
#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
pub struct MapQuery {
    /// The agent (default: the server's `--agent-id`, then `[memory.profile] default_agent`).
    #[serde(default)]
    pub agent_id: Option<String>,
    /// Build it again even when cached.
    #[serde(default)]
    pub refresh: Option<bool>,
    /// The repository: absolute path, file:// URI or repo id (defaults to the served repo).
    #[serde(default)]
    pub repo: Option<String>,
}

async fn map(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<MapQuery>,
) -> Result<Json<ProjectMap>, ApiError> {
    let sel = selector(&headers, None, q.repo.as_deref());
    let gate = state.work().clone();
    gate.run(move || {
        let repo = state.repo_to_read(sel.as_deref())?;
        let req =
            ProjectMapRequest { agent_id: state.agent(q.agent_id.as_deref()), refresh: q.refresh.unwrap_or(false) };
        state.engine().project_map(&repo.root, &req).map(Json).map_err(|e| state.explain(&repo, e))
    })
    .await
}

async fn export(State(state): State<AppState>) -> Result<Json<ProfileManifest>, ApiError> {
    let engine = state.engine().clone();
    state.work().run(move || Ok(Json(engine.profile_export()?))).await
}

/// Adds the profile endpoints to `routes`.
pub fn routes(routes: Routes<AppState>) -> Routes<AppState> {
    routes
        .get(
            "/v1/profile/list",
            list,
            Operation::new("Agents with their preference counts; one agent's preferences with `agent_id`"),
        )
        .post(
            "/v1/profile/add",
            add,
            Operation::new("Teach an agent a preference directly (no model involved)")
                .describe("Creates the agent when new; a `role` (one line of plain text) replaces an existing agent's, and `previous_role` says what it was. A constraint's `rule` is checked against the grammar (400 with the reason when bad); without one, common phrasings are recognised (\"avoid circular dependencies\" -> no-import-cycles). See docs/PROFILES.md."),
        )
        .post(
            "/v1/profile/role",
            role,
            Operation::new("Set an agent's role alone (no preference added)")
                .describe("Creates the agent when new (with `agent_note`). The role (one line of plain text; it steers the project map) is stamped after the one it replaces, so it wins the next sync; `previous_role` says what it was, and `changed: false` means the agent had it already. See docs/PROFILES.md."),
        )
        .post(
            "/v1/profile/edit",
            edit,
            Operation::new("Change a preference's text, category or rule"),
        )
        .post(
            "/v1/profile/search",
            search,
            Operation::new("An agent's preferences (and the team's) closest to a query")
                .describe("By meaning (`mode: vector`) or, when no embedder answers, by shared words (`mode: text` with a `notice`). 409 `embedding_mismatch` when the stored vectors came from another model or size: run `docdex profile reembed`."),
        )
        .post(
            "/v1/profile/remove",
            remove,
            Operation::new("Forget a preference (or, with `agent: true`, an agent and all its preferences)"),
        )
        .post(
            "/v1/profile/learn",
            learn,
            Operation::new("Run a statement through the evolution pipeline (recall, the model's decision, the write)")
                .describe("Answers the decision: `action` ADD, UPDATE (with `target_preference_id` and `previous_content`), IGNORE or REFUSE (harmful or contradicting, with the reason), `decided_by` model, policy or fallback (no model: duplicates ignored, the rest added). Logged in the repository's reasoning DAG when one is named or served."),
        )
        .get(
            "/v1/map",
            map,
            Operation::new("The project map for an agent: the files that matter to it, the rest collapsed (500 tokens)")
                .describe("Cached per agent in the repository's state (`maps/<agent>.json`) until the watcher sees a directory created or deleted; `refresh=true` rebuilds it."),
        )
        .get(
            "/v1/profile/export",
            export,
            Operation::new("The whole profile as a sync manifest (what `docdex profile import` merges)"),
        )
}
