//! `docdex dag list|view`: the reasoning sessions chat logged for a repository, and one
//! session as text, Graphviz DOT (`| dot -Tsvg > session.svg`) or JSON.

use super::output::{shown, visible, visible_text, Out};
use super::RepoArg;
use crate::engine::protocol::{to_dot, to_text, utc};
use crate::engine::Engine;

/// `docdex dag` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum DagAction {
    /// List the reasoning sessions of a repository, newest first.
    List {
        #[command(flatten)]
        repo: RepoArg,
        /// How many, newest first (default 50).
        #[arg(long, short = 'n', value_parser = super::count_up_to::<10_000>)]
        limit: Option<usize>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one session (its id or a unique prefix of at least 4 characters).
    View {
        #[command(flatten)]
        repo: RepoArg,
        /// The session id (from `docdex dag list` or the end of a chat).
        session: String,
        /// How many nodes, newest first (default 1000); the output says how many older ones
        /// were left out.
        #[arg(long, short = 'n', value_parser = super::count_up_to::<10_000>)]
        limit: Option<usize>,
        /// Only nodes whose id is below this (the `--before` a cut view names), to page back.
        #[arg(long)]
        before: Option<i64>,
        /// text, dot (Graphviz) or json.
        #[arg(long, value_enum, default_value_t = DagFormat::Text)]
        format: DagFormat,
        /// The same as `--format json`, as every other command spells it (it was refused).
        #[arg(long, conflicts_with = "format")]
        json: bool,
    },
}

/// How `dag view` prints a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DagFormat {
    /// One line per node with its parents and payload.
    Text,
    /// A Graphviz digraph.
    Dot,
    /// The session with every node, as JSON.
    Json,
}

impl DagAction {
    /// True when the output is JSON.
    pub fn json(&self) -> bool {
        match self {
            DagAction::List { json, .. } => *json,
            DagAction::View { format, json, .. } => *json || *format == DagFormat::Json,
        }
    }
}

/// Runs `docdex dag ...`.
pub fn run(engine: &Engine, out: &Out, action: DagAction) -> anyhow::Result<()> {
    match action {
        DagAction::List { repo, limit, json } => {
            let list = engine.dag_sessions_up_to(&repo.resolve()?, limit)?;
            if json {
                return out.json(&list);
            }
            if list.sessions.is_empty() {
                out.line(&format!(
                    "no reasoning sessions in {} yet; `docdex chat` logs one per conversation",
                    shown(&list.repo)
                ));
                return Ok(());
            }
            out.line(&out.paint(
                "1",
                &format!("{:<10} {:<24} {:>5} {:>5}  {:<16} title", "session", "created", "turns", "nodes", "agent"),
            ));
            for s in &list.sessions {
                out.line(&format!(
                    "{:<10} {:<24} {:>5} {:>5}  {:<16} {}",
                    short_id(&s.id),
                    utc(s.created_at_ms),
                    s.turns,
                    s.nodes,
                    visible(s.agent_id.as_deref().unwrap_or("-")),
                    visible(&s.title)
                ));
            }
            let left = list.total.saturating_sub(list.sessions.len() as u64);
            if left > 0 {
                let all = list.total;
                out.line(&out.paint("2", &format!("... {left} older ({all} in all; `-n N` shows up to 10000)")));
            }
        }
        DagAction::View { repo, session, limit, before, format, json } => {
            let s = engine.dag_session_page(&repo.resolve()?, &session, limit, before)?;
            match if json { DagFormat::Json } else { format } {
                DagFormat::Json => out.json(&s)?,
                // A session holds questions, answers and pages: shown, not obeyed.
                DagFormat::Dot => {
                    out.line(&visible_text(to_dot(&s).trim_end()));
                    if let Some(before) = s.next_before {
                        // On stderr: stdout stays one digraph for `dot`.
                        out.note(&format!(
                            "{} older nodes not drawn; `--before {before}` shows the ones before, `-n N` up to 10000",
                            s.older_nodes
                        ));
                    }
                }
                DagFormat::Text => out.line(&visible_text(to_text(&s).trim_end())),
            }
        }
    }
    Ok(())
}

/// A UUID's first 8 characters (a prefix `dag view` takes); an id a client chose
/// (`docdex.session_id`, up to 64 characters) in full: cut to 8, `review-10` and `review-11`
/// were both listed as `review-1`, which `dag view` then called ambiguous.
fn short_id(id: &str) -> &str {
    match uuid::Uuid::try_parse(id) {
        Ok(_) => id.get(..8).unwrap_or(id),
        Err(_) => id,
    }
}
