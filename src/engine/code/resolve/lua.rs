//! Lua: `require "a.b"` looks for `a/b.lua` and `a/b/init.lua` from the repository root (the
//! default `./?.lua;./?/init.lua` path), then from directories named `lua`, `src` or `lib`;
//! `dofile`/`loadfile` paths from the root, then the file's directory. Modules found nowhere
//! are external (`cjson`, `lpeg`).

use super::{file_name, join, Query, RepoFiles, Resolution, Target};
use crate::engine::code::imports::kind;

const SOURCE_DIR_CONFIDENCE: f32 = 0.9;
const ROOT_PATH_CONFIDENCE: f32 = 0.8;
const FILE_DIR_CONFIDENCE: f32 = 0.7;

pub struct LuaIndex {
    source_dirs: Vec<String>,
}

impl LuaIndex {
    pub fn new(files: &RepoFiles) -> LuaIndex {
        let mut source_dirs: Vec<String> =
            files.dirs().filter(|d| matches!(file_name(d), "lua" | "src" | "lib")).cloned().collect();
        source_dirs.sort();
        LuaIndex { source_dirs }
    }

    pub fn resolve(&self, q: &Query) -> Resolution {
        let spec = q.spec;
        if q.imp.kind == kind::LOAD_PATH {
            if let Some(p) = join("", spec).filter(|p| q.files.contains(p)) {
                return Resolution::Files(vec![Target::heuristic(p, ROOT_PATH_CONFIDENCE)]);
            }
            if let Some(p) = q.relative(spec).filter(|p| q.files.contains(p)) {
                return Resolution::Files(vec![Target::heuristic(p, FILE_DIR_CONFIDENCE)]);
            }
            return Resolution::NotFound(format!("no file {spec} at the repository root or beside {}", q.file.path));
        }
        let rel = spec.replace('.', "/");
        let module = |dir: &str| {
            let base = join(dir, &rel)?;
            q.files.first_existing([format!("{base}.lua"), format!("{base}/init.lua")].iter().map(String::as_str))
        };
        if let Some(p) = module("") {
            return Resolution::Files(vec![Target::exact(p)]);
        }
        for d in &self.source_dirs {
            if let Some(p) = module(d) {
                return Resolution::Files(vec![Target::heuristic(p, SOURCE_DIR_CONFIDENCE)]);
            }
        }
        Resolution::External(spec.split('.').next().unwrap_or(spec).to_string())
    }
}
