//! `~/.docdex/daemon.lock`: at most one `docdex daemon` per docdex home. The file
//! holds an OS lock (released even on `kill -9`) and says who holds it (pid and
//! address), so a second daemon refuses with a message naming the first, and
//! `docdex daemon status|stop` find it ([`running`], [`stop`]).

use crate::engine::protocol::now_ms;
use crate::engine::Engine;
use crate::error::{Error, IoContext, Result};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What the lock file says about its holder.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DaemonInfo {
    /// The daemon's pid.
    pub pid: u32,
    /// The address it serves on.
    pub addr: String,
    /// When it started, epoch ms.
    pub started_ms: u64,
}

/// The held daemon lock; released (and the file removed) on drop.
#[derive(Debug)]
pub struct DaemonLock {
    file: File,
    path: PathBuf,
}

impl DaemonLock {
    /// Takes the lock at `path` or explains who holds it.
    pub fn acquire(path: &Path, addr: &str) -> Result<DaemonLock> {
        for _ in 0..5 {
            let mut file = open_owner_only(path).at("opening", path)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => {
                    let mut text = String::new();
                    let _ = file.read_to_string(&mut text);
                    let holder = serde_json::from_str::<DaemonInfo>(&text).ok();
                    let who = match holder {
                        Some(h) => format!("pid {} on {}", h.pid, h.addr),
                        None => "another process".to_string(),
                    };
                    return Err(Error::BadRequest(format!(
                        "a docdex daemon is already running ({who}; lock {}); use it, or stop it first",
                        path.display()
                    )));
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(Error::io("locking", path, e)),
            }
            // A previous holder may have removed the file between our open and lock: then we
            // hold a lock on a deleted inode and must start over on the new file.
            if !same_file(&file, path) {
                continue;
            }
            let info = DaemonInfo { pid: std::process::id(), addr: addr.to_string(), started_ms: now_ms() };
            let text = serde_json::to_string(&info).unwrap_or_default();
            file.set_len(0).at("truncating", path)?;
            file.rewind().at("rewinding", path)?;
            file.write_all(text.as_bytes()).at("writing", path)?;
            file.sync_data().at("syncing", path)?;
            return Ok(DaemonLock { file, path: path.to_path_buf() });
        }
        Err(Error::BadRequest(format!("could not take {}: it keeps being replaced", path.display())))
    }

    /// Records the address actually bound (when the configured port was 0).
    pub fn set_addr(&mut self, addr: &str) -> Result<()> {
        let info = DaemonInfo { pid: std::process::id(), addr: addr.to_string(), started_ms: now_ms() };
        let text = serde_json::to_string(&info).unwrap_or_default();
        self.file.set_len(0).at("truncating", &self.path)?;
        self.file.rewind().at("rewinding", &self.path)?;
        self.file.write_all(text.as_bytes()).at("writing", &self.path)?;
        self.file.sync_data().at("syncing", &self.path)
    }

    /// Reads the holder recorded in a lock file, if any.
    pub fn read(path: &Path) -> Option<DaemonInfo> {
        serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
    }
}

impl Drop for DaemonLock {
    fn drop(&mut self) {
        // Remove while still holding the lock, so no newcomer locks a file we then delete.
        let _ = std::fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}

/// Opens (creating owner-only, 0600) the lock file: it names this process and its address.
fn open_owner_only(path: &Path) -> std::io::Result<File> {
    let mut o = std::fs::OpenOptions::new();
    o.create(true).truncate(false).read(true).write(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    o.open(path)
}

#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_: &File, path: &Path) -> bool {
    path.exists()
}

/// `<home>/daemon.lock`: the one lock file of a home's daemon.
pub fn path(engine: &Engine) -> PathBuf {
    engine.paths().home.join("daemon.lock")
}

/// This home's daemon, while it holds its lock: a file left by a daemon killed with -9 (or
/// holding garbage) names nobody. The held-or-stale test is `docdex check`'s
/// ([`Engine::running_daemon`]); the start time is read beside it.
pub fn running(engine: &Engine) -> Option<DaemonInfo> {
    let (pid, addr) = engine.running_daemon()?;
    let path = &path(engine);
    let pid = u32::try_from(pid).ok()?;
    let started_ms = DaemonLock::read(path).filter(|i| i.pid == pid).map_or(0, |i| i.started_ms);
    Some(DaemonInfo { pid, addr, started_ms })
}

/// What a lock file nobody holds still says (a daemon that did not exit cleanly leaves it): shown
/// to the user, never signalled, since its pid may belong to anything by now.
pub fn stale(engine: &Engine) -> Option<DaemonInfo> {
    DaemonLock::read(&path(engine)).filter(|_| running(engine).is_none())
}

/// How `docdex daemon stop` ended.
#[derive(Debug, Clone, PartialEq)]
pub enum StopOutcome {
    /// No daemon holds the lock (a stale file's holder, if any, was not signalled).
    NotRunning(Option<DaemonInfo>),
    /// The lock is held, but its pid is not a docdex daemon of this home: nothing was signalled.
    Refused(DaemonInfo, String),
    /// SIGTERM was sent and the lock was released in time.
    Stopped(DaemonInfo),
    /// SIGTERM was sent but the lock is still held after the wait.
    StillRunning(DaemonInfo),
}

/// Stops this home's daemon: SIGTERM to the pid a held lock names, once
/// that pid is shown to be a docdex daemon with this lock open ([`not_our_daemon`]), then
/// waits up to `wait` for the lock to be released (its shutdown lets requests in flight finish).
pub fn stop(engine: &Engine, wait: Duration) -> StopOutcome {
    let Some(info) = running(engine) else { return StopOutcome::NotRunning(stale(engine)) };
    if let Some(why) = not_our_daemon(info.pid, &path(engine)) {
        return StopOutcome::Refused(info, why);
    }
    if let Err(e) = terminate(info.pid) {
        return StopOutcome::Refused(info.clone(), format!("SIGTERM to pid {} failed: {e}", info.pid));
    }
    let deadline = Instant::now() + wait;
    while running(engine).is_some_and(|i| i.pid == info.pid) {
        if Instant::now() >= deadline {
            return StopOutcome::StillRunning(info);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    StopOutcome::Stopped(info)
}

#[cfg(unix)]
fn terminate(pid: u32) -> std::io::Result<()> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| std::io::Error::other("pid out of range"))?;
    // SAFETY: kill(2) with a checked positive pid and a constant signal; no memory is shared.
    match unsafe { libc::kill(pid, libc::SIGTERM) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

#[cfg(not(unix))]
fn terminate(_: u32) -> std::io::Result<()> {
    Err(std::io::Error::other("stopping a daemon is supported on Unix only; stop it with Ctrl-C"))
}

/// Why `pid` is not the docdex daemon holding the lock at `path` (None when it is). A pid read
/// from a file may name any process, so before a signal it must run `docdex… daemon` and,
/// where `/proc` tells, have this very lock file open (a daemon of another home does not).
pub fn not_our_daemon(pid: u32, path: &Path) -> Option<String> {
    if pid <= 1 || pid == std::process::id() {
        return Some(format!("pid {pid} cannot be a docdex daemon"));
    }
    let Some(args) = command_line(pid) else { return Some(format!("no process {pid} can be seen")) };
    let named_docdex =
        args.first().and_then(|a| Path::new(a).file_name()).is_some_and(|n| n.to_string_lossy().starts_with("docdex"));
    if !named_docdex || !args.iter().skip(1).any(|a| a == "daemon") {
        return Some(format!("pid {pid} runs `{}`, not `docdex daemon`", args.join(" ")));
    }
    match holds_open(pid, path) {
        Some(false) => Some(format!("pid {pid} is a docdex daemon, but not the one holding {}", path.display())),
        _ => None,
    }
}

/// The argv of `pid`, or None when no such process can be seen.
#[cfg(target_os = "linux")]
fn command_line(pid: u32) -> Option<Vec<String>> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(raw.split(|b| *b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect())
}

#[cfg(not(target_os = "linux"))]
fn command_line(pid: u32) -> Option<Vec<String>> {
    let out = std::process::Command::new("ps").args(["-o", "command=", "-p", &pid.to_string()]).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !text.is_empty()).then(|| text.split_whitespace().map(str::to_string).collect())
}

/// Whether `pid` has `path` open (None when the system does not tell).
#[cfg(target_os = "linux")]
fn holds_open(pid: u32, path: &Path) -> Option<bool> {
    let want = path.canonicalize().ok()?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    Some(fds.flatten().any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == want)))
}

#[cfg(not(target_os = "linux"))]
fn holds_open(_: u32, _: &Path) -> Option<bool> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_holder_is_refused_with_the_first_ones_address() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("daemon.lock");
        let first = DaemonLock::acquire(&path, "127.0.0.1:1234").unwrap();
        assert_eq!(DaemonLock::read(&path).unwrap().addr, "127.0.0.1:1234");
        let err = DaemonLock::acquire(&path, "127.0.0.1:9999").unwrap_err().to_string();
        assert!(err.contains("already running") && err.contains("127.0.0.1:1234"), "{err}");
        drop(first);
        assert!(!path.exists(), "the lock file is removed on release");
        let again = DaemonLock::acquire(&path, "127.0.0.1:9999").unwrap();
        assert_eq!(DaemonLock::read(&path).unwrap().pid, std::process::id());
        drop(again);
    }
}
