//! Python symbol rules: the node kinds that declare something, and what each declares.

use super::{bare_type_name, const_or_var, field, field_text, text, Ctx, Def};
use crate::engine::code::types::SymbolKind;
use tree_sitter::Node;

pub(super) const KINDS: &[&str] =
    &["function_definition", "class_definition", "decorated_definition", "assignment", "type_alias_statement"];

pub(super) fn classify<'t>(node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    let src = cx.src;
    match kind {
        "decorated_definition" => {
            let Some(inner) = field(node, "definition") else { return };
            let Some(name) = field_text(inner, "name", src) else { return };
            let k = if inner.kind() == "class_definition" { SymbolKind::Class } else { cx.callable_kind() };
            out.push(Def { sig: inner, body: field(inner, "body"), ..Def::new(name, k, node) });
        }
        "function_definition" | "class_definition" => {
            if cx.parent_kind == "decorated_definition" {
                return; // emitted with its decorators
            }
            let Some(name) = field_text(node, "name", src) else { return };
            let k = if kind == "class_definition" { SymbolKind::Class } else { cx.callable_kind() };
            out.push(Def::new(name, k, node));
        }
        "assignment" => {
            if cx.parent_kind != "expression_statement" || cx.in_function {
                return;
            }
            let Some(left) = field(node, "left").filter(|l| l.kind() == "identifier") else { return };
            let name = text(left, src);
            let k = match cx.scope {
                None | Some(SymbolKind::Module) => const_or_var(name),
                Some(SymbolKind::Class) => SymbolKind::Field,
                _ => return,
            };
            out.push(Def::new(name, k, node));
        }
        "type_alias_statement" if !cx.in_function => {
            let Some(left) = field(node, "left") else { return };
            let name = bare_type_name(text(left, src));
            out.push(Def::new(name, SymbolKind::Type, node));
        }
        _ => {}
    }
}
