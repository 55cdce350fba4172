//! The index's shapes as every surface sees them: the outcome of a run, its live
//! progress, the state of a repository's index, and lines of an indexed file.
//! They sit a floor below the indexer so the search, code and server modules can
//! name them without importing the indexer.

use crate::engine::code::types::CodeIndexSummary;
use crate::engine::embed::types::EmbedSummary;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Version of the JSON shapes docdex answers with (status, search, symbols, ...).
pub const SCHEMA_VERSION: u32 = 1;

/// Index state as the spec names it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum IndexState {
    /// Searchable and not being written.
    Ready,
    /// A writer is applying changes; search still answers from the last commit.
    Updating,
    /// The last run failed or there is no usable index.
    Error,
}

/// A file that is not in the index, and why.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct SkippedFile {
    /// Repo-relative path.
    pub path: String,
    /// Reason: binary, too large, unreadable, symlink, ...
    pub reason: String,
    /// Found (or found changed) by this run; false for a file skipped by an earlier run and
    /// untouched since, so a summary can name what is new instead of the same list each run.
    #[serde(default)]
    pub this_run: bool,
}

/// The reason a directory the walk could not list is kept with (`unreadable directory:
/// Permission denied (os error 13)`): summaries count it as a directory, not as a file.
pub const UNREADABLE_DIR: &str = "unreadable directory";

impl SkippedFile {
    /// True for a directory the walk could not read ([`UNREADABLE_DIR`]); every other entry is
    /// a file.
    pub fn is_directory(&self) -> bool {
        self.reason.starts_with(UNREADABLE_DIR)
    }
}

/// Outcome of one index run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct IndexSummary {
    /// Repo root.
    pub repo: PathBuf,
    /// Files now in the index.
    pub files: u64,
    /// Chunks now in the index.
    pub chunks: u64,
    /// Files added this run.
    pub added: u64,
    /// Files whose content changed.
    pub updated: u64,
    /// Files removed from the index: deleted, or no longer indexable (turned into a symlink,
    /// grown past the size limit, unreadable).
    pub deleted: u64,
    /// Files the walk listed that were gone when read (deleted or renamed during the run): not
    /// errors; an indexed one's removal is in `deleted` too.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub vanished: u64,
    /// Of added/deleted, pairs that were renames (same content, new path).
    pub renamed: u64,
    /// Indexed files found unchanged (not re-read or not re-indexed); files skipped before and
    /// untouched since are in `skipped`, not here.
    pub unchanged: u64,
    /// Bytes read this run.
    pub bytes_read: u64,
    /// Files passed over deliberately (binary, too large, symlinks), and directories that could
    /// not be read ([`SkippedFile::is_directory`]; retried on the next run).
    pub skipped: Vec<SkippedFile>,
    /// Files that could not be read (retried on the next run).
    pub errors: Vec<SkippedFile>,
    /// Index generation after the run.
    pub generation: u64,
    /// Wall time.
    pub seconds: f64,
    /// True when the index was rebuilt from scratch.
    pub rebuilt: bool,
    /// True when this run built the repository's first index (built from scratch too, but no
    /// rebuild: a large one commits in steps, so its generation is past 1).
    #[serde(default)]
    pub first_index: bool,
    /// Commits this run made: one per batch of about 256 MB of files read, so a large first
    /// index is kept in steps.
    #[serde(default)]
    pub commits: u32,
    /// Time inside those commits (Tantivy, the symbol store, the manifest); the rest of a run
    /// is walking, reading, parsing and handing documents to the writer.
    #[serde(default)]
    pub commit_seconds: f64,
    /// Seconds from the start of the run to the end of its first commit (0 without one): when
    /// a first index starts answering searches.
    #[serde(default)]
    pub first_commit_seconds: f64,
    /// Seconds from the start of the run to the commit that made every file it read
    /// searchable (0 without a commit). A large first index gets there after its text pass,
    /// before the code pass parses; otherwise it is the run's last commit.
    #[serde(default)]
    pub searchable_seconds: f64,
    /// True when the run indexed every file as text and committed it before parsing any.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub text_first: bool,
    /// Set when nothing ran because another process already keeps the index current.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// With a `note`: the process that keeps the index current has not applied everything
    /// yet (its run goes on, or it has not taken in a changed source list), so the counts
    /// are the index as it stands, not up to date.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pending: bool,
    /// Warnings about the run that did not stop it (the free-disk check).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The pid of an earlier run that was interrupted (killed, crashed) before it finished,
    /// whose work this run completed: what it had committed stayed, and this run read and
    /// parsed what it had not (the counts say what changed since; a file it had committed as
    /// text and this run parsed is in `code`, not in `added`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed: Option<u32>,
    /// What the code pass (symbols, AST, imports) did, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<CodeIndexSummary>,
    /// The embedding phase (absent when it did not run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embeddings: Option<EmbedSummary>,
}

/// Live progress of an index run (for bars, `/v1/status`, the TUI).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct IndexProgress {
    /// Phase: `walking`, `indexing`, `committing`, `parsing` (a large first index, searchable
    /// as text, parsing its code), `embedding`, `done`.
    pub phase: String,
    /// Files processed so far (while `embedding`: files whose chunks were embedded).
    pub files_done: u64,
    /// Files to process (while `embedding`: files with chunks to embed). Files, never chunks.
    pub files_total: u64,
    /// Bytes processed so far.
    pub bytes_done: u64,
    /// Bytes to process.
    pub bytes_total: u64,
    /// What the phase's own count is in, the one [`IndexProgress::measure`] returns:
    /// `files`, `chunks` (embedding: `chunks_done` / `chunks_total`) or `queries`
    /// (`docdex eval`, its queries in `files_done` / `files_total`; never in a status).
    /// Absent in a status file an older docdex wrote: `files`.
    #[serde(default)]
    pub unit: ProgressUnit,
    /// Chunks embedded so far (the embedding phase only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunks_done: Option<u64>,
    /// Chunks to embed (the embedding phase only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunks_total: Option<u64>,
}

/// What a progress report counts, so that a surface never guesses it from the phase's name
/// (the embedding phase's chunks were shown as "files").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProgressUnit {
    /// Files (the text index, parsing, the graph).
    #[default]
    Files,
    /// Chunks (the embedding phase).
    Chunks,
    /// Queries (`docdex eval`).
    Queries,
}

impl ProgressUnit {
    /// The unit's noun for `n` of it: "1 chunk", "2,158 chunks".
    pub fn noun(self, n: u64) -> &'static str {
        match (self, n == 1) {
            (ProgressUnit::Files, true) => "file",
            (ProgressUnit::Files, false) => "files",
            (ProgressUnit::Chunks, true) => "chunk",
            (ProgressUnit::Chunks, false) => "chunks",
            (ProgressUnit::Queries, true) => "query",
            (ProgressUnit::Queries, false) => "queries",
        }
    }
}

impl IndexProgress {
    /// The embedding phase's report: `files` files and `chunks` chunks, each done of total.
    pub fn embedding(files: (u64, u64), chunks: (u64, u64)) -> IndexProgress {
        IndexProgress {
            phase: "embedding".into(),
            files_done: files.0,
            files_total: files.1,
            unit: ProgressUnit::Chunks,
            chunks_done: Some(chunks.0),
            chunks_total: Some(chunks.1),
            ..Default::default()
        }
    }

    /// The phase's own count as (done, total, unit): chunks while embedding, queries in
    /// `docdex eval`, else files. Every surface shows this one, so they agree.
    pub fn measure(&self) -> (u64, u64, ProgressUnit) {
        match self.unit {
            ProgressUnit::Chunks => (self.chunks_done.unwrap_or(0), self.chunks_total.unwrap_or(0), self.unit),
            ProgressUnit::Files | ProgressUnit::Queries => (self.files_done, self.files_total, self.unit),
        }
    }

    /// How far the phase is, 0..1: by bytes where it counts them, else by its own count.
    pub fn ratio(&self) -> f64 {
        let (done, total, _) = self.measure();
        match (self.bytes_total, total) {
            (b, _) if b > 0 => self.bytes_done as f64 / b as f64,
            (_, t) if t > 0 => done as f64 / t as f64,
            _ => 0.0,
        }
    }
}

/// The last change a watcher or indexer applied.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
pub struct LastEvent {
    /// `create`, `modify`, `delete`, `rename` or `index`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Repo-relative path.
    pub path: String,
    /// When, epoch ms.
    pub at: u64,
}

/// Spec 002 §12.2.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StatusResponse {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Repo fingerprint.
    pub project_id: String,
    /// Repo root.
    pub repo: PathBuf,
    /// ready / updating / error.
    pub index_state: IndexState,
    /// Generation of the last commit.
    pub generation: u64,
    /// Files waiting for the watcher or a running index; `null` when not known: the run or
    /// watcher that held them was killed (SIGKILL, a crash) and its queue went with it. The
    /// next index run compares every file with the index, so no change is lost; a number here
    /// would be a guess (it read 0 after 3,000 edits were pending).
    pub queued_files: Option<u64>,
    /// Files in the index.
    pub documents: u64,
    /// Chunks in the index.
    pub chunks: u64,
    /// Last completed index run, epoch ms.
    pub last_indexed_ms: Option<u64>,
    /// Progress of a run in flight.
    pub progress: Option<IndexProgress>,
    /// Last change applied.
    pub last_event: Option<LastEvent>,
    /// Skipped files, errors and other things worth knowing.
    pub warnings: Vec<String>,
    /// Per-repo state directory.
    pub state_dir: PathBuf,
}

/// Lines of a file inside the repository: `docdex get`, `GET /v1/open`, `docdex_open`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FileRequest {
    /// Repo-relative path of the file (as search results give it).
    pub path: String,
    /// First line to return (1-based; default 1).
    #[serde(default)]
    pub start_line: Option<u32>,
    /// Last line to return (inclusive; default the end of the file).
    #[serde(default)]
    pub end_line: Option<u32>,
    /// For a paged document (PDF): return this page's lines (1-based) instead of a line range.
    #[serde(default)]
    pub page: Option<u32>,
}

impl FileRequest {
    /// The whole file, or lines `a..=b` of it.
    pub fn new(path: impl Into<String>, lines: Option<(u32, u32)>) -> FileRequest {
        FileRequest { path: path.into(), start_line: lines.map(|l| l.0), end_line: lines.map(|l| l.1), page: None }
    }

    /// The inclusive line range asked for, if any.
    pub fn lines(&self) -> Option<(u32, u32)> {
        match (self.start_line, self.end_line) {
            (None, None) => None,
            (s, e) => Some((s.unwrap_or(1), e.unwrap_or(u32::MAX))),
        }
    }
}

/// Lines of a file: the answer to a [`FileRequest`].
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct FileContent {
    /// Repo-relative path.
    pub path: String,
    /// First line returned.
    pub line_start: u32,
    /// Last line returned.
    pub line_end: u32,
    /// Lines in the file.
    pub total_lines: u32,
    /// The text of those lines. For a document (PDF, DOCX, HTML) these are lines of the text
    /// extracted from it, the lines search hits cite.
    pub text: String,
    /// For a document: its format (`pdf`, `docx`, `html`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// For a paged document: the pages the returned lines span.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_start: Option<u32>,
    /// Last page the returned lines span.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_end: Option<u32>,
    /// For a paged document: how many pages it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_pages: Option<u32>,
    /// True when secrets or personal data in `text` were masked (`[privacy] redact_snippets`,
    /// on by default), as `pii_redacted` says for search snippets.
    #[serde(default)]
    pub pii_redacted: bool,
}

/// Receives progress while a run is in flight.
pub trait ProgressSink: Sync {
    /// Called from a ticker about ten times a second, and once at the end.
    fn progress(&self, p: &IndexProgress);
}

impl<F: Fn(&IndexProgress) + Sync> ProgressSink for F {
    fn progress(&self, p: &IndexProgress) {
        self(p)
    }
}

/// For `skip_serializing_if`: a zero count is left out of the JSON.
fn is_zero(n: &u64) -> bool {
    *n == 0
}
