//! `docdex bench-index`: the indexing cost of the code pass (issue 3's "whole index with symbols
//! and graph under twice the plain index") measured on its own, in interleaved rounds so that
//! every measure sees the same machine:
//!
//! 1. a plain (text-only) rebuild, as issue 2's indexing target counts it;
//! 2. a rebuild with the code pass (Tree-sitter symbols, AST counts, imports, `symbols.db`, the
//!    impact graph);
//! 3. the Tree-sitter parse alone over the same code files (read beforehand, untimed), on the
//!    same rayon pool, trees dropped: the floor under any code pass that parses every file;
//! 4. parse plus extraction (`code::analyze`: symbols, node-kind counts, imports), no store.
//!
//! Each measure reports wall time and the CPU time of the whole process (`getrusage`, all
//! threads), the figure a shared machine distorts least, with the load average around it.

use super::corpus::Scratch;
use super::machine::{process_cpu_seconds, CpuSnapshot};
use crate::cli::output::Out;
use crate::engine::protocol::{CodeSource, IndexProgress, IndexSummary};
use crate::engine::{Engine, IndexOptions};
use anyhow::Context;
use rayon::prelude::*;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Arguments of `docdex bench-index`.
#[derive(Debug, clap::Args)]
pub struct BenchIndexArgs {
    /// The source tree to index (in place; its index goes to a temporary `DOCDEX_HOME`).
    #[arg(long)]
    corpus: PathBuf,
    /// Interleaved rounds of each measure.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Only the plain and code-pass rebuilds (no parse floor).
    #[arg(long)]
    no_floor: bool,
    /// Print the results as JSON.
    #[arg(long)]
    json: bool,
}

/// Wall and CPU seconds of one timed run, with the 1-minute load average after it.
#[derive(Debug, Clone, Copy, Serialize, Default)]
struct Run {
    wall_s: f64,
    cpu_s: f64,
    load: f64,
}

/// The code pass's own figures from one rebuild's summary.
#[derive(Debug, Clone, Copy, Serialize, Default)]
struct CodeRun {
    extract_cpu_s: f64,
    store_s: f64,
    graph_s: f64,
    files_parsed: u64,
    symbols: u64,
}

#[derive(Debug, Serialize, Default)]
struct Report {
    corpus: PathBuf,
    files: u64,
    code_files: usize,
    code_mib: f64,
    threads: usize,
    rounds: usize,
    other_cpu_pct: Option<f64>,
    plain: Vec<Run>,
    full: Vec<Run>,
    full_code: Vec<CodeRun>,
    parse_only: Vec<Run>,
    parse_extract: Vec<Run>,
    /// Best (lowest) of each measure.
    best: Best,
}

#[derive(Debug, Serialize, Default)]
struct Best {
    plain: Run,
    full: Run,
    parse_only: Run,
    parse_extract: Run,
    wall_ratio: f64,
    cpu_ratio: f64,
    /// (plain CPU + parse-only CPU) / plain CPU: the CPU ratio no code pass that parses every
    /// file can go under.
    floor_cpu_ratio: f64,
    /// The same floor in wall time with every core busy: max(plain wall, (plain + parse CPU) /
    /// threads) / plain wall.
    floor_wall_ratio: f64,
}

/// Runs the benchmark.
pub fn run(out: &Out, args: BenchIndexArgs) -> anyhow::Result<()> {
    let corpus = std::fs::canonicalize(&args.corpus).with_context(|| format!("corpus {}", args.corpus.display()))?;
    if cfg!(debug_assertions) {
        out.note("warning: this is a debug build; figures are only meaningful from an optimized build");
    }
    let scratch = Scratch::create(false)?;
    let engine = Engine::open_at(&scratch.root.join("home")).context("opening the bench home")?;
    let threads = engine.index_threads();
    let sources = if args.no_floor { Vec::new() } else { engine.code_sources(&corpus)? };
    let mut r = Report {
        corpus: corpus.clone(),
        code_files: sources.len(),
        code_mib: sources.iter().map(|s| s.text.len()).sum::<usize>() as f64 / 1048576.0,
        threads,
        rounds: args.rounds.max(1),
        ..Default::default()
    };
    let cpu_start = CpuSnapshot::take();
    for round in 1..=r.rounds {
        out.note(&format!("round {round} of {}", r.rounds));
        let (plain, s) = index_run(&engine, &corpus, true)?;
        r.files = s.files;
        r.plain.push(plain);
        let (full, s) = index_run(&engine, &corpus, false)?;
        r.full.push(full);
        r.full_code.push(code_run(&s));
        if !sources.is_empty() {
            r.parse_only.push(measure(|| {
                sources.par_iter().for_each(CodeSource::parse);
            }));
            r.parse_extract.push(measure(|| {
                sources.par_iter().for_each(CodeSource::analyze);
            }));
        }
    }
    r.other_cpu_pct = cpu_start.zip(CpuSnapshot::take()).map(|(a, b)| a.others_pct(&b));
    r.best = best(&r);
    print(out, &r, args.json)
}

/// One rebuild, plain or with the code pass.
fn index_run(engine: &Engine, corpus: &Path, plain: bool) -> anyhow::Result<(Run, IndexSummary)> {
    let opts = IndexOptions { rebuild: true, skip_code: plain, ..Default::default() };
    let mut summary = None;
    let run = measure(|| summary = Some(engine.index(corpus, &opts, &|_: &IndexProgress| {})));
    let summary = summary.context("index run did not happen")??;
    Ok((run, summary))
}

fn code_run(s: &IndexSummary) -> CodeRun {
    let Some(c) = &s.code else { return CodeRun::default() };
    CodeRun {
        extract_cpu_s: c.extract_seconds,
        store_s: c.store_seconds,
        graph_s: c.graph_seconds.unwrap_or(0.0),
        files_parsed: c.files_parsed,
        symbols: c.symbols_extracted,
    }
}

/// Wall and whole-process CPU time of `f`.
fn measure(f: impl FnOnce()) -> Run {
    let cpu = process_cpu_seconds();
    let t = Instant::now();
    f();
    Run { wall_s: t.elapsed().as_secs_f64(), cpu_s: process_cpu_seconds() - cpu, load: load_average() }
}

/// The 1-minute load average.
fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0.0)
}

/// The run with the lowest CPU time (CPU is what contention distorts least).
fn lowest(runs: &[Run]) -> Run {
    runs.iter().copied().min_by(|a, b| a.cpu_s.total_cmp(&b.cpu_s)).unwrap_or_default()
}

fn best(r: &Report) -> Best {
    let plain = lowest(&r.plain);
    let full = lowest(&r.full);
    let parse_only = lowest(&r.parse_only);
    let parse_extract = lowest(&r.parse_extract);
    let fastest_plain = r.plain.iter().map(|p| p.wall_s).fold(f64::MAX, f64::min);
    let fastest_full = r.full.iter().map(|p| p.wall_s).fold(f64::MAX, f64::min);
    let floor_cpu = plain.cpu_s + parse_only.cpu_s;
    Best {
        plain,
        full,
        parse_only,
        parse_extract,
        wall_ratio: fastest_full / fastest_plain.max(1e-9),
        cpu_ratio: full.cpu_s / plain.cpu_s.max(1e-9),
        floor_cpu_ratio: floor_cpu / plain.cpu_s.max(1e-9),
        floor_wall_ratio: fastest_plain.max(floor_cpu / r.threads.max(1) as f64) / fastest_plain.max(1e-9),
    }
}

fn runs_line(runs: &[Run]) -> String {
    runs.iter()
        .map(|r| format!("{:.3} s / {:.2} CPU-s (load {:.1})", r.wall_s, r.cpu_s, r.load))
        .collect::<Vec<_>>()
        .join(", ")
}

fn print(out: &Out, r: &Report, json: bool) -> anyhow::Result<()> {
    if json {
        return out.json(r);
    }
    let b = &r.best;
    out.line(&format!(
        "corpus {} ({} files indexed; {} code files, {:.1} MiB), {} threads, {} rounds",
        r.corpus.display(),
        r.files,
        r.code_files,
        r.code_mib,
        r.threads,
        r.rounds
    ));
    out.line(&format!("plain rebuild         {}", runs_line(&r.plain)));
    out.line(&format!("rebuild + code pass   {}", runs_line(&r.full)));
    for c in &r.full_code {
        out.line(&format!(
            "  code pass           {} files, {} symbols; parse+extract {:.2} CPU-s, symbols.db {:.3} s, graph {:.3} s",
            c.files_parsed, c.symbols, c.extract_cpu_s, c.store_s, c.graph_s
        ));
    }
    if !r.parse_only.is_empty() {
        out.line(&format!("parse only            {}", runs_line(&r.parse_only)));
        out.line(&format!("parse + extract       {}", runs_line(&r.parse_extract)));
    }
    out.line(&format!(
        "ratio, code pass / plain: {:.2}x wall (fastest runs), {:.2}x CPU (lowest-CPU runs: {:.2} / {:.2} CPU-s); target < 2x",
        b.wall_ratio, b.cpu_ratio, b.full.cpu_s, b.plain.cpu_s
    ));
    if !r.parse_only.is_empty() {
        out.line(&format!(
            "floor: parse alone {:.2} CPU-s = {:.2}x the plain index's CPU; plain + parse = {:.2}x CPU, {:.2}x wall on {} busy cores",
            b.parse_only.cpu_s,
            b.parse_only.cpu_s / b.plain.cpu_s.max(1e-9),
            b.floor_cpu_ratio,
            b.floor_wall_ratio,
            r.threads
        ));
    }
    if let Some(p) = r.other_cpu_pct {
        out.line(&format!("other processes used {p:.1} % of the CPU during the run"));
    }
    Ok(())
}
