//! Watcher latency for `docdex bench`: how long from saving a file to finding its new content
//! with a search, while `Engine::watch` runs (target: under one second).

use crate::engine::protocol::SearchRequest;
use crate::engine::protocol::WatchReport;
use crate::engine::Engine;
use serde::Serialize;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Edits timed per kind.
const EDITS: usize = 10;
/// Give up on one edit after this long.
const GIVE_UP: Duration = Duration::from_secs(10);

/// Save-to-searchable latencies in milliseconds.
#[derive(Debug, Clone, Serialize)]
pub struct WatchFigures {
    /// New files.
    pub create_ms: Vec<f64>,
    /// Appends to existing files.
    pub modify_ms: Vec<f64>,
    /// Edits never seen within the give-up time.
    pub missed: usize,
    /// Debounce window in force.
    pub debounce_ms: u64,
}

impl WatchFigures {
    /// The slowest edit seen, in ms.
    pub fn max_ms(&self) -> f64 {
        self.create_ms.iter().chain(&self.modify_ms).copied().fold(0.0, f64::max)
    }
    /// The median over all edits, in ms.
    pub fn p50_ms(&self) -> f64 {
        let mut all: Vec<f64> = self.create_ms.iter().chain(&self.modify_ms).copied().collect();
        all.sort_by(f64::total_cmp);
        all.get(all.len() / 2).copied().unwrap_or(0.0)
    }
}

/// Runs the watcher on `repo` (a scratch copy: files are written into it) and times edits.
pub fn measure(engine: &Engine, repo: &Path) -> anyhow::Result<WatchFigures> {
    let stop = AtomicBool::new(false);
    let ready = AtomicBool::new(false);
    let existing: Vec<std::path::PathBuf> = first_files(repo, EDITS);
    let figures = std::thread::scope(|s| -> anyhow::Result<WatchFigures> {
        let watcher = s.spawn(|| {
            let report = |r: WatchReport| {
                if matches!(r, WatchReport::Ready(_)) {
                    ready.store(true, Ordering::SeqCst);
                }
            };
            engine.watch(repo, &stop, &report)
        });
        let deadline = Instant::now() + Duration::from_secs(600);
        while !ready.load(Ordering::SeqCst) && Instant::now() < deadline && !watcher.is_finished() {
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut f = WatchFigures {
            create_ms: vec![],
            modify_ms: vec![],
            missed: 0,
            debounce_ms: engine.config().index.watch_debounce_ms,
        };
        for i in 0..EDITS {
            // One lowercase word: it yields a single term that no other file contains.
            let letter = (b'a' + i as u8) as char;
            let token = format!("zqxcreatedprobe{letter}");
            let path = repo.join(format!("docdex_watch_probe_{i}.txt"));
            record(
                &mut f.create_ms,
                &mut f.missed,
                time_edit(engine, repo, &token, &path, || std::fs::write(&path, format!("{token}\n")))?,
            );
            if let Some(file) = existing.get(i) {
                let token = format!("zqxmodifiedprobe{letter}");
                let append = || -> std::io::Result<()> {
                    use std::io::Write;
                    let mut h = std::fs::OpenOptions::new().append(true).open(file)?;
                    writeln!(h, "\n{token}")
                };
                record(&mut f.modify_ms, &mut f.missed, time_edit(engine, repo, &token, file, append)?);
            }
            std::thread::sleep(Duration::from_millis(300));
        }
        stop.store(true, Ordering::SeqCst);
        match watcher.join() {
            Ok(r) => r?,
            Err(_) => anyhow::bail!("the watcher thread panicked"),
        }
        Ok(f)
    })?;
    Ok(figures)
}

fn record(into: &mut Vec<f64>, missed: &mut usize, ms: Option<f64>) {
    match ms {
        Some(ms) => into.push(ms),
        None => *missed += 1,
    }
}

/// Applies `edit` to `file`, then polls search until `token` is found in that file; the elapsed
/// ms, or None past [`GIVE_UP`].
fn time_edit(
    engine: &Engine,
    repo: &Path,
    token: &str,
    file: &Path,
    edit: impl FnOnce() -> std::io::Result<()>,
) -> anyhow::Result<Option<f64>> {
    let req = SearchRequest { query: token.to_string(), limit: Some(1), ..Default::default() };
    let rel = super::corpus::rel_path(repo, file);
    let t0 = Instant::now();
    edit()?;
    while t0.elapsed() < GIVE_UP {
        let found =
            engine.search(repo, &req).map(|r| r.results.first().is_some_and(|h| h.path == rel)).unwrap_or(false);
        if found {
            return Ok(Some(t0.elapsed().as_secs_f64() * 1000.0));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(None)
}

/// A few existing text files to append to (sorted, deterministic).
fn first_files(repo: &Path, n: usize) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = ignore::WalkBuilder::new(repo)
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|x| x == "py" || x == "rs" || x == "txt"))
        .collect();
    files.sort();
    files.truncate(n);
    files
}
