//! One pass over a parsed file: symbols (with their containers and signatures), the counts of
//! every named node kind with a few sample nodes (for AST search), and where each symbol's
//! leading comments start (so chunks keep a doc comment with its item).
//!
//! The per-language knowledge (which node is a function, where its name is) lives in
//! [`super::rules`]; this module is the language-independent walk. The walk visits every node
//! once with a `TreeCursor` and looks up node kinds by numeric id in tables built once per
//! language, so it never touches a kind's name string on the hot path.

use super::rules::{self, Ctx, Def};
use super::Lang;
use std::sync::OnceLock;

pub use super::types::SymbolKind;

/// A symbol name folded for matching: lowercase letters and digits only (so `get_user`,
/// `getUser`, `GetUser` and the query `get user` meet, as they do in search).
pub fn norm(name: &str) -> String {
    name.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
}

/// One symbol as extracted from a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Symbol {
    /// The declared name as written (`parse_config`, `SessionStore`, `M.create` becomes `create`).
    pub name: String,
    /// What it is.
    pub kind: SymbolKind,
    /// The Tree-sitter node kind it came from (`function_definition`, `struct_item`, ...).
    pub node_kind: &'static str,
    /// First line of the declaration (1-based; decorators and annotations that are part of the
    /// node included).
    pub line_start: u32,
    /// Last line (1-based, inclusive).
    pub line_end: u32,
    /// First line of the comments and attributes directly above it (no blank line between);
    /// equals `line_start` when there are none. Chunking keeps them with the symbol.
    pub lead_start: u32,
    /// The declaration's head: everything before its body, whitespace collapsed (`def f(x) -> int`).
    pub signature: String,
    /// Index (in the file's symbol list) of the symbol it is nested in syntactically.
    pub parent: Option<u32>,
    /// Name of the enclosing symbol as a reader would say it: the parent's name, or the type a
    /// method is attached to when that is written outside it (`impl Foo`, `func (s *Store)`,
    /// `Store::size`, `function M.create`).
    pub container: Option<String>,
    /// Nesting depth (0 at top level).
    pub depth: u32,
}

/// Named node kinds of one file with their counts, plus the first few nodes of each kind.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AstSummary {
    /// `(kind, count)` sorted by kind.
    pub counts: Vec<(&'static str, u32)>,
    /// At most [`SAMPLES_PER_KIND`] per kind, in source order.
    pub samples: Vec<AstSample>,
}

/// Where one sample node of an [`AstSummary`] starts and ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AstSample {
    /// Node kind name (`ERROR` for syntax errors).
    pub kind: &'static str,
    /// 1-based first line.
    pub line_start: u32,
    /// 1-based last line.
    pub line_end: u32,
    /// 0-based byte column of the node's start in its first line: on a minified file every
    /// sample is on line 1, and only the column tells them apart.
    pub column: u32,
}

impl AstSample {
    /// The sample for `node`, named `kind`.
    fn of(kind: &'static str, node: tree_sitter::Node) -> AstSample {
        let (line_start, line_end) = lines_of(node);
        let column = u32::try_from(node.start_position().column).unwrap_or(u32::MAX);
        AstSample { kind, line_start, line_end, column }
    }
}

/// Tree-sitter's id for `ERROR` nodes (`ts_builtin_sym_error`).
const ERROR_KIND_ID: usize = u16::MAX as usize;

/// Sample nodes kept per kind and file.
pub const SAMPLES_PER_KIND: usize = 3;

/// Everything the per-file pass learns from one parse.
#[derive(Debug, Clone)]
pub struct FileAnalysis {
    /// The grammar used.
    pub lang: Lang,
    /// Symbols in source order (a container before what it contains).
    pub symbols: Vec<Symbol>,
    /// Node-kind counts and samples.
    pub ast: AstSummary,
    /// True when the tree has syntax errors (symbols are still extracted from the rest).
    pub has_errors: bool,
}

/// Per-language tables indexed by node kind id, built once.
pub(crate) struct KindTable {
    /// Node kind name by id (`""` for ids without a name).
    pub names: Vec<&'static str>,
    /// Named (not anonymous punctuation or keywords).
    pub named: Vec<bool>,
    /// Handled by [`rules::classify`].
    pub interesting: Vec<bool>,
    /// Comments, attributes and annotations that belong to the item below them.
    pub leading: Vec<bool>,
    /// Functions with no name ([`rules::anonymous_function_kinds`]): their bodies are local.
    pub anonymous_fn: Vec<bool>,
}

impl KindTable {
    fn build(lang: Lang) -> KindTable {
        let language = lang.grammar();
        let n = language.node_kind_count();
        let interesting_names = rules::interesting_kinds(lang);
        let anonymous_names = rules::anonymous_function_kinds(lang);
        let mut t = KindTable {
            names: Vec::with_capacity(n),
            named: Vec::with_capacity(n),
            interesting: Vec::with_capacity(n),
            leading: Vec::with_capacity(n),
            anonymous_fn: Vec::with_capacity(n),
        };
        for id in 0..n {
            let id = id as u16;
            let name: &'static str = match language.node_kind_for_id(id) {
                Some(s) => Box::leak(s.to_string().into_boxed_str()),
                None => "",
            };
            let named = language.node_kind_is_named(id) && !name.is_empty();
            t.names.push(name);
            t.named.push(named);
            t.interesting.push(named && interesting_names.contains(&name));
            t.leading.push(named && is_leading_kind(name));
            t.anonymous_fn.push(named && anonymous_names.contains(&name));
        }
        t
    }

    /// The table for a language (built on first use, then shared by every thread).
    pub fn get(lang: Lang) -> &'static KindTable {
        static TABLES: [OnceLock<KindTable>; 16] = [const { OnceLock::new() }; 16];
        let slot = Lang::ALL.iter().position(|l| *l == lang).unwrap_or(0);
        TABLES[slot].get_or_init(|| KindTable::build(lang))
    }

    /// Whether `kind` is a named node kind of this grammar.
    pub fn has_kind(&self, kind: &str) -> bool {
        kind == "ERROR" || self.names.iter().zip(&self.named).any(|(n, named)| *named && *n == kind)
    }
}

fn is_leading_kind(name: &str) -> bool {
    name.contains("comment")
        || matches!(name, "attribute_item" | "attribute_list" | "decorator" | "annotation" | "marker_annotation")
}

/// 1-based first and last line of a node. A node that ends at column 0 of a later row (a line
/// comment with its newline) ends on the row before.
pub(crate) fn lines_of(node: tree_sitter::Node) -> (u32, u32) {
    let s = node.start_position();
    let e = node.end_position();
    let end_row = if e.column == 0 && e.row > s.row { e.row - 1 } else { e.row };
    (s.row as u32 + 1, end_row as u32 + 1)
}

/// An open scope while walking: the symbol and the cursor depth of its node.
struct Scope {
    depth: usize,
    symbol: u32,
    kind: SymbolKind,
    in_function: bool,
}

/// Walks a parsed file once and extracts symbols and the AST summary.
pub fn analyze_tree(lang: Lang, tree: &tree_sitter::Tree, src: &str, path: &str) -> FileAnalysis {
    let mut walk = Walk::new(lang, src, is_header(path));
    let mut cursor = tree.walk();
    let mut depth = 0usize;
    loop {
        let node = cursor.node();
        walk.visit(node, depth);
        if cursor.goto_first_child() {
            walk.descend(node.kind_id() as usize, depth);
            depth += 1;
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return walk.finish(tree);
            }
            depth -= 1;
            walk.path_kinds.pop();
        }
    }
}

/// What [`analyze_tree`] gathers node by node in its one pass over a file.
struct Walk<'s, 't> {
    lang: Lang,
    table: &'static KindTable,
    src: &'s str,
    header: bool,
    counts: Vec<u32>,
    error_count: u32,
    error_samples: Vec<AstSample>,
    samples: Vec<AstSample>,
    symbols: Vec<Symbol>,
    scopes: Vec<Scope>,
    /// Depths of the functions with no name the current node is inside: no symbol opens a
    /// scope for them, yet what is bound in them is local (`create(context) { const x }` in an
    /// object literal, a test's `describe(() => ...)`, a Go `func` literal).
    anonymous: Vec<usize>,
    /// Node kinds of the ancestors of the current node.
    path_kinds: Vec<&'static str>,
    /// The run of leading comments seen at each depth among the current node's earlier siblings.
    lead: Vec<Option<(u32, u32)>>,
    /// The rules' output for the current node (kept to reuse its allocation).
    defs: Vec<Def<'t>>,
}

impl<'s, 't> Walk<'s, 't> {
    fn new(lang: Lang, src: &'s str, header: bool) -> Walk<'s, 't> {
        let table = KindTable::get(lang);
        Walk {
            lang,
            table,
            src,
            header,
            counts: vec![0u32; table.names.len()],
            error_count: 0,
            error_samples: Vec::new(),
            samples: Vec::new(),
            symbols: Vec::new(),
            scopes: Vec::new(),
            anonymous: Vec::new(),
            path_kinds: Vec::with_capacity(64),
            lead: vec![None; 64],
            defs: Vec::new(),
        }
    }

    /// One node at `depth`: closes the scopes it is not inside, counts and samples it, and
    /// extends the run of leading comments, extracts its symbols or notes a syntax error.
    fn visit(&mut self, node: tree_sitter::Node<'t>, depth: usize) {
        let id = node.kind_id() as usize;
        while self.scopes.last().is_some_and(|s| s.depth >= depth) {
            self.scopes.pop();
        }
        while self.anonymous.last().is_some_and(|&d| d >= depth) {
            self.anonymous.pop();
        }
        if self.lead.len() <= depth + 1 {
            self.lead.resize(depth + 2, None);
        }
        if id < self.counts.len() && self.table.named[id] {
            self.count(node, id);
            if self.table.leading[id] {
                let (a, b) = lines_of(node);
                self.lead[depth] = Some(match self.lead[depth] {
                    Some((s, e)) if e + 1 >= a => (s, b),
                    _ => (a, b),
                });
            } else {
                if self.table.interesting[id] {
                    self.extract_symbols(node, id, depth);
                }
                if self.table.anonymous_fn[id] {
                    self.anonymous.push(depth);
                }
                self.lead[depth] = None;
            }
        } else if id == ERROR_KIND_ID {
            self.error_count += 1;
            if self.error_samples.len() < SAMPLES_PER_KIND {
                self.error_samples.push(AstSample::of("ERROR", node));
            }
            self.lead[depth] = None;
        }
    }

    /// Counts a named node and keeps the first [`SAMPLES_PER_KIND`] of its kind as samples.
    fn count(&mut self, node: tree_sitter::Node<'_>, id: usize) {
        self.counts[id] += 1;
        if self.counts[id] as usize <= SAMPLES_PER_KIND {
            self.samples.push(AstSample::of(self.table.names[id], node));
        }
    }

    /// The symbols the language's rules find at a node, with the leading comments before it;
    /// the first one that is a scope (a class, a function) encloses the node's descendants.
    fn extract_symbols(&mut self, node: tree_sitter::Node<'t>, id: usize, depth: usize) {
        let scope = self.scopes.last();
        let cx = Ctx {
            src: self.src,
            parent_kind: self.path_kinds.last().copied().unwrap_or(""),
            scope: scope.map(|s| s.kind),
            in_function: scope.is_some_and(|s| s.in_function) || !self.anonymous.is_empty(),
            header: self.header,
        };
        self.defs.clear();
        rules::classify(self.lang, node, self.table.names[id], &cx, &mut self.defs);
        let lead_here = self.lead[depth];
        for (i, def) in self.defs.drain(..).enumerate() {
            let index = self.symbols.len() as u32;
            let kind = def.kind;
            let symbol = make_symbol(def, self.table.names[id], self.scopes.last(), &self.symbols, lead_here, self.src);
            self.symbols.push(symbol);
            if i == 0 && kind.is_scope() {
                let in_function = kind.is_callable() || cx.in_function;
                self.scopes.push(Scope { depth, symbol: index, kind, in_function });
            }
        }
    }

    /// Steps into the children of the node of kind `id` at `depth`.
    fn descend(&mut self, id: usize, depth: usize) {
        self.path_kinds.push(self.table.names.get(id).copied().unwrap_or(""));
        if self.lead.len() <= depth + 1 {
            self.lead.resize(depth + 2, None);
        }
        self.lead[depth + 1] = None;
    }

    /// The file's analysis: its symbols, node counts by kind name and samples.
    fn finish(self, tree: &tree_sitter::Tree) -> FileAnalysis {
        let table = self.table;
        // Aliased node kinds share a name across several ids: merge them by name.
        let mut by_name: std::collections::BTreeMap<&'static str, u32> = std::collections::BTreeMap::new();
        for (id, c) in self.counts.iter().enumerate() {
            if *c > 0 {
                *by_name.entry(table.names[id]).or_default() += c;
            }
        }
        if self.error_count > 0 {
            by_name.insert("ERROR", self.error_count);
        }
        let mut per_kind: std::collections::HashMap<&'static str, usize> = std::collections::HashMap::new();
        let mut kept = Vec::with_capacity(self.samples.len() + self.error_samples.len());
        // Aliased ids share a name: keep the first few per name.
        for sample in self.samples {
            let n = per_kind.entry(sample.kind).or_default();
            if *n < SAMPLES_PER_KIND {
                *n += 1;
                kept.push(sample);
            }
        }
        kept.extend(self.error_samples);
        FileAnalysis {
            lang: self.lang,
            symbols: self.symbols,
            ast: AstSummary { counts: by_name.into_iter().collect(), samples: kept },
            has_errors: tree.root_node().has_error(),
        }
    }
}

fn make_symbol(
    def: Def,
    node_kind: &'static str,
    scope: Option<&Scope>,
    symbols: &[Symbol],
    lead: Option<(u32, u32)>,
    src: &str,
) -> Symbol {
    let (line_start, line_end) = lines_of(def.node);
    let lead_start = match lead {
        Some((s, e)) if e + 1 >= line_start && s <= line_start => s,
        _ => line_start,
    };
    let parent = scope.map(|s| s.symbol);
    let container = def.container.or_else(|| parent.and_then(|p| symbols.get(p as usize)).map(|p| p.name.clone()));
    let depth = parent.and_then(|p| symbols.get(p as usize)).map(|p| p.depth + 1).unwrap_or(0);
    Symbol {
        name: def.name,
        kind: def.kind,
        node_kind,
        line_start,
        line_end,
        lead_start,
        signature: format!("{}{}", def.sig_prefix, rules::signature(def.sig, def.body, src)),
        parent,
        container,
        depth,
    }
}

/// C and C++ headers: function prototypes there are the API, so they count as symbols.
fn is_header(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    [".h", ".hh", ".hpp", ".hxx", ".h++", ".inl", ".ipp"].iter().any(|e| lower.ends_with(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::code::{analyze, CodeOutcome};

    fn parsed(lang: Lang, src: &str) -> FileAnalysis {
        match analyze(lang, src, "x") {
            CodeOutcome::Parsed(p) => p.analysis,
            CodeOutcome::NotParsed(r) => panic!("{r}"),
        }
    }

    #[test]
    fn doc_comments_and_attributes_lead_the_symbol_unless_a_blank_line_separates_them() {
        let a = parsed(Lang::Rust, "/// Doc.\n#[derive(Debug)]\nstruct S;\n\n// loose\n\nfn f() {}\n");
        let s = &a.symbols[0];
        assert_eq!((s.name.as_str(), s.lead_start, s.line_start), ("S", 1, 3));
        let f = &a.symbols[1];
        assert_eq!((f.name.as_str(), f.lead_start, f.line_start), ("f", 7, 7));
    }

    #[test]
    fn syntax_errors_keep_the_rest_of_the_file() {
        let a = parsed(Lang::Python, "def broken(:\n    pass\n\ndef fine(x):\n    return x\n");
        assert!(a.has_errors);
        assert!(a.symbols.iter().any(|s| s.name == "fine" && s.line_start == 4), "{:?}", a.symbols);
        let e = parsed(Lang::Python, "x = = 1\n");
        assert!(e.ast.counts.iter().any(|(k, n)| *k == "ERROR" && *n >= 1), "{:?}", e.ast.counts);
        assert!(e.ast.samples.iter().any(|s| s.kind == "ERROR" && s.line_start == 1));
    }

    #[test]
    fn ast_summary_counts_named_kinds_and_keeps_a_few_samples() {
        let src: String = (0..5).map(|i| format!("def f{i}():\n    pass\n")).collect();
        let a = parsed(Lang::Python, &src);
        let count = a.ast.counts.iter().find(|(k, _)| *k == "function_definition").map(|(_, n)| *n);
        assert_eq!(count, Some(5));
        let samples: Vec<(u32, u32)> = a
            .ast
            .samples
            .iter()
            .filter(|s| s.kind == "function_definition")
            .map(|s| (s.line_start, s.line_end))
            .collect();
        assert_eq!(samples, [(1, 2), (3, 4), (5, 6)]);
        assert!(a.ast.counts.iter().all(|(k, _)| !k.is_empty() && *k != "("), "anonymous tokens are not counted");
    }

    /// What is bound in a function with no name is local, as in a named one (a tour found 217
    /// `variable sourceCode` in eslint, one per rule's `create(context)` method of an object
    /// literal); functions and types declared there stay symbols.
    #[test]
    fn bindings_inside_functions_without_a_name_are_not_symbols() {
        let names = |lang: Lang, src: &str| -> Vec<String> {
            parsed(lang, src).symbols.iter().map(|s| format!("{} {}", s.kind.name(), s.name)).collect()
        };
        let js = "module.exports = { create(context) { const sourceCode = context.sourceCode; return {}; } };
                  (function(){ var hidden = 1; function helper() {} })();
                  describe(\"s\", () => { const fixture = {a:1}; it(\"w\", function(){ let result = fixture.a; }); });
                  export default function(){ const insideDefault = 2; }
                  const real = 3;
const f = () => { const inner = 1; };
class K { m() { const local = 1; } }
";
        assert_eq!(
            names(Lang::JavaScript, js),
            ["function helper", "variable real", "function f", "class K", "method m"]
        );
        assert_eq!(
            names(Lang::TypeScript, "const top = 1;\nitems.forEach((x) => { const each = x; });\n"),
            ["variable top"]
        );
        let go = "package p\nvar handler = func() { var hiddenGo = 1; _ = hiddenGo }\nvar Top = 2\n";
        assert_eq!(names(Lang::Go, go), ["variable handler", "variable Top"]);
        assert_eq!(names(Lang::Lua, "describe('x', function() local helper = 1 end)\ntop = 2\n"), ["variable top"]);
        assert_eq!(names(Lang::Kotlin, "val top = run { val hiddenLocal = 1; hiddenLocal }\n"), ["variable top"]);
    }

    /// C# operators are methods named as C++ names its own (`operator+`); Java record
    /// components are the record's fields, while parameters stay out (a code-intelligence tour).
    #[test]
    fn csharp_operators_and_java_record_components_are_symbols() {
        let names = |lang: Lang, src: &str| -> Vec<String> {
            parsed(lang, src).symbols.iter().map(|s| format!("{} {}", s.kind.name(), s.name)).collect()
        };
        let cs = "struct Money {\n  public static Money operator +(Money a, Money b) => a;\n  public static implicit operator decimal(Money m) => 0;\n}\n";
        assert_eq!(names(Lang::CSharp, cs), ["struct Money", "method operator+", "method operator decimal"]);
        let java = "record Point(int x, int y) {\n  int sum(int z) { Runnable r = () -> {}; return x + y + z; }\n}\n";
        assert_eq!(names(Lang::Java, java), ["class Point", "field x", "field y", "method sum"]);
    }

    #[test]
    fn kind_names_and_aliases_parse() {
        for k in SymbolKind::ALL {
            assert_eq!(SymbolKind::parse(k.name()), Some(k));
        }
        assert_eq!(SymbolKind::parse("fn"), Some(SymbolKind::Function));
        assert_eq!(SymbolKind::parse("Protocol"), Some(SymbolKind::Interface));
        assert_eq!(SymbolKind::parse("gizmo"), None);
    }
}
