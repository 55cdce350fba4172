//! `docdex memory store | recall | list | delete` (`forget`): the repository's memory.

use super::output::{count, shown, visible, Out};
use super::RepoArg;
use crate::engine::protocol::{
    MemoryItem, MemoryListResponse, MemoryRecallRequest, MemoryStoreRequest, MAX_MEMORY_LIST,
};
use crate::engine::Engine;
use crate::error::Error;
use clap::Subcommand;

/// `docdex memory` subcommands.
#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// Remember a note about this repository (also `save`, as the MCP tool names it).
    #[command(visible_alias = "save")]
    Store {
        #[command(flatten)]
        repo: RepoArg,
        /// What to remember (read from stdin when left out and stdin is a pipe or file:
        /// `git log -1 --format=%B | docdex memory store`).
        content: Vec<String>,
        /// A JSON object stored with it, e.g. '{"source":"review"}'.
        #[arg(long)]
        metadata: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Recall the memories most related to a query (by meaning; by words without an embedder).
    Recall {
        #[command(flatten)]
        repo: RepoArg,
        /// What to recall.
        query: Vec<String>,
        /// How many.
        #[arg(long, short = 'n', value_parser = super::count_up_to::<100>)]
        limit: Option<usize>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the repository's memories, newest first (a page at a time).
    List {
        #[command(flatten)]
        repo: RepoArg,
        /// How many (default 50, at most 200; a page also stops at about 1 MiB of content).
        #[arg(long, short = 'n', value_parser = super::count_up_to::<MAX_MEMORY_LIST>)]
        limit: Option<usize>,
        /// List the memories older than this one (the id the previous page ends with, or its
        /// first 6+ characters).
        #[arg(long)]
        after: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Forget a memory by id (also `forget`).
    #[command(visible_alias = "forget")]
    Delete {
        #[command(flatten)]
        repo: RepoArg,
        /// The memory's id (from `list` or `recall`).
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

impl MemoryCommand {
    /// Whether `--json` was given.
    pub fn json(&self) -> bool {
        match self {
            MemoryCommand::Store { json, .. }
            | MemoryCommand::Recall { json, .. }
            | MemoryCommand::List { json, .. }
            | MemoryCommand::Delete { json, .. } => *json,
        }
    }
}

fn print_item(out: &Out, m: &MemoryItem, score: Option<f32>) {
    let score = score.map(|s| format!("{s:.3}  ")).unwrap_or_default();
    let meta = match &m.metadata {
        serde_json::Value::Object(o) if !o.is_empty() => format!("  {}", m.metadata),
        _ => String::new(),
    };
    out.line(&format!("{score}{}{}", out.paint("2", &m.id), out.paint("2", &meta)));
    for line in m.content.lines() {
        out.line(&format!("    {}", visible(line)));
    }
}

/// Runs a memory subcommand.
pub fn run(engine: &Engine, out: &Out, cmd: MemoryCommand) -> anyhow::Result<()> {
    match cmd {
        MemoryCommand::Store { repo, content, metadata, json } => {
            let metadata = metadata
                .map(|m| {
                    serde_json::from_str::<serde_json::Value>(&m)
                        .map_err(|e| Error::BadRequest(format!("--metadata is not JSON ({e}): {m}")))
                })
                .transpose()?;
            let content = if content.is_empty() { piped_stdin()? } else { content.join(" ") };
            let req = MemoryStoreRequest { content, metadata };
            let resp = engine.memory_store(&repo.resolve()?, &req)?;
            if json {
                out.json(&resp)?;
            } else {
                if let Some(n) = &resp.notice {
                    out.note(&format!("note: {}", visible(n)));
                }
                out.line(&format!("remembered {} in {}", resp.memory.id, shown(&resp.repo)));
            }
        }
        MemoryCommand::Recall { repo, query, limit, json } => {
            let req = MemoryRecallRequest { query: query.join(" "), limit };
            let resp = engine.memory_recall(&repo.resolve()?, &req)?;
            if json {
                out.json(&resp)?;
            } else {
                if let Some(n) = &resp.notice {
                    out.note(&format!("note: {}", visible(n)));
                }
                if resp.results.is_empty() {
                    out.line("no memories match");
                }
                for h in &resp.results {
                    print_item(out, &h.memory, Some(h.score));
                }
            }
        }
        MemoryCommand::List { repo, limit, after, json } => {
            let resp = engine.memory_list_page(&repo.resolve()?, limit, after.as_deref())?;
            if json {
                out.json(&resp)?;
            } else {
                out.line(&out.paint("2", &list_heading(&resp, after.is_some())));
                for m in &resp.memories {
                    print_item(out, m, None);
                }
            }
        }
        MemoryCommand::Delete { repo, id, json } => {
            let resp = engine.memory_delete(&repo.resolve()?, &id)?;
            if json {
                out.json(&resp)?;
            } else {
                out.line(&format!("forgot {} in {}", resp.id, shown(&resp.repo)));
            }
        }
    }
    Ok(())
}

/// `N memories in REPO`, and when the page left some out, how many are shown and how to see
/// more: the list used to stop at 50 with nothing saying there were more.
fn list_heading(resp: &MemoryListResponse, paged: bool) -> String {
    let all = format!("{} in {}", count(resp.total, "memory"), resp.repo.display());
    let shown = resp.memories.len();
    let Some(next) = &resp.next_after else {
        return if paged { format!("{all}; the oldest {shown} shown") } else { all };
    };
    let more = if !paged && resp.total <= MAX_MEMORY_LIST as u64 {
        format!("`-n {}` lists them all", resp.total)
    } else {
        format!("`--after {next}` lists the older ones")
    };
    let which = if paged { "" } else { "the newest " };
    format!("{all}; {which}{shown} shown ({more})")
}

/// Everything on stdin when it is not a terminal (a pipe or a file), else nothing; at most
/// 1 MiB, which the engine's own limit then judges.
fn piped_stdin() -> anyhow::Result<String> {
    use std::io::{IsTerminal, Read};
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Ok(String::new());
    }
    let mut text = String::new();
    stdin
        .lock()
        .take(1 << 20)
        .read_to_string(&mut text)
        .map_err(|e| Error::BadRequest(format!("reading stdin: {e}")))?;
    Ok(text)
}
