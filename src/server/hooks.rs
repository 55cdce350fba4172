//! `POST /v1/hooks/validate`: the semantic gatekeeper's endpoint, what `docdex hook pre-commit`
//! calls. One `Engine::hook_validate` call on the blocking pool; the body is the engine's
//! request with the repository beside it. Its body limit is larger than the others' (staged
//! contents travel in it), still bounded.

use super::error::ApiError;
use super::extract::{confine, selector, ApiJson, ApiQuery, BodyLimit, JsonBody, RepoQuery};
use super::openapi::{Operation, Routes};
use super::state::AppState;
use crate::engine::protocol::{HookValidateRequest, HookValidateResponse, StagedFile};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, Method};
use axum::routing::post;
use axum::{Extension, Json};

/// The gatekeeper's route.
pub const HOOK_PATH: &str = "/v1/hooks/validate";

/// The body limit of `/v1/hooks/validate`: 32 MiB of staged files.
pub const HOOK_BODY_LIMIT: usize = 32 * 1024 * 1024;

/// `POST /v1/hooks/validate` body: a [`HookValidateRequest`]'s fields and the repository
/// (spelled out, not `#[serde(flatten)]`, which would buffer the staged contents once more).
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct ValidateBody {
    /// The repository: absolute path, file:// URI or repo id (default: the served repo).
    #[serde(default)]
    pub repo: Option<String>,
    /// The agent whose constraints apply (with the shared `team` ones); the server's
    /// `--agent-id`, then `[memory.profile] default_agent`, when absent; with none of them,
    /// every agent's constraints (spec 001 §5.1).
    #[serde(default)]
    pub agent_id: Option<String>,
    /// The staged files (at most 5,000; contents over 2 MiB are not checked). A file sent
    /// without content is read from the working tree.
    pub files: Vec<StagedFile>,
}

impl JsonBody for ValidateBody {}

async fn validate(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<RepoQuery>,
    ApiJson(body): ApiJson<ValidateBody>,
) -> Result<Json<HookValidateResponse>, ApiError> {
    let sel = selector(&headers, body.repo.as_deref(), q.repo.as_deref());
    let gate = state.work().clone();
    gate.run(move || {
        let repo = state.repo(sel.as_deref())?;
        // As on every other endpoint: a staged path leaving the repository is 403
        // path_outside_repo (the engine's own refusal is a bad request).
        for f in &body.files {
            confine(&repo, &f.path)?;
        }
        let agent_id = body.agent_id.filter(|a| !a.trim().is_empty()).or_else(|| state.agent(None));
        let req = HookValidateRequest { agent_id, files: body.files };
        Ok(Json(state.engine().hook_validate(&repo.root, &req)?))
    })
    .await
}

/// Adds the gatekeeper's endpoint to `routes`.
pub fn routes(routes: Routes<AppState>) -> Routes<AppState> {
    routes.route(
        Method::POST,
        HOOK_PATH,
        post(validate)
            .layer::<_, std::convert::Infallible>(DefaultBodyLimit::max(HOOK_BODY_LIMIT))
            .layer::<_, std::convert::Infallible>(Extension(BodyLimit(HOOK_BODY_LIMIT))),
        Operation::new("Check staged files against the constraints' rules (the pre-commit gatekeeper)")
            .describe("Answers `status` pass or fail and `violations` [{rule, file, line, message, preference_id, agent_id, preference}]. The staged files' content is parsed; the rest of the repository comes from the cached import graph. Constraints checked: `agent_id`'s and the team's, else the server's `--agent-id`, else every agent's. See docs/PROFILES.md.")
            .reads(&validate),
    )
}
