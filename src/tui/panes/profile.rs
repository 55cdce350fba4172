//! The profile editor: agents on the left, the selected agent's preferences by category on the
//! right (each with its rule, source and age), and a form at the bottom to add or edit one,
//! with its rule validated as you type (the same `settle_rule` every surface uses). Search by
//! meaning, import and export. Every engine call goes out as a [`Request::Profile`] and comes
//! back as an [`EngineEvent::Profile`], so the pane never waits on the database or an embedder.

use super::{Cx, Pane, PaneId, RenderCtx};
use crate::engine::protocol::{
    category_behaviour, settle_rule, AgentSummary, Category, Preference, PreferenceHit, PreferenceSource,
    ProfileAddRequest, ProfileEditRequest, ProfileExportResponse, ProfileImportResponse, ProfileListResponse,
    ProfileRemoveRequest, ProfileRemoveResponse, ProfileSearchRequest, ProfileSearchResponse, ProfileWriteResponse,
    RecallMode, CHANGED_MEANWHILE,
};
use crate::tui::action::Level;
use crate::tui::event::{EngineEvent, ProfileJob, ProfileUpdate, Request};
use crate::tui::keymap::Command;
use crate::tui::theme::Slot;
use crate::tui::widgets::text_field::TextField;
use crate::tui::widgets::{self, frame, scroll_to, truncate};
use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;
use std::cell::Cell;
use std::path::PathBuf;

/// Width of the agents column.
const AGENTS_WIDTH: u16 = 30;
/// Preferences asked for by a search.
const SEARCH_LIMIT: usize = 50;
/// Columns a preference's text keeps before its rule and age are shortened.
const PREF_TEXT_MIN: usize = 12;

/// Which column the selection moves in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// The agents.
    Agents,
    /// The selected agent's preferences (or the search hits).
    Preferences,
}

/// Which field of the add/edit form has the cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Text,
    Rule,
}

/// The add/edit form.
#[derive(Debug, Clone)]
struct EditForm {
    /// `None` adds a preference; `Some(id)` edits that one.
    id: Option<String>,
    /// The edited preference's `last_updated` when the form opened (the engine refuses the
    /// save if it changed meanwhile).
    read_at: Option<i64>,
    agent: String,
    category: Category,
    text: TextField,
    rule: TextField,
    field: Field,
    /// Sent; waiting for the engine's answer.
    saving: bool,
    /// The engine refused the last save (the form stays open with the reason).
    error: Option<String>,
}

impl EditForm {
    /// What the rule field means right now: `Ok((rule, note))` or the reason it is refused.
    fn verdict(&self) -> Result<(Option<String>, String), String> {
        let rule = self.rule.text().trim();
        settle_rule(self.category, Some(rule).filter(|r| !r.is_empty()), self.text.text()).map_err(|e| e.to_string())
    }
}

/// What the bottom of the pane is asking for.
#[derive(Debug, Clone)]
enum Form {
    None,
    Edit(Box<EditForm>),
    Search(TextField),
    Import(TextField),
    ConfirmRemove { id: String, content: String, read_at: i64 },
}

/// A search by meaning and what it found.
#[derive(Debug, Clone)]
struct Found {
    query: String,
    mode: RecallMode,
    hits: Vec<PreferenceHit>,
    notice: Option<String>,
}

/// How long a first `m` on a constraint with a rule waits for the second.
const MOVE_CONFIRM: std::time::Duration = std::time::Duration::from_secs(5);

/// The profile pane's state.
#[derive(Debug)]
pub struct ProfilePane {
    agents: Vec<AgentSummary>,
    agent: usize,
    /// The selected agent's preferences, grouped by category (the engine's order).
    prefs: Vec<Preference>,
    /// Whose preferences `prefs` are.
    prefs_of: Option<String>,
    selected: usize,
    column: Column,
    form: Form,
    found: Option<Found>,
    /// A preference to select once the next listing arrives (the one just saved).
    pending_select: Option<String>,
    /// A constraint whose rule the next `m` (within a few seconds) drops: the first `m` asks.
    move_armed: Option<(String, std::time::Instant)>,
    /// Rules of constraints moved to another category in this session, by preference id: moving
    /// one back to constraint gives its rule back.
    set_aside: std::collections::HashMap<String, String>,
    loading: bool,
    requested: bool,
    error: Option<String>,
    db: PathBuf,
    offset: Cell<usize>,
    rows: Cell<u16>,
}

impl Default for ProfilePane {
    fn default() -> Self {
        ProfilePane {
            agents: Vec::new(),
            agent: 0,
            prefs: Vec::new(),
            prefs_of: None,
            selected: 0,
            column: Column::Agents,
            form: Form::None,
            found: None,
            pending_select: None,
            move_armed: None,
            set_aside: Default::default(),
            loading: false,
            requested: false,
            error: None,
            db: PathBuf::new(),
            offset: Cell::new(0),
            rows: Cell::new(10),
        }
    }
}

/// A row's ` source · age`. A starter preference (`seed`, shipped in the binary and never edited
/// here: editing one makes it `manual`) reads ` built-in`: its time is the defaults' fixed date,
/// and `seed · 47w ago` on a home made a minute ago read as if it had been there for a year.
fn provenance(p: &Preference, now_ms: u64) -> String {
    match p.source {
        PreferenceSource::Seed => " built-in".into(),
        _ => format!(" {} · {}", p.source.name(), age(now_ms, p.last_updated)),
    }
}

/// How long ago `then` was, in a few characters ("just now", "5m", "3h", "2d", "7w"): the
/// preference list's narrow column; elsewhere [`crate::engine::protocol::ago`] says it in words.
pub fn age(now_ms: u64, then_ms: i64) -> String {
    let secs = (now_ms as i64 - then_ms) / 1000;
    match secs {
        s if s < 60 => "just now".into(),
        s if s < 3600 => format!("{}m ago", s / 60),
        s if s < 86_400 => format!("{}h ago", s / 3600),
        s if s < 86_400 * 14 => format!("{}d ago", s / 86_400),
        s if s < 86_400 * 365 => format!("{}w ago", s / (86_400 * 7)),
        s => format!("{}y ago", s / (86_400 * 365)),
    }
}

impl ProfilePane {
    /// The agents listed.
    pub fn agents(&self) -> &[AgentSummary] {
        &self.agents
    }

    /// The selected agent's id.
    pub fn agent(&self) -> Option<&str> {
        self.agents.get(self.agent).map(|a| a.id.as_str())
    }

    /// The preferences shown (the selected agent's, or the search hits').
    pub fn shown(&self) -> Vec<&Preference> {
        match &self.found {
            Some(f) => f.hits.iter().map(|h| &h.preference).collect(),
            None => self.prefs.iter().collect(),
        }
    }

    /// The selected preference (only while the selection is in the preferences column).
    pub fn selected_preference(&self) -> Option<&Preference> {
        if self.column != Column::Preferences {
            return None;
        }
        self.shown().get(self.selected).copied()
    }

    /// Which column has the selection.
    pub fn column(&self) -> Column {
        self.column
    }

    /// True while the add/edit form is open.
    pub fn editing(&self) -> bool {
        matches!(self.form, Form::Edit(_))
    }

    fn request(&mut self, job: ProfileJob, cx: &mut Cx<'_>) {
        self.loading = true;
        cx.request(Request::Profile(job));
    }

    fn reload(&mut self, cx: &mut Cx<'_>) {
        self.requested = true;
        let agent = self.agent().map(str::to_string);
        self.request(ProfileJob::List { agent }, cx);
    }

    fn choose_agent(&mut self, i: usize, cx: &mut Cx<'_>) {
        if self.agents.is_empty() {
            return;
        }
        let i = i.min(self.agents.len() - 1);
        if i != self.agent || self.prefs_of.as_deref() != self.agent() {
            self.agent = i;
            self.selected = 0;
            self.found = None;
            self.reload(cx);
        }
    }

    fn move_selection(&mut self, by: isize, cx: &mut Cx<'_>) {
        match self.column {
            Column::Agents => {
                let i = (self.agent as isize + by).clamp(0, self.agents.len().saturating_sub(1) as isize) as usize;
                self.choose_agent(i, cx);
            }
            Column::Preferences => {
                let n = self.shown().len();
                if n > 0 {
                    self.selected = (self.selected as isize + by).clamp(0, n as isize - 1) as usize;
                }
            }
        }
    }

    fn open_add(&mut self, cx: &mut Cx<'_>) {
        let Some(agent) = self.agent().map(str::to_string) else {
            cx.notify(Level::Warn, "no agent to add to yet (profile memory is loading)");
            return;
        };
        let category = self.shown().get(self.selected).map(|p| p.category).unwrap_or(Category::Style);
        self.form = Form::Edit(Box::new(EditForm {
            id: None,
            read_at: None,
            agent,
            category,
            text: TextField::default(),
            rule: TextField::default(),
            field: Field::Text,
            saving: false,
            error: None,
        }));
    }

    fn open_edit(&mut self, cx: &mut Cx<'_>) {
        let Some(p) = self.selected_preference().cloned() else {
            cx.notify(Level::Warn, "select a preference first (right column)");
            return;
        };
        self.form = Form::Edit(Box::new(EditForm {
            id: Some(p.id.clone()),
            read_at: Some(p.last_updated),
            agent: p.agent_id.clone(),
            category: p.category,
            text: TextField::single_line(&one_line(&p.content)),
            rule: TextField::single_line(p.rule.as_deref().unwrap_or("")),
            field: Field::Text,
            saving: false,
            error: None,
        }));
    }

    fn save(&mut self, cx: &mut Cx<'_>) {
        let Form::Edit(form) = &mut self.form else { return };
        if form.saving {
            return;
        }
        // A refused `enter` says so in the status line too: the form's ✗ line alone read as if
        // the key did nothing. The form stays open with everything typed.
        let content = form.text.text().trim().to_string();
        if content.is_empty() {
            form.error = Some("type the preference first: what should the agent do?".into());
            form.field = Field::Text;
            cx.notify(Level::Warn, "not saved: the text is empty; type what the agent should do, then enter");
            return;
        }
        if let Err(e) = form.verdict() {
            cx.notify(Level::Warn, format!("not saved: {e}; fix or clear the rule field, then enter"));
            form.error = Some(e);
            form.field = Field::Rule;
            return;
        }
        form.saving = true;
        form.error = None;
        let rule = form.rule.text().trim().to_string();
        let job = match &form.id {
            None => ProfileJob::Add(ProfileAddRequest {
                agent_id: form.agent.clone(),
                category: Some(form.category),
                content,
                rule: Some(rule).filter(|r| !r.is_empty()),
                role: None,
            }),
            Some(id) => ProfileJob::Edit(ProfileEditRequest {
                id: id.clone(),
                content: Some(content),
                category: Some(form.category),
                rule: Some(rule),
                // What the form was opened on: a change made meanwhile elsewhere is not overwritten.
                expected_last_updated: form.read_at,
            }),
        };
        self.request(job, cx);
    }

    /// Moves the selected preference to the next category, keeping its text. Only constraints
    /// carry rules: moving one with a rule asks first (a second `m`), and its rule is set aside
    /// for this session, so moving it back to constraint restores it (a constraint without one
    /// gets one recognised from its text).
    fn move_category(&mut self, cx: &mut Cx<'_>) {
        let Some(p) = self.selected_preference().cloned() else {
            cx.notify(Level::Warn, "select a preference first (right column)");
            return;
        };
        let to = p.category.next();
        let armed = self
            .move_armed
            .take()
            .is_some_and(|(id, at)| id == p.id && cx.now.saturating_duration_since(at) < MOVE_CONFIRM);
        let rule = match (&p.rule, to) {
            (Some(rule), to) if to != Category::Constraint => {
                if !armed {
                    self.move_armed = Some((p.id.clone(), cx.now));
                    cx.notify(
                        Level::Warn,
                        format!("{to} carries no rule: `m` again moves it and sets `{rule}` aside (moving it back to constraint restores it)"),
                    );
                    return;
                }
                self.set_aside.insert(p.id.clone(), rule.clone());
                // No rule given: the engine drops it and says "only constraints carry rules".
                None
            }
            (_, Category::Constraint) => p.rule.clone().or_else(|| self.set_aside.remove(&p.id)),
            // Says what the new category does ("workflow: ..."), not "rule removed".
            _ => None,
        };
        cx.notify(Level::Info, format!("moving to {to}"));
        let expected_last_updated = Some(p.last_updated);
        self.request(
            ProfileJob::Edit(ProfileEditRequest {
                id: p.id,
                category: Some(to),
                rule,
                content: None,
                expected_last_updated,
            }),
            cx,
        );
    }

    fn confirm_remove(&mut self, cx: &mut Cx<'_>) {
        match self.selected_preference() {
            Some(p) => {
                self.form =
                    Form::ConfirmRemove { id: p.id.clone(), content: one_line(&p.content), read_at: p.last_updated }
            }
            None => cx.notify(Level::Warn, "select a preference first (right column)"),
        }
    }

    /// Removes the preference the open confirmation names (its `y`).
    fn remove_confirmed(&mut self, cx: &mut Cx<'_>) {
        if let Form::ConfirmRemove { id, read_at, .. } = std::mem::replace(&mut self.form, Form::None) {
            // The text the question showed: changed elsewhere meanwhile, it is not removed unseen.
            let req = ProfileRemoveRequest { id, agent: false, expected_last_updated: Some(read_at) };
            self.request(ProfileJob::Remove(req), cx)
        }
    }

    fn submit(&mut self, cx: &mut Cx<'_>) {
        match std::mem::replace(&mut self.form, Form::None) {
            Form::Edit(f) => {
                self.form = Form::Edit(f);
                self.save(cx);
            }
            Form::Search(q) => {
                let query = q.text().trim().to_string();
                if query.is_empty() {
                    self.found = None;
                    return;
                }
                let Some(agent) = self.agent().map(str::to_string) else { return };
                self.column = Column::Preferences;
                self.request(
                    ProfileJob::Search(ProfileSearchRequest {
                        agent_id: agent,
                        query,
                        limit: Some(SEARCH_LIMIT),
                        without_team: false,
                    }),
                    cx,
                );
            }
            Form::Import(path) => {
                let text = path.text().trim().to_string();
                if text.is_empty() {
                    self.form = Form::Import(path);
                    return;
                }
                self.request(ProfileJob::Import(crate::engine::protocol::expand_tilde(&text)), cx);
            }
            // Only `y` removes (`remove_confirmed`): `enter` is no answer to a yes/no question.
            form @ Form::ConfirmRemove { .. } => {
                self.form = form;
                cx.notify(Level::Info, "y removes it, n or esc keeps it");
            }
            Form::None => {}
        }
    }

    fn on_update(&mut self, update: &ProfileUpdate, cx: &mut Cx<'_>) {
        self.loading = false;
        match update {
            ProfileUpdate::Listed { agent, result } => match result {
                Ok(list) => self.listed(agent.as_deref(), list, cx),
                Err(e) => self.error = Some(e.clone()),
            },
            ProfileUpdate::Saved(result) => self.saved(result, cx),
            ProfileUpdate::Removed(result) => self.removed(result, cx),
            ProfileUpdate::Searched(result) => self.searched(result, cx),
            ProfileUpdate::Exported(result) => match result {
                Ok(r) => cx.notify(Level::Info, exported_message(r)),
                Err(e) => cx.notify(Level::Error, e.clone()),
            },
            ProfileUpdate::Imported(result) => match result {
                Ok(r) => {
                    cx.notify(Level::Info, imported_message(r));
                    self.reload(cx);
                }
                Err(e) => cx.notify(Level::Error, e.clone()),
            },
        }
    }

    /// A preference saved: the form closes and the list selects it; a refusal stays in the
    /// form (a change made elsewhere meanwhile reloads the list and keeps the typed text).
    fn saved(&mut self, result: &Result<ProfileWriteResponse, String>, cx: &mut Cx<'_>) {
        match result {
            Ok(w) => {
                let created = if w.created_agent { " (new agent)" } else { "" };
                let mut note = format!("saved{created}: {}", w.rule_note);
                if let Some(n) = &w.notice {
                    note.push_str(&format!(" · {n}"));
                }
                cx.notify(Level::Info, note);
                if matches!(self.form, Form::Edit(_)) {
                    self.form = Form::None;
                }
                let id = w.preference.id.clone();
                self.found = None;
                self.reload(cx);
                self.pending_select = Some(id);
            }
            Err(e) => match &mut self.form {
                Form::Edit(f) if e.contains(CHANGED_MEANWHILE) => {
                    // Changed elsewhere since the form opened: the list shows it again and
                    // the typed text stays; a second enter saves it over that change.
                    f.saving = false;
                    f.error = Some(format!(
                        "{CHANGED_MEANWHILE} (elsewhere; the list shows it now) · enter saves yours over it, esc keeps it"
                    ));
                    self.reload(cx);
                }
                Form::Edit(f) => {
                    f.saving = false;
                    f.error = Some(e.clone());
                }
                _ => {
                    cx.notify(Level::Error, e.clone());
                    if e.contains(CHANGED_MEANWHILE) {
                        self.reload(cx);
                    }
                }
            },
        }
    }

    /// A preference removed: gone from the list and from the search results.
    fn removed(&mut self, result: &Result<ProfileRemoveResponse, String>, cx: &mut Cx<'_>) {
        match result {
            Ok(r) => {
                let removed = crate::tui::widgets::count(r.removed, "preference", "preferences");
                cx.notify(Level::Info, format!("removed {removed} of {}", r.agent_id));
                if let Some(f) = &mut self.found {
                    f.hits.retain(|h| h.preference.id != r.id);
                }
                self.reload(cx);
            }
            Err(e) => {
                cx.notify(Level::Error, e.clone());
                if e.contains(CHANGED_MEANWHILE) {
                    self.reload(cx);
                }
            }
        }
    }

    /// Search results replace the list until the search is closed.
    fn searched(&mut self, result: &Result<ProfileSearchResponse, String>, cx: &mut Cx<'_>) {
        match result {
            Ok(r) => {
                self.selected = 0;
                self.found = Some(Found {
                    query: r.query.clone(),
                    mode: r.mode,
                    hits: r.results.clone(),
                    notice: r.notice.clone(),
                });
            }
            Err(e) => cx.notify(Level::Error, e.clone()),
        }
    }

    fn listed(&mut self, agent: Option<&str>, list: &ProfileListResponse, cx: &mut Cx<'_>) {
        self.error = None;
        self.db = list.db.clone();
        let keep = self.agent().map(str::to_string).or_else(|| agent.map(str::to_string));
        self.agents = list.agents.clone();
        self.agent = keep.and_then(|k| self.agents.iter().position(|a| a.id == k)).unwrap_or(0);
        match agent {
            Some(a) if self.agent() == Some(a) => {
                self.prefs = list.preferences.clone();
                self.prefs_of = Some(a.to_string());
                self.reread_refused_edit();
                if let Some(id) = self.pending_select.take() {
                    if let Some(i) = self.prefs.iter().position(|p| p.id == id) {
                        self.selected = i;
                        self.column = Column::Preferences;
                    }
                }
                self.selected = self.selected.min(self.prefs.len().saturating_sub(1));
            }
            _ => {
                // The agents only (first load, or the agent is gone): fetch the chosen one's.
                if self.agent().is_some() && self.prefs_of.as_deref() != self.agent() {
                    self.prefs.clear();
                    self.reload(cx);
                }
            }
        }
    }

    /// An edit refused because its preference changed meanwhile now knows the current version,
    /// so the next save is a deliberate overwrite of what the error showed.
    fn reread_refused_edit(&mut self) {
        let Form::Edit(f) = &mut self.form else { return };
        if f.error.as_deref().is_some_and(|e| e.contains(CHANGED_MEANWHILE)) {
            if let Some(p) = self.prefs.iter().find(|p| Some(&p.id) == f.id.as_ref()) {
                f.read_at = Some(p.last_updated);
            }
        }
    }

    fn render_agents(&self, area: Rect, buf: &mut Buffer, cx: &RenderCtx<'_>) {
        let t = cx.theme;
        let focused = cx.focused && self.column == Column::Agents && matches!(self.form, Form::None);
        let block = frame(format!(" Agents ({}) ", self.agents.len()), focused, t);
        let inner = block.inner(area);
        block.render(area, buf);
        let w = inner.width as usize;
        for (k, a) in self.agents.iter().enumerate().take(inner.height as usize) {
            let y = inner.y + k as u16;
            let count = format!(" {}", a.preference_count);
            let name_w = w.saturating_sub(widgets::width(&count) + 1);
            let line = Line::from(vec![
                Span::styled(format!(" {:<name_w$}", truncate(&a.id, name_w)), t.style(Slot::Text)),
                Span::styled(count, t.style(Slot::Muted)),
            ]);
            buf.set_line(inner.x, y, &line, inner.width);
            if k == self.agent {
                let sel = if focused { t.style(Slot::Selection) } else { t.style(Slot::SelectionUnfocused) };
                buf.set_style(Rect { y, height: 1, ..inner }, sel);
            }
        }
        if self.agents.is_empty() && inner.height > 0 {
            let text = if self.loading { "loading…" } else { "no agents" };
            buf.set_stringn(inner.x + 1, inner.y, text, w, t.style(Slot::Muted));
        }
    }

    fn title(&self) -> String {
        let Some(a) = self.agents.get(self.agent) else { return " Preferences ".into() };
        match &self.found {
            Some(f) => {
                let how = match f.mode {
                    RecallMode::Vector => "by meaning",
                    RecallMode::Text => "by words",
                };
                format!(" {} · {} for \"{}\" ({how}) ", a.id, f.hits.len(), f.query)
            }
            None if a.role.is_empty() => format!(" {} ", a.id),
            // A role stored before the engine refused control characters is drawn as one line.
            None => format!(" {} · {} ", a.id, one_line(&a.role)),
        }
    }

    /// The preference rows: (category header or preference index, line).
    fn rows(&self, w: usize, cx: &RenderCtx<'_>) -> Vec<(Option<usize>, Line<'static>)> {
        let t = cx.theme;
        let mut out = Vec::new();
        let mut last: Option<Category> = None;
        let shown = self.shown();
        for (i, p) in shown.iter().enumerate() {
            if self.found.is_none() && last != Some(p.category) {
                last = Some(p.category);
                let n = shown.iter().filter(|q| q.category == p.category).count();
                let head = format!(" {} ({n})", p.category);
                let room = w.saturating_sub(widgets::width(&head));
                out.push((
                    None,
                    Line::from(vec![
                        Span::styled(head, t.style(Slot::HelpSection)),
                        Span::styled(
                            truncate(&format!("  {}", category_behaviour(p.category)), room),
                            t.style(Slot::Muted),
                        ),
                    ]),
                ));
            }
            let score = self.found.as_ref().and_then(|f| f.hits.get(i)).map(|h| score_text(h.similarity_score));
            let rule = match (&p.rule, p.category) {
                (Some(r), _) => format!(" [{r}]"),
                (None, Category::Constraint) => " [advice only]".into(),
                (None, _) => String::new(),
            };
            let mut tail = provenance(p, cx.epoch_ms);
            // Scores and categories in columns of fixed width, so every row's text starts in
            // the same column (a negative score took one more, tour18 F5).
            let lead = match &score {
                Some(s) => format!(" {s}{:<w$} ", p.category.name(), w = category_width()),
                None => "   ".into(),
            };
            // In a narrow pane the source and age go first, then the rule shortens: the row
            // never runs past the edge (at 60 columns `seed · 47w ago` was cut to `seed · 47w a`).
            let fixed = widgets::width(&lead) + PREF_TEXT_MIN;
            if fixed + widgets::width(&rule) + widgets::width(&tail) > w {
                tail.clear();
            }
            let rule = truncate(&rule, w.saturating_sub(fixed));
            let text_w = w.saturating_sub(widgets::width(&lead) + widgets::width(&rule) + widgets::width(&tail)).max(8);
            let content = truncate(&one_line(&p.content), text_w);
            let pad = text_w.saturating_sub(widgets::width(&content));
            out.push((
                Some(i),
                Line::from(vec![
                    Span::styled(lead, t.style(Slot::SearchScore)),
                    Span::styled(content, t.style(Slot::Text)),
                    Span::styled(" ".repeat(pad), t.style(Slot::Text)),
                    Span::styled(rule, t.style(if p.rule.is_some() { Slot::Accent } else { Slot::Warning })),
                    Span::styled(tail, t.style(Slot::Muted)),
                ]),
            ));
        }
        out
    }

    fn render_prefs(&self, area: Rect, buf: &mut Buffer, cx: &RenderCtx<'_>) {
        let t = cx.theme;
        let focused = cx.focused && self.column == Column::Preferences && matches!(self.form, Form::None);
        // A long role is cut at the frame's corner with `…`, not mid-word with no sign of it.
        let max = (area.width as usize).saturating_sub(4);
        let title = self.title();
        let title =
            if widgets::width(title.trim()) > max { format!(" {} ", truncate(title.trim(), max)) } else { title };
        let block = frame(title, focused, t);
        let inner = block.inner(area);
        block.render(area, buf);
        if inner.height == 0 || inner.width < 10 {
            return;
        }
        let w = inner.width as usize;
        let mut list = inner;
        if let Some(n) = self.found.as_ref().and_then(|f| f.notice.as_deref()) {
            buf.set_stringn(inner.x + 1, inner.y, truncate(n, w - 1), w, t.style(Slot::Warning));
            list.y += 1;
            list.height -= 1;
        }
        if let Some(e) = &self.error {
            for (k, l) in widgets::wrap(e, w - 1).iter().enumerate().take(list.height as usize) {
                buf.set_stringn(list.x + 1, list.y + k as u16, l, w - 1, t.style(Slot::Error));
            }
            return;
        }
        let rows = self.rows(w, cx);
        if rows.is_empty() {
            let text = match (&self.found, self.loading) {
                (_, true) => "loading…".to_string(),
                (Some(_), false) => format!(
                    "Nothing close to that. {} clears the search, {} searches again.",
                    cx.key(Command::Back),
                    cx.key(Command::ProfileSearch)
                ),
                (None, false) => format!("No preferences yet. {} adds one.", cx.key(Command::ProfileAdd)),
            };
            for (k, l) in widgets::wrap(&text, w - 1).iter().enumerate().take(list.height as usize) {
                buf.set_stringn(list.x + 1, list.y + k as u16, l, w - 1, t.style(Slot::Muted));
            }
            return;
        }
        let sel_row = rows.iter().position(|(i, _)| *i == Some(self.selected)).unwrap_or(0);
        // Keep the category header above the first preference visible.
        let visible = list.height as usize;
        self.rows.set(list.height);
        let offset = scroll_to(sel_row, self.offset.get(), visible, rows.len());
        let offset =
            if sel_row > 0 && offset == sel_row && rows[sel_row - 1].0.is_none() { offset - 1 } else { offset };
        self.offset.set(offset);
        for (k, (i, line)) in rows.iter().enumerate().skip(offset).take(visible) {
            let y = list.y + (k - offset) as u16;
            buf.set_line(list.x, y, line, list.width);
            if *i == Some(self.selected) && self.column == Column::Preferences {
                let sel = if focused { t.style(Slot::Selection) } else { t.style(Slot::SelectionUnfocused) };
                buf.set_style(Rect { y, height: 1, ..list }, sel);
            }
        }
    }

    /// The form's height for `form`.
    fn form_height(&self) -> u16 {
        match &self.form {
            Form::None => 0,
            // Each form keeps a row to spare under what the user reads or types: a long status
            // notice takes the bottom border and the row above (`widgets::messages::own_lines`),
            // and must not hide the field being typed into (tour12 F7) or the keys.
            Form::Edit(_) => 9,
            Form::Search(_) | Form::Import(_) => 4,
            Form::ConfirmRemove { .. } => 5,
        }
    }

    fn render_form(&self, area: Rect, buf: &mut Buffer, cx: &RenderCtx<'_>) -> Option<(u16, u16)> {
        let t = cx.theme;
        let line_field = |buf: &mut Buffer, title: String, field: &TextField, placeholder: &str| {
            let block = frame(title, cx.focused, t);
            let inner = block.inner(area);
            block.render(area, buf);
            buf.set_string(inner.x, inner.y, "›", t.style(Slot::Accent));
            let r = Rect { x: inner.x + 2, width: inner.width.saturating_sub(2), height: 1, ..inner };
            field.render_line(r, buf, t.style(Slot::Input), Some((placeholder, t.style(Slot::Placeholder))))
        };
        match &self.form {
            Form::None => None,
            Form::Search(q) => Some(line_field(
                buf,
                format!(
                    " Search {}'s preferences by meaning ({} search, {} cancel) ",
                    self.agent().unwrap_or("?"),
                    cx.key(Command::Select),
                    cx.key(Command::Back)
                ),
                q,
                "what is the code about? (\"testing\", \"how to name components\")",
            )),
            Form::Import(p) => Some(line_field(
                buf,
                format!(
                    " Import a profile manifest ({} import, {} cancel) ",
                    cx.key(Command::Select),
                    cx.key(Command::Back)
                ),
                p,
                "path of a profile_sync.json (docdex profile export writes one)",
            )),
            Form::ConfirmRemove { content, .. } => {
                self.render_confirm_remove(area, buf, cx, content);
                None
            }
            Form::Edit(f) => self.render_edit_form(area, buf, cx, f),
        }
    }

    /// The removal question, its answers on a row of their own.
    fn render_confirm_remove(&self, area: Rect, buf: &mut Buffer, cx: &RenderCtx<'_>, content: &str) {
        let t = cx.theme;
        let block = frame(" Remove preference ", cx.focused, t);
        let inner = block.inner(area);
        block.render(area, buf);
        // The answers get a row of their own, so a long preference never cuts them off.
        let w = inner.width.saturating_sub(1) as usize;
        let question = format!("Remove \"{content}\"?");
        let answers = format!("y removes it, n or {} keeps it", cx.key(Command::Back));
        for (k, text) in [question, answers].iter().enumerate().take(inner.height as usize) {
            let y = inner.y + k as u16;
            buf.set_stringn(inner.x + 1, y, truncate(text, w), w, t.style(Slot::Warning));
        }
    }

    /// The form in fewer than 6 rows (a 40x10 terminal): the active field and, below it, the
    /// keys, so what is typed shows (the form was left blank, and the user typed blind).
    fn render_compact_form(inner: Rect, buf: &mut Buffer, cx: &RenderCtx<'_>, f: &EditForm) -> Option<(u16, u16)> {
        if inner.height == 0 || inner.width < 8 {
            return None;
        }
        let t = cx.theme;
        let (name, field) = match f.field {
            Field::Text => ("text", &f.text),
            Field::Rule => ("rule", &f.rule),
        };
        buf.set_stringn(inner.x, inner.y, name, 5, t.style(Slot::Accent));
        let rect = Rect { x: inner.x + 5, y: inner.y, width: inner.width - 5, height: 1 };
        let cursor = field.render_line(rect, buf, t.style(Slot::Input), None);
        if inner.height > 1 {
            let keys = format!(
                "{} save · {} cancel · {}/{} text or rule",
                cx.key(Command::Select),
                cx.key(Command::Back),
                cx.key(Command::Up),
                cx.key(Command::Down)
            );
            let w = inner.width as usize;
            buf.set_stringn(inner.x, inner.y + 1, truncate(&keys, w), w, t.style(Slot::Muted));
        }
        Some(cursor)
    }

    /// The add / edit form: category, text and rule fields, the verdict on what is typed, and
    /// the keys. The cursor of the active field.
    fn render_edit_form(&self, area: Rect, buf: &mut Buffer, cx: &RenderCtx<'_>, f: &EditForm) -> Option<(u16, u16)> {
        let t = cx.theme;
        let title = match &f.id {
            None => format!(" Add a preference for {} ", f.agent),
            Some(_) => format!(" Edit a preference of {} ", f.agent),
        };
        let block = frame(title, cx.focused, t);
        let inner = block.inner(area);
        block.render(area, buf);
        if inner.height < 6 {
            return Self::render_compact_form(inner, buf, cx, f);
        }
        let w = inner.width as usize;
        let label = |buf: &mut Buffer, y: u16, text: &str, active: bool| {
            let style = if active { t.style(Slot::Accent) } else { t.style(Slot::Muted) };
            buf.set_stringn(inner.x + 1, y, text, 10, style);
        };
        let field_rect = |y: u16| Rect { x: inner.x + 11, y, width: inner.width.saturating_sub(12), height: 1 };
        label(buf, inner.y, "category", false);
        buf.set_line(
            inner.x + 11,
            inner.y,
            &Line::from(vec![
                Span::styled(f.category.name().to_string(), t.style(Slot::Accent)),
                Span::styled(
                    format!("  {} · {} changes it", category_behaviour(f.category), cx.key(Command::ProfileMove)),
                    t.style(Slot::Muted),
                ),
            ]),
            inner.width.saturating_sub(12),
        );
        label(buf, inner.y + 1, "text", f.field == Field::Text);
        let c1 = f.text.render_line(
            field_rect(inner.y + 1),
            buf,
            t.style(Slot::Input),
            Some(("what the agent should do (\"avoid circular dependencies\")", t.style(Slot::Placeholder))),
        );
        label(buf, inner.y + 2, "rule", f.field == Field::Rule);
        let placeholder = if f.category == Category::Constraint {
            "optional: no-import-cycles | forbid-import P | forbid-node L K [name] | max-lines N [glob] | require-test-for G"
        } else {
            "only constraints carry rules"
        };
        let c2 = f.rule.render_line(
            field_rect(inner.y + 2),
            buf,
            t.style(Slot::Input),
            Some((placeholder, t.style(Slot::Placeholder))),
        );
        let (mark, text, slot) = match (&f.error, f.verdict()) {
            (Some(e), _) => ("✗", e.clone(), Slot::Error),
            (None, Err(e)) => ("✗", e, Slot::Error),
            (None, Ok((_, note))) => ("✓", note, Slot::Ok),
        };
        let verdict = format!("{mark} {text}");
        for (k, l) in widgets::wrap(&verdict, w.saturating_sub(2)).iter().enumerate().take(2) {
            buf.set_stringn(inner.x + 1, inner.y + 3 + k as u16, l, w.saturating_sub(1), t.style(slot));
        }
        let help = if f.saving {
            "saving…".to_string()
        } else {
            format!(
                "{} save · {} cancel · {}/{} text or rule · {} category",
                cx.key(Command::Select),
                cx.key(Command::Back),
                cx.key(Command::Up),
                cx.key(Command::Down),
                cx.key(Command::ProfileMove)
            )
        };
        // Row 5 of at least 6; the row under it (when there is one) is left to a status notice.
        buf.set_stringn(inner.x + 1, inner.y + 5, truncate(&help, w.saturating_sub(1)), w, t.style(Slot::Muted));
        Some(if f.field == Field::Text { c1 } else { c2 })
    }
}

/// What an export wrote, for the status line.
fn exported_message(r: &ProfileExportResponse) -> String {
    format!(
        "exported {}, {}, {} to {}",
        crate::tui::widgets::count(r.agents as u64, "agent", "agents"),
        crate::tui::widgets::count(r.preferences as u64, "preference", "preferences"),
        crate::tui::widgets::count(r.tombstones as u64, "removal", "removals"),
        r.path.display()
    )
}

/// What an import merged, refused and found ahead of this clock, for the status line.
fn imported_message(r: &ProfileImportResponse) -> String {
    let rejected = if r.rejected.is_empty() {
        String::new()
    } else {
        format!(", {} refused (first: {})", r.rejected.len(), r.rejected[0].reason)
    };
    let ahead = match r.ahead_of_clock {
        0 => String::new(),
        n => format!(", {n} stamped ahead of this clock (they win every merge until then)"),
    };
    let roles = match r.roles_updated {
        0 => String::new(),
        n => format!(", {n} roles changed"),
    };
    format!(
        "imported: {} added, {} updated, {} kept (local newer), {} removed{roles}{rejected}{ahead}",
        r.added, r.updated, r.kept_local, r.deleted
    )
}

/// A preference as one row of the screen: line breaks become spaces and other control
/// characters are dropped. Rows stored before the engine refused them (an escape sequence, a
/// line break) were drawn as given, shifting the row's columns off the border.
fn one_line(text: &str) -> String {
    crate::tui::highlight::sanitize(&text.replace(['\n', '\r'], " "))
}

impl Pane for ProfilePane {
    fn id(&self) -> PaneId {
        PaneId::Profile
    }

    fn typing(&self) -> bool {
        !matches!(self.form, Form::None)
    }

    fn text_field(&self) -> Option<bool> {
        self.typing().then_some(false)
    }

    fn asking(&self) -> bool {
        matches!(self.form, Form::ConfirmRemove { .. })
    }

    fn esc_label(&self) -> &'static str {
        // Every form here closes on `esc` (its text goes); the question keeps the preference.
        if self.asking() {
            "keep"
        } else {
            "cancel"
        }
    }

    fn focus_text(&mut self) -> bool {
        self.typing()
    }

    fn command(&mut self, cmd: Command, cx: &mut Cx<'_>) -> bool {
        // With a form open only its keys work (the rest would act on rows behind it).
        if !matches!(self.form, Form::None) {
            match cmd {
                Command::Select => self.submit(cx),
                Command::Back => self.form = Form::None,
                Command::Up | Command::Down => {
                    if let Form::Edit(f) = &mut self.form {
                        f.field = if f.field == Field::Text { Field::Rule } else { Field::Text };
                    }
                }
                Command::ProfileMove => {
                    if let Form::Edit(f) = &mut self.form {
                        f.category = f.category.next();
                        f.error = None;
                    }
                }
                _ => return false,
            }
            return true;
        }
        let page = (self.rows.get() / 2).max(1) as isize;
        match cmd {
            Command::Up => self.move_selection(-1, cx),
            Command::Down => self.move_selection(1, cx),
            Command::PageUp => self.move_selection(-page, cx),
            Command::PageDown => self.move_selection(page, cx),
            Command::Top => self.move_selection(-(1 << 20), cx),
            Command::Bottom => self.move_selection(1 << 20, cx),
            Command::Left => self.column = Column::Agents,
            Command::Right => {
                if !self.shown().is_empty() {
                    self.column = Column::Preferences;
                }
            }
            Command::Select => match self.column {
                Column::Agents => {
                    if !self.shown().is_empty() {
                        self.column = Column::Preferences;
                    }
                }
                Column::Preferences => self.open_edit(cx),
            },
            Command::Back => {
                if self.found.take().is_some() {
                    self.selected = 0;
                } else {
                    self.column = Column::Agents;
                }
            }
            Command::ProfileAdd => self.open_add(cx),
            Command::ProfileEdit => self.open_edit(cx),
            Command::ProfileRemove => self.confirm_remove(cx),
            Command::ProfileMove => self.move_category(cx),
            Command::ProfileSearch => self.form = Form::Search(TextField::default()),
            Command::ProfileImport => self.form = Form::Import(TextField::default()),
            Command::ProfileExport => self.request(ProfileJob::Export, cx),
            Command::ProfileReload => self.reload(cx),
            _ => return false,
        }
        true
    }

    fn text(&mut self, key: &KeyEvent, cx: &mut Cx<'_>) -> bool {
        match &mut self.form {
            Form::Edit(f) => {
                let field = if f.field == Field::Text { &mut f.text } else { &mut f.rule };
                let used = field.edit(key);
                if used {
                    f.error = None;
                }
                used
            }
            Form::Search(q) | Form::Import(q) => q.edit(key),
            Form::ConfirmRemove { .. } => {
                match key.code {
                    KeyCode::Char('y' | 'Y') => self.remove_confirmed(cx),
                    KeyCode::Char('n' | 'N') => self.form = Form::None,
                    _ => {}
                }
                true
            }
            Form::None => false,
        }
    }

    fn paste(&mut self, text: &str, _cx: &mut Cx<'_>) {
        match &mut self.form {
            Form::Edit(f) => {
                if f.field == Field::Text { &mut f.text } else { &mut f.rule }.insert_str(text);
                f.error = None;
            }
            Form::Search(q) | Form::Import(q) => q.insert_str(text),
            _ => {}
        }
    }

    fn engine(&mut self, event: &EngineEvent, cx: &mut Cx<'_>) {
        if let EngineEvent::Profile(update) = event {
            self.on_update(update, cx);
        }
    }

    fn focused(&mut self, cx: &mut Cx<'_>) {
        // Every time: chat turns teach preferences in the background.
        self.reload(cx);
    }

    fn hints(&self) -> Vec<(Command, &'static str)> {
        match self.form {
            Form::None => {}
            // Its own line says it all: `y` removes, `n` or `esc` keeps it (`enter` is no answer).
            Form::ConfirmRemove { .. } => return Vec::new(),
            // `esc cancel` is the mode's own hint (see `esc_label`).
            _ => return vec![(Command::Select, "ok")],
        }
        vec![
            (Command::ProfileAdd, "add"),
            (Command::ProfileEdit, "edit"),
            (Command::ProfileRemove, "delete"),
            (Command::ProfileMove, "category"),
            (Command::ProfileSearch, "search"),
        ]
    }

    fn render(&self, area: Rect, buf: &mut Buffer, cx: &RenderCtx<'_>) -> Option<(u16, u16)> {
        let form_h = self.form_height().min(area.height.saturating_sub(4));
        let top = Rect { height: area.height - form_h, ..area };
        let left_w = AGENTS_WIDTH.min(top.width / 3);
        self.render_agents(Rect { width: left_w, ..top }, buf, cx);
        self.render_prefs(Rect { x: top.x + left_w, width: top.width - left_w, ..top }, buf, cx);
        if form_h == 0 {
            return None;
        }
        let form = Rect { y: top.y + top.height, height: form_h, ..area };
        self.render_form(form, buf, cx).filter(|_| cx.focused)
    }
}

/// A search hit's similarity as the list shows it, right-aligned in five cells: a cosine
/// similarity runs from -1 to 1 (a share of words from 0 to 1), so `-1.00` fits and a
/// negative score no longer pushes its row a column right of the others (tour18 F5). A score
/// that rounds to zero is `0.00`, not `-0.00`.
fn score_text(score: f32) -> String {
    let score = if score.abs() < 0.005 { 0.0 } else { score };
    format!("{score:>5.2} ")
}

/// The widest category name: search results show the category in a column this wide.
fn category_width() -> usize {
    Category::ALL.iter().map(|c| c.name().len()).max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_short() {
        let now = 1_000_000_000_000u64;
        assert_eq!(age(now, now as i64 + 5_000), "just now");
        assert_eq!(age(now, now as i64 - 30_000), "just now");
        assert_eq!(age(now, now as i64 - 5 * 60_000), "5m ago");
        assert_eq!(age(now, now as i64 - 3 * 3_600_000), "3h ago");
        assert_eq!(age(now, now as i64 - 2 * 86_400_000), "2d ago");
        assert_eq!(age(now, now as i64 - 21 * 86_400_000), "3w ago");
    }

    #[test]
    fn a_score_that_rounds_to_zero_has_no_sign() {
        assert_eq!(score_text(-0.001), " 0.00 ");
        assert_eq!(score_text(-0.0), " 0.00 ");
    }

    #[test]
    fn scores_take_the_same_width_whatever_their_sign() {
        assert_eq!(score_text(0.304), " 0.30 ");
        assert_eq!(score_text(-0.25), "-0.25 ");
        assert_eq!(score_text(-1.0), "-1.00 ");
        assert_eq!(score_text(1.0), " 1.00 ");
    }
}
