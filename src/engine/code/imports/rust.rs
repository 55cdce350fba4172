//! Rust: `mod x;` (with `#[path]` and inside inline modules), `use` trees flattened to one
//! path each, `extern crate`, and `include!` / `include_str!` / `include_bytes!` (with
//! `concat!` folded; `env!(..)` parts are unknown). `mod` and `use` items written inside other
//! macro invocations (`cfg_if! { ... }`, crate-local `cfg_*!` wrappers) are read at the token
//! level; `macro_rules!` bodies are templates and are skipped.

use super::fold::Folded;
use super::syntax::{self, line, named_children, Src};
use super::{kind, RawImport};
use tree_sitter::Node;

/// Inline modules (`mod a { mod b { .. } }`) and `use` groups (`a::{b::{..}}`) followed this
/// deep; deeper ones are skipped with a warning. Real code nests a handful; generated or hostile
/// code nested tens of thousands deep overflowed the indexing thread's stack and aborted the run.
const MAX_NESTING: usize = 64;

/// Text an item must contain to hold a nested `use`, `mod` or `include!`.
const NESTED_NEEDLES: &[&str] = &["use ", "use\n", "use\r", "use\t", "use{", "mod ", "include"];

pub fn extract(root: Node, src: &Src) -> Vec<RawImport> {
    let mut out = Vec::new();
    items(root, src, &[], &mut out);
    out
}

/// Walks the items of a module body; `inline` is the path of inline modules we are inside.
fn items(body: Node, src: &Src, inline: &[String], out: &mut Vec<RawImport>) {
    if inline.len() > MAX_NESTING {
        tracing::warn!(line = line(body), "inline modules nested over {MAX_NESTING} deep; imports below skipped");
        return;
    }
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
                let name = raw_ident(child.child_by_field_name("name").map(|n| src.text(n)).unwrap_or(""));
                match child.child_by_field_name("body") {
                    Some(body) => {
                        let mut inner = inline.to_vec();
                        inner.push(name.clone());
                        items(body, src, &inner, out);
                    }
                    None => {
                        let imp = match path_attr.take() {
                            Some(p) => {
                                let mut imp = RawImport::new(kind::MOD_PATH, p, line(child));
                                imp.names = vec![name.clone()];
                                imp
                            }
                            None => {
                                let mut chain = inline.to_vec();
                                chain.push(name.clone());
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
            // Function bodies and macros may hold `use`, `mod` and `include!`; skip the (many)
            // items whose text cannot.
            _ if syntax::mentions(src.text(child), NESTED_NEEDLES) => nested(child, src, inline, out),
            _ => {}
        }
        path_attr = None;
    }
}

/// One record per path of a `use` declaration.
fn push_use(decl: Node, src: &Src, inline: &[String], out: &mut Vec<RawImport>) {
    if let Some(arg) = decl.child_by_field_name("argument") {
        let mut paths = Vec::new();
        use_tree(arg, src, "", &mut paths, 0);
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
fn use_tree(node: Node, src: &Src, prefix: &str, out: &mut Vec<String>, depth: usize) {
    if depth > MAX_NESTING {
        tracing::warn!(line = line(node), "use tree nested over {MAX_NESTING} deep; paths below skipped");
        return;
    }
    let join = |p: &str, s: &str| if p.is_empty() { s.to_string() } else { format!("{p}::{s}") };
    match node.kind() {
        "scoped_use_list" => {
            let base = node
                .child_by_field_name("path")
                .map(|p| join(prefix, &path_text(p, src)))
                .unwrap_or_else(|| prefix.to_string());
            if let Some(list) = node.child_by_field_name("list") {
                use_tree(list, src, &base, out, depth + 1);
            }
        }
        "use_list" => {
            for c in named_children(node) {
                use_tree(c, src, prefix, out, depth + 1);
            }
        }
        "use_as_clause" => {
            if let Some(p) = node.child_by_field_name("path") {
                use_tree(p, src, prefix, out, depth + 1);
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

/// A path's text without whitespace, a leading `::` or raw-identifier prefixes.
fn path_text(node: Node, src: &Src) -> String {
    let t: String = src.text(node).chars().filter(|c| !c.is_whitespace()).collect();
    t.trim_start_matches("::").split("::").map(raw_ident).collect::<Vec<_>>().join("::")
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
        if matches!(n.kind(), "mod_item" | "macro_definition") {
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
        // Other macros (`cfg_if!`, `cfg_net!`, ...) often wrap `mod` and `use` items.
        if let Some(tt) = named_children(n).into_iter().find(|c| c.kind() == "token_tree") {
            if syntax::mentions(src.text(tt), &["use", "mod"]) {
                macro_items(tt, src, inline, out);
            }
        }
        false
    });
}

/// `mod x;` (with a preceding `#[path = "..."]`) and `use ...;` written inside a macro
/// invocation's token tree, found at the token level.
fn macro_items(tt: Node, src: &Src, inline: &[String], out: &mut Vec<RawImport>) {
    let tokens = leaves(tt);
    let text = |i: usize| tokens.get(i).map(|n| src.text(*n)).unwrap_or("");
    let mut pending_path: Option<String> = None;
    let mut i = 0;
    while i < tokens.len() {
        match text(i) {
            "path" if text(i + 1) == "=" && tokens.get(i + 2).is_some_and(|t| t.kind() == "string_literal") => {
                pending_path = Some(syntax::unescape(syntax::unquote(text(i + 2))));
                i += 3;
                continue;
            }
            "mod" if tokens.get(i + 1).is_some_and(|t| t.kind() == "identifier") && text(i + 2) == ";" => {
                let name = raw_ident(text(i + 1));
                let imp = match pending_path.take() {
                    Some(p) => {
                        let mut imp = RawImport::new(kind::MOD_PATH, p, line(tokens[i]));
                        imp.names = vec![name];
                        imp
                    }
                    None => {
                        let mut chain = inline.to_vec();
                        chain.push(name);
                        RawImport::new(kind::MOD, chain.join("::"), line(tokens[i]))
                    }
                };
                out.push(imp);
                i += 3;
                continue;
            }
            "use" => {
                let end = (i + 1..tokens.len()).find(|&j| text(j) == ";").unwrap_or(tokens.len());
                let words: Vec<&str> = (i + 1..end).map(text).filter(|t| *t != "$").collect();
                let mut paths = Vec::new();
                let mut pos = 0;
                use_tokens(&words, &mut pos, &[], &mut paths, 0);
                for p in paths {
                    out.push(RawImport::new(kind::USE, relative_to_file(&p, inline), line(tokens[i])));
                }
                i = end + 1;
                continue;
            }
            ";" => pending_path = None,
            _ => {}
        }
        i += 1;
    }
}

/// The tokens of a token tree in order (string literals whole).
fn leaves(node: Node) -> Vec<Node> {
    let mut out = Vec::new();
    syntax::walk(node, |n| {
        if n.child_count() == 0 || matches!(n.kind(), "string_literal" | "raw_string_literal" | "char_literal") {
            if n != node {
                out.push(n);
            }
            return false;
        }
        true
    });
    out
}

/// Parses the tokens of a use tree (`a :: b :: { c , d :: * }`) into full paths.
fn use_tokens(words: &[&str], pos: &mut usize, prefix: &[String], out: &mut Vec<String>, depth: u32) {
    if depth > 16 {
        return;
    }
    let mut segs: Vec<String> = prefix.to_vec();
    if words.get(*pos) == Some(&"::") {
        *pos += 1;
    }
    while let Some(&w) = words.get(*pos) {
        match w {
            "{" => {
                *pos += 1;
                while *pos < words.len() && words[*pos] != "}" {
                    use_tokens(words, pos, &segs, out, depth + 1);
                    if words.get(*pos) == Some(&",") {
                        *pos += 1;
                    } else {
                        break;
                    }
                }
                if words.get(*pos) == Some(&"}") {
                    *pos += 1;
                }
                return;
            }
            "*" => {
                *pos += 1;
                if !segs.is_empty() {
                    out.push(segs.join("::"));
                }
                return;
            }
            "self" if !segs.is_empty() && words.get(*pos + 1) != Some(&"::") => {
                *pos += 1;
                if words.get(*pos) == Some(&"as") {
                    *pos += 2;
                }
                out.push(segs.join("::"));
                return;
            }
            "," | "}" | ";" => {
                if !segs.is_empty() && segs.len() > prefix.len() {
                    out.push(segs.join("::"));
                }
                return;
            }
            _ => {
                segs.push(raw_ident(w));
                *pos += 1;
                match words.get(*pos) {
                    Some(&"::") => *pos += 1,
                    Some(&"as") => {
                        *pos += 2;
                        out.push(segs.join("::"));
                        return;
                    }
                    _ => {
                        out.push(segs.join("::"));
                        return;
                    }
                }
            }
        }
    }
}

/// `r#as` is the module `as`.
fn raw_ident(s: &str) -> String {
    s.strip_prefix("r#").unwrap_or(s).to_string()
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
