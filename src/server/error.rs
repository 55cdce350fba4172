//! The one error contract every HTTP endpoint answers with:
//! `{"error": {"code": "...", "message": "..."}}` and a status that fits the code.
//! Engine errors map through [`Error::code`], so the CLI's `--json` errors, the
//! HTTP bodies and MCP tool errors all use the same codes. Axum's own plain-text
//! rejections (bad JSON, oversized bodies, unknown routes) are replaced by this
//! contract too (by the extractors in [`super::extract`]): a client never has to
//! parse two error shapes.

use crate::error::Error;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The body of every error response.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// Code and message of an error.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ErrorDetail {
    /// Stable machine-readable code: `unknown_repo`, `not_indexed`, `stale_index`, `bad_request`,
    /// `unauthorized`, `payload_too_large`, `path_outside_repo`, `upstream_unavailable`, ...
    pub code: String,
    /// What went wrong and what to do about it.
    pub message: String,
}

/// An error on its way to becoming an HTTP response.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Contract code.
    pub code: &'static str,
    /// Human message.
    pub message: String,
    /// Seconds a `Retry-After` header asks the client to wait (a refusal for load, `503 busy`).
    pub retry_after: Option<u64>,
    /// The request field at fault, for the surfaces that name it (the OpenAI-shaped chat
    /// route's `param`); not part of the error contract's body.
    pub param: Option<&'static str>,
}

impl ApiError {
    /// An error with an explicit status and code.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError { status, code, message: bounded(message.into()), retry_after: None, param: None }
    }

    /// The same error, naming `field` as the one at fault.
    pub fn on_param(mut self, field: &'static str) -> Self {
        self.param = Some(field);
        self
    }

    /// The same error answered with `Retry-After: secs`.
    pub fn with_retry_after(mut self, secs: u64) -> Self {
        self.retry_after = Some(secs);
        self
    }

    /// 400 `bad_request`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// 401 `unauthorized`, saying what was wrong with the request's token.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    /// 404 `unknown_repo`.
    pub fn unknown_repo(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "unknown_repo", message)
    }

    /// 413 `payload_too_large`.
    pub fn payload_too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("request body is larger than the {limit}-byte limit"),
        )
    }

    /// The JSON body.
    pub fn body(&self) -> ErrorBody {
        ErrorBody { error: ErrorDetail { code: self.code.to_string(), message: self.message.clone() } }
    }
}

/// The longest error message sent: messages that quote a caller's value do so through
/// [`crate::error::quoted`], but some quote it in words docdex does not choose (serde's "invalid
/// type: string \"...\"", an engine path); those are cut here.
pub const MAX_MESSAGE_BYTES: usize = 2048;

/// `message` within [`MAX_MESSAGE_BYTES`]: its start and its end (where the advice usually is),
/// with what was left out counted between them.
pub fn bounded(message: String) -> String {
    if message.len() <= MAX_MESSAGE_BYTES {
        return message;
    }
    let head = floor_char_boundary(&message, MAX_MESSAGE_BYTES / 2);
    let tail = ceil_char_boundary(&message, message.len() - MAX_MESSAGE_BYTES / 4);
    format!("{} … ({} bytes left out) … {}", &message[..head], tail - head, &message[tail..])
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// The HTTP status for an engine error code.
pub fn status_for(code: &str) -> StatusCode {
    match code {
        "unknown_repo" | "not_found" | "unknown_agent" => StatusCode::NOT_FOUND,
        "not_indexed" | "stale_index" | "index_busy" | "embedding_mismatch" | "conflict" => StatusCode::CONFLICT,
        "bad_request" | "context_length_exceeded" | "model_cannot_chat" => StatusCode::BAD_REQUEST,
        "path_outside_repo" | "path_not_served" => StatusCode::FORBIDDEN,
        "unauthorized" => StatusCode::UNAUTHORIZED,
        "payload_too_large" => StatusCode::PAYLOAD_TOO_LARGE,
        "unsupported_media_type" => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "forbidden_origin" | "forbidden_host" | "forbidden_repo" => StatusCode::FORBIDDEN,
        "upstream_unavailable"
        | "model_not_found"
        | "unavailable"
        | "busy"
        | "shutting_down"
        | "index_damaged"
        | "index_stopped"
        | "cancelled" => StatusCode::SERVICE_UNAVAILABLE,
        "disk_full" => StatusCode::INSUFFICIENT_STORAGE,
        "request_timeout" => StatusCode::REQUEST_TIMEOUT,
        "deadline_exceeded" => StatusCode::GATEWAY_TIMEOUT,
        "headers_too_large" => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        "uri_too_long" => StatusCode::URI_TOO_LONG,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        let code = e.code();
        ApiError { status: status_for(code), code, message: bounded(e.to_string()), retry_after: None, param: None }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::warn!(code = self.code, "{}", self.message);
        }
        if self.status == StatusCode::REQUEST_TIMEOUT {
            // The rest of the body may never come: do not wait on it for the next request.
            let close = [(axum::http::header::CONNECTION, "close")];
            return (self.status, close, axum::Json(self.body())).into_response();
        }
        let mut resp = (self.status, axum::Json(self.body())).into_response();
        if let Some(secs) = self.retry_after {
            resp.headers_mut().insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from(secs));
        }
        resp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_errors_keep_their_code_and_get_a_fitting_status() {
        let internal = ApiError::from(Error::poisoned("the mount table"));
        assert_eq!((internal.status, internal.code), (StatusCode::INTERNAL_SERVER_ERROR, "internal"));
        let bad = ApiError::from(Error::BadRequest("empty query".into()));
        assert_eq!((bad.status, bad.code), (StatusCode::BAD_REQUEST, "bad_request"));
    }

    #[test]
    fn long_messages_keep_their_start_and_end_within_the_bound() {
        let long = format!("bad thing \"{}\": do this instead", "é".repeat(100_000));
        let cut = ApiError::bad_request(long.clone()).message;
        assert!(cut.len() <= MAX_MESSAGE_BYTES + 64, "{}", cut.len());
        assert!(cut.starts_with("bad thing \"é") && cut.ends_with("\": do this instead"), "{cut}");
        assert!(cut.contains(" bytes left out) … "), "{cut}");
        assert_eq!(ApiError::bad_request("short").message, "short");
    }
}
