//! A query set from a repository's own history, made the way `../shared/eval-dev/` was made:
//! each qualifying commit's subject and first paragraph, redacted so it does not hand over the
//! answer, against the non-test source files the commit changed that still exist.
//!
//! A commit qualifies when it is not a merge; its conventional-commit type (if any) is not
//! docs, test, ci, chore, build, style or release; its subject does not make it a release, a
//! version or dependency bump, a merge, a revert, a typo fix, a formatting or lint pass, CI work
//! or a changelog entry, by the kind of subject such commits have (see [`noise_kind`]: `Bump
//! serde from 1.0 to 1.1`, not any subject with the word "version" or "format" in it); it keeps
//! at least five words once its `type(scope):` prefix and issue numbers are gone; and it touched
//! one to four non-test source files and at most fifteen files in all. Each commit left out is
//! counted by why ([`GitSetStats::skipped`]). A changed source file is kept as an answer when it
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
use std::collections::{BTreeMap, HashSet};
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
    /// month", yesterday, @UNIX_SECONDS, "last monday", "march 1" (optionally a year) or "noon
    /// yesterday"; anything else is refused, since `git log` would read it as some other date
    /// without a word (`2026` as now, `xx 5` as the 5th of this month).
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
    /// Commits read that did not, by why: `docs`, `tests`, `ci`, `chore`, `build`, `formatting`
    /// (style, lint), `release`, `version_bump`, `dependency_bump`, `merge`, `revert`, `typo`,
    /// `changelog` (by the conventional type or the kind of subject), `short_subject` (under
    /// five words), `shallow_edge`, `outside_directory` (also changed source outside the
    /// evaluated subdirectory), `no_source_file`, `too_many_files` (over 15 files or 4 source
    /// files), `answers_missing` (fewer than half its source files exist now).
    #[serde(default)]
    pub skipped: BTreeMap<String, usize>,
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

    /// Why commits read were left out, in words ("2 dependency bumps", "1 docs commit"),
    /// most first.
    pub fn skipped_reasons(&self) -> Vec<String> {
        let mut v: Vec<(&String, &usize)> = self.skipped.iter().filter(|(_, n)| **n > 0).collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        v.into_iter().map(|(why, n)| format!("{n} {}", skip_words(why, *n))).collect()
    }
}

/// A skip reason in words, for `n` commits.
fn skip_words(why: &str, n: usize) -> String {
    let s = if n == 1 { "" } else { "s" };
    match why {
        "docs" | "tests" | "ci" | "chore" | "build" | "formatting" | "release" | "revert" | "changelog" | "merge" => {
            let name = if why == "ci" { "CI" } else { why };
            format!("{name} commit{s}")
        }
        "version_bump" => format!("version bump{}", if n == 1 { "" } else { "s" }),
        "dependency_bump" => format!("dependency bump{}", if n == 1 { "" } else { "s" }),
        "typo" => format!("typo fix{}", if n == 1 { "" } else { "es" }),
        "short_subject" => "with a subject under five words".into(),
        "shallow_edge" => "at the shallow clone's edge".into(),
        "outside_directory" => "also changing source outside this directory".into(),
        "no_source_file" => "changing no source file".into(),
        "too_many_files" => "changing over 4 source or 15 files".into(),
        "answers_missing" => "whose source files are gone".into(),
        other => other.replace('_', " "),
    }
}

/// A commit as `git log` describes it.
#[derive(Debug, Clone, PartialEq)]
struct Commit {
    sha: String,
    /// Committer date, YYYY-MM-DD.
    date: String,
    /// Committer time, Unix seconds.
    time: Option<i64>,
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
    // An empty `since` is refused by the check like any unreadable one, never read as none.
    let since = match opts.since.as_deref() {
        Some(s) => Some(super::since::check(root, s)?),
        None => None,
    };
    let opts = &GitSetOptions { since, ..opts.clone() };
    let prefix = git(root, &["rev-parse", "--show-prefix"])?.trim_end_matches(['\n', '\r']).to_string();
    let scoped = !prefix.is_empty();
    let log = git(root, &log_args(opts, scoped))?;
    let mut commits = parse_log(&log);
    follow_renames(&mut commits, &parse_renames(&git(root, &rename_args(opts, scoped))?));
    let grafted = shallow_commits(root)?;
    let oldest = commits.last().map(|c| c.date.clone()).filter(|d| !d.is_empty());
    let mut stats = GitSetStats { scanned: commits.len(), shallow: grafted.is_some(), oldest, ..Default::default() };
    let grafted = grafted.unwrap_or_default();
    let name = root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "repo".into());
    let mut candidates: Vec<(Commit, Vec<Answer>)> = Vec::new();
    for c in commits {
        let answers = match grafted.contains(&c.sha) {
            true => Err("shallow_edge"),
            false => message_skip(&c.subject)
                .map_or(Ok(c), Err)
                .and_then(|c| within(c, &prefix).ok_or("outside_directory"))
                .and_then(|c| Ok((answer_files(root, &c)?, c))),
        };
        match answers {
            Ok((answers, c)) => candidates.push((c, answers)),
            Err(why) => *stats.skipped.entry(why.to_string()).or_default() += 1,
        }
    }
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
        out.push(EvalQuery { id: format!("{name}-{short}"), query, gold, before: commit.time });
    }
    stats.queries = out.len();
    Ok((out, stats))
}

fn log_args(opts: &GitSetOptions, scoped: bool) -> Vec<String> {
    history_args(
        opts,
        scoped,
        &[
            // Paths from the top of the work tree (not `--relative`): a commit that also changed
            // source outside an indexed subdirectory is seen as such, see [`within`].
            "--name-status",
            "--no-renames",
            "--format=%x1e%H%x1f%cs%x1f%ct%x1f%s%x1f%b%x1f",
        ],
    )
}

/// The same commits as [`log_args`], with only their renames: git's rename detection, the
/// files a later commit moved, to follow an answer to its name now.
fn rename_args(opts: &GitSetOptions, scoped: bool) -> Vec<String> {
    history_args(opts, scoped, &["--name-status", "--find-renames", "--diff-filter=R", "--format=%x1e%H"])
}

/// `git log` of the commits a set reads (non-merge, newest first, the newest [`MAX_SCANNED`]
/// after `--since`), printed as `format` says. `scoped` (the indexed directory is a subdirectory
/// of the work tree): only commits that touched it (every one, `--full-history`), each with all
/// its files (`--full-diff`, so [`within`] still sees what it changed outside). The window was
/// the work tree's newest commits, most of them elsewhere in a monorepo, all counted as
/// "also changing source outside this directory" (tour16 F9).
fn history_args(opts: &GitSetOptions, scoped: bool, format: &[&str]) -> Vec<String> {
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
    if let Some(since) = opts.since.as_deref() {
        args.push(format!("--since={since}"));
    }
    if scoped {
        args.extend(["--full-history".into(), "--full-diff".into()]);
    }
    args.push("HEAD".into());
    if scoped {
        args.extend(["--".into(), ".".into()]);
    }
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
            let mut fields = rec.splitn(6, '\u{1f}');
            let sha = fields.next()?.trim().to_string();
            let date = fields.next()?.trim().to_string();
            let time = fields.next()?.trim().parse::<i64>().ok();
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
            Some(Commit { sha, date, time, subject, body, files, moved: Vec::new() })
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
#[cfg(test)]
fn message_qualifies(subject: &str) -> bool {
    message_skip(subject).is_none()
}

/// Why a commit's message leaves it out (a [`GitSetStats::skipped`] key), or `None`.
fn message_skip(subject: &str) -> Option<&'static str> {
    if let Some(kind) = commit_type(subject).and_then(|t| type_skip(&t)) {
        return Some(kind);
    }
    let bare = bare_subject(subject);
    if let Some(kind) = noise_kind(&bare) {
        return Some(kind);
    }
    (bare.split_whitespace().count() < MIN_SUBJECT_WORDS).then_some("short_subject")
}

/// The skip reason of a conventional-commit type that describes no source change.
fn type_skip(t: &str) -> Option<&'static str> {
    Some(match t {
        "docs" | "doc" => "docs",
        "test" | "tests" => "tests",
        "ci" => "ci",
        "chore" => "chore",
        "build" => "build",
        "style" | "lint" | "fmt" | "format" => "formatting",
        "release" => "release",
        "revert" => "revert",
        "deps" | "bump" => "dependency_bump",
        _ => return None,
    })
}

/// `1.2.3`, `v2`, `v1.0.0-rc.1`, `2.0`: a version number, not a plain count.
fn is_version(w: &str) -> bool {
    let (v, rest) = match w.strip_prefix('v') {
        Some(r) => (true, r),
        None => (false, w),
    };
    let core = rest.split(['-', '+']).next().unwrap_or("");
    core.starts_with(|c: char| c.is_ascii_digit())
        && !core.ends_with('.')
        && core.chars().all(|c| c.is_ascii_digit() || c == '.')
        && (v || core.contains('.'))
}

/// The kind of commit a subject (without its prefix) announces when it is maintenance rather
/// than a change to the code: the shape such subjects have (`Release 1.2.3`, `Bump version to
/// 1.2.0`, `Bump serde from 1.0.1 to 1.0.2`, `Update dependency x to v2`, `Merge branch ...`,
/// `Revert "..."`, `Fix typo in ...`, `Run rustfmt`, `Format code with black`, `Fix CI`,
/// `Update changelog`), never a word alone: "Parse the version string the server sends",
/// "Handle the dependency between retries", "Read settings from the file format" are changes.
fn noise_kind(bare: &str) -> Option<&'static str> {
    let lower = bare.to_ascii_lowercase();
    let raw: Vec<&str> = lower.split_whitespace().collect();
    let words: Vec<&str> = raw
        .iter()
        .map(|w| {
            w.trim_matches(|c: char| {
                matches!(c, ',' | ';' | ':' | '(' | ')' | '[' | ']' | '"' | '\'' | '`' | '!' | '?')
            })
        })
        .map(|w| w.trim_end_matches('.'))
        .filter(|w| !w.is_empty())
        .collect();
    let first = *words.first()?;
    let second = words.get(1).copied().unwrap_or("");
    let head = &words[1..words.len().min(5)];
    let quoted = raw.get(1).is_some_and(|w| w.starts_with(['"', '\'', '`']));
    if is_version(first) {
        return Some("release");
    }
    if first == "merge"
        && (quoted
            || matches!(
                second,
                "branch"
                    | "pull"
                    | "remote-tracking"
                    | "tag"
                    | "commit"
                    | "upstream"
                    | "master"
                    | "main"
                    | "develop"
                    | "from"
            ))
    {
        return Some("merge");
    }
    if matches!(first, "revert" | "reverts" | "reverted")
        && (quoted
            || is_hash(second)
            || second.starts_with('#')
            || matches!(second, "commit" | "change" | "changes" | "pr" | "pull" | "merge"))
    {
        return Some("revert");
    }
    if release(first, second, &words) {
        return Some("release");
    }
    if version_bump(first, second, head, &words) {
        return Some("version_bump");
    }
    if dependency_bump(first, &lower, &words) {
        return Some("dependency_bump");
    }
    if matches!(first, "typo" | "typos")
        || (matches!(first, "fix" | "fixes" | "fixed" | "correct" | "corrected")
            && head.iter().any(|w| matches!(*w, "typo" | "typos" | "misspelling" | "misspellings" | "spelling")))
    {
        return Some("typo");
    }
    if formatting(first, second, head) {
        return Some("formatting");
    }
    const CI_VERBS: &[&str] = &[
        "fix",
        "fixes",
        "fixed",
        "update",
        "updated",
        "run",
        "bump",
        "configure",
        "set",
        "use",
        "enable",
        "disable",
        "add",
        "remove",
        "skip",
        "try",
        "tweak",
        "improve",
        "speed",
        "change",
        "move",
        "migrate",
        "switch",
        "split",
        "cache",
        "repair",
        "unbreak",
    ];
    if first == "ci"
        || (CI_VERBS.contains(&first) && (second == "ci" || (second == "the" && words.get(2) == Some(&"ci"))))
    {
        return Some("ci");
    }
    if words.iter().take(4).any(|w| *w == "changelog") {
        return Some("changelog");
    }
    None
}

/// `Release 1.2.3`, `Release notes for ...`, `Prepare the 2.0 release`, `Publish v1.3`.
fn release(first: &str, second: &str, words: &[&str]) -> bool {
    let named = |w: &str| is_version(w) || matches!(w, "release" | "releases");
    (matches!(first, "release" | "released" | "releasing")
        && (is_version(second) || matches!(second, "version" | "notes" | "candidate" | "prep" | "preparation" | "v")))
        || (matches!(
            first,
            "prepare" | "prepared" | "preparing" | "prep" | "cut" | "tag" | "tagged" | "publish" | "published"
        ) && words.iter().skip(1).any(|w| named(w)))
}

/// `Bump version to 1.2.0`, `Update the crate version`, `Version 1.2.3`.
fn version_bump(first: &str, second: &str, head: &[&str], words: &[&str]) -> bool {
    const VERBS: &[&str] = &[
        "bump",
        "bumps",
        "bumped",
        "bumping",
        "update",
        "updates",
        "updated",
        "set",
        "increment",
        "incremented",
        "raise",
        "change",
        "changed",
    ];
    (first == "version" && is_version(second))
        || (VERBS.contains(&first)
            && head.iter().take(3).any(|w| matches!(*w, "version" | "versions"))
            && (words.iter().any(|w| is_version(w))
                || words.last().is_some_and(|w| matches!(*w, "version" | "number"))))
}

/// Dependency bumps as people, dependabot and renovate write them: `Bump serde from 1.0.1 to
/// 1.0.2`, `Update dependency foo to v2`, `Update rust crate serde to 1.0.200`, `Upgrade the
/// lockfile`, `Bump the cargo group across 1 directory with 3 updates`.
fn dependency_bump(first: &str, lower: &str, words: &[&str]) -> bool {
    const VERBS: &[&str] = &[
        "bump",
        "bumps",
        "bumped",
        "update",
        "updates",
        "updated",
        "upgrade",
        "upgrades",
        "upgraded",
        "downgrade",
        "downgrades",
        "pin",
        "pins",
        "pinned",
        "unpin",
    ];
    if !VERBS.contains(&first) {
        return false;
    }
    let loose = |w: &&str| is_version(w) || w.trim_start_matches('v').parse::<u64>().is_ok();
    let named = words.iter().any(|w| {
        matches!(
            *w,
            "dependency" | "dependencies" | "deps" | "dep" | "dependabot" | "renovate" | "lockfile" | "lockfiles"
        )
    }) || ["cargo.lock", "package-lock", "yarn.lock", "poetry.lock", "pnpm-lock", "go.sum"]
        .iter()
        .any(|f| lower.contains(f));
    let from_to = words.get(2) == Some(&"from")
        && words.get(3).is_some_and(loose)
        && words.get(4) == Some(&"to")
        && words.get(5).is_some_and(loose);
    // `... to 1.0.200` ending the subject (or before `in /dir`).
    let to_version = words
        .windows(2)
        .enumerate()
        .any(|(i, w)| w[0] == "to" && is_version(w[1]) && (i + 2 == words.len() || words.get(i + 2) == Some(&"in")));
    let group = words.contains(&"group") && words.last().is_some_and(|w| matches!(*w, "update" | "updates"));
    named || from_to || to_version || group
}

/// `Run rustfmt`, `Fix clippy warnings`, `Format code with black`, `Clippy fixes`.
fn formatting(first: &str, second: &str, head: &[&str]) -> bool {
    const TOOLS: &[&str] = &[
        "clippy",
        "rustfmt",
        "fmt",
        "prettier",
        "eslint",
        "flake8",
        "ruff",
        "isort",
        "pylint",
        "gofmt",
        "lint",
        "lints",
        "linter",
        "linting",
        "formatting",
        "formatter",
        "black",
    ];
    const VERBS: &[&str] = &[
        "fix",
        "fixes",
        "fixed",
        "run",
        "ran",
        "apply",
        "applied",
        "address",
        "silence",
        "silenced",
        "appease",
        "satisfy",
        "resolve",
        "resolved",
        "format",
        "formatted",
        "reformat",
        "reformatted",
    ];
    // `Fix black border ...` is a colour, not the formatter.
    let tool = |w: &&str| TOOLS.contains(w) && !(first.starts_with("fix") && *w == "black");
    let object = matches!(
        second,
        "code"
            | "codebase"
            | "files"
            | "file"
            | "everything"
            | "all"
            | "source"
            | "sources"
            | "with"
            | "using"
            | "project"
            | "repo"
            | "repository"
            | "crate"
            | "crates"
            | "package"
            | "tree"
            | "imports"
            | "workspace"
    );
    (TOOLS.contains(&first) && first != "black")
        || (VERBS.contains(&first) && head.iter().any(tool))
        || (matches!(first, "format" | "formatted" | "reformat" | "reformatted") && object)
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
/// now), or why it does not qualify by its files (a [`GitSetStats::skipped`] key).
fn answer_files(root: &Path, c: &Commit) -> std::result::Result<Vec<Answer>, &'static str> {
    if c.files.len() > MAX_FILES {
        return Err("too_many_files");
    }
    let source: Vec<&String> = c.files.iter().filter(|(s, p)| *s != 'D' && is_answer_file(p)).map(|(_, p)| p).collect();
    if source.is_empty() {
        return Err("no_source_file");
    }
    if source.len() > MAX_ANSWER_FILES {
        return Err("too_many_files");
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
    match !existing.is_empty() && existing.len() * 2 >= source.len() {
        true => Ok(existing),
        false => Err("answers_missing"),
    }
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
    let query = kept.join(" ").replace(" .", ".");
    // A body of thousands of lines is a query search refuses (`limits::check_query`): the
    // whole evaluation stopped on it, telling the user to "describe the task in fewer words".
    // Its opening words, cut within the limits, are what a person would have typed.
    crate::engine::limits::fit_query(query.trim()).into_owned()
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
    fn noise_is_told_by_the_kind_of_subject_not_by_a_word_in_it() {
        // tour 11: these changed one function each and were left out for a word.
        for real in [
            "Read key value settings from the configuration text file format",
            "Parse the version string that the remote server sends in replies",
            "Allow comments and blank lines inside the settings file format",
            "Handle the dependency between retries and the total request deadline",
            "Release the lock before waking the waiting writers on shutdown",
            "Merge adjacent ranges when they overlap in the selection",
            "Format negative numbers with a leading minus sign",
            "Update the retry deadline to 30 seconds after a timeout",
            "Fix a crash when the CI environment variable is empty",
            "Revert the cursor to its start when the query changes",
        ] {
            assert_eq!(message_skip(real), None, "{real}");
        }
        for (noise, why) in [
            ("Bump version to 1.2.0 for the next release", "version_bump"),
            ("Update the crate version to 0.4.1 before publishing", "version_bump"),
            ("Version 1.2.3 with the parser changes and more", "version_bump"),
            ("Bump serde from 1.0.1 to 1.0.2 in /fuzz", "dependency_bump"),
            ("Update dependency eslint to v9 across the packages", "dependency_bump"),
            ("Update rust crate serde_json to 1.0.120", "dependency_bump"),
            ("Update all dependencies to their latest minor versions", "dependency_bump"),
            ("Bump the cargo group across 1 directory with 3 updates", "dependency_bump"),
            ("chore(deps): bump tokio in the workspace to the newest", "chore"),
            ("deps: move to the newest tokio and hyper releases", "dependency_bump"),
            ("Release 1.2.3 with the parser changes and more", "release"),
            ("Prepare for the 2.0 release of the parser crate", "release"),
            ("Merge pull request #12 from user/branch into main", "merge"),
            ("Revert \"Keep trailing comments when the input ends\"", "revert"),
            ("Fix typo in the comment of the tokenizer module", "typo"),
            ("Run rustfmt on the whole workspace after the merge", "formatting"),
            ("Fix clippy warnings in the parser and the lexer", "formatting"),
            ("Format code with black and sort the imports", "formatting"),
            ("style: reflow the long lines of the tokenizer", "formatting"),
            ("Fix CI on windows for the newest toolchain release", "ci"),
            ("Update changelog for the parser fix and the new flag", "changelog"),
            ("docs: explain how the parser keeps trailing comments", "docs"),
            ("fix: short subject", "short_subject"),
        ] {
            assert_eq!(message_skip(noise), Some(why), "{noise}");
        }
        let stats = GitSetStats {
            skipped: [("docs".to_string(), 1), ("dependency_bump".to_string(), 2), ("typo".to_string(), 1)].into(),
            ..Default::default()
        };
        assert_eq!(stats.skipped_reasons(), ["2 dependency bumps", "1 docs commit", "1 typo fix"]);
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
            time: None,
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
        let log = "\u{1e}abcdef1234567\u{1f}2024-05-06\u{1f}1714953600\u{1f}fix: a thing\u{1f}body line\u{1f}\n\nM\tsrc/a.rs\nA\tsrc/b.rs\n\u{1e}0123456789ab\u{1f}2023-01-02\u{1f}1672617600\u{1f}other\u{1f}\u{1f}\n\nD\told.py\n";
        let c = parse_log(log);
        assert_eq!(c.len(), 2);
        assert_eq!(
            (c[0].date.as_str(), c[1].date.as_str(), c[0].subject.as_str()),
            ("2024-05-06", "2023-01-02", "fix: a thing")
        );
        assert_eq!(c[0].files, [('M', "src/a.rs".to_string()), ('A', "src/b.rs".to_string())]);
        assert_eq!(c[0].body, "body line");
        assert_eq!((c[0].time, c[1].time), (Some(1_714_953_600), Some(1_672_617_600)));
        assert_eq!(c[1].files, [('D', "old.py".to_string())]);
    }
}
