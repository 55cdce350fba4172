//! Code intelligence: Tree-sitter symbols, AST queries, imports and the impact graph.
//!
//! Indexing parses each new or changed file of a supported language once ([`analyze`]); from
//! that one tree come the symbols, the node-kind counts for AST search, the imports for the
//! impact graph, and the symbol boundaries that chunking follows. The results live in the
//! repo's `symbols.db` ([`store`]), which the queries in [`query`] read.

pub mod api;
pub mod ast;
pub mod graph;
pub mod impact;
pub mod import_map;
pub mod import_traces;
pub mod imports;
pub mod lang;
pub mod query;
pub mod resolve;
pub(crate) mod rules;
pub mod store;
pub mod symbols;
pub mod test_files;
pub mod types;

pub use lang::Lang;
pub use symbols::{FileAnalysis, Symbol};
pub use types::SymbolKind;

use std::cell::RefCell;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

/// Files larger than this are indexed as text but not parsed (generated tables, amalgamations
/// and minified bundles dominate above it, and a parse there costs seconds).
pub const MAX_PARSE_BYTES: usize = 2 * 1024 * 1024;
/// A parse that runs longer than this is abandoned (pathological input).
const PARSE_BUDGET: Duration = Duration::from_secs(5);

/// What the per-file pass produced for one file.
#[derive(Debug, Clone)]
pub enum CodeOutcome {
    /// Parsed: symbols, AST summary and imports.
    Parsed(Box<ParsedFile>),
    /// Not parsed, and why (too large, parse abandoned, grammar unavailable).
    NotParsed(String),
}

/// A parsed file's extracted data.
#[derive(Debug, Clone)]
pub struct ParsedFile {
    /// Symbols and AST summary.
    pub analysis: FileAnalysis,
    /// Imports as written.
    pub imports: Vec<imports::RawImport>,
}

thread_local! {
    /// One parser per grammar per thread: creating parsers and loading grammars is not free,
    /// and a parser is not `Sync`.
    static PARSERS: RefCell<Vec<Option<tree_sitter::Parser>>> = RefCell::new((0..Lang::ALL.len()).map(|_| None).collect());
}

/// Parses `src` once and extracts symbols, the AST summary and imports. `path` is the
/// repo-relative path (C/C++ headers are treated a little differently).
pub fn analyze(lang: Lang, src: &str, path: &str) -> CodeOutcome {
    if src.len() > MAX_PARSE_BYTES {
        return CodeOutcome::NotParsed(format!(
            "not parsed: {:.1} MB is over the {} MB limit for symbol extraction",
            src.len() as f64 / 1048576.0,
            MAX_PARSE_BYTES / 1048576
        ));
    }
    let tree = match parse(lang, src) {
        Ok(t) => t,
        Err(reason) => return CodeOutcome::NotParsed(reason),
    };
    let analysis = symbols::analyze_tree(lang, &tree, src, path);
    let imports = imports::extract(lang, &tree, src);
    CodeOutcome::Parsed(Box::new(ParsedFile { analysis, imports }))
}

/// Parses `src` with this thread's parser for the language, as indexing does, and returns the
/// tree: benchmarks time the parse alone with it (the floor of the code pass's cost).
pub fn parse_tree(lang: Lang, src: &str) -> Result<tree_sitter::Tree, String> {
    parse(lang, src)
}

/// Parses with this thread's parser for the language, giving up after [`PARSE_BUDGET`].
fn parse(lang: Lang, src: &str) -> Result<tree_sitter::Tree, String> {
    let slot = Lang::ALL.iter().position(|l| *l == lang).unwrap_or(0);
    PARSERS.with(|cell| {
        let mut parsers = cell.borrow_mut();
        if parsers[slot].is_none() {
            let mut p = tree_sitter::Parser::new();
            p.set_language(&lang.grammar())
                .map_err(|e| format!("not parsed: the {} grammar does not load ({e})", lang.name()))?;
            parsers[slot] = Some(p);
        }
        let parser = parsers[slot].as_mut().ok_or("not parsed: no parser")?;
        let started = Instant::now();
        let mut over_budget = |_: &tree_sitter::ParseState| {
            if started.elapsed() > PARSE_BUDGET {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let bytes = src.as_bytes();
        let tree = parser.parse_with_options(
            &mut |i, _| bytes.get(i..).unwrap_or(&[]),
            None,
            Some(tree_sitter::ParseOptions::new().progress_callback(&mut over_budget)),
        );
        match tree {
            Some(t) => Ok(t),
            None => {
                parser.reset();
                Err(format!("not parsed: parsing took longer than {} s", PARSE_BUDGET.as_secs()))
            }
        }
    })
}

/// One supported language as the build knows it (for `docdex check` and `symbols-status`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct LanguageSupport {
    /// Language name (`rust`, `tsx`, ...).
    pub lang: String,
    /// Grammar crate and version compiled in.
    pub grammar_version: String,
    /// The grammar loads into a parser (its ABI matches the Tree-sitter runtime).
    pub available: bool,
    /// Why it is not available, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// Every language docdex extracts symbols for, and whether its grammar loads in this build.
/// `docdex check` calls this; all 16 grammars (15 languages, TypeScript and TSX separately) are
/// compiled in.
pub fn language_support() -> Vec<LanguageSupport> {
    Lang::ALL
        .iter()
        .map(|l| {
            let mut p = tree_sitter::Parser::new();
            let problem = p.set_language(&l.grammar()).err().map(|e| format!("grammar does not load: {e}"));
            LanguageSupport {
                lang: l.name().to_string(),
                grammar_version: l.grammar_version().to_string(),
                available: problem.is_none(),
                problem,
            }
        })
        .collect()
}
