//! C and C++: `#include "x"` and `#include <x>`, and `#include MACRO` where the file
//! `#define`s the macro to a string (or `<...>`) literal.

use super::syntax::{self, line, Src};
use super::{kind, RawImport};
use std::collections::HashMap;
use tree_sitter::Node;

pub fn extract(root: Node, src: &Src) -> Vec<RawImport> {
    let mut defines: HashMap<String, String> = HashMap::new();
    let mut out = Vec::new();
    syntax::walk(root, |n| match n.kind() {
        "preproc_def" => {
            if let (Some(name), Some(value)) = (n.child_by_field_name("name"), n.child_by_field_name("value")) {
                defines.insert(src.text(name).to_string(), src.text(value).trim().to_string());
            }
            false
        }
        "preproc_include" => {
            if let Some(path) = n.child_by_field_name("path") {
                let text = match path.kind() {
                    "identifier" => defines.get(src.text(path)).cloned(),
                    _ => Some(src.text(path).to_string()),
                };
                match text {
                    Some(t) => out.push(include(&t, line(n))),
                    None => {
                        let mut imp = RawImport::new(kind::INCLUDE, "*", line(n));
                        imp.dynamic = true;
                        imp.unresolvable = true;
                        imp.expr = src.text(path).to_string();
                        out.push(imp);
                    }
                }
            }
            false
        }
        // Includes live at file level or inside conditional blocks and namespaces.
        "translation_unit"
        | "preproc_if"
        | "preproc_ifdef"
        | "preproc_else"
        | "preproc_elif"
        | "preproc_elifdef"
        | "linkage_specification"
        | "declaration_list"
        | "namespace_definition" => true,
        _ => false,
    });
    out
}

fn include(text: &str, line: u32) -> RawImport {
    let t = text.trim();
    if t.starts_with('<') && t.ends_with('>') && t.len() >= 2 {
        RawImport::new(kind::INCLUDE_SYSTEM, t[1..t.len() - 1].trim(), line)
    } else {
        RawImport::new(kind::INCLUDE, syntax::unquote(t), line)
    }
}
