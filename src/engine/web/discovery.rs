//! Discovery: DuckDuckGo's HTML endpoint, parsed.
//!
//! What the parser relies on: results are `div.result` blocks (ads carry `result--ad`); the title
//! link is `a.result__a`, whose href is a redirect `//duckduckgo.com/l/?uddg=<target>&rut=...`
//! (decoded here); the snippet is `.result__snippet`; the display URL `.result__url`. A page with
//! no results is only "no results" when it says so (`.no-results`); otherwise it is a bot
//! challenge ("anomaly") or some other page, and the query is reported as blocked.

use super::types::WebResult;
use scraper::{Html, Selector};

/// What a results page said.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// Results (none when the page said there were none).
    Results(Vec<WebResult>),
    /// A challenge or unrecognised page: nothing is known.
    Blocked(String),
}

fn sel(s: &str) -> Option<Selector> {
    Selector::parse(s).ok()
}

/// Parses a DuckDuckGo HTML results page.
pub fn parse(html: &str) -> Parsed {
    // The parser is superlinear in nesting depth, size and a tag's attributes: a results page
    // past what any real one holds (a broken or hostile proxy) is refused instead of parsed for
    // minutes.
    if let Some(why) = super::shallow::too_costly(html) {
        return Parsed::Blocked(format!("the results page cannot be parsed in time: {why}"));
    }
    let doc = Html::parse_document(html);
    let (Some(result), Some(link), Some(snippet), Some(display)) =
        (sel("div.result"), sel("a.result__a"), sel(".result__snippet"), sel(".result__url"))
    else {
        return Parsed::Blocked("selector error".into());
    };
    let mut out = Vec::new();
    for r in doc.select(&result) {
        let classes: Vec<&str> = r.value().classes().collect();
        if classes.iter().any(|c| c.starts_with("result--ad")) {
            continue;
        }
        let Some(a) = r.select(&link).next() else { continue };
        let Some(href) = a.value().attr("href") else { continue };
        let Some(url) = decode_href(href) else { continue };
        let text = |e: Option<scraper::ElementRef<'_>>| {
            e.map(|e| e.text().collect::<String>().split_whitespace().collect::<Vec<_>>().join(" ")).unwrap_or_default()
        };
        out.push(WebResult {
            rank: out.len() as u32 + 1,
            url,
            title: text(Some(a)),
            snippet: text(r.select(&snippet).next()),
            display_url: text(r.select(&display).next()),
        });
    }
    if !out.is_empty() {
        return Parsed::Results(out);
    }
    let said_none = sel(".no-results").is_some_and(|s| doc.select(&s).next().is_some());
    if said_none {
        return Parsed::Results(Vec::new());
    }
    let lower = html.to_ascii_lowercase();
    let why = if lower.contains("anomaly") || lower.contains("challenge") || lower.contains("captcha") {
        "DuckDuckGo answered with a bot challenge (anomaly page) instead of results"
    } else {
        "the discovery endpoint answered a page without results or a no-results notice (probably a block page)"
    };
    Parsed::Blocked(why.into())
}

/// The target of a result link: the `uddg` parameter of DuckDuckGo's redirect, or the link
/// itself when it is already absolute.
pub fn decode_href(href: &str) -> Option<String> {
    let absolute = if href.starts_with("//") { format!("https:{href}") } else { href.to_string() };
    let base = url::Url::parse("https://duckduckgo.com/").ok()?;
    let u = base.join(&absolute).ok()?;
    if u.host_str().is_some_and(|h| h.ends_with("duckduckgo.com")) && u.path().starts_with("/l/") {
        return u.query_pairs().find(|(k, _)| k == "uddg").map(|(_, v)| v.into_owned());
    }
    matches!(u.scheme(), "http" | "https").then(|| u.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    pub const RESULTS: &str = r##"<html><body><div class="serp__results"><div id="links" class="results">
<div class="result results_links results_links_deep result--ad result--ad--small"><div class="links_main links_deep result__body">
<h2 class="result__title"><a rel="nofollow" class="result__a" href="https://duckduckgo.com/y.js?ad_provider=x&u3=https%3A%2F%2Fads.example%2F">Sponsored thing</a></h2>
<a class="result__snippet" href="#">Buy now</a></div></div>
<div class="result results_links results_links_deep web-result "><div class="links_main links_deep result__body">
<h2 class="result__title"><a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fdocs.rs%2Ftokio%2Flatest%2Ftokio%2Fsync%2Findex.html%3Fa%3D1%26b%3D2&amp;rut=abc123">tokio::sync - <b>Rust</b></a></h2>
<div class="result__extras"><div class="result__extras__url"><a class="result__url" href="//duckduckgo.com/l/?uddg=x">docs.rs/tokio/latest/tokio/sync/index.html</a></div></div>
<a class="result__snippet" href="//duckduckgo.com/l/?uddg=x">Synchronization primitives for use in <b>asynchronous</b> contexts.</a></div></div>
<div class="result results_links results_links_deep web-result "><div class="links_main links_deep result__body">
<h2 class="result__title"><a rel="nofollow" class="result__a" href="https://tokio.rs/tokio/tutorial/channels">Channels | Tokio</a></h2>
<a class="result__snippet" href="#">Message passing between tasks.</a></div></div>
</div></div></body></html>"##;

    #[test]
    fn results_are_parsed_ads_skipped_and_redirects_decoded() {
        let Parsed::Results(r) = parse(RESULTS) else { panic!("blocked") };
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!(r[0].url, "https://docs.rs/tokio/latest/tokio/sync/index.html?a=1&b=2");
        assert_eq!(r[0].title, "tokio::sync - Rust");
        assert_eq!(r[0].snippet, "Synchronization primitives for use in asynchronous contexts.");
        assert_eq!(r[0].display_url, "docs.rs/tokio/latest/tokio/sync/index.html");
        assert_eq!((r[0].rank, r[1].rank), (1, 2));
        assert_eq!(r[1].url, "https://tokio.rs/tokio/tutorial/channels");
    }

    #[test]
    fn a_results_page_nested_too_deep_is_blocked_at_once() {
        let deep = format!("<html><body>{}{}</body></html>", "<div>".repeat(200_000), RESULTS);
        let t = std::time::Instant::now();
        let Parsed::Blocked(why) = parse(&deep) else { panic!("parsed") };
        assert!(why.contains("nests deeper"), "{why}");
        assert!(t.elapsed() < std::time::Duration::from_secs(5), "{:?}", t.elapsed());
        // One tag of 150,000 attributes (under 2 MiB) kept the parser busy for minutes.
        let attrs: Vec<String> = (0..150_000).map(|i| format!("a{i}=\"x\"")).collect();
        let wide = format!("<html><body><p {}>x</p>{RESULTS}</body></html>", attrs.join(" "));
        let Parsed::Blocked(why) = parse(&wide) else { panic!("parsed") };
        assert!(why.contains("cannot be parsed in time"), "{why}");
    }

    #[test]
    fn a_challenge_is_blocked_and_a_no_results_page_is_empty() {
        let challenge = r#"<html><body><div class="anomaly-modal__title">Unfortunately, bots use DuckDuckGo too.</div>
            <form id="challenge-form" action="//duckduckgo.com/anomaly.js"></form></body></html>"#;
        assert!(matches!(parse(challenge), Parsed::Blocked(w) if w.contains("anomaly")));
        assert!(matches!(parse("<html><body>Service unavailable</body></html>"), Parsed::Blocked(_)));
        let none = r#"<html><body><div class="results"><div class="no-results">No results.</div></div></body></html>"#;
        assert_eq!(parse(none), Parsed::Results(vec![]));
    }
}
