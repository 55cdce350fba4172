//! Does a query that names a symbol find its definition? Indexes a corpus, then for symbol
//! names (the identifier queries of `docdex bench` that the corpus defines, plus a fixed sample
//! of the corpus's own type and function names) searches with the symbol and AST ranking
//! signals off and on, and reports where the first chunk holding a definition of the name
//! ranks: share at rank 1, recall@10 and MRR@10.
//!
//! `cargo run --release --example definitions -- CORPUS [--sample N] [--verbose]`

use docdex::config::Config;
use docdex::engine::code::store::{norm, SymbolReader};
use docdex::engine::protocol::SearchRequest;
use docdex::engine::IndexOptions;
use docdex::Engine;
use std::path::PathBuf;

#[derive(Default)]
struct Score {
    n: usize,
    first: usize,
    r10: usize,
    mrr: f64,
}

impl Score {
    fn add(&mut self, rank: Option<usize>) {
        self.n += 1;
        if let Some(r) = rank {
            self.first += usize::from(r == 0);
            self.r10 += usize::from(r < 10);
            self.mrr += 1.0 / (r as f64 + 1.0);
        }
    }
    fn line(&self, name: &str) -> String {
        let n = self.n.max(1) as f64;
        format!(
            "{name:<34} n={:<4} rank1={:.3} recall@10={:.3} MRR@10={:.3}",
            self.n,
            self.first as f64 / n,
            self.r10 as f64 / n,
            self.mrr / n
        )
    }
}

fn engine(home: &std::path::Path, symbols: bool, ast: bool) -> anyhow::Result<Engine> {
    let mut config = Config::default();
    config.search.symbol_ranking_enabled = symbols;
    config.search.ast_ranking_enabled = ast;
    Ok(Engine::with_config(home, config, home.join("config.toml"), vec![])?)
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let corpus = PathBuf::from(args.iter().find(|a| !a.starts_with("--")).ok_or_else(|| anyhow::anyhow!("corpus?"))?);
    let verbose = args.iter().any(|a| a == "--verbose");
    let sample: usize = args
        .iter()
        .position(|a| a == "--sample")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let home = std::env::temp_dir().join(format!("docdex-definitions-{}", std::process::id()));
    let on = engine(&home, true, true)?;
    let s = on.index(&corpus, &IndexOptions::default(), &|_: &docdex::engine::protocol::IndexProgress| {})?;
    eprintln!("indexed {} ({} files, {:.2}s)", corpus.display(), s.files, s.seconds);
    let repo = on.resolve_repo(&corpus)?;
    let reader = SymbolReader::open(&repo)?.ok_or_else(|| anyhow::anyhow!("no symbols.db"))?;

    // Queries: bench identifiers defined in the corpus, then a fixed sample of its own names.
    let mut queries: Vec<(String, &str)> = docdex::cli::bench_queries()
        .iter()
        .filter(|q| !q.contains(' ') && !q.contains('/'))
        .map(|q| (q.to_string(), "bench identifiers"))
        .collect();
    let mut stmt = reader.conn().prepare(
        "SELECT name FROM symbols WHERE kind IN ('class','struct','function','method','trait','interface','enum')
         GROUP BY norm HAVING COUNT(*) <= 3 ORDER BY norm",
    )?;
    let names: Vec<String> = stmt.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?;
    let step = (names.len() / sample.max(1)).max(1);
    queries.extend(names.iter().step_by(step).take(sample).map(|n| (n.clone(), "sampled corpus names")));

    let configs = [
        ("signals off", engine(&home, false, false)?),
        ("symbol ranking only", engine(&home, true, false)?),
        ("AST (defs) ranking only", engine(&home, false, true)?),
        ("both on (default)", on),
    ];
    let mut scores: Vec<std::collections::BTreeMap<&str, Score>> = configs.iter().map(|_| Default::default()).collect();
    for (q, set) in &queries {
        let defs = docdex::engine::code::query::definitions(&reader, &norm(q), 65)?;
        if defs.is_empty() || defs.len() > 64 {
            continue;
        }
        for (i, (name, e)) in configs.iter().enumerate() {
            let req = SearchRequest { query: q.clone(), limit: Some(10), ..Default::default() };
            let resp = e.search(&corpus, &req)?;
            let rank = resp.results.iter().position(|h| {
                defs.iter().any(|d| d.path == h.path && d.line_start >= h.line_start && d.line_start <= h.line_end)
            });
            if verbose && i == 3 && rank != Some(0) {
                println!("{name}: {q} -> {rank:?} (defined in {})", defs[0].path);
            }
            scores[i].entry(set).or_default().add(rank);
        }
    }
    for (i, (name, _)) in configs.iter().enumerate() {
        println!("== {name}");
        for (set, s) in &scores[i] {
            println!("  {}", s.line(set));
        }
    }
    let _ = std::fs::remove_dir_all(&home);
    Ok(())
}
