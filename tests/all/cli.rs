//! The real binary: JSON contracts, exit codes, messages, default repo, paths outside the repo.

use crate::util::{sample_repo, write, Env};
use std::process::Command;

/// The real binary run in `dir` (not the repository root) with `env`'s home.
fn run_in(env: &Env, dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_docdex"))
        .args(args)
        .current_dir(dir)
        .env("DOCDEX_HOME", env.home())
        .env("NO_COLOR", "1")
        .output()
        .expect("run docdex")
}

#[test]
fn search_json_follows_the_contract() {
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    let v = env.json(&["search", "--repo", r, "--json", "session", "store", "--limit", "2"]);
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["query"], "session store");
    assert_eq!(v["index_state"], "ready");
    let c = v["confidence"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&c));
    assert!(v["project_id"].as_str().unwrap().len() == 64);
    assert!(v["timing_ms"]["total"].is_number());
    assert!(v["next_cursor"].is_string());
    assert_eq!(v["pii_redacted"], false);
    let hit = &v["results"][0];
    assert_eq!(hit["path"], "src/auth/session.rs");
    for key in ["chunk_id", "lang", "snippet", "highlights"] {
        assert!(!hit[key].is_null(), "missing {key}");
    }
    assert!(hit["line_start"].as_u64().unwrap() >= 1);
    assert!(hit["line_end"].as_u64().unwrap() >= hit["line_start"].as_u64().unwrap());
    assert!(hit["score"].as_f64().unwrap() > 0.0);
    assert_eq!(hit["generation"], v["generation"]);
    assert!(hit["page_start"].is_null());
}

#[test]
fn status_json_follows_the_contract() {
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    write(&repo, "blob.bin", b"\x00\x00binary".as_slice());
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    let v = env.json(&["status", "--repo", r, "--json"]);
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["index_state"], "ready");
    assert_eq!(v["documents"], 5);
    assert!(v["chunks"].as_u64().unwrap() >= 5);
    assert_eq!(v["queued_files"], 0);
    assert!(v["last_indexed_ms"].as_u64().unwrap() > 0);
    assert!(v["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("blob.bin")));
    assert!(v["last_event"]["type"].is_string());
}

#[test]
fn unknown_and_unindexed_repos_fail_with_guidance() {
    let env = Env::new();
    let out = env.run(&["search", "--repo", "/definitely/not/here", "x"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));

    let repo = env.repo("fresh");
    let r = repo.to_str().unwrap();
    for args in [vec!["search", "--repo", r, "x"], vec!["status", "--repo", r]] {
        let out = env.run(&args);
        assert_eq!(out.status.code(), Some(3), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("not indexed") && err.contains("docdex index --repo"), "{err}");
    }
    // JSON mode prints a machine-readable error too.
    let out = env.run(&["search", "--repo", r, "--json", "x"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["error"]["code"], "not_indexed");
}

#[test]
fn get_prints_lines_and_refuses_paths_outside_the_repo() {
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    write(env.dir.path(), "outside.txt", "secret");
    std::os::unix::fs::symlink(env.dir.path().join("outside.txt"), repo.join("escape.txt")).unwrap();
    let r = repo.to_str().unwrap();
    let out = env.run(&["get", "--repo", r, "src/parser.py", "--lines", "2-3"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("2:") && text.contains("Read a configuration file") && !text.contains("def parse_config"),
        "{text}"
    );
    // A blank line at the end of a range is printed too, and a range past the end is refused.
    // README.md: "# Sample", "", "A sample repository.", ...
    let out = env.run(&["get", "--repo", r, "README.md", "--lines", "1-2"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2, "{out:?}");
    let out = env.run(&["get", "--repo", r, "README.md", "--lines", "2"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim_end(), "    2:", "{out:?}");
    let out = env.run(&["get", "--repo", r, "README.md", "--lines", "50-60"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("has 7 lines, so line 50 is past its end"), "{out:?}");
    for bad in ["../outside.txt", "escape.txt", "/etc/passwd", "src/../../outside.txt"] {
        let out = env.run(&["get", "--repo", r, bad]);
        assert!(!out.status.success(), "{bad} was served");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("outside the repository"), "{bad}: {err}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("secret"));
    }
    let v = env.json(&["get", "--repo", r, "README.md", "--json", "--lines", "1"]);
    assert_eq!(v["text"], "# Sample");
    assert_eq!(v["total_lines"], 7);
}

#[test]
fn repo_defaults_to_git_root_of_current_directory() {
    let env = Env::new();
    let repo = env.repo("proj");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    sample_repo(&repo);
    let run_in = |dir: &std::path::Path, args: &[&str]| run_in(&env, dir, args);
    let out = run_in(&repo.join("src/auth"), &["index"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let canonical = std::fs::canonicalize(&repo).unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains(canonical.to_str().unwrap()), "human output names the repo");
    let out = run_in(&repo.join("src"), &["search", "SessionStore"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(canonical.to_str().unwrap()) && text.contains("src/auth/session.rs"), "{text}");
    // `docdex check` run inside an indexed repository checks it too.
    let out = run_in(&repo.join("src"), &["check", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let item = v["items"].as_array().unwrap().iter().find(|i| i["name"] == "repo_index").expect("repo_index");
    assert_eq!(item["status"], "ok", "{item}");
    // `--repo .` in a subdirectory names the subdirectory; the error points at the repository.
    let out = run_in(&repo.join("src"), &["search", "--repo", ".", "SessionStore"]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("lies inside the git repository") && err.contains("leave out --repo"), "{err}");
}

#[test]
fn repo_defaults_to_the_indexed_repository_above_a_non_git_subdirectory() {
    let env = Env::new();
    let repo = env.repo("plain");
    sample_repo(&repo);
    let other = env.repo("other");
    let index = env.run(&["index", "--repo", repo.to_str().unwrap()]);
    assert!(index.status.success(), "{}", String::from_utf8_lossy(&index.stderr));
    let canonical = std::fs::canonicalize(&repo).unwrap();
    // Inside a subfolder with no git root above, the indexed repository is the one meant.
    let out = run_in(&env, &repo.join("src/auth"), &["search", "SessionStore"]);
    let (text, err) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{err}");
    assert!(text.contains(canonical.to_str().unwrap()) && text.contains("src/auth/session.rs"), "{text}");
    let out = run_in(&env, &repo.join("src/auth"), &["impact", "session.rs", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["file"], "src/auth/session.rs", "{v}");
    // Only an enclosing root counts: the parent and a sibling stay themselves (not indexed).
    for dir in [env.repo(""), other] {
        let out = run_in(&env, &dir, &["search", "SessionStore"]);
        assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stdout));
        let err = String::from_utf8_lossy(&out.stderr);
        let here = std::fs::canonicalize(&dir).unwrap();
        assert!(err.contains(&format!("--repo {}", here.display())), "{err}");
    }
}

/// At the repository's root, a path that climbs out and back in (`../proj/src/auth`, as a shell
/// completes it from the parent) names the folder inside; it was taken repo-relative, so it
/// left the repository and was refused (tour30 F5). Climbing out for good is still refused.
#[test]
fn a_path_typed_at_the_root_that_climbs_back_inside_is_inside() {
    let env = Env::new();
    let repo = env.repo("proj");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    sample_repo(&repo);
    std::fs::write(repo.parent().unwrap().join("outside.txt"), "secret").unwrap();
    assert!(run_in(&env, &repo, &["index"]).status.success());
    let out = run_in(&env, &repo, &["search", "session", "--path", "../proj/src/auth/", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let paths: Vec<&str> = v["results"].as_array().unwrap().iter().map(|h| h["path"].as_str().unwrap()).collect();
    assert!(!paths.is_empty() && paths.iter().all(|p| p.starts_with("src/auth/")), "{paths:?}");
    let out = run_in(&env, &repo, &["get", "../proj/src/parser.py", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for bad in ["../outside.txt", "../proj/../outside.txt"] {
        let out = run_in(&env, &repo, &["search", "secret", "--path", bad]);
        assert!(
            !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("outside the repository"),
            "{bad}"
        );
    }
    // Typed plainly at the root, a path is repo-relative as before.
    let out = run_in(&env, &repo, &["search", "session", "--path", "src/auth", "--json"]);
    assert!(out.status.success());
}

#[test]
fn file_arguments_typed_in_a_subdirectory_are_relative_to_it() {
    let env = Env::new();
    let repo = env.repo("proj");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    sample_repo(&repo);
    std::fs::write(repo.parent().unwrap().join("outside.txt"), "secret").unwrap();
    let run_in = |dir: &std::path::Path, args: &[&str]| run_in(&env, dir, args);
    let json_in = |dir: &std::path::Path, args: &[&str]| -> serde_json::Value {
        let out = run_in(dir, args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let auth = repo.join("src/auth");
    assert!(run_in(&repo, &["index"]).status.success());
    // What tab completion offers in src/auth, and the repo-relative path, name the same file.
    for given in ["session.rs", "./session.rs", "src/auth/session.rs"] {
        assert_eq!(json_in(&auth, &["get", given, "--json"])["path"], "src/auth/session.rs", "{given}");
        assert_eq!(json_in(&auth, &["impact", given, "--json"])["file"], "src/auth/session.rs", "{given}");
        assert_eq!(json_in(&auth, &["impact", "--file", given, "--json"])["file"], "src/auth/session.rs");
        let v = json_in(&auth, &["symbols", "--file", given, "--json"]);
        assert!(v["results"].as_array().unwrap().iter().any(|s| s["name"] == "SessionStore"), "{given}: {v}");
    }
    assert_eq!(json_in(&repo.join("src"), &["get", "parser.py", "--json"])["path"], "src/parser.py");
    // A citation pasted from a search hit reads its lines, and names the file elsewhere.
    for (dir, cited) in [(&repo, "src/auth/session.rs:2-3"), (&auth, "session.rs:2-3")] {
        let v = json_in(dir, &["get", cited, "--json"]);
        assert_eq!(
            (v["path"].as_str(), v["line_start"].as_u64(), v["line_end"].as_u64()),
            (Some("src/auth/session.rs"), Some(2), Some(3))
        );
    }
    assert_eq!(json_in(&auth, &["get", "session.rs:4", "--json"])["text"], "impl SessionStore {");
    assert_eq!(json_in(&auth, &["impact", "session.rs:2-3", "--json"])["file"], "src/auth/session.rs");
    // --path is a prefix relative to where it is typed too.
    let v = json_in(&repo.join("src"), &["search", "session", "--path", "auth/", "--json"]);
    let paths: Vec<&str> = v["results"].as_array().unwrap().iter().map(|h| h["path"].as_str().unwrap()).collect();
    assert!(!paths.is_empty() && paths.iter().all(|p| p.starts_with("src/auth/")), "{paths:?}");
    // A path that climbs out of the repository is still refused, wherever it is typed.
    for (dir, bad) in [(&auth, "../../../outside.txt"), (&repo, "../outside.txt")] {
        let out = run_in(dir, &["get", bad]);
        assert!(!out.status.success(), "{bad} was served");
        assert!(String::from_utf8_lossy(&out.stderr).contains("outside the repository"));
        assert!(!String::from_utf8_lossy(&out.stdout).contains("secret"));
    }
    for args in [&["symbols", "--file", "../../../outside.txt"][..], &["impact", "../../../outside.txt"]] {
        let out = run_in(&auth, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("outside the repository"), "{args:?}: {out:?}");
    }
    let out = run_in(&auth, &["impact"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("name a file"), "{out:?}");
    // A missing file that climbs but stays inside is missing, not "outside the repository".
    for args in [&["impact", "../gone.rs"][..], &["impact", "diagnostics", "--file", "../gone.rs"]] {
        let out = run_in(&auth, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("src/gone.rs") && err.contains("no such file") && !err.contains("outside"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn a_closed_stderr_is_no_crash() {
    // `docdex search ... 2>&1 >/dev/null | head`: the reader of stderr is gone before the
    // command writes its notes or its error; it must still exit with its own code, not 101.
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    let r = repo.to_str().unwrap();
    for (args, code) in [
        (&["search", "--repo", r, "session"][..], 3),
        (&["index", "--repo", r][..], 0),
        (&["search", "--repo", r, "session"][..], 0),
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_docdex"))
            .args(args)
            .env("DOCDEX_HOME", env.home())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        drop(child.stderr.take());
        assert_eq!(child.wait().expect("wait").code(), Some(code), "{args:?}");
    }
}

#[test]
fn a_reader_that_closes_stdout_early_ends_the_command_quietly() {
    // `docdex get big.rs --json | head -1`: the reader is gone long before the answer (far over a
    // pipe's 64 KiB buffer) is written. Like `ls | head`, the command exits with its own status
    // and says nothing: "error: Broken pipe" with status 1 was printed for --json answers.
    use std::io::BufRead;
    let env = Env::new();
    let repo = env.repo("r");
    let body: String = (0..6000).map(|i| format!("pub fn walrus_{i}() -> u32 {{ {i} }}\n")).collect();
    write(&repo, "big.rs", &body);
    let r = repo.to_str().unwrap();
    assert!(env.run(&["index", "--repo", r]).status.success());
    for args in [
        &["get", "--repo", r, "big.rs", "--json"][..],
        &["get", "--repo", r, "big.rs"][..],
        &["symbols", "--repo", r, "--file", "big.rs", "--json"][..],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_docdex"))
            .args(args)
            .env("DOCDEX_HOME", env.home())
            .env("NO_COLOR", "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        let mut first = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut first).expect("read");
        assert!(!first.is_empty(), "{args:?}: no output");
        // The reader is dropped here: the pipe is closed with most of the answer unwritten.
        let out = child.wait_with_output().expect("wait");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("error") && !stderr.contains("Broken pipe"), "{args:?}: {stderr}");
    }
}

#[test]
fn a_watch_whose_reader_has_gone_ends_at_its_next_event() {
    // `docdex watch --json | head -1`: the watch ran on for ever, writing to no one.
    use std::io::BufRead;
    let env = Env::new();
    let repo = env.repo("w");
    write(&repo, "a.rs", "fn kiwi() {}\n");
    let mut child = spawn_json_watch(&env, &repo, std::process::Stdio::piped());
    let mut ready = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut ready).expect("read");
    assert!(ready.contains("\"ready\""), "{ready}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    for i in 0.. {
        if child.try_wait().expect("try_wait").is_some() {
            break;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("the watch ran on after its reader closed stdout");
        }
        write(&repo, &format!("b{i}.rs"), "fn emu() {}\n");
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("error"), "{stderr}");
}

#[test]
fn get_search_and_symbols_show_a_files_control_characters_instead_of_obeying_them() {
    // A clear-screen CSI, a title OSC with its bell and a carriage return in a repository file
    // went raw to the terminal from `get`, `search` and `symbols`; --json stays exact.
    let env = Env::new();
    let repo = env.repo("esc");
    write(&repo, "kiwi.rs", "pub fn kiwi_parser(\u{1b}[2J: u8) {\n    // kiwi \u{1b}]0;pwned\u{7} x\rhid\tden\n}\n");
    let r = repo.to_str().unwrap();
    assert!(env.run(&["index", "--repo", r]).status.success());
    for args in [
        &["get", "--repo", r, "kiwi.rs"][..],
        &["search", "--repo", r, "kiwi"][..],
        &["symbols", "--repo", r, "kiwi_parser"][..],
        &["symbols", "--repo", r, "--file", "kiwi.rs"][..],
    ] {
        let out = env.run(args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(!text.chars().any(|c| c.is_control() && c != '\n' && c != '\t'), "{args:?}: {text:?}");
        assert!(text.contains("\\u{1b}[2J"), "{args:?}: {text}");
    }
    let text = env.run(&["get", "--repo", r, "kiwi.rs"]).stdout;
    assert!(String::from_utf8_lossy(&text).contains("\\u{1b}]0;pwned\\u{7} x\\rhid\tden"));
    let v = env.json(&["get", "--repo", r, "kiwi.rs", "--json"]);
    assert!(v["text"].as_str().unwrap().contains("\u{1b}]0;pwned\u{7} x\rhid\tden"), "{v}");
}

#[test]
fn fetched_pages_and_ast_samples_show_control_characters_instead_of_obeying_them() {
    // A web page is anyone's text: its escape sequences went raw to the terminal from
    // `web-fetch`, as a repository file's did from `ast query` samples.
    use crate::web_support::{doc_page, web_config, Fixture, Reply};
    let not_obeyed = |text: &str| !text.chars().any(|c| c.is_control() && c != '\n' && c != '\t');
    let page = doc_page("Kiwi \u{1b}]0;pwned\u{7} guide", "The kiwi parser \u{1b}[2J reads frobnicate options.");
    let site = Fixture::start("127.0.0.1", move |_, _, _| Reply::html(page.clone()));
    let env = Env::new();
    env.write_config(&web_config(&site.url("/html/"), "", "", "engine = \"http\"\n"));
    let out = env.run(&["web-fetch", &site.url("/doc/kiwi")]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success() && text.contains("frobnicate"), "{text}");
    assert!(not_obeyed(&text) && text.contains("# Kiwi \\u{1b}]0;pwned\\u{7} guide"), "{text:?}");
    assert!(text.contains("The kiwi parser \\u{1b}"), "{text:?}");

    let repo = env.repo("esc");
    write(&repo, "kiwi.rs", "fn kiwi_parser() {\n    let s = \"\u{1b}[2J\";\n}\n");
    let r = repo.to_str().unwrap();
    assert!(env.run(&["index", "--repo", r]).status.success());
    let out = env.run(&["ast", "query", "--repo", r, "--kinds", "string_literal"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success() && text.contains("kiwi.rs"), "{text}");
    assert!(not_obeyed(&text) && text.contains("\\u{1b}[2J"), "{text:?}");
}

#[test]
fn a_file_name_with_an_escape_sequence_is_shown_not_obeyed() {
    // Every human line passes one guard: a file named `z<ESC>[2Jz.rs` cleared the terminal from
    // search headings, symbol locations, impact and errors quoting it.
    let env = Env::new();
    let repo = env.repo("esc");
    write(&repo, "z\u{1b}[2Jz.rs", "fn zebra_walrus() {}\n");
    let r = repo.to_str().unwrap();
    assert!(env.run(&["index", "--repo", r]).status.success());
    for (args, code) in [
        (&["search", "--repo", r, "zebra_walrus"][..], 0),
        (&["symbols", "--repo", r, "zebra_walrus"][..], 0),
        (&["impact", "--repo", r, "z\u{1b}[2Jz.rs"][..], 0),
        (&["get", "--repo", r, "q\u{1b}[2Jq.rs"][..], 2),
    ] {
        let out = env.run(args);
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.status.code(), Some(code), "{args:?}: {text}");
        assert!(!text.chars().any(|c| c.is_control() && c != '\n' && c != '\t'), "{args:?}: {text:?}");
        assert!(text.contains("\\u{1b}[2J"), "{args:?}: {text}");
    }
    // JSON keeps the name exact.
    let v = env.json(&["search", "--repo", r, "zebra_walrus", "--json"]);
    assert_eq!(v["results"][0]["path"], "z\u{1b}[2Jz.rs");
}

#[test]
fn repo_list_and_remove() {
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    let v = env.json(&["repo", "list", "--json"]);
    assert_eq!(v["repos"].as_array().unwrap().len(), 1);
    assert_eq!(v["repos"][0]["files"], 5);
    let state_dir = env.engine().resolve_repo(&repo).unwrap().state_dir;
    assert!(state_dir.exists());
    let out = env.run(&["repo", "remove", r, "--purge"]);
    assert!(out.status.success());
    assert!(!state_dir.exists());
    assert_eq!(env.json(&["repo", "list", "--json"])["repos"].as_array().unwrap().len(), 0);
    let out = env.run(&["repo", "remove", r]);
    assert_eq!(out.status.code(), Some(3));
    // Removed with its index kept, then purged as the message says: the index goes too.
    env.json(&["index", "--repo", r, "--json"]);
    let out = env.run(&["repo", "remove", r]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("--purge deletes it"), "{out:?}");
    assert!(state_dir.exists());
    let out = env.run(&["repo", "remove", r, "--purge"]);
    assert!(out.status.success(), "{out:?}");
    assert!(!state_dir.exists());
    assert_eq!(env.run(&["repo", "remove", r, "--purge"]).status.code(), Some(3), "nothing left to purge");
}

/// tour36 F2: `repo remove --purge` deleted the index under a running watcher (which died) or
/// server (which rebuilt it and registered it again, undoing the purge unsaid). It is refused
/// while another process holds the index writer, naming it, and done once it lets go.
#[test]
fn purging_a_repository_another_process_is_writing_is_refused() {
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    let engine = env.engine();
    let repo_ref = engine.resolve_repo(&repo).unwrap();
    let writer = engine.open_index_session(&repo_ref, false).unwrap();
    let out = env.run(&["repo", "remove", r, "--purge"]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains(&format!("pid {}", std::process::id())) && said.contains("stop that process"), "{said}");
    assert!(repo_ref.state_dir.exists(), "nothing deleted");
    assert_eq!(env.json(&["repo", "list", "--json"])["repos"].as_array().unwrap().len(), 1, "still registered");
    drop(writer);
    let out = env.run(&["repo", "remove", r, "--purge"]);
    assert!(out.status.success(), "{out:?}");
    assert!(!repo_ref.state_dir.exists());
}

/// A repository moved or deleted: `repo list` says its folder is gone and what to run, and its
/// index can still be purged after a plain `repo remove` forgot it (it said "not registered",
/// leaving the index under the home for good), by the path it had, relative or absolute.
#[test]
fn a_moved_repository_is_listed_missing_and_its_kept_index_can_be_purged() {
    let env = Env::new();
    let repo = env.repo("old");
    sample_repo(&repo);
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    let state_dir = env.engine().resolve_repo(&repo).unwrap().state_dir;
    assert_eq!(env.json(&["repo", "list", "--json"])["repos"][0]["missing"], false);
    std::fs::rename(&repo, repo.with_file_name("new")).unwrap();
    let v = env.json(&["repo", "list", "--json"]);
    assert_eq!(v["repos"][0]["missing"], true, "{v}");
    let list = String::from_utf8(env.run(&["repo", "list"]).stdout).unwrap();
    assert!(
        list.contains("MISSING: the folder is gone") && list.contains(&format!("repo remove {r} --purge")),
        "{list}"
    );
    let out = env.run(&["repo", "remove", r]);
    assert!(out.status.success(), "{out:?}");
    assert!(state_dir.exists());
    let parent = repo.parent().unwrap();
    let out = run_in(&env, parent, &["repo", "remove", "old", "--purge"]);
    assert!(out.status.success(), "{out:?}");
    assert!(!state_dir.exists(), "the kept index of a deleted folder is purged");
    let out = run_in(&env, parent, &["repo", "remove", "old"]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("repository {r} is not registered")), "named as an absolute path: {err}");
}

/// `docdex completions SHELL` prints a script that completes the commands and their flags,
/// with no home needed (it opens no state), and stdout holds only the script.
#[test]
fn completions_complete_every_command_and_its_flags() {
    let env = Env::new();
    let out = env.run(&["completions", "bash"]);
    assert!(out.status.success(), "{out:?}");
    let script = String::from_utf8(out.stdout).unwrap();
    assert!(script.contains("complete -F _docdex") && script.contains("docdex__subcmd__search"), "{}", &script[..200]);
    assert!(script.contains("--agent-id") && script.contains("--path-prefix"), "aliases complete too");
    // A flag with a fixed set of values completes them, not file names (tour37 F11).
    assert!(
        script.contains(
            r#"--mode)
                    COMPREPLY=($(compgen -W "any all" -- "${cur}"))"#
        ),
        "ast's --mode completes any and all"
    );
    assert!(!env.home().exists(), "no state was opened");
    let zsh = String::from_utf8(env.run(&["completions", "zsh"]).stdout).unwrap();
    assert!(zsh.starts_with("#compdef docdex") && zsh.contains("symbols-status"), "{}", &zsh[..100]);
    let bad = env.run(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("possible values: bash"), "{bad:?}");
}

#[test]
fn human_index_output_summarizes() {
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    write(&repo, "img.png", b"\x89PNG\x00\x00".as_slice());
    let out = env.run(&["index", "--repo", repo.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("indexed 5 files") && text.contains("chunks") && text.contains("img.png"), "{text}");
    assert!(text.contains("(first index; 5 added"), "a first index is not called a rebuild: {text}");
    let status = env.run(&["status", "--repo", repo.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&status.stdout).contains("symbols     "), "{status:?}");
    let out = env.run(&["index", "--repo", repo.to_str().unwrap(), "--rebuild"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("(rebuilt; 5 added") && text.contains("generation 2"), "{text}");
    // A rename is one change, not an addition, a deletion and a rename (tour36 F6); the JSON
    // keeps counting it in added and deleted as documented.
    std::fs::rename(repo.join("README.md"), repo.join("GUIDE.md")).unwrap();
    let out = env.run(&["index", "--repo", repo.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("(0 added, 0 updated, 0 deleted, 1 renamed, 4 unchanged"), "{text}");
}

#[test]
fn counts_of_one_read_in_the_singular() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "src/only.rs", "/// The one thing.\npub fn lonely_walrus() {}\n");
    let r = repo.to_str().unwrap();
    let text = |args: &[&str]| {
        let out = env.run(args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    let index = text(&["index", "--repo", r]);
    assert!(index.contains("indexed 1 file, 1 chunk in"), "{index}");
    let search = text(&["search", "--repo", r, "lonely_walrus"]);
    assert!(search.contains(" 1 hit · "), "{search}");
    let outline = text(&["symbols", "--repo", r, "--file", "src/only.rs"]);
    assert!(outline.contains("1 symbol in src/only.rs"), "{outline}");
    let status = text(&["symbols-status", "--repo", r]);
    assert!(status.contains("1 symbol in 1 file "), "{status}");
    for plural in ["1 files", "1 hits", "1 symbols", "1 chunks"] {
        for t in [&index, &search, &outline, &status] {
            assert!(!t.contains(plural), "{plural}: {t}");
        }
    }
}

#[test]
fn similar_refuses_a_count_outside_one_to_two_hundred() {
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    for n in ["0", "201"] {
        let out = env.run(&["similar", "--repo", r, "src/auth/session.rs", "-n", n]);
        assert_eq!(out.status.code(), Some(2), "-n {n}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("-n takes 1 to 200"), "{err}");
    }
    let v = env.json(&["similar", "--repo", r, "--json", "src/auth/session.rs", "-n", "1"]);
    assert_eq!(v["results"].as_array().unwrap().len(), 1, "{v}");
}

/// `similar` of an empty file said only "no similar files" (tour24 F10); the engine's notice
/// says the file is empty (or only whitespace), so HTTP and MCP carry it too.
#[test]
fn similar_of_an_empty_file_says_it_is_empty() {
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    write(&repo, "empty.md", "");
    write(&repo, "blank.md", "  \n\n");
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    let v = env.json(&["similar", "--repo", r, "--json", "empty.md"]);
    assert_eq!(v["results"].as_array().map(Vec::len), Some(0), "{v}");
    let notice = v["notice"].as_str().unwrap_or_default();
    assert!(notice.starts_with("empty.md is empty: it has no words or embeddings"), "{v}");
    assert_eq!(v["mode"], "bm25", "no embeddings here: not 'by embeddings' (tour37 F8): {v}");
    let out = env.run(&["similar", "--repo", r, "blank.md"]);
    assert_eq!(out.status.code(), Some(0));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("blank.md holds only whitespace") && text.contains("no similar files"), "{text}");
    assert!(text.contains("by shared distinctive words") && !text.contains("by embeddings"), "{text}");
    let v = env.json(&["similar", "--repo", r, "--json", "src/auth/session.rs"]);
    assert!(v["notice"].as_str().is_none_or(|n| !n.contains("empty")), "{v}");
}

/// `docdex watch --repo REPO --json` with stdout piped.
fn spawn_json_watch(env: &Env, repo: &std::path::Path, stderr: std::process::Stdio) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_docdex"))
        .args(["watch", "--repo", repo.to_str().unwrap(), "--json"])
        .env("DOCDEX_HOME", env.home())
        .stdout(std::process::Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("spawn docdex watch")
}

#[test]
fn watch_command_streams_json_and_stops_cleanly_on_sigterm() {
    use std::io::{BufRead, BufReader};
    let env = Env::new();
    let repo = env.repo("w");
    write(&repo, "a.rs", "fn kiwi() {}\n");
    let mut child = spawn_json_watch(&env, &repo, std::process::Stdio::null());
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let next = || -> serde_json::Value {
        let line = rx.recv_timeout(std::time::Duration::from_secs(20)).expect("watch printed nothing for 20 s");
        serde_json::from_str(&line).unwrap()
    };
    let first = next();
    assert_eq!(first["event"], "ready");
    assert_eq!(first["summary"]["files"], 1);
    write(&repo, "b.rs", "fn emu() {}\n");
    let applied: serde_json::Value = loop {
        let v = next();
        if v["event"] == "applied" && v["paths"].as_array().unwrap().iter().any(|p| p == "b.rs") {
            break v;
        }
    };
    assert_eq!(applied["summary"]["files"], 2);
    // While the watcher owns the writer, status reports it and search works from another process.
    let status = env.json(&["status", "--repo", repo.to_str().unwrap(), "--json"]);
    assert_eq!(status["documents"], 2);
    let hits = env.json(&["search", "--repo", repo.to_str().unwrap(), "--json", "emu"]);
    assert_eq!(hits["results"][0]["path"], "b.rs");
    // A one-shot index defers to the watcher instead of failing.
    let v = env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    assert!(v["note"].as_str().unwrap().contains("watcher"), "{v}");
    assert_eq!(v["files"], 2);
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let code = child.wait().unwrap();
    assert!(code.success(), "watch exits 0 on SIGTERM: {code:?}");
    // The writer lock was released.
    assert!(env.run(&["index", "--repo", repo.to_str().unwrap()]).status.success());
}

#[test]
fn index_names_newly_skipped_files_and_sums_up_the_earlier_ones() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "keep.rs", "fn kept() {}\n");
    std::fs::write(repo.join("a.bin"), b"\x00binary").unwrap();
    let r = repo.to_str().unwrap();
    let first = run_in(&env, &repo, &["index", "--repo", r]);
    let out = String::from_utf8_lossy(&first.stdout);
    assert!(out.contains("note: 1 file skipped:\n  a.bin (binary)"), "{out}");

    std::fs::write(repo.join("b.bin"), b"\x00binary too").unwrap();
    let second = run_in(&env, &repo, &["index", "--repo", r]);
    let out = String::from_utf8_lossy(&second.stdout);
    assert!(out.contains("note: 1 file skipped:\n  b.bin (binary)"), "{out}");
    assert!(out.contains("note: 1 more file skipped as before"), "{out}");
    assert!(!out.contains("  a.bin"), "an earlier skip is not listed again: {out}");

    let third = run_in(&env, &repo, &["index", "--repo", r]);
    let out = String::from_utf8_lossy(&third.stdout);
    assert!(out.contains("note: 2 files skipped as before"), "{out}");
    assert!(out.contains("1 unchanged;"), "skipped files are not counted unchanged: {out}");
    assert!(!out.contains(".bin ("), "{out}");
}

#[test]
fn a_count_flag_out_of_range_is_a_usage_error_naming_the_range() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "keep.rs", "fn kept() {}\n");
    let r = repo.to_str().unwrap();
    for (args, range) in [
        (vec!["memory", "recall", "--repo", r, "--limit", "0", "deploy"], "takes 1 to 100"),
        (vec!["memory", "list", "--repo", r, "-n", "20000"], "takes 1 to 200"),
        (vec!["symbols", "--repo", r, "-n", "5000", "kept"], "takes 1 to 1000"),
        (vec!["web-search", "-n", "31", "rust"], "takes 1 to 30"),
    ] {
        let o = run_in(&env, &repo, &args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(range), "{args:?}: {err}");
    }
    let ok = run_in(&env, &repo, &["memory", "recall", "--repo", r, "--limit", "100", "deploy"]);
    assert_eq!(ok.status.code(), Some(0), "{}", String::from_utf8_lossy(&ok.stderr));
}

/// Pins the human lines of `docdex config`, `repo list` and `repo remove` and the keys of
/// `config --json`, which `cli::run` printed inline before its commands moved into functions
/// of their own: the split must not change a byte.
#[test]
fn config_and_repo_commands_print_their_lines() {
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    let home = env.home();
    let config = String::from_utf8(env.run(&["config"]).stdout).unwrap();
    let head = format!("# {}\n# state: {}\n[core]\n", home.join("config.toml").display(), home.join("state").display());
    assert!(config.starts_with(&head), "{config}");
    let body: toml::Value = toml::from_str(&config[head.len() - "[core]\n".len()..]).unwrap();
    assert_eq!(body["core"]["log_level"].as_str(), Some("info"), "{config}");
    let v = env.json(&["config", "--json"]);
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["path", "state_dir", "config"]);
    assert_eq!(v["state_dir"].as_str(), home.join("state").to_str());

    let listed = env.json(&["repo", "list", "--json"]);
    let path = listed["repos"][0]["path"].as_str().unwrap().to_string();
    let fingerprint = &listed["repos"][0]["fingerprint"].as_str().unwrap()[..12];
    let chunks = &listed["repos"][0]["chunks"];
    let list = String::from_utf8(env.run(&["repo", "list"]).stdout).unwrap();
    assert_eq!(list, format!("{path}  5 files, {chunks} chunks, indexed just now  {fingerprint}\n"));
    let removed = String::from_utf8(env.run(&["repo", "remove", r]).stdout).unwrap();
    assert_eq!(removed, format!("removed {path} from the registry (index kept; --purge deletes it)\n"));
    env.json(&["index", "--repo", r, "--json"]);
    let purged = String::from_utf8(env.run(&["repo", "remove", r, "--purge"]).stdout).unwrap();
    assert_eq!(purged, format!("removed {path} from the registry and deleted its index\n"));
}

/// Pins `docdex dev fake-ollama`: the port file and the one line it prints once listening.
#[test]
fn dev_fake_ollama_writes_its_port_and_says_where_it_listens() {
    let env = Env::new();
    let port_file = env.home().join("port");
    let mut child = Command::new(env!("CARGO_BIN_EXE_docdex"))
        .args(["dev", "fake-ollama", "--port-file", port_file.to_str().unwrap()])
        .env("DOCDEX_HOME", env.home())
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run docdex");
    let mut line = String::new();
    let stdout = child.stdout.take().unwrap();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).unwrap();
    let port = std::fs::read_to_string(&port_file).unwrap_or_default();
    let _ = child.kill();
    let _ = child.wait();
    assert!(port.parse::<u16>().is_ok_and(|p| p > 0), "{port:?}");
    assert_eq!(line, format!("fake Ollama listening on http://127.0.0.1:{port}\n"));
}

/// True when every line of `text` fits the line of `template` at the same place, where `{}`
/// stands for any run of characters (a figure, a date, a path).
fn fits(text: &str, template: &str) -> bool {
    let (lines, wanted): (Vec<&str>, Vec<&str>) = (text.split('\n').collect(), template.split('\n').collect());
    lines.len() == wanted.len() && lines.iter().zip(&wanted).all(|(l, w)| fits_line(l, w))
}

fn fits_line(line: &str, template: &str) -> bool {
    let parts: Vec<&str> = template.split("{}").collect();
    let Some(mut rest) = line.strip_prefix(parts[0]) else { return false };
    for (i, part) in parts.iter().enumerate().skip(1) {
        let at = if i == parts.len() - 1 { rest.len().checked_sub(part.len()) } else { rest.find(part) };
        match at {
            Some(at) if rest[at..].starts_with(part) => rest = &rest[at + part.len()..],
            _ => return false,
        }
    }
    rest.is_empty()
}

#[test]
fn a_template_fits_its_figures_and_no_changed_word() {
    assert!(fits("p50 1.5 ms, p95 2\nend\n", "p50 {} ms, p95 {}\nend\n"));
    assert!(!fits("p50 1.5 ms, p99 2\nend\n", "p50 {} ms, p95 {}\nend\n"));
    assert!(!fits("p50 1.5 ms\n", "p50 {} s\n"));
    assert!(!fits("p50 1.5 ms\nmore\n", "p50 {} ms\n"));
}

/// Pins what `docdex bench-context` prints, the notes on stderr and the report table on
/// stdout, figures aside: its `run` is split into steps and must not change a byte.
#[test]
fn bench_context_prints_its_notes_and_report_table() {
    let env = Env::new();
    let corpus = env.repo("corpus");
    for i in 1..=6 {
        write(&corpus, &format!("pkg/m{i}.py"), format!("def parse_config_{i}(path):\n    return open(path).read()\n"));
    }
    let out = env.run(&["bench-context", "--corpus", corpus.to_str().unwrap(), "--rounds", "1"]);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    let source = std::fs::canonicalize(&corpus).unwrap();
    let report = format!(
        "### Context packs ({{}} build, {{}})\n\n\
         Machine: {{}} ({{}} cores, {{}} GiB RAM), kernel {{}}; load average at the end {{}}.\n\
         Corpus: 6 files (7 indexed) copied from {}, a git branch with 2 committed, 1 staged, 1 dirty and 1 untracked file; budget 8000 tokens, `--since main`.\n\n\
         | Figure | Value |\n| --- | --- |\n\
         | First pack (loads tokenizer, graph, symbols) | {{}} ms, {{}} snippets, {{}} tokens |\n\
         | Warm pack p50 / p95 / max ({{}} packs, {{}} tasks) | {{}} / {{}} / {{}} ms |\n\
         | Median parts: search / git / expand / fit | {{}} / {{}} / {{}} / {{}} ms |\n\
         | Mean snippets, mean tokens per pack | {{}}, {{}} (packs over budget: {{}}) |\n\
         | Target: < 200 ms for an 8,000-token pack on 5,000 files | {{}} (p95) |\n\n",
        source.display()
    );
    assert!(fits(&stdout, &report), "{stdout}");
    let debug = if cfg!(debug_assertions) {
        "warning: this is a debug build; figures are only meaningful from `cargo build --release`\n"
    } else {
        ""
    };
    let notes = format!(
        "{debug}copying 6 files into {{}}/corpus\n\
         making it a git repository with a branch: committed, staged, dirty and untracked changes\n\
         indexing {{}}/corpus\npacking {{}} tasks x 1 rounds\n"
    );
    assert!(fits(&stderr, &notes), "{stderr}");
}

/// Pins what `docdex bench-web` prints, as a table and as `--json` (run side by side), figures
/// aside: its `run` is split into steps and must not change a byte. Needs Chromium. The two
/// runs start Chromium eight times beside the rest of the suite on two cores: one start in CI
/// took over the default 20 s, so this home gives the browser 120 s (the user's setting is the
/// one bench-web uses, as the next test shows).
#[test]
fn bench_web_prints_a_row_per_measurement_and_the_same_figures_as_json() {
    if !crate::web_support::have_browser() {
        return;
    }
    let env = Env::new();
    env.write_config("[web.scraper]\nlaunch_timeout_secs = 120\n");
    let spawn = |json: bool| {
        let mut args = vec!["bench-web", "--runs", "2"];
        if json {
            args.push("--json");
        }
        Command::new(env!("CARGO_BIN_EXE_docdex"))
            .args(&args)
            .env("DOCDEX_HOME", env.home())
            .env("NO_COLOR", "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run docdex")
    };
    let (table, json) = (spawn(false), spawn(true));
    let (table, json) = (table.wait_with_output().unwrap(), json.wait_with_output().unwrap());
    assert!(table.status.success(), "{}", String::from_utf8_lossy(&table.stderr));
    assert!(json.status.success(), "{}", String::from_utf8_lossy(&json.stderr));
    let mut rows = String::from("{} ({} cores, {} GiB), {}, load {}\n| measurement | figure |\n| --- | --- |\n");
    rows.push_str("| browser start (spawn to DevTools connected) | p50 {} ms, p95 {}, min {} |\n");
    for kind in ["chromium", "http"] {
        rows.push_str(&format!(
            "| {kind}: first fetch (incl. browser start) | {{}} ms |\n\
             | {kind}: cold fetch, 20 KB page | p50 {{}} ms, p95 {{}}, min {{}} |\n\
             | {kind}: warm fetch (cache hit) | p50 {{}} ms, p95 {{}} |\n\
             | {kind}: Tier 2 on a miss (discovery + 2 pages) | p50 {{}} ms, p95 {{}} (plus {{}} ms waiting for the 2 s discovery spacing) |\n\
             | {kind}: Tier 2 on a cache hit (target < 5 ms) | p50 {{}} ms, p95 {{}} |\n"
        ));
    }
    let stdout = String::from_utf8_lossy(&table.stdout);
    assert!(fits(&stdout, &rows), "{stdout}");
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    let want = [
        "browser_start_ms",
        "chromium_fetch",
        "chromium_tier2",
        "http_fetch",
        "http_tier2",
        "machine",
        "date",
        "loadavg",
    ];
    assert_eq!(keys, want, "{v}");
    let fields = |k: &str| -> Vec<String> { v[k].as_object().unwrap().keys().cloned().collect() };
    assert_eq!(fields("browser_start_ms"), ["p50", "p95", "min"]);
    assert_eq!(fields("http_fetch"), ["first", "cold_p50", "cold_p95", "warm_p50", "warm_p95"]);
    assert_eq!(fields("chromium_tier2"), ["miss_p50", "miss_p95", "hit_p50", "hit_p95"]);
}

/// `docdex bench-web` measures the user's browser with the user's `[web.scraper]` settings,
/// not the first Chromium on PATH with the defaults: a configured binary that never opens its
/// DevTools socket fails the bench within the configured launch timeout, naming both.
#[test]
fn bench_web_starts_the_browser_the_users_scraper_settings_name() {
    let env = Env::new();
    let hung = crate::web_support::hung_browser(env.dir.path());
    env.write_config(&format!("[web.scraper]\nchrome_binary_path = \"{}\"\nlaunch_timeout_secs = 2\n", hung.display()));
    let t = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_docdex"))
        .args(["bench-web", "--runs", "2"])
        .env("DOCDEX_HOME", env.home())
        .env("NO_COLOR", "1")
        .output()
        .expect("run docdex");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("launching the browser"), "{stderr}");
    assert!(
        stderr.contains(&format!("the browser {} did not open its DevTools socket within 2s", hung.display())),
        "{stderr}"
    );
    assert!(t.elapsed() < std::time::Duration::from_secs(30), "took {:?}", t.elapsed());
}

/// A read on a root docdex refuses to index said "not indexed yet; run `docdex index --repo
/// /etc` first", advice that fails: the refusal is the answer, exit 2, as `index` and the
/// server give it. A root that may be indexed still gets the advice.
#[test]
fn a_read_on_a_root_docdex_refuses_says_so_instead_of_advising_to_index_it() {
    let env = Env::new();
    let home = env.home();
    std::fs::create_dir_all(&home).unwrap();
    for root in ["/etc".to_string(), home.to_string_lossy().into_owned()] {
        for args in [vec!["search", "x", "--repo", &root], vec!["symbols", "x", "--repo", &root]] {
            let out = env.run(&args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
            assert!(stderr.contains(&format!("refusing to index or serve {root} as a repository")), "{stderr}");
            assert!(!stderr.contains("docdex index"), "{stderr}");
        }
    }
    let plain = env.repo("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let out = env.run(&["search", "x", "--repo", plain.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not indexed yet; run `docdex index"), "{out:?}");
}

/// tour35 F1: a moved repository's memories stayed under its old path, where no command could
/// reach them, and the purge `repo list` advised deleted them unsaid. `repo move` carries index
/// and memories to the new path (replacing an index built there meanwhile); a purge of state
/// holding memories is refused unless --yes, saying how many and how to carry them.
#[test]
fn a_moved_repository_takes_its_memories_along() {
    let env = Env::new();
    let old = env.repo("old");
    sample_repo(&old);
    let o = old.to_str().unwrap().to_string();
    env.json(&["index", "--repo", &o, "--json"]);
    env.json(&["memory", "store", "--repo", &o, "--json", "deploys go through staging"]);
    let old_state = env.engine().resolve_repo(&old).unwrap().state_dir;
    let new = old.with_file_name("new");
    std::fs::rename(&old, &new).unwrap();
    let n = new.to_str().unwrap();
    // Indexed where it is now first: an index of its own, no memories.
    env.json(&["index", "--repo", n, "--json"]);
    assert_eq!(env.json(&["memory", "list", "--repo", n, "--json"])["total"], 0);

    let list = String::from_utf8(env.run(&["repo", "list"]).stdout).unwrap();
    assert!(list.contains(&format!("repo move {o} NEW_PATH")), "{list}");
    let out = env.run(&["repo", "remove", &o, "--purge"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("holds 1 memory") && err.contains("repo move") && err.contains("--yes"), "{err}");
    assert!(old_state.exists(), "a refused purge deleted nothing");

    let out = env.run(&["repo", "move", &o, n]);
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("1 memory") && said.contains("replacing the index built there"), "{said}");
    assert!(!old_state.exists());
    let v = env.json(&["memory", "list", "--repo", n, "--json"]);
    assert_eq!(v["memories"][0]["content"], "deploys go through staging", "{v}");
    let repos = env.json(&["repo", "list", "--json"]);
    assert_eq!(repos["repos"].as_array().unwrap().len(), 1, "{repos}");
    assert_eq!(repos["repos"][0]["missing"], false, "{repos}");
    let hits = env.json(&["search", "--repo", n, "session", "--json"]);
    assert!(!hits["results"].as_array().unwrap().is_empty(), "the moved index answers: {hits}");
    let again = env.json(&["index", "--repo", n, "--json"]);
    assert_eq!((again["added"].as_u64(), again["deleted"].as_u64()), (Some(0), Some(0)), "{again}");

    // Nothing is moved onto memories of another repository's own.
    let other = env.repo("other");
    sample_repo(&other);
    let t = other.to_str().unwrap();
    env.json(&["memory", "store", "--repo", t, "--json", "its own note"]);
    std::fs::rename(&new, new.with_file_name("gone")).unwrap();
    let out = env.run(&["repo", "move", n, t]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("already holds 1 memory"), "{out:?}");
    let out = env.run(&["repo", "remove", n, "--purge", "--yes"]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("deleted its index, 1 memory"), "{out:?}");
}
