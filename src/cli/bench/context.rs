//! `docdex bench-context`: the latency of a context pack (`Engine::context`) on a copied
//! corpus made into a git repository with a branch that committed, staged, dirtied and added
//! files, for the plain-language tasks of the bench query set (figures for
//! docs/PERFORMANCE.md; the spec's target is under 200 ms for an 8,000-token pack on 5,000
//! files).
//!
//! The first pack is reported apart (it loads the tokenizer, the impact graph and the symbol
//! store); then every task is packed `--rounds` times on the warm engine, as a server would.

use super::corpus::{parse_size, prepare_corpus, Scratch};
use super::machine::{machine_info, today_utc};
use super::measure::latency;
use super::{BenchArgs, QUERIES};
use crate::cli::output::Out;
use crate::engine::protocol::{ContextFormat, ContextRequest};
use crate::engine::{Engine, IndexOptions};
use anyhow::{bail, Context};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Arguments of `docdex bench-context`.
#[derive(Debug, clap::Args)]
pub struct BenchContextArgs {
    /// The source tree to copy from.
    #[arg(long)]
    corpus: PathBuf,
    /// Copy at most this many files.
    #[arg(long, default_value_t = 5000)]
    max_files: usize,
    /// Stop copying before the subset exceeds this many bytes (K, M, G suffixes).
    #[arg(long, value_parser = parse_size)]
    max_bytes: Option<u64>,
    /// Pass over files larger than this.
    #[arg(long, value_parser = parse_size)]
    max_file_bytes: Option<u64>,
    /// Only files with these extensions (e.g. `py`).
    #[arg(long, value_delimiter = ',')]
    ext: Vec<String>,
    /// The pack's token budget.
    #[arg(long, default_value_t = 8000)]
    budget: u32,
    /// Timed rounds over every task.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
}

fn git(root: &Path, args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("git")
        .args(["-c", "user.email=bench@docdex", "-c", "user.name=bench", "-c", "commit.gpgsign=false"])
        .args(["-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(root)
        .output()
        .context("running git")?;
    if !out.status.success() {
        bail!("git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

/// Appends a line to the `n`-th file of the tree (sorted), returning its path.
fn touch(root: &Path, files: &[String], n: usize, line: &str) -> anyhow::Result<()> {
    let Some(rel) = files.get(n) else { bail!("the corpus has fewer than {} files", n + 1) };
    let p = root.join(rel);
    let mut text = std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
    text.push_str(line);
    std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))
}

/// Runs the benchmark.
pub fn run(out: &Out, args: BenchContextArgs) -> anyhow::Result<()> {
    if cfg!(debug_assertions) {
        out.note("warning: this is a debug build; figures are only meaningful from `cargo build --release`");
    }
    let source = std::fs::canonicalize(&args.corpus).with_context(|| format!("corpus {}", args.corpus.display()))?;
    let scratch = Scratch::create(false)?;
    let copy = BenchArgs {
        corpus: source.clone(),
        max_files: Some(args.max_files),
        max_bytes: args.max_bytes,
        max_file_bytes: args.max_file_bytes,
        ext: args.ext.clone(),
        exclude_dir: Vec::new(),
        rounds: 1,
        process_queries: 0,
        no_rg: true,
        no_peers: true,
        keep: false,
        json: false,
    };
    let corpus = prepare_corpus(out, &source, &scratch, &copy)?;
    let root = corpus.indexed_path.clone();
    let mut files: Vec<String> =
        super::corpus::list_files(&root).into_iter().map(|(rel, _, _)| rel).filter(|r| r.ends_with(".py")).collect();
    files.sort();
    out.note("making it a git repository with a branch: committed, staged, dirty and untracked changes");
    git(&root, &["init", "-q"])?;
    git(&root, &["add", "-A"])?;
    git(&root, &["commit", "-q", "-m", "corpus"])?;
    git(&root, &["checkout", "-q", "-b", "feature"])?;
    let step = (files.len() / 5).max(1);
    touch(&root, &files, 0, "\n\ndef bench_committed_change(value):\n    return value\n")?;
    touch(&root, &files, step, "\n\ndef bench_second_commit(value):\n    return value * 2\n")?;
    git(&root, &["commit", "-q", "-am", "branch work"])?;
    touch(&root, &files, 2 * step, "\n\ndef bench_staged_change(value):\n    return value\n")?;
    git(&root, &["add", "-A"])?;
    touch(&root, &files, 3 * step, "\n\ndef bench_dirty_change(value):\n    return value\n")?;
    std::fs::write(root.join("bench_untracked.py"), "def bench_new_file(value):\n    return value\n")
        .context("writing the untracked file")?;

    let home = scratch.root.join("home");
    std::fs::create_dir_all(&home).with_context(|| format!("creating {}", home.display()))?;
    std::fs::write(home.join("config.toml"), "[search]\nhybrid = false\n").context("writing the bench config")?;
    let engine = Engine::open_at(&home).context("opening the bench home")?;
    out.note(&format!("indexing {}", root.display()));
    let summary = engine.index(&root, &IndexOptions::default(), &|_: &crate::engine::protocol::IndexProgress| {})?;
    let tasks: Vec<&str> = QUERIES.iter().copied().filter(|q| q.split_whitespace().count() >= 3).collect();
    let req = |task: &str| ContextRequest {
        task: task.to_string(),
        since: Some("main".into()),
        budget: Some(args.budget),
        format: Some(ContextFormat::Md),
    };
    let started = Instant::now();
    let first = engine.context(&root, &req(tasks.first().copied().unwrap_or("parse the configuration")))?;
    let first_ms = started.elapsed().as_secs_f64() * 1000.0;
    out.note(&format!("packing {} tasks x {} rounds", tasks.len(), args.rounds));
    let mut samples = Vec::new();
    let (mut search, mut git_ms, mut expand, mut fit) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut tokens, mut snippets, mut over) = (0u64, 0u64, 0usize);
    for _ in 0..args.rounds.max(1) {
        for task in &tasks {
            let t = Instant::now();
            let pack = engine.context(&root, &req(task))?;
            samples.push(t.elapsed().as_secs_f64() * 1000.0);
            search.push(pack.timing.search_ms);
            git_ms.push(pack.timing.git_ms);
            expand.push(pack.timing.expand_ms);
            fit.push(pack.timing.fit_ms);
            tokens += u64::from(pack.tokens);
            snippets += pack.snippets.len() as u64;
            over += usize::from(pack.tokens > pack.budget);
        }
    }
    let l = latency(&samples);
    let n = samples.len().max(1) as u64;
    let machine = machine_info();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    let median = |v: &[f64]| latency(v).p50_ms;
    out.line(&format!(
        "### Context packs ({} build, {})\n\n\
         Machine: {} ({} cores, {:.1} GiB RAM), kernel {}; load average at the end {}.\n\
         Corpus: {} files ({} indexed) copied from {}, a git branch with 2 committed, 1 staged, 1 dirty and 1 untracked file; budget {} tokens, `--since main`.\n\n\
         | Figure | Value |\n| --- | --- |\n\
         | First pack (loads tokenizer, graph, symbols) | {:.1} ms, {} snippets, {} tokens |\n\
         | Warm pack p50 / p95 / max ({} packs, {} tasks) | {:.1} / {:.1} / {:.1} ms |\n\
         | Median parts: search / git / expand / fit | {:.1} / {:.1} / {:.1} / {:.1} ms |\n\
         | Mean snippets, mean tokens per pack | {:.1}, {:.0} (packs over budget: {over}) |\n\
         | Target: < 200 ms for an 8,000-token pack on 5,000 files | {} |\n",
        if cfg!(debug_assertions) { "debug" } else { "release" },
        today_utc(),
        machine.cpu,
        machine.cores,
        machine.ram_gib,
        machine.kernel,
        load.join(" "),
        corpus.subset_files.unwrap_or(0),
        summary.files,
        source.display(),
        args.budget,
        first_ms,
        first.snippets.len(),
        first.tokens,
        l.samples,
        tasks.len(),
        l.p50_ms,
        l.p95_ms,
        l.max_ms,
        median(&search),
        median(&git_ms),
        median(&expand),
        median(&fit),
        snippets as f64 / n as f64,
        tokens as f64 / n as f64,
        if l.p95_ms < 200.0 { "pass (p95)" } else { "FAIL (p95)" },
    ));
    Ok(())
}
