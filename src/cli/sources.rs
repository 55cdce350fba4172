//! `docdex add`, `docdex sources`, `docdex remove-source`: folders outside the repository
//! registered into its index.

use super::output::{self, Out};
use super::RepoArg;
use crate::engine::protocol::{AddSourceRequest, IndexSummary, Source, SourceInfo};
use crate::engine::{Engine, IndexOptions};
use serde::Serialize;

/// `docdex add` flags.
#[derive(Debug, clap::Args)]
pub struct AddArgs {
    #[command(flatten)]
    repo: RepoArg,
    /// The folder to add (a docs folder, a notes directory).
    path: std::path::PathBuf,
    /// Its name in hits (`//NAME/...`; default: the folder's name).
    #[arg(long)]
    name: Option<String>,
    /// Index only files matching this glob (repeatable), relative to the folder.
    #[arg(long)]
    include: Vec<String>,
    /// Leave out files matching this glob (repeatable).
    #[arg(long)]
    exclude: Vec<String>,
    /// Do not follow changes under it while watching.
    #[arg(long)]
    no_watch: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `docdex sources` / `docdex remove-source` flags.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    #[command(flatten)]
    repo: RepoArg,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `docdex remove-source` flags.
#[derive(Debug, clap::Args)]
pub struct RemoveArgs {
    #[command(flatten)]
    repo: RepoArg,
    /// The source's path or name.
    source: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Changed<T: Serialize> {
    source: T,
    index: IndexSummary,
}

/// Registers the folder, then indexes (a running watcher picks it up itself).
pub fn add(engine: &Engine, out: &Out, args: AddArgs) -> anyhow::Result<()> {
    let repo = args.repo.resolve_existing(engine)?;
    let req = AddSourceRequest {
        path: args.path,
        name: args.name,
        include: args.include,
        exclude: args.exclude,
        no_watch: args.no_watch,
    };
    let source = engine.add_source(&repo, &req)?;
    if !args.json {
        out.note(&changed("added", &source, "to", &repo, "; indexing"));
    }
    let index = engine.index(&repo, &IndexOptions::default(), &|_: &_| {})?;
    if args.json {
        out.json(&Changed { source, index })?;
    } else {
        output::print_index_summary(out, &index);
    }
    Ok(())
}

/// Lists the sources with what the index holds from each.
pub fn list(engine: &Engine, out: &Out, args: ListArgs) -> anyhow::Result<()> {
    let list = engine.list_sources(&args.repo.resolve_existing(engine)?)?;
    if args.json {
        return out.json(&list);
    }
    if list.is_empty() {
        out.line("no sources (add one with `docdex add PATH`)");
    }
    for s in &list {
        out.line(&output::visible(&describe(s)));
    }
    Ok(())
}

fn describe(s: &SourceInfo) -> String {
    let formats: Vec<String> = s.formats.iter().map(|(f, n)| format!("{n} {f}")).collect();
    let mut line = format!(
        "{}  {}  {}, {:.1} MB{}{}",
        s.source.name,
        s.source.path.display(),
        output::count(s.files, "file"),
        s.bytes as f64 / (1024.0 * 1024.0),
        if formats.is_empty() { String::new() } else { format!(" ({})", formats.join(", ")) },
        if s.skipped > 0 { format!(", {} skipped", s.skipped) } else { String::new() },
    );
    if !s.source.include.is_empty() {
        line.push_str(&format!("  include {}", s.source.include.join(" ")));
    }
    if !s.source.exclude.is_empty() {
        line.push_str(&format!("  exclude {}", s.source.exclude.join(" ")));
    }
    if !s.source.watch {
        line.push_str("  (not watched)");
    }
    if s.missing {
        line.push_str(&format!(
            "  MISSING: the folder {}; its files stay indexed until it is back or `docdex remove-source {}`",
            s.missing_why.as_deref().unwrap_or("is gone"),
            s.source.name
        ));
    }
    line
}

/// Unregisters a source, then indexes (its files leave the index).
pub fn remove(engine: &Engine, out: &Out, args: RemoveArgs) -> anyhow::Result<()> {
    let repo = args.repo.resolve_existing(engine)?;
    let source = engine.remove_source(&repo, &args.source)?;
    let index = engine.index(&repo, &IndexOptions::default(), &|_: &_| {})?;
    if args.json {
        out.json(&Changed { source, index })?;
    } else {
        out.note(&changed("removed", &source, "from", &repo, ""));
        output::print_index_summary(out, &index);
    }
    Ok(())
}

/// `added source notes (/home/me/notes) to the repository /home/me/proj`: which repository a
/// command run without `--repo` changed is said, as `index` says it.
fn changed(verb: &str, source: &Source, preposition: &str, repo: &std::path::Path, tail: &str) -> String {
    let repo = repo.canonicalize().unwrap_or_else(|_| repo.to_path_buf());
    output::visible(&format!(
        "{verb} source {} ({}) {preposition} the repository {}{tail}",
        source.name,
        source.path.display(),
        repo.display()
    ))
}
