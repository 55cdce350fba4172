//! `docdex context "<task>"`: a bounded, cited context pack for a coding agent (Markdown or
//! JSON), over [`Engine::context`].

use super::output::{visible, Out};
use super::RepoArg;
use crate::engine::protocol::{
    count, render_context_markdown, ContextFormat, ContextPack, ContextRequest, MAX_LEFT_OUT_LISTED,
};
use crate::engine::Engine;

/// `docdex context`.
#[derive(Debug, clap::Args)]
pub struct ContextArgs {
    #[command(flatten)]
    repo: RepoArg,
    /// The task, in plain words.
    #[arg(required = true)]
    task: Vec<String>,
    /// Also include what this branch committed since it forked from REF (uncommitted work is
    /// always included).
    #[arg(long, value_name = "REF")]
    since: Option<String>,
    /// Most tokens the pack may take (cl100k_base, counted over the Markdown).
    #[arg(long, value_name = "TOKENS")]
    budget: Option<u32>,
    /// md: Markdown for a prompt; json: the structured pack.
    #[arg(long, value_enum, default_value_t = FormatArg::Md)]
    format: FormatArg,
    /// The same as `--format json`, as every other command spells it.
    #[arg(long, conflicts_with = "format")]
    json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum FormatArg {
    Md,
    Json,
}

impl ContextArgs {
    /// Whether errors should be printed as JSON.
    pub fn json(&self) -> bool {
        self.json || self.format == FormatArg::Json
    }
}

/// Runs `docdex context`.
pub fn run(engine: &Engine, out: &Out, args: ContextArgs) -> anyhow::Result<()> {
    let format = if args.json() { ContextFormat::Json } else { ContextFormat::Md };
    let req =
        ContextRequest { task: args.task.join(" "), since: args.since, budget: args.budget, format: Some(format) };
    let pack = engine.context(&args.repo.resolve()?, &req)?;
    if format == ContextFormat::Json {
        out.json(&pack)?;
    } else {
        let md = pack.markdown.clone().unwrap_or_else(|| render_context_markdown(&pack));
        // The pack quotes repository files: their control characters are shown, not obeyed.
        let shown: Vec<String> = md.trim_end().lines().map(visible).collect();
        out.line(&shown.join("\n"));
        out.note(&summary(&pack));
    }
    Ok(())
}

/// The line under the pack: what it holds and what it left out, by the budget and as not
/// served. It counted only what the budget left out, so a pack whose notes named a changed
/// file left out said "0 left out".
fn summary(pack: &ContextPack) -> String {
    // What the budget left out costs tokens; the rest (already in the pack, gone, past a
    // file's end) costs none: all were counted as the budget's (tour35 F5).
    let by_budget = pack.omitted.iter().filter(|o| o.tokens > 0).count();
    let mut line = format!(
        "{}, {} of {} tokens, {by_budget} left out by the budget",
        count(pack.snippets.len(), "snippet"),
        pack.tokens,
        pack.budget,
    );
    let other = pack.omitted.len() - by_budget;
    if other > 0 {
        line.push_str(&format!(", {other} omitted for other reasons (see omitted)"));
    }
    if !pack.left_out.is_empty() {
        let more = if pack.left_out.len() >= MAX_LEFT_OUT_LISTED { " or more" } else { "" };
        line.push_str(&format!(", {}{more} not served (see the notes)", count(pack.left_out.len(), "changed file")));
    }
    line + &format!(", {:.1} ms", pack.timing.total_ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::protocol::LeftOutFile;

    #[test]
    fn the_summary_counts_the_changed_files_left_out_as_not_served() {
        let mut pack: ContextPack = serde_json::from_value(serde_json::json!({
            "schema_version": 1, "repo": "/r", "task": "t", "since": null, "base": null, "budget": 8000,
            "tokens": 409, "tokenizer": "cl100k_base", "snippets": [], "changed": [], "omitted": [],
            "notes": [],
            "timing": {"total_ms": 1.0, "search_ms": 0.0, "git_ms": 0.0, "expand_ms": 0.0, "fit_ms": 0.0}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(summary(&pack), "0 snippets, 409 of 8000 tokens, 0 left out by the budget, 1.0 ms");
        let file = LeftOutFile { path: "app/bad.py".into(), reason: "name not UTF-8".into() };
        pack.left_out = vec![file];
        assert_eq!(
            summary(&pack),
            "0 snippets, 409 of 8000 tokens, 0 left out by the budget, 1 changed file not served (see the notes), 1.0 ms"
        );
        // Omitted for the budget (tokens it would cost) and for other reasons (none).
        pack.left_out.clear();
        let omitted = |tokens: u32| crate::engine::protocol::OmittedSnippet {
            citation: "a.py:1-9".into(),
            role: crate::engine::protocol::ContextRole::Hit,
            tokens,
            reason: String::new(),
        };
        pack.omitted = vec![omitted(120), omitted(0), omitted(0)];
        assert_eq!(
            summary(&pack),
            "0 snippets, 409 of 8000 tokens, 1 left out by the budget, 2 omitted for other reasons (see omitted), 1.0 ms"
        );
    }
}
