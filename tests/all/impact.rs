//! The import/impact graph over the per-language fixtures in `tests/fixtures/code/`: golden
//! edges, cycles, diagnostics, the import map, storage and migration, and the CLI.

use crate::util::{quiet, write, Env};
use docdex::engine::code::graph::{self, FileImports, ImpactGraph};
use docdex::engine::code::impact::{DiagnosticsRequest, Direction, ImpactRequest, Relation, Side};
use docdex::engine::code::{imports, lang, Lang};
use docdex::engine::IndexOptions;
use docdex::Engine;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/code")
}

/// Every code file under `dir`, repo-relative, sorted.
fn code_files(dir: &Path) -> Vec<(String, Lang)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read_dir") {
            let p = entry.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if let Some(l) = Lang::from_path(&p) {
                let rel = p.strip_prefix(dir).expect("prefix").to_string_lossy().replace('\\', "/");
                out.push((rel, l));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn fixtures_parse_without_errors() {
    let mut seen = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(fixtures()).expect("fixtures") {
        let dir = entry.expect("entry").path();
        if !dir.is_dir() {
            continue;
        }
        for (rel, l) in code_files(&dir) {
            let src = std::fs::read_to_string(dir.join(&rel)).expect("read");
            let tree = lang::parse(l, &src).expect("parse");
            assert!(
                !tree.root_node().has_error(),
                "{}/{rel} has syntax errors: {}",
                dir.display(),
                tree.root_node().to_sexp()
            );
            seen.insert(l);
        }
    }
    assert_eq!(seen.len(), Lang::ALL.len(), "every grammar has a fixture file: {seen:?}");
}

// ---------------------------------------------------------------------------------------------
// Building graphs from the fixtures, the way the indexing pipeline does: parse each code file,
// extract its imports, then build the graph from every file's imports.

/// Every file under `dir` (code or not), repo-relative, sorted.
fn all_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read_dir") {
            let p = entry.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).expect("prefix").to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out.sort();
    out
}

/// Parses and extracts every code file of a repository directory.
fn file_imports(dir: &Path) -> Vec<FileImports> {
    code_files(dir)
        .into_iter()
        .map(|(rel, l)| {
            let src = std::fs::read_to_string(dir.join(&rel)).expect("read");
            let tree = lang::parse(l, &src).expect("parse");
            FileImports { path: rel, lang: l, imports: imports::extract(l, &tree, &src) }
        })
        .collect()
}

fn build_dir(dir: &Path) -> ImpactGraph {
    let known: BTreeSet<String> = all_files(dir).into_iter().collect();
    graph::build(dir, &file_imports(dir), &known, &Default::default())
}

fn build_fixture(name: &str) -> ImpactGraph {
    build_dir(&fixtures().join(name))
}

/// `source -> target method` for every edge, sorted.
fn edge_lines(g: &ImpactGraph) -> Vec<String> {
    let mut v: Vec<String> = g
        .edges
        .iter()
        .map(|e| {
            let m = serde_json::to_value(e.method).expect("method");
            format!("{} -> {} {}", e.source, e.target, m.as_str().expect("str"))
        })
        .collect();
    v.sort();
    v
}

fn golden(lines: &str) -> Vec<String> {
    let mut v: Vec<String> = lines.lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from).collect();
    v.sort();
    v
}

/// Asserts the exact edge set of a fixture, that it has no unresolved imports, that every
/// external target stays external, and that it has a cycle.
fn assert_golden(name: &str, expected: &str) -> ImpactGraph {
    let g = build_fixture(name);
    let got = edge_lines(&g);
    let want = golden(expected);
    if got != want {
        let missing: Vec<&String> = want.iter().filter(|w| !got.contains(w)).collect();
        let extra: Vec<&String> = got.iter().filter(|w| !want.contains(w)).collect();
        panic!("{name}: edges differ\nmissing: {missing:#?}\nunexpected: {extra:#?}");
    }
    assert!(g.diagnostics.is_empty(), "{name}: unexpected diagnostics {:#?}", g.diagnostics);
    assert!(g.warnings.is_empty(), "{name}: unexpected warnings {:?}", g.warnings);
    let files = all_files(&fixtures().join(name));
    for e in &g.edges {
        assert_eq!(e.external, e.target.starts_with("ext:"), "{name}: {e:?}");
        if e.external {
            assert!(!files.contains(&e.target), "{name}: external {} bound to a file", e.target);
            assert_eq!(e.confidence, 1.0);
        } else {
            assert!(files.contains(&e.target), "{name}: {} is not a fixture file", e.target);
            assert!(e.confidence > 0.0 && e.confidence <= 1.0);
            assert!(e.line >= 1);
        }
    }
    assert!(g.edges.iter().any(|e| e.external), "{name} imports an external package");
    assert!(!g.cycles.is_empty(), "{name} has an import cycle");
    g
}

fn cycle_sets(g: &ImpactGraph) -> Vec<Vec<String>> {
    g.cycles.iter().map(|c| c.files.clone()).collect()
}

#[test]
fn rust_edges_follow_mod_use_path_and_include() {
    let g = assert_golden(
        "rust",
        "src/extra/legacy_impl.rs -> src/lib.rs static
        src/geometry/circle.rs -> src/geometry/mod.rs static
        src/geometry/circle.rs -> src/render.rs static
        src/geometry/mod.rs -> ext:serde static
        src/geometry/mod.rs -> src/geometry/circle.rs static
        src/geometry/mod.rs -> src/util.rs static
        src/lib.rs -> src/extra/legacy_impl.rs static
        src/lib.rs -> src/geometry/mod.rs static
        src/lib.rs -> src/render.rs static
        src/lib.rs -> src/util.rs static
        src/main.rs -> ext:std static
        src/main.rs -> src/geometry/circle.rs static
        src/main.rs -> src/render.rs static
        src/render.rs -> ext:std static
        src/render.rs -> src/geometry/circle.rs static
        src/util.rs -> data/header.txt static",
    );
    // circle.rs and render.rs use each other: a cycle. A parent's `mod` (or `#[path] mod`)
    // declaration with its child's `use super::` back is not one (graph::DECLARATIONS).
    assert_eq!(cycle_sets(&g), vec![vec!["src/geometry/circle.rs", "src/render.rs"]]);
    let mod_path = g.edges.iter().find(|e| e.target == "src/extra/legacy_impl.rs").expect("#[path] edge");
    assert_eq!((mod_path.kind.as_str(), mod_path.line), ("mod_path", 8));
}

#[test]
fn typescript_edges_use_tsconfig_paths_index_files_and_js_extensions() {
    let g = assert_golden(
        "typescript",
        "src/components/UserCard.tsx -> ext:react static
        src/components/UserCard.tsx -> src/models/user.ts static
        src/components/UserCard.tsx -> src/services/userService.ts static
        src/index.ts -> src/components/UserCard.tsx static
        src/index.ts -> src/config.ts static
        src/index.ts -> src/models/user.ts static
        src/index.ts -> src/services/userService.ts static
        src/index.ts -> src/utils/index.ts static
        src/models/user.ts -> src/config.ts static
        src/services/userService.ts -> ext:axios static
        src/services/userService.ts -> src/components/UserCard.tsx static
        src/services/userService.ts -> src/models/user.ts static
        src/utils/index.ts -> src/utils/strings.ts static",
    );
    assert_eq!(cycle_sets(&g), vec![vec!["src/components/UserCard.tsx", "src/services/userService.ts"]]);
}

#[test]
fn javascript_edges_resolve_require_esm_jsx_and_directory_index() {
    assert_golden(
        "javascript",
        "components/Button.jsx -> ext:react static
        components/Button.jsx -> lib/logger.js static
        index.js -> ext:lodash static
        index.js -> lib/logger.js static
        index.js -> lib/server.js static
        lib/logger.js -> ext:node:fs static
        lib/routes/index.js -> lib/server.js static
        lib/server.js -> lib/logger.js static
        lib/server.js -> lib/routes/index.js static",
    );
}

#[test]
fn python_edges_use_package_roots_relative_imports_and_submodules() {
    let g = assert_golden(
        "python",
        "scripts/helpers.py -> ext:os static
        scripts/report.py -> ext:sys static
        scripts/report.py -> scripts/helpers.py heuristic
        scripts/report.py -> src/inventory/__init__.py static
        scripts/report.py -> src/inventory/utils/fmt.py static
        src/inventory/__init__.py -> src/inventory/models.py static
        src/inventory/__init__.py -> src/inventory/store.py static
        src/inventory/models.py -> ext:dataclasses static
        src/inventory/models.py -> ext:enum static
        src/inventory/pricing.py -> src/inventory/store.py static
        src/inventory/store.py -> ext:requests static
        src/inventory/store.py -> src/inventory/models.py static
        src/inventory/store.py -> src/inventory/pricing.py static
        src/inventory/utils/fmt.py -> src/inventory/models.py static
        tests/test_store.py -> ext:pytest static
        tests/test_store.py -> src/inventory/models.py static
        tests/test_store.py -> src/inventory/store.py static",
    );
    assert_eq!(cycle_sets(&g), vec![vec!["src/inventory/pricing.py", "src/inventory/store.py"]]);
}

#[test]
fn go_imports_bind_every_non_test_file_of_the_package_directory() {
    let g = assert_golden(
        "go",
        "internal/audit/audit.go -> ext:log static
        internal/audit/audit.go -> internal/cart/cart.go static
        internal/audit/audit.go -> internal/cart/discount.go static
        internal/cart/cart.go -> ext:github.com/google/uuid static
        internal/cart/cart.go -> pkg/money/money.go static
        internal/cart/discount.go -> internal/audit/audit.go static
        internal/cart/discount.go -> pkg/money/money.go static
        main.go -> ext:fmt static
        main.go -> internal/cart/cart.go static
        main.go -> internal/cart/discount.go static
        main.go -> pkg/money/money.go static
        pkg/money/money.go -> ext:fmt static
        pkg/money/money_test.go -> ext:testing static",
    );
    assert_eq!(cycle_sets(&g), vec![vec!["internal/audit/audit.go", "internal/cart/discount.go"]]);
}

#[test]
fn java_imports_resolve_classes_wildcards_and_static_members() {
    let g = assert_golden(
        "java",
        "src/main/java/com/acme/app/App.java -> ext:com.google.common.collect static
        src/main/java/com/acme/app/App.java -> ext:java.util static
        src/main/java/com/acme/app/App.java -> src/main/java/com/acme/model/Order.java static
        src/main/java/com/acme/app/App.java -> src/main/java/com/acme/service/DefaultPricing.java heuristic
        src/main/java/com/acme/app/App.java -> src/main/java/com/acme/service/PricingService.java heuristic
        src/main/java/com/acme/model/Order.java -> ext:java.util static
        src/main/java/com/acme/model/Order.java -> src/main/java/com/acme/service/PricingService.java static
        src/main/java/com/acme/service/DefaultPricing.java -> src/main/java/com/acme/model/LineItem.java static
        src/main/java/com/acme/service/DefaultPricing.java -> src/main/java/com/acme/model/Order.java static
        src/main/java/com/acme/service/PricingService.java -> src/main/java/com/acme/model/Order.java static",
    );
    let wildcard = g.edges.iter().find(|e| e.spec == "com.acme.service.*").expect("wildcard edge");
    assert_eq!(wildcard.confidence, 0.7);
}

#[test]
fn kotlin_imports_resolve_classes_top_level_functions_and_wildcards() {
    assert_golden(
        "kotlin",
        "src/main/kotlin/com/acme/notes/App.kt -> ext:kotlinx.coroutines static
        src/main/kotlin/com/acme/notes/App.kt -> src/main/kotlin/com/acme/notes/data/Note.kt static
        src/main/kotlin/com/acme/notes/App.kt -> src/main/kotlin/com/acme/notes/data/NoteRepository.kt static
        src/main/kotlin/com/acme/notes/App.kt -> src/main/kotlin/com/acme/notes/util/Strings.kt heuristic
        src/main/kotlin/com/acme/notes/data/NoteRepository.kt -> src/main/kotlin/com/acme/notes/util/Strings.kt heuristic
        src/main/kotlin/com/acme/notes/util/Strings.kt -> src/main/kotlin/com/acme/notes/data/Note.kt heuristic
        src/main/kotlin/com/acme/notes/util/Strings.kt -> src/main/kotlin/com/acme/notes/data/NoteRepository.kt heuristic",
    );
}

#[test]
fn csharp_usings_bind_the_files_declaring_the_namespace() {
    assert_golden(
        "csharp",
        "Models/Product.cs -> Services/Catalog.cs heuristic
        Models/Product.cs -> ext:System.Collections.Generic static
        Program.cs -> Models/IEntity.cs heuristic
        Program.cs -> Models/Product.cs heuristic
        Program.cs -> Services/Catalog.cs heuristic
        Program.cs -> ext:Newtonsoft.Json static
        Program.cs -> ext:System static
        Services/Catalog.cs -> Models/IEntity.cs heuristic
        Services/Catalog.cs -> Models/Product.cs heuristic
        Services/Catalog.cs -> ext:System.Collections.Generic static",
    );
}

#[test]
fn c_includes_resolve_beside_the_file_then_in_include_dirs() {
    assert_golden(
        "c",
        "src/list.c -> ext:stdlib.h static
        src/list.c -> src/list.h static
        src/list.h -> src/node.h static
        src/main.c -> ext:stdio.h static
        src/main.c -> include/vec.h heuristic
        src/main.c -> src/list.h static
        src/node.h -> include/vec.h heuristic
        src/node.h -> src/list.h static
        src/vec.c -> ext:math.h static
        src/vec.c -> include/vec.h heuristic",
    );
}

#[test]
fn cpp_includes_resolve_nested_include_dirs() {
    assert_golden(
        "cpp",
        "include/geo/circle.hpp -> include/geo/shape.hpp static
        src/circle.cpp -> ext:cmath static
        src/circle.cpp -> include/geo/circle.hpp heuristic
        src/factory.hpp -> src/registry.hpp static
        src/main.cpp -> ext:fmt/core.h static
        src/main.cpp -> include/geo/circle.hpp heuristic
        src/main.cpp -> src/registry.hpp static
        src/registry.hpp -> ext:vector static
        src/registry.hpp -> src/factory.hpp static",
    );
}

#[test]
fn php_uses_psr4_and_folds_require_paths() {
    assert_golden(
        "php",
        "bootstrap.php -> config.php heuristic
        index.php -> bootstrap.php static
        index.php -> src/Controller/PostController.php static
        src/Controller/PostController.php -> ext:Monolog static
        src/Controller/PostController.php -> src/Model/Post.php static
        src/Controller/PostController.php -> src/Repository/PostRepository.php static
        src/Model/Post.php -> src/Repository/PostRepository.php static
        src/Repository/PostRepository.php -> src/Model/Post.php static",
    );
}

#[test]
fn ruby_requires_use_the_lib_load_path_and_relative_paths() {
    assert_golden(
        "ruby",
        "bin/catalog.rb -> ext:optparse static
        bin/catalog.rb -> lib/library.rb static
        lib/library.rb -> ext:json static
        lib/library.rb -> lib/library/book.rb static
        lib/library.rb -> lib/library/shelf.rb static
        lib/library/book.rb -> lib/library/shelf.rb static
        lib/library/shelf.rb -> lib/library/book.rb static",
    );
}

#[test]
fn lua_requires_map_dots_to_directories_and_init_files() {
    assert_golden(
        "lua",
        "app/models/init.lua -> app/util.lua static
        app/util.lua -> app/config.lua static
        app/util.lua -> app/models/init.lua static
        main.lua -> app/config.lua static
        main.lua -> app/util.lua static
        main.lua -> ext:cjson static",
    );
}

#[test]
fn dart_imports_resolve_package_uris_through_pubspec_and_parts() {
    assert_golden(
        "dart",
        "bin/main.dart -> ext:dart:io static
        bin/main.dart -> lib/todo_app.dart static
        lib/src/models/todo.dart -> lib/src/models/todo.g.dart static
        lib/src/models/todo.dart -> lib/src/services/todo_service.dart static
        lib/src/services/todo_service.dart -> ext:http static
        lib/src/services/todo_service.dart -> lib/src/models/todo.dart static
        lib/todo_app.dart -> lib/src/models/todo.dart static
        lib/todo_app.dart -> lib/src/services/todo_service.dart static",
    );
}

#[test]
fn swift_imports_bind_swiftpm_target_files_at_module_level() {
    let g = assert_golden(
        "swift",
        "Package.swift -> ext:PackageDescription static
        Sources/App/Deposit.swift -> Sources/Core/Hooks.swift heuristic
        Sources/App/Deposit.swift -> Sources/Core/MemoryLedger.swift heuristic
        Sources/App/Deposit.swift -> Sources/Core/Models.swift heuristic
        Sources/App/main.swift -> Sources/Core/Hooks.swift heuristic
        Sources/App/main.swift -> Sources/Core/MemoryLedger.swift heuristic
        Sources/App/main.swift -> Sources/Core/Models.swift heuristic
        Sources/App/main.swift -> ext:ArgumentParser static
        Sources/Core/Hooks.swift -> Sources/App/Deposit.swift heuristic
        Sources/Core/Hooks.swift -> Sources/App/main.swift heuristic
        Sources/Core/MemoryLedger.swift -> ext:Foundation static
        Sources/Core/Models.swift -> ext:Foundation static",
    );
    assert!(g.edges.iter().filter(|e| !e.external).all(|e| e.confidence == 0.5));
}

// ---------------------------------------------------------------------------------------------
// Dynamic imports, diagnostics and the import map.

/// Copies a fixture into a fresh directory (tests that change files or index them).
fn copy_fixture(name: &str, to: &Path) {
    let from = fixtures().join(name);
    for rel in all_files(&from) {
        write(to, &rel, std::fs::read(from.join(&rel)).expect("read"));
    }
}

fn diag_lines(g: &ImpactGraph) -> Vec<String> {
    g.diagnostics
        .iter()
        .map(|d| {
            format!(
                "{}:{} {} {}",
                d.source,
                d.line,
                d.spec,
                serde_json::to_value(d.code).expect("code").as_str().expect("str")
            )
        })
        .collect()
}

fn edge<'g>(g: &'g ImpactGraph, source: &str, target: &str) -> &'g graph::Edge {
    g.edges
        .iter()
        .find(|e| e.source == source && e.target == target)
        .unwrap_or_else(|| panic!("no edge {source} -> {target}"))
}

#[test]
fn dynamic_imports_fold_constants_joins_templates_and_fstrings() {
    let g = build_fixture("dynamic");
    assert_eq!(
        edge_lines(&g),
        golden(
            "js/loader.js -> config/legacy.js import_map
            js/loader.js -> ext:path static
            js/loader.js -> js/plugins/alpha.js heuristic
            js/loader.js -> js/plugins/beta.js heuristic
            js/loader.js -> js/plugins/fast.js heuristic
            js/loader.js -> js/plugins/safe.js heuristic
            js/loader.js -> js/themes/dark.js import_map
            js/loader.js -> js/themes/light.js import_map
            js/loader.js -> js/widgets/chart.js import_map
            js/loader.js -> js/widgets/table.js import_map
            py/app.py -> ext:importlib static
            py/app.py -> ext:os static
            py/app.py -> py/plugins/delta.py heuristic
            py/app.py -> py/plugins/epsilon.py heuristic
            py/app.py -> py/plugins/eta.py static
            py/app.py -> py/plugins/gamma.py static
            py/app.py -> py/plugins/zeta.py heuristic"
        )
    );
    // Folded expressions are heuristic; two candidates share the doubt; the map sets its own.
    assert_eq!(edge(&g, "js/loader.js", "js/plugins/alpha.js").confidence, 0.8);
    assert_eq!(edge(&g, "js/loader.js", "js/plugins/alpha.js").line, 7);
    assert_eq!(edge(&g, "js/loader.js", "js/plugins/fast.js").confidence, 0.6);
    assert_eq!(edge(&g, "js/loader.js", "js/plugins/safe.js").spec, "./plugins/safe");
    assert_eq!(edge(&g, "js/loader.js", "js/widgets/chart.js").confidence, 0.7);
    assert_eq!(edge(&g, "js/loader.js", "js/themes/dark.js").confidence, 1.0);
    assert_eq!(edge(&g, "py/app.py", "py/plugins/delta.py").spec, "plugins.delta");
    assert_eq!(edge(&g, "py/app.py", "py/plugins/epsilon.py").kind, "load_path");
    // What cannot be folded is reported, never dropped.
    assert_eq!(
        diag_lines(&g),
        vec![
            "js/loader.js:18 ./plugins/* dynamic",
            "js/loader.js:22 * dynamic",
            "py/app.py:28 plugins.* dynamic",
            "py/app.py:33 * dynamic",
        ]
    );
    let d = &g.diagnostics[0];
    assert_eq!(d.expr, "'./plugins/' + name");
    assert!(d.reason.contains("docdex.import_map.json"), "{}", d.reason);
    assert_eq!(g.stats.unresolved, 4);
    assert_eq!(g.stats.by_method.get("import_map"), Some(&5));
}

#[test]
fn without_the_import_map_the_mapped_imports_stay_external_or_unresolved() {
    let env = Env::new();
    let repo = env.repo("dyn");
    copy_fixture("dynamic", &repo);
    std::fs::remove_file(repo.join("docdex.import_map.json")).expect("rm map");
    let g = build_dir(&repo);
    assert!(g.edges.iter().any(|e| e.target == "ext:legacy-config" && e.external), "bare spec is a package");
    assert!(!g.edges.iter().any(|e| e.target.starts_with("js/themes/") || e.target.starts_with("js/widgets/")));
    let lines = diag_lines(&g);
    assert!(lines.contains(&"js/loader.js:29 ./themes/* dynamic".to_string()), "{lines:?}");
    assert!(lines.contains(&"js/loader.js:34 ./widgets/* dynamic".to_string()), "{lines:?}");
}

#[test]
fn import_map_problems_are_reported() {
    let env = Env::new();
    let repo = env.repo("dyn");
    copy_fixture("dynamic", &repo);
    write(
        &repo,
        "docdex.import_map.json",
        r#"{"version": 1, "mappings": [
            {"spec": "legacy-config", "targets": ["config/gone.js"]},
            {"spec": "./themes/*", "external": "theme-pack"}
        ]}"#,
    );
    let g = build_dir(&repo);
    let d = g.diagnostics.iter().find(|d| d.spec == "legacy-config").expect("map diagnostic");
    assert_eq!(serde_json::to_value(d.code).expect("code"), "import_map");
    assert!(d.reason.contains("config/gone.js") && d.reason.contains("mapping 1"), "{}", d.reason);
    assert!(g.edges.iter().any(|e| e.target == "ext:theme-pack"));

    write(&repo, "docdex.import_map.json", r#"{"version": 1, "mapings": []}"#);
    let g = build_dir(&repo);
    assert!(
        g.warnings.iter().any(|w| w.contains("docdex.import_map.json is not valid") && w.contains("mapings")),
        "{:?}",
        g.warnings
    );
    assert!(g.edges.iter().any(|e| e.target == "ext:legacy-config"), "an invalid map is ignored");
}

#[test]
fn missing_files_are_diagnosed_with_what_was_tried() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "Cargo.toml", "[package]\nname = \"r\"\nedition = \"2021\"\n");
    write(&repo, "src/lib.rs", "mod gone;\nuse crate::a::b;\n");
    write(&repo, "web/app.ts", "import { x } from './missing';\nimport y from 'left-pad';\n");
    write(&repo, "py/pkg/__init__.py", "from .nothere import z\n");
    write(&repo, "c/main.c", "#include \"config.h\"\n#include <stdio.h>\n");
    let g = build_dir(&repo);
    let lines = diag_lines(&g);
    assert_eq!(
        lines,
        vec![
            "c/main.c:1 config.h not_found",
            "py/pkg/__init__.py:1 .nothere not_found",
            "src/lib.rs:1 gone not_found",
            "web/app.ts:1 ./missing not_found"
        ]
    );
    let rust = g.diagnostics.iter().find(|d| d.spec == "gone").expect("mod");
    assert!(rust.reason.contains("src/gone.rs") && rust.reason.contains("src/gone/mod.rs"), "{}", rust.reason);
    let ts = g.diagnostics.iter().find(|d| d.spec == "./missing").expect("ts");
    assert!(ts.reason.contains("web/missing"), "{}", ts.reason);
    // `use crate::a::b` with no module `a` falls back to the crate root: a self-import, no edge.
    assert!(g.edges.iter().any(|e| e.target == "ext:left-pad"));
    assert!(g.edges.iter().any(|e| e.target == "ext:stdio.h"));
}

#[test]
fn runtime_import_traces_add_edges_and_resolve_dynamic_imports() {
    let env = Env::new();
    let repo = env.repo("traced");
    copy_fixture("dynamic", &repo);
    write(&repo, "py/plugins/omega.py", "def run():\n    return 'omega'\n");
    write(
        &repo,
        "docdex.import_traces.jsonl",
        "# seen in staging\n{\"source\": \"py/app.py\", \"target\": \"py/plugins/omega.py\", \"line\": 28}\n{\"source\": \"py/app.py\", \"target\": \"py/plugins/missing.py\"}\n",
    );
    let engine = env.engine();
    let r = engine.resolve_repo(&repo).expect("repo");
    std::fs::create_dir_all(&r.state_dir).expect("state dir");
    let local = serde_json::json!({"source": "js/loader.js", "target": "py/plugins/omega.py", "kind": "spawn", "confidence": 0.4});
    std::fs::write(r.state_dir.join("import_traces.jsonl"), format!("{local}\n")).expect("state traces");
    // The indexing pipeline builds the graph with the traces.
    engine.index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    let g = graph::load(&graph::graph_path(&r)).expect("load").expect("graph");
    let traced = edge(&g, "py/app.py", "py/plugins/omega.py");
    assert_eq!(
        (traced.method, traced.confidence, traced.line, traced.kind.as_str()),
        (graph::Method::Trace, 0.9, 28, "runtime")
    );
    assert_eq!(traced.spec, "plugins.*", "the trace names the import it resolves");
    let spawned = edge(&g, "js/loader.js", "py/plugins/omega.py");
    assert_eq!((spawned.method, spawned.confidence, spawned.kind.as_str()), (graph::Method::Trace, 0.4, "spawn"));
    assert_eq!(
        diag_lines(&g),
        vec!["js/loader.js:18 ./plugins/* dynamic", "js/loader.js:22 * dynamic", "py/app.py:33 * dynamic"],
        "the traced line is resolved, the others stay"
    );
    assert_eq!(g.stats.by_method.get("trace"), Some(&2));
    assert!(
        g.warnings.iter().any(|w| w.contains("docdex.import_traces.jsonl:3") && w.contains("py/plugins/missing.py")),
        "{:?}",
        g.warnings
    );
    // Editing the checked-in traces rebuilds the graph on the next run.
    write(
        &repo,
        "docdex.import_traces.jsonl",
        "{\"source\": \"py/app.py\", \"target\": \"py/plugins/omega.py\", \"line\": 33}\n",
    );
    engine.index(&repo, &IndexOptions::default(), &quiet()).expect("re-index");
    let g = graph::load(&graph::graph_path(&r)).expect("load").expect("graph");
    assert_eq!(edge(&g, "py/app.py", "py/plugins/omega.py").line, 33, "the edited trace is used");
    assert!(diag_lines(&g).contains(&"py/app.py:28 plugins.* dynamic".to_string()));
    // `[code_intelligence] import_traces_enabled = false` leaves them out.
    env.write_config("[code_intelligence]\nimport_traces_enabled = false\n");
    let engine = env.engine();
    engine.rebuild_impact_graph(&repo, &quiet()).expect("rebuild");
    let g = graph::load(&graph::graph_path(&r)).expect("load").expect("graph");
    assert!(!g.edges.iter().any(|e| e.method == graph::Method::Trace), "traces disabled");
    assert!(diag_lines(&g).contains(&"py/app.py:28 plugins.* dynamic".to_string()));
}

#[test]
fn the_dynamic_import_scan_limit_caps_candidates() {
    let env = Env::new();
    let repo = env.repo("dyn");
    copy_fixture("dynamic", &repo);
    let files = file_imports(&repo);
    let known: BTreeSet<String> = all_files(&repo).into_iter().collect();
    let opts = graph::GraphOptions { dynamic_import_scan_limit: 1, ..Default::default() };
    let g = graph::build(&repo, &files, &known, &opts);
    let full = build_dir(&repo);
    let fast_or_safe = |g: &ImpactGraph| {
        g.edges.iter().filter(|e| e.target == "js/plugins/fast.js" || e.target == "js/plugins/safe.js").count()
    };
    assert_eq!(fast_or_safe(&full), 2, "both candidates by default");
    assert_eq!(fast_or_safe(&g), 1, "one candidate with a limit of 1");
}

// ---------------------------------------------------------------------------------------------
// Storage, migration and the engine's queries.

fn indexed_fixture(env: &Env, name: &str) -> (PathBuf, Engine) {
    let repo = env.repo(name);
    copy_fixture(name, &repo);
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    engine.rebuild_impact_graph(&repo, &quiet()).expect("graph");
    (repo, engine)
}

#[test]
fn rebuild_writes_a_schema_tagged_graph_atomically() {
    let env = Env::new();
    let repo = env.repo("ts");
    copy_fixture("typescript", &repo);
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    let r = engine.resolve_repo(&repo).expect("repo");
    // What the indexing pipeline does after a run that changed code files.
    graph::rebuild(&r, &file_imports(&repo), &Default::default()).expect("rebuild");
    let path = graph::graph_path(&r);
    assert_eq!(path, r.state_dir.join("gen/impact_graph.json"), "in the live generation");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    assert_eq!(v["schema"], serde_json::json!({"name": "docdex.impact_graph", "version": 2}));
    assert_eq!(v["stats"]["files"], 7);
    assert_eq!(v["stats"]["edges"], 11);
    assert_eq!(v["edges"][0]["source"], "src/components/UserCard.tsx");
    let leftovers: Vec<String> = std::fs::read_dir(r.data_dir())
        .expect("ls")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temp files left: {leftovers:?}");
    let loaded = graph::load(&path).expect("load").expect("some");
    assert_eq!(loaded.edges.len(), 13);
}

#[test]
fn a_version_1_graph_is_migrated_in_memory() {
    let env = Env::new();
    let repo = env.repo("old");
    write(&repo, "a.py", "import b\n");
    write(&repo, "b.py", "import a\n");
    write(&repo, "c.py", "import a\n");
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    let r = engine.resolve_repo(&repo).expect("repo");
    let v1 = r#"{"edges": [{"source": "a.py", "target": "b.py"}, {"source": "b.py", "target": "a.py"}, {"source": "c.py", "target": "a.py"}]}"#;
    std::fs::write(graph::graph_path(&r), v1).expect("write v1");
    let resp = engine.impact(&repo, &ImpactRequest { file: "a.py".into(), ..Default::default() }).expect("impact");
    assert_eq!(resp.schema.version, 2);
    let inbound: Vec<&str> = resp.inbound.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(inbound, vec!["b.py", "c.py"]);
    assert_eq!(resp.outbound[0].edge.method, graph::Method::Static);
    assert!(resp.graph.warnings.iter().any(|w| w.contains("version 1")), "{:?}", resp.graph.warnings);
    assert!(resp.nodes[0].in_cycle);
    let cycles = engine.graph_cycles(&repo).expect("cycles");
    assert_eq!(cycles.cycles[0].files, vec!["a.py", "b.py"]);
    // The file on disk is untouched until the next index run rewrites it.
    assert_eq!(std::fs::read_to_string(graph::graph_path(&r)).expect("read"), v1);

    std::fs::write(graph::graph_path(&r), r#"{"schema": {"name": "docdex.impact_graph", "version": 9}}"#).expect("w");
    let err = engine.impact(&repo, &ImpactRequest { file: "a.py".into(), ..Default::default() }).expect_err("future");
    assert!(err.to_string().contains("version 9") && err.to_string().contains("docdex index"), "{err}");
    std::fs::write(graph::graph_path(&r), "{not json").expect("w");
    let err = engine.graph_cycles(&repo).expect_err("corrupt");
    assert_eq!(err.code(), "corrupt_state");
}

#[test]
fn impact_lists_both_directions_to_a_depth_and_every_dependent() {
    let env = Env::new();
    let (repo, engine) = indexed_fixture(&env, "python");
    let ask = |depth: u32, direction: Direction| {
        engine
            .impact(
                &repo,
                &ImpactRequest {
                    file: "src/inventory/models.py".into(),
                    depth: Some(depth),
                    direction: Some(direction),
                },
            )
            .expect("impact")
    };
    let r = ask(1, Direction::Both);
    let inbound: Vec<(&str, u32)> = r.inbound.iter().map(|d| (d.path.as_str(), d.depth)).collect();
    assert_eq!(
        inbound,
        vec![
            ("src/inventory/__init__.py", 1),
            ("src/inventory/store.py", 1),
            ("src/inventory/utils/fmt.py", 1),
            ("tests/test_store.py", 1)
        ]
    );
    for d in &r.inbound {
        assert_eq!(d.edge.target, "src/inventory/models.py", "inbound edges point at the file: {d:?}");
        assert_eq!(d.edge.source, d.path);
    }
    let outbound: Vec<&str> = r.outbound.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(outbound, vec!["ext:dataclasses", "ext:enum"]);
    assert!(r.outbound.iter().all(|d| d.external && d.edge.source == "src/inventory/models.py"));
    // Everything that may change: the whole transitive closure, whatever the depth.
    assert_eq!(
        r.affected,
        vec![
            "src/inventory/__init__.py",
            "src/inventory/store.py",
            "src/inventory/utils/fmt.py",
            "tests/test_store.py",
            "scripts/report.py",
            "src/inventory/pricing.py"
        ]
    );
    let r2 = ask(2, Direction::In);
    assert!(r2.outbound.is_empty());
    let second: Vec<(&str, u32)> =
        r2.inbound.iter().filter(|d| d.depth == 2).map(|d| (d.path.as_str(), d.depth)).collect();
    assert_eq!(second, vec![("scripts/report.py", 2), ("src/inventory/pricing.py", 2)]);
    let pricing = r2.inbound.iter().find(|d| d.path == "src/inventory/pricing.py").expect("pricing");
    assert_eq!(
        (pricing.edge.source.as_str(), pricing.edge.target.as_str()),
        ("src/inventory/pricing.py", "src/inventory/store.py")
    );
    // Nodes and edges for drawing.
    assert_eq!(r2.nodes[0].id, "src/inventory/models.py");
    assert_eq!(r2.nodes[0].side, Side::Root);
    let store = r2.nodes.iter().find(|n| n.id == "src/inventory/store.py").expect("store");
    assert!(store.in_cycle && store.side == Side::In && store.depth == 1 && store.lang.as_deref() == Some("python"));
    let ids: BTreeSet<&str> = r2.nodes.iter().map(|n| n.id.as_str()).collect();
    assert!(r2.edges.iter().all(|e| ids.contains(e.source.as_str()) && ids.contains(e.target.as_str())));
    assert!(r2.edges.iter().any(|e| e.source == "src/inventory/pricing.py" && e.target == "src/inventory/store.py"));
    let out = ask(3, Direction::Out);
    assert!(out.inbound.is_empty() && out.outbound.len() == 2);
}

#[test]
fn external_packages_and_unresolved_imports_are_flagged_on_nodes() {
    let env = Env::new();
    let (repo, engine) = indexed_fixture(&env, "dynamic");
    let r = engine.impact(&repo, &ImpactRequest { file: "js/loader.js".into(), ..Default::default() }).expect("impact");
    assert_eq!(r.nodes[0].unresolved_imports, 2);
    assert_eq!(r.diagnostics.len(), 2);
    let path = r.nodes.iter().find(|n| n.id == "ext:path").expect("external node");
    assert!(path.external && path.side == Side::Out && path.lang.is_none());
    // Who imports an external package.
    let r = engine.impact(&repo, &ImpactRequest { file: "ext:os".into(), ..Default::default() }).expect("ext");
    assert_eq!(r.inbound.iter().map(|d| d.path.as_str()).collect::<Vec<_>>(), vec!["py/app.py"]);
    let diags = engine.impact_diagnostics(&repo, &DiagnosticsRequest::default()).expect("diagnostics");
    assert_eq!((diags.total, diags.truncated), (4, false));
    assert_eq!(diags.files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), vec!["js/loader.js", "py/app.py"]);
    assert_eq!(diags.by_code.get("dynamic"), Some(&4));
    let one = DiagnosticsRequest { file: Some("py/app.py".into()), limit: None };
    assert_eq!(engine.impact_diagnostics(&repo, &one).expect("one file").total, 2);
    // A limit lists the first imports in path order, a file cut short; the counts stay whole.
    let three = engine.impact_diagnostics(&repo, &DiagnosticsRequest { file: None, limit: Some(3) }).expect("3");
    let listed: Vec<(&str, usize)> = three.files.iter().map(|f| (f.path.as_str(), f.diagnostics.len())).collect();
    assert_eq!(listed, vec![("js/loader.js", 2), ("py/app.py", 1)]);
    assert_eq!((three.total, three.truncated, three.by_code.get("dynamic")), (4, true, Some(&4)));
}

#[test]
fn neighbors_expand_changed_files_one_hop_both_ways() {
    let env = Env::new();
    let (repo, engine) = indexed_fixture(&env, "typescript");
    let changed = vec!["src/models/user.ts".to_string(), "./src/config.ts".to_string(), "README.md".to_string()];
    let n = engine.impact_neighbors(&repo, &changed, 1).expect("neighbors");
    let got: Vec<(&str, Relation)> = n.files.iter().map(|f| (f.path.as_str(), f.relation)).collect();
    assert_eq!(
        got,
        vec![
            ("src/components/UserCard.tsx", Relation::ImportsChanged),
            ("src/index.ts", Relation::ImportsChanged),
            ("src/services/userService.ts", Relation::ImportsChanged),
        ]
    );
    let index = &n.files[1];
    assert_eq!(index.changed, vec!["src/config.ts", "src/models/user.ts"]);
    assert_eq!(n.unknown, vec!["README.md"]);
    let n = engine.impact_neighbors(&repo, &["src/services/userService.ts".to_string()], 1).expect("n");
    let card = n.files.iter().find(|f| f.path == "src/components/UserCard.tsx").expect("card");
    assert_eq!(card.relation, Relation::Both, "a cycle partner is both a dependency and a dependent");
    assert!(n.files.iter().all(|f| !f.path.starts_with("ext:")));
}

#[test]
fn the_cached_graph_reloads_when_the_file_changes() {
    let env = Env::new();
    let (repo, engine) = indexed_fixture(&env, "lua");
    let before =
        engine.impact(&repo, &ImpactRequest { file: "app/config.lua".into(), ..Default::default() }).expect("a");
    assert_eq!(before.inbound.len(), 2);
    write(&repo, "app/extra.lua", "local c = require(\"app.config\")\nreturn c\n");
    engine.index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    engine.rebuild_impact_graph(&repo, &quiet()).expect("graph");
    let after =
        engine.impact(&repo, &ImpactRequest { file: "app/config.lua".into(), ..Default::default() }).expect("b");
    assert_eq!(after.inbound.len(), 3, "{:?}", after.inbound);
}

#[test]
fn bad_queries_say_what_is_wrong() {
    let env = Env::new();
    let (repo, engine) = indexed_fixture(&env, "go");
    let ask = |file: &str, depth: Option<u32>| {
        engine.impact(&repo, &ImpactRequest { file: file.into(), depth, direction: None })
    };
    let err = ask("nope.go", None).expect_err("unknown");
    assert_eq!(err.code(), "not_found");
    assert!(err.to_string().contains("nope.go") && err.to_string().contains("no such file"), "{err}");
    let err = ask("go.mod", None).expect_err("not code");
    assert!(err.to_string().contains("not a code file"), "{err}");
    // A folder and an external package nothing imports were "no such file in the repository".
    let err = ask("internal", None).expect_err("a directory");
    assert!(err.to_string().contains("is a directory") && !err.to_string().contains("no such file"), "{err}");
    // A link inside the repository to a code file: the index does not follow it; name the file.
    std::os::unix::fs::symlink("main.go", repo.join("alias.go")).expect("symlink");
    let err = ask("alias.go", None).expect_err("a link");
    assert!(err.to_string().contains("symbolic link") && err.to_string().contains("ask for main.go"), "{err}");
    let err = ask("ext:nothing-imports-this", None).expect_err("unknown package");
    assert!(err.to_string().contains("no file of the repository imports the external package"), "{err}");
    assert_eq!(ask("../outside.go", None).expect_err("outside").code(), "path_outside_repo");
    assert_eq!(ask("main.go", Some(0)).expect_err("depth").code(), "bad_request");
    let abs = repo.join("main.go");
    assert_eq!(ask(abs.to_str().expect("utf8"), None).expect("absolute path").file, "main.go");
    let fresh = env.repo("fresh");
    write(&fresh, "a.go", "package a\n");
    let err = engine.impact(&fresh, &ImpactRequest { file: "a.go".into(), ..Default::default() }).expect_err("none");
    assert_eq!(err.code(), "not_indexed");
    // Indexed, no code: the first index wrote an empty graph, with nothing to rebuild.
    let docs = env.repo("docs");
    write(&docs, "README.md", "# docs only\n");
    engine.index(&docs, &IndexOptions::default(), &quiet()).expect("index");
    let cycles = engine.graph_cycles(&docs).expect("empty graph");
    assert!(cycles.cycles.is_empty());
    assert!(cycles.graph.warnings.is_empty(), "{:?}", cycles.graph.warnings);
    let err = engine.impact(&docs, &ImpactRequest { file: "README.md".into(), ..Default::default() }).expect_err("x");
    assert!(err.to_string().contains("not a code file"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// The command line.

#[test]
fn impact_cli_prints_the_json_contract() {
    let env = Env::new();
    let repo = env.repo("ts");
    copy_fixture("typescript", &repo);
    let r = repo.to_str().expect("utf8");
    env.json(&["index", "--repo", r, "--json"]);
    let rebuilt = env.json(&["graph", "rebuild", "--repo", r, "--json"]);
    assert_eq!(rebuilt["stats"]["edges"], 11);
    let v = env.json(&["impact", "--repo", r, "--file", "src/models/user.ts", "--depth", "2", "--json"]);
    assert_eq!(v["schema"]["name"], "docdex.impact_graph");
    assert_eq!(v["schema"]["version"], 2);
    assert_eq!(v["file"], "src/models/user.ts");
    assert_eq!(v["direction"], "both");
    assert_eq!(v["depth"], 2);
    assert!(v["edge_semantics"].as_str().expect("str").starts_with("source -> target"));
    let inbound: Vec<&str> =
        v["inbound"].as_array().expect("in").iter().map(|d| d["path"].as_str().expect("p")).collect();
    assert_eq!(inbound, vec!["src/components/UserCard.tsx", "src/index.ts", "src/services/userService.ts"]);
    assert_eq!(v["outbound"][0]["path"], "src/config.ts");
    assert_eq!(v["outbound"][0]["edge"]["source"], "src/models/user.ts");
    assert_eq!(v["outbound"][0]["edge"]["target"], "src/config.ts");
    assert_eq!(v["outbound"][0]["edge"]["method"], "static");
    assert_eq!(v["outbound"][0]["edge"]["confidence"], 1.0);
    assert_eq!(v["outbound"][0]["edge"]["line"], 1);
    assert_eq!(v["affected"].as_array().expect("a").len(), 3);
    let nodes = v["nodes"].as_array().expect("nodes");
    assert_eq!(nodes[0]["side"], "root");
    for n in nodes {
        for key in ["id", "external", "depth", "side", "in_cycle", "unresolved_imports"] {
            assert!(!n[key].is_null(), "node lacks {key}: {n}");
        }
    }
    let card = nodes.iter().find(|n| n["id"] == "src/components/UserCard.tsx").expect("card");
    assert_eq!(card["in_cycle"], true);
    assert!(!v["edges"].as_array().expect("edges").is_empty());

    let cycles = env.json(&["graph", "cycles", "--repo", r, "--json"]);
    assert_eq!(
        cycles["cycles"][0]["files"],
        serde_json::json!(["src/components/UserCard.tsx", "src/services/userService.ts"])
    );
    assert_eq!(cycles["files_in_cycles"], 2);
    let diags = env.json(&["impact", "diagnostics", "--repo", r, "--json"]);
    assert_eq!(diags["total"], 0);

    let human = env.run(&["impact", "--repo", r, "--file", "src/models/user.ts"]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("src/index.ts -> src/models/user.ts"), "{text}");
    assert!(text.contains("src/models/user.ts -> src/config.ts"), "{text}");
    assert!(text.contains("may change if it changes: 3 files"), "{text}");
    let human = env.run(&["graph", "cycles", "--repo", r]);
    assert!(String::from_utf8_lossy(&human.stdout).contains(
        "cycle 1 (2 files): src/components/UserCard.tsx -> src/services/userService.ts -> src/components/UserCard.tsx"
    ));
}

#[test]
fn impact_cli_errors_use_the_exit_codes() {
    let env = Env::new();
    let repo = env.repo("dyn");
    copy_fixture("dynamic", &repo);
    let r = repo.to_str().expect("utf8");
    let out = env.run(&["impact", "--repo", r, "--file", "js/loader.js"]);
    assert_eq!(out.status.code(), Some(3), "not indexed yet");
    assert!(String::from_utf8_lossy(&out.stderr).contains("docdex index"));
    env.json(&["index", "--repo", r, "--json"]);
    env.json(&["graph", "rebuild", "--repo", r, "--json"]);
    let out = env.run(&["impact", "--repo", r, "--file", "js/nope.js", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json error");
    assert_eq!(v["error"]["code"], "not_found");
    let out = env.run(&["impact", "--repo", r]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("name a file"));
    let out = env.run(&["impact", "--repo", r, "--file", "js/loader.js", "--direction", "sideways"]);
    assert_eq!(out.status.code(), Some(2), "clap rejects a bad direction");
    let diags = env.json(&["impact", "diagnostics", "--repo", r, "--json"]);
    assert_eq!(diags["total"], 4);
    assert_eq!(diags["files"][0]["diagnostics"][0]["code"], "dynamic");
    let human = env.run(&["impact", "diagnostics", "--repo", r]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains("line 18: require ./plugins/*") && text.contains("4 unresolved imports in 2 files"),
        "{text}"
    );
    // `--repo` before the subcommand, as every other command takes it (it read `diagnostics`
    // as the FILE and answered not_found).
    let before = env.json(&["impact", "--repo", r, "diagnostics", "--json"]);
    assert_eq!(before["total"], 4, "{before}");
}

/// `docdex impact --depth 3 diagnostics` printed the same list as without it, and `--depth` or
/// `--direction` with `--tests` were dropped too: a flag that changes nothing read as honoured.
/// Both walk no hops of the user's choosing, so the flags are refused (exit 2) saying what to
/// run instead. A file given before `diagnostics` (`impact --file F diagnostics`) was dropped
/// and the whole repository listed; it is now the file reported on.
#[test]
fn impact_flags_that_mean_nothing_are_refused_and_a_file_before_diagnostics_is_used() {
    let env = Env::new();
    let repo = env.repo("dyn");
    copy_fixture("dynamic", &repo);
    let r = repo.to_str().expect("utf8");
    env.json(&["index", "--repo", r, "--json"]);
    for args in [
        &["impact", "--repo", r, "--depth", "3", "diagnostics"][..],
        &["impact", "--repo", r, "--direction", "in", "diagnostics", "--json"],
        &["impact", "--repo", r, "js/loader.js", "--tests", "--depth", "2"],
    ] {
        let out = env.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(text.contains("means nothing for") && text.contains("docdex impact"), "{args:?}: {text}");
    }
    let all = env.json(&["impact", "--repo", r, "diagnostics", "--json"]);
    let one = env.json(&["impact", "--repo", r, "--file", "js/loader.js", "diagnostics", "--json"]);
    assert_eq!(all["total"], 4);
    let files: Vec<&str> = one["files"].as_array().expect("files").iter().filter_map(|f| f["path"].as_str()).collect();
    assert_eq!(files, ["js/loader.js"], "{one}");
    let same = env.json(&["impact", "--repo", r, "js/loader.js", "diagnostics", "--file", "js/loader.js", "--json"]);
    assert_eq!(same["total"], one["total"]);
    let two = env.run(&["impact", "--repo", r, "--file", "js/loader.js", "diagnostics", "--file", "py/app.py"]);
    assert_eq!(two.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&two.stderr).contains("two files"), "{two:?}");
    // The flags still work where they mean something.
    let deep = env.json(&["impact", "--repo", r, "js/loader.js", "--depth", "2", "--direction", "out", "--json"]);
    assert!(deep["inbound"].as_array().expect("inbound").is_empty(), "{deep}");
}

#[test]
fn graph_rebuild_reports_progress_and_counts() {
    let env = Env::new();
    let repo = env.repo("c");
    copy_fixture("c", &repo);
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    let seen = std::sync::Mutex::new(Vec::new());
    let sink = |p: &docdex::engine::protocol::IndexProgress| {
        seen.lock().expect("lock").push((p.phase.clone(), p.files_done, p.files_total));
    };
    let summary = engine.rebuild_impact_graph(&repo, &sink).expect("rebuild");
    let seen = seen.into_inner().expect("lock");
    let phases: Vec<&str> = seen.iter().map(|(p, _, _)| p.as_str()).collect();
    assert_eq!(phases.first(), Some(&"parsing"));
    assert_eq!(phases.last(), Some(&"done"));
    assert!(phases.contains(&"resolving"));
    assert_eq!(seen.last().map(|s| (s.1, s.2)), Some((6, 6)), "six C files parsed: {seen:?}");
    assert_eq!((summary.stats.files, summary.stats.edges, summary.stats.external_edges), (6, 7, 3));
    assert!(summary.path.ends_with("impact_graph.json"));
}

/// `docdex graph rebuild` ran without the index writer lock, so it raced an index run (a
/// watcher's batch, `docdex index`) and could write a graph from a half-updated state. It now
/// takes the lock: a one-off holder is waited for (a few idle seconds at most) and the rebuild
/// runs once it lets go; one that holds on is refused with `index_busy`, and a watcher, which
/// holds the lock as long as it runs, is refused at once with the advice to stop it.
#[test]
fn graph_rebuild_takes_the_index_writer_lock() {
    let env = Env::new();
    let repo = env.repo("c");
    copy_fixture("c", &repo);
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    // A holder that lets go after a second: waited for, then the rebuild runs.
    let session = engine.open_index_session(&engine.resolve_repo(&repo).unwrap(), false).expect("session");
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(1000));
        drop(session);
    });
    let started = std::time::Instant::now();
    engine.rebuild_impact_graph(&repo, &quiet()).expect("rebuild after the holder let go");
    assert!(started.elapsed() >= std::time::Duration::from_millis(900), "it waited for the holder");
    releaser.join().unwrap();
    // A holder that never lets go: refused within the bound, the graph untouched.
    let graph = engine.resolve_repo(&repo).unwrap().data_dir().join(graph::FILE_NAME);
    let before = std::fs::metadata(&graph).unwrap().modified().unwrap();
    let session = engine.open_index_session(&engine.resolve_repo(&repo).unwrap(), false).expect("session");
    let started = std::time::Instant::now();
    let err = engine.rebuild_impact_graph(&repo, &quiet()).unwrap_err();
    assert!(started.elapsed() < std::time::Duration::from_secs(15), "{:?}", started.elapsed());
    assert_eq!(err.code(), "index_busy", "{err}");
    assert!(err.to_string().contains("run `docdex graph rebuild` again once it is done"), "{err}");
    assert_eq!(std::fs::metadata(&graph).unwrap().modified().unwrap(), before, "the graph was not rewritten");
    drop(session);
    // A watcher: refused at once, with the advice to stop it.
    let watcher = crate::util::Watcher::start(&engine, &repo);
    let started = std::time::Instant::now();
    let err = engine.rebuild_impact_graph(&repo, &quiet()).unwrap_err();
    assert!(started.elapsed() < std::time::Duration::from_secs(2), "{:?}", started.elapsed());
    assert_eq!(err.code(), "index_busy", "{err}");
    assert!(err.to_string().contains("stop that process (Ctrl-C)"), "{err}");
    watcher.stop();
    engine.rebuild_impact_graph(&repo, &quiet()).expect("rebuild once the watcher stopped");
}

#[test]
fn js_directory_imports_follow_package_main_then_index() {
    let env = Env::new();
    let repo = env.repo("pkgs");
    write(&repo, "tool/package.json", r#"{"name": "tool", "main": "lib/entry.js"}"#);
    write(&repo, "tool/lib/entry.js", "module.exports = 1;\n");
    write(&repo, "tool/bin/cli.js", "const tool = require('..');\nconst util = require('../util');\n");
    write(&repo, "tool/util/index.js", "module.exports = 2;\n");
    write(&repo, "app/main.js", "const tool = require('tool');\nconst sub = require('tool/util');\n");
    let g = build_dir(&repo);
    assert_eq!(
        edge_lines(&g),
        golden(
            "app/main.js -> tool/lib/entry.js static
            app/main.js -> tool/util/index.js static
            tool/bin/cli.js -> tool/lib/entry.js static
            tool/bin/cli.js -> tool/util/index.js static"
        ),
        "a repository package is found by its package.json name, a directory through its main"
    );
}

#[test]
fn docdex_index_builds_the_graph_and_keeps_it_current() {
    let env = Env::new();
    let repo = env.repo("shapes");
    copy_fixture("rust", &repo);
    let r = repo.to_str().expect("utf8");
    env.json(&["index", "--repo", r, "--json"]);
    // The index run's code pass wrote the graph: no `graph rebuild` needed.
    let v = env.json(&["impact", "--repo", r, "--file", "src/render.rs", "--direction", "in", "--json"]);
    let inbound: Vec<&str> =
        v["inbound"].as_array().expect("in").iter().map(|d| d["path"].as_str().expect("p")).collect();
    assert_eq!(inbound, vec!["src/geometry/circle.rs", "src/lib.rs", "src/main.rs"]);
    assert_eq!(v["graph"]["stats"]["edges"], 13);
    // An edit that adds a module and an import is picked up by the next incremental run.
    write(
        &repo,
        "src/lib.rs",
        format!("{}pub mod extra2;\n", std::fs::read_to_string(repo.join("src/lib.rs")).expect("read")),
    );
    write(
        &repo,
        "src/extra2.rs",
        "use crate::render::Canvas;\n\npub fn blank() -> Canvas {\n    Canvas::new(1, 1)\n}\n",
    );
    env.json(&["index", "--repo", r, "--json"]);
    let v = env.json(&["impact", "--repo", r, "--file", "src/render.rs", "--direction", "in", "--json"]);
    let inbound: Vec<&str> =
        v["inbound"].as_array().expect("in").iter().map(|d| d["path"].as_str().expect("p")).collect();
    assert_eq!(inbound, vec!["src/extra2.rs", "src/geometry/circle.rs", "src/lib.rs", "src/main.rs"]);
    let lib = env.json(&["impact", "--repo", r, "--file", "src/extra2.rs", "--json"]);
    assert_eq!(lib["inbound"][0]["edge"]["kind"], "mod");
    // Deleting the importer removes its edges.
    std::fs::remove_file(repo.join("src/extra2.rs")).expect("rm");
    env.json(&["index", "--repo", r, "--json"]);
    let v = env.json(&["impact", "--repo", r, "--file", "src/render.rs", "--direction", "in", "--json"]);
    assert_eq!(v["inbound"].as_array().expect("in").len(), 3);
    let diags = env.json(&["impact", "diagnostics", "--repo", r, "--json"]);
    assert_eq!(
        diags["files"][0]["diagnostics"][0]["spec"], "extra2",
        "the dangling `mod extra2;` is reported: {diags}"
    );
}

/// Inline modules or a `use` group nested tens of thousands deep (generated or hostile code)
/// sent Rust import extraction into unbounded recursion: a stack overflow that aborted the
/// whole index run. Nesting past 64 is now skipped with a warning; the rest of the file, and
/// the repository, are indexed and the graph still holds the file's shallow imports.
#[test]
fn rust_mods_and_use_groups_nested_absurdly_deep_do_not_abort_the_index() {
    let env = Env::new();
    let repo = env.repo("deeprs");
    write(&repo, "Cargo.toml", "[package]\nname = \"deeprs\"\nversion = \"0.1.0\"\n");
    write(&repo, "src/lib.rs", "mod util;\nmod mods;\nmod uses;\n");
    write(&repo, "src/util.rs", "pub fn helper() {}\n");
    let n = 50_000;
    write(&repo, "src/mods.rs", format!("use crate::util;\n{}{}\n", "mod a {".repeat(n), "}".repeat(n)));
    write(&repo, "src/uses.rs", format!("use crate::util;\nuse a::{}b{};\n", "c::{".repeat(n), "}".repeat(n)));
    write(&repo, "notes.md", "# Notes\nsentinel wombat\n");
    let out = env.run(&["index", "--repo", repo.to_str().expect("utf-8")]);
    assert!(out.status.success(), "{:?}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("nested over 64 deep"), "{stderr}");
    let engine = env.engine();
    let r = engine.impact(&repo, &ImpactRequest { file: "src/util.rs".into(), ..Default::default() }).expect("impact");
    let inbound: BTreeSet<&str> = r.inbound.iter().map(|d| d.path.as_str()).collect();
    assert!(inbound.contains("src/mods.rs") && inbound.contains("src/uses.rs"), "{inbound:?}");
}

/// Each C# namespace looked up its enclosing namespaces through `Node::parent`, which walks
/// down from the root: cubic in the nesting, so a generated file of 1,000 nested namespaces
/// kept the index run busy for minutes (30,000 for hours). The walk now carries the open
/// namespaces with it, and nesting past 64 is skipped with a warning.
#[test]
fn csharp_namespaces_nested_absurdly_deep_are_read_at_once() {
    let deep = format!("{}using Deep.Thing;{}", "namespace N {".repeat(3_000), "}".repeat(3_000));
    let nested = "using System;\nnamespace Outer.A { namespace Inner { class C {} } }\nnamespace Second;\n";
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let read = |src: &str| {
            let tree = lang::parse(Lang::CSharp, src).expect("parse");
            imports::extract(Lang::CSharp, &tree, src)
        };
        let _ = tx.send((read(&deep), read(nested)));
    });
    let (deep, nested) = rx.recv_timeout(std::time::Duration::from_secs(30)).expect("extraction finished within 30 s");
    let namespaces: Vec<&str> =
        deep.iter().filter(|i| i.kind == imports::kind::NAMESPACE).map(|i| i.spec.as_str()).collect();
    assert_eq!(namespaces.len(), 64, "{:?}", &namespaces[..3.min(namespaces.len())]);
    assert_eq!(namespaces[2], "N.N.N");
    let specs: Vec<(&str, &str)> = nested.iter().map(|i| (i.kind.as_str(), i.spec.as_str())).collect();
    assert_eq!(
        specs,
        [
            (imports::kind::USE, "System"),
            (imports::kind::NAMESPACE, "Outer.A"),
            (imports::kind::NAMESPACE, "Outer.A.Inner"),
            (imports::kind::NAMESPACE, "Second")
        ]
    );
}

/// The import map's glob matcher recursed once per character and backtracked without memory:
/// a long `spec` pattern matched against a long import overflowed the stack and aborted the
/// index run, and `*a*a*a...b` against `aaaa...` never finished. Both now finish at once, with
/// the same answers.
#[test]
fn import_map_patterns_that_are_long_or_backtrack_do_not_hang_or_abort_the_index() {
    let env = Env::new();
    let repo = env.repo("globs");
    let long = "a".repeat(200_000);
    let backtrack = format!("{}b", "*a".repeat(24));
    let map = serde_json::json!({"version": 1, "mappings": [
        {"spec": format!("{long}*"), "targets": ["lib/x.js"]},
        {"spec": backtrack, "targets": ["lib/x.js"]},
    ]});
    write(&repo, "docdex.import_map.json", map.to_string());
    write(&repo, "lib/x.js", "export const x = 1;\n");
    let main = format!("import a from '{long}z';\nimport b from '{}';\n", "a".repeat(60));
    write(&repo, "main.js", main);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_docdex"))
        .args(["index", "--repo", repo.to_str().expect("utf-8")])
        .env("DOCDEX_HOME", env.home())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("index still running after 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(status.success(), "{status:?}");
    let r =
        env.engine().impact(&repo, &ImpactRequest { file: "main.js".into(), ..Default::default() }).expect("impact");
    // The long pattern still matches its import; the backtracking one (no `b`) does not.
    let out: Vec<&str> = r.outbound.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(out, ["ext:".to_string() + &"a".repeat(60), "lib/x.js".to_string()]);
}

/// `go test` compiles a package's `_test.go` files with every file of the package, though they
/// import none of them: `impact --tests` on a file without a test named after it found nothing.
#[test]
fn go_tests_exercise_every_file_of_their_package_and_its_importers() {
    let env = Env::new();
    let repo = env.repo("goapp");
    write(&repo, "go.mod", "module example.com/goapp\n\ngo 1.21\n");
    write(&repo, "internal/db/db.go", "package db\n\nfunc X() {}\n");
    write(&repo, "internal/db/y.go", "package db\n\nfunc Y() {}\n");
    write(&repo, "internal/db/db_test.go", "package db\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) { X() }\n");
    write(&repo, "api/api.go", "package api\n\nimport \"example.com/goapp/internal/db\"\n\nfunc A() { db.Y() }\n");
    write(&repo, "api/handler_test.go", "package api\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) { A() }\n");
    let r = repo.to_str().expect("utf-8");
    env.json(&["index", "--repo", r, "--json"]);
    let v = env.json(&["impact", "--repo", r, "--file", "internal/db/y.go", "--tests", "--json"]);
    let found: Vec<(&str, u64)> = v["tests"]
        .as_array()
        .expect("tests")
        .iter()
        .map(|t| (t["path"].as_str().expect("path"), t["depth"].as_u64().expect("depth")))
        .collect();
    assert_eq!(found, [("internal/db/db_test.go", 0), ("api/handler_test.go", 1)], "{v}");
    assert_eq!(v["tests"][1]["via"], serde_json::json!(["api/api.go", "internal/db/y.go"]));
    assert!(v["tests"][1]["reason"].as_str().expect("reason").contains("Go package of api/api.go"), "{v}");
    // Sixty packages importing db, each with its test: the text lists the nearest 50.
    for i in 0..60 {
        let dir = format!("svc{i}");
        let code = format!("package svc{i}\n\nimport \"example.com/goapp/internal/db\"\n\nfunc S() {{ db.Y() }}\n");
        write(&repo, &format!("{dir}/s.go"), &code);
        write(&repo, &format!("{dir}/s_test.go"), format!("package svc{i}\n"));
    }
    env.json(&["index", "--repo", r, "--json"]);
    let out = env.run(&["impact", "--repo", r, "--file", "internal/db/y.go", "--tests"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("62 test files exercise internal/db/y.go:"), "{text}");
    assert!(text.contains("... and 12 more (--json lists all)") && text.lines().count() == 52, "{text}");
}

/// A hub imported by 2,100 files on one long cycle: the text output printed 2,000 importer
/// lines under a header saying 2000 (the node limit, not the count), told to lower a depth
/// of 1, and printed the cycle's 2,100-hop loop as one line.
#[test]
fn the_cli_caps_a_large_neighbourhood_and_says_what_it_cut() {
    let env = Env::new();
    let repo = env.repo("big");
    let n = 2_100;
    write(&repo, "hub.py", "import os\n");
    for i in 0..n {
        write(&repo, &format!("f{i}.py"), format!("import hub\nimport f{}\n", (i + 1) % n));
    }
    let r = repo.to_str().expect("utf-8");
    env.json(&["index", "--repo", r, "--json"]);
    let out = env.run(&["impact", "--repo", r, "hub.py", "--depth", "1"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().count() < 200, "{} lines", text.lines().count());
    assert!(text.contains("imported by (2000 nearest; the rest cut at the node limit)"), "{text}");
    assert!(text.contains("... and 1950 more (--json lists all)"), "{text}");
    assert!(text.contains(&format!("may change if it changes: {n} files")), "{text}");
    assert!(text.contains("still counts every dependent") && !text.contains("lower --depth"), "{text}");
    let json = env.json(&["impact", "--repo", r, "hub.py", "--depth", "1", "--json"]);
    assert_eq!(json["inbound"].as_array().expect("inbound").len(), 2000);
    // The workbench's view of the same answer marks the importers' side as cut.
    let resp = env
        .engine()
        .impact(&repo, &ImpactRequest { file: "hub.py".into(), depth: Some(1), direction: None })
        .expect("impact");
    assert_eq!(docdex::tui::worker::impact_view(&resp).cut, [true, false]);
    let cycles = env.run(&["graph", "cycles", "--repo", r]);
    let text = String::from_utf8_lossy(&cycles.stdout);
    let longest = text.lines().map(str::len).max().unwrap_or(0);
    assert!(longest < 1_000, "a {longest}-character line");
    let tail = format!("... {} more -> f{}.py -> f{}.py -> f0.py", n - 22, n - 2, n - 1);
    assert!(text.contains(&tail), "the middle elided, the last hops kept: {text}");
    let json = env.json(&["graph", "cycles", "--repo", r, "--json"]);
    assert_eq!(json["cycles"][0]["path"].as_array().expect("path").len(), n + 1);
}

/// A file deleted since the last index run was answered from the stored graph without a word.
#[test]
fn impact_of_a_file_deleted_since_indexing_warns_that_the_graph_is_stale() {
    let env = Env::new();
    let (repo, engine) = indexed_fixture(&env, "go");
    let ask = |file: &str| engine.impact(&repo, &ImpactRequest { file: file.into(), ..Default::default() });
    let file = ask("main.go")
        .expect("indexed")
        .outbound
        .iter()
        .find(|d| !d.external)
        .map(|d| d.path.clone())
        .expect("an import");
    assert!(ask(&file).expect("present").graph.warnings.iter().all(|w| !w.contains("no longer exists")));
    std::fs::remove_file(repo.join(&file)).expect("rm");
    let stale = ask(&file).expect("still in the graph until the next index run");
    assert!(
        stale
            .graph
            .warnings
            .iter()
            .any(|w| w.contains(&format!("{file} no longer exists on disk")) && w.contains("docdex index")),
        "{:?}",
        stale.graph.warnings
    );
    let r = repo.to_str().expect("utf-8");
    let out = env.run(&["impact", "--repo", r, &file]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("warning:"), "the CLI prints it");
}

/// `from pkg.sub import x` where `pkg/sub/x.py` exists linked only that submodule, though
/// Python hands over the package's own `x` when `pkg/sub/__init__.py` binds the name (a
/// function, a re-export, an alias, a name bound under `try`): a change to `__init__.py` changed
/// the importer unseen. The package is now a target too; `from . import x` in the package (its
/// own submodule) and names bound inside a function are not such bindings.
#[test]
fn a_python_name_the_package_init_binds_links_the_init_as_well_as_the_submodule() {
    let env = Env::new();
    let repo = env.repo("pyinit");
    write(&repo, "pkg/__init__.py", "");
    write(
        &repo,
        "pkg/sub/__init__.py",
        "from . import plain\nfrom .impl import helper as reexported\n\ndef defined():\n    local = 1\n    return local\n\ntry:\n    from ._speed import fast\nexcept ImportError:\n    fast = None\n\nclass Klass:\n    inner = 2\n",
    );
    for m in ["plain", "reexported", "defined", "fast", "local", "inner", "impl", "_speed", "nothing"] {
        write(&repo, &format!("pkg/sub/{m}.py"), "VALUE = 1\n");
    }
    write(&repo, "app.py", "from pkg.sub import plain, local, inner, nothing\n");
    write(&repo, "defs.py", "from pkg.sub import defined\n");
    write(&repo, "reexp.py", "from pkg.sub import reexported\n");
    write(&repo, "tried.py", "from pkg.sub import fast\n");
    write(&repo, "pkg/rel.py", "from .sub import defined\n");
    let g = build_dir(&repo);
    let targets = |src: &str| {
        let mut t: Vec<&str> = g.edges.iter().filter(|e| e.source == src).map(|e| e.target.as_str()).collect();
        t.sort();
        t
    };
    assert_eq!(
        targets("app.py"),
        ["pkg/sub/inner.py", "pkg/sub/local.py", "pkg/sub/nothing.py", "pkg/sub/plain.py"],
        "no name the package binds at module level"
    );
    assert_eq!(targets("defs.py"), ["pkg/sub/__init__.py", "pkg/sub/defined.py"]);
    assert_eq!(targets("reexp.py"), ["pkg/sub/__init__.py", "pkg/sub/reexported.py"]);
    assert_eq!(targets("tried.py"), ["pkg/sub/__init__.py", "pkg/sub/fast.py"]);
    assert_eq!(targets("pkg/rel.py"), ["pkg/sub/__init__.py", "pkg/sub/defined.py"]);
}

/// A src layout of namespace packages (PEP 420: `src/app/core/util.py`, no `__init__.py`
/// anywhere) read every import of the project's own code, from `src/` and from `tests/`, as an
/// external package `app`: no edge into the repository, and nothing in diagnostics. A `src/`
/// holding Python outside any package is now a root by convention (heuristic 0.8); only its
/// directories that hold Python count, so `import json` stays the standard library's beside
/// `src/json/` fixtures.
#[test]
fn python_namespace_packages_under_src_resolve_into_the_repository() {
    let env = Env::new();
    let repo = env.repo("nspy");
    write(&repo, "src/app/main.py", "from app.core.util import helper\nfrom app.core import util\nimport json\n");
    write(&repo, "src/app/core/util.py", "def helper():\n    return 1\n");
    write(&repo, "src/json/sample.json", "{}\n");
    write(&repo, "src/tool.py", "import app.main\n");
    write(&repo, "tests/test_main.py", "from app.main import run\n");
    let g = build_dir(&repo);
    let lines = edge_lines(&g);
    for want in [
        "src/app/main.py -> src/app/core/util.py heuristic",
        "src/app/main.py -> ext:json static",
        "src/tool.py -> src/app/main.py heuristic",
        "tests/test_main.py -> src/app/main.py heuristic",
    ] {
        assert!(lines.contains(&want.to_string()), "{want} not in {lines:#?}");
    }
    assert!(!lines.iter().any(|l| l.contains("ext:app")), "{lines:#?}");
    let e = g.edges.iter().find(|e| e.source == "tests/test_main.py").expect("edge");
    assert!((e.confidence - 0.8).abs() < 1e-6, "{e:?}");
    assert!(g.diagnostics.is_empty(), "{:?}", g.diagnostics);
}

/// In celery, `examples/celery_http_gateway/` is a package, so `examples/` was a root every file
/// imported from, and every directory in it a top-level name of the repository: `import gevent`
/// in `celery/concurrency/gevent.py` was a not_found diagnostic ("gevent is a module of the
/// repository, but no module gevent exists under examples"; 51 of them, for gevent, eventlet
/// and django) because `examples/gevent/` exists, and `import pydantic` an edge into
/// `examples/pydantic/__init__.py`. A root that is not the repository root, a `src/` or a
/// distribution's directory is now on the path of the files under it only, and a plain
/// directory (no `__init__.py`) is no evidence that a missing module is the repository's.
#[test]
fn python_folders_of_examples_do_not_shadow_installed_packages() {
    let env = Env::new();
    let repo = env.repo("pyexamples");
    write(&repo, "proj/__init__.py", "");
    write(&repo, "proj/util.py", "X = 1\n");
    write(&repo, "proj/concurrency/__init__.py", "");
    write(
        &repo,
        "proj/concurrency/gevent.py",
        "import gevent\nfrom gevent.pool import Pool\nfrom pydantic import BaseModel\nfrom proj import util\nimport core.api\nimport proj.missing\n",
    );
    write(&repo, "examples/gevent/tasks.py", "import gevent\nimport celeryconfig\nfrom pydantic import BaseModel\n");
    write(&repo, "examples/gevent/celeryconfig.py", "broker = 'x'\n");
    write(&repo, "examples/gevent/README.rst", "gevent example\n");
    write(&repo, "examples/gateway/__init__.py", "");
    write(&repo, "examples/gateway/views.py", "import django\nfrom gateway import urls\n");
    write(&repo, "examples/gateway/urls.py", "");
    write(&repo, "examples/pydantic/__init__.py", "");
    write(&repo, "packages/core/pyproject.toml", "[project]\nname = 'core'\n");
    write(&repo, "packages/core/core/__init__.py", "");
    write(&repo, "packages/core/core/api.py", "");
    let g = build_dir(&repo);
    let lines = edge_lines(&g);
    for want in [
        "proj/concurrency/gevent.py -> ext:gevent static",
        "proj/concurrency/gevent.py -> ext:pydantic static",
        "proj/concurrency/gevent.py -> proj/util.py static",
        "proj/concurrency/gevent.py -> packages/core/core/api.py static",
        "examples/gevent/tasks.py -> ext:gevent static",
        "examples/gevent/tasks.py -> examples/gevent/celeryconfig.py heuristic",
        "examples/gevent/tasks.py -> examples/pydantic/__init__.py static",
        "examples/gateway/views.py -> ext:django static",
        "examples/gateway/views.py -> examples/gateway/urls.py static",
    ] {
        assert!(lines.contains(&want.to_string()), "{want} not in {lines:#?}");
    }
    let diags: Vec<(&str, &str)> = g.diagnostics.iter().map(|d| (d.source.as_str(), d.spec.as_str())).collect();
    assert_eq!(diags, vec![("proj/concurrency/gevent.py", "proj.missing")], "{:#?}", g.diagnostics);
}

/// A package in a top-level folder with no packaging file (`lib/acme/`, put on the path by
/// `PYTHONPATH=lib` or a test runner's setting) was external to every file outside that folder:
/// `from acme.core import run` in `app/main.py` was `ext:acme`, and `acme/core.py` had no
/// importer. Such a folder is now a root for the names only it has, unless they are the
/// standard library's, a declared dependency's (requirements files, pyproject), or in a folder
/// of examples or docs; and an import must show it means that package (a submodule, or a name
/// its `__init__.py` binds). A nested folder (`tests/fixtures/pkgs/requests/`) is no root.
#[test]
fn python_packages_in_a_top_level_folder_without_packaging_resolve_for_the_rest() {
    let env = Env::new();
    let repo = env.repo("pypath");
    write(&repo, "lib/acme/__init__.py", "from .core import run\nVERSION = 1\n");
    write(&repo, "lib/acme/core.py", "def run(): pass\n");
    write(&repo, "lib/acme/util/__init__.py", "");
    write(&repo, "lib/acme/util/text.py", "");
    // Names that are the standard library's, a declared dependency's, or in examples/.
    write(&repo, "lib/logging/__init__.py", "def getLogger(): pass\n");
    write(&repo, "lib/requests/__init__.py", "def get(): pass\n");
    write(&repo, "requirements/base.txt", "# pinned\nRequests[socks]>=2.0 ; python_version > '3'\n-r extra.txt\n");
    write(&repo, "examples/pydantic/__init__.py", "");
    write(&repo, "examples/pydantic/tasks.py", "");
    // A name two folders have: neither is taken.
    write(&repo, "vendor/shared/__init__.py", "X = 1\n");
    write(&repo, "tools/shared/__init__.py", "X = 1\n");
    // Nested deeper than the top: not a root.
    write(&repo, "tests/fixtures/pkgs/yaml/__init__.py", "def load(): pass\n");
    write(&repo, "tests/fixtures/pkgs/yaml/reader.py", "");
    write(
        &repo,
        "app/main.py",
        "from acme.core import run\nimport acme.util.text\nfrom acme import VERSION\nimport acme\n\
         from acme import nothing_bound\nimport logging\nimport requests\nfrom pydantic import BaseModel\n\
         from shared import X\nimport yaml.reader\n",
    );
    let g = build_dir(&repo);
    let lines = edge_lines(&g);
    for want in [
        "app/main.py -> lib/acme/core.py heuristic",
        "app/main.py -> lib/acme/util/text.py heuristic",
        "app/main.py -> lib/acme/__init__.py heuristic",
        "app/main.py -> ext:logging static",
        "app/main.py -> ext:requests static",
        "app/main.py -> ext:pydantic static",
        "app/main.py -> ext:shared static",
        "app/main.py -> ext:yaml static",
    ] {
        assert!(lines.contains(&want.to_string()), "{want} not in {lines:#?}");
    }
    for unwanted in
        ["lib/logging", "lib/requests", "examples/pydantic", "vendor/shared", "tools/shared", "tests/fixtures"]
    {
        assert!(!lines.iter().any(|l| l.starts_with("app/main.py") && l.contains(unwanted)), "{unwanted}: {lines:#?}");
    }
    assert!(g.diagnostics.is_empty(), "{:#?}", g.diagnostics);
    // Inside the folder, its packages resolve as before (the folder is their own root).
    write(&repo, "lib/acme/cli.py", "from acme.core import run\n");
    let lines = edge_lines(&build_dir(&repo));
    assert!(lines.contains(&"lib/acme/cli.py -> lib/acme/core.py static".to_string()), "{lines:#?}");
}

/// A workspace package's `exports` map was not read: `import '@acme/util/strings'` (mapped to
/// `./src/strings.ts`) and `'@acme/util/feature/flag'` (pattern `./feature/*`) were
/// diagnostics, "no file matches", in every modern TypeScript monorepo. Subpaths, patterns,
/// conditions (a source-like one first, `dist/` output absent from the tree skipped) and the
/// string form are followed now.
#[test]
fn js_workspace_packages_resolve_through_their_exports_map() {
    let env = Env::new();
    let repo = env.repo("exports");
    write(
        &repo,
        "packages/util/package.json",
        r#"{"name": "@acme/util", "main": "./dist/index.js", "exports": {
            ".": {"types": "./dist/index.d.ts", "import": "./dist/index.mjs", "source": "./src/main.ts"},
            "./strings": "./src/strings.ts",
            "./feature/*": {"default": ["./dist/feature/*.js", "./src/feature/*.ts"]},
            "./feature/internal/*": null
        }}"#,
    );
    write(&repo, "packages/util/src/main.ts", "export const a = 1;\n");
    write(&repo, "packages/util/src/strings.ts", "export const s = 1;\n");
    write(&repo, "packages/util/src/feature/flag.ts", "export const f = 1;\n");
    write(&repo, "packages/one/package.json", r#"{"name": "one", "exports": "./lib/one.js"}"#);
    write(&repo, "packages/one/lib/one.js", "module.exports = 1;\n");
    write(
        &repo,
        "app/main.ts",
        "import {a} from '@acme/util';\nimport {s} from '@acme/util/strings';\nimport {f} from '@acme/util/feature/flag';\nimport one from 'one';\n",
    );
    let g = build_dir(&repo);
    assert_eq!(
        edge_lines(&g),
        golden(
            "app/main.ts -> packages/one/lib/one.js static
            app/main.ts -> packages/util/src/feature/flag.ts static
            app/main.ts -> packages/util/src/main.ts static
            app/main.ts -> packages/util/src/strings.ts static"
        )
    );
    assert!(g.diagnostics.is_empty(), "{:?}", g.diagnostics);
}

/// Node's subpath imports (`import log from '#utils/log'`, mapped by the package.json
/// `imports` field) were read as an external package `#utils`: no edge, no diagnostic. They
/// are private to the nearest package.json with `imports`, and resolve through it (patterns and
/// conditions as for `exports`); one it does not map is a diagnostic.
#[test]
fn js_subpath_imports_resolve_through_the_nearest_package_imports() {
    let env = Env::new();
    let repo = env.repo("hash");
    write(
        &repo,
        "svc/package.json",
        r##"{"name": "svc", "imports": {"#utils/*": "./src/utils/*.js", "#db": {"node": "./src/db/node.js", "default": "./src/db/browser.js"}}}"##,
    );
    write(&repo, "svc/src/utils/log.js", "module.exports = 1;\n");
    write(&repo, "svc/src/db/node.js", "module.exports = 2;\n");
    write(
        &repo,
        "svc/src/app/main.js",
        "const log = require('#utils/log');\nimport db from '#db';\nimport x from '#nothing';\n",
    );
    let g = build_dir(&repo);
    assert_eq!(
        edge_lines(&g),
        golden(
            "svc/src/app/main.js -> svc/src/db/node.js static
            svc/src/app/main.js -> svc/src/utils/log.js static"
        )
    );
    let lines = diag_lines(&g);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("svc/src/app/main.js:3 #nothing"), "{lines:?}");
}

/// Type-only imports (TypeScript `import type` / `export type ... from`, Python imports under
/// `if TYPE_CHECKING:`) are how those languages break an import cycle, yet they counted as
/// cycle edges: `graph cycles`, `in_cycle` and a `no-import-cycles` rule flagged the fixed
/// code. They stay edges (kind `type_import`: a type change still reaches the importer) but
/// close no cycle; a pair also imported at run time keeps its run-time edge, and the `else` of
/// `if TYPE_CHECKING:` runs, so it still counts.
#[test]
fn type_only_imports_are_edges_but_close_no_cycle() {
    let env = Env::new();
    let repo = env.repo("types");
    write(&repo, "pkg/__init__.py", "");
    write(
        &repo,
        "pkg/a.py",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n\nclass A:\n    pass\n",
    );
    write(&repo, "pkg/b.py", "from pkg.a import A\n\nclass B(A):\n    pass\n");
    write(
        &repo,
        "pkg/c.py",
        "import typing\nif typing.TYPE_CHECKING:\n    import pkg.d\nelse:\n    from pkg import d\n",
    );
    write(&repo, "pkg/d.py", "from pkg import c\n");
    write(
        &repo,
        "ts/x.ts",
        "import type { Y } from './y';\nexport type { Z } from './z';\nexport interface X { y: Y }\n",
    );
    write(&repo, "ts/y.ts", "import { X } from './x';\nexport class Y { x?: X }\n");
    write(&repo, "ts/z.ts", "import type { Y } from './y';\nimport { X } from './x';\nexport interface Z { x: X }\n");
    write(&repo, "ts/w.ts", "import type { V } from './v';\nimport { v } from './v';\nexport const w = v;\n");
    write(&repo, "ts/v.ts", "import { w } from './w';\nexport const v = 1; export type V = number;\n");
    let g = build_dir(&repo);
    let kind = |s: &str, t: &str| {
        g.edges.iter().find(|e| e.source == s && e.target == t).map(|e| e.kind.clone()).unwrap_or_default()
    };
    assert_eq!(kind("pkg/a.py", "pkg/b.py"), "type_import");
    assert_eq!(kind("ts/x.ts", "ts/y.ts"), "type_import");
    assert_eq!(kind("ts/x.ts", "ts/z.ts"), "type_import");
    assert_eq!(kind("pkg/c.py", "pkg/d.py"), "from", "the else branch is a run-time import");
    assert_eq!(kind("ts/w.ts", "ts/v.ts"), "import", "a run-time import of the pair wins");
    assert_eq!(
        cycle_sets(&g),
        vec![vec!["pkg/c.py", "pkg/d.py"], vec!["ts/v.ts", "ts/w.ts"]],
        "only the loops imported at run time"
    );
}

/// `import {type A, type B} from './x'` (every name marked `type`, no default or namespace) is
/// erased like `import type {A, B}`, yet it was a run-time `import` edge, so `graph cycles`
/// reported a loop TypeScript never runs. A mixed `import {type A, b}` keeps `b` and its cycle.
#[test]
fn typescript_imports_of_only_typed_names_close_no_cycle() {
    let env = Env::new();
    let repo = env.repo("typednames");
    write(&repo, "types/a.ts", "import {type B, type BId} from './b';\nexport class A { b?: B; id?: BId }\n");
    write(&repo, "types/b.ts", "import { A } from './a';\nexport class B { a?: A }\nexport type BId = number;\n");
    write(&repo, "mixed/c.ts", "import {type D, dValue} from './d';\nexport const c = (d: D) => dValue;\n");
    write(&repo, "mixed/d.ts", "import { c } from './c';\nexport type D = number;\nexport const dValue = c;\n");
    let g = build_dir(&repo);
    let kind = |s: &str, t: &str| {
        g.edges.iter().find(|e| e.source == s && e.target == t).map(|e| e.kind.clone()).unwrap_or_default()
    };
    assert_eq!(kind("types/a.ts", "types/b.ts"), "type_import");
    assert_eq!(kind("mixed/c.ts", "mixed/d.ts"), "import");
    assert_eq!(cycle_sets(&g), vec![vec!["mixed/c.ts", "mixed/d.ts"]], "only the loop with a run-time name");
}

/// `export {type A} from './x'` and `export {type A, type B} from './x'` (every name marked
/// `type`) are dropped by TypeScript like `export type {A} from`, yet they were run-time
/// `export` edges, so `graph cycles` reported loops that never load. A mixed `export {type A,
/// b} from` keeps `b` and its cycle.
#[test]
fn typescript_reexports_of_only_typed_names_close_no_cycle() {
    let env = Env::new();
    let repo = env.repo("typedreexports");
    write(&repo, "one/a.ts", "export {type B} from './b';\nexport class A {}\n");
    write(&repo, "one/b.ts", "import { A } from './a';\nexport class B { a?: A }\n");
    write(&repo, "two/c.ts", "export {type D, type DId} from './d';\nexport class C {}\n");
    write(&repo, "two/d.ts", "import { C } from './c';\nexport class D { c?: C }\nexport type DId = number;\n");
    write(&repo, "mixed/e.ts", "export {type F, fValue} from './f';\nexport const e = 1;\n");
    write(&repo, "mixed/f.ts", "import { e } from './e';\nexport type F = number;\nexport const fValue = e;\n");
    let g = build_dir(&repo);
    let kind = |s: &str, t: &str| {
        g.edges.iter().find(|e| e.source == s && e.target == t).map(|e| e.kind.clone()).unwrap_or_default()
    };
    assert_eq!(kind("one/a.ts", "one/b.ts"), "type_import");
    assert_eq!(kind("two/c.ts", "two/d.ts"), "type_import");
    assert_eq!(kind("mixed/e.ts", "mixed/f.ts"), "export");
    assert_eq!(cycle_sets(&g), vec![vec!["mixed/e.ts", "mixed/f.ts"]], "only the loop with a run-time name");
}

/// A store whose imports an older docdex extracted (its rules did not mark `export {type B}
/// from` type-only, and it recorded no import rules version, or an older one) kept that
/// build's false cycle after an upgrade: the index run re-extracted only changed files, and
/// every later graph rebuild read the stale stored imports. The next index run now re-extracts
/// the outdated languages, nothing changed on disk, and the cycle is gone.
#[test]
fn imports_stored_by_older_rules_are_reextracted_by_the_next_index_run() {
    let current = imports::rules_version(Lang::TypeScript);
    for old in [None, Some(current - 1)] {
        let env = Env::new();
        let repo = env.repo("oldrules");
        write(&repo, "src/a.ts", "export {type B} from './b';\nexport class A {}\n");
        write(&repo, "src/b.ts", "import { A } from './a';\nexport class B { a?: A }\n");
        let r = repo.to_str().unwrap();
        assert!(env.run(&["index", "--repo", r]).status.success());
        let cycles = |env: &Env| env.json(&["graph", "cycles", "--repo", r, "--json"])["cycles"].clone();
        assert_eq!(cycles(&env), serde_json::json!([]), "this build's rules: no cycle");

        // As the older docdex left the store and the graph it built from it.
        let engine = env.engine();
        let rr = engine.resolve_repo(&repo).unwrap();
        let conn = rusqlite::Connection::open(docdex::engine::code::store::db_path(&rr)).unwrap();
        conn.execute("UPDATE files SET imports = replace(imports, ',\"type_only\":true', '')", []).unwrap();
        conn.execute("DELETE FROM meta WHERE key LIKE 'imports:%'", []).unwrap();
        if let Some(v) = old {
            conn.execute("INSERT INTO meta VALUES('imports:typescript', ?1)", [v.to_string()]).unwrap();
        }
        drop(conn);
        let stored = docdex::engine::code::store::SymbolReader::open(&rr).unwrap().unwrap().all_imports().unwrap();
        graph::rebuild(&rr, &stored, &Default::default()).unwrap();
        assert_ne!(cycles(&env), serde_json::json!([]), "the older build's graph has the false cycle ({old:?})");
        // Until the next index run, the answers say so and name the command.
        let outdated = |env: &Env| {
            let v = env.json(&["graph", "cycles", "--repo", r, "--json"]);
            let warnings = v["graph"]["warnings"].as_array().cloned().unwrap_or_default();
            warnings.iter().filter_map(|w| w.as_str()).any(|w| w.contains("typescript") && w.contains("docdex index"))
        };
        assert!(outdated(&env), "({old:?})");
        let text = env.run(&["graph", "cycles", "--repo", r]);
        assert!(String::from_utf8_lossy(&text.stdout).contains("warning: the stored imports of typescript"));

        let reindex = env.run(&["index", "--repo", r]);
        assert!(reindex.status.success());
        let said = String::from_utf8_lossy(&reindex.stdout).to_string();
        assert!(said.contains("re-extracted after a grammar or import rules change ("), "{said}");
        assert_eq!(cycles(&env), serde_json::json!([]), "re-extracted by the next index run ({old:?})");
        assert!(!outdated(&env), "({old:?})");
        let conn = rusqlite::Connection::open(docdex::engine::code::store::db_path(&rr)).unwrap();
        let recorded: String =
            conn.query_row("SELECT value FROM meta WHERE key = 'imports:typescript'", [], |row| row.get(0)).unwrap();
        assert_eq!(recorded, current.to_string());
    }
}

/// Stored imports extracted by an older docdex's import rules were reported only by impact
/// answers; `docdex symbols-status` said `ready` with no word of it. It now carries a message
/// naming the languages and the command (the state stays `ready`: symbols are unaffected).
#[test]
fn symbols_status_reports_imports_stored_by_older_rules() {
    let env = Env::new();
    let repo = env.repo("statusrules");
    write(&repo, "src/a.ts", "import { b } from './b';\nexport const a = b;\n");
    write(&repo, "src/b.ts", "export const b = 1;\n");
    let r = repo.to_str().unwrap();
    assert!(env.run(&["index", "--repo", r]).status.success());
    let rules_message = |env: &Env| {
        let v = env.json(&["symbols-status", "--repo", r, "--json"]);
        assert_eq!(v["state"], "ready", "{v:#}");
        let messages = v["messages"].as_array().cloned().unwrap_or_default();
        messages.iter().filter_map(|m| m.as_str()).find(|m| m.contains("import rules")).map(str::to_string)
    };
    assert_eq!(rules_message(&env), None, "this build's rules");

    let rr = env.engine().resolve_repo(&repo).unwrap();
    let conn = rusqlite::Connection::open(docdex::engine::code::store::db_path(&rr)).unwrap();
    conn.execute("DELETE FROM meta WHERE key = 'imports:typescript'", []).unwrap();
    drop(conn);
    let m = rules_message(&env).expect("a message about the older rules");
    assert!(m.contains("typescript") && m.contains("docdex index --repo"), "{m}");
    let text = env.run(&["symbols-status", "--repo", r]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("older docdex's import rules"));

    assert!(env.run(&["index", "--repo", r]).status.success());
    assert_eq!(rules_message(&env), None, "re-extracted by the next index run");
}

/// `docdex status` (and the status API) said nothing when the impact graph was resolved by an
/// older docdex (`graph_resolution` in symbols.db) or the stored imports were extracted by
/// older import rules: a user saw stale edges with a ready index and no word of why, nor that
/// the next index run rebuilds the graph. Now status warns, from the store's meta alone (status
/// is polled), and the warning goes once an index run has rebuilt it.
#[test]
fn status_says_when_the_graph_or_stored_imports_are_an_older_docdexs() {
    let env = Env::new();
    let repo = env.repo("statusgraph");
    write(&repo, "src/a.ts", "import { b } from './b';\nexport const a = b;\n");
    write(&repo, "src/b.ts", "export const b = 1;\n");
    let r = repo.to_str().unwrap();
    assert!(env.run(&["index", "--repo", r]).status.success());
    let warnings = |env: &Env| -> Vec<String> {
        let v = env.json(&["status", "--repo", r, "--json"]);
        let w = v["warnings"].as_array().cloned().unwrap_or_default();
        w.iter().filter_map(|m| m.as_str().map(str::to_string)).filter(|m| m.contains("older docdex")).collect()
    };
    assert_eq!(warnings(&env), Vec::<String>::new(), "this build's graph and rules");

    let rr = env.engine().resolve_repo(&repo).unwrap();
    let conn = rusqlite::Connection::open(docdex::engine::code::store::db_path(&rr)).unwrap();
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'graph_resolution'", []).unwrap();
    conn.execute("DELETE FROM meta WHERE key = 'imports:typescript'", []).unwrap();
    drop(conn);
    let w = warnings(&env);
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(
        w[0].contains("impact graph") && w[0].contains("rebuilds it") && w[0].contains("docdex index --repo"),
        "{w:?}"
    );
    assert!(w[1].contains("typescript") && w[1].contains("import rules"), "{w:?}");
    let text = env.run(&["status", "--repo", r]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("impact graph was resolved by an older docdex"));

    assert!(env.run(&["index", "--repo", r]).status.success());
    assert_eq!(warnings(&env), Vec::<String>::new(), "rebuilt by the next index run");
}

/// `docdex graph rebuild` did not record the resolution version (nor the import rules) of the
/// graph it wrote, so `docdex status` went on calling the rebuilt graph an older docdex's, and
/// its own note said `docdex graph rebuild` fixes it. Now the rebuild records both in the store's
/// meta: status says nothing, symbols-status still says the stored imports lag (they do, until
/// the next index run), and an index run that builds the graph from the store drops the mark.
#[test]
fn status_stops_calling_the_graph_an_older_docdexs_after_graph_rebuild() {
    let env = Env::new();
    let repo = env.repo("statusrebuild");
    write(&repo, "src/a.ts", "import { b } from './b';\nexport const a = b;\n");
    write(&repo, "src/b.ts", "export const b = 1;\n");
    let r = repo.to_str().unwrap();
    assert!(env.run(&["index", "--repo", r]).status.success());
    let warnings = |env: &Env| -> Vec<String> {
        let v = env.json(&["status", "--repo", r, "--json"]);
        let w = v["warnings"].as_array().cloned().unwrap_or_default();
        w.iter().filter_map(|m| m.as_str().map(str::to_string)).filter(|m| m.contains("older docdex")).collect()
    };
    let rr = env.engine().resolve_repo(&repo).unwrap();
    let db = docdex::engine::code::store::db_path(&rr);
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'graph_resolution'", []).unwrap();
    conn.execute("DELETE FROM meta WHERE key = 'imports:typescript'", []).unwrap();
    drop(conn);
    assert_eq!(warnings(&env).len(), 2, "{:?}", warnings(&env));

    assert!(env.run(&["graph", "rebuild", "--repo", r]).status.success());
    assert_eq!(warnings(&env), Vec::<String>::new(), "the rebuilt graph is this build's");
    let symbols = env.json(&["symbols-status", "--repo", r, "--json"]);
    let messages = symbols["messages"].as_array().cloned().unwrap_or_default();
    assert!(messages.iter().filter_map(|m| m.as_str()).any(|m| m.contains("import rules")), "{symbols:#}");

    assert!(env.run(&["index", "--repo", r]).status.success());
    assert_eq!(warnings(&env), Vec::<String>::new());
    // An index run whose imports changed rebuilds the graph from the (now current) store.
    write(&repo, "src/c.ts", "import { a } from './a';\nexport const c = a;\n");
    assert!(env.run(&["index", "--repo", r]).status.success());
    let conn = rusqlite::Connection::open(&db).unwrap();
    let marks: i64 =
        conn.query_row("SELECT count(*) FROM meta WHERE key LIKE 'graph_imports:%'", [], |row| row.get(0)).unwrap();
    assert_eq!(marks, 0, "an index run's graph is built from the store");
}

/// `docdex graph rebuild` extracts every file's imports from disk with this build's rules, so its
/// graph is current however old the store's imports are: the outdated-imports warning, true of a
/// graph an index run built from the store, was still given after it.
#[test]
fn a_graph_rebuilt_from_disk_is_not_warned_about_outdated_stored_imports() {
    let env = Env::new();
    let repo = env.repo("rebuiltrules");
    write(&repo, "src/a.ts", "export {type B} from './b';\nexport class A {}\n");
    write(&repo, "src/b.ts", "import { A } from './a';\nexport class B { a?: A }\n");
    let r = repo.to_str().unwrap();
    assert!(env.run(&["index", "--repo", r]).status.success());
    let engine = env.engine();
    let rr = engine.resolve_repo(&repo).unwrap();
    let conn = rusqlite::Connection::open(docdex::engine::code::store::db_path(&rr)).unwrap();
    conn.execute("DELETE FROM meta WHERE key LIKE 'imports:%'", []).unwrap();
    drop(conn);
    let warned = |env: &Env| {
        let v = env.json(&["impact", "--repo", r, "src/a.ts", "--json"]);
        let warnings = v["graph"]["warnings"].as_array().cloned().unwrap_or_default();
        warnings.iter().filter_map(|w| w.as_str()).any(|w| w.contains("older docdex"))
    };
    assert!(warned(&env), "the index run's graph was built from the store");
    let rebuilt = env.json(&["graph", "rebuild", "--repo", r, "--json"]);
    assert_eq!(rebuilt["stats"]["files"], 2, "{rebuilt}");
    assert!(!warned(&env), "the rebuilt graph read the files with this build's rules");
}

/// TypeScript's type-only forms, `import {type A} from`, `import type {A} from`, `export {type A}
/// from` (and `export type {A} from`, and the run-time `import {type A, B} from`), are edges of `docdex impact`
/// through the real binary: the importer of a file that only lends it types is affected when
/// that file changes.
#[test]
fn typescript_type_only_imports_are_impact_edges() {
    let env = Env::new();
    let repo = env.repo("tstypes");
    write(&repo, "tsconfig.json", "{\"compilerOptions\": {\"strict\": true}}\n");
    for (name, ty) in [
        ("inline", "Inline"),
        ("whole", "Whole"),
        ("reexp", "Reexp"),
        ("retype", "Retype"),
        ("mixed", "Mixed"),
        ("star", "Star"),
    ] {
        write(
            &repo,
            &format!("src/{name}.ts"),
            format!("export interface {ty} {{ id: number }}\nexport const {name}Value = 1;\n"),
        );
    }
    write(
        &repo,
        "src/user.ts",
        "import {type Inline} from './inline';\n\
         import type {Whole} from './whole';\n\
         export {type Reexp} from './reexp';\n\
         export type {Retype} from './retype';\n\
         import {type Mixed, mixedValue} from './mixed';\n\
         export type * from './star';\n\
         export const use = (a: Inline, b: Whole, c: Mixed): number => a.id + b.id + c.id + mixedValue;\n",
    );
    let r = repo.to_str().unwrap();
    let out = env.run(&["index", "--repo", r]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = env.json(&["impact", "--repo", r, "src/user.ts", "--direction", "out", "--json"]);
    let outbound: Vec<&str> = v["outbound"].as_array().unwrap().iter().filter_map(|d| d["path"].as_str()).collect();
    let kind = |target: &str| {
        let dep = v["outbound"].as_array().unwrap().iter().find(|d| d["path"] == target).cloned();
        dep.map(|d| d["edge"]["kind"].as_str().unwrap_or_default().to_string()).unwrap_or_default()
    };
    // TypeScript 5's `export type * from` (a parse error in the grammar) is type-only too.
    assert_eq!(kind("src/star.ts"), "type_import", "{v}");
    assert_eq!(kind("src/whole.ts"), "type_import", "{v}");
    assert_eq!(kind("src/inline.ts"), "type_import", "{v}");
    assert_eq!(kind("src/reexp.ts"), "type_import", "{v}");
    assert_eq!(kind("src/retype.ts"), "type_import", "{v}");
    assert_eq!(kind("src/mixed.ts"), "import", "{v}");
    for name in ["inline", "whole", "reexp", "retype", "mixed", "star"] {
        let target = format!("src/{name}.ts");
        assert!(outbound.contains(&target.as_str()), "{target} missing from {outbound:?}: {v}");
        let back = env.json(&["impact", "--repo", r, &target, "--json"]);
        let inbound: Vec<&str> =
            back["inbound"].as_array().unwrap().iter().filter_map(|d| d["path"].as_str()).collect();
        assert_eq!(inbound, ["src/user.ts"], "{target}: {back}");
    }
}

/// Import resolution changes (which roots a Python import sees) move edges and diagnostics
/// with no import changed, so an upgraded docdex kept the graph its predecessor resolved until
/// `docdex graph rebuild`. The store records the resolution version its graph was built
/// under; the next index run rebuilds a graph built under another, and only then.
#[test]
fn a_graph_resolved_by_an_older_docdex_is_rebuilt_by_the_next_index_run() {
    let env = Env::new();
    let repo = env.repo("resolved");
    write(&repo, "app/main.py", "from app import util\nimport app.missing\n");
    write(&repo, "app/__init__.py", "");
    write(&repo, "app/util.py", "X = 1\n");
    let r = repo.to_str().unwrap();
    assert!(env.run(&["index", "--repo", r]).status.success());
    let rr = env.engine().resolve_repo(&repo).unwrap();
    let graph_file = rr.data_dir().join("impact_graph.json");
    // A stale graph: an edge its resolution no longer gives.
    let stale = |env: &Env| {
        let mut g: serde_json::Value = serde_json::from_slice(&std::fs::read(&graph_file).unwrap()).unwrap();
        let d = g["diagnostics"].as_array_mut().expect("diagnostics");
        assert!(!d.is_empty(), "app.missing is not found: {g}");
        d[0]["spec"] = serde_json::json!("ghostpkg");
        std::fs::write(&graph_file, serde_json::to_vec(&g).unwrap()).unwrap();
        let _ = env;
    };
    let ghost = |env: &Env| {
        env.run(&["impact", "diagnostics", "--repo", r, "--json"]).stdout.windows(8).any(|w| w == b"ghostpkg")
    };
    stale(&env);
    assert!(ghost(&env), "the tampered graph is read");
    assert!(env.run(&["index", "--repo", r]).status.success());
    assert!(ghost(&env), "same resolution version: an unchanged run leaves the graph");

    let conn = rusqlite::Connection::open(docdex::engine::code::store::db_path(&rr)).unwrap();
    conn.execute("DELETE FROM meta WHERE key = 'graph_resolution'", []).unwrap();
    drop(conn);
    assert!(env.run(&["index", "--repo", r]).status.success());
    assert!(!ghost(&env), "a graph resolved by an older docdex is rebuilt");
}

/// A fresh docs-only repository (no code file to parse) got `warning: the impact graph was
/// resolved by an older docdex (before resolution was versioned)` from `docdex status` right
/// after this build's first index: the code pass wrote no graph and so recorded no resolution
/// version, and a plain `index` never did either (only `graph rebuild` cleared it). Now a store
/// without this build's resolution builds the (empty) graph and records it on the first run,
/// and a store an earlier build left that way is fixed by the next plain index run.
#[test]
fn a_docs_only_repo_is_not_called_an_older_docdexs_graph() {
    let env = Env::new();
    let repo = env.repo("docsonly");
    write(&repo, "README.md", "# Docs\n\nOnly prose here.\n");
    write(&repo, "docs/guide.md", "# Guide\n\nMore prose.\n");
    let r = repo.to_str().unwrap();
    let older = |env: &Env| -> Vec<String> {
        let v = env.json(&["status", "--repo", r, "--json"]);
        let w = v["warnings"].as_array().cloned().unwrap_or_default();
        w.iter().filter_map(|m| m.as_str().map(str::to_string)).filter(|m| m.contains("older docdex")).collect()
    };
    assert!(env.run(&["index", "--repo", r]).status.success());
    assert_eq!(older(&env), Vec::<String>::new(), "this build just indexed it");
    let rr = env.engine().resolve_repo(&repo).unwrap();
    assert!(graph::graph_path(&rr).is_file(), "the (empty) graph is written on the first run");
    let text = env.run(&["status", "--repo", r]);
    assert!(!String::from_utf8_lossy(&text.stdout).contains("older docdex"), "{text:?}");

    // As an earlier build left it: no resolution recorded. A plain index run records it.
    let conn = rusqlite::Connection::open(docdex::engine::code::store::db_path(&rr)).unwrap();
    conn.execute("DELETE FROM meta WHERE key = 'graph_resolution'", []).unwrap();
    drop(conn);
    assert_eq!(older(&env).len(), 1, "{:?}", older(&env));
    assert!(env.run(&["index", "--repo", r]).status.success());
    assert_eq!(older(&env), Vec::<String>::new(), "the next plain index records this build's resolution");
}

/// An indexed empty repository was `ready` (status and search worked, `index` said "up to
/// date") but `docdex map` and `docdex graph rebuild` failed with "not indexed yet; run `docdex
/// index`" (exit 3), advice that looped: both took an empty manifest for no index. Now an
/// indexed empty repository gets an empty map and an empty graph (rebuild succeeds with 0 files).
#[test]
fn an_indexed_empty_repo_has_an_empty_map_and_graph() {
    let env = Env::new();
    let repo = env.repo("emptyrepo");
    let r = repo.to_str().unwrap();
    let out = env.run(&["map", "--repo", r]);
    assert_eq!(out.status.code(), Some(3), "not indexed yet: {out:?}");
    assert!(env.run(&["index", "--repo", r]).status.success());

    let map = env.json(&["map", "--repo", r, "--json"]);
    assert_eq!(map["paths"], serde_json::json!([]), "{map:#}");
    assert_eq!(map["hidden_files"], 0, "{map:#}");
    let rebuilt = env.json(&["graph", "rebuild", "--repo", r, "--json"]);
    assert_eq!(rebuilt["stats"]["files"], 0, "{rebuilt:#}");
    assert_eq!(rebuilt["stats"]["edges"], 0, "{rebuilt:#}");
    let rr = env.engine().resolve_repo(&repo).unwrap();
    assert!(graph::graph_path(&rr).is_file());
}

/// A file indexed as text but not parsed (over the 2 MiB parse limit) has unknown imports: its
/// impact says so in a warning, where it answered "no imports" without a word (tour21 F4).
#[test]
fn a_file_too_large_to_parse_warns_that_its_imports_are_unknown() {
    let env = Env::new();
    let repo = env.repo("r");
    let mut big = String::from("import { s } from './small.js';\n");
    while big.len() <= 2 * 1024 * 1024 {
        big.push_str("function f(a,b){return a+b}var v=f(1,2);");
    }
    write(&repo, "big.js", &big);
    write(&repo, "small.js", "export const s = 1;\n");
    write(&repo, "user.js", "import './big.js';\n");
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    let r = engine.impact(&repo, &ImpactRequest { file: "big.js".into(), ..Default::default() }).expect("impact");
    assert!(r.outbound.is_empty(), "{:?}", r.outbound);
    assert_eq!(r.inbound.iter().map(|d| d.path.as_str()).collect::<Vec<_>>(), vec!["user.js"]);
    let w = r.graph.warnings.join("\n");
    assert!(
        w.contains("big.js was not parsed (") && w.contains("over the 2 MB limit") && w.contains("imports are unknown"),
        "{w}"
    );
    let r = engine.impact(&repo, &ImpactRequest { file: "user.js".into(), ..Default::default() }).expect("impact");
    assert!(r.graph.warnings.is_empty(), "{:?}", r.graph.warnings);
}

/// A TypeScript file imports a declaration file by its emitted name (`'../types/a.js'` for
/// `types/a.d.ts`, `.mjs` for `.d.mts`), as TypeScript resolves it: fastify's type tests had 30
/// such imports reported unresolved and were missing from impact's importers. An emitted name
/// that matches nothing says which TypeScript names were tried.
#[test]
fn a_declaration_file_is_found_by_its_emitted_name() {
    let env = Env::new();
    let repo = env.repo("dts");
    write(&repo, "types/a.d.ts", "export type A = 1;\n");
    write(&repo, "types/m.d.mts", "export type M = 2;\n");
    write(
        &repo,
        "test/t.ts",
        "import type { A } from '../types/a.js';\nimport type { M } from '../types/m.mjs';\nimport { gone } from '../types/gone.js';\nexport const x: A | M = 1;\n",
    );
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    for target in ["types/a.d.ts", "types/m.d.mts"] {
        let v = env.json(&["impact", "--repo", r, target, "--json"]);
        let inbound: Vec<&str> = v["inbound"].as_array().unwrap().iter().filter_map(|d| d["path"].as_str()).collect();
        assert_eq!(inbound, ["test/t.ts"], "{target}: {v}");
    }
    let diags = env.json(&["impact", "diagnostics", "--repo", r, "--json"]);
    assert_eq!(diags["total"], 1, "{diags}");
    let reason = diags["files"][0]["diagnostics"][0]["reason"].as_str().unwrap_or_default().to_string();
    assert!(reason.contains("(and types/gone.{ts,tsx,d.ts})"), "{diags}");
}

/// A file edited since the last index run was answered with the imports it had then, without
/// a word (tour35 F6): impact brings it into the index first, and says so when it cannot
/// (another writer holds the index).
#[test]
fn impact_of_a_file_edited_since_indexing_answers_its_imports_on_disk() {
    let env = Env::new();
    let repo = env.repo("edited");
    write(&repo, "old_dep.py", "def old():\n    return 1\n");
    write(&repo, "new_dep.py", "def new():\n    return 2\n");
    write(&repo, "app.py", "import old_dep\n\nprint(old_dep.old())\n");
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    let outbound = |resp: &docdex::engine::code::impact::ImpactResponse| -> Vec<String> {
        resp.outbound.iter().filter(|d| !d.external).map(|d| d.path.clone()).collect()
    };
    let ask = || engine.impact(&repo, &ImpactRequest { file: "app.py".into(), ..Default::default() }).expect("impact");
    assert_eq!(outbound(&ask()), ["old_dep.py"]);

    std::thread::sleep(std::time::Duration::from_millis(20));
    write(&repo, "app.py", "import new_dep\n\nprint(new_dep.new())\n");
    let fresh = ask();
    assert_eq!(outbound(&fresh), ["new_dep.py"], "the imports on disk, not the indexed ones");
    assert!(fresh.graph.warnings.iter().all(|w| !w.contains("changed since")), "{:?}", fresh.graph.warnings);

    // Another writer holds the index: the stored graph answers, and says it may be out of date.
    let repo_ref = engine.resolve_repo(&repo).expect("repo");
    let _writer = engine.open_index_session(&repo_ref, false).expect("the writer");
    std::thread::sleep(std::time::Duration::from_millis(20));
    write(&repo, "app.py", "import old_dep\n\nprint(old_dep.old())\n");
    let held = ask();
    assert_eq!(outbound(&held), ["new_dep.py"], "as of the last run");
    assert!(
        held.graph.warnings.iter().any(|w| w.contains("app.py changed since the index's last run")),
        "{:?}",
        held.graph.warnings
    );
}
