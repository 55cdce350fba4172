//! Getting bytes: headless Chromium tabs and plain HTTP (reqwest), both bounded in time and
//! size and both checked against the URL rules at every hop (redirects, and in the browser every
//! sub-request, which is also where images, media, fonts and stylesheets are skipped).

use super::browser::Chromium;
use super::policy::{Origin, UrlPolicy};
use super::source::BodyFailure;
use crate::engine::cancel::{CancelToken, CANCEL_TICK};
use crate::error::{Error, Result};
use headless_chrome::browser::tab::RequestPausedDecision;
use headless_chrome::browser::transport::{SessionId, Transport};
use headless_chrome::protocol::cdp::types::Event;
use headless_chrome::protocol::cdp::Fetch::{events::RequestPausedEvent, FailRequest, RequestPattern, RequestStage};
use headless_chrome::protocol::cdp::Network::{ErrorReason, ResourceType};
use headless_chrome::protocol::cdp::Page::DialogType;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
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

/// A response read within the limits, its body as bytes (an archive, not a page).
#[derive(Debug, Clone)]
pub struct RawAnswer {
    /// HTTP status.
    pub status: u16,
    /// Where it ended after redirects.
    pub final_url: Url,
    /// `Content-Type`, lowercased.
    pub content_type: String,
    /// The body as sent.
    pub body: Vec<u8>,
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
/// checked). It trusts the built-in web roots and this machine's own authorities
/// ([`system_roots`]).
pub fn client(user_agent: &str) -> Result<reqwest::Client> {
    let builder = || {
        reqwest::Client::builder()
            .user_agent(user_agent)
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(10))
    };
    let roots = system_roots();
    let with_roots = roots.into_iter().fold(builder(), |b, cert| b.add_root_certificate(cert));
    match with_roots.build() {
        Ok(c) => Ok(c),
        Err(e) => {
            // A certificate the TLS library cannot take fails the whole build: the built-in
            // roots alone are still a working client.
            tracing::warn!(error = %e, "the machine's CA bundle was not usable; built-in roots only");
            builder().build().map_err(|e| Error::Upstream(format!("cannot build the HTTP client: {e}")))
        }
    }
}

/// The system's CA bundles, in the order OpenSSL-style tools look: Debian/Ubuntu, Fedora/RHEL,
/// openSUSE, Alpine/macOS.
const SYSTEM_BUNDLES: [&str; 4] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// The certificate authorities this machine trusts beyond the built-in web roots:
/// `$SSL_CERT_FILE` when set (as curl, pip and OpenSSL read it), else the system's bundle.
/// Without them a network behind a TLS-inspecting proxy, whose authority is installed on the
/// machine (curl, npm and pip reach the registries), failed every fetch with `invalid peer
/// certificate: UnknownIssuer`. A bundle that cannot be read or parsed is logged and skipped.
fn system_roots() -> Vec<reqwest::Certificate> {
    let named = std::env::var_os("SSL_CERT_FILE").filter(|v| !v.is_empty()).map(std::path::PathBuf::from);
    let path = named.or_else(|| SYSTEM_BUNDLES.iter().map(std::path::PathBuf::from).find(|p| p.is_file()));
    let Some(path) = path else { return Vec::new() };
    let bytes = match crate::engine::fsutil::read_regular_text(&path, None, 16 * 1024 * 1024) {
        Some(text) => text.into_bytes(),
        None => {
            tracing::warn!(path = %path.display(), "CA bundle not read (not a regular file, or unreadable)");
            return Vec::new();
        }
    };
    match reqwest::Certificate::from_pem_bundle(&bytes) {
        Ok(certs) => certs,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "CA bundle not parsed");
            Vec::new()
        }
    }
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
    let raw = get_bytes(client, policy, url, origin, (max_bytes, "[web] max_page_bytes"), timeout).await?;
    Ok(Answer {
        status: raw.status,
        final_url: raw.final_url,
        body: decode_text(&raw.body, &raw.content_type),
        content_type: raw.content_type,
        retry_after: raw.retry_after,
    })
}

/// [`get`], with the body kept as bytes (a package archive is not text in any charset), and
/// its bound named as messages should name it: `(bytes, "[web] max_page_bytes")`.
pub async fn get_bytes(
    client: &reqwest::Client,
    policy: &UrlPolicy,
    url: &Url,
    origin: Origin,
    bound: (u64, &str),
    timeout: Duration,
) -> std::result::Result<RawAnswer, HttpFailure> {
    match tokio::time::timeout(timeout, get_inner(client, policy, url, origin, bound)).await {
        Ok(r) => r,
        Err(_) => Err(HttpFailure::Failed(format!("{url}: timed out after {:.0} s", timeout.as_secs_f64()))),
    }
}

async fn get_inner(
    client: &reqwest::Client,
    policy: &UrlPolicy,
    url: &Url,
    origin: Origin,
    (max_bytes, limit): (u64, &str),
) -> std::result::Result<RawAnswer, HttpFailure> {
    let first_host = url.host_str().unwrap_or_default().to_string();
    let mut current = url.clone();
    for hop in 0..=MAX_REDIRECTS {
        let hop_origin = if hop == 0 || (origin != Origin::Discovered && current.host_str() == Some(&first_host)) {
            origin
        } else {
            Origin::Discovered
        };
        policy
            .check(&current, hop_origin)
            .map_err(|r| HttpFailure::Refused(redirect_refusal(url, hop, &current, r.0)))?;
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
                return Err(HttpFailure::Failed(format!("{current}: {len} bytes is more than {limit} ({max_bytes})")));
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
                    "{current}: the response is larger than {limit} ({max_bytes})"
                )));
            }
        }
        return Ok(RawAnswer { status: status.as_u16(), final_url: current, body, content_type, retry_after });
    }
    Err(HttpFailure::Failed(format!("{url}: more than {MAX_REDIRECTS} redirects")))
}

/// A refusal of hop `hop` of a fetch of `url`, in the browser's words: a redirect is named as
/// one, from the URL asked for (plain HTTP named only the target, `file:///etc/passwd: only
/// http and https URLs are fetched`, as if the user had asked for it).
fn redirect_refusal(url: &Url, hop: usize, target: &Url, why: String) -> String {
    if hop == 0 {
        why
    } else if !matches!(target.scheme(), "http" | "https") {
        format!("{url}: redirects to a URL that is not http or https (file:, chrome:, ...), which is never followed")
    } else {
        format!("{url}: led to a URL docdex does not fetch: {why}")
    }
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

/// The text of an HTML or text body in its character set: the BOM, else the `Content-Type`'s
/// `charset`, else a `<meta charset>` (or `http-equiv` content type) in the first 1,024 bytes,
/// else UTF-8; bytes that are not valid in it become U+FFFD. A Latin-1 page read as UTF-8 lost
/// every accented letter.
pub fn decode_text(bytes: &[u8], content_type: &str) -> String {
    // Only markup declares its charset inside (JSON is UTF-8, and its text may say `charset=`).
    let markup = content_type.is_empty() || content_type.to_ascii_lowercase().contains("html");
    let label =
        charset_param(content_type).or_else(|| markup.then(|| meta_charset(&bytes[..bytes.len().min(1024)])).flatten());
    let encoding = label.and_then(|l| encoding_rs::Encoding::for_label(l.as_bytes())).unwrap_or(encoding_rs::UTF_8);
    // `decode` lets a BOM win over the label, as browsers do.
    encoding.decode(bytes).0.into_owned()
}

fn charset_param(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim().eq_ignore_ascii_case("charset").then(|| v.trim().trim_matches(['"', '\'']).to_string())
    })
}

fn meta_charset(head: &[u8]) -> Option<String> {
    let lower = String::from_utf8_lossy(head).to_ascii_lowercase();
    let at = lower.find("charset=")? + "charset=".len();
    let label: String = lower[at..]
        .trim_start_matches(['"', '\''])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
        .collect();
    (!label.is_empty()).then_some(label)
}

/// Whether a `Content-Type` is a page docdex reads (HTML, XML, any `text/`; none sent counts
/// as text): the one rule for the browser and for plain HTTP.
pub fn textual(content_type: &str) -> bool {
    let ct = content_type.trim().to_ascii_lowercase();
    ct.is_empty() || ct.contains("html") || ct.starts_with("text/") || ct.contains("xml")
}

/// Whether a `Content-Type` is an XML document other than XHTML (`application/xml`,
/// `text/xml`, `application/rss+xml`, `application/rls-services+xml`): read as its source, by
/// both fetchers. Chromium shows some as a tree and downloads the others (which docdex
/// denies), and the HTML extractor makes little of the rest: CDATA dropped, `<link>` read as
/// HTML's empty element.
pub fn xml_source(content_type: &str) -> bool {
    let ct = content_type.trim().to_ascii_lowercase();
    let mime = ct.split(';').next().unwrap_or("").trim();
    mime.contains("xml") && !mime.contains("html")
}

/// Whether a document is read as its source ([`as_page`]) rather than as a page the browser
/// renders: a `text/` type other than HTML, or XML ([`xml_source`]). Chromium shows a text
/// file as one preformatted block, a few XML types as a tree, and downloads the rest
/// (`text/csv`, `application/rls-services+xml`); none runs a script. In the browser such a
/// document is read from the tab's own response (`web::source`), so it is requested once.
/// An unlabelled document is the browser's to sniff.
pub fn read_as_source(content_type: &str) -> bool {
    let ct = content_type.trim().to_ascii_lowercase();
    (ct.starts_with("text/") && !ct.contains("html")) || xml_source(&ct)
}

/// What a fetch's notes say of a page the browser read as its source ([`read_as_source`]).
pub fn source_note(content_type: &str) -> String {
    let mime = content_type.split(';').next().unwrap_or("").trim();
    let kind = if xml_source(mime) { "an XML document" } else { "a text document" };
    format!("read as its source: {kind} ({mime}), which the browser does not render as a page; read once, from its response")
}

/// A text page as the markup the browser makes of it: Chromium shows a `text/plain` (or any
/// `text/` type but HTML) document as one `<pre>` block, its markup escaped. Plain HTTP
/// handed such a body to the HTML extractor as it came, which ran its lines together (a
/// README.txt, a raw source file became one paragraph) and read `<b>` in it as markup. An XML
/// document ([`xml_source`]) is read the same way: its source, lines and tags kept. Every
/// document [`read_as_source`] names is wrapped; any other body is returned as it is.
pub fn as_page(body: String, content_type: &str) -> String {
    if !read_as_source(content_type) {
        return body;
    }
    let mut page = String::with_capacity(body.len() + 64);
    page.push_str("<html><head></head><body><pre>");
    for c in body.chars() {
        match c {
            '&' => page.push_str("&amp;"),
            '<' => page.push_str("&lt;"),
            '>' => page.push_str("&gt;"),
            c => page.push(c),
        }
    }
    page.push_str("</pre></body></html>");
    page
}

/// Why a document response is refused before its body is read, when it is: not a text page,
/// served as a download (which the browser would write to the user's Downloads folder), or
/// declared larger than `max_bytes`.
pub fn refuse_document(
    url: &str,
    content_type: &str,
    disposition: Option<&str>,
    length: Option<u64>,
    max_bytes: u64,
) -> Option<String> {
    if !textual(content_type) {
        return Some(format!("{url}: not a text page ({})", content_type.trim().to_ascii_lowercase()));
    }
    if disposition.is_some_and(|d| d.trim().to_ascii_lowercase().starts_with("attachment")) {
        return Some(format!(
            "{url}: served as a download (Content-Disposition: attachment); docdex reads pages, it never saves downloads"
        ));
    }
    match length {
        Some(len) if len > max_bytes => {
            Some(format!("{url}: {len} bytes is more than [web] max_page_bytes ({max_bytes})"))
        }
        _ => None,
    }
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
    /// The `Content-Type` of a document read as its source ([`read_as_source`]): `html` is
    /// [`as_page`] of the body the tab's response carried, which the tab did not render.
    pub source: Option<String>,
}

/// A document read as its source from the tab's response.
struct Source {
    /// [`as_page`] of its body.
    page: String,
    /// Its URL (after redirects).
    url: String,
    /// Its `Content-Type`, lowercased.
    content_type: String,
}

/// What the tab's request checks refused, for the error that explains a failed load.
#[derive(Default)]
struct Refused {
    /// Every URL failed by the URL rules (documents and sub-requests).
    urls: Vec<String>,
    /// Why a document (the page, a redirect hop, a frame) was refused, first one first.
    documents: Vec<DocRefusal>,
    /// The hosts of the documents let through, last one last: where a connection the
    /// browser's proxy did not make was going.
    hosts: Vec<String>,
    /// The HTTP status of the last document response (a redirect's aside), seen when its
    /// headers arrive: Chromium fails an error answer without a body
    /// (`net::ERR_HTTP_RESPONSE_CODE_FAILURE`), and this is the status that failure stands for.
    status: Option<u16>,
    /// The page, read as its source from its response ([`read_as_source`]); the tab then
    /// failed it, so the load ends failed and this answers for it.
    source: Option<Source>,
}

/// Why a document was failed in the tab.
#[derive(Clone)]
enum DocRefusal {
    /// The URL rules (a bad request: the trace calls the page `refused`).
    Rule(String),
    /// Its response: not text, a download, too large (the page `failed`, as over plain HTTP).
    Content(String),
    /// The connection to its host, which the browser's proxy refused or could not make.
    Connection(super::egress::Refused),
}

/// The rules a tab applies to each paused request: the URL rules before it is sent, the
/// document rule ([`refuse_document`]) when a document's response headers arrive, and the
/// page's body read as its source when it is not one the browser renders ([`read_as_source`]).
struct TabRules {
    rules: UrlPolicy,
    first: Url,
    origin: Origin,
    page_host: String,
    max_bytes: u64,
    refused: Arc<Mutex<Refused>>,
    /// The tab's target id, which is its main frame's id: only the page itself is read as its
    /// source, never a frame inside it.
    main_frame: String,
    /// When the page's load runs out of time (`page_load_timeout_secs`).
    deadline: Instant,
    timeout: Duration,
}

/// Fails a paused request in the tab.
fn fail_request(request_id: &str) -> RequestPausedDecision {
    RequestPausedDecision::Fail(FailRequest {
        request_id: request_id.to_string(),
        error_reason: ErrorReason::BlockedByClient,
    })
}

/// A header of a paused response, by its name in any case.
fn response_header(ev: &RequestPausedEvent, name: &str) -> Option<String> {
    let headers = ev.params.response_headers.as_ref()?;
    headers.iter().find(|e| e.name.eq_ignore_ascii_case(name)).map(|e| e.value.clone())
}

impl TabRules {
    /// Pauses every request of `tab` ([`checked_requests`]) for these rules to decide.
    fn enable(self, tab: &headless_chrome::Tab) -> anyhow::Result<()> {
        tab.enable_fetch(Some(&checked_requests()), None)?;
        tab.enable_request_interception(Arc::new(move |t: Arc<Transport>, s: SessionId, ev: RequestPausedEvent| {
            self.decide(&t, &s, &ev)
        }))
    }

    fn decide(&self, transport: &Transport, session: &SessionId, ev: &RequestPausedEvent) -> RequestPausedDecision {
        let p = &ev.params;
        let fail = || fail_request(&p.request_id);
        if p.response_status_code.is_some() || p.response_error_reason.is_some() {
            return self.decide_response(transport, session, ev);
        }
        let skip = matches!(
            p.resource_Type,
            ResourceType::Image | ResourceType::Media | ResourceType::Font | ResourceType::Stylesheet
        );
        let verdict = match Url::parse(&p.request.url) {
            Ok(u) if p.resource_Type == ResourceType::Document => {
                let o = if u == self.first
                    || (self.origin != Origin::Discovered && u.host_str() == self.first.host_str())
                {
                    self.origin
                } else {
                    Origin::Discovered
                };
                self.rules.check(&u, o).map_err(|r| Some(DocRefusal::Rule(r.0)))
            }
            Ok(u) if self.rules.allows_subrequest(&u, &self.page_host) => Ok(()),
            _ => Err(None),
        };
        match verdict {
            Ok(()) if !skip => {
                if p.resource_Type == ResourceType::Document {
                    self.passed(&p.request.url);
                }
                RequestPausedDecision::Continue(None)
            }
            Ok(()) => fail(),
            Err(why) => {
                self.note(Some(p.request.url.clone()), why);
                fail()
            }
        }
    }

    /// A document's response headers arrived: refused ([`refuse_document`]), read as its
    /// source when it is the page and not one the browser renders (then failed: the tab is
    /// done with it), or let through to be rendered.
    fn decide_response(
        &self,
        transport: &Transport,
        session: &SessionId,
        ev: &RequestPausedEvent,
    ) -> RequestPausedDecision {
        let p = &ev.params;
        self.saw_status(ev);
        if let Some(why) = self.response_refusal(ev) {
            self.note(None, Some(DocRefusal::Content(why)));
            return fail_request(&p.request_id);
        }
        let Some(content_type) = self.source_document(ev) else { return RequestPausedDecision::Continue(None) };
        let url = &p.request.url;
        match super::source::read_body(transport, session, &p.request_id, self.max_bytes, self.deadline) {
            Ok(bytes) => {
                let page = as_page(decode_text(&bytes, &content_type), &content_type);
                if let Ok(mut r) = self.refused.lock() {
                    r.source = Some(Source { page, url: url.clone(), content_type });
                }
            }
            Err(failure) => {
                let why = match failure {
                    BodyFailure::TooLarge => {
                        format!("{url}: the page is larger than [web] max_page_bytes ({})", self.max_bytes)
                    }
                    BodyFailure::TimedOut => format!(
                        "{url}: the page did not load within {} s (page_load_timeout_secs)",
                        self.timeout.as_secs()
                    ),
                    BodyFailure::Browser(e) => format!("{url}: reading the document's body: {e}"),
                };
                self.note(None, Some(DocRefusal::Content(why)));
            }
        }
        fail_request(&p.request_id)
    }

    /// The `Content-Type` of the page's own response (the main frame's, not a redirect's, not
    /// an error) when it is a document read as its source ([`read_as_source`]).
    fn source_document(&self, ev: &RequestPausedEvent) -> Option<String> {
        let p = &ev.params;
        let redirect = p.response_status_code.is_some_and(|s| (300..400).contains(&s));
        let page = p.resource_Type == ResourceType::Document && p.frame_id == self.main_frame;
        if !page || redirect || p.response_error_reason.is_some() {
            return None;
        }
        let content_type = response_header(ev, "content-type")?.trim().to_ascii_lowercase();
        read_as_source(&content_type).then_some(content_type)
    }

    /// The document rule on a paused response (redirects pass: their target is checked as a
    /// request of its own).
    fn response_refusal(&self, ev: &RequestPausedEvent) -> Option<String> {
        let p = &ev.params;
        if p.resource_Type != ResourceType::Document || p.response_status_code.is_some_and(|s| (300..400).contains(&s))
        {
            return None;
        }
        let length = response_header(ev, "content-length").and_then(|v| v.trim().parse::<u64>().ok());
        let content_type = response_header(ev, "content-type").unwrap_or_default();
        let disposition = response_header(ev, "content-disposition");
        refuse_document(&p.request.url, &content_type, disposition.as_deref(), length, self.max_bytes)
    }

    /// Records a document's status (a redirect's aside: its target answers for the page).
    fn saw_status(&self, ev: &RequestPausedEvent) {
        let p = &ev.params;
        let status = p.response_status_code.and_then(|s| u16::try_from(s).ok());
        if let (true, Some(s), Ok(mut r)) = (p.resource_Type == ResourceType::Document, status, self.refused.lock()) {
            if !(300..400).contains(&s) {
                r.status = Some(s);
            }
        }
    }

    fn passed(&self, url: &str) {
        let host = Url::parse(url).ok().and_then(|u| super::policy::canonical_host(&u));
        if let (Ok(mut r), Some(host)) = (self.refused.lock(), host) {
            r.hosts.push(host);
        }
    }

    fn note(&self, url: Option<String>, why: Option<DocRefusal>) {
        if let Ok(mut r) = self.refused.lock() {
            r.urls.extend(url);
            r.documents.extend(why);
        }
    }
}

/// Counts the bytes of the tab's documents as they arrive, so a page without a
/// `Content-Length` that streams past `max_bytes` is stopped instead of loading until the timeout.
fn count_document_bytes(max_bytes: u64, over: Arc<AtomicBool>) -> impl Fn(&Event) + Send + Sync {
    let docs: Mutex<(Vec<String>, u64)> = Mutex::default();
    move |event: &Event| {
        let Ok(mut d) = docs.lock() else { return };
        match event {
            Event::NetworkResponseReceived(e) if e.params.Type == ResourceType::Document => {
                d.0.push(e.params.request_id.clone());
            }
            Event::NetworkDataReceived(e) if d.0.contains(&e.params.request_id) => {
                d.1 += u64::from(e.params.data_length);
                if d.1 > max_bytes {
                    over.store(true, Ordering::SeqCst);
                }
            }
            _ => {}
        }
    }
}

/// Renders `url` in a new tab of `chromium`, within `timeout`. Sub-requests the rules refuse,
/// and images, media, fonts and stylesheets, are failed before they leave the browser; a
/// document that is not a text page, is served as a download, or is larger than `max_bytes`
/// is failed when its headers arrive (or, without a length, once that many bytes came), and
/// downloads are denied outright, so the browser never writes a file for docdex. When `cancel`
/// trips, the load and the read stop within a [`CANCEL_TICK`] with [`Error::Cancelled`] and
/// the tab is stopped and closed on a helper thread, not waited for.
#[allow(clippy::too_many_arguments)]
pub fn render(
    chromium: &Chromium,
    policy: &UrlPolicy,
    url: &Url,
    origin: Origin,
    user_agent: &str,
    timeout: Duration,
    max_bytes: u64,
    cancel: &CancelToken,
) -> Result<Rendered> {
    cancel.check()?;
    let browser = chromium.browser()?;
    chromium.in_use.fetch_add(1, Ordering::SeqCst);
    let _in_use = InUse(chromium);
    let upstream = |what: &str, e: anyhow::Error| Error::Upstream(format!("{url}: {what}: {e}"));
    let tab = browser.new_tab().map_err(|e| upstream("opening a browser tab", e))?;
    let close = CloseTab(tab.clone());
    tab.set_default_timeout(timeout);
    tab.set_user_agent(user_agent, None, None).map_err(|e| upstream("setting the user agent", e))?;
    deny_downloads(&tab).map_err(|e| upstream("turning downloads off", e))?;
    let refused: Arc<Mutex<Refused>> = Arc::default();
    let trusted = (origin != Origin::Discovered).then(|| super::policy::canonical_host(url)).flatten();
    let _pass = chromium.admit(policy, trusted);
    let deadline = Instant::now() + timeout;
    let checks = TabRules {
        rules: policy.clone(),
        first: url.clone(),
        origin,
        page_host: url.host_str().unwrap_or_default().to_string(),
        max_bytes,
        refused: refused.clone(),
        main_frame: tab.get_target_id().clone(),
        deadline,
        timeout,
    };
    checks.enable(&tab).map_err(|e| upstream("enabling request checks", e))?;
    let status = watch_document_status(&tab).map_err(|e| upstream("watching responses", e))?;
    let over = Arc::new(AtomicBool::new(false));
    tab.add_event_listener(Arc::new(count_document_bytes(max_bytes, over.clone())))
        .map_err(|e| upstream("watching responses", e))?;
    tab.add_event_listener(Arc::new(dismiss_dialogs(tab.get_dialog()))).map_err(|e| upstream("watching dialogs", e))?;
    let settling = Arc::new(AtomicBool::new(false));
    tab.add_event_listener(Arc::new(track_settling(settling.clone()))).map_err(|e| upstream("watching the load", e))?;
    let rx = navigate_in_background(chromium, &tab, url, &settling)?;
    let why_refused = |msg: &str| {
        let r = refused.lock().ok()?;
        // A connection the browser's proxy did not make shows as Chromium's `ERR_SOCKS_...`.
        let proxied = msg.contains("ERR_SOCKS") || msg.contains("ERR_PROXY");
        let connection = || r.hosts.iter().rev().find_map(|h| chromium.connection_refusal(h));
        r.documents.first().cloned().or_else(|| proxied.then(connection).flatten().map(DocRefusal::Connection))
    };
    let loaded = wait_for_load(chromium, &rx, (&settling, &over), timeout, cancel);
    if matches!(loaded, Load::Cancelled) {
        close_in_background(chromium, close);
        return Err(Error::Cancelled);
    }
    if let Some(r) = answer_without_page(&loaded, &refused, url) {
        return Ok(r);
    }
    // A dead browser answers no command: stopping its tab would wait out the timeout again.
    let browser_alive = !matches!(loaded, Load::BrowserGone);
    if let Err(e) = load_outcome(loaded, url, why_refused, timeout, max_bytes) {
        if browser_alive {
            // Not waited for: a renderer held by a page answers nothing (the connection's
            // command timeout is a day); closing the tab ends the wait.
            let stop = tab.clone();
            let _ = spawn_page_helper(chromium, "docdex-stop-tab", move || {
                let _ = stop.stop_loading();
            });
        }
        return Err(e);
    }
    let final_url = tab.get_url();
    if let Some(b) = refused_target(&refused, &final_url, url) {
        return Err(Error::BadRequest(format!("{b}: refused by the URL rules (loopback or private target)")));
    }
    let html = read_page(chromium, close, url, deadline, timeout, cancel)?;
    let status = status.lock().ok().and_then(|s| *s);
    Ok(Rendered { html, final_url, status, source: None })
}

/// The loaded page's HTML, read within `deadline` (and [`READ_GRACE`]); the tab is closed
/// after, or in the background when `cancel` trips meanwhile.
fn read_page(
    chromium: &Chromium,
    close: CloseTab,
    url: &Url,
    deadline: Instant,
    timeout: Duration,
    cancel: &CancelToken,
) -> Result<String> {
    let reader = close.0.clone();
    let read = within(chromium, deadline.max(Instant::now() + READ_GRACE), cancel, move || reader.get_content());
    if cancel.is_cancelled() {
        close_in_background(chromium, close);
        return Err(Error::Cancelled);
    }
    let html = read
        .ok_or_else(|| {
            Error::Upstream(format!(
                "{url}: the page did not load within {} s (page_load_timeout_secs): it did not answer when read",
                timeout.as_secs()
            ))
        })?
        .map_err(|e| Error::Upstream(format!("{url}: reading the page: {e}")))?;
    drop(close);
    Ok(html)
}

/// How long reading a loaded page may take past `page_load_timeout_secs` (a page that loaded
/// just before its deadline is still read).
const READ_GRACE: Duration = Duration::from_secs(2);

/// Stops and closes a tab on a helper thread: a stopped turn does not wait on the renderer.
fn close_in_background(chromium: &Chromium, close: CloseTab) {
    let spawned = spawn_page_helper(chromium, "docdex-close-tab", move || {
        let _ = close.0.stop_loading();
        drop(close);
    });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "could not close a stopped page's tab in the background");
    }
}

/// The page's own address or where it ended up, when the URL rules refused it (a redirect
/// the browser followed to a loopback or private target).
fn refused_target(refused: &Mutex<Refused>, final_url: &str, url: &Url) -> Option<String> {
    let r = refused.lock().ok()?;
    r.urls.iter().find(|b| b.as_str() == final_url || b.as_str() == url.as_str()).cloned()
}

/// Runs `f` on a helper thread and waits for it until `deadline` or until `cancel` trips;
/// `None` when it did not answer by then (the helper is left to end when the tab closes).
/// DevTools commands wait as long as the connection's timeout, a day: a page whose renderer
/// does not answer held the fetch for that long.
fn within<T: Send + 'static>(
    chromium: &Chromium,
    deadline: Instant,
    cancel: &CancelToken,
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    spawn_page_helper(chromium, "docdex-tab-call", move || {
        let _ = tx.send(f());
    })
    .ok()?;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || cancel.is_cancelled() {
            return None;
        }
        match rx.recv_timeout(left.min(CANCEL_TICK)) {
            Ok(v) => return Some(v),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return None,
        }
    }
}

/// Answers every JavaScript dialog the page opens (`alert`, `confirm`, `prompt`: cancelled;
/// `beforeunload`: leave). An open dialog halts the page's script and its load until answered,
/// which nothing headless ever does: a page calling `alert()` held the fetch forever.
fn dismiss_dialogs(dialog: headless_chrome::browser::tab::dialog::Dialog) -> impl Fn(&Event) + Send + Sync {
    move |event: &Event| {
        if let Event::PageJavascriptDialogOpening(e) = event {
            let leave = e.params.Type == DialogType::Beforeunload;
            let answered = if leave { dialog.accept(None) } else { dialog.dismiss() };
            tracing::debug!(kind = ?e.params.Type, ok = answered.is_ok(), "answered a JavaScript dialog of the page");
        }
    }
}

/// Every request is checked before it leaves the browser, and documents again when their
/// headers arrive.
fn checked_requests() -> [RequestPattern; 2] {
    [
        RequestPattern {
            url_pattern: Some("*".into()),
            resource_Type: None,
            request_stage: Some(RequestStage::Request),
        },
        RequestPattern {
            url_pattern: Some("*".into()),
            resource_Type: Some(ResourceType::Document),
            request_stage: Some(RequestStage::Response),
        },
    ]
}

/// The HTTP status of the tab's last document response: the page after its redirects.
fn watch_document_status(tab: &Arc<headless_chrome::Tab>) -> anyhow::Result<Arc<Mutex<Option<u16>>>> {
    let status: Arc<Mutex<Option<u16>>> = Arc::default();
    let status_w = status.clone();
    tab.register_response_handling(
        "docdex-status",
        Box::new(move |ev, _body| {
            if ev.Type == ResourceType::Document {
                if let Ok(mut s) = status_w.lock() {
                    *s = Some(ev.response.status as u16);
                }
            }
        }),
    )?;
    Ok(status)
}

/// Starts loading `url` on a helper thread, which answers once the page is committed (or
/// failed) and ends: Page.navigate itself only returns once the server starts answering, so
/// the deadline is kept by the caller; on timeout the tab is stopped and closed, which also
/// ends the call. The page then settles ([`track_settling`]) while the caller waits, not the
/// helper: `wait_until_navigated` held it for up to `page_load_timeout_secs` after the page
/// was stopped or had timed out.
fn navigate_in_background(
    chromium: &Chromium,
    tab: &Arc<headless_chrome::Tab>,
    url: &Url,
    settling: &Arc<AtomicBool>,
) -> Result<std::sync::mpsc::Receiver<std::result::Result<(), String>>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let (nav_tab, target, settling) = (tab.clone(), url.to_string(), settling.clone());
    spawn_page_helper(chromium, "docdex-navigate", move || {
        let r = nav_tab.navigate_to(&target).map(|_| settling.store(true, Ordering::SeqCst));
        let _ = tx.send(r.map_err(|e| e.to_string()));
    })
    .map_err(|e| Error::Upstream(format!("{url}: cannot start the page load: {e}")))?;
    Ok(rx)
}

/// The error a page load that did not finish is answered with.
fn load_outcome(
    loaded: Load,
    url: &Url,
    why_refused: impl Fn(&str) -> Option<DocRefusal>,
    timeout: Duration,
    max_bytes: u64,
) -> Result<()> {
    match loaded {
        Load::Done => Ok(()),
        Load::Failed(msg) => Err(load_error(url, &msg, why_refused(&msg), timeout)),
        Load::TooLarge => {
            Err(Error::Upstream(format!("{url}: the page is larger than [web] max_page_bytes ({max_bytes})")))
        }
        Load::BrowserGone => Err(Error::Upstream(format!(
            "{url}: the browser exited while loading the page (it crashed or was killed); the next fetch starts a new one"
        ))),
        Load::TimedOut => Err(Error::Upstream(format!(
            "{url}: the page did not load within {} s (page_load_timeout_secs)",
            timeout.as_secs()
        ))),
        Load::Cancelled => Err(Error::Cancelled),
    }
}

/// What a failed load answers without a rendered page: the page read as its source from its
/// response (`Rendered::source`; the tab failed it after reading it), or an error status
/// Chromium would not render ([`bodiless_error`]).
fn answer_without_page(loaded: &Load, refused: &Mutex<Refused>, url: &Url) -> Option<Rendered> {
    if matches!(loaded, Load::Failed(_)) {
        let mut r = refused.lock().ok()?;
        let status = r.status;
        if let Some(s) = r.source.take() {
            return Some(Rendered { html: s.page, final_url: s.url, status, source: Some(s.content_type) });
        }
    }
    let status = bodiless_error(loaded, refused)?;
    Some(Rendered { html: String::new(), final_url: url.to_string(), status: Some(status), source: None })
}

/// The status of an error answer Chromium would not render: an HTTP error with an empty body
/// fails the load as `net::ERR_HTTP_RESPONSE_CODE_FAILURE` (one with a body is shown, and its
/// status read as any page's). Reported as the status, as plain HTTP reports it: a registry's
/// bodiless 404 was taken for an unreachable registry, and a 5xx went without a back-off.
fn bodiless_error(loaded: &Load, refused: &Mutex<Refused>) -> Option<u16> {
    let Load::Failed(msg) = loaded else { return None };
    let status = refused.lock().ok()?.status?;
    (msg.contains("ERR_HTTP_RESPONSE_CODE_FAILURE") && status >= 400).then_some(status)
}

/// How a page load ended.
enum Load {
    Done,
    Failed(String),
    TooLarge,
    BrowserGone,
    TimedOut,
    /// The caller's token tripped.
    Cancelled,
}

/// Marks the page as settling from each new document (`init`) until its network is almost
/// idle, as `headless_chrome`'s own `wait_until_navigated` reads it.
fn track_settling(settling: Arc<AtomicBool>) -> impl Fn(&Event) + Send + Sync {
    move |event: &Event| {
        if let Event::PageLifecycleEvent(e) = event {
            match e.params.name.as_str() {
                "init" => settling.store(true, Ordering::SeqCst),
                "networkAlmostIdle" => settling.store(false, Ordering::SeqCst),
                _ => {}
            }
        }
    }
}

/// Waits for the navigation helper to answer and the page to settle, checking every
/// [`CANCEL_TICK`] whether the caller stopped, the page grew past its cap or the browser died
/// (a crashed browser would otherwise hold the caller until the timeout).
fn wait_for_load(
    chromium: &Chromium,
    rx: &std::sync::mpsc::Receiver<std::result::Result<(), String>>,
    (settling, over): (&AtomicBool, &AtomicBool),
    timeout: Duration,
    cancel: &CancelToken,
) -> Load {
    let deadline = std::time::Instant::now() + timeout;
    let mut committed = false;
    loop {
        if cancel.is_cancelled() {
            return Load::Cancelled;
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Load::TimedOut;
        }
        if committed {
            if !settling.load(Ordering::SeqCst) {
                return if over.load(Ordering::SeqCst) { Load::TooLarge } else { Load::Done };
            }
            std::thread::sleep(left.min(SETTLE_TICK));
        } else {
            match rx.recv_timeout(left.min(CANCEL_TICK)) {
                Ok(Ok(())) => committed = true,
                Ok(Err(msg)) => return failed_load(chromium, msg, over),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Load::Failed("the page load stopped".into())
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            }
        }
        if over.load(Ordering::SeqCst) {
            return Load::TooLarge;
        }
        if !chromium.alive() {
            return Load::BrowserGone;
        }
    }
}

/// How often a committed page is looked at for having settled.
const SETTLE_TICK: Duration = Duration::from_millis(10);

/// How a navigation the browser failed ended: past the size cap, with the browser, or its own.
fn failed_load(chromium: &Chromium, msg: String, over: &AtomicBool) -> Load {
    if over.load(Ordering::SeqCst) {
        Load::TooLarge
    } else if msg.contains("connection is closed") || !chromium.alive() {
        Load::BrowserGone
    } else {
        Load::Failed(msg)
    }
}

/// The error for a navigation that failed: what the checks refused when they did, Chromium's
/// own refusal of a non-http redirect, a timeout, or the browser's message.
fn load_error(url: &Url, msg: &str, refused: Option<DocRefusal>, timeout: Duration) -> Error {
    match refused {
        Some(DocRefusal::Content(why)) => return Error::Upstream(why),
        Some(DocRefusal::Connection(super::egress::Refused::Rule(why))) => {
            return Error::BadRequest(format!("{url}: {why}"))
        }
        Some(DocRefusal::Connection(super::egress::Refused::Unreachable(why))) => {
            return Error::Upstream(format!("{url}: {why}"))
        }
        Some(DocRefusal::Rule(why)) if why.starts_with(url.as_str()) => return Error::BadRequest(why),
        Some(DocRefusal::Rule(why)) => {
            return Error::BadRequest(format!("{url}: led to a URL docdex does not fetch: {why}"))
        }
        None => {}
    }
    if msg.contains("ERR_UNSAFE_REDIRECT") {
        return Error::BadRequest(format!(
            "{url}: redirects to a URL that is not http or https (file:, chrome:, ...), which is never followed"
        ));
    }
    if msg.to_ascii_lowercase().contains("timeout") || msg.contains("timed out") {
        return Error::Upstream(format!(
            "{url}: the page did not load within {} s (page_load_timeout_secs)",
            timeout.as_secs()
        ));
    }
    match chromium_words(msg) {
        Some((code, words)) => Error::Upstream(format!("{url}: {words} ({code})")),
        None => Error::Upstream(format!("{url}: {msg}")),
    }
}

/// Chromium's `net::ERR_...` codes for a failed navigation that have a plainer name: they
/// reached the user as `Navigate failed: net::ERR_TOO_MANY_REDIRECTS` while plain HTTP said
/// `more than 5 redirects`. The code is kept beside the words, for a search.
fn chromium_words(msg: &str) -> Option<(&str, &'static str)> {
    const WORDS: [(&str, &str); 9] = [
        ("net::ERR_TOO_MANY_REDIRECTS", "redirects too many times (a redirect loop)"),
        (
            "net::ERR_ABORTED",
            "the browser would not show it as a page: a type it downloads rather than displays, and docdex denies every download",
        ),
        ("net::ERR_EMPTY_RESPONSE", "the server closed the connection without answering"),
        ("net::ERR_CONNECTION_RESET", "the connection was reset"),
        ("net::ERR_CONNECTION_CLOSED", "the server closed the connection"),
        ("net::ERR_SSL_", "the TLS handshake failed (is it an HTTPS port?)"),
        ("net::ERR_CERT_", "the server's TLS certificate is not trusted"),
        ("net::ERR_INVALID_", "the server's answer is not valid HTTP"),
        ("net::ERR_CONTENT_DECODING_FAILED", "the page's compressed body could not be decoded"),
    ];
    let code = msg.split_whitespace().find(|w| w.starts_with("net::ERR_"))?;
    let code = code.trim_end_matches(|c: char| !c.is_ascii_alphanumeric() && c != '_');
    WORDS.iter().find(|(prefix, _)| code.starts_with(prefix)).map(|(_, words)| (code, *words))
}

/// Denies downloads in the tab's browser context, so a page's script (a `blob:` link clicked)
/// cannot make the browser write a file either.
fn deny_downloads(tab: &headless_chrome::Tab) -> anyhow::Result<()> {
    use headless_chrome::protocol::cdp::Browser::{SetDownloadBehavior, SetDownloadBehaviorBehaviorOption};
    tab.call_method(SetDownloadBehavior {
        behavior: SetDownloadBehaviorBehaviorOption::Deny,
        browser_context_id: None,
        download_path: None,
        events_enabled: None,
    })?;
    Ok(())
}

/// Runs `f` on a named helper thread of a page, counted in [`Chromium::page_helpers`] while
/// it runs (also when it cannot be started: the count is given back at once).
fn spawn_page_helper(chromium: &Chromium, name: &str, f: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    let running = HelperRunning::new(&chromium.page_helpers);
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let _running = running;
            f();
        })
        .map(|_| ())
}

/// One helper counted while it lives.
struct HelperRunning(Arc<std::sync::atomic::AtomicUsize>);

impl HelperRunning {
    fn new(count: &Arc<std::sync::atomic::AtomicUsize>) -> HelperRunning {
        count.fetch_add(1, Ordering::SeqCst);
        HelperRunning(count.clone())
    }
}

impl Drop for HelperRunning {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chromium_failures_are_said_in_words_with_their_code() {
        let u = Url::parse("http://e.org/x").unwrap();
        let t = Duration::from_secs(15);
        let said = |msg: &str| load_error(&u, msg, None, t).to_string();
        assert_eq!(
            said("Navigate failed: net::ERR_TOO_MANY_REDIRECTS"),
            "http://e.org/x: redirects too many times (a redirect loop) (net::ERR_TOO_MANY_REDIRECTS)"
        );
        assert!(said("Navigate failed: net::ERR_ABORTED").contains("docdex denies every download (net::ERR_ABORTED)"));
        assert!(said("Navigate failed: net::ERR_SSL_PROTOCOL_ERROR").contains("TLS handshake failed"));
        assert!(said("Navigate failed: net::ERR_CERT_AUTHORITY_INVALID").contains("not trusted"));
        // A code without plainer words is passed on as Chromium said it.
        assert_eq!(
            said("Navigate failed: net::ERR_BLOCKED_BY_XYZ"),
            "http://e.org/x: Navigate failed: net::ERR_BLOCKED_BY_XYZ"
        );
    }

    #[test]
    fn a_text_page_is_one_preformatted_block_as_the_browser_shows_it() {
        let page = as_page("a <b>x</b> & y\nline two".into(), "text/plain; charset=utf-8");
        assert_eq!(page, "<html><head></head><body><pre>a &lt;b&gt;x&lt;/b&gt; &amp; y\nline two</pre></body></html>");
        for markup in ["text/html", "application/xhtml+xml", ""] {
            assert_eq!(as_page("<p>x</p>".into(), markup), "<p>x</p>", "{markup}");
        }
        // XML is read as its source, as a text page is (tour17: the two engines disagreed).
        for xml in ["text/xml", "application/xml; charset=utf-8", "application/rss+xml", "application/rls-services+xml"]
        {
            assert!(xml_source(xml), "{xml}");
            let page = as_page("<a><![CDATA[x]]></a>".into(), xml);
            assert_eq!(
                page,
                "<html><head></head><body><pre>&lt;a&gt;&lt;![CDATA[x]]&gt;&lt;/a&gt;</pre></body></html>"
            );
        }
        assert!(!xml_source("application/xhtml+xml") && !xml_source("text/html") && !xml_source(""));
    }

    #[test]
    fn documents_are_read_only_when_text_not_a_download_and_within_the_cap() {
        let u = "http://e.org/x";
        for ok in ["text/html; charset=utf-8", "", "application/xhtml+xml", "text/plain"] {
            assert_eq!(refuse_document(u, ok, None, Some(10), 100), None, "{ok}");
        }
        let bin = refuse_document(u, "application/octet-stream", None, None, 100).unwrap();
        assert!(bin.contains("not a text page (application/octet-stream)"), "{bin}");
        let pdf = refuse_document(u, "Application/PDF", None, None, 100).unwrap();
        assert!(pdf.contains("application/pdf"), "{pdf}");
        let attached = refuse_document(u, "text/html", Some("attachment; filename=x.html"), None, 100).unwrap();
        assert!(attached.contains("download"), "{attached}");
        assert_eq!(refuse_document(u, "text/html", Some("inline"), None, 100), None);
        let big = refuse_document(u, "text/html", None, Some(101), 100).unwrap();
        assert!(big.contains("101 bytes is more than [web] max_page_bytes (100)"), "{big}");
    }

    #[test]
    fn text_is_decoded_in_its_charset() {
        assert_eq!(decode_text(b"caf\xe9", "text/html; charset=ISO-8859-1"), "café");
        assert_eq!(decode_text(b"caf\xe9", "text/html; charset=\"windows-1252\""), "café");
        let meta = b"<html><head><meta charset=\"windows-1252\"><title>caf\xe9</title>";
        assert!(decode_text(meta, "text/html").contains("<title>café</title>"));
        let equiv = b"<meta http-equiv='Content-Type' content='text/html; charset=iso-8859-1'>\xe9";
        assert!(decode_text(equiv, "").ends_with('é'));
        assert_eq!(decode_text("café".as_bytes(), ""), "café", "UTF-8 by default");
        assert_eq!(decode_text(b"\xef\xbb\xbfcaf\xc3\xa9", "text/html; charset=iso-8859-1"), "café", "a BOM wins");
        assert_eq!(decode_text(b"caf\xff", "text/plain; charset=utf-8"), "caf\u{fffd}");
        let json = b"{\"d\": \"charset=latin1 \xc3\xa9\"}";
        assert!(decode_text(json, "application/json").ends_with("latin1 é\"}"), "JSON is UTF-8");
    }
}
