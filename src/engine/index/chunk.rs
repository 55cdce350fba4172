//! Cutting a file into line-addressed chunks. Chunks are the unit of BM25
//! retrieval, so they should hold one idea each: a top-level item in code, a
//! section in Markdown, a window elsewhere. Tree-sitter will refine code
//! boundaries later; this module only needs lines.

use super::files::ChunkStyle;

/// One chunk: inclusive 1-based line range and its byte range in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    /// First line (1-based).
    pub line_start: u32,
    /// Last line (1-based, inclusive).
    pub line_end: u32,
    /// Byte offset of the first line.
    pub byte_start: usize,
    /// Byte offset just past the last line.
    pub byte_end: usize,
}

/// Target and maximum sizes for code chunks, in lines.
const CODE_TARGET_LINES: usize = 60;
const CODE_MIN_LINES: usize = 12;
const CODE_MAX_LINES: usize = 160;
/// Any chunk is cut once it passes this many bytes (at a line end).
const MAX_CHUNK_BYTES: usize = 12 * 1024;
/// Window chunking (spec 002 §7.3): about 900 characters with 150 of overlap.
const WINDOW_BYTES: usize = 900;
const WINDOW_OVERLAP: usize = 150;

/// Line start offsets of `text` (always at least one line for non-empty text).
fn line_starts(text: &str) -> Vec<usize> {
    let mut starts = Vec::with_capacity(text.len() / 32 + 1);
    starts.push(0);
    for i in memchr::memchr_iter(b'\n', text.as_bytes()) {
        if i + 1 < text.len() {
            starts.push(i + 1);
        }
    }
    starts
}

/// Chunks `text` in the given style.
pub fn chunk(text: &str, style: ChunkStyle) -> Vec<Chunk> {
    if text.is_empty() {
        return Vec::new();
    }
    let starts = line_starts(text);
    let line = |i: usize| -> &str {
        let s = starts[i];
        let e = starts.get(i + 1).copied().unwrap_or(text.len());
        &text[s..e]
    };
    let n = starts.len();
    let cuts = match style {
        ChunkStyle::Code => code_cuts(n, &line),
        ChunkStyle::Markdown => markdown_cuts(n, &line),
        ChunkStyle::Window => return window_chunks(text, &starts),
    };
    let mut chunks = Vec::with_capacity(cuts.len() + 1);
    let mut begin = 0;
    for cut in cuts.into_iter().chain(std::iter::once(n)) {
        if cut > begin {
            chunks.push(make(text, &starts, begin, cut));
        }
        begin = cut;
    }
    chunks
}

fn make(text: &str, starts: &[usize], begin: usize, end: usize) -> Chunk {
    Chunk {
        line_start: begin as u32 + 1,
        line_end: end as u32,
        byte_start: starts[begin],
        byte_end: starts.get(end).copied().unwrap_or(text.len()),
    }
}

fn is_blank(l: &str) -> bool {
    l.bytes().all(|b| b.is_ascii_whitespace())
}

/// A line that starts a top-level item: flush left, not a closing bracket.
fn is_top_level_start(l: &str) -> bool {
    match l.as_bytes().first() {
        Some(b) => !b.is_ascii_whitespace() && !matches!(b, b'}' | b')' | b']'),
        None => false,
    }
}

/// Line indices before which code is cut.
fn code_cuts<'a>(n: usize, line: &impl Fn(usize) -> &'a str) -> Vec<usize> {
    let mut cuts = Vec::new();
    let mut begin = 0;
    let mut bytes = 0;
    let mut last_blank: Option<usize> = None;
    for i in 0..n {
        let len = i - begin;
        let l = line(i);
        let prev_blank = i > 0 && is_blank(line(i - 1));
        let top = prev_blank && is_top_level_start(l);
        let cut = if len >= CODE_MIN_LINES && top {
            // Prefer to keep a top-level item whole; cut before the next one once the chunk has substance.
            len >= CODE_TARGET_LINES / 2 || bytes > MAX_CHUNK_BYTES / 2
        } else if len >= CODE_TARGET_LINES && prev_blank {
            true
        } else {
            len >= CODE_MAX_LINES || bytes >= MAX_CHUNK_BYTES
        };
        if cut && i > begin {
            // A forced cut goes back to the last blank line when there is one in the second half.
            let at = if len >= CODE_MAX_LINES || bytes >= MAX_CHUNK_BYTES {
                match last_blank {
                    Some(b) if b > begin + len / 2 => b + 1,
                    _ => i,
                }
            } else {
                i
            };
            cuts.push(at);
            begin = at;
            bytes = (at..=i).map(|j| line(j).len()).sum();
            last_blank = None;
            continue;
        }
        if is_blank(l) {
            last_blank = Some(i);
        }
        bytes += l.len();
    }
    cuts
}

/// Line indices before which Markdown is cut: headings outside code fences.
fn markdown_cuts<'a>(n: usize, line: &impl Fn(usize) -> &'a str) -> Vec<usize> {
    let mut cuts = Vec::new();
    let mut in_fence = false;
    let mut begin = 0;
    let mut bytes = 0;
    for i in 0..n {
        let l = line(i);
        let t = l.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            in_fence = !in_fence;
        }
        let heading = !in_fence && t.starts_with('#') && t.trim_start_matches('#').starts_with(' ');
        let len = i - begin;
        let too_big = len >= 2 * CODE_TARGET_LINES && is_blank(l) || bytes >= MAX_CHUNK_BYTES;
        if i > begin && ((heading && len >= 2) || too_big) {
            cuts.push(i);
            begin = i;
            bytes = 0;
        }
        bytes += l.len();
    }
    cuts
}

/// Fixed windows of about [`WINDOW_BYTES`] with [`WINDOW_OVERLAP`], aligned to lines.
fn window_chunks(text: &str, starts: &[usize]) -> Vec<Chunk> {
    let n = starts.len();
    let end_of = |i: usize| starts.get(i + 1).copied().unwrap_or(text.len());
    let mut chunks = Vec::new();
    let mut begin = 0;
    while begin < n {
        let mut end = begin + 1;
        while end < n && end_of(end - 1) - starts[begin] < WINDOW_BYTES {
            end += 1;
        }
        chunks.push(make(text, starts, begin, end));
        if end >= n {
            break;
        }
        // Step back so the next window repeats about WINDOW_OVERLAP bytes, always moving forward.
        let mut next = end;
        while next > begin + 1 && end_of(end - 1) - starts[next - 1] <= WINDOW_OVERLAP {
            next -= 1;
        }
        begin = next;
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn covered(chunks: &[Chunk], lines: u32) {
        assert_eq!(chunks.first().map(|c| c.line_start), Some(1));
        assert_eq!(chunks.last().map(|c| c.line_end), Some(lines));
    }

    #[test]
    fn code_cuts_between_top_level_items() {
        let mut src = String::new();
        for f in 0..6 {
            src.push_str(&format!("fn f{f}() {{\n"));
            for i in 0..20 {
                src.push_str(&format!("    let x{i} = {i};\n"));
            }
            src.push_str("}\n\n");
        }
        let chunks = chunk(&src, ChunkStyle::Code);
        covered(&chunks, 6 * 23);
        for c in &chunks {
            let first = src.lines().nth(c.line_start as usize - 1).unwrap_or("");
            assert!(first.starts_with("fn "), "chunk starts mid-item: {first:?}");
        }
        assert!(chunks.len() >= 2);
    }

    #[test]
    fn markdown_cuts_at_headings_not_in_fences() {
        let md = "# A\ntext\n\n```\n# not a heading\n```\n## B\nmore\n## C\nend\n";
        let chunks = chunk(md, ChunkStyle::Markdown);
        let starts: Vec<u32> = chunks.iter().map(|c| c.line_start).collect();
        assert_eq!(starts, [1, 7, 9]);
    }

    #[test]
    fn windows_overlap_and_cover() {
        let text: String = (0..200).map(|i| format!("line number {i} with some words\n")).collect();
        let chunks = chunk(&text, ChunkStyle::Window);
        covered(&chunks, 200);
        for w in chunks.windows(2) {
            assert!(w[1].line_start <= w[0].line_end, "windows should overlap");
            assert!(w[1].line_start > w[0].line_start);
        }
    }

    #[test]
    fn huge_single_line_is_one_chunk() {
        let text = "x".repeat(100_000);
        let chunks = chunk(&text, ChunkStyle::Code);
        assert_eq!(chunks.len(), 1);
        assert_eq!(chunks[0].byte_end, text.len());
    }
}
