//! The repo manager: maps a repository path to its fingerprint (SHA-256 of the
//! normalized absolute path, symlinks resolved) and its private state directory,
//! and keeps the registry of known repositories. Nothing is ever shared between
//! two fingerprints, which is what keeps repositories isolated.

use crate::config::Paths;
use crate::engine::fsutil::{now_ms, read_json, replace_json, write_json_atomic, FileLock};
use crate::error::{Error, IoContext, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// A path a user or client gave, as the index keys files: repo-relative with `/`, `.` and `..`
/// resolved ("" for the root itself). An absolute path is accepted when it lies inside `root`
/// (a canonical root), followed through symlinks when it exists; anything that leaves the
/// repository is [`Error::OutsideRepo`]. Every surface that takes a file goes through this, so
/// "inside the repository" means the same everywhere.
pub fn repo_relative(root: &Path, given: &str) -> Result<String> {
    let given = given.trim();
    let outside = || Error::OutsideRepo { path: given.to_string(), repo: root.to_path_buf() };
    let p = Path::new(given);
    // Where the path really leads, links followed as far as it exists: a link to `/root`
    // makes `link/anything` outside whether or not `anything` exists there, so no answer
    // tells what exists outside the repository.
    let real = resolve_existing(&if p.is_absolute() { p.to_path_buf() } else { root.join(p) });
    if !real.starts_with(root) {
        return Err(outside());
    }
    let rel = if p.is_absolute() {
        real.strip_prefix(root).map_err(|_| outside())?.to_string_lossy().replace('\\', "/")
    } else {
        given.replace('\\', "/")
    };
    crate::engine::code::resolve::join("", &rel).ok_or_else(outside)
}

/// `path` with its longest existing prefix canonicalized (links followed, as the kernel
/// would) and the rest appended, `.` and `..` applied; the path as given when no prefix
/// resolves.
pub fn resolve_existing(path: &Path) -> PathBuf {
    let parts: Vec<std::path::Component> = path.components().collect();
    for i in (1..=parts.len()).rev() {
        let prefix: PathBuf = parts[..i].iter().collect();
        let Ok(mut out) = std::fs::canonicalize(&prefix) else { continue };
        for c in &parts[i..] {
            match c {
                std::path::Component::ParentDir => {
                    out.pop();
                }
                std::path::Component::Normal(n) => out.push(n),
                _ => {}
            }
        }
        return out;
    }
    path.to_path_buf()
}

/// A path-prefix filter a user or client gave (`src/`, `./src`, an absolute directory) as the
/// index's paths start: [`repo_relative`], with a trailing `/` kept (`src/` is the directory
/// only; `src` is the file or the directory, see [`under_prefix`]); refused when it leaves the
/// repository.
pub fn repo_prefix(root: &Path, given: &str) -> Result<String> {
    let rel = repo_relative(root, given)?;
    let dir = given.trim().ends_with(['/', '\\']);
    Ok(if dir && !rel.is_empty() { format!("{rel}/") } else { rel })
}

/// Whether the index path `path` is under the filter `prefix` (as [`repo_prefix`] gives it):
/// the file itself or anything in the folder, by whole path components as git's pathspecs
/// match, so `celery/app` never takes in `celery/apps/`.
pub fn under_prefix(path: &str, prefix: &str) -> bool {
    if prefix.is_empty() || prefix.ends_with('/') {
        return path.starts_with(prefix);
    }
    path.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Version of the path normalization behind fingerprints; bump if it changes.
pub const FINGERPRINT_VERSION: u32 = 1;

/// A resolved repository: its canonical root and state locations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoRef {
    /// Canonical absolute root (symlinks resolved).
    pub root: PathBuf,
    /// SHA-256 hex of the normalized root.
    pub fingerprint: String,
    /// `state/repos/<fingerprint>/`.
    pub state_dir: PathBuf,
    /// The generation directory this handle is pinned to (a rebuild's `gen.next/`); `None`
    /// reads the live generation, resolved at each use (see [`Self::data_dir`]).
    pinned: Option<PathBuf>,
}

impl RepoRef {
    /// A repo whose derived data is read from its live generation.
    pub fn new(root: PathBuf, fingerprint: String, state_dir: PathBuf) -> RepoRef {
        RepoRef { root, fingerprint, state_dir, pinned: None }
    }

    /// The same repo, reading and writing the generation in `data_dir` (a rebuild's).
    pub fn with_data_dir(&self, data_dir: PathBuf) -> RepoRef {
        RepoRef { pinned: Some(data_dir), ..self.clone() }
    }

    /// The generation directory the index, manifest, symbol store and impact graph are read
    /// from (and written to): the live `state_dir/gen/` (see
    /// [`crate::engine::index::generation`]), looked up at each call so a long-lived handle (a
    /// server's mount) follows a migration; or the directory the handle is pinned to.
    pub fn data_dir(&self) -> PathBuf {
        match &self.pinned {
            Some(d) => d.clone(),
            None => crate::engine::index::generation::live_dir(&self.state_dir),
        }
    }

    /// The Tantivy index directory.
    pub fn index_dir(&self) -> PathBuf {
        self.data_dir().join("index")
    }
    /// The file manifest (content hashes, sizes, mtimes).
    pub fn manifest_path(&self) -> PathBuf {
        self.data_dir().join("manifest.json")
    }
    /// The live indexing status written by whichever process is indexing.
    pub fn status_path(&self) -> PathBuf {
        self.state_dir.join("index_status.json")
    }
    /// `repo_meta.json`.
    pub fn meta_path(&self) -> PathBuf {
        self.state_dir.join("repo_meta.json")
    }
}

/// Normalizes a path (absolute, symlinks resolved) and fingerprints it.
pub fn normalize(path: &Path) -> Result<PathBuf> {
    let canonical = std::fs::canonicalize(path).map_err(|_| Error::RepoNotFound { path: path.into() })?;
    if !canonical.is_dir() {
        return Err(Error::RepoNotFound { path: path.into() });
    }
    Ok(canonical)
}

/// SHA-256 hex of a normalized path.
pub fn fingerprint(normalized: &Path) -> String {
    let digest = Sha256::digest(normalized.to_string_lossy().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The repository containing `dir`: its git root, else `dir` itself.
pub fn discover_root(dir: &Path) -> PathBuf {
    git_root(dir).unwrap_or_else(|| dir.to_path_buf())
}

/// The nearest directory at or above `dir` holding `.git`.
fn git_root(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().find(|d| d.join(".git").exists()).map(Path::to_path_buf)
}

/// The repository a command run in `dir` without `--repo` means: its git root; else the
/// nearest of `registered` (canonical roots already indexed) at or above `dir`, so a non-git
/// project indexed with `--repo` is found from its subfolders; else `dir` itself. Only
/// ancestors of `dir` are candidates, so the answer always contains `dir`.
pub fn discover_known_root(dir: &Path, registered: &[PathBuf]) -> PathBuf {
    if let Some(root) = git_root(dir) {
        return root;
    }
    let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let known = real.ancestors().find(|a| registered.iter().any(|r| r == a));
    known.map(Path::to_path_buf).unwrap_or_else(|| dir.to_path_buf())
}

/// Directories that are never a repository, at any depth below them: the system's own state.
const SYSTEM_TREES: &[&str] = &[
    "/proc",
    "/sys",
    "/dev",
    "/etc",
    "/boot",
    "/run",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/var/run",
    "/var/log",
    "/var/cache",
    "/var/spool",
    "/private/etc",
    "/System",
    "/Library",
    "/Applications",
];
/// Directories that hold repositories but are not one themselves.
const CONTAINER_DIRS: &[&str] = &[
    "/",
    "/usr",
    "/usr/local",
    "/usr/src",
    "/var",
    "/var/lib",
    "/var/tmp",
    "/opt",
    "/tmp",
    "/home",
    "/root",
    "/srv",
    "/mnt",
    "/media",
    "/Users",
    "/Volumes",
    "/private",
    "/private/tmp",
    "/private/var",
    "/nix",
    "/snap",
];

/// Folders that hold credentials (keys, cloud and cluster tokens, password stores): a root
/// at or inside one is refused wherever it is, so no server mounts `~/.ssh` and hands out
/// `id_rsa` to whoever holds its token.
const CREDENTIAL_DIRS: &[&str] =
    &[".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".password-store", ".gcloud"];

/// Refuses a root no server should serve as a repository: the filesystem root, the home
/// directory itself (and its parents), the docdex home or anything in it, a system directory
/// or anything under one. A server is reachable by any local client (and by web pages as far
/// as the origin checks let them): mounting `/` would let one request index the machine.
pub fn check_servable_root(root: &Path, user_home: Option<&Path>, docdex_home: &Path) -> Result<()> {
    let refuse = |why: String| Err(Error::UnsafeRoot { path: root.to_path_buf(), reason: why });
    // The state records the root as text (repo_meta.json): such a root failed mid-index as a
    // "corrupt state file", and every later command said "not indexed yet".
    if root.to_str().is_none() {
        return Err(Error::BadRequest(format!(
            "the repository's path {} is not valid UTF-8: docdex records and serves a repository by its path as text; rename the directory (or the parent whose name is not UTF-8) to index it",
            root.display()
        )));
    }
    let docdex_home = std::fs::canonicalize(docdex_home).unwrap_or_else(|_| docdex_home.to_path_buf());
    if root.starts_with(&docdex_home) {
        return refuse(format!("it is docdex's own home ({}) or inside it", docdex_home.display()));
    }
    if CONTAINER_DIRS.iter().any(|d| root == Path::new(d)) {
        return refuse(
            "it holds other directories (the filesystem root or a system-wide parent directory), not a repository"
                .into(),
        );
    }
    if let Some(t) = SYSTEM_TREES.iter().find(|d| root.starts_with(d)) {
        return refuse(format!("it is a system directory (under {t})"));
    }
    let names: Vec<&std::ffi::OsStr> = root.iter().collect();
    let gcloud = names.windows(2).any(|w| w[0] == ".config" && w[1] == "gcloud");
    if let Some(dir) = names.iter().find_map(|n| CREDENTIAL_DIRS.iter().find(|d| *n == **d)) {
        return refuse(format!("it is or lies in a {dir} folder, which holds credentials"));
    }
    if gcloud {
        return refuse("it is or lies in .config/gcloud, which holds credentials".into());
    }
    if let Some(home) = user_home.map(|h| std::fs::canonicalize(h).unwrap_or_else(|_| h.to_path_buf())) {
        if home.starts_with(root) {
            return refuse(format!("it is your home directory ({}) or a directory above it", home.display()));
        }
    }
    Ok(())
}

/// `repo_meta.json`, as the spec lays it out.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RepoMeta {
    /// SHA-256 of the canonical path.
    pub fingerprint_sha256: String,
    /// [`FINGERPRINT_VERSION`].
    pub fingerprint_version: u32,
    /// Canonical root.
    pub canonical_path: PathBuf,
    /// First seen.
    pub created_at_epoch_ms: u64,
    /// Last touched by any command.
    pub last_seen_at_epoch_ms: u64,
}

/// One known repository in the registry.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct RepoRecord {
    /// Canonical root.
    pub path: PathBuf,
    /// Its fingerprint.
    pub fingerprint: String,
    /// When an index run last completed (epoch ms), if ever.
    pub last_indexed_ms: Option<u64>,
    /// Files in the index.
    pub files: u64,
    /// Chunks in the index.
    pub chunks: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct RegistryFile {
    schema_version: u32,
    repos: Vec<RepoRecord>,
}

/// The registry of known repositories (`state/registry.json`), safe across processes.
#[derive(Debug, Clone)]
pub struct Registry {
    paths: Paths,
}

impl Registry {
    /// A registry over the given state layout.
    pub fn new(paths: Paths) -> Self {
        Self { paths }
    }

    /// Resolves a path to a [`RepoRef`] without creating anything.
    pub fn resolve(&self, path: &Path) -> Result<RepoRef> {
        let root = normalize(path)?;
        let fingerprint = fingerprint(&root);
        let state_dir = self.paths.repo_state(&fingerprint);
        Ok(RepoRef::new(root, fingerprint, state_dir))
    }

    /// Creates the repo's state directory and `repo_meta.json` if needed, and registers it.
    /// Idempotent and safe when several processes race.
    pub fn ensure(&self, repo: &RepoRef) -> Result<()> {
        std::fs::create_dir_all(&repo.state_dir)
            .map_err(|e| Error::StateNotWritable { path: repo.state_dir.clone(), reason: e.to_string() })?;
        let now = now_ms();
        match read_json::<RepoMeta>(&repo.meta_path()).ok().flatten() {
            // Only the last-seen time changes: no need to wait for the disk.
            // Advisory: a full disk must not stop a run from saying what it can.
            Some(mut m) => {
                m.last_seen_at_epoch_ms = now;
                if let Err(e) = replace_json(&repo.meta_path(), &m) {
                    tracing::warn!("could not record the last-seen time: {e}");
                }
            }
            None => {
                let meta = RepoMeta {
                    fingerprint_sha256: repo.fingerprint.clone(),
                    fingerprint_version: FINGERPRINT_VERSION,
                    canonical_path: repo.root.clone(),
                    created_at_epoch_ms: now,
                    last_seen_at_epoch_ms: now,
                };
                write_json_atomic(&repo.meta_path(), &meta)?;
            }
        }
        self.update(|records| {
            if !records.iter().any(|r| r.fingerprint == repo.fingerprint) {
                records.push(RepoRecord {
                    path: repo.root.clone(),
                    fingerprint: repo.fingerprint.clone(),
                    last_indexed_ms: None,
                    files: 0,
                    chunks: 0,
                });
            }
        })
    }

    /// All known repositories, sorted by path.
    pub fn list(&self) -> Result<Vec<RepoRecord>> {
        let mut repos = read_json::<RegistryFile>(&self.paths.registry())?.unwrap_or_default().repos;
        repos.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(repos)
    }

    /// The record for a fingerprint, if registered.
    pub fn get(&self, fingerprint: &str) -> Result<Option<RepoRecord>> {
        Ok(self.list()?.into_iter().find(|r| r.fingerprint == fingerprint))
    }

    /// Records the outcome of an index run.
    pub fn record_indexed(&self, repo: &RepoRef, files: u64, chunks: u64) -> Result<()> {
        self.update(|records| {
            if let Some(r) = records.iter_mut().find(|r| r.fingerprint == repo.fingerprint) {
                r.last_indexed_ms = Some(now_ms());
                r.files = files;
                r.chunks = chunks;
            }
        })
    }

    /// Forgets a repository; with `purge`, deletes its state directory too.
    /// Works for repos whose directory no longer exists (matched by the recorded path).
    pub fn remove(&self, path: &Path, purge: bool) -> Result<RepoRecord> {
        let wanted = normalize(path).ok();
        let mut removed = None;
        self.update(|records| {
            if let Some(i) = records.iter().position(|r| Some(&r.path) == wanted.as_ref() || r.path == path) {
                removed = Some(records.remove(i));
            }
        })?;
        let unknown = || Error::UnknownRepo { path: path.into() };
        let record = match removed {
            Some(r) => r,
            // Forgotten earlier with its index kept ("--purge deletes it"): purge what is left.
            None if purge => {
                let root = wanted.ok_or_else(unknown)?;
                let fingerprint = fingerprint(&root);
                if !self.paths.repo_state(&fingerprint).exists() {
                    return Err(unknown());
                }
                RepoRecord { path: root, fingerprint, last_indexed_ms: None, files: 0, chunks: 0 }
            }
            None => return Err(unknown()),
        };
        if purge {
            let dir = self.paths.repo_state(&record.fingerprint);
            if dir.exists() {
                std::fs::remove_dir_all(&dir).at("removing", &dir)?;
            }
        }
        Ok(record)
    }

    fn update(&self, f: impl FnOnce(&mut Vec<RepoRecord>)) -> Result<()> {
        let _lock = FileLock::acquire(&self.paths.locks().join("registry.lock"))?;
        let path = self.paths.registry();
        let mut file = read_json::<RegistryFile>(&path)?.unwrap_or_default();
        let (version, before) = (file.schema_version, file.repos.clone());
        file.schema_version = 1;
        f(&mut file.repos);
        if version == 1 && file.repos == before && path.exists() {
            // Nothing changed (re-registering a known repo): skip the write and its fsync.
            return Ok(());
        }
        write_json_atomic(&path, &file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_paths_become_repo_relative_or_are_refused_outside() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical").join("repo");
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        std::fs::write(root.join("src/lib.rs"), "").expect("write");
        std::fs::write(dir.path().join("secret.txt"), "").expect("write");
        let rel = |g: &str| repo_relative(&root, g);
        assert_eq!(rel("src/lib.rs").ok().as_deref(), Some("src/lib.rs"));
        assert_eq!(rel(" ./src/../src/lib.rs ").ok().as_deref(), Some("src/lib.rs"));
        assert_eq!(rel("src\\lib.rs").ok().as_deref(), Some("src/lib.rs"));
        assert_eq!(rel(root.join("src/lib.rs").to_str().expect("utf8")).ok().as_deref(), Some("src/lib.rs"));
        assert_eq!(rel(root.join("src/new.rs").to_str().expect("utf8")).ok().as_deref(), Some("src/new.rs"));
        assert_eq!(rel(".").ok().as_deref(), Some(""), "the root itself");
        let secret = dir.path().join("secret.txt");
        for bad in ["../secret.txt", "src/../../secret.txt", secret.to_str().expect("utf8"), "/etc/passwd"] {
            assert!(matches!(rel(bad), Err(Error::OutsideRepo { .. })), "{bad}");
        }
        #[cfg(unix)]
        {
            // A link inside the repository that points out of it is outside, by where it leads.
            std::os::unix::fs::symlink(&secret, root.join("src/link.txt")).expect("symlink");
            let link = root.join("src/link.txt");
            assert!(matches!(rel(link.to_str().expect("utf8")), Err(Error::OutsideRepo { .. })));
            // Relative through a linked directory: outside too, so whether a file exists out
            // there is not told by "exists" and "no such file" answers.
            std::os::unix::fs::symlink(dir.path(), root.join("up")).expect("symlink");
            assert!(matches!(rel("up/secret.txt"), Err(Error::OutsideRepo { .. })));
            assert!(matches!(rel("up/no-such-file.txt"), Err(Error::OutsideRepo { .. })));
            assert!(matches!(rel("up/no/such/dir/x.rs"), Err(Error::OutsideRepo { .. })));
            let abs = root.join("up/no-such-file.txt");
            assert!(matches!(rel(abs.to_str().expect("utf8")), Err(Error::OutsideRepo { .. })));
            // Inside, missing: still a path inside (the caller says it is not found).
            assert_eq!(rel("src/no-such-file.rs").ok().as_deref(), Some("src/no-such-file.rs"));
            assert!(matches!(rel("src/link.txt"), Err(Error::OutsideRepo { .. })));
        }
    }

    #[test]
    fn only_a_repository_of_its_own_is_servable() {
        let home = Path::new("/home/ada");
        let docdex = Path::new("/home/ada/.docdex");
        let ok = |p: &str| check_servable_root(Path::new(p), Some(home), docdex);
        for bad in [
            "/",
            "/etc",
            "/etc/nginx",
            "/proc/1",
            "/usr",
            "/var",
            "/tmp",
            "/home",
            "/home/ada",
            "/home/ada/.docdex/state",
            "/home/ada/.ssh",
            "/home/ada/.aws/sso",
            "/srv/backup/.gnupg",
            "/home/ada/.config/gcloud",
        ] {
            let e = ok(bad).unwrap_err();
            assert_eq!(e.code(), "forbidden_repo", "{bad}");
            assert!(e.to_string().contains(bad), "{e}");
        }
        for good in [
            "/home/ada/src/docdex",
            "/srv/repo",
            "/tmp/work/repo",
            "/usr/src/linux",
            "/var/lib/jenkins/workspace/app",
            "/opt/project",
            "/home/ada/.config/nvim",
            "/home/ada/src/ssh-tools",
        ] {
            assert!(ok(good).is_ok(), "{good}");
        }
    }
}
