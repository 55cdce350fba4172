//! Extra source folders registered into a repository's index (`docdex add`): a docs folder
//! outside the repo, a notes directory. They are listed in `state_dir/sources.json`; their
//! files are indexed under the key `//<name>/<path inside the source>` (a repo-relative path
//! never starts with `//`), and every read of such a key goes through the one opener beneath
//! that source's root, so nothing outside a registered root is ever read.

use crate::engine::repos::RepoRef;
use crate::error::{Error, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// `docdex add`: a folder to register into a repository's index.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct AddSourceRequest {
    /// The folder (absolute, or relative to the current directory).
    pub path: PathBuf,
    /// Its name in hits (default: the folder's name, made unique).
    #[serde(default)]
    pub name: Option<String>,
    /// Only files matching one of these globs (relative to the folder).
    #[serde(default)]
    pub include: Vec<String>,
    /// Files matching these globs are left out.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Not followed by the watcher.
    #[serde(default)]
    pub no_watch: bool,
}

/// A registered source with what the index holds from it.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SourceInfo {
    /// The source.
    #[serde(flatten)]
    pub source: Source,
    /// Files indexed from it.
    pub files: u64,
    /// Their size on disk, in bytes.
    pub bytes: u64,
    /// Indexed files per format (language name: `markdown`, `pdf`, ...).
    pub formats: std::collections::BTreeMap<String, u64>,
    /// Files passed over (notes in `docdex status`).
    pub skipped: u64,
    /// The folder is gone (deleted, moved, unmounted, or its path now leads elsewhere through
    /// a link): nothing is indexed from it until it is back, and what was indexed is kept.
    #[serde(default)]
    pub missing: bool,
    /// What became of it, when missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_why: Option<String>,
}

/// What starts a source key.
pub const PREFIX: &str = "//";

/// One registered source folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Source {
    /// Short name, unique in the repo: hits from the source are keyed `//<name>/...`.
    pub name: String,
    /// Canonical absolute root.
    pub path: PathBuf,
    /// Globs (relative to the root) a file must match to be indexed; empty means all.
    #[serde(default)]
    pub include: Vec<String>,
    /// Globs excluded on top of the ignore files.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Whether the watcher follows changes under it.
    #[serde(default = "yes")]
    pub watch: bool,
}

fn yes() -> bool {
    true
}

fn file(state_dir: &Path) -> PathBuf {
    state_dir.join("sources.json")
}

/// Which version of the source list is saved: `sources.json`'s modification time in
/// nanoseconds (0 without one). A watcher records the version it has indexed
/// (`StatusData::sources_version`), so `docdex add` can tell whether it has taken the new list in.
pub fn saved_version(state_dir: &Path) -> u64 {
    std::fs::metadata(file(state_dir))
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The repo's registered sources (none when the file is missing or unreadable).
pub fn load(state_dir: &Path) -> Vec<Source> {
    std::fs::read(file(state_dir)).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default()
}

/// Why a folder may not be a source, or `None`: the rule a repository root obeys (not `/`, the
/// home directory or above it, a system directory such as `/etc`, a credentials folder such as
/// `~/.ssh`), since a source's files are indexed and served like the repository's own.
pub fn refusal(real: &Path, docdex_home: &Path) -> Option<String> {
    let user_home = std::env::var_os("HOME").map(PathBuf::from);
    match crate::engine::repos::check_servable_root(real, user_home.as_deref(), docdex_home) {
        Err(Error::UnsafeRoot { reason, .. }) => Some(reason),
        _ => None,
    }
}

/// The sources an index run walks and a watcher watches: those registered, less any
/// [`refusal`] names (one registered before `docdex add` checked), which is logged and left
/// out, so its files leave the index; `remove-source` still takes it off the list.
pub fn load_indexable(state_dir: &Path) -> Vec<Source> {
    load(state_dir)
        .into_iter()
        .filter(|s| match refusal(&s.path, state_dir) {
            Some(why) => {
                tracing::warn!(source = %s.name, path = %s.path.display(), "source not indexed: {why}");
                false
            }
            None => true,
        })
        .collect()
}

/// Whether a registered source's folder is not there as registered: deleted, moved away, on a
/// disk that is not mounted, or its path now leading elsewhere through a link (the folder, or
/// a folder above it, replaced by a link to `/etc` had `/etc` indexed and served). Its
/// registration and its indexed files are kept until the user removes it.
pub fn is_missing(source: &Source) -> bool {
    why_missing(source).is_some()
}

/// What became of a missing source's folder (see [`is_missing`]); `None` when it is there.
pub fn why_missing(source: &Source) -> Option<String> {
    match std::fs::canonicalize(&source.path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some("is gone (moved, deleted or not mounted)".into()),
        Err(e) => Some(format!("cannot be reached: {e}")),
        Ok(real) if real != source.path => Some(format!("now leads to {} through a link", real.display())),
        Ok(real) if !real.is_dir() => Some("is not a folder any more".into()),
        Ok(_) => None,
    }
}

/// The missing sources among `sources`: each one's key prefix and what to say of it, counting
/// the files `manifest` holds from it.
pub fn missing(sources: &[Source], entries_under: impl Fn(&str) -> usize) -> Vec<(String, String)> {
    let missing = sources.iter().filter(|s| is_missing(s));
    missing
        .map(|s| {
            let prefix = key(&s.name, "");
            let files = entries_under(&prefix);
            let warning = missing_warning(s, files);
            (prefix, warning)
        })
        .collect()
}

/// What an index run and `docdex status` say of a missing source holding `files` indexed files.
fn missing_warning(source: &Source, files: usize) -> String {
    format!(
        "source {} is missing: {} {}; {} indexed from it {} kept as {} \
         (mount or restore the folder, or `docdex remove-source {}`)",
        source.name,
        source.path.display(),
        why_missing(source).unwrap_or_default(),
        if files == 1 { "the 1 file".to_string() } else { format!("the {files} files") },
        if files == 1 { "is" } else { "are" },
        if files == 1 { "it was" } else { "they were" },
        source.name
    )
}

/// Saves the list atomically.
pub fn save(state_dir: &Path, sources: &[Source]) -> Result<()> {
    let json = serde_json::to_vec_pretty(sources).unwrap_or_default();
    crate::engine::fsutil::write_atomic(&file(state_dir), &json)
}

/// The index key of a file inside a source.
pub fn key(name: &str, rel: &str) -> String {
    format!("{PREFIX}{name}/{rel}")
}

/// A source key's name and path inside the source; `None` for a repo-relative path.
pub fn split(key: &str) -> Option<(&str, &str)> {
    key.strip_prefix(PREFIX)?.split_once('/')
}

/// The error for a `//name/...` path (`given`) naming no source of the repository: which
/// sources it has, or how to register one. Search said so; get / open said only "no source
/// named name in R".
pub fn unknown(given: &str, name: &str, sources: &[Source]) -> Error {
    let names: Vec<&str> = sources.iter().map(|s| s.name.as_str()).collect();
    Error::BadRequest(match names.is_empty() {
        true => format!("{given}: the repository has no registered source named {name:?} (it has none; `docdex add PATH` registers one)"),
        false => format!("{given}: the repository has no registered source named {name:?}; its sources are {}", names.join(", ")),
    })
}

/// A search's path prefix that names a registered source (`//notes/`, `//notes/care`), as its
/// files' keys start: `None` for a prefix that is not a source key (a repository path). Hits
/// from a source carry `//name/...` paths, and the prefix was refused as outside the
/// repository, so a search could not be narrowed to a source. The path inside the source is
/// resolved as a repository path is (`..` may not climb out of it); a name no source has is
/// refused, naming those there are.
pub fn prefix(repo: &RepoRef, given: &str) -> Result<Option<String>> {
    let given = given.trim();
    if Path::new(given).is_absolute() && !given.starts_with(PREFIX) {
        return Ok(absolute_prefix(repo, given));
    }
    let Some(rest) = given.strip_prefix(PREFIX) else { return Ok(None) };
    crate::engine::repos::check_given_path(given)?;
    let (name, inside) = rest.split_once('/').unwrap_or((rest, ""));
    let sources = load(&repo.state_dir);
    let Some(source) = sources.iter().find(|s| s.name == name) else {
        return Err(unknown(given, name, &sources));
    };
    let outside =
        || Error::OutsideSource { path: given.to_string(), source_name: name.to_string(), root: source.path.clone() };
    let inside_key = crate::engine::code::resolve::join("", inside).ok_or_else(outside)?;
    let dir = inside_key.is_empty() || given.ends_with('/');
    let rel = if dir && !inside_key.is_empty() { format!("{inside_key}/") } else { inside_key };
    Ok(Some(key(name, &rel)))
}

/// An absolute path inside a registered source's folder as a search prefix of its keys
/// (`/home/me/notes/care` → `//notes/care`), as `get` takes such a path; it was refused as
/// outside the repository. `None` for a path in no source.
fn absolute_prefix(repo: &RepoRef, given: &str) -> Option<String> {
    let real = crate::engine::repos::resolve_existing(Path::new(given));
    let sources = load(&repo.state_dir);
    let source = sources.iter().find(|s| real.starts_with(&s.path))?;
    let rel = crate::engine::index::walk::rel_path(&source.path, &real);
    let dir = !rel.is_empty() && (given.ends_with('/') || real.is_dir());
    Some(key(&source.name, &if dir { format!("{rel}/") } else { rel }))
}

/// `given` as a path of the repository's own files ([`crate::engine::repos::repo_relative`]),
/// for what reads only those: symbols, impact and run-tests. A registered source's file is
/// refused as [`text_only`] says, where it was "outside the repository".
pub fn code_path(repo: &RepoRef, given: &str) -> Result<String> {
    crate::engine::repos::repo_relative(&repo.root, given).map_err(|e| or_text_only(repo, given, e))
}

/// `err`, unless it is "outside the repository" for a path in a registered source: then
/// [`text_only`]'s refusal, which says why.
pub fn or_text_only(repo: &RepoRef, given: &str, err: Error) -> Error {
    match err {
        Error::OutsideRepo { .. } => text_only(repo, given).unwrap_or(err),
        other => other,
    }
}

/// The refusal of a path in a registered source (`//notes/pool.md`, or an absolute path inside
/// a source's folder) given where only the repository's own files are taken: sources are
/// indexed as text only, so search and get/open read them, while symbols, impact and
/// run-tests do not ([`Error::SourceTextOnly`]). `None` when `given` lies in no registered
/// source (the caller's "outside the repository" stands).
pub fn text_only(repo: &RepoRef, given: &str) -> Option<Error> {
    let given = given.trim();
    let sources = load(&repo.state_dir);
    // `//notes/pool.md`, or `//notes` for the whole source.
    let name = split(given).map(|(name, _)| name).or_else(|| given.strip_prefix(PREFIX));
    let source = match name {
        Some(name) => sources.iter().find(|s| s.name == name)?,
        None if Path::new(given).is_absolute() => {
            let real = crate::engine::repos::resolve_existing(Path::new(given));
            sources.iter().find(|s| real.starts_with(&s.path))?
        }
        None => return None,
    };
    Some(Error::SourceTextOnly { path: given.to_string(), source_name: source.name.clone() })
}

/// The root and root-relative path a key is read from: the repository's, or a registered
/// source's. A key naming no registered source, or a missing one (its path may now lead
/// anywhere through a link), is an error: it cannot be read.
pub fn locate(repo: &RepoRef, sources: &[Source], key: &str) -> std::io::Result<(PathBuf, String)> {
    match split(key) {
        None if key.starts_with(PREFIX) => Err(std::io::Error::new(std::io::ErrorKind::NotFound, "bad source key")),
        None => Ok((repo.root.clone(), key.to_string())),
        Some((name, rel)) => match sources.iter().find(|s| s.name == name) {
            None => Err(std::io::Error::new(std::io::ErrorKind::NotFound, format!("no source named {name}"))),
            Some(s) => match why_missing(s) {
                Some(why) => Err(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("the source {name} is missing: {} {why}", s.path.display()),
                )),
                None => Ok((s.path.clone(), rel.to_string())),
            },
        },
    }
}

/// Whether `key` names a file of a registered source that is missing from disk.
pub fn in_missing_source(sources: &[Source], key: &str) -> bool {
    split(key).is_some_and(|(name, _)| sources.iter().any(|s| s.name == name && is_missing(s)))
}

/// Reads a whole file by its index key, beneath its root (no link followed).
pub fn read(repo: &RepoRef, key: &str) -> std::io::Result<Vec<u8>> {
    let (root, rel) = locate(repo, &load(&repo.state_dir), key)?;
    crate::engine::fsutil::read_repo_file(&root, &rel)
}

/// The key of an absolute path: repo-relative inside the repo, `//name/...` inside a source,
/// `None` anywhere else.
pub fn key_of(repo: &RepoRef, sources: &[Source], abs: &Path) -> Option<String> {
    if let Some(s) = sources.iter().find(|s| abs.starts_with(&s.path)) {
        return Some(key(&s.name, &crate::engine::index::walk::rel_path(&s.path, abs)));
    }
    abs.starts_with(&repo.root).then(|| crate::engine::index::walk::rel_path(&repo.root, abs))
}

/// A new source for `path`: canonical, a directory, outside the repository and docdex's home
/// and not overlapping another source; named after its folder (made unique) unless `name`.
pub fn make(repo: &RepoRef, existing: &[Source], req: &AddSourceRequest, home: &Path) -> Result<Source> {
    let (path, name) = (req.path.as_path(), req.name.as_deref());
    let (include, exclude, watch) = (req.include.clone(), req.exclude.clone(), !req.no_watch);
    let real =
        std::fs::canonicalize(path).map_err(|e| Error::BadRequest(format!("cannot add {}: {e}", path.display())))?;
    if !real.is_dir() {
        return Err(Error::BadRequest(format!("{} is not a directory: a source is a folder", path.display())));
    }
    if let Some(why) = refusal(&real, home) {
        return Err(Error::BadRequest(format!(
            "refusing to add {} as a source: {why}; add the folder that holds the documents",
            real.display()
        )));
    }
    if real.starts_with(&repo.root) {
        return Err(Error::BadRequest(format!(
            "{} is inside the repository, which is indexed already (use .docdexignore to choose what is)",
            real.display()
        )));
    }
    if repo.root.starts_with(&real) {
        return Err(Error::BadRequest(format!("{} contains the repository; add a folder beside it", real.display())));
    }
    let home = std::fs::canonicalize(home).unwrap_or_else(|_| home.to_path_buf());
    if real.starts_with(&home) || home.starts_with(&real) {
        return Err(Error::BadRequest(format!("{} overlaps docdex's own state ({})", real.display(), home.display())));
    }
    if let Some(s) = existing.iter().find(|s| s.path == real) {
        return Err(Error::BadRequest(format!(
            "{} is already added, as the source {}; `docdex sources` lists them, `docdex remove-source {}` takes it out",
            real.display(),
            s.name,
            s.name
        )));
    }
    if let Some(s) = existing.iter().find(|s| real.starts_with(&s.path) || s.path.starts_with(&real)) {
        return Err(Error::BadRequest(format!(
            "{} overlaps the source {} ({})",
            real.display(),
            s.name,
            s.path.display()
        )));
    }
    for glob in include.iter().chain(&exclude) {
        globset_check(glob)?;
    }
    let base: String = match name {
        Some(n) => n.to_string(),
        None => real.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "source".into()),
    };
    let base: String =
        base.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' }).collect();
    let usable = !base.trim_matches(&['.', '-'][..]).is_empty();
    // A name typed with --name is used as typed or refused: `..`, `//` or `a/b` became `source`
    // or `a-b` with no word but the printed name.
    if let Some(n) = name.filter(|n| !usable || *n != base) {
        return Err(Error::BadRequest(format!(
            "--name {n:?} cannot name a source (its hits are keyed //NAME/...): use letters, digits, `.`, `_` and `-`, not only dots and dashes"
        )));
    }
    let base = if usable { base } else { "source".to_string() };
    if name.is_some() && existing.iter().any(|s| s.name == base) {
        return Err(Error::BadRequest(format!("a source named {base} exists already")));
    }
    let mut unique = base.clone();
    let mut n = 2;
    while existing.iter().any(|s| s.name == unique) {
        unique = format!("{base}-{n}");
        n += 1;
    }
    Ok(Source { name: unique, path: real, include, exclude, watch })
}

fn globset_check(glob: &str) -> Result<()> {
    ignore::overrides::OverrideBuilder::new("/")
        .add(glob)
        .map(|_| ())
        .map_err(|e| Error::BadRequest(format!("bad glob {glob:?}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip() {
        assert_eq!(key("notes", "a/b.md"), "//notes/a/b.md");
        assert_eq!(split("//notes/a/b.md"), Some(("notes", "a/b.md")));
        assert_eq!(split("src/main.rs"), None);
        let repo = RepoRef::new("/r".into(), "f".into(), "/s".into());
        let srcs =
            vec![Source { name: "n".into(), path: "/docs".into(), include: vec![], exclude: vec![], watch: true }];
        let err = locate(&repo, &srcs, "//n/x.md").unwrap_err();
        assert_eq!(err.to_string(), "the source n is missing: /docs is gone (moved, deleted or not mounted)");
        assert!(locate(&repo, &srcs, "//other/x.md").is_err());
        assert_eq!(key_of(&repo, &srcs, Path::new("/docs/a/x.md")).as_deref(), Some("//n/a/x.md"));
        assert_eq!(key_of(&repo, &srcs, Path::new("/r/src/x.rs")).as_deref(), Some("src/x.rs"));
        assert_eq!(key_of(&repo, &srcs, Path::new("/etc/passwd")), None);
    }

    #[test]
    fn a_name_given_is_used_as_typed_or_refused() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        let (repo_root, notes, home) = (real.join("r"), real.join("my notes"), real.join("home"));
        for d in [&repo_root, &notes] {
            std::fs::create_dir(d).unwrap();
        }
        let repo = RepoRef::new(repo_root, "f".into(), real.join("s"));
        let req = |name: Option<&str>| AddSourceRequest {
            path: notes.clone(),
            name: name.map(str::to_string),
            ..Default::default()
        };
        for bad in ["..", ".", "//", "a/b", "é", "--"] {
            let err = make(&repo, &[], &req(Some(bad)), &home).unwrap_err().to_string();
            assert!(err.contains("cannot name a source"), "{bad}: {err}");
        }
        assert_eq!(make(&repo, &[], &req(Some("field-notes_2.0")), &home).unwrap().name, "field-notes_2.0");
        // A folder's own name is made usable: it was never typed as a name.
        assert_eq!(make(&repo, &[], &req(None), &home).unwrap().name, "my-notes");
    }

    #[test]
    fn a_source_is_read_only_while_its_path_is_its_folder() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        let notes = real.join("notes");
        std::fs::create_dir(&notes).unwrap();
        let repo = RepoRef::new("/r".into(), "f".into(), "/s".into());
        let srcs =
            vec![Source { name: "n".into(), path: notes.clone(), include: vec![], exclude: vec![], watch: true }];
        assert_eq!(locate(&repo, &srcs, "//n/x.md").unwrap(), (notes.clone(), "x.md".to_string()));
        assert!(!is_missing(&srcs[0]));
        std::fs::remove_dir(&notes).unwrap();
        std::os::unix::fs::symlink("/etc", &notes).unwrap();
        assert_eq!(why_missing(&srcs[0]).as_deref(), Some("now leads to /etc through a link"));
        assert!(locate(&repo, &srcs, "//n/passwd").is_err());
    }
}
