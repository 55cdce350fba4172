//! The keyboard model (issue 20): a visible mode (NOR / INS) with hints that change with it,
//! help from anywhere on a key that is never text, typing in normal mode that never runs away
//! (a letter that is no command goes back to the text field; a letter never quits on its own),
//! `esc` meaning one thing, readline editing keys before any binding in a text field, pane
//! switching from a text field, ctrl+z. Each test replays a reproduction from the issue.

use crate::tui_support::{shows, Harness};
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use docdex::tui::app::{Effect, Mode};
use docdex::tui::event::AppEvent;
use docdex::tui::panes::PaneId;

/// The status bar (last row) at a size.
fn status(h: &Harness, w: u16, hh: u16) -> String {
    h.screen(w, hh).lines().last().unwrap_or_default().to_string()
}

#[test]
fn the_mode_shows_in_the_status_bar_and_the_hints_change_with_it() {
    let mut h = Harness::new().started();
    // While a notice shows, hints give way to it; the start-up notice goes after 6 s.
    h.wait(7_000);
    assert_eq!(h.app.mode(), Mode::Insert, "the query box has focus at start");
    let ins = status(&h, 120, 40);
    assert!(ins.starts_with(" INS "), "{ins}");
    // In a text field `?` is text: the footer names the help key that works there.
    assert!(ins.contains("f1 help") && !ins.contains("? help"), "{ins}");
    assert!(ins.contains("esc normal"), "{ins}");
    assert!(ins.contains("alt+1…7 pane"), "digits are text here, alt+digits switch: {ins}");
    assert!(ins.contains("ctrl+c quit") && !ins.contains("q quit"), "{ins}");
    h.key(KeyCode::Esc);
    assert_eq!(h.app.mode(), Mode::Normal);
    let nor = status(&h, 120, 40);
    assert!(nor.starts_with(" NOR "), "{nor}");
    assert!(nor.contains("/ type") && nor.contains("ctrl+c quit") && nor.contains("tab pane"), "{nor}");
    // At 80 columns the tag and the help key stay.
    let narrow = status(&h, 80, 24);
    assert!(narrow.starts_with(" NOR ") && narrow.contains("f1 help"), "{narrow}");
    h.snap_both("tui_mode_line_normal");
    h.key(KeyCode::Char('/'));
    h.snap_both("tui_mode_line_insert");
}

#[test]
fn help_opens_from_a_text_field_on_f1_and_the_documented_chord() {
    let mut h = Harness::new().started();
    h.typ("why?");
    assert_eq!(h.app.search().query(), "why?", "? is text in the query box");
    assert!(!h.app.help_open());
    h.key(KeyCode::F(1));
    assert!(h.app.help_open(), "f1 opens help from the query box");
    h.key(KeyCode::Esc);
    assert!(!h.app.help_open());
    h.alt('h');
    assert!(h.app.help_open(), "alt+h opens help from the query box");
    h.key(KeyCode::Esc);
    // The chat box too.
    h.alt('3');
    assert_eq!(h.app.mode(), Mode::Insert);
    h.typ("?");
    assert_eq!(h.app.chat().input_text(), "?");
    h.key(KeyCode::F(1));
    assert!(h.app.help_open());
}

#[test]
fn typing_request_after_esc_does_not_quit_and_lands_in_the_query() {
    // Search, Esc, then type `request`: the app used to exit at `q`.
    let mut h = Harness::new().started();
    h.key(KeyCode::Esc);
    h.typ("request");
    assert!(!h.app.should_quit());
    assert_eq!(h.app.search().query(), "request", "r is no command here: it goes back to the query");
    assert_eq!(h.app.mode(), Mode::Insert);
}

#[test]
fn a_sentence_typed_in_normal_mode_after_help_keeps_every_letter() {
    // F1, G, Esc, `how are blueprints registered`: the query used to become `nts registered`.
    let mut h = Harness::new().started();
    h.key(KeyCode::F(1));
    // `G` is `Last item` in help's own [navigate] list: it scrolls help to its end.
    h.typ("G");
    assert!(h.app.help_open());
    h.key(KeyCode::Esc);
    assert!(!h.app.help_open());
    h.typ("how are blueprints registered");
    assert_eq!(h.app.search().query(), "how are blueprints registered");
    assert!(!h.app.should_quit());
}

#[test]
fn a_letter_never_quits_on_its_own() {
    let mut h = Harness::new().started();
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char('q'));
    assert!(!h.app.should_quit(), "q asks first");
    let s = h.screen(80, 24);
    assert!(shows(&s, "Quit docdex?"), "{s}");
    h.key(KeyCode::Char('u'));
    assert!(!h.app.should_quit(), "any other key stays");
    assert!(!shows(&h.screen(80, 24), "Quit docdex?"));
    assert_eq!(h.app.search().query(), "u", "and does what it would have done");
    // `n` is the answer "no": it stays and is not typed anywhere.
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char('q'));
    h.key(KeyCode::Char('n'));
    assert!(!h.app.should_quit() && !shows(&h.screen(80, 24), "Quit docdex?"));
    assert_eq!(h.app.search().query(), "u");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char('q'));
    h.key(KeyCode::Char('y'));
    assert!(h.app.should_quit(), "y confirms");
    // A chord quits at once, from a text field too.
    let mut h = Harness::new().started();
    h.typ("session");
    h.ctrl('c');
    assert!(h.app.should_quit());
}

#[test]
fn every_letter_in_normal_mode_on_every_pane_leaves_the_app_running() {
    for pane in ['1', '2', '3', '4', '5', '6', '7'] {
        let mut h = Harness::new().started();
        h.alt(pane);
        h.key(KeyCode::Esc);
        h.typ("the quick brown fox jumps over the lazy dog? ABCDEFGHIJKLMNOPQRSTUVWXYZ");
        assert!(!h.app.should_quit(), "pane {pane}");
        // Nothing was removed or re-indexed without asking.
        assert!(
            !h.sent.iter().any(|r| matches!(r, docdex::tui::event::Request::RemoveRepo { .. })),
            "pane {pane}: {:?}",
            h.sent
        );
    }
}

#[test]
fn a_letter_that_is_no_command_goes_back_to_the_chat_box() {
    let mut h = Harness::new().started();
    h.alt('3');
    h.key(KeyCode::Esc);
    assert_eq!(h.app.mode(), Mode::Normal);
    h.typ("why");
    assert_eq!(h.app.chat().input_text(), "why");
    assert_eq!(h.app.mode(), Mode::Insert);
}

#[test]
fn a_letter_that_is_no_command_in_a_pane_without_text_says_so() {
    let mut h = Harness::new().started();
    h.alt('6');
    h.typ("x");
    let notice = h.app.notice().unwrap_or_default().to_string();
    assert!(notice.contains("`x` is not a key in Impact") && notice.contains("f1"), "{notice}");
    assert_eq!(h.app.focus(), PaneId::Impact);
}

#[test]
fn esc_leaves_the_text_field_and_does_nothing_more() {
    let mut h = Harness::new().started();
    h.search("session");
    h.key(KeyCode::Esc);
    assert_eq!(h.app.mode(), Mode::Normal);
    h.key(KeyCode::Esc);
    assert_eq!((h.app.focus(), h.app.search().query()), (PaneId::Search, "session"));
    h.key(KeyCode::F(1));
    h.key(KeyCode::End);
    let s = h.screen(120, 40);
    assert!(shows(&s, "esc leaves the text field or closes an overlay, nothing more"), "{s}");
    assert!(!shows(&s, "Back / close"), "{s}");
    h.key(KeyCode::Esc);
    // Impact: esc has nothing to close, and says nothing false about it.
    h.alt('6');
    h.key(KeyCode::Esc);
    assert_eq!(h.app.focus(), PaneId::Impact);
}

#[test]
fn the_vim_keymap_leaves_editing_keys_to_the_query_box() {
    let mut h = Harness::with("[tui]\nkeymap = \"vim\"\n").started();
    h.typ("session store");
    h.ctrl('w');
    assert_eq!(h.app.search().query(), "session ", "ctrl+w deletes a word, not next pane");
    assert_eq!(h.app.focus(), PaneId::Search);
    h.ctrl('u');
    assert_eq!(h.app.search().query(), "", "ctrl+u clears, not preview scroll");
    h.typ("abc");
    h.ctrl('7');
    assert_eq!(h.app.search().query(), "ab", "ctrl+_ undoes");
    // Outside the box the same keys are commands again.
    h.key(KeyCode::Esc);
    h.ctrl('w');
    assert_eq!(h.app.focus(), PaneId::Chat, "ctrl+w is next pane in normal mode");
    // Help lists the clashes.
    h.alt('2');
    h.key(KeyCode::F(1));
    h.key(KeyCode::End);
    let s = h.screen(200, 60);
    assert!(shows(&s, "In INS these edit text; in NOR they are:"), "{s}");
    // (The list wraps where the overlay ends: `ctrl+u` and its command may be a row apart.)
    assert!(s.contains("ctrl+w (next_pane)") && s.contains("ctrl+u") && s.contains("(preview_up)"), "{s}");
    // The path filter is reachable while typing too (ctrl+o is an editing key there).
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char('/'));
    assert_eq!(h.app.mode(), Mode::Insert);
    h.alt('p');
    assert!(h.app.prompt_open(), "alt+p opens the path filter from the query box in the vim keymap");
}

#[test]
fn the_default_keymap_has_a_key_for_every_hint_in_a_text_field() {
    let h = Harness::new().started();
    let s = status(&h, 200, 40);
    // ctrl+t and ctrl+g are no editing keys: they stay commands in the query box.
    assert!(s.contains("ctrl+t symbols") && s.contains("ctrl+g impact"), "{s}");
    let screen = h.screen(120, 40);
    assert!(shows(&screen, "alt+p filters"), "the placeholder names a key that works while typing: {screen}");
}

#[test]
fn panes_switch_from_a_text_field_with_alt_digits_and_digits_are_text() {
    let mut h = Harness::new().started();
    h.typ("v2");
    assert_eq!(h.app.search().query(), "v2");
    assert_eq!(h.app.focus(), PaneId::Search);
    h.alt('3');
    assert_eq!(h.app.focus(), PaneId::Chat);
    h.typ("3");
    assert_eq!(h.app.chat().input_text(), "3");
    h.key_mod(KeyCode::Char('2'), KeyModifiers::ALT);
    assert_eq!(h.app.focus(), PaneId::Search);
}

#[test]
fn ctrl_z_suspends() {
    let mut h = Harness::new().started();
    h.typ("abc");
    h.ctrl('z');
    assert_eq!(h.app.take_effects(), vec![Effect::Suspend]);
    assert_eq!(h.app.search().query(), "abc", "ctrl+z is not undo here");
}

#[test]
fn help_shows_the_real_docdex_home() {
    let mut h = Harness::new().started();
    h.key(KeyCode::F(1));
    h.key(KeyCode::End);
    let s = h.screen(200, 60);
    let home = h.env.home().display().to_string();
    assert!(s.contains(&format!("overrides in {home}/keymaps/ and {home}/themes/")), "{s}");
    assert!(!s.contains("~/.docdex/"), "{s}");
}

#[test]
fn clicking_a_hit_keeps_the_query_box() {
    // Clicking a hit used to leave the query box: the next letters ran commands.
    let mut h = Harness::new().started();
    h.search("dashboard");
    assert_eq!(h.app.mode(), Mode::Insert);
    let s = h.screen(120, 40);
    let second = h.app.search().results()[1].path.clone();
    let row = s.lines().position(|l| l.contains(second.as_str())).expect("second hit on screen") as u16;
    h.click(5, row);
    assert_eq!(h.app.search().selected(), 1, "the click selects the hit");
    assert_eq!(h.app.mode(), Mode::Insert, "and the query box keeps the keys");
    h.typ(" jkq");
    assert_eq!(h.app.search().query(), "dashboard jkq");
    assert!(!h.app.should_quit());
    // In normal mode a click selects and stays in normal mode.
    h.key(KeyCode::Esc);
    h.click(5, row);
    assert_eq!(h.app.mode(), Mode::Normal);
}

/// The open prompt's field (the text after `› ` in the last field drawn) at 80x24.
fn prompt_field(h: &Harness) -> String {
    let s = h.screen(80, 24);
    let line = s.lines().rev().find(|l| l.contains("│› ")).unwrap_or_default().to_string();
    let after = line.split("│› ").last().unwrap_or_default();
    after.split('│').next().unwrap_or_default().trim_end().to_string()
}

#[test]
fn every_text_field_has_the_same_editing_keys_and_undo() {
    // One editor for the query box, the prompts and the chat message.
    let mut h = Harness::new().started();
    h.typ("alpha beta");
    h.ctrl('w');
    assert_eq!(h.app.search().query(), "alpha ");
    h.ctrl('7');
    assert_eq!(h.app.search().query(), "alpha beta", "undo");
    // A prompt: the path filter.
    h.alt('p');
    assert!(h.app.prompt_open());
    h.typ("alpha beta");
    h.ctrl('w');
    assert_eq!(prompt_field(&h), "alpha");
    h.ctrl('a');
    h.ctrl('k');
    assert_eq!(prompt_field(&h), "");
    h.ctrl('7');
    assert_eq!(prompt_field(&h), "alpha", "undo in a prompt");
    h.key(KeyCode::Esc);
    assert!(!h.app.prompt_open());
    // The chat message.
    h.alt('3');
    h.typ("alpha beta");
    h.ctrl('w');
    assert_eq!(h.app.chat().input_text(), "alpha ");
    h.ctrl('u');
    assert_eq!(h.app.chat().input_text(), "");
    h.ctrl('7');
    assert_eq!(h.app.chat().input_text(), "alpha ", "undo in the chat box");
}

#[test]
fn help_and_the_message_log_open_over_a_prompt_and_give_it_back() {
    let mut h = Harness::new().started();
    h.alt('p');
    h.typ("src/au");
    h.key(KeyCode::F(1));
    assert!(h.app.help_open(), "f1 opens help from a prompt, as from any text field");
    h.key(KeyCode::Esc);
    assert!(!h.app.help_open() && h.app.prompt_open(), "closing help gives the prompt back");
    assert_eq!(prompt_field(&h), "src/au", "with its text");
    h.alt('m');
    assert!(h.app.messages_open(), "alt+m opens the message log from a prompt");
    h.key(KeyCode::Esc);
    assert!(h.app.prompt_open() && prompt_field(&h) == "src/au");
    // `?` stays text in a prompt.
    h.typ("?");
    assert_eq!(prompt_field(&h), "src/au?");
}

#[test]
fn ctrl_c_quits_from_every_pop_up() {
    type Open = fn(&mut Harness);
    let pop_ups: [(&str, Open); 5] = [
        ("a prompt", |h| h.alt('p')),
        ("the message log", |h| h.alt('m')),
        ("help", |h| h.key(KeyCode::F(1))),
        ("help over a prompt", |h| {
            h.alt('p');
            h.key(KeyCode::F(1));
        }),
        ("the quit question", |h| {
            h.key(KeyCode::Esc);
            h.typ("q");
        }),
    ];
    for (what, open) in pop_ups {
        let mut h = Harness::new().started();
        open(&mut h);
        assert!(!h.app.should_quit(), "{what}: open");
        h.ctrl('c');
        assert!(h.app.should_quit(), "ctrl+c quits from {what}");
    }
}

#[test]
fn at_40_columns_the_status_bar_keeps_the_state_and_the_help_key() {
    let mut h = Harness::new().started();
    h.wait(7_000);
    h.key(KeyCode::Esc);
    let bar = status(&h, 40, 12);
    assert!(bar.contains("●") && bar.contains("f1 help"), "{bar}");
}

/// The help overlay's rows (inside its frame) at a size, and its title row.
fn help_rows(h: &Harness, w: u16, hh: u16) -> (String, Vec<String>) {
    let s = h.screen(w, hh);
    let lines: Vec<Vec<char>> = s.lines().map(|l| l.chars().collect()).collect();
    let top = lines.iter().position(|l| l.iter().collect::<String>().contains("Keys ·")).expect("help open");
    let title: String = lines[top].iter().collect();
    let left = lines[top].iter().rposition(|c| *c == '╭').expect("corner");
    let right = lines[top].iter().position(|c| *c == '╮').filter(|r| *r > left).unwrap_or(w as usize - 3);
    let rows = lines[top + 1..]
        .iter()
        .take_while(|l| l.get(left) != Some(&'╰'))
        .map(|l| l[left + 1..right.min(l.len())].iter().collect::<String>())
        .collect();
    (title, rows)
}

#[test]
fn help_wraps_long_lines_at_80x24_so_problems_with_user_files_read_whole() {
    // Tour: a broken keymap and theme in the home dir; at 80x24 help cut both problems
    // (`unknown section [bogus] (known: pale…`, `unclosed array, expected `]`; using …`), and
    // the message log only pointed at help (`+1 more; f1 shows all`).
    let files = [("keymaps/default.toml", "[global]\nquit = [\"ctrl+q\"\n"), ("themes/dark.toml", "[bogus]\nx = 1\n")];
    let mut h = Harness::with_files("", &files).started();
    h.key(KeyCode::F(1));
    let mut seen = String::new();
    for _ in 0..20 {
        let (_, rows) = help_rows(&h, 80, 24);
        for r in &rows {
            assert!(!r.trim_end().trim_end_matches('│').trim_end().ends_with('…'), "a help row is cut: {r}");
            seen.push_str(r.trim());
            seen.push(' ');
        }
        h.key(KeyCode::PageDown);
    }
    // The message log holds each problem on its own, not only the first.
    let logged: Vec<&str> = h.app.messages().iter().map(|m| m.text.as_str()).collect();
    assert!(
        logged.iter().any(|m| m.contains("keymaps/default.toml:2") && m.ends_with("using the shipped keymap")),
        "{logged:?}"
    );
    assert!(
        logged.iter().any(|m| m.contains("themes/dark.toml:1") && m.ends_with("using the shipped theme")),
        "{logged:?}"
    );
    let seen = seen.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(seen.contains("using the shipped keymap"), "{seen}");
    assert!(seen.contains("graph); using the shipped theme"), "{seen}");
    assert!(seen.contains("Quit docdex (a letter asks first; a chord quits at once)"), "{seen}");
}

#[test]
fn help_scrolls_with_the_keys_it_lists_and_comes_back_at_once_from_the_end() {
    // Tour: help lists `home, g` / `end, G` as first / last item, but `g` and `G` closed it;
    // after `end`, `up` seemed dead (it counted down from a huge offset).
    let mut h = Harness::new().started();
    h.key(KeyCode::Esc);
    h.key(KeyCode::Char('?'));
    let (first, _) = help_rows(&h, 80, 24);
    assert!(first.contains("more"), "{first}");
    h.key(KeyCode::Char('G'));
    assert!(h.app.help_open(), "G scrolls to the end");
    let (title, rows) = help_rows(&h, 80, 24);
    assert!(!title.contains("more"), "at the end: {title}");
    assert!(rows.iter().any(|r| r.contains("overrides in")), "{rows:?}");
    h.key(KeyCode::Up);
    let (title, _) = help_rows(&h, 80, 24);
    assert!(title.contains("↓ 1 more"), "one up from the end: {title}");
    h.key(KeyCode::Char('g'));
    assert_eq!(help_rows(&h, 80, 24).0, first, "g goes back to the top");
    h.key(KeyCode::Char('x'));
    assert!(!h.app.help_open(), "any other key closes it");
    // The vim keymap's paging keys page through help too.
    let mut h = Harness::with("[tui]\nkeymap = \"vim\"\n").started();
    h.key(KeyCode::F(1));
    let (before, _) = help_rows(&h, 80, 24);
    h.ctrl('f');
    assert!(h.app.help_open(), "ctrl+f pages in the vim keymap");
    assert_ne!(help_rows(&h, 80, 24).0, before);
}

#[test]
fn the_message_log_scrolls_back_at_once_from_the_oldest_message() {
    let mut h = Harness::new().started();
    for i in 0..40 {
        h.app.editor_finished(Err(format!("note {i}")));
    }
    h.alt('m');
    assert!(shows(&h.screen(80, 24), "✗ note 39"), "newest at the bottom");
    h.key(KeyCode::Home);
    let s = h.screen(80, 24);
    assert!(shows(&s, "indexed 5 files") && shows(&s, "✗ note 0") && !shows(&s, "✗ note 39"), "{s}");
    h.key(KeyCode::Down);
    let s = h.screen(80, 24);
    assert!(!shows(&s, "indexed 5 files") && shows(&s, "✗ note 0"), "one down from the top moves at once: {s}");
    h.key(KeyCode::End);
    assert!(shows(&h.screen(80, 24), "✗ note 39"));
}

#[test]
fn help_names_the_keymap_and_theme_in_effect_when_the_configured_ones_are_left_out() {
    // Tour: `[tui] keymap = "emacs"`, `theme = "solarized"` (no such files) said "using the
    // default keymap" / "the dark theme" while help's header read `keymap emacs  theme solarized`;
    // a broken `keymaps/mine.toml` the same.
    let config = "[tui]\nkeymap = \"mine\"\ntheme = \"solarized\"\n";
    let mut h = Harness::with_files(config, &[("keymaps/mine.toml", "[global]\nquit = [\"ctrl+q\"\n")]).started();
    h.key(KeyCode::F(1));
    let s = h.screen(120, 40);
    assert!(shows(&s, "keymap default  theme dark"), "{s}");
    assert!(shows(&s, "expected `]`; using the default") && shows(&s, "using the dark theme"), "{s}");
    assert!(!shows(&s, "keymap mine"), "{s}");
}

#[test]
fn pagedown_and_pageup_move_through_a_long_dag_session() {
    // Tour: help lists pageup / pagedown under [navigate] in the DAG pane, where they did nothing.
    use docdex::tui::widgets::dag::{DagNode, DagSession, DagView};
    let nodes: Vec<DagNode> = (1..=30)
        .map(|i| DagNode {
            id: format!("n{i}"),
            kind: "search".into(),
            label: format!("step {i}"),
            parents: if i == 1 { vec![] } else { vec![format!("n{}", i - 1)] },
            detail: String::new(),
        })
        .collect();
    let session = DagSession { id: "s".into(), title: "long".into(), nodes: 30, started_ms: 0 };
    let view = DagView { sessions: vec![session], selected_session: 0, nodes, ..Default::default() };
    let mut h = Harness::new().started();
    h.alt('5');
    h.engine_event(docdex::tui::event::EngineEvent::Dag(Ok(view)));
    assert_eq!(h.app.dag().selected_node(), Some("n1"));
    h.key(KeyCode::PageDown);
    assert_eq!(h.app.dag().selected_node(), Some("n11"));
    h.key(KeyCode::PageDown);
    h.key(KeyCode::PageDown);
    assert_eq!(h.app.dag().selected_node(), Some("n30"), "no further than the last step");
    h.key(KeyCode::PageUp);
    assert_eq!(h.app.dag().selected_node(), Some("n20"));
    let s = h.screen(80, 24);
    assert!(shows(&s, "step 20"), "the selection stays in view: {s}");
}

#[test]
fn a_session_of_several_turns_keeps_its_labels_readable_at_80x24() {
    // Tour: a conversation's second turn hangs under the first one's answer; one tree level per
    // step squeezed its labels into 4 columns at 80x24 (`answ`, `er: `, `unav`...) and a third
    // turn's into none.
    use docdex::tui::widgets::dag::{DagNode, DagSession, DagView};
    let mut nodes: Vec<DagNode> = Vec::new();
    let mut add = |id: String, kind: &str, label: &str, parent: Option<String>| {
        nodes.push(DagNode {
            id: id.clone(),
            kind: kind.into(),
            label: label.into(),
            parents: parent.into_iter().collect(),
            detail: String::new(),
        });
        id
    };
    let mut answer: Option<String> = None;
    for t in 1..=3 {
        let q = add(format!("u{t}"), "UserRequest", &format!("question {t}"), answer.take());
        let plan = add(format!("t{t}"), "Thought", "plan: search, recall, gate, budget, ask", Some(q));
        let search = add(format!("s{t}"), "ToolCall", "search the code index", Some(plan.clone()));
        let hits = add(format!("o{t}"), "Observation", "4 hits, confidence 1.00", Some(search));
        let gate = add(format!("g{t}"), "Decision", "gate: stay local", Some(hits));
        let ask = add(format!("a{t}"), "ToolCall", "ask phi3.5:3.8b", Some(gate));
        answer = Some(add(format!("n{t}"), "Observation", &format!("answer {t}: unavailable"), Some(ask)));
        let recall = add(format!("r{t}"), "ToolCall", "recall repo memory", Some(plan));
        add(format!("m{t}"), "Observation", "0 memories recalled", Some(recall));
    }
    let session = DagSession { id: "s".into(), title: "three turns".into(), nodes: 27, started_ms: 0 };
    let view = DagView { sessions: vec![session], selected_session: 0, nodes, ..Default::default() };
    let mut h = Harness::new().started();
    h.alt('5');
    h.engine_event(docdex::tui::event::EngineEvent::Dag(Ok(view)));
    for t in 1..=3 {
        while h.app.dag().selected_node() != Some(format!("n{t}").as_str()) {
            h.key(KeyCode::Down);
        }
        let s = h.screen(80, 24);
        assert!(shows(&s, &format!("[Observation] answer {t}: unavailable")), "turn {t}:\n{s}");
    }
}

/// A session of `n` steps, each after the one before, written to the fixture's real `dag.db`;
/// returns the node ids, oldest first.
fn long_dag_session(h: &Harness, id: &str, n: usize) -> Vec<i64> {
    use docdex::engine::dag::{DagStore, NodeKind};
    let store = DagStore::open(&h.engine.resolve_repo(&h.repo).unwrap()).unwrap();
    let cursor = store.join_session(Some(id), None, "a session continued for days").unwrap();
    let mut ids: Vec<i64> = Vec::new();
    for i in 1..=n {
        let parents: Vec<i64> = ids.last().copied().into_iter().collect();
        let label = format!("step {i}");
        ids.push(store.add_node(&cursor.id, NodeKind::Thought, &label, &serde_json::json!({}), &parents).unwrap());
    }
    ids
}

#[test]
fn the_dag_pane_loads_a_long_sessions_older_steps_on_a_key_without_waiting_for_them() {
    // Tour: the pane showed a long session's newest 1,000 nodes and no way past them (nor
    // that there were more); `docdex dag view --before` was the only way to the rest.
    use docdex::tui::event::Request;
    let mut h = Harness::new().started();
    let ids = long_dag_session(&h, "long", 1_205);
    h.wait(7_000); // the start-up notice gives the footer back to the hints
    h.alt('5');
    h.pump();
    let shown = |h: &Harness| h.app.dag().view().map_or(0, |v| v.nodes.len());
    assert_eq!(shown(&h), 1_000);
    let s = h.screen(120, 40);
    assert!(shows(&s, "↑ 205 older nodes not shown · o loads them"), "{s}");
    assert!(status(&h, 120, 40).contains("o older steps"), "the footer names the key: {s}");
    // The key only asks (the worker loads off the UI thread); a second press while the page
    // is on its way asks nothing more.
    h.key(KeyCode::Char('o'));
    h.key(KeyCode::Char('o'));
    let asked = h.requests();
    assert_eq!(
        asked,
        vec![Request::LoadDagOlder { repo: h.repo.clone(), session: "long".into(), before: ids[205] }],
        "one request for the nodes before the oldest shown"
    );
    assert!(h.app.dag().loading_older() && shown(&h) == 1_000);
    assert!(shows(&h.screen(120, 40), "↑ 205 older nodes: loading them…"));
    for r in asked {
        for e in docdex::tui::worker::run_sync(&h.engine, r) {
            h.engine_event(e);
        }
    }
    assert_eq!(shown(&h), 1_205, "the older nodes are added in front");
    let view = h.app.dag().view().unwrap();
    assert_eq!((view.older_nodes, view.next_before), (0, None));
    assert_eq!(view.nodes.first().map(|n| n.id.clone()), Some(ids[0].to_string()));
    assert_eq!(h.app.dag().selected_node(), Some(ids[204].to_string().as_str()), "the newest older step is selected");
    let s = h.screen(120, 40);
    assert!(shows(&s, "[Thought] step 205") && !shows(&s, "older nodes"), "{s}");
    assert!(!status(&h, 120, 40).contains("older steps"), "nothing older: no hint");
    h.key(KeyCode::Char('o'));
    assert!(h.requests().is_empty(), "nothing older to ask for");
    // A new step and a reload (the pane regains focus) keep the loaded nodes and the selection.
    long_dag_session(&h, "long", 1);
    h.alt('4');
    h.alt('5');
    h.pump();
    assert_eq!(shown(&h), 1_206);
    assert_eq!(h.app.dag().view().unwrap().older_nodes, 0);
    assert_eq!(h.app.dag().selected_node(), Some(ids[204].to_string().as_str()));
}

#[test]
fn the_dag_panes_session_list_says_how_many_sessions_there_are_beyond_the_newest_fifty() {
    // Tour: the list's title counted the sessions listed, `Sessions (50)`, however many the
    // repository had (the engine lists the newest 50).
    use docdex::engine::dag::{DagStore, NodeKind};
    let mut h = Harness::new().started();
    let store = DagStore::open(&h.engine.resolve_repo(&h.repo).unwrap()).unwrap();
    for k in 0..60 {
        let c = store.join_session(Some(&format!("s{k}")), None, &format!("question {k}")).unwrap();
        store.add_node(&c.id, NodeKind::UserRequest, "q", &serde_json::json!({}), &[]).unwrap();
    }
    h.alt('5');
    h.pump();
    assert_eq!(h.app.dag().view().map(|v| v.sessions.len()), Some(50));
    let s = h.screen(120, 40);
    assert!(shows(&s, "Sessions (50 of 60)"), "{s}");
}

#[test]
fn a_cut_dag_session_says_how_many_older_nodes_and_the_key_snapshot() {
    let mut h = Harness::new().started();
    h.alt('5');
    h.pump();
    let mut view = docdex::testing::tui_samples::dag();
    view.older_nodes = 1_234;
    view.next_before = Some(1_235);
    // The session's line counts its nodes as the engine does (node_count): the ones shown and
    // the older ones. It said 6 nodes over 1,234 older ones.
    view.sessions[0].nodes = view.nodes.len() + 1_234;
    h.engine_event(docdex::tui::event::EngineEvent::Dag(Ok(view)));
    h.snap_both("tui_dag_older");
    assert!(shows(&h.screen(80, 24), "↑ 1,234 older nodes not shown · o loads them"));
    assert!(shows(&h.screen(120, 40), "session expiry · 1,240 nodes"));
}

#[test]
fn a_dag_session_loaded_up_to_the_panes_cap_says_so_and_loads_no_more_snapshot() {
    // Tour: every page `o` loaded stayed in the pane and was drawn on every frame, without a cap.
    use docdex::tui::widgets::dag::{DagNode, DAG_PANE_MAX_NODES};
    let mut h = Harness::new().started();
    h.wait(7_000); // the start-up notice gives the footer back to the hints
    h.alt('5');
    h.pump();
    let mut view = docdex::testing::tui_samples::dag();
    let filler = DAG_PANE_MAX_NODES - view.nodes.len();
    view.nodes.extend((0..filler).map(|k| DagNode {
        id: format!("{}", 10_000 + k),
        kind: "Thought".into(),
        label: format!("step {k}"),
        parents: vec![if k == 0 { "n6".to_string() } else { format!("{}", 9_999 + k) }],
        detail: String::new(),
    }));
    view.older_nodes = 2_000;
    view.next_before = Some(2_001);
    view.sessions[0].nodes = DAG_PANE_MAX_NODES + 2_000;
    h.engine_event(docdex::tui::event::EngineEvent::Dag(Ok(view)));
    h.snap_both("tui_dag_capped");
    let s = h.screen(80, 24);
    assert!(shows(&s, "↑ 2,000 older not shown (5,000 loaded, the most)"), "{s}");
    assert!(shows(&s, "docdex dag view s-2 --before 2001 reads them"), "{s}");
    assert!(!status(&h, 80, 24).contains("older steps"), "no hint for a key that loads nothing");
    h.key(KeyCode::Char('o'));
    assert!(h.requests().is_empty(), "nothing more is loaded at the cap");
    // The list is drawn as the selection moves to its far end.
    h.key(KeyCode::End);
    assert!(shows(&h.screen(80, 24), &format!("[Thought] step {}", filler - 1)));
}

#[test]
fn continuing_a_long_session_in_chat_brings_the_turns_the_history_holds_not_the_newest_nodes() {
    // Tour: `enter` in the DAG pane rebuilt the chat from the session's newest 1,000 nodes:
    // 125 turns of 8 steps, though the chat's history could hold twice as many.
    use docdex::engine::dag::{DagStore, NodeKind, TurnRequest};
    use docdex::tui::event::Request;
    let mut h = Harness::new().started();
    let store = DagStore::open(&h.engine.resolve_repo(&h.repo).unwrap()).unwrap();
    for k in 1..=400 {
        let request = TurnRequest { session: Some("long"), agent_id: None, title: "a long chat", label: "q" };
        let (_, r) = store.begin_turn(request, |_| serde_json::json!({ "query": format!("question {k}") })).unwrap();
        for step in 0..6 {
            store.add_node("long", NodeKind::Thought, &format!("step {step}"), &serde_json::json!({}), &[r]).unwrap();
        }
        let answer = serde_json::json!({ "answer": format!("answer {k}") });
        store.add_node("long", NodeKind::Observation, "answer", &answer, &[r]).unwrap();
    }
    h.alt('5');
    h.pump();
    h.key(KeyCode::Enter);
    let asked = h.requests();
    assert_eq!(asked, vec![Request::LoadConversation { repo: h.repo.clone(), session: "long".into() }]);
    for r in asked {
        for e in docdex::tui::worker::run_sync(&h.engine, r) {
            h.engine_event(e);
        }
    }
    let want = h.engine.dag_conversation(&h.repo, "long").unwrap();
    assert!(want.turns.len() > 125 && want.turns.len() < 400, "bounded by tokens, not nodes: {}", want.turns.len());
    let texts: Vec<&str> = h.app.chat().cells().iter().map(|c| c.text.as_str()).collect();
    let questions: Vec<&str> = texts.iter().copied().filter(|t| t.starts_with("question ")).collect();
    assert_eq!(questions.len(), want.turns.len());
    assert_eq!(questions.last(), Some(&"question 400"));
    let older = 400 - want.turns.len();
    assert_eq!(
        texts[0],
        format!(
            "({older} earlier turns left out: more than the model's history holds; `docdex dag view long` shows them)"
        )
    );
    assert_eq!(texts.last(), Some(&"answer 400"));
}

#[test]
fn symbol_search_says_it_takes_names_not_a_description() {
    // Tour: after ctrl+t the query box still asked for "a plain-language description".
    let mut h = Harness::new().started();
    assert!(shows(&h.screen(80, 24), "a plain-language description"));
    h.ctrl('t');
    let s = h.screen(80, 24);
    assert!(shows(&s, "Symbol search") && shows(&s, "a function, type or constant name"), "{s}");
    assert!(!shows(&s, "plain-language"), "{s}");
    assert!(shows(&s, "Type a name to search the symbols of fixture"), "{s}");
}

#[test]
fn enter_while_an_answer_streams_keeps_the_message_and_says_how_to_stop() {
    // Tour: while an answer streamed, enter did nothing at all (the message sat in the box),
    // and at 80 columns the footer showed `enter send` but not the key that stops the answer.
    let mut h = Harness::new().started();
    h.alt('3');
    h.typ("how is config parsed?");
    h.key(KeyCode::Enter);
    assert!(h.requests().iter().any(|r| matches!(r, docdex::tui::event::Request::Chat { .. })));
    assert!(h.app.chat().streaming());
    h.wait(7_000);
    let bar = status(&h, 80, 24);
    assert!(bar.contains("ctrl+s stop") && !bar.contains("enter send"), "{bar}");
    assert!(shows(&h.screen(80, 24), "ctrl+s stops the answer"), "{}", h.screen(80, 24));
    h.typ("and the q? next one");
    h.key(KeyCode::Enter);
    assert!(!h.requests().iter().any(|r| matches!(r, docdex::tui::event::Request::Chat { .. })), "one turn at a time");
    assert_eq!(h.app.chat().input_text(), "and the q? next one", "the message waits in the box");
    let notice = h.app.notice().unwrap_or_default().to_string();
    assert!(notice.contains("still coming") && notice.contains("ctrl+s"), "{notice}");
}

#[test]
fn a_pane_key_with_nothing_to_act_on_is_not_called_no_key() {
    // Tour: `e` in an empty Impact pane said "`e` is not a key in Impact; f1 lists them", and
    // f1 listed `e` for Impact.
    let mut h = Harness::new().started();
    h.alt('6');
    h.typ("e");
    let notice = h.app.notice().unwrap_or_default().to_string();
    assert!(!notice.contains("is not a key"), "{notice}");
    assert!(notice.contains("`e` (open the selected file in $EDITOR): nothing to act on in Impact yet"), "{notice}");
    assert!(h.app.take_effects().is_empty(), "no editor without a file");
}

#[test]
fn a_paste_in_normal_mode_goes_to_the_text_field_like_a_typed_letter() {
    // Tour: esc, then paste an identifier: the paste was dropped without a word.
    let mut h = Harness::new().started();
    h.key(KeyCode::Esc);
    assert_eq!(h.app.mode(), Mode::Normal);
    h.app.handle(docdex::tui::event::AppEvent::Input(crossterm::event::Event::Paste("SessionStore".into())));
    assert_eq!(h.app.search().query(), "SessionStore");
    assert_eq!(h.app.mode(), Mode::Insert);
    // A pane without a text field says so.
    h.alt('6');
    h.app.handle(docdex::tui::event::AppEvent::Input(crossterm::event::Event::Paste("x".into())));
    assert!(h.app.notice().is_some_and(|n| n.contains("Impact has no text field")), "{:?}", h.app.notice());
}

fn key_event(code: KeyCode, mods: KeyModifiers) -> AppEvent {
    AppEvent::Input(Event::Key(KeyEvent::new(code, mods)))
}

/// A 200 KB message delivered as keys (a terminal without bracketed paste, a tool that types)
/// took minutes: the text area lays out its whole text after every key, and the loop took
/// every queued key before looking at signals. Keys queued together now go in as one run,
/// in order with the editing keys and commands between them.
#[test]
fn a_burst_of_typed_keys_goes_in_at_once_and_in_order() {
    let mut h = Harness::new().started();
    h.alt('3');
    let text = "lorem ipsum dolor sit amet ".repeat(8_000);
    let mut burst: Vec<AppEvent> = text.chars().map(|c| key_event(KeyCode::Char(c), KeyModifiers::NONE)).collect();
    // Editing keys inside the burst apply where they fall: home, then "Re: " before the text.
    burst.push(key_event(KeyCode::Char('a'), KeyModifiers::CONTROL));
    burst.extend("Re: ".chars().map(|c| key_event(KeyCode::Char(c), KeyModifiers::SHIFT)));
    h.app.handle_all(burst);
    let typed = h.app.chat().input_text();
    assert_eq!(typed.len(), text.len() + 4);
    assert_eq!(typed, format!("Re: {text}"));

    // Keys that are commands stay commands: esc leaves the field, then `q` asks before quitting
    // and `ctrl+c` quits, though they came in the same batch as typed letters.
    h.app.handle_all([
        key_event(KeyCode::Char('x'), KeyModifiers::NONE),
        key_event(KeyCode::Esc, KeyModifiers::NONE),
        key_event(KeyCode::Char('q'), KeyModifiers::NONE),
    ]);
    assert!(h.app.chat().input_text().starts_with("Re: xlorem"), "typed where the cursor was");
    assert!(!h.app.should_quit());
    assert!(shows(&h.screen(80, 24), "Quit"), "{}", h.screen(80, 24));
    h.key(KeyCode::Esc);
    h.app.handle_all([
        key_event(KeyCode::Char('i'), KeyModifiers::NONE),
        key_event(KeyCode::Char('c'), KeyModifiers::CONTROL),
    ]);
    assert!(h.app.should_quit());
}

/// tour18 F3: help listed `[navigate]`'s `left, h  Move left` and `right, l  Move right` in
/// Search, where `h` and `l` are typed into the query (the pane has no sideways move), and in
/// Repos `h` said "(move left): nothing to act on in Repos yet". Help now lists the moves the
/// pane acts on, and such a key is no key of the pane.
#[test]
fn help_lists_only_the_moves_the_pane_acts_on() {
    let mut h = Harness::new().started();
    h.alt('2');
    h.key(KeyCode::F(1));
    let s = h.screen(120, 80);
    assert!(shows(&s, "Move down") && shows(&s, "First item"), "{s}");
    assert!(!shows(&s, "Move left") && !shows(&s, "Move right"), "no sideways move in Search: {s}");
    assert!(!shows(&s, "left (left)"), "nor among the keys a text field shadows: {s}");
    h.key(KeyCode::Esc);
    // The impact graph moves sideways: its help says so.
    h.alt('6');
    h.key(KeyCode::F(1));
    let s = h.screen(120, 80);
    assert!(shows(&s, "left, h") && shows(&s, "Move left"), "{s}");
    h.key(KeyCode::Esc);
    h.alt('1');
    h.key(KeyCode::Char('h'));
    let s = h.screen(120, 40);
    assert!(shows(&s, "`h` is not a key in Repos"), "{s}");
}

/// tour29 F3: the Trace pane's help listed `enter  Choose the selected item`, and `enter` there
/// did nothing and said nothing (the trace has no selection). Its help leaves `enter` out, and
/// a key the pane's help does not list says so even when it is not a letter (`left` in Repos
/// was silent too, where `h` said "not a key").
#[test]
fn help_in_trace_lists_no_enter_and_an_unlisted_key_says_so() {
    let mut h = Harness::new().started();
    h.alt('4');
    h.key(KeyCode::F(1));
    let s = h.screen(120, 80);
    assert!(shows(&s, "Move down") && shows(&s, "Move left"), "{s}");
    assert!(!shows(&s, "Choose the selected item"), "nothing to choose in Trace: {s}");
    h.key(KeyCode::Esc);
    h.key(KeyCode::Enter);
    let s = h.screen(120, 40);
    assert!(shows(&s, "`enter` is not a key in Trace"), "{s}");
    h.key(KeyCode::Esc);
    assert!(!shows(&h.screen(120, 40), "`esc` is not a key"), "esc stays quiet");
    h.alt('1');
    h.key(KeyCode::Left);
    let s = h.screen(120, 40);
    assert!(shows(&s, "`left` is not a key in Repos"), "{s}");
}

/// tour29 F4: a keymap binding `ctrl+c` to another action (`[search] toggle_symbols =
/// ["ctrl+c"]`) was taken without a word, and `ctrl+c` then toggled symbol search instead of
/// quitting: the way out from anywhere was gone (help listed ctrl+c twice). Such a line is a
/// mistake with its line number, the shipped keymap stays, and `ctrl+c` quits.
#[test]
fn a_keymap_cannot_take_ctrl_c_away_from_quit() {
    let file = "[search]\ntoggle_symbols = [\"ctrl+c\"]\n";
    let mut h = Harness::with_files("", &[("keymaps/default.toml", file)]).started();
    h.key(KeyCode::F(1));
    let s = h.screen(120, 40);
    assert!(shows(&s, "keymaps/default.toml:2: `ctrl+c` always quits docdex"), "{s}");
    h.key(KeyCode::Esc);
    assert_eq!(h.app.focus(), PaneId::Search);
    h.ctrl('c');
    assert!(h.app.should_quit(), "ctrl+c quits from the query box");
}
