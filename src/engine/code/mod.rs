//! Code intelligence: Tree-sitter symbols, AST queries, imports and the impact graph.

pub mod graph;
pub mod imports;
pub mod lang;

pub use lang::Lang;
