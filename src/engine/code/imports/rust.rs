//! Rust: `mod x;` (with `#[path]` and inside inline modules), `use` trees flattened to one
//! path each, `extern crate`, and `include!` / `include_str!` / `include_bytes!` (with
//! `concat!` folded; `env!(..)` parts are unknown).

use super::fold::Folded;
use super::syntax::{self, line, named_children, Src};
use super::{kind, RawImport};
use tree_sitter::Node;

pub fn extract(root: Node, src: &Src) -> Vec<RawImport> {
    let mut out = Vec::new();
    items(root, src, &[], &mut out);
    out
}

/// Walks the items of a module body; `inline` is the path of inline modules we are inside.
fn items(body: Node, src: &Src, inline: &[String], out: &mut Vec<RawImport>) {
    let mut path_attr: Option<String> = None;
    for child in named_children(body) {
        match child.kind() {
            "attribute_item" => {
                if let Some(p) = path_attribute(child, src) {
                    path_attr = Some(p);
                }
                continue;
            }
            "mod_item" => {
                let name = child.child_by_field_name("name").map(|n| src.text(n)).unwrap_or("");
                match child.child_by_field_name("body") {
                    Some(body) => {
                        let mut inner = inline.to_vec();
                        inner.push(name.to_string());
                        items(body, src, &inner, out);
                    }
                    None => {
                        let imp = match path_attr.take() {
                            Some(p) => {
                                let mut imp = RawImport::new(kind::MOD_PATH, p, line(child));
                                imp.names = vec![name.to_string()];
                                imp
                            }
                            None => {
                                let mut chain = inline.to_vec();
                                chain.push(name.to_string());
                                RawImport::new(kind::MOD, chain.join("::"), line(child))
                            }
                        };
                        out.push(imp);
                    }
                }
            }
            "use_declaration" => push_use(child, src, inline, out),
            "extern_crate_declaration" => {
                if let Some(n) = child.child_by_field_name("name") {
                    out.push(RawImport::new(kind::EXTERN_CRATE, src.text(n), line(child)));
                }
            }
            _ => nested(child, src, inline, out),
        }
        path_attr = None;
    }
}

/// One record per path of a `use` declaration.
fn push_use(decl: Node, src: &Src, inline: &[String], out: &mut Vec<RawImport>) {
    if let Some(arg) = decl.child_by_field_name("argument") {
        let mut paths = Vec::new();
        use_tree(arg, src, "", &mut paths);
        for p in paths {
            out.push(RawImport::new(kind::USE, relative_to_file(&p, inline), line(decl)));
        }
    }
}

/// `#[path = "x.rs"]`.
fn path_attribute(attr_item: Node, src: &Src) -> Option<String> {
    let attr = named_children(attr_item).into_iter().find(|n| n.kind() == "attribute")?;
    let name = named_children(attr).into_iter().next()?;
    if src.text(name) != "path" {
        return None;
    }
    let value = attr.child_by_field_name("value")?;
    Some(syntax::unescape(syntax::unquote(src.text(value))))
}

/// Flattens a use tree into full paths (`a::{b, c::d}` gives `a::b`, `a::c::d`).
fn use_tree(node: Node, src: &Src, prefix: &str, out: &mut Vec<String>) {
    let join = |p: &str, s: &str| if p.is_empty() { s.to_string() } else { format!("{p}::{s}") };
    match node.kind() {
        "scoped_use_list" => {
            let base = node
                .child_by_field_name("path")
                .map(|p| join(prefix, &path_text(p, src)))
                .unwrap_or_else(|| prefix.to_string());
            if let Some(list) = node.child_by_field_name("list") {
                use_tree(list, src, &base, out);
            }
        }
        "use_list" => {
            for c in named_children(node) {
                use_tree(c, src, prefix, out);
            }
        }
        "use_as_clause" => {
            if let Some(p) = node.child_by_field_name("path") {
                use_tree(p, src, prefix, out);
            }
        }
        "use_wildcard" => match named_children(node).into_iter().next() {
            Some(p) => out.push(join(prefix, &path_text(p, src))),
            None if !prefix.is_empty() => out.push(prefix.to_string()),
            None => {}
        },
        "self" if !prefix.is_empty() => out.push(prefix.to_string()),
        "identifier" | "scoped_identifier" | "crate" | "super" => out.push(join(prefix, &path_text(node, src))),
        _ => {}
    }
}

/// A path's text without whitespace or a leading `::`.
fn path_text(node: Node, src: &Src) -> String {
    let t: String = src.text(node).chars().filter(|c| !c.is_whitespace()).collect();
    t.trim_start_matches("::").to_string()
}

/// Rewrites `self::`/`super::` paths written inside inline modules so they are relative to the
/// file's own module (`mod c { use super::x; }` is `self::x` for the file).
fn relative_to_file(path: &str, inline: &[String]) -> String {
    if inline.is_empty() {
        return path.to_string();
    }
    let segs: Vec<&str> = path.split("::").collect();
    let mut scope: Vec<String> = inline.to_vec();
    let mut extra_super = 0;
    let mut i = 0;
    match segs.first() {
        Some(&"self") => i = 1,
        Some(&"super") => {
            while segs.get(i) == Some(&"super") {
                if scope.pop().is_none() {
                    extra_super += 1;
                }
                i += 1;
            }
        }
        _ => return path.to_string(),
    }
    let mut parts: Vec<String> =
        if extra_super > 0 { vec!["super".to_string(); extra_super] } else { vec!["self".to_string()] };
    parts.extend(scope);
    parts.extend(segs[i..].iter().map(|s| s.to_string()));
    parts.join("::")
}

/// `use` declarations in function bodies, and `include!`, `include_str!` and `include_bytes!`
/// anywhere below `node`.
fn nested(node: Node, src: &Src, inline: &[String], out: &mut Vec<RawImport>) {
    syntax::walk(node, |n| {
        if n.kind() == "use_declaration" {
            push_use(n, src, inline, out);
            return false;
        }
        if n.kind() == "mod_item" {
            return false;
        }
        if n.kind() != "macro_invocation" {
            return true;
        }
        let name = n.child_by_field_name("macro").map(|m| src.text(m)).unwrap_or("");
        if matches!(name, "include" | "include_str" | "include_bytes") {
            if let Some(tt) = named_children(n).into_iter().find(|c| c.kind() == "token_tree") {
                let folded = fold_tokens(tt, src, 0);
                let dynamic = named_children(tt).first().is_none_or(|c| c.kind() != "string_literal");
                out.push(folded.into_import(kind::INCLUDE_FILE, line(n), src.text(tt), dynamic));
            }
            return false;
        }
        true
    });
}

/// Folds a macro argument token tree: a string literal, or `concat!(...)` of literals; other
/// macros (`env!`) are unknown.
fn fold_tokens(tt: Node, src: &Src, depth: u32) -> Folded {
    if depth > syntax::MAX_FOLD_DEPTH {
        return Folded::unknown();
    }
    let kids = named_children(tt);
    match kids.first() {
        Some(first) if first.kind() == "string_literal" => {
            Folded::lit(syntax::unescape(syntax::unquote(src.text(*first))))
        }
        Some(first) if first.kind() == "identifier" && src.text(*first) == "concat" => {
            let Some(args) = kids.get(1).filter(|k| k.kind() == "token_tree") else { return Folded::unknown() };
            let mut parts = Vec::new();
            let inner = named_children(*args);
            let mut i = 0;
            while i < inner.len() {
                let k = inner[i];
                match k.kind() {
                    "string_literal" => parts.push(Folded::lit(syntax::unescape(syntax::unquote(src.text(k))))),
                    "identifier" => {
                        // A nested macro call: `env!(...)`, `concat!(...)`; its token tree follows.
                        let nested = inner.get(i + 1).filter(|n| n.kind() == "token_tree");
                        if src.text(k) == "concat" {
                            if let Some(n) = nested {
                                parts.push(fold_concat_args(*n, src, depth + 1));
                            }
                        } else {
                            parts.push(Folded::unknown());
                        }
                        if nested.is_some() {
                            i += 1;
                        }
                    }
                    _ => parts.push(Folded::unknown()),
                }
                i += 1;
            }
            Folded::concat_all(&parts)
        }
        _ => Folded::unknown(),
    }
}

fn fold_concat_args(args: Node, src: &Src, depth: u32) -> Folded {
    let parts: Vec<Folded> = named_children(args)
        .into_iter()
        .map(|k| {
            if k.kind() == "string_literal" {
                Folded::lit(syntax::unescape(syntax::unquote(src.text(k))))
            } else if k.kind() == "token_tree" {
                fold_tokens(k, src, depth + 1)
            } else {
                Folded::unknown()
            }
        })
        .collect();
    Folded::concat_all(&parts)
}
