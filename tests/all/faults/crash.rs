//! Crash windows, with the real binary and a real `kill -9`: a rebuild killed at any moment
//! leaves the previous generation live and searchable (and searches running meanwhile never
//! fail), status says what happened, and a kill between the symbol-store commit and the
//! impact-graph write is repaired by the next run.

use crate::util::{write, Env};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A repository big enough that a rebuild takes a while (each file has a unique word).
pub fn many_files(root: &Path, n: usize) {
    for i in 0..n {
        let body: String = (0..40)
            .map(|l| format!("def handler_{i}_{l}(request):\n    return render_page_{l}(request, 'tapir{i}x')\n"))
            .collect();
        write(root, &format!("pkg{}/mod{i}.py", i % 20), body);
    }
}

/// `docdex <args>` started in the background with this env's home.
fn spawn(env: &Env, args: &[&str], vars: &[(&str, &str)]) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_docdex"));
    cmd.args(args)
        .env("DOCDEX_HOME", env.home())
        .env("NO_COLOR", "1")
        .env_remove("DOCDEX_AUTH_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.spawn().expect("spawn docdex")
}

/// Waits until the child prints `docdex: paused at <point>` on stderr.
fn wait_for_pause(child: &mut Child, point: &str) {
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    let want = format!("paused at {point}");
    std::thread::spawn(move || {
        let mut seen = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            seen.push_str(&line);
            seen.push('\n');
            if line.contains(&want) {
                let _ = tx.send(Ok(()));
                return;
            }
        }
        let _ = tx.send(Err(seen));
    });
    match rx.recv_timeout(Duration::from_secs(120)) {
        Ok(Ok(())) => {}
        Ok(Err(stderr)) => panic!("exited before pausing at {point}: {stderr}"),
        Err(_) => panic!("never paused at {point}"),
    }
}

fn kill_9(child: &mut Child) {
    // SAFETY: kill(2) with SIGKILL on our own child's pid.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGKILL);
    }
    let status = child.wait().expect("wait");
    assert!(!status.success(), "the process was killed");
}

/// Runs real `docdex search` processes back to back until stopped; records every failure.
struct Searches {
    stop: Arc<AtomicBool>,
    done: Arc<AtomicUsize>,
    failures: Arc<Mutex<Vec<String>>>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Searches {
    fn start(env: &Env, repo: &Path, query: &str, expect: &str) -> Searches {
        let stop = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicUsize::new(0));
        let failures = Arc::new(Mutex::new(Vec::new()));
        let (home, repo, query, expect) = (env.home(), repo.to_path_buf(), query.to_string(), expect.to_string());
        let handle = {
            let (stop, done, failures) = (stop.clone(), done.clone(), failures.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let out = Command::new(env!("CARGO_BIN_EXE_docdex"))
                        .args(["search", "--repo", repo.to_str().unwrap(), &query, "--json"])
                        .env("DOCDEX_HOME", &home)
                        .env_remove("DOCDEX_AUTH_TOKEN")
                        .output()
                        .expect("run search");
                    let stdout = String::from_utf8_lossy(&out.stdout);
                    if !out.status.success() || !stdout.contains(&expect) {
                        failures.lock().unwrap().push(format!(
                            "exit {:?}: {} {}",
                            out.status.code(),
                            String::from_utf8_lossy(&out.stderr),
                            stdout.chars().take(300).collect::<String>()
                        ));
                    }
                    done.fetch_add(1, Ordering::SeqCst);
                }
            })
        };
        Searches { stop, done, failures, handle: Some(handle) }
    }

    /// Stops and returns (searches run, failures).
    fn finish(mut self) -> (usize, Vec<String>) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            h.join().unwrap();
        }
        (self.done.load(Ordering::SeqCst), self.failures.lock().unwrap().clone())
    }
}

fn status_json(env: &Env, repo: &Path) -> serde_json::Value {
    env.json(&["status", "--repo", repo.to_str().unwrap(), "--json"])
}

fn state_dir(env: &Env, repo: &Path) -> PathBuf {
    env.engine().resolve_repo(repo).unwrap().state_dir
}

#[test]
fn kill_9_during_a_rebuild_keeps_the_previous_generation_live_and_searches_never_fail() {
    let env = Env::new();
    let repo = env.repo("r");
    many_files(&repo, 600);
    write(&repo, "notes.md", "the marker word is oldokapi\n");
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let generation = status_json(&env, &repo)["generation"].as_u64().unwrap();
    // What only the new generation would know.
    write(&repo, "notes.md", "the marker word is newokapi\n");
    let r = repo.to_str().unwrap();

    // 1. Killed while building (as soon as it has made progress), searches running throughout.
    let searches = Searches::start(&env, &repo, "oldokapi", "notes.md");
    let mut rebuild = spawn(&env, &["index", "--repo", r, "--rebuild", "--quiet"], &[]);
    let status_path = state_dir(&env, &repo).join("index_status.json");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let s: serde_json::Value =
            std::fs::read(&status_path).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
        if s["rebuilding_from"].is_u64() && s["progress"]["files_done"].as_u64().unwrap_or(0) > 0 {
            break;
        }
        assert!(rebuild.try_wait().unwrap().is_none(), "the rebuild finished before it could be killed");
        assert!(Instant::now() < deadline, "the rebuild never made progress");
        std::thread::sleep(Duration::from_millis(5));
    }
    kill_9(&mut rebuild);
    std::thread::sleep(Duration::from_millis(300));
    let (ran, failures) = searches.finish();
    assert!(ran >= 2, "searches ran during the rebuild: {ran}");
    assert!(failures.is_empty(), "{} of {ran} searches failed during the rebuild: {:?}", failures.len(), failures);
    let st = status_json(&env, &repo);
    assert_eq!(st["index_state"], "ready", "{st}");
    assert_eq!(st["generation"].as_u64(), Some(generation), "{st}");
    let warnings = st["warnings"].to_string();
    assert!(
        warnings.contains("interrupted") && warnings.contains(&format!("generation {generation} stays live")),
        "{st}"
    );

    // 2. Killed at the last moment before the switch.
    let mut rebuild = spawn(
        &env,
        &["index", "--repo", r, "--rebuild", "--quiet"],
        &[("DOCDEX_TEST_PAUSE_AT", "before-generation-switch")],
    );
    wait_for_pause(&mut rebuild, "before-generation-switch");
    let out = env.run(&["search", "--repo", r, "oldokapi", "--json"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("notes.md"), "the old generation answers until the switch");
    kill_9(&mut rebuild);
    let out = env.run(&["search", "--repo", r, "oldokapi", "--json"]);
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("notes.md"));
    assert!(state_dir(&env, &repo).join("gen.next").exists(), "the unfinished generation is left for the next run");

    // 3. A rebuild that completes, with searches running through the switch.
    let searches = Searches::start(&env, &repo, "marker word", "notes.md");
    let summary = env.json(&["index", "--repo", r, "--rebuild", "--json"]);
    let (ran, failures) = searches.finish();
    assert!(failures.is_empty(), "{} of {ran} searches failed across the switch: {:?}", failures.len(), failures);
    assert!(summary["generation"].as_u64().unwrap() > generation, "generations keep counting: {summary}");
    assert!(!state_dir(&env, &repo).join("gen.next").exists(), "the leftover and the old generation are gone");
    let out = env.run(&["search", "--repo", r, "newokapi", "--json"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("notes.md"), "the new generation is live");
    let st = status_json(&env, &repo);
    assert_eq!(st["index_state"], "ready");
    assert!(!st["warnings"].to_string().contains("interrupted"), "{st}");
}

#[test]
fn a_first_index_answers_after_its_first_commit_and_a_kill_then_loses_nothing() {
    let env = Env::new();
    // A first batch of about 8 KB: the first few files of 200 (each about 4 KB).
    env.write_config("[index]\nfirst_commit_bytes = 8192\n");
    let repo = env.repo("big");
    many_files(&repo, 200);
    // First in path order, but binary: files of a known language are read before it, so the
    // first commit holds code, not this.
    std::fs::write(repo.join("aaa_blob.dat"), vec![0u8; 64 * 1024]).unwrap();
    let r = repo.to_str().unwrap();
    let mut run = spawn(&env, &["index", "--repo", r, "--quiet"], &[("DOCDEX_TEST_PAUSE_AT", "after-first-commit")]);
    wait_for_pause(&mut run, "after-first-commit");
    // The first commit is live: what it holds answers, in another process, while the run goes on.
    let answered: Vec<usize> = (0..200)
        .filter(|i| {
            let out = env.run(&["search", "--repo", r, &format!("tapir{i}x"), "--json"]);
            out.status.success() && String::from_utf8_lossy(&out.stdout).contains(&format!("mod{i}.py"))
        })
        .take(3)
        .collect();
    assert!(!answered.is_empty(), "no file of the first batch answers after the first commit");
    let partial = env.json(&["search", "--repo", r, "render page request", "--json", "--limit", "50"]);
    let files = partial["results"].as_array().map_or(0, |a| a.len());
    assert!(files > 0 && files < 50, "only the first batch is searchable yet: {files} hits");
    kill_9(&mut run);

    // The next run indexes the rest; nothing committed is lost or counted as new again (the
    // committed files were indexed as text, so this run parses them).
    let summary = env.json(&["index", "--repo", r, "--json"]);
    assert!(summary["added"].as_u64().unwrap() + answered.len() as u64 <= 200, "{summary}");
    assert_eq!(summary["files"], 200, "{summary}");
    let symbols = env.run(&["symbols", "--repo", r, &format!("handler_{}_3", answered[0]), "--json"]);
    assert!(String::from_utf8_lossy(&symbols.stdout).contains(&format!("mod{}.py", answered[0])));
    for i in [0usize, 99, 199] {
        let out = env.run(&["search", "--repo", r, &format!("tapir{i}x"), "--json"]);
        assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("mod{i}.py")), "file {i} after the second run");
    }
}

/// A first index killed after its text pass (as a server's Ctrl-C or a kill leaves it): the
/// parse pass counts its own files (the two passes were one sum, 63,522 "files" for a tree of
/// 46,266), `status` says the impact graph is not built yet (it said an older docdex resolved
/// it), and `impact` of an unparsed `.py` file says to finish the index (it said the file is
/// "not a code file docdex parses").
#[test]
fn a_first_index_stopped_before_its_parse_says_the_graph_is_not_built_yet() {
    let env = Env::new();
    env.write_config("[index]\nfirst_commit_bytes = 8192\n");
    let repo = env.repo("big");
    many_files(&repo, 60);
    write(&repo, "docs/guide.md", "# Guide\n\nThe okapi manual.\n");
    let r = repo.to_str().unwrap();
    let mut run = spawn(&env, &["index", "--repo", r, "--quiet"], &[("DOCDEX_TEST_PAUSE_AT", "after-text-pass")]);
    wait_for_pause(&mut run, "after-text-pass");
    let status = status_json(&env, &repo);
    let progress = &status["progress"];
    assert_eq!(progress["phase"], "parsing", "{status}");
    assert_eq!((progress["files_done"].as_u64(), progress["files_total"].as_u64()), (Some(0), Some(60)), "{status}");
    kill_9(&mut run);

    let status = status_json(&env, &repo);
    let warnings = status["warnings"].to_string();
    assert!(!warnings.contains("older docdex"), "{warnings}");
    assert!(warnings.contains("the impact graph is not built yet"), "{warnings}");
    let out = env.run(&["impact", "--repo", r, "pkg7/mod7.py"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("not a code file"), "{err}");
    assert!(err.contains("not parsed yet") && err.contains("docdex index --repo"), "{err}");
}

/// While a first index runs in another process, a one-shot command said "not indexed yet; run
/// `docdex index`"; after that run was killed before its first commit, `status` said only "not
/// indexed". Each names the run, and what to do.
#[test]
fn a_first_index_running_or_killed_before_its_commit_is_named() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "a.txt", "okapi\n");
    let r = repo.to_str().unwrap();
    let dir = state_dir(&env, &repo);
    std::fs::create_dir_all(&dir).unwrap();
    let mut runner = Command::new("sleep").arg("60").spawn().unwrap();
    let status_file = |pid: u32| {
        let v = serde_json::json!({"state": "updating", "pid": pid, "started_ms": 1, "updated_ms": 1,
            "progress": {"phase": "indexing", "files_done": 3, "files_total": 9, "bytes_done": 0, "bytes_total": 0},
            "queued": 0});
        std::fs::write(dir.join("index_status.json"), v.to_string()).unwrap();
    };
    status_file(runner.id());
    let out = env.run(&["search", "--repo", r, "okapi"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let pid = runner.id();
    assert!(err.contains(&format!("being indexed for the first time by pid {pid} (indexing: 3 of 9 files)")), "{err}");
    assert!(!err.contains("run `docdex index"), "{err}");
    kill_9(&mut runner);

    let out = env.run(&["status", "--repo", r]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains(&format!("first index run (pid {pid}) was interrupted before its first commit")), "{err}");
    assert!(err.contains(&format!("run `docdex index --repo {r}` to finish")), "{err}");
    // The engine's own status (`/v1/status`, MCP `docdex_status`) says so too.
    let e = env.engine().status(&repo).expect_err("not indexed");
    assert!(matches!(e, docdex::Error::FirstIndexPending { .. }) && e.code() == "not_indexed", "{e}");
    // The run that finishes it says so (tour17 F6: it said nothing of the killed run).
    let out = env.run(&["index", "--repo", r]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    assert!(said.contains(&format!("resumed the run of pid {pid} was interrupted (killed or crashed)")), "{said}");
    let again = env.json(&["index", "--repo", r, "--json"]);
    assert!(again.get("resumed").is_none(), "only the first run after the kill resumes: {again}");
}

#[test]
fn a_large_first_index_answers_as_text_before_its_parse_and_a_kill_then_loses_nothing() {
    let env = Env::new();
    // Over `first_commit_bytes` in all (120 files of about 4 KB): text first, then the parse.
    env.write_config("[index]\nfirst_commit_bytes = 8192\n");
    let repo = env.repo("big");
    many_files(&repo, 120);
    write(&repo, "docs/guide.md", "# Guide\n\nThe okapi manual.\n");
    let r = repo.to_str().unwrap();
    let mut run = spawn(&env, &["index", "--repo", r, "--quiet"], &[("DOCDEX_TEST_PAUSE_AT", "after-text-pass")]);
    wait_for_pause(&mut run, "after-text-pass");
    // Every file answers already, in another process; the definitions are not parsed yet.
    for i in [0usize, 59, 119] {
        let out = env.run(&["search", "--repo", r, &format!("tapir{i}x"), "--json"]);
        assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("mod{i}.py")), "file {i} after the text pass");
    }
    let out = env.run(&["search", "--repo", r, "okapi manual", "--json"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("docs/guide.md"));
    let symbols = |env: &Env| {
        let out = env.run(&["symbols", "--repo", r, "handler_7_3", "--json"]);
        String::from_utf8_lossy(&out.stdout).contains("mod7.py")
    };
    assert!(!symbols(&env), "no file is parsed before the text pass is live");
    let answer = env.json(&["symbols", "--repo", r, "handler", "--json"]);
    assert!(
        answer["note"].as_str().is_some_and(|n| n.contains("still parsing")),
        "symbols say they are partial: {answer}"
    );
    let status = status_json(&env, &repo);
    assert_eq!(status["progress"]["phase"], "parsing", "{status}");
    let human = String::from_utf8_lossy(&env.run(&["status", "--repo", r]).stdout).into_owned();
    assert!(human.contains("every file searchable as text"), "{human}");
    kill_9(&mut run);

    // The next run parses what the text pass left, as a completion rather than a change.
    let summary = env.json(&["index", "--repo", r, "--json"]);
    assert_eq!((summary["added"].as_u64(), summary["updated"].as_u64()), (Some(0), Some(0)), "{summary}");
    assert_eq!(summary["resumed"], run.id(), "the run names the killed one it completed: {summary}");
    assert!(summary.get("text_first").is_none(), "files already searchable as text get no second text pass: {summary}");
    assert_eq!(summary["files"], 121, "{summary}");
    assert!(symbols(&env), "the definitions are parsed after the second run");
    let answer = env.json(&["symbols", "--repo", r, "handler", "--json"]);
    assert!(answer.get("note").is_none(), "{answer}");
    let again = env.json(&["index", "--repo", r, "--json"]);
    assert_eq!(again["unchanged"], 121, "nothing is left to parse: {again}");

    // The chunks are those a one-pass index cuts (at definitions, not at line counts).
    let one_pass = Env::new();
    one_pass.write_config("[index]\nfirst_commit_bytes = 1000000000\n");
    let whole = one_pass.json(&["index", "--repo", r, "--json"]);
    assert_eq!(whole["commits"], 1, "{whole}");
    assert_eq!(summary["chunks"], whole["chunks"], "text pass then parse: {summary}\none pass: {whole}");
    // No chunk of the text pass is left in the index: the same query finds the same chunks.
    let chunks = |env: &Env| {
        let v = env.json(&["search", "--repo", r, "tapir7x", "--json", "--limit", "30"]);
        let hits = v["results"].as_array().cloned().unwrap_or_default();
        let mut ids: Vec<String> = hits.iter().map(|h| h["chunk_id"].to_string()).collect();
        ids.sort();
        ids
    };
    let (two, one) = (chunks(&env), chunks(&one_pass));
    assert!(!one.is_empty());
    assert_eq!(two, one, "hits after a text pass then a parse, against one pass");
}

#[test]
fn a_kill_between_the_symbol_commit_and_the_graph_write_is_repaired_by_the_next_run() {
    let env = Env::new();
    let repo = env.repo("g");
    write(&repo, "app.py", "import util\n\ndef main():\n    return util.helper()\n");
    write(&repo, "util.py", "def helper():\n    return 1\n");
    write(&repo, "extra.py", "def other():\n    return 2\n");
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    let importers = |env: &Env| {
        let v = env.json(&["impact", "--repo", r, "--file", "extra.py", "--direction", "in", "--json"]);
        v.to_string()
    };
    assert!(!importers(&env).contains("app.py"), "nothing imports extra.py yet");

    // app.py now imports extra: the symbols commit, then the process dies before the graph.
    write(&repo, "app.py", "import util\nimport extra\n\ndef main():\n    return util.helper() + extra.other()\n");
    let mut run = spawn(&env, &["index", "--repo", r, "--quiet"], &[("DOCDEX_TEST_PAUSE_AT", "before-graph-write")]);
    wait_for_pause(&mut run, "before-graph-write");
    kill_9(&mut run);
    assert!(!importers(&env).contains("app.py"), "the graph is stale after the kill");

    // The next run finds no changed file, yet rebuilds the graph.
    let summary = env.json(&["index", "--repo", r, "--json"]);
    assert_eq!(summary["updated"], 0, "{summary}");
    assert!(importers(&env).contains("app.py"), "the graph was repaired: {}", importers(&env));
}

#[test]
fn a_run_killed_while_embedding_reads_as_interrupted_and_stays_listed_as_indexed() {
    use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
    // A slow embedder: the phase shows at once in the status file, and a kill inside it
    // leaves the committed text index searchable, listed, and reported as interrupted.
    let fake = FakeOllama::start(FakeOllamaOptions { embed_delay_ms: 5000, ..Default::default() }).expect("fake");
    let env = Env::new();
    env.write_config(&crate::util::llm_config("ollama", &fake.url(), "fake-chat", "fake-embed"));
    let repo = env.repo("r");
    write(&repo, "src/lib.rs", "pub fn pelican() {}\n");
    write(&repo, "src/other.rs", "pub fn heron() {}\n");
    let r = repo.to_str().unwrap();
    let mut run = spawn(&env, &["index", "--repo", r, "--quiet"], &[]);
    let status_file = state_dir(&env, &repo).join("index_status.json");
    // Well before the first batch's 5 s: the phase's start is written at once.
    let deadline = Instant::now() + Duration::from_secs(4);
    loop {
        let text = std::fs::read_to_string(&status_file).unwrap_or_default();
        if text.contains("\"embedding\"") {
            break;
        }
        assert!(run.try_wait().unwrap().is_none(), "the run ended without its embedding phase showing: {text}");
        assert!(Instant::now() < deadline, "the embedding phase did not show before its first batch: {text}");
        std::thread::sleep(Duration::from_millis(20));
    }
    kill_9(&mut run);
    let st = status_json(&env, &repo);
    assert_eq!(st["index_state"], "ready", "{st}");
    assert!(st["progress"].is_null(), "a dead run's progress is not shown as running: {st}");
    assert!(st["warnings"].to_string().contains("interrupted while embedding"), "{st}");
    let list = env.json(&["repo", "list", "--json"]);
    assert!(list.to_string().contains("\"files\":2"), "listed with its files, not as never indexed: {list}");
    let out = env.run(&["search", "--repo", r, "pelican"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("src/lib.rs"));
}
