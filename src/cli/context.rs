//! `docdex context "<task>"`: a bounded, cited context pack for a coding agent (Markdown or
//! JSON), over [`Engine::context`].

use super::output::{visible, Out};
use super::RepoArg;
use crate::engine::protocol::{render_context_markdown, ContextFormat, ContextRequest};
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
        out.note(&format!(
            "{}, {} of {} tokens, {} left out, {:.1} ms",
            crate::engine::protocol::count(pack.snippets.len(), "snippet"),
            pack.tokens,
            pack.budget,
            pack.omitted.len(),
            pack.timing.total_ms
        ));
    }
    Ok(())
}
