//! Swift symbol rules: the node kinds that declare something, and what each declares.

use super::{bare_type_name, children_by_field, const_or_var, field, field_text, text, Ctx, Def};
use crate::engine::code::types::SymbolKind;
use tree_sitter::Node;

pub(super) const KINDS: &[&str] = &[
    "class_declaration",
    "protocol_declaration",
    "function_declaration",
    "protocol_function_declaration",
    "init_declaration",
    "deinit_declaration",
    "subscript_declaration",
    "property_declaration",
    "protocol_property_declaration",
    "typealias_declaration",
    "enum_entry",
];

/// The identifier bound by a Swift pattern (`x`, `var name`).
fn swift_bound(p: Node, src: &str) -> String {
    field(p, "bound_identifier")
        .map(|b| text(b, src).to_string())
        .unwrap_or_else(|| text(p, src).split_whitespace().last().unwrap_or("").to_string())
}

pub(super) fn classify<'t>(node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    let src = cx.src;
    let (k, name) = match kind {
        "class_declaration" => {
            let k = match field(node, "declaration_kind").map(|d| text(d, src)) {
                Some("struct") => SymbolKind::Struct,
                Some("enum") => SymbolKind::Enum,
                Some("extension") => SymbolKind::Impl,
                _ => SymbolKind::Class,
            };
            (k, field_text(node, "name", src).map(|n| bare_type_name(&n)))
        }
        "protocol_declaration" => (SymbolKind::Interface, field_text(node, "name", src)),
        "function_declaration" => (cx.callable_kind(), field_text(node, "name", src)),
        "protocol_function_declaration" => (SymbolKind::Method, field_text(node, "name", src)),
        "init_declaration" => (SymbolKind::Method, Some("init".into())),
        "deinit_declaration" => (SymbolKind::Method, Some("deinit".into())),
        "subscript_declaration" => (SymbolKind::Method, Some("subscript".into())),
        "typealias_declaration" => (SymbolKind::Type, field_text(node, "name", src)),
        "enum_entry" => {
            for n in children_by_field(node, "name") {
                out.push(Def::new(text(n, src), SymbolKind::Variant, node));
            }
            return;
        }
        "property_declaration" | "protocol_property_declaration" => {
            if cx.in_function {
                return;
            }
            let k = if cx.in_type() { SymbolKind::Field } else { SymbolKind::Variable };
            for p in children_by_field(node, "name") {
                let name = swift_bound(p, src);
                let k = if k == SymbolKind::Variable { const_or_var(&name) } else { k };
                out.push(Def::new(name, k, node));
            }
            return;
        }
        _ => return,
    };
    if let Some(n) = name.filter(|n| !n.is_empty()) {
        out.push(Def::new(n, k, node));
    }
}
