//! PHP symbol rules: the node kinds that declare something, and what each declares.

use super::{field, field_text, first_named_of_kind, named_children, text, Ctx, Def};
use crate::engine::code::types::SymbolKind;
use tree_sitter::Node;

pub(super) const KINDS: &[&str] = &[
    "function_definition",
    "class_declaration",
    "interface_declaration",
    "trait_declaration",
    "enum_declaration",
    "method_declaration",
    "property_declaration",
    "const_declaration",
    "enum_case",
    "namespace_definition",
];

pub(super) fn classify<'t>(node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    let src = cx.src;
    let k = match kind {
        "function_definition" => SymbolKind::Function,
        "class_declaration" => SymbolKind::Class,
        "interface_declaration" => SymbolKind::Interface,
        "trait_declaration" => SymbolKind::Trait,
        "enum_declaration" => SymbolKind::Enum,
        "method_declaration" => SymbolKind::Method,
        "enum_case" => SymbolKind::Variant,
        "namespace_definition" => SymbolKind::Module,
        "property_declaration" => {
            for el in named_children(node).into_iter().filter(|c| c.kind() == "property_element") {
                if let Some(v) = field(el, "name").or_else(|| first_named_of_kind(el, &["variable_name"])) {
                    out.push(Def::new(text(v, src).trim_start_matches('$'), SymbolKind::Field, node));
                }
            }
            return;
        }
        "const_declaration" if !cx.in_function => {
            for el in named_children(node).into_iter().filter(|c| c.kind() == "const_element") {
                if let Some(n) = first_named_of_kind(el, &["name"]) {
                    out.push(Def::new(text(n, src), SymbolKind::Constant, node));
                }
            }
            return;
        }
        _ => return,
    };
    if let Some(n) = field_text(node, "name", src) {
        out.push(Def::new(n, k, node));
    }
}
