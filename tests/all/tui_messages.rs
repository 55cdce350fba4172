//! Messages you can read (issue 20): a notice that does not fit the status bar gets its own
//! line, every notice goes to the message log (a key opens it), first launch on an unindexed
//! repository says one true thing, and `indexing <repo>` does not outlive the run.

use crate::tui_support::{shows, Harness};
use crossterm::event::KeyCode;
use docdex::tui::event::{EngineEvent, Request};

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
