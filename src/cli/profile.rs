//! `docdex profile list | add | role | search | edit | remove | export | import | reembed | learn`:
//! profile (preference) memory, one engine call per command.

use super::output::{count, visible, visible_text, Out};
use crate::engine::protocol::{
    now_ms, Category, DagTarget, EvolutionAction, EvolutionOutcome, Preference, PreferenceSource, ProfileAddRequest,
    ProfileEditRequest, ProfileListRequest, ProfileRemoveRequest, ProfileRoleRequest, ProfileSearchRequest,
    ProfileWriteResponse, SavePreferenceRequest,
};
use crate::engine::Engine;
use crate::error::Error;
use clap::Subcommand;
use std::path::PathBuf;

/// `docdex profile`.
#[derive(Debug, clap::Args)]
pub struct ProfileArgs {
    /// Embed every preference again with the configured model first (after changing
    /// `[memory.profile] embedding_model`); alone, it only re-embeds.
    #[arg(long)]
    reembed: bool,
    #[command(subcommand)]
    command: Option<ProfileCommand>,
}

impl ProfileArgs {
    /// Whether `--json` was given.
    pub fn json(&self) -> bool {
        match &self.command {
            Some(
                ProfileCommand::List { json, .. }
                | ProfileCommand::Add { json, .. }
                | ProfileCommand::Role { json, .. }
                | ProfileCommand::Search { json, .. }
                | ProfileCommand::Edit { json, .. }
                | ProfileCommand::Remove { json, .. }
                | ProfileCommand::Export { json, .. }
                | ProfileCommand::Import { json, .. }
                | ProfileCommand::Reembed { json }
                | ProfileCommand::Learn { json, .. },
            ) => *json,
            None => false,
        }
    }
}

fn category(s: &str) -> Result<Category, String> {
    Category::parse(s)
}

/// The profile subcommands.
#[derive(Debug, Subcommand)]
pub enum ProfileCommand {
    /// The agents with their preference counts; with --agent, that agent's preferences.
    List {
        /// Also list this agent's preferences.
        #[arg(long)]
        agent: Option<String>,
        /// The agent's preferences to list (default 50, at most 200).
        #[arg(long, requires = "agent", value_parser = clap::value_parser!(u64).range(1..))]
        limit: Option<u64>,
        /// List the preferences after this one (the id the previous page ends with).
        #[arg(long, requires = "agent")]
        after: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Teach an agent a preference directly (no model involved); creates the agent when new.
    Add {
        /// The agent (default `[memory.profile] default_agent`).
        #[arg(long)]
        agent: Option<String>,
        /// style, tooling, constraint or workflow (read from the words when left out: "never",
        /// "avoid", "must" make a constraint; "before", "commit" a workflow; a tool's name tooling).
        #[arg(long, short = 'c', value_parser = category)]
        category: Option<Category>,
        /// A machine-checkable rule for a constraint (e.g. "forbid-import moment"); common
        /// phrasings are recognised without it.
        #[arg(long)]
        rule: Option<String>,
        /// The agent's role ("Frontend developer"): a new agent's, or a new role for an existing one.
        #[arg(long)]
        role: Option<String>,
        /// The preference.
        text: Vec<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Set an agent's role alone (it steers the project map); creates the agent when new.
    /// Syncs as `add --role` does: the role set last wins on every machine.
    Role {
        /// The agent.
        agent: String,
        /// The role, one line ("Frontend developer").
        #[arg(required = true)]
        role: Vec<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// What an agent remembers about a topic (with the team's preferences), closest first.
    Search {
        /// The agent (default `[memory.profile] default_agent`).
        #[arg(long)]
        agent: Option<String>,
        /// The topic.
        query: Vec<String>,
        /// How many.
        #[arg(long, short = 'n', value_parser = super::count_up_to::<100>)]
        limit: Option<usize>,
        /// Leave out the shared `team` preferences.
        #[arg(long)]
        without_team: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Change a preference's text, category or rule (without flags: opens $EDITOR on the text).
    Edit {
        /// The preference's id.
        id: String,
        /// New text, as `profile add` takes it (or --content).
        #[arg(conflicts_with = "content")]
        text: Vec<String>,
        /// New text.
        #[arg(long)]
        content: Option<String>,
        /// New category.
        #[arg(long, value_parser = category)]
        category: Option<Category>,
        /// New rule.
        #[arg(long, conflicts_with = "no_rule")]
        rule: Option<String>,
        /// Remove the rule (the constraint becomes advice only).
        #[arg(long)]
        no_rule: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Forget a preference (or, with --agent, an agent and all its preferences).
    Remove {
        /// The preference's id (or the agent's, with --agent).
        id: String,
        /// ID names an agent: remove it with all its preferences.
        #[arg(long)]
        agent: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write every agent, preference and removal to a sync manifest (JSON).
    Export {
        /// The file (default state/profiles/sync/profile_sync.json).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Merge a sync manifest: per preference, the newer one wins; removals travel too.
    Import {
        /// The manifest (from `docdex profile export`).
        file: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Embed every preference again with the configured embedding model.
    Reembed {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run a statement through the evolution pipeline: recall, the model's decision (ADD,
    /// UPDATE or IGNORE; harmful or contradicting preferences are refused), the write.
    Learn {
        /// The agent (default `[memory.profile] default_agent`).
        #[arg(long)]
        agent: Option<String>,
        /// The category, when you know it (the model decides otherwise).
        #[arg(long, value_parser = category)]
        category: Option<Category>,
        /// A rule for a constraint.
        #[arg(long)]
        rule: Option<String>,
        /// Log the decision in this repository's reasoning DAG.
        #[arg(long, short = 'r')]
        repo: Option<PathBuf>,
        /// What was said ("we are switching to vitest").
        text: Vec<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `docdex map`.
#[derive(Debug, clap::Args)]
pub struct MapArgs {
    #[command(flatten)]
    repo: super::RepoArg,
    /// The agent whose role and tooling steer the map (default `[memory.profile] default_agent`).
    #[arg(long)]
    agent: Option<String>,
    /// Build it again even when a cached map exists.
    #[arg(long)]
    refresh: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Prints the project map.
pub fn run_map(engine: &Engine, out: &Out, args: MapArgs) -> anyhow::Result<()> {
    let req = crate::engine::protocol::ProjectMapRequest { agent_id: args.agent, refresh: args.refresh };
    let map = engine.project_map(&args.repo.resolve()?, &req)?;
    if args.json {
        return out.json(&map);
    }
    out.block(&visible_text(&map.tree));
    // The engine's notices (an agent not in profile memory, a spotlight that found nothing),
    // the same `--json` and `GET /v1/map` carry.
    for n in &map.notices {
        out.note(&format!("note: {}", visible(n)));
    }
    let who = match map.agent_id.as_deref() {
        Some(a) => visible(a),
        None => {
            "no agent, so the project's own files and the modules most of it imports (--agent ID for an agent's view)"
                .to_string()
        }
    };
    out.note(&format!(
        "{who}: {} shown, {} hidden, depth {}, {} tokens{}{}",
        count(map.paths.len(), "path"),
        map.hidden_files,
        map.depth,
        map.tokens,
        if map.cached { " (cached)" } else { "" },
        if map.keywords.is_empty() {
            String::new()
        } else {
            format!("; spotlight on {}", visible(&map.keywords.join(", ")))
        }
    ));
    Ok(())
}

fn agent_or_default(engine: &Engine, agent: Option<String>) -> anyhow::Result<String> {
    engine.resolve_agent(agent.as_deref()).ok_or_else(|| {
        Error::BadRequest(
            "no agent: pass --agent ID (or set [memory.profile] default_agent); `docdex profile list` shows them"
                .into(),
        )
        .into()
    })
}

/// Runs a profile command.
pub fn run(engine: &Engine, out: &Out, args: ProfileArgs) -> anyhow::Result<()> {
    if args.reembed {
        let r = engine.profile_reembed()?;
        if args.command.is_none() && args.json() {
            return out.json(&r);
        }
        out.note(&format!("re-embedded {} with {} ({} dimensions)", count(r.embedded, "preference"), r.model, r.dim));
    }
    let Some(command) = args.command else {
        if !args.reembed {
            out.line(
                "docdex profile: list | add | role | search | edit | remove | export | import | reembed | learn (see --help)",
            );
        }
        return Ok(());
    };
    match command {
        ProfileCommand::List { agent, limit, after, json } => {
            let limit = limit.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
            profile_list(engine, out, ProfileListRequest { agent_id: agent, limit, after }, json)
        }
        ProfileCommand::Add { agent, category, rule, role, text, json } => {
            profile_add(engine, out, agent, category, rule, role, text, json)
        }
        ProfileCommand::Role { agent, role, json } => profile_role(engine, out, agent, role, json),
        ProfileCommand::Search { agent, query, limit, without_team, json } => {
            profile_search(engine, out, agent, query, limit, without_team, json)
        }
        ProfileCommand::Edit { id, text, content, category, rule, no_rule, json } => {
            let content = content.or_else(|| (!text.is_empty()).then(|| text.join(" ")));
            profile_edit(engine, out, id, content, category, rule, no_rule, json)
        }
        ProfileCommand::Remove { id, agent, json } => profile_remove(engine, out, id, agent, json),
        ProfileCommand::Export { out: path, json } => profile_export(engine, out, path, json),
        ProfileCommand::Import { file, json } => profile_import(engine, out, file, json),
        ProfileCommand::Reembed { json } => profile_reembed(engine, out, json),
        ProfileCommand::Learn { agent, category, rule, repo, text, json } => {
            profile_learn(engine, out, agent, category, rule, repo, text, json)
        }
    }
}

/// `profile list`: agents, or one agent's preferences.
fn profile_list(engine: &Engine, out: &Out, req: ProfileListRequest, json: bool) -> anyhow::Result<()> {
    let resp = engine.profile_list(&req)?;
    if json {
        return out.json(&resp);
    }
    if req.agent_id.is_none() {
        out.line(&out.paint("2", &format!("{} in {}", count(resp.agents.len(), "agent"), resp.db.display())));
        for a in &resp.agents {
            let counts: Vec<String> =
                Category::ALL.iter().filter_map(|c| a.by_category.get(c).map(|n| format!("{n} {c}"))).collect();
            out.line(&format!(
                "{:<24} {:>3}  {}",
                out.paint("1", &a.id),
                a.preference_count,
                out.paint("2", &counts.join(", "))
            ));
            if !a.role.is_empty() {
                out.line(&format!("    {}", visible(&a.role)));
            }
        }
    } else {
        print_preferences(out, &resp.preferences);
        if let Some(n) = &resp.note {
            out.note(&format!("note: {n}"));
        }
    }
    Ok(())
}

/// `profile add`: adds a preference (and sets the agent's role when given).
#[allow(clippy::too_many_arguments)]
fn profile_add(
    engine: &Engine,
    out: &Out,
    agent: Option<String>,
    category: Option<Category>,
    rule: Option<String>,
    role: Option<String>,
    text: Vec<String>,
    json: bool,
) -> anyhow::Result<()> {
    let req =
        ProfileAddRequest { agent_id: agent_or_default(engine, agent)?, category, content: text.join(" "), rule, role };
    let resp = engine.profile_add(&req)?;
    if json {
        return out.json(&resp);
    }
    if let Some(n) = &resp.agent_note {
        out.note(&format!("note: {n}"));
    }
    print_written(out, "added", &resp);
    Ok(())
}

/// `profile role`: sets an agent's role alone.
fn profile_role(engine: &Engine, out: &Out, agent: String, role: Vec<String>, json: bool) -> anyhow::Result<()> {
    let resp = engine.profile_set_role(&ProfileRoleRequest { agent_id: agent, role: role.join(" ") })?;
    if json {
        return out.json(&resp);
    }
    if let Some(n) = &resp.agent_note {
        out.note(&format!("note: {n}"));
    }
    let (agent, role) = (visible(&resp.agent_id), visible(&resp.role));
    match (&resp.previous_role, resp.changed) {
        (_, false) => out.line(&format!("{agent} already has the role {role:?}; nothing changed")),
        (Some(old), true) => out.line(&format!("role of {agent}: {role:?} (was {:?})", visible(old))),
        (None, true) => out.line(&format!("role of {agent}: {role:?}")),
    }
    Ok(())
}

/// `profile search`: preferences by meaning (by words without an embedder).
fn profile_search(
    engine: &Engine,
    out: &Out,
    agent: Option<String>,
    query: Vec<String>,
    limit: Option<usize>,
    without_team: bool,
    json: bool,
) -> anyhow::Result<()> {
    let req = ProfileSearchRequest {
        agent_id: agent_or_default(engine, agent)?,
        query: query.join(" "),
        limit,
        without_team,
    };
    let resp = engine.profile_search(&req)?;
    if json {
        return out.json(&resp);
    }
    if let Some(n) = &resp.notice {
        out.note(&format!("note: {}", visible(n)));
    }
    if resp.results.is_empty() {
        out.line("no preferences match");
    }
    for h in &resp.results {
        let p = &h.preference;
        out.line(&format!(
            "{:.3}  {}  {}",
            h.similarity_score,
            out.paint("2", &format!("[{}] {}", p.category, p.agent_id)),
            visible(&p.content)
        ));
        out.line(&out.paint("2", &format!("       {} · {}", p.id, provenance(p))));
    }
    Ok(())
}

/// `profile edit`: edits a preference; with no change given, its text in `$EDITOR`.
#[allow(clippy::too_many_arguments)]
fn profile_edit(
    engine: &Engine,
    out: &Out,
    id: String,
    content: Option<String>,
    category: Option<Category>,
    rule: Option<String>,
    no_rule: bool,
    json: bool,
) -> anyhow::Result<()> {
    let mut req = ProfileEditRequest {
        id,
        content,
        category,
        rule: if no_rule { Some(String::new()) } else { rule },
        expected_last_updated: None,
    };
    if req.content.is_none() && req.category.is_none() && req.rule.is_none() {
        let p = engine.profile_preference(&req.id)?;
        req.content = Some(edit_in_editor(engine, &p.content)?);
        // A change made elsewhere while the editor was open is not overwritten.
        req.expected_last_updated = Some(p.last_updated);
        req.id = p.id;
    }
    let resp = match engine.profile_edit(&req) {
        // Text written in $EDITOR is not lost with a refusal: the message carries it.
        Err(Error::Conflict(m)) if req.expected_last_updated.is_some() => {
            let text = req.content.clone().unwrap_or_default();
            return Err(Error::Conflict(format!("{m}; the text you wrote: {text:?}")).into());
        }
        r => r?,
    };
    if json {
        return out.json(&resp);
    }
    print_written(out, "updated", &resp);
    Ok(())
}

/// `profile remove`: removes a preference, or an agent with its preferences.
fn profile_remove(engine: &Engine, out: &Out, id: String, agent: bool, json: bool) -> anyhow::Result<()> {
    let resp = engine.profile_remove(&ProfileRemoveRequest { id, agent, expected_last_updated: None })?;
    if json {
        return out.json(&resp);
    }
    if agent {
        out.line(&format!("removed agent {} and its {}", resp.agent_id, count(resp.removed, "preference")));
    } else {
        out.line(&format!("removed {} from {}", resp.id, resp.agent_id));
    }
    Ok(())
}

/// `profile export`: writes the profile manifest for another machine.
fn profile_export(engine: &Engine, out: &Out, path: Option<PathBuf>, json: bool) -> anyhow::Result<()> {
    let resp = engine.profile_export_to(path.as_deref())?;
    if json {
        return out.json(&resp);
    }
    out.line(&format!(
        "exported {}, {} and {} to {}",
        count(resp.agents, "agent"),
        count(resp.preferences, "preference"),
        count(resp.tombstones, "removal"),
        resp.path.display()
    ));
    Ok(())
}

/// `profile import`: merges a manifest (last write wins) and says what changed.
fn profile_import(engine: &Engine, out: &Out, file: PathBuf, json: bool) -> anyhow::Result<()> {
    let resp = engine.profile_import(&file)?;
    if json {
        return out.json(&resp);
    }
    out.line(&format!(
        "merged {}: {} added, {} updated, {} kept (local as new or newer), {} removed, {} new agents",
        resp.source.display(),
        resp.added,
        resp.updated,
        resp.kept_local,
        resp.deleted,
        resp.agents_added
    ));
    if resp.merged > 0 {
        // An agent holds a text once, whichever machine wrote it first.
        out.line(&format!(
            "  {} merged: the agent held the same text already (letter case, spaces and a closing full stop aside); the oldest copy kept",
            count(resp.merged, "repeat")
        ));
    }
    if resp.agents_removed > 0 {
        // Removed over there (`profile remove --agent`, which now travels), or emptied here.
        out.line(&format!(
            "  {} removed: removed over there, or left with no preferences by those removals",
            count(resp.agents_removed, "agent")
        ));
    }
    if resp.roles_updated > 0 {
        out.line(&format!(
            "  {} took the manifest's role (set there later than here)",
            count(resp.roles_updated, "agent")
        ));
    }
    for r in &resp.rejected {
        out.line(&format!("  rejected {}: {}", visible(&r.id), visible(&r.reason)));
    }
    let what = match resp.ahead_of_clock {
        0 => None,
        1 => Some("1 preference is".to_string()),
        n => Some(format!("{n} preferences are")),
    };
    if let Some(what) = what {
        out.note(&format!(
            "note: {what} stamped ahead of this machine's clock (does the exporting machine's clock run ahead?): until then they win every merge; `profile list` shows them as ahead"
        ));
    }
    Ok(())
}

/// `profile reembed`: re-embeds every preference with the configured model.
fn profile_reembed(engine: &Engine, out: &Out, json: bool) -> anyhow::Result<()> {
    let r = engine.profile_reembed()?;
    if json {
        return out.json(&r);
    }
    out.line(&format!("re-embedded {} with {} ({} dimensions)", count(r.embedded, "preference"), r.model, r.dim));
    Ok(())
}

/// `profile learn`: runs the evolution pipeline on a stated preference.
#[allow(clippy::too_many_arguments)]
fn profile_learn(
    engine: &Engine,
    out: &Out,
    agent: Option<String>,
    category: Option<Category>,
    rule: Option<String>,
    repo: Option<PathBuf>,
    text: Vec<String>,
    json: bool,
) -> anyhow::Result<()> {
    let req = SavePreferenceRequest {
        agent_id: agent_or_default(engine, agent)?,
        preference: text.join(" "),
        category,
        rule,
    };
    let dag = match repo {
        Some(p) => Some(DagTarget { repo: engine.resolve_repo(&p)?, session: None, parent: None }),
        None => None,
    };
    let outcome = engine.profile_learn(&req, dag)?;
    if json {
        return out.json(&outcome);
    }
    print_outcome(out, &outcome);
    Ok(())
}

fn print_written(out: &Out, verb: &str, r: &ProfileWriteResponse) {
    if let Some(n) = &r.notice {
        out.note(&format!("note: {}", visible(n)));
    }
    let p = &r.preference;
    let new = if r.created_agent { " (new agent)" } else { "" };
    // The note of a non-constraint starts with its category ("style: advice in ..."), which
    // this line already names ("as style: style: advice ...").
    let note = r.rule_note.strip_prefix(&format!("{}: ", p.category)).unwrap_or(&r.rule_note);
    out.line(&format!("{verb} {} to {}{new} as {}: {}", p.id, p.agent_id, p.category, visible(note)));
    if let Some(old) = &r.previous_role {
        out.note(&format!("note: the role of {} was \"{}\"; it is now the one given", p.agent_id, visible(old)));
    }
    if r.category_note.is_some() {
        out.note(&format!(
            "note: {} read from the words; --category sets it (`docdex profile edit {} --category C` changes it)",
            p.category,
            p.id.get(..8).unwrap_or(&p.id)
        ));
    }
}

/// Prints an evolution outcome.
fn print_outcome(out: &Out, o: &EvolutionOutcome) {
    for n in &o.notices {
        out.note(&format!("note: {}", visible(n)));
    }
    let what = match (o.action, &o.preference) {
        (EvolutionAction::Add, Some(p)) => format!("ADD {} [{}] {}", p.id, p.category, visible(&p.content)),
        (EvolutionAction::Update, Some(p)) => {
            format!("UPDATE {}: {:?} -> {:?}", p.id, o.previous_content.clone().unwrap_or_default(), p.content)
        }
        (EvolutionAction::Refuse, _) => "REFUSE: nothing written".to_string(),
        _ => "IGNORE: nothing written".to_string(),
    };
    out.line(&what);
    out.line(
        &out.paint("2", &format!("  {} (decided by {:?}, {} model calls)", o.reasoning, o.decided_by, o.attempts)),
    );
}

fn print_preferences(out: &Out, prefs: &[Preference]) {
    let mut last: Option<Category> = None;
    for p in prefs {
        if last != Some(p.category) {
            out.line(&out.paint("1", p.category.name()));
            last = Some(p.category);
        }
        out.line(&format!("  {}", visible_text(&p.content)));
        let rule = match (&p.rule, p.category) {
            (Some(r), _) => format!(" · rule {}", visible(&r.to_string())),
            (None, Category::Constraint) => " · advice only".to_string(),
            _ => String::new(),
        };
        out.line(&out.paint("2", &format!("    {} · {}{rule}", p.id, provenance(p))));
    }
}

/// `manual · 3 d ago`; a starter preference (`seed`, never edited: an edit makes it `manual`)
/// reads `built-in`, its time being the defaults' fixed date (`seed · 47 w ago` on a home made a
/// minute ago, tour18 F12). `--json` keeps the source and the time as stored.
fn provenance(p: &Preference) -> String {
    match p.source {
        PreferenceSource::Seed => "built-in".into(),
        _ => format!("{} · {}", p.source.name(), age(p.last_updated)),
    }
}

/// "3 d ago", "just now"; "1 d ahead" for a time after this clock's (a row from a machine
/// whose clock runs ahead, which used to read "just now").
fn age(ms: i64) -> String {
    let now = now_ms();
    let then = ms.max(0) as u64;
    if then > now + 60_000 {
        return crate::engine::protocol::ago(then, now).replace(" ago", " ahead of this clock");
    }
    crate::engine::protocol::ago(now, then)
}

/// Opens `$VISUAL`/`$EDITOR` on a preference's text; returns the edited text.
fn edit_in_editor(engine: &Engine, content: &str) -> anyhow::Result<String> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() {
        return Err(Error::BadRequest(
            "without flags, profile edit opens $EDITOR, which needs a terminal; pass the change instead: the new text (`profile edit ID \"new text\"` or --content TEXT), --category CATEGORY, --rule RULE or --no-rule".into(),
        )
        .into());
    }
    let file = engine.profile_dir().join(format!("edit-{}.txt", std::process::id()));
    std::fs::write(&file, format!("{content}\n"))?;
    let editor = std::env::var("VISUAL").or_else(|_| std::env::var("EDITOR")).unwrap_or_else(|_| "vi".into());
    let status =
        std::process::Command::new("sh").arg("-c").arg(format!("{editor} \"$1\"")).arg("sh").arg(&file).status();
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    let _ = std::fs::remove_file(&file);
    match status {
        Ok(s) if s.success() => Ok(text.trim().to_string()),
        _ => Err(Error::BadRequest(format!("the editor ({editor}) failed; nothing changed")).into()),
    }
}
