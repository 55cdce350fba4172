//! The status bar's progress and counts, and the workbench at its smallest size (40x10), from a
//! newcomer's tour (tour12 F2, F9): a percent by bytes beside a count of files, grouped and
//! ungrouped numbers in one message, a message drawn over the preview's title, a quit question
//! cut off, and a preview title naming another line than the hit.

use crate::tui_support::{shows, Harness};
use crossterm::event::KeyCode;
use docdex::engine::protocol::{IndexProgress, IndexSummary};
use docdex::tui::event::EngineEvent;

fn progress(files: (u64, u64), bytes: (u64, u64)) -> IndexProgress {
    IndexProgress {
        phase: "indexing".into(),
        files_done: files.0,
        files_total: files.1,
        bytes_done: bytes.0,
        bytes_total: bytes.1,
        ..Default::default()
    }
}

#[test]
fn the_percent_by_bytes_says_so_beside_the_file_count() {
    // `indexing 58% █████░░░ 2,226/2,295 files`: 2,226 of 2,295 is 97%, the 58% was of bytes.
    let mut h = Harness::new();
    h.requests();
    let repo = h.repo.clone();
    h.engine_event(EngineEvent::IndexStarted { repo: repo.clone() });
    h.engine_event(EngineEvent::IndexProgress { repo: repo.clone(), progress: progress((2226, 2295), (58, 100)) });
    let s = h.screen(200, 40);
    assert!(shows(&s, "indexing 58% of bytes · 2,226/2,295 files │"), "{s}");
    h.engine_event(EngineEvent::IndexProgress { repo: repo.clone(), progress: progress((3, 5), (60, 100)) });
    let s = h.screen(120, 40);
    assert!(shows(&s, "indexing 60% of bytes · 3/5 files │"), "{s}");
    // At 80 columns the short form has no count beside the percent.
    let s = h.screen(80, 24);
    assert!(shows(&s, "indexing 60% │"), "{s}");
    // A phase without bytes is measured by the count it shows, and says nothing more.
    let embedding = IndexProgress::embedding((2, 6), (120, 400));
    h.engine_event(EngineEvent::IndexProgress { repo, progress: embedding });
    let s = h.screen(120, 40);
    assert!(shows(&s, "embedding 30% · 120/400 chunks"), "{s}");
    assert!(!shows(&s, "of bytes"), "{s}");
}

#[test]
fn the_end_of_an_index_run_groups_both_numbers() {
    let mut h = Harness::new().started();
    let repo = h.repo.clone();
    let summary = IndexSummary { files: 2232, added: 2000, updated: 232, ..Default::default() };
    h.engine_event(EngineEvent::IndexFinished { repo, result: Ok(summary) });
    assert_eq!(h.app.notice(), Some("indexed 2,232 files (2,232 changed)"));
}

#[test]
fn at_40x10_a_two_line_message_does_not_cover_the_preview_title() {
    // The preview got one row at 40x10, its top border; a message's second line was drawn
    // over it and merged with the title: `╭  108 files indexed  lines) ───╮`.
    let mut h = Harness::new().started();
    h.search("parse configuration");
    assert!(!h.app.search().results().is_empty());
    let repo = h.repo.clone();
    let err = "the disk is full: no space left on device while writing the segment";
    h.engine_event(EngineEvent::IndexFinished { repo, result: Err(err.into()) });
    let s = h.screen(40, 10);
    let rows: Vec<&str> = s.lines().collect();
    assert!(rows.iter().all(|r| !r.contains("lines)") && !r.contains(" of ")), "no preview frame at 40x10: {s}");
    assert!(rows[7].starts_with('│') && rows[7].contains("✗ indexing fixture failed"), "inside the hits' frame: {s}");
    assert!(rows[8].starts_with('╰') && rows[8].contains("(alt+m: all messages)"), "and its bottom border: {s}");
    // One row taller still has no room for a line of the file; two rows have.
    assert!(!shows(&h.screen(40, 11), " of "), "{}", h.screen(40, 11));
    assert!(shows(&h.screen(40, 12), "of 4 lines"), "{}", h.screen(40, 12));
}

#[test]
fn at_40x10_the_quit_question_shows_whole() {
    // `ctrl+c quits at` — the rest was cut.
    let mut h = Harness::new().started();
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char('q'));
    let s = h.screen(40, 10);
    assert!(shows(&s, "Quit docdex?"), "{s}");
    assert!(shows(&s, "ctrl+c quits at"), "{s}");
    assert!(shows(&s, "│ once."), "the last line of the question shows too: {s}");
    assert!(shows(&s, "y or enter quits;"), "{s}");
    h.key(KeyCode::Esc);
    assert!(!h.app.should_quit());
}

#[test]
fn the_preview_title_names_the_hits_lines_and_the_files_length() {
    // `src/session.py:3 (4 lines)` for a hit listed as `src/session.py:1-4`.
    let mut h = Harness::new().started();
    h.search("parse configuration");
    let hit = h.app.search().results().iter().find(|r| r.path == "src/parser.py").cloned().expect("hit");
    let s = h.screen(120, 40);
    let range = if hit.line_start == hit.line_end {
        format!(":{}", hit.line_start)
    } else {
        format!(":{}-{}", hit.line_start, hit.line_end)
    };
    assert!(shows(&s, &format!("src/parser.py{range} of 4 lines")), "{s}");
}

/// tour29 F6: below 40x10 only the size message is drawn, but keys still acted on the panes
/// behind it: in Repos, `d` then `y` removed the repository from the registry with nothing on
/// the screen but "enlarge the window". Keys and pastes wait for a size the workbench can
/// draw; `ctrl+c` still quits.
#[test]
fn keys_do_nothing_while_the_terminal_is_too_small() {
    use crossterm::event::{Event, KeyEvent, KeyModifiers};
    use docdex::tui::event::AppEvent;
    let mut h = Harness::new().started();
    h.alt('1');
    let s = h.screen(20, 6);
    assert!(shows(&s, "keys wait") && shows(&s, "ctrl+c"), "{s}");
    h.key(KeyCode::Char('d'));
    h.key(KeyCode::Char('y'));
    h.app.handle_all([AppEvent::Input(Event::Key(KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE)))]);
    h.app.handle(AppEvent::Input(Event::Paste("pasted".into())));
    h.pump();
    assert!(h.engine.list_repos().expect("registry").iter().any(|r| r.path == h.repo), "still registered");
    let s = h.screen(120, 40);
    assert!(!shows(&s, "Remove") && !shows(&s, "Quit docdex?") && !shows(&s, "pasted"), "{s}");
    assert!(!h.app.should_quit());
    h.screen(20, 6);
    h.ctrl('c');
    assert!(h.app.should_quit(), "ctrl+c quits at any size");
}
