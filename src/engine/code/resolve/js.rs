//! JavaScript and TypeScript: relative paths with the extensions and index files Node and
//! TypeScript try (and a `.js` specifier standing for its `.ts` source), `paths` and `baseUrl`
//! from the nearest `tsconfig.json` / `jsconfig.json` (following a relative `extends`), and
//! packages of the repository itself by their `package.json` name (its `exports` map first,
//! then `source`/`module`/`main`/`types`, then an index file). Other bare specifiers are
//! external packages (`react`, `@scope/pkg`, `node:fs`).

use super::{join, parent, Manifests, Query, RepoFiles, Resolution, Target};
use crate::engine::code::Lang;
use std::collections::HashMap;

const TS_EXTS: &[&str] = &["ts", "tsx", "d.ts", "mts", "cts", "js", "jsx", "mjs", "cjs", "json"];
const JS_EXTS: &[&str] = &["js", "jsx", "mjs", "cjs", "ts", "tsx", "d.ts", "mts", "cts", "json"];

/// The module options of one config file, with paths made repo-relative.
#[derive(Debug, Clone, Default)]
struct Config {
    /// `baseUrl`, repo-relative.
    base_url: Option<String>,
    /// `paths` patterns and their targets, targets repo-relative.
    paths: Vec<(String, Vec<String>)>,
}

#[derive(Debug)]
struct Package {
    dir: String,
    entries: Vec<String>,
    /// `exports`: subpath (`.`, `./strings`, `./feature/*`) → its targets, repo-relative, most
    /// source-like condition first (a `*` in a pattern's targets stands for what it matched).
    exports: Vec<(String, Vec<String>)>,
}

pub struct JsIndex {
    root: std::path::PathBuf,
    configs: HashMap<String, Config>,
    packages: HashMap<String, Package>,
    /// Directory of a package.json → its `imports` (`#internal` specifiers), as `exports`.
    imports: HashMap<String, Vec<(String, Vec<String>)>>,
}

impl JsIndex {
    pub fn new(m: &Manifests, warnings: &mut Vec<String>) -> JsIndex {
        let mut configs = HashMap::new();
        for name in ["jsconfig.json", "tsconfig.json"] {
            for file in m.named(name) {
                if let Some(c) = load_config(m, &file, warnings, 0) {
                    configs.insert(parent(&file).to_string(), c);
                }
            }
        }
        let mut packages = HashMap::new();
        let mut imports = HashMap::new();
        for file in m.named("package.json") {
            let Some(text) = m.read(&file, warnings) else { continue };
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
                warnings.push(format!("cannot parse {file} as JSON"));
                continue;
            };
            let dir = parent(&file).to_string();
            if let Some(map) = v.get("imports").and_then(|i| i.as_object()) {
                imports.insert(dir.clone(), subpath_map(&dir, map));
            }
            let Some(name) = v.get("name").and_then(|n| n.as_str()) else { continue };
            let entries = ["source", "module", "main", "types", "typings"]
                .iter()
                .filter_map(|k| v.get(*k).and_then(|e| e.as_str()))
                .filter_map(|e| join(&dir, e))
                .collect();
            let exports = v.get("exports").map(|e| package_exports(&dir, e)).unwrap_or_default();
            packages.entry(name.to_string()).or_insert(Package { dir, entries, exports });
        }
        JsIndex { root: m.root.to_path_buf(), configs, packages, imports }
    }

    pub fn resolve(&self, q: &Query) -> Resolution {
        let spec = q.spec;
        let exts = if matches!(q.file.lang, Lang::TypeScript | Lang::Tsx) { TS_EXTS } else { JS_EXTS };
        if spec.starts_with("node:") {
            return Resolution::External(spec.to_string());
        }
        if is_relative(spec) {
            let Some(base) = q.relative(spec) else {
                return Resolution::NotFound(format!("{spec} points outside the repository"));
            };
            return match try_file_at(q.files, Some(&self.root), &base, exts, 0) {
                Some(p) => Resolution::Files(vec![Target::exact(p)]),
                None => Resolution::NotFound(format!(
                    "no file for {spec}: tried {base}{}, {base}.{{{}}}, {base}/package.json `main` and {base}/index.*",
                    emitted_note(&base),
                    exts.join(",")
                )),
            };
        }
        if spec.starts_with('#') {
            return self.subpath_import(q, exts);
        }
        if let Some(config) = self.nearest_config(q.dir()) {
            for (pattern, targets) in &config.paths {
                let Some(capture) = match_pattern(pattern, spec) else { continue };
                for t in targets {
                    let candidate = t.replacen('*', capture, 1);
                    if let Some(p) = try_file(q.files, &candidate, exts) {
                        return Resolution::Files(vec![Target::exact(p)]);
                    }
                }
                return Resolution::NotFound(format!(
                    "tsconfig/jsconfig `paths` maps {pattern} to {}, but no file matches {spec}",
                    targets.join(", ")
                ));
            }
            if let Some(base_url) = &config.base_url {
                if let Some(p) = join(base_url, spec).and_then(|b| try_file(q.files, &b, exts)) {
                    return Resolution::Files(vec![Target::exact(p)]);
                }
            }
        }
        if let Some(p) = spec.strip_prefix('/') {
            if let Some(found) = try_file(q.files, p, exts) {
                return Resolution::Files(vec![Target::heuristic(found, 0.7)]);
            }
            return Resolution::NotFound(format!("no repository file for the absolute path {spec}"));
        }
        let name = package_name(spec);
        if let Some(pkg) = self.packages.get(name) {
            let sub = spec[name.len()..].trim_start_matches('/');
            let exported = exported_file(pkg, sub, q.files, exts);
            let found = if exported.is_some() {
                exported
            } else if sub.is_empty() {
                pkg.entries.iter().find_map(|e| try_file(q.files, e, exts)).or_else(|| {
                    try_file(q.files, &format!("{}/index", pkg.dir), exts)
                        .or_else(|| join(&pkg.dir, "src/index").and_then(|b| try_file(q.files, &b, exts)))
                })
            } else {
                join(&pkg.dir, sub).and_then(|b| try_file(q.files, &b, exts))
            };
            return match found {
                Some(p) => Resolution::Files(vec![Target::exact(p)]),
                None => Resolution::NotFound(format!(
                    "{spec} names the repository package {name} in {}/, but no file matches",
                    pkg.dir
                )),
            };
        }
        Resolution::External(name.to_string())
    }

    /// `import '#utils/log'`: the nearest package.json's `imports` (Node's subpath imports,
    /// private to that package: never an external package).
    fn subpath_import(&self, q: &Query, exts: &[&str]) -> Resolution {
        let mut d = q.dir();
        let map = loop {
            if let Some(m) = self.imports.get(d) {
                break m;
            }
            if d.is_empty() {
                return Resolution::NotFound(format!(
                    "{} is a package subpath import, but no package.json above {} has `imports`",
                    q.spec, q.file.path
                ));
            }
            d = parent(d);
        };
        match mapped_file(map, q.spec, q.files, exts) {
            Some(p) => Resolution::Files(vec![Target::exact(p)]),
            None => Resolution::NotFound(format!(
                "{}: the `imports` of {} map no repository file to it",
                q.spec,
                if d.is_empty() { "package.json".to_string() } else { format!("{d}/package.json") }
            )),
        }
    }

    /// The config of the nearest directory at or above `dir` that has one.
    fn nearest_config(&self, dir: &str) -> Option<&Config> {
        let mut d = dir;
        loop {
            if let Some(c) = self.configs.get(d) {
                return Some(c);
            }
            if d.is_empty() {
                return None;
            }
            d = parent(d);
        }
    }
}

fn is_relative(spec: &str) -> bool {
    spec == "." || spec == ".." || spec.starts_with("./") || spec.starts_with("../")
}

/// The file a package's `exports` gives for subpath `sub` (`""` for the package itself): the
/// exact key, else the pattern with the longest prefix before its `*`, as Node picks; its
/// first target that is a repository file (`dist/` output is usually not one).
fn exported_file(pkg: &Package, sub: &str, files: &RepoFiles, exts: &[&str]) -> Option<String> {
    let key = if sub.is_empty() { ".".to_string() } else { format!("./{sub}") };
    mapped_file(&pkg.exports, &key, files, exts)
}

/// The file an `exports` or `imports` map gives for `key`: the exact key, else the pattern
/// with the longest prefix before its `*`; its first target that is a repository file.
fn mapped_file(map: &[(String, Vec<String>)], key: &str, files: &RepoFiles, exts: &[&str]) -> Option<String> {
    let (targets, capture) = match map.iter().find(|(k, _)| k == key) {
        Some((_, t)) => (t, ""),
        None => map
            .iter()
            .filter_map(|(k, t)| Some((k.split('*').next().map_or(0, str::len), t, match_pattern(k, key)?)))
            .max_by_key(|(prefix, _, _)| *prefix)
            .map(|(_, t, c)| (t, c))?,
    };
    targets.iter().find_map(|t| try_file(files, &t.replace('*', capture), exts))
}

/// Conditions tried first in an `exports` entry: where a package's own source is named.
const SOURCE_CONDITIONS: &[&str] = &["source", "development", "import", "module", "require", "node", "default"];

/// A package.json `exports` value as (subpath, targets): a string or a conditions object is
/// the `.` entry; an object of `./` keys maps each subpath (`null` blocks one: no targets).
fn package_exports(dir: &str, exports: &serde_json::Value) -> Vec<(String, Vec<String>)> {
    match exports.as_object() {
        Some(o) if o.keys().any(|k| k.starts_with('.')) => subpath_map(dir, o),
        _ => {
            let mut targets = Vec::new();
            export_targets(exports, &mut targets, 0);
            vec![(".".to_string(), targets.iter().filter_map(|t| join(dir, t)).collect())]
        }
    }
}

/// An object of subpaths (`./x` of `exports`, `#x` of `imports`) → their targets, repo-relative.
fn subpath_map(dir: &str, map: &serde_json::Map<String, serde_json::Value>) -> Vec<(String, Vec<String>)> {
    map.iter()
        .map(|(k, v)| {
            let mut targets = Vec::new();
            export_targets(v, &mut targets, 0);
            (k.clone(), targets.iter().filter_map(|t| join(dir, t)).collect())
        })
        .collect()
}

/// The target strings of one `exports` entry, source-like conditions first, then the rest in
/// file order (nested conditions and fallback arrays, at most 8 levels deep).
fn export_targets(v: &serde_json::Value, out: &mut Vec<String>, depth: u32) {
    if depth > 8 {
        return;
    }
    match v {
        serde_json::Value::String(s) if s.starts_with("./") => out.push(s.clone()),
        serde_json::Value::Array(a) => a.iter().for_each(|x| export_targets(x, out, depth + 1)),
        serde_json::Value::Object(o) => {
            for c in SOURCE_CONDITIONS {
                if let Some(x) = o.get(*c) {
                    export_targets(x, out, depth + 1);
                }
            }
            for (_, x) in o.iter().filter(|(k, _)| !SOURCE_CONDITIONS.contains(&k.as_str())) {
                export_targets(x, out, depth + 1);
            }
        }
        _ => {}
    }
}

/// `@scope/name` or `name` from a bare specifier.
fn package_name(spec: &str) -> &str {
    let mut ends = spec.match_indices('/').map(|(i, _)| i);
    let end = if spec.starts_with('@') { ends.nth(1) } else { ends.next() };
    &spec[..end.unwrap_or(spec.len())]
}

/// The file Node/TypeScript would load for `base` (repo-relative), without reading
/// package.json files.
fn try_file(files: &RepoFiles, base: &str, exts: &[&str]) -> Option<String> {
    try_file_at(files, None, base, exts, 0)
}

/// The TypeScript files a specifier ending in an emitted name (`./a.js`) may mean, in the
/// order TypeScript tries them: `import type {A} from '../types/a.js'` names `types/a.d.ts`
/// (fastify's type tests: 30 imports reported unresolved, their importers missing from impact).
const EMITTED_NAMES: [(&str, &[&str]); 4] = [
    (".js", &[".ts", ".tsx", ".d.ts"]),
    (".jsx", &[".tsx"]),
    (".mjs", &[".mts", ".d.mts"]),
    (".cjs", &[".cts", ".d.cts"]),
];

/// The TypeScript names tried for an emitted name, as a refusal lists them (`` (and
/// types/a.{ts,tsx,d.ts})``), or nothing.
fn emitted_note(base: &str) -> String {
    EMITTED_NAMES
        .iter()
        .find_map(|(js, ts)| {
            let stem = base.strip_suffix(js)?;
            let exts: Vec<&str> = ts.iter().map(|t| t.trim_start_matches('.')).collect();
            Some(format!(" (and {stem}.{{{}}})", exts.join(",")))
        })
        .unwrap_or_default()
}

/// [`try_file`], following a directory's package.json `main` when `root` is given.
fn try_file_at(
    files: &RepoFiles,
    root: Option<&std::path::Path>,
    base: &str,
    exts: &[&str],
    depth: u32,
) -> Option<String> {
    let base = base.trim_end_matches('/');
    if files.contains(base) {
        return Some(base.to_string());
    }
    // TypeScript sources, and declaration files, are imported by their emitted `.js` name.
    for (js, ts) in EMITTED_NAMES {
        if let Some(stem) = base.strip_suffix(js) {
            for t in ts {
                let c = format!("{stem}{t}");
                if files.contains(&c) {
                    return Some(c);
                }
            }
        }
    }
    for ext in exts {
        let c = format!("{base}.{ext}");
        if files.contains(&c) {
            return Some(c);
        }
    }
    // A directory: its package.json `main`, then its index file.
    let manifest = if base.is_empty() { "package.json".to_string() } else { format!("{base}/package.json") };
    if depth == 0 && files.contains(&manifest) {
        if let Some(main) = root.and_then(|r| package_main(&r.join(&manifest))) {
            if let Some(found) = join(base, &main).and_then(|m| try_file_at(files, root, &m, exts, depth + 1)) {
                return Some(found);
            }
        }
    }
    for ext in exts {
        let c = if base.is_empty() { format!("index.{ext}") } else { format!("{base}/index.{ext}") };
        if files.contains(&c) {
            return Some(c);
        }
    }
    None
}

/// The `main` entry of a package.json on disk.
fn package_main(path: &std::path::Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("main").and_then(|m| m.as_str()).map(str::to_string)
}

/// Matches a `paths` pattern (at most one `*`); returns what the `*` matched.
fn match_pattern<'a>(pattern: &str, spec: &'a str) -> Option<&'a str> {
    match pattern.split_once('*') {
        None => (pattern == spec).then_some(""),
        Some((pre, post)) => {
            if spec.len() >= pre.len() + post.len() && spec.starts_with(pre) && spec.ends_with(post) {
                Some(&spec[pre.len()..spec.len() - post.len()])
            } else {
                None
            }
        }
    }
}

/// Reads a tsconfig/jsconfig (JSON with comments and trailing commas), following a relative
/// `extends`; the file's own options win over the extended ones.
fn load_config(m: &Manifests, file: &str, warnings: &mut Vec<String>, depth: u32) -> Option<Config> {
    let text = m.read(file, warnings)?;
    let v: serde_json::Value = match serde_json::from_str(&strip_jsonc(&text)) {
        Ok(v) => v,
        Err(e) => {
            warnings.push(format!("cannot parse {file}: {e}"));
            return None;
        }
    };
    let dir = parent(file);
    let mut config = match v.get("extends").and_then(|e| e.as_str()) {
        Some(ext) if depth < 5 && (ext.starts_with("./") || ext.starts_with("../")) => {
            let ext_path = join(dir, ext).map(|p| if p.ends_with(".json") { p } else { format!("{p}.json") });
            ext_path.and_then(|p| load_config(m, &p, warnings, depth + 1)).unwrap_or_default()
        }
        _ => Config::default(),
    };
    let opts = v.get("compilerOptions");
    let base_url = opts.and_then(|o| o.get("baseUrl")).and_then(|b| b.as_str()).and_then(|b| join(dir, b));
    if let Some(b) = &base_url {
        config.base_url = Some(b.clone());
    }
    if let Some(paths) = opts.and_then(|o| o.get("paths")).and_then(|p| p.as_object()) {
        let base = base_url.unwrap_or_else(|| dir.to_string());
        config.paths = paths
            .iter()
            .map(|(pattern, targets)| {
                let targets = targets
                    .as_array()
                    .map(|a| a.iter().filter_map(|t| t.as_str()).filter_map(|t| join(&base, t)).collect())
                    .unwrap_or_default();
                (pattern.clone(), targets)
            })
            .collect();
        // Longest prefix first, as TypeScript picks the most specific pattern.
        config.paths.sort_by_key(|(p, _)| std::cmp::Reverse(p.split('*').next().map(str::len).unwrap_or(0)));
    }
    Some(config)
}

/// Removes `//` and `/* */` comments (outside strings), then trailing commas.
pub(crate) fn strip_jsonc(text: &str) -> String {
    let no_comments = scan_json(text, |_, c, next, out, skip| match (c, next) {
        ('/', Some('/')) => *skip = Skip::Line,
        ('/', Some('*')) => *skip = Skip::Block,
        _ => out.push(c),
    });
    let chars: Vec<char> = no_comments.chars().collect();
    scan_json(&no_comments, |at, c, _, out, _| {
        if c == ',' && matches!(chars[at + 1..].iter().find(|c| !c.is_whitespace()), Some('}') | Some(']')) {
            return;
        }
        out.push(c);
    })
}

#[derive(PartialEq)]
enum Skip {
    None,
    Line,
    Block,
}

/// Walks JSON text, copying strings verbatim and handing every other character to `f`
/// (which may start skipping a comment).
fn scan_json(text: &str, mut f: impl FnMut(usize, char, Option<char>, &mut String, &mut Skip)) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut skip = Skip::None;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        i += 1;
        match skip {
            Skip::Line => {
                if c == '\n' {
                    skip = Skip::None;
                    out.push(c);
                }
                continue;
            }
            Skip::Block => {
                if c == '*' && next == Some('/') {
                    skip = Skip::None;
                    i += 1;
                }
                continue;
            }
            Skip::None => {}
        }
        if in_string {
            out.push(c);
            if c == '\\' {
                if let Some(n) = next {
                    out.push(n);
                    i += 1;
                }
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        if c == '"' {
            in_string = true;
            out.push(c);
            continue;
        }
        f(i - 1, c, next, &mut out, &mut skip);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonc_comments_and_trailing_commas() {
        let v: serde_json::Value =
            serde_json::from_str(&strip_jsonc("{ // c\n \"a\": \"x//y\", /* b */ \"b\": [1, 2, // two\n],\n}"))
                .expect("json");
        assert_eq!(v["a"], "x//y");
        assert_eq!(v["b"][1], 2);
    }

    #[test]
    fn package_names_and_patterns() {
        assert_eq!(package_name("@scope/pkg/sub"), "@scope/pkg");
        assert_eq!(package_name("lodash/fp"), "lodash");
        assert_eq!(package_name("react"), "react");
        assert_eq!(match_pattern("@models/*", "@models/user"), Some("user"));
        assert_eq!(match_pattern("@utils", "@utils"), Some(""));
        assert_eq!(match_pattern("@utils", "@utils/x"), None);
    }
}
