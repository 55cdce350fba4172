//! C#: `using` directives (plain, `static`, aliased, `global`) and the namespaces the file
//! declares (block and file-scoped).

use super::syntax::{self, line, named_children, Src};
use super::{kind, RawImport};
use tree_sitter::Node;

/// Block namespaces followed this deep; deeper ones (and what they hold) are skipped with a
/// warning. Finding a namespace's ancestors through `Node::parent` costs its depth each step,
/// so a generated file of 1,000 nested namespaces kept an index run busy for minutes.
const MAX_NAMESPACE_DEPTH: usize = 64;

pub fn extract(root: Node, src: &Src) -> Vec<RawImport> {
    let mut out = Vec::new();
    // The block namespaces around the current node, outermost first, with where each ends (the
    // walk is pre-order, so one that ends before the current node starts no longer encloses it).
    let mut open: Vec<(usize, String)> = Vec::new();
    syntax::walk(root, |n| {
        while open.last().is_some_and(|(end, _)| *end <= n.start_byte()) {
            open.pop();
        }
        match n.kind() {
            "using_directive" => {
                let is_static = syntax::has_child_kind(n, "static");
                let target = named_children(n).into_iter().rev().find(|c| {
                    matches!(c.kind(), "qualified_name" | "identifier" | "generic_name" | "alias_qualified_name")
                });
                if let Some(t) = target {
                    let name: String = src.text(t).chars().filter(|c| !c.is_whitespace()).collect();
                    let name = name.split_once("::").map(|(_, rest)| rest.to_string()).unwrap_or(name);
                    out.push(RawImport::new(if is_static { kind::USE_STATIC } else { kind::USE }, name, line(n)));
                }
                false
            }
            "namespace_declaration" | "file_scoped_namespace_declaration" => {
                if open.len() >= MAX_NAMESPACE_DEPTH {
                    tracing::warn!(line = line(n), "namespaces nested over {MAX_NAMESPACE_DEPTH} deep; skipped");
                    return false;
                }
                let Some(name) = n.child_by_field_name("name") else { return true };
                let name: String = src.text(name).chars().filter(|c| !c.is_whitespace()).collect();
                let full = open.iter().map(|(_, s)| s.as_str()).chain([name.as_str()]).collect::<Vec<_>>().join(".");
                out.push(RawImport::new(kind::NAMESPACE, full, line(n)));
                if n.kind() == "namespace_declaration" {
                    open.push((n.end_byte(), name));
                }
                true
            }
            "compilation_unit" | "declaration_list" => true,
            _ => false,
        }
    });
    out
}
