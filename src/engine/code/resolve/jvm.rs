//! Java and Kotlin: an index of declared packages and of classes by (package, file name), from
//! the `package` declarations the extractor recorded. `import a.b.C` (also nested classes and
//! static members) resolves to the file of class `C`; `import a.b.*` to every file of the
//! package; a Kotlin top-level function or property import to the files of its package. Packages
//! the repository does not declare are external.

use super::{stem, Query, Resolution, Target};
use crate::engine::code::imports::kind;
use crate::engine::code::types::FileImports;
use crate::engine::code::Lang;
use std::collections::HashMap;

/// Confidence of a wildcard import's edge to each file of the package.
const WILDCARD_CONFIDENCE: f32 = 0.7;
/// Confidence of a Kotlin top-level member import's edge to each file of its package.
const PACKAGE_MEMBER_CONFIDENCE: f32 = 0.6;

pub struct JvmIndex {
    packages: HashMap<String, Vec<String>>,
    classes: HashMap<(String, String), String>,
}

impl JvmIndex {
    pub fn new(files: &[FileImports]) -> JvmIndex {
        let mut packages: HashMap<String, Vec<String>> = HashMap::new();
        let mut classes = HashMap::new();
        let mut sorted: Vec<&FileImports> =
            files.iter().filter(|f| matches!(f.lang, Lang::Java | Lang::Kotlin)).collect();
        sorted.sort_by(|a, b| a.path.cmp(&b.path));
        for f in sorted {
            let pkg = f.imports.iter().find(|i| i.kind == kind::PACKAGE).map(|i| i.spec.clone()).unwrap_or_default();
            packages.entry(pkg.clone()).or_default().push(f.path.clone());
            classes.entry((pkg, stem(&f.path).to_string())).or_insert_with(|| f.path.clone());
        }
        JvmIndex { packages, classes }
    }

    pub fn resolve(&self, q: &Query) -> Resolution {
        let wildcard = q.spec.ends_with(".*");
        let name = q.spec.trim_end_matches(".*");
        let segs: Vec<&str> = name.split('.').collect();
        if wildcard {
            if let Some(files) = self.packages.get(name) {
                return Resolution::Files(
                    files.iter().map(|f| Target::heuristic(f.clone(), WILDCARD_CONFIDENCE)).collect(),
                );
            }
        }
        // The class: the longest package prefix whose next segment names a class file.
        for k in (1..segs.len()).rev() {
            if let Some(file) = self.classes.get(&(segs[..k].join("."), segs[k].to_string())) {
                return Resolution::Files(vec![Target::exact(file.clone())]);
            }
        }
        if !wildcard && segs.len() > 1 {
            if let Some(files) = self.packages.get(&segs[..segs.len() - 1].join(".")) {
                return Resolution::Files(
                    files.iter().map(|f| Target::heuristic(f.clone(), PACKAGE_MEMBER_CONFIDENCE)).collect(),
                );
            }
        }
        let package = if wildcard { name.to_string() } else { package_part(&segs) };
        if self.packages.contains_key(&package) {
            return Resolution::NotFound(format!(
                "package {package} is declared in the repository, but no file declares {name}"
            ));
        }
        Resolution::External(package)
    }
}

/// The package of a qualified name: the segments before the first capitalized one.
fn package_part(segs: &[&str]) -> String {
    let end =
        segs.iter().position(|s| s.starts_with(|c: char| c.is_uppercase())).unwrap_or(segs.len().saturating_sub(1));
    let end = if end == 0 { segs.len() } else { end };
    segs[..end].join(".")
}
