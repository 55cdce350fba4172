//! C and C++: `#include "x"` relative to the including file, then in the include directories
//! found in the tree (directories named `include` or `inc`, nearest first), then from the
//! repository root, then (heuristic) any file whose path ends with `/x`, the one nearest the
//! including file winning. `#include <x>` looks only in the include directories, and is a
//! system or third-party header (external) otherwise.

use super::{file_name, parent, Query, RepoFiles, Resolution, Target};
use crate::engine::code::imports::kind;
use std::collections::{HashMap, HashSet};

const INCLUDE_DIR_CONFIDENCE: f32 = 0.9;
const ROOT_CONFIDENCE: f32 = 0.8;
const SUFFIX_CONFIDENCE: f32 = 0.6;

pub struct IncludeIndex {
    include_dirs: HashSet<String>,
    by_name: HashMap<String, Vec<String>>,
}

impl IncludeIndex {
    pub fn new(files: &RepoFiles) -> IncludeIndex {
        let include_dirs = files.dirs().filter(|d| matches!(file_name(d), "include" | "inc")).cloned().collect();
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
        let spec = q.spec.trim_start_matches("./");
        let quoted = q.imp.kind == kind::INCLUDE;
        if quoted {
            if let Some(p) = q.relative(q.spec).filter(|p| q.files.contains(p)) {
                return Resolution::Files(vec![Target::exact(p)]);
            }
        }
        // Every file whose path ends with the included path, with the directory it would be
        // included from; the one nearest the including file wins.
        let suffix = format!("/{spec}");
        let mut candidates: Vec<(&str, &String)> = self
            .by_name
            .get(file_name(spec))
            .into_iter()
            .flatten()
            .filter_map(|p| if p == spec { Some(("", p)) } else { p.strip_suffix(&suffix).map(|dir| (dir, p)) })
            .collect();
        let nearest = |a: &(&str, &String), b: &(&str, &String)| {
            common_prefix(b.1, &q.file.path)
                .cmp(&common_prefix(a.1, &q.file.path))
                .then(a.1.len().cmp(&b.1.len()))
                .then(a.1.cmp(b.1))
        };
        candidates.sort_by(nearest);
        if let Some((_, p)) = candidates.iter().find(|(dir, _)| self.include_dirs.contains(*dir)) {
            return Resolution::Files(vec![Target::heuristic((*p).clone(), INCLUDE_DIR_CONFIDENCE)]);
        }
        if !quoted {
            return Resolution::External(spec.to_string());
        }
        if let Some((_, p)) = candidates.iter().find(|(dir, _)| dir.is_empty()) {
            return Resolution::Files(vec![Target::heuristic((*p).clone(), ROOT_CONFIDENCE)]);
        }
        match candidates.first() {
            Some((_, p)) => Resolution::Files(vec![Target::heuristic((*p).clone(), SUFFIX_CONFIDENCE)]),
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
