//! Go: import paths under a `go.mod` module path map to that module's directories; a package
//! is a directory, and an import gets an edge to each of its non-test `.go` files (a change to
//! any of them can change the importer). Everything else (stdlib, other modules) is external.

use super::{join, parent, Manifests, Query, Resolution, Target};

pub struct GoIndex {
    /// (module path, module directory), longest module path first.
    modules: Vec<(String, String)>,
}

impl GoIndex {
    pub fn new(m: &Manifests) -> GoIndex {
        let mut ignored = Vec::new();
        let mut modules: Vec<(String, String)> = m
            .named("go.mod")
            .into_iter()
            .filter_map(|file| {
                let text = m.read(&file, &mut ignored)?;
                let module = text.lines().find_map(|l| l.trim().strip_prefix("module "))?;
                let module = module.split("//").next().unwrap_or("").trim().trim_matches('"').to_string();
                Some((module, parent(&file).to_string()))
            })
            .collect();
        modules.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.cmp(b)));
        GoIndex { modules }
    }

    pub fn resolve(&self, q: &Query) -> Resolution {
        let spec = q.spec;
        let dir = if spec.starts_with("./") || spec.starts_with("../") {
            q.relative(spec)
        } else {
            self.modules.iter().find_map(|(module, dir)| {
                let rest = if spec == module {
                    Some("")
                } else {
                    spec.strip_prefix(module.as_str()).and_then(|r| r.strip_prefix('/'))
                };
                rest.and_then(|r| join(dir, r))
            })
        };
        let Some(dir) = dir else { return Resolution::External(spec.to_string()) };
        let targets: Vec<Target> = q
            .files
            .files_in(&dir)
            .iter()
            .filter(|f| f.ends_with(".go") && !f.ends_with("_test.go"))
            .map(|f| Target::exact(f.clone()))
            .collect();
        if targets.is_empty() {
            Resolution::NotFound(format!("package directory {dir}/ of {spec} has no Go files"))
        } else {
            Resolution::Files(targets)
        }
    }
}
