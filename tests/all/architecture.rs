//! The shape of the source tree, checked: no import loops between files, and
//! surfaces (cli, tui, server) that reach the engine only through its public
//! face (`engine/mod.rs`: `Engine` and its options; `engine/protocol.rs`: the
//! request, response and event types).
//!
//! The check reads `src/` as text: every `use` (groups expanded, `self`/`super`/
//! `crate` and child-module paths resolved) and every inline `crate::`/`super::`
//! path, or a path through a name a `use` bound to a module, becomes an edge from
//! the file to the file that defines the module the path lands in. Test modules
//! (`#[cfg(test)] mod tests`) are left out: they may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path (`["engine", "code", "graph"]`), the crate root being `[]`.
type ModPath = Vec<String>;

struct Tree {
    /// Module path -> the file defining it.
    files: BTreeMap<ModPath, PathBuf>,
}

impl Tree {
    fn load(src: &Path) -> Tree {
        let mut files = BTreeMap::new();
        let mut stack = vec![src.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let p = entry.unwrap().path();
                if p.is_dir() {
                    if p.file_name().is_some_and(|n| n != "bin") {
                        stack.push(p);
                    }
                    continue;
                }
                if p.extension().is_none_or(|e| e != "rs") || p.file_name().is_some_and(|n| n == "main.rs") {
                    continue;
                }
                let rel = p.strip_prefix(src).unwrap();
                let mut segs: ModPath = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
                let last = segs.pop().unwrap();
                let stem = last.trim_end_matches(".rs");
                if stem != "mod" && stem != "lib" {
                    segs.push(stem.to_string());
                }
                files.insert(segs, p);
            }
        }
        Tree { files }
    }

    /// The module a path lands in: its longest prefix that is a module.
    fn module_of(&self, path: &[String]) -> Option<ModPath> {
        (0..=path.len()).rev().map(|i| path[..i].to_vec()).find(|p| self.files.contains_key(p))
    }

    fn is_module(&self, path: &[String]) -> bool {
        self.files.contains_key(path)
    }
}

/// The file's text without comments, string contents and its test module.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if b[i] == b'"' && (i == 0 || b[i - 1] != b'\'') {
            // A string literal (raw strings with quotes inside are rare enough in `src/`).
            let raw_hashes = {
                let mut j = i;
                let mut n = 0;
                while j > 0 && b[j - 1] == b'#' {
                    j -= 1;
                    n += 1;
                }
                if j > 0 && b[j - 1] == b'r' {
                    Some(n)
                } else {
                    None
                }
            };
            i += 1;
            while i < b.len() {
                match (b[i], raw_hashes) {
                    (b'\\', None) => i += 2,
                    (b'"', None) => break,
                    (b'"', Some(n)) if b[i + 1..].iter().take(n).filter(|c| **c == b'#').count() == n => {
                        i += n;
                        break;
                    }
                    _ => i += 1,
                }
            }
            i += 1;
            out.push_str("\"\"");
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// Expands a `use` tree (`a::{b, c::{d, self}}`) into full paths, each with the name it binds.
fn expand_use(tree: &str, prefix: &[String], out: &mut Vec<(ModPath, String)>) {
    let tree = tree.trim();
    if tree.is_empty() {
        return;
    }
    if let Some(open) = tree.find('{') {
        let head: Vec<String> =
            tree[..open].split("::").map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect();
        let mut base = prefix.to_vec();
        base.extend(head);
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let mut depth = 0;
        let mut start = 0;
        for (k, ch) in inner.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand_use(&inner[start..k], &base, out);
                    start = k + 1;
                }
                _ => {}
            }
        }
        expand_use(&inner[start..], &base, out);
        return;
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((p, a)) => (p.trim(), Some(a.trim().to_string())),
        None => (tree, None),
    };
    let mut full = prefix.to_vec();
    full.extend(path.split("::").map(str::trim).filter(|s| !s.is_empty()).map(String::from));
    if full.last().is_some_and(|s| s == "self") {
        full.pop();
    }
    let name = alias.unwrap_or_else(|| full.last().cloned().unwrap_or_default());
    out.push((full, name));
}

/// Resolves a path as written in module `me` to an absolute module path, if it is ours.
fn absolute(tree: &Tree, me: &[String], path: &[String], bound: &BTreeMap<String, ModPath>) -> Option<ModPath> {
    let first = path.first()?;
    let mut cur: ModPath = match first.as_str() {
        "crate" => Vec::new(),
        "self" => me.to_vec(),
        "super" => me.to_vec(),
        _ => {
            let mut child = me.to_vec();
            child.push(first.clone());
            if tree.is_module(&child) {
                child.extend(path[1..].iter().cloned());
                return Some(child);
            }
            let mut p = bound.get(first)?.clone();
            p.extend(path[1..].iter().cloned());
            return Some(p);
        }
    };
    let mut rest = path;
    if first == "self" {
        rest = &path[1..];
    }
    if first == "crate" {
        rest = &path[1..];
    }
    while let Some(seg) = rest.first() {
        if seg != "super" {
            break;
        }
        cur.pop();
        rest = &rest[1..];
    }
    cur.extend(rest.iter().cloned());
    Some(cur)
}

fn identifiers_path(code: &str, at: usize) -> Vec<String> {
    let b = code.as_bytes();
    let mut end = at;
    loop {
        let start = end;
        while end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'_') {
            end += 1;
        }
        if end == start {
            break;
        }
        if code[end..].starts_with("::") && b.get(end + 2).is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_') {
            end += 2;
        } else {
            break;
        }
    }
    code[at..end].split("::").filter(|s| !s.is_empty()).map(String::from).collect()
}

/// Every file this file imports, by module path.
fn imports(tree: &Tree, me: &ModPath, code: &str) -> BTreeSet<ModPath> {
    let mut targets = BTreeSet::new();
    let mut bound: BTreeMap<String, ModPath> = BTreeMap::new();
    // `use` declarations.
    let mut rest = code;
    let mut uses = Vec::new();
    while let Some(i) = rest.find("use ") {
        let before = rest[..i].chars().last();
        let after = &rest[i + 4..];
        rest = after;
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let Some(end) = after.find(';') else { break };
        let stmt = &after[..end];
        if stmt.contains('(') || stmt.contains('=') {
            continue;
        }
        let mut paths = Vec::new();
        expand_use(&stmt.split_whitespace().collect::<Vec<_>>().join(" "), &[], &mut paths);
        uses.extend(paths);
    }
    for (path, name) in &uses {
        if let Some(abs) = absolute(tree, me, path, &bound) {
            if tree.is_module(&abs) {
                bound.insert(name.clone(), abs.clone());
            }
            if let Some(m) = tree.module_of(&abs) {
                targets.insert(m);
            }
        }
    }
    // Inline paths: `crate::a::b`, `super::x`, `child::y`, `bound_module::z`.
    let b = code.as_bytes();
    for i in 0..b.len() {
        let starts = (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b':'))
            && (b[i].is_ascii_alphabetic() || b[i] == b'_');
        if !starts {
            continue;
        }
        let path = identifiers_path(code, i);
        if path.len() < 2 {
            continue;
        }
        if let Some(abs) = absolute(tree, me, &path, &bound) {
            if let Some(m) = tree.module_of(&abs) {
                targets.insert(m);
            }
        }
    }
    // A file may use what its ancestors (the `mod.rs`/`lib.rs` files that declare it) define:
    // that is the module tree itself, not a loop.
    targets.retain(|t| !me.starts_with(t));
    targets
}

fn graph() -> (Tree, BTreeMap<ModPath, BTreeSet<ModPath>>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let tree = Tree::load(&src);
    let mut edges = BTreeMap::new();
    for (m, file) in &tree.files {
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        edges.insert(m.clone(), imports(&tree, m, &code));
    }
    (tree, edges)
}

fn name(m: &ModPath) -> String {
    if m.is_empty() {
        "lib".into()
    } else {
        m.join("/")
    }
}

/// Strongly connected components with more than one file (Tarjan).
fn loops(edges: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<Vec<ModPath>> {
    struct State<'a> {
        edges: &'a BTreeMap<ModPath, BTreeSet<ModPath>>,
        index: BTreeMap<ModPath, usize>,
        low: BTreeMap<ModPath, usize>,
        stack: Vec<ModPath>,
        on: BTreeSet<ModPath>,
        next: usize,
        out: Vec<Vec<ModPath>>,
    }
    fn visit(s: &mut State, v: &ModPath) {
        s.index.insert(v.clone(), s.next);
        s.low.insert(v.clone(), s.next);
        s.next += 1;
        s.stack.push(v.clone());
        s.on.insert(v.clone());
        for w in s.edges.get(v).cloned().unwrap_or_default() {
            if !s.index.contains_key(&w) {
                visit(s, &w);
                let lw = s.low[&w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on.contains(&w) {
                let iw = s.index[&w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(&w);
                let done = &w == v;
                comp.push(w);
                if done {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

#[test]
fn no_file_imports_itself_through_others() {
    let (_, edges) = graph();
    let found = loops(&edges);
    let report: Vec<String> = found
        .iter()
        .map(|comp| {
            let members: BTreeSet<&ModPath> = comp.iter().collect();
            let lines: Vec<String> = comp
                .iter()
                .map(|m| {
                    let to: Vec<String> = edges[m].iter().filter(|t| members.contains(t)).map(name).collect();
                    format!("    {} -> {}", name(m), to.join(", "))
                })
                .collect();
            format!("  a loop of {} files:\n{}", comp.len(), lines.join("\n"))
        })
        .collect();
    assert!(
        found.is_empty(),
        "import loops (move the shared types a floor down so no two files import each other):\n{}",
        report.join("\n")
    );
}

#[test]
fn surfaces_reach_the_engine_only_through_its_public_face() {
    let (_, edges) = graph();
    let face: [ModPath; 2] = [vec!["engine".into()], vec!["engine".into(), "protocol".into()]];
    let mut bad = Vec::new();
    for (m, targets) in &edges {
        if !matches!(m.first().map(String::as_str), Some("cli" | "tui" | "server")) {
            continue;
        }
        for t in targets {
            if t.first().is_some_and(|s| s == "engine") && !face.contains(t) {
                bad.push(format!("  {} uses {}", name(m), name(t)));
            }
        }
    }
    assert!(bad.is_empty(), "surfaces import only `engine` (Engine) and `engine::protocol`:\n{}", bad.join("\n"));
}

#[test]
fn the_checker_sees_the_edges_it_should() {
    // Guards the checker itself: edges that are known to exist must be found.
    let (tree, edges) = graph();
    let m = |s: &str| -> ModPath { s.split('/').map(String::from).collect() };
    assert!(tree.is_module(&m("engine/protocol")));
    assert!(edges[&m("engine/watch")].contains(&m("engine/index")), "{:?}", edges[&m("engine/watch")]);
    assert!(edges[&m("cli")].contains(&vec!["engine".to_string()]), "{:?}", edges[&m("cli")]);
    let synthetic = imports(
        &tree,
        &m("server/run"),
        "use super::{api, mcp};\nfn f() { mcp::stdio::serve(); crate::engine::protocol::X; }",
    );
    assert!(synthetic.contains(&m("server/mcp/stdio")), "{synthetic:?}");
    assert!(synthetic.contains(&m("engine/protocol")), "{synthetic:?}");
    assert!(synthetic.contains(&m("server/api")), "{synthetic:?}");
    let loop_of_two: BTreeMap<ModPath, BTreeSet<ModPath>> =
        [(m("a"), [m("b")].into()), (m("b"), [m("a")].into()), (m("c"), [m("a")].into())].into();
    assert_eq!(loops(&loop_of_two), vec![vec![m("a"), m("b")]]);
}
