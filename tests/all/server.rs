//! The HTTP server, as a client meets it: the real binary on a loopback port,
//! reqwest as the client, real indexes in a temporary DOCDEX_HOME.

use crate::server_util::{client, eventually, Server};
use crate::util::{sample_repo, write, Env};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::time::Duration;

fn indexed_repo(env: &Env, name: &str) -> std::path::PathBuf {
    let repo = env.repo(name);
    sample_repo(&repo);
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    repo
}

async fn json_of(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text:?}")))
}

fn assert_error(v: &Value, code: &str) {
    assert_eq!(v["error"]["code"], code, "{v}");
    assert!(v["error"]["message"].as_str().is_some_and(|m| m.len() > 10), "{v}");
}

#[tokio::test]
async fn serve_answers_search_open_status_and_health() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let c = client();

    let (s, health) = json_of(c.get(server.url("/healthz")).send().await.unwrap()).await;
    assert_eq!((s, health["status"].as_str(), health["mode"].as_str()), (200, Some("ok"), Some("serve")));

    let (s, v) = json_of(
        c.post(server.url("/v1/search")).json(&json!({"query": "session store", "limit": 2})).send().await.unwrap(),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["results"][0]["path"], "src/auth/session.rs");
    assert_eq!(v["results"].as_array().unwrap().len(), 2);
    assert!(v["confidence"].as_f64().unwrap() > 0.5);
    let project_id = v["project_id"].as_str().unwrap().to_string();

    // The same repo named by header, by id, and by file URI all work.
    for sel in [repo.to_str().unwrap().to_string(), project_id.clone(), format!("file://{}", repo.display())] {
        let r = c
            .post(server.url("/v1/search"))
            .header("x-docdex-repo", &sel)
            .json(&json!({"query": "parse config"}))
            .send()
            .await
            .unwrap();
        let (s, v) = json_of(r).await;
        assert_eq!(s, 200, "{sel}: {v}");
        assert_eq!(v["results"][0]["path"], "src/parser.py");
    }

    let (s, v) = json_of(c.get(server.url("/v1/open?path=src/auth/session.rs&lines=2-3")).send().await.unwrap()).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!((v["line_start"].as_u64(), v["line_end"].as_u64()), (Some(2), Some(3)));
    assert!(v["text"].as_str().unwrap().starts_with("pub struct SessionStore"));
    // The engine request's own fields work in the query string too (what MCP's docdex_open takes).
    let (s, w) =
        json_of(c.get(server.url("/v1/open?path=src/auth/session.rs&start_line=2&end_line=3")).send().await.unwrap())
            .await;
    assert_eq!((s, &w), (200, &v));

    // Right after start the catch-up run may still be checking the repo (`stale`); then `ready`.
    eventually("catch-up done", || async {
        let v: Value = c.get(server.url("/v1/status")).send().await.unwrap().json().await.unwrap();
        v["repos"][0]["mount"]["status"] == "ready"
    })
    .await;
    let (s, v) = json_of(c.get(server.url("/v1/status")).send().await.unwrap()).await;
    assert_eq!(s, 200, "{v}");
    let entry = &v["repos"][0];
    assert_eq!(entry["mount"]["status"], "ready", "{v}");
    assert_eq!(entry["mount"]["watcher"]["state"], "watching", "{v}");
    assert_eq!(entry["index"]["documents"], 5);
    assert_eq!(entry["mount"]["repo_id"], project_id.as_str());

    // The watcher keeps the index fresh: a new file becomes searchable without a re-index.
    write(&repo, "src/fresh.rs", "fn wombat_tracker() {}\n");
    eventually("new file searchable", || async {
        let r = c.post(server.url("/v1/search")).json(&json!({"query": "wombat tracker"})).send().await.unwrap();
        let v: Value = r.json().await.unwrap();
        v["results"].as_array().is_some_and(|a| a.iter().any(|h| h["path"] == "src/fresh.rs"))
    })
    .await;
}

#[tokio::test]
async fn errors_follow_one_contract() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    write(env.dir.path(), "outside.txt", "secret");
    #[cfg(unix)]
    std::os::unix::fs::symlink(env.dir.path().join("outside.txt"), repo.join("link.txt")).unwrap();
    let other = indexed_repo(&env, "other");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--max-body-bytes", "4096"], &[]);
    let c = client();
    let search = server.url("/v1/search");

    // Malformed JSON, wrong shape, empty body, empty query: 400 bad_request with the contract.
    for body in ["{not json", "{\"limit\": 3}", "", "{\"query\": \"  \"}", "[1,2]"] {
        let r = c.post(&search).header("content-type", "application/json").body(body).send().await.unwrap();
        let (s, v) = json_of(r).await;
        assert_eq!(s, 400, "{body:?}: {v}");
        assert_error(&v, "bad_request");
    }
    // Oversized body: 413 payload_too_large.
    let big = json!({"query": "x".repeat(10_000)}).to_string();
    let r = c.post(&search).header("content-type", "application/json").body(big).send().await.unwrap();
    let (s, v) = json_of(r).await;
    assert_eq!(s, 413, "{v}");
    assert_error(&v, "payload_too_large");

    // Unknown route and wrong method.
    let (s, v) = json_of(c.get(server.url("/v1/nope")).send().await.unwrap()).await;
    assert_eq!(s, 404);
    assert_error(&v, "not_found");
    let (s, v) = json_of(c.get(server.url("/v1/memory/store")).send().await.unwrap()).await;
    assert_eq!(s, 405);
    assert_error(&v, "method_not_allowed");

    // GET /v1/search takes the POST's fields in the query string (`q` for `query`) and answers
    // what the POST answers; a misspelt parameter and an empty or missing query are refused.
    let posted: Value = c
        .post(&search)
        .json(&json!({"query": "session store", "limit": 2}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    for q in ["q", "query"] {
        let (s, v) = json_of(c.get(&search).query(&[(q, "session store"), ("limit", "2")]).send().await.unwrap()).await;
        assert_eq!(s, 200, "{v}");
        assert_eq!(v["results"], posted["results"], "{v}");
        assert!(v["results"].as_array().is_some_and(|r| !r.is_empty()), "{v}");
    }
    for (query, says) in [
        (vec![("q", "session"), ("limt", "2")], "unknown query parameter \"limt\""),
        (vec![("q", " ")], "empty query"),
        (vec![("limit", "2")], "missing query parameter `query`"),
        (vec![("q", "x"), ("limit", "many")], "bad query string"),
    ] {
        let (s, v) = json_of(c.get(&search).query(&query).send().await.unwrap()).await;
        assert_eq!(s, 400, "{query:?}: {v}");
        assert!(v["error"]["message"].as_str().unwrap_or("").contains(says), "{query:?}: {v}");
    }

    // Another repository than the one served: 404 unknown_repo; a missing one too.
    for sel in [other.to_str().unwrap(), "/definitely/not/here"] {
        let r = c.post(&search).header("x-docdex-repo", sel).json(&json!({"query": "x"})).send().await.unwrap();
        let (s, v) = json_of(r).await;
        assert_eq!(s, 404, "{sel}: {v}");
        assert_error(&v, "unknown_repo");
    }
    let r = c.post(&search).header("x-docdex-repo", "relative/path").json(&json!({"query": "x"})).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 400);

    // No path escapes the repository: parent dirs, absolute paths, encoded dots, symlinks.
    let escapes = ["../outside.txt", "src/../../outside.txt", "%2e%2e/outside.txt", "/etc/passwd", "link.txt"];
    for p in escapes {
        let url = format!("{}?path={}", server.url("/v1/open"), p.replace('/', "%2F"));
        let (s, v) = json_of(c.get(&url).send().await.unwrap()).await;
        assert!(s == 403 || s == 400, "{p}: {s} {v}");
        assert!(!v.to_string().contains("secret"), "{p} leaked: {v}");
        if s == 403 {
            assert_error(&v, "path_outside_repo");
        }
    }
    let (s, v) = json_of(c.get(server.url("/v1/open?path=README.md&lines=9-2")).send().await.unwrap()).await;
    assert_eq!(s, 400, "{v}");
    assert_error(&v, "bad_request");
    let (s, _) = json_of(c.get(server.url("/v1/open?path=README.md&lines=abc")).send().await.unwrap()).await;
    assert_eq!(s, 400);
    // A 0 start says lines start at 1 and quotes only what was given (an unset end was shown
    // as 4294967295); page on a non-PDF names the field, not the command line's --page.
    let message = |v: &Value| v["error"]["message"].as_str().unwrap_or_default().to_string();
    let (s, v) = json_of(c.get(server.url("/v1/open?path=README.md&start_line=0")).send().await.unwrap()).await;
    assert_eq!(s, 400, "{v}");
    assert_eq!(message(&v), "bad line range (from line 0): lines start at 1", "{v}");
    let (_, v) = json_of(c.get(server.url("/v1/open?path=README.md&lines=9-2")).send().await.unwrap()).await;
    assert_eq!(message(&v), "bad line range (lines 9-2): the end is before the start", "{v}");
    let (s, v) = json_of(c.get(server.url("/v1/open?path=README.md&page=2")).send().await.unwrap()).await;
    assert_eq!(s, 400, "{v}");
    assert!(message(&v).contains("page is for PDF files") && !message(&v).contains("--page"), "{v}");
}

/// A caller's value quoted in an error comes back cut: a 1 MB `agent_id` came back whole in a
/// 1 MB message, and so did a 1 MB string where serde wanted a number.
#[tokio::test]
async fn errors_quote_a_huge_value_cut_to_its_start_and_length() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let c = client();
    let agent = "é".repeat(500_000);
    let body = json!({"agent_id": agent, "category": "style", "content": "Use tabs."});
    let (s, v) = json_of(c.post(server.url("/v1/profile/add")).json(&body).send().await.unwrap()).await;
    assert_eq!(s, 400, "{}", &v.to_string()[..300]);
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.len() < 1_000, "{} bytes: {}", message.len(), &message[..300]);
    assert!(message.contains(&format!("{}\"… (1000000 bytes): use 1 to 64 letters", "é".repeat(10))), "{message}");

    let body = json!({"query": "x", "limit": "9".repeat(1_000_000)});
    let (s, v) = json_of(c.post(server.url("/v1/search")).json(&body).send().await.unwrap()).await;
    assert_eq!(s, 400);
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.len() < 2_200, "{} bytes: {}", message.len(), &message[..300]);
    assert!(
        message.starts_with("invalid JSON body: `limit` takes an integer") && message.ends_with("(1000000 bytes)"),
        "{message}"
    );
}

/// serde ignores a field a body does not declare, so a misspelt one changed the answer without a
/// word: `path_prefx` searched the whole repository, `budjet: 300` got a pack of the default
/// 8,000 tokens. Each is a 400 naming the fields the endpoint takes; declared aliases, LSP's
/// `initialize` and OpenAI's chat body (whose clients send fields docdex does not use) pass.
#[tokio::test]
async fn a_misspelt_body_field_is_refused_naming_the_fields_the_endpoint_takes() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let c = client();
    let post = |path: &str, body: Value| {
        let req = c.post(server.url(path)).json(&body);
        async move { json_of(req.send().await.unwrap()).await }
    };
    let (s, v) = post("/v1/search", json!({"query": "session", "path_prefx": "src/"})).await;
    assert_eq!(s, 400, "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("unknown field \"path_prefx\" in the body of POST /v1/search: it takes "), "{message}");
    assert!(message.contains("path_prefix") && message.contains("query"), "{message}");
    let (s, v) = post("/v1/context", json!({"task": "expire sessions", "budjet": 300})).await;
    assert_eq!((s, v["error"]["code"].as_str()), (400, Some("bad_request")), "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("\"budjet\""), "{v}");
    let (s, v) = post("/v1/memory/store", json!({"content": "a fact", "metdata": {}})).await;
    assert_eq!(s, 400, "{v}");

    let (s, v) = post("/v1/search", json!({"query": "session", "path_prefix": "src/", "limit": 2, "repo": repo})).await;
    assert_eq!(s, 200, "{v}");
    let (s, v) =
        post("/v1/ast/query", json!({"kinds": ["function_item"], "pathPrefix": "src/", "sampleLimit": 1})).await;
    assert_eq!(s, 200, "{v}");
    let (s, v) = post("/v1/initialize", json!({"rootUri": repo, "processId": 1, "capabilities": {}})).await;
    assert_eq!(s, 200, "{v}");
    let chat = json!({"messages": [{"role": "user", "content": "hi"}], "top_p": 0.5, "store": false});
    let (s, v) = post("/v1/chat/completions", chat).await;
    assert_ne!(s, 400, "{v}");
}

/// On `serve`, `initialize` of a root docdex never serves answered `unknown_repo` ("this server
/// serves only ..."), where the daemon and stdio MCP answer `forbidden_repo`: the refusal first.
#[tokio::test]
async fn serve_refuses_to_initialize_a_system_directory_as_forbidden() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let r = client().post(server.url("/v1/initialize")).json(&json!({"rootUri": "file:///etc"})).send();
    let (s, v) = json_of(r.await.unwrap()).await;
    assert_eq!((s, v["error"]["code"].as_str()), (403, Some("forbidden_repo")), "{v}");
}

/// A trailing slash or a missing `/v1` was a bare "no endpoint"; the answer names the route.
#[tokio::test]
async fn a_path_missing_a_route_by_a_slip_names_the_route() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    for path in ["/v1/search/", "/search"] {
        let resp = client().post(server.url(path)).json(&json!({"query": "session"})).send().await.unwrap();
        let (s, v) = json_of(resp).await;
        assert_eq!(s, 404, "{v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert_eq!(
            message,
            format!("no endpoint POST {path} (did you mean /v1/search?); GET /v1/openapi.json lists them")
        );
    }
}

#[tokio::test]
async fn token_guards_every_http_and_mcp_request() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[("DOCDEX_AUTH_TOKEN", "tok-123")]);
    let c = client();
    let probes = [
        c.get(server.url("/healthz")),
        c.get(server.url("/v1/status")),
        c.post(server.url("/v1/search")).json(&json!({"query": "session"})),
        c.get(server.url("/v1/openapi.json")),
        c.post(server.url("/v1/mcp")).json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})),
        c.get(server.url("/sse")),
        c.get(server.url("/no/such/route")),
    ];
    for probe in probes {
        for auth in [None, Some("Bearer wrong"), Some("Bearer tok-1234"), Some("tok-123"), Some("Basic tok-123")] {
            let mut req = probe.try_clone().unwrap();
            if let Some(a) = auth {
                req = req.header("authorization", a);
            }
            let r = req.send().await.unwrap();
            assert_eq!(r.headers().get("www-authenticate").map(|v| v.to_str().unwrap()), Some("Bearer"));
            let (s, v) = json_of(r).await;
            assert_eq!(s, 401, "{auth:?}: {v}");
            assert_error(&v, "unauthorized");
        }
    }
    let r = c
        .post(server.url("/v1/search"))
        .bearer_auth("tok-123")
        .json(&json!({"query": "session"}))
        .send()
        .await
        .unwrap();
    let (s, v) = json_of(r).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["results"][0]["path"], "src/auth/session.rs");
}

/// `/v1/mcp` answers every error as a JSON-RPC error object (rmcp's own rejections are plain
/// text): a malformed body is 400 `-32700` with id null, a missing or unknown session keeps
/// its 400 / 404 and says to initialize; the token and Origin checks still come first.
#[tokio::test]
async fn streamable_http_mcp_errors_are_json_rpc() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let token = "mcp-token-0123456789";
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[("DOCDEX_AUTH_TOKEN", token)]);
    let c = client();
    let url = server.url("/v1/mcp");
    let post = |body: &str| {
        c.post(&url)
            .bearer_auth(token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string())
    };
    async fn rpc_error(r: reqwest::Response, status: u16, code: i64) -> Value {
        assert_eq!(r.headers().get("content-type").map(|v| v.to_str().unwrap()), Some("application/json"));
        let (s, v) = json_of(r).await;
        assert_eq!((s, v["jsonrpc"].as_str(), v["error"]["code"].as_i64()), (status, Some("2.0"), Some(code)), "{v}");
        assert!(v["error"]["message"].as_str().is_some_and(|m| m.len() > 10), "{v}");
        v
    }

    // The guards run first: no token is 401, a foreign page 403, in the HTTP error contract.
    let r = c.post(&url).header("content-type", "application/json").body("{\"jsonrpc\":").send().await.unwrap();
    let (s, v) = json_of(r).await;
    assert_eq!(s, 401, "{v}");
    assert_error(&v, "unauthorized");
    let r = post("{\"jsonrpc\":").header("origin", "http://evil.example").send().await.unwrap();
    let (s, v) = json_of(r).await;
    assert_eq!(s, 403, "{v}");
    assert_error(&v, "forbidden_origin");
    let message = v["error"]["message"].as_str().unwrap();
    // True of an `--expose`d server too: it said only clients on this machine could call.
    assert!(!message.contains("only clients on this machine"), "{message}");
    assert!(message.contains("or the network when exposed"), "{message}");

    let v = rpc_error(post("{\"jsonrpc\":").send().await.unwrap(), 400, -32700).await;
    assert_eq!(v["id"], Value::Null, "{v}");
    rpc_error(post("").send().await.unwrap(), 400, -32700).await;
    rpc_error(post("[1]").send().await.unwrap(), 400, -32600).await;
    let v =
        rpc_error(post(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call"}"#).send().await.unwrap(), 400, -32602).await;
    assert_eq!(v["id"], 5, "{v}");
    let r = c.post(&url).bearer_auth(token).header("content-type", "text/plain").body("{}").send().await.unwrap();
    rpc_error(r, 415, -32000).await;

    // No session: 400, saying to initialize first.
    let list = r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#;
    let v = rpc_error(post(list).send().await.unwrap(), 400, -32000).await;
    assert!(v["id"] == 7 && v["error"]["message"].as_str().unwrap().contains("initialize"), "{v}");
    let r = c.get(&url).bearer_auth(token).header("accept", "text/event-stream").send().await.unwrap();
    rpc_error(r, 400, -32000).await;
    // An unknown session: 404, saying to initialize again.
    let v = rpc_error(post(list).header("mcp-session-id", "gone").send().await.unwrap(), 404, -32001).await;
    assert!(v["error"]["message"].as_str().unwrap().contains("`initialize` again"), "{v}");

    // A real session still works, and its end makes its id unknown.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let r = post(&init.to_string()).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let session = r.headers().get("mcp-session-id").unwrap().to_str().unwrap().to_string();
    assert!(r.text().await.unwrap().contains("docdex"));
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(post(initialized).header("mcp-session-id", &session).send().await.unwrap().status().as_u16(), 202);
    let r = post(list).header("mcp-session-id", &session).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(r.text().await.unwrap().contains("docdex_search"));
    // A method MCP does not define: -32601 naming it and the methods there are (tour14 F9).
    let nope = r#"{"jsonrpc":"2.0","id":9,"method":"nope/method"}"#;
    let r = post(nope).header("mcp-session-id", &session).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let body = r.text().await.unwrap();
    assert!(
        body.contains("-32601") && body.contains("unknown method nope/method") && body.contains("tools/call"),
        "{body}"
    );
    // An extension rmcp answers itself (tasks, skills) says so too: rmcp's message was the method.
    let task = r#"{"jsonrpc":"2.0","id":10,"method":"tasks/get","params":{"taskId":"t1"}}"#;
    let r = post(task).header("mcp-session-id", &session).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let body = r.text().await.unwrap();
    assert!(
        body.contains("-32601")
            && body.contains("tasks/get is not offered: this server runs no tasks")
            && body.contains("tools/call"),
        "{body}"
    );
    let bad = r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"docdex_search","arguments":"x"}}"#;
    let v = rpc_error(post(bad).header("mcp-session-id", &session).send().await.unwrap(), 400, -32602).await;
    assert!(v["error"]["message"].as_str().unwrap().contains("`arguments` must be an object"), "{v}");
    let r = c.delete(&url).bearer_auth(token).header("mcp-session-id", &session).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200, "DELETE ends the session with 200 (the Python SDK took 202 as a failure)");
    rpc_error(post(list).header("mcp-session-id", &session).send().await.unwrap(), 404, -32001).await;
}

/// Live MCP sessions are capped (each `initialize` used to be kept 5 minutes, without limit): past
/// the cap the least recently used session that never sent a request is ended once it is 5 s
/// old (its id is then unknown, 404 -32001); younger ones and sessions in use are never ended for
/// a new one, so a flood of bare `initialize`s past the cap is refused with 503, JSON-RPC -32000
/// saying why, as is a new one when every session is in use.
#[tokio::test]
async fn mcp_sessions_are_capped_without_ending_sessions_in_use() {
    const CAP: usize = 128;
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let c = client();
    let url = server.url("/v1/mcp");
    let post = |body: &str| {
        c.post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string())
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    .to_string();
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let initialize = || async {
        let r = post(&init).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 200);
        let id = r.headers().get("mcp-session-id").unwrap().to_str().unwrap().to_string();
        r.text().await.unwrap();
        id
    };
    let live = || async {
        let (_, v) = json_of(c.get(server.url("/healthz")).send().await.unwrap()).await;
        v["mcp_sessions"].as_u64().unwrap() as usize
    };
    let list_status = |id: String| {
        let req = post(list).header("mcp-session-id", id);
        async move {
            let r = req.send().await.unwrap();
            let s = r.status().as_u16();
            (s, r.text().await.unwrap())
        }
    };

    // Two sessions in use, then a flood of bare initializes.
    let working = [initialize().await, initialize().await];
    for id in &working {
        assert_eq!(list_status(id.clone()).await.0, 200);
    }
    let mut bare = Vec::new();
    for _ in working.len()..CAP {
        bare.push(initialize().await);
    }
    // Past the cap, every session is in use or a few seconds old: the flood is refused.
    for _ in 0..70 {
        let r = post(&init).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 503);
        let (_, v) = json_of(r).await;
        assert!(v["error"]["message"].as_str().unwrap().contains("opened in the last 5 s"), "{v}");
    }
    assert_eq!(live().await, CAP);
    for id in &working {
        let (s, body) = list_status(id.clone()).await;
        assert!(s == 200 && body.contains("docdex_search"), "{s} {body}");
    }
    // Once the bare sessions are past the grace, a new one ends the oldest of them.
    tokio::time::sleep(Duration::from_millis(5_500)).await;
    let newest = initialize().await;
    let (s, body) = list_status(bare[0].clone()).await;
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!((s, v["error"]["code"].as_i64()), (404, Some(-32001)), "{body}");

    // Every live session in use: a new one is refused, saying why; ending one makes room.
    let mut survivors = bare[1..].to_vec();
    survivors.push(newest);
    for id in &survivors {
        assert_eq!(list_status(id.clone()).await.0, 200);
    }
    let r = post(&init).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 503);
    assert!(r.headers().get("retry-after").is_some());
    let (_, v) = json_of(r).await;
    assert_eq!(
        (v["jsonrpc"].as_str(), v["id"].as_i64(), v["error"]["code"].as_i64()),
        (Some("2.0"), Some(1), Some(-32000)),
        "{v}"
    );
    assert!(v["error"]["message"].as_str().unwrap().starts_with("too many MCP sessions: all 128 are in use"), "{v}");
    assert_eq!(live().await, CAP);
    let r = c.delete(&url).header("mcp-session-id", &survivors[0]).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    initialize().await;
    assert_eq!(live().await, CAP);
}

/// Server streams (`GET /v1/mcp`) are bounded per session: rmcp keeps up to 33 per session,
/// each a connection never idle (so never closed for another), and 8 sessions of one client took
/// all 256 places, leaving none for any other client. A session holds at most 2; past that a GET
/// is `429` `-32000` with `Retry-After`, other sessions still open theirs, and closing a stream
/// makes room. 128 sessions of 2 fit the 256 places over all sessions.
#[tokio::test]
async fn mcp_server_streams_are_bounded_per_session_so_one_client_cannot_take_them_all() {
    const PER_SESSION: usize = 2;
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let c = client();
    let url = server.url("/v1/mcp");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    .to_string();
    let mut sessions = Vec::new();
    for _ in 0..8 {
        let r = c
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(init.clone())
            .send()
            .await
            .unwrap();
        sessions.push(r.headers().get("mcp-session-id").unwrap().to_str().unwrap().to_string());
        r.text().await.unwrap();
    }
    let get =
        |session: &str| c.get(&url).header("accept", "text/event-stream").header("mcp-session-id", session).send();
    // The first 7 sessions each ask for 33 streams, as many as rmcp would keep.
    let (mut open, mut refused) = (Vec::new(), Vec::new());
    for session in &sessions[..7] {
        for _ in 0..33 {
            let r = get(session).await.unwrap();
            match r.status().as_u16() {
                200 => open.push(r),
                429 => refused.push(r),
                s => panic!("GET /v1/mcp: {s} {}", r.text().await.unwrap()),
            }
        }
    }
    assert_eq!((open.len(), refused.len()), (7 * PER_SESSION, 7 * (33 - PER_SESSION)));
    let r = refused.pop().unwrap();
    assert!(r.headers().get("retry-after").is_some());
    let (_, v) = json_of(r).await;
    assert_eq!((v["jsonrpc"].as_str(), v["error"]["code"].as_i64()), (Some("2.0"), Some(-32000)), "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("already holds 2 server streams"), "{v}");
    // Another client's session still gets its streams.
    for _ in 0..PER_SESSION {
        let r = get(&sessions[7]).await.unwrap();
        assert_eq!(r.status().as_u16(), 200, "{}", r.text().await.unwrap());
        open.push(r);
    }
    let health = c.get(server.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status().as_u16(), 200);
    drop(open.remove(0));
    eventually("a closed server stream frees its session's place", || async {
        match get(&sessions[0]).await.unwrap() {
            r if r.status().as_u16() == 200 => {
                drop(r);
                true
            }
            _ => false,
        }
    })
    .await;

    // DELETE ends the session and every server stream it had open, at once.
    let r = c.delete(&url).header("mcp-session-id", &sessions[1]).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    for (i, stream) in open.iter_mut().enumerate().skip(1).take(PER_SESSION) {
        loop {
            match tokio::time::timeout(Duration::from_secs(5), stream.chunk()).await {
                Ok(Ok(Some(_))) => continue,
                Ok(_) => break,
                Err(_) => panic!("server stream {i} of the deleted session is still open"),
            }
        }
    }
    let (_, v) = json_of(c.get(server.url("/healthz")).send().await.unwrap()).await;
    assert_eq!(v["mcp_sessions"], 7, "{v}");
    let r = get(&sessions[1]).await.unwrap();
    assert_eq!(r.status().as_u16(), 404);
}

/// The legacy SSE transport's message POST answers a malformed body as `/v1/mcp` does, with a
/// JSON-RPC error object (it was the HTTP error contract, `400 bad_request`).
#[tokio::test]
async fn sse_message_errors_are_json_rpc() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let c = client();
    let mut sse = c.get(server.url("/sse")).send().await.unwrap();
    let first = String::from_utf8_lossy(&sse.chunk().await.unwrap().unwrap()).to_string();
    let endpoint = first.lines().find_map(|l| l.strip_prefix("data: ")).unwrap().trim().to_string();
    let url = server.url(&endpoint);
    let post = |ct: &str, body: &str| c.post(&url).header("content-type", ct).body(body.to_string()).send();
    for (ct, body, status, code) in [
        ("application/json", "{\"jsonrpc\":", 400, -32700),
        ("application/json", "", 400, -32700),
        ("application/json", "[1]", 400, -32600),
        ("application/json", r#"{"jsonrpc":"2.0","id":5,"method":"tools/call"}"#, 400, -32602),
        ("text/plain", "{}", 415, -32000),
    ] {
        let (s, v) = json_of(post(ct, body).await.unwrap()).await;
        assert_eq!(
            (s, v["jsonrpc"].as_str(), v["error"]["code"].as_i64()),
            (status, Some("2.0"), Some(code)),
            "{body:?}: {v}"
        );
    }
    // A good message is still accepted.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2024-11-05",
        "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    assert_eq!(post("application/json", &init.to_string()).await.unwrap().status().as_u16(), 202);
    // An extension rmcp answers itself says what the server lacks here too (the SSE session runs
    // docdex's wrapper service), its answer a `message` event.
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(post("application/json", initialized).await.unwrap().status().as_u16(), 202);
    let task = r#"{"jsonrpc":"2.0","id":11,"method":"skills/list","params":{}}"#;
    assert_eq!(post("application/json", task).await.unwrap().status().as_u16(), 202);
    let mut seen = String::new();
    while !seen.contains("\"id\":11") {
        match tokio::time::timeout(Duration::from_secs(10), sse.chunk()).await {
            Ok(Ok(Some(bytes))) => seen.push_str(&String::from_utf8_lossy(&bytes)),
            other => panic!("no answer to skills/list on the stream ({other:?}): {seen}"),
        }
    }
    assert!(
        seen.contains("-32601") && seen.contains("skills/list is not offered: this server has no skills"),
        "{seen}"
    );
}

/// A legacy SSE client that posts requests and never reads its event stream cannot grow the
/// server (each `202` only queued a message: 6,000 `tools/list` took it from 90 MB to 790 MB):
/// past what the socket holds and 64 unanswered requests, a request is `503` with JSON-RPC
/// `-32000` and `Retry-After`, and reading the stream frees the session.
#[tokio::test]
async fn sse_sessions_and_their_backlogs_are_bounded() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let c = client();
    let open = || async {
        let mut sse = c.get(server.url("/sse")).send().await.unwrap();
        assert_eq!(sse.status().as_u16(), 200);
        let first = String::from_utf8_lossy(&sse.chunk().await.unwrap().unwrap()).to_string();
        let endpoint = first.lines().find_map(|l| l.strip_prefix("data: ")).unwrap().trim().to_string();
        (sse, server.url(&endpoint))
    };
    let (mut sse, url) = open().await;
    let post = |body: Value| c.post(&url).header("content-type", "application/json").body(body.to_string()).send();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2024-11-05",
        "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    assert_eq!(post(init).await.unwrap().status().as_u16(), 202);
    assert_eq!(post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await.unwrap().status(), 202);
    let mut refused = None;
    for id in 10..5000 {
        let r = post(json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"})).await.unwrap();
        match r.status().as_u16() {
            202 => {}
            503 => {
                refused = Some((id, r));
                break;
            }
            s => panic!("request {id}: {s} {}", r.text().await.unwrap()),
        }
    }
    let (id, r) = refused.expect("a session whose stream is never read took 5,000 requests");
    assert!(r.headers().get("retry-after").is_some());
    let (_, v) = json_of(r).await;
    assert_eq!((v["id"].as_i64(), v["error"]["code"].as_i64()), (Some(id), Some(-32000)), "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("64 requests whose answers"), "{v}");
    // Reading the stream delivers the answers and frees the session.
    let mut answers = 0;
    while let Ok(Ok(Some(chunk))) = tokio::time::timeout(Duration::from_secs(1), sse.chunk()).await {
        answers += String::from_utf8_lossy(&chunk).matches("event: message").count();
    }
    assert!(answers >= 64, "{answers} answers read");
    let r = post(json!({"jsonrpc": "2.0", "id": 1_000_000, "method": "tools/list"})).await.unwrap();
    assert_eq!(r.status().as_u16(), 202);
}

/// At most `[server] max_mcp_sessions` SSE streams are open at once (each holds a connection
/// that is never idle; the cap was a fixed 128 whatever the setting). A client gone silent
/// without closing its streams (a stopped process) held them forever and every other SSE client
/// was refused: now a new stream closes the one idle the longest among those that never sent a
/// request, sessions in use are kept, and only when every session is in use is a new stream
/// `503 busy`; closing one makes room.
#[tokio::test]
async fn sse_streams_of_silent_clients_make_room_but_sessions_in_use_stay() {
    const CAP: usize = 6;
    let env = Env::new();
    env.write_config(&format!("[server]\nmax_mcp_sessions = {CAP}\n"));
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let c = client();
    let open = || async {
        let mut sse = c.get(server.url("/sse")).send().await.unwrap();
        assert_eq!(sse.status().as_u16(), 200);
        let first = String::from_utf8_lossy(&sse.chunk().await.unwrap().unwrap()).to_string();
        let endpoint = first.lines().find_map(|l| l.strip_prefix("data: ")).unwrap().trim().to_string();
        (sse, server.url(&endpoint))
    };
    let post =
        |url: &str, body: Value| c.post(url).header("content-type", "application/json").body(body.to_string()).send();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2024-11-05",
        "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let use_session = |url: String| {
        let init = init.clone();
        async move {
            assert_eq!(post(&url, init).await.unwrap().status().as_u16(), 202);
            let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            assert_eq!(post(&url, initialized).await.unwrap().status().as_u16(), 202);
            let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
            assert_eq!(post(&url, list).await.unwrap().status().as_u16(), 202);
        }
    };
    /// Reads a stream until it ends (true) or shows `what` (false), within 10 s.
    async fn ends_before(sse: &mut reqwest::Response, what: &str) -> bool {
        let mut seen = String::new();
        loop {
            match tokio::time::timeout(Duration::from_secs(10), sse.chunk()).await {
                Ok(Ok(Some(chunk))) => {
                    seen.push_str(&String::from_utf8_lossy(&chunk));
                    if seen.contains(what) {
                        return false;
                    }
                }
                Ok(_) => return true,
                Err(_) => panic!("the stream neither ended nor showed {what:?}: {seen}"),
            }
        }
    }

    // One session in use, then silent clients fill every other place.
    let (mut working, working_url) = open().await;
    use_session(working_url.clone()).await;
    assert!(!ends_before(&mut working, "docdex_search").await);
    let mut silent = Vec::new();
    for _ in 1..CAP {
        silent.push(open().await);
    }
    // A new client gets a stream: the oldest silent one is closed for it, the working one stays.
    let (newcomer, newcomer_url) = open().await;
    let (mut oldest, oldest_url) = silent.remove(0);
    assert!(ends_before(&mut oldest, "never").await, "the oldest silent stream stays open");
    let r = post(&oldest_url, init.clone()).await.unwrap();
    assert_eq!(r.status().as_u16(), 404);
    let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"});
    assert_eq!(post(&working_url, list).await.unwrap().status().as_u16(), 202);
    assert!(!ends_before(&mut working, "docdex_search").await);

    // Every session in use: a new stream is refused, saying why; closing one makes room.
    for (_, url) in &silent {
        use_session(url.clone()).await;
    }
    use_session(newcomer_url).await;
    let r = c.get(server.url("/sse")).send().await.unwrap();
    assert!(r.headers().get("retry-after").is_some());
    let (s, v) = json_of(r).await;
    assert_eq!(s, 503, "{v}");
    assert_error(&v, "busy");
    assert!(v["error"]["message"].as_str().unwrap().contains(&format!("all {CAP} MCP SSE sessions are in use")), "{v}");
    drop(newcomer);
    eventually("a closed SSE stream frees its place", || async {
        c.get(server.url("/sse")).send().await.unwrap().status().as_u16() == 200
    })
    .await;
    drop(silent);
}

/// Too many header fields, or too many bytes of them, is `431 headers_too_large` with the
/// error contract naming the limit (hyper alone answers 431 with an empty body).
#[tokio::test]
async fn oversized_request_heads_get_the_error_contract() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let c = client();
    let extra = |n: usize| {
        let mut h = reqwest::header::HeaderMap::new();
        for i in 0..n {
            h.insert(reqwest::header::HeaderName::try_from(format!("x-extra-{i}")).unwrap(), "1".parse().unwrap());
        }
        h
    };
    assert_eq!(c.get(server.url("/healthz")).headers(extra(90)).send().await.unwrap().status().as_u16(), 200);
    let (s, v) = json_of(c.get(server.url("/healthz")).headers(extra(150)).send().await.unwrap()).await;
    assert_eq!(s, 431, "{v}");
    assert_error(&v, "headers_too_large");
    assert!(v["error"]["message"].as_str().unwrap().contains("header fields; the limit is 100"), "{v}");
    let big = "x".repeat(70 * 1024);
    let (s, v) = json_of(c.get(server.url("/v1/status")).header("x-big", big).send().await.unwrap()).await;
    assert_eq!(s, 431, "{v}");
    assert_error(&v, "headers_too_large");
    assert!(v["error"]["message"].as_str().unwrap().contains("the limit is 65536"), "{v}");
    // The check comes before the others: an MCP POST gets it too.
    let (s, v) = json_of(c.post(server.url("/v1/mcp")).headers(extra(150)).send().await.unwrap()).await;
    assert_eq!((s, v["error"]["code"].as_str()), (431, Some("headers_too_large")), "{v}");
}

/// Heads hyper refuses before any docdex code runs (a URI over its 65,534 bytes, more header
/// fields than its cap of 512, a header line it cannot parse) were answered `414` / `431` /
/// `400` with an empty body; they now carry the error contract too, on a fresh connection and
/// after a pipelined request alike.
#[test]
fn heads_hyper_refuses_itself_get_the_error_contract() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let exchange = |request: Vec<u8>| -> String {
        let mut stream = std::net::TcpStream::connect(&server.addr).unwrap();
        stream.set_read_timeout(Some(std::time::Duration::from_secs(20))).unwrap();
        stream.write_all(&request).unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).expect("the server closes the connection after the refusal");
        String::from_utf8(answer).unwrap()
    };
    let host = format!("host: {}\r\n", server.addr);
    let long_uri = format!("GET /healthz?q={} HTTP/1.1\r\n{host}\r\n", "a".repeat(70_000));
    let fields: String = (0..600).map(|i| format!("x-extra-{i}: 1\r\n")).collect();
    let many_fields = format!("GET /healthz HTTP/1.1\r\n{host}{fields}\r\n");
    let pipelined = format!("GET /healthz HTTP/1.1\r\n{host}\r\n{many_fields}");
    for (request, status, code) in [
        (long_uri, "414 URI Too Long", "uri_too_long"),
        (many_fields, "431 Request Header Fields Too Large", "headers_too_large"),
        (pipelined, "431 Request Header Fields Too Large", "headers_too_large"),
        (
            format!("GET /healthz HTTP/1.1\r\n{host}a header line without a colon\r\n\r\n"),
            "400 Bad Request",
            "bad_request",
        ),
    ] {
        let pipelined = request.matches("GET ").count() == 2;
        let answer = exchange(request.into_bytes());
        // The pipelined request before the refused one is answered as usual.
        assert_eq!(answer.starts_with("HTTP/1.1 200 OK\r\n"), pipelined, "{answer}");
        let refusal = &answer[answer.rfind(&format!("HTTP/1.1 {status}\r\n")).unwrap_or_else(|| panic!("{answer}"))..];
        let (head, body) = refusal.split_once("\r\n\r\n").unwrap();
        assert!(head.contains("content-type: application/json"), "{head}");
        assert!(head.contains(&format!("content-length: {}\r\n", body.len())), "{head}");
        let v: serde_json::Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {refusal}"));
        assert_error(&v, code);
    }
}

#[test]
fn exposing_needs_a_token_and_non_loopback_needs_expose() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let r = repo.to_str().unwrap();
    let out = env.run(&["serve", "--repo", r, "--bind", "0.0.0.0:0"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--expose"), "{}", String::from_utf8_lossy(&out.stderr));
    let out = env.run(&["serve", "--repo", r, "--bind", "0.0.0.0:0", "--expose"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("requires a token") && err.contains("DOCDEX_AUTH_TOKEN"), "{err}");
    // A token a network can guess is refused.
    let out = env.run(&["serve", "--repo", r, "--bind", "0.0.0.0:0", "--expose", "--auth-token", "a"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("at least 16 characters"), "{err}");
    // So is a long one made of a repeated pattern.
    for guessable in ["aaaaaaaaaaaaaaaa", "abababababababababab"] {
        let out = env.run(&["serve", "--repo", r, "--bind", "0.0.0.0:0", "--expose", "--auth-token", guessable]);
        assert!(!out.status.success(), "{guessable}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("random token"), "{guessable}: {err}");
    }
    // A token of spaces guards nothing: refused, exposed or not (it started with no auth).
    let spaces = "                ";
    for args in [
        &["serve", "--repo", r, "--bind", "127.0.0.1:0"][..],
        &["daemon", "--bind", "127.0.0.1:0"],
        &["mcp", "--repo", r],
    ] {
        let err = refused_at_start(&env, &[args, &["--auth-token", spaces][..]].concat());
        assert!(err.contains("only whitespace"), "{args:?}: {err}");
    }
}

/// A token an `Authorization` header cannot carry (beyond visible ASCII) was accepted at start,
/// then every request was refused as "not `Bearer <token>`": the server refuses to start,
/// naming the first such character (never the token), from the flag and the config file alike.
/// A header that is not visible ASCII is refused as such.
#[tokio::test]
async fn a_token_no_client_can_send_refuses_to_start() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let r = repo.to_str().unwrap();
    let token = "tøken-ünïcode-€€€-12345";
    for args in [&["serve", "--repo", r, "--bind", "127.0.0.1:0"][..], &["daemon", "--bind", "127.0.0.1:0"]] {
        let err = refused_at_start(&env, &[args, &["--auth-token", token][..]].concat());
        assert!(err.contains("holds 'ø' (U+00F8) at character 2") && err.contains("visible ASCII"), "{args:?}: {err}");
        assert!(!err.contains(token), "the token is never repeated: {err}");
    }
    env.write_config(&format!("[server]\nauth_token = \"{token}\"\n"));
    let err = refused_at_start(&env, &["serve", "--repo", r, "--bind", "127.0.0.1:0"]);
    assert!(err.contains("[server] auth_token holds 'ø'"), "{err}");
    env.write_config("[server]\nauth_token = \"two words here\"\n");
    let err = refused_at_start(&env, &["serve", "--repo", r, "--bind", "127.0.0.1:0"]);
    assert!(err.contains("holds a space at character 4"), "{err}");
    env.write_config("");

    let server = Server::start(&env, &["serve", "--repo", r], &[("DOCDEX_AUTH_TOKEN", "tok-123")]);
    let value = reqwest::header::HeaderValue::from_bytes("Bearer tøken".as_bytes()).unwrap();
    let resp = client().get(server.url("/v1/status")).header("authorization", value).send().await.unwrap();
    let (s, v) = json_of(resp).await;
    assert_eq!(s, 401, "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("the Authorization header is not visible ASCII text"), "{message}");
}

/// `--max-body-bytes` has a range (0 and 1 were accepted, making every POST a 413, and so
/// was 99999999999999): outside 4 KiB to 1 GiB the server refuses to start, naming the range.
#[tokio::test]
async fn max_body_bytes_outside_its_range_refuses_to_start() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let r = repo.to_str().unwrap();
    for n in ["0", "1", "4095", "1073741825", "99999999999999"] {
        let err = refused_at_start(&env, &["serve", "--repo", r, "--bind", "127.0.0.1:0", "--max-body-bytes", n]);
        assert!(err.contains("out of range") && err.contains("4096") && err.contains("1073741824"), "{n}: {err}");
    }
    let server = Server::start(&env, &["serve", "--repo", r, "--max-body-bytes", "4096"], &[]);
    let big = json!({"query": "x".repeat(5000)}).to_string();
    let r = client().post(server.url("/v1/search")).header("content-type", "application/json").body(big);
    let status = r.send().await.unwrap().status().as_u16();
    assert_eq!(status, 413);
}

/// Runs a server command line that must refuse to start: its stderr. A server that starts
/// anyway is stopped after 10 s and fails the test.
fn refused_at_start(env: &Env, args: &[&str]) -> String {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_docdex"))
        .args(args)
        .env("DOCDEX_HOME", env.home())
        .env_remove("DOCDEX_AUTH_TOKEN")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("{args:?} started instead of refusing");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success(), "{args:?} exited successfully");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test]
async fn localhost_is_accepted_as_a_loopback_bind() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_docdex"));
    cmd.args(["serve", "--repo", repo.to_str().unwrap(), "--no-watch", "--bind", "localhost:0"]);
    let server = Server::spawn(&env, cmd, &[]);
    assert!(server.addr.starts_with("127.0.0.1:"), "{}", server.addr);
    let (s, v) = json_of(client().get(server.url("/healthz")).send().await.unwrap()).await;
    assert_eq!((s, v["status"].as_str()), (200, Some("ok")), "{v}");
}

/// `--port N` (what most servers take) keeps the configured host and changes only the port; the
/// host's exposure rules still apply, and `--bind` with `--port` is refused, not guessed at.
#[tokio::test]
async fn port_flag_keeps_the_configured_host() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let r = repo.to_str().unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_docdex"));
    cmd.args(["serve", "--repo", r, "--no-watch", "--port", "0"]);
    let server = Server::spawn(&env, cmd, &[]);
    assert!(server.addr.starts_with("127.0.0.1:") && !server.addr.ends_with(":3210"), "{}", server.addr);
    let (s, v) = json_of(client().get(server.url("/healthz")).send().await.unwrap()).await;
    assert_eq!((s, v["status"].as_str()), (200, Some("ok")), "{v}");
    drop(server);

    let err = refused_at_start(&env, &["serve", "--repo", r, "--bind", "127.0.0.1:0", "--port", "0"]);
    assert!(err.contains("--bind") && err.contains("--port") && err.contains("cannot be used with"), "{err}");

    std::fs::write(env.home().join("config.toml"), "[server]\nhttp_bind_addr = \"0.0.0.0:3210\"\n").unwrap();
    let err = refused_at_start(&env, &["serve", "--repo", r, "--port", "0"]);
    assert!(err.contains("0.0.0.0:0") && err.contains("--expose"), "{err}");
}

#[tokio::test]
async fn daemon_mounts_repos_on_initialize_and_keeps_them_apart() {
    let env = Env::new();
    let a = indexed_repo(&env, "a");
    write(&a, "only_a.rs", "fn aardvark_only() {}\n");
    env.json(&["index", "--repo", a.to_str().unwrap(), "--json"]);
    let b = env.repo("b");
    write(&b, "only_b.rs", "fn aardvark_bee() {}\n");
    let daemon = Server::start(&env, &["daemon"], &[]);
    let c = client();
    let init = |root: String| c.post(daemon.url("/v1/initialize")).json(&json!({ "rootUri": root })).send();

    // No repository named: 400; an unindexed, unmounted one: 409 with the initialize hint.
    let (s, v) = json_of(c.post(daemon.url("/v1/search")).json(&json!({"query": "x"})).send().await.unwrap()).await;
    assert_eq!(s, 400, "{v}");
    let r = c
        .post(daemon.url("/v1/search"))
        .json(&json!({"query": "x", "repo": b.to_str().unwrap()}))
        .send()
        .await
        .unwrap();
    let (s, v) = json_of(r).await;
    assert_eq!(s, 409, "{v}");
    assert_error(&v, "not_indexed");
    assert!(v["error"]["message"].as_str().unwrap().contains("/v1/initialize"), "{v}");

    // An indexed, unchanged repo is ready (or `stale` for the moment its catch-up run checks it,
    // on a slow machine); an unindexed one starts indexing in the background.
    let (s, v) = json_of(init(format!("file://{}", a.display())).await.unwrap()).await;
    assert_eq!(s, 200, "{v}");
    assert!(["ready", "stale"].contains(&v["status"].as_str().unwrap()), "{v}");
    let a_id = v["repo_id"].as_str().unwrap().to_string();
    eventually("a ready", || async {
        let v: Value =
            c.get(daemon.url("/v1/status")).header("x-docdex-repo", &a_id).send().await.unwrap().json().await.unwrap();
        v["repos"][0]["mount"]["status"] == "ready"
    })
    .await;
    let (s, v) = json_of(init(b.to_str().unwrap().to_string()).await.unwrap()).await;
    assert_eq!(s, 200, "{v}");
    assert!(["indexing", "ready"].contains(&v["status"].as_str().unwrap()), "{v}");
    let b_id = v["repo_id"].as_str().unwrap().to_string();
    eventually("b indexed", || async {
        let v: Value =
            c.get(daemon.url("/v1/status")).header("x-docdex-repo", &b_id).send().await.unwrap().json().await.unwrap();
        v["repos"][0]["mount"]["status"] == "ready"
    })
    .await;

    // Every hit comes from the repo asked, even for a word both contain.
    for (repo, only) in [(&a, "only_a.rs"), (&b, "only_b.rs")] {
        let r = c
            .post(daemon.url("/v1/search"))
            .json(&json!({"query": "aardvark", "repo": repo.to_str().unwrap()}))
            .send()
            .await
            .unwrap();
        let (s, v) = json_of(r).await;
        assert_eq!(s, 200, "{v}");
        let paths: Vec<&str> = v["results"].as_array().unwrap().iter().map(|h| h["path"].as_str().unwrap()).collect();
        assert_eq!(paths, [only], "{v}");
        assert_eq!(std::fs::canonicalize(v["repo"].as_str().unwrap()).unwrap(), std::fs::canonicalize(repo).unwrap());
    }
    let v: Value = c.get(daemon.url("/v1/status")).send().await.unwrap().json().await.unwrap();
    assert_eq!(v["repos"].as_array().unwrap().len(), 2, "{v}");

    // A missing directory cannot be mounted.
    let (s, v) = json_of(init("file:///definitely/not/here".into()).await.unwrap()).await;
    assert_eq!(s, 404, "{v}");
    assert_error(&v, "unknown_repo");
}

#[test]
fn a_second_daemon_refuses_and_names_the_first() {
    let env = Env::new();
    let mut first = Server::start(&env, &["daemon"], &[]);
    let lock = env.home().join("daemon.lock");
    let info: Value = serde_json::from_str(&std::fs::read_to_string(&lock).unwrap()).unwrap();
    assert_eq!(info["addr"], first.addr.as_str());
    assert_eq!(info["pid"], first.child.id());
    let out = env.run(&["daemon", "--bind", "127.0.0.1:0"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("already running") && err.contains(&first.addr), "{err}");
    first.terminate();
    assert!(first.wait_exit(Duration::from_secs(15)).success());
    assert!(!lock.exists(), "the lock file is removed on shutdown");
}

#[tokio::test]
async fn daemon_reads_but_never_writes_an_index_another_process_writes() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    // This test process takes the writer, as a running `docdex watch` would, and says it is updating.
    let engine = env.engine();
    let rref = engine.resolve_repo(&repo).unwrap();
    let session = engine.open_index_session(&rref, false).unwrap();
    let status = json!({"state": "updating", "pid": std::process::id(), "started_ms": 1, "updated_ms": 1,
        "progress": null, "queued": 3, "last_event": null, "last_error": null, "watching": true});
    std::fs::write(rref.status_path(), status.to_string()).unwrap();

    let daemon = Server::start(&env, &["daemon"], &[]);
    let c = client();
    let (s, v) = json_of(
        c.post(daemon.url("/v1/initialize")).json(&json!({"rootUri": repo.to_str().unwrap()})).send().await.unwrap(),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["status"], "stale", "{v}");
    assert_eq!(v["watcher"]["state"], "deferred", "{v}");
    assert_eq!(v["watcher"]["writer_pid"], std::process::id(), "{v}");
    // It still answers searches from the committed index.
    let r = c
        .post(daemon.url("/v1/search"))
        .header("x-docdex-repo", repo.to_str().unwrap())
        .json(&json!({"query": "session"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);

    // When the writer goes away, the daemon takes over and watches.
    drop(session);
    eventually("daemon takes the writer", || async {
        let v: Value = c.get(daemon.url("/v1/status")).send().await.unwrap().json().await.unwrap();
        v["repos"][0]["mount"]["watcher"]["state"] == "watching"
    })
    .await;
}

/// A deferred server reports the writer the lock file names now, never one that has exited:
/// the holder changes while it waits (a writer stops, another process takes over), and the
/// pid it learned when it began to wait goes stale. The test holds the writer lock itself
/// (flock, as docdex does), then hands the very same lock to a child without releasing it,
/// so the server can never slip in between; each holder stamps its pid as `FileLock` does.
#[tokio::test]
async fn a_deferred_server_reports_the_live_writer_after_a_handoff() {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let engine = env.engine();
    let rref = engine.resolve_repo(&repo).unwrap();
    let lock_path = engine.paths().locks().join(format!("{}.writer.lock", rref.fingerprint));
    std::fs::create_dir_all(lock_path.parent().unwrap()).unwrap();
    let lock =
        std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&lock_path).unwrap();
    lock.try_lock().expect("the writer lock is free");
    // First the lock file names a process that has exited (a writer killed mid-run whose pid
    // the next holder has not overwritten yet).
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = gone.id();
    gone.wait().unwrap();
    std::fs::write(&lock_path, dead_pid.to_string()).unwrap();

    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let c = client();
    let watcher = || async {
        let v: Value = c.get(server.url("/v1/status")).send().await.unwrap().json().await.unwrap();
        v["repos"][0]["mount"]["watcher"].clone()
    };
    eventually("the server defers to the lock's holder", || async { watcher().await["state"] == "deferred" }).await;
    let w = watcher().await;
    assert_eq!(w["writer_pid"], 0, "a dead pid is reported as the writer: {w}");

    // The holder names itself.
    std::fs::write(&lock_path, std::process::id().to_string()).unwrap();
    eventually("the test process is the writer", || async { watcher().await["writer_pid"] == std::process::id() })
        .await;

    // Hand the lock over: a child inherits this very open file (so the lock is never free),
    // stamps its own pid, and this process closes its descriptor.
    let fd = lock.as_raw_fd();
    let mut cmd = std::process::Command::new("sh");
    cmd.args(["-c", "printf %s $$ > \"$0\"; exec sleep 60"]).arg(&lock_path);
    // SAFETY: between fork and exec only fcntl(2), async-signal-safe, on a descriptor we own.
    unsafe {
        cmd.pre_exec(move || {
            if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let child_pid = child.id();
    eventually("the child stamps the lock", || async {
        std::fs::read_to_string(&lock_path).unwrap_or_default() == child_pid.to_string()
    })
    .await;
    drop(lock);
    eventually("status names the new writer", || async { watcher().await["writer_pid"] == child_pid }).await;
    assert_eq!(watcher().await["state"], "deferred");

    // The last holder exits: the server takes the writer and watches.
    child.kill().unwrap();
    child.wait().unwrap();
    eventually("the server takes over", || async { watcher().await["state"] == "watching" }).await;
}

#[test]
fn sigterm_finishes_the_request_in_flight_then_releases_everything() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let mut server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    // Wait until the watcher holds the writer.
    let engine = env.engine();
    let rref = engine.resolve_repo(&repo).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while engine.open_index_session(&rref, false).is_ok() {
        assert!(std::time::Instant::now() < deadline, "watcher never took the writer");
        std::thread::sleep(Duration::from_millis(50));
    }

    // A request whose body is still arriving when SIGTERM lands.
    let body = json!({"query": "session store"}).to_string();
    let mut stream = std::net::TcpStream::connect(&server.addr).unwrap();
    write!(
        stream,
        "POST /v1/search HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{}",
        server.addr,
        body.len(),
        &body[..5]
    )
    .unwrap();
    stream.flush().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    server.terminate();
    // New connections are refused once shutdown began (while the request above is still open).
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while std::net::TcpStream::connect(&server.addr).is_ok() {
        assert!(std::time::Instant::now() < deadline, "still accepting 5 s after SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
    stream.write_all(&body.as_bytes()[5..]).unwrap();
    let mut response = String::new();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("src/auth/session.rs"), "{response}");

    assert!(server.wait_exit(Duration::from_secs(15)).success(), "{}", server.stderr.lock().unwrap());
    // The writer was released: this process can write the index now.
    engine.open_index_session(&rref, false).expect("writer released on shutdown");
}

#[tokio::test]
async fn openapi_documents_exactly_the_routes_served() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let c = client();
    let (s, doc) = json_of(c.get(server.url("/v1/openapi.json")).send().await.unwrap()).await;
    assert_eq!(s, 200);
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = doc["paths"].as_object().unwrap();
    let mut documented = Vec::new();
    for (path, item) in paths {
        for (method, op) in item.as_object().unwrap() {
            documented.push(format!("{} {path}", method.to_uppercase()));
            assert!(op["summary"].as_str().is_some_and(|s| !s.is_empty()), "{method} {path}");
            assert!(op["responses"]["default"]["content"]["application/json"]["schema"]["$ref"].is_string());
            // Served: the request reaches a handler (never the unknown-route or wrong-method answer).
            let url = server.url(&path.replace("{session}", "x"));
            let req = match method.as_str() {
                "get" => c.get(&url),
                "post" => c.post(&url).header("content-type", "application/json").body("{}"),
                "delete" => c.delete(&url),
                m => panic!("unexpected method {m}"),
            };
            let resp = req.timeout(Duration::from_secs(3)).send().await.unwrap();
            let status = resp.status().as_u16();
            if status == 404 || status == 405 {
                let body = resp.text().await.unwrap_or_default();
                // The unknown-route answer says "no endpoint"; a handler's own 404 (an unknown
                // DAG session) is fine.
                assert!(
                    !body.contains("no endpoint") && !body.contains("method_not_allowed"),
                    "{method} {path} not served: {body}"
                );
            }
        }
    }
    documented.sort();
    // The routes the router was built with (every registration goes through `Routes`).
    let state = docdex::server::AppState::new(
        env.engine(),
        docdex::server::Mode::Daemon,
        None,
        docdex::server::auth::Auth::new(None),
        false,
        1024,
        false,
    )
    .unwrap();
    let (_router, ops) = docdex::server::app(state, true);
    let mut expected: Vec<String> = ops.iter().map(|o| format!("{} {}", o.method, o.path)).collect();
    expected.sort();
    assert_eq!(documented, expected, "the document lists exactly the router's routes");
    // Every schema referenced is defined.
    let text = doc.to_string();
    for cap in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
        let name = cap.split('"').next().unwrap();
        assert!(doc["components"]["schemas"][name].is_object(), "undefined schema {name}");
    }
}

#[tokio::test]
async fn models_lists_the_providers_models_or_says_it_is_unreachable() {
    use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let fake = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    std::fs::write(
        env.home().join("config.toml"),
        format!("[llm]\nbase_url = \"{}\"\nrequest_timeout_secs = 2\n", fake.url()),
    )
    .unwrap();
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let c = client();
    let (s, v) = json_of(c.get(server.url("/v1/models")).send().await.unwrap()).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["object"], "list");
    let ids: Vec<&str> = v["data"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["docdex", "fake-chat:latest", "fake-embed:latest"], "{v}");
    assert_eq!(v["data"][0]["owned_by"], "docdex", "the default's name chat takes comes first");
    assert_eq!(v["data"][1]["owned_by"], "ollama");
    drop(server);

    // With the provider gone: 503 upstream_unavailable, with the contract.
    drop(fake);
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let (s, v) = json_of(c.get(server.url("/v1/models")).send().await.unwrap()).await;
    assert_eq!(s, 503, "{v}");
    assert_error(&v, "upstream_unavailable");
}

#[tokio::test]
async fn a_foreign_host_header_is_refused_unless_exposed() {
    // A web page that rebinds its own name to 127.0.0.1 sends its name as Host.
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let c = client();
    let r = c
        .post(server.url("/v1/search"))
        .header("host", "evil.example:3210")
        .json(&json!({"query": "session"}))
        .send()
        .await
        .unwrap();
    let (s, v) = json_of(r).await;
    assert_eq!(s, 403, "{v}");
    assert_error(&v, "forbidden_host");
    let r = c
        .post(server.url("/v1/search"))
        .header("host", format!("localhost:{}", server.addr.rsplit(':').next().unwrap()))
        .json(&json!({"query": "session"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
}

/// `x-docdex-repo` names the repository first, whatever its letters: a UTF-8 path such as
/// `/…/josé` was read as no header at all (only visible ASCII was), and the body's repository
/// (or every mounted one) answered in its place. A header that is not UTF-8, or given twice,
/// is `400 bad_request` rather than a guess.
#[tokio::test]
async fn the_repo_header_is_read_as_utf8_and_never_dropped() {
    let env = Env::new();
    let accented = env.repo("josé");
    write(&accented, "notes.md", "the zebra crossing schedule\n");
    env.json(&["index", "--repo", accented.to_str().unwrap(), "--json"]);
    let plain = indexed_repo(&env, "plain");
    let daemon = Server::start(&env, &["daemon", "--no-watch"], &[]);
    let c = client();
    let search = c
        .post(daemon.url("/v1/search"))
        .header("x-docdex-repo", accented.to_str().unwrap())
        .json(&json!({"query": "zebra", "repo": plain.to_str().unwrap()}));
    let (s, v) = json_of(search.send().await.unwrap()).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["repo"].as_str(), accented.to_str(), "{v}");
    assert_eq!(v["results"][0]["path"], "notes.md", "{v}");
    let status = c.get(daemon.url("/v1/status")).header("x-docdex-repo", accented.to_str().unwrap());
    let (s, v) = json_of(status.send().await.unwrap()).await;
    assert_eq!(s, 200, "{v}");
    let repos: Vec<&str> = v["repos"].as_array().unwrap().iter().filter_map(|r| r["mount"]["repo"].as_str()).collect();
    assert_eq!(repos, [accented.to_str().unwrap()], "{v}");

    let latin1 = reqwest::header::HeaderValue::from_bytes(b"/tmp/jos\xe9").unwrap();
    let (s, v) = json_of(c.get(daemon.url("/v1/status")).header("x-docdex-repo", latin1).send().await.unwrap()).await;
    assert_eq!(s, 400, "{v}");
    assert_error(&v, "bad_request");
    assert!(v["error"]["message"].as_str().unwrap().contains("not UTF-8"), "{v}");
    let twice = c
        .get(daemon.url("/v1/status"))
        .header("x-docdex-repo", plain.to_str().unwrap())
        .header("x-docdex-repo", accented.to_str().unwrap());
    let (s, v) = json_of(twice.send().await.unwrap()).await;
    assert_eq!(s, 400, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("given 2 times"), "{v}");
}

/// Every name a request gives for the server is checked, not only its first `Host` field as
/// text: HTTP/2's `:authority` (no `Host` field at all, so a rebound name passed), an absolute
/// request target, a second `Host` field, a `Host` that is not text, and none on HTTP/1.1.
#[tokio::test]
async fn every_name_a_request_gives_for_the_server_must_be_loopback() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let addr: std::net::SocketAddr = server.addr.parse().unwrap();
    let port = addr.port();
    // A page whose name was rebound to 127.0.0.1, over HTTP/2 (cleartext, prior knowledge).
    let h2 = |name: &str| reqwest::Client::builder().http2_prior_knowledge().resolve(name, addr).build().unwrap();
    let r = h2("evil.example").get(format!("http://evil.example:{port}/healthz")).send().await.unwrap();
    assert_eq!(r.version(), reqwest::Version::HTTP_2);
    let (s, v) = json_of(r).await;
    assert_eq!(s, 403, "{v}");
    assert_error(&v, "forbidden_host");
    let r = h2("localhost").get(format!("http://localhost:{port}/healthz")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);

    let raw = |head: &[u8]| {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        stream.write_all(head).unwrap();
        let mut out = Vec::new();
        stream.read_to_end(&mut out).unwrap();
        String::from_utf8_lossy(&out).into_owned()
    };
    let absolute = format!(
        "GET http://evil.example:{port}/healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    );
    let refused: [&[u8]; 5] = [
        absolute.as_bytes(),
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: evil.\xff\r\nConnection: close\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n",
        b"POST /v1/search HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 17\r\nConnection: close\r\n\r\n{\"query\":\"main\"}",
    ];
    for head in refused {
        let answer = raw(head);
        assert!(answer.starts_with("HTTP/1.1 403") && answer.contains("forbidden_host"), "{answer}");
    }
    let answer = raw(format!(
        "GET http://127.0.0.1:{port}/healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .as_bytes());
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // HTTP/1.0 has no Host requirement; a client on this machine may omit it.
    assert!(raw(b"GET /healthz HTTP/1.0\r\n\r\n").starts_with("HTTP/1.0 200"));
}

#[tokio::test]
async fn shutdown_closes_open_mcp_streams_promptly() {
    let env = Env::new();
    let mut daemon = Server::start(&env, &["daemon"], &[]);
    let c = client();
    let mut sse = c.get(daemon.url("/sse")).send().await.unwrap();
    assert_eq!(sse.status().as_u16(), 200);
    let first = String::from_utf8_lossy(&sse.chunk().await.unwrap().unwrap()).to_string();
    assert!(first.contains("event: endpoint") && first.contains("/v1/mcp/message?sessionId="), "{first}");
    let started = std::time::Instant::now();
    daemon.terminate();
    // The stream ends (no hang until the drain timeout) and the process exits cleanly.
    let ended =
        tokio::time::timeout(Duration::from_secs(8), async { while let Ok(Some(_)) = sse.chunk().await {} }).await;
    assert!(ended.is_ok(), "SSE stream still open after SIGTERM");
    let status = daemon.wait_exit(Duration::from_secs(8));
    assert!(status.success(), "daemon exited with {status:?}; stderr: {}", daemon.stderr.lock().unwrap());
    assert!(started.elapsed() < Duration::from_secs(8));
}

#[test]
fn sigterm_as_soon_as_the_address_is_printed_stops_cleanly() {
    // The handlers are installed before the listening line: a signal sent the moment a client
    // can know the address never meets the default action (death without releasing the lock).
    let env = Env::new();
    for _ in 0..5 {
        let mut daemon = Server::start(&env, &["daemon"], &[]);
        daemon.terminate();
        let status = daemon.wait_exit(Duration::from_secs(8));
        assert!(status.success(), "daemon exited with {status:?}; stderr: {}", daemon.stderr.lock().unwrap());
        // A clean stop removes the lock file; death by the signal's default action leaves it.
        assert!(!env.home().join("daemon.lock").exists(), "daemon.lock left behind");
    }
}

#[test]
fn preflight_check_refuses_to_start_when_a_prerequisite_fails() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = env.run(&["serve", "--repo", repo.to_str().unwrap(), "--bind", &addr, "--preflight-check"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("preflight") && err.contains(&addr), "{err}");
    assert!(out.stdout.is_empty(), "nothing was served: {}", String::from_utf8_lossy(&out.stdout));
}

/// serve's preflight printed the command to run next with the repository's path raw
/// (`docdex index --repo /tmp/it's my $HOME repo`), which a shell cannot run as the path it is.
/// The path is quoted for the shell now: the hint, pasted into sh as it is printed, indexes that
/// repository.
#[test]
fn preflight_hints_quote_the_repository_path_so_the_command_can_be_pasted() {
    let env = Env::new();
    let repo = env.repo("it's my $HOME repo");
    write(&repo, "src/lib.rs", "pub fn quokka_pouch() {}\n");
    let r = repo.to_str().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = env.run(&["serve", "--repo", r, "--bind", &addr, "--preflight-check"]);
    assert!(!out.status.success(), "the port is taken");
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err.lines().find(|l| l.contains("preflight warn repo_index")).unwrap_or_else(|| panic!("{err}"));
    let command = line.split('`').find(|part| part.starts_with("docdex index")).unwrap_or_else(|| panic!("{line}"));
    assert!(command.contains(r#"'/"#) && command.contains(r#"it'\''s my $HOME repo'"#), "{command}");
    // Pasted into a shell, with `docdex` standing for this build.
    let script = format!("docdex() {{ \"$DOCDEX_BIN\" \"$@\"; }}\n{command} --json");
    let pasted = std::process::Command::new("sh")
        .args(["-c", &script])
        .env("DOCDEX_BIN", env!("CARGO_BIN_EXE_docdex"))
        .env("DOCDEX_HOME", env.home())
        .output()
        .unwrap();
    assert!(pasted.status.success(), "{script}: {}", String::from_utf8_lossy(&pasted.stderr));
    let v = env.json(&["search", "--repo", r, "quokka_pouch", "--json"]);
    assert_eq!(v["results"][0]["path"], "src/lib.rs", "{v}");
}

#[tokio::test]
async fn preflight_runs_the_full_check_and_refuses_a_damaged_registry() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    // Healthy: the check passes (a missing model server is only a warning) and the server starts.
    let mut server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--preflight-check"], &[]);
    let health = client().get(server.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status().as_u16(), 200, "it serves");
    server.terminate();
    server.wait_exit(Duration::from_secs(10));
    let log = server.stderr.lock().unwrap().clone();
    assert!(log.contains("preflight check passed"), "{log}");
    assert!(log.contains("preflight warn llm_server"), "the unreachable model server is reported: {log}");

    // An unreadable registry is a failed prerequisite `docdex check` finds: the daemon refuses
    // to start. (A damaged file is rebuilt instead: `faults::corrupt`; a directory in its place
    // cannot be read, nor moved aside and rebuilt.)
    let registry = env.home().join("state/registry.json");
    std::fs::remove_file(&registry).unwrap();
    std::fs::create_dir(&registry).unwrap();
    let out = env.run(&["daemon", "--bind", "127.0.0.1:0", "--preflight-check"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("preflight FAIL registry") && err.contains("preflight check failed"), "{err}");
    assert!(out.stdout.is_empty(), "nothing was served: {}", String::from_utf8_lossy(&out.stdout));
    assert!(!env.home().join("daemon.lock").exists(), "no lock left behind");
}

#[tokio::test]
async fn a_repo_still_being_indexed_says_so_instead_of_asking_for_an_index() {
    let env = Env::new();
    let repo = env.repo("fresh");
    sample_repo(&repo);
    // Another process holds the writer, so the first index cannot have finished yet.
    let engine = env.engine();
    let rref = engine.resolve_repo(&repo).unwrap();
    let session = engine.open_index_session(&rref, false).unwrap();
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let c = client();
    let v: Value = c.get(server.url("/v1/status")).send().await.unwrap().json().await.unwrap();
    assert_eq!(v["repos"][0]["mount"]["status"], "indexing", "{v}");
    let (s, v) =
        json_of(c.post(server.url("/v1/search")).json(&json!({"query": "session"})).send().await.unwrap()).await;
    assert_eq!(s, 409, "{v}");
    assert_error(&v, "not_indexed");
    assert!(v["error"]["message"].as_str().unwrap().contains("being indexed"), "{v}");
    // Once the writer is free, the server indexes the repo itself.
    drop(session);
    eventually("indexed by the server", || async {
        let r = c.post(server.url("/v1/search")).json(&json!({"query": "session store"})).send().await.unwrap();
        r.status().as_u16() == 200
    })
    .await;
}

/// A repository of `n` one-chunk files, each with its own words (no vector comes from the
/// cache), served with a slow fake embedder taking two chunks per request, one at a time.
fn slow_embedding_setup(
    n: usize,
    delay_ms: u64,
) -> (Env, std::path::PathBuf, docdex::testing::fake_ollama::FakeOllama) {
    use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
    let fake = FakeOllama::start(FakeOllamaOptions { embed_delay_ms: delay_ms, ..Default::default() }).expect("fake");
    let env = Env::new();
    let cfg = crate::util::llm_config("ollama", &fake.url(), "fake-chat", "fake-embed");
    env.write_config(&format!("{cfg}embed_batch_size = 2\nembed_concurrency = 1\n"));
    let repo = env.repo("slow");
    for i in 0..n {
        write(&repo, &format!("notes/n{i}.md"), format!("# Note {i}\n\nword{i}a word{i}b topic{i}\n"));
    }
    (env, repo, fake)
}

/// Waits until the server's catch-up run is in its embedding phase (the status file says so).
fn wait_for_embedding(env: &Env, repo: &std::path::Path, server: &mut Server) {
    let status = env.engine().resolve_repo(repo).unwrap().state_dir.join("index_status.json");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(&status).unwrap_or_default().contains("\"embedding\"") {
        assert!(server.child.try_wait().unwrap().is_none(), "the server ended: {}", server.stderr.lock().unwrap());
        assert!(std::time::Instant::now() < deadline, "no embedding phase: {}", server.stderr.lock().unwrap());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(server: &Server, sig: libc::c_int) {
    // SAFETY: plain kill(2) on our own child's pid.
    unsafe {
        libc::kill(server.child.id() as libc::pid_t, sig);
    }
}

#[test]
fn ctrl_c_during_the_first_embedding_stops_it_at_the_next_batch_and_a_later_run_resumes() {
    // 60 chunks, 2 per request at 0.4 s each: the whole phase takes about 12 s.
    let (env, repo, _fake) = slow_embedding_setup(60, 400);
    let r = repo.to_str().unwrap();
    let mut server = Server::start(&env, &["serve", "--repo", r], &[]);
    wait_for_embedding(&env, &repo, &mut server);
    std::thread::sleep(Duration::from_millis(1500));
    signal(&server, libc::SIGINT);
    let started = std::time::Instant::now();
    let status = server.wait_exit(Duration::from_secs(20));
    let took = started.elapsed();
    let stderr = server.stderr.lock().unwrap().clone();
    assert!(status.success(), "a clean stop exits 0: {status:?}; {stderr}");
    // The batch in flight (0.4 s) finishes; nothing after it is sent (it took the whole
    // phase, about 10 s more, before).
    assert!(took < Duration::from_secs(4), "stopped in {took:?}; {stderr}");
    assert!(stderr.contains("docdex: stopped"), "{stderr}");
    let st = env.json(&["status", "--repo", r, "--json"]);
    assert!(st.to_string().contains("stopped for shutdown"), "status says the run stopped: {st}");

    // The next run (a fast embedder now) goes on: what was embedded before the stop is kept,
    // and only the rest is embedded.
    let fast = docdex::testing::fake_ollama::FakeOllama::start(Default::default()).expect("fake");
    env.write_config(&crate::util::llm_config("ollama", &fast.url(), "fake-chat", "fake-embed"));
    let summary = env.json(&["index", "--repo", r, "--json"]);
    let e = &summary["embeddings"];
    assert_eq!(e["state"], "ready", "{summary}");
    let redone = e["files_embedded"].as_u64().unwrap();
    assert!(redone > 0 && redone < 60, "only the files not embedded before the stop: {e}");
    assert_eq!(e["chunks"], 60, "{e}");
}

#[test]
fn ctrl_c_drops_the_embedding_request_in_flight_and_the_next_run_embeds_it() {
    // A slow model: every batch takes 20 s (the request timeout is 60 s). The first Ctrl-C
    // waited for the requests in flight to finish, 20 s here, up to the timeout with a model
    // that hangs; now they are dropped.
    use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
    let fake = FakeOllama::start(FakeOllamaOptions { embed_delay_ms: 20_000, ..Default::default() }).expect("fake");
    let env = Env::new();
    env.write_config(&format!(
        "[llm]\nprovider = \"ollama\"\nbase_url = \"{}\"\ndefault_model = \"fake-chat\"\nembedding_model = \"fake-embed\"\nrequest_timeout_secs = 60\nembed_batch_size = 2\nembed_concurrency = 2\n",
        fake.url()
    ));
    let repo = env.repo("slow");
    for i in 0..10 {
        write(&repo, &format!("notes/n{i}.md"), format!("# Note {i}\n\nword{i}a word{i}b topic{i}\n"));
    }
    let r = repo.to_str().unwrap();
    let mut server = Server::start(&env, &["serve", "--repo", r], &[]);
    wait_for_embedding(&env, &repo, &mut server);
    let batches_sent = || {
        fake.requests()
            .iter()
            .filter(|(p, b)| p == "/api/embed" && b["input"].as_array().is_some_and(|a| a.len() > 1))
            .count()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while batches_sent() < 2 {
        assert!(std::time::Instant::now() < deadline, "no batch in flight: {}", server.stderr.lock().unwrap());
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(&server, libc::SIGINT);
    let started = std::time::Instant::now();
    let status = server.wait_exit(Duration::from_secs(30));
    let took = started.elapsed();
    let stderr = server.stderr.lock().unwrap().clone();
    assert!(status.success(), "a clean stop exits 0: {status:?}; {stderr}");
    assert!(took < Duration::from_secs(3), "stopped in {took:?}, not after the 20 s batch; {stderr}");
    assert_eq!(batches_sent(), 2, "no batch is sent after the stop");
    let st = env.json(&["status", "--repo", r, "--json"]);
    assert!(st.to_string().contains("stopped for shutdown"), "status says the run stopped: {st}");

    // The dropped batches were not written: the next run (a fast model) embeds every chunk,
    // and vectors.db holds each once.
    let fast = FakeOllama::start(Default::default()).expect("fake");
    env.write_config(&crate::util::llm_config("ollama", &fast.url(), "fake-chat", "fake-embed"));
    let summary = env.json(&["index", "--repo", r, "--json"]);
    let e = &summary["embeddings"];
    assert_eq!(e["state"], "ready", "{summary}");
    assert_eq!((e["files_embedded"].as_u64(), e["chunks"].as_u64()), (Some(10), Some(10)), "{e}");
}

#[test]
fn ctrl_c_drops_the_embedders_probe_of_a_model_still_loading() {
    // The probe before the first batch met a model still loading (20 s): the stop waited for it.
    use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
    let fake =
        FakeOllama::start(FakeOllamaOptions { embed_probe_delay_ms: 20_000, ..Default::default() }).expect("fake");
    let env = Env::new();
    env.write_config(&format!(
        "[llm]\nprovider = \"ollama\"\nbase_url = \"{}\"\ndefault_model = \"fake-chat\"\nembedding_model = \"fake-embed\"\nrequest_timeout_secs = 60\n",
        fake.url()
    ));
    let repo = env.repo("loading");
    for i in 0..3 {
        write(&repo, &format!("n{i}.md"), format!("# Note {i}\n\nword{i} topic{i}\n"));
    }
    let r = repo.to_str().unwrap();
    let mut server = Server::start(&env, &["serve", "--repo", r], &[]);
    eventually_sync("the probe in flight", &mut server, || fake.requests().iter().any(|(p, _)| p == "/api/embed"));
    signal(&server, libc::SIGINT);
    let started = std::time::Instant::now();
    let status = server.wait_exit(Duration::from_secs(30));
    let stderr = server.stderr.lock().unwrap().clone();
    assert!(status.success(), "{status:?}; {stderr}");
    assert!(started.elapsed() < Duration::from_secs(3), "stopped in {:?}; {stderr}", started.elapsed());
    let st = env.json(&["status", "--repo", r, "--json"]);
    assert!(st.to_string().contains("stopped for shutdown"), "status says the run stopped: {st}");
    let fast = FakeOllama::start(Default::default()).expect("fake");
    env.write_config(&crate::util::llm_config("ollama", &fast.url(), "fake-chat", "fake-embed"));
    let summary = env.json(&["index", "--repo", r, "--json"]);
    assert_eq!(summary["embeddings"]["state"], "ready", "the next run embeds: {summary}");
    assert_eq!(summary["embeddings"]["chunks"], 3, "{summary}");
}

/// Waits (at most 10 s) for `ready` while the server runs.
fn eventually_sync(what: &str, server: &mut Server, ready: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !ready() {
        assert!(server.child.try_wait().unwrap().is_none(), "the server ended: {}", server.stderr.lock().unwrap());
        assert!(std::time::Instant::now() < deadline, "no {what}: {}", server.stderr.lock().unwrap());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_second_ctrl_c_exits_at_once_with_status_130() {
    // A catch-up run held inside (a pause point: what a long step looks like): the first
    // Ctrl-C waits for the watcher to stop.
    let env = Env::new();
    let repo = env.repo("g");
    write(&repo, "app.py", "import util\n\ndef main():\n    return util.helper()\n");
    write(&repo, "util.py", "def helper():\n    return 1\n");
    let args = ["serve", "--repo", repo.to_str().unwrap()];
    let mut server = Server::start(&env, &args, &[("DOCDEX_TEST_PAUSE_AT", "before-graph-write")]);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !server.stderr.lock().unwrap().contains("paused at before-graph-write") {
        assert!(std::time::Instant::now() < deadline, "no pause: {}", server.stderr.lock().unwrap());
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(&server, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(500));
    assert!(server.child.try_wait().unwrap().is_none(), "the first Ctrl-C waits for the watcher");
    assert!(server.stderr.lock().unwrap().contains("Ctrl-C again to exit now"));
    signal(&server, libc::SIGINT);
    let status = server.wait_exit(Duration::from_secs(2));
    let stderr = server.stderr.lock().unwrap().clone();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("second signal; exiting now"), "{stderr}");
}

/// The OpenAPI document lists the minimum each integer input takes: read off the engine's
/// unsigned types it said `minimum: 0` for limits that answer 0 with `400 bad_request`. Every
/// narrowed input is found where the document lists it, and a few are sent one below it.
#[tokio::test]
async fn openapi_lists_the_minimum_each_integer_input_takes() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let c = client();
    let (_, doc) = json_of(c.get(server.url("/v1/openapi.json")).send().await.unwrap()).await;
    for (route, field, min, max) in docdex::server::openapi::RANGES {
        let ops = doc["paths"][*route].as_object().unwrap_or_else(|| panic!("no route {route}"));
        let (method, op) = ops.iter().next().unwrap();
        let schema = match method.as_str() {
            "get" => op["parameters"].as_array().unwrap().iter().find(|p| p["name"] == *field).map(|p| &p["schema"]),
            _ => {
                let body = &op["requestBody"]["content"]["application/json"]["schema"];
                let body = match body["$ref"].as_str() {
                    Some(r) => &doc["components"]["schemas"][r.rsplit('/').next().unwrap()],
                    None => body,
                };
                body["properties"].get(*field)
            }
        };
        let schema = schema.unwrap_or_else(|| panic!("{method} {route} lists no {field}"));
        assert_eq!(schema["minimum"], *min, "{route} {field}: {schema}");
        assert_eq!(schema.get("maximum").and_then(Value::as_u64), *max, "{route} {field}: {schema}");
    }
    for path in ["/v1/symbols?query=SessionStore&limit=0", "/v1/memory?limit=0", "/v1/dag/sessions?limit=0"] {
        let (status, v) = json_of(c.get(server.url(path)).send().await.unwrap()).await;
        assert_eq!((status, v["error"]["code"].as_str()), (400, Some("bad_request")), "{path}: {v}");
    }
    let below = [
        ("/v1/memory/recall", json!({"query": "x", "limit": 0})),
        ("/v1/context", json!({"task": "x", "budget": 199})),
    ];
    for (path, body) in below {
        let (status, v) = json_of(c.post(server.url(path)).json(&body).send().await.unwrap()).await;
        assert_eq!((status, v["error"]["code"].as_str()), (400, Some("bad_request")), "{path}: {v}");
    }
}

/// A folder of a repository named as the repository (an agent passing its working directory)
/// is answered with that repository: `serve` said the folder was "another repository" to
/// start `docdex serve --repo` on, the daemon to `POST /v1/initialize` it and MCP to call
/// `docdex_index` on it, each building a second index nested in the first.
#[tokio::test]
async fn a_folder_of_a_repository_named_as_the_repository_names_that_repository() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let root = repo.canonicalize().unwrap();
    let folder = root.join("src");
    let (root_s, folder_s) = (root.to_str().unwrap(), folder.to_str().unwrap());
    let c = client();
    let search = json!({"query": "session", "repo": folder_s});

    let server = Server::start(&env, &["serve", "--repo", root_s], &[]);
    let (s, v) = json_of(c.post(server.url("/v1/search")).json(&search).send().await.unwrap()).await;
    assert_eq!((s, v["error"]["code"].as_str()), (404, Some("unknown_repo")), "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains(&format!("is a folder of the repository this server serves, {root_s}")), "{message}");
    assert!(message.contains("`src/`") && !message.contains("serve --repo"), "{message}");
    drop(server);

    let daemon = Server::start(&env, &["daemon"], &[]);
    let (s, v) = json_of(c.post(daemon.url("/v1/search")).json(&search).send().await.unwrap()).await;
    assert_eq!((s, v["error"]["code"].as_str()), (409, Some("not_indexed")), "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains(&format!("name {root_s} as the repository")), "{message}");
    assert!(!message.contains("/v1/initialize"), "{message}");

    let url = daemon.url("/v1/mcp");
    let session = crate::server_util::mcp_session(&c, &url).await;
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "docdex_search", "arguments": {"query": "session", "project_root": folder_s}}});
    let body =
        crate::server_util::mcp_post(&c, &url, Some(&session), &call).send().await.unwrap().text().await.unwrap();
    assert!(body.contains("isError") && body.contains(&format!("name {root_s} as the repository")), "{body}");
    assert!(!body.contains("docdex_index"), "{body}");

    // `initialize` of the folder (an agent host's working directory) mounts the repository:
    // the folder's own mount said `indexing` for ever (its index can never be built) and took
    // a `max_repos` place, and every search was told to retry.
    let init = json!({"rootUri": format!("file://{folder_s}")});
    let (s, v) = json_of(c.post(daemon.url("/v1/initialize")).json(&init).send().await.unwrap()).await;
    assert_eq!((s, v["repo"].as_str()), (200, Some(root_s)), "{v}");
    assert!(v["status"] == "ready" || v["status"] == "stale", "searchable at once: {v}");
    let (s, v) = json_of(c.get(daemon.url("/v1/status")).send().await.unwrap()).await;
    let repos = v["repos"].as_array().unwrap();
    let mounted: Vec<&str> = repos.iter().filter_map(|r| r["mount"]["repo"].as_str()).collect();
    assert_eq!((s, mounted), (200, vec![root_s]), "{v}");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}, "rootUri": format!("file://{folder_s}")}});
    let r = crate::server_util::mcp_post(&c, &url, None, &init).send().await.unwrap();
    let session = r.headers().get("mcp-session-id").unwrap().to_str().unwrap().to_string();
    r.text().await.unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "docdex_search", "arguments": {"query": "session"}}});
    let body =
        crate::server_util::mcp_post(&c, &url, Some(&session), &call).send().await.unwrap().text().await.unwrap();
    assert!(!body.contains("isError\":true") && body.contains("session.rs"), "{body}");
}

/// Every file under `dir` whose name starts with `prefix`.
fn files_named(dir: &std::path::Path, prefix: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_named(&path, prefix));
        } else if entry.file_name().to_string_lossy().starts_with(prefix) {
            found.push(path);
        }
    }
    found
}

/// A page of another site can make an old browser (one sending neither `Origin` nor
/// `Sec-Fetch-Site`) send a GET: an `<img src>`, a link. So no GET the OpenAPI document lists
/// changes state: on the daemon, a GET naming an indexed repository (`?repo=`) reads its index
/// without mounting it (it mounted it: a keeper's catch-up run and watcher started, another
/// mount let go), and `GET /v1/map` for agents no one made up writes no cache file per name. A
/// POST still mounts on first use.
#[tokio::test]
async fn no_get_mounts_a_repository_or_writes_a_file_per_name_it_is_given() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let root = repo.to_str().unwrap().to_string();
    let daemon = Server::start(&env, &["daemon"], &[]);
    let c = client();
    let (_, doc) = json_of(c.get(daemon.url("/v1/openapi.json")).send().await.unwrap()).await;
    let gets: Vec<String> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(path, ops)| ops.get("get").is_some() && path.as_str() != "/sse")
        .map(|(path, _)| path.replace("{session}", "nope"))
        .collect();
    assert!(gets.len() >= 15 && gets.iter().any(|p| p == "/v1/symbols"), "{gets:?}");
    for path in &gets {
        let extra: &[(&str, &str)] = match path.as_str() {
            "/v1/symbols" => &[("query", "SessionStore")],
            "/v1/ast/search" => &[("kinds", "function_item")],
            "/v1/graph/impact" | "/v1/graph/tests" => &[("file", "src/parser.py")],
            "/v1/open" => &[("path", "README.md")],
            "/v1/map" => &[("agent_id", "made-up-1")],
            _ => &[],
        };
        let mut query = vec![("repo", root.as_str())];
        query.extend_from_slice(extra);
        let r = c.get(daemon.url(path)).query(&query).send().await.unwrap();
        // `/v1/models` may be 503: no model provider answers here.
        assert_ne!(r.status().as_u16(), 500, "GET {path}");
    }
    for agent in ["made-up-2", "made-up-3"] {
        let r = c.get(daemon.url("/v1/map")).query(&[("repo", root.as_str()), ("agent_id", agent)]).send().await;
        let (s, v) = json_of(r.unwrap()).await;
        assert_eq!((s, v["agent_id"].as_str()), (200, Some(agent)), "{v}");
        assert!(v["notices"][0].as_str().unwrap().contains(&format!("no agent {agent} in profile memory")), "{v}");
    }
    let (_, health) = json_of(c.get(daemon.url("/healthz")).send().await.unwrap()).await;
    assert_eq!(health["repos_mounted"], 0, "a GET mounted the repository: {health}");
    assert_eq!(files_named(&env.home(), "made-up"), Vec::<std::path::PathBuf>::new());
    // Read, not refused: the index answers, its watcher `stopped` as no keeper runs for it.
    let (s, v) = json_of(
        c.get(daemon.url("/v1/symbols"))
            .query(&[("repo", root.as_str()), ("query", "SessionStore")])
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    assert!(v.to_string().contains("SessionStore"), "{v}");
    let r = c.get(daemon.url("/v1/search")).query(&[("repo", root.as_str()), ("q", "session store")]).send();
    let (s, v) = json_of(r.await.unwrap()).await;
    assert_eq!(s, 200, "{v}");
    assert!(v["results"].as_array().is_some_and(|r| !r.is_empty()), "{v}");
    let (s, v) = json_of(c.get(daemon.url("/v1/status")).query(&[("repo", &root)]).send().await.unwrap()).await;
    assert_eq!(s, 200, "{v}");
    let entry = &v["repos"][0];
    assert_eq!(
        (entry["mount"]["watcher"]["state"].as_str(), entry["mount"]["status"].as_str()),
        (Some("stopped"), Some("ready")),
        "{v}"
    );
    assert!(entry["index"]["documents"].as_u64().unwrap_or(0) > 0, "{v}");
    // What changes state is POST only: a GET of it is 405 saying to POST it.
    let posts: Vec<&String> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, ops)| ops.get("post").is_some() && ops.get("get").is_none())
        .map(|(path, _)| path)
        .collect();
    assert!(posts.iter().any(|p| *p == "/v1/memory/store") && posts.iter().any(|p| *p == "/v1/initialize"));
    for path in posts {
        let r = c.get(daemon.url(path)).query(&[("repo", root.as_str())]).send().await.unwrap();
        let (s, v) = json_of(r).await;
        assert_eq!(s, 405, "GET {path}: {v}");
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(&format!("{path} does not answer GET")) && message.contains("send a POST"), "{v}");
    }
    // A POST naming it mounts it, as before.
    let r = c.post(daemon.url("/v1/search")).json(&json!({"query": "dashboard", "repo": root})).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let (_, health) = json_of(c.get(daemon.url("/healthz")).send().await.unwrap()).await;
    assert_eq!(health["repos_mounted"], 1, "{health}");
}

/// Under `-v` every line logged during a request carries the request's span, and tower-http's
/// span held the whole URI: a token a client put in the query (`?api_key=...`) was in the log,
/// the failure line among them, which names the path only.
#[tokio::test]
async fn a_query_string_never_reaches_the_log() {
    let env = Env::new();
    let daemon = Server::start(&env, &["-v", "daemon"], &[]);
    let c = client();
    for path in ["/healthz?token=QuerySecret1", "/v1/models?api_key=QuerySecret2"] {
        c.get(daemon.url(path)).send().await.unwrap();
    }
    let log = || daemon.stderr.lock().unwrap().clone();
    eventually("the requests are logged", || async { log().contains("path=/v1/models") }).await;
    let log = log();
    assert!(log.contains("path=/healthz"), "{log}");
    assert!(!log.contains("QuerySecret"), "{log}");
}

/// tour32 F5: a served repository whose folder was deleted still read `ready` in `/v1/status`.
#[tokio::test]
async fn a_served_repository_whose_folder_is_deleted_reads_missing() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let c = client();
    eventually("catch-up done", || async {
        let v: Value = c.get(server.url("/v1/status")).send().await.unwrap().json().await.unwrap();
        v["repos"][0]["mount"]["status"] == "ready"
    })
    .await;
    std::fs::remove_dir_all(&repo).unwrap();
    eventually("missing", || async {
        let (s, v) = json_of(c.get(server.url("/v1/status")).send().await.unwrap()).await;
        s == 200 && v["repos"][0]["mount"]["status"] == "missing"
    })
    .await;
}

/// tour36 F1: a served repository whose folder was moved away and replaced by a link to
/// another folder was followed into the link's target: its files were indexed, searched and
/// served, the target was registered as a repository, and once the real folder was back the
/// watcher stayed on the target while `/v1/status` read `ready`. Now the mount reads
/// `missing` while the link stands, nothing of the target is read, and watching resumes on the
/// folder itself.
#[tokio::test]
async fn a_served_repository_swapped_for_a_link_reads_missing_and_serves_nothing_outside() {
    let env = Env::new();
    let repo = indexed_repo(&env, "r");
    let outside = env.dir.path().join("outside");
    write(&outside, "secret.py", "def kestrel_password():\n    return 'hunter2'\n");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let c = client();
    let status = || async {
        let v: Value = c.get(server.url("/v1/status")).send().await.unwrap().json().await.unwrap();
        v["repos"][0]["mount"]["status"].as_str().unwrap_or_default().to_string()
    };
    let found = |query: &'static str, path: &'static str| {
        let c = c.clone();
        let url = server.url("/v1/search");
        async move {
            let v: Value = c.post(url).json(&json!({ "query": query })).send().await.unwrap().json().await.unwrap();
            v["results"].as_array().is_some_and(|a| a.iter().any(|h| h["path"] == path))
        }
    };
    eventually("catch-up done", || async { status().await == "ready" }).await;
    let aside = env.dir.path().join("r.real");
    std::fs::rename(&repo, &aside).unwrap();
    std::os::unix::fs::symlink(&outside, &repo).unwrap();
    eventually("missing while the link stands", || async { status().await == "missing" }).await;
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(!found("kestrel password", "secret.py").await, "a file of the link's target was indexed");
    let (s, v) = json_of(c.get(server.url("/v1/open?path=secret.py")).send().await.unwrap()).await;
    assert!(s >= 400, "a file of the link's target was served: {v}");
    assert!(!v.to_string().contains("hunter2"), "{v}");
    std::fs::remove_file(&repo).unwrap();
    std::fs::rename(&aside, &repo).unwrap();
    write(&repo, "src/after.rs", "fn ptarmigan_return() {}\n");
    eventually("the folder itself is watched again", || async { found("ptarmigan return", "src/after.rs").await })
        .await;
    assert_eq!(status().await, "ready");
    let listed = env.json(&["repo", "list", "--json"]);
    let repos = listed["repos"].as_array().unwrap();
    assert_eq!(repos.len(), 1, "the link's target was registered: {listed}");
}
