//! The semantic gatekeeper (spec 001 §5.1): staged files checked against the constraints that
//! carry a [`Rule`], for `POST /v1/hooks/validate` and `docdex hook pre-commit`.
//!
//! The staged content is what gets parsed (the commit holds it, not the working tree); the rest
//! of the repository comes from the cached import graph, with the staged files' edges laid
//! over it, so a cycle closed by a staged edit is found without re-indexing anything.

use super::rules::{self, Rule};
use super::store;
use super::types::{
    ActiveRule, Category, HookStatus, HookValidateRequest, HookValidateResponse, Preference, RuleMark, StagedFile,
    Violation, TEAM_AGENT,
};
use crate::engine::code::graph::{self, Edge, GraphOptions, EXTERNAL_PREFIX};
use crate::engine::code::lang::{self, Lang};
use crate::engine::code::types::FileImports;
use crate::engine::fsutil;
use crate::engine::Engine;
use crate::error::{Error, Result};
use rayon::prelude::*;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;

/// The most staged files one request may name.
pub const MAX_STAGED_FILES: usize = 5_000;
/// Larger staged contents are not checked (a notice says so).
pub const MAX_STAGED_BYTES: usize = 2 * 1024 * 1024;
/// At most this many violations of one rule are reported per file.
const MAX_PER_FILE_RULE: usize = 20;

/// A constraint with its parsed rule.
struct Check {
    rule: Rule,
    pref: Preference,
}

/// A staged file read and parsed.
struct Staged {
    path: String,
    text: String,
    lang: Option<Lang>,
    tree: Option<tree_sitter::Tree>,
}

impl Engine {
    /// Checks staged files against the rules of the constraints in profile memory: this agent's
    /// and the team's, or every agent's when none is named. Answers in milliseconds from the
    /// cached import graph; a repository never indexed is checked file by file (a notice says
    /// that cycles through unstaged files cannot be seen).
    pub fn hook_validate(&self, repo_path: &Path, req: &HookValidateRequest) -> Result<HookValidateResponse> {
        let started = std::time::Instant::now();
        if req.files.len() > MAX_STAGED_FILES {
            return Err(Error::BadRequest(format!(
                "{} staged files; the gatekeeper checks at most {MAX_STAGED_FILES} per request",
                req.files.len()
            )));
        }
        let repo = self.resolve_repo(repo_path)?;
        let files: Vec<StagedFile> = req
            .files
            .iter()
            .map(|f| Ok(StagedFile { path: clean_path(&f.path)?, ..f.clone() }))
            .collect::<Result<_>>()?;
        let agent = req.agent_id.as_deref().map(str::trim).filter(|a| !a.is_empty()).map(str::to_string);
        let (checks, advice_only) = self.gate_checks(agent.as_deref())?;
        let mut notices = Vec::new();
        let staged = read_staged(&repo.root, &files, &checks, &mut notices);
        let mut violations = Vec::new();
        if !checks.is_empty() && !staged.is_empty() {
            violations = self.gate_run(&repo, &files, &staged, &checks, &mut notices);
        }
        violations.sort_by(|a, b| (&a.file, a.line, &a.rule).cmp(&(&b.file, b.line, &b.rule)));
        violations.dedup_by(|a, b| a.file == b.file && a.line == b.line && a.rule == b.rule);
        let rules = checks
            .iter()
            .map(|c| ActiveRule {
                rule: c.rule.canonical(),
                preference_id: c.pref.id.clone(),
                agent_id: c.pref.agent_id.clone(),
                content: c.pref.content.clone(),
            })
            .collect();
        Ok(HookValidateResponse {
            status: if violations.is_empty() { HookStatus::Pass } else { HookStatus::Fail },
            violations,
            agent_id: agent,
            checked_files: staged.len(),
            rules,
            advice_only,
            notices,
            elapsed_ms: started.elapsed().as_secs_f64() * 1000.0,
        })
    }

    /// The constraint rules `files` break as the repository stands, from the cached import
    /// graph: files on a cycle when a rule forbids cycles (danger), files importing what a
    /// `forbid-import` names (warning). The constraints are `agent`'s and the team's, else
    /// every agent's, as for the gatekeeper. What the impact graph's risk overlay draws.
    pub fn rule_marks(&self, repo_path: &Path, agent: Option<&str>, files: &[String]) -> Result<Vec<RuleMark>> {
        let (checks, _) = self.gate_checks(agent)?;
        if checks.is_empty() || files.is_empty() {
            return Ok(Vec::new());
        }
        let (_, g) = self.impact_graph(repo_path)?;
        let wanted: HashSet<&str> = files.iter().map(String::as_str).collect();
        let edges: Vec<Edge> = g.graph.edges.iter().filter(|e| wanted.contains(e.source.as_str())).cloned().collect();
        let diags: Vec<graph::Diagnostic> =
            g.graph.diagnostics.iter().filter(|d| wanted.contains(d.source.as_str())).cloned().collect();
        let mut out = Vec::new();
        for check in &checks {
            let found = match &check.rule {
                Rule::NoImportCycles => g
                    .graph
                    .cycles
                    .iter()
                    .flat_map(|c| {
                        let path = c.path.join(" -> ");
                        c.files
                            .iter()
                            .filter(|f| wanted.contains(f.as_str()))
                            .map(move |f| violation(check, f, 1, format!("on the import cycle {path}")))
                    })
                    .collect(),
                Rule::ForbidImport { pattern } => forbidden_imports(check, pattern, &edges, &diags),
                _ => Vec::new(),
            };
            let danger = matches!(check.rule, Rule::NoImportCycles);
            out.extend(found.into_iter().map(|v| RuleMark {
                file: v.file,
                rule: v.rule,
                danger,
                message: v.message,
                preference_id: v.preference_id,
                agent_id: v.agent_id,
                preference: v.preference,
            }));
        }
        out.sort_by(|a, b| (&a.file, !a.danger, &a.rule).cmp(&(&b.file, !b.danger, &b.rule)));
        out.dedup_by(|a, b| a.file == b.file && a.rule == b.rule);
        Ok(out)
    }

    /// The constraints that apply, with their rules, and the texts of those without one.
    fn gate_checks(&self, agent: Option<&str>) -> Result<(Vec<Check>, Vec<String>)> {
        let agent = agent.map(str::trim).filter(|a| !a.is_empty());
        if let Some(a) = agent {
            self.profile_agent_exists(a)?;
        }
        let prefs = self.profile_read(|c| match agent {
            Some(a) => store::preferences_of(c, &[TEAM_AGENT, a]),
            None => store::all_preferences(c),
        })?;
        let mut checks = Vec::new();
        let mut advice = Vec::new();
        for p in prefs.into_iter().filter(|p| p.category == Category::Constraint) {
            match p.rule.as_deref().map(Rule::parse) {
                Some(Ok(rule)) => checks.push(Check { rule, pref: p }),
                Some(Err(e)) => {
                    tracing::warn!(id = %p.id, error = %e, "a stored constraint's rule does not parse; skipped");
                    advice.push(p.content);
                }
                None => advice.push(p.content),
            }
        }
        Ok((checks, advice))
    }

    /// Every violation of `checks` in the staged files.
    fn gate_run(
        &self,
        repo: &crate::engine::repos::RepoRef,
        files: &[StagedFile],
        staged: &[Staged],
        checks: &[Check],
        notices: &mut Vec<String>,
    ) -> Vec<Violation> {
        let mut out = Vec::new();
        let needs_graph = checks.iter().any(|c| matches!(c.rule, Rule::NoImportCycles | Rule::ForbidImport { .. }));
        let needs_known = needs_graph || checks.iter().any(|c| matches!(c.rule, Rule::RequireTestFor { .. }));
        let graph = if needs_graph {
            match self.impact_graph(&repo.root) {
                Ok((_, g)) => Some(g),
                Err(e) => {
                    notices.push(format!(
                        "no import graph ({e}); imports are checked in the staged files only, so a cycle through unstaged files cannot be seen"
                    ));
                    None
                }
            }
        } else {
            None
        };
        let deleted: HashSet<&str> = files.iter().filter(|f| f.deleted).map(|f| f.path.as_str()).collect();
        let known: BTreeSet<String> = if needs_known {
            let manifest = crate::engine::index::manifest::Manifest::load(&repo.manifest_path());
            manifest
                .files
                .into_iter()
                .filter(|(_, e)| e.skipped.is_none())
                .map(|(p, _)| p)
                .chain(graph.iter().flat_map(|g| g.graph.files.keys().cloned()))
                .chain(staged.iter().map(|s| s.path.clone()))
                .filter(|p| !deleted.contains(p.as_str()))
                .collect()
        } else {
            BTreeSet::new()
        };
        // The staged files' own edges, resolved like an index run would.
        let (edges, unresolved) = if needs_graph {
            let imports: Vec<FileImports> = staged
                .iter()
                .filter_map(|s| {
                    let (lang, tree) = (s.lang?, s.tree.as_ref()?);
                    Some(FileImports {
                        path: s.path.clone(),
                        lang,
                        imports: crate::engine::code::imports::extract(lang, tree, &s.text),
                    })
                })
                .collect();
            let opts = GraphOptions {
                import_traces: false,
                state_dir: None,
                ..GraphOptions::from_config(&self.config().code_intelligence)
            };
            let g = graph::build(&repo.root, &imports, &known, &opts);
            (g.edges, g.diagnostics)
        } else {
            (Vec::new(), Vec::new())
        };
        for check in checks {
            match &check.rule {
                Rule::NoImportCycles => {
                    let old = graph.as_ref().map(|g| g.graph.edges.as_slice()).unwrap_or(&[]);
                    out.extend(cycles(check, staged, &deleted, old, &edges));
                }
                Rule::ForbidImport { pattern } => {
                    out.extend(forbidden_imports(check, pattern, &edges, &unresolved));
                }
                Rule::ForbidNode { language, kind, name } => {
                    let langs = rules::languages(language);
                    for s in staged.iter().filter(|s| s.lang.is_some_and(|l| langs.contains(&l))) {
                        out.extend(forbidden_nodes(check, s, kind, name.as_deref()));
                    }
                }
                Rule::MaxLines { max, glob } => {
                    let matcher = glob.as_deref().and_then(|g| rules::glob(g).ok());
                    for s in staged {
                        if glob.is_some() && !matcher.as_ref().is_some_and(|m| m.is_match(&s.path)) {
                            continue;
                        }
                        let lines = s.text.lines().count();
                        if lines > *max as usize {
                            out.push(violation(
                                check,
                                &s.path,
                                max.saturating_add(1),
                                format!("{lines} lines, more than the {max} allowed"),
                            ));
                        }
                    }
                }
                Rule::RequireTestFor { glob } => {
                    let Ok(matcher) = rules::glob(glob) else { continue };
                    for s in staged.iter().filter(|s| matcher.is_match(&s.path) && !is_test_path(&s.path)) {
                        if !has_test(&s.path, &known) {
                            out.push(violation(
                                check,
                                &s.path,
                                1,
                                format!(
                                    "no test for {} (expected a file such as {}.test.* or tests/…{}…)",
                                    s.path,
                                    stem(&s.path),
                                    stem(&s.path)
                                ),
                            ));
                        }
                    }
                }
            }
        }
        out
    }
}

fn violation(check: &Check, file: &str, line: u32, message: String) -> Violation {
    Violation {
        rule: check.rule.canonical(),
        file: file.to_string(),
        line,
        message,
        preference_id: check.pref.id.clone(),
        agent_id: check.pref.agent_id.clone(),
        preference: check.pref.content.clone(),
    }
}

/// A repo-relative path with `/` separators, or a bad-request error for anything that could
/// leave the repository.
fn clean_path(path: &str) -> Result<String> {
    let p = path.trim().replace('\\', "/");
    let p = p.trim_start_matches("./");
    let bad = p.is_empty()
        || p.starts_with('/')
        || p.contains('\0')
        || p.split('/').any(|c| c == ".." || c.is_empty())
        || Path::new(p).has_root();
    if bad {
        return Err(Error::BadRequest(format!("staged path {path:?} is not a relative path inside the repository")));
    }
    Ok(p.to_string())
}

/// Reads (when not sent) and parses the staged files a rule can look at.
fn read_staged(root: &Path, files: &[StagedFile], checks: &[Check], notices: &mut Vec<String>) -> Vec<Staged> {
    let parse = checks
        .iter()
        .any(|c| matches!(c.rule, Rule::NoImportCycles | Rule::ForbidImport { .. } | Rule::ForbidNode { .. }));
    let read: Vec<std::result::Result<(String, String), String>> = files
        .iter()
        .filter(|f| !f.deleted)
        .map(|f| match &f.content {
            Some(text) if text.len() > MAX_STAGED_BYTES => {
                Err(format!("{} is larger than {} MiB; not checked", f.path, MAX_STAGED_BYTES >> 20))
            }
            Some(text) => Ok((f.path.clone(), text.clone())),
            None => read_worktree(root, &f.path).map(|t| (f.path.clone(), t)),
        })
        .collect();
    let mut ok = Vec::new();
    for r in read {
        match r {
            Ok(x) => ok.push(x),
            Err(n) => notices.push(n),
        }
    }
    ok.into_par_iter()
        .map(|(path, text)| {
            let lang = Lang::from_path(Path::new(&path));
            let tree = if parse { lang.and_then(|l| lang::parse(l, &text)) } else { None };
            Staged { path, text, lang, tree }
        })
        .collect()
}

/// A working-tree file for a staged path sent without its content, through the one opener: a
/// regular file inside the repository (no symlink anywhere on the way) of text within the size limit.
fn read_worktree(root: &Path, rel: &str) -> std::result::Result<String, String> {
    use std::io::Read;
    let file = fsutil::open_repo_file(root, rel).map_err(|e| format!("{rel}: {e}; not checked"))?;
    let len = file.metadata().map_err(|e| format!("{rel}: {e}; not checked"))?.len();
    if len > MAX_STAGED_BYTES as u64 {
        return Err(format!("{rel} is larger than {} MiB; not checked", MAX_STAGED_BYTES >> 20));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(MAX_STAGED_BYTES as u64 + 1).read_to_end(&mut bytes).map_err(|e| format!("{rel}: {e}; not checked"))?;
    String::from_utf8(bytes).map_err(|_| format!("{rel} is not UTF-8 text; not checked"))
}

/// Staged files on an import cycle of the graph as the commit leaves it.
fn cycles(check: &Check, staged: &[Staged], deleted: &HashSet<&str>, old: &[Edge], new: &[Edge]) -> Vec<Violation> {
    let changed: HashSet<&str> = staged.iter().map(|s| s.path.as_str()).chain(deleted.iter().copied()).collect();
    let mut edges: Vec<Edge> = old
        .iter()
        .filter(|e| !e.external && !changed.contains(e.source.as_str()) && !deleted.contains(e.target.as_str()))
        .cloned()
        .collect();
    edges.extend(new.iter().filter(|e| !e.external && !deleted.contains(e.target.as_str())).cloned());
    let lines: HashMap<(&str, &str), u32> =
        new.iter().map(|e| ((e.source.as_str(), e.target.as_str()), e.line)).collect();
    let staged_set: HashSet<&str> = staged.iter().map(|s| s.path.as_str()).collect();
    let mut out = Vec::new();
    for cycle in graph::find_cycles(&edges) {
        let path = cycle.path.join(" -> ");
        for w in cycle.path.windows(2) {
            if staged_set.contains(w[0].as_str()) {
                let line = lines.get(&(w[0].as_str(), w[1].as_str())).copied().unwrap_or(1).max(1);
                out.push(violation(check, &w[0], line, format!("import cycle: {path}")));
            }
        }
    }
    out
}

/// Imports of a package, path or glob the rule forbids.
fn forbidden_imports(check: &Check, pattern: &str, edges: &[Edge], unresolved: &[graph::Diagnostic]) -> Vec<Violation> {
    let matcher = rules::glob(pattern).ok();
    let hit = |what: &str| {
        package_matches(pattern, what) || matcher.as_ref().is_some_and(|m| m.is_match(what.trim_start_matches("./")))
    };
    let mut out = Vec::new();
    for e in edges {
        let target = e.target.strip_prefix(EXTERNAL_PREFIX).unwrap_or(&e.target);
        if hit(target) || (e.external && hit(&e.spec)) {
            let what = if e.external { format!("the package {target}") } else { target.to_string() };
            out.push(violation(
                check,
                &e.source,
                e.line.max(1),
                format!("imports {what} (`{}`), which is forbidden", e.spec),
            ));
        }
    }
    for d in unresolved.iter().filter(|d| hit(&d.spec)) {
        out.push(violation(check, &d.source, d.line.max(1), format!("imports `{}`, which is forbidden", d.spec)));
    }
    out
}

/// `moment` forbids `moment` and `moment/locale/fr`; `lodash/fp` forbids that subpath only;
/// Python's dotted and Rust's `::` paths count as subpaths too.
fn package_matches(pattern: &str, spec: &str) -> bool {
    let p = pattern.trim_end_matches('/');
    spec == p
        || spec
            .strip_prefix(p)
            .is_some_and(|rest| rest.starts_with('/') || rest.starts_with('.') || rest.starts_with("::"))
}

/// Nodes of `kind` (with exactly `name` as text, when given) in a staged file.
fn forbidden_nodes(check: &Check, s: &Staged, kind: &str, name: Option<&str>) -> Vec<Violation> {
    let Some(tree) = &s.tree else { return Vec::new() };
    let mut out = Vec::new();
    let mut cursor = tree.walk();
    'walk: loop {
        let node = cursor.node();
        if node.kind() == kind {
            let text = s.text.get(node.byte_range()).unwrap_or("");
            if name.is_none_or(|n| n == text) {
                let shown: String = text.chars().take(60).collect();
                out.push(violation(
                    check,
                    &s.path,
                    node.start_position().row as u32 + 1,
                    format!("`{shown}` ({kind}) is forbidden here"),
                ));
                if out.len() >= MAX_PER_FILE_RULE {
                    break;
                }
            }
        }
        if cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                continue 'walk;
            }
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    out
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The file name up to its first dot (`users.service.ts` → `users`).
fn stem(path: &str) -> &str {
    let name = file_name(path);
    name.split('.').next().unwrap_or(name)
}

/// Test files by the usual conventions: a tests folder, `.test.`/`.spec.`, `test_x`, `x_test`,
/// `XTest`.
fn is_test_path(path: &str) -> bool {
    let dirs = path.split('/').rev().skip(1);
    if dirs.into_iter().any(|d| matches!(d, "test" | "tests" | "__tests__" | "spec" | "specs")) {
        return true;
    }
    let name = file_name(path);
    let s = stem(path);
    name.contains(".test.")
        || name.contains(".spec.")
        || s.starts_with("test_")
        || ["_test", "_spec", "Test", "Tests", "Spec"].iter().any(|x| s.ends_with(x))
}

/// The subject of a test file's name (`users.test.ts`, `test_users.py`, `UsersTest.java` →
/// `users`/`Users`).
fn test_subject(path: &str) -> &str {
    let s = stem(path);
    let s = s.strip_prefix("test_").unwrap_or(s);
    ["_test", "_spec", "Tests", "Test", "Spec"].iter().find_map(|x| s.strip_suffix(x)).unwrap_or(s)
}

/// True if some repository file is a test for `path`.
fn has_test(path: &str, known: &BTreeSet<String>) -> bool {
    let subject = stem(path).to_ascii_lowercase();
    known.iter().any(|k| k != path && is_test_path(k) && test_subject(k).to_ascii_lowercase() == subject)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staged_paths_stay_inside_the_repository() {
        assert_eq!(clean_path("./src/a.ts").unwrap(), "src/a.ts");
        assert_eq!(clean_path("src\\a.ts").unwrap(), "src/a.ts");
        for bad in ["../x", "/etc/passwd", "src/../../x", "", "a//b", "a\0b"] {
            assert!(clean_path(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn packages_match_themselves_and_their_subpaths_only() {
        assert!(package_matches("moment", "moment"));
        assert!(package_matches("moment", "moment/locale/fr"));
        assert!(!package_matches("moment", "moment-timezone"));
        assert!(!package_matches("lodash", "lodash-es"));
        assert!(package_matches("lodash/fp", "lodash/fp/map"));
        assert!(!package_matches("lodash/fp", "lodash"));
        assert!(package_matches("requests", "requests.adapters"));
        assert!(package_matches("serde_json", "serde_json::Value"));
    }

    #[test]
    fn tests_are_found_by_the_usual_conventions() {
        let known: BTreeSet<String> = [
            "src/api/users.ts",
            "src/api/users.test.ts",
            "src/api/orders.ts",
            "tests/test_billing.py",
            "src/billing.py",
            "src/main/java/Cart.java",
            "src/test/java/CartTest.java",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert!(has_test("src/api/users.ts", &known));
        assert!(!has_test("src/api/orders.ts", &known));
        assert!(has_test("src/billing.py", &known));
        assert!(has_test("src/main/java/Cart.java", &known));
        assert!(is_test_path("src/__tests__/x.ts"));
        assert!(!is_test_path("src/latest.ts"));
    }
}
