//! Dart symbol rules: the node kinds that declare something, and what each declares.

use super::{
    bare_type_name, children_by_field, const_or_var, field, field_text, first_named_of_kind, head_words,
    named_children, text, Ctx, Def,
};
use crate::engine::code::types::SymbolKind;
use tree_sitter::Node;

pub(super) const KINDS: &[&str] = &[
    "class_declaration",
    "class_definition",
    "mixin_declaration",
    "enum_declaration",
    "extension_declaration",
    "type_alias",
    "function_declaration",
    "method_declaration",
    "declaration",
    "top_level_variable_declaration",
    "enum_entry",
];

const DART_SIGNATURES: &[&str] = &[
    "function_signature",
    "getter_signature",
    "setter_signature",
    "constructor_signature",
    "factory_constructor_signature",
    "redirecting_factory_constructor_signature",
    "constant_constructor_signature",
    "operator_signature",
];

/// The name of a Dart signature node: `greet`, `Store.named`.
fn dart_signature_name(sig: Node, src: &str) -> Option<String> {
    let sig = if DART_SIGNATURES.contains(&sig.kind()) {
        sig
    } else {
        first_named_of_kind(sig, DART_SIGNATURES).unwrap_or(sig)
    };
    let names: Vec<&str> =
        children_by_field(sig, "name").into_iter().filter(|n| n.is_named()).map(|n| text(n, src)).collect();
    if names.is_empty() {
        return (sig.kind() == "operator_signature").then(|| "operator".to_string());
    }
    Some(names.join("."))
}

/// Variables declared by a Dart declaration list (`a = 1, b`).
fn dart_variables<'t>(list: Node<'t>, src: &str) -> Vec<(Node<'t>, String)> {
    named_children(list)
        .into_iter()
        .filter(|c| matches!(c.kind(), "initialized_identifier" | "static_final_declaration"))
        .filter_map(|c| field_text(c, "name", src).map(|n| (c, n)))
        .collect()
}

pub(super) fn classify<'t>(node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    let src = cx.src;
    let (k, name) = match kind {
        "class_declaration" | "class_definition" | "mixin_declaration" => {
            (SymbolKind::Class, field_text(node, "name", src))
        }
        "enum_declaration" => (SymbolKind::Enum, field_text(node, "name", src)),
        "extension_declaration" => (
            SymbolKind::Impl,
            field_text(node, "name", src).or_else(|| field_text(node, "class", src).map(|c| bare_type_name(&c))),
        ),
        "type_alias" => (
            SymbolKind::Type,
            first_named_of_kind(node, &["type_identifier", "identifier"]).map(|n| text(n, src).to_string()),
        ),
        "enum_entry" => (SymbolKind::Variant, field_text(node, "name", src)),
        "function_declaration" => {
            let sig = field(node, "signature").or_else(|| first_named_of_kind(node, DART_SIGNATURES));
            (cx.callable_kind(), sig.and_then(|s| dart_signature_name(s, src)))
        }
        "method_declaration" => {
            let sig = field(node, "signature").or_else(|| first_named_of_kind(node, &["method_signature"]));
            (SymbolKind::Method, sig.and_then(|s| dart_signature_name(s, src)))
        }
        "declaration" if cx.in_type() => {
            if let Some(sig) = first_named_of_kind(node, DART_SIGNATURES) {
                (SymbolKind::Method, dart_signature_name(sig, src))
            } else {
                let constant = head_words(node, src, &["static_final_declaration_list"]).contains(&"const");
                let k = if constant { SymbolKind::Constant } else { SymbolKind::Field };
                for list in named_children(node) {
                    for (_, name) in dart_variables(list, src) {
                        out.push(Def::new(name, k, node));
                    }
                }
                return;
            }
        }
        "top_level_variable_declaration" => {
            let constant = text(node, src).trim_start().starts_with("const");
            for list in named_children(node) {
                for (_, name) in dart_variables(list, src) {
                    let k = if constant { SymbolKind::Constant } else { const_or_var(&name) };
                    out.push(Def::new(name, k, node));
                }
            }
            return;
        }
        _ => return,
    };
    if let Some(n) = name.filter(|n| !n.is_empty()) {
        out.push(Def::new(n, k, node));
    }
}
