//! Streaming markdown for chat answers, parsed by pulldown-cmark (CommonMark plus tables and
//! task lists), so nesting, tables and code fences follow the standard. Text arrives token by
//! token; only complete lines are committed and the committed text is parsed whole again (a
//! later line can turn a paragraph into a table or a setext heading), so half-written markup
//! (`**bo`, an unclosed code fence) never flickers on screen. Each source line stays one
//! screen line; blocks separated by a blank line keep one. Everything becomes classes the
//! theme colours at draw time; code blocks are highlighted by language and citations like
//! `[2]` become selectable.

use super::width;
use crate::tui::highlight::{sanitize, LineHighlighter, SyntaxClass};
use crate::tui::theme::{Slot, Theme};
use pulldown_cmark::{Alignment, CodeBlockKind, Event, Options, Parser, Tag, TagEnd};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use std::ops::Range;
use unicode_width::UnicodeWidthChar;

/// What a run of chat text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MdClass {
    /// Body text.
    Plain,
    /// A heading line.
    Heading,
    /// `•` or `1.` of a list item (and a task's `[x]`).
    ListMarker,
    /// Inline code.
    Code,
    /// `*emphasis*`.
    Emphasis,
    /// `**strong**` (and a table's header cells).
    Strong,
    /// `> quoted` text.
    Quote,
    /// A citation number (`[n]`, 1-based).
    Citation(usize),
    /// The gutter of a code block, a table's rules, a link's address: muted.
    CodeGutter,
    /// Highlighted code inside a fenced block.
    Syntax(SyntaxClass),
}

/// A committed line: classed runs of text.
pub type MdLine = Vec<(MdClass, String)>;

/// Accumulates streamed text and commits parsed lines.
pub struct MarkdownStream {
    /// The complete lines received so far.
    source: String,
    /// The line still being written.
    pending: String,
    /// `source`, rendered.
    lines: Vec<MdLine>,
    /// The highlighter of a code fence still open at the end of `source`, for the preview.
    code: Option<LineHighlighter>,
}

impl std::fmt::Debug for MarkdownStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MarkdownStream").field("pending", &self.pending).field("lines", &self.lines.len()).finish()
    }
}

impl Default for MarkdownStream {
    fn default() -> Self {
        Self::new()
    }
}

impl MarkdownStream {
    /// An empty stream.
    pub fn new() -> Self {
        MarkdownStream { source: String::new(), pending: String::new(), lines: Vec::new(), code: None }
    }

    /// Parses a whole text at once (finished messages).
    pub fn parse(text: &str) -> Vec<MdLine> {
        render(text).lines
    }

    /// Adds streamed text; complete lines are committed.
    pub fn push(&mut self, text: &str) {
        self.pending.push_str(text);
        if let Some(nl) = self.pending.rfind('\n') {
            self.source.extend(self.pending.drain(..=nl));
            self.rerender();
        }
    }

    /// Lines committed so far.
    pub fn lines(&self) -> &[MdLine] {
        &self.lines
    }

    /// True while part of a line waits for its end.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The line still being written, for display while it streams: parsed on its own, with
    /// markup that is not closed yet left out (so `**bo` shows as `bo`, never as stars), or
    /// highlighted as code inside an open fence. `None` when there is nothing to show.
    pub fn pending_preview(&self) -> Option<MdLine> {
        let text = self.pending.trim_end_matches('\r');
        if text.is_empty() || text.trim_start().starts_with("``") || text.trim_start().starts_with("~~~") {
            return None;
        }
        if let Some(h) = &self.code {
            let mut h = h.clone();
            let mut out: MdLine = vec![(MdClass::CodeGutter, "│ ".into())];
            out.extend(h.line(text).into_iter().map(|(c, t)| (MdClass::Syntax(c), t)));
            return Some(out);
        }
        let line: MdLine = render(text)
            .lines
            .into_iter()
            .next()?
            .into_iter()
            .map(|(class, t)| if class == MdClass::Plain { (class, t.replace(['*', '`'], "")) } else { (class, t) })
            .filter(|(_, t)| !t.is_empty())
            .collect();
        (!line.is_empty()).then_some(line)
    }

    /// Commits the last partial line and returns everything.
    pub fn finish(mut self) -> Vec<MdLine> {
        if !self.pending.is_empty() {
            let rest = std::mem::take(&mut self.pending);
            self.source.push_str(&rest);
            self.rerender();
        }
        self.lines
    }

    fn rerender(&mut self) {
        let r = render(&self.source);
        self.lines = r.lines;
        self.code = if fence_open(&self.source) { r.last_code } else { None };
    }
}

/// True when `source` ends inside a fenced code block (its closing fence has not arrived).
fn fence_open(source: &str) -> bool {
    let mut open: Option<(char, usize)> = None;
    for line in source.lines() {
        let t = line.trim_start();
        if line.len() - t.len() > 3 && open.is_none() {
            continue;
        }
        let Some(c) = t.chars().next().filter(|c| *c == '`' || *c == '~') else { continue };
        let n = t.chars().take_while(|x| *x == c).count();
        if n < 3 {
            continue;
        }
        match open {
            None => open = Some((c, n)),
            Some((oc, on)) if oc == c && n >= on && t[n..].trim().is_empty() => open = None,
            Some(_) => {}
        }
    }
    open.is_some()
}

/// A file extension for a fence language, so the grammar lookup finds it.
fn ext_for(lang: &str) -> &str {
    match lang {
        "rust" => "rs",
        "python" | "py" => "py",
        "javascript" | "js" => "js",
        "typescript" | "ts" => "ts",
        "shell" | "sh" | "bash" | "console" => "sh",
        "c++" | "cpp" => "cpp",
        "csharp" | "c#" => "cs",
        "ruby" => "rb",
        "golang" | "go" => "go",
        "markdown" | "md" => "md",
        other => other,
    }
}

/// What [`render`] produces.
struct Rendered {
    lines: Vec<MdLine>,
    /// The highlighter of the last code block, after its last line.
    last_code: Option<LineHighlighter>,
}

/// A table being collected: rows of cells, the header rows first.
#[derive(Default)]
struct Table {
    aligns: Vec<Alignment>,
    rows: Vec<Vec<MdLine>>,
    header_rows: usize,
    row: Vec<MdLine>,
    cell: MdLine,
}

/// Walks pulldown-cmark's events, building screen lines.
struct Renderer<'s> {
    source: &'s str,
    line_starts: Vec<usize>,
    lines: Vec<MdLine>,
    /// The line being built (empty until its first run, which adds the prefix).
    line: MdLine,
    /// Open inline spans (emphasis, strong); the innermost classes text.
    inline: Vec<MdClass>,
    heading: bool,
    quote: usize,
    /// Open lists: the next number of an ordered one.
    lists: Vec<Option<u64>>,
    /// An item's marker, waiting for the item's first line.
    marker: Option<String>,
    /// The width of each open item's marker: its continuation lines' indent.
    hangs: Vec<usize>,
    /// Inside a code block: its highlighter and the code so far.
    code: Option<(LineHighlighter, String)>,
    last_code: Option<LineHighlighter>,
    table: Option<Table>,
    links: Vec<String>,
    /// The source line the last block ended on.
    prev_line: Option<usize>,
}

/// Renders markdown to classed screen lines.
fn render(source: &str) -> Rendered {
    let mut r = Renderer {
        source,
        line_starts: std::iter::once(0).chain(source.match_indices('\n').map(|(i, _)| i + 1)).collect(),
        lines: Vec::new(),
        line: Vec::new(),
        inline: Vec::new(),
        heading: false,
        quote: 0,
        lists: Vec::new(),
        marker: None,
        hangs: Vec::new(),
        code: None,
        last_code: None,
        table: None,
        links: Vec::new(),
        prev_line: None,
    };
    let options = Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS;
    for (event, range) in Parser::new_ext(source, options).into_offset_iter() {
        r.event(event, range);
    }
    r.flush();
    Rendered { lines: r.lines, last_code: r.last_code }
}

impl Renderer<'_> {
    fn event(&mut self, event: Event<'_>, range: Range<usize>) {
        match event {
            Event::Start(tag) => self.start(tag, range),
            Event::End(tag) => self.end(tag, range),
            Event::Text(t) => match self.code.as_mut() {
                Some((_, code)) => code.push_str(&t),
                None => self.text(&t),
            },
            Event::Code(t) => self.emit(MdClass::Code, sanitize(&t)),
            // Shown as written: a block line by line, inline HTML in the text.
            Event::Html(t) => {
                for part in t.lines() {
                    self.emit(MdClass::Plain, sanitize(part));
                    self.flush();
                }
            }
            Event::InlineHtml(t) => self.emit(MdClass::Plain, sanitize(&t)),
            Event::SoftBreak | Event::HardBreak => self.flush(),
            Event::Rule => {
                self.block_gap(&range);
                self.flush();
                self.emit(MdClass::CodeGutter, "─".repeat(24));
                self.flush();
                self.block_end(&range);
            }
            Event::TaskListMarker(done) => {
                self.emit(MdClass::ListMarker, if done { "[x] " } else { "[ ] " }.to_string())
            }
            Event::FootnoteReference(t) | Event::InlineMath(t) | Event::DisplayMath(t) => self.text(&t),
        }
    }

    fn start(&mut self, tag: Tag<'_>, range: Range<usize>) {
        match tag {
            Tag::Paragraph | Tag::HtmlBlock => self.block_gap(&range),
            Tag::Heading { .. } => {
                self.block_gap(&range);
                self.flush();
                self.heading = true;
            }
            Tag::BlockQuote(_) => {
                self.block_gap(&range);
                self.flush();
                self.quote += 1;
            }
            Tag::CodeBlock(kind) => {
                self.block_gap(&range);
                self.flush();
                let lang = match &kind {
                    CodeBlockKind::Fenced(info) => info.split_whitespace().next().unwrap_or("").to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                let h = LineHighlighter::for_file(&format!("x.{}", ext_for(&lang)), &lang);
                self.code = Some((h, String::new()));
            }
            Tag::List(first) => {
                self.block_gap(&range);
                self.flush();
                self.lists.push(first);
            }
            Tag::Item => {
                self.block_gap(&range);
                self.flush();
                let pad = "  ".repeat(self.lists.len().saturating_sub(1));
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{pad}{n}. ");
                        *n += 1;
                        m
                    }
                    _ => format!("{pad}• "),
                };
                self.hangs.push(width(&marker));
                self.marker = Some(marker);
            }
            Tag::Table(aligns) => {
                self.block_gap(&range);
                self.flush();
                self.table = Some(Table { aligns, ..Table::default() });
            }
            Tag::TableHead | Tag::TableRow | Tag::TableCell => {}
            Tag::Emphasis => self.inline.push(MdClass::Emphasis),
            Tag::Strong => self.inline.push(MdClass::Strong),
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => self.links.push(dest_url.to_string()),
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd, range: Range<usize>) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock => {
                self.flush();
                self.block_end(&range);
            }
            TagEnd::Heading(_) => {
                self.flush();
                self.heading = false;
                self.block_end(&range);
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.quote = self.quote.saturating_sub(1);
                self.block_end(&range);
            }
            TagEnd::CodeBlock => {
                if let Some((mut h, code)) = self.code.take() {
                    for line in code.lines() {
                        let mut runs: MdLine = vec![(MdClass::CodeGutter, "│ ".into())];
                        runs.extend(h.line(line).into_iter().map(|(c, t)| (MdClass::Syntax(c), t)));
                        self.line_with_prefix(runs);
                    }
                    self.last_code = Some(h);
                }
                self.block_end(&range);
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                self.block_end(&range);
            }
            TagEnd::Item => {
                if self.marker.is_some() {
                    // An empty item still shows its marker.
                    self.start_line();
                }
                self.flush();
                self.marker = None;
                self.hangs.pop();
                self.block_end(&range);
            }
            TagEnd::TableCell => {
                if let Some(t) = self.table.as_mut() {
                    let cell = finish_runs(std::mem::take(&mut t.cell));
                    t.row.push(cell);
                }
            }
            TagEnd::TableHead | TagEnd::TableRow => {
                if let Some(t) = self.table.as_mut() {
                    let row = std::mem::take(&mut t.row);
                    t.rows.push(row);
                    if tag == TagEnd::TableHead {
                        t.header_rows = t.rows.len();
                    }
                }
            }
            TagEnd::Table => {
                if let Some(t) = self.table.take() {
                    for row in layout_table(&t) {
                        self.line_with_prefix(row);
                    }
                }
                self.block_end(&range);
            }
            TagEnd::Emphasis | TagEnd::Strong => {
                self.inline.pop();
            }
            TagEnd::Link | TagEnd::Image => {
                if let Some(url) = self.links.pop() {
                    let shown: String = self.line.iter().map(|(_, t)| t.as_str()).collect();
                    if !url.is_empty() && !shown.ends_with(&url) {
                        self.emit(MdClass::CodeGutter, format!(" ({})", sanitize(&url)));
                    }
                }
            }
            _ => {}
        }
    }

    /// The line a source offset is on.
    fn line_of(&self, offset: usize) -> usize {
        self.line_starts.partition_point(|&s| s <= offset).saturating_sub(1)
    }

    /// Before a block: one empty line when the source left a blank line since the last block.
    fn block_gap(&mut self, range: &Range<usize>) {
        let start = self.line_of(range.start);
        if let Some(prev) = self.prev_line {
            if start >= prev + 2 {
                self.flush();
                if !self.lines.is_empty() {
                    self.lines.push(Vec::new());
                }
            }
        }
        self.prev_line = Some(self.prev_line.map_or(start, |p| p.max(start)));
    }

    /// After a block: where it ended.
    fn block_end(&mut self, range: &Range<usize>) {
        let end = self.source[..range.end].trim_end_matches('\n').len();
        self.prev_line = Some(self.line_of(end.saturating_sub(1).max(range.start)));
    }

    /// Text in the current inline context.
    fn text(&mut self, t: &str) {
        let class = if self.heading {
            MdClass::Heading
        } else if let Some(c) = self.inline.last() {
            *c
        } else if self.quote > 0 {
            MdClass::Quote
        } else {
            MdClass::Plain
        };
        self.emit(class, sanitize(t));
    }

    /// Adds a run to the current line (or table cell), starting the line when it is empty.
    fn emit(&mut self, class: MdClass, text: String) {
        if text.is_empty() {
            return;
        }
        if let Some(t) = self.table.as_mut() {
            let class = if t.header_rows == 0 && class == MdClass::Plain && t.rows.is_empty() {
                MdClass::Strong
            } else {
                class
            };
            t.cell.push((class, text));
            return;
        }
        if self.line.is_empty() {
            self.start_line();
        }
        self.line.push((class, text));
    }

    /// The prefix every line carries: quote bars, then a list marker or its hanging indent.
    fn prefix(&mut self) -> MdLine {
        let mut out = Vec::new();
        if self.quote > 0 {
            out.push((MdClass::Quote, "▎ ".repeat(self.quote)));
        }
        if let Some(marker) = self.marker.take() {
            out.push((MdClass::ListMarker, marker));
        } else if let Some(hang) = self.hangs.last().filter(|h| **h > 0) {
            out.push((MdClass::Plain, " ".repeat(*hang)));
        }
        out
    }

    fn start_line(&mut self) {
        self.line = self.prefix();
    }

    /// A whole line (code, a table row) with the current prefix.
    fn line_with_prefix(&mut self, runs: MdLine) {
        self.flush();
        let mut line = self.prefix();
        line.extend(runs);
        self.lines.push(finish_runs(line));
    }

    /// Ends the current line, if it has anything.
    fn flush(&mut self) {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.lines.push(finish_runs(line));
        }
    }
}

/// Merges neighbouring runs of one class and turns `[n]` in plain text into citations.
fn finish_runs(runs: MdLine) -> MdLine {
    let mut merged: MdLine = Vec::new();
    for (class, text) in runs {
        match merged.last_mut() {
            Some((c, t)) if *c == class && !matches!(class, MdClass::ListMarker | MdClass::CodeGutter) => {
                t.push_str(&text)
            }
            _ => merged.push((class, text)),
        }
    }
    merged.into_iter().flat_map(|(class, text)| citations(class, text)).collect()
}

/// Splits `[n]` (n > 0) out of plain or quoted text as citations.
fn citations(class: MdClass, text: String) -> MdLine {
    if !matches!(class, MdClass::Plain | MdClass::Quote) || !text.contains('[') {
        return vec![(class, text)];
    }
    let mut out = Vec::new();
    let mut rest = text.as_str();
    let mut plain = String::new();
    while let Some(open) = rest.find('[') {
        let after = &rest[open + 1..];
        let num = after.find(']').and_then(|close| after[..close].parse::<usize>().ok().map(|n| (n, close)));
        match num.filter(|(n, close)| *n > 0 && after[..*close].bytes().all(|b| b.is_ascii_digit())) {
            Some((n, close)) => {
                plain.push_str(&rest[..open]);
                if !plain.is_empty() {
                    out.push((class, std::mem::take(&mut plain)));
                }
                out.push((MdClass::Citation(n), format!("[{n}]")));
                rest = &after[close + 1..];
            }
            None => {
                plain.push_str(&rest[..=open]);
                rest = after;
            }
        }
    }
    plain.push_str(rest);
    if !plain.is_empty() {
        out.push((class, plain));
    }
    out
}

/// A table as lines: cells padded to their column's width, `│` between them, a rule under
/// the header.
fn layout_table(t: &Table) -> Vec<MdLine> {
    let cols = t.rows.iter().map(Vec::len).max().unwrap_or(0);
    let cell_width = |c: &MdLine| c.iter().map(|(_, s)| width(s)).sum::<usize>();
    let widths: Vec<usize> =
        (0..cols).map(|i| t.rows.iter().filter_map(|r| r.get(i)).map(cell_width).max().unwrap_or(0)).collect();
    let mut out = Vec::new();
    for (n, row) in t.rows.iter().enumerate() {
        let mut line: MdLine = Vec::new();
        for (i, w) in widths.iter().enumerate() {
            if i > 0 {
                line.push((MdClass::CodeGutter, " │ ".into()));
            }
            let cell = row.get(i).cloned().unwrap_or_default();
            let gap = w.saturating_sub(cell_width(&cell));
            let (left, right) = match t.aligns.get(i) {
                Some(Alignment::Right) => (gap, 0),
                Some(Alignment::Center) => (gap / 2, gap - gap / 2),
                _ => (0, gap),
            };
            if left > 0 {
                line.push((MdClass::Plain, " ".repeat(left)));
            }
            line.extend(cell);
            if right > 0 && i + 1 < widths.len() {
                line.push((MdClass::Plain, " ".repeat(right)));
            }
        }
        out.push(line);
        if n + 1 == t.header_rows {
            let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
            out.push(vec![(MdClass::CodeGutter, rule.join("─┼─"))]);
        }
    }
    out
}

/// The theme style of a class; `selected` is the highlighted citation number.
pub fn style_of(class: MdClass, theme: &Theme, selected: Option<usize>) -> Style {
    match class {
        MdClass::Plain => theme.style(Slot::Text),
        MdClass::Heading => theme.style(Slot::MdHeading),
        MdClass::ListMarker => theme.style(Slot::MdListMarker),
        MdClass::Code => theme.style(Slot::MdCode),
        MdClass::Emphasis => theme.style(Slot::MdEmphasis),
        MdClass::Strong => theme.style(Slot::MdStrong),
        MdClass::Quote => theme.style(Slot::MdQuote),
        MdClass::Citation(n) if selected == Some(n) => theme.style(Slot::MdCitationSelected),
        MdClass::Citation(_) => theme.style(Slot::MdCitation),
        MdClass::CodeGutter => theme.style(Slot::Muted),
        MdClass::Syntax(c) => c.slot().map(|s| theme.style(s)).unwrap_or_else(|| theme.style(Slot::Text)),
    }
}

/// Wraps a styled line to `w` cells at spaces. A list item's or quote's continuation rows hang
/// under its text: the leading marker (`• `, `1. `, `[x] `) becomes blank space and quote bars
/// repeat, so a wrapped bullet never starts at the left edge.
pub fn wrap_runs(runs: &[(MdClass, String)], w: usize) -> Vec<Vec<(MdClass, String)>> {
    // A quote's text may share the bars' run: split the bars off first.
    let mut split: Vec<(MdClass, String)> = Vec::with_capacity(runs.len() + 1);
    for (c, t) in runs {
        let bars = t.len() - t.trim_start_matches(['▎', ' ']).len();
        if *c == MdClass::Quote && bars > 0 && bars < t.len() {
            split.push((*c, t[..bars].to_string()));
            split.push((*c, t[bars..].to_string()));
        } else {
            split.push((*c, t.clone()));
        }
    }
    let runs = split.as_slice();
    let is_bars = |t: &str| t.chars().all(|ch| ch == '▎' || ch == ' ');
    let k = runs
        .iter()
        .take_while(|(c, t)| *c == MdClass::ListMarker || t.trim().is_empty() || (*c == MdClass::Quote && is_bars(t)))
        .count();
    let hang: usize = runs[..k].iter().map(|(_, t)| width(t)).sum();
    if k == 0 || k == runs.len() || hang == 0 || hang * 2 > w {
        return wrap_flat(runs, w);
    }
    let mut rows = wrap_flat(&runs[k..], w - hang);
    let continuation: Vec<(MdClass, String)> = runs[..k]
        .iter()
        .map(|(c, t)| if *c == MdClass::Quote { (*c, t.clone()) } else { (MdClass::Plain, " ".repeat(width(t))) })
        .collect();
    for (i, row) in rows.iter_mut().enumerate() {
        let lead = if i == 0 { runs[..k].to_vec() } else { continuation.clone() };
        row.splice(0..0, lead);
    }
    rows
}

/// Wraps classed runs to `w` cells, breaking at spaces where possible.
fn wrap_flat<C: Copy>(runs: &[(C, String)], w: usize) -> Vec<Vec<(C, String)>> {
    let w = w.max(1);
    let mut rows: Vec<Vec<(C, String)>> = vec![Vec::new()];
    let mut used = 0;
    for (class, text) in runs {
        // Split into words keeping the spaces attached to the end.
        let mut words: Vec<String> = Vec::new();
        let mut cur = String::new();
        for c in text.chars() {
            cur.push(c);
            if c == ' ' {
                words.push(std::mem::take(&mut cur));
            }
        }
        if !cur.is_empty() {
            words.push(cur);
        }
        for word in words {
            let ww = width(word.trim_end());
            if used + ww > w && used > 0 {
                rows.push(Vec::new());
                used = 0;
            }
            let mut word = word;
            if used == 0 {
                // Break a word longer than a row.
                while width(&word) > w {
                    let mut head = String::new();
                    let mut hw = 0;
                    for c in word.chars() {
                        let cw = c.width().unwrap_or(0);
                        if hw + cw > w {
                            break;
                        }
                        head.push(c);
                        hw += cw;
                    }
                    if head.is_empty() {
                        break;
                    }
                    word = word[head.len()..].to_string();
                    if let Some(row) = rows.last_mut() {
                        row.push((*class, head));
                    }
                    rows.push(Vec::new());
                }
            }
            used += width(&word);
            if let Some(row) = rows.last_mut() {
                row.push((*class, word));
            }
        }
    }
    rows
}

/// One wrapped row as a styled line.
pub fn to_line(row: &[(MdClass, String)], theme: &Theme, selected: Option<usize>) -> Line<'static> {
    Line::from(row.iter().map(|(c, t)| Span::styled(t.clone(), style_of(*c, theme, selected))).collect::<Vec<_>>())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(line: &MdLine) -> String {
        line.iter().map(|(_, t)| t.as_str()).collect()
    }

    #[test]
    fn wrapped_list_items_and_quotes_hang_under_their_text() {
        let lines =
            MarkdownStream::parse("- docdex llm-setup installs and configures one\n\n> a quoted line that wraps");
        let rows: Vec<String> =
            wrap_runs(&lines[0], 24).iter().map(|r| r.iter().map(|(_, t)| t.as_str()).collect()).collect();
        assert_eq!(rows[0], "• docdex llm-setup ");
        assert!(rows[1..].iter().all(|r| r.starts_with("  ") && !r.starts_with("   ")), "{rows:?}");
        let quote = lines.iter().find(|l| l.iter().any(|(c, _)| *c == MdClass::Quote)).expect("quote");
        let rows: Vec<String> =
            wrap_runs(quote, 14).iter().map(|r| r.iter().map(|(_, t)| t.as_str()).collect()).collect();
        assert!(rows.len() > 1 && rows.iter().all(|r| r.starts_with("▎ ")), "{rows:?}");
    }

    #[test]
    fn only_complete_lines_are_committed() {
        let mut s = MarkdownStream::new();
        s.push("# Sess");
        assert!(s.lines().is_empty());
        assert!(s.has_pending());
        s.push("ions\nThey **exp");
        assert_eq!(s.lines().len(), 1);
        assert_eq!(s.lines()[0], vec![(MdClass::Heading, "Sessions".to_string())]);
        s.push("ire** after `ttl` [1].\n");
        let l = &s.lines()[1];
        assert!(l.contains(&(MdClass::Strong, "expire".to_string())), "{l:?}");
        assert!(l.contains(&(MdClass::Code, "ttl".to_string())), "{l:?}");
        assert!(l.contains(&(MdClass::Citation(1), "[1]".to_string())), "{l:?}");
        assert_eq!(text(l), "They expire after ttl [1].");
    }

    #[test]
    fn the_line_being_written_shows_without_open_markup() {
        let mut s = MarkdownStream::new();
        s.push("Sessions **exp");
        let p = s.pending_preview().unwrap_or_default();
        assert_eq!(text(&p), "Sessions exp");
        s.push("ire** in `ttl`");
        let p = s.pending_preview().unwrap_or_default();
        assert!(p.contains(&(MdClass::Strong, "expire".to_string())), "{p:?}");
        assert!(p.contains(&(MdClass::Code, "ttl".to_string())), "{p:?}");
        s.push("\n```rust\nfn a(");
        let p = s.pending_preview().unwrap_or_default();
        assert_eq!(p[0].0, MdClass::CodeGutter);
        assert!(p.contains(&(MdClass::Syntax(SyntaxClass::Keyword), "fn".to_string())), "{p:?}");
        s.push(") {}\n``");
        assert_eq!(s.pending_preview(), None, "a fence being written shows nothing");
    }

    #[test]
    fn lists_quotes_and_code_blocks() {
        let lines = MarkdownStream::parse("- one\n  1. two\n> note\n```rust\nfn a() {}\n```\nafter");
        assert_eq!(lines[0][0], (MdClass::ListMarker, "• ".to_string()));
        assert_eq!(lines[1][0], (MdClass::ListMarker, "  1. ".to_string()), "a nested list is indented");
        assert_eq!(lines[2][0].0, MdClass::Quote);
        assert_eq!(lines[3][0], (MdClass::CodeGutter, "│ ".to_string()));
        assert!(lines[3].contains(&(MdClass::Syntax(SyntaxClass::Keyword), "fn".to_string())), "{:?}", lines[3]);
        assert_eq!(text(&lines[4]), "after");
        assert_eq!(lines.len(), 5, "fences are not shown");
    }

    #[test]
    fn nesting_follows_commonmark() {
        let md = "1. first\n   - inner *one*\n     more of it\n   - inner two\n2. second\n\n> quoted\n> > deeper [3]\n";
        let lines: Vec<String> = MarkdownStream::parse(md).iter().map(text).collect();
        assert_eq!(
            lines,
            [
                "1. first",
                "  • inner one",
                "    more of it",
                "  • inner two",
                "2. second",
                "",
                "▎ quoted",
                "▎ ▎ deeper [3]"
            ]
        );
        let deeper = &MarkdownStream::parse(md)[7];
        assert!(deeper.contains(&(MdClass::Citation(3), "[3]".to_string())), "{deeper:?}");
        // A code fence inside a list item keeps the item's indent; `~~~` fences work too.
        let code = MarkdownStream::parse("- run:\n\n  ~~~sh\n  ls -l\n  ~~~\n");
        assert_eq!(text(&code[2]), "  │ ls -l", "{code:?}");
    }

    #[test]
    fn tables_are_aligned_columns() {
        let md = "| file | hits |\n|:-----|-----:|\n| `a.rs` | 3 |\n| src/lib.rs | 12 |\n";
        let lines = MarkdownStream::parse(md);
        let rows: Vec<String> = lines.iter().map(text).collect();
        assert_eq!(rows, ["file       │ hits", "───────────┼─────", "a.rs       │    3", "src/lib.rs │   12"]);
        assert_eq!(lines[0][0], (MdClass::Strong, "file".to_string()), "header cells stand out");
        assert!(lines[2].contains(&(MdClass::Code, "a.rs".to_string())), "{:?}", lines[2]);
    }

    #[test]
    fn a_streamed_table_settles_when_its_rule_arrives() {
        let mut s = MarkdownStream::new();
        s.push("| a | b |\n");
        assert_eq!(text(&s.lines()[0]), "| a | b |", "one row alone is a paragraph");
        s.push("|---|---|\n| 1 | 2 |\n");
        let rows: Vec<String> = s.lines().iter().map(text).collect();
        assert_eq!(rows, ["a │ b", "──┼──", "1 │ 2"]);
    }

    #[test]
    fn unclosed_markup_stays_literal() {
        let l = &MarkdownStream::parse("a **b and `c")[0];
        assert_eq!(l, &vec![(MdClass::Plain, "a **b and `c".to_string())]);
        assert_eq!(text(&MarkdownStream::parse("[x] and [0]")[0]), "[x] and [0]");
    }

    #[test]
    fn wrapping_runs() {
        let runs = vec![(MdClass::Plain, "alpha beta ".to_string()), (MdClass::Code, "gamma".to_string())];
        let rows = wrap_runs(&runs, 11);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1], vec![(MdClass::Code, "gamma".to_string())]);
        let long = wrap_runs(&[(MdClass::Plain, "abcdefghij".to_string())], 4);
        assert_eq!(
            long.iter().map(|r| r.iter().map(|(_, t)| t.as_str()).collect::<String>()).collect::<Vec<_>>(),
            vec!["abcd", "efgh", "ij"]
        );
    }
}
