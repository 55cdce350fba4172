//! `docdex check`: is this machine ready? Config and state read/write, the
//! registry, the model server and its models, the configured model against the
//! hardware, the HTTP bind address, and (with a repo) that repo's index,
//! embeddings and memory. The HTTP server's `--preflight-check` runs the same
//! [`Engine::check`].
//!
//! What counts as a failure: what docdex itself needs to work (config, state,
//! locks, registry, a safe bind address). A missing model server or model is a
//! warning, because search, indexing and code intelligence work without one (the
//! features that need it say so when used); `require_llm` makes them failures for
//! callers that need models (a chat server). A bind address already in use is a
//! warning unless `require_bind` (the server about to bind it); in use by this home's
//! `docdex daemon` (its held `daemon.lock` says so) it is fine, and named.

use crate::engine::embed::Vectors;
use crate::engine::fsutil::count;
use crate::engine::llm::hardware::which;
use crate::engine::llm::model_matches;
use crate::engine::llm::models::judge_model;
use crate::engine::Engine;
use crate::error::Error;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Version of the report's JSON shape.
pub const CHECK_SCHEMA_VERSION: u32 = 1;

/// How one check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CheckStatus {
    /// Fine.
    Ok,
    /// Worth knowing; docdex works.
    Warn,
    /// A prerequisite is missing: `check` exits non-zero.
    Fail,
    /// Information only.
    Info,
    /// Not checked (and why).
    Skipped,
}

/// One line of the report.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CheckItem {
    /// Stable id (`config`, `state_dir`, `llm_server`, ...).
    pub name: String,
    /// The outcome.
    pub status: CheckStatus,
    /// What was found.
    pub message: String,
    /// What to do about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// What to treat as required.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CheckOptions {
    /// Also check this repository (index, embeddings, memory).
    #[serde(default)]
    pub repo: Option<PathBuf>,
    /// A missing model server or model fails the check.
    #[serde(default)]
    pub require_llm: bool,
    /// An HTTP bind address already in use fails the check.
    #[serde(default)]
    pub require_bind: bool,
}

/// The whole report.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CheckReport {
    /// [`CHECK_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// No failures.
    pub ok: bool,
    /// Items with status `fail`.
    pub failures: usize,
    /// Items with status `warn`.
    pub warnings: usize,
    /// Every check, in order.
    pub items: Vec<CheckItem>,
}

impl CheckReport {
    fn push(&mut self, name: &str, status: CheckStatus, message: impl Into<String>, hint: Option<String>) {
        self.items.push(CheckItem { name: name.into(), status, message: message.into(), hint });
    }

    fn finish(mut self) -> CheckReport {
        self.failures = self.items.iter().filter(|i| i.status == CheckStatus::Fail).count();
        self.warnings = self.items.iter().filter(|i| i.status == CheckStatus::Warn).count();
        self.ok = self.failures == 0;
        self
    }
}

/// Writes, reads back and removes a probe file in `dir`.
fn probe_rw(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create: {e}"))?;
    let probe = dir.join(format!(".docdex-check.{}", std::process::id()));
    std::fs::write(&probe, b"ok").map_err(|e| format!("cannot write: {e}"))?;
    let back = std::fs::read(&probe).map_err(|e| format!("cannot read back: {e}"));
    let _ = std::fs::remove_file(&probe);
    match back? {
        b if b == b"ok" => Ok(()),
        _ => Err("read back something else".into()),
    }
}

/// The `docdex daemon` of this home, as its pid and address, read from its lock file
/// (`<home>/daemon.lock`, written by `server::lockfile`) only while that lock is held: a file
/// left by a killed daemon, or one holding garbage, names nobody. The lock is tried shared and
/// let go at once, and only when the file names a holder (a daemon writes it after locking).
fn running_daemon(lock: &Path) -> Option<(u64, String)> {
    use std::io::Read;
    let mut file = std::fs::File::open(lock).ok()?;
    let mut text = String::new();
    file.read_to_string(&mut text).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let holder = (v.get("pid")?.as_u64()?, v.get("addr")?.as_str()?.to_string());
    match file.try_lock_shared() {
        Ok(()) => {
            let _ = file.unlock();
            None
        }
        Err(std::fs::TryLockError::WouldBlock) => Some(holder),
        Err(std::fs::TryLockError::Error(_)) => None,
    }
}

/// Whether a daemon serving `at` holds the port of `addr` (the same address, or either a
/// wildcard).
fn same_port(at: &str, addr: std::net::SocketAddr) -> bool {
    at.parse::<std::net::SocketAddr>().is_ok_and(|a| {
        a.port() == addr.port() && (a.ip() == addr.ip() || a.ip().is_unspecified() || addr.ip().is_unspecified())
    })
}

/// `[search] history` is on: whether there is a history to rank with (reading it now, as the
/// next search would).
fn check_repo_history(r: &mut CheckReport, repo: &crate::engine::repos::RepoRef) {
    match crate::engine::search::history::CommitHistory::load(&repo.root, &repo.state_dir) {
        Some(h) if h.failure.is_some() => r.push(
            "repo_history",
            CheckStatus::Warn,
            format!(
                "[search] history is on, but reading it for HEAD {} failed: {}; search ranks without it until HEAD moves",
                &h.head[..h.head.len().min(10)],
                h.failure.as_deref().unwrap_or_default()
            ),
            Some("set `history = false` in [search] if this repository's history is too large to read".into()),
        ),
        Some(h) => r.push(
            "repo_history",
            CheckStatus::Ok,
            format!(
                "[search] history: {} naming source files, read for HEAD {}",
                count(h.len(), "commit"),
                &h.head[..h.head.len().min(10)]
            ),
            None,
        ),
        None => r.push(
            "repo_history",
            CheckStatus::Warn,
            format!(
                "[search] history is on, but {} has no git history to read (not in a git work tree, no commit yet, or git is not installed): search ranks without it",
                repo.root.display()
            ),
            Some("commit to git, or set `history = false` in [search]".into()),
        ),
    }
}

impl Engine {
    /// This home's `docdex daemon` (pid, address) while it holds `<home>/daemon.lock`: the test
    /// `check` makes, shared with `docdex daemon status|stop` so a stale file is never taken for
    /// a running daemon (nor its pid signalled).
    pub fn running_daemon(&self) -> Option<(u64, String)> {
        running_daemon(&self.paths().home.join("daemon.lock"))
    }

    /// Runs every check. Never fails itself: problems are items in the report.
    pub fn check(&self, opts: &CheckOptions) -> CheckReport {
        let mut r =
            CheckReport { schema_version: CHECK_SCHEMA_VERSION, ok: true, failures: 0, warnings: 0, items: Vec::new() };
        self.check_config(&mut r);
        self.check_state(&mut r);
        self.check_models(&mut r, opts.require_llm);
        self.check_bind(&mut r, opts.require_bind);
        self.check_symbols(&mut r);
        self.check_browser(&mut r);
        if let Some(repo) = &opts.repo {
            self.check_repo(&mut r, repo);
        }
        r.finish()
    }

    fn check_config(&self, r: &mut CheckReport) {
        let path = self.config_path().display().to_string();
        if self.config_warnings().is_empty() {
            r.push("config", CheckStatus::Ok, format!("{path} parsed"), None);
        } else {
            r.push(
                "config",
                CheckStatus::Warn,
                format!("{path}: {}", self.config_warnings().join("; ")),
                Some("fix or remove the keys named".into()),
            );
        }
    }

    fn check_state(&self, r: &mut CheckReport) {
        let state = self.paths().state.clone();
        for (name, dir) in [("state_dir", state.clone()), ("locks_dir", self.paths().locks())] {
            match probe_rw(&dir) {
                Ok(()) => r.push(name, CheckStatus::Ok, format!("{} is readable and writable", dir.display()), None),
                Err(e) => r.push(
                    name,
                    CheckStatus::Fail,
                    format!("{}: {e}", dir.display()),
                    Some("set DOCDEX_HOME to a writable directory or fix the permissions".into()),
                ),
            }
        }
        match self.list_repos() {
            Ok(repos) => {
                let gone: Vec<String> =
                    repos.iter().filter(|x| !x.path.is_dir()).map(|x| x.path.display().to_string()).collect();
                if gone.is_empty() {
                    r.push(
                        "registry",
                        CheckStatus::Ok,
                        format!("{} registered", count(repos.len(), "repository")),
                        None,
                    );
                } else {
                    r.push(
                        "registry",
                        CheckStatus::Warn,
                        format!(
                            "{} registered; missing on disk: {}",
                            count(repos.len(), "repository"),
                            gone.join(", ")
                        ),
                        Some("`docdex repo remove PATH --purge` forgets one".into()),
                    );
                }
            }
            Err(e) => r.push(
                "registry",
                CheckStatus::Fail,
                e.to_string(),
                // Reading it rebuilds a damaged registry; this is when that failed.
                Some(format!(
                    "move it aside (`mv {0} {0}.damaged`); the next docdex command rebuilds it from the repositories' state",
                    crate::error::shell_path(&self.paths().registry())
                )),
            ),
        }
    }

    fn check_models(&self, r: &mut CheckReport, require: bool) {
        let cfg = &self.config().llm;
        let needed = if require { CheckStatus::Fail } else { CheckStatus::Warn };
        let uses = "needed for chat, hybrid search and memory recall by meaning; search works without it";
        if !crate::config::KNOWN_PROVIDERS.contains(&cfg.provider.as_str()) {
            r.push(
                "llm_provider",
                CheckStatus::Warn,
                format!("unknown provider {:?}; using ollama", cfg.provider),
                Some("set [llm] provider to ollama or openai".into()),
            );
        } else {
            r.push("llm_provider", CheckStatus::Ok, format!("{} at {}", cfg.provider, cfg.base_url), None);
        }
        let installed = match self.models() {
            Ok(list) => {
                r.push(
                    "llm_server",
                    CheckStatus::Ok,
                    format!("{} answered with {}", cfg.base_url, count(list.len(), "model")),
                    None,
                );
                list.into_iter().map(|m| m.name).collect::<Vec<_>>()
            }
            Err(e) => {
                let hint = if cfg.provider == "openai" {
                    "start the OpenAI-compatible server or fix [llm] base_url".to_string()
                } else if which("ollama").is_none() {
                    "install Ollama (https://ollama.com/download), run `ollama serve`, then `docdex llm-setup`"
                        .to_string()
                } else {
                    "run `ollama serve`, then `docdex llm-setup`".to_string()
                };
                // The error's own advice ends by pointing at `docdex check`, which is this.
                let why = match &e {
                    Error::LlmUnreachable { provider, url, reason } => {
                        format!("cannot reach the {provider} server at {url}: {reason}")
                    }
                    e => e.to_string(),
                };
                r.push("llm_server", needed, format!("{why} ({uses})"), Some(hint));
                for name in ["chat_model", "embedding_model"] {
                    r.push(name, CheckStatus::Skipped, "model server not reachable", None);
                }
                self.check_hardware(r);
                return;
            }
        };
        for (name, model) in [("chat_model", &cfg.default_model), ("embedding_model", &cfg.embedding_model)] {
            if installed.iter().any(|i| model_matches(model, i)) {
                r.push(name, CheckStatus::Ok, format!("{model} is installed"), None);
            } else {
                r.push(
                    name,
                    needed,
                    format!("{model} is not installed on {}", cfg.base_url),
                    Some(crate::engine::llm::advice::missing_model_advice(
                        if cfg.provider == "openai" { "openai" } else { "ollama" },
                        model,
                        Some(&installed),
                    )),
                );
            }
        }
        self.check_hardware(r);
    }

    fn check_hardware(&self, r: &mut CheckReport) {
        let hw = self.hardware();
        let model = &self.config().llm.default_model;
        match judge_model(model, &hw) {
            Ok(Ok(msg)) => r.push("hardware", CheckStatus::Ok, msg, None),
            Ok(Err(warning)) => r.push(
                "hardware",
                CheckStatus::Warn,
                warning,
                Some("pick a smaller [llm] default_model: `docdex llm-setup`".into()),
            ),
            Err(e) => r.push("hardware", CheckStatus::Warn, e.to_string(), None),
        }
    }

    fn check_bind(&self, r: &mut CheckReport, require: bool) {
        let server = &self.config().server;
        let addr: std::net::SocketAddr = match server.http_bind_addr.parse() {
            Ok(a) => a,
            Err(_) => {
                r.push("http_bind", CheckStatus::Fail, format!("{:?} is not an address", server.http_bind_addr), None);
                return;
            }
        };
        if !addr.ip().is_loopback() && server.auth_token.is_empty() {
            r.push(
                "http_bind",
                CheckStatus::Fail,
                format!("{addr} is reachable from other machines and no auth token is set"),
                Some("bind 127.0.0.1, or set DOCDEX_AUTH_TOKEN / [server] auth_token".into()),
            );
            return;
        }
        let daemon = running_daemon(&self.paths().home.join("daemon.lock"));
        let ours = daemon.as_ref().filter(|(_, at)| same_port(at, addr));
        match (std::net::TcpListener::bind(addr), ours) {
            (Ok(l), _) => {
                drop(l);
                r.push("http_bind", CheckStatus::Ok, format!("{addr} is free"), None);
            }
            (Err(_), Some((pid, at))) if !require => {
                r.push("http_bind", CheckStatus::Ok, format!("a docdex daemon (pid {pid}) serves {at}"), None)
            }
            (Err(_), Some((pid, at))) => r.push(
                "http_bind",
                CheckStatus::Fail,
                format!("{addr} cannot be bound: a docdex daemon (pid {pid}) serves {at}"),
                Some("use that daemon, or stop it first".into()),
            ),
            (Err(e), None) => r.push(
                "http_bind",
                if require { CheckStatus::Fail } else { CheckStatus::Warn },
                format!("{addr} cannot be bound: {e}"),
                Some(
                    "if a docdex server already runs there this is expected; otherwise change [server] http_bind_addr"
                        .into(),
                ),
            ),
        }
        let named = ours.is_some() && r.items.last().is_some_and(|i| i.message.contains("a docdex daemon"));
        if let Some((pid, at)) = daemon.as_ref().filter(|_| !named) {
            r.push("daemon", CheckStatus::Info, format!("a docdex daemon (pid {pid}) serves {at}"), None);
        }
        r.push(
            "mcp",
            CheckStatus::Info,
            if server.enable_mcp { "MCP is enabled beside HTTP" } else { "MCP is disabled ([server] enable_mcp)" },
            None,
        );
    }

    /// The Tree-sitter grammars this build carries, each loaded into a parser: a grammar that
    /// does not load costs its language its symbols, impact edges and definition-aligned chunks
    /// (its files are still searched as text), so it is a warning.
    fn check_symbols(&self, r: &mut CheckReport) {
        let support = crate::engine::code::language_support();
        let broken: Vec<String> = support
            .iter()
            .filter(|s| !s.available)
            .map(|s| format!("{} ({})", s.lang, s.problem.as_deref().unwrap_or("unavailable")))
            .collect();
        if broken.is_empty() {
            let names: Vec<&str> = support.iter().map(|s| s.lang.as_str()).collect();
            r.push(
                "symbols",
                CheckStatus::Ok,
                format!("{} Tree-sitter grammars load: {}", names.len(), names.join(", ")),
                None,
            );
        } else {
            r.push(
                "symbols",
                CheckStatus::Warn,
                format!("grammars that do not load: {}; their files are searched as text only", broken.join(", ")),
                Some(
                    "this build is damaged or mismatched: reinstall docdex (`cargo install --locked --path .`)".into(),
                ),
            );
        }
    }

    /// The repository's symbol store (`symbols.db`): built, current with the parsers, or in
    /// need of a re-index.
    fn check_repo_symbols(&self, r: &mut CheckReport, repo: &Path) {
        let s = match self.symbols_status(repo) {
            Ok(s) => s,
            Err(e) => return r.push("repo_symbols", CheckStatus::Fail, e.to_string(), None),
        };
        let reindex = Some(format!("`docdex index --repo {}`", crate::error::shell_path(&s.repo)));
        match s.state.as_str() {
            "ready" => r.push(
                "repo_symbols",
                CheckStatus::Ok,
                format!(
                    "{} in {} ({} with syntax errors)",
                    count(s.symbols, "symbol"),
                    count(s.files, "code file"),
                    s.files_with_parse_errors
                ),
                None,
            ),
            "not_built" => r.push("repo_symbols", CheckStatus::Info, "no symbol index yet", reindex),
            "lagging" => r.push(
                "repo_symbols",
                CheckStatus::Info,
                "the last index run was interrupted; the next run catches the symbols up",
                reindex,
            ),
            _ => r.push("repo_symbols", CheckStatus::Warn, s.messages.join("; "), reindex),
        }
    }

    /// The web tier's browser: found, then launched once headless to read its version (and
    /// closed). Leftovers of killed docdex processes are stopped first. Only the web tier needs
    /// a browser (without one it fetches over plain HTTP), so a problem is a warning.
    fn check_browser(&self, r: &mut CheckReport) {
        let list = self.browser_list();
        for reaped in &list.reaped {
            r.push(
                "browser_leftovers",
                CheckStatus::Info,
                format!("stopped {} browser processes left by docdex pid {}", reaped.killed, reaped.owner_pid),
                None,
            );
        }
        if !self.config().web.enabled {
            r.push("browser", CheckStatus::Skipped, "the web tier is off ([web] enabled = false)", None);
            return;
        }
        if let Some(missing) = crate::engine::web::browser::configured_missing(&self.config().web.scraper) {
            r.push("browser_config", CheckStatus::Warn, missing, None);
        }
        if list.browsers.is_empty() {
            r.push(
                "browser",
                CheckStatus::Warn,
                "no Chromium or Chrome found: the web tier fetches pages over plain HTTP",
                Some("`docdex browser install` says how to get one; `apt-get install chromium` on Debian".into()),
            );
            return;
        }
        match self.browser_probe(None) {
            Ok(p) => r.push(
                "browser",
                CheckStatus::Ok,
                format!("{} ({}) starts headless in {:.0} ms", p.path, p.version, p.start_ms),
                None,
            ),
            Err(e) => r.push(
                "browser",
                CheckStatus::Warn,
                format!("the browser cannot be launched: {e}"),
                Some("`docdex browser setup --path /path/to/chrome` picks another; without one pages are fetched over plain HTTP".into()),
            ),
        }
    }

    fn check_repo(&self, r: &mut CheckReport, path: &Path) {
        let repo = match self.resolve_repo(path) {
            Ok(repo) => repo,
            Err(e) => {
                r.push("repo", CheckStatus::Fail, e.to_string(), None);
                return;
            }
        };
        match self.status(&repo.root) {
            Ok(s) => r.push(
                "repo_index",
                CheckStatus::Ok,
                format!(
                    "{}: {}, {}, generation {}",
                    repo.root.display(),
                    count(s.documents, "file"),
                    count(s.chunks, "chunk"),
                    s.generation
                ),
                None,
            ),
            Err(e) => r.push("repo_index", CheckStatus::Warn, e.to_string(), None),
        }
        if repo.state_dir.exists() {
            match probe_rw(&repo.state_dir) {
                Ok(()) => {
                    r.push("repo_state", CheckStatus::Ok, format!("{} is writable", repo.state_dir.display()), None)
                }
                Err(e) => r.push("repo_state", CheckStatus::Fail, format!("{}: {e}", repo.state_dir.display()), None),
            }
        }
        match self.vectors(&repo) {
            Vectors::Usable(store, model) => match store.counts() {
                Ok((files, chunks, _)) => {
                    let found = format!(
                        "{} in {} from {} ({} dimensions)",
                        count(chunks, "chunk vector"),
                        count(files, "file"),
                        model.model,
                        model.dim
                    );
                    match crate::engine::embed::coverage_notice(&store, &repo.root) {
                        Some(gap) => r.push(
                            "repo_embeddings",
                            CheckStatus::Warn,
                            format!("{found}; {gap}"),
                            Some(format!("`docdex index --repo {}`", crate::error::shell_path(&repo.root))),
                        ),
                        None => r.push("repo_embeddings", CheckStatus::Ok, found, None),
                    }
                }
                Err(e) => {
                    r.push("repo_embeddings", CheckStatus::Fail, e.to_string(), Some("`docdex index --reembed`".into()))
                }
            },
            Vectors::Unusable(why) if why.contains("--reembed") => {
                r.push("repo_embeddings", CheckStatus::Warn, why, Some("`docdex index --reembed`".into()))
            }
            Vectors::Unusable(why) => r.push("repo_embeddings", CheckStatus::Info, why, None),
        }
        self.check_repo_symbols(r, &repo.root);
        if self.config().search.history {
            check_repo_history(r, &repo);
        }
        match self.memory_count(&repo) {
            Ok(Some(n)) => {
                r.push("repo_memory", CheckStatus::Ok, format!("memory.db readable: {}", count(n, "memory")), None)
            }
            Ok(None) => r.push("repo_memory", CheckStatus::Info, "no memories stored yet", None),
            Err(e) => r.push("repo_memory", CheckStatus::Fail, e.to_string(), None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_daemon_is_named_only_while_its_lock_is_held() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("daemon.lock");
        assert_eq!(running_daemon(&lock), None, "no file");
        std::fs::write(&lock, r#"{"pid":4242,"addr":"127.0.0.1:3311","started_ms":1}"#).unwrap();
        assert_eq!(running_daemon(&lock), None, "a file left by a killed daemon names nobody");
        let held = std::fs::File::open(&lock).unwrap();
        held.try_lock().unwrap();
        assert_eq!(running_daemon(&lock), Some((4242, "127.0.0.1:3311".to_string())));
        std::fs::write(&lock, "garbage").unwrap();
        assert_eq!(running_daemon(&lock), None, "garbage names nobody");
        drop(held);
        let addr: std::net::SocketAddr = "127.0.0.1:3311".parse().unwrap();
        assert!(same_port("127.0.0.1:3311", addr) && same_port("0.0.0.0:3311", addr));
        assert!(!same_port("127.0.0.1:3312", addr) && !same_port("10.0.0.1:3311", addr) && !same_port("x", addr));
    }
}
