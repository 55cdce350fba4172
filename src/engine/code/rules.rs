//! Per-language symbol rules: which Tree-sitter node kinds declare something, what kind of
//! symbol that is, and where its name is. The walk in [`super::symbols`] calls [`classify`]
//! only for the node kinds a language lists in [`interesting_kinds`], so everything else costs
//! one table lookup.
//!
//! The rules aim at what a reader would list in an outline: types, functions, methods,
//! module-level constants and variables, fields of types, enum members. Locals (anything bound
//! inside a function body, except nested functions and types) are not symbols.

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
        Lang::Rust => RUST,
        Lang::Python => PYTHON,
        Lang::JavaScript | Lang::TypeScript | Lang::Tsx => ECMA,
        Lang::Go => GO,
        Lang::Java => JAVA,
        Lang::CSharp => CSHARP,
        Lang::C | Lang::Cpp => C_FAMILY,
        Lang::Php => PHP,
        Lang::Kotlin => KOTLIN,
        Lang::Swift => SWIFT,
        Lang::Ruby => RUBY,
        Lang::Lua => LUA,
        Lang::Dart => DART,
    }
}

/// Appends the declarations made at `node` (a kind listed in [`interesting_kinds`]) to `out`.
pub(crate) fn classify<'t>(lang: Lang, node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    match lang {
        Lang::Rust => rust(node, kind, cx, out),
        Lang::Python => python(node, kind, cx, out),
        Lang::JavaScript | Lang::TypeScript | Lang::Tsx => ecma(node, kind, cx, out),
        Lang::Go => go(node, kind, cx, out),
        Lang::Java => java(node, kind, cx, out),
        Lang::CSharp => csharp(node, kind, cx, out),
        Lang::C | Lang::Cpp => c_family(node, kind, cx, out),
        Lang::Php => php(node, kind, cx, out),
        Lang::Kotlin => kotlin(node, kind, cx, out),
        Lang::Swift => swift(node, kind, cx, out),
        Lang::Ruby => ruby(node, kind, cx, out),
        Lang::Lua => lua(node, kind, cx, out),
        Lang::Dart => dart(node, kind, cx, out),
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers

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
            let line_end = src.get(start..).and_then(|s| s.find('\n')).map(|i| start + i).unwrap_or(src.len());
            line_end.min(sig.end_byte())
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

// ---------------------------------------------------------------------------------------------
// Rust

const RUST: &[&str] = &[
    "function_item",
    "function_signature_item",
    "struct_item",
    "union_item",
    "enum_item",
    "enum_variant",
    "trait_item",
    "impl_item",
    "mod_item",
    "const_item",
    "static_item",
    "type_item",
    "associated_type",
    "macro_definition",
    "field_declaration",
];

fn rust<'t>(node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    let src = cx.src;
    let Some(name) = (match kind {
        "impl_item" => field(node, "type").map(|t| bare_type_name(text(t, src))),
        _ => field_text(node, "name", src),
    }) else {
        return;
    };
    let k = match kind {
        "function_item" | "function_signature_item" => cx.callable_kind(),
        "struct_item" | "union_item" => SymbolKind::Struct,
        "enum_item" => SymbolKind::Enum,
        "enum_variant" if cx.scope == Some(SymbolKind::Enum) => SymbolKind::Variant,
        "trait_item" => SymbolKind::Trait,
        "impl_item" => SymbolKind::Impl,
        "mod_item" => SymbolKind::Module,
        "const_item" if !cx.in_function => SymbolKind::Constant,
        "static_item" if !cx.in_function => SymbolKind::Variable,
        "type_item" | "associated_type" => SymbolKind::Type,
        "macro_definition" => SymbolKind::Macro,
        "field_declaration" if cx.scope == Some(SymbolKind::Struct) && !cx.in_function => SymbolKind::Field,
        _ => return,
    };
    out.push(Def::new(name, k, node));
}

// ---------------------------------------------------------------------------------------------
// Python

const PYTHON: &[&str] =
    &["function_definition", "class_definition", "decorated_definition", "assignment", "type_alias_statement"];

fn python<'t>(node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    let src = cx.src;
    match kind {
        "decorated_definition" => {
            let Some(inner) = field(node, "definition") else { return };
            let Some(name) = field_text(inner, "name", src) else { return };
            let k = if inner.kind() == "class_definition" { SymbolKind::Class } else { cx.callable_kind() };
            out.push(Def { sig: inner, body: field(inner, "body"), ..Def::new(name, k, node) });
        }
        "function_definition" | "class_definition" => {
            if cx.parent_kind == "decorated_definition" {
                return; // emitted with its decorators
            }
            let Some(name) = field_text(node, "name", src) else { return };
            let k = if kind == "class_definition" { SymbolKind::Class } else { cx.callable_kind() };
            out.push(Def::new(name, k, node));
        }
        "assignment" => {
            if cx.parent_kind != "expression_statement" || cx.in_function {
                return;
            }
            let Some(left) = field(node, "left").filter(|l| l.kind() == "identifier") else { return };
            let name = text(left, src);
            let k = match cx.scope {
                None | Some(SymbolKind::Module) => const_or_var(name),
                Some(SymbolKind::Class) => SymbolKind::Field,
                _ => return,
            };
            out.push(Def::new(name, k, node));
        }
        "type_alias_statement" if !cx.in_function => {
            let Some(left) = field(node, "left") else { return };
            let name = bare_type_name(text(left, src));
            out.push(Def::new(name, SymbolKind::Type, node));
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// JavaScript, TypeScript, TSX

const ECMA: &[&str] = &[
    "function_declaration",
    "generator_function_declaration",
    "function_signature",
    "class_declaration",
    "abstract_class_declaration",
    "method_definition",
    "method_signature",
    "abstract_method_signature",
    "field_definition",
    "public_field_definition",
    "property_signature",
    "variable_declarator",
    "interface_declaration",
    "type_alias_declaration",
    "enum_declaration",
    "internal_module",
    "module",
    "enum_assignment",
    "property_identifier",
];

fn ecma<'t>(node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    let src = cx.src;
    let name = || field_text(node, "name", src);
    let (k, name) = match kind {
        "function_declaration" | "generator_function_declaration" | "function_signature" => {
            (SymbolKind::Function, name())
        }
        "class_declaration" | "abstract_class_declaration" => (SymbolKind::Class, name()),
        // Members of classes and interfaces; methods of object literals and object types are not symbols.
        "method_definition" | "method_signature" | "abstract_method_signature" if cx.in_type() => {
            (SymbolKind::Method, name())
        }
        "field_definition" if cx.in_type() => (SymbolKind::Field, field_text(node, "property", src)),
        "public_field_definition" | "property_signature" if cx.in_type() => (SymbolKind::Field, name()),
        "interface_declaration" => (SymbolKind::Interface, name()),
        "type_alias_declaration" => (SymbolKind::Type, name()),
        "enum_declaration" => (SymbolKind::Enum, name()),
        "internal_module" | "module" => (SymbolKind::Module, name().map(|n| n.trim_matches(['"', '\'']).to_string())),
        "enum_assignment" if cx.parent_kind == "enum_body" => (SymbolKind::Variant, name()),
        "property_identifier" if cx.parent_kind == "enum_body" => (SymbolKind::Variant, Some(text(node, src).into())),
        "variable_declarator" => {
            if !cx.top_level() {
                return;
            }
            let Some(id) = field(node, "name").filter(|n| n.kind() == "identifier") else { return };
            let name = text(id, src).to_string();
            let value = field(node, "value");
            let k = match value.map(|v| v.kind()) {
                Some("arrow_function" | "function_expression" | "function" | "generator_function") => {
                    let body = value.and_then(|v| field(v, "body"));
                    out.push(Def { body, ..Def::new(name, SymbolKind::Function, node) });
                    return;
                }
                Some("class") => SymbolKind::Class,
                Some("call_expression") if is_require(value, src) => return, // an import, not a definition
                _ => const_or_var(&name),
            };
            (k, Some(name))
        }
        _ => return,
    };
    if let Some(name) = name.filter(|n| !n.is_empty()) {
        out.push(Def::new(name, k, node));
    }
}

/// `require(...)`: a CommonJS or Lua import bound to a name, not a definition.
fn is_require(value: Option<Node>, src: &str) -> bool {
    value.and_then(|v| field(v, "function").or_else(|| field(v, "name"))).is_some_and(|f| text(f, src) == "require")
}

// ---------------------------------------------------------------------------------------------
// Go

const GO: &[&str] = &[
    "function_declaration",
    "method_declaration",
    "type_spec",
    "type_alias",
    "field_declaration",
    "method_elem",
    "method_spec",
    "const_spec",
    "var_spec",
];

fn go<'t>(node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    let src = cx.src;
    match kind {
        "function_declaration" => {
            if let Some(n) = field_text(node, "name", src) {
                out.push(Def::new(n, SymbolKind::Function, node));
            }
        }
        "method_declaration" => {
            let receiver = field(node, "receiver")
                .and_then(|r| first_named_of_kind(r, &["parameter_declaration"]))
                .and_then(|p| field(p, "type"))
                .map(|t| bare_type_name(text(t, src)));
            if let Some(n) = field_text(node, "name", src) {
                out.push(Def::new(n, SymbolKind::Method, node).container(receiver));
            }
        }
        "type_spec" | "type_alias" => {
            let Some(n) = field_text(node, "name", src) else { return };
            let k = match field(node, "type").map(|t| t.kind()) {
                Some("struct_type") if kind == "type_spec" => SymbolKind::Struct,
                Some("interface_type") if kind == "type_spec" => SymbolKind::Interface,
                _ => SymbolKind::Type,
            };
            out.push(Def { sig_prefix: "type ", ..Def::new(n, k, node) });
        }
        "field_declaration" if cx.scope == Some(SymbolKind::Struct) => {
            for n in children_by_field(node, "name") {
                out.push(Def::new(text(n, src), SymbolKind::Field, node));
            }
        }
        "method_elem" | "method_spec" if cx.scope == Some(SymbolKind::Interface) => {
            if let Some(n) = field_text(node, "name", src) {
                out.push(Def::new(n, SymbolKind::Method, node));
            }
        }
        "const_spec" | "var_spec" if !cx.in_function => {
            let k = if kind == "const_spec" { SymbolKind::Constant } else { SymbolKind::Variable };
            for n in children_by_field(node, "name") {
                out.push(Def::new(text(n, src), k, node));
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Java

const JAVA: &[&str] = &[
    "class_declaration",
    "interface_declaration",
    "enum_declaration",
    "record_declaration",
    "annotation_type_declaration",
    "method_declaration",
    "constructor_declaration",
    "compact_constructor_declaration",
    "annotation_type_element_declaration",
    "field_declaration",
    "constant_declaration",
    "enum_constant",
];

fn java<'t>(node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    let src = cx.src;
    let k = match kind {
        "class_declaration" | "record_declaration" => SymbolKind::Class,
        "interface_declaration" | "annotation_type_declaration" => SymbolKind::Interface,
        "enum_declaration" => SymbolKind::Enum,
        "method_declaration"
        | "constructor_declaration"
        | "compact_constructor_declaration"
        | "annotation_type_element_declaration" => SymbolKind::Method,
        "enum_constant" => SymbolKind::Variant,
        "field_declaration" | "constant_declaration" => {
            if cx.in_function {
                return;
            }
            let words = head_words(node, src, &["variable_declarator"]);
            let constant = kind == "constant_declaration" || (words.contains(&"static") && words.contains(&"final"));
            let k = if constant { SymbolKind::Constant } else { SymbolKind::Field };
            for d in children_by_field(node, "declarator") {
                if let Some(n) = field_text(d, "name", src) {
                    out.push(Def::new(n, k, node));
                }
            }
            return;
        }
        _ => return,
    };
    if let Some(n) = field_text(node, "name", src) {
        out.push(Def::new(n, k, node));
    }
}

// ---------------------------------------------------------------------------------------------
// C#

const CSHARP: &[&str] = &[
    "class_declaration",
    "struct_declaration",
    "interface_declaration",
    "enum_declaration",
    "record_declaration",
    "record_struct_declaration",
    "delegate_declaration",
    "method_declaration",
    "constructor_declaration",
    "destructor_declaration",
    "local_function_statement",
    "property_declaration",
    "event_declaration",
    "field_declaration",
    "event_field_declaration",
    "enum_member_declaration",
    "namespace_declaration",
    "file_scoped_namespace_declaration",
];

fn csharp<'t>(node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    let src = cx.src;
    let k = match kind {
        "class_declaration" | "record_declaration" => SymbolKind::Class,
        "struct_declaration" | "record_struct_declaration" => SymbolKind::Struct,
        "interface_declaration" => SymbolKind::Interface,
        "enum_declaration" => SymbolKind::Enum,
        "delegate_declaration" => SymbolKind::Type,
        "method_declaration" | "constructor_declaration" | "destructor_declaration" => SymbolKind::Method,
        "local_function_statement" => SymbolKind::Function,
        "property_declaration" | "event_declaration" => SymbolKind::Field,
        "enum_member_declaration" => SymbolKind::Variant,
        "namespace_declaration" | "file_scoped_namespace_declaration" => SymbolKind::Module,
        "field_declaration" | "event_field_declaration" => {
            if cx.in_function {
                return;
            }
            let constant = head_words(node, src, &["variable_declaration"]).contains(&"const");
            let k = if constant { SymbolKind::Constant } else { SymbolKind::Field };
            let Some(decl) = first_named_of_kind(node, &["variable_declaration"]) else { return };
            for d in named_children(decl).into_iter().filter(|d| d.kind() == "variable_declarator") {
                if let Some(n) = field_text(d, "name", src) {
                    out.push(Def::new(n, k, node));
                }
            }
            return;
        }
        _ => return,
    };
    if let Some(n) = field_text(node, "name", src) {
        out.push(Def::new(n, k, node));
    }
}

// ---------------------------------------------------------------------------------------------
// C and C++

const C_FAMILY: &[&str] = &[
    "function_definition",
    "declaration",
    "field_declaration",
    "struct_specifier",
    "union_specifier",
    "class_specifier",
    "enum_specifier",
    "enumerator",
    "type_definition",
    "alias_declaration",
    "concept_definition",
    "namespace_definition",
    "preproc_def",
    "preproc_function_def",
];

/// Follows a C declarator down to the declared name; says whether a function declarator was on
/// the way (`int (*f(void))(int)` declares the function `f`).
fn c_declarator_name(mut n: Node) -> Option<(Node, bool)> {
    let mut is_function = false;
    for _ in 0..16 {
        match n.kind() {
            "identifier"
            | "field_identifier"
            | "type_identifier"
            | "qualified_identifier"
            | "destructor_name"
            | "operator_name"
            | "template_function"
            | "primitive_type" => return Some((n, is_function)),
            "function_declarator" => {
                is_function = true;
                n = field(n, "declarator")?;
            }
            _ => n = field(n, "declarator").or_else(|| n.named_child(0))?,
        }
    }
    None
}

/// Splits `Store::size` into (`size`, `Store`); template arguments are dropped.
fn c_qualified(name: &str) -> (String, Option<String>) {
    match name.rsplit_once("::") {
        Some((scope, last)) => (last.to_string(), Some(bare_type_name(scope))),
        None => (name.to_string(), None),
    }
}

fn c_family<'t>(node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    let src = cx.src;
    match kind {
        "function_definition" => {
            let Some((name_node, _)) = field(node, "declarator").and_then(c_declarator_name) else { return };
            let (name, qualifier) = c_qualified(text(name_node, src));
            let k = if qualifier.is_some() || cx.in_type() { SymbolKind::Method } else { SymbolKind::Function };
            out.push(Def::new(name, k, node).container(qualifier));
        }
        "declaration" | "field_declaration" => {
            if cx.in_function {
                return;
            }
            let in_type = cx.in_type();
            for d in children_by_field(node, "declarator") {
                let Some((name_node, is_function)) = c_declarator_name(d) else { continue };
                let (name, qualifier) = c_qualified(text(name_node, src));
                let k = match (is_function, in_type) {
                    (true, true) => SymbolKind::Method,
                    (true, false) if cx.header && kind == "declaration" => SymbolKind::Function,
                    (false, true) => SymbolKind::Field,
                    (false, false) if kind == "declaration" && cx.top_level() => SymbolKind::Variable,
                    _ => continue,
                };
                out.push(Def::new(name, k, node).container(qualifier));
            }
        }
        "struct_specifier" | "union_specifier" | "class_specifier" | "enum_specifier" => {
            if field(node, "body").is_none() {
                return; // a reference (`struct store *s`), not a definition
            }
            let Some(name) = field_text(node, "name", src) else { return };
            let k = match kind {
                "class_specifier" => SymbolKind::Class,
                "enum_specifier" => SymbolKind::Enum,
                _ => SymbolKind::Struct,
            };
            let (name, qualifier) = c_qualified(&name);
            out.push(Def::new(name, k, node).container(qualifier));
        }
        "enumerator" if cx.scope == Some(SymbolKind::Enum) => {
            if let Some(n) = field_text(node, "name", src) {
                out.push(Def::new(n, SymbolKind::Variant, node));
            }
        }
        "type_definition" if !cx.in_function => {
            for d in children_by_field(node, "declarator") {
                if let Some((n, _)) = c_declarator_name(d) {
                    out.push(Def::new(text(n, src), SymbolKind::Type, node));
                }
            }
        }
        "alias_declaration" | "concept_definition" if !cx.in_function => {
            if let Some(n) = field_text(node, "name", src) {
                out.push(Def::new(n, SymbolKind::Type, node));
            }
        }
        "namespace_definition" => {
            if let Some(n) = field_text(node, "name", src) {
                out.push(Def::new(n, SymbolKind::Module, node));
            }
        }
        "preproc_def" | "preproc_function_def" if !cx.in_function => {
            if let Some(n) = field_text(node, "name", src) {
                out.push(Def::new(n, SymbolKind::Macro, node));
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// PHP

const PHP: &[&str] = &[
    "function_definition",
    "class_declaration",
    "interface_declaration",
    "trait_declaration",
    "enum_declaration",
    "method_declaration",
    "property_declaration",
    "const_declaration",
    "enum_case",
    "namespace_definition",
];

fn php<'t>(node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    let src = cx.src;
    let k = match kind {
        "function_definition" => SymbolKind::Function,
        "class_declaration" => SymbolKind::Class,
        "interface_declaration" => SymbolKind::Interface,
        "trait_declaration" => SymbolKind::Trait,
        "enum_declaration" => SymbolKind::Enum,
        "method_declaration" => SymbolKind::Method,
        "enum_case" => SymbolKind::Variant,
        "namespace_definition" => SymbolKind::Module,
        "property_declaration" => {
            for el in named_children(node).into_iter().filter(|c| c.kind() == "property_element") {
                if let Some(v) = field(el, "name").or_else(|| first_named_of_kind(el, &["variable_name"])) {
                    out.push(Def::new(text(v, src).trim_start_matches('$'), SymbolKind::Field, node));
                }
            }
            return;
        }
        "const_declaration" if !cx.in_function => {
            for el in named_children(node).into_iter().filter(|c| c.kind() == "const_element") {
                if let Some(n) = first_named_of_kind(el, &["name"]) {
                    out.push(Def::new(text(n, src), SymbolKind::Constant, node));
                }
            }
            return;
        }
        _ => return,
    };
    if let Some(n) = field_text(node, "name", src) {
        out.push(Def::new(n, k, node));
    }
}

// ---------------------------------------------------------------------------------------------
// Ruby

const RUBY: &[&str] = &["method", "singleton_method", "class", "module", "assignment"];

fn ruby<'t>(node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    let src = cx.src;
    let in_namespace = !cx.in_function && matches!(cx.scope, Some(SymbolKind::Class | SymbolKind::Module));
    let (k, name) = match kind {
        "method" => {
            (if in_namespace { SymbolKind::Method } else { SymbolKind::Function }, field_text(node, "name", src))
        }
        "singleton_method" => (SymbolKind::Method, field_text(node, "name", src)),
        "class" => (SymbolKind::Class, field_text(node, "name", src).map(|n| bare_type_name(&n))),
        "module" => (SymbolKind::Module, field_text(node, "name", src).map(|n| bare_type_name(&n))),
        "assignment" if !cx.in_function => {
            let Some(left) = field(node, "left").filter(|l| l.kind() == "constant") else { return };
            (SymbolKind::Constant, Some(text(left, src).to_string()))
        }
        _ => return,
    };
    if let Some(n) = name {
        out.push(Def::new(n, k, node));
    }
}

// ---------------------------------------------------------------------------------------------
// Lua

const LUA: &[&str] = &["function_declaration", "assignment_statement"];

/// A Lua name node: `f`, `M.f` (container `M`) or `M:f` (a method of `M`).
fn lua_name(n: Node, src: &str) -> Option<(String, Option<String>, bool)> {
    match n.kind() {
        "identifier" => Some((text(n, src).to_string(), None, false)),
        "dot_index_expression" => {
            Some((field_text(n, "field", src)?, field_text(n, "table", src).map(|t| bare_type_name(&t)), false))
        }
        "method_index_expression" => {
            Some((field_text(n, "method", src)?, field_text(n, "table", src).map(|t| bare_type_name(&t)), true))
        }
        _ => None,
    }
}

fn lua<'t>(node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    let src = cx.src;
    match kind {
        "function_declaration" => {
            let Some((name, table, method)) = field(node, "name").and_then(|n| lua_name(n, src)) else { return };
            let k = if method { SymbolKind::Method } else { SymbolKind::Function };
            out.push(Def::new(name, k, node).container(table));
        }
        "assignment_statement" if cx.top_level() => {
            let names = first_named_of_kind(node, &["variable_list"]).map(|l| children_by_field(l, "name"));
            let values = first_named_of_kind(node, &["expression_list"]).map(|l| children_by_field(l, "value"));
            let (Some(names), values) = (names, values.unwrap_or_default()) else { return };
            for (i, n) in names.into_iter().enumerate() {
                let Some((name, table, _)) = lua_name(n, src) else { continue };
                let value = values.get(i).copied();
                if value.is_some_and(|v| v.kind() == "function_definition") {
                    let body = value.and_then(|v| field(v, "body"));
                    out.push(Def { body, ..Def::new(name, SymbolKind::Function, node).container(table) });
                } else if table.is_none()
                    && !(value.is_some_and(|v| v.kind() == "function_call") && is_require(value, src))
                {
                    let k = const_or_var(&name);
                    out.push(Def::new(name, k, node));
                }
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Kotlin

const KOTLIN: &[&str] = &[
    "class_declaration",
    "object_declaration",
    "companion_object",
    "function_declaration",
    "secondary_constructor",
    "property_declaration",
    "type_alias",
    "enum_entry",
    "class_parameter",
];

fn kotlin<'t>(node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    let src = cx.src;
    let modifiers = || first_named_of_kind(node, &["modifiers"]).map(|m| text(m, src)).unwrap_or("");
    let first_identifier = || first_named_of_kind(node, &["identifier"]).map(|n| text(n, src).to_string());
    let (k, name) = match kind {
        "class_declaration" => {
            let k = if has_token(node, "interface") {
                SymbolKind::Interface
            } else if modifiers().split_whitespace().any(|w| w == "enum") {
                SymbolKind::Enum
            } else {
                SymbolKind::Class
            };
            (k, field_text(node, "name", src))
        }
        "object_declaration" => (SymbolKind::Class, field_text(node, "name", src)),
        "companion_object" => {
            (SymbolKind::Class, Some(field_text(node, "name", src).unwrap_or_else(|| "Companion".into())))
        }
        "function_declaration" => (cx.callable_kind(), field_text(node, "name", src)),
        "secondary_constructor" => (SymbolKind::Method, Some("constructor".into())),
        "type_alias" => (
            SymbolKind::Type,
            field(node, "type")
                .filter(|t| t.kind() == "identifier")
                .map(|t| text(t, src).into())
                .or_else(first_identifier),
        ),
        "enum_entry" => (SymbolKind::Variant, first_identifier()),
        "class_parameter" => {
            if !(has_token(node, "val") || has_token(node, "var")) || !cx.in_type() {
                return;
            }
            (SymbolKind::Field, first_identifier())
        }
        "property_declaration" => {
            if cx.in_function {
                return;
            }
            let k = if modifiers().split_whitespace().any(|w| w == "const") {
                SymbolKind::Constant
            } else if cx.in_type() {
                SymbolKind::Field
            } else {
                SymbolKind::Variable
            };
            let decls = match first_named_of_kind(node, &["variable_declaration", "multi_variable_declaration"]) {
                Some(d) if d.kind() == "multi_variable_declaration" => named_children(d),
                Some(d) => vec![d],
                None => Vec::new(),
            };
            for d in decls {
                if let Some(id) = first_named_of_kind(d, &["identifier"]) {
                    out.push(Def::new(text(id, src), k, node));
                }
            }
            return;
        }
        _ => return,
    };
    if let Some(n) = name {
        out.push(Def::new(n, k, node));
    }
}

// ---------------------------------------------------------------------------------------------
// Swift

const SWIFT: &[&str] = &[
    "class_declaration",
    "protocol_declaration",
    "function_declaration",
    "protocol_function_declaration",
    "init_declaration",
    "deinit_declaration",
    "subscript_declaration",
    "property_declaration",
    "protocol_property_declaration",
    "typealias_declaration",
    "enum_entry",
];

/// The identifier bound by a Swift pattern (`x`, `var name`).
fn swift_bound(p: Node, src: &str) -> String {
    field(p, "bound_identifier")
        .map(|b| text(b, src).to_string())
        .unwrap_or_else(|| text(p, src).split_whitespace().last().unwrap_or("").to_string())
}

fn swift<'t>(node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    let src = cx.src;
    let (k, name) = match kind {
        "class_declaration" => {
            let k = match field(node, "declaration_kind").map(|d| text(d, src)) {
                Some("struct") => SymbolKind::Struct,
                Some("enum") => SymbolKind::Enum,
                Some("extension") => SymbolKind::Impl,
                _ => SymbolKind::Class,
            };
            (k, field_text(node, "name", src).map(|n| bare_type_name(&n)))
        }
        "protocol_declaration" => (SymbolKind::Interface, field_text(node, "name", src)),
        "function_declaration" => (cx.callable_kind(), field_text(node, "name", src)),
        "protocol_function_declaration" => (SymbolKind::Method, field_text(node, "name", src)),
        "init_declaration" => (SymbolKind::Method, Some("init".into())),
        "deinit_declaration" => (SymbolKind::Method, Some("deinit".into())),
        "subscript_declaration" => (SymbolKind::Method, Some("subscript".into())),
        "typealias_declaration" => (SymbolKind::Type, field_text(node, "name", src)),
        "enum_entry" => {
            for n in children_by_field(node, "name") {
                out.push(Def::new(text(n, src), SymbolKind::Variant, node));
            }
            return;
        }
        "property_declaration" | "protocol_property_declaration" => {
            if cx.in_function {
                return;
            }
            let k = if cx.in_type() { SymbolKind::Field } else { SymbolKind::Variable };
            for p in children_by_field(node, "name") {
                let name = swift_bound(p, src);
                let k = if k == SymbolKind::Variable { const_or_var(&name) } else { k };
                out.push(Def::new(name, k, node));
            }
            return;
        }
        _ => return,
    };
    if let Some(n) = name.filter(|n| !n.is_empty()) {
        out.push(Def::new(n, k, node));
    }
}

// ---------------------------------------------------------------------------------------------
// Dart

const DART: &[&str] = &[
    "class_declaration",
    "class_definition",
    "mixin_declaration",
    "enum_declaration",
    "extension_declaration",
    "type_alias",
    "function_declaration",
    "method_declaration",
    "declaration",
    "top_level_variable_declaration",
    "enum_entry",
];

const DART_SIGNATURES: &[&str] = &[
    "function_signature",
    "getter_signature",
    "setter_signature",
    "constructor_signature",
    "factory_constructor_signature",
    "redirecting_factory_constructor_signature",
    "constant_constructor_signature",
    "operator_signature",
];

/// The name of a Dart signature node: `greet`, `Store.named`.
fn dart_signature_name(sig: Node, src: &str) -> Option<String> {
    let sig = if DART_SIGNATURES.contains(&sig.kind()) {
        sig
    } else {
        first_named_of_kind(sig, DART_SIGNATURES).unwrap_or(sig)
    };
    let names: Vec<&str> =
        children_by_field(sig, "name").into_iter().filter(|n| n.is_named()).map(|n| text(n, src)).collect();
    if names.is_empty() {
        return (sig.kind() == "operator_signature").then(|| "operator".to_string());
    }
    Some(names.join("."))
}

/// Variables declared by a Dart declaration list (`a = 1, b`).
fn dart_variables<'t>(list: Node<'t>, src: &str) -> Vec<(Node<'t>, String)> {
    named_children(list)
        .into_iter()
        .filter(|c| matches!(c.kind(), "initialized_identifier" | "static_final_declaration"))
        .filter_map(|c| field_text(c, "name", src).map(|n| (c, n)))
        .collect()
}

fn dart<'t>(node: Node<'t>, kind: &str, cx: &Ctx, out: &mut Vec<Def<'t>>) {
    let src = cx.src;
    let (k, name) = match kind {
        "class_declaration" | "class_definition" | "mixin_declaration" => {
            (SymbolKind::Class, field_text(node, "name", src))
        }
        "enum_declaration" => (SymbolKind::Enum, field_text(node, "name", src)),
        "extension_declaration" => (
            SymbolKind::Impl,
            field_text(node, "name", src).or_else(|| field_text(node, "class", src).map(|c| bare_type_name(&c))),
        ),
        "type_alias" => (
            SymbolKind::Type,
            first_named_of_kind(node, &["type_identifier", "identifier"]).map(|n| text(n, src).to_string()),
        ),
        "enum_entry" => (SymbolKind::Variant, field_text(node, "name", src)),
        "function_declaration" => {
            let sig = field(node, "signature").or_else(|| first_named_of_kind(node, DART_SIGNATURES));
            (cx.callable_kind(), sig.and_then(|s| dart_signature_name(s, src)))
        }
        "method_declaration" => {
            let sig = field(node, "signature").or_else(|| first_named_of_kind(node, &["method_signature"]));
            (SymbolKind::Method, sig.and_then(|s| dart_signature_name(s, src)))
        }
        "declaration" if cx.in_type() => {
            if let Some(sig) = first_named_of_kind(node, DART_SIGNATURES) {
                (SymbolKind::Method, dart_signature_name(sig, src))
            } else {
                let constant = head_words(node, src, &["static_final_declaration_list"]).contains(&"const");
                let k = if constant { SymbolKind::Constant } else { SymbolKind::Field };
                for list in named_children(node) {
                    for (_, name) in dart_variables(list, src) {
                        out.push(Def::new(name, k, node));
                    }
                }
                return;
            }
        }
        "top_level_variable_declaration" => {
            let constant = text(node, src).trim_start().starts_with("const");
            for list in named_children(node) {
                for (_, name) in dart_variables(list, src) {
                    let k = if constant { SymbolKind::Constant } else { const_or_var(&name) };
                    out.push(Def::new(name, k, node));
                }
            }
            return;
        }
        _ => return,
    };
    if let Some(n) = name.filter(|n| !n.is_empty()) {
        out.push(Def::new(n, k, node));
    }
}
