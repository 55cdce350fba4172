//! Rust symbol rules: the node kinds that declare something, and what each declares.

use super::{bare_type_name, field, field_text, text, Ctx, Def};
use crate::engine::code::types::SymbolKind;
use tree_sitter::Node;

pub(super) const KINDS: &[&str] = &[
    "function_item",
    "function_signature_item",
    "struct_item",
    "union_item",
    "enum_item",
    "enum_variant",
    "trait_item",
    "impl_item",
    "mod_item",
    "const_item",
    "static_item",
    "type_item",
    "associated_type",
    "macro_definition",
    "field_declaration",
];

pub(super) fn classify<'t>(node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    let src = cx.src;
    let Some(name) = (match kind {
        "impl_item" => field(node, "type").map(|t| bare_type_name(text(t, src))),
        _ => field_text(node, "name", src),
    }) else {
        return;
    };
    let k = match kind {
        "function_item" | "function_signature_item" => cx.callable_kind(),
        "struct_item" | "union_item" => SymbolKind::Struct,
        "enum_item" => SymbolKind::Enum,
        "enum_variant" if cx.scope == Some(SymbolKind::Enum) => SymbolKind::Variant,
        "trait_item" => SymbolKind::Trait,
        "impl_item" => SymbolKind::Impl,
        "mod_item" => SymbolKind::Module,
        "const_item" if !cx.in_function => SymbolKind::Constant,
        "static_item" if !cx.in_function => SymbolKind::Variable,
        "type_item" | "associated_type" => SymbolKind::Type,
        "macro_definition" => SymbolKind::Macro,
        "field_declaration" if cx.scope == Some(SymbolKind::Struct) && !cx.in_function => SymbolKind::Field,
        _ => return,
    };
    out.push(Def::new(name, k, node));
}
