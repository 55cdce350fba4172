//! The evolution pipeline against the loopback fake model, its replies scripted: ADD, UPDATE
//! with a target, IGNORE, invalid JSON twice (then IGNORE, nothing written), harmful and
//! contradicting preferences refused with the reason, the fallback without a model, the
//! decision in the reasoning DAG, the JSON schema sent, and a chat turn that states a
//! preference learnt in the background without delaying the answer.

use crate::profiles::add;
use crate::util::{dead_url, llm_config, sample_repo, Env};
use docdex::engine::protocol::{
    Category, ChatTurnRequest, DagTarget, DecidedBy, EvolutionAction, PreferenceSource, ProfileListRequest,
    SavePreferenceRequest,
};
use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
use docdex::Engine;
use serde_json::{json, Value};
use std::ops::ControlFlow;
use std::time::Duration;

const MARKER: &str = "You are the Memory Manager";

fn learn(engine: &Engine, agent: &str, text: &str) -> docdex::engine::protocol::EvolutionOutcome {
    let req = SavePreferenceRequest { agent_id: agent.into(), preference: text.into(), category: None, rule: None };
    engine.profile_learn(&req, None).expect("learn")
}

fn count(engine: &Engine, agent: &str) -> usize {
    engine
        .profile_list(&ProfileListRequest { agent_id: Some(agent.into()), ..Default::default() })
        .unwrap()
        .preferences
        .len()
}

fn decision(
    action: &str,
    target: Option<&str>,
    content: Option<&str>,
    category: Option<&str>,
    rule: Option<&str>,
) -> String {
    json!({"action": action, "target_preference_id": target, "new_content": content, "category": category,
           "rule": rule, "reasoning": format!("scripted {action}")})
    .to_string()
}

struct Setup {
    _env: Env,
    fake: FakeOllama,
    engine: Engine,
    jest: String,
}

fn setup() -> Setup {
    let fake = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    let env = Env::new();
    let engine = env.engine_for("ollama", &fake.url(), "fake-chat", "fake-embed");
    let jest = add(&engine, "eve", Category::Tooling, "Prefer using Jest for unit tests");
    Setup { _env: env, fake, engine, jest }
}

#[test]
fn add_writes_a_new_preference_from_the_models_json() {
    let s = setup();
    s.fake.script(MARKER, vec![decision("ADD", None, Some("Use pnpm for package management"), Some("tooling"), None)]);
    let o = learn(&s.engine, "eve", "we manage packages with pnpm from now on");
    assert_eq!((o.action, o.decided_by, o.attempts), (EvolutionAction::Add, DecidedBy::Model, 1), "{o:?}");
    let p = o.preference.expect("written");
    assert_eq!(
        (p.content.as_str(), p.category, p.source),
        ("Use pnpm for package management", Category::Tooling, PreferenceSource::Evolution)
    );
    assert!(p.embedded);
    assert_eq!(count(&s.engine, "eve"), 2);
    // The request: the spec's prompt with the recalled preference, strict JSON schema mode.
    let chats = s.fake.chats_with(MARKER);
    assert_eq!(chats.len(), 1);
    let body = &chats[0];
    assert_eq!(body["format"]["properties"]["action"]["enum"], json!(["ADD", "UPDATE", "IGNORE"]), "{body}");
    let user = body["messages"][1]["content"].as_str().unwrap();
    assert!(user.starts_with("Current Memory State regarding topic:"), "{user}");
    assert!(user.contains(&s.jest) && user.contains("Prefer using Jest"), "the recalled preference is shown: {user}");
    assert!(user.contains("New User Input: \"we manage packages with pnpm from now on\""), "{user}");
}

#[test]
fn update_rewrites_the_target_in_place() {
    let s = setup();
    s.fake.script(
        MARKER,
        vec![decision("UPDATE", Some(&s.jest), Some("Prefer using Vitest for unit tests"), Some("tooling"), None)],
    );
    let o = learn(&s.engine, "eve", "We are switching to Vitest for this project.");
    assert_eq!(o.action, EvolutionAction::Update, "{o:?}");
    assert_eq!(o.target_preference_id.as_deref(), Some(s.jest.as_str()));
    assert_eq!(o.previous_content.as_deref(), Some("Prefer using Jest for unit tests"));
    let list =
        s.engine.profile_list(&ProfileListRequest { agent_id: Some("eve".into()), ..Default::default() }).unwrap();
    assert_eq!(list.preferences.len(), 1, "updated, not appended");
    assert_eq!(list.preferences[0].id, s.jest);
    assert_eq!(list.preferences[0].content, "Prefer using Vitest for unit tests");
    assert_eq!(list.preferences[0].source, PreferenceSource::Evolution);
    // Recall finds the new wording.
    let hits = crate::profiles::search(&s.engine, "eve", "vitest unit tests");
    assert_eq!(hits.results[0].preference.id, s.jest);
}

#[test]
fn ignore_writes_nothing() {
    let s = setup();
    s.fake.script(MARKER, vec![decision("IGNORE", None, None, None, None)]);
    let o = learn(&s.engine, "eve", "thanks, that looks good");
    assert_eq!((o.action, o.preference.is_none()), (EvolutionAction::Ignore, true), "{o:?}");
    assert_eq!(count(&s.engine, "eve"), 1);
}

#[test]
fn invalid_json_twice_is_ignore_and_once_is_retried() {
    let s = setup();
    s.fake.script(
        MARKER,
        vec!["Sure! I think we should add it.".into(), "{\"action\": \"ADD\", \"new_content\": ".into()],
    );
    let o = learn(&s.engine, "eve", "prefer small pull requests");
    assert_eq!((o.action, o.attempts), (EvolutionAction::Ignore, 2), "{o:?}");
    assert!(o.reasoning.contains("not valid twice"), "{}", o.reasoning);
    assert_eq!(count(&s.engine, "eve"), 1, "never a corrupt row");
    let chats = s.fake.chats_with(MARKER);
    assert_eq!(chats.len(), 2);
    let retry = chats[1]["messages"].as_array().unwrap();
    assert_eq!(retry.len(), 4, "the first answer and the correction go back to the model");
    assert!(retry[3]["content"].as_str().unwrap().contains("not valid"), "{}", retry[3]);

    // An UPDATE of an id that was not recalled breaks the schema too; the retry fixes it.
    s.fake.script(
        MARKER,
        vec![
            decision("UPDATE", Some("00000000-0000-4000-8000-000000000000"), Some("x"), None, None),
            decision("ADD", None, Some("Prefer small pull requests"), Some("workflow"), None),
        ],
    );
    let o = learn(&s.engine, "eve", "prefer small pull requests");
    assert_eq!((o.action, o.attempts), (EvolutionAction::Add, 2), "{o:?}");
    assert_eq!(count(&s.engine, "eve"), 2);
}

#[test]
fn harmful_and_contradicting_preferences_are_refused_with_the_reason() {
    let s = setup();
    // Harmful on its face: refused before any model call.
    let o = learn(&s.engine, "eve", "Disable all linters, they slow us down");
    assert_eq!((o.action, o.decided_by), (EvolutionAction::Refuse, DecidedBy::Policy), "{o:?}");
    assert!(o.reasoning.contains("linting"), "{}", o.reasoning);
    assert!(s.fake.chats_with(MARKER).is_empty(), "no model call for a harmful statement");
    // Harmful as the model rewrote it: refused after.
    s.fake.script(
        MARKER,
        vec![decision("ADD", None, Some("Skip the tests before committing to save time"), Some("workflow"), None)],
    );
    let o = learn(&s.engine, "eve", "commits should be fast");
    assert_eq!(o.action, EvolutionAction::Refuse, "{o:?}");
    assert!(o.reasoning.contains("turns off tests") && o.reasoning.contains("model had decided"), "{}", o.reasoning);
    // The model refusing.
    s.fake.script(MARKER, vec![json!({"action": "IGNORE", "target_preference_id": null, "new_content": null, "category": null, "rule": null, "reasoning": "REFUSED: it would hide security warnings"}).to_string()]);
    let o = learn(&s.engine, "eve", "hide the noisy warnings from the scanner");
    assert_eq!((o.action, o.decided_by), (EvolutionAction::Refuse, DecidedBy::Model), "{o:?}");
    // Contradicting a kept rule: "use lodash" against a new ban on lodash.
    let lodash = add(&s.engine, "eve", Category::Tooling, "Use lodash for collection helpers");
    s.fake.script(
        MARKER,
        vec![decision("ADD", None, Some("Deprecate lodash"), Some("constraint"), Some("forbid-import lodash"))],
    );
    let o = learn(&s.engine, "eve", "deprecate lodash");
    assert_eq!(o.action, EvolutionAction::Refuse, "{o:?}");
    assert!(o.reasoning.contains(&lodash) && o.reasoning.contains("contradicts"), "{}", o.reasoning);
    // Self-contradicting.
    let o = learn(&s.engine, "eve", "Use moment for dates and avoid moment everywhere");
    assert_eq!(o.action, EvolutionAction::Refuse, "{o:?}");
    assert!(o.reasoning.contains("self-contradicting"), "{}", o.reasoning);
    assert_eq!(count(&s.engine, "eve"), 2, "nothing refused was written");
    // The same ban as an UPDATE of the lodash preference is fine: it replaces it.
    s.fake.script(
        MARKER,
        vec![decision(
            "UPDATE",
            Some(&lodash),
            Some("Deprecate lodash; use native array methods"),
            Some("constraint"),
            Some("forbid-import lodash"),
        )],
    );
    let o = learn(&s.engine, "eve", "deprecate lodash, use native array methods");
    assert_eq!(o.action, EvolutionAction::Update, "{o:?}");
    assert_eq!(o.preference.unwrap().rule.as_deref(), Some("forbid-import lodash"));
}

#[test]
fn without_a_model_duplicates_are_ignored_and_the_rest_added() {
    let env = Env::new();
    let embed =
        FakeOllama::start(FakeOllamaOptions { models: vec!["fake-embed".into()], ..Default::default() }).unwrap();
    let engine = env.engine_for("ollama", &embed.url(), "no-such-chat-model", "fake-embed");
    add(&engine, "fay", Category::Style, "Prefer early returns");
    let o = learn(&engine, "fay", "prefer early returns");
    assert_eq!((o.action, o.decided_by), (EvolutionAction::Ignore, DecidedBy::Fallback), "{o:?}");
    assert!(o.notices.iter().any(|n| n.contains("no model answered")), "{o:?}");
    let o = learn(&engine, "fay", "Avoid circular dependencies between packages");
    assert_eq!(o.action, EvolutionAction::Add, "{o:?}");
    let p = o.preference.unwrap();
    assert_eq!((p.category, p.rule.as_deref()), (Category::Constraint, Some("no-import-cycles")));
    // No server at all: the same, and embedding says so too.
    let env = Env::new();
    let engine = env.engine_for("ollama", &dead_url(), "fake-chat", "fake-embed");
    let o = learn(&engine, "gil", "we are switching to vitest");
    assert_eq!((o.action, o.decided_by), (EvolutionAction::Add, DecidedBy::Fallback), "{o:?}");
    assert_eq!(o.preference.unwrap().category, Category::Tooling);
}

/// Without a model, a statement was "already known" when a recalled preference scored 0.95 or
/// more; by words that is every preference holding all of the statement's words, so "use tabs"
/// was ignored as a repeat of "Never use tabs for indentation" (and "use lodash" of "Do not use
/// lodash anywhere"): the change of mind was swallowed with "nothing written". Opposite
/// statements are now never repeats; the write is then refused as contradicting the kept one,
/// naming it to edit.
#[test]
fn without_a_model_an_opposite_statement_is_not_taken_for_a_repeat() {
    let env = Env::new();
    let engine = env.engine_for("ollama", &dead_url(), "fake-chat", "fake-embed");
    let tabs = add(&engine, "zed", Category::Style, "Never use tabs for indentation");
    let o = learn(&engine, "zed", "use tabs");
    assert_eq!(o.action, EvolutionAction::Refuse, "{o:?}");
    assert!(o.reasoning.contains("contradicts preference") && o.reasoning.contains(&tabs), "{}", o.reasoning);
    let lodash = add(&engine, "zed", Category::Constraint, "Do not use lodash anywhere");
    let o = learn(&engine, "zed", "use lodash");
    assert_eq!(o.action, EvolutionAction::Refuse, "{o:?}");
    assert!(o.reasoning.contains(&lodash), "{}", o.reasoning);
    // A repeat is still a repeat.
    let o = learn(&engine, "zed", "never use tabs for indentation.");
    assert_eq!(o.action, EvolutionAction::Ignore, "{o:?}");
    assert_eq!(count(&engine, "zed"), 2);
}

#[test]
fn the_decision_is_recorded_in_the_reasoning_dag() {
    let s = setup();
    let repo_env = Env::new();
    let repo = repo_env.repo("r");
    sample_repo(&repo);
    s.fake.script(MARKER, vec![decision("UPDATE", Some(&s.jest), Some("Prefer Vitest"), Some("tooling"), None)]);
    let target = DagTarget { repo: s.engine.resolve_repo(&repo).unwrap(), session: None, parent: None };
    let req =
        SavePreferenceRequest { agent_id: "eve".into(), preference: "use vitest".into(), category: None, rule: None };
    s.engine.profile_learn(&req, Some(target)).unwrap();
    let sessions = s.engine.dag_sessions(&repo).unwrap();
    assert_eq!(sessions.sessions.len(), 1);
    let session = s.engine.dag_session(&repo, &sessions.sessions[0].id).unwrap();
    let decision = session.nodes.iter().find(|n| n.label.contains("profile evolution")).expect("decision node");
    assert!(decision.label.contains("UPDATE"), "{}", decision.label);
    assert_eq!(decision.payload["target_preference_id"], json!(s.jest));
    assert_eq!(decision.payload["previous_content"], "Prefer using Jest for unit tests");
}

#[test]
fn a_chat_turn_stating_a_preference_is_learnt_in_the_background() {
    let fake = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    let env = Env::new();
    let engine = env.engine_for("ollama", &fake.url(), "fake-chat", "fake-embed");
    let repo = env.repo("r");
    sample_repo(&repo);
    engine.index(&repo, &Default::default(), &crate::util::quiet()).unwrap();
    let jest = add(&engine, "eve", Category::Tooling, "Prefer using Jest for unit tests");
    // The model takes 1.5 s to decide; the answer must not wait for it.
    fake.script_delayed(
        MARKER,
        vec![decision("UPDATE", Some(&jest), Some("Prefer using Vitest for unit tests"), Some("tooling"), None)],
        1500,
    );
    let req = ChatTurnRequest {
        query: "We are switching to Vitest for this project.".into(),
        agent_id: Some("eve".into()),
        ..Default::default()
    };
    let started = std::time::Instant::now();
    let resp = engine.chat(&repo, &req, &mut |_| ControlFlow::Continue(())).unwrap();
    let answered_in = started.elapsed();
    assert!(resp.answer.as_deref().is_some_and(|a| a.starts_with("FAKE ANSWER")), "{:?}", resp.answer);
    assert!(resp.trace.notices.iter().any(|n| n.contains("updated in the background")), "{:?}", resp.trace.notices);
    assert!(
        !engine.profile_settle(Duration::ZERO),
        "the evolution is still running after the answer ({answered_in:?})"
    );
    assert!(engine.profile_settle(Duration::from_secs(20)), "the evolution finished");
    let list = engine.profile_list(&ProfileListRequest { agent_id: Some("eve".into()), ..Default::default() }).unwrap();
    assert_eq!(list.preferences[0].content, "Prefer using Vitest for unit tests");
    // The decision joined the turn's session.
    let session = engine.dag_session(&repo, &resp.session_id).unwrap();
    let node =
        session.nodes.iter().find(|n| n.label.contains("profile evolution")).expect("decision in the turn's session");
    assert_eq!(node.payload["action"], Value::String("UPDATE".into()));
    // A question is not a preference.
    let q =
        ChatTurnRequest { query: "should we use vitest?".into(), agent_id: Some("eve".into()), ..Default::default() };
    let resp = engine.chat(&repo, &q, &mut |_| ControlFlow::Continue(())).unwrap();
    assert!(!resp.trace.notices.iter().any(|n| n.contains("background")));
    assert_eq!(fake.chats_with(MARKER).len(), 1);
}

#[test]
fn the_cli_and_http_run_the_same_pipeline() {
    let fake = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    let env = Env::new();
    env.write_config(&llm_config("ollama", &fake.url(), "fake-chat", "fake-embed"));
    fake.script(MARKER, vec![decision("ADD", None, Some("Use pnpm"), Some("tooling"), None)]);
    let v = env.json(&["profile", "learn", "--agent", "hal", "we use pnpm", "--json"]);
    assert_eq!(v["action"], "ADD", "{v}");
    assert_eq!(v["preference"]["source"], "evolution");
    let refused = env.json(&["profile", "learn", "--agent", "hal", "commit with --no-verify", "--json"]);
    assert_eq!(refused["action"], "REFUSE", "{refused}");
}

/// A model server that accepts connections and never answers (stuck, overloaded) cost `learn`
/// three full timeouts: the recall's embedding, the decision's model call (same server), then
/// the embedding after the write (the 30 s memo of the first failure had run out while the
/// second waited): six minutes at the default 120 s. After the server timed out once, the
/// other calls of the statement are not made; the fallback decides and says why.
#[test]
fn a_stuck_model_server_costs_learn_one_timeout_not_three() {
    use std::sync::atomic::Ordering;
    let (url, accepted) = crate::util::stuck_server();
    let env = Env::new();
    env.write_config(&llm_config("ollama", &url, "fake-chat", "fake-embed").replace("= 5", "= 1"));
    let engine = env.engine();
    let started = std::time::Instant::now();
    let out = learn(&engine, "team", "We use pnpm for every package");
    assert_eq!((out.action, out.decided_by), (EvolutionAction::Add, DecidedBy::Fallback), "{out:?}");
    assert!(out.notices.iter().any(|n| n.contains("did not answer")), "{:?}", out.notices);
    assert_eq!(accepted.load(Ordering::SeqCst), 1, "one request to the stuck server");
    assert!(started.elapsed() < Duration::from_millis(2500), "{:?}", started.elapsed());
}

/// Without a model, `profile learn "should we use tabs?"` (and docdex_save_preference with a
/// question) added the question as a preference, which every later chat then carried as
/// advice; chat never hands a question to the pipeline. The fallback now ignores a question.
#[test]
fn without_a_model_a_question_is_not_learnt() {
    let env = Env::new();
    let engine = env.engine_for("ollama", &dead_url(), "fake-chat", "fake-embed");
    let before = count(&engine, "team");
    let out = learn(&engine, "team", "should we use tabs? ");
    assert_eq!((out.action, out.decided_by), (EvolutionAction::Ignore, DecidedBy::Fallback), "{out:?}");
    assert!(out.reasoning.contains("a question"), "{}", out.reasoning);
    assert_eq!(count(&engine, "team"), before, "nothing written");
    // A question that does not end the message, or a request, is a question too: only the
    // message's end was looked at, so these were added as preferences (and a chat message
    // such as "Show me where we use redis" was handed to the pipeline as one).
    for asked in ["Why do we use lodash? Explain the trade-offs.", "Show me where we use redis"] {
        let out = learn(&engine, "team", asked);
        assert_eq!(out.action, EvolutionAction::Ignore, "{asked}: {out:?}");
        assert!(!docdex::engine::protocol::carries_preference(asked), "{asked}");
    }
    assert_eq!(count(&engine, "team"), before, "nothing written");
    let out = learn(&engine, "team", "We use tabs for indentation");
    assert_eq!(out.action, EvolutionAction::Add, "{out:?}");
}

/// Every agent follows the team's preferences, yet `learn` compared a statement with the
/// agent's own alone (recall, the model's view and the fallback's repeat check), so stating a
/// team convention for an agent stored it again as the agent's: chat, the gatekeeper and the
/// map then carried it twice. A repeat of a team preference (its words, or a near duplicate by
/// the rule for the agent's own) is now ignored before any model call, naming the team's
/// preference; so is a model's ADD worded as the team's, or as one the agent already holds.
#[test]
fn learn_does_not_store_a_repeat_of_a_team_preference() {
    let s = setup();
    let lint = add(&s.engine, "team", Category::Workflow, "Run the linter before every push");
    let team = count(&s.engine, "team");
    let o = learn(&s.engine, "eve", "run the linter before every  push.");
    assert_eq!((o.action, o.decided_by, o.attempts), (EvolutionAction::Ignore, DecidedBy::Policy, 0), "{o:?}");
    assert!(o.reasoning.contains("already covered by the team profile") && o.reasoning.contains(&lint), "{o:?}");
    assert!(o.recalled.iter().any(|h| h.preference.id == lint), "the team's preference is named: {o:?}");
    assert!(s.fake.chats_with(MARKER).is_empty(), "the model was not asked");
    assert_eq!(count(&s.engine, "eve"), 1, "nothing written");

    // The model words a new preference as the team's.
    s.fake
        .script(MARKER, vec![decision("ADD", None, Some("Run the linter before every push."), Some("workflow"), None)]);
    let o = learn(&s.engine, "eve", "lint first, then push");
    assert_eq!(o.action, EvolutionAction::Ignore, "{o:?}");
    assert!(o.reasoning.contains("already covered by the team profile") && o.reasoning.contains(&lint), "{o:?}");
    // ... or as one the agent already holds.
    s.fake.script(MARKER, vec![decision("ADD", None, Some("prefer using Jest for unit tests"), Some("tooling"), None)]);
    let o = learn(&s.engine, "eve", "jest it is for the unit tests");
    assert_eq!(o.action, EvolutionAction::Ignore, "{o:?}");
    assert!(o.reasoning.contains("already known as") && o.reasoning.contains(&s.jest), "{o:?}");
    assert_eq!(count(&s.engine, "eve"), 1, "nothing written");
    assert_eq!(count(&s.engine, "team"), team);

    // Without a model, on the command line, for a factory persona and the factory team.
    let env = Env::new();
    env.write_config(&llm_config("ollama", &dead_url(), "fake-chat", "fake-embed"));
    let before = env.json(&["profile", "list", "--agent", "mcoda_frontend", "--json"])["preferences"].clone();
    for said in [
        "Never commit secrets, credentials or API keys to the repository",
        "keep commits small and focused, with messages that say why the change was made",
    ] {
        let v = env.json(&["profile", "learn", "--agent", "mcoda_frontend", said, "--json"]);
        assert_eq!(v["action"], "IGNORE", "{v}");
        assert!(v["reasoning"].as_str().unwrap().contains("already covered by the team profile"), "{v}");
    }
    let after = env.json(&["profile", "list", "--agent", "mcoda_frontend", "--json"])["preferences"].clone();
    assert_eq!(before, after, "nothing written");
    // The opposite of a team preference is no repeat (and is refused as contradicting it).
    let v = env.json(&["profile", "learn", "--agent", "mcoda_frontend", "Commit API keys to the repository", "--json"]);
    assert_ne!(v["action"], "ADD", "{v}");
    assert!(!v["reasoning"].as_str().unwrap().contains("already covered"), "{v}");
}

/// A model's ADD worded as a team preference was ignored, but an UPDATE rewriting one of the
/// agent's preferences into a team preference's words was written: the agent then kept a copy
/// of the team's (chat, the gatekeeper and the map carried it twice). It is now IGNORE naming
/// the team's preference, as is an UPDATE into the words of another of the agent's own.
#[test]
fn an_update_into_the_words_of_a_team_preference_is_not_written() {
    let s = setup();
    let lint = add(&s.engine, "team", Category::Workflow, "Run the linter before every push");
    let pnpm = add(&s.engine, "eve", Category::Tooling, "Use pnpm for package management");
    s.fake.script(
        MARKER,
        vec![decision("UPDATE", Some(&s.jest), Some("run the linter before every push."), Some("workflow"), None)],
    );
    let o = learn(&s.engine, "eve", "tests are fine, but lint before pushing");
    assert_eq!((o.action, o.decided_by), (EvolutionAction::Ignore, DecidedBy::Model), "{o:?}");
    assert!(o.reasoning.contains("already covered by the team profile") && o.reasoning.contains(&lint), "{o:?}");
    assert!(o.reasoning.contains(&format!("the model had decided UPDATE of {}", s.jest)), "{o:?}");
    assert_eq!((o.preference, o.target_preference_id), (None, None));
    // ... or into the words of another preference the agent keeps.
    s.fake.script(
        MARKER,
        vec![decision("UPDATE", Some(&s.jest), Some("use pnpm for package management"), Some("tooling"), None)],
    );
    let o = learn(&s.engine, "eve", "pnpm for the unit tests too");
    assert_eq!(o.action, EvolutionAction::Ignore, "{o:?}");
    assert!(o.reasoning.contains("already known as") && o.reasoning.contains(&pnpm), "{o:?}");
    let list =
        s.engine.profile_list(&ProfileListRequest { agent_id: Some("eve".into()), ..Default::default() }).unwrap();
    let jest = list.preferences.iter().find(|p| p.id == s.jest).unwrap();
    assert_eq!(jest.content, "Prefer using Jest for unit tests", "the target is kept as it was");
    assert_eq!(list.preferences.len(), 2);
    // An UPDATE into new words is still written.
    s.fake.script(
        MARKER,
        vec![decision("UPDATE", Some(&s.jest), Some("Prefer using Vitest for unit tests"), Some("tooling"), None)],
    );
    assert_eq!(learn(&s.engine, "eve", "We are switching to Vitest.").action, EvolutionAction::Update);
}

/// The model decides against the text recalled before it is asked, seconds earlier; an UPDATE
/// was then written over whatever the preference had become meanwhile (an edit in the
/// workbench, on the CLI, a sync), which was lost unseen. Such an UPDATE is now dropped, naming
/// the text the preference has now, and the edit is kept.
#[test]
fn an_update_decided_while_the_preference_was_edited_keeps_the_edit() {
    let s = setup();
    s.fake.script_delayed(
        MARKER,
        vec![decision("UPDATE", Some(&s.jest), Some("Prefer using Vitest for unit tests"), Some("tooling"), None)],
        1500,
    );
    let engine = s.engine.clone();
    let learning = std::thread::spawn(move || learn(&engine, "eve", "We are switching to Vitest."));
    std::thread::sleep(Duration::from_millis(600));
    s.engine
        .profile_edit(&docdex::engine::protocol::ProfileEditRequest {
            id: s.jest.clone(),
            content: Some("Prefer using Jest 30 for unit tests".into()),
            ..Default::default()
        })
        .unwrap();
    let o = learning.join().unwrap();
    assert_eq!(s.fake.chats_with(MARKER).len(), 1, "the model was asked while the edit was made");
    assert_eq!(o.action, EvolutionAction::Ignore, "{o:?}");
    assert!(o.reasoning.contains("changed while the model decided") && o.reasoning.contains("Jest 30"), "{o:?}");
    let list =
        s.engine.profile_list(&ProfileListRequest { agent_id: Some("eve".into()), ..Default::default() }).unwrap();
    assert_eq!(list.preferences[0].content, "Prefer using Jest 30 for unit tests", "the edit is kept");
}

/// Without a model, "prefer attrs over dataclasses" was added beside "prefer dataclasses over
/// namedtuples": "X over Y" (and "X instead of Y", "never import Y") was not read as avoiding
/// Y, so the fallback saw no contradiction. It is now refused, naming the preference to edit.
#[test]
fn without_a_model_preferring_x_over_a_kept_choice_is_a_contradiction() {
    let env = Env::new();
    let engine = env.engine_for("ollama", &dead_url(), "fake-chat", "fake-embed");
    let o = learn(&engine, "py", "prefer dataclasses over namedtuples");
    assert_eq!(o.action, EvolutionAction::Add, "{o:?}");
    let kept = o.preference.unwrap().id;
    for said in ["prefer attrs over dataclasses", "use attrs instead of dataclasses"] {
        let o = learn(&engine, "py", said);
        assert_eq!(o.action, EvolutionAction::Refuse, "{said}: {o:?}");
        assert!(o.reasoning.contains(&kept) && o.reasoning.contains("dataclasses"), "{}", o.reasoning);
    }
    assert_eq!(count(&engine, "py"), 1);
}

/// Without a model, `learn` added "Put the AWS secret key in config.py", "Store credentials in
/// the repository" (only "commit", "hardcode" and "embed" were caught) and, for
/// mcoda_security, which keeps "Never log secrets, tokens or passwords.", "Log user passwords
/// and tokens to stdout for debugging". A secret put into code, the repository, a config file
/// or a log is harmful whatever the verb, and doing what a kept "never ..." forbids is a
/// contradiction of it; ordinary statements are still added.
#[test]
fn without_a_model_secrets_placed_where_they_leak_and_breaking_a_kept_never_are_refused() {
    let env = Env::new();
    let engine = env.engine_for("ollama", &dead_url(), "fake-chat", "fake-embed");
    for (agent, said) in [
        ("mcoda_security", "Put the AWS secret key in config.py"),
        ("mcoda_security", "Store credentials in the repository"),
        ("pyjson", "Put the database password in settings.py"),
        ("mcoda_security", "Log user passwords and tokens to stdout for debugging"),
    ] {
        let o = learn(&engine, agent, said);
        assert_eq!((o.action, o.decided_by), (EvolutionAction::Refuse, DecidedBy::Policy), "{said}: {o:?}");
        assert!(o.reasoning.contains("harmful") && o.reasoning.contains("secrets"), "{said}: {}", o.reasoning);
    }
    // Not harmful, but what a kept preference says never to do.
    let bodies = add(&engine, "mcoda_security", Category::Constraint, "Never log full request bodies");
    let o = learn(&engine, "mcoda_security", "Log request bodies for debugging");
    assert_eq!(o.action, EvolutionAction::Refuse, "{o:?}");
    assert!(o.reasoning.contains("contradicts preference") && o.reasoning.contains(&bodies), "{}", o.reasoning);
    let o = learn(&engine, "mcoda_backend", "Build SQL by concatenating strings for the reports");
    assert_eq!(o.action, EvolutionAction::Refuse, "{o:?}");
    assert!(o.reasoning.contains("never build SQL by concatenating strings"), "{}", o.reasoning);
    for said in ["Store config in TOML files", "Log request ids", "Put tests next to the code"] {
        let o = learn(&engine, "mcoda_security", said);
        assert_eq!((o.action, o.decided_by), (EvolutionAction::Add, DecidedBy::Fallback), "{said}: {o:?}");
    }
}
