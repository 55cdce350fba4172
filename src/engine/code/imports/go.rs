//! Go: the package clause (a declaration) and every import spec's path.

use super::syntax::{self, line, Src};
use super::{kind, RawImport};
use tree_sitter::Node;

pub fn extract(root: Node, src: &Src) -> Vec<RawImport> {
    let mut out = Vec::new();
    syntax::walk(root, |n| match n.kind() {
        "package_clause" => {
            if let Some(name) = syntax::find_kind(n, "package_identifier") {
                out.push(RawImport::new(kind::PACKAGE, src.text(name), line(n)));
            }
            false
        }
        "import_spec" => {
            if let Some(path) = n.child_by_field_name("path") {
                out.push(RawImport::new(kind::IMPORT, syntax::unquote(src.text(path)), line(n)));
            }
            false
        }
        "source_file" | "import_declaration" | "import_spec_list" => true,
        _ => false,
    });
    out
}
