//! Running the real `docdex serve` / `docdex daemon` on a free loopback port.

use crate::util::Env;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A spawned server process; killed on drop if still running.
pub struct Server {
    pub child: Child,
    pub addr: String,
    pub stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Server {
    /// Starts `docdex <args> --bind 127.0.0.1:0` with `envs`, waiting for its listening line.
    pub fn start(env: &Env, args: &[&str], envs: &[(&str, &str)]) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_docdex"));
        cmd.args(args).args(["--bind", "127.0.0.1:0"]);
        Self::spawn(env, cmd, envs)
    }

    /// Starts `cmd` (a docdex server command line, possibly behind a wrapper such as
    /// `sh -c 'ulimit ...; exec ...'`) with this env's home, waiting for its listening line.
    pub fn spawn(env: &Env, mut cmd: Command, envs: &[(&str, &str)]) -> Server {
        cmd.env("DOCDEX_HOME", env.home())
            .env_remove("DOCDEX_AUTH_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn docdex");
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        {
            let mut err = child.stderr.take().unwrap();
            let sink = stderr.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = err.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            });
        }
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).expect("read listening line");
        let addr = line
            .trim()
            .rsplit("http://")
            .next()
            .filter(|_| line.contains("listening on"))
            .unwrap_or_else(|| panic!("no listening line: {line:?}; stderr: {}", stderr.lock().unwrap()))
            .to_string();
        std::thread::spawn(move || for _ in out.lines() {});
        Server { child, addr, stderr }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
    }

    /// Waits for the process to exit (bounded).
    pub fn wait_exit(&mut self, max: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + max;
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(Instant::now() < deadline, "server did not exit; stderr: {}", self.stderr.lock().unwrap());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A small async HTTP client.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder().timeout(Duration::from_secs(20)).build().unwrap()
}

/// Polls `cond` until true (bounded; a behaviour test, not a timing test).
pub async fn eventually<F, Fut>(what: &str, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cond().await {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// An initialized streamable-HTTP MCP session at `url` (`initialize` answered 200, then
/// `notifications/initialized` accepted with 202): its id.
pub async fn mcp_session(c: &reqwest::Client, url: &str) -> String {
    let init = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let r = mcp_post(c, url, None, &init).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let session = r.headers().get("mcp-session-id").unwrap().to_str().unwrap().to_string();
    r.text().await.unwrap();
    let initialized = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(mcp_post(c, url, Some(&session), &initialized).send().await.unwrap().status().as_u16(), 202);
    session
}

/// A JSON-RPC POST to an MCP endpoint, in `session` when given.
pub fn mcp_post(
    c: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: &serde_json::Value,
) -> reqwest::RequestBuilder {
    let r = c
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    match session {
        Some(s) => r.header("mcp-session-id", s),
        None => r,
    }
}
