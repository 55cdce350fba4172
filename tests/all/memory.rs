//! Repo memory: store, recall by meaning (fake embedder) and by words (none), list,
//! delete, strict isolation between repositories, the spec's schema, catching up
//! when an embedder appears, re-embedding after a model change, and the CLI.

use crate::util::{llm_config, sample_repo, Env};
use docdex::engine::protocol::{MemoryRecallRequest, MemoryStoreRequest};
use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
use docdex::{Engine, Error};
use serde_json::json;
use std::path::Path;

fn store(engine: &Engine, repo: &Path, text: &str) -> String {
    let req = MemoryStoreRequest { content: text.into(), metadata: Some(json!({"source": "test"})) };
    engine.memory_store(repo, &req).expect("store").memory.id
}

fn recall(engine: &Engine, repo: &Path, q: &str) -> docdex::engine::protocol::MemoryRecallResponse {
    engine.memory_recall(repo, &MemoryRecallRequest { query: q.into(), limit: Some(3) }).expect("recall")
}

/// A free port, then released (a fake started on it later becomes "the embedder appearing").
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[test]
fn store_recall_list_and_delete_by_meaning() {
    let server = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    let env = Env::new();
    let repo = env.repo("r");
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    let deploy = store(&engine, &repo, "Deploys go through the staging cluster before production");
    let style = store(&engine, &repo, "Prefer explicit error types over anyhow in the engine");
    let tests = store(&engine, &repo, "Integration tests use a temporary DOCDEX_HOME");

    let r = recall(&engine, &repo, "how do deploys reach production");
    assert_eq!(r.mode, "vector");
    assert!(r.notice.is_none());
    assert_eq!(r.results[0].memory.id, deploy);
    assert!(r.results[0].memory.embedded);
    assert_eq!(r.results[0].memory.metadata, json!({"source": "test"}));
    assert!(r.results.iter().skip(1).all(|h| h.score < r.results[0].score), "{r:?}");
    assert_eq!(recall(&engine, &repo, "error types in the engine").results[0].memory.id, style);

    let list = engine.memory_list(&repo, None).unwrap();
    assert_eq!(list.total, 3);
    let ids: Vec<&str> = list.memories.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, [tests.as_str(), style.as_str(), deploy.as_str()], "newest first");

    engine.memory_delete(&repo, &style).unwrap();
    assert_eq!(engine.memory_list(&repo, None).unwrap().total, 2);
    assert!(recall(&engine, &repo, "error types in the engine").results.iter().all(|h| h.memory.id != style));
    let err = engine.memory_delete(&repo, &style).unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err:?}");
}

/// Recall by meaning handed every memory back for any query, unrelated ones down to negative
/// similarities, where recall by words answers none: memories under the similarity floor are
/// left out, and an answer left empty by it says how near the nearest came.
#[test]
fn recall_by_meaning_leaves_out_unrelated_memories_and_says_why_none_came() {
    let server = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    let env = Env::new();
    let repo = env.repo("r");
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    let deploy = store(&engine, &repo, "Deploys go through the staging cluster before production");
    store(&engine, &repo, "Prefer explicit error types over anyhow in the engine");

    let r = recall(&engine, &repo, "unrelated banana smoothie recipe");
    assert_eq!(r.mode, "vector");
    assert!(r.results.is_empty(), "{r:?}");
    let notice = r.notice.unwrap_or_default();
    assert!(notice.starts_with("no memory is close in meaning to the query"), "{notice}");

    let r = recall(&engine, &repo, "staging cluster deploys");
    assert_eq!(r.results.iter().map(|h| h.memory.id.as_str()).collect::<Vec<_>>(), [deploy.as_str()], "{r:?}");
    assert!(r.results[0].score >= docdex::engine::memory::MIN_MEMORY_SIMILARITY);
    assert!(r.notice.is_none(), "{r:?}");
}

/// Recall and list handed a stored AWS key and password back verbatim, where search snippets
/// mask them (agents pass results on to remote models); they are masked in the answer now, the
/// stored text is kept whole (storing it again finds it) and ordinary text is unchanged.
#[test]
fn recall_and_list_mask_a_stored_secret_and_keep_the_stored_text() {
    let server = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    let env = Env::new();
    let repo = env.repo("r");
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    let secret = "the deploy key is AKIAZ3MPLE7Q2WXYV4KD and DB_PASSWORD=hunter2hunter2";
    let plain = "Deploys go through the staging cluster before production";
    let secret_id = store(&engine, &repo, secret);
    let plain_id = store(&engine, &repo, plain);
    let list = engine.memory_list(&repo, None).unwrap();
    let recalled = recall(&engine, &repo, "deploy key password");
    let shown: Vec<(&str, &str)> = list
        .memories
        .iter()
        .map(|m| (m.id.as_str(), m.content.as_str()))
        .chain(recalled.results.iter().map(|h| (h.memory.id.as_str(), h.memory.content.as_str())))
        .collect();
    assert!(shown.iter().filter(|(id, _)| *id == secret_id).count() >= 2, "{shown:?}");
    for (id, content) in shown {
        assert!(!content.contains("AKIAZ3MPLE7Q2WXYV4KD") && !content.contains("hunter2"), "{content}");
        match id == secret_id {
            true => {
                assert!(
                    content.starts_with("the deploy key is [") && content.contains(" and DB_PASSWORD=["),
                    "{content}"
                )
            }
            false => assert_eq!((id, content), (plain_id.as_str(), plain)),
        }
    }
    let again = engine.memory_store(&repo, &MemoryStoreRequest { content: secret.into(), metadata: None }).unwrap();
    assert_eq!(again.memory.id, secret_id, "the stored text is whole, so the same fact is found");
}

#[test]
fn memories_are_strictly_isolated_between_repositories() {
    let server = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    let env = Env::new();
    let (a, b) = (env.repo("a"), env.repo("b"));
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    let secret = store(&engine, &a, "The release key lives in the vault under ops/release");
    store(&engine, &b, "Repository b uses tabs");

    let rb = recall(&engine, &b, "where does the release key live");
    assert!(rb.results.iter().all(|h| h.memory.id != secret && !h.memory.content.contains("vault")), "{rb:?}");
    assert_eq!(engine.memory_list(&b, None).unwrap().total, 1);
    let err = engine.memory_delete(&b, &secret).unwrap_err().to_string();
    assert!(err.contains("no memory") && err.contains("/b"), "{err}");
    assert_eq!(recall(&engine, &a, "where does the release key live").results[0].memory.id, secret);

    let sa = engine.resolve_repo(&a).unwrap().state_dir;
    let sb = engine.resolve_repo(&b).unwrap().state_dir;
    assert_ne!(sa, sb);
    assert!(sa.join("memory.db").exists() && sb.join("memory.db").exists());
}

#[test]
fn without_an_embedder_memories_are_kept_and_recalled_by_words_then_caught_up() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let env = Env::new();
    let repo = env.repo("r");
    let engine = env.engine_for("ollama", &url, "fake-chat", "fake-embed");
    let resp = engine
        .memory_store(&repo, &MemoryStoreRequest { content: "Cache keys include the tenant id".into(), metadata: None })
        .unwrap();
    assert!(!resp.memory.embedded);
    assert!(resp.notice.unwrap().contains("stored without an embedding"));
    store(&engine, &repo, "Logs rotate daily");

    let r = recall(&engine, &repo, "tenant cache");
    assert_eq!(r.mode, "text");
    assert!(r.notice.unwrap().contains("matching words, not meaning"));
    assert_eq!(r.results.len(), 1);
    assert_eq!(r.results[0].memory.content, "Cache keys include the tenant id");
    assert_eq!(r.results[0].score, 1.0);

    // The embedder appears: the next recall embeds what was stored meanwhile (a fresh engine,
    // since the old one remembers the failure for a while).
    let _server = FakeOllama::start(FakeOllamaOptions { port, ..Default::default() }).unwrap();
    let engine = env.engine();
    let r = recall(&engine, &repo, "tenant cache");
    assert_eq!(r.mode, "vector");
    assert!(engine.memory_list(&repo, None).unwrap().memories.iter().all(|m| m.embedded));
}

#[test]
fn memory_db_has_the_specs_tables_and_reembeds_after_a_model_change() {
    let server = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    let env = Env::new();
    let repo = env.repo("r");
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    store(&engine, &repo, "Feature flags are read once at startup");
    let db = engine.resolve_repo(&repo).unwrap().state_dir.join("memory.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let cols: Vec<(String, String)> = conn
        .prepare("SELECT name, type FROM pragma_table_info('memories')")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    let expected =
        [("id", "UUID"), ("content", "TEXT"), ("embedding", "BLOB"), ("created_at", "INT"), ("metadata", "JSON")];
    assert_eq!(cols, expected.map(|(a, b)| (a.to_string(), b.to_string())));
    let vec_sql: String =
        conn.query_row("SELECT sql FROM sqlite_master WHERE name = 'memory_vec'", [], |r| r.get(0)).unwrap();
    assert!(vec_sql.contains("USING vec0") && vec_sql.contains("float[64]"), "{vec_sql}");
    let meta = |k: &str| -> String {
        conn.query_row("SELECT value FROM memory_meta WHERE key = ?1", [k], |r| r.get(0)).unwrap()
    };
    assert_eq!(meta("embedding_dim"), "64");
    assert_eq!(meta("schema_version"), "1");
    let (id, created): (String, i64) =
        conn.query_row("SELECT id, created_at FROM memories", [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    assert_eq!(uuid::Uuid::parse_str(&id).unwrap().get_version_num(), 4);
    assert!(created > 1_700_000_000_000);

    // Another embedding model with another dimension: memories are re-embedded from their text.
    let other = FakeOllama::start(FakeOllamaOptions { embed_dim: 32, ..Default::default() }).unwrap();
    let engine = env.engine_for("ollama", &other.url(), "fake-chat", "fake-embed");
    let r = recall(&engine, &repo, "when are feature flags read");
    assert_eq!(r.mode, "vector");
    assert_eq!(r.results.len(), 1);
    assert_eq!(meta("embedding_dim"), "32");
}

#[test]
fn bad_memory_input_is_refused_clearly() {
    let env = Env::new();
    let repo = env.repo("r");
    let engine = env.engine();
    let err = engine.memory_store(&repo, &MemoryStoreRequest { content: "  ".into(), metadata: None }).unwrap_err();
    assert!(err.to_string().contains("content is empty"));
    let err = engine
        .memory_store(&repo, &MemoryStoreRequest { content: "x".into(), metadata: Some(json!([1, 2])) })
        .unwrap_err();
    assert!(err.to_string().contains("must be a JSON object"));
    let err = engine.memory_recall(&repo, &MemoryRecallRequest { query: " ".into(), limit: None }).unwrap_err();
    assert!(err.to_string().contains("empty query"));
    // A limit of 0 was taken as 1 over HTTP and MCP: one memory for an agent asking for none.
    store(&engine, &repo, "integration tests need REDIS_URL set");
    let err = engine.memory_recall(&repo, &MemoryRecallRequest { query: "redis".into(), limit: Some(0) }).unwrap_err();
    assert!(matches!(err, Error::BadRequest(_)) && err.to_string().starts_with("limit 0 asks for no memory"), "{err}");
    let err = engine.memory_list(&repo, Some(0)).unwrap_err();
    assert!(err.to_string().starts_with("limit 0 asks for no memory"), "{err}");
    assert_eq!(engine.memory_list(&repo, Some(1_000_000)).unwrap().memories.len(), 1, "a large limit is cut");
    // An empty id read "no memory , and an id prefix must have at least 6 characters".
    let err = engine.memory_delete(&repo, "  ").unwrap_err();
    assert!(err.to_string().starts_with("no memory id given"), "{err}");
    env.write_config("[memory]\nenabled = false\n");
    let err = env.engine().memory_list(&repo, None).unwrap_err();
    assert!(err.to_string().contains("[memory] enabled = false"));
}

#[test]
fn memory_cli_round_trip() {
    let server = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    let env = Env::new();
    let repo = env.repo("r");
    env.write_config(&llm_config("ollama", &server.url(), "fake-chat", "fake-embed"));
    let r = repo.to_str().unwrap();
    let v = env.json(&[
        "memory",
        "store",
        "--repo",
        r,
        "--json",
        "--metadata",
        r#"{"tag":"arch"}"#,
        "The",
        "parser",
        "is",
        "hand",
        "written",
    ]);
    let id = v["memory"]["id"].as_str().unwrap().to_string();
    assert_eq!(v["memory"]["content"], "The parser is hand written");
    assert_eq!(v["memory"]["metadata"]["tag"], "arch");
    let v = env.json(&["memory", "recall", "--repo", r, "--json", "who", "wrote", "the", "parser"]);
    assert_eq!(v["mode"], "vector");
    assert_eq!(v["results"][0]["id"], id.as_str());
    assert!(v["results"][0]["score"].is_number());
    // `save`, the MCP tool's word, stores too.
    let saved = env.json(&["memory", "save", "--repo", r, "--json", "Releases", "are", "cut", "on", "Fridays"]);
    assert_eq!(saved["memory"]["content"], "Releases are cut on Fridays");
    let out = env.run(&["memory", "list", "--repo", r]);
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        listed.contains("The parser is hand written") && listed.contains("Releases are cut on Fridays"),
        "{listed}"
    );
    let out = env.run(&["memory", "store", "--repo", r, "--metadata", "not json", "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--metadata is not JSON"));
    // A memory goes by the first characters of its id too, as a git hash does, but not by
    // fewer than six: that says so rather than "no memory".
    let saved_id = saved["memory"]["id"].as_str().unwrap().to_string();
    let out = env.run(&["memory", "delete", "--repo", r, &saved_id[..4]]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("at least 6 characters") && err.contains("docdex memory list"), "{err}");
    // `list --after` takes the same prefix `delete` does (it refused one).
    let older = env.json(&["memory", "list", "--repo", r, "--json", "--after", &saved_id[..6]]);
    assert_eq!(older["memories"][0]["id"], id.as_str(), "{older}");
    assert_eq!(older["memories"].as_array().unwrap().len(), 1, "{older}");
    // `forget` is `delete` (the help calls it "Forget a memory"; it suggested `store`).
    env.json(&["memory", "forget", "--repo", r, "--json", &saved_id[..8]]);
    let left = env.json(&["memory", "list", "--repo", r, "--json"]);
    assert_eq!(left["total"], 1, "{left}");
    env.json(&["memory", "delete", "--repo", r, "--json", &id]);
    let out = env.run(&["memory", "delete", "--repo", r, &id]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no memory"));
}

#[test]
fn reading_memory_of_a_directory_never_touched_registers_nothing() {
    let env = Env::new();
    let dir = env.repo("untouched");
    let d = dir.to_str().unwrap();
    let v = env.json(&["memory", "list", "--repo", d, "--json"]);
    assert_eq!(v["total"], 0);
    let v = env.json(&["memory", "recall", "--repo", d, "--json", "anything", "at", "all"]);
    assert_eq!(v["results"].as_array().unwrap().len(), 0);
    // Nor does a delete that finds nothing (it registered the directory, "0 files, never indexed").
    let out = env.run(&["memory", "delete", "--repo", d, "abcdef12"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to forget"), "{out:?}");
    assert_eq!(env.json(&["repo", "list", "--json"])["repos"].as_array().unwrap().len(), 0, "not registered");
}

#[test]
fn a_memory_can_be_piped_in() {
    use std::io::Write;
    let env = Env::new();
    let repo = env.repo("piped");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_docdex"))
        .args(["memory", "store", "--repo", repo.to_str().unwrap(), "--json"])
        .env("DOCDEX_HOME", env.home())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    child.stdin.take().expect("stdin").write_all(b"Releases are cut on Fridays\n").expect("write");
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["memory"]["content"], "Releases are cut on Fridays");
}

#[test]
fn control_characters_in_a_memory_are_shown_not_sent_to_the_terminal() {
    let env = Env::new();
    let repo = env.repo("esc");
    let r = repo.to_str().unwrap();
    // What an agent could store: a title change, a screen clear, and a carriage return that
    // would hide the words before it.
    let content = "deploy with \x1b]0;owned\x07care\x1b[2J, never\rrm -rf\tbuild";
    let v = env.json(&["memory", "store", "--repo", r, "--json", content]);
    assert_eq!(v["memory"]["content"], content, "stored as given");
    for args in [vec!["memory", "list", "--repo", r], vec!["memory", "recall", "--repo", r, "deploy"]] {
        let out = env.run(&args);
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(!text.contains(['\x1b', '\x07', '\r']), "{args:?} printed raw controls: {text:?}");
        assert!(text.contains("deploy with \\u{1b}]0;owned\\u{7}care\\u{1b}[2J, never\\rrm -rf\tbuild"), "{text:?}");
    }
}

#[test]
fn a_list_cut_by_its_limit_says_how_many_are_shown_and_how_to_see_all() {
    // `memory list` shows the newest 50 by default; with more memories than that the text
    // said "55 memories" over 50 rows, with nothing saying where the other 5 went.
    let env = Env::new();
    let repo = env.repo("many");
    let r = repo.to_str().unwrap();
    for note in ["first note", "second note", "third note"] {
        env.json(&["memory", "store", "--repo", r, "--json", note]);
    }
    let out = env.run(&["memory", "list", "--repo", r, "-n", "2"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let heading = text.lines().next().unwrap_or_default();
    assert!(heading.contains("3 memories") && heading.contains("the newest 2 shown"), "{text}");
    assert!(heading.contains("`-n 3` lists them all"), "{text}");
    assert!(!text.contains("first note"), "{text}");
    let all = env.run(&["memory", "list", "--repo", r]);
    let text = String::from_utf8_lossy(&all.stdout);
    assert!(!text.contains("shown"), "nothing left out, nothing said: {text}");
}

#[test]
fn a_memory_is_not_stored_for_the_filesystem_root_or_the_home_directory() {
    // `docdex memory store` typed in `/` (or in $HOME, outside any repository) registered it as
    // a repository: every later command run outside git then resolved to `/` and answered
    // "run `docdex index --repo /` first", which `index` refuses.
    let env = Env::new();
    let user = env.repo("user");
    let h = user.to_str().unwrap();
    for dir in ["/", h] {
        let out =
            env.run_env(&["memory", "store", "--repo", dir, "a note typed in the wrong directory"], &[("HOME", h)]);
        assert_eq!(out.status.code(), Some(2), "{dir}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("refusing") && err.contains("name the repository's own directory"), "{err}");
    }
    assert_eq!(env.json(&["repo", "list", "--json"])["repos"].as_array().unwrap().len(), 0, "nothing registered");
    let project = env.repo("user/project");
    let v = env.json(&["memory", "store", "--repo", project.to_str().unwrap(), "--json", "a repository's note"]);
    assert_eq!(v["memory"]["content"], "a repository's note", "a directory under the home still takes notes");
}

#[test]
fn an_agent_forgets_a_wrong_memory_over_mcp() {
    // MCP could save and recall, never delete: a wrong fact an agent saved stayed, and chat
    // fed it into every answer; the CLI and HTTP could delete it, MCP could not.
    use crate::util::{sample_repo, McpStdio};
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    let mut mcp = McpStdio::start(&env, &["--repo", r], json!({}));
    let text = |v: &serde_json::Value| v["content"][0]["text"].as_str().unwrap_or_default().to_string();
    let saved = mcp.call("docdex_memory_save", json!({"content": "deploys need STAGING_KEY from the vault"}));
    let saved: serde_json::Value = serde_json::from_str(&text(&saved)).expect("json");
    let id = saved["memory"]["id"].as_str().unwrap().to_string();
    let other = env.repo("other");
    let elsewhere = env.json(&["memory", "store", "--repo", other.to_str().unwrap(), "--json", "not this repo's"]);
    let foreign = elsewhere["memory"]["id"].as_str().unwrap();
    let r = mcp.call("docdex_memory_delete", json!({"id": foreign}));
    assert_eq!(r["isError"], true, "another repository's memory: {r}");
    assert!(text(&r).starts_with("not_found"), "{r}");
    let r = mcp.call("docdex_memory_delete", json!({"id": &id[..3]}));
    assert!(text(&r).contains("at least 6 characters"), "{r}");
    let r = mcp.call("docdex_memory_delete", json!({"id": &id[..8]}));
    assert_eq!(r["isError"], false, "{r}");
    assert!(text(&r).contains(&id), "answers the full id: {r}");
    let recalled = mcp.call("docdex_memory_recall", json!({"query": "STAGING_KEY vault deploys"}));
    assert!(!text(&recalled).contains(&id), "{recalled}");
    assert_eq!(env.json(&["memory", "list", "--repo", other.to_str().unwrap(), "--json"])["total"], 1);
}

#[test]
fn a_memory_db_that_is_not_sqlite_is_named_with_the_way_on_and_left_alone() {
    // Only "database ...: file is not a database" (exit 1) was said, with nothing on what it
    // meant for the memories or what to do.
    let env = Env::new();
    let repo = env.repo("r");
    let r = repo.to_str().unwrap();
    env.json(&["memory", "store", "--repo", r, "--json", "a note"]);
    let db = env.engine().resolve_repo(&repo).unwrap().state_dir.join("memory.db");
    let junk = "this is not a database, it was written over it; ".repeat(50);
    std::fs::write(&db, &junk).unwrap();
    for args in [vec!["memory", "list", "--repo", r], vec!["memory", "store", "--repo", r, "another"]] {
        let out = env.run(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("memories cannot be read") && err.contains("move it aside"), "{err}");
        assert!(err.contains(".recover"), "{err}");
    }
    assert_eq!(std::fs::read_to_string(&db).unwrap(), junk, "left as it was");
}

#[test]
fn a_fact_stored_again_is_kept_once_even_by_writers_at_once() {
    // An agent saving the same convention every session stored a copy each time, and chat's
    // memory slot (the 8 closest) filled with copies of one fact.
    let env = Env::new();
    let repo = env.repo("r");
    let r = repo.to_str().unwrap();
    let first = env.json(&["memory", "store", "--repo", r, "--json", "integration tests need REDIS_URL set"]);
    let again = env.json(&[
        "memory",
        "store",
        "--repo",
        r,
        "--json",
        "--metadata",
        r#"{"by":"agent"}"#,
        "  integration tests need REDIS_URL set ",
    ]);
    assert_eq!(again["memory"]["id"], first["memory"]["id"], "{again}");
    let notice = again["notice"].as_str().unwrap_or_default();
    assert!(notice.contains("already remembered as") && notice.contains("metadata is the one stored then"), "{again}");
    // Spawned, then waited for: `.output()` in the map ran the eight one after another.
    let children: Vec<_> = (0..8)
        .map(|_| {
            std::process::Command::new(env!("CARGO_BIN_EXE_docdex"))
                .args(["memory", "store", "--repo", r, "--json", "releases are cut on Fridays"])
                .env("DOCDEX_HOME", env.home())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().expect("run");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let list = env.json(&["memory", "list", "--repo", r, "--json"]);
    assert_eq!(list["total"], 2, "{list}");
    let other = env.json(&["memory", "store", "--repo", r, "--json", "integration tests need REDIS_URL set too"]);
    assert_ne!(other["memory"]["id"], first["memory"]["id"], "other content is another memory");
}

#[test]
fn thirty_memories_stored_at_once_are_all_embedded_without_a_lock_notice() {
    // Writers upgrading a deferred transaction from read to write got "database is locked" at
    // once (SQLite does not wait then), and the memory was left unembedded with that notice;
    // each also saw no vector table yet and dropped the vectors the others had set. The race
    // is widest on a fresh memory.db, so several fresh repositories each take 30 at once.
    let server = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    let env = Env::new();
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    for round in 0..12 {
        let repo = env.repo(&format!("r{round}"));
        let barrier = std::sync::Barrier::new(30);
        let answers: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..30)
                .map(|i| {
                    let (engine, repo, barrier) = (&engine, &repo, &barrier);
                    s.spawn(move || {
                        barrier.wait();
                        let content = format!("fact number {i} about releases");
                        engine.memory_store(repo, &MemoryStoreRequest { content, metadata: None })
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("thread")).collect()
        });
        for a in answers {
            let a = a.expect("store");
            assert_eq!(a.notice, None, "round {round}: {:?}", a.memory.content);
            assert!(a.memory.embedded, "round {round}: {:?}", a.memory.content);
        }
        let list = engine.memory_list(&repo, Some(100)).expect("list");
        assert_eq!(list.memories.len(), 30);
        assert!(list.memories.iter().all(|m| m.embedded), "round {round}: a vector was dropped by another writer");
    }
}

#[test]
fn thirty_memory_store_processes_at_once_are_all_embedded_without_a_lock_notice() {
    // The report: 30 `docdex memory store` at once, one answered "database is locked".
    let server = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    let env = Env::new();
    let repo = env.repo("r");
    env.write_config(&llm_config("ollama", &server.url(), "fake-chat", "fake-embed"));
    let r = repo.to_str().unwrap();
    let children: Vec<_> = (0..30)
        .map(|i| {
            std::process::Command::new(env!("CARGO_BIN_EXE_docdex"))
                .args(["memory", "store", "--repo", r, "--json", &format!("fact number {i} about releases")])
                .env("DOCDEX_HOME", env.home())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().expect("run");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        assert!(v.get("notice").is_none_or(|n| n.is_null()), "{v}");
        assert_eq!(v["memory"]["embedded"], true, "{v}");
    }
    let list = env.json(&["memory", "list", "--repo", r, "--json", "-n", "100"]);
    assert_eq!(list["total"], 30, "{list}");
    assert!(list["memories"].as_array().unwrap().iter().all(|m| m["embedded"] == true), "{list}");
}

/// Adds `n` small memories to `repo`'s `memory.db` directly (the store answers about 40 a
/// second), one second apart in `created_at` from `start`.
fn insert_rows(engine: &Engine, repo: &Path, n: usize, start: i64) {
    let db = engine.resolve_repo(repo).unwrap().state_dir.join("memory.db");
    let mut conn = rusqlite::Connection::open(db).unwrap();
    let tx = conn.transaction().unwrap();
    for i in 0..n {
        tx.execute(
            "INSERT INTO memories(id, content, embedding, created_at, metadata) VALUES (?1, ?2, NULL, ?3, '{}')",
            rusqlite::params![format!("row-{start}-{i:05}"), format!("fact {start} {i}"), start + i as i64],
        )
        .unwrap();
    }
    tx.commit().unwrap();
}

#[test]
fn a_list_answers_at_most_200_memories_and_pages_on_with_next_after() {
    // `GET /v1/memory?limit=1000000000` answered every memory (18 MB) in one response.
    let env = Env::new();
    let repo = env.repo("many");
    let engine = env.engine();
    store(&engine, &repo, "the first memory");
    insert_rows(&engine, &repo, 250, 1_000);
    let first = engine.memory_list(&repo, Some(1_000_000_000)).unwrap();
    assert_eq!((first.total, first.memories.len()), (251, 200));
    let next = first.next_after.clone().expect("a cursor");
    assert_eq!(next, first.memories[199].id);
    let second = engine.memory_list_page(&repo, Some(200), Some(&next)).unwrap();
    assert_eq!(second.memories.len(), 51);
    assert_eq!(second.next_after, None, "the last page");
    let mut ids: Vec<&str> = first.memories.iter().chain(&second.memories).map(|m| m.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 251, "every memory once");
    // The CLI says how to go on, and refuses a count the engine would not answer.
    let r = repo.to_str().unwrap();
    let out = env.run(&["memory", "list", "--repo", r, "-n", "200"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().next().unwrap_or_default().contains(&format!("`--after {next}` lists the older ones")),
        "{text}"
    );
    let out = env.run(&["memory", "list", "--repo", r, "-n", "201"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let gone = engine.memory_list_page(&repo, None, Some("no-such-id")).unwrap_err();
    assert!(matches!(gone, Error::NotFound(_)), "{gone:?}");
}

#[test]
fn a_list_page_stops_at_about_a_mebibyte_of_content() {
    let env = Env::new();
    let repo = env.repo("big");
    let engine = env.engine();
    for i in 0..20 {
        store(&engine, &repo, &format!("{i:02} release notes {}", "x".repeat(60 * 1024)));
    }
    let page = engine.memory_list(&repo, Some(200)).unwrap();
    let bytes: usize = page.memories.iter().map(|m| m.content.len()).sum();
    assert!(page.memories.len() < 20 && bytes <= 1024 * 1024, "{} memories, {bytes} bytes", page.memories.len());
    let rest = engine.memory_list_page(&repo, Some(200), page.next_after.as_deref()).unwrap();
    assert_eq!(page.memories.len() + rest.memories.len(), 20);
    // A recall is bounded the same way, and says so.
    let r = engine.memory_recall(&repo, &MemoryRecallRequest { query: "release notes".into(), limit: Some(100) });
    let r = r.unwrap();
    let bytes: usize = r.results.iter().map(|h| h.memory.content.len()).sum();
    assert!(!r.results.is_empty() && r.results.len() < 20 && bytes <= 1024 * 1024, "{} hits", r.results.len());
    assert!(r.notice.is_some_and(|n| n.contains("more matched but were left out")));
}

#[test]
fn a_repository_keeps_at_most_max_memories_and_a_memory_at_most_64_kib() {
    let env = Env::new();
    let repo = env.repo("full");
    let engine = env.engine();
    store(&engine, &repo, "the first memory");
    let max = docdex::engine::protocol::MAX_MEMORIES as usize;
    insert_rows(&engine, &repo, max - 1, 1_000);
    let req = MemoryStoreRequest { content: "one too many".into(), metadata: None };
    let err = engine.memory_store(&repo, &req).unwrap_err().to_string();
    assert!(err.contains(&format!("the most docdex stores ({max})")) && err.contains("docdex memory delete"), "{err}");
    // The same content again still answers the memory kept.
    let again = MemoryStoreRequest { content: "the first memory".into(), metadata: None };
    assert!(engine.memory_store(&repo, &again).unwrap().notice.is_some_and(|n| n.contains("already remembered")));
    // Deleting one makes room.
    engine.memory_delete(&repo, "row-1000-00000").unwrap();
    engine.memory_store(&repo, &req).expect("room again");
    // One memory's bound names itself.
    let big = MemoryStoreRequest { content: "y".repeat(64 * 1024 + 1), metadata: None };
    let err = engine.memory_store(&repo, &big).unwrap_err().to_string();
    assert!(err.contains("at most 64 KiB (65536 bytes)") && err.contains("65537 bytes"), "{err}");
}

/// tour16 F1: a store behind a model server that accepts connections and never answers waited
/// the whole `[llm] request_timeout_secs` (two minutes by default) for its embedding, while
/// recall, profile writes and chat fail over within `connect_timeout_ms`. The store now passes
/// the same liveness check: it is kept without a vector within the bound, saying why, and
/// recall finds it by its words.
#[test]
fn a_store_behind_a_stuck_model_server_is_kept_within_the_liveness_bound() {
    use std::time::{Duration, Instant};
    let (url, _) = crate::util::stuck_server();
    let env = Env::new();
    let repo = env.repo("r");
    let config = llm_config("ollama", &url, "fake-chat", "fake-embed").replace("= 5", "= 60");
    env.write_config(&format!("{config}connect_timeout_ms = 400\n"));
    let started = Instant::now();
    let out = env.json(&["memory", "store", "--repo", repo.to_str().unwrap(), "--json", "Deploys happen on Tuesdays"]);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "the store took {took:?}");
    assert_eq!(out["memory"]["embedded"], false, "{out}");
    let notice = out["notice"].as_str().unwrap_or_default();
    assert!(
        notice.contains("did not answer within 400 ms") && notice.contains("stored without an embedding"),
        "{notice}"
    );
    let r = recall(&env.engine(), &repo, "when are deploys");
    assert_eq!((r.mode.as_str(), r.results.len()), ("text", 1), "{r:?}");
}

/// A memory write stopped by its caller (a client that left, a server deadline) was remembered
/// as an embedder failure, so the next writes skipped embedding for a while ("stopped by its
/// caller") though the embedder answered.
#[test]
fn a_write_stopped_by_its_caller_does_not_keep_the_next_ones_from_being_embedded() {
    use docdex::engine::protocol::CancelToken;
    let server = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    let env = Env::new();
    let repo = env.repo("r");
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    let stopped = CancelToken::new();
    stopped.cancel();
    {
        let _ambient = stopped.enter();
        let req = MemoryStoreRequest { content: "written as the client left".into(), metadata: None };
        let _ = engine.memory_store(&repo, &req);
    }
    let req = MemoryStoreRequest { content: "Deploys go through the staging cluster".into(), metadata: None };
    let kept = engine.memory_store(&repo, &req).expect("store");
    assert!(kept.memory.embedded, "{kept:?}");
    assert!(kept.notice.is_none(), "{kept:?}");
}

/// tour35 F3: `memory store --repo src/` in a checkout made a second, empty store (and a
/// registry entry) that recall in the repository never saw. Refused, naming the repository.
#[test]
fn a_memory_for_a_folder_of_a_repository_is_refused() {
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    crate::util::git(&repo, &["init", "-q"]);
    let sub = repo.join("src");
    let out = env.run(&["memory", "store", "--repo", sub.to_str().unwrap(), "a note for the folder"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("lies inside the repository") && err.contains(&format!("--repo {}", repo.display())), "{err}");
    assert!(env.json(&["repo", "list", "--json"])["repos"].as_array().unwrap().is_empty(), "nothing registered");
    // The repository itself, and its registered folder once indexed, as before.
    let r = repo.to_str().unwrap();
    env.json(&["memory", "store", "--repo", r, "--json", "a note for the repository"]);
    let out = env.run(&["memory", "store", "--repo", sub.to_str().unwrap(), "again"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(env.json(&["memory", "list", "--repo", r, "--json"])["total"], 1);
}
