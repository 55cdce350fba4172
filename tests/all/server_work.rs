//! The server's bound on engine work (`[server] max_concurrent_work`) and the cancellation of
//! work whose client is gone: an HTTP client hanging up, an MCP request cancelled with
//! `notifications/cancelled`, an MCP client hanging up on its POST. The real binary on
//! loopback, with one work slot and the fake Ollama behind, its embedder silent for ten minutes
//! (`/v1/memory/store` and `docdex_memory_save` wait on it). A client that stays connected is
//! answered `504 deadline_exceeded` at `[server] request_timeout_secs`, its work stopped.

use crate::server_util::{eventually, mcp_post, mcp_session, Server};
use crate::util::{sample_repo, Env};
use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// A server with one work slot, a 1.5 s wait for it, and an embedder that never answers a
/// one-text request. Bind them in this order, so the server is dropped first: the fake's
/// handler waits on the server's request until the server is gone.
fn one_slot_server(env: &Env) -> (FakeOllama, Server) {
    one_slot_server_with(env, "")
}

/// [`one_slot_server`] with more `[server]` settings (`more`, whole lines).
fn one_slot_server_with(env: &Env, more: &str) -> (FakeOllama, Server) {
    let fake = FakeOllama::start(FakeOllamaOptions { embed_probe_delay_ms: 600_000, ..Default::default() }).unwrap();
    env.write_config(&format!(
        "[llm]\nprovider = \"ollama\"\nbase_url = \"{}\"\ndefault_model = \"fake-chat\"\nembedding_model = \"fake-embed\"\nrequest_timeout_secs = 120\n\n[server]\nmax_concurrent_work = 1\nwork_wait_ms = 1500\n{more}",
        fake.url()
    ));
    let repo = env.repo("r");
    sample_repo(&repo);
    let server = Server::start(env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    (fake, server)
}

fn embeds(fake: &FakeOllama) -> usize {
    fake.requests().iter().filter(|(path, _)| path.contains("embed")).count()
}

/// `GET /v1/memory` (no model involved) answered within the slot wait: the one slot is free.
async fn slot_is_free(server: &Server) -> bool {
    let c = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    let r = c.get(server.url("/v1/memory")).send().await.unwrap();
    r.status().as_u16() == 200
}

/// Starts a memory write that waits on the silent embedder, from a client that gives up after
/// `give_up`; returns once the embedder has the request.
async fn abandoned_memory_write(server: &Server, fake: &FakeOllama, give_up: Duration) {
    let before = embeds(fake);
    let c = reqwest::Client::builder().timeout(give_up).build().unwrap();
    let url = server.url("/v1/memory/store");
    let sent =
        tokio::spawn(async move { c.post(url).json(&json!({"content": "the cache is flushed hourly"})).send().await });
    eventually("the memory write waits on the embedder", || std::future::ready(embeds(fake) > before)).await;
    assert!(sent.await.unwrap().is_err(), "the client gave up before any answer");
}

#[tokio::test]
async fn engine_work_past_the_slots_is_refused_503_busy_with_retry_after_and_status_still_answers() {
    let env = Env::new();
    let (fake, server) = one_slot_server(&env);
    let c = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
    let url = server.url("/v1/memory/store");
    let holder = c.post(url).json(&json!({"content": "the cache is flushed hourly"})).send();
    let holder = tokio::spawn(holder);
    eventually("the memory write holds the slot", || std::future::ready(embeds(&fake) > 0)).await;

    let started = Instant::now();
    let r = c.get(server.url("/v1/memory")).send().await.unwrap();
    let waited = started.elapsed();
    assert_eq!(r.status().as_u16(), 503);
    assert_eq!(r.headers().get("retry-after").and_then(|v| v.to_str().ok()), Some("2"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "busy", "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("max_concurrent_work"), "{v}");
    assert!(waited >= Duration::from_millis(1400) && waited < Duration::from_secs(5), "waited {waited:?}");

    for path in ["/healthz", "/v1/status"] {
        let started = Instant::now();
        let r = c.get(server.url(path)).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 200, "{path}");
        assert!(started.elapsed() < Duration::from_secs(1), "{path} waited {:?} for a slot", started.elapsed());
    }
    holder.abort();
}

/// A client hanging up stops its engine work: the memory write's wait on the embedder ends and
/// the slot is free for the next request. It ran to the embedder's answer (ten minutes here,
/// `[llm] request_timeout_secs` at most), holding the slot.
#[tokio::test]
async fn an_http_client_hanging_up_stops_its_engine_work_and_frees_its_slot() {
    let env = Env::new();
    let (fake, server) = one_slot_server(&env);
    abandoned_memory_write(&server, &fake, Duration::from_millis(800)).await;
    assert!(slot_is_free(&server).await, "the abandoned write still holds the only slot");
}

fn memory_save(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "docdex_memory_save", "arguments": {"content": "the cache is flushed hourly"}}})
}

#[tokio::test]
async fn an_mcp_tool_call_cancelled_by_its_client_stops_and_frees_its_slot() {
    let env = Env::new();
    let (fake, server) = one_slot_server(&env);
    let c = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
    let url = server.url("/v1/mcp");
    let session = mcp_session(&c, &url).await;
    let call = tokio::spawn(mcp_post(&c, &url, Some(&session), &memory_save(7)).send());
    eventually("the tool call waits on the embedder", || std::future::ready(embeds(&fake) > 0)).await;
    assert!(!slot_is_free(&server).await, "the tool call holds the only slot");

    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}});
    assert_eq!(mcp_post(&c, &url, Some(&session), &cancel).send().await.unwrap().status().as_u16(), 202);
    assert!(slot_is_free(&server).await, "the cancelled tool call still holds the only slot");
    call.abort();
}

/// A client that closes its POST before the answer cancels its request, as if it had sent
/// `notifications/cancelled` (rmcp kept running it for nobody).
#[tokio::test]
async fn an_mcp_client_hanging_up_on_its_tool_call_stops_it_and_frees_its_slot() {
    let env = Env::new();
    let (fake, server) = one_slot_server(&env);
    let c = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
    let url = server.url("/v1/mcp");
    let session = mcp_session(&c, &url).await;
    let impatient = reqwest::Client::builder().timeout(Duration::from_millis(800)).build().unwrap();
    let call = mcp_post(&impatient, &url, Some(&session), &memory_save(3)).send().await;
    // The answer stream's headers may come before the answer; the body never does.
    if let Ok(r) = call {
        assert!(r.text().await.is_err(), "no answer came");
    }
    assert!(embeds(&fake) > 0, "the tool call reached the embedder");
    assert!(slot_is_free(&server).await, "the abandoned tool call still holds the only slot");
}

/// The answer to MCP request `id` in an answer stream's `data:` lines.
fn rpc_answer(stream: &str, id: u64) -> Value {
    let mut answers =
        stream.lines().filter_map(|l| l.strip_prefix("data: ")).filter_map(|d| serde_json::from_str(d).ok());
    answers.find(|v: &Value| v["id"] == id).unwrap_or_else(|| panic!("no answer to {id} in {stream}"))
}

/// A client that stays connected no longer waits on stuck engine work: at `[server]
/// request_timeout_secs` (2 s here) the memory write is answered `504 deadline_exceeded`
/// naming the limit and the setting, its wait on the embedder is stopped, and the one slot
/// serves the next request. Before, it waited on the silent embedder for ten minutes (`[llm]
/// request_timeout_secs` at most), holding the slot.
#[tokio::test]
async fn engine_work_past_the_request_deadline_is_504_deadline_exceeded_and_frees_its_slot() {
    let env = Env::new();
    let (fake, server) = one_slot_server_with(&env, "request_timeout_secs = 2\n");
    let c = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
    let started = Instant::now();
    let r = c.post(server.url("/v1/memory/store")).json(&json!({"content": "the cache is flushed hourly"})).send();
    let r = r.await.unwrap();
    let waited = started.elapsed();
    assert_eq!(r.status().as_u16(), 504);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "deadline_exceeded", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("deadline of 2 s") && message.contains("`[server] request_timeout_secs`"), "{v}");
    assert!(waited >= Duration::from_secs(2) && waited < Duration::from_secs(6), "answered after {waited:?}");
    assert_eq!(embeds(&fake), 1, "the write waited on the embedder");
    assert!(slot_is_free(&server).await, "the stopped write still holds the only slot");
}

/// The same over MCP: the tool call is answered a tool error `deadline_exceeded: ...` at the
/// deadline and its slot is free. (A server of its own: the engine remembers the embedder that
/// did not answer for a while, and a second write would not wait on it.)
#[tokio::test]
async fn an_mcp_tool_call_past_the_request_deadline_is_a_deadline_exceeded_tool_error() {
    let env = Env::new();
    let (fake, server) = one_slot_server_with(&env, "request_timeout_secs = 2\n");
    let c = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
    let url = server.url("/v1/mcp");
    let session = mcp_session(&c, &url).await;
    let started = Instant::now();
    let stream = mcp_post(&c, &url, Some(&session), &memory_save(9)).send().await.unwrap().text().await.unwrap();
    let waited = started.elapsed();
    let result = &rpc_answer(&stream, 9)["result"];
    assert_eq!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("deadline_exceeded: ") && text.contains("request_timeout_secs"), "{text}");
    assert!(waited >= Duration::from_secs(2) && waited < Duration::from_secs(6), "answered after {waited:?}");
    assert_eq!(embeds(&fake), 1, "the tool call waited on the embedder");
    assert!(slot_is_free(&server).await, "the stopped tool call still holds the only slot");
}

/// A test run has its own bound (`timeout_secs`), so the server's deadline does not cut it: with
/// `request_timeout_secs = 1`, a 3 s suite over `docdex_run_tests` answers its result. Out of
/// range (0), the server refuses to start.
#[tokio::test]
async fn a_test_run_is_bounded_by_its_own_timeout_not_the_request_deadline() {
    let env = Env::new();
    let repo = env.repo("suite");
    crate::util::write(&repo, "tests/x.txt", "");
    env.write_config("[tests]\ncommand = \"sleep 3\"\n\n[server]\nrequest_timeout_secs = 1\n");
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let c = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
    let url = server.url("/v1/mcp");
    let session = mcp_session(&c, &url).await;
    let call = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "docdex_run_tests", "arguments": {"timeout_secs": 30}}});
    let started = Instant::now();
    let stream = mcp_post(&c, &url, Some(&session), &call).send().await.unwrap().text().await.unwrap();
    let result = &rpc_answer(&stream, 4)["result"];
    assert_eq!(result["isError"], false, "{result}");
    assert!(started.elapsed() >= Duration::from_secs(3), "the suite ran: {:?}", started.elapsed());
    drop(server);

    let env = Env::new();
    env.write_config("[server]\nrequest_timeout_secs = 0\n");
    let repo = env.repo("r");
    sample_repo(&repo);
    let out = env.run(&["serve", "--repo", repo.to_str().unwrap(), "--no-watch", "--bind", "127.0.0.1:0"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[server] request_timeout_secs = 0 is out of range: it takes 1 to 86400"), "{stderr}");
}

/// A chat holds a work slot for its whole generation: with `max_concurrent_work = 1`, a chat
/// waiting on its model leaves gated requests `503 busy`, while health and status answer at
/// once; the slot is free again once the chat's client hangs up. Before, chats had only their
/// own slots, beside the work gate, and `max_concurrent_work` did not bound them.
#[tokio::test]
async fn a_chat_holds_a_work_slot_while_it_generates_and_health_and_status_never_wait() {
    let env = Env::new();
    let fake = FakeOllama::start(FakeOllamaOptions { first_token_delay_ms: 600_000, ..Default::default() }).unwrap();
    env.write_config(&format!(
        "[llm]\nprovider = \"ollama\"\nbase_url = \"{}\"\ndefault_model = \"fake-chat\"\nembedding_model = \"fake-embed\"\nrequest_timeout_secs = 120\n\n[server]\nmax_concurrent_work = 1\nwork_wait_ms = 1500\n",
        fake.url()
    ));
    let repo = env.repo("r");
    sample_repo(&repo);
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let c = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
    let chat = c
        .post(server.url("/v1/chat/completions"))
        .json(&json!({"messages": [{"role": "user", "content": "how are sessions expired?"}], "stream": true}))
        .send();
    let chat = tokio::spawn(chat);
    eventually("the chat waits on its model", || std::future::ready(fake.open_streams() > 0)).await;

    let started = Instant::now();
    let r = c.get(server.url("/v1/memory")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 503, "a gated request found a free slot beside the chat");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "busy", "{v}");
    assert!(started.elapsed() >= Duration::from_millis(1400), "waited {:?}", started.elapsed());
    for path in ["/healthz", "/v1/status"] {
        let started = Instant::now();
        let r = c.get(server.url(path)).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 200, "{path}");
        assert!(started.elapsed() < Duration::from_secs(1), "{path} waited {:?}", started.elapsed());
    }
    // A second chat finds the one slot taken: refused after the wait, never queued for ever.
    let r = c
        .post(server.url("/v1/chat/completions"))
        .json(&json!({"messages": [{"role": "user", "content": "and tokens?"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 503);
    chat.abort();
    eventually("the abandoned chat frees the slot", || slot_is_free(&server)).await;
}

/// An MCP `initialize` request (id 1).
fn initialize_request() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
}

/// A server over a sample repository with `[server] max_mcp_sessions = cap`, and a client with
/// a 30 s timeout. The home is returned to be kept while the server runs.
fn capped_server(cap: u32) -> (Env, Server, reqwest::Client) {
    let env = Env::new();
    env.write_config(&format!("[server]\nmax_mcp_sessions = {cap}\n"));
    let repo = env.repo("r");
    sample_repo(&repo);
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
    (env, server, client)
}

/// `[server] max_mcp_sessions` bounds live MCP sessions (it was a fixed 128): past it the
/// least recently used session that never sent a request is ended (404 `-32001` on its next
/// request), sessions in use are kept, and when all are in use a new `initialize` is 503
/// `-32000` naming the setting; `/healthz` counts them. Out of range, the server refuses to start.
#[tokio::test]
async fn max_mcp_sessions_caps_live_sessions_evicting_idle_ones_then_refusing() {
    let (_env, server, c) = capped_server(3);
    let url = server.url("/v1/mcp");
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let used = |session: String| {
        let req = mcp_post(&c, &url, Some(&session), &list);
        async move {
            let r = req.send().await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    let live = || async {
        let v: Value = c.get(server.url("/healthz")).send().await.unwrap().json().await.unwrap();
        v["mcp_sessions"].as_u64()
    };
    let working = mcp_session(&c, &url).await;
    assert_eq!(used(working.clone()).await.0, 200);
    let idle = [mcp_session(&c, &url).await, mcp_session(&c, &url).await];
    // An unused session is ended for a new one only after its grace (5 s since its last message).
    tokio::time::sleep(Duration::from_millis(5_500)).await;
    let newest = mcp_session(&c, &url).await;
    assert_eq!(live().await, Some(3));
    let (status, body) = used(idle[0].clone()).await;
    assert_eq!(status, 404, "the least recently used idle session was ended: {body}");
    assert!(body.contains("-32001"), "{body}");
    for s in [&working, &idle[1], &newest] {
        assert_eq!(used(s.clone()).await.0, 200, "a session within the cap still answers");
    }

    // All three in use: a new one is refused, saying which setting.
    let init = initialize_request();
    let r = mcp_post(&c, &url, None, &init).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 503);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"].as_i64(), Some(-32000), "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("too many MCP sessions: all 3 are in use (`[server] max_mcp_sessions`)"), "{v}");
    assert_eq!(live().await, Some(3));
    drop(server);
    drop(_env);

    let env = Env::new();
    env.write_config("[server]\nmax_mcp_sessions = 0\n");
    let repo = env.repo("r");
    sample_repo(&repo);
    let out = env.run(&["serve", "--repo", repo.to_str().unwrap(), "--no-watch", "--bind", "127.0.0.1:0"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[server] max_mcp_sessions = 0 is out of range: it takes 1 to 128"), "{stderr}");
}

#[tokio::test]
async fn clients_starting_at_once_past_the_session_cap_are_refused_at_initialize_not_evicted_after() {
    let (_env, server, c) = capped_server(3);
    let url = server.url("/v1/mcp");
    let init = initialize_request();
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    // Eight clients initialize one after another, as fast as they can, then each makes its
    // first request. Each initialize past the cap ended the oldest fresh session: five got
    // `200` at initialize and then `404` "ended or expired" on their first request.
    let mut sessions = Vec::new();
    let mut refused = 0;
    for _ in 0..8 {
        let r = mcp_post(&c, &url, None, &init).send().await.unwrap();
        match r.status().as_u16() {
            200 => sessions.push(r.headers()["mcp-session-id"].to_str().unwrap().to_string()),
            503 => {
                let v: Value = r.json().await.unwrap();
                assert!(v["error"]["message"].as_str().unwrap().contains("opened in the last 5 s"), "{v}");
                refused += 1;
            }
            other => panic!("initialize answered {other}: {}", r.text().await.unwrap()),
        }
    }
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    for s in &sessions {
        let r = mcp_post(&c, &url, Some(s), &initialized).send().await.unwrap();
        assert_eq!(
            r.status().as_u16(),
            202,
            "a session answered 200 at initialize was ended: {}",
            r.text().await.unwrap()
        );
        let r = mcp_post(&c, &url, Some(s), &list).send().await.unwrap();
        assert_eq!(
            r.status().as_u16(),
            200,
            "a session answered 200 at initialize was ended: {}",
            r.text().await.unwrap()
        );
    }
    assert_eq!((sessions.len(), refused), (3, 5));
}
