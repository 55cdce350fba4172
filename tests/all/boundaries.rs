//! The repository's boundary against what a cloned repository can hold (tour15): ignore and
//! hints files that are links out of it, FIFOs or `/dev/zero`; and the server's request
//! bounds. Commands run bounded in time and memory, so a regression fails instead of hanging
//! or taking the machine's memory.

use crate::server_util::{client, eventually, Server};
use crate::util::{git, write, Env};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs the real binary with this home under a 4 GiB address-space limit, killed after `secs`.
fn run_bounded(env: &Env, args: &[&str], secs: u64) -> Output {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "ulimit -v 4194304 && exec \"$0\" \"$@\"", env!("CARGO_BIN_EXE_docdex")])
        .args(args)
        .env("DOCDEX_HOME", env.home())
        .env("NO_COLOR", "1")
        .env_remove("DOCDEX_AUTH_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn docdex");
    let deadline = Instant::now() + Duration::from_secs(secs);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!("docdex {args:?} still ran after {secs} s; stderr: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo takes a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo {}", path.display());
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn ignore_files_linked_out_of_the_repository_fifos_and_dev_zero_are_never_read() {
    let env = Env::new();
    let outside = env.repo("outside");
    write(&outside, "rules", "*.md\nOUTSIDE-RULES-SECRET\n");
    let repo = env.repo("r");
    git(&repo, &["init", "-q"]);
    write(&repo, "top.md", "kestrel at the top\n");
    write(&repo, "shared.gitignore", "skip.md\n");
    for dir in ["out", "fifo", "zero", "inlink"] {
        write(&repo, &format!("{dir}/kept.md"), format!("kestrel in {dir}\n"));
    }
    write(&repo, "inlink/skip.md", "kestrel skipped\n");
    std::os::unix::fs::symlink(outside.join("rules"), repo.join("out/.gitignore")).unwrap();
    mkfifo(&repo.join("fifo/.docdexignore"));
    std::os::unix::fs::symlink("/dev/zero", repo.join("zero/.ignore")).unwrap();
    // A link to an ignore file inside the repository is read, as before.
    std::os::unix::fs::symlink("../shared.gitignore", repo.join("inlink/.gitignore")).unwrap();
    let root = repo.to_str().unwrap();

    let out = run_bounded(&env, &["index", "--repo", root, "--json"], 60);
    assert!(out.status.success(), "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let skipped: Vec<(String, String)> = v["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["path"].as_str().unwrap().to_string(), s["reason"].as_str().unwrap().to_string()))
        .collect();
    let reason = |dir: &str| skipped.iter().find(|(p, _)| p == dir).map(|(_, r)| r.clone()).unwrap_or_default();
    assert!(reason("out").starts_with("folder not walked: its .gitignore is a link to"), "{skipped:?}");
    assert!(reason("out").contains("outside") && !reason("out").contains("SECRET"), "{skipped:?}");
    assert!(reason("fifo").contains("its .docdexignore is not a regular file"), "{skipped:?}");
    assert!(reason("zero").contains("its .ignore is a link to /dev/zero"), "{skipped:?}");
    let search = env.json(&["search", "--repo", root, "kestrel", "--json"]);
    let mut paths: Vec<&str> =
        search["results"].as_array().unwrap().iter().map(|r| r["path"].as_str().unwrap()).collect();
    paths.sort();
    assert_eq!(paths, ["inlink/kept.md", "top.md"]);

    // Served as walked: a file in such a folder is refused naming it; a path that is not there
    // is judged by the ignore files above it, which are not read either (it waited on the FIFO).
    let out = run_bounded(&env, &["get", "--repo", root, "out/kept.md"], 30);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("in the folder out, which docdex does not walk: its .gitignore is a link"),
        "{}",
        text(&out)
    );
    let out = run_bounded(&env, &["get", "--repo", root, "fifo/gone.md"], 30);
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));

    // The root's own: the run is refused and the index kept.
    std::os::unix::fs::symlink("/dev/zero", repo.join(".ignore")).unwrap();
    let out = run_bounded(&env, &["index", "--repo", root], 60);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("cannot be indexed: its .ignore is a link to /dev/zero"), "{}", text(&out));
    assert!(text(&out).contains("its index is kept as it was"), "{}", text(&out));
    let search = env.json(&["search", "--repo", root, "kestrel", "--json"]);
    assert_eq!(search["results"].as_array().unwrap().len(), 2, "{search}");
}

/// The crate reads each repository's `.git/info/exclude` (the root's, a nested clone's, as one
/// arrives in an unpacked tarball) as plainly as a `.gitignore`: a FIFO there hung `docdex
/// index`, a link to /dev/zero aborted it out of memory. Judged as the ignore files are.
#[test]
fn a_git_info_exclude_that_is_a_fifo_or_dev_zero_is_never_read() {
    let env = Env::new();
    let repo = env.repo("r");
    git(&repo, &["init", "-q"]);
    write(
        &repo,
        "top.md",
        "kestrel at the top
",
    );
    for lib in ["fifo", "zero"] {
        write(
            &repo,
            &format!("vend/{lib}/a.md"),
            "kestrel vendored
",
        );
        write(
            &repo,
            &format!("vend/{lib}/.git/HEAD"),
            "ref: refs/heads/main
",
        );
        std::fs::create_dir_all(repo.join(format!("vend/{lib}/.git/info"))).unwrap();
    }
    mkfifo(&repo.join("vend/fifo/.git/info/exclude"));
    std::os::unix::fs::symlink("/dev/zero", repo.join("vend/zero/.git/info/exclude")).unwrap();
    let root = repo.to_str().unwrap();
    let out = run_bounded(&env, &["index", "--repo", root, "--json"], 60);
    assert!(out.status.success(), "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let reasons: Vec<String> =
        v["skipped"].as_array().unwrap().iter().map(|s| format!("{}: {}", s["path"], s["reason"])).collect();
    assert!(
        reasons.iter().any(|r| r.contains("vend/fifo") && r.contains(".git/info/exclude is not a regular file")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("vend/zero") && r.contains(".git/info/exclude is a link to /dev/zero")),
        "{reasons:?}"
    );
    let search = env.json(&["search", "--repo", root, "kestrel", "--json"]);
    assert_eq!(search["results"].as_array().unwrap().len(), 1, "{search}");
    // The repository's own: the run is refused, naming it.
    mkfifo(&repo.join(".git/info/exclude.fifo"));
    std::fs::remove_file(repo.join(".git/info/exclude")).ok();
    std::fs::rename(repo.join(".git/info/exclude.fifo"), repo.join(".git/info/exclude")).unwrap();
    let out = run_bounded(&env, &["index", "--repo", root], 60);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("its .git/info/exclude is not a regular file"), "{}", text(&out));
}

#[test]
fn hints_files_linked_out_of_the_repository_or_fifos_are_not_read() {
    let env = Env::new();
    let outside = env.repo("outside");
    write(&outside, "map.json", r#"{"version": 1, "mappings": [{"spec": "OUTSIDE-MAP-SECRET"}]}"#);
    write(&outside, "traces.jsonl", "{\"source\": \"OUTSIDE-TRACE-SECRET\", \"target\": \"src/b.js\"}\n");
    let repo = env.repo("r");
    git(&repo, &["init", "-q"]);
    write(&repo, "src/a.js", "import { b } from './b';\nexport const a = b;\n");
    write(&repo, "src/b.js", "export const b = 1;\n");
    std::os::unix::fs::symlink(outside.join("map.json"), repo.join("docdex.import_map.json")).unwrap();
    std::os::unix::fs::symlink(outside.join("traces.jsonl"), repo.join("docdex.import_traces.jsonl")).unwrap();
    let root = repo.to_str().unwrap();
    let out = run_bounded(&env, &["index", "--repo", root], 60);
    assert!(out.status.success(), "{}", text(&out));
    let out = run_bounded(&env, &["graph", "rebuild", "--repo", root], 60);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(!all.contains("SECRET"), "a file outside the repository was read: {all}");
    assert!(all.contains("cannot read docdex.import_map.json: it is a symbolic link"), "{all}");
    assert!(all.contains("cannot read import traces: it is a symbolic link"), "{all}");

    // A FIFO (or /dev/zero) is not waited on nor read to its end.
    std::fs::remove_file(repo.join("docdex.import_map.json")).unwrap();
    mkfifo(&repo.join("docdex.import_map.json"));
    std::fs::remove_file(repo.join("docdex.import_traces.jsonl")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", repo.join("docdex.import_traces.jsonl")).unwrap();
    let out = run_bounded(&env, &["graph", "rebuild", "--repo", root], 60);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("cannot read docdex.import_map.json: not a regular file"), "{}", text(&out));
}

#[tokio::test]
async fn a_fifo_made_an_ignore_file_while_served_leaves_the_watcher_running() {
    let env = Env::new();
    let repo = env.repo("r");
    git(&repo, &["init", "-q"]);
    write(&repo, "a.md", "first note\n");
    write(&repo, "sub/b.md", "ocelot in sub\n");
    let root = repo.to_str().unwrap();
    assert!(env.run(&["index", "--repo", root]).status.success());
    let server = Server::start(&env, &["serve", "--repo", root], &[]);
    let c = client();
    let search = |q: &'static str| {
        let c = c.clone();
        let url = server.url("/v1/search");
        async move {
            let v: Value = c.post(url).json(&json!({"query": q})).send().await.unwrap().json().await.unwrap();
            v["results"]
                .as_array()
                .map(|r| r.iter().map(|h| h["path"].as_str().unwrap_or("").to_string()).collect::<Vec<_>>())
        }
    };
    eventually("sub/b.md searchable", || async { search("ocelot").await.is_some_and(|p| p == ["sub/b.md"]) }).await;
    mkfifo(&repo.join("sub/.gitignore"));
    // The watcher waited on the FIFO for ever (status still said watching): nothing after it
    // was indexed.
    eventually("sub/ left out", || async { search("ocelot").await.is_some_and(|p| p.is_empty()) }).await;
    write(&repo, "later.md", "margay written later\n");
    eventually("later.md searchable", || async { search("margay").await.is_some_and(|p| p == ["later.md"]) }).await;
    let r = c.get(server.url("/v1/open?path=sub/b.md")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 403);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "path_not_served", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("in the folder sub, which docdex does not walk: its .gitignore is not a regular file"),
        "{v}"
    );
    // Replacing it with a file is seen: the folder is indexed again.
    std::fs::remove_file(repo.join("sub/.gitignore")).unwrap();
    write(&repo, "sub/.gitignore", "nothing.md\n");
    eventually("sub/b.md back", || async { search("ocelot").await.is_some_and(|p| p == ["sub/b.md"]) }).await;
}

#[tokio::test]
async fn an_ast_query_of_many_node_kinds_is_refused_at_once_naming_the_limit() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "src/lib.rs", "pub fn heron() {}\n");
    let root = repo.to_str().unwrap();
    assert!(env.run(&["index", "--repo", root]).status.success());
    let server = Server::start(&env, &["serve", "--repo", root], &[]);
    let c = client();
    // 100,000 distinct kinds (1.5 MB): their duplicates were removed by comparing each with
    // every other, 47 s of a worker before any answer.
    let many: Vec<String> = (0..100_000).map(|i| format!("kind_{i}")).collect();
    let started = Instant::now();
    let r = c.post(server.url("/v1/ast/query")).json(&json!({"kinds": many})).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let v: Value = r.json().await.unwrap();
    assert!(v["error"]["message"].as_str().unwrap().contains("more than 64 node kinds"), "{v}");
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    let joined = many[..70].join(",");
    let r = c.get(server.url(&format!("/v1/ast/search?kinds={joined}"))).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 400);
    // Repeating a kind is not asking for more of them.
    let same = vec!["function_item"; 10_000];
    let r = c.post(server.url("/v1/ast/query")).json(&json!({"kinds": same})).send().await.unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["results"][0]["path"], "src/lib.rs", "{v}");
}

#[tokio::test]
async fn a_refused_token_says_what_was_wrong_and_two_authorization_fields_are_refused() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "a.md", "jaguarundi\n");
    let root = repo.to_str().unwrap();
    assert!(env.run(&["index", "--repo", root]).status.success());
    let token = "k3y-for-tour15-probes";
    let server = Server::start(&env, &["serve", "--repo", root], &[("DOCDEX_AUTH_TOKEN", token)]);
    let c = client();
    let bearer = format!("Bearer {token}");
    let cases: [(Vec<&str>, &str); 5] = [
        (vec![], "this server requires a token: send `Authorization: Bearer <token>`"),
        (vec!["Bearer wrong"], "the bearer token sent is not this server's"),
        (vec!["Basic a2V5"], "not a bearer token (its scheme is Basic)"),
        (vec![token], "the Authorization header is not `Bearer <token>`"),
        // The first field alone decided: the right token first let a second, wrong one through.
        (vec![bearer.as_str(), "Bearer wrong"], "the request carries 2 Authorization headers"),
    ];
    for (fields, says) in cases {
        let mut req = c.get(server.url("/healthz"));
        for f in &fields {
            req = req.header("authorization", *f);
        }
        let r = req.send().await.unwrap();
        assert_eq!(r.status().as_u16(), 401, "{fields:?}");
        let v: Value = r.json().await.unwrap();
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains(says) && !message.contains(token), "{fields:?}: {message}");
    }
    let r = c.get(server.url("/healthz")).header("authorization", &bearer).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // The Host check (not exposed): a name after an IPv6 literal is not loopback.
    for host in ["[::1]evil.example", "[::1]:80.evil.example"] {
        let r =
            c.get(server.url("/healthz")).header("authorization", &bearer).header("host", host).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 403, "{host}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], "forbidden_host", "{host}: {v}");
    }
}

/// The number of threads process `pid` runs.
fn threads_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).map(|d| d.count()).unwrap_or(0)
}

#[tokio::test]
async fn a_daemon_keeps_at_most_max_repos_mounted_and_mounts_a_let_go_one_again() {
    let env = Env::new();
    let repos: Vec<_> = (0..4)
        .map(|i| {
            let repo = env.repo(&format!("r{i}"));
            write(&repo, "a.md", format!("tayra number{i}\n"));
            assert!(env.run(&["index", "--repo", repo.to_str().unwrap()]).status.success());
            repo
        })
        .collect();
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(env.home().join("config.toml"), "[server]\nmax_repos = 2\n").unwrap();
    let daemon = Server::start(&env, &["daemon"], &[]);
    let c = client();
    let mounted = || async {
        let v: Value = c.get(daemon.url("/healthz")).send().await.unwrap().json().await.unwrap();
        v["repos_mounted"].as_u64().unwrap()
    };
    let search = |i: usize| {
        let (c, url, repo) = (c.clone(), daemon.url("/v1/search"), repos[i].clone());
        async move {
            let body = json!({"query": format!("number{i}"), "repo": repo.to_str().unwrap()});
            let v: Value = c.post(url).json(&body).send().await.unwrap().json().await.unwrap();
            v["results"][0]["path"].as_str().map(str::to_string)
        }
    };
    for (i, repo) in repos.iter().enumerate() {
        let r = c
            .post(daemon.url("/v1/initialize"))
            .json(&json!({"rootUri": repo.to_str().unwrap()}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200, "initialize r{i}");
        assert!(mounted().await <= 2, "every repository stayed mounted (its watcher and writer)");
    }
    let pid = daemon.child.id();
    let before = threads_of(pid);
    // A repository let go answers as before: mounted again, letting another go.
    for i in [0, 1, 2, 3, 0] {
        assert_eq!(search(i).await.as_deref(), Some("a.md"), "r{i}");
        assert_eq!(mounted().await, 2);
    }
    eventually("the let-go keepers' threads end", || async { threads_of(pid) <= before + 2 }).await;
}

#[test]
fn reading_a_source_key_of_no_source_names_the_sources_there_are() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "a.md", "capybara\n");
    let notes = env.repo("notes");
    write(&notes, "n.md", "okapi\n");
    let root = repo.to_str().unwrap();
    assert!(env.run(&["index", "--repo", root]).status.success());
    let out = env.run(&["get", "--repo", root, "//nope/n.md"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    // It said "no source named nope in R", where search named the sources or how to add one.
    assert!(err.contains("//nope/n.md: the repository has no registered source named \"nope\" (it has none; `docdex add PATH` registers one)"), "{err}");
    assert!(env.run(&["add", "--repo", root, notes.to_str().unwrap()]).status.success());
    let out = env.run(&["get", "--repo", root, "//nope/n.md"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("its sources are notes"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(env.run(&["get", "--repo", root, "//notes/n.md"]).status.success());
}

#[tokio::test]
async fn a_token_on_the_command_line_is_warned_about_and_one_from_the_environment_is_not() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "a.md", "tapir\n");
    let root = repo.to_str().unwrap();
    assert!(env.run(&["index", "--repo", root]).status.success());
    let token = "tour15-0123456789abcdef";
    let on_argv = Server::start(&env, &["serve", "--repo", root, "--no-watch", "--auth-token", token], &[]);
    let warning = "--auth-token puts the token in the process list";
    eventually("the warning", || async { on_argv.stderr.lock().unwrap().contains(warning) }).await;
    drop(on_argv);
    let from_env = Server::start(&env, &["serve", "--repo", root, "--no-watch"], &[("DOCDEX_AUTH_TOKEN", token)]);
    let r = client().get(from_env.url("/healthz")).bearer_auth(token).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert!(!from_env.stderr.lock().unwrap().contains(warning), "{}", from_env.stderr.lock().unwrap());
}
