//! Context packs (CoDRAG context assembly, no model needed): [`Engine::context`] gathers, for a
//! task, what a coding agent should read first, and fits it into a token budget.
//!
//! Candidates, in priority order (what the budget keeps first):
//! 1. `changed`: the regions the branch changed (committed since the merge base with `since`,
//!    staged, dirty) and untracked files, read from git (`changes`), files ranked by the task
//!    (`rank`), in at most half of the budget while search has hits (a branch of many changes
//!    took it all, in path order, and left out every hit);
//! 2. the best search hits for the task (`hit`, or `doc` for documentation);
//! 3. the changed regions that did not fit in their half;
//! 4. `definition`: declarations of the symbols those changes and hits name, from the symbol
//!    store (names defined more than a few times are not distinctive and are skipped);
//! 5. `test`: test files that exercise the changed files and the hits (`code::test_files`);
//! 6. `importer`: files importing them, around the import line (one hop of the impact graph);
//! 7. the remaining hits; 8. `import`: the files they import (one hop); 9. the changed hunks of
//!    lockfiles, generated files and snapshots.
//!
//! Overlapping candidates are folded into the snippet already kept (its reason lists both);
//! each kept snippet is counted with the real cl100k_base tokenizer as rendered in the Markdown
//! pack, a candidate that does not fit is cut to the lines that do or left out with the
//! reason, and the pack as rendered is counted once more at the end, so `tokens <= budget`
//! holds for the text an agent receives.

pub(crate) mod changes;
mod left_out;
mod rank;
mod read;
mod render;
pub mod types;

pub use render::render_markdown;

use crate::engine::cancel::CancelToken;
use crate::engine::code::impact::LoadedGraph;
use crate::engine::code::query;
use crate::engine::code::store::SymbolReader;
use crate::engine::code::test_files::is_test_path;
use crate::engine::code::types::SymbolKind;
use crate::engine::index::files::language;
use crate::engine::repos::RepoRef;
use crate::engine::search::types::{SearchHit, SearchRequest};
use crate::engine::waterfall::budget::{self, TokenCounter};
use crate::engine::Engine;
use crate::error::{Error, Result};
use changes::Changes;
use read::PackFiles as Files;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use types::*;

/// Hits asked of search.
const SEARCH_HITS: usize = 12;
/// Hits ranked with the changed lines (the rest come after the graph's neighbours).
const TOP_HITS: usize = 3;
/// Hits whose named symbols are looked up, and whose files are expanded through the graph.
const SEED_HITS: usize = 5;
/// Longest snippet, lines.
const MAX_SNIPPET_LINES: u32 = 80;
/// Lines of context around a changed hunk.
const HUNK_MARGIN: u32 = 3;
/// Hunks closer than this many lines share one snippet.
const HUNK_JOIN: u32 = 8;
/// Changed regions offered at most (the rest are listed as omitted).
const MAX_CHANGED_REGIONS: usize = 40;
/// Lines shown around an import of (or by) a file.
const NEIGHBOUR_LINES: u32 = 30;
/// Longest definition snippet, lines.
const MAX_DEFINITION_LINES: u32 = 60;
/// Per-role caps on candidates.
const MAX_DEFINITIONS: usize = 8;
const MAX_TESTS: usize = 6;
const MAX_IMPORTERS: usize = 6;
const MAX_IMPORTS: usize = 4;
/// Names looked up in the symbol store at most.
const MAX_NAME_LOOKUPS: usize = 48;
/// A name defined more often than this is not distinctive (`new`, `get`, `__init__`).
const MAX_DEFINITIONS_PER_NAME: usize = 3;
/// Untracked files larger than this are listed but not read.
const MAX_UNTRACKED_BYTES: u64 = 1 << 20;
/// A candidate is cut to fit only when at least this many tokens are left.
const MIN_TRIM_TOKENS: u32 = 48;
/// Bytes of a seed read for the names it holds (a minified line's first bytes name more than
/// the [`MAX_NAME_LOOKUPS`] looked up).
const SEED_BYTES: usize = 16 * 1024;
/// A range is read and counted whole only up to this many bytes per token of the budget (at
/// least [`MIN_READ_BYTES`]): text packs about 4 bytes into a token, so a longer range cannot
/// fit and is cut to an excerpt unread (an 8 MB line was read, masked and counted to be cut).
const READ_BYTES_PER_TOKEN: u64 = 16;
/// The least a range may hold and be read whole: 80 lines of 900 bytes, the longest range with
/// no line an excerpt would cut, are always read.
const MIN_READ_BYTES: u64 = 128 * 1024;

/// Budget tokens per left-out changed file the note names (1 to 10): a name costs some 10 to
/// 40 tokens, and the JSON's `left_out` lists them all.
const TOKENS_PER_LEFT_OUT_NAME: u32 = 400;
const MAX_LEFT_OUT_NAMED: usize = 10;

/// How many left-out changed files the note names for a pack of `budget` tokens.
fn left_out_named(budget: u32) -> usize {
    ((budget / TOKENS_PER_LEFT_OUT_NAME) as usize).clamp(1, MAX_LEFT_OUT_NAMED)
}

/// The order the budget takes candidates in (see the module's head): changed regions within
/// their share, the top hits, the changed regions that waited, definitions, tests, importers,
/// the other hits, imports, and last the hunks of lockfiles, generated files and snapshots.
const P_CHANGED: u8 = 0;
const P_TOP_HIT: u8 = 1;
const P_CHANGED_LATER: u8 = 2;
const P_DEFINITION: u8 = 3;
const P_TEST: u8 = 4;
const P_IMPORTER: u8 = 5;
const P_HIT: u8 = 6;
const P_IMPORT: u8 = 7;
const P_BULK: u8 = 8;
/// Percent of the budget (after the heading) the changed regions take before the top hits are
/// placed, when search found any: the rest is kept for the hits, so that a branch of many
/// changes never crowds out what the task is about (a changed region that does not fit in the
/// share waits until after the top hits).
const CHANGED_SHARE_PERCENT: u32 = 50;

/// A snippet under consideration: where, why, and how early the budget should take it.
#[derive(Debug, Clone)]
struct Candidate {
    path: String,
    a: u32,
    b: u32,
    role: ContextRole,
    reason: String,
    priority: u8,
}

/// The task must say something, and the budget must be in range.
fn checked_budget(task: &str, budget: Option<u32>) -> Result<u32> {
    if task.is_empty() {
        return Err(Error::BadRequest("empty task: describe what you are about to do, in plain words".into()));
    }
    let budget = budget.unwrap_or(DEFAULT_CONTEXT_BUDGET);
    if !(MIN_CONTEXT_BUDGET..=MAX_CONTEXT_BUDGET).contains(&budget) {
        return Err(Error::BadRequest(format!(
            "budget {budget} is out of range: give {MIN_CONTEXT_BUDGET} to {MAX_CONTEXT_BUDGET} tokens"
        )));
    }
    Ok(budget)
}

/// A pack with the branch's changes and their notes, before any snippet is fitted.
fn empty_pack(root: &Path, task: &str, since: Option<String>, budget: u32, changes: &changes::Changes) -> ContextPack {
    ContextPack {
        schema_version: 1,
        repo: root.to_path_buf(),
        task: task.to_string(),
        since,
        base: changes.base.clone(),
        budget,
        tokens: 0,
        tokenizer: "cl100k_base".into(),
        snippets: Vec::new(),
        changed: changes.files.clone(),
        omitted: Vec::new(),
        left_out: Vec::new(),
        notes: changes
            .note
            .iter()
            .cloned()
            .chain(crate::engine::waterfall::diff::special_note(&changes.special))
            .collect(),
        timing: ContextTiming::default(),
        markdown: None,
    }
}

impl Engine {
    /// A bounded, cited context pack for `req.task`: changed lines, search hits, the
    /// definitions they name, the tests that exercise them and their importers and imports,
    /// deduplicated and fitted into `req.budget` tokens. No model is asked.
    pub fn context(&self, repo_path: &Path, req: &ContextRequest) -> Result<ContextPack> {
        let started = Instant::now();
        let task = req.task.trim();
        let budget = checked_budget(task, req.budget)?;
        budget::warm_up();
        let repo = self.resolve_repo(repo_path)?;
        let mut timing = ContextTiming::default();
        // A request whose client left stops between files and slots (taken once, here).
        let cancel = CancelToken::current();
        cancel.check()?;

        let t = Instant::now();
        let search_req =
            SearchRequest { query: task.to_string(), limit: Some(SEARCH_HITS), for_chat: true, ..Default::default() };
        let mut hits = self.search(&repo.root, &search_req)?.results;
        timing.search_ms = ms(t);
        cancel.check()?;

        let t = Instant::now();
        let mut changes = changes::collect(&repo.root, req.since.as_deref())?;
        let left_out = changes.leave_out_unserved(&repo.root, &self.config().index);
        timing.git_ms = ms(t);
        cancel.check()?;

        // Lines are cited from the index: files edited since its last run are brought in first.
        let stale = stale_files(&repo, &hits, &changes);
        let mut stale_note = None;
        if !stale.is_empty() {
            let t = Instant::now();
            match self.refresh_files(&repo, &stale) {
                Some(true) => hits = self.search(&repo.root, &search_req)?.results,
                Some(false) => {}
                None if hits.iter().any(|h| h.stale) => stale_note = Some(stale_files_note(&hits)),
                None => {}
            }
            timing.search_ms += ms(t);
            cancel.check()?;
        }

        let t = Instant::now();
        let mut pack = empty_pack(&repo.root, task, req.since.clone(), budget, &changes);
        let mut files = Files::new(&repo, self.config().privacy.redact_snippets);
        pack.notes.extend(left_out::note(&left_out, left_out_named(budget)));
        pack.notes.extend(stale_note);
        pack.left_out = left_out.iter().take(MAX_LEFT_OUT_LISTED).map(|f| f.to_file()).collect();
        let terms = crate::engine::analysis::query_terms(task);
        let order = changed_order(&changes, &hits, &terms, &mut files);
        let mut cands =
            changed_candidates(&repo.root, &changes, &order, req.since.as_deref(), &mut files, &mut pack, &cancel)?;
        let changed_cands = cands.len();
        for (i, h) in hits.iter().enumerate() {
            cands.push(hit_candidate(h, i));
        }
        if hits.is_empty() {
            pack.notes.push(format!("search found nothing for {:?}", render::cut_task(task, render::NOTE_TASK_BYTES)));
        }
        let seeds: Vec<(String, u32, u32)> = cands[..changed_cands]
            .iter()
            .map(|c| (c.path.clone(), c.a, c.b))
            .chain(hits.iter().take(SEED_HITS).map(|h| (h.path.clone(), h.line_start, h.line_end)))
            .collect();
        cands.extend(self.definition_candidates(&repo, &seeds, &mut files, &mut pack.notes, &cancel)?);
        // The changed files (not deleted) in rank order, then the top hits, seed the graph's.
        let ranked = order.iter().filter_map(|&i| changes.files.get(i));
        let changed: Vec<&str> = ranked.filter(|f| f.change != "deleted").map(|f| f.path.as_str()).collect();
        cands.extend(self.graph_candidates(&repo.root, &changed, &hits, &mut files, &mut pack.notes, &cancel)?);
        // Stable: within a priority, the order each source ranked them in.
        cands.sort_by_key(|c| c.priority);
        timing.expand_ms = ms(t);

        let t = Instant::now();
        let counter = TokenCounter::for_model("gpt-4", None)?;
        fit(&mut pack, cands, &mut files, &counter, &terms, &cancel)?;
        dedup_omitted(&mut pack.omitted);
        if req.format.unwrap_or_default() == ContextFormat::Md {
            pack.markdown = Some(render_markdown(&pack));
        }
        timing.fit_ms = ms(t);
        timing.total_ms = ms(started);
        timing.text_bytes = files.text_bytes();
        pack.timing = timing;
        Ok(pack)
    }

    /// Declarations of the symbols the seeds (changed regions, top hits) name.
    fn definition_candidates(
        &self,
        repo: &crate::engine::repos::RepoRef,
        seeds: &[(String, u32, u32)],
        files: &mut Files,
        notes: &mut Vec<String>,
        cancel: &CancelToken,
    ) -> Result<Vec<Candidate>> {
        let reader = match SymbolReader::open(repo) {
            Ok(Some(r)) => r,
            Ok(None) => {
                notes.push("no symbol store yet: definitions left out (`docdex index` extracts symbols)".into());
                return Ok(Vec::new());
            }
            Err(e) => {
                notes.push(format!("symbol store unreadable, definitions left out: {e}"));
                return Ok(Vec::new());
            }
        };
        // Names in seed order, each with the first seed that names it.
        let mut names: Vec<(String, usize)> = Vec::new();
        for (i, (path, a, b)) in seeds.iter().enumerate() {
            cancel.check()?;
            let Some(text) = files.head(path, *a, *b, SEED_BYTES) else { continue };
            for name in identifiers(&text, MAX_NAME_LOOKUPS) {
                if !names.iter().any(|(n, _)| *n == name) {
                    names.push((name, i));
                }
            }
        }
        let mut out: Vec<Candidate> = Vec::new();
        for (name, seed) in names.into_iter().take(MAX_NAME_LOOKUPS) {
            if out.len() >= MAX_DEFINITIONS {
                break;
            }
            cancel.check()?;
            let defs = match query::exact_definitions(&reader, &name, MAX_DEFINITIONS_PER_NAME + 1) {
                Ok(d) => d,
                Err(e) => {
                    tracing::debug!("definition lookup failed: {e}");
                    continue;
                }
            };
            let (spath, sa, sb) = &seeds[seed];
            // Not distinctive, or defined in the naming file itself (cart.py's `total` is most
            // likely cart's own, not the one in invoice.py).
            if defs.len() > MAX_DEFINITIONS_PER_NAME || defs.iter().any(|d| d.path == *spath) {
                continue;
            }
            for d in defs {
                if matches!(d.kind, SymbolKind::Variable | SymbolKind::Field | SymbolKind::Variant | SymbolKind::Module)
                {
                    continue;
                }
                let b = d.line_end.min(d.line_start + MAX_DEFINITION_LINES - 1);
                out.push(Candidate {
                    path: d.path.clone(),
                    a: d.line_start,
                    b,
                    role: ContextRole::Definition,
                    reason: format!("defines `{name}` ({}), named by {spath}:{sa}-{sb}", d.kind.name()),
                    priority: P_DEFINITION,
                });
            }
        }
        out.truncate(MAX_DEFINITIONS);
        Ok(out)
    }

    /// Tests, importers and imports of the changed files and the top hits' files.
    fn graph_candidates(
        &self,
        root: &Path,
        changed: &[&str],
        hits: &[SearchHit],
        files: &mut Files,
        notes: &mut Vec<String>,
        cancel: &CancelToken,
    ) -> Result<Vec<Candidate>> {
        let Some(graph) = self.context_graph(root, notes) else {
            return Ok(Vec::new());
        };
        let seeds = graph_seeds(&graph, changed, hits);
        let edges = Neighbours::of(&graph);
        let mut out = Vec::new();
        let (mut tests, mut importers, mut deps) = (0, 0, 0);
        for seed in &seeds {
            cancel.check()?;
            let found = test_candidates(&graph, root, seed, &edges, files, MAX_TESTS - tests);
            tests += found.len();
            out.extend(found);
            let found = importer_candidates(seed, &edges, &seeds, MAX_IMPORTERS - importers);
            importers += found.len();
            out.extend(found);
            let found = import_candidates(seed, &edges, &seeds, MAX_IMPORTS - deps);
            deps += found.len();
            out.extend(found);
        }
        Ok(out)
    }

    /// The impact graph for a pack, or `None` with a note saying why importers and tests are
    /// left out (no graph, or one with no code files).
    fn context_graph(&self, root: &Path, notes: &mut Vec<String>) -> Option<Arc<LoadedGraph>> {
        let graph = match self.impact_graph(root) {
            Ok((_, g)) => g,
            Err(e) => {
                notes.push(format!("impact graph unavailable, importers and tests left out: {e}"));
                return None;
            }
        };
        if graph.graph.files.is_empty() {
            notes.push(
                graph
                    .graph
                    .warnings
                    .first()
                    .cloned()
                    .unwrap_or_else(|| "the impact graph has no code files: importers and tests left out".into()),
            );
            return None;
        }
        Some(graph)
    }
}

/// The changed files in the order the pack takes them ([`rank::order`]): what search found for
/// the task, then by the task's words in their path and changed lines, lockfiles and snapshots
/// last. An untracked file's first lines stand for its change.
fn changed_order(changes: &Changes, hits: &[SearchHit], terms: &[String], files: &mut Files) -> Vec<usize> {
    let hit_paths: Vec<&str> = hits.iter().map(|h| h.path.as_str()).collect();
    rank::order(&changes.files, &hit_paths, terms, |f| match changes.diffs.get(&f.path) {
        Some(d) => Some(rank::changed_lines(&d.patch)),
        None if f.states == [ChangeState::Untracked] => files.head(&f.path, 1, MAX_SNIPPET_LINES, rank::TEXT_BYTES),
        None => None,
    })
}

/// The files a pack's graph neighbours are taken around: the `changed` files (not deleted, in
/// rank order), then the top hits' files, each once and only if the graph knows it.
fn graph_seeds<'a>(graph: &LoadedGraph, changed: &[&'a str], hits: &'a [SearchHit]) -> Vec<&'a str> {
    let mut seeds: Vec<&str> = Vec::new();
    for p in changed.iter().copied().chain(hits.iter().take(TOP_HITS).map(|h| h.path.as_str())) {
        if graph.contains(p) && !seeds.contains(&p) {
            seeds.push(p);
        }
    }
    seeds
}

/// The graph's internal edges both ways, each with the line of its import.
struct Neighbours<'g> {
    imported_by: HashMap<&'g str, Vec<(&'g str, u32)>>,
    imports: HashMap<&'g str, Vec<(&'g str, u32)>>,
}

impl<'g> Neighbours<'g> {
    fn of(graph: &'g LoadedGraph) -> Self {
        let mut n = Neighbours { imported_by: HashMap::new(), imports: HashMap::new() };
        for e in graph.graph.edges.iter().filter(|e| !e.external) {
            n.imported_by.entry(e.target.as_str()).or_default().push((e.source.as_str(), e.line));
            n.imports.entry(e.source.as_str()).or_default().push((e.target.as_str(), e.line));
        }
        n
    }
}

/// Up to `room` test files that reach `seed`, each centred on the test's own import along the
/// chain, else on where it names the seed.
fn test_candidates(
    graph: &LoadedGraph,
    root: &Path,
    seed: &str,
    edges: &Neighbours,
    files: &mut Files,
    room: usize,
) -> Vec<Candidate> {
    let mut out = Vec::new();
    for t in graph.tests_reaching(root, seed) {
        if out.len() >= room {
            break;
        }
        if t.path == seed {
            continue;
        }
        let first_hop = t.via.first().map(String::as_str);
        let line = edges
            .imports
            .get(t.path.as_str())
            .and_then(|v| v.iter().find(|(target, _)| Some(*target) == first_hop))
            .map(|(_, l)| *l)
            .or_else(|| mention_line(files, &t.path, seed))
            .unwrap_or(1);
        let (a, b) = window(line);
        out.push(Candidate {
            path: t.path.clone(),
            a,
            b,
            role: ContextRole::Test,
            reason: format!("exercises {seed}: {}", t.reason),
            priority: P_TEST,
        });
    }
    out
}

/// Up to `room` non-test files that import `seed` (and are not seeds themselves), around the import.
fn importer_candidates(seed: &str, edges: &Neighbours, seeds: &[&str], room: usize) -> Vec<Candidate> {
    let importers = edges.imported_by.get(seed).into_iter().flatten();
    let wanted = importers.filter(|(source, _)| !is_test_path(source) && !seeds.contains(source));
    wanted
        .take(room)
        .map(|&(source, line)| {
            let (a, b) = window(line);
            Candidate {
                path: source.to_string(),
                a,
                b,
                role: ContextRole::Importer,
                reason: format!("imports {seed} (line {line}): its use may change with it"),
                priority: P_IMPORTER,
            }
        })
        .collect()
}

/// Up to `room` files `seed` imports (not seeds themselves), from their first lines.
fn import_candidates(seed: &str, edges: &Neighbours, seeds: &[&str], room: usize) -> Vec<Candidate> {
    let imports = edges.imports.get(seed).into_iter().flatten();
    imports
        .filter(|(target, _)| !seeds.contains(target))
        .take(room)
        .map(|&(target, line)| Candidate {
            path: target.to_string(),
            a: 1,
            b: NEIGHBOUR_LINES,
            role: ContextRole::Import,
            reason: format!("imported by {seed} (line {line})"),
            priority: P_IMPORT,
        })
        .collect()
}

/// The changed regions, files in `order` ([`rank::order`]): each tracked file's hunks (joined
/// when close, with a margin), and the top of each untracked file; a lockfile's, generated
/// file's or snapshot's last of all ([`P_BULK`]).
fn changed_candidates(
    root: &Path,
    changes: &Changes,
    order: &[usize],
    since: Option<&str>,
    files: &mut Files,
    pack: &mut ContextPack,
    cancel: &CancelToken,
) -> Result<Vec<Candidate>> {
    let mut out = Vec::new();
    for f in order.iter().filter_map(|&i| changes.files.get(i)) {
        cancel.check()?;
        let what = changes::describe(f, since);
        let priority = if rank::is_bulk(&f.path) { P_BULK } else { P_CHANGED };
        if f.change == "deleted" {
            continue;
        }
        if f.states == [ChangeState::Untracked] {
            let size = std::fs::symlink_metadata(root.join(&f.path)).map(|m| m.len()).unwrap_or(0);
            if size > MAX_UNTRACKED_BYTES {
                pack.notes.push(format!("{} is untracked and larger than 1 MiB: not read", f.path));
                continue;
            }
            let Some(total) = files.total(&f.path) else {
                pack.notes.push(format!("{} is untracked but not a readable text file", f.path));
                continue;
            };
            if total == 0 {
                continue;
            }
            let b = total.min(MAX_SNIPPET_LINES);
            let more = if b < total { format!(" (first {b} of {total} lines)") } else { String::new() };
            out.push(Candidate {
                path: f.path.clone(),
                a: 1,
                b,
                role: ContextRole::Changed,
                reason: format!("{what}{more}"),
                priority,
            });
            continue;
        }
        let Some(d) = changes.diffs.get(&f.path) else { continue };
        if d.binary {
            pack.notes.push(format!("{} changed but is binary: not shown", f.path));
            continue;
        }
        // The margin after a hunk at the end of the file stops at its last line: the region's
        // range is also cited (`named by path:a-b`), and no line past the end may be.
        let total = files.total(&f.path);
        for (a, b, changed) in regions(d) {
            let b = total.map_or(b, |t| b.min(t.max(a)));
            out.push(Candidate {
                path: f.path.clone(),
                a,
                b,
                role: ContextRole::Changed,
                reason: format!("{what}; {changed}"),
                priority,
            });
        }
    }
    if out.len() > MAX_CHANGED_REGIONS {
        for c in out.drain(MAX_CHANGED_REGIONS..) {
            pack.omitted.push(OmittedSnippet {
                citation: format!("{}:{}-{}", c.path, c.a, c.b),
                role: c.role,
                tokens: 0,
                reason: format!("more than {MAX_CHANGED_REGIONS} changed regions; this one was not read"),
            });
        }
    }
    Ok(out)
}

/// A file's changed regions (new side): hunks with margins, joined when close, capped in
/// length, each with a note of the lines the hunks touch (`lines 5-6 changed`,
/// `lines removed after line 200`).
fn regions(d: &crate::engine::waterfall::diff::FileDiff) -> Vec<(u32, u32, String)> {
    let mut spans: Vec<(u32, u32, Vec<String>)> = Vec::new();
    let mut hunks: Vec<_> = d.changed.clone();
    hunks.sort_unstable_by_key(|h| h.new_start);
    for h in hunks {
        let start = h.new_start.max(1);
        let end = start + h.new_lines.saturating_sub(1);
        let what = if h.new_lines == 0 {
            format!("lines removed after line {}", h.new_start)
        } else if start == end {
            format!("line {start}")
        } else {
            format!("lines {start}-{end}")
        };
        let (a, b) = (start.saturating_sub(HUNK_MARGIN).max(1), end + HUNK_MARGIN);
        match spans.last_mut() {
            Some(last) if a <= last.1 + HUNK_JOIN => {
                last.1 = last.1.max(b);
                last.2.push(what);
            }
            _ => spans.push((a, b, vec![what])),
        }
    }
    spans
        .into_iter()
        .map(|(a, b, what)| (a, b.min(a + MAX_SNIPPET_LINES - 1), format!("changed: {}", what.join(", "))))
        .collect()
}

/// Drops repeats of an omitted citation with the same reason (a test reached from three seeds
/// was listed three times alike, tour35 F5), keeping the first.
fn dedup_omitted(omitted: &mut Vec<OmittedSnippet>) {
    let mut seen = std::collections::HashSet::new();
    omitted.retain(|o| seen.insert((o.citation.clone(), o.reason.clone())));
}

/// The hits' files and the changed files (not deleted) modified or renamed (the status-change
/// time) after the index's last commit.
fn stale_files(repo: &RepoRef, hits: &[SearchHit], changes: &Changes) -> Vec<String> {
    let edited = |rel: &str| Engine::edited_since_commit(repo, rel);
    let mut out: Vec<String> = hits.iter().filter(|h| h.stale).map(|h| h.path.clone()).collect();
    out.extend(changes.files.iter().filter(|f| f.change != "deleted" && edited(&f.path)).map(|f| f.path.clone()));
    out.sort();
    out.dedup();
    out
}

/// Said when edited files could not be brought into the index first (another process writes
/// it, or the run failed): their cited lines may have moved.
fn stale_files_note(hits: &[SearchHit]) -> String {
    let mut paths: Vec<&str> = hits.iter().filter(|h| h.stale).map(|h| h.path.as_str()).collect();
    paths.dedup();
    format!(
        "{} changed since the index's last run and could not be indexed first (another docdex process may be indexing them): lines cited from {} may have moved",
        crate::engine::fsutil::count(paths.len() as u64, "file"),
        paths.iter().take(3).copied().collect::<Vec<_>>().join(", ")
    )
}

fn hit_candidate(h: &SearchHit, rank: usize) -> Candidate {
    let role = if is_doc(&h.lang) {
        ContextRole::Doc
    } else if is_test_path(&h.path) {
        ContextRole::Test
    } else {
        ContextRole::Hit
    };
    let b = h.line_end.min(h.line_start + MAX_SNIPPET_LINES - 1);
    Candidate {
        path: h.path.clone(),
        a: h.line_start,
        b,
        role,
        reason: format!("search hit #{} for the task (score {:.2})", rank + 1, h.score),
        priority: if rank < TOP_HITS { P_TOP_HIT } else { P_HIT },
    }
}

fn is_doc(lang: &str) -> bool {
    matches!(lang, "markdown" | "text" | "rst" | "asciidoc" | "org" | "html")
}

/// Lines around `line`, a quarter above.
fn window(line: u32) -> (u32, u32) {
    let a = line.saturating_sub(NEIGHBOUR_LINES / 4).max(1);
    (a, a + NEIGHBOUR_LINES - 1)
}

/// The first line of `path` that mentions the stem of `subject` (a test paired by name).
fn mention_line(files: &mut Files, path: &str, subject: &str) -> Option<u32> {
    let name = subject.rsplit('/').next().unwrap_or(subject);
    let stem = name.split('.').next().unwrap_or(name);
    files.first_line_with(path, stem)
}

/// Identifier-shaped words of `text` that could name a declaration elsewhere: calls
/// (`name(`), paths (`Type::`), and CamelCase or snake_case words, in order of appearance.
/// Prose is left out: a capitalised plain word opening a sentence or a comment ("Show time
/// elapsed.") is English, not a class, and dunder names (`__init__`) are every class's. At
/// most `limit` names: a seed on a minified bundle's 8 MB line holds hundreds of thousands.
fn identifiers(text: &str, limit: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() && out.len() < limit {
        if !(bytes[i].is_ascii_alphabetic() || bytes[i] == b'_') || (i > 0 && is_word(bytes[i - 1])) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && is_word(bytes[i]) {
            i += 1;
        }
        let word = &text[start..i];
        let next = bytes.get(i).copied();
        let called = next == Some(b'(') || (next == Some(b':') && bytes.get(i + 1) == Some(&b':'));
        let shaped = word.len() >= 4
            && (word.contains('_')
                || word.as_bytes().windows(2).any(|p| p[0].is_ascii_lowercase() && p[1].is_ascii_uppercase())
                || (word.as_bytes()[0].is_ascii_uppercase() && word.bytes().any(|c| c.is_ascii_lowercase())));
        let prose = !called
            && is_plain_capitalised(word)
            && opens_sentence(line_before(text, start))
            && ends_like_prose(&text[i..]);
        let dunder = word.len() > 4 && word.starts_with("__") && word.ends_with("__");
        let plain_call = called && word.len() >= 3 && !shaped && !on_an_instance(&text[..start]);
        let builtin = BUILTIN_CALLS.contains(&word);
        if (shaped || plain_call) && !prose && !dunder && !builtin && seen.insert(word) {
            out.push(word.to_string());
        }
    }
    out
}

/// Calls every language provides (Python's and JavaScript's builtins, Rust's prelude and
/// macros): a repository function of the same name (a `str` method, a `len` helper) is not what
/// the code calls, and a pack that quotes it misleads.
const BUILTIN_CALLS: &[&str] = &[
    "abs",
    "all",
    "any",
    "Array",
    "assert",
    "assert_eq",
    "bool",
    "Boolean",
    "Box",
    "dict",
    "dir",
    "enumerate",
    "Err",
    "Error",
    "filter",
    "float",
    "format",
    "getattr",
    "hasattr",
    "hash",
    "int",
    "isinstance",
    "issubclass",
    "iter",
    "len",
    "list",
    "map",
    "max",
    "min",
    "next",
    "Number",
    "Object",
    "Ok",
    "open",
    "panic",
    "parseFloat",
    "parseInt",
    "print",
    "println",
    "Promise",
    "range",
    "repr",
    "require",
    "round",
    "set",
    "setattr",
    "Some",
    "sorted",
    "str",
    "String",
    "sum",
    "super",
    "Symbol",
    "tuple",
    "type",
    "vars",
    "vec",
    "Vec",
    "write",
    "writeln",
    "zip",
];

/// Whether the text before a call ends in `receiver.` where the receiver is a value, not a
/// type or module: `d.get(`, `self.items.add(`, `f(x).run(` call a method of whatever `d` is,
/// and a short common name (`get`, `add`, `run`) defined somewhere in the repository is most
/// likely another type's. `Pager.show(` and `os.path.join(`-style module paths are left to
/// the definition lookup (a capitalised receiver names a type).
fn on_an_instance(before: &str) -> bool {
    let Some(receiver) = before.strip_suffix('.') else { return false };
    let name_start = receiver.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
    let name = &receiver[name_start..];
    !name.chars().next().is_some_and(|c| c.is_ascii_uppercase())
}

/// `Show`, `Returns`: one capital, then lowercase letters only (`SessionStore`, `HTTP` and
/// `Item2` are names).
fn is_plain_capitalised(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_uppercase()) && chars.all(|c| c.is_ascii_lowercase())
}

/// Whether a word after `before` opens a sentence: first on its line after comment or quote
/// marks (`#`, `//`, `*`, `"""`), or after a full stop, `!` or `?` and a space.
/// The text of `text`'s line before byte `at`, at most 256 bytes of it (a long line's start is
/// not looked for).
fn line_before(text: &str, at: usize) -> &str {
    let mut from = at.saturating_sub(256);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    let window = &text[from..at];
    window.rfind('\n').map_or(window, |i| &window[i + 1..])
}

fn opens_sentence(before: &str) -> bool {
    let line = before.rsplit('\n').next().unwrap_or(before);
    let trimmed = line.trim_end();
    if trimmed.len() < line.len() && trimmed.ends_with(['.', '!', '?']) {
        return true;
    }
    trimmed
        .chars()
        .all(|c| c.is_whitespace() || matches!(c, '#' | '/' | '*' | '"' | '\'' | '`' | '-' | ';' | '!' | '>'))
}

/// Whether what follows a word reads as prose: a space, the line's end, or punctuation then
/// a space or the end (`Foo.bar` and `Foo[0]` are code).
fn ends_like_prose(after: &str) -> bool {
    let mut chars = after.chars();
    match chars.next() {
        None => true,
        Some(c) if c.is_whitespace() => true,
        Some('.' | ',' | ';' | ':' | '!' | '?') => {
            chars.next().is_none_or(|c| c.is_whitespace() || matches!(c, '"' | '\''))
        }
        _ => false,
    }
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Why a candidate's file could not be read: a hit or neighbour from the index whose file
/// was since deleted or renamed (`git mv`) is not "unreadable", it is gone.
fn unreadable_why(root: &Path, rel: &str) -> &'static str {
    if root.join(rel).symlink_metadata().is_err() {
        "no longer in the working tree (deleted or renamed since the last index run; `docdex index` catches up)"
    } else {
        "not a readable text file of the repository"
    }
}

/// Fits the candidates into the budget, in order: folds overlaps, counts each rendered
/// snippet, cuts or leaves out what does not fit, and checks the whole rendered pack. `terms`
/// (the task's query terms) place the excerpt of a candidate on a long line. Stops with
/// [`Error::Cancelled`] between candidates once `cancel` trips.
fn fit(
    pack: &mut ContextPack,
    cands: Vec<Candidate>,
    files: &mut Files,
    counter: &TokenCounter,
    terms: &[String],
    cancel: &CancelToken,
) -> Result<()> {
    let header_tokens = counter.count(&render::preamble(pack));
    let mut left = pack.budget.saturating_sub(header_tokens);
    let hits_wait = cands.iter().any(|c| c.priority == P_TOP_HIT);
    let mut share = if hits_wait { left * CHANGED_SHARE_PERCENT / 100 } else { left };
    let mut rest = Vec::with_capacity(cands.len());
    for c in cands {
        if c.priority != P_CHANGED {
            rest.push(c);
            continue;
        }
        cancel.check()?;
        // Within the changes' share, whole or not yet: one that does not fit waits.
        let mut room = share.min(left);
        let before = room;
        if let Some(waits) = place(pack, c, files, counter, terms, &mut room, true) {
            rest.push(Candidate { priority: P_CHANGED_LATER, ..waits });
        }
        left -= before - room;
        share -= before - room;
    }
    // Stable: the changes that waited keep their rank, after the top hits.
    rest.sort_by_key(|c| c.priority);
    for c in rest {
        cancel.check()?;
        place(pack, c, files, counter, terms, &mut left, false);
    }
    check_whole(pack, files, counter);
    Ok(())
}

/// The most bytes of a range read and counted whole for a pack of `budget` tokens.
fn read_cap(budget: u32) -> u64 {
    (u64::from(budget) * READ_BYTES_PER_TOKEN).max(MIN_READ_BYTES)
}

/// Takes one candidate into the pack within `left` tokens: folded into a kept snippet it
/// overlaps, whole, cut to what is left (by lines, or to an excerpt around the task's rarest
/// term when a long line leaves no lines to cut), or listed as omitted with the reason. A
/// range longer than [`read_cap`] is not read: it cannot fit, and only its excerpt is. With
/// `or_wait`, a candidate that does not fit whole is neither cut nor omitted but handed back
/// (`Some`), to be placed again later.
fn place(
    pack: &mut ContextPack,
    mut c: Candidate,
    files: &mut Files,
    counter: &TokenCounter,
    terms: &[String],
    left: &mut u32,
    or_wait: bool,
) -> Option<Candidate> {
    if !clamp_to_file(pack, &mut c, files) {
        return None;
    }
    let citation = format!("{}:{}-{}", c.path, c.a, c.b);
    let Some((a, b)) = uncovered(&pack.snippets, &c) else {
        fold(pack, &c, &citation, counter, left);
        return None;
    };
    let unreadable = |pack: &mut ContextPack| {
        let reason = unreadable_why(&pack.repo, &c.path).into();
        pack.omitted.push(OmittedSnippet { citation: citation.clone(), role: c.role, tokens: 0, reason });
        None
    };
    let Some(extent) = files.extent(&c.path, a, b) else { return unreadable(pack) };
    let mut snip = empty_snippet(&c, &extent);
    let (cost, needs) = if extent.bytes > read_cap(pack.budget) {
        // An estimate (a quarter of its bytes) for text never read.
        let guess = u32::try_from(extent.bytes / 4).unwrap_or(u32::MAX).max(pack.budget.saturating_add(1));
        (guess, format!("more than the budget's {} tokens ({} bytes, not read)", pack.budget, extent.bytes))
    } else {
        let Some(slice) = files.slice(&c.path, a, b) else { return unreadable(pack) };
        snip.text = slice.text;
        // Counted no further than the budget: a one-line 8 MB file cost seconds to count whole.
        let (cost, exact) = counter.count_within(&render::block(&snip), pack.budget);
        if cost <= *left {
            snip.tokens = cost;
            *left -= cost;
            pack.snippets.push(snip);
            return None;
        }
        (cost, if exact { format!("{cost} tokens") } else { format!("more than the budget's {} tokens", pack.budget) })
    };
    if or_wait {
        return Some(c);
    }
    if *left >= MIN_TRIM_TOKENS {
        // A long line cannot be cut by lines: its excerpt around the task's words instead.
        let cut = match extent.long_line {
            true => {
                excerpt_of(&snip, *left, files, counter, terms).map(|e| (e, vec![citation.clone()], " to an excerpt"))
            }
            false if !snip.text.is_empty() => trim_to(&snip, *left, files, counter, terms)
                .map(|t| (rest_of(&c.path, &extent, &t), t))
                .map(|(rest, t)| (t, rest, "")),
            false => None,
        };
        if let Some((cut, rest, how)) = cut {
            *left -= cut.tokens;
            let reason = format!("cut{how}: the whole needs {needs}, {} were left", *left + cut.tokens);
            let tokens = cost.saturating_sub(cut.tokens);
            // The lines left out before the kept window carry its tokens, those after none.
            for (i, citation) in rest.into_iter().enumerate() {
                let tokens = if i == 0 { tokens } else { 0 };
                pack.omitted.push(OmittedSnippet { citation, role: c.role, tokens, reason: reason.clone() });
            }
            pack.snippets.push(cut);
            return None;
        }
    }
    pack.omitted.push(OmittedSnippet {
        citation,
        role: c.role,
        tokens: cost,
        reason: format!("needs {needs}, {left} of the budget left", left = *left),
    });
    None
}

/// The snippet `c` would show over `extent`, its text not read yet.
fn empty_snippet(c: &Candidate, extent: &read::Extent) -> ContextSnippet {
    ContextSnippet {
        lang: language(Path::new(&c.path)).to_string(),
        path: c.path.clone(),
        line_start: extent.line_start,
        line_end: extent.line_end,
        role: c.role,
        reason: c.reason.clone(),
        tokens: 0,
        trimmed: false,
        text: String::new(),
    }
}

/// A window past the end of a short file (a test's first 30 lines, of 5) is cut to the file
/// first, so that a snippet already holding the whole file takes it in; one that starts past
/// the end is omitted with its reason (false).
fn clamp_to_file(pack: &mut ContextPack, c: &mut Candidate, files: &mut Files) -> bool {
    let Some(total) = files.total(&c.path) else { return true };
    if c.a > total {
        pack.omitted.push(OmittedSnippet {
            citation: format!("{}:{}-{}", c.path, c.a, c.b),
            role: c.role,
            tokens: 0,
            reason: match total {
                0 => "the file is empty".to_string(),
                n => format!("past the end of the file ({n} lines)"),
            },
        });
        return false;
    }
    c.b = c.b.min(total);
    true
}

/// Counts the pack as the agent receives it and drops its last snippets until it fits.
fn check_whole(pack: &mut ContextPack, files: &mut Files, counter: &TokenCounter) {
    // The pack as the agent receives it, counted whole (token merges across snippet borders),
    // its notes included: the one on masking counts what the kept snippets hold.
    let notes = pack.notes.len();
    loop {
        pack.notes.truncate(notes);
        let masked: usize = pack.snippets.iter().map(|s| files.masked_in(&s.path, s.line_start, s.line_end)).sum();
        if masked > 0 {
            pack.notes.push(format!(
                "{} masked in the snippets (secrets or personal data; `[privacy] redact_snippets`)",
                crate::engine::fsutil::count(masked, "finding")
            ));
        }
        pack.tokens = counter.count(&render_markdown(pack));
        if pack.tokens <= pack.budget || pack.snippets.is_empty() {
            break;
        }
        if let Some(last) = pack.snippets.pop() {
            pack.omitted.push(OmittedSnippet {
                citation: format!("{}:{}-{}", last.path, last.line_start, last.line_end),
                role: last.role,
                tokens: last.tokens,
                reason: format!("the rendered pack counted {} tokens, over the budget", pack.tokens),
            });
        }
    }
}

/// The part of the candidate's range no kept snippet of the same file covers (the longest
/// uncovered run), or `None` when it is all covered.
fn uncovered(kept: &[ContextSnippet], c: &Candidate) -> Option<(u32, u32)> {
    let mut covered: Vec<(u32, u32)> =
        kept.iter().filter(|s| s.path == c.path).map(|s| (s.line_start, s.line_end)).collect();
    covered.sort_unstable();
    let mut best: Option<(u32, u32)> = None;
    let mut at = c.a;
    let consider = |a: u32, b: u32, best: &mut Option<(u32, u32)>| {
        if a <= b && best.is_none_or(|(x, y)| b - a > y - x) {
            *best = Some((a, b));
        }
    };
    for (a, b) in covered {
        if b < at || a > c.b {
            continue;
        }
        if a > at {
            consider(at, a - 1, &mut best);
        }
        at = at.max(b.saturating_add(1));
    }
    if at <= c.b {
        consider(at, c.b, &mut best);
    }
    best
}

/// Adds a covered candidate's reason to the snippet that covers it, when the longer heading
/// still fits; otherwise records it as omitted.
fn fold(pack: &mut ContextPack, c: &Candidate, citation: &str, counter: &TokenCounter, left: &mut u32) {
    let host = pack.snippets.iter_mut().find(|s| s.path == c.path && s.line_start <= c.b && s.line_end >= c.a);
    let Some(host) = host else { return };
    let host_cite = format!("{}:{}-{}", host.path, host.line_start, host.line_end);
    let mut widened = host.clone();
    widened.reason = format!("{}; also {}: {}", host.reason, c.role.name(), c.reason);
    let cost = counter.count(&render::block(&widened));
    let extra = cost.saturating_sub(host.tokens);
    if extra <= *left {
        *left -= extra;
        widened.tokens = cost;
        *host = widened;
        return;
    }
    pack.omitted.push(OmittedSnippet {
        citation: citation.to_string(),
        role: c.role,
        tokens: 0,
        reason: format!("already in the pack as {host_cite}"),
    });
}

/// The snippet cut to the window of its lines holding the most of `terms` ([`densest`]) so
/// that it costs at most `left` tokens (at least 3 lines), or `None`.
fn trim_to(
    snip: &ContextSnippet,
    left: u32,
    files: &mut Files,
    counter: &TokenCounter,
    terms: &[String],
) -> Option<ContextSnippet> {
    let lines = snip.line_end - snip.line_start + 1;
    let weights = term_lines(&snip.text, terms);
    let whole = counter.count_within(&render::block(snip), left.saturating_mul(4)).0.max(1);
    let mut n = ((u64::from(lines) * u64::from(left) * 9 / 10) / u64::from(whole)) as u32;
    for _ in 0..8 {
        if n < 3 {
            return None;
        }
        let from = snip.line_start + densest(&weights, n as usize) as u32;
        let s = files.slice(&snip.path, from, from + n - 1)?;
        let mut cut = ContextSnippet {
            line_start: s.line_start,
            line_end: s.line_end,
            text: s.text,
            trimmed: true,
            ..snip.clone()
        };
        let (cost, _) = counter.count_within(&render::block(&cut), left);
        if cost <= left {
            cut.tokens = cost;
            return Some(cut);
        }
        n = n * 4 / 5;
    }
    None
}

/// How many of the task's `terms` each line of `text` holds (lowercased substrings: the terms
/// are analysed words, `discount` found in `apply_discount`).
fn term_lines(text: &str, terms: &[String]) -> Vec<u32> {
    text.lines()
        .map(|l| {
            let l = l.to_lowercase();
            terms.iter().filter(|t| l.contains(t.as_str())).count() as u32
        })
        .collect()
}

/// Where a window of `n` lines holds the most term matches (the earliest such; 0 with none):
/// a snippet cut to fit keeps the lines the task is about, not its first lines (a class's
/// `__init__` kept and the matched method cut, tour35 F7).
fn densest(weights: &[u32], n: usize) -> usize {
    if n == 0 || weights.len() <= n {
        return 0;
    }
    let mut sum: u32 = weights[..n].iter().sum();
    let (mut best, mut at) = (sum, 0);
    for start in 1..=weights.len() - n {
        sum = sum + weights[start + n - 1] - weights[start - 1];
        if sum > best {
            (best, at) = (sum, start);
        }
    }
    at
}

/// The citations of what a cut left out of `extent`: the lines before the kept window, and
/// those after it.
fn rest_of(path: &str, extent: &read::Extent, kept: &ContextSnippet) -> Vec<String> {
    let mut out = Vec::new();
    if kept.line_start > extent.line_start {
        out.push(format!("{path}:{}-{}", extent.line_start, kept.line_start - 1));
    }
    if kept.line_end < extent.line_end {
        out.push(format!("{path}:{}-{}", kept.line_end + 1, extent.line_end));
    }
    out
}

/// The snippet as a bounded excerpt around the rarest of `terms` in it (a hit's match on a
/// line of 88 KB), when that fits in `left` tokens; only the excerpt's window is read.
fn excerpt_of(
    snip: &ContextSnippet,
    left: u32,
    files: &mut Files,
    counter: &TokenCounter,
    terms: &[String],
) -> Option<ContextSnippet> {
    let e = files.excerpt(&snip.path, snip.line_start, snip.line_end, terms)?;
    let mut cut =
        ContextSnippet { line_start: e.line_start, line_end: e.line_end, text: e.text, trimmed: true, ..snip.clone() };
    let (cost, _) = counter.count_within(&render::block(&cut), left);
    (cost <= left).then(|| {
        cut.tokens = cost;
        cut
    })
}

fn ms(since: Instant) -> f64 {
    (since.elapsed().as_secs_f64() * 1e6).round() / 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_omitted_citation_is_listed_once_per_reason() {
        let o = |c: &str, r: &str| OmittedSnippet {
            citation: c.into(),
            role: ContextRole::Test,
            tokens: 0,
            reason: r.into(),
        };
        let mut list =
            vec![o("t.rs:1-30", "gone"), o("t.rs:1-30", "gone"), o("t.rs:1-30", "other"), o("u.rs:1-2", "gone")];
        dedup_omitted(&mut list);
        let kept: Vec<(&str, &str)> = list.iter().map(|o| (o.citation.as_str(), o.reason.as_str())).collect();
        assert_eq!(kept, [("t.rs:1-30", "gone"), ("t.rs:1-30", "other"), ("u.rs:1-2", "gone")]);
    }

    #[test]
    fn a_cut_keeps_the_window_the_task_is_about() {
        assert_eq!(densest(&[0, 0, 1, 0, 2, 1, 0], 2), 4);
        assert_eq!(densest(&[0, 0, 0], 2), 0, "no match: the top");
        assert_eq!(densest(&[1, 0, 0, 1], 2), 0, "ties: the earliest");
        assert_eq!(densest(&[3, 1], 5), 0);
        let terms = vec!["discount".to_string()];
        assert_eq!(term_lines("class Cart:\n    def apply_discount(self):\n", &terms), [0, 1]);
    }

    fn snip(path: &str, a: u32, b: u32) -> ContextSnippet {
        ContextSnippet {
            path: path.into(),
            line_start: a,
            line_end: b,
            lang: "rust".into(),
            role: ContextRole::Hit,
            reason: String::new(),
            tokens: 0,
            trimmed: false,
            text: String::new(),
        }
    }

    fn cand(path: &str, a: u32, b: u32) -> Candidate {
        Candidate { path: path.into(), a, b, role: ContextRole::Hit, reason: String::new(), priority: 0 }
    }

    #[test]
    fn overlaps_keep_only_the_longest_uncovered_run() {
        let kept = vec![snip("a.rs", 10, 20), snip("a.rs", 30, 40), snip("b.rs", 1, 100)];
        assert_eq!(uncovered(&kept, &cand("a.rs", 12, 18)), None);
        assert_eq!(uncovered(&kept, &cand("a.rs", 15, 50)), Some((41, 50)));
        assert_eq!(uncovered(&kept, &cand("a.rs", 1, 35)), Some((1, 9)));
        assert_eq!(uncovered(&kept, &cand("c.rs", 1, 5)), Some((1, 5)));
    }

    #[test]
    fn identifiers_are_code_shaped_words_and_calls() {
        let ids =
            identifiers("let s = SessionStore::new(ttl);\nexpire_stale_sessions(&mut s); // the cache\nfoo(x)", 48);
        assert_eq!(ids, ["SessionStore", "new", "expire_stale_sessions", "foo"]);
    }

    #[test]
    fn short_method_calls_on_values_and_builtins_name_nothing() {
        // `d.get(`, `self.items.add(` and `str(` name no definition of this repository: a `get`
        // in an unrelated module, a `str` method elsewhere, would be quoted as what the code calls.
        let text =
            "v = d.get(key)\nself.items.add(v)\nname = str(v).strip()\nreturn len(v) + Pager.show(v) + load_config(v)";
        assert_eq!(identifiers(text, 48), ["Pager", "show", "load_config"], "{text}");
        // A code-shaped method name still counts on any receiver.
        assert_eq!(identifiers("self.cache.expire_stale(now)", 48), ["expire_stale"]);
    }

    #[test]
    fn a_minified_line_yields_at_most_the_limit_quickly() {
        let line: String = (0..300_000).map(|i| format!("Alpha{i} beta_{i}(x) ")).collect();
        let t = std::time::Instant::now();
        let ids = identifiers(&line, 48);
        assert_eq!(ids.len(), 48);
        assert_eq!(ids[..2], ["Alpha0".to_string(), "beta_0".to_string()]);
        // Quadratic dedupe and look-backs took seconds here; a scan of 48 names takes microseconds.
        assert!(t.elapsed() < std::time::Duration::from_millis(200), "{:?}", t.elapsed());
    }

    #[test]
    fn prose_and_dunder_names_are_not_identifiers() {
        let text = "class Cart:\n    def __init__(self):\n        \"\"\"Show time elapsed. Returns the Total.\"\"\"\n        # Round half up, see Money.\n        self.s = Session(Pager.show(x))\n";
        let ids = identifiers(text, 48);
        assert_eq!(ids, ["Cart", "Total", "Money", "Session", "Pager", "show"], "{text}");
    }

    #[test]
    fn hunks_get_margins_and_close_ones_join() {
        let mut d = crate::engine::waterfall::diff::parse(
            "diff --git a/x.rs b/x.rs\n--- a/x.rs\n+++ b/x.rs\n@@ -10,2 +10,3 @@\n+a\n@@ -20 +21 @@\n+b\n@@ -200 +201,0 @@\n-c\n",
        );
        let f = d.remove(0);
        let r = regions(&f);
        // Each hunk as narrowed to what its body changes: +a is line 10 alone.
        assert_eq!(r.iter().map(|(a, b, _)| (*a, *b)).collect::<Vec<_>>(), [(7, 24), (198, 204)]);
        assert_eq!(r[0].2, "changed: line 10, line 21");
        assert_eq!(r[1].2, "changed: lines removed after line 201");
    }
}
