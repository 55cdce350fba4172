//! PHP: `require`/`include` paths relative to the file (then the repository root), and `use`
//! of classes through the PSR-4 prefixes of every `composer.json` (`autoload` and
//! `autoload-dev`), falling back to the file `C.php` that declares namespace `A\B` for
//! `A\B\C`. `use function`/`use const` bind the files of the namespace. Namespaces the
//! repository neither maps nor declares are external.

use super::{join, parent, stem, Manifests, Query, Resolution, Target};
use crate::engine::code::imports::kind;
use crate::engine::code::types::FileImports;
use crate::engine::code::Lang;
use std::collections::HashMap;

const DECLARED_CLASS_CONFIDENCE: f32 = 0.9;
const NAMESPACE_CONFIDENCE: f32 = 0.6;
const ROOT_CONFIDENCE: f32 = 0.7;

pub struct PhpIndex {
    /// PSR-4 prefix (with its trailing `\`) → directories, longest prefix first.
    psr4: Vec<(String, Vec<String>)>,
    namespaces: HashMap<String, Vec<String>>,
}

impl PhpIndex {
    pub fn new(m: &Manifests, files: &[FileImports], warnings: &mut Vec<String>) -> PhpIndex {
        let mut psr4 = Vec::new();
        for file in m.named("composer.json") {
            let Some(text) = m.read(&file, warnings) else { continue };
            let v: serde_json::Value = match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(e) => {
                    warnings.push(format!("cannot parse {file}: {e}"));
                    continue;
                }
            };
            let dir = parent(&file);
            for section in ["autoload", "autoload-dev"] {
                let Some(map) = v.get(section).and_then(|a| a.get("psr-4")).and_then(|p| p.as_object()) else {
                    continue;
                };
                for (prefix, dirs) in map {
                    let dirs: Vec<String> = match dirs {
                        serde_json::Value::String(s) => vec![s.clone()],
                        serde_json::Value::Array(a) => a.iter().filter_map(|d| d.as_str().map(String::from)).collect(),
                        _ => Vec::new(),
                    };
                    let dirs = dirs.iter().filter_map(|d| join(dir, d)).collect();
                    psr4.push((prefix.trim_start_matches('\\').to_string(), dirs));
                }
            }
        }
        psr4.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
        let mut namespaces: HashMap<String, Vec<String>> = HashMap::new();
        for f in files.iter().filter(|f| f.lang == Lang::Php) {
            for ns in f.imports.iter().filter(|i| i.kind == kind::NAMESPACE) {
                namespaces.entry(ns.spec.clone()).or_default().push(f.path.clone());
            }
        }
        for v in namespaces.values_mut() {
            v.sort();
            v.dedup();
        }
        PhpIndex { psr4, namespaces }
    }

    pub fn resolve(&self, q: &Query) -> Resolution {
        match q.imp.kind.as_str() {
            kind::REQUIRE | kind::INCLUDE => path(q),
            kind::USE_STATIC => {
                let ns = q.spec.rsplit_once('\\').map(|(ns, _)| ns).unwrap_or("");
                match self.namespaces.get(ns) {
                    Some(files) => Resolution::Files(
                        files.iter().map(|f| Target::heuristic(f.clone(), NAMESPACE_CONFIDENCE)).collect(),
                    ),
                    None => self.missing(q.spec, ns),
                }
            }
            _ => self.class(q),
        }
    }

    fn class(&self, q: &Query) -> Resolution {
        let spec = q.spec;
        for (prefix, dirs) in &self.psr4 {
            let Some(rest) = spec.strip_prefix(prefix.as_str()) else { continue };
            let rel = format!("{}.php", rest.replace('\\', "/"));
            if let Some(p) = dirs.iter().filter_map(|d| join(d, &rel)).find(|p| q.files.contains(p)) {
                return Resolution::Files(vec![Target::exact(p)]);
            }
        }
        let (ns, name) = spec.rsplit_once('\\').unwrap_or(("", spec));
        if let Some(file) = self.namespaces.get(ns).and_then(|files| files.iter().find(|f| stem(f) == name)) {
            return Resolution::Files(vec![Target::heuristic(file.clone(), DECLARED_CLASS_CONFIDENCE)]);
        }
        if let Some(files) = self.namespaces.get(spec) {
            return Resolution::Files(
                files.iter().map(|f| Target::heuristic(f.clone(), NAMESPACE_CONFIDENCE)).collect(),
            );
        }
        if let Some((prefix, dirs)) = self.psr4.iter().find(|(p, _)| spec.starts_with(p.as_str())) {
            return Resolution::NotFound(format!(
                "PSR-4 maps {prefix} to {}, but no file there defines {spec}",
                dirs.join(", ")
            ));
        }
        self.missing(spec, ns)
    }

    fn missing(&self, spec: &str, ns: &str) -> Resolution {
        if !ns.is_empty() && self.namespaces.contains_key(ns) {
            return Resolution::NotFound(format!(
                "namespace {ns} is declared in the repository, but nothing defines {spec}"
            ));
        }
        Resolution::External(if ns.is_empty() { spec.to_string() } else { ns.to_string() })
    }
}

/// `require`/`include` of a path.
fn path(q: &Query) -> Resolution {
    let spec = q.spec;
    if spec.starts_with('/') {
        return Resolution::NotFound(format!("{spec} is an absolute path outside the repository"));
    }
    if let Some(p) = q.relative(spec).filter(|p| q.files.contains(p)) {
        return Resolution::Files(vec![Target::exact(p)]);
    }
    let relative = spec.starts_with("./") || spec.starts_with("../");
    if !relative {
        if let Some(p) = join("", spec).filter(|p| q.files.contains(p)) {
            return Resolution::Files(vec![Target::heuristic(p, ROOT_CONFIDENCE)]);
        }
    }
    Resolution::NotFound(format!("no file {spec} beside {} or at the repository root", q.file.path))
}
