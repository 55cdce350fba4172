//! `docdex bench`: measures indexing and search on a real source tree, in one
//! run, against ripgrep, and prints the figures (a human table, a Markdown
//! block for `docs/PERFORMANCE.md`, or `--json`).
//!
//! Everything happens under a fresh temporary `DOCDEX_HOME` (and, when a
//! subset is asked for, a temporary copy of the corpus), so the user's own
//! state is never touched. The temporary directory is removed at the end
//! unless `--keep` is given.
//!
//! What is measured, in order:
//! 0. a plain (text-only) rebuild, twice, for the code pass's cost;
//! 1. first index (`rebuild`, with the code pass: Tree-sitter symbols, AST
//!    counts, imports and the impact-graph rebuild), its phases as seen by the
//!    progress sink, per-language parse rates, and the peak RSS of this process
//!    (`VmHWM`, reset just before indexing);
//! 2. an unchanged re-index, a bare walk, and the index size on disk;
//! 3. warm in-process search latency over [`QUERIES`];
//! 4. whole-process latency of `docdex search --json` for a sample of them;
//! 5. `rg -i -c --no-messages -F -e WORD ...` over the corpus for the same sample;
//! 6. the first index of the peers a user would pick instead (universal-ctags, codesearch's
//!    `cindex`) on the same corpus, against docdex's time to a searchable index.

pub mod context;
mod corpus;
pub mod hybrid;
pub mod index;
mod machine;
mod measure;
mod peers;
pub mod profile;
mod queries;
mod report;
pub mod serve;
mod watch_latency;
pub mod web;

use super::output::Out;
use crate::engine::Engine;
use anyhow::Context;
use corpus::{parse_size, prepare_corpus, CorpusInfo, Scratch};
use machine::{kib_to_mib, machine_info, proc_status_kib, today_utc, CpuSnapshot};
use measure::{
    measure_index, measure_plain_index_apart, measure_process, measure_rg, measure_search, measure_signal_cost,
    sample_indices,
};
pub use queries::QUERIES;
use report::{
    markdown, print_report, targets, CodeFigures, IndexFigures, ProcessFigures, Report, RgFigures, SearchFigures,
};
use std::path::PathBuf;

/// Arguments of `docdex bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// The source tree to measure on.
    #[arg(long)]
    corpus: PathBuf,
    /// Copy at most this many files (in sorted path order) into a temporary corpus.
    #[arg(long)]
    max_files: Option<usize>,
    /// Stop copying before the subset exceeds this many bytes (K, M, G suffixes are binary: 14M = 14 MiB).
    #[arg(long, value_parser = parse_size)]
    max_bytes: Option<u64>,
    /// When copying, pass over files larger than this (K, M, G suffixes).
    #[arg(long, value_parser = parse_size)]
    max_file_bytes: Option<u64>,
    /// When copying, only files with these extensions (comma-separated or repeated, e.g. `py`).
    #[arg(long, value_delimiter = ',')]
    ext: Vec<String>,
    /// When copying, pass over paths with a directory of this name (repeatable, e.g. `site-packages`).
    #[arg(long)]
    exclude_dir: Vec<String>,
    /// Timed rounds over every query for warm in-process latency.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Queries (evenly sampled from the list) run as a whole `docdex search` process and through ripgrep.
    #[arg(long, default_value_t = 50)]
    process_queries: usize,
    /// Skip the ripgrep comparison.
    #[arg(long)]
    no_rg: bool,
    /// Skip indexing the corpus with the peers (universal-ctags, codesearch's `cindex`).
    #[arg(long)]
    no_peers: bool,
    /// Keep the temporary home (and copied corpus) and print where it is.
    #[arg(long)]
    keep: bool,
    /// Print the results as JSON instead of tables.
    #[arg(long)]
    json: bool,
}

impl BenchArgs {
    fn wants_subset(&self) -> bool {
        self.max_files.is_some()
            || self.max_bytes.is_some()
            || self.max_file_bytes.is_some()
            || !self.ext.is_empty()
            || !self.exclude_dir.is_empty()
    }
}

/// Runs the benchmark.
pub fn run(_engine: &Engine, out: &Out, args: BenchArgs) -> anyhow::Result<()> {
    let source = std::fs::canonicalize(&args.corpus).with_context(|| format!("corpus {}", args.corpus.display()))?;
    if cfg!(debug_assertions) {
        out.note("warning: this is a debug build; figures are only meaningful from `cargo build --release`");
    }
    let scratch = Scratch::create(args.keep)?;
    let corpus = prepare_corpus(out, &source, &scratch, &args)?;
    let home = scratch.root.join("home");
    // This bench measures keyword search; `docdex bench-hybrid` measures embeddings.
    std::fs::create_dir_all(&home).with_context(|| format!("creating {}", home.display()))?;
    std::fs::write(home.join("config.toml"), "[search]\nhybrid = false\n").context("writing the bench config")?;
    let engine = Engine::open_at(&home).context("opening the bench home")?;
    let cpu_start = CpuSnapshot::take();
    out.note("plain (text-only) index, twice, for the code pass's share (a home of its own)");
    let (plain_first_s, plain_cpu_s) = measure_plain_index_apart(&scratch.root, &corpus.indexed_path)?;
    // A true first index, as a user's first `docdex index` (live from its first commit).
    out.note(&format!("indexing {} (fresh DOCDEX_HOME {})", corpus.indexed_path.display(), home.display()));
    let (mut index, mut code) = measure_index(&engine, &corpus.indexed_path)?;
    code.plain_first_s = plain_first_s;
    code.plain_cpu_s = plain_cpu_s;
    code.cpu_ratio_to_plain = code.full_cpu_s / plain_cpu_s.max(1e-9);
    code.ratio_to_plain = index.first_s / plain_first_s.max(1e-9);
    code.added_share_pct = 100.0 * (index.first_s - plain_first_s) / index.first_s.max(1e-9);
    out.note(&format!("searching: {} queries x {} rounds", QUERIES.len(), args.rounds));
    let (search, per_query) = measure_search(&engine, &corpus.indexed_path, args.rounds.max(1))?;
    let (on, off) = measure_signal_cost(&engine, &home, &corpus.indexed_path, args.rounds.max(1))?;
    code.search_signals_on = on;
    code.search_signals_off = off;
    let sample = sample_indices(QUERIES.len(), args.process_queries);
    let process = measure_process(out, &home, &corpus.indexed_path, &sample)?;
    let rg_sample = if args.no_rg { &[][..] } else { &sample[..] };
    let ripgrep = measure_rg(out, &corpus.indexed_path, rg_sample, &per_query, process.as_ref());
    index.peak_rss_end_mib = kib_to_mib(proc_status_kib("VmHWM:").unwrap_or(0));
    let peers = if args.no_peers {
        Vec::new()
    } else {
        out.note("indexing the same corpus with the peers (ctags, cindex)");
        peers::measure(&corpus.indexed_path, &scratch.root)
    };
    let watch = if corpus.copied_subset {
        out.note("timing save-to-searchable under the watcher");
        Some(watch_latency::measure(&engine, &corpus.indexed_path)?)
    } else {
        out.note(
            "watcher latency skipped: it writes files, so it runs only on a copied corpus (--max-files/--max-bytes)",
        );
        None
    };
    let others = cpu_start.zip(CpuSnapshot::take()).map(|(a, b)| a.others_pct(&b));
    let mut report = assemble(corpus, index, code, search, process, ripgrep, others);
    if watch.is_some() || !peers.is_empty() {
        report.watch = watch;
        report.peers = peers;
        report.targets = targets(&report);
        report.markdown = markdown(&report);
    }
    print_report(out, &report, args.json)?;
    if args.keep {
        out.note(&format!("kept {}", scratch.root.display()));
    }
    Ok(())
}

fn assemble(
    corpus: CorpusInfo,
    index: IndexFigures,
    code: CodeFigures,
    search: SearchFigures,
    process: Option<ProcessFigures>,
    ripgrep: RgFigures,
    other_cpu_pct: Option<f64>,
) -> Report {
    let mut report = Report {
        date: today_utc(),
        docdex_version: env!("CARGO_PKG_VERSION"),
        build: if cfg!(debug_assertions) { "debug" } else { "release" },
        machine: machine_info(),
        other_cpu_pct,
        corpus,
        index,
        code,
        search,
        process,
        ripgrep,
        peers: Vec::new(),
        watch: None,
        targets: Vec::new(),
        markdown: String::new(),
    };
    report.targets = targets(&report);
    report.markdown = markdown(&report);
    report
}
