//! Code intelligence: Tree-sitter symbols, AST queries, imports and the impact graph.

pub mod graph;
pub mod impact;
pub mod import_map;
pub mod imports;
pub mod lang;
pub mod resolve;

pub use lang::Lang;
