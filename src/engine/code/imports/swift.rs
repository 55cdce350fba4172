//! Swift: `import Module` (also `@testable import`, `import struct Module.Type`); the module is
//! what is recorded.

use super::syntax::{self, line, named_children, Src};
use super::{kind, RawImport};
use tree_sitter::Node;

pub fn extract(root: Node, src: &Src) -> Vec<RawImport> {
    let mut out = Vec::new();
    syntax::walk(root, |n| match n.kind() {
        "import_declaration" => {
            let module = named_children(n)
                .into_iter()
                .find(|c| c.kind() == "identifier")
                .and_then(|id| named_children(id).into_iter().next())
                .map(|m| src.text(m).to_string());
            if let Some(m) = module {
                out.push(RawImport::new(kind::IMPORT, m, line(n)));
            }
            false
        }
        "source_file" => true,
        // `#if canImport(X)` blocks
        k => k.starts_with("directive") || k == "statements",
    });
    out
}
