//! The browser's one way out: a SOCKS5 proxy on loopback that docdex runs for each Chromium.
//!
//! The URL rules ([`super::policy`]) judge a URL by its host, and for a name by what *docdex*
//! resolves it to. Chromium used to resolve names itself, after the check and as often as it
//! liked, so a page's sub-request (or a frame, or a redirect) naming a host that docdex could
//! not resolve, or whose answer changed between the check and the load (DNS rebinding), reached
//! loopback or the private network. Now Chromium is started with `--proxy-server=socks5://...`
//! (SOCKS5 hands the proxy the host *name*) and `--proxy-bypass-list=<-loopback>` (even
//! `localhost` and `127.0.0.1` go through it), so every connection any tab makes is opened here:
//! the name is resolved once, every address it gave is checked, and only those checked
//! addresses are connected to. A name docdex cannot resolve is not reached at all.
//!
//! What may reach a non-public address is what the rules allow for the pages being fetched:
//! hosts on `[web] allow_hosts`, and the host of a URL the user gave (typed or configured).
//! Each tab holds a [`Pass`] for as long as it is open; with no page open, nothing but public
//! addresses is reached.

use super::policy::{ip_non_public, literal_non_public, normalize_host, UrlPolicy};
use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How long resolving a name, or connecting to one of its addresses, may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(10);
/// The end of a refusal by the private-address rule, as the URL rules word it.
const PRIVATE: &str = "discovered URLs may not reach loopback or private networks (add the host to [web] allow_hosts / DOCDEX_WEB_ALLOW_HOSTS to allow it)";
/// Refusals kept for the errors that explain a failed load.
const REFUSALS_KEPT: usize = 64;

/// The proxy of one browser: a loopback listener served by its own thread until dropped.
pub(crate) struct Egress {
    addr: SocketAddr,
    book: Arc<Book>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// What the open tabs allow, and what was refused lately.
#[derive(Default)]
struct Book {
    passes: Mutex<Vec<(u64, Pass)>>,
    next: AtomicU64,
    refused: Mutex<VecDeque<(String, Refused)>>,
}

/// Why a connection was not made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The URL rules: a non-public address, the blocklist.
    Rule(String),
    /// The name does not resolve here, or no address answered.
    Unreachable(String),
}

/// The rules of one open tab.
#[derive(Clone)]
struct Pass {
    policy: UrlPolicy,
    /// The host of the URL the user gave, when the tab's page is one (may be this machine).
    trusted: Option<String>,
}

/// A tab's rules, in force while this lives.
pub(crate) struct PassGuard {
    book: Arc<Book>,
    id: u64,
}

impl Drop for PassGuard {
    fn drop(&mut self) {
        if let Ok(mut p) = self.book.passes.lock() {
            p.retain(|(id, _)| *id != self.id);
        }
    }
}

impl Egress {
    /// Starts the proxy on a random loopback port.
    pub(crate) fn start() -> std::io::Result<Egress> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().thread_name("docdex-egress-dns").build()?;
        let book: Arc<Book> = Arc::default();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = book.clone();
        let thread = std::thread::Builder::new().name("docdex-egress".into()).spawn(move || {
            rt.block_on(async move {
                match TcpListener::from_std(listener) {
                    Ok(l) => {
                        tokio::select! {
                            _ = stopped => {}
                            _ = accept(l, served) => {}
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "the browser's proxy could not listen"),
                }
            });
            rt.shutdown_timeout(Duration::from_millis(200));
        })?;
        Ok(Egress { addr, book, stop: Some(stop), thread: Some(thread) })
    }

    /// The Chromium arguments that send every connection through this proxy.
    pub(crate) fn browser_args(&self) -> [String; 2] {
        [format!("--proxy-server=socks5://{}", self.addr), "--proxy-bypass-list=<-loopback>".to_string()]
    }

    /// Puts a tab's rules in force until the guard drops: `policy`'s `allow_hosts` and
    /// blocklist, and `trusted`, the host of a URL the user gave.
    pub(crate) fn admit(&self, policy: &UrlPolicy, trusted: Option<String>) -> PassGuard {
        let id = self.book.next.fetch_add(1, Ordering::SeqCst);
        let pass = Pass { policy: policy.clone(), trusted: trusted.map(|h| normalize_host(&h)) };
        if let Ok(mut p) = self.book.passes.lock() {
            p.push((id, pass));
        }
        PassGuard { book: self.book.clone(), id }
    }

    /// Why the last connection to `host` was not made, if it was not.
    pub(crate) fn refusal(&self, host: &str) -> Option<Refused> {
        let host = normalize_host(host);
        let r = self.book.refused.lock().ok()?;
        r.iter().rev().find(|(h, _)| *h == host).map(|(_, why)| why.clone())
    }
}

impl Drop for Egress {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Book {
    fn trusted(&self, host: &str) -> bool {
        self.passes.lock().is_ok_and(|p| {
            p.iter().any(|(_, pass)| pass.trusted.as_deref() == Some(host) || pass.policy.allowed_host(host))
        })
    }

    fn blocked(&self, host: &str) -> Option<String> {
        let p = self.passes.lock().ok()?;
        p.iter().find_map(|(_, pass)| pass.policy.blocked_by(host).map(str::to_string))
    }

    fn note(&self, host: &str, why: Refused) {
        tracing::info!(host, ?why, "a connection of the browser was not made");
        if let Ok(mut r) = self.refused.lock() {
            if r.len() >= REFUSALS_KEPT {
                r.pop_front();
            }
            r.push_back((host.to_string(), why));
        }
    }

    /// The addresses a connection to `host:port` may use: every address the name resolves to
    /// here, each checked; `Err` says why none may be used.
    async fn addresses(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, Refused> {
        if let Some(b) = self.blocked(host) {
            return Err(Refused::Rule(format!("{host} is on the blocklist ({b})")));
        }
        let trusted = self.trusted(host);
        if !trusted {
            if let Some(why) = literal_non_public(host) {
                return Err(Refused::Rule(format!("{why}; {PRIVATE}")));
            }
        }
        if let Ok(ip) = host.parse::<IpAddr>() {
            return Ok(vec![SocketAddr::new(ip, port)]);
        }
        let unresolved =
            |e: String| Refused::Unreachable(format!("{host} does not resolve here ({e}), so it is not reached"));
        let found = tokio::time::timeout(STEP_TIMEOUT, tokio::net::lookup_host((host, port)))
            .await
            .map_err(|_| unresolved(format!("no answer within {} s", STEP_TIMEOUT.as_secs())))?
            .map_err(|e| unresolved(e.to_string()))?;
        let addrs: Vec<SocketAddr> = found.collect();
        if addrs.is_empty() {
            return Err(unresolved("no address".into()));
        }
        if !trusted {
            if let Some((a, why)) = addrs.iter().find_map(|a| ip_non_public(a.ip()).map(|w| (a, w))) {
                return Err(Refused::Rule(format!("{host} resolves to {} ({why}); {PRIVATE}", a.ip())));
            }
        }
        Ok(addrs)
    }
}

async fn accept(listener: TcpListener, book: Arc<Book>) {
    loop {
        match listener.accept().await {
            Ok((conn, _)) => {
                let book = book.clone();
                tokio::spawn(async move {
                    if let Err(e) = serve(conn, &book).await {
                        tracing::debug!(error = %e, "a browser connection ended");
                    }
                });
            }
            Err(e) => {
                tracing::warn!(error = %e, "the browser's proxy stopped accepting");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// SOCKS5 reply codes (RFC 1928).
const REP_OK: u8 = 0;
const REP_FAILURE: u8 = 1;
const REP_NOT_ALLOWED: u8 = 2;
const REP_UNREACHABLE: u8 = 4;
const REP_NO_COMMAND: u8 = 7;
const REP_NO_ADDRESS_TYPE: u8 = 8;

/// One SOCKS5 connection: the greeting (no authentication), one CONNECT, then the tunnel.
async fn serve(mut conn: TcpStream, book: &Book) -> std::io::Result<()> {
    let mut head = [0u8; 2];
    conn.read_exact(&mut head).await?;
    let mut methods = vec![0u8; usize::from(head[1])];
    conn.read_exact(&mut methods).await?;
    if head[0] != 5 || !methods.contains(&0) {
        conn.write_all(&[5, 0xff]).await?;
        return Ok(());
    }
    conn.write_all(&[5, 0]).await?;
    let mut req = [0u8; 4];
    conn.read_exact(&mut req).await?;
    let host = match req[3] {
        1 => {
            let mut b = [0u8; 4];
            conn.read_exact(&mut b).await?;
            IpAddr::from(b).to_string()
        }
        4 => {
            let mut b = [0u8; 16];
            conn.read_exact(&mut b).await?;
            normalize_host(&IpAddr::from(b).to_string())
        }
        3 => {
            let mut len = [0u8; 1];
            conn.read_exact(&mut len).await?;
            let mut name = vec![0u8; usize::from(len[0])];
            conn.read_exact(&mut name).await?;
            normalize_host(&String::from_utf8_lossy(&name))
        }
        _ => return reply(&mut conn, REP_NO_ADDRESS_TYPE).await,
    };
    let mut port = [0u8; 2];
    conn.read_exact(&mut port).await?;
    let port = u16::from_be_bytes(port);
    if req[0] != 5 || req[1] != 1 {
        return reply(&mut conn, REP_NO_COMMAND).await;
    }
    let addrs = match book.addresses(&host, port).await {
        Ok(a) => a,
        Err(why) => {
            let code = if matches!(why, Refused::Rule(_)) { REP_NOT_ALLOWED } else { REP_UNREACHABLE };
            book.note(&host, why);
            return reply(&mut conn, code).await;
        }
    };
    let Some(mut out) = connect(&addrs).await else {
        book.note(&host, Refused::Unreachable(format!("{host}:{port} refused the connection or did not answer")));
        return reply(&mut conn, REP_UNREACHABLE).await;
    };
    reply(&mut conn, REP_OK).await?;
    tokio::io::copy_bidirectional(&mut conn, &mut out).await.map(|_| ())
}

/// The first of `addrs` that accepts a connection.
async fn connect(addrs: &[SocketAddr]) -> Option<TcpStream> {
    for a in addrs {
        if let Ok(Ok(s)) = tokio::time::timeout(STEP_TIMEOUT, TcpStream::connect(a)).await {
            return Some(s);
        }
    }
    None
}

async fn reply(conn: &mut TcpStream, code: u8) -> std::io::Result<()> {
    let code = if code > REP_NO_ADDRESS_TYPE { REP_FAILURE } else { code };
    conn.write_all(&[5, code, 0, 1, 0, 0, 0, 0, 0, 0]).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book(allow: &[&str], trusted: Option<&str>) -> Book {
        let b = Book::default();
        let allow: Vec<String> = allow.iter().map(|s| s.to_string()).collect();
        let policy = UrlPolicy::new(&["blocked.example".into()], &allow);
        b.passes.lock().unwrap().push((0, Pass { policy, trusted: trusted.map(str::to_string) }));
        b
    }

    fn addresses(b: &Book, host: &str) -> Result<Vec<SocketAddr>, String> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(b.addresses(host, 80)).map_err(|r| match r {
            Refused::Rule(s) => format!("rule: {s}"),
            Refused::Unreachable(s) => format!("unreachable: {s}"),
        })
    }

    #[test]
    fn only_checked_addresses_are_connected_to() {
        let b = book(&["127.0.0.1"], None);
        assert_eq!(addresses(&b, "127.0.0.1").unwrap(), vec!["127.0.0.1:80".parse().unwrap()]);
        assert!(addresses(&b, "127.0.0.2").unwrap_err().contains("loopback"));
        assert!(addresses(&b, "10.1.2.3").unwrap_err().contains("private"));
        assert!(addresses(&b, "localhost").unwrap_err().contains("this machine"));
        assert!(addresses(&b, "blocked.example").unwrap_err().contains("blocklist"));
        let e = addresses(&b, "no-such-host.invalid").unwrap_err();
        assert!(e.starts_with("unreachable: ") && e.contains("does not resolve here"), "{e}");
        assert!(addresses(&b, "10.1.2.3").unwrap_err().starts_with("rule: "));
        assert_eq!(addresses(&b, "93.184.215.14").unwrap().len(), 1, "a public address");
        // The host of a URL the user gave may be this machine, by name too.
        let typed = book(&[], Some("localhost"));
        let local = addresses(&typed, "localhost").unwrap();
        assert!(local.iter().all(|a| a.ip().is_loopback()), "{local:?}");
    }

    #[test]
    fn without_an_open_tab_only_public_addresses_are_reached() {
        let b = Book::default();
        assert!(addresses(&b, "127.0.0.1").is_err());
        let guard = PassGuard { book: Arc::new(book(&["127.0.0.1"], None)), id: 0 };
        assert!(addresses(&guard.book, "127.0.0.1").is_ok());
        let shared = guard.book.clone();
        drop(guard);
        assert!(addresses(&shared, "127.0.0.1").is_err(), "the pass ended with its tab");
    }
}
