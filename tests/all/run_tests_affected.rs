//! `docdex run-tests --affected` on changes the plain import walk missed, with real pytest in
//! real git repositories: a module reached only through a `conftest.py` fixture, and a module
//! the tests import that is deleted or renamed away. Both ran nothing (exit 5, which the
//! documented CI idiom accepts) while the suite failed.

use crate::util::{git, git_commit_all, pytest_venv, run_tests_json, write, Env};
use std::path::{Path, PathBuf};

/// `app/db.py`, used by `tests/conftest.py`'s fixture only; committed and indexed.
fn conftest_project(env: &Env, venv: &Path) -> PathBuf {
    let repo = env.repo("py_conftest");
    write(&repo, "pytest.ini", "[pytest]\npythonpath = .\n");
    write(&repo, ".gitignore", ".venv\n");
    write(&repo, "app/__init__.py", "");
    write(&repo, "app/db.py", "def connect():\n    return {\"ok\": True}\n");
    write(
        &repo,
        "tests/conftest.py",
        "import pytest\nfrom app.db import connect\n\n@pytest.fixture\ndef db():\n    return connect()\n",
    );
    write(&repo, "tests/test_users.py", "def test_db_ok(db):\n    assert db[\"ok\"]\n");
    std::os::unix::fs::symlink(venv, repo.join(".venv")).unwrap();
    git_commit_all(&repo);
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    repo
}

#[test]
fn a_change_reaching_the_tests_through_a_conftest_runs_the_tests_below_it() {
    let Some(venv) = pytest_venv() else { return };
    let env = Env::new();
    let repo = conftest_project(&env, &venv);
    write(&repo, "app/db.py", "def connect():\n    return {\"ok\": False}\n");
    let (code, v) = run_tests_json(&env, &repo, &["--affected"], &[]);
    assert_eq!((code, v["failed"].as_u64()), (1, Some(1)), "the broken fixture's test runs and fails: {v}");
    let selected = v["selected"].as_array().unwrap();
    assert_eq!(selected.len(), 1, "{v}");
    assert!(selected[0].as_str().unwrap().starts_with("tests/test_users.py: below tests/conftest.py"), "{v}");
}

/// `pkg/__init__.py`, imported by `tests/test_f.py`; committed and indexed.
fn importing_project(env: &Env, venv: &Path) -> PathBuf {
    let repo = env.repo("py_deleted");
    write(&repo, "pytest.ini", "[pytest]\npythonpath = .\n");
    write(&repo, ".gitignore", ".venv\n");
    write(&repo, "pkg/__init__.py", "def f():\n    return 1\n");
    write(&repo, "tests/test_f.py", "from pkg import f\n\ndef test_f():\n    assert f() == 1\n");
    write(&repo, "tests/test_other.py", "def test_other():\n    assert True\n");
    std::os::unix::fs::symlink(venv, repo.join(".venv")).unwrap();
    git_commit_all(&repo);
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    repo
}

#[test]
fn deleting_or_renaming_an_imported_module_runs_its_importers() {
    let Some(venv) = pytest_venv() else { return };
    let env = Env::new();
    let repo = importing_project(&env, &venv);
    git(&repo, &["mv", "pkg", "pkg2"]);
    let (code, v) = run_tests_json(&env, &repo, &["--affected"], &[]);
    assert_eq!((code, v["status"].as_str()), (1, Some("failed")), "the renamed-away import fails: {v}");
    let selected = v["selected"].as_array().unwrap();
    assert_eq!(selected.len(), 1, "{v}");
    assert!(selected[0].as_str().unwrap().starts_with("tests/test_f.py: exercises deleted pkg/__init__.py"), "{v}");
    // Deleted, and indexed again: the graph no longer says who imported it, so the whole suite runs.
    git(&repo, &["mv", "pkg2", "pkg"]);
    std::fs::remove_file(repo.join("pkg/__init__.py")).unwrap();
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let (code, v) = run_tests_json(&env, &repo, &["--affected"], &[]);
    assert_eq!((code, v["status"].as_str()), (1, Some("failed")), "{v}");
    let notes = v["notes"].to_string();
    assert!(notes.contains("pkg/__init__.py was deleted") && notes.contains("the whole suite was run"), "{v}");
    // pytest given no file runs the whole suite (it stops at test_f.py's collection error).
    assert!(!v["command"].to_string().contains("tests/"), "no file named: the whole suite: {v}");
    assert_eq!(v["failures"][0]["file"], "tests/test_f.py", "{v}");
}
