//! CPU-, disk- and process-bound engine work stops when its caller's cancellation token trips
//! (`engine::cancel`): graph walks, audits, an index run and a test run end with
//! `Error::Cancelled` instead of running to their end for nobody. Over the server, a client
//! hanging up on `docdex_run_tests` kills its test processes and frees its work slot. So do a
//! search's ranking and snippets, the project map, the pre-commit gatekeeper (its import
//! cycles) and an index run's impact graph.

use crate::server_util::{eventually, mcp_post, mcp_session, Server};
use crate::util::{quiet, sample_repo, write, Env};
use docdex::engine::code::graph;
use docdex::engine::code::impact::ImpactRequest;
use docdex::engine::protocol::{
    CancelToken, ConflictsRequest, DuplicatesRequest, HookValidateRequest, IndexProgress, ProjectMapRequest,
    RunTestsRequest, SearchRequest, StagedFile, TestsRequest,
};
use docdex::engine::IndexOptions;
use docdex::error::Error;
use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
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

/// The search for `q`, ten hits.
fn search_for(q: &str) -> SearchRequest {
    SearchRequest { query: q.into(), limit: Some(10), ..Default::default() }
}

/// Before, a search ran its ranking and read every hit's file for snippets whatever the token
/// said (no model is configured here, so nothing else in it looked).
#[test]
fn a_search_its_map_and_a_batch_of_searches_stop_when_the_callers_token_is_tripped() {
    let env = Env::new();
    let (engine, repo) = indexed(&env);
    assert!(!engine.search(&repo, &search_for("session store")).expect("search").results.is_empty());

    let token = CancelToken::new();
    token.cancel();
    {
        let _ambient = token.enter();
        cancelled("search", engine.search(&repo, &search_for("session store")));
        cancelled("search_batch", engine.search_batch(&repo, &[search_for("session"), search_for("timeout")]));
        let map = ProjectMapRequest { agent_id: None, refresh: true };
        cancelled("project_map", engine.project_map(&repo, &map));
    }
    assert!(!engine.search(&repo, &search_for("session store")).expect("after the stop").results.is_empty());
    engine.project_map(&repo, &ProjectMapRequest { agent_id: None, refresh: true }).expect("map after the stop");
}

/// A search whose token trips while the model server embeds its query ended "vector search
/// unavailable (... stopped by its caller); BM25 only" and ran the whole BM25 ranking and its
/// snippets for nobody; it now ends `cancelled`.
#[test]
fn a_hybrid_search_stopped_while_its_query_is_embedded_ends_cancelled_not_in_bm25() {
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    {
        let fast = FakeOllama::start(FakeOllamaOptions::default()).expect("fake");
        let engine = env.engine_for("ollama", &fast.url(), "fake-chat", "fake-embed");
        engine.index(&repo, &IndexOptions::default(), &quiet()).expect("index with vectors");
        assert_eq!(engine.search(&repo, &search_for("session store")).expect("search").retrieval.mode, "hybrid");
    }
    // A query's embedding is one text: this embedder takes 5 s over it.
    let slow =
        FakeOllama::start(FakeOllamaOptions { embed_probe_delay_ms: 5_000, ..Default::default() }).expect("fake");
    let engine = env.engine_for("ollama", &slow.url(), "fake-chat", "fake-embed");
    let token = CancelToken::new();
    let started = Instant::now();
    let result = std::thread::scope(|s| {
        s.spawn(|| {
            let asked = || slow.requests().iter().any(|(path, _)| path.contains("embed"));
            crate::util::eventually("the query is with the embedder", asked);
            token.cancel();
        });
        let _ambient = token.enter();
        engine.search(&repo, &search_for("session store"))
    });
    cancelled("hybrid search", result);
    assert!(started.elapsed() < Duration::from_secs(4), "ended with its token: {:?}", started.elapsed());
}

/// The gatekeeper's parse of the staged files and its walk of the import cycles the commit
/// closes ran to their end for a hook or client that had gone.
#[test]
fn the_pre_commit_gatekeeper_stops_when_the_callers_token_is_tripped() {
    let env = Env::new();
    let (engine, repo) = indexed(&env);
    write(&repo, "src/a.ts", "import { b } from './b';\nexport const a = (): number => b() + 1;\n");
    write(&repo, "src/b.ts", "export const b = (): number => 41;\n");
    engine.index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    // The staged b.ts closes a cycle with a.ts (the factory constraints forbid import cycles).
    let staged = StagedFile {
        path: "src/b.ts".into(),
        content: Some("import { a } from './a';\nexport const b = (): number => a() + 41;\n".into()),
        deleted: false,
    };
    let req = HookValidateRequest { agent_id: None, files: vec![staged] };
    let checked = engine.hook_validate(&repo, &req).expect("an untripped check answers");
    assert!(checked.violations.iter().any(|v| v.rule == "no-import-cycles"), "{:?}", checked.violations);

    let token = CancelToken::new();
    token.cancel();
    {
        let _ambient = token.enter();
        cancelled("hook_validate", engine.hook_validate(&repo, &req));
    }
    engine.hook_validate(&repo, &req).expect("after the stop");
}

/// A run whose token trips at its last commit (every batch read, parsed and committed) built
/// the impact graph, resolving every import of the repository, before it said `cancelled`.
/// It now leaves the graph to the next run: the text and the symbols are committed and
/// searchable, the store's pending mark has the next run build the graph, as after a kill.
#[test]
fn an_index_run_stopped_at_its_last_commit_leaves_the_impact_graph_to_the_next_run() {
    let env = Env::new();
    let repo = env.repo("g");
    sample_repo(&repo);
    write(&repo, "web/main.ts", "import { renderDashboard } from './app';\nrenderDashboard('ada');\n");
    let engine = env.engine();
    let token = CancelToken::new();
    let trip = |p: &IndexProgress| {
        if p.phase == "committing" {
            token.cancel();
        }
    };
    {
        let _ambient = token.enter();
        cancelled("index", engine.index(&repo, &IndexOptions::default(), &trip));
    }
    let r = engine.resolve_repo(&repo).expect("repo");
    assert!(!graph::graph_path(&r).exists(), "the graph was built for a run nobody waited for");
    assert!(!engine.search(&repo, &search_for("render dashboard")).expect("searchable").results.is_empty());

    engine.index(&repo, &IndexOptions::default(), &quiet()).expect("the next run");
    let r = engine.resolve_repo(&repo).expect("repo");
    assert!(graph::graph_path(&r).exists(), "the next run built the graph");
    let impact = ImpactRequest { file: "web/app.ts".into(), ..Default::default() };
    let inbound = engine.impact(&repo, &impact).expect("impact").inbound;
    assert!(inbound.iter().any(|d| d.path == "web/main.ts"), "{inbound:?}");
}

/// The workbench's risk overlay (`Engine::rule_marks`: every file of the diagram on an import
/// cycle walked round its loop) ran to its end for a diagram nobody would show.
#[test]
fn the_risk_overlay_stops_when_the_callers_token_is_tripped() {
    let env = Env::new();
    let (engine, repo) = indexed(&env);
    write(&repo, "src/a.ts", "import { b } from './b';\nexport const a = (): number => b() + 1;\n");
    write(&repo, "src/b.ts", "import { a } from './a';\nexport const b = (): number => a() + 41;\n");
    engine.index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    let files = vec!["src/a.ts".to_string(), "src/b.ts".to_string()];
    let marks = engine.rule_marks(&repo, None, &files).expect("an untripped overlay answers");
    assert!(marks.iter().any(|m| m.rule == "no-import-cycles"), "{marks:?}");

    let token = CancelToken::new();
    token.cancel();
    {
        let _ambient = token.enter();
        cancelled("rule_marks", engine.rule_marks(&repo, None, &files));
    }
    assert_eq!(engine.rule_marks(&repo, None, &files).expect("after the stop").len(), marks.len());
}

/// A repository of `n` TypeScript files in one import chain (`m{i}` imports `m{i+1}`).
fn chain(env: &Env, name: &str, n: usize) -> std::path::PathBuf {
    let repo = env.repo(name);
    for i in 0..n {
        let next = (i + 1) % n;
        write(
            &repo,
            &format!("src/m{i}.ts"),
            format!("import {{ f{next} }} from './m{next}';\nexport const f{i} = (): number => 1;\n"),
        );
    }
    repo
}

/// `docdex graph rebuild` could not be stopped: it parsed and resolved every code file of the
/// repository whatever its caller's token said. Stopped while parsing or while resolving, it
/// now ends `cancelled` having written nothing: the graph on disk is the one built before
/// (byte for byte, without the import added since) and answers impact queries.
#[test]
fn a_graph_rebuild_stopped_while_parsing_or_resolving_keeps_the_last_graph() {
    let env = Env::new();
    let repo = chain(&env, "chain", 300);
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    let path = graph::graph_path(&engine.resolve_repo(&repo).expect("repo"));
    let before = std::fs::read(&path).expect("the index built a graph");
    // An import a finished rebuild would add (read from disk: the index does not know it yet).
    write(
        &repo,
        "src/m0.ts",
        "import { f1 } from './m1';\nimport { f7 } from './m7';\nexport const f0 = (): number => 1;\n",
    );
    let imports_m7 = |engine: &docdex::Engine| {
        let req = ImpactRequest { file: "src/m7.ts".into(), depth: Some(1), ..Default::default() };
        engine.impact(&repo, &req).expect("impact answers").inbound.iter().any(|d| d.path == "src/m0.ts")
    };
    for phase in ["parsing", "resolving"] {
        let token = CancelToken::new();
        let trip = |p: &IndexProgress| {
            if p.phase == phase {
                token.cancel();
            }
        };
        let result = {
            let _ambient = token.enter();
            engine.rebuild_impact_graph(&repo, &trip)
        };
        cancelled(&format!("graph rebuild stopped while {phase}"), result);
        assert_eq!(std::fs::read(&path).expect("graph"), before, "stopped while {phase}: the graph was rewritten");
        assert!(!imports_m7(&engine), "stopped while {phase}: a half-built graph is served");
    }
    engine.rebuild_impact_graph(&repo, &quiet()).expect("a rebuild nobody stops");
    assert!(imports_m7(&engine), "the finished rebuild has the new import");
}

/// Ctrl-C killed `docdex graph rebuild` wherever it was, without a word. It now stops the
/// rebuild (here while it waits for the writer lock another run holds), says nothing was
/// written, and exits 130 as an interrupted command does.
#[cfg(target_os = "linux")]
#[test]
fn ctrl_c_at_graph_rebuild_stops_it_with_exit_130_and_says_the_graph_is_kept() {
    let env = Env::new();
    let (engine, repo) = indexed(&env);
    let path = graph::graph_path(&engine.resolve_repo(&repo).expect("repo"));
    let before = std::fs::read(&path).expect("graph");
    // A one-off holder of the writer lock: the rebuild waits (up to a few idle seconds).
    let session = engine.open_index_session(&engine.resolve_repo(&repo).unwrap(), false).expect("session");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_docdex"))
        .args(["graph", "rebuild", "--repo", repo.to_str().unwrap()])
        .env("DOCDEX_HOME", env.home())
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    crate::util::eventually("the rebuild catches Ctrl-C", || catches_sigint(child.id()));
    std::thread::sleep(Duration::from_millis(200));
    let sent = Instant::now();
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) }, 0);
    let out = child.wait_with_output().expect("wait");
    assert!(sent.elapsed() < Duration::from_millis(1500), "it stopped at once: {:?}", sent.elapsed());
    drop(session);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("graph rebuild stopped (Ctrl-C): nothing was written"), "{stderr}");
    assert_eq!(std::fs::read(&path).expect("graph"), before);
    engine.rebuild_impact_graph(&repo, &quiet()).expect("a later rebuild runs");
}

/// Whether process `pid` has a handler for SIGINT (`SigCgt` in /proc/<pid>/status).
#[cfg(target_os = "linux")]
fn catches_sigint(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let mask = status.lines().find_map(|l| l.strip_prefix("SigCgt:")).map(str::trim).unwrap_or("0");
    u64::from_str_radix(mask, 16).is_ok_and(|m| m & (1 << (libc::SIGINT - 1)) != 0)
}

/// A search over a larger corpus whose token trips while it runs (at a different moment each
/// time, from a thread) ends `cancelled` within a few milliseconds of the trip, or had
/// already answered; an untripped search answers the same hits before and after.
#[test]
fn a_search_whose_token_trips_mid_way_ends_cancelled_promptly() {
    let env = Env::new();
    let repo = env.repo("corpus");
    for i in 0..600 {
        let body: String =
            (0..30).map(|l| format!("session store handler {i} line {l} expire token cache request\n")).collect();
        write(&repo, &format!("src/s{i}.rs"), format!("pub fn session_store_{i}() {{}}\n{body}"));
    }
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    let req = SearchRequest { query: "session store expire token".into(), limit: Some(200), ..Default::default() };
    let first = engine.search(&repo, &req).expect("search");
    assert!(first.results.len() >= 100);
    let mut stopped = 0;
    for delay_us in (0..40).map(|i| i * 150) {
        let token = CancelToken::new();
        let (result, late) = std::thread::scope(|s| {
            let tripper = s.spawn(|| {
                std::thread::sleep(Duration::from_micros(delay_us));
                token.cancel();
                Instant::now()
            });
            let _ambient = token.enter();
            let result = engine.search(&repo, &req);
            let ended = Instant::now();
            let tripped = tripper.join().unwrap();
            (result, ended.saturating_duration_since(tripped))
        });
        match result {
            Err(Error::Cancelled) => {
                stopped += 1;
                // Generous for a debug build on a loaded machine: the stop itself takes microseconds.
                assert!(late < Duration::from_millis(200), "ended {late:?} after the trip (delay {delay_us} µs)");
            }
            Ok(_) => {}
            Err(e) => panic!("{e}"),
        }
    }
    assert!(stopped > 0, "no search was stopped mid-way");
    let again = engine.search(&repo, &req).expect("after the stops");
    let ids = |r: &docdex::engine::protocol::SearchResponse| {
        r.results.iter().map(|h| (h.chunk_id.clone(), h.score)).collect::<Vec<_>>()
    };
    assert_eq!(ids(&again), ids(&first));
}
