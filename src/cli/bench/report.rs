//! The bench's figures, the targets they are judged against, and how they are printed
//! (a human table, the Markdown block for `docs/PERFORMANCE.md`, or `--json`).

use super::corpus::CorpusInfo;
use super::machine::Machine;
use super::peers::{self, PeerFigures};
use super::watch_latency::WatchFigures;
use crate::cli::output::Out;
use serde::Serialize;

/// The whole report (`--json` prints it).
#[derive(Debug, Serialize)]
pub(super) struct Report {
    pub(super) date: String,
    pub(super) docdex_version: &'static str,
    pub(super) build: &'static str,
    pub(super) machine: Machine,
    /// CPU used by other processes during the run, as % of the machine (from `/proc/stat`);
    /// above a few percent the figures are contended and should be re-run.
    pub(super) other_cpu_pct: Option<f64>,
    pub(super) corpus: CorpusInfo,
    pub(super) index: IndexFigures,
    pub(super) code: CodeFigures,
    pub(super) search: SearchFigures,
    pub(super) process: Option<ProcessFigures>,
    pub(super) ripgrep: RgFigures,
    /// The peers' first index of the same corpus (time to their searchable index).
    pub(super) peers: Vec<PeerFigures>,
    /// Save-to-searchable latency under `docdex watch` (only on a copied corpus: it writes files).
    pub(super) watch: Option<WatchFigures>,
    pub(super) targets: Vec<Target>,
    pub(super) markdown: String,
}

/// Indexing figures.
#[derive(Debug, Serialize)]
pub(super) struct IndexFigures {
    pub(super) files: u64,
    pub(super) chunks: u64,
    pub(super) skipped: usize,
    pub(super) errors: usize,
    pub(super) bytes_read: u64,
    /// Bytes of the files that made it into the index (text only).
    pub(super) indexed_bytes: u64,
    /// The whole first index: text, symbols, graph.
    pub(super) first_s: f64,
    /// When the first index had every file searchable (after its text pass on a large tree).
    pub(super) searchable_s: f64,
    /// When its first commit made the first files searchable.
    pub(super) first_answer_s: f64,
    /// Indexed (text) MiB per second of the first index.
    pub(super) mib_per_s: f64,
    pub(super) files_per_s: f64,
    pub(super) phases: Phases,
    pub(super) reindex_s: f64,
    pub(super) reindex_unchanged: u64,
    pub(super) reindex_pct_of_first: f64,
    pub(super) walk_only_s: f64,
    pub(super) index_bytes: u64,
    pub(super) peak_rss_reset: bool,
    pub(super) peak_rss_before_index_mib: f64,
    pub(super) peak_rss_after_index_mib: f64,
    pub(super) peak_rss_end_mib: f64,
}

/// The code pass of the first index against a plain (text-only) index of the same corpus.
#[derive(Debug, Serialize, Default)]
pub(super) struct CodeFigures {
    /// Fastest of two plain rebuilds (no Tree-sitter pass), timed like the first index.
    pub(super) plain_first_s: f64,
    /// CPU time (user + system, all threads) of that plain rebuild.
    pub(super) plain_cpu_s: f64,
    /// CPU time of the first index with the code pass.
    pub(super) full_cpu_s: f64,
    /// CPU over CPU: the ratio that a busy machine does not distort.
    pub(super) cpu_ratio_to_plain: f64,
    /// First index with the code pass over the plain one (target < 2).
    pub(super) ratio_to_plain: f64,
    /// Share of the first index's wall time the code pass adds: (full - plain) / full.
    pub(super) added_share_pct: f64,
    pub(super) files_parsed: u64,
    pub(super) files_not_parsed: u64,
    pub(super) files_with_parse_errors: u64,
    pub(super) symbols: u64,
    /// Parse + extraction time summed over worker threads.
    pub(super) extract_cpu_s: f64,
    /// Writing `symbols.db` on the writer thread.
    pub(super) store_s: f64,
    /// The impact-graph rebuild call.
    pub(super) graph_s: Option<f64>,
    pub(super) symbols_db_bytes: u64,
    pub(super) languages: Vec<LanguageFigures>,
    /// Warm search with the symbol and AST ranking signals on (default) and off, the same
    /// queries interleaved so both see the same machine.
    pub(super) search_signals_on: Latency,
    pub(super) search_signals_off: Latency,
}

/// Parse rate of one language (CPU time on one worker thread).
#[derive(Debug, Serialize)]
pub(super) struct LanguageFigures {
    pub(super) lang: String,
    pub(super) files: u64,
    pub(super) mib: f64,
    pub(super) cpu_s: f64,
    pub(super) files_per_cpu_s: f64,
    pub(super) mib_per_cpu_s: f64,
}

/// Where the first index's time went, from the progress sink's phase changes.
#[derive(Debug, Serialize, Default)]
pub(super) struct Phases {
    pub(super) open_walk_diff_s: f64,
    pub(super) read_chunk_add_s: f64,
    pub(super) commit_s: f64,
    /// Commits of the run (one per batch of about 256 MB).
    pub(super) commits: u32,
    pub(super) finish_merge_s: f64,
}

/// Warm in-process search latency.
#[derive(Debug, Serialize)]
pub(super) struct SearchFigures {
    pub(super) queries: usize,
    pub(super) rounds: usize,
    pub(super) latency: Latency,
    pub(super) queries_with_hits: usize,
    pub(super) engine_mean_search_ms: f64,
    pub(super) engine_mean_rank_ms: f64,
    pub(super) engine_mean_snippets_ms: f64,
    /// The slowest queries by their median over the rounds (ms), slowest first: where the
    /// p95 comes from.
    pub(super) slowest: Vec<(String, f64)>,
}

/// Whole-process latency of `docdex search --json`.
#[derive(Debug, Serialize)]
pub(super) struct ProcessFigures {
    pub(super) queries: usize,
    pub(super) failures: usize,
    pub(super) latency: Latency,
    /// `docdex --version` spawned the same number of times: the floor of any docdex process.
    pub(super) startup_floor: Latency,
}

/// The ripgrep comparison on the same sampled queries.
#[derive(Debug, Serialize, Default)]
pub(super) struct RgFigures {
    pub(super) available: bool,
    pub(super) note: String,
    pub(super) version: String,
    pub(super) command: String,
    pub(super) queries: usize,
    pub(super) latency: Option<Latency>,
    pub(super) rg_total_s: f64,
    pub(super) docdex_in_process_total_s: f64,
    pub(super) docdex_process_total_s: f64,
    pub(super) speedup_in_process: f64,
    pub(super) speedup_process: f64,
}

/// Latency percentiles in milliseconds.
#[derive(Debug, Serialize, Clone, Default)]
pub(super) struct Latency {
    pub(super) samples: usize,
    pub(super) p50_ms: f64,
    pub(super) p95_ms: f64,
    pub(super) p99_ms: f64,
    pub(super) mean_ms: f64,
    pub(super) max_ms: f64,
}

/// One target and whether it was met (`None` when it does not apply).
#[derive(Debug, Serialize)]
pub(super) struct Target {
    pub(super) name: String,
    pub(super) target: String,
    pub(super) value: String,
    pub(super) pass: Option<bool>,
}

// ---------------------------------------------------------------- targets and output

/// The 5,000-file / 14 MB indexing target applies to corpora up to this size.
pub(super) const SMALL_CORPUS_FILES: u64 = 5_000;

pub(super) const SMALL_CORPUS_BYTES: u64 = 15 * 1024 * 1024;

pub(super) fn target(name: &str, target: &str, value: String, pass: Option<bool>) -> Target {
    Target { name: name.into(), target: target.into(), value, pass }
}

pub(super) fn targets(r: &Report) -> Vec<Target> {
    let i = &r.index;
    let small = i.files <= SMALL_CORPUS_FILES && i.indexed_bytes <= SMALL_CORPUS_BYTES;
    let mut t = vec![
        target(
            "Warm search p95 (in-process)",
            "< 5 ms",
            format!("{:.2} ms", r.search.latency.p95_ms),
            Some(r.search.latency.p95_ms < 5.0),
        ),
        match &r.process {
            Some(p) => target(
                "Search p95 (whole process)",
                "< 10 ms",
                format!("{:.2} ms", p.latency.p95_ms),
                Some(p.latency.p95_ms < 10.0 && p.failures == 0),
            ),
            None => target("Search p95 (whole process)", "< 10 ms", "not run".into(), None),
        },
    ];
    let rg = &r.ripgrep;
    let speed =
        |x: f64| if rg.available && x > 0.0 { (format!("{x:.1}x"), Some(x >= 20.0)) } else { ("not run".into(), None) };
    let (v, p) = speed(rg.speedup_process);
    t.push(target("vs rg scan (whole process, same queries)", ">= 20x", v, p));
    let (v, p) = speed(rg.speedup_in_process);
    t.push(target("vs rg scan (in-process, same queries)", ">= 20x", v, p));
    // Issue 2's target is for the plain (text-only) index; the code pass has its own ratio target.
    let plain_s = if r.code.plain_first_s > 0.0 { r.code.plain_first_s } else { i.first_s };
    let idx_pass = small.then_some(plain_s < 0.5);
    let idx_target = if small { "< 0.5 s (5,000 files / 14 MB)" } else { "n/a (target is for 5,000 files / 14 MB)" };
    t.push(target("First index, plain (text only)", idx_target, format!("{plain_s:.2} s"), idx_pass));
    let c = &r.code;
    if c.plain_first_s > 0.0 {
        // Retired as a goal: indexing is judged by time to a searchable index against the
        // peers (below); the ratio stays as a figure of what the code pass costs.
        t.push(target(
            "Index with symbols and graph / plain index",
            "retired (was < 2x)",
            format!(
                "{:.2}x ({:.2} s / {:.2} s); CPU {:.2}x ({:.2} / {:.2} CPU-s)",
                c.ratio_to_plain, i.first_s, c.plain_first_s, c.cpu_ratio_to_plain, c.full_cpu_s, c.plain_cpu_s
            ),
            None,
        ));
    }
    if let Some(both) = peers::together(&r.peers) {
        t.push(target(
            "Time to a searchable index / ctags + cindex",
            "reported (they build less: no ranking, no graph)",
            format!("{:.2}x ({:.2} s / {:.2} s)", i.searchable_s / both.max(1e-9), i.searchable_s, both),
            None,
        ));
        t.push(target(
            "Whole first index (symbols, graph) / ctags + cindex",
            "reported",
            format!("{:.2}x ({:.2} s / {:.2} s)", i.first_s / both.max(1e-9), i.first_s, both),
            None,
        ));
    }
    t.push(target(
        "Peak RSS (process VmHWM)",
        "< 1 GiB",
        format!("{:.0} MiB", i.peak_rss_end_mib),
        Some(i.peak_rss_end_mib < 1024.0),
    ));
    t.push(target(
        "Unchanged re-index / first",
        "< 5 %",
        format!("{:.1} %", i.reindex_pct_of_first),
        Some(i.reindex_pct_of_first < 5.0),
    ));
    if let Some(w) = &r.watch {
        let value = format!("max {:.0} ms, p50 {:.0} ms, {} missed", w.max_ms(), w.p50_ms(), w.missed);
        t.push(target("Saved edit searchable (watcher)", "< 1 s", value, Some(w.max_ms() < 1000.0 && w.missed == 0)));
    }
    t
}

pub(super) fn verdict(p: Option<bool>) -> &'static str {
    match p {
        Some(true) => "pass",
        Some(false) => "FAIL",
        None => "n/a",
    }
}

pub(super) fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0))
}

pub(super) fn lat(l: &Latency) -> String {
    format!("p50 {:.2} / p95 {:.2} / p99 {:.2} ms (max {:.2}, n={})", l.p50_ms, l.p95_ms, l.p99_ms, l.max_ms, l.samples)
}

/// Label/value rows shared by the terminal table and the Markdown block.
pub(super) fn rows(r: &Report) -> Vec<(String, String)> {
    let i = &r.index;
    let mut rows = vec![
        ("Corpus".to_string(), corpus_line(&r.corpus)),
        (
            "Files indexed / chunks".into(),
            format!("{} / {} ({} skipped, {} errors)", i.files, i.chunks, i.skipped, i.errors),
        ),
        ("Text indexed / bytes read".into(), format!("{} / {}", mib(i.indexed_bytes), mib(i.bytes_read))),
        (
            "First index".into(),
            format!(
                "{:.3} s ({:.1} MiB/s of text, {:.0} files/s); first answers at {:.2} s, every file searchable at {:.2} s",
                i.first_s, i.mib_per_s, i.files_per_s, i.first_answer_s, i.searchable_s
            ),
        ),
        ("  phases".into(), phases_line(&i.phases)),
        (
            "Unchanged re-index".into(),
            format!(
                "{:.3} s = {:.1} % of first ({} unchanged; bare walk {:.3} s)",
                i.reindex_s, i.reindex_pct_of_first, i.reindex_unchanged, i.walk_only_s
            ),
        ),
        (
            "Index size on disk".into(),
            format!("{} (+ symbols.db {})", mib(i.index_bytes), mib(r.code.symbols_db_bytes)),
        ),
        ("Code pass".into(), code_line(&r.code)),
        ("  parse rate per language".into(), languages_line(&r.code)),
        (
            "Warm search, signals on / off".into(),
            format!(
                "p50 {:.2} / {:.2} ms, p95 {:.2} / {:.2} ms (symbol + AST ranking on vs off, interleaved)",
                r.code.search_signals_on.p50_ms,
                r.code.search_signals_off.p50_ms,
                r.code.search_signals_on.p95_ms,
                r.code.search_signals_off.p95_ms
            ),
        ),
        ("Peak RSS (VmHWM, whole bench process)".into(), rss_line(i)),
        (
            "Warm search, in-process".into(),
            format!("{} ({} queries x {} rounds)", lat(&r.search.latency), r.search.queries, r.search.rounds),
        ),
        (
            "  engine timing means".into(),
            format!(
                "retrieve {:.2} / rank {:.2} / snippets {:.2} ms; {} of {} queries have hits",
                r.search.engine_mean_search_ms,
                r.search.engine_mean_rank_ms,
                r.search.engine_mean_snippets_ms,
                r.search.queries_with_hits,
                r.search.queries
            ),
        ),
        (
            "  slowest queries (median)".into(),
            r.search.slowest.iter().map(|(q, ms)| format!("\"{q}\" {ms:.2} ms")).collect::<Vec<_>>().join(", "),
        ),
    ];
    if let Some(p) = &r.process {
        rows.push(("Search, whole process".into(), format!("{} ({} failures)", lat(&p.latency), p.failures)));
        let f = &p.startup_floor;
        rows.push(("  `docdex --version` floor".into(), format!("p50 {:.2} / p95 {:.2} ms", f.p50_ms, f.p95_ms)));
    }
    rows.push(("ripgrep".into(), rg_line(&r.ripgrep)));
    if !r.peers.is_empty() {
        rows.push(("Peers, time to a searchable index".into(), peers::line(&r.peers, r.index.searchable_s)));
    }
    rows
}

pub(super) fn code_line(c: &CodeFigures) -> String {
    format!(
        "plain index {:.3} s ({:.2} CPU-s); with symbols+graph {:.2}x wall, {:.2}x CPU, adding {:.0} % of the first index; {} files parsed ({} not, {} with syntax errors), {} symbols; extraction {:.2} CPU-s, symbols.db {:.3} s, graph rebuild {}",
        c.plain_first_s,
        c.plain_cpu_s,
        c.ratio_to_plain,
        c.cpu_ratio_to_plain,
        c.added_share_pct,
        c.files_parsed,
        c.files_not_parsed,
        c.files_with_parse_errors,
        c.symbols,
        c.extract_cpu_s,
        c.store_s,
        c.graph_s.map(|g| format!("{:.3} s", g)).unwrap_or_else(|| "not run".into())
    )
}

pub(super) fn languages_line(c: &CodeFigures) -> String {
    if c.languages.is_empty() {
        return "no code files".into();
    }
    c.languages
        .iter()
        .map(|l| {
            format!("{} {} files, {:.0} files/s, {:.1} MiB/s", l.lang, l.files, l.files_per_cpu_s, l.mib_per_cpu_s)
        })
        .collect::<Vec<_>>()
        .join("; ")
        + " (per core)"
}

pub(super) fn corpus_line(c: &CorpusInfo) -> String {
    match (c.subset_files, c.subset_bytes) {
        (Some(f), Some(b)) => format!("{} files, {} copied from {}", f, mib(b), c.source.display()),
        _ => format!("{} (in place)", c.source.display()),
    }
}

pub(super) fn phases_line(p: &Phases) -> String {
    format!(
        "open+walk+diff {:.3} s, read+parse+add {:.3} s, {} commit{} {:.3} s, merge wait+finish {:.3} s",
        p.open_walk_diff_s,
        p.read_chunk_add_s,
        p.commits,
        if p.commits == 1 { "" } else { "s" },
        p.commit_s,
        p.finish_merge_s
    )
}

pub(super) fn rss_line(i: &IndexFigures) -> String {
    let reset = if i.peak_rss_reset { "reset before indexing" } else { "NOT reset: includes start-up" };
    format!(
        "{:.0} MiB at end; {:.0} MiB before index, {:.0} MiB after first index ({reset})",
        i.peak_rss_end_mib, i.peak_rss_before_index_mib, i.peak_rss_after_index_mib
    )
}

pub(super) fn rg_line(rg: &RgFigures) -> String {
    let Some(l) = rg.latency.as_ref().filter(|_| rg.available) else { return rg.note.clone() };
    let mut s = format!(
        "{}: p50 {:.1} ms, p95 {:.1} ms, total {:.2} s over {} queries; docdex same queries: {:.3} s in-process ({:.1}x), {:.2} s whole process ({:.1}x)",
        rg.version, l.p50_ms, l.p95_ms, rg.rg_total_s, rg.queries, rg.docdex_in_process_total_s, rg.speedup_in_process, rg.docdex_process_total_s, rg.speedup_process
    );
    if !rg.note.is_empty() {
        s.push_str(&format!(" [{}]", rg.note));
    }
    s
}

pub(super) fn markdown(r: &Report) -> String {
    let m = &r.machine;
    let others = r
        .other_cpu_pct
        .map(|p| format!("; other processes used {p:.1} % of the CPU during the run"))
        .unwrap_or_default();
    let mut s = format!(
        "Machine: {} ({} cores), {:.1} GiB RAM, Linux {}; docdex {} ({} build); {}{others}\n\n| Measure | Value |\n|---|---|\n",
        m.cpu, m.cores, m.ram_gib, m.kernel, r.docdex_version, r.build, r.date
    );
    for (k, v) in rows(r) {
        s.push_str(&format!("| {} | {} |\n", k.trim().replace('|', "\\|"), v.replace('|', "\\|")));
    }
    s.push_str("\n| Target | Goal | Measured | Result |\n|---|---|---|---|\n");
    for t in &r.targets {
        s.push_str(&format!("| {} | {} | {} | {} |\n", t.name, t.target, t.value, verdict(t.pass)));
    }
    s
}

pub(super) fn print_report(out: &Out, r: &Report, json: bool) -> anyhow::Result<()> {
    if json {
        return out.json(r);
    }
    let rows = rows(r);
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (k, v) in &rows {
        out.line(&format!("{k:<width$}  {v}"));
    }
    out.line("");
    let width = r.targets.iter().map(|t| t.name.len()).max().unwrap_or(0);
    for t in &r.targets {
        out.line(&format!("{:<width$}  {:<4}  {} (goal {})", t.name, verdict(t.pass), t.value, t.target));
    }
    if let Some(p) = r.other_cpu_pct.filter(|p| *p > 5.0) {
        out.line(&format!(
            "\nwarning: other processes used {p:.1} % of the CPU during the run; the timings are contended"
        ));
    }
    out.line("\n--- Markdown for docs/PERFORMANCE.md ---\n");
    out.line(&r.markdown);
    Ok(())
}
