//! `docdex bench-hybrid`: indexing throughput with embeddings through the
//! provider, and hybrid query latency apart from the embedder's own time.
//!
//! The embedder is either the in-process fake Ollama (`--embedder fake`: hashing
//! costs next to nothing, so the figures are docdex's own pipeline: HTTP, JSON,
//! sqlite-vec writes and KNN, fusion) or a running server (`--embedder URL`, e.g.
//! the ollama-shim with real MiniLM). Everything happens under a fresh temporary
//! `DOCDEX_HOME`, like `docdex bench`.
//!
//! Hybrid latency is measured per query as the wall time of `Engine::search` minus
//! the time the embedder took for the query (`retrieval.embed_ms`); the same
//! queries through BM25 alone are measured for comparison.

use super::corpus::{prepare_corpus, CorpusInfo, Scratch};
use super::machine::{machine_info, today_utc, CpuSnapshot, Machine};
use super::measure::latency;
use super::queries::QUERIES;
use super::report::Latency;
use super::BenchArgs;
use crate::cli::output::Out;
use crate::config::Config;
use crate::engine::protocol::{IndexProgress, ProgressSink, SearchRequest};
use crate::engine::{Engine, IndexOptions};
use anyhow::Context;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The in-process fake embedder (a test double: not in release builds without `test-support`).
#[cfg(any(debug_assertions, feature = "test-support"))]
type Fake = crate::testing::fake_ollama::FakeOllama;

/// Stands in for the fake embedder where it is not compiled in; never constructed.
#[cfg(not(any(debug_assertions, feature = "test-support")))]
enum Fake {}

#[cfg(not(any(debug_assertions, feature = "test-support")))]
impl Fake {
    fn url(&self) -> String {
        match *self {}
    }
}

/// Starts the fake embedder when `--embedder fake` asks for it.
fn start_fake(args: &HybridBenchArgs) -> anyhow::Result<Option<Fake>> {
    if args.embedder != "fake" {
        return Ok(None);
    }
    #[cfg(any(debug_assertions, feature = "test-support"))]
    {
        use crate::testing::fake_ollama::FakeOllamaOptions;
        Ok(Some(Fake::start(FakeOllamaOptions { embed_dim: args.fake_dim, ..Default::default() })?))
    }
    #[cfg(not(any(debug_assertions, feature = "test-support")))]
    {
        anyhow::bail!(
            "the fake embedder is a test double left out of release builds: build with `--features test-support`, or pass `--embedder URL` of a running embedding server (e.g. the ollama-shim serving MiniLM)"
        )
    }
}

/// Arguments of `docdex bench-hybrid`.
#[derive(Debug, clap::Args)]
pub struct HybridBenchArgs {
    /// The source tree to measure on.
    #[arg(long)]
    corpus: PathBuf,
    /// Copy at most this many files (in sorted path order) into a temporary corpus.
    #[arg(long)]
    max_files: Option<usize>,
    /// When copying, only files with these extensions (comma-separated or repeated).
    #[arg(long, value_delimiter = ',')]
    ext: Vec<String>,
    /// `fake` (the in-process fake Ollama: debug builds, or release builds with `--features
    /// test-support`) or the base URL of a running embedding server.
    #[arg(long, default_value = "fake")]
    embedder: String,
    /// `ollama` or `openai` (for `--embedder URL`).
    #[arg(long, default_value = "ollama")]
    provider: String,
    /// The embedding model (for `--embedder URL`; the fake serves `fake-embed`).
    #[arg(long, default_value = "all-minilm")]
    model: String,
    /// Vector size the fake produces (384 matches MiniLM).
    #[arg(long, default_value_t = 384)]
    fake_dim: usize,
    /// Timed rounds over every query.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Keep the temporary home (and copied corpus) and print where it is.
    #[arg(long)]
    keep: bool,
    /// Print the results as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Serialize)]
struct HybridReport {
    date: String,
    build: &'static str,
    machine: Machine,
    corpus: CorpusInfo,
    embedder: String,
    model: String,
    dim: Option<usize>,
    /// CPU used by other processes during the query phase, as % of the machine (an external
    /// embedder counts as another process).
    other_cpu_pct: Option<f64>,
    index: EmbedIndexFigures,
    hybrid: QueryFigures,
    bm25: Latency,
    markdown: String,
}

#[derive(Debug, Serialize)]
struct EmbedIndexFigures {
    files: u64,
    chunks: u64,
    /// Whole first index, embedding included.
    total_s: f64,
    /// Of which the embedding phase.
    embed_s: f64,
    chunks_embedded: u64,
    /// Chunks embedded per second of the embedding phase (through the provider).
    chunks_per_s: f64,
    /// Files per second over the whole run.
    files_per_s: f64,
    /// An unchanged re-index: seconds, and chunks it embedded (0: the cache and hashes hold).
    reindex_s: f64,
    reindex_chunks_embedded: u64,
    vectors_db_bytes: u64,
}

#[derive(Debug, Serialize)]
struct QueryFigures {
    queries: usize,
    rounds: usize,
    /// Search wall time minus the embedder's time for the query.
    excluding_embedder: Latency,
    /// The embedder's time for the query.
    embedder: Latency,
    /// Search wall time, embedder included.
    total: Latency,
    /// Queries answered in hybrid mode (the rest fell back to BM25).
    hybrid_answers: usize,
}

/// Runs the hybrid benchmark.
pub fn run(out: &Out, args: HybridBenchArgs) -> anyhow::Result<()> {
    let source = std::fs::canonicalize(&args.corpus).with_context(|| format!("corpus {}", args.corpus.display()))?;
    if cfg!(debug_assertions) {
        out.note("warning: this is a debug build; figures are only meaningful from `cargo build --release`");
    }
    let subset = BenchArgs {
        corpus: args.corpus.clone(),
        max_files: args.max_files,
        max_bytes: None,
        max_file_bytes: None,
        ext: args.ext.clone(),
        exclude_dir: Vec::new(),
        rounds: args.rounds,
        process_queries: 0,
        no_rg: true,
        no_peers: true,
        keep: args.keep,
        json: args.json,
    };
    let scratch = Scratch::create(args.keep)?;
    let corpus = prepare_corpus(out, &source, &scratch, &subset)?;
    let home = scratch.root.join("home");
    let fake = start_fake(&args)?;
    let (url, model, provider) = match &fake {
        Some(f) => (f.url(), "fake-embed".to_string(), "ollama".to_string()),
        None => (args.embedder.clone(), args.model.clone(), args.provider.clone()),
    };
    let engine = |hybrid: bool| -> anyhow::Result<Engine> {
        let mut c = Config::default();
        c.llm.provider = provider.clone();
        c.llm.base_url = url.clone();
        c.llm.embedding_model = model.clone();
        c.search.hybrid = hybrid;
        Ok(Engine::with_config(&home, c, home.join("config.toml"), Vec::new())?)
    };
    let hybrid = engine(true)?;
    out.note(&format!("indexing {} with embeddings from {url} ({model})", corpus.indexed_path.display()));
    let (index, dim) = measure_index(&hybrid, &corpus.indexed_path)?;
    out.note(&format!("searching: {} queries x {} rounds, hybrid and BM25", QUERIES.len(), args.rounds));
    let cpu_start = CpuSnapshot::take();
    let queries = measure_hybrid(&hybrid, &corpus.indexed_path, args.rounds.max(1))?;
    let bm25 = measure_bm25(&engine(false)?, &corpus.indexed_path, args.rounds.max(1))?;
    let other_cpu_pct = cpu_start.zip(CpuSnapshot::take()).map(|(a, b)| a.others_pct(&b));
    let embedder = match &fake {
        Some(_) => format!("in-process fake Ollama ({}-dimension hashed bags of words)", args.fake_dim),
        None => format!("{provider} server at {url}"),
    };
    let mut report = HybridReport {
        date: today_utc(),
        build: if cfg!(debug_assertions) { "debug" } else { "release" },
        machine: machine_info(),
        corpus,
        embedder,
        model,
        dim,
        other_cpu_pct,
        index,
        hybrid: queries,
        bm25,
        markdown: String::new(),
    };
    report.markdown = markdown(&report);
    if args.json {
        out.json(&report)?;
    } else {
        out.line(&report.markdown);
    }
    if args.keep {
        out.note(&format!("kept {}", scratch.root.display()));
    }
    Ok(())
}

/// Remembers when the embedding phase started.
struct EmbedClock(std::sync::Mutex<Option<Instant>>);

impl ProgressSink for EmbedClock {
    fn progress(&self, p: &IndexProgress) {
        if p.phase == "embedding" {
            if let Ok(mut t) = self.0.lock() {
                t.get_or_insert_with(Instant::now);
            }
        }
    }
}

fn measure_index(engine: &Engine, corpus: &Path) -> anyhow::Result<(EmbedIndexFigures, Option<usize>)> {
    let clock = EmbedClock(std::sync::Mutex::new(None));
    let t0 = Instant::now();
    let first = engine.index(corpus, &IndexOptions { rebuild: true, ..Default::default() }, &clock)?;
    let total_s = t0.elapsed().as_secs_f64();
    let e = first.embeddings.clone().unwrap_or_default();
    if e.chunks_embedded == 0 {
        anyhow::bail!("nothing was embedded: {}", e.notice.unwrap_or_else(|| format!("{:?}", e.state)));
    }
    let embed_s = e.seconds;
    let t1 = Instant::now();
    let again = engine.index(corpus, &IndexOptions::default(), &|_: &IndexProgress| {})?;
    let reindex_s = t1.elapsed().as_secs_f64();
    let repo = engine.resolve_repo(corpus)?;
    let db = std::fs::metadata(repo.state_dir.join("vectors.db")).map(|m| m.len()).unwrap_or(0);
    Ok((
        EmbedIndexFigures {
            files: first.files,
            chunks: first.chunks,
            total_s,
            embed_s,
            chunks_embedded: e.chunks_embedded,
            chunks_per_s: e.chunks_embedded as f64 / embed_s.max(1e-9),
            files_per_s: first.files as f64 / total_s.max(1e-9),
            reindex_s,
            reindex_chunks_embedded: again.embeddings.map(|x| x.chunks_embedded).unwrap_or(0),
            vectors_db_bytes: db,
        },
        e.dim,
    ))
}

fn measure_hybrid(engine: &Engine, corpus: &Path, rounds: usize) -> anyhow::Result<QueryFigures> {
    let req = |q: &str| SearchRequest { query: q.to_string(), ..Default::default() };
    // Warm-up: open readers, load the model.
    for q in QUERIES.iter().take(5) {
        engine.search(corpus, &req(q))?;
    }
    let (mut excl, mut emb, mut total) = (Vec::new(), Vec::new(), Vec::new());
    let mut hybrid_answers = 0;
    for _ in 0..rounds {
        for q in QUERIES {
            let t = Instant::now();
            let resp = engine.search(corpus, &req(q))?;
            let wall = t.elapsed().as_secs_f64() * 1000.0;
            let e = resp.retrieval.embed_ms.unwrap_or(0.0);
            if resp.retrieval.mode == "hybrid" {
                hybrid_answers += 1;
            }
            excl.push((wall - e).max(0.0));
            emb.push(e);
            total.push(wall);
        }
    }
    Ok(QueryFigures {
        queries: QUERIES.len(),
        rounds,
        excluding_embedder: latency(&excl),
        embedder: latency(&emb),
        total: latency(&total),
        hybrid_answers: hybrid_answers / rounds,
    })
}

fn measure_bm25(engine: &Engine, corpus: &Path, rounds: usize) -> anyhow::Result<Latency> {
    let req = |q: &str| SearchRequest { query: q.to_string(), ..Default::default() };
    let mut all = Vec::new();
    for _ in 0..rounds {
        for q in QUERIES {
            let t = Instant::now();
            engine.search(corpus, &req(q))?;
            all.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }
    Ok(latency(&all))
}

fn lat(l: &Latency) -> String {
    format!("p50 {:.2} / p95 {:.2} / p99 {:.2} ms (max {:.2}, n={})", l.p50_ms, l.p95_ms, l.p99_ms, l.max_ms, l.samples)
}

fn markdown(r: &HybridReport) -> String {
    let m = &r.machine;
    let i = &r.index;
    let others = r
        .other_cpu_pct
        .map(|p| format!("; other processes used {p:.1} % of the CPU during the query phase"))
        .unwrap_or_default();
    let mut s = format!(
        "Machine: {} ({} cores), {:.1} GiB RAM, Linux {}; {} build; {}{others}\n\n| Measure | Value |\n|---|---|\n",
        m.cpu, m.cores, m.ram_gib, m.kernel, r.build, r.date
    );
    let subset = match (r.corpus.subset_files, r.corpus.subset_bytes) {
        (Some(f), Some(b)) => {
            format!("{f} files, {:.1} MiB copied from {}", b as f64 / 1048576.0, r.corpus.source.display())
        }
        _ => r.corpus.source.display().to_string(),
    };
    let rows = [
        ("Corpus", subset),
        ("Embedder", format!("{} (model {}, {} dimensions)", r.embedder, r.model, r.dim.unwrap_or(0))),
        ("Files / chunks", format!("{} / {}", i.files, i.chunks)),
        (
            "First index with embeddings",
            format!("{:.2} s ({:.0} files/s), of which embedding {:.2} s", i.total_s, i.files_per_s, i.embed_s),
        ),
        (
            "Embedding throughput",
            format!("{:.0} chunks/s ({} chunks through the provider)", i.chunks_per_s, i.chunks_embedded),
        ),
        ("Unchanged re-index", format!("{:.3} s, {} chunks embedded", i.reindex_s, i.reindex_chunks_embedded)),
        ("vectors.db size", format!("{:.1} MiB", i.vectors_db_bytes as f64 / 1048576.0)),
        ("Hybrid query, excluding the embedder", lat(&r.hybrid.excluding_embedder)),
        ("Embedder time per query", lat(&r.hybrid.embedder)),
        ("Hybrid query, total", lat(&r.hybrid.total)),
        ("BM25 alone, same queries", lat(&r.bm25)),
        ("Queries answered in hybrid mode", format!("{} of {}", r.hybrid.hybrid_answers, r.hybrid.queries)),
    ];
    for (k, v) in rows {
        s.push_str(&format!("| {k} | {} |\n", v.replace('|', "\\|")));
    }
    s
}
