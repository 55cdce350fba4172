//! Chat when no chat model can answer (the model is missing, or it is an embedding model), and
//! what a chat message teaches the profile: visible on the command line, never stored unseen
//! without a model to judge it. Also the session's commands, the HTTP answer when the
//! server's own default model is the one missing, and a model server that accepts connections
//! and never answers (stuck): the liveness check fails a model list and a chat within
//! `[llm] connect_timeout_ms`, not `request_timeout_secs`.

use crate::profiles::add;
use crate::server_util::{client, Server};
use crate::util::{dead_url, llm_config, sample_repo, stuck_server, Env};
use docdex::engine::protocol::{AnswerStatus, Category, ChatTurnRequest, ProfileListRequest};
use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
use serde_json::{json, Value};
use std::io::Write;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const MARKER: &str = "You are the Memory Manager";

/// A home whose `[llm] default_model` (`phi3.5:3.8b`) is not installed, while the embedder
/// is (as the tour found it), with an indexed sample repository.
fn no_chat_model(opts: FakeOllamaOptions) -> (Env, FakeOllama, PathBuf) {
    let fake = FakeOllama::start(opts).unwrap();
    let env = Env::new();
    env.write_config(&llm_config("ollama", &fake.url(), "phi3.5:3.8b", "fake-embed"));
    let repo = env.repo("r");
    sample_repo(&repo);
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    (env, fake, repo)
}

fn text(out: &std::process::Output) -> (String, String) {
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn preferences(env: &Env, agent: &str) -> Vec<String> {
    let list =
        env.engine().profile_list(&ProfileListRequest { agent_id: Some(agent.into()), ..Default::default() }).unwrap();
    list.preferences.into_iter().map(|p| format!("{} | {}", p.content, p.rule.unwrap_or_default())).collect()
}

/// Without a chat model, "From now on we never import json; we prefer orjson" became a
/// constraint with `rule forbid-import json` (the gatekeeper then refused every `import json`),
/// said only in `--json`; and "prefer attrs over dataclasses" was stored beside "prefer
/// dataclasses over namedtuples". Now nothing is stored without a model, the command line says
/// so, and gives the `docdex profile add` command that stores the statement; a contradiction
/// is named instead.
#[test]
fn without_a_chat_model_a_stated_preference_is_not_stored_and_the_user_is_told_how() {
    let (env, fake, repo) = no_chat_model(FakeOllamaOptions::default());
    let r = repo.to_str().unwrap();
    add(&env.engine(), "pyagent", Category::Style, "prefer dataclasses over namedtuples");
    let said = "From now on we never import json; we prefer orjson";
    let out = env.run(&["chat", "--repo", r, "-q", said, "--agent", "pyagent", "--no-web"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    let all = format!("{stdout}{stderr}");
    assert!(all.contains("this message states a preference, but it was not learnt for pyagent"), "{all}");
    assert!(
        all.contains("docdex profile add --agent pyagent --category constraint --rule 'forbid-import json' 'From now on we never import json; we prefer orjson'"),
        "{all}"
    );
    assert_eq!(preferences(&env, "pyagent"), ["prefer dataclasses over namedtuples | "], "nothing stored");
    // The suggested command stores it, as it reads.
    let v = env.json(&[
        "profile",
        "add",
        "--agent",
        "pyagent",
        "--category",
        "constraint",
        "--rule",
        "forbid-import json",
        said,
        "--json",
    ]);
    assert_eq!(v["preference"]["rule"], "forbid-import json", "{v}");

    // A contradiction of a kept preference is named, not suggested.
    let out =
        env.run(&["chat", "--repo", r, "-q", "we prefer attrs over dataclasses", "--agent", "pyagent", "--no-web"]);
    let all = format!("{}{}", text(&out).0, text(&out).1);
    assert!(all.contains("contradicts preference") && all.contains("docdex profile edit"), "{all}");
    assert!(!all.contains("docdex profile add --agent"), "{all}");
    assert_eq!(preferences(&env, "pyagent").len(), 2, "nothing stored");

    // The HTTP and JSON answer carry it too.
    let resp = env
        .engine()
        .chat(
            &repo,
            &ChatTurnRequest {
                query: "we prefer httpx over requests".into(),
                agent_id: Some("pyagent".into()),
                ..Default::default()
            },
            &mut |_| ControlFlow::Continue(()),
        )
        .unwrap();
    assert_eq!(resp.llm.status, AnswerStatus::Unavailable);
    assert!(
        resp.trace.notices.iter().any(|n| n.contains("not learnt") && n.contains("docdex profile add --agent pyagent")),
        "{:?}",
        resp.trace.notices
    );
    assert!(fake.chats_with(MARKER).is_empty(), "no model was asked to decide");
    assert!(env.engine().profile_settle(std::time::Duration::from_secs(5)));
    assert_eq!(preferences(&env, "pyagent").len(), 2, "nothing stored in the background either");
}

/// With a chat model, what a message taught the profile is printed once decided (it was in
/// the reasoning DAG alone): the preference, its rule, and how to undo it.
#[test]
fn a_preference_learnt_from_chat_is_printed_with_its_rule() {
    let fake = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    let env = Env::new();
    env.write_config(&llm_config("ollama", &fake.url(), "fake-chat", "fake-embed"));
    let repo = env.repo("r");
    sample_repo(&repo);
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let decision = json!({"action": "ADD", "target_preference_id": null, "new_content": "Never import json; use orjson",
        "category": "constraint", "rule": "forbid-import json", "reasoning": "a new constraint"});
    fake.script(MARKER, vec![decision.to_string()]);
    let said = "From now on we never import json; we prefer orjson";
    let out = env.run(&["chat", "--repo", repo.to_str().unwrap(), "-q", said, "--agent", "pyagent", "--no-web"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains(
            "profile: pyagent learnt \"Never import json; use orjson\" (constraint, rule `forbid-import json`"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("docdex profile remove "), "{stdout}");
}

/// Without a model the command line printed a bare citation list under "sources (0 of 13
/// cited)", less than `docdex search` shows, and `--trace` said the fix three times.
#[test]
fn without_a_chat_model_the_cli_shows_the_sources_lines_and_says_the_fix_once() {
    let (env, _fake, repo) = no_chat_model(FakeOllamaOptions::default());
    let out = env.run(&[
        "chat",
        "--repo",
        repo.to_str().unwrap(),
        "-q",
        "how are stale sessions expired?",
        "--trace",
        "--no-web",
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("found without a model:"), "{stdout}");
    assert!(!stdout.contains(" cited)"), "nothing can be cited without an answer: {stdout}");
    assert!(stdout.contains("src/auth/session.rs:1-"), "{stdout}");
    assert!(
        stdout.contains("    5:     pub fn expire_stale_sessions(&mut self) {}"),
        "the snippet's lines, numbered as search shows them: {stdout}"
    );
    let all = format!("{stdout}{stderr}");
    assert_eq!(all.matches("docdex llm-setup --model phi3.5:3.8b").count(), 1, "said once: {all}");
}

/// `--model all-minilm` (an embedding model) was budgeted for its 512-token window, cutting the
/// sources to a few fragments, before Ollama refused the chat; it is refused before its window
/// is asked, and the sources keep the configured budget.
#[test]
fn an_embedding_model_asked_to_chat_is_refused_before_it_is_budgeted_for() {
    let opts = FakeOllamaOptions {
        models: vec!["fake-chat:latest".into(), "fake-embed:latest".into(), "all-minilm:latest".into()],
        context_length: Some(512),
        ..Default::default()
    };
    let (env, fake, repo) = no_chat_model(opts);
    let req = ChatTurnRequest {
        query: "how are stale sessions expired?".into(),
        model: Some("all-minilm".into()),
        ..Default::default()
    };
    let resp = env.engine().chat(&repo, &req, &mut |_| ControlFlow::Continue(())).unwrap();
    assert_eq!(resp.llm.status, AnswerStatus::Unavailable);
    assert_eq!(resp.llm.error_code.as_deref(), Some("model_cannot_chat"), "{:?}", resp.llm);
    assert!(resp.llm.message.as_deref().is_some_and(|m| m.contains("all-minilm") && m.contains("cannot chat")));
    assert_eq!(resp.trace.budget.context_window, 8192, "the configured window, not the embedder's 512");
    let asked: Vec<String> = fake
        .requests()
        .into_iter()
        .filter(|(p, b)| (p == "/api/show" || p == "/api/chat") && b.to_string().contains("all-minilm"))
        .map(|(p, _)| p)
        .collect();
    assert!(asked.is_empty(), "neither its window nor a chat was asked: {asked:?}");
    assert!(!resp.excerpts.is_empty(), "the sources' lines come with a turn that has no answer");
}

/// An embedding model whose name says nothing (`bge-m3`, a renamed `mytext:latest`) was budgeted
/// for its 512-token window and then refused by Ollama; its `/api/show` capabilities
/// (`["embedding"]`) refuse it before the sources are cut, and no chat is sent.
#[test]
fn an_embedding_model_known_only_to_the_server_is_refused_by_its_capabilities() {
    let opts = FakeOllamaOptions {
        models: vec!["fake-chat:latest".into(), "fake-embed:latest".into(), "mytext:latest".into()],
        embedding_models: vec!["mytext:latest".into()],
        context_length: Some(512),
        ..Default::default()
    };
    let (env, fake, repo) = no_chat_model(opts);
    let req = ChatTurnRequest {
        query: "how are stale sessions expired?".into(),
        model: Some("mytext:latest".into()),
        ..Default::default()
    };
    let resp = env.engine().chat(&repo, &req, &mut |_| ControlFlow::Continue(())).unwrap();
    assert_eq!(resp.llm.status, AnswerStatus::Unavailable);
    assert_eq!(resp.llm.error_code.as_deref(), Some("model_cannot_chat"), "{:?}", resp.llm);
    assert!(resp.llm.message.as_deref().is_some_and(|m| m.contains("mytext:latest") && m.contains("cannot chat")));
    assert_eq!(resp.trace.budget.context_window, 8192, "the configured window, not the embedder's 512");
    let chats = fake.requests().into_iter().filter(|(p, _)| p == "/api/chat").count();
    assert_eq!(chats, 0, "no chat was sent");
    assert!(!resp.excerpts.is_empty(), "the sources' lines come with a turn that has no answer");
    // A chat model on the same server is asked as before.
    let req = ChatTurnRequest { model: Some("fake-chat".into()), ..req };
    let resp = env.engine().chat(&repo, &req, &mut |_| ControlFlow::Continue(())).unwrap();
    assert_eq!(resp.llm.status, AnswerStatus::Answered, "{:?}", resp.llm);
}

/// `/v1/chat/completions` without `model` uses the server's `[llm] default_model`; when that
/// is missing the answer was `404 model_not_found` on `param: model`
/// (`invalid_request_error`), blaming a field the client never sent.
#[tokio::test]
async fn http_chat_without_a_model_names_the_servers_missing_default() {
    let (env, _fake, repo) = no_chat_model(FakeOllamaOptions::default());
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let url = server.url("/v1/chat/completions");
    let ask = |body: Value| {
        let url = url.clone();
        async move {
            let resp = client().post(url).json(&body).send().await.unwrap();
            let status = resp.status().as_u16();
            (status, resp.json::<Value>().await.unwrap())
        }
    };
    let question = json!([{"role": "user", "content": "how are stale sessions expired?"}]);
    let (status, v) = ask(json!({"messages": question})).await;
    assert_eq!(status, 503, "{v}");
    assert_eq!(v["error"]["type"], "server_error", "{v}");
    assert!(v["error"].get("param").is_none(), "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("default chat model phi3.5:3.8b") && message.contains("[llm] default_model"), "{message}");
    assert!(message.contains("docdex llm-setup --model phi3.5:3.8b --yes"), "{message}");
    assert!(v["docdex"]["excerpts"].as_array().is_some_and(|x| !x.is_empty()), "{v}");
    // A model the client named is still the client's: 404 on `model`.
    let (status, v) = ask(json!({"model": "gpt-4o", "messages": question})).await;
    assert_eq!((status, v["error"]["param"].as_str()), (404, Some("model")), "{v}");
}

/// A mistyped session command (`/bogus`) was sent to the model as a question.
#[test]
fn an_unknown_session_command_is_refused_with_the_known_ones() {
    let fake = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    let env = Env::new();
    env.write_config(&llm_config("ollama", &fake.url(), "fake-chat", "fake-embed"));
    let repo = env.repo("r");
    sample_repo(&repo);
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_docdex"))
        .args(["chat", "--repo", repo.to_str().unwrap(), "--json", "--no-web"])
        .env("DOCDEX_HOME", env.home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"/bogus\n/src/auth/session.rs what is in it\n/exit\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("unknown command /bogus") && stderr.contains("/new") && stderr.contains("/exit"),
        "{stderr}"
    );
    let chats: Vec<Value> = fake.requests().into_iter().filter(|(p, _)| p == "/api/chat").map(|(_, b)| b).collect();
    assert_eq!(chats.len(), 1, "only the question was asked: {chats:?}");
    assert!(!chats[0].to_string().contains("/bogus"));
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
}

/// A sample repository indexed without embeddings (nothing listened then), in a home whose
/// model server then accepts connections and never answers, with `[llm] request_timeout_secs =
/// 30` and the default `connect_timeout_ms` (2000): the server's URL, the home and the repository.
fn stuck_model_server() -> (String, Env, PathBuf) {
    let (url, _) = stuck_server();
    let env = Env::new();
    env.write_config(&llm_config("ollama", &dead_url(), "fake-chat", "fake-embed"));
    let repo = env.repo("r");
    sample_repo(&repo);
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let config = llm_config("ollama", &url, "fake-chat", "fake-embed");
    let config = config.replace("request_timeout_secs = 5", "request_timeout_secs = 30");
    env.write_config(&format!("{config}[web]\nenabled = false\n"));
    (url, env, repo)
}

/// The words of a stuck server's error: the server, the bound it missed and what to do.
fn says_stuck(message: &str, url: &str) {
    for needle in [url, "did not answer within 2000 ms", "`[llm] connect_timeout_ms`", "`[llm] base_url`", "ollama ps"]
    {
        assert!(message.contains(needle), "{needle:?} missing from: {message}");
    }
}

/// tour14 F7: a model list and a chat turn waited the whole `request_timeout_secs` on a server
/// that accepts and never answers (the window lookup was the turn's first request when the
/// index has no embeddings); the liveness check before them now fails each within
/// `connect_timeout_ms`, naming the server and the fix, and the turn still answers its sources.
#[test]
fn a_stuck_model_server_fails_a_model_list_and_a_chat_within_the_liveness_bound() {
    let (url, env, repo) = stuck_model_server();
    let engine = env.engine();
    let started = Instant::now();
    let e = engine.models().unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(6), "the model list took {:?}", started.elapsed());
    assert_eq!(e.code(), "upstream_unavailable");
    says_stuck(&e.to_string(), &url);
    let req = ChatTurnRequest { query: "how are stale sessions expired?".into(), ..Default::default() };
    let started = Instant::now();
    let resp = engine.chat(&repo, &req, &mut |_| ControlFlow::Continue(())).unwrap();
    assert!(started.elapsed() < Duration::from_secs(6), "the turn took {:?}", started.elapsed());
    assert_eq!(resp.llm.status, AnswerStatus::Unavailable, "{:?}", resp.llm);
    says_stuck(resp.llm.message.as_deref().unwrap_or_default(), &url);
    assert!(!resp.sources.is_empty() && !resp.excerpts.is_empty(), "retrieval still answers: {resp:?}");
}

/// The same over HTTP: `/v1/models` and `/v1/chat/completions` answer `503
/// upstream_unavailable` within the liveness bound (an OpenAI client's own 60 s timeout fired
/// first before).
#[tokio::test]
async fn http_models_and_chat_on_a_stuck_model_server_are_503_within_the_liveness_bound() {
    let (url, env, repo) = stuck_model_server();
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let question = json!({"messages": [{"role": "user", "content": "how are stale sessions expired?"}]});
    for (path, body) in [("/v1/models", None), ("/v1/chat/completions", Some(question))] {
        let started = Instant::now();
        let req = match body {
            Some(b) => client().post(server.url(path)).json(&b),
            None => client().get(server.url(path)),
        };
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let v: Value = resp.json().await.unwrap();
        assert!(started.elapsed() < Duration::from_secs(6), "{path} took {:?}", started.elapsed());
        assert_eq!((status, v["error"]["code"].as_str()), (503, Some("upstream_unavailable")), "{path}: {v}");
        says_stuck(v["error"]["message"].as_str().unwrap_or_default(), &url);
    }
}

/// The liveness check bounds only the server's first answer, not the model's: a model that
/// takes longer than `connect_timeout_ms` to its first token (reading a long prompt) still
/// answers within `request_timeout_secs`.
#[test]
fn a_model_slower_than_the_liveness_bound_still_answers() {
    let fake = FakeOllama::start(FakeOllamaOptions { first_token_delay_ms: 1_500, ..Default::default() }).unwrap();
    let env = Env::new();
    let config = llm_config("ollama", &fake.url(), "fake-chat", "fake-embed");
    env.write_config(&format!("{config}connect_timeout_ms = 300\n[web]\nenabled = false\n"));
    let repo = env.repo("r");
    sample_repo(&repo);
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let req = ChatTurnRequest { query: "how are stale sessions expired?".into(), ..Default::default() };
    let resp = env.engine().chat(&repo, &req, &mut |_| ControlFlow::Continue(())).unwrap();
    assert_eq!(resp.llm.status, AnswerStatus::Answered, "{:?}", resp.llm);
    assert!(resp.answer.is_some_and(|a| !a.is_empty()));
}
