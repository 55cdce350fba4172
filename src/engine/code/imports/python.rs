//! Python: `import a.b`, `from .x import y`, and the dynamic loaders the spec lists:
//! `importlib.import_module`, `__import__`, `importlib.util.spec_from_file_location`,
//! `importlib.machinery.SourceFileLoader`, `runpy.run_module` / `run_path`. Arguments fold
//! through module constants, `+`, f-strings, `os.path.join` / `dirname` / `abspath` and
//! `pathlib.Path(__file__).parent / "x"`.

use super::fold::{dirname, Env, Folded, THIS_FILE};
use super::syntax::{self, line, named_children, Src, MAX_FOLD_DEPTH};
use super::{kind, RawImport};
use tree_sitter::Node;

/// Names whose presence means a file may load modules dynamically.
const LOADERS: &[&str] =
    &["import_module", "__import__", "spec_from_file_location", "FileLoader", "run_path", "run_module"];

/// Nodes that can hold statements; import statements are found by walking only these.
const STATEMENT_CONTAINERS: &[&str] = &[
    "module",
    "block",
    "if_statement",
    "elif_clause",
    "else_clause",
    "for_statement",
    "while_statement",
    "try_statement",
    "except_clause",
    "except_group_clause",
    "finally_clause",
    "with_statement",
    "function_definition",
    "class_definition",
    "decorated_definition",
    "match_statement",
    "case_clause",
    // Python 2 files and syntax errors leave statements inside error nodes.
    "ERROR",
];

pub fn extract(root: Node, src: &Src) -> Vec<RawImport> {
    let mut out = Vec::new();
    syntax::walk(root, |n| match n.kind() {
        "import_statement" => {
            let type_only = under_type_checking(n, src);
            for name in n.children_by_field_name("name", &mut n.walk()) {
                let mut imp = RawImport::new(kind::IMPORT, dotted(name, src), line(n));
                imp.type_only = type_only;
                out.push(imp);
            }
            false
        }
        "import_from_statement" => {
            let module = n.child_by_field_name("module_name").map(|m| module_text(m, src)).unwrap_or_default();
            let mut imp = RawImport::new(kind::FROM, module, line(n));
            imp.names = n.children_by_field_name("name", &mut n.walk()).map(|c| dotted(c, src)).collect();
            imp.type_only = under_type_checking(n, src);
            out.push(imp);
            false
        }
        k => STATEMENT_CONTAINERS.contains(&k),
    });
    // Loader calls can sit in any expression; walk everything only when the file names one.
    if src.mentions(LOADERS) {
        let env = bindings(root, src);
        syntax::walk(root, |n| {
            if n.kind() == "call" {
                if let Some((k, arg)) = loader_call(n, src) {
                    let literal = arg.kind() == "string" && !is_fstring(arg, src);
                    let folded = fold(arg, src, &env, 0);
                    out.push(folded.into_import(k, line(n), src.text(arg), !literal));
                }
            }
            true
        });
        out.sort_by_key(|i| i.line);
    }
    out
}

/// The module name of an import clause (`a.b`, or the name of `a.b as c`).
/// Whether a statement sits in the body of `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`),
/// which only a type checker runs; its `else` runs and is not such a body.
fn under_type_checking(statement: Node, src: &Src) -> bool {
    let mut node = statement;
    while let Some(parent) = node.parent() {
        if parent.kind() == "if_statement"
            && parent.child_by_field_name("consequence").is_some_and(|b| b.id() == node.id())
            && parent.child_by_field_name("condition").is_some_and(|c| {
                let text = src.text(c).trim();
                text == "TYPE_CHECKING" || text.ends_with(".TYPE_CHECKING")
            })
        {
            return true;
        }
        node = parent;
    }
    false
}

fn dotted(node: Node, src: &Src) -> String {
    let target = if node.kind() == "aliased_import" { node.child_by_field_name("name").unwrap_or(node) } else { node };
    src.text(target).chars().filter(|c| !c.is_whitespace()).collect()
}

/// `..m.n` for a relative import, `a.b` for an absolute one.
fn module_text(node: Node, src: &Src) -> String {
    src.text(node).chars().filter(|c| !c.is_whitespace()).collect()
}

/// A call that loads a module, with the argument naming it.
fn loader_call<'t>(call: Node<'t>, src: &Src) -> Option<(&'static str, Node<'t>)> {
    let f = src.text(call.child_by_field_name("function")?);
    let last = f.rsplit('.').next().unwrap_or(f);
    let (k, index) = match last {
        "import_module" | "__import__" | "run_module" => (kind::IMPORT_MODULE, 0),
        "spec_from_file_location" | "SourceFileLoader" | "SourcelessFileLoader" => (kind::LOAD_PATH, 1),
        "run_path" if f.contains("runpy") || f == "run_path" => (kind::LOAD_PATH, 0),
        _ => return None,
    };
    let args = call.child_by_field_name("arguments")?;
    let positional: Vec<Node> =
        named_children(args).into_iter().filter(|a| a.kind() != "keyword_argument" && a.kind() != "comment").collect();
    let arg = match positional.get(index) {
        Some(a) => *a,
        None if k == kind::LOAD_PATH => keyword(args, "location", src)?,
        None => keyword(args, "name", src)?,
    };
    Some((k, arg))
}

fn keyword<'t>(args: Node<'t>, name: &str, src: &Src) -> Option<Node<'t>> {
    named_children(args).into_iter().find_map(|a| {
        if a.kind() == "keyword_argument" && a.child_by_field_name("name").map(|n| src.text(n)) == Some(name) {
            a.child_by_field_name("value")
        } else {
            None
        }
    })
}

fn is_fstring(node: Node, src: &Src) -> bool {
    named_children(node).iter().any(|c| c.kind() == "interpolation")
        || src.text(node).trim_start().to_ascii_lowercase().starts_with(['f', 'r']) && src.text(node).contains('{')
}

/// Assignments `NAME = <foldable>` anywhere in the file, in source order.
fn bindings(root: Node, src: &Src) -> Env {
    let mut env = Env::default();
    syntax::walk(root, |n| {
        if n.kind() == "assignment" {
            if let (Some(left), Some(right)) = (n.child_by_field_name("left"), n.child_by_field_name("right")) {
                if left.kind() == "identifier" {
                    let v = fold(right, src, &env, 0);
                    if v.exact {
                        env.bind(src.text(left), v);
                    }
                }
            }
        }
        true
    });
    env
}

/// Evaluates a string (or path) expression.
fn fold(node: Node, src: &Src, env: &Env, depth: u32) -> Folded {
    if depth > MAX_FOLD_DEPTH {
        return Folded::unknown();
    }
    match node.kind() {
        "string" => {
            let mut parts = Vec::new();
            for c in named_children(node) {
                match c.kind() {
                    "string_content" => parts.push(Folded::lit(syntax::unescape(src.text(c)))),
                    "escape_sequence" => parts.push(Folded::lit(syntax::unescape(src.text(c)))),
                    "interpolation" => match c.child_by_field_name("expression") {
                        Some(e) => parts.push(fold(e, src, env, depth + 1)),
                        None => parts.push(Folded::unknown()),
                    },
                    _ => {}
                }
            }
            Folded::concat_all(&parts)
        }
        "concatenated_string" => {
            let parts: Vec<Folded> = named_children(node).into_iter().map(|c| fold(c, src, env, depth + 1)).collect();
            Folded::concat_all(&parts)
        }
        "binary_operator" => {
            let op = node.child_by_field_name("operator").map(|o| src.text(o)).unwrap_or("");
            let (Some(l), Some(r)) = (node.child_by_field_name("left"), node.child_by_field_name("right")) else {
                return Folded::unknown();
            };
            let (l, r) = (fold(l, src, env, depth + 1), fold(r, src, env, depth + 1));
            match op {
                "+" => l.concat(&r),
                "/" => Folded::join_path(&[l, r]),
                _ => Folded::unknown(),
            }
        }
        "parenthesized_expression" => match named_children(node).into_iter().next() {
            Some(e) => fold(e, src, env, depth + 1),
            None => Folded::unknown(),
        },
        "conditional_expression" => {
            let kids = named_children(node);
            match (kids.first(), kids.get(2)) {
                (Some(a), Some(b)) => fold(*a, src, env, depth + 1).union(&fold(*b, src, env, depth + 1)),
                _ => Folded::unknown(),
            }
        }
        "identifier" => match src.text(node) {
            "__file__" => Folded::lit(THIS_FILE),
            name => env.get(name).cloned().unwrap_or_else(Folded::unknown),
        },
        "attribute" => {
            // `Path(__file__).parent`
            let attr = node.child_by_field_name("attribute").map(|a| src.text(a)).unwrap_or("");
            match (attr, node.child_by_field_name("object")) {
                ("parent", Some(obj)) => fold(obj, src, env, depth + 1).map(dirname),
                _ => Folded::unknown(),
            }
        }
        "call" => fold_call(node, src, env, depth),
        _ => Folded::unknown(),
    }
}

fn fold_call(node: Node, src: &Src, env: &Env, depth: u32) -> Folded {
    let f = node.child_by_field_name("function").map(|f| src.text(f)).unwrap_or("");
    let args: Vec<Node> = node
        .child_by_field_name("arguments")
        .map(named_children)
        .unwrap_or_default()
        .into_iter()
        .filter(|a| a.kind() != "keyword_argument" && a.kind() != "comment")
        .collect();
    let arg = |i: usize| args.get(i).map(|a| fold(*a, src, env, depth + 1)).unwrap_or_else(Folded::unknown);
    let last = f.rsplit('.').next().unwrap_or(f);
    match last {
        "join" if f.contains("path") || f == "join" => {
            let parts: Vec<Folded> = (0..args.len()).map(arg).collect();
            if parts.is_empty() {
                Folded::unknown()
            } else {
                Folded::join_path(&parts)
            }
        }
        "dirname" => arg(0).map(dirname),
        "abspath" | "realpath" | "normpath" | "Path" | "PurePath" | "str" | "fspath" => arg(0),
        "resolve" | "absolute" => {
            // `Path(...).resolve()`: the object of the method call.
            match node.child_by_field_name("function").and_then(|f| f.child_by_field_name("object")) {
                Some(obj) => fold(obj, src, env, depth + 1),
                None => Folded::unknown(),
            }
        }
        _ => Folded::unknown(),
    }
}
