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
        self.refusal(&header.into_iter().map(Some).collect::<Vec<_>>()).is_none()
    }

    /// Why a request carrying these `Authorization` fields (their values; `None` for one that
    /// is not visible ASCII) is refused, if it is: no field, more than one, not text, not a bearer token, or not
    /// this server's token. The message never repeats what was sent but a scheme's name. It was
    /// one "missing or wrong token" for all, and with two fields only the first counted.
    pub fn refusal(&self, fields: &[Option<&str>]) -> Option<String> {
        const SEND: &str = "send `Authorization: Bearer <token>` with the token the server was started with (DOCDEX_AUTH_TOKEN, [server] auth_token or --auth-token)";
        if !self.required() {
            return None;
        }
        let field = match fields {
            [] => return Some(format!("this server requires a token: {SEND}")),
            [Some(one)] => one.trim(),
            // Bytes beyond visible ASCII (a token pasted with `€` in it): not "not a bearer
            // token", which sent the client looking at the scheme.
            [None] => {
                return Some(format!("the Authorization header is not visible ASCII text, as a token must be: {SEND}"))
            }
            many => return Some(format!("the request carries {} Authorization headers: {SEND}, once", many.len())),
        };
        let bearer = field.split_once(' ').filter(|(s, _)| s.eq_ignore_ascii_case("bearer"));
        match (bearer, field.split_once(' ')) {
            (Some((_, token)), _) if self.accepts(Some(token.trim())) => None,
            (Some(_), _) => Some(format!("the bearer token sent is not this server's: {SEND}")),
            (None, Some((scheme, _)))
                if scheme.len() <= 24 && scheme.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') =>
            {
                Some(format!("the Authorization header is not a bearer token (its scheme is {scheme}): {SEND}"))
            }
            (None, _) => Some(format!("the Authorization header is not `Bearer <token>`: {SEND}")),
        }
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Constant-time equality of two digests.
pub fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.ct_eq(b).into()
}

/// Axum middleware: 401 with the error contract, saying what was wrong, unless the request
/// carries the token in its one `Authorization` field.
pub async fn require_token(State(auth): State<Auth>, req: Request, next: Next) -> Response {
    let fields: Vec<Option<&str>> = req.headers().get_all(AUTHORIZATION).iter().map(|v| v.to_str().ok()).collect();
    match auth.refusal(&fields) {
        None => next.run(req).await,
        Some(why) => {
            let mut resp = ApiError::unauthorized(why).into_response();
            resp.headers_mut().insert("www-authenticate", axum::http::HeaderValue::from_static("Bearer"));
            resp
        }
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
    fn each_refusal_says_what_was_wrong_and_never_repeats_the_token() {
        let auth = Auth::new(Some("s3cret-token"));
        let why = |fields: &[Option<&str>]| auth.refusal(fields).unwrap_or_default();
        assert!(why(&[]).starts_with("this server requires a token: send `Authorization: Bearer <token>`"));
        assert!(why(&[Some("Bearer nope")]).starts_with("the bearer token sent is not this server's"));
        assert!(why(&[Some("Basic czNjcmV0")]).contains("not a bearer token (its scheme is Basic)"));
        let bare = why(&[Some("s3cret-token")]);
        assert!(
            bare.starts_with("the Authorization header is not `Bearer <token>`") && !bare.contains("s3cret"),
            "{bare}"
        );
        assert!(why(&[None]).starts_with("the Authorization header is not visible ASCII text"));
        // Two fields: refused whichever holds the token (the first alone decided).
        for two in
            [[Some("Bearer s3cret-token"), Some("Bearer nope")], [Some("Bearer nope"), Some("Bearer s3cret-token")]]
        {
            assert!(why(&two).starts_with("the request carries 2 Authorization headers"), "{two:?}");
        }
        assert_eq!(auth.refusal(&[Some("Bearer s3cret-token")]), None);
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
