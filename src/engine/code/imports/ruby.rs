//! Ruby: `require`, `require_relative`, `load` and `autoload`, with `File.join`,
//! `File.expand_path(x, __FILE__ | __dir__)`, `File.dirname`, interpolation and `+` over
//! constants folded. A `require` of a path built from `__dir__` or `__FILE__` is recorded as
//! `require_relative`, since it is relative to the file.

use super::fold::{dirname, join, Env, Folded, THIS_FILE};
use super::syntax::{self, line, named_children, Src, MAX_FOLD_DEPTH};
use super::{kind, RawImport};
use tree_sitter::Node;

pub fn extract(root: Node, src: &Src) -> Vec<RawImport> {
    if !src.mentions(&["require", "load"]) {
        return Vec::new();
    }
    let mut env = Env::default();
    let mut out = Vec::new();
    syntax::walk(root, |n| {
        match n.kind() {
            "assignment" => {
                if let (Some(l), Some(r)) = (n.child_by_field_name("left"), n.child_by_field_name("right")) {
                    if matches!(l.kind(), "constant" | "identifier") {
                        let v = fold(r, src, &env, 0);
                        if v.exact {
                            env.bind(src.text(l), v);
                        }
                    }
                }
            }
            "call" if n.child_by_field_name("receiver").is_none() => {
                let method = n.child_by_field_name("method").map(|m| src.text(m)).unwrap_or("");
                let (k, index) = match method {
                    "require" => (kind::REQUIRE, 0),
                    "require_relative" => (kind::REQUIRE_RELATIVE, 0),
                    "load" => (kind::LOAD_PATH, 0),
                    "autoload" => (kind::REQUIRE, 1),
                    _ => return true,
                };
                let args: Vec<Node> = n.child_by_field_name("arguments").map(named_children).unwrap_or_default();
                if let Some(arg) = args.get(index) {
                    let literal =
                        arg.kind() == "string" && named_children(*arg).iter().all(|c| c.kind() == "string_content");
                    let folded = fold(*arg, src, &env, 0);
                    let file_relative =
                        !literal && folded.values.iter().any(|v| v.starts_with("./") || v.starts_with("../"));
                    let k = if k == kind::REQUIRE && file_relative { kind::REQUIRE_RELATIVE } else { k };
                    out.push(folded.into_import(k, line(n), src.text(*arg), !literal));
                }
                return false;
            }
            _ => {}
        }
        true
    });
    out
}

fn fold(node: Node, src: &Src, env: &Env, depth: u32) -> Folded {
    if depth > MAX_FOLD_DEPTH {
        return Folded::unknown();
    }
    match node.kind() {
        "string" => {
            let parts: Vec<Folded> = named_children(node)
                .into_iter()
                .map(|c| match c.kind() {
                    "string_content" => Folded::lit(src.text(c)),
                    "escape_sequence" => Folded::lit(syntax::unescape(src.text(c))),
                    "interpolation" => match named_children(c).into_iter().next() {
                        Some(e) => fold(e, src, env, depth + 1),
                        None => Folded::unknown(),
                    },
                    _ => Folded::unknown(),
                })
                .collect();
            Folded::concat_all(&parts)
        }
        "binary" => {
            let op = node.child_by_field_name("operator").map(|o| src.text(o)).unwrap_or("");
            match (op, node.child_by_field_name("left"), node.child_by_field_name("right")) {
                ("+", Some(l), Some(r)) => fold(l, src, env, depth + 1).concat(&fold(r, src, env, depth + 1)),
                _ => Folded::unknown(),
            }
        }
        "parenthesized_statements" => match named_children(node).into_iter().next() {
            Some(e) => fold(e, src, env, depth + 1),
            None => Folded::unknown(),
        },
        "identifier" | "constant" => match src.text(node) {
            "__dir__" => Folded::lit("."),
            "__FILE__" => Folded::lit(THIS_FILE),
            name => env.get(name).cloned().unwrap_or_else(Folded::unknown),
        },
        "call" => {
            let receiver = node.child_by_field_name("receiver").map(|r| src.text(r)).unwrap_or("");
            let method = node.child_by_field_name("method").map(|m| src.text(m)).unwrap_or("");
            if receiver == "__dir__" || receiver.is_empty() && method == "__dir__" {
                return Folded::lit(".");
            }
            if receiver != "File" {
                return Folded::unknown();
            }
            let args: Vec<Folded> = node
                .child_by_field_name("arguments")
                .map(named_children)
                .unwrap_or_default()
                .into_iter()
                .map(|a| fold(a, src, env, depth + 1))
                .collect();
            match (method, args.as_slice()) {
                ("join", parts) if !parts.is_empty() => Folded::join_path(parts),
                ("dirname", [p, ..]) => p.map(dirname),
                ("expand_path" | "absolute_path", [p]) => p.clone(),
                ("expand_path" | "absolute_path", [p, base, ..]) => {
                    // Relative to `base`, which is a file when it is __FILE__ (so `..` leaves it).
                    let mut values = Vec::new();
                    for b in &base.values {
                        for v in &p.values {
                            values.push(join(&[b, v]));
                        }
                    }
                    Folded { values, exact: p.exact && base.exact }
                }
                _ => Folded::unknown(),
            }
        }
        _ => Folded::unknown(),
    }
}
