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
//!   (top, submodule, nested clone) that sets none of its own. The walk turns the crate's off.
//!
//! Precedence is git's: a `.gitignore` (or `.ignore`, `.docdexignore`) pattern in the
//! worktree wins over `info/exclude`, which wins over `core.excludesFile`. An excludes file
//! is read for its patterns only (like `~/.config/git/ignore`), never indexed.

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;
use std::path::{Component, Path, PathBuf};
use std::sync::RwLock;

/// Name of docdex's own ignore file (here, below the walk, so both the walk and these rules
/// name it; `walk::DOCDEX_IGNORE` is this).
pub const DOCDEX_IGNORE: &str = ".docdexignore";

/// How deep `.git/modules/` is searched for submodules (nested ones, names with slashes).
const MAX_MODULE_DEPTH: usize = 12;

/// The extra rules for one walk: per worktree, the matchers the crate leaves out.
#[derive(Debug, Default)]
pub struct GitRules {
    /// Worktree tops with their extra matchers, deepest top first.
    worktrees: Vec<Worktree>,
    /// Files whose edit changes these rules (excludes files, configs).
    files: Vec<PathBuf>,
    /// The user's excludes file (`core.excludesFile` in the global config, else
    /// `$XDG_CONFIG_HOME/git/ignore`): each repository that sets none of its own uses it.
    global: Option<PathBuf>,
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
        let mut rules = GitRules { global: ignore::gitignore::gitconfig_excludes_path(), ..Default::default() };
        let Some(top) = root.ancestors().find(|a| a.join(".git").exists()) else {
            // Outside git the user's excludes file still applies, as a `.gitignore` does.
            let matchers = matchers(root, rules.global_for(root).into_iter());
            if !matchers.is_empty() {
                rules.worktrees.push(Worktree { top: root.to_path_buf(), matchers });
            }
            return rules;
        };
        let Some(RepoFiles { common, exclude, own }) = repo_files(top) else { return rules };
        let own = own.or_else(|| rules.global_for(top));
        rules.add(top, exclude, own, &common);
        let mut modules = Vec::new();
        find_modules(&common.join("modules"), 0, &mut modules);
        for module in modules {
            let Some(tree) = config_value(&module.join("config"), "worktree").map(|w| normalize(&module.join(w)))
            else {
                continue;
            };
            if tree.starts_with(root) && tree != top {
                let own = excludes_file(&module.join("config"), &tree).or_else(|| rules.global_for(&tree));
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

    /// The user's excludes file for the repository at `top` (a relative path is taken from
    /// there): git reads it where a repository sets no `core.excludesFile` of its own.
    fn global_for(&self, top: &Path) -> Option<PathBuf> {
        self.global.as_ref().map(|g| top.join(g))
    }

    /// The files whose edit changes what these rules exclude (each `info/exclude`, `config`
    /// and excludes file, present or not): a watcher runs a full update when one changes.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// Whether the walk must leave `path` out: the deepest worktree above it excludes it,
    /// and no ignore file between them (nor an `--include` override) takes it back.
    /// A directory holding a repository of its own that is not a known submodule (found as
    /// the walk enters it, before what is in it) gets that repository's rules.
    pub fn excludes(&self, path: &Path, is_dir: bool, overrides: Option<&ignore::overrides::Override>) -> bool {
        if is_dir && !self.worktrees.iter().any(|w| w.top == path) && path.join(".git").exists() {
            self.enter_nested(path);
        }
        let nested = self.nested.read().ok();
        let in_nested = nested.as_deref().and_then(|n| inside(n, path));
        let Some(tree) =
            inside(&self.worktrees, path).into_iter().chain(in_nested).max_by_key(|w| w.top.components().count())
        else {
            return false;
        };
        let excluded = tree.matchers.iter().map(|m| m.matched(path, is_dir)).find(|m| !m.is_none());
        if !excluded.is_some_and(|m| m.is_ignore()) {
            return false;
        }
        if overrides.is_some_and(|o| o.matched(path, is_dir).is_whitelist()) {
            return false;
        }
        !taken_back(path, is_dir, &tree.top)
    }

    /// Records `top` as a nested repository, with the rules of its own the crate misses.
    fn enter_nested(&self, top: &Path) {
        if self.nested.read().is_ok_and(|n| n.iter().any(|w| w.top == top)) {
            return;
        }
        let matchers = repo_files(top)
            .map(|RepoFiles { exclude, own, .. }| {
                matchers(top, exclude.into_iter().chain(own.or_else(|| self.global_for(top))))
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
/// (a nested one the walk enters): its `info/exclude`, `config` and own excludes file. A
/// watcher watches them as it watches the top's ([`GitRules::files`]).
pub fn repo_rule_files(top: &Path) -> Vec<PathBuf> {
    let Some(RepoFiles { common, own, .. }) = repo_files(top) else { return Vec::new() };
    let mut files = vec![common.join("info/exclude"), common.join("config")];
    files.extend(own);
    files
}

/// The deepest of `trees` strictly above `path`.
fn inside<'a>(trees: &'a [Worktree], path: &Path) -> Option<&'a Worktree> {
    trees.iter().filter(|w| path.starts_with(&w.top) && path != w.top).max_by_key(|w| w.top.components().count())
}

/// A repository's git directory holding what its worktrees share, and its rule files the
/// crate misses: `info/exclude` (when its `.git` is a file the crate does not resolve) and
/// its own `core.excludesFile`.
struct RepoFiles {
    common: PathBuf,
    exclude: Option<PathBuf>,
    own: Option<PathBuf>,
}

/// The [`RepoFiles`] of the repository whose worktree's top is `top`.
fn repo_files(top: &Path) -> Option<RepoFiles> {
    let common = common_dir(&git_dir(top)?);
    let crate_reads_exclude = top.join(".git").is_dir() || crate_resolves(top);
    let exclude = (!crate_reads_exclude).then(|| common.join("info/exclude"));
    let own = excludes_file(&common.join("config"), top);
    Some(RepoFiles { common, exclude, own })
}

/// The matchers of `files` relative to `top`, in their order (absent or empty ones left out).
fn matchers(top: &Path, files: impl Iterator<Item = PathBuf>) -> Vec<Gitignore> {
    files.filter_map(|f| matcher(top, &f)).collect()
}

/// The user's git files that decide what the global excludes file holds: the global configs
/// (`$GIT_CONFIG_GLOBAL`, else `~/.gitconfig` and `$XDG_CONFIG_HOME/git/config`), whose
/// `core.excludesFile` names it, and the excludes file the `ignore` crate reads now (the one
/// configured, else `$XDG_CONFIG_HOME/git/ignore`). They apply wherever a repository sets no
/// `core.excludesFile` of its own; a watcher watches them as it watches `.git/info/exclude`.
/// The system config (`/etc/gitconfig`) is not among them: it is rarely edited, and
/// watching `/etc` would wake the watcher for every change there.
pub fn global_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    match std::env::var_os("GIT_CONFIG_GLOBAL").filter(|g| !g.is_empty()) {
        Some(global) => out.push(PathBuf::from(global)),
        None => {
            let xdg = std::env::var_os("XDG_CONFIG_HOME")
                .filter(|x| !x.is_empty())
                .map(PathBuf::from)
                .or_else(|| home.as_ref().map(|h| h.join(".config")));
            out.extend(home.map(|h| h.join(".gitconfig")));
            out.extend(xdg.map(|x| x.join("git/config")));
        }
    }
    out.extend(ignore::gitignore::gitconfig_excludes_path().filter(|p| p.is_absolute()));
    out
}

/// Whether an ignore file between `path` and `top` whitelists `path` (`!name`): those come
/// before `info/exclude` and `core.excludesFile` in git's order (and in the crate's, whose
/// `.docdexignore` and `.ignore` come first). Only asked for an entry the extra rules exclude.
fn taken_back(path: &Path, is_dir: bool, top: &Path) -> bool {
    for name in [DOCDEX_IGNORE, ".ignore", ".gitignore"] {
        for dir in path.ancestors().skip(1).take_while(|d| d.starts_with(top)) {
            let file = dir.join(name);
            if !file.is_file() {
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
    let text = std::fs::read_to_string(top.join(".git")).ok()?;
    let line = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    (!line.is_empty()).then(|| PathBuf::from(line))
}

/// `top`'s git directory: `.git` itself, or the directory its `.git` file names (relative
/// to `top`).
fn git_dir(top: &Path) -> Option<PathBuf> {
    let dot = top.join(".git");
    if dot.is_dir() {
        return Some(dot);
    }
    gitdir_line(top).map(|g| normalize(&top.join(g)))
}

/// Where a git directory keeps what its worktrees share (`config`, `info/`, `modules/`).
fn common_dir(gitdir: &Path) -> PathBuf {
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

/// The `core.excludesFile` a config sets, as git resolves it: `~/` is the home directory,
/// and a relative path is taken from the worktree's top (where git runs for it).
fn excludes_file(config: &Path, top: &Path) -> Option<PathBuf> {
    let value = config_value(config, "excludesfile")?;
    let path = match value.strip_prefix("~/") {
        Some(rest) => PathBuf::from(std::env::var_os("HOME")?).join(rest),
        None => PathBuf::from(&value),
    };
    Some(if path.is_absolute() { path } else { top.join(path) })
}

/// The last value of `core.KEY` in a git config file (keys are case-insensitive; quotes and
/// trailing comments removed). `include` directives are not followed.
fn config_value(config: &Path, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(config).ok()?;
    let mut in_core = false;
    let mut found = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(section) = line.strip_prefix('[') {
            let name = section.split(']').next().unwrap_or("").trim();
            in_core = name.eq_ignore_ascii_case("core");
            continue;
        }
        if !in_core {
            continue;
        }
        let Some((k, v)) = line.split_once('=') else { continue };
        if k.trim().eq_ignore_ascii_case(key) {
            found = Some(unquote(v.trim()));
        }
    }
    found.filter(|v| !v.is_empty())
}

/// A config value without its quotes and trailing `#` / `;` comment.
fn unquote(v: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => out.extend(chars.next()),
            '#' | ';' if !quoted => break,
            c => out.push(c),
        }
    }
    out.trim().to_string()
}

/// `p` with `.` and `..` resolved lexically (a `gitdir:` or `core.worktree` is relative,
/// `../../.git/modules/x`).
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            c => out.push(c.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_values_are_read_as_git_writes_them() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("config");
        std::fs::write(
            &cfg,
            "[core]\n\tbare = false\n[user]\n\texcludesFile = wrong\n[Core]\n\texcludesFile = \"my ignore\" ; note\n\tworktree = ../../../sub\n",
        )
        .unwrap();
        assert_eq!(config_value(&cfg, "excludesfile").as_deref(), Some("my ignore"));
        assert_eq!(config_value(&cfg, "worktree").as_deref(), Some("../../../sub"));
        assert_eq!(excludes_file(&cfg, Path::new("/r")), Some(PathBuf::from("/r/my ignore")));
        assert_eq!(normalize(Path::new("/r/.git/modules/sub/../../../sub")), PathBuf::from("/r/sub"));
    }
}
