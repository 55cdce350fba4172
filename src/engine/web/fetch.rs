//! Getting bytes: headless Chromium tabs and plain HTTP (reqwest), both bounded in time and
//! size and both checked against the URL rules at every hop (redirects, and in the browser every
//! sub-request, which is also where images, media, fonts and stylesheets are skipped).

use super::browser::Chromium;
use super::policy::{Origin, UrlPolicy};
use crate::error::{Error, Result};
use headless_chrome::browser::tab::RequestPausedDecision;
use headless_chrome::protocol::cdp::Fetch::{events::RequestPausedEvent, FailRequest, RequestPattern, RequestStage};
use headless_chrome::protocol::cdp::Network::{ErrorReason, ResourceType};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use url::Url;

/// Redirects followed at most by the plain HTTP fetcher.
const MAX_REDIRECTS: usize = 5;

/// A response read within the limits.
#[derive(Debug, Clone)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// Where it ended after redirects.
    pub final_url: Url,
    /// `Content-Type`, lowercased.
    pub content_type: String,
    /// The body as text.
    pub body: String,
    /// `Retry-After` in seconds, when sent.
    pub retry_after: Option<u64>,
}

/// Why an HTTP request produced no answer.
#[derive(Debug, Clone)]
pub enum HttpFailure {
    /// A URL on the way was refused by the rules.
    Refused(String),
    /// Connection, TLS, timeout, too big, ...
    Failed(String),
}

impl std::fmt::Display for HttpFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HttpFailure::Refused(s) | HttpFailure::Failed(s) => f.write_str(s),
        }
    }
}

/// One HTTP client for the engine's web calls (redirects are followed by hand, so each hop is
/// checked).
pub fn client(user_agent: &str) -> Result<reqwest::Client> {
    reqwest::Client::builder()
        .user_agent(user_agent)
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| Error::Upstream(format!("cannot build the HTTP client: {e}")))
}

/// GETs `url`, following redirects that the rules allow, reading at most `max_bytes`, all
/// within `timeout`. `origin` is how the first URL arrived; redirect targets are discovered
/// URLs, except that an explicit URL may redirect within its own host.
pub async fn get(
    client: &reqwest::Client,
    policy: &UrlPolicy,
    url: &Url,
    origin: Origin,
    max_bytes: u64,
    timeout: Duration,
) -> std::result::Result<Answer, HttpFailure> {
    match tokio::time::timeout(timeout, get_inner(client, policy, url, origin, max_bytes)).await {
        Ok(r) => r,
        Err(_) => Err(HttpFailure::Failed(format!("{url}: timed out after {:.0} s", timeout.as_secs_f64()))),
    }
}

async fn get_inner(
    client: &reqwest::Client,
    policy: &UrlPolicy,
    url: &Url,
    origin: Origin,
    max_bytes: u64,
) -> std::result::Result<Answer, HttpFailure> {
    let first_host = url.host_str().unwrap_or_default().to_string();
    let mut current = url.clone();
    for hop in 0..=MAX_REDIRECTS {
        let hop_origin = if hop == 0 || (origin != Origin::Discovered && current.host_str() == Some(&first_host)) {
            origin
        } else {
            Origin::Discovered
        };
        policy.check(&current, hop_origin).map_err(|r| HttpFailure::Refused(r.0))?;
        let resp = client
            .get(current.clone())
            .header(
                reqwest::header::ACCEPT,
                "text/html,application/xhtml+xml,application/json,text/plain;q=0.9,*/*;q=0.5",
            )
            .send()
            .await
            .map_err(|e| HttpFailure::Failed(format!("{current}: {}", describe(&e))))?;
        let status = resp.status();
        if status.is_redirection() {
            let Some(loc) = resp.headers().get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok()) else {
                return Err(HttpFailure::Failed(format!("{current}: redirect ({status}) without a Location")));
            };
            current = current
                .join(loc)
                .map_err(|e| HttpFailure::Failed(format!("{current}: bad redirect target {loc:?}: {e}")))?;
            current.set_fragment(None);
            continue;
        }
        let content_type = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok());
        if let Some(len) = resp.content_length() {
            if len > max_bytes {
                return Err(HttpFailure::Failed(format!(
                    "{current}: {len} bytes is more than [web] max_page_bytes ({max_bytes})"
                )));
            }
        }
        let mut resp = resp;
        let mut body: Vec<u8> = Vec::new();
        while let Some(chunk) =
            resp.chunk().await.map_err(|e| HttpFailure::Failed(format!("{current}: {}", describe(&e))))?
        {
            body.extend_from_slice(&chunk);
            if body.len() as u64 > max_bytes {
                return Err(HttpFailure::Failed(format!(
                    "{current}: the response is larger than [web] max_page_bytes ({max_bytes})"
                )));
            }
        }
        return Ok(Answer {
            status: status.as_u16(),
            final_url: current,
            content_type,
            body: String::from_utf8_lossy(&body).into_owned(),
            retry_after,
        });
    }
    Err(HttpFailure::Failed(format!("{url}: more than {MAX_REDIRECTS} redirects")))
}

fn describe(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

/// A page as the browser rendered it.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The DOM serialized after load.
    pub html: String,
    /// Where the tab ended up.
    pub final_url: String,
    /// The document's HTTP status, when seen.
    pub status: Option<u16>,
}

/// Renders `url` in a new tab of `chromium`, within `timeout`. Sub-requests the rules refuse,
/// and images, media, fonts and stylesheets, are failed before they leave the browser.
pub fn render(
    chromium: &Chromium,
    policy: &UrlPolicy,
    url: &Url,
    origin: Origin,
    user_agent: &str,
    timeout: Duration,
) -> Result<Rendered> {
    let browser = chromium.browser()?;
    chromium.in_use.fetch_add(1, Ordering::SeqCst);
    let _in_use = InUse(chromium);
    let upstream = |what: &str, e: anyhow::Error| Error::Upstream(format!("{url}: {what}: {e}"));
    let tab = browser.new_tab().map_err(|e| upstream("opening a browser tab", e))?;
    let close = CloseTab(tab.clone());
    tab.set_default_timeout(timeout);
    tab.set_user_agent(user_agent, None, None).map_err(|e| upstream("setting the user agent", e))?;
    let page_host = url.host_str().unwrap_or_default().to_string();
    let blocked: Arc<Mutex<Vec<String>>> = Arc::default();
    let (rules, first, seen) = (policy.clone(), url.clone(), blocked.clone());
    let patterns = [RequestPattern {
        url_pattern: Some("*".into()),
        resource_Type: None,
        request_stage: Some(RequestStage::Request),
    }];
    tab.enable_fetch(Some(&patterns), None).map_err(|e| upstream("enabling request checks", e))?;
    tab.enable_request_interception(Arc::new(move |_t, _s, ev: RequestPausedEvent| {
        let p = &ev.params;
        let skip = matches!(
            p.resource_Type,
            ResourceType::Image | ResourceType::Media | ResourceType::Font | ResourceType::Stylesheet
        );
        let allowed = match Url::parse(&p.request.url) {
            Ok(u) if p.resource_Type == ResourceType::Document => {
                let o = if u == first || (origin != Origin::Discovered && u.host_str() == first.host_str()) {
                    origin
                } else {
                    Origin::Discovered
                };
                rules.check(&u, o).is_ok()
            }
            Ok(u) => rules.allows_subrequest(&u, &page_host),
            Err(_) => false,
        };
        if allowed && !skip {
            return RequestPausedDecision::Continue(None);
        }
        if !allowed {
            if let Ok(mut v) = seen.lock() {
                v.push(p.request.url.clone());
            }
        }
        RequestPausedDecision::Fail(FailRequest {
            request_id: p.request_id.clone(),
            error_reason: ErrorReason::BlockedByClient,
        })
    }))
    .map_err(|e| upstream("enabling request checks", e))?;
    let status: Arc<Mutex<Option<u16>>> = Arc::default();
    let status_w = status.clone();
    tab.register_response_handling(
        "docdex-status",
        Box::new(move |ev, _body| {
            if ev.Type == ResourceType::Document {
                if let Ok(mut s) = status_w.lock() {
                    // The last document response is the page after its redirects.
                    *s = Some(ev.response.status as u16);
                }
            }
        }),
    )
    .map_err(|e| upstream("watching responses", e))?;
    // Page.navigate itself only returns once the server starts answering, so the whole load
    // runs on a helper thread and the deadline is kept here; on timeout the tab is stopped and
    // closed, which also ends the helper's wait.
    let (tx, rx) = std::sync::mpsc::channel();
    let (nav_tab, target) = (tab.clone(), url.to_string());
    std::thread::Builder::new()
        .name("docdex-navigate".into())
        .spawn(move || {
            let r = nav_tab.navigate_to(&target).and_then(|t| t.wait_until_navigated()).map(|_| ());
            let _ = tx.send(r.map_err(|e| e.to_string()));
        })
        .map_err(|e| Error::Upstream(format!("{url}: cannot start the page load: {e}")))?;
    let loaded = rx.recv_timeout(timeout);
    let refused = || blocked.lock().map(|v| v.iter().any(|b| b.as_str() == url.as_str())).unwrap_or(false);
    match loaded {
        Ok(Ok(())) => {}
        Ok(Err(msg)) => {
            let _ = tab.stop_loading();
            if refused() {
                return Err(Error::BadRequest(format!("{url}: refused by the URL rules")));
            }
            return Err(if msg.to_ascii_lowercase().contains("timeout") || msg.contains("timed out") {
                Error::Upstream(format!(
                    "{url}: the page did not load within {} s (page_load_timeout_secs)",
                    timeout.as_secs()
                ))
            } else {
                Error::Upstream(format!("{url}: {msg}"))
            });
        }
        Err(_) => {
            let _ = tab.stop_loading();
            return Err(Error::Upstream(format!(
                "{url}: the page did not load within {} s (page_load_timeout_secs)",
                timeout.as_secs()
            )));
        }
    }
    let final_url = tab.get_url();
    if let Some(b) =
        blocked.lock().ok().and_then(|v| v.iter().find(|b| **b == final_url || b.as_str() == url.as_str()).cloned())
    {
        return Err(Error::BadRequest(format!("{b}: refused by the URL rules (loopback or private target)")));
    }
    let html = tab.get_content().map_err(|e| upstream("reading the page", e))?;
    let status = status.lock().ok().and_then(|s| *s);
    drop(close);
    Ok(Rendered { html, final_url, status })
}

struct InUse<'a>(&'a Chromium);

impl Drop for InUse<'_> {
    fn drop(&mut self) {
        self.0.in_use.fetch_sub(1, Ordering::SeqCst);
        self.0.last_used.store(crate::engine::fsutil::now_ms(), Ordering::SeqCst);
    }
}

/// Closes the tab however the render ends.
struct CloseTab(Arc<headless_chrome::Tab>);

impl Drop for CloseTab {
    fn drop(&mut self) {
        let _ = self.0.close(false);
    }
}
