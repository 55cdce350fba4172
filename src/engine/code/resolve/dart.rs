//! Dart: relative URIs from the file's directory, `package:<name>/x.dart` through the
//! `pubspec.yaml` of that name (its `lib/x.dart`), `part` files; `dart:` libraries and other
//! packages are external.

use super::{join, parent, Manifests, Query, Resolution, Target};
use std::collections::HashMap;

pub struct DartIndex {
    packages: HashMap<String, String>,
}

impl DartIndex {
    pub fn new(m: &Manifests) -> DartIndex {
        let mut ignored = Vec::new();
        let mut packages = HashMap::new();
        for file in m.named("pubspec.yaml") {
            let Some(text) = m.read(&file, &mut ignored) else { continue };
            let name = text
                .lines()
                .find_map(|l| l.strip_prefix("name:"))
                .map(|n| n.split('#').next().unwrap_or("").trim().trim_matches(['"', '\'']).to_string());
            if let Some(name) = name.filter(|n| !n.is_empty()) {
                packages.entry(name).or_insert_with(|| parent(&file).to_string());
            }
        }
        DartIndex { packages }
    }

    pub fn resolve(&self, q: &Query) -> Resolution {
        let spec = q.spec;
        if spec.starts_with("dart:") {
            return Resolution::External(spec.to_string());
        }
        if let Some(rest) = spec.strip_prefix("package:") {
            let (name, path) = rest.split_once('/').unwrap_or((rest, ""));
            let Some(dir) = self.packages.get(name) else { return Resolution::External(name.to_string()) };
            return match join(dir, &format!("lib/{path}")).filter(|p| q.files.contains(p)) {
                Some(p) => Resolution::Files(vec![Target::exact(p)]),
                None => {
                    Resolution::NotFound(format!("package {name} is {dir}/ (pubspec.yaml), but it has no lib/{path}"))
                }
            };
        }
        match q.relative(spec) {
            Some(p) if q.files.contains(&p) => Resolution::Files(vec![Target::exact(p)]),
            Some(p) => Resolution::NotFound(format!("{p} is not a file of the repository")),
            None => Resolution::NotFound(format!("{spec} points outside the repository")),
        }
    }
}
