//! The Markdown form of a pack: what `docdex context` prints, what `docdex_context` returns by
//! default, and exactly the text whose tokens the budget counts.

use super::types::{ChangeState, ContextPack, ContextSnippet};
use crate::engine::waterfall::context::fence;

/// Changed files listed in the heading at most.
const MAX_LISTED_CHANGES: usize = 50;
/// Budget tokens per changed file listed: the list is at most about a fifth of the budget
/// (a line costs some 15 to 20 tokens), so a long list never crowds out the snippets.
const TOKENS_PER_LISTED_CHANGE: u32 = 100;

/// The pack's heading: the task, the repository, the base and the changed files.
pub fn header(pack: &ContextPack) -> String {
    let task = cut_task(&pack.task, pack.budget as usize / 4);
    let mut s = format!("# Context for: {task}\n\nRepository `{}`", pack.repo.display());
    let none = if pack.changed.is_empty() { "no " } else { "" };
    match (&pack.since, &pack.base) {
        (Some(since), Some(base)) => s.push_str(&format!("; {none}changes since {since} (merge base {})", short(base))),
        (None, Some(base)) => s.push_str(&format!("; {none}uncommitted changes on {}", short(base))),
        _ => {}
    }
    s.push_str(&format!("; budget {} tokens ({}).\n", pack.budget, pack.tokenizer));
    if !pack.changed.is_empty() {
        s.push_str("\nChanged files:\n");
        let listed = ((pack.budget / TOKENS_PER_LISTED_CHANGE) as usize).clamp(2, MAX_LISTED_CHANGES);
        for f in pack.changed.iter().take(listed) {
            let states: Vec<&str> = f.states.iter().map(|st| state_name(*st)).collect();
            let change = match &f.old_path {
                Some(old) => format!("{} from {old}", f.change),
                None => f.change.clone(),
            };
            s.push_str(&format!("- {} ({change}: {})\n", f.path, states.join(", ")));
        }
        if pack.changed.len() > listed {
            s.push_str(&format!("- ... {} more\n", pack.changed.len() - listed));
        }
    }
    s
}

/// Bytes of the task a note quotes at most: the heading already shows it.
pub const NOTE_TASK_BYTES: usize = 60;

/// The task cut to at most `max_bytes` bytes (at a character boundary, `…` after a cut).
/// A cl100k_base token covers at least one byte, so the cut costs at most `max_bytes` tokens
/// (and the `…` one or two more) in any script: the heading quotes a quarter of the budget
/// in bytes, a note [`NOTE_TASK_BYTES`], and a long task never pushes the pack over budget
/// (10,000 characters of CJK cost some 8,000 tokens).
pub fn cut_task(task: &str, max_bytes: usize) -> String {
    if task.len() <= max_bytes {
        return task.to_string();
    }
    let mut cut = max_bytes;
    while !task.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &task[..cut])
}

fn state_name(s: ChangeState) -> &'static str {
    match s {
        ChangeState::Committed => "committed",
        ChangeState::Staged => "staged",
        ChangeState::Dirty => "dirty",
        ChangeState::Untracked => "untracked",
    }
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

/// One snippet: `## path:a-b (role)`, the reason, the lines fenced with their language.
pub fn block(s: &ContextSnippet) -> String {
    let f = fence(&s.text);
    let lang = if s.lang == "text" { "" } else { s.lang.as_str() };
    let cut = if s.trimmed { ", cut to fit" } else { "" };
    format!(
        "\n## {}:{}-{} ({}{cut})\n{}\n{f}{lang}\n{}\n{f}\n",
        s.path,
        s.line_start,
        s.line_end,
        s.role.name(),
        s.reason,
        s.text.trim_end_matches('\n')
    )
}

/// Notes shown in the Markdown at most (the JSON has them all).
const MAX_SHOWN_NOTES: usize = 8;

/// The whole pack as Markdown: heading, notes (what was left out or masked, and why), snippets.
pub fn render_markdown(pack: &ContextPack) -> String {
    let mut s = preamble(pack);
    for snip in &pack.snippets {
        s.push_str(&block(snip));
    }
    s
}

/// The heading and the notes: what comes before the snippets.
pub fn preamble(pack: &ContextPack) -> String {
    let mut s = header(pack);
    if !pack.notes.is_empty() {
        s.push_str("\nNotes:\n");
        for n in pack.notes.iter().take(MAX_SHOWN_NOTES) {
            s.push_str(&format!("- {n}\n"));
        }
        if pack.notes.len() > MAX_SHOWN_NOTES {
            s.push_str(&format!("- ... {} more\n", pack.notes.len() - MAX_SHOWN_NOTES));
        }
    }
    s
}
