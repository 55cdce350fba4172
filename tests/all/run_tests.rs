//! `docdex run-tests` against fixture projects made here, with the real runners: cargo (a
//! tiny crate without dependencies, built in its own target directory), pytest from a venv
//! (`.ci/run` installs it and exports DOCDEX_TEST_PYTEST_VENV), and node's built-in test
//! runner; passing and failing, the timeout, a target, and `--affected` on a git branch.

use crate::util::{git, git_commit_all, pytest_venv, run_failures, run_tests_json as run_tests, write, Env, McpStdio};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Each failure as (name, file, line): `run_failures` without the messages.
fn failures(v: &Value) -> Vec<(String, Option<String>, Option<u64>)> {
    run_failures(v).into_iter().map(|(name, file, line, _)| (name, file, line)).collect()
}

#[test]
fn cargo_projects_run_with_counts_and_panic_locations() {
    let env = Env::new();
    let repo = env.repo("crate");
    write(
        &repo,
        "Cargo.toml",
        "[package]\nname = \"fixture\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    );
    write(
        &repo,
        "src/lib.rs",
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(1, 2), 3);\n    }\n\n    #[test]\n    fn breaks() {\n        assert_eq!(super::add(1, 1), 3, \"one and one\");\n    }\n\n    #[test]\n    #[ignore]\n    fn later() {}\n}\n",
    );
    write(&repo, "tests/api.rs", "#[test]\nfn public_add() {\n    assert_eq!(fixture::add(2, 2), 4);\n}\n");
    // Two more test binaries after the failing unit tests, one failing: cargo's fail-fast
    // would stop at the first failure and never run the rest.
    write(
        &repo,
        "tests/math_it.rs",
        "#[test]\nfn wrong_sum() {\n    assert_eq!(fixture::add(2, 2), 5, \"math\");\n}\n",
    );
    write(&repo, "tests/text_it.rs", "#[test]\nfn text_one() {}\n\n#[test]\nfn text_two() {}\n");
    let target = env.dir.path().join("cargo-target");
    let vars = [("CARGO_TARGET_DIR", target.to_str().unwrap())];
    let (code, v) = run_tests(&env, &repo, &[], &vars);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["runner"], "cargo");
    assert_eq!(v["status"], "failed");
    // adds, public_add, text_one, text_two pass; breaks and wrong_sum fail; later is ignored.
    assert_eq!((v["passed"].as_u64(), v["failed"].as_u64(), v["skipped"].as_u64()), (Some(4), Some(2), Some(1)), "{v}");
    assert_eq!(
        failures(&v),
        [
            ("tests::breaks".to_string(), Some("src/lib.rs".to_string()), Some(14)),
            ("wrong_sum".to_string(), Some("tests/math_it.rs".to_string()), Some(3))
        ]
    );
    assert!(v["failures"][0]["message"].as_str().unwrap().contains("one and one"), "{v}");
    assert!(v["output_tail"].as_str().unwrap().contains("test result: FAILED"));

    // A target narrows the run: the integration test file alone passes.
    let (code, v) = run_tests(&env, &repo, &["--target", "tests/api.rs"], &vars);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["command"], serde_json::json!(["cargo", "test", "--no-fail-fast", "--test", "api"]));
    assert_eq!((v["status"].as_str(), v["passed"].as_u64(), v["failed"].as_u64()), (Some("passed"), Some(1), Some(0)));
}

#[test]
fn pytest_from_the_projects_venv_passes_and_fails_with_locations() {
    let Some(venv) = pytest_venv() else { return };
    let env = Env::new();
    let repo = env.repo("py");
    write(&repo, "pyproject.toml", "[project]\nname = \"fixture\"\nversion = \"0.1.0\"\n");
    write(&repo, "calc.py", "def add(a, b):\n    return a + b\n");
    write(
        &repo,
        "tests/test_calc.py",
        "import pytest\nfrom calc import add\n\n\ndef test_adds():\n    assert add(1, 2) == 3\n\n\ndef test_breaks():\n    assert add(1, 1) == 3\n\n\n@pytest.mark.skip(reason='later')\ndef test_later():\n    pass\n",
    );
    write(&repo, "tests/test_ok.py", "def test_fine():\n    assert True\n");
    write(&repo, "conftest.py", "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n");
    std::os::unix::fs::symlink(&venv, repo.join(".venv")).unwrap();
    let (code, v) = run_tests(&env, &repo, &[], &[]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["runner"], "pytest");
    assert!(v["command"][0].as_str().unwrap().ends_with(".venv/bin/python"), "{v}");
    assert_eq!((v["passed"].as_u64(), v["failed"].as_u64(), v["skipped"].as_u64()), (Some(2), Some(1), Some(1)), "{v}");
    assert_eq!(
        failures(&v),
        [("tests/test_calc.py::test_breaks".to_string(), Some("tests/test_calc.py".to_string()), Some(10))]
    );
    let (code, v) = run_tests(&env, &repo, &["--target", "tests/test_ok.py"], &[]);
    assert_eq!((code, v["status"].as_str(), v["passed"].as_u64()), (0, Some("passed"), Some(1)), "{v}");
}

fn node_project(env: &Env, name: &str) -> PathBuf {
    let repo = env.repo(name);
    write(
        &repo,
        "package.json",
        "{\"name\": \"fixture\", \"version\": \"1.0.0\", \"scripts\": {\"test\": \"node --test\"}}\n",
    );
    write(&repo, "lib/math.js", "function add(a, b) {\n  return a + b;\n}\nmodule.exports = { add };\n");
    write(&repo, "lib/strings.js", "function shout(s) {\n  return s.toUpperCase();\n}\nmodule.exports = { shout };\n");
    write(
        &repo,
        "test/math.test.js",
        "const test = require('node:test');\nconst assert = require('node:assert');\nconst { add } = require('../lib/math.js');\n\ntest('adds', () => {\n  assert.strictEqual(add(1, 2), 3);\n});\n\ntest('breaks', () => {\n  assert.strictEqual(add(1, 1), 3);\n});\n",
    );
    write(
        &repo,
        "test/strings.test.js",
        "const test = require('node:test');\nconst assert = require('node:assert');\nconst { shout } = require('../lib/strings.js');\n\ntest('shouts', () => {\n  assert.strictEqual(shout('a'), 'A');\n});\n",
    );
    repo
}

#[test]
fn node_test_runner_fails_with_locations_and_the_timeout_kills_a_hung_run() {
    let env = Env::new();
    let repo = node_project(&env, "js");
    let (code, v) = run_tests(&env, &repo, &[], &[]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["runner"], "node");
    assert_eq!((v["passed"].as_u64(), v["failed"].as_u64()), (Some(2), Some(1)), "{v}");
    assert_eq!(failures(&v), [("breaks".to_string(), Some("test/math.test.js".to_string()), Some(9))]);
    let (code, v) = run_tests(&env, &repo, &["--target", "test/strings.test.js"], &[]);
    assert_eq!((code, v["status"].as_str(), v["passed"].as_u64()), (0, Some("passed"), Some(1)), "{v}");

    write(
        &repo,
        "test/hang.test.js",
        "const test = require('node:test');\ntest('hangs', async () => {\n  await new Promise((r) => setTimeout(r, 120000));\n});\n",
    );
    let started = std::time::Instant::now();
    let (code, v) = run_tests(&env, &repo, &["--target", "test/hang.test.js", "--timeout", "2"], &[]);
    assert!(started.elapsed().as_secs() < 30, "killed at the timeout, not after the test's 120 s");
    assert_eq!((code, v["status"].as_str()), (1, Some("timed_out")), "{v}");
    assert!(v["exit_code"].is_null());
    assert!(v["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains("2 s timeout")), "{v}");
    let err = env.run(&["run-tests", "--repo", repo.to_str().unwrap(), "--target", "../outside"]);
    assert_eq!(err.status.code(), Some(2), "{}", String::from_utf8_lossy(&err.stderr));
}

#[test]
fn affected_runs_only_the_tests_the_change_reaches() {
    let env = Env::new();
    let repo = node_project(&env, "js");
    git_commit_all(&repo);
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    // Nothing changed: nothing to run.
    let (code, v) = run_tests(&env, &repo, &["--affected"], &[]);
    assert_eq!((code, v["status"].as_str()), (5, Some("no_tests")), "{v}");
    assert!(v["command"].as_array().unwrap().is_empty());
    // A dirty edit to strings.js reaches only test/strings.test.js (math's failing test is not run).
    write(
        &repo,
        "lib/strings.js",
        "function shout(s) {\n  return String(s).toUpperCase();\n}\nmodule.exports = { shout };\n",
    );
    let (code, v) = run_tests(&env, &repo, &["--affected"], &[]);
    assert_eq!(code, 0, "{v}");
    let selected: Vec<&str> = v["selected"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert_eq!(selected.len(), 1, "{selected:?}");
    assert!(selected[0].starts_with("test/strings.test.js: exercises changed lib/strings.js"), "{selected:?}");
    let cmd = v["command"].to_string();
    let (head, tail) = (r#"["node","--test","--test-reporter=tap","#, r#","test/strings.test.js"]"#);
    assert!(cmd.starts_with(head) && cmd.ends_with(tail) && cmd.contains("/reporters/node.mjs"), "{cmd}");
    assert_eq!((v["passed"].as_u64(), v["failed"].as_u64()), (Some(1), Some(0)));
    // Committed on a branch since main: --since brings math.js's tests in.
    git(&repo, &["checkout", "-q", "-b", "feature"]);
    write(&repo, "lib/math.js", "function add(a, b) {\n  return b + a;\n}\nmodule.exports = { add };\n");
    git(&repo, &["commit", "-q", "-am", "swap"]);
    let (code, v) = run_tests(&env, &repo, &["--affected"], &[]);
    assert_eq!((code, v["status"].as_str()), (5, Some("no_tests")), "without --since commits do not count: {v}");
    let (code, v) = run_tests(&env, &repo, &["--affected", "--since", "main"], &[]);
    assert_eq!(v["selected"].as_array().unwrap().len(), 2, "{v}");
    assert_eq!((code, v["failed"].as_u64()), (1, Some(1)), "math's failing test now runs: {v}");
}

#[test]
fn affected_leaves_out_changed_files_the_index_does_not_walk() {
    // A virtualenv made in the repository without a .gitignore entry: git lists its files as
    // untracked, and pip vendors test files (`.venv/.../colorama/tests/*`). They used to run as
    // the change's tests (10 failed, exit 1); `docdex context` already left them out.
    let env = Env::new();
    let repo = node_project(&env, "venv");
    git_commit_all(&repo);
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let vendored = "const test = require('node:test');\nconst assert = require('node:assert');\n\ntest('vendored', () => {\n  assert.strictEqual(1, 2);\n});\n";
    write(&repo, ".venv/lib/site-packages/colorama/tests/ansi.test.js", vendored);
    write(&repo, ".docdexignore", "vendor/\n");
    write(&repo, "vendor/pkg/test/x.test.js", vendored);
    let (code, v) = run_tests(&env, &repo, &["--affected", "--since", "main"], &[]);
    assert_eq!((code, v["status"].as_str()), (5, Some("no_tests")), "{v}");
    assert!(v["selected"].as_array().unwrap().is_empty(), "{v}");
    let notes = v["notes"].to_string();
    assert!(notes.contains("3 changed files left out: hidden, ignored or excluded"), "{notes}");
    // A changed test file the index walks still runs beside them.
    write(&repo, "test/strings.test.js", "const test = require('node:test');\n\ntest('new', () => {});\n");
    let (code, v) = run_tests(&env, &repo, &["--affected"], &[]);
    assert_eq!(code, 0, "{v}");
    let selected = v["selected"].to_string();
    assert!(selected.contains("test/strings.test.js: changed test file") && !selected.contains(".venv"), "{selected}");
}

#[test]
fn docdex_run_tests_over_mcp_stdio_returns_the_same_result() {
    let env = Env::new();
    let repo = node_project(&env, "js");
    let mut mcp = McpStdio::start(&env, &["--repo", repo.to_str().unwrap()], serde_json::json!({}));
    let r = mcp.call("docdex_run_tests", serde_json::json!({"target": "test/math.test.js", "timeout_secs": 60}));
    assert_eq!(r["isError"], false, "{r}");
    let v: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        (v["runner"].as_str(), v["status"].as_str(), v["failed"].as_u64()),
        (Some("node"), Some("failed"), Some(1)),
        "{v}"
    );
    let r = mcp.call("docdex_run_tests", serde_json::json!({"target": "../elsewhere"}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(r["content"][0]["text"].as_str().unwrap().contains("path_outside_repo"), "{r}");
}

/// `docdex_run_tests` refused a repository not indexed yet (`not_indexed: ... call the
/// docdex_index tool`), while `docdex run-tests` ran its tests (tour14 F6): over MCP they run
/// too, and `affected`, which does need the index's import graph, says that on both surfaces.
#[test]
fn tests_run_without_an_index_over_mcp_and_affected_says_it_needs_one() {
    let env = Env::new();
    let repo = node_project(&env, "js");
    git_commit_all(&repo);
    write(&repo, "lib/math.js", "function add(a, b) {\n  return b + a;\n}\nmodule.exports = { add };\n");
    let root = repo.to_str().unwrap();
    let mut mcp = McpStdio::start(&env, &[], serde_json::json!({}));
    let args = serde_json::json!({"project_root": root, "target": "test/math.test.js", "timeout_secs": 60});
    let r = mcp.call("docdex_run_tests", args);
    assert_eq!(r["isError"], false, "{r}");
    let v: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        (v["runner"].as_str(), v["status"].as_str(), v["failed"].as_u64()),
        (Some("node"), Some("failed"), Some(1))
    );
    let needs_index =
        |text: &str| text.contains("--affected (`affected`) finds the tests") && text.contains("needs no index");
    let r = mcp.call("docdex_run_tests", serde_json::json!({"project_root": root, "affected": true}));
    let text = r["content"][0]["text"].as_str().unwrap_or_default().to_string();
    assert_eq!(r["isError"], true, "{r}");
    assert!(text.starts_with("not_indexed") && needs_index(&text), "{text}");
    let (code, v) = run_tests(&env, &repo, &["--affected"], &[]);
    assert_eq!((code, v["error"]["code"].as_str()), (3, Some("not_indexed")), "{v}");
    assert!(needs_index(v["error"]["message"].as_str().unwrap()), "{v}");
}

#[test]
fn docdex_index_over_mcp_indexes_an_unindexed_repository() {
    let env = Env::new();
    let repo = node_project(&env, "js");
    let mut mcp = McpStdio::start(&env, &[], serde_json::json!({}));
    let search = serde_json::json!({"query": "shout", "project_root": repo.to_str().unwrap()});
    let r = mcp.call("docdex_search", search.clone());
    assert_eq!(r["isError"], true, "not indexed yet: {r}");
    let r = mcp.call("docdex_index", serde_json::json!({"project_root": repo.to_str().unwrap()}));
    assert_eq!(r["isError"], false, "{r}");
    let summary: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(summary["added"], 5, "{summary}");
    let r = mcp.call("docdex_search", search);
    assert_eq!(r["isError"], false, "{r}");
    assert!(r["content"][0]["text"].as_str().unwrap().contains("lib/strings.js"), "{r}");
}

#[test]
fn a_python_without_pytest_is_a_missing_runner_not_a_failed_suite() {
    let env = Env::new();
    let repo = env.repo("nopytest");
    write(&repo, "pyproject.toml", "[project]\nname = \"fixture\"\nversion = \"0.1.0\"\n");
    write(&repo, "tests/test_ok.py", "def test_fine():\n    assert True\n");
    // The project's Python, as `python -m pytest` answers without pytest installed.
    write(&repo, ".venv/bin/python", "#!/bin/sh\necho \"$0: No module named pytest\" >&2\nexit 1\n");
    let py = repo.join(".venv/bin/python");
    std::fs::set_permissions(&py, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (code, v) = run_tests(&env, &repo, &[], &[]);
    assert_eq!(code, 2, "{v}");
    assert_eq!(v["error"]["code"], "bad_request");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("pytest is not installed for") && msg.contains("pip install pytest"), "{msg}");
}

#[test]
fn pytest_refusing_its_configuration_or_a_node_id_is_bad_input_naming_what_it_refused() {
    // Exit 4 (usage error) was a failed suite with no failure and no word of why (tour13 F8).
    let Some(venv) = pytest_venv() else { return };
    let env = Env::new();
    let repo = env.repo("pyrefused");
    write(&repo, "pyproject.toml", "[tool.pytest.ini_options]\naddopts = \"-n auto\"\n");
    write(&repo, "tests/test_a.py", "def test_a():\n    assert 1 == 2\n");
    std::os::unix::fs::symlink(&venv, repo.join(".venv")).unwrap();
    let (code, v) = run_tests(&env, &repo, &[], &[]);
    assert_eq!((code, v["error"]["code"].as_str()), (2, Some("bad_request")), "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("pytest refused") && msg.contains("unrecognized arguments: -n"), "{msg}");
    assert!(msg.contains("pyproject.toml"), "{msg}");
    write(&repo, "pyproject.toml", "[tool.pytest.ini_options]\n");
    let (code, v) = run_tests(&env, &repo, &["--target", "tests/test_a.py::nope"], &[]);
    assert_eq!(code, 2, "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("not found:") && msg.contains("test_a.py::nope"), "{msg}");
}

/// A repository without a runner is bad input that says how to give one, and where: "set
/// `[tests] command` in the config" named no config file.
#[test]
fn no_runner_is_bad_input_naming_how_to_find_the_config() {
    let env = Env::new();
    let repo = env.repo("norunner");
    write(&repo, "main.py", "print(1)\n");
    let (code, v) = run_tests(&env, &repo, &[], &[]);
    assert_eq!(code, 2, "{v}");
    let msg = v["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.starts_with("no test runner found in"), "{msg}");
    assert!(msg.ends_with("set `[tests] command` in the config (`docdex config` shows where it is)"), "{msg}");
}

#[test]
fn a_zero_timeout_is_bad_input_not_a_run_killed_at_once() {
    let env = Env::new();
    let repo = env.repo("zero");
    write(&repo, "tests/test_ok.py", "def test_fine():\n    assert True\n");
    let (code, v) = run_tests(&env, &repo, &["--timeout", "0"], &[]);
    assert_eq!(code, 2, "{v}");
    assert_eq!(v["error"]["code"], "bad_request");
    assert!(v["error"]["message"].as_str().unwrap().contains("give 1 or more"), "{v}");
    let mut mcp = McpStdio::start(&env, &["--repo", repo.to_str().unwrap()], serde_json::json!({}));
    let r = mcp.call("docdex_run_tests", serde_json::json!({"timeout_secs": 0}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(r["content"][0]["text"].as_str().unwrap().contains("give 1 or more"), "{r}");
}

/// The run's state of process `pid` (`None` once it is gone; `Z` a zombie awaiting its reaper).
fn proc_state(pid: &str) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next())
}

fn alive(pid: &str) -> bool {
    proc_state(pid).is_some_and(|s| s != 'Z')
}

/// A configured test command that exits at once but leaves a `sleep` running with the run's
/// output open (as a test starting a server does), and one more in a session of its own.
fn leftover_project(env: &Env, name: &str, command: &str) -> PathBuf {
    let repo = env.repo(name);
    write(&repo, "tests/x.txt", "");
    std::fs::create_dir_all(env.home()).unwrap();
    write(&env.home(), "config.toml", format!("[tests]\ncommand = {command:?}\n"));
    repo
}

#[cfg(target_os = "linux")]
#[test]
fn processes_the_tests_leave_behind_are_killed_and_do_not_hold_the_run_open() {
    let env = Env::new();
    let repo = leftover_project(&env, "left", "echo '1 passed'; sleep 60 & echo $! > left.pid; exit 0");
    let started = std::time::Instant::now();
    let (code, v) = run_tests(&env, &repo, &["--timeout", "30"], &[]);
    // It waited for the sleep (60 s, past the 30 s timeout) and left it running.
    assert!(started.elapsed().as_secs() < 20, "the run ended with its runner: {:?}", started.elapsed());
    assert_eq!((code, v["status"].as_str()), (0, Some("passed")), "{v}");
    let pid = std::fs::read_to_string(repo.join("left.pid")).unwrap().trim().to_string();
    crate::util::eventually("the leftover sleep is killed", || !alive(&pid));
    assert!(v["notes"].to_string().contains("left 1 process running after the runner exited ("), "{v}");
    assert!(v["notes"].to_string().contains(" sleep 60): killed"), "{v}");

    // One in a session of its own escapes the group: the run stops reading after a grace.
    let env = Env::new();
    // It writes its pid only once in its own session; the runner waits for that.
    let cmd = "echo '1 passed'; setsid sh -c 'echo $$ > away.pid; exec sleep 60' & while [ ! -s away.pid ]; do sleep 0.05; done; exit 0";
    let repo = leftover_project(&env, "away", cmd);
    let started = std::time::Instant::now();
    let (code, v) = run_tests(&env, &repo, &["--timeout", "30"], &[]);
    let pid = std::fs::read_to_string(repo.join("away.pid")).unwrap().trim().to_string();
    let _ = std::process::Command::new("kill").arg(&pid).status();
    assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
    assert_eq!(code, 0, "{v}");
    assert!(v["notes"].to_string().contains("the output stayed open"), "{v}");
}

/// A stand-in for sccache, started as a build's RUSTC_WRAPPER starts it: the client spawns
/// itself as the server with SCCACHE_START_SERVER=1 and never waits for it (commands.rs
/// run_server_process), and the server daemonizes as sccache's util::daemonize does (the
/// daemonix crate: fork, the parent waits for the first child and exits, which setsid()s,
/// forks the server and exits; stdio to /dev/null). The server writes its pid to argv[1].
const FAKE_SCCACHE: &str = r#"import os, subprocess, sys, time
pidfile = sys.argv[1]
if os.environ.get("SCCACHE_START_SERVER") == "1":
    first = os.fork()
    if first > 0:
        os.waitpid(first, 0)
        os._exit(0)
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    with open(pidfile + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(pidfile + ".tmp", pidfile)
    time.sleep(60)
    os._exit(0)
launcher = subprocess.Popen([sys.executable, __file__, pidfile], env=dict(os.environ, SCCACHE_START_SERVER="1"))
while not os.path.exists(pidfile):
    time.sleep(0.02)
os._exit(0)
"#;

/// Runs its arguments as a child subreaper that never reaps the orphans it inherits: an init
/// that reaps late, or a container's PID 1 that never does (`docker run` without `--init`).
const NO_REAPER: &str = r#"import ctypes, subprocess, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
r = subprocess.run(sys.argv[1:], capture_output=True)
sys.stdout.buffer.write(r.stdout)
sys.stderr.buffer.write(r.stderr)
sys.exit(r.returncode)
"#;

/// `docdex run-tests --json` in `repo` under NO_REAPER; the daemon's pid, once killed, and
/// whether it was alive when the run ended.
fn run_with_fake_sccache(env: &Env, repo: &Path) -> (Value, bool) {
    let reaper = env.dir.path().join("no_reaper.py");
    std::fs::write(&reaper, NO_REAPER).unwrap();
    let out = std::process::Command::new("python3")
        .arg(&reaper)
        .arg(env!("CARGO_BIN_EXE_docdex"))
        .args(["run-tests", "--repo", repo.to_str().unwrap(), "--json", "--timeout", "30"])
        .env("DOCDEX_HOME", env.home())
        .output()
        .unwrap();
    let server = std::fs::read_to_string(repo.join("server.pid")).unwrap_or_default().trim().to_string();
    let survived = !server.is_empty() && alive(&server);
    if !server.is_empty() {
        let _ = std::process::Command::new("kill").arg(&server).status();
    }
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("bad JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    (v, survived)
}

#[cfg(target_os = "linux")]
#[test]
fn a_daemon_started_like_sccaches_server_survives_and_its_unreaped_launcher_is_no_leftover() {
    let env = Env::new();
    let sccache = env.dir.path().join("sccache.py");
    std::fs::write(&sccache, FAKE_SCCACHE).unwrap();
    let cmd = format!("python3 {} server.pid && echo '1 passed'", sccache.display());
    let repo = leftover_project(&env, "sccache", &cmd);
    let (v, survived) = run_with_fake_sccache(&env, &repo);
    assert!(survived, "the server, in a session of its own, was killed: {v}");
    assert_eq!(v["status"], "passed", "{v}");
    // Its launcher exited and was never reaped: a zombie still in the run's group, which
    // made kill(-group) succeed and the run report processes "left running".
    assert!(!v["notes"].to_string().contains("running after the runner exited"), "{v}");

    // A real leftover next to it is killed and named; the zombie is not counted.
    let env = Env::new();
    std::fs::write(env.dir.path().join("sccache.py"), FAKE_SCCACHE).unwrap();
    let cmd = format!("python3 {} server.pid; sleep 60 & echo '1 passed'", env.dir.path().join("sccache.py").display());
    let repo = leftover_project(&env, "sccache-and-sleep", &cmd);
    let (v, survived) = run_with_fake_sccache(&env, &repo);
    assert!(survived, "{v}");
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("the tests left 1 process running after the runner exited (") && notes.contains(" sleep 60)"),
        "{v}"
    );
}

#[test]
fn a_line_of_gigantic_output_is_cut_not_kept_whole() {
    let env = Env::new();
    // 64 MiB on one line, then the summary.
    let cmd = "head -c 67108864 /dev/zero | tr '\\0' x; echo; echo done";
    let repo = leftover_project(&env, "big", cmd);
    let (code, v) = run_tests(&env, &repo, &[], &[]);
    assert_eq!(code, 0, "{v}");
    let tail = v["output_tail"].as_str().unwrap();
    assert!(tail.contains("more bytes of this line cut]\ndone"), "{}", &tail[tail.len().saturating_sub(200)..]);
}

#[test]
fn a_target_named_like_an_option_is_a_file_to_the_runner() {
    let env = Env::new();
    let repo = node_project(&env, "dash");
    // A file whose name is an option: node printed its version and reported a pass.
    write(&repo, "--version", "require('node:test')('named like an option', () => {});\n");
    let (code, v) = run_tests(&env, &repo, &["--target=--version"], &[]);
    let cmd = v["command"].to_string();
    assert!(
        cmd.starts_with(r#"["node","--test","--test-reporter=tap","#) && cmd.ends_with(r#","./--version"]"#),
        "{v}"
    );
    assert_eq!((code, v["passed"].as_u64()), (0, Some(1)), "{v}");
    // pytest removes its --basetemp directory: a file named `--basetemp=keep` cost `keep`.
    let Some(venv) = pytest_venv() else { return };
    let repo = env.repo("dashpy");
    write(&repo, "pyproject.toml", "[project]\nname = \"fixture\"\nversion = \"0.1.0\"\n");
    // A test using tmp_path: pytest then empties its --basetemp.
    write(&repo, "tests/test_ok.py", "def test_fine(tmp_path):\n    assert tmp_path.is_dir()\n");
    write(&repo, "keep/precious.txt", "do not delete\n");
    write(&repo, "--basetemp=keep", "");
    std::os::unix::fs::symlink(&venv, repo.join(".venv")).unwrap();
    let (code, v) = run_tests(&env, &repo, &["--target=--basetemp=keep"], &[]);
    assert!(repo.join("keep/precious.txt").exists(), "pytest took the target as --basetemp: {v}");
    // pytest was handed the file as a path (`./--basetemp=keep`), which holds no test: it says
    // it found nothing there (its exit 4, bad input), naming the file, not an option.
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert_eq!(code, 2, "{v}");
    assert!(message.contains("not found: ") && message.contains("/--basetemp=keep"), "{v}");
}

#[test]
fn a_broken_package_json_or_a_missing_script_command_is_bad_input_not_a_failed_suite() {
    let env = Env::new();
    let repo = node_project(&env, "broken");
    // Read as "no test script", it ran node's runner over the test files and reported that.
    write(&repo, "package.json", "{\"name\": \"broken\", \"scripts\": {\"test\": \"node --test\",}");
    let (code, v) = run_tests(&env, &repo, &[], &[]);
    assert_eq!(code, 2, "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("package.json is not valid JSON") && msg.contains("line 1"), "{msg}");
    // The script's command is not installed: sh's exit 127 was a failed suite with no counts.
    write(&repo, "package.json", "{\"name\": \"broken\", \"scripts\": {\"test\": \"docdex-no-such-runner\"}}");
    let (code, v) = run_tests(&env, &repo, &[], &[]);
    assert_eq!(code, 2, "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("the test command was not found") && msg.contains("docdex-no-such-runner"), "{msg}");
}

#[test]
fn a_cargo_run_killed_at_the_timeout_counts_the_tests_that_finished() {
    let env = Env::new();
    let repo = env.repo("slowcrate");
    write(
        &repo,
        "Cargo.toml",
        "[package]\nname = \"slow\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    );
    write(
        &repo,
        "src/lib.rs",
        "#[cfg(test)]\nmod tests {\n    #[test]\n    fn quick() {}\n\n    #[test]\n    fn hangs() {\n        std::thread::sleep(std::time::Duration::from_secs(300));\n    }\n}\n",
    );
    let target = env.dir.path().join("cargo-target");
    // Built first, so the timeout is spent running, not compiling.
    let built = std::process::Command::new("cargo")
        .args(["test", "--no-run", "--quiet"])
        .current_dir(&repo)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let vars = [("CARGO_TARGET_DIR", target.to_str().unwrap())];
    let (code, v) = run_tests(&env, &repo, &["--timeout", "8"], &vars);
    assert_eq!((code, v["status"].as_str()), (1, Some("timed_out")), "{v}");
    // libtest printed `test tests::quick ... ok` but never its summary: 0 passed before.
    assert_eq!(v["passed"].as_u64(), Some(1), "{v}");
}

#[test]
fn a_virtualenv_whose_python_is_gone_is_named_not_silently_passed_over() {
    let env = Env::new();
    let repo = env.repo("stalevenv");
    write(&repo, "pyproject.toml", "[project]\nname = \"fixture\"\nversion = \"0.1.0\"\n");
    write(&repo, "tests/test_ok.py", "def test_fine():\n    assert True\n");
    // Made by a Python since removed: the link dangles.
    std::fs::create_dir_all(repo.join(".venv/bin")).unwrap();
    std::os::unix::fs::symlink("/nonexistent/python3.99", repo.join(".venv/bin/python")).unwrap();
    // The Python used instead has no pytest (as `python -m pytest` says it).
    let other = env.repo("other-venv");
    write(&other, "bin/python", "#!/bin/sh\necho \"$0: No module named pytest\" >&2\nexit 1\n");
    std::fs::set_permissions(other.join("bin/python"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (code, v) = run_tests(&env, &repo, &[], &[("VIRTUAL_ENV", other.to_str().unwrap())]);
    assert_eq!(code, 2, "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    // It said pytest is missing from the other Python, and nothing of the project's own.
    assert!(msg.contains(".venv/bin/python links to /nonexistent/python3.99, which no longer exists"), "{msg}");
    assert!(msg.contains("python3 -m venv --clear .venv"), "{msg}");
}

/// A pytest project whose configuration keeps `testing/example_scripts` (collected only on
/// purpose, by pytest's own tests) and everything outside `testing/` out of a run, as pytest's
/// repository does; `core.py` is exercised by a test of each.
fn pytest_project_with_excluded_tests(env: &Env, venv: &Path) -> PathBuf {
    let repo = env.repo("pyexcl");
    write(
        &repo,
        "pyproject.toml",
        "[project]\nname = \"fixture\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\ntestpaths = [\"testing\"]\nnorecursedirs = [\"testing/example_scripts\", \".*\"]\n",
    );
    write(&repo, "conftest.py", "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n");
    write(&repo, "core.py", "def value():\n    return 42\n");
    write(&repo, "testing/test_core.py", "from core import value\n\n\ndef test_value():\n    assert value() == 42\n\n\ndef test_other():\n    assert value() != 41\n");
    let broken = "from core import value\n\nraise RuntimeError('fails at collection on purpose')\n";
    write(&repo, "testing/example_scripts/test_core.py", broken);
    write(&repo, "doc/test_core.py", broken);
    std::os::unix::fs::symlink(venv, repo.join(".venv")).unwrap();
    write(&repo, ".gitignore", ".venv\n");
    git_commit_all(&repo);
    repo
}

#[test]
fn affected_pytest_files_its_configuration_excludes_are_not_run() {
    // pytest collects any file it is given: one under norecursedirs that fails at collection
    // on purpose interrupted the whole run ("1 error during collection", 0 tests ran, failed).
    let Some(venv) = pytest_venv() else { return };
    let env = Env::new();
    let repo = pytest_project_with_excluded_tests(&env, &venv);
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    write(&repo, "core.py", "def value():\n    # a comment\n    return 42\n");
    let (code, v) = run_tests(&env, &repo, &["--affected"], &[]);
    assert_eq!((code, v["status"].as_str(), v["passed"].as_u64()), (0, Some("passed"), Some(2)), "{v}");
    let selected = v["selected"].to_string();
    assert!(selected.contains("testing/test_core.py") && !selected.contains("example_scripts"), "{selected}");
    let notes = v["notes"].to_string();
    assert!(
        notes.contains(
            "pytest's configuration (pyproject.toml [tool.pytest.ini_options]) does not collect 2 selected test files"
        ),
        "{notes}"
    );
    assert!(notes.contains("norecursedirs 'testing/example_scripts': testing/example_scripts/test_core.py"), "{notes}");
    assert!(notes.contains("outside testpaths (testing): doc/test_core.py"), "{notes}");
}

#[test]
fn a_run_that_ran_no_test_is_no_tests_and_names_the_tests_of_the_file() {
    let Some(venv) = pytest_venv() else { return };
    let env = Env::new();
    let repo = pytest_project_with_excluded_tests(&env, &venv);
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    // A module, not a test file: pytest exits 5 (no tests collected), which read as failed.
    let (code, v) = run_tests(&env, &repo, &["--target", "core.py"], &[]);
    assert_eq!((code, v["status"].as_str(), v["exit_code"].as_i64()), (5, Some("no_tests"), Some(5)), "{v}");
    let notes = v["notes"].to_string();
    assert!(notes.contains("pytest collected no test (its exit code 5)"), "{notes}");
    assert!(notes.contains("core.py holds no tests; the test files that exercise it: testing/test_core.py"), "{notes}");
    // A pytest node id: its file is checked, the id handed on.
    let (code, v) = run_tests(&env, &repo, &["--target", "testing/test_core.py::test_value"], &[]);
    assert_eq!((code, v["status"].as_str(), v["passed"].as_u64()), (0, Some("passed"), Some(1)), "{v}");
    assert_eq!(v["command"].as_array().unwrap().last().unwrap(), "testing/test_core.py::test_value");
    let (code, v) = run_tests(&env, &repo, &["--target", "testing/nope.py::test_value"], &[]);
    assert_eq!(code, 2, "{v}");

    // cargo: a library file without tests ran `0 passed; ... 2 filtered out`, reported passed.
    let repo = env.repo("crate0");
    write(
        &repo,
        "Cargo.toml",
        "[package]\nname = \"fixture\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    );
    write(&repo, "src/lib.rs", "pub mod calc;\npub mod parse;\n");
    write(&repo, "src/calc.rs", "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n");
    write(
        &repo,
        "src/parse.rs",
        "pub fn num(s: &str) -> i32 {\n    s.parse().unwrap_or(0)\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn one() {\n        assert_eq!(super::num(\"1\"), 1);\n    }\n\n    #[test]\n    fn bad() {\n        assert_eq!(super::num(\"x\"), 0);\n    }\n}\n",
    );
    write(&repo, "tests/calc.rs", "#[test]\nfn adds() {\n    assert_eq!(fixture::calc::add(1, 2), 3);\n}\n");
    let target = env.dir.path().join("cargo-target");
    let vars = [("CARGO_TARGET_DIR", target.to_str().unwrap())];
    let (code, v) = run_tests(&env, &repo, &["--target", "src/calc.rs"], &vars);
    assert_eq!((code, v["status"].as_str(), v["exit_code"].as_i64()), (5, Some("no_tests"), Some(0)), "{v}");
    let notes = v["notes"].to_string();
    assert!(notes.contains("cargo ran no test") && !notes.contains("gave no test counts"), "{notes}");
    assert!(notes.contains("src/calc.rs is not a test file; index the repository"), "{notes}");
    let (code, v) = run_tests(&env, &repo, &["--target", "src/parse.rs"], &vars);
    assert_eq!((code, v["status"].as_str(), v["passed"].as_u64()), (0, Some("passed"), Some(2)), "{v}");
}

#[test]
fn affected_outside_a_git_repository_is_an_error_not_no_tests() {
    // It said "the change reaches no test file: nothing was run", status no_tests, exit 0.
    let env = Env::new();
    let repo = node_project(&env, "nogit");
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let (code, v) = run_tests(&env, &repo, &["--affected"], &[]);
    assert_eq!(code, 2, "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("--affected needs git to know what changed") && msg.contains("not inside a git work tree"),
        "{msg}"
    );
    let mut mcp = McpStdio::start(&env, &["--repo", repo.to_str().unwrap()], serde_json::json!({}));
    let r = mcp.call("docdex_run_tests", serde_json::json!({"affected": true}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(r["content"][0]["text"].as_str().unwrap().contains("not inside a git work tree"), "{r}");
}

#[test]
fn node_failure_messages_come_from_error_blocks_and_a_failing_todo_is_no_failure() {
    let env = Env::new();
    let repo = node_project(&env, "todo");
    // assert/strict's equal writes its message as a YAML `error: |-` block; a {todo: true}
    // test that fails is node's `todo`, not `fail`: it was counted failed and skipped.
    write(
        &repo,
        "test/slug.test.js",
        "const test = require('node:test');\nconst assert = require('node:assert/strict');\n\ntest('basic', () => {\n  assert.equal('hello world', 'hello-world');\n});\ntest('fine', () => {});\ntest.skip('later', () => {});\ntest('todo thing', { todo: true }, () => {\n  assert.fail('x');\n});\n",
    );
    let (code, v) = run_tests(&env, &repo, &["--target", "test/slug.test.js"], &[]);
    assert_eq!(code, 1, "{v}");
    assert_eq!((v["passed"].as_u64(), v["failed"].as_u64(), v["skipped"].as_u64()), (Some(1), Some(1), Some(2)), "{v}");
    assert_eq!(failures(&v), [("basic".to_string(), Some("test/slug.test.js".to_string()), Some(4))]);
    assert_eq!(
        v["failures"][0]["message"].as_str(),
        Some("Expected values to be strictly equal: + actual - expected + 'hello world' - 'hello-world'"),
        "{v}"
    );
}

#[test]
fn pytest_messages_are_whole_and_a_collection_error_has_its_exception() {
    let Some(venv) = pytest_venv() else { return };
    let env = Env::new();
    let repo = env.repo("pymsg");
    write(&repo, "pyproject.toml", "[project]\nname = \"fixture\"\nversion = \"0.1.0\"\n");
    write(
        &repo,
        "tests/test_cart_totals_with_a_long_name.py",
        "def test_total_with_coupon_and_tax_applied():\n    assert 941 == 936\n",
    );
    std::os::unix::fs::symlink(&venv, repo.join(".venv")).unwrap();
    let (code, v) = run_tests(&env, &repo, &[], &[]);
    assert_eq!(code, 1, "{v}");
    // The short summary cut it at 80 columns: 'AssertionError: a...' or shorter.
    assert_eq!(v["failures"][0]["message"].as_str(), Some("assert 941 == 936"), "{v}");
    write(&repo, "tests/test_broken.py", "import no_such_module_here\n");
    let (code, v) = run_tests(&env, &repo, &[], &[]);
    assert_eq!(code, 1, "{v}");
    let broken = v["failures"].as_array().unwrap().iter().find(|f| f["name"] == "tests/test_broken.py").cloned();
    let broken = broken.unwrap_or_else(|| panic!("{v}"));
    assert_eq!(broken["message"].as_str(), Some("ModuleNotFoundError: No module named 'no_such_module_here'"), "{v}");
    assert_eq!(broken["line"].as_u64(), Some(1), "{v}");
}

#[test]
fn a_node_target_without_tests_is_no_tests_not_one_pass() {
    // node runs a file without tests as one passing test named after the file: `--target
    // lib/strings.js` reported passed, 1 passed.
    let env = Env::new();
    let repo = node_project(&env, "nodenone");
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let (code, v) = run_tests(&env, &repo, &["--target", "lib/strings.js"], &[]);
    assert_eq!((code, v["status"].as_str(), v["passed"].as_u64()), (5, Some("no_tests"), Some(0)), "{v}");
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("lib/strings.js holds no tests; the test files that exercise it: test/strings.test.js"),
        "{notes}"
    );
    // Exit 5 (pytest's "no tests collected"), not 0: a CI step told "nothing ran" from "all
    // passed" by nothing. The text says so too, and its `exit` is the runner's, not docdex's.
    let out = env.run(&["run-tests", "--repo", repo.to_str().unwrap(), "--target", "lib/strings.js"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(5), "{text}");
    assert!(
        text.contains("no tests (nothing ran): 0 passed, 0 failed, 0 skipped") && text.contains("(runner exit 0)"),
        "{text}"
    );
    let help = env.run(&["run-tests", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("5 no test ran (status no_tests"), "{help}");
}

#[test]
fn pytests_cache_fixture_works_and_its_cache_stays_out_of_the_repository() {
    // `-p no:cacheprovider` kept .pytest_cache out of the repository but took the `cache`
    // fixture away: on pytest's own suite a test failed with "fixture 'cache' not found".
    let Some(venv) = pytest_venv() else { return };
    let env = Env::new();
    let repo = env.repo("pycache");
    write(&repo, "pyproject.toml", "[project]\nname = \"fixture\"\nversion = \"0.1.0\"\n");
    write(
        &repo,
        "tests/test_cache.py",
        "def test_cache(cache):\n    cache.set('k', 1)\n    assert cache.get('k', None) == 1\n",
    );
    std::os::unix::fs::symlink(&venv, repo.join(".venv")).unwrap();
    let (code, v) = run_tests(&env, &repo, &[], &[]);
    assert_eq!((code, v["status"].as_str(), v["passed"].as_u64()), (0, Some("passed"), Some(1)), "{v}");
    assert!(!repo.join(".pytest_cache").exists(), "{v}");
}

#[test]
fn go_counts_passing_tests_places_failures_and_a_package_without_tests_is_no_tests() {
    // `go test ./...` without -v counted no passing test (a green run read "0 passed"), named a
    // failing test's file by its base name (`calc_test.go`, not `calc/calc_test.go`), and a
    // package without test files (`? pkg [no test files]`, exit 0) was `passed`, exit 0.
    // .ci/run installs go (golang-go); elsewhere this runs where go is on PATH and says so where not.
    if std::process::Command::new("go").arg("version").output().is_err() {
        eprintln!("NOTICE: go is not installed; skipping the go test runs (apt-get install golang-go to run them)");
        return;
    }
    let env = Env::new();
    let repo = env.repo("gomod");
    write(&repo, "go.mod", "module example.com/gomod\n\ngo 1.19\n");
    write(&repo, "calc/calc.go", "package calc\n\nfunc Add(a, b int) int { return a + b }\n");
    write(
        &repo,
        "calc/calc_test.go",
        "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n\nfunc TestSub(t *testing.T) {\n\tt.Run(\"inner\", func(t *testing.T) {})\n}\n\nfunc TestBad(t *testing.T) {\n\tt.Errorf(\"want %d\", 2)\n}\n",
    );
    write(&repo, "lib/lib.go", "package lib\n\nfunc X() int { return 1 }\n");
    let gocache = env.dir.path().join("gocache");
    let vars = [("GOPROXY", "off"), ("GOTOOLCHAIN", "local"), ("GOCACHE", gocache.to_str().unwrap())];
    let (code, v) = run_tests(&env, &repo, &[], &vars);
    assert_eq!((code, v["status"].as_str()), (1, Some("failed")), "{v}");
    assert_eq!((v["passed"].as_u64(), v["failed"].as_u64()), (Some(2), Some(1)), "{v}");
    assert_eq!(failures(&v), [("TestBad".to_string(), Some("calc/calc_test.go".to_string()), Some(16))]);
    let (code, v) = run_tests(&env, &repo, &["--target", "lib/lib.go"], &vars);
    assert_eq!((code, v["status"].as_str(), v["exit_code"].as_i64()), (5, Some("no_tests"), Some(0)), "{v}");
    let notes = v["notes"].to_string();
    assert!(notes.contains("go test found no test") && !notes.contains("gave no test counts"), "{notes}");
}

#[test]
fn pytest_configuration_ignores_are_honoured_and_a_subproject_runs_in_its_own_directory() {
    // pytest collects any file named on its command line: `--affected` handed it files its
    // `addopts = --ignore=...` and a conftest's `collect_ignore_glob` leave out, which fail at
    // import on purpose (the run "failed"). `--color=yes` in addopts coloured the summary, and
    // the counts were lost; a subproject's own pytest.ini (pytest's rootdir for its files) was
    // not read, its `--ignore` (relative to it) missed from the root, its `-qq` hid the counts.
    let Some(venv) = pytest_venv() else { return };
    let env = Env::new();
    let repo = env.repo("pyignore");
    write(&repo, "pyproject.toml", "[project]\nname = \"fixture\"\nversion = \"0.1.0\"\n");
    write(&repo, "pytest.ini", "[pytest]\naddopts = -p no:cacheprovider --color=yes --ignore=tests/legacy\n");
    write(&repo, "conftest.py", "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n");
    write(&repo, "tests/conftest.py", "collect_ignore_glob = [\n    \"gen/*\",  # generated\n]\n");
    write(&repo, "core.py", "def value():\n    return 42\n");
    write(&repo, "tests/test_core.py", "from core import value\n\n\ndef test_value():\n    assert value() == 42\n");
    let broken = "from core import value\n\nraise RuntimeError('left out of the suite on purpose')\n";
    write(&repo, "tests/legacy/test_core_old.py", broken);
    write(&repo, "tests/gen/test_core_gen.py", broken);
    write(&repo, "svc/pytest.ini", "[pytest]\naddopts = -qq --ignore=tests/legacy\n");
    write(&repo, "svc/tests/test_svc.py", "def test_ok():\n    pass\n\n\ndef test_bad():\n    assert 1 == 2\n");
    write(&repo, "svc/tests/legacy/test_svc_old.py", "raise RuntimeError('left out of svc on purpose')\n");
    std::os::unix::fs::symlink(&venv, repo.join(".venv")).unwrap();
    write(&repo, ".gitignore", ".venv\n");
    git_commit_all(&repo);
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    write(&repo, "core.py", "def value():\n    # a comment\n    return 42\n");
    let (code, v) = run_tests(&env, &repo, &["--affected"], &[]);
    assert_eq!((code, v["status"].as_str(), v["passed"].as_u64()), (0, Some("passed"), Some(1)), "{v}");
    let selected = v["selected"].to_string();
    assert!(
        selected.contains("tests/test_core.py") && !selected.contains("legacy") && !selected.contains("gen/"),
        "{v}"
    );
    let notes = v["notes"].to_string();
    assert!(notes.contains("addopts --ignore=tests/legacy: tests/legacy/test_core_old.py"), "{notes}");
    assert!(
        notes.contains("collect_ignore_glob \\\"gen/*\\\" in tests/conftest.py: tests/gen/test_core_gen.py"),
        "{notes}"
    );
    // The root's addopts turn the cache plugin off: no `-o cache_dir` naming it.
    assert!(!v["command"].to_string().contains("cache_dir"), "{v}");
    // A changed conftest.py reaches the tests below it (none imports it): they run, not the
    // conftest itself, which pytest collected as a module without tests (no_tests).
    git_commit_all(&repo);
    write(&repo, "tests/conftest.py", "collect_ignore_glob = [\n    \"gen/*\",  # generated, not run\n]\n");
    let (code, v) = run_tests(&env, &repo, &["--affected"], &[]);
    assert_eq!((code, v["status"].as_str(), v["passed"].as_u64()), (0, Some("passed"), Some(1)), "{v}");
    let selected: Vec<&str> = v["selected"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert_eq!(selected, ["tests/test_core.py: below changed tests/conftest.py"], "{v}");

    // The subproject: run in svc/ (its --ignore means svc/tests/legacy there), -qq raised to -q.
    write(&repo, "svc/tests/test_svc.py", "def test_ok():\n    pass\n\n\ndef test_bad():\n    assert 1 == 3\n");
    let (code, v) = run_tests(&env, &repo, &["--target", "svc/tests"], &[]);
    assert_eq!(code, 1, "{v}");
    assert_eq!((v["passed"].as_u64(), v["failed"].as_u64()), (Some(1), Some(1)), "{v}");
    assert_eq!(
        failures(&v),
        [("svc/tests/test_svc.py::test_bad".to_string(), Some("svc/tests/test_svc.py".to_string()), Some(6))]
    );
    let notes = v["notes"].to_string();
    assert!(notes.contains("pytest ran in svc/, the directory of its configuration svc/pytest.ini"), "{notes}");
    assert!(v["command"].as_array().unwrap().iter().any(|a| a == "-v"), "{v}");
    assert_eq!(v["command"].as_array().unwrap().last().unwrap(), "tests", "{v}");
}

#[test]
fn pytest_keeps_the_users_report_chars_and_traceback_style() {
    // docdex passed `-rfE --tb=line` after the user's addopts, and pytest keeps only the last
    // `-r` and `--tb`: `addopts = -rs --tb=short` lost its skip reasons and its tracebacks.
    let Some(venv) = pytest_venv() else { return };
    let env = Env::new();
    let repo = env.repo("pystyle");
    write(&repo, "pytest.ini", "[pytest]\naddopts = -rs --tb=short\n");
    write(&repo, "tests/helpers.py", "def check(x):\n    assert x == 936\n");
    write(
        &repo,
        "tests/test_style.py",
        "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\nimport pytest\nfrom helpers import check\n\n\ndef test_helper():\n    check(941)\n\n\n@pytest.mark.skip(reason='waits for the new tax table')\ndef test_later():\n    pass\n",
    );
    std::os::unix::fs::symlink(&venv, repo.join(".venv")).unwrap();
    let (code, v) = run_tests(&env, &repo, &[], &[]);
    assert_eq!(code, 1, "{v}");
    let command: Vec<&str> = v["command"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert!(command.contains(&"-rsfE") && !command.iter().any(|a| a.starts_with("--tb")), "{v}");
    assert!(v["output_tail"].as_str().unwrap().contains("waits for the new tax table"), "{v}");
    assert_eq!((v["failed"].as_u64(), v["skipped"].as_u64()), (Some(1), Some(1)), "{v}");
    // The short traceback's frame in the test's own file: line 8, not the helper's.
    assert_eq!(
        failures(&v),
        [("tests/test_style.py::test_helper".to_string(), Some("tests/test_style.py".to_string()), Some(8))]
    );
    assert_eq!(v["failures"][0]["message"].as_str(), Some("AssertionError"), "{v}");
}

#[test]
fn files_under_two_pytest_configurations_run_once_per_configuration_and_merge() {
    // A change reaching a root test and a subproject's test ran one pytest from the root, which
    // read only the root's pytest.ini: the subproject's `pythonpath = src` was not applied, and
    // its test failed at import ("1 error during collection").
    let Some(venv) = pytest_venv() else { return };
    let env = Env::new();
    let repo = env.repo("pytwo");
    write(&repo, "pytest.ini", "[pytest]\naddopts = -p no:cacheprovider\n");
    write(&repo, "core.py", "def value():\n    return 42\n");
    write(&repo, "conftest.py", "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n");
    write(&repo, "tests/test_core.py", "from core import value\n\n\ndef test_value():\n    assert value() == 42\n");
    write(&repo, "svc/pytest.ini", "[pytest]\npythonpath = src\naddopts = -p no:cacheprovider\n");
    write(&repo, "svc/src/svcmod.py", "def double(x):\n    return 2 * x\n");
    let svc_test = "from svcmod import double\n\n\ndef test_ok():\n    assert double(2) == 4\n\n\ndef test_bad():\n    assert double(2) == 5\n";
    write(&repo, "svc/tests/test_svc.py", svc_test);
    std::os::unix::fs::symlink(&venv, repo.join(".venv")).unwrap();
    write(&repo, ".gitignore", ".venv\n");
    git_commit_all(&repo);
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    write(&repo, "tests/test_core.py", "from core import value\n\n\ndef test_value():\n    assert value() != 41\n");
    write(&repo, "svc/tests/test_svc.py", format!("{svc_test}\n"));
    let (code, v) = run_tests(&env, &repo, &["--affected"], &[]);
    assert_eq!((code, v["status"].as_str()), (1, Some("failed")), "{v}");
    assert_eq!((v["passed"].as_u64(), v["failed"].as_u64()), (Some(2), Some(1)), "{v}");
    assert_eq!(
        failures(&v),
        [("svc/tests/test_svc.py::test_bad".to_string(), Some("svc/tests/test_svc.py".to_string()), Some(9))]
    );
    let mut dirs: Vec<(String, Option<i64>)> = v["runs"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|r| (r["dir"].as_str().unwrap().to_string(), r["exit_code"].as_i64()))
        .collect();
    dirs.sort();
    assert_eq!(dirs, [(String::new(), Some(0)), ("svc".to_string(), Some(1))], "{v}");
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("fall under 2 pytest configurations") && notes.contains("once per configuration"),
        "{notes}"
    );
    assert!(notes.contains("pytest ran in svc/, the directory of its configuration svc/pytest.ini"), "{notes}");
}

/// Whether go is installed (the go tests say they skipped where it is not).
fn have_go() -> bool {
    let ok = std::process::Command::new("go").arg("version").output().is_ok();
    if !ok {
        eprintln!("NOTICE: go is not installed; skipping the go test runs (apt-get install golang-go to run them)");
    }
    ok
}

#[test]
fn go_result_lines_a_test_prints_are_not_go_results() {
    // A test printing `--- FAIL: TestGhost (0.00s)` made a phantom failure at a file that does
    // not exist, and the run read `passed` with `failed: 1` (tour13 F4).
    if !have_go() {
        return;
    }
    let env = Env::new();
    let repo = env.repo("goprints");
    write(&repo, "go.mod", "module example.com/goprints\n\ngo 1.19\n");
    write(
        &repo,
        "p/p_test.go",
        "package p\n\nimport (\n\t\"fmt\"\n\t\"testing\"\n)\n\nfunc TestPrints(t *testing.T) {\n\tfmt.Println(\"--- FAIL: TestGhost (0.00s)\")\n\tfmt.Println(\"    ghost_test.go:3: boo\")\n\tfmt.Println(\"--- PASS: TestPhantom (0.00s)\")\n}\n\nfunc TestReal(t *testing.T) { t.Skip(\"later\") }\n",
    );
    let gocache = env.dir.path().join("gocache");
    let vars = [("GOPROXY", "off"), ("GOTOOLCHAIN", "local"), ("GOCACHE", gocache.to_str().unwrap())];
    let (code, v) = run_tests(&env, &repo, &[], &vars);
    assert_eq!((code, v["status"].as_str()), (0, Some("passed")), "{v}");
    let counts = (v["passed"].as_u64(), v["failed"].as_u64(), v["skipped"].as_u64());
    assert_eq!(counts, (Some(1), Some(0), Some(1)), "{v}");
    assert_eq!(failures(&v), [], "{v}");
}

#[test]
fn a_panicking_go_test_has_the_panic_as_message_at_its_line_in_the_test_file() {
    // A panicking test was a failure with file, line and message all null (tour13 F14).
    if !have_go() {
        return;
    }
    let env = Env::new();
    let repo = env.repo("gopanics");
    write(&repo, "go.mod", "module example.com/gopanics\n\ngo 1.19\n");
    write(
        &repo,
        "p/p_test.go",
        "package p\n\nimport \"testing\"\n\nfunc TestOk(t *testing.T) {}\n\nfunc TestPanics(t *testing.T) {\n\tvar m map[string]int\n\tm[\"x\"] = 1\n}\n",
    );
    let gocache = env.dir.path().join("gocache");
    let vars = [("GOPROXY", "off"), ("GOTOOLCHAIN", "local"), ("GOCACHE", gocache.to_str().unwrap())];
    let (code, v) = run_tests(&env, &repo, &[], &vars);
    assert_eq!(
        (code, v["status"].as_str(), v["passed"].as_u64(), v["failed"].as_u64()),
        (1, Some("failed"), Some(1), Some(1)),
        "{v}"
    );
    assert_eq!(failures(&v), [("TestPanics".to_string(), Some("p/p_test.go".to_string()), Some(9))], "{v}");
    assert_eq!(v["failures"][0]["message"], "panic: assignment to entry in nil map", "{v}");
}

/// A table test: its parent logs, each case logs, the failing case logs its inputs after its
/// `t.Errorf` (line 11), which placed the failure at that log (line 12).
const GO_TABLE_TEST: &str = "package calc\n\nimport \"testing\"\n\nfunc TestTable(t *testing.T) {\n\tt.Log(\"starting the table\")\n\tfor _, c := range []struct{ name string; in, want int }{{\"one\", 1, 2}, {\"three\", 3, 7}} {\n\t\tt.Run(c.name, func(t *testing.T) {\n\t\t\tt.Logf(\"case %s\", c.name)\n\t\t\tif c.in*2 != c.want {\n\t\t\t\tt.Errorf(\"double(%d) = %d, want %d\", c.in, c.in*2, c.want)\n\t\t\t\tt.Logf(\"inputs were %d\", c.in)\n\t\t\t}\n\t\t})\n\t}\n}\n";

#[test]
fn go_workspaces_and_nested_modules_run_per_module_and_subtests_fail_by_name() {
    // A go.work workspace without a root go.mod found no runner; a module nested under the
    // root's (tools/go.mod) was skipped by `go test ./...`, its failing test unseen; a failing
    // subtest was reported as its parent, placed at the parent's t.Log line.
    if !have_go() {
        return;
    }
    let env = Env::new();
    let gocache = env.dir.path().join("gocache");
    let vars = [("GOPROXY", "off"), ("GOTOOLCHAIN", "local"), ("GOCACHE", gocache.to_str().unwrap())];
    let repo = env.repo("gowork");
    write(&repo, "go.work", "go 1.19\n\nuse (\n\t./api\n\t./tools // the tools\n)\n");
    write(&repo, "api/go.mod", "module example.com/api\n\ngo 1.19\n");
    write(&repo, "api/calc/calc_test.go", GO_TABLE_TEST);
    write(&repo, "tools/go.mod", "module example.com/tools\n\ngo 1.19\n");
    write(&repo, "tools/fmt/fmt_test.go", "package fmt\n\nimport \"testing\"\n\nfunc TestFmt(t *testing.T) {}\n");
    let (code, v) = run_tests(&env, &repo, &[], &vars);
    assert_eq!((code, v["runner"].as_str(), v["status"].as_str()), (1, Some("go"), Some("failed")), "{v}");
    assert_eq!((v["passed"].as_u64(), v["failed"].as_u64()), (Some(1), Some(1)), "{v}");
    assert_eq!(failures(&v), [("TestTable/three".to_string(), Some("api/calc/calc_test.go".to_string()), Some(11))]);
    assert_eq!(v["failures"][0]["message"].as_str(), Some("double(3) = 6, want 7"), "{v}");
    let dirs: Vec<&str> = v["runs"].as_array().unwrap().iter().map(|r| r["dir"].as_str().unwrap()).collect();
    assert_eq!(dirs, ["api", "tools"], "{v}");

    let repo = env.repo("gonested");
    write(&repo, "go.mod", "module example.com/root\n\ngo 1.19\n");
    write(&repo, "lib/lib_test.go", "package lib\n\nimport \"testing\"\n\nfunc TestLib(t *testing.T) {}\n");
    write(&repo, "tools/go.mod", "module example.com/tools\n\ngo 1.19\n");
    write(&repo, "tools/calc/calc_test.go", GO_TABLE_TEST);
    let (code, v) = run_tests(&env, &repo, &[], &vars);
    assert_eq!((code, v["passed"].as_u64(), v["failed"].as_u64()), (1, Some(1), Some(1)), "{v}");
    assert_eq!(failures(&v), [("TestTable/three".to_string(), Some("tools/calc/calc_test.go".to_string()), Some(11))]);
    // A target in the nested module runs there alone.
    let (code, v) = run_tests(&env, &repo, &["--target", "lib"], &vars);
    assert_eq!((code, v["passed"].as_u64(), v["runs"].as_array()), (0, Some(1), None), "{v}");
    let (code, v) = run_tests(&env, &repo, &["--target", "tools/calc/calc_test.go"], &vars);
    assert_eq!((code, v["failed"].as_u64()), (1, Some(1)), "{v}");
    assert!(v["notes"].to_string().contains("go test ran in tools/, the module holding the target"), "{v}");
    assert_eq!(v["command"].as_array().unwrap().last().unwrap(), "./calc", "{v}");
}

#[test]
fn go_modules_only_below_the_root_are_detected_and_run_per_module() {
    // No go.mod at the root and no go.work: no runner was found ("no test runner found"),
    // though `cd api && go test ./...` runs.
    if !have_go() {
        return;
    }
    let env = Env::new();
    let gocache = env.dir.path().join("gocache");
    let vars = [("GOPROXY", "off"), ("GOTOOLCHAIN", "local"), ("GOCACHE", gocache.to_str().unwrap())];
    let repo = env.repo("gonoroot");
    write(&repo, "README.md", "two services\n");
    write(&repo, "api/go.mod", "module example.com/api\n\ngo 1.19\n");
    write(&repo, "api/calc/calc_test.go", GO_TABLE_TEST);
    write(&repo, "tools/go.mod", "module example.com/tools\n\ngo 1.19\n");
    write(&repo, "tools/fmt/fmt_test.go", "package fmt\n\nimport \"testing\"\n\nfunc TestFmt(t *testing.T) {}\n");
    let (code, v) = run_tests(&env, &repo, &[], &vars);
    assert_eq!((code, v["runner"].as_str(), v["status"].as_str()), (1, Some("go"), Some("failed")), "{v}");
    assert_eq!(v["detected_by"].as_str(), Some("go.mod in api/, tools/ (none at the root, and no go.work)"), "{v}");
    assert_eq!((v["passed"].as_u64(), v["failed"].as_u64()), (Some(1), Some(1)), "{v}");
    assert_eq!(failures(&v), [("TestTable/three".to_string(), Some("api/calc/calc_test.go".to_string()), Some(11))]);
    let runs: Vec<(&str, &str)> = v["runs"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|r| (r["dir"].as_str().unwrap(), r["command"].as_array().unwrap().last().unwrap().as_str().unwrap()))
        .collect();
    assert_eq!(runs, [("api", "./..."), ("tools", "./...")], "{v}");
    // A target in one module runs there; one in no module is bad input, not go's own error.
    let (code, v) = run_tests(&env, &repo, &["--target", "tools/fmt"], &vars);
    assert_eq!((code, v["passed"].as_u64()), (0, Some(1)), "{v}");
    write(&repo, "scripts/x_test.go", "package x\n");
    let out = env.run_env(&["run-tests", "--repo", repo.to_str().unwrap(), "--target", "scripts"], &vars);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("scripts is in no Go module of the repository (its modules: api/, tools/)"), "{err}");
}

#[test]
fn the_whole_suite_runs_pytest_once_per_configuration() {
    // Without a target, one pytest ran from the root with the root's pytest.ini alone: the
    // package's own `pythonpath = src` was lost and its test failed at import ("1 error during
    // collection"), though `cd svc && pytest` passes it.
    let Some(venv) = pytest_venv() else { return };
    let env = Env::new();
    let repo = env.repo("pysuite");
    write(&repo, "pytest.ini", "[pytest]\ntestpaths = tests svc\naddopts = -p no:cacheprovider\n");
    write(&repo, "core.py", "def value():\n    return 42\n");
    write(&repo, "conftest.py", "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n");
    write(&repo, "tests/test_core.py", "from core import value\n\n\ndef test_value():\n    assert value() == 42\n");
    write(&repo, "svc/pytest.ini", "[pytest]\npythonpath = src\naddopts = -p no:cacheprovider\n");
    write(&repo, "svc/src/svcmod.py", "def double(x):\n    return 2 * x\n");
    write(
        &repo,
        "svc/tests/test_svc.py",
        "from svcmod import double\n\n\ndef test_ok():\n    assert double(2) == 4\n\n\ndef test_bad():\n    assert double(2) == 5\n",
    );
    // Outside the root's testpaths: `pytest` from the root does not run it, nor does docdex.
    write(&repo, "legacy/pytest.ini", "[pytest]\n");
    write(&repo, "legacy/test_old.py", "def test_old():\n    assert False\n");
    std::os::unix::fs::symlink(&venv, repo.join(".venv")).unwrap();
    let (code, v) = run_tests(&env, &repo, &[], &[]);
    assert_eq!((code, v["status"].as_str()), (1, Some("failed")), "{v}");
    assert_eq!((v["passed"].as_u64(), v["failed"].as_u64()), (Some(2), Some(1)), "{v}");
    assert_eq!(
        failures(&v),
        [("svc/tests/test_svc.py::test_bad".to_string(), Some("svc/tests/test_svc.py".to_string()), Some(9))]
    );
    let runs: Vec<(&str, Option<i64>, Vec<&str>)> = v["runs"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|r| {
            let ignores = r["command"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|a| a.as_str())
                .filter(|a| a.starts_with("--ignore"));
            (r["dir"].as_str().unwrap(), r["exit_code"].as_i64(), ignores.collect())
        })
        .collect();
    assert_eq!(runs, [("", Some(0), vec!["--ignore=svc"]), ("svc", Some(1), vec![])], "{v}");
    // pytest does not --ignore a path it starts from: the root's testpaths but svc are given.
    assert_eq!(v["command"].as_array().unwrap().last().unwrap(), "tests", "{v}");
    let notes = v["notes"].to_string();
    assert!(notes.contains("the repository has 2 pytest configurations (pytest.ini, svc/pytest.ini)"), "{notes}");
    assert!(
        notes.contains("1 pytest configuration not run")
            && notes.contains("legacy/pytest.ini (outside testpaths (tests, svc) of pytest.ini)"),
        "{notes}"
    );
}

#[test]
fn a_configuration_whose_python_lacks_pytest_keeps_the_other_runs_results() {
    // svc/ has its own virtualenv, without pytest: its run ended the whole run with "pytest is
    // not installed" (exit 2), and the root's results, already in, were dropped.
    let Some(venv) = pytest_venv() else { return };
    let env = Env::new();
    let repo = env.repo("pymissing");
    write(&repo, "pytest.ini", "[pytest]\naddopts = -p no:cacheprovider\n");
    write(&repo, "tests/test_core.py", "def test_value():\n    assert 42 == 42\n");
    write(&repo, "svc/pytest.ini", "[pytest]\n");
    write(&repo, "svc/tests/test_svc.py", "def test_svc():\n    assert True\n");
    std::os::unix::fs::symlink(&venv, repo.join(".venv")).unwrap();
    // svc's own Python, as `python -m pytest` answers without pytest installed.
    write(&repo, "svc/.venv/bin/python", "#!/bin/sh\necho \"$0: No module named pytest\" >&2\nexit 1\n");
    let py = repo.join("svc/.venv/bin/python");
    std::fs::set_permissions(&py, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (code, v) = run_tests(&env, &repo, &[], &[]);
    assert_eq!((code, v["status"].as_str(), v["exit_code"].as_i64()), (1, Some("failed"), Some(1)), "{v}");
    assert_eq!((v["passed"].as_u64(), v["failed"].as_u64()), (Some(1), Some(0)), "{v}");
    let runs: Vec<(&str, Option<i64>, u64)> = v["runs"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|r| (r["dir"].as_str().unwrap(), r["exit_code"].as_i64(), r["passed"].as_u64().unwrap()))
        .collect();
    assert_eq!(runs, [("", Some(0), 1), ("svc", Some(1), 0)], "{v}");
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("the run in svc/ did not start its tests: the test runner pytest is not installed for ")
            && notes.contains("svc/.venv/bin/python"),
        "{notes}"
    );
}

#[test]
fn a_directory_target_runs_each_pytest_configuration_below_it() {
    // `--target pkgs` ran one pytest from the root under the root's pytest.ini: pkgs/a's own
    // `pythonpath = src` was lost and its test failed at import, though `cd pkgs/a && pytest`
    // passes it; pkgs/b's `testpaths` were ignored.
    let Some(venv) = pytest_venv() else { return };
    let env = Env::new();
    let repo = env.repo("pydirtarget");
    write(&repo, "pytest.ini", "[pytest]\ntestpaths = tests\naddopts = -p no:cacheprovider\n");
    write(&repo, "tests/test_root.py", "def test_root():\n    assert False\n");
    write(&repo, "pkgs/a/pytest.ini", "[pytest]\npythonpath = src\naddopts = -p no:cacheprovider\n");
    write(&repo, "pkgs/a/src/amod.py", "def triple(x):\n    return 3 * x\n");
    write(
        &repo,
        "pkgs/a/tests/test_a.py",
        "from amod import triple\n\n\ndef test_ok():\n    assert triple(2) == 6\n\n\ndef test_bad():\n    assert triple(2) == 7\n",
    );
    write(
        &repo,
        "pkgs/b/pyproject.toml",
        "[tool.pytest.ini_options]\ntestpaths = [\"t\"]\naddopts = \"-p no:cacheprovider\"\n",
    );
    write(&repo, "pkgs/b/t/test_b.py", "def test_b():\n    assert True\n");
    // Outside pkgs/b's testpaths: `cd pkgs/b && pytest` does not run it.
    write(&repo, "pkgs/b/scratch/test_scratch.py", "def test_scratch():\n    assert False\n");
    std::os::unix::fs::symlink(&venv, repo.join(".venv")).unwrap();
    let (code, v) = run_tests(&env, &repo, &["--target", "pkgs"], &[]);
    assert_eq!((code, v["status"].as_str()), (1, Some("failed")), "{v}");
    assert_eq!((v["passed"].as_u64(), v["failed"].as_u64()), (Some(2), Some(1)), "{v}");
    assert_eq!(
        failures(&v),
        [("pkgs/a/tests/test_a.py::test_bad".to_string(), Some("pkgs/a/tests/test_a.py".to_string()), Some(9))]
    );
    let runs: Vec<(&str, Option<i64>)> = v["runs"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|r| (r["dir"].as_str().unwrap(), r["exit_code"].as_i64()))
        .collect();
    // pkgs/ holds no test file of its own: no pytest for the root's configuration.
    assert_eq!(runs, [("pkgs/a", Some(1)), ("pkgs/b", Some(0))], "{v}");
    let notes = v["notes"].to_string();
    assert!(notes.contains("the target pkgs/ runs 2 pytest configurations"), "{notes}");
    // A test file of its own: the root's configuration runs pkgs/, leaving the two to theirs.
    write(&repo, "pkgs/test_top.py", "def test_top():\n    assert True\n");
    let (_, v) = run_tests(&env, &repo, &["--target", "pkgs"], &[]);
    assert_eq!((v["passed"].as_u64(), v["failed"].as_u64()), (Some(3), Some(1)), "{v}");
    let tail: Vec<&str> = v["command"].as_array().unwrap().iter().rev().take(3).filter_map(|a| a.as_str()).collect();
    assert_eq!(tail, ["pkgs", "--ignore=pkgs/b", "--ignore=pkgs/a"], "{v}");
}

/// A stand-in for testify's `assert` package (testify cannot be fetched offline): `Equal`
/// reports as testify 1.8's `Fail` does, `t.Errorf("\\n%s", ...)` of its labeled lines with an
/// `Error Trace` from the call stack, which go prints below a location line with no message.
const GO_TESTIFY_STANDIN: &str = "// Package assert: testify's Fail output, as testify v1.8 writes it (labeledOutput, CallerInfo).\npackage assert\n\nimport (\n\t\"bufio\"\n\t\"bytes\"\n\t\"fmt\"\n\t\"runtime\"\n\t\"strings\"\n\t\"testing\"\n)\n\nfunc callerInfo() []string {\n\tvar callers []string\n\tfor i := 0; ; i++ {\n\t\tpc, file, line, ok := runtime.Caller(i)\n\t\tif !ok {\n\t\t\tbreak\n\t\t}\n\t\tf := runtime.FuncForPC(pc)\n\t\tif f == nil {\n\t\t\tbreak\n\t\t}\n\t\tname := f.Name()\n\t\tif name == \"testing.tRunner\" {\n\t\t\tbreak\n\t\t}\n\t\tparts := strings.Split(file, \"/\")\n\t\tif len(parts) > 1 {\n\t\t\tdir := parts[len(parts)-2]\n\t\t\tif dir != \"assert\" && dir != \"require\" && dir != \"mock\" {\n\t\t\t\tcallers = append(callers, fmt.Sprintf(\"%s:%d\", file, line))\n\t\t\t}\n\t\t}\n\t\tsegments := strings.Split(name, \".\")\n\t\tname = segments[len(segments)-1]\n\t\tif strings.HasPrefix(name, \"Test\") {\n\t\t\tbreak\n\t\t}\n\t}\n\treturn callers\n}\n\nfunc indent(message string, n int) string {\n\tout := new(bytes.Buffer)\n\tfor i, s := 0, bufio.NewScanner(strings.NewReader(message)); s.Scan(); i++ {\n\t\tif i != 0 {\n\t\t\tout.WriteString(\"\\n\\t\" + strings.Repeat(\" \", n+1) + \"\\t\")\n\t\t}\n\t\tout.WriteString(s.Text())\n\t}\n\treturn out.String()\n}\n\nfunc Equal(t *testing.T, expected, actual interface{}, msg ...string) bool {\n\tt.Helper()\n\tif expected == actual {\n\t\treturn true\n\t}\n\tlabels := [][2]string{\n\t\t{\"Error Trace\", strings.Join(callerInfo(), \"\\n\\t\\t\\t\")},\n\t\t{\"Error\", fmt.Sprintf(\"Not equal: \\nexpected: %v\\nactual  : %v\", expected, actual)},\n\t\t{\"Test\", t.Name()},\n\t}\n\tif len(msg) > 0 {\n\t\tlabels = append(labels, [2]string{\"Messages\", msg[0]})\n\t}\n\tout := \"\"\n\tfor _, l := range labels {\n\t\tout += \"\\t\" + l[0] + \":\" + strings.Repeat(\" \", len(\"Error Trace\")-len(l[0])) + \"\\t\" + indent(l[1], len(\"Error Trace\")) + \"\\n\"\n\t}\n\tt.Errorf(\"\\n%s\", out)\n\treturn false\n}\n";

/// A failure as the JSON names it: test, file, line, message.
#[test]
fn testify_failures_are_placed_at_the_tests_line_with_their_message() {
    // The location line testify's report starts with has no message: it was not read, and the
    // failure was placed at the `t.Log` printed before it (line 10), or nowhere.
    if !have_go() {
        return;
    }
    let env = Env::new();
    let repo = env.repo("gotestify");
    write(&repo, "go.mod", "module example.com/tf\n\ngo 1.19\n");
    write(&repo, "assert/assert.go", GO_TESTIFY_STANDIN);
    write(&repo, "calc/calc.go", "package calc\n\nfunc Add(a, b int) int { return a + b }\n");
    write(&repo, "calc/calc_test.go", "package calc\n\nimport (\n\t\"testing\"\n\n\t\"example.com/tf/assert\"\n)\n\nfunc TestAdd(t *testing.T) {\n\tt.Log(\"adding\")\n\tassert.Equal(t, 3, Add(1, 1), \"one and one\")\n}\n\nfunc check(t *testing.T, got int) {\n\tassert.Equal(t, 4, got)\n}\n\nfunc TestHelper(t *testing.T) {\n\tcheck(t, Add(1, 2))\n}\n\nfunc TestTable(t *testing.T) {\n\tt.Run(\"two\", func(t *testing.T) {\n\t\tassert.Equal(t, 5, Add(2, 2))\n\t})\n}\n\nfunc TestOk(t *testing.T) {\n\tassert.Equal(t, 2, Add(1, 1))\n}\n");
    let gocache = env.dir.path().join("gocache");
    let vars = [("GOPROXY", "off"), ("GOTOOLCHAIN", "local"), ("GOCACHE", gocache.to_str().unwrap())];
    let (code, v) = run_tests(&env, &repo, &[], &vars);
    assert_eq!((code, v["passed"].as_u64(), v["failed"].as_u64()), (1, Some(1), Some(3)), "{v}");
    let got = run_failures(&v);
    let f = |name: &str, line: u64, msg: &str| {
        (name.to_string(), Some("calc/calc_test.go".to_string()), Some(line), Some(msg.to_string()))
    };
    assert_eq!(
        got,
        [
            f("TestAdd", 11, "Not equal: expected: 3 actual : 2; one and one"),
            f("TestHelper", 15, "Not equal: expected: 4 actual : 3"),
            f("TestTable/two", 24, "Not equal: expected: 5 actual : 4"),
        ],
        "{v}"
    );
}

#[test]
fn a_target_that_is_a_configurations_directory_honours_its_testpaths() {
    // `--target svc` beside `svc/pytest.ini` (`testpaths = tests`) handed pytest `.`, so it
    // collected svc/scratch/ too, which `cd svc && pytest` does not run: its failing test failed
    // the run.
    let Some(venv) = pytest_venv() else { return };
    let env = Env::new();
    let repo = env.repo("pyconfigdir");
    write(&repo, "pytest.ini", "[pytest]\naddopts = -p no:cacheprovider\n");
    write(&repo, "tests/test_root.py", "def test_root():\n    assert True\n");
    write(&repo, "svc/pytest.ini", "[pytest]\ntestpaths = tests\naddopts = -p no:cacheprovider\n");
    write(&repo, "svc/tests/test_svc.py", "def test_svc():\n    assert True\n");
    write(&repo, "svc/scratch/test_scratch.py", "def test_scratch():\n    assert False\n");
    std::os::unix::fs::symlink(&venv, repo.join(".venv")).unwrap();
    for target in ["svc", "svc/"] {
        let (code, v) = run_tests(&env, &repo, &["--target", target], &[]);
        assert_eq!((code, v["status"].as_str()), (0, Some("passed")), "{v}");
        assert_eq!((v["passed"].as_u64(), v["failed"].as_u64()), (Some(1), Some(0)), "{v}");
        // Run from svc/ without arguments: pytest reads its testpaths there.
        assert_eq!(v["command"].as_array().unwrap().last().unwrap(), "--tb=line", "{v}");
        assert!(v["notes"].to_string().contains("pytest ran in svc/, the directory of its configuration"), "{v}");
    }
    // A directory inside it is handed as given: its testpaths do not apply, as for pytest.
    let (code, v) = run_tests(&env, &repo, &["--target", "svc/scratch"], &[]);
    assert_eq!((code, v["failed"].as_u64()), (1, Some(1)), "{v}");
}

/// A failure with the runner that reported it, as the JSON of a run of several runners names it.
fn failures_by_runner(v: &Value) -> Vec<(String, String)> {
    let list = v["failures"].as_array().unwrap_or_else(|| panic!("{v}"));
    list.iter()
        .map(|f| (f["runner"].as_str().unwrap_or("-").to_string(), f["name"].as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn a_rust_crate_and_a_python_package_run_both_runners_and_merge() {
    // Only cargo ran, the first runner detected; pytest's suite beside it was named in a note
    // and never run, so its failing test went unseen.
    let Some(venv) = pytest_venv() else { return };
    let env = Env::new();
    let repo = env.repo("rustpy");
    write(
        &repo,
        "Cargo.toml",
        "[package]\nname = \"fixture\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    );
    write(
        &repo,
        "src/lib.rs",
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(1, 2), 3);\n    }\n}\n",
    );
    // A Python package: a project file and test files in tests/ (no pytest configuration).
    write(&repo, "pyproject.toml", "[project]\nname = \"fixture-py\"\nversion = \"0.1.0\"\n");
    write(
        &repo,
        "tests/test_calc.py",
        "def test_ok():\n    assert 1 + 1 == 2\n\n\ndef test_bad():\n    assert 1 + 1 == 3\n",
    );
    std::os::unix::fs::symlink(&venv, repo.join(".venv")).unwrap();
    let target = env.dir.path().join("cargo-target");
    let vars = [("CARGO_TARGET_DIR", target.to_str().unwrap())];
    let (code, v) = run_tests(&env, &repo, &[], &vars);
    assert_eq!((code, v["status"].as_str(), v["exit_code"].as_i64()), (1, Some("failed"), Some(1)), "{v}");
    // The first runner stays `runner`, as before; `runners` has each.
    assert_eq!((v["runner"].as_str(), v["command"][0].as_str()), (Some("cargo"), Some("cargo")), "{v}");
    assert_eq!((v["passed"].as_u64(), v["failed"].as_u64()), (Some(2), Some(1)), "{v}");
    assert_eq!(failures_by_runner(&v), [("pytest".to_string(), "tests/test_calc.py::test_bad".to_string())]);
    let runners: Vec<(&str, &str, u64, u64)> = v["runners"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|r| {
            let n = |k: &str| r[k].as_u64().unwrap();
            (r["runner"].as_str().unwrap(), r["status"].as_str().unwrap(), n("passed"), n("failed"))
        })
        .collect();
    assert_eq!(runners, [("cargo", "passed", 1, 0), ("pytest", "failed", 1, 1)], "{v}");
    let runs: Vec<&str> = v["runs"].as_array().unwrap().iter().map(|r| r["runner"].as_str().unwrap()).collect();
    assert_eq!(runs, ["cargo", "pytest"], "{v}");
    let tail = v["output_tail"].as_str().unwrap();
    assert!(tail.contains("[docdex] cargo: cargo test") && tail.contains("[docdex] pytest: "), "{tail}");
    assert!(v["notes"].to_string().contains("ran 2 runners one after another (cargo, pytest)"), "{v}");

    // A target inside one runner's files runs that runner alone, reported as a run of it.
    let (code, v) = run_tests(&env, &repo, &["--target", "tests/test_calc.py::test_ok"], &vars);
    assert_eq!((code, v["runner"].as_str(), v["passed"].as_u64()), (0, Some("pytest"), Some(1)), "{v}");
    assert!(v["runners"].is_null() && v["failures"].as_array().unwrap().is_empty(), "{v}");
    let (code, v) = run_tests(&env, &repo, &["--target", "src/lib.rs"], &vars);
    assert_eq!((code, v["runner"].as_str(), v["passed"].as_u64()), (0, Some("cargo"), Some(1)), "{v}");

    // pytest missing from the project's Python: cargo's result stands, a note names the
    // tests not run (a run of pytest alone would be exit 2, its runner missing).
    std::fs::remove_file(repo.join(".venv")).unwrap();
    write(&repo, ".venv/bin/python", "#!/bin/sh\necho \"$0: No module named pytest\" >&2\nexit 1\n");
    let py = repo.join(".venv/bin/python");
    std::fs::set_permissions(&py, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (code, v) = run_tests(&env, &repo, &[], &vars);
    assert_eq!((code, v["status"].as_str(), v["passed"].as_u64()), (0, Some("passed"), Some(1)), "{v}");
    assert!(v["runners"][1]["not_run"].as_str().unwrap().contains("pytest is not installed for"), "{v}");
    assert!(
        v["notes"].to_string().contains("pytest's tests did not run: the test runner pytest is not installed"),
        "{v}"
    );
    // The text output has a line per runner.
    let out = env.run_env(&["run-tests", "--repo", repo.to_str().unwrap()], &vars);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("  cargo: passed: 1 passed, 0 failed, 0 skipped"), "{text}");
    assert!(text.contains("  pytest: not run (the test runner pytest is not installed for "), "{text}");
}

#[test]
fn a_js_package_and_go_modules_below_it_run_both_within_one_timeout() {
    if !have_go() {
        return;
    }
    let env = Env::new();
    let gocache = env.dir.path().join("gocache");
    let vars = [("GOPROXY", "off"), ("GOTOOLCHAIN", "local"), ("GOCACHE", gocache.to_str().unwrap())];
    let repo = node_project(&env, "jsgo");
    write(&repo, "api/go.mod", "module example.com/api\n\ngo 1.19\n");
    write(&repo, "api/calc/calc_test.go", GO_TABLE_TEST);
    let (code, v) = run_tests(&env, &repo, &[], &vars);
    assert_eq!((code, v["runner"].as_str(), v["status"].as_str()), (1, Some("node"), Some("failed")), "{v}");
    // node: adds, shouts pass, breaks fails; go: TestTable/three fails.
    assert_eq!((v["passed"].as_u64(), v["failed"].as_u64()), (Some(2), Some(2)), "{v}");
    assert_eq!(
        failures_by_runner(&v),
        [("node".to_string(), "breaks".to_string()), ("go".to_string(), "TestTable/three".to_string())]
    );
    let dirs: Vec<(&str, &str)> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["runner"].as_str().unwrap(), r["dir"].as_str().unwrap()))
        .collect();
    assert_eq!(dirs, [("node", ""), ("go", "api")], "{v}");
    // A target in the Go module runs go alone.
    let (code, v) = run_tests(&env, &repo, &["--target", "api/calc"], &vars);
    assert_eq!(
        (code, v["runner"].as_str(), v["failed"].as_u64(), v["runners"].is_null()),
        (1, Some("go"), Some(1), true),
        "{v}"
    );

    // One deadline for all: node hangs to the timeout, go is not started.
    write(
        &repo,
        "test/hang.test.js",
        "const test = require('node:test');\ntest('hangs', async () => {\n  await new Promise((r) => setTimeout(r, 120000));\n});\n",
    );
    let started = std::time::Instant::now();
    let (code, v) = run_tests(&env, &repo, &["--timeout", "3"], &vars);
    assert!(started.elapsed().as_secs() < 30, "one timeout for the whole run");
    assert_eq!((code, v["status"].as_str(), v["exit_code"].as_i64()), (1, Some("timed_out"), None), "{v}");
    assert_eq!(v["runners"][0]["status"].as_str(), Some("timed_out"), "{v}");
    assert_eq!(v["runners"][1]["not_run"].as_str(), Some("not started: the 3 s timeout had struck"), "{v}");
}

/// A cargo workspace of two members, `crates/alpha` (package `alpha-core`) and `crates/beta`,
/// each with a passing unit test; beta has an integration test too.
fn cargo_workspace(env: &Env) -> PathBuf {
    let repo = env.repo("cargows");
    write(&repo, "Cargo.toml", "[workspace]\nmembers = [\"crates/*\"]\nresolver = \"2\"\n");
    for (dir, name) in [("crates/alpha", "alpha-core"), ("crates/beta", "beta")] {
        write(
            &repo,
            &format!("{dir}/Cargo.toml"),
            format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"),
        );
        write(
            &repo,
            &format!("{dir}/src/lib.rs"),
            "pub fn one() -> i32 {\n    1\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn one_is_one() {\n        assert_eq!(super::one(), 1);\n    }\n}\n",
        );
    }
    write(&repo, "crates/beta/tests/api.rs", "#[test]\nfn api() {\n    assert_eq!(beta::one(), 1);\n}\n");
    repo
}

#[test]
fn a_target_in_a_cargo_workspace_member_runs_that_member_and_compile_errors_are_placed() {
    // A target in a member ran the whole workspace; a build failure gave no file nor line.
    let env = Env::new();
    let repo = cargo_workspace(&env);
    let target = env.dir.path().join("cargo-target");
    let vars = [("CARGO_TARGET_DIR", target.to_str().unwrap())];
    let (code, v) = run_tests(&env, &repo, &["--target", "crates/beta"], &vars);
    assert_eq!((code, v["status"].as_str()), (0, Some("passed")), "{v}");
    assert_eq!(v["command"], serde_json::json!(["cargo", "test", "--no-fail-fast", "-p", "beta"]), "{v}");
    // beta's unit test and its integration test; alpha's did not run.
    assert_eq!(v["passed"].as_u64(), Some(2), "{v}");
    assert!(v["notes"].to_string().contains("workspace member crates/beta/ (package beta)"), "{v}");
    let (code, v) = run_tests(&env, &repo, &["--target", "crates/beta/tests/api.rs"], &vars);
    assert_eq!((code, v["passed"].as_u64()), (0, Some(1)), "{v}");
    assert_eq!(v["command"], serde_json::json!(["cargo", "test", "--no-fail-fast", "-p", "beta", "--test", "api"]));

    // alpha stops compiling: each error is a failure at its place, with the compiler's message.
    write(
        &repo,
        "crates/alpha/src/lib.rs",
        "pub fn one() -> i32 {\n    \"one\"\n}\n\npub fn two() -> i32 {\n    undefined_two()\n}\n",
    );
    let (code, v) = run_tests(&env, &repo, &[], &vars);
    assert_eq!((code, v["status"].as_str()), (1, Some("failed")), "{v}");
    let alpha = Some("crates/alpha/src/lib.rs".to_string());
    assert_eq!(
        run_failures(&v),
        [
            ("alpha-core".to_string(), alpha.clone(), Some(2), Some("error[E0308]: mismatched types".to_string())),
            (
                "alpha-core".to_string(),
                alpha,
                Some(6),
                Some("error[E0425]: cannot find function `undefined_two` in this scope".to_string())
            ),
        ],
        "{v}"
    );
    assert_eq!(v["failed"].as_u64(), Some(2), "{v}");
}

/// A crate whose tests `b_hangs` and `c_hangs` never end (`a_quick` and `d_waits` do), its test
/// binary built (into the returned target directory) with `cargo_config` as its
/// `.cargo/config.toml` when given, so a run's timeout is spent running the tests.
fn hanging_crate(env: &Env, name: &str, cargo_config: Option<&str>) -> (PathBuf, PathBuf) {
    let repo = env.repo(name);
    write(&repo, "Cargo.toml", "[package]\nname = \"hang\"\nversion = \"0.1.0\"\nedition = \"2021\"\n");
    write(
        &repo,
        "src/lib.rs",
        "#[cfg(test)]\nmod tests {\n    #[test]\n    fn a_quick() {}\n\n    #[test]\n    fn b_hangs() {\n        std::thread::sleep(std::time::Duration::from_secs(300));\n    }\n\n    #[test]\n    fn c_hangs() {\n        std::thread::sleep(std::time::Duration::from_secs(300));\n    }\n\n    #[test]\n    fn d_waits() {}\n}\n",
    );
    if let Some(config) = cargo_config {
        write(&repo, ".cargo/config.toml", config);
    }
    let target = env.dir.path().join(format!("cargo-target-{name}"));
    let built = std::process::Command::new("cargo")
        .args(["test", "--no-run", "--quiet"])
        .current_dir(&repo)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    (repo, target)
}

#[test]
fn a_cargo_run_killed_at_the_timeout_names_the_test_that_hangs() {
    let env = Env::new();
    let (repo, target) = hanging_crate(&env, "hangcrate", None);
    // One test at a time: libtest prints `test tests::b_hangs ... ` as it starts.
    let vars = [("CARGO_TARGET_DIR", target.to_str().unwrap()), ("RUST_TEST_THREADS", "1")];
    let (code, v) = run_tests(&env, &repo, &["--timeout", "8"], &vars);
    assert_eq!(
        (code, v["status"].as_str(), v["passed"].as_u64(), v["failed"].as_u64()),
        (1, Some("timed_out"), Some(1), Some(1)),
        "{v}"
    );
    assert_eq!(v["failures"][0]["name"], "tests::b_hangs", "{v}");
    assert_eq!(v["failures"][0]["message"], "timed out after 8 s while running tests::b_hangs", "{v}");
    // Two at a time, libtest names a test only when it ends (or after 60 s): the binary's own
    // list less the tests that ended names the two started and never ended; d_waits, never
    // started, is not named (it named none).
    let vars = [("CARGO_TARGET_DIR", target.to_str().unwrap()), ("RUST_TEST_THREADS", "2")];
    let (_, v) = run_tests(&env, &repo, &["--timeout", "5"], &vars);
    assert_both_hangs_named(&v);
    assert_eq!(
        v["failures"][0]["message"],
        "timed out after 5 s while running tests::b_hangs, one of 2 tests libtest was running side by side, which names a test only when it ends (tests::b_hangs, tests::c_hangs)",
        "{v}"
    );
}

/// A timed-out run of `hanging_crate` with two test threads: a_passes passed, and b_hangs and
/// c_hangs, running side by side when it was killed, are both named.
fn assert_both_hangs_named(v: &Value) {
    assert_eq!(
        (v["status"].as_str(), v["passed"].as_u64(), v["failed"].as_u64()),
        (Some("timed_out"), Some(1), Some(2)),
        "{v}"
    );
    assert_eq!(
        failures(v),
        [("tests::b_hangs".to_string(), None, None), ("tests::c_hangs".to_string(), None, None)],
        "{v}"
    );
}

/// The thread count cargo hands the test binaries from the repository's `.cargo/config.toml`
/// `[env]` names the tests running side by side: forced there, it beats docdex's own
/// environment (one thread, where libtest would have named the test as it started and the
/// list would name b_hangs alone).
#[test]
fn a_cargo_run_killed_at_the_timeout_reads_the_thread_count_of_the_repository_cargo_config() {
    let env = Env::new();
    let config = "[env]\nRUST_TEST_THREADS = { value = \"2\", force = true }\n";
    let (repo, target) = hanging_crate(&env, "hangconfig", Some(config));
    let vars = [("CARGO_TARGET_DIR", target.to_str().unwrap()), ("RUST_TEST_THREADS", "1")];
    let (_, v) = run_tests(&env, &repo, &["--timeout", "5"], &vars);
    assert_both_hangs_named(&v);
}

/// Builds the test binaries of `packages` in `repo` (offline, into `gocache`), so a run's
/// timeout is spent running them.
fn go_build_first(repo: &Path, gocache: &Path, packages: &str) {
    let built = std::process::Command::new("go")
        .args(["test", "-run", "NONE", packages])
        .current_dir(repo)
        .env("GOCACHE", gocache)
        .env("GOPROXY", "off")
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
}

#[test]
fn go_directory_targets_take_subpackages_printed_announcements_are_text_and_a_hang_is_named() {
    if !have_go() {
        return;
    }
    let env = Env::new();
    let repo = env.repo("godirs");
    write(&repo, "go.mod", "module example.com/godirs\n\ngo 1.19\n");
    // TestReal prints a fake announcement and result; TestBad fails, so the package line is FAIL.
    write(
        &repo,
        "pkg/a_test.go",
        "package pkg\n\nimport (\n\t\"fmt\"\n\t\"testing\"\n)\n\nfunc TestReal(t *testing.T) {\n\tfmt.Println(\"=== RUN   TestFake\")\n\tfmt.Println(\"--- FAIL: TestFake (0.00s)\")\n}\n\nfunc TestBad(t *testing.T) { t.Error(\"bad\") }\n",
    );
    write(
        &repo,
        "pkg/sub/b_test.go",
        "package sub\n\nimport \"testing\"\n\nfunc TestSub(t *testing.T) { t.Error(\"sub fails\") }\n",
    );
    write(
        &repo,
        "hang/h_test.go",
        "package hang\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nfunc TestQuick(t *testing.T) {}\n\nfunc TestHang(t *testing.T) {\n\tt.Run(\"slow\", func(t *testing.T) { time.Sleep(300 * time.Second) })\n}\n",
    );
    let gocache = env.dir.path().join("gocache");
    let vars = [("GOPROXY", "off"), ("GOTOOLCHAIN", "local"), ("GOCACHE", gocache.to_str().unwrap())];
    let (code, v) = run_tests(&env, &repo, &["--target", "pkg"], &vars);
    assert_eq!((code, v["status"].as_str()), (1, Some("failed")), "{v}");
    // go's own -timeout a little below docdex's (600 s by default).
    assert_eq!(v["command"], serde_json::json!(["go", "test", "-v", "-timeout=570s", "./pkg/..."]), "{v}");
    assert_eq!((v["passed"].as_u64(), v["failed"].as_u64()), (Some(1), Some(2)), "{v}");
    assert_eq!(
        failures(&v),
        [
            ("TestBad".to_string(), Some("pkg/a_test.go".to_string()), Some(13)),
            ("TestSub".to_string(), Some("pkg/sub/b_test.go".to_string()), Some(5)),
        ],
        "{v}"
    );
    // A file stays its own package.
    let (_, v) = run_tests(&env, &repo, &["--target", "pkg/a_test.go"], &vars);
    assert_eq!(v["command"], serde_json::json!(["go", "test", "-v", "-timeout=570s", "./pkg"]), "{v}");

    go_build_first(&repo, &gocache, "./hang");
    // go's own -timeout (7 s, below docdex's 10) stops it: named, and placed where it sleeps.
    let (code, v) = run_tests(&env, &repo, &["--target", "hang", "--timeout", "10"], &vars);
    assert_eq!((code, v["status"].as_str(), v["passed"].as_u64()), (1, Some("timed_out"), Some(1)), "{v}");
    assert_eq!(failures(&v), [("TestHang/slow".to_string(), Some("hang/h_test.go".to_string()), Some(11))], "{v}");
    assert_eq!(
        v["failures"][0]["message"],
        "timed out after 7s while running TestHang/slow in package example.com/godirs/hang (go test's -timeout stopped it)",
        "{v}"
    );
}

#[test]
fn a_hang_in_each_of_several_go_packages_is_named_by_gos_own_timeout() {
    // go test ./... holds back each package's output until it ends: killed at docdex's timeout,
    // no package tested beside another named its hung test. go's own -timeout, set below
    // docdex's, makes each package end, printing its tests and its goroutines' stacks.
    if !have_go() {
        return;
    }
    let env = Env::new();
    let repo = env.repo("gohangs");
    write(&repo, "go.mod", "module example.com/gohangs\n\ngo 1.19\n");
    write(&repo, "fine/f_test.go", "package fine\n\nimport \"testing\"\n\nfunc TestFine(t *testing.T) {}\n");
    write(
        &repo,
        "hang/h_test.go",
        "package hang\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nfunc TestQuick(t *testing.T) {}\n\nfunc TestHang(t *testing.T) {\n\tt.Run(\"slow\", func(t *testing.T) { time.Sleep(300 * time.Second) })\n}\n",
    );
    write(
        &repo,
        "stuck/s_test.go",
        "package stuck\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nfunc TestA(t *testing.T) {}\n\nfunc TestStuck(t *testing.T) {\n\ttime.Sleep(300 * time.Second)\n}\n",
    );
    let gocache = env.dir.path().join("gocache");
    go_build_first(&repo, &gocache, "./...");
    let vars = [("GOPROXY", "off"), ("GOTOOLCHAIN", "local"), ("GOCACHE", gocache.to_str().unwrap())];
    let (code, v) = run_tests(&env, &repo, &["--timeout", "10"], &vars);
    assert_eq!(v["command"], serde_json::json!(["go", "test", "-v", "-timeout=7s", "./..."]), "{v}");
    assert_eq!(
        (code, v["status"].as_str(), v["exit_code"].as_i64(), v["passed"].as_u64(), v["failed"].as_u64()),
        (1, Some("timed_out"), None, Some(3), Some(2)),
        "{v}"
    );
    assert_eq!(
        failures(&v),
        [
            ("TestHang/slow".to_string(), Some("hang/h_test.go".to_string()), Some(11)),
            ("TestStuck".to_string(), Some("stuck/s_test.go".to_string()), Some(11)),
        ],
        "{v}"
    );
    assert_eq!(
        v["failures"][1]["message"],
        "timed out after 7s while running TestStuck in package example.com/gohangs/stuck (go test's -timeout stopped it)",
        "{v}"
    );
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("go test's own -timeout=7s")
            && notes.contains("stopped 2 packages: example.com/gohangs/hang, example.com/gohangs/stuck"),
        "{notes}"
    );
    // go ended by itself: nothing was killed.
    assert!(!notes.contains("killed after"), "{notes}");
}

#[test]
fn a_pytest_run_killed_at_the_timeout_names_the_test_it_was_in() {
    let Some(venv) = pytest_venv() else { return };
    let env = Env::new();
    let repo = env.repo("pyhang");
    write(&repo, "pyproject.toml", "[project]\nname = \"fixture\"\nversion = \"0.1.0\"\n");
    write(
        &repo,
        "tests/test_hang.py",
        "import time\n\n\ndef test_quick():\n    pass\n\n\ndef test_sleeps():\n    time.sleep(300)\n",
    );
    std::os::unix::fs::symlink(&venv, repo.join(".venv")).unwrap();
    // Default output names the file and the test's place in it.
    let (code, v) = run_tests(&env, &repo, &["--timeout", "8"], &[]);
    assert_eq!((code, v["status"].as_str()), (1, Some("timed_out")), "{v}");
    assert_eq!(failures(&v), [("tests/test_hang.py".to_string(), Some("tests/test_hang.py".to_string()), None)]);
    assert_eq!(
        v["failures"][0]["message"],
        "timed out after 8 s while running the 2nd test of tests/test_hang.py (pytest -v would name it)",
        "{v}"
    );
    // With -v (the user's addopts) it names the node id.
    write(&repo, "pytest.ini", "[pytest]\naddopts = -v\n");
    let (_, v) = run_tests(&env, &repo, &["--timeout", "8"], &[]);
    assert_eq!(v["failures"][0]["name"], "tests/test_hang.py::test_sleeps", "{v}");
    assert_eq!(v["failures"][0]["message"], "timed out after 8 s while running tests/test_hang.py::test_sleeps", "{v}");
}

/// A test printing more than docdex keeps (50,000 lines) used to push the start of the output
/// out: cargo's result line of the binary before it (1 passed, 2 failed read "0 passed, 1
/// failed", the unit test's failure gone) and pytest's `FAILURES` header (each failure lost
/// its line), with nothing saying the output was cut.
#[test]
fn a_test_printing_megabytes_keeps_the_counts_and_places_printed_before_it() {
    let env = Env::new();
    let repo = env.repo("loudcrate");
    write(
        &repo,
        "Cargo.toml",
        "[package]\nname = \"loud\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    );
    write(
        &repo,
        "src/lib.rs",
        "#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {}\n\n    #[test]\n    fn breaks() {\n        assert_eq!(1 + 1, 3);\n    }\n}\n",
    );
    write(
        &repo,
        "tests/z_loud.rs",
        "#[test]\nfn loud() {\n    for i in 0..60000 {\n        println!(\"line {i}\");\n    }\n    panic!(\"loud failed\");\n}\n",
    );
    let target = env.dir.path().join("cargo-target");
    let (code, v) = run_tests(&env, &repo, &[], &[("CARGO_TARGET_DIR", target.to_str().unwrap())]);
    assert_eq!((code, v["passed"].as_u64(), v["failed"].as_u64()), (1, Some(1), Some(2)), "{v}");
    let names: Vec<_> = failures(&v).into_iter().map(|f| (f.0, f.2)).collect();
    assert!(names.contains(&("tests::breaks".to_string(), Some(8))), "{names:?}");
    let notes = v["notes"].to_string();
    assert!(notes.contains("were not, so counts and failures printed only there are missing"), "{notes}");

    let Some(venv) = pytest_venv() else { return };
    let repo = env.repo("loudpy");
    write(&repo, "pyproject.toml", "[project]\nname = \"fixture\"\nversion = \"0.1.0\"\n");
    write(&repo, "tests/test_a.py", "def test_quiet():\n    assert 1 == 2\n");
    write(
        &repo,
        "tests/test_b.py",
        "def test_loud():\n    for i in range(60000):\n        print('x' * 40)\n    assert 'a' == 'b'\n",
    );
    std::os::unix::fs::symlink(&venv, repo.join(".venv")).unwrap();
    let (code, v) = run_tests(&env, &repo, &[], &[]);
    assert_eq!((code, v["failed"].as_u64()), (1, Some(2)), "{v}");
    assert_eq!(
        failures(&v),
        [
            ("tests/test_a.py::test_quiet".to_string(), Some("tests/test_a.py".to_string()), Some(2)),
            ("tests/test_b.py::test_loud".to_string(), Some("tests/test_b.py".to_string()), Some(4)),
        ]
    );
}
