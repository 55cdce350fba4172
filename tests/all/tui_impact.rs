//! The Impact pane: it follows the workbench's own index run (asks again when it ends, says
//! what is happening while it runs), keeps its key to the marks under the risk overlay's
//! wrapped line, and wraps its empty state on a small terminal.

use crate::tui_support::{shows, snap, Harness};
use crossterm::event::KeyCode;
use docdex::engine::protocol::IndexSummary;
use docdex::testing::tui_samples;
use docdex::tui::event::{EngineEvent, Request};

/// The screen's rows inside the frame, joined with spaces (wrapped text reads whole).
fn joined(screen: &str) -> String {
    screen.lines().map(|l| l.trim_matches(['│', ' '])).collect::<Vec<_>>().join(" ")
}

fn impact_seqs(reqs: &[Request]) -> Vec<u64> {
    reqs.iter().filter_map(|r| if let Request::Impact { seq, .. } = r { Some(*seq) } else { None }).collect()
}

const NOT_PARSED: &str = "src/auth/session.rs is not in the impact graph of /r (0 code files): it is indexed as text but not parsed yet (the first index stopped before parsing it, or is parsing now); `docdex index --repo /r` parses it";

#[test]
fn the_impact_pane_asks_again_when_the_workbenchs_index_run_ends() {
    let mut h = Harness::new().started();
    h.search("session");
    h.ctrl('g');
    let seq = *impact_seqs(&h.requests()).last().expect("impact asked for");
    let repo = h.repo.clone();
    h.engine_event(EngineEvent::IndexStarted { repo: repo.clone() });
    h.engine_event(EngineEvent::Impact { seq, result: Err(NOT_PARSED.into()) });
    // While this workbench indexes, `docdex index` would collide with its run: say what happens.
    let s = joined(&h.screen(80, 24));
    assert!(s.contains("being parsed now; the graph appears when the run ends"), "{s}");
    assert!(!s.contains("docdex index --repo"), "{s}");
    // Switching panes does not matter: the run's end asks again, and the graph replaces the error.
    h.alt('2');
    h.engine_event(EngineEvent::IndexFinished { repo, result: Ok(IndexSummary::default()) });
    let again = impact_seqs(&h.requests());
    assert_eq!(again.len(), 1, "the graph is asked for again when the run ends");
    h.alt('6');
    h.engine_event(EngineEvent::Impact { seq: again[0], result: Ok(tui_samples::small_graph()) });
    let s = h.screen(80, 24);
    assert!(h.app.impact().model().is_some() && !shows(&s, "not parsed yet"), "{s}");
}

#[test]
fn without_a_run_of_its_own_the_engines_advice_stays_and_other_repositories_runs_ask_nothing() {
    let mut h = Harness::new().started();
    h.search("session");
    h.ctrl('g');
    let seq = *impact_seqs(&h.requests()).last().expect("impact asked for");
    h.engine_event(EngineEvent::Impact { seq, result: Err(NOT_PARSED.into()) });
    let s = joined(&h.screen(80, 24));
    assert!(s.contains("`docdex index --repo /r` parses it"), "{s}");
    h.engine_event(EngineEvent::IndexStarted { repo: "/elsewhere".into() });
    h.engine_event(EngineEvent::IndexFinished { repo: "/elsewhere".into(), result: Ok(IndexSummary::default()) });
    assert!(impact_seqs(&h.requests()).is_empty(), "another repository's run asks nothing");
    // A failed run of this repository leaves the answer as it is.
    let repo = h.repo.clone();
    h.engine_event(EngineEvent::IndexFinished { repo, result: Err("disk full".into()) });
    assert!(impact_seqs(&h.requests()).is_empty());
}

#[test]
fn a_reload_when_the_run_ends_keeps_the_selected_node() {
    let mut h = Harness::with("").started();
    h.search("session");
    h.ctrl('g');
    h.answer_impact(tui_samples::small_graph());
    h.key(KeyCode::Right);
    let selected = |h: &Harness| {
        let m = h.app.impact().model().expect("graph");
        m.view.nodes[h.app.impact().cursor().node(m).expect("selection")].id.clone()
    };
    let before = selected(&h);
    assert_ne!(before, "src/auth/session.rs", "moved off the centre");
    let repo = h.repo.clone();
    h.engine_event(EngineEvent::IndexFinished { repo, result: Ok(IndexSummary::default()) });
    h.answer_impact(tui_samples::small_graph());
    assert_eq!(selected(&h), before);
}

#[test]
fn the_risk_line_wraps_above_the_key_to_the_marks() {
    let mut h = Harness::with("").started();
    h.search("session");
    h.ctrl('g');
    h.answer_impact(tui_samples::ruled_graph());
    let screen = h.screen(80, 24);
    let s = joined(&screen);
    assert!(
        s.contains("on the import cycle src/auth/session.rs -> src/auth/store.rs -> src/auth/session.rs (mcoda_backend: \"Avoid circular dependencies\")"),
        "the cycle it promises shows whole:\n{screen}"
    );
    let key = screen.lines().rev().nth(2).unwrap_or_default();
    assert!(key.contains("─▶ imports") && key.contains("▸ folder"), "the key stays on the bottom row:\n{screen}");
}

#[test]
fn the_empty_impact_pane_wraps_so_its_key_shows_at_40x10() {
    let mut h = Harness::new().started();
    h.alt('6');
    let screen = h.screen(40, 10);
    let s = joined(&screen);
    assert!(s.contains("press ctrl+g to see its imports"), "{screen}");
    snap("tui_impact_empty_40x10", &screen);
}
