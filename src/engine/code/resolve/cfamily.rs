//! C and C++: `#include "x"` relative to the including file, then in the include directories
//! found in the tree (directories named `include` or `inc`, nearest first), then from the
//! repository root, then (heuristic) any file whose path ends with `/x`, the one nearest the
//! including file winning. `#include <x>` looks only in the include directories, and is a
//! system or third-party header (external) otherwise.

use super::{file_name, join, parent, Query, RepoFiles, Resolution, Target};
use crate::engine::code::imports::kind;
use std::collections::HashMap;

const INCLUDE_DIR_CONFIDENCE: f32 = 0.9;
const ROOT_CONFIDENCE: f32 = 0.8;
const SUFFIX_CONFIDENCE: f32 = 0.6;

pub struct IncludeIndex {
    include_dirs: Vec<String>,
    by_name: HashMap<String, Vec<String>>,
}

impl IncludeIndex {
    pub fn new(files: &RepoFiles) -> IncludeIndex {
        let mut include_dirs: Vec<String> =
            files.dirs().filter(|d| matches!(file_name(d), "include" | "inc")).cloned().collect();
        include_dirs.sort();
        let mut by_name: HashMap<String, Vec<String>> = HashMap::new();
        for f in files.iter() {
            by_name.entry(file_name(f).to_string()).or_default().push(f.clone());
        }
        for v in by_name.values_mut() {
            v.sort();
        }
        IncludeIndex { include_dirs, by_name }
    }

    pub fn resolve(&self, q: &Query) -> Resolution {
        let spec = q.spec;
        let quoted = q.imp.kind == kind::INCLUDE;
        if quoted {
            if let Some(p) = q.relative(spec).filter(|p| q.files.contains(p)) {
                return Resolution::Files(vec![Target::exact(p)]);
            }
        }
        let mut dirs: Vec<&String> = self.include_dirs.iter().collect();
        dirs.sort_by_key(|d| std::cmp::Reverse(common_prefix(d, &q.file.path)));
        for d in dirs {
            if let Some(p) = join(d, spec).filter(|p| q.files.contains(p)) {
                return Resolution::Files(vec![Target::heuristic(p, INCLUDE_DIR_CONFIDENCE)]);
            }
        }
        if !quoted {
            return Resolution::External(spec.to_string());
        }
        if let Some(p) = join("", spec).filter(|p| q.files.contains(p)) {
            return Resolution::Files(vec![Target::heuristic(p, ROOT_CONFIDENCE)]);
        }
        let suffix = format!("/{}", spec.trim_start_matches("./"));
        let best =
            self.by_name.get(file_name(spec)).into_iter().flatten().filter(|p| p.ends_with(&suffix)).max_by(|a, b| {
                common_prefix(a, &q.file.path)
                    .cmp(&common_prefix(b, &q.file.path))
                    .then(b.len().cmp(&a.len()))
                    .then(b.cmp(a))
            });
        match best {
            Some(p) => Resolution::Files(vec![Target::heuristic(p.clone(), SUFFIX_CONFIDENCE)]),
            None => Resolution::NotFound(format!(
                "no {spec} beside {}, in the include directories found in the tree, or anywhere else in the repository",
                q.file.path
            )),
        }
    }
}

/// How many leading directories two paths share.
fn common_prefix(a: &str, b: &str) -> usize {
    parent(a).split('/').zip(parent(b).split('/')).take_while(|(x, y)| x == y && !x.is_empty()).count()
}
