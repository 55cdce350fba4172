//! Profile memory (spec 001): how each agent, and the team, wants code written, remembered
//! across repositories in `state/profiles/main.db`.
//!
//! One writer at a time: every write holds the process's writer mutex and the cross-process
//! lock `profiles/main.db.lock`, inside one `BEGIN IMMEDIATE` transaction; readers use their
//! own WAL connections and never wait for a writer. The first use seeds an empty database with
//! the factory personas (`defaults.json`). Preferences are recalled by meaning with the
//! `[memory.profile]` embedder (sqlite-vec), or by shared words when none answers, saying so.
//!
//! Beside the store: `rules` (the constraint grammar), `evolution` (statement → recall → model
//! decision → write), `gatekeeper` (constraint rules over staged files), `map` (the project
//! map), `recall` (embeddings and recall).

pub mod evolution;
pub mod gate;
mod manifest;
pub mod map;
pub mod policy;
pub mod recall;
pub mod rules;
pub mod store;
pub mod types;

use crate::engine::fsutil::{self, now_ms, FileLock};
use crate::engine::sqlite::id_by_prefix;
use crate::engine::Engine;
use crate::error::{Error, Result};
use manifest::MAX_MANIFEST_BYTES;
use rusqlite::Connection;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use store::Write;
use types::*;

/// Longest preference accepted, in bytes.
pub const MAX_CONTENT_BYTES: usize = 4096;
/// How far ahead of this clock an imported row may be stamped before the import says so.
pub const CLOCK_SKEW_MS: i64 = 60_000;
/// Copies of imported manifests kept in `profiles/sync/` (the newest; older ones are removed).
pub const KEPT_IMPORTS: usize = 20;
/// How many removals of each kind (preference tombstones, agent removals) are kept for sync.
/// A removal exists so that a machine that has not seen it yet cannot bring the row back with a
/// stale manifest. They used to be dropped after 180 days, and an old copy syncing in then
/// brought the row back. Now every removal is kept up to this many (a row of about 100 bytes,
/// so `main.db` and an export stay a few MB); past it the oldest go and the forgotten horizon
/// (`store::FORGOTTEN_REMOVALS`) still refuses any unknown row stamped at or before them.
/// Applied at each write that adds removals (`profile remove`, `profile import`).
pub const MAX_KEPT_REMOVALS: usize = 100_000;

/// The manifest format name.
pub const MANIFEST_FORMAT: &str = "docdex.profile_sync";

/// Profile memory's per-engine state: the writer connection (its mutex is the in-process
/// writer lock), idle reader connections, and the caches of recall, evolution and the hook.
#[derive(Default)]
pub(crate) struct ProfileState {
    writer: Mutex<Option<Connection>>,
    readers: Mutex<Vec<Connection>>,
    ready: Mutex<bool>,
    pub(crate) recall: recall::RecallCache,
    /// The gatekeeper's file set per repository and index generation.
    pub(crate) gate: gate::GateCache,
    pub(crate) jobs: evolution::Jobs,
}

/// Readers kept open between calls.
const IDLE_READERS: usize = 4;

impl Engine {
    pub(crate) fn profiles(&self) -> &ProfileState {
        &self.inner.profiles
    }

    /// `state/profiles/`.
    pub fn profile_dir(&self) -> PathBuf {
        self.paths().state.join("profiles")
    }

    /// `state/profiles/main.db`.
    pub fn profile_db_path(&self) -> PathBuf {
        self.profile_dir().join("main.db")
    }

    /// Runs `f` on a reader connection (WAL: never waits for a writer).
    pub(crate) fn profile_read<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        self.profile_ready()?;
        let pooled = self.profiles().readers.lock().ok().and_then(|mut r| r.pop());
        let conn = match pooled {
            Some(c) => c,
            None => store::open_read(&self.profile_db_path())?,
        };
        let out = f(&conn);
        if let (true, Ok(mut r)) = (store::poolable(&conn), self.profiles().readers.lock()) {
            if r.len() < IDLE_READERS {
                r.push(conn);
            }
        }
        out
    }

    /// Runs `f` in one write transaction under the writer lock (in-process mutex, then the
    /// cross-process `main.db.lock`), committing when it returns `Ok`.
    pub(crate) fn profile_write<T>(&self, f: impl FnOnce(&Write<'_>) -> Result<T>) -> Result<T> {
        self.profile_ready()?;
        self.profile_write_tx(f)
    }

    fn profile_write_tx<T>(&self, f: impl FnOnce(&Write<'_>) -> Result<T>) -> Result<T> {
        let mut guard = self
            .profiles()
            .writer
            .lock()
            .map_err(|_| Error::BadRequest("the profile writer lock is poisoned".into()))?;
        let _lock = FileLock::acquire(&self.profile_dir().join("main.db.lock"))?;
        if guard.is_none() {
            *guard = Some(store::open(&self.profile_db_path())?);
        }
        let Some(conn) = guard.as_mut() else { return Err(Error::BadRequest("no profile writer".into())) };
        let w = Write::begin(conn)?;
        let out = f(&w)?;
        w.commit()?;
        Ok(out)
    }

    /// Creates the schema and seeds an empty database, once per process.
    fn profile_ready(&self) -> Result<()> {
        let mut ready =
            self.profiles().ready.lock().map_err(|_| Error::BadRequest("the profile state is poisoned".into()))?;
        if *ready {
            return Ok(());
        }
        // Usually the file is there and seeded: find out without taking the writer, so a
        // process starting while another writes never waits for it.
        let path = self.profile_db_path();
        if path.exists() {
            let conn = store::open_read(&path)?;
            // A database of an older docdex gets its new columns from the write below first.
            if store::meta(&conn, "seeded")?.is_some() && !store::needs_migration(&conn)? {
                if let (true, Ok(mut r)) = (store::poolable(&conn), self.profiles().readers.lock()) {
                    r.push(conn);
                }
                *ready = true;
                return Ok(());
            }
        }
        let seeded = self.profile_write_tx(|w| w.seed_if_empty())?;
        if seeded > 0 {
            tracing::info!(preferences = seeded, "profile memory seeded with the factory personas");
        }
        *ready = true;
        Ok(())
    }

    /// The agent a request means, or a clear error when it names none and no default is set.
    pub(crate) fn require_agent(&self, named: &str) -> Result<String> {
        let agent = self.resolve_agent(Some(named)).ok_or_else(|| {
            Error::BadRequest(
                "no agent: name one (agent_id, --agent) or set [memory.profile] default_agent; `docdex profile list` shows the agents".into(),
            )
        })?;
        valid_agent(&agent)?;
        Ok(agent)
    }

    /// The agent a request means: the one it names, else `[memory.profile] default_agent`, in
    /// lower case ([`store::agent_key`]): `TEAM` is the team, where it used to be an agent of
    /// its own that applied to nobody.
    pub fn resolve_agent(&self, named: Option<&str>) -> Option<String> {
        named
            .map(store::agent_key)
            .filter(|a| !a.is_empty())
            .or_else(|| Some(store::agent_key(&self.config().memory.profile.default_agent)).filter(|a| !a.is_empty()))
    }

    /// Every agent, and one page of one agent's preferences when named (`limit`, default
    /// [`DEFAULT_LIST`], at most [`MAX_LIST`]; `after` the last id of the previous page): the
    /// whole list of an agent of 60,000 preferences was one 10.9 MB answer.
    pub fn profile_list(&self, req: &ProfileListRequest) -> Result<ProfileListResponse> {
        let agent = req.agent_id.as_deref().map(store::agent_key).filter(|a| !a.is_empty());
        let agent = agent.as_deref();
        if let Some(a) = agent {
            self.profile_agent_exists(a)?;
        }
        let after = req.after.as_deref().map(str::trim).filter(|a| !a.is_empty());
        let (limit, cut) = list_limit(req.limit)?;
        let (agents, page) = self.profile_read(|c| {
            let page = match agent {
                Some(a) => Some(list_page(c, a, after, limit)?),
                None if after.is_some() => {
                    return Err(Error::BadRequest(
                        "`after` pages one agent's preferences: name the agent too (agent_id, --agent)".into(),
                    ))
                }
                None => None,
            };
            Ok((store::agents(c)?, page))
        })?;
        let mut resp = ProfileListResponse {
            schema_version: PROFILE_SCHEMA_VERSION,
            agents,
            preferences: Vec::new(),
            db: self.profile_db_path(),
            total: None,
            next_after: None,
            max_per_agent: self.profile_cap(),
            note: (cut && agent.is_some())
                .then(|| format!("a page holds at most {MAX_LIST} preferences; this one answers {MAX_LIST}")),
        };
        if let (Some(a), Some((prefs, more))) = (agent, page) {
            let total = resp.agents.iter().find(|s| s.id == a).map_or(0, |s| s.preference_count);
            resp.next_after = more.then(|| prefs.last().map(|p| p.id.clone())).flatten();
            if let Some(next) = &resp.next_after {
                let paged = format!(
                    "{} of {a}'s {total} preferences; `docdex profile list --agent {a} --after {next}` (`after` over HTTP) lists the next",
                    prefs.len()
                );
                resp.note = Some(resp.note.map_or(paged.clone(), |n| format!("{n}; {paged}")));
            }
            resp.total = Some(total);
            resp.preferences = prefs;
        }
        Ok(resp)
    }

    /// Every agent, and the named agent's preferences page after page up to
    /// [`Engine::profile_cap`], in one answer: for the TUI's Profile pane, which scrolls through
    /// them all in memory where HTTP answers one page. An agent over the cap (a database of an
    /// older docdex) is shown up to it, its count in the agents column saying how many it holds.
    pub fn profile_list_whole(&self, agent: Option<String>) -> Result<ProfileListResponse> {
        let mut req = ProfileListRequest { agent_id: agent, limit: Some(MAX_LIST), after: None };
        let mut all = self.profile_list(&req)?;
        let cap = usize::try_from(all.max_per_agent).unwrap_or(usize::MAX);
        while let Some(next) = all.next_after.take().filter(|_| all.preferences.len() < cap) {
            req.after = Some(next);
            let page = self.profile_list(&req)?;
            all.preferences.extend(page.preferences);
            all.next_after = page.next_after;
        }
        all.preferences.truncate(cap);
        all.note = None;
        Ok(all)
    }

    /// The most preferences one agent keeps (`[memory.profile] max_preferences_per_agent`).
    pub fn profile_cap(&self) -> u64 {
        u64::from(self.config().memory.profile.max_preferences_per_agent).max(1)
    }

    /// Refuses an import that left an agent over [`Engine::profile_cap`] with more preferences
    /// than it had (`before`), naming each such agent, or more agents than
    /// [`Engine::profile_agent_cap`] and than it had (`agents`); the caller's transaction is then rolled
    /// back, so nothing of the manifest is stored. An agent over the cap already (a database
    /// of an older docdex) may still take updates and removals that do not grow it.
    fn profile_import_room(
        &self,
        conn: &Connection,
        path: &Path,
        before: &BTreeMap<String, u64>,
        agents: u64,
    ) -> Result<()> {
        let cap = self.profile_cap();
        let over: Vec<(String, u64, u64)> = store::counts(conn)?
            .into_iter()
            .filter_map(|(a, n)| {
                let had = before.get(&a).copied().unwrap_or(0);
                (n > cap && n > had).then_some((a, had, n))
            })
            .collect();
        over_cap(path, cap, &over, "")?;
        self.agents_over_cap(path, agents, store::agent_count(conn)?, "")
    }

    /// Refuses an import that takes profile memory from `had` agents to `would` past
    /// [`Engine::profile_agent_cap`] (`bound`: "at least " for a lower bound).
    fn agents_over_cap(&self, path: &Path, had: u64, would: u64, bound: &str) -> Result<()> {
        let cap = self.profile_agent_cap();
        if would <= cap || would <= had {
            return Ok(());
        }
        Err(Error::BadRequest(format!(
            "{} not imported (nothing of it was stored): profile memory keeps at most {cap} agents, and it would hold {bound}{would} (holds {had}): {MAKE_AGENT_ROOM}, then import again; or leave agents out of the manifest",
            path.display()
        )))
    }

    /// The most agents profile memory keeps (`[memory.profile] max_agents`).
    pub fn profile_agent_cap(&self) -> u64 {
        u64::from(self.config().memory.profile.max_agents).max(1)
    }

    /// Refuses creating `agent` when it is new and profile memory keeps
    /// [`Engine::profile_agent_cap`] agents already; nothing stored is touched.
    pub(crate) fn profile_agent_room(&self, conn: &Connection, agent: &str) -> Result<()> {
        if store::agent(conn, agent)?.is_some() {
            return Ok(());
        }
        let cap = self.profile_agent_cap();
        let held = store::agent_count(conn)?;
        if held < cap {
            return Ok(());
        }
        Err(Error::BadRequest(format!(
            "profile memory already keeps {held} agents, the most it keeps ({cap}); agent {agent} not created: {MAKE_AGENT_ROOM}"
        )))
    }

    /// Refuses one more preference for `agent` when it holds [`Engine::profile_cap`] already,
    /// saying how many it holds and what to do; nothing stored is touched.
    pub(crate) fn profile_room(&self, conn: &Connection, agent: &str) -> Result<()> {
        let cap = self.profile_cap();
        let held = store::count_of(conn, agent)?;
        if held < cap {
            return Ok(());
        }
        Err(Error::BadRequest(format!(
            "agent {agent} already keeps {held} preferences, the most one agent keeps ({cap}); nothing added: {}",
            make_room(agent)
        )))
    }

    /// Fails with the known agents when `agent` does not exist ([`Error::UnknownAgent`]).
    pub(crate) fn profile_agent_exists(&self, agent: &str) -> Result<()> {
        valid_agent(agent)?;
        let known = self.profile_read(|c| Ok(store::agent(c, agent)?.is_some()))?;
        if known {
            return Ok(());
        }
        let all: Vec<String> = self.profile_read(store::agents)?.into_iter().map(|a| a.id).collect();
        let guess = closest_agent(agent, &all).map(|a| format!("; did you mean {a}?")).unwrap_or_default();
        Err(Error::UnknownAgent(format!(
            "no agent {agent:?} in profile memory{guess} (agents: {}); `docdex profile add --agent {agent} --category style \"...\"` creates it",
            if all.is_empty() { "none".to_string() } else { all.join(", ") }
        )))
    }

    /// The other existing agent `agent` most likely mistypes ([`closest_agent`]), if any
    /// (`agent` itself left out: a write may just have created it).
    pub fn profile_closest_agent(&self, agent: &str) -> Option<String> {
        let all: Vec<String> = match self.profile_read(store::agents) {
            Ok(list) => list.into_iter().map(|a| a.id).filter(|id| *id != store::agent_key(agent)).collect(),
            Err(e) => {
                tracing::warn!("reading the profile agents: {e}");
                return None;
            }
        };
        closest_agent(agent, &all)
    }

    /// What to say when a read names `agent`, which does not exist: a typo loses the
    /// agent's preferences without a word, so the closest existing name is offered.
    pub fn profile_unknown_agent_note(&self, agent: &str) -> String {
        match self.profile_closest_agent(agent) {
            Some(near) => format!("no agent {agent} in profile memory (did you mean {near}?); only the team's apply"),
            None => format!(
                "agent {agent} has no preferences yet (`docdex profile add --agent {agent} ...`); only the team's apply"
            ),
        }
    }

    /// What to say when a write created `agent`: a new agent is legitimate, a typo of an
    /// existing one is not, so the closest existing name is offered with the undo.
    pub fn profile_created_agent_note(&self, agent: &str) -> String {
        match self.profile_closest_agent(agent) {
            Some(near) => format!(
                "created agent {agent} (no agent had that name; did you mean {near}? `docdex profile remove --agent {agent}` undoes it)"
            ),
            None => format!("created agent {agent} (no agent had that name)"),
        }
    }

    /// Teaches an agent a preference directly (spec 001 §6.1: bypasses the evolution pipeline).
    pub fn profile_add(&self, req: &ProfileAddRequest) -> Result<ProfileWriteResponse> {
        let agent_id = self.require_agent(&req.agent_id)?;
        let content = valid_content(&req.content)?;
        let role = req.role.as_deref().map(valid_role).transpose()?.filter(|r| !r.is_empty());
        let category = req.category.unwrap_or_else(|| policy::classify(&content));
        let (rule, rule_note) = settle_rule(category, req.rule.as_deref(), &content)?;
        let now = now_ms() as i64;
        let preference = Preference {
            id: uuid::Uuid::new_v4().to_string(),
            agent_id,
            content,
            category,
            rule,
            last_updated: now,
            source: PreferenceSource::Manual,
            embedded: false,
        };
        let (created_agent, previous_role) = self.profile_write(|w| {
            if let Some(same) =
                store::same_text(w.conn(), &preference.agent_id, &preference.content, preference.rule.as_deref(), "")?
            {
                return Err(repeated(&same, "nothing added"));
            }
            self.profile_room(w.conn(), &preference.agent_id)?;
            self.profile_agent_room(w.conn(), &preference.agent_id)?;
            let before = store::agent(w.conn(), &preference.agent_id)?;
            let stamp = if role.is_some() { now } else { 0 };
            let created = w.ensure_agent(&preference.agent_id, role.as_deref().unwrap_or(""), now, stamp)?;
            // A role given for an existing agent replaces its role (it used to be ignored
            // without a word, and nothing else could change it), stamped after the old one so
            // the change wins the next sync. An agent without a role had none to report.
            let previous = match (&role, before) {
                (Some(new), Some(old)) => replace_role(w, &old, new, now)?.and_then(|(r, _)| r),
                _ => None,
            };
            w.insert(&preference)?;
            Ok((created, previous))
        })?;
        tracing::info!(agent = %preference.agent_id, id = %preference.id, category = %preference.category, "preference added");
        let mut resp = self.profile_written(preference, created_agent, rule_note)?;
        resp.previous_role = previous_role;
        resp.agent_note = created_agent.then(|| self.profile_created_agent_note(&resp.preference.agent_id));
        resp.category_note = req.category.is_none().then(|| {
            format!("category {category} read from the words (a category of style, tooling, constraint or workflow sets it; `profile edit ID --category C` changes it)")
        });
        Ok(resp)
    }

    /// Sets an agent's role alone (`docdex profile role`, `POST /v1/profile/role`), creating the
    /// agent when new: before, only `profile add --role` changed a role, and it added a
    /// preference too. The role is stamped after the one it replaces, so it wins the next sync
    /// as `add --role`'s does; the same role again writes nothing and keeps its stamp.
    pub fn profile_set_role(&self, req: &ProfileRoleRequest) -> Result<ProfileRoleResponse> {
        let agent_id = self.require_agent(&req.agent_id)?;
        let role = valid_role(&req.role)?;
        if role.is_empty() {
            return Err(Error::BadRequest(
                "give the role: one line saying what the agent does (\"Frontend developer\")".into(),
            ));
        }
        let now = now_ms() as i64;
        let (created_agent, changed, previous_role, role_updated) =
            self.profile_write(|w| match store::agent(w.conn(), &agent_id)? {
                None => {
                    self.profile_agent_room(w.conn(), &agent_id)?;
                    Ok((w.ensure_agent(&agent_id, &role, now, now)?, true, None, now))
                }
                Some(old) => Ok(match replace_role(w, &old, &role, now)? {
                    Some((previous, at)) => (false, true, previous, at),
                    None => (false, false, None, old.role_updated),
                }),
            })?;
        tracing::info!(agent = %agent_id, changed, "agent role set");
        let agent_note = created_agent.then(|| self.profile_created_agent_note(&agent_id));
        Ok(ProfileRoleResponse { agent_id, role, changed, previous_role, role_updated, created_agent, agent_note })
    }

    /// Embeds what was just written and reads it back.
    pub(crate) fn profile_written(
        &self,
        p: Preference,
        created_agent: bool,
        rule_note: String,
    ) -> Result<ProfileWriteResponse> {
        let notice = self
            .profile_vectors_ready(None)
            .err()
            .map(|t| format!("stored without an embedding ({t}); recall matches its words until an embedder answers"));
        let preference = self.profile_read(|c| store::preference(c, &p.id))?.unwrap_or(p);
        Ok(ProfileWriteResponse {
            preference,
            created_agent,
            rule_note,
            notice,
            agent_note: None,
            previous_role: None,
            category_note: None,
        })
    }

    /// Changes a preference's text, category or rule.
    pub fn profile_edit(&self, req: &ProfileEditRequest) -> Result<ProfileWriteResponse> {
        let old = self.profile_preference(&req.id)?;
        let content = match &req.content {
            Some(c) => valid_content(c)?,
            None => old.content.clone(),
        };
        let category = req.category.unwrap_or(old.category);
        let (rule, rule_note) = match req.rule.as_deref().map(str::trim) {
            Some("") if old.rule.is_some() => (None, "rule removed: advice only".to_string()),
            // No rule to remove (the workbench's form sends its empty rule field).
            Some("") => settle_rule(category, None, &content).map(|(_, note)| (None, note))?,
            Some(r) => settle_rule(category, Some(r), &content)?,
            // Moving into or out of constraints, or rewording one, settles the rule again.
            None if category != Category::Constraint && old.rule.is_some() => {
                (None, format!("rule {} removed: only constraints carry rules", old.rule.clone().unwrap_or_default()))
            }
            None if category == Category::Constraint && old.rule.is_some() => {
                (old.rule.clone(), format!("rule kept: {}", old.rule.clone().unwrap_or_default()))
            }
            None => settle_rule(category, None, &content)?,
        };
        let text_changed = content != old.content;
        let rule_changed = rule != old.rule;
        let old_stamp = old.last_updated;
        let updated = Preference {
            content,
            category,
            rule,
            // Strictly newer, so the edit wins every later sync.
            last_updated: (now_ms() as i64).max(old.last_updated + 1),
            source: PreferenceSource::Manual,
            ..old
        };
        self.profile_write(|w| {
            let now = store::preference(w.conn(), &updated.id)?.ok_or_else(|| not_found(&updated.id))?;
            if req.expected_last_updated.is_some_and(|t| t != now.last_updated) || now.last_updated != old_stamp {
                return Err(changed_meanwhile(&now));
            }
            if text_changed || rule_changed {
                let rule = updated.rule.as_deref();
                if let Some(same) = store::same_text(w.conn(), &updated.agent_id, &updated.content, rule, &updated.id)?
                {
                    return Err(repeated(&same, "nothing changed"));
                }
            }
            w.update(&updated, text_changed)
        })?;
        self.profile_written(updated, false, rule_note)
    }

    /// Removes a preference (or, with `agent`, an agent and all its preferences); the removal
    /// is kept as a tombstone so sync carries it.
    pub fn profile_remove(&self, req: &ProfileRemoveRequest) -> Result<ProfileRemoveResponse> {
        let now = now_ms() as i64;
        if req.agent {
            // Folded first: `--agent TEAM` names the team, which is kept.
            let key = store::agent_key(&req.id);
            let id = key.as_str();
            if id == TEAM_AGENT {
                return Err(Error::BadRequest(format!(
                    "the {TEAM_AGENT} agent is always kept (every agent reads its conventions, and sync keeps it on every machine): remove its preferences one by one (`docdex profile list --agent {TEAM_AGENT}`, then `docdex profile remove ID`)"
                )));
            }
            self.profile_agent_exists(id)?;
            let removed = self.profile_write(|w| {
                // Kept for sync, stamped after the agent's own stamp (a clock running behind
                // the machine that set its role would otherwise lose to it).
                let at = store::agent(w.conn(), id)?.map_or(now, |a| now.max(store::agent_stamp(&a).saturating_add(1)));
                w.record_agent_removal(id, at)?;
                let removed = w.delete_agent(id, now)?;
                w.bound_removals(MAX_KEPT_REMOVALS)?;
                Ok(removed)
            })?;
            return Ok(ProfileRemoveResponse { id: id.to_string(), agent_id: id.to_string(), removed });
        }
        let id = self.profile_preference(req.id.trim())?.id;
        let gone = self
            .profile_write(|w| {
                let current = store::preference(w.conn(), &id)?.ok_or_else(|| not_found(&id))?;
                if req.expected_last_updated.is_some_and(|t| t != current.last_updated) {
                    return Err(changed_meanwhile(&current));
                }
                let gone = w.delete(&id, now)?;
                w.bound_removals(MAX_KEPT_REMOVALS)?;
                Ok(gone)
            })?
            .ok_or_else(|| not_found(&id))?;
        tracing::info!(agent = %gone.agent_id, id, "preference removed");
        Ok(ProfileRemoveResponse { id, agent_id: gone.agent_id, removed: 1 })
    }

    /// One preference, by its id or a unique prefix of it (as `memory delete` takes one).
    pub fn profile_preference(&self, id: &str) -> Result<Preference> {
        let given = id.trim();
        self.profile_read(|c| {
            let Some(id) = id_by_prefix(c, "preferences", given, "preference", LIST_PREFERENCES)? else {
                return Ok(None);
            };
            store::preference(c, &id)
        })?
        .ok_or_else(|| not_found(given))
    }

    /// The whole profile as a sync manifest.
    pub fn profile_export(&self) -> Result<ProfileManifest> {
        self.profile_read(|c| {
            Ok(ProfileManifest {
                format: MANIFEST_FORMAT.into(),
                version: PROFILE_SCHEMA_VERSION,
                agents: store::sync_agents(c)?,
                preferences: store::all_preferences(c)?
                    .into_iter()
                    .map(|p| SyncPreference {
                        id: p.id,
                        agent_id: p.agent_id,
                        content: p.content,
                        category: p.category,
                        rule: p.rule,
                        last_updated: p.last_updated,
                        source: Some(p.source),
                    })
                    .collect(),
                tombstones: store::tombstones(c)?,
                removed_agents: Some(store::agent_removals(c)?),
            })
        })
    }

    /// Writes the sync manifest to `out` (default `profiles/sync/profile_sync.json`) atomically.
    pub fn profile_export_to(&self, out: Option<&Path>) -> Result<ProfileExportResponse> {
        let manifest = self.profile_export()?;
        let path = out.map(Path::to_path_buf).unwrap_or_else(|| self.profile_dir().join("sync/profile_sync.json"));
        // The manifest replaces the file by rename: over a device (`/dev/full`), a FIFO or a
        // link (`/dev/stdout`) that would replace the node itself, and a directory fails late.
        if let Ok(meta) = std::fs::symlink_metadata(&path) {
            if !meta.is_file() {
                let what = if meta.is_dir() {
                    "a directory"
                } else if meta.file_type().is_symlink() {
                    "a symbolic link"
                } else {
                    "not a regular file (a device, FIFO or socket)"
                };
                return Err(Error::BadRequest(format!(
                    "{} is {what}: give the path of a new or regular file for the manifest",
                    path.display()
                )));
            }
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if out.is_some() {
                out_dir_exists(dir)?;
            } else {
                std::fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
            }
        }
        fsutil::write_json_atomic(&path, &manifest)?;
        Ok(ProfileExportResponse {
            path,
            agents: manifest.agents.len(),
            preferences: manifest.preferences.len(),
            tombstones: manifest.tombstones.len(),
        })
    }

    /// Merges a sync manifest (spec 001 §4.5): per preference id, the newer `last_updated` wins
    /// (ties go to the greater text, so every machine converges), removals travel as
    /// tombstones, and bad rows are refused with their reason. The manifest is checked (its
    /// shape, format and version) and copied to `profiles/sync/`, then its preferences are read
    /// one by one and merged in one transaction under the writer lock ([`manifest`] streams
    /// both reads, so memory holds the text and the rows kept, not a tree of the file).
    pub fn profile_import(&self, path: &Path) -> Result<ProfileImportResponse> {
        let text = read_manifest(path)?;
        let outline = manifest::outline(path, &text)?;
        let staged = self.stage_manifest(path, &text)?;
        let mut report = ProfileImportResponse { source: path.to_path_buf(), staged, ..Default::default() };
        let (mut agent_rejects, mut removal_rejects) = (Vec::new(), Vec::new());
        let agents = checked_agents(&outline.agents, &mut agent_rejects);
        let removals = outline.removed_agents.as_deref().map(|r| checked_removals(r, &mut removal_rejects));
        self.profile_write(|w| {
            let mut gain = SureGain::new(self, w, path, &outline, removals.as_deref())?;
            let read = read_preferences(path, &text, &mut gain)?;
            let (before, agents_before) = gain.before();
            report.rejected = [
                outline.rejected_agents.clone(),
                read.shape_rejects,
                outline.rejected_removals.clone(),
                agent_rejects,
                read.check_rejects,
                removal_rejects,
            ]
            .concat();
            let skew_limit = now_ms() as i64 + CLOCK_SKEW_MS;
            report.ahead_of_clock = read.prefs.iter().filter(|p| p.last_updated > skew_limit).count();
            let rows = Incoming {
                agents: &agents,
                prefs: &read.prefs,
                tombstones: &outline.tombstones,
                removals: removals.as_deref(),
            };
            merge(w, &rows, &mut report)?;
            // All or nothing: an agent the merge takes past the cap, or agents past theirs,
            // fail the transaction.
            self.profile_import_room(w.conn(), path, &before, agents_before)?;
            // Applied above however old (an older removal still beats an older row); kept up
            // to the bound, the horizon standing for the ones dropped.
            w.bound_removals(MAX_KEPT_REMOVALS)
        })?;
        tracing::info!(added = report.added, updated = report.updated, deleted = report.deleted, "profile imported");
        let _ = self.profile_vectors_ready(None);
        Ok(report)
    }

    /// Copies an imported manifest's text to `profiles/sync/` for the record (also when the
    /// import is refused), keeping the newest [`KEPT_IMPORTS`] copies.
    fn stage_manifest(&self, path: &Path, text: &str) -> Result<PathBuf> {
        let staged = self.profile_dir().join("sync").join(format!(
            "incoming-{}-{}",
            now_ms(),
            path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "manifest.json".into())
        ));
        if let Some(dir) = staged.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
        }
        fsutil::write_atomic(&staged, text.as_bytes())?;
        if let Some(dir) = staged.parent() {
            prune_staged(dir, KEPT_IMPORTS);
        }
        Ok(staged)
    }
}

/// A manifest's preferences as the import read them: the ones to merge, and the rows rejected
/// for their shape and by the checks.
struct ReadPreferences {
    prefs: Vec<SyncPreference>,
    shape_rejects: Vec<RejectedRow>,
    check_rejects: Vec<RejectedRow>,
}

/// Reads the preferences of `text` one by one, counting each one kept in `gain`, which stops
/// the read (and so the import) as soon as an agent surely goes past its cap.
fn read_preferences(path: &Path, text: &str, gain: &mut SureGain<'_, '_>) -> Result<ReadPreferences> {
    let mut read = ReadPreferences { prefs: Vec::new(), shape_rejects: Vec::new(), check_rejects: Vec::new() };
    manifest::each_preference(path, text, &mut |row| {
        let p = match row {
            Ok(p) => p,
            Err(rejected) => {
                read.shape_rejects.push(rejected);
                return Ok(());
            }
        };
        match checked_preference(&p) {
            Ok(p) => {
                gain.add(&p)?;
                read.prefs.push(p);
            }
            Err(e) => read.check_rejects.push(RejectedRow { id: p.id, reason: e.to_string() }),
        }
        Ok(())
    })?;
    Ok(read)
}

/// Counts, as a manifest's preferences are read, the rows each agent surely gains, and
/// refuses the import as soon as one agent would go past [`Engine::profile_cap`] and past what
/// it holds, or profile memory past [`Engine::profile_agent_cap`] agents and past what it
/// holds (`... would hold at least 5001 (holds 0)`): a manifest of 60,000 rows for one agent
/// was read whole (202 MB) and then merged only to be rolled back. A row surely adds one:
/// its id unknown here and given once in the manifest, with no removal here or in the
/// manifest, newer than the forgotten horizon, of an agent removed on neither side; counted
/// once per text and rule (repeats merge). So the counts are lower bounds, and no import the
/// merge would take is refused here; the check after the merge stays the exact one.
struct SureGain<'a, 'c> {
    engine: &'a Engine,
    w: &'a Write<'c>,
    path: &'a Path,
    cap: u64,
    ids: &'a std::collections::HashMap<u128, u32>,
    /// The manifest's preference removals, by id (as given and as a UUID spells it).
    gone: std::collections::HashSet<String>,
    /// Agents removed here or in the manifest.
    removed: std::collections::HashSet<String>,
    horizon: Option<i64>,
    held: BTreeMap<String, u64>,
    agents_held: u64,
    /// Per agent, the hashes of the texts and rules it surely gains (a collision only lowers
    /// the count, which stays a lower bound).
    texts: std::collections::HashMap<String, std::collections::HashSet<u64>>,
    new_agents: u64,
}

impl<'a, 'c> SureGain<'a, 'c> {
    fn new(
        engine: &'a Engine,
        w: &'a Write<'c>,
        path: &'a Path,
        outline: &'a manifest::Outline,
        removals: Option<&[SyncAgentRemoval]>,
    ) -> Result<Self> {
        let removed = store::agent_removals(w.conn())?
            .into_iter()
            .map(|r| r.id)
            .chain(removals.unwrap_or_default().iter().map(|r| r.id.clone()))
            .collect();
        let gone = outline
            .tombstones
            .iter()
            .flat_map(|t| [Some(t.id.clone()), uuid::Uuid::parse_str(&t.id).ok().map(|u| u.to_string())])
            .flatten()
            .collect();
        Ok(SureGain {
            engine,
            w,
            path,
            cap: engine.profile_cap(),
            ids: &outline.ids,
            gone,
            removed,
            horizon: w.forgotten_through(store::FORGOTTEN_REMOVALS)?,
            held: store::counts(w.conn())?,
            agents_held: store::agent_count(w.conn())?,
            texts: Default::default(),
            new_agents: 0,
        })
    }

    /// Counts `p` (checked) when it surely adds a row, refusing the import when that takes its
    /// agent, or the agents, past their caps.
    fn add(&mut self, p: &SyncPreference) -> Result<()> {
        let given_once = uuid::Uuid::parse_str(&p.id).is_ok_and(|u| self.ids.get(&u.as_u128()) == Some(&1));
        let unsure = !given_once
            || self.gone.contains(&p.id)
            || self.removed.contains(&p.agent_id)
            || self.horizon.is_some_and(|h| p.last_updated <= h);
        let conn = self.w.conn();
        if unsure || store::preference(conn, &p.id)?.is_some() || self.w.tombstone_of(&p.id)?.is_some() {
            return Ok(());
        }
        if !self.texts.contains_key(&p.agent_id) && store::agent(conn, &p.agent_id)?.is_none() {
            self.new_agents += 1;
            let had = self.agents_held;
            self.engine.agents_over_cap(self.path, had, had + self.new_agents, "at least ")?;
        }
        let texts = self.texts.entry(p.agent_id.clone()).or_default();
        if texts.insert(text_hash(p)) {
            let n = texts.len() as u64;
            let had = self.held.get(&p.agent_id).copied().unwrap_or(0);
            if n > self.cap && n > had {
                return over_cap(self.path, self.cap, &[(p.agent_id.clone(), had, n)], "at least ");
            }
        }
        Ok(())
    }

    /// What profile memory held before the import: preferences per agent, and agents.
    fn before(&self) -> (BTreeMap<String, u64>, u64) {
        (self.held.clone(), self.agents_held)
    }
}

/// A hash of a preference's text as repeats compare it, and of its rule.
fn text_hash(p: &SyncPreference) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    (store::text_key(&p.content), p.rule.as_deref()).hash(&mut h);
    h.finish()
}

/// Keeps the newest `keep` copies of imported manifests (`incoming-<ms>-<name>`) in `dir`:
/// every import added one and none was ever removed, so the folder only grew (up to 64 MB a
/// copy). Other files (the export's `profile_sync.json`) are left alone; a copy that cannot be
/// removed is logged, never a reason to fail the import.
fn prune_staged(dir: &Path, keep: usize) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut copies: Vec<(u128, String)> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            let ms = name.strip_prefix("incoming-")?.split('-').next()?.parse().ok()?;
            Some((ms, name))
        })
        .collect();
    if copies.len() <= keep {
        return;
    }
    copies.sort();
    for (_, name) in &copies[..copies.len() - keep] {
        let path = dir.join(name);
        match std::fs::remove_file(&path) {
            Ok(()) => tracing::debug!(path = %path.display(), "old imported manifest removed"),
            Err(e) => tracing::warn!(path = %path.display(), "removing an old imported manifest: {e}"),
        }
    }
}

/// Refuses a path that names no file (not found, exit 2, not an I/O failure), a directory, a
/// file over [`MAX_MANIFEST_BYTES`] or a device (which reports no size and never ends:
/// `/dev/zero` filled memory).
fn manifest_file(path: &Path) -> Result<()> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::NotFound(format!(
            "no file {}: give the path of a profile manifest (`docdex profile export` writes one)",
            path.display()
        )),
        _ => Error::io("reading", path, e),
    })?;
    if meta.is_dir() {
        return Err(Error::BadRequest(format!(
            "{} is a directory: give the path of a profile manifest (`docdex profile export` writes one)",
            path.display()
        )));
    }
    if meta.len() > MAX_MANIFEST_BYTES {
        return Err(too_big(path, &format!("{} MB ({} bytes)", meta.len() / 1_048_576, meta.len())));
    }
    if !meta.is_file() {
        return Err(Error::BadRequest(format!(
            "{} is not a regular file: give the path of a profile manifest (`docdex profile export` writes one)",
            path.display()
        )));
    }
    Ok(())
}

/// The refusal of a manifest over [`MAX_MANIFEST_BYTES`] (`size`: how big it is).
fn too_big(path: &Path, size: &str) -> Error {
    Error::BadRequest(format!(
        "{} is {size}; a profile manifest is at most {} MB ({MAX_MANIFEST_BYTES} bytes): leave agents or preferences out of it",
        path.display(),
        MAX_MANIFEST_BYTES / 1_048_576
    ))
}

/// A manifest's text, read through the size bound (a file growing while read stops there too);
/// a path naming no file, a directory or a device is refused first.
fn read_manifest(path: &Path) -> Result<String> {
    manifest_file(path)?;
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| Error::io("reading", path, e))?;
    let mut bytes = Vec::new();
    file.take(MAX_MANIFEST_BYTES + 1).read_to_end(&mut bytes).map_err(|e| Error::io("reading", path, e))?;
    if bytes.len() as u64 > MAX_MANIFEST_BYTES {
        return Err(too_big(path, &format!("over {} MB", MAX_MANIFEST_BYTES / 1_048_576)));
    }
    String::from_utf8(bytes).map_err(|_| {
        Error::BadRequest(format!(
            "{} is not a profile manifest (not UTF-8 text); `docdex profile export` writes one",
            path.display()
        ))
    })
}

/// Preferences one list page answers when no `limit` is given (as repository memory's list).
pub const DEFAULT_LIST: usize = 50;
/// Preferences one list page answers at most: 200 of at most 4 KiB of text each, under 1 MiB.
pub const MAX_LIST: usize = 200;

/// The page size `limit` asks for, and whether it was cut to [`MAX_LIST`]; 0 is refused.
fn list_limit(limit: Option<usize>) -> Result<(usize, bool)> {
    match limit {
        Some(0) => {
            Err(Error::BadRequest("limit 0 asks for no preference: give 1 to 200 (or leave it out for 50)".into()))
        }
        Some(n) if n > MAX_LIST => Ok((MAX_LIST, true)),
        Some(n) => Ok((n, false)),
        None => Ok((DEFAULT_LIST, false)),
    }
}

/// One page of `agent`'s preferences after the one `after` names, and whether more follow.
fn list_page(conn: &Connection, agent: &str, after: Option<&str>, limit: usize) -> Result<(Vec<Preference>, bool)> {
    let cursor = match after {
        None => None,
        Some(id) => match store::preference(conn, id)? {
            Some(p) if p.agent_id == agent => Some(p),
            Some(p) => {
                return Err(Error::BadRequest(format!(
                    "preference {id} is {}'s, not {agent}'s: `after` takes the `next_after` of a page of {agent}'s list",
                    p.agent_id
                )))
            }
            None => {
                return Err(Error::NotFound(format!(
                    "no preference {id} to list after (removed meanwhile?); list {agent}'s preferences again from the start"
                )))
            }
        },
    };
    let mut prefs = store::preferences_page(conn, agent, cursor.as_ref(), limit + 1)?;
    let more = prefs.len() > limit;
    prefs.truncate(limit);
    Ok((prefs, more))
}

/// The refusal of an import that takes agents past the cap (`over`: agent, held, would
/// hold), naming up to five; `bound` is "at least " when the counts are lower bounds.
fn over_cap(path: &Path, cap: u64, over: &[(String, u64, u64)], bound: &str) -> Result<()> {
    let Some((first, _, _)) = over.first() else { return Ok(()) };
    let each: Vec<String> =
        over.iter().take(5).map(|(a, had, n)| format!("{a} would hold {bound}{n} (holds {had})")).collect();
    let more = if over.len() > 5 { format!(" and {} more agents", over.len() - 5) } else { String::new() };
    Err(Error::BadRequest(format!(
        "{} not imported (nothing of it was stored): one agent keeps at most {cap} preferences, and {}{more}. For {first}: {}, then import again; or leave preferences out of the manifest",
        path.display(),
        each.join(", "),
        make_room(first)
    )))
}

/// What to do when profile memory keeps as many agents as it may.
const MAKE_AGENT_ROOM: &str = "remove agents no longer needed (`docdex profile list`, `docdex profile remove --agent ID`) or raise `[memory.profile] max_agents` (`docdex config`)";

/// What to do when an agent is full: remove preferences, or raise the setting.
fn make_room(agent: &str) -> String {
    format!(
        "remove ones it no longer needs (`docdex profile list --agent {agent}`, `docdex profile remove ID`) or raise `[memory.profile] max_preferences_per_agent` (`docdex config`)"
    )
}

/// The agents of a manifest worth merging; the others are reported.
fn checked_agents(rows: &[SyncAgent], rejected: &mut Vec<RejectedRow>) -> Vec<SyncAgent> {
    let mut agents = Vec::new();
    for a in rows {
        // Agent ids are checked trimmed, so they are stored trimmed: " team" was merged as an
        // agent of its own that no command could name, its preferences applying to nobody.
        match valid_agent(&a.id).and_then(|()| valid_role(&a.role)) {
            Ok(role) => agents.push(SyncAgent { id: store::agent_key(&a.id), role, ..a.clone() }),
            Err(e) => rejected.push(RejectedRow { id: a.id.clone(), reason: e.to_string() }),
        }
    }
    agents
}

/// A manifest's preference as it is merged (its id in one spelling, its agent folded, its
/// text and rule checked), or why it is not.
fn checked_preference(p: &SyncPreference) -> Result<SyncPreference> {
    // One spelling per id (`{...}`, `urn:uuid:`, upper case and unhyphenated forms parse
    // too, and were stored as a second row of the same preference).
    let id = uuid::Uuid::parse_str(&p.id)
        .map_err(|_| Error::BadRequest(format!("id {:?} is not a UUID", p.id)))?
        .to_string();
    valid_agent(&p.agent_id)?;
    let content = valid_content(&p.content)?;
    let rule = match p.rule.as_deref() {
        None => None,
        Some(_) if p.category != Category::Constraint => {
            return Err(Error::BadRequest("only constraints carry rules".into()))
        }
        Some(r) => Some(rules::Rule::parse(r).map_err(Error::BadRequest)?.canonical()),
    };
    if p.last_updated <= 0 {
        return Err(Error::BadRequest("last_updated must be a positive epoch-milliseconds time".into()));
    }
    Ok(SyncPreference { id, agent_id: store::agent_key(&p.agent_id), content, rule, ..p.clone() })
}

/// The checked rows of a manifest, as [`merge`] takes them.
struct Incoming<'a> {
    agents: &'a [SyncAgent],
    prefs: &'a [SyncPreference],
    tombstones: &'a [SyncTombstone],
    /// `None`: a manifest of a docdex from before agents synced on their own.
    removals: Option<&'a [SyncAgentRemoval]>,
}

/// The agent removals worth merging (a valid id, a positive time); the others are reported.
fn checked_removals(removals: &[SyncAgentRemoval], rejected: &mut Vec<RejectedRow>) -> Vec<SyncAgentRemoval> {
    let mut out = Vec::new();
    for r in removals {
        match valid_agent(&r.id) {
            // An older docdex's removal of `TEAM` removed a case variant, now another spelling
            // of a kept agent (`team`): applied, it would remove that agent.
            Ok(()) if r.id.trim() != store::agent_key(&r.id) => rejected.push(RejectedRow {
                id: r.id.clone(),
                reason: format!(
                    "the removal of agent {:?}, a case variant of {} (an older docdex kept them apart; agent ids are lower case now): not applied to {}",
                    r.id.trim(),
                    store::agent_key(&r.id),
                    store::agent_key(&r.id)
                ),
            }),
            Ok(()) if r.removed_at > 0 => out.push(SyncAgentRemoval { id: store::agent_key(&r.id), ..r.clone() }),
            Ok(()) => rejected.push(RejectedRow {
                id: r.id.clone(),
                reason: "removed_at must be a positive epoch-milliseconds time".into(),
            }),
            Err(e) => rejected.push(RejectedRow { id: r.id.clone(), reason: e.to_string() }),
        }
    }
    out
}

type Ids = std::collections::BTreeSet<String>;

fn merge(w: &Write<'_>, m: &Incoming<'_>, report: &mut ProfileImportResponse) -> Result<()> {
    let (mut created, mut listed) = (Ids::new(), Ids::new());
    for a in m.agents {
        match merge_agent(w, a, report)? {
            Merged::Created => {
                created.insert(a.id.clone());
                listed.insert(a.id.clone());
            }
            Merged::Existing => {
                listed.insert(a.id.clone());
            }
            Merged::RemovedHere => {}
        }
    }
    let added = merge_preferences(w, m.prefs, &mut created, report)?;
    let mut emptied = apply_tombstones(w, m.tombstones, report)?;
    if let Some(removals) = m.removals {
        for id in apply_agent_removals(w, removals)? {
            listed.remove(&id);
            emptied.insert(id);
        }
    }
    merge_repeats(w, &added, report)?;
    // A manifest that carries agent removals lists every agent its side has, so one it lists
    // with no preferences stays here with none, as it is there (a role set alone). One it lists
    // with preferences that all end up removed here was removed here (before agent removals
    // were kept, only its preferences' removals say so): not kept. An older manifest carried an
    // agent only with its preferences: an empty one is not kept.
    for p in m.prefs {
        listed.remove(&p.agent_id);
    }
    settle_agents(w, &created, &emptied, m.removals.map(|_| &listed), report)
}

/// Keeps one copy of a text an agent holds more than once after the merge
/// ([`Write::merge_repeats`]: the oldest, so every machine keeps the same one): two machines
/// adding the same convention to `team`, then syncing, gave it twice to every chat. A copy this
/// import added is counted as `merged`, not `added`; so is a local copy that an older incoming
/// one replaced.
fn merge_repeats(w: &Write<'_>, added: &Ids, report: &mut ProfileImportResponse) -> Result<()> {
    let mut groups: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (gone, kept) in w.merge_repeats(now_ms() as i64)? {
        groups.entry(kept).or_default().push(gone.id);
    }
    for (kept, gone) in &groups {
        report.merged += gone.len();
        let new_here = std::iter::once(kept).chain(gone).filter(|id| added.contains(*id)).count();
        // A text no copy of which was here before is one added preference.
        let wholly_new = usize::from(new_here == gone.len() + 1);
        report.added = report.added.saturating_sub(new_here - wholly_new);
    }
    Ok(())
}

/// Merges the manifest's preferences (per id, the newer `last_updated` wins), creating the
/// agents they name (into `created`). Answers the ids it added.
fn merge_preferences(
    w: &Write<'_>,
    prefs: &[SyncPreference],
    created: &mut Ids,
    report: &mut ProfileImportResponse,
) -> Result<Ids> {
    let mut added = Ids::new();
    let forgotten = w.forgotten_through(store::FORGOTTEN_REMOVALS)?;
    for p in prefs {
        if let Some(horizon) = forgotten.filter(|&h| p.last_updated <= h) {
            if store::preference(w.conn(), &p.id)?.is_none() && w.tombstone_of(&p.id)?.is_none() {
                report.rejected.push(forgotten_row(&p.id, horizon));
                continue;
            }
        }
        if w.ensure_agent(&p.agent_id, "", p.last_updated, 0)? {
            created.insert(p.agent_id.clone());
        }
        let incoming = Preference {
            id: p.id.clone(),
            agent_id: p.agent_id.clone(),
            content: p.content.clone(),
            category: p.category,
            rule: p.rule.clone(),
            last_updated: p.last_updated,
            source: p.source.unwrap_or(PreferenceSource::Import),
            embedded: false,
        };
        match store::preference(w.conn(), &p.id)? {
            None => match w.tombstone_of(&p.id)? {
                Some(deleted_at) if deleted_at >= p.last_updated => report.kept_local += 1,
                _ => {
                    w.insert(&incoming)?;
                    added.insert(incoming.id.clone());
                    report.added += 1;
                }
            },
            Some(local) => {
                let newer = (p.last_updated, p.content.as_str()) > (local.last_updated, local.content.as_str());
                let differs = local.content != incoming.content
                    || local.category != incoming.category
                    || local.rule != incoming.rule
                    || local.agent_id != incoming.agent_id
                    || local.source != incoming.source;
                if newer && differs {
                    w.update(&incoming, local.content != incoming.content)?;
                    report.updated += 1;
                } else if newer {
                    // Same row, newer stamp: take the stamp so both sides agree.
                    w.update(&incoming, false)?;
                    report.kept_local += 1;
                } else {
                    report.kept_local += 1;
                }
            }
        }
    }
    Ok(added)
}

/// The report of an unknown incoming row stamped at or before the forgotten horizon: it may
/// be a copy of a row removed here whose removal the bound dropped, so it is not taken; an edit
/// on its machine stamps it anew and it syncs.
fn forgotten_row(id: &str, horizon: i64) -> RejectedRow {
    RejectedRow {
        id: id.to_string(),
        reason: format!(
            "unknown here and last updated at or before {horizon} (epoch ms), when this profile's oldest \
             removals were dropped ({MAX_KEPT_REMOVALS} kept): it may be a row removed here, so it is not \
             taken; edit it on its machine (or add it again) to sync it"
        ),
    }
}

/// Applies the manifest's preference removals; answers the agents whose preferences they removed.
fn apply_tombstones(w: &Write<'_>, tombstones: &[SyncTombstone], report: &mut ProfileImportResponse) -> Result<Ids> {
    let mut emptied = Ids::new();
    for t in tombstones {
        // A removal travels under the id's one spelling, like the rows it removes.
        let checked = uuid::Uuid::parse_str(&t.id)
            .map_err(|_| Error::BadRequest(format!("removal id {:?} is not a UUID", t.id)))
            .and_then(|id| valid_agent(&t.agent_id).map(|_| id));
        let id = match checked {
            Ok(id) => id,
            Err(e) => {
                // It was skipped without a word.
                report.rejected.push(RejectedRow { id: t.id.clone(), reason: e.to_string() });
                continue;
            }
        };
        let t = SyncTombstone { id: id.to_string(), agent_id: store::agent_key(&t.agent_id), ..t.clone() };
        let holder = store::preference(w.conn(), &t.id)?.map(|p| p.agent_id);
        if w.apply_tombstone(&t)? {
            report.deleted += 1;
            emptied.extend(holder);
        }
    }
    Ok(emptied)
}

/// Applies the manifest's agent removals (`profile remove --agent` over there): an agent here
/// goes when it was removed after it was created or given its role and holds no preference
/// (one written after the removal keeps it, as it keeps a preference). Each removal is kept so
/// it travels on. Answers the agents removed.
fn apply_agent_removals(w: &Write<'_>, removals: &[SyncAgentRemoval]) -> Result<Ids> {
    let mut removed = Ids::new();
    for r in removals {
        let Some(local) = store::agent(w.conn(), &r.id)? else {
            w.record_agent_removal(&r.id, r.removed_at)?;
            continue;
        };
        if r.id == TEAM_AGENT || r.removed_at <= store::agent_stamp(&local) {
            continue;
        }
        if store::preferences_of(w.conn(), &[r.id.as_str()])?.is_empty() {
            w.delete_agent(&r.id, 0)?;
            w.record_agent_removal(&r.id, r.removed_at)?;
            removed.insert(r.id.clone());
        }
    }
    Ok(removed)
}

/// Gives the existing agent `old` the role `new`, stamped after its old one (`now`, or one past
/// the old stamp if that is later) so the change wins the next sync. Returns the role it replaced
/// (`None` when it had none) and the stamp, or `None` when `new` is its role already.
fn replace_role(w: &Write<'_>, old: &SyncAgent, new: &str, now: i64) -> Result<Option<(Option<String>, i64)>> {
    if old.role == new {
        return Ok(None);
    }
    let at = now.max(old.role_updated.saturating_add(1));
    w.set_role(&old.id, new, at)?;
    Ok(Some((Some(old.role.clone()).filter(|r| !r.is_empty()), at)))
}

/// What [`merge_agent`] did with a manifest agent.
enum Merged {
    /// It was new here and is created.
    Created,
    /// It was here already (its role merged).
    Existing,
    /// It was removed here after it was created or given its role there: not created again.
    RemovedHere,
}

/// Merges one manifest agent: creates it when new, unless it was removed here since it was
/// created or given its role over there; else takes its role when that was set later than
/// this side's (ties: the greater text, so both sides converge). A role the manifest does not
/// stamp (an older docdex's file, a factory role) only fills an empty one, and an empty role
/// never replaces one. A role changed on one machine used to stay there.
fn merge_agent(w: &Write<'_>, a: &SyncAgent, report: &mut ProfileImportResponse) -> Result<Merged> {
    let Some(local) = store::agent(w.conn(), &a.id)? else {
        if store::agent_removed_at(w.conn(), &a.id)?.is_some_and(|at| at >= store::agent_stamp(a)) {
            return Ok(Merged::RemovedHere);
        }
        // Its removal may be one the bound dropped: not created from a stamp that old.
        if w.forgotten_through(store::FORGOTTEN_AGENT_REMOVALS)?.is_some_and(|h| store::agent_stamp(a) <= h) {
            return Ok(Merged::RemovedHere);
        }
        let created = w.ensure_agent(&a.id, &a.role, a.created_at.max(1), a.role_updated.max(0))?;
        return Ok(if created { Merged::Created } else { Merged::Existing });
    };
    let stamp = a.role_updated.max(0);
    if a.role.is_empty() || (a.role == local.role && stamp <= local.role_updated) {
        return Ok(Merged::Existing);
    }
    if a.role == local.role {
        // The same role, stamped later over there: take the stamp so both sides agree.
        w.set_role(&a.id, &a.role, stamp)?;
        return Ok(Merged::Existing);
    }
    let newer = stamp > 0 && (stamp, a.role.as_str()) > (local.role_updated, local.role.as_str());
    if local.role.is_empty() || newer {
        w.set_role(&a.id, &a.role, stamp.max(local.role_updated))?;
        report.roles_updated += 1;
    }
    Ok(Merged::Existing)
}

/// Agents the import created, emptied or removed, settled: one that ends up with no
/// preferences is not kept unless `keep` (the agents a manifest with agent removals lists)
/// holds it, so an agent whose role alone was set syncs like any other. With an older manifest
/// (`keep` `None`) an agent the import created that ends up with none is not kept, and one its
/// removals emptied goes too, as before agents synced on their own: an agent removed on one
/// machine (`profile remove --agent`, the undo of a mistyped name) came back, empty, with the
/// next import from the other. The `team` agent is always kept.
fn settle_agents(
    w: &Write<'_>,
    created: &Ids,
    emptied: &Ids,
    keep: Option<&Ids>,
    report: &mut ProfileImportResponse,
) -> Result<()> {
    for id in created.union(emptied) {
        let gone = store::agent(w.conn(), id)?.is_none();
        let empty = gone || store::preferences_of(w.conn(), &[id.as_str()])?.is_empty();
        let dropped = empty && id != TEAM_AGENT && !keep.is_some_and(|k| k.contains(id));
        if dropped && !gone {
            w.delete_agent(id, 0)?;
        }
        match (created.contains(id), dropped) {
            (true, false) => report.agents_added += 1,
            (false, true) => report.agents_removed += 1,
            _ => {}
        }
    }
    Ok(())
}

/// Agent ids: 1 to 64 letters, digits, `-` or `_`.
pub fn valid_agent(id: &str) -> Result<()> {
    if crate::engine::dag::valid_session_id(id.trim()) {
        Ok(())
    } else {
        Err(Error::BadRequest(format!(
            "bad agent id {}: use 1 to 64 letters, digits, '-' or '_' (e.g. mcoda_frontend)",
            crate::error::quoted(id)
        )))
    }
}

/// Longest agent role accepted, in bytes.
pub const MAX_ROLE_BYTES: usize = 512;

/// An agent's role: one line (line breaks become spaces), trimmed, at most
/// [`MAX_ROLE_BYTES`], without other control characters; empty means none. It was stored as
/// given, so an escape sequence reached every terminal `profile list` and the workbench's
/// agent title were drawn on, and a paragraph steered the project map.
pub fn valid_role(text: &str) -> Result<String> {
    let role: Vec<&str> = text.split(['\n', '\r', '\t']).map(str::trim).filter(|s| !s.is_empty()).collect();
    let role = role.join(" ");
    if let Some(c) = role.chars().find(|c| c.is_control()) {
        return Err(Error::BadRequest(format!(
            "an agent's role is plain text; this one holds the control character U+{:04X}: remove it",
            c as u32
        )));
    }
    if role.len() > MAX_ROLE_BYTES {
        return Err(Error::BadRequest(format!(
            "an agent's role holds at most {MAX_ROLE_BYTES} bytes; this one has {} (say what the agent does in a line)",
            role.len()
        )));
    }
    Ok(role)
}

/// A preference's text: one line (its line breaks and tabs become spaces: every surface shows
/// a preference on one line, a list row, a prompt bullet), trimmed, non-empty, at most
/// [`MAX_CONTENT_BYTES`], and free of other control characters (an escape sequence was stored
/// and replayed on every terminal that listed it, and broke the workbench's rows).
pub fn valid_content(text: &str) -> Result<String> {
    let joined: Vec<&str> =
        text.split(['\n', '\r', '\t', '\u{0b}', '\u{0c}']).map(str::trim).filter(|s| !s.is_empty()).collect();
    let t = joined.join(" ");
    if let Some(c) = t.chars().find(|c| c.is_control()) {
        return Err(Error::BadRequest(format!(
            "a preference is plain text; this one holds the control character U+{:04X} (an escape sequence or a stray byte): remove it",
            c as u32
        )));
    }
    if t.is_empty() {
        return Err(Error::BadRequest("empty preference: say what the agent should do".into()));
    }
    if t.len() > MAX_CONTENT_BYTES {
        return Err(Error::BadRequest(format!(
            "a preference holds at most {MAX_CONTENT_BYTES} bytes; this one has {} (split it into several)",
            t.len()
        )));
    }
    Ok(t)
}

/// The rule a preference gets and a note saying why: a given rule is checked (and only
/// constraints may carry one); a constraint without one gets the rule its text states when
/// docdex recognises the phrasing, else stays advice only.
pub fn settle_rule(category: Category, given: Option<&str>, content: &str) -> Result<(Option<String>, String)> {
    match (category, given.map(str::trim).filter(|r| !r.is_empty())) {
        (Category::Constraint, Some(r)) => {
            let rule = rules::Rule::parse(r).map_err(Error::BadRequest)?;
            Ok((Some(rule.canonical()), format!("rule {}", rule.canonical())))
        }
        (other, Some(_)) => Err(Error::BadRequest(format!(
            "only constraints carry rules; this preference is {other} (use --category constraint)"
        ))),
        (Category::Constraint, None) => Ok(match rules::recognise(content) {
            Some(rule) => (Some(rule.canonical()), format!("rule {} recognised from the text", rule.canonical())),
            None => (
                None,
                "advice only: no machine-checkable rule (give one with --rule; see docs/PROFILES.md)".to_string(),
            ),
        }),
        (other, None) => Ok((None, format!("{other}: {}", behaviour(other)))),
    }
}

/// How a category is used, in words.
pub fn behaviour(c: Category) -> &'static str {
    match c {
        Category::Style => "advice in the system prompt",
        Category::Tooling => "advice in the system prompt; steers the project map",
        Category::Constraint => "checked by the pre-commit gatekeeper when it has a rule",
        Category::Workflow => "guides the planning of an answer",
    }
}

/// An add or edit that would repeat a preference the agent already has.
fn repeated(same: &Preference, outcome: &str) -> Error {
    Error::Conflict(format!(
        "{} already has this preference: {} {:?} ({}); {outcome} (`docdex profile edit {}` changes it)",
        same.agent_id,
        same.id,
        same.content,
        same.category,
        &same.id[..8.min(same.id.len())]
    ))
}

/// Words of the error an edit gets when its preference changed after it was read (the
/// workbench keeps its form open on them).
pub const CHANGED_MEANWHILE: &str = "changed after you read it";

/// An edit of a preference that changed after the caller read it.
fn changed_meanwhile(now: &Preference) -> Error {
    Error::Conflict(format!(
        "preference {} {CHANGED_MEANWHILE} (another window, the CLI or a sync); it now reads {:?} ({}); nothing changed: read it again, then edit",
        now.id, now.content, now.category
    ))
}

/// The command that shows preferences with their ids.
const LIST_PREFERENCES: &str = "docdex profile list --agent <agent>";

fn not_found(id: &str) -> Error {
    Error::NotFound(format!(
        "no preference {id} in profile memory; `{LIST_PREFERENCES}` shows an agent's preferences with their ids (`docdex profile list` lists the agents)"
    ))
}

/// The name in `names` that `given` most likely mistypes: the fewest edits to the whole name
/// or to one of its `_`/`-` separated parts (`frontnd` is one edit from the `frontend` of
/// `mcoda_frontend`), at most a third of `given`'s length (at least one); `None` when nothing
/// is that close or `given` is itself a name.
pub fn closest_agent(given: &str, names: &[String]) -> Option<String> {
    let given = given.trim().to_lowercase();
    if given.is_empty() || names.iter().any(|n| n.to_lowercase() == given) {
        return None;
    }
    let max = (given.chars().count() / 3).max(1);
    let distance = |name: &str| {
        let name = name.to_lowercase();
        // A part shorter than three letters (`qa`) is a few edits from any short word.
        let parts: Vec<&str> = name.split(['_', '-']).filter(|p| p.len() >= 3).collect();
        std::iter::once(name.as_str())
            .chain(parts)
            .filter_map(|c| crate::engine::analysis::edit_distance(&given, c, max))
            .min()
    };
    names.iter().filter_map(|n| distance(n).map(|d| (d, n))).min().map(|(_, n)| n.clone())
}

/// A given `--out` path's directory must exist: creating a mistyped `/nonexistent/dir` tree
/// (and exiting 0) hid the typo, and the manifest landed where nobody looks. Only the default
/// sync directory, docdex's own, is created.
fn out_dir_exists(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    Err(Error::BadRequest(format!(
        "the directory {} does not exist: create it first, or give --out a path in an existing directory",
        dir.display()
    )))
}

#[cfg(test)]
mod closest_tests {
    use super::closest_agent;

    #[test]
    fn a_mistyped_agent_finds_the_name_it_misspells_and_nothing_else() {
        let names: Vec<String> =
            ["mcoda_backend", "mcoda_frontend", "mcoda_qa", "team"].iter().map(|s| s.to_string()).collect();
        assert_eq!(closest_agent("frontnd", &names).as_deref(), Some("mcoda_frontend"));
        assert_eq!(closest_agent("mcoda_backedn", &names).as_deref(), Some("mcoda_backend"));
        assert_eq!(closest_agent("Team", &names), None, "an existing name is no typo");
        assert_eq!(closest_agent("data_scientist", &names), None);
        assert_eq!(closest_agent("", &names), None);
    }
}

#[cfg(test)]
mod removal_bound_tests {
    use super::*;

    const A: &str = "0b7f6a4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b";
    const B: &str = "1c8a7b5f-2d3e-4f60-9bac-1d2e3f4a5b6c";
    const C: &str = "2d9b8c60-3e4f-4071-acbd-2e3f4a5b6c7d";

    fn pref(id: &str, at: i64) -> SyncPreference {
        SyncPreference {
            id: id.into(),
            agent_id: "olga".into(),
            content: format!("text of {id}"),
            category: Category::Style,
            rule: None,
            last_updated: at,
            source: Some(PreferenceSource::Manual),
        }
    }

    /// Past the count bound the oldest removals go, and a stale copy of a row they removed is
    /// still refused (by the horizon), while a newer row unknown here is taken.
    #[test]
    fn removals_past_the_bound_go_and_their_stale_copies_stay_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = store::open(&dir.path().join("main.db")).unwrap();
        let w = Write::begin(&mut conn).unwrap();
        let tombs: Vec<SyncTombstone> = [(A, 100), (B, 200), (C, 300)]
            .iter()
            .map(|&(id, at)| SyncTombstone { id: id.into(), agent_id: "olga".into(), deleted_at: at })
            .collect();
        for t in &tombs {
            w.apply_tombstone(t).unwrap();
        }
        w.record_agent_removal("gone", 150).unwrap();
        w.record_agent_removal("later", 250).unwrap();
        assert_eq!(w.bound_removals(1).unwrap(), 3, "A and B, and the agent removal of `gone`");
        assert_eq!(store::tombstones(w.conn()).unwrap().iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), [C]);
        assert_eq!(w.forgotten_through(store::FORGOTTEN_REMOVALS).unwrap(), Some(200));
        assert_eq!(w.forgotten_through(store::FORGOTTEN_AGENT_REMOVALS).unwrap(), Some(150));
        // A second pass under the bound keeps the horizon where it was.
        assert_eq!(w.bound_removals(1).unwrap(), 0);
        assert_eq!(w.forgotten_through(store::FORGOTTEN_REMOVALS).unwrap(), Some(200));
        let fresh = "3eac9d71-4f50-4182-bdce-3f4a5b6c7d8e";
        let prefs = [pref(A, 90), pref(B, 199), pref(C, 250), pref(fresh, 201)];
        let agents = [SyncAgent { id: "gone".into(), role: "Docs".into(), created_at: 140, role_updated: 140 }];
        let rows = Incoming { agents: &agents, prefs: &prefs, tombstones: &[], removals: Some(&[]) };
        let mut report = ProfileImportResponse::default();
        merge(&w, &rows, &mut report).unwrap();
        let refused: Vec<&str> = report.rejected.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(refused, [A, B], "{report:?}");
        assert!(report.rejected[0].reason.contains("removed here"), "{:?}", report.rejected[0]);
        assert_eq!((report.added, report.kept_local), (1, 1), "fresh taken, C under its kept removal: {report:?}");
        assert!(store::preference(w.conn(), fresh).unwrap().is_some());
        assert!(store::agent(w.conn(), "gone").unwrap().is_none(), "its removal went, its horizon holds");
    }
}
