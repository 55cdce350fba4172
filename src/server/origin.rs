//! Who may call: requests whose `Host` is not this machine's loopback are refused
//! unless the server was started with `--expose` (so a web page cannot reach a
//! local docdex through DNS rebinding). The token check is in [`super::auth`].

use super::error::ApiError;
use axum::extract::State;
use axum::http::StatusCode;
use axum::middleware;

/// True for `Host` values naming this machine's loopback (`localhost`, `127.x.y.z`, `[::1]`),
/// with or without a port.
pub fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host
            .rsplit_once(':')
            .map_or(host, |(h, port)| if port.chars().all(|c| c.is_ascii_digit()) { h } else { host }),
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Refuses requests whose `Host` is not loopback when the server is not exposed: a web page
/// cannot reach a local docdex through DNS rebinding.
pub async fn loopback_host_only(
    State(exposed): State<bool>,
    req: axum::extract::Request,
    next: middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let host = req.headers().get(axum::http::header::HOST).and_then(|h| h.to_str().ok());
    match host {
        Some(h) if !exposed && !is_loopback_host(h) => ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden_host",
            format!("Host {h:?} is not this machine's loopback; docdex serves local clients only (use --expose with a token for others)"),
        )
        .into_response(),
        _ => next.run(req).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for h in ["localhost", "localhost:3210", "127.0.0.1", "127.0.0.1:80", "[::1]:3210", "[::1]", "LOCALHOST:1"] {
            assert!(is_loopback_host(h), "{h}");
        }
        for h in
            ["evil.example", "evil.example:3210", "10.0.0.1:3210", "localhost.evil.example", "[::2]:1", "0.0.0.0:3210"]
        {
            assert!(!is_loopback_host(h), "{h}");
        }
    }
}
