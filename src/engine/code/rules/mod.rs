//! Per-language symbol rules, one file per language (like `imports/` and `resolve/`): which
//! Tree-sitter node kinds declare something, what kind of symbol that is, and where its name
//! is. This file holds the dispatch and the helpers every language uses. The walk in [`super::symbols`] calls [`classify`]
//! only for the node kinds a language lists in [`interesting_kinds`], so everything else costs
//! one table lookup.
//!
//! The rules aim at what a reader would list in an outline: types, functions, methods,
//! module-level constants and variables, fields of types, enum members. Locals (anything bound
//! inside a function body, except nested functions and types) are not symbols.

mod cfamily;
mod csharp;
mod dart;
mod ecma;
mod go;
mod java;
mod kotlin;
mod lua;
mod php;
mod python;
mod ruby;
mod rust;
mod swift;

use super::types::SymbolKind;
use super::Lang;
use tree_sitter::Node;

/// What the walk knows about where a node sits.
pub(crate) struct Ctx<'a> {
    /// The file's text.
    pub src: &'a str,
    /// Node kind of the node's syntactic parent.
    pub parent_kind: &'static str,
    /// Kind of the nearest enclosing symbol that is a scope.
    pub scope: Option<SymbolKind>,
    /// Inside a function or method body.
    pub in_function: bool,
    /// The file is a C/C++ header.
    pub header: bool,
}

impl Ctx<'_> {
    /// At module level: not in a function, and not inside a type.
    fn top_level(&self) -> bool {
        !self.in_function && matches!(self.scope, None | Some(SymbolKind::Module))
    }

    /// Directly inside a type (class, struct, trait, impl, ...).
    fn in_type(&self) -> bool {
        !self.in_function && self.scope.is_some_and(SymbolKind::is_type_like)
    }

    /// A function declared here is a method when it sits inside a type.
    fn callable_kind(&self) -> SymbolKind {
        if self.in_type() {
            SymbolKind::Method
        } else {
            SymbolKind::Function
        }
    }
}

/// One declaration found at a node.
pub(crate) struct Def<'t> {
    /// The declared name.
    pub name: String,
    /// Its kind.
    pub kind: SymbolKind,
    /// The node whose lines are the symbol's lines.
    pub node: Node<'t>,
    /// The node the signature starts at (differs from `node` for decorated definitions).
    pub sig: Node<'t>,
    /// The body, where the signature ends (found by field or kind when `None`).
    pub body: Option<Node<'t>>,
    /// The container when it is written outside the syntactic parent (`impl Foo`, receivers,
    /// qualified names).
    pub container: Option<String>,
    /// Prepended to the signature when the node leaves out the keyword (Go's `type`).
    pub sig_prefix: &'static str,
}

impl<'t> Def<'t> {
    fn new(name: impl Into<String>, kind: SymbolKind, node: Node<'t>) -> Def<'t> {
        Def { name: name.into(), kind, node, sig: node, body: None, container: None, sig_prefix: "" }
    }

    fn container(mut self, c: Option<String>) -> Def<'t> {
        self.container = c.filter(|c| !c.is_empty());
        self
    }
}

/// The node kinds [`classify`] handles for a language.
pub(crate) fn interesting_kinds(lang: Lang) -> &'static [&'static str] {
    match lang {
        Lang::Rust => rust::KINDS,
        Lang::Python => python::KINDS,
        Lang::JavaScript | Lang::TypeScript | Lang::Tsx => ecma::KINDS,
        Lang::Go => go::KINDS,
        Lang::Java => java::KINDS,
        Lang::CSharp => csharp::KINDS,
        Lang::C | Lang::Cpp => cfamily::KINDS,
        Lang::Php => php::KINDS,
        Lang::Kotlin => kotlin::KINDS,
        Lang::Swift => swift::KINDS,
        Lang::Ruby => ruby::KINDS,
        Lang::Lua => lua::KINDS,
        Lang::Dart => dart::KINDS,
    }
}

/// Node kinds of functions with no name (function expressions, arrow functions, methods of
/// object literals, closures): no symbol opens a scope for them, yet what is bound in their
/// bodies is local, as in a named function. Without them eslint's 217 rules each listed their
/// `create(context) { const sourceCode = ... }` as a module-level `variable sourceCode`,
/// which took the definition boost from `class SourceCode`.
pub(crate) fn anonymous_function_kinds(lang: Lang) -> &'static [&'static str] {
    match lang {
        Lang::JavaScript | Lang::TypeScript | Lang::Tsx => {
            &["function_expression", "function", "arrow_function", "generator_function", "method_definition"]
        }
        Lang::Go => &["func_literal"],
        Lang::Lua => &["function_definition"],
        Lang::Kotlin => &["lambda_literal", "anonymous_function"],
        _ => &[],
    }
}

/// The version of a language's symbol rules: bump it when a change alters the symbols stored
/// for files already indexed. `symbols.db` records it per language with the grammar versions
/// (`symbols:<lang>`), and the next index run re-extracts every file of a language whose
/// recorded number differs (a store that recorded none counts as 1).
pub(crate) fn symbol_rules_version(lang: Lang) -> u32 {
    match lang {
        // 2: bindings inside functions without a name are local ([`anonymous_function_kinds`]).
        Lang::JavaScript | Lang::TypeScript | Lang::Tsx | Lang::Go | Lang::Lua | Lang::Kotlin => 2,
        // 2: operators (`operator+`, `operator decimal`).
        Lang::CSharp => 2,
        // 2: a record's components are its fields.
        Lang::Java => 2,
        _ => 1,
    }
}

/// Appends the declarations made at `node` (a kind listed in [`interesting_kinds`]) to `out`.
pub(crate) fn classify<'t>(lang: Lang, node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    match lang {
        Lang::Rust => rust::classify(node, kind, cx, out),
        Lang::Python => python::classify(node, kind, cx, out),
        Lang::JavaScript | Lang::TypeScript | Lang::Tsx => ecma::classify(node, kind, cx, out),
        Lang::Go => go::classify(node, kind, cx, out),
        Lang::Java => java::classify(node, kind, cx, out),
        Lang::CSharp => csharp::classify(node, kind, cx, out),
        Lang::C | Lang::Cpp => cfamily::classify(node, kind, cx, out),
        Lang::Php => php::classify(node, kind, cx, out),
        Lang::Kotlin => kotlin::classify(node, kind, cx, out),
        Lang::Swift => swift::classify(node, kind, cx, out),
        Lang::Ruby => ruby::classify(node, kind, cx, out),
        Lang::Lua => lua::classify(node, kind, cx, out),
        Lang::Dart => dart::classify(node, kind, cx, out),
    }
}

// Helpers shared by the languages' rules.

fn text<'s>(n: Node, src: &'s str) -> &'s str {
    src.get(n.byte_range()).unwrap_or("")
}

fn field<'t>(n: Node<'t>, name: &str) -> Option<Node<'t>> {
    n.child_by_field_name(name)
}

fn field_text(n: Node, name: &str, src: &str) -> Option<String> {
    field(n, name).map(|f| text(f, src).trim().to_string()).filter(|s| !s.is_empty())
}

fn named_children<'t>(n: Node<'t>) -> Vec<Node<'t>> {
    let mut c = n.walk();
    n.named_children(&mut c).collect()
}

fn all_children<'t>(n: Node<'t>) -> Vec<Node<'t>> {
    let mut c = n.walk();
    n.children(&mut c).collect()
}

fn children_by_field<'t>(n: Node<'t>, name: &str) -> Vec<Node<'t>> {
    let mut c = n.walk();
    n.children_by_field_name(name, &mut c).collect()
}

fn first_named_of_kind<'t>(n: Node<'t>, kinds: &[&str]) -> Option<Node<'t>> {
    named_children(n).into_iter().find(|c| kinds.contains(&c.kind()))
}

/// `ALL_CAPS` (digits and underscores allowed, two characters or more): a constant by convention.
fn is_upper_snake(name: &str) -> bool {
    name.len() >= 2
        && name.bytes().any(|b| b.is_ascii_uppercase())
        && name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

fn const_or_var(name: &str) -> SymbolKind {
    if is_upper_snake(name) {
        SymbolKind::Constant
    } else {
        SymbolKind::Variable
    }
}

/// A type's name without generic arguments, pointer marks or module path (`*pkg.Store[T]` -> `Store`).
fn bare_type_name(t: &str) -> String {
    let t = t.trim().trim_start_matches(['*', '&']).trim();
    let t = t.split(['<', '[', '(']).next().unwrap_or(t).trim();
    let t = t.rsplit("::").next().unwrap_or(t);
    t.rsplit('.').next().unwrap_or(t).trim().to_string()
}

/// Whether the node's own tokens (not its descendants) include the keyword.
fn has_token(n: Node, keyword: &str) -> bool {
    all_children(n).iter().any(|c| !c.is_named() && c.kind() == keyword)
}

/// The words before the first child of one of `kinds` (modifiers, keywords), for checks like
/// "is this `static final`".
fn head_words<'s>(n: Node, src: &'s str, stop_kinds: &[&str]) -> Vec<&'s str> {
    let stop = named_children(n).into_iter().find(|c| stop_kinds.contains(&c.kind())).map(|c| c.start_byte());
    let end = stop.unwrap_or(n.end_byte()).max(n.start_byte());
    src.get(n.start_byte()..end).unwrap_or("").split(|c: char| !c.is_alphanumeric() && c != '_').collect()
}

/// Node kinds that hold a declaration's body, where its signature ends.
const BODY_KINDS: &[&str] = &[
    "block",
    "body",
    "function_body",
    "class_body",
    "enum_class_body",
    "enum_body",
    "protocol_body",
    "extension_body",
    "interface_body",
    "declaration_list",
    "field_declaration_list",
    "enum_member_declaration_list",
    "enum_declaration_list",
    "compound_statement",
    "statement_block",
    "constructor_body",
    "annotation_type_body",
    "body_statement",
    "enum_variant_list",
    "object_type",
    "computed_property",
];

/// The declaration's head: the text from `sig` to the start of its body (or to the end of its
/// first line), whitespace collapsed, trailing `{`, `:`, `=>`, `;` dropped, at most 200 chars.
pub(crate) fn signature(sig: Node, body: Option<Node>, src: &str) -> String {
    const MAX: usize = 200;
    let start = sig.start_byte();
    let body = body.or_else(|| field(sig, "body")).or_else(|| first_named_of_kind(sig, BODY_KINDS));
    let end = match body {
        Some(b) if b.start_byte() > start && b.start_byte() <= sig.end_byte() => b.start_byte(),
        _ => {
            // Searched within the node only: on a minified line, scanning to the end of the line
            // for each of its declarations was quadratic.
            let node = src.get(start..sig.end_byte()).unwrap_or("");
            node.find('\n').map_or(sig.end_byte(), |i| start + i)
        }
    };
    let raw = src.get(start..end.min(start + 4 * MAX)).unwrap_or("");
    let mut out = String::with_capacity(raw.len().min(MAX + 4));
    for word in raw.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    loop {
        let trimmed = out.trim_end().trim_end_matches(['{', ':', ';', '=']).trim_end();
        let trimmed = trimmed.strip_suffix("=>").unwrap_or(trimmed).trim_end();
        if trimmed.len() == out.len() {
            break;
        }
        out.truncate(trimmed.len());
    }
    if out.len() > MAX {
        let mut cut = MAX;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push('…');
    }
    out
}

/// `require(...)`: a CommonJS or Lua import bound to a name, not a definition.
fn is_require(value: Option<Node>, src: &str) -> bool {
    value.and_then(|v| field(v, "function").or_else(|| field(v, "name"))).is_some_and(|f| text(f, src) == "require")
}
