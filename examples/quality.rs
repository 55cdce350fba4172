//! Search-quality evaluation over `bench/quality/*.json`: plain-language task descriptions
//! against the files a fix would touch. Prints recall@5, recall@10 and MRR@10 over distinct
//! files, overall and per repo, plus the misses, so ranking changes can be judged.
//!
//! `cargo run --release --example quality -- bench/quality/python-stdlib.json [--verbose] [--compare]
//! [--home DIR] [--embedder URL[,MODEL]] [--fusion rrf|weighted] [--weights KEYWORD,SEMANTIC]`
//!
//! `--embedder` points `[llm]` at an Ollama-API server (e.g. `ollama-shim` serving all-minilm)
//! so the index is embedded and search is hybrid; `--home` keeps the index and its embeddings
//! between runs (embedding is the slow part); `--fusion` and `--weights` set how the two
//! rankings are fused.
//!
//! `--compare` also scores the same index with the symbol and AST ranking signals off, each
//! alone, and both on (the `[search]` flags), one line per setting.

use docdex::config::Config;
use docdex::engine::protocol::SearchRequest;
use docdex::engine::IndexOptions;
use docdex::Engine;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Deserialize)]
struct Dataset {
    repo_root_hint: Option<String>,
    queries: Vec<Query>,
}

#[derive(Deserialize)]
struct Query {
    id: String,
    query: String,
    targets: Vec<String>,
    repo_root_hint: Option<String>,
}

#[derive(Default)]
struct Score {
    n: usize,
    r5: f64,
    r10: f64,
    mrr: f64,
}

impl Score {
    fn add(&mut self, files: &[String], targets: &[String]) {
        let found = |k: usize| {
            targets.iter().filter(|t| files.iter().take(k).any(|f| f == *t)).count() as f64 / targets.len() as f64
        };
        self.n += 1;
        self.r5 += found(5);
        self.r10 += found(10);
        if let Some(rank) = files.iter().take(10).position(|f| targets.contains(f)) {
            self.mrr += 1.0 / (rank as f64 + 1.0);
        }
    }
    fn line(&self, name: &str) -> String {
        let n = self.n.max(1) as f64;
        format!(
            "{name:<28} n={:<3} recall@5={:.3} recall@10={:.3} MRR@10={:.3}",
            self.n,
            self.r5 / n,
            self.r10 / n,
            self.mrr / n
        )
    }
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let verbose = args.iter().any(|a| a == "--verbose");
    let keep = option(&args, "--home").map(PathBuf::from);
    let home =
        keep.clone().unwrap_or_else(|| std::env::temp_dir().join(format!("docdex-quality-{}", std::process::id())));
    let mut config = Config::default();
    config.index.exclude = vec!["site-packages/".into()];
    // `--embedder URL[,MODEL]`: an Ollama-API server for hybrid search (the model defaults to
    // all-minilm, what ollama-shim serves); without it nothing answers and search is BM25 only.
    if let Some(e) = option(&args, "--embedder") {
        let mut it = e.splitn(2, ',');
        config.llm.base_url = it.next().unwrap_or_default().to_string();
        config.llm.embedding_model = it.next().unwrap_or("all-minilm").to_string();
    }
    // `--fusion rrf|weighted`: how hybrid search fuses the two rankings.
    if let Some(f) = option(&args, "--fusion") {
        config.search.fusion = match f.as_str() {
            "rrf" => docdex::config::Fusion::Rrf,
            "weighted" => docdex::config::Fusion::Weighted,
            other => anyhow::bail!("--fusion takes rrf or weighted, not {other}"),
        };
    }
    // `--weights KEYWORD,SEMANTIC`: the hybrid fusion weights.
    if let Some(w) = option(&args, "--weights") {
        let v: Vec<f64> = w.split(',').filter_map(|x| x.parse().ok()).collect();
        anyhow::ensure!(v.len() == 2, "--weights takes KEYWORD,SEMANTIC");
        config.search.keyword_weight = v[0];
        config.search.semantic_weight = v[1];
    }
    // Ranking flags from the environment (DOCDEX_SYMBOL_RANKING_ENABLED=0, ...), for comparisons.
    for w in config.apply_env(|k| std::env::var(k).ok()) {
        eprintln!("{w}");
    }
    let engine = Engine::with_config(&home, config, home.join("config.toml"), vec![])?;
    let mut total = Score::default();
    for file in datasets(&args) {
        let data: Dataset = serde_json::from_slice(&std::fs::read(file)?)?;
        let mut per_repo: BTreeMap<String, Score> = BTreeMap::new();
        let mut indexed: Vec<PathBuf> = Vec::new();
        for q in &data.queries {
            let root = PathBuf::from(q.repo_root_hint.clone().or(data.repo_root_hint.clone()).unwrap_or_default());
            if !indexed.contains(&root) {
                // `--plain`: the text-only index (no Tree-sitter pass), for comparing chunkings.
                let opts = IndexOptions { skip_code: args.iter().any(|a| a == "--plain"), ..Default::default() };
                let s = engine.index(&root, &opts, &|_: &docdex::engine::protocol::IndexProgress| {})?;
                eprintln!("indexed {} ({} files, {:.2}s)", root.display(), s.files, s.seconds);
                indexed.push(root.clone());
            }
            let req = SearchRequest { query: q.query.clone(), limit: Some(60), ..Default::default() };
            let resp = engine.search(&root, &req)?;
            let mut files: Vec<String> = Vec::new();
            for h in resp.results {
                if !files.contains(&h.path) {
                    files.push(h.path);
                }
            }
            let name = Path::new(&root).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            per_repo.entry(name).or_default().add(&files, &q.targets);
            total.add(&files, &q.targets);
            let hit = files.iter().take(10).position(|f| q.targets.contains(f));
            if verbose || hit.is_none() {
                println!(
                    "{} {} [{}] {}",
                    q.id,
                    hit.map(|r| format!("rank {}", r + 1)).unwrap_or_else(|| "MISS".into()),
                    q.targets.join(", "),
                    q.query
                );
                if verbose || hit.is_none() {
                    println!("     top: {}", files.iter().take(5).cloned().collect::<Vec<_>>().join(", "));
                }
            }
        }
        for (name, s) in &per_repo {
            println!("{}", s.line(name));
        }
    }
    println!("{}", total.line("ALL"));
    if args.iter().any(|a| a == "--compare") {
        compare(&home, &args)?;
    }
    if keep.is_none() {
        let _ = std::fs::remove_dir_all(&home);
    }
    Ok(())
}

/// The dataset files: the arguments that are neither options nor an option's value.
fn datasets(args: &[String]) -> Vec<&String> {
    let mut out = Vec::new();
    let mut skip = false;
    for a in args {
        if std::mem::take(&mut skip) {
            continue;
        }
        if VALUE_OPTIONS.contains(&a.as_str()) {
            skip = true;
        } else if !a.starts_with("--") {
            out.push(a);
        }
    }
    out
}

/// Options that take a value as the next argument.
const VALUE_OPTIONS: &[&str] = &["--home", "--embedder", "--weights", "--fusion"];

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

/// Scores every query under each ranking-signal setting, over the index built above.
fn compare(home: &Path, args: &[String]) -> anyhow::Result<()> {
    for (name, symbols, ast) in [
        ("signals off", false, false),
        ("symbol ranking only", true, false),
        ("AST (defs) ranking only", false, true),
        ("both on (default)", true, true),
    ] {
        let mut config = Config::default();
        config.index.exclude = vec!["site-packages/".into()];
        config.search.symbol_ranking_enabled = symbols;
        config.search.ast_ranking_enabled = ast;
        let engine = Engine::with_config(home, config, home.join("config.toml"), vec![])?;
        let mut total = Score::default();
        for file in datasets(args) {
            let data: Dataset = serde_json::from_slice(&std::fs::read(file)?)?;
            for q in &data.queries {
                let root = PathBuf::from(q.repo_root_hint.clone().or(data.repo_root_hint.clone()).unwrap_or_default());
                let req = SearchRequest { query: q.query.clone(), limit: Some(60), ..Default::default() };
                let mut files: Vec<String> = Vec::new();
                for h in engine.search(&root, &req)?.results {
                    if !files.contains(&h.path) {
                        files.push(h.path);
                    }
                }
                total.add(&files, &q.targets);
            }
        }
        println!("{}", total.line(name));
    }
    Ok(())
}
