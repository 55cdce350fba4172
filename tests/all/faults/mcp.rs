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
