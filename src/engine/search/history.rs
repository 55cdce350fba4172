//! Past commits as a ranking signal (opt-in: `[search] history = true`). A description of a
//! change resembles the messages of earlier changes to the same files, so the commits whose
//! messages best match the query lend their files a boost (the "similar past reports" signal
//! of bug localization). Measured in docs/SEARCH.md ("History as a signal").
//!
//! Read with `git log` (the newest [`MAX_COMMITS`] non-merge commits, paths relative to the
//! repository root) and kept in the repo's state directory as `history.bin` (bincode, words and
//! paths stored once and referred to by number), keyed by the commit `HEAD` names, so a one-shot
//! search reads a file instead of running `git log`.

use super::file_bm25::FileIdMap;
use crate::engine::index::files::{self, FileClass};
use crate::engine::process::Bounds;
use crate::engine::{analysis, fsutil, git};
use crate::error::{Error, Result};
use bincode::Options;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// File name in the repo's state directory.
pub const FILE_NAME: &str = "history.bin";
/// Commits read, newest first.
pub const MAX_COMMITS: usize = 6000;
/// Commits touching more files than this (sweeping renames, formatting runs) say nothing about
/// any one file and are left out.
const MAX_FILES_PER_COMMIT: usize = 50;
/// The best-matching commits that lend their files a score.
const TOP_COMMITS: usize = 30;
/// A file's ranking score is multiplied by `1 + HISTORY_WEIGHT × its share` (0..1, the best
/// file's is 1).
pub const HISTORY_WEIGHT: f32 = 1.0;
const K1: f32 = 1.2;
const B: f32 = 0.75;
/// The cache is at most this large (6,000 commits take a few megabytes).
const MAX_CACHE_BYTES: u64 = 256 * 1024 * 1024;
/// What a search waits for from `git log` (a very large repository, a slow disk): then it
/// ranks without the history.
const GIT_LOG_BOUNDS: Bounds = Bounds { time: Duration::from_secs(10), stdout_bytes: 128 * 1024 * 1024 };
/// What it waits for from `git rev-parse HEAD`.
const GIT_HEAD_BOUNDS: Bounds = Bounds { time: Duration::from_secs(5), stdout_bytes: 4096 };
/// Format version of the cache.
const VERSION: u32 = 1;

/// One past commit: when, the words of its message, and the files it touched.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct PastCommit {
    /// Committer time, Unix seconds.
    time: i64,
    /// Message terms (indexes into [`CommitHistory::words`]) with their counts.
    terms: Vec<(u32, u32)>,
    /// Indexes into [`CommitHistory::paths`].
    files: Vec<u32>,
}

/// The commits read for one `HEAD`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CommitHistory {
    version: u32,
    /// The commit `HEAD` named when this was read.
    pub head: String,
    /// Why no commit was read for this `HEAD` (`git log` failed or took too long): kept, so
    /// later searches do not wait for it again until `HEAD` moves.
    pub failure: Option<String>,
    /// Analyzed message words, sorted.
    words: Vec<String>,
    /// Repo-relative paths.
    paths: Vec<String>,
    commits: Vec<PastCommit>,
}

impl CommitHistory {
    /// The history of the git work tree at `root`, from the cache in `state_dir` when it was
    /// read for the same `HEAD`; `None` when `root` is not in a git work tree with commits (or
    /// git is missing): search then ranks without it.
    pub fn load(root: &Path, state_dir: &Path) -> Option<CommitHistory> {
        let head = head(root)?;
        if let Some(cached) = Self::cached(state_dir).filter(|c| c.head == head) {
            return Some(cached);
        }
        let path = path(state_dir);
        let history = read(root, head.clone()).unwrap_or_else(|e| {
            tracing::warn!(root = %root.display(), error = %e, "commit history not read; ranking without it");
            CommitHistory { failure: Some(e.to_string()), ..CommitHistory::of(head, Vec::new()) }
        });
        if let Ok(bytes) = codec().serialize(&history) {
            if let Err(e) = fsutil::write_atomic(&path, &bytes) {
                tracing::debug!(path = %path.display(), error = %e, "commit history cache not written");
            }
        }
        Some(history)
    }

    /// The history last cached in `state_dir`, whichever `HEAD` it was read for; `None` when
    /// there is none, or it is damaged, oversized or of another format version.
    pub fn cached(state_dir: &Path) -> Option<CommitHistory> {
        let path = path(state_dir);
        if std::fs::metadata(&path).ok()?.len() > MAX_CACHE_BYTES {
            return None;
        }
        let bytes = std::fs::read(&path).ok()?;
        codec().deserialize::<CommitHistory>(&bytes).ok().filter(|h| h.version == VERSION)
    }

    /// The repo-relative paths of the source files the commits touched.
    pub fn files(&self) -> &[String] {
        &self.paths
    }

    /// Each file's share of the history signal for a query's weighted terms (the best file 1),
    /// by file id (the xxh3 of its path). Only commits made before `before` (Unix seconds)
    /// count, when given: an evaluation built from history must not see the very commit a
    /// query describes, nor later ones.
    pub fn file_shares(&self, terms: &[(String, f32)], before: Option<i64>) -> FileIdMap<f32> {
        let visible: Vec<&PastCommit> = self.commits.iter().filter(|c| before.is_none_or(|t| c.time < t)).collect();
        let mut out = FileIdMap::default();
        if visible.is_empty() || terms.is_empty() {
            return out;
        }
        // The query's words by their number here; words no commit holds drop out.
        let query: Vec<(u32, f32)> =
            terms.iter().filter_map(|(t, w)| Some((self.words.binary_search(t).ok()? as u32, *w))).collect();
        let weight = |id: u32| query.iter().find(|(q, _)| *q == id).map(|(_, w)| *w);
        let n = visible.len() as f32;
        let lens: Vec<f32> = visible.iter().map(|c| c.terms.iter().map(|t| t.1 as f32).sum()).collect();
        let avg = (lens.iter().sum::<f32>() / n).max(1.0);
        let mut df: HashMap<u32, f32> = HashMap::new();
        for c in &visible {
            for (t, _) in c.terms.iter().filter(|(t, _)| weight(*t).is_some()) {
                *df.entry(*t).or_default() += 1.0;
            }
        }
        let mut scored: Vec<(f32, usize)> = visible
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let s: f32 = c
                    .terms
                    .iter()
                    .filter_map(|(t, tf)| {
                        let w = weight(*t)?;
                        let d = df.get(t).copied().unwrap_or(1.0);
                        let idf = (1.0 + (n - d + 0.5) / (d + 0.5)).ln();
                        let tf = *tf as f32;
                        Some(w * idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * lens[i] / avg)))
                    })
                    .sum();
                (s > 0.0).then_some((s, i))
            })
            .collect();
        // Newest first among equals: `visible` is in git's order.
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        for (s, i) in scored.into_iter().take(TOP_COMMITS) {
            let files = &visible[i].files;
            let share = s / (files.len() as f32).sqrt();
            for f in files.iter().filter_map(|&f| self.paths.get(f as usize)) {
                *out.entry(xxhash_rust::xxh3::xxh3_64(f.as_bytes())).or_default() += share;
            }
        }
        let best = out.values().copied().fold(0.0, f32::max);
        if best > 0.0 {
            out.values_mut().for_each(|v| *v /= best);
        }
        out
    }

    /// Commits read.
    pub fn len(&self) -> usize {
        self.commits.len()
    }

    /// No commits.
    pub fn is_empty(&self) -> bool {
        self.commits.is_empty()
    }
}

/// The cache's encoding, bounded: a damaged length in the file cannot ask for more memory.
fn codec() -> impl bincode::Options {
    bincode::DefaultOptions::new().with_limit(MAX_CACHE_BYTES)
}

/// Where a repo's cache lives.
pub fn path(state_dir: &Path) -> PathBuf {
    state_dir.join(FILE_NAME)
}

/// The commit `HEAD` names, or `None` outside a git work tree, before the first commit, or
/// without git. Read from the git directory's files when they say it plainly (a detached
/// `HEAD`, or a branch with a loose ref), which spares a one-shot search a git process; asked
/// of git otherwise (packed or reftable refs, a symbolic ref to a symbolic ref).
fn head(root: &Path) -> Option<String> {
    head_from_files(root).or_else(|| head_from_git(root))
}

/// The longest file read as a `HEAD` or a ref (a ref is a line of 41 or 65 bytes).
const REF_FILE_BYTES: u64 = 1024;

/// [`head`] from the files alone, when they settle it.
fn head_from_files(root: &Path) -> Option<String> {
    use crate::engine::index::gitrules::{common_dir, git_dir};
    let top = root.ancestors().take(256).find(|d| std::fs::symlink_metadata(d.join(".git")).is_ok())?;
    let gitdir = git_dir(top)?;
    let read = |p: PathBuf| -> Option<String> {
        use std::io::Read;
        let file = std::fs::File::open(&p).ok().filter(|f| f.metadata().is_ok_and(|m| m.is_file()))?;
        let mut text = String::new();
        file.take(REF_FILE_BYTES).read_to_string(&mut text).ok()?;
        Some(text.trim().to_string())
    };
    let is_sha = |s: &str| matches!(s.len(), 40 | 64) && s.bytes().all(|b| b.is_ascii_hexdigit());
    let head = read(gitdir.join("HEAD"))?;
    if is_sha(&head) {
        return Some(head.to_ascii_lowercase());
    }
    // A branch's loose ref: git's own writes keep it under the common directory.
    let name = head.strip_prefix("ref:")?.trim();
    if !name.starts_with("refs/heads/") || name.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
        return None;
    }
    let sha = read(common_dir(&gitdir).join(name))?;
    is_sha(&sha).then(|| sha.to_ascii_lowercase())
}

/// [`head`] asked of git.
fn head_from_git(root: &Path) -> Option<String> {
    let mut cmd = git::command(root);
    cmd.args(["rev-parse", "--verify", "--quiet", "HEAD"]);
    let out = git::run_within(&mut cmd, root, "the history ranking", GIT_HEAD_BOUNDS).ok()?;
    let sha = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !sha.is_empty()).then_some(sha)
}

/// Runs `git log` over the commits under `root` (paths relative to it; files elsewhere in a
/// larger work tree are not named).
fn read(root: &Path, head: String) -> Result<CommitHistory> {
    let mut cmd = git::command(root);
    cmd.args([
        "log",
        "--no-merges",
        "--no-color",
        "--no-show-signature",
        "--encoding=UTF-8",
        "--no-renames",
        "--relative",
        "--name-only",
        "--format=%x1e%ct%x1f%s%n%b%x1f",
    ]);
    cmd.arg(format!("--max-count={MAX_COMMITS}")).arg(&head).args(["--", "."]);
    let out = git::run_within(&mut cmd, root, "the history ranking", GIT_LOG_BOUNDS)?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(Error::Upstream(format!("git log in {}: {}", root.display(), err.trim())));
    }
    Ok(CommitHistory::of(head, parse(&String::from_utf8_lossy(&out.stdout))))
}

/// Whether the path is source code by the index's own classes (by path; markers inside a
/// file, such as `@generated`, are not read).
fn is_source(rel: &str) -> bool {
    files::classify(rel, files::language(Path::new(rel))) == FileClass::Source
}

/// A commit as `git log` gave it: its time, message words with counts, and source files.
type RawCommit = (i64, Vec<(String, u32)>, Vec<String>);

impl CommitHistory {
    /// Stores each word and path once.
    fn of(head: String, raw: Vec<RawCommit>) -> CommitHistory {
        let mut words: Vec<String> = raw.iter().flat_map(|c| c.1.iter().map(|t| t.0.clone())).collect();
        words.sort_unstable();
        words.dedup();
        let mut paths: Vec<String> = Vec::new();
        let mut path_ids: HashMap<String, u32> = HashMap::new();
        let commits = raw
            .into_iter()
            .map(|(time, terms, files)| PastCommit {
                time,
                terms: terms.into_iter().filter_map(|(t, n)| Some((words.binary_search(&t).ok()? as u32, n))).collect(),
                files: files
                    .into_iter()
                    .map(|f| {
                        *path_ids.entry(f.clone()).or_insert_with(|| {
                            paths.push(f);
                            (paths.len() - 1) as u32
                        })
                    })
                    .collect(),
            })
            .collect();
        CommitHistory { version: VERSION, head, failure: None, words, paths, commits }
    }
}

/// Parses [`read`]'s `git log` output.
fn parse(text: &str) -> Vec<RawCommit> {
    text.split('\u{1e}')
        .filter_map(|rec| {
            let mut fields = rec.splitn(3, '\u{1f}');
            let time = fields.next()?.trim().parse::<i64>().ok()?;
            let message = fields.next()?;
            let touched: Vec<&str> =
                fields.next().unwrap_or("").lines().map(str::trim).filter(|l| !l.is_empty()).collect();
            if touched.len() > MAX_FILES_PER_COMMIT {
                return None;
            }
            // Source files only: a change's test, guide and changelog entry share its words, and
            // class priors keep them below the source they describe; lifting them would undo that.
            let files: Vec<String> = touched.into_iter().filter(|f| is_source(f)).map(String::from).collect();
            if files.is_empty() {
                return None;
            }
            let mut counts: HashMap<String, u32> = HashMap::new();
            for t in analysis::terms(message) {
                *counts.entry(t).or_default() += 1;
            }
            let mut terms: Vec<(String, u32)> = counts.into_iter().collect();
            terms.sort();
            (!terms.is_empty()).then_some((time, terms, files))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_git(dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .args(["-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "commit.gpgsign=false"])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// The files name `HEAD`'s commit as git does wherever they say it plainly, and leave the
    /// rest (packed refs, an unborn branch) to git.
    #[test]
    fn head_is_read_from_the_files_where_they_settle_it_and_asked_of_git_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join("sub/deeper")).unwrap();
        run_git(&repo, &["init", "-q", "-b", "main"]);
        assert_eq!((head_from_files(&repo), head(&repo)), (None, None), "an unborn branch has no commit");
        std::fs::write(repo.join("sub/a.py"), "x = 1\n").unwrap();
        run_git(&repo, &["add", "."]);
        run_git(&repo, &["commit", "-q", "-m", "one"]);
        let first = run_git(&repo, &["rev-parse", "HEAD"]);
        // A branch's loose ref, from the top and from a folder inside it.
        assert_eq!(head_from_files(&repo).as_deref(), Some(first.as_str()));
        assert_eq!(head_from_files(&repo.join("sub/deeper")).as_deref(), Some(first.as_str()));
        // Packed refs: git answers.
        run_git(&repo, &["pack-refs", "--all"]);
        assert_eq!(head_from_files(&repo), None);
        assert_eq!(head(&repo).as_deref(), Some(first.as_str()));
        // A new commit writes a loose ref again, which wins over the packed one.
        std::fs::write(repo.join("sub/a.py"), "x = 2\n").unwrap();
        run_git(&repo, &["commit", "-q", "-am", "two"]);
        let second = run_git(&repo, &["rev-parse", "HEAD"]);
        assert_ne!(first, second);
        assert_eq!(head_from_files(&repo).as_deref(), Some(second.as_str()));
        // Detached.
        run_git(&repo, &["checkout", "-q", "--detach", &first]);
        assert_eq!(head_from_files(&repo).as_deref(), Some(first.as_str()));
        // A linked worktree: its own HEAD, the branch refs of the common directory.
        run_git(&repo, &["checkout", "-q", "main"]);
        let linked = dir.path().join("linked");
        run_git(&repo, &["worktree", "add", "-q", "-b", "side", linked.to_str().unwrap(), &first]);
        assert_eq!(head_from_files(&linked).as_deref(), Some(first.as_str()));
        assert_eq!(head_from_files(&repo).as_deref(), Some(second.as_str()));
        // Outside any work tree: nothing.
        let plain = tempfile::tempdir().unwrap();
        assert_eq!(head_from_files(plain.path()), None);
    }

    fn commit(time: i64, message: &str, files: &[&str]) -> RawCommit {
        let mut terms: Vec<(String, u32)> = Vec::new();
        for t in analysis::terms(message) {
            match terms.iter_mut().find(|(x, _)| *x == t) {
                Some(e) => e.1 += 1,
                None => terms.push((t, 1)),
            }
        }
        (time, terms, files.iter().map(|f| f.to_string()).collect())
    }

    fn plan(q: &str) -> Vec<(String, f32)> {
        analysis::query_terms(q).into_iter().map(|t| (t, 1.0)).collect()
    }

    fn id(p: &str) -> u64 {
        xxhash_rust::xxh3::xxh3_64(p.as_bytes())
    }

    #[test]
    fn files_of_commits_whose_messages_match_get_the_largest_share() {
        let h = CommitHistory::of(
            "x".into(),
            vec![
                commit(30, "Retry uploads with exponential backoff", &["src/upload.py"]),
                commit(20, "Render tables with wider borders", &["src/table.py", "src/style.py"]),
                commit(10, "Uploads: give up after the retry budget is spent", &["src/upload.py", "src/budget.py"]),
            ],
        );
        // Stored and read back whole.
        assert_eq!(codec().deserialize::<CommitHistory>(&codec().serialize(&h).unwrap()).unwrap(), h);
        // A damaged cache is refused, not misread.
        let mut bytes = codec().serialize(&h).unwrap();
        bytes.truncate(8);
        bytes.extend_from_slice(&[0xfc, 0xff, 0xff, 0xff, 0xff]);
        assert!(codec().deserialize::<CommitHistory>(&bytes).is_err());
        let shares = h.file_shares(&plan("retry a failed upload"), None);
        assert_eq!(shares.get(&id("src/upload.py")), Some(&1.0));
        assert!(shares.get(&id("src/budget.py")).is_some_and(|s| *s < 1.0));
        assert!(!shares.contains_key(&id("src/table.py")));
        // Only commits before the given time count: the newest is gone, the oldest remains.
        let before = h.file_shares(&plan("retry uploads backoff"), Some(20));
        assert_eq!(before.get(&id("src/upload.py")), Some(&1.0));
        assert!(before.contains_key(&id("src/budget.py")));
        assert!(h.file_shares(&plan("retry uploads backoff"), Some(10)).is_empty());
    }

    #[test]
    fn parses_git_log_records_keeping_source_files_and_leaves_out_sweeping_commits() {
        let many: String = (0..=MAX_FILES_PER_COMMIT).map(|i| format!("f{i}.rs\n")).collect();
        let text = format!(
            "\u{1e}1700000000\u{1f}Fix the parser\n\nbody words\n\u{1f}\n\nsrc/parse.rs\ntests/parse_test.rs\nCHANGELOG.md\nsrc/lex.rs\n\
             \u{1e}1690000000\u{1f}Reformat everything\n\u{1f}\n\n{many}\u{1e}1680000000\u{1f}Describe the flags\n\u{1f}\n\ndocs/flags.md\n\u{1e}garbage\u{1f}x\u{1f}a.rs\n"
        );
        let commits = parse(&text);
        assert_eq!(commits.len(), 1);
        assert_eq!(commits[0].0, 1_700_000_000);
        assert_eq!(commits[0].2, vec!["src/parse.rs", "src/lex.rs"]);
        assert!(commits[0].1.iter().any(|(t, _)| t == "bodi" || t == "body"));
    }
}
