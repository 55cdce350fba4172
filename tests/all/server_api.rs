//! The engine-backed HTTP endpoints as a client meets them: symbols and AST, the impact
//! graph, repo memory, `/v1/chat/completions` (OpenAI shape, streaming and not) and the
//! reasoning DAG, each with its error contract: unknown repo, stale or missing index, paths
//! outside the repo, malformed bodies. The real binary on loopback, reqwest as the client,
//! real indexes in a temporary DOCDEX_HOME, the fake Ollama behind chat and memory.

use crate::server_util::{client, Server};
use crate::util::{dead_url, llm_config, sample_repo, write, Env, McpStdio};
use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
use serde_json::{json, Value};

fn indexed_repo(env: &Env, name: &str) -> std::path::PathBuf {
    let repo = env.repo(name);
    sample_repo(&repo);
    // Imports for the impact graph: a.py and c.py import b.py.
    write(&repo, "a.py", "import b\n\ndef run():\n    return b.helper()\n");
    write(&repo, "b.py", "def helper():\n    return 1\n");
    write(&repo, "c.py", "import b\n");
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    repo
}

async fn json_of(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text:?}")))
}

async fn get(server: &Server, path: &str) -> (u16, Value) {
    json_of(client().get(server.url(path)).send().await.unwrap()).await
}

async fn post(server: &Server, path: &str, body: Value) -> (u16, Value) {
    json_of(client().post(server.url(path)).json(&body).send().await.unwrap()).await
}

fn assert_error(status: u16, v: &Value, want_status: u16, code: &str) {
    assert_eq!(status, want_status, "{v}");
    assert_eq!(v["error"]["code"], code, "{v}");
    assert!(v["error"]["message"].as_str().is_some_and(|m| m.len() > 10), "{v}");
}

fn set_symbol_meta(env: &Env, repo: &std::path::Path, key: &str, value: &str) {
    let r = env.engine().resolve_repo(repo).unwrap();
    let conn = rusqlite::Connection::open(docdex::engine::code::store::db_path(&r)).unwrap();
    conn.execute("INSERT OR REPLACE INTO meta VALUES(?1, ?2)", [key, value]).unwrap();
}

#[tokio::test]
async fn symbols_and_ast_answer_and_a_drifted_store_is_409_stale_index() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    write(env.dir.path(), "outside.rs", "fn secret() {}\n");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);

    let (s, v) = get(&server, "/v1/symbols?query=expire_stale&kind=method").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["mode"], "search");
    let top = &v["results"][0];
    assert_eq!(
        (top["name"].as_str(), top["path"].as_str()),
        (Some("expire_stale_sessions"), Some("src/auth/session.rs"))
    );
    assert_eq!(top["container"], "SessionStore");

    let (s, v) = get(&server, "/v1/symbols?file=src/auth/session.rs").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["mode"], "outline");
    let names: Vec<&str> = v["results"].as_array().unwrap().iter().filter_map(|h| h["name"].as_str()).collect();
    assert!(names.contains(&"SessionStore") && names.contains(&"expire_stale_sessions"), "{names:?}");

    let (s, v) = get(&server, "/v1/symbols/status").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!((v["state"].as_str(), v["symbols_reindex_required"].as_bool()), (Some("ready"), Some(false)), "{v}");

    let (s, v) = get(&server, "/v1/ast/search?kinds=function_definition,function_item&mode=any").await;
    assert_eq!(s, 200, "{v}");
    let files: Vec<&str> = v["results"].as_array().unwrap().iter().filter_map(|h| h["path"].as_str()).collect();
    assert!(files.contains(&"src/parser.py") && files.contains(&"src/auth/session.rs"), "{files:?}");

    let (s, v) =
        post(&server, "/v1/ast/query", json!({"kinds": ["function_definition"], "name": "parse_config"})).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["results"][0]["path"], "src/parser.py", "{v}");
    assert_eq!(v["results"][0]["samples"][0]["name"], "parse_config", "{v}");

    // Errors: paths leaving the repo, missing or malformed parameters, another repository.
    let (s, v) = get(&server, "/v1/symbols?file=../outside.rs").await;
    assert_error(s, &v, 403, "path_outside_repo");
    let (s, v) = get(&server, "/v1/ast/search?kinds=function_item&path_prefix=/etc").await;
    assert_error(s, &v, 403, "path_outside_repo");
    // The gatekeeper too (it was 400 bad_request), relative or absolute.
    for path in ["../../etc/passwd", "/etc/passwd"] {
        let body = json!({"files": [{"path": "src/ok.rs", "content": ""}, {"path": path, "content": "x"}]});
        let (s, v) = post(&server, "/v1/hooks/validate", body).await;
        assert_error(s, &v, 403, "path_outside_repo");
    }
    // An agent profile memory lacks, or an id no agent can have: `unknown_agent`, the code the
    // pre-commit hook reads (it read the words of a `not_found` or `bad_request` message).
    for agent in ["nosuch_agent", "bad agent!"] {
        let body = json!({"files": [{"path": "src/ok.rs", "content": ""}], "agent_id": agent});
        let (s, v) = post(&server, "/v1/hooks/validate", body).await;
        assert_error(s, &v, 404, "unknown_agent");
    }
    let (s, v) = get(&server, "/v1/symbols").await;
    assert_error(s, &v, 400, "bad_request");
    let (s, v) = get(&server, "/v1/symbols?query=x&limit=many").await;
    assert_error(s, &v, 400, "bad_request");
    let (s, v) = get(&server, "/v1/ast/search").await;
    assert_error(s, &v, 400, "bad_request");
    let (s, v) = get(&server, "/v1/ast/search?kinds=x&mode=some").await;
    assert_error(s, &v, 400, "bad_request");
    let r = client().post(server.url("/v1/ast/query")).header("content-type", "application/json").body("{\"kinds\": [");
    let (s, v) = json_of(r.send().await.unwrap()).await;
    assert_error(s, &v, 400, "bad_request");
    let (s, v) = post(&server, "/v1/ast/query", json!({"kinds": "function_item"})).await;
    assert_error(s, &v, 400, "bad_request");
    let other = env.repo("other");
    let r = client().get(server.url("/v1/symbols?query=x")).header("x-docdex-repo", other.to_str().unwrap());
    let (s, v) = json_of(r.send().await.unwrap()).await;
    assert_error(s, &v, 404, "unknown_repo");
    let (s, v) = get(&server, "/v1/symbols/status?repo=/definitely/not/here").await;
    assert_error(s, &v, 404, "unknown_repo");

    // Parser drift: python symbols were extracted by another grammar, so queries are refused
    // with 409 stale_index (saying to re-index) and the status says so.
    set_symbol_meta(&env, &repo, "grammar:python", "tree-sitter-python 0.0.1");
    let (s, v) = get(&server, "/v1/symbols?query=parse_config").await;
    assert_error(s, &v, 409, "stale_index");
    assert!(v["error"]["message"].as_str().unwrap().contains("docdex index"), "{v}");
    let (s, v) = post(&server, "/v1/ast/query", json!({"kinds": ["function_definition"]})).await;
    assert_error(s, &v, 409, "stale_index");
    let (s, v) = get(&server, "/v1/symbols/status").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["symbols_reindex_required"], true, "{v}");
}

#[tokio::test]
async fn impact_follows_imports_and_refuses_paths_outside_the_repo() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);

    let (s, v) = get(&server, "/v1/graph/impact?file=b.py&direction=in&depth=2").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["file"], "b.py");
    assert_eq!(v["direction"], "in");
    let mut inbound: Vec<&str> = v["inbound"].as_array().unwrap().iter().filter_map(|d| d["path"].as_str()).collect();
    inbound.sort();
    assert_eq!(inbound, ["a.py", "c.py"], "{v}");
    assert!(v["outbound"].as_array().unwrap().is_empty(), "direction=in: {v}");

    let (s, v) = get(&server, "/v1/graph/impact?file=a.py&direction=out").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["outbound"][0]["path"], "b.py", "{v}");
    // A search hit's citation, as the command line takes it.
    let (s, v) = get(&server, "/v1/graph/impact?file=a.py:1-3&direction=out").await;
    assert_eq!((s, v["file"].as_str()), (200, Some("a.py")), "{v}");
    assert_eq!(v["outbound"][0]["path"], "b.py", "{v}");
    assert!(v["affected"].as_array().unwrap().is_empty(), "nothing imports a.py: {v}");

    for escape in ["../../etc/passwd", "/etc/passwd", "src/../../x.py"] {
        let url = format!("/v1/graph/impact?file={}", escape.replace('/', "%2F"));
        let (s, v) = get(&server, &url).await;
        assert_error(s, &v, 403, "path_outside_repo");
    }
    let (s, v) = get(&server, "/v1/graph/impact?file=nope.py").await;
    assert_error(s, &v, 404, "not_found");
    let (s, v) = get(&server, "/v1/graph/impact?file=b.py&depth=0").await;
    assert_error(s, &v, 400, "bad_request");
    let (s, v) = get(&server, "/v1/graph/impact?file=b.py&direction=sideways").await;
    assert_error(s, &v, 400, "bad_request");
    let (s, v) = get(&server, "/v1/graph/impact").await;
    assert_error(s, &v, 400, "bad_request");
}

/// A repository for the impact graph's tests and diagnostics routes: b.py is tested by name
/// (tests/test_b.py) and through a.py (tests/test_a.py); d.py has three dynamic imports.
fn tested_repo(env: &Env) -> std::path::PathBuf {
    let repo = env.repo("tested");
    write(&repo, "a.py", "import b\n\ndef run():\n    return b.helper()\n");
    write(&repo, "b.py", "def helper():\n    return 1\n");
    write(&repo, "tests/test_b.py", "import b\n\ndef test_helper():\n    assert b.helper() == 1\n");
    write(&repo, "tests/test_a.py", "import a\n\ndef test_run():\n    assert a.run() == 1\n");
    let d = "import importlib\n\ndef load(name):\n    x = importlib.import_module(\"plugins.\" + name)\n    y = __import__(name)\n    return importlib.import_module(name), x, y\n";
    write(&repo, "d.py", d);
    write(env.dir.path(), "outside.py", "import b\n");
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    repo
}

fn paths_of<'a>(v: &'a Value, list: &str) -> Vec<&'a str> {
    v[list].as_array().unwrap().iter().filter_map(|t| t["path"].as_str()).collect()
}

#[tokio::test]
async fn graph_tests_and_diagnostics_answer_over_http_bounded_and_confined() {
    let env = Env::new();
    let repo = tested_repo(&env);
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);

    let (s, v) = get(&server, "/v1/graph/tests?file=b.py").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(paths_of(&v, "tests"), ["tests/test_b.py", "tests/test_a.py"], "nearest first: {v}");
    let (s, v) = get(&server, "/v1/graph/tests?file=b.py:2").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(paths_of(&v, "tests"), ["tests/test_b.py", "tests/test_a.py"], "a citation's file: {v}");
    assert_eq!(v["tests"][1]["via"], json!(["a.py", "b.py"]), "{v}");
    // Named after b.py (nearest) and importing it: both reasons are given.
    assert_eq!(v["tests"][0]["depth"], 0, "{v}");
    assert_eq!(v["tests"][0]["reason"], "named after b.py, and imports it (line 1)", "{v}");
    assert_eq!((v["total"].as_u64(), v["truncated"].as_bool()), (Some(2), Some(false)), "{v}");
    let (s, v) = get(&server, "/v1/graph/tests?file=b.py&limit=1").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(paths_of(&v, "tests"), ["tests/test_b.py"], "{v}");
    assert_eq!((v["total"].as_u64(), v["truncated"].as_bool()), (Some(2), Some(true)), "{v}");

    let (s, v) = get(&server, "/v1/graph/diagnostics").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(paths_of(&v, "files"), ["d.py"], "{v}");
    assert_eq!(v["files"][0]["diagnostics"].as_array().unwrap().len(), 3, "{v}");
    assert_eq!(
        (v["total"].as_u64(), v["truncated"].as_bool(), &v["by_code"]["dynamic"]),
        (Some(3), Some(false), &json!(3))
    );
    let (s, v) = get(&server, "/v1/graph/diagnostics?limit=2").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["files"][0]["diagnostics"].as_array().unwrap().len(), 2, "{v}");
    assert_eq!((v["total"].as_u64(), v["truncated"].as_bool()), (Some(3), Some(true)), "{v}");
    let (s, v) = get(&server, "/v1/graph/diagnostics?file=a.py").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!((v["total"].as_u64(), paths_of(&v, "files").len()), (Some(0), 0), "a.py resolves: {v}");

    // The error contract of /v1/graph/impact.
    for route in ["tests", "diagnostics"] {
        for escape in ["../outside.py", "/etc/passwd", "tests/../../outside.py"] {
            let url = format!("/v1/graph/{route}?file={}", escape.replace('/', "%2F"));
            let (s, v) = get(&server, &url).await;
            assert_error(s, &v, 403, "path_outside_repo");
        }
        let (s, v) = get(&server, &format!("/v1/graph/{route}?file=nope.py")).await;
        assert_error(s, &v, 404, "not_found");
        let (s, v) = get(&server, &format!("/v1/graph/{route}?file=b.py&limit=many")).await;
        assert_error(s, &v, 400, "bad_request");
    }
    let (s, v) = get(&server, "/v1/graph/tests").await;
    assert_error(s, &v, 400, "bad_request");
}

/// `limit=0` was taken as 1 (one row and `truncated: true`, no word of it) where the command
/// line refuses it; it is a 400 naming the range on every code-intelligence list, and a
/// symbols request naming nothing says so in the request's words, not the command line's.
#[tokio::test]
async fn a_zero_limit_is_refused_naming_the_range_and_an_empty_symbols_request_names_its_fields() {
    let env = Env::new();
    let repo = tested_repo(&env);
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let routes = [
        "/v1/graph/tests?file=b.py&limit=0",
        "/v1/graph/diagnostics?limit=0",
        "/v1/symbols?query=helper&limit=0",
        "/v1/symbols?file=b.py&limit=0",
        "/v1/ast/search?kinds=function_definition&limit=0",
    ];
    for route in routes {
        let (s, v) = get(&server, route).await;
        assert_error(s, &v, 400, "bad_request");
        assert!(
            v["error"]["message"].as_str().unwrap().starts_with("limit 0 asks for nothing: give 1 to 1000"),
            "{route}: {v}"
        );
    }
    let (s, v) = post(&server, "/v1/ast/query", json!({"kinds": ["function_definition"], "limit": 0})).await;
    assert_error(s, &v, 400, "bad_request");
    let (s, v) = get(&server, "/v1/symbols?query=helper&limit=5000").await;
    assert_eq!((s, v["results"][0]["name"].as_str()), (200, Some("helper")), "a large limit is cut: {v}");
    let (s, v) = get(&server, "/v1/symbols").await;
    assert_error(s, &v, 400, "bad_request");
    assert!(v["error"]["message"].as_str().unwrap().contains("(`query`"), "{v}");
}

/// The same two questions as MCP tools, over a real stdio session.
#[test]
fn mcp_impact_tests_and_diagnostics_tools_answer_and_refuse_paths_outside() {
    let env = Env::new();
    let repo = tested_repo(&env);
    let mut mcp = McpStdio::start(&env, &["--repo", repo.to_str().unwrap()], json!({}));
    let listed = mcp.request("tools/list", json!({}));
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"docdex_impact_tests") && names.contains(&"docdex_impact_diagnostics"), "{names:?}");

    let body = |r: &Value| -> Value {
        assert_eq!(r["isError"], false, "{r}");
        serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap()
    };
    let v = body(&mcp.call("docdex_impact_tests", json!({"file": "b.py"})));
    assert_eq!(paths_of(&v, "tests"), ["tests/test_b.py", "tests/test_a.py"], "{v}");
    let v = body(&mcp.call("docdex_impact_tests", json!({"file": "b.py", "limit": 1})));
    assert_eq!((paths_of(&v, "tests").len(), v["total"].as_u64(), v["truncated"].as_bool()), (1, Some(2), Some(true)));
    let v = body(&mcp.call("docdex_impact_diagnostics", json!({})));
    assert_eq!((paths_of(&v, "files"), v["total"].as_u64()), (vec!["d.py"], Some(3)), "{v}");
    let v = body(&mcp.call("docdex_impact_diagnostics", json!({"file": "d.py", "limit": 1})));
    assert_eq!((v["total"].as_u64(), v["truncated"].as_bool()), (Some(3), Some(true)), "{v}");

    for (tool, args) in [
        ("docdex_impact_tests", json!({"file": "../outside.py"})),
        ("docdex_impact_diagnostics", json!({"file": "/etc/passwd"})),
    ] {
        let r = mcp.call(tool, args);
        assert_eq!(r["isError"], true, "{r}");
        assert!(r["content"][0]["text"].as_str().unwrap().starts_with("path_outside_repo"), "{tool}: {r}");
    }
    let r = mcp.call("docdex_impact_tests", json!({}));
    assert_eq!(r["isError"], true, "no file: {r}");
}

#[tokio::test]
async fn the_daemon_says_which_repo_is_unknown_or_unindexed_on_every_new_endpoint() {
    let env = Env::new();
    let unindexed = env.repo("fresh");
    write(&unindexed, "x.py", "import y\n");
    let daemon = Server::start(&env, &["daemon", "--no-watch"], &[]);
    let u = unindexed.to_str().unwrap();
    let gets = [
        format!("/v1/symbols?query=x&repo={u}"),
        format!("/v1/symbols/status?repo={u}"),
        format!("/v1/ast/search?kinds=function_definition&repo={u}"),
        format!("/v1/graph/impact?file=x.py&repo={u}"),
        format!("/v1/graph/tests?file=x.py&repo={u}"),
        format!("/v1/graph/diagnostics?repo={u}"),
        format!("/v1/dag/sessions?repo={u}"),
    ];
    for path in &gets {
        let (s, v) = get(&daemon, path).await;
        assert_error(s, &v, 409, "not_indexed");
        assert!(v["error"]["message"].as_str().unwrap().contains("/v1/initialize"), "{path}: {v}");
        let unknown = path.replace(u, "/definitely/not/here");
        let (s, v) = get(&daemon, &unknown).await;
        assert_error(s, &v, 404, "unknown_repo");
    }
    let posts = [
        ("/v1/ast/query", json!({"kinds": ["x"], "repo": u})),
        ("/v1/memory/store", json!({"content": "a fact", "repo": u})),
        ("/v1/memory/recall", json!({"query": "fact", "repo": u})),
        ("/v1/chat/completions", json!({"messages": [{"role": "user", "content": "q"}], "docdex": {"repo": u}})),
    ];
    for (path, body) in posts {
        let (s, v) = post(&daemon, path, body).await;
        assert_error(s, &v, 409, "not_indexed");
    }
    // The daemon serves no default repository: a request must name one.
    let (s, v) = get(&daemon, "/v1/symbols?query=x").await;
    assert_error(s, &v, 400, "bad_request");
}

#[tokio::test]
async fn memory_is_stored_and_recalled_per_repository() {
    let env = Env::new();
    let fake = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    env.write_config(&llm_config("ollama", &fake.url(), "fake-chat", "fake-embed"));
    let repo = indexed_repo(&env, "r");
    let other = indexed_repo(&env, "other");
    let daemon = Server::start(&env, &["daemon", "--no-watch"], &[]);
    let r = repo.to_str().unwrap();

    let (s, v) = post(
        &daemon,
        "/v1/memory/store",
        json!({"repo": r, "content": "integration tests need REDIS_URL set", "metadata": {"source": "test"}}),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["memory"]["embedded"], true, "the fake embedder answered: {v}");
    assert_eq!(v["memory"]["metadata"]["source"], "test");
    let id = v["memory"]["id"].as_str().unwrap().to_string();
    // The repository named by header.
    let resp = client()
        .post(daemon.url("/v1/memory/store"))
        .header("x-docdex-repo", r)
        .json(&json!({"content": "release notes live in docs/CHANGES.md"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);

    let (s, v) =
        post(&daemon, "/v1/memory/recall", json!({"repo": r, "query": "REDIS_URL integration tests", "limit": 5}))
            .await;
    assert_eq!(s, 200, "{v}");
    let ids: Vec<&str> = v["results"].as_array().unwrap().iter().filter_map(|m| m["id"].as_str()).collect();
    assert_eq!(ids, [id.as_str()], "the unrelated memory is under the similarity floor: {v}");
    assert_eq!(v["mode"], "vector");
    // The memory stored through the header is in the same repository.
    let (s, v) = post(&daemon, "/v1/memory/recall", json!({"repo": r, "query": "where do release notes live"})).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["results"][0]["content"], "release notes live in docs/CHANGES.md", "{v}");
    // Memories stay in their repository.
    let (s, v) =
        post(&daemon, "/v1/memory/recall", json!({"repo": other.to_str().unwrap(), "query": "REDIS_URL"})).await;
    assert_eq!(s, 200, "{v}");
    assert!(v["results"].as_array().unwrap().is_empty(), "{v}");

    // Listed newest first, and forgotten by an id prefix; another repository's id is not found.
    let q = |p: &str| format!("{p}?repo={r}");
    let (s, v) = get(&daemon, &q("/v1/memory")).await;
    assert_eq!((s, v["total"].as_u64()), (200, Some(2)), "{v}");
    let (s, v) = post(&daemon, "/v1/memory/delete", json!({"repo": other.to_str().unwrap(), "id": id})).await;
    assert_error(s, &v, 404, "not_found");
    let (s, v) = post(&daemon, "/v1/memory/delete", json!({"repo": r, "id": &id[..8]})).await;
    assert_eq!((s, v["id"].as_str()), (200, Some(id.as_str())), "{v}");
    let (s, v) = get(&daemon, &q("/v1/memory")).await;
    assert_eq!((s, v["total"].as_u64()), (200, Some(1)), "{v}");
    // Files like a file, and the import cycles, over HTTP as on the command line.
    let (s, v) = post(&daemon, "/v1/similar", json!({"repo": r, "file": "src/auth/session.rs", "limit": 2})).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["file"], "src/auth/session.rs");
    let (s, v) = post(&daemon, "/v1/similar", json!({"repo": r, "file": "src/auth/session.rs:1-6", "limit": 2})).await;
    assert_eq!((s, v["file"].as_str()), (200, Some("src/auth/session.rs")), "a citation's file: {v}");
    let (s, v) = get(&daemon, &q("/v1/graph/cycles")).await;
    assert_eq!(s, 200, "{v}");
    assert!(v["cycles"].is_array(), "{v}");

    // Errors: empty content, metadata that is not an object, malformed JSON, empty body, empty query.
    let (s, v) = post(&daemon, "/v1/memory/store", json!({"repo": r, "content": "   "})).await;
    assert_error(s, &v, 400, "bad_request");
    let (s, v) = post(&daemon, "/v1/memory/store", json!({"repo": r, "content": "x", "metadata": [1]})).await;
    assert_error(s, &v, 400, "bad_request");
    let (s, v) = post(&daemon, "/v1/memory/store", json!({"repo": r})).await;
    assert_error(s, &v, 400, "bad_request");
    // Metadata is bounded as content is (a 1 MB string in it was stored and listed back).
    let big = json!({"repo": r, "content": "a fact", "metadata": {"note": "x".repeat(1 << 20)}});
    let (s, v) = post(&daemon, "/v1/memory/store", big).await;
    assert_error(s, &v, 400, "bad_request");
    assert!(v["error"]["message"].as_str().unwrap().contains("metadata holds at most 16 KB"), "{v}");
    let (_, v) = get(&daemon, &q("/v1/memory")).await;
    assert!(!v.to_string().contains("xxxxxxxx"), "{v}");
    let bad = client().post(daemon.url("/v1/memory/recall")).header("content-type", "application/json").body("{oops");
    let (s, v) = json_of(bad.send().await.unwrap()).await;
    assert_error(s, &v, 400, "bad_request");
    let (s, v) = post(&daemon, "/v1/memory/recall", json!({"repo": r, "query": ""})).await;
    assert_error(s, &v, 400, "bad_request");
}

/// The SSE `data:` payloads of a streamed response, in order.
fn sse_data(text: &str) -> Vec<String> {
    text.lines().filter_map(|l| l.strip_prefix("data:")).map(|d| d.trim_start().to_string()).collect()
}

#[tokio::test]
async fn chat_completions_answer_openai_style_with_the_trace_and_log_the_dag() {
    let env = Env::new();
    let fake = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    env.write_config(&llm_config("ollama", &fake.url(), "fake-chat", "fake-embed"));
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let c = client();
    let question = "where are stale sessions expired?";

    // Non-streaming, agent by header.
    let resp = c
        .post(server.url("/v1/chat/completions"))
        .header("x-docdex-agent-id", "agent-http")
        .json(&json!({"model": "fake-chat", "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": question}]}))
        .send()
        .await
        .unwrap();
    let (s, v) = json_of(resp).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["object"], "chat.completion");
    assert!(v["id"].as_str().unwrap().starts_with("chatcmpl-"));
    let answer = v["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(answer.starts_with(&format!("FAKE ANSWER to \"{question}\".")), "{answer}");
    assert!(answer.contains("src/auth/session.rs"), "the answer cites the retrieved source: {answer}");
    assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert!(v["usage"]["prompt_tokens"].as_u64().unwrap() > 0, "{v}");
    let ext = &v["docdex"];
    assert_eq!(ext["llm"]["status"], "answered", "{ext}");
    assert_eq!(ext["trace"]["agent_id"], "agent-http");
    let steps: Vec<&str> =
        ext["trace"]["steps"].as_array().unwrap().iter().filter_map(|s| s["name"].as_str()).collect();
    assert!(steps.contains(&"code_index") && steps.contains(&"gate"), "{steps:?}");
    assert!(ext["sources"].as_array().unwrap().iter().any(|s| s["path"] == "src/auth/session.rs"), "{ext}");
    let session = ext["session_id"].as_str().unwrap().to_string();

    // The reasoning DAG logged it.
    let (s, v) = get(&server, "/v1/dag/sessions").await;
    assert_eq!(s, 200, "{v}");
    let listed =
        v["sessions"].as_array().unwrap().iter().find(|x| x["id"] == session.as_str()).expect("session listed");
    assert_eq!(listed["agent_id"], "agent-http");
    let (s, v) = get(&server, &format!("/v1/dag/{}", &session[..8])).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["session"]["id"], session.as_str());
    let kinds: Vec<&str> = v["nodes"].as_array().unwrap().iter().filter_map(|n| n["kind"].as_str()).collect();
    assert!(kinds.contains(&"UserRequest") && kinds.contains(&"Decision"), "{kinds:?}");
    let (s, v) = get(&server, "/v1/dag/0000-no-such-session").await;
    assert_error(s, &v, 404, "not_found");

    // Streaming, agent and session in the body: SSE chunks, the trace in the final chunk, [DONE].
    let resp = c
        .post(server.url("/v1/chat/completions"))
        .json(&json!({"model": "docdex", "stream": true, "stream_options": {"include_usage": true},
            "messages": [{"role": "user", "content": question}],
            "docdex": {"agent_id": "agent-body", "session_id": session, "no_web": true}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    let data = sse_data(&resp.text().await.unwrap());
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"), "{data:?}");
    let chunks: Vec<Value> = data[..data.len() - 1].iter().map(|d| serde_json::from_str(d).unwrap()).collect();
    assert!(chunks.len() >= 4, "role+text, more text, final, usage: {chunks:?}");
    assert!(chunks.iter().all(|c| c["object"] == "chat.completion.chunk" && c["id"] == chunks[0]["id"]));
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let streamed: String =
        chunks.iter().filter_map(|c| c["choices"][0]["delta"]["content"].as_str()).collect::<Vec<_>>().concat();
    assert!(streamed.starts_with(&format!("FAKE ANSWER to \"{question}\".")), "{streamed}");
    assert!(streamed.contains("src/auth/session.rs"), "{streamed}");
    let last = &chunks[chunks.len() - 2];
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
    assert_eq!(last["docdex"]["session_id"], session.as_str(), "the session continued");
    assert_eq!(last["docdex"]["turn"], 2);
    assert_eq!(last["docdex"]["trace"]["gate"]["web_policy"], "off", "{}", last["docdex"]["trace"]["gate"]);
    let usage = &chunks[chunks.len() - 1];
    assert!(usage["choices"].as_array().unwrap().is_empty() && usage["usage"]["total_tokens"].as_u64().unwrap() > 0);

    // Errors before anything is streamed are the error contract.
    let (s, v) =
        post(&server, "/v1/chat/completions", json!({"messages": [{"role": "assistant", "content": "hi"}]})).await;
    assert_error(s, &v, 400, "bad_request");
    let (s, v) = post(&server, "/v1/chat/completions", json!({"messages": "hello"})).await;
    assert_error(s, &v, 400, "bad_request");
    for stream in [false, true] {
        let body = json!({"stream": stream, "max_tokens": 0, "messages": [{"role": "user", "content": "q"}]});
        let (s, v) = post(&server, "/v1/chat/completions", body).await;
        assert_error(s, &v, 400, "bad_request"); // it was answered with one token
        assert!(v["error"]["message"].as_str().unwrap().contains("max_tokens 0"), "{v}");
    }
    let (s, v) = post(
        &server,
        "/v1/chat/completions",
        json!({"stream": true, "messages": [{"role": "user", "content": "q"}], "docdex": {"diff": "staged"}}),
    )
    .await;
    assert_error(s, &v, 400, "bad_request"); // not a git repository
    let (s, v) = post(
        &server,
        "/v1/chat/completions",
        json!({"messages": [{"role": "user", "content": "q"}], "docdex": {"diff": {"target": "working", "paths": ["../x"]}}}),
    )
    .await;
    assert_error(s, &v, 403, "path_outside_repo");
    let other = env.repo("elsewhere");
    let r = c
        .post(server.url("/v1/chat/completions?stream=true"))
        .header("x-docdex-repo", other.to_str().unwrap())
        .json(&json!({"stream": true, "messages": [{"role": "user", "content": "q"}]}));
    let (s, v) = json_of(r.send().await.unwrap()).await;
    assert_error(s, &v, 404, "unknown_repo");
    // A model the server does not have: 404 as OpenAI answers it (not a 503 clients retry),
    // in OpenAI's error shape, with the sources still in `docdex`.
    for stream in [false, true] {
        let (s, v) = post(
            &server,
            "/v1/chat/completions",
            json!({"model": "missing-model", "stream": stream, "messages": [{"role": "user", "content": question}]}),
        )
        .await;
        assert_error(s, &v, 404, "model_not_found");
        assert_eq!(
            (v["error"]["type"].as_str(), v["error"]["param"].as_str()),
            (Some("invalid_request_error"), Some("model")),
            "{v}"
        );
        assert!(v["error"]["message"].as_str().unwrap().contains("missing-model"), "{v}");
        assert!(!v["docdex"]["sources"].as_array().unwrap().is_empty(), "{v}");
    }
}

/// `top_p` and the two penalties reach Ollama's `options` (they were dropped: the request
/// carried only `num_ctx` and `num_predict`), out-of-range ones are 400, and a `tool_choice`
/// forcing a tool call is 400 instead of a plain answer with `finish_reason: "stop"` (tour13 F9).
#[tokio::test]
async fn sampling_fields_reach_the_model_and_a_forced_tool_call_is_refused() {
    let env = Env::new();
    let fake = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    env.write_config(&llm_config("ollama", &fake.url(), "fake-chat", "fake-embed"));
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let user = json!([{"role": "user", "content": "where are stale sessions expired?"}]);
    let tools = json!([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]);
    let chats = || fake.requests().into_iter().filter(|(p, _)| p == "/api/chat").map(|(_, b)| b).collect::<Vec<_>>();

    let body = json!({"messages": user, "top_p": 0.5, "presence_penalty": 1.0, "frequency_penalty": -0.5,
        "tools": tools, "tool_choice": "auto"});
    let (s, v) = post(&server, "/v1/chat/completions", body).await;
    assert_eq!(s, 200, "{v}");
    let sent = chats().pop().expect("a chat request reached the model server");
    let options = &sent["options"];
    assert_eq!((options["top_p"].as_f64(), options["presence_penalty"].as_f64()), (Some(0.5), Some(1.0)), "{sent}");
    assert_eq!(options["frequency_penalty"].as_f64(), Some(-0.5), "{sent}");

    let (s, v) = post(&server, "/v1/chat/completions", json!({"messages": user, "tool_choice": "none"})).await;
    assert_eq!(s, 200, "{v}");
    let plain = chats().pop().unwrap();
    for key in ["top_p", "presence_penalty", "frequency_penalty"] {
        assert!(plain["options"].get(key).is_none(), "the server's default unless asked: {plain}");
    }

    let asked = chats().len();
    let forced = json!({"type": "function", "function": {"name": "get_weather"}});
    for choice in [json!("required"), forced] {
        let (s, v) =
            post(&server, "/v1/chat/completions", json!({"messages": user, "tools": tools, "tool_choice": choice}))
                .await;
        assert_error(s, &v, 400, "bad_request");
        assert!(v["error"]["message"].as_str().unwrap().contains("calls no tools"), "{v}");
    }
    for (field, value) in [("top_p", 1.5), ("presence_penalty", -3.0), ("frequency_penalty", 2.5)] {
        let (s, v) = post(&server, "/v1/chat/completions", json!({"messages": user, field: value})).await;
        assert_error(s, &v, 400, "bad_request");
        assert!(
            v["error"]["message"].as_str().unwrap().starts_with(&format!("{field} {value} is out of range")),
            "{v}"
        );
    }
    assert_eq!(chats().len(), asked, "a refused request never reaches the model");
}

/// A sampling field of the wrong type names the field and the value it got: serde's message
/// through the flattened `Sampling` was `invalid type: string "hot", expected f32 at line 1
/// column N`, N the body's end. Refused before any model is asked (none listens here).
#[tokio::test]
async fn a_sampling_field_of_the_wrong_type_is_named_with_its_value() {
    let env = Env::new();
    env.write_config(&llm_config("ollama", &dead_url(), "fake-chat", "fake-embed"));
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let user = json!([{"role": "user", "content": "where are stale sessions expired?"}]);
    for (field, value, got) in [
        ("temperature", json!("hot"), r#"the string "hot""#),
        ("top_p", json!(true), "true"),
        ("presence_penalty", json!({"x": 1}), "an object"),
        ("frequency_penalty", json!([0.5]), "a list"),
    ] {
        let (s, v) =
            post(&server, "/v1/chat/completions", json!({"messages": user, field: value, "stream": true})).await;
        assert_error(s, &v, 400, "bad_request");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.starts_with(&format!("invalid JSON body: `{field}` takes a number")), "{v}");
        assert!(message.ends_with(&format!("not {got}")), "{v}");
    }
    // A number is still a number, and null the server's default: refused only for its range.
    let (s, v) =
        post(&server, "/v1/chat/completions", json!({"messages": user, "temperature": 7, "top_p": null})).await;
    assert_error(s, &v, 400, "bad_request");
    assert!(v["error"]["message"].as_str().unwrap().starts_with("temperature 7 is out of range"), "{v}");
}

#[tokio::test]
async fn chat_without_a_reachable_model_is_503_upstream_unavailable() {
    let env = Env::new();
    env.write_config(&llm_config("ollama", &dead_url(), "fake-chat", "fake-embed"));
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    for stream in [false, true] {
        let (s, v) = post(
            &server,
            "/v1/chat/completions",
            json!({"stream": stream, "messages": [{"role": "user", "content": "where are sessions expired?"}]}),
        )
        .await;
        assert_error(s, &v, 503, "upstream_unavailable");
        assert_eq!(v["docdex"]["llm"]["status"], "unavailable", "{v}");
    }
}

#[tokio::test]
async fn a_client_leaving_a_stream_stops_the_model() {
    let env = Env::new();
    let fake = FakeOllama::start(FakeOllamaOptions { token_delay_ms: 250, ..Default::default() }).unwrap();
    env.write_config(&llm_config("ollama", &fake.url(), "fake-chat", "fake-embed"));
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let mut resp = client()
        .post(server.url("/v1/chat/completions"))
        .json(&json!({"stream": true, "messages": [{"role": "user", "content": "where are stale sessions expired?"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let first = resp.chunk().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("chat.completion.chunk"));
    drop(resp);
    // The turn ends as `stopped` (the answer is logged in the DAG), not after the whole answer.
    let engine = env.engine();
    let answer_status = || {
        let list = engine.dag_sessions(&repo).ok()?;
        let session = engine.dag_session(&repo, &list.sessions.first()?.id).ok()?;
        session.nodes.iter().find_map(|n| n.payload.get("answer").and(n.payload.get("status")).cloned())
    };
    crate::server_util::eventually("the turn to end", || std::future::ready(answer_status().is_some())).await;
    assert_eq!(answer_status(), Some(json!("stopped")));
}

#[tokio::test]
async fn chat_with_a_model_that_cannot_chat_or_is_missing_is_a_4xx_with_advice_for_the_provider() {
    // An embedding model (`all-minilm`) asked to chat was 503 upstream_unavailable, which
    // OpenAI clients retry; a missing model on an OpenAI-compatible server said `ollama pull`.
    let question = "where are stale sessions expired?";
    let ask = |model: &'static str, stream: bool| json!({"model": model, "stream": stream, "messages": [{"role": "user", "content": question}]});
    let env = Env::new();
    let fake = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    env.write_config(&llm_config("ollama", &fake.url(), "fake-chat", "fake-embed"));
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    for stream in [false, true] {
        let (s, v) = post(&server, "/v1/chat/completions", ask("fake-embed", stream)).await;
        assert_error(s, &v, 400, "model_cannot_chat");
        assert_eq!(v["error"]["param"], "model", "{v}");
        assert!(v["error"]["message"].as_str().unwrap().contains("fake-embed on"), "{v}");
        let (s, v) = post(&server, "/v1/chat/completions", ask("gpt-4o", stream)).await;
        assert_error(s, &v, 404, "model_not_found");
        assert!(v["error"]["message"].as_str().unwrap().contains("ollama pull gpt-4o"), "Ollama pulls: {v}");
    }
    // An OpenAI-compatible server serves what it was started with: no `ollama pull` advice.
    let env = Env::new();
    let fake = FakeOllama::start(FakeOllamaOptions { openai_only: true, ..Default::default() }).unwrap();
    env.write_config(&llm_config("openai", &fake.url(), "fake-chat", "fake-embed"));
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let (s, v) = post(&server, "/v1/chat/completions", ask("gpt-4o", false)).await;
    assert_error(s, &v, 404, "model_not_found");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(!message.contains("ollama") && !message.contains("llm-setup"), "{message}");
    assert!(message.contains("gpt-4o is not served by the openai server"), "{message}");
    // llama.cpp's server started with `--embeddings` refuses every chat with 501: that was 503
    // `upstream_unavailable` ("the server is down"); it is bad input, with the server's advice.
    let refusal = json!({"error": {"code": 501, "type": "not_supported_error",
        "message": "This server does not support completions. Start it without `--embeddings`"}});
    let fake = FakeOllama::start(FakeOllamaOptions {
        openai_only: true,
        v1_refuses_embedding_chat: Some((501, refusal)),
        ..Default::default()
    })
    .unwrap();
    env.write_config(&llm_config("openai", &fake.url(), "fake-embed", "fake-embed"));
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    for stream in [false, true] {
        let (s, v) = post(&server, "/v1/chat/completions", ask("fake-embed", stream)).await;
        assert_error(s, &v, 400, "model_cannot_chat");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains("without `--embeddings`") && !message.contains("ollama"), "{message}");
    }
}

/// A query parameter a `GET` route does not take was ignored, so a misspelt one answered with
/// the defaults (`directon=out` gave the default direction): it is a 400 naming it and the
/// parameters the route takes, as bodies and MCP arguments are. Serde aliases (`q`) pass.
#[tokio::test]
async fn a_misspelt_query_parameter_is_refused_naming_those_the_route_takes() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let (s, v) = get(&server, "/v1/graph/impact?file=b.py&depth=3&directon=out").await;
    assert_error(s, &v, 400, "bad_request");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("unknown query parameter \"directon\" for GET /v1/graph/impact: it takes "),
        "{message}"
    );
    for name in ["file", "depth", "direction", "repo"] {
        assert!(message.contains(name), "{name}: {message}");
    }
    for (path, unknown) in [
        ("/v1/symbols?query=helper&path_prefx=src", "path_prefx"),
        ("/v1/open?path=b.py&line=2-3", "line"),
        ("/v1/memory?limt=1", "limt"),
    ] {
        let (s, v) = get(&server, path).await;
        assert_error(s, &v, 400, "bad_request");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.starts_with(&format!("unknown query parameter \"{unknown}\"")), "{path}: {message}");
    }
    let repo_arg = repo.to_str().unwrap();
    for ok in [
        format!("/v1/graph/impact?file=b.py&depth=3&direction=in&repo={repo_arg}"),
        "/v1/symbols?q=helper".to_string(),
        "/v1/open?path=b.py&lines=1-2".to_string(),
    ] {
        let (s, v) = get(&server, &ok).await;
        assert_eq!(s, 200, "{ok}: {v}");
    }
}

/// A body field of the wrong type is named with what it takes, as MCP names an argument:
/// `invalid type: string "5", expected usize` named no field.
#[tokio::test]
async fn a_body_field_of_the_wrong_type_is_named_with_what_it_takes() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let (s, v) = post(&server, "/v1/search", json!({"query": "x", "limit": "5"})).await;
    assert_error(s, &v, 400, "bad_request");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("invalid JSON body: `limit` takes an integer"), "{message}");
    assert!(message.ends_with("not the string \"5\""), "{message}");
    let (s, v) = post(&server, "/v1/search", json!({"query": 7})).await;
    assert_error(s, &v, 400, "bad_request");
    assert_eq!(v["error"]["message"], "invalid JSON body: `query` takes a string, not the number 7", "{v}");
    // A syntax error keeps serde's words and place.
    let resp = client()
        .post(server.url("/v1/search"))
        .header("content-type", "application/json")
        .body("{\"query\": ")
        .send()
        .await
        .unwrap();
    let (s, v) = json_of(resp).await;
    assert_error(s, &v, 400, "bad_request");
    assert!(v["error"]["message"].as_str().unwrap().contains("line 1 column"), "{v}");
    // Well-formed JSON that is no object says so and lists the fields; serde named the
    // request's Rust type (`expected struct SearchBody`).
    for (body, kind) in
        [(json!([1, 2]), "a list"), (json!("idle timeout"), "the string \"idle timeout\""), (json!(null), "null")]
    {
        let (s, v) = post(&server, "/v1/search", body).await;
        assert_error(s, &v, 400, "bad_request");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("POST /v1/search takes a JSON object") && message.contains(&format!("not {kind}")),
            "{message}"
        );
        assert!(message.contains("query") && !message.contains("SearchBody"), "{message}");
    }
}

/// A path holding a NUL byte was looked up and answered 404 `not_found`, as if such a file
/// might exist: no file name holds one, so it is a 400 saying so.
#[tokio::test]
async fn a_path_holding_a_nul_byte_is_a_bad_request() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    for path in ["/v1/open?path=b.py%00.txt", "/v1/graph/impact?file=b.py%00"] {
        let (s, v) = get(&server, path).await;
        assert_error(s, &v, 400, "bad_request");
        assert!(v["error"]["message"].as_str().unwrap().contains("holds a NUL byte"), "{path}: {v}");
    }
}

/// chat's own "prompt too long" check answered `{"code": "bad_request"}`, where the model
/// server's overflow answered OpenAI's `context_length_exceeded` (`invalid_request_error`,
/// `param: messages`), on which clients trim the history: both answer alike, before any model
/// is asked. Other refusals of the chat body carry `type` and, where one field is at fault,
/// `param`; the rest of the API keeps its `{code, message}`.
#[tokio::test]
async fn chat_refusals_are_openai_shaped_and_a_prompt_over_the_window_is_context_length_exceeded() {
    let env = Env::new();
    let fake = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    env.write_config(&format!(
        "{}context_tokens = 1024\n",
        llm_config("ollama", &fake.url(), "fake-chat", "fake-embed")
    ));
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let user = |text: &str| json!([{"role": "user", "content": text}]);
    let long = "where are stale sessions expired in the session store? ".repeat(300);
    let (s, v) = post(&server, "/v1/chat/completions", json!({"model": "fake-chat", "messages": user(&long)})).await;
    assert_eq!(s, 400, "{v}");
    let e = &v["error"];
    assert_eq!(
        (&e["code"], &e["type"], &e["param"]),
        (&json!("context_length_exceeded"), &json!("invalid_request_error"), &json!("messages")),
        "{v}"
    );
    assert!(e["message"].as_str().unwrap().contains("context_tokens"), "{v}");
    let chats = fake.requests().into_iter().filter(|(p, _)| p == "/api/chat").count();
    assert_eq!(chats, 0, "refused before the model is asked");

    let short = user("where are stale sessions expired?");
    for (body, param, words) in [
        (json!({"messages": short, "temperature": 7}), Some("temperature"), "temperature 7 is out of range"),
        (json!({"messages": [{"role": "system", "content": "hi"}]}), Some("messages"), "no user message"),
        (
            json!({"messages": [{"role": "narrator", "content": "hi"}]}),
            Some("messages"),
            "use system, developer, user, assistant, tool or function",
        ),
        (
            json!({"messages": short, "docdex": {"diff": "--output=/tmp/x"}}),
            Some("docdex"),
            "bad docdex.diff \"--output=/tmp/x\"",
        ),
        (json!({"messages": "hi"}), None, "invalid JSON body: `messages` takes a list"),
    ] {
        let (s, v) = post(&server, "/v1/chat/completions", body.clone()).await;
        assert_error(s, &v, 400, "bad_request");
        assert_eq!(v["error"]["type"], "invalid_request_error", "{body}: {v}");
        assert_eq!(v["error"]["param"].as_str(), param, "{body}: {v}");
        assert!(v["error"]["message"].as_str().unwrap().contains(words), "{body}: {v}");
    }
    let (s, v) = post(&server, "/v1/search", json!({"query": 7})).await;
    assert_error(s, &v, 400, "bad_request");
    assert_eq!(v["error"].as_object().map(|o| o.len()), Some(2), "code and message only: {v}");
}
