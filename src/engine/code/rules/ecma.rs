//! JavaScript, TypeScript, TSX symbol rules: the node kinds that declare something, and what each declares.

use super::{const_or_var, field, field_text, is_require, text, Ctx, Def};
use crate::engine::code::types::SymbolKind;
use tree_sitter::Node;

pub(super) const KINDS: &[&str] = &[
    "function_declaration",
    "generator_function_declaration",
    "function_signature",
    "class_declaration",
    "abstract_class_declaration",
    "method_definition",
    "method_signature",
    "abstract_method_signature",
    "field_definition",
    "public_field_definition",
    "property_signature",
    "variable_declarator",
    "interface_declaration",
    "type_alias_declaration",
    "enum_declaration",
    "internal_module",
    "module",
    "enum_assignment",
    "property_identifier",
];

pub(super) fn classify<'t>(node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    let src = cx.src;
    let name = || field_text(node, "name", src);
    let (k, name) = match kind {
        "function_declaration" | "generator_function_declaration" | "function_signature" => {
            (SymbolKind::Function, name())
        }
        "class_declaration" | "abstract_class_declaration" => (SymbolKind::Class, name()),
        // Members of classes and interfaces; methods of object literals and object types are not symbols.
        "method_definition" | "method_signature" | "abstract_method_signature" if cx.in_type() => {
            (SymbolKind::Method, name())
        }
        "field_definition" if cx.in_type() => (SymbolKind::Field, field_text(node, "property", src)),
        "public_field_definition" | "property_signature" if cx.in_type() => (SymbolKind::Field, name()),
        "interface_declaration" => (SymbolKind::Interface, name()),
        "type_alias_declaration" => (SymbolKind::Type, name()),
        "enum_declaration" => (SymbolKind::Enum, name()),
        "internal_module" | "module" => (SymbolKind::Module, name().map(|n| n.trim_matches(['"', '\'']).to_string())),
        "enum_assignment" if cx.parent_kind == "enum_body" => (SymbolKind::Variant, name()),
        "property_identifier" if cx.parent_kind == "enum_body" => (SymbolKind::Variant, Some(text(node, src).into())),
        "variable_declarator" => {
            if !cx.top_level() {
                return;
            }
            let Some(id) = field(node, "name").filter(|n| n.kind() == "identifier") else { return };
            let name = text(id, src).to_string();
            let value = field(node, "value");
            let k = match value.map(|v| v.kind()) {
                Some("arrow_function" | "function_expression" | "function" | "generator_function") => {
                    let body = value.and_then(|v| field(v, "body"));
                    out.push(Def { body, ..Def::new(name, SymbolKind::Function, node) });
                    return;
                }
                Some("class") => SymbolKind::Class,
                Some("call_expression") if is_require(value, src) => return, // an import, not a definition
                _ => const_or_var(&name),
            };
            (k, Some(name))
        }
        _ => return,
    };
    if let Some(name) = name.filter(|n| !n.is_empty()) {
        out.push(Def::new(name, k, node));
    }
}
