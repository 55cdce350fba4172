//! The TUI: snapshots of every pane at 80x24 and 120x40, and scenarios that drive the app with
//! keys, clicks and engine events and check the requests it sent. Engine work runs for real
//! (`worker::run_sync` on a fixture repository in a temporary DOCDEX_HOME); view-models whose
//! shape a fixture cannot produce on demand (a 200-node graph, an over-budget trace, a
//! branching DAG) come from `docdex::testing::tui_samples`. Chat turns against a model server
//! over loopback are in `tui_chat`.

use crate::tui_support::{shows, snap, Harness, NOW_MS};
use crossterm::event::{KeyCode, KeyModifiers};
use docdex::engine::protocol::SearchRequest;
use docdex::testing::tui_samples;
use docdex::tui::app::Effect;
use docdex::tui::event::{ChatUpdate, Citation, EngineEvent, ProviderState, Request};
use docdex::tui::panes::PaneId;
use docdex::tui::theme::Slot;
use docdex::tui::widgets::graph::{NodeKind, GROUP_OVER};
use ratatui::style::{Color, Modifier};

fn searches(reqs: &[Request]) -> Vec<(u64, SearchRequest, bool)> {
    reqs.iter()
        .filter_map(|r| match r {
            Request::Search { seq, req, more, .. } => Some((*seq, req.clone(), *more)),
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Start-up

#[test]
fn startup_loads_repos_checks_the_provider_and_indexes_the_unindexed_repo() {
    let mut h = Harness::new();
    let first = h.requests();
    assert_eq!(first, vec![Request::LoadRepos { current: h.repo.clone() }, Request::CheckProvider]);
    for r in first {
        for e in docdex::tui::worker::run_sync(&h.engine, r) {
            h.engine_event(e);
        }
    }
    // The fixture is not indexed: the app asks for an index run, once.
    let next = h.requests();
    assert_eq!(next, vec![Request::Index { repo: h.repo.clone(), rebuild: false }]);
    for r in next {
        for e in docdex::tui::worker::run_sync(&h.engine, r) {
            h.engine_event(e);
        }
    }
    h.pump();
    assert!(!h.sent.iter().skip(3).any(|r| matches!(r, Request::Index { .. })), "indexed once: {:?}", h.sent);
    let screen = h.screen(120, 40);
    assert!(shows(&screen, "● ready 5 files"), "{screen}");
    // The model check ran against a closed port and says so.
    assert!(shows(&h.screen(120, 40), "llm ✗ ollama"), "{}", h.screen(120, 40));
}

/// tour18 F10: started in a folder with nothing to index (an empty one, the wrong one), the
/// workbench said "indexed 0 files (0 changed)" and "Type to search", which searched nothing.
#[test]
fn a_repository_with_no_file_to_index_says_so_and_what_to_do() {
    let h = Harness::new();
    for entry in std::fs::read_dir(&h.repo).expect("read_dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            std::fs::remove_dir_all(&path).expect("rm -r");
        } else {
            std::fs::remove_file(&path).expect("rm");
        }
    }
    let h = h.started();
    let notice = h.app.notice().unwrap_or_default().to_string();
    assert!(notice.contains("holds no file docdex indexes: nothing to search"), "{notice}");
    assert!(notice.contains("add the right folder in Repos (alt+1, a)"), "{notice}");
    assert!(!shows(&h.screen(120, 40), "indexed 0 files (0 changed)"), "{}", h.screen(120, 40));
}

#[test]
fn startup_snapshots() {
    let h = Harness::new().started();
    h.snap_both("tui_search_empty");
}

#[test]
fn too_small_terminal_says_so() {
    let h = Harness::new().started();
    let s = h.screen(30, 8);
    assert!(s.starts_with("docdex needs at least 40x10\n(this is 30x8); enlarge the\nwindow"), "{s}");
    // And growing again works.
    assert!(shows(&h.screen(80, 24), "Search"));
}

// ---------------------------------------------------------------------------------------------
// Search

#[test]
fn typing_is_debounced_and_only_the_settled_query_is_sent() {
    let mut h = Harness::new().started();
    h.typ("ses");
    h.wait(50);
    h.typ("sion");
    h.wait(50);
    assert!(searches(&h.requests()).is_empty(), "nothing sent while typing");
    h.wait(100);
    let sent = searches(&h.requests());
    assert_eq!(sent.len(), 1, "{sent:?}");
    let (seq, req, more) = &sent[0];
    assert_eq!((req.query.as_str(), req.limit, *more), ("session", Some(100), false));
    assert_eq!(*seq, 1);
    // The screen echoed every keystroke before any result came back.
    assert!(shows(&h.screen(80, 24), "› session"));
}

#[test]
fn query_editing_keys_and_clearing() {
    let mut h = Harness::new().started();
    h.typ("session store");
    h.ctrl('w');
    assert_eq!(h.app.search().query(), "session ");
    h.ctrl('u');
    assert_eq!(h.app.search().query(), "");
    h.wait(300);
    assert!(searches(&h.requests()).is_empty(), "an emptied box sends nothing");
    // Pasted text (bracketed paste) lands in the box as one line.
    h.app.handle(docdex::tui::event::AppEvent::Input(crossterm::event::Event::Paste("expire\nstale".into())));
    assert_eq!(h.app.search().query(), "expire stale");
}

#[test]
fn resizing_redraws_at_the_new_size() {
    let mut h = Harness::new().started();
    h.search("session");
    h.app.mark_drawn();
    h.app.handle(docdex::tui::event::AppEvent::Input(crossterm::event::Event::Resize(80, 24)));
    assert!(h.app.is_dirty(), "a resize asks for a frame");
    for (w, hh) in [(120, 40), (80, 24), (40, 10), (200, 60), (81, 25)] {
        let s = h.screen(w, hh);
        assert!(shows(&s, "session"), "{w}x{hh}: {s}");
    }
}

#[test]
fn stale_results_never_replace_newer_ones() {
    let mut h = Harness::new().started();
    h.typ("session");
    h.wait(200);
    let first = h.requests();
    h.typ(" store");
    h.wait(200);
    let second = h.requests();
    // The newer query's results arrive first, then the older one's.
    for r in second.into_iter().chain(first) {
        for e in docdex::tui::worker::run_sync(&h.engine, r) {
            h.engine_event(e);
        }
    }
    assert_eq!(h.app.search().query(), "session store");
    let shown: Vec<&str> = h.app.search().results().iter().map(|r| r.path.as_str()).collect();
    assert!(!shown.is_empty());
    let s = h.screen(120, 40);
    assert!(shows(&s, "src/auth/session.rs"), "{s}");
}

#[test]
fn results_preview_and_editor() {
    let mut h = Harness::new().started();
    h.search("session");
    let hits = h.app.search().results().to_vec();
    assert_eq!(hits[0].path, "src/auth/session.rs");
    let s = h.screen(120, 40);
    // The preview shows the file with line numbers and the hit marked.
    assert!(shows(&s, "src/auth/session.rs:"), "{s}");
    assert!(s.contains("  2▌pub struct SessionStore"), "{s}");
    // Enter opens the hit in the editor at its line, as an absolute path.
    h.key(KeyCode::Enter);
    h.pump();
    let line = docdex::tui::panes::search::best_line(&hits[0]);
    assert_eq!(h.app.take_effects(), vec![Effect::OpenEditor { path: h.repo.join("src/auth/session.rs"), line }]);
    h.app.editor_finished(Err("vi exited with 1".into()));
    assert_eq!(h.app.notice(), Some("vi exited with 1"));
}

#[test]
fn moving_the_selection_previews_the_next_hit() {
    let mut h = Harness::new().started();
    h.search("dashboard");
    assert!(h.app.search().results().len() >= 2, "{:?}", h.app.search().results());
    h.key(KeyCode::Down);
    let reqs = h.requests();
    let second = &h.app.search().results()[1];
    assert!(reqs.iter().any(|r| matches!(r, Request::Preview { path, .. } if *path == second.path)), "{reqs:?}");
    assert_eq!(h.app.search().selected(), 1);
}

#[test]
fn search_snapshots() {
    let mut h = Harness::new().started();
    h.search("session");
    h.snap_both("tui_search_results");
    h.key(KeyCode::Down);
    h.pump();
    h.key(KeyCode::Esc);
    snap("tui_search_list_focus_80x24", &h.screen(80, 24));
}

#[test]
fn path_and_language_filters_go_into_the_request() {
    let mut h = Harness::new().started();
    h.search("session");
    // ctrl+f moves the cursor in the query box (readline); alt+p opens the path filter there.
    h.alt('p');
    assert!(h.app.prompt_open());
    snap("tui_prompt_path_filter_80x24", &h.screen(80, 24));
    h.typ("src/");
    h.key(KeyCode::Enter);
    let sent = searches(&h.requests());
    assert_eq!(sent.last().map(|s| s.1.path_prefix.clone()), Some(Some("src/".into())));
    h.ctrl('l');
    h.typ("Rust");
    h.key(KeyCode::Enter);
    let sent = searches(&h.requests());
    let last = &sent.last().expect("search").1;
    assert_eq!((last.path_prefix.as_deref(), last.lang.as_deref()), (Some("src/"), Some("rust")));
    h.pump();
    assert!(shows(&h.screen(120, 40), "path:src/"));
    h.ctrl('x');
    let cleared = searches(&h.requests()).pop().expect("search").1;
    assert_eq!((cleared.path_prefix, cleared.lang), (None, None));
}

#[test]
fn no_results_and_engine_errors_show_in_the_pane() {
    let mut h = Harness::new().started();
    h.search("how does the");
    let s = h.screen(100, 24);
    assert!(shows(&s, "No results: \"how does the\" has no") && shows(&s, "searchable words"), "{s}");
    assert!(shows(&s, "ctrl+t for symbol search"), "the workbench names its own key: {s}");
    for _ in 0.."how does the".len() {
        h.key(KeyCode::Backspace);
    }
    h.search("zzzqqqxxyy");
    assert!(shows(&h.screen(80, 24), "No results for \"zzzqqqxxyy\""), "{}", h.screen(80, 24));
    answer_search(&mut h, "w", Err("index error in /x: boom".into()));
    let s = h.screen(80, 24);
    assert!(shows(&s, "index error in /x: boom"), "{s}");
    // The app goes on: switching panes and searching again works.
    h.key(KeyCode::Tab);
    assert_eq!(h.app.focus(), PaneId::Chat);
}

#[test]
fn symbol_search_runs_on_the_real_symbol_index() {
    let mut h = Harness::new().started();
    h.ctrl('t');
    h.search("SessionStore");
    let s = h.screen(120, 40);
    assert!(shows(&s, "struct SessionStore  src/auth/session.rs:2"), "{s}");
    assert!(
        h.sent.iter().any(|r| matches!(r, Request::Symbols { query, .. } if query == "SessionStore")),
        "{:?}",
        h.sent
    );
    h.key(KeyCode::Enter);
    h.pump();
    assert_eq!(h.app.take_effects(), vec![Effect::OpenEditor { path: h.repo.join("src/auth/session.rs"), line: 2 }]);
}

#[test]
fn symbol_mode_asks_for_symbols_when_the_engine_has_them() {
    use docdex::tui::event::SymbolHit;
    let mut h = Harness::with("").started();
    h.ctrl('t');
    h.typ("SessionStore");
    h.wait(200);
    let reqs: Vec<Request> =
        h.requests().into_iter().filter(|r| matches!(r, Request::Symbols { .. } | Request::Search { .. })).collect();
    let seq = match reqs.as_slice() {
        [Request::Symbols { seq, query, .. }] if query == "SessionStore" => *seq,
        other => panic!("{other:?}"),
    };
    let hit = |name: &str, kind: &str, line: u32, sig: &str| SymbolHit {
        name: name.into(),
        kind: kind.into(),
        path: "src/auth/session.rs".into(),
        line_start: line,
        line_end: line + 1,
        signature: sig.into(),
    };
    h.engine_event(EngineEvent::SymbolResults {
        seq,
        result: Ok(vec![
            hit("SessionStore", "struct", 2, "pub struct SessionStore { ttl: u64 }"),
            hit("expire_stale_sessions", "method", 5, "pub fn expire_stale_sessions(&mut self)"),
        ]),
        total: 0,
    });
    h.pump();
    let s = h.screen(120, 40);
    assert!(shows(&s, "struct SessionStore  src/auth/session.rs:2"), "{s}");
    h.snap_both("tui_search_symbols");
    h.key(KeyCode::Down);
    h.key(KeyCode::Enter);
    h.pump();
    assert_eq!(h.app.take_effects(), vec![Effect::OpenEditor { path: h.repo.join("src/auth/session.rs"), line: 5 }]);

    // When more matched than were sent, the title says so rather than passing a cut for all.
    h.typ("x");
    h.wait(200);
    let seq = h
        .requests()
        .into_iter()
        .rev()
        .find_map(|r| match r {
            Request::Symbols { seq, .. } => Some(seq),
            _ => None,
        })
        .expect("a second symbol search");
    let many = (0..500).map(|i| hit(&format!("SessionStorex{i}"), "struct", 2, "")).collect();
    h.engine_event(EngineEvent::SymbolResults { seq, result: Ok(many), total: 1_234 });
    h.pump();
    let s = h.screen(120, 40);
    assert!(shows(&s, "Symbols (first 500 of 1,234: type more to narrow)"), "{s}");
}

/// Types `query` into the query box and answers the search it starts with `result`.
fn answer_search(h: &mut Harness, query: &str, result: Result<docdex::engine::protocol::SearchResponse, String>) {
    h.typ(query);
    h.wait(200);
    let seq = searches(&h.requests()).last().expect("search").0;
    h.engine_event(EngineEvent::SearchResults { seq, more: false, result });
}

#[test]
fn ten_thousand_results_page_and_scroll() {
    let mut h = Harness::new().started();
    answer_search(&mut h, "session", Ok(tui_samples::search_response("session", 10_000)));
    h.key(KeyCode::Esc);
    h.key(KeyCode::End);
    assert_eq!(h.app.search().selected(), 9_999);
    let s = h.screen(80, 24);
    assert!(shows(&s, "file_09999.rs"), "{s}");
    assert!(shows(&s, "10,000+ hits"), "a count that reaches the ranking pool is a lower bound: {s}");
}

#[test]
fn hits_of_files_the_watcher_reindexed_are_marked_changed() {
    use docdex::tui::event::WatchActivity;
    let mut h = Harness::new().started();
    answer_search(&mut h, "session", Ok(tui_samples::search_response("session", 3)));
    h.pump();
    assert!(!shows(&h.screen(120, 40), "changed on disk"));
    let paths = vec!["src/api/file_00001.rs".to_string(), "src/elsewhere.rs".to_string()];
    h.engine_event(EngineEvent::Watch { repo: h.repo.clone(), activity: WatchActivity::Applied { paths } });
    h.pump();
    let s = h.screen(120, 40);
    let marked: Vec<&str> = s.lines().filter(|l| l.contains("(changed on disk)")).collect();
    assert_eq!(marked.len(), 1, "{s}");
    assert!(marked[0].contains("src/api/file_00001.rs"), "{s}");
    // Another repository's watcher leaves these hits alone.
    let other = vec!["src/core/file_00000.rs".to_string()];
    h.engine_event(EngineEvent::Watch { repo: "/elsewhere".into(), activity: WatchActivity::Applied { paths: other } });
    h.pump();
    assert_eq!(h.screen(120, 40).lines().filter(|l| l.contains("(changed on disk)")).count(), 1);
}

/// A hit whose file is gone since indexing says so, not "changed" (its preview has nothing to
/// show: the line explains why).
#[test]
fn hits_of_files_gone_since_indexing_are_marked_gone() {
    let mut h = Harness::new().started();
    let mut page = tui_samples::search_response("session", 3);
    page.results[1].stale = true;
    page.results[1].gone = true;
    page.results[2].stale = true;
    let (gone_path, changed_path) = (page.results[1].path.clone(), page.results[2].path.clone());
    answer_search(&mut h, "session", Ok(page));
    h.pump();
    let s = h.screen(120, 40);
    let gone: Vec<&str> = s.lines().filter(|l| l.contains("(gone from disk)")).collect();
    let changed: Vec<&str> = s.lines().filter(|l| l.contains("(changed on disk)")).collect();
    assert_eq!(gone.len(), 1, "{s}");
    assert!(gone[0].contains(&gone_path), "{s}");
    assert_eq!(changed.len(), 1, "{s}");
    assert!(changed[0].contains(&changed_path), "{s}");
}

#[test]
fn a_failed_search_keeps_no_counts_of_the_last_one() {
    let mut h = Harness::new().started();
    answer_search(&mut h, "session", Ok(tui_samples::search_response("session", 3)));
    assert!(shows(&h.screen(120, 40), "3 hits · confidence"));
    answer_search(&mut h, "s", Err("the index is gone".into()));
    let s = h.screen(120, 40);
    assert!(shows(&s, "Results · failed") && !shows(&s, "3 hits"), "{s}");
}

#[test]
fn an_impact_error_wraps_so_its_advice_shows() {
    let mut h = Harness::new().started();
    h.search("session");
    h.ctrl('g');
    let seq = h
        .requests()
        .iter()
        .find_map(|r| match r {
            Request::Impact { seq, .. } => Some(*seq),
            _ => None,
        })
        .expect("impact asked for");
    let why = "pyproject.toml has no impact graph: it exists but is not a code file docdex parses, or it changed since the last `docdex index`";
    h.engine_event(EngineEvent::Impact { seq, result: Err(why.into()) });
    let s = h.screen(80, 24);
    let text: String = s.lines().map(|l| l.trim_matches(['│', ' ']).to_string()).collect::<Vec<_>>().join(" ");
    assert!(text.contains("since the last `docdex index`"), "the end of the reason shows:\n{s}");
    let status = s.lines().last().unwrap_or_default();
    assert!(!status.contains("centre") && !status.contains("depth"), "no graph, no graph keys offered: {status}");
}

#[test]
fn a_hit_whose_snippet_starts_blank_shows_its_first_line_with_text() {
    let mut h = Harness::new().started();
    let mut resp = tui_samples::search_response("session", 1);
    resp.results[0].snippet = "\n\nclass Text(JupyterMixin):\n    pass".into();
    resp.results[0].highlights.clear();
    answer_search(&mut h, "session", Ok(resp));
    let s = h.screen(120, 40);
    assert!(shows(&s, "class Text(JupyterMixin):"), "{s}");
}

#[test]
fn a_watcher_failure_reaches_the_message_log() {
    use docdex::tui::event::WatchActivity;
    let mut h = Harness::new().started();
    let why = "the index was deleted while it was being watched; rebuilding it";
    h.engine_event(EngineEvent::Watch { repo: h.repo.clone(), activity: WatchActivity::Failed(why.into()) });
    h.pump();
    assert!(h.app.messages().iter().any(|m| m.text.contains(why)), "{:?}", h.app.messages());
}

#[test]
fn a_hit_opens_at_the_line_that_matches_most_not_the_context_line_above() {
    use docdex::engine::protocol::Highlight;
    let mut resp = tui_samples::search_response("x", 1);
    let hit = &mut resp.results[0];
    hit.snippet_line_start = 70_001;
    hit.snippet = "HUGE_CONSTANT_69999 = 1\nHUGE_CONSTANT_70000 = 2\nHUGE_CONSTANT_70001 = 3".into();
    let on = |line: u32, start: usize, end: usize| Highlight { line, start, end, shown_from: 0 };
    // The line above shares two of the three words; the match holds all three.
    hit.highlights = vec![
        on(70_001, 0, 4),
        on(70_001, 5, 13),
        on(70_002, 0, 4),
        on(70_002, 5, 13),
        on(70_002, 14, 19),
        on(70_003, 0, 4),
    ];
    assert_eq!(docdex::tui::panes::search::best_line(hit), 70_002);
    // Equals: the first.
    hit.highlights = vec![on(70_001, 0, 4), on(70_002, 0, 4)];
    assert_eq!(docdex::tui::panes::search::best_line(hit), 70_001);
}

/// A minified one-line file: the hit's snippet and its preview are windows of the line around
/// the match (the preview used to lay out and colour all of an 8 MB line).
#[test]
fn a_long_line_previews_as_a_window_around_its_match() {
    let h = Harness::new();
    let line = format!("var x=1;{} watermelonword end;", "alpha beta gamma ".repeat(40_000));
    std::fs::write(h.repo.join("bundle.min.js"), &line).expect("write");
    let mut h = h.started();
    h.search("watermelonword");
    let hit = h.app.search().results().first().cloned().expect("a hit");
    assert_eq!(hit.path, "bundle.min.js");
    assert!(hit.snippet.contains("watermelonword") && hit.snippet.len() < 1000, "{}", hit.snippet.len());
    let req = Request::Preview {
        seq: 7,
        repo: h.repo.clone(),
        path: hit.path.clone(),
        line: 1,
        lang: hit.lang.clone(),
        hit: (1, 1),
        highlights: hit.highlights.clone(),
    };
    let doc = docdex::tui::worker::run_sync(&h.engine, req)
        .into_iter()
        .find_map(|e| if let EngineEvent::Preview { result, .. } = e { Some(result) } else { None })
        .expect("a preview")
        .expect("the preview reads");
    let shown: String = doc.lines[0].iter().map(|(_, t)| t.as_str()).collect();
    assert!(shown.len() <= 4096, "{}", shown.len());
    let &(n, a, b) = doc.matches.first().expect("the match is marked");
    assert_eq!(n, 1);
    assert_eq!(shown.chars().skip(a).take(b - a).collect::<String>(), "watermelonword");
}

// ---------------------------------------------------------------------------------------------
// Panes, tabs, mouse, help

#[test]
fn tabs_switch_by_key_and_mouse() {
    let mut h = Harness::new().started();
    h.key(KeyCode::Tab);
    assert_eq!(h.app.focus(), PaneId::Chat);
    h.key_mod(KeyCode::BackTab, KeyModifiers::SHIFT);
    assert_eq!(h.app.focus(), PaneId::Search);
    h.alt('1');
    assert_eq!(h.app.focus(), PaneId::Repos);
    h.key(KeyCode::Char('6'));
    assert_eq!(h.app.focus(), PaneId::Impact);
    // Draw once so the layout is known, then click the "Trace" tab.
    let s = h.screen(80, 24);
    let col = s.lines().next().and_then(|l| l.find("Trace")).expect("tab") as u16;
    h.click(col, 0);
    assert_eq!(h.app.focus(), PaneId::Trace);
}

#[test]
fn clicking_a_result_selects_it() {
    let mut h = Harness::new().started();
    h.search("dashboard");
    let s = h.screen(120, 40);
    let second = &h.app.search().results()[1].path.clone();
    let row = s.lines().position(|l| l.contains(second.as_str())).expect("second hit on screen") as u16;
    h.click(5, row);
    assert_eq!(h.app.search().selected(), 1);
}

#[test]
fn help_is_generated_from_the_keymap_in_effect() {
    let mut h =
        Harness::with_files("[tui]\nkeymap = \"mine\"\n", &[("keymaps/mine.toml", "[global]\nquit = [\"ctrl+q\"]\n")])
            .started();
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char('?'));
    assert!(h.app.help_open());
    let s = h.screen(120, 40);
    assert!(s.lines().any(|l| l.contains("ctrl+q") && l.contains("Quit docdex")), "{s}");
    assert!(!s.lines().any(|l| l.contains("ctrl+c, q")), "{s}");
    assert!(shows(&s, "keymap mine"), "{s}");
    h.key(KeyCode::Esc);
    assert!(!h.app.help_open());
    // q no longer quits (nor asks); ctrl+q does.
    h.key(KeyCode::Char('q'));
    h.key(KeyCode::Char('y'));
    assert!(!h.app.should_quit());
    h.ctrl('q');
    assert!(h.app.should_quit());
}

#[test]
fn vim_keymap_moves_with_j_and_k() {
    let mut h = Harness::with("[tui]\nkeymap = \"vim\"\n").started();
    h.search("dashboard");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char('j'));
    assert_eq!(h.app.search().selected(), 1);
    h.key(KeyCode::Char('k'));
    assert_eq!(h.app.search().selected(), 0);
}

#[test]
fn help_snapshots() {
    let mut h = Harness::new().started();
    h.key(KeyCode::F(1));
    h.snap_both("tui_help_search");
}

#[test]
fn a_bad_theme_file_is_reported_and_the_app_goes_on() {
    let h = Harness::with_files("", &[("themes/dark.toml", "[ui]\nborder = { fg = \"purplish\" }\n")]).started();
    let notice = h.app.notice().unwrap_or_default().to_string();
    assert!(notice.contains("themes/dark.toml:2: unknown colour \"purplish\""), "{notice}");
    let s = h.screen(120, 40);
    assert!(shows(&s, "Search"), "{s}");
}

#[test]
fn a_bad_keymap_file_is_reported_in_help() {
    let mut h = Harness::with_files("", &[("keymaps/default.toml", "[search]\nteleport = [\"t\"]\n")]).started();
    h.key(KeyCode::F(1));
    let s = h.screen(120, 40);
    assert!(s.contains("keymaps/default.toml:2: unknown action `teleport` in [search]"), "{s}");
    // The shipped bindings are in effect.
    assert!(s.lines().any(|l| l.contains("ctrl+c, q") && l.contains("Quit docdex")), "{s}");
}

#[test]
fn no_color_strips_colours_but_keeps_the_selection_visible() {
    let theme = docdex::tui::theme::Theme::embedded("dark", true).expect("dark").expect("parses");
    let mut h = Harness::new().with_theme(theme).started();
    h.search("session");
    let buf = h.buffer(120, 40);
    let mut selected_reversed = false;
    for cell in buf.content.iter() {
        assert!(cell.fg == Color::Reset && cell.bg == Color::Reset, "a colour leaked: {cell:?}");
        selected_reversed |= cell.modifier.contains(Modifier::REVERSED);
    }
    assert!(selected_reversed, "the selection uses reverse video");
}

#[test]
fn light_and_high_contrast_themes_render() {
    for name in ["light", "high-contrast"] {
        let theme = docdex::tui::theme::Theme::embedded(name, false).expect(name).expect("parses");
        let border = theme.style(Slot::BorderFocused);
        let mut h = Harness::new().with_theme(theme).started();
        h.search("session");
        let buf = h.buffer(80, 24);
        let focused_border = buf.content.iter().any(|c| c.symbol() == "╭" && c.fg == border.fg.unwrap_or(Color::Reset));
        assert!(focused_border, "{name}: the focused frame uses the theme's border_focused");
    }
}

// ---------------------------------------------------------------------------------------------
// Repositories

#[test]
fn repos_add_reindex_remove_and_watch() {
    let mut h = Harness::new().started();
    let other = h.env.repo("other");
    crate::util::write(&other, "lib.rs", "pub fn other_thing() {}\n");
    h.alt('1');
    h.key(KeyCode::Char('a'));
    assert!(h.app.prompt_open());
    h.typ("/definitely/not/here");
    h.key(KeyCode::Enter);
    assert!(h.app.prompt_open(), "a bad path keeps the prompt open");
    assert!(shows(&h.screen(80, 24), "/definitely/not/here does not exist (tab completes folders)"));
    h.ctrl('u');
    h.typ(other.to_str().expect("utf8"));
    h.key(KeyCode::Enter);
    let other = std::fs::canonicalize(&other).expect("canonical");
    assert!(h.requests().contains(&Request::Index { repo: other.clone(), rebuild: false }));
    h.app.handle(docdex::tui::event::AppEvent::Tick);
    // Run it for real, then the list shows both repositories.
    let mut h = h;
    h.sent.clear();
    for e in docdex::tui::worker::run_sync(&h.engine, Request::Index { repo: other.clone(), rebuild: false }) {
        h.engine_event(e);
    }
    h.pump();
    assert_eq!(h.app.repos().rows().len(), 2);
    let s = h.screen(120, 40);
    assert!(shows(&s, "other") && shows(&s, "fixture"), "{s}");
    // The list's ▸ marks the repository the panes work on; the details say so for it alone.
    assert!(shows(&s, "▸ the panes work on this one"), "{s}");
    // Select "other" (sorted after "fixture") and re-index, watch, remove.
    h.key(KeyCode::Down);
    assert!(!shows(&h.screen(120, 40), "the panes work on this one"), "{}", h.screen(120, 40));
    h.key(KeyCode::Char('r'));
    h.key(KeyCode::Char('w'));
    h.key(KeyCode::Char('d'));
    assert!(h.app.prompt_open());
    assert!(shows(&h.screen(120, 40), "Its index stays on disk. y removes, n or esc keeps it."));
    h.key(KeyCode::Char('y'));
    let reqs = h.requests();
    assert_eq!(
        reqs,
        vec![
            Request::Index { repo: other.clone(), rebuild: false },
            Request::Watch { repo: other.clone(), on: true },
            Request::RemoveRepo { repo: other.clone() },
        ]
    );
    for r in reqs.into_iter().filter(|r| matches!(r, Request::RemoveRepo { .. })) {
        for e in docdex::tui::worker::run_sync(&h.engine, r) {
            h.engine_event(e);
        }
    }
    h.pump();
    assert_eq!(h.app.repos().rows().len(), 1);
    assert!(h.engine.list_repos().expect("list").iter().all(|r| r.path != other));
}

/// tour18 F2: `r` on a watched repository looked like it did nothing. The watcher paused for the
/// run and its restart put "watcher started" over the run's outcome, and a run with nothing to
/// change left no message. Now the status bar says how the run ended, and the outcome stays.
#[test]
fn reindex_says_how_it_ended_also_on_a_watched_repository_with_nothing_changed() {
    let mut h = Harness::new().started();
    h.alt('1');
    h.pump();
    // The repository as the overview shows it while this workbench watches it.
    let mut rows = h.app.repos().rows().to_vec();
    rows.iter_mut().for_each(|r| r.watching = true);
    h.engine_event(EngineEvent::Repos(Ok(rows)));
    h.key(KeyCode::Char('r'));
    let reqs = h.requests();
    assert_eq!(reqs, vec![Request::Index { repo: h.repo.clone(), rebuild: false }]);
    // The worker stops the watcher, runs the index, and watches again.
    let repo = h.repo.clone();
    let watch = |activity| EngineEvent::Watch { repo: repo.clone(), activity };
    h.engine_event(watch(docdex::tui::event::WatchActivity::Stopped));
    for e in docdex::tui::worker::run_sync(&h.engine, reqs[0].clone()) {
        h.engine_event(e);
    }
    h.engine_event(watch(docdex::tui::event::WatchActivity::Ready));
    let s = h.screen(120, 40);
    assert!(shows(&s, "re-indexed fixture: nothing changed"), "the status bar says it ran: {s}");
    assert!(shows(&s, "(+0 ~0 -0)") && shows(&s, "; watcher resumed"), "the run's outcome stays: {s}");
    assert!(!shows(&s, "watcher started"), "{s}");
    // An edit, then `r`: what changed is counted.
    crate::util::write(&h.repo, "src/new_module.rs", "pub fn fresh_thing() {}\n");
    h.key(KeyCode::Char('r'));
    for r in h.requests() {
        for e in docdex::tui::worker::run_sync(&h.engine, r) {
            h.engine_event(e);
        }
    }
    let s = h.screen(120, 40);
    assert!(shows(&s, "re-indexed fixture: 1 changed (+1 ~0 -0)"), "{s}");
}

/// Types `dir` into the Repos pane's add prompt and runs the index request it sends to its end,
/// as the worker would; the prompt is closed while the request runs. Returns what was typed.
fn add_repository_through_the_prompt(h: &mut Harness, dir: &std::path::Path) -> String {
    h.alt('1');
    h.key(KeyCode::Char('a'));
    let typed = dir.to_str().expect("utf8").to_string();
    h.typ(&typed);
    h.key(KeyCode::Enter);
    assert!(!h.app.prompt_open(), "Enter sends the request and closes the prompt");
    let reqs = h.requests();
    let [index @ Request::Index { .. }] = reqs.as_slice() else { panic!("{reqs:?}") };
    for e in docdex::tui::worker::run_sync(&h.engine, index.clone()) {
        h.engine_event(e);
    }
    typed
}

/// A path the prompt accepts but the engine refuses to index (a credentials folder) brings
/// the prompt back with what was typed and the reason; it closed, the text lost.
#[test]
fn an_added_repository_the_engine_refuses_reopens_the_prompt_with_the_text() {
    let mut h = Harness::new().started();
    let keys = h.env.dir.path().join("secrets/.ssh");
    std::fs::create_dir_all(&keys).expect("dir");
    let typed = add_repository_through_the_prompt(&mut h, &keys);
    assert!(h.app.prompt_open(), "the refusal reopens the prompt");
    let s = h.screen(120, 40);
    assert!(shows(&s, "holds credentials"), "{s}");
    assert!(shows(&s, &typed), "what was typed is back: {s}");
}

/// tour18 F9: with no watcher the column showed the index run's last file as `no watcher; last:
/// create app.ts`, which read as a watcher's event. It says the watcher is off and that the run
/// indexed the file.
#[test]
fn without_a_watcher_the_watcher_column_says_off_and_what_the_index_run_indexed() {
    let mut h = Harness::new().started();
    h.alt('1');
    h.pump();
    let s = h.screen(120, 40);
    assert!(shows(&s, "off · indexed app.ts just now"), "{s}");
    assert!(shows(&s, "watcher: off · indexed app.ts"), "the details line too: {s}");
    assert!(!shows(&s, "create app.ts") && !shows(&s, "no watcher"), "{s}");
}

/// tour18 F13: a folder of the repository the workbench works on was accepted as another
/// repository, its files then in two indexes. The engine refuses it; the prompt comes back with
/// what was typed, which repository covers the folder and how to search only it.
#[test]
fn adding_a_folder_of_a_registered_repository_is_refused_with_how_to_search_only_it() {
    let mut h = Harness::new().started();
    let folder = h.repo.join("src/auth");
    let typed = add_repository_through_the_prompt(&mut h, &folder);
    assert!(h.app.prompt_open(), "the refusal reopens the prompt");
    let s = h.screen(120, 40);
    assert!(shows(&s, "lies inside the repository") && shows(&s, "which already indexes it"), "{s}");
    assert!(shows(&s, "--path src/auth/") && shows(&s, "alt+p in the workbench"), "{s}");
    assert!(shows(&s, &typed), "what was typed is back: {s}");
    assert_eq!(h.engine.list_repos().expect("list").len(), 1, "nothing registered");
}

#[test]
fn enter_on_a_repo_switches_and_searches_it() {
    let mut h = Harness::new().started();
    let other = h.env.repo("other");
    crate::util::write(&other, "lib.rs", "pub fn wombat_counter() {}\n");
    let other = std::fs::canonicalize(&other).expect("canonical");
    for e in docdex::tui::worker::run_sync(&h.engine, Request::Index { repo: other.clone(), rebuild: false }) {
        h.engine_event(e);
    }
    h.search("wombat");
    assert!(h.app.search().results().is_empty(), "not in the fixture");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char('1'));
    h.pump();
    h.key(KeyCode::Down);
    h.key(KeyCode::Enter);
    assert_eq!(h.app.repo(), other.as_path());
    assert_eq!(h.app.focus(), PaneId::Search);
    h.pump();
    assert_eq!(h.app.search().results()[0].path, "lib.rs");
}

#[test]
fn repos_snapshots() {
    let mut h = Harness::new().started();
    h.alt('1');
    h.engine_event(EngineEvent::Repos(Ok(tui_samples::overviews(NOW_MS))));
    h.key(KeyCode::Down);
    h.snap_both("tui_repos");
    h.key(KeyCode::Char('a'));
    h.typ("~/code/new-project");
    h.snap_both("tui_prompt_add_repo");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char('d'));
    h.snap_both("tui_prompt_remove");
    h.key(KeyCode::Char('n'));
    assert!(!h.app.prompt_open());
    assert!(!h.requests().iter().any(|r| matches!(r, Request::RemoveRepo { .. })), "n keeps it");
    // The current repository, removed from the registry with its index kept, stays listed
    // and says why.
    let mut rows = tui_samples::overviews(NOW_MS);
    let shop = rows.iter_mut().find(|r| r.path.ends_with("shop")).expect("shop");
    shop.registered = false;
    h.engine_event(EngineEvent::Repos(Ok(rows)));
    let s = h.screen(120, 40);
    let line = s.lines().find(|l| l.contains("/work/code/shop")).expect("listed");
    assert!(line.contains("unregistered"), "{line}");
}

/// A repository whose first index run was killed in another process, before its first commit,
/// read "not indexed" in the workbench while `docdex status` said the run was interrupted. The
/// engine's overview names how the run ended; the status bar, the Repos pane's state and its
/// details say so, with the key that finishes it.
#[test]
fn a_first_index_killed_in_another_process_reads_interrupted() {
    use docdex::engine::protocol::{FirstRunEnd, RepoState};
    let mut h = Harness::new();
    h.requests();
    let repo = h.repo.clone();
    let dir = h.engine.resolve_repo(&repo).expect("repo").state_dir;
    std::fs::create_dir_all(&dir).expect("state dir");
    let mut gone = std::process::Command::new("true").spawn().expect("spawn");
    let pid = gone.id();
    gone.wait().expect("exited");
    let status = serde_json::json!({"state": "updating", "pid": pid, "started_ms": 1, "updated_ms": 1,
        "progress": {"phase": "indexing", "files_done": 3, "files_total": 9, "bytes_done": 0, "bytes_total": 0},
        "queued": 0});
    std::fs::write(dir.join("index_status.json"), status.to_string()).expect("status file");
    let mut rows = h.engine.repo_overviews(Some(&repo)).expect("overviews");
    let row = rows.iter_mut().find(|r| r.path == repo).expect("listed");
    assert_eq!(row.state, RepoState::NotIndexed);
    let first = row.first_run.as_mut().expect("the first run is named");
    assert_eq!((first.end, first.pid), (FirstRunEnd::Interrupted, pid));
    first.pid = 4242; // the snapshot's, as its fingerprint (of a temporary path)
    row.fingerprint = "0".repeat(64);
    h.engine_event(EngineEvent::Repos(Ok(rows)));
    h.alt('1');
    let s = h.screen(120, 40);
    assert!(s.lines().last().unwrap_or_default().contains("○ first index interrupted"), "{s}");
    assert!(!shows(&s, "not indexed"), "{s}");
    assert!(shows(&s, "its first index run (pid 4242) was interrupted before its first commit; r to finish"), "{s}");
    h.snap_both("tui_repos_first_run_interrupted");
}

#[test]
fn index_progress_shows_while_indexing() {
    let mut h = Harness::new();
    h.requests();
    let repo = h.repo.clone();
    h.engine_event(EngineEvent::IndexStarted { repo: repo.clone() });
    h.engine_event(EngineEvent::IndexProgress {
        repo: repo.clone(),
        progress: docdex::engine::protocol::IndexProgress {
            phase: "indexing".into(),
            files_done: 3,
            files_total: 5,
            bytes_done: 600,
            bytes_total: 1000,
            ..Default::default()
        },
    });
    let s = h.screen(80, 24);
    assert!(shows(&s, "indexing 60%"), "{s}");
    assert!(shows(&s, "Indexing is running; results fill in as it goes."), "{s}");
    h.snap_both("tui_search_while_indexing");
}

#[test]
fn the_embedding_phase_counts_chunks_as_chunks_and_moves_the_bar() {
    // The status bar showed the phase's chunks as "files" at 0% (it measured bytes, which
    // embedding has none of); the Repos pane guessed chunks from the phase's name.
    let mut h = Harness::new();
    h.requests();
    let repo = h.repo.clone();
    h.engine_event(EngineEvent::IndexStarted { repo: repo.clone() });
    let progress = docdex::engine::protocol::IndexProgress::embedding((2, 6), (120, 400));
    h.engine_event(EngineEvent::IndexProgress { repo: repo.clone(), progress });
    let s = h.screen(120, 40);
    let bar = s.lines().last().unwrap_or_default();
    assert!(bar.contains("embedding 30%") && bar.contains("120/400 chunks"), "{bar}");
    // The Repos pane's details of this repository.
    let mut rows = tui_samples::overviews(NOW_MS);
    rows.truncate(1);
    rows[0].path = repo.clone();
    h.engine_event(EngineEvent::Repos(Ok(rows)));
    h.alt('1');
    let s = h.screen(120, 40);
    assert!(shows(&s, "120/400 chunks · 2/6 files"), "{s}");
}

#[test]
fn a_query_typed_during_a_first_index_runs_again_when_a_commit_lands() {
    use docdex::engine::protocol::IndexProgress;
    let mut h = Harness::new();
    h.pump_except(|r| matches!(r, Request::Index { .. }));
    let repo = h.repo.clone();
    h.engine_event(EngineEvent::IndexStarted { repo: repo.clone() });
    h.search("session");
    assert!(h.app.search().results().is_empty(), "nothing is indexed yet");
    // The run commits for real; its progress reaches the workbench, its end not yet.
    h.engine.index(&repo, &docdex::engine::IndexOptions::default(), &|_: &IndexProgress| {}).expect("index");
    let progress = |phase: &str| EngineEvent::IndexProgress {
        repo: repo.clone(),
        progress: IndexProgress {
            phase: phase.into(),
            files_done: 3,
            files_total: 5,
            bytes_done: 600,
            bytes_total: 1000,
            ..Default::default()
        },
    };
    h.engine_event(progress("indexing"));
    h.pump();
    assert!(h.app.search().results().is_empty(), "no commit landed yet, so no search ran again");
    // A large first index's text pass lands: every file answers, the parse goes on.
    h.engine_event(progress("committing"));
    h.engine_event(progress("parsing"));
    h.pump();
    assert_eq!(h.app.search().results().first().map(|r| r.path.as_str()), Some("src/auth/session.rs"));
    let s = h.screen(80, 24);
    assert!(shows(&s, "Every file is searchable; symbols and the impact graph are still being built."), "{s}");
    h.snap_both("tui_search_searchable_while_parsing");
}

#[test]
fn typing_while_indexing_fills_in_when_the_index_lands() {
    let mut h = Harness::new();
    // Start-up, but hold the index run back.
    h.pump_except(|r| matches!(r, Request::Index { .. }));
    let index_req = h.sent.iter().find(|r| matches!(r, Request::Index { .. })).cloned().expect("index requested");
    h.engine_event(EngineEvent::IndexStarted { repo: h.repo.clone() });
    h.search("session");
    assert!(h.app.search().results().is_empty(), "nothing is indexed yet");
    let s = h.screen(80, 24);
    assert!(shows(&s, "not indexed yet") || shows(&s, "Indexing is running"), "{s}");
    // The index finishes: the query runs again on its own and the hit appears.
    for e in docdex::tui::worker::run_sync(&h.engine, index_req) {
        h.engine_event(e);
    }
    h.pump();
    assert_eq!(h.app.search().results()[0].path, "src/auth/session.rs");
}

// ---------------------------------------------------------------------------------------------
// Impact

#[test]
fn impact_on_the_real_import_graph() {
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
    let model = h.app.impact().model().expect("a graph from Engine::impact");
    let centre = &model.view.nodes[model.view.center];
    assert_eq!(centre.id, "src/inventory/pricing.py");
    let store = model.view.find("src/inventory/store.py").expect("store.py is a neighbour");
    assert!(model.on_cycle(store) && model.on_cycle(model.view.center), "store.py <-> pricing.py is a cycle");
    // The factory `no-import-cycles` constraint (Engine::rule_marks) flags both, by name.
    for node in [store, model.view.center] {
        let rules: Vec<&str> = model.view.nodes[node].rules.iter().map(|f| f.rule.as_str()).collect();
        assert_eq!(rules, vec!["no-import-cycles"], "{:?}", model.view.nodes[node]);
    }
    assert!(shows(&h.screen(120, 40), "breaks `no-import-cycles`"));
    let s = h.screen(120, 40);
    assert!(shows(&s, "store.py"), "{s}");
    h.snap_both("tui_impact_python_fixture");
    // store.py both imports pricing.py and is imported by it: it is shown on both sides.
    assert_eq!(model.columns_of(store).len(), 2, "{:?}", model.columns);
    // Re-centre on store.py: the graph is asked for again, around it.
    let col = model.column_of(store).expect("shown");
    let idx = model.columns[col].iter().position(|&e| e == store).expect("in its column");
    let dir = if col > model.center_col { KeyCode::Right } else { KeyCode::Left };
    h.key(dir);
    h.key(KeyCode::Home);
    for _ in 0..idx {
        h.key(KeyCode::Down);
    }
    h.key(KeyCode::Enter);
    h.pump();
    let model = h.app.impact().model().expect("graph");
    assert_eq!(model.view.nodes[model.view.center].id, "src/inventory/store.py");
    assert!(
        model
            .view
            .nodes
            .iter()
            .any(|n| n.id == "requests" && n.kind == docdex::tui::widgets::graph::NodeKind::External),
        "{:?}",
        model.view.nodes
    );
}

#[test]
fn impact_follows_the_search_selection_and_navigates() {
    let mut h = Harness::with("").started();
    h.search("session");
    h.ctrl('g');
    let reqs = h.requests();
    let (seq, file, depth) = reqs
        .iter()
        .find_map(|r| match r {
            Request::Impact { seq, file, depth, .. } => Some((*seq, file.clone(), *depth)),
            _ => None,
        })
        .expect("impact asked for");
    assert_eq!((file.as_str(), depth), ("src/auth/session.rs", 1));
    h.engine_event(EngineEvent::Impact { seq, result: Ok(tui_samples::small_graph()) });
    let model = h.app.impact().model().expect("graph");
    assert_eq!(model.view.nodes[h.app.impact().cursor().node(model).expect("sel")].id, "src/auth/session.rs");
    // Depth up asks again with depth 2.
    h.key(KeyCode::Char('+'));
    let again = h.requests();
    assert!(matches!(again.as_slice(), [Request::Impact { depth: 2, .. }]), "{again:?}");
    let seq = match &again[0] {
        Request::Impact { seq, .. } => *seq,
        _ => 0,
    };
    h.engine_event(EngineEvent::Impact { seq, result: Ok(tui_samples::small_graph()) });
    // Move right to the imports and re-centre on the first one.
    h.key(KeyCode::Right);
    let model = h.app.impact().model().expect("graph");
    let target = model.view.nodes[h.app.impact().cursor().node(model).expect("sel")].id.clone();
    h.key(KeyCode::Enter);
    let recentre = h.requests();
    assert!(matches!(recentre.as_slice(), [Request::Impact { file, .. }] if *file == target), "{recentre:?}");
    // Back returns to the previous centre.
    h.key(KeyCode::Backspace);
    assert!(
        matches!(h.requests().as_slice(), [Request::Impact { file, .. }] if file == "src/auth/session.rs"),
        "history back"
    );
}

#[test]
fn impact_graph_snapshots_and_cycle_colour() {
    let mut h = Harness::with("").started();
    h.search("session");
    h.ctrl('g');
    h.answer_impact(tui_samples::small_graph());
    h.snap_both("tui_impact_graph");
    // The cycle partner (store.rs) is drawn in the theme's danger colour.
    let danger = docdex::tui::theme::Theme::embedded("dark", false).expect("dark").expect("ok").style(Slot::GraphCycle);
    let buf = h.buffer(120, 40);
    let s = crate::tui_support::text(&buf);
    let (row, line) = s.lines().enumerate().find(|(_, l)| l.contains("store.rs")).expect("store.rs drawn");
    let col = line.find("store.rs").expect("col");
    let col = line[..col].chars().count() as u16;
    assert_eq!(buf[(col, row as u16)].fg, danger.fg.expect("danger fg"));
    // Risk overlay off hides the marks.
    h.key(KeyCode::Char('r'));
    assert!(shows(&h.screen(120, 40), "risk overlay off"));
}

#[test]
fn impact_risk_overlay_names_the_constraint_rules_broken() {
    let mut h = Harness::with("").started();
    h.search("session");
    h.ctrl('g');
    h.answer_impact(tui_samples::ruled_graph());
    h.snap_both("tui_impact_rules");
    let s = h.screen(120, 40);
    // The centre is selected: its details line names the rule it breaks.
    assert!(shows(&s, "breaks `no-import-cycles`"), "{s}");
    assert!(shows(&s, "⊘"), "{s}");
    // The file importing moment carries the rule's mark in the warning colour.
    let risk = docdex::tui::theme::Theme::embedded("dark", false).expect("dark").expect("ok").style(Slot::GraphRisk);
    let buf = h.buffer(120, 40);
    let text = crate::tui_support::text(&buf);
    let (row, line) = text.lines().enumerate().find(|(_, l)| l.contains("handlers.rs")).expect("handlers.rs drawn");
    let col = line.find("✖").expect("the forbidden-import mark on handlers.rs");
    let col = line[..col].chars().count() as u16;
    assert_eq!(buf[(col, row as u16)].fg, risk.fg.expect("risk fg"));
    // Off: no marks, no rule names.
    h.key(KeyCode::Char('r'));
    let s = h.screen(120, 40);
    assert!(!shows(&s, "✖") && !shows(&s, "breaks `"), "{s}");
    h.key(KeyCode::Char('r'));
    // A file that breaks both kinds of rule shows both marks: one never hides the other.
    let mut both = tui_samples::ruled_graph();
    let forbid = both.nodes[2].rules[0].clone();
    both.nodes[3].rules.push(forbid);
    h.key(KeyCode::Char('+'));
    h.answer_impact(both);
    let s = h.screen(120, 40);
    let store = s.lines().find(|l| l.contains("store.rs")).expect("store.rs drawn");
    assert!(store.contains('✖') && store.contains('⊘'), "{store}");
}

#[test]
fn impact_with_200_nodes() {
    let mut h = Harness::with("").started();
    h.search("session");
    h.ctrl('g');
    h.key(KeyCode::Char('+'));
    h.key(KeyCode::Char('+'));
    h.answer_impact(tui_samples::large_graph(200));
    let model = h.app.impact().model().expect("graph");
    // Every file is counted (a file on a cycle with the centre on both sides), and no column
    // draws more than GROUP_OVER entries: the rest are folder groups.
    let counted: usize = (0..model.columns.len()).map(|c| model.count(c)).sum();
    assert!(counted >= 200, "{counted}");
    assert!(model.columns.iter().all(|c| c.len() <= GROUP_OVER), "{:?}", model.columns);
    let s = h.screen(120, 40);
    assert!(s.contains("▸ "), "folder groups are drawn: {s}");
    h.snap_both("tui_impact_200");
    // Narrow columns keep each header's level and count (`◀·3 (40)`), not a cut word.
    for w in [140, 160] {
        let s = h.screen(w, 40);
        let header = s.lines().find(|l| l.contains("centre")).unwrap_or_default().to_string();
        assert!(!header.contains('…'), "{w}: {header}");
        assert!(header.matches(" (").count() >= 4, "{w}: each side column shows its count: {header}");
    }
}

#[test]
fn impact_of_a_file_with_72_importers_is_grouped_by_folder() {
    let mut h = Harness::with("").started();
    h.search("session");
    h.ctrl('g');
    h.answer_impact(tui_samples::fan_in_graph());
    let model = h.app.impact().model().expect("graph");
    assert_eq!(model.count(0), 72);
    assert!(model.columns[0].len() <= GROUP_OVER);
    let s = h.screen(120, 40);
    assert!(shows(&s, "importers (72)"), "{s}");
    assert!(shows(&s, "multi_thread/ (7)"), "{s}");
    assert!(shows(&s, "more"), "the smallest folders fold into +N more: {s}");
    assert!(shows(&s, "imported by 72:"), "the centre's details agree with the header: {s}");
    // loom/std/mod.rs imports the centre and is imported by it: on both sides, in the danger
    // colour; files on other cycles keep the normal colour (their ↻ mark says it).
    let std_mod = model.view.find("tokio/src/loom/std/mod.rs").expect("std/mod.rs");
    // (On the left it is inside its folder's group, which carries the colour.)
    assert!(model.on_centre_cycle(std_mod) && model.columns_of(std_mod) == [model.center_col + 1]);
    let group = model.columns[0].iter().copied().find(|&e| model.members(e).contains(&std_mod)).expect("its group");
    assert!(model.on_centre_cycle(group));
    h.snap_both("tui_impact_fan_in");
    // Enter on a group lists its files in place; the count stays.
    h.key(KeyCode::Left);
    let model = h.app.impact().model().expect("graph");
    let first_group =
        model.columns[0].iter().position(|&e| model.view.nodes[e].kind == NodeKind::Group).expect("a group");
    let members: Vec<String> =
        model.members(model.columns[0][first_group]).iter().map(|&m| model.view.nodes[m].id.clone()).collect();
    h.key(KeyCode::Home);
    for _ in 0..first_group {
        h.key(KeyCode::Down);
    }
    h.key(KeyCode::Enter);
    let model = h.app.impact().model().expect("graph");
    let shown: Vec<&str> = model.columns[0].iter().map(|&e| model.view.nodes[e].id.as_str()).collect();
    assert!(members.iter().all(|m| shown.contains(&m.as_str())), "{members:?} in {shown:?}");
    assert_eq!(model.count(0), 72);
    let sel = h.app.impact().cursor().node(model).expect("selection");
    assert_eq!(model.view.nodes[sel].kind, NodeKind::File, "the cursor is on the group's first file");
    assert!(h.app.impact().center() == Some("src/auth/session.rs"), "expanding does not re-centre");
}

#[test]
fn impact_counts_agree_with_docdex_impact_json() {
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
    for depth in 1..=2u32 {
        if depth == 2 {
            h.key(KeyCode::Char('+'));
            h.pump();
        }
        let repo = h.repo.display().to_string();
        let d = depth.to_string();
        let json =
            h.env.json(&["impact", "--repo", &repo, "--file", "src/inventory/pricing.py", "--depth", &d, "--json"]);
        let model = h.app.impact().model().expect("graph");
        assert_eq!(h.app.impact().depth(), depth);
        for level in 1..=depth as usize {
            let at = |side: &str| {
                json[side].as_array().expect(side).iter().filter(|x| x["depth"].as_u64() == Some(level as u64)).count()
            };
            assert_eq!(model.count(model.center_col - level), at("inbound"), "importers at depth {level}: {json}");
            assert_eq!(model.count(model.center_col + level), at("outbound"), "imports at depth {level}: {json}");
            let s = h.screen(120, 40);
            if level == 1 {
                assert!(shows(&s, &format!("importers ({})", at("inbound"))), "{s}");
                assert!(shows(&s, &format!("imported by {}", at("inbound"))), "{s}");
                assert!(shows(&s, &format!("imports {}", at("outbound"))), "{s}");
            }
        }
    }
}

#[test]
fn impact_columns_scroll_with_the_selection() {
    use docdex::tui::widgets::graph::{GraphEdge, GraphNode, GraphView, NodeKind};
    let mut h = Harness::with("").started();
    h.search("session");
    h.ctrl('g');
    // Sixty files import the centre.
    let node =
        |id: String| GraphNode { id, kind: NodeKind::File, unresolved_imports: 0, in_cycle: false, rules: Vec::new() };
    let mut nodes = vec![node("src/auth/session.rs".into())];
    nodes.extend((1..=60).map(|i| node(format!("src/users/u{i:02}.rs"))));
    let edges = (1..=60).map(|i| GraphEdge { from: i, to: 0, confidence: 1.0 }).collect();
    h.answer_impact(GraphView { nodes, edges, center: 0, depth: 1, cut: [false; 2], rules_error: None });
    // Sixty files of one folder are one group; enter lists them in the column, which scrolls.
    let grouped = h.screen(80, 24);
    assert!(shows(&grouped, "▸ src/users/ (60)"), "{grouped}");
    h.key(KeyCode::Left);
    h.key(KeyCode::Enter);
    let top = h.screen(80, 24);
    assert!(shows(&top, "↓") && !shows(&top, "↑"), "{top}");
    for _ in 0..30 {
        h.key(KeyCode::Down);
        let _ = h.screen(80, 24);
    }
    let s = h.screen(80, 24);
    assert!(s.contains('↑') && s.contains('↓'), "scroll markers: {s}");
    assert!(shows(&s, "u31.rs"), "the selection stays in view: {s}");
    snap("tui_impact_scrolled_80x24", &s);
}

// ---------------------------------------------------------------------------------------------
// Chat, trace, DAG, profile

#[test]
fn chat_without_a_model_explains_setup_and_search_still_works() {
    let mut h = Harness::new().started();
    h.alt('3');
    assert_eq!(h.requests(), vec![Request::CheckProvider], "opening chat checks the model again");
    h.pump();
    let s = h.screen(120, 40);
    assert!(shows(&s, "The model is not available"), "{s}");
    assert!(shows(&s, "ollama pull phi3.5:3.8b"), "{s}");
    h.snap_both("tui_chat_no_model");
    h.typ("how are sessions expired?");
    h.key(KeyCode::Enter);
    let reqs = h.requests();
    assert!(
        matches!(reqs.as_slice(), [Request::Chat { turn: 1, query, history, session_id: None, repo }]
            if history.is_empty() && query == "how are sessions expired?" && *repo == h.repo),
        "{reqs:?}"
    );
    for r in reqs {
        for e in docdex::tui::worker::run_sync(&h.engine, r) {
            h.engine_event(e);
        }
    }
    // The turn still ran the waterfall: the engine's explanation, and the sources it found.
    let s = h.screen(120, 40);
    assert!(shows(&s, "No answer: cannot reach the ollama server"), "{s}");
    let notice = &h.app.chat().cells().last().expect("notice").text;
    assert!(notice.contains("`docdex llm-setup`") && notice.contains("`docdex check`"), "{notice}");
    assert!(shows(&s, "src/auth/session.rs:1-6 (in context)"), "{s}");
    assert!(h.app.chat().session_id().is_some(), "the turn was logged in a DAG session");
    h.snap_both("tui_chat_no_model_turn");
    // Search still works.
    h.alt('2');
    h.search("session");
    assert_eq!(h.app.search().results()[0].path, "src/auth/session.rs");
}

#[test]
fn chat_setup_help_is_true_of_the_model_name_and_the_provider() {
    // A model built here from a Modelfile cannot be pulled; an OpenAI-compatible server has
    // nothing to pull at all. The help said `ollama pull M` for both.
    let mut h = Harness::with("").started();
    let unavailable = |provider: &str, model: &str| {
        EngineEvent::Provider(docdex::tui::event::ProviderStatus {
            provider: provider.into(),
            model: model.into(),
            state: ProviderState::Unavailable("model not found".into()),
        })
    };
    h.alt('3');
    h.pump();
    h.engine_event(unavailable("ollama", "mymodel:latest"));
    let s = h.screen(120, 40);
    assert!(shows(&s, "ollama create mymodel:latest -f Modelfile"), "{s}");
    assert!(!shows(&s, "then ollama pull mymodel:latest"), "{s}");
    h.engine_event(unavailable("openai", "gpt-4o"));
    let s = h.screen(120, 40);
    assert!(shows(&s, "start the server with a chat model"), "{s}");
    assert!(!s.contains("ollama pull") && !s.contains("ollama serve"), "{s}");
}

#[test]
fn chat_streams_markdown_line_by_line_and_jumps_to_citations() {
    let mut h = Harness::with("").started();
    h.engine_event(EngineEvent::Provider(docdex::tui::event::ProviderStatus {
        provider: "ollama".into(),
        model: "phi3.5:3.8b".into(),
        state: ProviderState::Ready,
    }));
    h.alt('3');
    h.typ("where are sessions expired?");
    h.key(KeyCode::Enter);
    let turn = match h.requests().as_slice() {
        [Request::Chat { turn, .. }] => *turn,
        other => panic!("{other:?}"),
    };
    let token =
        |h: &mut Harness, t: &str| h.engine_event(EngineEvent::Chat(ChatUpdate::Token { turn, text: t.into() }));
    token(&mut h, "## Session expiry\nSessions expire in ");
    token(&mut h, "`SessionStore` [1].\n```rust\nfn expire_stale_");
    let mid = h.screen(120, 40);
    assert!(shows(&mid, "Session expiry"), "{mid}");
    assert!(!mid.contains("## "), "markup never shows raw: {mid}");
    assert!(shows(&mid, "│ fn expire_stale_"), "the line being written shows, as code: {mid}");
    assert!(!mid.contains("```"), "fences never show: {mid}");
    h.snap_both("tui_chat_streaming");
    token(&mut h, "sessions(&mut self) {}\n```\n- one\n- two\n");
    h.engine_event(EngineEvent::Chat(ChatUpdate::Done {
        turn,
        session_id: Some("s-1".into()),
        citations: vec![Citation {
            path: "src/auth/session.rs".into(),
            line_start: 4,
            line_end: 6,
            cited: false,
            url: None,
        }],
        stopped: false,
        unavailable: None,
    }));
    let done = h.screen(120, 40);
    assert!(shows(&done, "│ fn expire_stale_sessions(&mut self) {}"), "{done}");
    assert!(shows(&done, "• one"), "{done}");
    h.snap_both("tui_chat_done");
    // Select the citation and open it: the search preview shows that file at that line.
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char('n'));
    h.key(KeyCode::Char('o'));
    assert_eq!(h.app.focus(), PaneId::Search);
    let reqs = h.requests();
    assert!(
        reqs.iter().any(|r| matches!(r, Request::Preview { path, line: 4, .. } if path == "src/auth/session.rs")),
        "{reqs:?}"
    );
    for r in reqs {
        for e in docdex::tui::worker::run_sync(&h.engine, r) {
            h.engine_event(e);
        }
    }
    let s = h.screen(120, 40);
    assert!(shows(&s, "src/auth/session.rs:4"), "{s}");
}

/// The Chat pane after one question ("first question"), answered ("first answer") in session
/// "first"; with the turn's number.
fn first_turn_answered() -> (Harness, u64) {
    let mut h = Harness::new().started();
    h.alt('3');
    h.pump();
    h.typ("first question");
    h.key(KeyCode::Enter);
    let turn = match h.requests().as_slice() {
        [Request::Chat { turn, .. }] => *turn,
        other => panic!("{other:?}"),
    };
    h.engine_event(EngineEvent::Chat(ChatUpdate::Token { turn, text: "first answer\n".into() }));
    h.engine_event(EngineEvent::Chat(ChatUpdate::Done {
        turn,
        session_id: Some("first".into()),
        citations: vec![],
        stopped: false,
        unavailable: None,
    }));
    (h, turn)
}

#[test]
fn chat_sessions_of_this_run_can_be_revisited() {
    let (mut h, turn) = first_turn_answered();
    // In the message box ctrl+e is end of line (readline); alt+n starts a new conversation.
    h.alt('n');
    assert_eq!(h.app.chat().session(), (1, 2));
    assert!(shows(&h.screen(80, 24), "session 2 of 2 · 0 turns"));
    h.typ("second question");
    h.key(KeyCode::Enter);
    let reqs = h.requests();
    // The new conversation starts empty, in a new DAG session (the first turn's session was
    // loaded into the DAG pane when it ended).
    assert!(
        matches!(reqs.as_slice(), [Request::LoadDag { session: Some(first), .. }, Request::Chat { history, session_id: None, .. }]
            if history.is_empty() && first == "first"),
        "{reqs:?}"
    );
    h.key_mod(KeyCode::Left, KeyModifiers::ALT);
    assert_eq!(h.app.chat().session(), (0, 2));
    // Pieces of the answer that was cut off when switching do not leak into this session.
    h.engine_event(EngineEvent::Chat(ChatUpdate::Token { turn: turn + 1, text: "late piece\n".into() }));
    let s = h.screen(80, 24);
    assert!(shows(&s, "first answer") && shows(&s, "session 1 of 2 · 1 turn"), "{s}");
    assert!(!shows(&s, "late piece"), "{s}");
}

#[test]
fn stop_generation_sends_a_stop() {
    let mut h = Harness::new().started();
    h.alt('3');
    h.pump();
    h.typ("hi");
    h.key(KeyCode::Enter);
    let turn = match h.requests().as_slice() {
        [Request::Chat { turn, .. }] => *turn,
        other => panic!("{other:?}"),
    };
    h.engine_event(EngineEvent::Chat(ChatUpdate::Token { turn, text: "partial ".into() }));
    h.ctrl('s');
    assert_eq!(h.requests(), vec![Request::StopChat { turn }]);
    h.engine_event(EngineEvent::Chat(ChatUpdate::Done {
        turn,
        session_id: None,
        citations: vec![],
        stopped: true,
        unavailable: None,
    }));
    assert!(shows(&h.screen(80, 24), "Stopped turn 1"), "{}", h.screen(80, 24));
}

#[test]
fn a_model_failing_part_way_keeps_the_partial_answer_and_the_session() {
    let mut h = Harness::new().started();
    h.alt('3');
    h.pump();
    h.typ("first");
    h.key(KeyCode::Enter);
    let turn = match h.requests().as_slice() {
        [Request::Chat { turn, .. }] => *turn,
        other => panic!("{other:?}"),
    };
    h.engine_event(EngineEvent::Chat(ChatUpdate::Token { turn, text: "half an ans".into() }));
    h.engine_event(EngineEvent::Chat(ChatUpdate::Failed {
        turn,
        session_id: Some("s-9".into()),
        message: "the stream broke".into(),
    }));
    let s = h.screen(80, 24);
    assert!(shows(&s, "half an ans") && shows(&s, "This turn failed: the stream broke"), "{s}");
    assert!(!h.app.chat().streaming());
    // The failed turn was logged: its session shows in the DAG pane and the next turn continues it.
    assert_eq!(h.requests(), vec![Request::LoadDag { repo: h.repo.clone(), session: Some("s-9".into()) }]);
    h.typ("again");
    h.key(KeyCode::Enter);
    let reqs = h.requests();
    assert!(
        matches!(reqs.as_slice(), [Request::Chat { session_id: Some(id), history, .. }]
            if id == "s-9" && history.len() == 2
                && history[1].content == format!("half an ans{}", docdex::engine::protocol::CUT_OFF_MARK)),
        "{reqs:?}"
    );
}

#[test]
fn trace_snapshots() {
    let mut h = Harness::new().started();
    h.alt('4');
    assert!(shows(&h.screen(80, 24), "No chat turns yet"));
    h.snap_both("tui_trace_empty");
    h.engine_event(EngineEvent::Trace(tui_samples::trace()));
    let s = h.screen(120, 40);
    assert!(shows(&s, "0.62 < 0.70"), "{s}");
    assert!(shows(&s, "1,310 / 1,024"), "{s}");
    h.snap_both("tui_trace");
}

#[test]
fn the_trace_scrolls_no_further_than_its_last_line_and_bottom_is_a_key() {
    let mut h = Harness::new().started();
    h.alt('4');
    h.engine_event(EngineEvent::Trace(tui_samples::trace()));
    let top = h.screen(80, 24);
    h.key(KeyCode::Char('G'));
    let bottom = h.screen(80, 24);
    assert_ne!(top, bottom, "G scrolls to the end");
    assert!(!h.app.notice().unwrap_or_default().contains("not a key"), "{:?}", h.app.notice());
    for _ in 0..20 {
        h.key(KeyCode::PageDown);
    }
    assert_eq!(h.screen(80, 24), bottom, "page down stops at the last line");
    h.key(KeyCode::Char('g'));
    assert_eq!(h.screen(80, 24), top);
}

#[test]
fn a_new_conversation_shows_no_trace_of_the_last_one() {
    let (mut h, turn) = first_turn_answered();
    let mut trace = tui_samples::trace();
    trace.turn = turn;
    h.engine_event(EngineEvent::Trace(trace));
    h.pump();
    h.alt('4');
    assert!(shows(&h.screen(120, 40), "turn 1 of 1"));
    h.alt('3');
    h.alt('n');
    h.pump();
    h.alt('4');
    let s = h.screen(120, 40);
    assert!(shows(&s, "No turn in this conversation yet") && !shows(&s, "turn 1 of 1"), "{s}");
    // The earlier turn is a key away.
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char('['));
    assert!(shows(&h.screen(120, 40), "turn 1 of 1"));
}

#[test]
fn dag_snapshots() {
    let mut h = Harness::new().started();
    h.alt('5');
    let reqs = h.requests();
    assert_eq!(reqs, vec![Request::LoadDag { repo: h.repo.clone(), session: None }], "focus loads the sessions");
    for r in reqs {
        for e in docdex::tui::worker::run_sync(&h.engine, r) {
            h.engine_event(e);
        }
    }
    assert!(shows(&h.screen(80, 24), "No reasoning sessions yet"), "{}", h.screen(80, 24));
    h.snap_both("tui_dag_empty");
    h.engine_event(EngineEvent::Dag(Ok(tui_samples::dag())));
    h.key(KeyCode::Down);
    h.snap_both("tui_dag_tree");
    let picked = h.app.dag().selected_node().map(str::to_string);
    h.key(KeyCode::Char('t'));
    h.snap_both("tui_dag_layers");
    // Switching views keeps the node selected, not the row number.
    assert_eq!(h.app.dag().selected_node().map(str::to_string), picked);
    for _ in 0..3 {
        h.key(KeyCode::Down);
    }
    let picked = h.app.dag().selected_node().map(str::to_string);
    h.key(KeyCode::Char('t'));
    assert_eq!(h.app.dag().selected_node().map(str::to_string), picked);
}

#[test]
fn quit_from_any_pane() {
    for pane in ['1', '3', '4', '5', '6', '7'] {
        let mut h = Harness::new().started();
        h.alt(pane);
        h.key(KeyCode::Esc);
        h.ctrl('c');
        assert!(h.app.should_quit(), "pane {pane}");
    }
    let mut h = Harness::new().started();
    h.typ("q");
    assert!(!h.app.should_quit(), "q types into the query box");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char('q'));
    assert!(!h.app.should_quit(), "a letter asks first");
    h.key(KeyCode::Char('y'));
    assert!(h.app.should_quit());
}

#[test]
fn impact_outlines_what_the_selected_node_links_to() {
    let mut h = Harness::with("").started();
    h.search("session");
    h.ctrl('g');
    h.answer_impact(tui_samples::small_graph());
    let theme = docdex::tui::theme::Theme::embedded("dark", false).expect("dark").expect("ok");
    let highlight = theme.style(Slot::GraphEdgeHighlight).fg.expect("highlight fg");
    // The left border of the box a label is drawn in.
    let border_fg = |h: &Harness, label: &str| {
        let buf = h.buffer(120, 40);
        let s = crate::tui_support::text(&buf);
        // (Below the tab bar and the pane's title, which names the centre.)
        let (row, line) = s.lines().enumerate().skip(2).find(|(_, l)| l.contains(label)).expect("label drawn");
        let at = line[..line.find(label).expect("col")].chars().count();
        let left = line.chars().take(at).collect::<Vec<_>>().iter().rposition(|&c| c == '│').expect("box") as u16;
        buf[(left, row as u16)].fg
    };
    // With the centre selected nothing is outlined.
    assert_ne!(border_fg(&h, "time.rs"), highlight);
    // Select an importer: the centre it imports is outlined, the others are not.
    h.key(KeyCode::Left);
    let model = h.app.impact().model().expect("graph");
    let sel = h.app.impact().cursor().node(model).expect("selection");
    assert_ne!(sel, model.view.center);
    assert_eq!(border_fg(&h, "session.rs"), highlight, "the centre it links to is outlined");
    assert_ne!(border_fg(&h, "time.rs"), highlight, "an entry it does not link to is not");
}

/// A hub imported by more files than the engine's node limit: the importers' header read
/// `(2000)` and the centre's details `imported by 2000`, as if that were all of them.
#[test]
fn impact_of_a_hub_cut_at_the_node_limit_says_the_count_is_a_lower_bound() {
    let mut h = Harness::with("").started();
    h.search("session");
    h.ctrl('g');
    h.answer_impact(tui_samples::cut_hub_graph());
    let model = h.app.impact().model().expect("graph");
    assert!(model.cut(model.center_col - 1) && !model.cut(model.center_col + 1));
    let s = h.screen(120, 40);
    assert!(shows(&s, "importers (2000+)"), "{s}");
    assert!(shows(&s, "imported by 2000+:"), "{s}");
    assert!(shows(&s, "imports (1)") && !shows(&s, "imports (1+)"), "{s}");
    h.snap_both("tui_impact_cut");
}

/// A profile database that cannot be read left the risk overlay "on" with no rule marks and
/// no word why (the error went to a debug log): it looked as if no rule were broken.
#[test]
fn impact_risk_overlay_says_when_the_constraint_rules_cannot_be_read() {
    let damaged = "this is not a database, whatever its name says; ".repeat(100);
    let mut h = Harness::with_files("", &[("state/profiles/main.db", &damaged)]).started();
    h.search("session");
    h.ctrl('g');
    h.pump();
    let model = h.app.impact().model().expect("the graph is drawn without the rules");
    let why = model.view.rules_error.clone().unwrap_or_default();
    assert!(why.contains("main.db"), "the error names the file: {why:?}");
    assert!(shows(&h.screen(120, 40), "constraint rules not checked"));
    // The same notice on a fixed graph, for the snapshot (the real error names a temp path).
    h.key(KeyCode::Char('+'));
    let mut view = tui_samples::small_graph();
    view.rules_error = Some("database ~/.docdex/state/profiles/main.db: file is not a database".into());
    h.answer_impact(view);
    h.snap_both("tui_impact_rules_unreadable");
}

/// `enter` on a hit from a folder added with `docdex add` opens the file in that folder: the
/// hit's key (`//notes/heron.md`) was joined to the repository, which opened `/notes/heron.md`
/// at the filesystem's root (the engine's `editable_path` also refuses PDF and DOCX:
/// `sources::the_editable_path_of_a_key_is_the_file_on_disk_beneath_its_root`).
#[test]
fn enter_on_a_source_folders_hit_opens_the_file_where_it_is() {
    use docdex::engine::protocol::AddSourceRequest;
    let mut h = Harness::new().started();
    let notes = h.env.repo("notes");
    crate::util::write(&notes, "heron.md", "# Field notes\n\nThe heron migration starts in early spring.\n");
    let add = AddSourceRequest { path: notes.clone(), ..Default::default() };
    h.engine.add_source(&h.repo, &add).expect("add");
    h.engine.index(&h.repo, &docdex::engine::IndexOptions::default(), &crate::util::quiet()).expect("index");
    h.search("heron migration");
    let hit = h.app.search().results()[0].clone();
    assert_eq!(hit.path, "//notes/heron.md");
    h.key(KeyCode::Enter);
    h.pump();
    let line = docdex::tui::panes::search::best_line(&hit);
    let real = std::fs::canonicalize(notes.join("heron.md")).unwrap();
    assert_eq!(h.app.take_effects(), vec![Effect::OpenEditor { path: real, line }]);
}

/// A current repository deleted while the workbench runs: the Repos list still refreshes,
/// showing it missing and a repository added since (the whole list failed to load, so the
/// pane froze on its last rows and said nothing).
#[test]
fn the_repos_list_refreshes_after_the_current_repository_is_deleted() {
    let h = Harness::new().started();
    let other = h.env.repo("other");
    crate::util::write(&other, "lib.rs", "fn other() {}\n");
    h.engine.index(&other, &docdex::engine::IndexOptions::default(), &crate::util::quiet()).expect("index");
    std::fs::remove_dir_all(&h.repo).expect("delete the current repository");
    let rows = h.engine.repo_overviews(Some(&h.repo)).expect("the list loads");
    let gone = rows.iter().find(|r| r.path == h.repo).expect("the deleted one is listed");
    assert!(!gone.exists, "listed as missing");
    let other = std::fs::canonicalize(&other).unwrap();
    assert!(rows.iter().any(|r| r.path == other), "the one added since is listed");
}

/// tour29 F1: the current repository's folder deleted while the workbench runs. The Repos pane
/// listed it `missing`, but the status bar kept `● ready 5 files` (the index is still there),
/// so search and chat failing with "does not exist" came with a bar saying all was well. The
/// bar says the folder is gone and where to pick another.
#[test]
fn the_status_bar_says_when_the_current_repositorys_folder_is_gone() {
    let mut h = Harness::new().started();
    assert!(shows(&h.screen(120, 40), "● ready"), "{}", h.screen(120, 40));
    std::fs::remove_dir_all(&h.repo).expect("delete the current repository");
    h.wait(2_100);
    h.pump();
    let s = h.screen(120, 40);
    assert!(!shows(&s, "● ready"), "a deleted folder is not ready: {s}");
    assert!(shows(&s, "✗ folder missing"), "{s}");
    assert!(shows(&h.screen(80, 24), "missing") && !shows(&h.screen(80, 24), "● ready"), "{}", h.screen(80, 24));
}

/// tour29 F2: a citation of a deep path was cut at the pane's edge with no mark, so its file
/// name and lines, the part that tells citations apart, were the part lost (the answer above
/// it wraps). It is cut from the left with `…`; a web page's address keeps its site.
#[test]
fn a_long_citation_keeps_its_file_name_and_lines() {
    let mut h = Harness::with("").started();
    h.alt('3');
    h.typ("where is the session opened?");
    h.key(KeyCode::Enter);
    let turn = h
        .requests()
        .iter()
        .find_map(|r| if let Request::Chat { turn, .. } = r { Some(*turn) } else { None })
        .expect("a chat request");
    let deep = format!("src/{}open_database_session.rs", "deeply/nested/directory/".repeat(6));
    let url = format!("https://docs.example.org/{}", "guides/sessions/".repeat(8));
    h.engine_event(EngineEvent::Chat(ChatUpdate::Token { turn, text: "It opens here [1].".into() }));
    h.engine_event(EngineEvent::Chat(ChatUpdate::Done {
        turn,
        session_id: Some("s-1".into()),
        citations: vec![
            Citation { path: deep.clone(), line_start: 12, line_end: 30, cited: true, url: None },
            Citation { path: String::new(), line_start: 0, line_end: 0, cited: false, url: Some(url) },
        ],
        stopped: false,
        unavailable: None,
    }));
    for (w, h_) in [(80, 24), (120, 40)] {
        let s = h.screen(w, h_);
        assert!(shows(&s, "[1] …"), "{s}");
        assert!(shows(&s, "open_database_session.rs:12-30"), "the file name and lines stay: {s}");
        assert!(shows(&s, "[2] https://docs.example.org/guides/"), "a web page keeps its site: {s}");
        assert!(shows(&s, "… (in context)"), "{s}");
    }
}

/// tour29 F5: a first index run killed after its first commit (the workbench quit, or the
/// process killed, while a large repository was parsing) leaves a searchable index whose
/// registry record was never counted (it is written when a run ends). The Repos pane listed it
/// `ready · 0 files · 0 chunks · never` while `docdex status` said 3,380 files and search found
/// them. The overview counts such an index from its manifest.
#[test]
fn a_first_index_killed_after_its_commit_is_listed_with_its_files() {
    let mut h = Harness::new().started();
    let repo = h.repo.clone();
    let files = h.engine.status(&repo).expect("status").documents;
    assert!(files > 0);
    // The registry as the killed run left it: registered at its start, never counted.
    let registry = h.env.home().join("state/registry.json");
    let mut reg: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&registry).unwrap()).unwrap();
    for r in reg["repos"].as_array_mut().unwrap() {
        r["last_indexed_ms"] = serde_json::Value::Null;
        r["files"] = 0.into();
        r["chunks"] = 0.into();
    }
    std::fs::write(&registry, reg.to_string()).expect("registry");
    let rows = h.engine.repo_overviews(Some(&repo)).expect("overviews");
    let row = rows.iter().find(|r| r.path == repo).expect("listed");
    assert_eq!(row.files, files, "counted from the index: {row:?}");
    assert!(row.chunks > 0, "{row:?}");
    h.engine_event(EngineEvent::Repos(Ok(rows)));
    h.alt('1');
    let s = h.screen(120, 40);
    let line = s.lines().find(|l| l.contains("ready") && l.contains("fixture")).expect("listed");
    assert!(!line.contains(" 0 ") && !line.contains("never"), "{line}");
}
