//! The import/impact graph over the per-language fixtures in `tests/fixtures/code/`: golden
//! edges, cycles, diagnostics, the import map, storage and migration, and the CLI.

use docdex::engine::code::{lang, Lang};
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
