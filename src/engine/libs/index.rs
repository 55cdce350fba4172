//! The repo's `libs_index/`: a small Tantivy index of its dependencies' documentation, cut into
//! passages and analyzed like the code index, rebuilt whole by each `libs fetch` (written to a
//! fresh directory and swapped in, so a search never sees half an index).

use super::local::LibDoc;
use super::types::{Dependency, Ecosystem, LibHit};
use crate::engine::analysis::{self, CodeTokenizer, CODE_TOKENIZER};
use crate::engine::web::passages;
use crate::error::{Error, Result};
use std::path::Path;
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
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
    };
    (b.build(), f)
}

fn err(dir: &Path) -> impl Fn(tantivy::TantivyError) -> Error + '_ {
    move |e| Error::Index { path: dir.into(), message: e.to_string() }
}

/// Replaces the index at `dir` with `packages`' docs; returns passages per package.
pub fn rebuild(dir: &Path, packages: &[(Dependency, Vec<LibDoc>)]) -> Result<Vec<u32>> {
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
                writer.add_document(d).map_err(err(&tmp))?;
                n += 1;
            }
        }
        counts.push(n);
    }
    writer.commit().map_err(err(&tmp))?;
    drop(writer);
    let old = dir.with_extension(format!("old{}", std::process::id()));
    if dir.exists() {
        std::fs::rename(dir, &old).map_err(|e| Error::io("moving aside", dir, e))?;
    }
    std::fs::rename(&tmp, dir).map_err(|e| Error::io("installing", dir, e))?;
    let _ = std::fs::remove_dir_all(&old);
    Ok(counts)
}

/// The best `limit` passages for `query` (BM25 over title and body).
pub fn search(dir: &Path, query: &str, limit: usize) -> Result<Vec<LibHit>> {
    let index = Index::open_in_dir(dir).map_err(err(dir))?;
    index.tokenizers().register(CODE_TOKENIZER, TextAnalyzer::from(CodeTokenizer));
    let (_, f) = schema();
    let terms = analysis::query_terms(query);
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    for t in &terms {
        for field in [f.body, f.title] {
            clauses.push((
                Occur::Should,
                Box::new(TermQuery::new(Term::from_field_text(field, t), IndexRecordOption::WithFreqs)),
            ));
        }
    }
    let q = BooleanQuery::new(clauses);
    let reader = index.reader().map_err(err(dir))?;
    let searcher = reader.searcher();
    let top = searcher.search(&q, &TopDocs::with_limit(limit.max(1)).order_by_score()).map_err(err(dir))?;
    let mut out = Vec::new();
    for (score, addr) in top {
        let doc: TantivyDocument = searcher.doc(addr).map_err(err(dir))?;
        let text = |field: Field| doc.get_first(field).and_then(|v| v.as_str()).unwrap_or("").to_string();
        let ecosystem = match text(f.ecosystem).as_str() {
            "npm" => Ecosystem::Npm,
            "pypi" => Ecosystem::Pypi,
            _ => Ecosystem::Crates,
        };
        out.push(LibHit {
            citation: text(f.citation),
            ecosystem,
            package: text(f.package),
            version: text(f.version),
            title: text(f.title),
            source: text(f.source),
            text: text(f.body),
            score,
        });
    }
    Ok(out)
}
