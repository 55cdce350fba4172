//! The web cache under `state/cache/web/`, shared by every repository and process:
//! `pages/<key>.html` (the raw HTML) and `pages/<key>.json` (the cleaned [`WebPage`]), and
//! `search/<key>.json` (discovery results). Keys are the SHA-256 of the URL (fragment removed)
//! or of the query. Entries older than `[web] cache_ttl_secs` are misses and are overwritten by
//! the next fetch; writes are atomic, so a reader never sees half an entry, and an unreadable
//! entry is a miss.

use super::types::{WebPage, WebResult};
use crate::engine::fsutil::{now_ms, read_json, replace_json, write_atomic};
use crate::error::Result;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// How far in the future an entry's time may be (clocks of processes sharing the cache).
const FUTURE_SLACK_MS: u64 = 60_000;

/// The cache root and its time-to-live.
#[derive(Debug, Clone)]
pub struct WebCache {
    root: PathBuf,
    ttl_ms: u64,
}

/// Cached discovery results.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CachedSearch {
    /// The query.
    pub query: String,
    /// When they were fetched.
    pub fetched_at: u64,
    /// `primary` or `proxy`.
    pub source: String,
    /// The results, unfiltered (the blocklist may change).
    pub results: Vec<WebResult>,
}

/// SHA-256 of `s`, hex.
pub fn sha256_hex(s: &[u8]) -> String {
    let d = Sha256::digest(s);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

impl WebCache {
    /// The cache at `state/cache/web` with a TTL in seconds.
    pub fn new(state: &Path, ttl_secs: u64) -> WebCache {
        WebCache { root: state.join("cache").join("web"), ttl_ms: ttl_secs.saturating_mul(1000) }
    }

    /// The key of a URL.
    pub fn page_key(url: &str) -> String {
        sha256_hex(url.as_bytes())[..40].to_string()
    }

    /// The cleaned JSON's path for `key`.
    pub fn page_json(&self, key: &str) -> PathBuf {
        self.root.join("pages").join(format!("{key}.json"))
    }

    fn page_html(&self, key: &str) -> PathBuf {
        self.root.join("pages").join(format!("{key}.html"))
    }

    /// Within the TTL. An entry stamped in the future (a clock set back, a hand-edited file) is
    /// stale: it would otherwise never expire.
    fn fresh(&self, fetched_at: u64) -> bool {
        let now = now_ms();
        fetched_at <= now.saturating_add(FUTURE_SLACK_MS) && now.saturating_sub(fetched_at) < self.ttl_ms
    }

    /// The cached page for `url` when it is within the TTL.
    pub fn page(&self, url: &str) -> Option<WebPage> {
        let page: WebPage = read_json(&self.page_json(&Self::page_key(url))).ok().flatten()?;
        self.fresh(page.fetched_at).then_some(page)
    }

    /// Stores a page: raw HTML, then the cleaned JSON (the JSON is what marks the entry usable).
    pub fn put_page(&self, page: &WebPage, html: &str) -> Result<String> {
        let key = Self::page_key(&page.url);
        let dir = self.root.join("pages");
        std::fs::create_dir_all(&dir).map_err(|e| crate::error::Error::io("creating directory", &dir, e))?;
        write_atomic(&self.page_html(&key), html.as_bytes())?;
        replace_json(&self.page_json(&key), page)?;
        Ok(key)
    }

    fn search_path(&self, provider: &str, query: &str) -> PathBuf {
        let key = sha256_hex(format!("{provider}\n{}", query.trim().to_lowercase()).as_bytes());
        self.root.join("search").join(format!("{}.json", &key[..40]))
    }

    /// Cached results for `query` when within the TTL.
    pub fn search(&self, provider: &str, query: &str) -> Option<CachedSearch> {
        let hit: CachedSearch = read_json(&self.search_path(provider, query)).ok().flatten()?;
        self.fresh(hit.fetched_at).then_some(hit)
    }

    /// Stores results for `query`.
    pub fn put_search(&self, provider: &str, entry: &CachedSearch) -> Result<()> {
        let path = self.search_path(provider, &entry.query);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| crate::error::Error::io("creating directory", dir, e))?;
        }
        replace_json(&path, entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::web::types::FetchVia;

    fn page(url: &str, at: u64) -> WebPage {
        WebPage {
            url: url.into(),
            final_url: url.into(),
            title: "t".into(),
            markdown: "body".into(),
            fetched_at: at,
            content_hash: sha256_hex(b"body"),
            via: FetchVia::Http,
            status: Some(200),
            html_bytes: 4,
            readable: true,
        }
    }

    #[test]
    fn pages_hit_within_the_ttl_and_miss_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let c = WebCache::new(dir.path(), 60);
        assert!(c.page("https://a.org/").is_none());
        let key = c.put_page(&page("https://a.org/", now_ms()), "<html>body</html>").unwrap();
        assert_eq!(c.page("https://a.org/").unwrap().markdown, "body");
        assert!(dir.path().join(format!("cache/web/pages/{key}.html")).is_file());
        c.put_page(&page("https://a.org/", now_ms() - 61_000), "x").unwrap();
        assert!(c.page("https://a.org/").is_none(), "expired");
        c.put_page(&page("https://a.org/", now_ms() + 3_600_000), "x").unwrap();
        assert!(c.page("https://a.org/").is_none(), "stamped an hour ahead: never fresh, or it would never expire");
        std::fs::write(dir.path().join(format!("cache/web/pages/{key}.json")), "{corrupt").unwrap();
        assert!(c.page("https://a.org/").is_none(), "an unreadable entry is a miss");
        let s = CachedSearch {
            query: "Tokio Channels".into(),
            fetched_at: now_ms(),
            source: "primary".into(),
            results: vec![],
        };
        c.put_search("ddg", &s).unwrap();
        assert!(c.search("ddg", " tokio channels").is_some(), "queries are keyed case-insensitively");
        assert!(c.search("ddg", "other").is_none());
    }
}
