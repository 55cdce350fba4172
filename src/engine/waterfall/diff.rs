//! Diff-aware context: runs `git diff` for the working tree, the index or a range (optionally
//! limited to paths), and parses the unified diff into changed files with their hunks. The
//! orchestrator turns them into the Diff slot and expands them one hop through the impact
//! graph.
//!
//! git is run as a subprocess (the user's own git, so the repository format, worktrees and
//! config all behave as they do at the prompt) with colour, external diff drivers and text
//! conversion off, fixed `a/` and `b/` prefixes and unquoted paths, and `--relative` so paths
//! are relative to the docdex repository even when it is a subdirectory of the git work tree.

use crate::error::{Error, Result};
use std::path::Path;

/// Diff lines kept per file; the rest is summarised in one line.
const MAX_PATCH_LINES: usize = 240;

/// What to diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiffTarget {
    /// Unstaged changes (`git diff`).
    Working,
    /// Staged changes (`git diff --cached`).
    Staged,
    /// A revision or range (`main..HEAD`, `HEAD~2`, `a...b`).
    Range(String),
}

impl DiffTarget {
    /// Parses `working`, `staged` or a range; refuses what git would read as an option.
    pub fn parse(s: &str) -> Result<DiffTarget> {
        let s = s.trim();
        match s {
            "" | "working" | "worktree" => Ok(DiffTarget::Working),
            "staged" | "cached" | "index" => Ok(DiffTarget::Staged),
            r if r.starts_with('-') || r.chars().any(|c| c.is_whitespace() || c.is_control()) => {
                Err(Error::BadRequest(format!(
                    "bad --diff {r:?}: use working, staged, or a git range such as main..HEAD or HEAD~3"
                )))
            }
            r => Ok(DiffTarget::Range(r.to_string())),
        }
    }

    /// For headings: `working tree changes`, `staged changes`, `main..HEAD`.
    pub fn describe(&self) -> String {
        match self {
            DiffTarget::Working => "unstaged working-tree changes".into(),
            DiffTarget::Staged => "staged changes".into(),
            DiffTarget::Range(r) => format!("changes in {r}"),
        }
    }
}

/// How a file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// New file.
    Added,
    /// Edited in place.
    Modified,
    /// Removed.
    Deleted,
    /// Moved (possibly edited too).
    Renamed,
}

impl Change {
    /// `added`, `modified`, `deleted`, `renamed`.
    pub fn name(self) -> &'static str {
        match self {
            Change::Added => "added",
            Change::Modified => "modified",
            Change::Deleted => "deleted",
            Change::Renamed => "renamed",
        }
    }
}

/// One hunk's line ranges (`@@ -old_start,old_lines +new_start,new_lines @@`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hunk {
    /// First line on the old side.
    pub old_start: u32,
    /// Lines on the old side.
    pub old_lines: u32,
    /// First line on the new side.
    pub new_start: u32,
    /// Lines on the new side.
    pub new_lines: u32,
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff {
    /// Repo-relative path (the new path; the old one for deletions).
    pub path: String,
    /// The previous path of a rename.
    pub old_path: Option<String>,
    /// How it changed.
    pub change: Change,
    /// Its hunks, as their headers give them (three lines of context included): what the
    /// patch text shows, and what a citation of it covers.
    pub hunks: Vec<Hunk>,
    /// The same hunks narrowed to the lines they change (as `git diff -U0` would give them):
    /// what "changed: lines ..." says.
    pub changed: Vec<Hunk>,
    /// The patch text from the first hunk on (capped at [`MAX_PATCH_LINES`] lines).
    pub patch: String,
    /// A binary file (no hunks).
    pub binary: bool,
}

impl FileDiff {
    /// The line range the hunks cover on the side that exists (new side, old for deletions).
    pub fn line_range(&self) -> Option<(u32, u32)> {
        let side = |h: &Hunk| {
            if self.change == Change::Deleted {
                (h.old_start, h.old_lines)
            } else {
                (h.new_start, h.new_lines)
            }
        };
        let start = self.hunks.iter().map(|h| side(h).0.max(1)).min()?;
        let end = self.hunks.iter().map(|h| side(h).0 + side(h).1.saturating_sub(1)).max()?;
        Some((start, end.max(start)))
    }
}

/// Runs git and parses the diff of `target` under `paths` in `root`.
pub fn collect(root: &Path, target: &DiffTarget, paths: &[String]) -> Result<Vec<FileDiff>> {
    for p in paths {
        if p.starts_with('-') {
            return Err(Error::BadRequest(format!("bad --path {p:?}: give a repo-relative file or directory")));
        }
    }
    let mut cmd = crate::engine::git::command(root);
    cmd.args(["diff", "--no-color", "--no-ext-diff", "--no-textconv"]).args([
        "--relative",
        "--find-renames",
        "--src-prefix=a/",
        "--dst-prefix=b/",
        "-U3",
    ]);
    match target {
        DiffTarget::Working => {}
        DiffTarget::Staged => {
            cmd.arg("--cached");
        }
        DiffTarget::Range(r) => {
            cmd.arg(r);
        }
    }
    cmd.arg("--");
    cmd.args(paths);
    let out = crate::engine::git::run(&mut cmd, root, "--diff")?;
    if !out.status.success() {
        return Err(git_error(root, target, paths, &String::from_utf8_lossy(&out.stderr)));
    }
    Ok(parse(&String::from_utf8_lossy(&out.stdout)))
}

/// Tracked paths whose working-tree entry is a FIFO, socket or device: `git diff` of the working
/// tree stops at the first ("unsupported file type", no diff at all), so the diffs exclude them.
/// `--name-only` against the index compares stat data only and does not read them.
pub fn special_files(root: &Path) -> Result<Vec<String>> {
    let out = crate::engine::git::output(root, &["diff", "--name-only", "--relative", "-z"], "changed files")?;
    if !out.status.success() {
        return Ok(Vec::new());
    }
    Ok(out
        .stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .filter(|p| is_special(root, p))
        .collect())
}

/// Neither a regular file, a folder nor a link (checked without following one).
fn is_special(root: &Path, rel: &str) -> bool {
    std::fs::symlink_metadata(root.join(rel)).is_ok_and(|m| {
        let t = m.file_type();
        !(t.is_file() || t.is_dir() || t.is_symlink())
    })
}

/// The note naming what [`special_files`] found and a diff left out (the first few names, then a count).
pub fn special_note(special: &[String]) -> Option<String> {
    const SHOWN: usize = 5;
    let (first, rest) = special.split_at(special.len().min(SHOWN));
    let more = if rest.is_empty() { String::new() } else { format!(" and {} more", rest.len()) };
    (!special.is_empty()).then(|| {
        format!(
            "{} left out: not a regular file (a FIFO, socket or device, which git cannot diff): {}{more}",
            crate::engine::fsutil::count(special.len(), "changed path"),
            first.join(", ")
        )
    })
}

/// Pathspecs that leave `paths` out of a diff (added after any paths the caller limits it to).
pub fn excluding(paths: &[String]) -> Vec<String> {
    paths.iter().map(|p| format!(":(exclude,literal){p}")).collect()
}

/// Turns git's complaint into an error that says what to do.
fn git_error(root: &Path, target: &DiffTarget, paths: &[String], stderr: &str) -> Error {
    let first = crate::engine::git::first_line(stderr, "git diff failed");
    let lower = stderr.to_ascii_lowercase();
    if lower.contains("not a git repository") {
        return Error::BadRequest(format!(
            "--diff needs a git repository, and {} is not inside one (git: {first})",
            root.display()
        ));
    }
    if let DiffTarget::Range(r) = target {
        if lower.contains("unknown revision") || lower.contains("bad revision") || lower.contains("ambiguous argument")
        {
            return Error::BadRequest(format!(
                "git cannot read the range {r:?} ({first}); use working, staged, or a range of existing commits such as main..HEAD"
            ));
        }
    }
    if lower.contains("outside repository") {
        // `HEAD:../x` names a path in the range itself: only blame --path when one was given.
        return Error::BadRequest(match (target, paths.is_empty()) {
            (DiffTarget::Range(r), true) => {
                format!("the --diff range {r:?} names a path outside the repository ({first}); use a range of commits such as main..HEAD")
            }
            _ => format!("a --path is outside the repository ({first})"),
        });
    }
    Error::BadRequest(format!("git diff failed in {}: {first}", root.display()))
}

/// Parses a unified diff (as produced by [`collect`]'s options).
///
/// Each hunk is also kept narrowed to the lines it changes ([`FileDiff::changed`]): the diff
/// keeps three lines of context around each change for the patch text, but "changed: lines
/// 443-446" for a one-line append at 446 would overstate it.
pub fn parse(text: &str) -> Vec<FileDiff> {
    let mut files: Vec<FileDiff> = Vec::new();
    let mut patch_lines = 0usize;
    let mut cut = 0usize;
    let mut body: Option<HunkBody> = None;
    let finish = |files: &mut Vec<FileDiff>, cut: &mut usize| {
        if let (Some(f), true) = (files.last_mut(), *cut > 0) {
            f.patch.push_str(&format!("... {cut} more diff lines not shown\n"));
        }
        *cut = 0;
    };
    // The hunk just read, narrowed to its changes.
    let close = |files: &mut Vec<FileDiff>, body: &mut Option<HunkBody>| {
        if let (Some(b), Some(f)) = (body.take(), files.last_mut()) {
            if let Some(h) = f.changed.last_mut() {
                *h = b.narrowed(*h);
            }
        }
    };
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            close(&mut files, &mut body);
            finish(&mut files, &mut cut);
            patch_lines = 0;
            let path = header_paths(rest).map(|(_, b)| b).unwrap_or_default();
            files.push(FileDiff {
                path,
                old_path: None,
                change: Change::Modified,
                hunks: Vec::new(),
                changed: Vec::new(),
                patch: String::new(),
                binary: false,
            });
            continue;
        }
        let Some(f) = files.last_mut() else { continue };
        if f.hunks.is_empty() && !line.starts_with("@@") {
            read_header_line(f, line);
            continue;
        }
        if let Some(h) = line.strip_prefix("@@ ").and_then(parse_hunk) {
            if let (Some(b), Some(last)) = (body.take(), f.changed.last_mut()) {
                *last = b.narrowed(*last);
            }
            f.hunks.push(h);
            f.changed.push(h);
            body = Some(HunkBody::new(h));
        } else if let Some(b) = body.as_mut() {
            b.read(line);
        }
        if patch_lines < MAX_PATCH_LINES {
            f.patch.push_str(line);
            f.patch.push('\n');
            patch_lines += 1;
        } else {
            cut += 1;
        }
    }
    close(&mut files, &mut body);
    finish(&mut files, &mut cut);
    files.retain(|f| !f.path.is_empty());
    files
}

/// Where a hunk's body really changes lines, read line by line.
#[derive(Debug, Clone, Copy)]
struct HunkBody {
    old_no: u32,
    new_no: u32,
    /// First and last removed line (old side).
    removed: Option<(u32, u32)>,
    /// First and last added line (new side).
    added: Option<(u32, u32)>,
    /// The new-side line after which the first removal happened, and the old-side line after
    /// which the first addition happened (for a side that changes no line).
    removed_after: Option<u32>,
    added_after: Option<u32>,
}

impl HunkBody {
    fn new(h: Hunk) -> HunkBody {
        // An empty side's start is the line before it (`+201,0`: after line 201).
        HunkBody {
            old_no: h.old_start + u32::from(h.old_lines == 0),
            new_no: h.new_start + u32::from(h.new_lines == 0),
            removed: None,
            added: None,
            removed_after: None,
            added_after: None,
        }
    }

    fn read(&mut self, line: &str) {
        let span = |s: &mut Option<(u32, u32)>, n: u32| *s = Some(s.map_or((n, n), |(a, _)| (a, n)));
        match line.as_bytes().first() {
            Some(b'+') => {
                self.added_after.get_or_insert(self.old_no.saturating_sub(1));
                span(&mut self.added, self.new_no);
                self.new_no += 1;
            }
            Some(b'-') => {
                self.removed_after.get_or_insert(self.new_no.saturating_sub(1));
                span(&mut self.removed, self.old_no);
                self.old_no += 1;
            }
            Some(b' ') => {
                self.old_no += 1;
                self.new_no += 1;
            }
            _ => {}
        }
    }

    /// `h` with each side's range cut to its changed lines (a side with none: an empty range
    /// after the line where the other side changed). Unchanged when the body held no change.
    fn narrowed(self, h: Hunk) -> Hunk {
        if self.added.is_none() && self.removed.is_none() {
            return h;
        }
        let (new_start, new_lines) = match (self.added, self.removed_after) {
            (Some((a, b)), _) => (a, b - a + 1),
            (None, Some(after)) => (after, 0),
            (None, None) => (h.new_start, h.new_lines),
        };
        let (old_start, old_lines) = match (self.removed, self.added_after) {
            (Some((a, b)), _) => (a, b - a + 1),
            (None, Some(after)) => (after, 0),
            (None, None) => (h.old_start, h.old_lines),
        };
        Hunk { old_start, old_lines, new_start, new_lines }
    }
}

/// Reads one extended header line (`new file mode`, `rename from`, `---`, `+++`, `Binary`).
fn read_header_line(f: &mut FileDiff, line: &str) {
    if line.starts_with("new file mode") {
        f.change = Change::Added;
    } else if line.starts_with("deleted file mode") {
        f.change = Change::Deleted;
    } else if let Some(p) = line.strip_prefix("rename from ") {
        f.change = Change::Renamed;
        f.old_path = Some(unquote(p));
    } else if let Some(p) = line.strip_prefix("rename to ") {
        f.path = unquote(p);
    } else if let Some(p) = line.strip_prefix("--- ") {
        if f.change == Change::Deleted {
            if let Some(p) = unquote(p).strip_prefix("a/") {
                f.path = p.to_string();
            }
        }
    } else if let Some(p) = line.strip_prefix("+++ ") {
        if let Some(p) = unquote(p).strip_prefix("b/") {
            f.path = p.to_string();
        }
    } else if line.starts_with("Binary files ") {
        f.binary = true;
    }
}

/// `a/x b/y` (possibly quoted) from a `diff --git` line.
fn header_paths(rest: &str) -> Option<(String, String)> {
    if let Some(inner) = rest.strip_prefix('"') {
        let end = inner.find("\" ")? + 1;
        let a = unquote(&rest[..=end]);
        let b = unquote(rest[end + 1..].trim_start());
        return Some((a.strip_prefix("a/")?.to_string(), b.strip_prefix("b/")?.to_string()));
    }
    // Unquoted: the two halves are the same length for a change in place; split at " b/".
    let i = rest.find(" b/")?;
    Some((rest[..i].strip_prefix("a/")?.to_string(), rest[i + 3..].to_string()))
}

/// Undoes git's C-style quoting of unusual paths (`"a/\303\251t\303\251.txt"`).
fn unquote(s: &str) -> String {
    let s = s.trim_end_matches('\t');
    let Some(inner) = s.strip_prefix('"').and_then(|x| x.strip_suffix('"')) else { return s.to_string() };
    let mut bytes = Vec::with_capacity(inner.len());
    let mut it = inner.bytes().peekable();
    while let Some(b) = it.next() {
        if b != b'\\' {
            bytes.push(b);
            continue;
        }
        match it.next() {
            Some(b'n') => bytes.push(b'\n'),
            Some(b't') => bytes.push(b'\t'),
            Some(d @ b'0'..=b'7') => {
                let mut v = u32::from(d - b'0');
                for _ in 0..2 {
                    if let Some(&n @ b'0'..=b'7') = it.peek() {
                        v = v * 8 + u32::from(n - b'0');
                        it.next();
                    }
                }
                bytes.push(v as u8);
            }
            Some(other) => bytes.push(other),
            None => {}
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// `-12,3 +14,5 @@ fn x()` → the hunk's ranges.
fn parse_hunk(rest: &str) -> Option<Hunk> {
    let mut parts = rest.split_whitespace();
    let old = parts.next()?.strip_prefix('-')?;
    let new = parts.next()?.strip_prefix('+')?;
    let range = |s: &str| -> Option<(u32, u32)> {
        match s.split_once(',') {
            Some((a, n)) => Some((a.parse().ok()?, n.parse().ok()?)),
            None => Some((s.parse().ok()?, 1)),
        }
    };
    let (old_start, old_lines) = range(old)?;
    let (new_start, new_lines) = range(new)?;
    Some(Hunk { old_start, old_lines, new_start, new_lines })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "diff --git a/src/a.rs b/src/a.rs
index 1111111..2222222 100644
--- a/src/a.rs
+++ b/src/a.rs
@@ -10,3 +10,4 @@ fn main() {
 keep
-old
+new
+added
@@ -40 +41,2 @@
-x
+y
+z
diff --git a/gone.py b/gone.py
deleted file mode 100644
index 3333333..0000000
--- a/gone.py
+++ /dev/null
@@ -1,2 +0,0 @@
-a
-b
diff --git a/old name.txt b/new name.txt
similarity index 90%
rename from old name.txt
rename to new name.txt
diff --git \"a/caf\\303\\251.md\" \"b/caf\\303\\251.md\"
new file mode 100644
--- /dev/null
+++ \"b/caf\\303\\251.md\"
@@ -0,0 +1 @@
+hi
diff --git a/logo.png b/logo.png
index 1..2 100644
Binary files a/logo.png and b/logo.png differ
";

    #[test]
    fn parses_files_hunks_renames_deletions_and_quoted_paths() {
        let files = parse(SAMPLE);
        let names: Vec<(&str, Change)> = files.iter().map(|f| (f.path.as_str(), f.change)).collect();
        assert_eq!(
            names,
            [
                ("src/a.rs", Change::Modified),
                ("gone.py", Change::Deleted),
                ("new name.txt", Change::Renamed),
                ("café.md", Change::Added),
                ("logo.png", Change::Modified),
            ]
        );
        let a = &files[0];
        assert_eq!(a.hunks.len(), 2);
        assert_eq!(a.line_range(), Some((10, 42)));
        // Narrowed to the changed lines: line 10 is context, 11-12 and 41-42 are new.
        assert_eq!(a.changed[0], Hunk { old_start: 11, old_lines: 1, new_start: 11, new_lines: 2 });
        assert!(a.patch.starts_with("@@ -10,3 +10,4 @@") && a.patch.contains("+added\n"), "{}", a.patch);
        assert_eq!(files[1].line_range(), Some((1, 2)), "deleted files cite their old lines");
        assert_eq!(files[2].old_path.as_deref(), Some("old name.txt"));
        assert!(files[4].binary && files[4].hunks.is_empty());
    }

    #[test]
    fn hunks_are_narrowed_to_the_lines_they_change() {
        // A one-line append at line 446 with three lines of context before it.
        let append = "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -443,3 +443,4 @@\n a\n b\n c\n+appended\n";
        let f = &parse(append)[0];
        assert_eq!(f.changed, [Hunk { old_start: 445, old_lines: 0, new_start: 446, new_lines: 1 }]);
        assert_eq!(f.line_range(), Some((443, 446)), "a citation covers the patch shown");
        assert!(f.patch.contains(" a\n b\n c\n+appended"), "the patch keeps its context");
        // A removal: the new side is empty, after the line before it.
        let removal = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -5,7 +5,6 @@\n a\n b\n c\n-gone\n d\n e\n f\n";
        assert_eq!(parse(removal)[0].changed, [Hunk { old_start: 8, old_lines: 1, new_start: 7, new_lines: 0 }]);
    }

    #[test]
    fn long_patches_are_cut_with_a_note() {
        let mut text =
            String::from("diff --git a/big.txt b/big.txt\n--- a/big.txt\n+++ b/big.txt\n@@ -1,300 +1,300 @@\n");
        for i in 0..299 {
            text.push_str(&format!("+line {i}\n"));
        }
        let files = parse(&text);
        assert_eq!(files[0].patch.lines().count(), MAX_PATCH_LINES + 1);
        assert!(
            files[0].patch.ends_with("... 60 more diff lines not shown\n"),
            "{}",
            &files[0].patch[files[0].patch.len() - 60..]
        );
    }

    #[test]
    fn targets_parse_and_refuse_options() {
        assert_eq!(DiffTarget::parse("working").unwrap(), DiffTarget::Working);
        assert_eq!(DiffTarget::parse("staged").unwrap(), DiffTarget::Staged);
        assert_eq!(DiffTarget::parse("main..HEAD").unwrap(), DiffTarget::Range("main..HEAD".into()));
        assert!(DiffTarget::parse("--output=/tmp/x").is_err());
        assert!(DiffTarget::parse("a b").is_err());
    }
}
