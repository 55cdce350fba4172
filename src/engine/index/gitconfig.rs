//! git's configuration files, read as git reads them for the few `core` keys the walk needs
//! (`core.excludesFile`, a submodule's `core.worktree`).
//!
//! Followed as in git: the files in git's order (system, then the user's global ones, then
//! the repository's), the last value of a key winning across all of them; `[include] path`
//! and `[includeIf "..."]` with git's conditions: `gitdir:` / `gitdir/i:`, `onbranch:` (the
//! branch `HEAD` names) and `hasconfig:remote.*.url:` (a remote URL anywhere in the config
//! files; a relative path taken from the including file's directory, `~/` from `$HOME`, at
//! most [`MAX_INCLUDE_DEPTH`] deep, so a cycle ends; a missing file is skipped). Not followed:
//! `~user/` and `%(prefix)/` paths, `git -c` / `GIT_CONFIG_COUNT` settings (no git command
//! runs here). A branch kept in a reftable (`git init --ref-format=reftable`) is read from its
//! table stack (`reftable`). A worktree's
//! `config.worktree` is read after the repository's config when `extensions.worktreeConfig`
//! is on ([`worktree_config`]). A path that is there but is no regular file (`/dev/null`, a
//! directory) is no config file: not read, and not watched.

mod reftable;

use std::path::{Path, PathBuf};

/// git's limit on nested includes (`MAX_INCLUDE_DEPTH` in git's `config.c`): git stops with an
/// error beyond it (a cycle reaches it); here what lies beyond is left out, with a warning.
pub const MAX_INCLUDE_DEPTH: usize = 10;

/// One config file of the sequence git reads, and whether its edits (and those of the files it
/// includes) should wake a watcher.
#[derive(Debug, Clone)]
pub struct Source {
    /// Where the file is (present or not).
    pub path: PathBuf,
    /// False for the system config: watching `/etc` would wake a watcher for every change there.
    pub watched: bool,
}

/// A key's value across a sequence of config files, and the files that decided it.
#[derive(Debug, Default)]
pub struct Lookup {
    /// The last value set, as git keeps it (`Some("")` when set empty).
    pub value: Option<String>,
    /// Every watched file read, or named by an include that applied (present or not), and the
    /// repository's `HEAD` when an `onbranch:` condition was evaluated (a checkout decides it).
    pub files: Vec<PathBuf>,
}

/// The `includeIf` condition on the current branch.
const ONBRANCH: &str = "onbranch:";
/// The `includeIf` condition on the remote URLs (the only `hasconfig:` git knows).
const HASCONFIG_URL: &str = "hasconfig:remote.*.url:";

/// The user's config files in git's order: the system's (`$GIT_CONFIG_SYSTEM`, else
/// `/etc/gitconfig`, none with `GIT_CONFIG_NOSYSTEM`), then the global ones
/// (`$GIT_CONFIG_GLOBAL`, else `$XDG_CONFIG_HOME/git/config` and then `~/.gitconfig`, which
/// thus wins). Set empty, `GIT_CONFIG_GLOBAL` or `GIT_CONFIG_SYSTEM` names no file, as in git:
/// no global (or system) config is read, not the default ones.
pub fn user_sources() -> Vec<Source> {
    let mut out = Vec::new();
    if !std::env::var("GIT_CONFIG_NOSYSTEM").is_ok_and(|v| is_true(&v)) {
        let system =
            std::env::var_os("GIT_CONFIG_SYSTEM").map_or_else(|| PathBuf::from("/etc/gitconfig"), PathBuf::from);
        out.extend((!system.as_os_str().is_empty()).then_some(Source { path: system, watched: false }));
    }
    match std::env::var_os("GIT_CONFIG_GLOBAL").map(PathBuf::from) {
        Some(global) if global.as_os_str().is_empty() => {}
        Some(global) => out.push(Source { path: global, watched: true }),
        None => {
            out.extend(xdg_config_home().map(|x| Source { path: x.join("git/config"), watched: true }));
            out.extend(home().map(|h| Source { path: h.join(".gitconfig"), watched: true }));
        }
    }
    out
}

/// Where git looks for the excludes file when no config sets `core.excludesFile`:
/// `$XDG_CONFIG_HOME/git/ignore`, else `~/.config/git/ignore`.
pub fn default_excludes_file() -> Option<PathBuf> {
    xdg_config_home().map(|x| x.join("git/ignore"))
}

/// The last value of `core.KEY` (`key` lowercase) across `sources`, read in order with their
/// includes, for the repository whose git directory is `gitdir` (none outside a repository,
/// where no `includeIf "gitdir:..."` applies).
pub fn core_value(sources: &[Source], gitdir: Option<&Path>, key: &str) -> Lookup {
    let mut reader = Reader::new(sources, gitdir, Some(key));
    reader.read_all();
    reader.out
}

/// The worktree's own config file (`config.worktree` in its git directory: `.git/` for the main
/// worktree, `.git/worktrees/<name>/` for a linked one), which git reads after the repository's
/// `config` when that sets `extensions.worktreeConfig` (as `git sparse-checkout` does); none
/// otherwise. The extension is read from `config` alone, without includes, as git reads a
/// repository's format.
pub fn worktree_config(gitdir: &Path, config: &Path) -> Option<PathBuf> {
    let text = std::fs::read(config).ok()?;
    let on = parse(&String::from_utf8_lossy(&text))
        .into_iter()
        .rev()
        .find(|e| e.section == "extensions" && e.sub.is_none() && e.key == "worktreeconfig")
        .is_some_and(|e| e.value.as_deref().is_none_or(is_true));
    on.then(|| gitdir.join("config.worktree"))
}

/// `~/...` (or `~` alone) with `$HOME` put in; other paths as they are. None when `~/` is used
/// and no home is known.
pub fn expand_home(path: &str) -> Option<PathBuf> {
    match path.strip_prefix('~') {
        Some("") => home(),
        Some(rest) if rest.starts_with('/') => home().map(|h| h.join(&rest[1..])),
        _ => Some(PathBuf::from(path)),
    }
}

/// Walks config files for one key, following includes; or, with no key, gathers the remote
/// URLs an `includeIf "hasconfig:remote.*.url:..."` is matched against.
struct Reader<'a> {
    /// The whole sequence (a `hasconfig:` condition looks at all of it).
    sources: &'a [Source],
    gitdir: Option<&'a Path>,
    /// The `core` key looked up; none for the scan of remote URLs.
    key: Option<&'a str>,
    /// Whether the files read now are recorded for a watcher.
    watched: bool,
    /// The scan of remote URLs: inside a file a `hasconfig:` include brought in, where git
    /// refuses remote URLs (and dies), so none is taken from there.
    urls_forbidden: bool,
    /// The remote URLs: gathered by the scan; for a key, the scan's result once needed.
    urls: Option<Vec<String>>,
    out: Lookup,
}

impl<'a> Reader<'a> {
    fn new(sources: &'a [Source], gitdir: Option<&'a Path>, key: Option<&'a str>) -> Reader<'a> {
        let urls = key.is_none().then(Vec::new);
        Reader { sources, gitdir, key, watched: false, urls_forbidden: false, urls, out: Lookup::default() }
    }

    /// Reads every file of the sequence in order, with its includes.
    fn read_all(&mut self) {
        for source in self.sources {
            self.watched = source.watched && self.key.is_some();
            self.file(&source.path, 0);
        }
    }

    /// Reads `path` (`depth` includes down); a missing or unreadable file is skipped, as git
    /// skips a missing include. A path that is no regular file (`/dev/null`) is no file.
    fn file(&mut self, path: &Path, depth: usize) {
        if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            return;
        }
        if self.watched && !self.out.files.iter().any(|f| f == path) {
            self.out.files.push(path.to_path_buf());
        }
        let Ok(bytes) = std::fs::read(path) else { return };
        let text = String::from_utf8_lossy(&bytes);
        for entry in parse(&text) {
            let Entry { section, sub, key, value } = entry;
            match (section.as_str(), sub.as_deref(), key.as_str()) {
                // A key with no `=` is a boolean, which git refuses for a path: skipped.
                ("core", None, k) if Some(k) == self.key && value.is_some() => self.out.value = value,
                ("remote", Some(_), "url") if self.key.is_none() && !self.urls_forbidden => {
                    self.urls.get_or_insert_with(Vec::new).extend(value)
                }
                ("include", None, "path") => self.include(value.as_deref(), path, depth),
                ("includeif", Some(cond), "path") if self.condition(cond, path) => {
                    let forbid = self.key.is_none() && cond.starts_with(HASCONFIG_URL);
                    let before = self.urls_forbidden;
                    self.urls_forbidden |= forbid;
                    self.include(value.as_deref(), path, depth);
                    self.urls_forbidden = before;
                }
                _ => {}
            }
        }
    }

    /// Reads the file an include names, in place, as git does (its values come between the
    /// including file's values before and after it).
    fn include(&mut self, value: Option<&str>, from: &Path, depth: usize) {
        let Some(target) = value.filter(|v| !v.is_empty()).and_then(expand_home) else { return };
        let target = match from.parent() {
            Some(dir) if target.is_relative() => normalize(&dir.join(target)),
            _ => target,
        };
        if depth + 1 > MAX_INCLUDE_DEPTH {
            tracing::warn!(file = %target.display(), from = %from.display(),
                "git config includes nested over {MAX_INCLUDE_DEPTH} deep (a cycle?): not read");
            return;
        }
        self.file(&target, depth + 1);
    }

    /// Whether an `includeIf` condition holds, as git's `include_condition_is_true`:
    /// `gitdir:` / `gitdir/i:`, `onbranch:`, `hasconfig:remote.*.url:`; any other is false.
    fn condition(&mut self, cond: &str, file: &Path) -> bool {
        if let Some(pattern) = cond.strip_prefix(ONBRANCH) {
            return self.on_branch(pattern);
        }
        if let Some(pattern) = cond.strip_prefix(HASCONFIG_URL) {
            return self.has_remote_url(pattern);
        }
        let (pattern, icase) = match (cond.strip_prefix("gitdir:"), cond.strip_prefix("gitdir/i:")) {
            (Some(p), _) => (p, false),
            (_, Some(p)) => (p, true),
            _ => return false,
        };
        self.gitdir.is_some_and(|g| gitdir_matches(pattern, icase, file, g))
    }

    /// git's `include_by_branch`: the branch `HEAD` names (`refs/heads/` left off; unborn
    /// too), matched as a path glob, a trailing `/` meaning everything below it. False
    /// outside a repository and on a detached `HEAD`. `HEAD` (and a reftable's `tables.list`)
    /// joins the files a watcher follows.
    fn on_branch(&mut self, pattern: &str) -> bool {
        let Some(gitdir) = self.gitdir else { return false };
        if self.key.is_some() {
            // A checkout in a reftable repository rewrites the stack's list, not `HEAD`.
            let list = Some(reftable::tables_list(gitdir)).filter(|l| l.is_file());
            for file in std::iter::once(gitdir.join("HEAD")).chain(list) {
                if !self.out.files.contains(&file) {
                    self.out.files.push(file);
                }
            }
        }
        let Some(branch) = current_branch(gitdir) else { return false };
        let mut pat = pattern.to_string();
        if pat.ends_with('/') {
            pat.push_str("**");
        }
        wildmatch(&pat, &branch, false)
    }

    /// git's `include_by_remote_url`: whether a remote URL (`remote.<name>.url`) set in any
    /// file of the sequence, before this one or after it, matches the pattern as a path glob.
    /// The URLs are gathered once, by a scan of the sequence that takes every `hasconfig:`
    /// include as true and no URL from what those bring in (git refuses one there); the scan
    /// itself takes the condition as true, as git's does.
    fn has_remote_url(&mut self, pattern: &str) -> bool {
        if self.key.is_none() {
            return true;
        }
        let urls = self.urls.get_or_insert_with(|| {
            let mut scan = Reader::new(self.sources, self.gitdir, None);
            scan.read_all();
            scan.urls.unwrap_or_default()
        });
        urls.iter().any(|url| wildmatch(pattern, url, false))
    }
}

/// The branch a git directory's `HEAD` names (`ref: refs/heads/NAME`, or a symbolic link to
/// `refs/heads/NAME` as old git wrote it); none when detached or unreadable. A repository
/// whose refs are kept in a reftable has the placeholder `refs/heads/.invalid` in its `HEAD`
/// file: its branch is read from the table stack ([`reftable::head_target`]); it used to be
/// none, so an `onbranch:` include never applied there.
fn current_branch(gitdir: &Path) -> Option<String> {
    let head = gitdir.join("HEAD");
    let mut target = match std::fs::read_link(&head) {
        Ok(link) => link.to_string_lossy().into_owned(),
        Err(_) => std::fs::read_to_string(&head).ok()?.strip_prefix("ref:")?.trim().to_string(),
    };
    if target == REFTABLE_PLACEHOLDER {
        target = reftable::head_target(gitdir)?;
    }
    let branch = target.strip_prefix("refs/heads/")?;
    (branch != ".invalid" && !branch.is_empty()).then(|| branch.to_string())
}

/// What a reftable repository's `HEAD` file names (git keeps it for older tools).
const REFTABLE_PLACEHOLDER: &str = "refs/heads/.invalid";

/// git's `wildmatch(pattern, text, WM_PATHNAME)`: `*` and `?` stay within a `/`-separated
/// part, `**/` and `/**` cross parts, `\` escapes; braces are plain characters there.
fn wildmatch(pattern: &str, text: &str, icase: bool) -> bool {
    let pattern = pattern.replace('{', "\\{").replace('}', "\\}");
    globset::GlobBuilder::new(&pattern)
        .literal_separator(true)
        .case_insensitive(icase)
        .backslash_escape(true)
        .build()
        .is_ok_and(|g| g.compile_matcher().is_match(text))
}

/// git's `include_by_gitdir`: the pattern (`~/` expanded, `./` from the including file's
/// directory, a relative one prefixed with `**/`, a trailing `/` extended with `**`) matched
/// as a path glob against the git directory's real path, then its path as given.
fn gitdir_matches(pattern: &str, icase: bool, file: &Path, gitdir: &Path) -> bool {
    let Some(expanded) = expand_home(pattern) else { return false };
    let mut pat = expanded.to_string_lossy().into_owned();
    let mut prefix = 0;
    if let Some(rest) = pat.strip_prefix("./") {
        let Some(dir) = std::fs::canonicalize(file).ok().and_then(|f| f.parent().map(Path::to_path_buf)) else {
            return false;
        };
        let dir = dir.to_string_lossy().into_owned();
        prefix = dir.len() + 1;
        pat = format!("{dir}/{rest}");
    } else if !Path::new(&pat).is_absolute() {
        pat = format!("**/{pat}");
    }
    if pat.ends_with('/') {
        pat.push_str("**");
    }
    let Ok(glob) = globset::GlobBuilder::new(&pat[prefix..])
        .literal_separator(true)
        .case_insensitive(icase)
        .backslash_escape(true)
        .build()
    else {
        return false;
    };
    let glob = glob.compile_matcher();
    let real = std::fs::canonicalize(gitdir).ok();
    let matches = |text: &Path| {
        let text = text.to_string_lossy();
        let (Some(head), Some(tail)) = (text.get(..prefix), text.get(prefix..)) else { return false };
        let lit = &pat[..prefix];
        let same = if icase { head.eq_ignore_ascii_case(lit) } else { head == lit };
        same && glob.is_match(tail)
    };
    real.as_deref().is_some_and(matches) || matches(gitdir)
}

/// One `key = value` of a config file with its section, names lowercased as git compares
/// them (a subsection in quotes keeps its case).
#[derive(Debug, PartialEq)]
struct Entry {
    section: String,
    sub: Option<String>,
    key: String,
    /// None for a key with no `=` (a boolean true).
    value: Option<String>,
}

/// The entries of a config file, as git's parser reads them: comments (`#`, `;`), sections
/// `[name]`, `[name "sub"]` and the old `[name.sub]`, an entry on the header's line, values
/// with quotes, escapes and `\` line continuations. A line git would refuse is skipped.
fn parse(text: &str) -> Vec<Entry> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text).replace("\r\n", "\n");
    let mut chars = text.chars().peekable();
    let (mut section, mut sub) = (String::new(), None);
    let mut out = Vec::new();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {}
            '#' | ';' => skip_line(&mut chars),
            '[' => match header(&mut chars) {
                Some((s, b)) => (section, sub) = (s, b),
                None => {
                    skip_line(&mut chars);
                    (section, sub) = (String::new(), None);
                }
            },
            c if c.is_ascii_alphabetic() => {
                let mut key = String::from(c.to_ascii_lowercase());
                while let Some(&n) = chars.peek().filter(|n| n.is_ascii_alphanumeric() || **n == '-') {
                    key.push(n.to_ascii_lowercase());
                    chars.next();
                }
                while chars.next_if(|n| *n == ' ' || *n == '\t').is_some() {}
                let value = match chars.next() {
                    None | Some('\n') => None,
                    Some('=') => match value(&mut chars) {
                        Some(v) => Some(v),
                        None => continue,
                    },
                    Some(_) => {
                        skip_line(&mut chars);
                        continue;
                    }
                };
                out.push(Entry { section: section.clone(), sub: sub.clone(), key, value });
            }
            _ => skip_line(&mut chars),
        }
    }
    out
}

type Chars<'a> = std::iter::Peekable<std::str::Chars<'a>>;

fn skip_line(chars: &mut Chars) {
    for c in chars.by_ref() {
        if c == '\n' {
            break;
        }
    }
}

/// A section header after its `[`: the section (lowercase) and subsection.
fn header(chars: &mut Chars) -> Option<(String, Option<String>)> {
    let mut name = String::new();
    loop {
        match chars.next()? {
            ']' => {
                // The old form `[section.sub]`: both lowercase.
                return Some(match name.split_once('.') {
                    Some((s, b)) => (s.to_string(), Some(b.to_string())),
                    None => (name, None),
                });
            }
            c if c.is_whitespace() => break,
            c if c.is_ascii_alphanumeric() || c == '-' || c == '.' => name.push(c.to_ascii_lowercase()),
            _ => return None,
        }
    }
    // `[section "sub"]`: `\` takes the next character as it is.
    while chars.next_if(|c| *c == ' ' || *c == '\t').is_some() {}
    if chars.next()? != '"' {
        return None;
    }
    let mut sub = String::new();
    loop {
        match chars.next()? {
            '\n' => return None,
            '"' => break,
            '\\' => sub.push(chars.next().filter(|c| *c != '\n')?),
            c => sub.push(c),
        }
    }
    (chars.next()? == ']').then_some((name, Some(sub)))
}

/// A value after its `=`, to the end of its line (git's `parse_value`): outer blanks dropped,
/// quotes removed, `\t` `\n` `\b` `\\` `\"` unescaped, a `\` at the end of a line continuing
/// it, a `#` or `;` outside quotes starting a comment. None for what git refuses (an unknown
/// escape, an open quote at the end of the line).
fn value(chars: &mut Chars) -> Option<String> {
    let (mut out, mut quoted, mut comment, mut trim) = (String::new(), false, false, None);
    loop {
        let c = chars.next().unwrap_or('\n');
        if c == '\n' {
            if quoted {
                return None;
            }
            if let Some(len) = trim {
                out.truncate(len);
            }
            return Some(out);
        }
        if comment {
            continue;
        }
        if c.is_whitespace() && !quoted {
            trim = trim.or(Some(out.len()));
            if !out.is_empty() {
                out.push(c);
            }
            continue;
        }
        if !quoted && (c == '#' || c == ';') {
            comment = true;
            continue;
        }
        trim = None;
        match c {
            '\\' => match chars.next().unwrap_or('\n') {
                '\n' => {}
                't' => out.push('\t'),
                'b' => out.push('\u{8}'),
                'n' => out.push('\n'),
                c @ ('\\' | '"') => out.push(c),
                _ => {
                    skip_line(chars);
                    return None;
                }
            },
            '"' => quoted = !quoted,
            c => out.push(c),
        }
    }
}

/// `p` with `.` and `..` resolved lexically (a relative `gitdir:`, `core.worktree` or include
/// path: `../../.git/modules/x`).
pub fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            c => out.push(c.as_os_str()),
        }
    }
    out
}

/// git's boolean spellings for true (`GIT_CONFIG_NOSYSTEM=1`, `true`, `yes`, `on`).
fn is_true(v: &str) -> bool {
    ["1", "true", "yes", "on"].iter().any(|t| v.trim().eq_ignore_ascii_case(t))
        || v.trim().parse::<i64>().is_ok_and(|n| n != 0)
}

fn non_empty_var(name: &str) -> Option<PathBuf> {
    std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from)
}

fn home() -> Option<PathBuf> {
    non_empty_var("HOME")
}

/// `$XDG_CONFIG_HOME`, else `~/.config`.
fn xdg_config_home() -> Option<PathBuf> {
    non_empty_var("XDG_CONFIG_HOME").or_else(|| home().map(|h| h.join(".config")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(text: &str) -> Vec<(String, Option<String>, String, Option<String>)> {
        parse(text).into_iter().map(|e| (e.section, e.sub, e.key, e.value)).collect()
    }

    #[test]
    fn config_files_are_parsed_as_git_parses_them() {
        let got = entries(
            "# comment\n[Core]\n\tExcludesFile = \"my ignore\" ; note\n\tbare\n[core] worktree = a\\\n b \n\
             [includeIf \"gitdir/i:~/Work/\"]\npath = x\n[section.Sub]\nk = \"a\\tb\" c  \n\
             [core]\nbroken = \"open\nesc = a\\qb\nlast = 1\n",
        );
        let s = |v: &str| Some(v.to_string());
        let want = vec![
            ("core".into(), None, "excludesfile".into(), s("my ignore")),
            ("core".into(), None, "bare".into(), None),
            ("core".into(), None, "worktree".into(), s("a b")),
            ("includeif".into(), s("gitdir/i:~/Work/"), "path".into(), s("x")),
            ("section".into(), s("sub"), "k".into(), s("a\tb c")),
            ("core".into(), None, "last".into(), s("1")),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn includes_are_followed_in_place_and_a_cycle_ends() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        std::fs::create_dir(p("sub")).unwrap();
        std::fs::write(p("main"), "[core]\nexcludesFile = a\n[include]\npath = sub/inc\n").unwrap();
        // Relative to the including file (sub/), then a cycle back to it, and a missing file.
        std::fs::write(p("sub/inc"), "[core]\nexcludesFile = b\n[include]\npath = ../sub/inc\npath = nope\n").unwrap();
        let sources = [Source { path: p("main"), watched: true }];
        let got = core_value(&sources, None, "excludesfile");
        assert_eq!(got.value.as_deref(), Some("b"));
        assert_eq!(got.files, [p("main"), p("sub/inc"), p("sub/nope")]);
        // A value after the include wins over the included one.
        std::fs::write(p("main"), "[include]\npath = sub/inc\n[core]\nexcludesFile = c\n").unwrap();
        assert_eq!(core_value(&sources, None, "excludesfile").value.as_deref(), Some("c"));
    }

    #[test]
    fn onbranch_conditions_follow_head_as_in_git() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        std::fs::create_dir(p("git")).unwrap();
        std::fs::write(
            p("cfg"),
            "[includeIf \"onbranch:feature/\"]\npath = feat\n[includeIf \"onbranch:rel-*\"]\npath = rel\n",
        )
        .unwrap();
        std::fs::write(p("feat"), "[core]\nexcludesFile = feat\n").unwrap();
        std::fs::write(p("rel"), "[core]\nexcludesFile = rel\n").unwrap();
        let sources = [Source { path: p("cfg"), watched: true }];
        let on = |head: &str| {
            std::fs::write(p("git/HEAD"), head).unwrap();
            core_value(&sources, Some(&p("git")), "excludesfile").value
        };
        let s = |v: &str| Some(v.to_string());
        assert_eq!(on("ref: refs/heads/feature/a/b\n"), s("feat"), "a trailing / is everything below");
        assert_eq!(on("ref: refs/heads/feature\n"), None);
        assert_eq!(on("ref: refs/heads/rel-2\n"), s("rel"));
        assert_eq!(on("ref: refs/heads/rel-2/x\n"), None, "* stays within one part");
        assert_eq!(on("0123456789abcdef0123456789abcdef01234567\n"), None, "detached");
        assert_eq!(on("ref: refs/heads/.invalid\n"), None, "a reftable's placeholder");
        // HEAD decides: a watcher follows it. Outside a repository nothing is on a branch.
        assert!(core_value(&sources, Some(&p("git")), "excludesfile").files.contains(&p("git/HEAD")));
        assert_eq!(core_value(&sources, None, "excludesfile").value, None);
    }

    /// In a repository whose refs are kept in a reftable, `HEAD` names the placeholder
    /// `refs/heads/.invalid`, so `onbranch:` was always false there. The branch is read from the
    /// table stack, a checkout (which rewrites the stack, not `HEAD`) changes it, and the
    /// stack's list joins the files a watcher follows. Needs a git that writes reftables (2.45+).
    #[test]
    fn onbranch_conditions_read_the_branch_of_a_reftable_repository() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let git = |args: &[&str]| {
            std::process::Command::new("git")
                .args(["-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "init.defaultBranch=main"])
                .args(args)
                .current_dir(&repo)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "")
                .output()
        };
        std::fs::create_dir(&repo).unwrap();
        match git(&["init", "-q", "--ref-format=reftable"]) {
            Ok(out) if out.status.success() => {}
            Ok(out) => {
                eprintln!(
                    "skipped: this git cannot make a reftable repository (git 2.45 or later can): {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
                return;
            }
            Err(e) => {
                eprintln!("skipped: git could not run: {e}");
                return;
            }
        }
        let gitdir = repo.join(".git");
        assert_eq!(std::fs::read_to_string(gitdir.join("HEAD")).unwrap().trim(), "ref: refs/heads/.invalid");
        std::fs::write(dir.path().join("feat"), "[core]\nexcludesFile = feat-ignore\n").unwrap();
        std::fs::write(dir.path().join("main"), "[core]\nexcludesFile = main-ignore\n").unwrap();
        let cfg = dir.path().join("cfg");
        std::fs::write(
            &cfg,
            "[includeIf \"onbranch:feature/\"]\npath = feat\n[includeIf \"onbranch:main\"]\npath = main\n",
        )
        .unwrap();
        let sources = [Source { path: cfg, watched: true }];
        let value = || core_value(&sources, Some(&gitdir), "excludesfile");
        assert_eq!(value().value.as_deref(), Some("main-ignore"), "unborn main, kept in the reftable");
        assert!(value().files.contains(&gitdir.join("reftable/tables.list")), "{:?}", value().files);
        assert!(git(&["commit", "-q", "--allow-empty", "-m", "one"]).unwrap().status.success());
        assert!(git(&["checkout", "-q", "-b", "feature/x"]).unwrap().status.success());
        assert_eq!(value().value.as_deref(), Some("feat-ignore"), "after a checkout");
        assert!(git(&["checkout", "-q", "--detach"]).unwrap().status.success());
        assert_eq!(value().value, None, "detached");
        // Many ref updates, then git's compaction: still read.
        for i in 0..20 {
            assert!(git(&["branch", &format!("b{i}")]).unwrap().status.success());
        }
        assert!(git(&["checkout", "-q", "main"]).unwrap().status.success());
        assert!(git(&["pack-refs", "--all"]).unwrap().status.success());
        assert_eq!(value().value.as_deref(), Some("main-ignore"), "after compaction");
    }

    #[test]
    fn hasconfig_conditions_see_every_remote_url_as_in_git() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        std::fs::write(
            p("global"),
            "[includeIf \"hasconfig:remote.*.url:https://example.com/team/**\"]\npath = team\n\
             [includeIf \"hasconfig:remote.*.url:git@example.com:*/x.git\"]\npath = ssh\n",
        )
        .unwrap();
        // The included file's own URL does not count (git refuses one there).
        std::fs::write(p("team"), "[core]\nexcludesFile = team\n").unwrap();
        std::fs::write(p("ssh"), "[core]\nexcludesFile = ssh\n[remote \"o\"]\nurl = https://example.com/team/z\n")
            .unwrap();
        let sources = [Source { path: p("global"), watched: true }, Source { path: p("local"), watched: true }];
        let with = |local: &str| {
            std::fs::write(p("local"), local).unwrap();
            core_value(&sources, None, "excludesfile").value
        };
        let s = |v: &str| Some(v.to_string());
        // Set in a file read after the condition: git scans every file first.
        assert_eq!(with("[remote \"origin\"]\n\turl = https://example.com/team/a/b.git\n"), s("team"));
        assert_eq!(with("[remote \"origin\"]\n\turl = https://example.com/other/team/b\n"), None);
        assert_eq!(with("[remote \"up\"]\n\turl = git@example.com:me/x.git\n"), s("ssh"));
        assert_eq!(with("[remote \"up\"]\n\tpushurl = https://example.com/team/a\n"), None, "url only");
        assert_eq!(with("[remote]\n\turl = https://example.com/team/a\n"), None, "a remote has a name");
    }

    #[test]
    fn a_path_that_is_no_regular_file_is_no_config_file() {
        let dir = tempfile::tempdir().unwrap();
        let sources = [
            Source { path: PathBuf::from("/dev/null"), watched: true },
            Source { path: dir.path().to_path_buf(), watched: true },
            Source { path: dir.path().join("missing"), watched: true },
        ];
        let got = core_value(&sources, None, "excludesfile");
        assert_eq!(got.files, [dir.path().join("missing")], "a missing file is watched for; /dev/null is none");
    }

    #[test]
    fn gitdir_conditions_match_as_in_git() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let gitdir = root.join("work/proj/.git");
        std::fs::create_dir_all(&gitdir).unwrap();
        let file = root.join("cfg");
        std::fs::write(&file, "").unwrap();
        let r = root.display();
        assert!(gitdir_matches(&format!("{r}/work/"), false, &file, &gitdir));
        assert!(!gitdir_matches(&format!("{r}/Work/"), false, &file, &gitdir));
        assert!(gitdir_matches(&format!("{r}/Work/"), true, &file, &gitdir));
        assert!(gitdir_matches("proj/.git", false, &file, &gitdir));
        assert!(gitdir_matches("./work/", false, &file, &gitdir));
        assert!(!gitdir_matches(&format!("{r}/work"), false, &file, &gitdir), "no trailing / is the path itself");
        assert!(gitdir_matches(&format!("{r}/work/*/.git"), false, &file, &gitdir));
        assert!(!gitdir_matches(&format!("{r}/*/.git"), false, &file, &gitdir), "* does not cross /");
    }
}
