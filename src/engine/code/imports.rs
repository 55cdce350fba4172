//! Import statements as written in a file, before any resolution: what the
//! per-file pass extracts from a parsed tree and stores, so the impact graph
//! can be rebuilt from the store without reparsing unchanged files.
//!
//! Contract between the per-file pipeline (which owns parsing and storage) and
//! the graph builder (which owns extraction rules and resolution): the pipeline
//! calls [`extract`] once per parsed file and stores the result as JSON; the
//! graph builder reads every file's imports back as [`super::graph::FileImports`].

use super::Lang;
use serde::{Deserialize, Serialize};

/// One import as written in the source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct RawImport {
    /// The imported specifier as written (`./util`, `crate::a::b`, `os.path`, `"x.h"`), with
    /// statically known dynamic parts already folded in where possible.
    pub spec: String,
    /// 1-based line of the statement.
    pub line: u32,
    /// The statement form (`import`, `from`, `use`, `mod`, `include`, `require`, `part`, ...).
    pub kind: String,
    /// Names pulled in by the statement, when it lists them (`from a import b, c`).
    pub names: Vec<String>,
    /// Built at run time (string concatenation, `path.join`, f-strings, `import_module`).
    pub dynamic: bool,
    /// A dynamic import whose target could not be folded to a literal.
    pub unresolvable: bool,
}

/// Extracts the imports of one parsed file. Never fails: what it cannot read it skips.
pub fn extract(_lang: Lang, _tree: &tree_sitter::Tree, _source: &str) -> Vec<RawImport> {
    Vec::new()
}
