//! Symbols, AST queries, parser drift, incremental updates, crash repair, symbol-aligned
//! chunks and symbol ranking, against real `symbols.db` files and the real binary.

use crate::util::{eventually, quiet, write, Env, Watcher};
use docdex::engine::code::store::db_path;
use docdex::engine::protocol::{
    AstMode, AstQueryRequest, AstSearchRequest, IndexSummary, SearchRequest, SymbolsRequest,
};
use docdex::engine::IndexOptions;
use docdex::{Engine, Error};
use std::path::{Path, PathBuf};

fn index(engine: &Engine, repo: &Path) -> IndexSummary {
    engine.index(repo, &IndexOptions::default(), &quiet()).expect("index")
}

fn outline(engine: &Engine, repo: &Path, file: &str) -> String {
    let req = SymbolsRequest { file: Some(file.into()), ..Default::default() };
    let resp = engine.symbols(repo, &req).unwrap_or_else(|e| panic!("outline of {file}: {e}"));
    let mut out = String::new();
    for h in resp.results {
        out.push_str(&"  ".repeat(h.depth as usize));
        out.push_str(&format!("{} {} {}-{}", h.kind.name(), h.name, h.line_start, h.line_end));
        if let Some(c) = &h.container {
            out.push_str(&format!(" in {c}"));
        }
        out.push('\n');
    }
    out
}

fn names(engine: &Engine, repo: &Path, query: &str) -> Vec<(String, String)> {
    let req = SymbolsRequest { query: Some(query.into()), limit: Some(50), ..Default::default() };
    engine.symbols(repo, &req).expect("symbols").results.into_iter().map(|h| (h.name, h.path)).collect()
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("read fixtures") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/symbols")
}

/// Sets a value in the store's meta table, as another build (or a crash) would have left it.
fn set_meta(engine: &Engine, repo: &Path, key: &str, value: &str) {
    let r = engine.resolve_repo(repo).unwrap();
    let conn = rusqlite::Connection::open(db_path(&r)).unwrap();
    conn.execute("INSERT OR REPLACE INTO meta VALUES(?1, ?2)", [key, value]).unwrap();
}

#[test]
fn golden_symbols_for_every_grammar() {
    let env = Env::new();
    let repo = env.repo("fixtures");
    copy_dir(&fixtures(), &repo);
    let engine = env.engine();
    let s = index(&engine, &repo);
    let code = s.code.expect("code pass ran");
    assert_eq!(code.files_parsed, 17, "{code:?}");
    assert_eq!(code.files_with_parse_errors, 0, "fixtures parse cleanly: {code:?}");
    assert_eq!(code.languages.len(), 16, "every grammar used: {:?}", code.languages.keys());
    let update = std::env::var_os("DOCDEX_UPDATE_GOLDENS").is_some();
    let mut failures = Vec::new();
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in std::fs::read_dir(fixtures()).unwrap() {
        let dir = dir.unwrap().path();
        if dir.is_dir() {
            for f in std::fs::read_dir(&dir).unwrap() {
                let f = f.unwrap().path();
                if f.extension().is_some_and(|e| e != "symbols") {
                    files.push(f);
                }
            }
        }
    }
    files.sort();
    assert_eq!(files.len(), 17);
    for f in files {
        let rel = f.strip_prefix(fixtures()).unwrap().to_string_lossy().replace('\\', "/");
        let actual = outline(&engine, &repo, &rel);
        let golden_path = PathBuf::from(format!("{}.symbols", f.display()));
        if update {
            std::fs::write(&golden_path, &actual).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&golden_path).unwrap_or_default();
        if actual != expected {
            failures.push(format!("--- {rel}: expected\n{expected}--- actual\n{actual}"));
        }
    }
    assert!(failures.is_empty(), "golden mismatch (DOCDEX_UPDATE_GOLDENS=1 rewrites):\n{}", failures.join("\n"));
}

/// Every code file under `dir`, repo-relative, sorted.
fn code_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read_dir") {
            let p = entry.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if docdex::engine::code::Lang::from_path(&p).is_some() {
                out.push(p.strip_prefix(dir).expect("prefix").to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out.sort();
    out
}

/// Goldens over the per-language fixture repositories of `tests/fixtures/code/` (shared with
/// the impact-graph tests): one golden per repository in `tests/fixtures/symbols/code/`,
/// every code file's outline under a `== path` header.
#[test]
fn golden_symbols_for_the_code_fixture_repos() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/code");
    let goldens = fixtures().join("code");
    let update = std::env::var_os("DOCDEX_UPDATE_GOLDENS").is_some();
    let env = Env::new();
    let engine = env.engine();
    let mut failures = Vec::new();
    let mut langs = std::collections::BTreeSet::new();
    let mut dirs: Vec<PathBuf> =
        std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let repo = env.repo(&format!("code-{name}"));
        copy_dir(&dir, &repo);
        let s = index(&engine, &repo);
        let code = s.code.expect("code pass");
        assert_eq!(code.files_with_parse_errors, 0, "{name}: {code:?}");
        langs.extend(code.languages.keys().cloned());
        let mut actual = String::new();
        for rel in code_files(&dir) {
            actual.push_str(&format!("== {rel}\n{}", outline(&engine, &repo, &rel)));
        }
        let golden = goldens.join(format!("{name}.symbols"));
        if update {
            std::fs::create_dir_all(&goldens).unwrap();
            std::fs::write(&golden, &actual).unwrap();
        } else if std::fs::read_to_string(&golden).unwrap_or_default() != actual {
            failures.push(format!("--- {name}: expected {}\n--- actual\n{actual}", golden.display()));
        }
    }
    assert_eq!(langs.len(), 16, "every grammar is covered by a fixture repo: {langs:?}");
    assert!(failures.is_empty(), "golden mismatch (DOCDEX_UPDATE_GOLDENS=1 rewrites):\n{}", failures.join("\n"));
}

#[test]
fn signatures_and_containers_read_like_the_source() {
    let env = Env::new();
    let repo = env.repo("fixtures");
    copy_dir(&fixtures(), &repo);
    let engine = env.engine();
    index(&engine, &repo);
    let find = |query: &str, path: &str| {
        let req = SymbolsRequest { query: Some(query.into()), file: Some(path.into()), ..Default::default() };
        engine.symbols(&repo, &req).unwrap().results.into_iter().next().unwrap_or_else(|| panic!("{query} in {path}"))
    };
    let f = find("parse_config", "python/store.py");
    assert_eq!(f.signature, "def parse_config(path, *, strict=False) -> dict");
    assert_eq!((f.line_start, f.line_end), (5, 10), "decorators belong to the definition");
    let m = find("fmt", "rust/lib.rs");
    assert_eq!(m.container.as_deref(), Some("Color"), "methods of `impl Display for Color` belong to Color");
    assert_eq!(m.signature, "fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result");
    let g = find("Size", "go/store.go");
    assert_eq!(g.container.as_deref(), Some("Store"), "Go methods belong to their receiver type");
    let c = find("size", "cpp/store.cpp");
    assert_eq!(c.container.as_deref(), Some("Store"));
    let lua = find("size", "lua/store.lua");
    assert_eq!((lua.kind.name(), lua.container.as_deref()), ("method", Some("M")));
    assert_eq!(find("Store", "go/store.go").signature, "type Store struct");
}

#[test]
fn name_search_ranks_exact_then_prefix_then_word_part_then_fuzzy() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "src/session.py", "class SessionStore:\n    pass\n\ndef session_store_factory():\n    pass\n\ndef open_session():\n    pass\n\nclass StoreOfSessions:\n    pass\n");
    write(&repo, "tests/test_session.py", "def test_session_store():\n    pass\n");
    let engine = env.engine();
    index(&engine, &repo);
    let req = |q: &str| SymbolsRequest { query: Some(q.into()), ..Default::default() };
    let r = engine.symbols(&repo, &req("session store")).unwrap();
    let got: Vec<(&str, String)> = r
        .results
        .iter()
        .map(|h| (h.name.as_str(), serde_json::to_value(h.match_kind).unwrap().as_str().unwrap_or("").to_string()))
        .collect();
    assert_eq!(
        got,
        [
            ("SessionStore", "exact".to_string()),
            ("session_store_factory", "prefix".to_string()),
            // Equal matches: source before tests.
            ("StoreOfSessions", "word_part".to_string()),
            ("test_session_store", "word_part".to_string()),
        ]
    );
    // Typos and abbreviations still find it, after everything closer.
    let typo = engine.symbols(&repo, &req("sesion_stor")).unwrap();
    assert_eq!(typo.results[0].name, "SessionStore");
    assert_eq!(serde_json::to_value(typo.results[0].match_kind).unwrap(), "fuzzy");
    // Kind filter.
    let classes = SymbolsRequest { kind: Some("class".into()), ..req("sess") };
    let got: Vec<String> = engine.symbols(&repo, &classes).unwrap().results.into_iter().map(|h| h.name).collect();
    assert_eq!(got, ["SessionStore", "StoreOfSessions"]);
    // Unknown kinds are refused.
    let bad = SymbolsRequest { kind: Some("gizmo".into()), ..req("x") };
    assert!(matches!(engine.symbols(&repo, &bad), Err(Error::BadRequest(_))));
}

#[test]
fn edits_deletes_and_renames_keep_symbols_in_step() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "a.py", "def alpha_one():\n    pass\n");
    write(&repo, "b.rs", "pub fn beta_one() {}\n");
    write(&repo, "c.go", "package c\n\nfunc GammaOne() {}\n");
    let engine = env.engine();
    let first = index(&engine, &repo);
    assert_eq!(first.code.as_ref().unwrap().files_parsed, 3);

    std::thread::sleep(std::time::Duration::from_millis(20));
    write(&repo, "a.py", "def alpha_two():\n    pass\n");
    std::fs::remove_file(repo.join("b.rs")).unwrap();
    std::fs::rename(repo.join("c.go"), repo.join("moved.go")).unwrap();
    let s = index(&engine, &repo);
    let code = s.code.unwrap();
    assert_eq!((code.files_parsed, code.files_removed), (2, 2), "{code:?}");

    assert!(names(&engine, &repo, "alpha_one").iter().all(|(n, _)| n != "alpha_one"));
    assert_eq!(names(&engine, &repo, "alpha_two")[0], ("alpha_two".to_string(), "a.py".to_string()));
    assert!(names(&engine, &repo, "beta_one").is_empty(), "deleted file's symbols are gone");
    assert_eq!(names(&engine, &repo, "GammaOne"), [("GammaOne".to_string(), "moved.go".to_string())]);
    let status = engine.symbols_status(&repo).unwrap();
    assert_eq!((status.files, status.symbols, status.state.as_str()), (2, 2, "ready"));

    // Nothing changed: nothing parsed, the impact graph is not rebuilt.
    let again = index(&engine, &repo).code.unwrap();
    assert_eq!((again.files_parsed, again.graph_seconds), (0, None));
}

#[test]
fn impact_graph_rebuilds_only_when_code_files_their_imports_or_resolver_files_change() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "a.py", "def a():\n    pass\n");
    let engine = env.engine();
    assert!(index(&engine, &repo).code.unwrap().graph_seconds.is_some(), "first index builds the graph");
    std::thread::sleep(std::time::Duration::from_millis(20));
    // A body edit keeps the imports as they were.
    write(&repo, "a.py", "def a():\n    return 1\n");
    let body = index(&engine, &repo).code.unwrap();
    assert_eq!((body.files_parsed, body.graph_seconds), (1, None));
    // A non-code file changes nothing for the graph.
    write(&repo, "notes.md", "# notes\n");
    assert_eq!(index(&engine, &repo).code.unwrap().graph_seconds, None);
    // A new code file does.
    write(&repo, "b.py", "def b():\n    pass\n");
    assert!(index(&engine, &repo).code.unwrap().graph_seconds.is_some());
    // So does a file import resolution reads.
    write(&repo, "pyproject.toml", "[project]\nname = \"r\"\n");
    assert!(index(&engine, &repo).code.unwrap().graph_seconds.is_some());
    assert_eq!(index(&engine, &repo).code.unwrap().graph_seconds, None, "and nothing changed since");
}

#[test]
fn parser_drift_blocks_queries_until_reindex_then_reextracts_the_language() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "a.py", "def drift_probe():\n    pass\n");
    write(&repo, "b.py", "class Other:\n    pass\n");
    write(&repo, "c.rs", "fn untouched() {}\n");
    let engine = env.engine();
    index(&engine, &repo);
    // As if these symbols were extracted by an older python grammar.
    set_meta(&engine, &repo, "grammar:python", "tree-sitter-python 0.0.1");

    let err = engine.symbols(&repo, &SymbolsRequest { query: Some("drift".into()), ..Default::default() }).unwrap_err();
    assert!(matches!(err, Error::StaleIndex(_)), "{err}");
    assert_eq!(err.code(), "stale_index");
    let msg = err.to_string();
    assert!(
        msg.contains("symbols_reindex_required") && msg.contains("python") && msg.contains("docdex index"),
        "{msg}"
    );
    let ast =
        engine.ast_search(&repo, &AstSearchRequest { kinds: vec!["function_definition".into()], ..Default::default() });
    assert!(matches!(ast, Err(Error::StaleIndex(_))));

    let status = engine.symbols_status(&repo).unwrap();
    assert!(status.symbols_reindex_required);
    assert_eq!(status.state, "reindex_required");
    let py = status.languages.iter().find(|l| l.lang == "python").unwrap();
    assert!(py.drifted);
    assert_eq!(py.stored_grammar_version.as_deref(), Some("tree-sitter-python 0.0.1"));
    assert!(!status.languages.iter().find(|l| l.lang == "rust").unwrap().drifted);

    // The CLI says so too, with the re-index exit code.
    let r = repo.to_str().unwrap();
    let out = env.run(&["symbols", "--repo", r, "drift"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("docdex index"));
    let v = env.json(&["symbols-status", "--repo", r, "--json"]);
    assert_eq!(v["symbols_reindex_required"], true);
    // `docdex check --repo` warns, says why, and names the command that repairs it.
    let v = env.json(&["check", "--repo", r, "--json"]);
    let item = v["items"].as_array().unwrap().iter().find(|i| i["name"] == "repo_symbols").expect("repo_symbols");
    assert_eq!(item["status"], "warn", "{item}");
    assert!(item["message"].as_str().unwrap().contains("python"), "{item}");
    assert!(item["hint"].as_str().unwrap().contains("docdex index"), "{item}");

    // Nothing changed on disk, yet the next index re-extracts exactly the python files.
    let s = index(&engine, &repo);
    let code = s.code.unwrap();
    assert_eq!(code.files_repaired, 2, "{code:?}");
    assert_eq!(code.drift_repaired, ["python"]);
    assert_eq!(s.updated + s.added, 0, "the text index was not touched");
    let status = engine.symbols_status(&repo).unwrap();
    assert_eq!((status.state.as_str(), status.symbols_reindex_required), ("ready", false));
    assert_eq!(names(&engine, &repo, "drift_probe")[0].0, "drift_probe");
}

#[test]
fn a_lost_or_lagging_store_is_rebuilt_by_the_next_run() {
    let env = Env::new();
    let repo = env.repo("r");
    for i in 0..5 {
        write(&repo, &format!("m{i}.rs"), format!("pub fn lost_{i}() {{}}\n"));
    }
    let engine = env.engine();
    index(&engine, &repo);
    let r = engine.resolve_repo(&repo).unwrap();

    // Lagging: the last commit of the store did not happen (killed between the two commits).
    set_meta(&engine, &repo, "generation", "0");
    assert_eq!(engine.symbols_status(&repo).unwrap().state, "lagging");
    let exact = |n: &str| names(&engine, &repo, n).iter().filter(|(name, _)| name == n).count();
    assert_eq!(exact("lost_3"), 1, "a lagging store still answers");
    let s = index(&engine, &repo);
    assert_eq!(s.code.unwrap().files_repaired, 0, "nothing differed");
    assert_eq!(engine.symbols_status(&repo).unwrap().state, "ready");

    // Lost: the file is deleted.
    std::fs::remove_file(db_path(&r)).unwrap();
    let err = engine.symbols(&repo, &SymbolsRequest { query: Some("lost".into()), ..Default::default() });
    assert!(matches!(err, Err(Error::StaleIndex(_))), "{err:?}");
    let s = index(&engine, &repo);
    assert_eq!(s.code.unwrap().files_repaired, 5);
    assert_eq!(exact("lost_3"), 1);

    // Corrupt: garbage in place of the database.
    std::fs::write(db_path(&r), b"this is not a database").unwrap();
    let _ = std::fs::remove_file(format!("{}-wal", db_path(&r).display()));
    let _ = std::fs::remove_file(format!("{}-shm", db_path(&r).display()));
    let s = index(&engine, &repo);
    assert_eq!(s.code.unwrap().files_repaired, 5);
    assert_eq!(engine.symbols_status(&repo).unwrap().symbols, 5);
}

#[test]
fn kill_during_index_leaves_a_usable_store_and_the_next_run_completes_it() {
    let env = Env::new();
    let repo = env.repo("big");
    write(&repo, "first.py", "def original_marmot():\n    pass\n");
    let r = repo.to_str().unwrap();
    assert!(env.run(&["index", "--repo", r, "--quiet"]).status.success());
    let body: String = (0..40).map(|i| format!("def generated_function_{i}(x):\n    return x * {i}\n\n")).collect();
    for i in 0..2000 {
        write(&repo, &format!("gen/m{i:04}.py"), &body);
    }
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_docdex"))
        .args(["index", "--repo", r, "--quiet"])
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
    child.kill().unwrap();
    child.wait().unwrap();

    // The previous generation's symbols answer.
    assert_eq!(names(&engine, &repo, "original_marmot").len(), 1);
    let s = index(&engine, &repo);
    assert_eq!(s.files, 2001);
    let status = engine.symbols_status(&repo).unwrap();
    assert_eq!((status.state.as_str(), status.files, status.symbols), ("ready", 2001, 2000 * 40 + 1));
}

#[test]
fn ast_search_and_query_count_node_kinds_with_samples() {
    let env = Env::new();
    let repo = env.repo("r");
    write(
        &repo,
        "src/a.py",
        "def one():\n    pass\n\ndef two():\n    pass\n\nclass K:\n    def three(self):\n        pass\n",
    );
    write(&repo, "src/b.py", "class Only:\n    pass\n");
    write(&repo, "lib/c.rs", "fn four() {}\n");
    write(&repo, "broken.py", "x = = 1\n");
    let engine = env.engine();
    index(&engine, &repo);

    let search = |kinds: &[&str], mode| {
        let req = AstSearchRequest { kinds: kinds.iter().map(|k| k.to_string()).collect(), mode, ..Default::default() };
        engine.ast_search(&repo, &req).unwrap()
    };
    let any = search(&["function_definition", "function_item"], AstMode::Any);
    let files: Vec<(&str, u32)> = any.results.iter().map(|f| (f.path.as_str(), f.total)).collect();
    assert_eq!(files, [("src/a.py", 3), ("lib/c.rs", 1)]);
    let all = search(&["function_definition", "class_definition"], AstMode::All);
    assert_eq!(all.results.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), ["src/a.py"]);
    assert_eq!(all.results[0].counts["class_definition"], 1);
    // Syntax errors are findable.
    let errors = search(&["ERROR"], AstMode::Any);
    assert_eq!(errors.results.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), ["broken.py"]);
    // A typo in a kind is refused with suggestions.
    let bad =
        engine.ast_search(&repo, &AstSearchRequest { kinds: vec!["function_defnition".into()], ..Default::default() });
    assert!(matches!(bad, Err(Error::BadRequest(m)) if m.contains("unknown node kind")));

    let q = AstQueryRequest {
        kinds: vec!["function_definition".into()],
        path_prefix: Some("src/".into()),
        sample_limit: Some(2),
        ..Default::default()
    };
    let r = engine.ast_query(&repo, &q).unwrap();
    assert_eq!((r.total_files, r.total_matches), (1, 3));
    let samples: Vec<(u32, u32, &str)> =
        r.results[0].samples.iter().map(|s| (s.line_start, s.line_end, s.text.as_str())).collect();
    assert_eq!(samples, [(1, 2, "def one():"), (4, 5, "def two():")]);

    let named = AstQueryRequest { name: Some("three".into()), ..q };
    let r = engine.ast_query(&repo, &named).unwrap();
    assert_eq!(r.total_matches, 1);
    let s = &r.results[0].samples[0];
    assert_eq!((s.line_start, s.name.as_deref(), s.text.as_str()), (8, Some("three"), "def three(self):"));
}

#[test]
fn ast_query_field_filter_finds_nodes_by_the_field_they_fill() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "a.py", "def one(a, b):\n    return a\n\nclass K:\n    def three(self):\n        pass\n");
    write(&repo, "c.rs", "fn four(x: i32) -> i32 {\n    x\n}\n");
    write(&repo, "d.py", "value = 1\n");
    let engine = env.engine();
    index(&engine, &repo);
    let query = |kinds: &[&str], field: &str, name: Option<&str>| {
        let req = AstQueryRequest {
            kinds: kinds.iter().map(|k| k.to_string()).collect(),
            field: Some(field.into()),
            name: name.map(String::from),
            ..Default::default()
        };
        engine.ast_query(&repo, &req)
    };
    // Identifiers that name a declaration, not parameters or uses.
    let r = query(&["identifier"], "name", None).unwrap();
    assert_eq!(r.field.as_deref(), Some("name"));
    type Labels<'a> = Vec<(u32, Option<&'a str>)>;
    let got: Vec<(&str, Labels)> = r
        .results
        .iter()
        .map(|f| (f.path.as_str(), f.samples.iter().map(|s| (s.line_start, s.name.as_deref())).collect()))
        .collect();
    assert_eq!(
        got,
        [("a.py", vec![(1, Some("one")), (4, Some("K")), (5, Some("three"))]), ("c.rs", vec![(1, Some("four"))])]
    );
    // The text starts at the node (the identifier), as a sample's column says.
    assert_eq!((r.results[0].samples[2].column, r.results[0].samples[2].text.as_str()), (Some(9), "def three(self):"));
    // With a name, only that node.
    let r = query(&["identifier"], "name", Some("THREE")).unwrap();
    assert_eq!((r.total_files, r.total_matches), (1, 1));
    // Bodies: three Python blocks and one Rust block; the assignment file has none.
    let r = query(&["block"], "body", None).unwrap();
    let counts: Vec<(&str, u32)> = r.results.iter().map(|f| (f.path.as_str(), f.total)).collect();
    assert_eq!(counts, [("a.py", 3), ("c.rs", 1)]);
    // A field no grammar has is refused with suggestions.
    let bad = query(&["identifier"], "nmae", None);
    assert!(matches!(&bad, Err(Error::BadRequest(m)) if m.contains("unknown field")), "{bad:?}");
    let close = query(&["identifier"], "return", None);
    assert!(matches!(&close, Err(Error::BadRequest(m)) if m.contains("return_type")), "{close:?}");
}

#[test]
fn code_chunks_follow_symbol_boundaries_and_pieces_carry_their_signature() {
    let env = Env::new();
    let repo = env.repo("r");
    // A module of small functions, then a class too large for one chunk.
    let mut src = String::new();
    for i in 0..6 {
        src.push_str(&format!("def helper_{i}(x):\n"));
        for j in 0..20 {
            src.push_str(&format!("    y{j} = x + {j}\n"));
        }
        src.push_str("    return x\n\n");
    }
    let class_line = src.lines().count() + 1;
    src.push_str("class Enormous:\n    \"\"\"A class too large for one chunk.\"\"\"\n\n");
    for m in 0..8 {
        src.push_str(&format!("    def method_{m}(self):\n"));
        for j in 0..25 {
            src.push_str(&format!("        v{j} = {j}\n"));
        }
        src.push_str(if m == 6 { "        return pangolin_marker\n\n" } else { "        return None\n\n" });
    }
    write(&repo, "big.py", &src);
    let engine = env.engine();
    index(&engine, &repo);

    // Every small function is whole in the chunk that finds it.
    for i in 0..6 {
        let start = 1 + i * 23;
        let req = SearchRequest { query: format!("helper_{i}"), limit: Some(1), ..Default::default() };
        let hit = engine.search(&repo, &req).unwrap().results.remove(0);
        assert!(hit.line_start <= start as u32 && hit.line_end >= start as u32 + 21, "helper_{i}: {hit:?}");
    }
    // A method deep in the class: its chunk starts at a method and carries the class line.
    let req = SearchRequest { query: "pangolin_marker".into(), limit: Some(1), ..Default::default() };
    let hit = engine.search(&repo, &req).unwrap().results.remove(0);
    let lines: Vec<&str> = src.lines().collect();
    assert!(lines[hit.line_start as usize - 1].trim_start().starts_with("def method_"), "{hit:?}");
    assert_eq!(hit.context.len(), 1, "{hit:?}");
    assert_eq!((hit.context[0].line, hit.context[0].text.as_str()), (class_line as u32, "class Enormous:"));
    // The signature is indexed with the piece: the class name finds the piece.
    let req = SearchRequest { query: "Enormous pangolin_marker".into(), limit: Some(1), ..Default::default() };
    assert_eq!(engine.search(&repo, &req).unwrap().results[0].line_start, hit.line_start);
}

fn symbol_ranking_repo(env: &Env) -> PathBuf {
    let repo = env.repo("rank");
    // The definition mentions its name once in a long class; short files use it several times,
    // so plain BM25 prefers the uses.
    let mut ledger = String::from("class LedgerBalance:\n    \"\"\"Running totals per account.\"\"\"\n\n");
    for m in 0..10 {
        ledger.push_str(&format!(
            "    def step_{m}(self, amount):\n        self.total += amount * {m}\n        return self.total\n\n"
        ));
    }
    write(&repo, "src/accounts.py", ledger);
    for i in 0..20 {
        write(&repo, &format!("src/other_{i}.py"), format!("def unrelated_{i}(x):\n    return x + {i}\n"));
    }
    for i in 0..6 {
        write(
            &repo,
            &format!("src/use_{i}.py"),
            "from ledger import LedgerBalance\n\nopening = LedgerBalance()\nclosing = LedgerBalance()\n",
        );
    }
    repo
}

#[test]
fn a_query_naming_a_symbol_ranks_its_definition_first() {
    let env = Env::new();
    let repo = symbol_ranking_repo(&env);
    let engine = env.engine();
    index(&engine, &repo);
    for query in ["LedgerBalance", "ledger balance", "ledger_balance"] {
        let req = SearchRequest { query: query.into(), ..Default::default() };
        let top = &engine.search(&repo, &req).unwrap().results[0];
        assert_eq!((top.path.as_str(), top.line_start), ("src/accounts.py", 1), "query {query:?}");
    }
}

#[test]
fn symbol_ranking_can_be_turned_off() {
    let env = Env::new();
    let repo = symbol_ranking_repo(&env);
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(
        env.home().join("config.toml"),
        "[search]\nsymbol_ranking_enabled = false\nast_ranking_enabled = false\n",
    )
    .unwrap();
    let engine = env.engine();
    assert!(!engine.config().search.symbol_ranking_enabled);
    index(&engine, &repo);
    let req = SearchRequest { query: "LedgerBalance".into(), ..Default::default() };
    let top = &engine.search(&repo, &req).unwrap().results[0];
    assert_ne!(top.path, "src/accounts.py", "without the signal, the many uses outrank the definition");
    // The chat flags are separate and still on.
    let chat = engine.search(&repo, &SearchRequest { for_chat: true, ..req }).unwrap();
    assert_eq!(chat.results[0].path, "src/accounts.py");
}

#[test]
fn cli_json_contracts_for_symbols_and_ast() {
    let env = Env::new();
    let repo = env.repo("r");
    write(
        &repo,
        "src/store.rs",
        "/// A store.\npub struct Store { ttl: u64 }\n\nimpl Store {\n    pub fn get(&self) -> u64 { self.ttl }\n}\n",
    );
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);

    let v = env.json(&["symbols", "--repo", r, "Store", "--json"]);
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["mode"], "search");
    assert_eq!(v["query"], "Store");
    let hit = &v["results"][0];
    for (k, want) in [("name", "Store"), ("kind", "struct"), ("lang", "rust"), ("path", "src/store.rs")] {
        assert_eq!(hit[k], want, "{k}");
    }
    assert_eq!((hit["line_start"].as_u64(), hit["line_end"].as_u64()), (Some(2), Some(2)));
    assert_eq!(hit["signature"], "pub struct Store");
    assert_eq!(hit["match_kind"], "exact");
    assert!(v["total"].as_u64().unwrap() >= 2 && v["generation"].as_u64().unwrap() >= 1);

    let v = env.json(&["symbols", "--repo", r, "--file", "src/store.rs", "--json"]);
    assert_eq!(v["mode"], "outline");
    let got: Vec<(String, u64, String)> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["name"].as_str().unwrap().into(), h["depth"].as_u64().unwrap(), h["kind"].as_str().unwrap().into()))
        .collect();
    assert_eq!(
        got,
        [
            ("Store".into(), 0, "struct".into()),
            ("ttl".into(), 1, "field".into()),
            ("Store".into(), 0, "impl".into()),
            ("get".into(), 1, "method".into())
        ]
    );
    assert!(v["results"][3]["match_kind"].is_null());

    let v = env.json(&["symbols-status", "--repo", r, "--json"]);
    assert_eq!((v["state"].as_str(), v["files"].as_u64(), v["symbols"].as_u64()), (Some("ready"), Some(1), Some(4)));
    assert_eq!(v["languages"].as_array().unwrap().len(), 16);

    let v = env.json(&["ast", "search", "--repo", r, "--kinds", "impl_item,struct_item", "--mode", "all", "--json"]);
    assert_eq!(v["results"][0]["path"], "src/store.rs");
    assert_eq!(v["results"][0]["counts"]["impl_item"], 1);
    assert_eq!(v["mode"], "all");
    // The human summary says what was found without "0 of 0".
    let human = |kinds: &str| {
        let out = env.run(&["ast", "search", "--repo", r, "--kinds", kinds]);
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(human("ERROR").contains("no file has any of ERROR"));
    assert!(human("impl_item").contains("1 file with any of impl_item"));

    let v = env.json(&["ast", "query", "--repo", r, "--kinds", "function_item", "--name", "get", "--json"]);
    assert_eq!(v["total_matches"], 1);
    assert_eq!(v["results"][0]["samples"][0]["line_start"], 5);
    assert_eq!(v["results"][0]["samples"][0]["text"], "pub fn get(&self) -> u64 { self.ttl }");

    // Bad input: exit 2 with a JSON error; an outline of a file without a grammar says why.
    let out = env.run(&["ast", "search", "--repo", r, "--kinds", "no_such_kind", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let e: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(e["error"]["code"], "bad_request");
    write(&repo, "notes.txt", "plain\n");
    let out = env.run(&["symbols", "--repo", r, "--file", "notes.txt"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("has no symbols"));
    // Human output names the kind, the symbol and where it is.
    let out = env.run(&["symbols", "--repo", r, "get"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("method") && text.contains("Store.get") && text.contains("src/store.rs:5"), "{text}");
}

/// `symbols-status` on a repository never indexed fails as `docdex status` does there (exit 3,
/// naming `docdex index`); it printed a table of zeros and exited 0. `--json` still prints the
/// `not_built` document for scripts, with exit 3; the engine call behind `GET
/// /v1/symbols/status` keeps answering it (`docdex check` reads it as info).
#[test]
fn a_repo_never_indexed_says_what_to_run() {
    let env = Env::new();
    let repo = env.repo("fresh");
    write(&repo, "a.py", "def alpha():\n    pass\n");
    let r = repo.to_str().unwrap();
    let out = env.run(&["symbols", "--repo", r, "anything"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("docdex index --repo"));

    let status = env.run(&["status", "--repo", r]);
    let out = env.run(&["symbols-status", "--repo", r]);
    assert_eq!((out.status.code(), status.status.code()), (Some(3), Some(3)));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is not indexed yet; run `docdex index --repo"), "{stderr}");
    assert_eq!(stderr, String::from_utf8_lossy(&status.stderr), "the same message as docdex status");
    assert!(out.stdout.is_empty(), "no table of zeros: {}", String::from_utf8_lossy(&out.stdout));

    let out = env.run(&["symbols-status", "--repo", r, "--json"]);
    assert_eq!(out.status.code(), Some(3));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document on stdout");
    assert_eq!(v["state"], "not_built");
    assert!(v["messages"].to_string().contains("docdex index --repo"), "{v}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("docdex index --repo"));
    assert_eq!(env.engine().symbols_status(&repo).unwrap().state, "not_built", "GET /v1/symbols/status answers it");

    // Indexed, its symbol store lost: exit 3 as `docdex symbols` there, then fine once re-indexed.
    env.json(&["index", "--repo", r, "--json"]);
    assert_eq!(env.json(&["symbols-status", "--repo", r, "--json"])["state"], "ready");
    let engine = env.engine();
    std::fs::remove_file(db_path(&engine.resolve_repo(&repo).unwrap())).unwrap();
    let out = env.run(&["symbols-status", "--repo", r]);
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no symbols have been extracted") && stderr.contains("docdex index --repo"), "{stderr}");
    env.json(&["index", "--repo", r, "--json"]);
    let out = env.run(&["symbols-status", "--repo", r]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("ready"));
}

/// A one-line (minified) JS file of many functions.
fn minified_js(n: usize) -> String {
    (0..n).map(|i| format!("function f{i}(a,b){{return a+b*{i}}}")).collect()
}

/// The samples' (column, text) of an `ast query` answer's first file, as JSON.
fn sample_columns(v: &serde_json::Value) -> Vec<(u64, String)> {
    v["results"][0]["samples"]
        .as_array()
        .unwrap_or_else(|| panic!("no samples: {v}"))
        .iter()
        .map(|s| (s["column"].as_u64().unwrap_or(0), s["text"].as_str().unwrap_or("").to_string()))
        .collect()
}

/// The samples of a minified file are all on line 1; each shows the text from its own node's
/// column (they all showed the line's start), cut at 160 characters with `…`: stored samples
/// keep the column (store schema 2). The CLI, `POST /v1/ast/query` and the MCP tool answer the
/// same engine call; so does the `--field` query, which parses the file again.
#[tokio::test]
async fn ast_samples_on_one_minified_line_start_at_their_nodes() {
    use crate::server_util::{client, Server};
    let env = Env::new();
    let repo = env.repo("min");
    let line = minified_js(300);
    write(&repo, "dist/app.min.js", &line);
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    let col = |f: &str| line.find(&format!("function {f}(")).unwrap() as u64 + 1;

    let args = ["ast", "query", "--repo", r, "--kinds", "function_declaration", "--json"];
    let cli = env.json(&args);
    assert_eq!(cli["results"][0]["samples"][0]["line_start"], 1);
    let samples = sample_columns(&cli);
    let want: Vec<u64> = ["f0", "f1", "f2"].iter().map(|f| col(f)).collect();
    assert_eq!(samples.iter().map(|(c, _)| *c).collect::<Vec<_>>(), want, "{cli}");
    for (i, (c, text)) in samples.iter().enumerate() {
        let from = &line[*c as usize - 1..];
        assert!(text.starts_with(&format!("function f{i}(a,b)")), "{text}");
        assert_eq!(text.chars().count(), 161, "{text}");
        assert_eq!(*text, format!("{}…", &from[..160]));
    }

    let field = ["ast", "query", "--repo", r, "--kinds", "identifier", "--field", "name", "--sample-limit", "2"];
    let named = sample_columns(&env.json(&[&field[..], &["--json"]].concat()));
    assert_eq!(named.iter().map(|(c, _)| *c).collect::<Vec<_>>(), [col("f0") + 9, col("f1") + 9]);
    assert!(named[0].1.starts_with("f0(a,b){return a+b*0}function f1") && named[1].1.starts_with("f1(a,b)"));
    // The human output shows each node's own text too.
    let human = String::from_utf8_lossy(&env.run(&args[..args.len() - 1]).stdout).into_owned();
    assert!(human.contains("function f1(a,b){return a+b*1}function f2") && human.contains("…"), "{human}");

    let server = Server::start(&env, &["serve", "--repo", r, "--no-watch"], &[]);
    let body = serde_json::json!({"kinds": ["function_declaration"]});
    let resp = client().post(server.url("/v1/ast/query")).json(&body).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let http: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(sample_columns(&http), samples);
    drop(server);

    let mut mcp = crate::util::McpStdio::start(&env, &["--repo", r], serde_json::json!({}));
    let result = mcp.call("docdex_ast_query", serde_json::json!({"kinds": ["function_declaration"]}));
    assert_eq!(result["isError"], false, "{result}");
    let tool: serde_json::Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(sample_columns(&tool), samples);
}

/// A `--name` match has no column (the symbol table records lines), so on a minified line its
/// sample showed the line's start (`function f0(...`) whatever was asked (tour21 F8, the rest):
/// it now starts at the name's first whole-word place (`f1`, not inside `f10`), cut at 160
/// characters like the other samples, with no column claimed; a short line is still whole.
#[test]
fn a_name_matchs_sample_on_a_minified_line_starts_at_the_name() {
    let env = Env::new();
    let repo = env.repo("minname");
    let line = minified_js(300);
    write(&repo, "dist/app.min.js", &line);
    write(&repo, "src/short.js", "function f1(a,b){return a+b}\n");
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    let args = ["ast", "query", "--repo", r, "--kinds", "function_declaration", "--name", "f1"];
    let v = env.json(&[&args[..], &["--json"]].concat());
    let file = |p: &str| {
        let f = v["results"].as_array().unwrap().iter().find(|f| f["path"] == p).cloned();
        serde_json::json!({ "results": [f.unwrap_or_else(|| panic!("no {p} in {v}"))] })
    };
    let min = sample_columns(&file("dist/app.min.js"));
    let from = &line[line.find("function f1(").unwrap() + "function ".len()..];
    assert_eq!(min, [(0, format!("{}…", &from[..160]))], "{v}");
    assert!(min[0].1.starts_with("f1(a,b){return a+b*1}function f2"), "{v}");
    assert_eq!(sample_columns(&file("src/short.js")), [(0, "function f1(a,b){return a+b}".to_string())]);
    let human = String::from_utf8_lossy(&env.run(&args).stdout).into_owned();
    assert!(human.contains("f1(a,b){return a+b*1}function f2") && !human.contains("function f0"), "{human}");
}

/// A store written before samples kept their column (schema 1, `kind:line-end`) is refused by
/// the queries with the command to run, and the next index run rebuilds it whole: every code
/// file parsed again, the samples then with columns.
#[test]
fn a_store_of_the_previous_schema_is_rebuilt_by_the_next_run() {
    let env = Env::new();
    let repo = env.repo("old");
    write(&repo, "app.min.js", minified_js(20));
    write(&repo, "lib.py", "def helper():\n    return 1\n");
    let engine = env.engine();
    index(&engine, &repo);
    let rr = engine.resolve_repo(&repo).unwrap();
    let conn = rusqlite::Connection::open(db_path(&rr)).unwrap();
    conn.execute("UPDATE files SET ast_samples = 'function_declaration:1,1,1' WHERE path = 'app.min.js'", []).unwrap();
    drop(conn);
    set_meta(&engine, &repo, "schema", "1");

    let r = repo.to_str().unwrap();
    let out = env.run(&["ast", "query", "--repo", r, "--kinds", "function_declaration"]);
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("store schema 1, this build reads 2") && stderr.contains("docdex index --repo"),
        "{stderr}"
    );
    assert_eq!(env.json(&["symbols-status", "--repo", r, "--json"])["state"], "reindex_required");

    let s = index(&engine, &repo);
    assert_eq!(s.code.unwrap().files_repaired, 2, "both code files parsed again");
    let req = AstQueryRequest { kinds: vec!["function_declaration".into()], ..Default::default() };
    let a = engine.ast_query(&repo, &req).unwrap();
    let columns: Vec<Option<u32>> = a.results[0].samples.iter().map(|s| s.column).collect();
    assert_eq!(columns, [Some(1), Some(31), Some(61)]);
    assert!(a.results[0].samples[2].text.starts_with("function f2(a,b)"));
    assert_eq!(engine.symbols_status(&repo).unwrap().state, "ready");
    assert_eq!(names(&engine, &repo, "helper").len(), 1);
}

#[test]
fn the_watcher_keeps_symbols_in_step() {
    let env = Env::new();
    let repo = env.repo("w");
    write(&repo, "a.py", "def aardvark():\n    pass\n");
    let engine = env.engine();
    let watcher = Watcher::start(&engine, &repo);
    let has = |name: &str| names(&engine, &repo, name).iter().any(|(n, _)| n == name);
    assert!(has("aardvark"));
    write(&repo, "b.rs", "pub struct Bandicoot;\n");
    eventually("create", || has("Bandicoot"));
    write(&repo, "a.py", "def capybara():\n    pass\n");
    eventually("modify", || has("capybara") && !has("aardvark"));
    std::fs::remove_file(repo.join("b.rs")).unwrap();
    eventually("delete", || !has("Bandicoot"));
    watcher.stop();
    assert_eq!(engine.symbols_status(&repo).unwrap().state, "ready");
}

/// A declaration without a body takes its signature from its own node, not by scanning to the
/// end of its line: on a minified line of many declarations that scan was quadratic (a 1 MB
/// line of 100,000 `int x;` cost 3.4 s to index, the same split into lines 2.1 s; 1.1 s since).
/// The figure is a measurement (docs/CODE_INTEL.md), not a timed assertion: this test holds
/// the result the bounded scan must keep.
#[test]
fn declarations_on_one_minified_line_get_the_signatures_they_get_on_many_lines() {
    use docdex::engine::code::{lang, symbols, Lang};
    let symbols_of = |src: &str| {
        let tree = lang::parse(Lang::C, src).expect("parse");
        symbols::analyze_tree(Lang::C, &tree, src, "min.c").symbols
    };
    let decls: Vec<String> = (0..20_000).map(|i| format!("int x{i};")).collect();
    let many = symbols_of(&decls.join("\n"));
    let one = symbols_of(&decls.join(""));
    assert_eq!(one.len(), 20_000);
    assert_eq!(one[7].signature, "int x7");
    let one: Vec<&str> = one.iter().map(|s| s.signature.as_str()).collect();
    let many: Vec<&str> = many.iter().map(|s| s.signature.as_str()).collect();
    assert_eq!(one, many);
}

#[test]
fn a_class_comes_before_methods_that_share_its_name() {
    // celery: `AsyncResult` the class (celery/result.py) listed after the `AsyncResult`
    // methods that build one (celery/app/base.py), which sort first by path.
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "app/base.py", "class App:\n    def AsyncResult(self, task_id):\n        return 1\n");
    write(&repo, "app/backend.py", "class Backend:\n    def AsyncResult(self, task_id):\n        return 2\n");
    write(&repo, "result.py", "class AsyncResult:\n    def get(self):\n        return 3\n");
    write(&repo, "parse.py", "class Parse:\n    pass\n\ndef parse(text):\n    return text\n");
    let engine = env.engine();
    engine.index(&repo, &Default::default(), &crate::util::quiet()).unwrap();
    let first = |q: &str| {
        let req = docdex::engine::protocol::SymbolsRequest { query: Some(q.into()), ..Default::default() };
        let h = engine.symbols(&repo, &req).unwrap().results.into_iter().next().unwrap();
        (h.path, h.name)
    };
    assert_eq!(first("AsyncResult"), ("result.py".into(), "AsyncResult".into()));
    assert_eq!(first("parse"), ("parse.py".into(), "parse".into()));
    assert_eq!(first("Parse"), ("parse.py".into(), "Parse".into()));
}

/// Name parts are folded as search folds words: `total cafe` finds `café_total`, Greek in
/// capitals without its tonos the accented name, by their words (not as typos, which the fuzzy
/// tier would forgive anyway); a query the folded name starts with or equals is a prefix or an
/// exact match (`cafe` for `café_total`, `café` for `cafe_count`, `uberweisung` for `überweisung`).
#[test]
fn symbol_name_parts_are_accent_folded() {
    let env = Env::new();
    let repo = env.repo("r");
    write(
        &repo,
        "menu.py",
        "def café_total():\n    pass\n\ndef cafe_count():\n    pass\n\ndef überweisung():\n    pass\n\ndef λόγος_μέτρο():\n    pass\n",
    );
    let engine = env.engine();
    index(&engine, &repo);
    let kind = |q: &str, name: &str| -> String {
        let req = SymbolsRequest { query: Some(q.into()), limit: Some(50), ..Default::default() };
        let hits = engine.symbols(&repo, &req).expect("symbols").results;
        let hit = hits.iter().find(|h| h.name == name).unwrap_or_else(|| panic!("{q:?} did not find {name}"));
        serde_json::to_value(hit.match_kind).unwrap().as_str().unwrap_or("").to_string()
    };
    assert_eq!(kind("cafe", "café_total"), "prefix");
    assert_eq!(kind("total cafe", "café_total"), "word_part");
    assert_eq!(kind("café", "cafe_count"), "prefix");
    assert_eq!(kind("uberweisung", "überweisung"), "exact");
    assert_eq!(kind("λογος", "λόγος_μέτρο"), "prefix");
    assert_eq!(kind("ΜΕΤΡΟ", "λόγος_μέτρο"), "word_part");
    // A store built before index schema 10 holds parts as written; an accented query still
    // meets them until the next index run rebuilds it.
    let r = engine.resolve_repo(&repo).unwrap();
    let conn = rusqlite::Connection::open(db_path(&r)).unwrap();
    conn.execute("UPDATE symbols SET parts = ' café total ' WHERE name = 'café_total'", []).unwrap();
    drop(conn);
    assert_eq!(kind("total café", "café_total"), "word_part");
}

/// Exact and prefix matches fold accents as the word-part tier does: `resume` is an exact match
/// for `résumé` (it was a word-part one, below every plain name starting `resume`), `Resume` a
/// prefix of `résumé_pdf`, `ecole` exact for `École` (an accent on the first letter), and an
/// accented query meets the plain name; the name spelled as asked still comes first, and an
/// ASCII query keeps its answers.
#[test]
fn exact_and_prefix_matches_fold_accents() {
    let env = Env::new();
    let repo = env.repo("r");
    write(
        &repo,
        "cv.py",
        "def résumé():\n    pass\n\ndef résumé_pdf():\n    pass\n\n\
         def resume_upload_handler():\n    pass\n\nclass École:\n    pass\n\ndef resume():\n    pass\n",
    );
    let engine = env.engine();
    index(&engine, &repo);
    let hits = |q: &str| -> Vec<(String, String)> {
        let req = SymbolsRequest { query: Some(q.into()), limit: Some(50), ..Default::default() };
        let results = engine.symbols(&repo, &req).expect("symbols").results;
        let kind = |h: &docdex::engine::protocol::SymbolHit| serde_json::to_value(h.match_kind).unwrap();
        results.iter().map(|h| (h.name.clone(), kind(h).as_str().unwrap_or("").to_string())).collect()
    };
    let kind_of = |q: &str, name: &str| -> String {
        let found = hits(q);
        found
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{q:?} did not find {name}: {found:?}"))
            .1
            .clone()
    };
    assert_eq!(kind_of("resume", "résumé"), "exact");
    assert_eq!(kind_of("Resume", "résumé_pdf"), "prefix");
    assert_eq!(kind_of("ecole", "École"), "exact");
    assert_eq!(kind_of("résumé", "resume"), "exact");
    assert_eq!(kind_of("résumé", "resume_upload_handler"), "prefix");
    // Both spellings are exact; the one spelled as asked comes first, and then the prefixes.
    let names: Vec<String> = hits("resume").into_iter().map(|(n, _)| n).collect();
    assert_eq!(names[..2], ["resume".to_string(), "résumé".to_string()], "{names:?}");
    assert_eq!(hits("résumé")[0].0, "résumé");
    let at = |name: &str| names.iter().position(|n| n == name).unwrap();
    assert!(at("résumé") < at("résumé_pdf"), "{names:?}");
}

/// A name with a German umlaut is found by its ae/oe/ue spelling too (`ueber` finds `über_x`), as
/// search finds `Über` by "ueber": from the name's start as a prefix or exact match (`groesse`
/// is a prefix of `größe_berechnen` as `grosse` is, `ueber_x` exactly `über_x`), and by a later
/// word as a word-part match (`x ueber`). The query's own words are taken as typed, so `queue`
/// finds no umlaut name (`qü_y` spells `quey`). A store an older docdex wrote (parts without
/// the spelling) says so in a note, and the next index run respells it without a file changing.
#[test]
fn umlaut_names_are_found_by_their_written_out_spelling() {
    let env = Env::new();
    let repo = env.repo("r");
    write(
        &repo,
        "calc.py",
        "def über_x():\n    pass\n\ndef größe_berechnen():\n    pass\n\ndef queue_len():\n    pass\n\ndef qü_y():\n    pass\n\ndef größe():\n    pass\n",
    );
    let engine = env.engine();
    index(&engine, &repo);
    let ask = |q: &str| {
        let req = SymbolsRequest { query: Some(q.into()), limit: Some(50), ..Default::default() };
        engine.symbols(&repo, &req).expect("symbols")
    };
    let kind = |q: &str, name: &str| -> String {
        let hits = ask(q).results;
        let hit = hits.iter().find(|h| h.name == name).unwrap_or_else(|| panic!("{q:?} did not find {name}"));
        serde_json::to_value(hit.match_kind).unwrap().as_str().unwrap_or("").to_string()
    };
    assert_eq!(kind("ueber", "über_x"), "prefix");
    assert_eq!(kind("ueber_x", "über_x"), "exact");
    assert_eq!(kind("x ueber", "über_x"), "word_part");
    // `uber` is what `über_x` folds to the start of: a prefix match, as `resume` is for `résumé`.
    assert_eq!(kind("uber", "über_x"), "prefix");
    assert_eq!(kind("groesse", "größe"), "exact");
    assert_eq!(kind("grosse", "größe"), "exact");
    assert_eq!(kind("Groesse", "größe_berechnen"), "prefix");
    assert_eq!(kind("groeß", "größe_berechnen"), "prefix");
    assert_eq!(kind("Groesse berechnen", "größe_berechnen"), "exact");
    assert_eq!(kind("berechnen groesse", "größe_berechnen"), "word_part");
    // The exact match comes first, then the longer name the query starts.
    let names: Vec<String> = ask("groesse").results.into_iter().map(|h| h.name).collect();
    assert_eq!(names[..2], ["größe".to_string(), "größe_berechnen".to_string()], "{names:?}");
    for q in ["queue", "queu", "queue_len"] {
        let met: Vec<String> = ask(q).results.into_iter().filter(|h| h.name.contains('ü')).map(|h| h.name).collect();
        assert!(met.is_empty(), "{q} met {met:?}");
    }
    assert!(ask("ueber").note.is_none());

    // An older docdex's store: parts as written, no `parts` version in its meta.
    let r = engine.resolve_repo(&repo).unwrap();
    let conn = rusqlite::Connection::open(db_path(&r)).unwrap();
    conn.execute("UPDATE symbols SET parts = ' uber x ' WHERE name = 'über_x'", []).unwrap();
    conn.execute("DELETE FROM meta WHERE key = 'parts'", []).unwrap();
    drop(conn);
    let old = ask("x ueber");
    let by_word = |h: &docdex::engine::protocol::SymbolHit| serde_json::to_value(h.match_kind).unwrap() == "word_part";
    assert!(old.results.iter().all(|h| h.name != "über_x" || !by_word(h)), "the older store has no spelling");
    let note = old.note.expect("a note on an older store");
    assert!(note.contains("docdex index --repo") && note.contains("ueber"), "{note}");
    assert_eq!(kind("uber", "über_x"), "prefix", "the older store still answers");
    assert_eq!(kind("ueber", "über_x"), "prefix", "the name's start is read from the name, not its parts");
    index(&engine, &repo);
    assert_eq!(kind("x ueber", "über_x"), "word_part");
    assert!(ask("ueber").note.is_none());
}

/// An outline cut at its limit says how many symbols the file holds (it said 1,001 for 20,000
/// definitions, and the text output said "1000 symbols" as if that were all), and a deeply
/// nested one does not indent each line by twice its depth in spaces.
#[test]
fn a_cut_outline_counts_the_whole_file_and_deep_nesting_stays_narrow() {
    let env = Env::new();
    let repo = env.repo("r");
    let many: String = (0..3000).map(|i| format!("def d{i}(): pass\n")).collect();
    write(&repo, "many.py", &many);
    let deep: String =
        (0..40).map(|i| format!("{}def f{i}():\n", " ".repeat(i))).collect::<String>() + &" ".repeat(40) + "pass\n";
    write(&repo, "deep.py", &deep);
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);

    let v = env.json(&["symbols", "--repo", r, "--file", "many.py", "--json"]);
    assert_eq!(
        (v["results"].as_array().unwrap().len(), v["total"].as_u64(), v["truncated"].as_bool()),
        (1000, Some(3000), Some(true))
    );
    let v = env.json(&["symbols", "--repo", r, "--file", "many.py", "--limit", "10", "--json"]);
    assert_eq!((v["results"].as_array().unwrap().len(), v["total"].as_u64()), (10, Some(3000)));
    let v = env.json(&["symbols", "--repo", r, "--file", "deep.py", "--json"]);
    assert_eq!((v["total"].as_u64(), v["truncated"].as_bool()), (Some(40), Some(false)));

    let out = env.run(&["symbols", "--repo", r, "--file", "many.py", "--limit", "10"]);
    let note = String::from_utf8_lossy(&out.stderr);
    assert!(note.contains("10 of 3000 symbols in many.py"), "{note}");
    let out = env.run(&["symbols", "--repo", r, "--file", "deep.py"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last().unwrap_or_default();
    assert!(last.contains("[d39] ") && last.contains("f39") && last.len() < 120, "{last:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("40 symbols in deep.py"));
}

/// Bindings inside a function with no name are locals, not symbols (a tour found eslint's 217
/// rules each listing `create(context) { const sourceCode = ... }` as a module-level `variable
/// sourceCode`, which took the definition boost from `class SourceCode`). A store an older
/// docdex extracted (no `symbols:<lang>` rules number in its meta) is re-extracted for those
/// languages by the next index run, though no file changed.
#[test]
fn locals_of_functions_without_a_name_are_not_symbols_and_an_older_store_is_redone() {
    let env = Env::new();
    let repo = env.repo("r");
    write(
        &repo,
        "lib/rule.js",
        "module.exports = { create(context) { const sourceCode = context.sourceCode; return {}; } };\n",
    );
    write(
        &repo,
        "lib/source.js",
        "class SourceCode {}\nconst version = 1;\nmodule.exports = { SourceCode, version };\n",
    );
    let engine = env.engine();
    index(&engine, &repo);
    let names = |engine: &Engine| -> Vec<String> {
        let q = SymbolsRequest { query: Some("sourcecode".into()), ..Default::default() };
        let hits = engine.symbols(&repo, &q).unwrap().results.into_iter();
        hits.filter(|h| h.name.eq_ignore_ascii_case("sourcecode")).map(|h| format!("{} {}", h.path, h.name)).collect()
    };
    assert_eq!(names(&engine), ["lib/source.js SourceCode"]);

    // An older docdex's store: the local listed, no symbol-rules number in its meta.
    let r = engine.resolve_repo(&repo).unwrap();
    let conn = rusqlite::Connection::open(db_path(&r)).unwrap();
    let file_id: i64 =
        conn.query_row("SELECT file_id FROM symbols WHERE name = 'SourceCode'", [], |row| row.get(0)).unwrap();
    let columns: Vec<String> = {
        let mut stmt = conn.prepare("SELECT name FROM pragma_table_info('symbols') WHERE name != 'id'").unwrap();
        stmt.query_map([], |row| row.get(0)).unwrap().map(Result::unwrap).collect()
    };
    let list = columns.join(", ");
    let values = columns
        .iter()
        .map(|c| match c.as_str() {
            "name" => "'sourceCode'".to_string(),
            "norm" => "'sourcecode'".to_string(),
            "kind" => "'variable'".to_string(),
            "parts" => "' source code '".to_string(),
            other => other.to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ");
    conn.execute(
        &format!("INSERT INTO symbols ({list}) SELECT {values} FROM symbols WHERE file_id = ?1 LIMIT 1"),
        [file_id],
    )
    .unwrap();
    conn.execute("DELETE FROM meta WHERE key LIKE 'symbols:%'", []).unwrap();
    drop(conn);
    assert_eq!(names(&engine).len(), 2, "the older store answers as it is");
    index(&engine, &repo);
    assert_eq!(names(&engine), ["lib/source.js SourceCode"], "re-extracted by the next run");
}

/// A symbol whose file changed on disk (or was deleted) since its symbols were extracted is
/// marked stale, with a note naming `docdex index`, as search marks its hits: `docdex symbols`
/// gave a deleted file's function and a moved function's old line without a word (a code
/// intelligence tour). The next index run clears the mark and has the new line.
#[test]
fn symbols_in_files_changed_since_indexed_are_marked_stale() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "src/math.ts", "export function addNumbers(a: number, b: number) { return a + b; }\n");
    write(&repo, "src/strings.ts", "export function upperCased(s: string) { return s.toUpperCase(); }\n");
    write(&repo, "src/kept.ts", "export function keptAsIs() { return 1; }\n");
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::remove_file(repo.join("src/strings.ts")).unwrap();
    write(&repo, "src/math.ts", "// moved down\nexport function addNumbers(a: number, b: number) { return a + b; }\n");
    let first = |name: &str| env.json(&["symbols", "--repo", r, name, "--json"]);
    for name in ["upperCased", "addNumbers"] {
        let v = first(name);
        assert_eq!(v["results"][0]["stale"], true, "{v}");
        let note = v["note"].as_str().unwrap_or_default();
        assert!(note.contains("changed on disk (or was deleted)") && note.contains("docdex index --repo"), "{v}");
    }
    let kept = first("keptAsIs");
    assert!(kept["results"][0].get("stale").is_none() && kept["note"].is_null(), "{kept}");
    let text = String::from_utf8_lossy(&env.run(&["symbols", "--repo", r, "addNumbers"]).stdout).into_owned();
    assert!(text.contains("src/math.ts:1  (changed since indexed)"), "{text}");
    env.json(&["index", "--repo", r, "--json"]);
    let v = first("addNumbers");
    assert!(v["results"][0].get("stale").is_none() && v["results"][0]["line_start"] == 2, "{v}");
    assert_eq!(first("upperCased")["total"], 0);
}

/// `ast query --field name` finds the names declarations give, not parameters or keyword
/// arguments, which Python's grammar also gives a `name` field (a tour: 31 of rich's 32
/// `--name Console` matches were parameters and call arguments).
#[test]
fn ast_field_name_skips_parameters_and_keyword_arguments() {
    let env = Env::new();
    let repo = env.repo("r");
    write(
        &repo,
        "m.py",
        "def connect(timeout: int = 5):\n    return timeout\n\n\nconnect(timeout=10)\n\n\ndef timeout():\n    pass\n",
    );
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    let v = env.json(&[
        "ast",
        "query",
        "--repo",
        r,
        "--kinds",
        "identifier",
        "--field",
        "name",
        "--name",
        "timeout",
        "--json",
    ]);
    let lines: Vec<u64> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["samples"].as_array().cloned().unwrap_or_default())
        .filter_map(|s| s["line_start"].as_u64())
        .collect();
    assert_eq!(lines, [8], "only `def timeout` names a declaration: {v}");
}

/// `--field name` counted the last segment of every path as a name (Rust's `use
/// std::mem::MaybeUninit;` and `Holder::new()`, tour37 F9): only the declaration is one. The
/// text output gives each sample its column, so two matches on one line are told apart.
#[test]
fn ast_field_name_skips_the_last_segment_of_a_path() {
    let env = Env::new();
    let repo = env.repo("r");
    write(
        &repo,
        "src/lib.rs",
        "use std::mem::MaybeUninit;\n\npub struct Holder;\n\nimpl Holder {\n    pub fn new() -> Self {\n        Holder\n    }\n}\n\npub fn make() -> (Holder, Holder) {\n    (Holder::new(), Holder::new())\n}\n",
    );
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    let ask = |name: &str| {
        let v = env.json(&[
            "ast",
            "query",
            "--repo",
            r,
            "--kinds",
            "identifier",
            "--field",
            "name",
            "--name",
            name,
            "--json",
        ]);
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|f| f["samples"].as_array().cloned().unwrap_or_default())
            .filter_map(|s| s["line_start"].as_u64())
            .collect::<Vec<u64>>()
    };
    assert_eq!(ask("new"), [6], "only `fn new` names a declaration, not the two calls on line 12");
    assert_eq!(ask("MaybeUninit"), Vec::<u64>::new(), "a `use` path declares nothing");
    let out = env.run(&["ast", "query", "--repo", r, "--kinds", "scoped_identifier"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1:5 ") && text.contains("12:6 "), "each sample with its column: {text}");
}

/// A qualified query (`Person::new`) looks for a typo of its name only inside its container:
/// it also returned `module net` elsewhere as a fuzzy match (a code-intelligence tour), while an
/// unqualified `nev` still finds both by their spelling.
#[test]
fn a_qualified_query_looks_for_typos_in_its_container_only() {
    let env = Env::new();
    let repo = env.repo("r");
    write(
        &repo,
        "src/lib.rs",
        "pub mod net {}\npub struct Person;\nimpl Person {\n    pub fn new() -> Self { Person }\n}\n",
    );
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    let names = |q: &str| -> Vec<String> {
        let v = env.json(&["symbols", "--repo", r, q, "--json"]);
        v["results"].as_array().unwrap().iter().map(|h| h["name"].as_str().unwrap_or_default().to_string()).collect()
    };
    assert_eq!(names("Person::new"), ["new"]);
    let typo = names("nev");
    assert!(typo.contains(&"new".to_string()) && typo.contains(&"net".to_string()), "{typo:?}");
    assert_eq!(names("Person::nev"), ["new"], "a typo inside the container still finds it");
}

/// tour35 F11: `symbols Cart --path shop/nonexistent` said "no symbol matches" (as if there
/// were no such class), and the hint for a query with a space or a glob was a command the
/// shell splits or expands (`docdex search a b`, `docdex search *`).
#[test]
fn an_unmatched_path_filter_is_named_and_the_search_hint_pastes_as_typed() {
    let env = Env::new();
    let repo = env.repo("shop");
    write(&repo, "shop/cart.py", "class Cart:\n    def add_item(self, item):\n        pass\n");
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    let v = env.json(&["symbols", "--repo", r, "Cart", "--path", "shop/nonexistent", "--json"]);
    assert_eq!(v["total"], 0, "{v}");
    assert!(v["note"].as_str().unwrap_or("").contains("no indexed file is under"), "{v}");
    let v = env.json(&["symbols", "--repo", r, "Cart", "--path", "shop", "--json"]);
    assert_eq!(v["total"], 1, "{v}");
    for (q, hint) in [("a b", "`docdex search 'a b'`"), ("*", "`docdex search '*'`")] {
        let out = env.run(&["symbols", "--repo", r, q]);
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(said.contains(hint), "{q}: {said}");
    }
}

/// `ast search --path nope` said only "no file has any of function_item" and `ast query` the
/// same with a count of 0 (tour37 F10): a path filter naming no indexed file is said to be so,
/// as symbols and search say it, in the JSON and on the terminal.
#[test]
fn ast_search_and_query_say_when_the_path_filter_names_no_indexed_file() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "src/lib.rs", "pub fn one() {}\n");
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    for verb in ["search", "query"] {
        let v = env.json(&["ast", verb, "--repo", r, "--kinds", "function_item", "--path", "nope", "--json"]);
        assert_eq!(v["total_files"], 0, "{v}");
        let note = v["note"].as_str().unwrap_or_default();
        assert!(note.contains("no indexed file is under") && note.contains("nope"), "{verb}: {v}");
        let v = env.json(&["ast", verb, "--repo", r, "--kinds", "function_item", "--path", "src", "--json"]);
        assert!(v["note"].is_null() && v["total_files"] == 1, "{verb}: {v}");
        let out = env.run(&["ast", verb, "--repo", r, "--kinds", "function_item", "--path", "Src"]);
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(text.contains("no indexed file is under") && text.contains("did you mean"), "{verb}: {text}");
    }
}

/// `symbols --file` of a file edited since the last index run answered its indexed outline,
/// "No symbols" for one that now holds a definition (tour36 F4): the file is brought into the
/// index first, as impact and context packs do.
#[test]
fn the_outline_of_a_file_edited_since_indexing_is_of_the_file_on_disk() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "a.py", "import os\n");
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    write(&repo, "a.py", "import os\n\n\ndef added_fn():\n    pass\n");
    let v = env.json(&["symbols", "--repo", r, "--file", "a.py", "--json"]);
    let names: Vec<&str> = v["results"].as_array().unwrap().iter().filter_map(|s| s["name"].as_str()).collect();
    assert_eq!(names, ["added_fn"], "{v}");
    assert!(v["results"][0]["stale"] != true, "{v}");
}
