//! `docdex run-tests` on JavaScript projects with the real runners: mocha, jest and vitest from
//! the npm registry (`.ci/run` installs them into a cache and exports its `node_modules` as
//! DOCDEX_TEST_NODE_MODULES, which each fixture links in; without it the tests say they skipped,
//! and fail under CI), and node's own test runner. A failing mocha test has its message and its
//! line in the test file, as do jest's and vitest's; a test that hangs is named when the timeout
//! kills the run.

use crate::util::{installed_tool, run_failures as failures, run_tests_json as run_tests, write, Env};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The `node_modules` holding mocha, jest and vitest, if any (under CI it must exist).
fn node_modules() -> Option<PathBuf> {
    installed_tool("DOCDEX_TEST_NODE_MODULES", "the mocha, jest and vitest runs")
}

/// A package whose test script is `script`, its files, and the runners' `node_modules` linked in.
fn project(env: &Env, name: &str, script: &str, files: &[(&str, &str)], modules: Option<&Path>) -> PathBuf {
    let repo = env.repo(name);
    let package = serde_json::json!({"name": name, "version": "1.0.0", "scripts": {"test": script}});
    write(&repo, "package.json", package.to_string());
    for (path, text) in files {
        write(&repo, path, text);
    }
    if let Some(m) = modules {
        std::os::unix::fs::symlink(m, repo.join("node_modules")).unwrap();
    }
    repo
}

/// Runs with a short timeout (`secs`) a project whose suite hangs, and returns the result. jest
/// and vitest get 45 s: at 20 s, vitest on a 2-core machine busy with the rest of the suite
/// once named no hung test (it passes alone in 21 s).
fn run_hung(env: &Env, repo: &Path, secs: &str) -> Value {
    let started = std::time::Instant::now();
    let (code, v) = run_tests(env, repo, &["--timeout", secs], &[]);
    assert!(started.elapsed().as_secs() < 120, "killed at the timeout");
    assert_eq!((code, v["status"].as_str()), (1, Some("timed_out")), "{v}");
    v
}

const MOCHA_TESTS: &str = "const assert = require('node:assert');\nconst { check } = require('./helper');\n\ndescribe('math', () => {\n  it('adds', () => {\n    assert.strictEqual(1 + 2, 3);\n  });\n  it('breaks', () => {\n    assert.strictEqual(1 + 1, 3);\n  });\n  it('checks', () => {\n    check(2);\n  });\n  it.skip('later', () => {});\n});\n";

#[test]
fn mocha_failures_have_their_message_and_line_and_a_hung_test_is_named() {
    let Some(modules) = node_modules() else { return };
    let env = Env::new();
    let helper = "const assert = require('node:assert');\nexports.check = (n) => {\n  assert.ok(n === 1, 'n should be one');\n};\n";
    let files = [("test/math.spec.js", MOCHA_TESTS), ("test/helper.js", helper)];
    let repo = project(&env, "mocha", "mocha --reporter spec 'test/**/*.spec.js'", &files, Some(&modules));
    let (code, v) = run_tests(&env, &repo, &[], &[]);
    assert_eq!((code, v["runner"].as_str(), v["status"].as_str()), (1, Some("npm"), Some("failed")), "{v}");
    let counts = (v["passed"].as_u64(), v["failed"].as_u64(), v["skipped"].as_u64());
    assert_eq!(counts, (Some(1), Some(2), Some(1)), "{v}");
    // They had no message and no place: mocha's TAP gives a stack, no location.
    let file = Some("test/math.spec.js".to_string());
    assert_eq!(
        failures(&v),
        [
            (
                "math breaks".to_string(),
                file.clone(),
                Some(9),
                Some("Expected values to be strictly equal: 2 !== 3".to_string())
            ),
            (
                "math checks".to_string(),
                file,
                Some(12),
                Some("n should be one (asserted at test/helper.js:3)".to_string())
            ),
        ],
        "{v}"
    );

    // Timeouts off, as a suite waiting on a server may have them: the hung test is named, and
    // one blocking the event loop is too (mocha's TAP printed neither).
    let hang = "describe('slow', function () {\n  this.timeout(0);\n  it('quick', () => {});\n  it('waits forever', () => new Promise(() => {}));\n});\n";
    let repo = project(&env, "mochahang", "mocha", &[("test/hang.spec.js", hang)], Some(&modules));
    let v = run_hung(&env, &repo, "4");
    assert_eq!(v["passed"].as_u64(), Some(1), "{v}");
    let named = failures(&v);
    assert_eq!(
        named,
        [(
            "slow waits forever".to_string(),
            Some("test/hang.spec.js".to_string()),
            None,
            Some("timed out after 4 s while running slow waits forever".to_string())
        )],
        "{v}"
    );
    write(&repo, "test/hang.spec.js", "it('spins', () => {\n  for (;;) {}\n});\n");
    let v = run_hung(&env, &repo, "4");
    assert_eq!(failures(&v)[0].0, "spins", "{v}");
}

#[test]
fn node_names_the_subtest_that_hangs_and_a_file_hanging_outside_its_tests() {
    let env = Env::new();
    let hang = "const test = require('node:test');\ntest('quick', () => {});\ntest('outer', async (t) => {\n  await t.test('inner ok', () => {});\n  await t.test('inner hangs', () => new Promise(() => setInterval(() => {}, 1000)));\n});\n";
    let repo = project(&env, "nodehang", "node --test", &[("test/hang.test.js", hang)], None);
    let v = run_hung(&env, &repo, "4");
    // node's TAP prints a test once it ends: docdex's reporter beside it names the one running.
    assert_eq!(
        failures(&v),
        [(
            "inner hangs".to_string(),
            Some("test/hang.test.js".to_string()),
            None,
            Some("timed out after 4 s while running inner hangs (test/hang.test.js:5)".to_string())
        )],
        "{v}"
    );
    // Its TAP is read as before: the tests that ended counted; the reporter's lines are not shown.
    assert_eq!(v["passed"].as_u64(), Some(2), "{v}");
    let tail = v["output_tail"].as_str().unwrap();
    assert!(tail.contains("ok 1 - inner ok") && !tail.contains("# docdex:"), "{tail}");
    let top = "const test = require('node:test');\ntest('fine', () => {});\nsetInterval(() => {}, 1000);\n";
    write(&repo, "test/hang.test.js", top);
    let v = run_hung(&env, &repo, "4");
    let named = failures(&v);
    assert_eq!(named.len(), 1, "{v}");
    assert_eq!((named[0].0.as_str(), named[0].1.as_deref()), ("test/hang.test.js", Some("test/hang.test.js")), "{v}");
    let message = named[0].3.as_deref().unwrap();
    assert!(message.starts_with("timed out after 4 s while running in test/hang.test.js, the test unknown ("), "{v}");
}

#[test]
fn jest_runs_counts_failures_and_names_the_test_that_hangs() {
    let Some(modules) = node_modules() else { return };
    let env = Env::new();
    let tests = "describe('math', () => {\n  test('adds', () => {\n    expect(1 + 2).toBe(3);\n  });\n  test('breaks', () => {\n    expect(1 + 1).toBe(3);\n  });\n});\n";
    let repo = project(&env, "jest", "jest", &[("test/math.test.js", tests)], Some(&modules));
    let (code, v) = run_tests(&env, &repo, &[], &[]);
    assert_eq!((code, v["runner"].as_str(), v["status"].as_str()), (1, Some("jest"), Some("failed")), "{v}");
    assert_eq!((v["passed"].as_u64(), v["failed"].as_u64()), (Some(1), Some(1)), "{v}");
    // Named only before: now its message and its line in the test file too.
    let f = &failures(&v)[0];
    assert_eq!((f.0.as_str(), f.1.as_deref(), f.2), ("math › breaks", Some("test/math.test.js"), Some(6)), "{v}");
    assert!(f.3.as_deref().unwrap().starts_with("expect(received).toBe(expected)"), "{v}");
    // A test given more time than the run: jest's own timeout never strikes first.
    let hang = "test('quick', () => {});\ntest('waits forever', () => new Promise(() => {}), 10 * 60 * 1000);\n";
    write(&repo, "test/math.test.js", hang);
    let v = run_hung(&env, &repo, "45");
    let named = failures(&v);
    assert_eq!(
        (named[0].0.as_str(), named[0].1.as_deref(), named[0].3.as_deref()),
        ("waits forever", Some("test/math.test.js"), Some("timed out after 45 s while running waits forever")),
        "{v}"
    );
}

#[test]
fn jest_in_band_names_a_test_blocking_the_event_loop() {
    let Some(modules) = node_modules() else { return };
    let env = Env::new();
    // Several files in band: jest's default reporter buffers stdout, flushed on a 100 ms timer a
    // test spinning on the event loop never lets fire, so this named no test; docdex's reporter
    // now writes its lines past that buffer.
    let spin = "test('quick', () => {});\ntest('spins', () => {\n  while (true) {}\n});\n";
    let files = [("test/a.test.js", "test('a one', () => {});\n"), ("test/spin.test.js", spin)];
    let repo = project(&env, "jestband", "jest --runInBand", &files, Some(&modules));
    let v = run_hung(&env, &repo, "30");
    assert_eq!(
        failures(&v),
        [(
            "spins".to_string(),
            Some("test/spin.test.js".to_string()),
            None,
            Some("timed out after 30 s while running spins".to_string())
        )],
        "{v}"
    );
}

#[test]
fn vitest_names_a_test_blocking_the_event_loop_or_only_its_file() {
    let Some(modules) = node_modules() else { return };
    let env = Env::new();
    // vitest's worker sends a test's start in throttled batches, on a timer a spinning test never
    // lets fire: the test is named only when its start went out at once; otherwise its file is,
    // saying the test is unknown, never another test's name.
    let spin = "import { test } from 'vitest';\ntest('quick', () => {});\ntest('spins', () => {\n  for (;;) {}\n});\n";
    let files = [
        ("test/a.test.mjs", "import { test } from 'vitest';\ntest('a one', () => {});\n"),
        ("test/spin.test.mjs", spin),
    ];
    let repo = project(&env, "vitestspin", "vitest", &files, Some(&modules));
    let v = run_hung(&env, &repo, "30");
    let named = failures(&v);
    assert_eq!(named.len(), 1, "{v}");
    let (name, file, _, message) = &named[0];
    let message = message.as_deref().unwrap_or_default();
    assert_eq!(file.as_deref(), Some("test/spin.test.mjs"), "{v}");
    let by_file = name == "test/spin.test.mjs"
        && message.starts_with("timed out after 30 s while running in test/spin.test.mjs, the test unknown (");
    assert!(name == "spins" || by_file, "{v}");
}

#[test]
fn vitest_runs_counts_failures_and_names_the_test_that_hangs() {
    let Some(modules) = node_modules() else { return };
    let env = Env::new();
    let tests = "import { describe, test, expect } from 'vitest';\ndescribe('math', () => {\n  test('adds', () => {\n    expect(1 + 2).toBe(3);\n  });\n  test('breaks', () => {\n    expect(1 + 1).toBe(3);\n  });\n});\n";
    let repo = project(&env, "vitest", "vitest", &[("test/math.test.mjs", tests)], Some(&modules));
    let (code, v) = run_tests(&env, &repo, &[], &[]);
    assert_eq!((code, v["runner"].as_str(), v["status"].as_str()), (1, Some("vitest"), Some("failed")), "{v}");
    assert_eq!((v["passed"].as_u64(), v["failed"].as_u64()), (Some(1), Some(1)), "{v}");
    let f = &failures(&v)[0];
    assert_eq!((f.0.as_str(), f.1.as_deref(), f.2), ("math > breaks", Some("test/math.test.mjs"), Some(7)), "{v}");
    assert!(f.3.as_deref().unwrap().starts_with("AssertionError: expected 2 to be 3"), "{v}");
    let hang = "import { test } from 'vitest';\ntest('quick', () => {});\ntest('waits forever', () => new Promise(() => {}), 10 * 60 * 1000);\n";
    write(&repo, "test/math.test.mjs", hang);
    let v = run_hung(&env, &repo, "45");
    let named = failures(&v);
    // vitest's worker sends test starts throttled, and vitest 3.2.7 drops the deferred send when
    // its timer fires exactly 100 ms after the last one: a test that starts right after the last
    // one sent may hang unreported, and then its file is named, the test unknown (both seen).
    let by_file = named[0].0 == "test/math.test.mjs"
        && named[0].3.as_deref().is_some_and(|m| m.contains("in test/math.test.mjs, the test unknown ("));
    assert!(named[0].0 == "waits forever" || by_file, "{v}");
    assert_eq!(named[0].1.as_deref(), Some("test/math.test.mjs"), "{v}");
}
