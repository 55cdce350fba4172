//! CPU-, disk- and process-bound engine work stops when its caller's cancellation token trips
//! (`engine::cancel`): graph walks, audits, an index run and a test run end with
//! `Error::Cancelled` instead of running to their end for nobody. Over the server, a client
//! hanging up on `docdex_run_tests` kills its test processes and frees its work slot.

use crate::server_util::{eventually, mcp_post, mcp_session, Server};
use crate::util::{quiet, sample_repo, write, Env};
use docdex::engine::code::impact::ImpactRequest;
use docdex::engine::protocol::{
    CancelToken, ConflictsRequest, DuplicatesRequest, IndexProgress, RunTestsRequest, TestsRequest,
};
use docdex::engine::IndexOptions;
use docdex::error::Error;
use serde_json::json;
use std::time::{Duration, Instant};

/// The sample repository, indexed, with docs that give the audits something to read.
fn indexed(env: &Env) -> (docdex::Engine, std::path::PathBuf) {
    let repo = env.repo("r");
    sample_repo(&repo);
    write(&repo, "src/auth/login.rs", "use crate::auth::session::SessionStore;\npub fn login(s: &mut SessionStore) {\n    s.expire_stale_sessions();\n}\n");
    write(
        &repo,
        "docs/limits.md",
        "# Limits\n\nThe default timeout is 30 seconds for every request the server answers.\n",
    );
    write(
        &repo,
        "docs/other.md",
        "# Limits\n\nThe default timeout is 60 seconds for every request the server answers.\n",
    );
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    (engine, repo)
}

fn cancelled<T: std::fmt::Debug>(what: &str, r: docdex::error::Result<T>) {
    match r {
        Err(Error::Cancelled) => {}
        other => panic!("{what} with a tripped token: expected Cancelled, got {other:?}"),
    }
}

#[test]
fn graph_walks_and_audits_stop_when_the_callers_token_is_tripped() {
    let env = Env::new();
    let (engine, repo) = indexed(&env);
    let impact = ImpactRequest { file: "src/auth/session.rs".into(), depth: Some(64), ..Default::default() };
    engine.impact(&repo, &impact).expect("an untripped walk answers");

    let token = CancelToken::new();
    token.cancel();
    {
        let _ambient = token.enter();
        cancelled("impact", engine.impact(&repo, &impact));
        cancelled("impact_neighbors", engine.impact_neighbors(&repo, &["src/auth/session.rs".to_string()], 3));
        let tests = TestsRequest { file: "src/auth/session.rs".into(), ..Default::default() };
        cancelled("impact_tests", engine.impact_tests(&repo, &tests));
        cancelled("audit_duplicates", engine.audit_duplicates(&repo, &DuplicatesRequest::default()));
        let conflicts = ConflictsRequest { explain: Some(false), ..Default::default() };
        cancelled("audit_conflicts", engine.audit_conflicts(&repo, &conflicts));
    }
    // Nothing is left behind: the same calls answer once no tripped token is ambient.
    engine.impact(&repo, &impact).expect("impact after the stop");
    engine.audit_duplicates(&repo, &DuplicatesRequest::default()).expect("duplicates after the stop");
}

#[test]
fn an_index_run_stops_between_batches_when_its_token_trips_and_the_next_run_finishes() {
    let env = Env::new();
    let repo = env.repo("big");
    for i in 0..300 {
        write(&repo, &format!("src/m{i}.rs"), format!("pub fn f{i}() -> u32 {{\n    {i}\n}}\n"));
    }
    let engine = env.engine();
    let token = CancelToken::new();
    // Trips once the run reports progress: it has started, and its batches are still ahead.
    let trip = |_: &IndexProgress| token.cancel();
    {
        let _ambient = token.enter();
        cancelled("index", engine.index(&repo, &IndexOptions::default(), &trip));
    }
    let summary = engine.index(&repo, &IndexOptions::default(), &quiet()).expect("the next run");
    assert_eq!(summary.files, 300, "{summary:?}");
}

/// A test command whose test sleeps a minute, its pid written to `sleep.pid`.
fn sleeping_suite(env: &Env, name: &str) -> std::path::PathBuf {
    let repo = env.repo(name);
    write(&repo, "tests/x.txt", "");
    std::fs::create_dir_all(env.home()).unwrap();
    let command = "sleep 60 & echo $! > sleep.pid; wait";
    write(
        &env.home(),
        "config.toml",
        format!("[tests]\ncommand = {command:?}\n\n[server]\nmax_concurrent_work = 1\nwork_wait_ms = 1500\n"),
    );
    repo
}

/// Whether process `pid` runs (a zombie does not).
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next()))
        .is_some_and(|state| state != 'Z')
}

fn sleep_pid(repo: &std::path::Path) -> Option<String> {
    std::fs::read_to_string(repo.join("sleep.pid")).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

#[cfg(target_os = "linux")]
#[test]
fn a_test_run_whose_token_trips_kills_its_tests_and_ends_cancelled() {
    let env = Env::new();
    let repo = sleeping_suite(&env, "suite");
    let engine = env.engine();
    let token = CancelToken::new();
    let tripper = {
        let (token, repo) = (token.clone(), repo.clone());
        std::thread::spawn(move || {
            crate::util::eventually("the test is running", || sleep_pid(&repo).is_some());
            token.cancel();
        })
    };
    let started = Instant::now();
    let result = {
        let _ambient = token.enter();
        engine.run_tests(&repo, &RunTestsRequest { timeout_secs: Some(120), ..Default::default() })
    };
    tripper.join().unwrap();
    cancelled("run_tests", result);
    assert!(started.elapsed() < Duration::from_secs(20), "the run ended with its token: {:?}", started.elapsed());
    let pid = sleep_pid(&repo).unwrap();
    crate::util::eventually("the test's sleep is killed", || !alive(&pid));
}

/// Before, the run went on to its `timeout_secs` (600 by default) for nobody, its tests
/// holding the cores and the server's only work slot.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn an_mcp_client_hanging_up_on_run_tests_kills_its_tests_and_frees_the_slot() {
    let env = Env::new();
    let repo = sleeping_suite(&env, "served");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let c = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
    let url = server.url("/v1/mcp");
    let session = mcp_session(&c, &url).await;
    let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "docdex_run_tests", "arguments": {}}});
    let sent = tokio::spawn({
        let (url, session) = (url.clone(), session.clone());
        async move {
            let impatient = reqwest::Client::new();
            let r = mcp_post(&impatient, &url, Some(&session), &call).send().await;
            if let Ok(r) = r {
                // Reading the answer stream until the test hangs up.
                let _ = r.text().await;
            }
        }
    });
    eventually("the test is running", || std::future::ready(sleep_pid(&repo).is_some())).await;
    sent.abort();
    let pid = sleep_pid(&repo).unwrap();
    eventually("the test's sleep is killed", || std::future::ready(!alive(&pid))).await;
    let r = c.get(server.url("/v1/memory")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200, "the abandoned test run still holds the only slot");
}
