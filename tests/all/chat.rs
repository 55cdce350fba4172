//! The waterfall chat end to end: a real index on disk, the fake Ollama (and the fake
//! OpenAI-compatible server) over loopback, real git for diffs, and `dag.db` read back.
//! Prompt assembly is asserted on the request the fake recorded.

use crate::util::{dead_url, git, git_commit_all, llm_config, stuck_server, write, Env};
use docdex::engine::protocol::{
    AnswerStatus, ChatTurnEvent, ChatTurnRequest, ChatTurnResponse, DiffRequest, MemoryStoreRequest, NodeKind,
    Sampling, Slot, StepStatus, WebPolicy,
};
use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
use docdex::Engine;
use serde_json::Value;
use std::io::{Read, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A repo indexed in a temporary home, with the fake model server configured.
struct Chat {
    env: Env,
    repo: PathBuf,
    server: FakeOllama,
}

impl Chat {
    fn new(opts: FakeOllamaOptions, extra_config: &str) -> Chat {
        Self::with_provider("ollama", opts, extra_config)
    }

    fn with_provider(provider: &str, opts: FakeOllamaOptions, extra_config: &str) -> Chat {
        let server = FakeOllama::start(opts).expect("fake server");
        let env = Env::new();
        // The web tier's discovery points at a closed port: offline, deterministically.
        // (After `extra_config`, which may continue the [llm] section.)
        env.write_config(&format!(
            "{}{extra_config}\n[web]\nddg_base_url = \"{}/html/\"\n",
            llm_config(provider, &server.url(), "fake-chat", "fake-embed"),
            dead_url()
        ));
        let repo = env.repo("proj");
        chat_repo(&repo);
        let r = repo.to_str().unwrap().to_string();
        env.json(&["index", "--repo", &r, "--json"]);
        Chat { env, repo, server }
    }

    fn engine(&self) -> Engine {
        self.env.engine()
    }

    fn ask(&self, req: &ChatTurnRequest) -> ChatTurnResponse {
        self.engine().chat(&self.repo, req, &mut |_| ControlFlow::Continue(())).expect("chat")
    }

    /// The messages of the last chat request the fake received.
    fn last_prompt(&self) -> Vec<Value> {
        let reqs = self.server.requests();
        let (_, body) =
            reqs.iter().rev().find(|(p, _)| p == "/api/chat" || p == "/v1/chat/completions").expect("a chat request");
        body["messages"].as_array().cloned().unwrap_or_default()
    }

    fn chat_bodies(&self) -> Vec<Value> {
        self.server
            .requests()
            .into_iter()
            .filter(|(p, _)| p == "/api/chat" || p == "/v1/chat/completions")
            .map(|(_, b)| b)
            .collect()
    }

    fn r(&self) -> &str {
        self.repo.to_str().unwrap()
    }
}

fn q(query: &str) -> ChatTurnRequest {
    ChatTurnRequest { query: query.into(), ..Default::default() }
}

/// A small repository with one clear answer about sessions and unrelated billing code.
fn chat_repo(root: &Path) {
    write(
        root,
        "src/auth/session.rs",
        "//! Session handling.\npub struct SessionStore { ttl: u64 }\n\nimpl SessionStore {\n    /// Removes sessions older than the ttl.\n    pub fn expire_stale_sessions(&mut self) {}\n}\n",
    );
    write(root, "src/auth/login.rs", "use super::session::SessionStore;\n\npub fn login(store: &mut SessionStore) {\n    store.expire_stale_sessions();\n}\n");
    write(
        root,
        "src/billing/invoice.rs",
        "/// Sums the line items of an invoice.\npub fn invoice_total(items: &[u64]) -> u64 {\n    items.iter().sum()\n}\n",
    );
    write(root, "README.md", "# Proj\n\nSessions expire after their ttl; invoices are summed.\n");
    write(root, "src/lib.rs", "pub mod auth;\npub mod billing;\n");
    write(root, "src/auth/mod.rs", "pub mod login;\npub mod session;\n");
    write(root, "src/billing/mod.rs", "pub mod invoice;\n");
}

fn system_text(prompt: &[Value]) -> String {
    prompt[0]["content"].as_str().unwrap_or_default().to_string()
}

#[test]
fn an_answer_streams_with_its_citations_and_sources() {
    let c = Chat::new(FakeOllamaOptions::default(), "");
    let mut tokens = Vec::new();
    let mut context_before_tokens = false;
    let resp = c
        .engine()
        .chat(&c.repo, &q("how are stale sessions expired?"), &mut |ev| {
            match ev {
                ChatTurnEvent::Token { text } => tokens.push(text),
                ChatTurnEvent::Context { sources, .. } => {
                    context_before_tokens = tokens.is_empty() && !sources.is_empty()
                }
                _ => {}
            }
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(resp.llm.status, AnswerStatus::Answered);
    let answer = resp.answer.clone().unwrap();
    assert!(tokens.len() > 3, "streamed in pieces: {tokens:?}");
    assert_eq!(tokens.concat(), answer);
    assert!(context_before_tokens, "the assembled context is reported before the answer");
    // The fake cites what the prompt cites: the top hit's exact line range.
    let top = &resp.sources[0];
    assert_eq!(top.path.as_deref(), Some("src/auth/session.rs"));
    assert_eq!(top.citation, "src/auth/session.rs:1-7");
    assert!(answer.contains("src/auth/session.rs:1-7"), "{answer}");
    assert!(top.cited);
    assert!(resp.sources.iter().all(|s| s.slot == Slot::Repo));
    let prompt = c.last_prompt();
    assert!(system_text(&prompt).contains("### src/auth/session.rs:1-7\n```rust\n//! Session handling."));
    assert_eq!(prompt.last().unwrap()["content"], "how are stale sessions expired?");
    assert_eq!(resp.trace.model.completion_tokens, Some(tokens.len() as u32));
    assert!(resp.trace.timings_ms.first_token.unwrap() <= resp.trace.timings_ms.total);
}

#[test]
fn prompt_assembly_follows_the_priority_order() {
    let c = Chat::new(FakeOllamaOptions::default(), "");
    git_commit_all(&c.repo);
    write(&c.repo, "src/billing/invoice.rs", "/// Sums the line items of an invoice, with tax.\npub fn invoice_total(items: &[u64]) -> u64 {\n    items.iter().sum::<u64>() * 2\n}\n");
    let history = vec![
        docdex::engine::llm::ChatMessage::new(docdex::engine::llm::Role::User, "what is a session store?"),
        docdex::engine::llm::ChatMessage::new(docdex::engine::llm::Role::Assistant, "It keeps sessions."),
    ];
    let req = ChatTurnRequest {
        query: "how are stale sessions expired?".into(),
        history,
        diff: Some(DiffRequest::default()),
        ..Default::default()
    };
    let resp = c.ask(&req);
    let prompt = c.last_prompt();
    let roles: Vec<&str> = prompt.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"], "system, history in order, then the question");
    assert_eq!(prompt[1]["content"], "what is a session store?");
    assert_eq!(prompt[3]["content"], "how are stale sessions expired?");
    let sys = system_text(&prompt);
    let at = |needle: &str| sys.find(needle).unwrap_or_else(|| panic!("{needle:?} not in the prompt:\n{sys}"));
    assert!(at("You are docdex") < at("## Diff under review"));
    assert!(at("## Diff under review") < at("## Repository snippets"));
    assert!(at("### src/billing/invoice.rs:1-4 (modified)") < at("### src/auth/session.rs:1-7"));
    assert!(sys.contains("+    items.iter().sum::<u64>() * 2"), "the patch itself is in the prompt");
    // Sources come back in prompt order with their slots.
    let slots: Vec<Slot> = resp.sources.iter().map(|s| s.slot).collect();
    let first_repo = slots.iter().position(|s| *s == Slot::Repo).unwrap();
    assert!(slots[..first_repo].iter().all(|s| *s == Slot::Diff) && first_repo > 0, "{slots:?}");
    let history = resp.trace.budget.slots.iter().find(|s| s.slot == Slot::History).unwrap();
    assert_eq!(history.items, 2);
}

#[test]
fn an_oversized_context_drops_the_lowest_priority_first_and_traces_each_drop() {
    let c = Chat::new(FakeOllamaOptions::default(), "context_tokens = 1024\n");
    // Many large files about sessions: far more than the 1024-token window holds.
    for i in 0..8 {
        let mut body = format!("//! Session expiry, part {i}.\n");
        for j in 0..60 {
            body.push_str(&format!("pub fn expire_stale_sessions_{i}_{j}(ttl: u64) -> bool {{ ttl > {j} }}\n"));
        }
        write(&c.repo, &format!("src/expiry/part{i}.rs"), body);
    }
    git_commit_all(&c.repo);
    write(&c.repo, "src/auth/session.rs", "//! Session handling.\npub struct SessionStore { ttl: u64, max: u64 }\n");
    c.env.json(&["index", "--repo", c.r(), "--json"]);
    let req = ChatTurnRequest {
        query: "expire stale sessions".into(),
        diff: Some(DiffRequest::default()),
        ..Default::default()
    };
    let resp = c.ask(&req);
    let b = &resp.trace.budget;
    assert_eq!(b.context_window, 1024);
    assert!(b.window_source.starts_with("config"), "{}", b.window_source);
    assert!(
        b.prompt_tokens <= 1024 - 204,
        "the prompt fits the window minus the generation share: {}",
        b.prompt_tokens
    );
    assert!(!resp.trace.drops.is_empty(), "something had to go");
    // The diff outranks the repo: it is kept while repo snippets are dropped.
    assert!(resp.trace.drops.iter().all(|d| d.slot == Slot::Repo), "{:?}", resp.trace.drops);
    assert!(resp.sources.iter().any(|s| s.slot == Slot::Diff));
    let sys = system_text(&c.last_prompt());
    for d in &resp.trace.drops {
        assert!(d.tokens > 0 && !d.reason.is_empty(), "{d:?}");
        if !d.reason.starts_with("trimmed") {
            assert!(!sys.contains(&format!("### {}", d.source)), "dropped {} is not in the prompt", d.source);
        }
    }
    for s in &resp.sources {
        assert!(sys.contains(&format!("### {}", s.citation)), "kept {} is in the prompt", s.citation);
    }
    let repo = b.slots.iter().find(|s| s.slot == Slot::Repo).unwrap();
    assert!(repo.used <= repo.allotted && repo.dropped > 0, "{repo:?}");
    // The DAG's budget decision carries the same drops.
    let dag = c.engine().dag_session(&c.repo, &resp.session_id).unwrap();
    let budget = dag.nodes.iter().find(|n| n.kind == NodeKind::Decision && n.label.starts_with("budget")).unwrap();
    assert_eq!(budget.payload["drops"].as_array().unwrap().len(), resp.trace.drops.len());
}

/// Eight indexed files of 60 session-expiry functions each: enough repository hits to fill a
/// 1,024-token context.
fn index_expiry_parts(c: &Chat) {
    for i in 0..8 {
        let mut body = format!("//! Session expiry, part {i}.\n");
        for j in 0..60 {
            body.push_str(&format!("pub fn expire_stale_sessions_{i}_{j}(ttl: u64) -> bool {{ ttl > {j} }}\n"));
        }
        write(&c.repo, &format!("src/expiry/part{i}.rs"), body);
    }
    c.env.json(&["index", "--repo", c.r(), "--json"]);
}

/// A follow-up keeps the conversation's latest exchange even when the repository's hits could
/// fill the whole context: they did, so in a real repository at a 4,096-token window every
/// follow-up ("and who calls it?") reached the model without the question it follows (tour28
/// F2, gemma3:270m through the shim: history allotted 11 tokens, both messages dropped).
#[test]
fn a_follow_up_keeps_the_latest_exchange_when_repo_hits_fill_the_context() {
    use docdex::engine::llm::{ChatMessage, Role};
    let c = Chat::new(FakeOllamaOptions::default(), "context_tokens = 1024\n");
    index_expiry_parts(&c);
    let history = vec![
        ChatMessage::new(Role::User, "old question about invoices"),
        ChatMessage::new(Role::Assistant, "old answer: invoice_total sums them"),
        ChatMessage::new(Role::User, "what does expire_stale_sessions do?"),
        ChatMessage::new(Role::Assistant, "It removes sessions older than the ttl."),
    ];
    let resp = c.ask(&ChatTurnRequest { query: "and who calls it? expire stale sessions".into(), history, ..q("") });
    assert!(resp.trace.drops.iter().any(|d| d.slot == Slot::Repo), "the repo's hits overflow: {:?}", resp.trace.drops);
    let prompt = c.last_prompt();
    let texts: Vec<&str> = prompt.iter().map(|m| m["content"].as_str().unwrap_or("")).collect();
    assert!(
        texts.contains(&"what does expire_stale_sessions do?")
            && texts.contains(&"It removes sessions older than the ttl."),
        "the latest exchange reaches the model: {:?}",
        prompt.iter().map(|m| m["role"].clone()).collect::<Vec<_>>()
    );
    let history = resp.trace.budget.slots.iter().find(|s| s.slot == Slot::History).unwrap();
    assert!(history.items >= 2, "{history:?}");
    assert!(
        resp.trace.budget.prompt_tokens <= 1024 - 204,
        "still within the window: {}",
        resp.trace.budget.prompt_tokens
    );
}

#[test]
fn the_gate_stays_local_at_or_above_the_threshold() {
    // Threshold 1.0 and a query fully matched (confidence 1.0): equal passes.
    let c = Chat::new(FakeOllamaOptions::default(), "[search]\nweb_trigger_threshold = 1.0\n");
    let resp = c.ask(&q("expire stale sessions"));
    let g = &resp.trace.gate;
    assert_eq!(g.confidence, 1.0);
    assert!(g.passed && !g.web_wanted, "{g:?}");
    assert!(g.reason.contains(">= threshold 1.00"), "{}", g.reason);
    assert_eq!(g.top_hits[0].citation, "src/auth/session.rs:1-7");
    let web = resp.trace.steps.iter().find(|s| s.name == "web").unwrap();
    assert_eq!(web.status, StepStatus::Skipped);
    assert!(resp.trace.notices.is_empty(), "{:?}", resp.trace.notices);
}

#[test]
fn the_gate_wants_the_web_below_the_threshold_and_goes_on_locally_when_offline() {
    let c = Chat::new(FakeOllamaOptions::default(), "");
    let mut notices = Vec::new();
    let resp = c
        .engine()
        .chat(&c.repo, &q("quantum chromodynamics lattice"), &mut |ev| {
            if let ChatTurnEvent::Notice { message } = ev {
                notices.push(message);
            }
            ControlFlow::Continue(())
        })
        .unwrap();
    let g = &resp.trace.gate;
    assert!(g.confidence < 0.7 && !g.passed && g.web_wanted && g.web_available, "{g:?}");
    assert!(g.reason.contains("< threshold 0.70: web wanted"), "{}", g.reason);
    let web = resp.trace.steps.iter().find(|s| s.name == "web").unwrap();
    assert_eq!(web.status, StepStatus::Unavailable);
    assert!(notices.iter().any(|n| n.contains("the web could not be reached")), "{notices:?}");
    assert_eq!(
        resp.trace.web.as_ref().and_then(|w| w.discovery),
        Some(docdex::engine::web::types::DiscoveryStatus::Failed)
    );
    assert_eq!(resp.llm.status, AnswerStatus::Answered, "the model still answers from local context");
}

#[test]
fn forcing_and_suppressing_the_web_override_the_gate() {
    let c = Chat::new(FakeOllamaOptions::default(), "");
    let forced = c.ask(&ChatTurnRequest { web: WebPolicy::Force, ..q("expire stale sessions") });
    assert!(forced.trace.gate.passed && forced.trace.gate.web_wanted);
    assert!(forced.trace.gate.reason.starts_with("web forced"));
    assert_eq!(forced.trace.steps.iter().find(|s| s.name == "web").unwrap().status, StepStatus::Unavailable);
    let off = c.ask(&ChatTurnRequest { web: WebPolicy::Off, ..q("quantum chromodynamics lattice") });
    assert!(!off.trace.gate.passed && !off.trace.gate.web_wanted);
    assert!(off.trace.gate.reason.starts_with("web suppressed"));
    assert_eq!(off.trace.steps.iter().find(|s| s.name == "web").unwrap().status, StepStatus::Skipped);
    // The CLI refuses both at once.
    let out = c.env.run(&["chat", "--repo", c.r(), "-q", "x", "--force-web", "--no-web"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_diff_adds_a_slot_right_after_memory_with_its_changed_lines() {
    let c = Chat::new(FakeOllamaOptions::default(), "");
    git_commit_all(&c.repo);
    write(&c.repo, "src/auth/session.rs", "//! Session handling.\npub struct SessionStore { ttl: u64 }\n\nimpl SessionStore {\n    /// Removes sessions older than the ttl, now in batches.\n    pub fn expire_stale_sessions(&mut self) {}\n}\n");
    git(&c.repo, &["add", "src/auth/session.rs"]);
    write(&c.repo, "README.md", "# Proj\n\nSessions expire in batches.\n");
    // Staged: only the session change.
    let staged = c.ask(&ChatTurnRequest {
        diff: Some(DiffRequest { target: "staged".into(), paths: vec![] }),
        ..q("what changed in session expiry?")
    });
    let patches = |r: &ChatTurnResponse| -> Vec<String> {
        r.sources
            .iter()
            .filter(|s| s.slot == Slot::Diff && !s.note.starts_with("imports") && !s.note.starts_with("imported by"))
            .map(|s| s.citation.clone())
            .collect()
    };
    assert_eq!(patches(&staged), ["src/auth/session.rs:2-7"]);
    assert_eq!(staged.sources[0].note, "modified");
    let step = staged.trace.steps.iter().find(|s| s.name == "diff").unwrap();
    assert_eq!((step.status, step.items), (StepStatus::Ran, 1));
    assert!(step.detail.contains("staged"), "{}", step.detail);
    // Working tree, limited by --path: only the README.
    let working = c.ask(&ChatTurnRequest {
        diff: Some(DiffRequest { target: "working".into(), paths: vec!["README.md".into()] }),
        ..q("what changed?")
    });
    assert_eq!(patches(&working), ["README.md:1-3"]);
    // A range.
    git(&c.repo, &["commit", "-q", "-am", "batches"]);
    let range = c.ask(&ChatTurnRequest {
        diff: Some(DiffRequest { target: "HEAD~1..HEAD".into(), paths: vec![] }),
        ..q("what changed?")
    });
    let mut diff = patches(&range);
    diff.sort();
    assert_eq!(diff, ["README.md:1-3", "src/auth/session.rs:2-7"]);
}

#[test]
fn a_diff_leaves_out_changed_files_docdex_does_not_serve_and_says_which() {
    let c = Chat::new(FakeOllamaOptions::default(), "");
    write(&c.repo, ".env", "API_KEY=old\n");
    write(&c.repo, ".docdexignore", "secrets/\n");
    write(&c.repo, "secrets/prod.yaml", "token: old\n");
    git_commit_all(&c.repo);
    write(&c.repo, ".env", "API_KEY=old\nNEW_ENV_SECRET=envchangedsecret_777\n");
    write(&c.repo, "secrets/prod.yaml", "token: ignoredsecret_888\n");
    write(&c.repo, "README.md", "# Proj\n\nSessions expire in batches.\n");
    let check = |resp: &ChatTurnResponse, shown: &[&str]| {
        let diff: Vec<&str> =
            resp.sources.iter().filter(|s| s.slot == Slot::Diff).map(|s| s.citation.as_str()).collect();
        assert_eq!(diff, shown, "{:?}", resp.sources);
        let sys = system_text(&c.last_prompt());
        assert!(!sys.contains("envchangedsecret_777") && !sys.contains("ignoredsecret_888"), "{sys}");
        let note = resp.trace.notices.iter().find(|n| n.contains("left out of the diff")).expect("a notice");
        assert!(note.starts_with("2 changed files left out of the diff"), "{note}");
        assert!(note.contains("hidden or ignored") && note.contains(".env, secrets/prod.yaml"), "{note}");
    };
    // The working tree, and the same changes staged.
    let working = c.ask(&ChatTurnRequest { diff: Some(DiffRequest::default()), ..q("what changed?") });
    check(&working, &["README.md:1-3"]);
    git(&c.repo, &["add", "-A"]);
    let staged = c.ask(&ChatTurnRequest {
        diff: Some(DiffRequest { target: "staged".into(), paths: vec![] }),
        ..q("what changed?")
    });
    check(&staged, &["README.md:1-3"]);
    // Deleted in a commit: the old text would be the whole patch; judged by its name.
    git(&c.repo, &["commit", "-q", "-m", "more"]);
    git(&c.repo, &["rm", "-q", ".env", "secrets/prod.yaml"]);
    git(&c.repo, &["commit", "-q", "-m", "gone"]);
    let range = c.ask(&ChatTurnRequest {
        diff: Some(DiffRequest { target: "HEAD~1..HEAD".into(), paths: vec![] }),
        ..q("what changed?")
    });
    assert!(range.sources.iter().all(|s| s.slot != Slot::Diff), "{:?}", range.sources);
    assert!(!system_text(&c.last_prompt()).contains("envchangedsecret_777"));
    assert!(
        range.trace.notices.iter().any(|n| n.starts_with("2 changed files left out of the diff")),
        "{:?}",
        range.trace.notices
    );
}

/// A deleted file is judged by its name: git's excludes file (`core.excludesFile`) was not
/// read for it, so a file the user's excludes keep private (force-added once, then deleted)
/// went to the model whole as the deletion's patch.
#[test]
fn a_deleted_file_the_excludes_file_ignores_stays_out_of_the_diff() {
    let c = Chat::new(FakeOllamaOptions::default(), "");
    git(&c.repo, &["init", "-q"]);
    let excludes = c.repo.join(".git/my-excludes");
    std::fs::write(&excludes, "private/\n").unwrap();
    git(&c.repo, &["config", "core.excludesFile", excludes.to_str().unwrap()]);
    write(&c.repo, "private/notes.txt", "the launch code is excludedsecret_999\n");
    write(&c.repo, "README.md", "# Proj\n");
    git_commit_all(&c.repo);
    git(&c.repo, &["add", "-f", "private/notes.txt"]);
    git(&c.repo, &["commit", "-q", "-m", "forced"]);
    git(&c.repo, &["rm", "-q", "private/notes.txt"]);
    write(&c.repo, "README.md", "# Proj\n\nSessions expire in batches.\n");
    git(&c.repo, &["add", "README.md"]);
    git(&c.repo, &["commit", "-q", "-m", "gone"]);
    let range = c.ask(&ChatTurnRequest {
        diff: Some(DiffRequest { target: "HEAD~1..HEAD".into(), paths: vec![] }),
        ..q("what changed?")
    });
    let diff: Vec<&str> = range.sources.iter().filter(|s| s.slot == Slot::Diff).map(|s| s.citation.as_str()).collect();
    assert_eq!(diff, ["README.md:1-3"], "{:?}", range.sources);
    assert!(!system_text(&c.last_prompt()).contains("excludedsecret_999"));
    let note = range.trace.notices.iter().find(|n| n.contains("left out of the diff")).expect("a notice");
    assert!(note.contains("private/notes.txt"), "{note}");
}

#[test]
fn a_diff_expands_one_hop_through_the_impact_graph() {
    let c = Chat::new(FakeOllamaOptions::default(), "");
    git_commit_all(&c.repo);
    write(&c.repo, "src/auth/session.rs", "//! Session handling.\npub struct SessionStore { ttl: u64 }\n\nimpl SessionStore {\n    /// Removes sessions older than the ttl, in batches.\n    pub fn expire_stale_sessions(&mut self) {}\n}\n");
    let resp = c.ask(&ChatTurnRequest { diff: Some(DiffRequest::default()), ..q("who calls expire_stale_sessions?") });
    let impact = resp.trace.steps.iter().find(|s| s.name == "impact").unwrap();
    assert_eq!((impact.status, impact.items), (StepStatus::Ran, 2), "{impact:?}");
    let diff: Vec<(&str, &str)> =
        resp.sources.iter().filter(|s| s.slot == Slot::Diff).map(|s| (s.citation.as_str(), s.note.as_str())).collect();
    // The patch first, then the files importing it, each shown from its import line.
    assert_eq!(diff[0], ("src/auth/session.rs:2-7", "modified"));
    let mut neighbours: Vec<(&str, &str)> = diff[1..].to_vec();
    neighbours.sort();
    assert_eq!(
        neighbours,
        [
            ("src/auth/login.rs:1-5", "imports src/auth/session.rs"),
            ("src/auth/mod.rs:1-2", "imports src/auth/session.rs")
        ]
    );
    let sys = system_text(&c.last_prompt());
    let at = |needle: &str| sys.find(needle).unwrap_or_else(|| panic!("{needle:?} not in the prompt:\n{sys}"));
    assert!(
        at("### src/auth/session.rs:2-7 (modified)") < at("### src/auth/login.rs:1-5 (imports src/auth/session.rs)")
    );
    assert!(at("### src/auth/login.rs:1-5") < at("## Repository snippets"));
    assert!(sys.contains("use super::session::SessionStore;"));
    // The DAG records the expansion as a tool call with what it found.
    let dag = c.engine().dag_session(&c.repo, &resp.session_id).unwrap();
    let obs = dag.nodes.iter().find(|n| n.label == "2 neighbours one import away").unwrap();
    assert_eq!(obs.kind, NodeKind::Observation);
    assert_eq!(obs.payload["neighbours"].as_array().unwrap().len(), 2);
}

#[test]
fn diff_errors_are_clear_and_exit_2() {
    let c = Chat::new(FakeOllamaOptions::default(), "");
    let out = c.env.run(&["chat", "--repo", c.r(), "-q", "what changed?", "--diff"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("needs a git repository"), "{err}");
    git_commit_all(&c.repo);
    let out = c.env.run(&["chat", "--repo", c.r(), "-q", "what changed?", "--diff", "no-such-branch..HEAD"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read the range \"no-such-branch..HEAD\""));
    let out = c.env.run(&["chat", "--repo", c.r(), "-q", "x", "--diff", "--output=/tmp/x"]);
    assert_eq!(out.status.code(), Some(2));
    // A range naming a path outside the repository: no --path was given, so none is blamed.
    let out = c.env.run(&["chat", "--repo", c.r(), "-q", "x", "--diff", "HEAD:../../etc/passwd"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("the --diff range \"HEAD:../../etc/passwd\" names a path outside"), "{err}");
    let out = c.env.run(&["chat", "--repo", c.r(), "-q", "x", "--diff", "HEAD", "--path", "../elsewhere"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("a --path is outside the repository"));
    let out = c.env.run(&["chat", "--repo", c.r(), "-q", "x", "--path", "src"]);
    assert_eq!(out.status.code(), Some(2), "--path needs --diff");
    assert!(c.chat_bodies().is_empty(), "nothing reached the model");
    assert!(c.engine().dag_sessions(&c.repo).unwrap().sessions.is_empty(), "bad input logs nothing");
}

#[test]
fn repo_memory_comes_first_in_the_prompt_and_stays_in_its_repo() {
    let c = Chat::new(FakeOllamaOptions::default(), "");
    let engine = c.engine();
    let store = |repo: &Path, content: &str| {
        let req = MemoryStoreRequest { content: content.into(), metadata: None };
        engine.memory_store(repo, &req).expect("store").memory.id
    };
    let kept = store(&c.repo, "stale sessions are expired by the nightly sweeper, never on login");
    store(&c.repo, "invoice totals are rounded to cents before tax");
    let other = c.env.repo("other");
    write(&other, "README.md", "# other\n");
    store(&other, "stale sessions in the other project are kept forever");

    let resp = c.ask(&q("how are stale sessions expired?"));
    let sys = system_text(&c.last_prompt());
    let at = |needle: &str| sys.find(needle).unwrap_or_else(|| panic!("{needle:?} not in the prompt:\n{sys}"));
    assert!(at("## Repo memory") < at("## Repository snippets"), "memory before repo code:\n{sys}");
    assert!(at("nightly sweeper") < at("## Repository snippets"));
    assert!(!sys.contains("kept forever"), "another repo's memory leaked into the prompt:\n{sys}");
    let step = resp.trace.steps.iter().find(|s| s.name == "memory").expect("memory step");
    assert_eq!(step.status, StepStatus::Ran, "{step:?}");
    let recalled = match step.items {
        1 => "1 memory recalled".to_string(),
        n => format!("{n} memories recalled"),
    };
    assert!(step.items >= 1 && step.detail.starts_with(&recalled), "{step:?}");
    let cite = format!("memory:{}", &kept[..8]);
    assert!(
        resp.sources.iter().any(|s| s.slot == Slot::Memory && s.citation == cite),
        "memory sources ({cite}) in {:?}",
        resp.sources
    );
}

#[test]
fn every_request_logs_its_session_in_the_dag() {
    let c = Chat::new(FakeOllamaOptions::default(), "");
    let first =
        c.ask(&ChatTurnRequest { agent_id: Some("mcoda_frontend".into()), ..q("how are stale sessions expired?") });
    let second = c.ask(&ChatTurnRequest { session_id: Some(first.session_id.clone()), ..q("and who calls it?") });
    assert_eq!(second.session_id, first.session_id);
    assert_eq!((first.turn, second.turn), (1, 2));
    let list = c.engine().dag_sessions(&c.repo).unwrap();
    assert_eq!(list.sessions.len(), 1);
    let s = &list.sessions[0];
    assert_eq!(
        (s.turns, s.title.as_str(), s.agent_id.as_deref()),
        (2, "how are stale sessions expired?", Some("mcoda_frontend"))
    );
    let dag = c.engine().dag_session(&c.repo, &first.session_id[..8]).unwrap();
    let kinds: Vec<(NodeKind, &str)> = dag.nodes.iter().map(|n| (n.kind, n.label.as_str())).collect();
    let turn1: Vec<NodeKind> = kinds.iter().take_while(|(_, l)| !l.starts_with("and who")).map(|(k, _)| *k).collect();
    use NodeKind::*;
    assert_eq!(
        turn1,
        [
            UserRequest, ToolCall, Observation, ToolCall, Observation, Thought, ToolCall, Observation, Decision,
            ToolCall, Observation, Decision, ToolCall, Observation
        ],
        "request, profile recall + result, project map + result, plan, search + hits, gate, memory recall + result, budget, model call + answer: {kinds:?}"
    );
    let by_id = |id: i64| dag.nodes.iter().find(|n| n.id == id).unwrap();
    let gate = dag.nodes.iter().find(|n| n.label.starts_with("gate:")).unwrap();
    assert_eq!(by_id(gate.parents[0]).kind, Observation);
    assert_eq!(gate.payload["threshold"], 0.7);
    let budget = dag.nodes.iter().find(|n| n.label.starts_with("budget:")).unwrap();
    assert_eq!(budget.parents.len(), 2, "the budget joins the gate and the memory branch");
    let answer = &dag.nodes[13];
    assert_eq!(answer.payload["answer"], first.answer.clone().unwrap().as_str());
    assert_eq!(answer.payload["cited"][0], "src/auth/session.rs:1-7");
    // The second request follows from the first's answer; no edge leaves the session.
    let second_root = dag.nodes.iter().find(|n| n.kind == UserRequest && n.label.starts_with("and who")).unwrap();
    assert_eq!(second_root.parents, vec![answer.id]);
    let ids: Vec<i64> = dag.nodes.iter().map(|n| n.id).collect();
    assert!(dag.nodes.iter().all(|n| n.parents.iter().all(|p| ids.contains(p) && *p < n.id)));
    // A long question's node label is cut and says so; its payload keeps the whole question.
    let long = format!("how are stale sessions expired {}", "and why ".repeat(30));
    let third = c.ask(&ChatTurnRequest { session_id: Some(first.session_id.clone()), ..q(&long) });
    let dag = c.engine().dag_session(&c.repo, &third.session_id).unwrap();
    let root = dag.nodes.iter().rev().find(|n| n.kind == UserRequest).unwrap();
    assert!(root.label.ends_with('…') && root.label.chars().count() == 120, "{}", root.label);
    assert_eq!(root.payload["query"], long.as_str());
}

#[test]
fn dag_cli_lists_and_renders_sessions_as_text_dot_and_json() {
    let c = Chat::new(FakeOllamaOptions::default(), "");
    let resp = c.ask(&q("how are stale sessions expired?"));
    let list = c.env.json(&["dag", "list", "--repo", c.r(), "--json"]);
    assert_eq!(list["sessions"][0]["id"], resp.session_id.as_str());
    let text = c.env.run(&["dag", "list", "--repo", c.r()]);
    assert!(String::from_utf8_lossy(&text.stdout).contains(&resp.session_id[..8]));
    let view = c.env.run(&["dag", "view", "--repo", c.r(), &resp.session_id[..8]]);
    let view = String::from_utf8_lossy(&view.stdout);
    assert!(view.contains("UserRequest") && view.contains("gate: confidence") && view.contains("<- #"), "{view}");
    let json = c.env.json(&["dag", "view", "--repo", c.r(), &resp.session_id, "--format", "json"]);
    assert_eq!(json["nodes"].as_array().unwrap().len(), 10);
    // `--json`, as every other command (and `dag list`) spells it, was an unknown argument.
    assert_eq!(c.env.json(&["dag", "view", "--repo", c.r(), &resp.session_id, "--json"]), json);
    let dot = c.env.run(&["dag", "view", "--repo", c.r(), &resp.session_id, "--format", "dot"]);
    assert!(dot.status.success());
    let dot = String::from_utf8(dot.stdout).unwrap();
    check_dot(&dot, 10);
    let missing = c.env.run(&["dag", "view", "--repo", c.r(), "ffffffff"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("docdex dag list"));
    // A prefix typed in capitals finds the session; an empty id asks for one (tour37 F11).
    let upper = resp.session_id[..8].to_uppercase();
    let view = c.env.run(&["dag", "view", "--repo", c.r(), &upper]);
    assert!(view.status.success() && String::from_utf8_lossy(&view.stdout).contains("UserRequest"), "{view:?}");
    let empty = c.env.run(&["dag", "view", "--repo", c.r(), ""]);
    assert_eq!(empty.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&empty.stderr).contains("give a session id"), "{empty:?}");
}

#[tokio::test]
async fn dag_list_answers_the_newest_sessions_and_counts_them_all() {
    // Every chat request without a session starts one, so a repository gathers thousands;
    // `dag list` and GET /v1/dag/sessions answered them all (20,000 sessions: 2.9 MB).
    let c = Chat::new(FakeOllamaOptions::default(), "");
    for question in ["how are stale sessions expired?", "how is a login checked?", "what does billing charge?"] {
        c.env.json(&["chat", "--repo", c.r(), "--json", "--query", question]);
    }
    let list = c.env.json(&["dag", "list", "--repo", c.r(), "--json", "-n", "2"]);
    assert_eq!(list["total"], 3, "{list}");
    let titles: Vec<&str> = list["sessions"].as_array().unwrap().iter().filter_map(|s| s["title"].as_str()).collect();
    assert_eq!(titles, ["what does billing charge?", "how is a login checked?"], "the newest two");
    let text = c.env.run(&["dag", "list", "--repo", c.r(), "-n", "2"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("... 1 older (3 in all; `-n N`"), "{text}");
    assert!(!text.contains("stale sessions"), "{text}");
    let too_many = c.env.run(&["dag", "list", "--repo", c.r(), "-n", "0"]);
    assert_eq!(too_many.status.code(), Some(2));

    use crate::server_util::{client, Server};
    let server = Server::start(&c.env, &["serve", "--repo", c.r(), "--no-watch"], &[]);
    let resp = client().get(server.url("/v1/dag/sessions?limit=1")).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let v: Value = resp.json().await.unwrap();
    assert_eq!((v["total"].as_u64(), v["sessions"].as_array().map(Vec::len)), (Some(3), Some(1)), "{v}");
    assert_eq!(v["sessions"][0]["title"], "what does billing charge?");
    // limit 0 was taken as 1 (one session, no word of it): a 400 naming the range.
    let resp = client().get(server.url("/v1/dag/sessions?limit=0")).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    let v: Value = resp.json().await.unwrap();
    assert!(v["error"]["message"].as_str().unwrap().starts_with("limit 0 asks for nothing: give 1 to 10000"), "{v}");
}

#[tokio::test]
async fn dag_view_answers_the_newest_nodes_and_pages_back_on_every_surface() {
    // `dag view` and GET /v1/dag/{session} answered every node of a session, which a client
    // continuing it grows without end; the TUI's DAG pane loads through the same call.
    let c = Chat::new(FakeOllamaOptions::default(), "");
    let first = c.env.json(&["chat", "--repo", c.r(), "--json", "--query", "how are stale sessions expired?"]);
    let id = first["session_id"].as_str().unwrap().to_string();
    let all = c.env.json(&["dag", "view", "--repo", c.r(), "--json", &id]);
    let ids: Vec<i64> = all["nodes"].as_array().unwrap().iter().map(|n| n["id"].as_i64().unwrap()).collect();
    assert!(ids.len() > 4, "{all}");
    assert_eq!(all["older_nodes"], 0, "{all}");
    assert!(all.get("next_before").is_none(), "{all}");
    let cut = ids.len() - 3;
    let page = c.env.json(&["dag", "view", "--repo", c.r(), "--json", "-n", "3", &id]);
    let got: Vec<i64> = page["nodes"].as_array().unwrap().iter().map(|n| n["id"].as_i64().unwrap()).collect();
    assert_eq!(got, ids[cut..], "the newest three, oldest first");
    assert_eq!((page["older_nodes"].as_u64(), page["next_before"].as_i64()), (Some(cut as u64), Some(ids[cut])));
    let before = ids[cut].to_string();
    let back = c.env.json(&["dag", "view", "--repo", c.r(), "--json", "--before", &before, &id]);
    let got: Vec<i64> = back["nodes"].as_array().unwrap().iter().map(|n| n["id"].as_i64().unwrap()).collect();
    assert_eq!(got, ids[..cut], "the rest");
    let text = c.env.run(&["dag", "view", "--repo", c.r(), "-n", "3", &id]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&format!("... {cut} older nodes not shown (the newest 3 are); `--before {before}`")),
        "{text}"
    );
    let dot = c.env.run(&["dag", "view", "--repo", c.r(), "--format", "dot", "-n", "3", &id]);
    assert!(String::from_utf8_lossy(&dot.stderr).contains(&format!("{cut} older nodes not drawn")));
    assert_eq!(c.env.run(&["dag", "view", "--repo", c.r(), "-n", "0", &id]).status.code(), Some(2));

    use crate::server_util::{client, Server};
    let server = Server::start(&c.env, &["serve", "--repo", c.r(), "--no-watch"], &[]);
    let v: Value =
        client().get(server.url(&format!("/v1/dag/{id}?limit=3"))).send().await.unwrap().json().await.unwrap();
    assert_eq!(v["nodes"], page["nodes"], "{v}");
    assert_eq!((v["older_nodes"].as_u64(), v["next_before"].as_i64()), (Some(cut as u64), Some(ids[cut])));
    let url = server.url(&format!("/v1/dag/{id}?limit=3&before={before}"));
    let v: Value = client().get(url).send().await.unwrap().json().await.unwrap();
    assert_eq!(v["nodes"].as_array().map(Vec::len), Some(3.min(cut)), "{v}");
    let resp = client().get(server.url(&format!("/v1/dag/{id}?limit=0"))).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 400, "limit 0 is refused, not taken as 1");
}

#[tokio::test]
async fn a_session_id_that_prefixes_others_is_an_id_not_an_ambiguous_prefix() {
    // HTTP clients name sessions (`docdex.session_id`); with review-10 and review-11 logged,
    // starting review-1 was refused as "session prefix is ambiguous" (400) though the id was
    // free, continuing an unknown review-2 was the same 400 rather than 404 unknown_session,
    // and `dag list` cut every id to 8 characters, listing both as review-1.
    use crate::server_util::{client, Server};
    let c = Chat::new(FakeOllamaOptions::default(), "");
    let server = Server::start(&c.env, &["serve", "--repo", c.r(), "--no-watch"], &[]);
    let ask = |id: &str, new_session: bool| {
        let body = serde_json::json!({"messages": [{"role": "user", "content": "how are stale sessions expired?"}],
            "docdex": {"session_id": id, "new_session": new_session, "no_web": true}});
        client().post(server.url("/v1/chat/completions")).json(&body).send()
    };
    for id in ["review-10", "review-11", "review-20", "review-21"] {
        assert_eq!(ask(id, true).await.unwrap().status().as_u16(), 200, "{id}");
    }
    let started = ask("review-1", true).await.unwrap();
    assert_eq!(started.status().as_u16(), 200, "{:?}", started.text().await);
    assert_eq!(ask("review-1", false).await.unwrap().status().as_u16(), 200, "continued");
    let unknown = ask("review-2", false).await.unwrap();
    assert_eq!(unknown.status().as_u16(), 404);
    let v: Value = unknown.json().await.unwrap();
    assert_eq!(v["error"]["code"], "unknown_session", "{v}");
    let taken = ask("review-10", true).await.unwrap();
    assert_eq!(taken.status().as_u16(), 409, "new_session under a taken id");

    let text = c.env.run(&["dag", "list", "--repo", c.r()]);
    let text = String::from_utf8_lossy(&text.stdout);
    for id in ["review-10", "review-11", "review-1 "] {
        assert!(text.contains(id), "{id} listed as itself: {text}");
    }
    let view = c.env.run(&["dag", "view", "--repo", c.r(), "review-1"]);
    assert!(String::from_utf8_lossy(&view.stdout).contains("turns   2"), "{view:?}");
    let short = c.env.run(&["dag", "view", "--repo", c.r(), "rev"]);
    assert_eq!(short.status.code(), Some(2));
}

#[test]
fn a_turn_the_reasoning_log_cannot_keep_says_so_without_the_trace() {
    // A damaged dag.db never fails a chat; it became a notice kept in the trace only, so
    // `docdex chat` said nothing unless --trace and still pointed at `docdex dag view`.
    let c = Chat::new(FakeOllamaOptions::default(), "");
    let state = c.engine().resolve_repo(&c.repo).unwrap().state_dir;
    std::fs::write(state.join("dag.db"), "not a database, not at all, ".repeat(40)).unwrap();
    let out = c.env.run(&["chat", "--repo", c.r(), "--no-web", "how are stale sessions expired?"]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("the reasoning log (dag.db) is unavailable, this turn is not logged"), "{err}");
    assert!(err.contains("delete the file to start a new reasoning log"), "{err}");
    let mut events = Vec::new();
    let resp = c
        .engine()
        .chat(&c.repo, &q("how are stale sessions expired?"), &mut |e| {
            events.push(e);
            ControlFlow::Continue(())
        })
        .expect("chat");
    let sent = events.iter().any(|e| matches!(e, ChatTurnEvent::Notice { message } if message.contains("dag.db")));
    assert!(sent, "a notice event, as every other notice is");
    assert_eq!(resp.trace.notices.iter().filter(|n| n.contains("dag.db")).count(), 1, "once in the trace");
}

/// The DOT renders with graphviz when it is installed; its structure is checked either way.
fn check_dot(dot: &str, nodes: usize) {
    assert!(dot.starts_with("digraph \"docdex session "), "{dot}");
    assert!(dot.trim_end().ends_with('}'));
    assert_eq!(dot.lines().filter(|l| l.trim_start().starts_with('n') && l.contains("[shape=")).count(), nodes);
    let edges = dot.lines().filter(|l| l.contains(" -> ")).count();
    assert!(edges >= nodes - 1, "a connected DAG has at least n-1 edges: {edges}");
    assert_eq!(dot.matches('{').count(), dot.matches('}').count());
    let Ok(mut child) =
        Command::new("dot").arg("-Tsvg").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()
    else {
        eprintln!("graphviz `dot` not installed: checked the DOT's structure only");
        return;
    };
    child.stdin.take().unwrap().write_all(dot.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "dot -Tsvg failed: {}", String::from_utf8_lossy(&out.stderr));
    let svg = String::from_utf8_lossy(&out.stdout);
    assert!(svg.contains("<svg") && svg.matches("class=\"node\"").count() == nodes, "{svg}");
}

#[test]
fn a_dead_server_still_returns_the_sources_and_says_how_to_set_up_a_model() {
    let env = Env::new();
    env.write_config(&llm_config("ollama", &dead_url(), "fake-chat", "fake-embed"));
    let repo = env.repo("proj");
    chat_repo(&repo);
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let resp =
        env.engine().chat(&repo, &q("how are stale sessions expired?"), &mut |_| ControlFlow::Continue(())).unwrap();
    assert_eq!(resp.llm.status, AnswerStatus::Unavailable);
    assert_eq!(resp.llm.error_code.as_deref(), Some("upstream_unavailable"));
    let msg = resp.llm.message.clone().unwrap();
    assert!(
        msg.contains("cannot reach the ollama server")
            && msg.contains("docdex llm-setup")
            && msg.contains("docdex check"),
        "{msg}"
    );
    assert!(resp.answer.is_none());
    assert_eq!(resp.sources[0].citation, "src/auth/session.rs:1-7", "retrieval works without a model");
    assert_eq!(resp.trace.steps.last().unwrap().status, StepStatus::Unavailable);
    // The CLI prints the sources, explains, and exits 1.
    let out = env.run(&["chat", "--repo", repo.to_str().unwrap(), "-q", "how are stale sessions expired?"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("src/auth/session.rs:1-7"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("docdex llm-setup"));
}

#[test]
fn a_missing_model_names_the_command_that_installs_it() {
    let c = Chat::new(FakeOllamaOptions::default(), "");
    // A library model (docdex's catalog lists it) is pulled; other names get other advice
    // (llm::a_missing_models_advice_is_true_of_its_name).
    let resp = c.ask(&ChatTurnRequest { model: Some("llama3.1:8b".into()), ..q("how are stale sessions expired?") });
    assert_eq!(resp.llm.status, AnswerStatus::Unavailable);
    assert_eq!(resp.llm.error_code.as_deref(), Some("model_not_found"));
    let msg = resp.llm.message.unwrap();
    assert!(msg.contains("docdex llm-setup --model llama3.1:8b --yes"), "{msg}");
    assert!(!resp.sources.is_empty());
    assert!(c.chat_bodies().is_empty(), "the missing model was found before any chat request");
    let dag = c.engine().dag_session(&c.repo, &resp.session_id).unwrap();
    assert_eq!(dag.nodes.last().unwrap().payload["status"], "unavailable");
}

#[test]
fn the_openai_compatible_provider_answers_and_reports_its_window() {
    let c = Chat::with_provider(
        "openai",
        FakeOllamaOptions { openai_only: true, context_length: Some(2048), ..Default::default() },
        "",
    );
    let resp = c.ask(&q("how are stale sessions expired?"));
    assert_eq!(resp.llm.status, AnswerStatus::Answered);
    assert_eq!(resp.llm.provider, "openai");
    assert!(resp.answer.unwrap().contains("src/auth/session.rs:1-7"));
    assert_eq!(resp.trace.budget.context_window, 2048);
    assert!(resp.trace.budget.window_source.starts_with("provider"), "{}", resp.trace.budget.window_source);
    let body = c.chat_bodies().pop().unwrap();
    assert_eq!(body["stream"], true);
    assert_eq!(body["max_tokens"], 409, "the answer cap is the 20% generation share of 2048");
    assert_eq!(body["messages"][0]["role"], "system");
}

/// An OpenAI client's system message (its instructions for the answer) reaches the model in
/// docdex's system message; before, it was dropped and "answer in French" was never seen.
#[test]
fn the_callers_system_message_reaches_the_model() {
    use docdex::engine::llm::{ChatMessage, Role};
    let c = Chat::new(FakeOllamaOptions::default(), "");
    let msgs = [
        ChatMessage::new(Role::System, "Answer in French."),
        ChatMessage::new(Role::System, "  "),
        ChatMessage::new(Role::User, "how are stale sessions expired?"),
    ];
    let ask = ChatTurnRequest::from_messages(&msgs).unwrap();
    assert_eq!(c.ask(&ask).llm.status, AnswerStatus::Answered);
    let prompt = c.last_prompt();
    let system = system_text(&prompt);
    assert!(system.starts_with("You are docdex"), "docdex's instructions come first: {system}");
    assert!(system.contains("## Instructions from the caller\nAnswer in French.\n\n## "), "{system}");
    assert_eq!(prompt.iter().filter(|m| m["role"] == "system").count(), 1, "{prompt:?}");
}

/// A server that refuses a prompt longer than its window (llama.cpp started with a small
/// `--ctx-size`) fails the answer with what to set; before, the server's words alone said
/// "try increasing it" without naming `[llm] context_tokens`.
#[test]
fn a_prompt_over_the_servers_window_says_which_setting_fits_it() {
    let opts = FakeOllamaOptions { openai_only: true, v1_context_window: Some(50), ..Default::default() };
    let c = Chat::with_provider("openai", opts, "");
    let resp = c.ask(&q("how are stale sessions expired?"));
    assert_eq!(resp.llm.status, AnswerStatus::Failed, "{:?}", resp.llm);
    let msg = resp.llm.message.unwrap_or_default();
    assert!(msg.contains("exceeds the available context size") && msg.contains("(50 tokens)"), "{msg}");
    assert!(msg.contains("set `[llm] context_tokens` to that window"), "{msg}");
    // Not `upstream_unavailable` (a 503 that clients retry): the same prompt fails again.
    assert_eq!(resp.llm.error_code.as_deref(), Some("context_length_exceeded"));
    assert!(!resp.sources.is_empty(), "the sources still come back");
}

/// A `max_tokens` above the answer's share of the window is lowered, and the turn says so;
/// before, the caller only saw a shorter answer ending in `length`.
#[test]
fn a_max_tokens_above_the_answers_share_is_lowered_with_a_notice() {
    let c = Chat::new(FakeOllamaOptions::default(), "context_tokens = 2048\n");
    let resp = c.ask(&ChatTurnRequest { max_answer_tokens: Some(1000), ..q("how are stale sessions expired?") });
    assert_eq!(resp.trace.budget.max_answer_tokens, 409);
    assert!(
        resp.trace.notices.iter().any(|n| n.contains("max_tokens 1000 was lowered to 409")),
        "{:?}",
        resp.trace.notices
    );
    let resp = c.ask(&ChatTurnRequest { max_answer_tokens: Some(300), ..q("how are stale sessions expired?") });
    assert!(!resp.trace.notices.iter().any(|n| n.contains("max_tokens")), "{:?}", resp.trace.notices);
}

/// llama.cpp lists the window a model was trained for (`n_ctx_train`), not the one it runs
/// with (`--ctx-size`, in `/props`): docdex budgeted for the first and overflowed the second.
#[test]
fn llama_cpp_is_budgeted_for_the_window_it_runs_with() {
    let opts = FakeOllamaOptions { openai_only: true, props_n_ctx: Some(2048), ..Default::default() };
    let c = Chat::with_provider("openai", opts, "context_tokens = 8192\n");
    let resp = c.ask(&q("how are stale sessions expired?"));
    assert_eq!(resp.llm.status, AnswerStatus::Answered);
    assert_eq!(resp.trace.budget.context_window, 2048, "{}", resp.trace.budget.window_source);
    assert!(resp.trace.budget.window_source.contains("reports 2048"), "{}", resp.trace.budget.window_source);
    // A server without `/props` (vLLM, LM Studio, Ollama's /v1) keeps the configured window.
    let plain = Chat::with_provider("openai", FakeOllamaOptions { openai_only: true, ..Default::default() }, "");
    assert_eq!(plain.ask(&q("how are stale sessions expired?")).trace.budget.context_window, 8192);
}

/// The temperature and answer format a caller asks for (HTTP `temperature`, `response_format`)
/// reach the model server in its own wire format; before, the turn always sent neither. So do
/// `top_p` and the two penalties (they were dropped, tour13 F9).
#[test]
fn temperature_stop_and_answer_format_reach_the_model_server() {
    let schema = serde_json::json!({"type": "object", "properties": {"file": {"type": "string"}}});
    for (provider, openai_only) in [("ollama", false), ("openai", true)] {
        let c = Chat::with_provider(provider, FakeOllamaOptions { openai_only, ..Default::default() }, "");
        let ask = ChatTurnRequest {
            sampling: Sampling {
                temperature: Some(0.0),
                top_p: Some(0.5),
                presence_penalty: Some(1.0),
                frequency_penalty: Some(-0.5),
            },
            format: Some(schema.clone()),
            stop: vec!["\n\n".into(), "END".into()],
            ..q("where are sessions kept?")
        };
        assert_eq!(c.ask(&ask).llm.status, AnswerStatus::Answered);
        let json_mode = ChatTurnRequest { format: Some(serde_json::json!("json")), ..q("where are sessions kept?") };
        assert_eq!(c.ask(&json_mode).llm.status, AnswerStatus::Answered);
        let bodies = c.chat_bodies();
        let (first, second) = (&bodies[bodies.len() - 2], &bodies[bodies.len() - 1]);
        let sampling = if provider == "ollama" { &first["options"] } else { first };
        for (key, want) in [("top_p", 0.5), ("presence_penalty", 1.0), ("frequency_penalty", -0.5)] {
            assert_eq!(sampling[key].as_f64(), Some(want), "{provider} {key}: {first}");
            let unasked = if provider == "ollama" { &second["options"] } else { second };
            assert!(unasked.get(key).is_none(), "the server's default unless asked: {second}");
        }
        if provider == "ollama" {
            assert_eq!(first["options"]["temperature"], 0.0, "{first}");
            assert_eq!(first["options"]["stop"], serde_json::json!(["\n\n", "END"]), "{first}");
            assert!(second["options"].get("stop").is_none(), "no stop unless asked: {second}");
            assert_eq!(first["format"], schema);
            assert_eq!(second["format"], "json");
            assert!(second["options"].get("temperature").is_none(), "the server's default: {second}");
        } else {
            assert_eq!(first["temperature"], 0.0, "{first}");
            assert_eq!(first["stop"], serde_json::json!(["\n\n", "END"]), "{first}");
            assert!(second.get("stop").is_none(), "no stop unless asked: {second}");
            assert_eq!(first["response_format"]["json_schema"]["schema"], schema);
            assert_eq!(second["response_format"], serde_json::json!({"type": "json_object"}));
            assert!(second.get("temperature").is_none(), "the server's default: {second}");
        }
    }
}

/// A server that silently cut the prompt to its own, smaller window (it reports reading far
/// fewer tokens than were sent) gets a notice naming both counts and the fix; the answer
/// still stands, and the cut count is not taken as the model's token ratio. Before, nothing
/// said the model had not seen most of its sources.
#[test]
fn a_prompt_the_server_cut_short_is_flagged_with_the_fix() {
    let history: Vec<docdex::engine::llm::ChatMessage> = (0..6)
        .map(|i| {
            let text = format!(
                "Turn {i}: the session store keeps every login for its ttl and the invoice module sums line items. "
            )
            .repeat(12);
            docdex::engine::llm::ChatMessage::new(
                if i % 2 == 0 { docdex::engine::llm::Role::User } else { docdex::engine::llm::Role::Assistant },
                text,
            )
        })
        .collect();
    let ask = ChatTurnRequest { history, ..q("how are stale sessions expired?") };
    for (provider, openai_only) in [("ollama", false), ("openai", true)] {
        let opts = FakeOllamaOptions { prompt_tokens_seen: Some(400), openai_only, ..Default::default() };
        let c = Chat::with_provider(provider, opts, "");
        let resp = c.ask(&ask);
        assert_eq!(resp.llm.status, AnswerStatus::Answered, "{provider}: the turn does not fail");
        assert!(resp.answer.as_deref().is_some_and(|a| a.starts_with("FAKE ANSWER")));
        let m = &resp.trace.model;
        assert!(m.prompt_tokens_estimated >= 2000, "{provider}: a large prompt was sent: {m:?}");
        assert_eq!(m.prompt_tokens_reported, Some(400));
        assert!(m.prompt_truncated, "{provider}: {m:?}");
        let want = format!("saw only 400 of the ~{} prompt tokens", m.prompt_tokens_estimated);
        let notice = resp.trace.notices.iter().find(|n| n.contains(&want));
        let notice = notice.unwrap_or_else(|| panic!("{provider}: no notice {want:?} in {:?}", resp.trace.notices));
        assert!(notice.contains("context size") && notice.contains("[llm] context_tokens"), "{notice}");
        // The next turn is not "calibrated" to the cut count.
        let next = c.ask(&ask);
        assert!(next.trace.budget.tokenizer.ratio >= 1.0, "{provider}: {:?}", next.trace.budget.tokenizer);
        // A server that read the whole prompt gets no such notice.
        let whole = Chat::with_provider(provider, FakeOllamaOptions { openai_only, ..Default::default() }, "");
        let resp = whole.ask(&ask);
        assert!(!resp.trace.model.prompt_truncated, "{provider}: {:?}", resp.trace.model);
        assert!(!resp.trace.notices.iter().any(|n| n.contains("saw only")), "{:?}", resp.trace.notices);
    }
}

#[test]
fn ollama_runs_with_the_budgeted_window_and_token_counts_get_calibrated() {
    let c = Chat::new(FakeOllamaOptions { context_length: Some(4096), ..Default::default() }, "");
    let first = c.ask(&q("how are stale sessions expired?"));
    assert_eq!(first.trace.budget.context_window, 4096);
    let body = c.chat_bodies().pop().unwrap();
    assert_eq!(body["options"]["num_ctx"], 4096, "Ollama is told the window the prompt was budgeted for");
    let t = &first.trace.budget.tokenizer;
    assert_eq!((t.name.as_str(), t.exact, t.ratio), ("cl100k_base", false, 1.25), "a margin until measured");
    assert!(first.trace.model.prompt_tokens_reported.is_some());
    // The fake counts 90% of cl100k, as Llama 3 does on code: the next request is corrected.
    let second = c.ask(&q("how are stale sessions expired?"));
    let t = &second.trace.budget.tokenizer;
    // About 0.91 measured, counted with an 8 % margin.
    assert!(t.ratio < 1.0 && t.note.contains("measured"), "{t:?}");
    assert!(second.trace.budget.prompt_tokens < first.trace.budget.prompt_tokens);
}

/// After calibration the budget keeps a margin: a prompt the server counts a little denser than
/// the ratio measured so far still leaves the answer its whole cap inside the window (tour28 F3:
/// gemma3:270m calibrated at 1.11 on prose counted a Rust prompt at 3,489 tokens against docdex's
/// 3,246, and 3,489 + the 819-token cap ran past the 4,096-token window: the answer stopped at
/// 606 tokens).
#[test]
fn a_calibrated_budget_leaves_the_answer_its_cap_when_a_prompt_counts_denser() {
    let c = Chat::new(FakeOllamaOptions::default(), "context_tokens = 1024\n");
    index_expiry_parts(&c);
    // Measured against a server counting 90 % of cl100k.
    c.ask(&q("expire stale sessions"));
    let Chat { env, repo, server } = c;
    let port = server.addr().port();
    drop(server);
    // The same server (so the same measured ratio) now counts this prompt at 95 %.
    let _denser = FakeOllama::start(FakeOllamaOptions { port, prompt_count_percent: 95, ..Default::default() })
        .expect("fake on the same port");
    let resp = env.engine().chat(&repo, &q("expire stale sessions"), &mut |_| ControlFlow::Continue(())).unwrap();
    assert!(!resp.trace.drops.is_empty(), "the prompt fills its budget");
    let t = &resp.trace.budget.tokenizer;
    assert!(t.note.contains("measured") && t.note.contains("margin"), "{t:?}");
    let reported = resp.trace.model.prompt_tokens_reported.expect("the server's count");
    let cap = resp.trace.budget.max_answer_tokens;
    assert!(reported + cap <= 1024, "prompt {reported} by the server's count + answer cap {cap} fit the window");
}

#[test]
fn returning_break_stops_the_answer() {
    let c = Chat::new(FakeOllamaOptions { token_delay_ms: 20, ..Default::default() }, "");
    let mut n = 0;
    let resp = c
        .engine()
        .chat(&c.repo, &q("how are stale sessions expired?"), &mut |ev| {
            if matches!(ev, ChatTurnEvent::Token { .. }) {
                n += 1;
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(n, 1);
    assert_eq!(resp.llm.status, AnswerStatus::Stopped);
    assert_eq!(resp.answer.unwrap().split_whitespace().count(), 1);
}

#[test]
fn a_cancel_token_stops_the_turn_while_the_model_reads_the_prompt() {
    let c = Chat::new(FakeOllamaOptions { first_token_delay_ms: 4000, ..Default::default() }, "");
    let req = q("how are stale sessions expired?");
    let cancel = req.cancel.clone();
    let mut asked_at = None;
    let mut tokens = 0;
    let resp = c
        .engine()
        .chat(&c.repo, &req, &mut |ev| {
            match ev {
                // The context is reported just before the model is asked: stop 300 ms into the wait.
                ChatTurnEvent::Context { .. } => {
                    asked_at = Some(Instant::now());
                    let cancel = cancel.clone();
                    std::thread::spawn(move || {
                        std::thread::sleep(Duration::from_millis(300));
                        cancel.cancel();
                    });
                }
                ChatTurnEvent::Token { .. } => tokens += 1,
                _ => {}
            }
            ControlFlow::Continue(())
        })
        .unwrap();
    let waited = asked_at.expect("the context was reported").elapsed();
    assert!(waited < Duration::from_millis(2500), "ended promptly, not at the first token ({waited:?})");
    assert_eq!(tokens, 0);
    assert_eq!(resp.llm.status, AnswerStatus::Stopped);
    assert_eq!(resp.answer, None);
    assert_eq!(c.chat_bodies().len(), 1, "the model was asked before the stop");
    let llm = resp.trace.steps.iter().find(|s| s.name == "llm").unwrap();
    assert_eq!((llm.status, llm.detail.as_str()), (StepStatus::Ran, "stopped"));
    assert!(resp.trace.timings_ms.first_token.is_none());
    // The session is logged, its answer marked stopped.
    let dag = c.engine().dag_session(&c.repo, &resp.session_id).unwrap();
    let last = dag.nodes.last().unwrap();
    assert_eq!((last.kind, last.label.as_str()), (NodeKind::Observation, "answer: stopped"));
    assert_eq!(last.payload["status"], "stopped");
}

#[test]
fn a_cancel_token_tripped_before_the_turn_skips_the_tiers_and_the_model() {
    let c = Chat::new(FakeOllamaOptions::default(), "");
    let req = q("how are stale sessions expired?");
    req.cancel.cancel();
    let resp = c.engine().chat(&c.repo, &req, &mut |_| ControlFlow::Continue(())).unwrap();
    assert_eq!(resp.llm.status, AnswerStatus::Stopped);
    assert_eq!(resp.answer, None);
    assert!(c.chat_bodies().is_empty(), "the model was not asked");
    for name in ["code_index", "gate", "web", "memory", "diff"] {
        let step = resp.trace.steps.iter().find(|s| s.name == name).unwrap();
        assert_eq!(step.status, StepStatus::Skipped, "{step:?}");
        assert!(step.detail.contains("stopped"), "{step:?}");
    }
    assert!(resp.sources.is_empty());
    let dag = c.engine().dag_session(&c.repo, &resp.session_id).unwrap();
    assert_eq!(dag.nodes.last().unwrap().label, "answer: stopped");
}

#[test]
fn the_cli_streams_tokens_before_the_answer_is_complete() {
    let c = Chat::new(FakeOllamaOptions { token_delay_ms: 150, ..Default::default() }, "");
    let mut child = Command::new(env!("CARGO_BIN_EXE_docdex"))
        .args(["chat", "--repo", c.r(), "--query", "how are stale sessions expired?"])
        .env("DOCDEX_HOME", c.env.home())
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 4];
    stdout.read_exact(&mut first).unwrap();
    let got_first = Instant::now();
    assert_eq!(&first, b"FAKE");
    assert!(child.try_wait().unwrap().is_none(), "the first token arrived while the answer was still being generated");
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert!(child.wait().unwrap().success());
    assert!(got_first.elapsed() >= Duration::from_millis(600), "about 10 more tokens at 150 ms each followed");
    assert!(rest.contains("src/auth/session.rs:1-7"));
}

#[test]
fn the_repl_keeps_history_within_a_session_until_new() {
    let c = Chat::new(FakeOllamaOptions::default(), "");
    let mut child = Command::new(env!("CARGO_BIN_EXE_docdex"))
        .args(["chat", "--repo", c.r(), "--json"])
        .env("DOCDEX_HOME", c.env.home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"how are stale sessions expired?\n\nwho calls expire_stale_sessions?\n/new\nhow are invoices summed?\n/exit\nnot asked\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let turns: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(turns.len(), 3, "one JSON line per question; blank lines skipped, nothing after /exit");
    assert_eq!(turns[0]["session_id"], turns[1]["session_id"]);
    assert_ne!(turns[1]["session_id"], turns[2]["session_id"], "/new starts a new session");
    assert_eq!(
        (turns[0]["turn"].as_u64(), turns[1]["turn"].as_u64(), turns[2]["turn"].as_u64()),
        (Some(1), Some(2), Some(1))
    );
    let bodies = c.chat_bodies();
    let roles = |b: &Value| {
        b["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap().to_string()).collect::<Vec<_>>()
    };
    assert_eq!(roles(&bodies[0]), ["system", "user"]);
    assert_eq!(roles(&bodies[1]), ["system", "user", "assistant", "user"], "the first turn is history for the second");
    assert_eq!(bodies[1]["messages"][1]["content"], "how are stale sessions expired?");
    assert_eq!(bodies[1]["messages"][2]["content"], turns[0]["answer"]);
    assert_eq!(roles(&bodies[2]), ["system", "user"], "history cleared by /new");
    let sessions = c.engine().dag_sessions(&c.repo).unwrap().sessions;
    assert_eq!(sessions.len(), 2);
}

#[test]
fn chat_json_and_trace_follow_the_contract() {
    let c = Chat::new(FakeOllamaOptions::default(), "");
    let v =
        c.env.json(&["chat", "--repo", c.r(), "-q", "how are stale sessions expired?", "--json", "--agent", "qa_bot"]);
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["llm"]["status"], "answered");
    assert_eq!(v["trace"]["agent_id"], "qa_bot");
    // The question may also be given as plain words, as for `docdex search`.
    let w = c.env.json(&["chat", "--repo", c.r(), "how", "are stale sessions expired?", "--json"]);
    assert_eq!(w["llm"]["status"], "answered");
    let asked = c.chat_bodies().last().expect("a chat request").to_string();
    assert!(asked.contains("how are stale sessions expired?"), "{asked}");
    assert_eq!(w["sources"][0]["citation"], "src/auth/session.rs:1-7");
    let both = c.env.run(&["chat", "--repo", c.r(), "-q", "x", "y"]);
    assert_eq!(both.status.code(), Some(2), "a question twice is refused");
    for key in ["request_id", "steps", "gate", "budget", "drops", "model", "timings_ms", "notices"] {
        assert!(!v["trace"][key].is_null(), "trace.{key}");
    }
    let steps: Vec<&str> =
        v["trace"]["steps"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(steps, ["profile", "project_map", "code_index", "libs_index", "gate", "web", "memory", "diff", "llm"]);
    let slots: Vec<&str> =
        v["trace"]["budget"]["slots"].as_array().unwrap().iter().map(|s| s["slot"].as_str().unwrap()).collect();
    assert_eq!(
        slots,
        ["system", "profile", "map", "memory", "diff", "repo", "history", "library", "web", "generation"]
    );
    assert_eq!(
        v["trace"]["budget"]["shares"],
        serde_json::json!({"system": 10, "memory": 20, "context": 50, "generation": 20})
    );
    let human = c.env.run(&["chat", "--repo", c.r(), "-q", "how are stale sessions expired?", "--trace"]);
    let text = String::from_utf8_lossy(&human.stdout);
    for needle in
        ["trace", "code_index", "gate    confidence", "budget  window 8192", "generation", "time    retrieval"]
    {
        assert!(text.contains(needle), "{needle:?} missing from:\n{text}");
    }
    let bad = c.env.run(&["chat", "--repo", c.r(), "-q", "x", "--agent", "no spaces allowed"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn a_stuck_server_costs_one_timeout_not_one_per_request_and_retry() {
    // A server that accepts connections and never answers (hung, or overloaded).
    let (url, accepted) = stuck_server();
    // Indexed with embeddings while the server worked, so the turn embeds its query first.
    let fake = FakeOllama::start(FakeOllamaOptions::default()).expect("fake server");
    let env = Env::new();
    env.write_config(&format!(
        "{}[web]\nenabled = false\n",
        llm_config("ollama", &fake.url(), "fake-chat", "fake-embed")
    ));
    let repo = env.repo("proj");
    chat_repo(&repo);
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    env.write_config(&format!(
        "{}[web]\nenabled = false\n",
        llm_config("ollama", &url, "fake-chat", "fake-embed")
            .replace("request_timeout_secs = 5", "request_timeout_secs = 1")
    ));
    let started = Instant::now();
    let resp =
        env.engine().chat(&repo, &q("how are stale sessions expired?"), &mut |_| ControlFlow::Continue(())).unwrap();
    let took = started.elapsed();
    assert_eq!(resp.llm.status, AnswerStatus::Unavailable, "{:?}", resp.llm);
    let msg = resp.llm.message.clone().unwrap();
    assert!(msg.contains("did not answer within 1s") && msg.contains("request_timeout_secs"), "{msg}");
    assert!(!resp.sources.is_empty(), "retrieval still answers");
    // Before: three attempts for each of the embedding, the window lookup and the chat (9 s).
    // Now the query's embedding meets the timeout, and the rest of the turn skips the server.
    let n = accepted.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(n, 1, "requests to a stuck server");
    assert!(took < Duration::from_secs(3), "the turn took {took:?}");
}

/// A repo in a fresh home, indexed with embeddings (`embedded`) or without, whose config then
/// points at the stuck server with a 30-second timeout.
fn stuck_home(embedded: bool, stuck_url: &str) -> (Env, PathBuf) {
    let fake = FakeOllama::start(FakeOllamaOptions::default()).expect("fake server");
    let index_url = if embedded { fake.url() } else { dead_url() };
    let env = Env::new();
    env.write_config(&format!(
        "{}[web]\nenabled = false\n",
        llm_config("ollama", &index_url, "fake-chat", "fake-embed")
    ));
    let repo = env.repo("proj");
    chat_repo(&repo);
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    env.write_config(&format!(
        "{}[web]\nenabled = false\n",
        llm_config("ollama", stuck_url, "fake-chat", "fake-embed")
            .replace("request_timeout_secs = 5", "request_timeout_secs = 30")
    ));
    (env, repo)
}

#[test]
fn a_cancel_token_stops_a_turn_waiting_on_a_stuck_server_within_a_tick() {
    // Without embeddings the first wait is the context-window lookup; with them, the query's
    // embedding inside search. Neither answered the token: a stop waited the whole timeout.
    for embedded in [false, true] {
        let (url, accepted) = stuck_server();
        let (env, repo) = stuck_home(embedded, &url);
        let req = q("how are stale sessions expired?");
        let cancel = req.cancel.clone();
        let counter = accepted.clone();
        std::thread::spawn(move || {
            // Stop once the turn is waiting on the server.
            while counter.load(std::sync::atomic::Ordering::SeqCst) == 0 {
                std::thread::sleep(Duration::from_millis(10));
            }
            std::thread::sleep(Duration::from_millis(200));
            cancel.cancel();
        });
        let started = Instant::now();
        let resp = env.engine().chat(&repo, &req, &mut |_| ControlFlow::Continue(())).unwrap();
        let took = started.elapsed();
        assert!(took < Duration::from_secs(5), "embedded {embedded}: the stop took {took:?}");
        assert_eq!(resp.llm.status, AnswerStatus::Stopped, "embedded {embedded}: {:?}", resp.llm);
        assert_eq!(
            accepted.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "embedded {embedded}: nothing more was asked"
        );
        let dag = env.engine().dag_session(&repo, &resp.session_id).unwrap();
        assert_eq!(dag.nodes.last().unwrap().label, "answer: stopped");
        // A stop is no verdict on the server: the next turn asks it again (and meets its timeout).
        assert!(!resp.llm.message.clone().unwrap_or_default().contains("did not answer"), "{:?}", resp.llm);
    }
}

#[test]
fn ctrl_c_stops_a_cli_chat_while_the_model_reads_the_prompt() {
    let c = Chat::new(FakeOllamaOptions { first_token_delay_ms: 20_000, ..Default::default() }, "");
    let child = Command::new(env!("CARGO_BIN_EXE_docdex"))
        .args(["chat", "--repo", c.r(), "--query", "how are stale sessions expired?"])
        .env("DOCDEX_HOME", c.env.home())
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while c.chat_bodies().is_empty() {
        assert!(Instant::now() < deadline, "the model was never asked");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    let pressed = Instant::now();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let took = pressed.elapsed();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    // Before, Ctrl-C was only seen by the next event: the first token, 20 s later.
    assert!(took < Duration::from_secs(5), "Ctrl-C took {took:?} to stop the answer");
    assert!(stderr.contains("(answer stopped)"), "{stderr}");
    assert!(stdout.contains("src/auth/session.rs:1-7"), "the sources are still listed: {stdout}");
    assert_eq!(out.status.code(), Some(130), "a stopped answer is not a whole one (it exited 0)");
}

#[test]
fn a_cli_chat_whose_reader_has_gone_stops_the_answer_quietly() {
    // `docdex chat --query q | head -c 20`: the answer streamed on to no one until the model
    // finished (200 words at 50 ms here: 10 s).
    let c = Chat::new(FakeOllamaOptions { token_delay_ms: 50, ..Default::default() }, "");
    let long: String = (0..200).map(|i| format!("word{i} ")).collect();
    c.server.script("stale sessions", vec![long]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_docdex"))
        .args(["chat", "--repo", c.r(), "--query", "how are stale sessions expired?"])
        .env("DOCDEX_HOME", c.env.home())
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 8];
    std::io::Read::read_exact(&mut child.stdout.take().unwrap(), &mut first).unwrap();
    assert_eq!(&first[..5], b"word0", "{:?}", String::from_utf8_lossy(&first));
    let closed = Instant::now();
    let out = child.wait_with_output().unwrap();
    let took = closed.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(took < Duration::from_secs(4), "the answer ran on for {took:?} after its reader left");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("error") && !stderr.contains("(answer stopped)"), "{stderr}");
}

#[test]
fn a_streamed_answer_shows_control_characters_and_json_keeps_them() {
    // A model repeating a file's escape sequences sent them raw to the terminal as it streamed.
    let c = Chat::new(FakeOllamaOptions::default(), "");
    let answer = "Sessions \u{1b}]0;pwned\u{7} expire\nhourly \u{1b}[2J here.";
    c.server.script("stale sessions", vec![answer.into(), answer.into()]);
    let out = c.env.run(&["chat", "--repo", c.r(), "--query", "how are stale sessions expired?"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Sessions \\u{1b}]0;pwned\\u{7} expire\nhourly \\u{1b}[2J here."), "{text:?}");
    assert!(!text.chars().any(|c| c.is_control() && c != '\n' && c != '\t'), "{text:?}");
    let v = c.env.json(&["chat", "--repo", c.r(), "--query", "how are stale sessions expired?", "--json"]);
    assert!(v["answer"].as_str().unwrap().contains(answer), "{v}");
}

#[test]
fn a_model_window_under_1024_tokens_is_budgeted_as_reported() {
    // A server run with a small context (llama-server -c 600): the prompt and the answer cap
    // must fit in it. The window was raised to 1,024, so the request overflowed the model.
    let c = Chat::with_provider(
        "openai",
        FakeOllamaOptions { openai_only: true, context_length: Some(600), ..Default::default() },
        "",
    );
    let resp = c.ask(&q("how are stale sessions expired?"));
    assert_eq!(resp.llm.status, AnswerStatus::Answered, "{:?}", resp.llm);
    let b = &resp.trace.budget;
    assert_eq!(b.context_window, 600, "{}", b.window_source);
    let body = c.chat_bodies().pop().unwrap();
    let cap = body["max_tokens"].as_u64().unwrap();
    assert_eq!(cap, 120, "the answer cap is the 20% generation share of 600");
    assert!(u64::from(b.prompt_tokens) + cap <= 600, "prompt {} + answer {cap} overflow 600", b.prompt_tokens);
    // The same through Ollama: it is run with the model's own num_ctx, not above it.
    let o = Chat::new(FakeOllamaOptions { context_length: Some(600), ..Default::default() }, "");
    let resp = o.ask(&q("how are stale sessions expired?"));
    assert_eq!(resp.trace.budget.context_window, 600);
    assert_eq!(o.chat_bodies().pop().unwrap()["options"]["num_ctx"], 600);
}

#[test]
fn a_turn_failing_after_its_request_was_logged_ends_its_dag_turn_and_stays_in_the_session() {
    let c = Chat::new(FakeOllamaOptions::default(), "context_tokens = 1024\n");
    let long = "why do stale sessions expire ".repeat(250);
    let err = c.engine().chat(&c.repo, &q(&long), &mut |_| ControlFlow::Continue(())).unwrap_err();
    // The model server's own overflow code: OpenAI clients trim the history on it.
    assert_eq!(err.code(), "context_length_exceeded", "{err}");
    assert!(err.to_string().contains("1024-token context window"), "{err}");
    // The request, its plan and its searches were logged: the failure now ends the turn.
    let sessions = c.engine().dag_sessions(&c.repo).unwrap().sessions;
    assert_eq!(sessions.len(), 1);
    let dag = c.engine().dag_session(&c.repo, &sessions[0].id).unwrap();
    let last = dag.nodes.last().unwrap();
    assert_eq!((last.kind, last.label.as_str()), (NodeKind::Observation, "answer: failed"), "{:?}", dag.nodes);
    assert_eq!(last.payload["code"], "context_length_exceeded");
    assert!(last.payload["error"].as_str().unwrap().contains("context window"));
    assert!(c.chat_bodies().is_empty(), "the model was not asked");

    // In a CLI session the failed question and the next one are one conversation.
    let mut child = Command::new(env!("CARGO_BIN_EXE_docdex"))
        .args(["chat", "--repo", c.r(), "--json"])
        .env("DOCDEX_HOME", c.env.home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(format!("{long}\nhow are stale sessions expired?\n").as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("context window"));
    let turns: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(turns.len(), 1, "one answered turn");
    assert_eq!(turns[0]["turn"], 2, "the failed question was turn 1 of the same session");
    let sessions = c.engine().dag_sessions(&c.repo).unwrap().sessions;
    assert_eq!(sessions.len(), 2, "the engine call's session and the CLI's one: {sessions:?}");
    let cli = c.engine().dag_session(&c.repo, turns[0]["session_id"].as_str().unwrap()).unwrap();
    let labels: Vec<&str> =
        cli.nodes.iter().filter(|n| n.label.starts_with("answer: ")).map(|n| n.label.as_str()).collect();
    assert_eq!(labels, ["answer: failed", "answer: answered"]);
}

#[test]
fn an_answer_cut_off_by_the_server_keeps_its_text_and_says_what_to_do() {
    let c = Chat::new(FakeOllamaOptions { cut_after_pieces: 3, ..Default::default() }, "");
    let resp = c.ask(&q("how are stale sessions expired?"));
    assert_eq!(resp.llm.status, AnswerStatus::Failed, "{:?}", resp.llm);
    assert!(resp.answer.as_deref().is_some_and(|a| a.starts_with("FAKE")), "{:?}", resp.answer);
    let msg = resp.llm.message.unwrap();
    assert!(msg.contains("before it was complete"), "{msg}");
    assert!(msg.contains("check it") && msg.contains("ask again"), "the message says what to do: {msg}");
}

#[test]
fn a_budgeted_history_sent_to_the_model_alternates_and_opens_with_a_question() {
    use docdex::engine::llm::{ChatMessage, Role};
    let c = Chat::new(FakeOllamaOptions::default(), "context_tokens = 1024\n");
    // Six earlier turns, too many for a 1,024-token window; the fourth question is long.
    let mut history = Vec::new();
    for i in 0..6 {
        let words = if i == 3 { 200 } else { 40 };
        history.push(ChatMessage::new(Role::User, format!("question {i} about sessions {}", "word ".repeat(words))));
        history.push(ChatMessage::new(Role::Assistant, format!("answer {i} {}", "text ".repeat(60))));
    }
    let resp =
        c.ask(&ChatTurnRequest { query: "how are stale sessions expired?".into(), history, ..Default::default() });
    assert_eq!(resp.llm.status, AnswerStatus::Answered);
    let roles: Vec<String> = c.last_prompt().iter().map(|m| m["role"].as_str().unwrap().to_string()).collect();
    assert!(roles.len() > 2, "some history was kept: {roles:?}");
    assert_eq!(roles[0], "system");
    // Before: every message that fitted, newest first, so older ones filled the holes the long
    // question left (user, user, assistant, assistant, ...).
    assert_eq!(roles[1], "user", "the kept history opens with a question: {roles:?}");
    for pair in roles[1..].windows(2) {
        assert_ne!(pair[0], pair[1], "roles alternate: {roles:?}");
    }
    assert_eq!(roles.last().map(String::as_str), Some("user"));
    let h = resp.trace.budget.slots.iter().find(|s| s.slot == Slot::History).unwrap();
    assert_eq!(h.items as usize, roles.len() - 2);
    assert_eq!((h.items + h.dropped) as usize, 12, "every earlier message is kept or traced as dropped");
}

#[test]
fn the_wait_for_a_stuck_server_shows_in_the_model_step_not_the_assembly() {
    // No embeddings: the first thing asked of the server is the model's window.
    let (url, _) = stuck_server();
    let (env, repo) = stuck_home(false, &url);
    env.write_config(&format!(
        "{}[web]\nenabled = false\n",
        llm_config("ollama", &url, "fake-chat", "fake-embed")
            .replace("request_timeout_secs = 5", "request_timeout_secs = 1")
    ));
    let resp =
        env.engine().chat(&repo, &q("how are stale sessions expired?"), &mut |_| ControlFlow::Continue(())).unwrap();
    assert_eq!(resp.llm.status, AnswerStatus::Unavailable);
    let t = &resp.trace;
    let llm = t.steps.iter().find(|s| s.name == "llm").unwrap();
    // Before: the llm step took 0.1 ms and the assembly the whole second.
    assert!(llm.ms >= 900.0, "the model step holds the wait: {llm:?}");
    assert!(t.timings_ms.assembly < 500.0, "the assembly is docdex's own work: {:?}", t.timings_ms);
    let steps: f64 = t.steps.iter().map(|s| s.ms).sum();
    assert!((t.timings_ms.total - steps).abs() < 300.0, "the steps add up to the total: {steps} vs {:?}", t.timings_ms);
    let dag = env.engine().dag_session(&repo, &resp.session_id).unwrap();
    let ask = dag.nodes.iter().find(|n| n.label.starts_with("ask ")).unwrap();
    assert!(ask.payload["window_lookup_ms"].as_f64().unwrap() >= 900.0, "{}", ask.payload);
}

#[test]
fn a_change_too_big_for_a_small_window_is_trimmed_not_dropped() {
    let c = Chat::new(FakeOllamaOptions::default(), "context_tokens = 1024\n");
    // Every tenth of 300 functions changes: 30 hunks, a patch of about 2,000 tokens.
    let body = |op: &str| {
        (0..300)
            .map(|i| format!("pub fn ttl_{i}(x: u64) -> u64 {{ x {} {i} }}\n", if i % 10 == 0 { op } else { "*" }))
            .collect::<String>()
    };
    write(&c.repo, "src/auth/ttl.rs", body("*"));
    git_commit_all(&c.repo);
    write(&c.repo, "src/auth/ttl.rs", body("+"));
    let req = ChatTurnRequest {
        query: "what changed in the session ttl?".into(),
        diff: Some(DiffRequest::default()),
        ..Default::default()
    };
    let resp = c.ask(&req);
    assert_eq!(resp.llm.status, AnswerStatus::Answered);
    // Before: the whole patch did not fit and went, leaving no diff at all.
    let diff: Vec<&str> = resp.sources.iter().filter(|s| s.slot == Slot::Diff).map(|s| s.citation.as_str()).collect();
    let cited = diff.iter().find(|c| c.starts_with("src/auth/ttl.rs:")).expect("the change is in the prompt");
    let drop = resp.trace.drops.iter().find(|d| d.source.starts_with("src/auth/ttl.rs")).expect("traced");
    assert!(drop.reason.starts_with(&format!("trimmed to {cited}")), "{drop:?}");
    // Whole hunks from the first, cited over the lines they cover.
    assert!(cited.starts_with("src/auth/ttl.rs:1-") && *cited != "src/auth/ttl.rs:1-300", "{cited}");
    let sys = system_text(&c.last_prompt());
    assert!(sys.contains("more diff lines not shown (the whole change does not fit"), "{sys}");
    assert!(sys.contains("+pub fn ttl_0(x: u64) -> u64 { x + 0 }"), "the first hunk is there:\n{sys}");
    let b = &resp.trace.budget;
    assert!(b.prompt_tokens + b.max_answer_tokens <= 1024, "{b:?}");
    // Timings are milliseconds to three places (a sum of two once printed 16.224999999999998).
    let timings = serde_json::to_string(&resp.trace.timings_ms).unwrap();
    assert!(!regex::Regex::new(r"\.\d{4,}").unwrap().is_match(&timings), "{timings}");
}

#[test]
fn a_diff_with_a_tracked_file_replaced_by_a_fifo_reviews_the_rest_and_names_it() {
    // git diff of the working tree stops at a FIFO ("unsupported file type", exit 128), which
    // failed the whole `chat --diff` turn.
    let c = Chat::new(FakeOllamaOptions::default(), "");
    write(&c.repo, "src/billing/pipe.rs", "pub fn pipe() {}\n");
    git_commit_all(&c.repo);
    write(&c.repo, "src/billing/invoice.rs", "/// Sums the line items of an invoice, with tax.\npub fn invoice_total(items: &[u64]) -> u64 {\n    items.iter().sum::<u64>() * 2\n}\n");
    std::fs::remove_file(c.repo.join("src/billing/pipe.rs")).unwrap();
    let made = Command::new("mkfifo").arg(c.repo.join("src/billing/pipe.rs")).status().expect("mkfifo");
    assert!(made.success());
    let req = ChatTurnRequest {
        query: "how are stale sessions expired?".into(),
        diff: Some(DiffRequest::default()),
        ..Default::default()
    };
    let resp = c.ask(&req);
    let sys = system_text(&c.last_prompt());
    assert!(sys.contains("### src/billing/invoice.rs:1-4 (modified)"), "the rest of the diff is reviewed:\n{sys}");
    assert!(!sys.contains("pipe.rs"), "{sys}");
    let note =
        resp.trace.notices.iter().find(|n| n.contains("FIFO")).unwrap_or_else(|| panic!("{:?}", resp.trace.notices));
    assert!(note.ends_with(": src/billing/pipe.rs"), "{note}");
}

/// Continuations of one session arriving together each get their own turn: the turn was read
/// in one statement and the request logged in another, so two chats could both read turn N and
/// both log it (the session then counted one request too few and `turn` repeated).
#[test]
fn concurrent_continuations_of_one_session_get_distinct_consecutive_turns() {
    let c = Chat::new(FakeOllamaOptions::default(), "");
    let first = c.ask(&q("how are stale sessions expired?"));
    // A long session (as one continued for weeks is): reading its turn takes a scan of its
    // nodes, long enough for the requests to read it at the same time.
    let dag_db = c.engine().resolve_repo(&c.repo).unwrap().state_dir.join("dag.db");
    let filled = rusqlite::Connection::open(&dag_db)
        .unwrap()
        .execute(
            "WITH RECURSIVE k(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM k WHERE x < 300000)
             INSERT INTO nodes (session_id, kind, label, payload, created_at) SELECT ?1, 'Thought', 'note', '{}', 0 FROM k",
            [&first.session_id],
        )
        .unwrap();
    assert_eq!(filled, 300_000);
    let n = 12;
    let barrier = std::sync::Barrier::new(n);
    let turns: Vec<u32> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let (c, barrier, id) = (&c, &barrier, first.session_id.clone());
                s.spawn(move || {
                    let engine = c.engine();
                    barrier.wait();
                    let req = ChatTurnRequest { session_id: Some(id), ..q(&format!("and who calls it, take {i}?")) };
                    engine.chat(&c.repo, &req, &mut |_| ControlFlow::Continue(())).expect("chat").turn
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut sorted = turns.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (2..=n as u32 + 1).collect::<Vec<_>>(), "each continuation its own turn: {turns:?}");
    let dag = c.engine().dag_session(&c.repo, &first.session_id).unwrap();
    assert_eq!(dag.session.turns, n as u32 + 1, "no request lost");
    let mut logged: Vec<u64> = dag
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::UserRequest)
        .map(|n| n.payload["turn"].as_u64().unwrap())
        .collect();
    logged.sort_unstable();
    // (The first turn is older than the view's newest 1,000 nodes.)
    assert_eq!(logged, (2..=n as u64 + 1).collect::<Vec<_>>(), "the logged turns are the answered ones");
}

/// tour 11 (M1): a hit whose chunk is one long line (an 88 KB one-line JSON file, the only
/// file holding the answer) was dropped whole ("needs 29626 tokens"): its snippet lines were
/// the same line. It now goes into the prompt as a bounded excerpt around the match.
#[test]
fn a_hit_on_a_very_long_line_goes_into_the_prompt_as_an_excerpt_around_the_match() {
    let c = Chat::new(FakeOllamaOptions::default(), "");
    let items: Vec<String> = (0..3000).map(|i| format!("{{\"id\": {i}, \"name\": \"n{i}\"}}")).collect();
    let json = format!("{{\"items\": [{}, {{\"secret_field\": \"persimmonword2\"}}]}}\n", items.join(","));
    write(&c.repo, "data.json", json);
    c.env.json(&["index", "--repo", c.r(), "--json"]);
    let resp = c.ask(&ChatTurnRequest { query: "which item has persimmonword2".into(), ..Default::default() });
    let source = resp.sources.iter().find(|s| s.path.as_deref() == Some("data.json")).expect("data.json is a source");
    assert_eq!((source.line_start, source.line_end), (Some(1), Some(1)));
    let sys = system_text(&c.last_prompt());
    let at = sys.find("### data.json:1-1 (an excerpt of a long line)").expect("the excerpt's heading");
    let excerpt = &sys[at..sys[at..].find("\n```\n").map_or(sys.len(), |e| at + e)];
    assert!(excerpt.contains("persimmonword2") && excerpt.len() < 1200, "{excerpt}");
    let drop = resp.trace.drops.iter().find(|d| d.source == "data.json:1-1").expect("the whole is traced");
    assert!(drop.reason.starts_with("trimmed to data.json:1-1"), "{drop:?}");
}
