//! MCP with real clients: the official MCP Python SDK over stdio, streamable HTTP and
//! the legacy SSE transport (`tests/clients/mcp_client.py` lists the tools, calls each
//! one and checks the results), and raw JSON-RPC over stdio for the auth handshake.
//!
//! `.ci/run` installs the SDK into a venv and exports `DOCDEX_TEST_PYTHON`. Locally,
//! without it, the SDK tests print a notice and pass; under CI (`CI` set) they fail.

use crate::server_util::Server;
use crate::util::{sample_repo, write, Env, McpStdio};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The Python with `mcp` and `openai` installed, if any.
pub fn python() -> Option<PathBuf> {
    match std::env::var_os("DOCDEX_TEST_PYTHON").filter(|p| !p.is_empty()) {
        Some(p) => Some(PathBuf::from(p)),
        None if std::env::var_os("CI").is_some() => {
            panic!("CI must export DOCDEX_TEST_PYTHON (a python with `mcp` and `openai`); .ci/run sets it up")
        }
        None => {
            eprintln!("NOTICE: DOCDEX_TEST_PYTHON is not set; skipping a real-client test (run .ci/run to install the clients)");
            None
        }
    }
}

fn client_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clients/mcp_client.py")
}

fn setup(env: &Env) -> (PathBuf, PathBuf) {
    // docdex_web_research goes to a discovery endpoint where nothing listens: offline, always.
    // (Appended: a test may have configured the model server before.)
    let existing = std::fs::read_to_string(env.home().join("config.toml")).unwrap_or_default();
    env.write_config(&format!("{existing}\n[web]\nddg_base_url = \"{}/html/\"\n", crate::util::dead_url()));
    let repo = env.repo("r");
    sample_repo(&repo);
    // An import for docdex_impact: src/cli.py imports src/parser.py.
    write(
        &repo,
        "src/cli.py",
        "from parser import parse_config\n\ndef main():\n    return parse_config(\"app.toml\")\n",
    );
    write(env.dir.path(), "outside.txt", "secret");
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let unindexed = env.repo("unindexed");
    write(&unindexed, "x.rs", "fn x() {}\n");
    (repo, unindexed)
}

/// Runs the SDK client and returns its report.
fn run_client(env: &Env, py: &PathBuf, args: &[&str], unindexed: &std::path::Path) -> Value {
    let out = Command::new(py)
        .arg(client_script())
        .args(args)
        // Outside any repository: a stdio server binds its sessions to the working directory's.
        .current_dir(env.dir.path())
        .env("DOCDEX_HOME", env.home())
        .env("DOCDEX_TEST_UNINDEXED", unindexed)
        .env_remove("DOCDEX_AUTH_TOKEN")
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "MCP client {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let last = String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or_default().to_string();
    let report: Value = serde_json::from_str(&last).unwrap_or_else(|e| panic!("bad report {last:?}: {e}"));
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["server"], "docdex");
    assert_eq!(report["search_top"], "src/auth/session.rs");
    assert_eq!(report["unindexed_error"], "not_indexed", "{report}");
    assert_eq!(report["symbol_top"], "expire_stale_sessions", "{report}");
    assert_eq!(report["impact_inbound"], json!(["src/cli.py"]), "{report}");
    assert_eq!(report["memory_recalled"], true, "{report}");
    assert_eq!(report["tools"].as_array().map(Vec::len), Some(24), "{report}");
    assert_eq!(report["context_roles"], json!(["hit"]), "no git here: search hits only; {report}");
    assert_eq!(report["similar_ok"], true, "{report}");
    assert_eq!(report["server_info_version"], env!("CARGO_PKG_VERSION"), "{report}");
    for list in ["prompts", "resources", "resource_templates"] {
        assert_eq!(report[list], 0, "{list}: {report}");
    }
    let set_level = &report["set_level_error"];
    assert_eq!(set_level[0], -32601, "{report}");
    assert!(set_level[1].as_str().unwrap_or_default().starts_with("logging/setLevel is not offered"), "{report}");
    report
}

#[test]
fn mcp_python_sdk_over_stdio() {
    let Some(py) = python() else { return };
    let env = Env::new();
    let (repo, unindexed) = setup(&env);
    let report = run_client(&env, &py, &["stdio", env!("CARGO_BIN_EXE_docdex"), repo.to_str().unwrap()], &unindexed);
    assert_eq!(report["documents"], 6);
}

#[test]
fn mcp_python_sdk_over_streamable_http_and_sse_with_a_token() {
    let Some(py) = python() else { return };
    let env = Env::new();
    let (repo, unindexed) = setup(&env);
    let daemon = Server::start(&env, &["daemon"], &[("DOCDEX_AUTH_TOKEN", "mcp-token"), ("DOCDEX_LOG", "info")]);
    let r = repo.to_str().unwrap();
    let server_log = || daemon.stderr.lock().unwrap().clone();
    let ok = std::panic::catch_unwind(|| {
        run_client(&env, &py, &["http", &daemon.url("/v1/mcp"), r, "mcp-token"], &unindexed);
        run_client(&env, &py, &["sse", &daemon.url("/sse"), r, "mcp-token"], &unindexed);
    });
    assert!(ok.is_ok(), "server log:\n{}", server_log());
    // Without the token the SDK cannot even connect.
    let out = Command::new(&py).arg(client_script()).args(["http", &daemon.url("/v1/mcp"), r]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("401") || err.contains("session.initialize()"), "refused at initialize: {err}");
}

/// `docdex mcp --repo REPO` at debug log level, with `token` as its `DOCDEX_AUTH_TOKEN`:
/// the child, its stdin and its stdout.
fn spawn_stdio(
    env: &Env,
    repo: &std::path::Path,
    token: Option<&str>,
) -> (std::process::Child, std::process::ChildStdin, BufReader<std::process::ChildStdout>) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_docdex"));
    cmd.args(["mcp", "--repo", repo.to_str().unwrap()]).env("DOCDEX_HOME", env.home()).env("DOCDEX_LOG", "debug");
    match token {
        Some(t) => cmd.env("DOCDEX_AUTH_TOKEN", t),
        None => cmd.env_remove("DOCDEX_AUTH_TOKEN"),
    };
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let stdin = child.stdin.take().unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    (child, stdin, out)
}

/// Speaks raw JSON-RPC to `docdex mcp` and returns the response to one initialize.
fn stdio_initialize(env: &Env, repo: &std::path::Path, params: Value) -> (Value, Vec<String>) {
    let (mut child, mut stdin, mut out) = spawn_stdio(env, repo, Some("stdio-token"));
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params});
    writeln!(stdin, "{init}").unwrap();
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let first: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout is not JSON-RPC ({e}): {line:?}"));
    let mut lines = vec![line.clone()];
    if first.get("result").is_some() {
        writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "docdex_search", "arguments": {"query": "session store"}}});
        writeln!(stdin, "{call}").unwrap();
        let mut l = String::new();
        out.read_line(&mut l).unwrap();
        lines.push(l);
    }
    drop(stdin);
    let _ = child.wait();
    (first, lines)
}

#[test]
fn stdio_mcp_requires_the_token_in_initialize_and_keeps_stdout_clean() {
    let env = Env::new();
    let (repo, _) = setup(&env);
    let base =
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});

    let (resp, _) = stdio_initialize(&env, &repo, base.clone());
    assert!(resp["error"]["message"].as_str().unwrap().contains("requires `auth_token`"), "{resp}");
    let mut wrong = base.clone();
    wrong["auth_token"] = json!("nope");
    let (resp, _) = stdio_initialize(&env, &repo, wrong);
    // A wrong token is said as such (it read as if none had been sent).
    let message = resp["error"]["message"].as_str().unwrap();
    assert!(message.contains("the `auth_token` sent is not this server's") && !message.contains("nope"), "{resp}");

    let mut right = base;
    right["auth_token"] = json!("stdio-token");
    let (resp, lines) = stdio_initialize(&env, &repo, right);
    assert_eq!(resp["result"]["serverInfo"]["name"], "docdex", "{resp}");
    // Even at debug log level, every stdout line is JSON-RPC; the bound repo answers the search.
    for l in &lines {
        let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("non-JSON on stdout ({e}): {l:?}"));
        assert_eq!(v["jsonrpc"], "2.0");
    }
    let result: Value = serde_json::from_str(&lines[1]).unwrap();
    let text = result["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("src/auth/session.rs"), "{text}");
}

#[test]
fn mcp_initialize_root_uri_binds_the_session() {
    let env = Env::new();
    let (repo, _) = setup(&env);
    let mut mcp = McpStdio::start(&env, &[], json!({"rootUri": format!("file://{}", repo.display())}));
    // No project_root: the bound repo answers.
    let r = mcp.call("docdex_search", json!({"query": "parse config"}));
    assert_eq!(r["isError"], false, "{r}");
    assert!(r["content"][0]["text"].as_str().unwrap().contains("src/parser.py"));
    // An unknown tool is a protocol error; a repo-less server without binding would be a tool error.
    assert!(mcp.request("tools/call", json!({"name": "nope", "arguments": {}}))["error"].is_object());
}

/// Started in a project without `--repo` (as agent hosts start it), the session binds to the
/// working directory's repository, as `rootUri` would; `project_root` still reaches another
/// indexed one. Outside any repository the tools ask for `project_root`; `/` is refused as
/// never served, not offered as a `docdex serve --repo /` to start.
#[test]
fn stdio_mcp_started_in_a_repository_binds_to_it() {
    let env = Env::new();
    let (repo, _) = setup(&env);
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    let other = env.repo("other");
    write(&other, "notes.py", "def ocelot_grooming():\n    pass\n");
    env.json(&["index", "--repo", other.to_str().unwrap(), "--json"]);
    let mut mcp = McpStdio::start_in(&env, &repo.join("src"), &[], json!({}));
    let r = mcp.call("docdex_search", json!({"query": "parse config"}));
    assert_eq!(r["isError"], false, "{r}");
    assert!(r["content"][0]["text"].as_str().unwrap().contains("src/parser.py"), "{r}");
    let r = mcp.call("docdex_search", json!({"query": "ocelot grooming", "project_root": other.to_str().unwrap()}));
    assert_eq!(r["isError"], false, "{r}");
    assert!(r["content"][0]["text"].as_str().unwrap().contains("notes.py"), "{r}");
    drop(mcp);

    let mut mcp = McpStdio::start(&env, &[], json!({}));
    let r = mcp.call("docdex_search", json!({"query": "parse config"}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(r["content"][0]["text"].as_str().unwrap().contains("project_root"), "{r}");
    drop(mcp);

    let mut mcp = McpStdio::start(&env, &["--repo", repo.to_str().unwrap()], json!({}));
    let r = mcp.call("docdex_search", json!({"query": "x", "project_root": "/"}));
    let text = r["content"][0]["text"].as_str().unwrap_or_default().to_string();
    assert!(r["isError"] == true && !text.contains("serve --repo /"), "{r}");
}

/// `docdex_status` in a session with no repository (none bound, none served by default) was an
/// error asking for one; it lists what the process serves, as `docdex_server_info` does.
#[test]
fn mcp_status_without_a_repository_lists_what_the_process_serves() {
    let env = Env::new();
    let mut mcp = McpStdio::start(&env, &[], json!({}));
    let r = mcp.call("docdex_status", json!({}));
    assert_eq!(r["isError"], false, "{r}");
    let v: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
    assert!(v["repos"].is_array() && v["index"].is_null(), "{v}");
    assert!(v["note"].as_str().unwrap().contains("project_root"), "{v}");
}

/// An unindexed repository named by `project_root` was answered with HTTP's advice
/// (`POST /v1/initialize`), a call no MCP client can make; the `docdex_index` tool is its way.
#[test]
fn an_unindexed_repository_points_an_mcp_client_to_the_index_tool() {
    let env = Env::new();
    let fresh = env.repo("fresh");
    write(&fresh, "notes.py", "def ocelot_grooming():\n    pass\n");
    let mut mcp = McpStdio::start(&env, &[], json!({}));
    let root = fresh.to_str().unwrap();
    let r = mcp.call("docdex_search", json!({"query": "ocelot grooming", "project_root": root}));
    let text = r["content"][0]["text"].as_str().unwrap_or_default().to_string();
    assert_eq!(r["isError"], true, "{r}");
    assert!(text.contains("not indexed") && text.contains("`docdex_index` tool"), "{text}");
    assert!(!text.contains("/v1/initialize"), "{text}");
    // Following the advice works.
    let r = mcp.call("docdex_index", json!({"project_root": root}));
    assert_eq!(r["isError"], false, "{r}");
    let r = mcp.call("docdex_search", json!({"query": "ocelot grooming", "project_root": root}));
    assert_eq!(r["isError"], false, "{r}");
    assert!(r["content"][0]["text"].as_str().unwrap().contains("notes.py"), "{r}");
}

/// A request for a known method whose params rmcp cannot read (none at all, or string
/// `arguments`) is `-32602` invalid params naming the fault, not `-32601` method not found;
/// the session goes on.
#[test]
fn stdio_tools_call_with_bad_params_is_invalid_params() {
    let env = Env::new();
    let (repo, _) = setup(&env);
    let mut mcp = McpStdio::start(&env, &["--repo", repo.to_str().unwrap()], json!({}));
    mcp.send(&json!({"jsonrpc": "2.0", "id": "no-params", "method": "tools/call"}));
    let r = mcp.recv();
    assert_eq!((r["id"].as_str(), r["error"]["code"].as_i64()), (Some("no-params"), Some(-32602)), "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("needs `params`"), "{r}");
    let r = mcp.request("tools/call", json!({"name": "docdex_search", "arguments": "x"}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("`arguments` must be an object"), "{r}");
    let r = mcp.request("tools/call", json!({"arguments": {"query": "parse"}}));
    assert!(r["error"]["code"] == -32602 && r["error"]["message"].as_str().unwrap().contains("`name`"), "{r}");
    // An unknown method is still method not found, and good calls still work.
    assert_eq!(mcp.request("no/such/method", json!({}))["error"]["code"], -32601);
    let r = mcp.call("docdex_search", json!({"query": "parse config"}));
    assert_eq!(r["isError"], false, "{r}");
}

/// The official `openai` client against `/v1/chat/completions`, streaming and not, with the
/// fake Ollama behind (`tests/clients/openai_client.py` checks the shapes, the `docdex`
/// extension with the waterfall trace, session continuation and errors as exceptions).
#[test]
fn openai_client_chat_completions() {
    use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
    let Some(py) = python() else { return };
    let env = Env::new();
    let fake = FakeOllama::start(FakeOllamaOptions { token_delay_ms: 2, ..Default::default() }).unwrap();
    env.write_config(&crate::util::llm_config("ollama", &fake.url(), "fake-chat", "fake-embed"));
    let (repo, _) = setup(&env);
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clients/openai_client.py");
    let out = Command::new(py).arg(script).args([&server.url("/v1"), repo.to_str().unwrap()]).output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{}\nserver log:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        server.stderr.lock().unwrap()
    );
    let last = String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or_default().to_string();
    let report: Value = serde_json::from_str(&last).unwrap_or_else(|e| panic!("bad report {last:?}: {e}"));
    assert_eq!(report["ok"], true, "{report}");
    assert!(report["chunks"].as_u64().unwrap() >= 3, "{report}");
    // Both turns were logged in one reasoning session, by the agent the header named.
    let sessions = env.engine().dag_sessions(&repo).unwrap();
    let s = sessions.sessions.iter().find(|s| s.id == report["session"].as_str().unwrap()).expect("session logged");
    assert_eq!((s.turns, s.agent_id.as_deref()), (2, Some("openai-py")));
    // The client's top_p and penalties reached Ollama's options.
    let tuned = fake.requests().into_iter().filter(|(p, _)| p == "/api/chat").any(|(_, b)| {
        let o = &b["options"];
        (o["top_p"].as_f64(), o["presence_penalty"].as_f64(), o["frequency_penalty"].as_f64())
            == (Some(0.5), Some(1.0), Some(0.5))
    });
    assert!(tuned, "{:?}", fake.requests());
}

/// A request before `initialize` gets JSON-RPC's "server not initialized" naming the
/// handshake (it got a complaint about missing `_meta` fields); a `ping` is answered, and
/// the session starts normally afterwards.
#[test]
fn stdio_mcp_answers_a_request_before_initialize_with_the_handshake() {
    let env = Env::new();
    let (repo, _) = setup(&env);
    let (mut child, mut stdin, mut out) = spawn_stdio(&env, &repo, None);
    let mut next = || {
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line).unwrap_or_else(|e| panic!("not JSON-RPC ({e}): {line:?}"))
    };
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})).unwrap();
    let early = next();
    assert_eq!(early["id"], 1, "{early}");
    assert_eq!(early["error"]["code"], -32002, "{early}");
    assert!(early["error"]["message"].as_str().unwrap().contains("send `initialize` first"), "{early}");
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": 9, "method": "ping"})).unwrap();
    let pong = next();
    assert_eq!((pong["id"].clone(), pong["result"].clone()), (json!(9), json!({})), "{pong}");
    let init = json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    writeln!(stdin, "{init}").unwrap();
    let started = next();
    assert_eq!(started["result"]["serverInfo"]["name"], "docdex", "{started}");
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}})).unwrap();
    let tools = next();
    assert_eq!(tools["id"], 3, "{tools}");
    assert!(tools["result"]["tools"].as_array().is_some_and(|t| t.len() == 24), "{tools}");
    drop(stdin);
    let _ = child.wait();
}

/// `DELETE /v1/mcp` ends the session with `200`: rmcp answered `202`, which the Python SDK
/// (it accepts 200, 204 or 405) logged as "Session termination failed: 202" on every close.
/// The session is gone after it (`404`, a second DELETE too), and a DELETE without a session id
/// is still `400`.
#[tokio::test]
async fn deleting_a_streamable_http_session_answers_200_and_ends_it() {
    let env = Env::new();
    let (repo, _) = setup(&env);
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let c = crate::server_util::client();
    let url = server.url("/v1/mcp");
    let post = |body: Value| {
        c.post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string())
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let r = post(init).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let session = r.headers().get("mcp-session-id").unwrap().to_str().unwrap().to_string();
    r.text().await.unwrap();
    let r = c.delete(&url).header("mcp-session-id", &session).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200, "{}", r.text().await.unwrap());
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let r = post(list).header("mcp-session-id", &session).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 404);
    let r = c.delete(&url).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 400, "a DELETE naming no session is still refused");
    // A session the server does not hold (ended above, or never made) is 404, as the MCP
    // streamable-HTTP transport answers an unknown session; it was 200, as if it had ended now.
    for unknown in [session.as_str(), "0f0f0f0f-dead-beef-0000-000000000000"] {
        let r = c.delete(&url).header("mcp-session-id", unknown).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 404, "DELETE of {unknown}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], -32001, "{v}");
    }
}

/// A misspelt tool argument is a tool error naming it and the arguments the tool takes: serde
/// ignored it, so `docdex_context {"budjet": 300}` answered the default 8,000-token pack and
/// `docdex_search {"path_prefx": ...}` searched the whole repository. Every tool's arguments are
/// checked against its `inputSchema` (the names `tools/list` shows), and those still work.
#[test]
fn a_misspelt_tool_argument_is_refused_naming_the_arguments_taken() {
    let env = Env::new();
    let (repo, _) = setup(&env);
    let mut mcp = McpStdio::start(&env, &["--repo", repo.to_str().unwrap()], json!({}));
    let text = |r: &Value| r["content"][0]["text"].as_str().unwrap_or_default().to_string();
    let r = mcp.call("docdex_context", json!({"task": "parse the config", "budjet": 300}));
    assert_eq!(r["isError"], true, "{r}");
    let message = text(&r);
    assert!(message.contains("unknown argument \"budjet\" for docdex_context"), "{r}");
    assert!(message.contains("task") && message.contains("budget") && message.contains("project_root"), "{r}");
    let r = mcp.call("docdex_search", json!({"query": "parse", "path_prefx": "src/"}));
    assert!(r["isError"] == true && text(&r).contains("\"path_prefx\""), "{r}");
    let r = mcp.call("docdex_server_info", json!({"verbose": true}));
    assert!(r["isError"] == true && text(&r).contains("\"verbose\""), "{r}");
    // The arguments a tool declares are taken, the repository's two spellings included.
    let root = repo.to_str().unwrap();
    let r = mcp.call("docdex_context", json!({"task": "parse the config", "budget": 300, "project_root": root}));
    assert_eq!(r["isError"], false, "{r}");
    let r = mcp.call("docdex_search", json!({"query": "parse", "path_prefix": "src/", "repo_path": root}));
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(mcp.call("docdex_server_info", json!({}))["isError"], false);
}

/// The tools an MCP server lists.
fn listed_tools(mcp: &mut McpStdio) -> Vec<Value> {
    let list = mcp.request("tools/list", json!({}));
    list["result"]["tools"].as_array().unwrap().clone()
}

/// The input schema of `tool`'s argument `field`, as listed.
fn schema_property(tools: &[Value], tool: &str, field: &str) -> Value {
    let t = tools.iter().find(|t| t["name"] == tool).unwrap_or_else(|| panic!("no {tool}"));
    t["inputSchema"]["properties"][field].clone()
}

/// tour14 F8: the similarities the audits refuse outside (0, 1] and a memory's metadata, which
/// must be an object, say so in `tools/list` (the schemas gave a bare number and any value);
/// a value at the edge is taken and one past it refused, as the schema says.
#[test]
fn tool_schemas_list_the_similarity_ranges_and_the_metadata_object() {
    let env = Env::new();
    let (repo, _) = setup(&env);
    let mut mcp = McpStdio::start(&env, &["--repo", repo.to_str().unwrap()], json!({}));
    let tools = listed_tools(&mut mcp);
    let prop = |tool: &str, field: &str| schema_property(&tools, tool, field);
    // Conflicts are not explained: no model is configured.
    for (tool, field, args) in [
        ("docdex_audit_duplicates", "threshold", json!({})),
        ("docdex_audit_conflicts", "min_sim", json!({"explain": false})),
    ] {
        let p = prop(tool, field);
        assert_eq!(
            (p["exclusiveMinimum"].as_f64(), p["maximum"].as_f64()),
            (Some(0.0), Some(1.0)),
            "{tool}.{field}: {p}"
        );
        assert!(p.get("minimum").is_none(), "0 itself is refused: {p}");
        for (value, refused) in [(json!(0), true), (json!(1.5), true), (json!(1), false)] {
            let mut a = args.clone();
            a[field] = value.clone();
            let r = mcp.call(tool, a);
            assert_eq!(r["isError"], refused, "{tool} {field} {value}: {r}");
        }
    }
    let metadata = prop("docdex_memory_save", "metadata");
    assert_eq!(metadata["type"], json!(["object", "null"]), "{metadata}");
    let r = mcp.call("docdex_memory_save", json!({"content": "deploys go through staging", "metadata": "x"}));
    assert_eq!(r["isError"], true, "{r}");
    let r = mcp.call("docdex_memory_save", json!({"content": "deploys go through staging", "metadata": {"by": "t"}}));
    assert_eq!(r["isError"], false, "{r}");
}

/// tour14 F9: a method the server does not have was answered `-32601` with the method name as
/// the whole message; it now says so and names the methods there are (MCP's method not found).
#[test]
fn an_unknown_method_is_named_with_the_methods_the_server_answers() {
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let mut mcp = McpStdio::start(&env, &["--repo", repo.to_str().unwrap()], json!({}));
    let r = mcp.request("nope/method", json!({}));
    assert_eq!(r["error"]["code"], -32601, "{r}");
    let message = r["error"]["message"].as_str().unwrap_or_default();
    for needle in ["unknown method nope/method", "initialize", "ping", "tools/list", "tools/call"] {
        assert!(message.contains(needle), "{needle:?} missing from: {message}");
    }
    // The session goes on.
    assert!(mcp.request("tools/list", json!({}))["result"]["tools"].is_array());
}

/// The MCP methods of capabilities docdex does not declare were rmcp's `-32601` with the method
/// alone as the message (`prompts/list`). The list methods answer empty lists, since clients
/// (Cline, opencode) ask for them on connect whatever the capabilities say and take `-32601`
/// for a failed connection; the others are `-32601` saying what the server lacks and the
/// methods it answers, as an unknown method is.
#[test]
fn methods_of_capabilities_not_declared_answer_empty_lists_or_say_what_there_is() {
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let mut mcp = McpStdio::start(&env, &["--repo", repo.to_str().unwrap()], json!({}));
    for (method, key) in [
        ("prompts/list", "prompts"),
        ("resources/list", "resources"),
        ("resources/templates/list", "resourceTemplates"),
    ] {
        let r = mcp.request(method, json!({}));
        assert_eq!(r["result"][key], json!([]), "{method}: {r}");
    }
    let completion = json!({"ref": {"type": "ref/prompt", "name": "x"}, "argument": {"name": "a", "value": "b"}});
    for (method, params, lacks) in [
        ("prompts/get", json!({"name": "x"}), "has no prompts"),
        ("resources/read", json!({"uri": "file:///x"}), "has no resources"),
        ("resources/subscribe", json!({"uri": "file:///x"}), "has no resources"),
        ("completion/complete", completion, "completes no arguments"),
        ("logging/setLevel", json!({"level": "debug"}), "sends no log messages"),
        // Extensions rmcp answers before any handler method (its message was the method alone).
        ("tasks/get", json!({"taskId": "t1"}), "runs no tasks"),
        ("tasks/cancel", json!({"taskId": "t1"}), "runs no tasks"),
        ("tasks/update", json!({"taskId": "t1", "inputResponses": {}}), "runs no tasks"),
        ("skills/list", json!({}), "has no skills"),
        ("skills/get", json!({"uri": "skill://x/SKILL.md"}), "has no skills"),
        ("resources/directory/read", json!({"uri": "skill://x/"}), "has no resources"),
        ("subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}), "has nothing to subscribe to"),
        // Params rmcp cannot read land in its catch-all: still not offered, not "unknown".
        ("tasks/get", json!({}), "runs no tasks"),
    ] {
        let r = mcp.request(method, params);
        assert_eq!(r["error"]["code"], -32601, "{method}: {r}");
        let message = r["error"]["message"].as_str().unwrap_or_default();
        for needle in [&format!("{method} is not offered"), lacks, "tools/list", "tools/call", "prompts/list"] {
            assert!(message.contains(needle), "{method}: {needle:?} missing from: {message}");
        }
    }
    // The session goes on.
    assert!(mcp.request("tools/list", json!({}))["result"]["tools"].is_array());
}

/// The arguments a tool refuses at 0 say so in `tools/list`: their schemas said `minimum: 0`
/// (from the Rust integer types) while `docdex_symbols {"limit": 0}` was refused ("limit 0 asks
/// for nothing") and `docdex_context` refuses budgets outside 200..200000. A value at the listed
/// minimum is taken and one below it refused.
#[test]
fn tool_schemas_list_the_minimum_each_argument_takes() {
    let env = Env::new();
    let (repo, _) = setup(&env);
    let mut mcp = McpStdio::start(&env, &["--repo", repo.to_str().unwrap()], json!({}));
    let tools = listed_tools(&mut mcp);
    let prop = |tool: &str, field: &str| schema_property(&tools, tool, field);
    assert_eq!(prop("docdex_symbols", "limit")["minimum"].as_u64(), Some(1));
    assert_eq!(prop("docdex_memory_recall", "limit")["minimum"].as_u64(), Some(1));
    let budget = prop("docdex_context", "budget");
    assert_eq!((budget["minimum"].as_u64(), budget["maximum"].as_u64()), (Some(200), Some(200_000)), "{budget}");
    let depth = prop("docdex_impact", "depth");
    assert_eq!((depth["minimum"].as_u64(), depth["maximum"].as_u64()), (Some(1), Some(64)), "{depth}");
    // Taken at 0, so still listed from 0.
    assert_eq!(prop("docdex_similar_files", "limit")["minimum"].as_u64(), Some(0));
    for (tool, args, below, at) in [
        ("docdex_symbols", json!({"query": "parse"}), ("limit", 0), ("limit", 1)),
        ("docdex_context", json!({"task": "parse the config"}), ("budget", 199), ("budget", 200)),
        ("docdex_impact", json!({"file": "src/parser.py"}), ("depth", 0), ("depth", 1)),
        ("docdex_memory_recall", json!({"query": "x"}), ("limit", 0), ("limit", 1)),
    ] {
        let with = |(field, value): (&str, u64)| {
            let mut a = args.clone();
            a[field] = json!(value);
            a
        };
        let r = mcp.call(tool, with(below));
        assert_eq!(r["isError"], true, "{tool} {below:?}: {r}");
        let r = mcp.call(tool, with(at));
        assert_eq!(r["isError"], false, "{tool} {at:?}: {r}");
    }
}

/// tour22 F1: a tool argument of the wrong type was refused in serde's words without its name
/// (`bad arguments for docdex_search: invalid type: string "5", expected usize`: the tool types
/// flatten the engine's requests, which loses the field). The refusal names the argument and
/// what its `inputSchema` says it takes, in words rather than Rust's type names.
#[test]
fn a_tool_argument_of_the_wrong_type_is_named_with_what_it_takes() {
    let env = Env::new();
    let (repo, _) = setup(&env);
    let mut mcp = McpStdio::start(&env, &["--repo", repo.to_str().unwrap()], json!({}));
    for (tool, args, said) in [
        (
            "docdex_search",
            json!({"query": "parse", "limit": "5"}),
            "`limit` takes an integer of at least 0 (or null), not the string \"5\"",
        ),
        ("docdex_search", json!({"query": 5}), "`query` takes a string, not the number 5"),
        ("docdex_impact", json!({"file": "src/parser.py", "depth": "deep"}), "`depth` takes an integer from 1 to 64"),
        (
            "docdex_impact",
            json!({"file": "src/parser.py", "direction": "sideways"}),
            "`direction` takes one of `in`, `out`, `both`",
        ),
        ("docdex_audit_duplicates", json!({"threshold": "high"}), "`threshold` takes a number above 0 and at most 1"),
        (
            "docdex_open",
            json!({"path": "src/parser.py", "start_line": 10_000_000_000u64}),
            "`start_line`: invalid value",
        ),
        ("docdex_search", json!({"query": "parse", "project_root": 5}), "`project_root` takes a string"),
    ] {
        let r = mcp.call(tool, args.clone());
        let text = r["content"][0]["text"].as_str().unwrap_or_default();
        assert_eq!(r["isError"], true, "{tool} {args}: {r}");
        assert!(text.starts_with(&format!("bad_request: bad arguments for {tool}: {said}")), "{tool} {args}: {text}");
        assert!(!text.contains("usize") && !text.contains("u32") && !text.contains("f32"), "{text}");
    }
}

/// tour22 F2: the CLI and HTTP answered structural questions (`docdex ast query`,
/// `POST /v1/ast/query`) and listed import cycles (`docdex graph cycles`), MCP could do
/// neither. `docdex_ast_query` and `docdex_impact_cycles` forward to the same engine calls; a
/// `path_prefix` leaving the repository is refused, and a missing kind names the argument
/// (it said `pass --kinds`, a flag an agent cannot pass).
#[test]
fn ast_queries_and_import_cycles_are_mcp_tools() {
    let env = Env::new();
    let (repo, _) = setup(&env);
    write(&repo, "cyc/a.py", "from .b import fb\n\ndef fa():\n    return fb()\n");
    write(&repo, "cyc/b.py", "from .a import fa\n\ndef fb():\n    return fa()\n");
    write(&repo, "cyc/__init__.py", "");
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let mut mcp = McpStdio::start(&env, &["--repo", repo.to_str().unwrap()], json!({}));
    let names: Vec<Value> = listed_tools(&mut mcp).iter().map(|t| t["name"].clone()).collect();
    assert!(names.contains(&json!("docdex_ast_query")) && names.contains(&json!("docdex_impact_cycles")), "{names:?}");
    let text = |r: &Value| r["content"][0]["text"].as_str().unwrap_or_default().to_string();
    let r = mcp.call("docdex_ast_query", json!({"kinds": ["function_definition"], "name": "parse_config"}));
    assert_eq!(r["isError"], false, "{r}");
    let v: Value = serde_json::from_str(&text(&r)).unwrap();
    assert_eq!(v["results"][0]["path"], "src/parser.py", "{v}");
    assert_eq!(v["results"][0]["samples"][0]["line_start"], 1, "{v}");
    let r = mcp.call("docdex_ast_query", json!({"kinds": ["function_definition"], "path_prefix": "../"}));
    assert!(r["isError"] == true && text(&r).starts_with("path_outside_repo:"), "{r}");
    let r = mcp.call("docdex_ast_query", json!({"kinds": []}));
    assert!(r["isError"] == true && text(&r).contains("(`kinds`;") && !text(&r).contains("pass --kinds"), "{r}");
    let r = mcp.call("docdex_ast_query", json!({"kinds": ["funtion_definition"]}));
    assert!(r["isError"] == true && text(&r).contains("did you mean function_definition"), "{r}");
    let r = mcp.call("docdex_impact_cycles", json!({}));
    assert_eq!(r["isError"], false, "{r}");
    let v: Value = serde_json::from_str(&text(&r)).unwrap();
    let cycle = v["cycles"][0].to_string();
    assert!(cycle.contains("cyc/a.py") && cycle.contains("cyc/b.py"), "{v}");
}

/// tour22 F3: a request that is JSON but for a string that is not Unicode (a lone surrogate
/// escape, bytes that are not UTF-8) was answered `-32700` with `id: null`, so a client waiting
/// on its request's id waited forever. The answer now carries the id and says what to send.
#[test]
fn a_request_with_a_string_that_is_not_unicode_is_answered_with_its_id() {
    let env = Env::new();
    let (repo, _) = setup(&env);
    let (mut child, mut stdin, mut out) = spawn_stdio(&env, &repo, None);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    writeln!(stdin, "{init}").unwrap();
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
    let lone = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"docdex_search","arguments":{"query":"\ud800"}}}"#;
    let bytes: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":\"b8\",\"method\":\"tools/call\",\"params\":{\"name\":\"docdex_search\",\"arguments\":{\"query\":\"\xff\xfe\"}}}";
    // tour22 F8: nested past serde's 128 levels, the same (the id is read at the top level).
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"docdex_memory_save","arguments":{{"content":"x","metadata":{}1{}}}}}}}"#,
        r#"{"a":"#.repeat(200),
        "}".repeat(200)
    );
    for (msg, id, why) in [
        (&lone[..], json!(7), "not Unicode"),
        (bytes, json!("b8"), "not Unicode"),
        (deep.as_bytes(), json!(9), "nested more than 128 levels"),
    ] {
        stdin.write_all(msg).unwrap();
        stdin.write_all(b"\n").unwrap();
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let r: Value = serde_json::from_str(&line).unwrap();
        assert_eq!((&r["id"], &r["error"]["code"]), (&id, &json!(-32700)), "{r}");
        assert!(r["error"]["message"].as_str().unwrap().contains(why), "{r}");
    }
    drop(stdin);
    let _ = child.wait();
}

/// tour22 F4, F5: `docdex_symbols` took a language the index never gives and answered nothing
/// (search refuses it naming the languages); a `since` of a megabyte reached git's command line
/// and came back as `io_error: Argument list too long`. Both are bad requests saying what to give.
#[test]
fn an_unknown_symbol_language_and_an_enormous_since_are_bad_requests() {
    let env = Env::new();
    let (repo, _) = setup(&env);
    let mut mcp = McpStdio::start(&env, &["--repo", repo.to_str().unwrap()], json!({}));
    let text = |r: &Value| r["content"][0]["text"].as_str().unwrap_or_default().to_string();
    let r = mcp.call("docdex_symbols", json!({"query": "parse", "lang": "klingon"}));
    assert!(r["isError"] == true && text(&r).starts_with("bad_request: unknown language \"klingon\""), "{r}");
    assert!(text(&r).contains("python"), "{r}");
    let r = mcp.call("docdex_symbols", json!({"query": "parse", "lang": "py"}));
    assert!(r["isError"] == false && text(&r).contains("parse_config"), "{r}");
    let since = "a".repeat(1 << 20);
    let r = mcp.call("docdex_context", json!({"task": "parse the config", "since": since}));
    assert!(
        r["isError"] == true && text(&r).starts_with("bad_request: since ref"),
        "{}",
        &text(&r)[..200.min(text(&r).len())]
    );
    assert!(text(&r).contains("longer than 1024 bytes") && text(&r).len() < 1000, "{}", text(&r).len());
}

/// tour22 F6: MCP could save, recall and delete memories but not list them, and a refused
/// `docdex_memory_delete` told the agent to run `docdex memory list --repo ...`, a command line
/// it may not have. `docdex_memory_list` pages them (as `GET /v1/memory`), and the refusal
/// names it.
#[test]
fn memories_are_listed_over_mcp_and_a_refused_delete_names_the_tool() {
    let env = Env::new();
    let (repo, _) = setup(&env);
    let mut mcp = McpStdio::start(&env, &["--repo", repo.to_str().unwrap()], json!({}));
    let text = |r: &Value| r["content"][0]["text"].as_str().unwrap_or_default().to_string();
    for fact in ["integration tests need REDIS_URL", "the parser reads TOML", "releases are cut on Fridays"] {
        assert_eq!(mcp.call("docdex_memory_save", json!({"content": fact}))["isError"], false);
    }
    let r = mcp.call("docdex_memory_list", json!({"limit": 2}));
    assert_eq!(r["isError"], false, "{r}");
    let page: Value = serde_json::from_str(&text(&r)).unwrap();
    assert_eq!((page["total"].as_u64(), page["memories"].as_array().map(Vec::len)), (Some(3), Some(2)), "{page}");
    assert_eq!(page["memories"][0]["content"], "releases are cut on Fridays", "newest first: {page}");
    let after = page["next_after"].as_str().expect("a next page").to_string();
    let r = mcp.call("docdex_memory_list", json!({"after": after}));
    let rest: Value = serde_json::from_str(&text(&r)).unwrap();
    assert_eq!(rest["memories"][0]["content"], "integration tests need REDIS_URL", "{rest}");
    let r = mcp.call("docdex_memory_list", json!({"limit": 0}));
    assert!(r["isError"] == true && text(&r).starts_with("bad_request: limit 0"), "{r}");
    let r = mcp.call("docdex_memory_delete", json!({"id": "abc"}));
    assert!(r["isError"] == true && text(&r).contains("docdex_memory_list"), "{r}");
    // An id listed is one the delete takes.
    let id = page["memories"][1]["id"].as_str().unwrap();
    assert_eq!(mcp.call("docdex_memory_delete", json!({"id": id}))["isError"], false);
}

/// tour22 F7: an unknown tool's error echoed its name whole (a 1 MB name answered 1 MB) and
/// did not say which tool was meant. The name is cut, and a misspelt one, or one without the
/// `docdex_` prefix, gets the tool it likely means.
#[test]
fn an_unknown_tool_is_refused_short_with_the_tool_it_likely_means() {
    let env = Env::new();
    let (repo, _) = setup(&env);
    let mut mcp = McpStdio::start(&env, &["--repo", repo.to_str().unwrap()], json!({}));
    let refused = |mcp: &mut McpStdio, name: &str| {
        let r = mcp.request("tools/call", json!({"name": name, "arguments": {}}));
        assert_eq!(r["error"]["code"], -32602, "{r}");
        r["error"]["message"].as_str().unwrap().to_string()
    };
    let m = refused(&mut mcp, "docdex_serch");
    assert!(m.contains("did you mean docdex_search?") && m.contains("tools/list"), "{m}");
    let m = refused(&mut mcp, "ast_query");
    assert!(m.contains("did you mean docdex_ast_query?"), "{m}");
    let m = refused(&mut mcp, "launch_missiles");
    assert!(!m.contains("did you mean"), "{m}");
    let m = refused(&mut mcp, &"x".repeat(1 << 20));
    assert!(m.len() < 500 && m.contains("(1048576 bytes)"), "{}", m.len());
}

/// tour22 F6 (continued): refusals that advise a command line name the MCP tool beside it: an
/// unknown agent said only `docdex profile add --agent ...`, a symbol store to rebuild only
/// `docdex index --repo ...`.
#[test]
fn refusals_advising_a_command_line_name_the_mcp_tool_beside_it() {
    let env = Env::new();
    let (repo, _) = setup(&env);
    let mut mcp = McpStdio::start(&env, &["--repo", repo.to_str().unwrap()], json!({}));
    let text = |r: &Value| r["content"][0]["text"].as_str().unwrap_or_default().to_string();
    let r = mcp.call("docdex_get_profile", json!({"agent_id": "nobody_here", "query": "tests"}));
    assert!(r["isError"] == true && text(&r).contains("`docdex profile add --agent nobody_here"), "{r}");
    assert!(text(&r).contains("(over MCP: docdex_save_preference or docdex_set_role"), "{r}");
    fn find(dir: &std::path::Path, name: &str) -> Option<PathBuf> {
        std::fs::read_dir(dir).ok()?.flatten().find_map(|e| {
            let p = e.path();
            if p.is_dir() {
                find(&p, name)
            } else {
                (p.file_name()? == name).then_some(p)
            }
        })
    }
    drop(mcp);
    let db = find(&env.home(), "symbols.db").expect("a symbol store");
    // tour22 F9: a store created and not yet committed to (a watcher re-extracting a lost store,
    // or a run stopped before its first commit: generation 0, no rows) answered every query with
    // no results, as if no such symbol existed; it is refused as not extracted yet.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("UPDATE meta SET value = '0' WHERE key = 'generation'; DELETE FROM symbols; DELETE FROM files;")
        .unwrap();
    drop(conn);
    let r = symbols_without_a_watcher(&env, &repo);
    assert!(r["isError"] == true && text(&r).starts_with("stale_index: no symbols have been extracted"), "{r}");
    assert!(text(&r).contains("an index run is extracting them"), "{r}");
    // A lost store: `docdex index` is advised, and the tool that runs it named.
    std::fs::remove_file(&db).unwrap();
    let r = symbols_without_a_watcher(&env, &repo);
    assert!(r["isError"] == true && text(&r).starts_with("stale_index: no symbols have been extracted"), "{r}");
    assert!(text(&r).contains("(over MCP: the docdex_index tool)"), "{r}");
    let mut mcp = McpStdio::start(&env, &["--repo", repo.to_str().unwrap(), "--no-watch"], json!({}));
    assert_eq!(mcp.call("docdex_index", json!({}))["isError"], false);
    let r = mcp.call("docdex_symbols", json!({"query": "parse_config"}));
    assert!(r["isError"] == false && text(&r).contains("src/parser.py"), "the tool rebuilt it: {r}");
}

/// `docdex_symbols parse_config` from a `docdex mcp` that runs no watcher (one would start
/// extracting at once).
fn symbols_without_a_watcher(env: &Env, repo: &std::path::Path) -> Value {
    let mut mcp = McpStdio::start(env, &["--repo", repo.to_str().unwrap(), "--no-watch"], json!({}));
    mcp.call("docdex_symbols", json!({"query": "parse_config"}))
}

/// A `config.toml` docdex cannot read (tour22 F10): `docdex mcp` exited before `initialize`, and
/// the client saw only its pipe close. Every request is now answered with the reason, naming the
/// file and the fault; a notification gets nothing; the process ends when stdin closes.
#[test]
fn a_config_that_does_not_parse_is_the_answer_to_initialize() {
    let env = Env::new();
    env.write_config("[tests]\ntimeout_secs = 5\n\n[tests]\ntimeout_secs = 6\n");
    let mut child = Command::new(env!("CARGO_BIN_EXE_docdex"))
        .arg("mcp")
        .env("DOCDEX_HOME", env.home())
        .current_dir(env.home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut next = || {
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line).unwrap_or_else(|e| panic!("not JSON-RPC ({e}): {line:?}"))
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    writeln!(stdin, "{init}").unwrap();
    let answer = next();
    assert_eq!((answer["id"].clone(), answer["error"]["code"].clone()), (json!(1), json!(-32000)), "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    let file = env.home().join("config.toml");
    assert!(message.contains(&format!("invalid config {}", file.display())), "{message}");
    assert!(message.contains("duplicate") && message.contains("restart the MCP server"), "{message}");
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": "t", "method": "tools/list"})).unwrap();
    let listed = next();
    assert_eq!((listed["id"].clone(), listed["error"]["message"].as_str()), (json!("t"), Some(message)), "{listed}");
    drop(stdin);
    let done = child.wait_with_output().unwrap();
    assert!(done.stdout.is_empty(), "{}", String::from_utf8_lossy(&done.stdout));
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(!done.status.success() && stderr.contains("config.toml"), "{:?} {stderr}", done.status);
}
