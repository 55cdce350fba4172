//! What docdex serves: a repository file the index would take, judged by the walk's own rules
//! ([`super::walk::walk_paths`]) and `[index] max_file_size_bytes`. Every reader of repository
//! files asks here: `get` / `open` (`Engine::check_served`), context packs' changed files and
//! chat's `--diff`, so a tracked `.env` or a `.docdexignore`d secret is refused by all of them
//! alike (agents forward what they read to remote models).
//!
//! A path no longer in the working tree (a deletion, a range's old file) cannot be walked; it
//! is judged by its name: inside `.git`, a hidden component, `[index] exclude`, or the ignore
//! files (`.gitignore`, `.ignore`, `.docdexignore`, `.git/info/exclude`) of the directories
//! above it that still exist, and git's excludes file (`core.excludesFile`, global or the
//! repository's, or `~/.config/git/ignore`) as the walk reads it ([`GitRules`]).

use super::gitrules::GitRules;
use super::walk::{self, DOCDEX_IGNORE};
use crate::config::IndexConfig;
use ignore::gitignore::GitignoreBuilder;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

/// Why docdex does not serve a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Inside `.git`, which is never indexed.
    InGit,
    /// A dot file or folder, or ignored (`.gitignore`, `.docdexignore`, `[index] exclude`), or
    /// anything else the walk passes over (a symbolic link, a name not UTF-8).
    HiddenOrIgnored,
    /// A document format docdex does not read (`.odt`, `.xlsx`), as the walk and `docdex
    /// status` name it ([`super::files::unsupported_document`]); `get` called it hidden or
    /// ignored.
    Unsupported {
        /// The extension, lowercase.
        ext: String,
        /// What to do instead (`convert it to .docx or .pdf`).
        instead: &'static str,
    },
    /// In a folder the walk does not enter for an ignore file it must not read (a link out of
    /// the repository, a FIFO: [`super::rule_files`]); `get` called it hidden or ignored.
    UnreadRules {
        /// The folder, repo-relative.
        folder: String,
        /// Why its ignore file is not read.
        why: String,
    },
    /// In a registered source, matched by its `--exclude` or by none of its `--include` globs.
    SourceGlobs,
    /// Bigger than `[index] max_file_size_bytes`.
    TooLarge {
        /// The file's size in bytes.
        size: u64,
        /// The configured limit.
        limit: u64,
    },
}

impl Refusal {
    /// Why, as a phrase ("hidden or ignored (...)", "12.3 MB, over the 10.0 MB limit").
    pub fn reason(&self) -> String {
        match self {
            Refusal::InGit => "inside `.git`, which is never indexed".into(),
            Refusal::HiddenOrIgnored => {
                "hidden or ignored (a dot file or folder, `.gitignore`, `.docdexignore` or `[index] exclude`)".into()
            }
            Refusal::Unsupported { ext, .. } => format!("in an unsupported document format (.{ext})"),
            Refusal::UnreadRules { folder, why } => {
                format!("in the folder {folder}, which docdex does not walk: {why}")
            }
            Refusal::SourceGlobs => "left out by the source's `--exclude` or `--include` globs".into(),
            Refusal::TooLarge { size, limit } => {
                format!("{}, over the {} limit", human_bytes(*size), human_bytes(*limit))
            }
        }
    }

    /// What to do about it, starting with "; ".
    pub fn hint(&self) -> String {
        match self {
            Refusal::InGit => "; git's own commands read it".into(),
            Refusal::HiddenOrIgnored => {
                "; read it with your editor, or un-ignore it (`[index] include_hidden` for dot files)".into()
            }
            Refusal::Unsupported { instead, .. } => {
                format!("; {instead} to index and read it (docdex reads {})", super::files::READ_FORMATS)
            }
            Refusal::TooLarge { .. } => "; raise `[index] max_file_size_bytes` to index and read it".into(),
            Refusal::UnreadRules { .. } => String::new(),
            Refusal::SourceGlobs => {
                "; `docdex sources` shows them: remove the source and add it again with other globs to index and read it"
                    .into()
            }
        }
    }

    /// The same reason for every file over the limit, for grouping names under it.
    fn group(&self) -> String {
        match self {
            Refusal::TooLarge { .. } => "over `[index] max_file_size_bytes`".into(),
            Refusal::Unsupported { .. } => "in a document format docdex does not read".into(),
            other => other.reason(),
        }
    }
}

/// Each of `rels` (repo-relative, `/`-separated) that docdex does not serve under `root`, with
/// why; a path missing from the result is served. One walk for all present files. `globs` are
/// a registered source's (`root` is then its folder), applied as its index walk applies them.
pub fn refusals(root: &Path, rels: &[String], cfg: &IndexConfig, globs: walk::Globs) -> BTreeMap<String, Refusal> {
    let mut refused = BTreeMap::new();
    let mut present: Vec<(&String, PathBuf)> = Vec::new();
    // Git's excludes files, read once and only when a path is gone.
    let mut git_rules: Option<GitRules> = None;
    for rel in rels {
        let abs = root.join(rel);
        if abs.symlink_metadata().is_err() {
            let rules = git_rules.get_or_insert_with(|| GitRules::load(root));
            let by_globs = walk::left_out_by_globs(root, rel, globs).then_some(Refusal::SourceGlobs);
            if let Some(r) = by_globs.or_else(|| refused_by_name(root, rel, cfg, rules)) {
                refused.insert(rel.clone(), r);
            }
            continue;
        }
        // Size first, as a read of the file would be bounded by it.
        let size = abs.metadata().map(|m| m.len()).unwrap_or(0);
        if size > cfg.max_file_size_bytes {
            refused.insert(rel.clone(), Refusal::TooLarge { size, limit: cfg.max_file_size_bytes });
        } else {
            present.push((rel, abs));
        }
    }
    if present.is_empty() {
        return refused;
    }
    let wanted: Vec<PathBuf> = present.iter().map(|(_, abs)| abs.clone()).collect();
    let walked = walk::walk_paths(root, &wanted, cfg, 1, globs);
    let admitted: HashSet<String> = walked.files.into_iter().map(|c| c.rel).collect();
    // What the walk met and noted instead of taking (an unsupported document), as status lists it.
    let noted: HashSet<String> = walked.issues.iter().filter(|i| !i.error).map(|i| i.rel.clone()).collect();
    for (rel, _) in present {
        if admitted.contains(rel.as_str()) {
            continue;
        }
        let unread = walked.issues.iter().find_map(|i| {
            let why = i.reason.strip_prefix(walk::FOLDER_NOT_WALKED)?;
            rel.starts_with(&format!("{}/", i.rel))
                .then(|| Refusal::UnreadRules { folder: i.rel.clone(), why: why.into() })
        });
        let by_globs = || walk::left_out_by_globs(root, rel, globs).then_some(Refusal::SourceGlobs);
        let why = unread.or_else(by_globs).unwrap_or_else(|| passed_over(rel, noted.contains(rel.as_str())));
        refused.insert(rel.clone(), why);
    }
    refused
}

/// Why the walk did not take a present file: inside `.git`, an unsupported document it met
/// (`noted`), or else hidden or ignored. An ignored `.odt` is never met, and stays ignored.
fn passed_over(rel: &str, noted: bool) -> Refusal {
    if in_git(rel) {
        return Refusal::InGit;
    }
    match super::files::unsupported_format(rel).filter(|_| noted) {
        Some((ext, instead)) => Refusal::Unsupported { ext, instead },
        None => Refusal::HiddenOrIgnored,
    }
}

/// A note naming the files `refused` left out of `what` ("the diff"), grouped by reason, or
/// `None` when nothing was.
pub fn left_out_note(refused: &BTreeMap<String, Refusal>, what: &str) -> Option<String> {
    const SHOWN: usize = 8;
    if refused.is_empty() {
        return None;
    }
    let mut groups: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (path, r) in refused {
        groups.entry(r.group()).or_default().push(path);
    }
    let parts: Vec<String> = groups
        .into_iter()
        .map(|(why, paths)| {
            let (first, rest) = paths.split_at(paths.len().min(SHOWN));
            let more = if rest.is_empty() { String::new() } else { format!(" and {} more", rest.len()) };
            format!("{why}: {}{more}", first.join(", "))
        })
        .collect();
    Some(format!(
        "{} left out of {what}, as docdex does not serve them (`docdex open` refuses them too): {}",
        crate::engine::fsutil::count(refused.len(), "changed file"),
        parts.join("; ")
    ))
}

fn in_git(rel: &str) -> bool {
    rel.split('/').next() == Some(".git")
}

/// Whether the walk of `root` leaves out everything under the folder `rel_dir` (repo-relative):
/// hidden, `[index] exclude`d, or ignored by the ignore files above it or git's excludes. Asked
/// of a name inside the folder, as folder-only patterns (`vendor/`) match a file's parents.
pub fn folder_left_out(root: &Path, rel_dir: &str, cfg: &IndexConfig) -> bool {
    let probe = format!("{}/docdex-folder-probe", rel_dir.trim_end_matches('/'));
    refused_by_name(root, &probe, cfg, &GitRules::load(root)).is_some()
}

/// A path not in the working tree, judged by its name, the ignore files above it and git's
/// excludes files (`git_rules`).
fn refused_by_name(root: &Path, rel: &str, cfg: &IndexConfig, git_rules: &GitRules) -> Option<Refusal> {
    if in_git(rel) {
        return Some(Refusal::InGit);
    }
    let hidden = rel.split('/').any(|c| c.starts_with('.') && c.len() > 1 && c != "..");
    if (hidden && !cfg.include_hidden)
        || excluded_by_config(root, rel, cfg)
        || ignored_by_files(root, rel)
        || excluded_by_git_rules(root, rel, git_rules)
    {
        return Some(Refusal::HiddenOrIgnored);
    }
    None
}

/// Whether git's excludes files leave out `rel` or a folder above it (a walk never enters an
/// excluded folder, so its rules are asked of each folder on the way down, as here).
fn excluded_by_git_rules(root: &Path, rel: &str, git_rules: &GitRules) -> bool {
    let path = root.join(rel);
    let mut folders: Vec<&Path> = path.ancestors().skip(1).take_while(|d| d.starts_with(root) && *d != root).collect();
    folders.reverse();
    folders.iter().any(|d| git_rules.excludes(d, true, None)) || git_rules.excludes(&path, false, None)
}

/// `[index] exclude` globs, as the walk's overrides apply them.
fn excluded_by_config(root: &Path, rel: &str, cfg: &IndexConfig) -> bool {
    if cfg.exclude.is_empty() {
        return false;
    }
    let mut b = ignore::overrides::OverrideBuilder::new(root);
    for pat in &cfg.exclude {
        let _ = b.add(&format!("!{pat}"));
    }
    b.build().is_ok_and(|o| o.matched(root.join(rel), false).is_ignore())
}

/// The ignore files of each existing directory above `rel`, the deepest deciding first.
fn ignored_by_files(root: &Path, rel: &str) -> bool {
    let path = root.join(rel);
    let mut dirs: Vec<PathBuf> =
        path.ancestors().skip(1).take_while(|d| d.starts_with(root)).map(Path::to_path_buf).collect();
    dirs.retain(|d| d.is_dir());
    let inside = super::rule_files::Inside::new(root);
    for dir in dirs {
        // A folder whose ignore files must not be read is not walked, so nothing in it is served.
        if inside.refusal(&dir).is_some() {
            return true;
        }
        let mut b = GitignoreBuilder::new(&dir);
        if dir == root {
            b.add(root.join(".git/info/exclude"));
        }
        for name in [".gitignore", ".ignore", DOCDEX_IGNORE] {
            b.add(dir.join(name));
        }
        let Ok(m) = b.build() else { continue };
        let found = m.matched_path_or_any_parents(&path, false);
        if !found.is_none() {
            return found.is_ignore();
        }
    }
    false
}

/// `532 bytes`, `4.0 KB`, `30.0 MB`, in powers of 1,024 as the indexer's skip reasons count
/// (the default limit, 10,485,760 bytes, reads "10.0 MB" everywhere).
fn human_bytes(n: u64) -> String {
    match n {
        0..1_024 => format!("{n} bytes"),
        1_024..1_048_576 => format!("{:.1} KB", n as f64 / 1024.0),
        _ => format!("{:.1} MB", n as f64 / 1_048_576.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let w = |rel: &str, text: &str| {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        };
        w(".git/HEAD", "ref: refs/heads/main\n");
        w(".env", "SECRET=1\n");
        w("src/a.rs", "fn a() {}\n");
        w("big.txt", &"x".repeat(4096));
        w(".docdexignore", "secrets/\n");
        w("secrets/prod.yaml", "k: v\n");
        dir
    }

    fn rels(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn present_files_follow_the_walk_and_the_size_limit() {
        let dir = repo();
        let cfg = IndexConfig { max_file_size_bytes: 1024, ..Default::default() };
        let got = refusals(
            dir.path(),
            &rels(&[".env", "src/a.rs", "big.txt", "secrets/prod.yaml", ".git/HEAD"]),
            &cfg,
            walk::Globs::default(),
        );
        assert_eq!(got.get(".env"), Some(&Refusal::HiddenOrIgnored));
        assert_eq!(got.get("secrets/prod.yaml"), Some(&Refusal::HiddenOrIgnored));
        assert_eq!(got.get(".git/HEAD"), Some(&Refusal::InGit));
        assert_eq!(got.get("big.txt"), Some(&Refusal::TooLarge { size: 4096, limit: 1024 }));
        assert!(!got.contains_key("src/a.rs"), "{got:?}");
    }

    #[test]
    fn an_unsupported_document_is_named_as_such_unless_it_is_ignored() {
        let dir = repo();
        std::fs::write(dir.path().join("notes.odt"), b"PK").expect("write");
        std::fs::write(dir.path().join("secrets/old.odt"), b"PK").expect("write");
        let got = refusals(
            dir.path(),
            &rels(&["notes.odt", "secrets/old.odt"]),
            &IndexConfig::default(),
            walk::Globs::default(),
        );
        let odt = Refusal::Unsupported { ext: "odt".into(), instead: "convert it to .docx or .pdf" };
        assert_eq!(got.get("notes.odt"), Some(&odt), "{got:?}");
        assert_eq!(got.get("secrets/old.odt"), Some(&Refusal::HiddenOrIgnored), "{got:?}");
    }

    #[test]
    fn missing_files_are_judged_by_their_names_and_the_ignore_files_above() {
        let dir = repo();
        let cfg = IndexConfig { exclude: vec!["*.key".into()], ..Default::default() };
        let asked = rels(&[".env.prod", "config/.npmrc", "secrets/old.yaml", "tls/server.key", "src/gone.rs"]);
        let got = refusals(dir.path(), &asked, &cfg, walk::Globs::default());
        assert_eq!(got.len(), 4, "{got:?}");
        assert!(!got.contains_key("src/gone.rs"), "{got:?}");
        let note = left_out_note(&got, "the diff").expect("a note");
        assert!(note.starts_with("4 changed files left out of the diff"), "{note}");
        assert!(note.contains(".env.prod, config/.npmrc, secrets/old.yaml, tls/server.key"), "{note}");
    }
}
