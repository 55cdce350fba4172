//! Damaged index files: a search says "index damaged; run `docdex index --repair`" (exit 3,
//! never a panic), status stops saying ready, and `docdex index` (checking every file against
//! Tantivy's checksums) replaces the damaged generation with a new one.

use crate::util::{write, Env};
use std::path::{Path, PathBuf};

fn repo_with_files(env: &Env) -> PathBuf {
    let repo = env.repo("r");
    for i in 0..300 {
        write(&repo, &format!("f{i}.py"), format!("def func_{i}():\n    return 'word{i} zebra{i}'\n"));
    }
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    repo
}

/// The live index's files with this extension, largest first.
fn index_files(env: &Env, repo: &Path, ext: &str) -> Vec<PathBuf> {
    let dir = env.engine().resolve_repo(repo).unwrap().data_dir().join("index");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort_by_key(|p| std::cmp::Reverse(std::fs::metadata(p).unwrap().len()));
    assert!(!files.is_empty(), "no .{ext} file");
    files
}

fn overwrite_middle(p: &Path) {
    let mut b = std::fs::read(p).unwrap();
    let n = b.len();
    for x in &mut b[n / 4..n * 3 / 4] {
        *x = 0xAB;
    }
    std::fs::write(p, b).unwrap();
}

fn truncate_half(p: &Path) {
    let n = std::fs::metadata(p).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(p).unwrap().set_len(n / 2).unwrap();
}

fn search(env: &Env, repo: &Path, q: &str) -> std::process::Output {
    env.run(&["search", "--repo", repo.to_str().unwrap(), q, "--json"])
}

fn assert_damaged(out: &std::process::Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "exit code; stderr: {stderr}");
    assert!(stderr.contains("damaged") && stderr.contains("docdex index") && stderr.contains("--repair"), "{stderr}");
    assert!(
        !stderr.contains("panicked at") && !stderr.contains("RUST_BACKTRACE"),
        "no panic reaches the user: {stderr}"
    );
}

fn assert_searchable(env: &Env, repo: &Path) {
    let out = search(env, repo, "zebra150");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("f150.py"));
    let st = env.json(&["status", "--repo", repo.to_str().unwrap(), "--json"]);
    assert_eq!(st["index_state"], "ready", "{st}");
    assert!(!st["warnings"].to_string().contains("damaged"), "{st}");
}

#[test]
fn overwritten_term_bytes_are_caught_by_index_and_by_search_and_repaired() {
    let env = Env::new();
    let repo = repo_with_files(&env);
    let r = repo.to_str().unwrap();

    // Straight to `docdex index`: the checksum check finds it; it never reports a damaged index
    // as indexed.
    overwrite_middle(&index_files(&env, &repo, "term")[0]);
    let summary = env.json(&["index", "--repo", r, "--json"]);
    assert!(summary["note"].as_str().is_some_and(|n| n.contains("damaged")), "{summary}");
    assert_eq!(summary["rebuilt"], true, "{summary}");
    assert_searchable(&env, &repo);

    // A search meets it first: a clear error, and status says so.
    overwrite_middle(&index_files(&env, &repo, "term")[0]);
    assert_damaged(&search(&env, &repo, "zebra5"));
    let st = env.json(&["status", "--repo", r, "--json"]);
    assert_eq!(st["index_state"], "error", "{st}");
    assert!(st["warnings"].to_string().contains("--repair"), "{st}");
    let summary = env.json(&["index", "--repo", r, "--repair", "--json"]);
    assert!(summary["note"].as_str().is_some_and(|n| n.contains("damaged")), "{summary}");
    assert_searchable(&env, &repo);

    // A healthy index: --repair checks and changes nothing.
    let summary = env.json(&["index", "--repo", r, "--repair", "--json"]);
    assert_eq!(summary["rebuilt"], false, "{summary}");
    assert!(summary["note"].as_str().is_some_and(|n| n.contains("nothing to repair")), "{summary}");
}

#[test]
fn truncated_idx_and_fast_files_are_reported_and_repaired() {
    for ext in ["idx", "fast"] {
        let env = Env::new();
        let repo = repo_with_files(&env);
        truncate_half(&index_files(&env, &repo, ext)[0]);
        assert_damaged(&search(&env, &repo, "zebra5"));
        let summary = env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
        assert!(summary["note"].as_str().is_some_and(|n| n.contains("damaged")), "{ext}: {summary}");
        assert_searchable(&env, &repo);
    }
}

#[test]
fn an_index_file_shorter_than_its_footer_is_damage_not_a_panic() {
    // Tantivy panics on a file of 4 to 7 bytes (shorter than its footer's length field); the
    // search, the index run and `--repair` all report damage, and `--repair` replaces it.
    for (i, bytes) in [&b"junk"[..], b"garbage"].into_iter().enumerate() {
        let env = Env::new();
        let repo = repo_with_files(&env);
        std::fs::write(&index_files(&env, &repo, "idx")[0], bytes).unwrap();
        assert_damaged(&search(&env, &repo, "zebra5"));
        let mut args = vec!["index", "--repo", repo.to_str().unwrap(), "--json"];
        if i == 0 {
            args.push("--repair");
        }
        let out = env.run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && !stderr.contains("panicked"), "{} bytes: {stderr}", bytes.len());
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(summary["note"].as_str().is_some_and(|n| n.contains("damaged")), "{summary}");
        assert_searchable(&env, &repo);
    }
}

/// The registry's files beside it: `registry.json.damaged-<ms>` kept by a rebuild.
fn damaged_registries(env: &Env) -> Vec<PathBuf> {
    let state = env.home().join("state");
    std::fs::read_dir(&state)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("registry.json.damaged-")))
        .collect()
}

fn listed(env: &Env) -> Vec<String> {
    let v = env.json(&["repo", "list", "--json"]);
    v["repos"].as_array().unwrap().iter().map(|r| r["path"].as_str().unwrap().to_string()).collect()
}

/// An empty `state/registry.json` (a crash or a full disk) made `docdex index` and `docdex repo
/// list` fail ("corrupt state file ... EOF"), naming no way out. It is now kept aside, rebuilt
/// from the repositories' state (counts included) with a warning saying so, and the commands
/// work; a repository forgotten with `repo remove` stays forgotten; a deleted registry is
/// rebuilt the same way.
#[test]
fn a_damaged_registry_is_kept_aside_and_rebuilt_from_the_repositories_state() {
    let env = Env::new();
    let (a, b) = (env.repo("a"), env.repo("b"));
    write(&a, "a.rs", "fn alpha() {}\n");
    write(&b, "b.rs", "fn beta() {}\n");
    let (sa, sb) = (a.to_str().unwrap(), b.to_str().unwrap());
    let first = env.run(&["index", "--repo", sa, "--json"]);
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(first.status.success() && !stderr.contains("registry"), "a fresh home rebuilds nothing: {stderr}");
    env.json(&["index", "--repo", sb, "--json"]);
    assert!(env.run(&["repo", "remove", sb]).status.success(), "forgotten, its index kept");
    let registry = env.home().join("state/registry.json");
    std::fs::write(&registry, b"").unwrap();

    let out = env.run(&["repo", "list", "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("damaged") && stderr.contains("rebuilt") && stderr.contains("registry.json"), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let repos = v["repos"].as_array().unwrap();
    assert_eq!(repos.len(), 1, "the forgotten repository stays forgotten: {v}");
    assert!(repos[0]["path"].as_str().unwrap().ends_with("/a"), "{v}");
    assert_eq!(repos[0]["files"], 1, "{v}");
    assert!(repos[0]["last_indexed_ms"].is_u64(), "{v}");
    let kept = damaged_registries(&env);
    assert_eq!(kept.len(), 1, "the damaged file is kept: {kept:?}");
    assert_eq!(std::fs::metadata(&kept[0]).unwrap().len(), 0);

    // `index`, the natural first move, works on a damaged registry too.
    std::fs::write(&registry, b"{\"schema_version\": 1, \"repos\": [").unwrap();
    let out = env.run(&["index", "--repo", sa, "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(damaged_registries(&env).len(), 2);
    assert_eq!(listed(&env).len(), 1);
    let check = env.run(&["check", "--json"]);
    assert!(!String::from_utf8_lossy(&check.stdout).contains("corrupt state"), "{check:?}");

    // Deleted: rebuilt from the state; `b` indexed again is listed again.
    std::fs::remove_file(&registry).unwrap();
    env.json(&["index", "--repo", sb, "--json"]);
    std::fs::remove_file(&registry).unwrap();
    let paths = listed(&env);
    assert_eq!(paths.len(), 2, "{paths:?}");
    let search = env.run(&["search", "--repo", sa, "alpha", "--json"]);
    assert!(String::from_utf8_lossy(&search.stdout).contains("a.rs"), "{search:?}");
}

/// The live generation's `meta.json`, `manifest.json` and `impact_graph.json`.
fn bookkeeping(env: &Env, repo: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let data = env.engine().resolve_repo(repo).unwrap().data_dir();
    (data.join("index/meta.json"), data.join("manifest.json"), data.join("impact_graph.json"))
}

fn status(env: &Env, repo: &Path) -> serde_json::Value {
    env.json(&["status", "--repo", repo.to_str().unwrap(), "--json"])
}

fn memories(env: &Env, repo: &Path) -> String {
    let out = env.run(&["memory", "list", "--repo", repo.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Tour 26 F1: a `meta.json` removed, emptied or overwritten by hand was "not indexed yet; run
/// `docdex index`" for search while status said ready with every file; removed, `docdex index`
/// then built a first index in place beside the orphaned segments.
#[test]
fn a_lost_or_unreadable_meta_json_is_damage_named_with_the_repair() {
    let env = Env::new();
    let repo = repo_with_files(&env);
    let r = repo.to_str().unwrap();
    env.run(&["memory", "store", "--repo", r, "the zebra note stays"]);
    let (meta, _, _) = bookkeeping(&env, &repo);
    for how in ["removed", "emptied", "overwritten"] {
        match how {
            "removed" => std::fs::remove_file(&meta).unwrap(),
            "emptied" => std::fs::write(&meta, b"").unwrap(),
            _ => std::fs::write(&meta, [0x9c; 300]).unwrap(),
        }
        let out = search(&env, &repo, "zebra150");
        assert_damaged(&out);
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("meta.json"),
            "{how}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let st = status(&env, &repo);
        assert_eq!(st["index_state"], "error", "{how}: {st}");
        assert!(st["warnings"].to_string().contains("--repair"), "{how}: {st}");
        let summary = env.json(&["index", "--repo", r, "--repair", "--json"]);
        assert_eq!(summary["rebuilt"], true, "{how}: {summary}");
        assert_searchable(&env, &repo);
        assert_eq!(status(&env, &repo)["documents"], 300, "{how}");
        assert!(memories(&env, &repo).contains("the zebra note stays"), "{how}");
    }
}

/// Tour 26 F2: the manifest removed made status say "not indexed yet" while search answered;
/// emptied, status said ready with 0 files. Both are damage, named with the repair.
#[test]
fn a_lost_or_unreadable_manifest_is_reported_by_status_and_repaired() {
    let env = Env::new();
    let repo = repo_with_files(&env);
    let r = repo.to_str().unwrap();
    let (_, manifest, _) = bookkeeping(&env, &repo);
    for (how, removed) in [("removed", true), ("emptied", false)] {
        if removed {
            std::fs::remove_file(&manifest).unwrap();
        } else {
            std::fs::write(&manifest, b"").unwrap();
        }
        let st = status(&env, &repo);
        assert_eq!(st["index_state"], "error", "{how}: {st}");
        let warnings = st["warnings"].to_string();
        assert!(warnings.contains("manifest.json") && warnings.contains("--repair"), "{how}: {st}");
        env.json(&["index", "--repo", r, "--repair", "--json"]);
        assert_searchable(&env, &repo);
        assert_eq!(status(&env, &repo)["documents"], 300, "{how}");
    }
}

/// Tour 26 F3: an `impact_graph.json` that is not JSON made `impact` say "run `docdex index` to
/// rebuild the impact graph", and `docdex index` (even `--repair`) found nothing to do.
#[test]
fn an_unreadable_impact_graph_is_rebuilt_by_the_next_index_run() {
    let env = Env::new();
    let repo = env.repo("g");
    write(&repo, "a.py", "import b\n\ndef fa():\n    return b.fb()\n");
    write(&repo, "b.py", "def fb():\n    return 1\n");
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    let (_, _, graph) = bookkeeping(&env, &repo);
    std::fs::write(&graph, &b"{\"schema\": {\"name\": \"docdex.impact"[..]).unwrap();
    let out = env.run(&["impact", "--repo", r, "b.py", "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("impact_graph.json") && stderr.contains("graph rebuild"),
        "{stderr}"
    );
    env.json(&["index", "--repo", r, "--json"]);
    let impact = env.json(&["impact", "--repo", r, "b.py", "--json"]);
    assert!(impact.to_string().contains("a.py"), "{impact}");
}

/// Tour 26 F5: a `symbols.db` overwritten or emptied left status "ready" with no warning, while
/// symbol lookups said an index run was extracting them; they now refuse in status's words,
/// naming the file and the run that rebuilds it.
#[test]
fn a_damaged_symbol_store_is_named_by_status_until_the_next_run_rebuilds_it() {
    let env = Env::new();
    let repo = repo_with_files(&env);
    let r = repo.to_str().unwrap();
    let db = env.engine().resolve_repo(&repo).unwrap().data_dir().join("symbols.db");
    for (how, bytes) in [("overwritten", vec![0x5a_u8; 8192]), ("emptied", Vec::new())] {
        std::fs::write(&db, &bytes).unwrap();
        let warnings = status(&env, &repo)["warnings"].to_string();
        assert!(warnings.contains("symbol store is damaged") && warnings.contains("symbols.db"), "{how}: {warnings}");
        for query in [
            &["symbols", "--repo", r, "func_150"][..],
            &["ast", "query", "--repo", r, "--kinds", "function_definition"],
        ] {
            let out = env.run(query);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(3), "{how} {query:?}: {err}");
            assert!(
                err.contains("the symbol store is damaged")
                    && err.contains("symbols.db")
                    && err.contains("docdex index --repo"),
                "{how} {query:?}: {err}"
            );
            assert!(!err.contains("extracting them"), "{how} {query:?}: {err}");
        }
        env.json(&["index", "--repo", r, "--json"]);
        let warnings = status(&env, &repo)["warnings"].to_string();
        assert!(!warnings.contains("symbol store"), "{how}: {warnings}");
        let found = env.json(&["symbols", "--repo", r, "func_150", "--json"]);
        assert!(found.to_string().contains("f150.py"), "{how}: {found}");
    }
}
