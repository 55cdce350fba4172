//! The server under pressure and at its edges, as a client meets it: slow and abandoned chats,
//! stalled request bodies, shutdown with a stream open, a model failing mid-answer. The real
//! binary on loopback, the fake Ollama (slowed, or silent) behind chat.

use crate::server_util::{eventually, Server};
use crate::util::{sample_repo, Env};
use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn indexed_repo(env: &Env) -> std::path::PathBuf {
    let repo = env.repo("r");
    sample_repo(&repo);
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    repo
}

/// The fake as the model server, with a request timeout long enough that a silent model
/// stays silent for the whole test.
fn patient_llm_config(url: &str) -> String {
    format!(
        "[llm]\nprovider = \"ollama\"\nbase_url = \"{url}\"\ndefault_model = \"fake-chat\"\nembedding_model = \"fake-embed\"\nrequest_timeout_secs = 120\n"
    )
}

/// A model that sends its headers and then nothing for ten minutes.
fn silent_model() -> FakeOllama {
    FakeOllama::start(FakeOllamaOptions { first_token_delay_ms: 600_000, ..Default::default() }).unwrap()
}

fn chat_body(stream: bool) -> Value {
    json!({"stream": stream, "messages": [{"role": "user", "content": "where are stale sessions expired?"}]})
}

fn cores() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2)
}

#[tokio::test]
async fn slow_chats_never_make_search_symbols_or_status_wait() {
    let env = Env::new();
    let fake = silent_model();
    env.write_config(&patient_llm_config(&fake.url()));
    let repo = indexed_repo(&env);
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let c = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
    // More chats than the server had blocking threads before the gate.
    let slots = cores().max(2);
    let n = (2 * cores()).max(4) + 2;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut chats = Vec::new();
    for _ in 0..n {
        let (c, url, tx) = (c.clone(), server.url("/v1/chat/completions"), tx.clone());
        chats.push(tokio::spawn(async move {
            let started = Instant::now();
            let r = c.post(url).json(&chat_body(false)).send().await.unwrap();
            let retry = r.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_string);
            let status = r.status().as_u16();
            let v: Value = r.json().await.unwrap();
            let _ = tx.send((status, retry, v, started.elapsed()));
        }));
    }
    eventually("the model generating for every chat slot", || std::future::ready(fake.open_streams() >= slots)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    for (method, path) in [("POST", "/v1/search"), ("GET", "/v1/symbols?query=SessionStore"), ("GET", "/v1/status")] {
        let started = Instant::now();
        let r = match method {
            "POST" => c.post(server.url(path)).json(&json!({"query": "session store"})).send().await.unwrap(),
            _ => c.get(server.url(path)).send().await.unwrap(),
        };
        assert_eq!(r.status().as_u16(), 200, "{path}: {}", r.text().await.unwrap());
        assert!(started.elapsed() < Duration::from_secs(3), "{path} waited {:?} behind chats", started.elapsed());
    }
    assert_eq!(fake.open_streams(), slots, "no more chats generate than there are slots");

    // The chats beyond the slots are refused, not queued forever: 503 busy with Retry-After.
    for _ in 0..n - slots {
        let (status, retry, v, took) = tokio::time::timeout(Duration::from_secs(30), rx.recv()).await.unwrap().unwrap();
        assert_eq!((status, v["error"]["code"].as_str()), (503, Some("busy")), "{v}");
        assert!(retry.is_some_and(|r| r.parse::<u64>().is_ok()), "Retry-After");
        assert!(took >= Duration::from_secs(9), "a chat waits for a slot before it is refused: {took:?}");
    }
    for chat in chats {
        chat.abort();
    }
    drop(server);
}

/// A chat waiting for a slot when the server is told to stop is answered at once with `503
/// shutting_down` and no `Retry-After` (it waited on, then got `busy` with advice to retry).
#[tokio::test]
async fn a_chat_waiting_for_a_slot_at_sigterm_is_told_the_server_is_shutting_down() {
    let env = Env::new();
    let fake = silent_model();
    env.write_config(&patient_llm_config(&fake.url()));
    let repo = indexed_repo(&env);
    let mut server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let c = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
    let slots = cores().max(2);
    let mut generating = Vec::new();
    for _ in 0..slots {
        generating.push(tokio::spawn(c.post(server.url("/v1/chat/completions")).json(&chat_body(false)).send()));
    }
    eventually("the model generating for every chat slot", || std::future::ready(fake.open_streams() >= slots)).await;
    let waiting = tokio::spawn(c.post(server.url("/v1/chat/completions")).json(&chat_body(false)).send());
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.terminate();
    let signalled = Instant::now();
    let r = waiting.await.unwrap().unwrap();
    assert!(signalled.elapsed() < Duration::from_secs(3), "answered after {:?}", signalled.elapsed());
    assert_eq!(r.status().as_u16(), 503);
    assert!(r.headers().get("retry-after").is_none(), "no advice to retry a server that is stopping");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "shutting_down", "{v}");
    for chat in generating {
        chat.abort();
    }
    assert!(server.wait_exit(Duration::from_secs(15)).success());
}

/// Sends `head_and_body` on a fresh connection and reads until the server closes it (or
/// `timeout`): the response text and how long the server took to close.
fn send_and_read(addr: &str, head_and_body: &str, timeout: Duration) -> (String, Duration) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(timeout)).unwrap();
    let started = Instant::now();
    s.write_all(head_and_body.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    (String::from_utf8_lossy(&out).into_owned(), started.elapsed())
}

#[test]
fn a_stalled_request_body_is_answered_408_and_its_connection_closed() {
    let env = Env::new();
    let repo = indexed_repo(&env);
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let head = "POST /v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"query\":";
    let (resp, took) = send_and_read(&server.addr, head, Duration::from_secs(40));
    assert!(resp.starts_with("HTTP/1.1 408"), "{resp}");
    assert!(resp.contains("\"code\":\"request_timeout\""), "the error contract: {resp}");
    assert!(took >= Duration::from_secs(9) && took < Duration::from_secs(20), "closed after {took:?}");
}

#[test]
fn half_sent_heads_at_the_connection_cap_cannot_delay_healthz() {
    use std::io::Write;
    let env = Env::new();
    let repo = indexed_repo(&env);
    // 256 descriptors: the server keeps 192 for itself, so 64 connections are the cap.
    let mut cmd = std::process::Command::new("sh");
    cmd.args(["-c", "ulimit -n 256 && exec \"$0\" \"$@\"", env!("CARGO_BIN_EXE_docdex")]);
    cmd.args(["serve", "--repo", repo.to_str().unwrap(), "--no-watch", "--bind", "127.0.0.1:0"]);
    let server = Server::spawn(&env, cmd, &[]);
    let mut slow = Vec::new();
    for _ in 0..100 {
        let mut s = std::net::TcpStream::connect(&server.addr).unwrap();
        s.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n").unwrap();
        slow.push(s);
    }
    let started = Instant::now();
    let (resp, _) = send_and_read(
        &server.addr,
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        Duration::from_secs(20),
    );
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    assert!(started.elapsed() < Duration::from_secs(3), "/healthz took {:?}", started.elapsed());
    drop(slow);
}

#[tokio::test]
async fn a_client_hanging_up_while_the_model_is_silent_stops_the_model() {
    let env = Env::new();
    let fake = silent_model();
    env.write_config(&patient_llm_config(&fake.url()));
    let repo = indexed_repo(&env);
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    for stream in [false, true] {
        let (c, url) = (reqwest::Client::new(), server.url("/v1/chat/completions"));
        let asking = tokio::spawn(async move { c.post(url).json(&chat_body(stream)).send().await });
        eventually("the model asked", || std::future::ready(fake.open_streams() == 1)).await;
        // The client gives up (curl -m, a closed tab): its connection closes.
        asking.abort();
        let _ = asking.await;
        let gone = Instant::now();
        eventually("docdex to hang up on the model", || std::future::ready(fake.open_streams() == 0)).await;
        assert!(gone.elapsed() < Duration::from_secs(3), "stream {stream}: the model ran {:?} on", gone.elapsed());
    }
}

#[tokio::test]
async fn sigterm_lets_a_streamed_answer_go_on_then_ends_it_with_an_error_and_done() {
    use futures::StreamExt;
    let env = Env::new();
    // About a dozen pieces, one a second: longer than the shutdown grace.
    let fake = FakeOllama::start(FakeOllamaOptions { token_delay_ms: 1000, ..Default::default() }).unwrap();
    env.write_config(&patient_llm_config(&fake.url()));
    let repo = indexed_repo(&env);
    let mut server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let c = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
    let resp = c.post(server.url("/v1/chat/completions")).json(&chat_body(true)).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let mut body = resp.bytes_stream();
    let mut text = String::from_utf8_lossy(&body.next().await.unwrap().unwrap()).into_owned();
    server.terminate();
    let signalled = Instant::now();
    let mut after_signal = 0;
    while let Some(Ok(bytes)) = body.next().await {
        after_signal += String::from_utf8_lossy(&bytes).matches("chat.completion.chunk").count();
        text.push_str(&String::from_utf8_lossy(&bytes));
    }
    let data: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("data: ")).collect();
    assert_eq!(data.last(), Some(&"[DONE]"), "{text}");
    let error: Value = serde_json::from_str(data[data.len() - 2]).unwrap();
    assert_eq!(error["error"]["code"], "shutting_down", "{text}");
    // The stopped turn's extension, as the non-streamed reply and a model failing carry it.
    assert!(error["docdex"]["session_id"].as_str().is_some_and(|s| !s.is_empty()), "{text}");
    assert_eq!(error["docdex"]["llm"]["status"], "stopped", "{text}");
    assert!(after_signal >= 3, "tokens kept coming during the grace period: {text}");
    assert!(signalled.elapsed() >= Duration::from_secs(6), "cut after {:?}", signalled.elapsed());
    assert!(server.wait_exit(Duration::from_secs(10)).success());
}

/// A non-streamed chat cut by SIGTERM is answered like a model failing part-way: `503
/// shutting_down` with the text that arrived as `error.partial_answer` and the `docdex`
/// extension (it was the bare error, the partial answer lost).
#[tokio::test]
async fn sigterm_cutting_a_non_streamed_answer_keeps_the_partial_text() {
    let env = Env::new();
    let fake = FakeOllama::start(FakeOllamaOptions { token_delay_ms: 1000, ..Default::default() }).unwrap();
    env.write_config(&patient_llm_config(&fake.url()));
    let repo = indexed_repo(&env);
    let mut server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let c = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
    let ask = tokio::spawn(c.post(server.url("/v1/chat/completions")).json(&chat_body(false)).send());
    tokio::time::sleep(Duration::from_secs(2)).await;
    server.terminate();
    let r = ask.await.unwrap().unwrap();
    assert_eq!(r.status().as_u16(), 503);
    assert!(r.headers().get("retry-after").is_none());
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "shutting_down", "{v}");
    let partial = v["error"]["partial_answer"].as_str().unwrap_or_else(|| panic!("the partial answer: {v}"));
    assert!(partial.starts_with("FAKE"), "{v}");
    assert!(v["docdex"]["session_id"].as_str().is_some_and(|s| !s.is_empty()), "{v}");
    assert_eq!(v["docdex"]["llm"]["status"], "stopped", "{v}");
    assert!(server.wait_exit(Duration::from_secs(10)).success());
}

#[tokio::test]
async fn a_model_failing_mid_answer_never_looks_finished_and_keeps_the_partial_text() {
    let env = Env::new();
    let fake = FakeOllama::start(FakeOllamaOptions { cut_after_pieces: 3, ..Default::default() }).unwrap();
    env.write_config(&patient_llm_config(&fake.url()));
    let repo = indexed_repo(&env);
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let c = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();

    let text = c.post(server.url("/v1/chat/completions")).json(&chat_body(true)).send().await.unwrap();
    assert_eq!(text.status().as_u16(), 200);
    let text = text.text().await.unwrap();
    let data: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("data: ")).collect();
    assert_eq!(data.last(), Some(&"[DONE]"), "{text}");
    let error: Value = serde_json::from_str(data[data.len() - 2]).unwrap();
    assert!(error["error"]["code"].as_str().is_some_and(|c| !c.is_empty()), "the error event comes last: {text}");
    assert!(!text.contains("\"finish_reason\":\"stop\""), "no normal end after the error: {text}");
    assert!(text.contains("FAKE "), "the tokens before the failure were streamed: {text}");

    let r = c.post(server.url("/v1/chat/completions")).json(&chat_body(false)).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 503);
    let v: Value = r.json().await.unwrap();
    let partial = v["error"]["partial_answer"].as_str().unwrap_or_else(|| panic!("the partial answer: {v}"));
    assert!(partial.starts_with("FAKE ANSWER"), "{v}");
}

#[tokio::test]
async fn an_unknown_session_is_404_unless_a_new_one_is_asked_for_and_a_taken_id_is_409() {
    let env = Env::new();
    let fake = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    env.write_config(&patient_llm_config(&fake.url()));
    let repo = indexed_repo(&env);
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let c = reqwest::Client::new();
    let ask = |stream: bool, docdex: Value| {
        let mut body = chat_body(stream);
        body["docdex"] = docdex;
        c.post(server.url("/v1/chat/completions")).json(&body).send()
    };
    for stream in [false, true] {
        let r = ask(stream, json!({"session_id": "no-such-session"})).await.unwrap();
        assert_eq!(r.status().as_u16(), 404);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], "unknown_session", "{v}");
    }
    let r = ask(false, json!({"session_id": "mine-1", "new_session": true})).await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!((v["docdex"]["session_id"].as_str(), v["docdex"]["turn"].as_u64()), (Some("mine-1"), Some(1)), "{v}");
    let r = ask(false, json!({"session_id": "mine-1"})).await.unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["docdex"]["turn"], 2, "{v}");
    // A new session under a taken id is refused (it used to continue that session, turn 3).
    for stream in [false, true] {
        let r = ask(stream, json!({"session_id": "mine-1", "new_session": true})).await.unwrap();
        assert_eq!(r.status().as_u16(), 409);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], "session_exists", "{v}");
        assert!(v["error"]["message"].as_str().unwrap().contains("omit docdex.new_session"), "{v}");
    }
    let r = ask(false, json!({"session_id": "mine-1"})).await.unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["docdex"]["turn"], 3, "{v}");
}

/// A head declaring a `len`-byte hooks body, and the body's first bytes.
fn hook_upload_head(len: usize) -> String {
    format!("POST /v1/hooks/validate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {len}\r\n\r\n{{\"files\": [")
}

/// Request bodies share one memory budget: slow 32 MiB uploads that hold it make the next one
/// `503 busy` with `Retry-After`, its body unread, while a search (a small body) still answers;
/// once they end, a large upload is accepted again. Without the budget every upload was read
/// (4,096 connections × 32 MiB).
#[tokio::test]
async fn slow_large_uploads_holding_the_body_budget_refuse_the_next_one_but_never_a_search() {
    use std::io::{Read, Write};
    let env = Env::new();
    let repo = indexed_repo(&env);
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let mut held: Vec<std::net::TcpStream> = Vec::new();
    let refused = loop {
        assert!(held.len() < 20, "20 uploads of 32 MiB are all being read at once: no budget");
        let mut s = std::net::TcpStream::connect(&server.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
        s.write_all(hook_upload_head(32 << 20).as_bytes()).unwrap();
        let mut buf = [0u8; 4096];
        match s.read(&mut buf) {
            Ok(0) => panic!("the server closed upload {} without an answer", held.len() + 1),
            Ok(n) => {
                let mut out = buf[..n].to_vec();
                let _ = s.read_to_end(&mut out);
                break String::from_utf8_lossy(&out).to_lowercase();
            }
            // No answer yet: the server is reading its body.
            Err(_) => held.push(s),
        }
        // A byte each, so none stalls into a 408.
        for h in &mut held {
            h.write_all(b" ").unwrap();
        }
    };
    assert!(held.len() >= 2, "only {} uploads were read before one was refused", held.len());
    assert!(refused.starts_with("http/1.1 503"), "{refused}");
    assert!(refused.contains("retry-after: 2") && refused.contains("\"code\":\"busy\""), "{refused}");

    let c = crate::server_util::client();
    let r = c.post(server.url("/v1/search")).json(&json!({"query": "session"})).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200, "a search while the budget is taken: {}", r.text().await.unwrap());

    drop(held);
    // A whole 20 MiB body (JSON padded with spaces) is read and answered once the uploads end.
    let mut body = String::from("{\"files\": []}");
    body.push_str(&" ".repeat((20 << 20) - body.len()));
    eventually("a large upload is accepted again", || {
        let (c, url, body) = (c.clone(), server.url("/v1/hooks/validate"), body.clone());
        async move {
            let r = c.post(url).header("content-type", "application/json").body(body).send().await.unwrap();
            let status = r.status().as_u16();
            let v: Value = r.json().await.unwrap();
            assert!(status == 200 || v["error"]["code"] == "busy", "{status} {v}");
            status == 200 && v["status"] == "pass"
        }
    })
    .await;
}

/// Shrinks a client socket's receive buffer, so an answer it does not read fills it at once.
fn small_receive_buffer(s: &std::net::TcpStream) {
    use std::os::fd::AsRawFd;
    let size: libc::c_int = 4096;
    // SAFETY: setsockopt on a descriptor we own, with an int option of its size.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&size as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "setsockopt SO_RCVBUF");
}

#[test]
fn a_client_that_reads_none_of_its_answer_is_dropped_after_30_s() {
    use std::io::{Read, Write};
    let env = Env::new();
    let repo = indexed_repo(&env);
    // A 6 MB file: its answer is larger than the socket buffers (4 MiB at most for the
    // server's side, 4 KiB for the client's).
    let line = "a line of the large file that a client asks for and then never reads\n";
    crate::util::write(&repo, "data/large.txt", line.repeat(6_000_000 / line.len()));
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let mut s = std::net::TcpStream::connect(&server.addr).unwrap();
    small_receive_buffer(&s);
    s.write_all(b"GET /v1/open?path=data/large.txt HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    // Reading nothing for 38 s: hyper has no write timeout, and the connection (serving a
    // request, so never evicted) and its answer in memory were held for as long as the client
    // liked; now the server gives up on it after 30 s.
    std::thread::sleep(Duration::from_secs(38));
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut got = Vec::new();
    let ended = s.read_to_end(&mut got);
    let text = String::from_utf8_lossy(&got[..got.len().min(400)]).to_string();
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    let timed_out = ended
        .as_ref()
        .is_err_and(|e| matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut));
    assert!(!timed_out, "the connection is still open after {} bytes", got.len());
    let head_end = got.windows(4).position(|w| w == b"\r\n\r\n").expect("a whole head") + 4;
    let length: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no content-length: {text}"));
    let body = got.len() - head_end;
    assert!(body < length, "the server waited for the client and sent all {length} bytes");
    let (resp, _) = send_and_read(
        &server.addr,
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
        Duration::from_secs(10),
    );
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
}

#[test]
fn a_connection_that_sends_nothing_or_idles_on_http2_is_closed_after_10_s() {
    use std::io::{Read, Write};
    let env = Env::new();
    let repo = indexed_repo(&env);
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let silent = std::net::TcpStream::connect(&server.addr).unwrap();
    // HTTP/2 with prior knowledge: the preface and an empty SETTINGS frame, then no request.
    let mut h2 = std::net::TcpStream::connect(&server.addr).unwrap();
    h2.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00").unwrap();
    let started = Instant::now();
    // hyper's head timeout starts once it knows the protocol, which it learns from the first
    // bytes, and HTTP/2 has none between requests: both were open for as long as the client
    // liked (answering HTTP/2's pings), where an idle HTTP/1.1 connection is closed at 10 s.
    for (mut s, what) in [(silent, "a connection that sent nothing"), (h2, "an idle HTTP/2 connection")] {
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut sink = Vec::new();
        let ended = s.read_to_end(&mut sink);
        assert!(ended.is_ok(), "{what} was still open after {:?}: {ended:?}", started.elapsed());
    }
    let took = started.elapsed();
    assert!(took >= Duration::from_secs(9) && took < Duration::from_secs(15), "closed after {took:?}");
}

#[test]
fn a_body_declared_over_the_limit_is_refused_413_before_it_is_sent() {
    use std::io::{Read, Write};
    let env = Env::new();
    let repo = indexed_repo(&env);
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    // curl asks `Expect: 100-continue` before a body over 1 MiB; a client may also send the
    // head and wait. Both were read up to the 2 MiB limit first: the first was told `100
    // Continue` (and uploaded), the second waited 10 s for a 408.
    for expect in ["Expect: 100-continue\r\n", ""] {
        let mut s = std::net::TcpStream::connect(&server.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let head = format!(
            "POST /v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n{expect}\r\n"
        );
        s.write_all(head.as_bytes()).unwrap();
        let started = Instant::now();
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        let resp = String::from_utf8_lossy(&out);
        assert!(resp.starts_with("HTTP/1.1 413"), "{expect:?}: {resp}");
        assert!(resp.contains("\"code\":\"payload_too_large\"") && resp.contains("1000000000"), "{resp}");
        assert!(started.elapsed() < Duration::from_secs(3), "answered after {:?}", started.elapsed());
    }
}

/// One HTTP/2 frame on the wire: a 9-byte head (length, type, flags, stream) and its payload.
fn h2_frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = (payload.len() as u32).to_be_bytes()[1..].to_vec();
    f.extend([kind, flags]);
    f.extend(stream.to_be_bytes());
    f.extend(payload);
    f
}

/// Reads one frame (type, flags, payload); `None` once the server has closed the connection.
fn read_h2_frame(s: &mut std::net::TcpStream) -> Option<(u8, u8, Vec<u8>)> {
    use std::io::Read;
    let mut head = [0u8; 9];
    match s.read_exact(&mut head) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof || e.kind() == std::io::ErrorKind::ConnectionReset => {
            return None
        }
        Err(e) => panic!("the connection was still open and silent: {e}"),
    }
    let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
    let mut payload = vec![0u8; len];
    s.read_exact(&mut payload).ok()?;
    Some((head[3], head[4], payload))
}

#[test]
fn an_http2_client_that_grants_no_window_is_dropped_after_30_s() {
    use std::io::Write;
    let env = Env::new();
    let repo = indexed_repo(&env);
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let mut s = std::net::TcpStream::connect(&server.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    // The preface, SETTINGS_INITIAL_WINDOW_SIZE = 0 (the server may send no answer's body
    // until told), and three requests, HPACK without Huffman: GET http /healthz.
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    out.extend(h2_frame(4, 0, 0, &[0, 4, 0, 0, 0, 0]));
    for stream in [1u32, 3, 5] {
        let block = [&[0x82u8, 0x86, 0x04, 8][..], b"/healthz", &[0x01, 9], b"127.0.0.1"].concat();
        out.extend(h2_frame(1, 0x5, stream, &block));
    }
    s.write_all(&out).unwrap();
    let started = Instant::now();
    let (mut answers, mut data) = (0, 0);
    // Answering the server's pings and settings, so the connection is alive, but never a
    // WINDOW_UPDATE: no write ever blocks, so the 30 s write bound never saw it, and the
    // three answers (in flight, so never idle) held the connection for as long as we liked.
    while let Some((kind, flags, payload)) = read_h2_frame(&mut s) {
        match (kind, flags & 1) {
            (0, _) => data += payload.len(),
            (1, _) => answers += 1,
            (4, 0) => s.write_all(&h2_frame(4, 1, 0, &[])).unwrap(),
            (6, 0) => s.write_all(&h2_frame(6, 1, 0, &payload)).unwrap(),
            _ => {}
        }
    }
    let took = started.elapsed();
    assert_eq!((answers, data), (3, 0), "three heads and no body with no window");
    assert!(took >= Duration::from_secs(29) && took < Duration::from_secs(50), "closed after {took:?}");
}

/// HPACK's integer with a `prefix`-bit prefix (RFC 7541 5.1), its first byte's high bits `flags`.
fn hpack_int(flags: u8, prefix: u32, mut value: usize) -> Vec<u8> {
    let max = (1usize << prefix) - 1;
    if value < max {
        return vec![flags | value as u8];
    }
    let mut out = vec![flags | max as u8];
    value -= max;
    while value >= 128 {
        out.push((value % 128) as u8 | 0x80);
        value /= 128;
    }
    out.push(value as u8);
    out
}

/// `GET /healthz` on `stream` with one more header field of `value_len` bytes, as a HEADERS
/// frame and the CONTINUATION frames its block needs (16 KiB each, the server's frame size).
fn h2_get_with_big_header(stream: u32, value_len: usize) -> Vec<u8> {
    let mut block = [&[0x82u8, 0x86, 0x04, 8][..], b"/healthz", &[0x01, 9], b"127.0.0.1"].concat();
    block.push(0x00); // a literal field, its name given, not indexed
    block.extend(hpack_int(0, 7, 5));
    block.extend(b"x-big");
    block.extend(hpack_int(0, 7, value_len));
    block.extend(std::iter::repeat_n(b'v', value_len));
    let pieces: Vec<&[u8]> = block.chunks(16_384).collect();
    let mut out = Vec::new();
    for (i, piece) in pieces.iter().enumerate() {
        let end_headers = if i + 1 == pieces.len() { 0x4 } else { 0 };
        let (kind, end_stream) = if i == 0 { (1, 0x1) } else { (9, 0) };
        out.extend(h2_frame(kind, end_stream | end_headers, stream, piece));
    }
    out
}

/// The body of the answer on a fresh HTTP/2 connection to `frames`, or why there was none.
fn h2_answer(addr: &str, frames: &[u8]) -> Result<String, String> {
    use std::io::Write;
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    out.extend(h2_frame(4, 0, 0, &[]));
    out.extend(frames);
    s.write_all(&out).unwrap();
    let mut body = Vec::new();
    while let Some((kind, flags, payload)) = read_h2_frame(&mut s) {
        match kind {
            0 if flags & 1 == 1 => return Ok(String::from_utf8_lossy(&[body, payload].concat()).to_string()),
            0 => body.extend(payload),
            1 if flags & 1 == 1 => return Err("an answer with no body".to_string()),
            3 => return Err(format!("the stream was reset: {payload:?}")),
            7 => return Err(format!("the connection ended: GOAWAY {payload:?}")),
            _ => {}
        }
    }
    Err("the connection closed without an answer".to_string())
}

#[test]
fn http2_serves_the_heads_http1_does_and_answers_larger_ones_431_in_the_contract() {
    let env = Env::new();
    let repo = indexed_repo(&env);
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    // A 20 KB field: within docdex's 64 KiB head, served on HTTP/1.1; HTTP/2 (hyper's 16 KiB
    // header list) answered a bare 431 with no body.
    let small = h2_answer(&server.addr, &h2_get_with_big_header(1, 20_000));
    assert!(small.as_ref().is_ok_and(|b| b.contains("\"status\":\"ok\"")), "{small:?}");
    // A 70 KB field: past docdex's limit, so 431 naming it, as on HTTP/1.1; HTTP/2 ended the
    // connection with no answer at all.
    let large = h2_answer(&server.addr, &h2_get_with_big_header(1, 70_000));
    let large = large.unwrap_or_else(|why| panic!("no answer to a 70 KB head: {why}"));
    assert!(large.contains("\"code\":\"headers_too_large\"") && large.contains("65536"), "{large}");
}

#[test]
fn an_http2_client_reading_a_large_answer_slowly_gets_all_of_it() {
    use std::io::Write;
    let env = Env::new();
    let repo = indexed_repo(&env);
    let line = "a line of a large file that an HTTP/2 client reads slowly but steadily\n";
    crate::util::write(&repo, "data/large.txt", line.repeat(3_000_000 / line.len()));
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let mut s = std::net::TcpStream::connect(&server.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    out.extend(h2_frame(4, 0, 0, &[]));
    let path = b"/v1/open?path=data/large.txt";
    let block = [&[0x82u8, 0x86, 0x04, path.len() as u8][..], path, &[0x01, 9], b"127.0.0.1"].concat();
    out.extend(h2_frame(1, 0x5, 1, &block));
    s.write_all(&out).unwrap();
    let started = Instant::now();
    let mut body = Vec::new();
    // About 150 KB/s, granting the window back as it is read: the whole 3 MB answer was handed
    // to HTTP/2 at once, the request counted as done, and the idle close 10 s later cut it
    // (at 1 MB of 4.4 MB for a client at 100 KB/s).
    loop {
        let Some((kind, flags, payload)) = read_h2_frame(&mut s) else {
            panic!("the connection closed after {} bytes and {:?}", body.len(), started.elapsed())
        };
        match kind {
            0 => {
                std::thread::sleep(Duration::from_micros(payload.len() as u64 * 1_000_000 / 150_000));
                let grant = (payload.len() as u32).to_be_bytes();
                if !payload.is_empty() {
                    s.write_all(&[h2_frame(8, 0, 0, &grant), h2_frame(8, 0, 1, &grant)].concat()).unwrap();
                }
                body.extend(payload);
                if flags & 1 == 1 {
                    break;
                }
            }
            4 if flags & 1 == 0 => s.write_all(&h2_frame(4, 1, 0, &[])).unwrap(),
            6 if flags & 1 == 0 => s.write_all(&h2_frame(6, 1, 0, &payload)).unwrap(),
            3 | 7 => panic!("reset or GOAWAY after {} bytes: {payload:?}", body.len()),
            _ => {}
        }
    }
    let v: Value = serde_json::from_slice(&body).expect("the whole answer, as JSON");
    assert!(
        v["text"].as_str().is_some_and(|c| c.len() >= 2_900_000),
        "{}",
        v.to_string().chars().take(200).collect::<String>()
    );
    assert!(started.elapsed() > Duration::from_secs(12), "read in {:?}: not slow enough to test", started.elapsed());
}
