//! The eval-dev set (`../shared/eval-dev/`) in process: index each project once (kept under
//! `--home`), run its queries through `Engine::search`, and print R@1, R@5, R@10 and MRR@10
//! per project and per split, the way `score.py` scores a `docdex search --limit 10` command
//! (several hits in one file count once, at the rank of the first).
//!
//! `cargo run --profile tune --example devset -- [--split tune|held|all] [--home DIR]
//! [--sources DIR] [--queries DIR] [--limit N] [--verbose] [--embedder URL[,MODEL]]
//! [--fusion rrf|weighted] [--weights KEYWORD,SEMANTIC] [--no-hybrid] [--json-out FILE]`
//!
//! The split is fixed (docs/SEARCH.md): ranking is tuned on pytest, celery, hyper and eslint;
//! rich, clap, tantivy and fastify are held out. Per-query lines (`--verbose`) are printed for
//! tuning projects only, so held-out queries are never looked at while tuning.

use docdex::config::Config;
use docdex::engine::eval::{self, EvalQuery, Metrics};
use docdex::engine::protocol::SearchRequest;
use docdex::engine::IndexOptions;
use docdex::Engine;
use std::path::PathBuf;
use std::time::Instant;

/// Projects ranking is tuned on (one or more per ecosystem).
const TUNE: &[&str] = &["pytest", "celery", "hyper", "eslint"];
/// Projects held out from tuning (one or more per ecosystem).
const HELD: &[&str] = &["rich", "clap", "tantivy", "fastify"];

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let split = option(&args, "--split").unwrap_or_else(|| "tune".into());
    let projects: Vec<&str> = match split.as_str() {
        "tune" => TUNE.to_vec(),
        "held" => HELD.to_vec(),
        "all" => TUNE.iter().chain(HELD).copied().collect(),
        other => other.split(',').collect(),
    };
    let verbose = args.iter().any(|a| a == "--verbose");
    let sources = PathBuf::from(option(&args, "--sources").unwrap_or_else(|| "/work/devset".into()));
    let queries = PathBuf::from(option(&args, "--queries").unwrap_or_else(|| "/work/shared/eval-dev/queries".into()));
    let home = PathBuf::from(option(&args, "--home").unwrap_or_else(|| "/tmp/docdex-devset-home".into()));
    let limit: usize = option(&args, "--limit").map(|l| l.parse()).transpose()?.unwrap_or(10);
    let mut config = Config::default();
    if let Some(e) = option(&args, "--embedder") {
        let mut it = e.splitn(2, ',');
        config.llm.base_url = it.next().unwrap_or_default().to_string();
        config.llm.embedding_model = it.next().unwrap_or("all-minilm").to_string();
    } else {
        // No embedder: nothing answers, so search is BM25 only and indexing embeds nothing.
        config.llm.base_url = "http://127.0.0.1:9".into();
    }
    if let Some(f) = option(&args, "--fusion") {
        config.search.fusion = match f.as_str() {
            "rrf" => docdex::config::Fusion::Rrf,
            "weighted" => docdex::config::Fusion::Weighted,
            other => anyhow::bail!("--fusion takes rrf or weighted, not {other}"),
        };
    }
    if let Some(w) = option(&args, "--weights") {
        let v: Vec<f64> = w.split(',').filter_map(|x| x.parse().ok()).collect();
        anyhow::ensure!(v.len() == 2, "--weights takes KEYWORD,SEMANTIC");
        config.search.keyword_weight = v[0];
        config.search.semantic_weight = v[1];
    }
    if args.iter().any(|a| a == "--no-hybrid") {
        config.search.hybrid = false;
    }
    for w in config.apply_env(|k| std::env::var(k).ok()) {
        eprintln!("{w}");
    }
    let engine = Engine::with_config(&home, config, home.join("config.toml"), vec![])?;
    let mut json_out = match option(&args, "--json-out") {
        Some(p) => Some(std::fs::File::create(p)?),
        None => None,
    };
    let mut total = Metrics::default();
    let (mut tune_total, mut held_total) = (Metrics::default(), Metrics::default());
    let mut rows = Vec::new();
    let t_all = Instant::now();
    for name in &projects {
        let root = sources.join(name);
        let s = engine.index(&root, &IndexOptions::default(), &|_: &docdex::engine::protocol::IndexProgress| {})?;
        if s.added + s.updated > 0 {
            eprintln!("indexed {name}: {} files, {:.2}s", s.files, s.seconds);
        }
        let set: Vec<EvalQuery> = eval::read_queries(&queries.join(format!("{name}.jsonl")))?;
        let mut m = Metrics::default();
        let t = Instant::now();
        for q in &set {
            let req = SearchRequest { query: q.query.clone(), limit: Some(limit), ..Default::default() };
            let resp = engine.search(&root, &req)?;
            let files = eval::file_ranking(resp.results.iter().map(|h| h.path.as_str()));
            let outcome = eval::score_query(q, files);
            if verbose && TUNE.contains(name) {
                println!("{} {:.2} {:.2} {}", q.id, outcome.recall(10), outcome.reciprocal_rank, q.query);
                println!("    gold {:?} ranks {:?}", q.gold, outcome.gold_ranks);
                println!("    top  {}", outcome.ranking.iter().take(5).cloned().collect::<Vec<_>>().join(", "));
            }
            if let Some(f) = json_out.as_mut() {
                use std::io::Write;
                writeln!(f, "{}", serde_json::to_string(&outcome)?)?;
            }
            m.add(&outcome);
        }
        let ms = t.elapsed().as_secs_f64() * 1000.0 / set.len().max(1) as f64;
        rows.push(format!("{}  {ms:.2} ms/query", m.row(name)));
        total.merge(&m);
        if TUNE.contains(name) {
            tune_total.merge(&m);
        } else if HELD.contains(name) {
            held_total.merge(&m);
        }
    }
    println!("{}", Metrics::header());
    for r in rows {
        println!("{r}");
    }
    if tune_total.n > 0 && held_total.n > 0 {
        println!("{}", tune_total.row("tune"));
        println!("{}", held_total.row("held-out"));
    }
    println!("{}", total.row("overall"));
    eprintln!("{:.1}s", t_all.elapsed().as_secs_f64());
    Ok(())
}

/// The value after `--name` (or in `--name=value`).
fn option(args: &[String], name: &str) -> Option<String> {
    let prefix = format!("{name}=");
    args.iter().enumerate().find_map(|(i, a)| {
        if a == name {
            args.get(i + 1).cloned()
        } else {
            a.strip_prefix(&prefix).map(str::to_string)
        }
    })
}
