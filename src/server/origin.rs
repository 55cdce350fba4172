//! Who may call. Any web page the user opens can send requests to 127.0.0.1, so:
//! a browser request from another origin (an `Origin` header that is not this
//! machine's loopback, or `Sec-Fetch-Site: cross-site` whatever the `Origin`) is refused; requests whose `Host` is not loopback are refused unless
//! the server was started with `--expose` (so DNS rebinding cannot reach a local
//! docdex either); and JSON endpoints take `application/json` only
//! ([`super::extract::ApiJson`]), which a page cannot send cross-origin without a
//! preflight this server never grants. The token check is in [`super::auth`].

use super::error::ApiError;
use axum::extract::State;
use axum::http::StatusCode;
use axum::middleware;

/// True for `Host` values naming this machine's loopback (`localhost`, `127.x.y.z`, `[::1]`),
/// with or without a port.
pub fn is_loopback_host(host: &str) -> bool {
    let port_or_none =
        |p: &str| p.is_empty() || p.strip_prefix(':').is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()));
    let name = match host.strip_prefix('[') {
        // Only a port may follow the brackets: `[::1]evil.example` and `[::1]:80.evil` passed.
        Some(rest) => match rest.split_once(']') {
            Some((addr, after)) if port_or_none(after) => addr,
            _ => return false,
        },
        None => host
            .rsplit_once(':')
            .map_or(host, |(h, port)| if port.chars().all(|c| c.is_ascii_digit()) { h } else { host }),
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// True for an `Origin` naming this machine's loopback over http(s) (`http://localhost:3000`,
/// `https://127.0.0.1`, `http://[::1]:8080`). `null` (sandboxed frames, files) is not.
pub fn is_loopback_origin(origin: &str) -> bool {
    let rest = match origin.split_once("://") {
        Some(("http" | "https", rest)) => rest,
        _ => return false,
    };
    !rest.contains('/') && !rest.contains('@') && is_loopback_host(rest)
}

/// Refuses browser requests made from a page of another origin: cross-site request forgery
/// against a tokenless local server (store a memory that then feeds chat, mount `/`).
pub async fn same_machine_pages_only(req: axum::extract::Request, next: middleware::Next) -> axum::response::Response {
    use axum::response::IntoResponse;
    let headers = req.headers();
    // Every `Origin` field counts: checking only the first let `localhost` vouch for a second
    // field naming another site (no browser sends two, but a proxy may merge them).
    let origins: Vec<&str> =
        headers.get_all(axum::http::header::ORIGIN).iter().map(|o| o.to_str().unwrap_or("<not text>")).collect();
    let origin = origins.iter().find(|o| !is_loopback_origin(o)).or(origins.first()).copied();
    let fetch_site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
    // A browser's own word that the page is of another site counts whatever the `Origin`: a
    // page of `localhost:8000` calling `127.0.0.1:3210` is cross-site to it (a site is a host,
    // not a port, so a page of `127.0.0.1:8000` is same-site and passes).
    let refused = match origin {
        Some(o) if !is_loopback_origin(o) => Some(format!("a page of origin {o:?}")),
        _ if fetch_site == Some("cross-site") => {
            Some("a page of another site (Sec-Fetch-Site: cross-site)".to_string())
        }
        _ => None,
    };
    match refused {
        Some(who) => ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden_origin",
            format!("{who} may not call docdex: a browser lets any page it opens send requests to docdex wherever it listens (127.0.0.1, or the network when exposed), so requests from pages not served from loopback are refused; call docdex from a program, or from a page on localhost"),
        )
        .into_response(),
        None => next.run(req).await,
    }
}

/// Refuses requests whose `Host` is not loopback when the server is not exposed: a web page
/// cannot reach a local docdex through DNS rebinding.
pub async fn loopback_host_only(
    State(exposed): State<bool>,
    req: axum::extract::Request,
    next: middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let why = if exposed { None } else { foreign_host(&req) };
    match why {
        Some(why) => ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden_host",
            format!("{why}; docdex serves local clients only (use --expose with a token for others)"),
        )
        .into_response(),
        None => next.run(req).await,
    }
}

/// Why the request does not name this machine's loopback, if it does not. Every name it gives
/// counts, not only the first `Host` field: the request target's authority (HTTP/2's
/// `:authority`, which carries no `Host` field, and HTTP/1.1's absolute form, which servers
/// take over `Host`) and each `Host` field; a `Host` that is not text, or none at all on
/// HTTP/1.1 (which requires one), is refused too. Only checking the first `Host` as text let
/// such requests through whatever name they were sent to.
fn foreign_host(req: &axum::extract::Request) -> Option<String> {
    let target = req.uri().authority().map(|a| a.as_str().to_string());
    let fields = req.headers().get_all(axum::http::header::HOST);
    if target.is_none() && fields.iter().next().is_none() && req.version() == axum::http::Version::HTTP_11 {
        return Some("the request names no Host (HTTP/1.1 requires one)".to_string());
    }
    let mut names = target.into_iter().collect::<Vec<_>>();
    for field in fields {
        match field.to_str() {
            Ok(h) => names.push(h.to_string()),
            Err(_) => return Some(format!("Host {:?} is not text", String::from_utf8_lossy(field.as_bytes()))),
        }
    }
    names.into_iter().find(|h| !is_loopback_host(h)).map(|h| format!("Host {h:?} is not this machine's loopback"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_origins() {
        for o in ["http://localhost:3000", "https://127.0.0.1", "http://[::1]:8080", "http://127.0.0.5:1"] {
            assert!(is_loopback_origin(o), "{o}");
        }
        for o in [
            "http://[::1]evil.example",
            "http://evil.example",
            "null",
            "file://",
            "http://localhost.evil.example",
            "http://127.0.0.1.evil.example",
            "ws://localhost",
            "http://evil.example@localhost",
            "http://localhost/x",
            "",
        ] {
            assert!(!is_loopback_origin(o), "{o}");
        }
    }

    #[test]
    fn loopback_hosts() {
        for h in ["localhost", "localhost:3210", "127.0.0.1", "127.0.0.1:80", "[::1]:3210", "[::1]", "LOCALHOST:1"] {
            assert!(is_loopback_host(h), "{h}");
        }
        for h in [
            "evil.example",
            "evil.example:3210",
            "10.0.0.1:3210",
            "localhost.evil.example",
            "[::2]:1",
            "0.0.0.0:3210",
            "[::1]evil.example",
            "[::1]:3210.evil.example",
            "[::1]:x",
            "[::1",
        ] {
            assert!(!is_loopback_host(h), "{h}");
        }
    }
}
