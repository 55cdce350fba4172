//! Go symbol rules: the node kinds that declare something, and what each declares.

use super::{bare_type_name, children_by_field, field, field_text, first_named_of_kind, text, Ctx, Def};
use crate::engine::code::types::SymbolKind;
use tree_sitter::Node;

pub(super) const KINDS: &[&str] = &[
    "function_declaration",
    "method_declaration",
    "type_spec",
    "type_alias",
    "field_declaration",
    "method_elem",
    "method_spec",
    "const_spec",
    "var_spec",
];

pub(super) fn classify<'t>(node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    let src = cx.src;
    match kind {
        "function_declaration" => {
            if let Some(n) = field_text(node, "name", src) {
                out.push(Def::new(n, SymbolKind::Function, node));
            }
        }
        "method_declaration" => {
            let receiver = field(node, "receiver")
                .and_then(|r| first_named_of_kind(r, &["parameter_declaration"]))
                .and_then(|p| field(p, "type"))
                .map(|t| bare_type_name(text(t, src)));
            if let Some(n) = field_text(node, "name", src) {
                out.push(Def::new(n, SymbolKind::Method, node).container(receiver));
            }
        }
        "type_spec" | "type_alias" => {
            let Some(n) = field_text(node, "name", src) else { return };
            let k = match field(node, "type").map(|t| t.kind()) {
                Some("struct_type") if kind == "type_spec" => SymbolKind::Struct,
                Some("interface_type") if kind == "type_spec" => SymbolKind::Interface,
                _ => SymbolKind::Type,
            };
            out.push(Def { sig_prefix: "type ", ..Def::new(n, k, node) });
        }
        "field_declaration" if cx.scope == Some(SymbolKind::Struct) => {
            for n in children_by_field(node, "name") {
                out.push(Def::new(text(n, src), SymbolKind::Field, node));
            }
        }
        "method_elem" | "method_spec" if cx.scope == Some(SymbolKind::Interface) => {
            if let Some(n) = field_text(node, "name", src) {
                out.push(Def::new(n, SymbolKind::Method, node));
            }
        }
        "const_spec" | "var_spec" if !cx.in_function => {
            let k = if kind == "const_spec" { SymbolKind::Constant } else { SymbolKind::Variable };
            for n in children_by_field(node, "name") {
                out.push(Def::new(text(n, src), k, node));
            }
        }
        _ => {}
    }
}
