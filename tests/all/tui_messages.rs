//! Messages you can read (issue 20): a notice that does not fit the status bar gets its own
//! line, every notice goes to the message log (a key opens it), first launch on an unindexed
//! repository says one true thing, and `indexing <repo>` does not outlive the run.

use crate::tui_support::{shows, Harness};
use crossterm::event::KeyCode;
use docdex::testing::tui_samples;
use docdex::tui::event::{ChatUpdate, EngineEvent, ProviderState, ProviderStatus, Request};

const EDITOR_ERROR: &str = "cannot run \"nonexistent-editor-xyz\": No such file or directory (os error 2). \
Set [tui] editor in config.toml or $EDITOR";

#[test]
fn a_long_message_gets_its_own_line_at_80_and_at_140_columns() {
    let mut h = Harness::new().started();
    h.app.editor_finished(Err(EDITOR_ERROR.into()));
    // 140x45: the whole message, on the line above the status bar.
    let s = h.screen(140, 45);
    let lines: Vec<&str> = s.lines().collect();
    assert!(lines[lines.len() - 2].contains(EDITOR_ERROR), "{s}");
    // 80x24: wrapped over two lines above the status bar, nothing lost.
    let s = h.screen(80, 24);
    let lines: Vec<&str> = s.lines().collect();
    let joined = format!("{} {}", lines[lines.len() - 3].trim(), lines[lines.len() - 2].trim());
    assert!(joined.contains("cannot run \"nonexistent-editor-xyz\"") && joined.contains("$EDITOR"), "{s}");
    h.snap_both("tui_message_long");
}

#[test]
fn the_message_log_keeps_every_message_and_opens_on_a_key() {
    let mut h = Harness::new().started();
    h.app.editor_finished(Err(EDITOR_ERROR.into()));
    h.app.editor_finished(Ok("edited src/auth/session.rs:2".into()));
    // alt+m works from the query box (insert mode).
    h.alt('m');
    assert!(h.app.messages_open());
    let s = h.screen(120, 40);
    assert!(shows(&s, "Messages"), "{s}");
    assert!(s.contains("nonexistent-editor-xyz") && s.contains("edited src/auth/session.rs:2"), "{s}");
    assert!(shows(&s, "indexed 5 files"), "start-up messages are kept too: {s}");
    h.snap_both("tui_message_log");
    h.key(KeyCode::Esc);
    assert!(!h.app.messages_open());
    let texts: Vec<&str> = h.app.messages().iter().map(|m| m.text.as_str()).collect();
    assert!(texts.contains(&EDITOR_ERROR), "{texts:?}");
}

#[test]
fn first_launch_while_indexing_says_one_true_thing() {
    let mut h = Harness::new();
    h.pump_except(|r| matches!(r, Request::Index { .. }));
    h.engine_event(EngineEvent::IndexStarted { repo: h.repo.clone() });
    h.search("session");
    let s = h.screen(120, 40);
    assert!(shows(&s, "Indexing is running; results fill in as it"), "{s}");
    assert!(!shows(&s, "not indexed yet"), "no second, contradicting message: {s}");
    assert!(!shows(&s, "0 hits") && !shows(&s, "confidence 0.00"), "no count before there is an index: {s}");
}

#[test]
fn no_hits_while_indexing_is_not_reported_as_a_count_and_confidence() {
    let mut h = Harness::new().started();
    h.engine_event(EngineEvent::IndexStarted { repo: h.repo.clone() });
    h.search("zyzzyva quokka");
    let s = h.screen(120, 40);
    assert!(shows(&s, "Results · indexing"), "{s}");
    assert!(!shows(&s, "0 hits") && !shows(&s, "confidence 0.00"), "{s}");
    let summary = docdex::engine::protocol::IndexSummary::default();
    h.engine_event(EngineEvent::IndexFinished { repo: h.repo.clone(), result: Ok(summary) });
    h.pump();
    let s = h.screen(120, 40);
    assert!(shows(&s, "0 hits"), "after the run a miss is a miss: {s}");
}

#[test]
fn the_indexing_notice_of_an_added_repository_ends_with_the_run() {
    let mut h = Harness::new().started();
    let other = h.env.repo("other");
    crate::util::sample_repo(&other);
    let other = std::fs::canonicalize(&other).expect("canonical");
    h.alt('1');
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char('a'));
    h.typ(&other.display().to_string());
    h.key(KeyCode::Enter);
    assert!(h.app.notice().unwrap_or_default().starts_with("indexing "), "{:?}", h.app.notice());
    h.pump();
    let notice = h.app.notice().unwrap_or_default().to_string();
    assert!(!notice.starts_with("indexing "), "{notice}");
    assert!(notice.contains("other") && notice.contains("ready"), "{notice}");
}

#[test]
fn typing_letters_that_are_no_keys_does_not_flood_the_log_and_repeats_are_counted() {
    let mut h = Harness::new().started();
    let before = h.app.messages().len();
    h.alt('5');
    h.key(KeyCode::Esc);
    for c in "hazy".chars() {
        h.key(KeyCode::Char(c));
    }
    assert!(h.app.notice().unwrap_or_default().contains("is not a key in DAG"), "{:?}", h.app.notice());
    assert_eq!(h.app.messages().len(), before, "key hints show but are not logged");
    h.app.editor_finished(Err(EDITOR_ERROR.into()));
    h.app.editor_finished(Err(EDITOR_ERROR.into()));
    let last = h.app.messages().last().expect("a message");
    assert_eq!((last.text.as_str(), last.repeats), (EDITOR_ERROR, 2));
}

/// The text inside the pane's borders, row after row joined with spaces (wrapped lines read on).
fn pane_text(screen: &str) -> String {
    let rows: Vec<String> = screen.lines().map(|l| l.trim_matches(['│', ' ']).to_string()).collect();
    rows.join(" ")
}

#[test]
fn trace_lines_wrap_at_80_columns_and_keep_the_reason_whole() {
    // At 80x24 a tier's reason used to shrink to `(libr`.
    let mut h = Harness::new().started();
    h.alt('4');
    let mut trace = tui_samples::trace();
    let reason = "absent: no libs index for this repository (`docdex libs fetch --repo /home/me/src/celery` builds it)";
    trace.tiers[1].outcome = reason.into();
    h.engine_event(EngineEvent::Trace(trace));
    for (w, hh) in [(80, 24), (140, 45)] {
        let s = h.screen(w, hh);
        assert!(pane_text(&s).contains(reason), "{w}x{hh}: the whole reason, wrapped:\n{s}");
        assert!(s.lines().all(|l| crate::tui_support::unicode_width(l) <= w as usize), "{s}");
    }
}

#[test]
fn chat_answers_use_the_whole_pane_width_at_140_columns() {
    // The chat used to wrap at ~100 columns even at 140.
    let mut h = Harness::with("").started();
    h.engine_event(EngineEvent::Provider(ProviderStatus {
        provider: "ollama".into(),
        model: "phi3.5:3.8b".into(),
        state: ProviderState::Ready,
    }));
    h.alt('3');
    h.typ("how does a task retry?");
    h.key(KeyCode::Enter);
    let turn = match h.requests().as_slice() {
        [Request::Chat { turn, .. }] => *turn,
        other => panic!("{other:?}"),
    };
    let answer = "A task retries through its retry method, which raises an exception after scheduling a new \
message with the same id and an increased retry count; the countdown comes from the default delay unless \
the caller passes one, and the maximum number of retries ends it.";
    h.engine_event(EngineEvent::Chat(ChatUpdate::Token { turn, text: format!("{answer}\n") }));
    h.engine_event(EngineEvent::Chat(ChatUpdate::Done {
        turn,
        session_id: Some("s-1".into()),
        citations: Vec::new(),
        stopped: false,
        unavailable: None,
    }));
    let s = h.screen(140, 45);
    assert!(pane_text(&s).contains(answer), "{s}");
    let widest = s
        .lines()
        .filter(|l| l.contains("retr") || l.contains("countdown"))
        .map(|l| crate::tui_support::unicode_width(l.trim_end_matches(['│', ' '])))
        .max()
        .unwrap_or(0);
    assert!(widest > 125, "rows of the answer fill the 140-column pane ({widest}):\n{s}");
}

/// tour12 F7: right after an export's long notice, the Import prompt's field and the Add
/// form's keys stay on screen (the notice took the prompt's one row, so the path was typed blind).
#[test]
fn a_status_notice_leaves_an_open_prompts_field_and_keys_visible() {
    let mut h = Harness::new().started();
    h.alt('7');
    h.pump();
    h.key(KeyCode::Char('X'));
    h.pump();
    let notice = h.app.notice().expect("notice").to_string();
    assert!(notice.contains("exported"), "{notice}");
    h.key(KeyCode::Char('I'));
    h.typ("/tmp/typed_path.json");
    let s = h.screen(80, 24);
    assert!(shows(&s, "› /tmp/typed_path.json"), "{s}");
    assert!(shows(&s, "exported"), "the notice is still said: {s}");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char('X'));
    h.pump();
    h.key(KeyCode::Right);
    h.key(KeyCode::Char('a'));
    let s = h.screen(80, 24);
    assert!(shows(&s, "enter save · esc cancel"), "{s}");
    assert!(shows(&s, "exported"), "{s}");
}
