//! Which URLs the web tier may touch.
//!
//! The rule, in order:
//! 1. Only `http` and `https`; never `file://`, `data:`, `chrome:` or anything else.
//! 2. A host on `[web] blocklist` (a domain suffix: `example.com` also blocks `docs.example.com`)
//!    is never searched for nor fetched, however the URL arrived.
//! 3. Loopback, private-network, link-local and other non-public addresses (by IP literal,
//!    `localhost`, or what the host name resolves to) are refused for URLs docdex *discovered*
//!    (search results, redirects, a page's sub-resources), unless the host is on
//!    `[web] allow_hosts`. URLs the user typed on the command line (`docdex web-fetch URL`) and
//!    the endpoints the user configured (`ddg_base_url`, the proxy, the registries of
//!    `[libs]`) are the user's own choice and are allowed.
//!
//! 4. A URL carrying a user name or password (`https://user:token@host/`) is refused unless it
//!    is a configured endpoint: what is fetched is kept (the web cache, chat sources, the DAG
//!    log), and credentials must not be.
//!
//! Every rule compares the host in one canonical spelling ([`canonical_host`]): lower-case,
//! IDNA and percent-decoding as the URL parser does them, IPv4 in any of its spellings
//! (`2130706433`, `0x7f.1`) as the dotted address, and without trailing dots. `localhost.` is
//! the same host as `localhost` to Chromium and to DNS, and `example.com.` the same as
//! `example.com`; before, the trailing dot let both past the rules.
//!
//! Tests run everything against loopback fixture servers by putting `127.0.0.1` on
//! `allow_hosts` (or passing the URL explicitly), which is the same path a user takes for an
//! intranet documentation server.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, ToSocketAddrs};
use url::{Host, Url};

/// How a URL reached the web tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Typed by the user on the command line.
    Explicit,
    /// A configured endpoint (discovery, proxy, package registries).
    Configured,
    /// Found by docdex: a search result, a redirect, a sub-resource.
    Discovered,
}

/// The URL rules of one configuration.
#[derive(Debug, Clone, Default)]
pub struct UrlPolicy {
    blocklist: Vec<String>,
    allow_hosts: Vec<String>,
}

/// Why a URL was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl UrlPolicy {
    /// Rules from `[web] blocklist` and `[web] allow_hosts` (case-insensitive, leading and
    /// trailing dots ignored).
    pub fn new(blocklist: &[String], allow_hosts: &[String]) -> UrlPolicy {
        let norm = |v: &[String]| {
            v.iter()
                .map(|s| normalize_host(s.trim().trim_start_matches('.')))
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
        };
        UrlPolicy { blocklist: norm(blocklist), allow_hosts: norm(allow_hosts) }
    }

    /// Parses `raw` and applies the rules; the parsed URL (fragment removed) when allowed.
    pub fn check_str(&self, raw: &str, origin: Origin) -> Result<Url, Refusal> {
        let mut url = Url::parse(raw.trim())
            .map_err(|e| Refusal(format!("{raw:?} is not a URL ({e}); give a full http(s) URL")))?;
        url.set_fragment(None);
        self.check(&url, origin)?;
        Ok(url)
    }

    /// Applies the rules to a parsed URL.
    pub fn check(&self, url: &Url, origin: Origin) -> Result<(), Refusal> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Refusal(format!("{url}: only http and https URLs are fetched, not {}:", url.scheme())));
        }
        let Some(host) = canonical_host(url) else {
            return Err(Refusal(format!("{url}: no host")));
        };
        if let Some(b) = self.blocked_by(&host) {
            return Err(Refusal(format!("{host} is on the blocklist ({b} in [web] blocklist / DOCDEX_WEB_BLOCKLIST)")));
        }
        if origin != Origin::Configured && (!url.username().is_empty() || url.password().is_some()) {
            // Named without them: the refusal itself is printed and logged.
            let mut bare = url.clone();
            let _ = bare.set_username("");
            let _ = bare.set_password(None);
            return Err(Refusal(format!(
                "{bare}: a URL with a user name or password is not fetched (the web cache, the chat's sources and the DAG log keep the URLs fetched, so the credentials would be stored in plain text); fetch it without them"
            )));
        }
        if origin != Origin::Discovered || self.allowed_host(&host) {
            return Ok(());
        }
        if let Some(why) = non_public(&host, url.port_or_known_default().unwrap_or(80)) {
            return Err(Refusal(format!(
                "{url}: {why}; discovered URLs may not reach loopback or private networks (add the host to [web] allow_hosts / DOCDEX_WEB_ALLOW_HOSTS to allow it)"
            )));
        }
        Ok(())
    }

    /// The blocklist entry that blocks `host`, if any (`host` in any spelling: see
    /// [`normalize_host`]).
    pub fn blocked_by(&self, host: &str) -> Option<&str> {
        let host = normalize_host(host);
        self.blocklist.iter().find(|b| suffix_match(&host, b)).map(String::as_str)
    }

    /// True when `host` is on `allow_hosts` (`host` in any spelling: see [`normalize_host`]).
    pub fn allowed_host(&self, host: &str) -> bool {
        let host = normalize_host(host);
        self.allow_hosts.iter().any(|a| suffix_match(&host, a))
    }

    /// Whether a sub-request of a page may go to `url`: the page's own host (already judged),
    /// or what the rules allow for a discovered URL.
    pub fn allows_subrequest(&self, url: &Url, page_host: &str) -> bool {
        if !matches!(url.scheme(), "http" | "https" | "data" | "blob") {
            return false;
        }
        if matches!(url.scheme(), "data" | "blob") {
            return true;
        }
        let Some(host) = canonical_host(url) else { return false };
        if self.blocked_by(&host).is_some() {
            return false;
        }
        if host == normalize_host(page_host) || self.allowed_host(&host) {
            return true;
        }
        // Literal addresses and `localhost` only: resolving every sub-resource host would stall
        // the page; the browser's own private-network rules cover names that resolve inward.
        literal_non_public(&host).is_none()
    }
}

/// The host of `url` as every rule compares it: an IP address in its one textual form (the URL
/// parser already reads `2130706433`, `0x7f.1` and `127.1` as `127.0.0.1`), a name lower-case,
/// IDNA- and percent-decoded (also the parser's work) and without trailing dots. `None` when the
/// URL has no host, or only dots.
pub fn canonical_host(url: &Url) -> Option<String> {
    let host = match url.host()? {
        Host::Ipv4(ip) => ip.to_string(),
        Host::Ipv6(ip) => ip.to_string(),
        Host::Domain(name) => normalize_host(name),
    };
    (!host.is_empty()).then_some(host)
}

/// A host name or address as the rules compare it: brackets, surrounding blanks and trailing
/// dots removed, lower-case, and an address that parses (`127.0.0.1.` once its dot is gone,
/// `[::1]`) written in its one textual form.
pub fn normalize_host(host: &str) -> String {
    let bare = host.trim().trim_matches(['[', ']']).trim_end_matches('.').to_ascii_lowercase();
    match bare.parse::<IpAddr>() {
        Ok(ip) => ip.to_string(),
        Err(_) => bare,
    }
}

fn suffix_match(host: &str, entry: &str) -> bool {
    host == entry || host.strip_suffix(entry).is_some_and(|rest| rest.ends_with('.'))
}

/// Why `host` is not a public address (a literal, `localhost`, or by resolving it).
fn non_public(host: &str, port: u16) -> Option<String> {
    if let Some(why) = literal_non_public(host) {
        return Some(why);
    }
    if host.parse::<IpAddr>().is_ok() {
        return None;
    }
    // A name: refuse it when any address it resolves to is not public. A name that does not
    // resolve is left to fail at fetch time with its own error.
    let addrs = (host, port).to_socket_addrs().ok()?;
    for a in addrs {
        if let Some(why) = ip_non_public(a.ip()) {
            return Some(format!("{host} resolves to {} ({why})", a.ip()));
        }
    }
    None
}

/// Names Chromium (`net::IsLocalHostname`) and the usual `/etc/hosts` give this machine, whatever
/// DNS says.
const LOCAL_NAMES: &[&str] = &["localhost", "localhost.localdomain", "localhost6", "localhost6.localdomain6"];

pub(crate) fn literal_non_public(host: &str) -> Option<String> {
    let host = normalize_host(host);
    if LOCAL_NAMES.contains(&host.as_str()) || host.ends_with(".localhost") {
        return Some(format!("{host} is this machine"));
    }
    host.parse::<IpAddr>().ok().and_then(|ip| ip_non_public(ip).map(|why| format!("{ip} is {why}")))
}

/// The kind of non-public address `ip` is, if it is one.
pub fn ip_non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_non_public(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped().or_else(|| nat64_embedded(v6)) {
                return v4_non_public(v4);
            }
            v6_non_public(v6)
        }
    }
}

fn v4_non_public(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_private() {
        Some("a private-network address")
    } else if ip.is_link_local() {
        Some("a link-local address")
    } else if ip.is_unspecified() || o[0] == 0 {
        Some("an unspecified address")
    } else if o[0] == 100 && (64..128).contains(&o[1]) {
        Some("a shared (carrier-grade NAT) address")
    } else if ip.is_broadcast() || ip.is_multicast() || o[0] >= 240 {
        Some("a broadcast, multicast or reserved address")
    } else {
        None
    }
}

/// The IPv4 address a NAT64 address (`64:ff9b::/96`) reaches through the network's gateway.
fn nat64_embedded(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    (s[..6] == [0x64, 0xff9b, 0, 0, 0, 0]).then(|| Ipv4Addr::from((u32::from(s[6]) << 16) | u32::from(s[7])))
}

fn v6_non_public(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_unspecified() {
        Some("an unspecified address")
    } else if (s[0] & 0xfe00) == 0xfc00 {
        Some("a unique-local (private) address")
    } else if (s[0] & 0xffc0) == 0xfe80 {
        Some("a link-local address")
    } else if ip.is_multicast() {
        Some("a multicast address")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> UrlPolicy {
        UrlPolicy::new(&["Pinterest.com".into(), ".spam.example".into()], &["127.0.0.1".into()])
    }

    #[test]
    fn credentials_in_a_url_are_refused_unless_configured_and_never_repeated() {
        let p = policy();
        for origin in [Origin::Explicit, Origin::Discovered] {
            for raw in ["https://user:s3cret@docs.example.org/p", "https://tok3n@docs.example.org/p"] {
                let why = p.check_str(raw, origin).expect_err(raw).0;
                assert!(
                    why.contains("user name or password") && why.starts_with("https://docs.example.org/p"),
                    "{why}"
                );
                assert!(!why.contains("s3cret") && !why.contains("tok3n"), "{why}");
            }
        }
        assert!(p.check_str("https://user:pw@registry.example.org/", Origin::Configured).is_ok());
        assert!(p.check_str("https://docs.example.org/p", Origin::Explicit).is_ok());
    }

    #[test]
    fn only_http_and_https() {
        let p = policy();
        assert!(p.check_str("file:///etc/passwd", Origin::Explicit).unwrap_err().0.contains("only http and https"));
        assert!(p.check_str("chrome://settings", Origin::Explicit).is_err());
        assert!(p.check_str("not a url", Origin::Explicit).is_err());
        let u = p.check_str("https://docs.rs/serde#frag", Origin::Discovered).unwrap();
        assert_eq!(u.as_str(), "https://docs.rs/serde");
    }

    #[test]
    fn the_blocklist_matches_domain_suffixes_whatever_the_origin() {
        let p = policy();
        for url in ["https://pinterest.com/x", "https://www.pinterest.com/x", "http://a.spam.example/"] {
            let e = p.check_str(url, Origin::Explicit).unwrap_err();
            assert!(e.0.contains("blocklist"), "{e}");
        }
        assert!(p.check_str("https://notpinterest.com/", Origin::Discovered).is_ok());
    }

    #[test]
    fn private_targets_are_refused_only_when_discovered_and_not_allowed() {
        let p = policy();
        for url in [
            "http://127.0.0.2:8080/",
            "http://localhost/",
            "http://10.1.2.3/",
            "http://192.168.0.1/",
            "http://172.20.0.1/",
            "http://169.254.169.254/latest/meta-data",
            "http://[::1]/",
            "http://[fd00::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://0.0.0.0/",
            "http://100.64.0.1/",
        ] {
            let e = p.check_str(url, Origin::Discovered).unwrap_err();
            assert!(e.0.contains("allow_hosts"), "{url}: {e}");
            assert!(p.check_str(url, Origin::Explicit).is_ok(), "{url}");
            assert!(p.check_str(url, Origin::Configured).is_ok(), "{url}");
        }
        assert!(p.check_str("http://127.0.0.1:9/x", Origin::Discovered).is_ok(), "allow-listed");
        assert!(p.check_str("http://93.184.215.14/", Origin::Discovered).is_ok(), "public literal");
    }

    /// `localhost.` is `localhost` to Chromium (and `example.com.` is `example.com` to DNS), and
    /// the trailing dot took both past every rule: a redirect to `http://localhost.:8766/` made
    /// the browser fetch a local admin page, and a blocked `example.com.` was requested.
    #[test]
    fn every_spelling_of_a_host_is_judged_as_the_host() {
        let p = UrlPolicy::new(&["example.com".into(), "tracker.example.".into()], &[]);
        for url in [
            "http://localhost.:8766/e",
            "http://LOCALHOST./",
            "http://foo.localhost.:8766/k",
            "http://foo.localhost../",
            "http://localhost..../",
            "http://%6c%6fcalhost/",
            "http://ｌｏｃａｌｈｏｓｔ/",
            "http://localhost\u{3002}/",
            "http://localhost.localdomain./",
            "http://localhost6/",
            "http://127.0.0.1./",
            "http://127.0.0.1../",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://0177.0.0.1/",
            "http://127.1/",
            "http://0/",
            "http://0.0.0.0./",
            "http://[::1]/",
            "http://[0:0:0:0:0:0:0:1]/",
            "http://[::ffff:7f00:1]/",
            "http://[64:ff9b::a9fe:a9fe]/",
        ] {
            let e = p.check_str(url, Origin::Discovered).expect_err(url);
            assert!(e.0.contains("allow_hosts"), "{url}: {e}");
        }
        for url in [
            "http://example.com./",
            "http://EXAMPLE.com../",
            "http://sub.example.com./x",
            "https://tracker.example/",
            "https://a.tracker.example./",
        ] {
            let e = p.check_str(url, Origin::Explicit).expect_err(url);
            assert!(e.0.contains("blocklist"), "{url}: {e}");
            assert!(!p.allows_subrequest(&Url::parse(url).unwrap(), "docs.example.org"), "{url}");
        }
        let allowed = UrlPolicy::new(&[], &["docs.intranet.".into()]);
        assert!(allowed.check_str("http://docs.intranet./", Origin::Discovered).is_ok());
        assert!(!p.allows_subrequest(&Url::parse("http://localhost.:5/x").unwrap(), "docs.example.org"));
        assert!(p.allows_subrequest(&Url::parse("http://docs.example.org./a.js").unwrap(), "docs.example.org"));
        assert!(p.check_str("http://./", Origin::Explicit).is_err(), "only dots is no host");
    }

    #[test]
    fn subrequests_follow_the_page_host_and_the_rules() {
        let p = UrlPolicy::new(&[], &[]);
        let u = |s: &str| Url::parse(s).unwrap();
        assert!(p.allows_subrequest(&u("http://127.0.0.1:5/app.js"), "127.0.0.1"));
        assert!(!p.allows_subrequest(&u("http://127.0.0.2:5/secret"), "127.0.0.1"));
        assert!(!p.allows_subrequest(&u("http://192.168.1.1/"), "example.org"));
        assert!(p.allows_subrequest(&u("https://cdn.example.net/a.js"), "example.org"));
        assert!(p.allows_subrequest(&u("data:text/plain,hi"), "example.org"));
        assert!(!p.allows_subrequest(&u("file:///etc/passwd"), "example.org"));
    }
}
