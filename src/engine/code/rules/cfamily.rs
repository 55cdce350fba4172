//! C and C++ symbol rules: the node kinds that declare something, and what each declares.

use super::{bare_type_name, children_by_field, field, field_text, text, Ctx, Def};
use crate::engine::code::types::SymbolKind;
use tree_sitter::Node;

pub(super) const KINDS: &[&str] = &[
    "function_definition",
    "declaration",
    "field_declaration",
    "struct_specifier",
    "union_specifier",
    "class_specifier",
    "enum_specifier",
    "enumerator",
    "type_definition",
    "alias_declaration",
    "concept_definition",
    "namespace_definition",
    "preproc_def",
    "preproc_function_def",
];

/// Follows a C declarator down to the declared name; says whether a function declarator was on
/// the way (`int (*f(void))(int)` declares the function `f`).
fn c_declarator_name(mut n: Node) -> Option<(Node, bool)> {
    let mut is_function = false;
    for _ in 0..16 {
        match n.kind() {
            "identifier"
            | "field_identifier"
            | "type_identifier"
            | "qualified_identifier"
            | "destructor_name"
            | "operator_name"
            | "template_function"
            | "primitive_type" => return Some((n, is_function)),
            "function_declarator" => {
                is_function = true;
                n = field(n, "declarator")?;
            }
            _ => n = field(n, "declarator").or_else(|| n.named_child(0))?,
        }
    }
    None
}

/// Splits `Store::size` into (`size`, `Store`); template arguments are dropped.
fn c_qualified(name: &str) -> (String, Option<String>) {
    match name.rsplit_once("::") {
        Some((scope, last)) => (last.to_string(), Some(bare_type_name(scope))),
        None => (name.to_string(), None),
    }
}

pub(super) fn classify<'t>(node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    let src = cx.src;
    match kind {
        "function_definition" => {
            let Some((name_node, _)) = field(node, "declarator").and_then(c_declarator_name) else { return };
            let (name, qualifier) = c_qualified(text(name_node, src));
            let k = if qualifier.is_some() || cx.in_type() { SymbolKind::Method } else { SymbolKind::Function };
            out.push(Def::new(name, k, node).container(qualifier));
        }
        "declaration" | "field_declaration" => {
            if cx.in_function {
                return;
            }
            let in_type = cx.in_type();
            for d in children_by_field(node, "declarator") {
                let Some((name_node, is_function)) = c_declarator_name(d) else { continue };
                let (name, qualifier) = c_qualified(text(name_node, src));
                let k = match (is_function, in_type) {
                    (true, true) => SymbolKind::Method,
                    (true, false) if cx.header && kind == "declaration" => SymbolKind::Function,
                    (false, true) => SymbolKind::Field,
                    (false, false) if kind == "declaration" && cx.top_level() => SymbolKind::Variable,
                    _ => continue,
                };
                out.push(Def::new(name, k, node).container(qualifier));
            }
        }
        "struct_specifier" | "union_specifier" | "class_specifier" | "enum_specifier" => {
            if field(node, "body").is_none() {
                return; // a reference (`struct store *s`), not a definition
            }
            let Some(name) = field_text(node, "name", src) else { return };
            let k = match kind {
                "class_specifier" => SymbolKind::Class,
                "enum_specifier" => SymbolKind::Enum,
                _ => SymbolKind::Struct,
            };
            let (name, qualifier) = c_qualified(&name);
            out.push(Def::new(name, k, node).container(qualifier));
        }
        "enumerator" if cx.scope == Some(SymbolKind::Enum) => {
            if let Some(n) = field_text(node, "name", src) {
                out.push(Def::new(n, SymbolKind::Variant, node));
            }
        }
        "type_definition" if !cx.in_function => {
            for d in children_by_field(node, "declarator") {
                if let Some((n, _)) = c_declarator_name(d) {
                    out.push(Def::new(text(n, src), SymbolKind::Type, node));
                }
            }
        }
        "alias_declaration" | "concept_definition" if !cx.in_function => {
            if let Some(n) = field_text(node, "name", src) {
                out.push(Def::new(n, SymbolKind::Type, node));
            }
        }
        "namespace_definition" => {
            if let Some(n) = field_text(node, "name", src) {
                out.push(Def::new(n, SymbolKind::Module, node));
            }
        }
        "preproc_def" | "preproc_function_def" if !cx.in_function => {
            if let Some(n) = field_text(node, "name", src) {
                out.push(Def::new(n, SymbolKind::Macro, node));
            }
        }
        _ => {}
    }
}
