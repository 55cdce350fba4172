//! The files a branch changed: committed since the merge base with a ref, staged, dirty and
//! untracked, with the hunks of each against the base (so line numbers are the working
//! tree's). Git runs through the waterfall's diff reader (`waterfall::diff`), which already
//! parses unified diffs; this file only decides what to diff against what.

use super::left_out::{self, LeftOut};
use super::types::{ChangeState, ChangedFile};
use crate::engine::index::served;
use crate::engine::waterfall::diff::{self, Change, DiffTarget, FileDiff};
use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::path::Path;

/// What git said changed.
#[derive(Debug, Default)]
pub struct Changes {
    /// The commit the changes are measured from.
    pub base: Option<String>,
    /// Every changed file, in path order.
    pub files: Vec<ChangedFile>,
    /// Per tracked changed file, its diff from the base to the working tree.
    pub diffs: BTreeMap<String, FileDiff>,
    /// Why nothing could be read, when git is missing or this is not a repository.
    pub note: Option<String>,
    /// Changed paths that are not files, folders or links (a FIFO, socket or device), left out.
    pub special: Vec<String>,
}

fn git(root: &Path, args: &[&str]) -> Result<std::process::Output> {
    crate::engine::git::output(root, args, "changed files")
}

fn stdout_line(out: &std::process::Output) -> Option<String> {
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string()).filter(|s| !s.is_empty())
}

/// Reads the changes of the repository at `root`; `since` adds the branch's commits since its
/// merge base with that ref. Not a git repository: no changes and a note, unless `since` was
/// asked for (then an error).
pub fn collect(root: &Path, since: Option<&str>) -> Result<Changes> {
    check_since(since)?;
    if let Some(outside) = outside_work_tree(root, since)? {
        return Ok(outside);
    }
    let base = base_of(root, since)?;
    let mut states: BTreeMap<String, Vec<ChangeState>> = BTreeMap::new();
    let mut add = |files: &[FileDiff], state: ChangeState| {
        for f in files {
            let s = states.entry(f.path.clone()).or_default();
            if !s.contains(&state) {
                s.push(state);
            }
        }
    };
    if let (Some(_), Some(b)) = (since, &base) {
        add(&diff::collect(root, &DiffTarget::Range(format!("{b}..HEAD")), &[])?, ChangeState::Committed);
    }
    add(&diff::collect(root, &DiffTarget::Staged, &[])?, ChangeState::Staged);
    let special = diff::special_files(root)?;
    let skip = diff::excluding(&special);
    add(&diff::collect(root, &DiffTarget::Working, &skip)?, ChangeState::Dirty);
    // The hunks against the base, in working-tree lines (staged only when there is no commit).
    let against_base = match &base {
        Some(b) => diff::collect(root, &DiffTarget::Range(b.clone()), &skip)?,
        None => diff::collect(root, &DiffTarget::Staged, &[])?,
    };
    let mut kinds: BTreeMap<String, Change> = BTreeMap::new();
    let mut diffs = BTreeMap::new();
    for f in against_base {
        kinds.insert(f.path.clone(), f.change);
        diffs.insert(f.path.clone(), f);
    }
    add_untracked(root, &mut kinds, &mut states)?;
    let files = states
        .into_iter()
        .filter(|(path, _)| !special.contains(path))
        .map(|(path, states)| ChangedFile {
            change: kinds.get(&path).copied().unwrap_or(Change::Modified).name().to_string(),
            old_path: diffs.get(&path).and_then(|d: &FileDiff| d.old_path.clone()),
            path,
            states,
        })
        .collect();
    Ok(Changes { base, files, diffs, note: None, special })
}

impl Changes {
    /// Drops the changed files the index would not take (hidden like `.env` or `.venv/`,
    /// ignored, excluded, over the size limit, untracked binaries; a deleted file stays
    /// listed), and returns how many. What is served is what is indexed: a context pack shows,
    /// and `run-tests --affected` runs, only changed files the walk admits, so untracked
    /// secrets, build output (`__pycache__`) or a virtualenv's vendored tests are neither.
    /// The rule is `index::served`, the one `open` and chat's diff apply.
    pub fn leave_out_unindexable(&mut self, root: &Path, cfg: &crate::config::IndexConfig) -> usize {
        self.leave_out_unserved(root, cfg).len()
    }

    /// [`Changes::leave_out_unindexable`], returning each file left out with the reason that
    /// applies to it, in path order (context packs name them).
    pub fn leave_out_unserved(&mut self, root: &Path, cfg: &crate::config::IndexConfig) -> Vec<LeftOut> {
        let present: Vec<String> =
            self.files.iter().filter(|f| f.change != "deleted").map(|f| f.path.clone()).collect();
        if present.is_empty() {
            return Vec::new();
        }
        let refused = served::refusals(root, &present, cfg, Default::default());
        let mut left_out = Vec::new();
        self.files.retain(|f| {
            if f.change == "deleted" {
                return true;
            }
            let refusal = refused.get(&f.path);
            if refusal.is_none() && !(f.states == [ChangeState::Untracked] && is_binary(root, &f.path)) {
                return true;
            }
            left_out.push(left_out::classify(root, &f.path, refusal, cfg.include_hidden));
            false
        });
        left_out
    }
}

/// The note for changed files [`Changes::leave_out_unindexable`] dropped (none for 0), for
/// `run-tests --affected`, which counts them; context packs name each with its reason
/// ([`left_out::note`]).
pub fn left_out_note(left_out: usize) -> Option<String> {
    (left_out > 0).then(|| {
        format!(
            "{} left out: hidden, ignored or excluded (`.gitignore`, `.docdexignore`, `[index] exclude`), over `[index] max_file_size_bytes`, symbolic links, untracked binaries, submodules or names not UTF-8",
            crate::engine::fsutil::count(left_out, "changed file")
        )
    })
}

/// Whether the file is binary as indexing decides (read through the repository opener, which
/// follows no link; an unreadable file counts as binary).
fn is_binary(root: &Path, rel: &str) -> bool {
    use crate::engine::fsutil::{looks_binary, open_repo_file, BINARY_SNIFF};
    use std::io::Read;
    let mut head = Vec::with_capacity(BINARY_SNIFF);
    match open_repo_file(root, rel).and_then(|f| f.take(BINARY_SNIFF as u64).read_to_end(&mut head)) {
        Ok(_) => looks_binary(&head),
        Err(_) => true,
    }
}

/// The longest `since` taken: git's own refs are far shorter, and a megabyte one reached git's
/// command line and came back as an `io_error` ("Argument list too long").
const MAX_SINCE_BYTES: usize = 1024;

/// A `since` that git could read as an option or as several words is refused up front, named
/// as each surface spells it (it said "bad --since" to HTTP and MCP clients, whose field is
/// `since`); so is one longer than [`MAX_SINCE_BYTES`].
fn check_since(since: Option<&str>) -> Result<()> {
    match since {
        Some(r) if r.len() > MAX_SINCE_BYTES => Err(Error::BadRequest(format!(
            "since ref {} is longer than {MAX_SINCE_BYTES} bytes (`--since`, or `since` over HTTP and MCP): give a git ref such as main, origin/main or a commit",
            crate::error::quoted(r)
        ))),
        Some(r)
            if r.trim().is_empty() || r.starts_with('-') || r.chars().any(|c| c.is_whitespace() || c.is_control()) =>
        {
            Err(Error::BadRequest(format!(
                "bad since ref {r:?} (`--since`, or `since` over HTTP and MCP): give a git ref such as main, origin/main or a commit"
            )))
        }
        _ => Ok(()),
    }
}

/// Outside a git work tree: no changes and a note saying why, or an error when `since` needs
/// git. `None` inside one.
fn outside_work_tree(root: &Path, since: Option<&str>) -> Result<Option<Changes>> {
    let inside = git(root, &["rev-parse", "--is-inside-work-tree"]);
    if matches!(&inside, Ok(o) if stdout_line(o).as_deref() == Some("true")) {
        return Ok(None);
    }
    let why = format!("{} is not inside a git work tree: no changed files", root.display());
    if let Some(r) = since {
        return Err(Error::BadRequest(format!("--since {r} needs a git repository; {why}")));
    }
    let note = match inside {
        Err(e) => e.to_string(),
        Ok(_) => why,
    };
    Ok(Some(Changes { note: Some(note), ..Default::default() }))
}

/// The commit changes are measured from: the merge base with `since`, else HEAD (none before
/// the first commit).
fn base_of(root: &Path, since: Option<&str>) -> Result<Option<String>> {
    let head = stdout_line(&git(root, &["rev-parse", "--verify", "-q", "HEAD^{commit}"])?);
    match (since, head) {
        (Some(r), Some(_)) => {
            let out = git(root, &["merge-base", r, "HEAD"])?;
            let base = stdout_line(&out).ok_or_else(|| {
                let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
                Error::BadRequest(format!(
                    "git cannot find a merge base of {r:?} and HEAD ({}); give an existing branch or commit",
                    if err.is_empty() { "no common history" } else { err.as_str() }
                ))
            })?;
            Ok(Some(base))
        }
        (Some(r), None) => Err(Error::BadRequest(format!("--since {r}: the repository has no commits yet"))),
        (None, head) => Ok(head),
    }
}

/// Untracked files (not ignored) join as added. git lists no untracked FIFO, socket or device:
/// only tracked ones need leaving out.
fn add_untracked(
    root: &Path,
    kinds: &mut BTreeMap<String, Change>,
    states: &mut BTreeMap<String, Vec<ChangeState>>,
) -> Result<()> {
    let untracked = git(root, &["ls-files", "--others", "--exclude-standard", "-z"])?;
    if untracked.status.success() {
        for p in untracked.stdout.split(|b| *b == 0).filter(|p| !p.is_empty()) {
            let p = String::from_utf8_lossy(p).into_owned();
            kinds.insert(p.clone(), Change::Added);
            states.entry(p).or_default().push(ChangeState::Untracked);
        }
    }
    Ok(())
}

/// `committed on the branch since main, staged and dirty`.
pub fn describe(file: &ChangedFile, since: Option<&str>) -> String {
    let parts: Vec<String> = file
        .states
        .iter()
        .map(|s| match s {
            ChangeState::Committed => format!("committed on the branch since {}", since.unwrap_or("the base")),
            ChangeState::Staged => "staged".into(),
            ChangeState::Dirty => "dirty (unstaged)".into(),
            ChangeState::Untracked => "untracked".into(),
        })
        .collect();
    let joined = match parts.len() {
        0 => String::new(),
        1 => parts[0].clone(),
        n => format!("{} and {}", parts[..n - 1].join(", "), parts[n - 1]),
    };
    match &file.old_path {
        Some(old) => format!("{} file (from {old}), {joined}", file.change),
        None => format!("{} file, {joined}", file.change),
    }
}
