//! PHP: the namespace a file declares, `use` clauses (grouped, aliased, `function`/`const`),
//! and `require`/`include` (`_once` too) with `__DIR__`, `dirname(__FILE__)`, `dirname(x, n)`,
//! `.` concatenation and constants from `define('X', ...)` / `const X = ...` folded.

use super::fold::{dirname, Env, Folded, THIS_FILE};
use super::syntax::{self, line, named_children, Src, MAX_FOLD_DEPTH};
use super::{kind, RawImport};
use tree_sitter::Node;

pub fn extract(root: Node, src: &Src) -> Vec<RawImport> {
    let mut env = Env::default();
    let mut out = Vec::new();
    // `require`/`include` can be anywhere; without them, namespaces and `use` are all there is,
    // and they sit at file or namespace level.
    let full = src.mentions(&["require", "include", "REQUIRE", "INCLUDE", "Require", "Include"]);
    syntax::walk(root, |n| match n.kind() {
        "namespace_definition" => {
            if let Some(name) = n.child_by_field_name("name") {
                out.push(RawImport::new(kind::NAMESPACE, name_text(name, src), line(n)));
            }
            true
        }
        "namespace_use_declaration" => {
            use_declaration(n, src, &mut out);
            false
        }
        "const_element" => {
            let kids = named_children(n);
            if let (Some(name), Some(value)) = (kids.first(), kids.get(1)) {
                let v = fold(*value, src, &env, 0);
                if v.exact {
                    env.bind(src.text(*name), v);
                }
            }
            false
        }
        "function_call_expression" => {
            // define('NAME', value)
            let f = n.child_by_field_name("function").map(|f| src.text(f)).unwrap_or("");
            if f.eq_ignore_ascii_case("define") {
                let args = call_args(n);
                if let (Some(name), Some(value)) = (args.first(), args.get(1)) {
                    let name = fold(*name, src, &env, 0);
                    let value = fold(*value, src, &env, 0);
                    if let (true, true, Some(name)) = (name.exact, value.exact, name.values.first()) {
                        env.bind(name, value);
                    }
                }
            }
            true
        }
        "require_expression" | "require_once_expression" | "include_expression" | "include_once_expression" => {
            let k = if n.kind().starts_with("require") { kind::REQUIRE } else { kind::INCLUDE };
            if let Some(arg) = named_children(n).into_iter().find(|c| c.kind() != "comment") {
                let literal = magic_static(arg, src);
                let folded = fold(arg, src, &env, 0);
                out.push(folded.into_import(k, line(n), src.text(arg), !literal));
            }
            false
        }
        "program" | "compound_statement" | "expression_statement" => true,
        _ => full,
    });
    out
}

/// True when a path expression is built only from literals, `__DIR__`, `__FILE__` and
/// `dirname()` of them: static in PHP terms, though written as a concatenation.
fn magic_static(node: Node, src: &Src) -> bool {
    let mut ok = true;
    syntax::walk(node, |n| {
        match n.kind() {
            "name" => ok &= matches!(src.text(n), "__DIR__" | "__FILE__" | "dirname"),
            "variable_name" | "member_access_expression" | "scoped_call_expression" | "qualified_name" => ok = false,
            "function_call_expression" => {
                ok &= n.child_by_field_name("function").is_some_and(|f| src.text(f).eq_ignore_ascii_case("dirname"))
            }
            "string" | "encapsed_string" => {
                ok &= named_children(n)
                    .iter()
                    .all(|c| matches!(c.kind(), "string_content" | "string_value" | "escape_sequence"))
            }
            _ => {}
        }
        ok
    });
    ok
}

/// `use A\B, C\D as E;`, `use function A\f;`, `use A\{B, C\D};`.
fn use_declaration(n: Node, src: &Src, out: &mut Vec<RawImport>) {
    let text = src.text(n);
    let after = text.trim_start().strip_prefix("use").unwrap_or(text).trim_start();
    let k = if after.starts_with("function ") || after.starts_with("const ") { kind::USE_STATIC } else { kind::USE };
    let group_prefix = named_children(n).into_iter().find(|c| c.kind() == "namespace_name").map(|p| name_text(p, src));
    let clauses: Vec<Node> = match n.child_by_field_name("body") {
        Some(group) => named_children(group),
        None => named_children(n),
    };
    for clause in clauses.into_iter().filter(|c| c.kind() == "namespace_use_clause") {
        let Some(name) = named_children(clause)
            .into_iter()
            .find(|c| matches!(c.kind(), "qualified_name" | "name" | "namespace_name"))
        else {
            continue;
        };
        let name = name_text(name, src);
        let full = match &group_prefix {
            Some(p) => format!("{p}\\{name}"),
            None => name,
        };
        out.push(RawImport::new(k, full, line(n)));
    }
}

/// A namespace or qualified name without whitespace or a leading `\`.
fn name_text(n: Node, src: &Src) -> String {
    let t: String = src.text(n).chars().filter(|c| !c.is_whitespace()).collect();
    t.trim_start_matches('\\').to_string()
}

fn fold(node: Node, src: &Src, env: &Env, depth: u32) -> Folded {
    if depth > MAX_FOLD_DEPTH {
        return Folded::unknown();
    }
    match node.kind() {
        "string" | "encapsed_string" => {
            let kids = named_children(node);
            if kids.is_empty() {
                return Folded::lit(syntax::unescape(syntax::unquote(src.text(node))));
            }
            let parts: Vec<Folded> = kids
                .into_iter()
                .map(|c| match c.kind() {
                    "string_content" | "string_value" => Folded::lit(src.text(c)),
                    "escape_sequence" => Folded::lit(syntax::unescape(src.text(c))),
                    _ => Folded::unknown(),
                })
                .collect();
            Folded::concat_all(&parts)
        }
        "binary_expression" => {
            let is_concat = syntax::children(node).iter().any(|c| !c.is_named() && src.text(*c) == ".");
            match (is_concat, node.child_by_field_name("left"), node.child_by_field_name("right")) {
                (true, Some(l), Some(r)) => fold(l, src, env, depth + 1).concat(&fold(r, src, env, depth + 1)),
                _ => Folded::unknown(),
            }
        }
        "parenthesized_expression" => match named_children(node).into_iter().next() {
            Some(e) => fold(e, src, env, depth + 1),
            None => Folded::unknown(),
        },
        "name" | "qualified_name" => match src.text(node) {
            "__DIR__" => Folded::lit("."),
            "__FILE__" => Folded::lit(THIS_FILE),
            name => env.get(name.trim_start_matches('\\')).cloned().unwrap_or_else(Folded::unknown),
        },
        "function_call_expression" => {
            let f = node.child_by_field_name("function").map(|f| src.text(f)).unwrap_or("");
            if f.eq_ignore_ascii_case("dirname") {
                let args = call_args(node);
                let levels = args.get(1).and_then(|a| src.text(*a).trim().parse::<u32>().ok()).unwrap_or(1);
                let mut v = match args.first() {
                    Some(a) => fold(*a, src, env, depth + 1),
                    None => return Folded::unknown(),
                };
                for _ in 0..levels.min(16) {
                    v = v.map(dirname);
                }
                v
            } else if f.eq_ignore_ascii_case("realpath") {
                call_args(node).first().map(|a| fold(*a, src, env, depth + 1)).unwrap_or_else(Folded::unknown)
            } else {
                Folded::unknown()
            }
        }
        _ => Folded::unknown(),
    }
}

/// The expressions passed to a call.
fn call_args(call: Node) -> Vec<Node> {
    let Some(args) = call.child_by_field_name("arguments") else { return Vec::new() };
    named_children(args).into_iter().filter(|a| a.kind() == "argument").filter_map(|a| a.named_child(0)).collect()
}
