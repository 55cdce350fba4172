//! Resolution of raw imports to repository files, one module per language family.
//!
//! A [`Resolver`] is built once per graph build from the list of repository files and the
//! manifests found among them (`Cargo.toml`, `tsconfig.json`/`jsconfig.json`, `package.json`,
//! `go.mod`, `composer.json`, `pubspec.yaml`, `Package.swift`) plus the package and namespace
//! declarations the extractors recorded. Each import then resolves to repository files (with a
//! method and confidence), to an external package, or to a reason it could not be found.
//! Nothing is bound to a repository file by its name alone: external packages stay external.

mod cfamily;
mod csharp;
mod dart;
mod go;
mod js;
mod jvm;
mod lua;
mod php;
mod pyroots;
mod python;
mod ruby;
mod rust;
mod swift;

use super::imports::RawImport;
use super::types::{FileImports, Method};
use super::Lang;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::path::Path;
use std::sync::Arc;

/// A fast non-cryptographic hasher (the multiply-rotate hash rustc uses) for the path maps that
/// every import probes several times; repository paths are not adversarial input.
#[derive(Debug, Default, Clone, Copy)]
pub struct PathHasher(u64);

impl Hasher for PathHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(c);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.write(&[i]);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A `HashSet` keyed by paths, hashed with [`PathHasher`].
pub type PathSet<T> = HashSet<T, BuildHasherDefault<PathHasher>>;
/// A `HashMap` keyed by paths, hashed with [`PathHasher`].
pub type PathMap<K, V> = HashMap<K, V, BuildHasherDefault<PathHasher>>;

/// A repository file an import resolves to.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// Repo-relative path.
    pub path: String,
    /// How it was found.
    pub method: Method,
    /// 0..1.
    pub confidence: f32,
}

impl Target {
    /// Found by the language's own rules.
    pub fn exact(path: impl Into<String>) -> Target {
        Target { path: path.into(), method: Method::Static, confidence: 1.0 }
    }

    /// Found by a convention.
    pub fn heuristic(path: impl Into<String>, confidence: f32) -> Target {
        Target { path: path.into(), method: Method::Heuristic, confidence }
    }
}

/// What an import resolved to.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolution {
    /// Repository files (never empty).
    Files(Vec<Target>),
    /// An external package (standard library or third party), by name.
    External(String),
    /// Should be in the repository but is not; the reason says what was tried.
    NotFound(String),
}

/// Every file of the repository (code or not), indexed for lookups.
#[derive(Debug, Default)]
pub struct RepoFiles {
    files: PathSet<String>,
    /// Directory → the files directly inside it.
    dirs: PathMap<String, Vec<String>>,
    /// Directory → its subdirectories.
    subdirs: PathMap<String, Vec<String>>,
}

impl RepoFiles {
    /// Indexes repo-relative paths.
    pub fn new<'a>(paths: impl IntoIterator<Item = &'a String>) -> RepoFiles {
        let mut out = RepoFiles::default();
        for p in paths {
            if !out.files.insert(p.clone()) {
                continue;
            }
            let dir = parent(p);
            out.ensure_dir(dir);
            if let Some(v) = out.dirs.get_mut(dir) {
                v.push(p.clone());
            }
        }
        for v in out.dirs.values_mut().chain(out.subdirs.values_mut()) {
            v.sort();
        }
        out
    }

    /// Registers a directory and its ancestors.
    fn ensure_dir(&mut self, dir: &str) {
        let mut d = dir;
        while !self.dirs.contains_key(d) {
            self.dirs.insert(d.to_string(), Vec::new());
            if d.is_empty() {
                break;
            }
            let up = parent(d);
            self.subdirs.entry(up.to_string()).or_default().push(d.to_string());
            d = up;
        }
    }

    /// True if the path is a repository file.
    pub fn contains(&self, path: &str) -> bool {
        self.files.contains(path)
    }

    /// True if some repository file lives under this directory (`""` is the root).
    pub fn is_dir(&self, dir: &str) -> bool {
        self.dirs.contains_key(dir)
    }

    /// Files directly inside a directory, sorted.
    pub fn files_in(&self, dir: &str) -> &[String] {
        self.dirs.get(dir).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Files anywhere under a directory, sorted.
    pub fn files_under(&self, dir: &str) -> Vec<&String> {
        let prefix = if dir.is_empty() { String::new() } else { format!("{dir}/") };
        let mut out: Vec<&String> = self.files.iter().filter(|f| f.starts_with(&prefix)).collect();
        out.sort();
        out
    }

    /// Every file, unordered.
    pub fn iter(&self) -> impl Iterator<Item = &String> {
        self.files.iter()
    }

    /// Every directory (`""` included), unordered.
    pub fn dirs(&self) -> impl Iterator<Item = &String> {
        self.dirs.keys()
    }

    /// The subdirectories of a directory, sorted.
    pub fn subdirs(&self, dir: &str) -> &[String] {
        self.subdirs.get(dir).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The first of `candidates` that is a file.
    pub fn first_existing<'a>(&self, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
        candidates.into_iter().find(|c| self.contains(c)).map(str::to_string)
    }

    /// The first of `base` + each suffix that is a file (one buffer, no allocation per probe).
    pub fn first_with_suffix(&self, base: &str, suffixes: &[&str]) -> Option<String> {
        let mut probe = String::with_capacity(base.len() + 16);
        for s in suffixes {
            probe.clear();
            probe.push_str(base);
            probe.push_str(s);
            if self.files.contains(probe.as_str()) {
                return Some(probe);
            }
        }
        None
    }
}

/// The directory of a repo-relative path (`""` for the root).
pub fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(i) => &path[..i],
        None => "",
    }
}

/// The last path component.
pub fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The file name without its (last) extension.
pub fn stem(path: &str) -> &str {
    let name = file_name(path);
    match name.rfind('.') {
        Some(i) if i > 0 => &name[..i],
        _ => name,
    }
}

/// `dir` joined with a relative path, normalized; `None` if it climbs out of the repository.
pub fn join(dir: &str, rel: &str) -> Option<String> {
    let mut out: Vec<&str> = if rel.starts_with('/') || dir.is_empty() { Vec::new() } else { dir.split('/').collect() };
    for seg in rel.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            s => out.push(s),
        }
    }
    Some(out.join("/"))
}

/// Everything resolution needs to know about the repository, built once per graph build.
pub struct Resolver {
    files: Arc<RepoFiles>,
    rust: Option<rust::RustIndex>,
    js: Option<js::JsIndex>,
    python: Option<python::PythonIndex>,
    go: Option<go::GoIndex>,
    jvm: Option<jvm::JvmIndex>,
    csharp: Option<csharp::CsIndex>,
    cfamily: Option<cfamily::IncludeIndex>,
    php: Option<php::PhpIndex>,
    ruby: Option<ruby::RubyIndex>,
    lua: Option<lua::LuaIndex>,
    dart: Option<dart::DartIndex>,
    swift: Option<swift::SwiftIndex>,
    warnings: Vec<String>,
}

impl Resolver {
    /// Builds the per-language indexes for the languages present in `files`.
    pub fn new(root: &Path, files: &[FileImports], known: &BTreeSet<String>) -> Resolver {
        let repo = RepoFiles::new(known.iter().chain(files.iter().map(|f| &f.path)));
        Self::over(root, files, Arc::new(repo))
    }

    /// [`Self::new`] over an already indexed file set (which must list every path of `files`):
    /// the gatekeeper keeps one per index generation instead of rebuilding it per request.
    pub fn over(root: &Path, files: &[FileImports], repo: Arc<RepoFiles>) -> Resolver {
        let langs: HashSet<Lang> = files.iter().map(|f| f.lang).collect();
        let has = |ls: &[Lang]| ls.iter().any(|l| langs.contains(l));
        let mut warnings = Vec::new();
        let manifests = Manifests { root, files: &repo };
        Resolver {
            rust: has(&[Lang::Rust]).then(|| rust::RustIndex::new(&manifests, files, &mut warnings)),
            js: has(&[Lang::JavaScript, Lang::TypeScript, Lang::Tsx])
                .then(|| js::JsIndex::new(&manifests, &mut warnings)),
            python: has(&[Lang::Python]).then(|| python::PythonIndex::new(root, &repo)),
            go: has(&[Lang::Go]).then(|| go::GoIndex::new(&manifests)),
            jvm: has(&[Lang::Java, Lang::Kotlin]).then(|| jvm::JvmIndex::new(files)),
            csharp: has(&[Lang::CSharp]).then(|| csharp::CsIndex::new(files)),
            cfamily: has(&[Lang::C, Lang::Cpp]).then(|| cfamily::IncludeIndex::new(&repo)),
            php: has(&[Lang::Php]).then(|| php::PhpIndex::new(&manifests, files, &mut warnings)),
            ruby: has(&[Lang::Ruby]).then(|| ruby::RubyIndex::new(&repo)),
            lua: has(&[Lang::Lua]).then(|| lua::LuaIndex::new(&repo)),
            dart: has(&[Lang::Dart]).then(|| dart::DartIndex::new(&manifests)),
            swift: has(&[Lang::Swift]).then(|| swift::SwiftIndex::new(&repo)),
            files: repo,
            warnings,
        }
    }

    /// Problems found while reading manifests.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The repository's files.
    pub fn files(&self) -> &RepoFiles {
        &self.files
    }

    /// Resolves one specifier of an import of `file` (the import's `spec` or a candidate).
    pub fn resolve(&self, file: &FileImports, imp: &RawImport, spec: &str) -> Resolution {
        let res = self.resolve_lang(file, imp, spec);
        match res {
            Resolution::Files(t) if t.is_empty() => Resolution::NotFound(format!("no repository file matches {spec}")),
            other => other,
        }
    }

    fn resolve_lang(&self, file: &FileImports, imp: &RawImport, spec: &str) -> Resolution {
        let missing = || Resolution::NotFound("internal: no index for this language".to_string());
        let q = Query { file, imp, spec, files: &self.files };
        match file.lang {
            Lang::Rust => self.rust.as_ref().map_or_else(missing, |i| i.resolve(&q)),
            Lang::JavaScript | Lang::TypeScript | Lang::Tsx => self.js.as_ref().map_or_else(missing, |i| i.resolve(&q)),
            Lang::Python => self.python.as_ref().map_or_else(missing, |i| i.resolve(&q)),
            Lang::Go => self.go.as_ref().map_or_else(missing, |i| i.resolve(&q)),
            Lang::Java | Lang::Kotlin => self.jvm.as_ref().map_or_else(missing, |i| i.resolve(&q)),
            Lang::CSharp => self.csharp.as_ref().map_or_else(missing, |i| i.resolve(&q)),
            Lang::C | Lang::Cpp => self.cfamily.as_ref().map_or_else(missing, |i| i.resolve(&q)),
            Lang::Php => self.php.as_ref().map_or_else(missing, |i| i.resolve(&q)),
            Lang::Ruby => self.ruby.as_ref().map_or_else(missing, |i| i.resolve(&q)),
            Lang::Lua => self.lua.as_ref().map_or_else(missing, |i| i.resolve(&q)),
            Lang::Dart => self.dart.as_ref().map_or_else(missing, |i| i.resolve(&q)),
            Lang::Swift => self.swift.as_ref().map_or_else(missing, |i| i.resolve(&q)),
        }
    }
}

/// One lookup: which file imports what.
pub(crate) struct Query<'a> {
    pub file: &'a FileImports,
    pub imp: &'a RawImport,
    pub spec: &'a str,
    pub files: &'a RepoFiles,
}

impl Query<'_> {
    /// The importing file's directory.
    pub fn dir(&self) -> &str {
        parent(&self.file.path)
    }

    /// `spec` relative to the importing file's directory, if it stays inside the repository.
    pub fn relative(&self, spec: &str) -> Option<String> {
        join(self.dir(), spec)
    }
}

/// Manifest files found among the repository files, read from disk on demand.
pub(crate) struct Manifests<'a> {
    pub root: &'a Path,
    pub files: &'a RepoFiles,
}

impl Manifests<'_> {
    /// Repo-relative paths of every file with this name, sorted (skipping dependency folders).
    pub fn named(&self, name: &str) -> Vec<String> {
        let mut out: Vec<String> = self
            .files
            .iter()
            .filter(|p| file_name(p) == name && !p.split('/').any(|s| s == "node_modules" || s == "vendor"))
            .cloned()
            .collect();
        out.sort();
        out
    }

    /// A manifest's text; a read failure becomes a warning.
    pub fn read(&self, rel: &str, warnings: &mut Vec<String>) -> Option<String> {
        match crate::engine::fsutil::read_repo_file(self.root, rel).map(crate::engine::fsutil::decode_text_owned) {
            Ok(t) => Some(t),
            Err(e) => {
                warnings.push(format!("cannot read {rel}: {e}"));
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_join_and_split() {
        assert_eq!(join("a/b", "../c"), Some("a/c".into()));
        assert_eq!(join("a", "./x/y"), Some("a/x/y".into()));
        assert_eq!(join("", "x"), Some("x".into()));
        assert_eq!(join("a", "../../x"), None);
        assert_eq!(parent("a/b.rs"), "a");
        assert_eq!(parent("b.rs"), "");
        assert_eq!(stem("a/b.test.ts"), "b.test");
        assert_eq!(stem("a/.hidden"), ".hidden");
    }

    #[test]
    fn repo_files_know_their_directories() {
        let paths: Vec<String> = vec!["a/b/c.rs".into(), "a/d.rs".into(), "e.rs".into()];
        let f = RepoFiles::new(paths.iter());
        assert!(f.is_dir("a") && f.is_dir("a/b") && f.is_dir(""));
        assert!(!f.is_dir("a/b/c.rs"));
        assert_eq!(f.files_in("a"), &["a/d.rs".to_string()]);
        assert_eq!(f.files_under("a").len(), 2);
        assert_eq!(f.subdirs("a"), &["a/b".to_string()]);
        assert_eq!(f.subdirs(""), &["a".to_string()]);
    }
}
