//! PEM key material by line: where a file's `BEGIN`/`END` blocks lie, and the key body lines a
//! text shows without its markers (a snippet cut below a `BEGIN` line, a chunk that starts in
//! the middle of a key). The `BEGIN ... PRIVATE KEY` regex of the detectors only sees a block
//! whose `BEGIN` line is inside the text it scans; these rules catch the rest.

use std::ops::{Range, RangeInclusive};

/// Lengths of a full PEM body line: 64 (RFC 7468, OpenSSL, PGP armor), 70 (OpenSSH), 76 (MIME).
const BODY_WIDTHS: [usize; 3] = [64, 70, 76];

/// One `-----BEGIN X-----` ... `-----END X-----` block of a text, by 0-based line index
/// (markers included). A block whose `END` is not in the text runs to its last line; one whose
/// `BEGIN` is not runs up from the `END` line over the body lines above it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PemBlock {
    /// First and last line (0-based, inclusive).
    pub lines: RangeInclusive<usize>,
    /// A private key (`... PRIVATE KEY`, `PGP PRIVATE KEY BLOCK`), not a certificate or public key.
    pub private: bool,
}

/// The PEM blocks of `text`, in order. Cheap on text without a marker: one substring search.
pub fn blocks(text: &str) -> Vec<PemBlock> {
    if !text.contains("-----BEGIN ") && !text.contains("-----END ") {
        return Vec::new();
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut open: Option<(usize, bool)> = None;
    for (i, line) in lines.iter().enumerate() {
        let begin = marker(line, "-----BEGIN ");
        let end = marker(line, "-----END ");
        match (begin, end) {
            // `"-----BEGIN ...\nMII...\n-----END ..."` on one line (a JSON string).
            (Some((b, private)), Some((e, _))) if b < e => {
                close(&mut out, open.take(), i.saturating_sub(1));
                out.push(PemBlock { lines: i..=i, private });
            }
            (Some((_, private)), _) => {
                close(&mut out, open.take(), i.saturating_sub(1));
                open = Some((i, private));
            }
            (None, Some((_, private))) => match open.take() {
                Some((start, p)) => out.push(PemBlock { lines: start..=i, private: p || private }),
                None => {
                    let mut start = i;
                    while start > 0 && body(lines[start - 1]).is_some() {
                        start -= 1;
                    }
                    out.push(PemBlock { lines: start..=i, private });
                }
            },
            (None, None) => {}
        }
    }
    close(&mut out, open, lines.len().saturating_sub(1));
    out
}

/// A block left open at line `last` (a `BEGIN` without its `END` in the text).
fn close(out: &mut Vec<PemBlock>, open: Option<(usize, bool)>, last: usize) {
    if let Some((start, private)) = open {
        out.push(PemBlock { lines: start..=last.max(start), private });
    }
}

/// The byte offset of `prefix` in `line` and whether its label names a private key
/// (`-----BEGIN RSA PRIVATE KEY-----`, `-----END PGP PRIVATE KEY BLOCK-----`).
fn marker(line: &str, prefix: &str) -> Option<(usize, bool)> {
    let at = line.find(prefix)?;
    let rest = &line[at + prefix.len()..];
    let label = &rest[..rest.find("-----")?];
    let private = label.ends_with("PRIVATE KEY") || label.ends_with("PRIVATE KEY BLOCK");
    Some((at, private))
}

/// The base64 of a PEM body line, unwrapped from the quoting code puts around it
/// (`"MIIE...\n" +`, `'MIIE...',`); `None` when the line is not pure base64.
fn body(line: &str) -> Option<&str> {
    let t = line.trim().trim_end_matches([' ', '+', ',', ';', '\\']);
    let t = t.trim_matches(['"', '\'']);
    let t = t.strip_suffix("\\n").unwrap_or(t);
    let ok = !t.is_empty()
        && t.len() <= 100
        && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'=');
    ok.then_some(t)
}

/// Byte ranges of the key body `text` shows without its `BEGIN` line: the body above an
/// `END ... PRIVATE KEY` line whose `BEGIN` is not in the text (that `END` line included), and
/// runs of two or more full-width body lines of one width (64, 70 or 76 characters, letters of
/// both cases and digits among them) with the shorter last line after them, unless the text
/// shows them inside a certificate or public key. Each range runs from the first line's first
/// visible character to the end of the last line.
pub fn bodies(text: &str) -> Vec<Range<usize>> {
    let spans = line_spans(text);
    let found_blocks = blocks(text);
    let mut out = Vec::new();
    for b in found_blocks.iter().filter(|b| b.private) {
        let begins_here = marker(text_line(text, &spans, *b.lines.start()), "-----BEGIN ").is_some();
        if !begins_here {
            out.push(lines_range(text, &spans, b.lines.clone()));
        }
    }
    let in_public = |i: usize| found_blocks.iter().any(|b| !b.private && b.lines.contains(&i));
    for run in runs(text, &spans) {
        if !run.clone().any(in_public) {
            out.push(lines_range(text, &spans, run));
        }
    }
    out.sort_by_key(|r| r.start);
    out.dedup_by(|b, a| b.start < a.end);
    out
}

/// Byte ranges of the key material inside the private key blocks of a whole file, for the index
/// to leave out: each body line (base64, bare or quoted in code; 16 characters or more, or with a
/// digit, `+`, `/` or `=`), and the body between the markers of a block written on one line (a
/// JSON string: `"-----BEGIN PRIVATE KEY-----\nMIIE...\n-----END PRIVATE KEY-----\n"`). The
/// markers stay, and so does code between two markers that only names them (a PEM parser).
pub fn key_material(text: &str) -> Vec<Range<usize>> {
    let found = blocks(text);
    if !found.iter().any(|b| b.private) {
        return Vec::new();
    }
    let spans = line_spans(text);
    let mut out = Vec::new();
    for b in found.iter().filter(|b| b.private) {
        for i in b.lines.clone() {
            let (Some(span), line) = (spans.get(i), text_line(text, &spans, i)) else { continue };
            if let Some(inner) = one_line_body(line) {
                out.push(span.start + inner.start..span.start + inner.end);
            } else if body(line).is_some_and(key_like) {
                out.push(lines_range(text, &spans, i..=i));
            }
        }
    }
    out
}

/// Whether the text of a `BEGIN ... PRIVATE KEY` match (its markers, and what lies between them
/// or after the `BEGIN` when the text ends first) holds a key rather than code that names the
/// markers: a PEM parser's `if line == "-----BEGIN RSA PRIVATE KEY-----" {` ... `"-----END ..."`
/// has statements between its markers, a key has body lines, armor headers (`Proc-Type: ...`)
/// and the quoting code puts around them. A marker with nothing after it counts as a key.
pub fn holds_key_material(matched: &str) -> bool {
    let start = matched
        .find("-----BEGIN ")
        .and_then(|b| {
            let label = b + "-----BEGIN ".len();
            matched[label..].find("-----").map(|e| label + e + "-----".len())
        })
        .unwrap_or(0);
    let end = matched[start..].find("-----END ").map_or(matched.len(), |e| start + e);
    let (mut keylike, mut other) = (0usize, 0usize);
    for piece in matched[start..end].split('\n').flat_map(|l| l.split("\\n")) {
        let t = piece.trim().trim_matches(|c: char| "\"'`+,;\\()[]".contains(c)).trim();
        if t.is_empty() || armor_header(t) {
            continue;
        }
        match body(t) {
            Some(b) if key_like(b) => keylike += 1,
            Some(_) => {}
            None => other += 1,
        }
    }
    other == 0 || keylike > other
}

/// An armor header line of a PEM or PGP block (`Proc-Type: 4,ENCRYPTED`, `Comment: ...`).
fn armor_header(line: &str) -> bool {
    line.split_once(": ")
        .is_some_and(|(name, _)| !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-'))
}

/// A body line, not a short word that happens to be base64 (`else`, `return`).
fn key_like(b: &str) -> bool {
    b.len() >= 16 || b.bytes().any(|c| c.is_ascii_digit() || c == b'+' || c == b'/' || c == b'=')
}

/// The body of a block whose `BEGIN` and `END` markers are both on `line`: from the end of the
/// `BEGIN` marker to the start of the `END` one.
fn one_line_body(line: &str) -> Option<Range<usize>> {
    let (begin, _) = marker(line, "-----BEGIN ")?;
    let (end, _) = marker(line, "-----END ")?;
    let label = begin + "-----BEGIN ".len();
    let from = label + line[label..].find("-----")? + "-----".len();
    (from < end).then_some(from..end)
}

/// Runs of full-width body lines (0-based, inclusive), each with its shorter last line.
fn runs(text: &str, spans: &[Range<usize>]) -> Vec<RangeInclusive<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < spans.len() {
        let Some(width) = body(&text[spans[i].clone()]).map(str::len).filter(|w| BODY_WIDTHS.contains(w)) else {
            i += 1;
            continue;
        };
        let mut end = i;
        while end + 1 < spans.len() && body(&text[spans[end + 1].clone()]).map(str::len) == Some(width) {
            end += 1;
        }
        if end + 1 < spans.len() && body(&text[spans[end + 1].clone()]).is_some_and(|b| b.len() < width) {
            end += 1;
        }
        let full = (i..=end).filter(|&j| body(&text[spans[j].clone()]).map(str::len) == Some(width)).count();
        if full >= 2 && looks_random((i..=end).filter_map(|j| body(&text[spans[j].clone()]))) {
            out.push(i..=end);
        }
        i = end + 1;
    }
    out
}

/// Base64 of random bytes: lower case, upper case and digits all occur (a run of hex digests,
/// one per line, is not key material).
fn looks_random<'a>(lines: impl Iterator<Item = &'a str>) -> bool {
    let (mut lower, mut upper, mut digit) = (false, false, false);
    for l in lines {
        lower |= l.bytes().any(|b| b.is_ascii_lowercase());
        upper |= l.bytes().any(|b| b.is_ascii_uppercase());
        digit |= l.bytes().any(|b| b.is_ascii_digit());
    }
    lower && upper && digit
}

/// The byte range of each line of `text` (without its line end).
pub fn line_spans(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let content = line.trim_end_matches('\n').trim_end_matches('\r');
        out.push(at..at + content.len());
        at += line.len();
    }
    out
}

fn text_line<'a>(text: &'a str, spans: &[Range<usize>], i: usize) -> &'a str {
    spans.get(i).map_or("", |s| &text[s.clone()])
}

/// From the first visible character of line `lines.start()` to the end of line `lines.end()`.
pub fn lines_range(text: &str, spans: &[Range<usize>], lines: RangeInclusive<usize>) -> Range<usize> {
    let (Some(first), Some(last)) = (spans.get(*lines.start()), spans.get(*lines.end())) else {
        return 0..0;
    };
    let indent = text[first.clone()].len() - text[first.clone()].trim_start().len();
    (first.start + indent).min(last.end)..last.end
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A fake RSA key body of `n` full lines and a short last one (deterministic, random-looking).
    pub(crate) fn fake_body(n: usize, indent: &str) -> Vec<String> {
        const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut line = |len: usize| -> String {
            (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    B64[(x % 64) as usize] as char
                })
                .collect()
        };
        let mut out: Vec<String> = (0..n).map(|_| format!("{indent}{}", line(64))).collect();
        out.push(format!("{indent}{}==", line(22)));
        out
    }

    #[test]
    fn blocks_are_found_with_or_without_their_markers_in_the_text() {
        let body = fake_body(3, "  ");
        let text =
            format!("a\n  -----BEGIN RSA PRIVATE KEY-----\n{}\n  -----END RSA PRIVATE KEY-----\nb\n", body.join("\n"));
        assert_eq!(blocks(&text), [PemBlock { lines: 1..=6, private: true }]);
        // Cut below BEGIN: the END line and the body above it.
        let tail = format!("{}\n  -----END RSA PRIVATE KEY-----\nb\n", body[1..].join("\n"));
        assert_eq!(blocks(&tail), [PemBlock { lines: 0..=3, private: true }]);
        let end = tail.find("\nb").unwrap();
        assert_eq!(bodies(&tail), vec![2..end]);
        // Cut above END: BEGIN to the end of the text.
        let head = format!("-----BEGIN CERTIFICATE-----\n{}\n", body.join("\n"));
        assert_eq!(blocks(&head), [PemBlock { lines: 0..=4, private: false }]);
        assert!(bodies(&head).is_empty(), "a certificate the text shows is public");
    }

    #[test]
    fn key_material_is_the_body_of_private_blocks_only() {
        let body = fake_body(3, "  ");
        let key = format!("  -----BEGIN RSA PRIVATE KEY-----\n{}\n  -----END RSA PRIVATE KEY-----\n", body.join("\n"));
        let cert = key.replace("RSA PRIVATE KEY", "CERTIFICATE");
        let text = format!("a\n{key}{cert}b\n");
        let shown: Vec<&str> = key_material(&text).into_iter().map(|r| &text[r]).collect();
        assert_eq!(shown, body.iter().map(|l| l.trim()).collect::<Vec<_>>(), "the key's body, not the certificate's");
        // A JSON string holds the whole key on one line.
        let json =
            r#"  "private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0B\n-----END PRIVATE KEY-----\n","#;
        let shown: Vec<&str> = key_material(json).into_iter().map(|r| &json[r]).collect();
        assert_eq!(shown, [r"\nMIIEvQIBADANBgkqhkiG9w0B\n"]);
        // A parser that names the markers: its code is not key material.
        let parser = "if l == \"-----BEGIN RSA PRIVATE KEY-----\" {\n    start_of_rsa_key_block(l);\n    else\n}\nif l == \"-----END RSA PRIVATE KEY-----\" {}\n";
        assert!(key_material(parser).is_empty(), "{:?}", key_material(parser));
    }

    #[test]
    fn a_run_of_body_lines_is_key_material_without_any_marker() {
        let body = fake_body(4, "      ");
        let text = format!("    setting_29: value29\n{}\n    other: 1\n", body.join("\n"));
        let found = bodies(&text);
        assert_eq!(found.len(), 1);
        let masked = &text[found[0].clone()];
        assert!(masked.starts_with(body[0].trim()) && masked.ends_with(body[4].trim()), "{masked}");
        // One line alone, hex digests, short lines, prose: not key material.
        for clean in [
            body[0].clone(),
            format!("{0}\n{0}\n", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            "dGhpcyBpcyBub3QgYSBzZWNyZXQgYXQgYWxs\ndGhpcyBpcyBub3QgYSBzZWNyZXQgYXQgYWxs\n".to_string(),
            format!("{}\n", "word ".repeat(40)),
        ] {
            assert!(bodies(&clean).is_empty(), "{clean}");
        }
        // Quoted in code, one string per line.
        let quoted: Vec<String> = body.iter().map(|l| format!("    \"{}\\n\" +", l.trim())).collect();
        assert_eq!(bodies(&quoted.join("\n")).len(), 1);
    }
}
