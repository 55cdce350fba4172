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

/// A base URL where nothing listens (a port that was free a moment ago).
pub fn dead_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    drop(l);
    format!("http://127.0.0.1:{port}")
}
