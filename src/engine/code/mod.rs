//! Code intelligence: Tree-sitter symbols, AST queries, imports and the impact graph.

pub mod lang;

pub use lang::Lang;
