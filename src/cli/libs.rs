//! `docdex libs fetch|list`: library docs of a repository's dependencies.

use super::output::{count, visible, warn_prefix, Out};
use super::progress::Ticker;
use super::RepoArg;
use crate::engine::protocol::{
    short_lib_citation, short_lib_note, LibHit, LibPackage, LibsFetchRequest, LibsProgress, LibsReport,
};
use crate::engine::Engine;
use clap::Subcommand;
use std::process::ExitCode;

/// `docdex libs`.
#[derive(Debug, Subcommand)]
pub enum LibsCommand {
    /// Detect dependencies (Cargo, npm, Python lockfiles), read their installed sources, fetch
    /// their published docs when online, and ingest them into this repository's libs index.
    Fetch {
        #[command(flatten)]
        repo: RepoArg,
        /// Read and fetch again even when `cache/libs` has a package.
        #[arg(long)]
        refresh: bool,
        /// Only installed sources; no network.
        #[arg(long)]
        offline: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The packages the last fetch ingested for this repository.
    List {
        #[command(flatten)]
        repo: RepoArg,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

impl LibsCommand {
    /// True when `--json` was given.
    pub fn json(&self) -> bool {
        matches!(self, LibsCommand::Fetch { json: true, .. } | LibsCommand::List { json: true, .. })
    }
}

fn package_line(out: &Out, p: &LibPackage) -> String {
    let from = if p.cached { " (cached)".to_string() } else { String::new() };
    let notes = if p.notes.is_empty() { String::new() } else { format!("  {}", out.paint("2", &p.notes.join("; "))) };
    format!(
        "{:<7} {}@{}  {} local, {} published docs, {}{from}{notes}",
        p.ecosystem.name(),
        out.paint("1", &p.name),
        visible(&p.version),
        p.local_docs,
        p.published_docs,
        count(p.chunks, "passage")
    )
}

/// Runs `docdex libs ...`.
pub fn run(engine: &Engine, out: &Out, cmd: LibsCommand) -> anyhow::Result<ExitCode> {
    let report: LibsReport = match cmd {
        LibsCommand::Fetch { repo, refresh, offline, json } => {
            let path = repo.resolve()?;
            let req = LibsFetchRequest { refresh, offline };
            // Progress is a live line on a terminal only: printed per package it repeated
            // every package the summary then lists on stdout. It names the package being
            // fetched (a slow registry can hold one for the page timeout), with the count done.
            let ticker = Ticker::new(!json, "packages");
            let mut progress = |p: LibsProgress<'_>| match p {
                LibsProgress::Started { dep, total, .. } => {
                    ticker.total(total as u64);
                    ticker.working_on(&visible(&format!("{}@{}", dep.name, dep.version)));
                }
                LibsProgress::Done(p) => {
                    tracing::debug!(package = %p.name, version = %p.version, local = p.local_docs, published = p.published_docs, "libs package done");
                    ticker.inc();
                }
            };
            let r = engine.libs_fetch(&path, &req, &mut progress);
            ticker.finish();
            let r = r?;
            if json {
                out.json(&r)?;
                return Ok(ExitCode::SUCCESS);
            }
            r
        }
        LibsCommand::List { repo, json } => {
            let r = match engine.libs_list(&repo.resolve()?) {
                // Nothing fetched yet is an empty list to a person (as `docdex sources` says
                // "no sources"); scripts asking for JSON still get the not_found error.
                Err(crate::error::Error::NotFound(msg)) if !json => {
                    out.line(&msg);
                    return Ok(ExitCode::SUCCESS);
                }
                r => r?,
            };
            if json {
                out.json(&r)?;
                return Ok(ExitCode::SUCCESS);
            }
            r
        }
    };
    for p in &report.packages {
        out.line(&package_line(out, p));
    }
    if report.packages.is_empty() {
        // An empty list is an answer, said as one (the notes below say what was read).
        out.line(&format!("no libraries in the libs index of {}", visible(&report.repo)));
    }
    let cached = report.packages.iter().filter(|p| p.cached).count();
    let from_cache = if cached > 0 { format!(" ({cached} from the offline cache)") } else { String::new() };
    out.note(&format!(
        "{}{from_cache}, {} in the libs index of {}",
        count(report.packages.len(), "package"),
        count(report.chunks, "passage"),
        visible(&report.repo.to_string())
    ));
    for n in &report.notes {
        out.note(&visible(n));
    }
    // Last, where it is seen: the fetch still succeeded on the installed sources.
    if let Some(why) = &report.registry_unreachable {
        out.note(&format!("{} {}", warn_prefix(), visible(why)));
    }
    Ok(ExitCode::SUCCESS)
}

/// Library hits after the code hits of `docdex search --libs`.
pub fn print_hits(out: &Out, hits: &[LibHit]) {
    if hits.is_empty() {
        out.line(&out.paint("2", "no library docs matched (docdex libs fetch ingests them)"));
        return;
    }
    // One block, each hit set apart as the code hits above are, and a cut excerpt marked as
    // cut (a passage's third line often ends mid-sentence and read as lost output). Citations
    // and titles are the short ones chat shows (a docs URL of 150 characters wrapped every
    // hit); `--json` keeps the full source.
    let mut block = format!("\n{}\n", out.paint("1", "library docs"));
    for h in hits {
        block.push_str(&format!(
            "\n{}  {}  {:.2}\n",
            out.paint("1;35", &visible(&short_lib_citation(&h.package, &h.version, &h.source, &h.citation))),
            out.paint("2", &visible(&short_lib_note(&h.title))),
            h.score
        ));
        let mut lines = h.text.lines().filter(|l| !l.trim().is_empty());
        for l in lines.by_ref().take(3) {
            block.push_str(&format!("    {}\n", visible(l)));
        }
        if lines.next().is_some() {
            block.push_str(&format!("    {}\n", out.paint("2", "⋮")));
        }
    }
    out.block(&block);
}
