//! The whole application, assembled: every endpoint file's routes (`api`,
//! `intel`, `chat`, and `mcp` when enabled) registered through [`Routes`], the
//! OpenAPI document built from that same table (`/v1/openapi.json`), the error
//! contract for unknown routes and methods, body limits and their shared budget (`budget`),
//! and the request guards
//! (the token, `auth`; the `Origin` and `Host` checks, `origin`; the header limits,
//! `listen`). Nothing imports this file
//! but `run` and the tests.

use super::budget::{self, BodyBudget};
use super::error::ApiError;
use super::extract::BodyLimit;
use super::openapi::{self, Operation, Routes};
use super::state::AppState;
use super::{api, auth, chat, hooks, intel, listen, mcp, origin, profile};
use axum::extract::DefaultBodyLimit;
use axum::http::{Method, StatusCode};
use axum::routing::get;
use axum::{middleware, Extension, Json, Router};
use serde_json::Value;
use std::sync::{Arc, OnceLock};
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use tracing::Level;

/// The whole application: HTTP endpoints, MCP transports (when enabled), the error
/// contract for unknown routes and methods, body limits and the token check. Returns the
/// router and the operations it serves (what the OpenAPI document lists).
pub fn app(state: AppState, with_mcp: bool) -> (Router, Vec<Operation>) {
    let doc: Arc<OnceLock<Value>> = Arc::new(OnceLock::new());
    let mut routes = chat::routes(hooks::routes(profile::routes(intel::routes(api::routes(Routes::default())))));
    if with_mcp {
        routes = mcp::routes(routes, &state);
    }
    let served = doc.clone();
    routes = routes.route(
        Method::GET,
        "/v1/openapi.json",
        get(move || {
            let doc = served.clone();
            async move { Json(doc.get().cloned().unwrap_or(Value::Null)) }
        }),
        Operation::new("This document"),
    );
    let (router, ops) = routes.finish();
    let _ = doc.set(openapi::document(&ops));
    let limit = state.body_limit();
    let budget = BodyBudget::new(limit, vec![(hooks::HOOK_PATH, hooks::HOOK_BODY_LIMIT)]);
    let paths: Arc<Vec<&'static str>> = Arc::new(ops.iter().map(|o| o.path).collect());
    let methods: Arc<Vec<(Method, &'static str)>> = Arc::new(ops.iter().map(|o| (o.method.clone(), o.path)).collect());
    let queries: super::extract::RouteQueries =
        Arc::new(ops.iter().filter_map(|o| o.query_parameters().map(|names| (o.path, names))).collect());
    let router = router
        // Only on matched routes (it reads the route's path); the fallbacks take no query.
        .route_layer(middleware::from_fn_with_state(queries, super::extract::known_query_only))
        .fallback(move |method: Method, uri: axum::http::Uri| {
            let paths = paths.clone();
            async move { no_route(method, uri, &paths) }
        })
        .method_not_allowed_fallback(move |method: Method, uri: axum::http::Uri| {
            let methods = methods.clone();
            async move { wrong_method(method, uri, &methods) }
        })
        // After every guard: a request refused for its token or origin takes no share.
        .layer(middleware::from_fn_with_state(budget, budget::within_budget))
        .layer(Extension(BodyLimit(limit)))
        .layer(DefaultBodyLimit::max(limit))
        .layer(middleware::from_fn(super::extract::repo_header_is_one_text))
        .layer(middleware::from_fn_with_state(state.auth().clone(), auth::require_token))
        .layer(middleware::from_fn_with_state(state.exposed(), origin::loopback_host_only))
        .layer(middleware::from_fn(origin::same_machine_pages_only))
        // Before any other check: a head over the limits is refused whatever it asks.
        .layer(middleware::from_fn(listen::headers_within_limits))
        .layer(middleware::from_fn(log_failures))
        // One span per request (method, path, version; status and latency at its end), so
        // everything an endpoint logs says which request it belongs to. Failures are logged by
        // `log_failures`: tower-http's line named no route, its span being off at `warn`. The
        // path, not the URI: tower-http's span put the query string (`?api_key=...`, a token a
        // client put there) on every line logged under `-v`.
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|req: &axum::extract::Request| {
                    tracing::info_span!("request", method = %req.method(), path = %req.uri().path(), version = ?req.version())
                })
                .on_response(DefaultOnResponse::new().level(Level::DEBUG))
                .on_failure(()),
        )
        .with_state(state);
    (router, ops)
}

/// Logs a response that failed (5xx) with its method and path (not its query, which may hold
/// a token). tower-http's "response failed classification=Status code: 503" named no route: the
/// route is in the request's span, which is at `info` and so off under the default `warn`
/// filter of `docdex serve` and `daemon`.
async fn log_failures(req: axum::extract::Request, next: middleware::Next) -> axum::response::Response {
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    let started = std::time::Instant::now();
    let resp = next.run(req).await;
    let status = resp.status();
    if status.is_server_error() {
        let latency_ms = started.elapsed().as_millis() as u64;
        tracing::error!(%method, %path, status = status.as_u16(), latency_ms, "response failed");
    }
    resp
}

fn no_route(method: Method, uri: axum::http::Uri, paths: &[&str]) -> ApiError {
    let hint = near_route(uri.path(), paths).map(|p| format!(" (did you mean {p}?)")).unwrap_or_default();
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        format!("no endpoint {method} {}{hint}; GET /v1/openapi.json lists them", uri.path()),
    )
}

/// The route a path missed by a slip clients make: a trailing slash (`/v1/search/`) or no
/// `/v1` prefix (`/search`). It was a bare "no endpoint", leaving the caller to compare
/// paths by eye.
fn near_route<'a>(path: &str, paths: &[&'a str]) -> Option<&'a str> {
    let trimmed = path.trim_end_matches('/');
    let candidates = [trimmed.to_string(), format!("/v1{trimmed}")];
    paths.iter().copied().find(|p| *p != path && candidates.iter().any(|c| c == p))
}

/// `405` naming the methods the path answers: a `GET` of an endpoint that changes state (a
/// POST, so that no page can trigger it through a browser's `GET`) says to POST it, where it
/// said only to look the methods up.
fn wrong_method(method: Method, uri: axum::http::Uri, ops: &[(Method, &str)]) -> ApiError {
    let path = uri.path();
    let mut allowed: Vec<&str> = Vec::new();
    for (m, _) in ops.iter().filter(|(_, p)| same_route(p, path)) {
        if !allowed.contains(&m.as_str()) {
            allowed.push(m.as_str());
        }
    }
    let use_instead = match allowed.as_slice() {
        [] => String::new(),
        ["POST"] => {
            " (it changes state or takes a body: send a POST with a JSON body, `Content-Type: application/json`)"
                .to_string()
        }
        [one] => format!(" (send a {one})"),
        many => format!(" (it answers {})", many.join(", ")),
    };
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("{path} does not answer {method}{use_instead}; GET /v1/openapi.json lists the methods"),
    )
}

/// Whether `path` is the route `pattern` (`/v1/dag/{session}` matches `/v1/dag/abc`).
fn same_route(pattern: &str, path: &str) -> bool {
    let (mut p, mut q) = (pattern.split('/'), path.split('/'));
    loop {
        match (p.next(), q.next()) {
            (None, None) => return true,
            (Some(a), Some(b)) if a == b || (a.starts_with('{') && a.ends_with('}') && !b.is_empty()) => {}
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::near_route;

    /// Where the test's log lines go.
    #[derive(Clone, Default)]
    struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("log buffer").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_failed_response_is_logged_with_its_method_and_path() {
        use axum::http::{Request, StatusCode};
        use tower_service::Service;
        let log = Captured::default();
        let writer = log.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::WARN)
            .finish();
        let _guard = tracing::subscriber::set_default(subscriber);
        let mut app = axum::Router::new()
            .route("/v1/busy", axum::routing::post(|| async { StatusCode::SERVICE_UNAVAILABLE }))
            .route("/v1/fine", axum::routing::get(|| async { "ok" }))
            .layer(axum::middleware::from_fn(super::log_failures));
        for (method, uri) in [("POST", "/v1/busy?token=s3cr3t"), ("GET", "/v1/fine")] {
            let req = Request::builder().method(method).uri(uri).body(axum::body::Body::empty()).expect("request");
            let _ = app.call(req).await;
        }
        let text = String::from_utf8(log.0.lock().expect("log buffer").clone()).expect("utf-8");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1, "one failure, one line: {text}");
        assert!(lines[0].contains("response failed"), "{text}");
        assert!(lines[0].contains("method=POST") && lines[0].contains("path=/v1/busy"), "{text}");
        assert!(lines[0].contains("status=503") && !lines[0].contains("s3cr3t"), "{text}");
    }

    #[test]
    fn a_wrong_method_names_the_method_to_use() {
        use axum::http::Method;
        let ops = [
            (Method::POST, "/v1/memory/store"),
            (Method::GET, "/v1/dag/{session}"),
            (Method::POST, "/v1/mcp"),
            (Method::GET, "/v1/mcp"),
        ];
        let msg = |m: Method, p: &str| super::wrong_method(m, p.parse().expect("uri"), &ops).body().error.message;
        assert_eq!(
            msg(Method::GET, "/v1/memory/store"),
            "/v1/memory/store does not answer GET (it changes state or takes a body: send a POST with a JSON body, `Content-Type: application/json`); GET /v1/openapi.json lists the methods"
        );
        assert!(msg(Method::POST, "/v1/dag/abc").contains("does not answer POST (send a GET)"));
        assert!(msg(Method::PUT, "/v1/mcp").contains("(it answers POST, GET)"));
        assert!(!msg(Method::PUT, "/v1/dag/").contains("send a GET"));
    }

    #[test]
    fn a_slipped_path_names_the_route_it_missed() {
        let paths = ["/v1/search", "/v1/memory/store", "/healthz"];
        assert_eq!(near_route("/v1/search/", &paths), Some("/v1/search"));
        assert_eq!(near_route("/search", &paths), Some("/v1/search"));
        assert_eq!(near_route("/memory/store/", &paths), Some("/v1/memory/store"));
        assert_eq!(near_route("/v1/nothing", &paths), None);
        assert_eq!(near_route("/", &paths), None);
    }
}
