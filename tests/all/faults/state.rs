//! Permissions: a state directory docdex may not write (a read-only mount, another owner,
//! `chmod -w`) fails the run before it touches anything, saying which path and what to do,
//! deleting nothing; repository files and folders docdex may not read are listed by status.

use super::watcher::unprivileged_env;
use crate::util::write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn chmod_tree(p: &Path, mode_for: &dyn Fn(bool) -> u32) {
    for e in std::fs::read_dir(p).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() {
            chmod_tree(&e.path(), mode_for);
        }
        let mode = mode_for(e.file_type().unwrap().is_dir());
        std::fs::set_permissions(e.path(), std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

#[test]
fn a_read_only_state_directory_fails_the_run_clearly_and_deletes_nothing() {
    let Some((env, repo)) = unprivileged_env(&[("src/lib.rs", "pub fn okapi_first() {}\n")]) else { return };
    let run =
        |args: &[&str]| super::watcher::docdex_as(true).args(args).env("DOCDEX_HOME", env.home()).output().unwrap();
    let r = repo.to_str().unwrap();
    assert!(run(&["index", "--repo", r]).status.success());
    let repos = env.home().join("state/repos");
    let state = std::fs::read_dir(&repos).unwrap().flatten().next().unwrap().path();
    let store = state.join("gen/symbols.db");
    let store_bytes = std::fs::read(&store).unwrap();

    // The symbol store alone made read-only: it used to be taken for a damaged store.
    write(&repo, "src/lib.rs", "pub fn okapi_second() {}\n");
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o400)).unwrap();
    let out = run(&["index", "--repo", r]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("symbols.db cannot be written") && err.contains("fix its permissions"), "{err}");
    assert!(!err.contains("rebuilding") && !err.contains("removing"), "{err}");
    assert_eq!(std::fs::read(&store).unwrap(), store_bytes, "the store is kept as it was");

    // The whole state read-only: the same clear refusal, and search does not call it damage.
    chmod_tree(&repos, &|dir| if dir { 0o555 } else { 0o444 });
    let out = run(&["index", "--repo", r]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("is not writable") && err.contains("nothing was changed"), "{err}");
    let out = run(&["search", "--repo", r, "okapi"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("damaged") && !err.contains("--repair") && err.contains("not writable"), "{err}");

    // Writable again: the next run indexes the change.
    chmod_tree(&repos, &|dir| if dir { 0o700 } else { 0o600 });
    assert!(run(&["index", "--repo", r]).status.success());
    let out = run(&["search", "--repo", r, "okapi_second", "--json"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("src/lib.rs"));
}

#[test]
fn files_and_folders_docdex_may_not_read_are_listed_by_status() {
    let Some((env, repo)) = unprivileged_env(&[("src/lib.rs", "pub fn okapi() {}\n")]) else { return };
    let run =
        |args: &[&str]| super::watcher::docdex_as(true).args(args).env("DOCDEX_HOME", env.home()).output().unwrap();
    let r = repo.to_str().unwrap();
    assert!(run(&["index", "--repo", r]).status.success());

    // Made by another user (a container, sudo), and nothing else changes in the next run.
    write(&repo, "secret.txt", "okapi secret\n");
    write(&repo, "pgdata/base/1", "okapi row\n");
    std::fs::set_permissions(repo.join("secret.txt"), std::fs::Permissions::from_mode(0o000)).unwrap();
    std::fs::set_permissions(repo.join("pgdata"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let out = run(&["index", "--repo", r]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("secret.txt") && said.contains("pgdata"), "{said}");
    let out = run(&["status", "--repo", r, "--json"]);
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let warnings = status["warnings"].to_string();
    assert!(
        warnings.contains("secret.txt: unreadable: Permission denied")
            && warnings.contains("pgdata: unreadable directory: Permission denied"),
        "{warnings}"
    );
    std::fs::set_permissions(repo.join("pgdata"), std::fs::Permissions::from_mode(0o755)).unwrap();
}
