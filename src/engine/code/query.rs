//! Queries over `symbols.db`: symbol search by name (exact, then prefix, then word part, then
//! fuzzy), a file's outline, definitions for search ranking, and AST search over the stored
//! node-kind counts.

use super::ast;
use super::store::{norm, umlaut_spelling, StoredSymbol, SymbolReader, SYMBOL_COLUMNS};
use super::types::SymbolKind;
use super::types::{AstMode, MatchKind, SymbolHit};
use crate::engine::index::files::{self, FileClass};
use crate::error::Result;
use rusqlite::types::Value;
use std::collections::{BTreeMap, HashSet};

/// Rows fetched per match tier before ranking (more than any page asks for).
const TIER_CAP: usize = 2000;

/// Filters shared by search and outline.
#[derive(Debug, Clone, Default)]
pub struct SymbolFilter {
    /// Only this kind.
    pub kind: Option<SymbolKind>,
    /// Only this repo-relative file.
    pub file: Option<String>,
    /// Only files under this prefix.
    pub path_prefix: Option<String>,
    /// Only this language.
    pub lang: Option<String>,
}

impl SymbolFilter {
    fn sql(&self, params: &mut Vec<Value>) -> String {
        let mut out = String::new();
        if let Some(k) = self.kind {
            params.push(Value::Text(k.name().into()));
            out.push_str(&format!(" AND s.kind = ?{}", params.len()));
        }
        if let Some(f) = &self.file {
            params.push(Value::Text(f.clone()));
            out.push_str(&format!(" AND f.path = ?{}", params.len()));
        }
        if let Some(p) = self.path_prefix.as_deref().filter(|p| !p.is_empty()) {
            // Whole components, as `repos::under_prefix`: `src` is the file or the folder.
            let dir = if p.ends_with('/') { p.to_string() } else { format!("{p}/") };
            params.push(Value::Text(p.to_string()));
            params.push(Value::Text(dir.clone()));
            params.push(Value::Text(format!("{dir}\u{10FFFF}")));
            let n = params.len();
            out.push_str(&format!(" AND (f.path = ?{} OR (f.path >= ?{} AND f.path < ?{}))", n - 2, n - 1, n));
        }
        if let Some(l) = &self.lang {
            params.push(Value::Text(l.to_ascii_lowercase()));
            out.push_str(&format!(" AND f.lang = ?{}", params.len()));
        }
        out
    }
}

fn select(reader: &SymbolReader, where_sql: &str, params: Vec<Value>, limit: usize) -> Result<Vec<StoredSymbol>> {
    let sql = format!(
        "SELECT {SYMBOL_COLUMNS} FROM symbols s JOIN files f ON f.id = s.file_id WHERE {where_sql} LIMIT {limit}"
    );
    let err = reader.err();
    let mut stmt = reader.conn().prepare_cached(&sql).map_err(&err)?;
    let rows = stmt.query_map(rusqlite::params_from_iter(params), StoredSymbol::from_row).map_err(&err)?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map_err(err)
}

/// Rank of a file's class for ordering equal matches: source first.
fn class_rank(path: &str, lang: &str) -> u8 {
    match files::classify(path, lang) {
        FileClass::Source => 0,
        FileClass::Example | FileClass::Config => 1,
        FileClass::Test | FileClass::Docs => 2,
        _ => 3,
    }
}

fn hit(s: StoredSymbol, m: Option<MatchKind>, score: f32) -> SymbolHit {
    SymbolHit {
        name: s.name,
        kind: s.kind,
        lang: s.lang,
        path: s.path,
        line_start: s.line_start,
        line_end: s.line_end,
        signature: s.signature,
        container: s.container,
        depth: s.depth,
        node_kind: s.node_kind,
        match_kind: m,
        score,
        stale: false,
    }
}

/// Name search: exact matches first, then prefixes, then names containing the query's words,
/// then fuzzy matches (typos, abbreviations); within a tier, types and functions before
/// variables, source before tests, shorter names first. Returns the page and how many matched
/// (a lower bound when a tier hit its cap).
pub fn search(
    reader: &SymbolReader,
    query: &str,
    filter: &SymbolFilter,
    limit: usize,
) -> Result<(Vec<SymbolHit>, usize)> {
    // `Store::size`, `store.size`, `Store#size`: the last segment is the name, the one before
    // it prefers symbols in that container.
    let (query, container) = split_qualified(query.trim());
    let container = container.map(|c| norm(&c));
    let q = norm(&query);
    if q.is_empty() {
        return Ok((Vec::new(), 0));
    }
    let mut seen: HashSet<i64> = HashSet::new();
    let mut tiers: Vec<(MatchKind, Vec<StoredSymbol>)> = Vec::new();

    let (mut exact, mut prefix) = (Vec::new(), Vec::new());
    // The query as typed and, when it has accents, folded (`café` meets `cafe_count`).
    let fq = fold_norm(&q);
    for n in if fq == q { vec![&q] } else { vec![&q, &fq] } {
        let mut params = vec![Value::Text(n.clone())];
        let f = filter.sql(&mut params);
        exact.extend(select(reader, &format!("s.norm = ?1{f}"), params, TIER_CAP)?);
        let mut params = vec![Value::Text(n.clone()), Value::Text(format!("{n}\u{10FFFF}"))];
        let f = filter.sql(&mut params);
        prefix.extend(select(reader, &format!("s.norm > ?1 AND s.norm < ?2{f}"), params, TIER_CAP)?);
    }
    let (folded_exact, folded_prefix) = accented_names(reader, &fq, filter)?;
    exact.extend(folded_exact);
    prefix.extend(folded_prefix);
    tiers.push((MatchKind::Exact, exact));
    tiers.push((MatchKind::Prefix, prefix));
    if let Some(rows) = word_part_tier(reader, &query, filter)? {
        tiers.push((MatchKind::WordPart, rows));
    }

    let mut hits: Vec<(u8, SymbolHit)> = Vec::new();
    for (tier, (m, rows)) in tiers.into_iter().enumerate() {
        for s in rows {
            if seen.insert(s.id) {
                let in_container = container.is_some() && s.container.as_deref().map(norm) == container;
                let score = tier_score(tier as u8, &s, &q) + if in_container { 1.0 } else { 0.0 };
                hits.push((tier as u8, hit(s, Some(m), score)));
            }
        }
    }
    if hits.len() < limit {
        for (s, closeness) in fuzzy(reader, &q, filter, limit * 4)? {
            // A qualified query's typo is looked for in its container only: `Person::new`
            // found `module net` (a code-intelligence tour).
            let elsewhere = container.is_some() && s.container.as_deref().map(norm) != container;
            if !elsewhere && seen.insert(s.id) {
                let score = 0.25 * closeness * s.kind.weight();
                hits.push((3, hit(s, Some(MatchKind::Fuzzy), score)));
            }
        }
    }
    let total = hits.len();
    hits.sort_by(|(ta, a), (tb, b)| {
        ta.cmp(tb)
            .then(b.score.total_cmp(&a.score))
            .then(spelling_rank(a, &query).cmp(&spelling_rank(b, &query)))
            .then(class_rank(&a.path, &a.lang).cmp(&class_rank(&b.path, &b.lang)))
            .then(a.name.len().cmp(&b.name.len()))
            .then(a.path.cmp(&b.path))
            .then(a.line_start.cmp(&b.line_start))
    });
    Ok((hits.into_iter().take(limit).map(|(_, h)| h).collect(), total))
}

/// Names containing the query's words (every word starts one of the name's parts), `None` for a
/// query without words.
fn word_part_tier(reader: &SymbolReader, query: &str, filter: &SymbolFilter) -> Result<Option<Vec<StoredSymbol>>> {
    let words: Vec<(String, String)> = query
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .flat_map(crate::engine::analysis::identifier_part_spellings)
        .collect();
    if words.is_empty() {
        return Ok(None);
    }
    let mut params: Vec<Value> = Vec::new();
    let mut conds = Vec::new();
    for (folded, written) in &words {
        // Parts are stored folded (`café_total` as ` cafe total `), so `cafe` finds it; a
        // store built before index schema 10 holds them as written, until the next index run.
        params.push(Value::Text(format!(" {folded}")));
        let mut cond = format!("instr(s.parts, ?{}) > 0", params.len());
        if written != folded {
            params.push(Value::Text(format!(" {written}")));
            cond = format!("({cond} OR instr(s.parts, ?{}) > 0)", params.len());
        }
        conds.push(cond);
    }
    let f = filter.sql(&mut params);
    Ok(Some(select(reader, &format!("{}{f}", conds.join(" AND ")), params, TIER_CAP)?))
}

/// A normalized name folded as search folds words (`résumé` as `resume`); an ASCII one, the
/// common case, is returned as it is, nothing to fold.
fn fold_norm(n: &str) -> String {
    if n.is_ascii() {
        n.to_string()
    } else {
        crate::engine::analysis::fold(n)
    }
}

/// The names with a letter beyond ASCII that equal the folded query `fq` once folded
/// themselves, and those that start with it (`resume` meets `résumé` and `résumé_total`,
/// `ecole` `école`), as the word-part tier meets folded parts: the exact and prefix tiers read
/// `norm` as written, so `résumé` was no exact match for `resume`. A name with a German umlaut
/// is also read as German writes it without one (`groesse` meets `größe`, `ueber` `über_x`),
/// as its parts are stored ([`umlaut_spelling`]); the query is taken as typed, so `queue`
/// meets no umlaut name. Such a name agrees with `fq` up to its first letter beyond ASCII
/// (ASCII folds and spells as itself), so it lies in one of the `norm` index's ranges "`fq`'s
/// first k letters, then a letter beyond ASCII": a seek per letter of the query, which finds
/// nothing in an ASCII store, not a pass over the names.
fn accented_names(
    reader: &SymbolReader,
    fq: &str,
    filter: &SymbolFilter,
) -> Result<(Vec<StoredSymbol>, Vec<StoredSymbol>)> {
    if fq.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let ascii = fq.find(|c: char| !c.is_ascii()).unwrap_or(fq.len());
    let err = reader.err();
    let mut stmt = reader
        .conn()
        .prepare_cached("SELECT s.id, s.norm FROM symbols s WHERE s.norm >= ?1 AND s.norm < ?2")
        .map_err(&err)?;
    let mut matched: Vec<(i64, bool)> = Vec::new();
    for k in 0..=ascii.min(fq.len().saturating_sub(1)) {
        let head = &fq[..k];
        let range = rusqlite::params![format!("{head}\u{80}"), format!("{head}\u{10FFFF}")];
        let rows = stmt.query_map(range, |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))).map_err(&err)?;
        for row in rows {
            let (id, norm) = row.map_err(&err)?;
            let folded = fold_norm(&norm);
            let spelled = umlaut_spelling(&norm);
            let is_exact = folded == fq || spelled.as_deref() == Some(fq);
            let starts = folded.starts_with(fq) || spelled.is_some_and(|s| s.starts_with(fq));
            if starts && matched.len() < 2 * TIER_CAP {
                matched.push((id, is_exact));
            }
        }
    }
    drop(stmt);
    let (mut exact, mut prefix) = (Vec::new(), Vec::new());
    for (id, is_exact) in matched {
        let mut params = vec![Value::Integer(id)];
        let f = filter.sql(&mut params);
        let rows = select(reader, &format!("s.id = ?1{f}"), params, 1)?;
        let tier = if is_exact { &mut exact } else { &mut prefix };
        tier.extend(rows);
    }
    Ok((exact, prefix))
}

/// Among equal scores: the name spelled as asked (case and all) first, and of those a type
/// before a function or member of the same name (`AsyncResult` the class before the
/// `AsyncResult` methods that build one; `parse` the function before a class `Parse`).
fn spelling_rank(h: &SymbolHit, query: &str) -> u8 {
    let is_type = matches!(
        h.kind,
        SymbolKind::Class
            | SymbolKind::Struct
            | SymbolKind::Enum
            | SymbolKind::Interface
            | SymbolKind::Trait
            | SymbolKind::Type
    );
    match (h.name == query, is_type) {
        (true, true) => 0,
        (true, false) => 1,
        _ => 2,
    }
}

/// Splits `a::b`, `a.b`, `a#b` and `a->b` into the last segment and the one before it.
fn split_qualified(q: &str) -> (String, Option<String>) {
    let segments: Vec<&str> =
        q.split(['.', '#', ':']).flat_map(|s| s.split("->")).map(str::trim).filter(|s| !s.is_empty()).collect();
    match segments.as_slice() {
        [] => (q.to_string(), None),
        [one] => (one.to_string(), None),
        [.., before, last] => (last.to_string(), Some(before.to_string())),
    }
}

/// Score within a tier: the kind's weight, and for prefix matches how much of the name the
/// query covers.
fn tier_score(tier: u8, s: &StoredSymbol, q: &str) -> f32 {
    let w = s.kind.weight();
    let base = [1.0, 0.75, 0.5][tier.min(2) as usize];
    let coverage = (q.len() as f32 / norm(&s.name).len().max(1) as f32).min(1.0);
    let cover = if tier == 1 { 0.5 + 0.5 * coverage } else { 1.0 };
    ((base * w * cover) * 1000.0).round() / 1000.0
}

/// Fuzzy candidates: names containing the query's letters in order (abbreviations like
/// `sesstore`), or within a small edit distance (typos like `sesion`), best first.
fn fuzzy(reader: &SymbolReader, q: &str, filter: &SymbolFilter, n: usize) -> Result<Vec<(StoredSymbol, f32)>> {
    let mut params = Vec::new();
    let f = filter.sql(&mut params);
    let sql = format!("SELECT s.id, s.norm FROM symbols s JOIN files f ON f.id = s.file_id WHERE 1=1{f}");
    let err = reader.err();
    let mut stmt = reader.conn().prepare_cached(&sql).map_err(&err)?;
    let rows = stmt
        .query_map(rusqlite::params_from_iter(params), |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
        .map_err(&err)?;
    let max_edits = if q.chars().count() <= 4 { 1 } else { 2 };
    let mut scored: Vec<(f32, i64)> = Vec::new();
    for row in rows {
        let (id, name) = row.map_err(&err)?;
        if let Some(c) = closeness(q, &name, max_edits) {
            scored.push((c, id));
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.truncate(n);
    let mut out = Vec::with_capacity(scored.len());
    for (c, id) in scored {
        let rows = select(reader, "s.id = ?1", vec![Value::Integer(id)], 1)?;
        out.extend(rows.into_iter().map(|s| (s, c)));
    }
    Ok(out)
}

/// How close `name` is to the query `q` (both normalized), in 0..1, or `None` when not close.
fn closeness(q: &str, name: &str, max_edits: usize) -> Option<f32> {
    if q.len() >= 3 && is_subsequence(q, name) && name.len() <= q.len() * 3 {
        return Some(0.5 + 0.5 * q.len() as f32 / name.len().max(1) as f32);
    }
    let (ql, nl) = (q.chars().count(), name.chars().count());
    if ql < 3 || nl.abs_diff(ql) > max_edits {
        return None;
    }
    let d = crate::engine::analysis::edit_distance(q, name, max_edits)?;
    Some(0.5 * (1.0 - d as f32 / (ql.max(nl) as f32)))
}

fn is_subsequence(q: &str, name: &str) -> bool {
    let mut it = name.chars();
    q.chars().all(|c| it.any(|n| n == c))
}

/// A file's symbols in source order (containers before their members), with depth for nesting.
pub fn outline(reader: &SymbolReader, path: &str, filter: &SymbolFilter, limit: usize) -> Result<Vec<SymbolHit>> {
    let mut params = vec![Value::Text(path.to_string())];
    let f = SymbolFilter { file: None, ..filter.clone() }.sql(&mut params);
    let rows = select(reader, &format!("f.path = ?1{f} ORDER BY s.ord"), params, limit)?;
    Ok(rows.into_iter().map(|s| hit(s, None, 0.0)).collect())
}

/// How many symbols a file's outline holds under `filter`: the true `total` of an outline cut
/// at its limit (a probe of limit + 1 said 1,001 for a file of 20,000 definitions).
pub fn outline_count(reader: &SymbolReader, path: &str, filter: &SymbolFilter) -> Result<usize> {
    let mut params = vec![Value::Text(path.to_string())];
    let f = SymbolFilter { file: None, ..filter.clone() }.sql(&mut params);
    let sql = format!("SELECT COUNT(*) FROM symbols s JOIN files f ON f.id = s.file_id WHERE f.path = ?1{f}");
    let err = reader.err();
    let n: i64 = reader.conn().query_row(&sql, rusqlite::params_from_iter(params), |r| r.get(0)).map_err(err)?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// Whether the store has a row for `path`, and if so the note saying why it was not parsed.
pub fn file_row(reader: &SymbolReader, path: &str) -> Result<Option<Option<String>>> {
    use rusqlite::OptionalExtension;
    let err = reader.err();
    reader
        .conn()
        .query_row("SELECT note FROM files WHERE path = ?1", [path], |r| r.get::<_, Option<String>>(0))
        .optional()
        .map_err(err)
}

/// A definition found for a search query: where it is and how much it weighs.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    /// Repo-relative path.
    pub path: String,
    /// First line.
    pub line_start: u32,
    /// Last line.
    pub line_end: u32,
    /// Its kind.
    pub kind: SymbolKind,
}

/// Definitions whose normalized name is exactly `name_norm` (at most `cap`).
pub fn definitions(reader: &SymbolReader, name_norm: &str, cap: usize) -> Result<Vec<Definition>> {
    definitions_where(reader, "s.norm = ?1 AND ?2 IS NULL", name_norm, None, cap)
}

/// Definitions named exactly `name`, case and all: names are stored folded to lowercase
/// (`norm`), so prose's `Show` would otherwise find every `show` method.
pub fn exact_definitions(reader: &SymbolReader, name: &str, cap: usize) -> Result<Vec<Definition>> {
    definitions_where(reader, "s.norm = ?1 AND s.name = ?2", &norm(name), Some(name), cap)
}

fn definitions_where(
    reader: &SymbolReader,
    filter: &str,
    name_norm: &str,
    name: Option<&str>,
    cap: usize,
) -> Result<Vec<Definition>> {
    let err = reader.err();
    let sql = format!(
        "SELECT f.path, s.line_start, s.line_end, s.kind FROM symbols s JOIN files f ON f.id = s.file_id
         WHERE {filter} LIMIT ?3"
    );
    let mut stmt = reader.conn().prepare_cached(&sql).map_err(&err)?;
    let rows = stmt
        .query_map(rusqlite::params![name_norm, name, cap as i64], |r| {
            let kind: String = r.get(3)?;
            Ok(Definition {
                path: r.get(0)?,
                line_start: r.get(1)?,
                line_end: r.get(2)?,
                kind: SymbolKind::parse(&kind).unwrap_or(SymbolKind::Variable),
            })
        })
        .map_err(&err)?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map_err(err)
}

/// One file matching an AST search: per-kind counts of the asked kinds.
#[derive(Debug, Clone)]
pub struct AstFile {
    /// Repo-relative path.
    pub path: String,
    /// Language.
    pub lang: String,
    /// Count per asked kind present in the file.
    pub counts: BTreeMap<String, u32>,
    /// Encoded samples (see [`ast::encode_samples`]).
    pub samples: String,
}

/// Files whose stored node kinds include any (or all) of `kinds`, under `path_prefix`.
pub fn ast_files(
    reader: &SymbolReader,
    kinds: &[String],
    mode: AstMode,
    path_prefix: Option<&str>,
) -> Result<Vec<AstFile>> {
    let mut params: Vec<Value> = Vec::new();
    let mut conds = Vec::new();
    for k in kinds {
        params.push(Value::Text(ast::count_needle(k)));
        conds.push(format!("instr(f.ast_kinds, ?{}) > 0", params.len()));
    }
    let joined = conds.join(if mode == AstMode::All { " AND " } else { " OR " });
    let prefix = SymbolFilter { path_prefix: path_prefix.map(String::from), ..Default::default() }.sql(&mut params);
    let sql = format!(
        "SELECT f.path, f.lang, f.ast_kinds, f.ast_samples FROM files f WHERE ({joined}){prefix} ORDER BY f.path"
    );
    let err = reader.err();
    let mut stmt = reader.conn().prepare(&sql).map_err(&err)?;
    let rows = stmt
        .query_map(rusqlite::params_from_iter(params), |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, String>(3)?))
        })
        .map_err(&err)?;
    let mut out = Vec::new();
    for row in rows {
        let (path, lang, encoded, samples) = row.map_err(&err)?;
        let counts: BTreeMap<String, u32> =
            kinds.iter().map(|k| (k.clone(), ast::count_of(&encoded, k))).filter(|(_, n)| *n > 0).collect();
        out.push(AstFile { path, lang, counts, samples });
    }
    Ok(out)
}

/// Declarations of the given node kinds whose name matches `name` (ignoring case and
/// underscores), grouped by file: the name-filtered form of AST query.
pub fn named_nodes(
    reader: &SymbolReader,
    kinds: &[String],
    name: &str,
    path_prefix: Option<&str>,
) -> Result<Vec<StoredSymbol>> {
    let mut params = vec![Value::Text(norm(name))];
    let mut marks = Vec::new();
    for k in kinds {
        params.push(Value::Text(k.clone()));
        marks.push(format!("?{}", params.len()));
    }
    let f = SymbolFilter { path_prefix: path_prefix.map(String::from), ..Default::default() }.sql(&mut params);
    select(
        reader,
        &format!("s.norm = ?1 AND s.node_kind IN ({}){f} ORDER BY f.path, s.line_start", marks.join(", ")),
        params,
        100_000,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuzzy_closeness() {
        assert!(closeness("sesion", "session", 1).is_some());
        assert!(closeness("sesstore", "sessionstore", 2).is_some());
        assert!(closeness("xyz", "session", 2).is_none());
        assert_eq!(crate::engine::analysis::edit_distance("kitten", "sitting", 3), Some(3));
        assert_eq!(crate::engine::analysis::edit_distance("kitten", "sitting", 2), None);
    }
}
