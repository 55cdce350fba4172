//! `~/.docdex/daemon.lock`: at most one `docdex daemon` per docdex home. The file
//! holds an OS lock (released even on `kill -9`) and says who holds it (pid and
//! address), so a second daemon refuses with a message naming the first.

use crate::engine::protocol::now_ms;
use crate::error::{Error, IoContext, Result};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

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
