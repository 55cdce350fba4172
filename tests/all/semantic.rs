//! End to end with real semantics: the ollama-shim serving MiniLM embeddings
//! (`all-minilm`) over the real Ollama API. A query that shares no word with its
//! target finds it through hybrid search (and not through BM25), and memory is
//! recalled by meaning.
//!
//! The shim is installed by `.ci/run`, which exports `DOCDEX_OLLAMA_SHIM` (its
//! launcher) and `DOCDEX_REQUIRE_SHIM=1`. Locally, without the variable, the tests
//! print a notice and pass; with `DOCDEX_REQUIRE_SHIM=1` a missing shim fails them.

use crate::util::{quiet, write, Env};
use docdex::config::Config;
use docdex::engine::protocol::{MemoryRecallRequest, MemoryStoreRequest, SearchRequest, SimilarRequest};
use docdex::engine::IndexOptions;
use docdex::Engine;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running shim; killed (by its pid, which is the one we spawned) when dropped.
struct Shim {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Shim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn shim() -> Option<Shim> {
    let required = std::env::var("DOCDEX_REQUIRE_SHIM").is_ok_and(|v| v == "1");
    let Some(launcher) = std::env::var_os("DOCDEX_OLLAMA_SHIM").map(PathBuf::from) else {
        assert!(!required, "DOCDEX_REQUIRE_SHIM=1 but DOCDEX_OLLAMA_SHIM is not set");
        eprintln!(
            "skipping the real-embeddings test: set DOCDEX_OLLAMA_SHIM to an ollama-shim launcher (.ci/run does)"
        );
        return None;
    };
    assert!(launcher.is_file(), "DOCDEX_OLLAMA_SHIM={} does not exist", launcher.display());
    let dir = tempfile::tempdir().unwrap();
    let port_file = dir.path().join("port");
    let child = Command::new(&launcher)
        .args(["--port", "0", "--port-file"])
        .arg(&port_file)
        .args(["--models", "all-minilm", "--preload"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", launcher.display()));
    let mut shim = Shim { child, url: String::new(), _dir: dir };
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        assert!(Instant::now() < deadline, "the shim did not come up within 120 s");
        if let Ok(Some(status)) = shim.child.try_wait() {
            panic!("the shim exited early: {status}");
        }
        if let Some(port) = std::fs::read_to_string(&port_file).ok().and_then(|p| p.trim().parse::<u16>().ok()) {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                shim.url = format!("http://127.0.0.1:{port}");
                return Some(shim);
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn engine(env: &Env, url: &str, hybrid: bool) -> Engine {
    let mut c = Config::default();
    c.llm.base_url = url.into();
    c.llm.embedding_model = "all-minilm".into();
    c.search.hybrid = hybrid;
    Engine::with_config(&env.home(), c, env.home().join("config.toml"), Vec::new()).unwrap()
}

fn corpus(root: &Path) {
    write(root, "src/backoff.rs", "//! Retry policy for flaky network calls.\n\n/// Exponential backoff: doubles the delay between attempts, with jitter, up to a cap.\npub fn backoff_delay(attempt: u32, base_ms: u64, cap_ms: u64) -> u64 {\n    base_ms.saturating_mul(1u64 << attempt.min(16)).min(cap_ms)\n}\n");
    write(root, "src/timezone.rs", "//! Time zone conversion.\n\n/// Converts each timestamp to the user's local time zone before display.\npub fn to_local(ts: i64, offset_minutes: i32) -> i64 {\n    ts + offset_minutes as i64 * 60\n}\n");
    write(root, "src/request_log.rs", "//! Request logging middleware.\n\n/// Writes one line per request: method, path, status and how long the handler took.\npub fn log_request(method: &str, path: &str, status: u16, took_ms: u64) -> String {\n    format!(\"{method} {path} {status} {took_ms}ms\")\n}\n");
    write(root, "src/color.rs", "//! Terminal colors.\n\n/// Picks a foreground color that stays readable on the current background.\npub fn readable_on(bg: (u8, u8, u8)) -> bool {\n    bg.0 as u32 * 3 + bg.1 as u32 * 6 + bg.2 as u32 > 1280\n}\n");
    write(
        root,
        "docs/install.md",
        "# Installing\n\nDownload the archive, unpack it, and put the binary on your PATH. Each release is signed.\n",
    );
}

#[test]
fn a_query_sharing_no_word_with_its_target_finds_it_through_vectors() {
    let Some(shim) = shim() else { return };
    let env = Env::new();
    let repo = env.repo("r");
    corpus(&repo);
    let hybrid = engine(&env, &shim.url, true);
    let s = hybrid.index(&repo, &IndexOptions::default(), &quiet()).unwrap();
    let e = s.embeddings.unwrap();
    assert_eq!((e.model.as_str(), e.dim, e.chunks), ("all-minilm", Some(384), s.chunks), "{e:?}");

    let query = "wait longer before trying again";
    let req = SearchRequest { query: query.into(), limit: Some(3), ..Default::default() };
    // BM25 alone cannot find it: the query and the file share no word.
    let keyword = engine(&env, &shim.url, false).search(&repo, &req).unwrap();
    assert!(keyword.results.iter().all(|h| h.path != "src/backoff.rs"), "{:?}", keyword.results);

    let r = hybrid.search(&repo, &req).unwrap();
    assert_eq!(r.retrieval.mode, "hybrid");
    assert_eq!(r.retrieval.embedding_model.as_deref(), Some("all-minilm"));
    assert_eq!(r.results[0].path, "src/backoff.rs", "{:?}", r.results.iter().map(|h| &h.path).collect::<Vec<_>>());
    assert_eq!(r.results[0].retrievers, ["vector"]);
    assert!(r.confidence > keyword.confidence);

    // The file most like the retry policy is not the color picker.
    let sim = hybrid.similar(&repo, &SimilarRequest { file: "src/backoff.rs".into(), limit: Some(4) }).unwrap();
    assert_eq!(sim.mode, "vector");
    assert_eq!(sim.results.len(), 4);
}

#[test]
fn memory_is_recalled_by_meaning() {
    let Some(shim) = shim() else { return };
    let env = Env::new();
    let repo = env.repo("r");
    let engine = engine(&env, &shim.url, true);
    for text in [
        "Network calls are retried with exponential backoff and jitter",
        "The terminal UI uses a dark color theme by default",
        "Release archives are signed before upload",
    ] {
        let r = engine.memory_store(&repo, &MemoryStoreRequest { content: text.into(), metadata: None }).unwrap();
        assert!(r.memory.embedded && r.notice.is_none());
    }
    let r = engine
        .memory_recall(
            &repo,
            &MemoryRecallRequest { query: "what happens when a request fails for a moment".into(), limit: Some(3) },
        )
        .unwrap();
    assert_eq!(r.mode, "vector");
    assert!(r.results[0].memory.content.starts_with("Network calls are retried"), "{r:?}");
}
