//! `docdex similar`: the files most like a given file.

use super::output::{self, Out};
use super::RepoArg;
use crate::engine::protocol::SimilarRequest;
use crate::engine::Engine;

/// `docdex similar` flags.
#[derive(Debug, clap::Args)]
pub struct SimilarArgs {
    #[command(flatten)]
    repo: RepoArg,
    /// The file to compare with (repo-relative, or relative to the current directory inside the
    /// repo).
    file: String,
    /// How many files.
    #[arg(long, short = 'n', default_value_t = 10)]
    limit: usize,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `similar`.
pub fn run(engine: &Engine, out: &Out, args: SimilarArgs) -> anyhow::Result<()> {
    let path = args.repo.resolve()?;
    let file = args.repo.user_path(&args.file);
    let resp = engine.similar(&path, &SimilarRequest { file, limit: Some(args.limit) })?;
    if args.json {
        out.json(&resp)?;
    } else {
        output::print_similar(out, &resp);
    }
    Ok(())
}
