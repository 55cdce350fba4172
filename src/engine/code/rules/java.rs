//! Java symbol rules: the node kinds that declare something, and what each declares.

use super::{children_by_field, field_text, head_words, Ctx, Def};
use crate::engine::code::types::SymbolKind;
use tree_sitter::Node;

pub(super) const KINDS: &[&str] = &[
    "class_declaration",
    "interface_declaration",
    "enum_declaration",
    "record_declaration",
    "annotation_type_declaration",
    "method_declaration",
    "constructor_declaration",
    "compact_constructor_declaration",
    "annotation_type_element_declaration",
    "field_declaration",
    "constant_declaration",
    "enum_constant",
    "formal_parameter",
];

pub(super) fn classify<'t>(node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    let src = cx.src;
    let k = match kind {
        "class_declaration" | "record_declaration" => SymbolKind::Class,
        "interface_declaration" | "annotation_type_declaration" => SymbolKind::Interface,
        "enum_declaration" => SymbolKind::Enum,
        "method_declaration"
        | "constructor_declaration"
        | "compact_constructor_declaration"
        | "annotation_type_element_declaration" => SymbolKind::Method,
        "enum_constant" => SymbolKind::Variant,
        // A record's components (`record Point(int x, int y)`) are its fields; a method's or a
        // lambda's parameters are not symbols.
        "formal_parameter" => {
            let holder = node.parent().and_then(|p| p.parent()).map(|g| g.kind());
            if cx.parent_kind != "formal_parameters" || holder != Some("record_declaration") {
                return;
            }
            SymbolKind::Field
        }
        "field_declaration" | "constant_declaration" => {
            if cx.in_function {
                return;
            }
            let words = head_words(node, src, &["variable_declarator"]);
            let constant = kind == "constant_declaration" || (words.contains(&"static") && words.contains(&"final"));
            let k = if constant { SymbolKind::Constant } else { SymbolKind::Field };
            for d in children_by_field(node, "declarator") {
                if let Some(n) = field_text(d, "name", src) {
                    out.push(Def::new(n, k, node));
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
