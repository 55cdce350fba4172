//! Loopback fixture sites for the web tier: a DuckDuckGo-like results page, a challenge page,
//! a 429-then-results endpoint, documentation pages with clutter around the article, a slow
//! page, a redirect, and a page that tries to reach another loopback address. Every request is
//! logged with its arrival time so tests can assert rate limits and cache hits.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One request the fixture saw.
#[derive(Debug, Clone)]
pub struct Hit {
    pub target: String,
    pub at: Instant,
}

/// A reply.
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub delay: Duration,
}

impl Reply {
    pub fn html(body: impl Into<String>) -> Reply {
        Reply {
            status: 200,
            content_type: "text/html; charset=utf-8",
            headers: vec![],
            body: body.into(),
            delay: Duration::ZERO,
        }
    }
    pub fn status(mut self, s: u16) -> Reply {
        self.status = s;
        self
    }
}

type Handler = dyn Fn(&str, &str, usize) -> Reply + Send + Sync;

/// A fixture server on a loopback address.
pub struct Fixture {
    pub addr: SocketAddr,
    hits: Arc<Mutex<Vec<Hit>>>,
    stop: Arc<AtomicBool>,
}

impl Fixture {
    /// Serves `handler(target, base_url, earlier_hits_of_this_path)` on `ip`:0.
    pub fn start(ip: &str, handler: impl Fn(&str, &str, usize) -> Reply + Send + Sync + 'static) -> Fixture {
        let listener = TcpListener::bind(format!("{ip}:0")).expect("bind fixture");
        let addr = listener.local_addr().expect("addr");
        let hits: Arc<Mutex<Vec<Hit>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        let (h, s) = (hits.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (h, s, handler) = (h.clone(), s.clone(), handler.clone());
                std::thread::spawn(move || serve(conn, addr, &h, &s, &*handler));
            }
        });
        Fixture { addr, hits, stop }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Requests whose target starts with `prefix`.
    pub fn hits(&self, prefix: &str) -> Vec<Hit> {
        self.hits.lock().unwrap().iter().filter(|h| h.target.starts_with(prefix)).cloned().collect()
    }

    /// Waits until a request starting with `prefix` arrived.
    pub fn wait_for(&self, prefix: &str, limit: Duration) -> bool {
        let t = Instant::now();
        while t.elapsed() < limit {
            if !self.hits(prefix).is_empty() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(mut conn: TcpStream, addr: SocketAddr, hits: &Mutex<Vec<Hit>>, stop: &AtomicBool, handler: &Handler) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        if buf.len() > 65536 {
            return;
        }
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let target = head.split_whitespace().nth(1).unwrap_or("/").to_string();
    let earlier = {
        let mut h = hits.lock().unwrap();
        let path = target.split('?').next().unwrap_or("").to_string();
        let n = h.iter().filter(|x| x.target.split('?').next() == Some(path.as_str())).count();
        h.push(Hit { target: target.clone(), at: Instant::now() });
        n
    };
    let reply = handler(&target, &format!("http://{addr}"), earlier);
    let until = Instant::now() + reply.delay;
    while Instant::now() < until {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let reason = match reply.status {
        200 => "OK",
        302 => "Found",
        404 => "Not Found",
        429 => "Too Many Requests",
        _ => "Status",
    };
    let mut head = format!(
        "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
        reply.status,
        reply.content_type,
        reply.body.len()
    );
    for (k, v) in &reply.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(reply.body.as_bytes());
}

/// The article the documentation pages carry, with clutter around it.
pub fn doc_page(title: &str, article: &str) -> String {
    format!(
        r#"<!doctype html><html><head><title>{title}</title><link rel="stylesheet" href="/style.css"></head><body>
<nav class="menu"><a href="/">Home</a> | <a href="/blog">Blog</a> | <a href="/login">Sign in to continue</a></nav>
<div class="sidebar ad">Buy our premium plan today! Limited offer, subscribe now and save.</div>
<article><h1>{title}</h1>{article}</article>
<footer>Copyright 2024 Example Corp. All rights reserved. Cookie settings.</footer>
<img src="/pixel.png"></body></html>"#
    )
}

pub const WIDGETS: &str = "<p>Widgets are configured through the frobnicate option, which takes a list of knob names. Each knob name maps to a handler that runs when the widget is rendered on the page.</p>\
<p>To reset a widget, call reset_widget with its identifier. The reset clears every knob and restores the defaults that were loaded when the application started.</p>\
<p>Widgets can be nested up to eight levels deep; deeper nesting is rejected with an error naming the widget that broke the limit.</p>";

pub const GADGETS: &str = "<p>Gadgets talk to widgets over the quux bus. A gadget subscribes to the bus with a topic name and receives every message published under it, in order.</p>\
<p>The quux bus keeps the last hundred messages per topic, so a gadget that subscribes late can replay what it missed before it goes live.</p>";

/// DuckDuckGo-like results page: an ad, then `links` (url, title, snippet).
pub fn results_page(links: &[(String, &str, &str)]) -> String {
    let mut body = String::from(
        r#"<html><body><div id="links" class="results">
<div class="result results_links result--ad"><a class="result__a" href="https://duckduckgo.com/y.js?ad_provider=x">Sponsored</a><a class="result__snippet">Buy</a></div>"#,
    );
    for (url, title, snippet) in links {
        let enc: String = url::form_urlencoded::byte_serialize(url.as_bytes()).collect();
        body.push_str(&format!(
            r#"<div class="result results_links web-result"><h2 class="result__title"><a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg={enc}&amp;rut=x">{title}</a></h2><a class="result__url" href="x">{url}</a><a class="result__snippet" href="x">{snippet}</a></div>"#
        ));
    }
    body.push_str("</div></body></html>");
    body
}

pub const CHALLENGE: &str = r#"<html><body><div class="anomaly-modal__title">Unfortunately, bots use DuckDuckGo too.</div><form id="challenge-form" action="//duckduckgo.com/anomaly.js"></form></body></html>"#;

/// A documentation site plus a search endpoint in one server. `secret` is a URL on another
/// loopback address that no fetch may reach unless allowed.
pub fn site(secret: String) -> impl Fn(&str, &str, usize) -> Reply + Send + Sync + 'static {
    move |target, base, earlier| {
        let path = target.split('?').next().unwrap_or("");
        let query = target.split_once("q=").map(|(_, q)| q).unwrap_or("");
        match path {
            "/doc/widgets" => Reply::html(doc_page("Configuring widgets", WIDGETS)),
            "/doc/gadgets" => Reply::html(doc_page("Gadgets and the quux bus", GADGETS)),
            "/redirect" => {
                let mut r = Reply::html("moved").status(302);
                r.headers.push(("Location".into(), "/doc/widgets".into()));
                r
            }
            "/slow" => {
                let mut r = Reply::html(doc_page("Slow", WIDGETS));
                r.delay = Duration::from_secs(60);
                r
            }
            "/leaky" => Reply::html(format!(
                "{}<script>fetch('{secret}').catch(()=>{{}}); var i = new Image(); i.src = '{secret}?img';</script>",
                doc_page("Leaky page", GADGETS)
            )),
            "/html/" if query.starts_with("nothing") => Reply::html(
                r#"<html><body><div class="results"><div class="no-results">No results.</div></div></body></html>"#,
            ),
            "/html/" => Reply::html(results_page(&[
                (
                    format!("{base}/doc/widgets"),
                    "Configuring <b>widgets</b>",
                    "Widgets are configured through frobnicate.",
                ),
                (format!("{base}/doc/gadgets"), "Gadgets and the quux bus", "Gadgets subscribe to topics."),
                ("https://www.pinterest.com/pin/1".to_string(), "Pinned widgets", "blocked host"),
                (secret.clone(), "Secret", "a private address"),
            ])),
            "/challenge/html/" => Reply::html(CHALLENGE).status(202),
            "/busy/html/" if earlier == 0 => {
                let mut r = Reply::html("slow down").status(429);
                r.headers.push(("Retry-After".into(), "1".into()));
                r
            }
            "/busy/html/" => Reply::html(results_page(&[(format!("{base}/doc/gadgets"), "Gadgets", "quux")])),
            _ => Reply::html("<html><body>not found</body></html>").status(404),
        }
    }
}

/// A server on 127.0.0.2 that records what reached it (nothing should).
pub fn secret_server() -> Fixture {
    Fixture::start("127.0.0.2", |_, _, _| Reply::html("<html><body>internal secret</body></html>"))
}

/// Browser processes whose command line mentions `needle` (the test's DOCDEX_HOME).
pub fn browser_processes(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let Ok(raw) = std::fs::read(e.path().join("cmdline")) else { continue };
        let cmd = String::from_utf8_lossy(&raw).replace('\0', " ");
        let zombie = std::fs::read_to_string(e.path().join("stat"))
            .map(|s| s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
            .unwrap_or(false);
        if cmd.contains("--user-data-dir=") && cmd.contains(needle) && !zombie {
            out.push(pid);
        }
    }
    out
}

/// True when a Chromium is installed (CI installs Debian's `chromium`; a developer machine
/// without one skips the browser tests with a note, and CI fails them through DOCDEX_REQUIRE_BROWSER).
pub fn have_browser() -> bool {
    let found = ["chromium", "chromium-browser", "google-chrome"].iter().any(|n| {
        std::env::var_os("PATH").map(|p| std::env::split_paths(&p).any(|d| d.join(n).is_file())).unwrap_or(false)
    });
    if !found && std::env::var_os("DOCDEX_REQUIRE_BROWSER").is_some() {
        panic!("DOCDEX_REQUIRE_BROWSER is set but no chromium is installed");
    }
    if !found {
        eprintln!("no chromium on PATH: browser test skipped (apt-get install chromium)");
    }
    found
}

/// A "browser" in `dir` that starts and never opens its DevTools socket: a hung start.
pub fn hung_browser(dir: &std::path::Path) -> std::path::PathBuf {
    let hung = dir.join("hung-chrome");
    std::fs::write(&hung, "#!/bin/sh\nexec sleep 300\n").unwrap();
    let mut perms = std::fs::metadata(&hung).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&hung, perms).unwrap();
    hung
}

/// A config for the web tests: fixtures allowed, discovery at `ddg`, short page timeout. The
/// browser gets 120 s to start unless `scraper_extra` sets its own limit: beside the rest of the
/// suite on two cores a Chromium start once took over the default 20 s in CI, and a start taken
/// for hung sends pages over plain HTTP, failing tests that are about the browser.
pub fn web_config(ddg: &str, proxy: &str, web_extra: &str, scraper_extra: &str) -> String {
    let launch = if scraper_extra.contains("launch_timeout_secs") { "" } else { "launch_timeout_secs = 120\n" };
    format!(
        "[web]\nddg_base_url = \"{ddg}\"\nddg_proxy_base_url = \"{proxy}\"\nallow_hosts = [\"127.0.0.1\"]\nblocklist = [\"pinterest.com\"]\n{web_extra}\n[web.scraper]\npage_load_timeout_secs = 8\n{launch}{scraper_extra}\n"
    )
}
