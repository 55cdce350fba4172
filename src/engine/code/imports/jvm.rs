//! Java and Kotlin: the package declaration, imports (static, wildcard, aliased), and
//! `Class.forName("a.b.C")` with a literal.

use super::syntax::{self, line, Src};
use super::{kind, RawImport};
use tree_sitter::Node;

pub fn extract_java(root: Node, src: &Src) -> Vec<RawImport> {
    let mut out = Vec::new();
    let reflection = src.mentions(&["forName"]);
    syntax::walk(root, |n| match n.kind() {
        "package_declaration" => {
            out.push(RawImport::new(kind::PACKAGE, declared_name(n, src, "package"), line(n)));
            false
        }
        "import_declaration" => {
            let text = clean(src.text(n), "import");
            let (is_static, name) = match text.strip_prefix("static ") {
                Some(rest) => (true, rest.trim().to_string()),
                None => (false, text),
            };
            out.push(RawImport::new(if is_static { kind::USE_STATIC } else { kind::IMPORT }, squash(&name), line(n)));
            false
        }
        "method_invocation" => {
            let object = n.child_by_field_name("object").map(|o| src.text(o)).unwrap_or("");
            let name = n.child_by_field_name("name").map(|o| src.text(o)).unwrap_or("");
            if name == "forName" && (object == "Class" || object == "java.lang.Class") {
                if let Some(arg) = n.child_by_field_name("arguments").and_then(|a| a.named_child(0)) {
                    if arg.kind() == "string_literal" {
                        out.push(RawImport::new(kind::REFLECT, syntax::unquote(src.text(arg)), line(n)));
                    }
                }
            }
            true
        }
        "program" => true,
        // Declarations are at the top; `Class.forName` can be anywhere.
        _ => reflection,
    });
    out
}

pub fn extract_kotlin(root: Node, src: &Src) -> Vec<RawImport> {
    let mut out = Vec::new();
    let reflection = src.mentions(&["forName"]);
    syntax::walk(root, |n| match n.kind() {
        "package_header" => {
            out.push(RawImport::new(kind::PACKAGE, declared_name(n, src, "package"), line(n)));
            false
        }
        "import" | "import_header" => {
            let text = clean(src.text(n), "import");
            let name = match text.split_once(" as ") {
                Some((name, _alias)) => name.trim().to_string(),
                None => text,
            };
            out.push(RawImport::new(kind::IMPORT, squash(&name), line(n)));
            false
        }
        "call_expression" => {
            let t = src.text(n);
            if t.starts_with("Class.forName(\"") {
                if let Some(arg) = syntax::find_kind(n, "string_content") {
                    out.push(RawImport::new(kind::REFLECT, src.text(arg), line(n)));
                }
            }
            true
        }
        "source_file" | "import_list" => true,
        _ => reflection,
    });
    out
}

/// `package a.b;` gives `a.b`.
fn declared_name(n: Node, src: &Src, keyword: &str) -> String {
    squash(&clean(src.text(n), keyword))
}

/// The statement text without its keyword, `;` and comments.
fn clean(text: &str, keyword: &str) -> String {
    let no_comments: String = text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join(" ");
    let t = no_comments.trim().trim_end_matches(';').trim();
    t.strip_prefix(keyword).unwrap_or(t).trim().to_string()
}

/// Removes whitespace inside a dotted name (`a . b` is `a.b`).
fn squash(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}
