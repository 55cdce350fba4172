//! Code intelligence's shapes, a floor below the modules that produce them: the
//! symbol and AST requests and answers every surface sends and reads, what the
//! code pass reports per index run, what a symbol is, and a file's imports with
//! how an edge was found. Nothing here imports the parser, the store or the graph,
//! so each of those can name these types without importing the others.

use super::imports::RawImport;
use super::Lang;
use crate::error::{Error, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What a symbol is, across languages. The mapping from each grammar's node kinds is in
/// `docs/CODE_INTEL.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SymbolKind {
    /// A free function (or a function-valued top-level binding).
    Function,
    /// A function inside a class, impl, trait, interface or object (constructors included).
    Method,
    /// A class (also records, objects, mixins, actors).
    Class,
    /// A struct or union.
    Struct,
    /// An enum.
    Enum,
    /// An enum member or case.
    Variant,
    /// An interface or protocol.
    Interface,
    /// A trait.
    Trait,
    /// An impl block or extension: methods attached to a type declared elsewhere.
    Impl,
    /// A module, namespace or package.
    Module,
    /// A constant.
    Constant,
    /// A module-level variable.
    Variable,
    /// A field or property of a type.
    Field,
    /// A type alias or typedef.
    Type,
    /// A macro.
    Macro,
}

impl SymbolKind {
    /// Every kind.
    pub const ALL: [SymbolKind; 15] = [
        SymbolKind::Function,
        SymbolKind::Method,
        SymbolKind::Class,
        SymbolKind::Struct,
        SymbolKind::Enum,
        SymbolKind::Variant,
        SymbolKind::Interface,
        SymbolKind::Trait,
        SymbolKind::Impl,
        SymbolKind::Module,
        SymbolKind::Constant,
        SymbolKind::Variable,
        SymbolKind::Field,
        SymbolKind::Type,
        SymbolKind::Macro,
    ];

    /// Stable lowercase name (as serialized and stored).
    pub fn name(self) -> &'static str {
        match self {
            SymbolKind::Function => "function",
            SymbolKind::Method => "method",
            SymbolKind::Class => "class",
            SymbolKind::Struct => "struct",
            SymbolKind::Enum => "enum",
            SymbolKind::Variant => "variant",
            SymbolKind::Interface => "interface",
            SymbolKind::Trait => "trait",
            SymbolKind::Impl => "impl",
            SymbolKind::Module => "module",
            SymbolKind::Constant => "constant",
            SymbolKind::Variable => "variable",
            SymbolKind::Field => "field",
            SymbolKind::Type => "type",
            SymbolKind::Macro => "macro",
        }
    }

    /// Parses a kind name, accepting common aliases (`fn`, `protocol`, `namespace`, `property`, ...).
    pub fn parse(s: &str) -> Option<SymbolKind> {
        let s = s.trim().to_ascii_lowercase();
        if let Some(k) = Self::ALL.into_iter().find(|k| k.name() == s) {
            return Some(k);
        }
        Some(match s.as_str() {
            "fn" | "func" | "def" | "fun" => SymbolKind::Function,
            "constructor" | "ctor" => SymbolKind::Method,
            "record" | "object" | "mixin" | "actor" => SymbolKind::Class,
            "union" => SymbolKind::Struct,
            "enum_member" | "member" | "case" | "enumerator" => SymbolKind::Variant,
            "protocol" => SymbolKind::Interface,
            "extension" => SymbolKind::Impl,
            "namespace" | "package" | "mod" => SymbolKind::Module,
            "const" => SymbolKind::Constant,
            "var" | "let" | "static" | "global" => SymbolKind::Variable,
            "property" | "prop" | "attribute" => SymbolKind::Field,
            "typedef" | "alias" | "type_alias" => SymbolKind::Type,
            _ => return None,
        })
    }

    /// Whether other symbols nest inside it (it becomes their container).
    pub fn is_scope(self) -> bool {
        matches!(
            self,
            SymbolKind::Function
                | SymbolKind::Method
                | SymbolKind::Class
                | SymbolKind::Struct
                | SymbolKind::Enum
                | SymbolKind::Interface
                | SymbolKind::Trait
                | SymbolKind::Impl
                | SymbolKind::Module
        )
    }

    /// Functions and methods: what is declared inside their bodies is local, not a symbol
    /// (except nested functions and types).
    pub fn is_callable(self) -> bool {
        matches!(self, SymbolKind::Function | SymbolKind::Method)
    }

    /// Types a method can belong to.
    pub fn is_type_like(self) -> bool {
        matches!(
            self,
            SymbolKind::Class
                | SymbolKind::Struct
                | SymbolKind::Enum
                | SymbolKind::Interface
                | SymbolKind::Trait
                | SymbolKind::Impl
        )
    }

    /// How much a definition of this kind says about what a file is for: the weight of the
    /// search boost for a query naming it, and the order of equal name matches.
    pub fn weight(self) -> f32 {
        match self {
            SymbolKind::Class
            | SymbolKind::Struct
            | SymbolKind::Enum
            | SymbolKind::Interface
            | SymbolKind::Trait
            | SymbolKind::Function
            | SymbolKind::Method
            | SymbolKind::Type => 1.0,
            SymbolKind::Macro | SymbolKind::Module => 0.8,
            SymbolKind::Constant => 0.6,
            SymbolKind::Impl => 0.5,
            SymbolKind::Variant | SymbolKind::Variable => 0.4,
            SymbolKind::Field => 0.3,
        }
    }
}

/// How a symbol matched a name query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MatchKind {
    /// The name is the query (ignoring case and `_`).
    Exact,
    /// The name starts with the query.
    Prefix,
    /// The name contains every word of the query as the start of one of its parts.
    WordPart,
    /// Close: an abbreviation or a typo.
    Fuzzy,
}

/// `docdex symbols`, `GET /v1/symbols`, the MCP tool `docdex_symbols`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct SymbolsRequest {
    /// Name of the function, type, method, ... to find (exact, prefix, word parts such as
    /// `user name` for `getUserName`, or close misspellings); `Type.method` narrows to a
    /// container. Omit it and pass `file` to get that file's outline instead.
    #[serde(default, alias = "q")]
    pub query: Option<String>,
    /// Only this kind: `function`, `method`, `class`, `struct`, `enum`, `variant`,
    /// `interface`, `trait`, `impl`, `module`, `constant`, `variable`, `field`, `type`,
    /// `macro` (aliases such as `fn`, `protocol`, `namespace` are accepted).
    #[serde(default)]
    pub kind: Option<String>,
    /// Repo-relative file: restricts a search to it, or (without `query`) lists its outline.
    #[serde(default)]
    pub file: Option<String>,
    /// Only files under this repo-relative prefix (e.g. `src/auth/`).
    #[serde(default)]
    pub path_prefix: Option<String>,
    /// Only this language (`rust`, `python`, `typescript`, `tsx`, `go`, ...).
    #[serde(default)]
    pub lang: Option<String>,
    /// Results per page (default 20; an outline defaults to every symbol of the file).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// One symbol in a response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SymbolHit {
    /// The declared name.
    pub name: String,
    /// Its kind.
    pub kind: SymbolKind,
    /// Language of its file.
    pub lang: String,
    /// Repo-relative path.
    pub path: String,
    /// First line (1-based).
    pub line_start: u32,
    /// Last line (inclusive).
    pub line_end: u32,
    /// The declaration's head (`pub fn new(ttl: u64) -> Self`).
    pub signature: String,
    /// The enclosing symbol's name (class of a method, type of an impl).
    pub container: Option<String>,
    /// Nesting depth in its file (0 at top level).
    pub depth: u32,
    /// Tree-sitter node kind of the declaration.
    pub node_kind: String,
    /// How it matched the query (absent in an outline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_kind: Option<MatchKind>,
    /// Ranking score within its match tier, higher first (about 0..1, +1 when the symbol is in the
    /// container the query named, as in `Store.size`; 0 in an outline).
    pub score: f32,
    /// True when its file changed on disk (or is gone) after the symbol store last committed:
    /// its lines may have moved, as search's `stale` hits (absent when false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
}

/// The answer to a [`SymbolsRequest`].
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SymbolsResponse {
    /// JSON shape version.
    pub schema_version: u32,
    /// Repo fingerprint.
    pub project_id: String,
    /// Repo root.
    pub repo: PathBuf,
    /// `search` (by name) or `outline` (a file's symbols in order).
    pub mode: String,
    /// The query, when searching.
    pub query: Option<String>,
    /// The file, for an outline or a file filter.
    pub file: Option<String>,
    /// Index generation the symbols were extracted at.
    pub generation: u64,
    /// Matches.
    pub results: Vec<SymbolHit>,
    /// Matches before the limit (a lower bound for very common names); for an outline, the
    /// file's symbols under the filters, however many the limit lists.
    pub total: usize,
    /// More matched than were returned.
    pub truncated: bool,
    /// Set while a large first index parses the repository after its text pass: the symbols
    /// of the files not parsed yet are missing until it ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Status of one language in the symbol store.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct LanguageStatus {
    /// Language.
    pub lang: String,
    /// Grammar compiled into this build.
    pub grammar_version: String,
    /// Grammar the stored symbols were extracted with (none before the first index).
    pub stored_grammar_version: Option<String>,
    /// The two differ: this language's symbols are stale until re-indexed.
    pub drifted: bool,
    /// Files of this language in the store.
    pub files: u64,
    /// Symbols from them.
    pub symbols: u64,
    /// Whether this build can parse the language at all.
    pub available: bool,
}

/// `docdex symbols-status`, `GET /v1/symbols/status`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SymbolsStatus {
    /// JSON shape version.
    pub schema_version: u32,
    /// Repo fingerprint.
    pub project_id: String,
    /// Repo root.
    pub repo: PathBuf,
    /// `ready`, `reindex_required` (parser drift or an old store), `lagging` (the last run was
    /// interrupted; the next run catches up) or `not_built`.
    pub state: String,
    /// Parser drift or an incompatible store: symbol and AST queries fail until `docdex index`.
    pub symbols_reindex_required: bool,
    /// Index generation the store was committed at.
    pub generation: u64,
    /// The text index's generation.
    pub index_generation: u64,
    /// Store schema found (this build writes [`STORE_SCHEMA`](super::store::STORE_SCHEMA)).
    pub store_schema: u32,
    /// Code files in the store.
    pub files: u64,
    /// Of those, files that were not parsed (too large, parse abandoned).
    pub files_not_parsed: u64,
    /// Of those, files whose tree has syntax errors (their symbols are partial).
    pub files_with_parse_errors: u64,
    /// Symbols in the store.
    pub symbols: u64,
    /// Per language.
    pub languages: Vec<LanguageStatus>,
    /// Things worth knowing, with what to run.
    pub messages: Vec<String>,
    /// The store file.
    pub db_path: PathBuf,
}

/// Whether files must contain any or all of the asked node kinds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AstMode {
    /// At least one of the kinds.
    #[default]
    Any,
    /// Every kind.
    All,
}

impl std::str::FromStr for AstMode {
    type Err = Error;
    fn from_str(s: &str) -> Result<AstMode> {
        match s.trim().to_ascii_lowercase().as_str() {
            "any" => Ok(AstMode::Any),
            "all" => Ok(AstMode::All),
            other => Err(Error::BadRequest(format!("bad mode {other:?}: use any or all"))),
        }
    }
}

/// `docdex ast search`, `GET /v1/ast/search`: files containing Tree-sitter node kinds.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct AstSearchRequest {
    /// Tree-sitter node kinds (`function_item`, `class_definition`, `ERROR`, ...): a list, or
    /// one comma-separated string (`function_item,struct_item`, as a query string carries it).
    #[serde(deserialize_with = "list_or_commas")]
    pub kinds: Vec<String>,
    /// Any (default) or all of them.
    #[serde(default)]
    pub mode: AstMode,
    /// Files per page (default 20).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Only files under this prefix.
    #[serde(default, alias = "pathPrefix")]
    pub path_prefix: Option<String>,
}

/// One file in an AST search.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AstFileHit {
    /// Repo-relative path.
    pub path: String,
    /// Language.
    pub lang: String,
    /// Count per asked kind found in the file.
    pub counts: BTreeMap<String, u32>,
    /// Sum of the counts.
    pub total: u32,
}

/// The answer to an [`AstSearchRequest`].
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AstSearchResponse {
    /// JSON shape version.
    pub schema_version: u32,
    /// Repo root.
    pub repo: PathBuf,
    /// The kinds asked for.
    pub kinds: Vec<String>,
    /// Any or all.
    pub mode: AstMode,
    /// Matching files, most matches first.
    pub results: Vec<AstFileHit>,
    /// Matching files before the limit.
    pub total_files: usize,
    /// More files matched than were returned.
    pub truncated: bool,
    /// Why nothing matched when it is not for want of the kinds: the path filter names no
    /// indexed file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `docdex ast query`, `POST /v1/ast/query`: per-file match counts plus sample nodes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct AstQueryRequest {
    /// Tree-sitter node kinds, as the grammars name them: `function_definition` and
    /// `class_definition` (Python), `function_item` (Rust), `method_declaration` (Java),
    /// `ERROR` for syntax errors; at most 64. One no grammar has is refused naming close ones.
    pub kinds: Vec<String>,
    /// Any (default) or all of them.
    #[serde(default)]
    pub mode: AstMode,
    /// Only declarations with this name (ignoring case and `_`); only nodes that declare a
    /// symbol carry a name.
    #[serde(default)]
    pub name: Option<String>,
    /// Only nodes that fill this field of their parent (a Tree-sitter field name: `name`,
    /// `body`, `parameters`, `return_type`, ...). The candidate files are parsed again to
    /// answer, so narrow big repos with `path_prefix`. With `name`, the node's `name` child
    /// (or, for a leaf node, its text) must equal it.
    #[serde(default)]
    pub field: Option<String>,
    /// Only files under this prefix.
    #[serde(default, alias = "pathPrefix")]
    pub path_prefix: Option<String>,
    /// Files per page (default 20).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Sample nodes per file (default 5).
    #[serde(default, alias = "sampleLimit")]
    pub sample_limit: Option<usize>,
}

/// A sample node.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AstNode {
    /// Node kind.
    pub kind: String,
    /// First line.
    pub line_start: u32,
    /// Last line.
    pub line_end: u32,
    /// 1-based byte column where the node starts in its first line (as ripgrep's `--column`);
    /// absent for `--name` matches, which the symbol table records by line only (their text
    /// starts at the name on a long line instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    /// The declared name, for declarations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The node's first line as it is on disk now, from the node's column when known (so each
    /// node of a minified line shows its own text), trimmed, at most 160 characters (`…` when
    /// cut).
    pub text: String,
}

/// One file in an AST query.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AstQueryFile {
    /// Repo-relative path.
    pub path: String,
    /// Language.
    pub lang: String,
    /// Matches per kind.
    pub counts: BTreeMap<String, u32>,
    /// Sum of the counts.
    pub total: u32,
    /// Sample nodes, in source order.
    pub samples: Vec<AstNode>,
}

/// The answer to an [`AstQueryRequest`].
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AstQueryResponse {
    /// JSON shape version.
    pub schema_version: u32,
    /// Repo root.
    pub repo: PathBuf,
    /// The kinds asked for.
    pub kinds: Vec<String>,
    /// Any or all.
    pub mode: AstMode,
    /// The name filter.
    pub name: Option<String>,
    /// The parent-field filter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Matching files, most matches first.
    pub results: Vec<AstQueryFile>,
    /// Matching files before the limit.
    pub total_files: usize,
    /// Matches over all matching files.
    pub total_matches: u64,
    /// More files matched than were returned.
    pub truncated: bool,
    /// Why nothing matched when it is not for want of the kinds: the path filter names no
    /// indexed file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Parse and extraction figures of one language in an index run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LanguageTiming {
    /// Files parsed (or passed over as too large).
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Parse and extraction CPU time summed over worker threads.
    pub seconds: f64,
}

/// What the code pass did in one index run (`IndexSummary::code`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CodeIndexSummary {
    /// Files parsed this run.
    pub files_parsed: u64,
    /// Files of a supported language not parsed (too large, parse abandoned).
    pub files_not_parsed: u64,
    /// Of the parsed files, those whose tree has syntax errors.
    pub files_with_parse_errors: u64,
    /// Files re-extracted although unchanged (parser drift, a lagging or rebuilt store).
    pub files_repaired: u64,
    /// Files removed from the symbol store.
    pub files_removed: u64,
    /// Symbols extracted this run.
    pub symbols_extracted: u64,
    /// Languages re-extracted because their grammar version or their import rules version
    /// ([`super::imports::rules_version`]) changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drift_repaired: Vec<String>,
    /// Per language.
    pub languages: BTreeMap<String, LanguageTiming>,
    /// Parse and extraction CPU time summed over worker threads.
    pub extract_seconds: f64,
    /// Time spent writing `symbols.db` (wall seconds on the writer thread).
    pub store_seconds: f64,
    /// Time of the impact-graph rebuild, when one ran.
    pub graph_seconds: Option<f64>,
    /// Why the impact-graph rebuild failed, when it did (indexing still succeeds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph_error: Option<String>,
}

/// The imports of one file, as the per-file pass stored them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileImports {
    /// Repo-relative path with `/` separators.
    pub path: String,
    /// The file's language.
    pub lang: Lang,
    /// Its imports in source order.
    pub imports: Vec<RawImport>,
}

/// How an edge was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// The language's own resolution rules with a literal specifier (or manifest: go.mod,
    /// tsconfig `paths`, composer PSR-4, pubspec, Cargo).
    Static,
    /// A convention or a folded dynamic expression: include directories found in the tree,
    /// C# namespaces, Swift modules, `path.join`, f-strings, several candidates.
    Heuristic,
    /// An entry of `docdex.import_map.json`.
    ImportMap,
    /// A runtime import trace (`docdex.import_traces.jsonl`, see [`super::import_traces`]).
    Trace,
}

impl Method {
    /// The serialized name (`static`, `heuristic`, `import_map`, `trace`).
    pub fn name(self) -> &'static str {
        match self {
            Method::Static => "static",
            Method::Heuristic => "heuristic",
            Method::ImportMap => "import_map",
            Method::Trace => "trace",
        }
    }
}

/// A list of strings, or one string of comma-separated items (a query string's form).
fn list_or_commas<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Form {
        List(Vec<String>),
        Commas(String),
    }
    Ok(match Form::deserialize(d)? {
        Form::List(v) => v,
        Form::Commas(s) => s.split(',').map(str::trim).filter(|k| !k.is_empty()).map(String::from).collect(),
    })
}
