//! Tuning aid: dumps, per eval-dev project, the index statistics ranking ideas need (every
//! chunk's file, length and lines; every file's class; the body, path and definition postings of
//! every query term), so ranking formulas can be tried offline in seconds. Not a product
//! surface; see docs/SEARCH.md for how it was used.
//!
//! `cargo run --profile tune --example devset_dump -- OUT_DIR [--home DIR] [--sources DIR]
//! [--queries DIR] [project...]`

use docdex::config::Config;
use docdex::engine::analysis;
use docdex::engine::eval;
use docdex::engine::index::schema;
use docdex::engine::IndexOptions;
use docdex::Engine;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use tantivy::postings::Postings;
use tantivy::schema::{IndexRecordOption, Value as _};
use tantivy::{DocSet, TantivyDocument, Term, TERMINATED};

const ALL: &[&str] = &["pytest", "celery", "hyper", "eslint", "rich", "clap", "tantivy", "fastify"];

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opt = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let out = PathBuf::from(args.first().cloned().ok_or_else(|| anyhow::anyhow!("OUT_DIR needed"))?);
    let sources = PathBuf::from(opt("--sources").unwrap_or_else(|| "/work/devset".into()));
    let queries = PathBuf::from(opt("--queries").unwrap_or_else(|| "/work/shared/eval-dev/queries".into()));
    let home = PathBuf::from(opt("--home").unwrap_or_else(|| "/tmp/docdex-devset-home".into()));
    let named: Vec<&str> = ALL.iter().copied().filter(|p| args.iter().any(|a| a == p)).collect();
    let projects = if named.is_empty() { ALL.to_vec() } else { named };
    std::fs::create_dir_all(&out)?;
    let mut config = Config::default();
    config.llm.base_url = "http://127.0.0.1:9".into();
    let engine = Engine::with_config(&home, config, home.join("config.toml"), vec![])?;
    for name in projects {
        let root = sources.join(name);
        engine.index(&root, &IndexOptions::default(), &|_: &docdex::engine::protocol::IndexProgress| {})?;
        let repo = engine.resolve_repo(&root)?;
        let (index, fields) = schema::open(&repo.index_dir())?;
        let reader = index.reader()?;
        let searcher = reader.searcher();
        // Chunks and files.
        let mut chunk_of: HashMap<(u32, u32), usize> = HashMap::new();
        let mut chunks: Vec<Value> = Vec::new();
        let mut file_of: BTreeMap<String, usize> = BTreeMap::new();
        let mut files: Vec<Value> = Vec::new();
        for (ord, seg) in searcher.segment_readers().iter().enumerate() {
            let norms = seg.get_fieldnorms_reader(fields.body)?;
            let path_norms = seg.get_fieldnorms_reader(fields.path_text)?;
            let defs_norms = seg.get_fieldnorms_reader(fields.defs)?;
            let store = seg.get_store_reader(64)?;
            for doc in 0..seg.max_doc() {
                if seg.is_deleted(doc) {
                    continue;
                }
                let d: TantivyDocument = store.get(doc)?;
                let text = |f| d.get_first(f).and_then(|v| v.as_str()).unwrap_or("").to_string();
                let num = |f| d.get_first(f).and_then(|v| v.as_u64()).unwrap_or(0);
                let path = text(fields.path);
                let fi = *file_of.entry(path.clone()).or_insert_with(|| {
                    files.push(json!({"path": path, "class": num(fields.class), "lang": text(fields.lang)}));
                    files.len() - 1
                });
                chunk_of.insert((ord as u32, doc), chunks.len());
                chunks.push(json!([
                    fi,
                    norms.fieldnorm(doc),
                    num(fields.line_start),
                    num(fields.line_end),
                    path_norms.fieldnorm(doc),
                    defs_norms.fieldnorm(doc)
                ]));
            }
        }
        // Queries and the postings of their terms.
        let set = eval::read_queries(&queries.join(format!("{name}.jsonl")))?;
        let mut all_terms: BTreeSet<String> = BTreeSet::new();
        let mut qs = Vec::new();
        for q in &set {
            let terms = analysis::query_terms(&q.query);
            all_terms.extend(terms.iter().cloned());
            // Adjacent word pairs (and triples) joined, as the analyzer writes multi-part
            // identifiers whole: `content length` -> `contentlength`.
            let raw: Vec<String> = q
                .query
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(|w| w.to_lowercase())
                .collect();
            for n in 2..=3 {
                for win in raw.windows(n) {
                    all_terms.insert(win.concat());
                }
            }
            // Each raw word's terms, so word-level rules (task words) can be tried.
            let words: Vec<(String, Vec<String>)> = q
                .query
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .filter(|w| !w.is_empty())
                .map(|w| (w.to_string(), analysis::terms(w)))
                .collect();
            qs.push(json!({"id": q.id, "query": q.query, "gold": q.gold, "terms": terms, "words": words}));
        }
        let postings = |field: tantivy::schema::Field, rec: IndexRecordOption| -> anyhow::Result<Value> {
            let mut m = serde_json::Map::new();
            for t in &all_terms {
                let term = Term::from_field_text(field, t);
                let mut list: Vec<Value> = Vec::new();
                for (ord, seg) in searcher.segment_readers().iter().enumerate() {
                    let inv = seg.inverted_index(field)?;
                    if let Some(mut p) = inv.read_postings(&term, rec)? {
                        let mut doc = p.doc();
                        while doc != TERMINATED {
                            if let Some(&c) = chunk_of.get(&(ord as u32, doc)) {
                                let tf = if rec == IndexRecordOption::Basic { 1 } else { p.term_freq() };
                                list.push(json!([c, tf]));
                            }
                            doc = p.advance();
                        }
                    }
                }
                if !list.is_empty() {
                    m.insert(t.clone(), Value::Array(list));
                }
            }
            Ok(Value::Object(m))
        };
        let dump = json!({
            "name": name,
            "state_dir": repo.index_dir().parent().map(|p| p.display().to_string()),
            "files": files,
            "chunks": chunks,
            "queries": qs,
            "body": postings(fields.body, IndexRecordOption::WithFreqs)?,
            "path": postings(fields.path_text, IndexRecordOption::Basic)?,
            "defs": postings(fields.defs, IndexRecordOption::WithFreqs)?,
        });
        std::fs::write(out.join(format!("{name}.json")), serde_json::to_vec(&dump)?)?;
        eprintln!("{name}: {} files, {} chunks, {} terms", files.len(), chunks.len(), all_terms.len());
    }
    Ok(())
}
