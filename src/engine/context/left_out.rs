//! Changed files a pack (and `run-tests --affected`) leaves out because docdex does not serve
//! them, each with the reason that applies to it. The note used to count them under every
//! reason there is ("hidden, ignored ..., symbolic links, untracked binaries, submodules or
//! names not UTF-8"), naming no file: a user could not tell that the 14 MB file they had just
//! generated was missing for its size.

use super::types::LeftOutFile;
use crate::engine::index::served::Refusal;
use std::path::Path;

/// Why a changed file is left out, in the order the note lists the groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Why {
    /// Over `[index] max_file_size_bytes`.
    TooLarge,
    /// A symbolic link (never followed).
    Link,
    /// A directory git lists as one entry: a submodule or a nested repository.
    Repository,
    /// A dot file or folder.
    Hidden,
    /// `.gitignore`, `.docdexignore`, `[index] exclude`, git's excludes file.
    Ignored,
    /// A document format docdex does not read (`.odt`, `.xlsx`).
    Unsupported,
    /// Inside `.git`.
    InGit,
    /// An untracked file the index would skip as binary.
    UntrackedBinary,
    /// A name that is not UTF-8 (git's name, read lossily, matches no file).
    NotUtf8,
}

impl Why {
    /// The group's heading in the note and the start of each file's `reason`.
    pub fn label(self) -> &'static str {
        match self {
            Why::TooLarge => "over `[index] max_file_size_bytes`",
            Why::Link => "symbolic link (never followed)",
            Why::Repository => "submodule or nested repository (its own repository)",
            Why::Hidden => "hidden (a dot file or folder)",
            Why::Ignored => "ignored or excluded (`.gitignore`, `.docdexignore`, `[index] exclude`)",
            Why::Unsupported => "unsupported document format",
            Why::InGit => "inside `.git`",
            Why::UntrackedBinary => "untracked binary",
            Why::NotUtf8 => "name not UTF-8 (the index does not take it)",
        }
    }
}

/// One changed file left out: its path, why, and a detail for that file (its size).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    /// Repo-relative path (as git gave it).
    pub path: String,
    /// The reason that applies.
    pub why: Why,
    /// What is particular to this file (`14.3 MB, over the 10.0 MB limit`).
    pub detail: Option<String>,
}

impl LeftOut {
    /// The file as the JSON lists it.
    pub fn to_file(&self) -> LeftOutFile {
        let reason = match &self.detail {
            Some(d) => format!("{}: {d}", self.why.label()),
            None => self.why.label().to_string(),
        };
        LeftOutFile { path: self.path.clone(), reason }
    }
}

/// Why `rel` is left out: `refusal` is the index's verdict (`None` when the walk takes it but
/// it is an untracked binary). The walk says only "hidden or ignored" for links, submodules,
/// dot files and ignored files alike; the file itself tells them apart.
pub fn classify(root: &Path, rel: &str, refusal: Option<&Refusal>, include_hidden: bool) -> LeftOut {
    let meta = root.join(rel).symlink_metadata();
    let hidden = rel.split('/').any(|c| c.starts_with('.') && c.len() > 1 && c != "..");
    let (why, detail) = match (refusal, &meta) {
        (_, Err(_)) if rel.contains('\u{FFFD}') => (Why::NotUtf8, None),
        (_, Ok(m)) if m.file_type().is_symlink() => (Why::Link, None),
        (_, Ok(m)) if m.is_dir() => (Why::Repository, None),
        (Some(r @ Refusal::TooLarge { .. }), _) => (Why::TooLarge, Some(r.reason())),
        (Some(Refusal::InGit), _) => (Why::InGit, None),
        (Some(Refusal::Unsupported { ext, instead }), _) => (Why::Unsupported, Some(format!(".{ext}: {instead}"))),
        (Some(r @ (Refusal::UnreadRules { .. } | Refusal::SourceGlobs)), _) => (Why::Ignored, Some(r.reason())),
        (Some(Refusal::HiddenOrIgnored), _) if hidden && !include_hidden => (Why::Hidden, None),
        (Some(Refusal::HiddenOrIgnored), _) => (Why::Ignored, None),
        (None, _) => (Why::UntrackedBinary, None),
    };
    LeftOut { path: rel.to_string(), why, detail }
}

/// The note for the files left out: their count, then each reason with the files it applies
/// to, `names` files named in all (the rest counted), or `None` when none was left out.
/// `4 changed files left out, as docdex does not serve them: over ... : huge.txt (14.3 MB, over
/// the 10.0 MB limit); symbolic link (never followed): passwd_link; ...`.
pub fn note(left_out: &[LeftOut], names: usize) -> Option<String> {
    if left_out.is_empty() {
        return None;
    }
    let mut sorted: Vec<&LeftOut> = left_out.iter().collect();
    sorted.sort_by(|a, b| a.why.cmp(&b.why).then_with(|| a.path.cmp(&b.path)));
    let mut named = 0;
    let mut parts: Vec<String> = Vec::new();
    for group in sorted.chunk_by(|a, b| a.why == b.why) {
        let shown: Vec<String> = group.iter().take(names.saturating_sub(named)).map(|f| shown(f)).collect();
        named += shown.len();
        let rest = group.len() - shown.len();
        let list = match (shown.is_empty(), rest) {
            (true, n) => crate::engine::fsutil::count(n, "file"),
            (false, 0) => shown.join(", "),
            (false, n) => format!("{} and {n} more", shown.join(", ")),
        };
        parts.push(format!("{}: {list}", group[0].why.label()));
    }
    Some(format!(
        "{} left out, as docdex does not serve them: {}",
        crate::engine::fsutil::count(left_out.len(), "changed file"),
        parts.join("; ")
    ))
}

fn shown(f: &LeftOut) -> String {
    match &f.detail {
        Some(d) => format!("{} ({d})", f.path),
        None => f.path.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(path: &str, why: Why) -> LeftOut {
        LeftOut { path: path.into(), why, detail: None }
    }

    #[test]
    fn the_note_names_each_file_under_its_own_reason_within_the_bound() {
        let mut big = out("huge.txt", Why::TooLarge);
        big.detail = Some("14.3 MB, over the 10.0 MB limit".into());
        let files = vec![
            out(".hidden.py", Why::Hidden),
            out("passwd_link", Why::Link),
            out("blob.bin", Why::UntrackedBinary),
            big,
        ];
        let n = note(&files, 10).expect("a note");
        assert_eq!(
            n,
            "4 changed files left out, as docdex does not serve them: over `[index] max_file_size_bytes`: huge.txt (14.3 MB, over the 10.0 MB limit); symbolic link (never followed): passwd_link; hidden (a dot file or folder): .hidden.py; untracked binary: blob.bin"
        );
        // Past the bound, the rest of a group is counted, and a group with none named too.
        let many: Vec<LeftOut> = (0..5).map(|i| out(&format!("m{i}.pyc"), Why::UntrackedBinary)).collect();
        let files = [vec![out(".env", Why::Hidden)], many].concat();
        let n = note(&files, 2).expect("a note");
        assert!(n.ends_with("hidden (a dot file or folder): .env; untracked binary: m0.pyc and 4 more"), "{n}");
        let n = note(&files, 1).expect("a note");
        assert!(n.ends_with(": .env; untracked binary: 5 files"), "{n}");
        assert_eq!(note(&[], 10), None);
    }
}
