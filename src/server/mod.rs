//! Headless surfaces over the engine: the HTTP API (axum) and MCP (rmcp) over
//! streamable HTTP, the legacy SSE pair and stdio. Both are thin: each endpoint
//! or tool resolves the repository the request names, runs one `Engine` call
//! on the blocking pool, and returns the engine's own types as JSON.
//!
//! Process model: `docdex serve` serves one repo, `docdex daemon` many (mounted
//! through `POST /v1/initialize`, guarded by `~/.docdex/daemon.lock`), and
//! `docdex mcp` speaks MCP on stdio. All of them mount their repos through
//! [`mounts::Mounts`], whose keepers ([`crate::Engine::keep_fresh`]) keep indexes
//! fresh without ever becoming a second writer, and shut down gracefully on
//! SIGINT/SIGTERM.
//!
//! Floors, bottom up (no file imports one above it): `error` (the error
//! contract), `arguments` (naming the field a body or tool call got wrong), `extract` (request extractors and handler helpers) and `work` (the bound on
//! engine calls running at once, and their cancellation when the client leaves), `state`
//! (what handlers share), the endpoint files (`api`, `intel`, `profile`, `hooks`, `chat`, `mcp/`),
//! `router` (assembles them with the OpenAPI document, `openapi`, and the
//! request guards, `auth`, `origin` and `budget`, the memory budget of request bodies), `listen` (connections: the cap, timeouts, eviction
//! of idle ones; `head_errors`, hyper's bare answers to unparsable heads in the error
//! contract), and `run` (the process).

pub mod api;
mod arguments;
pub mod auth;
pub mod budget;
pub mod chat;
pub mod error;
pub mod extract;
mod head_errors;
pub mod hooks;
pub mod intel;
pub mod listen;
pub mod lockfile;
pub mod mcp;
pub mod mounts;
pub mod openapi;
pub mod origin;
pub mod profile;
mod repo_select;
pub mod router;
pub mod run;
mod shutdown;
mod stall;
pub mod state;
pub mod work;

pub use repo_select::parse_repo_selector;
pub use router::app;
pub use run::{run, ServerOptions};
pub use state::{AppState, Mode};
