//! Kotlin symbol rules: the node kinds that declare something, and what each declares.

use super::{field, field_text, first_named_of_kind, has_token, named_children, text, Ctx, Def};
use crate::engine::code::types::SymbolKind;
use tree_sitter::Node;

pub(super) const KINDS: &[&str] = &[
    "class_declaration",
    "object_declaration",
    "companion_object",
    "function_declaration",
    "secondary_constructor",
    "property_declaration",
    "type_alias",
    "enum_entry",
    "class_parameter",
];

pub(super) fn classify<'t>(node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    let src = cx.src;
    let modifiers = || first_named_of_kind(node, &["modifiers"]).map(|m| text(m, src)).unwrap_or("");
    let first_identifier = || first_named_of_kind(node, &["identifier"]).map(|n| text(n, src).to_string());
    let (k, name) = match kind {
        "class_declaration" => {
            let k = if has_token(node, "interface") {
                SymbolKind::Interface
            } else if modifiers().split_whitespace().any(|w| w == "enum") {
                SymbolKind::Enum
            } else {
                SymbolKind::Class
            };
            (k, field_text(node, "name", src))
        }
        "object_declaration" => (SymbolKind::Class, field_text(node, "name", src)),
        "companion_object" => {
            (SymbolKind::Class, Some(field_text(node, "name", src).unwrap_or_else(|| "Companion".into())))
        }
        "function_declaration" => (cx.callable_kind(), field_text(node, "name", src)),
        "secondary_constructor" => (SymbolKind::Method, Some("constructor".into())),
        "type_alias" => (
            SymbolKind::Type,
            field(node, "type")
                .filter(|t| t.kind() == "identifier")
                .map(|t| text(t, src).into())
                .or_else(first_identifier),
        ),
        "enum_entry" => (SymbolKind::Variant, first_identifier()),
        "class_parameter" => {
            if !(has_token(node, "val") || has_token(node, "var")) || !cx.in_type() {
                return;
            }
            (SymbolKind::Field, first_identifier())
        }
        "property_declaration" => {
            if cx.in_function {
                return;
            }
            let k = if modifiers().split_whitespace().any(|w| w == "const") {
                SymbolKind::Constant
            } else if cx.in_type() {
                SymbolKind::Field
            } else {
                SymbolKind::Variable
            };
            let decls = match first_named_of_kind(node, &["variable_declaration", "multi_variable_declaration"]) {
                Some(d) if d.kind() == "multi_variable_declaration" => named_children(d),
                Some(d) => vec![d],
                None => Vec::new(),
            };
            for d in decls {
                if let Some(id) = first_named_of_kind(d, &["identifier"]) {
                    out.push(Def::new(text(id, src), k, node));
                }
            }
            return;
        }
        _ => return,
    };
    if let Some(n) = name {
        out.push(Def::new(n, k, node));
    }
}
