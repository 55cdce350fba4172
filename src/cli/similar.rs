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
    /// How many files (1 to 200).
    #[arg(long, short = 'n', default_value_t = 10, value_parser = files_wanted)]
    limit: usize,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// The most files one answer holds (the engine's cap).
const MAX_FILES: usize = 200;

/// `-n`: refused outside 1..=200 rather than quietly taken as the nearest bound (the engine
/// clamps), since `-n 0` asking for nothing is a mistake to point out.
fn files_wanted(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=MAX_FILES).contains(&n) => Ok(n),
        Ok(n) => Err(format!("{n} files: -n takes 1 to {MAX_FILES}")),
        Err(e) => Err(format!("{s:?} is not a number of files ({e})")),
    }
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
