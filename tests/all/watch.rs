//! The watcher: creates, edits, deletes and renames become searchable without a manual re-index.

use crate::util::{eventually, hit_paths, write, Env, Watcher};

/// A keeper (`Engine::keep_fresh`) on its own thread: its stop flag, how many times it has
/// reported watching (each catch-up that ends in a watch), and its thread.
fn start_keeper(
    engine: &docdex::engine::Engine,
    repo: &std::path::Path,
) -> (
    std::sync::Arc<std::sync::atomic::AtomicBool>,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
    std::thread::JoinHandle<()>,
) {
    use docdex::engine::fresh::{FreshEvent, FreshState};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    let stop = Arc::new(AtomicBool::new(false));
    let watching = Arc::new(AtomicUsize::new(0));
    let keeper = {
        let (engine, repo, stop, watching) = (engine.clone(), repo.to_path_buf(), stop.clone(), watching.clone());
        std::thread::spawn(move || {
            engine.keep_fresh(&repo, &stop, &|e: FreshEvent| {
                if matches!(e, FreshEvent::State(FreshState::Watching)) {
                    watching.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
    };
    (stop, watching, keeper)
}

#[test]
fn watcher_applies_create_modify_delete_and_rename() {
    let env = Env::new();
    let repo = env.repo("w");
    write(&repo, "start.rs", "fn armadillo() {}\n");
    let engine = env.engine();
    let watcher = Watcher::start(&engine, &repo);
    assert_eq!(hit_paths(&engine, &repo, "armadillo"), ["start.rs"]);

    write(&repo, "new.rs", "fn pangolin() {}\n");
    eventually("create", || hit_paths(&engine, &repo, "pangolin") == ["new.rs"]);

    write(&repo, "new.rs", "fn quokka() {}\n");
    eventually("modify", || {
        hit_paths(&engine, &repo, "quokka") == ["new.rs"] && hit_paths(&engine, &repo, "pangolin").is_empty()
    });

    std::fs::rename(repo.join("new.rs"), repo.join("moved.rs")).unwrap();
    eventually("rename", || hit_paths(&engine, &repo, "quokka") == ["moved.rs"]);

    std::fs::remove_file(repo.join("moved.rs")).unwrap();
    eventually("delete", || hit_paths(&engine, &repo, "quokka").is_empty());

    // Ignored files never enter the index.
    write(&repo, ".gitignore", "tmp/\n");
    write(&repo, "tmp/junk.rs", "fn wombat() {}\n");
    write(&repo, "real.rs", "fn wombat_real() {}\n");
    eventually("ignored create", || hit_paths(&engine, &repo, "wombat real") == ["real.rs"]);
    assert!(!hit_paths(&engine, &repo, "wombat").contains(&"tmp/junk.rs".to_string()));

    let status = engine.status(&repo).unwrap();
    assert!(status.last_event.is_some());

    watcher.stop();
    // The writer was released: a normal index run works now.
    let s = engine.index(&repo, &Default::default(), &crate::util::quiet()).unwrap();
    assert_eq!(s.files, 2, "start.rs and real.rs (.gitignore is hidden, tmp/ ignored): {s:?}");
}

#[test]
fn an_index_deleted_under_a_live_keeper_is_rebuilt_and_watched_again() {
    use std::sync::atomic::Ordering;
    let env = Env::new();
    let repo = env.repo("k");
    write(&repo, "start.rs", "fn armadillo() {}\n");
    let engine = env.engine();
    let (stop, watching, keeper) = start_keeper(&engine, &repo);
    eventually("the first catch-up run", || watching.load(Ordering::SeqCst) == 1);
    assert_eq!(hit_paths(&engine, &repo, "armadillo"), ["start.rs"]);

    // Everything docdex keeps for the repository goes, under the running keeper.
    let states = env.home().join("state").join("repos");
    for dir in std::fs::read_dir(&states).unwrap() {
        std::fs::remove_dir_all(dir.unwrap().path()).unwrap();
    }
    // The keeper lets go of the deleted index and builds it again, then watches as before.
    eventually("a rebuilt index", || watching.load(Ordering::SeqCst) == 2);
    assert_eq!(hit_paths(&engine, &repo, "armadillo"), ["start.rs"]);
    write(&repo, "later.rs", "fn pangolin() {}\n");
    eventually("an edit after the rebuild", || hit_paths(&engine, &repo, "pangolin") == ["later.rs"]);

    stop.store(true, Ordering::SeqCst);
    keeper.join().expect("keeper thread");
    // Its writer was released: a normal index run works.
    engine.index(&repo, &Default::default(), &crate::util::quiet()).expect("index after the keeper");
}

/// The root moved away under a watcher: it deleted every file from the index, then went on
/// "updating" the moved tree's paths with nothing; deleted and made again, the watcher watched
/// nothing for ever. Now the watch ends with an error naming the root and keeps the index, and a
/// keeper takes the root up again when it comes back.
#[test]
fn a_root_moved_away_keeps_its_index_and_a_keeper_watches_it_again_when_it_is_back() {
    use docdex::engine::watch::WatchReport;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let env = Env::new();
    let repo = env.repo("moving");
    write(&repo, "start.rs", "fn armadillo() {}\n");
    let away = env.dir.path().join("away");
    let engine = env.engine();

    // A plain watch: it ends with an error naming the root; the index keeps the file.
    let stop = Arc::new(AtomicBool::new(false));
    let ready = Arc::new(AtomicBool::new(false));
    let h = {
        let (engine, repo, stop, ready) = (engine.clone(), repo.clone(), stop.clone(), ready.clone());
        std::thread::spawn(move || {
            engine.watch(&repo, &stop, &|r: WatchReport| {
                if matches!(r, WatchReport::Ready(_)) {
                    ready.store(true, Ordering::SeqCst);
                }
            })
        })
    };
    eventually("the catch-up run", || ready.load(Ordering::SeqCst));
    assert_eq!(hit_paths(&engine, &repo, "armadillo"), ["start.rs"]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    std::fs::rename(&repo, &away).unwrap();
    eventually("the watch ends", || h.is_finished());
    stop.store(true, Ordering::SeqCst);
    let watch = h.join().expect("watch thread");
    let err = watch.expect_err("the watch ends").to_string();
    assert!(err.contains("was deleted or moved away") && err.contains(repo.to_str().unwrap()), "{err}");
    std::fs::rename(&away, &repo).unwrap();
    assert_eq!(hit_paths(&engine, &repo, "armadillo"), ["start.rs"], "the index was kept");

    // A keeper: moved away and back, it watches the root again.
    let (stop, watching, keeper) = start_keeper(&engine, &repo);
    eventually("the keeper's first watch", || watching.load(Ordering::SeqCst) == 1);
    std::fs::rename(&repo, &away).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    std::fs::rename(&away, &repo).unwrap();
    eventually("watching again", || watching.load(Ordering::SeqCst) == 2);
    write(&repo, "later.rs", "fn pangolin() {}\n");
    eventually("an edit after the return", || hit_paths(&engine, &repo, "pangolin") == ["later.rs"]);
    stop.store(true, Ordering::SeqCst);
    keeper.join().expect("keeper thread");
}

/// `index` asked while a watcher is still catching up (a server's first minutes on a repo:
/// an agent's `docdex_index` tool call, or `docdex index` in a terminal) used to fail as
/// `index_busy`, naming the very process that was keeping the index; it now waits for the
/// catch-up and returns the index as the watcher made it.
#[test]
fn index_during_a_watchers_catch_up_waits_for_it_instead_of_failing_busy() {
    use docdex::engine::index::types::IndexState;
    use docdex::engine::watch::WatchReport;
    use docdex::engine::IndexOptions;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let env = Env::new();
    let repo = env.repo("big");
    // Enough files that the catch-up (a first index here) lasts long enough to be caught.
    for i in 0..3000 {
        write(&repo, &format!("m{}/f{i}.rs", i % 30), format!("fn item_{i}() -> u32 {{ {i} }}\n"));
    }
    let engine = env.engine();
    let stop = Arc::new(AtomicBool::new(false));
    let h = {
        let (engine, repo, stop) = (engine.clone(), repo.clone(), stop.clone());
        std::thread::spawn(move || engine.watch(&repo, &stop, &|_: WatchReport| {}))
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut caught = false;
    while std::time::Instant::now() < deadline && !h.is_finished() {
        if engine.status(&repo).is_ok_and(|s| s.index_state == IndexState::Updating) {
            caught = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    assert!(caught, "the watcher's catch-up run was never seen running");
    let summary = engine.index(&repo, &IndexOptions::default(), &|_: &_| {}).expect("index while a watcher catches up");
    assert_eq!(summary.files, 3000, "index returned after the catch-up: {summary:?}");
    assert!(summary.note.as_deref().is_some_and(|n| n.contains("watcher")), "{summary:?}");
    assert_eq!(hit_paths(&engine, &repo, "item_2999").first().map(String::as_str), Some("m29/f2999.rs"));
    stop.store(true, Ordering::SeqCst);
    h.join().expect("watch thread").expect("watch ends cleanly");
}

/// A watcher whose run stopped reporting (wedged) is not waited for: `index` returns at once,
/// saying so, instead of holding the caller (an agent's request, a terminal) for ever.
#[test]
fn index_does_not_wait_for_a_watcher_run_that_stopped_reporting() {
    use docdex::engine::IndexOptions;
    let env = Env::new();
    let repo = env.repo("wedged");
    write(&repo, "a.rs", "fn a() {}\n");
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &|_: &_| {}).unwrap();
    let repo_ref = engine.resolve_repo(&repo).unwrap();
    // This process holds the writer, as a watcher would, and its status says a watched run
    // began three minutes ago and has written nothing since.
    let _writer = engine.open_index_session(&repo_ref, false).unwrap();
    let path = repo_ref.status_path();
    let mut status: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    status["state"] = "updating".into();
    status["watching"] = true.into();
    status["pid"] = std::process::id().into();
    status["updated_ms"] = (now - 180_000).into();
    std::fs::write(&path, serde_json::to_vec(&status).unwrap()).unwrap();
    let started = std::time::Instant::now();
    let summary = engine.index(&repo, &IndexOptions::default(), &|_: &_| {}).expect("a summary, not busy");
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "index waited {:?}", started.elapsed());
    let note = summary.note.unwrap_or_default();
    assert!(note.contains("no progress for a while") && note.contains("docdex status"), "{note}");
    assert_eq!(summary.files, 1);
}

#[test]
fn an_edit_of_git_info_exclude_under_a_watcher_drops_and_restores_what_it_names() {
    let env = Env::new();
    let repo = env.repo("w");
    crate::util::git(&repo, &["init", "-q"]);
    write(&repo, "notes.tmp", "scratch jackalope notes\n");
    write(&repo, "main.rs", "fn jackalope_main() {}\n");
    let engine = env.engine();
    let watcher = Watcher::start(&engine, &repo);
    assert_eq!(hit_paths(&engine, &repo, "jackalope").len(), 2);

    let exclude = repo.join(".git/info/exclude");
    let before = std::fs::read_to_string(&exclude).unwrap_or_default();
    std::fs::write(&exclude, format!("{before}*.tmp\n")).unwrap();
    eventually("the excluded file leaves the index", || hit_paths(&engine, &repo, "jackalope") == ["main.rs"]);
    std::fs::write(&exclude, before).unwrap();
    eventually("it comes back once no longer excluded", || hit_paths(&engine, &repo, "jackalope").len() == 2);
    watcher.stop();
}

/// A nested repository (a clone inside the worktree, not a submodule) has rules of its own
/// (`info/exclude`, its `core.excludesFile`) that the watcher did not watch: an edit there
/// applied only at the next full `docdex index`, and a `git init` inside the worktree (where
/// the top's `.gitignore` stops applying) went unnoticed. Both now run a full update at once.
#[test]
fn the_rules_of_a_nested_repository_under_a_watcher_apply_at_once() {
    use crate::util::git;
    let env = Env::new();
    let repo = env.repo("w");
    git(&repo, &["init", "-q"]);
    write(&repo, ".gitignore", "*.log\n");
    write(&repo, "main.rs", "fn jackalope_main() {}\n");
    write(&repo, "vendor/lib/notes.tmp", "jackalope vendored notes\n");
    git(&repo.join("vendor/lib"), &["init", "-q"]);
    write(&repo, "extra/draft.tmp", "wombat draft\n");
    write(&repo, "extra/run.log", "wombat log\n");
    let engine = env.engine();
    let watcher = Watcher::start(&engine, &repo);
    assert_eq!(hit_paths(&engine, &repo, "jackalope").len(), 2);
    assert_eq!(hit_paths(&engine, &repo, "wombat"), ["extra/draft.tmp"]);

    std::fs::write(repo.join("vendor/lib/.git/info/exclude"), "*.tmp\n").unwrap();
    eventually("excluded by the nested repository", || hit_paths(&engine, &repo, "jackalope") == ["main.rs"]);

    // A repository made while watching: the top's `.gitignore` stops at it, and its own
    // `info/exclude` is watched from then on.
    git(&repo.join("extra"), &["init", "-q"]);
    eventually("the top's *.log no longer applies in it", || hit_paths(&engine, &repo, "wombat").len() == 2);
    std::fs::write(repo.join("extra/.git/info/exclude"), "*.tmp\n").unwrap();
    eventually("its own exclude applies", || hit_paths(&engine, &repo, "wombat") == ["extra/run.log"]);
    watcher.stop();
}

/// A config file a repository's `.git/config` includes (`[include] path`, relative to
/// `.git/`) that names the excludes file: git follows the include, and an edit of it changes
/// what git ignores. It was neither read nor watched; now an edit of it, outside the
/// repository, applies at once under a watcher as an edit of `.git/info/exclude` does.
#[test]
fn an_edit_of_an_included_git_config_under_a_watcher_applies_at_once() {
    use crate::util::git;
    let env = Env::new();
    let repo = env.repo("w");
    git(&repo, &["init", "-q"]);
    let conf = env.dir.path().join("conf");
    write(&conf, "tmp-ignore", "*.tmp\n");
    write(&conf, "txt-ignore", "*.txt\n");
    let names = |file: &str| format!("[core]\n\texcludesFile = {}\n", conf.join(file).display());
    write(&conf, "inc.cfg", names("tmp-ignore"));
    git(&repo, &["config", "include.path", "../../conf/inc.cfg"]);
    write(&repo, "notes.tmp", "scratch quokka notes\n");
    write(&repo, "notes.txt", "plain quokka notes\n");
    write(&repo, "main.rs", "fn quokka_main() {}\n");
    let ignored = |rel: &str| {
        let out = std::process::Command::new("git").args(["check-ignore", "-q", rel]).current_dir(&repo).output();
        out.unwrap().status.code() == Some(0)
    };
    assert!(ignored("notes.tmp") && !ignored("notes.txt"), "git follows the include");
    let engine = env.engine();
    let watcher = Watcher::start(&engine, &repo);
    let hits = || {
        let mut h = hit_paths(&engine, &repo, "quokka");
        h.sort();
        h
    };
    assert_eq!(hits(), ["main.rs", "notes.txt"]);

    write(&conf, "inc.cfg", names("txt-ignore"));
    assert!(!ignored("notes.tmp") && ignored("notes.txt"));
    eventually("the included file's new excludes file applies", || hits() == ["main.rs", "notes.tmp"]);
    watcher.stop();
}

#[test]
fn docdex_watch_shows_its_catch_up_runs_progress_on_a_terminal() {
    // `script` gives the command a terminal, as a person running it has.
    if std::process::Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no script(1) for a pseudo-terminal");
        return;
    }
    let env = Env::new();
    let repo = env.repo("w");
    for i in 0..4000 {
        write(&repo, &format!("src/m{}/f{i}.rs", i % 30), format!("fn numbat_{i}() {{}}\n"));
    }
    let log = env.dir.path().join("terminal.log");
    let command = format!(
        "timeout -s INT 6 {} --home {} watch --repo {}",
        env!("CARGO_BIN_EXE_docdex"),
        env.home().display(),
        repo.display()
    );
    let out = std::process::Command::new("script").args(["-qec", &command]).arg(&log).output().unwrap();
    let screen = String::from_utf8_lossy(&std::fs::read(&log).unwrap()).into_owned();
    let ready = screen.find("ready:").unwrap_or_else(|| panic!("no ready line: {screen} {out:?}"));
    let bar = screen.find("files · ETA");
    assert!(bar.is_some_and(|b| b < ready), "the catch-up drew no progress before ready: {screen}");
}

/// `docdex index --reembed` while a watcher (a server, `docdex watch`) holds the writer: the
/// watcher embeds with the settings it started with and never re-embeds, so the command says
/// that and what to do, as `index_busy` (exit 4). It said the index was up to date and then
/// that no embedder answered, while `docdex check` showed the embedder answering.
#[test]
fn reembed_under_a_running_watcher_names_it_and_says_to_stop_it_first() {
    let fake = docdex::testing::fake_ollama::FakeOllama::start(Default::default()).expect("fake");
    let env = Env::new();
    env.write_config(&crate::util::llm_config("ollama", &fake.url(), "fake-chat", "fake-embed"));
    let repo = env.repo("r");
    write(&repo, "src/lib.rs", "pub fn pelican() {}\n");
    let watcher = Watcher::start(&env.engine(), &repo);
    let out = env.run(&["index", "--repo", repo.to_str().unwrap(), "--reembed"]);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(4), "index busy: {stdout}{stderr}");
    let pid = format!("pid {}", std::process::id());
    assert!(stderr.contains("--reembed needs the index writer") && stderr.contains(&pid), "{stderr}");
    assert!(stderr.contains("Stop it (Ctrl-C), run `docdex index --repo"), "{stderr}");
    assert!(!stderr.contains("no embedder answered") && !stdout.contains("nothing to do"), "{stdout}{stderr}");
    let json = env.run(&["index", "--repo", repo.to_str().unwrap(), "--reembed", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap_or_default();
    let e: serde_json::Value = serde_json::from_slice(&json.stderr).unwrap_or(v);
    assert!(e.to_string().contains("index_busy"), "{e}; {}", String::from_utf8_lossy(&json.stderr));
    watcher.stop();
}

/// A `docdex watch` child with this env's home, its stderr piped.
fn spawn_watch(env: &Env, repo: &std::path::Path, vars: &[(&str, &str)]) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_docdex"))
        .args(["watch", "--repo", repo.to_str().unwrap()])
        .env("DOCDEX_HOME", env.home())
        .envs(vars.iter().copied())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn docdex watch")
}

fn sigint(child: &std::process::Child) {
    // SAFETY: plain kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
}

/// The child's exit code, waiting at most `max` (killed and failed after).
fn exit_code_within(child: &mut std::process::Child, max: std::time::Duration, what: &str) -> Option<i32> {
    let deadline = std::time::Instant::now() + max;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code();
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("docdex watch did not exit within {max:?} of {what}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// `docdex watch`: Ctrl-C drops the embedding request in flight. It waited for the request to
/// finish (30 s here, up to `[llm] request_timeout_secs` with a model that hangs).
#[test]
fn ctrl_c_ends_docdex_watch_with_an_embedding_request_in_flight() {
    use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
    let fake = FakeOllama::start(FakeOllamaOptions { embed_delay_ms: 30_000, ..Default::default() }).expect("fake");
    let env = Env::new();
    env.write_config(&crate::util::llm_config("ollama", &fake.url(), "fake-chat", "fake-embed"));
    let repo = env.repo("r");
    for i in 0..4 {
        write(&repo, &format!("n{i}.md"), format!("# Note {i}\n\nword{i} topic{i}\n"));
    }
    let mut child = spawn_watch(&env, &repo, &[]);
    let batch_sent =
        || fake.requests().iter().any(|(p, b)| p == "/api/embed" && b["input"].as_array().is_some_and(|a| a.len() > 1));
    eventually("an embedding batch in flight", batch_sent);
    sigint(&child);
    let started = std::time::Instant::now();
    let code = exit_code_within(&mut child, std::time::Duration::from_secs(10), "the first Ctrl-C");
    assert_eq!(code, Some(0), "a clean stop");
    assert!(started.elapsed() < std::time::Duration::from_secs(3), "stopped in {:?}", started.elapsed());
}

/// `docdex watch`: a second Ctrl-C exits at once with status 130, as `docdex serve` does, while
/// the first waits for the run to stop (held here at a pause point). The second was ignored.
#[test]
fn a_second_ctrl_c_ends_docdex_watch_at_once() {
    use std::io::Read;
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "app.py", "import util\n\ndef main():\n    return util.helper()\n");
    write(&repo, "util.py", "def helper():\n    return 1\n");
    let mut child = spawn_watch(&env, &repo, &[("DOCDEX_TEST_PAUSE_AT", "before-graph-write")]);
    let mut stderr = child.stderr.take().expect("stderr");
    let mut seen = Vec::new();
    let mut buf = [0u8; 512];
    while !String::from_utf8_lossy(&seen).contains("paused at before-graph-write") {
        let n = stderr.read(&mut buf).expect("read stderr");
        assert!(n > 0, "docdex watch ended before the pause: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    sigint(&child);
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(child.try_wait().unwrap().is_none(), "the first Ctrl-C waits for the run to stop");
    sigint(&child);
    let code = exit_code_within(&mut child, std::time::Duration::from_secs(2), "the second Ctrl-C");
    assert_eq!(code, Some(130));
}

/// A watched batch ends by keeping its segments' file table, so the next search (the
/// workbench's, or a one-shot `docdex search` process) maps it instead of tabulating it.
#[test]
fn a_watched_batch_keeps_the_file_table_for_the_next_search() {
    use std::os::unix::fs::MetadataExt;
    let env = Env::new();
    let repo = env.repo("wt");
    write(&repo, "start.rs", "fn armadillo() {}\n");
    let engine = env.engine();
    let watcher = Watcher::start(&engine, &repo);
    let table = engine.resolve_repo(&repo).unwrap().index_dir().join(docdex::engine::search::file_bm25::FILE_NAME);
    let identity = || std::fs::metadata(&table).ok().map(|m| m.ino());
    let caught_up = identity().expect("the catch-up run kept a file table");
    write(&repo, "next.rs", "fn pangolin() {}\n");
    eventually("the batch's file table", || identity().is_some_and(|i| i != caught_up));
    let kept = identity();
    assert_eq!(hit_paths(&env.engine(), &repo, "pangolin"), ["next.rs"]);
    assert_eq!(identity(), kept, "the search had to tabulate the batch's table again");
    watcher.stop();
}

/// The watcher's queue counts the files not yet in the text index: 0 once a batch is
/// searchable, while its embeddings are still being made. It kept the batch's size until they
/// were done, so after a 30,000-file checkout `status` said `ready` with 24,600 files queued
/// for ten seconds.
#[test]
fn a_batch_searchable_while_its_embeddings_are_made_is_not_counted_as_queued() {
    use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
    let fake = FakeOllama::start(FakeOllamaOptions { embed_delay_ms: 4_000, ..Default::default() }).expect("fake");
    let env = Env::new();
    let engine = env.engine_for("ollama", &fake.url(), "fake-chat", "fake-embed");
    let repo = env.repo("q");
    write(&repo, "start.md", "# Start\n\narmadillo\n");
    let watcher = Watcher::start(&engine, &repo);
    for i in 0..5 {
        write(&repo, &format!("n{i}.md"), format!("# Note {i}\n\npangolin{i}\n"));
    }
    let batch_sent =
        || fake.requests().iter().any(|(p, b)| p == "/api/embed" && b["input"].as_array().is_some_and(|a| a.len() > 1));
    eventually("the batch's embeddings in flight", batch_sent);
    let hits = hit_paths(&engine, &repo, "pangolin3");
    assert_eq!(hits.first().map(String::as_str), Some("n3.md"), "the batch is searchable: {hits:?}");
    let status = engine.status(&repo).unwrap();
    assert_eq!(status.queued_files, Some(0), "{:?} {:?}", status.index_state, status.progress);
    watcher.stop();
}
