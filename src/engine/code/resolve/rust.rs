//! Rust: crates from every `Cargo.toml` (lib, bins, tests, examples, benches, build script;
//! stray `lib.rs`/`main.rs` files count as crate roots too), each crate's module tree built by
//! following `mod` declarations (`x.rs` vs `x/mod.rs`, `#[path]`, inline modules), then `use`
//! paths resolved against it: `crate::`, `self::`, `super::`, child modules, other crates of
//! the repository by their package name, and the 2015 edition's crate-relative paths. An item
//! path resolves to the file of the deepest module it names. Other crates (`std`, `serde`)
//! are external.

use super::{file_name, join, parent, stem, Manifests, Query, Resolution, Target};
use crate::engine::code::imports::kind;
use crate::engine::code::types::FileImports;
use std::collections::{HashMap, VecDeque};

#[derive(Debug)]
struct Crate {
    /// Whether `use a::b` is crate-relative (edition 2015).
    edition_2015: bool,
}

pub struct RustIndex {
    crates: Vec<Crate>,
    /// Library crates by the name other crates use for them.
    libs: HashMap<String, usize>,
    /// File → (crate, module path).
    modules: HashMap<String, (usize, Vec<String>)>,
    /// (crate, `a::b`) → file (`""` is the crate root).
    by_path: HashMap<(usize, String), String>,
    /// Crate roots and files loaded with `#[path]` (their child modules live beside them).
    dir_owners: std::collections::HashSet<String>,
}

/// What a `Cargo.toml` declares.
struct Package {
    dir: String,
    lib_name: Option<String>,
    lib_path: Option<String>,
    bin_paths: Vec<String>,
    edition_2015: bool,
}

impl RustIndex {
    pub fn new(m: &Manifests, files: &[FileImports], warnings: &mut Vec<String>) -> RustIndex {
        let by_file: HashMap<&str, &FileImports> = files.iter().map(|f| (f.path.as_str(), f)).collect();
        let mut index = RustIndex {
            crates: Vec::new(),
            libs: HashMap::new(),
            modules: HashMap::new(),
            by_path: HashMap::new(),
            dir_owners: Default::default(),
        };
        let mut roots: Vec<(String, usize)> = Vec::new();
        for manifest in m.named("Cargo.toml") {
            let Some(pkg) = read_package(m, &manifest, warnings) else { continue };
            for (root, is_lib) in crate_roots(m, &pkg) {
                if index.modules.contains_key(&root) {
                    continue;
                }
                let id = index.crates.len();
                index.crates.push(Crate { edition_2015: pkg.edition_2015 });
                if is_lib {
                    if let Some(name) = &pkg.lib_name {
                        index.libs.entry(name.clone()).or_insert(id);
                    }
                }
                index.add_root(&root, id);
                roots.push((root, id));
            }
        }
        for (root, id) in &roots {
            index.build_tree(root, *id, &by_file);
        }
        // Stray crate roots outside any Cargo package (or not listed by it).
        let mut stray: Vec<&String> = files
            .iter()
            .map(|f| &f.path)
            .filter(|p| {
                matches!(file_name(p), "lib.rs" | "main.rs") && p.ends_with(".rs") && !index.modules.contains_key(*p)
            })
            .collect();
        stray.sort();
        for root in stray {
            if index.modules.contains_key(root) {
                continue;
            }
            let id = index.crates.len();
            index.crates.push(Crate { edition_2015: false });
            index.add_root(root, id);
            index.build_tree(root, id, &by_file);
        }
        index
    }

    fn add_root(&mut self, root: &str, id: usize) {
        self.modules.insert(root.to_string(), (id, Vec::new()));
        self.by_path.insert((id, String::new()), root.to_string());
        self.dir_owners.insert(root.to_string());
    }

    /// Follows `mod` declarations from a crate root, breadth-first.
    fn build_tree(&mut self, root: &str, id: usize, by_file: &HashMap<&str, &FileImports>) {
        let mut queue = VecDeque::from([root.to_string()]);
        while let Some(file) = queue.pop_front() {
            let Some(fi) = by_file.get(file.as_str()) else { continue };
            let Some((_, module)) = self.modules.get(&file).cloned() else { continue };
            for imp in &fi.imports {
                let found = match imp.kind.as_str() {
                    kind::MOD => self.mod_file(&file, &imp.spec, by_file).map(|p| {
                        let mut path = module.clone();
                        path.extend(imp.spec.split("::").map(str::to_string));
                        (p, path, false)
                    }),
                    kind::MOD_PATH => {
                        join(parent(&file), &imp.spec).filter(|p| by_file.contains_key(p.as_str())).map(|p| {
                            let mut path = module.clone();
                            path.push(imp.names.first().cloned().unwrap_or_else(|| stem(&imp.spec).to_string()));
                            (p, path, true)
                        })
                    }
                    _ => None,
                };
                let Some((child, path, path_loaded)) = found else { continue };
                self.by_path.entry((id, path.join("::"))).or_insert_with(|| child.clone());
                if !self.modules.contains_key(&child) {
                    if path_loaded {
                        self.dir_owners.insert(child.clone());
                    }
                    self.modules.insert(child.clone(), (id, path));
                    queue.push_back(child);
                }
            }
        }
    }

    /// The directory holding a file's child modules.
    fn mod_dir(&self, file: &str) -> String {
        if self.dir_owners.contains(file) || file_name(file) == "mod.rs" {
            parent(file).to_string()
        } else {
            join(parent(file), stem(file)).unwrap_or_default()
        }
    }

    /// `mod a;` (or `a::b` inside inline modules) → `a.rs` or `a/mod.rs`.
    fn mod_candidates(&self, file: &str, chain: &str) -> Vec<String> {
        let mut dir = self.mod_dir(file);
        let segs: Vec<&str> = chain.split("::").collect();
        let Some((last, inline)) = segs.split_last() else { return Vec::new() };
        for s in inline {
            dir = join(&dir, s).unwrap_or_default();
        }
        let base = join(&dir, last).unwrap_or_default();
        vec![format!("{base}.rs"), format!("{base}/mod.rs")]
    }

    fn mod_file(&self, file: &str, chain: &str, by_file: &HashMap<&str, &FileImports>) -> Option<String> {
        self.mod_candidates(file, chain).into_iter().find(|c| by_file.contains_key(c.as_str()))
    }

    pub fn resolve(&self, q: &Query) -> Resolution {
        match q.imp.kind.as_str() {
            kind::MOD => {
                let candidates = self.mod_candidates(&q.file.path, q.spec);
                match q.files.first_existing(candidates.iter().map(String::as_str)) {
                    Some(p) => Resolution::Files(vec![Target::exact(p)]),
                    None => Resolution::NotFound(format!("module file not found: tried {}", candidates.join(", "))),
                }
            }
            kind::MOD_PATH | kind::INCLUDE_FILE => match q.relative(q.spec) {
                Some(p) if q.files.contains(&p) => Resolution::Files(vec![Target::exact(p)]),
                Some(p) => Resolution::NotFound(format!("{p} is not a file of the repository")),
                None => Resolution::NotFound(format!("{} points outside the repository", q.spec)),
            },
            kind::EXTERN_CRATE => match self.libs.get(q.spec) {
                Some(&id) => self.lookup(id, &[], &[]),
                None => Resolution::External(q.spec.to_string()),
            },
            _ => self.resolve_path(q),
        }
    }

    /// A `use` path.
    fn resolve_path(&self, q: &Query) -> Resolution {
        let segs: Vec<&str> = q.spec.split("::").filter(|s| !s.is_empty()).collect();
        let Some(&first) = segs.first() else { return Resolution::NotFound("empty path".into()) };
        let here = self.modules.get(&q.file.path);
        let not_in_tree = || {
            Resolution::NotFound(format!(
                "{} is not reached from any crate root through `mod` declarations, so `{}` cannot be resolved",
                q.file.path, q.spec
            ))
        };
        match first {
            "crate" | "$crate" => match here {
                Some((id, _)) => self.lookup(*id, &[], &segs[1..]),
                None => not_in_tree(),
            },
            "self" | "super" => {
                let Some((id, module)) = here else { return not_in_tree() };
                let supers = segs.iter().take_while(|s| **s == "super").count();
                if supers > module.len() {
                    return Resolution::NotFound(format!("`{}` climbs above the crate root", q.spec));
                }
                let base: Vec<&str> = module[..module.len() - supers].iter().map(String::as_str).collect();
                let skip = if first == "self" { 1 } else { supers };
                self.lookup(*id, &base, &segs[skip..])
            }
            _ => {
                if let Some((id, module)) = here {
                    let mut child: Vec<&str> = module.iter().map(String::as_str).collect();
                    child.push(first);
                    if self.by_path.contains_key(&(*id, child.join("::"))) {
                        let base: Vec<&str> = module.iter().map(String::as_str).collect();
                        return self.lookup(*id, &base, &segs);
                    }
                    if self.crates[*id].edition_2015 && self.by_path.contains_key(&(*id, first.to_string())) {
                        return self.lookup(*id, &[], &segs);
                    }
                }
                if let Some(&lib) = self.libs.get(first) {
                    return self.lookup(lib, &[], &segs[1..]);
                }
                // `std`, `core`, `alloc` and crates from crates.io.
                Resolution::External(first.to_string())
            }
        }
    }

    /// The deepest module of `base::rest...` that is a file (an inline module lives in the
    /// file of its nearest file-backed ancestor, so this may climb above `base`).
    fn lookup(&self, id: usize, base: &[&str], rest: &[&str]) -> Resolution {
        let full: Vec<&str> = base.iter().chain(rest.iter()).copied().collect();
        for k in (0..=full.len()).rev() {
            if let Some(file) = self.by_path.get(&(id, full[..k].join("::"))) {
                return Resolution::Files(vec![Target::exact(file.clone())]);
            }
        }
        Resolution::NotFound(format!("no module file for {}", [base, rest].concat().join("::")))
    }
}

fn read_package(m: &Manifests, manifest: &str, warnings: &mut Vec<String>) -> Option<Package> {
    let text = m.read(manifest, warnings)?;
    let value: toml::Value = match toml::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            warnings.push(format!("cannot parse {manifest}: {}", e.message()));
            return None;
        }
    };
    let package = value.get("package")?;
    let name = package.get("name").and_then(|n| n.as_str()).map(|n| n.replace('-', "_"));
    let lib = value.get("lib");
    let lib_name = lib.and_then(|l| l.get("name")).and_then(|n| n.as_str()).map(|n| n.replace('-', "_")).or(name);
    let lib_path = lib.and_then(|l| l.get("path")).and_then(|p| p.as_str()).map(str::to_string);
    let bin_paths = value
        .get("bin")
        .and_then(|b| b.as_array())
        .map(|bins| bins.iter().filter_map(|b| b.get("path").and_then(|p| p.as_str()).map(str::to_string)).collect())
        .unwrap_or_default();
    let edition = package.get("edition").and_then(|e| e.as_str()).unwrap_or("2015");
    Some(Package { dir: parent(manifest).to_string(), lib_name, lib_path, bin_paths, edition_2015: edition == "2015" })
}

/// The package's crate roots, the library first: `(path, is_lib)`.
fn crate_roots(m: &Manifests, pkg: &Package) -> Vec<(String, bool)> {
    let at = |rel: &str| join(&pkg.dir, rel).unwrap_or_default();
    let mut out = Vec::new();
    let lib = at(pkg.lib_path.as_deref().unwrap_or("src/lib.rs"));
    if m.files.contains(&lib) {
        out.push((lib, true));
    }
    let mut others: Vec<String> = pkg.bin_paths.iter().map(|p| at(p)).collect();
    others.push(at("src/main.rs"));
    others.push(at("build.rs"));
    for dir in ["src/bin", "tests", "examples", "benches"] {
        let d = at(dir);
        for f in m.files.files_in(&d) {
            if f.ends_with(".rs") {
                others.push(f.clone());
            }
        }
        for sub in m.files.subdirs(&d) {
            others.push(format!("{sub}/main.rs"));
        }
    }
    others.sort();
    others.dedup();
    out.extend(others.into_iter().filter(|p| m.files.contains(p)).map(|p| (p, false)));
    out
}
