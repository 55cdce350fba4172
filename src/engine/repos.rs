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

mod recover;
mod relocate;

/// A repository's memories, in its state directory (what `memory` opens).
pub const MEMORY_DB: &str = "memory.db";
/// A repository's reasoning DAG of chat sessions, in its state directory (what `dag` opens).
pub const DAG_DB: &str = "dag.db";

pub use relocate::{Moved, UserData};

/// A hit's citation (`path:A-B`, `path:A`, as search prints it) split into the path and its
/// lines, so every surface takes what search gives: `docdex impact src/a.rs:10-20`,
/// `GET /v1/graph/impact?file=src/a.rs:10-20`. Unsplit when `given` is itself the name of a file
/// in the repository (a file may be called `notes:2`) or is no citation.
pub fn split_citation(root: &Path, given: &str) -> (String, Option<(u32, u32)>) {
    let unsplit = (given.to_string(), None);
    let Some((path, lines)) = given.rsplit_once(':') else { return unsplit };
    if path.is_empty() || root.join(given).exists() {
        return unsplit;
    }
    let num = |s: &str| s.parse::<u32>().ok().filter(|n| *n > 0);
    let range = match lines.split_once('-') {
        Some((a, b)) => num(a).zip(num(b)),
        None => num(lines).map(|a| (a, a)),
    };
    match range {
        Some(r) => (path.to_string(), Some(r)),
        None => unsplit,
    }
}

/// A path a user or client gave, as the index keys files: repo-relative with `/`, `.` and `..`
/// resolved ("" for the root itself). An absolute path is accepted when it lies inside `root`
/// (a canonical root), followed through symlinks when it exists; anything that leaves the
/// repository is [`Error::OutsideRepo`]. Every surface that takes a file goes through this, so
/// "inside the repository" means the same everywhere.
pub fn repo_relative(root: &Path, given: &str) -> Result<String> {
    let given = given.trim();
    check_given_path(given)?;
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

/// The longest path a client may give (bytes): `PATH_MAX` on Linux, so no file docdex could
/// open is refused.
pub const MAX_GIVEN_PATH_BYTES: usize = 4096;
/// The most components (`a/b/c` has three) a path a client gives may have: far deeper than any
/// repository, small enough that resolving it costs microseconds.
pub const MAX_GIVEN_PATH_PARTS: usize = 256;

/// Refuses a path no repository holds before anything resolves it: one holding a NUL byte, or
/// over [`MAX_GIVEN_PATH_BYTES`] or [`MAX_GIVEN_PATH_PARTS`]. Resolving a path costs a filesystem
/// lookup per component, and the 2 MiB body limit let one request send a million of them (`a/`
/// repeated), which kept a server's thread busy for hours after its client had gone.
pub fn check_given_path(given: &str) -> Result<()> {
    // No file name holds a NUL byte: such a path was looked up and answered "not found", as if
    // a file of that name might exist.
    if given.contains('\0') {
        return Err(Error::BadRequest(format!(
            "path {} holds a NUL byte, which no file name can hold",
            crate::error::quoted(given)
        )));
    }
    if given.len() > MAX_GIVEN_PATH_BYTES {
        return Err(Error::BadRequest(format!(
            "path {} is longer than {MAX_GIVEN_PATH_BYTES} bytes, the most a path may have",
            crate::error::quoted(given)
        )));
    }
    let parts = given.split(['/', '\\']).filter(|p| !p.is_empty()).count();
    if parts > MAX_GIVEN_PATH_PARTS {
        return Err(Error::BadRequest(format!(
            "path {} has {parts} components, over the {MAX_GIVEN_PATH_PARTS} a path may have",
            crate::error::quoted(given)
        )));
    }
    Ok(())
}

/// `path` (absolute) with its longest existing prefix resolved as the kernel would (links
/// followed) and the rest appended, `.` and `..` applied lexically there. One walk over the
/// components: a `lstat` each while the prefix exists, a canonicalization only at a link, so the
/// cost is linear in the components (it rebuilt and canonicalized every prefix: quadratic, 10 s
/// for 30,000 components). A relative path is taken from the current directory.
pub fn resolve_existing(path: &Path) -> PathBuf {
    use std::path::Component;
    let absolute;
    let path = if path.is_absolute() {
        path
    } else {
        match std::env::current_dir() {
            Ok(cwd) => {
                absolute = cwd.join(path);
                absolute.as_path()
            }
            Err(_) => return path.to_path_buf(),
        }
    };
    let mut out = PathBuf::new();
    // Whether `out` is a path that exists with every link in it resolved.
    let mut exists = true;
    for c in path.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => out.push(c.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => {
                out.push(name);
                if exists {
                    exists = resolve_last(&mut out);
                }
            }
        }
    }
    out
}

/// Resolves `path`'s last component (its parent exists, links resolved): a link is replaced by
/// where it leads. False when the component does not exist (or its link leads nowhere), so the
/// rest of the path is lexical.
fn resolve_last(path: &mut PathBuf) -> bool {
    match std::fs::symlink_metadata(&*path) {
        Ok(m) if m.file_type().is_symlink() => match std::fs::canonicalize(&*path) {
            Ok(real) => {
                *path = real;
                true
            }
            Err(_) => false,
        },
        Ok(_) => true,
        Err(_) => false,
    }
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

/// The repository a directory that is not one itself lies in: [`discover_known_root`] of it
/// when that is strictly above it (a git root, else one of `registered`), else `None`. A folder
/// of a repository named as the repository (an agent passing its working directory, `--repo .`
/// typed in a subfolder) most likely means that repository: indexing the folder would build a
/// second index nested in the repository's.
pub fn enclosing_root(dir: &Path, registered: &[PathBuf]) -> Option<PathBuf> {
    let root = discover_known_root(dir, registered);
    (root != dir && dir.starts_with(&root)).then_some(root)
}

/// The registered repository strictly above `dir` that already indexes it (the nearest), unless
/// `dir` is registered itself or is its own git top-level: a submodule or a clone nested in
/// another checkout is a repository of its own, while a plain folder of one would put its
/// files in two indexes.
pub fn covering_repo(dir: &Path, registered: &[PathBuf]) -> Option<PathBuf> {
    if dir.join(".git").exists() || registered.iter().any(|r| r == dir) {
        return None;
    }
    registered.iter().filter(|r| dir.starts_with(r)).max_by_key(|r| r.components().count()).cloned()
}

/// Why `repo remove --purge` stops: what it would delete, and the ways on.
fn purge_refusal(record: &RepoRecord, held: &UserData) -> String {
    let old = crate::error::shell_path(&record.path);
    let moved = match record.path.is_dir() {
        true => String::new(),
        false => format!("; if the folder moved, `docdex repo move {old} NEW_PATH` carries them to where it is now"),
    };
    format!(
        "{} holds {}, which --purge would delete for good{moved}; to delete them too: `docdex repo remove {old} --purge --yes`",
        record.path.display(),
        held.describe()
    )
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
    "/snap",
    "/var/run",
    "/var/log",
    "/var/cache",
    "/var/spool",
    "/var/mail",
    "/var/backups",
    "/private/etc",
    "/System",
    "/Library",
    "/Applications",
];
/// System trees that also hold checkouts (`/usr/src/linux`, `/usr/local/src/app`, a CI
/// agent's `/var/lib/jenkins/workspace/app`): a directory under one is a repository only when
/// it is a git work tree (it, or a directory above it below the tree, holds `.git`), so
/// `/usr/lib`, `/usr/include` or `/var/lib/dpkg` are refused and a clone is not.
const GIT_ONLY_TREES: &[&str] = &["/usr", "/var"];
/// Directories under [`GIT_ONLY_TREES`] that hold people's own files, served as `/tmp` is.
const OPEN_UNDER_SYSTEM: &[&str] = &["/var/www", "/var/tmp"];
/// Directories that hold repositories but are not one themselves.
const CONTAINER_DIRS: &[&str] = &[
    "/",
    "/usr",
    "/usr/local",
    "/usr/src",
    "/var",
    "/var/lib",
    "/var/tmp",
    "/var/www",
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
];

/// Folders that hold credentials (keys, cloud and cluster tokens, password stores): a root
/// at or inside one is refused wherever it is, so no server mounts `~/.ssh` and hands out
/// `id_rsa` to whoever holds its token.
const CREDENTIAL_DIRS: &[&str] =
    &[".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".password-store", ".gcloud", ".terraform.d"];

/// Where credentials live in a user's home (relative to it): a root that is one of them, lies
/// in one, or holds one (`~/.config` holds `gcloud/` and `gh/hosts.yml`, `~/.local` the
/// keyrings, `~/.cache` Hugging Face's token) is refused, since mounting it would serve them. Only the deny list's names count,
/// not what exists, so the answer does not change with what a tool happened to write.
pub const HOME_CREDENTIALS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".password-store",
    ".gcloud",
    ".config/gcloud",
    ".config/gh",
    ".config/hub",
    ".config/op",
    ".config/rclone",
    ".config/Code",
    ".config/google-chrome",
    ".config/chromium",
    ".cargo",
    ".npm",
    ".npmrc",
    ".pypirc",
    ".netrc",
    ".git-credentials",
    ".gem",
    ".terraform.d",
    ".mozilla",
    ".thunderbird",
    ".pki",
    ".local/share/keyrings",
    ".m2",
    ".gradle",
    ".vscode",
    ".cache/huggingface",
    ".huggingface",
];

/// Refuses a root no server should serve as a repository: the filesystem root, the home
/// directory itself (and its parents), the docdex home or anything in it, a system directory
/// or anything under one, a credential folder or a folder holding one. A server is reachable
/// by any local client (and by web pages as far as the origin checks let them): mounting `/`
/// would let one request index the machine.
pub fn check_servable_root(root: &Path, user_home: Option<&Path>, docdex_home: &Path) -> Result<()> {
    check_root(root, user_home, docdex_home, &|dir: &Path| dir.join(".git").exists())
}

/// [`check_servable_root`], asking `has_git` whether a directory holds `.git`.
fn check_root(
    root: &Path,
    user_home: Option<&Path>,
    docdex_home: &Path,
    has_git: &dyn Fn(&Path) -> bool,
) -> Result<()> {
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
    let user_home = user_home.map(|h| std::fs::canonicalize(h).unwrap_or_else(|_| h.to_path_buf()));
    // `/root` is a container directory and root's home: said as the home it is.
    if user_home.as_deref() == Some(root) {
        return refuse(format!("it is your home directory ({})", root.display()));
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
    if let Some(why) = system_tree_refusal(root, has_git) {
        return refuse(why);
    }
    if let Some(why) = credential_refusal(root) {
        return refuse(why);
    }
    if let Some(home) = user_home {
        if home.starts_with(root) {
            return refuse(format!("it is your home directory ({}) or a directory above it", home.display()));
        }
        if let Some(why) = home_credential_refusal(root, &home) {
            return refuse(why);
        }
    }
    Ok(())
}

/// Why a root under `/usr` or `/var` is refused: it is not a git work tree there.
fn system_tree_refusal(root: &Path, has_git: &dyn Fn(&Path) -> bool) -> Option<String> {
    let tree = GIT_ONLY_TREES.iter().map(Path::new).find(|t| root.starts_with(t))?;
    if OPEN_UNDER_SYSTEM.iter().any(|d| root.starts_with(d)) {
        return None;
    }
    let mut checkout =
        root.ancestors().take_while(|a| *a != tree && !CONTAINER_DIRS.iter().any(|d| *a == Path::new(d)));
    if checkout.any(has_git) {
        return None;
    }
    Some(format!(
        "it is a system directory (under {}) and not a git work tree; docdex serves a checkout there (a directory holding .git), not the system's files",
        tree.display()
    ))
}

/// Why a root is refused as a credential folder by its names: it is or lies in one, anywhere.
fn credential_refusal(root: &Path) -> Option<String> {
    let names: Vec<&std::ffi::OsStr> = root.iter().collect();
    if let Some(dir) = names.iter().find_map(|n| CREDENTIAL_DIRS.iter().find(|d| *n == **d)) {
        return Some(format!("it is or lies in a {dir} folder, which holds credentials"));
    }
    for sub in ["gcloud", "gh"] {
        if names.windows(2).any(|w| w[0] == ".config" && w[1] == sub) {
            return Some(format!("it is or lies in .config/{sub}, which holds credentials"));
        }
    }
    None
}

/// Why a root is refused for the home's credential locations ([`HOME_CREDENTIALS`]): it is
/// one, lies in one, or holds one. A root that holds some is refused whatever exists there,
/// but the message names those that do: it named the list's first (`~/.config/gcloud`) where
/// no such folder was.
fn home_credential_refusal(root: &Path, home: &Path) -> Option<String> {
    if let Some(c) = HOME_CREDENTIALS.iter().find(|c| root.starts_with(home.join(c))) {
        return Some(format!("it is or lies in ~/{c}, which holds credentials"));
    }
    let held: Vec<&str> = HOME_CREDENTIALS.iter().copied().filter(|c| home.join(c).starts_with(root)).collect();
    if held.is_empty() {
        return None;
    }
    let present: Vec<String> =
        held.iter().filter(|c| home.join(c).symlink_metadata().is_ok()).map(|c| format!("~/{c}")).collect();
    let what = match present.as_slice() {
        [] => {
            "it is where tools keep credentials (none there yet, but a tool may put them there at any time)".to_string()
        }
        [one] => format!("it holds {one}, which holds credentials"),
        many => format!("it holds {}, which hold credentials", many.join(", ")),
    };
    Some(format!("{what}; index the project folders in it instead"))
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
    /// Its folder is gone (moved or deleted): its index answers nothing until it is indexed
    /// where it is now, and `docdex repo remove PATH --purge` deletes it. Looked at when the
    /// registry is listed, never read from `registry.json`.
    #[serde(default, skip_deserializing)]
    pub missing: bool,
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
        self.refuse_swapped_root(path)?;
        let root = normalize(path)?;
        let fingerprint = fingerprint(&root);
        let state_dir = self.paths.repo_state(&fingerprint);
        Ok(RepoRef::new(root, fingerprint, state_dir))
    }

    /// Refuses a registered repository's root that is now a symbolic link: roots are registered
    /// by their real path, so a link there means the folder was moved away and a link left in
    /// its place, and resolving through it answered, indexed and served the link's target as
    /// the repository (tour36 F1). A link the user names that was never a registered root is
    /// followed as ever (`--repo ~/code` leading to `/data/code`).
    fn refuse_swapped_root(&self, path: &Path) -> Result<()> {
        let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link {
            return Ok(());
        }
        let Ok(absolute) = std::path::absolute(path) else { return Ok(()) };
        if !self.list()?.iter().any(|r| r.path == absolute) {
            return Ok(());
        }
        Err(Error::BadRequest(format!(
            "repository {} was replaced by a symbolic link; docdex follows no link out of a repository: put the folder back, or after moving it run `docdex repo move {} NEW_PATH`",
            absolute.display(),
            crate::error::shell_path(&absolute)
        )))
    }

    /// Creates the repo's state directory and `repo_meta.json` if needed, and registers it.
    /// Idempotent and safe when several processes race.
    pub fn ensure(&self, repo: &RepoRef) -> Result<()> {
        crate::engine::fsutil::create_private_dir(&repo.state_dir)
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
        let mut added = false;
        self.update(|records| {
            if !records.iter().any(|r| r.fingerprint == repo.fingerprint) {
                added = true;
                records.push(RepoRecord {
                    path: repo.root.clone(),
                    fingerprint: repo.fingerprint.clone(),
                    last_indexed_ms: None,
                    files: 0,
                    chunks: 0,
                    missing: false,
                });
            }
        })?;
        if added {
            // Registered again after `repo remove`: a rebuilt registry lists it again too.
            let _ = std::fs::remove_file(repo.state_dir.join(recover::FORGOTTEN));
        }
        Ok(())
    }

    /// All known repositories, sorted by path. A damaged or missing registry is rebuilt from
    /// the repositories' state first ([`recover`]).
    pub fn list(&self) -> Result<Vec<RepoRecord>> {
        let mut repos = self.read()?.repos;
        repos.sort_by(|a, b| a.path.cmp(&b.path));
        for r in &mut repos {
            r.missing = !r.path.is_dir();
        }
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

    /// Forgets a repository; with `purge`, deletes its state directory too. A purge that would
    /// delete memories or chat sessions (which no index run makes again) is refused unless
    /// `lose_user_data`: after a move, `repo list` advised it, and it deleted them unsaid.
    /// Works for repos whose directory no longer exists (matched by the recorded path, or by
    /// the path made absolute, so `repo remove ../old --purge` finds a moved repository's).
    pub fn remove(&self, path: &Path, purge: bool, lose_user_data: bool) -> Result<(RepoRecord, UserData)> {
        let wanted = normalize(path).or_else(|_| std::path::absolute(path)).unwrap_or_else(|_| path.to_path_buf());
        let record = match self.list()?.into_iter().find(|r| r.path == wanted || r.path == path) {
            Some(r) => r,
            // Forgotten earlier with its index kept ("--purge deletes it"): purge what is left,
            // its folder there or gone.
            None if purge => self.forgotten(&wanted)?,
            None => return Err(Error::UnknownRepo { path: wanted }),
        };
        let dir = self.paths.repo_state(&record.fingerprint);
        let held = if purge { UserData::of(&dir) } else { UserData::default() };
        if held.any() && !lose_user_data {
            return Err(Error::BadRequest(purge_refusal(&record, &held)));
        }
        // Held until the state is gone: a watcher deleted under its feet died, and a server's
        // rebuilt the index and registered it again, undoing the purge unsaid (tour36 F2).
        let _writer = if purge {
            Some(relocate::writer_lock(&self.paths.locks(), &record.fingerprint, &record.path)?)
        } else {
            None
        };
        self.update(|records| records.retain(|r| r.fingerprint != record.fingerprint))?;
        if purge {
            if dir.exists() {
                std::fs::remove_dir_all(&dir).at("removing", &dir)?;
            }
        } else if dir.is_dir() {
            // The kept state must not bring it back when the registry is rebuilt.
            if let Err(e) = std::fs::write(dir.join(recover::FORGOTTEN), b"") {
                tracing::warn!("could not mark {} as forgotten: {e}", dir.display());
            }
        }
        Ok((record, held))
    }

    /// The state a `repo remove` without `--purge` kept for `root` (its fingerprint is its
    /// canonical path's, which for a folder since deleted is the absolute path it was at).
    fn forgotten(&self, root: &Path) -> Result<RepoRecord> {
        let fingerprint = fingerprint(root);
        if !self.paths.repo_state(&fingerprint).exists() {
            return Err(Error::UnknownRepo { path: root.into() });
        }
        Ok(RepoRecord {
            path: root.into(),
            fingerprint,
            last_indexed_ms: None,
            files: 0,
            chunks: 0,
            missing: !root.is_dir(),
        })
    }

    /// The registry file, read without the lock; a damaged or missing one (beside state to
    /// rebuild it from) is handled under the lock by [`Self::read_locked`].
    fn read(&self) -> Result<RegistryFile> {
        match read_json::<RegistryFile>(&self.paths.registry()) {
            Ok(Some(file)) => Ok(file),
            Ok(None) if !recover::has_repo_state(&self.paths) => Ok(RegistryFile::default()),
            Ok(None) | Err(Error::CorruptState { .. }) => {
                let _lock = FileLock::acquire(&self.paths.locks().join("registry.lock"))?;
                self.read_locked()
            }
            Err(e) => Err(e),
        }
    }

    /// The registry file, holding the registry lock: moved aside and rebuilt when damaged,
    /// rebuilt when missing (another process may have done either meanwhile).
    fn read_locked(&self) -> Result<RegistryFile> {
        match read_json::<RegistryFile>(&self.paths.registry()) {
            Ok(Some(file)) => Ok(file),
            Ok(None) if !recover::has_repo_state(&self.paths) => Ok(RegistryFile::default()),
            Ok(None) => Ok(recover::rebuild_missing(&self.paths)),
            Err(Error::CorruptState { message, .. }) => recover::rebuild_damaged(&self.paths, &message),
            Err(e) => Err(e),
        }
    }

    fn update(&self, f: impl FnOnce(&mut Vec<RepoRecord>)) -> Result<()> {
        let _lock = FileLock::acquire(&self.paths.locks().join("registry.lock"))?;
        let path = self.paths.registry();
        let mut file = self.read_locked()?;
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
    fn the_home_directory_is_refused_as_the_home_even_where_it_is_a_system_directory() {
        let docdex = Path::new("/root/.docdex");
        let why = |root: &str, home: &str| match check_root(Path::new(root), Some(Path::new(home)), docdex, &|_| false)
        {
            Err(Error::UnsafeRoot { reason, .. }) => reason,
            other => panic!("{root} was not refused: {other:?}"),
        };
        assert_eq!(why("/root", "/root"), "it is your home directory (/root)");
        assert_eq!(why("/home/ada", "/home/ada"), "it is your home directory (/home/ada)");
        assert!(why("/root", "/home/ada").contains("system-wide parent directory"));
    }

    #[test]
    fn only_a_repository_of_its_own_is_servable() {
        let home = Path::new("/home/ada");
        let docdex = Path::new("/home/ada/.docdex");
        // The checkouts under /usr and /var hold .git; nothing else does.
        let git = |d: &Path| {
            ["/usr/src/linux", "/usr/local/src/app", "/var/lib/jenkins/workspace/app"].iter().any(|g| d == Path::new(g))
        };
        let ok = |p: &str| check_root(Path::new(p), Some(home), docdex, &git);
        for bad in [
            "/",
            "/etc",
            "/etc/nginx",
            "/proc/1",
            "/usr",
            "/usr/lib",
            "/usr/bin",
            "/usr/include",
            "/usr/share/doc",
            "/usr/local/bin",
            "/usr/src/linux-headers-6.1",
            "/var",
            "/var/mail",
            "/var/backups",
            "/var/lib/dpkg",
            "/var/lib/jenkins",
            "/lib/x86_64-linux-gnu",
            "/snap/core",
            "/tmp",
            "/home",
            "/home/ada",
            "/home/ada/.docdex/state",
            "/home/ada/.ssh",
            "/home/ada/.aws/sso",
            "/srv/backup/.gnupg",
            "/home/ada/.config/gcloud",
            "/home/ada/.config/gh",
            "/home/ada/.config",
            "/home/ada/.cargo",
            "/home/ada/.npm",
            "/home/ada/.terraform.d",
            "/home/ada/.mozilla",
            "/home/ada/.local",
            "/home/ada/.local/share",
            "/home/ada/.local/share/keyrings",
            "/home/ada/.m2",
            "/home/ada/.gradle",
            "/home/ada/.vscode",
            "/home/ada/.cache",
            "/home/ada/.cache/huggingface",
            "/home/ada/.huggingface",
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
            "/usr/local/src/app/crates/core",
            "/var/lib/jenkins/workspace/app",
            "/var/www/site",
            "/var/tmp/build/repo",
            "/opt/project",
            "/home/ada/.config/nvim",
            "/home/ada/.local/share/nvim",
            "/home/ada/src/ssh-tools",
            "/home/ada/.cache/build/app",
        ] {
            assert!(ok(good).is_ok(), "{good}: {:?}", ok(good));
        }
    }

    /// A folder holding credential locations is refused by their names, and the message names
    /// those that exist: it said `~/.config/gcloud` of a `~/.config` with no such folder.
    #[test]
    fn a_refused_folder_names_the_credentials_it_holds() {
        let home = tempfile::tempdir().expect("tempdir");
        let config = home.path().join(".config");
        std::fs::create_dir_all(config.join("nvim")).expect("mkdir");
        let why = home_credential_refusal(&config, home.path()).expect("refused");
        assert!(why.starts_with("it is where tools keep credentials (none there yet"), "{why}");
        std::fs::create_dir_all(config.join("gh")).expect("mkdir");
        let why = home_credential_refusal(&config, home.path()).expect("refused");
        assert_eq!(why, "it holds ~/.config/gh, which holds credentials; index the project folders in it instead");
        std::fs::create_dir_all(config.join("rclone")).expect("mkdir");
        let why = home_credential_refusal(&config, home.path()).expect("refused");
        assert!(why.starts_with("it holds ~/.config/gh, ~/.config/rclone, which hold credentials"), "{why}");
        assert_eq!(home_credential_refusal(&config.join("nvim"), home.path()), None);
    }

    #[test]
    fn a_path_is_resolved_once_per_component_and_absurd_paths_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        std::fs::create_dir_all(root.join("a/b")).expect("mkdir");
        assert_eq!(resolve_existing(&root.join("a/./b/../b/missing/../c")), root.join("a/b/c"));
        assert_eq!(resolve_existing(&root.join("missing/../a")), root.join("a"));
        let deep = "a/".repeat(MAX_GIVEN_PATH_PARTS + 1);
        let e = repo_relative(&root, &deep).unwrap_err();
        assert_eq!(e.code(), "bad_request");
        assert!(e.to_string().contains("256"), "{e}");
        let long = "x".repeat(MAX_GIVEN_PATH_BYTES + 1);
        let e = repo_prefix(&root, &long).unwrap_err();
        assert!(e.to_string().contains("4096 bytes"), "{e}");
        assert!(e.to_string().len() < 600, "the message quotes the path in part: {e}");
        // At the limit, still a path.
        assert!(repo_relative(&root, &"a/".repeat(MAX_GIVEN_PATH_PARTS)).is_ok());
        // Linear: 100,000 components resolve in well under a second (the quadratic walk took
        // minutes).
        let t = std::time::Instant::now();
        let _ = resolve_existing(&root.join("a/".repeat(100_000)));
        assert!(t.elapsed() < std::time::Duration::from_secs(2), "{:?}", t.elapsed());
    }
}
