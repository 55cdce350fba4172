//! Lua symbol rules: the node kinds that declare something, and what each declares.

use super::{
    bare_type_name, children_by_field, const_or_var, field, field_text, first_named_of_kind, is_require, text, Ctx, Def,
};
use crate::engine::code::types::SymbolKind;
use tree_sitter::Node;

pub(super) const KINDS: &[&str] = &["function_declaration", "assignment_statement"];

/// A Lua name node: `f`, `M.f` (container `M`) or `M:f` (a method of `M`).
fn lua_name(n: Node, src: &str) -> Option<(String, Option<String>, bool)> {
    match n.kind() {
        "identifier" => Some((text(n, src).to_string(), None, false)),
        "dot_index_expression" => {
            Some((field_text(n, "field", src)?, field_text(n, "table", src).map(|t| bare_type_name(&t)), false))
        }
        "method_index_expression" => {
            Some((field_text(n, "method", src)?, field_text(n, "table", src).map(|t| bare_type_name(&t)), true))
        }
        _ => None,
    }
}

pub(super) fn classify<'t>(node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    let src = cx.src;
    match kind {
        "function_declaration" => {
            let Some((name, table, method)) = field(node, "name").and_then(|n| lua_name(n, src)) else { return };
            let k = if method { SymbolKind::Method } else { SymbolKind::Function };
            out.push(Def::new(name, k, node).container(table));
        }
        "assignment_statement" if cx.top_level() => {
            let names = first_named_of_kind(node, &["variable_list"]).map(|l| children_by_field(l, "name"));
            let values = first_named_of_kind(node, &["expression_list"]).map(|l| children_by_field(l, "value"));
            let (Some(names), values) = (names, values.unwrap_or_default()) else { return };
            for (i, n) in names.into_iter().enumerate() {
                let Some((name, table, _)) = lua_name(n, src) else { continue };
                let value = values.get(i).copied();
                if value.is_some_and(|v| v.kind() == "function_definition") {
                    let body = value.and_then(|v| field(v, "body"));
                    out.push(Def { body, ..Def::new(name, SymbolKind::Function, node).container(table) });
                } else if table.is_none()
                    && !(value.is_some_and(|v| v.kind() == "function_call") && is_require(value, src))
                {
                    let k = const_or_var(&name);
                    out.push(Def::new(name, k, node));
                }
            }
        }
        _ => {}
    }
}
