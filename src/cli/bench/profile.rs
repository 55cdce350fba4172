//! `docdex bench-profile`: profile memory's figures for `docs/PERFORMANCE.md`.
//!
//! 1. `POST /v1/hooks/validate` against a real `docdex serve` over loopback, for 1, 10 and 100
//!    staged code files of the corpus (their real content, every factory rule plus a
//!    `forbid-import`), warm: latency percentiles per size, client-side.
//! 2. Profile recall inside a chat turn: real `Engine::chat` turns as an agent with 200
//!    preferences of its own besides the factory ones, no model and no embedder (recall by
//!    words), so the Tier 0 `profile` step's time is docdex's own, apart from the embedder.
//!
//! Every loop is bounded in count and talks only to 127.0.0.1.

use super::corpus::{is_binary, list_files};
use super::machine::{machine_info, today_utc};
use super::queries::QUERIES;
use super::serve::{lat_line, loadavg, wait_ready, Proc};
use crate::cli::output::Out;
use crate::engine::protocol::{Category, ChatTurnRequest, IndexProgress, ProfileAddRequest, StagedFile, WebPolicy};
use crate::engine::{Engine, IndexOptions};
use anyhow::{bail, Context};
use serde_json::json;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Flags of `docdex bench-profile`.
#[derive(Debug, clap::Args)]
pub struct BenchProfileArgs {
    /// A source tree with JavaScript or TypeScript files (e.g. a checkout of eslint).
    #[arg(long)]
    corpus: PathBuf,
    /// Timed requests per staged-set size (after 20 warm-up requests).
    #[arg(long, default_value_t = 200)]
    requests: usize,
    /// Timed chat turns for the recall figure (after 10 warm-up turns).
    #[arg(long, default_value_t = 200)]
    turns: usize,
    /// Keep the scratch home (index, profile) afterwards.
    #[arg(long)]
    keep: bool,
}

/// Runs the benchmark and prints a markdown table.
pub fn run(out: &Out, args: BenchProfileArgs) -> anyhow::Result<()> {
    let load_start = loadavg();
    let corpus = std::fs::canonicalize(&args.corpus).with_context(|| format!("{}", args.corpus.display()))?;
    let scratch = std::env::temp_dir().join(format!("docdex-bench-profile-{}", std::process::id()));
    let home = scratch.join("home");
    std::fs::create_dir_all(&home).with_context(|| format!("creating {}", home.display()))?;
    // No model server and no embedder: nothing outside docdex is timed.
    std::fs::write(home.join("config.toml"), "[llm]\nbase_url = \"http://127.0.0.1:9\"\nrequest_timeout_secs = 1\n")?;
    let engine = Engine::open_at(&home).context("opening the bench home")?;
    let summary = engine.index(&corpus, &IndexOptions::default(), &|_: &IndexProgress| {})?;
    out.note(&format!("indexed {} files of {}", summary.files, corpus.display()));
    let code = script_files(&corpus)?;
    engine.profile_add(&ProfileAddRequest {
        agent_id: "team".into(),
        content: "Deprecate usage of moment.js".into(),
        category: Some(Category::Constraint),
        rule: None,
        role: None,
    })?;
    let staged = staged_sample(&code)?;
    let mut rows = time_validate(&home, &corpus, &staged, args.requests)?;
    rows.extend(time_recall(&engine, &corpus, args.turns)?);
    print_table(out, load_start, &corpus, code.len(), rows);
    if !args.keep {
        let _ = std::fs::remove_dir_all(&scratch);
    } else {
        out.note(&format!("kept {}", scratch.display()));
    }
    Ok(())
}

/// The corpus's JavaScript and TypeScript files under 200 kB, by path; at least 100.
fn script_files(corpus: &Path) -> anyhow::Result<Vec<(String, PathBuf, u64)>> {
    let mut code: Vec<(String, PathBuf, u64)> = list_files(corpus)
        .into_iter()
        .filter(|(rel, abs, size)| {
            [".js", ".ts", ".tsx", ".mjs", ".cjs"].iter().any(|e| rel.ends_with(e))
                && *size < 200_000
                && !is_binary(abs)
        })
        .collect();
    code.sort_by(|a, b| a.0.cmp(&b.0));
    if code.len() < 100 {
        bail!("{} has {} JavaScript/TypeScript files; need 100", corpus.display(), code.len());
    }
    Ok(code)
}

/// 100 files spread evenly over the corpus, with their content, as a hook would stage them.
fn staged_sample(code: &[(String, PathBuf, u64)]) -> anyhow::Result<Vec<StagedFile>> {
    let staged = code
        .iter()
        .step_by((code.len() / 100).max(1))
        .take(100)
        .map(|(rel, abs, _)| {
            Ok(StagedFile { path: rel.clone(), content: Some(std::fs::read_to_string(abs)?), deleted: false })
        })
        .collect::<std::io::Result<_>>()?;
    Ok(staged)
}

/// `POST /v1/hooks/validate` against a real `docdex serve`, for 1, 10 and 100 staged files.
fn time_validate(
    home: &Path,
    corpus: &Path,
    staged: &[StagedFile],
    requests: usize,
) -> anyhow::Result<Vec<(String, String)>> {
    let mut rows: Vec<(String, String)> = Vec::new();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(async {
        let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build()?;
        let serve = Proc::spawn(home, &["serve", "--repo", &corpus.to_string_lossy()])?;
        wait_ready(&client, &serve, Duration::from_secs(300)).await?;
        for n in [1usize, 10, 100] {
            let body = json!({ "files": &staged[..n] });
            let bytes: usize = staged[..n].iter().map(|f| f.content.as_ref().map_or(0, String::len)).sum();
            let mut lat = Vec::with_capacity(requests);
            let mut engine_ms = Vec::with_capacity(requests);
            let mut violations = 0;
            for i in 0..(requests + 20) {
                let t = Instant::now();
                let r = client.post(serve.url("/v1/hooks/validate")).json(&body).send().await?;
                if !r.status().is_success() {
                    bail!("hooks/validate answered {}: {}", r.status(), r.text().await?);
                }
                let v: serde_json::Value = r.json().await?;
                if i >= 20 {
                    lat.push(t.elapsed().as_secs_f64() * 1000.0);
                    engine_ms.push(v["elapsed_ms"].as_f64().unwrap_or(0.0));
                    violations = v["violations"].as_array().map_or(0, Vec::len);
                }
            }
            rows.push((
                format!(
                    "POST /v1/hooks/validate, {n} staged file{} ({} KiB)",
                    if n == 1 { "" } else { "s" },
                    bytes / 1024
                ),
                format!("{}; in the engine {}; {violations} violations", lat_line(&mut lat), lat_line(&mut engine_ms)),
            ));
        }
        drop(serve);
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(rows)
}

/// Profile recall inside real chat turns, as an agent with 200 preferences of its own.
fn time_recall(engine: &Engine, corpus: &Path, turns: usize) -> anyhow::Result<Vec<(String, String)>> {
    for i in 0..200 {
        engine.profile_add(&ProfileAddRequest {
            agent_id: "bench_agent".into(),
            content: format!(
                "Preference {i}: {} when touching the {} code",
                ["prefer small pure functions", "use early returns", "name booleans as questions", "log with context"]
                    [i % 4],
                QUERIES[i % QUERIES.len()]
            ),
            category: Some([Category::Style, Category::Tooling, Category::Workflow, Category::Constraint][i % 4]),
            rule: None,
            role: Some("backend developer".into()),
        })?;
    }
    let mut step_ms = Vec::with_capacity(turns);
    let mut turn_ms = Vec::with_capacity(turns);
    let mut recalled = 0;
    for i in 0..(turns + 10) {
        let req = ChatTurnRequest {
            query: QUERIES[i % QUERIES.len()].to_string(),
            agent_id: Some("bench_agent".into()),
            web: WebPolicy::Off,
            ..Default::default()
        };
        let t = Instant::now();
        let resp = engine.chat(corpus, &req, &mut |_| ControlFlow::Continue(()))?;
        let total = t.elapsed().as_secs_f64() * 1000.0;
        let Some(step) = resp.trace.steps.iter().find(|s| s.name == "profile") else {
            bail!("the chat trace has no profile step");
        };
        if i >= 10 {
            step_ms.push(step.ms);
            turn_ms.push(total);
            recalled = step.items;
        }
    }
    Ok(vec![
        (
            "Profile recall in a chat turn (Tier 0 `profile` step; 200 + factory preferences, by words, no embedder)"
                .into(),
            format!("{}; {recalled} recalled per turn", lat_line(&mut step_ms)),
        ),
        ("The whole chat turn without a model, for scale".into(), lat_line(&mut turn_ms)),
    ])
}

/// The machine line and the markdown table for docs/PERFORMANCE.md.
fn print_table(out: &Out, load_start: String, corpus: &Path, files: usize, rows: Vec<(String, String)>) {
    let m = machine_info();
    out.line(&format!(
        "docdex bench-profile, {} UTC, {} ({} cores, {:.0} GiB, Linux {}), load average {} at start, {} at end, debug={}",
        today_utc(),
        m.cpu,
        m.cores,
        m.ram_gib,
        m.kernel,
        load_start,
        loadavg(),
        cfg!(debug_assertions)
    ));
    out.line(&format!("corpus: {} ({files} JS/TS files)", corpus.display()));
    out.line("");
    out.line("| measurement | result |");
    out.line("| --- | --- |");
    for (k, v) in rows {
        out.line(&format!("| {k} | {v} |"));
    }
}
