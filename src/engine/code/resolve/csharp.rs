//! C# (best effort): `using A.B;` imports a namespace, so it gets an edge to every file that
//! declares `namespace A.B` (heuristic); `using static A.B.C;` and `using X = A.B.C;` name a
//! type, resolved to the file `C.cs` declaring namespace `A.B` when there is one. Namespaces
//! the repository does not declare are external (`System`, `Newtonsoft.Json`).

use super::{stem, Query, Resolution, Target};
use crate::engine::code::imports::kind;
use crate::engine::code::types::FileImports;
use crate::engine::code::Lang;
use std::collections::{HashMap, HashSet};

const NAMESPACE_CONFIDENCE: f32 = 0.6;
const TYPE_CONFIDENCE: f32 = 0.9;

pub struct CsIndex {
    namespaces: HashMap<String, Vec<String>>,
    root_names: HashSet<String>,
}

impl CsIndex {
    pub fn new(files: &[FileImports]) -> CsIndex {
        let mut namespaces: HashMap<String, Vec<String>> = HashMap::new();
        for f in files.iter().filter(|f| f.lang == Lang::CSharp) {
            for ns in f.imports.iter().filter(|i| i.kind == kind::NAMESPACE) {
                let v = namespaces.entry(ns.spec.clone()).or_default();
                if !v.contains(&f.path) {
                    v.push(f.path.clone());
                }
            }
        }
        for v in namespaces.values_mut() {
            v.sort();
        }
        let root_names = namespaces.keys().map(|n| n.split('.').next().unwrap_or(n).to_string()).collect();
        CsIndex { namespaces, root_names }
    }

    pub fn resolve(&self, q: &Query) -> Resolution {
        let spec = q.spec;
        let as_type = || {
            let (ns, name) = spec.rsplit_once('.')?;
            let files = self.namespaces.get(ns)?;
            let file = files.iter().find(|f| stem(f) == name)?;
            Some(Resolution::Files(vec![Target::heuristic(file.clone(), TYPE_CONFIDENCE)]))
        };
        let as_namespace = |ns: &str| {
            self.namespaces.get(ns).map(|files| {
                Resolution::Files(files.iter().map(|f| Target::heuristic(f.clone(), NAMESPACE_CONFIDENCE)).collect())
            })
        };
        let found = if q.imp.kind == kind::USE_STATIC {
            as_type()
                .or_else(|| as_namespace(spec))
                .or_else(|| spec.rsplit_once('.').and_then(|(ns, _)| as_namespace(ns)))
        } else {
            as_namespace(spec).or_else(as_type)
        };
        if let Some(res) = found {
            return res;
        }
        let first = spec.split('.').next().unwrap_or(spec);
        if self.root_names.contains(first) {
            return Resolution::NotFound(format!("no file of the repository declares namespace {spec}"));
        }
        Resolution::External(spec.to_string())
    }
}
