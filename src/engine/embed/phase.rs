//! The embedding phase of an index run, after the Tantivy commit: bring
//! `vectors.db` in line with the manifest. Files the index dropped lose their
//! vectors; files whose content hash differs from what was embedded get new ones.
//! Chunks are the pipeline's own (their line ranges are read back from the index,
//! so chunking lives in one place), vectors come from the cache when the same text
//! was embedded before, and the rest are embedded in batches, several in flight.
//!
//! The plain index never waits on this: with nothing to embed nothing is asked;
//! otherwise one probe decides, and a dead or absent embedder costs that one
//! failed request (refused connections are not retried), a notice, and BM25 only.

use super::store::{text_hash, ChunkEntry, Coverage, FileEntry, TextHash, VectorStore};
use super::{EmbedState, EmbedSummary};
use crate::engine::index::schema::{build_schema, Fields};
use crate::engine::index::types::IndexProgress;
use crate::engine::index::{IndexSession, ProgressSink};
use crate::engine::llm::model_matches;
use crate::engine::repos::RepoRef;
use crate::engine::Engine;
use crate::error::{Error, Result};
use futures::StreamExt;
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use tantivy::collector::DocSetCollector;
use tantivy::query::TermQuery;
use tantivy::schema::{IndexRecordOption, Value};
use tantivy::{Searcher, TantivyDocument, Term};

/// Chunks handled per write transaction (and per progress step).
const GROUP_CHUNKS: u64 = 256;
/// Characters of a chunk sent to the embedder; the start of a chunk (its signature, its
/// heading) carries most of its meaning, and small embedders truncate long inputs anyway.
pub const EMBED_MAX_CHARS: usize = 2048;
/// What the probe embeds.
const PROBE_TEXT: &str = "docdex embedding probe";

/// A file the index holds, as the manifest describes it.
#[derive(Debug, Clone)]
struct Wanted {
    hash: u64,
    lang: String,
    chunks: u64,
}

/// What [`Engine::embed_files`] embeds: the files to do, as the manifest has them, and the
/// embedder's dimensions.
struct Job<'a> {
    todo: &'a [String],
    wanted: &'a BTreeMap<String, Wanted>,
    dim: usize,
    stop: &'a AtomicBool,
}

/// The text sent to the embedder for a chunk.
pub fn embed_input(chunk_text: &str) -> &str {
    let t = chunk_text.trim();
    match t.char_indices().nth(EMBED_MAX_CHARS) {
        Some((i, _)) => &t[..i],
        None => t,
    }
}

/// The text of a chunk as it goes to the embedder: masked for a model off this machine (secrets
/// and personal data, as chat masks its messages; `docs/PRIVACY.md`), as it is for a local one.
fn sent_text(text: &str, remote: bool) -> String {
    match remote {
        true => crate::engine::privacy::mask(text).0,
        false => text.to_string(),
    }
}

impl Engine {
    /// Runs the embedding phase for a repo whose index `session` just committed. Never fails
    /// the index run: problems come back as the summary's state and notice. `stop` (a keeper's
    /// shutdown) ends it at once, the requests in flight dropped: what was embedded is kept (files
    /// whose every chunk has a vector are written, every vector obtained is cached), the
    /// summary is `Partial`, the status says the run stopped, and the next run goes on.
    pub(crate) fn embed_index(
        &self,
        repo: &RepoRef,
        session: &IndexSession,
        reembed: bool,
        sink: &dyn ProgressSink,
        stop: &AtomicBool,
    ) -> EmbedSummary {
        let started = Instant::now();
        let model = self.config().llm.embedding_model.clone();
        let mut summary = match self.embed_phase(repo, session, reembed, sink, stop) {
            Ok(s) => s,
            Err(e) => EmbedSummary {
                state: EmbedState::Failed,
                model: model.clone(),
                notice: Some(format!("embedding failed: {e}; search uses BM25 only")),
                ..Default::default()
            },
        };
        if !matches!(summary.state, EmbedState::Off | EmbedState::Stale) {
            record_coverage(repo, session);
        }
        summary.seconds = (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
        // The index was ready throughout; clear the embedding progress the phase reported.
        if stop.load(Ordering::SeqCst) && summary.state == EmbedState::Partial {
            session.status().finish_stopped();
        } else {
            session.status().finish_ok(&Default::default());
        }
        if let Some(n) = &summary.notice {
            tracing::info!(repo = %repo.root.display(), "{n}");
        }
        summary
    }

    fn embed_phase(
        &self,
        repo: &RepoRef,
        session: &IndexSession,
        reembed: bool,
        sink: &dyn ProgressSink,
        stop: &AtomicBool,
    ) -> Result<EmbedSummary> {
        let cfg = self.config();
        let model = cfg.llm.embedding_model.clone();
        let mut s = EmbedSummary { model: model.clone(), ..Default::default() };
        if !cfg.search.hybrid {
            s.state = EmbedState::Off;
            s.notice = Some("embeddings are off ([search] hybrid = false); search uses BM25 only".into());
            return Ok(s);
        }
        let wanted = wanted_files(session);
        let mut store = VectorStore::open_existing(repo)?;
        let mut todo: Vec<String> = wanted.keys().cloned().collect();
        if let Some(st) = store.as_mut() {
            match pending_files(st, &wanted, reembed, (&model, &repo.root), &mut s)? {
                Some(pending) => todo = pending,
                None => return Ok(s),
            }
        }
        if todo.is_empty() {
            match store.as_ref() {
                Some(st) => s.chunks = st.counts()?.1,
                None => return Ok(self.nothing_to_embed(s, stop)),
            }
            return Ok(s);
        }
        let dim = match self.probe_dimensions(stop) {
            Ok(Some(dim)) => dim,
            Ok(None) => return Ok(stopped_before_start(s)),
            Err(why) => return Ok(unavailable(s, &why)),
        };
        s.dim = Some(dim);
        let store = match store {
            Some(st) => st,
            None => VectorStore::open(repo)?,
        };
        let Some(mut store) = ready_store(store, reembed, (&model, dim), &repo.root, &mut s)? else {
            return Ok(s);
        };
        self.embed_files(repo, session, sink, &mut store, Job { todo: &todo, wanted: &wanted, dim, stop }, &mut s)?;
        store.trim_cache()?;
        s.chunks = store.counts()?.1;
        Ok(s)
    }

    /// A repository with no chunk and no vectors yet (an empty one): the summary names the
    /// model only when it answers. "embedded 0 chunks with nomic-embed-text" was said with the
    /// embedder down, where a repository with files said "embeddings skipped: cannot reach ...".
    fn nothing_to_embed(&self, mut s: EmbedSummary, stop: &AtomicBool) -> EmbedSummary {
        match self.probe_dimensions(stop) {
            Ok(Some(dim)) => {
                s.dim = Some(dim);
                s
            }
            Ok(None) => stopped_before_start(s),
            Err(why) => unavailable(s, &why),
        }
    }

    /// One probe decides whether the embedder is there at all: its vectors' length, or why not
    /// (a recent failure is not retried at once). `None` when `stop` was set first: the probe
    /// is dropped, as a model still loading can hold it for `[llm] request_timeout_secs`.
    fn probe_dimensions(&self, stop: &AtomicBool) -> std::result::Result<Option<usize>, String> {
        if let Some(why) = self.recent_embed_failure() {
            return Err(why);
        }
        let provider = self.provider().map_err(|e| e.to_string())?;
        // A server that accepts and never answers fails the liveness check within
        // `[llm] connect_timeout_ms`; the probe itself waited `request_timeout_secs` (tour16 F2).
        // One that answers it (a model still loading) still gets the whole timeout below.
        if let Err(e) = self.server_answers(provider.as_ref()) {
            // A stopped call says nothing about the server.
            if !matches!(e, Error::Cancelled) {
                self.note_embed_failure(&e);
            }
            return Err(e.to_string());
        }
        let model = self.config().llm.embedding_model.clone();
        let answer = self.block_on(async {
            tokio::select! {
                biased;
                r = provider.embed(&model, vec![PROBE_TEXT.into()]) => Some(r),
                _ = crate::engine::cancel::flag_set(stop) => None,
            }
        });
        match answer.map_err(|e| e.to_string())? {
            None => Ok(None),
            Some(Ok(v)) => {
                self.clear_embed_failure();
                Ok(Some(v.first().map(|x| x.len()).unwrap_or(0)))
            }
            Some(Err(e)) => {
                self.note_embed_failure(&e);
                Err(e.to_string())
            }
        }
    }

    /// Embeds the chunks of the files `todo`, a group of files per store transaction (so a
    /// kill keeps every group written), reporting chunks done; a failing embedder, or `stop`,
    /// ends it with a partial summary.
    fn embed_files(
        &self,
        repo: &RepoRef,
        session: &IndexSession,
        sink: &dyn ProgressSink,
        store: &mut VectorStore,
        Job { todo, wanted, dim, stop }: Job,
        s: &mut EmbedSummary,
    ) -> Result<()> {
        let chunks_total: u64 = todo.iter().filter_map(|p| wanted.get(p)).map(|w| w.chunks).sum();
        let files_total = todo.iter().filter(|p| wanted.contains_key(*p)).count() as u64;
        let reader =
            session.index().reader().map_err(|e| Error::Index { path: repo.index_dir(), message: e.to_string() })?;
        let searcher = reader.searcher();
        let (_, fields) = build_schema();
        let (mut done, mut files_done) = (0u64, 0u64);
        // Files as files and chunks as chunks (`files_total` was the chunk count).
        let report = |files_done: u64, done: u64| {
            let p = IndexProgress::embedding((files_done, files_total), (done, chunks_total));
            // The phase's start is written at once (a throttled write right after the text
            // index's own would be dropped, and a kill before the first group would then
            // leave no trace of the phase); later counts are throttled.
            if done == 0 {
                session.status().phase(&p);
            } else {
                session.status().progress(&p);
            }
            sink.progress(&p);
        };
        report(0, 0);
        for group in groups(todo, wanted) {
            let files: Vec<(FileEntry, Vec<String>)> = group
                .iter()
                .filter_map(|p| wanted.get(*p).map(|w| (*p, w)))
                .filter_map(|(p, w)| file_chunks(repo, &searcher, &fields, p, w))
                .map(|(f, texts, blank)| {
                    s.chunks_blank += blank;
                    (f, texts)
                })
                .collect();
            let hashes: Vec<TextHash> = files.iter().flat_map(|(f, _)| f.chunks.iter().map(|c| c.hash)).collect();
            let mut vectors = store.cached(&hashes)?;
            s.chunks_cached += hashes.iter().filter(|h| vectors.contains_key(*h)).count() as u64;
            let missing = missing_chunks(&files, &vectors, s);
            let asked = missing.len();
            let (fresh, failure) = self.embed_many(missing, dim, stop);
            let cut = fresh.len() < asked;
            s.chunks_embedded += fresh.len() as u64;
            vectors.extend(fresh.iter().cloned());
            let complete: Vec<FileEntry> = files
                .into_iter()
                .map(|(f, _)| f)
                .filter(|f| f.chunks.iter().all(|c| vectors.contains_key(&c.hash)))
                .collect();
            s.files_embedded += complete.len() as u64;
            store.write(&fresh, &vectors, &complete)?;
            done += group.iter().filter_map(|p| wanted.get(*p)).map(|w| w.chunks).sum::<u64>();
            files_done += group.iter().filter(|p| wanted.contains_key(**p)).count() as u64;
            report(files_done.min(files_total), done.min(chunks_total));
            if stop.load(Ordering::SeqCst) && (cut || done < chunks_total) {
                s.state = EmbedState::Partial;
                s.notice = Some(format!(
                    "embedding stopped for shutdown after {} new vectors; the next run goes on from there",
                    s.chunks_embedded
                ));
                break;
            }
            if let Some(e) = failure {
                s.state = EmbedState::Partial;
                s.notice = Some(format!(
                    "embedding stopped after {} new vectors: {e}; the rest is embedded on the next `docdex index`",
                    s.chunks_embedded
                ));
                self.note_embed_failure(&e);
                break;
            }
        }
        Ok(())
    }

    /// Embeds `texts` in batches of `[llm] embed_batch_size`, `[llm] embed_concurrency` in
    /// flight. Once `stop` is set no further batch is sent and those in flight are dropped
    /// within a [`CANCEL_TICK`](crate::engine::cancel::CANCEL_TICK) (their connections closed):
    /// a slow model took as long as a request could last to let a server stop, and a batch
    /// dropped is simply not written (the next run embeds it). Returns every vector obtained
    /// and the first failure, if any.
    fn embed_many(
        &self,
        texts: Vec<(TextHash, String)>,
        dim: usize,
        stop: &AtomicBool,
    ) -> (Vec<(TextHash, Vec<f32>)>, Option<Error>) {
        if texts.is_empty() || stop.load(Ordering::SeqCst) {
            return (Vec::new(), None);
        }
        let cfg = &self.config().llm;
        let provider = match self.provider() {
            Ok(p) => p,
            Err(e) => return (Vec::new(), Some(e)),
        };
        let model = cfg.embedding_model.clone();
        // A model off this machine (`[privacy] allow_remote`) gets chunks masked, as chat does.
        let remote = !crate::engine::privacy::is_loopback_url(provider.base_url());
        let batches: Vec<Vec<(TextHash, String)>> =
            texts.chunks(cfg.embed_batch_size.max(1) as usize).map(|c| c.to_vec()).collect();
        let concurrency = cfg.embed_concurrency.max(1) as usize;
        let results = self.block_on(async move {
            let mut pending = futures::stream::iter(batches.into_iter().map(|batch| {
                let provider = provider.clone();
                let model = model.clone();
                async move {
                    let inputs: Vec<String> = batch.iter().map(|(_, t)| sent_text(t, remote)).collect();
                    let out = provider.embed(&model, inputs).await;
                    (batch, out)
                }
            }))
            .buffer_unordered(concurrency);
            let mut done = Vec::new();
            loop {
                tokio::select! {
                    // Answers already in are taken before the stop is looked at.
                    biased;
                    next = pending.next() => match next {
                        Some(r) => done.push(r),
                        None => break,
                    },
                    // Dropping `pending` drops the requests in flight.
                    _ = crate::engine::cancel::flag_set(stop) => break,
                }
            }
            done
        });
        let results = match results {
            Ok(r) => r,
            Err(e) => return (Vec::new(), Some(e)),
        };
        let mut fresh = Vec::new();
        let mut failure = None;
        for (batch, out) in results {
            match out {
                Ok(vs) if vs.iter().all(|v| v.len() == dim) => {
                    fresh.extend(batch.into_iter().map(|(h, _)| h).zip(vs));
                }
                Ok(_) => {
                    failure.get_or_insert(Error::StaleIndex(format!(
                        "the embedder changed its vector size mid-run (expected {dim}); run `docdex index --reembed`"
                    )));
                }
                Err(e) => {
                    failure.get_or_insert(e);
                }
            }
        }
        (fresh, failure)
    }
}

/// The chunks of `files` with no vector yet, each text once (a repeat is counted, and gets
/// the one vector when it comes back).
fn missing_chunks(
    files: &[(FileEntry, Vec<String>)],
    vectors: &std::collections::HashMap<TextHash, Vec<f32>>,
    s: &mut EmbedSummary,
) -> Vec<(TextHash, String)> {
    let mut missing = Vec::new();
    let mut queued: HashSet<TextHash> = HashSet::new();
    for (f, texts) in files {
        for (c, t) in f.chunks.iter().zip(texts) {
            if vectors.contains_key(&c.hash) {
                continue;
            }
            if queued.insert(c.hash) {
                missing.push((c.hash, t.clone()));
            } else {
                s.chunks_repeated += 1;
            }
        }
    }
    missing
}

/// Writes into the store how many indexed files lack current vectors, whatever ended the run
/// (finished, stopped, the embedder gone before or during it); a repo with no store yet has
/// nothing to record. A failure only loses the notice, so it is logged, not raised.
fn record_coverage(repo: &RepoRef, session: &IndexSession) {
    let wanted = wanted_files(session);
    let result = VectorStore::open_existing(repo).and_then(|store| {
        let Some(store) = store else { return Ok(()) };
        let have = store.file_hashes()?;
        let missing = wanted.iter().filter(|(p, w)| have.get(*p) != Some(&w.hash)).count() as u64;
        store.set_coverage(Coverage { missing, wanted: wanted.len() as u64 })
    });
    if let Err(e) = result {
        tracing::warn!(repo = %repo.root.display(), "could not record which files lack vectors: {e}");
    }
}

/// A phase stopped for shutdown during its probe: nothing was embedded, the next run does it.
fn stopped_before_start(mut s: EmbedSummary) -> EmbedSummary {
    s.state = EmbedState::Partial;
    s.notice = Some("embedding stopped for shutdown before it began; the next run goes on from there".into());
    s
}

fn unavailable(mut s: EmbedSummary, why: &str) -> EmbedSummary {
    s.state = EmbedState::Unavailable;
    s.notice = Some(format!("embeddings skipped: {why}; search uses BM25 only until an embedder answers"));
    s
}

/// The message asking for a re-embed after the model changed.
pub fn stale_notice(stored: &str, dim: usize, configured: &str, root: &std::path::Path) -> String {
    format!(
        "the embeddings of this repo were made with {stored} ({dim} dimensions) but [llm] embedding_model is now {configured}; \
         run `docdex index --repo {} --reembed` to re-embed (search uses BM25 only until then)",
        crate::error::shell_path(root)
    )
}

/// Consecutive groups of about [`GROUP_CHUNKS`] chunks.
fn groups<'a>(todo: &'a [String], wanted: &BTreeMap<String, Wanted>) -> Vec<Vec<&'a String>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    let mut n = 0;
    for p in todo {
        cur.push(p);
        n += wanted.get(p).map(|w| w.chunks).unwrap_or(1);
        if n >= GROUP_CHUNKS {
            out.push(std::mem::take(&mut cur));
            n = 0;
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A file's chunks as the index holds them, with the text to embed for each. `None` when the
/// file changed since it was indexed (the next run embeds it) or cannot be read.
fn file_chunks(
    repo: &RepoRef,
    searcher: &Searcher,
    fields: &Fields,
    path: &str,
    w: &Wanted,
) -> Option<(FileEntry, Vec<String>, u64)> {
    // A document's chunks are lines of its extracted text, which its manifest hash is of.
    let bytes = crate::engine::index::extract::indexed_text(repo, path).ok()?;
    // The manifest hashes the text as indexed (decoded as every reader decodes it).
    let text = crate::engine::fsutil::decode_text(&bytes);
    if xxhash_rust::xxh3::xxh3_64(text.as_bytes()) != w.hash {
        return None;
    }
    let ranges = chunk_ranges(searcher, fields, path);
    let starts = line_starts(&text);
    let mut entry = FileEntry { path: path.to_string(), file_hash: w.hash, lang: w.lang.clone(), chunks: Vec::new() };
    let mut texts = Vec::new();
    let mut blank = 0;
    for (ls, le) in ranges {
        let a = starts.get(ls.saturating_sub(1) as usize).copied().unwrap_or(text.len());
        let b = starts.get(le as usize).copied().unwrap_or(text.len());
        let input = embed_input(&text[a.min(b)..b]);
        if input.is_empty() {
            blank += 1;
            continue;
        }
        entry.chunks.push(ChunkEntry { line_start: ls, line_end: le, hash: text_hash(input) });
        texts.push(input.to_string());
    }
    Some((entry, texts, blank))
}

/// Byte offsets where each line starts.
fn line_starts(text: &str) -> Vec<usize> {
    let mut v = vec![0];
    v.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1).filter(|i| *i < text.len()));
    v
}

/// Line ranges of a path's chunks in the committed index, in file order.
fn chunk_ranges(searcher: &Searcher, fields: &Fields, path: &str) -> Vec<(u32, u32)> {
    let q = TermQuery::new(Term::from_field_text(fields.path, path), IndexRecordOption::Basic);
    let Ok(docs) = searcher.search(&q, &DocSetCollector) else { return Vec::new() };
    let mut ranges: Vec<(u32, u32)> = docs
        .into_iter()
        .filter_map(|addr| searcher.doc::<TantivyDocument>(addr).ok())
        .map(|d| {
            let num = |f| d.get_first(f).and_then(|v| v.as_u64()).unwrap_or(0) as u32;
            (num(fields.line_start), num(fields.line_end))
        })
        .filter(|(a, b)| *a >= 1 && b >= a)
        .collect();
    ranges.sort_unstable();
    ranges.dedup();
    ranges
}

/// The indexed files that have chunks to embed, with their content hashes.
fn wanted_files(session: &IndexSession) -> BTreeMap<String, Wanted> {
    session
        .manifest()
        .files
        .iter()
        .filter(|(_, e)| e.skipped.is_none() && !e.error && e.chunks > 0)
        .map(|(p, e)| (p.clone(), Wanted { hash: e.hash, lang: e.lang.clone(), chunks: e.chunks as u64 }))
        .collect()
}

/// Drops the vectors of files no longer indexed and lists the files whose vectors are
/// missing or out of date (all with `reembed`); none when the store holds another model's
/// vectors (the summary then says so).
fn pending_files(
    st: &mut VectorStore,
    wanted: &BTreeMap<String, Wanted>,
    reembed: bool,
    (model, root): (&str, &std::path::Path),
    s: &mut EmbedSummary,
) -> Result<Option<Vec<String>>> {
    let have = st.file_hashes()?;
    let gone: Vec<String> = have.keys().filter(|p| !wanted.contains_key(*p)).cloned().collect();
    st.remove_files(&gone)?;
    s.files_removed = gone.len() as u64;
    if let Some(m) = st.model()? {
        s.dim = Some(m.dim);
        if !reembed && !model_matches(&m.model, model) {
            s.state = EmbedState::Stale;
            s.chunks = st.counts()?.1;
            s.notice = Some(stale_notice(&m.model, m.dim, model, root));
            return Ok(None);
        }
    }
    let mut todo: Vec<String> = wanted.keys().cloned().collect();
    if !reembed {
        todo.retain(|p| have.get(p) != wanted.get(p).map(|w| w.hash).as_ref());
    }
    Ok(Some(todo))
}

/// The store ready for `model`'s vectors of `dim` dimensions (emptied first with
/// `reembed`); none when it holds vectors of another length (the summary then says so).
fn ready_store(
    mut store: VectorStore,
    reembed: bool,
    (model, dim): (&str, usize),
    root: &std::path::Path,
    s: &mut EmbedSummary,
) -> Result<Option<VectorStore>> {
    if reembed {
        store.reset()?;
    }
    match store.model()? {
        None => store.init_model(model, dim)?,
        Some(m) if m.dim != dim => {
            s.state = EmbedState::Stale;
            s.notice = Some(stale_notice(&m.model, m.dim, &format!("{model} ({dim} dimensions now)"), root));
            return Ok(None);
        }
        Some(_) => {}
    }
    Ok(Some(store))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reembed_command_in_a_stale_notice_pastes_into_a_shell() {
        let n = stale_notice("old", 384, "new", std::path::Path::new("/home/me/my repo"));
        assert!(n.contains("`docdex index --repo '/home/me/my repo' --reembed`"), "{n}");
    }

    #[test]
    fn inputs_are_trimmed_and_capped_on_a_character_boundary() {
        assert_eq!(embed_input("  fn x() {}\n"), "fn x() {}");
        let long = "é".repeat(EMBED_MAX_CHARS + 10);
        assert_eq!(embed_input(&long).chars().count(), EMBED_MAX_CHARS);
        assert_eq!(line_starts("a\nb\n"), [0, 2]);
    }

    #[test]
    fn groups_hold_about_a_transaction_of_chunks() {
        let wanted: BTreeMap<String, Wanted> =
            (0..10).map(|i| (format!("f{i}"), Wanted { hash: 0, lang: String::new(), chunks: 100 })).collect();
        let todo: Vec<String> = wanted.keys().cloned().collect();
        let g = groups(&todo, &wanted);
        assert_eq!(g.iter().map(|x| x.len()).collect::<Vec<_>>(), [3, 3, 3, 1]);
    }
}
