//! Which test files exercise a file: `docdex impact --file F --tests`, the `test` snippets of
//! `docdex context`, and `docdex run-tests --affected` all ask this one question.
//!
//! A test file exercises `F` when it reaches `F` through the import graph (it imports `F`, or
//! imports a file that does, to any depth), when it is named after `F` in the conventions of
//! its language (`test_session.py`, `session_test.go`, `session.test.ts`, `SessionTest.java`:
//! Go tests in particular import nothing of their own package, so a Go test also exercises
//! every file of its package and what they reach), or when `F` is itself a test
//! file or holds its own tests (a Rust `#[cfg(test)]` module). What counts as a test file is
//! decided by its path alone ([`is_test_path`]), the way the runners themselves find tests.

use super::impact::{list_limit, normalize_file, unknown_file, LoadedGraph, MAX_DEPTH};
use crate::engine::Engine;
use crate::error::Result;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Directories whose files are tests.
const TEST_DIRS: [&str; 5] = ["tests", "test", "__tests__", "spec", "specs"];
/// Script extensions the `.test.` / `.spec.` convention applies to.
const SCRIPT_EXTS: [&str; 6] = ["js", "jsx", "ts", "tsx", "mjs", "cjs"];
/// File stems too generic to pair a test with a file by name across directories.
const GENERIC_STEMS: [&str; 8] = ["index", "mod", "main", "lib", "__init__", "utils", "util", "helpers"];

/// A test file that exercises a file, and how.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TestFile {
    /// Repo-relative path of the test file.
    pub path: String,
    /// Import hops from the test to the file (0: the file itself, or paired by name).
    pub depth: u32,
    /// The files the import chain passes through, from the test towards the file (the file
    /// last); empty when the link is not an import.
    pub via: Vec<String>,
    /// Why it was chosen, in words.
    pub reason: String,
}

/// `docdex impact --file F --tests` / `GET /v1/graph/tests` / MCP `docdex_impact_tests`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct TestsRequest {
    /// Repo-relative path of the file whose tests you want (e.g. `src/auth/session.rs`).
    pub file: String,
    /// Test files listed at most, nearest first (1..1000; HTTP and MCP default to 200). `total`
    /// counts them all and `truncated` says when some were left out.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// The answer to `docdex impact --file F --tests`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TestsResponse {
    /// Repo fingerprint.
    pub project_id: String,
    /// Repo root.
    pub repo: PathBuf,
    /// The queried file, repo-relative.
    pub file: String,
    /// The test files that exercise it, nearest first (the first `limit`).
    pub tests: Vec<TestFile>,
    /// Test files in all, listed or not.
    #[serde(default)]
    pub total: usize,
    /// True when `limit` left some out of `tests`.
    #[serde(default)]
    pub truncated: bool,
}

/// True when the path is a test file by the usual conventions: under a `tests`, `test`,
/// `__tests__` or `spec` directory, or named `test_*.py`, `*_test.py`, `*_test.go`,
/// `*_test.rs`, `*.test.ts` / `*.spec.js` (and the other script extensions), `*_spec.rb`,
/// `*Test.java`, `*Tests.cs`, ...
pub fn is_test_path(path: &str) -> bool {
    let mut parts: Vec<&str> = path.split('/').collect();
    let name = parts.pop().unwrap_or_default();
    if parts.iter().any(|d| TEST_DIRS.contains(&d.to_ascii_lowercase().as_str())) {
        return true;
    }
    subject_stem(name).is_some()
}

/// The stem of the file a test file is named after (`test_session.py` -> `session`), or `None`
/// when the name is not a test file's.
fn subject_stem(name: &str) -> Option<&str> {
    let (stem, ext) = name.rsplit_once('.')?;
    let stripped = match ext {
        "py" => stem.strip_prefix("test_").or_else(|| stem.strip_suffix("_test")),
        "go" | "rs" => stem.strip_suffix("_test"),
        "rb" => stem.strip_suffix("_spec").or_else(|| stem.strip_suffix("_test")),
        "java" | "kt" | "cs" | "swift" | "php" | "scala" | "dart" => {
            stem.strip_suffix("Tests").or_else(|| stem.strip_suffix("Test")).or_else(|| stem.strip_suffix("_test"))
        }
        e if SCRIPT_EXTS.contains(&e) => stem.strip_suffix(".test").or_else(|| stem.strip_suffix(".spec")),
        _ => None,
    }?;
    (!stripped.is_empty()).then_some(stripped)
}

/// The stem of a repo-relative path (`src/auth/session.rs` -> `session`).
fn stem_of(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.split('.').next().unwrap_or(name)
}

fn dir_of(path: &str) -> &str {
    path.rsplit_once('/').map(|(d, _)| d).unwrap_or("")
}

/// True when a file's text holds its own unit tests (a Rust `#[cfg(test)]` module or a
/// `#[test]`): the one test of it, for the file on disk (`impact --tests`) and for the staged
/// content the gatekeeper checks.
pub fn holds_inline_tests(rel: &str, text: &str) -> bool {
    rel.ends_with(".rs") && (text.contains("#[cfg(test)]") || text.contains("#[test]"))
}

/// True when a Rust file on disk holds its own unit tests.
fn has_inline_tests(root: &Path, rel: &str) -> bool {
    if !rel.ends_with(".rs") {
        return false;
    }
    crate::engine::fsutil::read_repo_file(root, rel)
        .is_ok_and(|bytes| holds_inline_tests(rel, &crate::engine::fsutil::decode_text(&bytes)))
}

impl LoadedGraph {
    /// The test files that exercise `file` (a node id), nearest first: the file itself when it
    /// is a test or holds tests, tests paired with it by name, then every test file among its
    /// transitive dependents with the chain that links them. Cut short (the walk of dependents
    /// left out) when the thread's ambient token trips: callers check it after.
    pub fn tests_reaching(&self, root: &Path, file: &str) -> Vec<TestFile> {
        let holds_tests = !is_test_path(file) && has_inline_tests(root, file);
        self.tests_among(file, holds_tests, self.graph.files.keys().map(String::as_str))
    }

    /// [`Self::tests_reaching`] with what the caller knows of the repository beyond the graph:
    /// whether `file` holds its own tests (the gatekeeper reads the staged content, not the
    /// disk), and `files`, the repository's files that tests are looked for among by name and
    /// by Go package (the gatekeeper's: the index's with the commit's added and deleted ones
    /// applied). A file the graph does not hold yet gets those two kinds; tests reaching it by
    /// import are the graph's. One definition of "this file is tested" for `impact --tests`,
    /// context packs, `run-tests --affected` and `require-test-for`.
    pub fn tests_among<'a, I>(&self, file: &str, holds_tests: bool, files: I) -> Vec<TestFile>
    where
        I: Iterator<Item = &'a str> + Clone,
    {
        let mut out: Vec<TestFile> = Vec::new();
        if is_test_path(file) {
            out.push(TestFile { path: file.into(), depth: 0, via: Vec::new(), reason: "is a test file".into() });
        } else if holds_tests {
            out.push(TestFile {
                path: file.into(),
                depth: 0,
                via: Vec::new(),
                reason: "holds its own tests (#[cfg(test)])".into(),
            });
        }
        let stem = stem_of(file);
        let generic = GENERIC_STEMS.contains(&stem);
        for candidate in files.clone() {
            if candidate == file || !is_test_path(candidate) {
                continue;
            }
            let name = candidate.rsplit('/').next().unwrap_or(candidate);
            let paired = subject_stem(name).is_some_and(|s| s.eq_ignore_ascii_case(stem))
                && (!generic || dir_of(candidate) == dir_of(file));
            if paired {
                out.push(TestFile {
                    path: candidate.to_string(),
                    depth: 0,
                    via: Vec::new(),
                    reason: format!("named after {file}"),
                });
            }
        }
        // A walk stopped by the ambient token leaves the tests found by name: the caller's own
        // look at the token ends its request (`impact_tests`, `run_tests --affected`).
        let dependents = match self.node_of(file).map(|n| self.traverse(n, false, MAX_DEPTH, usize::MAX)) {
            Some(Ok((dependents, _))) => dependents,
            Some(Err(_)) => return out,
            None => Vec::new(),
        };
        // Each dependent's edge points one hop closer to the file: follow them back.
        let next: HashMap<&str, &str> =
            dependents.iter().map(|d| (d.edge.source.as_str(), d.edge.target.as_str())).collect();
        for d in dependents.iter().filter(|d| !d.external && is_test_path(&d.path)) {
            if let Some(known) = out.iter_mut().find(|t| t.path == d.path) {
                // Named after the file (nearest, depth 0) and importing it: say both, the
                // import being the stronger evidence.
                if d.depth == 1 && known.via.is_empty() && known.path != file {
                    known.reason = format!("named after {file}, and imports it (line {})", d.edge.line);
                }
                continue;
            }
            let mut via = Vec::new();
            let mut at = d.path.as_str();
            while let Some(&n) = next.get(at) {
                via.push(n.to_string());
                if n == file || via.len() > MAX_DEPTH as usize {
                    break;
                }
                at = n;
            }
            let reason = if d.depth == 1 {
                format!("imports {file} (line {})", d.edge.line)
            } else {
                format!("reaches {file} through {}", via[..via.len().saturating_sub(1)].join(" -> "))
            };
            out.push(TestFile { path: d.path.clone(), depth: d.depth, via, reason });
        }
        go_package_tests(file, files, &dependents, &next, &mut out);
        out.sort_by_key(|t| t.depth);
        out
    }
}

/// Go's `_test.go` files import nothing of their own package, yet `go test` compiles them
/// with every file of it: a test beside `file`, or beside any Go file that reaches it,
/// exercises it. Only the test named after a file was found before (`db_test.go` for
/// `db.go`, not for `y.go` of the same package).
fn go_package_tests<'a>(
    file: &str,
    files: impl Iterator<Item = &'a str>,
    dependents: &[super::impact::Dependency],
    next: &HashMap<&str, &str>,
    out: &mut Vec<TestFile>,
) {
    let go_source = |p: &str| p.ends_with(".go") && !p.ends_with("_test.go");
    let mut packages: Vec<(&str, u32)> = Vec::new();
    if go_source(file) {
        packages.push((file, 0));
    }
    packages
        .extend(dependents.iter().filter(|d| !d.external && go_source(&d.path)).map(|d| (d.path.as_str(), d.depth)));
    if packages.is_empty() {
        return;
    }
    // Indexed once: a core file of a large Go repository has thousands of dependents.
    let mut tests_in: HashMap<&str, Vec<&str>> = HashMap::new();
    for t in files.filter(|t| t.ends_with("_test.go")) {
        tests_in.entry(dir_of(t)).or_default().push(t);
    }
    let mut seen: HashSet<String> = out.iter().map(|t| t.path.clone()).collect();
    for (member, depth) in packages {
        for &test in tests_in.get(dir_of(member)).map(Vec::as_slice).unwrap_or_default() {
            if !seen.insert(test.to_string()) {
                continue;
            }
            let mut via: Vec<String> = if member == file { Vec::new() } else { vec![member.to_string()] };
            let mut at = member;
            while at != file && via.len() <= MAX_DEPTH as usize {
                let Some(&n) = next.get(at) else { break };
                via.push(n.to_string());
                at = n;
            }
            let reason = if member == file {
                format!("in the Go package of {file}")
            } else {
                format!("in the Go package of {member}, which reaches {file}")
            };
            out.push(TestFile { path: test.to_string(), depth, via, reason });
        }
    }
}

impl Engine {
    /// The test files that exercise a file: by import (any depth), by name, or itself; the
    /// nearest `limit` listed.
    pub fn impact_tests(&self, repo_path: &Path, req: &TestsRequest) -> Result<TestsResponse> {
        let (repo, g) = self.impact_graph(repo_path)?;
        let file = normalize_file(&repo, &req.file)?;
        if !g.contains(&file) {
            return Err(unknown_file(&repo, &file, &g));
        }
        let mut tests = g.tests_reaching(&repo.root, &file);
        crate::engine::cancel::CancelToken::current().check()?;
        let total = tests.len();
        tests.truncate(list_limit(req.limit)?);
        Ok(TestsResponse {
            project_id: repo.fingerprint.clone(),
            repo: repo.root.clone(),
            truncated: tests.len() < total,
            tests,
            total,
            file,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_paths_follow_the_runners_conventions() {
        for p in [
            "tests/all/main.rs",
            "pkg/tests/test_x.py",
            "test_session.py",
            "src/session_test.py",
            "auth/session_test.go",
            "web/app.test.ts",
            "web/app.spec.mjs",
            "web/__tests__/app.js",
            "spec/models/user_spec.rb",
            "src/main/java/SessionTest.java",
            "Foo.Tests/FooTests.cs",
        ] {
            assert!(is_test_path(p), "{p}");
        }
        for p in ["src/session.py", "src/testing.rs", "latest.py", "contest.go", "src/attest.ts", "Latest.java"] {
            assert!(!is_test_path(p), "{p}");
        }
    }

    #[test]
    fn a_test_names_its_subject() {
        assert_eq!(subject_stem("test_session.py"), Some("session"));
        assert_eq!(subject_stem("session_test.go"), Some("session"));
        assert_eq!(subject_stem("app.test.ts"), Some("app"));
        assert_eq!(subject_stem("SessionTests.cs"), Some("Session"));
        assert_eq!(subject_stem("test_.py"), None);
        assert_eq!(stem_of("src/auth/session.rs"), "session");
    }
}
