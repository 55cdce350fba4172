//! The Profile pane as an editor, driven with keys over a real engine and a real profile
//! database: every change goes out as a `Request::Profile` (nothing is written until the
//! worker runs it) and is checked in the database afterwards.

use crate::tui_support::{shows, Harness};
use crossterm::event::KeyCode;
use docdex::engine::protocol::{
    Category, Preference, PreferenceHit, ProfileListRequest, ProfileSearchResponse, RecallMode,
};
use docdex::tui::event::{EngineEvent, ProfileJob, ProfileUpdate, Request};

fn prefs_of(h: &Harness, agent: &str) -> Vec<Preference> {
    h.engine
        .profile_list(&ProfileListRequest { agent_id: Some(agent.into()), ..Default::default() })
        .expect("list")
        .preferences
}

fn profile_jobs(reqs: &[Request]) -> Vec<ProfileJob> {
    reqs.iter().filter_map(|r| if let Request::Profile(j) = r { Some(j.clone()) } else { None }).collect()
}

/// The Profile pane, loaded, with `agent` selected (agents are listed by id).
fn open_on(agent: &str) -> Harness {
    let mut h = Harness::new().started();
    h.alt('7');
    h.pump();
    let i = h.app.profile().agents().iter().position(|a| a.id == agent).expect("agent listed");
    for _ in 0..i {
        h.key(KeyCode::Down);
        h.pump();
    }
    assert_eq!(h.app.profile().agent(), Some(agent));
    h
}

#[test]
fn profile_pane_lists_agents_and_their_preferences_by_category() {
    let mut h = Harness::new().started();
    h.alt('7');
    // Focusing the pane asks the engine (off the UI thread): nothing is shown before the answer.
    let jobs = profile_jobs(&h.requests());
    assert_eq!(jobs, vec![ProfileJob::List { agent: None }]);
    for r in h.sent.clone().into_iter().filter(|r| matches!(r, Request::Profile(_))) {
        for e in docdex::tui::worker::run_sync(&h.engine, r) {
            h.engine_event(e);
        }
    }
    // The first agent's preferences are asked for next.
    let jobs = profile_jobs(&h.requests());
    assert_eq!(jobs, vec![ProfileJob::List { agent: Some("mcoda_backend".into()) }]);
    h.sent.clear();
    h.engine_event(docdex::tui::event::EngineEvent::Profile(docdex::tui::event::ProfileUpdate::Listed {
        agent: Some("mcoda_backend".into()),
        result: h
            .engine
            .profile_list(&ProfileListRequest { agent_id: Some("mcoda_backend".into()), ..Default::default() })
            .map_err(|e| e.to_string()),
    }));
    let s = h.screen(120, 40);
    for needle in ["mcoda_backend", "mcoda_frontend", "mcoda_security", "team", "constraint (", " built-in"] {
        assert!(shows(&s, needle), "{needle}:\n{s}");
    }
    // tour18 F12: a starter preference reads as built-in, not as aged from the defaults' date.
    assert!(!shows(&s, "seed ·"), "{s}");
    h.snap_both("tui_profile");
    // Switching agent lists the new one's preferences; its rules are shown, advice-only ones say so.
    h.key(KeyCode::Down);
    h.pump();
    assert_eq!(h.app.profile().agent(), Some("mcoda_frontend"));
    let s = h.screen(120, 40);
    assert!(shows(&s, "[forbid-node typescript predefined_type any]"), "{s}");
    h.snap_both("tui_profile_frontend");
}

#[test]
fn profile_editor_adds_with_the_rule_validated_as_you_type() {
    let mut h = open_on("mcoda_frontend");
    let before = prefs_of(&h, "mcoda_frontend").len();
    h.key(KeyCode::Char('a'));
    assert!(h.app.profile().editing());
    h.typ("Deprecate usage of moment.js");
    // A style preference carries no rule; two steps on is a constraint, whose rule is
    // recognised from the text as it stands.
    h.ctrl('t');
    h.ctrl('t');
    let s = h.screen(120, 40);
    assert!(shows(&s, "✓ rule forbid-import moment recognised from the text"), "{s}");
    h.snap_both("tui_profile_form");
    // A bad rule is refused while typing, with the grammar.
    h.key(KeyCode::Down);
    h.typ("forbid-node typescript");
    let s = h.screen(120, 40);
    assert!(shows(&s, "✗") && shows(&s, "rules: no-import-cycles"), "{s}");
    h.snap_both("tui_profile_rule_error");
    // Enter refuses to send it, and says so where a key's outcome shows (tour18 F11: the ✗ line
    // alone read as if enter did nothing); the form stays open with what was typed.
    h.key(KeyCode::Enter);
    assert!(profile_jobs(&h.requests()).is_empty());
    let notice = h.app.notice().unwrap_or_default();
    assert!(notice.starts_with("not saved: ") && notice.contains("fix or clear the rule field"), "{notice:?}");
    assert!(h.app.profile().editing(), "the form stays open");
    let s = h.screen(120, 40);
    assert!(shows(&s, "not saved:") && shows(&s, "Deprecate usage of moment.js"), "{s}");
    assert!(shows(&s, "forbid-node typescript"), "the rule typed stays: {s}");
    h.ctrl('u');
    h.typ("forbid-import moment");
    h.key(KeyCode::Enter);
    // Sent, not yet written: the engine runs it off the UI thread.
    let jobs = profile_jobs(&h.requests());
    assert!(
        matches!(&jobs[..], [ProfileJob::Add(a)] if a.agent_id == "mcoda_frontend" && a.category == Some(Category::Constraint) && a.rule.as_deref() == Some("forbid-import moment")),
        "{jobs:?}"
    );
    assert!(shows(&h.screen(120, 40), "saving…"));
    assert_eq!(prefs_of(&h, "mcoda_frontend").len(), before);
    for r in h.sent.clone().into_iter().filter(|r| matches!(r, Request::Profile(ProfileJob::Add(_)))) {
        for e in docdex::tui::worker::run_sync(&h.engine, r) {
            h.engine_event(e);
        }
    }
    h.pump();
    assert!(!h.app.profile().editing());
    let prefs = prefs_of(&h, "mcoda_frontend");
    assert_eq!(prefs.len(), before + 1);
    let added = prefs.iter().find(|p| p.content == "Deprecate usage of moment.js").expect("added");
    assert_eq!(added.rule.as_deref(), Some("forbid-import moment"));
    // The new preference is selected and listed with its rule.
    assert_eq!(h.app.profile().selected_preference().map(|p| p.id.clone()), Some(added.id.clone()));
    assert!(h.app.notice().is_some_and(|n| n.contains("saved")), "{:?}", h.app.notice());
}

#[test]
fn profile_editor_edits_moves_and_removes() {
    let mut h = open_on("mcoda_qa");
    h.key(KeyCode::Right);
    let target = h.app.profile().selected_preference().cloned().expect("a preference");
    // Edit: the form opens with its text; replace it.
    h.key(KeyCode::Char('e'));
    assert!(h.app.profile().editing());
    h.ctrl('u');
    h.typ("Reproduce every bug with a failing test before fixing it.");
    h.key(KeyCode::Enter);
    h.pump();
    let now = prefs_of(&h, "mcoda_qa");
    let edited = now.iter().find(|p| p.id == target.id).expect("same id");
    assert_eq!(edited.content, "Reproduce every bug with a failing test before fixing it.");
    assert_eq!(edited.source, docdex::engine::protocol::PreferenceSource::Manual);
    // Move to the next category with one key.
    assert_eq!(h.app.profile().selected_preference().map(|p| p.id.clone()), Some(target.id.clone()));
    h.key(KeyCode::Char('m'));
    h.pump();
    let moved = prefs_of(&h, "mcoda_qa").into_iter().find(|p| p.id == target.id).expect("kept");
    assert_eq!(moved.category, edited.category.next());
    // Remove asks first; `n` keeps it, `y` removes it.
    let sel = h.app.profile().selected_preference().cloned().expect("selected");
    h.key(KeyCode::Char('d'));
    assert!(shows(&h.screen(120, 40), "y removes"));
    h.key(KeyCode::Char('n'));
    assert!(profile_jobs(&h.requests()).is_empty());
    h.key(KeyCode::Char('d'));
    h.snap_both("tui_profile_confirm_remove");
    // `enter` is no answer to a yes/no question.
    h.key(KeyCode::Enter);
    h.pump();
    assert!(profile_jobs(&h.requests()).is_empty());
    assert!(prefs_of(&h, "mcoda_qa").iter().any(|p| p.id == sel.id));
    h.key(KeyCode::Char('y'));
    h.pump();
    assert!(prefs_of(&h, "mcoda_qa").iter().all(|p| p.id != sel.id));
    assert_eq!(prefs_of(&h, "mcoda_qa").len(), now.len() - 1);
    // In words (it said "removed 1 preference(s) of mcoda_qa"; tour18 F4).
    let notice = h.app.notice().unwrap_or_default().to_string();
    assert_eq!(notice, "removed 1 preference of mcoda_qa");
}

#[test]
fn moving_a_constraint_with_a_rule_asks_first_and_moving_it_back_restores_the_rule() {
    let mut h = open_on("mcoda_frontend");
    h.key(KeyCode::Char('a'));
    h.typ("deprecate moment.js soon");
    h.ctrl('t');
    h.ctrl('t');
    h.key(KeyCode::Down);
    h.typ("max-lines 500");
    h.key(KeyCode::Enter);
    h.pump();
    let rule_of = |h: &Harness, content: &str| {
        let p = prefs_of(h, "mcoda_frontend").into_iter().find(|p| p.content == content).expect("listed");
        (p.category, p.rule)
    };
    let text = "deprecate moment.js soon";
    assert_eq!(rule_of(&h, text), (Category::Constraint, Some("max-lines 500".into())));
    // The first `m` only says what moving would do.
    h.key(KeyCode::Char('m'));
    h.pump();
    assert_eq!(rule_of(&h, text), (Category::Constraint, Some("max-lines 500".into())));
    assert!(h.app.notice().is_some_and(|n| n.contains("again") && n.contains("max-lines 500")), "{:?}", h.app.notice());
    // The second moves it; the rule goes, as only constraints carry rules.
    h.key(KeyCode::Char('m'));
    h.pump();
    assert_eq!(rule_of(&h, text), (Category::Constraint.next(), None));
    // Round the categories back to constraint: the rule the user typed comes back, not one
    // recognised from the text.
    let mut guard = 0;
    while rule_of(&h, text).0 != Category::Constraint {
        h.key(KeyCode::Char('m'));
        h.pump();
        guard += 1;
        assert!(guard < 6, "never came back to constraint");
    }
    assert_eq!(rule_of(&h, text), (Category::Constraint, Some("max-lines 500".into())));
}

#[test]
fn profile_pane_searches_exports_and_imports() {
    let mut h = open_on("mcoda_backend");
    h.key(KeyCode::Char('/'));
    h.typ("circular dependencies between modules");
    h.key(KeyCode::Enter);
    h.pump();
    let s = h.screen(120, 40);
    // No embedder in this home: recall by words, and the pane says so.
    assert!(shows(&s, "(by words)"), "{s}");
    assert!(shows(&s, "[no-import-cycles]"), "{s}");
    h.snap_both("tui_profile_search");
    // Esc leaves the results for the whole list.
    h.key(KeyCode::Esc);
    assert!(!shows(&h.screen(120, 40), "(by words)"));
    // Export writes a manifest under profiles/sync/; import merges it back (nothing newer).
    h.key(KeyCode::Char('X'));
    h.pump();
    let notice = h.app.notice().expect("notice").to_string();
    assert!(notice.contains("exported"), "{notice}");
    let path = notice.rsplit(" to ").next().expect("path").to_string();
    assert!(std::path::Path::new(&path).is_file(), "{path}");
    h.key(KeyCode::Char('I'));
    h.typ(&path);
    h.key(KeyCode::Enter);
    h.pump();
    let notice = h.app.notice().expect("notice").to_string();
    assert!(notice.contains("imported: 0 added, 0 updated"), "{notice}");
    // A bad path is the engine's clear error, in the status bar.
    h.key(KeyCode::Char('I'));
    h.typ("/no/such/manifest.json");
    h.key(KeyCode::Enter);
    h.pump();
    assert!(h.app.notice().is_some_and(|n| n.contains("/no/such/manifest.json")), "{:?}", h.app.notice());
}

/// The status bar (last row) at a size.
fn status_bar(h: &Harness, w: u16, hh: u16) -> String {
    h.screen(w, hh).lines().last().unwrap_or_default().to_string()
}

#[test]
fn removing_a_long_preference_at_80x24_shows_the_answers_and_the_footer_says_what_esc_does() {
    // Tour: at 80x24 the question about a long preference was cut before its answers
    // (`Remove "Validate input … t…`), tagged INS with `esc normal` in the footer.
    let mut h = open_on("mcoda_backend");
    h.key(KeyCode::Right);
    h.key(KeyCode::Char('d'));
    h.wait(7_000);
    let s = h.screen(80, 24);
    assert!(shows(&s, "y removes it, n or esc keeps it"), "{s}");
    assert_eq!(h.app.mode(), docdex::tui::app::Mode::Normal, "nothing is typed into a yes/no question");
    let bar = status_bar(&h, 80, 24);
    assert!(bar.starts_with(" NOR ") && bar.contains("esc keep") && !bar.contains("esc normal"), "{bar}");
    h.key(KeyCode::Esc);
    assert!(!shows(&h.screen(80, 24), "keeps it"), "esc keeps the preference and closes the question");
    // The add form: esc closes it with its text, so the footer says cancel, not normal.
    h.key(KeyCode::Char('a'));
    h.typ("q? stays text");
    let bar = status_bar(&h, 80, 24);
    assert!(bar.starts_with(" INS ") && bar.contains("esc cancel") && !bar.contains("esc normal"), "{bar}");
    assert!(!h.app.should_quit());
}

#[test]
fn at_60_columns_preference_rows_shorten_instead_of_running_past_the_edge() {
    // Tour: at 60x20 the rule and age ran past the pane (`[no-import-cycles] seed · `, `47w a`)
    // and category notes stopped mid-word.
    let mut h = open_on("mcoda_backend");
    h.key(KeyCode::Right);
    let s = h.screen(60, 20);
    // tour18 F14: the header (agent and role) is cut at the frame with `…`, not mid-word bare.
    let header = s.lines().find(|l| l.contains("mcoda_backend · ")).expect("header");
    assert!(header.contains("… ╮"), "{header:?} in\n{s}");
    let prefs: Vec<&str> = s.lines().filter(|l| l.contains("[advice only") || l.contains("[no-import")).collect();
    assert_eq!(prefs.len(), 2, "{s}");
    for l in &prefs {
        let inner = l.trim_end().trim_end_matches('│');
        assert!(
            inner.ends_with("built-in") || inner.trim_end().ends_with(']') || inner.trim_end().ends_with('…'),
            "{l:?} in\n{s}"
        );
        assert!(!inner.contains("built-") || inner.ends_with("built-in"), "half a source: {l:?}");
    }
    for l in s.lines().filter(|l| l.contains("tooling (") || l.contains("constraint (")) {
        let inner = l.trim_end().trim_end_matches('│').trim_end();
        assert!(inner.ends_with('…') || inner.ends_with("map") || inner.ends_with("rule"), "{l:?} in\n{s}");
    }
}

/// An edit form opened on a preference that then changed elsewhere (the CLI, another window, a
/// sync) saved its stale text, category and rule over that change, unseen. The save is now
/// refused with the current version shown, the typed text kept and the list reloaded; a second
/// `enter` is a deliberate overwrite.
#[test]
fn an_edit_made_elsewhere_meanwhile_is_not_overwritten_unseen() {
    let mut h = open_on("mcoda_qa");
    h.key(KeyCode::Right);
    let target = h.app.profile().selected_preference().cloned().expect("a preference");
    h.key(KeyCode::Char('e'));
    h.ctrl('u');
    h.typ("Mock only at the network boundary.");
    // Meanwhile, on the CLI: a new text and another category.
    h.engine
        .profile_edit(&docdex::engine::protocol::ProfileEditRequest {
            id: target.id.clone(),
            content: Some("Keep fixtures small and named after the case.".into()),
            category: Some(Category::Workflow),
            ..Default::default()
        })
        .expect("edit elsewhere");
    h.key(KeyCode::Enter);
    h.pump();
    let now = prefs_of(&h, "mcoda_qa").into_iter().find(|p| p.id == target.id).expect("kept");
    assert_eq!(
        (now.content.as_str(), now.category),
        ("Keep fixtures small and named after the case.", Category::Workflow),
        "the change made elsewhere stands"
    );
    assert!(h.app.profile().editing(), "the form stays open with the typed text");
    let s = h.screen(120, 40);
    assert!(shows(&s, "changed after you read it") && shows(&s, "enter saves yours over it"), "{s}");
    h.snap_both("tui_profile_changed_meanwhile");
    // A second enter saves the typed text over it, knowingly.
    h.key(KeyCode::Enter);
    h.pump();
    let now = prefs_of(&h, "mcoda_qa").into_iter().find(|p| p.id == target.id).expect("kept");
    assert_eq!(now.content, "Mock only at the network boundary.");
    assert!(!h.app.profile().editing());
    // The form's empty rule field on a style preference removes no rule, and says what style does.
    let notice = h.app.notice().unwrap_or_default();
    assert!(notice.contains("style: advice") && !notice.contains("rule removed"), "{notice}");
}

/// A preference stored before the engine refused control characters (an escape sequence, a
/// line break, a bell) was drawn as given: the escape went into the screen's cells and its
/// row's columns no longer met the border. It is drawn on one line without them.
#[test]
fn a_stored_preference_with_control_characters_is_drawn_on_one_clean_row() {
    let mut h = Harness::new().started();
    h.engine.profile_list(&ProfileListRequest::default()).expect("seeded");
    let db = rusqlite::Connection::open(h.engine.profile_db_path()).unwrap();
    db.execute(
        "INSERT INTO preferences(id, agent_id, content, category, last_updated, source)
         VALUES ('6d0e9f80-2b3c-4d4e-9f00-1b2c3d4e5f60', 'mcoda_backend', 'line1\nline2\u{1b}[31mRED\u{7}', 'style', 1767225600000, 'manual')",
        [],
    )
    .unwrap();
    h.alt('7');
    h.pump();
    let s = h.screen(80, 24);
    assert!(shows(&s, "line1 line2[31mRED") && !s.contains('\u{1b}') && !s.contains('\u{7}'), "{s}");
    h.snap_both("tui_profile_control_characters");
}

/// The removal question names a text; if the preference was edited elsewhere before the `y`,
/// the other text was removed unseen. It is now kept, the status line says why and the list
/// shows the current text.
#[test]
fn a_removal_confirmed_after_an_edit_elsewhere_keeps_the_preference() {
    let mut h = open_on("mcoda_qa");
    h.key(KeyCode::Right);
    let target = h.app.profile().selected_preference().cloned().expect("a preference");
    h.key(KeyCode::Char('d'));
    h.engine
        .profile_edit(&docdex::engine::protocol::ProfileEditRequest {
            id: target.id.clone(),
            content: Some("Keep fixtures next to the tests that use them.".into()),
            ..Default::default()
        })
        .expect("edit elsewhere");
    h.key(KeyCode::Char('y'));
    h.pump();
    let now = prefs_of(&h, "mcoda_qa");
    assert!(now.iter().any(|p| p.id == target.id), "kept");
    let notice = h.app.notice().unwrap_or_default();
    assert!(notice.contains("changed after you read it"), "{notice}");
    let s = h.screen(120, 40);
    assert!(shows(&s, "Keep fixtures next to the tests"), "the list shows the current text:\n{s}");
}

/// A yes/no question reads its keys itself: a `y` that arrives with other queued keys answers
/// it (keys queued together are typed as one run only into a text field).
#[test]
fn a_queued_answer_to_remove_is_an_answer_not_text() {
    use crossterm::event::{Event, KeyEvent, KeyModifiers};
    use docdex::tui::event::AppEvent;
    let mut h = open_on("mcoda_qa");
    h.key(KeyCode::Right);
    let sel = h.app.profile().selected_preference().cloned().expect("selected");
    let before = prefs_of(&h, "mcoda_qa").len();
    h.app.handle_all([
        AppEvent::Input(Event::Key(KeyEvent::new(KeyCode::Char('d'), KeyModifiers::NONE))),
        AppEvent::Input(Event::Key(KeyEvent::new(KeyCode::Char('y'), KeyModifiers::NONE))),
    ]);
    h.pump();
    assert!(prefs_of(&h, "mcoda_qa").iter().all(|p| p.id != sel.id));
    assert_eq!(prefs_of(&h, "mcoda_qa").len(), before - 1);
}

/// At 40x10 the Add form had 2 rows inside its frame and drew nothing in them: the user typed
/// blind. It now shows the active field with what is typed, and the keys under it.
#[test]
fn at_40x10_the_add_form_shows_what_is_typed() {
    let mut h = open_on("mcoda_qa");
    h.key(KeyCode::Char('a'));
    h.typ("Keep tests fast");
    let s = h.screen(40, 10);
    assert!(s.contains("text Keep tests fast"), "{s}");
    assert!(s.contains("save") && s.contains("cancel"), "{s}");
}

/// tour18 F5's rest: a negative score (`-0.25`) took one column more than `0.42` and pushed its
/// row's text right, and so did a shorter category. Scores and categories now sit in columns of
/// fixed width. The search's answer is the engine's type with the scores a search by meaning
/// can give (cosine similarity, -1 to 1); this home has no embedder to give them for real.
#[test]
fn a_negative_search_score_keeps_the_rows_text_in_its_column() {
    let mut h = open_on("mcoda_backend");
    h.key(KeyCode::Char('/'));
    h.typ("database access");
    h.key(KeyCode::Enter);
    h.pump_except(|r| matches!(r, Request::Profile(ProfileJob::Search(_))));
    let prefs = prefs_of(&h, "mcoda_backend");
    // One preference of each category the agent has, first seen first.
    let mut picked: Vec<Preference> = Vec::new();
    for p in prefs {
        if !picked.iter().any(|q| q.category == p.category) {
            picked.push(p);
        }
    }
    assert!(picked.len() >= 2, "{picked:?}");
    let scores = [0.42, -0.25, -1.0, 0.0];
    let results: Vec<PreferenceHit> = picked
        .iter()
        .zip(scores)
        .map(|(p, similarity_score)| PreferenceHit { preference: p.clone(), similarity_score })
        .collect();
    let answer = ProfileSearchResponse {
        agent_id: "mcoda_backend".into(),
        query: "database access".into(),
        mode: RecallMode::Vector,
        results: results.clone(),
        notice: None,
    };
    h.engine_event(EngineEvent::Profile(ProfileUpdate::Searched(Ok(answer))));
    for (w, rows) in [(80, 24), (120, 40)] {
        let s = h.screen(w, rows);
        assert!(shows(&s, "-0.25 "), "{s}");
        let starts: Vec<usize> = results
            .iter()
            .map(|hit| {
                let head: String = hit.preference.content.chars().take(8).collect();
                let line = s.lines().find(|l| l.contains(&head)).unwrap_or_else(|| panic!("{head} drawn: {s}"));
                line[..line.find(&head).unwrap_or(0)].chars().count()
            })
            .collect();
        assert!(starts.windows(2).all(|p| p[0] == p[1]), "every row's text starts in one column: {starts:?}\n{s}");
    }
    h.snap_both("tui_profile_search_negative");
}
