//! Lua: `require "a.b"` / `require("a.b")`, and `dofile` / `loadfile` with a path, folded
//! through local and global string constants and `..` concatenation.

use super::fold::{Env, Folded};
use super::syntax::{self, line, named_children, Src, MAX_FOLD_DEPTH};
use super::{kind, RawImport};
use tree_sitter::Node;

pub fn extract(root: Node, src: &Src) -> Vec<RawImport> {
    if !src.mentions(&["require", "dofile", "loadfile"]) {
        return Vec::new();
    }
    let mut env = Env::default();
    let mut out = Vec::new();
    syntax::walk(root, |n| {
        match n.kind() {
            "assignment_statement" => {
                let names: Vec<Node> =
                    n.child(0).filter(|c| c.kind() == "variable_list").map(named_children).unwrap_or_default();
                let values: Vec<Node> = named_children(n)
                    .into_iter()
                    .find(|c| c.kind() == "expression_list")
                    .map(named_children)
                    .unwrap_or_default();
                for (name, value) in names.iter().zip(values.iter()) {
                    if name.kind() == "identifier" {
                        let v = fold(*value, src, &env, 0);
                        if v.exact {
                            env.bind(src.text(*name), v);
                        }
                    }
                }
            }
            "function_call" => {
                let name = n.child_by_field_name("name").map(|f| src.text(f)).unwrap_or("");
                let k = match name {
                    "require" => kind::REQUIRE,
                    "dofile" | "loadfile" => kind::LOAD_PATH,
                    _ => return true,
                };
                let arg = n.child_by_field_name("arguments").and_then(|a| {
                    if a.kind() == "string" {
                        Some(a)
                    } else {
                        named_children(a).into_iter().find(|c| c.kind() != "comment")
                    }
                });
                if let Some(arg) = arg {
                    let literal = arg.kind() == "string";
                    out.push(fold(arg, src, &env, 0).into_import(k, line(n), src.text(arg), !literal));
                }
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
        "string" => match node.child_by_field_name("content") {
            Some(c) => Folded::lit(syntax::unescape(src.text(c))),
            None => Folded::lit(""),
        },
        "binary_expression" => {
            let is_concat = syntax::children(node).iter().any(|c| !c.is_named() && src.text(*c) == "..");
            match (is_concat, node.child_by_field_name("left"), node.child_by_field_name("right")) {
                (true, Some(l), Some(r)) => fold(l, src, env, depth + 1).concat(&fold(r, src, env, depth + 1)),
                _ => Folded::unknown(),
            }
        }
        "parenthesized_expression" => match named_children(node).into_iter().next() {
            Some(e) => fold(e, src, env, depth + 1),
            None => Folded::unknown(),
        },
        "identifier" => env.get(src.text(node)).cloned().unwrap_or_else(Folded::unknown),
        _ => Folded::unknown(),
    }
}
