//! The "Smaller" list (issue 20): language aliases and completion in the language
//! filter, a reopened filter that typing replaces, Tab completion of paths (the path filter
//! inside the repository, the add-repo prompt on the filesystem), a citation jump that does not
//! leave the old query's hits in the list, symbol search with no hits and no stale preview,
//! plural forms, and a tab bar that never drops a pane at 60 columns.

use crate::tui_support::{shows, Harness};
use crossterm::event::KeyCode;
use docdex::engine::protocol::SearchRequest;
use docdex::tui::event::Request;

/// The results frame's title line (the row under the query box) at 120x40.
fn results_title(h: &Harness) -> String {
    h.screen(120, 40).lines().nth(4).unwrap_or_default().to_string()
}

fn last_search(h: &Harness) -> Option<SearchRequest> {
    h.sent.iter().rev().find_map(|r| match r {
        Request::Search { req, more: false, .. } => Some(req.clone()),
        _ => None,
    })
}

#[test]
fn the_language_filter_takes_py_for_python_and_says_what_it_became() {
    // `ctrl+l` then `py` gave 0 hits with no hint that the language is `python`.
    let mut h = Harness::new().started();
    h.search("parse configuration");
    assert!(h.app.search().results().iter().any(|r| r.path == "src/parser.py"));
    h.ctrl('l');
    h.typ("py");
    // The prompt offers the name as you type.
    let s = h.screen(80, 24);
    assert!(shows(&s, "tab: python"), "{s}");
    h.key(KeyCode::Enter);
    h.pump();
    assert_eq!(h.app.search().filters().1, Some("python"), "the chip shows the real name");
    assert_eq!(last_search(&h).and_then(|r| r.lang).as_deref(), Some("python"));
    assert!(!h.app.search().results().is_empty(), "py finds the Python file");
    assert!(h.app.search().results().iter().all(|r| r.lang == "python"));
    assert!(shows(&h.screen(120, 40), "lang:python"));
    // The engine takes the alias from any surface (the CLI's --lang py, HTTP, MCP).
    for alias in ["py", ".py", "Python", "python3"] {
        let req = SearchRequest { query: "parse configuration".into(), lang: Some(alias.into()), ..Default::default() };
        let resp = h.engine.search(&h.repo, &req).expect("search");
        assert!(resp.results.iter().any(|r| r.path == "src/parser.py"), "{alias}: {:?}", resp.results);
    }
}

#[test]
fn tab_completes_a_language_and_an_unknown_one_is_refused_with_a_hint() {
    let mut h = Harness::new().started();
    h.search("dashboard");
    h.ctrl('l');
    h.typ("typ");
    h.key(KeyCode::Tab);
    assert!(shows(&h.screen(80, 24), "› typescript"), "{}", h.screen(80, 24));
    // `j` is the start of javascript, jsx, json, julia, just: tab first completes their common
    // prefix, then cycles through them.
    h.ctrl('u');
    h.typ("ju");
    h.key(KeyCode::Tab);
    let first = h.screen(80, 24);
    assert!(shows(&first, "› julia"), "{first}");
    h.key(KeyCode::Tab);
    assert!(shows(&h.screen(80, 24), "› just"), "{}", h.screen(80, 24));
    h.ctrl('u');
    h.typ("pyhton");
    h.key(KeyCode::Enter);
    assert!(h.app.prompt_open(), "an unknown language is not applied silently");
    let s = h.screen(80, 24);
    assert!(shows(&s, "`pyhton` is no language docdex indexes"), "{s}");
    assert!(shows(&s, "python"), "the hint names what was probably meant: {s}");
    h.key(KeyCode::Esc);
    assert_eq!(h.app.search().filters().1, None);
}

#[test]
fn reopening_a_filter_shows_it_selected_and_typing_replaces_it() {
    // Reopening the filter prefilled it with the cursor at the end: `lang:htmlpy`.
    let mut h = Harness::new().started();
    h.search("session");
    h.ctrl('l');
    h.typ("html");
    h.key(KeyCode::Enter);
    h.pump();
    assert_eq!(h.app.search().filters().1, Some("html"));
    h.ctrl('l');
    assert!(shows(&h.screen(80, 24), "› html"), "the current filter is shown");
    h.typ("rs");
    h.key(KeyCode::Enter);
    h.pump();
    assert_eq!(h.app.search().filters().1, Some("rust"), "typing replaced it (and rs is rust)");
    // A movement key keeps the text to edit.
    h.key_mod(KeyCode::Char('f'), crossterm::event::KeyModifiers::ALT);
    h.key(KeyCode::Esc);
    h.ctrl('f');
    h.typ("src/");
    h.key(KeyCode::Enter);
    h.ctrl('f');
    h.key(KeyCode::End);
    h.typ("auth");
    h.key(KeyCode::Enter);
    h.pump();
    assert_eq!(h.app.search().filters().0, Some("src/auth"));
}

#[test]
fn symbol_search_with_no_hits_clears_the_preview() {
    let mut h = Harness::new().started();
    h.ctrl('t');
    h.search("SessionStore");
    let s = h.screen(120, 40);
    assert!(shows(&s, "src/auth/session.rs:"), "the symbol's file is previewed: {s}");
    h.typ("Nowhere");
    h.wait(200);
    h.pump();
    let s = h.screen(120, 40);
    assert!(shows(&s, "Symbols (0)"), "{s}");
    assert!(!shows(&s, "pub struct SessionStore"), "no stale preview: {s}");
    assert!(shows(&s, " Preview "), "{s}");
    h.snap_both("tui_symbols_no_hits");
}

#[test]
fn one_hit_is_one_hit() {
    let mut h = Harness::new().started();
    h.search("configuration");
    assert_eq!(h.app.search().results().len(), 1, "{:?}", h.app.search().results());
    let title = results_title(&h);
    assert!(title.contains(" 1 hit ·"), "{title}");
    h.search("s");
    h.key(KeyCode::Esc);
    let title = results_title(&h);
    assert!(!title.contains(" 1 hits"), "{title}");
}

/// The prompt's field (the text after `› `) on an 80x24 screen.
fn prompt_field(h: &Harness) -> String {
    let s = h.screen(80, 24);
    // The last field on screen: the prompt is drawn over the query box.
    let line = s.lines().rev().find(|l| l.contains("│› ")).unwrap_or_default().to_string();
    let after = line.split("│› ").last().unwrap_or_default();
    after.split('│').next().unwrap_or_default().trim().to_string()
}

#[test]
fn tab_completes_the_path_filter_with_the_indexed_folders_only() {
    let mut h = Harness::new().started();
    // Folders the index does not hold are never offered: one made after indexing, and a link
    // to a folder outside the repository.
    std::fs::create_dir_all(h.repo.join("scratch")).expect("mkdir");
    let outside = h.env.repo("outside");
    std::fs::create_dir_all(outside.join("secret")).expect("mkdir");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&outside, h.repo.join("sneaky")).expect("symlink");
    h.alt('p');
    h.typ("s");
    h.key(KeyCode::Tab);
    h.pump();
    assert_eq!(prompt_field(&h), "src/", "s completes to the only indexed folder starting with s");
    h.key(KeyCode::Tab);
    h.pump();
    assert_eq!(prompt_field(&h), "src/auth/");
    h.key(KeyCode::Enter);
    h.pump();
    assert_eq!(h.app.search().filters().0, Some("src/auth/"));
    // From nothing: the top folders, first the common prefix (none), then each in turn.
    h.alt('p');
    h.key(KeyCode::Backspace);
    h.key(KeyCode::Tab);
    h.pump();
    let first = prompt_field(&h);
    assert!(shows(&h.screen(80, 24), "tab: src/  web/"), "{}", h.screen(80, 24));
    h.key(KeyCode::Tab);
    let second = prompt_field(&h);
    assert_eq!((first.as_str(), second.as_str()), ("src/", "web/"));
    for sent in &h.sent {
        if let Request::CompletePath { repo, .. } = sent {
            assert_eq!(repo.as_deref(), Some(h.repo.as_path()), "the filter completes inside the repository");
        }
    }
    // Climbing out names nothing.
    h.ctrl('u');
    h.typ("../");
    h.key(KeyCode::Tab);
    h.pump();
    assert_eq!(prompt_field(&h), "../");
    assert!(shows(&h.screen(80, 24), "no indexed folder starts with `../`"), "{}", h.screen(80, 24));
    for typed in ["sc", "sn", "/", "src/../"] {
        let got = h.engine.indexed_folders(&h.repo, typed).expect("folders");
        assert!(got.is_empty(), "{typed}: {got:?}");
    }
    assert_eq!(h.engine.indexed_folders(&h.repo, "").expect("folders"), vec!["src/", "web/"]);
}

#[test]
fn tab_completes_folders_on_disk_in_the_add_repository_prompt() {
    let mut h = Harness::new().started();
    let parent = h.repo.parent().expect("parent").to_path_buf();
    std::fs::create_dir_all(parent.join("another-project/src")).expect("mkdir");
    std::fs::create_dir_all(parent.join(".hidden-project")).expect("mkdir");
    std::fs::write(parent.join("an-file.txt"), "not a folder").expect("write");
    h.alt('1');
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char('a'));
    assert!(h.app.prompt_open());
    h.typ(&format!("{}/an", parent.display()));
    h.key(KeyCode::Tab);
    h.pump();
    assert!(
        prompt_field(&h).ends_with("/another-project/") || h.screen(200, 24).contains("another-project/"),
        "{}",
        h.screen(200, 24)
    );
    let got = match h.sent.iter().rev().find(|r| matches!(r, Request::CompletePath { .. })) {
        Some(Request::CompletePath { repo: None, typed }) => typed.clone(),
        other => panic!("the add-repo prompt completes on disk: {other:?}"),
    };
    assert!(got.ends_with("/an"), "{got}");
    // Only folders (not the file), and hidden ones only when asked for.
    let events = docdex::tui::worker::run_sync(
        &h.engine,
        Request::CompletePath { repo: None, typed: format!("{}/", parent.display()) },
    );
    let Some(docdex::tui::event::EngineEvent::PathCompletions { result: Ok(items), .. }) = events.last() else {
        panic!("{events:?}")
    };
    assert!(items.iter().any(|i| i.ends_with("/another-project/")), "{items:?}");
    assert!(!items.iter().any(|i| i.contains("an-file") || i.contains(".hidden")), "{items:?}");
    let events = docdex::tui::worker::run_sync(
        &h.engine,
        Request::CompletePath { repo: None, typed: format!("{}/.h", parent.display()) },
    );
    let Some(docdex::tui::event::EngineEvent::PathCompletions { result: Ok(items), .. }) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(items.len(), 1, "{items:?}");
}

#[test]
fn at_60_columns_every_pane_keeps_a_tab() {
    // At 60 columns the tab bar silently dropped `7 Profile`.
    let mut h = Harness::new().started();
    let top = h.screen(60, 24).lines().next().unwrap_or_default().to_string();
    for k in 1..=7 {
        assert!(top.contains(&format!(" {k} ")), "tab {k}: {top}");
    }
    assert!(top.contains("2 Search") && top.contains("7 Prof"), "the focused tab keeps its title: {top}");
    h.alt('7');
    let top = h.screen(60, 24).lines().next().unwrap_or_default().to_string();
    assert!(top.contains("7 Profile"), "{top}");
    // A click on the shortened tab switches to it.
    let x = top.find(" 6 ").expect("tab 6") as u16 + 1;
    h.click(x, 0);
    assert_eq!(h.app.focus(), docdex::tui::panes::PaneId::Impact);
    crate::tui_support::snap("tui_tabs_60x24", &h.screen(60, 24));
}

mod title_at_100_columns {
    //! At 100 columns (the narrowest split layout) the results frame is 45 cells wide: the
    //! title "100 of 1,000+ hits · confidence 0.91 ·    2 ms" did not fit and the frame cut it
    //! in the timing's blank field. It now drops the timing, then the confidence, whole.
    use crate::tui_support::{snap, Harness};
    use crossterm::event::KeyCode;
    use docdex::testing::tui_samples;
    use docdex::tui::event::{EngineEvent, Request};

    fn answer(h: &mut Harness, query: &str, resp: docdex::engine::protocol::SearchResponse) {
        h.typ(query);
        h.wait(200);
        let seq = h
            .requests()
            .iter()
            .rev()
            .find_map(|r| match r {
                Request::Search { seq, more: false, .. } => Some(*seq),
                _ => None,
            })
            .expect("search");
        h.engine_event(EngineEvent::SearchResults { seq, more: false, result: Ok(resp) });
    }

    /// The results frame's title at `w` columns: the text between its top-left corner and
    /// the first run of border.
    fn title(h: &Harness, w: u16) -> String {
        let row = h.screen(w, 30).lines().nth(4).unwrap_or_default().to_string();
        let left = row.split('╮').next().unwrap_or_default();
        left.trim_start_matches('╭').trim_end_matches('─').to_string()
    }

    #[test]
    fn the_results_title_drops_the_timing_whole_at_100_columns() {
        let mut h = Harness::new().started();
        let mut resp = tui_samples::search_response("session", 100);
        resp.total_hits = 1000;
        answer(&mut h, "session", resp);
        h.key(KeyCode::Esc);
        assert_eq!(title(&h, 100), " 100 of 1,000+ hits · confidence 0.91 ");
        assert!(title(&h, 120).ends_with(" ms "), "wide enough, the timing stays: {}", title(&h, 120));
        snap("tui_search_title_100x30", &h.screen(100, 30));
    }

    /// tour18 F14: the time ended the title in a fixed-width field, `confidence 0.91 ·    2 ms`.
    /// It now sits unpadded at the right end of the top edge, and a slower search moves neither
    /// the title nor the time's right end.
    #[test]
    fn the_timing_ends_the_top_edge_unpadded_and_moves_nothing() {
        let mut h = Harness::new().started();
        answer(&mut h, "session", tui_samples::search_response("session", 100));
        h.key(KeyCode::Esc);
        // The frame's top edge up to its corner (at 120 columns the preview's frame follows).
        let edge = |h: &Harness, w: u16| {
            let row = h.screen(w, 30).lines().nth(4).unwrap_or_default().to_string();
            format!("{}╮", row.split('╮').next().unwrap_or_default())
        };
        for w in [80, 120] {
            let fast = edge(&h, w);
            assert!(fast.starts_with("╭ 100 hits · confidence 0.91 ─"), "{fast}");
            assert!(fast.ends_with("─ 2 ms ╮"), "the time unpadded, against the corner: {fast}");
            assert!(!fast.contains("  "), "no blank field: {fast}");
        }
        let fast = edge(&h, 80);
        h.key(KeyCode::Char('i'));
        let mut slow = tui_samples::search_response("sessions", 100);
        slow.timing_ms.total = 1234.4;
        answer(&mut h, "s", slow);
        h.key(KeyCode::Esc);
        let slow = edge(&h, 80);
        assert_eq!(slow.chars().count(), fast.chars().count(), "{fast}\n{slow}");
        assert!(slow.ends_with("─ 1234 ms ╮"), "{slow}");
        let title = |e: &str| e.split(" ─").next().unwrap_or_default().to_string();
        assert_eq!(title(&slow), title(&fast), "the title stays where it was");
    }
}

/// tour12 F8: a keymap file's duplicate binding is said with its other mistakes, not after them.
#[test]
fn a_keymap_files_duplicate_binding_is_said_with_its_other_mistakes() {
    use docdex::tui::keymap::Keymap;
    let text = "[global]\nquit = [\"ctrl+q\"]\nfrobnicate = [\"x\"]\nhelp = [\"hyper+k\"]\n[search]\n\
                open_in_editor = [\"enter\", \"ctrl+t\"]\nfly = [\"ctrl+t\"]\n[repos]\nadd_repo = [\"z\"]\nreindex = [\"z\"]\n";
    let said = Keymap::from_texts("mine", &[("u.toml".into(), text)]).expect_err("refused").to_string();
    assert!(said.starts_with("u.toml:3: unknown action `frobnicate`"), "{said}");
    assert!(said.contains("; line 4: unknown modifier"), "{said}");
    assert!(said.contains("; line 6: key `ctrl+t` is bound twice in [search]"), "{said}");
    assert!(said.contains("; line 7: unknown action `fly`"), "{said}");
    assert!(said.contains("key `z` is bound twice in [repos]: to `add_repo` and to `reindex`"), "{said}");
}

/// tour12 F22: once the turn ends, "an answer is still coming" is no longer what the status says.
#[test]
fn the_still_coming_hint_gives_way_when_the_turn_ends() {
    use docdex::tui::event::{ChatUpdate, EngineEvent};
    let mut h = Harness::new().started();
    h.alt('3');
    h.typ("how is config parsed?");
    h.key(KeyCode::Enter);
    assert!(h.app.chat().streaming());
    h.typ("next one");
    h.key(KeyCode::Enter);
    assert!(h.app.notice().unwrap_or_default().contains("still coming"));
    let done = ChatUpdate::Done { turn: 1, session_id: None, citations: Vec::new(), stopped: true, unavailable: None };
    h.engine_event(EngineEvent::Chat(done));
    let notice = h.app.notice().unwrap_or_default().to_string();
    assert!(!notice.contains("still coming") && notice.contains("enter sends your message"), "{notice}");
    assert_eq!(h.app.chat().input_text(), "next one");
}
