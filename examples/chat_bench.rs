//! Chat overhead benchmark: what the waterfall adds before and around the model, measured with
//! the fake Ollama answering at once (zero token delay), so the figures are docdex's own time:
//! Tier 1 retrieval, context assembly (reading snippets, counting tokens, fitting the budget,
//! rendering the prompt), reasoning-DAG writes, and the time to the first answer token.
//!
//! `cargo run --release --example chat_bench -- --corpus DIR [--queries bench/quality/python-stdlib.json]
//!  [--rounds 3] [--window 8192] [--trace]`
//!
//! Questions come from a quality dataset (its plain-language task descriptions) or a built-in
//! list. The first request of the process is reported on its own: it loads the tokenizer and
//! asks the server for the model's context window.

use docdex::config::Config;
use docdex::engine::protocol::{ChatTurnRequest, ChatTurnResponse, SearchRequest};
use docdex::engine::IndexOptions;
use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
use docdex::Engine;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::time::Instant;

const BUILTIN: &[&str] = &[
    "how is the configuration file parsed and validated",
    "where are network timeouts handled",
    "how are errors reported to the caller",
    "what happens when a file cannot be read",
    "how are command line arguments parsed",
    "where is text encoding detected",
    "how does the cache decide what to evict",
    "how are dates formatted for display",
];

struct Args {
    corpus: PathBuf,
    queries: Option<PathBuf>,
    rounds: usize,
    window: u32,
    show_trace: bool,
}

fn args() -> anyhow::Result<Args> {
    let mut a = Args { corpus: PathBuf::new(), queries: None, rounds: 3, window: 8192, show_trace: false };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| anyhow::anyhow!("{flag} needs a value"));
        match flag.as_str() {
            "--corpus" => a.corpus = PathBuf::from(value()?),
            "--queries" => a.queries = Some(PathBuf::from(value()?)),
            "--rounds" => a.rounds = value()?.parse()?,
            "--window" => a.window = value()?.parse()?,
            "--trace" => a.show_trace = true,
            other => anyhow::bail!("unknown argument {other}"),
        }
    }
    anyhow::ensure!(a.corpus.is_dir(), "--corpus DIR is required (a source tree to index)");
    Ok(a)
}

fn questions(a: &Args) -> anyhow::Result<Vec<String>> {
    let Some(file) = &a.queries else { return Ok(BUILTIN.iter().map(|s| s.to_string()).collect()) };
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(file)?)?;
    Ok(v["queries"].as_array().into_iter().flatten().filter_map(|q| q["query"].as_str().map(String::from)).collect())
}

/// CPU time this process has used (all threads, the fake server's included), in ms.
fn cpu_ms() -> f64 {
    // SAFETY: getrusage only writes into the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 * 1e3 + t.tv_usec as f64 / 1e3;
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// The 1-minute load average (other processes competing for the CPU).
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(String::from))
        .unwrap_or_default()
}

/// p50 / p95 / max of `v` in milliseconds.
fn summary(v: &mut [f64]) -> String {
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize];
    format!("p50 {:.2} / p95 {:.2} / max {:.2} ms", at(0.5), at(0.95), v[v.len() - 1])
}

fn main() -> anyhow::Result<()> {
    let a = args()?;
    let questions = questions(&a)?;
    let server = FakeOllama::start(FakeOllamaOptions::default())?;
    let home = std::env::temp_dir().join(format!("docdex-chat-bench-{}", std::process::id()));
    let mut config = Config::default();
    config.index.exclude = vec!["site-packages/".into()];
    config.llm.base_url = server.url();
    config.llm.default_model = "fake-chat".into();
    config.llm.context_tokens = a.window;
    let engine = Engine::with_config(&home, config, home.join("config.toml"), vec![])?;
    let started = Instant::now();
    let s = engine.index(&a.corpus, &IndexOptions::default(), &|_: &docdex::engine::protocol::IndexProgress| {})?;
    eprintln!("indexed {} files ({} chunks) in {:.2}s", s.files, s.chunks, started.elapsed().as_secs_f64());

    let ask = |q: &str| -> anyhow::Result<(ChatTurnResponse, f64)> {
        let t = Instant::now();
        let r = engine.chat(&a.corpus, &ChatTurnRequest { query: q.into(), ..Default::default() }, &mut |_| {
            ControlFlow::Continue(())
        })?;
        Ok((r, t.elapsed().as_secs_f64() * 1e3))
    };
    let (first, first_wall) = ask(&questions[0])?;
    let (mut search, mut retrieval, mut assembly, mut ttft, mut total, mut overhead) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut prompt_tokens, mut sources, mut drops) = (0u64, 0usize, 0usize);
    let (load_before, mut cpu) = (load(), 0.0);
    for _ in 0..a.rounds {
        for q in &questions {
            let t = Instant::now();
            engine.search(&a.corpus, &SearchRequest { query: q.clone(), limit: Some(20), ..Default::default() })?;
            search.push(t.elapsed().as_secs_f64() * 1e3);
            let c = cpu_ms();
            let (r, _) = ask(q)?;
            cpu += cpu_ms() - c;
            let tm = &r.trace.timings_ms;
            let first_token = tm.first_token.unwrap_or(tm.total);
            retrieval.push(tm.retrieval);
            assembly.push(tm.assembly);
            ttft.push(first_token);
            total.push(tm.total);
            overhead.push(first_token - tm.retrieval);
            prompt_tokens += u64::from(r.trace.budget.prompt_tokens);
            sources += r.sources.len();
            drops += r.trace.drops.len();
        }
    }
    let n = ttft.len().max(1);
    println!("| Measure | Value |");
    println!("|---|---|");
    println!("| Corpus | {} ({} files, {} chunks) |", a.corpus.display(), s.files, s.chunks);
    println!(
        "| Requests | {} ({} questions x {} rounds), window {} tokens, fake model with zero delay |",
        n,
        questions.len(),
        a.rounds,
        a.window
    );
    println!(
        "| Mean prompt | {} tokens, {:.1} sources, {:.1} drops per request |",
        prompt_tokens / n as u64,
        sources as f64 / n as f64,
        drops as f64 / n as f64
    );
    println!("| Search alone (engine.search, 20 hits) | {} |", summary(&mut search));
    println!("| Tier 1 inside chat | {} |", summary(&mut retrieval));
    println!("| Context assembly | {} |", summary(&mut assembly));
    println!("| Time to first token | {} |", summary(&mut ttft));
    println!("| Time to first token minus Tier 1 | {} |", summary(&mut overhead));
    println!("| Whole request (answer of ~20 tokens) | {} |", summary(&mut total));
    println!("| CPU time per request (all threads, fake server included) | {:.2} ms mean |", cpu / n as f64);
    println!(
        "| Load average (1 min) before / after | {load_before} / {} on {} cores |",
        load(),
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
    );
    let ft = &first.trace.timings_ms;
    let steps: Vec<String> =
        first.trace.steps.iter().filter(|s| s.ms >= 1.0).map(|s| format!("{} {:.1}", s.name, s.ms)).collect();
    println!(
        "| First request of the process | {:.1} ms wall: Tier 1 {:.1} ms (opens the index), assembly {:.1} ms (tokenizer load), first token {:.1} ms; steps over 1 ms: {} |",
        first_wall,
        ft.retrieval,
        ft.assembly,
        ft.first_token.unwrap_or(0.0),
        steps.join(", ")
    );
    if a.show_trace {
        let (last, _) = ask(&questions[questions.len() - 1])?;
        eprintln!("{}", serde_json::to_string_pretty(&last.trace)?);
    }
    let _ = std::fs::remove_dir_all(&home);
    Ok(())
}
