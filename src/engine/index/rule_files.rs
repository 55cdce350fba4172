//! The ignore files a walk lets the `ignore` crate read (`.docdexignore`, `.ignore`,
//! `.gitignore`), checked before it opens them. The crate opens each with a plain `File::open`,
//! following links, and reads it to its end: a `.gitignore` linked to `/dev/zero` (a link any
//! cloned repository can hold) grew one line until the process aborted out of memory (a server
//! with it), one that is a FIFO blocked the walk, and with it the watcher, for ever while
//! status said `watching`, and one linked to a file outside the repository applied that file's
//! lines (and named them in warnings). Git (2.32 on) does not follow a linked `.gitignore` in
//! the worktree, and ignores one over 100 MiB.
//!
//! A folder holding such a file is not walked (so not indexed, watched or served), with a note
//! naming the file; a link to a regular file inside the folder indexed is read as before. A
//! root holding one refuses the run, keeping the index as it was.

use std::path::{Path, PathBuf};

/// Name of docdex's own ignore file.
pub const DOCDEX_IGNORE: &str = ".docdexignore";

/// The names the walk reads in every folder.
pub const NAMES: [&str; 3] = [DOCDEX_IGNORE, ".ignore", ".gitignore"];

/// A repository's own excludes file, under its `.git` folder.
pub const GIT_EXCLUDE: &str = "info/exclude";

/// Git's bound on an ignore file (`PATTERN_MAX_FILE_SIZE`): larger ones are not read.
pub const MAX_BYTES: u64 = 100 * 1024 * 1024;

/// The folder a walk indexes, resolved once, against which links are judged.
#[derive(Debug, Clone)]
pub struct Inside {
    root: PathBuf,
    shown: PathBuf,
}

impl Inside {
    /// `root` as the walk names it (shown in notes) and resolved (links judged against it).
    pub fn new(root: &Path) -> Inside {
        Inside { root: std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf()), shown: root.to_path_buf() }
    }

    /// Why the walk must not let the crate read `dir`'s ignore files, if it must not: the
    /// first of them that is not a regular file of at most [`MAX_BYTES`] in (or linked to
    /// inside) the root. Absent files, dangling links and link loops are fine: the crate skips
    /// what does not exist.
    pub fn refusal(&self, dir: &Path) -> Option<String> {
        let own = NAMES.iter().find_map(|name| self.why(&dir.join(name)).map(|why| format!("its {name} {why}")));
        // The crate reads a repository's `.git/info/exclude` too (the root's, a nested
        // clone's), as plainly: a FIFO there hung the run, a link to /dev/zero aborted it.
        own.or_else(|| {
            let git = dir.join(".git");
            git.is_dir().then(|| self.why(&git.join(GIT_EXCLUDE)).map(|why| format!("its .git/{GIT_EXCLUDE} {why}")))?
        })
    }

    /// Whether the ignore file `file` may be read: absent, or a regular file of at most
    /// [`MAX_BYTES`] in (or linked to inside) the root.
    pub fn readable(&self, file: &Path) -> bool {
        self.why(file).is_none()
    }

    fn why(&self, file: &Path) -> Option<String> {
        let lstat = std::fs::symlink_metadata(file).ok()?;
        let md = if lstat.file_type().is_symlink() {
            let target = std::fs::canonicalize(file).ok()?;
            if !target.starts_with(&self.root) {
                return Some(format!(
                    "is a link to {}, outside {}; docdex reads no ignore file outside the folder it indexes (git does not follow a linked .gitignore at all): replace the link with a file",
                    target.display(),
                    self.shown.display()
                ));
            }
            std::fs::metadata(&target).ok()?
        } else {
            lstat
        };
        if md.is_dir() {
            return None;
        }
        if !md.is_file() {
            return Some(
                "is not a regular file (a FIFO, socket or device, which a read would wait on or never finish): replace it with a file"
                    .to_string(),
            );
        }
        (md.len() > MAX_BYTES)
            .then(|| format!("is {} bytes, over the 100 MiB git reads of an ignore file: shorten it", md.len()))
    }

    /// Why the walk of `root` must not start: the root's own ignore files, and, for a root
    /// inside a git worktree, those of each folder above it up to the worktree's top, which the
    /// crate reads before the walk's first entry (judged against that top).
    pub fn refusal_above(&self, inside_git: bool) -> Option<String> {
        let own = self.refusal(&self.shown).map(|why| format!("{} cannot be indexed: {why}", self.shown.display()));
        if own.is_some() || !inside_git {
            return own;
        }
        let top = self.shown.ancestors().skip(1).find(|a| a.join(".git").exists())?;
        let above = Inside::new(top);
        self.shown.ancestors().skip(1).take_while(|a| a.starts_with(top)).find_map(|dir| {
            above
                .refusal(dir)
                .map(|why| format!("{} cannot be indexed: {} above it: {why}", self.shown.display(), dir.display()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_out_fifos_and_devices_are_refused_and_links_inside_are_read() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("repo");
        let outside = t.path().join("outside");
        std::fs::create_dir_all(root.join("a")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("rules"), "*.md\n").unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        let inside = Inside::new(&root);
        assert_eq!(inside.refusal(&root), None, "a regular file is read");
        std::os::unix::fs::symlink("../.gitignore", root.join("a/.gitignore")).unwrap();
        assert_eq!(inside.refusal(&root.join("a")), None, "a link inside is read");
        std::os::unix::fs::symlink(outside.join("rules"), root.join("a/.ignore")).unwrap();
        let why = inside.refusal(&root.join("a")).unwrap();
        assert!(why.starts_with("its .ignore is a link to") && why.contains("outside"), "{why}");
        std::fs::remove_file(root.join("a/.ignore")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", root.join("a/.docdexignore")).unwrap();
        let why = inside.refusal(&root.join("a")).unwrap();
        assert!(why.contains(".docdexignore is a link to /dev/zero"), "{why}");
        std::fs::remove_file(root.join("a/.docdexignore")).unwrap();
        let fifo = std::ffi::CString::new(root.join("a/.docdexignore").to_str().unwrap()).unwrap();
        // SAFETY: mkfifo takes a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        let why = inside.refusal(&root.join("a")).unwrap();
        assert!(why.contains("not a regular file"), "{why}");
        std::fs::remove_file(root.join("a/.docdexignore")).unwrap();
        std::os::unix::fs::symlink("nowhere", root.join("a/.docdexignore")).unwrap();
        assert_eq!(inside.refusal(&root.join("a")), None, "a dangling link is skipped by the crate");
        assert!(inside.refusal_above(false).is_none());
        std::fs::remove_file(root.join(".gitignore")).unwrap();
        std::os::unix::fs::symlink(outside.join("rules"), root.join(".gitignore")).unwrap();
        let why = inside.refusal_above(false).unwrap();
        assert!(why.contains("cannot be indexed: its .gitignore is a link to"), "{why}");
    }
}
