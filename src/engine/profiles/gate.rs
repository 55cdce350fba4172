//! The semantic gatekeeper (spec 001 §5.1): staged files checked against the constraints that
//! carry a [`Rule`], for `POST /v1/hooks/validate` and `docdex hook pre-commit`.
//!
//! The staged content is what gets parsed (the commit holds it, not the working tree); the rest
//! of the repository comes from the cached import graph, with the staged files' edges laid
//! over it, so a cycle closed by a staged edit is found without re-indexing anything.
//!
//! Where a request's time goes (profiled on eslint, 10 staged files): parsing the staged files
//! (about two thirds), walking their trees for imports and forbidden nodes (most of the rest);
//! reading the index manifest and indexing the repository's file set for the resolver is small
//! there but grows with the repository. So each staged file is read, parsed, walked once for
//! every rule and its tree freed on the rayon pool, and the repository's file set is kept per
//! index generation ([`GateCache`]).

use super::rules::{self, Rule};
use super::store;
use super::types::{
    ActiveRule, Category, HookStatus, HookValidateRequest, HookValidateResponse, Preference, RuleMark, StagedFile,
    Violation, TEAM_AGENT,
};
use crate::engine::cancel::CancelToken;
use crate::engine::code::graph::{self, Edge, GraphOptions, EXTERNAL_PREFIX};
use crate::engine::code::impact::LoadedGraph;
use crate::engine::code::imports::RawImport;
use crate::engine::code::lang::{self, Lang};
use crate::engine::code::resolve::RepoFiles;
use crate::engine::code::test_files;
use crate::engine::code::types::FileImports;
use crate::engine::fsutil;
use crate::engine::repos::RepoRef;
use crate::engine::Engine;
use crate::error::{Error, Result};
use rayon::prelude::*;
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The most staged files one request may name.
pub const MAX_STAGED_FILES: usize = 5_000;
/// Larger staged contents are not checked (a notice says so).
pub const MAX_STAGED_BYTES: usize = 2 * 1024 * 1024;
/// At most this many violations of one rule are reported per file.
const MAX_PER_FILE_RULE: usize = 20;

/// A staged file's bytes as the gatekeeper checks them, or why they are not checked (a
/// notice, `"{path} is binary; not checked"`): the text the index reads from the same bytes
/// (`fsutil::decode_text`, so a Latin-1 or UTF-16 file is checked as it is indexed), never a
/// binary file (the index's own NUL rule) nor one over [`MAX_STAGED_BYTES`]. The hook reads the
/// staged blobs with it and the endpoint a working-tree file: a Latin-1 Python file importing
/// a forbidden package was dropped by the hook in silence, and the commit passed.
pub fn staged_text(path: &str, bytes: Vec<u8>) -> std::result::Result<String, String> {
    if bytes.len() > MAX_STAGED_BYTES {
        return Err(format!("{path} is larger than {} MiB; not checked", MAX_STAGED_BYTES >> 20));
    }
    if fsutil::looks_binary(&bytes) {
        return Err(format!("{path} is binary (a NUL byte near its start, as the index reads it); not checked"));
    }
    Ok(fsutil::decode_text_owned(bytes))
}

/// A constraint with its parsed rule.
struct Check {
    rule: Rule,
    pref: Preference,
}

/// A staged file after its one pass on the rayon pool: what the rules need from it (its syntax
/// tree is freed there).
struct Staged {
    path: String,
    lang: Option<Lang>,
    lines: usize,
    /// True when its staged content holds its own tests (a Rust `#[cfg(test)]` module).
    holds_tests: bool,
    /// Its imports, when a rule looks at imports and the file parsed.
    imports: Option<Vec<RawImport>>,
    /// Its violations of the `forbid-node` rules.
    node_hits: Vec<Violation>,
}

/// A `forbid-node` rule with its node kind as the grammars' numeric ids (comparing ids, not
/// kind names, on every node of a walk).
struct NodeRule<'a> {
    check: &'a Check,
    kind: &'a str,
    name: Option<&'a str>,
    /// The languages it applies to, each with the ids named `kind` (aliases included).
    ids: Vec<(Lang, Vec<u16>)>,
}

impl<'a> NodeRule<'a> {
    fn of(check: &'a Check) -> Option<NodeRule<'a>> {
        let Rule::ForbidNode { language, kind, name } = &check.rule else { return None };
        let ids = rules::languages(language)
            .into_iter()
            .map(|l| {
                let g = l.grammar();
                let ids = (0..g.node_kind_count())
                    .filter_map(|id| u16::try_from(id).ok())
                    .filter(|&id| g.node_kind_for_id(id) == Some(kind.as_str()))
                    .collect();
                (l, ids)
            })
            .collect();
        Some(NodeRule { check, kind, name: name.as_deref(), ids })
    }

    fn ids(&self, lang: Lang) -> Option<&[u16]> {
        self.ids.iter().find(|(l, _)| *l == lang).map(|(_, ids)| ids.as_slice())
    }
}

/// The repository's file set as the gatekeeper resolves against it: the index manifest's files
/// and the import graph's, with the resolver's lookups built over them.
struct RepoSet {
    /// The manifest's and the graph's stamps when it was read.
    stamps: (Option<Stamp>, Option<Stamp>),
    known: BTreeSet<String>,
    files: Arc<RepoFiles>,
}

/// Identity of a state file: a rewrite (always a rename of a new file) changes it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    inode: u64,
}

impl Stamp {
    fn of(path: &Path) -> Option<Stamp> {
        let m = std::fs::metadata(path).ok()?;
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&m);
        #[cfg(not(unix))]
        let inode = 0;
        Some(Stamp { len: m.len(), modified: m.modified().ok(), inode })
    }
}

/// [`RepoSet`]s per repository, kept while the index manifest and the import graph on disk are
/// the ones they were built from: a full index, a watcher batch or a graph rebuild rewrites one
/// of them, and the next request rebuilds the set.
#[derive(Default)]
pub(crate) struct GateCache {
    entries: Mutex<HashMap<String, Arc<RepoSet>>>,
}

impl Engine {
    /// Checks staged files against the rules of the constraints in profile memory: this agent's
    /// and the team's, or every agent's when none is named. Answers in milliseconds from the
    /// cached import graph; a repository never indexed is checked file by file (a notice says
    /// that cycles through unstaged files cannot be seen). Ends with [`Error::Cancelled`] once
    /// the thread's ambient token trips (its client left): looked at per staged file parsed,
    /// per rule and per import cycle found.
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
        let cancel = CancelToken::current();
        let staged = read_staged(&repo.root, &files, &checks, &mut notices, &cancel)?;
        let checked_files = staged.len();
        let mut violations = Vec::new();
        if !checks.is_empty() && !staged.is_empty() {
            violations = self.gate_run(&repo, &files, staged, &checks, (&mut notices, &cancel))?;
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
            checked_files,
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
    /// Ends with [`Error::Cancelled`] once the thread's ambient token trips (the workbench asked
    /// for another diagram meanwhile, or quit): looked at per rule, per cycle and, on a cycle,
    /// every few files whose loop it walks.
    pub fn rule_marks(&self, repo_path: &Path, agent: Option<&str>, files: &[String]) -> Result<Vec<RuleMark>> {
        let cancel = CancelToken::current();
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
            cancel.check()?;
            let found = match &check.rule {
                Rule::NoImportCycles => cycle_marks(check, &g.graph, &wanted, &cancel)?,
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
            // An id no agent can have names no agent either: the hook refuses both alike.
            super::valid_agent(a).map_err(|e| Error::UnknownAgent(e.to_string()))?;
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
        credit_order(&mut checks);
        Ok((checks, advice))
    }

    /// Every violation of `checks` in the staged files; [`Error::Cancelled`] once `cancel` trips
    /// (looked at per rule, and per cycle for `no-import-cycles`).
    fn gate_run(
        &self,
        repo: &RepoRef,
        files: &[StagedFile],
        staged: Vec<Staged>,
        checks: &[Check],
        (notices, cancel): (&mut Vec<String>, &CancelToken),
    ) -> Result<Vec<Violation>> {
        let mut out = Vec::new();
        let needs_graph = checks.iter().any(|c| matches!(c.rule, Rule::NoImportCycles | Rule::ForbidImport { .. }));
        let needs_tests = checks.iter().any(|c| matches!(c.rule, Rule::RequireTestFor { .. }));
        let needs_known = needs_graph || needs_tests;
        let graph = if needs_known {
            match self.impact_graph(&repo.root) {
                Ok((_, g)) => Some(g),
                Err(e) => {
                    notices.push(if needs_graph {
                        format!("no import graph ({e}); imports are checked in the staged files only, so a cycle through unstaged files cannot be seen")
                    } else {
                        format!("no import graph ({e}); a test is found by its name, its Go package or the file's own tests, not by what it imports")
                    });
                    None
                }
            }
        } else {
            None
        };
        let deleted: HashSet<&str> = files.iter().filter(|f| f.deleted).map(|f| f.path.as_str()).collect();
        // The repository's files as the commit leaves them: the cached set when the commit adds
        // and deletes none, else a copy with the staged paths added and the deleted ones removed.
        let base = needs_known.then(|| self.gate_repo_set(repo));
        let (known, repo_files): (Cow<'_, BTreeSet<String>>, Option<Arc<RepoFiles>>) = match &base {
            Some(base) if deleted.is_empty() && staged.iter().all(|s| base.known.contains(&s.path)) => {
                (Cow::Borrowed(&base.known), Some(base.files.clone()))
            }
            Some(base) => {
                let known = base
                    .known
                    .iter()
                    .cloned()
                    .chain(staged.iter().map(|s| s.path.clone()))
                    .filter(|p| !deleted.contains(p.as_str()))
                    .collect();
                (Cow::Owned(known), None)
            }
            None => (Cow::Owned(BTreeSet::new()), None),
        };
        // The staged files' own edges, resolved like an index run would.
        let (edges, unresolved) =
            if needs_graph { self.staged_edges(repo, &staged, &known, repo_files) } else { (Vec::new(), Vec::new()) };
        for check in checks {
            cancel.check()?;
            match &check.rule {
                Rule::NoImportCycles => {
                    let old = graph.as_ref().map(|g| g.graph.edges.as_slice()).unwrap_or(&[]);
                    out.extend(cycles(check, &staged, &deleted, old, &edges, cancel)?);
                }
                Rule::ForbidImport { pattern } => {
                    out.extend(forbidden_imports(check, pattern, &edges, &unresolved));
                }
                // Found during each file's walk (see `read_staged`).
                Rule::ForbidNode { .. } => {}
                Rule::MaxLines { max, glob } => out.extend(too_long(check, *max, glob.as_deref(), &staged)),
                Rule::RequireTestFor { glob } => {
                    out.extend(untested(check, glob, &staged, &known, graph.as_deref(), (&repo.root, cancel))?)
                }
            }
        }
        out.extend(staged.into_iter().flat_map(|s| s.node_hits));
        Ok(out)
    }

    /// The import edges of the staged files (and the imports that resolve to no file), over
    /// the repository's files as the commit leaves them.
    fn staged_edges(
        &self,
        repo: &RepoRef,
        staged: &[Staged],
        known: &BTreeSet<String>,
        repo_files: Option<Arc<RepoFiles>>,
    ) -> (Vec<Edge>, Vec<graph::Diagnostic>) {
        let imports: Vec<FileImports> = staged
            .iter()
            .filter_map(|s| Some(FileImports { path: s.path.clone(), lang: s.lang?, imports: s.imports.clone()? }))
            .collect();
        let opts = GraphOptions {
            import_traces: false,
            state_dir: None,
            ..GraphOptions::from_config(&self.config().code_intelligence)
        };
        let g = match repo_files {
            Some(rf) => graph::build_over(&repo.root, &imports, known, rf, &opts),
            None => graph::build(&repo.root, &imports, known, &opts),
        };
        (g.edges, g.diagnostics)
    }

    /// The repository's file set for the gatekeeper, from the cache while the index manifest and
    /// the import graph on disk are unchanged.
    fn gate_repo_set(&self, repo: &RepoRef) -> Arc<RepoSet> {
        let cache = &self.profiles().gate;
        // Stamped before reading: a rewrite in between makes the next request read again.
        let stamps = (Stamp::of(&repo.manifest_path()), Stamp::of(&graph::graph_path(repo)));
        if let Ok(entries) = cache.entries.lock() {
            if let Some(set) = entries.get(&repo.fingerprint) {
                if set.stamps == stamps {
                    return set.clone();
                }
            }
        }
        let manifest = crate::engine::index::manifest::Manifest::load(&repo.manifest_path());
        let graph = self.impact_graph(&repo.root).ok().map(|(_, g)| g);
        let known: BTreeSet<String> = manifest
            .files
            .into_iter()
            .filter(|(_, e)| e.skipped.is_none())
            .map(|(p, _)| p)
            .chain(graph.iter().flat_map(|g| g.graph.files.keys().cloned()))
            .collect();
        let files = Arc::new(RepoFiles::new(known.iter()));
        let set = Arc::new(RepoSet { stamps, known, files });
        if let Ok(mut entries) = cache.entries.lock() {
            entries.insert(repo.fingerprint.clone(), set.clone());
        }
        set
    }
}

/// Orders the checks so that a violation two constraints share (the same rule, kept by two
/// preferences) is always credited to the same one: the earliest written (`last_updated`),
/// then the lowest id. The violations are deduplicated keeping the first, and the order the
/// store reads them in (newest first per agent, or by random id across agents) decided it.
fn credit_order(checks: &mut [Check]) {
    checks.sort_by(|a, b| (a.pref.last_updated, &a.pref.id).cmp(&(b.pref.last_updated, &b.pref.id)));
}

/// `max-lines`: the staged files (under the rule's glob, if any) longer than `max`.
fn too_long(check: &Check, max: u32, glob: Option<&str>, staged: &[Staged]) -> Vec<Violation> {
    let matcher = glob.and_then(|g| rules::glob(g).ok());
    staged
        .iter()
        .filter(|s| glob.is_none() || matcher.as_ref().is_some_and(|m| m.is_match(&s.path)))
        .filter(|s| s.lines > max as usize)
        .map(|s| {
            violation(check, &s.path, max.saturating_add(1), format!("{} lines, more than the {max} allowed", s.lines))
        })
        .collect()
}

/// `require-test-for`: the staged files under the glob that no test exercises, by the one rule
/// `docdex impact --file F --tests` follows ([`LoadedGraph::tests_among`]): itself a test or
/// holding its own tests (the staged content is read), a test named after it or in its Go
/// package among the files as the commit leaves them (`known`), or a test reaching it through
/// the cached import graph. [`Error::Cancelled`] once `cancel` trips (looked at per file: a
/// core file's dependents are the whole repository).
fn untested(
    check: &Check,
    glob: &str,
    staged: &[Staged],
    known: &BTreeSet<String>,
    graph: Option<&LoadedGraph>,
    (root, cancel): (&Path, &CancelToken),
) -> Result<Vec<Violation>> {
    let Ok(matcher) = rules::glob(glob) else { return Ok(Vec::new()) };
    let empty;
    let graph = match graph {
        Some(g) => g,
        None => {
            empty = LoadedGraph::new(graph::build(root, &[], &BTreeSet::new(), &GraphOptions::default()));
            &empty
        }
    };
    let mut out = Vec::new();
    for s in staged.iter().filter(|s| matcher.is_match(&s.path)) {
        let tests = graph.tests_among(&s.path, s.holds_tests, known.iter().map(String::as_str));
        cancel.check()?;
        // A test the commit deletes is in the cached graph still: it tests nothing.
        if !tests.iter().any(|t| t.path == s.path || known.contains(&t.path)) {
            let why = format!(
                "no test for {p}: no test file is named after it, imports it or shares its Go package, and it holds no tests of its own (`docdex impact --file {p} --tests` lists none)",
                p = s.path
            );
            out.push(violation(check, &s.path, 1, why));
        }
    }
    Ok(out)
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

/// Reads the staged files (when not sent) and gives each one pass on the rayon pool: parsed
/// when a rule looks at its syntax, its imports extracted, its tree walked once for every
/// `forbid-node` rule of its language, the tree freed. [`Error::Cancelled`] once `cancel`
/// trips: the files not yet parsed are left (the token is taken by the caller, for rayon's
/// threads).
fn read_staged(
    root: &Path,
    files: &[StagedFile],
    checks: &[Check],
    notices: &mut Vec<String>,
    cancel: &CancelToken,
) -> Result<Vec<Staged>> {
    let needs_imports = checks.iter().any(|c| matches!(c.rule, Rule::NoImportCycles | Rule::ForbidImport { .. }));
    let node_rules: Vec<NodeRule> = checks.iter().filter_map(NodeRule::of).collect();
    let read: Vec<std::result::Result<(String, Cow<'_, str>), String>> = files
        .iter()
        .filter(|f| !f.deleted)
        .map(|f| match &f.content {
            Some(text) if text.len() > MAX_STAGED_BYTES => {
                Err(format!("{} is larger than {} MiB; not checked", f.path, MAX_STAGED_BYTES >> 20))
            }
            Some(text) => Ok((f.path.clone(), Cow::Borrowed(text.as_str()))),
            None => read_worktree(root, &f.path).map(|t| (f.path.clone(), Cow::Owned(t))),
        })
        .collect();
    let mut ok = Vec::new();
    for r in read {
        match r {
            Ok(x) => ok.push(x),
            Err(n) => notices.push(n),
        }
    }
    let staged: Vec<Option<Staged>> = ok
        .into_par_iter()
        .map(|(path, text)| {
            if cancel.is_cancelled() {
                return None;
            }
            let lang = Lang::from_path(Path::new(&path));
            let lines = text.lines().count();
            let (mut imports, mut node_hits) = (None, Vec::new());
            if let Some(l) = lang {
                // A rule naming the node's text cannot match a file that lacks the text.
                let here: Vec<(&NodeRule, &[u16])> = node_rules
                    .iter()
                    .filter(|r| r.name.is_none_or(|n| text.contains(n)))
                    .filter_map(|r| Some((r, r.ids(l)?)))
                    .collect();
                if needs_imports || !here.is_empty() {
                    if let Some(tree) = lang::parse(l, &text) {
                        if needs_imports {
                            imports = Some(crate::engine::code::imports::extract(l, &tree, &text));
                        }
                        node_hits = forbidden_nodes(&here, &path, &tree, &text);
                    }
                }
            }
            let holds_tests = test_files::holds_inline_tests(&path, &text);
            Some(Staged { path, lang, lines, holds_tests, imports, node_hits })
        })
        .collect();
    cancel.check()?;
    Ok(staged.into_iter().flatten().collect())
}

/// A working-tree file for a staged path sent without its content, through the one opener: a
/// regular file inside the repository (no symlink anywhere on the way) of text within the size limit.
fn read_worktree(root: &Path, rel: &str) -> std::result::Result<String, String> {
    let bytes = fsutil::read_repo_file_capped(root, rel, MAX_STAGED_BYTES as u64).map_err(|e| {
        // The opener's refusal reads "Too many levels of symbolic links": say what it means.
        if fsutil::is_symlink_refusal(&e) {
            format!("{rel} is a symbolic link (or under one); not checked: the gatekeeper reads only regular files inside the repository, never what a link points to (send the file's content, or stage the file itself)")
        } else {
            format!("{rel}: {e}; not checked")
        }
    })?
        .ok_or_else(|| format!("{rel} is larger than {} MiB; not checked", MAX_STAGED_BYTES >> 20))?;
    staged_text(rel, bytes)
}

/// Staged files on an import cycle of the graph as the commit leaves it; [`Error::Cancelled`]
/// once `cancel` trips (looked at after the components are found and before each cycle's
/// loops are walked: a large repository's are seconds of work).
fn cycles(
    check: &Check,
    staged: &[Staged],
    deleted: &HashSet<&str>,
    old: &[Edge],
    new: &[Edge],
    cancel: &CancelToken,
) -> Result<Vec<Violation>> {
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
        cancel.check()?;
        // Every staged file of the component, not only those on its one example loop: each is
        // shown its own shortest loop, from itself round to itself, the middle of a long loop
        // elided (a 5,000-file loop was 100 kB in every staged file's message).
        let on: Vec<&str> = cycle.files.iter().map(String::as_str).filter(|f| staged_set.contains(f)).collect();
        if on.is_empty() {
            continue;
        }
        let loops = graph::loop_paths_through(&edges, &cycle, &on);
        for f in on {
            let Some(path) = loops.get(f).filter(|p| p.len() > 1) else { continue };
            let line = lines.get(&(path[0], path[1])).copied().unwrap_or(1).max(1);
            let text = graph::loop_text(path, graph::LOOP_TEXT_HOPS);
            out.push(violation(check, f, line, format!("import cycle: {text}")));
        }
    }
    Ok(out)
}

/// The files of `wanted` on an import cycle, each shown a loop through itself (a large
/// cycle's own example path may not pass through the file at all). [`Error::Cancelled`] once
/// `cancel` trips, looked at per cycle and inside [`graph::loops_through`].
fn cycle_marks(
    check: &Check,
    g: &graph::ImpactGraph,
    wanted: &HashSet<&str>,
    cancel: &CancelToken,
) -> Result<Vec<Violation>> {
    let mut found = Vec::new();
    for c in &g.cycles {
        cancel.check()?;
        let on: Vec<&str> = c.files.iter().map(String::as_str).filter(|f| wanted.contains(f)).collect();
        if on.is_empty() {
            continue;
        }
        let loops = graph::loops_through(&g.edges, c, &on, cancel)?;
        for f in on {
            let path = match loops.get(f) {
                Some(text) => text.clone(),
                None => graph::loop_text(&c.path, graph::LOOP_TEXT_HOPS),
            };
            found.push(violation(check, f, 1, format!("on the import cycle {path}")));
        }
    }
    Ok(found)
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

/// Nodes a `forbid-node` rule names (of its kind, with exactly its text when it gives one) in
/// one walk of a staged file's tree, at most [`MAX_PER_FILE_RULE`] per rule.
fn forbidden_nodes(rules: &[(&NodeRule, &[u16])], path: &str, tree: &tree_sitter::Tree, text: &str) -> Vec<Violation> {
    let mut out = Vec::new();
    if rules.is_empty() {
        return out;
    }
    let mut found = vec![0usize; rules.len()];
    let mut cursor = tree.walk();
    'walk: loop {
        let node = cursor.node();
        let id = node.kind_id();
        for (i, (rule, ids)) in rules.iter().enumerate() {
            if found[i] >= MAX_PER_FILE_RULE || !ids.contains(&id) {
                continue;
            }
            let t = text.get(node.byte_range()).unwrap_or("");
            if rule.name.is_none_or(|n| n == t) {
                let shown: String = t.chars().take(60).collect();
                out.push(violation(
                    rule.check,
                    path,
                    node.start_position().row as u32 + 1,
                    format!("`{shown}` ({}) is forbidden here", rule.kind),
                ));
                found[i] += 1;
            }
        }
        if found.iter().all(|&n| n >= MAX_PER_FILE_RULE) {
            break;
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

#[cfg(test)]
mod tests {
    use super::super::types::PreferenceSource;
    use super::*;
    use crate::engine::code::graph::test_import as import;

    #[test]
    fn staged_bytes_are_checked_as_the_index_reads_them_and_the_rest_is_named() {
        let latin1 = b"import requests\nname = 'caf\xe9'\n".to_vec();
        assert_eq!(staged_text("app/x.py", latin1).as_deref(), Ok("import requests\nname = 'café'\n"));
        let binary = b"import requests\n\0\x01".to_vec();
        assert!(staged_text("app/b.py", binary).is_err_and(|why| why.starts_with("app/b.py is binary")));
        let big = vec![b'x'; MAX_STAGED_BYTES + 1];
        assert!(staged_text("big.py", big).is_err_and(|why| why.contains("larger than 2 MiB")));
    }

    fn no_cycles_check() -> Check {
        Check {
            rule: Rule::NoImportCycles,
            pref: Preference {
                id: "p1".into(),
                agent_id: "team".into(),
                content: "No cycles".into(),
                category: Category::Constraint,
                rule: Some("no-import-cycles".into()),
                last_updated: 0,
                source: PreferenceSource::Manual,
                embedded: false,
            },
        }
    }

    fn staged_file(path: &str) -> Staged {
        Staged { path: path.into(), lang: None, lines: 10, holds_tests: false, imports: None, node_hits: Vec::new() }
    }

    #[test]
    fn a_staged_file_off_the_cycles_example_loop_is_still_on_the_cycle() {
        // One component: a -> b -> c -> a and c <-> d; its example loop (from a) leaves d out.
        let old = vec![import("a", "b", 1), import("b", "c", 1), import("c", "a", 1), import("c", "d", 1)];
        let new = vec![import("d", "c", 4)];
        let found =
            cycles(&no_cycles_check(), &[staged_file("d")], &HashSet::new(), &old, &new, &CancelToken::new()).unwrap();
        let got: Vec<(&str, u32, &str)> = found.iter().map(|v| (v.file.as_str(), v.line, v.message.as_str())).collect();
        assert_eq!(got, vec![("d", 4, "import cycle: d -> c -> d")]);
    }

    #[test]
    fn a_long_cycle_is_reported_from_the_staged_file_with_its_middle_elided() {
        let n = 5_000;
        let names: Vec<String> = (0..n).map(|i| format!("src/module_{i:04}.ts")).collect();
        let old: Vec<Edge> = (0..n).map(|i| import(&names[i], &names[(i + 1) % n], 1)).collect();
        let at = 2_500;
        let staged = [staged_file(&names[at])];
        let new = vec![import(&names[at], &names[at + 1], 7)];
        let found = cycles(&no_cycles_check(), &staged, &HashSet::new(), &old, &new, &CancelToken::new()).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        let v = &found[0];
        assert_eq!((v.file.as_str(), v.line), (names[at].as_str(), 7));
        let starts = format!("import cycle: {} -> {} -> ", names[at], names[at + 1]);
        assert!(v.message.starts_with(&starts), "begins at the staged file and what it imports: {}", v.message);
        let ends = format!(" -> {} -> {}", names[at - 1], names[at]);
        assert!(v.message.ends_with(&ends), "ends at the file importing it, then itself: {}", v.message);
        assert!(v.message.contains(&format!("... {} more -> ", n - 14)), "{}", v.message);
        assert!(v.message.len() < 500, "{} bytes", v.message.len());
    }

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
}
