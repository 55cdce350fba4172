//! Headless Chromium, guarded so that no browser outlives the docdex process that started it.
//!
//! docdex spawns the browser itself and connects `headless_chrome` to its DevTools socket
//! (never `headless_chrome`'s own launcher, which cannot survive `kill -9` of its owner, and
//! never a download: only a browser already installed is used). Four layers make sure nothing
//! is left behind:
//!
//! 1. **Drop**: [`Chromium`]'s drop (normal exit, errors, panics unwinding) kills the browser's
//!    whole process group and waits for it.
//! 2. **Parent death**: on Linux the browser is spawned with `PR_SET_PDEATHSIG = SIGKILL` from a
//!    keeper thread that lives as long as the browser, so when docdex dies by any signal
//!    (`kill -9`, Ctrl-C) the kernel kills the browser's main process, and its helpers exit as
//!    their pipe to it closes (measured here: all gone within a second).
//! 3. **Lock files**: `state/locks/browser-<id>.json` records the owner's pid and start time and
//!    the browser's pid, start time and profile directory, and `browser-<id>.lock` is held
//!    (an OS lock) while the owner lives. The next docdex that launches a browser, runs
//!    `browser list` or `check` finds locks nobody holds and kills every process still using
//!    that profile (found by its `--user-data-dir` in `/proc/*/cmdline`), then removes the
//!    profile and the lock files. That catches whatever layer 2 could not (another OS, a helper
//!    that ignored its broken pipe).
//! 4. **Idle**: in long-running processes (server, workbench) the keeper closes a browser that
//!    was not used for `[web.scraper] idle_shutdown_secs`.

use super::egress::{Egress, PassGuard};
use super::policy::UrlPolicy;
use super::types::{BrowserCandidate, ReapedBrowser, RunningBrowser};
use crate::config::ScraperConfig;
use crate::engine::fsutil::{now_ms, read_json, write_json_atomic, FileLock};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Names tried on PATH, in order, with the kind each one is.
const PATH_NAMES: &[(&str, &str)] = &[
    ("chromium", "chromium"),
    ("chromium-browser", "chromium"),
    ("google-chrome", "chrome"),
    ("google-chrome-stable", "chrome"),
    ("chrome", "chrome"),
    ("microsoft-edge", "edge"),
    ("microsoft-edge-stable", "edge"),
    ("brave-browser", "brave"),
    ("vivaldi", "vivaldi"),
];

/// Usual install locations outside PATH (macOS application bundles, Windows programs).
const KNOWN_PATHS: &[(&str, &str)] = &[
    ("/Applications/Google Chrome.app/Contents/MacOS/Google Chrome", "chrome"),
    ("/Applications/Chromium.app/Contents/MacOS/Chromium", "chromium"),
    ("/Applications/Microsoft Edge.app/Contents/MacOS/Microsoft Edge", "edge"),
    ("/Applications/Brave Browser.app/Contents/MacOS/Brave Browser", "brave"),
    ("C:\\Program Files\\Google\\Chrome\\Application\\chrome.exe", "chrome"),
    ("C:\\Program Files (x86)\\Microsoft\\Edge\\Application\\msedge.exe", "edge"),
];

/// Every browser docdex can find: the configured one first, then PATH, then usual locations.
/// The first that exists is the one used.
pub fn discover(cfg: &ScraperConfig) -> Vec<BrowserCandidate> {
    let mut out: Vec<BrowserCandidate> = Vec::new();
    let mut push = |path: PathBuf, kind: &str, source: &str| {
        let shown = path.display().to_string();
        if !out.iter().any(|c| c.path == shown) {
            out.push(BrowserCandidate { path: shown, kind: kind.into(), source: source.into(), selected: false });
        }
    };
    let configured = cfg.chrome_binary_path.trim();
    if !configured.is_empty() && Path::new(configured).is_file() {
        let kind = if cfg.browser_kind.is_empty() { kind_of(Path::new(configured)) } else { cfg.browser_kind.clone() };
        push(PathBuf::from(configured), &kind, "config");
    }
    for (name, kind) in PATH_NAMES {
        if let Some(p) = crate::engine::llm::hardware::which(name) {
            push(p, kind, "path");
        }
    }
    for (p, kind) in KNOWN_PATHS {
        if Path::new(p).is_file() {
            push(PathBuf::from(p), kind, "known");
        }
    }
    if let Some(first) = out.first_mut() {
        first.selected = true;
    }
    out
}

/// Why the configured `[web.scraper] chrome_binary_path` is not used, when one is set and is
/// not a file: the next browser found is used instead, and every report says so.
pub fn configured_missing(cfg: &ScraperConfig) -> Option<String> {
    let configured = cfg.chrome_binary_path.trim();
    (!configured.is_empty() && !Path::new(configured).is_file()).then(|| {
        format!("[web.scraper] chrome_binary_path {configured} is not a file; `docdex browser setup` saves one that is")
    })
}

/// The browser kind a binary's name suggests.
pub fn kind_of(path: &Path) -> String {
    let name = path.file_name().map(|n| n.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    for (needle, kind) in
        [("edge", "edge"), ("msedge", "edge"), ("brave", "brave"), ("vivaldi", "vivaldi"), ("chromium", "chromium")]
    {
        if name.contains(needle) {
            return kind.into();
        }
    }
    "chrome".into()
}

/// Why no browser can be used, with what to do: for `browser install` and errors.
pub fn install_help() -> String {
    let os = std::env::consts::OS;
    let how = match os {
        "linux" => {
            "install your distribution's package: `sudo apt-get install chromium` (Debian, Ubuntu), \
                    `sudo dnf install chromium` (Fedora), `sudo pacman -S chromium` (Arch), or Google Chrome"
        }
        "macos" => {
            "install Google Chrome or Chromium (`brew install --cask chromium` or `brew install --cask google-chrome`)"
        }
        "windows" => "install Google Chrome or Microsoft Edge (Edge is usually already there)",
        _ => "install Chromium or Google Chrome with your system's package manager",
    };
    format!(
        "docdex never downloads a browser. To enable the web tier's rendering, {how}; then run \
         `docdex browser setup` (or `docdex browser setup --path /path/to/chrome`). Without a browser, \
         pages are fetched over plain HTTP with the same extraction."
    )
}

/// What a browser's lock file says.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct LockInfo {
    owner_pid: u32,
    owner_start: u64,
    pid: u32,
    pid_start: u64,
    binary: String,
    profile: PathBuf,
    started_at: u64,
}

/// Where browsers keep their profiles and locks.
#[derive(Debug, Clone)]
pub struct BrowserDirs {
    /// `state/locks/`.
    pub locks: PathBuf,
    /// `state/browser/profiles/`.
    pub profiles: PathBuf,
}

impl BrowserDirs {
    /// The directories under `state`.
    pub fn new(state: &Path) -> BrowserDirs {
        BrowserDirs { locks: state.join("locks"), profiles: state.join("browser").join("profiles") }
    }
}

/// Browsers of live docdex processes.
pub fn running(dirs: &BrowserDirs) -> Vec<RunningBrowser> {
    lock_infos(dirs)
        .into_iter()
        .filter(|(lock, _, _)| matches!(FileLock::try_acquire(lock), Ok(None)))
        .map(|(_, _, i)| RunningBrowser {
            owner_pid: i.owner_pid,
            pid: i.pid,
            binary: i.binary,
            started_at: i.started_at,
        })
        .collect()
}

fn lock_infos(dirs: &BrowserDirs) -> Vec<(PathBuf, PathBuf, LockInfo)> {
    let Ok(rd) = std::fs::read_dir(&dirs.locks) else { return Vec::new() };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_prefix("browser-").and_then(|n| n.strip_suffix(".json")) else { continue };
        let json = e.path();
        let lock = dirs.locks.join(format!("browser-{stem}.lock"));
        if let Ok(Some(info)) = read_json::<LockInfo>(&json) {
            out.push((lock, json, info));
        }
    }
    out
}

/// Stops what killed docdex processes left behind: browsers whose owner's lock is free, and
/// profiles no lock file claims. Returns what was stopped.
pub fn reap(dirs: &BrowserDirs) -> Vec<ReapedBrowser> {
    let mut reaped = Vec::new();
    let mut claimed = Vec::new();
    for (lock, json, info) in lock_infos(dirs) {
        match FileLock::try_acquire(&lock) {
            Ok(Some(held)) => {
                let killed = kill_profile(&info.profile, info.pid, info.pid_start);
                remove_profile(&info.profile);
                let _ = std::fs::remove_file(&json);
                drop(held);
                let _ = std::fs::remove_file(&lock);
                tracing::info!(owner = info.owner_pid, killed, "reaped a browser left by a dead docdex process");
                reaped.push(ReapedBrowser { owner_pid: info.owner_pid, killed });
            }
            _ => claimed.push(info.profile),
        }
    }
    // Profiles nobody claims: the owner died between creating its lock and the profile, or
    // its lock files were removed by hand.
    if let Ok(rd) = std::fs::read_dir(&dirs.profiles) {
        for e in rd.flatten() {
            let p = e.path();
            if claimed.contains(&p) {
                continue;
            }
            let owner: u32 =
                e.file_name().to_string_lossy().split('-').next().and_then(|s| s.parse().ok()).unwrap_or(0);
            if owner == std::process::id() {
                continue;
            }
            let killed = kill_profile(&p, 0, 0);
            remove_profile(&p);
            if killed > 0 {
                reaped.push(ReapedBrowser { owner_pid: owner, killed });
            }
        }
    }
    reaped
}

/// Removes a stopped browser's profile and the directory Chromium made for its singleton socket
/// in its TMPDIR (`state/browser/tmp/org.chromium.Chromium.*` or `/tmp/...`, which the profile's
/// `SingletonSocket` links into): a killed browser never removes that one, so each launch would
/// leave one behind. The socket cannot live in the profile itself: its path would pass the 108
/// bytes a Unix socket's may take ([`browser_tmp`]).
fn remove_profile(profile: &Path) {
    if let Ok(target) = std::fs::read_link(profile.join("SingletonSocket")) {
        if let Some(dir) = target.parent().filter(|d| d.is_absolute()) {
            // Only what Chromium puts there; remove_dir then refuses anything else.
            for name in ["SingletonSocket", "SingletonCookie", "SingletonLock"] {
                let _ = std::fs::remove_file(dir.join(name));
            }
            let _ = std::fs::remove_dir(dir);
        }
    }
    let _ = std::fs::remove_dir_all(profile);
}

/// The folder given to the browser as TMPDIR: `state/browser/tmp`, beside the profiles, when
/// the singleton socket Chromium makes there (`<tmp>/org.chromium.Chromium.XXXXXX/SingletonSocket`)
/// fits in the 108 bytes a Unix socket's path may take. A browser killed with its owner left
/// its folder in the system's TMPDIR, reaped only by a later run on the same home: a home never
/// used again (a test's, a script's) left it there for good. `None` (the system's TMPDIR) when
/// the path would be too long or the folder cannot be made.
fn browser_tmp(profile: &Path) -> Option<PathBuf> {
    const SOCKET_TAIL: usize = "/org.chromium.Chromium.XXXXXX/SingletonSocket".len();
    let tmp = profile.parent()?.parent()?.join("tmp");
    if tmp.as_os_str().len() + SOCKET_TAIL >= 108 {
        return None;
    }
    std::fs::create_dir_all(&tmp).ok()?;
    Some(tmp)
}

/// Kills every process using `profile` (and the recorded main process when it is still the
/// same process), waiting until they are gone. Returns how many were killed.
fn kill_profile(profile: &Path, pid: u32, pid_start: u64) -> u32 {
    let mut killed = 0;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut pids = processes_using(profile);
        if pid != 0 && pid_start != 0 && process_start(pid) == Some(pid_start) && !pids.contains(&pid) {
            pids.push(pid);
        }
        if pids.is_empty() || Instant::now() > deadline {
            return killed;
        }
        for p in pids {
            if kill(p) {
                killed += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(unix)]
fn kill(pid: u32) -> bool {
    // SAFETY: sending a signal to a pid has no memory-safety preconditions.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) == 0 }
}

#[cfg(not(unix))]
fn kill(_pid: u32) -> bool {
    false
}

/// Pids of processes whose command line has `--user-data-dir=<profile>` (Linux `/proc`).
pub fn processes_using(profile: &Path) -> Vec<u32> {
    let needle = format!("--user-data-dir={}", profile.display());
    processes_matching(|args| args.iter().any(|a| a == &needle))
}

/// Pids of processes whose arguments satisfy `pred` (Linux `/proc`; empty elsewhere).
pub fn processes_matching(pred: impl Fn(&[String]) -> bool) -> Vec<u32> {
    let Ok(rd) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let Ok(raw) = std::fs::read(e.path().join("cmdline")) else { continue };
        let args: Vec<String> =
            raw.split(|b| *b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        if pred(&args) && !is_zombie(pid) {
            out.push(pid);
        }
    }
    out
}

fn is_zombie(pid: u32) -> bool {
    stat_fields(pid).is_some_and(|f| f.first().map(String::as_str) == Some("Z"))
}

/// Fields of `/proc/<pid>/stat` after the command name (state is the first).
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 1..];
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// A process's start time in clock ticks since boot (Linux), to tell a pid from its reuse.
pub fn process_start(pid: u32) -> Option<u64> {
    stat_fields(pid)?.get(19)?.parse().ok()
}

/// A running headless browser, connected.
pub struct Chromium {
    browser: Option<headless_chrome::Browser>,
    keeper: Option<Keeper>,
    binary: PathBuf,
    pid: u32,
    version: String,
    start_ms: f64,
    _lock: FileLock,
    lock_json: PathBuf,
    profile: PathBuf,
    /// Tabs open right now.
    pub(crate) in_use: Arc<AtomicUsize>,
    /// Last use (ms since the epoch), for the idle shutdown.
    pub(crate) last_used: Arc<AtomicU64>,
    /// Helper threads of pages (loading, reading, stopping a tab) still running.
    pub(crate) page_helpers: Arc<AtomicUsize>,
    /// The proxy every connection of the browser goes through (dropped after the browser).
    egress: Option<Egress>,
}

struct Keeper {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<()>,
    alive: Arc<AtomicBool>,
    /// Set once DevTools answered: a browser that exits before is a failed start, which the
    /// launch reports as its error (`exited during start-up`), not the keeper as a log line.
    ready: Arc<AtomicBool>,
}

impl Chromium {
    /// Launches `binary` headless with a fresh profile and connects to it. `idle` > 0 closes
    /// the browser after that long unused (checked by its keeper thread). `extra` are more
    /// arguments for the browser (tests only: see `Engine::set_browser_args_for_tests`).
    pub fn launch(
        binary: &Path,
        cfg: &ScraperConfig,
        dirs: &BrowserDirs,
        idle: Duration,
        extra: &[String],
    ) -> Result<Chromium> {
        let started = Instant::now();
        reap(dirs);
        let id = format!("{}-{}", std::process::id(), uuid::Uuid::new_v4().simple());
        let lock_path = dirs.locks.join(format!("browser-{id}.lock"));
        let lock_json = dirs.locks.join(format!("browser-{id}.json"));
        let lock = FileLock::acquire(&lock_path)?;
        let profile = dirs.profiles.join(&id);
        let mut info = LockInfo {
            owner_pid: std::process::id(),
            owner_start: process_start(std::process::id()).unwrap_or(0),
            pid: 0,
            pid_start: 0,
            binary: binary.display().to_string(),
            profile: profile.clone(),
            started_at: now_ms(),
        };
        // The lock file exists before the profile, so a profile without one is an orphan.
        write_json_atomic(&lock_json, &info)?;
        let fail = |why: String| {
            remove_profile(&profile);
            let _ = std::fs::remove_file(&lock_json);
            Error::Upstream(format!("cannot start the browser {}: {why}", binary.display()))
        };
        std::fs::create_dir_all(&profile).map_err(|e| fail(format!("creating its profile: {e}")))?;
        let last_used = Arc::new(AtomicU64::new(now_ms()));
        let in_use = Arc::new(AtomicUsize::new(0));
        let egress = Egress::start().map_err(|e| fail(format!("starting its proxy: {e}")))?;
        let mut cmd = command(binary, cfg, &profile);
        cmd.args(egress.browser_args()).args(extra).arg("about:blank");
        let (keeper, pid) =
            Keeper::spawn(cmd, idle, last_used.clone(), in_use.clone()).map_err(|e| fail(e.to_string()))?;
        info.pid = pid;
        info.pid_start = process_start(pid).unwrap_or(0);
        let _ = write_json_atomic(&lock_json, &info);
        let mut me = Chromium {
            browser: None,
            keeper: Some(keeper),
            binary: binary.to_path_buf(),
            pid,
            version: String::new(),
            start_ms: 0.0,
            _lock: lock,
            lock_json,
            profile: profile.clone(),
            in_use,
            last_used,
            page_helpers: Arc::default(),
            egress: Some(egress),
        };
        // From here on, dropping `me` tears everything down.
        let ws = me.wait_for_devtools(started, Duration::from_secs(cfg.launch_timeout_secs))?;
        let browser = headless_chrome::Browser::connect_with_timeout(ws.clone(), Duration::from_secs(24 * 3600))
            .map_err(|e| Error::Upstream(format!("cannot connect to the browser's DevTools: {e}")))?;
        quicken_devtools_calls(&ws);
        me.version = browser.get_version().map(|v| v.product).unwrap_or_default();
        me.browser = Some(browser);
        if let Some(k) = &me.keeper {
            k.ready.store(true, Ordering::SeqCst);
        }
        me.start_ms = started.elapsed().as_secs_f64() * 1e3;
        tracing::info!(pid, version = %me.version, ms = me.start_ms, "browser started");
        Ok(me)
    }

    fn wait_for_devtools(&self, started: Instant, timeout: Duration) -> Result<String> {
        let port_file = self.profile.join("DevToolsActivePort");
        loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                let mut lines = text.lines();
                if let (Some(port), Some(path)) = (lines.next(), lines.next()) {
                    if port.trim().parse::<u16>().is_ok() && path.starts_with('/') {
                        return Ok(format!("ws://127.0.0.1:{}{}", port.trim(), path.trim()));
                    }
                }
            }
            if !self.alive() {
                return Err(Error::Upstream(format!(
                    "the browser {} exited during start-up; its last output: {}",
                    self.binary.display(),
                    self.log_tail()
                )));
            }
            if started.elapsed() > timeout {
                return Err(Error::Upstream(format!(
                    "the browser {} did not open its DevTools socket within {}s (from a cold disk or on a busy \
                     machine a start can take longer: raise [web.scraper] launch_timeout_secs); its last output: {}",
                    self.binary.display(),
                    timeout.as_secs(),
                    self.log_tail()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.profile.join("chromium.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().filter(|l| !l.contains("dbus") && !l.trim().is_empty()).collect();
        let tail = lines[lines.len().saturating_sub(3)..].join(" | ");
        if tail.is_empty() {
            "no output".into()
        } else {
            tail
        }
    }

    /// The browser is still running.
    pub fn alive(&self) -> bool {
        self.keeper.as_ref().is_some_and(|k| k.alive.load(Ordering::SeqCst))
    }

    /// The connected browser.
    pub fn browser(&self) -> Result<&headless_chrome::Browser> {
        self.browser
            .as_ref()
            .filter(|_| self.alive())
            .ok_or_else(|| Error::Upstream("the browser is not running".into()))
    }

    /// The product string (`Chrome/126.0.6478.126`).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Spawn-to-connected time in milliseconds.
    pub fn start_ms(&self) -> f64 {
        self.start_ms
    }

    /// The executable.
    pub fn binary(&self) -> &Path {
        &self.binary
    }

    /// The browser's main process.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Puts a tab's URL rules in force for the browser's connections while the guard lives:
    /// `trusted` is the host of a URL the user gave (which may be this machine).
    pub(crate) fn admit(&self, policy: &UrlPolicy, trusted: Option<String>) -> Option<PassGuard> {
        self.egress.as_ref().map(|e| e.admit(policy, trusted))
    }

    /// Why the browser's last connection to `host` was refused or failed, if it was.
    pub(crate) fn connection_refusal(&self, host: &str) -> Option<super::egress::Refused> {
        self.egress.as_ref().and_then(|e| e.refusal(host))
    }

    /// How many helper threads of pages are still running: each page's load and reads run on
    /// helpers that must end with the page (done, stopped, timed out), not with the browser.
    pub fn page_helpers(&self) -> usize {
        self.page_helpers.load(Ordering::SeqCst)
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        // Close the DevTools connection first, then the processes.
        self.browser.take();
        if let Some(k) = self.keeper.take() {
            let _ = k.stop.send(());
            let _ = k.thread.join();
        }
        kill_profile(&self.profile, 0, 0);
        remove_profile(&self.profile);
        let _ = std::fs::remove_file(&self.lock_json);
        let lock_path = self.lock_json.with_extension("lock");
        let _ = std::fs::remove_file(lock_path);
        self.egress.take();
        tracing::info!(pid = self.pid, "browser stopped");
    }
}

/// The browser's command line, but for its proxy (`egress`) and its first page.
fn command(binary: &Path, cfg: &ScraperConfig, profile: &Path) -> Command {
    let mut cmd = Command::new(binary);
    if cfg.headless {
        cmd.arg("--headless");
    }
    if running_as_root() {
        // Chromium refuses to start its sandbox as root.
        cmd.arg("--no-sandbox");
    }
    cmd.args([
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--disable-default-apps",
        "--disable-dev-shm-usage",
        "--mute-audio",
        "--hide-scrollbars",
        "--remote-debugging-address=127.0.0.1",
        "--remote-debugging-port=0",
        // WebRTC's UDP would not go through the proxy (see `egress`).
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    ]);
    cmd.arg(format!("--user-data-dir={}", profile.display()));
    if let Some(tmp) = browser_tmp(profile) {
        cmd.env("TMPDIR", tmp);
    }
    cmd.stdin(Stdio::null()).stdout(Stdio::null());
    match std::fs::File::create(profile.join("chromium.log")) {
        Ok(f) => cmd.stderr(f),
        Err(_) => cmd.stderr(Stdio::null()),
    };
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Its own process group, so the whole browser (zygotes, renderers, utilities) can be
        // killed at once, and a terminal's Ctrl-C reaches docdex, which then tears it down.
        cmd.process_group(0);
        #[cfg(target_os = "linux")]
        {
            let parent = std::process::id() as libc::pid_t;
            // SAFETY: only async-signal-safe calls (prctl, getppid, _exit) between fork and exec.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    // The parent may have died before the line above: then nobody would kill us.
                    if libc::getppid() != parent {
                        libc::_exit(1);
                    }
                    Ok(())
                });
            }
        }
    }
    cmd
}

/// How long headless_chrome's DevTools reader may wait on the socket per read.
const DEVTOOLS_READ_TIMEOUT: Duration = Duration::from_millis(10);

/// headless_chrome's DevTools reader holds the connection's lock while it waits for a message,
/// up to the socket's read timeout (100 ms), and a command needs that lock to be sent: every
/// call waited about 100 ms, and a page takes a dozen (its upstream issue #446; 1.0.22 is the
/// newest release). The socket is this process's, so its read timeout is set shorter here:
/// a cold page through Chromium went from 2.25 s to 1.35 s (docs/PERFORMANCE.md).
fn quicken_devtools_calls(ws: &str) {
    let port = url::Url::parse(ws).ok().and_then(|u| u.port());
    let quickened = port.map_or(0, |p| set_loopback_read_timeout(p, DEVTOOLS_READ_TIMEOUT));
    if quickened != 1 {
        tracing::debug!(quickened, ws, "the DevTools connection's read timeout was left as it was");
    }
}

/// Sets the read timeout of this process's TCP connections to 127.0.0.1:`port`; how many.
/// Linux only (the sockets are found through /proc/self/fd); elsewhere none.
#[cfg(target_os = "linux")]
fn set_loopback_read_timeout(port: u16, timeout: Duration) -> usize {
    use std::os::fd::BorrowedFd;
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else { return 0 };
    let fds = dir.flatten().filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()));
    let peer = std::net::SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, port);
    fds.filter(|&fd| {
        // SAFETY: the descriptor was listed open just above and is only borrowed for these two
        // calls; on one that is not a connected IPv4 socket `peer_addr` fails and nothing is set.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        let socket = socket2::SockRef::from(&fd);
        let ours = socket.peer_addr().ok().and_then(|a| a.as_socket_ipv4()) == Some(peer);
        ours && socket.set_read_timeout(Some(timeout)).is_ok()
    })
    .count()
}

#[cfg(not(target_os = "linux"))]
fn set_loopback_read_timeout(_port: u16, _timeout: Duration) -> usize {
    0
}

fn running_as_root() -> bool {
    #[cfg(unix)]
    {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() == 0 }
    }
    #[cfg(not(unix))]
    {
        false
    }
}

impl Keeper {
    /// Spawns the browser from a thread that lives exactly as long as it (the parent-death
    /// signal follows the spawning *thread*), and returns once it runs.
    fn spawn(
        mut cmd: Command,
        idle: Duration,
        last_used: Arc<AtomicU64>,
        in_use: Arc<AtomicUsize>,
    ) -> std::io::Result<(Keeper, u32)> {
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let (pid_tx, pid_rx) = mpsc::channel::<std::io::Result<u32>>();
        let alive = Arc::new(AtomicBool::new(true));
        let alive_k = alive.clone();
        let ready = Arc::new(AtomicBool::new(false));
        let ready_k = ready.clone();
        let thread = std::thread::Builder::new().name("docdex-browser".into()).spawn(move || {
            let mut child: Child = match cmd.spawn() {
                Ok(c) => c,
                Err(e) => {
                    alive_k.store(false, Ordering::SeqCst);
                    let _ = pid_tx.send(Err(e));
                    return;
                }
            };
            let _ = pid_tx.send(Ok(child.id()));
            loop {
                match stop_rx.recv_timeout(Duration::from_millis(250)) {
                    Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                }
                if let Ok(Some(_)) = child.try_wait() {
                    // During start-up the launch's error says it (`docdex check` printed this
                    // line above its own table, tour17).
                    match ready_k.load(Ordering::SeqCst) {
                        true => tracing::warn!("the browser exited on its own"),
                        false => tracing::debug!("the browser exited during start-up"),
                    }
                    break;
                }
                let idle_for = now_ms().saturating_sub(last_used.load(Ordering::SeqCst));
                if !idle.is_zero() && in_use.load(Ordering::SeqCst) == 0 && idle_for > idle.as_millis() as u64 {
                    tracing::info!(idle_ms = idle_for, "closing the idle browser");
                    break;
                }
            }
            alive_k.store(false, Ordering::SeqCst);
            kill_group(child.id());
            let _ = child.kill();
            let _ = child.wait();
        })?;
        let pid = match pid_rx.recv() {
            Ok(Ok(pid)) => pid,
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(e);
            }
            Err(_) => {
                let _ = thread.join();
                return Err(std::io::Error::other("the browser keeper thread ended"));
            }
        };
        Ok((Keeper { stop: stop_tx, thread, alive, ready }, pid))
    }
}

fn kill_group(leader: u32) {
    #[cfg(unix)]
    {
        // SAFETY: signalling a process group has no memory-safety preconditions.
        unsafe {
            libc::killpg(leader as libc::pid_t, libc::SIGKILL);
        }
    }
    #[cfg(not(unix))]
    let _ = leader;
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::set_loopback_read_timeout;
    use std::net::{TcpListener, TcpStream};
    use std::time::Duration;

    #[test]
    fn only_connections_to_the_port_get_the_read_timeout() {
        let devtools = TcpListener::bind("127.0.0.1:0").unwrap();
        let other = TcpListener::bind("127.0.0.1:0").unwrap();
        let to_devtools = TcpStream::connect(devtools.local_addr().unwrap()).unwrap();
        let to_other = TcpStream::connect(other.local_addr().unwrap()).unwrap();
        // The server side of the connection: its peer is the client's port, not the listener's.
        let (accepted, _) = devtools.accept().unwrap();
        let ten_ms = Duration::from_millis(10);
        assert_eq!(set_loopback_read_timeout(devtools.local_addr().unwrap().port(), ten_ms), 1);
        // The kernel keeps it in its clock ticks (10 ms reads back as 12 at 250 Hz).
        let set = to_devtools.read_timeout().unwrap().expect("a read timeout");
        assert!(set >= ten_ms && set < Duration::from_millis(20), "{set:?}");
        assert_eq!(to_other.read_timeout().unwrap(), None);
        assert_eq!(accepted.read_timeout().unwrap(), None);
        // A port nothing of this process is connected to: none.
        let closed = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        assert_eq!(set_loopback_read_timeout(closed, ten_ms), 0);
    }
}
