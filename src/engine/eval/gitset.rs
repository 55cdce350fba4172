//! A query set from a repository's own history, made the way `../shared/eval-dev/` was made:
//! each qualifying commit's subject and first paragraph, redacted so it does not hand over the
//! answer, against the non-test source files the commit changed that still exist.
//!
//! A commit qualifies when it is not a merge; its conventional-commit type (if any) is not
//! docs, test, ci, chore, build, style or release; its subject is not release, version, merge,
//! revert, typo, dependency, lint, format or CI noise and keeps at least five words once its
//! `type(scope):` prefix and issue numbers are gone; and it touched one to four non-test source
//! files and at most fifteen files in all. A changed source file is kept as an answer when it
//! still exists and still holds at least one line the commit added; the commit is dropped when
//! fewer than half of its source files survive. Candidates are shuffled with a seeded generator
//! (the same seed and history give the same set), then redacted in that order until `n` queries
//! have at least four distinct content words.
//!
//! Redaction removes: `type(scope):` prefixes, issue and PR references, URLs, commit hashes and
//! trailer lines; path-like tokens and anything ending in a file extension; words equal to the
//! name or stem of a file the commit changed; code-shaped tokens (`snake_case`, `camelCase`,
//! `a.b`, `a::b`, `f()`, `--flag`, backticked spans) that appear in the diff or in an answer
//! file; and plain words that name functions, types or methods the diff declares.
//!
//! A file renamed after the commit is followed to its current path (git's rename detection,
//! commit by commit over the history read), so the answer is the file as it is named now. In a
//! shallow clone the commits at the clone's edge are left out: their parents were
//! not fetched, so git shows them adding the whole tree.

use super::EvalQuery;
use crate::engine::index::files::{self, ChunkStyle, FileClass};
use crate::engine::{analysis, fsutil};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::path::Path;

/// Newest commits considered.
pub const MAX_SCANNED: usize = 6000;
/// Most files a qualifying commit may touch in all.
const MAX_FILES: usize = 15;
/// Most answer (non-test source) files a qualifying commit may touch.
const MAX_ANSWER_FILES: usize = 4;
/// Bytes of an answer file read to check and redact: the indexer's default size limit.
const MAX_ANSWER_BYTES: u64 = 10 * 1024 * 1024;
/// Fewest words a subject keeps after its prefix and issue numbers go.
const MIN_SUBJECT_WORDS: usize = 5;
/// Fewest distinct content words a redacted query keeps.
const MIN_CONTENT_WORDS: usize = 4;

/// How to build the set.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct GitSetOptions {
    /// Queries wanted (fewer when the history has fewer qualifying commits).
    pub n: usize,
    /// Only commits after this date: YYYY-MM-DD (optionally with a time), "3 weeks ago", "last
    /// month", yesterday, @UNIX_SECONDS, or another date git reads ("last monday", "march 1");
    /// what git cannot read is refused, since `git log` would read it as some other date
    /// without a word.
    #[serde(default)]
    pub since: Option<String>,
    /// Shuffle seed: the same seed and history give the same set.
    pub seed: u64,
}

impl Default for GitSetOptions {
    fn default() -> Self {
        GitSetOptions { n: 50, since: None, seed: 1 }
    }
}

/// What building the set found.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct GitSetStats {
    /// Non-merge commits read.
    pub scanned: usize,
    /// Commits that passed the message and file rules.
    pub candidates: usize,
    /// Candidates redacted (in shuffled order) to fill the set.
    pub tried: usize,
    /// Queries made.
    pub queries: usize,
    /// Tried commits dropped because their files no longer hold (most of) the lines they added:
    /// rewritten since, so the answer would point at code that is gone.
    #[serde(default)]
    pub dropped_rewritten: usize,
    /// Tried commits dropped because too few words were left once identifiers and file names
    /// were taken out of the message.
    #[serde(default)]
    pub dropped_redacted: usize,
    /// Queries dropped because the index leaves out their answers (or more than half of them):
    /// a hidden or excluded folder, a file too large.
    #[serde(default)]
    pub dropped_unindexed: usize,
    /// The repository is a shallow clone: only the fetched history was read, and the oldest
    /// fetched commits (whose parents are missing, so git shows them adding the whole tree)
    /// were left out.
    #[serde(default)]
    pub shallow: bool,
    /// Commit date (YYYY-MM-DD) of the oldest commit read: the window actually evaluated, as
    /// far back as `--since` and the newest 6,000 commits go.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oldest: Option<String>,
}

impl GitSetStats {
    /// Why tried commits made no query, in words ("3 whose lines were rewritten or renamed
    /// since", ...), for every surface that reports the set.
    pub fn dropped_reasons(&self) -> Vec<String> {
        [
            (self.dropped_rewritten, "whose lines were rewritten or renamed since"),
            (self.dropped_redacted, "with too few words once identifiers were removed"),
            (self.dropped_unindexed, "whose answers the index leaves out"),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, why)| format!("{n} {why}"))
        .collect()
    }
}

/// A commit as `git log` describes it.
#[derive(Debug, Clone, PartialEq)]
struct Commit {
    sha: String,
    /// Committer date, YYYY-MM-DD.
    date: String,
    subject: String,
    body: String,
    /// (status letter, repo-relative path after the change).
    files: Vec<(char, String)>,
    /// (path after the change, path now) for each file renamed by a later commit; `None` when
    /// it now lies outside the indexed directory.
    moved: Vec<(String, Option<String>)>,
}

/// An answer file: its path in the commit, and now (they differ when renamed since).
#[derive(Debug, Clone, PartialEq)]
struct Answer {
    then: String,
    now: String,
}

/// Builds the set for the repository at `root` (the indexed directory; it may be a
/// subdirectory of the git work tree: a commit that changed source outside it is left out, see
/// [`within`]).
pub fn build(root: &Path, opts: &GitSetOptions) -> Result<(Vec<EvalQuery>, GitSetStats)> {
    let since = match opts.since.as_deref().filter(|s| !s.trim().is_empty()) {
        Some(s) => Some(super::since::check(root, s)?),
        None => None,
    };
    let opts = &GitSetOptions { since, ..opts.clone() };
    let log = git(root, &log_args(opts))?;
    let mut commits = parse_log(&log);
    follow_renames(&mut commits, &parse_renames(&git(root, &rename_args(opts))?));
    let grafted = shallow_commits(root)?;
    let oldest = commits.last().map(|c| c.date.clone()).filter(|d| !d.is_empty());
    let mut stats = GitSetStats { scanned: commits.len(), shallow: grafted.is_some(), oldest, ..Default::default() };
    let grafted = grafted.unwrap_or_default();
    let name = root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "repo".into());
    let prefix = git(root, &["rev-parse", "--show-prefix"])?.trim_end_matches(['\n', '\r']).to_string();
    let mut candidates: Vec<(Commit, Vec<Answer>)> = commits
        .into_iter()
        .filter(|c| !grafted.contains(&c.sha) && message_qualifies(&c.subject))
        .filter_map(|c| {
            let c = within(c, &prefix)?;
            let answers = answer_files(root, &c)?;
            Some((c, answers))
        })
        .collect();
    stats.candidates = candidates.len();
    shuffle(&mut candidates, opts.seed);
    let mut out = Vec::new();
    for (commit, answers) in candidates {
        if out.len() >= opts.n {
            break;
        }
        stats.tried += 1;
        let diff = git(root, &show_args(&commit.sha))?;
        let added = added_lines(&diff);
        let gold: Vec<String> =
            answers.iter().filter(|a| still_holds_an_added_line(root, a, &added)).map(|a| a.now.clone()).collect();
        if gold.is_empty() || gold.len() * 2 < answers.len() {
            stats.dropped_rewritten += 1;
            continue;
        }
        let gold_text: String = gold.iter().filter_map(|p| answer_text(root, p)).collect::<Vec<_>>().join("\n");
        let renamed = answers.iter().filter(|a| a.now != a.then).map(|a| a.now.as_str());
        let changed: Vec<&str> = commit.files.iter().map(|(_, p)| p.as_str()).chain(renamed).collect();
        let query = redact(&commit.subject, &commit.body, &changed, &diff, &gold_text);
        if analysis::query_terms(&query).len() < MIN_CONTENT_WORDS {
            stats.dropped_redacted += 1;
            continue;
        }
        let short = &commit.sha[..commit.sha.len().min(10)];
        out.push(EvalQuery { id: format!("{name}-{short}"), query, gold });
    }
    stats.queries = out.len();
    Ok((out, stats))
}

fn log_args(opts: &GitSetOptions) -> Vec<String> {
    history_args(
        opts,
        &[
            // Paths from the top of the work tree (not `--relative`): a commit that also changed
            // source outside an indexed subdirectory is seen as such, see [`within`].
            "--name-status",
            "--no-renames",
            "--format=%x1e%H%x1f%cs%x1f%s%x1f%b%x1f",
        ],
    )
}

/// The same commits as [`log_args`], with only their renames: git's rename detection, the
/// files a later commit moved, to follow an answer to its name now.
fn rename_args(opts: &GitSetOptions) -> Vec<String> {
    history_args(opts, &["--name-status", "--find-renames", "--diff-filter=R", "--format=%x1e%H"])
}

/// `git log` of the commits a set reads (non-merge, newest first, the newest [`MAX_SCANNED`]
/// after `--since`), printed as `format` says.
fn history_args(opts: &GitSetOptions, format: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "log",
        "--no-merges",
        "--no-color",
        // With `log.showSignature` set, git checks every signed commit (thousands of gpg or
        // ssh-keygen runs) for lines eval ignores.
        "--no-show-signature",
        // Messages in UTF-8 whatever the repository's `i18n.commitEncoding` (git otherwise
        // prints them in it, and a Latin-1 é became U+FFFD in the query).
        "--encoding=UTF-8",
    ]
    .iter()
    .chain(format)
    .map(|s| s.to_string())
    .collect();
    args.push(format!("--max-count={MAX_SCANNED}"));
    if let Some(since) = opts.since.as_deref().filter(|s| !s.trim().is_empty()) {
        args.push(format!("--since={since}"));
    }
    args.push("HEAD".into());
    args
}

/// `git show` of one commit as [`added_lines`] reads it: whatever the user's git config says,
/// paths under `+++ b/` (`diff.noprefix` or `diff.mnemonicPrefix` left no `b/`, so no added line
/// was found and every commit was dropped as rewritten), no colour, no external diff tool, no
/// signature check.
fn show_args(sha: &str) -> [&str; 10] {
    [
        "show",
        "--no-color",
        "--no-ext-diff",
        "--no-show-signature",
        "--src-prefix=a/",
        "--dst-prefix=b/",
        "--format=",
        "-U0",
        "--relative",
        sha,
    ]
}

/// In a shallow clone, the commits at its edge (`.git/shallow`): git shows each as adding every
/// file of its tree, which would make the whole tree its answer. `None` for a full clone.
fn shallow_commits(root: &Path) -> Result<Option<HashSet<String>>> {
    if git(root, &["rev-parse", "--is-shallow-repository"])?.trim() != "true" {
        return Ok(None);
    }
    let file = root.join(git(root, &["rev-parse", "--git-path", "shallow"])?.trim());
    let text = std::fs::read_to_string(&file).map_err(|e| Error::io("reading", &file, e))?;
    Ok(Some(text.lines().map(|l| l.trim().to_string()).filter(|l| !l.is_empty()).collect()))
}

/// Runs git in `root` and returns its output; errors say what to do.
fn git<S: AsRef<std::ffi::OsStr>>(root: &Path, args: &[S]) -> Result<String> {
    let out = crate::engine::git::output(root, args, "--from-git")?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let first = crate::engine::git::first_line(&stderr, "git failed");
        let lower = stderr.to_ascii_lowercase();
        return Err(Error::BadRequest(if lower.contains("not a git repository") {
            format!(
                "--from-git needs the repository's git history, and {} is not inside a git work tree; pass --queries FILE instead",
                root.display()
            )
        } else if lower.contains("does not have any commits")
            || lower.contains("bad default revision")
            || (lower.contains("unknown revision") && lower.contains("'head'"))
        {
            format!(
                "{} has no commits yet: there is no history to build queries from; commit first or pass --queries FILE",
                root.display()
            )
        } else {
            format!("git failed in {}: {first}", root.display())
        }));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Parses `git log` output in [`log_args`]'s format.
fn parse_log(text: &str) -> Vec<Commit> {
    text.split('\u{1e}')
        .filter_map(|rec| {
            let mut fields = rec.splitn(5, '\u{1f}');
            let sha = fields.next()?.trim().to_string();
            let date = fields.next()?.trim().to_string();
            let subject = fields.next()?.trim().to_string();
            let body = fields.next()?.trim().to_string();
            let rest = fields.next().unwrap_or("");
            if sha.len() < 7 {
                return None;
            }
            let files = rest
                .lines()
                .filter_map(|l| {
                    let mut parts = l.split('\t');
                    let status = parts.next()?.chars().next()?;
                    let path = parts.next_back()?.trim();
                    (!path.is_empty()).then(|| (status, path.to_string()))
                })
                .collect();
            Some(Commit { sha, date, subject, body, files, moved: Vec::new() })
        })
        .collect()
}

/// Renames per commit (sha, then `(old, new)` paths from the top of the work tree), in
/// [`rename_args`]'s output order (newest first).
fn parse_renames(text: &str) -> Vec<(String, Vec<(String, String)>)> {
    text.split('\u{1e}')
        .filter_map(|rec| {
            let mut lines = rec.lines();
            let sha = lines.next()?.trim().to_string();
            let pairs = lines
                .filter_map(|l| {
                    let mut parts = l.split('\t');
                    parts.next()?.starts_with('R').then_some(())?;
                    Some((parts.next()?.to_string(), parts.next()?.to_string()))
                })
                .collect::<Vec<_>>();
            (!sha.is_empty() && !pairs.is_empty()).then_some((sha, pairs))
        })
        .collect()
}

/// Sets each commit's `moved`: where the renames of the commits after it (applied oldest
/// first) took its files. Both lists are newest first, in git's log order.
fn follow_renames(commits: &mut [Commit], renames: &[(String, Vec<(String, String)>)]) {
    if renames.is_empty() {
        return;
    }
    let position: std::collections::HashMap<&str, usize> =
        commits.iter().enumerate().map(|(i, c)| (c.sha.as_str(), i)).collect();
    // (position of the renaming commit, its renames), oldest first.
    let mut later: Vec<(usize, &[(String, String)])> =
        renames.iter().filter_map(|(sha, r)| Some((*position.get(sha.as_str())?, r.as_slice()))).collect();
    later.sort_by_key(|l| std::cmp::Reverse(l.0));
    for (i, c) in commits.iter_mut().enumerate() {
        for (_, path) in c.files.iter().filter(|(s, _)| *s != 'D') {
            let mut now = path.clone();
            for (_, pairs) in later.iter().filter(|(pos, _)| *pos < i) {
                if let Some((_, new)) = pairs.iter().find(|(old, _)| *old == now) {
                    now = new.clone();
                }
            }
            if now != *path {
                c.moved.push((path.clone(), Some(now)));
            }
        }
    }
}

/// A conventional-commit type (`fix(parser)!:` -> `fix`), lowercased.
fn commit_type(subject: &str) -> Option<String> {
    let head = subject.split(':').next()?;
    if head.len() == subject.len() || head.contains(' ') {
        return None;
    }
    let t = head.split('(').next()?.trim_end_matches('!');
    (!t.is_empty() && t.chars().all(|c| c.is_ascii_alphabetic())).then(|| t.to_ascii_lowercase())
}

/// The subject without its `type(scope):` prefix and issue numbers.
fn bare_subject(subject: &str) -> String {
    let s = if commit_type(subject).is_some() { subject.split_once(':').map_or(subject, |x| x.1) } else { subject };
    s.split_whitespace().filter(|w| !is_issue_ref(w)).collect::<Vec<_>>().join(" ")
}

/// Whether a commit's message makes it a candidate.
fn message_qualifies(subject: &str) -> bool {
    const SKIP_TYPES: &[&str] =
        &["docs", "doc", "test", "tests", "ci", "chore", "build", "style", "release", "revert", "deps", "bump"];
    if commit_type(subject).is_some_and(|t| SKIP_TYPES.contains(&t.as_str())) {
        return false;
    }
    let bare = bare_subject(subject);
    if bare.split_whitespace().count() < MIN_SUBJECT_WORDS {
        return false;
    }
    let lower = bare.to_ascii_lowercase();
    const NOISE: &[&str] = &[
        "release",
        "version",
        "bump",
        "merge",
        "revert",
        "typo",
        "dependency",
        "dependencies",
        "dependabot",
        "deps",
        "lint",
        "linter",
        "format",
        "formatting",
        "fmt",
        "rustfmt",
        "prettier",
        "clippy",
        "changelog",
        "ci",
    ];
    let words: Vec<&str> = lower.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let starts_with_version =
        words.first().is_some_and(|w| w.starts_with('v') && w[1..].chars().all(|c| c.is_ascii_digit()) && w.len() > 1);
    !starts_with_version && !words.iter().any(|w| NOISE.contains(w))
}

/// Whether a repo-relative path is source code a fix would change: code by language, source by
/// class, not scripts or CI.
fn is_answer_file(rel: &str) -> bool {
    let lang = files::language(Path::new(rel));
    if files::chunk_style(lang) != ChunkStyle::Code || matches!(lang, "css" | "text" | "make" | "dockerfile") {
        return false;
    }
    if files::classify(rel, lang) != FileClass::Source {
        return false;
    }
    let lower = rel.to_ascii_lowercase();
    !lower.split('/').rev().skip(1).any(|seg| {
        matches!(seg, "scripts" | "script" | "ci" | ".github" | "docs" | "doc" | "tools" | "test-utils" | "testutils")
    })
}

/// The commit with the paths under the indexed directory (`prefix`, from the top of the work
/// tree, `""` at the top) made relative to it, or `None` when it also changed source outside:
/// part of its answer is out of sight, and eval-dev left such commits out too. With git's
/// `--relative` those files vanished, and a change across two packages was a query whose
/// answer was one package's half. Files outside keep their full paths: they still count
/// towards the fifteen a commit may touch and name words to redact.
fn within(mut c: Commit, prefix: &str) -> Option<Commit> {
    if prefix.is_empty() {
        return Some(c);
    }
    if c.files.iter().any(|(s, p)| *s != 'D' && !p.starts_with(prefix) && is_answer_file(p)) {
        return None;
    }
    for (_, p) in &mut c.files {
        if let Some(rel) = p.strip_prefix(prefix) {
            *p = rel.to_string();
        }
    }
    for (then, now) in &mut c.moved {
        if let Some(rel) = then.strip_prefix(prefix) {
            *then = rel.to_string();
        }
        // Moved out of the indexed directory since: not an answer here.
        *now = now.as_deref().and_then(|n| n.strip_prefix(prefix)).map(str::to_string);
    }
    Some(c)
}

/// The commit's answer files (changed, non-test source, existing now under the name it has
/// now), or `None` when it does not qualify by its files.
fn answer_files(root: &Path, c: &Commit) -> Option<Vec<Answer>> {
    if c.files.is_empty() || c.files.len() > MAX_FILES {
        return None;
    }
    let source: Vec<&String> = c.files.iter().filter(|(s, p)| *s != 'D' && is_answer_file(p)).map(|(_, p)| p).collect();
    if source.is_empty() || source.len() > MAX_ANSWER_FILES {
        return None;
    }
    let now = |p: &String| match c.moved.iter().find(|(then, _)| then == p) {
        // Renamed into a test or a script since: no longer the source a fix would change.
        Some((_, now)) => now.clone().filter(|n| is_answer_file(n)),
        None => Some(p.clone()),
    };
    let existing: Vec<Answer> = source
        .iter()
        .filter_map(|p| Some(Answer { then: p.to_string(), now: now(p)? }))
        .filter(|a| fsutil::open_repo_file(root, &a.now).is_ok())
        .collect();
    (!existing.is_empty() && existing.len() * 2 >= source.len()).then_some(existing)
}

/// Lines the diff adds, per file (trimmed, at least 8 characters: braces and `else` say
/// nothing about where the change still is).
fn added_lines(diff: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in diff.lines() {
        if let Some(path) = line.strip_prefix("+++ b/") {
            out.push((path.to_string(), Vec::new()));
        } else if let Some(added) = line.strip_prefix('+') {
            if line.starts_with("+++") {
                continue;
            }
            let t = added.trim();
            if t.len() >= 8 {
                if let Some(last) = out.last_mut() {
                    last.1.push(t.to_string());
                }
            }
        }
    }
    out
}

/// Whether the answer, as it is now, still holds a line the commit added to it (then).
fn still_holds_an_added_line(root: &Path, a: &Answer, added: &[(String, Vec<String>)]) -> bool {
    let Some((_, lines)) = added.iter().find(|(p, _)| *p == a.then) else { return false };
    let Some(text) = answer_text(root, &a.now) else { return false };
    let now: HashSet<&str> = text.lines().map(str::trim).collect();
    lines.iter().any(|l| now.contains(l.as_str()))
}

/// An answer file's text, read as docdex reads every repository file: no link followed, nothing
/// outside the repository, a regular file only, none over 10 MB (the indexer skips such files). A file
/// replaced by a link since its commit (to `/etc/passwd`, a file elsewhere) is no answer.
fn answer_text(root: &Path, rel: &str) -> Option<String> {
    let bytes = fsutil::read_repo_file_capped(root, rel, MAX_ANSWER_BYTES).ok()??;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Fisher-Yates with splitmix64: deterministic for a seed on every platform.
fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    for i in (1..items.len()).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

fn is_issue_ref(w: &str) -> bool {
    let w = w.trim_matches(|c: char| matches!(c, '(' | ')' | '[' | ']' | ',' | '.' | ';' | ':'));
    let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    w.strip_prefix('#').is_some_and(digits)
        || w.to_ascii_lowercase().strip_prefix("gh-").is_some_and(digits)
        || w.split_once('#').is_some_and(|(repo, n)| repo.contains('/') && digits(n))
}

fn is_hash(w: &str) -> bool {
    (7..=40).contains(&w.len())
        && w.chars().all(|c| c.is_ascii_hexdigit())
        && w.chars().any(|c| c.is_ascii_digit())
        && w.chars().any(|c| c.is_ascii_alphabetic())
}

/// Code-shaped: `snake_case`, `camelCase`, `a.b`, `a::b`, `f()`, `--flag`.
fn is_code_shaped(w: &str) -> bool {
    let core = w.trim_matches(|c: char| matches!(c, ',' | ';' | ':' | '.' | '!' | '?' | '"' | '\'' | '(' | ')'));
    if w.contains("()") || w.starts_with("--") || core.contains("::") {
        return true;
    }
    let b = core.as_bytes();
    let letters = b.iter().any(|c| c.is_ascii_alphabetic());
    let snake = letters && core.trim_matches('_').contains('_');
    let camel = b.windows(2).any(|p| p[0].is_ascii_lowercase() && p[1].is_ascii_uppercase());
    let dotted = core.split('.').count() > 1
        && core.split('.').all(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        && core.split('.').any(|s| s.chars().any(|c| c.is_ascii_alphabetic()));
    snake || camel || dotted
}

/// Path-like, or ending in a file extension (`conn.rs`, `src/x`, `setup.cfg`).
fn is_path_like(w: &str) -> bool {
    let core = w.trim_matches(|c: char| matches!(c, ',' | ';' | ':' | '.' | '!' | '?' | '"' | '\'' | '(' | ')'));
    if core.contains('/') || core.contains('\\') {
        return true;
    }
    match core.rsplit_once('.') {
        Some((stem, ext)) => !stem.is_empty() && files::language(Path::new(core)) != "text" && ext.len() <= 5,
        None => false,
    }
}

/// Names the diff declares (functions, types, methods), lowercased. Variables and constants
/// (`let`, `var`, `val`, `const`, `static`) are not among them, as in eval-dev: a plain word
/// such as `limit` or `hook` bound in the diff is the change's vocabulary, not its answer.
fn declared_names(diff: &str) -> HashSet<String> {
    const KEYWORDS: &[&str] = &[
        "fn",
        "def",
        "class",
        "struct",
        "enum",
        "trait",
        "type",
        "interface",
        "function",
        "func",
        "impl",
        "mod",
        "macro_rules!",
        "union",
        "object",
        "record",
        "protocol",
    ];
    // `for (...) {` is a loop, not a method named `for`.
    const CONTROL: &[&str] = &[
        "if",
        "for",
        "foreach",
        "while",
        "switch",
        "catch",
        "match",
        "with",
        "function",
        "return",
        "do",
        "try",
        "loop",
        "until",
        "unless",
        "await",
        "yield",
        "typeof",
        "sizeof",
        "new",
        "lock",
        "using",
        "synchronized",
    ];
    let mut out = HashSet::new();
    for line in diff.lines().filter(|l| (l.starts_with('+') || l.starts_with('-')) && !l.starts_with("+++")) {
        let words: Vec<&str> = line[1..].split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '!')).collect();
        for pair in words.windows(2) {
            if KEYWORDS.contains(&pair[0]) && !pair[1].is_empty() {
                out.insert(pair[1].trim_end_matches('!').to_lowercase());
            }
        }
        // `name(args) {` and `name: function`: JavaScript methods and object members.
        let t = line[1..].trim_start();
        if let Some(open) = t.find('(') {
            let head = t[..open].trim().trim_start_matches("async ").trim_start_matches("static ").trim();
            if !head.is_empty()
                && !CONTROL.contains(&head)
                && head.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '$')
                && t.trim_end().ends_with('{')
            {
                out.insert(head.to_lowercase());
            }
        }
    }
    out
}

/// The query text for a commit (see the module docs).
pub fn redact(subject: &str, body: &str, changed: &[&str], diff: &str, gold_text: &str) -> String {
    let first_paragraph: String =
        body.split("\n\n").next().unwrap_or("").lines().filter(|l| !is_trailer(l)).collect::<Vec<_>>().join(" ");
    let text = format!("{}. {}", bare_subject(subject).trim_end_matches('.'), first_paragraph);
    let text = strip_backticks(&text);
    let mut names: HashSet<String> = HashSet::new();
    for p in changed {
        let file = p.rsplit('/').next().unwrap_or(p).to_lowercase();
        names.insert(file.split('.').next().unwrap_or(&file).to_string());
        names.insert(file);
    }
    let declared = declared_names(diff);
    let in_code = |w: &str| {
        let core = w.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_'));
        !core.is_empty() && (diff.contains(core) || gold_text.contains(core))
    };
    let kept: Vec<&str> = text
        .split_whitespace()
        .filter(|w| {
            let lower = w.to_lowercase();
            let core = lower.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'));
            !(w.contains("://")
                || is_issue_ref(w)
                || is_hash(core)
                || is_path_like(w)
                || names.contains(core)
                || declared.contains(core)
                || (is_code_shaped(w) && in_code(w)))
        })
        .collect();
    kept.join(" ").replace(" .", ".").trim().to_string()
}

/// `Signed-off-by: ...`, `Co-authored-by: ...`, `Closes #1`, `Fixes: ...`.
fn is_trailer(line: &str) -> bool {
    let t = line.trim();
    match t.split_once(':') {
        Some((key, _)) => {
            !key.is_empty()
                && !key.contains(' ')
                && key.contains('-')
                && key.chars().all(|c| c.is_ascii_alphabetic() || c == '-')
        }
        None => {
            let lower = t.to_ascii_lowercase();
            ["closes #", "fixes #", "resolves #", "refs #", "see #"].iter().any(|p| lower.starts_with(p))
        }
    }
}

/// Text with backticked spans removed.
fn strip_backticks(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut inside = false;
    for c in text.chars() {
        if c == '`' {
            inside = !inside;
            out.push(' ');
        } else if !inside {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_that_describe_no_code_change_do_not_qualify() {
        assert!(message_qualifies("fix(parser): keep trailing comments when the input ends early (#123)"));
        assert!(!message_qualifies("docs: explain how the parser keeps trailing comments"));
        assert!(!message_qualifies("chore(deps): bump serde from 1.0.1 to 1.0.2 in the tree"));
        assert!(!message_qualifies("Release 1.2.3 with the parser changes and more"));
        assert!(!message_qualifies("Fix typo in the comment of the tokenizer module"));
        assert!(!message_qualifies("fix: short subject"));
        assert!(!message_qualifies("Merge branch 'main' into feature parser work"));
        assert!(!message_qualifies("v2.0.1 keeps the parser from eating comments"));
        assert_eq!(bare_subject("feat(cli)!: add a thing to the list #12"), "add a thing to the list");
    }

    #[test]
    fn redaction_removes_what_hands_over_the_answer() {
        let diff = "+++ b/src/session_store.rs\n+fn expire_stale(now: Instant) -> usize {\n+    let ttl_secs = 30;\n";
        let q = redact(
            "fix(session): expire_stale drops sessions in session_store.rs too early (#42)",
            "The `SessionStore::expire` path used ttl_secs wrongly; see https://example.com/x and a1b2c3d4e5.\n\nSecond paragraph stays out.\nSigned-off-by: A <a@b>",
            &["src/session_store.rs", "tests/session.rs"],
            diff,
            "pub struct SessionStore; fn expire_stale() {} let ttl_secs = 30;",
        );
        for gone in [
            "expire_stale",
            "session_store.rs",
            "#42",
            "SessionStore",
            "ttl_secs",
            "https",
            "a1b2c3d4e5",
            "Second",
            "Signed",
        ] {
            assert!(!q.contains(gone), "{gone:?} left in {q:?}");
        }
        assert!(q.starts_with("drops sessions"), "{q}");
        assert!(q.contains("wrongly"));
        // `session` is the stem of a changed file (tests/session.rs): gone as a word.
        assert!(!q.split_whitespace().any(|w| w.trim_matches('.') == "session"), "{q}");
    }

    #[test]
    fn declared_names_and_code_shapes() {
        let diff =
            "+def load_plugins(path):\n-class PluginManager:\n+    async fetchAll(opts) {\n+const MAX_SIZE = 3\n";
        let names = declared_names(diff);
        for n in ["load_plugins", "pluginmanager", "fetchall"] {
            assert!(names.contains(n), "{n} in {names:?}");
        }
        // A constant is no declared name; shaped like code and in the diff, it goes all the same.
        assert!(!names.contains("max_size") && is_code_shaped("MAX_SIZE"));
        for w in ["snake_case", "camelCase", "a.b", "a::b", "f()", "--flag"] {
            assert!(is_code_shaped(w), "{w}");
        }
        for w in ["plain", "Sentence.", "well-known", "(note)"] {
            assert!(!is_code_shaped(w), "{w}");
        }
        assert!(is_path_like("conn.rs") && is_path_like("src/x") && !is_path_like("end."));
    }

    #[test]
    fn loops_and_variables_in_the_diff_are_not_declared_names() {
        let diff = "+++ b/lib/router.js\n+function route(req) {\n+  for (const hook of req.hooks) {\n+    if (hook.skip) {\n+    while (busy) {\n+    switch (kind) {\n+  let limit = req.limit\n+  var count = 0\n+module.exports = { route }\n+    match (a, b) {\n+static TOTAL: usize = 1;\n";
        let names = declared_names(diff);
        for kept in ["for", "if", "while", "switch", "match", "hook", "limit", "count", "exports", "total"] {
            assert!(!names.contains(kept), "{kept} in {names:?}");
        }
        assert!(names.contains("route"), "{names:?}");
        let q = redact(
            "Run every hook for each request while a limit applies, and switch off skipped ones",
            "",
            &["lib/router.js"],
            diff,
            "",
        );
        assert_eq!(q, "Run every hook for each request while a limit applies, and switch off skipped ones.");
    }

    #[test]
    fn shuffling_is_deterministic_per_seed() {
        let mut a: Vec<u32> = (0..50).collect();
        let mut b = a.clone();
        shuffle(&mut a, 7);
        shuffle(&mut b, 7);
        assert_eq!(a, b);
        let mut c: Vec<u32> = (0..50).collect();
        shuffle(&mut c, 8);
        assert_ne!(a, c);
        assert_ne!(a, (0..50).collect::<Vec<_>>());
    }

    #[test]
    fn renames_after_a_commit_are_followed_oldest_first_and_moves_out_of_the_subdirectory_drop() {
        let commit = |sha: &str, path: &str| Commit {
            sha: sha.into(),
            date: String::new(),
            subject: String::new(),
            body: String::new(),
            files: vec![('M', path.into())],
            moved: Vec::new(),
        };
        // Newest first: c3 moved pkg/b.py to lib/c.py, c2 moved pkg/a.py to pkg/b.py.
        let mut commits = vec![commit("c3", "x.py"), commit("c2", "pkg/b.py"), commit("c1", "pkg/a.py")];
        let log = "\u{1e}c3\n\nR100\tpkg/b.py\tlib/c.py\n\u{1e}c2\n\nR087\tpkg/a.py\tpkg/b.py\nM\tpkg/x.py\n";
        follow_renames(&mut commits, &parse_renames(log));
        assert_eq!(commits[2].moved, [("pkg/a.py".to_string(), Some("lib/c.py".to_string()))]);
        assert_eq!(commits[1].moved, [("pkg/b.py".to_string(), Some("lib/c.py".to_string()))]);
        assert!(commits[0].moved.is_empty(), "a commit's own renames are not applied to it");
        // Evaluating pkg/: lib/c.py is outside, so the file is no answer there.
        let c1 = within(commits.remove(2), "pkg/").expect("inside");
        assert_eq!(c1.moved, [("a.py".to_string(), None)]);
    }

    #[test]
    fn log_records_parse() {
        let log = "\u{1e}abcdef1234567\u{1f}2024-05-06\u{1f}fix: a thing\u{1f}body line\u{1f}\n\nM\tsrc/a.rs\nA\tsrc/b.rs\n\u{1e}0123456789ab\u{1f}2023-01-02\u{1f}other\u{1f}\u{1f}\n\nD\told.py\n";
        let c = parse_log(log);
        assert_eq!(c.len(), 2);
        assert_eq!(
            (c[0].date.as_str(), c[1].date.as_str(), c[0].subject.as_str()),
            ("2024-05-06", "2023-01-02", "fix: a thing")
        );
        assert_eq!(c[0].files, [('M', "src/a.rs".to_string()), ('A', "src/b.rs".to_string())]);
        assert_eq!(c[0].body, "body line");
        assert_eq!(c[1].files, [('D', "old.py".to_string())]);
    }
}
