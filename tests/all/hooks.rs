//! The semantic gatekeeper: `Engine::hook_validate` on a real indexed fixture, and the whole
//! path through a real `git commit` with the installed hook against a real running server
//! (pass, fail, no server -> fail-open).

use crate::server_util::Server;
use crate::util::{dead_url, eventually, quiet, write, Env, Watcher};
use docdex::engine::protocol::{HookStatus, HookValidateRequest, StagedFile};
use docdex::engine::IndexOptions;
use docdex::Engine;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A TypeScript repository: `a -> b`, `c -> a`; no cycle, no `any`, no moment.
fn fixture(root: &Path) {
    write(root, "package.json", r#"{"name": "fixture", "dependencies": {"moment": "2.30.0"}}"#);
    write(root, "src/a.ts", "import { b } from './b';\n\nexport const a = (): number => b() + 1;\n");
    write(root, "src/b.ts", "export const b = (): number => 41;\n");
    write(root, "src/c.ts", "import { a } from './a';\n\nexport const c = (): number => a();\n");
}

/// A config whose model server and default server address are dead ports.
fn config(env: &Env) {
    let server = dead_url().trim_start_matches("http://").to_string();
    env.write_config(&format!(
        "[llm]\nbase_url = \"{}\"\nrequest_timeout_secs = 2\n\n[server]\nhttp_bind_addr = \"{server}\"\n",
        dead_url()
    ));
}

/// The fixture (with `extra` files written over it) in `env`, configured and indexed.
fn indexed_fixture(env: &Env, extra: &[(&str, &str)]) -> (PathBuf, Engine) {
    config(env);
    let repo = env.repo("fixture");
    fixture(&repo);
    for (path, text) in extra {
        write(&repo, path, text);
    }
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &quiet()).unwrap();
    (repo, engine)
}

/// `docdex profile add --agent team --category constraint ARGS`, which must succeed.
fn add_constraint(env: &Env, args: &[&str]) -> Output {
    let mut all = vec!["profile", "add", "--agent", "team", "--category", "constraint"];
    all.extend_from_slice(args);
    let out = env.run(&all);
    assert!(out.status.success(), "{}", text(&out));
    out
}

fn staged(path: &str, content: &str) -> StagedFile {
    StagedFile { path: path.into(), content: Some(content.into()), deleted: false }
}

const CYCLE_B: &str = "import { c } from './c';\n\nexport const b = (): number => c() + 41;\n";
const MOMENT_D: &str = "import moment from 'moment';\n\nexport const now = (): string => moment().format();\n";
const ANY_E: &str =
    "export function parse(input: string): number {\n  const raw: any = JSON.parse(input);\n  return raw.n;\n}\n";

#[test]
fn gatekeeper_checks_staged_content_against_the_cached_graph_and_every_rule() {
    let env = Env::new();
    let (repo, engine) = indexed_fixture(&env, &[]);
    // "Deprecate usage of moment.js" is recognised as `forbid-import moment` without a model.
    let added = add_constraint(&env, &["--json", "Deprecate usage of moment.js"]);
    let added: serde_json::Value = serde_json::from_slice(&added.stdout).expect("JSON");
    assert_eq!(added["preference"]["rule"], "forbid-import moment", "{added}");

    // Clean staged content passes; the factory rules (cycles, TypeScript any) and the new one are checked.
    let clean = engine
        .hook_validate(
            &repo,
            &HookValidateRequest {
                agent_id: None,
                files: vec![staged("src/b.ts", "export const b = (): number => 42;\n")],
            },
        )
        .unwrap();
    assert_eq!(clean.status, HookStatus::Pass, "{clean:?}");
    assert_eq!(clean.checked_files, 1);
    let rules: Vec<&str> = clean.rules.iter().map(|r| r.rule.as_str()).collect();
    for r in ["no-import-cycles", "forbid-import moment", "forbid-node typescript predefined_type any"] {
        assert!(rules.contains(&r), "{r} not checked: {rules:?}");
    }
    assert!(!clean.advice_only.is_empty(), "constraints without a rule are listed as advice");

    // The staged b.ts closes a cycle with the committed a.ts and c.ts (from the cached graph);
    // d.ts imports moment; e.ts uses `any`.
    let req = HookValidateRequest {
        agent_id: None,
        files: vec![staged("src/b.ts", CYCLE_B), staged("src/d.ts", MOMENT_D), staged("src/e.ts", ANY_E)],
    };
    let bad = engine.hook_validate(&repo, &req).unwrap();
    assert_eq!(bad.status, HookStatus::Fail);
    let found: Vec<(&str, &str, u32)> =
        bad.violations.iter().map(|v| (v.rule.as_str(), v.file.as_str(), v.line)).collect();
    assert!(found.contains(&("no-import-cycles", "src/b.ts", 1)), "{found:?}");
    assert!(found.contains(&("forbid-import moment", "src/d.ts", 1)), "{found:?}");
    assert!(found.contains(&("forbid-node typescript predefined_type any", "src/e.ts", 2)), "{found:?}");
    assert_eq!(found.len(), 3, "exactly the three violations: {found:?}");
    let cycle = bad.violations.iter().find(|v| v.rule == "no-import-cycles").unwrap();
    assert!(cycle.message.contains("src/a.ts") && cycle.message.contains("src/c.ts"), "{}", cycle.message);
    let moment = bad.violations.iter().find(|v| v.rule == "forbid-import moment").unwrap();
    assert_eq!(moment.agent_id, "team");
    assert_eq!(moment.preference, "Deprecate usage of moment.js");

    // Deleting c.ts in the same commit breaks the cycle.
    let mut req = req;
    req.files = vec![staged("src/b.ts", CYCLE_B), StagedFile { path: "src/c.ts".into(), content: None, deleted: true }];
    let broken = engine.hook_validate(&repo, &req).unwrap();
    assert_eq!(broken.status, HookStatus::Pass, "{:?}", broken.violations);

    // Naming an agent narrows the rules to its own and the team's.
    let frontend = engine
        .hook_validate(
            &repo,
            &HookValidateRequest { agent_id: Some("mcoda_frontend".into()), files: vec![staged("src/b.ts", CYCLE_B)] },
        )
        .unwrap();
    assert!(frontend.rules.iter().all(|r| r.agent_id == "mcoda_frontend" || r.agent_id == "team"));
    assert!(frontend.violations.iter().all(|v| v.rule != "no-import-cycles"), "{:?}", frontend.violations);

    // Paths that leave the repository are refused; an unknown agent is named.
    let outside = engine.hook_validate(
        &repo,
        &HookValidateRequest { agent_id: None, files: vec![staged("../escape.ts", "let x: any = 1;\n")] },
    );
    assert!(outside.unwrap_err().to_string().contains("inside the repository"));
    let nobody = engine.hook_validate(
        &repo,
        &HookValidateRequest { agent_id: Some("nobody".into()), files: vec![staged("src/b.ts", CYCLE_B)] },
    );
    assert!(nobody.unwrap_err().to_string().contains("nobody"));
}

#[test]
fn rule_marks_flag_cycles_and_forbidden_imports_for_the_risk_overlay() {
    let env = Env::new();
    let (repo, engine) = indexed_fixture(&env, &[("src/b.ts", CYCLE_B), ("src/d.ts", MOMENT_D)]);
    add_constraint(&env, &["Deprecate usage of moment.js"]);
    let files: Vec<String> = ["src/a.ts", "src/b.ts", "src/c.ts", "src/d.ts"].iter().map(|s| s.to_string()).collect();
    let marks = engine.rule_marks(&repo, None, &files).unwrap();
    let got: Vec<(&str, &str, bool)> = marks.iter().map(|m| (m.file.as_str(), m.rule.as_str(), m.danger)).collect();
    assert_eq!(
        got,
        vec![
            ("src/a.ts", "no-import-cycles", true),
            ("src/b.ts", "no-import-cycles", true),
            ("src/c.ts", "no-import-cycles", true),
            ("src/d.ts", "forbid-import moment", false),
        ]
    );
    assert_eq!(marks[3].preference, "Deprecate usage of moment.js");
    // The frontend persona has no cycle rule: only the team's ban on moment applies.
    let front = engine.rule_marks(&repo, Some("mcoda_frontend"), &files).unwrap();
    assert_eq!(front.iter().map(|m| m.rule.as_str()).collect::<Vec<_>>(), vec!["forbid-import moment"]);
}

#[test]
fn max_lines_and_require_test_for_rules_are_checked() {
    let env = Env::new();
    let (repo, engine) = indexed_fixture(
        &env,
        &[
            ("src/api/users.ts", "export const users = [];\n"),
            ("src/api/users.test.ts", "import { users } from './users';\n"),
        ],
    );
    for rule in ["max-lines 3 src/**", "require-test-for src/api/**"] {
        add_constraint(&env, &["--rule", rule, "Keep it tidy"]);
    }
    let req = HookValidateRequest {
        agent_id: Some("team".into()),
        files: vec![
            staged("src/api/users.ts", "export const users = [];\n"),
            staged("src/api/orders.ts", "export const orders = [];\n"),
            staged("src/long.ts", "1;\n2;\n3;\n4;\n"),
        ],
    };
    let r = engine.hook_validate(&repo, &req).unwrap();
    let found: Vec<(&str, &str, u32)> =
        r.violations.iter().map(|v| (v.rule.as_str(), v.file.as_str(), v.line)).collect();
    assert_eq!(
        found,
        vec![("require-test-for src/api/**", "src/api/orders.ts", 1), ("max-lines 3 src/**", "src/long.ts", 4)],
        "users.ts has its test; orders.ts has none; long.ts has 4 lines"
    );
}

/// A staged path that is a symbolic link to a file outside the repository is not read (the
/// gatekeeper never follows links); the answer passes with nothing checked, so its notice must
/// name the file and say why (it said only "Too many levels of symbolic links (os error 40)").
#[cfg(unix)]
#[test]
fn a_staged_symlink_out_of_the_repository_is_named_as_not_checked_and_why() {
    let env = Env::new();
    let (repo, engine) = indexed_fixture(&env, &[]);
    let outside = env.repo("elsewhere");
    write(&outside, "secret.ts", "const raw: any = 1;\n");
    std::os::unix::fs::symlink(outside.join("secret.ts"), repo.join("src/link.ts")).unwrap();
    let req = HookValidateRequest {
        agent_id: None,
        files: vec![StagedFile { path: "src/link.ts".into(), content: None, deleted: false }],
    };
    let r = engine.hook_validate(&repo, &req).unwrap();
    assert_eq!((r.status, r.checked_files), (HookStatus::Pass, 0), "{r:?}");
    assert!(
        r.notices.iter().any(|n| n.starts_with("src/link.ts is a symbolic link") && n.contains("not checked")),
        "{:?}",
        r.notices
    );
}

/// The gatekeeper keeps the repository's file set per index generation; a re-index (a full
/// run or a watcher batch) must be seen by the next request: a new test file satisfies
/// `require-test-for`, a new file closes a cycle through an import that did not resolve
/// before, a deleted one is missed again, a new rule applies at once.
#[test]
fn gatekeeper_file_set_cache_follows_reindexing_the_watcher_and_rule_changes() {
    let env = Env::new();
    let (repo, engine) = indexed_fixture(&env, &[("src/api/orders.ts", "export const orders = [];\n")]);
    add_constraint(&env, &["--rule", "require-test-for src/api/**", "Test the API"]);
    // Both staged paths are indexed files: the cached file set serves the request as it is.
    let b_imports_g = "import { g } from './g';\n\nexport const b = (): number => g() + 41;\n";
    let req = HookValidateRequest {
        agent_id: None,
        files: vec![staged("src/api/orders.ts", "export const orders = [];\n"), staged("src/b.ts", b_imports_g)],
    };
    let rules_of = |r: &docdex::engine::protocol::HookValidateResponse| -> Vec<(String, String)> {
        r.violations.iter().map(|v| (v.rule.clone(), v.file.clone())).collect()
    };
    let need_test = ("require-test-for src/api/**".to_string(), "src/api/orders.ts".to_string());
    let cycle = ("no-import-cycles".to_string(), "src/b.ts".to_string());
    for _ in 0..2 {
        let r = engine.hook_validate(&repo, &req).unwrap();
        assert_eq!(rules_of(&r), vec![need_test.clone()], "no test for orders.ts; ./g does not exist yet: {r:?}");
    }

    // A full re-index adds the test and a g.ts that imports b.ts back.
    write(&repo, "src/api/orders.test.ts", "import { orders } from './orders';\n");
    write(&repo, "src/g.ts", "import { b } from './b';\n\nexport const g = (): number => b();\n");
    engine.index(&repo, &IndexOptions::default(), &quiet()).unwrap();
    let r = engine.hook_validate(&repo, &req).unwrap();
    assert_eq!(rules_of(&r), vec![cycle.clone()], "the test is seen and b -> g -> b closes: {r:?}");
    let on_cycle = r.violations.iter().find(|v| v.rule == "no-import-cycles").unwrap();
    assert!(on_cycle.message.contains("src/g.ts"), "{}", on_cycle.message);

    // The watcher's batches rewrite the index too: deleting the test brings the violation back.
    let watcher = Watcher::start(&engine, &repo);
    std::fs::remove_file(repo.join("src/api/orders.test.ts")).unwrap();
    eventually("the deleted test seen by the gatekeeper", || {
        let r = engine.hook_validate(&repo, &req).unwrap();
        rules_of(&r).contains(&need_test)
    });
    watcher.stop();

    // A new rule applies to the next request.
    add_constraint(&env, &["--rule", "max-lines 2 src/**", "Short files"]);
    let r = engine.hook_validate(&repo, &req).unwrap();
    assert!(
        rules_of(&r).contains(&("max-lines 2 src/**".to_string(), "src/b.ts".to_string())),
        "b.ts has 3 lines: {r:?}"
    );
}

fn git(repo: &Path, args: &[&str], env: &Env, extra: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new("git");
    cmd.current_dir(repo)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .env("DOCDEX_HOME", env.home())
        .env("NO_COLOR", "1")
        .env_remove("DOCDEX_URL")
        .env_remove("DOCDEX_AUTH_TOKEN");
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd.output().expect("run git")
}

fn commits(repo: &Path, env: &Env) -> usize {
    let out = git(repo, &["rev-list", "--count", "HEAD"], env, &[]);
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// The configured `fixture` repository, a git repository with one commit of it all.
fn committed_fixture(env: &Env) -> PathBuf {
    config(env);
    let repo = env.repo("fixture");
    fixture(&repo);
    assert!(git(&repo, &["init", "-q", "-b", "main"], env, &[]).status.success());
    assert!(git(&repo, &["add", "-A"], env, &[]).status.success());
    assert!(git(&repo, &["commit", "-q", "-m", "start"], env, &[]).status.success());
    repo
}

#[test]
fn installed_hook_gates_a_real_git_commit_and_fails_open_when_no_server_answers() {
    let env = Env::new();
    let repo = committed_fixture(&env);
    let out = env.run(&["index", "--repo", repo.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    add_constraint(&env, &["Deprecate usage of moment.js"]);

    // An existing hook is kept and still runs first.
    let hooks = repo.join(".git/hooks");
    write(&hooks, "pre-commit", "#!/bin/sh\necho ran >> \"$(git rev-parse --git-dir)/kept.log\"\n");
    set_exec(&hooks.join("pre-commit"));
    let out = env.run(&["hook", "install", "--repo", repo.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(hooks.join("pre-commit.before-docdex").exists());
    assert!(std::fs::read_to_string(hooks.join("pre-commit")).unwrap().contains("hook pre-commit"));

    // A real serve on its own port; DOCDEX_URL tells the hook where.
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let url = format!("http://{}", server.addr);
    let with_server = [("DOCDEX_URL", url.as_str())];

    // Pass: a clean change is committed.
    write(&repo, "src/b.ts", "export const b = (): number => 42;\n");
    git(&repo, &["add", "-A"], &env, &[]);
    let out = git(&repo, &["commit", "-m", "clean"], &env, &with_server);
    assert!(out.status.success(), "clean commit refused: {}", text(&out));
    assert!(text(&out).contains("pass"), "{}", text(&out));
    assert_eq!(commits(&repo, &env), 2);

    // Fail: a cycle, a forbidden import and an `any`; the commit is refused with each named.
    write(&repo, "src/b.ts", CYCLE_B);
    write(&repo, "src/d.ts", MOMENT_D);
    write(&repo, "src/e.ts", ANY_E);
    git(&repo, &["add", "-A"], &env, &[]);
    let out = git(&repo, &["commit", "-m", "bad"], &env, &with_server);
    let said = text(&out);
    assert!(!out.status.success(), "bad commit accepted: {said}");
    assert_eq!(commits(&repo, &env), 2, "nothing was committed");
    for needle in [
        "commit refused: 3 violations",
        "src/b.ts:1  import cycle",
        "src/d.ts:1  imports the package moment",
        "src/e.ts:2  `any` (predefined_type)",
        "Deprecate usage of moment.js",
    ] {
        assert!(said.contains(needle), "missing {needle:?} in: {said}");
    }

    // The server goes away: the same commit goes through, with the warning.
    drop(server);
    let out = git(&repo, &["commit", "-m", "while docdex is down"], &env, &with_server);
    let said = text(&out);
    assert!(out.status.success(), "fail-open did not let the commit through: {said}");
    assert!(said.contains("docdex daemon not found; skipping semantic checks"), "{said}");
    assert_eq!(commits(&repo, &env), 3);
    // Without DOCDEX_URL the hook tries daemon.lock and the configured (dead) address.
    write(&repo, "src/f.ts", "export const f: any = 1;\n");
    git(&repo, &["add", "-A"], &env, &[]);
    let out = git(&repo, &["commit", "-m", "no server configured"], &env, &[]);
    assert!(out.status.success() && text(&out).contains("skipping semantic checks"), "{}", text(&out));

    // The kept hook ran before each commit; uninstall puts it back.
    let ran = std::fs::read_to_string(repo.join(".git/kept.log")).unwrap();
    assert_eq!(ran.lines().count(), 4, "{ran}");
    let out = env.run(&["hook", "uninstall", "--repo", repo.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!hooks.join("pre-commit.before-docdex").exists());
    assert!(std::fs::read_to_string(hooks.join("pre-commit")).unwrap().contains("kept.log"));
}

#[test]
fn installing_outside_a_git_repository_is_a_usage_error_that_says_what_to_do() {
    let env = Env::new();
    let plain = env.repo("plain");
    // GIT_CEILING_DIRECTORIES: a temporary directory inside some checkout is still not one.
    let ceiling = env.dir.path().to_str().unwrap();
    for args in [vec!["hook", "install", "--repo", plain.to_str().unwrap()], vec!["hook", "install"]] {
        let out = Command::new(env!("CARGO_BIN_EXE_docdex"))
            .args(&args)
            .current_dir(&plain)
            .env("DOCDEX_HOME", env.home())
            .env("GIT_CEILING_DIRECTORIES", ceiling)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        let err = text(&out);
        assert!(err.contains("not a git repository") && err.contains("pass --repo"), "{err}");
        assert!(!err.contains("rev-parse"), "git's own words stay out: {err}");
    }
    let out = env.run(&["hook", "install", "--repo", env.dir.path().join("nowhere").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    // A bare repository: git's "must be run in a work tree" and exit 1 before.
    let bare = env.repo("bare.git");
    assert!(git(&bare, &["init", "-q", "--bare"], &env, &[]).status.success());
    let out = env.run(&["hook", "install", "--repo", bare.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("is a bare repository") && text(&out).contains("in a clone"), "{}", text(&out));
}

#[test]
fn the_daemon_is_found_through_its_lock_file() {
    let env = Env::new();
    config(&env);
    let repo = env.repo("fixture");
    fixture(&repo);
    assert!(git(&repo, &["init", "-q", "-b", "main"], &env, &[]).status.success());
    let out = env.run(&["index", "--repo", repo.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let out = env.run(&["hook", "install", "--repo", repo.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let _daemon = Server::start(&env, &["daemon"], &[]);
    write(&repo, "src/e.ts", ANY_E);
    git(&repo, &["add", "-A"], &env, &[]);
    let out = git(&repo, &["commit", "-m", "any"], &env, &[]);
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("src/e.ts:2"), "{said}");
}

#[cfg(unix)]
fn set_exec(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn install_keeps_a_linked_hook_and_refuses_to_replace_a_versioned_one() {
    let env = Env::new();
    let repo = env.repo("linked");
    assert!(git(&repo, &["init", "-q", "-b", "main"], &env, &[]).status.success());
    write(&repo, "README.md", "x\n");
    git(&repo, &["add", "-A"], &env, &[]);
    assert!(git(&repo, &["commit", "-q", "-m", "start"], &env, &[]).status.success());
    // A hook linked to a script not checked out yet: install wrote docdex's script through
    // the link, into the work tree.
    let hooks = repo.join(".git/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    std::os::unix::fs::symlink("../../scripts/pre-commit", hooks.join("pre-commit")).unwrap();
    let out = env.run(&["hook", "install", "--repo", repo.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!repo.join("scripts/pre-commit").exists(), "written through the link");
    assert!(hooks.join("pre-commit").symlink_metadata().unwrap().is_file());
    let kept = hooks.join("pre-commit.before-docdex");
    assert!(kept.symlink_metadata().unwrap().file_type().is_symlink(), "the link is kept");
    let out = env.run(&["hook", "uninstall", "--repo", repo.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(hooks.join("pre-commit").symlink_metadata().unwrap().file_type().is_symlink(), "the link is back");

    // core.hooksPath into the repository, with the hook committed: not renamed, exit 2.
    let shared = "#!/bin/sh\necho team hook\n";
    write(&repo, ".githooks/pre-commit", shared);
    set_exec(&repo.join(".githooks/pre-commit"));
    git(&repo, &["add", "-A"], &env, &[]);
    assert!(git(&repo, &["commit", "-q", "-m", "hooks"], &env, &[]).status.success());
    git(&repo, &["config", "core.hooksPath", ".githooks"], &env, &[]);
    let out = env.run(&["hook", "install", "--repo", repo.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("is tracked by git"), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(repo.join(".githooks/pre-commit")).unwrap(), shared);
    assert!(!repo.join(".githooks/pre-commit.before-docdex").exists());
}

/// husky 9.1.7's `husky` file (MIT, typicode), copied verbatim to `.husky/_/h`: each hook
/// there sources it, and it runs `.husky/<the hook's name>` with `sh -e`.
const HUSKY9_H: &str = r#"#!/usr/bin/env sh
[ "$HUSKY" = "2" ] && set -x
n=$(basename "$0")
s=$(dirname "$(dirname "$0")")/$n

[ ! -f "$s" ] && exit 0

if [ -f "$HOME/.huskyrc" ]; then
	echo "husky - '~/.huskyrc' is DEPRECATED, please move your code to ~/.config/husky/init.sh"
fi
i="${XDG_CONFIG_HOME:-$HOME/.config}/husky/init.sh"
[ -f "$i" ] && . "$i"

[ "${HUSKY-}" = "0" ] && exit 0

export PATH="node_modules/.bin:$PATH"
sh -e "$s" "$@"
c=$?

[ $c != 0 ] && echo "husky - $n script failed (code $c)"
[ $c = 127 ] && echo "husky - command not found in PATH=$PATH"
exit $c
"#;

/// husky 8.0.3's `husky.sh` (MIT, typicode), copied verbatim to `.husky/_/husky.sh`: a user
/// hook sources it first, and it runs the hook again with `sh -e`.
const HUSKY8_SH: &str = r#"#!/usr/bin/env sh
if [ -z "$husky_skip_init" ]; then
  debug () {
    if [ "$HUSKY_DEBUG" = "1" ]; then
      echo "husky (debug) - $1"
    fi
  }

  readonly hook_name="$(basename -- "$0")"
  debug "starting $hook_name..."

  if [ "$HUSKY" = "0" ]; then
    debug "HUSKY env variable is set to 0, skipping hook"
    exit 0
  fi

  if [ -f ~/.huskyrc ]; then
    debug "sourcing ~/.huskyrc"
    . ~/.huskyrc
  fi

  readonly husky_skip_init=1
  export husky_skip_init
  sh -e "$0" "$@"
  exitCode="$?"

  if [ $exitCode != 0 ]; then
    echo "husky - $hook_name hook exited with code $exitCode (error)"
  fi

  if [ $exitCode = 127 ]; then
    echo "husky - command not found in PATH=$PATH"
  fi

  exit $exitCode
fi
"#;

/// Writes `text` as fs.writeFileSync(path, text, {mode}) does: the mode applies to a file it
/// creates; an existing file keeps its own.
fn write_file_sync(path: &Path, text: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    let existed = path.exists();
    std::fs::write(path, text).unwrap();
    if !existed {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

/// What husky 9.1.7's `husky` (the `prepare` script) does, step by step as its index.js:
/// core.hooksPath `.husky/_`, then `_/` rewritten: `.gitignore`, `h`, a stub per hook.
fn husky9_prepare(repo: &Path, env: &Env) {
    assert!(git(repo, &["config", "core.hooksPath", ".husky/_"], env, &[]).status.success());
    let d = repo.join(".husky/_");
    let _ = std::fs::remove_file(d.join("husky.sh"));
    std::fs::create_dir_all(&d).unwrap();
    write_file_sync(&d.join(".gitignore"), "*", 0o644);
    std::fs::write(d.join("h"), HUSKY9_H).unwrap();
    for hook in [
        "pre-commit",
        "pre-merge-commit",
        "prepare-commit-msg",
        "commit-msg",
        "post-commit",
        "applypatch-msg",
        "pre-applypatch",
        "post-applypatch",
        "pre-rebase",
        "post-rewrite",
        "post-checkout",
        "post-merge",
        "pre-push",
        "pre-auto-gc",
    ] {
        write_file_sync(&d.join(hook), "#!/usr/bin/env sh\n. \"$(dirname \"$0\")/h\"", 0o755);
    }
    write_file_sync(&d.join("husky.sh"), "echo \"husky - DEPRECATED\"", 0o644);
}

/// What husky 8.0.3's `husky install` does: `_/.gitignore` and `_/husky.sh` rewritten, then
/// core.hooksPath `.husky` (the user's hooks are the ones git runs).
fn husky8_install(repo: &Path, env: &Env) {
    let d = repo.join(".husky/_");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join(".gitignore"), "*").unwrap();
    std::fs::write(d.join("husky.sh"), HUSKY8_SH).unwrap();
    assert!(git(repo, &["config", "core.hooksPath", ".husky"], env, &[]).status.success());
}

/// A repository whose committed `.husky/pre-commit` is `user_hook`, with husky set up by
/// `prepare`.
fn husky_repo(env: &Env, name: &str, user_hook: &str, prepare: fn(&Path, &Env)) -> PathBuf {
    let repo = env.repo(name);
    assert!(git(&repo, &["init", "-q", "-b", "main"], env, &[]).status.success());
    write(&repo, "package.json", r#"{"name": "x", "scripts": {"prepare": "husky"}}"#);
    write(&repo, ".husky/pre-commit", user_hook);
    set_exec(&repo.join(".husky/pre-commit"));
    prepare(&repo, env);
    git(&repo, &["add", "-A"], env, &[]);
    assert!(git(&repo, &["commit", "-q", "--no-verify", "-m", "start"], env, &[]).status.success());
    repo
}

#[test]
fn husky_9_rerunning_its_prepare_step_keeps_docdex_check_in_the_users_hook() {
    let env = Env::new();
    let user_hook = "echo ran >> .git/husky.log\n[ ! -f block ]\n";
    let repo = husky_repo(&env, "husky9", user_hook, husky9_prepare);
    // What an install before this one left in .husky/_ once `husky` rewrote the hook there.
    write(&repo, ".husky/_/pre-commit.before-docdex", "#!/usr/bin/env sh\n. \"$(dirname \"$0\")/h\"");
    let out = env.run(&["hook", "install", "--repo", repo.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains(".husky/pre-commit") && text(&out).contains("is tracked by git"), "{}", text(&out));
    assert!(!repo.join(".husky/_/pre-commit.before-docdex").exists());
    // `npm install` runs `prepare` again: .husky/_ is rewritten, core.hooksPath set again.
    // docdex's hook used to be .husky/_/pre-commit, and was gone from here on.
    husky9_prepare(&repo, &env);
    let dead = dead_url();
    let no_server = [("DOCDEX_URL", dead.as_str())];
    write(&repo, "a.txt", "a\n");
    git(&repo, &["add", "a.txt"], &env, &[]);
    let out = git(&repo, &["commit", "-q", "-m", "one"], &env, &no_server);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("skipping semantic checks"), "docdex's check did not run: {}", text(&out));
    let log = std::fs::read_to_string(repo.join(".git/husky.log")).unwrap_or_default();
    assert_eq!(log.lines().count(), 1, "the user's husky hook did not run: {}", text(&out));
    // The user's commands run first, and their failure still refuses the commit.
    write(&repo, "block", "");
    git(&repo, &["add", "block"], &env, &[]);
    let out = git(&repo, &["commit", "-q", "-m", "two"], &env, &no_server);
    assert!(!out.status.success(), "{}", text(&out));
    assert_eq!(commits(&repo, &env), 2);
    // Installing again replaces the block; uninstall leaves the user's hook as it was.
    let out = env.run(&["hook", "install", "--repo", repo.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let hook = std::fs::read_to_string(repo.join(".husky/pre-commit")).unwrap();
    assert_eq!(hook.matches("# docdex-managed-hook begin").count(), 1, "{hook}");
    let out = env.run(&["hook", "uninstall", "--repo", repo.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(repo.join(".husky/pre-commit")).unwrap(), user_hook);
    let status = git(&repo, &["status", "--porcelain", "--", ".husky"], &env, &[]);
    assert_eq!(text(&status), "", "uninstall left a change");
}

#[test]
fn husky_8_rerunning_husky_install_keeps_docdex_check_and_a_created_hook_goes_with_uninstall() {
    let env = Env::new();
    // `husky add .husky/pre-commit CMD`'s format: git runs this file itself.
    let user_hook = "#!/usr/bin/env sh\n. \"$(dirname -- \"$0\")/_/husky.sh\"\n\necho ran >> .git/husky.log\n";
    let repo = husky_repo(&env, "husky8", user_hook, husky8_install);
    // It was refused (exit 2): the tracked .husky/pre-commit is the hook git runs.
    let out = env.run(&["hook", "install", "--repo", repo.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    husky8_install(&repo, &env);
    write(&repo, "a.txt", "a\n");
    git(&repo, &["add", "a.txt"], &env, &[]);
    let dead = dead_url();
    let out = git(&repo, &["commit", "-q", "-m", "one"], &env, &[("DOCDEX_URL", dead.as_str())]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("skipping semantic checks"), "docdex's check did not run: {}", text(&out));
    let log = std::fs::read_to_string(repo.join(".git/husky.log")).unwrap_or_default();
    assert_eq!(log.lines().count(), 1, "the user's husky hook did not run once: {}", text(&out));
    let out = env.run(&["hook", "uninstall", "--repo", repo.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(repo.join(".husky/pre-commit")).unwrap(), user_hook);

    // No user hook yet: docdex creates one, which git can run, and uninstall removes it.
    git(&repo, &["rm", "-q", "--cached", ".husky/pre-commit"], &env, &[]);
    std::fs::remove_file(repo.join(".husky/pre-commit")).unwrap();
    let out = env.run(&["hook", "install", "--repo", repo.to_str().unwrap()]);
    assert!(out.status.success() && !text(&out).contains("tracked"), "{}", text(&out));
    let out = git(&repo, &["commit", "-q", "-m", "two"], &env, &[("DOCDEX_URL", dead.as_str())]);
    assert!(text(&out).contains("skipping semantic checks"), "{}", text(&out));
    let out = env.run(&["hook", "uninstall", "--repo", repo.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!repo.join(".husky/pre-commit").exists());
}

#[test]
fn a_kept_sh_hook_with_options_on_its_shebang_keeps_them() {
    let env = Env::new();
    let repo = env.repo("sh-e");
    assert!(git(&repo, &["init", "-q", "-b", "main"], &env, &[]).status.success());
    // `-e` makes the first failing command fail the hook; sourced, the option was lost.
    let hooks = repo.join(".git/hooks");
    write(&hooks, "pre-commit", "#!/bin/sh -e\nfalse\necho passed-anyway >> \"$(git rev-parse --git-dir)/sh-e.log\"\n");
    set_exec(&hooks.join("pre-commit"));
    let out = env.run(&["hook", "install", "--repo", repo.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    write(&repo, "a.txt", "a\n");
    git(&repo, &["add", "-A"], &env, &[]);
    let dead = dead_url();
    let out = git(&repo, &["commit", "-q", "-m", "one"], &env, &[("DOCDEX_URL", dead.as_str())]);
    assert!(!out.status.success(), "the kept hook's `false` under -e did not refuse: {}", text(&out));
    assert!(!repo.join(".git/sh-e.log").exists());
}

#[test]
fn installing_into_a_hooks_path_shared_by_other_repositories_says_so() {
    let env = Env::new();
    let repo = env.repo("one");
    assert!(git(&repo, &["init", "-q", "-b", "main"], &env, &[]).status.success());
    let out = env.run(&["hook", "install", "--repo", repo.to_str().unwrap()]);
    assert!(out.status.success() && !text(&out).contains("every repository"), "{}", text(&out));
    // A core.hooksPath outside the repository (as `git config --global` sets it).
    let shared = env.repo("shared-hooks");
    git(&repo, &["config", "core.hooksPath", shared.to_str().unwrap()], &env, &[]);
    let out = env.run(&["hook", "install", "--repo", repo.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(shared.join("pre-commit").is_file());
    assert!(text(&out).contains("the hook applies to every repository that uses it"), "{}", text(&out));
}

#[test]
fn the_committed_husky_block_names_no_machine_path_and_runs_in_a_teammates_clone() {
    let env = Env::new();
    let repo = husky_repo(&env, "team", "echo ran >> .git/husky.log\n", husky9_prepare);
    let home = env.home();
    let out = env.run(&["--home", home.to_str().unwrap(), "hook", "install", "--repo", repo.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    // .husky/pre-commit is committed: it named this machine's binary (and --home), which a
    // teammate's clone does not have.
    let hook = std::fs::read_to_string(repo.join(".husky/pre-commit")).unwrap();
    let exe = env!("CARGO_BIN_EXE_docdex");
    assert!(!hook.contains(exe) && !hook.contains(env.dir.path().to_str().unwrap()), "{hook}");
    let config = |repo: &Path, key: &str| text(&git(repo, &["config", "--get", key], &env, &[])).trim().to_string();
    assert_eq!(config(&repo, "docdex.path"), exe, "the installing clone's fallback");
    assert_eq!(config(&repo, "docdex.home"), home.to_str().unwrap());
    git(&repo, &["add", ".husky/pre-commit"], &env, &[]);
    assert!(git(&repo, &["commit", "-q", "--no-verify", "-m", "docdex check"], &env, &[]).status.success());
    let dead = dead_url();
    let bare_path = "/usr/local/bin:/usr/bin:/bin";
    assert!(!Path::new("/usr/local/bin/docdex").exists() && !Path::new("/usr/bin/docdex").exists());

    // Here, docdex off PATH: the clone's own docdex.path runs the check.
    write(&repo, "a.txt", "a\n");
    git(&repo, &["add", "a.txt"], &env, &[]);
    let out = git(&repo, &["commit", "-q", "-m", "here"], &env, &[("DOCDEX_URL", &dead), ("PATH", bare_path)]);
    assert!(out.status.success() && text(&out).contains("skipping semantic checks"), "{}", text(&out));

    // A teammate's clone: no docdex anywhere, so the commit goes through and says why.
    let clone = env.dir.path().join("teammate");
    let out = git(env.dir.path(), &["clone", "-q", repo.to_str().unwrap(), clone.to_str().unwrap()], &env, &[]);
    assert!(out.status.success(), "{}", text(&out));
    husky9_prepare(&clone, &env);
    write(&clone, "b.txt", "b\n");
    git(&clone, &["add", "b.txt"], &env, &[]);
    let out = git(&clone, &["commit", "-q", "-m", "no docdex"], &env, &[("DOCDEX_URL", &dead), ("PATH", bare_path)]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("docdex: not on PATH, so the team's semantic checks were skipped"), "{}", text(&out));
    // The teammate's docdex on PATH runs it.
    let bin = env.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(exe, bin.join("docdex")).unwrap();
    let with_docdex = format!("{}:{bare_path}", bin.display());
    write(&clone, "c.txt", "c\n");
    git(&clone, &["add", "c.txt"], &env, &[]);
    let out = git(&clone, &["commit", "-q", "-m", "docdex"], &env, &[("DOCDEX_URL", &dead), ("PATH", &with_docdex)]);
    assert!(out.status.success() && text(&out).contains("docdex daemon not found"), "{}", text(&out));
    assert_eq!(commits(&clone, &env), 5);

    // Uninstall takes the clone's settings with the block.
    assert!(env.run(&["hook", "uninstall", "--repo", repo.to_str().unwrap()]).status.success());
    assert_eq!(config(&repo, "docdex.path"), "");
}

#[test]
fn a_repository_or_staged_file_whose_name_is_not_utf8_is_handled_and_named() {
    use std::os::unix::ffi::OsStrExt;
    let env = Env::new();
    // The hook installs in a clone under a directory whose name is Latin-1: git's path came
    // back as `caf\u{fffd}`, and install said "not a directory: pass --repo".
    let latin = env.dir.path().join(std::ffi::OsStr::from_bytes(b"caf\xe9"));
    std::fs::create_dir_all(&latin).unwrap();
    assert!(git(&latin, &["init", "-q", "-b", "main"], &env, &[]).status.success());
    let out = Command::new(env!("CARGO_BIN_EXE_docdex"))
        .args(["hook", "install", "--repo"])
        .arg(&latin)
        .env("DOCDEX_HOME", env.home())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(latin.join(".git/hooks/pre-commit").is_file());

    // A staged file named in Latin-1 was dropped from the check in silence.
    let repo = committed_fixture(&env);
    assert!(env.run(&["index", "--repo", repo.to_str().unwrap()]).status.success());
    assert!(env.run(&["hook", "install", "--repo", repo.to_str().unwrap()]).status.success());
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let url = format!("http://{}", server.addr);
    std::fs::write(repo.join(std::ffi::OsStr::from_bytes(b"src/caf\xe9.ts")), "export const c: any = 1;\n").unwrap();
    write(&repo, "src/b.ts", "export const b = (): number => 42;\n");
    git(&repo, &["add", "-A"], &env, &[]);
    // --json carries it among the answer's notices.
    let (_, v) = pre_commit_json(&env, &repo, &url);
    assert!(v["notices"][0].as_str().unwrap().starts_with("src/caf\u{fffd}.ts: not checked"), "{v}");
    let out = git(&repo, &["commit", "-m", "latin"], &env, &[("DOCDEX_URL", &url)]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("src/caf\u{fffd}.ts: not checked (its name is not valid UTF-8"), "{}", text(&out));
}

/// `docdex hook pre-commit --json` run as git runs it, in `repo` against the server at `url`:
/// its output and its one JSON object.
fn pre_commit_json(env: &Env, repo: &Path, url: &str) -> (Output, serde_json::Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_docdex"))
        .args(["hook", "pre-commit", "--json"])
        .current_dir(repo)
        .env("DOCDEX_HOME", env.home())
        .env("DOCDEX_URL", url)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    (out, v)
}

/// A staged file whose content is not UTF-8 (Latin-1, as the index reads it), binary or over
/// 2 MiB was dropped by the hook in silence: a Latin-1 TypeScript file holding `any` passed
/// the gatekeeper, with nothing said. Now it is checked as the index reads it, and a binary or
/// oversized one is named among the notices.
#[test]
fn staged_latin1_content_is_checked_and_binary_or_oversized_files_are_named() {
    let env = Env::new();
    let repo = committed_fixture(&env);
    assert!(env.run(&["index", "--repo", repo.to_str().unwrap()]).status.success());
    add_constraint(&env, &["No any types"]);
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let url = format!("http://{}", server.addr);
    write(&repo, "src/latin.ts", b"// caf\xe9\nexport const c: any = 1;\n");
    write(&repo, "src/blob.ts", b"export const d: any = 1;\n\0\x01");
    write(&repo, "src/huge.ts", "export const e = 1;\n".repeat(120_000));
    git(&repo, &["add", "-A"], &env, &[]);
    let (out, v) = pre_commit_json(&env, &repo, &url);
    assert_eq!(out.status.code(), Some(1), "{v}");
    assert_eq!(
        (v["status"].as_str(), v["violations"][0]["file"].as_str()),
        (Some("fail"), Some("src/latin.ts")),
        "{v}"
    );
    assert_eq!(v["violations"][0]["line"], 2, "{v}");
    let notices = v["notices"].to_string();
    assert!(notices.contains("src/blob.ts is binary"), "{notices}");
    assert!(notices.contains("src/huge.ts is larger than 2 MiB; not checked"), "{notices}");
}

/// `pre-commit` outside a repository told to "pass --repo", which it does not take; a
/// malformed `--url` or `DOCDEX_URL` failed open with reqwest's "builder error", so a typo
/// turned the gatekeeper off. It is a misconfiguration: exit 2, saying what to give.
#[test]
fn pre_commit_outside_git_or_with_a_malformed_url_says_what_to_fix() {
    let env = Env::new();
    let outside = env.dir.path().join("plain");
    std::fs::create_dir_all(&outside).unwrap();
    let out = pre_commit_with(&env, &outside, &dead_url(), &["--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    let reason = v["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("git runs this hook in the repository it commits to"), "{v}");
    assert!(!reason.contains("--repo"), "pre-commit takes no --repo: {v}");

    let repo = env.repo("urls");
    assert!(git(&repo, &["init", "-q", "-b", "main"], &env, &[]).status.success());
    write(&repo, "a.txt", "a\n");
    git(&repo, &["add", "a.txt"], &env, &[]);
    let out = pre_commit_with(&env, &repo, "localhost:3210", &["--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    assert_eq!((out.status.code(), v["status"].as_str()), (Some(2), Some("refused")), "{v}");
    assert!(v["reason"].as_str().unwrap().contains("DOCDEX_URL \"localhost:3210\" is not a server address"), "{v}");
    let out = pre_commit_with(&env, &repo, &dead_url(), &["--url", "htp//127.0.0.1:1"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--url \"htp//127.0.0.1:1\" is not a server address"), "{}", text(&out));
    // A well-formed address where nothing listens is downtime: the commit goes on.
    let out = pre_commit_with(&env, &repo, &dead_url(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn pre_commit_json_answers_one_object_even_without_a_verdict() {
    let env = Env::new();
    let repo = env.repo("json");
    assert!(git(&repo, &["init", "-q", "-b", "main"], &env, &[]).status.success());
    let dead = dead_url();
    let run = || {
        let out = Command::new(env!("CARGO_BIN_EXE_docdex"))
            .args(["hook", "pre-commit", "--json"])
            .current_dir(&repo)
            .env("DOCDEX_HOME", env.home())
            .env("DOCDEX_URL", &dead)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        // stdout was empty: `docdex hook pre-commit --json | jq .status` printed nothing.
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("not one JSON object ({e}): {:?}", String::from_utf8_lossy(&out.stdout)));
        v
    };
    let v = run();
    assert_eq!((v["status"].as_str(), v["reason"].as_str()), (Some("skipped"), Some("no staged file to check")));
    write(&repo, "a.txt", "a\n");
    git(&repo, &["add", "a.txt"], &env, &[]);
    let v = run();
    assert_eq!(v["status"], "skipped", "{v}");
    assert!(v["reason"].as_str().unwrap().contains("nothing answers at"), "{v}");
}

#[test]
fn a_husky_hook_ending_in_exit_or_exec_still_runs_docdex_check() {
    // Appended after `exit 0` (or `exec npx lint-staged`), docdex's block never ran: the
    // check was off with nothing said.
    for (name, user_hook) in
        [("exit", "echo ran >> .git/husky.log\nexit 0\n"), ("exec", "exec sh -c 'echo ran >> .git/husky.log'\n")]
    {
        let env = Env::new();
        let repo = husky_repo(&env, name, user_hook, husky9_prepare);
        let out = env.run(&["hook", "install", "--repo", repo.to_str().unwrap()]);
        assert!(out.status.success(), "{}", text(&out));
        let dead = dead_url();
        write(&repo, "a.txt", "a\n");
        git(&repo, &["add", "a.txt"], &env, &[]);
        let out = git(&repo, &["commit", "-q", "-m", "one"], &env, &[("DOCDEX_URL", dead.as_str())]);
        assert!(out.status.success(), "{name}: {}", text(&out));
        assert!(text(&out).contains("skipping semantic checks"), "{name}: docdex's check did not run: {}", text(&out));
        let log = std::fs::read_to_string(repo.join(".git/husky.log")).unwrap_or_default();
        assert_eq!(log.lines().count(), 1, "{name}: the user's command did not run: {}", text(&out));
        assert!(env.run(&["hook", "uninstall", "--repo", repo.to_str().unwrap()]).status.success());
        assert_eq!(std::fs::read_to_string(repo.join(".husky/pre-commit")).unwrap(), user_hook, "{name}");
    }
}

#[test]
fn a_hook_in_a_hooks_directory_in_the_work_tree_names_no_machine_path() {
    // `core.hooksPath .githooks`: the hook is the team's file to commit, and named this
    // machine's binary and home as the husky block did.
    let env = Env::new();
    let repo = env.repo("githooks");
    assert!(git(&repo, &["init", "-q", "-b", "main"], &env, &[]).status.success());
    assert!(git(&repo, &["config", "core.hooksPath", ".githooks"], &env, &[]).status.success());
    let home = env.home();
    let out = env.run(&["--home", home.to_str().unwrap(), "hook", "install", "--repo", repo.to_str().unwrap()]);
    assert!(out.status.success() && text(&out).contains("is in the work tree: commit it"), "{}", text(&out));
    let hook = std::fs::read_to_string(repo.join(".githooks/pre-commit")).unwrap();
    assert!(!hook.contains(env!("CARGO_BIN_EXE_docdex")) && !hook.contains(env.dir.path().to_str().unwrap()), "{hook}");
    let dead = dead_url();
    let bare_path = "/usr/local/bin:/usr/bin:/bin";
    // Here, off PATH: this clone's git config docdex.path runs it.
    write(&repo, "a.txt", "a\n");
    git(&repo, &["add", "-A"], &env, &[]);
    let out = git(&repo, &["commit", "-q", "-m", "one"], &env, &[("DOCDEX_URL", &dead), ("PATH", bare_path)]);
    assert!(out.status.success() && text(&out).contains("docdex daemon not found"), "{}", text(&out));
    // A clone without docdex: the commit goes through, saying why the check was skipped.
    let clone = env.dir.path().join("clone");
    git(env.dir.path(), &["clone", "-q", repo.to_str().unwrap(), clone.to_str().unwrap()], &env, &[]);
    assert!(git(&clone, &["config", "core.hooksPath", ".githooks"], &env, &[]).status.success());
    write(&clone, "b.txt", "b\n");
    git(&clone, &["add", "b.txt"], &env, &[]);
    let out = git(&clone, &["commit", "-q", "-m", "two"], &env, &[("DOCDEX_URL", &dead), ("PATH", bare_path)]);
    assert!(out.status.success() && text(&out).contains("docdex: not on PATH"), "{}", text(&out));
    assert!(env.run(&["hook", "uninstall", "--repo", repo.to_str().unwrap()]).status.success());
    assert_eq!(text(&git(&repo, &["config", "--get", "docdex.path"], &env, &[])), "");
}

/// Runs `docdex hook pre-commit` in `repo` against `url`, with `vars` set.
fn pre_commit_against(env: &Env, repo: &Path, url: &str, vars: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_docdex"));
    cmd.args(["hook", "pre-commit"])
        .current_dir(repo)
        .env("DOCDEX_HOME", env.home())
        .env("DOCDEX_URL", url)
        .env("NO_COLOR", "1")
        .env_remove("DOCDEX_AUTH_TOKEN");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

#[test]
fn a_server_that_answers_without_a_verdict_is_not_called_a_missing_daemon() {
    // A running docdex answering an error was reported as "docdex daemon not found", sending
    // the user to start a daemon that was running. An error answer still fails open.
    use crate::web_support::{Fixture, Reply};
    let site = Fixture::start("127.0.0.1", |_, _, _| {
        let mut r = Reply::html(r#"{"error": {"code": "internal", "message": "the symbol store is busy"}}"#);
        r.content_type = "application/json";
        r.status(500)
    });
    let env = Env::new();
    let repo = env.repo("token");
    assert!(git(&repo, &["init", "-q", "-b", "main"], &env, &[]).status.success());
    write(&repo, "a.txt", "a\n");
    git(&repo, &["add", "a.txt"], &env, &[]);
    let out = pre_commit_against(&env, &repo, &site.url(""), &[]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(!said.contains("daemon not found"), "{said}");
    assert!(said.contains("docdex gave no verdict; skipping semantic checks"), "{said}");
    assert!(said.contains("500") && said.contains("the symbol store is busy"), "{said}");
}

#[test]
fn a_server_refusing_the_hooks_token_refuses_the_commit_and_says_how_to_pass_it() {
    // `docdex serve --auth-token T` and no DOCDEX_AUTH_TOKEN where git runs the hook: the 401
    // was a warning and exit 0, so a token misconfiguration turned the gatekeeper off unseen.
    use crate::web_support::{Fixture, Reply};
    for (status, code) in [(401u16, "unauthorized"), (403, "forbidden")] {
        let site = Fixture::start("127.0.0.1", move |_, _, _| {
            let mut r =
                Reply::html(format!(r#"{{"error": {{"code": "{code}", "message": "a bearer token is required"}}}}"#));
            r.content_type = "application/json";
            r.status(status)
        });
        let env = Env::new();
        let repo = env.repo("token");
        assert!(git(&repo, &["init", "-q", "-b", "main"], &env, &[]).status.success());
        write(&repo, "a.txt", "a\n");
        git(&repo, &["add", "a.txt"], &env, &[]);
        let out = pre_commit_against(&env, &repo, &site.url(""), &[]);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{status}: {said}");
        assert!(!said.contains("skipping"), "{said}");
        assert!(said.contains(&status.to_string()) && said.contains("the hook sent none"), "{said}");
        assert!(said.contains("DOCDEX_AUTH_TOKEN") && said.contains("git commit --no-verify"), "{said}");
        // A token sent and refused is named as the wrong one; --json says refused.
        let out = pre_commit_against(&env, &repo, &site.url(""), &[("DOCDEX_AUTH_TOKEN", "wrong")]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(text(&out).contains("is not the server's --auth-token"), "{}", text(&out));
        let out = Command::new(env!("CARGO_BIN_EXE_docdex"))
            .args(["hook", "pre-commit", "--json", "--url", &site.url("")])
            .current_dir(&repo)
            .env("DOCDEX_HOME", env.home())
            .env_remove("DOCDEX_AUTH_TOKEN")
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
        assert_eq!((out.status.code(), v["status"].as_str()), (Some(2), Some("refused")), "{v}");
    }
}

/// `docdex hook pre-commit ARGS` in `repo` against `url`.
fn pre_commit_with(env: &Env, repo: &Path, url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_docdex"))
        .args(["hook", "pre-commit"])
        .args(args)
        .current_dir(repo)
        .env("DOCDEX_HOME", env.home())
        .env("DOCDEX_URL", url)
        .env("NO_COLOR", "1")
        .env_remove("DOCDEX_AUTH_TOKEN")
        .output()
        .unwrap()
}

#[test]
fn a_mistyped_agent_is_refused_at_install_and_at_commit_instead_of_turning_the_check_off() {
    // `hook install --agent nosuch` succeeded without a word, and `hook pre-commit --agent
    // pyjsn` (pyjson mistyped) warned "no verdict" and exited 0: every commit went through
    // unchecked while the right name refused it. A broken docdex still fails open.
    let env = Env::new();
    config(&env);
    let repo = env.repo("typo");
    assert!(git(&repo, &["init", "-q", "-b", "main"], &env, &[]).status.success());
    let out = env.run(&[
        "profile",
        "add",
        "--agent",
        "pyjson",
        "--category",
        "constraint",
        "--rule",
        "max-lines 3",
        "Keep modules short",
    ]);
    assert!(out.status.success(), "{}", text(&out));

    let out = env.run(&["hook", "install", "--repo", repo.to_str().unwrap(), "--agent", "pyjsn"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("no agent \"pyjsn\"") && said.contains("did you mean pyjson?"), "{said}");
    assert!(!repo.join(".git/hooks/pre-commit").exists(), "nothing installed: {said}");
    let out = env.run(&["hook", "install", "--repo", repo.to_str().unwrap(), "--agent", "bad agent!"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = env.run(&["hook", "install", "--repo", repo.to_str().unwrap(), "--agent", "pyjson"]);
    assert!(out.status.success(), "{}", text(&out));

    write(&repo, "big.py", "a = 1\nb = 2\nc = 3\nd = 4\n");
    git(&repo, &["add", "big.py"], &env, &[]);
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let url = format!("http://{}", server.addr);
    // The right name: refused, and the banner names whose rule it is (it said "the team's").
    let out = pre_commit_with(&env, &repo, &url, &["--agent", "pyjson"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("commit refused: 1 violation of pyjson's constraints"), "{said}");
    // The typo: exit 2, naming the agent meant; never "skipping semantic checks".
    let out = pre_commit_with(&env, &repo, &url, &["--agent", "pyjsn"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(!said.contains("skipping"), "{said}");
    assert!(said.contains("no agent \"pyjsn\"") && said.contains("did you mean pyjson?"), "{said}");
    assert!(said.contains("--agent") && said.contains("git commit --no-verify"), "{said}");
    let out = pre_commit_with(&env, &repo, &url, &["--agent", "pyjsn", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!((out.status.code(), v["status"].as_str()), (Some(2), Some("refused")), "{v}");
    drop(server);

    // The hook reads the code, not the words: `unknown_agent` refuses whatever the message says.
    use crate::web_support::{Fixture, Reply};
    let site = Fixture::start("127.0.0.1", |_, _, _| {
        let mut r = Reply::html(r#"{"error": {"code": "unknown_agent", "message": "agent pyjsn is unknown"}}"#);
        r.content_type = "application/json";
        r.status(404)
    });
    let out = pre_commit_with(&env, &repo, &site.url(""), &["--agent", "pyjsn"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("agent pyjsn is unknown") && !said.contains("skipping"), "{said}");
    drop(site);
    // A docdex that answers 404 for another reason (no such endpoint) is no verdict: fail open.
    let site = Fixture::start("127.0.0.1", |_, _, _| {
        let mut r =
            Reply::html(r#"{"error": {"code": "not_found", "message": "no endpoint POST /v1/hooks/validate"}}"#);
        r.content_type = "application/json";
        r.status(404)
    });
    let out = pre_commit_with(&env, &repo, &site.url(""), &["--agent", "pyjsn"]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("docdex gave no verdict; skipping semantic checks"), "{said}");
}

#[test]
fn a_violation_two_preferences_share_is_credited_to_the_earliest() {
    // Two of an agent's preferences carry `max-lines 2`: the one violation was credited to
    // whichever the store read first (the newest), another one after any edit.
    let env = Env::new();
    config(&env);
    let repo = env.repo("credit");
    write(&repo, "a.py", "a = 1\nb = 2\nc = 3\n");
    let engine = env.engine();
    let add = |words: &str| {
        let out = env.run(&[
            "profile",
            "add",
            "--agent",
            "pyjson",
            "--category",
            "constraint",
            "--rule",
            "max-lines 2",
            words,
            "--json",
        ]);
        assert!(out.status.success(), "{}", text(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["preference"]["id"].as_str().unwrap().to_string()
    };
    let first = add("Keep modules short");
    std::thread::sleep(std::time::Duration::from_millis(5));
    let second = add("Split long files");
    let req =
        HookValidateRequest { files: vec![staged("a.py", "a = 1\nb = 2\nc = 3\n")], agent_id: Some("pyjson".into()) };
    for _ in 0..3 {
        let r = engine.hook_validate(&repo, &req).unwrap();
        let credited: Vec<&str> = r.violations.iter().map(|v| v.preference_id.as_str()).collect();
        assert_eq!(credited, vec![first.as_str()], "not {second}: {r:?}");
    }
}

const UTIL_RS: &str =
    "pub fn two() -> u8 {\n    2\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn two_is_two() {\n        assert_eq!(super::two(), 2);\n    }\n}\n";
const HELPERS_GO: &str = "package gopkg\n\nfunc Double(x int) int { return x * 2 }\n";

/// `require-test-for` and `docdex impact --file F --tests` give one answer to "is F tested?"
/// (tour13 F16): a Rust file holding its own `#[cfg(test)]` tests and a Go file tested by
/// another `_test.go` of its package pass, as impact lists tests for them; a Rust file without
/// tests, a Go file alone in its package, and a staged edit that removes a file's own tests
/// stay refused. The gate reads the staged content: a new unit-tested file passes unindexed.
#[test]
fn require_test_for_agrees_with_impact_tests_on_rust_inline_tests_and_go_package_tests() {
    let env = Env::new();
    config(&env);
    let repo = env.repo("rsh");
    write(&repo, "Cargo.toml", "[package]\nname = \"rsh\"\nversion = \"0.1.0\"\nedition = \"2021\"\n");
    write(&repo, "src/lib.rs", "pub mod plain;\npub mod util;\n");
    write(&repo, "src/util.rs", UTIL_RS);
    write(&repo, "src/plain.rs", "pub fn one() -> u8 {\n    1\n}\n");
    write(&repo, "go.mod", "module example.com/rsh\n\ngo 1.21\n");
    write(&repo, "gopkg/helpers.go", HELPERS_GO);
    write(&repo, "gopkg/pkg_test.go", "package gopkg\n\nimport \"testing\"\n\nfunc TestDouble(t *testing.T) {\n\tif Double(2) != 4 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n");
    write(&repo, "lonely/lonely.go", "package lonely\n\nfunc One() int { return 1 }\n");
    assert!(git(&repo, &["init", "-q", "-b", "main"], &env, &[]).status.success());
    git(&repo, &["add", "-A"], &env, &[]);
    assert!(git(&repo, &["commit", "-q", "-m", "start"], &env, &[]).status.success());
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &quiet()).unwrap();
    for rule in ["require-test-for src/**", "require-test-for gopkg/**", "require-test-for lonely/**"] {
        add_constraint(&env, &["--rule", rule, "Every source file needs tests"]);
    }
    let refused = |files: Vec<StagedFile>| -> Vec<String> {
        let r = engine.hook_validate(&repo, &HookValidateRequest { agent_id: Some("team".into()), files }).unwrap();
        r.violations.iter().filter(|v| v.rule.starts_with("require-test-for")).map(|v| v.file.clone()).collect()
    };
    let tested_by_impact = |file: &str| -> bool {
        let req = docdex::engine::protocol::TestsRequest { file: file.into(), ..Default::default() };
        engine.impact_tests(&repo, &req).unwrap().total > 0
    };

    // Edits of indexed files: the gate refuses exactly the files impact finds no test for.
    let edits = vec![
        staged("src/util.rs", &UTIL_RS.replace("2\n}\n\n", "1 + 1\n}\n\n")),
        staged("src/plain.rs", "pub fn one() -> u8 {\n    2 - 1\n}\n"),
        staged("gopkg/helpers.go", &HELPERS_GO.replace("x * 2", "x + x")),
        staged("lonely/lonely.go", "package lonely\n\nfunc One() int { return 2 - 1 }\n"),
    ];
    let paths: Vec<String> = edits.iter().map(|f| f.path.clone()).collect();
    let got = refused(edits);
    assert_eq!(got, vec!["lonely/lonely.go".to_string(), "src/plain.rs".to_string()]);
    for p in &paths {
        assert_eq!(tested_by_impact(p), !got.contains(p), "the gate and impact --tests disagree on {p}");
    }
    let r = engine
        .hook_validate(
            &repo,
            &HookValidateRequest { agent_id: None, files: vec![staged("src/plain.rs", "pub fn one() -> u8 { 1 }\n")] },
        )
        .unwrap();
    let v = r.violations.iter().find(|v| v.file == "src/plain.rs").expect("plain.rs refused");
    assert!(v.message.contains("docdex impact --file src/plain.rs --tests"), "{}", v.message);

    // The staged content decides: an edit that drops util.rs's own tests is refused, a new
    // file with its own tests (not indexed yet, the tour's case) and a new Go file of the
    // tested package pass.
    assert_eq!(refused(vec![staged("src/util.rs", "pub fn two() -> u8 {\n    2\n}\n")]), vec!["src/util.rs"]);
    let new_files = vec![
        staged("src/fresh.rs", UTIL_RS),
        staged("gopkg/more.go", "package gopkg\n\nfunc Triple(x int) int { return x * 3 }\n"),
    ];
    assert_eq!(refused(new_files), Vec::<String>::new());
    // Deleting the package's only test in the same commit leaves helpers.go untested.
    let gone = vec![
        staged("gopkg/helpers.go", HELPERS_GO),
        StagedFile { path: "gopkg/pkg_test.go".into(), content: None, deleted: true },
    ];
    assert_eq!(refused(gone), vec!["gopkg/helpers.go"]);
}

/// tour35 F8: `hook uninstall` deleted a docdex hook the user had added a line to, without a
/// word. The script ends with a digest of itself: an edited hook is kept (uninstall and a
/// second install refuse, naming it) unless --force.
#[test]
fn an_edited_hook_is_not_removed_or_replaced_without_force() {
    let env = Env::new();
    let repo = env.repo("r");
    git(&repo, &["init", "-q"], &env, &[]);
    let r = repo.to_str().unwrap();
    let hook = repo.join(".git/hooks/pre-commit");
    // Unedited: uninstall removes it, as before.
    assert!(env.run(&["hook", "install", "--repo", r]).status.success());
    let out = env.run(&["hook", "uninstall", "--repo", r]);
    assert!(out.status.success() && !hook.exists(), "{}", text(&out));
    // Edited: kept.
    assert!(env.run(&["hook", "install", "--repo", r]).status.success());
    let script = std::fs::read_to_string(&hook).unwrap();
    std::fs::write(&hook, script.replacen("\n", "\necho my lint step\n", 1)).unwrap();
    for args in [&["hook", "uninstall", "--repo", r][..], &["hook", "install", "--repo", r][..]] {
        let out = env.run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out));
        assert!(
            text(&out).contains("was edited since docdex installed it") && text(&out).contains("--force"),
            "{}",
            text(&out)
        );
        assert!(std::fs::read_to_string(&hook).unwrap().contains("my lint step"));
    }
    let out = env.run(&["hook", "uninstall", "--repo", r, "--force"]);
    assert!(out.status.success() && !hook.exists(), "{}", text(&out));
}

/// tour35 F9: installed through a link (`/usr/local/bin/docdex` to a versioned install), the
/// hook named the link's target, so an upgrade that moved it left the hook on the old binary.
/// It names the docdex the user ran.
#[test]
fn a_hook_installed_through_a_link_names_the_link() {
    let env = Env::new();
    let repo = env.repo("r");
    git(&repo, &["init", "-q"], &env, &[]);
    let link = env.dir.path().join("bin/docdex");
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_docdex"), &link).unwrap();
    let out = Command::new(&link)
        .args(["hook", "install", "--repo", repo.to_str().unwrap()])
        .env("DOCDEX_HOME", env.home())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let script = std::fs::read_to_string(repo.join(".git/hooks/pre-commit")).unwrap();
    assert!(script.contains(&link.display().to_string()), "{script}");
    assert!(!script.contains(env!("CARGO_BIN_EXE_docdex")), "{script}");
}
