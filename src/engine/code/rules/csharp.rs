//! C# symbol rules: the node kinds that declare something, and what each declares.

use super::{field_text, first_named_of_kind, head_words, named_children, Ctx, Def};
use crate::engine::code::types::SymbolKind;
use tree_sitter::Node;

pub(super) const KINDS: &[&str] = &[
    "class_declaration",
    "struct_declaration",
    "interface_declaration",
    "enum_declaration",
    "record_declaration",
    "record_struct_declaration",
    "delegate_declaration",
    "method_declaration",
    "constructor_declaration",
    "destructor_declaration",
    "local_function_statement",
    "property_declaration",
    "event_declaration",
    "field_declaration",
    "event_field_declaration",
    "enum_member_declaration",
    "namespace_declaration",
    "file_scoped_namespace_declaration",
    "operator_declaration",
    "conversion_operator_declaration",
];

pub(super) fn classify<'t>(node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    let src = cx.src;
    let k = match kind {
        "class_declaration" | "record_declaration" => SymbolKind::Class,
        "struct_declaration" | "record_struct_declaration" => SymbolKind::Struct,
        "interface_declaration" => SymbolKind::Interface,
        "enum_declaration" => SymbolKind::Enum,
        "delegate_declaration" => SymbolKind::Type,
        "method_declaration" | "constructor_declaration" | "destructor_declaration" => SymbolKind::Method,
        "local_function_statement" => SymbolKind::Function,
        "property_declaration" | "event_declaration" => SymbolKind::Field,
        "enum_member_declaration" => SymbolKind::Variant,
        "namespace_declaration" | "file_scoped_namespace_declaration" => SymbolKind::Module,
        // `public static Money operator +(Money a, Money b)` is `operator+`, as C++ names its
        // operators; `implicit operator decimal(Money m)` is `operator decimal`.
        "operator_declaration" | "conversion_operator_declaration" => {
            let (part, gap) = if kind == "operator_declaration" { ("operator", "") } else { ("type", " ") };
            if let Some(op) = field_text(node, part, src) {
                out.push(Def::new(format!("operator{gap}{op}"), SymbolKind::Method, node));
            }
            return;
        }
        "field_declaration" | "event_field_declaration" => {
            if cx.in_function {
                return;
            }
            let constant = head_words(node, src, &["variable_declaration"]).contains(&"const");
            let k = if constant { SymbolKind::Constant } else { SymbolKind::Field };
            let Some(decl) = first_named_of_kind(node, &["variable_declaration"]) else { return };
            for d in named_children(decl).into_iter().filter(|d| d.kind() == "variable_declarator") {
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
