//! The OS watches of a watcher: one non-recursive watch on each directory a full index walk
//! enters, in the repository and in every registered source it follows, plus the directories
//! of git's rule files (in `.git/`, and the user's excludes file and git configs outside, with
//! the config files they include, wherever those are).
//!
//! Ignored trees (`node_modules/`, `target/`, `.git/objects/`, anything `.gitignore` or
//! `.docdexignore` names) get none: a recursive watch cost one inotify watch per directory of
//! them, which can exhaust `fs.inotify.max_user_watches` on a large JS or Rust tree, and woke
//! the watcher for every build. A directory that refuses a watch (permissions, a path longer
//! than the OS takes, the watch limit) is logged, reported once, and listed in the index
//! status; the rest is watched.

use super::WatchReport;
use crate::config::IndexConfig;
use crate::engine::index::gitrules::{self, GitRules};
use crate::engine::index::sources::{self, Source};
use crate::engine::index::status::Unwatched;
use crate::engine::index::walk;
use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

/// What the event handler and the loop keep of an event: shared, as the watches change it.
pub(super) type SharedFilter = Arc<RwLock<Filter>>;

/// Which event paths matter: those in a watched tree (outside any `.git/`), and git's rule
/// files. Everything else a watch reports (the rest of `.git/`, the other files of a home
/// directory watched for `~/.gitconfig`) is dropped.
#[derive(Debug, Clone, Default)]
pub(super) struct Filter {
    /// Each rule file, with the directory watched for it.
    rules: HashMap<PathBuf, PathBuf>,
    /// The roots of the trees watched (the repository, the followed sources).
    trees: Vec<PathBuf>,
}

impl Filter {
    /// A path that stands for a change of git's rules: a rule file, or a directory on the way
    /// to one below the directory watched for it (`~/.config/git/` made, where
    /// `~/.config/git/ignore` is to be).
    pub(super) fn names_rule(&self, p: &Path) -> bool {
        self.rules.iter().any(|(file, dir)| file == p || (file.starts_with(p) && p.starts_with(dir) && p != dir))
    }

    /// Whether an event on `p` matters: a rule, or a path of a watched tree outside `.git/`.
    pub(super) fn wants(&self, p: &Path) -> bool {
        self.names_rule(p) || self.names_repo(p) || self.in_tree(p)
    }

    /// A `.git` made or removed in a watched directory (`git init`, a clone, a repository
    /// moved in or out): a repository's rules start or stop there.
    pub(super) fn names_repo(&self, p: &Path) -> bool {
        p.file_name().is_some_and(|n| n == ".git") && p.parent().is_some_and(|d| self.in_tree(d))
    }

    /// `p` is in a watched tree, outside every `.git/` in it (the top's, a nested
    /// repository's, a submodule's `.git` file: never indexed).
    pub(super) fn in_tree(&self, p: &Path) -> bool {
        self.trees.iter().any(|t| p.strip_prefix(t).is_ok_and(|rel| !rel.components().any(|c| c.as_os_str() == ".git")))
    }
}

/// One tree the watcher follows: the repository, or a registered source.
struct Tree {
    root: PathBuf,
    /// The source it is; none for the repository.
    source: Option<Source>,
    /// Which directory the root was when its watches were placed.
    id: Option<(u64, u64)>,
    /// Directories with a watch.
    watched: HashSet<PathBuf>,
    /// Directories the walk enters that refused a watch, and why.
    unwatched: BTreeMap<PathBuf, String>,
}

/// What walking a tree needs besides the tree.
struct Walker<'a> {
    watcher: &'a mut RecommendedWatcher,
    cfg: &'a IndexConfig,
    threads: usize,
}

impl Tree {
    fn new(root: &Path, source: Option<Source>) -> Tree {
        let id = crate::engine::fsutil::dir_identity(root);
        Tree { root: root.to_path_buf(), source, id, watched: HashSet::new(), unwatched: BTreeMap::new() }
    }

    /// How a directory of the tree is named to the user: repo-relative, or by its source key.
    fn label(&self, dir: &Path) -> String {
        let rel = walk::rel_path(&self.root, dir);
        match &self.source {
            None => rel,
            Some(s) if rel.is_empty() => format!("{}{}", sources::PREFIX, s.name),
            Some(s) => sources::key(&s.name, &rel),
        }
    }

    /// Watches every directory a full walk enters now, and no longer those it does not (they
    /// became ignored or went). True when the watch limit refused one.
    fn sync(&mut self, w: &mut Walker) -> bool {
        let (visited, limit_hit) = self.watch_walk(w, None, true);
        let stale: Vec<PathBuf> = self.watched.difference(&visited).cloned().collect();
        for dir in stale {
            let _ = w.watcher.unwatch(&dir);
            self.watched.remove(&dir);
        }
        self.unwatched.retain(|d, _| visited.contains(d));
        limit_hit
    }

    /// The watched directories below the root holding a repository of their own (a clone
    /// inside the worktree, a submodule), whose git rules apply in them.
    fn nested_repos(&self) -> impl Iterator<Item = PathBuf> + '_ {
        self.watched.iter().filter(|d| **d != self.root && d.join(".git").exists()).cloned()
    }

    /// Drops every watch of the tree (a source removed, or its folder replaced).
    fn unwatch_all(&mut self, watcher: &mut RecommendedWatcher) {
        for dir in self.watched.drain() {
            let _ = watcher.unwatch(&dir);
        }
        self.unwatched.clear();
    }

    /// Walks (all, or under `under`) with the rules the index applies to this tree, and
    /// watches each directory as the walk reaches it, before its entries are read; returns
    /// the directories walked, and whether the watch limit refused one. With `skip_watched`,
    /// those already watched are left.
    fn watch_walk(&mut self, w: &mut Walker, under: Option<&Path>, skip_watched: bool) -> (HashSet<PathBuf>, bool) {
        struct Pass<'a> {
            watcher: &'a mut RecommendedWatcher,
            visited: HashSet<PathBuf>,
            added: Vec<PathBuf>,
            failed: Vec<(PathBuf, notify::Error)>,
        }
        let watched = &self.watched;
        let pass = std::sync::Mutex::new(Pass {
            watcher: &mut *w.watcher,
            visited: HashSet::new(),
            added: Vec::new(),
            failed: Vec::new(),
        });
        let globs = match &self.source {
            Some(s) => walk::Globs { include: &s.include, exclude: &s.exclude },
            None => walk::Globs::default(),
        };
        walk::walk_dirs(&self.root, under, w.cfg, w.threads, globs, &|dir: &Path| {
            let Ok(mut p) = pass.lock() else { return };
            p.visited.insert(dir.to_path_buf());
            if skip_watched && watched.contains(dir) {
                return;
            }
            match p.watcher.watch(dir, RecursiveMode::NonRecursive) {
                Ok(()) => p.added.push(dir.to_path_buf()),
                Err(e) => p.failed.push((dir.to_path_buf(), e)),
            }
        });
        let pass = pass.into_inner().unwrap_or_else(|p| p.into_inner());
        for dir in pass.added {
            self.unwatched.remove(&dir);
            self.watched.insert(dir);
        }
        let mut limit_hit = false;
        for (dir, err) in pass.failed {
            if matches!(err.kind, notify::ErrorKind::PathNotFound) {
                continue; // gone meanwhile: its removal is in the next batch
            }
            let why = cause(&err);
            limit_hit |= matches!(err.kind, notify::ErrorKind::MaxFilesWatch);
            tracing::warn!(dir = %dir.display(), reason = %why, "not watching a directory the index walks");
            self.watched.remove(&dir);
            self.unwatched.insert(dir, why);
        }
        (pass.visited, limit_hit)
    }
}

/// The watches of one watcher (see the module's doc).
pub(super) struct Watches {
    watcher: RecommendedWatcher,
    cfg: IndexConfig,
    threads: usize,
    /// The repository.
    repo: Tree,
    /// The registered sources followed (those with `watch`, whose folder is there).
    sources: Vec<Tree>,
    /// Refused directories already reported (each is named once, not at every sync).
    reported: HashSet<PathBuf>,
    /// Shared with the event handler.
    filter: SharedFilter,
    /// The directories watched for git's rule files.
    rule_dirs: HashSet<PathBuf>,
}

/// At most this many refused directories are named one by one at a time; the rest are
/// counted in one line (the watch limit can refuse thousands).
const NAMED_REFUSALS: usize = 10;

impl Watches {
    /// Nothing watched yet: [`Watches::sync`] places the watches.
    pub(super) fn new(watcher: RecommendedWatcher, root: &Path, cfg: IndexConfig, filter: SharedFilter) -> Watches {
        let threads = crate::engine::index::thread_count(&cfg);
        Watches {
            watcher,
            cfg,
            threads,
            repo: Tree::new(root, None),
            sources: Vec::new(),
            reported: HashSet::new(),
            filter,
            rule_dirs: HashSet::new(),
        }
    }

    /// Every tree, the repository first.
    fn trees(&self) -> impl Iterator<Item = &Tree> {
        std::iter::once(&self.repo).chain(&self.sources)
    }

    /// Watches every directory a full walk of each tree enters now, and no longer those it
    /// does not; the rule files are looked up again.
    pub(super) fn sync(&mut self, report: &dyn Fn(WatchReport)) {
        let mut w = Walker { watcher: &mut self.watcher, cfg: &self.cfg, threads: self.threads };
        let mut limit_hit = self.repo.sync(&mut w);
        for tree in &mut self.sources {
            limit_hit |= tree.sync(&mut w);
        }
        self.watch_rules();
        self.after_walk(limit_hit, report);
    }

    /// Follows the sources `now` (those with `watch` whose folder is there): a source no
    /// longer listed, or whose folder is another directory now, loses every watch; one new
    /// (or back) is walked and watched as the repository is.
    pub(super) fn set_sources(&mut self, now: &[Source], report: &dyn Fn(WatchReport)) {
        let (mut kept, dropped): (Vec<Tree>, Vec<Tree>) =
            std::mem::take(&mut self.sources).into_iter().partition(|t| {
                now.iter().any(|s| Some(s) == t.source.as_ref()) && crate::engine::fsutil::dir_identity(&t.root) == t.id
            });
        for mut tree in dropped {
            tree.unwatch_all(&mut self.watcher);
        }
        let mut w = Walker { watcher: &mut self.watcher, cfg: &self.cfg, threads: self.threads };
        let mut limit_hit = false;
        for s in now.iter().filter(|s| s.watch && !sources::is_missing(s)) {
            if kept.iter().any(|t| t.source.as_ref() == Some(s)) {
                continue;
            }
            let mut tree = Tree::new(&s.path, Some(s.clone()));
            if tree.id.is_none() {
                continue;
            }
            limit_hit |= tree.sync(&mut w);
            kept.push(tree);
        }
        self.sources = kept;
        self.watch_rules();
        self.after_walk(limit_hit, report);
    }

    /// Watches `dir` and every directory under it the walk enters (made, moved in, opened up:
    /// each is watched anew, as it may be another directory than the one watched before).
    pub(super) fn watch_tree(&mut self, dir: &Path, report: &dyn Fn(WatchReport)) {
        let mut w = Walker { watcher: &mut self.watcher, cfg: &self.cfg, threads: self.threads };
        let tree = std::iter::once(&mut self.repo).chain(&mut self.sources).find(|t| dir.starts_with(&t.root));
        let (visited, limit_hit) = tree.map(|t| t.watch_walk(&mut w, Some(dir), false)).unwrap_or_default();
        if visited.iter().any(|d| d.join(".git").exists()) {
            self.watch_rules(); // a repository cloned or moved in brings rules of its own
        }
        self.after_walk(limit_hit, report);
    }

    /// After a walk: says the limit was reached, and names what was newly refused.
    fn after_walk(&mut self, limit_hit: bool, report: &dyn Fn(WatchReport)) {
        if limit_hit {
            report(WatchReport::Failed(format!("{LIMIT_REACHED}: some directories are not watched")));
        }
        self.report_refused(report);
    }

    /// Watches the directories of git's rule files (`.git/info/`, `.git/`, a submodule's, a
    /// source's, and the user's excludes file and git configs, wherever they are), and shares
    /// the files with the event handler. A file whose directory is missing is watched through
    /// the directory above (`~/.config/` for `~/.config/git/ignore`).
    fn watch_rules(&mut self) {
        let mut files: HashSet<PathBuf> = HashSet::new();
        for tree in self.trees() {
            files.extend(GitRules::load(&tree.root).files().iter().cloned());
            files.extend(tree.nested_repos().flat_map(|top| gitrules::repo_rule_files(&top)));
        }
        files.extend(gitrules::global_files());
        let rules: HashMap<PathBuf, PathBuf> =
            files.into_iter().filter_map(|f| watch_dir(&f).map(|d| (f, d))).collect();
        let dirs: HashSet<PathBuf> = rules.values().cloned().collect();
        for gone in self.rule_dirs.difference(&dirs) {
            if !self.trees().any(|t| t.watched.contains(gone)) {
                let _ = self.watcher.unwatch(gone);
            }
        }
        for dir in &dirs {
            if let Err(e) = self.watcher.watch(dir, RecursiveMode::NonRecursive) {
                tracing::debug!(dir = %dir.display(), "not watching git's rules: {e}");
            }
        }
        self.rule_dirs = dirs;
        let trees = self.trees().map(|t| t.root.clone()).collect();
        if let Ok(mut f) = self.filter.write() {
            *f = Filter { rules, trees };
        }
    }

    /// What the loop filters events with, as last shared.
    pub(super) fn filter(&self) -> Filter {
        self.filter.read().map(|f| f.clone()).unwrap_or_default()
    }

    /// A path removed or renamed away: it and what was under it have no watch any more (the
    /// OS dropped them; notify forgot them).
    pub(super) fn forget(&mut self, gone: &Path) {
        for tree in std::iter::once(&mut self.repo).chain(&mut self.sources) {
            tree.watched.retain(|d| !d.starts_with(gone));
            tree.unwatched.retain(|d, _| !d.starts_with(gone));
        }
    }

    /// The refused directories of every tree: absolute path, label, reason.
    fn refused(&self) -> impl Iterator<Item = (&PathBuf, String, &String)> {
        self.trees().flat_map(|t| t.unwatched.iter().map(move |(d, why)| (d, t.label(d), why)))
    }

    /// What the index status lists: the refused directories, counted by reason.
    pub(super) fn unwatched_summary(&self) -> Option<Unwatched> {
        Unwatched::of(self.refused().map(|(_, label, why)| (label, why.as_str())))
    }

    /// Names each directory newly refused (at most [`NAMED_REFUSALS`] one by one).
    fn report_refused(&mut self, report: &dyn Fn(WatchReport)) {
        let fresh: Vec<(PathBuf, String, String)> = self
            .refused()
            .filter(|(d, _, _)| !self.reported.contains(*d))
            .map(|(d, label, why)| (d.clone(), label, why.clone()))
            .collect();
        for (i, (dir, rel, why)) in fresh.iter().enumerate() {
            self.reported.insert(dir.clone());
            if i == NAMED_REFUSALS {
                report(WatchReport::Failed(format!(
                    "{} more directories are not watched; `docdex status` counts them by reason",
                    fresh.len() - NAMED_REFUSALS
                )));
            }
            if i >= NAMED_REFUSALS {
                continue;
            }
            let then = if why.contains("ermission denied") {
                format!("{rel}/ is watched and indexed once this user may read it")
            } else {
                format!("changes under {rel}/ wait for the next full `docdex index`")
            };
            report(WatchReport::Failed(format!(
                "not watching {rel}/ ({why}); the rest of the repository is watched, and {then}"
            )));
        }
        let refused: HashSet<PathBuf> = self.refused().map(|(d, _, _)| d.clone()).collect();
        self.reported.retain(|d| refused.contains(d));
    }
}

/// The directory watched for a rule file: its own, or the one above when its own is missing
/// (none when neither is there: the file cannot appear without one of them being made first,
/// and that is seen at the next sync only). None for a path that is there but is no regular
/// file: `/dev/null` (`GIT_CONFIG_GLOBAL=/dev/null`, `core.excludesFile = /dev/null`) names
/// no file, and watching `/dev` would wake the watcher for every device event. The directory
/// must be one [`may_watch`] allows, and the one above a missing directory must be in the
/// user's home (a config named `/dev/nonexistent/config` watched `/dev`, one in `/missing/`
/// watched `/`).
fn watch_dir(file: &Path) -> Option<PathBuf> {
    if std::fs::metadata(file).is_ok_and(|m| !m.is_file()) {
        return None;
    }
    let homes = user_homes();
    let parent = file.parent()?;
    if parent.is_dir() {
        return may_watch(parent, &homes).then(|| parent.to_path_buf());
    }
    let above = parent.parent().filter(|d| d.is_dir())?;
    (may_watch(above, &homes) && in_any(above, &homes)).then(|| above.to_path_buf())
}

/// Directories no rule file's watch goes on, with all below them: the root, and the kernel's
/// pseudo file systems, whose churn (devices, processes) would wake the watcher all the time.
const NEVER_WATCHED: [&str; 4] = ["/dev", "/proc", "/sys", "/run"];

/// Whether `dir` may be watched for a rule file: not the root nor in [`NEVER_WATCHED`] (also
/// reached through a symbolic link), and in the user's home or docdex home or owned by the
/// user (`/etc`, `/tmp`, `/usr/share` are not: their other files change for other reasons, and
/// a config there applies at the next full `docdex index`).
fn may_watch(dir: &Path, homes: &[PathBuf]) -> bool {
    let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let system = |d: &Path| d.parent().is_none() || NEVER_WATCHED.iter().any(|n| d.starts_with(n));
    if system(dir) || system(&real) {
        return false;
    }
    in_any(dir, homes) || in_any(&real, homes) || owned_by_user(dir)
}

/// The user's home (`$HOME`) and docdex home, when set and not the root.
fn user_homes() -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    home.into_iter().chain([crate::config::home_dir()]).filter(|h| h.is_absolute() && h.parent().is_some()).collect()
}

fn in_any(dir: &Path, homes: &[PathBuf]) -> bool {
    homes.iter().any(|h| dir.starts_with(h))
}

#[cfg(unix)]
fn owned_by_user(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    std::fs::metadata(dir).is_ok_and(|m| m.uid() == me)
}

#[cfg(not(unix))]
fn owned_by_user(_dir: &Path) -> bool {
    true
}

/// What the watch limit is called when the OS refuses a watch for it.
const LIMIT_REACHED: &str =
    "the OS limit on watched directories is reached (fs.inotify.max_user_watches; raise it with `sysctl`)";

/// A notify error's cause without the paths notify appends.
fn cause(err: &notify::Error) -> String {
    match &err.kind {
        notify::ErrorKind::Io(e) => e.to_string(),
        notify::ErrorKind::MaxFilesWatch => LIMIT_REACHED.to_string(),
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A config named in a missing directory of a system directory (`GIT_CONFIG_GLOBAL=
    /// /dev/nonexistent/config.toml`, an include under a missing top-level directory) was
    /// watched through `/dev` or `/`: every device event woke the watcher. Now neither is.
    #[test]
    fn a_rule_file_under_a_system_directory_is_not_watched() {
        assert_eq!(watch_dir(Path::new("/dev/nonexistent/config.toml")), None);
        assert_eq!(watch_dir(Path::new("/dev/config.toml")), None);
        assert_eq!(watch_dir(Path::new("/proc/nonexistent/gitconfig")), None);
        assert_eq!(watch_dir(Path::new("/docdex-missing-top/gitconfig")), None, "not through /");
        assert_eq!(watch_dir(Path::new("/gitconfig")), None, "the root is never watched");
    }

    /// The user's own directories are watched as before: a config's existing directory, and
    /// (inside the home) the one above a missing directory.
    #[test]
    fn a_rule_file_in_the_users_directories_is_watched() {
        let tmp = std::env::temp_dir().join(format!("docdex-watchdir-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        assert_eq!(watch_dir(&tmp.join("gitconfig")), Some(tmp.clone()), "a directory the user owns");
        if !in_any(&tmp, &user_homes()) {
            assert_eq!(watch_dir(&tmp.join("git/config")), None, "the one above only in the home");
        }
        let homes = [tmp.clone()];
        assert!(may_watch(&tmp, &homes) && in_any(&tmp.join("git"), &homes));
        assert!(!may_watch(Path::new("/dev"), &homes) && !may_watch(Path::new("/"), &homes));
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
