//! Tier 0 in a real chat turn: the agent's preferences (with the team's) fill the profile slot
//! up to its 1,000-token cap, the least similar dropped first and each drop in the trace; they
//! come before the repository context in the prompt (the hierarchy of truth); workflow
//! preferences shape the plan; the project map gets its own slot. Also the project map itself:
//! the spotlight (tooling brings its config file), the cache, and its invalidation when the
//! watcher sees a directory created or deleted.

use crate::profiles::add;
use crate::util::{llm_config, quiet, sample_repo, write, Env};
use docdex::engine::protocol::{
    Category, ChatTurnRequest, NodeKind, ProfileAddRequest, ProfileSearchRequest, ProjectMapRequest, Slot, StepStatus,
    WatchReport,
};
use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
use docdex::Engine;
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const TOPICS: &[&str] = &[
    "session expiry",
    "database migrations",
    "css grid layout",
    "error messages",
    "logging format",
    "retry backoff",
    "dependency upgrades",
    "feature flags",
    "api versioning",
    "date handling",
    "http timeouts",
    "cache invalidation",
];

fn indexed(env: &Env, fake: &FakeOllama) -> (Engine, std::path::PathBuf) {
    env.write_config(&llm_config("ollama", &fake.url(), "fake-chat", "fake-embed"));
    let repo = env.repo("proj");
    sample_repo(&repo);
    let engine = env.engine();
    engine.index(&repo, &Default::default(), &quiet()).unwrap();
    (engine, repo)
}

#[test]
fn the_profile_slot_is_capped_least_similar_first_and_precedes_the_repository() {
    let fake = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    let env = Env::new();
    let (engine, repo) = indexed(&env, &fake);
    // 60 preferences of about 30 tokens each: far more than 1,000 tokens.
    for i in 0..60 {
        let topic = TOPICS[i % TOPICS.len()];
        let cat = [Category::Style, Category::Tooling, Category::Workflow][i % 3];
        add(
            &engine,
            "tara",
            cat,
            &format!("When working on {topic} number {i}, keep the change small, name things plainly and explain the reason in the commit message"),
        );
    }
    engine
        .profile_add(&ProfileAddRequest {
            agent_id: "tara".into(),
            category: Some(Category::Constraint),
            content: "Avoid circular dependencies when touching session expiry".into(),
            rule: None,
            role: None,
        })
        .unwrap();
    let query = "how does session expiry work";
    let req = ChatTurnRequest { query: query.into(), agent_id: Some("tara".into()), ..Default::default() };
    let resp = engine.chat(&repo, &req, &mut |_| ControlFlow::Continue(())).unwrap();
    let trace = &resp.trace;
    assert_eq!(trace.agent_id.as_deref(), Some("tara"));
    let step = trace.steps.iter().find(|s| s.name == "profile").unwrap();
    assert_eq!((step.tier, step.status), (0, StepStatus::Ran), "{step:?}");
    assert_eq!(step.items, 61 + 5, "all of tara's and the team's preferences recalled: {step:?}");
    assert!(step.detail.contains("by meaning"), "{}", step.detail);

    // The cap: 1,000 tokens in an 8,192-token window.
    let slot = trace.budget.slots.iter().find(|s| s.slot == Slot::Profile).unwrap();
    assert_eq!(slot.allotted, 1000, "{slot:?}");
    assert!(slot.used <= 1000 && slot.used > 800, "{slot:?}");
    assert!(slot.items > 5 && slot.dropped > 10, "{slot:?}");
    let drops: Vec<&str> = trace.drops.iter().filter(|d| d.slot == Slot::Profile).map(|d| d.source.as_str()).collect();
    assert_eq!(drops.len() as u32, slot.dropped);
    // The step says how many of the recalled preferences the prompt holds: it said "66
    // preferences recalled", read as all of them in the prompt, when the cap kept a few.
    let said = format!(
        "{} of 66 preferences of tara + team used (recalled by meaning), 1 with a rule; {} dropped: the least similar, past the profile slot's 1000 tokens",
        slot.items, slot.dropped
    );
    assert_eq!(step.detail, said);
    assert!(trace.drops.iter().filter(|d| d.slot == Slot::Profile).skip(1).all(|d| d.reason.contains("less similar")));

    // Least similar first: every kept preference is at least as similar as every dropped one.
    let scores: HashMap<String, f32> = engine
        .profile_search(&ProfileSearchRequest {
            agent_id: "tara".into(),
            query: query.into(),
            limit: Some(100),
            without_team: false,
        })
        .unwrap()
        .results
        .into_iter()
        .map(|h| (format!("profile:{}", &h.preference.id[..8]), h.similarity_score))
        .collect();
    let kept: Vec<f32> = resp.sources.iter().filter(|s| s.slot == Slot::Profile).map(|s| scores[&s.citation]).collect();
    let dropped: Vec<f32> = drops.iter().map(|c| scores[*c]).collect();
    let min_kept = kept.iter().cloned().fold(f32::MAX, f32::min);
    let max_dropped = dropped.iter().cloned().fold(f32::MIN, f32::max);
    assert!(min_kept >= max_dropped, "kept down to {min_kept}, dropped up to {max_dropped}");
    // The constraint about session expiry is the closest: it is kept, with its rule.
    let prompt = fake
        .requests()
        .into_iter()
        .rev()
        .find(|(p, _)| p == "/api/chat")
        .map(|(_, b)| b["messages"][0]["content"].as_str().unwrap().to_string())
        .unwrap();
    assert!(prompt.contains("[constraint, checked at commit: no-import-cycles] Avoid circular dependencies when touching session expiry"), "{prompt}");

    // The hierarchy of truth: instructions, profile, map, then the repository.
    let at = |s: &str| prompt.find(s).unwrap_or_else(|| panic!("{s:?} missing from the prompt:\n{prompt}"));
    assert!(at("You are docdex") < at("## How agent tara and the team want code written"));
    assert!(at("## How agent tara") < at("## Project map for agent tara"));
    assert!(at("## Project map for agent tara") < at("## Repository snippets"));
    assert!(
        prompt.contains("the repository context below is the technical truth")
            || prompt.contains("The repository context below is the technical truth")
    );
    // Style lines are advice; workflow preferences shape the plan.
    assert!(prompt.contains("- [style] When working on"), "{prompt}");
    let session = engine.dag_session(&repo, &resp.session_id).unwrap();
    let plan = session.nodes.iter().find(|n| n.kind == NodeKind::Thought).unwrap();
    assert!(plan.label.contains("follow the workflow preference"), "{}", plan.label);

    // The map slot: its own, capped at 500.
    let map = trace.budget.slots.iter().find(|s| s.slot == Slot::Map).unwrap();
    assert_eq!(map.allotted.min(500), map.allotted);
    assert_eq!(map.items, 1, "{map:?}");
    assert!(trace.steps.iter().any(|s| s.name == "project_map" && s.status == StepStatus::Ran));
}

/// An agent may hold a text the team also holds (a write compares only the agent's own, and
/// so does `learn`); the profile slot then carried that line twice, once as the agent's and
/// once as the team's. The team's copy is left out, and the step says so.
#[test]
fn a_team_preference_the_agent_repeats_goes_into_the_prompt_once() {
    let fake = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    let env = Env::new();
    let (engine, repo) = indexed(&env, &fake);
    let text = "Write or update tests with every change in behaviour.";
    let own = add(&engine, "uma", Category::Workflow, text);
    let req =
        ChatTurnRequest { query: "how are tests written".into(), agent_id: Some("uma".into()), ..Default::default() };
    let resp = engine.chat(&repo, &req, &mut |_| ControlFlow::Continue(())).unwrap();
    let prompt = fake
        .requests()
        .into_iter()
        .rev()
        .find(|(p, _)| p == "/api/chat")
        .map(|(_, b)| b["messages"][0]["content"].as_str().unwrap().to_string())
        .unwrap();
    assert_eq!(prompt.matches(text).count(), 1, "{prompt}");
    let cited: Vec<&str> =
        resp.sources.iter().filter(|s| s.slot == Slot::Profile).map(|s| s.citation.as_str()).collect();
    assert!(cited.contains(&format!("profile:{}", &own[..8]).as_str()), "the agent's own copy is kept: {cited:?}");
    let step = resp.trace.steps.iter().find(|s| s.name == "profile").unwrap();
    assert!(step.detail.starts_with("5 preferences of uma + team"), "{}", step.detail);
    assert!(step.detail.contains("1 left out as repeating one of uma's own"), "{}", step.detail);
}

#[test]
fn without_an_agent_tier_0_is_skipped_and_the_default_agent_applies() {
    let fake = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    let env = Env::new();
    let (engine, repo) = indexed(&env, &fake);
    let resp = engine
        .chat(&repo, &ChatTurnRequest { query: "session store".into(), ..Default::default() }, &mut |_| {
            ControlFlow::Continue(())
        })
        .unwrap();
    let step = resp.trace.steps.iter().find(|s| s.name == "profile").unwrap();
    assert_eq!(step.status, StepStatus::Skipped);
    assert!(resp.sources.iter().all(|s| s.slot != Slot::Profile));
    // With a default agent configured, the factory persona answers.
    env.write_config(&format!(
        "{}\n[memory.profile]\ndefault_agent = \"mcoda_frontend\"\n",
        llm_config("ollama", &fake.url(), "fake-chat", "fake-embed")
    ));
    let engine = env.engine();
    let resp = engine
        .chat(&repo, &ChatTurnRequest { query: "render the dashboard".into(), ..Default::default() }, &mut |_| {
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(resp.trace.agent_id.as_deref(), Some("mcoda_frontend"));
    assert!(resp.sources.iter().any(|s| s.slot == Slot::Profile), "{:?}", resp.sources);
    // Every recalled preference fits, and the step says so.
    let step = resp.trace.steps.iter().find(|s| s.name == "profile").unwrap();
    let kept = resp.sources.iter().filter(|s| s.slot == Slot::Profile).count() as u32;
    assert_eq!(step.items, kept, "{step:?}");
    assert!(
        step.detail.starts_with(&format!(
            "{kept} preferences of mcoda_frontend + team recalled by meaning, all used, 1 with a rule"
        )),
        "{}",
        step.detail
    );
    // An agent nobody created still gets the team's preferences, and the step says so.
    let resp = engine
        .chat(
            &repo,
            &ChatTurnRequest { query: "x y z".into(), agent_id: Some("newcomer".into()), ..Default::default() },
            &mut |_| ControlFlow::Continue(()),
        )
        .unwrap();
    let step = resp.trace.steps.iter().find(|s| s.name == "profile").unwrap();
    assert!(step.detail.contains("only the team's apply"), "{}", step.detail);
    assert!(resp.sources.iter().filter(|s| s.slot == Slot::Profile).all(|s| s.note.ends_with("team")));
}

#[test]
fn the_map_spotlights_tooling_and_roles_and_is_cached() {
    let env = Env::new();
    let fake = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    env.write_config(&llm_config("ollama", &fake.url(), "fake-chat", "fake-embed"));
    let repo = env.repo("web");
    write(&repo, "vitest.config.ts", "export default {}\n");
    write(&repo, "jest.config.js", "module.exports = {}\n");
    write(&repo, "src/components/Button.tsx", "export const Button = () => null;\n");
    write(&repo, "src/server/db.ts", "export const db = 1;\n");
    for i in 0..30 {
        write(&repo, &format!("src/lib/util_{i}.ts"), format!("export const u{i} = {i};\n"));
    }
    let engine = env.engine();
    engine.index(&repo, &Default::default(), &quiet()).unwrap();
    add(&engine, "una", Category::Tooling, "Use vitest for unit tests");
    let map = engine.project_map(&repo, &ProjectMapRequest { agent_id: Some("una".into()), refresh: false }).unwrap();
    assert!(!map.cached);
    assert_eq!(map.paths.first().map(String::as_str), Some("vitest.config.ts"), "{map:?}");
    assert!(map.tree.contains("vitest.config.ts"), "{}", map.tree);
    let rank =
        |m: &docdex::engine::protocol::ProjectMap, p: &str| m.paths.iter().position(|x| x == p).unwrap_or(usize::MAX);
    assert!(rank(&map, "vitest.config.ts") < rank(&map, "jest.config.js"), "{map:?}");
    assert!(map.paths.len() <= 50);
    assert!(map.tokens <= 500);
    let front = engine
        .project_map(&repo, &ProjectMapRequest { agent_id: Some("mcoda_frontend".into()), refresh: false })
        .unwrap();
    assert!(
        front.paths.iter().any(|p| p == "src/components/Button.tsx"),
        "the frontend role finds components: {front:?}"
    );
    assert!(rank(&front, "src/components/Button.tsx") < rank(&front, "src/server/db.ts"), "{front:?}");
    // A big repository: only the spotlight is shown, the rest counted.
    for i in 0..80 {
        write(&repo, &format!("vendor/pkg{i}/index.js"), "module.exports = 1;\n");
    }
    engine.index(&repo, &Default::default(), &quiet()).unwrap();
    let big = engine.project_map(&repo, &ProjectMapRequest { agent_id: Some("una".into()), refresh: false }).unwrap();
    assert!(!big.cached, "new files threw the cached map away");
    assert!(big.hidden_files >= 60 && big.paths.len() <= 50, "{big:?}");
    assert!(big.tree.contains("hidden files]") && big.tokens <= 500, "{}", big.tree);
    let again = engine.project_map(&repo, &ProjectMapRequest { agent_id: Some("una".into()), refresh: false }).unwrap();
    assert!(again.cached);
    assert!(repo_state(&engine, &repo).join("maps/una.json").is_file());
    // The CLI prints the same tree.
    let out = env.run(&["map", "--repo", repo.to_str().unwrap(), "--agent", "una"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("vitest.config.ts"));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("not in profile memory"), "{out:?}");
    // An agent profile memory does not know still gets a map, and is told so.
    let out = env.run(&["map", "--repo", repo.to_str().unwrap(), "--agent", "nobody_known"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no agent nobody_known in profile memory"), "{out:?}");
}

#[test]
fn a_mistyped_agent_gets_the_agentless_map_and_a_notice_naming_the_agent_meant_in_json_too() {
    // `docdex map --agent pyjsn --json` and `GET /v1/map?agent_id=pyjsn` answered a map with no
    // path (every file hidden) and no notice; only the text output said "did you mean pyjson?".
    use crate::server_util::{client, Server};
    let env = Env::new();
    let fake = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    env.write_config(&llm_config("ollama", &fake.url(), "fake-chat", "fake-embed"));
    let repo = env.repo("py");
    write(&repo, "README.md", "# py\n");
    write(&repo, "pyproject.toml", "[project]\nname = \"py\"\n");
    write(&repo, "app/core/models.py", "class Model:\n    pass\n");
    for i in 0..4 {
        write(&repo, &format!("app/views/view_{i}.py"), "from app.core.models import Model\n");
    }
    let engine = env.engine();
    engine.index(&repo, &Default::default(), &quiet()).unwrap();
    add(&engine, "pyjson", Category::Style, "Keep functions short");
    let none = engine.project_map(&repo, &ProjectMapRequest { agent_id: None, refresh: false }).unwrap();
    assert!(none.notices.is_empty() && none.closest_agent.is_none(), "{none:?}");
    assert!(!none.paths.is_empty(), "{none:?}");
    let r = repo.to_str().unwrap();
    // The agent-less map, cached as that one (built by the call above): an agent profile memory
    // does not hold gets no cache file of its own (one per name asked for had no end).
    for _ in 0..2 {
        let v = env.json(&["map", "--repo", r, "--agent", "pyjsn", "--json"]);
        assert_eq!(v["cached"], true, "{v}");
        assert_eq!(v["agent_id"], "pyjsn", "{v}");
        assert_eq!(v["closest_agent"], "pyjson", "{v}");
        let notices: Vec<&str> = v["notices"].as_array().unwrap().iter().filter_map(|n| n.as_str()).collect();
        assert!(notices[0].starts_with("no agent pyjsn in profile memory (did you mean pyjson?)"), "{notices:?}");
        assert!(notices[0].contains("the map is the one without an agent"), "{notices:?}");
        assert_eq!(v["keywords"], serde_json::json!([]), "no spotlight: {v}");
        let paths: Vec<&str> = v["paths"].as_array().unwrap().iter().filter_map(|p| p.as_str()).collect();
        assert_eq!(paths, none.paths, "the agent-less view, not an empty map");
    }
    assert!(!repo_state(&engine, &repo).join("maps/pyjsn.json").exists());
    let out = env.run(&["map", "--repo", r, "--agent", "pyjsn"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("did you mean pyjson?") && err.contains("without an agent"), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("models.py"), "{out:?}");
    // A known agent has no notice.
    let known = engine.project_map(&repo, &ProjectMapRequest { agent_id: Some("pyjson".into()), refresh: false });
    assert!(known.unwrap().notices.iter().all(|n| !n.contains("profile memory")));
    // A known agent whose words find no file (no embedder to add the nearest by meaning) gets
    // the agent-less view too, and is told so.
    let plain = Env::new();
    let engine2 = plain.engine();
    engine2.index(&repo, &Default::default(), &quiet()).unwrap();
    add(&engine2, "zyx", Category::Style, "Keep functions short");
    let lost = engine2.project_map(&repo, &ProjectMapRequest { agent_id: Some("zyx".into()), refresh: false }).unwrap();
    assert_eq!(lost.paths, none.paths, "{lost:?}");
    assert!(lost.notices.iter().any(|n| n.contains("the spotlight on zyx's words found no file")), "{lost:?}");

    let server = Server::start(&env, &["serve", "--repo", r, "--no-watch"], &[]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let v: serde_json::Value = rt.block_on(async {
        let resp = client().get(server.url("/v1/map?agent_id=pyjsn")).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        resp.json().await.unwrap()
    });
    assert_eq!(v["closest_agent"], "pyjson", "{v}");
    assert!(v["notices"][0].as_str().unwrap().contains("did you mean pyjson?"), "{v}");
    assert!(!v["paths"].as_array().unwrap().is_empty(), "{v}");
}

#[test]
fn without_an_agent_the_map_shows_the_project_files_and_the_most_imported_modules() {
    let env = Env::new();
    let repo = env.repo("py");
    write(&repo, "README.md", "# py\n");
    write(&repo, "pyproject.toml", "[project]\nname = \"py\"\n");
    write(&repo, "notes.txt", "scratch\n");
    write(&repo, "app/core/models.py", "class Model:\n    pass\n");
    write(&repo, "app/core/db.py", "from app.core.models import Model\n");
    for i in 0..12 {
        write(
            &repo,
            &format!("app/views/view_{i}.py"),
            "from app.core.models import Model\nfrom app.core.db import *\n",
        );
    }
    write(&repo, "tests/helpers.py", "X = 1\n");
    for i in 0..20 {
        write(&repo, &format!("tests/test_{i}.py"), "from tests.helpers import X\n");
    }
    let engine = env.engine();
    engine.index(&repo, &Default::default(), &quiet()).unwrap();
    let map = engine.project_map(&repo, &ProjectMapRequest { agent_id: None, refresh: false }).unwrap();
    assert!(map.agent_id.is_none() && map.keywords.is_empty());
    // The project's own files, then the modules by how many files import them; a test helper
    // imported by every test is not the project's centre, and a leaf module shows nowhere.
    assert_eq!(map.paths, ["README.md", "pyproject.toml", "app/core/models.py", "app/core/db.py"], "{map:?}");
    assert!(map.tree.contains("models.py") && map.tree.contains("pyproject.toml"), "{}", map.tree);
    assert!(!map.tree.contains("helpers.py") && !map.tree.contains("view_3.py"), "{}", map.tree);
    assert!(map.tree.contains("[12 hidden files]"), "{}", map.tree);
    let out = env.run(&["map", "--repo", repo.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("models.py"), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("modules most of it imports"), "{out:?}");
}

fn repo_state(engine: &Engine, repo: &std::path::Path) -> std::path::PathBuf {
    engine.resolve_repo(repo).unwrap().state_dir
}

fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_watcher_invalidates_maps_when_files_come_or_go_not_on_edits() {
    let env = Env::new();
    let fake = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    env.write_config(&llm_config("ollama", &fake.url(), "fake-chat", "fake-embed"));
    let repo = std::fs::canonicalize(env.repo("w")).unwrap();
    sample_repo(&repo);
    let engine = env.engine();
    engine.index(&repo, &Default::default(), &quiet()).unwrap();
    let cached = repo_state(&engine, &repo).join("maps/mcoda_backend.json");
    let map = |e: &Engine| {
        e.project_map(&repo, &ProjectMapRequest { agent_id: Some("mcoda_backend".into()), refresh: false }).unwrap()
    };
    map(&engine);
    assert!(cached.is_file());

    let stop = Arc::new(AtomicBool::new(false));
    let applied = Arc::new(std::sync::Mutex::new(Vec::<Vec<String>>::new()));
    let watcher = {
        let (engine, repo, stop, applied) = (engine.clone(), repo.clone(), stop.clone(), applied.clone());
        std::thread::spawn(move || {
            engine
                .watch(&repo, &stop, &move |r| match r {
                    WatchReport::Applied { paths, .. } => applied.lock().unwrap().push(paths),
                    WatchReport::Ready(_) => applied.lock().unwrap().push(vec!["<ready>".into()]),
                    WatchReport::Failed(_) => {}
                })
                .unwrap()
        })
    };
    wait_until("the watcher's catch-up run", || !applied.lock().unwrap().is_empty());
    // A file edit leaves the map alone.
    write(&repo, "src/parser.py", "def parse_config(path):\n    return path\n");
    wait_until("the edit applied", || applied.lock().unwrap().iter().flatten().any(|p| p == "src/parser.py"));
    assert!(cached.is_file(), "an edit does not invalidate the map");
    assert!(map(&engine).cached);
    // A new directory does.
    write(&repo, "services/billing/invoice.py", "def invoice():\n    return 1\n");
    wait_until("the map thrown away", || !cached.exists());
    // Let the watcher settle (the new directories may arrive in more than one batch).
    let mut seen = usize::MAX;
    loop {
        std::thread::sleep(Duration::from_millis(1200));
        let now = applied.lock().unwrap().len();
        if now == seen {
            break;
        }
        seen = now;
    }
    assert!(!map(&engine).cached);
    assert!(map(&engine).cached);
    // So does removing one.
    std::fs::remove_dir_all(repo.join("services")).unwrap();
    wait_until("the map thrown away again", || !cached.exists());
    // And a file deleted from a folder that stays: the map listed it on (tour36 F3).
    std::thread::sleep(Duration::from_millis(1500));
    map(&engine);
    assert!(cached.is_file());
    std::fs::remove_file(repo.join("src/parser.py")).unwrap();
    wait_until("a deleted file throws the map away", || !cached.exists());
    wait_until("the deletion applied", || {
        applied.lock().unwrap().iter().flatten().filter(|p| *p == "src/parser.py").count() >= 2
    });
    assert!(map(&engine).paths.iter().all(|p| p != "src/parser.py"), "the deleted file is off the map");
    stop.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
}
