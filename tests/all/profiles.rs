//! Profile memory's store: the factory seed, round trips through a real `main.db`, isolation
//! between agents, last-write-wins sync between two DOCDEX_HOMEs (older and newer rows,
//! removals), the dimension check and its way out, recall without an embedder, one writer at
//! a time with readers never blocked, and the CLI and HTTP surfaces over the same calls.

use crate::server_util::{client, Server};
use crate::util::{dead_url, llm_config, stuck_server, Env};
use docdex::engine::protocol::{
    Category, PreferenceSource, ProfileAddRequest, ProfileEditRequest, ProfileListRequest, ProfileRemoveRequest,
    ProfileSearchRequest, RecallMode, TEAM_AGENT,
};
use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
use docdex::{Engine, Error};
use serde_json::{json, Value};

pub fn add(engine: &Engine, agent: &str, category: Category, text: &str) -> String {
    let req = ProfileAddRequest {
        agent_id: agent.into(),
        category: Some(category),
        content: text.into(),
        rule: None,
        role: Some(format!("{agent} role")),
    };
    engine.profile_add(&req).expect("add").preference.id
}

pub fn search(engine: &Engine, agent: &str, q: &str) -> docdex::engine::protocol::ProfileSearchResponse {
    let req = ProfileSearchRequest { agent_id: agent.into(), query: q.into(), limit: Some(10), without_team: false };
    engine.profile_search(&req).expect("search")
}

fn fake() -> FakeOllama {
    FakeOllama::start(FakeOllamaOptions::default()).unwrap()
}

#[test]
fn an_empty_database_is_seeded_with_the_factory_personas_once() {
    let env = Env::new();
    let engine = env.engine_for("ollama", &dead_url(), "fake-chat", "fake-embed");
    let list = engine.profile_list(&ProfileListRequest::default()).unwrap();
    let ids: Vec<&str> = list.agents.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids, ["mcoda_backend", "mcoda_frontend", "mcoda_qa", "mcoda_security", "team"]);
    assert!(list.db.ends_with("state/profiles/main.db") && list.db.is_file(), "{}", list.db.display());
    let front = engine
        .profile_list(&ProfileListRequest { agent_id: Some("mcoda_frontend".into()), ..Default::default() })
        .unwrap();
    assert!(front.preferences.iter().all(|p| p.source == PreferenceSource::Seed));
    assert!(front.preferences.iter().any(|p| p.rule.as_deref() == Some("forbid-node typescript predefined_type any")));
    // The schema the issue names, in the real file.
    let conn = rusqlite::Connection::open(&list.db).unwrap();
    let cols = |t: &str| -> Vec<String> {
        let mut st = conn.prepare(&format!("PRAGMA table_info({t})")).unwrap();
        st.query_map([], |r| r.get::<_, String>(1)).unwrap().map(|c| c.unwrap()).collect()
    };
    assert_eq!(cols("agents"), ["id", "role", "created_at", "role_updated"]);
    assert_eq!(
        cols("preferences"),
        ["id", "agent_id", "content", "category", "rule", "embedding", "last_updated", "source"]
    );
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
    // Removing every agent (the team agent is always kept: its preferences one by one) does not
    // bring the factory defaults back on the next start.
    for a in ids.iter().filter(|a| **a != "team") {
        engine
            .profile_remove(&ProfileRemoveRequest { id: a.to_string(), agent: true, expected_last_updated: None })
            .unwrap();
    }
    let team =
        engine.profile_list(&ProfileListRequest { agent_id: Some("team".into()), ..Default::default() }).unwrap();
    for p in &team.preferences {
        engine
            .profile_remove(&ProfileRemoveRequest { id: p.id.clone(), agent: false, expected_last_updated: None })
            .unwrap();
    }
    let again = env.engine().profile_list(&ProfileListRequest::default()).unwrap();
    let left: Vec<(&str, u64)> = again.agents.iter().map(|a| (a.id.as_str(), a.preference_count)).collect();
    assert_eq!(left, [("team", 0)]);
}

#[test]
fn preferences_round_trip_through_the_file_and_agents_stay_apart() {
    let server = fake();
    let env = Env::new();
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    let vitest = add(&engine, "alice", Category::Tooling, "Use vitest for unit tests");
    let tabs = add(&engine, "alice", Category::Style, "Indent with tabs in Go code");
    let bob_tests = add(&engine, "bob", Category::Tooling, "Use jest for unit tests");

    // A new engine reads the same file.
    let reopened = env.engine();
    let alice =
        reopened.profile_list(&ProfileListRequest { agent_id: Some("alice".into()), ..Default::default() }).unwrap();
    let ids: Vec<&str> = alice.preferences.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, [tabs.as_str(), vitest.as_str()], "style before tooling");
    assert!(alice.preferences.iter().all(|p| p.embedded && p.source == PreferenceSource::Manual));
    let summary = alice.agents.iter().find(|a| a.id == "alice").unwrap();
    assert_eq!((summary.preference_count, summary.role.as_str()), (2, "alice role"));

    // Recall by meaning: alice's own and the team's, never bob's.
    let r = search(&reopened, "alice", "unit tests framework");
    assert_eq!(r.mode, RecallMode::Vector);
    assert_eq!(r.results[0].preference.id, vitest);
    assert!(r.results.iter().all(|h| h.preference.agent_id == "alice" || h.preference.agent_id == TEAM_AGENT));
    assert!(!r.results.iter().any(|h| h.preference.id == bob_tests));
    let b = search(&reopened, "bob", "unit tests framework");
    assert_eq!(b.results[0].preference.id, bob_tests);
    assert!(!b.results.iter().any(|h| h.preference.agent_id == "alice"));
    let only = reopened
        .profile_search(&ProfileSearchRequest {
            agent_id: "bob".into(),
            query: "tests".into(),
            limit: None,
            without_team: true,
        })
        .unwrap();
    assert!(only.results.iter().all(|h| h.preference.agent_id == "bob"));

    // Edit: text, then category; the rule follows the category.
    let e = reopened
        .profile_edit(&ProfileEditRequest {
            id: tabs.clone(),
            content: Some("Avoid circular dependencies".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(e.preference.content, "Avoid circular dependencies");
    let moved = reopened
        .profile_edit(&ProfileEditRequest {
            id: tabs.clone(),
            category: Some(Category::Constraint),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(moved.preference.rule.as_deref(), Some("no-import-cycles"), "{}", moved.rule_note);
    assert!(moved.preference.last_updated > e.preference.last_updated);
    let back = reopened
        .profile_edit(&ProfileEditRequest { id: tabs.clone(), category: Some(Category::Style), ..Default::default() })
        .unwrap();
    assert_eq!(back.preference.rule, None, "{}", back.rule_note);

    // Remove.
    let gone = reopened
        .profile_remove(&ProfileRemoveRequest { id: vitest.clone(), agent: false, expected_last_updated: None })
        .unwrap();
    assert_eq!(gone.agent_id, "alice");
    assert!(!search(&reopened, "alice", "vitest").results.iter().any(|h| h.preference.id == vitest));
    let err = reopened
        .profile_remove(&ProfileRemoveRequest { id: vitest, agent: false, expected_last_updated: None })
        .unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err:?}");
    let err = reopened
        .profile_search(&ProfileSearchRequest {
            agent_id: "nobody".into(),
            query: "x".into(),
            limit: None,
            without_team: false,
        })
        .unwrap_err();
    assert!(matches!(err, Error::UnknownAgent(_)) && err.to_string().contains("alice"), "{err}");
    assert_eq!(err.code(), "unknown_agent");
}

#[test]
fn bad_input_is_refused_with_the_reason() {
    let env = Env::new();
    let engine = env.engine_for("ollama", &dead_url(), "fake-chat", "fake-embed");
    let bad = |agent: &str, category: Category, text: &str, rule: Option<&str>| {
        engine
            .profile_add(&ProfileAddRequest {
                agent_id: agent.into(),
                category: Some(category),
                content: text.into(),
                rule: rule.map(String::from),
                role: None,
            })
            .unwrap_err()
            .to_string()
    };
    assert!(bad("a b", Category::Style, "x", None).contains("bad agent id"));
    assert!(bad("a", Category::Style, "   ", None).contains("empty preference"));
    assert!(bad("a", Category::Style, "x", Some("no-import-cycles")).contains("only constraints"));
    assert!(bad("a", Category::Constraint, "x", Some("forbid-imports y")).contains("unknown rule"));
    assert!(bad("a", Category::Constraint, &"x".repeat(5000), None).contains("at most"));
    assert!(bad("", Category::Style, "x", None).contains("no agent"));
    // A search query has the bounds of every other query (94 KB was embedded and matched whole).
    let long =
        ProfileSearchRequest { agent_id: "team".into(), query: "tabs ".repeat(1000), limit: None, without_team: false };
    let err = engine.profile_search(&long).unwrap_err();
    assert!(matches!(err, Error::BadRequest(_)) && err.to_string().contains("query too long"), "{err}");
}

#[test]
fn without_an_embedder_recall_matches_words_and_says_so() {
    let env = Env::new();
    let engine = env.engine_for("ollama", &dead_url(), "fake-chat", "fake-embed");
    let r = engine
        .profile_add(&ProfileAddRequest {
            agent_id: "carol".into(),
            category: Some(Category::Constraint),
            content: "Deprecate usage of moment.js".into(),
            rule: None,
            role: None,
        })
        .unwrap();
    assert!(!r.preference.embedded);
    assert!(r.notice.as_deref().is_some_and(|n| n.contains("without an embedding")), "{r:?}");
    assert_eq!(r.preference.rule.as_deref(), Some("forbid-import moment"), "{}", r.rule_note);
    let s = search(&engine, "carol", "moment dates");
    assert_eq!(s.mode, RecallMode::Text);
    assert!(s.notice.as_deref().is_some_and(|n| n.contains("matching words")), "{s:?}");
    assert_eq!(s.results[0].preference.id, r.preference.id);

    // The embedder appears: the stored row is embedded on the next recall.
    let server = fake();
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    let s = search(&engine, "carol", "moment dates");
    assert_eq!(s.mode, RecallMode::Vector, "{s:?}");
    assert!(s.results.iter().all(|h| h.preference.embedded));
}

/// A model server that accepts the connection and never answers held `profile add` and
/// `profile search` for a whole `[llm] request_timeout_secs` each (two minutes by default)
/// before they stored the row without a vector or matched words. The server now gets
/// `[llm] connect_timeout_ms` to answer anything at all; the add stores the row at once (to be
/// embedded on a later recall) and the search matches words, both saying why.
#[test]
fn a_stuck_model_server_costs_add_and_search_a_moment_not_a_timeout() {
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};
    let (url, accepted) = stuck_server();
    let env = Env::new();
    let config = llm_config("ollama", &url, "fake-chat", "fake-embed").replace("= 5", "= 60");
    env.write_config(&format!("{config}connect_timeout_ms = 400\n"));
    let quick = |what: &str, started: Instant| {
        assert!(started.elapsed() < Duration::from_secs(4), "{what} took {:?}", started.elapsed());
    };

    let started = Instant::now();
    let r = env
        .engine()
        .profile_add(&ProfileAddRequest {
            agent_id: "carol".into(),
            category: Some(Category::Style),
            content: "Prefer early returns over nested ifs".into(),
            rule: None,
            role: None,
        })
        .unwrap();
    quick("profile add", started);
    assert!(!r.preference.embedded);
    let notice = r.notice.clone().unwrap_or_default();
    assert!(notice.contains("without an embedding") && notice.contains("did not answer within 400 ms"), "{notice}");

    // A new engine (nothing remembered) searches by words and says why.
    let started = Instant::now();
    let s = search(&env.engine(), "carol", "early returns");
    quick("profile search", started);
    assert_eq!(s.mode, RecallMode::Text, "{s:?}");
    assert!(s.notice.as_deref().is_some_and(|n| n.contains("did not answer")), "{s:?}");
    assert_eq!(s.results[0].preference.id, r.preference.id);

    // The CLI, a process of its own.
    let started = Instant::now();
    let out =
        env.run_env(&["profile", "add", "--agent", "carol", "--category", "style", "Name booleans as questions"], &[]);
    quick("docdex profile add", started);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(said.contains("without an embedding"), "{said}");
    assert_eq!(said.matches("did not answer").count(), 1, "said once, not also as a warning: {said}");
    // Each engine asked the server once (whether it answers), never to embed.
    assert_eq!(accepted.load(Ordering::SeqCst), 3);
}

#[test]
fn a_dimension_mismatch_is_a_clear_error_and_reembed_is_the_way_out() {
    let env = Env::new();
    let wide = fake();
    let engine = env.engine_for("ollama", &wide.url(), "fake-chat", "fake-embed");
    let id = add(&engine, "dave", Category::Style, "Prefer early returns over nested ifs");
    assert!(search(&engine, "dave", "early returns").results.iter().any(|h| h.preference.id == id));

    // The same model name now answers with 32-dimensional vectors.
    let narrow = FakeOllama::start(FakeOllamaOptions { embed_dim: 32, ..Default::default() }).unwrap();
    let engine = env.engine_for("ollama", &narrow.url(), "fake-chat", "fake-embed");
    let err = engine
        .profile_search(&ProfileSearchRequest {
            agent_id: "dave".into(),
            query: "early returns".into(),
            limit: None,
            without_team: false,
        })
        .unwrap_err();
    assert_eq!(err.code(), "embedding_mismatch");
    let msg = err.to_string();
    assert!(msg.contains("64 dimensions") && msg.contains("32") && msg.contains("docdex profile reembed"), "{msg}");
    // A write still stores the row (nothing is lost) and says why it has no vector.
    let r = engine
        .profile_add(&ProfileAddRequest {
            agent_id: "dave".into(),
            category: Some(Category::Style),
            content: "Name booleans as questions".into(),
            rule: None,
            role: None,
        })
        .unwrap();
    assert!(r.notice.as_deref().is_some_and(|n| n.contains("reembed")), "{r:?}");

    let out = env.run_env(&["profile", "reembed", "--json"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["dim"], 32);
    assert!(v["embedded"].as_u64().unwrap() >= 2, "{v}");
    let s = search(&env.engine(), "dave", "early returns");
    assert_eq!((s.mode, s.results[0].preference.id.as_str()), (RecallMode::Vector, id.as_str()));

    // A configured dimension the model does not give is named in the error.
    env.write_config(&format!(
        "{}\n[memory.profile]\nembedding_dim = 768\n",
        llm_config("ollama", &narrow.url(), "fake-chat", "fake-embed")
    ));
    let err = env
        .engine()
        .profile_search(&ProfileSearchRequest {
            agent_id: "dave".into(),
            query: "x".into(),
            limit: None,
            without_team: false,
        })
        .unwrap_err();
    assert!(err.to_string().contains("embedding_dim is 768"), "{err}");
}

fn manifest(engine: &Engine) -> Value {
    serde_json::to_value(engine.profile_export().unwrap()).unwrap()
}

#[test]
fn export_then_import_round_trips_exactly_and_merges_last_write_wins() {
    let server = fake();
    let a = Env::new();
    let b = Env::new();
    let ea = a.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    let eb = b.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    let x = add(&ea, "erin", Category::Tooling, "Use pnpm for packages");
    let y = add(&ea, "erin", Category::Style, "Prefer named exports");
    let z = add(&ea, "erin", Category::Workflow, "Open a draft PR early");
    ea.profile_add(&ProfileAddRequest {
        agent_id: "erin".into(),
        category: Some(Category::Constraint),
        content: "No import cycles".into(),
        rule: Some("no-import-cycles".into()),
        role: None,
    })
    .unwrap();

    // A -> B on a fresh home: B's export is A's export, byte for byte.
    let file = a.dir.path().join("sync.json");
    let out = a.run(&["profile", "export", "--out", file.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report = b.json(&["profile", "import", file.to_str().unwrap(), "--json"]);
    assert_eq!((report["added"].as_u64(), report["updated"].as_u64()), (Some(4), Some(0)), "{report}");
    assert!(std::path::Path::new(report["staged"].as_str().unwrap()).starts_with(b.home().join("state/profiles/sync")));
    assert_eq!(manifest(&ea), manifest(&eb));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        {
            let f2 = b.dir.path().join("back.json");
            b.run(&["profile", "export", "--out", f2.to_str().unwrap()]);
            std::fs::read_to_string(f2).unwrap()
        },
        "the files are identical"
    );
    // Imported rows are recalled by meaning on B.
    assert_eq!(search(&eb, "erin", "package manager pnpm").results[0].preference.id, x);

    // Both sides change: A edits x later than B's copy; B edits y after A's copy; A removes z.
    std::thread::sleep(std::time::Duration::from_millis(5));
    eb.profile_edit(&ProfileEditRequest {
        id: y.clone(),
        content: Some("Prefer named exports, B's words".into()),
        ..Default::default()
    })
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    ea.profile_edit(&ProfileEditRequest {
        id: x.clone(),
        content: Some("Use pnpm 9 for packages".into()),
        ..Default::default()
    })
    .unwrap();
    ea.profile_remove(&ProfileRemoveRequest { id: z.clone(), agent: false, expected_last_updated: None }).unwrap();
    // An older copy of y on A (A's y is older than B's edit).
    let file2 = a.dir.path().join("sync2.json");
    ea.profile_export_to(Some(&file2)).unwrap();
    let r = eb.profile_import(&file2).unwrap();
    assert_eq!((r.updated, r.deleted), (1, 1), "{r:?}");
    assert!(r.kept_local >= 1, "{r:?}");
    let erin = eb.profile_list(&ProfileListRequest { agent_id: Some("erin".into()), ..Default::default() }).unwrap();
    let text = |id: &str| erin.preferences.iter().find(|p| p.id == id).map(|p| p.content.clone());
    assert_eq!(text(&x).as_deref(), Some("Use pnpm 9 for packages"), "newer incoming wins");
    assert_eq!(text(&y).as_deref(), Some("Prefer named exports, B's words"), "newer local is kept");
    assert_eq!(text(&z), None, "the removal travelled");
    // Importing the same file again changes nothing.
    let again = eb.profile_import(&file2).unwrap();
    assert_eq!((again.added, again.updated, again.deleted), (0, 0, 0), "{again:?}");
    // B -> A: A takes B's newer y and keeps z removed.
    let back = b.dir.path().join("b.json");
    eb.profile_export_to(Some(&back)).unwrap();
    ea.profile_import(&back).unwrap();
    assert_eq!(manifest(&ea), manifest(&eb), "the two homes converged");
}

/// Every import kept a copy of its manifest in `state/profiles/sync/` and none was ever
/// removed, so the folder only grew (a copy per sync, up to 64 MB each). The newest 20 are
/// kept; the export written there is not touched.
#[test]
fn imports_keep_only_the_newest_copies_in_the_sync_folder() {
    let env = Env::new();
    let engine = env.engine_for("ollama", &dead_url(), "fake-chat", "fake-embed");
    add(&engine, "erin", Category::Style, "Prefer small pull requests");
    let exported = engine.profile_export_to(None).unwrap().path;
    let manifest = env.home().join("team.json");
    std::fs::copy(&exported, &manifest).unwrap();
    let sync = engine.profile_dir().join("sync");
    let copies = || -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&sync)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("incoming-"))
            .collect();
        names.sort();
        names
    };
    let mut staged = Vec::new();
    for _ in 0..docdex::engine::profiles::KEPT_IMPORTS + 3 {
        staged.push(engine.profile_import(&manifest).unwrap().staged);
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let kept = copies();
    assert_eq!(kept.len(), docdex::engine::profiles::KEPT_IMPORTS, "{kept:?}");
    assert!(staged[..3].iter().all(|p| !p.exists()), "the oldest copies are removed");
    assert!(staged[3..].iter().all(|p| p.exists()), "the newest are kept");
    assert!(exported.is_file(), "the export is not a copy of an import");
}

/// An agent's role was stored as given (an escape sequence reached every terminal `profile
/// list` and the workbench's title were drawn on), and `--role` for an existing agent was
/// ignored without a word, with nothing else able to change a role (which steers the project
/// map). A role is now one line of plain text, a new one replaces the old and says so, and the
/// CLI no longer doubles the category ("as style: style: advice ...").
#[test]
fn a_role_is_one_line_of_text_and_add_can_change_it() {
    let env = Env::new();
    let engine = env.engine_for("ollama", &dead_url(), "fake-chat", "fake-embed");
    let add_role = |content: &str, role: &str| {
        engine.profile_add(&ProfileAddRequest {
            agent_id: "rolly".into(),
            category: Some(Category::Style),
            content: content.into(),
            rule: None,
            role: Some(role.into()),
        })
    };
    let role_of = |engine: &Engine| {
        let list = engine.profile_list(&ProfileListRequest::default()).unwrap();
        list.agents.into_iter().find(|a| a.id == "rolly").map(|a| a.role)
    };
    let err = add_role("Keep it simple", "Front\u{1b}[31mend").unwrap_err();
    assert!(matches!(err, Error::BadRequest(_)) && err.to_string().contains("U+001B"), "{err}");
    assert_eq!(role_of(&engine), None, "nothing was written");

    let r = add_role("Keep it simple", "Frontend\ndeveloper ").unwrap();
    assert!(r.created_agent && r.previous_role.is_none(), "{r:?}");
    assert_eq!(role_of(&engine).as_deref(), Some("Frontend developer"));
    let r = add_role("Keep it short", "Backend developer").unwrap();
    assert_eq!(r.previous_role.as_deref(), Some("Frontend developer"));
    assert_eq!(role_of(&engine).as_deref(), Some("Backend developer"));
    let r = add_role("Keep it tidy", "Backend developer").unwrap();
    assert_eq!(r.previous_role, None, "the same role changes nothing");
    assert!(add_role("Keep it lean", &"x".repeat(600)).unwrap_err().to_string().contains("at most 512 bytes"));

    let out = env.run_env(
        &["profile", "add", "--agent", "rolly", "--role", "QA engineer", "--category", "style", "Name tests well"],
        &[],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("as style: advice in the system prompt"), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the role of rolly was \"Backend developer\""), "{stderr}");
    assert_eq!(role_of(&engine).as_deref(), Some("QA engineer"));

    // No --category: it is read from the words, and the note says so and how to change it;
    // a category given is taken as given, with no note.
    for (text, category) in [
        ("Prefer early returns", "style"),
        ("Never import moment", "constraint"),
        ("Run the linter before every commit", "workflow"),
    ] {
        let out = env.run_env(&["profile", "add", "--agent", "rolly", text], &[]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("as {category}")), "{text}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("{category} read from the words")) && stderr.contains("--category"),
            "{stderr}"
        );
    }
    let v = env.json(&["profile", "add", "--agent", "rolly", "--json", "Use pytest for tests"]);
    assert_eq!(v["preference"]["category"], "tooling", "{v}");
    assert!(v["category_note"].as_str().unwrap_or("").contains("tooling read from the words"), "{v}");
    let v = env.json(&["profile", "add", "--agent", "rolly", "--category", "style", "--json", "Never nest ternaries"]);
    assert_eq!(v["preference"]["category"], "style", "{v}");
    assert!(v.get("category_note").is_none(), "{v}");

    // A manifest's agent with such a role is rejected alone.
    let f = env.dir.path().join("roles.json");
    std::fs::write(
        &f,
        json!({"format": "docdex.profile_sync", "version": 1,
               "agents": [{"id": "imp", "role": "\u{1b}]0;owned\u{7}", "created_at": 1}, {"id": "ok", "role": "Docs", "created_at": 1}],
               "preferences": [{"id": "5c9d8e7f-1a2b-4c3d-8e9f-0a1b2c3d4e5f", "agent_id": "ok", "content": "Write plainly",
                                "category": "style", "last_updated": 10}]})
        .to_string(),
    )
    .unwrap();
    let r = engine.profile_import(&f).unwrap();
    assert_eq!(r.agents_added, 1, "{r:?}");
    assert!(r.rejected.iter().any(|x| x.id == "imp" && x.reason.contains("control character")), "{r:?}");
}

/// A role changed on one machine (`profile add --role`) never reached another: the manifest
/// carried the role but no time, and import only filled an agent's empty role, so the old role
/// (which steers the project map) stayed on every other machine for good. A role is now stamped
/// when set and the newer one wins the merge, as a preference does; an older manifest, or one
/// from a docdex that did not stamp roles, does not put an old role back.
#[test]
fn a_role_changed_on_one_machine_reaches_the_other_by_sync_and_an_older_one_does_not_return() {
    let (a, b) = (Env::new(), Env::new());
    for env in [&a, &b] {
        env.write_config(&llm_config("ollama", &dead_url(), "fake-chat", "fake-embed"));
    }
    let role_in = |env: &Env| -> String {
        let v = env.json(&["profile", "list", "--json"]);
        let agents = v["agents"].as_array().unwrap().clone();
        agents.iter().find(|x| x["id"] == "mcoda_frontend").unwrap()["role"].as_str().unwrap().to_string()
    };
    let factory = role_in(&b);
    let set_role = |env: &Env, role: &str, text: &str| {
        let out =
            env.run(&["profile", "add", "--agent", "mcoda_frontend", "--role", role, "--category", "style", text]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    let export = |env: &Env, name: &str| {
        let f = env.dir.path().join(name);
        let out = env.run(&["profile", "export", "--out", f.to_str().unwrap()]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        f
    };
    let import = |env: &Env, f: &std::path::Path| {
        let out = env.run(&["profile", "import", f.to_str().unwrap()]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };

    set_role(&a, "Frontend developer: Svelte, Tailwind", "Prefer Svelte stores for shared state");
    let first = export(&a, "first.json");
    let said = import(&b, &first);
    assert_eq!(role_in(&b), "Frontend developer: Svelte, Tailwind", "the change reached B");
    assert!(said.contains("1 agent took the manifest's role"), "{said}");
    // B changes it later; A takes B's, and A's older manifest does not put its role back on B.
    std::thread::sleep(std::time::Duration::from_millis(5));
    set_role(&b, "Frontend developer: Svelte, UnoCSS", "Prefer UnoCSS utilities");
    import(&b, &first);
    assert_eq!(role_in(&b), "Frontend developer: Svelte, UnoCSS", "an older role does not win");
    import(&a, &export(&b, "back.json"));
    assert_eq!(role_in(&a), "Frontend developer: Svelte, UnoCSS", "the two homes converged");

    // A manifest from a docdex that did not stamp roles only fills an empty role.
    let old = b.dir.path().join("old.json");
    std::fs::write(
        &old,
        json!({"format": "docdex.profile_sync", "version": 1,
               "agents": [{"id": "mcoda_frontend", "role": "Old role", "created_at": 1},
                          {"id": "team", "role": "", "created_at": 1}],
               "preferences": [], "tombstones": []})
        .to_string(),
    )
    .unwrap();
    import(&b, &old);
    assert_eq!(role_in(&b), "Frontend developer: Svelte, UnoCSS");
    assert_ne!(factory, role_in(&b));
}

/// A role could be changed only by `profile add --role`, which added a preference too.
/// `profile_set_role` (CLI `profile role AGENT ROLE`, HTTP `/v1/profile/role`) sets it alone,
/// stamped after the role it replaces, so it syncs as `add --role`'s does.
#[test]
fn a_role_is_set_alone_and_reaches_another_machine_by_sync() {
    use docdex::engine::protocol::ProfileRoleRequest;
    let (a, b) = (Env::new(), Env::new());
    for env in [&a, &b] {
        env.write_config(&llm_config("ollama", &dead_url(), "fake-chat", "fake-embed"));
    }
    let engine = a.engine();
    let count = |e: &Engine| {
        e.profile_list(&ProfileListRequest { agent_id: Some("mcoda_qa".into()), ..Default::default() }).unwrap()
    };
    let before = count(&engine);
    let stamp = |e: &Engine| {
        let agents = e.profile_list(&ProfileListRequest::default()).unwrap().agents;
        agents.into_iter().find(|x| x.id == "mcoda_qa").unwrap()
    };
    let factory = stamp(&engine).role;
    let set = |role: &str| {
        engine.profile_set_role(&ProfileRoleRequest { agent_id: "mcoda_qa".into(), role: role.into() }).unwrap()
    };
    let r = set("QA engineer:\n Playwright end to end");
    assert_eq!((r.role.as_str(), r.changed, r.created_agent), ("QA engineer: Playwright end to end", true, false));
    assert_eq!(r.previous_role.as_deref(), Some(factory.as_str()));
    assert!(r.role_updated > 0);
    assert_eq!(count(&engine).preferences, before.preferences, "no preference added");
    assert_eq!(stamp(&engine).role, "QA engineer: Playwright end to end");
    // The same role again writes nothing and keeps the stamp; an empty role is refused.
    let again = set("QA engineer: Playwright end to end");
    assert_eq!((again.changed, again.previous_role, again.role_updated), (false, None, r.role_updated));
    let empty = engine.profile_set_role(&ProfileRoleRequest { agent_id: "mcoda_qa".into(), role: " \n ".into() });
    assert!(matches!(empty, Err(Error::BadRequest(m)) if m.contains("give the role")));
    drop(engine);

    // The CLI: a new role, said with the old one; the other machine takes it by sync.
    let out = a.run(&["profile", "role", "mcoda_qa", "QA", "lead"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(said.contains(r#"role of mcoda_qa: "QA lead" (was "QA engineer: Playwright end to end")"#), "{said}");
    let v = a.json(&["profile", "role", "mcoda_qa", "QA lead", "--json"]);
    assert_eq!((v["changed"].as_bool(), v["role"].as_str()), (Some(false), Some("QA lead")), "{v}");
    let f = a.dir.path().join("roles.json");
    assert!(a.run(&["profile", "export", "--out", f.to_str().unwrap()]).status.success());
    let out = b.run(&["profile", "import", f.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 agent took the manifest's role"), "{out:?}");
    let roles = b.json(&["profile", "list", "--json"]);
    let qa = roles["agents"].as_array().unwrap().iter().find(|x| x["id"] == "mcoda_qa").unwrap().clone();
    assert_eq!(qa["role"], "QA lead", "{roles}");
    // A new agent is created, with the note naming the agent it may mistype.
    let out = a.run(&["profile", "role", "mcoda_q", "QA"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("did you mean mcoda_qa?"), "{out:?}");
}

/// MCP could read (`docdex_get_profile`) and teach (`docdex_save_preference`) an agent's
/// preferences but never say what the agent does: `docdex_set_role` is `profile_set_role` over
/// MCP, the server's `--agent-id` by default, with the other tools' error contract.
#[test]
fn an_agent_sets_its_role_over_mcp() {
    use crate::util::McpStdio;
    let env = Env::new();
    env.write_config(&llm_config("ollama", &dead_url(), "fake-chat", "fake-embed"));
    let mut mcp = McpStdio::start(&env, &["--agent-id", "ivy"], json!({}));
    let tools = mcp.request("tools/list", json!({}));
    let listed = tools["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "docdex_set_role").cloned();
    let listed = listed.unwrap_or_else(|| panic!("docdex_set_role is listed: {tools}"));
    assert_eq!(listed["inputSchema"]["required"], json!(["role"]), "{listed}");
    let text = |v: &Value| v["content"][0]["text"].as_str().unwrap_or_default().to_string();
    let answer = |v: &Value| -> Value { serde_json::from_str(&text(v)).unwrap_or_else(|e| panic!("{e}: {v}")) };
    // No agent_id: the server's agent, created with its role.
    let r = mcp.call("docdex_set_role", json!({"role": "Backend developer"}));
    assert_eq!(r["isError"], false, "{r}");
    let v = answer(&r);
    assert_eq!(
        (v["agent_id"].as_str(), v["changed"].as_bool(), v["created_agent"].as_bool()),
        (Some("ivy"), Some(true), Some(true)),
        "{v}"
    );
    let again = answer(&mcp.call("docdex_set_role", json!({"agent_id": "ivy", "role": "Backend developer"})));
    assert_eq!(again["changed"], false, "the same role writes nothing: {again}");
    let v =
        answer(&mcp.call("docdex_set_role", json!({"agent_id": "mcoda_qa", "role": "QA lead", "project_root": "/x"})));
    assert_eq!((v["changed"].as_bool(), v["created_agent"].as_bool()), (Some(true), Some(false)), "{v}");
    assert!(v["previous_role"].as_str().is_some_and(|r| !r.is_empty()), "the factory role it replaced: {v}");
    // Bad input is a tool error with the code, as every tool's.
    for (args, said) in [
        (json!({"role": " "}), "bad_request: give the role"),
        (json!({"role": "QA\u{1b}[31m"}), "bad_request"),
        (json!({"agent_id": "bad id!", "role": "QA"}), "bad_request"),
        (json!({"agent_id": "ivy"}), "bad_request: bad arguments for docdex_set_role"),
    ] {
        let r = mcp.call("docdex_set_role", args.clone());
        assert_eq!(r["isError"], true, "{args}: {r}");
        assert!(text(&r).starts_with(said), "{args}: {r}");
    }
    // An agent profile memory lacks has a code of its own, on MCP as over HTTP.
    let r = mcp.call("docdex_get_profile", json!({"agent_id": "nobody", "query": "tests"}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(text(&r).starts_with("unknown_agent: no agent \"nobody\""), "{r}");
    drop(mcp);
    let listed = env.json(&["profile", "list", "--json"]);
    let agent = |id: &str| {
        let agents = listed["agents"].as_array().unwrap();
        agents.iter().find(|a| a["id"] == id).cloned().unwrap_or_default()
    };
    assert_eq!(
        (&agent("ivy")["role"], &agent("mcoda_qa")["role"]),
        (&json!("Backend developer"), &json!("QA lead")),
        "{listed}"
    );
    assert_eq!(agent("ivy")["preference_count"], 0, "a role alone adds no preference: {listed}");
}

/// An agent with a role and no preference yet (`profile role`, `docdex_set_role`) did not sync:
/// the import dropped every agent that ended up without preferences, so the other machine got
/// it only with its first preference. Agents now sync as rows of their own, with their
/// removals (`removed_agents`), so a role-only agent arrives, takes a changed role, and its
/// removal sticks on both sides.
#[test]
fn an_agent_with_only_a_role_syncs_like_any_other_and_so_does_its_removal() {
    use docdex::engine::protocol::ProfileRoleRequest;
    let (a, b) = (Env::new(), Env::new());
    let ea = a.engine_for("ollama", &dead_url(), "fake-chat", "fake-embed");
    let eb = b.engine_for("ollama", &dead_url(), "fake-chat", "fake-embed");
    let sync = |from: &Engine, to: &Engine, file: &std::path::Path| {
        from.profile_export_to(Some(file)).unwrap();
        to.profile_import(file).unwrap()
    };
    let role_of = |e: &Engine, id: &str| {
        let agents = e.profile_list(&ProfileListRequest::default()).unwrap().agents;
        agents.into_iter().find(|x| x.id == id).map(|x| (x.role, x.preference_count))
    };
    let set = |e: &Engine, id: &str, role: &str| {
        e.profile_set_role(&ProfileRoleRequest { agent_id: id.into(), role: role.into() }).unwrap()
    };
    let (fa, fb) = (a.dir.path().join("a.json"), b.dir.path().join("b.json"));
    set(&ea, "ivy", "Backend developer");
    let r = sync(&ea, &eb, &fa);
    assert_eq!(r.agents_added, 1, "{r:?}");
    assert_eq!(role_of(&eb, "ivy"), Some(("Backend developer".into(), 0)), "a role alone arrives");
    assert_eq!(sync(&eb, &ea, &fb).agents_added, 0);
    set(&ea, "ivy", "API developer");
    assert_eq!(sync(&ea, &eb, &fa).roles_updated, 1);
    assert_eq!(role_of(&eb, "ivy").map(|r| r.0), Some("API developer".into()));
    // B's manifest from before the removal, imported after it, does not bring the agent back.
    eb.profile_export_to(Some(&fb)).unwrap();
    ea.profile_remove(&ProfileRemoveRequest { id: "ivy".into(), agent: true, expected_last_updated: None }).unwrap();
    assert_eq!(ea.profile_import(&fb).unwrap().agents_added, 0);
    assert_eq!(role_of(&ea, "ivy"), None, "the removal here is newer than the agent there");
    ea.profile_export_to(Some(&fa)).unwrap();
    let out = b.run(&["profile", "import", fa.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("1 agent removed: removed over there"), "{said}");
    assert_eq!(role_of(&eb, "ivy"), None);
    // A role set again after the removal is newer: the agent is back on both.
    set(&eb, "ivy", "Data engineer");
    assert_eq!(sync(&eb, &ea, &fb).agents_added, 1);
    assert_eq!(role_of(&ea, "ivy").map(|r| r.0), Some("Data engineer".into()));
    // An agent whose last preference was removed (not the agent) keeps its role on both sides.
    let id = add(&ea, "tara", Category::Style, "Prefer early returns");
    sync(&ea, &eb, &fa);
    eb.profile_remove(&ProfileRemoveRequest { id, agent: false, expected_last_updated: None }).unwrap();
    let r = sync(&eb, &ea, &fb);
    assert_eq!((r.deleted, r.agents_removed), (1, 0), "{r:?}");
    assert_eq!(role_of(&ea, "tara"), Some(("tara role".into(), 0)));
    // An agent removed here before agent removals were kept (only its preferences' removals
    // say so) is not brought back, empty, by a manifest that still lists it with them.
    let zed = add(&ea, "zed", Category::Style, "Prefer tabs");
    sync(&ea, &eb, &fa);
    ea.profile_remove(&ProfileRemoveRequest { id: "zed".into(), agent: true, expected_last_updated: None }).unwrap();
    let db = rusqlite::Connection::open(a.home().join("state/profiles/main.db")).unwrap();
    db.execute("DELETE FROM agent_tombstones WHERE agent_id = 'zed'", []).unwrap();
    let r = sync(&eb, &ea, &fb);
    assert_eq!((r.agents_added, r.added), (0, 0), "{r:?}");
    assert_eq!(role_of(&ea, "zed"), None, "{zed}");
    // A manifest of a docdex from before agents synced on their own (no removed_agents)
    // carried an agent only with its preferences: an empty one there is not created here.
    let old = b.dir.path().join("old.json");
    let manifest = json!({"format": "docdex.profile_sync", "version": 1,
        "agents": [{"id": "olga", "role": "Docs", "created_at": 5, "role_updated": 5}], "preferences": []});
    std::fs::write(&old, manifest.to_string()).unwrap();
    assert_eq!(ea.profile_import(&old).unwrap().agents_added, 0);
    assert_eq!(role_of(&ea, "olga"), None);
}

/// A database written before roles were stamped (no `role_updated` column) is read and
/// written by this docdex: the column is added on first use, its roles count as never set.
#[test]
fn a_profile_database_from_before_role_stamps_is_migrated_on_first_use() {
    let env = Env::new();
    env.write_config(&llm_config("ollama", &dead_url(), "fake-chat", "fake-embed"));
    let db = env.home().join("state/profiles/main.db");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE agents (id TEXT PRIMARY KEY NOT NULL, role TEXT NOT NULL DEFAULT '', created_at INT NOT NULL);
         CREATE TABLE preferences (id UUID PRIMARY KEY NOT NULL, agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
             content TEXT NOT NULL, category TEXT NOT NULL, rule TEXT, embedding BLOB, last_updated INT NOT NULL, source TEXT NOT NULL);
         CREATE TABLE tombstones (id TEXT PRIMARY KEY NOT NULL, agent_id TEXT NOT NULL, deleted_at INT NOT NULL);
         CREATE TABLE profile_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
         INSERT INTO profile_meta VALUES ('schema_version', '1'), ('seeded', '1');
         INSERT INTO agents VALUES ('olga', 'Data engineer', 5);
         INSERT INTO preferences VALUES ('0b7f6a4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b', 'olga', 'Prefer Parquet', 'style', NULL, NULL, 9, 'manual');",
    )
    .unwrap();
    drop(conn);
    let v = env.json(&["profile", "list", "--agent", "olga", "--json"]);
    assert_eq!(v["agents"][0]["role"], "Data engineer", "{v}");
    assert_eq!(v["preferences"][0]["content"], "Prefer Parquet", "{v}");
    let f = env.dir.path().join("m.json");
    assert!(env.run(&["profile", "export", "--out", f.to_str().unwrap()]).status.success());
    let m: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
    assert_eq!(m["agents"][0]["role_updated"], 0, "{m}");
    // A role given now is stamped, and an agent without one had none to report as replaced.
    let r = env.engine().profile_add(&ProfileAddRequest {
        agent_id: "olga".into(),
        category: Some(Category::Style),
        content: "Partition by date".into(),
        rule: None,
        role: Some("Data platform engineer".into()),
    });
    assert_eq!(r.unwrap().previous_role.as_deref(), Some("Data engineer"));
    let list = env.engine().profile_list(&ProfileListRequest::default()).unwrap();
    assert_eq!(list.agents[0].role, "Data platform engineer");
    let add_to = |agent: &str, content: &str, role: Option<&str>| {
        env.engine()
            .profile_add(&ProfileAddRequest {
                agent_id: agent.into(),
                category: Some(Category::Style),
                content: content.into(),
                rule: None,
                role: role.map(str::to_string),
            })
            .unwrap()
    };
    add_to("noro", "Keep it short", None);
    let r = add_to("noro", "Keep it shorter", Some("Writer"));
    assert_eq!(r.previous_role, None, "it had no role: the CLI said 'the role of noro was \"\"'");
}

/// A manifest's agent ids were checked trimmed but stored as written, so a hand-edited or
/// generated file's "team " became an agent of its own: no command could name it (every one
/// trims), and its preferences applied to nobody instead of to every agent.
#[test]
fn a_manifest_agent_id_with_spaces_is_the_agent_it_names() {
    let env = Env::new();
    env.write_config(&llm_config("ollama", &dead_url(), "fake-chat", "fake-embed"));
    let f = env.dir.path().join("spaced.json");
    // A removal within the retention (an older one is not kept, so not exported).
    let removed_at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    std::fs::write(
        &f,
        json!({"format": "docdex.profile_sync", "version": 1,
               "agents": [{"id": " team ", "role": "Spaced", "created_at": 1}],
               "preferences": [{"id": "5c9d8e7f-1a2b-4c3d-8e9f-0a1b2c3d4e5f", "agent_id": "team ", "content": "Write plainly",
                                "category": "style", "last_updated": 10}],
               "tombstones": [{"id": "6d0e9f80-2b3c-4d4e-9f00-1b2c3d4e5f60", "agent_id": " team", "deleted_at": removed_at}]})
        .to_string(),
    )
    .unwrap();
    let r = env.json(&["profile", "import", f.to_str().unwrap(), "--json"]);
    assert_eq!((r["added"].as_u64(), r["agents_added"].as_u64()), (Some(1), Some(0)), "{r}");
    let list = env.json(&["profile", "list", "--agent", "team", "--json"]);
    let ids: Vec<&str> = list["agents"].as_array().unwrap().iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert!(ids.iter().all(|id| id.trim() == *id), "{ids:?}");
    let prefs = list["preferences"].as_array().unwrap();
    assert!(prefs.iter().any(|p| p["content"] == "Write plainly" && p["agent_id"] == "team"), "{list}");
    let m = env.engine().profile_export().unwrap();
    assert_eq!(m.tombstones[0].agent_id, "team");
}

/// An agent holds a text once whatever way it arrives: two machines adding the same team
/// convention, then syncing, gave the team (and every chat) two copies, and a hand-made
/// manifest's "Use tabs", "use tabs." and "Use  TABS" all three, though `add` refuses a repeat.
/// Import keeps the oldest copy, removes the others with a removal that travels back, and
/// counts them as merged, so both machines end up with the same one row.
#[test]
fn the_same_text_from_two_machines_or_one_manifest_is_held_once_after_import() {
    let (a, b) = (Env::new(), Env::new());
    for env in [&a, &b] {
        env.write_config(&llm_config("ollama", &dead_url(), "fake-chat", "fake-embed"));
    }
    let add = |env: &Env, text: &str| {
        let r = env.json(&["profile", "add", "--agent", "team", "--category", "style", text, "--json"]);
        r["preference"]["id"].as_str().unwrap().to_string()
    };
    let older = add(&a, "Squash commits before merging");
    std::thread::sleep(std::time::Duration::from_millis(5));
    let newer = add(&b, "squash  commits before merging.");
    let (ma, mb) = (a.dir.path().join("a.json"), b.dir.path().join("b.json"));
    b.json(&["profile", "export", "--out", mb.to_str().unwrap(), "--json"]);
    let r = a.json(&["profile", "import", mb.to_str().unwrap(), "--json"]);
    assert_eq!((r["added"].as_u64(), r["merged"].as_u64()), (Some(0), Some(1)), "{r}");
    let squash = |env: &Env| -> Vec<String> {
        let list = env.json(&["profile", "list", "--agent", "team", "--json"]);
        list["preferences"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["content"].as_str().unwrap().to_lowercase().contains("squash"))
            .map(|p| p["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(squash(&a), [older.as_str()], "the older copy is kept");
    // The other side takes the kept copy and the removal of its own.
    a.json(&["profile", "export", "--out", ma.to_str().unwrap(), "--json"]);
    let r = b.json(&["profile", "import", ma.to_str().unwrap(), "--json"]);
    assert_eq!((r["added"].as_u64(), r["deleted"].as_u64()), (Some(1), Some(1)), "{r}");
    assert_eq!(squash(&b), [older.as_str()]);
    // A stale manifest does not bring the removed copy back.
    let r = a.json(&["profile", "import", mb.to_str().unwrap(), "--json"]);
    assert_eq!((r["added"].as_u64(), r["merged"].as_u64()), (Some(0), Some(0)), "{r}");
    assert_eq!(squash(&a), [older]);
    assert_ne!(newer, squash(&b)[0]);
    // One manifest holding three spellings of one text.
    let f = a.dir.path().join("tabs.json");
    let row = |id: &str, text: &str, at: i64| json!({"id": id, "agent_id": "olga", "content": text, "category": "style", "last_updated": at});
    std::fs::write(
        &f,
        json!({"format": "docdex.profile_sync", "version": 1, "agents": [], "tombstones": [],
               "preferences": [row("7e1f0a91-3c4d-4e5f-a011-2c3d4e5f6071", "use tabs.", 300),
                               row("8f2a1ba2-4d5e-4f60-b122-3d4e5f607182", "Use tabs", 100),
                               row("90b2cb13-5e6f-4071-8233-4e5f60718293", "Use  TABS", 200)]})
        .to_string(),
    )
    .unwrap();
    let out = a.run(&["profile", "import", f.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("1 added") && text.contains("2 repeats merged"), "{text}");
    let list = a.json(&["profile", "list", "--agent", "olga", "--json"]);
    let prefs = list["preferences"].as_array().unwrap();
    assert_eq!(prefs.len(), 1, "{list}");
    assert_eq!(prefs[0]["content"], "Use tabs", "the oldest copy: {list}");
}

/// Agent ids are folded to lower case on every read and write: `--agent TEAM` made a second
/// "team" that applied to nobody, `list --agent Team` said there was no such agent, and a
/// manifest's "Team" did the same. A manifest's removal of a case variant (what an older
/// docdex kept apart) is not applied to the agent it now spells.
#[test]
fn agent_ids_name_one_agent_whatever_their_letter_case() {
    let env = Env::new();
    env.write_config(&llm_config("ollama", &dead_url(), "fake-chat", "fake-embed"));
    let r = env.json(&["profile", "add", "--agent", "TEAM", "--category", "style", "Use UTF-8 everywhere", "--json"]);
    assert_eq!(
        (r["preference"]["agent_id"].as_str(), r["created_agent"].as_bool()),
        (Some("team"), Some(false)),
        "{r}"
    );
    let list = env.json(&["profile", "list", "--agent", "Team", "--json"]);
    assert!(list["preferences"].as_array().unwrap().iter().any(|p| p["content"] == "Use UTF-8 everywhere"), "{list}");
    let ids: Vec<&str> = list["agents"].as_array().unwrap().iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert!(ids.iter().all(|id| *id == id.to_lowercase()), "{ids:?}");
    let again = env.run(&["profile", "add", "--agent", "team", "--category", "style", "use utf-8 everywhere"]);
    assert_eq!(again.status.code(), Some(2), "a repeat whatever the case of the agent");
    let r = env.json(&["profile", "add", "--agent", "teams", "--category", "style", "Use hooks", "--json"]);
    assert!(r["agent_note"].as_str().unwrap().contains("did you mean team?"), "{r}");
    let removed = env.run(&["profile", "remove", "--agent", "TEAM"]);
    assert_eq!(removed.status.code(), Some(2), "the team is kept under any spelling");
    let f = env.dir.path().join("cased.json");
    std::fs::write(
        &f,
        json!({"format": "docdex.profile_sync", "version": 1,
               "agents": [{"id": "Mcoda_Frontend", "role": "", "created_at": 1}],
               "preferences": [{"id": "a1c3dc24-6f70-4182-9344-5f6071829304", "agent_id": "Team",
                                "content": "Write plainly", "category": "style", "last_updated": 10}],
               "tombstones": [],
               "removed_agents": [{"id": "Mcoda_Backend", "removed_at": 4102444800000i64}]})
        .to_string(),
    )
    .unwrap();
    let r = env.json(&["profile", "import", f.to_str().unwrap(), "--json"]);
    assert_eq!((r["added"].as_u64(), r["agents_added"].as_u64()), (Some(1), Some(0)), "{r}");
    assert!(r["rejected"][0]["reason"].as_str().unwrap().contains("case variant of mcoda_backend"), "{r}");
    let list = env.json(&["profile", "list", "--agent", "team", "--json"]);
    assert!(list["preferences"].as_array().unwrap().iter().any(|p| p["content"] == "Write plainly"), "{list}");
    let ids: Vec<&str> = list["agents"].as_array().unwrap().iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&"mcoda_backend") && !ids.iter().any(|id| *id != id.to_lowercase()), "{ids:?}");
}

#[test]
fn a_bad_manifest_is_refused_whole_or_row_by_row() {
    let env = Env::new();
    let engine = env.engine_for("ollama", &dead_url(), "fake-chat", "fake-embed");
    let f = env.dir.path().join("m.json");
    std::fs::write(&f, "{not json").unwrap();
    let err = engine.profile_import(&f).unwrap_err();
    assert!(err.to_string().contains("not a profile manifest"), "{err}");
    std::fs::write(&f, json!({"format": "other", "version": 1, "agents": [], "preferences": []}).to_string()).unwrap();
    assert!(engine.profile_import(&f).unwrap_err().to_string().contains("docdex.profile_sync"));
    let good = "5c9d8e7f-1a2b-4c3d-8e9f-0a1b2c3d4e5f";
    std::fs::write(
        &f,
        json!({"format": "docdex.profile_sync", "version": 1, "agents": [{"id": "bad agent"}],
               "preferences": [
                   {"id": good, "agent_id": "frank", "content": "Use tabs", "category": "style", "last_updated": 10},
                   {"id": "not-a-uuid", "agent_id": "frank", "content": "x", "category": "style", "last_updated": 10},
                   {"id": "6d0e9f80-2b3c-4d4e-9f00-1b2c3d4e5f60", "agent_id": "frank", "content": "x", "category": "style", "rule": "no-import-cycles", "last_updated": 10},
                   {"id": "7e1f0091-3c4d-4e5f-a011-2c3d4e5f6071", "agent_id": "frank", "content": "x", "category": "constraint", "rule": "forbid-node cobol x", "last_updated": 10}
               ]})
        .to_string(),
    )
    .unwrap();
    let r = engine.profile_import(&f).unwrap();
    assert_eq!(r.added, 1);
    assert_eq!(r.rejected.len(), 4, "{r:?}");
    let frank =
        engine.profile_list(&ProfileListRequest { agent_id: Some("frank".into()), ..Default::default() }).unwrap();
    assert_eq!(frank.preferences[0].source, PreferenceSource::Import, "no source in the manifest");
}

/// `profile import` of valid JSON of another shape (`[]`) said "invalid type: sequence, expected
/// struct Head at line 1 column 0": serde's words, naming neither what the file holds nor what
/// a manifest is. Bad input, exit 2, as a file that is not JSON.
#[test]
fn a_manifest_of_the_wrong_shape_is_named_with_the_shape_expected() {
    let env = Env::new();
    let f = env.dir.path().join("m.json");
    for (body, said) in [
        ("[]", "holds an array, not an object"),
        ("\"docdex\"", "holds a string, not an object"),
        ("{}", "it has no \"format\" field"),
        (
            r#"{"format": "docdex.profile_sync", "version": "1", "preferences": []}"#,
            "its \"version\" is a string, not a whole number",
        ),
        (
            r#"{"format": "docdex.profile_sync", "version": 1, "preferences": {}}"#,
            "its \"preferences\" is an object, not an array",
        ),
        (r#"{"format": "docdex.profile_sync", "version": 1}"#, "it has no \"preferences\" field"),
    ] {
        std::fs::write(&f, body).unwrap();
        let out = env.run(&["profile", "import", f.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{body}: {err}");
        assert!(err.contains("is not a profile manifest") && err.contains(said), "{body}: {err}");
        assert!(err.contains("{\"format\": \"docdex.profile_sync\", \"version\": 1"), "the shape is named: {err}");
        assert!(!err.contains("invalid type") && !err.contains("struct"), "{body}: {err}");
    }
    // Not JSON at all: said so, still exit 2.
    std::fs::write(&f, "{not json").unwrap();
    let out = env.run(&["profile", "import", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("it is not JSON"), "{out:?}");
}

/// `profile import /dev/zero` read until memory ran out (a device reports no size, so the size
/// check passed), a file that is not UTF-8 was an I/O error (exit 1), and a preference id
/// spelled in upper case or as `urn:uuid:` was stored as a second row of the same preference.
#[test]
fn import_refuses_devices_and_non_text_and_keeps_one_spelling_per_id() {
    let env = Env::new();
    let engine = env.engine_for("ollama", &dead_url(), "fake-chat", "fake-embed");
    let err = engine.profile_import(std::path::Path::new("/dev/zero")).unwrap_err();
    assert!(matches!(err, Error::BadRequest(_)) && err.to_string().contains("not a regular file"), "{err}");
    let f = env.dir.path().join("m.json");
    std::fs::write(&f, b"{\"format\": \"docdex.profile_sync\xff\"}").unwrap();
    let err = engine.profile_import(&f).unwrap_err();
    assert!(matches!(err, Error::BadRequest(_)) && err.to_string().contains("not UTF-8"), "{err}");
    let id = "5c9d8e7f-1a2b-4c3d-8e9f-0a1b2c3d4e5f";
    let row = |id: String, text: &str, at: i64| json!({"id": id, "agent_id": "frank", "content": text, "category": "style", "last_updated": at});
    std::fs::write(
        &f,
        json!({"format": "docdex.profile_sync", "version": 1, "agents": [],
               "preferences": [row(id.into(), "Use tabs", 10), row(id.to_uppercase(), "Use tabs, width 4", 20),
                               row(format!("urn:uuid:{id}"), "Use tabs, width 8", 30)],
               "tombstones": []})
        .to_string(),
    )
    .unwrap();
    engine.profile_import(&f).unwrap();
    let frank =
        engine.profile_list(&ProfileListRequest { agent_id: Some("frank".into()), ..Default::default() }).unwrap();
    let rows: Vec<(&str, &str)> = frank.preferences.iter().map(|p| (p.id.as_str(), p.content.as_str())).collect();
    assert_eq!(rows, [(id, "Use tabs, width 8")], "one row, the newest text");
    // A removal spelled in upper case removes it too.
    std::fs::write(
        &f,
        json!({"format": "docdex.profile_sync", "version": 1, "agents": [], "preferences": [],
               "tombstones": [{"id": id.to_uppercase(), "agent_id": "frank", "deleted_at": 40}]})
        .to_string(),
    )
    .unwrap();
    assert_eq!(engine.profile_import(&f).unwrap().deleted, 1);
}

/// `profile export --out /dev/full` (run as root) replaced the device node with a regular file,
/// since the manifest is written by rename; a link (`/dev/stdout`) would be replaced the same
/// way, and a directory failed late with an I/O error (exit 1). Each is refused first.
#[test]
fn export_never_replaces_a_device_a_link_or_a_directory() {
    let env = Env::new();
    let engine = env.engine_for("ollama", &dead_url(), "fake-chat", "fake-embed");
    let fifo = env.dir.path().join("pipe");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(status.success());
    let link = env.dir.path().join("link.json");
    std::os::unix::fs::symlink(env.dir.path().join("target.json"), &link).unwrap();
    for (path, what) in
        [(fifo.as_path(), "not a regular file"), (link.as_path(), "a symbolic link"), (env.dir.path(), "a directory")]
    {
        let err = engine.profile_export_to(Some(path)).unwrap_err();
        assert!(matches!(err, Error::BadRequest(_)) && err.to_string().contains(what), "{err}");
    }
    let meta = std::fs::symlink_metadata(&fifo).unwrap();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&meta.file_type()), "the FIFO is still a FIFO");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    let file = env.dir.path().join("ok.json");
    engine.profile_export_to(Some(&file)).unwrap();
    engine.profile_export_to(Some(&file)).expect("a regular file is replaced");
}

#[test]
fn one_writer_at_a_time_and_readers_are_never_blocked() {
    let env = Env::new();
    let engine = env.engine_for("ollama", &dead_url(), "fake-chat", "fake-embed");
    let before = engine.profile_list(&ProfileListRequest::default()).unwrap();
    let db = before.db.clone();
    // Another process's long write holds the database's write lock.
    let mut holder = rusqlite::Connection::open(&db).unwrap();
    let tx = holder.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).unwrap();
    tx.execute("UPDATE agents SET role = 'changing' WHERE id = 'team'", []).unwrap();
    let started = std::time::Instant::now();
    let read =
        env.engine().profile_list(&ProfileListRequest { agent_id: Some("team".into()), ..Default::default() }).unwrap();
    assert!(started.elapsed() < std::time::Duration::from_secs(2), "a reader waited for the writer");
    assert_ne!(read.agents.iter().find(|a| a.id == "team").unwrap().role, "changing", "it reads the last commit");
    drop(tx);

    // Four processes add at once: every row lands.
    let children: Vec<_> = (0..4)
        .map(|i| {
            std::process::Command::new(env!("CARGO_BIN_EXE_docdex"))
                .args(["profile", "add", "--agent", "gina", "--category", "style", &format!("rule number {i}")])
                .env("DOCDEX_HOME", env.home())
                .env("NO_COLOR", "1")
                .output()
        })
        .collect();
    for c in children {
        let c = c.unwrap();
        assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
    }
    let gina =
        engine.profile_list(&ProfileListRequest { agent_id: Some("gina".into()), ..Default::default() }).unwrap();
    assert_eq!(gina.preferences.len(), 4);
}

#[test]
fn the_cli_speaks_json_and_fails_with_exit_codes() {
    let env = Env::new();
    env.write_config(&llm_config("ollama", &dead_url(), "fake-chat", "fake-embed"));
    let v = env.json(&[
        "profile",
        "add",
        "--agent",
        "hank",
        "--category",
        "constraint",
        "--json",
        "Deprecate",
        "moment.js",
    ]);
    assert_eq!(v["preference"]["rule"], "forbid-import moment", "{v}");
    assert_eq!(v["created_agent"], true);
    let id = v["preference"]["id"].as_str().unwrap().to_string();
    let list = env.json(&["profile", "list", "--json"]);
    let hank = list["agents"].as_array().unwrap().iter().find(|a| a["id"] == "hank").unwrap();
    assert_eq!(hank["preference_count"], 1);
    let s = env.json(&["profile", "search", "--agent", "hank", "moment", "--json"]);
    assert_eq!(s["results"][0]["id"], id.as_str());
    assert!(s["results"][0]["similarity_score"].as_f64().unwrap() > 0.0);
    // By the first characters of its id too, as `memory delete` takes them.
    let e = env.json(&["profile", "edit", &id[..8], "--rule", "forbid-import dayjs", "--json"]);
    assert_eq!(e["preference"]["rule"], "forbid-import dayjs");
    assert_eq!(e["preference"]["id"], id.as_str());
    // The new text as words, as `profile add` takes them (it was refused: "unexpected argument").
    let e = env.json(&["profile", "edit", &id[..8], "Deprecate", "usage", "of", "moment", "--json"]);
    assert_eq!(
        (e["preference"]["content"].as_str(), e["preference"]["id"].as_str()),
        (Some("Deprecate usage of moment"), Some(id.as_str()))
    );
    let both = env.run(&["profile", "edit", &id[..8], "words", "--content", "flag"]);
    assert_eq!(both.status.code(), Some(2), "{}", String::from_utf8_lossy(&both.stderr));
    let short = env.run(&["profile", "edit", &id[..4], "--no-rule"]);
    assert_eq!(short.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&short.stderr).contains("at least 6 characters"));
    // The team agent is always kept: removing it whole is refused and nothing goes.
    let team_before = env.json(&["profile", "list", "--agent", "team", "--json"]);
    let team = env.run(&["profile", "remove", "--agent", "team"]);
    assert_eq!(team.status.code(), Some(2), "{}", String::from_utf8_lossy(&team.stderr));
    assert!(String::from_utf8_lossy(&team.stderr).contains("always kept"), "{}", String::from_utf8_lossy(&team.stderr));
    assert_eq!(env.json(&["profile", "list", "--agent", "team", "--json"]), team_before);
    let unknown = env.run(&["profile", "remove", "00000000-0000"]);
    assert_eq!(unknown.status.code(), Some(2));
    let err = String::from_utf8_lossy(&unknown.stderr);
    assert!(err.contains("no preference 00000000-0000") && err.contains("shows an agent's preferences"), "{err}");
    // Without flags it needs $EDITOR and so a terminal; without one it says how to pass the change.
    let no_tty = env.run(&["profile", "edit", &id]);
    assert_eq!(no_tty.status.code(), Some(2));
    let err = String::from_utf8_lossy(&no_tty.stderr);
    assert!(err.contains("needs a terminal") && err.contains("--content"), "{err}");
    let human = env.run(&["profile", "list", "--agent", "hank"]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("constraint") && text.contains("rule forbid-import dayjs"), "{text}");

    let bad = env.run(&["profile", "add", "--agent", "hank", "--category", "mood", "x"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("style, tooling, constraint or workflow"));
    let bad = env.run(&["profile", "add", "--agent", "hank", "--category", "constraint", "--rule", "max-lines 0", "x"]);
    assert_eq!(bad.status.code(), Some(2), "{}", String::from_utf8_lossy(&bad.stderr));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("every file"));
    let missing = env.run(&["profile", "search", "--agent", "nobody", "x"]);
    assert_eq!(missing.status.code(), Some(2));
    let gone = env.dir.path().join("no-such-manifest.json");
    let missing = env.run(&["profile", "import", gone.to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(2), "a missing file is bad input");
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(err.contains("no-such-manifest.json") && err.contains("profile export"), "{err}");
    let dir = env.run(&["profile", "import", env.dir.path().to_str().unwrap()]);
    assert_eq!(dir.status.code(), Some(2), "{}", String::from_utf8_lossy(&dir.stderr));
    let r = env.json(&["profile", "remove", &id[..8], "--json"]);
    assert_eq!(r["agent_id"], "hank");
    assert_eq!(r["id"], id.as_str());
    // The command list names every subcommand (reembed and learn were missing).
    let help = String::from_utf8_lossy(&env.run(&["--help"]).stdout).to_string();
    let line = help.lines().find(|l| l.trim_start().starts_with("profile ")).unwrap_or_default();
    assert!(line.contains("reembed, learn"), "{line}");
}

#[tokio::test]
async fn the_http_api_lists_adds_searches_and_removes() {
    let env = Env::new();
    let fake = fake();
    env.write_config(&llm_config("ollama", &fake.url(), "fake-chat", "fake-embed"));
    let daemon = Server::start(&env, &["daemon", "--no-watch", "--agent-id", "ivy"], &[]);
    let post = |path: &str, body: Value| {
        let url = daemon.url(path);
        async move {
            let resp = client().post(url).json(&body).send().await.unwrap();
            let status = resp.status().as_u16();
            (status, resp.json::<Value>().await.unwrap())
        }
    };
    // No agent_id: the server's --agent-id.
    let (s, v) = post("/v1/profile/add", json!({"category": "tooling", "content": "Use vitest for tests"})).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["preference"]["agent_id"], "ivy");
    assert_eq!(v["preference"]["embedded"], true);
    let id = v["preference"]["id"].as_str().unwrap().to_string();
    let (s, v) = post("/v1/profile/search", json!({"query": "vitest for tests"})).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["results"][0]["id"], id.as_str(), "{v}");
    assert_eq!(v["mode"], "vector");
    let list: Value =
        client().get(daemon.url("/v1/profile/list?agent_id=ivy")).send().await.unwrap().json().await.unwrap();
    assert_eq!(list["preferences"][0]["content"], "Use vitest for tests", "{list}");
    let (s, v) =
        post("/v1/profile/add", json!({"agent_id": "ivy", "category": "constraint", "content": "x", "rule": "nope"}))
            .await;
    assert_eq!((s, v["error"]["code"].as_str()), (400, Some("bad_request")), "{v}");
    let (s, v) = post("/v1/profile/search", json!({"agent_id": "nobody", "query": "x"})).await;
    assert_eq!((s, v["error"]["code"].as_str()), (404, Some("unknown_agent")), "{v}");
    // A limit out of range is refused, as the command line refuses it (0 was taken as 1).
    for limit in [0, 101] {
        let (s, v) = post("/v1/profile/search", json!({"query": "vitest", "limit": limit})).await;
        assert_eq!((s, v["error"]["code"].as_str()), (400, Some("bad_request")), "{v}");
        assert!(v["error"]["message"].as_str().unwrap_or("").contains("give 1 to 100"), "{v}");
    }
    // No category: read from the words, as the command line reads it.
    let (s, v) = post("/v1/profile/add", json!({"content": "Avoid default exports"})).await;
    assert_eq!((s, v["preference"]["category"].as_str()), (200, Some("constraint")), "{v}");
    assert!(v["category_note"].as_str().unwrap_or("").contains("constraint read from the words"), "{v}");
    // A write that creates an agent says so with the agent the name likely mistypes (only the
    // CLI said it; an HTTP client created "frontnd" silently).
    let (s, v) =
        post("/v1/profile/add", json!({"agent_id": "frontnd", "category": "style", "content": "Use tabs"})).await;
    assert_eq!((s, v["created_agent"].as_bool()), (200, Some(true)), "{v}");
    let note = v["agent_note"].as_str().unwrap_or("");
    assert!(note.contains("created agent frontnd") && note.contains("did you mean mcoda_frontend?"), "{v}");
    let (_, v) =
        post("/v1/profile/add", json!({"agent_id": "frontnd", "category": "style", "content": "Use spaces"})).await;
    assert!(v.get("agent_note").is_none(), "only when created: {v}");
    // A role alone, for the server's agent.
    let (s, v) = post("/v1/profile/role", json!({"role": "Backend developer"})).await;
    assert_eq!((s, v["agent_id"].as_str(), v["changed"].as_bool()), (200, Some("ivy"), Some(true)), "{v}");
    let (s, v) = post("/v1/profile/remove", json!({"id": id})).await;
    assert_eq!((s, v["agent_id"].as_str()), (200, Some("ivy")), "{v}");
    let manifest: Value = client().get(daemon.url("/v1/profile/export")).send().await.unwrap().json().await.unwrap();
    assert_eq!(manifest["format"], "docdex.profile_sync");
    assert!(manifest["tombstones"].as_array().unwrap().iter().any(|t| t["id"] == id.as_str()));
}

/// A preference synced from a machine whose clock runs ahead carries a `last_updated` in this
/// machine's future. Removing it here stamped the removal with this clock, older than the row:
/// the other side kept its row (the removal looked older) and the next import here added it
/// back. The removal is now stamped after the row, as an edit is.
/// `profile remove --agent` (the undo a mistyped agent's note offers) did not survive a sync:
/// the other machine, whose copy the removals had emptied, kept the agent and exported it, and
/// the next import here created it again, empty. An import now creates no agent that ends up
/// with no preferences, and removes an agent its removals emptied.
#[test]
fn an_agent_removed_on_one_machine_does_not_come_back_empty_from_the_other() {
    let a = Env::new();
    let b = Env::new();
    let ea = a.engine_for("ollama", &dead_url(), "fake-chat", "fake-embed");
    let eb = b.engine_for("ollama", &dead_url(), "fake-chat", "fake-embed");
    add(&ea, "frontnd", Category::Style, "Prefer early returns");
    let sync = |from: &Engine, to: &Engine, dir: &std::path::Path| {
        let f = dir.join("m.json");
        from.profile_export_to(Some(&f)).unwrap();
        to.profile_import(&f).unwrap()
    };
    let agents = |e: &Engine| -> Vec<String> {
        e.profile_list(&ProfileListRequest::default()).unwrap().agents.into_iter().map(|a| a.id).collect()
    };
    assert_eq!(sync(&ea, &eb, a.dir.path()).agents_added, 1);
    ea.profile_remove(&ProfileRemoveRequest { id: "frontnd".into(), agent: true, expected_last_updated: None })
        .unwrap();
    let r = sync(&ea, &eb, a.dir.path());
    assert_eq!((r.deleted, r.agents_removed), (1, 1), "{r:?}");
    assert!(!agents(&eb).contains(&"frontnd".to_string()));
    let back = sync(&eb, &ea, b.dir.path());
    assert_eq!(back.agents_added, 0, "{back:?}");
    assert!(!agents(&ea).contains(&"frontnd".to_string()), "{:?}", agents(&ea));
    // Even from a machine that still lists the agent, empty, it is not created here.
    let f = b.dir.path().join("empty.json");
    std::fs::write(
        &f,
        json!({"format": "docdex.profile_sync", "version": 1,
               "agents": [{"id": "frontnd", "role": "", "created_at": 1}], "preferences": [], "tombstones": []})
        .to_string(),
    )
    .unwrap();
    assert_eq!(ea.profile_import(&f).unwrap().agents_added, 0);
    assert!(!agents(&ea).contains(&"frontnd".to_string()));
}

#[test]
fn a_removal_beats_a_row_stamped_by_a_clock_running_ahead() {
    let a = Env::new();
    let b = Env::new();
    let ea = a.engine_for("ollama", &dead_url(), "fake-chat", "fake-embed");
    let eb = b.engine_for("ollama", &dead_url(), "fake-chat", "fake-embed");
    let id = "aaaaaa11-1111-4111-8111-111111111111";
    let ahead = docdex::engine::fsutil::now_ms() as i64 + 86_400_000;
    let f = a.dir.path().join("skew.json");
    std::fs::write(
        &f,
        json!({"format": "docdex.profile_sync", "version": 1, "agents": [],
               "preferences": [{"id": id, "agent_id": "skew", "content": "Prefer early returns",
                                "category": "style", "last_updated": ahead, "source": "manual"}],
               "tombstones": []})
        .to_string(),
    )
    .unwrap();
    ea.profile_import(&f).unwrap();
    eb.profile_import(&f).unwrap();
    ea.profile_remove(&ProfileRemoveRequest { id: id.into(), agent: false, expected_last_updated: None }).unwrap();
    let from_a = a.dir.path().join("a.json");
    ea.profile_export_to(Some(&from_a)).unwrap();
    let r = eb.profile_import(&from_a).unwrap();
    assert_eq!(r.deleted, 1, "the removal reached B: {r:?}");
    let from_b = b.dir.path().join("b.json");
    eb.profile_export_to(Some(&from_b)).unwrap();
    let back = ea.profile_import(&from_b).unwrap();
    assert_eq!(back.added, 0, "the row did not come back to A: {back:?}");
    for e in [&ea, &eb] {
        let err = e.profile_preference(id).unwrap_err();
        assert!(matches!(err, Error::NotFound(_)), "{err}");
    }
}

/// A preference holding an escape sequence was stored as given (`profile add`, HTTP, MCP, an
/// imported manifest) and replayed on every terminal that searched it, and a line break broke
/// the workbench's rows. Line breaks and tabs now become spaces; other control characters are
/// refused with the reason, and rows stored before are shown escaped by `profile search`.
#[test]
fn control_characters_are_refused_and_line_breaks_become_spaces() {
    let env = Env::new();
    env.write_config(&llm_config("ollama", &dead_url(), "fake-chat", "fake-embed"));
    let engine = env.engine();
    let add = |text: &str| {
        engine.profile_add(&ProfileAddRequest {
            agent_id: "ivy".into(),
            category: Some(Category::Style),
            content: text.into(),
            rule: None,
            role: None,
        })
    };
    let err = add("Use tabs \u{1b}[2J\u{7}").unwrap_err();
    assert!(matches!(err, Error::BadRequest(_)) && err.to_string().contains("U+001B"), "{err}");
    let p = add("  Prefer early returns\r\n\tover nested ifs \n").unwrap().preference;
    assert_eq!(p.content, "Prefer early returns over nested ifs");
    // An imported row with one is rejected alone.
    let f = env.dir.path().join("m.json");
    std::fs::write(
        &f,
        json!({"format": "docdex.profile_sync", "version": 1, "agents": [],
               "preferences": [{"id": "5c9d8e7f-1a2b-4c3d-8e9f-0a1b2c3d4e5f", "agent_id": "ivy",
                                "content": "x\u{1b}]52;c;aGk=\u{7}", "category": "style", "last_updated": 10}],
               "tombstones": []})
        .to_string(),
    )
    .unwrap();
    let r = engine.profile_import(&f).unwrap();
    assert_eq!((r.added, r.rejected.len()), (0, 1), "{r:?}");
    // A row stored before this check is shown escaped, never obeyed.
    let db = rusqlite::Connection::open(engine.profile_db_path()).unwrap();
    db.execute(
        "INSERT INTO preferences(id, agent_id, content, category, last_updated, source)
         VALUES ('6d0e9f80-2b3c-4d4e-9f00-1b2c3d4e5f60', 'ivy', 'early \u{1b}[2J returns', 'style', 10, 'manual')",
        [],
    )
    .unwrap();
    let out = env.run(&["profile", "search", "--agent", "ivy", "early returns"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("early \\u{1b}[2J returns") && !text.contains('\u{1b}'), "{text}");
}

/// `profile add` stored the same preference again (same agent, same words; `learn` already
/// ignored it), so chat's profile slot carried it twice; an edit could turn one preference
/// into a copy of another. Both are refused as `conflict` (exit 2, HTTP 409) naming the one
/// the agent has. An edit made against an old read (`expected_last_updated`, which the
/// workbench and `$EDITOR` send) is refused instead of overwriting the newer row.
#[test]
fn repeats_and_edits_of_a_changed_preference_are_conflicts() {
    let env = Env::new();
    env.write_config(&llm_config("ollama", &dead_url(), "fake-chat", "fake-embed"));
    let engine = env.engine();
    let first = add(&engine, "jay", Category::Style, "Use tabs for indentation");
    let again = |text: &str| {
        engine
            .profile_add(&ProfileAddRequest {
                agent_id: "jay".into(),
                category: Some(Category::Tooling),
                content: text.into(),
                rule: None,
                role: None,
            })
            .unwrap_err()
    };
    for text in ["Use tabs for indentation", "use  TABS for indentation."] {
        let err = again(text);
        assert!(matches!(err, Error::Conflict(_)) && err.to_string().contains(&first), "{err}");
    }
    // Another agent may hold the same words.
    add(&engine, "kim", Category::Style, "Use tabs for indentation");
    let second = add(&engine, "jay", Category::Style, "Prefer early returns");
    let err = engine
        .profile_edit(&ProfileEditRequest {
            id: second.clone(),
            content: Some("use tabs for indentation".into()),
            ..Default::default()
        })
        .unwrap_err();
    assert!(matches!(err, Error::Conflict(_)) && err.to_string().contains(&first), "{err}");
    // An edit against an old read.
    let read = engine.profile_preference(&second).unwrap().last_updated;
    engine
        .profile_edit(&ProfileEditRequest {
            id: second.clone(),
            content: Some("Prefer early returns over nesting".into()),
            ..Default::default()
        })
        .unwrap();
    let stale = ProfileEditRequest {
        id: second.clone(),
        category: Some(Category::Workflow),
        expected_last_updated: Some(read),
        ..Default::default()
    };
    let err = engine.profile_edit(&stale).unwrap_err();
    assert!(matches!(err, Error::Conflict(_)) && err.to_string().contains("over nesting"), "{err}");
    assert_eq!(engine.profile_preference(&second).unwrap().category, Category::Style, "nothing changed");
    // The surfaces: exit 2, 409 `conflict`.
    let out = env.run(&["profile", "add", "--agent", "jay", "--category", "style", "Use tabs for indentation"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let server = Server::start(&env, &["daemon", "--no-watch"], &[]);
    let (status, body) = tokio::runtime::Runtime::new().unwrap().block_on(async {
        let resp = client().post(server.url("/v1/profile/edit")).json(&stale).send().await.unwrap();
        (resp.status().as_u16(), resp.json::<Value>().await.unwrap())
    });
    assert_eq!((status, body["error"]["code"].as_str()), (409, Some("conflict")), "{body}");
}

/// One row a newer or hand-edited manifest spells otherwise (a category or source this
/// docdex does not know, a time as text) refused the whole file as "not a profile manifest",
/// though rows are checked one by one; and a newer version's file was named by its first such
/// row instead of its version. The version is read first, then each row on its own.
#[test]
fn a_row_of_an_unknown_shape_is_rejected_alone_and_a_newer_file_is_named_by_its_version() {
    let env = Env::new();
    let engine = env.engine_for("ollama", &dead_url(), "fake-chat", "fake-embed");
    let row = |id: &str, category: &str, source: &str, at: Value| {
        json!({"id": id, "agent_id": "lee", "content": format!("row {id}"), "category": category,
               "source": source, "last_updated": at})
    };
    let f = env.dir.path().join("m.json");
    let write = |version: u32| {
        std::fs::write(
            &f,
            json!({"format": "docdex.profile_sync", "version": version, "agents": [{"id": "lee"}, {"id": 7}],
                   "preferences": [
                       row("5c9d8e7f-1a2b-4c3d-8e9f-0a1b2c3d4e5f", "style", "manual", json!(10)),
                       row("6d0e9f80-2b3c-4d4e-9f00-1b2c3d4e5f60", "mood", "manual", json!(10)),
                       row("7e1f0091-3c4d-4e5f-a011-2c3d4e5f6071", "style", "cloud", json!(10)),
                       row("8f201102-4d5e-4f60-b122-3d4e5f607182", "style", "manual", json!("yesterday"))],
                   "tombstones": [{"id": "9a312213-5e6f-4071-8233-4e5f60718293"},
                                  {"id": "nope", "agent_id": "lee", "deleted_at": 5}]})
            .to_string(),
        )
        .unwrap();
    };
    write(2);
    let err = engine.profile_import(&f).unwrap_err();
    assert!(err.to_string().contains("version 2 file"), "{err}");
    write(1);
    let r = engine.profile_import(&f).unwrap();
    assert_eq!(r.added, 1, "{r:?}");
    let reasons: Vec<&str> = r.rejected.iter().map(|x| x.reason.as_str()).collect();
    assert_eq!(r.rejected.len(), 6, "{reasons:?}");
    for needle in
        ["`mood`", "`cloud`", "\"yesterday\"", "not an agent row", "not a removal row", "\"nope\" is not a UUID"]
    {
        assert!(reasons.iter().any(|x| x.contains(needle)), "{needle}: {reasons:?}");
    }
    assert_eq!(r.rejected[1].id, "6d0e9f80-2b3c-4d4e-9f00-1b2c3d4e5f60", "{reasons:?}");
}

/// A preference stamped by a clock running ahead read "just now" in `profile list` and the
/// import said nothing, so why it beat every later edit elsewhere was invisible. The import
/// counts such rows and says so; the list shows them as ahead.
#[test]
fn rows_stamped_ahead_of_this_clock_are_named_on_import_and_in_the_list() {
    let env = Env::new();
    env.write_config(&llm_config("ollama", &dead_url(), "fake-chat", "fake-embed"));
    let ahead = docdex::engine::fsutil::now_ms() as i64 + 2 * 86_400_000;
    let f = env.dir.path().join("skew.json");
    std::fs::write(
        &f,
        json!({"format": "docdex.profile_sync", "version": 1, "agents": [],
               "preferences": [{"id": "aaaaaa11-1111-4111-8111-111111111111", "agent_id": "skew",
                                "content": "Prefer early returns", "category": "style", "last_updated": ahead}],
               "tombstones": []})
        .to_string(),
    )
    .unwrap();
    let out = env.run(&["profile", "import", f.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && err.contains("1 preference is stamped ahead of this machine's clock"), "{err}");
    let list = env.run(&["profile", "list", "--agent", "skew"]);
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(text.contains("d ahead of this clock") && !text.contains("just now"), "{text}");
}

/// `profile edit ID` opens `$EDITOR`; when the preference changed elsewhere while it was open,
/// the edit is refused (not written over that change), and the text written in the editor,
/// whose file is gone by then, was lost with the refusal. The message now carries it. Needs
/// a terminal: run under script(1).
#[test]
fn an_editor_session_raced_by_another_edit_keeps_the_written_text_in_the_refusal() {
    if std::process::Command::new("script").arg("--version").output().is_err() {
        eprintln!("script(1) is not installed: skipped");
        return;
    }
    let env = Env::new();
    env.write_config(&llm_config("ollama", &dead_url(), "fake-chat", "fake-embed"));
    let id = add(&env.engine(), "ed", Category::Style, "Original text");
    let docdex = env!("CARGO_BIN_EXE_docdex");
    let editor = env.dir.path().join("editor.sh");
    std::fs::write(
        &editor,
        format!(
            "#!/bin/sh\n'{docdex}' profile edit {id} --content 'Changed meanwhile' >/dev/null\nprintf 'My careful words\\n' > \"$1\"\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = std::process::Command::new("script")
        .args(["-qec", &format!("'{docdex}' profile edit {id}"), "/dev/null"])
        .env("DOCDEX_HOME", env.home())
        .env("EDITOR", &editor)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("changed after you read it") && text.contains("My careful words"), "{text}");
    assert_eq!(env.engine().profile_preference(&id).unwrap().content, "Changed meanwhile");
}

#[test]
fn a_mistyped_agent_is_said_to_be_unknown_with_the_closest_existing_name() {
    let env = Env::new();
    env.write_config(&llm_config("ollama", &dead_url(), "fake-chat", "fake-embed"));
    let repo = env.repo("r");
    crate::util::sample_repo(&repo);
    let r = repo.to_str().unwrap();
    assert!(env.run(&["index", "--repo", r]).status.success());
    let stderr = |args: &[&str]| {
        let out = env.run(args);
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    // Reads refuse it, naming the agent it most likely means.
    for args in [&["profile", "list", "--agent", "frontnd"][..], &["profile", "search", "--agent", "frontnd", "react"]]
    {
        let (code, err) = stderr(args);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("no agent \"frontnd\"") && err.contains("did you mean mcoda_frontend?"), "{err}");
    }
    // chat and map still answer (with the team's preferences, the name's words) but say so.
    let (_, err) = stderr(&["chat", "--repo", r, "--no-web", "--agent", "frontnd", "where are sessions stored"]);
    assert!(err.contains("no agent frontnd in profile memory (did you mean mcoda_frontend?)"), "{err}");
    let (code, err) = stderr(&["map", "--repo", r, "--agent", "frontnd"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("did you mean mcoda_frontend?"), "{err}");
    // Writes may create an agent, and say so: with the likely meant one when it is a typo.
    let (code, err) = stderr(&["profile", "learn", "--agent", "frontnd", "we use vitest"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("created agent frontnd") && err.contains("did you mean mcoda_frontend?"), "{err}");
    let (_, err) = stderr(&["profile", "learn", "--agent", "frontnd", "we use pnpm"]);
    assert!(!err.contains("created agent"), "only the first write creates it: {err}");
    let (code, err) = stderr(&["profile", "add", "--agent", "reviewer", "-c", "style", "short functions"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("created agent reviewer (no agent had that name)") && !err.contains("did you mean"), "{err}");
}

/// Removals (a preference's tombstone, an agent's removal) were dropped 180 days after they
/// were made, and a machine that synced later brought the row back with its old copy. They are
/// kept however old (up to `MAX_KEPT_REMOVALS` of each kind, the horizon standing for the ones
/// dropped past it): an old removal is applied, kept, exported, and still wins over a stale
/// manifest that lists what it removed.
#[test]
fn removals_are_kept_however_old_so_a_stale_copy_never_comes_back() {
    let env = Env::new();
    let engine = env.engine_for("ollama", &dead_url(), "fake-chat", "fake-embed");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let day = 86_400_000i64;
    let old = now - 400 * day;
    let recent = now - day;
    let (p_old, p_new) = ("6f1b6a52-9c1e-4b7a-8d55-1f0c2a3b4c5d", "7a2c7b63-0d2f-4c8b-9e66-2a1d3b4c5d6e");
    let import = |name: &str, manifest: Value| {
        let file = env.dir.path().join(name);
        std::fs::write(&file, manifest.to_string()).unwrap();
        engine.profile_import(&file).unwrap()
    };
    let pref = |id: &str, text: &str, at: i64| json!({"id": id, "agent_id": "olga", "content": text, "category": "style", "last_updated": at, "source": "manual"});
    let agent = |id: &str, at: i64| json!({"id": id, "role": "Docs", "created_at": at, "role_updated": at});
    let stale = json!({"format": "docdex.profile_sync", "version": 1,
        "agents": [agent("olga", old - 2000), agent("gone", old - 2000), agent("fresh", old - 2000)],
        "preferences": [pref(p_old, "Prefer tabs", old - 1000), pref(p_new, "Prefer spaces", old - 1000)],
        "tombstones": [], "removed_agents": []});
    let r = import("first.json", stale.clone());
    assert_eq!((r.added, r.agents_added), (2, 3), "{r:?}");
    let r = import(
        "second.json",
        json!({"format": "docdex.profile_sync", "version": 1, "agents": [agent("olga", old - 2000)], "preferences": [],
            "tombstones": [{"id": p_old, "agent_id": "olga", "deleted_at": old},
                           {"id": p_new, "agent_id": "olga", "deleted_at": recent}],
            "removed_agents": [{"id": "gone", "removed_at": old}, {"id": "fresh", "removed_at": recent}]}),
    );
    assert_eq!((r.deleted, r.agents_removed), (2, 2), "both removals apply, however old: {r:?}");
    let m = engine.profile_export().unwrap();
    let kept: Vec<&str> = m.tombstones.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(kept, [p_old, p_new], "a removal over 180 days old is kept and travels on");
    let removed: Vec<&str> = m.removed_agents.iter().flatten().map(|r| r.id.as_str()).collect();
    assert_eq!(removed, ["fresh", "gone"]);
    // Neither removal is undone by the stale manifest that lists what it removed.
    let r = import("first-again.json", stale);
    assert_eq!((r.added, r.agents_added), (0, 0), "{r:?}");
    let m = engine.profile_export().unwrap();
    assert!(m.preferences.iter().all(|p| p.id != p_old && p.id != p_new), "no removed row came back");
}

/// `docdex profile export --out /nonexistent/dir/x.json` exited 0 and created the missing
/// directories, so a mistyped path went unnoticed. Now a given --out in a directory that does
/// not exist is refused (bad_request, exit 2) and nothing is created; the default sync path,
/// docdex's own, is still created.
#[test]
fn profile_export_refuses_an_out_path_in_a_missing_directory() {
    let env = Env::new();
    let missing = env.dir.path().join("no_such_dir");
    let f = missing.join("x.json");
    let out = env.run(&["profile", "export", "--out", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not exist") && err.contains("no_such_dir"), "{err}");
    assert!(!missing.exists(), "the missing directory is not created");
    let ok = env.dir.path().join("x.json");
    assert!(env.run(&["profile", "export", "--out", ok.to_str().unwrap()]).status.success());
    assert!(env.engine().profile_export_to(None).unwrap().path.is_file(), "the default sync dir is created");
}

/// tour18 F12: the starter preferences read `seed · 47 w ago` on a home made a minute ago (their
/// time is the defaults' fixed date). They read `built-in`; one added here keeps its source and
/// age, and `--json` keeps the stored source and time.
#[test]
fn starter_preferences_are_listed_as_built_in_not_aged_from_the_defaults_date() {
    let env = Env::new();
    let out =
        env.run(&["profile", "add", "--agent", "mcoda_backend", "--category", "style", "Name booleans as questions"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = env.run(&["profile", "list", "--agent", "mcoda_backend"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains(" · built-in") && !text.contains("seed"), "{text}");
    assert!(text.contains(" · manual · just now"), "{text}");
    let v = env.json(&["profile", "list", "--agent", "mcoda_backend", "--json"]);
    let prefs = v["preferences"].as_array().expect("preferences");
    assert!(prefs.iter().any(|p| p["source"] == "seed" && p["last_updated"].as_i64().is_some()), "{v}");
}
