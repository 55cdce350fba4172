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
use crate::engine::protocol::{ContextFormat, ContextPack, ContextRequest};
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

/// Runs the benchmark: a copied corpus made a git branch, indexed in a scratch home, packed
/// once cold and `--rounds` times warm, then the report table.
pub fn run(out: &Out, args: BenchContextArgs) -> anyhow::Result<()> {
    if cfg!(debug_assertions) {
        out.note("warning: this is a debug build; figures are only meaningful from `cargo build --release`");
    }
    let source = std::fs::canonicalize(&args.corpus).with_context(|| format!("corpus {}", args.corpus.display()))?;
    let scratch = Scratch::create(false)?;
    let corpus = prepare_corpus(out, &source, &scratch, &copy_args(&source, &args))?;
    let root = corpus.indexed_path.clone();
    make_feature_branch(out, &root)?;
    let engine = bench_engine(&scratch)?;
    out.note(&format!("indexing {}", root.display()));
    let summary = engine.index(&root, &IndexOptions::default(), &|_: &crate::engine::protocol::IndexProgress| {})?;
    let tasks: Vec<&str> = QUERIES.iter().copied().filter(|q| q.split_whitespace().count() >= 3).collect();
    let packer = Packer { engine: &engine, root: &root, budget: args.budget };
    let started = Instant::now();
    let first = packer.pack(tasks.first().copied().unwrap_or("parse the configuration"))?;
    let first_ms = started.elapsed().as_secs_f64() * 1000.0;
    out.note(&format!("packing {} tasks x {} rounds", tasks.len(), args.rounds));
    let warm = packer.warm_rounds(&tasks, args.rounds)?;
    let first = FirstPack { ms: first_ms, snippets: first.snippets.len(), tokens: first.tokens };
    let setup = Setup {
        copied: corpus.subset_files.unwrap_or(0),
        indexed: summary.files,
        source: &source,
        budget: args.budget,
        tasks: tasks.len(),
    };
    out.line(&report(&setup, &first, &warm));
    Ok(())
}

/// The corpus copy's settings: the bench's size limits, one round, no peers.
fn copy_args(source: &Path, args: &BenchContextArgs) -> BenchArgs {
    BenchArgs {
        corpus: source.to_path_buf(),
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
    }
}

/// Makes the copy a git repository on a `feature` branch off `main` with two committed, one
/// staged, one dirty and one untracked change, for `--since main` to find.
fn make_feature_branch(out: &Out, root: &Path) -> anyhow::Result<()> {
    let mut files: Vec<String> =
        super::corpus::list_files(root).into_iter().map(|(rel, _, _)| rel).filter(|r| r.ends_with(".py")).collect();
    files.sort();
    out.note("making it a git repository with a branch: committed, staged, dirty and untracked changes");
    git(root, &["init", "-q"])?;
    git(root, &["add", "-A"])?;
    git(root, &["commit", "-q", "-m", "corpus"])?;
    git(root, &["checkout", "-q", "-b", "feature"])?;
    let step = (files.len() / 5).max(1);
    touch(root, &files, 0, "\n\ndef bench_committed_change(value):\n    return value\n")?;
    touch(root, &files, step, "\n\ndef bench_second_commit(value):\n    return value * 2\n")?;
    git(root, &["commit", "-q", "-am", "branch work"])?;
    touch(root, &files, 2 * step, "\n\ndef bench_staged_change(value):\n    return value\n")?;
    git(root, &["add", "-A"])?;
    touch(root, &files, 3 * step, "\n\ndef bench_dirty_change(value):\n    return value\n")?;
    std::fs::write(root.join("bench_untracked.py"), "def bench_new_file(value):\n    return value\n")
        .context("writing the untracked file")
}

/// An engine on a fresh home in the scratch directory, hybrid search off (no model server).
fn bench_engine(scratch: &Scratch) -> anyhow::Result<Engine> {
    let home = scratch.root.join("home");
    std::fs::create_dir_all(&home).with_context(|| format!("creating {}", home.display()))?;
    std::fs::write(home.join("config.toml"), "[search]\nhybrid = false\n").context("writing the bench config")?;
    Engine::open_at(&home).context("opening the bench home")
}

/// Packs tasks against the bench branch: `--since main` at the bench's budget, as Markdown.
struct Packer<'a> {
    engine: &'a Engine,
    root: &'a Path,
    budget: u32,
}

impl Packer<'_> {
    fn pack(&self, task: &str) -> anyhow::Result<ContextPack> {
        let req = ContextRequest {
            task: task.to_string(),
            since: Some("main".into()),
            budget: Some(self.budget),
            format: Some(ContextFormat::Md),
        };
        Ok(self.engine.context(self.root, &req)?)
    }

    /// Every task packed `rounds` times (at least once) on the warm engine.
    fn warm_rounds(&self, tasks: &[&str], rounds: usize) -> anyhow::Result<WarmPacks> {
        let mut warm = WarmPacks::default();
        for _ in 0..rounds.max(1) {
            for task in tasks {
                let t = Instant::now();
                let pack = self.pack(task)?;
                warm.add(t.elapsed().as_secs_f64() * 1000.0, &pack);
            }
        }
        Ok(warm)
    }
}

/// The cold first pack: it loads the tokenizer, the impact graph and the symbol store.
struct FirstPack {
    ms: f64,
    snippets: usize,
    tokens: u32,
}

/// The warm packs' times (whole and by part) and sizes.
#[derive(Default)]
struct WarmPacks {
    samples: Vec<f64>,
    search: Vec<f64>,
    git: Vec<f64>,
    expand: Vec<f64>,
    fit: Vec<f64>,
    tokens: u64,
    snippets: u64,
    over_budget: usize,
}

impl WarmPacks {
    fn add(&mut self, ms: f64, pack: &ContextPack) {
        self.samples.push(ms);
        self.search.push(pack.timing.search_ms);
        self.git.push(pack.timing.git_ms);
        self.expand.push(pack.timing.expand_ms);
        self.fit.push(pack.timing.fit_ms);
        self.tokens += u64::from(pack.tokens);
        self.snippets += pack.snippets.len() as u64;
        self.over_budget += usize::from(pack.tokens > pack.budget);
    }
}

/// What the report says about the run besides its figures.
struct Setup<'a> {
    copied: u64,
    indexed: u64,
    source: &'a Path,
    budget: u32,
    tasks: usize,
}

/// The Markdown report: build, machine and corpus, then one row per figure.
fn report(setup: &Setup, first: &FirstPack, warm: &WarmPacks) -> String {
    let l = latency(&warm.samples);
    let n = warm.samples.len().max(1) as u64;
    let machine = machine_info();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    let median = |v: &[f64]| latency(v).p50_ms;
    let over = warm.over_budget;
    format!(
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
        setup.copied,
        setup.indexed,
        setup.source.display(),
        setup.budget,
        first.ms,
        first.snippets,
        first.tokens,
        l.samples,
        setup.tasks,
        l.p50_ms,
        l.p95_ms,
        l.max_ms,
        median(&warm.search),
        median(&warm.git),
        median(&warm.expand),
        median(&warm.fit),
        warm.snippets as f64 / n as f64,
        warm.tokens as f64 / n as f64,
        if l.p95_ms < 200.0 { "pass (p95)" } else { "FAIL (p95)" },
    )
}
