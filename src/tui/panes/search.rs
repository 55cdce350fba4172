//! Search as you type. Each keystroke edits the query; once typing pauses for
//! the debounce interval one search request goes out, and the worker runs the
//! latest one only (a newer request replaces a pending one), so typing never
//! waits for the engine and stale results never overwrite fresh ones.
//! Results list (drawing only the visible rows, so 10,000 hits cost the same
//! as ten), a highlighted preview of the selected hit, `$EDITOR` at its line,
//! path and language filters, and a symbol-search mode.

use super::{Cx, Pane, PaneId, RenderCtx};
use crate::engine::protocol as files;
use crate::engine::protocol::{SearchHit, SearchRequest, SearchResponse};
use crate::tui::action::{Action, PromptKind};
use crate::tui::event::{EngineEvent, Request, SymbolHit, WatchActivity};
use crate::tui::keymap::Command;
use crate::tui::theme::Slot;
use crate::tui::widgets::preview::PreviewDoc;
use crate::tui::widgets::text_field::TextField;
use crate::tui::widgets::{self, fit, frame, scroll_to, thousands, truncate, truncate_left, width};
use crossterm::event::{KeyEvent, MouseEvent, MouseEventKind};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;
use std::cell::Cell;
use std::time::Instant;

/// Hits asked for per request; more pages load as the selection nears the end.
pub const PAGE: usize = 100;

/// Text search or symbol search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Full-text search over chunks.
    Text,
    /// Symbol names (needs the symbol index).
    Symbols,
}

/// Where the parts of the pane go; a pure function of the area.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SearchLayout {
    /// The query box (framed).
    pub query: Rect,
    /// The result list (framed).
    pub results: Rect,
    /// The preview (framed).
    pub preview: Rect,
}

/// The fewest rows a preview under the hits gets: its frame and one line of the file.
const PREVIEW_MIN_ROWS: u16 = 3;

/// Splits the pane: query on top; results beside the preview when wide, above it when narrow
/// (and alone when too short for a preview with a line in it).
pub fn layout(area: Rect) -> SearchLayout {
    let query = Rect { height: 3.min(area.height), ..area };
    let rest = Rect { y: area.y + query.height, height: area.height.saturating_sub(query.height), ..area };
    if area.width >= 100 {
        let left = (rest.width * 9 / 20).max(40).min(rest.width);
        SearchLayout {
            query,
            results: Rect { width: left, ..rest },
            preview: Rect { x: rest.x + left, width: rest.width - left, ..rest },
        }
    } else {
        let mut top = (rest.height * 9 / 20).max(4).min(rest.height);
        // A preview frame under 3 rows is a border with no line in it (at 40x10: one row, its
        // title then overdrawn by a message taking the row above the status bar): the hits get
        // the rows and the preview none.
        if rest.height - top < PREVIEW_MIN_ROWS {
            top = rest.height;
        }
        SearchLayout {
            query,
            results: Rect { height: top, ..rest },
            preview: Rect { y: rest.y + top, height: rest.height - top, ..rest },
        }
    }
}

/// The search pane's state.
#[derive(Debug)]
pub struct SearchPane {
    query: TextField,
    typing: bool,
    mode: Mode,
    path_filter: Option<String>,
    lang_filter: Option<String>,
    /// When the debounced search is due (the query changed and no request went out yet).
    due: Option<Instant>,
    seq: u64,
    shown_seq: u64,
    in_flight: bool,
    more_in_flight: bool,
    results: Vec<SearchHit>,
    symbols: Vec<SymbolHit>,
    /// How many symbols matched when more did than were sent (0 otherwise).
    symbols_total: usize,
    results_query: String,
    /// The engine's explanation of an empty answer (a query with no searchable words).
    results_note: Option<String>,
    total_hits: usize,
    confidence: f64,
    took_ms: f64,
    next_cursor: String,
    error: Option<String>,
    selected: usize,
    offset: Cell<usize>,
    preview: Option<PreviewDoc>,
    preview_seq: u64,
    preview_error: Option<String>,
    preview_scroll: i64,
    /// A file shown by a citation jump rather than a hit.
    pinned: Option<(String, u32)>,
    /// The list shows a cited file (a citation jump), not the hits of a query.
    cited: bool,
    indexing: bool,
    /// The running index's last progress phase (`committing` just before a commit lands,
    /// `parsing` once a large first index answers over every file).
    index_phase: String,
    /// Rows the indexing note took above the hits at the last draw (for mouse hit-testing).
    note_rows: Cell<u16>,
    areas: Cell<SearchLayout>,
}

impl Default for SearchPane {
    fn default() -> Self {
        SearchPane {
            query: TextField::default(),
            typing: true,
            mode: Mode::Text,
            path_filter: None,
            lang_filter: None,
            due: None,
            seq: 0,
            shown_seq: 0,
            in_flight: false,
            more_in_flight: false,
            results: Vec::new(),
            symbols: Vec::new(),
            symbols_total: 0,
            results_query: String::new(),
            results_note: None,
            total_hits: 0,
            confidence: 0.0,
            took_ms: 0.0,
            next_cursor: String::new(),
            error: None,
            selected: 0,
            offset: Cell::new(0),
            preview: None,
            preview_seq: 0,
            preview_error: None,
            preview_scroll: 0,
            pinned: None,
            cited: false,
            indexing: false,
            index_phase: String::new(),
            note_rows: Cell::new(0),
            areas: Cell::new(SearchLayout::default()),
        }
    }
}

/// The line to open or preview for a hit: the highlighted line with the most distinct matched
/// words (the first of equals), as the engine centred the snippet on; else the snippet's start.
/// The first highlighted line may be the line of context above the match.
pub fn best_line(hit: &SearchHit) -> u32 {
    let fallback = if hit.snippet_line_start > 0 { hit.snippet_line_start } else { hit.line_start };
    let lines: Vec<&str> = hit.snippet.lines().collect();
    let distinct = |line: u32| {
        let text = line.checked_sub(hit.snippet_line_start).and_then(|i| lines.get(i as usize)).copied().unwrap_or("");
        let words: std::collections::HashSet<String> = hit
            .highlights
            .iter()
            .filter(|h| h.line == line)
            .filter_map(|h| text.get(h.start..h.end).map(str::to_lowercase))
            .collect();
        words.len()
    };
    let mut best: Option<(usize, u32)> = None;
    for h in &hit.highlights {
        let n = distinct(h.line);
        if best.is_none_or(|(m, _)| n > m) {
            best = Some((n, h.line));
        }
    }
    best.map_or(fallback, |(_, line)| line)
}

impl SearchPane {
    /// The query text.
    pub fn query(&self) -> &str {
        self.query.text()
    }

    /// The hits shown.
    pub fn results(&self) -> &[SearchHit] {
        &self.results
    }

    /// The selected hit's index.
    pub fn selected(&self) -> usize {
        self.selected
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The file of the selected hit (or the pinned file), for the impact graph.
    pub fn selected_path(&self) -> Option<String> {
        if let Some((p, _)) = &self.pinned {
            return Some(p.clone());
        }
        match self.mode {
            Mode::Text => self.results.get(self.selected).map(|h| h.path.clone()),
            Mode::Symbols => self.symbols.get(self.selected).map(|s| s.path.clone()),
        }
    }

    /// Sets the path prefix filter (empty clears) and searches again.
    pub fn set_path_filter(&mut self, value: &str, cx: &mut Cx<'_>) {
        self.path_filter = Some(value.trim().to_string()).filter(|v| !v.is_empty());
        self.search_now(cx);
    }

    /// Sets the language filter (empty clears) and searches again. An alias or extension
    /// (`py`) is kept as the index names the language (`python`).
    pub fn set_lang_filter(&mut self, value: &str, cx: &mut Cx<'_>) {
        let value = value.trim();
        self.lang_filter = (!value.is_empty())
            .then(|| files::canonical_language(value).map_or_else(|| value.to_ascii_lowercase(), str::to_string));
        self.search_now(cx);
    }

    /// The filters in effect: (path prefix, language).
    pub fn filters(&self) -> (Option<&str>, Option<&str>) {
        (self.path_filter.as_deref(), self.lang_filter.as_deref())
    }

    /// The current repository changed: drop results and search it again.
    pub fn reset_for_repo(&mut self, cx: &mut Cx<'_>) {
        self.results.clear();
        self.symbols.clear();
        self.preview = None;
        self.pinned = None;
        self.error = None;
        self.search_now(cx);
    }

    /// Shows a file's lines (a citation jump): the list holds that file alone and the query
    /// box its path, selected, so typing starts a new search; hits of the query typed before
    /// (and any still on their way) are dropped rather than shown beside it.
    pub fn show_file(&mut self, path: &str, lines: (u32, u32), cx: &mut Cx<'_>) {
        let (start, end) = (lines.0.max(1), lines.1.max(lines.0).max(1));
        self.seq += 1;
        self.shown_seq = self.seq;
        self.due = None;
        self.in_flight = false;
        self.more_in_flight = false;
        self.mode = Mode::Text;
        self.error = None;
        self.symbols.clear();
        let lang = files::language(std::path::Path::new(path)).to_string();
        self.results = vec![SearchHit {
            chunk_id: format!("{path}:{start}-{end}"),
            path: path.to_string(),
            lang: lang.clone(),
            line_start: start,
            line_end: end,
            page_start: None,
            page_end: None,
            source: None,
            score: 0.0,
            snippet_line_start: start,
            snippet: String::new(),
            highlights: Vec::new(),
            generation: 0,
            stale: false,
            source_missing: false,
            gone: false,
            context: Vec::new(),
            retrievers: Vec::new(),
        }];
        self.results_query = path.to_string();
        self.results_note = None;
        self.total_hits = 1;
        self.next_cursor.clear();
        self.selected = 0;
        self.offset.set(0);
        self.cited = true;
        self.query.set(path);
        self.query.select_all();
        self.typing = true;
        self.pinned = Some((path.to_string(), start));
        self.request_preview_of(path.to_string(), start, lang, (start, end), Vec::new(), cx);
    }

    /// Empties the preview and forgets any preview still on its way (nothing is selected).
    fn clear_preview(&mut self) {
        self.preview = None;
        self.preview_error = None;
        self.preview_seq += 1;
    }

    /// Sends the query now (filters changed, repo changed, index finished).
    /// Moves the preview's lines by `delta` (every step moves, up to the file's first and last
    /// lines).
    fn scroll_preview(&mut self, delta: i64) {
        // The preview's inner height: its frame takes two rows.
        let height = self.areas.get().preview.height.saturating_sub(2).max(1) as usize;
        self.preview_scroll = match &self.preview {
            Some(doc) => doc.scrolled(height, self.preview_scroll, delta),
            None => self.preview_scroll + delta,
        };
    }

    fn search_now(&mut self, cx: &mut Cx<'_>) {
        self.due = None;
        self.cited = false;
        if self.query.text().trim().is_empty() {
            self.results.clear();
            self.symbols.clear();
            self.results_query.clear();
            self.results_note = None;
            self.error = None;
            self.in_flight = false;
            self.pinned = None;
            self.clear_preview();
            return;
        }
        if self.mode == Mode::Symbols {
            self.seq += 1;
            self.in_flight = true;
            cx.request(Request::Symbols {
                seq: self.seq,
                repo: cx.repo.to_path_buf(),
                query: self.query.text().trim().to_string(),
                path_prefix: self.path_filter.clone(),
                lang: self.lang_filter.clone(),
            });
            return;
        }
        self.seq += 1;
        self.in_flight = true;
        let req = SearchRequest {
            query: self.query.text().to_string(),
            limit: Some(PAGE),
            cursor: None,
            path_prefix: self.path_filter.clone(),
            lang: self.lang_filter.clone(),
            ..Default::default()
        };
        cx.request(Request::Search { seq: self.seq, repo: cx.repo.to_path_buf(), req, more: false });
    }

    fn more(&mut self, cx: &mut Cx<'_>) {
        if self.more_in_flight || self.next_cursor.is_empty() || self.mode != Mode::Text {
            return;
        }
        self.more_in_flight = true;
        let req = SearchRequest {
            query: self.results_query.clone(),
            limit: Some(PAGE),
            cursor: Some(self.next_cursor.clone()),
            path_prefix: self.path_filter.clone(),
            lang: self.lang_filter.clone(),
            ..Default::default()
        };
        cx.request(Request::Search { seq: self.shown_seq, repo: cx.repo.to_path_buf(), req, more: true });
    }

    fn len(&self) -> usize {
        match self.mode {
            Mode::Text => self.results.len(),
            Mode::Symbols => self.symbols.len(),
        }
    }

    fn select(&mut self, i: isize, cx: &mut Cx<'_>) {
        let len = self.len();
        if len == 0 {
            return;
        }
        let i = i.clamp(0, len as isize - 1) as usize;
        let changed = i != self.selected || self.pinned.is_some();
        self.selected = i;
        self.pinned = None;
        if changed || self.preview.is_none() {
            self.request_preview(cx);
        }
        if len.saturating_sub(i) <= 10 {
            self.more(cx);
        }
    }

    fn request_preview(&mut self, cx: &mut Cx<'_>) {
        match self.mode {
            Mode::Text => {
                if let Some(h) = self.results.get(self.selected) {
                    let (path, line, lang, hit, hl) = (
                        h.path.clone(),
                        best_line(h),
                        h.lang.clone(),
                        (h.line_start, h.line_end),
                        h.highlights.clone(),
                    );
                    self.request_preview_of(path, line, lang, hit, hl, cx);
                }
            }
            Mode::Symbols => {
                if let Some(s) = self.symbols.get(self.selected) {
                    let (path, a, b) = (s.path.clone(), s.line_start, s.line_end);
                    self.request_preview_of(path, a, String::new(), (a, b), Vec::new(), cx);
                }
            }
        }
    }

    fn request_preview_of(
        &mut self,
        path: String,
        line: u32,
        lang: String,
        hit: (u32, u32),
        highlights: Vec<crate::engine::protocol::Highlight>,
        cx: &mut Cx<'_>,
    ) {
        self.preview_seq += 1;
        self.preview_scroll = 0;
        cx.request(Request::Preview {
            seq: self.preview_seq,
            repo: cx.repo.to_path_buf(),
            path,
            line,
            lang,
            hit,
            highlights,
        });
    }

    fn open_selected(&self, cx: &mut Cx<'_>) {
        let target = if let Some((p, l)) = &self.pinned {
            Some((p.clone(), *l))
        } else {
            match self.mode {
                Mode::Text => self.results.get(self.selected).map(|h| (h.path.clone(), best_line(h))),
                Mode::Symbols => self.symbols.get(self.selected).map(|s| (s.path.clone(), s.line_start)),
            }
        };
        if let Some((path, line)) = target {
            cx.emit(Action::OpenEditor { path, line });
        }
    }

    /// The results frame's title in `max` cells: at the narrowest split (100 columns) the
    /// least important parts go first (timing, then confidence; the symbols' hint), whole.
    /// The search's time comes apart, for the right end of the frame's top edge.
    fn status_title(&self, max: usize) -> (String, Option<String>) {
        if self.mode == Mode::Symbols {
            let shown = widgets::thousands(self.symbols.len() as u64);
            let title = match self.symbols_total {
                n if n > self.symbols.len() => {
                    let n = widgets::thousands(n as u64);
                    widgets::fit_title(
                        &[
                            format!(" Symbols (first {shown} of {n}: type more to narrow) "),
                            format!(" Symbols (first {shown} of {n}) "),
                            format!(" Symbols ({shown} of {n}) "),
                        ],
                        max,
                    )
                }
                _ => widgets::fit_title(&[format!(" Symbols ({shown}) ")], max),
            };
            return (title, None);
        }
        if self.cited {
            return (" Cited file · type to search ".into(), None);
        }
        if self.results_query.is_empty() {
            return (" Results ".into(), None);
        }
        // No hits while the first index is built says nothing about the query: no count yet.
        if self.indexing && self.results.is_empty() {
            return (" Results · indexing ".into(), None);
        }
        if self.error.is_some() {
            return (" Results · failed ".into(), None);
        }
        // "1 hit", "100 of 2,048 hits": the noun agrees with the last number. The ranking pool
        // holds 1,000 chunks, so a count that reaches it is a lower bound: "1,000+ hits".
        let capped = self.total_hits >= crate::engine::protocol::CANDIDATE_POOL;
        let total = format!("{}{}", thousands(self.total_hits as u64), if capped { "+" } else { "" });
        let hits = if self.total_hits > self.results.len() {
            format!("{} of {total} hits", thousands(self.results.len() as u64))
        } else if capped {
            format!("{total} hits")
        } else {
            widgets::count(self.results.len() as u64, "hit", "hits")
        };
        let full = format!(" {hits} · confidence {:.2} ", self.confidence);
        if widgets::width(&full) > max {
            return (widgets::fit_title(&[format!(" {hits} ")], max), None);
        }
        // The time goes on the right end of the top edge, unpadded (` 24 ms `): it used to end
        // the title in a fixed-width field (`confidence 1.00 ·   24 ms`, tour18 F14). There the
        // title never moves as timings change. Whether it fits is judged at four digits (and a
        // cell of border between), so a slower search does not drop it from one frame to the next.
        let timing = format!(" {:.0} ms ", self.took_ms);
        let room = widgets::width(&timing).max(widgets::width(" 9999 ms "));
        let timing = (widgets::width(&full) + 1 + room <= max).then_some(timing);
        (full, timing)
    }

    fn render_query(&self, area: Rect, buf: &mut Buffer, cx: &RenderCtx<'_>) -> Option<(u16, u16)> {
        let t = cx.theme;
        let mode = match self.mode {
            Mode::Text => "Search",
            Mode::Symbols => "Symbol search",
        };
        let busy = if self.in_flight { format!(" {}", widgets::spinner(cx.step)) } else { String::new() };
        let block = frame(format!(" {mode}{busy} "), cx.focused && self.typing, t);
        let inner = block.inner(area);
        block.render(area, buf);
        if inner.height == 0 {
            return None;
        }
        // Filter chips on the right.
        let mut chips: Vec<Span<'static>> = Vec::new();
        if let Some(p) = &self.path_filter {
            chips.push(Span::styled(format!(" path:{p} "), t.style(Slot::SearchFilter)));
            chips.push(Span::raw(" "));
        }
        if let Some(l) = &self.lang_filter {
            chips.push(Span::styled(format!(" lang:{l} "), t.style(Slot::SearchFilter)));
            chips.push(Span::raw(" "));
        }
        let chips_w: u16 = chips.iter().map(|s| width(&s.content) as u16).sum();
        let chips_w = chips_w.min(inner.width / 2);
        if chips_w > 0 {
            buf.set_line(inner.x + inner.width - chips_w, inner.y, &Line::from(chips), chips_w);
        }
        let field = Rect { x: inner.x + 2, width: inner.width.saturating_sub(chips_w + 2), height: 1, ..inner };
        buf.set_string(inner.x, inner.y, "›", t.style(Slot::Accent));
        // Symbol search matches names only: the text search's "plain-language" would mislead.
        let placeholder = match self.mode {
            Mode::Text => format!(
                "identifiers, paths or a plain-language description ({} filters, {} symbols)",
                cx.key(Command::FilterPath),
                cx.key(Command::ToggleSymbols)
            ),
            Mode::Symbols => format!(
                "a function, type or constant name, or part of one ({} filters, {} text search)",
                cx.key(Command::FilterPath),
                cx.key(Command::ToggleSymbols)
            ),
        };
        let cursor =
            self.query.render_line(field, buf, t.style(Slot::Input), Some((&placeholder, t.style(Slot::Placeholder))));
        (cx.focused && self.typing).then_some(cursor)
    }

    fn render_results(&self, area: Rect, buf: &mut Buffer, cx: &RenderCtx<'_>) {
        let t = cx.theme;
        let max = area.width.saturating_sub(2) as usize;
        let (title, timing) = self.status_title(max);
        let focused = cx.focused && !self.typing;
        let mut block = frame(title, focused, t);
        if let Some(timing) = timing {
            let style = t.style(if focused { Slot::TitleFocused } else { Slot::Title });
            block = block.title_top(Line::styled(timing, style).right_aligned());
        }
        let inner = block.inner(area);
        block.render(area, buf);
        if inner.height == 0 || inner.width < 4 {
            return;
        }
        let mut y = inner.y;
        if self.indexing {
            let text = match self.index_phase.as_str() {
                "parsing" => "Every file is searchable; symbols and the impact graph are still being built.",
                _ => "Indexing is running; results fill in as it goes.",
            };
            y += note_at(buf, inner, y, text, t.style(Slot::Warning));
        }
        self.note_rows.set(y - inner.y);
        // While the first index run is going, "not indexed yet" is not news: the line above says it.
        let error = self.error.as_ref().filter(|e| !(self.indexing && e.contains("is not indexed yet")));
        if let Some(e) = error {
            note_at(buf, inner, y, e, t.style(Slot::Error));
            return;
        }
        if self.error.is_some() {
            return;
        }
        if self.len() == 0 || (self.query.text().trim().is_empty() && self.results.is_empty()) {
            if let Some(text) = self.empty_text(cx) {
                note_at(buf, inner, y, &text, t.style(Slot::Muted));
            }
            return;
        }
        self.render_list(Rect { y, height: inner.y + inner.height - y, ..inner }, buf, cx);
    }

    /// What the results area says with nothing to list: how to start, or why nothing was found
    /// (`None` while a search is on its way).
    fn empty_text(&self, cx: &RenderCtx<'_>) -> Option<String> {
        if self.query.text().trim().is_empty() && self.results.is_empty() {
            let what = match self.mode {
                Mode::Text => "Type to search",
                Mode::Symbols => "Type a name to search the symbols of",
            };
            return Some(format!(
                "{what} {}. {} / {} move, {} opens the hit in $EDITOR, {} path filter, {} language, {} impact graph of the file.",
                cx.repo.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
                cx.key(Command::PrevResult),
                cx.key(Command::NextResult),
                cx.key(Command::OpenInEditor),
                cx.key(Command::FilterPath),
                cx.key(Command::FilterLang),
                cx.key(Command::OpenImpact),
            ));
        }
        if self.in_flight || self.results_query.is_empty() {
            return None;
        }
        let filters = if self.path_filter.is_some() || self.lang_filter.is_some() {
            format!(" with these filters ({} clears them)", cx.key(Command::ClearFilters))
        } else {
            String::new()
        };
        Some(match &self.results_note {
            // The workbench has its own way to symbol search: name its key.
            Some(_) => format!(
                "No results: \"{}\" has no searchable words (single characters, common English words and words over 48 characters are not indexed). Use other words, or {} for symbol search.",
                self.results_query.trim(),
                cx.key(Command::ToggleSymbols)
            ),
            None => format!("No results for \"{}\"{filters}. Try fewer or other words.", self.results_query),
        })
    }

    /// The hits (or symbols), two rows each when there is room, scrolled to the selection.
    fn render_list(&self, list: Rect, buf: &mut Buffer, cx: &RenderCtx<'_>) {
        let t = cx.theme;
        let w = list.width as usize;
        let rows_per = if list.height >= 6 { 2 } else { 1 };
        let visible = (list.height / rows_per) as usize;
        let offset = scroll_to(self.selected, self.offset.get(), visible, self.len());
        self.offset.set(offset);
        for k in 0..visible {
            let i = offset + k;
            if i >= self.len() {
                break;
            }
            let ry = list.y + (k as u16) * rows_per;
            let (head, body) = match self.mode {
                Mode::Text => hit_lines(&self.results[i], w, t),
                Mode::Symbols => symbol_lines(&self.symbols[i], w, t),
            };
            buf.set_line(list.x, ry, &head, list.width);
            if rows_per == 2 {
                buf.set_line(list.x, ry + 1, &body, list.width);
            }
            if i == self.selected {
                let sel = if cx.focused { t.style(Slot::Selection) } else { t.style(Slot::SelectionUnfocused) };
                buf.set_style(Rect { y: ry, height: rows_per, ..list }, sel);
            }
        }
    }

    fn render_preview(&self, area: Rect, buf: &mut Buffer, cx: &RenderCtx<'_>) {
        let t = cx.theme;
        if area.height == 0 {
            return;
        }
        let title = match &self.preview {
            Some(d) => preview_title(d, area.width.saturating_sub(4) as usize),
            None => " Preview ".into(),
        };
        let block = frame(title, false, t);
        let inner = block.inner(area);
        block.render(area, buf);
        match (&self.preview, &self.preview_error) {
            (_, Some(e)) => {
                buf.set_stringn(
                    inner.x + 1,
                    inner.y,
                    truncate(e, inner.width.saturating_sub(1) as usize),
                    inner.width as usize,
                    t.style(Slot::Error),
                );
            }
            (Some(doc), None) => doc.render(inner, buf, t, self.preview_scroll),
            (None, None) => {
                if self.len() > 0 {
                    buf.set_stringn(inner.x + 1, inner.y, "loading…", inner.width as usize, t.style(Slot::Muted));
                }
            }
        }
    }
}

/// The preview frame's title in `max` cells: the file, the hit's lines as the list names them
/// and how long the file is (`src/session.py:1-4 of 4 lines`); the path gives way first. The
/// number was the first matched line beside the file's length (`:3 (4 lines)` for a hit listed
/// as `:1-4`).
fn preview_title(d: &PreviewDoc, max: usize) -> String {
    let (a, b) = d.hit;
    let at = if a == b || b == 0 { format!(":{a}") } else { format!(":{a}-{b}") };
    let tail = format!("{at} of {}", widgets::count(d.total_lines as u64, "line", "lines"));
    format!(" {}{tail} ", truncate_left(&d.path, max.saturating_sub(width(&tail) + 2)))
}

/// The two lines of a text hit: location, then the best snippet line with matches emphasised.
fn hit_lines(hit: &SearchHit, w: usize, t: &crate::tui::theme::Theme) -> (Line<'static>, Line<'static>) {
    let loc = if hit.line_start == hit.line_end {
        format!(":{}", hit.line_start)
    } else {
        format!(":{}-{}", hit.line_start, hit.line_end)
    };
    let mark = match (hit.gone, hit.stale) {
        (true, _) => " (gone from disk)",
        (false, true) => " (changed on disk)",
        _ => "",
    };
    let tail = format!(" {}{mark}", hit.lang);
    let path_w = w.saturating_sub(width(&loc) + width(&tail) + 1);
    let head = Line::from(vec![
        Span::styled(format!(" {}", truncate_left(&hit.path, path_w)), t.style(Slot::SearchPath)),
        Span::styled(loc, t.style(Slot::SearchLineNumber)),
        Span::styled(tail, t.style(if hit.stale { Slot::SearchStale } else { Slot::SearchLang })),
    ]);
    let line_no = best_line(hit);
    let idx = line_no.saturating_sub(hit.snippet_line_start) as usize;
    let text = hit.snippet.lines().nth(idx).or_else(|| hit.snippet.lines().next()).unwrap_or("");
    // A hit matched by its path alone starts at a line that may be blank: show the first one
    // that says something.
    let blank = text.trim().is_empty();
    let text = if blank { hit.snippet.lines().find(|l| !l.trim().is_empty()).unwrap_or("") } else { text };
    let mut ranges: Vec<(usize, usize)> =
        hit.highlights.iter().filter(|h| h.line == line_no && !blank).map(|h| (h.start, h.end)).collect();
    ranges.sort_unstable();
    let lead = text.len() - text.trim_start().len();
    let mut spans = vec![Span::raw("   ")];
    let mut pos = lead;
    for (a, b) in ranges {
        if a < pos || b > text.len() || !text.is_char_boundary(a) || !text.is_char_boundary(b) {
            continue;
        }
        spans.push(Span::styled(crate::tui::highlight::sanitize(&text[pos..a]), t.style(Slot::SearchSnippet)));
        spans.push(Span::styled(crate::tui::highlight::sanitize(&text[a..b]), t.style(Slot::SearchMatch)));
        pos = b;
    }
    if pos < text.len() && text.is_char_boundary(pos) {
        spans.push(Span::styled(crate::tui::highlight::sanitize(&text[pos..]), t.style(Slot::SearchSnippet)));
    }
    (head, Line::from(widgets::truncate_spans(spans, w)))
}

/// The two lines of a symbol hit.
fn symbol_lines(s: &SymbolHit, w: usize, t: &crate::tui::theme::Theme) -> (Line<'static>, Line<'static>) {
    let head = Line::from(vec![
        Span::styled(format!(" {} ", s.kind), t.style(Slot::SearchLang)),
        Span::styled(s.name.clone(), t.style(Slot::SearchPath)),
        Span::styled(format!("  {}:{}", truncate_left(&s.path, w / 2), s.line_start), t.style(Slot::SearchLineNumber)),
    ]);
    (head, Line::styled(format!("   {}", fit(&s.signature, w.saturating_sub(3))), t.style(Slot::SearchSnippet)))
}

impl SearchPane {
    /// A first page of results (or the error) for request `seq`, unless a later one is shown.
    fn show_results(&mut self, seq: u64, result: &Result<SearchResponse, String>, cx: &mut Cx<'_>) {
        if seq < self.shown_seq {
            return;
        }
        self.in_flight = seq < self.seq;
        self.shown_seq = seq;
        self.more_in_flight = false;
        self.offset.set(0);
        self.selected = 0;
        self.pinned = None;
        match result {
            Ok(resp) => {
                self.error = None;
                self.results = resp.results.clone();
                self.results_query = resp.query.clone();
                self.results_note = resp.note.clone();
                self.total_hits = resp.total_hits;
                self.confidence = resp.confidence;
                self.took_ms = resp.timing_ms.total;
                self.next_cursor = resp.next_cursor.clone();
                if self.results.is_empty() {
                    self.clear_preview();
                } else {
                    self.request_preview(cx);
                }
            }
            Err(e) => {
                self.results.clear();
                self.results_query = self.query.text().to_string();
                self.results_note = None;
                self.error = Some(e.clone());
                self.clear_preview();
            }
        }
    }

    /// Symbol hits (or the error) for request `seq`, unless a later one is shown.
    fn show_symbols(&mut self, seq: u64, result: &Result<Vec<SymbolHit>, String>, total: usize, cx: &mut Cx<'_>) {
        if seq < self.shown_seq {
            return;
        }
        self.shown_seq = seq;
        self.in_flight = seq < self.seq;
        self.selected = 0;
        self.pinned = None;
        match result {
            Ok(hits) => {
                self.symbols = hits.clone();
                self.symbols_total = total;
                self.error = None;
                self.results_query = self.query.text().to_string();
                self.results_note = None;
                if self.symbols.is_empty() {
                    // No symbol is selected: no preview of an earlier one either.
                    self.clear_preview();
                } else {
                    self.request_preview(cx);
                }
            }
            Err(e) => {
                self.symbols.clear();
                self.error = Some(e.clone());
                self.clear_preview();
            }
        }
    }
}

impl Pane for SearchPane {
    fn id(&self) -> PaneId {
        PaneId::Search
    }

    fn typing(&self) -> bool {
        self.typing
    }

    fn text_field(&self) -> Option<bool> {
        Some(self.query.is_multi_line())
    }

    fn focus_text(&mut self) -> bool {
        self.typing = true;
        true
    }

    fn command(&mut self, cmd: Command, cx: &mut Cx<'_>) -> bool {
        let page = (self.areas.get().results.height / 2).max(1) as isize;
        let sel = self.selected as isize;
        match cmd {
            Command::NextResult | Command::Down => self.select(sel + 1, cx),
            Command::PrevResult | Command::Up => self.select(sel - 1, cx),
            Command::PageDown => self.select(sel + page, cx),
            Command::PageUp => self.select(sel - page, cx),
            Command::Top => self.select(0, cx),
            Command::Bottom => self.select(isize::MAX / 2, cx),
            Command::OpenInEditor | Command::Select => self.open_selected(cx),
            Command::FocusQuery => self.typing = true,
            Command::LeaveQuery | Command::Back => self.typing = false,
            Command::ToggleSymbols => {
                self.mode = if self.mode == Mode::Text { Mode::Symbols } else { Mode::Text };
                self.selected = 0;
                // The other mode's selection is not this one's: its preview goes until results come.
                self.pinned = None;
                self.clear_preview();
                self.search_now(cx);
            }
            Command::FilterPath => {
                cx.emit(Action::Prompt(PromptKind::PathFilter(self.path_filter.clone().unwrap_or_default())))
            }
            Command::FilterLang => {
                cx.emit(Action::Prompt(PromptKind::LangFilter(self.lang_filter.clone().unwrap_or_default())))
            }
            Command::ClearFilters => {
                self.path_filter = None;
                self.lang_filter = None;
                self.search_now(cx);
            }
            Command::OpenImpact => match self.selected_path() {
                Some(path) => cx.emit(Action::OpenImpact { path }),
                None => cx.notify(crate::tui::action::Level::Warn, "select a result first"),
            },
            Command::PreviewDown => self.scroll_preview((self.areas.get().preview.height / 2).max(1) as i64),
            Command::PreviewUp => self.scroll_preview(-((self.areas.get().preview.height / 2).max(1) as i64)),
            _ => return false,
        }
        true
    }

    fn text(&mut self, key: &KeyEvent, cx: &mut Cx<'_>) -> bool {
        let before = self.query.text().to_string();
        if !self.query.edit(key) {
            return false;
        }
        if self.query.text() != before {
            if self.query.text().trim().is_empty() {
                self.search_now(cx);
            } else {
                self.due = Some(cx.now + cx.debounce);
            }
        }
        true
    }

    fn paste(&mut self, text: &str, cx: &mut Cx<'_>) {
        self.query.insert_str(text);
        self.due = Some(cx.now + cx.debounce);
    }

    fn tick(&mut self, cx: &mut Cx<'_>) {
        if self.due.is_some_and(|due| cx.now >= due) {
            self.search_now(cx);
        }
    }

    fn deadline(&self) -> Option<Instant> {
        self.due
    }

    fn engine(&mut self, event: &EngineEvent, cx: &mut Cx<'_>) {
        match event {
            EngineEvent::SearchResults { seq, more: false, result } => self.show_results(*seq, result, cx),
            EngineEvent::SearchResults { seq, more: true, result } => {
                self.more_in_flight = false;
                if *seq != self.shown_seq {
                    return;
                }
                if let Ok(resp) = result {
                    self.results.extend(resp.results.iter().cloned());
                    self.next_cursor = resp.next_cursor.clone();
                }
            }
            EngineEvent::SymbolResults { seq, result, total } => self.show_symbols(*seq, result, *total, cx),
            EngineEvent::Preview { seq, result } => {
                if *seq != self.preview_seq {
                    return;
                }
                match result {
                    Ok(doc) => {
                        self.preview = Some(doc.clone());
                        self.preview_error = None;
                    }
                    Err(e) => {
                        self.preview = None;
                        self.preview_error = Some(e.clone());
                    }
                }
            }
            EngineEvent::IndexStarted { repo } if repo == cx.repo => {
                self.indexing = true;
                self.index_phase.clear();
            }
            EngineEvent::IndexProgress { repo, progress } if repo == cx.repo && self.indexing => {
                let before = std::mem::replace(&mut self.index_phase, progress.phase.clone());
                // A commit landed: fill in a query that found nothing yet, and once more when a
                // large first index turns searchable over every file.
                let landed = before == "committing" && progress.phase != "committing";
                let whole = progress.phase == "parsing" && before != "parsing" && landed;
                let empty = self.results.is_empty() || self.error.is_some();
                if landed && (empty || whole) && !self.query.text().trim().is_empty() {
                    self.search_now(cx);
                }
            }
            // The watcher re-indexed files these hits show: mark them as a search over the
            // changed files would (their lines may have moved); `r` or a keystroke searches anew.
            EngineEvent::Watch { repo, activity: WatchActivity::Applied { paths } } if repo == cx.repo => {
                let mut selected_changed = false;
                for (i, hit) in self.results.iter_mut().enumerate() {
                    if !hit.stale && paths.contains(&hit.path) {
                        hit.stale = true;
                        selected_changed |= i == self.selected;
                    }
                }
                if selected_changed && self.mode != Mode::Symbols {
                    self.request_preview(cx);
                }
            }
            EngineEvent::IndexFinished { repo, result } if repo == cx.repo => {
                self.indexing = false;
                self.index_phase.clear();
                // Fill in: run the query again over the new generation.
                if result.is_ok() && !self.query.text().trim().is_empty() {
                    self.search_now(cx);
                }
            }
            _ => {}
        }
    }

    fn mouse(&mut self, event: &MouseEvent, _area: Rect, cx: &mut Cx<'_>) {
        let areas = self.areas.get();
        let (col, row) = (event.column, event.row);
        match event.kind {
            MouseEventKind::Down(_) if widgets::contains(areas.query, col, row) => self.typing = true,
            MouseEventKind::Down(_) if widgets::contains(areas.results, col, row) => {
                // Selecting a hit keeps the mode: typing goes on in the query box if it was there.
                let inner_y = areas.results.y + 1 + self.note_rows.get();
                let rows_per = if areas.results.height.saturating_sub(2) >= 6 { 2 } else { 1 };
                if row >= inner_y {
                    let k = ((row - inner_y) / rows_per) as usize;
                    self.select((self.offset.get() + k) as isize, cx);
                }
            }
            MouseEventKind::ScrollDown if widgets::contains(areas.preview, col, row) => self.scroll_preview(3),
            MouseEventKind::ScrollUp if widgets::contains(areas.preview, col, row) => self.scroll_preview(-3),
            MouseEventKind::ScrollDown => self.select(self.selected as isize + 1, cx),
            MouseEventKind::ScrollUp => self.select(self.selected as isize - 1, cx),
            _ => {}
        }
    }

    fn moves(&self) -> &'static [Command] {
        super::LIST_MOVES
    }

    fn hints(&self) -> Vec<(Command, &'static str)> {
        vec![(Command::OpenInEditor, "edit"), (Command::ToggleSymbols, "symbols"), (Command::OpenImpact, "impact")]
    }

    fn render(&self, area: Rect, buf: &mut Buffer, cx: &RenderCtx<'_>) -> Option<(u16, u16)> {
        let areas = layout(area);
        self.areas.set(areas);
        let cursor = self.render_query(areas.query, buf, cx);
        self.render_results(areas.results, buf, cx);
        self.render_preview(areas.preview, buf, cx);
        cursor
    }
}

/// Writes `text` wrapped into `inner` from row `y` (cut at its bottom); returns the rows it took.
fn note_at(buf: &mut Buffer, inner: Rect, y: u16, text: &str, style: Style) -> u16 {
    let w = inner.width as usize;
    let lines = widgets::wrap(text, w.saturating_sub(1));
    for (k, l) in lines.iter().enumerate() {
        if y + (k as u16) < inner.y + inner.height {
            buf.set_stringn(inner.x + 1, y + k as u16, l, w - 1, style);
        }
    }
    lines.len() as u16
}
