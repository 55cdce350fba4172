//! Direct dependencies of a repository, pinned to the versions its lockfiles (or installed
//! packages) say: Cargo.toml + Cargo.lock (else an exact `=1.2.3` requirement); package.json +
//! package-lock.json, yarn.lock or pnpm-lock.yaml (else the version installed in
//! node_modules, and a note when what is installed is not what is locked or asked for);
//! requirements*.txt (`name==version`), pyproject.toml (`[project]` dependencies and optional
//! ones, PEP 735 `[dependency-groups]`, Poetry's dependencies, dev-dependencies and groups) +
//! poetry.lock / uv.lock, a Python manifest's exact pin (`==version`), else the version
//! installed in the repository's virtualenv, standing in for a lock entry. Only the repository
//! root's manifests are read; a dependency whose version cannot be pinned is left out, and the
//! notes say so once per reason; a manifest of an ecosystem docdex does not read (go.mod,
//! Gemfile, ...) is named in the notes.

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
    /// Dependencies left out, by reason: said as one note per reason once all are read.
    left_out: Vec<LeftOut>,
}

/// Dependencies left out for one reason. A repository of 80 unlocked crates printed 80 notes
/// that buried everything else; one line per reason, with a count, a few names and what to
/// do, says the same.
#[derive(Debug)]
struct LeftOut {
    /// What each is, for the count (`crate`, `npm package`).
    noun: String,
    /// Why they are left out (`not in Cargo.lock`).
    why: String,
    /// What the user can do about it.
    fix: Option<&'static str>,
    /// Their names, in the order found.
    names: Vec<String>,
}

/// Names a left-out note lists before "and N more".
const LEFT_OUT_NAMES: usize = 5;

impl Detected {
    /// Records `name` as left out for `why` (one note per distinct `noun` and `why`).
    fn leave_out(&mut self, noun: &str, why: &str, fix: Option<&'static str>, name: String) {
        match self.left_out.iter_mut().find(|l| l.noun == noun && l.why == why) {
            Some(l) => l.names.push(name),
            None => self.left_out.push(LeftOut { noun: noun.into(), why: why.into(), fix, names: vec![name] }),
        }
    }

    /// The left-out dependencies as notes, one per reason.
    fn left_out_notes(&mut self) {
        for l in std::mem::take(&mut self.left_out) {
            let n = l.names.len();
            let mut names = l.names.into_iter().take(LEFT_OUT_NAMES).collect::<Vec<_>>().join(", ");
            if n > LEFT_OUT_NAMES {
                names.push_str(&format!(" and {} more", n - LEFT_OUT_NAMES));
            }
            let fix = l.fix.map(|f| format!("; {f}")).unwrap_or_default();
            self.notes.push(format!("{} {}, left out: {names}{fix}", count(n, &l.noun), l.why));
        }
    }
}

/// Manifests of ecosystems docdex does not read yet, and what they are: named in a note, so a
/// Go or Ruby repository is told why `libs fetch` found nothing rather than left to guess.
const UNSUPPORTED_MANIFESTS: &[(&str, &str)] = &[
    ("go.mod", "Go modules"),
    ("Gemfile", "Ruby gems (Bundler)"),
    ("composer.json", "PHP packages (Composer)"),
    ("pom.xml", "Java packages (Maven)"),
    ("build.gradle", "Java and Kotlin packages (Gradle)"),
    ("build.gradle.kts", "Java and Kotlin packages (Gradle)"),
    ("Package.swift", "Swift packages"),
    ("pubspec.yaml", "Dart and Flutter packages (pub)"),
    ("mix.exs", "Elixir packages (Hex)"),
    ("Pipfile", "Pipenv's Pipfiles (list the packages in requirements.txt or pyproject.toml)"),
];

/// A note per root manifest of an ecosystem docdex does not read.
fn unsupported(repo: &Path, d: &mut Detected) {
    for (file, what) in UNSUPPORTED_MANIFESTS {
        if repo.join(file).is_file() {
            d.notes.push(format!("{file}: {what} are not supported yet; its dependencies are not documented"));
        }
    }
}

/// Reads the manifests at the root of `repo`.
pub fn detect(repo: &Path) -> Detected {
    let mut d = Detected::default();
    rust(repo, &mut d);
    node(repo, &mut d);
    python(repo, &mut d);
    if d.notes.is_empty() && d.deps.is_empty() && d.left_out.is_empty() {
        // Nothing read and nothing refused: say where docdex looked.
        d.notes.push(
            "no Cargo.toml, package.json, requirements*.txt or pyproject.toml at the repository root (only the root's manifests are read)"
                .into(),
        );
    }
    unsupported(repo, &mut d);
    let (deps, odd): (Vec<Dependency>, Vec<Dependency>) = d.deps.drain(..).partition(plausible);
    for x in odd {
        let name = format!("{} {:?}@{:?}", x.ecosystem.name(), x.name, x.version);
        let fix = Some("check those entries in the manifest and lockfile");
        d.leave_out("dependency", "not named as a package and version docdex can look up", fix, name);
    }
    d.left_out_notes();
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

/// The version a Cargo dependency pins exactly (`"=1.2.3"`, or a table's `version`): a full
/// `major.minor.patch` after `=`, which Cargo resolves to that release only (`=1.2` is a range).
fn cargo_pin(value: &toml::Value) -> Option<String> {
    let req = match value {
        toml::Value::String(s) => s.as_str(),
        toml::Value::Table(t) => t.get("version")?.as_str()?,
        _ => return None,
    };
    let v = req.trim().strip_prefix('=')?.trim();
    let core = v.split(['-', '+']).next().unwrap_or(v);
    let full =
        core.split('.').count() == 3 && core.split('.').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    full.then(|| v.to_string())
}

fn rust(repo: &Path, d: &mut Detected) {
    let Some(manifest) = read_toml(repo, "Cargo.toml", d) else { return };
    // Each dependency by its real name, with the version it pins exactly, if it does.
    let mut names: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut add_table = |t: Option<&toml::Value>| {
        if let Some(t) = t.and_then(|v| v.as_table()) {
            for (k, v) in t {
                // `foo = { package = "real-name" }` renames.
                let real = v.get("package").and_then(|p| p.as_str()).unwrap_or(k);
                if v.get("path").is_none() {
                    let pin = names.entry(real.to_string()).or_default();
                    if pin.is_none() {
                        *pin = cargo_pin(v);
                    }
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
    for (n, pin) in names {
        let from_lock = locked.get(&n).and_then(|v| v.iter().next_back()).map(|v| (v.clone(), "Cargo.lock"));
        // Without a lock entry, an exact pin names the one release Cargo would build.
        match from_lock.or(pin.map(|v| (v, "Cargo.toml"))) {
            Some((version, by)) => {
                d.deps.push(Dependency { ecosystem: Ecosystem::Crates, name: n, version, locked_by: by.into() })
            }
            None => d.leave_out("crate", "not in Cargo.lock", Some("run `cargo generate-lockfile` to lock them"), n),
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
        let installed = installed_npm(repo, &n);
        let (version, by) = match locks.locked(&n, &range) {
            Some((v, by)) => {
                // The installed copy describes another release: its docs are not read.
                if let Some(i) = installed.as_ref().filter(|i| **i != v) {
                    d.notes.push(format!(
                        "npm package {n}: node_modules has {i} but {by} locks {v}, so its installed docs are not used (run `npm install`)"
                    ));
                }
                (Some(v), by)
            }
            None => {
                if let Some(i) = installed.as_ref().filter(|i| npm_range_allows(&range, i) == Some(false)) {
                    d.notes.push(format!(
                        "npm package {n}: node_modules has {i}, which package.json's {range:?} does not allow (run `npm install`)"
                    ));
                }
                (installed, "node_modules")
            }
        };
        match version {
            Some(v) => d.deps.push(Dependency { ecosystem: Ecosystem::Npm, name: n, version: v, locked_by: by.into() }),
            None => d.leave_out(
                "npm package",
                "with no lockfile entry and not installed",
                Some("run `npm install` (or yarn or pnpm) to lock and install them"),
                n,
            ),
        }
    }
}

/// The version of `name` installed in the repository's `node_modules`, from its own package.json.
fn installed_npm(repo: &Path, name: &str) -> Option<String> {
    let manifest = repo.join("node_modules").join(name).join("package.json");
    fsutil::read_regular_text(&manifest, Some(repo), INSTALLED_MANIFEST_BYTES)
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v.get("version").and_then(|x| x.as_str()).map(str::to_string))
}

/// `major.minor.patch` of a version (a pre-release or build suffix ignored; missing parts 0).
fn triple(v: &str) -> Option<[u64; 3]> {
    let core = v.trim().trim_start_matches(['v', '=']).split(['-', '+']).next()?;
    let mut out = [0; 3];
    for (i, part) in core.split('.').enumerate() {
        *out.get_mut(i)? = part.parse().ok()?;
    }
    Some(out)
}

/// Whether an npm range allows `version`, for the common forms (`1.2.3`, `=1.2.3`, `^1.2.3`,
/// `~1.2.3`, `>=1.2.3`, `1`, `1.2`, `1.x`, `*`); `None` for any other (`||`, a tag, a URL),
/// which is not judged.
fn npm_range_allows(range: &str, version: &str) -> Option<bool> {
    let r = range.trim();
    let v = triple(version)?;
    if r.is_empty() || r == "*" || r == "latest" {
        return Some(true);
    }
    if r.contains(['|', ' ', '<', ':', '/']) {
        return None;
    }
    if let Some(min) = r.strip_prefix(">=") {
        return Some(v >= triple(min)?);
    }
    let (op, rest) = match r.as_bytes()[0] {
        b'^' | b'~' => (r.as_bytes()[0], &r[1..]),
        _ => (b'=', r),
    };
    let parts: Vec<&str> = rest.trim_start_matches(['v', '=']).split('.').collect();
    let given = parts.iter().take_while(|p| !matches!(**p, "x" | "X" | "*")).count();
    let low = triple(&parts[..given].join("."))?;
    let same = |n: usize| low[..n] == v[..n];
    Some(match op {
        // ^1.2.3 keeps the major (the minor for 0.x, the patch for 0.0.x); ~1.2.3 the minor.
        b'^' => v >= low && same(low.iter().position(|&x| x != 0).map_or(given.min(3), |i| (i + 1).min(given.max(1)))),
        b'~' => v >= low && same(if given >= 2 { 2 } else { given }),
        _ => same(given.min(3)),
    })
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
/// which has no version to look up, so it is left out and said; other options (`-r`, `-c`,
/// `--hash`, `--index-url`) name no dependency.
fn leave_out_editable(d: &mut Detected, file: &str, line: &str) {
    if line.starts_with("-e") || line.starts_with("--editable") {
        let noun = format!("{file} editable install");
        d.leave_out(&noun, "(a path or VCS URL) with no version docdex can look up", None, format!("{line:?}"));
    }
}

/// A manifest entry that names a path or URL, not a package: left out and said.
fn leave_out_unnamed(d: &mut Detected, file: &str, entry: &str) {
    let noun = format!("{file} entry");
    let fix = Some("name the package (`name @ URL`, or `name==version`) for docdex to look it up");
    d.leave_out(&noun, "naming no package docdex can look up (a path or URL)", fix, format!("{entry:?}"));
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
                    leave_out_editable(d, &f, line);
                    continue;
                }
                if line.is_empty() {
                    continue;
                }
                let Some(name) = requirement_name(line) else {
                    leave_out_unnamed(d, &f, line);
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

/// `pyproject.toml`'s dependencies into `names`, their exact pins into `pinned`: `[project]`
/// dependencies and optional ones, PEP 735 `[dependency-groups]`, and Poetry's main, dev and
/// group (`[tool.poetry.group.<name>.dependencies]`) dependencies; false when there is no
/// `pyproject.toml`.
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
    // PEP 735: lists of requirements, beside `{ include-group = "..." }` tables (not strings).
    let dep_groups = py.get("dependency-groups").and_then(|v| v.as_table());
    let grouped = dep_groups.into_iter().flat_map(|g| g.values()).filter_map(|g| g.as_array()).flatten();
    for r in listed.chain(optional).chain(grouped).filter_map(|r| r.as_str()) {
        match requirement_name(r) {
            Some(n) => {
                if let Some(v) = exact_pin(r) {
                    pinned.entry(n.clone()).or_insert((v, "pyproject.toml".into()));
                }
                names.insert(n);
            }
            None => leave_out_unnamed(d, "pyproject.toml", r),
        }
    }
    for t in poetry_tables(&py) {
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

/// Poetry's dependency tables: `dependencies`, the old `dev-dependencies`, and each
/// `group.<name>.dependencies` (Poetry 1.2 and later keep dev and test tools there).
fn poetry_tables(py: &toml::Table) -> Vec<&toml::Table> {
    let Some(poetry) = py.get("tool").and_then(|t| t.get("poetry")) else { return Vec::new() };
    let mut out: Vec<&toml::Table> =
        ["dependencies", "dev-dependencies"].iter().filter_map(|s| poetry.get(*s)?.as_table()).collect();
    let groups = poetry.get("group").and_then(|g| g.as_table()).into_iter().flat_map(|g| g.values());
    out.extend(groups.filter_map(|g| g.get("dependencies")?.as_table()));
    out
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
            None => d.leave_out(
                "Python package",
                "not pinned (no lock entry, no ==version) and not installed in the virtualenv",
                Some(
                    "pin them (==version), lock them (poetry lock, uv lock) or install them in the repository's .venv",
                ),
                n,
            ),
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
        for left_out in [
            "1 crate not in Cargo.lock, left out: unlocked; run `cargo generate-lockfile`",
            "1 npm package with no lockfile entry and not installed, left out: missing; run `npm install`",
            "1 Python package not pinned (no lock entry, no ==version) and not installed in the virtualenv, left out: flask; pin them",
        ] {
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
        let odd: Vec<&String> = d.notes.iter().filter(|n| n.contains("can look up")).collect();
        assert_eq!(odd.len(), 1, "one note for one reason: {:?}", d.notes);
        assert!(odd[0].starts_with("3 dependencies not named as a package and version docdex can look up"), "{odd:?}");
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
        // The lines that name no package are said, not dropped in silence: in one note.
        let note = "4 requirements.txt entries naming no package docdex can look up (a path or URL), left out: \
                    \"../local/pkg\", \"/opt/wheel\", \"https://host/x.whl\", \"../../etc==1.0\"; name the package";
        assert!(d.notes.iter().any(|n| n.starts_with(note)), "{note}: {:?}", d.notes);
    }

    #[test]
    fn a_pyproject_entry_naming_no_package_is_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let toml = "[project]\nname = \"app\"\ndependencies = [\"requests\", \"../vendored/lib\"]\n\
                    [project.optional-dependencies]\ndev = [\"https://host/tool.whl\"]\n";
        w(r, "pyproject.toml", toml);
        let d = detect(r);
        let note = "2 pyproject.toml entries naming no package docdex can look up (a path or URL), left out: \
                    \"../vendored/lib\", \"https://host/tool.whl\"";
        assert!(d.notes.iter().any(|n| n.starts_with(note)), "{note}: {:?}", d.notes);
        assert!(d
            .notes
            .iter()
            .any(|n| n.starts_with("1 Python package not pinned") && n.contains("left out: requests;")));
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
        let note = "4 Python packages not pinned (no lock entry, no ==version) and not installed in the virtualenv, \
                    left out: attrs, certifi, packaging, six; pin them";
        assert!(d.notes.iter().any(|n| n.starts_with(note)), "{note}: {:?}", d.notes);
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
        let note = "2 requirements.txt editable installs (a path or VCS URL) with no version docdex can look up, \
                    left out: \"-e git+https://github.com/x/y.git\", \"--editable ./local\"";
        assert!(d.notes.contains(&note.to_string()), "{note}: {:?}", d.notes);
        let vcs = "1 requirements.txt entry naming no package docdex can look up (a path or URL), left out: \
                   \"git+https://github.com/x/z.git\"";
        assert!(d.notes.iter().any(|n| n.starts_with(vcs)), "{:?}", d.notes);
        // `git` is not taken for a package, and options other than -e are not notes.
        let has = |s: &str| d.notes.iter().any(|n| n.contains(s));
        assert!(!has("package git:") && !has("other.txt") && !has("index-url"), "{:?}", d.notes);
        assert!(has("1 Python package not pinned") && has("left out: pkg;"), "{:?}", d.notes);
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
        assert!(d.notes.iter().any(|n| n.starts_with("1 Python package not pinned") && n.contains(": absent;")));
    }

    #[test]
    fn a_cargo_exact_pin_without_a_lockfile_is_that_version() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let toml = "[package]\nname = \"app\"\n[dependencies]\nserde = \"=1.0.200\"\n\
                    tokio = { version = \"= 1.40.0\", features = [\"rt\"] }\nanyhow = \"1\"\nrange = \"=1.2\"\n";
        w(r, "Cargo.toml", toml);
        let d = detect(r);
        let got: Vec<String> = d.deps.iter().map(|x| format!("{}@{} ({})", x.name, x.version, x.locked_by)).collect();
        assert_eq!(got, ["serde@1.0.200 (Cargo.toml)", "tokio@1.40.0 (Cargo.toml)"], "{:?}", d.notes);
        // `=1.2` is a range (any 1.2.x), so it is left out as an unlocked range is.
        assert!(d.notes.iter().any(|n| n.starts_with("2 crates not in Cargo.lock, left out: anyhow, range;")));
        // A lock entry still wins.
        w(r, "Cargo.lock", "[[package]]\nname = \"serde\"\nversion = \"1.0.201\"\n");
        assert_eq!(detect(r).deps[0].version, "1.0.201");
    }

    #[test]
    fn poetry_groups_and_pep735_dependency_groups_are_dependencies() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let toml = "[project]\nname = \"app\"\ndependencies = [\"click==8.1.7\"]\n\
                    [dependency-groups]\ntest = [\"pytest==8.3.2\", {include-group = \"lint\"}]\nlint = [\"ruff==0.6.1\"]\n\
                    [tool.poetry.group.docs.dependencies]\nsphinx = \"7.4.7\"\n\
                    [tool.poetry.group.dev.dependencies]\nmypy = { version = \"1.11.1\" }\n";
        w(r, "pyproject.toml", toml);
        let d = detect(r);
        let got: Vec<String> = d.deps.iter().map(|x| format!("{}@{}", x.name, x.version)).collect();
        assert_eq!(got, ["click@8.1.7", "mypy@1.11.1", "pytest@8.3.2", "ruff@0.6.1", "sphinx@7.4.7"], "{:?}", d.notes);
    }

    #[test]
    fn manifests_of_ecosystems_not_supported_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        w(r, "go.mod", "module example.com/app\n\ngo 1.22\n");
        w(r, "Gemfile", "source \"https://rubygems.org\"\n");
        w(r, "composer.json", "{}");
        w(r, "pom.xml", "<project/>");
        w(r, "build.gradle", "");
        let d = detect(r);
        assert!(d.deps.is_empty());
        for (file, what) in [
            ("go.mod", "Go modules"),
            ("Gemfile", "Ruby gems"),
            ("composer.json", "PHP packages"),
            ("pom.xml", "Java packages (Maven)"),
            ("build.gradle", "Java and Kotlin packages (Gradle)"),
        ] {
            assert!(
                d.notes.iter().any(|n| n.starts_with(&format!("{file}: {what}")) && n.contains("not supported yet")),
                "{file}: {:?}",
                d.notes
            );
        }
        assert!(d.notes.iter().any(|n| n.starts_with("no Cargo.toml, package.json")), "{:?}", d.notes);
    }

    #[test]
    fn many_left_out_dependencies_are_one_note_with_a_few_names() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let deps: String = (0..40).map(|i| format!("crate{i:02} = \"1\"\n")).collect();
        w(r, "Cargo.toml", &format!("[package]\nname = \"app\"\n[dependencies]\n{deps}"));
        let d = detect(r);
        assert_eq!(d.notes.len(), 2, "{:?}", d.notes);
        assert_eq!(
            d.notes[1],
            "40 crates not in Cargo.lock, left out: crate00, crate01, crate02, crate03, crate04 and 35 more; \
             run `cargo generate-lockfile` to lock them"
        );
    }

    #[test]
    fn an_installed_npm_package_at_another_version_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        w(r, "package.json", r#"{"dependencies": {"left-pad": "^1.3.0", "lodash": "^4.17.0", "chalk": "5.3.0"}}"#);
        w(r, "package-lock.json", r#"{"packages": {"node_modules/left-pad": {"version": "1.3.0"}}}"#);
        w(r, "node_modules/left-pad/package.json", r#"{"version": "1.1.0"}"#);
        w(r, "node_modules/lodash/package.json", r#"{"version": "3.10.1"}"#);
        w(r, "node_modules/chalk/package.json", r#"{"version": "5.3.0"}"#);
        let d = detect(r);
        let has = |s: &str| d.notes.iter().any(|n| n.starts_with(s));
        assert!(has("npm package left-pad: node_modules has 1.1.0 but package-lock.json locks 1.3.0"), "{:?}", d.notes);
        assert!(has("npm package lodash: node_modules has 3.10.1, which package.json's \"^4.17.0\" does not allow"));
        assert!(!d.notes.iter().any(|n| n.contains("chalk")), "{:?}", d.notes);
    }

    #[test]
    fn npm_ranges_in_common_forms() {
        let yes = [("^1.2.3", "1.9.0"), ("~1.2.3", "1.2.9"), ("1.2.3", "1.2.3"), ("1.x", "1.5.0"), ("^0.2.1", "0.2.5")];
        let no =
            [("^1.2.3", "2.0.0"), ("^1.2.3", "1.2.2"), ("~1.2.3", "1.3.0"), ("=1.2.3", "1.2.4"), ("^0.2.1", "0.3.0")];
        for (r, v) in yes {
            assert_eq!(npm_range_allows(r, v), Some(true), "{r} {v}");
        }
        for (r, v) in no {
            assert_eq!(npm_range_allows(r, v), Some(false), "{r} {v}");
        }
        for r in ["1 || 2", "next", "workspace:*", ">=1 <2", "github:a/b"] {
            assert_eq!(npm_range_allows(r, "1.0.0"), None, "{r}");
        }
    }
}
