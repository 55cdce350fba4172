//! Indexing: isolation, incremental updates, deletes, renames, ignore files,
//! skipped and hostile files, crash safety.

use crate::util::{hit_paths, quiet, sample_repo, write, Env};
use docdex::engine::IndexOptions;
use std::path::Path;

fn index(env: &Env, repo: &std::path::Path) -> docdex::engine::protocol::IndexSummary {
    env.engine().index(repo, &IndexOptions::default(), &quiet()).expect("index")
}

#[test]
fn two_repos_are_isolated() {
    let env = Env::new();
    let a = env.repo("a");
    let b = env.repo("b");
    write(&a, "alpha.rs", "fn only_in_alpha_zebra() {}\n");
    write(&b, "beta.rs", "fn only_in_beta_giraffe() {}\n");
    index(&env, &a);
    index(&env, &b);
    let engine = env.engine();
    assert_eq!(hit_paths(&engine, &a, "zebra"), ["alpha.rs"]);
    assert!(hit_paths(&engine, &b, "zebra").is_empty(), "repo b must not see repo a");
    assert!(hit_paths(&engine, &a, "giraffe").is_empty(), "repo a must not see repo b");
    let ra = engine.resolve_repo(&a).unwrap();
    let rb = engine.resolve_repo(&b).unwrap();
    assert_ne!(ra.fingerprint, rb.fingerprint);
    assert!(ra.state_dir.starts_with(env.home().join("state/repos")));
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(ra.state_dir.join("repo_meta.json")).unwrap()).unwrap();
    assert_eq!(meta["fingerprint_sha256"], ra.fingerprint.as_str());
    assert_eq!(meta["canonical_path"], ra.root.to_str().unwrap());
    assert!(meta["created_at_epoch_ms"].as_u64().unwrap() > 0);
    assert_eq!(engine.list_repos().unwrap().len(), 2);
}

#[test]
fn fingerprint_resolves_symlinks_to_the_same_repo() {
    let env = Env::new();
    let real = env.repo("real");
    let link = env.dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let engine = env.engine();
    assert_eq!(engine.resolve_repo(&real).unwrap().fingerprint, engine.resolve_repo(&link).unwrap().fingerprint);
    assert_eq!(
        engine.resolve_repo(&real.join(".")).unwrap().fingerprint,
        engine.resolve_repo(&real).unwrap().fingerprint
    );
}

#[test]
fn reindex_touches_only_changes_and_handles_delete_and_rename() {
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    write(&repo, "src/extra.rs", "fn walrus_feeding_schedule() {}\n");
    let first = index(&env, &repo);
    assert_eq!(first.added, 6);
    assert_eq!(first.files, 6);

    let again = index(&env, &repo);
    assert_eq!((again.added, again.updated, again.deleted), (0, 0, 0));
    assert_eq!(again.unchanged, 6);
    assert_eq!(again.bytes_read, 0, "unchanged files are not re-read");
    assert_eq!(again.generation, first.generation, "no commit when nothing changed");
    assert_eq!((first.commits, again.commits), (1, 0), "one batch, one commit; none with nothing to do");
    assert!(first.commit_seconds > 0.0 && first.commit_seconds < first.seconds, "{first:?}");
    assert_eq!(again.commit_seconds, 0.0);

    // Modify one file.
    std::thread::sleep(std::time::Duration::from_millis(20));
    write(&repo, "src/parser.py", "def parse_yaml_document(path):\n    return narwhal\n");
    let s = index(&env, &repo);
    assert_eq!((s.added, s.updated, s.deleted, s.unchanged), (0, 1, 0, 5));
    let engine = env.engine();
    assert_eq!(hit_paths(&engine, &repo, "narwhal"), ["src/parser.py"]);
    assert!(
        hit_paths(&engine, &repo, "configuration file").iter().all(|p| p != "src/parser.py"),
        "old content must be gone"
    );

    // Delete one.
    std::fs::remove_file(repo.join("web/app.ts")).unwrap();
    let s = index(&env, &repo);
    assert_eq!((s.deleted, s.files), (1, 5));
    assert!(
        !hit_paths(&engine, &repo, "renderDashboard").contains(&"web/app.ts".to_string()),
        "deleted file still found"
    );

    // Rename one.
    std::fs::rename(repo.join("src/extra.rs"), repo.join("src/feeding.rs")).unwrap();
    let s = index(&env, &repo);
    assert_eq!((s.added, s.deleted, s.renamed), (1, 1, 1));
    assert_eq!(hit_paths(&engine, &repo, "walrus"), ["src/feeding.rs"]);
}

#[test]
fn ignore_files_are_honoured() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, ".gitignore", "build/\n*.log\n");
    write(&repo, ".ignore", "scratch.txt\n");
    write(&repo, ".docdexignore", "secret/\n");
    write(&repo, "keep.rs", "fn visible_okapi() {}\n");
    write(&repo, "build/out.rs", "fn hidden_okapi() {}\n");
    write(&repo, "run.log", "okapi log\n");
    write(&repo, "scratch.txt", "okapi scratch\n");
    write(&repo, "secret/keys.rs", "fn okapi_key() {}\n");
    index(&env, &repo);
    let hits = hit_paths(&env.engine(), &repo, "okapi");
    assert_eq!(hits, ["keep.rs"], "only the non-ignored file");
}

/// The manifest's indexed paths after `docdex index` (the real binary) of `repo`.
fn indexed_by_cli(env: &Env, repo: &std::path::Path) -> Vec<String> {
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let r = env.engine().resolve_repo(repo).unwrap();
    let m = docdex::engine::index::manifest::Manifest::load(&r.manifest_path());
    m.files.into_iter().filter(|(_, e)| e.skipped.is_none()).map(|(p, _)| p).collect()
}

#[test]
fn ignore_files_above_the_repository_never_hide_its_files() {
    use crate::util::git;
    let env = Env::new();
    // A home directory kept in git with `*` in its .gitignore (the dotfiles pattern), holding
    // a git project and a plain folder: git itself lists the project's files.
    let home = env.repo("user");
    git(&home, &["init", "-q"]);
    write(&home, ".gitignore", "*\n");
    let project = home.join("project");
    write(&project, "src/lib.rs", "fn okapi_lib() {}\n");
    write(&project, "notes.md", "okapi notes\n");
    git(&project, &["init", "-q"]);
    assert_eq!(indexed_by_cli(&env, &project), ["notes.md", "src/lib.rs"]);
    // A folder outside git under a parent folder's .gitignore: its own project.
    let parent = env.repo("parent");
    write(&parent, ".gitignore", "*.md\nsecret*\n");
    let plain = parent.join("plain");
    write(&plain, "readme.md", "okapi readme\n");
    write(&plain, "secret_plan.txt", "okapi plan\n");
    write(&plain, ".gitignore", "*.log\n");
    write(&plain, "run.log", "okapi log\n");
    assert_eq!(indexed_by_cli(&env, &plain), ["readme.md", "secret_plan.txt"]);
    // A subdirectory of a git repository indexed on its own keeps git's view: the
    // repository's .gitignore above it still applies.
    let mono = env.repo("mono");
    write(&mono, ".gitignore", "node_modules/\n");
    write(&mono, "packages/web/app.js", "okapi app\n");
    write(&mono, "packages/web/node_modules/dep/index.js", "okapi dep\n");
    git(&mono, &["init", "-q"]);
    assert_eq!(indexed_by_cli(&env, &mono.join("packages/web")), ["app.js"]);
}

/// Whether git itself ignores `rel` in the worktree at `dir` (`git check-ignore`).
fn git_ignores(dir: &std::path::Path, rel: &str) -> bool {
    let out = std::process::Command::new("git").args(["check-ignore", "-q", rel]).current_dir(dir).output().unwrap();
    out.status.code() == Some(0)
}

/// A submodule's `info/exclude` (in the superproject's `.git/modules/sub/`) and a
/// repository-local `core.excludesFile` (the superproject's `.git/config`, the submodule's own
/// config) were not applied: the walk read neither, and indexed what git ignores. Each rule
/// applies where git applies it, and a `.gitignore` whitelist still wins over both.
#[test]
fn a_submodules_exclude_and_a_repository_local_excludes_file_apply_as_in_git() {
    use crate::util::git;
    let env = Env::new();
    let lib = env.repo("lib");
    write(&lib, "lib.rs", "fn okapi_lib() {}\n");
    crate::util::git_commit_all(&lib);
    let top = env.repo("super");
    write(&top, "main.rs", "fn okapi_main() {}\n");
    crate::util::git_commit_all(&top);
    git(&top, &["-c", "protocol.file.allow=always", "submodule", "add", "-q", lib.to_str().unwrap(), "sub"]);
    let sub = top.join("sub");
    let module = top.join(".git/modules/sub");
    assert!(module.join("info").is_dir(), "the submodule's git directory lives in the superproject");
    std::fs::write(module.join("info/exclude"), "*.tmp\n").unwrap();
    write(&top, ".git/top-excludes", "*.bak\n");
    git(&top, &["config", "core.excludesFile", top.join(".git/top-excludes").to_str().unwrap()]);
    write(&top, ".git/modules/sub/sub-excludes", "*.log\n");
    git(&sub, &["config", "core.excludesFile", module.join("sub-excludes").to_str().unwrap()]);
    write(&sub, ".gitignore", "!keep.tmp\n");
    for (rel, text) in [
        ("notes.tmp", "okapi top notes"),
        ("x.bak", "okapi top backup"),
        ("sub/notes.tmp", "okapi sub notes"),
        ("sub/keep.tmp", "okapi kept by its gitignore"),
        ("sub/y.bak", "okapi sub backup"),
        ("sub/z.log", "okapi sub log"),
    ] {
        write(&top, rel, text);
    }
    // What git says, so the test asserts git's behaviour and not a guess at it.
    assert!(!git_ignores(&top, "notes.tmp") && git_ignores(&top, "x.bak"));
    assert!(git_ignores(&sub, "notes.tmp") && !git_ignores(&sub, "keep.tmp"));
    assert!(!git_ignores(&sub, "y.bak") && git_ignores(&sub, "z.log"));
    let expected = ["main.rs", "notes.tmp", "sub/keep.tmp", "sub/lib.rs", "sub/y.bak"];
    assert_eq!(indexed_by_cli(&env, &top), expected);
    // The watcher's walk of changed paths keeps the same rules.
    write(&top, "sub/later.tmp", "okapi later");
    write(&top, "sub/later.rs", "fn okapi_later() {}\n");
    let engine = env.engine();
    let scope = docdex::engine::index::Scope::Paths(vec![sub.join("later.tmp"), sub.join("later.rs")]);
    let repo_ref = engine.resolve_repo(&top).unwrap();
    let mut session = engine.open_index_session(&repo_ref, false).unwrap();
    session.update(&scope, &|_: &_| {}).unwrap();
    session.finish().unwrap();
    let hits = hit_paths(&engine, &top, "okapi later");
    assert!(hits.contains(&"sub/later.rs".to_string()) && !hits.contains(&"sub/later.tmp".to_string()), "{hits:?}");
}

/// A nested repository that is not a submodule (a clone inside the worktree) is its own
/// repository to git: its own `core.excludesFile` applies in it, and the top's `.gitignore`,
/// `info/exclude` and `core.excludesFile` do not. The walk applied none of its excludes file,
/// and applied the top's `.gitignore` and `info/exclude` inside it: files git ignores there
/// were indexed, and files git keeps were not.
#[test]
fn a_nested_repository_keeps_its_own_rules_as_in_git() {
    use crate::util::git;
    let env = Env::new();
    let top = env.repo("top");
    write(&top, ".gitignore", "*.log\n");
    write(&top, "main.rs", "fn okapi_main() {}\n");
    git(&top, &["init", "-q"]);
    std::fs::write(top.join(".git/info/exclude"), "*.tmp\n").unwrap();
    write(&top, ".git/top-excludes", "*.bak\n");
    git(&top, &["config", "core.excludesFile", top.join(".git/top-excludes").to_str().unwrap()]);
    let nested = top.join("nested");
    write(&nested, "lib.rs", "fn okapi_lib() {}\n");
    git(&nested, &["init", "-q"]);
    std::fs::write(nested.join(".git/info/exclude"), "*.dat\n").unwrap();
    write(&nested, ".git/own-excludes", "*.out\n");
    git(&nested, &["config", "core.excludesFile", nested.join(".git/own-excludes").to_str().unwrap()]);
    for ext in ["log", "tmp", "bak", "out", "dat"] {
        write(&top, &format!("x.{ext}"), format!("okapi top {ext}"));
        write(&nested, &format!("x.{ext}"), format!("okapi nested {ext}"));
    }
    // What git says, so the test asserts git's behaviour and not a guess at it.
    let ignored = |dir: &std::path::Path| -> Vec<&str> {
        ["x.log", "x.tmp", "x.bak", "x.out", "x.dat"].into_iter().filter(|f| git_ignores(dir, f)).collect()
    };
    assert_eq!(ignored(&top), ["x.log", "x.tmp", "x.bak"]);
    assert_eq!(ignored(&nested), ["x.out", "x.dat"]);
    let expected = ["main.rs", "nested/lib.rs", "nested/x.bak", "nested/x.log", "nested/x.tmp", "x.dat", "x.out"];
    assert_eq!(indexed_by_cli(&env, &top), expected);
    // The watcher's walk of changed paths keeps the same rules.
    write(&nested, "later.out", "okapi later");
    write(&nested, "later.log", "okapi later");
    let engine = env.engine();
    let scope = docdex::engine::index::Scope::Paths(vec![nested.join("later.out"), nested.join("later.log")]);
    let repo_ref = engine.resolve_repo(&top).unwrap();
    let mut session = engine.open_index_session(&repo_ref, false).unwrap();
    session.update(&scope, &|_: &_| {}).unwrap();
    session.finish().unwrap();
    let hits = hit_paths(&engine, &top, "okapi later");
    assert!(hits.contains(&"nested/later.log".into()) && !hits.contains(&"nested/later.out".into()), "{hits:?}");
}

/// The user's excludes file applies in each repository that sets no `core.excludesFile` of its
/// own, as git applies it: the crate's global rules applied it to a whole walk, inside a nested
/// repository with an excludes file of its own too, or (the top setting its own) nowhere, not
/// even in a nested repository that sets none.
#[test]
fn the_users_excludes_file_applies_in_each_repository_without_its_own() {
    use crate::util::git;
    let env = Env::new();
    let home = env.dir.path().join("user");
    write(&home, ".gitconfig", format!("[core]\n\texcludesFile = {}/global-ignore\n", home.display()));
    write(&home, "global-ignore", "*.glob\n");
    let home_var = home.to_str().unwrap();
    let ignored = |dir: &std::path::Path, rel: &str| {
        let out = std::process::Command::new("git")
            .args(["check-ignore", "-q", rel])
            .current_dir(dir)
            .env("HOME", home_var)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("GIT_CONFIG_GLOBAL")
            .output()
            .unwrap();
        out.status.code() == Some(0)
    };
    // `plain` sets no excludes file, its clone `own/` does; `local` sets one, its clone
    // `none/` does not.
    let repos = [("plain", None), ("plain/own", Some("*.own")), ("local", Some("*.own")), ("local/none", None)];
    for (rel, own) in repos {
        let dir = env.dir.path().join(rel);
        write(&dir, "x.glob", "okapi glob");
        write(&dir, "x.own", "okapi own");
        write(&dir, "main.rs", "fn okapi() {}\n");
        git(&dir, &["init", "-q"]);
        if let Some(pattern) = own {
            write(&dir, ".git/own-excludes", format!("{pattern}\n"));
            git(&dir, &["config", "core.excludesFile", dir.join(".git/own-excludes").to_str().unwrap()]);
        }
    }
    let d = |rel: &str| env.dir.path().join(rel);
    assert!(ignored(&d("plain"), "x.glob") && !ignored(&d("plain"), "x.own"));
    assert!(!ignored(&d("plain/own"), "x.glob") && ignored(&d("plain/own"), "x.own"));
    assert!(!ignored(&d("local"), "x.glob") && ignored(&d("local"), "x.own"));
    assert!(ignored(&d("local/none"), "x.glob") && !ignored(&d("local/none"), "x.own"));
    let indexed = |rel: &str| {
        let repo = d(rel);
        // As git ran above: this HOME's config, whatever the machine's environment names.
        let xdg = home.join(".config");
        let global = home.join(".gitconfig");
        let vars = [
            ("HOME", home_var),
            ("XDG_CONFIG_HOME", xdg.to_str().unwrap()),
            ("GIT_CONFIG_GLOBAL", global.to_str().unwrap()),
        ];
        let out = env.run_env(&["index", "--repo", repo.to_str().unwrap(), "--json"], &vars);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let r = env.engine().resolve_repo(&repo).unwrap();
        let m = docdex::engine::index::manifest::Manifest::load(&r.manifest_path());
        m.files.into_iter().filter(|(_, e)| e.skipped.is_none()).map(|(p, _)| p).collect::<Vec<_>>()
    };
    assert_eq!(indexed("plain"), ["main.rs", "own/main.rs", "own/x.glob", "x.own"]);
    assert_eq!(indexed("local"), ["main.rs", "none/main.rs", "none/x.own", "x.glob"]);
}

/// The user's git config as git reads it: `[include]` and `[includeIf "gitdir:..."]` (plain,
/// `gitdir/i:`, `~/`, a trailing `/`) were not followed, so an excludes file named in an
/// included file applied nowhere; and of two `core.excludesFile` the first won, where git
/// keeps the last. A relative include is taken from the including file, a missing one skipped.
#[test]
fn the_users_git_config_includes_and_last_values_apply_as_in_git() {
    use crate::util::git;
    let env = Env::new();
    let home = env.dir.path().join("user");
    let global = home.join("gitconfig");
    write(
        &home,
        "gitconfig",
        "[core]\n\texcludesFile = ~/first-ignore\n\texcludesFile = ~/second-ignore\n\
         [include]\n\tpath = conf/missing.inc\n\
         [includeIf \"gitdir:~/work/\"]\n\tpath = conf/work.inc\n\
         [includeIf \"gitdir/i:~/CASE/\"]\n\tpath = ~/conf/case.inc\n",
    );
    // Included from an included file, relative to it (conf/), after a value of its own.
    write(&home, "conf/work.inc", "[core]\n\texcludesFile = ~/first-ignore\n[include]\n\tpath = deeper.inc\n");
    write(&home, "conf/deeper.inc", "[core]\n\texcludesFile = ~/work-ignore\n");
    write(&home, "conf/case.inc", "[core]\n\texcludesFile = ~/case-ignore\n");
    for (file, pattern) in [("first-ignore", "*.first"), ("second-ignore", "*.second")] {
        write(&home, file, format!("{pattern}\n"));
    }
    write(&home, "work-ignore", "*.work\n");
    write(&home, "case-ignore", "*.case\n");
    let xdg = home.join(".config");
    let vars = [
        ("HOME", home.to_str().unwrap()),
        ("XDG_CONFIG_HOME", xdg.to_str().unwrap()),
        ("GIT_CONFIG_GLOBAL", global.to_str().unwrap()),
        ("GIT_CONFIG_NOSYSTEM", "1"),
    ];
    let ignored_with = |vars: &[(&str, &str)], dir: &std::path::Path, rel: &str| {
        let mut cmd = std::process::Command::new("git");
        cmd.args(["check-ignore", "-q", rel]).current_dir(dir).env_remove("GIT_CONFIG_GLOBAL");
        for (k, v) in vars {
            cmd.env(k, v);
        }
        cmd.output().unwrap().status.code() == Some(0)
    };
    let ignored = |dir: &std::path::Path, rel: &str| ignored_with(&vars, dir, rel);
    let kinds = ["first", "second", "work", "case"];
    for rel in ["plain", "work/proj", "case/proj"] {
        let dir = home.join(rel);
        for kind in kinds {
            write(&dir, &format!("x.{kind}"), format!("okapi {kind}"));
        }
        git(&dir, &["init", "-q"]);
    }
    // What git says, so the test asserts git's behaviour and not a guess at it.
    let git_ignores: Vec<Vec<&str>> = ["plain", "work/proj", "case/proj"]
        .iter()
        .map(|rel| kinds.into_iter().filter(|k| ignored(&home.join(rel), &format!("x.{k}"))).collect())
        .collect();
    assert_eq!(git_ignores, [["second"], ["work"], ["case"]]);
    let indexed_with = |vars: &[(&str, &str)], rel: &str| {
        let repo = home.join(rel);
        let out = env.run_env(&["index", "--repo", repo.to_str().unwrap(), "--json"], vars);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let r = env.engine().resolve_repo(&repo).unwrap();
        let m = docdex::engine::index::manifest::Manifest::load(&r.manifest_path());
        m.files.into_iter().filter(|(_, e)| e.skipped.is_none()).map(|(p, _)| p).collect::<Vec<_>>()
    };
    let indexed = |rel: &str| indexed_with(&vars, rel);
    assert_eq!(indexed("plain"), ["x.case", "x.first", "x.work"]);
    assert_eq!(indexed("work/proj"), ["x.case", "x.first", "x.second"]);
    assert_eq!(indexed("case/proj"), ["x.first", "x.second", "x.work"]);
    // Set empty, GIT_CONFIG_GLOBAL names no file: git reads no global config, not ~/.gitconfig.
    write(&home, ".gitconfig", "[core]\n\texcludesFile = ~/first-ignore\n");
    let no_global = [vars[0], vars[1], ("GIT_CONFIG_GLOBAL", ""), vars[3]];
    assert!(!ignored_with(&no_global, &home.join("plain"), "x.first"));
    assert!(ignored_with(&[vars[0], vars[1], vars[3]], &home.join("plain"), "x.first"), "~/.gitconfig when unset");
    assert_eq!(indexed_with(&no_global, "plain"), ["x.case", "x.first", "x.second", "x.work"]);
}

/// `[includeIf "onbranch:..."]` and `[includeIf "hasconfig:remote.*.url:..."]` counted as
/// false, so an excludes file named only under them applied nowhere, where git applies it on
/// the matching branch (a trailing `/` is everything below it) or in a repository with a
/// matching remote (set in the repository's own config, read after the user's that holds the
/// condition: git scans every config file for remote URLs first).
#[test]
fn onbranch_and_hasconfig_includes_apply_as_in_git() {
    use crate::util::git;
    let env = Env::new();
    let home = env.dir.path().join("user");
    let global = home.join("gitconfig");
    write(
        &home,
        "gitconfig",
        "[includeIf \"onbranch:feature/\"]\n\tpath = feature.inc\n\
         [includeIf \"hasconfig:remote.*.url:https://example.com/team/**\"]\n\tpath = team.inc\n",
    );
    write(&home, "feature.inc", "[core]\n\texcludesFile = ~/feature-ignore\n");
    write(&home, "team.inc", "[core]\n\texcludesFile = ~/team-ignore\n");
    write(&home, "feature-ignore", "*.feat\n");
    write(&home, "team-ignore", "*.team\n");
    let xdg = home.join(".config");
    let vars = [
        ("HOME", home.to_str().unwrap()),
        ("XDG_CONFIG_HOME", xdg.to_str().unwrap()),
        ("GIT_CONFIG_GLOBAL", global.to_str().unwrap()),
        ("GIT_CONFIG_NOSYSTEM", "1"),
    ];
    // (repository, branch, remote URL)
    let repos = [
        ("plain", "main", None),
        ("feat", "feature/x/y", None),
        ("featurex", "featurex", None),
        ("team", "main", Some("https://example.com/team/proj.git")),
        ("other", "main", Some("https://example.com/other/team/proj.git")),
    ];
    for (rel, branch, url) in repos {
        let dir = home.join(rel);
        write(&dir, "x.feat", "okapi feat");
        write(&dir, "x.team", "okapi team");
        git(&dir, &["init", "-q"]);
        git(&dir, &["checkout", "-q", "-b", branch]);
        if let Some(url) = url {
            git(&dir, &["remote", "add", "origin", url]);
        }
    }
    let ignored = |dir: &std::path::Path, rel: &str| {
        let mut cmd = std::process::Command::new("git");
        cmd.args(["check-ignore", "-q", rel]).current_dir(dir);
        for (k, v) in vars {
            cmd.env(k, v);
        }
        cmd.output().unwrap().status.code() == Some(0)
    };
    let kept = |rel: &str| -> Vec<&str> {
        ["x.feat", "x.team"].into_iter().filter(|f| !ignored(&home.join(rel), f)).collect()
    };
    // What git says, so the test asserts git's behaviour and not a guess at it.
    let git_keeps: Vec<Vec<&str>> = repos.iter().map(|(rel, _, _)| kept(rel)).collect();
    let want =
        [vec!["x.feat", "x.team"], vec!["x.team"], vec!["x.feat", "x.team"], vec!["x.feat"], vec!["x.feat", "x.team"]];
    assert_eq!(git_keeps, want);
    for ((rel, _, _), want) in repos.iter().zip(want) {
        let repo = home.join(rel);
        let out = env.run_env(&["index", "--repo", repo.to_str().unwrap(), "--json"], &vars);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let r = env.engine().resolve_repo(&repo).unwrap();
        let m = docdex::engine::index::manifest::Manifest::load(&r.manifest_path());
        let indexed: Vec<String> = m.files.into_iter().filter(|(_, e)| e.skipped.is_none()).map(|(p, _)| p).collect();
        assert_eq!(indexed, want, "{rel}");
    }
}

/// A folder outside git holding clones (`~/src` with a `.gitignore`, `~/src/repo1/.git`),
/// indexed as one root: its `.gitignore` applied inside each clone too, where git does not
/// read it (a clone's files git keeps were left out). It still applies to the folder's own
/// files, and the clone's own `.gitignore` still applies in the clone.
#[test]
fn a_folder_outside_git_keeps_its_gitignore_out_of_the_clones_in_it() {
    use crate::util::git;
    let env = Env::new();
    let src = env.repo("src");
    write(&src, ".gitignore", "*.log\nbuild/\n!keep.log\n");
    write(&src, "notes/run.log", "okapi folder log");
    write(&src, "notes/keep.log", "okapi folder kept");
    write(&src, "notes/readme.md", "okapi folder readme");
    let clone = src.join("repo1");
    write(&clone, "main.rs", "fn okapi() {}\n");
    write(&clone, "x.log", "okapi clone log");
    write(&clone, "build/out.txt", "okapi clone build");
    write(&clone, ".gitignore", "*.tmp\n");
    write(&clone, "y.tmp", "okapi clone tmp");
    git(&clone, &["init", "-q"]);
    // What git says in the clone (outside it there is no git to ask).
    assert!(!git_ignores(&clone, "x.log") && !git_ignores(&clone, "build/out.txt") && git_ignores(&clone, "y.tmp"));
    let expected = ["notes/keep.log", "notes/readme.md", "repo1/build/out.txt", "repo1/main.rs", "repo1/x.log"];
    assert_eq!(indexed_by_cli(&env, &src), expected);
    // The watcher's walk of changed paths keeps the same rules.
    write(&clone, "later.log", "zebrafish later");
    write(&src, "notes/later.log", "zebrafish later");
    let engine = env.engine();
    let scope = docdex::engine::index::Scope::Paths(vec![clone.join("later.log"), src.join("notes/later.log")]);
    let repo_ref = engine.resolve_repo(&src).unwrap();
    let mut session = engine.open_index_session(&repo_ref, false).unwrap();
    session.update(&scope, &|_: &_| {}).unwrap();
    session.finish().unwrap();
    assert_eq!(hit_paths(&engine, &src, "zebrafish"), ["repo1/later.log"]);
}

/// With `extensions.worktreeConfig` on (what `git sparse-checkout` sets), git reads each
/// worktree's `config.worktree` after `.git/config`: a `core.excludesFile` set there (`git
/// config --worktree`) applies in that worktree only, the main one or a linked one. It was
/// not read.
#[test]
fn a_worktrees_own_config_names_its_excludes_file_as_in_git() {
    use crate::util::git;
    let env = Env::new();
    let main = env.repo("main");
    write(&main, "main.rs", "fn okapi() {}\n");
    crate::util::git_commit_all(&main);
    let linked = env.dir.path().join("linked");
    git(&main, &["worktree", "add", "-q", linked.to_str().unwrap()]);
    git(&main, &["config", "extensions.worktreeConfig", "true"]);
    write(env.dir.path(), "main-ignore", "*.main\n");
    write(env.dir.path(), "linked-ignore", "*.linked\n");
    for (dir, file) in [(&main, "main-ignore"), (&linked, "linked-ignore")] {
        git(dir, &["config", "--worktree", "core.excludesFile", env.dir.path().join(file).to_str().unwrap()]);
        write(dir, "x.main", "okapi main");
        write(dir, "x.linked", "okapi linked");
    }
    // What git says, so the test asserts git's behaviour and not a guess at it.
    assert!(git_ignores(&main, "x.main") && !git_ignores(&main, "x.linked"));
    assert!(!git_ignores(&linked, "x.main") && git_ignores(&linked, "x.linked"));
    assert_eq!(indexed_by_cli(&env, &main), ["main.rs", "x.linked"]);
    assert_eq!(indexed_by_cli(&env, &linked), ["main.rs", "x.main"]);
}

#[test]
fn binary_huge_invalid_utf8_and_symlink_loops_are_survived() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "good.rs", "fn pelican() {}\n");
    write(&repo, "blob.bin", b"\x00\x01\x02pelican\x00".as_slice());
    write(&repo, "huge.txt", "pelican ".repeat(11 * 1024 * 1024 / 8 + 10));
    write(&repo, "latin1.txt", b"caf\xe9 pelican \xff\xfe end".as_slice());
    std::os::unix::fs::symlink(".", repo.join("loop")).unwrap();
    std::os::unix::fs::symlink("a", repo.join("b")).unwrap();
    std::os::unix::fs::symlink("b", repo.join("a")).unwrap();
    // A file name that is not UTF-8 (Latin-1 bytes): skipped with the reason, not an error.
    {
        use std::os::unix::ffi::OsStrExt;
        let name = std::ffi::OsStr::from_bytes(b"bad_\xff\xfename.rs");
        std::fs::write(repo.join(name), "fn pelican_too() {}\n").unwrap();
    }
    let s = index(&env, &repo);
    assert_eq!(s.files, 2, "good.rs and latin1.txt: {s:?}");
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert!(s.skipped.iter().any(|f| f.reason.contains("not valid UTF-8")), "{:?}", s.skipped);
    let again = index(&env, &repo);
    assert!(again.errors.is_empty() && again.added + again.updated == 0, "{again:?}");
    let reasons: std::collections::HashMap<_, _> =
        s.skipped.iter().map(|f| (f.path.as_str(), f.reason.as_str())).collect();
    assert_eq!(reasons.get("blob.bin"), Some(&"binary"));
    assert!(reasons.get("huge.txt").is_some_and(|r| r.contains("too large")), "{reasons:?}");
    assert!(reasons.get("loop").is_some_and(|r| r.contains("symlink")), "{reasons:?}");
    let mut hits = hit_paths(&env.engine(), &repo, "pelican");
    hits.sort();
    assert_eq!(hits, ["good.rs", "latin1.txt"]);

    let status = env.engine().status(&repo).unwrap();
    assert!(status.warnings.iter().any(|w| w.contains("not indexed") && w.contains("binary")), "{:?}", status.warnings);
    assert!(status.warnings.iter().any(|w| w.contains("huge.txt")), "{:?}", status.warnings);
}

#[test]
fn kill_during_index_keeps_previous_generation_searchable() {
    let env = Env::new();
    let repo = env.repo("big");
    write(&repo, "first.rs", "fn original_marmot() {}\n");
    let out = env.run(&["index", "--repo", repo.to_str().unwrap(), "--quiet"]);
    assert!(out.status.success());
    // Enough new content that the second run is still going when we kill it.
    let body: String =
        (0..120).map(|i| format!("fn generated_function_{i}(x: u64) -> u64 {{ x * {i} + capybara }}\n")).collect();
    for i in 0..3000 {
        write(&repo, &format!("gen/m{i:04}.rs"), &body);
    }
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_docdex"))
        .args(["index", "--repo", repo.to_str().unwrap(), "--quiet"])
        .env("DOCDEX_HOME", env.home())
        .spawn()
        .unwrap();
    let engine = env.engine();
    let status_path = engine.resolve_repo(&repo).unwrap().status_path();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(&status_path).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        if v["state"] == "updating" && v["progress"]["files_done"].as_u64().unwrap_or(0) > 0 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "indexer never reported progress");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    // The previous generation answers, and status says what happened.
    assert_eq!(hit_paths(&engine, &repo, "marmot"), ["first.rs"]);
    let status = engine.status(&repo).unwrap();
    assert_eq!(status.index_state, docdex::engine::protocol::IndexState::Ready);
    assert!(status.warnings.iter().any(|w| w.contains("interrupted")), "{:?}", status.warnings);

    // The next run completes the work.
    let s = engine.index(&repo, &IndexOptions::default(), &quiet()).unwrap();
    assert_eq!(s.files, 3001);
    assert_eq!(hit_paths(&engine, &repo, "generated_function_7").len(), 20);
    assert_eq!(hit_paths(&engine, &repo, "marmot"), ["first.rs"]);
}

#[test]
fn second_writer_is_refused_clearly() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "a.rs", "fn a() {}\n");
    let engine = env.engine();
    let r = engine.resolve_repo(&repo).unwrap();
    let _session = engine.open_index_session(&r, false).unwrap();
    let out = env.run(&["index", "--repo", repo.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(4));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("another docdex process") && err.contains(&std::process::id().to_string()), "{err}");
}

#[test]
fn a_second_index_run_at_once_waits_for_the_first_and_both_succeed() {
    let env = Env::new();
    let repo = env.repo("r");
    for i in 0..4000 {
        write(&repo, &format!("src/m{}/f{i}.rs", i % 30), format!("fn okapi_{i}() {{}}\n"));
    }
    let status = env.engine().resolve_repo(&repo).unwrap().status_path();
    let index = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_docdex"))
            .args(["index", "--json", "--repo", repo.to_str().unwrap()])
            .env("DOCDEX_HOME", env.home())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let first = index();
    crate::util::eventually("the first run under way", || {
        std::fs::read_to_string(&status).is_ok_and(|s| s.contains("\"updating\""))
    });
    // Held mid-run (a slow disk, a big tree) while the second starts.
    let signal = |sig| assert_eq!(unsafe { libc::kill(first.id() as i32, sig) }, 0);
    signal(libc::SIGSTOP);
    let mut second = index();
    std::thread::sleep(std::time::Duration::from_millis(800));
    let waited = second.try_wait().unwrap().is_none();
    signal(libc::SIGCONT);
    let (a, b) = (first.wait_with_output().unwrap(), second.wait_with_output().unwrap());
    let err = String::from_utf8_lossy(&b.stderr);
    assert!(waited && b.status.success(), "the second run must wait, then succeed: {err}");
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    for out in [&a, &b] {
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["files"], 4000, "{v}");
    }
}

#[test]
fn rebuild_starts_from_scratch() {
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    index(&env, &repo);
    let s = env.engine().index(&repo, &IndexOptions { rebuild: true, ..Default::default() }, &quiet()).unwrap();
    assert!(s.rebuilt);
    assert_eq!(s.added, 5);
    assert_eq!(hit_paths(&env.engine(), &repo, "SessionStore")[0], "src/auth/session.rs");
}

#[test]
fn crash_between_commit_and_manifest_write_is_repaired_without_duplicates() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "a.rs", "fn tapir_one() {}\n");
    index(&env, &repo);
    let r = env.engine().resolve_repo(&repo).unwrap();
    let old_manifest = std::fs::read(r.manifest_path()).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    write(&repo, "a.rs", "fn tapir_two() {}\n");
    write(&repo, "b.rs", "fn tapir_three() {}\n");
    index(&env, &repo);
    // As if the process died after Tantivy's commit but before the manifest was saved.
    std::fs::write(r.manifest_path(), old_manifest).unwrap();
    let s = index(&env, &repo);
    assert_eq!(s.files, 2);
    let engine = env.engine();
    let req = docdex::engine::protocol::SearchRequest { query: "tapir".into(), ..Default::default() };
    let resp = engine.search(&repo, &req).unwrap();
    let mut paths: Vec<_> = resp.results.iter().map(|h| h.path.clone()).collect();
    paths.sort();
    assert_eq!(paths, ["a.rs", "b.rs"], "each file exactly once");
    assert_eq!(resp.total_hits, 2);
    assert!(!hit_paths(&engine, &repo, "one").contains(&"a.rs".to_string()), "old content of a.rs is gone");
}

#[test]
fn racing_processes_create_state_and_registry_safely() {
    let env = Env::new();
    // Fresh home: every process races to create config, state layout and registry entries.
    let repos: Vec<_> = (0..6)
        .map(|i| {
            let r = env.repo(&format!("race{i}"));
            write(&r, "lib.rs", format!("fn racer_{i}() {{}}\n"));
            r
        })
        .collect();
    let children: Vec<_> = repos
        .iter()
        .map(|r| {
            std::process::Command::new(env!("CARGO_BIN_EXE_docdex"))
                .args(["index", "--repo", r.to_str().unwrap(), "--quiet"])
                .env("DOCDEX_HOME", env.home())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let listed = env.engine().list_repos().unwrap();
    assert_eq!(listed.len(), 6, "every racer registered: {listed:?}");
    assert!(listed.iter().all(|r| r.files == 1 && r.last_indexed_ms.is_some()));
    let config = std::fs::read_to_string(env.home().join("config.toml")).unwrap();
    assert!(config.contains("[server]"), "config intact after the race");
}

/// Records each progress phase the first time it is reported.
struct PhaseLog(std::sync::Mutex<Vec<String>>);

impl docdex::engine::protocol::ProgressSink for PhaseLog {
    fn progress(&self, p: &docdex::engine::protocol::IndexProgress) {
        let mut seen = self.0.lock().unwrap();
        if seen.last() != Some(&p.phase) {
            seen.push(p.phase.clone());
        }
    }
}

#[test]
fn a_large_first_index_is_searchable_as_text_then_parsed_and_a_small_one_in_one_pass() {
    // Large: over `first_commit_bytes` in all.
    let env = Env::new();
    env.write_config("[index]\nfirst_commit_bytes = 4096\n");
    let repo = env.repo("large");
    for i in 0..30 {
        let body: String = (0..30).map(|l| format!("def kestrel_{i}_{l}(x):\n    return x + {l}\n\n")).collect();
        write(&repo, &format!("pkg/m{i}.py"), &body);
    }
    write(&repo, "README.md", "# Kestrel\n\nA bird of prey.\n");
    let log = PhaseLog(Default::default());
    let s = env.engine().index(&repo, &IndexOptions::default(), &log).expect("index");
    let phases = log.0.lock().unwrap().clone();
    let parsing = phases.iter().position(|p| p == "parsing").expect("a parsing phase after the text pass");
    assert!(phases[..parsing].iter().any(|p| p == "indexing"), "{phases:?}");
    assert!(s.text_first && s.searchable_seconds > 0.0 && s.searchable_seconds < s.seconds, "{s:?}");
    assert!(s.first_commit_seconds <= s.searchable_seconds, "{s:?}");
    assert_eq!((s.added, s.updated, s.files), (31, 0, 31), "a parse completes a file, it does not count twice");
    let engine = env.engine();
    assert_eq!(hit_paths(&engine, &repo, "kestrel_7_3").first().map(String::as_str), Some("pkg/m7.py"));
    // The text chunks the parse replaced are merged away: one segment, no deletes.
    let meta = engine.resolve_repo(&repo).unwrap().index_dir().join("meta.json");
    let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(meta).unwrap()).unwrap();
    let segments = meta["segments"].as_array().unwrap();
    assert_eq!(segments.len(), 1, "{meta}");
    assert!(segments[0]["deletes"].is_null(), "{meta}");
    // It is the first index, whatever its generation (the command line said `rebuilt`).
    assert!(s.first_index && s.generation > 1, "{s:?}");
    let again = index(&env, &repo);
    assert_eq!((again.unchanged, again.added, again.updated), (31, 0, 0), "nothing is left to parse");
    assert!(!again.first_index && !again.rebuilt, "{again:?}");
    let other = Env::new();
    other.write_config(
        "[index]
first_commit_bytes = 4096
",
    );
    let out = other.run(&["index", "--repo", repo.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("(first index; ") && !said.contains("rebuilt"), "{said}");

    // Small: one pass, searchable only at its end.
    let small = Env::new();
    let repo = small.repo("small");
    write(&repo, "m.py", "def osprey():\n    return 1\n");
    let log = PhaseLog(Default::default());
    let s = small.engine().index(&repo, &IndexOptions::default(), &log).expect("index");
    assert!(!s.text_first && !log.0.lock().unwrap().iter().any(|p| p == "parsing"));
    assert_eq!(s.commits, 1);
    assert!(s.searchable_seconds >= s.first_commit_seconds && s.searchable_seconds <= s.seconds, "{s:?}");
}

#[test]
fn a_run_told_to_stop_ends_at_its_next_batch_and_the_next_run_goes_on() {
    use docdex::engine::index::Scope;
    use std::sync::atomic::{AtomicBool, Ordering};
    let env = Env::new();
    env.write_config("[index]\nfirst_commit_bytes = 4096\n");
    let repo = env.repo("stopped");
    for i in 0..30 {
        let body: String = (0..30).map(|l| format!("def heron_{i}_{l}(x):\n    return x + {l}\n\n")).collect();
        write(&repo, &format!("pkg/m{i:02}.py"), &body);
    }
    let engine = env.engine();
    let repo_ref = engine.resolve_repo(&repo).unwrap();
    let mut session = engine.open_index_session(&repo_ref, false).unwrap();
    // A shutdown arrives as the first commit is made.
    let stop = AtomicBool::new(false);
    let sink = |p: &docdex::engine::protocol::IndexProgress| {
        if p.phase == "committing" {
            stop.store(true, Ordering::SeqCst);
        }
    };
    let err = session.update_until(&Scope::Full, &sink, &stop).expect_err("stopped");
    assert!(matches!(err, docdex::Error::IndexStopped { .. }), "{err}");
    assert!(err.to_string().contains("next run goes on"), "{err}");
    drop(session);
    let status = engine.status(&repo).unwrap();
    assert_eq!(status.index_state, docdex::engine::protocol::IndexState::Ready, "{status:?}");
    assert!(status.warnings.iter().any(|w| w.contains("stopped for shutdown before it finished")), "{status:?}");
    // The first commit stays searchable; nothing after it was kept.
    let first = hit_paths(&engine, &repo, "heron_0_1");
    assert_eq!(first.first().map(String::as_str), Some("pkg/m00.py"), "{first:?}");
    assert!(hit_paths(&engine, &repo, "heron_29_1").iter().all(|p| p != "pkg/m29.py"), "the stopped batch is dropped");
    // The next run finishes the rest, parsing what the first commit holds as text.
    let s = index(&env, &repo);
    assert_eq!(s.files, 30, "{s:?}");
    assert!(s.added < 30, "the committed files are not new again: {s:?}");
    assert!(s.text_first, "the rest is still over first_commit_bytes: searchable as text first: {s:?}");
    assert_eq!(hit_paths(&engine, &repo, "heron_29_1").first().map(String::as_str), Some("pkg/m29.py"));
    let status = engine.status(&repo).unwrap();
    assert!(!status.warnings.iter().any(|w| w.contains("stopped")), "a finished run clears it: {status:?}");
}

#[test]
fn touched_and_newly_skipped_files_are_read_once_not_every_run() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "keep.rs", "fn kept_okapi() {}\n");
    std::fs::write(repo.join("blob.bin"), b"\x00\x01binary").unwrap();
    let first = index(&env, &repo);
    assert_eq!(first.files, 1);
    let skipped: Vec<(&str, bool)> = first.skipped.iter().map(|f| (f.path.as_str(), f.this_run)).collect();
    assert_eq!(skipped, [("blob.bin", true)]);

    // A skipped file untouched since is listed as skipped by an earlier run, not counted unchanged.
    let again = index(&env, &repo);
    assert_eq!(again.unchanged, 1, "only indexed files are unchanged: {again:?}");
    let skipped: Vec<(&str, bool)> = again.skipped.iter().map(|f| (f.path.as_str(), f.this_run)).collect();
    assert_eq!(skipped, [("blob.bin", false)]);

    // A file touched but not changed, and a binary changed: read by the next run (no commit,
    // nothing in the index changes), and not again by the one after.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let keep = std::fs::File::options().append(true).open(repo.join("keep.rs")).unwrap();
    keep.set_modified(std::time::SystemTime::now()).unwrap();
    std::fs::write(repo.join("blob.bin"), b"\x00\x01binary, longer").unwrap();
    let touched = index(&env, &repo);
    assert!(touched.bytes_read > 0, "{touched:?}");
    assert_eq!((touched.commits, touched.generation), (0, first.generation));
    assert_eq!(touched.skipped.iter().map(|f| f.this_run).collect::<Vec<_>>(), [true]);
    let after = index(&env, &repo);
    assert_eq!(after.bytes_read, 0, "the touched and the re-skipped file were read again: {after:?}");
    assert_eq!(after.skipped.iter().map(|f| f.this_run).collect::<Vec<_>>(), [false]);
    assert_eq!(hit_paths(&env.engine(), &repo, "okapi"), ["keep.rs"]);
}

#[test]
fn an_empty_repository_is_indexed_and_searchable_with_no_hits() {
    // Tour of the workbench: an empty (or all-ignored) repository was "indexed 0 files", yet every
    // surface then said "not indexed yet; run `docdex index`", however often it was indexed.
    let env = Env::new();
    let repo = env.repo("empty");
    write(&repo, ".gitignore", "*.log\n");
    write(&repo, "build.log", "ignored\n");
    let s = index(&env, &repo);
    assert_eq!(s.files, 0);
    let engine = env.engine();
    let status = engine.status(&repo).expect("an indexed repository has a status");
    assert_eq!(status.generation, 1, "{status:?}");
    assert!(hit_paths(&engine, &repo, "anything").is_empty());
    let overview = engine.repo_overview(&repo).expect("overview");
    assert_eq!(overview.state, docdex::engine::protocol::RepoState::Ready);
    // A second run has nothing new to commit; a file added later is found.
    assert_eq!(index(&env, &repo).files, 0);
    write(&repo, "notes.md", "the quokka lives here\n");
    index(&env, &repo);
    assert_eq!(hit_paths(&env.engine(), &repo, "quokka"), ["notes.md"]);
}

/// A repository root deleted or moved away under an open writer (between a watcher's check and
/// its batch's plan, or during a run) walked as an empty tree, and the run deleted every
/// file's entry; the run now fails naming the root and the index keeps its files.
#[test]
fn a_root_that_vanishes_under_an_open_session_keeps_the_index() {
    use docdex::engine::index::Scope;
    let env = Env::new();
    let repo = env.repo("vanishing");
    write(&repo, "kept.rs", "fn narwhal_tusk() {}\n");
    index(&env, &repo);
    let engine = env.engine();
    let repo_ref = engine.resolve_repo(&repo).unwrap();
    let mut session = engine.open_index_session(&repo_ref, false).unwrap();
    let away = env.dir.path().join("away");
    std::fs::rename(&repo, &away).unwrap();
    let err = session.update(&Scope::Full, &|_: &_| {}).expect_err("a vanished root");
    assert!(err.to_string().contains("was deleted or moved away during the run"), "{err}");
    // Replaced by a new, empty directory: the same refusal.
    std::fs::create_dir(&repo).unwrap();
    let err = session.update(&Scope::Full, &|_: &_| {}).expect_err("a replaced root");
    assert!(err.to_string().contains("was replaced by another directory"), "{err}");
    drop(session);
    std::fs::remove_dir(&repo).unwrap();
    std::fs::rename(&away, &repo).unwrap();
    assert_eq!(hit_paths(&engine, &repo, "narwhal_tusk"), ["kept.rs"], "the index kept its file");
}

/// Text in the encodings editors and Windows tools write: UTF-16 with a byte-order mark (what
/// PowerShell's `>` writes) was skipped as binary; a Latin-1 file lost its accents (`héron`
/// was not found); a UTF-8 byte-order mark showed in snippets and `get`. Each is now read as
/// the same text by the index, snippets and `get`.
#[test]
fn utf16_latin1_and_bom_text_files_are_indexed_as_their_text() {
    use docdex::engine::protocol::{FileRequest, SearchRequest};
    let env = Env::new();
    let repo = env.repo("encodings");
    let mut ps1 = vec![0xFF, 0xFE];
    for unit in "Get-Process | Where-Object cormorant\r\nWrite-Host \"grèbe huppé\"\r\n".encode_utf16() {
        ps1.extend(unit.to_le_bytes());
    }
    write(&repo, "report.ps1", ps1);
    write(&repo, "notes.txt", b"Le h\xe9ron cendr\xe9 niche au bord du lac.\n");
    write(&repo, "bom.py", b"\xEF\xBB\xBFdef avocet_count():\n    return 3\n");
    let s = index(&env, &repo);
    assert!(s.skipped.is_empty(), "{:?}", s.skipped);
    let engine = env.engine();
    assert_eq!(hit_paths(&engine, &repo, "cormorant"), ["report.ps1"]);
    assert_eq!(hit_paths(&engine, &repo, "héron cendré"), ["notes.txt"]);
    assert_eq!(hit_paths(&engine, &repo, "avocet_count"), ["bom.py"]);
    let hit = |q: &str| {
        let req = SearchRequest { query: q.into(), limit: Some(1), ..Default::default() };
        engine.search(&repo, &req).expect("search").results.remove(0).snippet
    };
    assert!(hit("grèbe").contains("grèbe huppé"), "{}", hit("grèbe"));
    assert!(hit("héron").contains("Le héron cendré"), "{}", hit("héron"));
    assert!(hit("avocet_count").starts_with("def avocet_count"), "{:?}", hit("avocet_count"));
    let get = |p: &str| engine.get_file(&repo, &FileRequest::new(p, None)).expect("get").text;
    assert!(get("report.ps1").contains("Write-Host \"grèbe huppé\""), "{}", get("report.ps1"));
    assert!(get("notes.txt").contains("Le héron cendré"));
    assert!(get("bom.py").starts_with("def avocet_count"), "{:?}", get("bom.py"));
}

/// After a run (or a watcher) holding thousands of pending edits is killed, status said
/// `ready`, `queued 0`: the queue went with the process, so the count is unknown, and the next
/// run compares every file with the index.
#[test]
fn status_after_a_killed_run_says_its_queue_is_unknown() {
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    index(&env, &repo);
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    let dead = gone.id();
    let engine = env.engine();
    let status_path = engine.resolve_repo(&repo).unwrap().status_path();
    let r = repo.to_str().unwrap();
    for (state, watching) in [("updating", false), ("ready", true)] {
        let status = serde_json::json!({"state": state, "pid": dead, "started_ms": 1, "updated_ms": 1,
            "progress": null, "queued": 3000, "last_event": null, "last_error": null, "watching": watching});
        std::fs::write(&status_path, status.to_string()).unwrap();
        let s = engine.status(&repo).unwrap();
        assert_eq!(s.queued_files, None, "{state}: {s:?}");
        assert!(s.warnings.iter().any(|w| w.contains("the files it had queued are not known")), "{:?}", s.warnings);
        let out = env.run(&["status", "--repo", r]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("queued      unknown"), "{text}");
        let v = env.json(&["status", "--repo", r, "--json"]);
        assert!(v["queued_files"].is_null(), "{v}");
    }
    // A live watcher's count is its own.
    let status = serde_json::json!({"state": "ready", "pid": std::process::id(), "started_ms": 1, "updated_ms": 1,
        "progress": null, "queued": 7, "last_event": null, "last_error": null, "watching": true});
    std::fs::write(&status_path, status.to_string()).unwrap();
    assert_eq!(engine.status(&repo).unwrap().queued_files, Some(7));
}

/// A file that leaves the index without being deleted (replaced by a symlink, grown past the
/// size limit) had its chunks removed while the run counted nothing: the watcher logged
/// `+0 ~0 -0`. Each such file is a removal.
#[test]
fn a_file_turned_symlink_or_grown_past_the_limit_counts_as_removed() {
    let env = Env::new();
    env.write_config("[index]\nmax_file_size_bytes = 200\n");
    let repo = env.repo("r");
    write(&repo, "hd.txt", "honeydew\n");
    write(&repo, "growing.txt", "okapi log line\n");
    write(&repo, "other.txt", "kept\n");
    index(&env, &repo);
    std::fs::remove_file(repo.join("hd.txt")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(repo.join("other.txt"), repo.join("hd.txt")).unwrap();
    write(&repo, "growing.txt", "okapi log line\n".repeat(40));
    let engine = env.engine();
    let repo_ref = engine.resolve_repo(&repo).unwrap();
    for file in ["hd.txt", "growing.txt"] {
        let mut session = engine.open_index_session(&repo_ref, false).unwrap();
        let scope = docdex::engine::index::Scope::Paths(vec![repo.join(file)]);
        let summary = session.update(&scope, &|_: &_| {}).unwrap();
        session.finish().unwrap();
        assert_eq!((summary.added, summary.updated, summary.deleted), (0, 0, 1), "{file}: {summary:?}");
    }
    assert_eq!(hit_paths(&engine, &repo, "honeydew"), Vec::<String>::new());
    assert_eq!(hit_paths(&engine, &repo, "okapi"), Vec::<String>::new());
}

/// The identity of a repository's kept file table (a new inode each time it is written, as it
/// is replaced by a rename).
fn file_table_identity(env: &Env, repo: &std::path::Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    let dir = env.engine().resolve_repo(repo).ok()?.index_dir();
    std::fs::metadata(dir.join(docdex::engine::search::file_bm25::FILE_NAME)).ok().map(|m| m.ino())
}

/// An index run ends by keeping the file table whole-file ranking reads, so the first search
/// after it (a one-shot `docdex search` is a new process) maps it instead of tabulating every
/// document and writing it (about 24M instructions on a 30k-file tree: more than the rest of
/// the search).
#[test]
fn an_index_run_keeps_the_file_table_its_first_search_reads() {
    let env = Env::new();
    let repo = env.repo("tables");
    sample_repo(&repo);
    index(&env, &repo);
    let kept = file_table_identity(&env, &repo).expect("the index run kept a file table");
    assert!(!hit_paths(&env.engine(), &repo, "expire stale sessions").is_empty());
    assert_eq!(file_table_identity(&env, &repo), Some(kept), "the first search had to tabulate the table again");
    // A change makes new segments: the run keeps their table, and the search reads it as is.
    write(&repo, "src/osprey.rs", "pub fn osprey_dives() {}\n");
    index(&env, &repo);
    let changed = file_table_identity(&env, &repo).expect("kept after the change");
    assert_ne!(changed, kept, "the run kept the old segments' table");
    assert_eq!(hit_paths(&env.engine(), &repo, "osprey dives").first().map(String::as_str), Some("src/osprey.rs"));
    assert_eq!(file_table_identity(&env, &repo), Some(changed));
}

/// A FIFO or a socket in the tree was passed over without a word, while binary files, links
/// and files over the size limit are listed with why: now they are listed too, and `status`
/// counts them.
#[test]
fn fifos_and_sockets_in_the_tree_are_listed_as_skipped() {
    let env = Env::new();
    let repo = env.repo("special");
    write(&repo, "src/main.rs", "fn main() {}\n");
    let made = std::process::Command::new("mkfifo").arg(repo.join("pipe.txt")).status().expect("mkfifo");
    assert!(made.success());
    let _socket = std::os::unix::net::UnixListener::bind(repo.join("agent.sock")).expect("bind a socket");
    let s = index(&env, &repo);
    let mut skipped: Vec<(String, String)> = s.skipped.iter().map(|f| (f.path.clone(), f.reason.clone())).collect();
    skipped.sort();
    assert_eq!(
        skipped,
        [
            ("agent.sock".to_string(), "not a regular file (a socket); docdex reads regular files only".to_string()),
            ("pipe.txt".to_string(), "not a regular file (a FIFO); docdex reads regular files only".to_string()),
        ],
        "{s:?}"
    );
    assert_eq!(s.files, 1);
    let out = env.run(&["status", "--repo", repo.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("2 not a regular file"), "{text}");
    assert!(text.contains("skipped pipe.txt: not a regular file (a FIFO)"), "{text}");
}

/// Files deleted while a run reads the tree are counted `vanished`, and their bytes are not
/// in `bytes_read`: the summary said `22.7 MB read` for a tree of which 1,758 files of 5,000
/// were gone before they were read.
#[test]
fn bytes_read_leave_out_files_deleted_before_they_were_read() {
    let env = Env::new();
    let repo = env.repo("shrinking");
    let text = "def handler(x):\n    return x\n".repeat(40);
    for i in 0..3000 {
        write(&repo, &format!("pkg/mod{i:04}.py"), &text);
    }
    let size = text.len() as u64;
    let deleted = std::sync::atomic::AtomicBool::new(false);
    let sink = |p: &docdex::engine::protocol::IndexProgress| {
        // At the first count of the read, the later half of the tree goes.
        if p.phase == "indexing" && p.files_total > 0 && !deleted.swap(true, std::sync::atomic::Ordering::SeqCst) {
            for i in (1500..3000).rev() {
                let _ = std::fs::remove_file(repo.join(format!("pkg/mod{i:04}.py")));
            }
        }
    };
    let s = env.engine().index(&repo, &IndexOptions::default(), &sink).expect("index");
    assert!(s.vanished > 0, "no file vanished mid-run, the test proves nothing: {s:?}");
    assert_eq!(s.bytes_read + s.vanished * size, 3000 * size, "{s:?}");
}

/// tour33 F7: `bytes_read` counts what was read. A sparse file of 4 GiB (skipped for its size
/// before any read) and a binary file (known by its first bytes) were counted whole.
#[test]
fn bytes_read_count_only_the_bytes_read() {
    let env = Env::new();
    let repo = env.repo("sparse");
    write(&repo, "small.py", "def heron(): pass\n");
    std::fs::File::create(repo.join("huge.log")).unwrap().set_len(4 << 30).unwrap();
    std::fs::write(repo.join("blob.bin"), vec![0u8; 400 * 1024]).unwrap();
    let s = index(&env, &repo);
    let skipped: Vec<&str> = s.skipped.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(skipped, ["blob.bin", "huge.log"], "{s:?}");
    assert!(s.bytes_read > 0 && s.bytes_read < 64 * 1024, "{s:?}");
}

/// A file rewritten with its size and mtime put back (`cp -p`, `rsync -t`, an archive
/// extracted over it) is indexed again: its status-change time moved, which no one can set
/// back. A `chmod` alone (which can make a file unreadable) is read once, found unchanged,
/// and not read again.
#[test]
fn a_file_rewritten_with_its_mtime_put_back_is_indexed_again() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "notes.md", "the heron waits by the water\n");
    index(&env, &repo);
    let path = repo.join("notes.md");
    let before = std::fs::metadata(&path).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&path, "the egret waits by the water\n").unwrap();
    let file = std::fs::File::options().append(true).open(&path).unwrap();
    file.set_modified(before.modified().unwrap()).unwrap();
    let after = std::fs::metadata(&path).unwrap();
    assert_eq!((after.len(), after.modified().unwrap()), (before.len(), before.modified().unwrap()));
    let s = index(&env, &repo);
    assert_eq!((s.updated, s.unchanged), (1, 0), "{s:?}");
    assert_eq!(hit_paths(&env.engine(), &repo, "egret"), ["notes.md"]);
    assert!(hit_paths(&env.engine(), &repo, "heron").is_empty());

    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let s = index(&env, &repo);
    assert_eq!((s.updated, s.unchanged, s.commits), (0, 1, 0), "{s:?}");
    assert!(s.bytes_read > 0, "a chmod alone was not looked at: {s:?}");
    let s = index(&env, &repo);
    assert_eq!(s.bytes_read, 0, "read again with nothing changed: {s:?}");
}

/// tour18 F13: a folder of a registered repository was accepted as a repository of its own,
/// its files then in two indexes. Refused, saying which repository covers it and how to search
/// only the folder; a nested git repository (its own top-level) is a repository and is
/// indexed with no word about it; a repository registered before keeps being re-indexed.
#[test]
fn a_folder_of_a_registered_repository_is_refused_unless_it_is_its_own_git_repository() {
    use crate::util::git;
    let env = Env::new();
    let proj = env.repo("proj");
    sample_repo(&proj);
    write(&proj, "vendor/lib/lib.rs", "fn okapi_vendored() {}\n");
    git(&proj, &["init", "-q"]);
    let out = env.run(&["index", "--repo", proj.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let proj = std::fs::canonicalize(&proj).unwrap();
    let sub = proj.join("src/auth");
    let out = env.run(&["index", "--repo", sub.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let expected = format!("{} lies inside the repository {}, which already indexes it", sub.display(), proj.display());
    assert!(err.contains(&expected), "{err}");
    assert!(err.contains("--path src/auth/"), "how to search only the folder: {err}");
    let repos = env.json(&["repo", "list", "--json"]);
    assert_eq!(repos["repos"].as_array().map(Vec::len), Some(1), "nothing registered: {repos}");
    // A nested git repository is its own: indexed, no warning.
    let nested = proj.join("vendor/lib");
    git(&nested, &["init", "-q"]);
    let out = env.run(&["index", "--repo", nested.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !err.contains("lies inside"), "{err}");
    // A folder the enclosing repository ignores is not indexed by it, so it is its own.
    write(&proj, ".gitignore", "scratch/\n");
    write(&proj, "scratch/notes/plan.md", "# okapi plan\n");
    let ignored = proj.join("scratch/notes");
    let out = env.run(&["index", "--repo", ignored.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !err.contains("lies inside"), "an ignored folder: {err}");
    // The engine refuses it whatever the surface (the workbench's add prompt goes through it).
    let refused = env.engine().index(&proj.join("web"), &IndexOptions::default(), &quiet());
    assert!(matches!(refused, Err(docdex::Error::InsideRepo { .. })), "{refused:?}");
}

/// Tour 33 F6: a file 600 folders deep was indexed and found by search, while `get` refused
/// its path (over the 256 components a path given to docdex may have). The walk stops at the
/// depth `get` reads, naming the folder it did not enter.
#[test]
fn the_walk_goes_no_deeper_than_a_path_docdex_reads() {
    let env = Env::new();
    let repo = env.repo("r");
    let deep = |n: usize| vec!["d"; n].join("/");
    write(&repo, &format!("{}/shallow.md", deep(100)), "a plover at one hundred\n");
    write(&repo, &format!("{}/deep.md", deep(300)), "a plover at three hundred\n");
    let r = repo.to_str().unwrap();
    let v = env.json(&["index", "--repo", r, "--json"]);
    let skipped = v["skipped"].to_string();
    assert!(skipped.contains("254 folders deep"), "{v}");
    let hits = env.json(&["search", "--repo", r, "plover", "--json"]);
    let paths: Vec<&str> = hits["results"].as_array().unwrap().iter().map(|h| h["path"].as_str().unwrap()).collect();
    assert_eq!(paths, [format!("{}/shallow.md", deep(100))], "{hits}");
    let out = env.run(&["get", "--repo", r, paths[0]]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// tour33 F4, tour31: permissions as a user meets them (root reads everything, so the test
/// runs docdex as `nobody` through `setpriv`; skipped when not root or without it). A file
/// made unreadable after it was indexed (`chmod 000`, which moves its ctime only) left the
/// index at the next run; it stayed searchable until `--rebuild`. `get` of a file in a folder
/// the user may not enter said "no such file".
#[test]
fn a_file_made_unreadable_leaves_the_index_and_get_says_why() {
    use std::os::unix::fs::PermissionsExt;
    let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].into_iter().find(|p| Path::new(p).exists());
    // SAFETY: geteuid only reads the process's credentials.
    let (Some(setpriv), true) = (setpriv, unsafe { libc::geteuid() } == 0) else {
        eprintln!("skipped: needs root and setpriv to run docdex as another user");
        return;
    };
    let env = Env::new();
    let top = env.dir.path();
    std::fs::set_permissions(top, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = top.join("docdex");
    std::fs::copy(env!("CARGO_BIN_EXE_docdex"), &bin).unwrap();
    let repo = env.repo("r");
    write(&repo, "a.py", "def zebrafish_alpha(): pass\n");
    write(&repo, "sub/b.py", "def zebrafish_beta(): pass\n");
    let home = env.repo("nobody-home");
    let chown = |p: &Path| {
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::chown(c.as_ptr(), 65534, 65534) }, 0, "chown {}", p.display());
    };
    for p in [&repo, &repo.join("a.py"), &repo.join("sub"), &repo.join("sub/b.py"), &home] {
        chown(p);
    }
    let run = |args: &[&str]| {
        let out = std::process::Command::new(setpriv)
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(&bin)
            .arg("--home")
            .arg(&home)
            .args(args)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
    };
    let r = repo.to_str().unwrap();
    assert_eq!(run(&["index", "--repo", r]).0, Some(0));
    assert!(run(&["search", "--repo", r, "zebrafish"]).1.contains("a.py"));
    std::fs::set_permissions(repo.join("a.py"), std::fs::Permissions::from_mode(0o000)).unwrap();
    std::fs::set_permissions(repo.join("sub"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let (_, said) = run(&["index", "--repo", r]);
    assert!(said.contains("a.py (unreadable: Permission denied"), "{said}");
    let (_, found) = run(&["search", "--repo", r, "zebrafish"]);
    assert!(found.contains("no results"), "an unreadable file stayed searchable: {found}");
    let (code, said) = run(&["get", "--repo", r, "sub/b.py"]);
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("a folder on its path is not readable"), "{said}");
    std::fs::set_permissions(repo.join("sub"), std::fs::Permissions::from_mode(0o755)).unwrap();
}
