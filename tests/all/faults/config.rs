//! Settings out of any sane range are refused before work starts (naming key, range and file),
//! and secrets stay private: the token is never printed, and the files that can hold secrets
//! (config.toml, memory.db, dag.db, daemon.lock, locks) are created owner-only.

use crate::server_util::Server;
use crate::util::{write, Env};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())).permissions().mode() & 0o777
}

#[test]
fn out_of_range_settings_are_refused_naming_key_range_and_file() {
    let cases = [
        ("[index]\nthreads = 100000\n", "index.threads"),
        ("[index]\nmax_file_size_bytes = 0\n", "index.max_file_size_bytes"),
        ("[llm]\nrequest_timeout_secs = 0\n", "llm.request_timeout_secs"),
        ("[llm]\nembed_concurrency = 5000\n", "llm.embed_concurrency"),
        ("[search]\ndefault_limit = 1000000\n", "search.default_limit"),
        ("[core]\nmax_concurrent_fetches = 0\n", "core.max_concurrent_fetches"),
        ("[search]\nsemantic_weight = nan\n", "search.semantic_weight"),
        // Each of these was made another value in silence (0 became 1: a 1 s test timeout).
        ("[tests]\ntimeout_secs = 0\n", "tests.timeout_secs"),
        ("[search]\nmax_web_hits = 0\n", "search.max_web_hits"),
        ("[libs]\nmax_chat_hits = 0\n", "libs.max_chat_hits"),
        ("[libs]\nmax_packages = 0\n", "libs.max_packages"),
        ("[index]\nfirst_commit_bytes = 0\n", "index.first_commit_bytes"),
    ];
    for (text, key) in cases {
        let env = Env::new();
        let repo = env.repo("r");
        write(&repo, "a.rs", "fn a() {}\n");
        env.write_config(text);
        let t = Instant::now();
        let out = env.run(&["index", "--repo", repo.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{key}: accepted");
        assert!(stderr.contains(key) && stderr.contains("config.toml"), "{key}: {stderr}");
        assert!(t.elapsed() < Duration::from_secs(10), "{key}: refused only after {:?}", t.elapsed());
    }
    // The edges of a range are accepted.
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "a.rs", "fn a() {}\n");
    env.write_config("[index]\nthreads = 64\n");
    let out = env.run(&["index", "--repo", repo.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn the_token_is_never_printed_and_secret_files_are_owner_only() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "a.rs", "fn alpha() {}\n");
    let token = "tok-Zq81-very-secret";
    for args in [&["config"][..], &["config", "--json"][..]] {
        let out = env.run_env(args, &[("DOCDEX_AUTH_TOKEN", token)]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!stdout.contains(token), "docdex {args:?} printed the token:\n{stdout}");
        assert!(stdout.contains("auth_token") && stdout.contains("hidden"), "says a token is set: {stdout}");
    }
    assert_eq!(mode(&env.home().join("config.toml")), 0o600, "config.toml");
    assert_eq!(mode(&env.home()), 0o700, "the docdex home");

    let out = env.run(&["index", "--repo", repo.to_str().unwrap()]);
    assert!(out.status.success());
    let out = env.run(&["memory", "store", "--repo", repo.to_str().unwrap(), "the deploy key rotates monthly"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let state = env.engine().resolve_repo(&repo).unwrap().state_dir;
    for name in ["memory.db", "gen/symbols.db", "gen/manifest.json", "index_status.json"] {
        assert_eq!(mode(&state.join(name)), 0o600, "{name}");
    }
    for entry in std::fs::read_dir(env.home().join("state/locks")).unwrap() {
        let p = entry.unwrap().path();
        assert_eq!(mode(&p), 0o600, "{}", p.display());
    }
    // Every directory docdex made is owner-only, the index's generations included (they were
    // 0755 under the umask; the files Tantivy writes in them follow the umask, inside them).
    let mut dirs = vec![env.home()];
    while let Some(dir) = dirs.pop() {
        assert_eq!(mode(&dir), 0o700, "{}", dir.display());
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() && !p.is_symlink() {
                dirs.push(p);
            }
        }
    }

    // A config that holds a token but was left readable by others is made owner-only.
    let text = std::fs::read_to_string(env.home().join("config.toml")).unwrap();
    std::fs::write(
        env.home().join("config.toml"),
        text.replace("auth_token = \"\"", &format!("auth_token = \"{token}\"")),
    )
    .unwrap();
    std::fs::set_permissions(env.home().join("config.toml"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = env.run(&["config"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains(token));
    assert_eq!(mode(&env.home().join("config.toml")), 0o600, "tightened on load");

    let mut daemon = Server::start(&env, &["daemon"], &[("DOCDEX_AUTH_TOKEN", token)]);
    assert_eq!(mode(&env.home().join("daemon.lock")), 0o600, "daemon.lock");
    daemon.terminate();
    daemon.wait_exit(Duration::from_secs(15));
}

#[test]
fn an_unknown_key_is_warned_about_once_in_plain_text() {
    let env = Env::new();
    env.write_config("[index]\nbogus_key = 1\n");
    let out = env.run(&["repo", "list"]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("unknown key `index.bogus_key`").count(), 1, "{err}");
    assert!(!err.contains('\u{1b}'), "no colour codes when stderr is not a terminal: {err:?}");
}
