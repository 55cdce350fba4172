//! The repo's `libs_index/`: a small Tantivy index of its dependencies' documentation, cut into
//! passages and analyzed like the code index, rebuilt whole by each `libs fetch` (written to a
//! fresh directory and swapped in, so a search never sees half an index).

use super::local::LibDoc;
use super::types::{Dependency, Ecosystem, LibHit};
use crate::engine::analysis::{self, CodeTokenizer, CODE_TOKENIZER};
use crate::engine::cancel::CancelToken;
use crate::engine::search::collect::Cancellable;
use crate::engine::web::passages;
use crate::error::{Error, Result};
use std::collections::HashSet;
use std::path::Path;
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, STORED, STRING};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{Index, TantivyDocument, Term};

struct Fields {
    ecosystem: Field,
    package: Field,
    version: Field,
    title: Field,
    source: Field,
    citation: Field,
    body: Field,
    /// The documented item's name (`memchr`, `CowBytes`), which the analyzer splits into words.
    name: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let analyzed = || {
        let idx =
            TextFieldIndexing::default().set_tokenizer(CODE_TOKENIZER).set_index_option(IndexRecordOption::WithFreqs);
        TextOptions::default().set_indexing_options(idx).set_stored()
    };
    let f = Fields {
        ecosystem: b.add_text_field("ecosystem", STRING | STORED),
        package: b.add_text_field("package", STRING | STORED),
        version: b.add_text_field("version", STRING | STORED),
        title: b.add_text_field("title", analyzed()),
        source: b.add_text_field("source", STORED),
        citation: b.add_text_field("citation", STORED),
        body: b.add_text_field("body", analyzed()),
        // Last, so an index written before it keeps its other fields' positions.
        name: b.add_text_field("name", analyzed()),
    };
    (b.build(), f)
}

/// The file in a libs index naming the [`analysis::ANALYZER_VERSION`] that built it; an index
/// without it was built before the version was recorded (by an analyzer that did not fold Greek
/// accents or transliterate umlauts, or, before index schema 9, did not fold accents at all).
const ANALYZER_FILE: &str = "docdex_analyzer";

/// Whether the index at `dir` was built by this build's analyzer: one built by another holds
/// other terms (`café` where queries now ask for `cafe`), so its accented words are never met.
pub fn built_by_current_analyzer(dir: &Path) -> bool {
    let recorded = std::fs::read_to_string(dir.join(ANALYZER_FILE)).ok();
    recorded.and_then(|v| v.trim().parse::<u32>().ok()) == Some(analysis::ANALYZER_VERSION)
}

fn err(dir: &Path) -> impl Fn(tantivy::TantivyError) -> Error + '_ {
    move |e| Error::Index { path: dir.into(), message: e.to_string() }
}

/// Replaces the index at `dir` with `packages`' docs; returns passages per package.
///
/// The new index is built beside the old (`<dir>.tmp<pid>`), the old moved aside
/// (`<dir>.old<pid>`) and the new moved in; [`recover`] undoes what a kill between those
/// steps leaves.
pub fn rebuild(dir: &Path, packages: &[(Dependency, Vec<LibDoc>)]) -> Result<Vec<u32>> {
    recover(dir);
    let tmp = dir.with_extension(format!("tmp{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| Error::io("creating", &tmp, e))?;
    let (schema, f) = schema();
    let index = Index::create_in_dir(&tmp, schema).map_err(err(&tmp))?;
    index.tokenizers().register(CODE_TOKENIZER, TextAnalyzer::from(CodeTokenizer));
    let mut writer = index.writer::<TantivyDocument>(30_000_000).map_err(err(&tmp))?;
    let mut counts = Vec::new();
    for (dep, docs) in packages {
        let mut n = 0;
        // Passages per source file: several items documented in one file (a crate's lib.rs)
        // each get their own citation, `#2`, `#3`, ... after the first; chat keeps one piece
        // per citation, so a shared one dropped all but the first item's docs.
        let mut per_source: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for doc in docs {
            for text in passages::blocks(&doc.text) {
                let seen = per_source.entry(doc.source.as_str()).or_default();
                *seen += 1;
                let mut citation = format!("{}@{}/{}", dep.name, dep.version, doc.source);
                if *seen > 1 {
                    citation.push_str(&format!("#{seen}"));
                }
                let mut d = TantivyDocument::default();
                d.add_text(f.ecosystem, dep.ecosystem.name());
                d.add_text(f.package, &dep.name);
                d.add_text(f.version, &dep.version);
                d.add_text(f.title, &doc.title);
                d.add_text(f.source, &doc.source);
                d.add_text(f.citation, &citation);
                d.add_text(f.body, &text);
                d.add_text(f.name, item_name(&doc.title).unwrap_or(""));
                writer.add_document(d).map_err(err(&tmp))?;
                n += 1;
            }
        }
        counts.push(n);
    }
    writer.commit().map_err(err(&tmp))?;
    drop(writer);
    let analyzer = tmp.join(ANALYZER_FILE);
    std::fs::write(&analyzer, analysis::ANALYZER_VERSION.to_string())
        .map_err(|e| Error::io("writing", &analyzer, e))?;
    let old = dir.with_extension(format!("old{}", std::process::id()));
    if dir.exists() {
        std::fs::rename(dir, &old).map_err(|e| Error::io("moving aside", dir, e))?;
    }
    std::fs::rename(&tmp, dir).map_err(|e| Error::io("installing", dir, e))?;
    let _ = std::fs::remove_dir_all(&old);
    Ok(counts)
}

/// Tidies what rebuilds killed midway left beside `dir`: an index moved aside with none
/// installed in its place is put back (so search keeps its docs), and half-built or set-aside
/// copies are removed. Copies of a rebuild still running in another process are left alone.
pub fn recover(dir: &Path) {
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name().and_then(|n| n.to_str())) else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(rest) = file_name.to_str().and_then(|f| f.strip_prefix(name)?.strip_prefix('.')) else {
            continue;
        };
        let (set_aside, pid) = match (rest.strip_prefix("old"), rest.strip_prefix("tmp")) {
            (Some(pid), _) => (true, pid),
            (_, Some(pid)) => (false, pid),
            _ => continue,
        };
        let Ok(pid) = pid.parse::<u32>() else { continue };
        if pid != std::process::id() && crate::engine::fsutil::pid_alive(pid) {
            continue;
        }
        let path = entry.path();
        if set_aside && !dir.join("meta.json").is_file() {
            let _ = std::fs::remove_dir_all(dir);
            match std::fs::rename(&path, dir) {
                Ok(()) => {
                    tracing::warn!(path = %dir.display(), "a libs rebuild was cut off mid-swap; the previous index was put back")
                }
                Err(e) => tracing::warn!(path = %path.display(), "cannot put back the previous libs index: {e}"),
            }
        } else {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// Weight of a match in the item's name over one in its signature or docs: a query that
/// names what a function does (`reset widget`) finds `reset_widget` before passages that
/// merely mention the words.
const NAME_BOOST: f32 = 2.0;

/// Candidates read per hit returned, before near-duplicates collapse and coverage reorders.
const POOL_PER_HIT: usize = 8;

/// Passages read from the store between two looks at the cancellation token.
const DOCS_PER_CHECK: usize = 32;

/// The best `limit` passages for `query`: BM25 over title, body and the item's name (boosted),
/// times the share of the query's terms the passage has, with near-duplicates collapsed.
/// [`Error::Cancelled`] once the thread's ambient token trips: looked at inside Tantivy's
/// collection and every [`DOCS_PER_CHECK`] passages read.
pub fn search(dir: &Path, query: &str, limit: usize) -> Result<Vec<LibHit>> {
    let index = Index::open_in_dir(dir).map_err(err(dir))?;
    index.tokenizers().register(CODE_TOKENIZER, TextAnalyzer::from(CodeTokenizer));
    let (_, f) = schema();
    let terms = analysis::query_terms(query);
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    // An index written before the name field has none; the next `libs fetch` adds it.
    let has_name = index.schema().get_field("name").is_ok_and(|n| n == f.name);
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    for t in &terms {
        let term = |field| Box::new(TermQuery::new(Term::from_field_text(field, t), IndexRecordOption::WithFreqs));
        clauses.push((Occur::Should, term(f.body)));
        clauses.push((Occur::Should, term(f.title)));
        if has_name {
            clauses.push((Occur::Should, Box::new(BoostQuery::new(term(f.name), NAME_BOOST))));
        }
    }
    let cancel = CancelToken::current();
    let q = Cancellable::new(Box::new(BooleanQuery::new(clauses)), &cancel);
    let reader = index.reader().map_err(err(dir))?;
    let searcher = reader.searcher();
    let pool = (limit.max(1) * POOL_PER_HIT).min(400);
    let top = searcher.search(&q, &TopDocs::with_limit(pool).order_by_score());
    if q.stopped() {
        return Err(Error::Cancelled);
    }
    let mut out = Vec::new();
    for (i, (score, addr)) in top.map_err(err(dir))?.into_iter().enumerate() {
        // Each passage is read from the store: up to 400 of them.
        if i % DOCS_PER_CHECK == 0 {
            cancel.check()?;
        }
        let doc: TantivyDocument = searcher.doc(addr).map_err(err(dir))?;
        let text = |field: Field| doc.get_first(field).and_then(|v| v.as_str()).unwrap_or("").to_string();
        let ecosystem = match text(f.ecosystem).as_str() {
            "npm" => Ecosystem::Npm,
            "pypi" => Ecosystem::Pypi,
            _ => Ecosystem::Crates,
        };
        let mut hit = LibHit {
            citation: text(f.citation),
            ecosystem,
            package: text(f.package),
            version: text(f.version),
            title: text(f.title),
            source: text(f.source),
            text: text(f.body),
            score,
        };
        hit.score *= coverage(&terms, &hit);
        out.push(hit);
    }
    out.sort_by(|a, b| b.score.total_cmp(&a.score));
    let mut out = collapse(out);
    out.truncate(limit.max(1));
    Ok(out)
}

/// The share of the query's terms found in the passage (title, name or text). BM25 adds up
/// per-term scores, so one query word repeated in a short passage (`byte` in the docs of a
/// `CowBytes` struct) outranked the function whose docs say every word of "first occurrence
/// of a byte".
fn coverage(terms: &[String], hit: &LibHit) -> f32 {
    let have: HashSet<String> = analysis::terms(&hit.title).into_iter().chain(analysis::terms(&hit.text)).collect();
    let share = terms.iter().filter(|t| have.contains(*t)).count() as f32 / terms.len().max(1) as f32;
    // Squared: the name boost lifts a passage whose name holds one query word (`CowBytes`
    // for "byte") past one that says them all, unless a partial match costs that much.
    share * share
}

/// Share of their distinct words two passages about one item must have in common to count
/// as copies (memchr's x86_64 and generic `find` differ by "for a non-empty haystack").
const SAME_WORDS: f32 = 0.85;

/// Passages that say (nearly) the same about the same item, kept once: a crate such as
/// memchr documents one API per platform (`src/arch/aarch64/...`, `src/arch/x86_64/...`,
/// `src/arch/all/...`) and the copies filled the hits. Of each group the best score stays,
/// cited from the shortest path (the generic copy). `hits` are sorted best first.
fn collapse(hits: Vec<LibHit>) -> Vec<LibHit> {
    let mut out: Vec<LibHit> = Vec::new();
    let mut keys: Vec<(String, HashSet<String>)> = Vec::new();
    for h in hits {
        let item = format!("{}@{} {}", h.package, h.version, item_name(&h.title).unwrap_or(""));
        let words = doc_words(&h.text);
        match keys.iter().position(|(i, w)| *i == item && similar(w, &words)) {
            Some(i) => {
                let kept = &mut out[i];
                if (h.source.len(), &h.citation) < (kept.source.len(), &kept.citation) {
                    let score = kept.score.max(h.score);
                    *kept = LibHit { score, ..h };
                }
            }
            None => {
                keys.push((item, words));
                out.push(h);
            }
        }
    }
    out
}

/// Whether two word sets share at least [`SAME_WORDS`] of their union.
fn similar(a: &HashSet<String>, b: &HashSet<String>) -> bool {
    let union = a.union(b).count();
    union == 0 || a.intersection(b).count() as f32 >= SAME_WORDS * union as f32
}

/// A passage's distinct words, lowercased, without the leading signature line (the same
/// item may be `unsafe` on one platform), for comparing passages.
fn doc_words(text: &str) -> HashSet<String> {
    let t = text.trim_start();
    let t = match t.strip_prefix('`').and_then(|r| r.split_once("`\n")) {
        Some((_, rest)) => rest,
        None => t,
    };
    t.split(|c: char| !c.is_alphanumeric() && c != '_').filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// The name of the item a document's title is the signature of: `memchr` of
/// `pub fn memchr(needle: u8, ...)`, `CowBytes` of `pub struct CowBytes<'a>(...)`, `subscribe`
/// of `def subscribe(topic)`; none for a README, a module or a web page.
fn item_name(title: &str) -> Option<&str> {
    const KEYWORDS: &[&str] =
        &["fn", "struct", "enum", "trait", "type", "const", "static", "mod", "union", "macro", "def", "class"];
    let words: Vec<&str> = title.split_whitespace().collect();
    // Qualifiers between the keyword and the name: `pub const unsafe fn find_raw(`.
    const QUALIFIERS: &[&str] = &["unsafe", "async", "extern", "default"];
    let at = words.iter().position(|w| KEYWORDS.contains(w))?;
    let after =
        words[at + 1..].iter().find(|w| !KEYWORDS.contains(w) && !QUALIFIERS.contains(w) && !w.starts_with('"'))?;
    let end = after.find(|c: char| !c.is_alphanumeric() && c != '_').unwrap_or(after.len());
    (end > 0).then(|| &after[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_names_come_from_rust_and_python_signatures() {
        assert_eq!(item_name("pub fn memchr(needle: u8, haystack: &[u8]) -> Option<usize>"), Some("memchr"));
        assert_eq!(item_name("pub struct CowBytes<'a>(Imp<'a>);"), Some("CowBytes"));
        assert_eq!(item_name("pub const unsafe fn find_raw("), Some("find_raw"));
        assert_eq!(item_name("pub unsafe extern \"C\" fn raw_len(p: *const u8) -> usize"), Some("raw_len"));
        assert_eq!(item_name("pub const fn new(needle: u8) -> One"), Some("new"));
        assert_eq!(item_name("pub const MAX: usize = 3;"), Some("MAX"));
        assert_eq!(item_name("def subscribe(topic, handler)"), Some("subscribe"));
        assert_eq!(item_name("async def fetch_all(urls)"), Some("fetch_all"));
        assert_eq!(item_name("class Bus(Base)"), Some("Bus"));
        assert_eq!(item_name("README"), None);
        assert_eq!(item_name("module src/lib.rs"), None);
        assert_eq!(item_name("widgetlib - Rust"), None);
    }
}
