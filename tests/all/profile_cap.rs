//! Profile memory stays bounded (tour19 F10): an agent keeps at most
//! `[memory.profile] max_preferences_per_agent` preferences (an add, a learnt preference over
//! MCP and an import past it are refused, the import whole), and an agent's list comes in
//! pages (`limit`, `after`, `next_after`) on the engine, the command line and HTTP; the TUI
//! still shows every preference. And indexing an empty repository with no embedder does not
//! claim to have embedded with the model (tour19 F9).

use crate::server_util::{client, Server};
use crate::util::{dead_url, llm_config, quiet, Env, McpStdio};
use docdex::engine::protocol::{
    Category, EmbedState, Preference, ProfileAddRequest, ProfileListRequest, ProfileRoleRequest,
};
use docdex::engine::IndexOptions;
use docdex::{Engine, Error};
use serde_json::{json, Value};

/// `[llm]` pointing at a closed port, and the given cap.
fn capped(env: &Env, cap: u32) -> Engine {
    env.write_config(&format!(
        "{}[memory.profile]\nmax_preferences_per_agent = {cap}\n",
        llm_config("ollama", &dead_url(), "fake-chat", "fake-embed")
    ));
    env.engine()
}

fn add(engine: &Engine, agent: &str, text: &str) -> Result<Preference, Error> {
    let req = ProfileAddRequest {
        agent_id: agent.into(),
        category: Some(if text.len().is_multiple_of(2) { Category::Style } else { Category::Workflow }),
        content: text.into(),
        rule: None,
        role: None,
    };
    engine.profile_add(&req).map(|r| r.preference)
}

fn list(engine: &Engine, agent: &str, limit: Option<usize>, after: Option<&str>) -> Result<Value, Error> {
    let req = ProfileListRequest { agent_id: Some(agent.into()), limit, after: after.map(String::from) };
    engine.profile_list(&req).map(|r| serde_json::to_value(r).unwrap())
}

/// A manifest of `n` preferences of `agent`, stamped `at`.
fn manifest(env: &Env, name: &str, agent: &str, n: usize, at: i64) -> std::path::PathBuf {
    let prefs: Vec<Value> = (0..n)
        .map(|i| {
            json!({"id": format!("00000000-0000-4000-8000-{i:012}"), "agent_id": agent,
                   "content": format!("imported rule {i} at {at}"), "category": "style",
                   "last_updated": at, "source": "import"})
        })
        .collect();
    let m = json!({"format": "docdex.profile_sync", "version": 1,
        "agents": [{"id": agent, "role": "", "created_at": at, "role_updated": 0}],
        "preferences": prefs, "tombstones": []});
    let path = env.home().join(name);
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(&path, m.to_string()).unwrap();
    path
}

fn message(e: Error) -> String {
    assert!(matches!(e, Error::BadRequest(_)), "{e:?}");
    e.to_string()
}

#[test]
fn an_agent_keeps_at_most_the_cap_and_an_import_past_it_is_refused_whole() {
    let env = Env::new();
    let engine = capped(&env, 3);
    for i in 0..3 {
        add(&engine, "bulk", &format!("rule number {i}")).expect("under the cap");
    }
    let said = message(add(&engine, "bulk", "one too many").unwrap_err());
    for needle in [
        "agent bulk already keeps 3 preferences",
        "the most one agent keeps (3)",
        "nothing added",
        "docdex profile remove ID",
        "max_preferences_per_agent",
    ] {
        assert!(said.contains(needle), "{needle}: {said}");
    }
    assert_eq!(list(&engine, "bulk", None, None).unwrap()["total"], 3);
    // The command line says the same, as bad input (exit 2).
    let out = env.run(&["profile", "add", "--agent", "bulk", "--category", "style", "one too many"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("already keeps 3 preferences"), "{out:?}");
    // An import that would take an agent past the cap stores nothing of the manifest.
    let five = manifest(&env, "five.json", "bulk2", 5, 1_800_000_000_000);
    let said = message(engine.profile_import(&five).unwrap_err());
    for needle in [
        "not imported (nothing of it was stored)",
        "at most 3 preferences",
        // Counted while the manifest is read (a lower bound, so "at least"): the read stops at
        // the first row past the cap.
        "bulk2 would hold at least 4 (holds 0)",
        "For bulk2: remove ones",
        "max_preferences_per_agent",
    ] {
        assert!(said.contains(needle), "{needle}: {said}");
    }
    let agents = engine.profile_list(&ProfileListRequest::default()).unwrap().agents;
    assert!(agents.iter().all(|a| a.id != "bulk2"), "the import's agent was not created either: {agents:?}");
    let out = env.run(&["profile", "import", five.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("bulk2 would hold at least 4"), "{out:?}");
    // Up to the cap it is taken.
    let two = manifest(&env, "two.json", "bulk2", 2, 1_800_000_000_000);
    assert_eq!(engine.profile_import(&two).unwrap().added, 2);
    // An agent over the cap (kept before the cap was lowered) still takes updates that do not
    // grow it, and nothing more.
    let env2 = Env::new();
    let roomy = capped(&env2, 10);
    assert_eq!(roomy.profile_import(&manifest(&env2, "a.json", "old", 5, 1_800_000_000_000)).unwrap().added, 5);
    drop(roomy);
    let tight = capped(&env2, 3);
    let r = tight.profile_import(&manifest(&env2, "b.json", "old", 5, 1_800_000_000_001)).expect("updates only");
    assert_eq!((r.added, r.updated), (0, 5));
    assert!(message(add(&tight, "old", "more").unwrap_err()).contains("already keeps 5 preferences"));
    // The TUI's whole list stops at the cap; the agent's count still says 5.
    let whole = tight.profile_list_whole(Some("old".into())).unwrap();
    assert_eq!(whole.preferences.len(), 3);
    assert_eq!(whole.agents.iter().find(|a| a.id == "old").map(|a| a.preference_count), Some(5));
}

#[test]
fn an_agents_list_comes_in_pages_on_the_engine_and_the_command_line() {
    let env = Env::new();
    let engine = capped(&env, 100);
    for i in 0..7 {
        add(&engine, "pager", &format!("paged rule {i}{}", "x".repeat(i))).unwrap();
    }
    let whole = list(&engine, "pager", Some(500), None).unwrap();
    let ids = |v: &Value| -> Vec<String> {
        v["preferences"].as_array().unwrap().iter().map(|p| p["id"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!((ids(&whole).len(), &whole["total"]), (7, &json!(7)), "{whole}");
    assert!(whole.get("next_after").is_none(), "{whole}");
    assert!(whole["note"].as_str().unwrap_or("").contains("at most 200"), "the cut is said: {whole}");
    assert_eq!(whole["max_per_agent"], 100);
    // Pages of 3 make the same list, each saying where the next starts.
    let (mut paged, mut after) = (Vec::new(), None::<String>);
    for expected in [3, 3, 1] {
        let page = list(&engine, "pager", Some(3), after.as_deref()).unwrap();
        assert_eq!((ids(&page).len(), &page["total"]), (expected, &json!(7)), "{page}");
        paged.extend(ids(&page));
        after = page["next_after"].as_str().map(String::from);
        if let Some(next) = &after {
            assert!(page["note"].as_str().unwrap().contains(&format!("--after {next}")), "{page}");
        }
    }
    assert_eq!((paged, after), (ids(&whole), None));
    assert_eq!(ids(&list(&engine, "pager", None, None).unwrap()).len(), 7, "default page of 50");
    // Bad paging input is refused, saying what to give.
    assert!(message(list(&engine, "pager", Some(0), None).unwrap_err()).contains("give 1 to 200"));
    let gone = list(&engine, "pager", None, Some("00000000-0000-4000-8000-000000000000")).unwrap_err();
    assert!(matches!(gone, Error::NotFound(_)) && gone.to_string().contains("list pager's preferences again"));
    let team = engine.profile_list(&ProfileListRequest { agent_id: Some("team".into()), ..Default::default() });
    let other = team.unwrap().preferences[0].id.clone();
    assert!(message(list(&engine, "pager", None, Some(&other)).unwrap_err()).contains("is team's, not pager's"));
    let no_agent = ProfileListRequest { after: Some(other), ..Default::default() };
    assert!(message(engine.profile_list(&no_agent).unwrap_err()).contains("name the agent too"));
    // The command line: one page, the way on told on stderr.
    let out = env.run(&["profile", "list", "--agent", "pager", "--limit", "3"]);
    assert!(out.status.success(), "{out:?}");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let first = list(&engine, "pager", Some(3), None).unwrap();
    let next = first["next_after"].as_str().unwrap();
    assert!(
        stderr.contains(&format!("3 of pager's 7 preferences; `docdex profile list --agent pager --after {next}`")),
        "{stderr}"
    );
    assert!(stdout.contains(first["preferences"][0]["content"].as_str().unwrap()), "{stdout}");
    assert!(!stdout.contains(whole["preferences"][6]["content"].as_str().unwrap()), "{stdout}");
    let v = env.json(&["profile", "list", "--agent", "pager", "--after", next, "--json"]);
    assert_eq!((v["preferences"].as_array().unwrap().len(), &v["total"]), (4, &json!(7)), "{v}");
    let out = env.run(&["profile", "list", "--agent", "pager", "--limit", "0"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

#[tokio::test]
async fn http_pages_the_list_and_mcp_learning_stops_at_the_cap() {
    let env = Env::new();
    let engine = capped(&env, 4);
    // The engine blocks on its own runtime: off this test's.
    tokio::task::spawn_blocking(move || {
        for i in 0..4 {
            add(&engine, "web", &format!("web rule {i}")).unwrap();
        }
    })
    .await
    .unwrap();
    let daemon = Server::start(&env, &["daemon", "--no-watch"], &[]);
    let get = |q: &str| {
        let url = daemon.url(&format!("/v1/profile/list?agent_id=web{q}"));
        async move {
            let resp = client().get(url).send().await.unwrap();
            (resp.status().as_u16(), resp.json::<Value>().await.unwrap())
        }
    };
    let (s, first) = get("&limit=3").await;
    assert_eq!(
        (s, first["preferences"].as_array().map(Vec::len), &first["total"]),
        (200, Some(3), &json!(4)),
        "{first}"
    );
    let next = first["next_after"].as_str().expect("next_after").to_string();
    let (s, rest) = get(&format!("&after={next}")).await;
    assert_eq!((s, rest["preferences"].as_array().map(Vec::len)), (200, Some(1)), "{rest}");
    assert!(rest.get("next_after").is_none(), "{rest}");
    let (s, v) = get("&limit=0").await;
    assert_eq!((s, v["error"]["code"].as_str()), (400, Some("bad_request")), "{v}");
    let (s, v) = (client().post(daemon.url("/v1/profile/add")))
        .json(&json!({"agent_id": "web", "category": "style", "content": "one too many"}))
        .send()
        .await
        .map(|r| (r.status().as_u16(), r))
        .unwrap();
    let v: Value = v.json().await.unwrap();
    assert_eq!(s, 400, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("already keeps 4 preferences"), "{v}");
    daemon.terminate();
    // Over MCP, a preference learnt past the cap is a tool error saying so.
    let mut mcp = McpStdio::start(&env, &["--agent-id", "web"], json!({}));
    let r = mcp.call("docdex_save_preference", json!({"preference": "Always use tabs", "category": "style"}));
    assert_eq!(r["isError"], true, "{r}");
    let text = r["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("already keeps 4 preferences") && text.contains("max_preferences_per_agent"), "{r}");
}

#[test]
fn the_tui_worker_loads_every_preference_past_one_page() {
    use docdex::tui::event::{EngineEvent, ProfileJob, ProfileUpdate, Request};
    let h = crate::tui_support::Harness::new();
    for i in 0..230 {
        add(&h.engine, "many", &format!("many rule {i}")).unwrap();
    }
    let events =
        docdex::tui::worker::run_sync(&h.engine, Request::Profile(ProfileJob::List { agent: Some("many".into()) }));
    let listed = events.into_iter().find_map(|e| match e {
        EngineEvent::Profile(ProfileUpdate::Listed { result, .. }) => Some(result),
        _ => None,
    });
    let listed = listed.expect("listed").expect("no error");
    assert_eq!((listed.preferences.len(), listed.next_after, listed.note), (230, None, None));
}

#[test]
fn indexing_an_empty_repository_without_an_embedder_says_no_vectors_were_made() {
    let env = Env::new();
    env.write_config(&llm_config("ollama", &dead_url(), "fake-chat", "nomic-embed-text"));
    let repo = env.repo("empty");
    let summary = env.engine().index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    let e = summary.embeddings.expect("an embedding summary");
    assert_eq!(e.state, EmbedState::Unavailable, "{e:?}");
    assert!(e.notice.as_deref().unwrap_or("").starts_with("embeddings skipped: "), "{e:?}");
    let out = env.run(&["index", "--repo", repo.to_str().unwrap()]);
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!all.contains("embedded 0 chunks"), "{all}");
    assert!(all.contains("embeddings skipped"), "{all}");
}

/// The count before the merge is a lower bound, never more: rows the same manifest removes
/// again, ids given twice and rows known here already are not counted, so an import the merge
/// leaves under the cap is taken (the exact check after the merge stays).
#[test]
fn the_count_before_an_import_never_refuses_what_the_merge_would_take() {
    let env = Env::new();
    let engine = capped(&env, 3);
    let path = manifest(&env, "six.json", "trim", 6, 1_800_000_000_000);
    let mut m: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let ids: Vec<String> =
        m["preferences"].as_array().unwrap().iter().map(|p| p["id"].as_str().unwrap().to_string()).collect();
    m["tombstones"] = json!(ids[..3]
        .iter()
        .map(|id| json!({"id": id, "agent_id": "trim", "deleted_at": 1_800_000_000_001_i64}))
        .collect::<Vec<_>>());
    std::fs::write(&path, m.to_string()).unwrap();
    let r = engine.profile_import(&path).expect("3 of 6 removed by the manifest itself: 3 kept, the cap");
    assert_eq!(list(&engine, "trim", None, None).unwrap()["total"], 3, "{r:?}");
    // Six rows of one text are one preference after the merge: taken too.
    let path = manifest(&env, "same.json", "same", 6, 1_800_000_000_000);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, regex::Regex::new(r"imported rule \d+").unwrap().replace_all(&text, "one rule").as_ref())
        .unwrap();
    engine.profile_import(&path).expect("repeats merge into one");
    assert_eq!(list(&engine, "same", None, None).unwrap()["total"], 1);
    // Ids given again later in the manifest (each a second row of the same preference) are
    // known from the first pass, so the rows read before them are not counted as sure.
    let env = Env::new();
    let engine = capped(&env, 3);
    let path = manifest(&env, "twice.json", "twice", 6, 1_800_000_000_000);
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text.replace("-000000000003", "-000000000000").replace("-000000000004", "-000000000001");
    std::fs::write(&path, text.replace("-000000000005", "-000000000002")).unwrap();
    engine.profile_import(&path).expect("6 rows of 3 ids: 3 preferences, the cap");
    assert_eq!(list(&engine, "twice", None, None).unwrap()["total"], 3);
}

/// A manifest far past the cap was parsed whole into memory (60,000 rows for one agent: 202 MB
/// and 1.6 s on a debug binary) before the count refused it. The preferences are now read one
/// by one and the read stops at the first row that surely takes the agent past the cap, so the
/// refusal says "at least" the cap plus one; a file over the size bound is refused before it
/// is read, naming the bound in MB and bytes and what to do.
#[test]
fn a_huge_manifest_is_refused_while_it_is_read() {
    let env = Env::new();
    let engine = capped(&env, 50);
    let huge = manifest(&env, "huge.json", "bulk", 20_000, 1_800_000_000_000);
    let said = message(engine.profile_import(&huge).unwrap_err());
    for needle in [
        "not imported (nothing of it was stored)",
        "one agent keeps at most 50 preferences",
        "bulk would hold at least 51 (holds 0)",
        "docdex profile remove ID",
        "[memory.profile] max_preferences_per_agent",
        "leave preferences out of the manifest",
    ] {
        assert!(said.contains(needle), "{needle}: {said}");
    }
    let agents = engine.profile_list(&ProfileListRequest::default()).unwrap().agents;
    assert!(agents.iter().all(|a| a.id != "bulk"), "nothing stored: {agents:?}");
    let out = env.run(&["profile", "import", huge.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("bulk would hold at least 51 (holds 0)"), "{out:?}");
    // Over the size bound: refused from its size, before a byte is read (a sparse file).
    let big = env.home().join("big.json");
    std::fs::File::create(&big).unwrap().set_len(64 * 1024 * 1024 + 1).unwrap();
    let said = message(engine.profile_import(&big).unwrap_err());
    for needle in ["is 64 MB (67108865 bytes)", "at most 64 MB (67108864 bytes)", "leave agents or preferences out"] {
        assert!(said.contains(needle), "{needle}: {said}");
    }
    // Under the cap the same reading takes every row.
    let fifty = manifest(&env, "fifty.json", "bulk", 50, 1_800_000_000_000);
    assert_eq!(engine.profile_import(&fifty).unwrap().added, 50);
}

/// `[memory.profile] max_agents`: an add, a role or an import that would create one agent
/// more than the cap is refused, saying how many are kept and what to do; existing agents
/// still take preferences.
#[test]
fn profile_memory_keeps_at_most_max_agents() {
    let env = Env::new();
    let held = capped(&env, 100).profile_list(&ProfileListRequest::default()).unwrap().agents.len();
    env.write_config(&format!(
        "{}[memory.profile]\nmax_agents = {}\n",
        llm_config("ollama", &dead_url(), "fake-chat", "fake-embed"),
        held + 1
    ));
    let engine = env.engine();
    add(&engine, "first_new", "one rule").expect("one agent of room");
    let said = message(add(&engine, "second_new", "one rule").unwrap_err());
    for needle in [
        format!("already keeps {} agents, the most it keeps ({})", held + 1, held + 1),
        "agent second_new not created".into(),
        "docdex profile remove --agent ID".into(),
        "max_agents".into(),
    ] {
        assert!(said.contains(&needle), "{needle}: {said}");
    }
    let role = ProfileRoleRequest { agent_id: "third_new".into(), role: "Reviewer".into() };
    assert!(message(engine.profile_set_role(&role).unwrap_err()).contains("agent third_new not created"));
    add(&engine, "first_new", "another rule").expect("an existing agent takes more");
    let agents = engine.profile_list(&ProfileListRequest::default()).unwrap().agents;
    assert_eq!(agents.len(), held + 1, "{agents:?}");
    // An import that creates an agent past the cap is refused whole, at once.
    let one = manifest(&env, "one.json", "imported_new", 1, 1_800_000_000_000);
    let said = message(engine.profile_import(&one).unwrap_err());
    assert!(said.contains(&format!("keeps at most {} agents", held + 1)), "{said}");
    assert!(said.contains(&format!("would hold at least {} (holds {})", held + 2, held + 1)), "{said}");
    assert_eq!(engine.profile_list(&ProfileListRequest::default()).unwrap().agents.len(), held + 1);
    let out = env.run(&["profile", "add", "--agent", "fourth_new", "--category", "style", "x rule"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("max_agents"), "{out:?}");
}
