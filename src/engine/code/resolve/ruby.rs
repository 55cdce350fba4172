//! Ruby: `require_relative` from the file's directory; `require` through the load path, taken
//! to be the `lib/` directories of the tree (the one above the file first) and then the
//! repository root; `load` from the root. Anything else is a gem (external).

use super::{file_name, join, Query, RepoFiles, Resolution, Target};
use crate::engine::code::imports::kind;

const OTHER_LIB_CONFIDENCE: f32 = 0.9;
const ROOT_CONFIDENCE: f32 = 0.8;

pub struct RubyIndex {
    lib_dirs: Vec<String>,
}

impl RubyIndex {
    pub fn new(files: &RepoFiles) -> RubyIndex {
        let mut lib_dirs: Vec<String> = files.dirs().filter(|d| file_name(d) == "lib").cloned().collect();
        lib_dirs.sort();
        RubyIndex { lib_dirs }
    }

    pub fn resolve(&self, q: &Query) -> Resolution {
        let spec = q.spec;
        match q.imp.kind.as_str() {
            kind::REQUIRE_RELATIVE => match q.relative(spec).and_then(|b| rb_file(q.files, &b)) {
                Some(p) => Resolution::Files(vec![Target::exact(p)]),
                None => Resolution::NotFound(format!("no {spec}.rb beside {}", q.file.path)),
            },
            kind::LOAD_PATH => match join("", spec)
                .and_then(|b| rb_file(q.files, &b))
                .or_else(|| q.relative(spec).and_then(|b| rb_file(q.files, &b)))
            {
                Some(p) => Resolution::Files(vec![Target::heuristic(p, ROOT_CONFIDENCE)]),
                None => {
                    Resolution::NotFound(format!("no file {spec} at the repository root or beside {}", q.file.path))
                }
            },
            _ => {
                let mut order: Vec<(&str, Option<f32>)> = Vec::new();
                let own =
                    self.lib_dirs.iter().filter(|d| q.file.path.starts_with(&format!("{d}/"))).max_by_key(|d| d.len());
                if let Some(d) = own {
                    order.push((d, None));
                }
                order.extend(
                    self.lib_dirs.iter().filter(|d| Some(*d) != own).map(|d| (d.as_str(), Some(OTHER_LIB_CONFIDENCE))),
                );
                order.push(("", Some(ROOT_CONFIDENCE)));
                for (dir, confidence) in order {
                    if let Some(p) = join(dir, spec).and_then(|b| rb_file(q.files, &b)) {
                        return Resolution::Files(vec![match confidence {
                            None => Target::exact(p),
                            Some(c) => Target::heuristic(p, c),
                        }]);
                    }
                }
                Resolution::External(spec.split('/').next().unwrap_or(spec).to_string())
            }
        }
    }
}

/// `base` or `base.rb`.
fn rb_file(files: &RepoFiles, base: &str) -> Option<String> {
    if base.ends_with(".rb") && files.contains(base) {
        return Some(base.to_string());
    }
    let with = format!("{base}.rb");
    files.contains(&with).then_some(with)
}
