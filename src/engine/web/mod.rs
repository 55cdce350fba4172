//! The web tier (Tier 2 of the waterfall): discovery through DuckDuckGo's HTML endpoint, pages
//! fetched by headless Chromium (or plain HTTP without a browser), readable Markdown out of
//! them, and the best passages for a question. Everything is guarded: URL rules (`policy`),
//! rate limits that hold across processes (`spacing`), a bounded number of pages at once, a
//! page timeout, a size cap, a cache under `state/cache/web` (`cache`), and a browser that never
//! outlives docdex (`browser`). Surfaces call the `Engine` methods here and nothing below them.

pub mod browser;
pub mod cache;
mod chrome;
pub mod discovery;
mod egress;
pub mod extract;
pub mod fetch;
pub mod passages;
pub mod policy;
pub mod shallow;
mod source;
pub mod spacing;
pub mod types;

use crate::engine::cancel::{CancelToken, CANCEL_TICK};
use crate::engine::fsutil::now_ms;
use crate::engine::search::types::SearchRequest;
use crate::engine::Engine;
use crate::error::{Error, Result};
use browser::{BrowserDirs, Chromium};
use cache::{sha256_hex, CachedSearch, WebCache};
use discovery::Parsed;
use policy::{Origin, UrlPolicy};
use spacing::Spacer;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};
use types::*;
use url::Url;

/// A discovery answer of 429 or 5xx is retried once when the pause it asks for is at most this.
const MAX_INLINE_BACKOFF: Duration = Duration::from_secs(10);
/// Longest pause a 429 can impose.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// After a browser failed to start, plain HTTP is used for this long before trying again.
const LAUNCH_RETRY: Duration = Duration::from_secs(60);
/// Passages per page in research, by default.
const PASSAGES_PER_PAGE: usize = 3;

/// The web tier's per-engine state: the shared browser, the fetch permits, the HTTP client.
#[derive(Default)]
pub(crate) struct WebState {
    browser: Mutex<BrowserSlot>,
    permits: Mutex<usize>,
    freed: Condvar,
    client: OnceLock<reqwest::Client>,
    /// More browser arguments, set by tests only ([`Engine::set_browser_args_for_tests`]).
    extra_browser_args: Mutex<Vec<String>>,
}

#[derive(Default)]
pub(crate) enum BrowserSlot {
    #[default]
    Untried,
    Running(Arc<Chromium>),
    Unavailable(String, Instant),
}

impl WebState {
    /// The browser slot, for closing it when the engine goes away.
    pub(crate) fn browser_slot(&self) -> std::result::Result<BrowserSlotGuard<'_>, ()> {
        self.browser.lock().map(BrowserSlotGuard).map_err(|_| ())
    }
}

/// The locked browser slot.
pub(crate) struct BrowserSlotGuard<'a>(std::sync::MutexGuard<'a, BrowserSlot>);

impl BrowserSlotGuard<'_> {
    /// Closes the browser held, if any.
    pub(crate) fn take(&mut self) {
        *self.0 = BrowserSlot::Untried;
    }
}

/// One of `[core] max_concurrent_fetches` permits; freed on drop.
struct Permit<'a>(&'a WebState);

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if let Ok(mut n) = self.0.permits.lock() {
            *n = n.saturating_sub(1);
        }
        self.0.freed.notify_one();
    }
}

/// The most a registry's JSON document may hold (see [`Engine::registry_json`]).
pub const MAX_REGISTRY_JSON_BYTES: u64 = 64 * 1024 * 1024;

impl Engine {
    fn web(&self) -> &WebState {
        &self.inner.web
    }

    fn url_policy(&self) -> UrlPolicy {
        UrlPolicy::new(&self.config().web.blocklist, &self.config().web.allow_hosts)
    }

    fn web_cache(&self) -> WebCache {
        WebCache::new(&self.inner.paths.state, self.config().web.cache_ttl_secs)
    }

    fn spacer(&self) -> Spacer {
        Spacer::new(&self.inner.paths.locks())
    }

    fn browser_dirs(&self) -> BrowserDirs {
        BrowserDirs::new(&self.inner.paths.state)
    }

    fn http_client(&self) -> Result<&reqwest::Client> {
        if let Some(c) = self.web().client.get() {
            return Ok(c);
        }
        let c = fetch::client(&self.config().web.user_agent)?;
        let _ = self.web().client.set(c);
        self.web().client.get().ok_or_else(|| Error::Upstream("HTTP client unavailable".into()))
    }

    fn page_timeout(&self) -> Duration {
        Duration::from_secs(self.config().web.scraper.page_load_timeout_secs.max(1))
    }

    /// Runs `fut` (a request to the web) on the engine's runtime unless `cancel` trips first:
    /// then the request is dropped (its connection closed) and this is [`Error::Cancelled`].
    fn block_on_unless<F: std::future::Future>(&self, cancel: &CancelToken, fut: F) -> Result<F::Output> {
        cancel.check()?;
        self.block_on(async move {
            tokio::select! {
                out = fut => Ok(out),
                _ = cancel.cancelled() => Err(Error::Cancelled),
            }
        })?
    }

    fn ensure_web_enabled(&self) -> Result<()> {
        if self.config().web.enabled {
            Ok(())
        } else {
            Err(Error::BadRequest(
                "the web tier is off ([web] enabled = false / DOCDEX_WEB_ENABLED=0); turn it on to search or fetch"
                    .into(),
            ))
        }
    }

    /// A fetch permit, waited for until one is free or `cancel` trips ([`Error::Cancelled`]).
    fn acquire_permit(&self, cancel: &CancelToken) -> Result<Permit<'_>> {
        let max = self.config().core.max_concurrent_fetches.max(1) as usize;
        let st = self.web();
        let mut n = st.permits.lock().map_err(|_| Error::Upstream("fetch permits poisoned".into()))?;
        while *n >= max {
            cancel.check()?;
            n = st.freed.wait_timeout(n, CANCEL_TICK).map_err(|_| Error::Upstream("fetch permits poisoned".into()))?.0;
        }
        *n += 1;
        Ok(Permit(st))
    }

    /// Searches the web (`docdex web-search`). A blocked or unreachable endpoint is not an
    /// error: the response's `status` says so, with notes, and has no results.
    pub fn web_search(&self, req: &WebSearchRequest) -> Result<WebSearchResponse> {
        self.ensure_web_enabled()?;
        if req.query.trim().is_empty() {
            return Err(Error::BadRequest("empty query: pass words to search the web for".into()));
        }
        let limit = req.limit.unwrap_or(self.config().search.max_web_hits as usize).clamp(1, 30);
        self.discover(req.query.trim(), limit, &CancelToken::current())
    }

    /// Discovery through the primary endpoint, then the proxy. Only a tripped `cancel` is an
    /// error ([`Error::Cancelled`]): a blocked or failed endpoint is a status with notes.
    fn discover(&self, query: &str, limit: usize, cancel: &CancelToken) -> Result<WebSearchResponse> {
        let started = Instant::now();
        let cache = self.web_cache();
        let mut resp = WebSearchResponse {
            schema_version: WEB_SCHEMA_VERSION,
            query: query.to_string(),
            status: DiscoveryStatus::Failed,
            results: Vec::new(),
            source: String::new(),
            cached: false,
            waited_ms: 0,
            ms: 0.0,
            filtered: 0,
            notes: Vec::new(),
        };
        if let Some(hit) = cache.search("duckduckgo_html", query) {
            resp.status = DiscoveryStatus::Ok;
            resp.source = "cache".into();
            resp.cached = true;
            self.keep_results(&mut resp, hit.results, limit);
            resp.ms = ms(started);
            return Ok(resp);
        }
        let web = &self.config().web;
        let mut endpoints = vec![("primary", web.ddg_base_url.clone())];
        if !web.ddg_proxy_base_url.trim().is_empty() {
            endpoints.push(("proxy", web.ddg_proxy_base_url.trim().to_string()));
        }
        let mut blocked = false;
        for (name, base) in endpoints {
            if name == "proxy" {
                resp.notes.push("trying the proxy endpoint ([web] ddg_proxy_base_url)".into());
            }
            match self.query_endpoint(&base, query, &mut resp, cancel) {
                Ok(results) => {
                    let entry = CachedSearch {
                        query: query.to_string(),
                        fetched_at: now_ms(),
                        source: name.into(),
                        results: results.clone(),
                    };
                    if let Err(e) = cache.put_search("duckduckgo_html", &entry) {
                        resp.notes.push(format!("could not cache the results: {e}"));
                    }
                    resp.status = DiscoveryStatus::Ok;
                    resp.source = name.into();
                    self.keep_results(&mut resp, results, limit);
                    resp.ms = ms(started);
                    return Ok(resp);
                }
                Err(EndpointFailure::Cancelled) => return Err(Error::Cancelled),
                Err(EndpointFailure::Blocked(why)) => {
                    blocked = true;
                    resp.notes.push(format!("{name} endpoint blocked: {why}"));
                }
                Err(EndpointFailure::Failed(why)) => resp.notes.push(format!("{name} endpoint failed: {why}")),
            }
        }
        resp.status = if blocked { DiscoveryStatus::Blocked } else { DiscoveryStatus::Failed };
        resp.ms = ms(started);
        // The notes travel in the answer (the CLI prints them as a warning, HTTP and MCP return
        // them): a warning in the log too printed the same failure twice.
        tracing::info!(query, status = ?resp.status, notes = ?resp.notes, "web discovery found nothing usable");
        Ok(resp)
    }

    /// Drops results whose URL the rules refuse and keeps `limit`, renumbered.
    fn keep_results(&self, resp: &mut WebSearchResponse, results: Vec<WebResult>, limit: usize) {
        let policy = self.url_policy();
        for r in results {
            if policy.check_str(&r.url, Origin::Discovered).is_err() {
                resp.filtered += 1;
                continue;
            }
            if resp.results.len() < limit {
                let mut r = r;
                r.rank = resp.results.len() as u32 + 1;
                resp.results.push(r);
            }
        }
    }

    /// One discovery endpoint: spaced, retried once after a short backoff on 429/5xx.
    fn query_endpoint(
        &self,
        base: &str,
        query: &str,
        resp: &mut WebSearchResponse,
        cancel: &CancelToken,
    ) -> std::result::Result<Vec<WebResult>, EndpointFailure> {
        let policy = self.url_policy();
        let mut url =
            Url::parse(base.trim()).map_err(|e| EndpointFailure::Failed(format!("bad endpoint URL {base:?}: {e}")))?;
        url.query_pairs_mut().append_pair("q", query);
        policy.check(&url, Origin::Configured).map_err(|r| EndpointFailure::Failed(r.0))?;
        let key = format!("discovery:{}", url.host_str().unwrap_or_default());
        let gap = Duration::from_millis(self.config().web.min_spacing_ms.max(2000));
        let client = self.http_client().map_err(|e| EndpointFailure::Failed(e.to_string()))?;
        let spacer = self.spacer();
        for attempt in 0..2 {
            let wait = spacer.reserve(&key, gap).map_err(|e| EndpointFailure::Failed(e.to_string()))?;
            if !wait.is_zero() {
                tracing::info!(ms = wait.as_millis() as u64, "waiting for the discovery rate limit");
                pause(wait, cancel).map_err(|_| EndpointFailure::Cancelled)?;
                resp.waited_ms += wait.as_millis() as u64;
            }
            let answer = self
                .block_on_unless(
                    cancel,
                    fetch::get(
                        client,
                        &policy,
                        &url,
                        Origin::Configured,
                        self.config().web.max_page_bytes,
                        self.page_timeout(),
                    ),
                )
                .map_err(|e| match e {
                    Error::Cancelled => EndpointFailure::Cancelled,
                    e => EndpointFailure::Failed(e.to_string()),
                })?
                .map_err(|e| EndpointFailure::Failed(e.to_string()));
            let _ = spacer.finished(&key, gap);
            let answer = answer?;
            let s = answer.status;
            if s == 429 || s >= 500 {
                let asked = Duration::from_secs(answer.retry_after.unwrap_or(0));
                let pause = asked.max(gap * 2).min(MAX_BACKOFF);
                let _ = spacer.back_off(&key, pause);
                resp.notes.push(format!("the endpoint answered HTTP {s}; backing off {:.0} s", pause.as_secs_f64()));
                tracing::warn!(status = s, pause_ms = pause.as_millis() as u64, "discovery backoff");
                if attempt == 0 && pause <= MAX_INLINE_BACKOFF {
                    continue;
                }
                return Err(if s == 429 {
                    EndpointFailure::Blocked(format!("rate limited (HTTP 429) after {} tries", attempt + 1))
                } else {
                    EndpointFailure::Failed(format!("HTTP {s}"))
                });
            }
            if s == 403 {
                return Err(EndpointFailure::Blocked("HTTP 403 (forbidden)".into()));
            }
            if !(200..300).contains(&s) {
                return Err(EndpointFailure::Failed(format!("HTTP {s}")));
            }
            return match discovery::parse(&answer.body) {
                Parsed::Results(r) => Ok(r),
                Parsed::Blocked(why) => Err(EndpointFailure::Blocked(why)),
            };
        }
        Err(EndpointFailure::Failed("no answer".into()))
    }

    /// Fetches one page (`docdex web-fetch`): from the cache within its TTL, else through the
    /// browser (plain HTTP without one), cleaned to Markdown and cached.
    pub fn web_fetch(&self, req: &WebFetchRequest) -> Result<WebFetchResponse> {
        self.ensure_web_enabled()?;
        let origin = if req.explicit { Origin::Explicit } else { Origin::Discovered };
        let url = self.url_policy().check_str(&req.url, origin).map_err(|r| Error::BadRequest(r.0))?;
        self.fetch_page(&url, origin, req.refresh, &CancelToken::current())
    }

    /// One page, cached or fetched; every wait on the way (the per-domain delay, a permit, the
    /// fetch itself) ends with [`Error::Cancelled`] within a [`CANCEL_TICK`] of `cancel` tripping.
    fn fetch_page(&self, url: &Url, origin: Origin, refresh: bool, cancel: &CancelToken) -> Result<WebFetchResponse> {
        cancel.check()?;
        let started = Instant::now();
        let cache = self.web_cache();
        let key = WebCache::page_key(url.as_str());
        let cache_key = cache.page_json(&key).display().to_string();
        if !refresh {
            if let Some(page) = cache.page(url.as_str()) {
                return Ok(WebFetchResponse {
                    schema_version: WEB_SCHEMA_VERSION,
                    page,
                    cached: true,
                    waited_ms: 0,
                    ms: ms(started),
                    cache_key,
                    notes: Vec::new(),
                });
            }
        }
        let mut notes = Vec::new();
        let spacer = self.spacer();
        let spacing_key = format!("fetch:{}", url.host_str().unwrap_or_default());
        let delay = Duration::from_millis(self.config().web.scraper.request_delay_ms.max(1000));
        let wait = spacer.reserve(&spacing_key, delay)?;
        if !wait.is_zero() {
            tracing::info!(url = %url, ms = wait.as_millis() as u64, "waiting for the per-domain delay");
            pause(wait, cancel)?;
        }
        let _permit = self.acquire_permit(cancel)?;
        let fetched = self.fetch_raw(url, origin, &mut notes, cancel);
        let _ = spacer.finished(&spacing_key, delay);
        let (html, final_url, status, via) = fetched?;
        if let Some(s) = status.filter(|s| *s >= 400) {
            if s == 429 || s >= 500 {
                let _ = spacer.back_off(&spacing_key, delay * 4);
            }
            return Err(Error::Upstream(format!("{url}: HTTP {s}")));
        }
        if html.len() as u64 > self.config().web.max_page_bytes {
            return Err(Error::Upstream(format!(
                "{url}: the page is {} bytes, more than [web] max_page_bytes ({})",
                html.len(),
                self.config().web.max_page_bytes
            )));
        }
        let ex = extract::extract(&html, &final_url);
        let page = WebPage {
            url: url.to_string(),
            final_url,
            title: ex.title,
            content_hash: sha256_hex(ex.markdown.as_bytes()),
            markdown: ex.markdown,
            fetched_at: now_ms(),
            via,
            status,
            html_bytes: html.len() as u64,
            readable: ex.readable,
        };
        if let Err(e) = cache.put_page(&page, &html) {
            notes.push(format!("could not cache the page: {e}"));
        }
        Ok(WebFetchResponse {
            schema_version: WEB_SCHEMA_VERSION,
            page,
            cached: false,
            waited_ms: wait.as_millis() as u64,
            ms: ms(started),
            cache_key,
            notes,
        })
    }

    /// A page through the guarded fetcher (cache, rules, delays), for other engine parts
    /// (library docs).
    pub(crate) fn fetch_url(&self, raw: &str, origin: Origin) -> Result<WebPage> {
        self.ensure_web_enabled()?;
        let url = self.url_policy().check_str(raw, origin).map_err(|r| Error::BadRequest(r.0))?;
        Ok(self.fetch_page(&url, origin, false, &CancelToken::current())?.page)
    }

    /// A JSON document from a configured registry (npm, PyPI), with the same per-domain delay,
    /// permits and timeout as pages, read into `T` (which keeps only the fields it names). Its
    /// bound is [`MAX_REGISTRY_JSON_BYTES`] when that is more than `[web] max_page_bytes`: the
    /// npm document of a long-lived package holds every version's manifest (typescript's is
    /// over 10 MB), and only that document carries the README.
    pub(crate) fn registry_json<T: serde::de::DeserializeOwned>(&self, raw: &str) -> Result<T> {
        let page = self.config().web.max_page_bytes;
        let bound = if page >= MAX_REGISTRY_JSON_BYTES {
            (page, "[web] max_page_bytes")
        } else {
            (MAX_REGISTRY_JSON_BYTES, "docdex's bound on registry documents")
        };
        let (url, body) = self.registry_get(raw, Origin::Configured, bound)?;
        let text = fetch::decode_text(&body, "application/json");
        serde_json::from_str(&text).map_err(|e| Error::Upstream(format!("{url}: not JSON ({e})")))
    }

    /// A file from a registry (a package archive), as bytes, at most `max_bytes` (named in
    /// messages as docdex's bound on package archives), with the delays, permits and timeout
    /// of [`Self::registry_json`]. `origin` is how its URL arrived: an archive URL read from a
    /// registry document is the registry's own on its host.
    pub(crate) fn registry_bytes(&self, raw: &str, origin: Origin, max_bytes: u64) -> Result<Vec<u8>> {
        Ok(self.registry_get(raw, origin, (max_bytes, "docdex's bound on package archives"))?.1)
    }

    fn registry_get(&self, raw: &str, origin: Origin, bound: (u64, &str)) -> Result<(Url, Vec<u8>)> {
        self.ensure_web_enabled()?;
        let policy = self.url_policy();
        let url = policy.check_str(raw, origin).map_err(|r| Error::BadRequest(r.0))?;
        let delay = Duration::from_millis(self.config().web.scraper.request_delay_ms.max(1000));
        let key = format!("fetch:{}", url.host_str().unwrap_or_default());
        let wait = self.spacer().reserve(&key, delay)?;
        let cancel = CancelToken::current();
        pause(wait, &cancel)?;
        let _permit = self.acquire_permit(&cancel)?;
        let got = fetch::get_bytes(self.http_client()?, &policy, &url, origin, bound, self.page_timeout());
        let a = self.block_on_unless(&cancel, got);
        let _ = self.spacer().finished(&key, delay);
        let a = a?.map_err(|e| Error::Upstream(e.to_string()))?;
        if a.status == 404 {
            return Err(Error::NotFound(format!("{url}: not found (HTTP 404)")));
        }
        if !(200..300).contains(&a.status) {
            return Err(Error::Upstream(format!("{url}: HTTP {}", a.status)));
        }
        Ok((url, a.body))
    }

    /// The page's raw HTML, final URL, status and fetcher: the shared browser, else plain HTTP.
    fn fetch_raw(
        &self,
        url: &Url,
        origin: Origin,
        notes: &mut Vec<String>,
        cancel: &CancelToken,
    ) -> Result<(String, String, Option<u16>, FetchVia)> {
        if let Some(missing) = browser::configured_missing(&self.config().web.scraper) {
            notes.push(missing);
        }
        Ok(match self.chromium() {
            Ok(ch) => {
                let r = fetch::render(
                    &ch,
                    &self.url_policy(),
                    url,
                    origin,
                    &self.config().web.user_agent,
                    self.page_timeout(),
                    self.config().web.max_page_bytes,
                    cancel,
                );
                if !ch.alive() {
                    self.forget_browser(&ch);
                }
                let r = r?;
                if let Some(content_type) = &r.source {
                    notes.push(fetch::source_note(content_type));
                }
                (r.html, r.final_url, r.status, FetchVia::Chromium)
            }
            Err(why) => {
                notes.push(format!("fetched over plain HTTP: {why}"));
                self.fetch_plain(url, origin, cancel)?
            }
        })
    }

    /// The page over plain HTTP: the `http` engine's fetch and the browser's fallback.
    fn fetch_plain(
        &self,
        url: &Url,
        origin: Origin,
        cancel: &CancelToken,
    ) -> Result<(String, String, Option<u16>, FetchVia)> {
        let client = self.http_client()?;
        let a = self
            .block_on_unless(
                cancel,
                fetch::get(
                    client,
                    &self.url_policy(),
                    url,
                    origin,
                    self.config().web.max_page_bytes,
                    self.page_timeout(),
                ),
            )?
            .map_err(|e| match e {
                fetch::HttpFailure::Refused(s) => Error::BadRequest(s),
                fetch::HttpFailure::Failed(s) => Error::Upstream(s),
            })?;
        if !fetch::textual(&a.content_type) {
            return Err(Error::Upstream(format!("{url}: not a text page ({})", a.content_type)));
        }
        Ok((fetch::as_page(a.body, &a.content_type), a.final_url.to_string(), Some(a.status), FetchVia::Http))
    }

    /// The shared browser, launched on first use; `Err` says why plain HTTP is used instead.
    fn chromium(&self) -> std::result::Result<Arc<Chromium>, String> {
        let scraper = &self.config().web.scraper;
        if scraper.engine.eq_ignore_ascii_case("http") {
            return Err("[web.scraper] engine = \"http\"".into());
        }
        let mut slot = self.web().browser.lock().map_err(|_| "browser state poisoned".to_string())?;
        match &*slot {
            BrowserSlot::Running(ch) if ch.alive() => return Ok(ch.clone()),
            BrowserSlot::Unavailable(why, at) if at.elapsed() < LAUNCH_RETRY => return Err(why.clone()),
            _ => {}
        }
        let Some(found) = browser::discover(scraper).into_iter().next() else {
            let why = "no Chromium or Chrome found (`docdex browser install` explains how to get one)".to_string();
            *slot = BrowserSlot::Unavailable(why.clone(), Instant::now());
            return Err(why);
        };
        let idle = Duration::from_secs(scraper.idle_shutdown_secs);
        let extra = self.web().extra_browser_args.lock().map(|a| a.clone()).unwrap_or_default();
        match Chromium::launch(Path::new(&found.path), scraper, &self.browser_dirs(), idle, &extra) {
            Ok(ch) => {
                let ch = Arc::new(ch);
                *slot = BrowserSlot::Running(ch.clone());
                Ok(ch)
            }
            Err(e) => {
                let why = e.to_string();
                tracing::warn!(%why, "browser launch failed; using plain HTTP");
                *slot = BrowserSlot::Unavailable(why.clone(), Instant::now());
                Err(why)
            }
        }
    }

    fn forget_browser(&self, ch: &Arc<Chromium>) {
        if let Ok(mut slot) = self.web().browser.lock() {
            if matches!(&*slot, BrowserSlot::Running(c) if Arc::ptr_eq(c, ch)) {
                *slot = BrowserSlot::Untried;
            }
        }
    }

    /// Helper threads of the shared browser's pages still running (0 without a browser). A
    /// page's load, reads and tab closing run on helpers that end with the page, also when it
    /// is stopped or times out; for diagnostics and the tests that hold them to it.
    pub fn browser_page_helpers(&self) -> usize {
        match self.web().browser.lock().as_deref() {
            Ok(BrowserSlot::Running(ch)) => ch.page_helpers(),
            _ => 0,
        }
    }

    /// Arguments added to the browser this engine launches next (a test's
    /// `--host-resolver-rules`, to make a name resolve for Chromium alone). Debug and
    /// `test-support` builds only.
    #[cfg(any(debug_assertions, feature = "test-support"))]
    pub fn set_browser_args_for_tests(&self, args: &[&str]) {
        if let Ok(mut a) = self.web().extra_browser_args.lock() {
            *a = args.iter().map(|s| s.to_string()).collect();
        }
    }

    /// Closes the shared browser now (it is also closed when the engine is dropped).
    pub fn close_browser(&self) {
        if let Ok(mut slot) = self.web().browser.lock() {
            *slot = BrowserSlot::Untried;
        }
    }

    /// Researches a question: discovery, then the top `max_pages` results fetched at once (at
    /// most `[core] max_concurrent_fetches` in flight), then each page's best passages. Failures
    /// are recorded in the trace, never raised: the caller decides what an empty answer means.
    /// A stop is raised: when the thread's ambient [`CancelToken`] (a chat turn's, an HTTP or
    /// MCP request's) trips, discovery, the rate-limit waits and every page fetch end within a
    /// [`CANCEL_TICK`] and this returns [`Error::Cancelled`] (a browser tab is closed behind it).
    pub fn web_research(&self, req: &WebResearchRequest) -> Result<WebResearchResponse> {
        self.ensure_web_enabled()?;
        if req.query.trim().is_empty() {
            return Err(Error::BadRequest("empty question: pass words to research".into()));
        }
        let started = Instant::now();
        let max_pages = req.max_pages.unwrap_or(self.config().search.max_web_hits as usize).clamp(1, 10);
        let per_page = req.passages_per_page.unwrap_or(PASSAGES_PER_PAGE).clamp(1, 10);
        let cancel = CancelToken::current();
        let found = self.discover(req.query.trim(), (max_pages * 2).max(8), &cancel)?;
        let mut trace = WebTrace {
            query: req.query.trim().to_string(),
            discovery: Some(found.status),
            discovery_source: found.source.clone(),
            results: found.results.len() as u32,
            discovery_waited_ms: found.waited_ms,
            discovery_ms: found.ms,
            notes: found.notes.clone(),
            ..Default::default()
        };
        let picked: Vec<&WebResult> = found.results.iter().take(max_pages).collect();
        let fetched = self.fetch_all(&picked, &cancel);
        // A stopped fetch is no failed page: the whole research ends.
        cancel.check()?;
        let mut passages = Vec::new();
        for (r, (res, took)) in picked.iter().zip(fetched) {
            match res {
                Ok(f) => passages.extend(page_passages(&mut trace, r, &f, took, &req.query, per_page)),
                Err(e) => trace.pages.push(PageTrace {
                    url: r.url.clone(),
                    status: if matches!(e, Error::BadRequest(_)) { PageStatus::Refused } else { PageStatus::Failed },
                    via: None,
                    ms: took,
                    waited_ms: 0,
                    passages: 0,
                    error: Some(e.to_string()),
                }),
            }
        }
        trace.ms = ms(started);
        Ok(WebResearchResponse {
            schema_version: WEB_SCHEMA_VERSION,
            query: req.query.trim().to_string(),
            results: found.results,
            passages,
            trace,
            gate: None,
        })
    }

    /// Fetches discovered pages at once (each through the URL policy), with each fetch's time.
    /// Each thread answers to `cancel` (its own threads have no ambient token).
    fn fetch_all(&self, picked: &[&WebResult], cancel: &CancelToken) -> Vec<(Result<WebFetchResponse>, f64)> {
        std::thread::scope(|s| {
            let handles: Vec<_> = picked
                .iter()
                .map(|r| {
                    let url = r.url.clone();
                    let cancel = cancel.clone();
                    s.spawn(move || {
                        let t = Instant::now();
                        let res = self
                            .url_policy()
                            .check_str(&url, Origin::Discovered)
                            .map_err(|r| Error::BadRequest(r.0))
                            .and_then(|u| self.fetch_page(&u, Origin::Discovered, false, &cancel));
                        (res, ms(t))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| (Err(Error::Upstream("page fetch panicked".into())), 0.0)))
                .collect()
        })
    }

    /// [`Engine::web_research`] for a question about `repo_path`: with `force_web: false` the
    /// waterfall's gate decides first (the repository's search confidence against `[search]
    /// web_trigger_threshold`), and a confident local answer keeps the web untouched.
    pub fn web_research_for(&self, repo_path: &Path, req: &WebResearchRequest) -> Result<WebResearchResponse> {
        if req.force_web != Some(false) {
            return self.web_research(req);
        }
        let local = SearchRequest { query: req.query.clone(), for_chat: true, ..Default::default() };
        let local_confidence = self.search(repo_path, &local)?.confidence;
        let threshold = self.config().search.web_trigger_threshold;
        let researched = local_confidence < threshold;
        let gate = Some(WebGate { local_confidence, threshold, researched });
        if researched {
            return Ok(WebResearchResponse { gate, ..self.web_research(req)? });
        }
        let note = format!(
            "local confidence {local_confidence:.2} is at or above web_trigger_threshold {threshold:.2}: the web was \
             not searched (docdex_search has the local results; force_web: true researches anyway)"
        );
        Ok(WebResearchResponse {
            schema_version: WEB_SCHEMA_VERSION,
            query: req.query.trim().to_string(),
            results: Vec::new(),
            passages: Vec::new(),
            trace: WebTrace { query: req.query.trim().to_string(), notes: vec![note], ..Default::default() },
            gate,
        })
    }

    /// Every browser found, the running ones, and leftovers of killed processes (stopped now).
    pub fn browser_list(&self) -> BrowserList {
        let dirs = self.browser_dirs();
        let reaped = browser::reap(&dirs);
        let scraper = &self.config().web.scraper;
        let browsers = browser::discover(scraper);
        let hint = match (browser::configured_missing(scraper), browsers.is_empty()) {
            (Some(missing), true) => Some(format!("{missing}. {}", browser::install_help())),
            (Some(missing), false) => Some(missing),
            (None, true) => Some(browser::install_help()),
            (None, false) => None,
        };
        BrowserList { schema_version: WEB_SCHEMA_VERSION, browsers, running: browser::running(&dirs), reaped, hint }
    }

    /// Launches the browser the web tier would use (or `path`) once, reads its version and
    /// closes it: proves it works (`docdex check`, `browser setup`).
    pub fn browser_probe(&self, path: Option<&Path>) -> Result<BrowserProbe> {
        let scraper = &self.config().web.scraper;
        let binary =
            match path {
                Some(p) => p.to_path_buf(),
                None => browser::discover(scraper).into_iter().next().map(|c| c.path.into()).ok_or_else(|| {
                    Error::NotFound(format!("no Chromium or Chrome found. {}", browser::install_help()))
                })?,
            };
        let ch = Chromium::launch(&binary, scraper, &self.browser_dirs(), Duration::ZERO, &[])?;
        Ok(BrowserProbe {
            path: binary.display().to_string(),
            version: ch.version().to_string(),
            start_ms: ch.start_ms(),
        })
    }

    /// Saves the browser to use in the config (`[web.scraper] chrome_binary_path` and
    /// `browser_kind`) after launching it once: `path`, or the first one found.
    pub fn browser_setup(&self, path: Option<&Path>) -> Result<BrowserSetupReport> {
        let binary = match path {
            Some(p) => {
                let real = std::fs::canonicalize(p)
                    .map_err(|e| Error::BadRequest(format!("{}: {e}; give the browser's executable", p.display())))?;
                if !real.is_file() {
                    return Err(Error::BadRequest(format!(
                        "{} is not a file; give the browser's executable",
                        p.display()
                    )));
                }
                real
            }
            None => {
                browser::discover(&self.config().web.scraper).into_iter().next().map(|c| c.path.into()).ok_or_else(
                    || Error::NotFound(format!("no Chromium or Chrome found. {}", browser::install_help())),
                )?
            }
        };
        let probe = self.browser_probe(Some(&binary))?;
        let kind = browser::kind_of(&binary);
        let path_s = binary.display().to_string();
        let changed = crate::config::edit::set_string_keys(
            self.config_path(),
            "web.scraper",
            &[("chrome_binary_path", path_s.as_str()), ("browser_kind", kind.as_str())],
        )?;
        Ok(BrowserSetupReport {
            path: path_s,
            kind,
            version: probe.version,
            config_path: self.config_path().display().to_string(),
            changed,
        })
    }
}

/// Why an endpoint gave no results.
enum EndpointFailure {
    Blocked(String),
    Failed(String),
    /// The caller's token tripped: no verdict on the endpoint.
    Cancelled,
}

/// Sleeps `wait` (a rate-limit wait) unless `cancel` trips first: then [`Error::Cancelled`]
/// within a [`CANCEL_TICK`].
fn pause(wait: Duration, cancel: &CancelToken) -> Result<()> {
    let until = Instant::now() + wait;
    loop {
        cancel.check()?;
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        std::thread::sleep(left.min(CANCEL_TICK));
    }
}

fn ms(since: Instant) -> f64 {
    (since.elapsed().as_secs_f64() * 1e6).round() / 1e3
}

/// A fetched page's best passages for the question, recorded in the trace with its notes.
fn page_passages(
    trace: &mut WebTrace,
    result: &WebResult,
    fetched: &WebFetchResponse,
    took: f64,
    query: &str,
    per_page: usize,
) -> Vec<WebPassage> {
    let best = passages::best(&fetched.page.markdown, query, per_page);
    trace.pages.push(PageTrace {
        url: result.url.clone(),
        status: if fetched.cached { PageStatus::Cached } else { PageStatus::Fetched },
        via: Some(fetched.page.via),
        ms: took,
        waited_ms: fetched.waited_ms,
        passages: best.len() as u32,
        error: None,
    });
    for note in &fetched.notes {
        if !trace.notes.contains(note) {
            trace.notes.push(note.clone());
        }
    }
    best.into_iter()
        .map(|p| WebPassage {
            url: fetched.page.final_url.clone(),
            title: fetched.page.title.clone(),
            text: p.text,
            score: p.score,
        })
        .collect()
}
