//! Bearer-token authentication for every HTTP and MCP request when a token is
//! configured (`DOCDEX_AUTH_TOKEN`, `[server] auth_token` or `--auth-token`).
//! Tokens are compared in constant time over their SHA-256 digests, so neither
//! the content nor the length of the expected token leaks through timing.

use super::error::ApiError;
use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// The expected token, if any.
#[derive(Clone, Default)]
pub struct Auth {
    digest: Option<Arc<[u8; 32]>>,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth").field("required", &self.required()).finish()
    }
}

impl Auth {
    /// Requires `token` when it is non-empty; an empty or absent token disables auth.
    pub fn new(token: Option<&str>) -> Auth {
        match token.map(str::trim).filter(|t| !t.is_empty()) {
            Some(t) => Auth { digest: Some(Arc::new(digest(t))) },
            None => Auth { digest: None },
        }
    }

    /// True when requests must carry the token.
    pub fn required(&self) -> bool {
        self.digest.is_some()
    }

    /// Whether `presented` is the expected token (always true when none is required).
    pub fn accepts(&self, presented: Option<&str>) -> bool {
        match (&self.digest, presented) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(expected), Some(p)) => constant_time_eq(expected, &digest(p)),
        }
    }

    /// Checks an `Authorization` header value (`Bearer <token>`).
    pub fn accepts_header(&self, header: Option<&str>) -> bool {
        if !self.required() {
            return true;
        }
        let token = header.and_then(|h| {
            let (scheme, rest) = h.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
        });
        self.accepts(token)
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Constant-time equality of two digests.
pub fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.ct_eq(b).into()
}

/// Axum middleware: 401 with the error contract unless the request carries the token.
pub async fn require_token(State(auth): State<Auth>, req: Request, next: Next) -> Response {
    let header = req.headers().get(AUTHORIZATION).and_then(|v| v.to_str().ok());
    if auth.accepts_header(header) {
        next.run(req).await
    } else {
        let mut resp = ApiError::unauthorized().into_response();
        resp.headers_mut().insert("www-authenticate", axum::http::HeaderValue::from_static("Bearer"));
        resp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_token_configured_accepts_everything() {
        let auth = Auth::new(None);
        assert!(!auth.required());
        assert!(auth.accepts_header(None));
        assert!(Auth::new(Some("  ")).accepts_header(Some("Bearer nope")));
    }

    #[test]
    fn token_must_match_exactly() {
        let auth = Auth::new(Some("s3cret"));
        assert!(auth.required());
        assert!(auth.accepts_header(Some("Bearer s3cret")));
        assert!(auth.accepts_header(Some("bearer   s3cret ")));
        assert!(!auth.accepts_header(None));
        assert!(!auth.accepts_header(Some("Bearer s3cre")));
        assert!(!auth.accepts_header(Some("Bearer s3cret2")));
        assert!(!auth.accepts_header(Some("Basic s3cret")));
        assert!(!auth.accepts_header(Some("s3cret")));
        assert!(!auth.accepts(Some("")));
    }

    #[test]
    fn constant_time_compare_agrees_with_equality() {
        let a = digest("one");
        let b = digest("two");
        assert!(constant_time_eq(&a, &a));
        assert!(!constant_time_eq(&a, &b));
        // Digests differing only in the last byte are still unequal (no early exit on a prefix).
        let mut c = a;
        c[31] ^= 1;
        assert!(!constant_time_eq(&a, &c));
        let mut d = a;
        d[0] ^= 0x80;
        assert!(!constant_time_eq(&a, &d));
    }
}
