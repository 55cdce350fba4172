//! The TUI's chat, waterfall-trace and DAG panes on the real waterfall: the app is driven with
//! keys, its requests run on the real engine (`worker::run_sync`) over an indexed fixture, and
//! the model is the fake Ollama over loopback HTTP, so the answer, the citations, the trace and
//! the logged DAG session are all the engine's own.

use crate::tui_support::{shows, snap, Harness};
use crate::util::llm_config;
use crossterm::event::KeyCode;
use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
use docdex::tui::event::{AppEvent, ChatUpdate, EngineEvent, ProviderState, Request};
use docdex::tui::panes::PaneId;
use docdex::tui::worker::run_sync;

/// An app on the indexed sample repository whose model server is `fake`.
fn harness(fake: &FakeOllama) -> Harness {
    Harness::with_config(&llm_config("ollama", &fake.url(), "fake-chat", "fake-embed")).started()
}

/// Sends the typed question and returns the chat request the app made.
fn ask(h: &mut Harness, question: &str) -> Request {
    h.typ(question);
    h.key(KeyCode::Enter);
    let reqs = h.requests();
    match reqs.as_slice() {
        [r @ Request::Chat { .. }] => r.clone(),
        other => panic!("expected one chat request: {other:?}"),
    }
}

/// Runs a request on the engine and feeds its events to the app; returns them.
fn run(h: &mut Harness, req: Request) -> Vec<EngineEvent> {
    let events = run_sync(&h.engine, req);
    for e in &events {
        h.app.handle(AppEvent::Engine(e.clone()));
    }
    events
}

/// Replaces what varies between runs of a real turn (timings, ids, clock times).
fn stable(screen: &str) -> String {
    let ms = regex::Regex::new(r"\b\d+(\.\d+)? (ms|s)\b").expect("regex");
    let uuid = regex::Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").expect("regex");
    let when = regex::Regex::new(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?( UTC)?").expect("regex");
    let epoch = regex::Regex::new(r"\b1\d{12}\b").expect("regex");
    let port = regex::Regex::new(r"127\.0\.0\.1:\d+").expect("regex");
    // Which of two pages waits for the per-domain delay depends on which is fetched first.
    let waited = regex::Regex::new(r" · waited \d+(\.\d+)? (ms|s)|; waited \d+ ms for rate limits").expect("regex");
    // A timing's (or port's) digits shift the padding up to the right border: on those lines
    // keep one space there.
    let padding = regex::Regex::new(r"[ ]+│$").expect("regex");
    let mut out = String::new();
    for line in screen.lines() {
        let timed = waited.replace_all(line, "");
        let timed = ms.replace_all(&timed, "N ms");
        let timed = port.replace_all(&timed, "127.0.0.1:PORT");
        let line = if timed != line { padding.replace(&timed, " │").into_owned() } else { line.to_string() };
        let line = uuid.replace_all(&line, "[UUID]");
        let line = when.replace_all(&line, "[TIME]");
        out.push_str(&epoch.replace_all(&line, "[EPOCH]"));
        out.push('\n');
    }
    out
}

fn snap_stable(h: &Harness, name: &str) {
    snap(&format!("{name}_80x24"), &stable(&h.screen(80, 24)));
    snap(&format!("{name}_120x40"), &stable(&h.screen(120, 40)));
}

#[test]
fn a_chat_turn_streams_cites_traces_and_logs_a_dag_session() {
    let fake = FakeOllama::start(FakeOllamaOptions::default()).expect("fake model server");
    let mut h = harness(&fake);
    assert!(shows(&h.screen(120, 40), "llm ✓ fake-chat"), "the status bar shows the provider check");
    h.alt('3');
    h.pump();
    let req = ask(&mut h, "where are stale sessions expired?");
    let Request::Chat { turn, repo, query, history, session_id } = &req else { unreachable!() };
    assert_eq!((*turn, repo, query.as_str()), (1, &h.repo, "where are stale sessions expired?"));
    assert!(history.is_empty() && session_id.is_none(), "{req:?}");

    let events = run(&mut h, req);
    // Steps and tokens stream before the end; the trace and the provider state come with it.
    let tokens = events.iter().filter(|e| matches!(e, EngineEvent::Chat(ChatUpdate::Token { .. }))).count();
    let first_token = events.iter().position(|e| matches!(e, EngineEvent::Chat(ChatUpdate::Token { .. })));
    let first_step = events.iter().position(|e| matches!(e, EngineEvent::Chat(ChatUpdate::Progress { .. })));
    assert!(tokens > 3, "the answer streams word by word: {events:?}");
    assert!(first_step < first_token, "retrieval steps are reported before the answer");
    assert!(matches!(events.last(), Some(EngineEvent::Chat(ChatUpdate::Done { turn: 1, unavailable: None, .. }))));
    assert!(events
        .iter()
        .any(|e| matches!(e, EngineEvent::Provider(p) if p.state == ProviderState::Ready && p.model == "fake-chat")));

    // The answer is the model's, and it cites the repository's code the waterfall retrieved.
    let s = h.screen(120, 40);
    assert!(shows(&s, "FAKE ANSWER to \"where are stale sessions expired?\""), "{s}");
    assert!(shows(&s, "[1] src/auth/session.rs:1-6"), "{s}");
    assert!(shows(&s, "src/auth/session.rs:1-6 [1]"), "the citation is marked where the answer names it: {s}");
    let prompt = fake.requests().into_iter().rfind(|(p, _)| p == "/api/chat").expect("a chat request").1;
    assert!(prompt["messages"][0]["content"].as_str().unwrap_or("").contains("SessionStore"), "{prompt}");
    let cell = h.app.chat().cells().last().expect("answer").clone();
    // The fake cites every source of its prompt, so every source is listed as cited.
    assert!(cell.citations.len() > 1 && cell.citations.iter().all(|c| c.cited), "{:?}", cell.citations);
    let session = h.app.chat().session_id().expect("the turn's DAG session").to_string();
    snap_stable(&h, "tui_chat_real_turn");

    // The app asked for the turn's DAG session; the DAG pane shows it.
    let reqs = h.requests();
    assert_eq!(reqs, vec![Request::LoadDag { repo: h.repo.clone(), session: Some(session.clone()) }]);
    for r in reqs {
        run(&mut h, r);
    }
    let dag = h.app.dag().view().expect("sessions").clone();
    assert_eq!(dag.sessions.len(), 1);
    assert_eq!(dag.sessions[0].id, session);
    assert!(dag.nodes.iter().any(|n| n.kind == "UserRequest" && n.label.contains("stale sessions")), "{dag:?}");
    assert!(dag.nodes.iter().any(|n| n.kind == "ToolCall"), "{dag:?}");
    assert!(dag.nodes.iter().skip(1).all(|n| !n.parents.is_empty()), "every node after the first follows another");

    // The trace pane shows this turn's real trace.
    h.alt('4');
    let traces = h.app.trace().traces();
    assert_eq!(traces.len(), 1);
    let names: Vec<&str> = traces[0].tiers.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"code_index") && names.contains(&"gate") && names.contains(&"llm"), "{names:?}");
    assert!(traces[0].budget.iter().any(|b| b.slot == "repo" && b.used > 0 && b.items > 0), "{traces:?}");
    let s = h.screen(120, 40);
    assert!(shows(&s, "Token budget") && shows(&s, "code_index") && shows(&s, "gate"), "{s}");
    assert!(shows(&s, "0.70 "), "the gate's threshold is drawn: {s}");
    assert!(shows(&s, "model fake-chat on ollama"), "{s}");
    snap_stable(&h, "tui_trace_real_turn");
    h.alt('5');
    h.pump();
    snap_stable(&h, "tui_dag_real_turn");
    h.key(KeyCode::Char('t'));
    assert!(shows(&h.screen(120, 40), "L1"), "layers: {}", h.screen(120, 40));

    // A follow-up continues the session, with the conversation as history.
    h.alt('3');
    let req = ask(&mut h, "and who calls it?");
    let Request::Chat { turn, history, session_id, .. } = &req else { unreachable!() };
    assert_eq!((*turn, session_id.as_deref()), (2, Some(session.as_str())));
    assert_eq!(history.len(), 2, "question and answer of turn 1: {history:?}");
    run(&mut h, req);
    h.pump();
    let dag = h.app.dag().view().expect("sessions");
    assert_eq!(dag.sessions.len(), 1, "still one session");
    assert_eq!(h.engine.dag_sessions(&h.repo).expect("sessions").sessions[0].turns, 2);
    assert_eq!(h.app.trace().traces().len(), 2);

    // Selecting the citation shows the cited lines in the search preview.
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char('n'));
    h.key(KeyCode::Char('o'));
    assert_eq!(h.app.focus(), PaneId::Search);
    let reqs = h.requests();
    assert!(
        reqs.iter().any(|r| matches!(r, Request::Preview { path, line: 1, .. } if path == "src/auth/session.rs")),
        "{reqs:?}"
    );

    // In a later run, the logged session can be continued from the DAG pane.
    let mut h = h.restart();
    h.alt('5');
    h.pump();
    assert_eq!(h.app.dag().session_id(), Some(session.as_str()));
    h.key(KeyCode::Enter);
    let reqs = h.requests();
    assert_eq!(reqs, vec![Request::LoadConversation { repo: h.repo.clone(), session: session.clone() }]);
    for r in reqs {
        run(&mut h, r);
    }
    assert_eq!(h.app.focus(), PaneId::Chat);
    assert_eq!(h.app.chat().session_id(), Some(session.as_str()));
    let texts: Vec<&str> = h.app.chat().cells().iter().map(|c| c.text.as_str()).collect();
    assert_eq!(texts.len(), 4, "{texts:?}");
    assert_eq!(texts[2], "and who calls it?");
    assert!(texts[3].starts_with("FAKE ANSWER to \"and who calls it?\""), "{texts:?}");
    h.pump();
    let req = ask(&mut h, "third question");
    let Request::Chat { session_id, history, .. } = &req else { unreachable!() };
    assert_eq!((session_id.as_deref(), history.len()), (Some(session.as_str()), 4));
}

#[test]
fn a_missing_model_still_lists_the_sources_and_updates_the_status_bar() {
    let fake = FakeOllama::start(FakeOllamaOptions { models: vec!["other:latest".into()], ..Default::default() })
        .expect("fake model server");
    let mut h = harness(&fake);
    assert!(shows(&h.screen(120, 40), "llm ✗ ollama"), "{}", h.screen(120, 40));
    h.alt('3');
    h.pump();
    let s = h.screen(120, 40);
    assert!(shows(&s, "fake-chat is not installed"), "{s}");
    // The engine's advice, true of the name: a name no registry is known to hold is created
    // from a Modelfile or pulled, and the installed models are named (not a bare `ollama pull`).
    assert!(shows(&s, "ollama create"), "{s}");
    let req = ask(&mut h, "where are stale sessions expired?");
    let events = run(&mut h, req);
    let Some(EngineEvent::Chat(ChatUpdate::Done { unavailable: Some(why), citations, .. })) = events.last() else {
        panic!("{events:?}")
    };
    assert!(why.contains("docdex llm-setup"), "the engine's own fix: {why}");
    assert!(!citations.is_empty() && citations.iter().all(|c| !c.cited));
    // The status bar is checked again, with the engine's reason.
    assert!(h.requests().contains(&Request::CheckProvider));
    h.pump();
    let s = h.screen(120, 40);
    assert!(shows(&s, "llm ✗ ollama"), "{s}");
    assert!(shows(&s, "No answer"), "{s}");
    assert!(shows(&s, "(in context)"), "{s}");
    // The trace of a turn without a model still explains retrieval.
    assert_eq!(h.app.trace().traces().len(), 1);
    assert!(h.app.trace().traces()[0].tiers.iter().any(|t| t.name == "llm" && !t.ran));
}

#[test]
fn an_unindexed_repository_fails_the_turn_in_the_pane() {
    let fake = FakeOllama::start(FakeOllamaOptions::default()).expect("fake model server");
    // Not started: the index run is never answered.
    let mut h = Harness::with_config(&llm_config("ollama", &fake.url(), "fake-chat", "fake-embed"));
    h.pump_except(|r| matches!(r, Request::Index { .. }));
    h.alt('3');
    h.pump();
    let req = ask(&mut h, "anything?");
    run(&mut h, req);
    let s = h.screen(120, 40);
    assert!(shows(&s, "This turn failed"), "{s}");
    assert!(!h.app.chat().streaming());
    // The app goes on: the next question can be asked.
    h.typ("again");
    h.key(KeyCode::Enter);
    assert!(matches!(h.requests().as_slice(), [Request::Chat { turn: 2, .. }]));
}

#[test]
fn the_trace_pane_follows_the_chat_turn_in_view() {
    let fake = FakeOllama::start(FakeOllamaOptions::default()).expect("fake model server");
    let mut h = harness(&fake);
    h.alt('3');
    h.pump();
    for q in ["where are stale sessions expired?", "how are invoices summed?"] {
        let req = ask(&mut h, q);
        run(&mut h, req);
        h.pump();
    }
    let shown = |h: &Harness| h.app.trace().shown().map(|t| (t.turn, t.question.clone()));
    assert_eq!(shown(&h), Some((2, "how are invoices summed?".into())), "the newest turn at first");

    // Scrolled to the top of a small screen, the chat shows turn 1: so does the trace pane.
    h.key(KeyCode::Esc);
    let _ = h.screen(80, 24);
    h.key(KeyCode::Home);
    assert_eq!(h.app.chat().selected_turn(), Some(1), "{}", h.screen(80, 24));
    assert_eq!(shown(&h).map(|s| s.0), Some(1));
    h.alt('4');
    assert!(shows(&h.screen(80, 24), "turn 1 of 2"), "{}", h.screen(80, 24));
    // `]` still browses, and keeps its choice while the chat does not move.
    h.key(KeyCode::Char(']'));
    assert_eq!(shown(&h).map(|s| s.0), Some(2));
    h.pump();
    assert_eq!(shown(&h).map(|s| s.0), Some(2));
    // Back at the bottom of the chat, the newest turn; a selected citation picks its turn.
    h.alt('3');
    h.key(KeyCode::Char('['));
    h.key(KeyCode::End);
    assert_eq!(shown(&h).map(|s| s.0), Some(2));
    h.key(KeyCode::Char('n'));
    assert_eq!(h.app.chat().selected_turn(), Some(1), "the first citation is in the first answer");
    assert_eq!(shown(&h).map(|s| s.0), Some(1));
    h.key(KeyCode::Char('p'));
    assert_eq!(h.app.chat().selected_turn(), Some(2), "backwards from the first wraps to the last answer");
    assert_eq!(shown(&h).map(|s| s.0), Some(2));

    // A new turn is followed once its trace arrives; until then the pane keeps what it shows.
    h.key(KeyCode::Char('n'));
    assert_eq!(shown(&h).map(|s| s.0), Some(1));
    h.key(KeyCode::Char('i'));
    let req = ask(&mut h, "who calls expire_stale_sessions?");
    assert_eq!(h.app.chat().selected_turn(), Some(3));
    assert_eq!(shown(&h).map(|s| s.0), Some(1), "no trace of turn 3 yet");
    run(&mut h, req);
    assert_eq!(shown(&h).map(|s| s.0), Some(3));
}

#[test]
fn a_turn_below_the_gate_shows_the_web_tier_in_the_trace_and_cites_its_pages() {
    use crate::web_support::{site, web_config, Fixture};
    let web = Fixture::start("127.0.0.1", site("http://127.0.0.2:9/secret".into()));
    let fake = FakeOllama::start(FakeOllamaOptions::default()).expect("fake model server");
    let config = format!(
        "{}{}",
        llm_config("ollama", &fake.url(), "fake-chat", "fake-embed"),
        web_config(&web.url("/html/"), "", "", "engine = \"http\"\n")
    );
    let mut h = Harness::with_config(&config).started();
    h.alt('3');
    h.pump();
    // Nothing in the sample repository is about widgets: the gate sends the turn to the web.
    let req = ask(&mut h, "how do I reset a widget knob");
    let events = run(&mut h, req);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, EngineEvent::Chat(ChatUpdate::Progress { text, .. }) if text.starts_with("web ran"))),
        "the web step is reported while the turn runs: {events:?}"
    );
    let Some(EngineEvent::Chat(ChatUpdate::Done { citations, .. })) = events.last() else { panic!("{events:?}") };
    let page = web.url("/doc/widgets");
    let k = citations
        .iter()
        .position(|c| c.url.as_deref() == Some(page.as_str()))
        .unwrap_or_else(|| panic!("the page is a citation: {citations:?}"));
    assert_eq!(citations[k].label(), page);

    // The chat lists the page under the answer by its address.
    let s = h.screen(120, 40);
    assert!(shows(&s, &format!("[{}] {page}", k + 1)), "{s}");
    // Opening it says where it is and how to read what the answer was given (it is not a file).
    h.key(KeyCode::Esc);
    for _ in 0..=k {
        h.key(KeyCode::Char('n'));
    }
    h.key(KeyCode::Char('o'));
    assert!(h.requests().iter().all(|r| !matches!(r, Request::Preview { .. })), "no file preview for a web page");
    assert_eq!(h.app.focus(), PaneId::Chat);
    let notice = h.app.notice().unwrap_or("").to_string();
    assert!(notice.starts_with(&format!("web source {page}")), "{notice:?} {}", h.screen(120, 40));

    // The waterfall pane shows the search, every page with how it came, and the timings.
    h.alt('4');
    let trace = h.app.trace().shown().expect("the turn's trace").clone();
    let run_ = trace.web.as_ref().expect("the web tier ran");
    assert!(run_.summary.starts_with("search \"how do I reset a widget knob\" · ok (primary)"), "{run_:?}");
    assert!(run_.pages.iter().any(|p| p.url == page && p.ok && p.outcome.starts_with("fetched · http")), "{run_:?}");
    let s = h.screen(120, 40);
    assert!(shows(&s, "Web") && shows(&s, "fetched · http · ") && shows(&s, &page), "{s}");
    // 120 columns only: at 80 the web step's detail wraps, and where depends on the digits of
    // the rate-limit wait.
    snap("tui_trace_web_turn_120x40", &stable(&h.screen(120, 40)));

    // Asked again, the pages come from the cache, and the pane says so.
    h.alt('3');
    h.key(KeyCode::Char('i'));
    let req = ask(&mut h, "how do I reset a widget knob");
    run(&mut h, req);
    let trace = h.app.trace().shown().expect("the second trace").clone();
    let run_ = trace.web.as_ref().expect("the web tier ran again");
    assert!(run_.summary.contains("ok (cache)"), "{run_:?}");
    assert!(run_.pages.iter().all(|p| p.outcome.starts_with("cached")), "{run_:?}");
}

#[test]
fn a_citation_jump_shows_the_cited_file_not_the_old_querys_hits() {
    // After `ctrl+o` on a chat citation the list still showed the old query's hits.
    let fake = FakeOllama::start(FakeOllamaOptions::default()).expect("fake model server");
    let mut h = harness(&fake);
    h.search("dashboard renderer");
    assert!(h.app.search().results().iter().any(|r| r.path == "web/app.ts"));
    // A further search is typed but its answer is still on the way when the jump happens.
    h.typ(" userName");
    h.wait(200);
    let late: Vec<Request> = h.requests();
    h.alt('3');
    h.pump();
    let req = ask(&mut h, "where are stale sessions expired?");
    run(&mut h, req);
    h.pump();
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char('n'));
    let cited = {
        let (ci, n) = h.app.chat().citation().expect("a citation is selected");
        h.app.chat().cells()[ci].citations[n - 1].clone()
    };
    h.ctrl('o');
    assert_eq!(h.app.focus(), PaneId::Search);
    h.pump();
    // The late answer of the old query arrives now: it must not replace the cited file.
    for r in late {
        run(&mut h, r);
    }
    let results = h.app.search().results();
    assert_eq!(results.len(), 1, "the list holds the cited file alone: {results:?}");
    assert_eq!((results[0].path.as_str(), results[0].line_start), (cited.path.as_str(), cited.line_start));
    assert_eq!(h.app.search().query(), cited.path, "the query box names the file");
    let s = h.screen(120, 40);
    assert!(shows(&s, "Cited file"), "{s}");
    assert!(!shows(&s, "web/app.ts"), "no stale hit: {s}");
    assert!(shows(&s, &format!("{}:{}", cited.path, cited.line_start)), "the preview shows the cited lines: {s}");
    // Typing replaces the selected path and searches again.
    h.typ("dashboard");
    h.wait(200);
    h.pump();
    assert_eq!(h.app.search().query(), "dashboard");
    assert!(h.app.search().results().iter().any(|r| r.path == "web/app.ts"));
}

#[test]
fn a_long_message_wraps_in_the_message_box_instead_of_scrolling_sideways() {
    let mut h = Harness::new().started();
    h.alt('3');
    let words: Vec<String> = (0..40).map(|i| format!("word{i:02}")).collect();
    h.typ(&words.join(" "));
    let s = h.screen(80, 24);
    // The first words are still on screen while the cursor is at the end, and the box grew.
    assert!(shows(&s, "word00 word01"), "{s}");
    assert!(shows(&s, "word39"), "{s}");
    let rows = s.lines().filter(|l| l.contains("word")).count();
    assert!(rows >= 3, "the text takes several rows: {s}");
}

/// A stopped answer, and one the model broke off, go back to the model marked as cut off, so
/// the next turn does not build on half an answer as if it were whole; a whole one unmarked.
#[test]
fn a_cut_off_answer_is_marked_so_in_the_next_turns_history() {
    let fake = FakeOllama::start(FakeOllamaOptions::default()).expect("fake model server");
    let mut h = harness(&fake);
    h.alt('3');
    h.pump();
    let token =
        |turn: u64, text: &str| AppEvent::Engine(EngineEvent::Chat(ChatUpdate::Token { turn, text: text.into() }));
    let done = |turn: u64, stopped: bool| {
        AppEvent::Engine(EngineEvent::Chat(ChatUpdate::Done {
            turn,
            session_id: Some("s1".into()),
            citations: Vec::new(),
            stopped,
            unavailable: None,
        }))
    };
    ask(&mut h, "first question");
    h.app.handle(token(1, "Half of an"));
    h.app.handle(done(1, true));
    h.requests(); // the DAG pane's reload
    ask(&mut h, "second question");
    h.app.handle(token(2, "A whole answer."));
    h.app.handle(done(2, false));
    h.requests();
    ask(&mut h, "third question");
    h.app.handle(token(3, "Broken"));
    h.app.handle(AppEvent::Engine(EngineEvent::Chat(ChatUpdate::Failed {
        turn: 3,
        session_id: Some("s1".into()),
        message: "the server broke off".into(),
    })));
    h.requests();
    let Request::Chat { history, .. } = ask(&mut h, "fourth question") else { unreachable!() };
    let texts: Vec<&str> = history.iter().map(|m| m.content.as_str()).collect();
    let cut = docdex::engine::protocol::CUT_OFF_MARK;
    assert_eq!(
        texts,
        [
            "first question",
            format!("Half of an{cut}").as_str(),
            "second question",
            "A whole answer.",
            "third question",
            format!("Broken{cut}").as_str()
        ],
        "{history:?}"
    );
}

/// A model server that cut the prompt short: the engine's notice arrives after the answer,
/// so it only flashed as a progress line; it now stays under the answer as a note.
#[test]
fn a_prompt_the_server_cut_short_stays_noted_under_the_answer() {
    let fake = FakeOllama::start(FakeOllamaOptions { prompt_tokens_seen: Some(300), ..Default::default() })
        .expect("fake model server");
    let mut h = harness(&fake);
    h.alt('3');
    h.pump();
    // A question long enough (over 1,024 tokens) for the cut to be checked.
    let question =
        format!("where are stale sessions expired? {}", "Explain the session store and its expiry. ".repeat(130));
    let req = ask(&mut h, &question);
    let events = run(&mut h, req);
    let notice = events.iter().position(
        |e| matches!(e, EngineEvent::Chat(ChatUpdate::Notice { text, .. }) if text.contains("saw only 300 of the")),
    );
    let token = events.iter().position(|e| matches!(e, EngineEvent::Chat(ChatUpdate::Token { .. })));
    assert!(notice.is_some() && token < notice, "the cut is noticed after the answer began: {events:?}");
    h.pump();
    let s = h.screen(120, 40);
    assert!(shows(&s, "Note: the model saw only 300 of the"), "{s}");
}

/// The waterfall pane's profile line said "17 preferences of tara + team recalled" when the
/// slot's 1,000 tokens held a few of them (the rest listed as drops below it); it now says
/// how many were used and how many dropped.
#[test]
fn the_trace_pane_says_how_many_recalled_preferences_the_prompt_used() {
    use docdex::engine::protocol::Category;
    let fake = FakeOllama::start(FakeOllamaOptions::default()).expect("fake model server");
    let config = format!(
        "{}\n[memory.profile]\ndefault_agent = \"tara\"\n",
        llm_config("ollama", &fake.url(), "fake-chat", "fake-embed")
    );
    let mut h = Harness::with_config(&config).started();
    let topics = [
        "session expiry",
        "database migrations",
        "css layout",
        "error messages",
        "logging",
        "retries",
        "feature flags",
        "caching",
        "dates",
        "timeouts",
        "api versions",
        "dependencies",
    ];
    for (i, topic) in topics.iter().enumerate() {
        let text = format!(
            "When changing {topic}, write the failing test first, keep the change to one concern, name every new function after what it does rather than how, log the decision with its reason, and leave the surrounding code as tidy as you found it, including its comments and its error messages (rule {i})"
        );
        crate::profiles::add(&h.engine, "tara", Category::Style, &text);
    }
    h.alt('3');
    h.pump();
    let req = ask(&mut h, "where are stale sessions expired?");
    run(&mut h, req);
    h.alt('4');
    let trace = h.app.trace().shown().expect("the turn's trace").clone();
    let profile = trace.tiers.iter().find(|t| t.name == "profile").expect("the profile step");
    let kept = trace.budget.iter().find(|b| b.slot == "profile").expect("the profile slot");
    assert!(kept.dropped > 0 && kept.items > 0, "{kept:?}");
    assert!(
        profile.outcome.starts_with(&format!(
            "{} of {} preferences of tara + team used (recalled by meaning)",
            kept.items,
            kept.items + kept.dropped
        )),
        "{profile:?}"
    );
    let ids = regex::Regex::new(r"profile:[0-9a-f]{8}").expect("regex");
    let screen = |w, rows| ids.replace_all(&stable(&h.screen(w, rows)), "profile:[ID]    ").into_owned();
    snap("tui_trace_profile_turn_120x40", &screen(120, 40));
    snap("tui_trace_profile_turn_80x24", &screen(80, 24));
}

/// A second repository, `other` (one Rust file), indexed by the workbench: its root.
fn index_other_repo(h: &mut Harness) -> std::path::PathBuf {
    let other = h.env.repo("other");
    crate::util::write(&other, "lib.rs", "pub fn wombat_counter() {}\n");
    let other = std::fs::canonicalize(&other).expect("canonical");
    run(h, Request::Index { repo: other.clone(), rebuild: false });
    other
}

/// tour18 F1: after `enter` on another repository in the Repos pane, the chat kept the old
/// repository's conversation, a follow-up continued its DAG session (logged in both
/// repositories) with its answers as history, and `o` on its citations looked the paths up in
/// the new repository ("no such file"). A conversation now belongs to its repository.
#[test]
fn a_conversation_stays_with_its_repository_when_the_workbench_switches() {
    let fake = FakeOllama::start(FakeOllamaOptions::default()).expect("fake model server");
    let mut h = harness(&fake);
    let other = index_other_repo(&mut h);
    h.alt('3');
    h.pump();
    let req = ask(&mut h, "where are stale sessions expired?");
    run(&mut h, req);
    h.pump();
    let first = h.app.chat().session_id().expect("a logged session").to_string();
    // Switch to the other repository the way a person does: Repos pane, down, enter.
    h.alt('1');
    h.pump();
    h.key(KeyCode::Down);
    h.key(KeyCode::Enter);
    h.pump();
    assert_eq!(h.app.repo(), other.as_path());
    h.alt('3');
    let s = h.screen(120, 40);
    assert!(shows(&s, "Ask in plain language about other"), "a conversation about the new repository: {s}");
    assert!(!shows(&s, "FAKE ANSWER"), "{s}");
    let req = ask(&mut h, "what counts wombats?");
    let Request::Chat { repo, history, session_id, .. } = &req else { unreachable!() };
    assert_eq!(repo, &other);
    assert!(history.is_empty(), "the other repository's turn is no history here: {history:?}");
    assert_ne!(session_id.as_deref(), Some(first.as_str()), "its session is not continued here");
    run(&mut h, req);
    h.pump();
    // The first conversation is still there, and says which repository it is about.
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char('['));
    let s = h.screen(120, 40);
    assert!(shows(&s, "Chat · about fixture · session 1 of 2 · 1 turn"), "{s}");
    // Its citations are the fixture's files: they are not looked up in "other".
    h.key(KeyCode::Char('n'));
    h.key(KeyCode::Char('o'));
    assert_eq!(h.app.focus(), PaneId::Chat, "no jump to a file of another repository");
    assert!(shows(&h.screen(120, 40), "this conversation is about"), "{}", h.screen(120, 40));
    // Asking there starts a conversation about the current repository, and says so.
    h.key(KeyCode::Char('i'));
    let Request::Chat { repo, history, session_id, .. } = ask(&mut h, "and sessions?") else { unreachable!() };
    assert_eq!((repo, history.len(), session_id), (other, 0, None));
    let s = h.screen(120, 40);
    assert!(shows(&s, "asked in a new conversation about other"), "{s}");
    assert!(shows(&s, "Chat · session 3 of 3 · 1 turn"), "{s}");
}

/// A switch while an answer streams: the answer goes on into its own conversation, and the new
/// repository's empty conversation shows its introduction (it was blank while the other
/// repository's answer streamed out of view).
#[test]
fn an_answer_streaming_when_the_repository_switches_lands_in_its_own_conversation() {
    let fake = FakeOllama::start(FakeOllamaOptions::default()).expect("fake model server");
    let mut h = harness(&fake);
    index_other_repo(&mut h);
    h.alt('3');
    h.pump();
    ask(&mut h, "where are stale sessions expired?");
    let token = |text: &str| AppEvent::Engine(EngineEvent::Chat(ChatUpdate::Token { turn: 1, text: text.into() }));
    h.app.handle(token("Sessions expire in "));
    h.alt('1');
    h.pump();
    h.key(KeyCode::Down);
    h.key(KeyCode::Enter);
    h.pump();
    h.alt('3');
    let s = h.screen(120, 40);
    assert!(shows(&s, "Ask in plain language about other"), "the new conversation's introduction: {s}");
    assert!(!shows(&s, "Sessions expire in"), "{s}");
    h.app.handle(token("SessionStore.expire."));
    h.app.handle(AppEvent::Engine(EngineEvent::Chat(ChatUpdate::Done {
        turn: 1,
        session_id: Some("s1".into()),
        citations: Vec::new(),
        stopped: false,
        unavailable: None,
    })));
    assert!(h.app.chat().cells().is_empty(), "nothing landed in the other repository's conversation");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char('['));
    let s = h.screen(120, 40);
    assert!(shows(&s, "Chat · about fixture · session 1 of 2 · 1 turn"), "{s}");
    assert!(shows(&s, "Sessions expire in SessionStore.expire."), "the whole answer, in its conversation: {s}");
}
