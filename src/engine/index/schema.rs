//! The Tantivy schema and how an index directory is opened. Chunk text is not
//! stored (snippets are cut from the file on disk), which keeps indexing fast
//! and the index small.

use crate::engine::analysis::{CodeTokenizer, CODE_TOKENIZER};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;
use tantivy::schema::{Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, STORED, STRING};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::Index;

/// Bump when fields or the analyzer change; a mismatch forces a rebuild.
pub const SCHEMA_VERSION: u32 = 10;

/// Field handles.
#[derive(Debug, Clone, Copy)]
pub struct Fields {
    /// Path, analyzed (so `session auth` finds `auth/session.rs`).
    pub path_text: Field,
    /// Path, exact: deletes and prefix filters.
    pub path: Field,
    /// Language name, exact.
    pub lang: Field,
    /// [`super::files::FileClass`] as u64, fast: the ranking prior.
    pub class: Field,
    /// Chunk text, analyzed, not stored.
    pub body: Field,
    /// xxh3 of the path, fast: groups a file's chunks without touching the doc store.
    pub file_id: Field,
    /// First line of the chunk (fast: symbol ranking matches definitions to chunks).
    pub line_start: Field,
    /// Last line of the chunk.
    pub line_end: Field,
    /// Names of the definitions (types, functions, methods, ...) that start in the chunk,
    /// analyzed: a query word naming one scores the defining chunk.
    pub defs: Field,
    /// Signature lines of the definitions a chunk is a piece of (multi-valued, stored), shown
    /// above its snippet.
    pub context: Field,
}

/// Builds the schema.
pub fn build_schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let analyzed = |record: IndexRecordOption| {
        let idx = TextFieldIndexing::default().set_tokenizer(CODE_TOKENIZER).set_index_option(record);
        TextOptions::default().set_indexing_options(idx)
    };
    let fields = Fields {
        path_text: b.add_text_field("path_text", analyzed(IndexRecordOption::Basic)),
        path: b.add_text_field("path", STRING | STORED),
        lang: b.add_text_field("lang", STRING | STORED),
        class: b.add_u64_field("class", FAST | STORED),
        body: b.add_text_field("body", analyzed(IndexRecordOption::WithFreqs)),
        file_id: b.add_u64_field("file_id", FAST),
        line_start: b.add_u64_field("line_start", FAST | STORED),
        line_end: b.add_u64_field("line_end", FAST | STORED),
        defs: b.add_text_field("defs", analyzed(IndexRecordOption::WithFreqs)),
        context: b.add_u64_field("context", STORED),
    };
    (b.build(), fields)
}

/// What docdex writes into each Tantivy commit's payload.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct CommitPayload {
    /// Monotonic index generation, +1 per commit.
    pub generation: u64,
    /// [`SCHEMA_VERSION`] of the data.
    pub schema: u32,
}

/// Reads the payload of the last commit (default when none).
pub fn read_payload(index: &Index) -> CommitPayload {
    index.load_metas().ok().and_then(|m| m.payload).and_then(|p| serde_json::from_str(&p).ok()).unwrap_or_default()
}

fn register(index: &Index) {
    index.tokenizers().register(CODE_TOKENIZER, TextAnalyzer::from(CodeTokenizer));
}

/// Opens an existing index.
pub fn open(dir: &Path) -> Result<(Index, Fields)> {
    let index = Index::open_in_dir(dir).map_err(|e| Error::Index { path: dir.into(), message: e.to_string() })?;
    register(&index);
    let (_, fields) = build_schema();
    Ok((index, fields))
}

/// What is in a generation's index directory.
pub enum Live {
    /// No index yet.
    Missing,
    /// An index of the current schema that opens.
    Usable(Index, Fields),
    /// An index that cannot be used as it is (why): another schema, or it does not open.
    Unusable(String),
}

/// Opens a generation's index if it is there and usable. Never deletes anything: an unusable
/// index stays searchable (as far as it is) until a new generation replaces it.
pub fn open_live(dir: &Path) -> Live {
    if !dir.join("meta.json").exists() {
        // Segments without the commit naming them (`meta.json` removed by hand, or lost): a
        // damaged index, replaced by a new generation (which clears the damage marker), not a
        // first index to fill in place beside orphaned files.
        if holds_segments(dir) {
            return Live::Unusable("its meta.json is missing while segment files remain".into());
        }
        return Live::Missing;
    }
    match open(dir) {
        Ok((index, fields)) => {
            let metas = match index.load_metas() {
                Ok(m) => m,
                Err(e) => return Live::Unusable(format!("its metadata does not load: {e}")),
            };
            let payload = read_payload(&index);
            // A payload-less index is a first index that never committed: keep filling it.
            if metas.payload.is_none() || payload.schema == SCHEMA_VERSION {
                Live::Usable(index, fields)
            } else {
                Live::Unusable(format!(
                    "it was built with index schema {} (this build writes {SCHEMA_VERSION})",
                    payload.schema
                ))
            }
        }
        Err(e) => Live::Unusable(format!("it does not open: {e}")),
    }
}

/// Whether `dir` holds Tantivy segment files (`.store`, `.idx`).
pub fn holds_segments(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else { return false };
    entries.flatten().any(|entry| {
        let name = entry.file_name();
        Path::new(&name).extension().is_some_and(|ext| ext == "store" || ext == "idx")
    })
}

/// Creates an empty index in `dir` (created if missing; it must hold no index).
pub fn create(dir: &Path) -> Result<(Index, Fields)> {
    crate::engine::fsutil::create_private_dir(dir).map_err(|e| Error::io("creating", dir, e))?;
    let (schema, fields) = build_schema();
    let index =
        Index::create_in_dir(dir, schema).map_err(|e| Error::Index { path: dir.into(), message: e.to_string() })?;
    register(&index);
    Ok((index, fields))
}
