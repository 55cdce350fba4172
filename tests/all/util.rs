//! Shared helpers: a temporary DOCDEX_HOME, repo builders, and running the real binary.

use docdex::engine::protocol::SearchRequest;
use docdex::Engine;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A temporary docdex home plus helpers to make repos in it.
pub struct Env {
    pub dir: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Env {
        Env { dir: tempfile::tempdir().expect("tempdir") }
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// A new empty repository directory named `name`.
    pub fn repo(&self, name: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::create_dir_all(&p).expect("mkdir repo");
        p
    }

    pub fn engine(&self) -> Engine {
        Engine::open_at(&self.home()).expect("engine")
    }

    /// Runs the real `docdex` binary with this home.
    pub fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_docdex"))
            .args(args)
            .env("DOCDEX_HOME", self.home())
            .env("NO_COLOR", "1")
            .env_remove("DOCDEX_AUTH_TOKEN")
            .output()
            .expect("run docdex")
    }

    /// Runs the real binary with extra environment variables.
    pub fn run_env(&self, args: &[&str], vars: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_docdex"));
        cmd.args(args).env("DOCDEX_HOME", self.home()).env("NO_COLOR", "1").env_remove("DOCDEX_AUTH_TOKEN");
        for (k, v) in vars {
            cmd.env(k, v);
        }
        cmd.output().expect("run docdex")
    }

    /// Runs and parses stdout as JSON, asserting success.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let out = self.run(args);
        assert!(out.status.success(), "docdex {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("bad JSON from {args:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)))
    }
}

pub fn write(root: &Path, rel: &str, content: impl AsRef<[u8]>) {
    let p = root.join(rel);
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    std::fs::write(p, content).expect("write");
}

/// Paths of the hits for `query`, in rank order.
pub fn hit_paths(engine: &Engine, repo: &Path, query: &str) -> Vec<String> {
    let req = SearchRequest { query: query.into(), limit: Some(20), ..Default::default() };
    engine.search(repo, &req).expect("search").results.into_iter().map(|h| h.path).collect()
}

/// Distinct paths in rank order.
pub fn distinct(paths: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in paths {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

pub fn quiet() -> impl Fn(&docdex::engine::protocol::IndexProgress) + Sync {
    |_: &docdex::engine::protocol::IndexProgress| {}
}

/// A small multi-language repository with known content.
pub fn sample_repo(root: &Path) {
    write(root, "src/auth/session.rs", "//! Session handling.\npub struct SessionStore { ttl: u64 }\n\nimpl SessionStore {\n    pub fn expire_stale_sessions(&mut self) {}\n}\n");
    write(root, "src/parser.py", "def parse_config(path):\n    \"\"\"Read a configuration file.\"\"\"\n    with open(path) as f:\n        return f.read()\n");
    write(
        root,
        "web/app.ts",
        "export function renderDashboard(userName: string) {\n  return `<h1>${userName}</h1>`;\n}\n",
    );
    write(root, "README.md", "# Sample\n\nA sample repository.\n\n## Usage\n\nRun the dashboard renderer.\n");
    write(root, "Cargo.lock", "# lockfile\n[[package]]\nname = \"session\"\nversion = \"1.0.0\"\n");
}

impl Env {
    /// Writes `<home>/config.toml` (the real binary and `engine()` read it).
    pub fn write_config(&self, text: &str) {
        std::fs::create_dir_all(self.home()).expect("mkdir home");
        std::fs::write(self.home().join("config.toml"), text).expect("write config");
    }

    /// An engine whose `[llm]` points at `base_url` with the given provider and models.
    pub fn engine_for(&self, provider: &str, base_url: &str, chat: &str, embed: &str) -> Engine {
        self.write_config(&llm_config(provider, base_url, chat, embed));
        self.engine()
    }
}

/// A config with just the `[llm]` section set.
pub fn llm_config(provider: &str, base_url: &str, chat: &str, embed: &str) -> String {
    format!(
        "[llm]\nprovider = \"{provider}\"\nbase_url = \"{base_url}\"\ndefault_model = \"{chat}\"\nembedding_model = \"{embed}\"\nrequest_timeout_secs = 5\n"
    )
}

/// A loopback "model server" that accepts connections and never answers (stuck, wedged
/// behind a proxy); returns its URL and the count of connections it accepted.
pub fn stuck_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    let accepted = std::sync::Arc::new(AtomicUsize::new(0));
    let seen = accepted.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in listener.incoming().flatten() {
            seen.fetch_add(1, Ordering::SeqCst);
            held.push(c);
        }
    });
    (url, accepted)
}

/// A base URL where nothing listens (a port that was free a moment ago).
pub fn dead_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    drop(l);
    format!("http://127.0.0.1:{port}")
}

/// Runs git in `root` as a test author (branch `main`, no signing, no global config's say),
/// and fails the test when git does. No automatic gc: a detached `gc --auto` after a large
/// commit prunes object folders while the next commit writes into them (seen in CI as
/// "unable to create temporary file").
pub fn git(root: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "commit.gpgsign=false"])
        .args(["-c", "init.defaultBranch=main", "-c", "gc.auto=0", "-c", "maintenance.auto=false"])
        .args(args)
        .current_dir(root)
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Makes `root` a git repository with everything in it committed on `main`.
pub fn git_commit_all(root: &Path) {
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "initial"]);
}

/// Waits (up to 60 s: a loaded machine can take long, and a passing test never waits that
/// long) for `cond`, failing the test with `what` when it never holds.
pub fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !cond() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A running `Engine::watch` on its own thread, started once its catch-up run is done; stopped
/// (and its result checked) by [`Watcher::stop`] or on drop.
pub struct Watcher {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    handle: Option<std::thread::JoinHandle<docdex::Result<()>>>,
}

impl Watcher {
    pub fn start(engine: &Engine, repo: &Path) -> Watcher {
        use docdex::engine::watch::WatchReport;
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let ready = std::sync::Arc::new(AtomicBool::new(false));
        let handle = {
            let (engine, repo, stop, ready) = (engine.clone(), repo.to_path_buf(), stop.clone(), ready.clone());
            std::thread::spawn(move || {
                let report = move |r: WatchReport| {
                    if matches!(r, WatchReport::Ready(_)) {
                        ready.store(true, Ordering::SeqCst);
                    }
                };
                engine.watch(&repo, &stop, &report)
            })
        };
        eventually("the watcher's catch-up run", || ready.load(Ordering::SeqCst));
        Watcher { stop, handle: Some(handle) }
    }

    /// Stops the watcher; it must have run without an error.
    pub fn stop(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let r = h.join().expect("watcher thread");
            if !std::thread::panicking() {
                r.expect("watcher");
            }
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.finish();
    }
}

/// `docdex mcp` over stdio, spoken to line by line as an agent would, initialized.
pub struct McpStdio {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    next_id: u64,
}

impl McpStdio {
    /// Starts `docdex mcp ARGS` in `env`'s home and initializes the session (`init_params` are
    /// merged into the `initialize` params: `rootUri`, ...).
    pub fn start(env: &Env, args: &[&str], init_params: serde_json::Value) -> McpStdio {
        // Outside any repository: a session binds to the working directory's.
        let outside = env.home().parent().map(Path::to_path_buf).unwrap_or_else(std::env::temp_dir);
        McpStdio::start_in(env, &outside, args, init_params)
    }

    /// [`McpStdio::start`] with `docdex mcp` started in `cwd`.
    pub fn start_in(env: &Env, cwd: &Path, args: &[&str], init_params: serde_json::Value) -> McpStdio {
        use std::process::Stdio;
        let mut child = Command::new(env!("CARGO_BIN_EXE_docdex"))
            .current_dir(cwd)
            .arg("mcp")
            .args(args)
            .env("DOCDEX_HOME", env.home())
            .env_remove("DOCDEX_AUTH_TOKEN")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start docdex mcp");
        let stdin = child.stdin.take();
        let stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        let mut mcp = McpStdio { child, stdin, stdout, next_id: 1 };
        let mut params = serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}});
        if let (Some(p), Some(extra)) = (params.as_object_mut(), init_params.as_object()) {
            p.extend(extra.clone());
        }
        let init = mcp.request("initialize", params);
        assert!(init["result"].is_object(), "{init}");
        mcp.send(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    /// Writes one JSON-RPC message.
    pub fn send(&mut self, v: &serde_json::Value) {
        use std::io::Write;
        writeln!(self.stdin.as_mut().expect("stdin open"), "{v}").expect("write to docdex mcp");
    }

    /// Reads the next JSON-RPC message.
    pub fn recv(&mut self) -> serde_json::Value {
        use std::io::BufRead;
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read from docdex mcp");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
    }

    /// Sends a request and returns its response.
    pub fn request(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.recv()
    }

    /// Calls a tool; the `result` object (`isError`, `content`).
    pub fn call(&mut self, tool: &str, arguments: serde_json::Value) -> serde_json::Value {
        let r = self.request("tools/call", serde_json::json!({"name": tool, "arguments": arguments}));
        r["result"].clone()
    }
}

impl Drop for McpStdio {
    fn drop(&mut self) {
        // Closing stdin ends the session; the server exits on its own.
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// `docdex run-tests --repo REPO --json EXTRA...`, with `vars` in its environment: its exit code
/// and its result.
pub fn run_tests_json(env: &Env, repo: &Path, extra: &[&str], vars: &[(&str, &str)]) -> (i32, serde_json::Value) {
    let mut args = vec!["run-tests", "--repo", repo.to_str().unwrap(), "--json"];
    args.extend_from_slice(extra);
    let out = env.run_env(&args, vars);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("bad JSON ({e}): {}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    });
    (out.status.code().unwrap_or(-1), v)
}

/// A failure of a `run-tests --json` result as (name, file, line, message).
pub type RunFailure = (String, Option<String>, Option<u64>, Option<String>);

/// Each failure of a `run-tests --json` result, in order (the reader the run-tests tests share).
pub fn run_failures(v: &serde_json::Value) -> Vec<RunFailure> {
    v["failures"]
        .as_array()
        .unwrap_or_else(|| panic!("no failures list: {v}"))
        .iter()
        .map(|f| {
            let s = |k: &str| f[k].as_str().map(str::to_string);
            (
                s("name").unwrap_or_else(|| panic!("a failure without a name: {f}")),
                s("file"),
                f["line"].as_u64(),
                s("message"),
            )
        })
        .collect()
}

/// A test tool `.ci/run` installs, from the environment variable `var` naming its directory:
/// under CI it must be set; elsewhere `None`, with a notice that `what` is skipped.
pub fn installed_tool(var: &str, what: &str) -> Option<PathBuf> {
    match std::env::var_os(var).filter(|p| !p.is_empty()) {
        Some(p) => Some(PathBuf::from(p)),
        None if std::env::var_os("CI").is_some() => panic!("CI must export {var}; .ci/run sets it up"),
        None => {
            eprintln!("NOTICE: {var} is not set; skipping {what} (run .ci/run to install it)");
            None
        }
    }
}

/// The venv with pytest `.ci/run` makes (see [`installed_tool`]).
pub fn pytest_venv() -> Option<PathBuf> {
    installed_tool("DOCDEX_TEST_PYTEST_VENV", "the pytest runs")
}
