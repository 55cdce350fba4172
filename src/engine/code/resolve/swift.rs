//! Swift (best effort, module level): `import M` binds the `.swift` files of a Swift package
//! target named `M` (`Sources/M/` or `Tests/M/` beside a `Package.swift`), with a low
//! confidence since the importer may use only some of them. Other modules are external.

use super::{file_name, join, parent, Query, RepoFiles, Resolution, Target};
use std::collections::HashMap;

const MODULE_CONFIDENCE: f32 = 0.5;

pub struct SwiftIndex {
    modules: HashMap<String, Vec<String>>,
}

impl SwiftIndex {
    pub fn new(files: &RepoFiles) -> SwiftIndex {
        let mut modules: HashMap<String, Vec<String>> = HashMap::new();
        let mut manifests: Vec<&String> = files.iter().filter(|f| file_name(f) == "Package.swift").collect();
        manifests.sort();
        for manifest in manifests {
            for top in ["Sources", "Tests"] {
                let Some(dir) = join(parent(manifest), top) else { continue };
                for target in files.subdirs(&dir) {
                    let swift: Vec<String> =
                        files.files_under(target).into_iter().filter(|f| f.ends_with(".swift")).cloned().collect();
                    if !swift.is_empty() {
                        modules.entry(file_name(target).to_string()).or_insert(swift);
                    }
                }
            }
        }
        SwiftIndex { modules }
    }

    pub fn resolve(&self, q: &Query) -> Resolution {
        match self.modules.get(q.spec) {
            Some(files) => {
                Resolution::Files(files.iter().map(|f| Target::heuristic(f.clone(), MODULE_CONFIDENCE)).collect())
            }
            None => Resolution::External(q.spec.to_string()),
        }
    }
}
