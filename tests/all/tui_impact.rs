//! The Impact pane: it follows the workbench's own index run (asks again when it ends, says
//! what is happening while it runs, apart from a real error), the watcher's batches and other
//! processes' runs (asks again, or when shown), keeps its key to the marks under the risk overlay's
//! wrapped line, and wraps its empty state on a small terminal.

use crate::tui_support::{shows, snap, text, Harness};
use crossterm::event::KeyCode;
use docdex::engine::protocol::{IndexSummary, RepoOverview, RepoState};
use docdex::testing::tui_samples;
use docdex::tui::event::{EngineEvent, Request, WatchActivity};
use docdex::tui::theme::Slot;

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
    assert!(
        s.contains("Parsing now: src/auth/session.rs is not in the impact graph until this workbench's index run ends"),
        "{s}"
    );
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
    assert!(key.contains("─▶ imports") && key.contains("✖ import rule"), "the key stays on the bottom row:\n{screen}");
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

/// The style of the cell where `needle` starts on the screen.
fn style_at(buf: &ratatui::buffer::Buffer, needle: &str) -> ratatui::style::Style {
    let screen = text(buf);
    let (row, line) = screen.lines().enumerate().find(|(_, l)| l.contains(needle)).expect("shown");
    let col = line[..line.find(needle).unwrap_or(0)].chars().count();
    buf[(col as u16, row as u16)].style()
}

fn dark() -> docdex::tui::theme::Theme {
    docdex::tui::theme::Theme::embedded("dark", false).expect("dark").expect("parses")
}

#[test]
fn a_wait_for_the_run_reads_as_in_progress_and_an_error_as_an_error() {
    let mut h = Harness::new().started();
    h.search("session");
    h.ctrl('g');
    let seq = *impact_seqs(&h.requests()).last().expect("impact asked for");
    let repo = h.repo.clone();
    h.engine_event(EngineEvent::IndexStarted { repo: repo.clone() });
    h.engine_event(EngineEvent::Impact { seq, result: Err(NOT_PARSED.into()) });
    let buf = h.buffer(80, 24);
    let s = joined(&text(&buf));
    // Not the engine's wording (it starts the same: "... is not in the impact graph"), and
    // not in the error colour: the user waits, nothing is broken.
    assert!(s.contains("Parsing now: src/auth/session.rs is not in the impact graph until this workbench's index run ends. The graph shows here by itself then; nothing to do meanwhile."), "{s}");
    assert!(!s.contains("Cannot draw"), "{s}");
    let error = dark().style(Slot::Error);
    assert_ne!(style_at(&buf, "Parsing now").fg, error.fg, "a wait is not drawn as an error");
    // After the run, an answer that still sends the user to `docdex index` is an error, and
    // reads as one: in the error colour, with what to do.
    // (The fixture's 5 files, none changed: a run of no file says so in the status bar.)
    let ended = IndexSummary { files: 5, ..Default::default() };
    h.engine_event(EngineEvent::IndexFinished { repo, result: Ok(ended) });
    let seq = *impact_seqs(&h.requests()).last().expect("asked again");
    h.engine_event(EngineEvent::Impact { seq, result: Err(NOT_PARSED.into()) });
    let buf = h.buffer(80, 24);
    let s = joined(&text(&buf));
    assert!(s.contains("Cannot draw the graph: src/auth/session.rs is not in the impact graph"), "{s}");
    assert!(
        s.contains("`docdex index --repo /r` parses it. The pane asks again by itself once the index changes."),
        "{s}"
    );
    assert_eq!(style_at(&buf, "Cannot draw").fg, error.fg);
    snap("tui_impact_error_80x24", &text(&buf));
}

#[test]
fn another_writers_run_is_waited_for_and_its_end_asks_again() {
    let mut h = Harness::new().started();
    h.search("session");
    h.ctrl('g');
    let seq = *impact_seqs(&h.requests()).last().expect("impact asked for");
    let current = h.engine.repo_overview(&h.repo).expect("overview");
    // Another process (`docdex index` in another terminal) is writing the index.
    let running = RepoOverview { state: RepoState::Updating, writer_pid: Some(4242), ..current.clone() };
    h.engine_event(EngineEvent::Repos(Ok(vec![running])));
    assert!(impact_seqs(&h.requests()).is_empty(), "nothing asked while it runs");
    h.engine_event(EngineEvent::Impact { seq, result: Err(NOT_PARSED.into()) });
    let s = joined(&h.screen(80, 24));
    assert!(
        s.contains(
            "Parsing now: src/auth/session.rs is not in the impact graph until the index run of process 4242 ends"
        ),
        "{s}"
    );
    // Its run ends: the overview says so, and the pane asks again without a key.
    let done = RepoOverview { last_indexed_ms: Some(current.last_indexed_ms.unwrap_or(0) + 1), ..current };
    h.engine_event(EngineEvent::Repos(Ok(vec![done])));
    assert_eq!(impact_seqs(&h.requests()).len(), 1, "asked again when the other run ended");
}

#[test]
fn an_index_run_of_another_process_shows_in_the_pane_without_a_key() {
    let mut h = Harness::on_fixture("python").started();
    h.search("pricing");
    let idx =
        h.app.search().results().iter().position(|r| r.path == "src/inventory/pricing.py").expect("pricing.py hit");
    for _ in 0..idx {
        h.key(KeyCode::Down);
    }
    h.pump();
    h.ctrl('g');
    h.pump();
    let importers = |h: &Harness| -> Vec<String> {
        let m = h.app.impact().model().expect("a graph from Engine::impact");
        m.view.nodes.iter().map(|n| n.id.clone()).collect()
    };
    assert!(!importers(&h).iter().any(|n| n.ends_with("discounts.py")));
    // `docdex index` in another terminal indexes a new importer of pricing.py.
    std::fs::write(h.repo.join("src/inventory/discounts.py"), "from .pricing import price_with_tax\n").expect("write");
    let out = h.env.run(&["index", "--repo", &h.repo.display().to_string()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // No key: the workbench's poll of the repository (every 2 s) notices, and the pane asks again.
    h.wait(2_100);
    h.pump();
    assert!(importers(&h).iter().any(|n| n == "src/inventory/discounts.py"), "{:?}", importers(&h));
    assert!(shows(&h.screen(120, 40), "discounts.py"), "{}", h.screen(120, 40));
}

#[test]
fn a_watcher_batch_asks_again_when_shown_and_a_hidden_pane_when_it_is_shown() {
    let mut h = Harness::new().started();
    h.search("session");
    h.ctrl('g');
    h.answer_impact(tui_samples::small_graph());
    let repo = h.repo.clone();
    let applied = |repo: &std::path::PathBuf| EngineEvent::Watch {
        repo: repo.clone(),
        activity: WatchActivity::Applied { paths: vec!["src/auth/store.rs".into()] },
    };
    h.engine_event(applied(&repo));
    let asked = impact_seqs(&h.requests());
    assert_eq!(asked.len(), 1, "the shown pane asks again after the watcher's batch");
    h.engine_event(EngineEvent::Impact { seq: asked[0], result: Ok(tui_samples::small_graph()) });
    // Another repository's batch asks nothing; a hidden pane only marks itself stale.
    h.engine_event(applied(&"/elsewhere".into()));
    h.alt('2');
    h.engine_event(applied(&repo));
    assert!(impact_seqs(&h.requests()).is_empty(), "nothing asked while hidden");
    h.alt('6');
    assert_eq!(impact_seqs(&h.requests()).len(), 1, "asked once when shown again");
    h.alt('2');
    h.alt('6');
    assert!(impact_seqs(&h.requests()).is_empty(), "not stale any more");
}

/// The diagram's rows and the key's rows of a screen: between the title and the selected node's
/// line, and from the row after it to the bottom border, less the risk line.
fn diagram_and_key(screen: &str) -> (String, String) {
    let rows: Vec<&str> = screen.lines().collect();
    let node = rows.iter().rposition(|r| r.contains("▶ src/auth/session.rs")).expect("the node's line");
    let key: Vec<&str> = rows[node + 1..rows.len() - 2].iter().copied().filter(|r| !r.starts_with("│risk:")).collect();
    (rows[2..node].join(" "), key.join(" "))
}

/// Below 16 rows of pane the risk overlay still says what it marks: the risk line, cut to one
/// row, above the key (it was left out, so a small terminal showed `⊘` with no word of the rule
/// it breaks); with the overlay off the row goes back to the diagram.
#[test]
fn a_small_terminal_keeps_the_risk_line() {
    let mut h = Harness::with("").started();
    h.search("session");
    h.ctrl('g');
    h.answer_impact(tui_samples::ruled_graph());
    for (w, hgt) in [(80, 19), (60, 16), (50, 12), (40, 10)] {
        let screen = h.screen(w, hgt);
        let rows: Vec<&str> = screen.lines().collect();
        let risk = rows.iter().position(|l| l.starts_with("│risk: ↻ on an import cycle"));
        let node = rows.iter().position(|l| l.starts_with("│▶ src/auth/session.rs"));
        assert!(risk.is_some() && node < risk, "{w}x{hgt}: the risk line below the node's:\n{screen}");
    }
    snap("tui_impact_rules_60x16", &h.screen(60, 16));
    h.key(KeyCode::Char('r'));
    let off = h.screen(50, 12);
    assert!(!off.contains("risk:") && off.contains("│▶ src/auth/session.rs"), "{off}");
}

#[test]
fn the_key_names_every_mark_the_pane_draws_down_to_40x10() {
    let mut h = Harness::with("").started();
    h.search("session");
    h.ctrl('g');
    h.answer_impact(tui_samples::ruled_graph());
    for (w, hgt) in [(120, 40), (80, 24), (60, 16), (50, 12), (40, 10)] {
        let screen = h.screen(w, hgt);
        let (diagram, key) = diagram_and_key(&screen);
        // Every glyph the diagram draws is named in the key (a glyph, a space, a word), and
        // the key names nothing the diagram does not draw.
        for glyph in ["─▶", "╌", "↻", "⚠", "⊘", "✖", "▸"] {
            let drawn = diagram.contains(glyph);
            let named = key
                .split(glyph)
                .skip(1)
                .any(|rest| rest.starts_with(' ') && rest[1..].starts_with(char::is_alphabetic));
            assert_eq!(drawn, named, "{w}x{hgt}: {glyph} drawn {drawn}, named {named}:\n{screen}");
        }
    }
    // Where the whole graph shows, the rule marks are named by what they mean.
    for (w, hgt) in [(120, 40), (80, 24)] {
        let (_, key) = diagram_and_key(&h.screen(w, hgt));
        let named = |words: [&str; 3]| words.iter().any(|w| key.contains(w));
        assert!(named(["⊘ on a cycle a rule forbids", "⊘ cycle a rule forbids", "⊘ cycle rule"]), "{key}");
        assert!(named(["✖ imports what a rule forbids", "✖ import a rule forbids", "✖ import rule"]), "{key}");
    }
    // The title names the centre at every size (at 40x10 it had an empty name and was cut).
    for (w, hgt, title) in [
        (40, 10, "╭ Impact · …/auth/session.rs · depth 1 "),
        (50, 12, "╭ Impact · …/auth/session.rs · depth 1 · risk on "),
    ] {
        let screen = h.screen(w, hgt);
        assert!(screen.lines().nth(1).is_some_and(|l| l.starts_with(title)), "{w}x{hgt}:\n{screen}");
    }
    snap("tui_impact_rules_40x10", &h.screen(40, 10));
    snap("tui_impact_rules_50x12", &h.screen(50, 12));
    // With the overlay off the rule marks are not drawn, and the key does not name them.
    h.key(KeyCode::Char('r'));
    let (_, key) = diagram_and_key(&h.screen(80, 24));
    assert!(!key.contains('⊘') && !key.contains('✖') && key.contains("↻ cycle"), "{key}");
}

/// tour18 F14: under `NO_COLOR` the danger colour is only bold (as the centre and the
/// selection's edges are), so with the risk overlay off a file on a cycle back to the centre
/// (`store.rs`, which imports `session.rs` and is imported by it) looked like any other, and
/// with it on its `↻` did not say "back to the centre" as red does. Without colours it now
/// carries `⇄`, overlay on or off, and the key says what it means; with colours nothing changes.
#[test]
fn without_colours_a_cycle_back_to_the_centre_carries_a_mark_not_a_colour() {
    let plain = docdex::tui::theme::Theme::embedded("dark", true).expect("dark").expect("parses");
    let mut h = Harness::with("").with_theme(plain).started();
    h.search("session");
    h.ctrl('g');
    h.answer_impact(tui_samples::small_graph());
    let rows = |s: &str, file: &str| -> Vec<String> {
        s.lines()
            .filter(|l| l.contains(file))
            .flat_map(|l| l.split('│'))
            .filter(|c| c.contains(file))
            .map(|c| c.trim().to_string())
            .collect()
    };
    for overlay in ["on", "off"] {
        let s = h.screen(120, 40);
        assert!(shows(&s, &format!("risk overlay {overlay}")), "{s}");
        // Both of store.rs's entries (it is on each side of the centre), and the centre.
        let store = rows(&s, "store.rs ");
        assert_eq!(store, vec!["⇄ store.rs", "⇄ store.rs"], "{s}");
        assert!(shows(&s, "⇄ session.rs"), "{s}");
        for other in ["main.rs", "time.rs 0.60"] {
            assert!(rows(&s, other).iter().all(|r| !r.contains('⇄')), "{other}: {s}");
        }
        let key = s.lines().rev().nth(2).unwrap_or_default();
        assert!(key.contains("⇄ on a cycle back to the centre") || key.contains("⇄ cycle to centre"), "{s}");
        assert!(!key.contains("red"), "no colour to name: {s}");
        h.snap_both(&format!("tui_impact_no_color_overlay_{overlay}"));
        h.key(KeyCode::Char('r'));
    }
    // With colours the danger colour says it, as before: no `⇄`.
    let mut h = Harness::with("").started();
    h.search("session");
    h.ctrl('g');
    h.answer_impact(tui_samples::small_graph());
    assert!(!shows(&h.screen(120, 40), "⇄"));
}
