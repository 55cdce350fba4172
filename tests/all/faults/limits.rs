//! Every request is bounded: an oversized or wordy query is refused with the limit named (HTTP
//! 400 over real loopback HTTP, exit 2 on the command line), costing the server neither time nor
//! memory: its peak resident size is measured around two 2 MiB queries sent at once.

use crate::server_util::{client, Server};
use crate::util::{sample_repo, Env};
use serde_json::json;
use std::time::{Duration, Instant};

/// Peak resident set size (VmHWM) of a process, in KiB.
pub fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM");
    line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("VmHWM value")
}

/// A query of about `bytes` bytes of distinct words.
fn wordy_query(bytes: usize) -> String {
    let mut q = String::with_capacity(bytes);
    let mut i = 0u64;
    while q.len() + 12 < bytes {
        q.push_str(&format!("w{i:x}q "));
        i += 1;
    }
    q
}

#[tokio::test]
async fn a_2_mib_query_is_refused_at_once_without_memory_growth() {
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let c = client();
    // Warm up: one ordinary search, so the baseline includes an open index.
    let r = c.post(server.url("/v1/search")).json(&json!({"query": "session store"})).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let before = peak_rss_kib(server.child.id());

    let query = wordy_query(2 * 1024 * 1024 - 1024);
    let t = Instant::now();
    let send = |q: String| {
        let (c, url) = (c.clone(), server.url("/v1/search"));
        async move { c.post(url).json(&json!({ "query": q })).send().await.unwrap() }
    };
    let (a, b) = tokio::join!(send(query.clone()), send(query.clone()));
    let elapsed = t.elapsed();
    for r in [a, b] {
        assert_eq!(r.status(), 400);
        let v: serde_json::Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], "bad_request", "{v}");
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(msg.contains("query too long") && msg.contains("4096 bytes"), "{msg}");
    }
    let after = peak_rss_kib(server.child.id());
    assert!(elapsed < Duration::from_secs(5), "refusing took {elapsed:?}");
    // Two bodies of 2 MiB are read and parsed; nothing beyond that may be allocated.
    assert!(after - before < 48 * 1024, "peak RSS grew by {} KiB (from {before} KiB)", after - before);

    // Within the byte limit but too many distinct terms.
    let wordy = wordy_query(4000);
    let r = c.post(server.url("/v1/search")).json(&json!({ "query": wordy })).send().await.unwrap();
    assert_eq!(r.status(), 400);
    let v: serde_json::Value = r.json().await.unwrap();
    assert!(v["error"]["message"].as_str().unwrap().contains("limit is 128"), "{v}");

    // Memory recall takes the same limit.
    let r = c.post(server.url("/v1/memory/recall")).json(&json!({ "query": query })).send().await.unwrap();
    assert_eq!(r.status(), 400);
    // The server is unharmed.
    let r = c.post(server.url("/v1/search")).json(&json!({"query": "session store"})).send().await.unwrap();
    assert_eq!(r.status(), 200);
}

#[test]
fn the_command_line_refuses_an_oversized_query_with_exit_2() {
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let query = wordy_query(100 * 1024);
    let out = env.run(&["search", "--repo", repo.to_str().unwrap(), &query]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("4096 bytes"), "{stderr}");
    let out = env.run(&["search", "--repo", repo.to_str().unwrap(), &wordy_query(3000)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("limit is 128"));
    // A symbol name is compared with every stored name: it gets a tighter limit.
    let out = env.run(&["symbols", "--repo", repo.to_str().unwrap(), &"SessionStore".repeat(40)]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("256 bytes"));
}
