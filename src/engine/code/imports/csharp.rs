//! C#: `using` directives (plain, `static`, aliased, `global`) and the namespaces the file
//! declares (block and file-scoped).

use super::syntax::{self, line, named_children, Src};
use super::{kind, RawImport};
use tree_sitter::Node;

pub fn extract(root: Node, src: &Src) -> Vec<RawImport> {
    let mut out = Vec::new();
    syntax::walk(root, |n| match n.kind() {
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
            if let Some(name) = n.child_by_field_name("name") {
                let mut full: Vec<String> = enclosing_namespaces(n, src);
                full.push(src.text(name).chars().filter(|c| !c.is_whitespace()).collect());
                out.push(RawImport::new(kind::NAMESPACE, full.join("."), line(n)));
            }
            true
        }
        "compilation_unit" | "declaration_list" => true,
        _ => false,
    });
    out
}

/// Names of the block namespaces around a nested namespace declaration, outermost first.
fn enclosing_namespaces(n: Node, src: &Src) -> Vec<String> {
    let mut names = Vec::new();
    let mut cur = n.parent();
    while let Some(p) = cur {
        if p.kind() == "namespace_declaration" {
            if let Some(name) = p.child_by_field_name("name") {
                names.push(src.text(name).chars().filter(|c| !c.is_whitespace()).collect());
            }
        }
        cur = p.parent();
    }
    names.reverse();
    names
}
