//! Dart: `import`, `export`, `part` (imports) and `library`, `part of` (declarations).
//! Conditional imports (`import 'a.dart' if (dart.library.io) 'b.dart';`) record every URI,
//! the default first and the others as candidates. Where the grammar fails (it does on
//! double-quoted conditional imports), directive lines are read from the text.

use super::syntax::{self, line, Src};
use super::{kind, RawImport};
use tree_sitter::Node;

pub fn extract(root: Node, src: &Src, source: &str) -> Vec<RawImport> {
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
        // Every URI: the import's own, then those of `if (cond) 'other.dart'` configurations.
        let mut uris = Vec::new();
        syntax::walk(n, |c| {
            if c.kind() == "uri" {
                uris.push(syntax::unescape(syntax::unquote(src.text(c))));
                return false;
            }
            true
        });
        let mut uris = uris.into_iter();
        let spec = match uris.next() {
            Some(u) => u,
            None => match syntax::find_kind(n, "dotted_identifier_list") {
                Some(name) => src.text(name).chars().filter(|c| !c.is_whitespace()).collect(),
                None => continue,
            },
        };
        let candidates: Vec<String> = uris.collect();
        let mut imp = RawImport::new(k, spec, line(n));
        imp.candidates = candidates;
        out.push(imp);
    }
    if root.has_error() {
        text_fallback(source, &mut out);
    }
    out
}

/// Directives in parts of the file the grammar could not parse (tree-sitter-dart 0.3 fails on
/// double-quoted conditional imports): read from the text of lines not already covered.
fn text_fallback(source: &str, out: &mut Vec<RawImport>) {
    let covered: std::collections::HashSet<u32> = out.iter().map(|i| i.line).collect();
    for (i, text) in source.lines().enumerate() {
        let line = i as u32 + 1;
        let t = text.trim_start();
        let k = if t.starts_with("import ") {
            kind::IMPORT
        } else if t.starts_with("export ") {
            kind::EXPORT
        } else if t.starts_with("part ") && !t.starts_with("part of") {
            kind::PART
        } else {
            continue;
        };
        if covered.contains(&line) {
            continue;
        }
        let mut uris = quoted(t).into_iter();
        if let Some(spec) = uris.next() {
            let mut imp = RawImport::new(k, spec, line);
            imp.candidates = uris.collect();
            out.push(imp);
        }
    }
    out.sort_by_key(|i| i.line);
}

/// The quoted strings of a line, in order.
fn quoted(mut rest: &str) -> Vec<String> {
    let mut found = Vec::new();
    while let Some(start) = rest.find(['\'', '"']) {
        let quote = &rest[start..start + 1];
        let body = &rest[start + 1..];
        let Some(end) = body.find(quote) else { break };
        found.push(body[..end].to_string());
        rest = &body[end + 1..];
    }
    found
}
