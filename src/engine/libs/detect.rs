//! Direct dependencies of a repository, pinned to the versions its lockfiles (or installed
//! packages) say: Cargo.toml + Cargo.lock; package.json + package-lock.json, yarn.lock or
//! pnpm-lock.yaml (else the version installed in node_modules); requirements*.txt (`name==version`), pyproject.toml
//! (`[project] dependencies`, `[tool.poetry.dependencies]`) + poetry.lock / uv.lock, a Python
//! manifest's exact pin (`==version`), else the version installed in the repository's
//! virtualenv, standing in for a lock entry. Only the repository root's
//! manifests are read; a dependency whose version cannot be pinned is reported in the notes and
//! left out.

mod npm_locks;

use super::types::{Dependency, Ecosystem};
use crate::engine::fsutil::{self, count};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What was found, with notes about what could not be pinned.
#[derive(Debug, Default)]
pub struct Detected {
    /// Pinned direct dependencies, sorted.
    pub deps: Vec<Dependency>,
    /// Manifests read, dependencies left out and why.
    pub notes: Vec<String>,
}

/// Reads the manifests at the root of `repo`.
pub fn detect(repo: &Path) -> Detected {
    let mut d = Detected::default();
    rust(repo, &mut d);
    node(repo, &mut d);
    python(repo, &mut d);
    if d.notes.is_empty() && d.deps.is_empty() {
        // Nothing read and nothing refused: say where docdex looked.
        d.notes.push(
            "no Cargo.toml, package.json, requirements*.txt or pyproject.toml at the repository root (only the root's manifests are read)"
                .into(),
        );
    }
    let (deps, odd): (Vec<Dependency>, Vec<Dependency>) = d.deps.drain(..).partition(plausible);
    for x in odd {
        d.notes.push(format!(
            "{} {:?}@{:?}: not a package name and version docdex can look up; left out",
            x.ecosystem.name(),
            x.name,
            x.version
        ));
    }
    d.deps = deps;
    d.deps.sort();
    d.deps.dedup_by(|a, b| a.ecosystem == b.ecosystem && a.name == b.name);
    d
}

/// Whether a dependency's name and version can name a directory and a URL safely: both become
/// path parts (the cargo registry's `<name>-<version>`, `node_modules/<name>`, the cache) and a
/// manifest is the repository's to write, so `../` or a `/` in a version would lead elsewhere.
fn plausible(d: &Dependency) -> bool {
    let part = |s: &str| {
        !s.is_empty()
            && !s.starts_with('.')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '+' | '!' | '~'))
    };
    let name_ok = match (d.ecosystem, d.name.strip_prefix('@').and_then(|n| n.split_once('/'))) {
        (Ecosystem::Npm, Some((scope, name))) => part(scope) && part(name),
        _ => part(&d.name),
    };
    name_ok && part(&d.version) && !d.name.contains("..") && !d.version.contains("..")
}

/// The most a manifest or lockfile may hold (a large monorepo's package-lock.json is tens of MB).
const MAX_MANIFEST_BYTES: u64 = 64 * 1024 * 1024;
/// An installed package's own `package.json` (its version): as other installed files are read.
const INSTALLED_MANIFEST_BYTES: u64 = 4 * 1024 * 1024;

/// The text of the root manifest `rel`, read the way docdex reads every repository file (no
/// link followed, nothing outside the repository, a FIFO or device never blocks, bounded);
/// `None` when it is absent, with a note saying why when it exists but cannot be used.
fn read_manifest(repo: &Path, rel: &str, d: &mut Detected) -> Option<String> {
    let left_out = |why: String| format!("{rel}: {why}; its dependencies are left out");
    let bytes = match fsutil::read_repo_file_capped(repo, rel, MAX_MANIFEST_BYTES) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            d.notes.push(left_out(format!("larger than {} MiB", MAX_MANIFEST_BYTES >> 20)));
            return None;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) if fsutil::is_symlink_refusal(&e) => {
            d.notes.push(left_out("a symbolic link, and docdex reads only files inside the repository".into()));
            return None;
        }
        Err(e) => {
            d.notes.push(left_out(format!("cannot be read ({e})")));
            return None;
        }
    };
    match String::from_utf8(bytes) {
        Ok(text) => Some(text),
        Err(_) => {
            d.notes.push(left_out("not UTF-8 text".into()));
            None
        }
    }
}

/// A root TOML manifest, parsed; a parse error is a note naming the file and the error.
fn read_toml(repo: &Path, rel: &str, d: &mut Detected) -> Option<toml::Table> {
    let text = read_manifest(repo, rel, d)?;
    match text.parse::<toml::Table>() {
        Ok(t) => Some(t),
        Err(e) => {
            let e = e.to_string();
            d.notes.push(format!("{rel}: not valid TOML ({}); its dependencies are left out", first_line(&e)));
            None
        }
    }
}

/// A root JSON manifest, parsed; a parse error is a note naming the file and the error.
fn read_json(repo: &Path, rel: &str, d: &mut Detected) -> Option<serde_json::Value> {
    let text = read_manifest(repo, rel, d)?;
    match serde_json::from_str(&text) {
        Ok(v) => Some(v),
        Err(e) => {
            d.notes.push(format!("{rel}: not valid JSON ({e}); its dependencies are left out"));
            None
        }
    }
}

fn first_line(s: &str) -> &str {
    s.lines().find(|l| !l.trim().is_empty()).unwrap_or(s).trim()
}

fn rust(repo: &Path, d: &mut Detected) {
    let Some(manifest) = read_toml(repo, "Cargo.toml", d) else { return };
    let mut names = BTreeSet::new();
    let mut add_table = |t: Option<&toml::Value>| {
        if let Some(t) = t.and_then(|v| v.as_table()) {
            for (k, v) in t {
                // `foo = { package = "real-name" }` renames.
                let real = v.get("package").and_then(|p| p.as_str()).unwrap_or(k);
                if v.get("path").is_none() {
                    names.insert(real.to_string());
                }
            }
        }
    };
    // `[target.'cfg(unix)'.dependencies]` and the like: platform-specific, built all the same.
    let mut add_sections = |t: &toml::Table| {
        for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
            add_table(t.get(section));
        }
    };
    add_sections(&manifest);
    let targets = manifest.get("target").and_then(|t| t.as_table()).into_iter().flat_map(|t| t.values());
    targets.filter_map(|t| t.as_table()).for_each(&mut add_sections);
    add_table(manifest.get("workspace").and_then(|w| w.get("dependencies")));
    let locked = lock_packages(repo, "Cargo.lock", d);
    d.notes.push(format!("Cargo.toml: {}", count(names.len(), "dependency")));
    for n in names {
        match locked.get(&n).and_then(|v| v.iter().next_back()) {
            Some(v) => d.deps.push(Dependency {
                ecosystem: Ecosystem::Crates,
                name: n,
                version: v.clone(),
                locked_by: "Cargo.lock".into(),
            }),
            None => d.notes.push(format!("crate {n}: not in Cargo.lock (run `cargo generate-lockfile`); left out")),
        }
    }
}

/// `[[package]] name/version` pairs of a Cargo.lock, poetry.lock or uv.lock at the root.
fn lock_packages(repo: &Path, rel: &str, d: &mut Detected) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let Some(lock) = read_toml(repo, rel, d) else { return out };
    for p in lock.get("package").and_then(|p| p.as_array()).into_iter().flatten() {
        if let (Some(n), Some(v)) = (p.get("name").and_then(|x| x.as_str()), p.get("version").and_then(|x| x.as_str()))
        {
            out.entry(n.to_string()).or_default().insert(v.to_string());
        }
    }
    out
}

/// The root npm lockfiles: package-lock.json, yarn.lock (v1 or berry), pnpm-lock.yaml.
struct NpmLocks {
    npm: Option<serde_json::Value>,
    yarn: Option<String>,
    pnpm: Option<String>,
}

impl NpmLocks {
    fn read(repo: &Path, d: &mut Detected) -> NpmLocks {
        NpmLocks {
            npm: read_json(repo, "package-lock.json", d),
            yarn: read_manifest(repo, "yarn.lock", d),
            pnpm: read_manifest(repo, "pnpm-lock.yaml", d),
        }
    }

    /// The version a lockfile locks for `name` (asked for as `range`), and which lockfile.
    fn locked(&self, name: &str, range: &str) -> Option<(String, &'static str)> {
        let npm = self.npm.as_ref().and_then(|l| {
            l.get("packages")
                .and_then(|p| p.get(format!("node_modules/{name}")))
                .and_then(|e| e.get("version"))
                .or_else(|| l.get("dependencies").and_then(|p| p.get(name)).and_then(|e| e.get("version")))
                .and_then(|v| v.as_str())
                .map(str::to_string)
        });
        npm.map(|v| (v, "package-lock.json"))
            .or_else(|| self.yarn.as_deref().and_then(|t| npm_locks::yarn(t, name, range)).map(|v| (v, "yarn.lock")))
            .or_else(|| self.pnpm.as_deref().and_then(|t| npm_locks::pnpm(t, name)).map(|v| (v, "pnpm-lock.yaml")))
    }
}

fn node(repo: &Path, d: &mut Detected) {
    let Some(pkg) = read_json(repo, "package.json", d) else { return };
    let mut names = BTreeMap::new();
    for section in ["dependencies", "devDependencies", "peerDependencies", "optionalDependencies"] {
        if let Some(o) = pkg.get(section).and_then(|v| v.as_object()) {
            names.extend(o.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())));
        }
    }
    d.notes.push(format!("package.json: {}", count(names.len(), "dependency")));
    let locks = NpmLocks::read(repo, d);
    for (n, range) in names {
        let installed = || {
            fsutil::read_regular_text(
                &repo.join("node_modules").join(&n).join("package.json"),
                Some(repo),
                INSTALLED_MANIFEST_BYTES,
            )
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v.get("version").and_then(|x| x.as_str()).map(str::to_string))
        };
        let (version, by) = match locks.locked(&n, &range) {
            Some((v, by)) => (Some(v), by),
            None => (installed(), "node_modules"),
        };
        match version {
            Some(v) => d.deps.push(Dependency { ecosystem: Ecosystem::Npm, name: n, version: v, locked_by: by.into() }),
            None => d.notes.push(format!("npm package {n}: no lockfile entry and not installed; left out")),
        }
    }
}

/// PEP 503 name normalization: lowercase, runs of `-`, `_`, `.` become `-`.
pub fn normalize_py(name: &str) -> String {
    let mut out = String::new();
    let mut sep = false;
    for c in name.trim().chars() {
        if matches!(c, '-' | '_' | '.') {
            sep = true;
        } else {
            if sep && !out.is_empty() {
                out.push('-');
            }
            sep = false;
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// The name at the start of a requirement (`requests[socks]>=2; python_version>"3"`).
fn requirement_name(req: &str) -> Option<String> {
    let req = req.trim();
    let name: String = req.chars().take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')).collect();
    // A path (`../lib`, `/opt/pkg`, `C:\pkg`), a bare URL (`https://host/pkg.whl`) or a VCS URL
    // (`git+https://host/x.git`) names no package; `name @ https://...` does.
    let rest = req[name.len()..].trim_start();
    let url = rest.starts_with(':')
        || (!rest.starts_with('@') && rest.split_whitespace().next().is_some_and(|t| t.contains("://")));
    Some(normalize_py(&name)).filter(|n| !n.is_empty() && !url && !req.starts_with(['.', '/']))
}

/// The version a requirement pins exactly: `name==1.2`, `name == 1.2`, `name[extra]==1.2;
/// marker`, `name===1.2`. None for a range, a wildcard (`==1.*`), or an `==` only in the
/// environment marker (`name; python_version=="3.8"`).
fn exact_pin(req: &str) -> Option<String> {
    let spec = req.split(';').next().unwrap_or("");
    let (_, v) = spec.split_once("==")?;
    let v = v.trim_start_matches('=').trim_start();
    let v = v.split([',', ' ', '\t', '\\']).next().unwrap_or("").trim();
    (!v.is_empty() && !v.contains('*')).then(|| v.to_string())
}

/// The version a Poetry dependency pins exactly: `"1.2.3"` or `"==1.2.3"` (Poetry reads a bare
/// version as exact), or the same as a table's `version`. None for `^1.2`, `~1.2`, `>=1`, `*`.
fn poetry_pin(value: &toml::Value) -> Option<String> {
    let v = match value {
        toml::Value::String(s) => s.as_str(),
        toml::Value::Table(t) => t.get("version")?.as_str()?,
        _ => return None,
    };
    let v = v.trim();
    let v = v.strip_prefix("==").map(str::trim).unwrap_or(v);
    let bare = v.starts_with(|c: char| c.is_ascii_digit())
        && v.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+' | '!'));
    bare.then(|| v.to_string())
}

/// A requirements line that is a pip option: `-e`/`--editable` installs a path or VCS URL,
/// which has no version to look up, so it is a note; other options (`-r`, `-c`, `--hash`,
/// `--index-url`) name no dependency.
fn editable_note(file: &str, line: &str) -> Option<String> {
    let editable = line.starts_with("-e") || line.starts_with("--editable");
    editable.then(|| {
        format!(
            "{file}: {line:?} is an editable install (a path or VCS URL), with no version docdex can look up; left out"
        )
    })
}

/// The project's site-packages directories: those of `.venv`, `venv` and `env` when they are
/// inside the repository (a cloned repository's `.venv` may be a link to anywhere), and, when
/// `activated`, of `$VIRTUAL_ENV`, the environment the user activated.
pub(super) fn site_packages(repo: &Path, activated: bool) -> Vec<PathBuf> {
    let real_repo = std::fs::canonicalize(repo).unwrap_or_else(|_| repo.to_path_buf());
    let inside = |v: &PathBuf| std::fs::canonicalize(v).is_ok_and(|r| r.starts_with(&real_repo));
    let mut venvs: Vec<PathBuf> = [".venv", "venv", "env"].iter().map(|v| repo.join(v)).filter(inside).collect();
    if let Some(v) = std::env::var_os("VIRTUAL_ENV").filter(|_| activated) {
        venvs.push(PathBuf::from(v));
    }
    let mut out = Vec::new();
    for v in venvs {
        for lib in ["lib", "lib64"] {
            let Ok(rd) = std::fs::read_dir(v.join(lib)) else { continue };
            for e in rd.flatten() {
                let sp = e.path().join("site-packages");
                if e.file_name().to_string_lossy().starts_with("python") && sp.is_dir() && !out.contains(&sp) {
                    out.push(sp);
                }
            }
        }
        let win = v.join("Lib").join("site-packages");
        if win.is_dir() && !out.contains(&win) {
            out.push(win);
        }
    }
    out
}

/// The version of each distribution installed in the repository's own virtualenvs (`.venv`,
/// `venv`, `env`; not `$VIRTUAL_ENV`, which may serve another project), by normalized name:
/// what an unpinned Python dependency falls back to, as an npm one falls back to
/// `node_modules`. Only directory names are read.
fn installed_python(repo: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for sp in site_packages(repo, false) {
        let Ok(rd) = std::fs::read_dir(&sp) else { continue };
        for e in rd.flatten() {
            let file = e.file_name().to_string_lossy().into_owned();
            let Some((name, version)) = file.strip_suffix(".dist-info").and_then(|s| s.rsplit_once('-')) else {
                continue;
            };
            out.entry(normalize_py(name)).or_insert_with(|| version.to_string());
        }
    }
    out
}

/// The root `requirements*.txt` files' packages into `names` and their `==` pins into `pinned`
/// (name -> (version, file)); false when there is none.
fn python_requirements(
    repo: &Path,
    d: &mut Detected,
    pinned: &mut BTreeMap<String, (String, String)>,
    names: &mut BTreeSet<String>,
) -> bool {
    let mut found = false;
    if let Ok(rd) = std::fs::read_dir(repo) {
        let mut files: Vec<_> = rd
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("requirements") && n.ends_with(".txt"))
            .collect();
        files.sort();
        for f in files {
            found = true;
            let text = read_manifest(repo, &f, d).unwrap_or_default();
            for line in text.lines() {
                let line = line.split('#').next().unwrap_or("").trim();
                if line.starts_with('-') {
                    d.notes.extend(editable_note(&f, line));
                    continue;
                }
                if line.is_empty() {
                    continue;
                }
                let Some(name) = requirement_name(line) else {
                    d.notes
                        .push(format!("{f}: {line:?} names no package docdex can look up (a path or URL); left out"));
                    continue;
                };
                names.insert(name.clone());
                if let Some(v) = exact_pin(line) {
                    pinned.insert(name, (v, f.clone()));
                }
            }
        }
    }
    found
}

/// `pyproject.toml`'s `[project]` and Poetry dependencies into `names`, their exact pins into
/// `pinned`; false when there is no `pyproject.toml`.
fn python_pyproject(
    repo: &Path,
    d: &mut Detected,
    pinned: &mut BTreeMap<String, (String, String)>,
    names: &mut BTreeSet<String>,
) -> bool {
    let Some(py) = read_toml(repo, "pyproject.toml", d) else { return false };
    let project = py.get("project");
    let listed = project.and_then(|p| p.get("dependencies")).and_then(|v| v.as_array()).into_iter().flatten();
    let groups = project.and_then(|p| p.get("optional-dependencies")).and_then(|v| v.as_table());
    let optional = groups.into_iter().flat_map(|g| g.values()).filter_map(|g| g.as_array()).flatten();
    for r in listed.chain(optional).filter_map(|r| r.as_str()) {
        match requirement_name(r) {
            Some(n) => {
                if let Some(v) = exact_pin(r) {
                    pinned.entry(n.clone()).or_insert((v, "pyproject.toml".into()));
                }
                names.insert(n);
            }
            None => d
                .notes
                .push(format!("pyproject.toml: {r:?} names no package docdex can look up (a path or URL); left out")),
        }
    }
    let poetry = py.get("tool").and_then(|t| t.get("poetry"));
    for section in ["dependencies", "dev-dependencies"] {
        let Some(t) = poetry.and_then(|p| p.get(section)).and_then(|v| v.as_table()) else { continue };
        for (k, value) in t.iter().filter(|(k, _)| k.as_str() != "python") {
            let n = normalize_py(k);
            if let Some(v) = poetry_pin(value) {
                pinned.entry(n.clone()).or_insert((v, "pyproject.toml".into()));
            }
            names.insert(n);
        }
    }
    true
}

/// Python dependencies: requirements files and `pyproject.toml`, versions from a lockfile, an
/// exact pin, or the repository's own virtualenv, in that order.
fn python(repo: &Path, d: &mut Detected) {
    let mut pinned: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut names = BTreeSet::new();
    let from_requirements = python_requirements(repo, d, &mut pinned, &mut names);
    let from_pyproject = python_pyproject(repo, d, &mut pinned, &mut names);
    if !from_requirements && !from_pyproject {
        return;
    }

    let mut locks: Vec<(&str, BTreeMap<String, BTreeSet<String>>)> = Vec::new();
    for lock in ["poetry.lock", "uv.lock"] {
        let entries: BTreeMap<String, BTreeSet<String>> =
            lock_packages(repo, lock, d).into_iter().map(|(k, v)| (normalize_py(&k), v)).collect();
        if !entries.is_empty() {
            locks.push((lock, entries));
        }
    }
    d.notes.push(format!("Python manifests: {}", count(names.len(), "dependency")));
    let installed = installed_python(repo);
    for n in names {
        let from_lock = locks
            .iter()
            .find_map(|(file, l)| l.get(&n).and_then(|v| v.iter().next_back()).map(|v| (v.clone(), file.to_string())));
        let from_venv = || installed.get(&n).map(|v| (v.clone(), "site-packages".to_string()));
        match from_lock.or_else(|| pinned.get(&n).cloned()).or_else(from_venv) {
            Some((v, by)) => d.deps.push(Dependency { ecosystem: Ecosystem::Pypi, name: n, version: v, locked_by: by }),
            None => d.notes.push(format!(
                "Python package {n}: not pinned (no lock entry, no ==version) and not installed in the virtualenv; left out"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn every_ecosystem_is_pinned_to_its_lockfile() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        w(r, "Cargo.toml", "[package]\nname = \"app\"\n[dependencies]\nserde = \"1\"\nlocal = { path = \"../local\" }\nrenamed = { package = \"tokio\", version = \"1\" }\n[dev-dependencies]\nunlocked = \"0.1\"\n");
        w(r, "Cargo.lock", "version = 3\n[[package]]\nname = \"serde\"\nversion = \"1.0.200\"\n[[package]]\nname = \"tokio\"\nversion = \"1.40.0\"\n");
        w(
            r,
            "package.json",
            r#"{"dependencies": {"left-pad": "^1.3.0", "lodash": "^4"}, "devDependencies": {"missing": "1"}}"#,
        );
        w(
            r,
            "package-lock.json",
            r#"{"lockfileVersion": 3, "packages": {"node_modules/left-pad": {"version": "1.3.0"}}}"#,
        );
        w(r, "node_modules/lodash/package.json", r#"{"name": "lodash", "version": "4.17.21"}"#);
        w(r, "requirements.txt", "Requests[socks]==2.31.0  # http\nflask>=2\n-r other.txt\n");
        w(r, "pyproject.toml", "[project]\ndependencies = [\"Typing_Extensions>=4\"]\n");
        w(r, "uv.lock", "version = 1\n[[package]]\nname = \"typing-extensions\"\nversion = \"4.12.2\"\n");
        let d = detect(r);
        let got: Vec<String> = d
            .deps
            .iter()
            .map(|x| format!("{}:{}@{} ({})", x.ecosystem.name(), x.name, x.version, x.locked_by))
            .collect();
        assert_eq!(
            got,
            [
                "crates:serde@1.0.200 (Cargo.lock)",
                "crates:tokio@1.40.0 (Cargo.lock)",
                "npm:left-pad@1.3.0 (package-lock.json)",
                "npm:lodash@4.17.21 (node_modules)",
                "pypi:requests@2.31.0 (requirements.txt)",
                "pypi:typing-extensions@4.12.2 (uv.lock)",
            ]
        );
        for left_out in ["crate unlocked", "npm package missing", "Python package flask"] {
            assert!(d.notes.iter().any(|n| n.starts_with(left_out)), "{left_out}: {:?}", d.notes);
        }
    }

    #[test]
    fn names_and_versions_that_would_lead_out_of_a_directory_are_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        w(r, "Cargo.toml", "[package]\nname = \"app\"\n[dependencies]\nserde = \"1\"\nevil = \"1\"\n");
        w(
            r,
            "Cargo.lock",
            "[[package]]\nname = \"serde\"\nversion = \"1.0.200\"\n[[package]]\nname = \"evil\"\nversion = \"1.0/../../../../etc\"\n",
        );
        w(r, "package.json", r#"{"dependencies": {"@types/node": "^20", "../../../etc": "1", "a/b/c": "1"}}"#);
        w(
            r,
            "package-lock.json",
            r#"{"packages": {"node_modules/@types/node": {"version": "20.11.5"}, "node_modules/../../../etc": {"version": "1.0.0"}, "node_modules/a/b/c": {"version": "1.0.0"}}}"#,
        );
        let d = detect(r);
        let got: Vec<String> = d.deps.iter().map(|x| format!("{}@{}", x.name, x.version)).collect();
        assert_eq!(got, ["serde@1.0.200", "@types/node@20.11.5"], "{:?}", d.notes);
        assert_eq!(d.notes.iter().filter(|n| n.contains("can look up")).count(), 3, "{:?}", d.notes);
    }

    #[test]
    fn odd_manifests_are_notes_and_nothing_outside_the_repository_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let r = dir.path();
        w(r, "Cargo.toml", "[package]\nname = \"app\"\n[dependencies]\nserde = \"1\"\n");
        w(r, "Cargo.lock", "this is [[ not toml");
        w(r, "package.json", r#"{"dependencies": {"left-pad": "^1.0.0""#);
        w(r, "requirements.txt", "requests==2.31.0\n../local/pkg\n/opt/wheel\nhttps://host/x.whl\n../../etc==1.0\n");
        // A requirements file that is a link to a file outside the repository is not read.
        w(outside.path(), "req.txt", "secretpkg==1.0\n");
        #[cfg(unix)]
        std::os::unix::fs::symlink(outside.path().join("req.txt"), r.join("requirements-dev.txt")).unwrap();
        // A lockfile that is a device would never end: it is refused, not read.
        #[cfg(unix)]
        std::os::unix::fs::symlink("/dev/zero", r.join("poetry.lock")).unwrap();
        let d = detect(r);
        let got: Vec<String> = d.deps.iter().map(|x| format!("{}@{}", x.name, x.version)).collect();
        assert_eq!(got, ["requests@2.31.0"], "{:?}", d.notes);
        let has = |s: &str| d.notes.iter().any(|n| n.contains(s));
        assert!(has("Cargo.lock: not valid TOML"), "{:?}", d.notes);
        assert!(has("package.json: not valid JSON"), "{:?}", d.notes);
        #[cfg(unix)]
        {
            assert!(has("requirements-dev.txt: a symbolic link"), "{:?}", d.notes);
            assert!(has("poetry.lock: a symbolic link"), "{:?}", d.notes);
        }
        assert!(!has("secretpkg") && !has("Python package :"), "{:?}", d.notes);
        assert_eq!(d.notes.iter().filter(|n| n.contains("not pinned")).count(), 0, "{:?}", d.notes);
        // Each line that names no package is a note, not dropped in silence.
        for line in ["../local/pkg", "/opt/wheel", "https://host/x.whl", "../../etc==1.0"] {
            let note =
                format!("requirements.txt: {line:?} names no package docdex can look up (a path or URL); left out");
            assert!(d.notes.contains(&note), "{note}: {:?}", d.notes);
        }
    }

    #[test]
    fn a_pyproject_entry_naming_no_package_is_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let toml = "[project]\nname = \"app\"\ndependencies = [\"requests\", \"../vendored/lib\"]\n\
                    [project.optional-dependencies]\ndev = [\"https://host/tool.whl\"]\n";
        w(r, "pyproject.toml", toml);
        let d = detect(r);
        for entry in ["../vendored/lib", "https://host/tool.whl"] {
            let note =
                format!("pyproject.toml: {entry:?} names no package docdex can look up (a path or URL); left out");
            assert!(d.notes.contains(&note), "{note}: {:?}", d.notes);
        }
        assert!(d.notes.iter().any(|n| n.contains("Python package requests: not pinned")), "{:?}", d.notes);
    }

    #[test]
    fn an_exact_pin_in_pyproject_is_a_pin_as_in_requirements() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let toml = "[project]\nname = \"app\"\ndependencies = [\"pluggy==1.7.0\", \"iniconfig == 2.1.0\", \
                    \"Rich[jupyter]===13.7.1; python_version>'3.8'\", \"packaging>=24\", \
                    \"attrs; python_version=='3.8'\", \"six==1.*\"]\n\
                    [tool.poetry.dependencies]\npython = \"^3.9\"\nclick = \"8.1.7\"\nidna = { version = \"==3.7\" }\ncertifi = \"^2024\"\n";
        w(r, "pyproject.toml", toml);
        let d = detect(r);
        let got: Vec<String> = d.deps.iter().map(|x| format!("{}@{} ({})", x.name, x.version, x.locked_by)).collect();
        assert_eq!(
            got,
            [
                "click@8.1.7 (pyproject.toml)",
                "idna@3.7 (pyproject.toml)",
                "iniconfig@2.1.0 (pyproject.toml)",
                "pluggy@1.7.0 (pyproject.toml)",
                "rich@13.7.1 (pyproject.toml)",
            ],
            "{:?}",
            d.notes
        );
        for unpinned in ["attrs", "certifi", "packaging", "six"] {
            let note = format!(
                "Python package {unpinned}: not pinned (no lock entry, no ==version) and not installed in the virtualenv; left out"
            );
            assert!(d.notes.contains(&note), "{note}: {:?}", d.notes);
        }
    }

    #[test]
    fn an_editable_or_vcs_requirement_is_a_note_not_a_package() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let req = "-e git+https://github.com/x/y.git#egg=y\n--editable ./local\ngit+https://github.com/x/z.git\n\
                   -r other.txt\n--index-url https://pypi.example/simple\nrequests==2.31.0 \\\n    --hash=sha256:abc\n\
                   pkg @ https://host/pkg-1.0.whl\n";
        w(r, "requirements.txt", req);
        let d = detect(r);
        let got: Vec<String> = d.deps.iter().map(|x| format!("{}@{}", x.name, x.version)).collect();
        assert_eq!(got, ["requests@2.31.0"], "{:?}", d.notes);
        for line in ["-e git+https://github.com/x/y.git", "--editable ./local"] {
            let note = format!(
                "requirements.txt: {line:?} is an editable install (a path or VCS URL), with no version docdex can look up; left out"
            );
            assert!(d.notes.contains(&note), "{note}: {:?}", d.notes);
        }
        let vcs = "requirements.txt: \"git+https://github.com/x/z.git\" names no package docdex can look up (a path or URL); left out";
        assert!(d.notes.contains(&vcs.to_string()), "{:?}", d.notes);
        // `git` is not taken for a package, and options other than -e are not notes.
        let has = |s: &str| d.notes.iter().any(|n| n.contains(s));
        assert!(!has("package git:") && !has("other.txt") && !has("index-url"), "{:?}", d.notes);
        assert!(has("Python package pkg: not pinned"), "{:?}", d.notes);
    }

    #[test]
    fn an_unpinned_python_dependency_takes_the_version_installed_in_the_repository_venv() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        w(
            r,
            "pyproject.toml",
            "[project]\nname = \"app\"\ndependencies = [\"packaging>=24\", \"Typing.Extensions\", \"absent\"]\n",
        );
        w(r, "uv.lock", "version = 1\n[[package]]\nname = \"typing-extensions\"\nversion = \"4.12.2\"\n");
        let sp = ".venv/lib/python3.11/site-packages";
        w(r, &format!("{sp}/packaging-24.2.dist-info/METADATA"), "Name: packaging\n");
        w(r, &format!("{sp}/typing_extensions-4.15.0.dist-info/METADATA"), "Name: typing_extensions\n");
        let d = detect(r);
        let got: Vec<String> = d.deps.iter().map(|x| format!("{}@{} ({})", x.name, x.version, x.locked_by)).collect();
        // The lockfile still wins over what happens to be installed.
        assert_eq!(got, ["packaging@24.2 (site-packages)", "typing-extensions@4.12.2 (uv.lock)"], "{:?}", d.notes);
        assert!(d.notes.iter().any(|n| n.starts_with("Python package absent: not pinned")), "{:?}", d.notes);
    }
}
