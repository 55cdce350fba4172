//! Import statements as written in a file, before any resolution: what the
//! per-file pass extracts from a parsed tree and stores, so the impact graph
//! can be rebuilt from the store without reparsing unchanged files.
//!
//! Contract between the per-file pipeline (which owns parsing and storage) and
//! the graph builder (which owns extraction rules and resolution): the pipeline
//! calls [`extract`] once per parsed file and stores the result as JSON; the
//! graph builder reads every file's imports back as [`super::graph::FileImports`].
//!
//! Extraction is a tree walk per language (one module each under `imports/`). Besides plain
//! import statements it folds the dynamic forms whose target is known at parse time: string
//! concatenation with constants bound in the same file, `path.join` / `os.path.join`, template
//! strings and f-strings over such constants, `importlib.import_module`, `__DIR__ . '/x.php'`
//! and the like (see [`fold`]). A dynamic import that cannot be folded is still recorded, with
//! `unresolvable` set and the known parts kept as a `*` pattern, so it reaches diagnostics.
//!
//! A few records are declarations rather than imports ([`kind::PACKAGE`], [`kind::NAMESPACE`],
//! [`kind::LIBRARY`], [`kind::PART_OF`]): the package or namespace a file declares. Resolution
//! needs them (Java, Kotlin, C#, PHP), and storing them here keeps the graph rebuildable from
//! the store alone.

mod cfamily;
mod csharp;
mod dart;
pub(crate) mod fold;
mod go;
mod js;
mod jvm;
mod lua;
mod php;
mod python;
mod ruby;
mod rust;
mod swift;
mod syntax;

use super::Lang;
use serde::{Deserialize, Serialize};

/// One import as written in the source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct RawImport {
    /// The imported specifier as written (`./util`, `crate::a::b`, `os.path`, `"x.h"`), with
    /// statically known dynamic parts already folded in where possible. For an unresolvable
    /// dynamic import, the known parts with `*` for the unknown ones (`./plugins/*`).
    pub spec: String,
    /// 1-based line of the statement.
    pub line: u32,
    /// The statement form: one of the constants in [`kind`].
    pub kind: String,
    /// Names pulled in by the statement, when it lists them (`from a import b, c`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    /// Built at run time (string concatenation, `path.join`, f-strings, `import_module`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub dynamic: bool,
    /// A dynamic import whose target could not be folded to a literal.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unresolvable: bool,
    /// Further statically possible specifiers besides `spec` (a constant bound to either of
    /// two literals), in source order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<String>,
    /// For dynamic imports: the argument expression as written (for diagnostics).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub expr: String,
    /// Read only by the type checker, gone at run time: TypeScript `import type` / `export type
    /// ... from`, Python imports under `if TYPE_CHECKING:`. Their edges are
    /// [`kind::TYPE_IMPORT`], which no import cycle counts.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub type_only: bool,
}

impl RawImport {
    /// A plain static import.
    pub fn new(kind: &str, spec: impl Into<String>, line: u32) -> RawImport {
        RawImport { spec: spec.into(), line, kind: kind.to_string(), ..Default::default() }
    }

    /// True for records that declare what the file is (package, namespace) rather than import.
    pub fn is_declaration(&self) -> bool {
        matches!(self.kind.as_str(), kind::PACKAGE | kind::NAMESPACE | kind::LIBRARY | kind::PART_OF)
    }

    /// Every static specifier this import may stand for: `spec` then `candidates`.
    pub fn specs(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.spec.as_str()).chain(self.candidates.iter().map(String::as_str))
    }
}

/// The statement forms recorded in [`RawImport::kind`].
pub mod kind {
    /// `import x` (JS/TS, Python, Go, Java, Kotlin, Dart, Swift).
    pub const IMPORT: &str = "import";
    /// Python `from x import y`.
    pub const FROM: &str = "from";
    /// JS/TS `export ... from 'x'`, Dart `export 'x'`.
    pub const EXPORT: &str = "export";
    /// `require(...)` (JS, Ruby, Lua), PHP `require`/`require_once`.
    pub const REQUIRE: &str = "require";
    /// Ruby `require_relative`.
    pub const REQUIRE_RELATIVE: &str = "require_relative";
    /// JS `import(...)`.
    pub const DYNAMIC_IMPORT: &str = "dynamic_import";
    /// Python `importlib.import_module(...)` / `__import__(...)`.
    pub const IMPORT_MODULE: &str = "import_module";
    /// A module loaded from a file path (`spec_from_file_location`, `SourceFileLoader`,
    /// Lua `dofile`, Ruby `load`): `spec` is a path, relative to the file when it starts with `.`.
    pub const LOAD_PATH: &str = "load_path";
    /// C/C++ `#include "x"`, PHP `include`/`include_once`.
    pub const INCLUDE: &str = "include";
    /// C/C++ `#include <x>`.
    pub const INCLUDE_SYSTEM: &str = "include_system";
    /// The kind of an edge whose import is type-only ([`super::RawImport::type_only`]): that
    /// is how TypeScript and Python break an import cycle, so cycles leave it out.
    pub const TYPE_IMPORT: &str = "type_import";
    /// Rust `use`, PHP `use`, C# `using`.
    pub const USE: &str = "use";
    /// Java `import static`, C# `using static`, PHP `use function` / `use const`.
    pub const USE_STATIC: &str = "use_static";
    /// Rust `mod x;` (`spec` is the module path inside the file: `x`, or `a::x` inside `mod a {}`).
    pub const MOD: &str = "mod";
    /// Rust `#[path = "..."] mod x;` (`spec` is the path attribute, relative to the file; `names`
    /// holds the module name).
    pub const MOD_PATH: &str = "mod_path";
    /// Rust `include!` / `include_str!` / `include_bytes!` (`spec` is the path, relative to the file).
    pub const INCLUDE_FILE: &str = "include_file";
    /// Rust `extern crate x`.
    pub const EXTERN_CRATE: &str = "extern_crate";
    /// Java/Kotlin `Class.forName("a.b.C")`.
    pub const REFLECT: &str = "reflect";
    /// Dart `part 'x.dart'`.
    pub const PART: &str = "part";
    /// Declaration: the file's package (Java, Kotlin, Go).
    pub const PACKAGE: &str = "package";
    /// Declaration: a namespace the file declares (C#, PHP).
    pub const NAMESPACE: &str = "namespace";
    /// Declaration: Dart `library x;`.
    pub const LIBRARY: &str = "library";
    /// Declaration: Dart `part of 'x.dart';` (the library this part belongs to).
    pub const PART_OF: &str = "part_of";
}

/// The version of [`extract`]'s rules for a language: what it stores for that language's
/// files. Bump a language's number when a change alters the stored imports of files already
/// indexed (a new mark such as [`RawImport::type_only`], a form newly read or read otherwise).
/// `symbols.db` records the number per language when it records the grammar versions, and the
/// next index run re-extracts every file of a language whose recorded number differs (or, in
/// a store written before the numbers existed, is missing), as after a grammar upgrade: stored
/// imports feed every later graph rebuild, so without this an upgraded docdex kept the old
/// rules' edges (a type-only re-export closing a cycle) until `docdex graph rebuild`, and lost
/// that rebuild's answer again at the next index run whose imports changed.
pub fn rules_version(lang: Lang) -> u32 {
    match lang {
        // 1: first recorded; TypeScript `export {type A} from` is type-only.
        Lang::Rust
        | Lang::TypeScript
        | Lang::Tsx
        | Lang::JavaScript
        | Lang::Python
        | Lang::Go
        | Lang::Java
        | Lang::Kotlin
        | Lang::CSharp
        | Lang::C
        | Lang::Cpp
        | Lang::Php
        | Lang::Ruby
        | Lang::Lua
        | Lang::Dart
        | Lang::Swift => 1,
    }
}

/// Extracts the imports of one parsed file. Never fails: what it cannot read it skips.
pub fn extract(lang: Lang, tree: &tree_sitter::Tree, source: &str) -> Vec<RawImport> {
    let src = syntax::Src::new(source);
    let root = tree.root_node();
    let mut out = match lang {
        Lang::Rust => rust::extract(root, &src),
        Lang::TypeScript | Lang::Tsx | Lang::JavaScript => js::extract(root, &src),
        Lang::Python => python::extract(root, &src),
        Lang::Go => go::extract(root, &src),
        Lang::Java => jvm::extract_java(root, &src),
        Lang::Kotlin => jvm::extract_kotlin(root, &src),
        Lang::CSharp => csharp::extract(root, &src),
        Lang::C | Lang::Cpp => cfamily::extract(root, &src),
        Lang::Php => php::extract(root, &src),
        Lang::Ruby => ruby::extract(root, &src),
        Lang::Lua => lua::extract(root, &src),
        Lang::Dart => dart::extract(root, &src, source),
        Lang::Swift => swift::extract(root, &src),
    };
    out.retain(|i| !i.spec.is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn imports(lang: Lang, src: &str) -> Vec<RawImport> {
        let tree = super::super::lang::parse(lang, src).expect("parse");
        extract(lang, &tree, src)
    }

    fn specs(lang: Lang, src: &str) -> Vec<(String, String)> {
        imports(lang, src).into_iter().map(|i| (i.kind, i.spec)).collect()
    }

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn rust_mod_use_and_include() {
        let got = specs(
            Lang::Rust,
            r#"mod a;
#[path = "x/y.rs"] mod b;
mod c { mod d; use super::e::F; }
use crate::a::{b, c::{d as e, self}, *};
use super::x;
use std::fmt;
extern crate serde;
const T: &str = include_str!("../t.txt");
fn f() { include!(concat!(env!("OUT_DIR"), "/gen.rs")); }
"#,
        );
        assert_eq!(
            got,
            pairs(&[
                ("mod", "a"),
                ("mod_path", "x/y.rs"),
                ("mod", "c::d"),
                ("use", "self::e::F"),
                ("use", "crate::a::b"),
                ("use", "crate::a::c::d"),
                ("use", "crate::a::c"),
                ("use", "crate::a"),
                ("use", "super::x"),
                ("use", "std::fmt"),
                ("extern_crate", "serde"),
                ("include_file", "../t.txt"),
                ("include_file", "*/gen.rs"),
            ])
        );
        let in_macros = specs(
            Lang::Rust,
            "cfg_if! { if #[cfg(unix)] { #[path = \"u.rs\"] mod unix; pub use self::unix::{a, b::*}; } else { mod other; } }\nmacro_rules! m { ($n:ident) => { mod $n; use $crate::x; } }\nmod r#as;\nuse crate::r#as::f;\n",
        );
        assert_eq!(
            in_macros,
            pairs(&[
                ("mod_path", "u.rs"),
                ("use", "self::unix::a"),
                ("use", "self::unix::b"),
                ("mod", "other"),
                ("mod", "as"),
                ("use", "crate::as::f"),
            ])
        );
        let all = imports(Lang::Rust, "fn f() { include!(concat!(env!(\"OUT_DIR\"), \"/gen.rs\")); }");
        assert!(all[0].dynamic && all[0].unresolvable, "{all:?}");
    }

    /// TypeScript 5's `export type * from` (a parse error in the bundled grammar) counted as a
    /// run-time re-export, closing import cycles the type-only form is there to break.
    #[test]
    fn ts_export_type_star_is_type_only() {
        let src = "export type * from './a';\nexport type * as ns from './b';\nexport * from './c';\n\
                   export { type X } from './d';\nexport type { Y } from './e';\n";
        let got = imports(Lang::TypeScript, src);
        let flags: Vec<(&str, bool)> = got.iter().map(|i| (i.spec.as_str(), i.type_only)).collect();
        assert_eq!(flags, [("./a", true), ("./b", true), ("./c", false), ("./d", true), ("./e", true)]);
    }

    /// `export {type A} from './x'` and `export {type A, type B} from './x'` (every name marked
    /// `type`) are dropped by TypeScript like `export type {A} from`, yet they counted as
    /// run-time re-exports and closed false import cycles. A mixed list, an empty one, a
    /// namespace re-export or a value named `type` still loads the module.
    #[test]
    fn ts_reexport_with_every_name_typed_is_type_only() {
        let src = "export {type A} from './a';\nexport {type B, type C as D} from './b';\n\
                   export {type E, f} from './c';\nexport {} from './d';\nexport * as ns from './e';\n\
                   export {type} from './f';\nexport {type G, /* c */ type H,} from './g';\n";
        let got = imports(Lang::TypeScript, src);
        let flags: Vec<(&str, &str, bool)> =
            got.iter().map(|i| (i.spec.as_str(), i.kind.as_str(), i.type_only)).collect();
        let want = [
            ("./a", "export", true),
            ("./b", "export", true),
            ("./c", "export", false),
            ("./d", "export", false),
            ("./e", "export", false),
            ("./f", "export", false),
            ("./g", "export", true),
        ];
        assert_eq!(flags, want);
        let tsx = imports(Lang::Tsx, "export {type P} from './p';\n");
        assert!(tsx[0].type_only, "{tsx:?}");
    }

    /// `import {type A, type B} from` (every name marked `type`) is erased like `import type`,
    /// yet it counted as a run-time import and closed false import cycles. A mixed list, a
    /// default or namespace binding beside the typed names, or a value named `type` still runs.
    #[test]
    fn ts_import_with_every_name_typed_is_type_only() {
        let src = "import {type A, type B} from './a';\nimport { type C } from './b';\n\
                   import {type D, e} from './c';\nimport F, {type G} from './d';\n\
                   import {} from './e';\nimport {type} from './f';\nimport {type H, /* c */ type I,} from './g';\n";
        let got = imports(Lang::TypeScript, src);
        let flags: Vec<(&str, bool)> = got.iter().map(|i| (i.spec.as_str(), i.type_only)).collect();
        let want = [
            ("./a", true),
            ("./b", true),
            ("./c", false),
            ("./d", false),
            ("./e", false),
            ("./f", false),
            ("./g", true),
        ];
        assert_eq!(flags, want);
        let tsx = imports(Lang::Tsx, "import {type P} from './p';\n");
        assert!(tsx[0].type_only, "{tsx:?}");
    }

    #[test]
    fn js_static_and_dynamic_forms() {
        let src = r#"
import a, { b as c } from "./x";
import * as ns from "y";
import "z";
export * from "./w";
import type { T } from "./t";
const m = require("r");
const BASE = "./plugins";
const NAME = 'alpha';
const p = require(BASE + "/a");
const q = import(`${BASE}/${NAME}.js`);
const path = require("path");
const j = require(path.join(__dirname, "lib", "k"));
const MODE = fast ? "fast" : "safe";
const s = require("./s/" + MODE);
function load(n) { return require("./plug/" + n); }
const e = require(process.env.X);
"#;
        let got = imports(Lang::TypeScript, src);
        let specs: Vec<&str> = got.iter().map(|i| i.spec.as_str()).collect();
        assert_eq!(
            specs,
            vec![
                "./x",
                "y",
                "z",
                "./w",
                "./t",
                "r",
                "./plugins/a",
                "./plugins/alpha.js",
                "path",
                "./lib/k",
                "./s/fast",
                "./plug/*",
                "*"
            ]
        );
        assert_eq!(got[0].names, vec!["a", "b"]);
        assert!(!got[0].dynamic);
        assert!(got[6].dynamic && !got[6].unresolvable);
        assert_eq!(got[10].candidates, vec!["./s/safe"]);
        assert!(got[11].unresolvable && got[11].expr.contains("\"./plug/\" + n"));
        assert!(got[12].unresolvable);
        assert_eq!(got[3].kind, "export");
        assert_eq!(got[7].kind, "dynamic_import");
    }

    #[test]
    fn python_imports_and_importlib() {
        let src = r#"
import a.b as c, d
from . import x
from ..m.n import (p as q, r)
from .z import *
import importlib, os
PKG = "plugins"
NAME = "delta"
HERE = os.path.dirname(os.path.abspath(__file__))
g = importlib.import_module("plugins.gamma")
h = importlib.import_module(f"{PKG}.{NAME}")
s = importlib.util.spec_from_file_location("e", os.path.join(os.path.dirname(__file__), "plugins", "e.py"))
z = SourceFileLoader("z", os.path.join(HERE, "plugins/z.py"))
w = __import__("w")
def load(n):
    return importlib.import_module(n)
"#;
        let got = imports(Lang::Python, src);
        let specs: Vec<(&str, &str)> = got.iter().map(|i| (i.kind.as_str(), i.spec.as_str())).collect();
        assert_eq!(
            specs,
            vec![
                ("import", "a.b"),
                ("import", "d"),
                ("from", "."),
                ("from", "..m.n"),
                ("from", ".z"),
                ("import", "importlib"),
                ("import", "os"),
                ("import_module", "plugins.gamma"),
                ("import_module", "plugins.delta"),
                ("load_path", "./plugins/e.py"),
                ("load_path", "./plugins/z.py"),
                ("import_module", "w"),
                ("import_module", "*"),
            ]
        );
        assert_eq!(got[2].names, vec!["x"]);
        assert_eq!(got[3].names, vec!["p", "r"]);
        assert!(got[8].dynamic && !got[8].unresolvable);
        assert!(!got[7].dynamic, "a literal import_module is static");
        assert!(got[12].unresolvable);
    }

    #[test]
    fn go_java_kotlin_csharp() {
        assert_eq!(
            specs(Lang::Go, "package main\nimport \"fmt\"\nimport ( m \"a/b\"; _ \"c\" )\n"),
            pairs(&[("package", "main"), ("import", "fmt"), ("import", "a/b"), ("import", "c")])
        );
        assert_eq!(
            specs(
                Lang::Java,
                "package a.b; import a.B; import static a.B.c; import a.*; class X { void f() { Class.forName(\"a.b.C\"); } }"
            ),
            pairs(&[
                ("package", "a.b"),
                ("import", "a.B"),
                ("use_static", "a.B.c"),
                ("import", "a.*"),
                ("reflect", "a.b.C")
            ])
        );
        assert_eq!(
            specs(Lang::Kotlin, "package a.b\nimport a.B\nimport a.c as d\nimport e.*\nfun f() {}\n"),
            pairs(&[("package", "a.b"), ("import", "a.B"), ("import", "a.c"), ("import", "e.*")])
        );
        assert_eq!(
            specs(
                Lang::CSharp,
                "global using System; using static A.B.C; using X = A.B.D; namespace N.M { class Q {} }"
            ),
            pairs(&[("use", "System"), ("use_static", "A.B.C"), ("use", "A.B.D"), ("namespace", "N.M")])
        );
    }

    #[test]
    fn c_php_ruby_lua_dart_swift() {
        assert_eq!(
            specs(Lang::C, "#include \"a.h\"\n#include <b/c.h>\n#define H \"d.h\"\n#include H\n"),
            pairs(&[("include", "a.h"), ("include_system", "b/c.h"), ("include", "d.h")])
        );
        assert_eq!(
            specs(
                Lang::Php,
                "<?php\nnamespace A\\B;\nuse C\\D, E\\F as G;\nuse function H\\i;\nuse J\\{K, L\\M};\nrequire_once __DIR__ . '/x.php';\ninclude 'y.php';\nrequire dirname(__FILE__) . \"/z.php\";\ndefine('R', __DIR__ . '/lib');\nrequire R . '/w.php';\n"
            ),
            pairs(&[
                ("namespace", "A\\B"),
                ("use", "C\\D"),
                ("use", "E\\F"),
                ("use_static", "H\\i"),
                ("use", "J\\K"),
                ("use", "J\\L\\M"),
                ("require", "./x.php"),
                ("include", "y.php"),
                ("require", "./z.php"),
                ("require", "./lib/w.php"),
            ])
        );
        let php = imports(
            Lang::Php,
            "<?php\nrequire_once __DIR__ . '/x.php';\ndefine('R', __DIR__ . '/lib');\nrequire R . '/w.php';\n",
        );
        assert!(!php[0].dynamic, "__DIR__ . 'literal' is static PHP: {php:?}");
        assert!(php[1].dynamic && !php[1].unresolvable, "a user constant is folded: {php:?}");
        assert_eq!(
            specs(
                Lang::Ruby,
                "require 'a'\nX = 'q'\nrequire_relative \"b/#{X}\"\nrequire File.join(__dir__, 'x')\nrequire File.expand_path('../y', __FILE__)\nautoload :Foo, 'foo'\n"
            ),
            pairs(&[
                ("require", "a"),
                ("require_relative", "b/q"),
                ("require_relative", "./x"),
                ("require_relative", "./y"),
                ("require", "foo")
            ])
        );
        assert_eq!(
            specs(
                Lang::Lua,
                "local a = require(\"a.b\")\nlocal b = require \"c\"\nlocal P = \"x\"\nlocal c = require(P .. \".y\")\ndofile(\"z.lua\")\n"
            ),
            pairs(&[("require", "a.b"), ("require", "c"), ("require", "x.y"), ("load_path", "z.lua")])
        );
        assert_eq!(
            specs(
                Lang::Dart,
                "library foo;\nimport 'a.dart' as b show c;\nimport 'package:x/y.dart';\nexport 'e.dart';\npart 'p.dart';\n"
            ),
            pairs(&[
                ("library", "foo"),
                ("import", "a.dart"),
                ("import", "package:x/y.dart"),
                ("export", "e.dart"),
                ("part", "p.dart")
            ])
        );
        assert_eq!(specs(Lang::Dart, "part of 'todo.dart';\n"), pairs(&[("part_of", "todo.dart")]));
        let conditional = imports(Lang::Dart, "import 'a.dart';\nimport 'c1.dart' if (dart.library.io) 'c2.dart';\n");
        assert_eq!(conditional.len(), 2, "{conditional:?}");
        assert_eq!(
            (conditional[1].spec.as_str(), conditional[1].candidates.clone()),
            ("c1.dart", vec!["c2.dart".to_string()])
        );
        // Double quotes in a configuration trip the grammar; the error node's text still has it.
        let broken = imports(Lang::Dart, "part 'p.dart';\nimport \"c1.dart\" if (dart.library.io) \"c2.dart\";\n");
        let got: Vec<(&str, &str, Vec<String>)> =
            broken.iter().map(|i| (i.kind.as_str(), i.spec.as_str(), i.candidates.clone())).collect();
        assert_eq!(got, vec![("part", "p.dart", vec![]), ("import", "c1.dart", vec!["c2.dart".to_string()])]);
        assert_eq!(
            specs(Lang::Swift, "@testable import Foo\nimport struct Bar.Baz\nimport Qux\n"),
            pairs(&[("import", "Foo"), ("import", "Bar"), ("import", "Qux")])
        );
    }

    #[test]
    fn imports_survive_syntax_errors_nearby() {
        let py = specs(Lang::Python, "import os\nprint \"py2\"\nif x:\n    import json\n    print \"again\"\n");
        assert!(py.contains(&("import".to_string(), "json".to_string())), "{py:?}");
        let js = specs(Lang::JavaScript, "import a from './a';\nconst = ;\nimport b from './b';\n");
        assert!(js.contains(&("import".to_string(), "./b".to_string())), "{js:?}");
    }

    #[test]
    fn serialization_skips_empty_fields_and_reads_old_records() {
        let i = RawImport::new(kind::IMPORT, "./a", 3);
        let json = serde_json::to_string(&i).expect("json");
        assert_eq!(json, r#"{"spec":"./a","line":3,"kind":"import"}"#);
        let back: RawImport = serde_json::from_str(r#"{"spec":"x","line":1,"kind":"use","names":["a"]}"#).expect("old");
        assert_eq!(back.names, vec!["a"]);
        assert!(!back.dynamic && back.candidates.is_empty());
    }
}
