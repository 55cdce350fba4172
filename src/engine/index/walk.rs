//! Finding the files to index: a parallel walk that honours `.gitignore`,
//! `.ignore`, `.docdexignore` and configured excludes, never follows symlinks
//! (so loops and escapes out of the repo cannot happen), and records what it
//! could not read instead of stopping.
//!
//! This is the one policy for every way a path reaches the index: the full walk
//! ([`walk`]) and the watcher's changed paths ([`walk_paths`]), which walks from the
//! repository root too, descending only towards the changed paths, so a path is admitted
//! only if every directory above it would have been entered by a full walk.

use super::gitrules::GitRules;
use super::rule_files::Inside;
use crate::config::IndexConfig;
use crate::engine::fsutil;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A file found by the walk, with the metadata the manifest compares.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Repo-relative path with forward slashes.
    pub rel: String,
    /// Absolute path.
    pub abs: PathBuf,
    /// Size in bytes.
    pub size: u64,
    /// Modification time in nanoseconds.
    pub mtime_ns: i64,
    /// Status-change time in nanoseconds: catches what size and mtime miss (a `chmod` that
    /// makes the file unreadable, content rewritten with its mtime restored).
    pub ctime_ns: i64,
}

/// Something the walk passed over, and why.
#[derive(Debug, Clone)]
pub struct WalkIssue {
    /// Repo-relative path (or the absolute one when outside).
    pub rel: String,
    /// The reason.
    pub reason: String,
    /// True for errors (retried every run), false for deliberate skips such as symlinks.
    pub error: bool,
}

/// The result of a walk.
#[derive(Debug, Default)]
pub struct WalkOutput {
    /// Regular files to consider.
    pub files: Vec<Candidate>,
    /// Entries passed over.
    pub issues: Vec<WalkIssue>,
    /// Why the walk did not start: an ignore file of the root (or above it) that must not be
    /// read ([`super::rule_files`]). The walk found nothing, which says nothing was deleted.
    pub refused_root: Option<String>,
}

/// Name of docdex's own ignore file.
pub use super::gitrules::DOCDEX_IGNORE;

/// Globs a walk adds to the configured ones: a registered source's `--include` (a file must
/// match one, when any) and `--exclude`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Globs<'a> {
    /// Whitelist; empty admits every file.
    pub include: &'a [String],
    /// Excluded on top of the configuration's excludes.
    pub exclude: &'a [String],
}

/// How the issue of a folder not walked for its ignore file begins (its reason's kind in
/// status: `folder not walked`).
pub const FOLDER_NOT_WALKED: &str = "folder not walked: ";

/// Folders a walk did not enter for an ignore file it must not read ([`super::rule_files`]),
/// with why.
type Refused = Arc<Mutex<Vec<(PathBuf, String)>>>;

/// The walk of `root` (admitting only the paths on the way to, or under, `targets` when given)
/// and where it notes the folders it refuses; `Err` with why when the root's own ignore files
/// (or those above it the crate reads) must not be read. Git's rules the crate misses
/// ([`GitRules`]: a submodule's `info/exclude`, a repository-local `core.excludesFile`) are
/// applied by the same entry filter.
fn builder(
    root: &Path,
    cfg: &IndexConfig,
    threads: usize,
    globs: Globs,
    targets: Option<Targets>,
) -> Result<(ignore::WalkBuilder, Refused), String> {
    let inside_git = inside_git_worktree(root);
    let inside = Inside::new(root);
    if let Some(why) = inside.refusal_above(inside_git) {
        return Err(why);
    }
    let mut b = ignore::WalkBuilder::new(root);
    b.hidden(!cfg.include_hidden)
        .git_ignore(true)
        // The user's excludes file is applied by `GitRules`, in each repository that sets no
        // `core.excludesFile` of its own, as git applies it.
        .git_global(false)
        .git_exclude(true)
        // Inside a worktree, git's rules: ignore files apply up to the worktree's top and no
        // further. Requiring git makes the crate see each nested repository's `.git`, where
        // the `.gitignore` and `info/exclude` above stop, as git's do. A root outside git
        // keeps its own `.gitignore` files: `GitRules` applies them there, up to each
        // repository in it (the crate, not requiring git, applied them inside those too).
        .require_git(true)
        .ignore(true)
        .parents(inside_git)
        .follow_links(false)
        .add_custom_ignore_filename(DOCDEX_IGNORE)
        .threads(threads);
    let built = overrides(root, cfg, globs);
    if let Some(o) = &built {
        b.overrides(o.clone());
    }
    let refused = Refused::default();
    let filters = Filters { rules: GitRules::load(root), overrides: built, include: include_filter(root, globs) };
    b.filter_entry(entry_filter(root, cfg, filters, targets, (inside, refused.clone())));
    Ok((b, refused))
}

/// The overrides a walk needs: `.git` skipped when hidden files are included (it is hidden,
/// skipped by default), a source's `--exclude`, `[index] exclude`. Built only when needed, as
/// they cost a glob match per entry. Only exclusions: an override that admits a path wins over
/// the ignore files and the hidden rule, so a source's `--include '*.md'` as one indexed its
/// `.gitignore`d notes (and `--include '.*'` its `.env`), which `get` then refused.
fn overrides(root: &Path, cfg: &IndexConfig, globs: Globs) -> Option<ignore::overrides::Override> {
    if !cfg.include_hidden && cfg.exclude.is_empty() && globs.exclude.is_empty() {
        return None;
    }
    let mut overrides = ignore::overrides::OverrideBuilder::new(root);
    if cfg.include_hidden {
        let _ = overrides.add("!.git/");
    }
    for pat in cfg.exclude.iter().chain(globs.exclude) {
        let _ = overrides.add(&format!("!{pat}"));
    }
    overrides.build().ok()
}

/// A source's `--include` globs, which a file must match one of (when there are any) on top of
/// every other rule; `None` admits every file.
pub(crate) fn include_filter(root: &Path, globs: Globs) -> Option<ignore::overrides::Override> {
    if globs.include.is_empty() {
        return None;
    }
    let mut include = ignore::overrides::OverrideBuilder::new(root);
    for pat in globs.include {
        let _ = include.add(pat);
    }
    include.build().ok()
}

/// Whether a source's globs leave out the file `rel` (under `root`): it matches an `--exclude`,
/// or `--include` globs are given and it matches none.
pub(crate) fn left_out_by_globs(root: &Path, rel: &str, globs: Globs) -> bool {
    let path = root.join(rel);
    if include_filter(root, globs).is_some_and(|i| !i.matched(&path, false).is_whitelist()) {
        return true;
    }
    let mut exclude = ignore::overrides::OverrideBuilder::new(root);
    for pat in globs.exclude {
        let _ = exclude.add(&format!("!{pat}"));
    }
    // A folder-only pattern (`private/`) matches the file's folders, as the walk meets them.
    let excluded = |o: &ignore::overrides::Override| {
        path.ancestors()
            .skip(1)
            .take_while(|d| d.starts_with(root) && *d != root)
            .any(|d| o.matched(d, true).is_ignore())
            || o.matched(&path, false).is_ignore()
    };
    !globs.exclude.is_empty() && exclude.build().is_ok_and(|o| excluded(&o))
}

/// What an entry filter checks beyond the crate's own rules.
struct Filters {
    /// Git's rules the crate misses.
    rules: GitRules,
    /// [`overrides`], which git's extra rules must not override either.
    overrides: Option<ignore::overrides::Override>,
    /// [`include_filter`].
    include: Option<ignore::overrides::Override>,
}

/// Which entries the walk takes (always filtered: a nested repository found anywhere brings
/// rules of its own): those on the way to `targets`, not docdex's home, no credential, not
/// excluded by git's extra `rules`, and no folder whose ignore files must not be read (noted
/// in `refused`, `Inside` judging).
fn entry_filter(
    root: &Path,
    cfg: &IndexConfig,
    filters: Filters,
    targets: Option<Targets>,
    (inside, refused): (Inside, Refused),
) -> impl Fn(&ignore::DirEntry) -> bool + Send + Sync + 'static {
    let Filters { rules, overrides: built, include } = filters;
    let root_owned = root.to_path_buf();
    let own_dirs = cfg.own_dirs.clone();
    // The root's file system: a folder on another (a mount point) is not walked unless asked.
    let root_device = (!cfg.cross_file_systems).then(|| device(root)).flatten();
    move |e| {
        if targets.as_ref().is_some_and(|t| !t.admits(&rel_path(&root_owned, e.path()))) {
            return false;
        }
        let is_dir = e.file_type().is_some_and(|t| t.is_dir());
        // docdex's home inside the repository (its config holds the token; its indexes change
        // with every run, which a watcher would index forever).
        if is_dir && own_dirs.iter().any(|d| d == e.path()) {
            return false;
        }
        if is_credential(e.path(), is_dir) || rules.excludes(e.path(), is_dir, built.as_ref()) {
            return false;
        }
        if !is_dir && include.as_ref().is_some_and(|i| !i.matched(e.path(), false).is_whitelist()) {
            return false;
        }
        if is_dir && e.depth() >= MAX_DIR_DEPTH {
            if let Ok(mut r) = refused.lock() {
                r.push((e.path().to_path_buf(), TOO_DEEP.to_string()));
            }
            return false;
        }
        let mounted = || {
            let other = root_device.is_some_and(|root| e.metadata().is_ok_and(|m| dev_of(&m) != root));
            other.then(|| OTHER_FILE_SYSTEM.to_string())
        };
        let Some(why) = is_dir.then(|| inside.refusal(e.path()).or_else(mounted)).flatten() else { return true };
        if let Ok(mut r) = refused.lock() {
            r.push((e.path().to_path_buf(), why));
        }
        false
    }
}

/// The deepest folder a walk enters: its files' paths (a source's key adds its name) stay
/// within the components a path given to docdex may have, so what is indexed can be read
/// (`get` refused a file found 600 folders deep).
const MAX_DIR_DEPTH: usize = crate::engine::repos::MAX_GIVEN_PATH_PARTS - 2;
/// Why a folder that deep is not walked.
const TOO_DEEP: &str = "it lies 254 folders deep, the most docdex walks: a path it reads has at most 256 components";

/// Why a mount point inside a root is not walked.
const OTHER_FILE_SYSTEM: &str = "another file system is mounted here (a bind mount, a volume or a disk), \
     which docdex does not walk into: what it holds comes from outside the repository; \
     `[index] cross_file_systems = true` walks it";

/// The device a path's file system is on (`None` where unknown).
fn device(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| dev_of(&m))
}

#[cfg(unix)]
fn dev_of(m: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::dev(m)
}

#[cfg(not(unix))]
fn dev_of(_: &std::fs::Metadata) -> u64 {
    0
}

/// Folders that hold credentials, by name anywhere under a root.
const CREDENTIAL_DIRS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".password-store",
    ".gcloud",
    ".terraform.d",
    ".mozilla",
    ".thunderbird",
];
/// Folders that hold credentials by their parent's name and their own.
const CREDENTIAL_DIRS_IN: &[(&str, &str)] =
    &[(".config", "gcloud"), (".config", "gh"), (".config", "hub"), ("share", "keyrings")];
/// Files that hold credentials (tokens, passwords, private keys), by name anywhere.
const CREDENTIAL_FILES: &[&str] = &[
    ".netrc",
    "_netrc",
    ".git-credentials",
    ".pypirc",
    ".npmrc",
    ".pgpass",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "id_ecdsa_sk",
    "id_ed25519_sk",
];
/// Files that hold credentials by their folder's name and their own.
const CREDENTIAL_FILES_IN: &[(&str, &str)] = &[
    (".cargo", "credentials"),
    (".cargo", "credentials.toml"),
    (".docker", "config.json"),
    (".m2", "settings.xml"),
    (".m2", "settings-security.xml"),
    (".gradle", "gradle.properties"),
    (".gem", "credentials"),
    // Hugging Face's access token (`~/.cache/huggingface/`, or `~/.huggingface/` before).
    ("huggingface", "token"),
    ("huggingface", "stored_tokens"),
    (".huggingface", "token"),
];

/// Whether `path` is a known credential folder or file by its name (and its folder's): never
/// walked, so never indexed, watched or served, whatever `[index] include_hidden` says or the
/// ignore files admit. A root that is or holds a home's credential folders is refused before
/// (`repos::check_servable_root`); this keeps copies of them (a dotfiles checkout, a home
/// backup, a private key beside code) out of every root.
pub fn is_credential(path: &Path, is_dir: bool) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else { return false };
    let parent = path.parent().and_then(Path::file_name).and_then(|n| n.to_str()).unwrap_or("");
    if is_dir {
        CREDENTIAL_DIRS.contains(&name) || CREDENTIAL_DIRS_IN.contains(&(parent, name))
    } else {
        CREDENTIAL_FILES.contains(&name) || CREDENTIAL_FILES_IN.contains(&(parent, name))
    }
}

/// Whether `root` is a subdirectory of a git worktree (an ancestor holds `.git`, `root` does
/// not): only then do ignore files above it apply, as git applies them. A repository's top, or a
/// folder outside git, is its own project: a `.gitignore` above it (a home directory kept in git
/// with `*` in its `.gitignore`, a parent folder's) used to apply and hid every file.
fn inside_git_worktree(root: &Path) -> bool {
    !root.join(".git").exists() && root.ancestors().skip(1).any(|a| a.join(".git").exists())
}

/// Walks the whole repository in parallel.
pub fn walk(root: &Path, cfg: &IndexConfig, threads: usize) -> WalkOutput {
    walk_with(root, cfg, threads, Globs::default())
}

/// [`walk`] with a source's globs.
pub fn walk_with(root: &Path, cfg: &IndexConfig, threads: usize, globs: Globs) -> WalkOutput {
    run(builder(root, cfg, threads, globs, None), root)
}

/// Walks only towards `wanted` (absolute paths inside `root`, files or directories), from the
/// root and under the same rules as [`walk`]: a path under an ignored, hidden or symlinked
/// directory, or itself ignored, hidden or a symlink, is not admitted (a symlink is reported as
/// an issue, as the full walk reports it). A wanted directory is walked whole.
///
/// Walking from each changed path instead would skip every rule: a walk's starting point is
/// always yielded, and followed when it is a symlink.
pub fn walk_paths(root: &Path, wanted: &[PathBuf], cfg: &IndexConfig, threads: usize, globs: Globs) -> WalkOutput {
    let targets = Targets::new(root, wanted);
    if targets.wanted.is_empty() {
        return WalkOutput::default();
    }
    if targets.wanted.contains("") {
        return walk_with(root, cfg, threads, globs);
    }
    run(builder(root, cfg, threads, globs, Some(targets)), root)
}

/// Calls `visit` with every directory a full walk enters (the root included), or with `under`
/// only those at or below it (none when the walk would not enter `under`). Each is visited as
/// the walk reaches it and before its entries are read, so a watch placed by `visit` sees every
/// entry made in it afterwards. This is how the watcher watches only what the index walks:
/// ignored trees (`node_modules/`, `target/`, `.git/`) never get an OS watch. `globs` are a
/// registered source's, as its index walk ([`walk_with`]) applies them (an `--exclude`d
/// directory is not entered; `--include` never keeps a directory out). A folder the walk does
/// not enter for an ignore file it must not read is visited too (after the walk), so replacing
/// that file is seen; a root whose own ignore files must not be read visits nothing.
pub fn walk_dirs(
    root: &Path,
    under: Option<&Path>,
    cfg: &IndexConfig,
    threads: usize,
    globs: Globs,
    visit: &(dyn Fn(&Path) + Sync),
) {
    let built = match under {
        Some(dir) if dir != root => {
            if !dir.starts_with(root) {
                return;
            }
            builder(root, cfg, threads, globs, Some(Targets::new(root, &[dir.to_path_buf()])))
        }
        _ => builder(root, cfg, threads, globs, None),
    };
    let Ok((b, refused)) = built else { return };
    b.build_parallel().run(|| {
        Box::new(move |entry| {
            if let Ok(e) = entry {
                let is_dir = e.file_type().is_some_and(|t| t.is_dir());
                if is_dir && under.is_none_or(|u| e.path().starts_with(u)) {
                    visit(e.path());
                }
            }
            ignore::WalkState::Continue
        })
    });
    for (dir, _) in refused.lock().map(|r| r.clone()).unwrap_or_default() {
        if under.is_none_or(|u| dir.starts_with(u)) {
            visit(&dir);
        }
    }
}

/// The changed paths of a [`walk_paths`] run, repo-relative, and every directory above them.
struct Targets {
    wanted: std::collections::HashSet<String>,
    ancestors: std::collections::HashSet<String>,
}

impl Targets {
    fn new(root: &Path, wanted: &[PathBuf]) -> Targets {
        let mut t = Targets { wanted: Default::default(), ancestors: Default::default() };
        for p in wanted.iter().filter(|p| p.starts_with(root)) {
            let rel = rel_path(root, p);
            let mut cur = rel.as_str();
            while let Some((parent, _)) = cur.rsplit_once('/') {
                t.ancestors.insert(parent.to_string());
                cur = parent;
            }
            t.wanted.insert(rel);
        }
        t
    }

    /// On the way to a wanted path, a wanted path, or inside a wanted directory.
    fn admits(&self, rel: &str) -> bool {
        if self.wanted.contains(rel) || self.ancestors.contains(rel) {
            return true;
        }
        let mut cur = rel;
        while let Some((parent, _)) = cur.rsplit_once('/') {
            if self.wanted.contains(parent) {
                return true;
            }
            cur = parent;
        }
        false
    }
}

/// Runs a walk, or answers why it could not start (nothing found, `refused_root` set); the
/// folders it refused are issues, deliberate skips.
fn run(built: Result<(ignore::WalkBuilder, Refused), String>, root: &Path) -> WalkOutput {
    let (b, refused) = match built {
        Ok(b) => b,
        Err(why) => {
            let issue = WalkIssue { rel: String::new(), reason: why.clone(), error: true };
            return WalkOutput { issues: vec![issue], refused_root: Some(why), ..WalkOutput::default() };
        }
    };
    let out = Mutex::new(WalkOutput::default());
    b.build_parallel().run(|| {
        let out = &out;
        Box::new(move |entry| {
            visit(root, entry, out);
            ignore::WalkState::Continue
        })
    });
    let mut out = out.into_inner().unwrap_or_else(|p| p.into_inner());
    for (dir, why) in refused.lock().map(|r| r.clone()).unwrap_or_default() {
        let reason = format!("{FOLDER_NOT_WALKED}{why}");
        out.issues.push(WalkIssue { rel: rel_path(root, &dir), reason, error: false });
    }
    out.files.sort_by(|a, b| a.rel.cmp(&b.rel));
    out.files.dedup_by(|a, b| a.rel == b.rel);
    out
}

/// Why an entry that is neither a file, a directory nor a link is not indexed (it would block
/// a reader, or never end).
fn special_file(ft: &std::fs::FileType) -> String {
    use std::os::unix::fs::FileTypeExt;
    let what = if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_block_device() || ft.is_char_device() {
        "a device"
    } else {
        "of an unknown kind"
    };
    format!("not a regular file ({what}); docdex reads regular files only")
}

fn visit(root: &Path, entry: Result<ignore::DirEntry, ignore::Error>, out: &Mutex<WalkOutput>) {
    let entry = match entry {
        Ok(e) => e,
        // Deleted or renamed since its directory was listed (a checkout, a build cleaning up):
        // nothing to report; the index forgets it as it forgets any file the walk did not find.
        // (A root that is gone is still an issue: the run checks its root itself.)
        Err(err) if gone(&err) && error_path(&err).is_some_and(|p| p != root) => return,
        Err(err) => {
            let path = error_path(&err);
            let rel = path.as_ref().map(|p| rel_path(root, p)).unwrap_or_default();
            push_issue(out, WalkIssue { rel, reason: error_reason(&err, path.as_deref()), error: true });
            return;
        }
    };
    let Some(ft) = entry.file_type() else { return };
    if ft.is_dir() {
        return;
    }
    let rel = rel_path(root, entry.path());
    if entry.path().to_str().is_none() {
        // Paths are keys (index, manifest, citations) and must be text: a lossy name would be
        // opened as a file that does not exist, and reported unreadable on every run.
        let reason = "file name is not valid UTF-8: rename it to index it".into();
        push_issue(out, WalkIssue { rel, reason, error: false });
        return;
    }
    if ft.is_symlink() {
        push_issue(out, WalkIssue { rel, reason: "symlink (not followed)".into(), error: false });
        return;
    }
    if !ft.is_file() {
        // Listed as links are: a FIFO was passed over without a word in the summary or status.
        push_issue(out, WalkIssue { rel, reason: special_file(&ft), error: false });
        return;
    }
    if let Some(reason) = super::files::unsupported_document(&rel) {
        push_issue(out, WalkIssue { rel, reason, error: false });
        return;
    }
    match entry.metadata() {
        Ok(md) => {
            let (mtime_ns, ctime_ns) = (fsutil::mtime_ns(&md), fsutil::ctime_ns(&md));
            let c = Candidate { rel, abs: entry.path().to_path_buf(), size: md.len(), mtime_ns, ctime_ns };
            if let Ok(mut o) = out.lock() {
                o.files.push(c);
            }
        }
        Err(err) if gone(&err) => {}
        Err(err) => push_issue(out, WalkIssue { rel, reason: err.to_string(), error: true }),
    }
}

/// Whether a walk error only says the entry is no longer there.
fn gone(err: &ignore::Error) -> bool {
    err.io_error().is_some_and(vanished)
}

/// An I/O error for a path that no longer exists (or whose directory was replaced by a file).
fn vanished(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory)
}

fn push_issue(out: &Mutex<WalkOutput>, issue: WalkIssue) {
    if let Ok(mut o) = out.lock() {
        o.issues.push(issue);
    }
}

/// Why an entry could not be walked, without the absolute path the walker's message repeats
/// (the issue names the entry): `unreadable directory: Permission denied (os error 13)`, so
/// `docdex status` counts it with the unreadable files.
fn error_reason(err: &ignore::Error, path: Option<&Path>) -> String {
    let mut inner = err;
    while let ignore::Error::WithPath { err, .. } | ignore::Error::WithDepth { err, .. } = inner {
        inner = err;
    }
    match inner {
        ignore::Error::Io(e) => {
            let dir = path.and_then(|p| p.symlink_metadata().ok()).is_some_and(|m| m.is_dir());
            format!("{}: {e}", if dir { super::types::UNREADABLE_DIR } else { "unreadable" })
        }
        _ => err.to_string(),
    }
}

fn error_path(err: &ignore::Error) -> Option<PathBuf> {
    match err {
        ignore::Error::WithPath { path, .. } => Some(path.clone()),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => error_path(err),
        ignore::Error::Loop { child, .. } => Some(child.clone()),
        _ => None,
    }
}

/// Repo-relative path with forward slashes.
pub fn rel_path(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let s = rel.to_string_lossy();
    if std::path::MAIN_SEPARATOR == '/' {
        s.into_owned()
    } else {
        s.replace(std::path::MAIN_SEPARATOR, "/")
    }
}

#[cfg(test)]
mod vanish_tests {
    use super::*;

    /// An entry deleted between its directory's listing and its visit (2,782 of them beside a
    /// churning tree) was an error issue, "unreadable: No such file or directory"; the index
    /// run listed each as a file that could not be read.
    #[test]
    fn an_entry_gone_since_its_directory_was_listed_is_no_issue() {
        let root = Path::new("/r");
        let missing = |path: &str, kind: std::io::ErrorKind| ignore::Error::WithPath {
            path: PathBuf::from(path),
            err: Box::new(ignore::Error::Io(std::io::Error::from(kind))),
        };
        let out = Mutex::new(WalkOutput::default());
        visit(root, Err(missing("/r/src/gone.rs", std::io::ErrorKind::NotFound)), &out);
        visit(root, Err(missing("/r/src/was_a_dir/x.rs", std::io::ErrorKind::NotADirectory)), &out);
        assert!(out.lock().unwrap().issues.is_empty());
        visit(root, Err(missing("/r/src/secret", std::io::ErrorKind::PermissionDenied)), &out);
        visit(root, Err(missing("/r", std::io::ErrorKind::NotFound)), &out);
        let issues: Vec<(String, bool)> = out.lock().unwrap().issues.iter().map(|i| (i.rel.clone(), i.error)).collect();
        assert_eq!(issues, [("src/secret".to_string(), true), (String::new(), true)]);
    }
}
