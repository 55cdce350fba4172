//! `run-tests --affected`'s selection: from the changed files and the last index's import graph
//! to the test files a runner should run, each with why. Two kinds of change reach tests the
//! plain "who imports it" walk misses, and both used to run nothing (exit 5, which CI accepts):
//! a file reached only through a `conftest.py` (its fixtures serve every test below it, none of
//! which imports it), and a deleted or renamed-away file (its importers now fail to import it).

use super::Runner;
use crate::engine::cancel::CancelToken;
use crate::engine::code::impact::LoadedGraph;
use crate::engine::code::lang::Lang;
use crate::engine::code::test_files::is_test_path;
use crate::engine::context::changes::Changes;
use crate::error::Result;
use std::path::Path;

/// What a change selects: test files with why, and whether the whole suite must run instead
/// (with the note saying why).
#[derive(Debug, Default)]
pub(super) struct Affected {
    /// Each selected test file (repo-relative) and why.
    pub files: Vec<(String, String)>,
    /// Set when some change's tests cannot be known: run the whole suite, not nothing.
    pub whole_suite: Option<String>,
}

/// True for a pytest `conftest.py`: never a test file itself, it stands for the tests below it.
fn is_conftest(runner: Runner, path: &str) -> bool {
    runner == Runner::Pytest && path.rsplit('/').next() == Some("conftest.py")
}

/// The test files of the graph below the directory of `conftest`, sorted.
fn tests_below<'g>(graph: &'g LoadedGraph, conftest: &str) -> Vec<&'g String> {
    let dir = conftest.rsplit_once('/').map_or(String::new(), |(d, _)| format!("{d}/"));
    let mut below: Vec<&String> = graph
        .graph
        .files
        .keys()
        .filter(|p| p.starts_with(&dir) && is_test_path(p) && !is_conftest(Runner::Pytest, p))
        .collect();
    below.sort();
    below
}

struct Selection<'a> {
    root: &'a Path,
    graph: &'a LoadedGraph,
    runner: Runner,
    out: Affected,
}

impl Selection<'_> {
    fn add(&mut self, path: &str, why: String) {
        let runs = self.runner.runs(path) && !is_conftest(self.runner, path);
        if runs && self.root.join(path).is_file() && !self.out.files.iter().any(|(p, _)| p == path) {
            self.out.files.push((path.to_string(), why));
        }
    }

    /// The tests that reach `file` through the graph; a `conftest.py` among them stands for the
    /// test files below its directory (`tests/test_a.py <- tests/conftest.py <- app/db.py`).
    fn reach(&mut self, file: &str, what: &str) {
        let graph = self.graph;
        for t in graph.tests_reaching(self.root, file) {
            if is_conftest(self.runner, &t.path) && t.path != file {
                for below in tests_below(graph, &t.path) {
                    let why = format!("below {}, which exercises {what} {file}: {}", t.path, t.reason);
                    self.add(below, why);
                }
            } else {
                self.add(&t.path, format!("exercises {what} {file}: {}", t.reason));
            }
        }
    }

    /// A file gone from the working tree: the tests that reached it in the last index's graph
    /// now fail to import it. A code file the graph does not know (the index ran after the
    /// deletion) leaves its importers unknown: the whole suite runs.
    fn gone(&mut self, path: &str) {
        if is_test_path(path) {
            return;
        }
        if self.graph.contains(path) {
            self.reach(path, "deleted");
        } else if Lang::from_path(Path::new(path)).is_some() && self.out.whole_suite.is_none() {
            self.out.whole_suite = Some(format!(
                "{path} was deleted and the index does not say which tests imported it: the whole suite was run"
            ));
        }
    }
}

/// The test files `changes` reach for `runner` through `graph` (the last index's), each with
/// why, or the whole suite when a deleted file's importers cannot be known. Stops with
/// `Cancelled` when the thread's token trips.
pub(super) fn select(root: &Path, changes: &Changes, graph: &LoadedGraph, runner: Runner) -> Result<Affected> {
    let cancel = CancelToken::current();
    let mut sel = Selection { root, graph, runner, out: Affected::default() };
    for f in &changes.files {
        cancel.check()?;
        if is_conftest(runner, &f.path) {
            // Its fixtures and hooks reach every test below it, none of which imports it;
            // handed to pytest itself it is collected as a module without tests.
            for t in tests_below(graph, &f.path) {
                sel.add(t, format!("below changed {}", f.path));
            }
            continue;
        }
        // A rename leaves the old path's importers as broken as a deletion does.
        let old = changes.diffs.get(&f.path).and_then(|d| d.old_path.clone());
        if let Some(old) = old.filter(|o| *o != f.path) {
            sel.gone(&old);
        }
        if f.change == "deleted" {
            sel.gone(&f.path);
            continue;
        }
        if is_test_path(&f.path) {
            sel.add(&f.path, "changed test file".into());
        }
        if graph.contains(&f.path) {
            sel.reach(&f.path, "changed");
        }
    }
    cancel.check()?;
    Ok(sel.out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::code::graph::{self, Edge, GraphOptions};
    use crate::engine::code::types::Method;
    use crate::engine::context::types::ChangedFile;
    use std::collections::BTreeSet;

    /// A graph of `files` with `edges` (source imports target), over a repository at `root`.
    fn graph_of(root: &Path, files: &[&str], edges: &[(&str, &str)]) -> LoadedGraph {
        let mut g = graph::build(root, &[], &BTreeSet::new(), &GraphOptions::default());
        for f in files {
            g.files.insert(f.to_string(), Lang::Python);
        }
        for (i, (s, t)) in edges.iter().enumerate() {
            g.edges.push(Edge {
                source: s.to_string(),
                target: t.to_string(),
                external: false,
                kind: "import".into(),
                method: Method::Static,
                confidence: 1.0,
                line: i as u32 + 1,
                spec: t.to_string(),
            });
        }
        LoadedGraph::new(g)
    }

    fn write(root: &Path, files: &[&str]) {
        for f in files {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x = 1\n").unwrap();
        }
    }

    fn changes(files: &[(&str, &str)]) -> Changes {
        let files = files
            .iter()
            .map(|(p, c)| ChangedFile {
                path: p.to_string(),
                change: c.to_string(),
                states: Vec::new(),
                old_path: None,
            })
            .collect();
        Changes { files, ..Changes::default() }
    }

    fn paths(a: &Affected) -> Vec<&str> {
        a.files.iter().map(|(p, _)| p.as_str()).collect()
    }

    #[test]
    fn a_change_reaching_tests_through_a_conftest_selects_the_tests_below_it() {
        let dir = tempfile::tempdir().unwrap();
        let files = ["app/db.py", "tests/conftest.py", "tests/test_users.py", "tests/sub/test_x.py", "other/test_o.py"];
        write(dir.path(), &files);
        let graph = graph_of(dir.path(), &files, &[("tests/conftest.py", "app/db.py")]);
        let got = select(dir.path(), &changes(&[("app/db.py", "modified")]), &graph, Runner::Pytest).unwrap();
        assert_eq!(paths(&got), ["tests/sub/test_x.py", "tests/test_users.py"]);
        assert!(
            got.files[1].1.starts_with("below tests/conftest.py, which exercises changed app/db.py"),
            "{:?}",
            got.files
        );
        assert!(got.whole_suite.is_none());
    }

    #[test]
    fn a_deleted_module_selects_the_tests_that_imported_it() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &["tests/test_f.py", "tests/test_other.py"]);
        let files = ["pkg/__init__.py", "tests/test_f.py", "tests/test_other.py"];
        let graph = graph_of(dir.path(), &files, &[("tests/test_f.py", "pkg/__init__.py")]);
        let got = select(dir.path(), &changes(&[("pkg/__init__.py", "deleted")]), &graph, Runner::Pytest).unwrap();
        assert_eq!(paths(&got), ["tests/test_f.py"]);
        assert!(got.files[0].1.contains("deleted pkg/__init__.py"), "{:?}", got.files);
        assert!(got.whole_suite.is_none());
    }

    #[test]
    fn a_deleted_module_the_graph_does_not_know_runs_the_whole_suite() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &["tests/test_f.py"]);
        let graph = graph_of(dir.path(), &["tests/test_f.py"], &[]);
        let got = select(dir.path(), &changes(&[("pkg/mod.py", "deleted")]), &graph, Runner::Pytest).unwrap();
        assert!(got.whole_suite.as_deref().is_some_and(|w| w.contains("pkg/mod.py")), "{got:?}");
        // A deleted file that is not code (or a deleted test) says nothing of other tests.
        let got = select(
            dir.path(),
            &changes(&[("README.md", "deleted"), ("tests/test_g.py", "deleted")]),
            &graph,
            Runner::Pytest,
        )
        .unwrap();
        assert!(got.whole_suite.is_none() && got.files.is_empty(), "{got:?}");
    }
}
