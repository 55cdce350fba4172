//! Human output: colored on a terminal (unless NO_COLOR; CLICOLOR_FORCE colors a pipe too),
//! plain otherwise.
//!
//! Text docdex did not write (file text and names, pages, model answers) is escaped with
//! [`visible`] where a line takes it in, before docdex's own colors go around it: a line that
//! reaches [`guard`] then holds no escape sequence but docdex's, and the guard never has to
//! tell a file's `ESC [31m` from docdex's.

use crate::engine::protocol::RepoRecord;
use crate::engine::protocol::WatchReport;
use crate::engine::protocol::{
    EmbedState, EmbedSummary, FileContent, IndexSummary, SearchHit, SearchResponse, SimilarResponse, SkippedFile,
    StatusResponse,
};
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::engine::protocol::files_and_dirs;
/// Counts with their nouns ("1 file", "2 files"): one helper for the engine's messages and ours.
pub use crate::engine::protocol::{count, noun_for};

/// A stdout writer that knows whether to color.
pub struct Out {
    color: bool,
}

/// Whether to color a stream: `NO_COLOR` (set, non-empty) never, `CLICOLOR_FORCE` (set, not
/// empty or `0`) always, else only a terminal.
pub(crate) fn color_enabled(stream_is_tty: bool) -> bool {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty() && v != "0");
    if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
        return false;
    }
    stream_is_tty || set("CLICOLOR_FORCE")
}

impl Out {
    /// Stdout, colored when it is a terminal.
    pub fn stdout() -> Out {
        Out { color: color_enabled(std::io::stdout().is_terminal()) }
    }

    /// `s` in the given SGR color code when coloring, its control characters shown as
    /// [`visible`] shows them (what is painted is often a file's name).
    pub fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{}\x1b[0m", visible(s))
        } else {
            visible(s)
        }
    }

    /// Prints a line (through [`guard`]).
    pub fn line(&self, s: &str) {
        let _ = write_stdout(format!("{}\n", guard(s, self.color)).as_bytes());
    }

    /// Prints a block of lines in one write (through [`guard`]).
    pub fn block(&self, s: &str) {
        let _ = write_stdout(guard(s, self.color).as_bytes());
    }

    /// Prints a line of JSON as it is: serde escapes what a terminal would act on, and the
    /// text in it stays exact.
    pub fn json_line(&self, s: &str) {
        let _ = write_stdout(format!("{s}\n").as_bytes());
    }

    /// Prints a dim informational line to stderr (through [`guard`]).
    pub fn note(&self, s: &str) {
        let c = color_enabled(std::io::stderr().is_terminal());
        let s = guard(s, c);
        if c {
            eline!("\x1b[2m{s}\x1b[0m");
        } else {
            eline!("{s}");
        }
    }

    /// Prints pretty JSON.
    pub fn json<T: serde::Serialize>(&self, v: &T) -> anyhow::Result<()> {
        // One write: stdout is line-buffered, and a search answer has hundreds of lines.
        let mut bytes = serde_json::to_vec_pretty(v)?;
        bytes.push(b'\n');
        write_stdout(&bytes)?;
        Ok(())
    }
}

/// Set once a write found stdout's reader gone.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// The first failure writing stdout that was not a closed pipe (see [`stdout_failure`]).
static STDOUT_FAILURE: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Writes to stdout, the one way the CLI does. A reader that closed the pipe
/// (`docdex impact f --json | head -1`) wanted no more: like `ls` or `rg`, that is no error and
/// no message, only remembered ([`stdout_closed`]) so a command that runs on (watch, chat) can
/// stop. Any other failure (a full disk under a redirect) is an error, and remembered too:
/// human lines ignore what a write returns, so `docdex search q > out` on a full disk exited 0
/// with the file cut short; the CLI's exit now reports it ([`stdout_failure`]).
pub fn write_stdout(bytes: &[u8]) -> std::io::Result<()> {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut o = std::io::stdout().lock();
    match o.write_all(bytes).and_then(|()| o.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
            Ok(())
        }
        Err(e) => {
            // Nothing more can be written: a command that runs on stops as for a closed pipe.
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
            if let Ok(mut first) = STDOUT_FAILURE.lock() {
                first.get_or_insert_with(|| e.to_string());
            }
            Err(e)
        }
        Ok(()) => Ok(()),
    }
}

/// Why stdout could not be written, when it could not (a closed pipe aside): the command's
/// output is incomplete, which its exit status must say.
pub fn stdout_failure() -> Option<String> {
    STDOUT_FAILURE.lock().ok().and_then(|f| f.clone())
}

/// Whether stdout takes no more: its reader has gone, or a write failed (see [`write_stdout`]).
pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// Whether a terminal would act on `c` rather than show it: a control character, or a
/// bidirectional override or isolate (U+202A-U+202E, U+2066-U+2069), which reorders what
/// follows on screen ("Trojan Source": `x\u{202e}sr.exe` reads as `xexe.rs`).
fn acts(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `line` with what a terminal would act on ([`acts`]; tab aside) written out as `\u{1b}`,
/// for printing text docdex did not write (repository files, memories) to what may be a
/// terminal: printed raw, an escape sequence would act on it (clear it, retitle it, set the
/// clipboard), a carriage return would hide what precedes it and a bidi override reorder it.
/// One line: a newline in `line` is escaped too. `--json` stays exact.
pub fn visible(line: &str) -> String {
    escaped(line, |c| acts(c) && c != '\t')
}

/// `text` with every character `unsafe_char` picks written out as its escape; one copy, no
/// allocation per character (a search prints about a hundred lines of snippets).
fn escaped(text: &str, unsafe_char: impl Fn(char) -> bool) -> String {
    if !text.chars().any(&unsafe_char) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// `s` as it may reach a terminal: docdex's own color codes (`ESC [`, digits and `;`, `m`) kept
/// when coloring, every other control character but newline and tab written out as [`visible`]
/// does. It cannot tell a file's color code from docdex's, so text docdex did not write is
/// escaped where a line takes it in ([`visible`], [`shown`], [`Out::paint`]); uncolored, the
/// guard alone escapes everything.
pub fn guard(s: &str, color: bool) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| acts(c) && c != '\n' && c != '\t';
    if !s.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        let sgr = if color && c == '\x1b' { sgr_len(rest) } else { 0 };
        if sgr > 0 {
            out.push_str(&rest[..sgr]);
            rest = &rest[sgr..];
            continue;
        }
        if unsafe_char(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    std::borrow::Cow::Owned(out)
}

/// The length of the SGR sequence `s` starts with (`ESC [ 1;33 m`), or 0.
fn sgr_len(s: &str) -> usize {
    let Some(params) = s.strip_prefix("\x1b[") else { return 0 };
    let digits = params.bytes().take_while(|b| b.is_ascii_digit() || *b == b';').count();
    if params.as_bytes().get(digits) == Some(&b'm') {
        2 + digits + 1
    } else {
        0
    }
}

/// A path as a line may quote it: [`visible`] (a directory's name is anyone's text too).
pub fn shown(p: &std::path::Path) -> String {
    visible(&p.display().to_string())
}

/// [`visible`] for text of many lines (a fetched page, a model's answer as it streams): its
/// newlines are kept.
pub fn visible_text(text: &str) -> String {
    escaped(text, |c| acts(c) && c != '\t' && c != '\n')
}

/// "error:" in red when stderr is a terminal.
pub fn error_prefix() -> String {
    if color_enabled(std::io::stderr().is_terminal()) {
        "\x1b[1;31merror:\x1b[0m".into()
    } else {
        "error:".into()
    }
}

/// "warning:" in yellow when stderr is a terminal.
pub fn warn_prefix() -> String {
    if color_enabled(std::io::stderr().is_terminal()) {
        "\x1b[1;33mwarning:\x1b[0m".into()
    } else {
        "warning:".into()
    }
}

/// The end-of-index summary.
pub fn print_index_summary(out: &Out, s: &IndexSummary) {
    for w in &s.warnings {
        out.note(&format!("{} {}", warn_prefix(), visible(w)));
    }
    if let Some(note) = &s.note {
        // A watcher still applying a change: the counts are the index as it stands.
        let label = if s.pending { out.paint("1;33", "indexing") } else { out.paint("1;32", "up to date") };
        out.line(&format!(
            "{} {}, {} (generation {}): {}",
            label,
            count(s.files, "file"),
            count(s.chunks, "chunk"),
            s.generation,
            visible(note)
        ));
        return;
    }
    out.line(&format!(
        "{} {}, {} in {:.2}s ({}{} added, {} updated, {} deleted, {} renamed, {} unchanged; {:.1} MB read; generation {})",
        out.paint("1;32", "indexed"),
        count(s.files, "file"),
        count(s.chunks, "chunk"),
        s.seconds,
        // A first index is built from scratch too; only a later one is a rebuild (a large first
        // index, committed in steps, said `rebuilt`).
        match (s.first_index, s.rebuilt) {
            (true, _) => "first index; ",
            (false, true) => "rebuilt; ",
            _ => "",
        },
        // The JSON counts a rename in `added` and `deleted` too; here the counts add up to the
        // files changed: one `mv` read "1 added, 1 deleted, 1 renamed" (tour36 F6).
        s.added.saturating_sub(s.renamed),
        s.updated,
        s.deleted.saturating_sub(s.renamed),
        s.renamed,
        s.unchanged,
        s.bytes_read as f64 / 1048576.0,
        s.generation
    ));
    if let Some(pid) = s.resumed {
        out.line(&format!(
            "{} the run of pid {pid} was interrupted (killed or crashed) before it finished; this run completed its work",
            out.paint("1;32", "resumed")
        ));
    }
    if s.text_first {
        out.line(&format!(
            "{} first files after {:.2}s, every file (as text) after {:.2}s; symbols and graph followed",
            out.paint("1;32", "searchable"),
            s.first_commit_seconds,
            s.searchable_seconds
        ));
    }
    print_code_summary(out, s);
    print_skipped(out, &s.skipped);
    print_read_problems(out, s);
    if let Some(e) = &s.embeddings {
        print_embeddings(out, e);
    }
}

/// The symbols line of the index summary, and a graph that could not be rebuilt.
fn print_code_summary(out: &Out, s: &IndexSummary) {
    if let Some(c) = s.code.as_ref().filter(|c| c.files_parsed + c.files_not_parsed + c.files_removed > 0) {
        let langs: Vec<String> = c.languages.iter().map(|(l, t)| format!("{l} {}", t.files)).collect();
        out.line(&format!(
            "{} {} extracted from {} ({}){}{}",
            out.paint("1;32", "symbols"),
            c.symbols_extracted,
            count(c.files_parsed, "file"),
            langs.join(", "),
            if c.files_repaired > 0 { format!("; {} re-extracted", c.files_repaired) } else { String::new() },
            if c.drift_repaired.is_empty() {
                String::new()
            } else {
                format!(" after a grammar or import rules change ({})", c.drift_repaired.join(", "))
            }
        ));
        if let Some(e) = &c.graph_error {
            out.line(&format!("{} impact graph not rebuilt: {}", out.paint("33", "warning:"), visible(e)));
        }
    }
}

/// Files that vanished during the run, and files that could not be read.
fn print_read_problems(out: &Out, s: &IndexSummary) {
    if s.vanished > 0 {
        out.line(&format!(
            "{} {} gone before they were read (deleted or renamed during the run; the next run sees what took their place)",
            out.paint("33", "note:"),
            count(s.vanished, "file")
        ));
    }
    if !s.errors.is_empty() {
        out.line(&format!(
            "{} {} could not be read (retried next run):",
            out.paint("1;31", "errors:"),
            count(s.errors.len(), "file")
        ));
        for f in s.errors.iter().take(10) {
            out.line(&format!("  {} ({})", visible(&f.path), visible(&f.reason)));
        }
    }
}

/// The embedding phase's line of the index summary.
/// Names the files this run skipped; those skipped by an earlier run and untouched since are
/// one line, so an unchanged re-index does not print the same list every time.
fn print_skipped(out: &Out, skipped: &[SkippedFile]) {
    let new: Vec<&SkippedFile> = skipped.iter().filter(|f| f.this_run).collect();
    let earlier = skipped.len() - new.len();
    if !new.is_empty() {
        out.line(&format!("{} {} skipped:", out.paint("33", "note:"), skipped_count(&new)));
        for f in new.iter().take(10) {
            out.line(&format!("  {} ({})", visible(&f.path), visible(&f.reason)));
        }
        if new.len() > 10 {
            out.line(&format!("  ... and {} more (docdex status lists them)", new.len() - 10));
        }
    }
    if earlier > 0 {
        out.line(&format!(
            "{} {} skipped as before (binary, too large, ...; docdex status lists them)",
            out.paint("33", "note:"),
            count(earlier, if new.is_empty() { "file" } else { "more file" })
        ));
    }
}

/// Skipped entries counted by kind: an unreadable directory is skipped with the files, and
/// counted as a directory (`2 files and 1 directory`).
fn skipped_count(list: &[&SkippedFile]) -> String {
    let dirs = list.iter().filter(|f| f.is_directory()).count();
    files_and_dirs(list.len() - dirs, dirs)
}

fn print_embeddings(out: &Out, e: &EmbedSummary) {
    match e.state {
        EmbedState::Ready | EmbedState::Partial => {
            let label = if e.state == EmbedState::Ready {
                out.paint("1;32", "embedded")
            } else {
                out.paint("33", "partly embedded")
            };
            // The parts add up to what this run gave a vector; `chunks` is every vector stored.
            let mut parts = vec![format!("{} new", e.chunks_embedded), format!("{} from cache", e.chunks_cached)];
            if e.chunks_repeated > 0 {
                parts.push(format!("{} repeating a text", e.chunks_repeated));
            }
            if e.chunks_blank > 0 {
                parts.push(format!("{} blank (nothing to embed)", e.chunks_blank));
            }
            out.line(&format!(
                "{label} {} with {} ({}; {} updated, {} removed) in {:.2}s",
                count(e.chunks, "chunk"),
                e.model,
                parts.join(", "),
                count(e.files_embedded, "file"),
                e.files_removed,
                e.seconds
            ));
        }
        _ => {}
    }
    if let Some(n) = &e.notice {
        out.note(&format!("note: {}", visible(n)));
    }
}

/// Ranked hits with highlighted snippets.
pub fn print_search(out: &Out, r: &SearchResponse) {
    if let Some(n) = &r.retrieval.notice {
        out.note(&format!("note: {}", visible(n)));
    }
    // Built whole and written once: a page of hits is ~70 lines, each a write on a line-
    // buffered stdout otherwise.
    let mut page = String::new();
    let mut line = |s: &str| {
        page.push_str(s);
        page.push('\n');
    };
    line(&out.paint("2", &search_header(r)));
    if r.results.is_empty() {
        line("no results");
    }
    let hybrid = r.retrieval.mode == "hybrid";
    for h in &r.results {
        line("");
        line(&hit_heading(out, h, hybrid));
        for c in &h.context {
            line(&format!("{} {}", out.paint("2", &format!("{:>5}:", c.line)), out.paint("2", &visible(&c.text))));
        }
        if !h.context.is_empty() {
            line(&out.paint("2", "     ⋮"));
        }
        for (i, text_line) in h.snippet.lines().enumerate() {
            let n = h.snippet_line_start + i as u32;
            line(&format!("{} {}", out.paint("32", &format!("{n:>5}:")), highlighted(out, h, n, text_line)));
        }
    }
    // After the hits, whatever they are: a query with no searchable word, and a limit taken
    // as another (`--limit 0`, `--limit 500`), both say so here.
    if let Some(n) = &r.note {
        if !r.results.is_empty() {
            line("");
        }
        line(&format!("note: {}", visible(n)));
    }
    if !r.next_cursor.is_empty() {
        line("");
        line(&out.paint("2", &format!("more: --cursor {}", r.next_cursor)));
    }
    out.block(&page);
}

/// The line above the hits: repo, generation, state, retrieval mode, hit count, confidence, time.
fn search_header(r: &SearchResponse) -> String {
    format!(
        "repo {} · generation {} · {} · {} · {}{} {} · confidence {:.2} · {:.1} ms",
        shown(&r.repo),
        r.generation,
        serde_json::to_value(r.index_state).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default(),
        match &r.retrieval.embedding_model {
            Some(m) if r.retrieval.mode == "hybrid" => format!("hybrid ({m})"),
            _ => r.retrieval.mode.clone(),
        },
        r.total_hits,
        // The ranking pool's size: a count that reaches it is a lower bound.
        if r.total_hits >= crate::engine::protocol::CANDIDATE_POOL { "+" } else { "" },
        if r.total_hits == 1 { "hit" } else { "hits" },
        r.confidence,
        r.timing_ms.total + r.retrieval.embed_ms.unwrap_or(0.0)
    )
}

/// A hit's citation line: `path:A-B`, pages, score, retrievers in hybrid mode, and whether its
/// source is gone or the file changed since it was indexed.
fn hit_heading(out: &Out, h: &SearchHit, hybrid: bool) -> String {
    format!(
        "{}:{}-{}{}  {}{}{}",
        out.paint("1;35", &h.path),
        h.line_start,
        h.line_end,
        match (h.page_start, h.page_end) {
            (Some(a), Some(b)) if a != b => format!(" (pages {a}-{b})"),
            (Some(a), _) => format!(" (page {a})"),
            _ => String::new(),
        },
        out.paint("2", &format!("{:.2}", h.score)),
        if hybrid { out.paint("2", &format!("  [{}]", h.retrievers.join("+"))) } else { String::new() },
        match (h.source_missing, h.gone, h.stale) {
            (true, _, _) => out.paint(
                "33",
                &format!("  (source {} is missing: its folder is gone)", h.source.as_deref().unwrap_or_default())
            ),
            (false, true, _) => out.paint("33", "  (gone since indexed: deleted, moved or unreadable)"),
            (false, false, true) => out.paint("33", "  (changed since indexed)"),
            (false, false, false) => String::new(),
        }
    )
}

/// Snippet line `n` with the query's matches marked: bold yellow with colours, `[word]` without.
/// Text from the file is escaped; a highlight that overlaps, overruns or splits a character is
/// skipped rather than trusted.
fn highlighted(out: &Out, h: &SearchHit, n: u32, text_line: &str) -> String {
    let mut text = String::new();
    let mut pos = 0;
    for hl in h.highlights.iter().filter(|x| x.line == n) {
        if hl.start < pos
            || hl.end > text_line.len()
            || !text_line.is_char_boundary(hl.start)
            || !text_line.is_char_boundary(hl.end)
        {
            continue;
        }
        text.push_str(&visible(&text_line[pos..hl.start]));
        let word = visible(&text_line[hl.start..hl.end]);
        text.push_str(&if out.color { out.paint("1;33", &word) } else { format!("[{word}]") });
        pos = hl.end;
    }
    text.push_str(&visible(&text_line[pos.min(text_line.len())..]));
    text
}

/// File lines with numbers.
pub fn print_file(out: &Out, f: &FileContent) {
    if let (Some(fmt), Some(a), Some(b), Some(n)) = (&f.format, f.page_start, f.page_end, f.total_pages) {
        let pages = if a == b { format!("page {a}") } else { format!("pages {a}-{b}") };
        out.note(&format!("{} · text extracted from {fmt} · {pages} of {n}", visible(&f.path)));
    } else if let Some(fmt) = &f.format {
        out.note(&format!("{} · text extracted from {fmt}", visible(&f.path)));
    }
    // Every line of the range, blank ones included (`lines()` would drop a trailing blank
    // line of the joined text, and with it the range's last line).
    let count = (f.line_end + 1).saturating_sub(f.line_start) as usize;
    for (i, line) in f.text.split('\n').take(count).enumerate() {
        let line = visible(line.strip_suffix('\r').unwrap_or(line));
        out.line(&format!("{} {line}", out.paint("32", &format!("{:>5}:", f.line_start + i as u32))));
    }
}

/// A status's progress: the phase's own count in the unit the engine names (chunks while
/// embedding, then its files, which were shown as chunks), and what a parsing phase means.
fn progress_text(p: &crate::engine::protocol::IndexProgress) -> String {
    let meaning = match p.phase.as_str() {
        "parsing" => " (every file searchable as text; symbols and the graph follow)",
        _ => "",
    };
    let (done, total, unit) = p.measure();
    let files = match unit {
        crate::engine::protocol::ProgressUnit::Chunks => format!(" ({}/{} files)", p.files_done, p.files_total),
        _ => String::new(),
    };
    format!("{} {done}/{total} {}{files}{meaning}", p.phase, unit.noun(total))
}

/// `docdex status`.
pub fn print_status(out: &Out, s: &StatusResponse) {
    let state = serde_json::to_value(s.index_state).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
    out.line(&format!("repo        {}", shown(&s.repo)));
    out.line(&format!("state       {}", out.paint(if state == "ready" { "32" } else { "33" }, &state)));
    out.line(&format!("files       {}", s.documents));
    out.line(&format!("chunks      {}", s.chunks));
    out.line(&format!("generation  {}", s.generation));
    match s.queued_files {
        Some(n) => out.line(&format!("queued      {n}")),
        None => out.line("queued      unknown (see the warning below)"),
    }
    if let Some(ms) = s.last_indexed_ms {
        out.line(&format!("indexed     {}", crate::engine::protocol::ago(crate::engine::protocol::now_ms(), ms)));
    }
    if let Some(p) = &s.progress {
        out.line(&format!("progress    {}", progress_text(p)));
    }
    if let Some(e) = &s.last_event {
        out.line(&format!("last event  {} {}", e.kind, visible(&e.path)));
    }
    out.line(&format!("state dir   {}", shown(&s.state_dir)));
    for w in &s.warnings {
        out.line(&format!("{} {}", out.paint("33", "warning:"), visible(w)));
    }
}

/// A watcher report.
pub fn print_watch(out: &Out, r: &WatchReport, json: bool) {
    if json {
        let v = match r {
            WatchReport::Ready(s) => serde_json::json!({"event": "ready", "summary": s}),
            WatchReport::Applied { paths, summary } => {
                serde_json::json!({"event": "applied", "paths": paths, "summary": summary})
            }
            WatchReport::Failed(e) => serde_json::json!({"event": "error", "message": e}),
        };
        out.json_line(&v.to_string());
        return;
    }
    match r {
        WatchReport::Ready(s) => out.line(&format!(
            "ready: {}, {} (generation {})",
            count(s.files, "file"),
            count(s.chunks, "chunk"),
            s.generation
        )),
        WatchReport::Applied { paths, summary } => out.line(&format!(
            "updated {} in {:.0} ms: +{} ~{} -{} (generation {}) {}",
            count(paths.len(), "path"),
            summary.seconds * 1000.0,
            summary.added,
            summary.updated,
            summary.deleted,
            summary.generation,
            visible(&paths.iter().take(3).cloned().collect::<Vec<_>>().join(", "))
        )),
        WatchReport::Failed(e) => out.line(&format!("{} {}", out.paint("1;31", "error:"), visible(e))),
    }
}

/// `docdex repo list`.
pub fn print_repos(out: &Out, repos: &[RepoRecord]) {
    if repos.is_empty() {
        out.line("no repositories yet; `docdex index --repo <path>` adds one");
        return;
    }
    for r in repos {
        let when = r
            .last_indexed_ms
            .map(|ms| format!("indexed {}", crate::engine::protocol::ago(crate::engine::protocol::now_ms(), ms)))
            .unwrap_or_else(|| "never indexed".into());
        out.line(&format!(
            "{}  {}, {}, {}  {}",
            shown(&r.path),
            count(r.files, "file"),
            count(r.chunks, "chunk"),
            when,
            out.paint("2", &r.fingerprint[..12])
        ));
        if r.missing {
            out.line(&format!(
                "  MISSING: the folder is gone (moved or deleted); `docdex repo move {} NEW_PATH` carries its index and memories to where it is now, `docdex repo remove {} --purge` deletes them",
                shown(&r.path),
                shown(&r.path)
            ));
        }
    }
}

/// Files like a file.
pub fn print_similar(out: &Out, r: &SimilarResponse) {
    if let Some(n) = &r.notice {
        out.note(&format!("note: {}", visible(n)));
    }
    out.line(&out.paint(
        "2",
        &format!(
            "files like {} ({})",
            r.file,
            if r.mode == "bm25" {
                "by shared distinctive words; scores relative to the closest file, 1.000, not a measure of sameness"
            } else {
                "by embeddings; scores are cosine similarity"
            }
        ),
    ));
    if r.results.is_empty() {
        out.line("no similar files");
    }
    for f in &r.results {
        out.line(&format!("{:>6.3}  {}  {}", f.score, out.paint("1;35", &f.path), out.paint("2", &f.lang)));
    }
}

#[cfg(test)]
mod tests {
    use super::guard;

    /// tour17: an unreadable directory was counted as a file (`errors: 2 files could not be
    /// read`); the skipped line counts it as a directory.
    #[test]
    fn skipped_entries_count_an_unreadable_directory_as_a_directory() {
        use crate::engine::protocol::SkippedFile;
        let entry = |path: &str, reason: &str| SkippedFile { path: path.into(), reason: reason.into(), this_run: true };
        let dir = entry("private", "unreadable directory: Permission denied (os error 13)");
        let bin = entry("a.bin", "binary");
        assert_eq!(super::skipped_count(&[&dir]), "1 directory");
        assert_eq!(super::skipped_count(&[&bin, &dir, &dir]), "1 file and 2 directories");
        assert_eq!(super::skipped_count(&[&bin, &bin]), "2 files");
    }

    #[test]
    fn guard_keeps_docdex_s_colors_and_shows_every_other_control() {
        let line = "\x1b[1;33mhit\x1b[0m z\x1b[2Jz.rs \x1b]0;title\x07 a\rb\tc\u{9b}d";
        assert_eq!(guard(line, true), "\x1b[1;33mhit\x1b[0m z\\u{1b}[2Jz.rs \\u{1b}]0;title\\u{7} a\\rb\tc\\u{9b}d");
        // Uncolored output has no escape of its own to keep.
        assert_eq!(guard("\x1b[0mx\n", false), "\\u{1b}[0mx\n");
        assert!(matches!(guard("plain\ttext\n", true), std::borrow::Cow::Borrowed(_)));
    }

    #[test]
    fn progress_names_chunks_as_chunks_and_files_as_files() {
        use crate::engine::protocol::IndexProgress;
        let embedding = IndexProgress::embedding((2, 6), (120, 400));
        assert_eq!(super::progress_text(&embedding), "embedding 120/400 chunks (2/6 files)");
        let indexing = IndexProgress { phase: "indexing".into(), files_done: 3, files_total: 5, ..Default::default() };
        assert_eq!(super::progress_text(&indexing), "indexing 3/5 files");
    }

    #[test]
    fn bidi_overrides_are_shown_and_right_to_left_text_is_not_touched() {
        use super::{visible, visible_text};
        // Shown raw, `x\u{202e}sr.exe` reads `xexe.rs` on screen.
        assert_eq!(visible("x\u{202e}sr.exe"), "x\\u{202e}sr.exe");
        assert_eq!(visible_text("a\u{2066}b\n\u{2069}"), "a\\u{2066}b\n\\u{2069}");
        assert_eq!(guard("a\u{202d}b", true), "a\\u{202d}b");
        assert_eq!(visible("שלום עולם مرحبا"), "שלום עולם مرحبا");
        // Tabs stay; a newline is escaped on one line and kept in text; escapes are shown.
        assert_eq!(visible("a\tb\nc\x1b[2J"), "a\tb\\nc\\u{1b}[2J");
        assert_eq!(visible_text("a\tb\nc\r"), "a\tb\nc\\r");
    }
}
