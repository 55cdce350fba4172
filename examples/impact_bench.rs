//! Impact-graph benchmark: import extraction per language, graph build time and edges per
//! second, the share of unresolved imports, storage size and load time, and query latency, on
//! real source trees.
//!
//! ```sh
//! cargo run --release --example impact_bench -- ~/.cargo/registry/src/*/ /root/.pyenv/versions/3.11.7/lib/python3.11
//! ```
//!
//! Each argument is one corpus, treated as one repository (walked with the indexer's rules).
//! Figures go in `docs/PERFORMANCE.md`.

use docdex::config::IndexConfig;
use docdex::engine::code::graph::{self, FileImports};
use docdex::engine::code::impact::{Direction, LoadedGraph};
use docdex::engine::code::{imports, lang, Lang};
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

fn main() {
    let corpora: Vec<PathBuf> = std::env::args().skip(1).map(PathBuf::from).collect();
    if corpora.is_empty() {
        eprintln!("usage: impact_bench DIR [DIR...]");
        std::process::exit(2);
    }
    println!(
        "Machine: {}, {} threads; {}; load average at start {}",
        cpu_model(),
        rayon::current_num_threads(),
        date(),
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().split(' ').take(3).collect::<Vec<_>>().join(" ")
    );
    for dir in corpora {
        bench(&dir);
    }
}

fn bench(root: &Path) {
    println!("\n## {}\n", root.display());
    let t = Instant::now();
    let walked = docdex::engine::index::walk::walk(root, &IndexConfig::default(), 0);
    let all: Vec<String> = walked.files.iter().map(|c| c.rel.clone()).collect();
    let walk_s = t.elapsed().as_secs_f64();

    // Per-file extraction, as the indexing pipeline does it: read, parse, extract. For tuning
    // loops, IMPACT_BENCH_CACHE=DIR reuses the extracted imports of an earlier run.
    let cache = std::env::var("IMPACT_BENCH_CACHE").ok().map(|d| {
        PathBuf::from(d).join(format!(
            "{}.imports.json",
            root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
        ))
    });
    if let Some(files) = cache
        .as_ref()
        .and_then(|c| std::fs::read(c).ok())
        .and_then(|b| serde_json::from_slice::<Vec<FileImports>>(&b).ok())
    {
        println!("(imports from the cache, parse not measured)");
        build_and_query(root, &all, files, walk_s, None);
        return;
    }
    let t = Instant::now();
    let results: Vec<(FileImports, f64, f64)> = all
        .par_iter()
        .filter_map(|rel| {
            let lang = Lang::from_path(Path::new(rel))?;
            let bytes = std::fs::read(root.join(rel)).ok()?;
            let text = String::from_utf8_lossy(&bytes);
            let p = Instant::now();
            let tree = lang::parse(lang, &text)?;
            let parse = p.elapsed().as_secs_f64();
            let e = Instant::now();
            let imports = imports::extract(lang, &tree, &text);
            let extract = e.elapsed().as_secs_f64();
            Some((FileImports { path: rel.clone(), lang, imports }, parse, extract))
        })
        .collect();
    let extract_wall = t.elapsed().as_secs_f64();
    let mut per_lang: LangFigures = BTreeMap::new();
    for (f, parse, extract) in &results {
        let e = per_lang.entry(f.lang.name()).or_default();
        e.0 += 1;
        e.1 += parse;
        e.2 += extract;
        e.3 += f.imports.len();
    }
    let files: Vec<FileImports> = results.into_iter().map(|(f, _, _)| f).collect();
    if let Some(c) = &cache {
        let _ = std::fs::write(c, serde_json::to_vec(&files).unwrap_or_default());
    }
    build_and_query(root, &all, files, walk_s, Some((extract_wall, per_lang)));
}

/// Per-language extraction figures: (files, parse CPU s, extract CPU s, imports).
type LangFigures = BTreeMap<&'static str, (usize, f64, f64, usize)>;

fn build_and_query(
    root: &Path,
    all: &[String],
    files: Vec<FileImports>,
    walk_s: f64,
    extraction: Option<(f64, LangFigures)>,
) {
    let known: BTreeSet<String> = all.iter().cloned().collect();

    // The resolver's indexes alone (part of every build).
    let t = Instant::now();
    let resolver = docdex::engine::code::resolve::Resolver::new(root, &files, &known);
    let resolver_s = t.elapsed().as_secs_f64();
    drop(resolver);

    // The graph build (resolution, map, cycles), several runs.
    let mut runs = Vec::new();
    let mut cpu = Vec::new();
    let mut g = graph::build(root, &files, &known, &Default::default());
    for _ in 0..5 {
        let (t, c) = (Instant::now(), cpu_seconds());
        g = graph::build(root, &files, &known, &Default::default());
        runs.push(t.elapsed().as_secs_f64());
        cpu.push(cpu_seconds() - c);
    }
    runs.sort_by(f64::total_cmp);
    cpu.sort_by(f64::total_cmp);
    let build_s = runs[runs.len() / 2];
    let build_cpu = cpu[cpu.len() / 2];
    let t = Instant::now();
    std::hint::black_box(graph::find_cycles(&g.edges));
    let cycles_s = t.elapsed().as_secs_f64();

    let tmp = std::env::temp_dir().join(format!("impact_bench_{}.json", std::process::id()));
    let t = Instant::now();
    graph::save(&tmp, &g).expect("save");
    let save_s = t.elapsed().as_secs_f64();
    let size = std::fs::metadata(&tmp).map(|m| m.len()).unwrap_or(0);
    let t = Instant::now();
    let loaded = LoadedGraph::new(graph::load(&tmp).expect("load").expect("graph"));
    let load_s = t.elapsed().as_secs_f64();
    if let Ok(keep) = std::env::var("IMPACT_BENCH_KEEP") {
        let _ = std::fs::copy(
            &tmp,
            format!("{keep}/{}.json", root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()),
        );
    }
    let _ = std::fs::remove_file(&tmp);

    // Queries: impact at depth 2 and one-hop neighbours for a spread of files.
    let ids: Vec<&String> = loaded.graph.files.keys().step_by((loaded.graph.files.len() / 300).max(1)).collect();
    let mut lat = Vec::new();
    for id in &ids {
        let t = Instant::now();
        let r = loaded.impact(id, 2, Direction::Both);
        std::hint::black_box(&r);
        lat.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    lat.sort_by(f64::total_cmp);
    let pct = |p: f64| lat.get(((lat.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or(0.0);

    let s = &g.stats;
    let all_edges = s.edges + s.external_edges;
    println!("| Measure | Value |\n|---|---|");
    println!("| Files walked / code files | {} / {} (walk {:.2} s) |", all.len(), files.len(), walk_s);
    if let Some((extract_wall, _)) = &extraction {
        println!(
            "| Read + parse + extract, wall ({} threads) | {:.2} s ({:.0} files/s) |",
            rayon::current_num_threads(),
            extract_wall,
            files.len() as f64 / extract_wall
        );
    }
    println!("| Imports (declarations excluded) | {} |", s.imports);
    println!(
        "| Edges | {} file edges + {} external = {}; by method {:?} |",
        s.edges, s.external_edges, all_edges, s.by_method
    );
    println!(
        "| Unresolved | {} = {:.1} % of imports ({}) |",
        s.unresolved,
        100.0 * s.unresolved as f64 / s.imports.max(1) as f64,
        by_code(&g)
    );
    println!(
        "| Cycles | {} ({} files in cycles) |",
        g.cycles.len(),
        g.cycles.iter().map(|c| c.files.len()).sum::<usize>()
    );
    println!(
        "| Graph build (median of 5) | {:.1} ms wall, {:.1} ms CPU (resolver indexes {:.1} ms, cycles {:.1} ms) = {:.0} edges/s, {:.0} imports/s |",
        build_s * 1000.0,
        build_cpu * 1000.0,
        resolver_s * 1000.0,
        cycles_s * 1000.0,
        all_edges as f64 / build_s,
        s.imports as f64 / build_s
    );
    println!(
        "| impact_graph.json | {:.1} MiB, save {:.0} ms, load + index {:.0} ms |",
        size as f64 / 1048576.0,
        save_s * 1000.0,
        load_s * 1000.0
    );
    println!(
        "| impact query (depth 2, both), {} files | p50 {:.3} / p95 {:.3} / max {:.3} ms |",
        lat.len(),
        pct(0.5),
        pct(0.95),
        pct(1.0)
    );
    if let Some((_, per_lang)) = extraction {
        println!("\n| Language | Files | Parse (CPU s) | Extract (CPU s) | Files/s (parse + extract, one thread) | Imports |\n|---|---|---|---|---|---|");
        for (l, (n, parse, extract, imports)) in per_lang {
            println!("| {l} | {n} | {parse:.2} | {extract:.3} | {:.0} | {imports} |", n as f64 / (parse + extract));
        }
    }
    if !g.warnings.is_empty() {
        println!("\nwarnings: {} (first: {})", g.warnings.len(), g.warnings[0]);
    }
    let mut sample: Vec<String> = g
        .diagnostics
        .iter()
        .filter(|d| d.code != graph::DiagnosticCode::Dynamic)
        .take(8)
        .map(|d| format!("{}:{} {} ({})", d.source, d.line, d.spec, d.reason))
        .collect();
    sample.truncate(8);
    if !sample.is_empty() {
        println!("\nsample not-found diagnostics:");
        for d in sample {
            println!("- {d}");
        }
    }
}

fn by_code(g: &graph::ImpactGraph) -> String {
    let mut m: BTreeMap<String, usize> = BTreeMap::new();
    for d in &g.diagnostics {
        *m.entry(d.code.name().to_string()).or_default() += 1;
    }
    m.iter().map(|(k, v)| format!("{v} {k}")).collect::<Vec<_>>().join(", ")
}

/// CPU time of the whole process so far (user + system), seconds.
fn cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given; RUSAGE_SELF is always valid.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

fn date() -> String {
    std::process::Command::new("date")
        .arg("+%Y-%m-%d")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}
