//! Cutting a file into line-addressed chunks. Chunks are the unit of BM25
//! retrieval, so they should hold one idea each: a definition in code, a
//! section in Markdown, a window elsewhere.
//!
//! Code with a Tree-sitter grammar is cut at symbol boundaries ([`chunk_code`]): small
//! definitions are packed together, a definition is never cut unless it alone is too large,
//! and then it is cut between its members (methods of a class) or, for one long function,
//! between blocks of its body, each piece carrying the signature lines of what it is inside
//! as `context`. Other code falls back to line heuristics ([`chunk`]).

use super::files::ChunkStyle;
use crate::engine::code::Symbol;

/// One chunk: inclusive 1-based line range and its byte range in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// First line (1-based).
    pub line_start: u32,
    /// Last line (1-based, inclusive).
    pub line_end: u32,
    /// Byte offset of the first line.
    pub byte_start: usize,
    /// Byte offset just past the last line.
    pub byte_end: usize,
    /// Signature lines (1-based, before `line_start`) of the definitions this chunk is a piece
    /// of, outermost first: a method cut out of a large class carries the class line, the
    /// second half of a long function carries the function's first line.
    pub context: Vec<u32>,
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

/// Chunks each page of a paged document on its own (`pages`: the 1-based first line of each
/// page), so no chunk spans two pages; line numbers and offsets are those of the whole text.
pub fn chunk_pages(text: &str, style: ChunkStyle, pages: &[u32]) -> Vec<Chunk> {
    let starts: Vec<usize> =
        std::iter::once(0).chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1)).collect();
    let offset = |line: u32| starts.get(line.saturating_sub(1) as usize).copied().unwrap_or(text.len());
    let mut out = Vec::new();
    for (i, &first) in pages.iter().enumerate() {
        let begin = offset(first);
        let end = pages.get(i + 1).map_or(text.len(), |&next| offset(next)).max(begin);
        for mut c in chunk(&text[begin..end], style) {
            c.line_start += first - 1;
            c.line_end += first - 1;
            c.byte_start += begin;
            c.byte_end += begin;
            c.context.iter_mut().for_each(|l| *l += first - 1);
            out.push(c);
        }
    }
    out
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
        context: Vec::new(),
    }
}

/// Definitions nested deeper than this are not split along their members.
const MAX_UNIT_DEPTH: usize = 32;

/// A definition as chunking sees it: 0-based inclusive lines, leading comments included.
#[derive(Debug, Clone)]
struct Unit {
    start: usize,
    sig: usize,
    end: usize,
    children: Vec<Unit>,
}

/// A piece that is never cut: a definition that fits, or a block of lines.
#[derive(Debug, Clone)]
struct Atom {
    start: usize,
    end: usize,
    ctx: Vec<u32>,
}

/// Chunks code along the symbols of its syntax tree (see the module docs). Lines and bytes
/// follow the same limits as [`chunk`]; line numbers are exact.
pub fn chunk_code(text: &str, symbols: &[Symbol]) -> Vec<Chunk> {
    if text.is_empty() {
        return Vec::new();
    }
    let starts = line_starts(text);
    let n = starts.len();
    let units = build_units(symbols, n);
    let cx = Lines { text, starts: &starts };
    let mut atoms = Vec::new();
    cx.atoms(0, n - 1, &units, &[], &mut atoms);
    cx.pack(atoms)
}

/// Builds the definition tree from the symbols' parent links: siblings sorted and made
/// disjoint (overlaps merge), lines clamped to the file.
fn build_units(symbols: &[Symbol], lines: usize) -> Vec<Unit> {
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); symbols.len()];
    let mut roots = Vec::new();
    for (i, s) in symbols.iter().enumerate() {
        match s.parent.map(|p| p as usize).filter(|p| *p < i) {
            Some(p) => children[p].push(i),
            None => roots.push(i),
        }
    }
    fn build(i: usize, symbols: &[Symbol], children: &[Vec<usize>], lines: usize, depth: usize) -> Unit {
        let s = &symbols[i];
        let clamp = |l: u32| (l.max(1) as usize - 1).min(lines - 1);
        let sig = clamp(s.line_start);
        // Deeper nesting is cut by lines, not members (and recursion stays shallow).
        let kids = if depth < MAX_UNIT_DEPTH { children[i].as_slice() } else { &[] };
        Unit {
            start: clamp(s.lead_start).min(sig),
            sig,
            end: clamp(s.line_end).max(sig),
            children: disjoint(kids.iter().map(|c| build(*c, symbols, children, lines, depth + 1)).collect()),
        }
    }
    disjoint(roots.into_iter().map(|i| build(i, symbols, &children, lines, 0)).collect())
}

/// Sorts units and merges overlapping ones (two declarations on one line, one node declaring
/// several names).
fn disjoint(mut units: Vec<Unit>) -> Vec<Unit> {
    units.sort_by_key(|u| (u.sig, std::cmp::Reverse(u.end)));
    let mut out: Vec<Unit> = Vec::with_capacity(units.len());
    for mut u in units {
        if let Some(prev) = out.last_mut() {
            if u.sig <= prev.end {
                if u.end > prev.end {
                    prev.end = u.end;
                }
                prev.children.append(&mut u.children);
                continue;
            }
            // Leading comments never reach back into the previous definition.
            u.start = u.start.max(prev.end + 1);
        }
        out.push(u);
    }
    for u in &mut out {
        if !u.children.is_empty() {
            let kids = std::mem::take(&mut u.children);
            u.children = disjoint(kids).into_iter().filter(|c| c.start > u.sig && c.end <= u.end).collect();
        }
    }
    out
}

/// The file's lines, for sizing and cutting.
struct Lines<'a> {
    text: &'a str,
    starts: &'a [usize],
}

impl Lines<'_> {
    fn line(&self, i: usize) -> &str {
        let e = self.starts.get(i + 1).copied().unwrap_or(self.text.len());
        &self.text[self.starts[i]..e]
    }

    fn bytes(&self, a: usize, b: usize) -> usize {
        self.starts.get(b + 1).copied().unwrap_or(self.text.len()) - self.starts[a]
    }

    fn fits(&self, a: usize, b: usize) -> bool {
        b + 1 - a <= CODE_MAX_LINES && self.bytes(a, b) <= MAX_CHUNK_BYTES
    }

    /// Atoms for lines `lo..=hi` holding `units` (sorted, disjoint, inside the range).
    fn atoms(&self, lo: usize, hi: usize, units: &[Unit], ctx: &[u32], out: &mut Vec<Atom>) {
        let mut pos = lo;
        for u in units {
            if u.start > pos {
                self.blocks(pos, u.start - 1, ctx, out);
            }
            self.unit(u, ctx, out);
            pos = u.end + 1;
        }
        if pos <= hi {
            self.blocks(pos, hi, ctx, out);
        }
    }

    /// A definition: whole when it fits, else cut between its members or body blocks, every
    /// piece carrying its signature line.
    fn unit(&self, u: &Unit, ctx: &[u32], out: &mut Vec<Atom>) {
        if self.fits(u.start, u.end) {
            out.push(Atom { start: u.start, end: u.end, ctx: ctx.to_vec() });
            return;
        }
        let mut inner = ctx.to_vec();
        inner.push(u.sig as u32 + 1);
        match u.children.first() {
            Some(first) => {
                self.blocks(u.start, first.start - 1, &inner, out);
                self.atoms(first.start, u.end, &u.children, &inner, out);
            }
            None => self.blocks(u.start, u.end, &inner, out),
        }
    }

    /// Blocks of lines separated by blank lines (a blank line ends the block before it), each
    /// at most [`CODE_TARGET_LINES`] long.
    fn blocks(&self, lo: usize, hi: usize, ctx: &[u32], out: &mut Vec<Atom>) {
        let mut begin = lo;
        for i in lo..=hi {
            let ends_block = is_blank(self.line(i)) && i < hi && !is_blank(self.line(i + 1));
            if ends_block || i + 1 - begin >= CODE_TARGET_LINES || i == hi {
                out.push(Atom { start: begin, end: i, ctx: ctx.to_vec() });
                begin = i + 1;
            }
        }
    }

    /// Packs consecutive atoms of the same context into chunks of about
    /// [`CODE_TARGET_LINES`]; a short chunk may grow to [`CODE_MAX_LINES`] rather than stay
    /// under [`CODE_MIN_LINES`].
    fn pack(&self, atoms: Vec<Atom>) -> Vec<Chunk> {
        let mut chunks: Vec<Chunk> = Vec::new();
        let mut cur: Option<Atom> = None;
        for a in atoms {
            cur = match cur.take() {
                None => Some(a),
                Some(mut c) => {
                    let lines = a.end + 1 - c.start;
                    let bytes = self.bytes(c.start, a.end);
                    let small = c.end + 1 - c.start < CODE_MIN_LINES;
                    let fits = (lines <= CODE_TARGET_LINES && bytes <= MAX_CHUNK_BYTES / 2)
                        || (small && lines <= CODE_MAX_LINES && bytes <= MAX_CHUNK_BYTES);
                    if c.ctx == a.ctx && fits {
                        c.end = a.end;
                        Some(c)
                    } else {
                        chunks.push(self.emit(c));
                        Some(a)
                    }
                }
            };
        }
        if let Some(c) = cur {
            chunks.push(self.emit(c));
        }
        chunks
    }

    fn emit(&self, a: Atom) -> Chunk {
        let mut c = make(self.text, self.starts, a.start, a.end + 1);
        c.context = a.ctx.into_iter().filter(|l| *l < c.line_start).collect();
        c
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
mod page_tests {
    use super::*;

    #[test]
    fn pages_are_chunked_apart() {
        let text = "one\ntwo\n\nthree\nfour\n\nfive\n";
        let chunks = chunk_pages(text, ChunkStyle::Window, &[1, 4, 7]);
        let ranges: Vec<(u32, u32)> = chunks.iter().map(|c| (c.line_start, c.line_end)).collect();
        assert_eq!(ranges, [(1, 3), (4, 6), (7, 7)]);
        assert_eq!(&text[chunks[1].byte_start..chunks[1].byte_end], "three\nfour\n\n");
    }
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

    fn sym(name: &str, lines: (u32, u32), parent: Option<u32>) -> Symbol {
        Symbol {
            name: name.into(),
            kind: crate::engine::code::SymbolKind::Function,
            node_kind: "function_item",
            line_start: lines.0,
            line_end: lines.1,
            lead_start: lines.0,
            signature: String::new(),
            parent,
            container: None,
            depth: u32::from(parent.is_some()),
        }
    }

    /// No chunk boundary falls strictly inside `lines` (inclusive, 1-based).
    fn not_cut(chunks: &[Chunk], lines: (u32, u32)) -> bool {
        chunks.iter().all(|c| !(c.line_start > lines.0 && c.line_start <= lines.1))
    }

    #[test]
    fn code_chunks_keep_definitions_whole_and_pack_small_ones() {
        // Ten 25-line functions: packed two to a chunk, never cut inside.
        let mut src = String::new();
        let mut syms = Vec::new();
        for f in 0..10u32 {
            let start = f * 26 + 1;
            src.push_str(&format!("fn f{f}() {{\n"));
            for i in 0..23 {
                src.push_str(&format!("    let x{i} = {i};\n"));
            }
            src.push_str("}\n\n");
            syms.push(sym(&format!("f{f}"), (start, start + 24), None));
        }
        let chunks = chunk_code(&src, &syms);
        covered(&chunks, 260);
        for s in &syms {
            assert!(not_cut(&chunks, (s.line_start, s.line_end)), "{} was cut: {chunks:?}", s.name);
        }
        assert!(chunks.len() >= 4 && chunks.len() <= 6, "{}", chunks.len());
        assert!(chunks.iter().all(|c| c.context.is_empty()));
        // Chunks tile the file: contiguous, in order.
        for w in chunks.windows(2) {
            assert_eq!(w[1].line_start, w[0].line_end + 1);
        }
    }

    #[test]
    fn a_large_class_is_cut_between_methods_and_pieces_carry_its_signature() {
        // class (line 1) with eight 30-line methods = 243 lines: too large for one chunk.
        let mut src = String::from("class Big:\n");
        let mut syms = vec![sym("Big", (1, 0), None)];
        for m in 0..8u32 {
            let start = 2 + m * 30;
            src.push_str(&format!("    def m{m}(self):\n"));
            for i in 0..28 {
                src.push_str(&format!("        x{i} = {i}\n"));
            }
            src.push('\n');
            syms.push(sym(&format!("m{m}"), (start, start + 28), Some(0)));
        }
        let total = src.lines().count() as u32;
        syms[0].line_end = total;
        let chunks = chunk_code(&src, &syms);
        covered(&chunks, total);
        for s in &syms[1..] {
            assert!(not_cut(&chunks, (s.line_start, s.line_end)), "{} was cut", s.name);
        }
        assert!(chunks.len() >= 3);
        for c in &chunks[1..] {
            assert_eq!(c.context, vec![1], "pieces after the first carry the class line: {c:?}");
        }
    }

    #[test]
    fn a_long_function_is_cut_only_because_it_is_too_large() {
        let mut src = String::from("fn long() {\n");
        for i in 0..400 {
            src.push_str(&format!("    let x{i} = {i};\n"));
            if i % 10 == 9 {
                src.push('\n');
            }
        }
        src.push_str("}\n");
        let total = src.lines().count() as u32;
        let chunks = chunk_code(&src, &[sym("long", (1, total), None)]);
        covered(&chunks, total);
        assert!(chunks.len() > 2);
        assert!(chunks[0].context.is_empty());
        for c in &chunks[1..] {
            assert_eq!(c.context, vec![1]);
            assert!(c.line_end - c.line_start < CODE_MAX_LINES as u32);
        }
    }

    #[test]
    fn code_without_symbols_still_chunks_by_blocks() {
        let text: String = (0..300).map(|i| if i % 7 == 6 { "\n".to_string() } else { format!("x = {i}\n") }).collect();
        let chunks = chunk_code(&text, &[]);
        covered(&chunks, 300);
        assert!(chunks.iter().all(|c| c.line_end - c.line_start < CODE_MAX_LINES as u32));
    }

    #[test]
    fn deeply_nested_definitions_do_not_exhaust_the_stack() {
        let depth = 5000u32;
        let mut src = String::new();
        let mut syms = Vec::new();
        for d in 0..depth {
            src.push_str(&format!("{}def f{d}():\n", " ".repeat(d as usize % 80)));
            syms.push(sym(&format!("f{d}"), (d + 1, depth), d.checked_sub(1)));
        }
        let chunks = chunk_code(&src, &syms);
        covered(&chunks, depth);
    }

    #[test]
    fn huge_single_line_is_one_chunk() {
        let text = "x".repeat(100_000);
        let chunks = chunk(&text, ChunkStyle::Code);
        assert_eq!(chunks.len(), 1);
        assert_eq!(chunks[0].byte_end, text.len());
    }
}
