//! The model providers against loopback fakes speaking the real wire formats: Ollama's
//! NDJSON and OpenAI's server-sent events, errors for a dead server and a missing model,
//! retries, timeouts, slow readers and cancellation.

use crate::util::{dead_url, Env};
use docdex::engine::llm::{ChatMessage, ChatRequest, Role};
use docdex::engine::protocol::CancelToken;
use docdex::testing::fake_ollama::{answer_for, embed_text, FakeOllama, FakeOllamaOptions};
use docdex::Error;
use serde_json::json;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

fn fake(opts: FakeOllamaOptions) -> FakeOllama {
    FakeOllama::start(opts).expect("start fake")
}

fn question(q: &str) -> ChatRequest {
    ChatRequest {
        messages: vec![ChatMessage::new(Role::System, "Context: src/auth.rs:10-20"), ChatMessage::new(Role::User, q)],
        ..Default::default()
    }
}

fn expected_answer(q: &str) -> String {
    answer_for(&[
        json!({"role": "system", "content": "Context: src/auth.rs:10-20"}),
        json!({"role": "user", "content": q}),
    ])
}

fn collect(engine: &docdex::Engine, req: ChatRequest) -> (Vec<String>, docdex::engine::llm::ChatReply) {
    let mut tokens = Vec::new();
    let reply = engine
        .stream_chat(req, &mut |t| {
            tokens.push(t.to_string());
            ControlFlow::Continue(())
        })
        .expect("chat");
    (tokens, reply)
}

#[test]
fn ollama_streams_a_chat_token_by_token_with_the_configured_defaults() {
    let server = fake(FakeOllamaOptions::default());
    let env = Env::new();
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    assert_eq!(engine.provider().unwrap().kind(), "ollama");
    let (tokens, reply) = collect(&engine, question("how are sessions expired?"));
    assert!(tokens.len() > 3, "streamed in pieces: {tokens:?}");
    assert_eq!(reply.text, expected_answer("how are sessions expired?"));
    assert_eq!(tokens.concat(), reply.text);
    let usage = reply.usage.expect("usage");
    assert_eq!(usage.finish_reason, "stop");
    assert_eq!(usage.completion_tokens as usize, tokens.len());
    // The wire request: the default model, streaming, and the answer cap from [llm].
    let (path, body) = server.requests().into_iter().find(|(p, _)| p == "/api/chat").expect("chat request");
    assert_eq!(path, "/api/chat");
    assert_eq!(body["model"], "fake-chat");
    assert_eq!(body["stream"], true);
    assert_eq!(body["options"]["num_predict"], 1024);
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["messages"][1]["content"], "how are sessions expired?");
}

#[test]
fn ollama_answer_cap_reports_length() {
    let server = fake(FakeOllamaOptions::default());
    let env = Env::new();
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    let mut req = question("a question with quite a few words in it");
    req.max_tokens = Some(3);
    let (tokens, reply) = collect(&engine, req);
    assert_eq!(tokens.len(), 3);
    assert_eq!(reply.usage.unwrap().finish_reason, "length");
}

#[test]
fn streams_survive_characters_split_across_network_writes() {
    for openai_only in [false, true] {
        let server = fake(FakeOllamaOptions { chunk_bytes: 1, openai_only, ..Default::default() });
        let env = Env::new();
        let provider = if openai_only { "openai" } else { "ollama" };
        let engine = env.engine_for(provider, &server.url(), "fake-chat", "fake-embed");
        let q = "où est la fonction « expirer » — 会话过期?";
        let (_, reply) = collect(&engine, question(q));
        assert_eq!(reply.text, expected_answer(q), "{provider}");
    }
}

#[test]
fn openai_compatible_server_streams_embeds_and_lists() {
    let server = fake(FakeOllamaOptions { openai_only: true, ..Default::default() });
    let env = Env::new();
    // base_url with /v1 works as well as without.
    let engine = env.engine_for("openai", &format!("{}/v1", server.url()), "fake-chat", "fake-embed");
    let provider = engine.provider().unwrap();
    assert_eq!(provider.kind(), "openai");
    assert_eq!(provider.base_url(), server.url());
    let (tokens, reply) = collect(&engine, question("where is the parser?"));
    assert!(tokens.len() > 3);
    assert_eq!(reply.text, expected_answer("where is the parser?"));
    let usage = reply.usage.unwrap();
    assert_eq!(usage.finish_reason, "stop");
    assert!(usage.prompt_tokens > 0);

    let vectors = engine.embed(vec!["expire stale sessions".into(), "render the dashboard".into()]).unwrap();
    assert_eq!(vectors, vec![embed_text("expire stale sessions", 64), embed_text("render the dashboard", 64)]);

    let names: Vec<String> = engine.models().unwrap().into_iter().map(|m| m.name).collect();
    assert_eq!(names, ["fake-chat:latest", "fake-embed:latest"]);

    let paths: Vec<String> = server.requests().into_iter().map(|(p, _)| p).collect();
    assert!(paths.iter().all(|p| p.starts_with("/v1/")), "{paths:?}");
    let (_, body) = server.requests().into_iter().find(|(p, _)| p == "/v1/chat/completions").unwrap();
    assert_eq!(body["stream"], true);
    assert_eq!(body["max_tokens"], 1024);
}

#[test]
fn ollama_embeddings_and_model_list() {
    let server = fake(FakeOllamaOptions::default());
    let env = Env::new();
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    let v = engine.embed(vec!["getUserName".into()]).unwrap();
    assert_eq!(v, vec![embed_text("getUserName", 64)]);
    let models = engine.models().unwrap();
    assert!(models.iter().any(|m| m.name == "fake-embed:latest" && m.size_bytes == Some(1_000_000)));
}

/// An Ollama-compatible server whose `/api/tags` leaves out `modified_at` (and size, digest,
/// details): the model list failed with a bare "Ollama JSON error", so `/v1/models` was a 503.
#[test]
fn an_ollama_model_list_of_names_alone_is_read() {
    let server = fake(FakeOllamaOptions { bare_tags: true, ..Default::default() });
    let env = Env::new();
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    let models = engine.models().unwrap();
    let listed: Vec<(String, Option<u64>)> = models.into_iter().map(|m| (m.name, m.size_bytes)).collect();
    assert_eq!(listed, [("fake-chat:latest".to_string(), None), ("fake-embed:latest".to_string(), None)]);
}

#[test]
fn a_dead_server_is_unreachable_and_says_how_to_start_it() {
    let env = Env::new();
    let url = dead_url();
    for provider in ["ollama", "openai"] {
        let engine = env.engine_for(provider, &url, "fake-chat", "fake-embed");
        let err = engine.embed(vec!["x".into()]).unwrap_err();
        assert!(matches!(err, Error::LlmUnreachable { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(msg.contains(&format!("cannot reach the {provider} server at {url}")), "{msg}");
        assert!(
            msg.contains("`ollama serve`") && msg.contains("[llm] base_url") && msg.contains("docdex check"),
            "{msg}"
        );
        let err = engine.stream_chat(question("hi"), &mut |_| ControlFlow::Continue(())).unwrap_err();
        assert!(matches!(err, Error::LlmUnreachable { .. }), "{err:?}");
        assert_eq!(err.code(), "upstream_unavailable");
    }
}

#[test]
fn a_missing_model_names_the_command_that_installs_it() {
    for openai_only in [false, true] {
        let server = fake(FakeOllamaOptions { openai_only, ..Default::default() });
        let env = Env::new();
        let provider = if openai_only { "openai" } else { "ollama" };
        let engine = env.engine_for(provider, &server.url(), "llama3.2:1b", "nomic-embed-text");
        let err = engine.embed(vec!["x".into()]).unwrap_err();
        assert!(matches!(&err, Error::ModelNotFound { model, .. } if model == "nomic-embed-text"), "{err:?}");
        let msg = err.to_string();
        if openai_only {
            // An OpenAI-compatible server serves what it was started with: pulling is no advice.
            assert!(msg.contains("nomic-embed-text is not served by the openai server"), "{msg}");
            assert!(!msg.contains("ollama pull") && !msg.contains("llm-setup"), "{msg}");
        } else {
            assert!(
                msg.contains(
                    "run `docdex llm-setup --model nomic-embed-text --yes` (or `ollama pull nomic-embed-text`)"
                ),
                "{msg}"
            );
        }
        let err = engine.stream_chat(question("hi"), &mut |_| ControlFlow::Continue(())).unwrap_err();
        assert!(matches!(&err, Error::ModelNotFound { model, .. } if model == "llama3.2:1b"), "{err:?}");
        assert_eq!(err.code(), "model_not_found");
        // A missing model is not retried.
        let embeds =
            server.requests().iter().filter(|(p, _)| p.ends_with("embed") || p.ends_with("embeddings")).count();
        assert_eq!(embeds, 1, "{provider}");
    }
}

/// How OpenAI-compatible servers refuse a chat with a model that cannot hold one, in their
/// own words: (what, HTTP status, body).
fn not_a_chat_model_answers() -> Vec<(&'static str, u16, serde_json::Value)> {
    vec![
        // llama.cpp's server started with `--embeddings` (ERROR_TYPE_NOT_SUPPORTED is 501).
        (
            "llama.cpp",
            501,
            json!({"error": {"code": 501, "type": "not_supported_error",
            "message": "This server does not support completions. Start it without `--embeddings`"}}),
        ),
        // OpenAI itself, for `text-embedding-3-small` and the like.
        (
            "openai",
            404,
            json!({"error": {"message": "This is not a chat model and thus not supported in the v1/chat/completions endpoint. Did you mean to use v1/completions?",
            "type": "invalid_request_error", "param": "model", "code": null}}),
        ),
        // vLLM serving a pooling model: 400 before v0.10, 501 (NotImplementedError) after.
        (
            "vllm",
            400,
            json!({"object": "error", "message": "The model does not support Chat Completions API",
            "type": "BadRequestError", "param": null, "code": 400}),
        ),
        (
            "vllm-new",
            501,
            json!({"error": {"message": "The model does not support Chat Completions API",
            "type": "NotImplementedError", "param": null, "code": 501}}),
        ),
        // LM Studio (its words for the reverse, a chat model asked to embed, are "Model is not embedding.").
        (
            "lm studio",
            400,
            json!({"error": {"message": "Failed to load model \"fake-embed\". Error: Model is not llm.",
            "type": "invalid_request_error", "param": "model", "code": "model_not_found"}}),
        ),
        // Ollama's own `/v1`.
        ("ollama /v1", 400, json!({"error": {"message": "\"fake-embed\" does not support chat", "type": "api_error"}})),
    ]
}

#[test]
fn an_openai_compatible_server_refusing_an_embedding_models_chat_is_model_cannot_chat() {
    // It was `upstream_unavailable` (HTTP 503, "the server is down"), retried three times when
    // the server said 501, for a request that can never succeed.
    let env = Env::new();
    for (what, status, body) in not_a_chat_model_answers() {
        let server = fake(FakeOllamaOptions {
            openai_only: true,
            v1_refuses_embedding_chat: Some((status, body)),
            ..Default::default()
        });
        let engine = env.engine_for("openai", &server.url(), "fake-embed", "fake-embed");
        let err = engine.stream_chat(question("hi"), &mut |_| ControlFlow::Continue(())).unwrap_err();
        assert!(matches!(&err, Error::ModelCannotChat { model, .. } if model == "fake-embed"), "{what}: {err:?}");
        assert_eq!(err.code(), "model_cannot_chat", "{what}");
        let msg = err.to_string();
        assert!(msg.contains("fake-embed on") && msg.contains("[llm] default_model"), "{what}: {msg}");
        assert!(!msg.contains("ollama pull") && !msg.contains("llm-setup"), "{what}: {msg}");
        if what == "llama.cpp" {
            assert!(msg.contains("without `--embeddings`"), "the server's own advice is kept: {msg}");
        }
        let chats = server.requests().iter().filter(|(p, _)| p == "/v1/chat/completions").count();
        assert_eq!(chats, 1, "{what}: a refusal is final, not retried");
        // A chat model on the same server still answers.
        let mut req = question("hi");
        req.model = "fake-chat".into();
        assert_eq!(collect(&engine, req).1.text, expected_answer("hi"), "{what}");
    }
}

#[test]
fn only_a_servers_words_make_a_refused_chat_model_cannot_chat() {
    // Conservative: a dead server, a server error and a 404 route stay what they were.
    let env = Env::new();
    let engine = env.engine_for("openai", &dead_url(), "fake-embed", "fake-embed");
    let err = engine.stream_chat(question("hi"), &mut |_| ControlFlow::Continue(())).unwrap_err();
    assert!(matches!(err, Error::LlmUnreachable { .. }), "{err:?}");
    assert_eq!(err.code(), "upstream_unavailable");
    let others = [
        (501, json!({"error": {"code": 501, "message": "Not Implemented", "type": "not_supported_error"}})),
        (500, json!({"error": {"message": "llama_decode failed: embedding model crashed", "type": "server_error"}})),
        (404, json!({"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}})),
    ];
    for (status, body) in others {
        let server = fake(FakeOllamaOptions {
            openai_only: true,
            v1_refuses_embedding_chat: Some((status, body.clone())),
            ..Default::default()
        });
        let engine = env.engine_for("openai", &server.url(), "fake-embed", "fake-embed");
        let err = engine.stream_chat(question("hi"), &mut |_| ControlFlow::Continue(())).unwrap_err();
        assert!(!matches!(err, Error::ModelCannotChat { .. }), "{body}: {err:?}");
    }
}

#[test]
fn a_missing_models_advice_is_true_of_its_name() {
    // Behind Ollama every missing model was told to `ollama pull` it, a model built from a
    // Modelfile too, which no registry holds: the pull fails with "file does not exist".
    let server = fake(FakeOllamaOptions {
        models: vec!["fake-chat:latest".into(), "fake-embed:latest".into(), "mymodel:v2".into()],
        ..Default::default()
    });
    let env = Env::new();
    let chat_with = |model: &str| {
        let engine = env.engine_for("ollama", &server.url(), model, "fake-embed");
        let err = engine.stream_chat(question("hi"), &mut |_| ControlFlow::Continue(())).unwrap_err();
        assert!(matches!(&err, Error::ModelNotFound { model: m, .. } if m == model), "{err:?}");
        (engine, err.to_string())
    };
    let (engine, local) = chat_with("mymodel:latest");
    assert!(!local.contains("run `docdex llm-setup"), "a pull is not the advice: {local}");
    assert!(local.contains("create it with `ollama create mymodel:latest -f Modelfile`"), "{local}");
    // The installed models are named, the same model under another tag first.
    assert!(local.contains("choose an installed one: mymodel:v2, fake-chat:latest, fake-embed:latest"), "{local}");
    let pull = engine.pull_model("mymodel:latest", &|_| {}).unwrap_err().to_string();
    assert!(pull.contains("file does not exist"), "pulling it fails, as the old advice had users do: {pull}");
    let cfg = docdex::engine::protocol::CheckOptions::default();
    let report = engine.check(&cfg);
    let hint = report.items.iter().find(|i| i.name == "chat_model").and_then(|i| i.hint.clone()).unwrap_or_default();
    assert!(hint.contains("ollama create mymodel:latest") && hint.contains("mymodel:v2"), "docdex check: {hint}");

    // Names a registry holds are pulled: Hugging Face through Ollama, and the library.
    let (_, hf) = chat_with("hf.co/org/repo-GGUF:Q4_K_M");
    assert!(hf.contains("(or `ollama pull hf.co/org/repo-GGUF:Q4_K_M`)") && !hf.contains("ollama create"), "{hf}");
    let (_, library) = chat_with("llama3.2:1b");
    assert!(
        library.contains("run `docdex llm-setup --model llama3.2:1b --yes` (or `ollama pull llama3.2:1b`)"),
        "{library}"
    );
}

#[test]
fn server_errors_are_retried_with_backoff() {
    let server = fake(FakeOllamaOptions { fail_first: 2, ..Default::default() });
    let env = Env::new();
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    let v = engine.embed(vec!["retry me".into()]).unwrap();
    assert_eq!(v.len(), 1);
    assert_eq!(server.requests().iter().filter(|(p, _)| p == "/api/embed").count(), 3);

    // Three failures in a row exhaust the attempts and surface the server's message.
    let server = fake(FakeOllamaOptions { fail_first: 3, ..Default::default() });
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    let err = engine.embed(vec!["x".into()]).unwrap_err().to_string();
    assert!(err.contains("answered 500") && err.contains("injected failure"), "{err}");

    // A chat whose start fails once is retried too (nothing was generated yet).
    let server = fake(FakeOllamaOptions { fail_first: 1, ..Default::default() });
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    let (_, reply) = collect(&engine, question("again"));
    assert_eq!(reply.text, expected_answer("again"));
}

#[test]
fn a_silent_stream_times_out_with_a_clear_error() {
    let server = fake(FakeOllamaOptions { token_delay_ms: 1500, ..Default::default() });
    let env = Env::new();
    env.write_config(&format!(
        "[llm]\nbase_url = \"{}\"\ndefault_model = \"fake-chat\"\nrequest_timeout_secs = 1\n",
        server.url()
    ));
    let engine = env.engine();
    let mut got = String::new();
    let err = engine
        .stream_chat(question("slow"), &mut |t| {
            got.push_str(t);
            ControlFlow::Continue(())
        })
        .unwrap_err()
        .to_string();
    assert!(err.contains("did not answer within 1s") && err.contains("request_timeout_secs"), "{err}");
    assert!(got.starts_with("FAKE "), "the first piece arrived before the stall: {got:?}");
}

/// A stuck server whose stream carries only keep-alives (blank lines, SSE comments, empty
/// deltas, role headers) times out like a silent one: before, every such byte restarted the
/// idle timer and the turn never ended.
#[test]
fn keep_alives_alone_do_not_keep_a_stream_alive() {
    for (provider, openai_only) in [("ollama", false), ("openai", true)] {
        let server = fake(FakeOllamaOptions { keep_alive_only_ms: 100, openai_only, ..Default::default() });
        let env = Env::new();
        env.write_config(&format!(
            "[llm]\nprovider = \"{provider}\"\nbase_url = \"{}\"\ndefault_model = \"fake-chat\"\nrequest_timeout_secs = 1\n",
            server.url()
        ));
        let engine = env.engine();
        let (tx, rx) = std::sync::mpsc::channel();
        let started = Instant::now();
        std::thread::spawn(move || {
            let r = engine.stream_chat(question("anyone there?"), &mut |_| ControlFlow::Continue(()));
            let _ = tx.send(r.map_err(|e| e.to_string()));
        });
        let Ok(result) = rx.recv_timeout(Duration::from_secs(10)) else {
            // Dropping the fake would wait for the endless stream to end.
            std::mem::forget(server);
            panic!("{provider}: a stream of keep-alives was still held open after 10 s (request_timeout_secs = 1)");
        };
        let took = started.elapsed();
        let err = result.expect_err("no answer arrived");
        assert!(err.contains("did not answer within 1s") && err.contains("only keep-alives"), "{provider}: {err}");
        assert!(took < Duration::from_secs(3), "{provider}: gave up after {took:?}");
        assert!(server.requests().iter().any(|(p, _)| p.ends_with("chat") || p.ends_with("completions")));
    }
}

#[test]
fn a_slow_reader_gets_the_whole_answer_and_can_stop_early() {
    let server = fake(FakeOllamaOptions::default());
    let env = Env::new();
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    let q = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen";
    let mut slow = Vec::new();
    let reply = engine
        .stream_chat(question(q), &mut |t| {
            std::thread::sleep(std::time::Duration::from_millis(15));
            slow.push(t.to_string());
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(reply.text, expected_answer(q));
    assert!(!reply.stopped);

    let mut seen = 0;
    let reply = engine
        .stream_chat(question(q), &mut |_| {
            seen += 1;
            if seen == 2 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
    assert!(reply.stopped);
    assert!(reply.usage.is_none());
    assert_eq!(reply.text, slow[..2].concat());
}

#[test]
fn a_cancel_token_stops_the_stream_before_the_first_token() {
    for openai_only in [false, true] {
        let server = fake(FakeOllamaOptions { first_token_delay_ms: 4000, openai_only, ..Default::default() });
        let env = Env::new();
        let provider = if openai_only { "openai" } else { "ollama" };
        let engine = env.engine_for(provider, &server.url(), "fake-chat", "fake-embed");
        let cancel = CancelToken::new();
        // Started before the tripper, so its 300 ms sleep is inside the measured wait.
        let started = Instant::now();
        let tripper = {
            let cancel = cancel.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(300));
                cancel.cancel();
            })
        };
        let mut tokens = 0;
        let reply = engine
            .stream_chat_cancellable(question("hi"), &cancel, &mut |_| {
                tokens += 1;
                ControlFlow::Continue(())
            })
            .expect("a stop is not an error");
        let took = started.elapsed();
        tripper.join().unwrap();
        assert!(reply.stopped && reply.text.is_empty() && reply.usage.is_none(), "{provider}: {reply:?}");
        assert_eq!(tokens, 0);
        assert!(took >= Duration::from_millis(300), "{provider}: it waited for the stop ({took:?})");
        assert!(took < Duration::from_millis(2500), "{provider}: the stop ended the wait promptly ({took:?})");
        assert_eq!(
            server.requests().iter().filter(|(p, _)| p.ends_with("chat/completions") || p == "/api/chat").count(),
            1
        );
    }
}

#[test]
fn an_untripped_cancel_token_changes_nothing() {
    let server = fake(FakeOllamaOptions { first_token_delay_ms: 100, ..Default::default() });
    let env = Env::new();
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    let reply = engine
        .stream_chat_cancellable(question("hi"), &CancelToken::new(), &mut |_| ControlFlow::Continue(()))
        .unwrap();
    assert!(!reply.stopped);
    assert_eq!(reply.text, expected_answer("hi"));
}

#[test]
fn an_unknown_provider_warns_and_uses_ollama() {
    let server = fake(FakeOllamaOptions::default());
    let env = Env::new();
    let engine = env.engine_for("mystery", &server.url(), "fake-chat", "fake-embed");
    assert!(
        engine.config_warnings().iter().any(|w| w.contains("mystery") && w.contains("using ollama")),
        "{:?}",
        engine.config_warnings()
    );
    assert_eq!(engine.provider().unwrap().kind(), "ollama");
    assert_eq!(engine.embed(vec!["x".into()]).unwrap().len(), 1);
}

#[test]
fn a_bad_base_url_is_a_config_error() {
    let env = Env::new();
    let engine = env.engine_for("ollama", "localhost:11434", "m", "e");
    let err = engine.provider().err().expect("bad url").to_string();
    assert!(err.contains("base_url") && err.contains("http://"), "{err}");
}
