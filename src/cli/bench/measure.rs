//! The timed parts of `docdex bench`: index runs and their phases, warm in-process
//! search, whole `docdex search` processes, and ripgrep over the same corpus.

use super::machine::{kib_to_mib, proc_status_kib, process_cpu_seconds, reset_peak_rss};
use super::queries::QUERIES;
use super::report::{
    CodeFigures, IndexFigures, LanguageFigures, Latency, Phases, ProcessFigures, RgFigures, SearchFigures,
};
use crate::cli::output::Out;
use crate::engine::protocol::{IndexProgress, IndexSummary, ProgressSink, SearchRequest};
use crate::engine::{Engine, IndexOptions};
use anyhow::Context;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

// ---------------------------------------------------------------- indexing

/// Records when each progress phase was first seen.
pub(super) struct PhaseClock {
    pub(super) seen: Mutex<Vec<(String, Instant)>>,
}

impl ProgressSink for PhaseClock {
    fn progress(&self, p: &IndexProgress) {
        if let Ok(mut seen) = self.seen.lock() {
            if !seen.iter().any(|(name, _)| name == &p.phase) {
                seen.push((p.phase.clone(), Instant::now()));
            }
        }
    }
}

impl PhaseClock {
    pub(super) fn new() -> Self {
        PhaseClock { seen: Mutex::new(Vec::new()) }
    }

    fn at(&self, phase: &str) -> Option<Instant> {
        self.seen.lock().ok()?.iter().find(|(n, _)| n == phase).map(|(_, t)| *t)
    }

    /// Splits `start..end` at the first `indexing` and the `done` report; of the time between,
    /// the run's own commit time (all its batches) is the commits' share, the rest reading,
    /// parsing and handing documents to the writer.
    fn phases(&self, start: Instant, end: Instant, summary: &IndexSummary) -> Phases {
        let indexing = self.at("indexing").unwrap_or(start);
        let done = self.at("done").unwrap_or(end);
        let secs = |a: Instant, b: Instant| b.saturating_duration_since(a).as_secs_f64();
        let between = secs(indexing, done);
        let commit_s = summary.commit_seconds.min(between);
        Phases {
            open_walk_diff_s: secs(start, indexing),
            read_chunk_add_s: between - commit_s,
            commit_s,
            commits: summary.commits,
            finish_merge_s: secs(done, end),
        }
    }
}

/// The fastest of two plain indexes (text only, no code pass; the first a first index, the
/// second a rebuild) in `engine`'s home: wall and CPU seconds.
pub(super) fn measure_plain_index(engine: &Engine, corpus: &Path) -> anyhow::Result<(f64, f64)> {
    let opts = IndexOptions { rebuild: true, skip_code: true, ..Default::default() };
    let mut best = (f64::MAX, f64::MAX);
    for _ in 0..2 {
        let cpu = process_cpu_seconds();
        let (r, s) = timed(|| engine.index(corpus, &opts, &|_: &IndexProgress| {}));
        r?;
        let cpu = process_cpu_seconds() - cpu;
        if s < best.0 {
            best = (s, cpu);
        }
    }
    Ok(best)
}

/// [`measure_plain_index`] in a home of its own under `scratch` (removed after), so the
/// bench's own home gets a true first index.
pub(super) fn measure_plain_index_apart(scratch: &Path, corpus: &Path) -> anyhow::Result<(f64, f64)> {
    let home = scratch.join("plain-home");
    std::fs::create_dir_all(&home).with_context(|| format!("creating {}", home.display()))?;
    std::fs::write(home.join("config.toml"), "[search]\nhybrid = false\n").context("writing the bench config")?;
    let engine = Engine::open_at(&home).context("opening the plain index's home")?;
    let figures = measure_plain_index(&engine, corpus);
    drop(engine);
    if let Err(e) = std::fs::remove_dir_all(&home) {
        tracing::warn!("removing {}: {e}", home.display());
    }
    figures
}

/// The code pass's figures from the first index's summary.
pub(super) fn code_figures(s: &IndexSummary, symbols_db_bytes: u64) -> CodeFigures {
    let Some(c) = &s.code else { return CodeFigures::default() };
    let languages = c
        .languages
        .iter()
        .map(|(lang, t)| {
            let mib = t.bytes as f64 / (1024.0 * 1024.0);
            LanguageFigures {
                lang: lang.clone(),
                files: t.files,
                mib,
                cpu_s: t.seconds,
                files_per_cpu_s: t.files as f64 / t.seconds.max(1e-9),
                mib_per_cpu_s: mib / t.seconds.max(1e-9),
            }
        })
        .collect();
    CodeFigures {
        files_parsed: c.files_parsed,
        files_not_parsed: c.files_not_parsed,
        files_with_parse_errors: c.files_with_parse_errors,
        symbols: c.symbols_extracted,
        extract_cpu_s: c.extract_seconds,
        store_s: c.store_seconds,
        graph_s: c.graph_seconds,
        symbols_db_bytes,
        languages,
        ..Default::default()
    }
}

pub(super) fn measure_index(engine: &Engine, corpus: &Path) -> anyhow::Result<(IndexFigures, CodeFigures)> {
    let peak_rss_reset = reset_peak_rss();
    let before = proc_status_kib("VmHWM:").unwrap_or(0);
    let clock = PhaseClock::new();
    let cpu0 = process_cpu_seconds();
    let t0 = Instant::now();
    let first = engine.index(corpus, &IndexOptions { rebuild: true, ..Default::default() }, &clock)?;
    let t1 = Instant::now();
    let full_cpu_s = process_cpu_seconds() - cpu0;
    let after = proc_status_kib("VmHWM:").unwrap_or(0);
    let first_s = (t1 - t0).as_secs_f64();
    let (again, reindex_s) = timed(|| engine.index(corpus, &IndexOptions::default(), &|_: &IndexProgress| {}));
    let again = again?;
    let repo = engine.resolve_repo(corpus)?;
    let (_, walk_only_s) = timed(|| engine.probe_walk(&repo));
    let indexed_bytes = engine.indexed_bytes(&repo);
    let db_bytes = engine.symbols_db_bytes(&repo);
    let code = CodeFigures { full_cpu_s, ..code_figures(&first, db_bytes) };
    let figures = IndexFigures {
        indexed_bytes,
        mib_per_s: indexed_bytes as f64 / (1024.0 * 1024.0) / first_s.max(1e-9),
        phases: clock.phases(t0, t1, &first),
        reindex_s,
        reindex_unchanged: again.unchanged,
        reindex_pct_of_first: 100.0 * reindex_s / first_s.max(1e-9),
        walk_only_s,
        index_bytes: dir_size(&repo.index_dir()),
        peak_rss_reset,
        peak_rss_before_index_mib: kib_to_mib(before),
        peak_rss_after_index_mib: kib_to_mib(after),
        peak_rss_end_mib: 0.0,
        ..index_counts(&first, first_s)
    };
    Ok((figures, code))
}

pub(super) fn index_counts(s: &IndexSummary, first_s: f64) -> IndexFigures {
    IndexFigures {
        files: s.files,
        chunks: s.chunks,
        skipped: s.skipped.len(),
        errors: s.errors.len(),
        bytes_read: s.bytes_read,
        indexed_bytes: 0,
        first_s,
        searchable_s: s.searchable_seconds,
        first_answer_s: s.first_commit_seconds,
        mib_per_s: 0.0,
        files_per_s: s.files as f64 / first_s.max(1e-9),
        phases: Phases::default(),
        reindex_s: 0.0,
        reindex_unchanged: 0,
        reindex_pct_of_first: 0.0,
        walk_only_s: 0.0,
        index_bytes: 0,
        peak_rss_reset: false,
        peak_rss_before_index_mib: 0.0,
        peak_rss_after_index_mib: 0.0,
        peak_rss_end_mib: 0.0,
    }
}

pub(super) fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = Instant::now();
    let v = f();
    (v, t.elapsed().as_secs_f64())
}

/// Total size of the regular files under `dir`.
pub(super) fn dir_size(dir: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(dir) else { return 0 };
    rd.flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map(|m| m.len()).unwrap_or(0),
            _ => 0,
        })
        .sum()
}

// ---------------------------------------------------------------- search

/// How many of the slowest warm queries the report names.
pub(super) const SLOWEST_SHOWN: usize = 5;

/// Warm in-process latency; also returns each query's median (ms) for the rg ratio.
pub(super) fn measure_search(
    engine: &Engine,
    corpus: &Path,
    rounds: usize,
) -> anyhow::Result<(SearchFigures, Vec<f64>)> {
    let req = |q: &str| SearchRequest { query: q.to_string(), ..Default::default() };
    let mut with_hits = 0;
    for q in QUERIES {
        if engine.search(corpus, &req(q))?.total_hits > 0 {
            with_hits += 1;
        }
    }
    let mut per_query: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); QUERIES.len()];
    let mut parts = [0.0f64; 3];
    for _ in 0..rounds {
        for (i, q) in QUERIES.iter().enumerate() {
            let t = Instant::now();
            let resp = engine.search(corpus, &req(q))?;
            per_query[i].push(ms(t.elapsed()));
            parts[0] += resp.timing_ms.search;
            parts[1] += resp.timing_ms.rank;
            parts[2] += resp.timing_ms.snippets;
        }
    }
    let all: Vec<f64> = per_query.iter().flatten().copied().collect();
    let n = all.len().max(1) as f64;
    let medians: Vec<f64> = per_query.iter().map(|v| latency(v).p50_ms).collect();
    let mut slowest: Vec<(String, f64)> = QUERIES.iter().map(|q| q.to_string()).zip(medians.iter().copied()).collect();
    slowest.sort_by(|a, b| b.1.total_cmp(&a.1));
    slowest.truncate(SLOWEST_SHOWN);
    let figures = SearchFigures {
        queries: QUERIES.len(),
        rounds,
        latency: latency(&all),
        queries_with_hits: with_hits,
        engine_mean_search_ms: parts[0] / n,
        engine_mean_rank_ms: parts[1] / n,
        engine_mean_snippets_ms: parts[2] / n,
        slowest,
    };
    Ok((figures, medians))
}

/// Warm latency with the ranking signals on and off, query by query in alternation.
pub(super) fn measure_signal_cost(
    engine: &Engine,
    home: &Path,
    corpus: &Path,
    rounds: usize,
) -> anyhow::Result<(Latency, Latency)> {
    let mut config = engine.config().clone();
    config.search.symbol_ranking_enabled = false;
    config.search.ast_ranking_enabled = false;
    let off = Engine::with_config(home, config, engine.config_path().to_path_buf(), Vec::new())?;
    let req = |q: &str| SearchRequest { query: q.to_string(), ..Default::default() };
    for q in QUERIES {
        off.search(corpus, &req(q))?;
    }
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        for q in QUERIES {
            let t = Instant::now();
            engine.search(corpus, &req(q))?;
            a.push(ms(t.elapsed()));
            let t = Instant::now();
            off.search(corpus, &req(q))?;
            b.push(ms(t.elapsed()));
        }
    }
    Ok((latency(&a), latency(&b)))
}

/// `n` indices spread evenly over `0..len`.
pub(super) fn sample_indices(len: usize, n: usize) -> Vec<usize> {
    let n = n.min(len);
    (0..n).map(|i| i * len / n).collect()
}

pub(super) fn search_command(exe: &Path, home: &Path, corpus: &Path, query: &str) -> Command {
    let mut cmd = Command::new(exe);
    cmd.arg("search").arg("--repo").arg(corpus).arg("--json").arg("--").arg(query);
    cmd.env("DOCDEX_HOME", home).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

pub(super) fn version_command(exe: &Path) -> Command {
    let mut cmd = Command::new(exe);
    cmd.arg("--version").stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

/// Spawns `docdex search --json` per sampled query; `None` when the sample is empty.
pub(super) fn measure_process(
    out: &Out,
    home: &Path,
    corpus: &Path,
    sample: &[usize],
) -> anyhow::Result<Option<ProcessFigures>> {
    if sample.is_empty() {
        return Ok(None);
    }
    let exe = std::env::current_exe().context("finding the docdex executable")?;
    out.note(&format!("whole-process search: {} queries via {}", sample.len(), exe.display()));
    let _ = search_command(&exe, home, corpus, "warm up").output();
    let mut times = Vec::with_capacity(sample.len());
    let mut failures = 0;
    for &i in sample {
        let t = Instant::now();
        let res = search_command(&exe, home, corpus, QUERIES[i]).output();
        times.push(ms(t.elapsed()));
        if !res.is_ok_and(|o| o.status.success()) {
            failures += 1;
        }
    }
    let floor: Vec<f64> = sample.iter().map(|_| timed(|| version_command(&exe).output()).1 * 1000.0).collect();
    Ok(Some(ProcessFigures {
        queries: sample.len(),
        failures,
        latency: latency(&times),
        startup_floor: latency(&floor),
    }))
}

// ---------------------------------------------------------------- ripgrep

/// English function words left out of rg patterns (`-e a` would match nearly every line).
pub(super) const RG_SKIP_WORDS: &[&str] = &[
    "a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "is", "it", "its", "of", "on", "or", "that",
    "the", "this", "to", "when", "with",
];

/// The words of a query (runs of letters, digits and `_`), deduplicated, function words dropped.
pub(super) fn query_words(q: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for w in q.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty()) {
        let skip = RG_SKIP_WORDS.iter().any(|s| s.eq_ignore_ascii_case(w));
        if !skip && !words.iter().any(|x| x.eq_ignore_ascii_case(w)) {
            words.push(w.to_string());
        }
    }
    words
}

pub(super) fn rg_command(corpus: &Path, query: &str) -> Command {
    let mut cmd = Command::new("rg");
    cmd.args(["-i", "-c", "--no-messages", "-F"]);
    let mut words = query_words(query);
    if words.is_empty() {
        words.push(query.to_string());
    }
    for w in words {
        cmd.arg("-e").arg(w);
    }
    cmd.arg(corpus).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null());
    cmd
}

pub(super) fn rg_version() -> Option<String> {
    let o = Command::new("rg").arg("--version").stderr(Stdio::null()).output().ok()?;
    let text = String::from_utf8_lossy(&o.stdout);
    o.status.success().then(|| text.lines().next().unwrap_or("rg").to_string())
}

/// Times rg over the sample and compares it with docdex on the same queries.
pub(super) fn measure_rg(
    out: &Out,
    corpus: &Path,
    sample: &[usize],
    medians: &[f64],
    process: Option<&ProcessFigures>,
) -> RgFigures {
    let command = format!("rg -i -c --no-messages -F -e WORD1 -e WORD2 ... {}", crate::error::shell_path(corpus));
    let mut f = RgFigures { command, ..Default::default() };
    if sample.is_empty() {
        f.note = "skipped (--no-rg or --process-queries 0)".into();
        return f;
    }
    let Some(version) = rg_version() else {
        f.note = "rg not found on PATH: comparison skipped (install ripgrep)".into();
        out.note(&f.note);
        return f;
    };
    out.note(&format!("ripgrep: {} queries over {}", sample.len(), corpus.display()));
    let _ = rg_command(corpus, QUERIES[sample[0]]).output();
    let mut times = Vec::with_capacity(sample.len());
    for &i in sample {
        let t = Instant::now();
        let ok = rg_command(corpus, QUERIES[i]).output().is_ok_and(|o| o.status.code().is_some_and(|c| c <= 1));
        times.push(ms(t.elapsed()));
        if !ok {
            f.note = format!("rg failed on query {:?}", QUERIES[i]);
        }
    }
    f.available = true;
    f.version = version;
    f.queries = sample.len();
    f.rg_total_s = times.iter().sum::<f64>() / 1000.0;
    f.docdex_in_process_total_s = sample.iter().filter_map(|&i| medians.get(i)).sum::<f64>() / 1000.0;
    f.speedup_in_process = f.rg_total_s / f.docdex_in_process_total_s.max(1e-9);
    if let Some(p) = process {
        f.docdex_process_total_s = p.latency.mean_ms * sample.len() as f64 / 1000.0;
        f.speedup_process = f.rg_total_s / f.docdex_process_total_s.max(1e-9);
    }
    f.latency = Some(latency(&times));
    f
}

// ---------------------------------------------------------------- statistics and system facts

pub(super) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Nearest-rank percentiles.
pub(super) fn latency(samples: &[f64]) -> Latency {
    if samples.is_empty() {
        return Latency::default();
    }
    let mut v = samples.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| v[((p / 100.0 * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
    Latency {
        samples: v.len(),
        p50_ms: pct(50.0),
        p95_ms: pct(95.0),
        p99_ms: pct(99.0),
        mean_ms: v.iter().sum::<f64>() / v.len() as f64,
        max_ms: v[v.len() - 1],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let l = latency(&v);
        assert_eq!((l.p50_ms, l.p95_ms, l.p99_ms, l.max_ms), (50.0, 95.0, 99.0, 100.0));
        assert_eq!(latency(&[]).samples, 0);
    }

    #[test]
    fn samples_spread_evenly() {
        assert_eq!(sample_indices(10, 5), vec![0, 2, 4, 6, 8]);
        assert_eq!(sample_indices(3, 50), vec![0, 1, 2]);
    }

    #[test]
    fn query_words_split_like_identifiers() {
        assert_eq!(query_words("os.path.join"), ["os", "path", "join"]);
        assert_eq!(query_words("Box<dyn Error>"), ["Box", "dyn", "Error"]);
        assert_eq!(query_words("parse_args"), ["parse_args"]);
    }
}
