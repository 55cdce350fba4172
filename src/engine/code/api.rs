//! The code-intelligence capabilities as `Engine` methods, with their request and response
//! types: symbol search and outlines, the symbol store's status (parser drift included), AST
//! search and AST query. The CLI, the HTTP server (`/v1/symbols`, `/v1/symbols/status`,
//! `/v1/ast/search`, `/v1/ast/query`), the MCP tool `docdex_symbols` and the TUI call exactly
//! these.

use super::query::{self, SymbolFilter};
use super::store::{self, SymbolReader};
use super::types::SymbolKind;
use super::types::*;
use super::{Lang, LanguageSupport};
use crate::engine::index::manifest::Summary;
use crate::engine::index::types::SCHEMA_VERSION;
use crate::engine::privacy;
use crate::engine::repos::RepoRef;
use crate::engine::{checked_lang, Engine};
use crate::error::{Error, Result};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// Default page size of symbol and AST queries.
pub const DEFAULT_LIMIT: usize = 20;
/// Largest page.
pub const MAX_LIMIT: usize = 1000;

/// Opens the store for a query, failing clearly when there is none or it is stale.
/// The repository's symbol store, once it can answer: a store no extraction has committed to
/// yet (generation 0 and no file: created by a watcher or an index run now re-extracting a lost
/// store, or by a run stopped before its first commit) is refused as not extracted yet. It
/// answered every query with no results, which reads as "no such symbol" (tour22 F9). A store
/// with files at generation 0 lags (killed between its two commits) and still answers.
fn open_current(repo: &RepoRef) -> Result<SymbolReader> {
    let reader = match SymbolReader::open(repo) {
        Ok(reader) => reader.ok_or_else(|| missing_store(repo))?,
        Err(e) => return Err(damaged_store(repo).unwrap_or(e)),
    };
    // Before the schema check: a store being created has no schema written yet either.
    let holds_files =
        || reader.conn().query_row("SELECT EXISTS(SELECT 1 FROM files)", [], |r| r.get::<_, bool>(0)).unwrap_or(false);
    if reader.meta().generation == 0 && !holds_files() {
        // A damaged store reads as empty meta too: it was called "being extracted" (tour26 F5).
        if let Some(damaged) = damaged_store(repo) {
            return Err(damaged);
        }
        return Err(Error::StaleIndex(format!(
            "no symbols have been extracted for {} yet: an index run is extracting them (ask again when \
             `docdex status` says ready), or one stopped before it committed any; run `docdex index --repo {}`",
            repo.root.display(),
            crate::error::shell_path(&repo.root)
        )));
    }
    reader.ensure_current(&repo.root)?;
    Ok(reader)
}

/// Marks the hits whose file changed on disk after the index last committed (its Tantivy
/// `meta.json`'s last write, as search tells its stale hits; the symbol store's own files are
/// written by readers too), or is gone: a tour found `docdex symbols` giving a deleted file's
/// functions and a moved function's old line without a word. Each file is looked at once.
/// Returns the files marked.
fn mark_stale(repo: &RepoRef, hits: &mut [SymbolHit]) -> usize {
    let meta = repo.index_dir().join("meta.json");
    let Ok(committed) = std::fs::metadata(meta).and_then(|m| m.modified()) else { return 0 };
    let mut seen: HashMap<String, bool> = HashMap::new();
    for h in hits.iter_mut() {
        h.stale = *seen.entry(h.path.clone()).or_insert_with(|| {
            match std::fs::symlink_metadata(repo.root.join(&h.path)).and_then(|m| m.modified()) {
                Ok(modified) => modified > committed,
                Err(_) => true,
            }
        });
    }
    seen.values().filter(|s| **s).count()
}

/// The note of a page with hits in files changed since they were indexed.
fn stale_note(files: usize, repo: &RepoRef) -> Option<String> {
    (files > 0).then(|| {
        format!(
            "{files} file{} changed on disk (or was deleted) since its symbols were extracted: those hits are marked stale and their lines may have moved; `docdex index --repo {}` updates them",
            if files == 1 { "" } else { "s" },
            crate::error::shell_path(&repo.root)
        )
    })
}

/// What status warns of a damaged symbol store (overwritten, emptied: [`store::damage`]),
/// naming the file, the cause and the index run that rebuilds it; symbol and AST queries refuse
/// with the same words, so both surfaces tell one story.
fn damage_note(repo: &RepoRef) -> Option<String> {
    store::damage(repo).map(|what| {
        format!(
            "the symbol store is damaged: {what}; symbol lookups, impact and search's definition ranking miss it until `docdex index --repo {}` rebuilds it",
            crate::error::shell_path(&repo.root)
        )
    })
}

/// A damaged store as a query's refusal ([`damage_note`]'s words; `stale_index`, like every
/// store an index run must rebuild).
fn damaged_store(repo: &RepoRef) -> Option<Error> {
    damage_note(repo).map(Error::StaleIndex)
}

fn missing_store(repo: &RepoRef) -> Error {
    if repo.index_dir().join("meta.json").exists() {
        Error::StaleIndex(format!(
            "no symbols have been extracted for {} yet; run `docdex index --repo {}`",
            repo.root.display(),
            crate::error::shell_path(&repo.root)
        ))
    } else {
        Error::NotIndexed { path: repo.root.clone() }
    }
}

/// A path-prefix filter as the store's paths start (`./src`, `src/`, an absolute directory
/// alike), or none; refused outside the repository.
fn prefix_of(repo: &RepoRef, given: Option<&str>) -> Result<Option<String>> {
    match given.filter(|p| !p.trim().is_empty()) {
        Some(p) => {
            // A source's folder (`//notes/`) is refused saying sources hold no symbols.
            let rel = crate::engine::repos::repo_prefix(&repo.root, p)
                .map_err(|e| crate::engine::index::sources::or_text_only(repo, p, e))?;
            Ok(Some(rel).filter(|p| !p.is_empty()))
        }
        None => Ok(None),
    }
}

fn parse_kind(kind: Option<&str>) -> Result<Option<SymbolKind>> {
    match kind.map(str::trim).filter(|k| !k.is_empty()) {
        None => Ok(None),
        Some(k) => SymbolKind::parse(k).map(Some).ok_or_else(|| {
            let names: Vec<&str> = SymbolKind::ALL.iter().map(|k| k.name()).collect();
            Error::BadRequest(format!("unknown symbol kind {k:?}: use one of {}", names.join(", ")))
        }),
    }
}

/// A request's `limit` (`default` when absent), cut to [`MAX_LIMIT`]; 0 is refused: HTTP and MCP
/// took it as 1, answering one row and `truncated` without a word, where the command line
/// refuses it.
pub(crate) fn checked_limit(limit: Option<usize>, default: usize) -> Result<usize> {
    match limit {
        Some(0) => Err(Error::BadRequest(format!(
            "limit 0 asks for nothing: give 1 to {MAX_LIMIT} (more is cut to {MAX_LIMIT}), or leave it out"
        ))),
        other => Ok(other.unwrap_or(default).min(MAX_LIMIT)),
    }
}

fn split_kinds(kinds: &[String]) -> Result<Vec<String>> {
    use crate::engine::limits::MAX_AST_KINDS;
    let mut out: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for k in kinds.iter().flat_map(|k| k.split(',')).map(str::trim).filter(|k| !k.is_empty()) {
        if seen.insert(k) {
            if out.len() == MAX_AST_KINDS {
                return Err(Error::BadRequest(format!(
                    "more than {MAX_AST_KINDS} node kinds: ask for at most {MAX_AST_KINDS} at once (split the search)"
                )));
            }
            out.push(k.to_string());
        }
    }
    Ok(out)
}

/// Longest sample text, in characters (`…` marks a cut).
const SAMPLE_CHARS: usize = 160;

/// Each sample's first line as on disk now, from the node's column when known (on a minified
/// file every node is on line 1: the line's start would be every sample's text), trimmed and cut
/// at [`SAMPLE_CHARS`]; with `redact` (`[privacy] redact_snippets`), secrets and personal data
/// masked first, as in search snippets. A column the line no longer has (the file changed since
/// the index run) falls back to the line's start.
fn sample_texts(root: &Path, path: &str, nodes: &mut [AstNode], redact: bool) {
    let Ok(bytes) = crate::engine::fsutil::read_repo_file(root, path) else { return };
    let text = crate::engine::fsutil::decode_text(&bytes);
    let masker = redact.then(|| privacy::FileMasker::new(&text));
    let lines: Vec<&str> = text.lines().collect();
    for n in nodes {
        let Some(line) = lines.get(n.line_start.saturating_sub(1) as usize) else { continue };
        // A `--name` match has no column (the symbol table records lines): its name's first
        // whole-word place on the line stands in for it.
        let column = n.column.or_else(|| n.name.as_deref().and_then(|name| name_column(line, name)));
        let from = sample_start(line, column);
        let shown = match &masker {
            Some(m) => std::borrow::Cow::Owned(m.mask_from(line, n.line_start, from)),
            None => std::borrow::Cow::Borrowed(&line[from..]),
        };
        n.text = cut_sample(shown.trim());
    }
}

/// Where a sample's text starts: the whole line when it fits (`def three(self):` reads better
/// than `three(self):`), else the node's column (1-based), or the line's start when the column
/// is unknown or no longer on the line.
fn sample_start(line: &str, column: Option<u32>) -> usize {
    if line.trim().chars().count() <= SAMPLE_CHARS {
        return 0;
    }
    let from = column.map_or(0, |c| c.saturating_sub(1) as usize);
    if from < line.len() && line.is_char_boundary(from) {
        from
    } else {
        0
    }
}

/// The 1-based byte column of `name`'s first whole-word occurrence in `line` (not inside a
/// longer identifier: `f1` is not found in `f10` or `$f1`), for samples of `--name` matches,
/// whose declarations the symbol table records by line only. On a minified line the sample then
/// starts at the name (`f1(a,b){...`), as the other samples start at their node; several
/// declarations of one name on one line all start at its first place.
fn name_column(line: &str, name: &str) -> Option<u32> {
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    if name.is_empty() {
        return None;
    }
    line.match_indices(name)
        .find(|(at, _)| {
            let before = line[..*at].chars().next_back();
            let after = line[at + name.len()..].chars().next();
            !before.is_some_and(ident) && !after.is_some_and(ident)
        })
        .and_then(|(at, _)| u32::try_from(at + 1).ok())
}

/// `text` cut at [`SAMPLE_CHARS`] characters, ending in `…` when it was longer.
fn cut_sample(text: &str) -> String {
    match text.char_indices().nth(SAMPLE_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// Masks symbol signatures (`pub const AWS_KEY: &str = "AKIA...";`) as search snippets are.
fn redact_signatures(hits: &mut [SymbolHit]) {
    for h in hits {
        let (masked, found) = privacy::mask(&h.signature);
        if !found.is_empty() {
            h.signature = masked;
        }
    }
}

/// What a first index still parsing means for symbol answers, from the writer's status file.
fn parse_in_progress(repo: &RepoRef) -> Option<String> {
    let (status, interrupted) = crate::engine::index::status::StatusData::read(&repo.status_path())?;
    let p = status.progress.filter(|p| p.phase == "parsing" && !interrupted)?;
    Some(format!(
        "the first index is still parsing the repository ({} of {} code files parsed): symbols of the files not parsed yet follow when it ends",
        p.files_done, p.files_total
    ))
}

impl Engine {
    /// Symbol search by name, or a file's outline (`file` without `query`).
    pub fn symbols(&self, repo_path: &Path, req: &SymbolsRequest) -> Result<SymbolsResponse> {
        let repo = self.resolve_repo(repo_path)?;
        let kind = parse_kind(req.kind.as_deref())?;
        let file = req
            .file
            .as_deref()
            .map(|f| crate::engine::index::sources::code_path(&repo, f))
            .transpose()?
            .filter(|f| !f.is_empty());
        let query = req.query.as_deref().map(str::trim).filter(|q| !q.is_empty()).map(String::from);
        if let Some(q) = &query {
            crate::engine::limits::check_symbol_query(q)?;
        }
        if query.is_none() && file.is_none() {
            return Err(Error::BadRequest(
                "name a symbol to find (`query`; the command line's NAME) or a file to outline (`file`; --file F)"
                    .into(),
            ));
        }
        // An outline is of the file as it is now: one edited since the last run read "No
        // symbols" while it held a new definition (tour36 F4).
        let not_refreshed = match (&query, &file) {
            (None, Some(f)) => self.refresh_edited(repo_path, f),
            _ => None,
        };
        let reader = open_current(&repo)?;
        let filter = SymbolFilter {
            kind,
            file: file.clone(),
            path_prefix: prefix_of(&repo, req.path_prefix.as_deref())?,
            lang: req.lang.as_deref().filter(|l| !l.trim().is_empty()).map(checked_lang).transpose()?,
        };
        let (mode, results, total) = match &query {
            Some(q) => {
                let limit = checked_limit(req.limit, DEFAULT_LIMIT)?;
                let (hits, total) = query::search(&reader, q, &filter, limit)?;
                ("search", hits, total)
            }
            None => {
                let path = file.clone().unwrap_or_default();
                let limit = checked_limit(req.limit, MAX_LIMIT)?;
                if query::file_row(&reader, &path)?.is_none() {
                    return Err(self.no_symbols_for(&repo, &path));
                }
                let hits = query::outline(&reader, &path, &filter, limit)?;
                let total =
                    if hits.len() < limit { hits.len() } else { query::outline_count(&reader, &path, &filter)? };
                ("outline", hits, total)
            }
        };
        let mut results = results;
        if self.config().privacy.redact_snippets {
            redact_signatures(&mut results);
        }
        let stale = mark_stale(&repo, &mut results);
        // A --path naming no indexed file found nothing for that reason, not for lack of the
        // symbol (tour35 F11), as search says.
        let unmatched = match (results.is_empty(), filter.path_prefix.as_deref()) {
            (true, Some(p)) => crate::engine::search::filter_note::unmatched(&repo, p),
            _ => None,
        };
        let note = parse_in_progress(&repo)
            .or(not_refreshed)
            .or(unmatched)
            .or_else(|| query.as_deref().and_then(|q| reader.parts_note(q, &repo.root)))
            .or_else(|| stale_note(stale, &repo));
        Ok(SymbolsResponse {
            schema_version: SCHEMA_VERSION,
            project_id: repo.fingerprint.clone(),
            repo: repo.root.clone(),
            mode: mode.into(),
            query,
            file,
            generation: reader.meta().generation,
            truncated: total > results.len(),
            total,
            results,
            note,
        })
    }

    /// Why a file has no outline: not in the repo, not a language with a grammar, or not indexed yet.
    fn no_symbols_for(&self, repo: &RepoRef, path: &str) -> Error {
        if !repo.root.join(path).is_file() {
            return Error::NotFound(format!("no file {path} in {}", repo.root.display()));
        }
        match Lang::from_path(Path::new(path)) {
            None => Error::BadRequest(format!(
                "{path} has no symbols: docdex extracts symbols for {} files only",
                Lang::ALL.iter().map(|l| l.name()).collect::<Vec<_>>().join(", ")
            )),
            Some(_) => Error::NotFound(format!(
                "{path} is not in the symbol index (ignored, skipped or added after the last run); \
                 run `docdex index --repo {}`",
                crate::error::shell_path(&repo.root)
            )),
        }
    }

    /// The error a command answers for a [`Self::symbols_status`] of state `not_built`, as
    /// `docdex status` and the symbol queries answer there: not indexed yet (or a first run under
    /// way, [`Engine::explain_not_indexed`]), or indexed with no symbols extracted yet; both name
    /// `docdex index` (exit 3). None for any other state. The HTTP route and the MCP tool keep
    /// `not_built` as a valid answer; only the command line turns it into a failure.
    pub fn symbols_not_built(&self, status: &SymbolsStatus) -> Option<Error> {
        if status.state != "not_built" {
            return None;
        }
        Some(match self.resolve_repo(&status.repo) {
            Ok(repo) => self.explain_not_indexed(missing_store(&repo)),
            Err(e) => e,
        })
    }

    /// The symbol store's state: counts per language, parser drift, whether a re-index is needed.
    pub fn symbols_status(&self, repo_path: &Path) -> Result<SymbolsStatus> {
        let repo = self.resolve_repo(repo_path)?;
        let support = super::language_support();
        let index_generation = Summary::load(&repo.manifest_path()).generation;
        let mut status = not_built(&repo, index_generation);
        let reader = SymbolReader::open(&repo)?;
        let per_lang = match &reader {
            Some(r) => lang_counts(r)?,
            None => BTreeMap::new(),
        };
        let meta = reader.as_ref().map(|r| r.meta().clone()).unwrap_or_default();
        status.languages = language_rows(&support, &meta, &per_lang);
        for s in support.iter().filter(|s| !s.available) {
            status.messages.push(format!(
                "{}: no symbols, {}",
                s.lang,
                s.problem.as_deref().unwrap_or("grammar unavailable")
            ));
        }
        let Some(reader) = reader else {
            status.messages.push(format!(
                "no symbol index yet; run `docdex index --repo {}`",
                crate::error::shell_path(&repo.root)
            ));
            return Ok(status);
        };
        let (files, not_parsed, errors, symbols) = totals(&reader)?;
        status.files = files;
        status.files_not_parsed = not_parsed;
        status.files_with_parse_errors = errors;
        status.symbols = symbols;
        status.generation = meta.generation;
        status.store_schema = meta.schema;
        set_store_state(&mut status, &reader, &repo, meta.generation);
        status.messages.extend(outdated_imports_message(meta.imports_outdated(), &repo));
        if not_parsed > 0 {
            status.messages.push(format!(
                "{not_parsed} files were not parsed (over {} MB or too slow to parse); they are searchable as text",
                super::MAX_PARSE_BYTES / 1048576
            ));
        }
        Ok(status)
    }

    /// Files containing any or all of the given Tree-sitter node kinds.
    pub fn ast_search(&self, repo_path: &Path, req: &AstSearchRequest) -> Result<AstSearchResponse> {
        let repo = self.resolve_repo(repo_path)?;
        let kinds = split_kinds(&req.kinds)?;
        super::ast::validate_kinds(&kinds)?;
        let reader = open_current(&repo)?;
        let limit = checked_limit(req.limit, DEFAULT_LIMIT)?;
        let prefix = prefix_of(&repo, req.path_prefix.as_deref())?;
        let mut files = query::ast_files(&reader, &kinds, req.mode, prefix.as_deref())?;
        files.sort_by(|a, b| total(&b.counts).cmp(&total(&a.counts)).then(a.path.cmp(&b.path)));
        let total_files = files.len();
        let results = files
            .into_iter()
            .take(limit)
            .map(|f| AstFileHit { total: total(&f.counts), path: f.path, lang: f.lang, counts: f.counts })
            .collect::<Vec<_>>();
        Ok(AstSearchResponse {
            schema_version: SCHEMA_VERSION,
            repo: repo.root.clone(),
            kinds,
            mode: req.mode,
            truncated: total_files > results.len(),
            total_files,
            note: unmatched_path(&repo, total_files, prefix.as_deref()),
            results,
        })
    }

    /// Per-file match counts and sample nodes for node kinds, optionally only declarations of a name.
    pub fn ast_query(&self, repo_path: &Path, req: &AstQueryRequest) -> Result<AstQueryResponse> {
        let repo = self.resolve_repo(repo_path)?;
        let kinds = split_kinds(&req.kinds)?;
        super::ast::validate_kinds(&kinds)?;
        let reader = open_current(&repo)?;
        let limit = checked_limit(req.limit, DEFAULT_LIMIT)?;
        let sample_limit = req.sample_limit.unwrap_or(5).min(MAX_LIMIT);
        let name = req.name.as_deref().map(str::trim).filter(|n| !n.is_empty()).map(String::from);
        if let Some(n) = &name {
            crate::engine::limits::check_symbol_query(n)?;
        }
        let field = req.field.as_deref().map(str::trim).filter(|f| !f.is_empty()).map(String::from);
        if let Some(f) = &field {
            super::ast::validate_field(f)?;
        }
        let prefix = prefix_of(&repo, req.path_prefix.as_deref())?;
        let mut files: Vec<AstQueryFile> = match (&field, &name) {
            (Some(f), _) => field_query(&repo, &reader, &kinds, req.mode, f, name.as_deref(), prefix.as_deref())?,
            (None, Some(n)) => named_query(&reader, &kinds, req.mode, n, prefix.as_deref())?,
            (None, None) => query::ast_files(&reader, &kinds, req.mode, prefix.as_deref())?
                .into_iter()
                .map(|f| {
                    let samples = super::ast::decode_samples(&f.samples, &kinds)
                        .into_iter()
                        .map(|s| AstNode {
                            kind: s.kind,
                            line_start: s.line_start,
                            line_end: s.line_end,
                            column: Some(s.column.saturating_add(1)),
                            name: None,
                            text: String::new(),
                        })
                        .collect();
                    AstQueryFile { total: total(&f.counts), path: f.path, lang: f.lang, counts: f.counts, samples }
                })
                .collect(),
        };
        files.sort_by(|a, b| b.total.cmp(&a.total).then(a.path.cmp(&b.path)));
        let total_files = files.len();
        let total_matches = files.iter().map(|f| f.total as u64).sum();
        files.truncate(limit);
        for f in &mut files {
            f.samples.sort_by_key(|s| (s.line_start, s.column, s.line_end));
            f.samples.truncate(sample_limit);
            sample_texts(&repo.root, &f.path, &mut f.samples, self.config().privacy.redact_snippets);
        }
        Ok(AstQueryResponse {
            schema_version: SCHEMA_VERSION,
            repo: repo.root.clone(),
            kinds,
            mode: req.mode,
            name,
            field,
            truncated: total_files > files.len(),
            total_files,
            total_matches,
            note: unmatched_path(&repo, total_files, prefix.as_deref()),
            results: files,
        })
    }

    /// Languages this build extracts symbols for, with their grammar versions and whether the
    /// grammar loads (for `docdex check`).
    pub fn symbol_languages(&self) -> Vec<LanguageSupport> {
        super::language_support()
    }
}

/// The note of an AST search that found nothing because `--path` names no indexed file: it
/// said only "no file has any of function_item" (tour37 F10), as symbols and search once did.
fn unmatched_path(repo: &RepoRef, found: usize, prefix: Option<&str>) -> Option<String> {
    match (found, prefix) {
        (0, Some(p)) => crate::engine::search::filter_note::unmatched(repo, p),
        _ => None,
    }
}

fn total(counts: &BTreeMap<String, u32>) -> u32 {
    counts.values().sum()
}

/// Field-filtered AST query: the stored counts pick the files that hold any of the kinds, and
/// each of those is parsed again (both cores) to find the nodes sitting in `field`.
fn field_query(
    repo: &RepoRef,
    reader: &SymbolReader,
    kinds: &[String],
    mode: AstMode,
    field: &str,
    name: Option<&str>,
    prefix: Option<&str>,
) -> Result<Vec<AstQueryFile>> {
    use rayon::prelude::*;
    let candidates = query::ast_files(reader, kinds, AstMode::Any, prefix)?;
    // With a name, a file whose text (letters and digits, lowercased) lacks it is not parsed.
    let wanted = name.map(store::norm).filter(|n| !n.is_empty());
    let files = candidates
        .into_par_iter()
        .filter_map(|f| {
            let lang = super::Lang::from_index_lang(&f.lang)?;
            let bytes = crate::engine::fsutil::read_repo_file(&repo.root, &f.path).ok()?;
            if let Some(w) = &wanted {
                let folded: Vec<u8> = bytes
                    .iter()
                    .filter(|b| b.is_ascii_alphanumeric() || **b >= 0x80)
                    .map(u8::to_ascii_lowercase)
                    .collect();
                if memchr::memmem::find(&folded, w.as_bytes()).is_none() && w.is_ascii() {
                    return None;
                }
            }
            let src = crate::engine::fsutil::decode_text(&bytes);
            let tree = super::parse_tree(lang, &src).ok()?;
            let found = super::ast::field_matches(&tree, &src, kinds, field, name);
            if found.is_empty() {
                return None;
            }
            let mut counts: BTreeMap<String, u32> = BTreeMap::new();
            for m in &found {
                *counts.entry(m.kind.clone()).or_default() += 1;
            }
            let samples = found
                .into_iter()
                .map(|m| AstNode {
                    kind: m.kind,
                    line_start: m.line_start,
                    line_end: m.line_end,
                    column: Some(m.column.saturating_add(1)),
                    name: m.label,
                    text: String::new(),
                })
                .collect();
            Some(AstQueryFile { total: total(&counts), path: f.path, lang: f.lang, counts, samples })
        })
        .filter(|f| mode == AstMode::Any || kinds.iter().all(|k| f.counts.contains_key(k)))
        .collect();
    Ok(files)
}

/// Name-filtered AST query: declarations of the kinds with that name, grouped per file.
fn named_query(
    reader: &SymbolReader,
    kinds: &[String],
    mode: AstMode,
    name: &str,
    prefix: Option<&str>,
) -> Result<Vec<AstQueryFile>> {
    let mut by_file: BTreeMap<String, AstQueryFile> = BTreeMap::new();
    for s in query::named_nodes(reader, kinds, name, prefix)? {
        let f = by_file.entry(s.path.clone()).or_insert_with(|| AstQueryFile {
            path: s.path.clone(),
            lang: s.lang.clone(),
            counts: BTreeMap::new(),
            total: 0,
            samples: Vec::new(),
        });
        *f.counts.entry(s.node_kind.clone()).or_default() += 1;
        f.total += 1;
        f.samples.push(AstNode {
            kind: s.node_kind,
            line_start: s.line_start,
            line_end: s.line_end,
            column: None,
            name: Some(s.name),
            text: String::new(),
        });
    }
    Ok(by_file
        .into_values()
        .filter(|f| mode == AstMode::Any || kinds.iter().all(|k| f.counts.contains_key(k)))
        .collect())
}

/// The status of a repository with no symbol store: nothing counted yet.
fn not_built(repo: &RepoRef, index_generation: u64) -> SymbolsStatus {
    SymbolsStatus {
        schema_version: SCHEMA_VERSION,
        project_id: repo.fingerprint.clone(),
        repo: repo.root.clone(),
        state: "not_built".into(),
        symbols_reindex_required: false,
        generation: 0,
        index_generation,
        store_schema: 0,
        files: 0,
        files_not_parsed: 0,
        files_with_parse_errors: 0,
        symbols: 0,
        languages: Vec::new(),
        messages: Vec::new(),
        db_path: store::db_path(repo),
    }
}

/// One row per supported language: its counts in the store and whether the grammar compiled in
/// differs from the one its files were extracted with.
fn language_rows(
    support: &[LanguageSupport],
    meta: &store::StoreMeta,
    per_lang: &BTreeMap<String, (u64, u64)>,
) -> Vec<LanguageStatus> {
    let row = |s: &LanguageSupport| {
        let stored = meta.grammars.get(&s.lang).cloned();
        let (files, symbols) = per_lang.get(&s.lang).copied().unwrap_or((0, 0));
        LanguageStatus {
            drifted: stored.as_ref().is_some_and(|v| *v != s.grammar_version),
            lang: s.lang.clone(),
            grammar_version: s.grammar_version.clone(),
            stored_grammar_version: stored,
            files,
            symbols,
            available: s.available,
        }
    };
    support.iter().map(row).collect()
}

/// What `docdex status` says of the code pass's state that the next index run changes without
/// any file changing: an impact graph resolved under another
/// [`super::graph::RESOLUTION_VERSION`] (an older docdex's rules: edges and diagnostics may be
/// stale) and stored imports extracted by older import rules, unless `docdex graph rebuild`
/// built the graph from disk with this build's rules and resolution. Read from the store's meta only
/// (status is polled); nothing for a store never committed, or one another docdex's schema
/// wrote (the index run rebuilds it whole, and `docdex symbols-status` says so).
pub fn index_run_notes(repo: &RepoRef) -> Vec<String> {
    if let Some(damage) = damage_note(repo) {
        return vec![damage];
    }
    let Some(meta) = store::peek_meta(repo) else { return Vec::new() };
    if meta.schema != store::STORE_SCHEMA || meta.generation == 0 {
        return Vec::new();
    }
    let mut notes = Vec::new();
    let current = super::graph::RESOLUTION_VERSION;
    if !super::graph::graph_path(repo).exists() {
        // An index run writes the graph after parsing every code file: one that stopped
        // part-way wrote none (its resolution read 0, which was "an older docdex's").
        notes.push(format!(
            "the impact graph is not built yet: the index run that builds it, after parsing every code file, has not finished; `impact`, `graph cycles` and `run-tests --affected` have no edges until `docdex index --repo {}` finishes",
            crate::error::shell_path(&repo.root)
        ));
    } else if meta.graph_resolution != current {
        let which = match meta.graph_resolution {
            0 => "before resolution was versioned".to_string(),
            v if v > current => format!("under resolution {v}, newer than this build's {current}"),
            v => format!("under resolution {v}, this build's is {current}"),
        };
        let age = if meta.graph_resolution > current { "a newer" } else { "an older" };
        notes.push(format!(
            "the impact graph was resolved by {age} docdex ({which}): its edges and diagnostics may be out of date; \
             the next `docdex index --repo {}` rebuilds it (`docdex graph rebuild` does now)",
            crate::error::shell_path(&repo.root)
        ));
    }
    notes.extend(outdated_imports_message(meta.graph_imports_outdated(), repo));
    notes
}

/// A note when the stored imports of `langs` were extracted by another docdex's import rules:
/// not drift (symbol queries stay open) but the impact graph built from them may be out of date
/// until the next index run re-extracts them, which only impact answers said before.
fn outdated_imports_message(langs: Vec<Lang>, repo: &RepoRef) -> Option<String> {
    let outdated: Vec<&str> = langs.into_iter().map(Lang::name).collect();
    if outdated.is_empty() {
        return None;
    }
    Some(format!(
        "the stored imports of {} files were extracted by an older docdex's import rules (symbols are unaffected; \
         impact edges and cycles built from them may be out of date); the next `docdex index --repo {}` re-reads those files",
        outdated.join(", "),
        crate::error::shell_path(&repo.root)
    ))
}

/// `ready`, `reindex_required` (the store is from another version or grammar) or `lagging`
/// (an interrupted run left it behind the text index), with a message for the last two.
fn set_store_state(status: &mut SymbolsStatus, reader: &SymbolReader, repo: &RepoRef, generation: u64) {
    match reader.ensure_current(&repo.root) {
        Err(e) => {
            status.state = "reindex_required".into();
            status.symbols_reindex_required = true;
            status.messages.push(e.to_string());
        }
        Ok(()) if generation < status.index_generation => {
            status.state = "lagging".into();
            status.messages.push(format!(
                "the symbol index (generation {}) is behind the text index (generation {}): the last run was \
                 interrupted; the next `docdex index --repo {}` catches up",
                generation,
                status.index_generation,
                crate::error::shell_path(&repo.root)
            ));
        }
        Ok(()) => status.state = "ready".into(),
    }
}

fn lang_counts(reader: &SymbolReader) -> Result<BTreeMap<String, (u64, u64)>> {
    let err = reader.err();
    let mut stmt =
        reader.conn().prepare("SELECT lang, COUNT(*), SUM(symbol_count) FROM files GROUP BY lang").map_err(&err)?;
    let rows = stmt
        .query_map([], |r| {
            Ok((r.get::<_, String>(0)?, (r.get::<_, i64>(1)? as u64, r.get::<_, Option<i64>>(2)?.unwrap_or(0) as u64)))
        })
        .map_err(&err)?;
    rows.collect::<rusqlite::Result<BTreeMap<_, _>>>().map_err(err)
}

fn totals(reader: &SymbolReader) -> Result<(u64, u64, u64, u64)> {
    let err = reader.err();
    reader
        .conn()
        .query_row(
            "SELECT COUNT(*), COALESCE(SUM(parsed = 0), 0), COALESCE(SUM(parse_errors), 0),
                    COALESCE(SUM(symbol_count), 0) FROM files",
            [],
            |r| {
                Ok((
                    r.get::<_, i64>(0)? as u64,
                    r.get::<_, i64>(1)? as u64,
                    r.get::<_, i64>(2)? as u64,
                    r.get::<_, i64>(3)? as u64,
                ))
            },
        )
        .map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_found_as_a_whole_word_only() {
        let line = "var f10=1,$f1=2;g(xf1);function f1(a){return f1}";
        assert_eq!(name_column(line, "f1"), Some(line.find("f1(a)").unwrap() as u32 + 1));
        assert_eq!(name_column("f1", "f1"), Some(1));
        assert_eq!(name_column("é_f1 f1", "f1"), Some(7), "a byte column, past a two-byte letter");
        assert_eq!(name_column("f10 f1_x", "f1"), None);
        assert_eq!(name_column("anything", ""), None);
    }
}
