//! The languages docdex understands structurally: one Tree-sitter grammar each,
//! with the grammar's version recorded so a parser upgrade can be detected
//! (parser drift) and symbols re-extracted.

use std::path::Path;

/// A language with a Tree-sitter grammar compiled into docdex.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    /// Rust.
    Rust,
    /// TypeScript (`.ts`, `.mts`, `.cts`).
    TypeScript,
    /// TypeScript with JSX (`.tsx`).
    Tsx,
    /// JavaScript, JSX included.
    JavaScript,
    /// Python.
    Python,
    /// Go.
    Go,
    /// Java.
    Java,
    /// C#.
    CSharp,
    /// C.
    C,
    /// C++.
    Cpp,
    /// PHP.
    Php,
    /// Kotlin.
    Kotlin,
    /// Swift.
    Swift,
    /// Ruby.
    Ruby,
    /// Lua.
    Lua,
    /// Dart.
    Dart,
}

impl Lang {
    /// Every supported language.
    pub const ALL: [Lang; 16] = [
        Lang::Rust,
        Lang::TypeScript,
        Lang::Tsx,
        Lang::JavaScript,
        Lang::Python,
        Lang::Go,
        Lang::Java,
        Lang::CSharp,
        Lang::C,
        Lang::Cpp,
        Lang::Php,
        Lang::Kotlin,
        Lang::Swift,
        Lang::Ruby,
        Lang::Lua,
        Lang::Dart,
    ];

    /// Maps the index's language name (see `index::files::language`) to a grammar.
    pub fn from_index_lang(lang: &str) -> Option<Lang> {
        Some(match lang {
            "rust" => Lang::Rust,
            "typescript" => Lang::TypeScript,
            "tsx" => Lang::Tsx,
            "javascript" | "jsx" => Lang::JavaScript,
            "python" => Lang::Python,
            "go" => Lang::Go,
            "java" => Lang::Java,
            "csharp" => Lang::CSharp,
            "c" => Lang::C,
            "cpp" => Lang::Cpp,
            "php" => Lang::Php,
            "kotlin" => Lang::Kotlin,
            "swift" => Lang::Swift,
            "ruby" => Lang::Ruby,
            "lua" => Lang::Lua,
            "dart" => Lang::Dart,
            _ => return None,
        })
    }

    /// The grammar for a path, by the same rules the indexer uses.
    pub fn from_path(path: &Path) -> Option<Lang> {
        Self::from_index_lang(crate::engine::index::files::language(path))
    }

    /// Stable lowercase name (as serialized).
    pub fn name(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::TypeScript => "typescript",
            Lang::Tsx => "tsx",
            Lang::JavaScript => "javascript",
            Lang::Python => "python",
            Lang::Go => "go",
            Lang::Java => "java",
            Lang::CSharp => "csharp",
            Lang::C => "c",
            Lang::Cpp => "cpp",
            Lang::Php => "php",
            Lang::Kotlin => "kotlin",
            Lang::Swift => "swift",
            Lang::Ruby => "ruby",
            Lang::Lua => "lua",
            Lang::Dart => "dart",
        }
    }

    /// The compiled-in Tree-sitter grammar.
    pub fn grammar(self) -> tree_sitter::Language {
        match self {
            Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
            Lang::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Lang::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Lang::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Lang::Python => tree_sitter_python::LANGUAGE.into(),
            Lang::Go => tree_sitter_go::LANGUAGE.into(),
            Lang::Java => tree_sitter_java::LANGUAGE.into(),
            Lang::CSharp => tree_sitter_c_sharp::LANGUAGE.into(),
            Lang::C => tree_sitter_c::LANGUAGE.into(),
            Lang::Cpp => tree_sitter_cpp::LANGUAGE.into(),
            Lang::Php => tree_sitter_php::LANGUAGE_PHP.into(),
            Lang::Kotlin => tree_sitter_kotlin_ng::LANGUAGE.into(),
            Lang::Swift => tree_sitter_swift::LANGUAGE.into(),
            Lang::Ruby => tree_sitter_ruby::LANGUAGE.into(),
            Lang::Lua => tree_sitter_lua::LANGUAGE.into(),
            Lang::Dart => tree_sitter_dart::LANGUAGE.into(),
        }
    }

    /// The grammar crate and version compiled in, recorded in the symbol store to detect drift.
    pub fn grammar_version(self) -> &'static str {
        match self {
            Lang::Rust => "tree-sitter-rust 0.24.2",
            Lang::TypeScript | Lang::Tsx => "tree-sitter-typescript 0.23.2",
            Lang::JavaScript => "tree-sitter-javascript 0.25.0",
            Lang::Python => "tree-sitter-python 0.25.0",
            Lang::Go => "tree-sitter-go 0.25.0",
            Lang::Java => "tree-sitter-java 0.23.5",
            Lang::CSharp => "tree-sitter-c-sharp 0.23.5",
            Lang::C => "tree-sitter-c 0.24.2",
            Lang::Cpp => "tree-sitter-cpp 0.23.4",
            Lang::Php => "tree-sitter-php 0.25.1",
            Lang::Kotlin => "tree-sitter-kotlin-ng 1.1.0",
            Lang::Swift => "tree-sitter-swift 0.7.4",
            Lang::Ruby => "tree-sitter-ruby 0.23.1",
            Lang::Lua => "tree-sitter-lua 0.5.0",
            Lang::Dart => "tree-sitter-dart 0.3.0",
        }
    }
}

/// Parses `source` with the language's grammar. `None` only if the grammar cannot be loaded
/// (an ABI mismatch) or parsing was cancelled; syntax errors still yield a tree with error nodes.
pub fn parse(lang: Lang, source: &str) -> Option<tree_sitter::Tree> {
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&lang.grammar()).ok()?;
    parser.parse(source, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_grammar_loads_and_parses() {
        let samples = [
            (Lang::Rust, "fn main() {}"),
            (Lang::TypeScript, "function f(a: number): number { return a; }"),
            (Lang::Tsx, "const A = () => <div/>;"),
            (Lang::JavaScript, "function f() { return 1; }"),
            (Lang::Python, "def f():\n    return 1\n"),
            (Lang::Go, "package main\nfunc main() {}\n"),
            (Lang::Java, "class A { void f() {} }"),
            (Lang::CSharp, "class A { void F() {} }"),
            (Lang::C, "int main(void) { return 0; }"),
            (Lang::Cpp, "int main() { return 0; }"),
            (Lang::Php, "<?php function f() { return 1; }"),
            (Lang::Kotlin, "fun main() {}"),
            (Lang::Swift, "func f() {}"),
            (Lang::Ruby, "def f\n  1\nend\n"),
            (Lang::Lua, "function f() return 1 end"),
            (Lang::Dart, "void main() {}"),
        ];
        for (lang, src) in samples {
            let tree = parse(lang, src).unwrap_or_else(|| panic!("{} did not parse", lang.name()));
            assert!(!tree.root_node().has_error(), "{} parse has errors: {}", lang.name(), tree.root_node().to_sexp());
        }
        assert_eq!(Lang::from_path(Path::new("a/b.tsx")), Some(Lang::Tsx));
        assert_eq!(Lang::from_path(Path::new("x.md")), None);
    }
}
