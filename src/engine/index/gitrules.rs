//! Git's ignore rules that the `ignore` crate does not apply on its own, applied as git does:
//!
//! - a submodule's `info/exclude`: its git directory is the superproject's
//!   `.git/modules/NAME/`, named by the submodule's `.git` file with a relative `gitdir:`
//!   line, which the crate neither resolves against the submodule nor reads without a
//!   `commondir` file (a worktree's);
//! - a repository-local `core.excludesFile` (`.git/config`, or a submodule's own `config`):
//!   the crate's `git_global` reads only the user's and the system's configuration. When the
//!   repository sets one, git uses it instead of the global one, and so does the walk;
//! - the user's excludes file itself, per repository: the crate's `git_global` applied it to
//!   the whole walk or (a top setting its own) nowhere, where git reads it in each repository
//!   (top, submodule, nested clone) that sets none of its own. The walk turns the crate's off;
//! - git's config as git reads it (`gitconfig`): system, global, then the repository's, the
//!   last `core.excludesFile` winning, `include` and `includeIf` (`gitdir:`, `onbranch:`,
//!   `hasconfig:remote.*.url:`) followed (the crate read the first value of the global file
//!   only, and no include);
//! - a root outside git holding clones (`~/src`): its `.gitignore` files apply as a project's
//!   own, but not inside a repository in it, where git does not read them. The crate's
//!   `require_git(false)` applied them everywhere below, so the walk requires git and they
//!   apply here ([`GitRules::excludes`]).
//!
//! Precedence is git's: a `.gitignore` (or `.ignore`, `.docdexignore`) pattern in the
//! worktree wins over `info/exclude`, which wins over `core.excludesFile`. An excludes file
//! is read for its patterns only (like `~/.config/git/ignore`), never indexed.

use super::gitconfig::{self, normalize, Source};
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

/// Name of docdex's own ignore file (`walk::DOCDEX_IGNORE` is this; defined with the other
/// ignore files' names in [`super::rule_files`]).
pub use super::rule_files::DOCDEX_IGNORE;

/// How much of a `.git` file is read: its `gitdir:` line (git's own bound is a page).
const GITFILE_BYTES: u64 = 4096;

/// How deep `.git/modules/` is searched for submodules (nested ones, names with slashes).
const MAX_MODULE_DEPTH: usize = 12;

/// The extra rules for one walk: per worktree, the matchers the crate leaves out.
#[derive(Debug, Default)]
pub struct GitRules {
    /// Worktree tops with their extra matchers, deepest top first.
    worktrees: Vec<Worktree>,
    /// Files whose edit changes these rules (excludes files, configs and what they include).
    files: Vec<PathBuf>,
    /// The user's config files (system, global): read again for each repository, as an
    /// `includeIf "gitdir:..."` in them depends on which repository reads them.
    user: Vec<Source>,
    /// A root outside git: its own `.gitignore` files, applied here up to the repositories in it.
    plain: Option<Plain>,
    /// Directories found holding a repository of their own (not a known submodule) during
    /// the walk, with that repository's own rules: the rules of the worktree above stop
    /// there and its own apply, as git's do.
    nested: RwLock<Vec<Worktree>>,
}

#[derive(Debug)]
struct Worktree {
    top: PathBuf,
    /// `info/exclude` (when the crate misses it), then `core.excludesFile`.
    matchers: Vec<Gitignore>,
}

impl GitRules {
    /// The rules for a walk of `root`: its repository's (the nearest directory at or above it
    /// holding `.git`) and those of every submodule registered under that repository's
    /// `modules/` whose worktree is inside `root`.
    pub fn load(root: &Path) -> GitRules {
        let mut rules = GitRules { user: gitconfig::user_sources(), ..Default::default() };
        let Some(top) = root.ancestors().find(|a| a.join(".git").exists()) else {
            // Outside git the root's `.gitignore` files and the user's excludes file still
            // apply, as in a repository of its own.
            let (file, read) = excludes_file(&rules.user, None, root);
            rules.files.extend(read);
            let matchers = matchers(root, file.into_iter());
            if !matchers.is_empty() {
                rules.worktrees.push(Worktree { top: root.to_path_buf(), matchers });
            }
            rules.plain = Some(Plain { root: root.to_path_buf(), cache: RwLock::default() });
            return rules;
        };
        let Some(RepoFiles { common, gitdir, exclude }) = repo_files(top) else { return rules };
        let (own, read) = excludes_file(&rules.user, Some((&gitdir, &common.join("config"))), top);
        rules.files.extend(read);
        rules.add(top, exclude, own, &common);
        let mut modules = Vec::new();
        find_modules(&common.join("modules"), 0, &mut modules);
        for module in modules {
            let config = [Source { path: module.join("config"), watched: true }];
            let Some(tree) =
                gitconfig::core_value(&config, Some(&module), "worktree").value.map(|w| normalize(&module.join(w)))
            else {
                continue;
            };
            if tree.starts_with(root) && tree != top {
                let (own, read) = excludes_file(&rules.user, Some((&module, &module.join("config"))), &tree);
                rules.files.extend(read);
                rules.add(&tree, Some(module.join("info/exclude")), own, &module);
            }
        }
        rules.worktrees.sort_by_key(|w| std::cmp::Reverse(w.top.components().count()));
        rules
    }

    fn add(&mut self, top: &Path, exclude: Option<PathBuf>, excludes_file: Option<PathBuf>, gitdir: &Path) {
        self.files.push(gitdir.join("info/exclude"));
        self.files.push(gitdir.join("config"));
        self.files.extend(exclude.iter().chain(&excludes_file).cloned());
        let matchers = matchers(top, exclude.into_iter().chain(excludes_file));
        if !matchers.is_empty() {
            self.worktrees.push(Worktree { top: top.to_path_buf(), matchers });
        }
    }

    /// The files whose edit changes what these rules exclude (each `info/exclude`, `config`
    /// and excludes file, present or not): a watcher runs a full update when one changes.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// Whether the walk must leave `path` out: the deepest worktree above it excludes it,
    /// and no ignore file between them (nor an `--include` override) takes it back.
    /// A directory holding a repository of its own that is not a known submodule (found as
    /// the walk enters it, before what is in it) gets that repository's rules. Under a root
    /// outside git, and outside every repository in it, the root's `.gitignore` files come
    /// first (the walk requires git, so the crate applies them only inside repositories).
    pub fn excludes(&self, path: &Path, is_dir: bool, overrides: Option<&ignore::overrides::Override>) -> bool {
        if is_dir && !self.worktrees.iter().any(|w| w.top == path) && path.join(".git").exists() {
            self.enter_nested(path);
        }
        let nested = self.nested.read().ok();
        let in_nested = nested.as_deref().and_then(|n| inside(n, path));
        let tree =
            inside(&self.worktrees, path).into_iter().chain(in_nested).max_by_key(|w| w.top.components().count());
        if let Some(plain) = self.plain.as_ref().filter(|p| tree.is_none_or(|t| t.top == p.root)) {
            match plain.matched(path, is_dir) {
                Match::Ignore(()) => return !kept_anyway(path, is_dir, overrides, &plain.root),
                Match::Whitelist(()) => return false,
                Match::None => {}
            }
        }
        let Some(tree) = tree else { return false };
        let excluded = tree.matchers.iter().map(|m| m.matched(path, is_dir)).find(|m| !m.is_none());
        excluded.is_some_and(|m| m.is_ignore()) && !kept_anyway(path, is_dir, overrides, &tree.top)
    }

    /// Records `top` as a nested repository, with the rules of its own the crate misses.
    fn enter_nested(&self, top: &Path) {
        if self.nested.read().is_ok_and(|n| n.iter().any(|w| w.top == top)) {
            return;
        }
        let matchers = repo_files(top)
            .map(|RepoFiles { common, gitdir, exclude }| {
                let (own, _) = excludes_file(&self.user, Some((&gitdir, &common.join("config"))), top);
                matchers(top, exclude.into_iter().chain(own))
            })
            .unwrap_or_default();
        if let Ok(mut nested) = self.nested.write() {
            if !nested.iter().any(|w| w.top == top) {
                nested.push(Worktree { top: top.to_path_buf(), matchers });
            }
        }
    }
}

/// The files whose edit changes the rules of the repository whose worktree's top is `top`
/// (a nested one the walk enters): its `info/exclude`, `config`, the config files they
/// include, and the excludes file they name. A watcher watches them as it watches the top's
/// ([`GitRules::files`]).
pub fn repo_rule_files(top: &Path) -> Vec<PathBuf> {
    let Some(RepoFiles { common, gitdir, .. }) = repo_files(top) else { return Vec::new() };
    let config = common.join("config");
    let (own, read) = excludes_file(&gitconfig::user_sources(), Some((&gitdir, &config)), top);
    let mut files = vec![common.join("info/exclude"), config];
    files.extend(read);
    files.extend(own);
    files
}

/// The excludes file git reads in a repository (its git directory and its config; none
/// outside git), as git resolves `core.excludesFile`: the last value across the user's config
/// files, the repository's, then its worktree's (`config.worktree`, when enabled), includes
/// followed; `~/` from `$HOME`, a relative path from the
/// worktree's top `top`; set empty, none; unset, `$XDG_CONFIG_HOME/git/ignore`. With it, the
/// config files that decided it (for a watcher).
fn excludes_file(user: &[Source], repo: Option<(&Path, &Path)>, top: &Path) -> (Option<PathBuf>, Vec<PathBuf>) {
    let mut sources = user.to_vec();
    if let Some((gitdir, config)) = repo {
        sources.push(Source { path: config.to_path_buf(), watched: true });
        let worktree = gitconfig::worktree_config(gitdir, config);
        sources.extend(worktree.map(|path| Source { path, watched: true }));
    }
    let found = gitconfig::core_value(&sources, repo.map(|(gitdir, _)| gitdir), "excludesfile");
    let file = match found.value {
        None => gitconfig::default_excludes_file(),
        Some(v) if v.is_empty() => None,
        Some(v) => gitconfig::expand_home(&v).map(|p| if p.is_absolute() { p } else { top.join(p) }),
    };
    (file, found.files)
}

/// A root outside git: its `.gitignore` files (each read once per walk), which git would not
/// read at all, apply as the project's own, and stop at each repository inside it as a
/// repository's stop at a nested one.
#[derive(Debug)]
struct Plain {
    root: PathBuf,
    cache: RwLock<HashMap<PathBuf, Option<Arc<Gitignore>>>>,
}

impl Plain {
    /// The nearest `.gitignore` between `path` and the root that matches it decides.
    fn matched(&self, path: &Path, is_dir: bool) -> Match<()> {
        for dir in path.ancestors().skip(1).take_while(|d| d.starts_with(&self.root)) {
            let Some(gi) = self.gitignore(dir) else { continue };
            match gi.matched(path, is_dir) {
                Match::Ignore(_) => return Match::Ignore(()),
                Match::Whitelist(_) => return Match::Whitelist(()),
                Match::None => {}
            }
        }
        Match::None
    }

    fn gitignore(&self, dir: &Path) -> Option<Arc<Gitignore>> {
        if let Some(known) = self.cache.read().ok().and_then(|c| c.get(dir).cloned()) {
            return known;
        }
        let file = dir.join(".gitignore");
        let gi = super::rule_files::Inside::new(&self.root)
            .readable(&file)
            .then(|| matcher(dir, &file).map(Arc::new))
            .flatten();
        if let Ok(mut cache) = self.cache.write() {
            cache.insert(dir.to_path_buf(), gi.clone());
        }
        gi
    }
}

/// Whether an entry git's extra rules exclude is kept all the same: an `--include` override,
/// or an ignore file between it and `top` that whitelists it.
fn kept_anyway(path: &Path, is_dir: bool, overrides: Option<&ignore::overrides::Override>, top: &Path) -> bool {
    overrides.is_some_and(|o| o.matched(path, is_dir).is_whitelist()) || taken_back(path, is_dir, top)
}

/// The deepest of `trees` strictly above `path`.
fn inside<'a>(trees: &'a [Worktree], path: &Path) -> Option<&'a Worktree> {
    trees.iter().filter(|w| path.starts_with(&w.top) && path != w.top).max_by_key(|w| w.top.components().count())
}

/// A repository's git directory holding what its worktrees share, its own git directory (what
/// an `includeIf "gitdir:..."` is matched against), and `info/exclude` when the crate misses
/// it (its `.git` is a file the crate does not resolve).
struct RepoFiles {
    common: PathBuf,
    gitdir: PathBuf,
    exclude: Option<PathBuf>,
}

/// The [`RepoFiles`] of the repository whose worktree's top is `top`.
fn repo_files(top: &Path) -> Option<RepoFiles> {
    let gitdir = git_dir(top)?;
    let common = common_dir(&gitdir);
    let crate_reads_exclude = top.join(".git").is_dir() || crate_resolves(top);
    let exclude = (!crate_reads_exclude).then(|| common.join("info/exclude"));
    Some(RepoFiles { common, gitdir, exclude })
}

/// The matchers of `files` relative to `top`, in their order (absent or empty ones left out).
fn matchers(top: &Path, files: impl Iterator<Item = PathBuf>) -> Vec<Gitignore> {
    files.filter_map(|f| matcher(top, &f)).collect()
}

/// The user's git files that decide what the global excludes file holds: the global configs
/// (`$GIT_CONFIG_GLOBAL`, else `$XDG_CONFIG_HOME/git/config` and `~/.gitconfig`), whose
/// `core.excludesFile` names it, the files they include (an `includeIf "gitdir:..."` one is
/// among a repository's [`GitRules::files`]), and the excludes file git reads now (the one
/// configured, else `$XDG_CONFIG_HOME/git/ignore`). They apply wherever a repository sets no
/// `core.excludesFile` of its own; a watcher watches them as it watches `.git/info/exclude`.
/// The system config (`/etc/gitconfig`) and its includes are not among them: rarely edited,
/// and watching `/etc` would wake the watcher for every change there.
pub fn global_files() -> Vec<PathBuf> {
    let (file, mut out) = excludes_file(&gitconfig::user_sources(), None, Path::new(""));
    out.extend(file.filter(|p| p.is_absolute()));
    out
}

/// Whether an ignore file between `path` and `top` whitelists `path` (`!name`): those come
/// before `info/exclude` and `core.excludesFile` in git's order (and in the crate's, whose
/// `.docdexignore` and `.ignore` come first). Only asked for an entry the extra rules exclude.
fn taken_back(path: &Path, is_dir: bool, top: &Path) -> bool {
    let inside = super::rule_files::Inside::new(top);
    for name in [DOCDEX_IGNORE, ".ignore", ".gitignore"] {
        for dir in path.ancestors().skip(1).take_while(|d| d.starts_with(top)) {
            let file = dir.join(name);
            if !file.is_file() || !inside.readable(&file) {
                continue;
            }
            let (gi, _) = Gitignore::new(&file);
            match gi.matched(path, is_dir) {
                Match::Whitelist(_) => return true,
                Match::Ignore(_) => return false,
                Match::None => {}
            }
        }
    }
    false
}

/// A matcher for `file`'s patterns, relative to `top`; none when the file is absent or empty.
fn matcher(top: &Path, file: &Path) -> Option<Gitignore> {
    if !file.is_file() {
        return None;
    }
    let mut b = GitignoreBuilder::new(top);
    if let Some(e) = b.add(file) {
        tracing::warn!(file = %file.display(), "ignore rules partly unread: {e}");
    }
    match b.build() {
        Ok(gi) if !gi.is_empty() => Some(gi),
        Ok(_) => None,
        Err(e) => {
            tracing::warn!(file = %file.display(), "ignore rules unread: {e}");
            None
        }
    }
}

/// Whether the crate finds `info/exclude` itself for a `.git` file (a worktree's, whose
/// absolute `gitdir:` holds a `commondir` file).
fn crate_resolves(top: &Path) -> bool {
    gitdir_line(top).is_some_and(|g| g.is_absolute() && g.join("commondir").is_file())
}

/// The `gitdir:` a `.git` file names, as written.
fn gitdir_line(top: &Path) -> Option<PathBuf> {
    use std::io::Read;
    // A regular file only, and its first KiB: a `.git` linked to `/dev/zero` or a FIFO (an
    // unpacked archive can hold either) was read to its end, or waited on for ever.
    let file = top.join(".git");
    if !std::fs::metadata(&file).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let mut text = String::new();
    std::fs::File::open(&file).ok()?.take(GITFILE_BYTES).read_to_string(&mut text).ok()?;
    let line = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    (!line.is_empty()).then(|| PathBuf::from(line))
}

/// `top`'s git directory: `.git` itself, or the directory its `.git` file names (relative
/// to `top`).
pub(crate) fn git_dir(top: &Path) -> Option<PathBuf> {
    let dot = top.join(".git");
    if dot.is_dir() {
        return Some(dot);
    }
    gitdir_line(top).map(|g| normalize(&top.join(g)))
}

/// Where a git directory keeps what its worktrees share (`config`, `info/`, `modules/`).
pub(crate) fn common_dir(gitdir: &Path) -> PathBuf {
    match std::fs::read_to_string(gitdir.join("commondir")) {
        Ok(s) if !s.trim().is_empty() => normalize(&gitdir.join(s.trim())),
        _ => gitdir.to_path_buf(),
    }
}

/// Every submodule git directory under `dir` (one holding `config`), nested ones included.
fn find_modules(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if depth > MAX_MODULE_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        if !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let p = e.path();
        if p.join("config").is_file() {
            find_modules(&p.join("modules"), depth + 1, out);
            out.push(p);
        } else {
            // A module name with a slash (`libs/foo`) is a directory deeper.
            find_modules(&p, depth + 1, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excludes_file_is_resolved_as_git_resolves_it() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("config");
        let local = |text: &str| {
            std::fs::write(&cfg, text).unwrap();
            excludes_file(&[], Some((dir.path(), &cfg)), Path::new("/r")).0
        };
        assert_eq!(local("[core]\n\texcludesFile = \"my ignore\" ; note\n"), Some(PathBuf::from("/r/my ignore")));
        assert_eq!(local("[core]\n\texcludesFile =\n"), None, "set empty: no excludes file");
        assert_eq!(local("[core]\n\tbare = false\n"), gitconfig::default_excludes_file());
        assert_eq!(normalize(Path::new("/r/.git/modules/sub/../../../sub")), PathBuf::from("/r/sub"));
    }
}
