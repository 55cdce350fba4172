//! Folding dynamic import arguments to strings at parse time.
//!
//! A [`Folded`] value is what is statically known about a string expression: one or more
//! candidate strings (a constant bound to either of two literals gives two), exact or with
//! `*` holes where a part is only known at run time. The language extractors evaluate their
//! expressions (concatenation, template strings, `path.join`, `os.path.join`, `__DIR__ . '/x'`,
//! f-strings) into this one shape against an [`Env`] of the file's constant bindings, and turn
//! the result into a [`RawImport`]: exact values are imports with `dynamic` set; inexact ones
//! become unresolvable imports whose `spec` is the pattern (`./plugins/*`).
//!
//! Paths are relative to the importing file's directory: `__dirname`, `__DIR__`, `__dir__` and
//! `dirname(__file__)` fold to `"."`, and `__file__` / `__FILE__` to [`THIS_FILE`].

use super::RawImport;
use std::collections::HashMap;

/// Most candidates kept for one expression (the first ones in source order); the graph
/// resolves at most `[code_intelligence] dynamic_import_scan_limit` of them.
pub const MAX_CANDIDATES: usize = 32;

/// The importing file itself, as a path value (its directory is `"."`).
pub const THIS_FILE: &str = "\u{0}file";

/// A string expression as far as it is known statically.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Folded {
    /// Candidate values in source order; with holes (`*`) when not `exact`.
    pub values: Vec<String>,
    /// True when every part was known.
    pub exact: bool,
}

impl Folded {
    /// A literal.
    pub fn lit(s: impl Into<String>) -> Folded {
        Folded { values: vec![s.into()], exact: true }
    }

    /// Something only known at run time.
    pub fn unknown() -> Folded {
        Folded { values: vec!["*".to_string()], exact: false }
    }

    /// `self + other`, every combination of candidates.
    pub fn concat(&self, other: &Folded) -> Folded {
        let mut values = Vec::new();
        for a in &self.values {
            for b in &other.values {
                push_unique(&mut values, merge_holes(&format!("{a}{b}")));
            }
        }
        values.truncate(MAX_CANDIDATES);
        Folded { values, exact: self.exact && other.exact }
    }

    /// Concatenation of several parts.
    pub fn concat_all(parts: &[Folded]) -> Folded {
        parts.iter().fold(Folded::lit(""), |acc, p| acc.concat(p))
    }

    /// Either `self` or `other` (a conditional, or a name bound twice).
    pub fn union(&self, other: &Folded) -> Folded {
        let mut values = self.values.clone();
        for v in &other.values {
            push_unique(&mut values, v.clone());
        }
        values.truncate(MAX_CANDIDATES);
        Folded { values, exact: self.exact && other.exact }
    }

    /// Applies `f` to every candidate.
    pub fn map(&self, f: impl Fn(&str) -> String) -> Folded {
        let mut values = Vec::new();
        for v in &self.values {
            push_unique(&mut values, f(v));
        }
        Folded { values, exact: self.exact }
    }

    /// `path.join(parts...)` / `os.path.join(parts...)`: joined with `/` and normalized.
    pub fn join_path(parts: &[Folded]) -> Folded {
        let mut acc: Vec<Vec<String>> = vec![Vec::new()];
        let mut exact = true;
        for p in parts {
            exact &= p.exact;
            let mut next = Vec::new();
            for prefix in &acc {
                for v in &p.values {
                    let mut parts = prefix.clone();
                    parts.push(v.clone());
                    next.push(parts);
                }
            }
            next.truncate(MAX_CANDIDATES);
            acc = next;
        }
        let mut values = Vec::new();
        for parts in acc {
            let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
            push_unique(&mut values, join(&refs));
        }
        Folded { values, exact }
    }

    /// Turns the value into an import of the given kind: exact values are (dynamic) imports,
    /// inexact ones unresolvable with their pattern as `spec`. `expr` is the argument as written.
    pub fn into_import(self, kind: &str, line: u32, expr: &str, dynamic: bool) -> RawImport {
        let mut values = self.values.into_iter().map(|v| if v == THIS_FILE { ".".to_string() } else { v });
        let spec = values.next().unwrap_or_default();
        RawImport {
            spec,
            line,
            kind: kind.to_string(),
            names: Vec::new(),
            dynamic: dynamic || !self.exact,
            unresolvable: !self.exact,
            candidates: if self.exact { values.collect() } else { Vec::new() },
            expr: if dynamic || !self.exact { expr.chars().take(200).collect() } else { String::new() },
            type_only: false,
        }
    }
}

fn push_unique(values: &mut Vec<String>, v: String) {
    if !values.contains(&v) {
        values.push(v);
    }
}

fn merge_holes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c == '*' && out.ends_with('*') {
            continue;
        }
        out.push(c);
    }
    out
}

/// The constants a file binds to foldable values, in source order. A name bound more than
/// once keeps every value as a candidate.
#[derive(Debug, Default)]
pub struct Env {
    bindings: HashMap<String, Folded>,
}

impl Env {
    /// Records `name = value` (adding a candidate if the name is already bound).
    pub fn bind(&mut self, name: &str, value: Folded) {
        let merged = match self.bindings.get(name) {
            Some(old) => old.union(&value),
            None => value,
        };
        self.bindings.insert(name.to_string(), merged);
    }

    /// The value bound to `name`, if any.
    pub fn get(&self, name: &str) -> Option<&Folded> {
        self.bindings.get(name)
    }
}

/// Joins path parts like `path.join`: an absolute part restarts, `.` and `..` are folded. A
/// result relative to the file keeps a leading `./` when the first part was `.`-relative.
pub fn join(parts: &[&str]) -> String {
    let mut start = 0;
    for (i, p) in parts.iter().enumerate() {
        if p.starts_with('/') {
            start = i;
        }
    }
    let parts: Vec<String> =
        parts[start..].iter().map(|p| if *p == THIS_FILE { "./\u{0}".to_string() } else { p.to_string() }).collect();
    let joined = parts.iter().filter(|p| !p.is_empty()).cloned().collect::<Vec<_>>().join("/");
    normalize(&joined)
}

/// Normalizes `.` and `..` segments, keeping the path's kind: absolute (`/x`), file-relative
/// (`./x`, `../x`) or bare (`x`).
pub fn normalize(path: &str) -> String {
    let absolute = path.starts_with('/');
    let dotted = path == "." || path.starts_with("./") || path == ".." || path.starts_with("../");
    let mut out: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if matches!(out.last(), Some(&s) if s != "..") {
                    out.pop();
                } else if !absolute {
                    out.push("..");
                }
            }
            s => out.push(s),
        }
    }
    let body = out.join("/");
    if absolute {
        format!("/{body}")
    } else if body.is_empty() {
        if dotted || path.is_empty() {
            ".".to_string()
        } else {
            String::new()
        }
    } else if dotted && !body.starts_with("..") {
        format!("./{body}")
    } else {
        body
    }
}

/// The directory part of a path value: `dirname(__file__)` is `"."`, `dirname("./a/b")` is `"./a"`.
pub fn dirname(path: &str) -> String {
    if path == THIS_FILE {
        return ".".to_string();
    }
    if path == "." || path.is_empty() {
        return "..".to_string();
    }
    let norm = normalize(path);
    if norm == ".." || norm.ends_with("/..") {
        return format!("{norm}/..");
    }
    match norm.rfind('/') {
        Some(0) => "/".to_string(),
        Some(i) => norm[..i].to_string(),
        None => ".".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_like_path_join() {
        assert_eq!(join(&[".", "plugins", "beta"]), "./plugins/beta");
        assert_eq!(join(&[".", "../x"]), "../x");
        assert_eq!(join(&["./a", "..", "b"]), "./b");
        assert_eq!(join(&["lib", "x"]), "lib/x");
        assert_eq!(join(&["a", "/abs", "x"]), "/abs/x");
        assert_eq!(join(&[".", "*", "x.py"]), "./*/x.py");
        assert_eq!(normalize("./a/./b/../c"), "./a/c");
        assert_eq!(normalize("a/../../b"), "../b");
    }

    #[test]
    fn dirname_of_file_and_dirs() {
        assert_eq!(dirname(THIS_FILE), ".");
        assert_eq!(dirname("."), "..");
        assert_eq!(dirname("./a/b"), "./a");
        assert_eq!(dirname(".."), "../..");
        assert_eq!(dirname("a"), ".");
    }

    #[test]
    fn concat_and_union_keep_candidates() {
        let base = Folded::lit("./plugins/");
        let mode = Folded::lit("fast").union(&Folded::lit("safe"));
        let v = base.concat(&mode);
        assert_eq!(v.values, vec!["./plugins/fast", "./plugins/safe"]);
        assert!(v.exact);
        let u = base.concat(&Folded::unknown()).concat(&Folded::unknown()).concat(&Folded::lit(".js"));
        assert_eq!(u.values, vec!["./plugins/*.js"]);
        assert!(!u.exact);
        let imp = u.into_import("require", 3, "'./plugins/' + x", false);
        assert!(imp.unresolvable && imp.dynamic);
        assert_eq!(imp.spec, "./plugins/*.js");
    }
}
