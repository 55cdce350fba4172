//! A linear look at HTML before it is parsed. The HTML parser and Readability are quadratic in
//! how deeply elements nest (20,000 nested `div`s took 2 s to parse and 105 s to read in a debug
//! build), and a deep enough tree overflowed an indexing thread's stack, aborting docdex; they
//! are superlinear in size and in a tag's attributes too. Real pages nest a few dozen levels;
//! one [`too_costly`] to parse is read by [`flat_text`], which strips tags in one pass and never
//! builds a tree. Fetched pages and indexed HTML files share this one check.

use std::collections::HashMap;

/// Nesting beyond which a page is read flat.
pub const MAX_DEPTH: usize = 256;
/// Pages larger than this are read flat: parsing and Readability were superlinear on large
/// files (9.5 MB of `&amp;` took 48 s, 2 MB 2.5 s).
pub const MAX_READABLE_BYTES: usize = 2 * 1024 * 1024;
/// A tag with more attributes than this is read flat: the parser compares each attribute with
/// every one before it (one tag of 600,000 attributes, 7 MB, ran for minutes).
pub const MAX_ATTRIBUTES: usize = 1_000;

/// Why parsing `html` would take superlinear time (its depth, size or a tag's attributes), or
/// `None` when the parser and Readability handle it in time. Linear.
pub fn too_costly(html: &str) -> Option<String> {
    if html.len() > MAX_READABLE_BYTES {
        Some(format!("it is over {} MiB", MAX_READABLE_BYTES / (1024 * 1024)))
    } else if attributes_over(html.as_bytes(), MAX_ATTRIBUTES) {
        Some(format!("a tag has over {MAX_ATTRIBUTES} attributes"))
    } else if too_deep(html, MAX_DEPTH) {
        Some(format!("it nests deeper than {MAX_DEPTH} elements"))
    } else {
        None
    }
}

/// Whether some tag of `html` has more than `limit` attributes, by one linear pass (quoted
/// values skipped; comments and scripts may over-count, which only reads a page flat).
fn attributes_over(html: &[u8], limit: usize) -> bool {
    let (mut in_tag, mut quote, mut count) = (false, 0u8, 0usize);
    let mut prev = b' ';
    for &c in html {
        match (in_tag, quote, c) {
            (false, _, b'<') => (in_tag, count) = (true, 0),
            (true, 0, b'>') => in_tag = false,
            (true, 0, b'"' | b'\'') => quote = c,
            (true, q, _) if q != 0 && c == q => quote = 0,
            (true, 0, _) if prev.is_ascii_whitespace() && !c.is_ascii_whitespace() && c != b'/' => {
                count += 1;
                if count > limit {
                    return true;
                }
            }
            _ => {}
        }
        prev = c;
    }
    false
}

/// Elements that never hold children.
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr",
    "keygen",
];
/// Elements the parser closes by itself when a sibling starts (not counted as nesting).
const AUTO_CLOSED: &[&str] = &[
    "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup", "thead", "tbody", "tfoot", "colgroup", "caption",
    "rb", "rt", "rp", "html", "head", "body",
];
/// Elements whose content is text up to their closing tag.
const RAW_TEXT: &[&str] = &["script", "style", "textarea", "title", "xmp", "noframes", "iframe", "noembed"];
/// Formatting elements: closing one does not close the blocks opened inside it (the parser's
/// adoption agency keeps them open, which is how mis-nested tags build deep trees).
const FORMATTING: &[&str] =
    &["a", "b", "big", "code", "em", "font", "i", "nobr", "s", "small", "strike", "strong", "tt", "u"];
/// Elements whose content is not text a reader sees.
const HIDDEN: &[&str] = &["script", "style", "noscript", "template", "head"];
/// Elements that start a new line.
const BLOCK: &[&str] = &[
    "p",
    "div",
    "section",
    "article",
    "li",
    "tr",
    "br",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "pre",
    "ul",
    "ol",
    "table",
    "blockquote",
    "dd",
    "dt",
    "hr",
];

/// One tag found by the scanner.
struct Tag {
    name: String,
    closing: bool,
    self_closing: bool,
    /// Index just past its `>`.
    end: usize,
}

/// What starts at a `<`: a tag, something to skip (a comment, a doctype), or plain text.
enum Token {
    Tag(Tag),
    Skip(usize),
    Text,
}

fn token_at(b: &[u8], i: usize) -> Token {
    let find = |from: usize, needle: &[u8]| memchr::memmem::find(&b[from.min(b.len())..], needle).map(|p| from + p);
    match b.get(i + 1) {
        Some(b'!') if b[i..].starts_with(b"<!--") => Token::Skip(find(i + 4, b"-->").map_or(b.len(), |p| p + 3)),
        Some(b'!') | Some(b'?') => Token::Skip(find(i + 1, b">").map_or(b.len(), |p| p + 1)),
        Some(b'/') if b.get(i + 2).is_some_and(u8::is_ascii_alphabetic) => tag(b, i + 2, true),
        Some(c) if c.is_ascii_alphabetic() => tag(b, i + 1, false),
        _ => Token::Text,
    }
}

fn tag(b: &[u8], start: usize, closing: bool) -> Token {
    let name_end = start + b[start..].iter().take_while(|c| c.is_ascii_alphanumeric() || **c == b'-').count();
    let name = String::from_utf8_lossy(&b[start..name_end]).to_ascii_lowercase();
    let end = memchr::memchr(b'>', &b[name_end..]).map_or(b.len(), |p| name_end + p + 1);
    let self_closing = end >= 2 && b[end - 2] == b'/';
    Token::Tag(Tag { name, closing, self_closing, end })
}

/// Where the raw text of element `name`, starting at `from`, ends (its closing tag's end).
fn raw_text_end(lower: &[u8], from: usize, name: &str) -> (usize, usize) {
    let close = format!("</{name}");
    match memchr::memmem::find(&lower[from.min(lower.len())..], close.as_bytes()) {
        Some(p) => {
            let at = from + p;
            let end = memchr::memchr(b'>', &lower[at..]).map_or(lower.len(), |q| at + q + 1);
            (at, end)
        }
        None => (lower.len(), lower.len()),
    }
}

/// Whether `html` nests elements deeper than `limit`, by a linear scan that follows the parser's
/// rules closely enough: void and self-closed elements hold nothing, elements the parser closes
/// by itself are not counted, a closing tag closes what it matches, and closing a formatting
/// element leaves the blocks opened inside it open.
pub fn too_deep(html: &str, limit: usize) -> bool {
    let lower = html.to_ascii_lowercase();
    let b = lower.as_bytes();
    let mut stack: Vec<String> = Vec::new();
    let mut open: HashMap<String, usize> = HashMap::new();
    let mut i = 0;
    while let Some(p) = memchr::memchr(b'<', &b[i..]) {
        let at = i + p;
        let t = match token_at(b, at) {
            Token::Tag(t) => t,
            Token::Skip(end) => {
                i = end;
                continue;
            }
            Token::Text => {
                i = at + 1;
                continue;
            }
        };
        i = t.end;
        let name = t.name.as_str();
        if t.closing {
            close(&mut stack, &mut open, name);
        } else if RAW_TEXT.contains(&name) {
            i = raw_text_end(b, t.end, name).1;
        } else if !t.self_closing && !VOID.contains(&name) && !AUTO_CLOSED.contains(&name) {
            *open.entry(t.name.clone()).or_default() += 1;
            stack.push(t.name);
            if stack.len() > limit {
                return true;
            }
        }
    }
    false
}

fn close(stack: &mut Vec<String>, open: &mut HashMap<String, usize>, name: &str) {
    if open.get(name).copied().unwrap_or(0) == 0 {
        return; // closes nothing: the parser ignores it
    }
    let Some(pos) = stack.iter().rposition(|n| n == name) else { return };
    let blocks_inside = stack[pos + 1..].iter().any(|n| !FORMATTING.contains(&n.as_str()));
    let removed: Vec<String> = if FORMATTING.contains(&name) && blocks_inside {
        vec![stack.remove(pos)]
    } else {
        stack.drain(pos..).collect()
    };
    for n in removed {
        if let Some(c) = open.get_mut(&n) {
            *c = c.saturating_sub(1);
        }
    }
}

/// The title and visible text of `html` in one pass, without building a tree: tags are
/// dropped, block elements start lines, scripts, styles and the head are skipped, and the
/// common entities are decoded.
pub fn flat_text(html: &str) -> (String, String) {
    let lower = html.to_ascii_lowercase();
    let (b, raw) = (lower.as_bytes(), html.as_bytes());
    let (mut title, mut text) = (String::new(), String::new());
    let mut hidden = 0usize;
    let mut i = 0;
    let push = |from: usize, to: usize, hidden: usize, text: &mut String| {
        if hidden == 0 && from < to {
            text.push_str(&decode(&String::from_utf8_lossy(&raw[from..to])));
        }
    };
    while let Some(p) = memchr::memchr(b'<', &b[i..]) {
        let at = i + p;
        match token_at(b, at) {
            Token::Text => {
                push(i, at + 1, hidden, &mut text);
                i = at + 1;
            }
            Token::Skip(end) => {
                push(i, at, hidden, &mut text);
                i = end;
            }
            Token::Tag(t) => {
                push(i, at, hidden, &mut text);
                i = t.end;
                let name = t.name.as_str();
                if !t.closing && RAW_TEXT.contains(&name) {
                    let (content_end, end) = raw_text_end(b, t.end, name);
                    if name == "title" && title.is_empty() {
                        title = decode(String::from_utf8_lossy(&raw[t.end.min(content_end)..content_end]).trim());
                    } else if name == "textarea" && hidden == 0 {
                        push(t.end, content_end, hidden, &mut text);
                    }
                    i = end;
                    continue;
                }
                if HIDDEN.contains(&name) && !t.self_closing {
                    hidden = if t.closing { hidden.saturating_sub(1) } else { hidden + 1 };
                }
                if BLOCK.contains(&name) {
                    text.push('\n');
                }
            }
        }
    }
    push(i, b.len(), hidden, &mut text);
    (title, text)
}

/// The entities pages use most; anything else is left as written.
fn decode(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    s.replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_pages_are_shallow_and_nesting_attacks_are_deep() {
        let page = "<!doctype html><html><head><title>T</title><script>if (a<b) {}</script></head>\
                    <body><div><p>one<p>two<br><img src=x><ul><li>a<li>b</ul></div><!-- <div><div> --></body></html>";
        assert!(!too_deep(page, 8), "auto-closed, void and commented elements do not nest");
        let sloppy = "<div><span>unclosed</div>".repeat(1000);
        assert!(!too_deep(&sloppy, 8), "a closing tag closes what it matches");
        let ignored = "<div></span>".repeat(20);
        assert!(too_deep(&ignored, 8), "a closing tag that matches nothing closes nothing");
        assert!(too_deep(&"<div>".repeat(300), MAX_DEPTH));
        assert!(!too_deep(&format!("{}{}", "<div>".repeat(200), "</div>".repeat(200)), MAX_DEPTH));
        assert!(too_deep(&"<b><div></b>".repeat(20), 8), "mis-nested formatting keeps the blocks open");
        assert!(too_deep(&"<b>".repeat(20), 8));
    }

    #[test]
    fn attributes_are_counted_per_tag_outside_quotes() {
        assert!(!attributes_over(br#"<p a="1 2 3 4" b='x y'>one two three four</p>"#, 2));
        assert!(attributes_over(b"<p a b c>text</p>", 2));
        assert!(!attributes_over(b"<p a b> c d e f g </p><q x y>", 2));
    }

    #[test]
    fn flat_text_keeps_what_a_reader_sees() {
        let (title, text) = flat_text(
            "<html><head><title>Heron &amp; egret</title><style>p{}</style></head><body><script>x<y</script>\
             <div><b>Wading</b> birds &lt;3</div><noscript>enable js</noscript><p>fish</p>a < b</body></html>",
        );
        assert_eq!(title, "Heron & egret");
        let words: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(words, ["Wading", "birds", "<3", "fish", "a", "<", "b"], "{text:?}");
    }
}
