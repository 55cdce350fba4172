//! MCP over stdio beside a running server. The official MCP SDK starts a stdio server with a
//! minimal environment (HOME, PATH, ... but not DOCDEX_HOME): a `docdex mcp` started that way
//! beside `docdex serve` on another home used a docdex home of its own, built a second index of
//! the same repository from scratch, and refused searches meanwhile with "being indexed for the
//! first time" (then said ready, generation 1). `--home` puts the home in the arguments every
//! client passes, and the refusal names the home it uses.

use crate::mcp_clients::python;
use crate::server_util::Server;
use crate::util::{write, Env};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clients/mcp_home.py")
}

/// Runs the SDK client with only a user HOME in its environment (as an agent would).
fn sdk_client(py: &Path, user_home: &Path, repo: &Path, pre: &[&str]) -> Value {
    let out = Command::new(py)
        .arg(script())
        .arg(env!("CARGO_BIN_EXE_docdex"))
        .arg(repo)
        .args(pre)
        .env_clear()
        .env("HOME", user_home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .output()
        .expect("run python");
    assert!(out.status.success(), "client failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn an_sdk_started_stdio_server_beside_serve_uses_its_home_and_says_which_home() {
    let Some(py) = python() else { return };
    let env = Env::new();
    let repo = env.repo("r");
    for i in 0..600 {
        write(&repo, &format!("p{}/f{i}.py", i % 10), format!("def func_{i}():\n    return 'zebra{i}'\n"));
    }
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let _serve = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let user_home = env.dir.path().join("user");
    std::fs::create_dir_all(&user_home).unwrap();

    // With the server's home in the arguments: the ready index answers at once.
    let home = env.home();
    let v = sdk_client(&py, &user_home, &repo, &["--home", home.to_str().unwrap()]);
    assert_eq!(v["search_error"], false, "{v}");
    assert!(v["search"].as_str().unwrap().contains("f7.py"), "{v}");
    assert!(v["state_dir"].as_str().unwrap().starts_with(home.to_str().unwrap()), "{v}");

    // Without it, the process is on another home (the cause of the refusals): when it refuses,
    // it names the home it uses and how to share the server's.
    let v = sdk_client(&py, &user_home, &repo, &[]);
    let own_home = user_home.join(".docdex").display().to_string();
    match v["state_dir"].as_str() {
        Some(dir) => assert!(dir.starts_with(&own_home), "another home: {v}"),
        None => assert!(v["status"].as_str().unwrap().contains(&own_home), "status names its home: {v}"),
    }
    if v["search_error"] == true {
        let text = v["search"].as_str().unwrap();
        assert!(text.contains("not_indexed") && text.contains(&own_home), "{text}");
        assert!(text.contains("--home"), "{text}");
    }
}

/// `docdex mcp` on pipes, for raw JSON-RPC lines.
struct Stdio {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Stdio {
    fn start(env: &Env, repo: &Path) -> Stdio {
        let mut child = Command::new(env!("CARGO_BIN_EXE_docdex"))
            .args(["mcp", "--repo", repo.to_str().unwrap()])
            .env("DOCDEX_HOME", env.home())
            .env_remove("DOCDEX_AUTH_TOKEN")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn docdex mcp");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Stdio { child, stdin, lines }
    }

    fn send(&mut self, bytes: &[u8]) {
        use std::io::Write;
        self.stdin.write_all(bytes).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next reply, within 10 s (a missing reply is the hang this guards against).
    fn reply(&self) -> Value {
        let line = self.lines.recv_timeout(std::time::Duration::from_secs(10)).expect("a reply within 10 s");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }
}

impl Drop for Stdio {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn stdio_answers_every_line_that_is_not_a_message_and_bounds_line_length() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "a.py", "def zebra():\n    return 1\n");
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let mut mcp = Stdio::start(&env, &repo);

    let cases: [(&[u8], i64); 6] = [
        (b"hello", -32700),
        (b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\":", -32700),
        (b"\xff\xfe not text", -32700),
        (b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", -32600),
        (b"{\"jsonrpc\":\"2.0\",\"id\":9}", -32600),
        (b"{\"id\":3,\"method\":\"ping\"}", -32600),
    ];
    for (line, code) in cases {
        mcp.send(line);
        let r = mcp.reply();
        assert_eq!(r["jsonrpc"], "2.0", "{r}");
        assert_eq!(r["error"]["code"], code, "{}: {r}", String::from_utf8_lossy(line));
    }
    // A 30 MB line: refused when it ends, without holding it in memory (measured once the
    // process has settled: its catch-up run is done).
    std::thread::sleep(std::time::Duration::from_secs(2));
    let baseline = crate::faults::limits::peak_rss_kib(mcp.child.id());
    let huge = vec![b'a'; 30 * 1024 * 1024];
    mcp.send(&huge);
    let r = mcp.reply();
    assert_eq!(r["error"]["code"], -32600, "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("too long"), "{r}");
    let grown = crate::faults::limits::peak_rss_kib(mcp.child.id()) - baseline;
    assert!(grown < 16 * 1024, "a 30 MB line grew the process by {grown} KiB");

    // The session is intact: a real client can still start and search.
    mcp.send(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#);
    let r = mcp.reply();
    assert_eq!(r["id"], 1, "{r}");
    assert!(r["result"]["serverInfo"]["name"].is_string(), "{r}");
    mcp.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    mcp.send(br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"docdex_search","arguments":{"query":"zebra"}}}"#);
    let r = mcp.reply();
    assert_eq!(r["id"], 2, "{r}");
    assert!(r["result"]["content"][0]["text"].as_str().unwrap().contains("a.py"), "{r}");
    mcp.send(b"still not json");
    assert_eq!(mcp.reply()["error"]["code"], -32700);
}

/// A stdio client that writes requests and does not read its replies (yet) cannot grow the
/// server: rmcp read every request at once and held it and its answer until stdout took them
/// (100,000 `tools/list` took the process past 2.6 GB in 16 s). At most 64 requests are with
/// rmcp now; past that stdin waits. Reading the replies then gets every answer.
#[test]
fn stdio_requests_a_client_does_not_read_the_answers_of_wait_instead_of_piling_up() {
    use std::io::{BufRead, Write};
    const REQUESTS: usize = 20_000;
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "a.py", "def zebra():\n    return 1\n");
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_docdex"))
        .args(["mcp", "--repo", repo.to_str().unwrap()])
        .env("DOCDEX_HOME", env.home())
        .env_remove("DOCDEX_AUTH_TOKEN")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn docdex mcp");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    std::thread::sleep(std::time::Duration::from_secs(2));
    let baseline = crate::faults::limits::peak_rss_kib(child.id());
    // The writer blocks once the server stops reading; it keeps stdin open (end of input ends
    // the session).
    let (done_tx, done) = std::sync::mpsc::channel::<()>();
    let writer = std::thread::spawn(move || {
        let mut lines = String::from(
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        );
        lines.push_str("\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
        for id in 1..=REQUESTS {
            lines.push_str(&format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/list\"}}\n"));
        }
        let _ = stdin.write_all(lines.as_bytes());
        let _ = stdin.flush();
        let _ = done.recv();
    });
    std::thread::sleep(std::time::Duration::from_secs(5));
    let grown = crate::faults::limits::peak_rss_kib(child.id()).saturating_sub(baseline);
    assert!(grown < 64 * 1024, "{REQUESTS} unread requests grew the process by {grown} KiB");
    // Reading the replies gets the answers, each request's once.
    let mut seen = std::collections::HashSet::new();
    for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok).take(300) {
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(v.get("result").is_some(), "{v}");
        assert!(seen.insert(v["id"].as_u64().unwrap()), "answered twice: {v}");
    }
    assert_eq!(seen.len(), 300);
    let _ = child.kill();
    let _ = child.wait();
    drop(done_tx);
    writer.join().unwrap();
}
