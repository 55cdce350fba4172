//! Ruby symbol rules: the node kinds that declare something, and what each declares.

use super::{bare_type_name, field, field_text, text, Ctx, Def};
use crate::engine::code::types::SymbolKind;
use tree_sitter::Node;

pub(super) const KINDS: &[&str] = &["method", "singleton_method", "class", "module", "assignment"];

pub(super) fn classify<'t>(node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    let src = cx.src;
    let in_namespace = !cx.in_function && matches!(cx.scope, Some(SymbolKind::Class | SymbolKind::Module));
    let (k, name) = match kind {
        "method" => {
            (if in_namespace { SymbolKind::Method } else { SymbolKind::Function }, field_text(node, "name", src))
        }
        "singleton_method" => (SymbolKind::Method, field_text(node, "name", src)),
        "class" => (SymbolKind::Class, field_text(node, "name", src).map(|n| bare_type_name(&n))),
        "module" => (SymbolKind::Module, field_text(node, "name", src).map(|n| bare_type_name(&n))),
        "assignment" if !cx.in_function => {
            let Some(left) = field(node, "left").filter(|l| l.kind() == "constant") else { return };
            (SymbolKind::Constant, Some(text(left, src).to_string()))
        }
        _ => return,
    };
    if let Some(n) = name {
        out.push(Def::new(n, k, node));
    }
}
