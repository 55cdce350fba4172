//! `docdex bench-serve`: the server's figures for `docdex PERFORMANCE.md`, measured
//! against real `docdex daemon` / `docdex serve` child processes over loopback.
//!
//! 1. Load: N repos (disjoint slices of a corpus) mounted in one daemon, C concurrent
//!    clients searching for S seconds: throughput, latency percentiles, errors, and a
//!    check that every hit belongs to the repo asked (no cross-repo results).
//! 2. Warm single-client `POST /v1/search` latency over loopback.
//! 3. Idle RSS of `docdex serve` on an indexed repo of (by default) 10,000 files, after
//!    its watcher caught up, and again after warm searches.
//!
//! Every loop is bounded in count and time and talks only to 127.0.0.1.

use super::corpus::{copy_file, is_binary, list_files};
use super::machine::{machine_info, today_utc};
use super::queries::QUERIES;
use crate::cli::output::Out;
use crate::engine::protocol::IndexProgress;
use crate::engine::{Engine, IndexOptions};
use anyhow::{bail, Context};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Flags of `docdex bench-serve`.
#[derive(Debug, clap::Args)]
pub struct BenchServeArgs {
    /// The source tree repos are copied from (e.g. a Python or Rust source tree).
    #[arg(long)]
    corpus: PathBuf,
    /// Repos mounted in the daemon.
    #[arg(long, default_value_t = 8)]
    repos: usize,
    /// Files per load-test repo.
    #[arg(long, default_value_t = 1000)]
    files_per_repo: usize,
    /// Concurrent clients.
    #[arg(long, default_value_t = 32)]
    clients: usize,
    /// Seconds of load.
    #[arg(long, default_value_t = 30)]
    seconds: u64,
    /// Sequential warm searches for the single-client latency.
    #[arg(long, default_value_t = 1000)]
    warm_requests: usize,
    /// Files in the repo whose idle `serve` RSS is measured (0 skips it).
    #[arg(long, default_value_t = 10_000)]
    rss_files: usize,
    /// Keep the temporary home and repos.
    #[arg(long)]
    keep: bool,
}

pub(super) struct Proc {
    child: Child,
    addr: String,
}

impl Proc {
    pub(super) fn spawn(home: &Path, args: &[&str]) -> anyhow::Result<Proc> {
        let exe = std::env::current_exe().context("locating the docdex binary")?;
        let mut child = Command::new(exe)
            .args(args)
            .args(["--bind", "127.0.0.1:0"])
            .env("DOCDEX_HOME", home)
            .env_remove("DOCDEX_AUTH_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("starting the server")?;
        let stdout = child.stdout.take().context("server stdout")?;
        let mut line = String::new();
        std::io::BufReader::new(stdout).read_line(&mut line).context("reading the listening line")?;
        let addr = line.trim().rsplit("http://").next().unwrap_or_default().to_string();
        if !line.contains("listening on") {
            bail!("server did not start: {line:?}");
        }
        Ok(Proc { child, addr })
    }

    fn rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<f64>().ok())
            .map(|kib| kib / 1024.0)
            .unwrap_or(0.0)
    }

    fn threads(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/task", self.child.id())).map(|d| d.count()).unwrap_or(0)
    }

    pub(super) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child's pid; SIGTERM lets it release its writers.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Copies `files` (relative path, absolute path) into `dest`.
fn make_repo(dest: &Path, files: &[(String, PathBuf, u64)]) -> anyhow::Result<HashSet<String>> {
    let mut set = HashSet::new();
    for (rel, abs, _) in files {
        copy_file(abs, &dest.join(rel))?;
        set.insert(rel.clone());
    }
    Ok(set)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

pub(super) fn lat_line(samples: &mut [f64]) -> String {
    samples.sort_by(|a, b| a.total_cmp(b));
    format!(
        "p50 {:.2} / p95 {:.2} / p99 {:.2} ms (max {:.2}, n={})",
        percentile(samples, 50.0),
        percentile(samples, 95.0),
        percentile(samples, 99.0),
        samples.last().copied().unwrap_or(0.0),
        samples.len()
    )
}

pub(super) async fn wait_ready(client: &reqwest::Client, proc: &Proc, max: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + max;
    loop {
        let v: Value = client.get(proc.url("/v1/status")).send().await?.json().await?;
        let repos = v["repos"].as_array().cloned().unwrap_or_default();
        if !repos.is_empty() && repos.iter().all(|r| r["mount"]["status"] == "ready") {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("repos not ready after {max:?}: {v}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

struct LoadFigures {
    requests: u64,
    errors: u64,
    cross_repo: u64,
    empty: u64,
    seconds: f64,
    latencies: Vec<f64>,
}

async fn load(
    client: &reqwest::Client,
    daemon: &Proc,
    repos: &[(PathBuf, HashSet<String>)],
    clients: usize,
    seconds: u64,
) -> LoadFigures {
    let repos = Arc::new(repos.to_vec());
    let url = Arc::new(daemon.url("/v1/search"));
    let (errors, cross, empty) =
        (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let start = Instant::now();
    let end = start + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for c in 0..clients {
        let (client, repos, url) = (client.clone(), repos.clone(), url.clone());
        let (errors, cross, empty) = (errors.clone(), cross.clone(), empty.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut i = c * 7;
            while Instant::now() < end {
                let (root, files) = &repos[i % repos.len()];
                let query = QUERIES[(i * 31 + c) % QUERIES.len()];
                i += 1;
                let t = Instant::now();
                let resp = client
                    .post(url.as_str())
                    .header("x-docdex-repo", root.to_string_lossy().as_ref())
                    .json(&json!({ "query": query, "limit": 10 }))
                    .send()
                    .await;
                let body: Option<Value> = match resp {
                    Ok(r) if r.status().is_success() => r.json().await.ok(),
                    _ => None,
                };
                lat.push(t.elapsed().as_secs_f64() * 1000.0);
                let Some(v) = body else {
                    errors.fetch_add(1, Ordering::Relaxed);
                    continue;
                };
                let hits = v["results"].as_array().cloned().unwrap_or_default();
                if hits.is_empty() {
                    empty.fetch_add(1, Ordering::Relaxed);
                }
                let same_repo = v["repo"].as_str().is_some_and(|r| Path::new(r) == root.as_path());
                if !same_repo || hits.iter().any(|h| !h["path"].as_str().is_some_and(|p| files.contains(p))) {
                    cross.fetch_add(1, Ordering::Relaxed);
                }
            }
            lat
        }));
    }
    let mut latencies = Vec::new();
    for t in tasks {
        latencies.extend(t.await.unwrap_or_default());
    }
    LoadFigures {
        requests: latencies.len() as u64,
        errors: errors.load(Ordering::Relaxed),
        cross_repo: cross.load(Ordering::Relaxed),
        empty: empty.load(Ordering::Relaxed),
        seconds: start.elapsed().as_secs_f64(),
        latencies,
    }
}

/// Runs the benchmark and prints a Markdown table.
pub fn run(out: &Out, args: BenchServeArgs) -> anyhow::Result<()> {
    let load_start = loadavg();
    let scratch = tempfile_dir()?;
    let home = scratch.join("home");
    let engine = Engine::open_at(&home).context("opening the bench home")?;
    let mut files: Vec<(String, PathBuf, u64)> =
        list_files(&args.corpus).into_iter().filter(|(_, abs, size)| *size < 1_000_000 && !is_binary(abs)).collect();
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let needed = args.repos * args.files_per_repo;
    if files.len() < needed.max(args.rss_files) {
        bail!("{} has {} text files; need {}", args.corpus.display(), files.len(), needed.max(args.rss_files));
    }
    let repos = index_load_repos(&engine, &scratch, &files, &args)?;
    out.note(&format!("indexed {} repos of {} files", args.repos, args.files_per_repo));

    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let rows = rt.block_on(async {
        let client = reqwest::Client::builder().pool_max_idle_per_host(args.clients).build()?;
        let mut rows = daemon_rows(out, &client, &home, &repos, &args).await?;
        if args.rss_files > 0 {
            let root = scratch.join("rss-repo");
            make_repo(&root, &files[..args.rss_files])?;
            rows.push(serve_rss_row(&client, &engine, &home, &std::fs::canonicalize(&root)?).await?);
        }
        anyhow::Ok(rows)
    })?;
    print_table(out, &args.corpus, &load_start, rows);
    if args.keep {
        out.note(&format!("kept {}", scratch.display()));
    } else {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    Ok(())
}

/// Disjoint, interleaved slices of the corpus as repositories (so every repo gets a mix of the
/// tree), each indexed; with the paths each holds.
fn index_load_repos(
    engine: &Engine,
    scratch: &Path,
    files: &[(String, PathBuf, u64)],
    args: &BenchServeArgs,
) -> anyhow::Result<Vec<(PathBuf, HashSet<String>)>> {
    let mut repos = Vec::new();
    for r in 0..args.repos {
        let slice: Vec<_> = files.iter().skip(r).step_by(args.repos).take(args.files_per_repo).cloned().collect();
        let root = scratch.join(format!("repo{r}"));
        let set = make_repo(&root, &slice)?;
        let root = std::fs::canonicalize(&root)?;
        engine.index(&root, &IndexOptions::default(), &|_: &IndexProgress| {})?;
        repos.push((root, set));
    }
    Ok(repos)
}

/// Every repository mounted in one `docdex daemon`: the load figures, then warm single-client
/// latency against the first repository.
async fn daemon_rows(
    out: &Out,
    client: &reqwest::Client,
    home: &Path,
    repos: &[(PathBuf, HashSet<String>)],
    args: &BenchServeArgs,
) -> anyhow::Result<Vec<(String, String)>> {
    let mut rows: Vec<(String, String)> = Vec::new();
    let daemon = Proc::spawn(home, &["daemon"])?;
    for (root, _) in repos {
        let body = json!({ "rootUri": format!("file://{}", root.display()) });
        client.post(daemon.url("/v1/initialize")).json(&body).send().await?;
    }
    wait_ready(client, &daemon, Duration::from_secs(120)).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle_rss = daemon.rss_mib();
    out.note(&format!("load: {} clients for {} s", args.clients, args.seconds));
    let mut f = load(client, &daemon, repos, args.clients, args.seconds).await;
    let after_rss = daemon.rss_mib();
    tokio::time::sleep(Duration::from_secs(35)).await;
    let settled_rss = daemon.rss_mib();
    let (n, per) = (args.repos, args.files_per_repo);
    rows.push((
        "Load".into(),
        format!("{n} repos x {per} files in one daemon, {} concurrent clients, {:.1} s", args.clients, f.seconds),
    ));
    rows.push((
        "Throughput".into(),
        format!("{:.0} searches/s ({} requests)", f.requests as f64 / f.seconds, f.requests),
    ));
    rows.push(("Latency under load".into(), lat_line(&mut f.latencies)));
    rows.push((
        "Errors / cross-repo hits".into(),
        format!("{} / {} ({} queries had no hits)", f.errors, f.cross_repo, f.empty),
    ));
    rows.push((
        "Daemon RSS".into(),
        format!(
            "{idle_rss:.1} MiB idle with {n} repos mounted, {after_rss:.1} MiB right after the load, \
             {settled_rss:.1} MiB 35 s later; {} threads",
            daemon.threads()
        ),
    ));
    let (root, _) = &repos[0];
    let mut lat = Vec::with_capacity(args.warm_requests);
    for i in 0..(args.warm_requests + 100) {
        let t = Instant::now();
        let r = client
            .post(daemon.url("/v1/search"))
            .header("x-docdex-repo", root.to_string_lossy().as_ref())
            .json(&json!({ "query": QUERIES[i % QUERIES.len()], "limit": 10 }))
            .send()
            .await?;
        let ok = r.status().is_success();
        let _ = r.bytes().await?;
        if !ok {
            bail!("warm search failed");
        }
        if i >= 100 {
            lat.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }
    rows.push(("Warm POST /v1/search, one client".into(), lat_line(&mut lat)));
    Ok(rows)
}

/// Idle RSS of `docdex serve` on `root` (indexed here), fresh, settled and after 100 searches.
async fn serve_rss_row(
    client: &reqwest::Client,
    engine: &Engine,
    home: &Path,
    root: &Path,
) -> anyhow::Result<(String, String)> {
    // On the blocking pool: indexing may embed, and the LLM client runs its own runtime.
    let summary = {
        let (engine, root) = (engine.clone(), root.to_path_buf());
        tokio::task::spawn_blocking(move || engine.index(&root, &IndexOptions::default(), &|_: &IndexProgress| {}))
            .await??
    };
    let serve = Proc::spawn(home, &["serve", "--repo", &root.to_string_lossy()])?;
    wait_ready(client, &serve, Duration::from_secs(120)).await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let fresh = serve.rss_mib();
    // The server trims freed heap every 30 s: the steady idle figure comes after that.
    tokio::time::sleep(Duration::from_secs(32)).await;
    let idle = serve.rss_mib();
    for q in QUERIES.iter().take(100) {
        let r = client.post(serve.url("/v1/search")).json(&json!({ "query": q })).send().await?;
        let _ = r.bytes().await?;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let warm = serve.rss_mib();
    Ok((
        "Idle RSS of `serve`".into(),
        format!(
            "{fresh:.1} MiB 3 s after the watcher caught up, {idle:.1} MiB idle 35 s later, on {} files / {} \
             chunks; {warm:.1} MiB after 100 searches; {} threads",
            summary.files,
            summary.chunks,
            serve.threads()
        ),
    ))
}

/// The machine line and the Markdown table for docs/PERFORMANCE.md.
fn print_table(out: &Out, corpus: &Path, load_start: &str, rows: Vec<(String, String)>) {
    let m = machine_info();
    out.line(&format!(
        "Machine: {} ({} cores), {:.1} GiB RAM, Linux {}; docdex {} ({} build); {}; corpus {}; load average {} at start, {} at end",
        m.cpu,
        m.cores,
        m.ram_gib,
        m.kernel,
        env!("CARGO_PKG_VERSION"),
        if cfg!(debug_assertions) { "debug" } else { "release" },
        today_utc(),
        corpus.display(),
        load_start,
        loadavg()
    ));
    out.line("");
    out.line("| Measure | Value |");
    out.line("|---|---|");
    for (k, v) in rows {
        out.line(&format!("| {k} | {v} |"));
    }
}

/// The 1-minute load average (other work on the machine skews every figure).
pub(super) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_default()
}

fn tempfile_dir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("docdex-bench-serve-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}
