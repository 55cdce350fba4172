//! `index_status.json`: what the process that owns a repo's writer is doing,
//! so any other process (`docdex status`, a second CLI) can report
//! ready / updating / error, progress and queue length without asking it.

use super::types::{IndexProgress, IndexState, IndexSummary, LastEvent};
use crate::engine::fsutil::{now_ms, pid_alive, read_json, replace_json};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The file's content.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StatusData {
    /// State as last written.
    pub state: IndexState,
    /// Writer process.
    pub pid: u32,
    /// When the current or last run started.
    pub started_ms: u64,
    /// Last write.
    pub updated_ms: u64,
    /// Progress of the current run.
    pub progress: Option<IndexProgress>,
    /// Paths waiting in the watcher's queue.
    pub queued: u64,
    /// Last change applied.
    pub last_event: Option<LastEvent>,
    /// Error of the last run, if it failed.
    pub last_error: Option<String>,
    /// True while a watcher owns the writer.
    #[serde(default)]
    pub watching: bool,
    /// While a new generation is built beside the live one: the live generation's number,
    /// which stays searchable until the switch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebuilding_from: Option<u64>,
    /// The last run was stopped by its process's shutdown before it finished: what it
    /// committed is searchable and the next run goes on from there.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
    /// Directories the running watcher walks but could not watch (a path too long for the
    /// OS, the inotify watch limit, permissions): their changes wait for a full index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unwatched: Option<Unwatched>,
    /// The version of the source list ([`super::sources::saved_version`]) the running watcher
    /// has indexed: `docdex add` / `remove-source` wait for it rather than report the index
    /// from before the change as current.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sources_version: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The directories a watcher could not watch, counted by reason, with a few examples; what
/// `docdex status` says of them mirrors what it says of skipped files.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Unwatched {
    /// How many directories.
    pub total: u64,
    /// How many for each reason.
    pub by_reason: std::collections::BTreeMap<String, u64>,
    /// Up to [`Unwatched::EXAMPLES`] of them: repo-relative path and reason.
    pub examples: Vec<(String, String)>,
}

impl Unwatched {
    /// Examples kept (the status file is rewritten often; the count is exact).
    pub const EXAMPLES: usize = 20;

    /// Counts `dirs` (repo-relative path, reason); none when there are none.
    pub fn of<'a>(dirs: impl Iterator<Item = (String, &'a str)>) -> Option<Unwatched> {
        let mut u = Unwatched::default();
        for (path, reason) in dirs {
            u.total += 1;
            *u.by_reason.entry(reason.to_string()).or_default() += 1;
            if u.examples.len() < Self::EXAMPLES {
                u.examples.push((path, reason.to_string()));
            }
        }
        (u.total > 0).then_some(u)
    }

    /// `docdex status` lines: the count by reason, then the examples.
    pub fn warnings(&self) -> Vec<String> {
        let reasons: Vec<String> = self.by_reason.iter().map(|(r, n)| format!("{n} {r}")).collect();
        let mut out = vec![format!(
            "{} not watched: {}; changes under {} wait for the next full `docdex index`",
            crate::engine::fsutil::count(self.total, "directory"),
            reasons.join(", "),
            if self.total == 1 { "it" } else { "them" }
        )];
        out.extend(self.examples.iter().map(|(p, r)| format!("not watched {p}/: {r}")));
        out
    }
}

impl Default for StatusData {
    fn default() -> Self {
        StatusData {
            state: IndexState::Ready,
            pid: std::process::id(),
            started_ms: 0,
            updated_ms: 0,
            progress: None,
            queued: 0,
            last_event: None,
            last_error: None,
            watching: false,
            rebuilding_from: None,
            stopped: false,
            unwatched: None,
            sources_version: 0,
        }
    }
}

impl StatusData {
    /// Reads the status file; a file left `updating` (or with a run's progress, as the
    /// embedding phase writes after the text index is committed) by a dead process reads as
    /// interrupted.
    pub fn read(path: &std::path::Path) -> Option<(StatusData, bool)> {
        let data: StatusData = read_json(path).ok().flatten()?;
        let running = data.state == IndexState::Updating || data.progress.is_some();
        let interrupted = running && !pid_alive(data.pid);
        Some((data, interrupted))
    }
}

/// The pid of a live watcher keeping the repository's index current, from its status file
/// (`path`): advice to run `docdex index` is wrong while one runs, as `index` then has nothing
/// to do.
pub fn live_watcher(path: &std::path::Path) -> Option<u32> {
    match StatusData::read(path) {
        Some((d, false)) if d.watching && pid_alive(d.pid) => Some(d.pid),
        _ => None,
    }
}

/// Why a repository without an index has none yet, from its status file (`path`): a first
/// run going on in a live process (with its phase and count), or one that ended before its
/// first commit (killed, stopped, failed), with what to run. None when no run ever started.
/// `docdex search` said "not indexed yet; run `docdex index`" while that run went on, and
/// `docdex status` said only "not indexed" after it was killed.
pub fn first_run_detail(path: &std::path::Path, root: &std::path::Path) -> Option<String> {
    let (d, interrupted) = StatusData::read(path)?;
    let finish = format!("run `docdex index --repo {}` to finish", crate::error::shell_path(root));
    let pid = d.pid;
    if interrupted {
        return Some(format!("its first index run (pid {pid}) was interrupted before its first commit; {finish}"));
    }
    if d.stopped {
        return Some(format!(
            "its first index run (pid {pid}) stopped before its first commit (a shutdown, or the client that asked for it left); {finish}"
        ));
    }
    if let (IndexState::Error, Some(e)) = (d.state, &d.last_error) {
        return Some(format!("its first index run (pid {pid}) failed: {e}"));
    }
    if d.state != IndexState::Updating {
        return None;
    }
    let progress = d.progress.as_ref().map(progress_words).unwrap_or_default();
    Some(format!(
        "it is being indexed for the first time by pid {pid}{progress}; ask again when it finishes (`docdex status --repo {}` follows it)",
        crate::error::shell_path(root)
    ))
}

/// ` (indexing: 8,596 of 29,550 files)`: a run's phase and count, in the phase's own unit.
fn progress_words(p: &IndexProgress) -> String {
    let (done, total, unit) = p.measure();
    match total {
        0 => format!(" ({})", p.phase),
        _ => format!(" ({}: {done} of {total} {})", p.phase, unit.noun(total)),
    }
}

/// How long `index` waits for another process's writer once that process reports no run
/// (it finished its run and is closing, or holds the writer idle) before answering busy.
const IDLE_HOLDER_MS: u64 = 3_000;

/// A run that reports no progress for this long is not waited for (a wedged process must not
/// hold a caller for ever).
const STALLED_RUN_MS: u64 = 120_000;

/// What a second `index` does while another process holds the writer.
#[derive(Debug, Default)]
pub struct RunWaiter {
    idle_since: Option<std::time::Instant>,
}

impl RunWaiter {
    /// Whether to try the writer again after a short wait: yes while the holder (not a watcher,
    /// which `index` defers to) runs and reports progress, shown on `sink`, and for a few
    /// seconds after it stops reporting one (its run ended: the lock is released as it closes).
    /// Two `docdex index` at once used to fail the second with `index_busy`.
    pub fn wait(&mut self, status: &std::path::Path, sink: &dyn super::ProgressSink) -> bool {
        let running = match StatusData::read(status) {
            Some((d, false)) if !d.watching && (d.state == IndexState::Updating || d.progress.is_some()) => {
                if now_ms().saturating_sub(d.updated_ms) > STALLED_RUN_MS {
                    return false;
                }
                if let Some(p) = &d.progress {
                    sink.progress(p);
                }
                true
            }
            _ => false,
        };
        if running {
            self.idle_since = None;
        } else {
            let since = *self.idle_since.get_or_insert_with(std::time::Instant::now);
            if since.elapsed() > std::time::Duration::from_millis(IDLE_HOLDER_MS) {
                return false;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        true
    }
}

/// Writer-side handle; cheap to clone, throttles progress writes.
#[derive(Debug, Clone)]
pub struct StatusFile {
    path: PathBuf,
    data: Arc<Mutex<(StatusData, u64)>>,
    /// The pid of a run an earlier process left unfinished (killed, crashed), as the file said
    /// when this handle was made, before this process's run overwrote it.
    interrupted: Option<u32>,
}

impl StatusFile {
    /// A handle for `path`, carrying over the last event from an earlier process.
    pub fn new(path: PathBuf) -> Self {
        let mut data = StatusData::default();
        let mut interrupted = None;
        if let Some((old, dead)) = StatusData::read(&path) {
            interrupted = dead.then_some(old.pid);
            data.last_event = old.last_event;
        }
        StatusFile { path, data: Arc::new(Mutex::new((data, 0))), interrupted }
    }

    /// The pid of the run an earlier process left unfinished, when there was one: the run
    /// about to start finishes its work, and says so.
    pub fn interrupted_run(&self) -> Option<u32> {
        self.interrupted
    }

    fn with(&self, force: bool, f: impl FnOnce(&mut StatusData)) {
        let Ok(mut guard) = self.data.lock() else { return };
        let (data, last_write) = &mut *guard;
        f(data);
        let now = now_ms();
        data.updated_ms = now;
        if force || now.saturating_sub(*last_write) >= 500 {
            *last_write = now;
            // Advisory (a dead pid already reads as interrupted): no fsync needed.
            if let Err(e) = replace_json(&self.path, data) {
                // A full disk cannot take a new file, but the status file's block can be
                // rewritten: status must still tell that the run failed and why.
                let rescued = e.is_disk_full()
                    && serde_json::to_vec(data)
                        .ok()
                        .is_some_and(|b| crate::engine::fsutil::overwrite_in_place(&self.path, &b).is_ok());
                if !rescued {
                    tracing::warn!("could not write {}: {e}", self.path.display());
                }
            }
        }
    }

    /// A run starts.
    pub fn begin(&self, p: &IndexProgress) {
        self.with(true, |d| {
            d.state = IndexState::Updating;
            d.pid = std::process::id();
            d.started_ms = now_ms();
            d.progress = Some(p.clone());
            d.last_error = None;
            d.stopped = false;
        });
    }

    /// Whether this run builds a new generation beside live generation `from`.
    pub fn rebuilding(&self, from: Option<u64>) {
        self.with(true, |d| d.rebuilding_from = from);
    }

    /// Progress of the current run (throttled).
    pub fn progress(&self, p: &IndexProgress) {
        self.with(false, |d| d.progress = Some(p.clone()));
    }

    /// The run entered a new phase (written at once: other processes act on it).
    pub fn phase(&self, p: &IndexProgress) {
        self.with(true, |d| d.progress = Some(p.clone()));
    }

    /// A change was applied.
    pub fn event(&self, e: LastEvent) {
        self.with(false, |d| d.last_event = Some(e));
    }

    /// The watcher's queue length (and whether a watcher owns the writer).
    pub fn queued(&self, n: u64, watching: bool) {
        self.with(true, |d| {
            d.queued = n;
            d.watching = watching;
        });
    }

    /// The directories the watcher could not watch (none once it watches them all, or stops).
    pub fn unwatched(&self, dirs: Option<Unwatched>) {
        self.with(true, |d| d.unwatched = dirs);
    }

    /// The watcher has indexed this version of the source list.
    pub fn sources_indexed(&self, version: u64) {
        self.with(true, |d| d.sources_version = version);
    }

    /// The run finished.
    pub fn finish_ok(&self, _s: &IndexSummary) {
        self.with(true, |d| {
            d.state = IndexState::Ready;
            d.progress = None;
            d.rebuilding_from = None;
        });
    }

    /// The run was stopped for shutdown (committed work stays searchable).
    pub fn finish_stopped(&self) {
        self.with(true, |d| {
            d.state = IndexState::Ready;
            d.progress = None;
            d.rebuilding_from = None;
            d.stopped = true;
        });
    }

    /// The run failed.
    pub fn finish_err(&self, message: &str) {
        self.with(true, |d| {
            d.state = IndexState::Error;
            d.progress = None;
            d.rebuilding_from = None;
            d.last_error = Some(message.to_string());
        });
    }
}
