//! `docdex run-tests`: the command lines it makes from the user's own (`[tests] command` with
//! its `{targets}` placeholder; a `package.json` test script's environment and options), npm's
//! placeholder script, and a run that collected tests and ran none. Real `sh`, node and pytest
//! (from DOCDEX_TEST_PYTEST_VENV, when set).

use crate::util::{pytest_venv, run_tests_json as run_tests, write, Env};

fn set_command(env: &Env, command: &str) {
    std::fs::create_dir_all(env.home()).unwrap();
    write(&env.home(), "config.toml", format!("[tests]\ncommand = {command:?}\n"));
}

#[test]
fn the_targets_placeholder_puts_the_files_where_the_command_says_quoted_for_the_shell() {
    let env = Env::new();
    let repo = env.repo("placed");
    // A name with a space, `$(...)` and a quote: it must reach the command whole, never run.
    let tricky = "tests/a b $(touch pwned) it's.py";
    write(&repo, tricky, "");
    let out = env.dir.path().join("args.txt");
    let out = out.to_str().unwrap();
    // Bare: one word per file, in place (before `end`), not appended.
    set_command(&env, &format!("printf '%s\\n' start {{targets}} end > {out}"));
    let (code, v) = run_tests(&env, &repo, &["--target", tricky], &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(std::fs::read_to_string(out).unwrap(), format!("start\n{tricky}\nend\n"));
    assert!(!repo.join("pwned").exists() && !env.dir.path().join("pwned").exists());
    assert_eq!(v["command"][2], format!("printf '%s\\n' start 'tests/a b $(touch pwned) it'\\''s.py' end > {out}"));
    // Inside double quotes, as `make test FILES="{targets}"` writes it: the list's text, which
    // the recipe's shell reads again as words.
    set_command(&env, &format!("FILES=\"{{targets}}\"; eval \"printf '%s\\n' $FILES\" > {out}"));
    let (code, v) = run_tests(&env, &repo, &["--target", tricky], &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(std::fs::read_to_string(out).unwrap(), format!("{tricky}\n"));
    assert!(!repo.join("pwned").exists() && !env.dir.path().join("pwned").exists());
    // No target: the placeholder is nothing.
    set_command(&env, &format!("printf '[%s]\\n' start {{targets}} end > {out}"));
    let (code, v) = run_tests(&env, &repo, &[], &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(std::fs::read_to_string(out).unwrap(), "[start]\n[end]\n");
    // Without the placeholder the files are appended, as before.
    set_command(&env, &format!("printf '%s\\n' > {out} first"));
    let (code, v) = run_tests(&env, &repo, &["--target", tricky], &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(std::fs::read_to_string(out).unwrap(), format!("first\n{tricky}\n"));
}

#[test]
fn npms_placeholder_test_script_is_no_suite() {
    let env = Env::new();
    let repo = env.repo("placeholder");
    let placeholder =
        r#"{"name": "p", "version": "1.0.0", "scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}"#;
    write(&repo, "package.json", placeholder);
    write(&repo, "index.js", "module.exports = 1;\n");
    // It ran node's runner over nothing (or `npm test`, a failed suite): now no runner, saying why.
    let (code, v) = run_tests(&env, &repo, &[], &[]);
    assert_eq!(code, 2, "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("npm's placeholder") && msg.contains("scripts.test"), "{msg}");
    let Some(venv) = pytest_venv() else { return };
    // With a Python suite beside it, pytest runs alone and a note says why node did not.
    write(&repo, "pyproject.toml", "[project]\nname = \"p\"\nversion = \"0.1.0\"\n");
    write(&repo, "tests/test_ok.py", "def test_ok():\n    assert True\n");
    std::os::unix::fs::symlink(&venv, repo.join(".venv")).unwrap();
    let (code, v) = run_tests(&env, &repo, &[], &[]);
    assert_eq!((code, v["runner"].as_str(), v["passed"].as_u64()), (0, Some("pytest"), Some(1)), "{v}");
    assert!(v["runners"].is_null(), "{v}");
    assert!(v["notes"].to_string().contains("npm's placeholder"), "{v}");
}

#[test]
fn a_node_test_scripts_environment_and_options_are_kept_and_the_target_narrows_it() {
    let env = Env::new();
    let repo = env.repo("nodeopts");
    // The suite needs the script's --require and environment.
    write(&repo, "setup.js", "globalThis.FROM_SETUP = 'yes';\n");
    let test = |name: &str| {
        format!("const test = require('node:test');\nconst assert = require('node:assert');\ntest('{name}', () => {{\n  assert.strictEqual(globalThis.FROM_SETUP, 'yes');\n  assert.strictEqual(process.env.FROM_ENV, '1');\n}});\n")
    };
    write(&repo, "test/a.test.js", test("a"));
    write(&repo, "test/b.test.js", test("b"));
    write(
        &repo,
        "package.json",
        r#"{"name": "n", "version": "1.0.0", "scripts": {"test": "FROM_ENV=1 node --require ./setup.js --test test/"}}"#,
    );
    // `npm test -- test/a.test.js` ran test/ as well; `node --test` alone lost the setup.
    let (code, v) = run_tests(&env, &repo, &["--target", "test/a.test.js"], &[]);
    assert_eq!((code, v["runner"].as_str(), v["status"].as_str()), (0, Some("node"), Some("passed")), "{v}");
    assert_eq!((v["passed"].as_u64(), v["failed"].as_u64()), (Some(1), Some(0)), "{v}");
    // docdex's reporter (naming a test that hangs) goes beside TAP.
    let line = v["command"][2].as_str().unwrap_or_default();
    assert_eq!((v["command"][0].as_str(), v["command"][1].as_str()), (Some("sh"), Some("-c")), "{v}");
    assert!(line.starts_with("FROM_ENV=1 node --require ./setup.js --test --test-reporter=tap "), "{line}");
    assert!(line.contains("/reporters/node.mjs") && line.ends_with(" test/a.test.js"), "{line}");
    // The whole suite runs the script's own paths.
    let (code, v) = run_tests(&env, &repo, &[], &[]);
    assert_eq!((code, v["passed"].as_u64(), v["failed"].as_u64()), (0, Some(2), Some(0)), "{v}");
}

#[test]
fn a_mocha_script_without_mocha_installed_is_a_missing_runner() {
    let env = Env::new();
    let repo = env.repo("nomocha");
    write(
        &repo,
        "package.json",
        r#"{"name": "m", "version": "1.0.0", "scripts": {"test": "mocha --recursive test/"}}"#,
    );
    write(&repo, "test/a.spec.js", "it('a', () => {});\n");
    // docdex runs `npx --no-install mocha`, which npx refuses: bad input naming mocha, not a failed suite.
    let (code, v) = run_tests(&env, &repo, &["--target", "test/a.spec.js"], &[]);
    assert_eq!(code, 2, "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("the test runner mocha is not installed"), "{msg}");
}

#[test]
fn a_run_that_collected_tests_and_ran_none_is_no_tests() {
    let Some(venv) = pytest_venv() else { return };
    let env = Env::new();
    let repo = env.repo("collect");
    write(&repo, "pyproject.toml", "[project]\nname = \"c\"\nversion = \"0.1.0\"\n");
    write(&repo, "tests/test_a.py", "def test_a():\n    pass\n\n\ndef test_b():\n    assert False\n");
    let python = venv.join("bin/python");
    // `[tests] command` collecting only: it was `passed` ("the output gave no test counts").
    set_command(&env, &format!("{} -m pytest --collect-only -q -p no:cacheprovider {{targets}}", python.display()));
    let (code, v) = run_tests(&env, &repo, &[], &[]);
    assert_eq!((code, v["status"].as_str(), v["exit_code"].as_u64()), (5, Some("no_tests"), Some(0)), "{v}");
    let notes = v["notes"].to_string();
    assert!(notes.contains("pytest collected 2 tests and ran none"), "{notes}");
    let (code, v) = run_tests(&env, &repo, &["--target", "tests/test_a.py"], &[]);
    assert_eq!((code, v["status"].as_str()), (5, Some("no_tests")), "{v}");
    // pytest as the detected runner, its addopts collecting only.
    std::fs::remove_file(env.home().join("config.toml")).unwrap();
    write(&repo, "pytest.ini", "[pytest]\naddopts = --co\n");
    std::os::unix::fs::symlink(&venv, repo.join(".venv")).unwrap();
    let (code, v) = run_tests(&env, &repo, &[], &[]);
    assert_eq!((code, v["runner"].as_str(), v["status"].as_str()), (5, Some("pytest"), Some("no_tests")), "{v}");
    assert_eq!((v["passed"].as_u64(), v["failed"].as_u64()), (Some(0), Some(0)), "{v}");
}
