//! Streaming markdown for chat answers. Text arrives token by token; only
//! complete lines are parsed and committed (codex's approach), so half-written
//! markup (`**bo`, an unclosed code fence) never flickers on screen. Headings,
//! list items, quotes, inline code, emphasis, citations like `[2]` and fenced
//! code blocks (highlighted by language) are recognised; everything becomes
//! classes the theme colours at draw time.

use super::width;
use crate::tui::highlight::{sanitize, LineHighlighter, SyntaxClass};
use crate::tui::theme::{Slot, Theme};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// What a run of chat text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MdClass {
    /// Body text.
    Plain,
    /// A heading line.
    Heading,
    /// `•` or `1.` of a list item.
    ListMarker,
    /// Inline code.
    Code,
    /// `*emphasis*`.
    Emphasis,
    /// `**strong**`.
    Strong,
    /// `> quoted` text.
    Quote,
    /// A citation number (`[n]`, 1-based).
    Citation(usize),
    /// The gutter of a code block.
    CodeGutter,
    /// Highlighted code inside a fenced block.
    Syntax(SyntaxClass),
}

/// A committed line: classed runs of text.
pub type MdLine = Vec<(MdClass, String)>;

/// Accumulates streamed text and commits parsed lines.
pub struct MarkdownStream {
    pending: String,
    lines: Vec<MdLine>,
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
        MarkdownStream { pending: String::new(), lines: Vec::new(), code: None }
    }

    /// Parses a whole text at once (finished messages).
    pub fn parse(text: &str) -> Vec<MdLine> {
        let mut s = MarkdownStream::new();
        s.push(text);
        s.finish()
    }

    /// Adds streamed text; complete lines are committed.
    pub fn push(&mut self, text: &str) {
        self.pending.push_str(text);
        while let Some(nl) = self.pending.find('\n') {
            let line: String = self.pending[..nl].to_string();
            self.pending.replace_range(..=nl, "");
            self.commit(&line);
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

    /// The line still being written, for display while it streams: parsed like a complete line,
    /// with markup that is not closed yet left out (so `**bo` shows as `bo`, never as stars),
    /// or highlighted as code inside a fence. `None` when there is nothing to show.
    pub fn pending_preview(&self) -> Option<MdLine> {
        let text = self.pending.trim_end_matches('\r');
        if text.is_empty() || text.trim_start().starts_with("``") {
            return None;
        }
        if let Some(h) = &self.code {
            let mut h = h.clone();
            let mut out: MdLine = vec![(MdClass::CodeGutter, "│ ".into())];
            out.extend(h.line(text).into_iter().map(|(c, t)| (MdClass::Syntax(c), t)));
            return Some(out);
        }
        let line: MdLine = parse_line(text)
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
            self.commit(&rest);
        }
        self.lines
    }

    fn commit(&mut self, raw: &str) {
        let line = raw.trim_end_matches('\r');
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix("```") {
            if self.code.take().is_none() {
                let lang = rest.trim();
                self.code = Some(LineHighlighter::for_file(&format!("x.{}", ext_for(lang)), lang));
            }
            return;
        }
        if let Some(h) = self.code.as_mut() {
            let mut out: MdLine = vec![(MdClass::CodeGutter, "│ ".into())];
            out.extend(h.line(line).into_iter().map(|(c, t)| (MdClass::Syntax(c), t)));
            self.lines.push(out);
            return;
        }
        self.lines.push(parse_line(line));
    }
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

/// Parses one non-code line.
fn parse_line(line: &str) -> MdLine {
    let line = sanitize(line);
    let indent = line.len() - line.trim_start().len();
    let body = &line[indent..];
    let hashes = body.chars().take_while(|c| *c == '#').count();
    if (1..=6).contains(&hashes) && body[hashes..].starts_with(' ') {
        return vec![(MdClass::Heading, body[hashes + 1..].trim().to_string())];
    }
    if let Some(rest) = body.strip_prefix("> ").or_else(|| (body == ">").then_some("")) {
        let mut out = vec![(MdClass::Quote, "▎ ".to_string())];
        out.extend(inline(rest).into_iter().map(|(c, t)| (if c == MdClass::Plain { MdClass::Quote } else { c }, t)));
        return out;
    }
    let pad = " ".repeat(indent);
    for bullet in ["- ", "* ", "+ "] {
        if let Some(rest) = body.strip_prefix(bullet) {
            let mut out = vec![(MdClass::ListMarker, format!("{pad}• "))];
            out.extend(inline(rest));
            return out;
        }
    }
    let digits = body.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 && body[digits..].starts_with(". ") {
        let mut out = vec![(MdClass::ListMarker, format!("{pad}{}", &body[..digits + 2]))];
        out.extend(inline(&body[digits + 2..]));
        return out;
    }
    let mut out = inline(body);
    if indent > 0 {
        out.insert(0, (MdClass::Plain, pad));
    }
    out
}

/// Inline markup: `code`, **strong**, *emphasis* / _emphasis_, and `[n]` citations.
fn inline(text: &str) -> MdLine {
    let mut out: MdLine = Vec::new();
    let mut plain = String::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let flush = |plain: &mut String, out: &mut MdLine| {
        if !plain.is_empty() {
            out.push((MdClass::Plain, std::mem::take(plain)));
        }
    };
    while i < chars.len() {
        let rest: String = chars[i..].iter().collect();
        let closed = |open: &str, close: &str| -> Option<(String, usize)> {
            let body = rest.strip_prefix(open)?;
            let end = body.find(close)?;
            (end > 0).then(|| {
                (body[..end].to_string(), open.chars().count() + body[..end].chars().count() + close.chars().count())
            })
        };
        if let Some((inner, n)) = closed("`", "`") {
            flush(&mut plain, &mut out);
            out.push((MdClass::Code, inner));
            i += n;
        } else if let Some((inner, n)) = closed("**", "**") {
            flush(&mut plain, &mut out);
            out.push((MdClass::Strong, inner));
            i += n;
        } else if let Some((inner, n)) =
            closed("*", "*").or_else(|| closed("_", "_").filter(|_| i == 0 || chars[i - 1] == ' '))
        {
            flush(&mut plain, &mut out);
            out.push((MdClass::Emphasis, inner));
            i += n;
        } else if let Some((num, n)) =
            closed("[", "]").and_then(|(inner, n)| inner.parse::<usize>().ok().filter(|k| *k > 0).map(|k| (k, n)))
        {
            flush(&mut plain, &mut out);
            out.push((MdClass::Citation(num), format!("[{num}]")));
            i += n;
        } else {
            plain.push(chars[i]);
            i += 1;
        }
    }
    flush(&mut plain, &mut out);
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

/// Wraps classed runs to `w` cells, breaking at spaces where possible.
pub fn wrap_runs<C: Copy>(runs: &[(C, String)], w: usize) -> Vec<Vec<(C, String)>> {
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
        let lines = MarkdownStream::parse("- one\n  2. two\n> note\n```rust\nfn a() {}\n```\nafter");
        assert_eq!(lines[0][0], (MdClass::ListMarker, "• ".to_string()));
        assert_eq!(lines[1][0], (MdClass::ListMarker, "  2. ".to_string()));
        assert_eq!(lines[2][0].0, MdClass::Quote);
        assert_eq!(lines[3][0], (MdClass::CodeGutter, "│ ".to_string()));
        assert!(lines[3].contains(&(MdClass::Syntax(SyntaxClass::Keyword), "fn".to_string())), "{:?}", lines[3]);
        assert_eq!(text(&lines[4]), "after");
        assert_eq!(lines.len(), 5, "fences are not shown");
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
