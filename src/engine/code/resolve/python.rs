//! Python: absolute imports from the package roots found in the tree (the repository root and
//! every directory holding a top-level package, i.e. a directory with `__init__.py` whose
//! parent has none: `src/` layouts included), then from a script's own directory when it is not
//! inside a package; relative imports (`.`, `..`) from the file's package; `from x import y`
//! binds `y` when it is a submodule, and `x` when `y` is not one or when `x/__init__.py` binds
//! the name `y` itself (Python then hands over the package's `y`, not the submodule);
//! `importlib` loads by name or path. A top-level name found
//! in no root is an external package (stdlib or third party).
//!
//! What Python would see decides which roots an import may use: the repository root, a root
//! named `src` and a root holding `pyproject.toml`, `setup.py` or `setup.cfg` (an installable
//! distribution) are on every file's path; any other root (`examples/`, the parent of an
//! example's package) only on the path of the files under it, as when such a script runs from
//! there. And a plain directory (no `__init__.py`) only makes a namespace package when nothing
//! else on `sys.path` has the name, so an installed `gevent` wins over `examples/gevent/`: a
//! name a visible root has only as such a directory is read from it when the module is there,
//! and is external, not "missing", when it is not. A top-level folder without packaging that
//! alone has a package (`lib/acme/`, on the path by `PYTHONPATH=lib`) is a root for the rest of
//! the repository too, for that name, where the evidence holds (`pyroots`).

use super::{join, parent, PathMap, PathSet, Query, RepoFiles, Resolution, Target};
use crate::engine::code::imports::kind;
use crate::engine::code::Lang;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Confidence of an import found from a script's own directory (sys.path[0] when run directly).
const SCRIPT_DIR_CONFIDENCE: f32 = 0.9;
/// Confidence of an import found under a `src/` directory of namespace packages (no
/// `__init__.py`): the src-layout convention, not a package Python would find by itself.
const NAMESPACE_ROOT_CONFIDENCE: f32 = 0.8;
/// Confidence of an import found in a top-level folder taken as on `PYTHONPATH` (`pyroots`):
/// nothing in the tree puts it there.
const PATH_ROOT_CONFIDENCE: f32 = 0.8;

pub struct PythonIndex {
    roots: Vec<String>,
    root_set: PathSet<String>,
    /// Package directory → the directory above its top-level package.
    package_roots: PathMap<String, String>,
    /// Top-level module or package name → the roots that have it, in root order, each with
    /// whether it is a module or regular package there (`false`: a plain directory only).
    tops: HashMap<String, Vec<(usize, bool)>>,
    /// Per root: on every file's import path (see the module doc), else only on the path of
    /// the files under it.
    global: Vec<bool>,
    /// `src/` directories that hold Python but no regular package (PEP 420 namespace packages
    /// in a src layout): roots by convention, so their edges are heuristic.
    namespace_roots: PathSet<String>,
    /// Top-level package name → the top-level folder (a root) taken as on every file's path for
    /// it, though not global (`pyroots::path_roots`).
    path_roots: HashMap<String, usize>,
    /// The repository root, to read a package's `__init__.py` when an import asks.
    root: PathBuf,
    /// `__init__.py` path → the names it binds at module level, read once when first asked.
    init_names: Mutex<HashMap<String, Arc<HashSet<String>>>>,
}

impl PythonIndex {
    pub fn new(root: &Path, files: &RepoFiles) -> PythonIndex {
        let packages: PathSet<String> = files
            .iter()
            .filter(|p| p.ends_with("__init__.py") || p.ends_with("__init__.pyi"))
            .filter(|p| matches!(super::file_name(p), "__init__.py" | "__init__.pyi"))
            .map(|p| parent(p).to_string())
            .collect();
        let mut roots: Vec<String> = packages
            .iter()
            .filter(|d| !d.is_empty())
            .map(|d| parent(d).to_string())
            .filter(|p| !packages.contains(p))
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        if !roots.iter().any(|r| r.is_empty()) {
            roots.push(String::new());
        }
        let namespace_roots = namespace_src_roots(files, &packages, &roots);
        roots.extend(namespace_roots.iter().cloned());
        roots.sort();
        let with_python = dirs_with_python(files, &namespace_roots);
        let mut tops: HashMap<String, Vec<(usize, bool)>> = HashMap::new();
        for (i, root) in roots.iter().enumerate() {
            let modules = files.files_in(root).iter().filter_map(|f| {
                let name = super::file_name(f);
                name.strip_suffix(".py").or_else(|| name.strip_suffix(".pyi"))
            });
            // Under a `src/` found by convention only a directory holding Python is a
            // namespace package: `import json` must not reach `src/json/` of JSON fixtures.
            // Those count as the project's own packages (the convention); elsewhere a plain
            // directory is only a namespace package, which any installed package outranks.
            let namespace = namespace_roots.contains(root);
            let dirs = files
                .subdirs(root)
                .iter()
                .filter(|d| !namespace || with_python.contains(d.as_str()))
                .map(|d| (super::file_name(d), namespace || packages.contains(d.as_str())));
            for (name, regular) in modules.map(|m| (m, true)).chain(dirs) {
                let v = tops.entry(name.to_string()).or_default();
                match v.last_mut() {
                    Some((last, r)) if *last == i => *r |= regular,
                    _ => v.push((i, regular)),
                }
            }
        }
        let global: Vec<bool> = roots.iter().map(|r| is_global_root(files, r, &namespace_roots)).collect();
        let found = super::pyroots::Roots { roots: &roots, global: &global, tops: &tops, packages: &packages };
        let path_roots = super::pyroots::path_roots(root, files, &found);
        let root_set = roots.iter().cloned().collect();
        let package_roots = packages
            .iter()
            .map(|p| {
                let mut d = p.as_str();
                while packages.contains(d) && !d.is_empty() {
                    d = parent(d);
                }
                (p.clone(), d.to_string())
            })
            .collect();
        PythonIndex {
            roots,
            root_set,
            package_roots,
            tops,
            global,
            namespace_roots,
            path_roots,
            root: root.to_path_buf(),
            init_names: Mutex::new(HashMap::new()),
        }
    }

    pub fn resolve(&self, q: &Query) -> Resolution {
        if q.imp.kind == kind::LOAD_PATH {
            return load_path(q);
        }
        let names: &[String] = if q.imp.kind == kind::FROM { &q.imp.names } else { &[] };
        if q.spec.starts_with('.') {
            return self.relative(q, names);
        }
        let top = q.spec.split('.').next().unwrap_or(q.spec);
        let own = self.own_root(q.dir());
        let own_is_root = self.root_set.contains(own);
        // Only roots on this file's path that have the top-level name can hold the module.
        let mut order: Vec<(&str, Option<f32>)> = Vec::new();
        let with_top: Vec<(&str, bool)> = self
            .tops
            .get(top)
            .map(|v| {
                v.iter()
                    .filter(|(i, _)| self.visible(*i, q.dir()))
                    .map(|&(i, regular)| (self.roots[i].as_str(), regular))
                    .collect()
            })
            .unwrap_or_default();
        if own_is_root && with_top.iter().any(|(r, _)| *r == own) {
            // A script in a namespace `src/` finds its siblings as before: by its own directory.
            order.push((own, self.namespace_roots.contains(own).then_some(SCRIPT_DIR_CONFIDENCE)));
        }
        order.extend(
            with_top
                .iter()
                .filter(|(r, _)| *r != own)
                .map(|(r, _)| (*r, self.namespace_roots.contains(*r).then_some(NAMESPACE_ROOT_CONFIDENCE))),
        );
        if !own_is_root {
            order.push((own, Some(SCRIPT_DIR_CONFIDENCE)));
        }
        let rel = q.spec.replace('.', "/");
        for (root, confidence) in &order {
            let Some(base) = join(root, &rel) else { continue };
            if let Some(targets) = self.module_targets(q.files, &base, names) {
                let targets = targets
                    .into_iter()
                    .map(|p| match confidence {
                        Some(c) => Target::heuristic(p, *c),
                        None => Target::exact(p),
                    })
                    .collect();
                return Resolution::Files(targets);
            }
        }
        if with_top.is_empty() {
            if let Some(found) = self.on_path_root(q.files, top, &rel, names) {
                return found;
            }
        }
        // A plain directory of that name is no evidence: Python would take the installed package.
        let top_is_ours = with_top.iter().any(|(_, regular)| *regular)
            || (!own_is_root && join(own, top).is_some_and(|b| self.module_file(q.files, &b).is_some()));
        if top_is_ours {
            let shown: Vec<&str> = order.iter().take(5).map(|(r, _)| if r.is_empty() { "." } else { *r }).collect();
            return Resolution::NotFound(format!(
                "{top} is a module of the repository, but no module {} exists under {}{}",
                q.spec,
                shown.join(", "),
                if order.len() > 5 { format!(" and {} more roots", order.len() - 5) } else { String::new() }
            ));
        }
        Resolution::External(top.to_string())
    }

    /// The import read from the top-level folder taken as on the path for `top`, when the
    /// import shows it means that package: a submodule (`import acme.core`, `from acme import
    /// core`), a name its `__init__.py` binds (`from acme import run`), or the package itself
    /// (`import acme`). A name the package neither has nor binds is left external.
    fn on_path_root(&self, files: &RepoFiles, top: &str, rel: &str, names: &[String]) -> Option<Resolution> {
        let root = self.roots.get(*self.path_roots.get(top)?)?;
        let base = join(root, rel)?;
        let targets = self.module_targets(files, &base, names)?;
        let module = self.module_file(files, &base);
        let evidence = rel.contains('/')
            || names.is_empty()
            || names.iter().any(|n| {
                join(&base, n).is_some_and(|b| self.module_file(files, &b).is_some())
                    || module.as_deref().is_some_and(|m| self.init_binds(m, n))
            });
        evidence.then(|| {
            Resolution::Files(targets.into_iter().map(|p| Target::heuristic(p, PATH_ROOT_CONFIDENCE)).collect())
        })
    }

    /// `from .x import y`, `from .. import z`.
    fn relative(&self, q: &Query, names: &[String]) -> Resolution {
        let dots = q.spec.chars().take_while(|c| *c == '.').count();
        let rest = &q.spec[dots..];
        let mut dir = q.dir().to_string();
        for _ in 1..dots {
            if dir.is_empty() {
                return Resolution::NotFound(format!("{} climbs above the repository root", q.spec));
            }
            dir = parent(&dir).to_string();
        }
        let base = if rest.is_empty() { dir.clone() } else { join(&dir, &rest.replace('.', "/")).unwrap_or_default() };
        match self.module_targets(q.files, &base, names) {
            Some(t) => Resolution::Files(t.into_iter().map(Target::exact).collect()),
            None => Resolution::NotFound(format!("no module {base}.py or {base}/__init__.py for {}", q.spec)),
        }
    }

    /// The file of module `base` (a path without extension), and of each name that is a
    /// submodule; `None` if neither the module nor any named submodule exists. The module's
    /// file is a target too when a name is no submodule or when its `__init__.py` binds the
    /// name: `from pkg import x` gives `pkg/__init__.py`'s `x` (a function, a re-export) even
    /// where `pkg/x.py` exists, so a change to the package's `x` changes the importer.
    fn module_targets(&self, files: &RepoFiles, base: &str, names: &[String]) -> Option<Vec<String>> {
        let module = self.module_file(files, base);
        let mut out = Vec::new();
        let mut attribute_names = names.is_empty();
        for n in names {
            match join(base, n).and_then(|b| self.module_file(files, &b)) {
                Some(sub) => {
                    if module.as_deref().is_some_and(|m| self.init_binds(m, n)) {
                        attribute_names = true;
                    }
                    out.push(sub)
                }
                None => attribute_names = true,
            }
        }
        if attribute_names {
            match module {
                Some(m) => out.insert(0, m),
                None if out.is_empty() => return None,
                None => {}
            }
        }
        Some(out)
    }

    fn module_file(&self, files: &RepoFiles, base: &str) -> Option<String> {
        if base.is_empty() {
            return files.first_with_suffix("", &["__init__.py", "__init__.pyi"]);
        }
        files.first_with_suffix(base, &[".py", "/__init__.py", ".pyi", "/__init__.pyi"])
    }

    /// Whether the package file `init` (an `__init__.py` or `.pyi`) binds `name` at module
    /// level. A plain module (`pkg/sub.py`) has no submodules to shadow, so it is never asked.
    fn init_binds(&self, init: &str, name: &str) -> bool {
        if !matches!(super::file_name(init), "__init__.py" | "__init__.pyi") {
            return false;
        }
        let names = {
            let Ok(mut cache) = self.init_names.lock() else { return false };
            cache.entry(init.to_string()).or_insert_with(|| Arc::new(read_bound_names(&self.root, init))).clone()
        };
        names.contains(name)
    }

    /// Whether root `i` is on the import path of a file in `dir`: a global root, or one the
    /// file lies under.
    fn visible(&self, i: usize, dir: &str) -> bool {
        self.global.get(i).copied().unwrap_or(true) || {
            let root = self.roots[i].as_str();
            dir == root || dir.strip_prefix(root).is_some_and(|rest| rest.starts_with('/'))
        }
    }

    /// The directory absolute imports of a file in `dir` start from: above its top package.
    fn own_root<'a>(&'a self, dir: &'a str) -> &'a str {
        self.package_roots.get(dir).map(String::as_str).unwrap_or(dir)
    }
}

/// Directories named `src` that hold Python files but are not inside a package and are not
/// already roots: a src layout of namespace packages (`src/app/core/util.py`, no
/// `__init__.py`), whose `import app.core.util` read as an external package `app`.
fn namespace_src_roots(files: &RepoFiles, packages: &PathSet<String>, roots: &[String]) -> PathSet<String> {
    let mut out = PathSet::default();
    for f in files.iter().filter(|f| f.ends_with(".py") || f.ends_with(".pyi")) {
        let mut d = parent(f);
        while !d.is_empty() {
            if super::file_name(d) == "src" {
                if !packages.contains(d) && !packages.contains(parent(d)) && !roots.iter().any(|r| r == d) {
                    out.insert(d.to_string());
                }
                break;
            }
            d = parent(d);
        }
    }
    out
}

/// Markers of an installable distribution: its directory is on `sys.path` once installed
/// (`pip install -e .`).
const DISTRIBUTION_FILES: [&str; 3] = ["pyproject.toml", "setup.py", "setup.cfg"];

/// Whether `root` is on every file's import path: the repository root, a `src/` (layout
/// convention, namespace or not), or a directory holding a distribution's metadata.
fn is_global_root(files: &RepoFiles, root: &str, namespace_roots: &PathSet<String>) -> bool {
    root.is_empty()
        || super::file_name(root) == "src"
        || namespace_roots.contains(root)
        || DISTRIBUTION_FILES.iter().any(|f| join(root, f).is_some_and(|p| files.contains(&p)))
}

/// Every directory below one of `under` that holds a Python file, at any depth.
fn dirs_with_python(files: &RepoFiles, under: &PathSet<String>) -> PathSet<String> {
    let mut out = PathSet::default();
    if under.is_empty() {
        return out;
    }
    for f in files.iter().filter(|f| f.ends_with(".py") || f.ends_with(".pyi")) {
        let mut d = parent(f);
        while !d.is_empty() && !under.contains(d) && out.insert(d.to_string()) {
            d = parent(d);
        }
    }
    out
}

/// The names a Python file binds at module level: definitions, assignments and imports,
/// including those under `if`/`try`/`with` (no scope of their own), not inside functions or
/// classes. An unreadable file binds nothing.
fn read_bound_names(root: &Path, rel: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    let Ok(bytes) = crate::engine::fsutil::read_repo_file(root, rel) else { return out };
    let text = crate::engine::fsutil::decode_text(&bytes);
    let Some(tree) = crate::engine::code::lang::parse(Lang::Python, &text) else { return out };
    bound_in(tree.root_node(), text.as_bytes(), &mut out, 0);
    out
}

/// Nesting of `if`/`try` blocks followed: enough for any real `__init__.py`.
const MAX_BLOCK_DEPTH: usize = 16;

fn bound_in(node: tree_sitter::Node, src: &[u8], out: &mut HashSet<String>, depth: usize) {
    let text = |n: tree_sitter::Node| n.utf8_text(src).unwrap_or("").to_string();
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        match child.kind() {
            "function_definition" | "class_definition" => out.extend(child.child_by_field_name("name").map(text)),
            "decorated_definition" => {
                let def = child.child_by_field_name("definition");
                out.extend(def.and_then(|d| d.child_by_field_name("name")).map(text));
            }
            "expression_statement" => {
                let mut c = child.walk();
                for a in child.named_children(&mut c).filter(|a| a.kind() == "assignment") {
                    if let Some(left) = a.child_by_field_name("left") {
                        identifiers(left, src, out);
                    }
                }
            }
            "import_from_statement" | "import_statement" => {
                // `from . import x` in a package's `__init__.py` binds its own submodule `x`:
                // the same module an importer's `from pkg import x` reaches directly.
                let own = child.child_by_field_name("module_name").is_some_and(|m| text(m) == ".");
                let mut c = child.walk();
                for n in child.children_by_field_name("name", &mut c) {
                    let bound = match n.kind() {
                        "aliased_import" => n.child_by_field_name("alias").map(text),
                        _ if own => None,
                        // `import a.b` binds `a`; `from m import a` binds `a`.
                        _ => text(n).split('.').next().map(|s| s.trim().to_string()),
                    };
                    out.extend(bound);
                }
            }
            "if_statement" | "elif_clause" | "else_clause" | "try_statement" | "except_clause" | "finally_clause"
            | "with_statement" | "block" | "ERROR"
                if depth < MAX_BLOCK_DEPTH =>
            {
                bound_in(child, src, out, depth + 1)
            }
            _ => {}
        }
    }
}

/// The identifiers an assignment target binds (`x`, `a, b`, `(a, b)`), not attributes or items.
fn identifiers(node: tree_sitter::Node, src: &[u8], out: &mut HashSet<String>) {
    match node.kind() {
        "identifier" => out.extend(node.utf8_text(src).ok().map(str::to_string)),
        "pattern_list" | "tuple_pattern" | "list_pattern" => {
            let mut c = node.walk();
            for n in node.named_children(&mut c) {
                identifiers(n, src, out);
            }
        }
        _ => {}
    }
}

/// `spec_from_file_location(name, path)` and friends: a file path.
fn load_path(q: &Query) -> Resolution {
    let relative = q.spec.starts_with("./") || q.spec.starts_with("../");
    let candidate = if relative { q.relative(q.spec) } else { join("", q.spec.trim_start_matches('/')) };
    match candidate {
        Some(p) if q.files.contains(&p) => {
            Resolution::Files(vec![if relative { Target::exact(p) } else { Target::heuristic(p, 0.7) }])
        }
        Some(p) => Resolution::NotFound(format!("{p} is not a file of the repository")),
        None => Resolution::NotFound(format!("{} points outside the repository", q.spec)),
    }
}
