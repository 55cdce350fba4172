//! Dart: `import`, `export`, `part` (imports) and `library`, `part of` (declarations).

use super::syntax::{self, line, Src};
use super::{kind, RawImport};
use tree_sitter::Node;

pub fn extract(root: Node, src: &Src) -> Vec<RawImport> {
    let mut out = Vec::new();
    for n in syntax::named_children(root) {
        let k = match n.kind() {
            "import_or_export" => {
                if syntax::find_kind(n, "library_export").is_some() {
                    kind::EXPORT
                } else {
                    kind::IMPORT
                }
            }
            "part_directive" => kind::PART,
            "part_of_directive" => kind::PART_OF,
            "library_name" => kind::LIBRARY,
            _ => continue,
        };
        let spec = match syntax::find_kind(n, "uri") {
            Some(uri) => syntax::unescape(syntax::unquote(src.text(uri))),
            None => match syntax::find_kind(n, "dotted_identifier_list") {
                Some(name) => src.text(name).chars().filter(|c| !c.is_whitespace()).collect(),
                None => continue,
            },
        };
        out.push(RawImport::new(k, spec, line(n)));
    }
    out
}
