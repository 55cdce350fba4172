//! JavaScript, TypeScript and TSX: `import`, `export ... from`, TS `import x = require()`,
//! `require(...)`, `require.resolve(...)` and `import(...)`, with arguments folded through the
//! file's string constants, `+`, template strings, conditionals and `path.join` /
//! `path.resolve` (with `__dirname`).

use super::fold::{Env, Folded, THIS_FILE};
use super::syntax::{self, line, named_children, Src, MAX_FOLD_DEPTH};
use super::{kind, RawImport};
use tree_sitter::Node;

/// `import type {..} from` / `export type {..} from` / `export type * from`: the statement's own
/// `type` keyword (TypeScript erases the import). TypeScript 5's `export type * from` is a
/// parse error in the bundled grammar (its `type` lands in an ERROR node), so an export is also
/// read by its leading words. An import or re-export whose every name is marked `type` is
/// erased too.
fn is_type_only(statement: Node, src: &Src) -> bool {
    has_type_keyword(statement) || exports_type_star(src.text(statement)) || lists_only_typed_names(statement)
}

/// The node's own `type` keyword among its direct children (a name `type` is an identifier).
fn has_type_keyword(node: Node) -> bool {
    let mut c = node.walk();
    let found = node.children(&mut c).any(|k| !k.is_named() && k.kind() == "type");
    found
}

/// `import {type A, type B} from './x'` / `export {type A, type B} from './x'`: a braced list
/// of names, each marked `type`, with no default or namespace binding. TypeScript drops the
/// statement from its output like `import type {A, B}` / `export type {A, B} from`, so it is
/// no run-time import; `import {type A, B}` and `export {type A, B} from` keep `B` and are one.
fn lists_only_typed_names(statement: Node) -> bool {
    let Some(list) = braced_names(statement) else { return false };
    let names: Vec<Node> = named_children(list).into_iter().filter(|c| c.kind() != "comment").collect();
    let specifier = if statement.kind() == "import_statement" { "import_specifier" } else { "export_specifier" };
    !names.is_empty() && names.iter().all(|n| n.kind() == specifier && has_type_keyword(*n))
}

/// The braced name list of an import (`named_imports`, when it is the clause's only binding)
/// or of a re-export (`export_clause`); `None` for any other form (`* as ns`, a default).
fn braced_names(statement: Node) -> Option<Node> {
    if statement.kind() == "export_statement" {
        return named_children(statement).into_iter().find(|c| c.kind() == "export_clause");
    }
    let clause = named_children(statement).into_iter().find(|c| c.kind() == "import_clause")?;
    let bindings: Vec<Node> = named_children(clause).into_iter().filter(|c| c.kind() != "comment").collect();
    match bindings.as_slice() {
        [list] if list.kind() == "named_imports" => Some(*list),
        _ => None,
    }
}

/// `export type * from` / `export type * as ns from`.
fn exports_type_star(statement: &str) -> bool {
    let words = statement.strip_prefix("export").map(str::trim_start);
    let rest = words.and_then(|w| w.strip_prefix("type")).map(str::trim_start);
    rest.is_some_and(|r| r.starts_with('*'))
}

pub fn extract(root: Node, src: &Src) -> Vec<RawImport> {
    let mut out = Vec::new();
    // Import and re-export statements are module-level (inside error nodes when the file has
    // syntax errors, so then the whole tree is searched).
    let full = root.has_error();
    syntax::walk(root, |n| match n.kind() {
        "import_statement" => {
            if let Some(source) = n.child_by_field_name("source") {
                let mut imp = RawImport::new(kind::IMPORT, string_value(source, src), line(n));
                imp.names = imported_names(n, src);
                imp.type_only = is_type_only(n, src);
                out.push(imp);
            } else if let Some(req) = named_children(n).into_iter().find(|c| c.kind() == "import_require_clause") {
                if let Some(source) = req.child_by_field_name("source") {
                    out.push(RawImport::new(kind::IMPORT, string_value(source, src), line(n)));
                }
            }
            false
        }
        "export_statement" => {
            if let Some(source) = n.child_by_field_name("source") {
                let mut imp = RawImport::new(kind::EXPORT, string_value(source, src), line(n));
                imp.type_only = is_type_only(n, src);
                out.push(imp);
            }
            false
        }
        "program" => true,
        _ => full,
    });
    // `require(...)` and `import(...)` can sit in any expression: walk everything only when the
    // file mentions them, and read the file's constants only when an argument is not a literal.
    if src.mentions(&["require", "import(", "import ("]) {
        let mut calls: Vec<(&'static str, u32, Node)> = Vec::new();
        syntax::walk(root, |n| {
            if n.kind() == "call_expression" {
                if let (Some(k), Some(arg)) = (call_kind(n, src), first_argument(n)) {
                    calls.push((k, line(n), arg));
                }
            }
            true
        });
        let env = if calls.iter().any(|(_, _, a)| a.kind() != "string") { bindings(root, src) } else { Env::default() };
        for (k, at, arg) in calls {
            let literal = arg.kind() == "string";
            let folded = fold(arg, src, &env, 0);
            out.push(folded.into_import(k, at, src.text(arg), !literal));
        }
        out.sort_by_key(|i| i.line);
    }
    out
}

/// `require`, `require.resolve` or `import` calls; `None` for any other call.
fn call_kind(call: Node, src: &Src) -> Option<&'static str> {
    let f = call.child_by_field_name("function")?;
    match f.kind() {
        "import" => Some(kind::DYNAMIC_IMPORT),
        "identifier" if src.text(f) == "require" => Some(kind::REQUIRE),
        "member_expression" if src.text(f) == "require.resolve" => Some(kind::REQUIRE),
        _ => None,
    }
}

fn first_argument(call: Node) -> Option<Node> {
    let args = call.child_by_field_name("arguments")?;
    named_children(args).into_iter().find(|c| c.kind() != "comment")
}

/// The names an import statement binds (default, named, namespace).
fn imported_names(stmt: Node, src: &Src) -> Vec<String> {
    let mut names = Vec::new();
    let Some(clause) = named_children(stmt).into_iter().find(|c| c.kind() == "import_clause") else { return names };
    syntax::walk(clause, |n| match n.kind() {
        "import_specifier" => {
            if let Some(name) = n.child_by_field_name("name") {
                names.push(src.text(name).to_string());
            }
            false
        }
        "identifier" => {
            names.push(src.text(n).to_string());
            false
        }
        _ => true,
    });
    names
}

/// A string literal's value.
fn string_value(node: Node, src: &Src) -> String {
    syntax::unescape(syntax::unquote(src.text(node)))
}

/// Top-level and local `const`/`let`/`var` bindings and plain assignments of foldable values.
fn bindings(root: Node, src: &Src) -> Env {
    let mut env = Env::default();
    syntax::walk(root, |n| {
        match n.kind() {
            "variable_declarator" => {
                if let (Some(name), Some(value)) = (n.child_by_field_name("name"), n.child_by_field_name("value")) {
                    if name.kind() == "identifier" && foldable(value) {
                        let v = fold(value, src, &env, 0);
                        if v.exact {
                            env.bind(src.text(name), v);
                        }
                    }
                }
            }
            "assignment_expression" => {
                if let (Some(left), Some(right)) = (n.child_by_field_name("left"), n.child_by_field_name("right")) {
                    if left.kind() == "identifier" && foldable(right) {
                        let v = fold(right, src, &env, 0);
                        if v.exact {
                            env.bind(src.text(left), v);
                        }
                    }
                }
            }
            _ => {}
        }
        true
    });
    env
}

/// Expressions worth evaluating as bindings (skips calls other than path joins, objects, ...).
fn foldable(node: Node) -> bool {
    matches!(
        node.kind(),
        "string"
            | "template_string"
            | "binary_expression"
            | "ternary_expression"
            | "parenthesized_expression"
            | "identifier"
            | "call_expression"
    )
}

/// Evaluates a string expression.
fn fold(node: Node, src: &Src, env: &Env, depth: u32) -> Folded {
    if depth > MAX_FOLD_DEPTH {
        return Folded::unknown();
    }
    match node.kind() {
        "string" => Folded::lit(string_value(node, src)),
        "template_string" => {
            let mut parts = Vec::new();
            for c in named_children(node) {
                match c.kind() {
                    "string_fragment" => parts.push(Folded::lit(src.text(c))),
                    "escape_sequence" => parts.push(Folded::lit(syntax::unescape(src.text(c)))),
                    "template_substitution" => match named_children(c).into_iter().next() {
                        Some(e) => parts.push(fold(e, src, env, depth + 1)),
                        None => parts.push(Folded::unknown()),
                    },
                    _ => {}
                }
            }
            Folded::concat_all(&parts)
        }
        "binary_expression" => {
            let op = node.child_by_field_name("operator").map(|o| src.text(o)).unwrap_or("");
            match (op, node.child_by_field_name("left"), node.child_by_field_name("right")) {
                ("+", Some(l), Some(r)) => fold(l, src, env, depth + 1).concat(&fold(r, src, env, depth + 1)),
                _ => Folded::unknown(),
            }
        }
        "ternary_expression" => {
            match (node.child_by_field_name("consequence"), node.child_by_field_name("alternative")) {
                (Some(a), Some(b)) => fold(a, src, env, depth + 1).union(&fold(b, src, env, depth + 1)),
                _ => Folded::unknown(),
            }
        }
        "parenthesized_expression" => match named_children(node).into_iter().next() {
            Some(e) => fold(e, src, env, depth + 1),
            None => Folded::unknown(),
        },
        "identifier" => match src.text(node) {
            "__dirname" => Folded::lit("."),
            "__filename" => Folded::lit(THIS_FILE),
            name => env.get(name).cloned().unwrap_or_else(Folded::unknown),
        },
        "call_expression" => {
            let f = node.child_by_field_name("function").map(|f| src.text(f)).unwrap_or("");
            if matches!(f, "path.join" | "path.resolve" | "path.posix.join" | "path.posix.resolve" | "join" | "resolve")
            {
                let args: Vec<Folded> = node
                    .child_by_field_name("arguments")
                    .map(named_children)
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|a| a.kind() != "comment")
                    .map(|a| fold(a, src, env, depth + 1))
                    .collect();
                if args.is_empty() {
                    return Folded::unknown();
                }
                Folded::join_path(&args)
            } else if f == "path.dirname" {
                match node.child_by_field_name("arguments").and_then(|a| named_children(a).into_iter().next()) {
                    Some(a) => fold(a, src, env, depth + 1).map(super::fold::dirname),
                    None => Folded::unknown(),
                }
            } else {
                Folded::unknown()
            }
        }
        _ => Folded::unknown(),
    }
}
