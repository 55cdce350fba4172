//! PII and secret detection and masking: e-mail addresses, phone numbers, API keys and tokens of
//! the common providers, JWTs, private keys, credentials in URLs (`scheme://user:password@host`),
//! IBANs (mod-97 checked), payment card numbers (Luhn checked), and secrets assigned to a telling
//! name (`password = "..."`, `AWS_SECRET_ACCESS_KEY=...`). Applied to search snippets, context
//! packs, symbol signatures and AST samples (agents forward them to remote models) and to
//! whatever leaves the machine; `pii_redacted` in search JSON says whether anything was masked.
//! Text cut from a file is masked with the file at hand ([`FileMasker`]): a private key's body
//! is masked on every line the file shows inside its `BEGIN`/`END` markers, wherever the cut is.
//!
//! Tuned for few false positives in source trees: every pattern needs a provider prefix, a
//! checksum or a telling shape (see docs/PRIVACY.md for precision and recall on a labelled
//! corpus and the false positives on real repositories).

mod assign;
mod layout;
mod pem;
mod phrase;

use regex::Regex;
use std::sync::OnceLock;

/// What a detector found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PiiKind {
    /// An e-mail address (the local part is masked, the domain kept).
    Email,
    /// A phone number written as one (a leading `+` or separators).
    Phone,
    /// An API key or access token with a provider's prefix.
    ApiKey,
    /// A JSON Web Token.
    Jwt,
    /// A PEM private key block.
    PrivateKey,
    /// The `user:password` of a URL (`redis://:s3cret@cache:6379`); scheme and host are kept.
    UrlCredentials,
    /// An IBAN whose check digits verify.
    Iban,
    /// A payment card number that passes the Luhn check.
    CardNumber,
    /// A literal assigned to a secret's name (`password`, `api_token`, `*_SECRET_ACCESS_KEY`);
    /// only the value is masked.
    Secret,
}

impl PiiKind {
    /// The mask's label.
    pub fn label(self) -> &'static str {
        match self {
            PiiKind::Email => "EMAIL",
            PiiKind::Phone => "PHONE",
            PiiKind::ApiKey => "API_KEY",
            PiiKind::Jwt => "JWT",
            PiiKind::PrivateKey => "PRIVATE_KEY",
            PiiKind::UrlCredentials => "URL_CREDENTIALS",
            PiiKind::Iban => "IBAN",
            PiiKind::CardNumber => "CARD",
            PiiKind::Secret => "SECRET",
        }
    }
}

/// One finding: its kind and byte range in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// What it is.
    pub kind: PiiKind,
    /// Byte range in the scanned text.
    pub range: std::ops::Range<usize>,
}

/// One kind of finding: its pattern, a check of a match (checksums, placeholders), and a
/// cheap test that `text` could hold a match at all (a literal the pattern needs, or enough
/// digits), so a pattern is compiled only once some text needs it. Compiling all eight costs
/// about 1.5 ms, which a one-shot `docdex search` would otherwise pay on every run.
struct Detector {
    kind: PiiKind,
    pattern: &'static str,
    check: fn(&str) -> bool,
    may_match: fn(&str) -> bool,
}

fn always(_: &str) -> bool {
    true
}

/// Provider prefixes: every API key alternative starts with one of them.
const API_KEY_PREFIXES: &[&str] = &[
    "AKIA",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xox",
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "rk_test_",
    "sk-",
    "AIza",
    "ya29.",
    "npm_",
    "pypi-",
    "SG.",
    "hf_",
    "dop_v1_",
];

fn ascii_digits(text: &str) -> usize {
    text.bytes().filter(u8::is_ascii_digit).count()
}

/// Two capitals then two digits at the start of a word, then 8 or more capitals and digits
/// (blanks between): the start every IBAN needs. `SHA256` is not one.
fn has_iban_start(text: &str) -> bool {
    let b = text.as_bytes();
    (0..b.len().saturating_sub(3)).any(|i| {
        let w = &b[i..i + 4];
        w[0].is_ascii_uppercase()
            && w[1].is_ascii_uppercase()
            && w[2].is_ascii_digit()
            && w[3].is_ascii_digit()
            && (i == 0 || !is_word_byte(b[i - 1]))
            && b[i + 4..]
                .iter()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || **c == b' ')
                .filter(|c| **c != b' ')
                .count()
                >= 8
    })
}

fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

/// An `@` between word characters (`jane@acme`); a decorator (`@property`) is not one.
fn may_hold_email(text: &str) -> bool {
    let b = text.as_bytes();
    memchr_all(b'@', b)
        .any(|i| i > 0 && is_word_byte(b[i - 1]) && b.get(i + 1).is_some_and(|c| c.is_ascii_alphanumeric()))
}

/// `://` followed, before a blank or a `/`, by a `:` and then an `@` (`redis://u:pw@host`).
fn may_hold_url_credentials(text: &str) -> bool {
    text.match_indices("://").any(|(i, _)| {
        let rest = &text.as_bytes()[i + 3..];
        let end =
            rest.iter().position(|c| c.is_ascii_whitespace() || matches!(c, b'/' | b'?' | b'#')).unwrap_or(rest.len());
        let part = &rest[..end];
        part.iter().position(|c| *c == b':').is_some_and(|colon| part[colon..].contains(&b'@'))
    })
}

/// A run of 13 or more digits, single blanks or dashes between: the shape every card number has.
fn may_hold_card(text: &str) -> bool {
    let mut digits = 0;
    let mut last_sep = false;
    for c in text.bytes() {
        match c {
            b'0'..=b'9' => {
                digits += 1;
                last_sep = false;
                if digits >= 13 {
                    return true;
                }
            }
            b' ' | b'-' if !last_sep && digits > 0 => last_sep = true,
            _ => {
                digits = 0;
                last_sep = false;
            }
        }
    }
    false
}

/// `+` then a digit, or three digits, an optional `)`, a separator, three digits, a separator
/// and a digit (`415) 555-0132`): where either phone form starts.
fn may_hold_phone(text: &str) -> bool {
    let b = text.as_bytes();
    let plus = memchr_all(b'+', b).any(|i| b.get(i + 1).is_some_and(|c| (b'1'..=b'9').contains(c)));
    let digits = |at: usize, n: usize| b.get(at..at + n).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    let sep = |at: usize| matches!(b.get(at), Some(b' ' | b'.' | b'-'));
    plus || (0..b.len()).any(|i| {
        let j = i + 3 + usize::from(b.get(i + 3) == Some(&b')'));
        digits(i, 3) && sep(j) && digits(j + 1, 3) && sep(j + 4) && digits(j + 5, 1)
    })
}

fn memchr_all(needle: u8, hay: &[u8]) -> impl Iterator<Item = usize> + '_ {
    hay.iter().enumerate().filter(move |(_, c)| **c == needle).map(|(i, _)| i)
}

const DETECTORS: &[Detector] = &[
    Detector {
        kind: PiiKind::PrivateKey,
        pattern: r"-----BEGIN (?:RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END [A-Z ]*PRIVATE KEY(?: BLOCK)?-----|\z)",
        check: pem::holds_key_material,
        may_match: |t| t.contains("-----BEGIN "),
    },
    Detector {
        kind: PiiKind::Jwt,
        pattern: r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        check: always,
        may_match: |t| t.contains("eyJ"),
    },
    // Before API keys and e-mail: `https://bot:ghp_...@host` is one credential, and
    // `mypass@github.com` in `redis://me:mypass@github.com:6379` is not an address.
    Detector {
        kind: PiiKind::UrlCredentials,
        pattern: r#"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:"'<>`\\]*:[^\s/?#"'<>`\\]+@"#,
        check: url_password_ok,
        may_match: may_hold_url_credentials,
    },
    Detector {
        kind: PiiKind::ApiKey,
        pattern: concat!(
            r"\b(?:",
            r"AKIA[0-9A-Z]{16}",                          // AWS access key id
            r"|gh[pousr]_[A-Za-z0-9]{36,255}",            // GitHub tokens
            r"|github_pat_[A-Za-z0-9_]{60,255}",          // GitHub fine-grained
            r"|glpat-[A-Za-z0-9_-]{20,}",                 // GitLab
            r"|xox[abposr]-[A-Za-z0-9-]{10,}",            // Slack
            r"|(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}", // Stripe
            r"|sk-ant-[A-Za-z0-9_-]{20,}",                // Anthropic
            r"|sk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{32,}", // OpenAI
            r"|AIza[0-9A-Za-z_-]{35}",                    // Google API key
            r"|ya29\.[0-9A-Za-z_-]{20,}",                 // Google OAuth token
            r"|npm_[A-Za-z0-9]{36}",                      // npm
            r"|pypi-[A-Za-z0-9_-]{50,}",                  // PyPI
            r"|SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}", // SendGrid
            r"|hf_[A-Za-z0-9]{34}",                       // Hugging Face
            r"|dop_v1_[a-f0-9]{64}",                      // DigitalOcean
            r")\b"
        ),
        check: has_entropy,
        may_match: |t| API_KEY_PREFIXES.iter().any(|p| t.contains(p)),
    },
    Detector {
        kind: PiiKind::Email,
        pattern: r"\b[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?)*\.[A-Za-z]{2,24}\b",
        check: email_ok,
        may_match: may_hold_email,
    },
    Detector {
        kind: PiiKind::Iban,
        pattern: r"\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b",
        check: iban_ok,
        may_match: has_iban_start,
    },
    // American Express as it is printed, 4-6-5 (`3782 822463 10005`), or at least 4 + 4 + 4 + 1
    // digits in groups of four.
    Detector {
        kind: PiiKind::CardNumber,
        pattern: r"\b(?:3[47][0-9]{2}[ -]?[0-9]{6}[ -]?[0-9]{5}|[2-6][0-9]{3}(?:[ -]?[0-9]{4}){2}[ -]?[0-9]{1,7})\b",
        check: card_ok,
        may_match: may_hold_card,
    },
    // At least 5 digits (`+` form: 1 + 2 groups of 1 + 2) or 10 (the North American form).
    Detector {
        kind: PiiKind::Phone,
        pattern: r"(?:\+[1-9][0-9]{0,2}[ .-]?(?:\(?[0-9]{1,4}\)?[ .-]?){2,4}[0-9]{2,4}|\(?\b[2-9][0-9]{2}\)?[ .-][2-9][0-9]{2}[ .-][0-9]{4}\b)",
        check: phone_ok,
        may_match: |t| ascii_digits(t) >= 5 && may_hold_phone(t),
    },
];

/// Detector `i`'s regex, compiled on first need (`None` if it does not compile: a bug the
/// unit tests catch, never a panic).
fn regex(i: usize) -> Option<&'static Regex> {
    static COMPILED: [OnceLock<Option<Regex>>; DETECTORS.len()] = [const { OnceLock::new() }; DETECTORS.len()];
    COMPILED.get(i)?.get_or_init(|| Regex::new(DETECTORS[i].pattern).ok()).as_ref()
}

/// Every finding in `text`, in order, without overlaps (the earlier detector in the list above
/// wins an overlap: a key inside a private key block is the block).
pub fn detect(text: &str) -> Vec<Finding> {
    let mut found: Vec<Finding> = Vec::new();
    // The `user:password` of URLs whose password is a placeholder: not masked, and not an
    // e-mail address either (`user:password@example.com`).
    let mut placeholders: Vec<std::ops::Range<usize>> = Vec::new();
    for (i, d) in DETECTORS.iter().enumerate() {
        let matches = match (d.may_match)(text) {
            true => regex(i).map(|re| re.find_iter(text)),
            false => None,
        };
        for m in matches.into_iter().flatten() {
            // URL credentials: only `user:password` is masked; `scheme://` and `@host` stay.
            let range = match d.kind {
                PiiKind::UrlCredentials => m.start() + m.as_str().find("://").map_or(0, |i| i + 3)..m.end() - 1,
                _ => m.range(),
            };
            let overlaps = |r: &std::ops::Range<usize>| r.start < range.end && range.start < r.end;
            if found.iter().any(|f| overlaps(&f.range)) || placeholders.iter().any(overlaps) {
                continue;
            }
            if !(d.check)(m.as_str()) {
                if d.kind == PiiKind::UrlCredentials {
                    placeholders.push(range);
                }
                continue;
            }
            // `"import pytest\n@pytest.fixture"`: the letter of an escape sequence glued to a
            // decorator or a domain is not the start of an address.
            if d.kind == PiiKind::Email && text[..m.start()].ends_with('\\') {
                continue;
            }
            // `ssh://git@github.com/org/repo`: a URL's user name, not an address.
            if d.kind == PiiKind::Email && text[..m.start()].ends_with("://") {
                continue;
            }
            // `git@github.com:org/repo.git`: an SSH remote (user@host:path), not an address.
            if d.kind == PiiKind::Email
                && text[m.end()..].starts_with(':')
                && !text[m.end() + 1..].starts_with([' ', '\n'])
            {
                continue;
            }
            found.push(Finding { kind: d.kind, range });
        }
        for (kind, range) in line_rules(d.kind, text) {
            if !found.iter().any(|f| f.range.start < range.end && range.start < f.range.end) {
                found.push(Finding { kind, range });
            }
        }
    }
    found.sort_by_key(|f| f.range.start);
    found
}

/// The rules that are not one regex, run right after the detector of `after` (so they take
/// their place in its order): key body lines a text shows without its `BEGIN` line (after the
/// PEM block pattern), and secrets assigned to a telling name (after API keys, so
/// `GITHUB_TOKEN=ghp_...` stays an API key and `password = "postgres://..."` URL credentials).
fn line_rules(after: PiiKind, text: &str) -> Vec<(PiiKind, std::ops::Range<usize>)> {
    match after {
        PiiKind::PrivateKey => pem::bodies(text).into_iter().map(|r| (PiiKind::PrivateKey, r)).collect(),
        PiiKind::ApiKey => assign::values(text).into_iter().map(|r| (PiiKind::Secret, r)).collect(),
        _ => Vec::new(),
    }
}

/// `text` with every finding masked, and the findings. An e-mail keeps its domain
/// (`[EMAIL]@company.com`), the rest become `[KIND]`; a private key keeps its line count so
/// line numbers after it stay true.
pub fn mask(text: &str) -> (String, Vec<Finding>) {
    let found = detect(text);
    (render(text, &found), found)
}

/// `text` with `found` (in order, not overlapping) masked.
fn render(text: &str, found: &[Finding]) -> String {
    if found.is_empty() {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in found {
        out.push_str(&text[at..f.range.start]);
        let hit = &text[f.range.clone()];
        match f.kind {
            PiiKind::Email => {
                out.push_str("[EMAIL]");
                out.push_str(&hit[hit.find('@').unwrap_or(0)..]);
            }
            PiiKind::PrivateKey => {
                out.push_str("[PRIVATE_KEY]");
                for _ in 0..hit.matches('\n').count() {
                    out.push('\n');
                }
            }
            kind => {
                out.push('[');
                out.push_str(kind.label());
                out.push(']');
            }
        }
        at = f.range.end;
    }
    out.push_str(&text[at..]);
    out
}

/// Masks text cut from a file knowing the whole file: besides what [`mask`] finds in the text
/// itself, every line the file shows inside a PEM private key block is masked (a snippet that
/// starts below the `BEGIN` line, a chunk that starts in the middle of a key), and lines the file
/// shows inside a certificate or public key are not taken for key material.
pub struct FileMasker {
    blocks: Vec<pem::PemBlock>,
}

impl FileMasker {
    /// The masker of a file whose (indexed) text is `file_text`.
    pub fn new(file_text: &str) -> FileMasker {
        let spans = pem::line_spans(file_text);
        let mut blocks = pem::blocks(file_text);
        // A parser that names the markers holds code between them, not a key.
        blocks.retain(|b| {
            !b.private || pem::holds_key_material(&file_text[pem::lines_range(file_text, &spans, b.lines.clone())])
        });
        FileMasker { blocks }
    }

    /// `text`, whose first line is line `first_line` (1-based) of the file, masked.
    pub fn mask(&self, text: &str, first_line: u32) -> (String, Vec<Finding>) {
        let mut found = detect(text);
        if self.blocks.is_empty() {
            return (render(text, &found), found);
        }
        let spans = pem::line_spans(text);
        let at = |i: usize| (first_line.max(1) as usize - 1) + i;
        let inside =
            |i: usize, private: bool| self.blocks.iter().any(|b| b.private == private && b.lines.contains(&at(i)));
        // Body-like lines the file shows to be a certificate's: public.
        found.retain(|f| {
            f.kind != PiiKind::PrivateKey
                || !spans
                    .iter()
                    .enumerate()
                    .any(|(i, s)| s.start < f.range.end && f.range.start <= s.end && inside(i, false))
        });
        let mut i = 0;
        while i < spans.len() {
            if !inside(i, true) {
                i += 1;
                continue;
            }
            let mut end = i;
            while end + 1 < spans.len() && inside(end + 1, true) {
                end += 1;
            }
            let range = pem::lines_range(text, &spans, i..=end);
            found.retain(|f| f.range.end <= range.start || range.end <= f.range.start);
            if !range.is_empty() {
                found.push(Finding { kind: PiiKind::PrivateKey, range });
            }
            i = end + 1;
        }
        found.sort_by_key(|f| f.range.start);
        (render(text, &found), found)
    }

    /// Line `line_no` of the file masked as [`Self::mask`] masks it, but only from byte `from`
    /// on (an AST sample starting at its node's column). The whole line is scanned, since a
    /// secret may be told by what precedes it (`password = "..."`); a secret straddling `from`
    /// is shown masked from its start. A `from` that is no char boundary of `line` means 0.
    pub fn mask_from(&self, line: &str, line_no: u32, from: usize) -> String {
        let from = if line.is_char_boundary(from) { from } else { 0 };
        let (_, found) = self.mask(line, line_no);
        let from = found.iter().find(|f| f.range.start < from && from < f.range.end).map_or(from, |f| f.range.start);
        let tail: Vec<Finding> = found
            .into_iter()
            .filter(|f| f.range.start >= from)
            .map(|f| Finding { kind: f.kind, range: f.range.start - from..f.range.end - from })
            .collect();
        render(line.get(from..).unwrap_or_default(), &tail)
    }
}

/// A whole file's text with its private keys' bodies blanked (spaces; the length, line ends and
/// markers kept, so chunk offsets and line numbers stay true), for the index: a key body's base64
/// lines split into index terms at `+` and `/`, and words up to 48 bytes were indexed, so a piece
/// of a key found its file and a key chunk was a hit for unrelated queries. Snippets are cut
/// from the file itself and masked on their own.
pub fn without_key_material(text: &str) -> std::borrow::Cow<'_, str> {
    let ranges = pem::key_material(text);
    if ranges.is_empty() {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut bytes = text.as_bytes().to_vec();
    for r in ranges {
        for b in &mut bytes[r] {
            if *b != b'\n' && *b != b'\r' {
                *b = b' ';
            }
        }
    }
    // Every blanked range starts and ends at an ASCII character: still UTF-8.
    String::from_utf8(bytes).map_or(std::borrow::Cow::Borrowed(text), std::borrow::Cow::Owned)
}

/// True when a text could show key material only its file can tell apart: a line of base64
/// (16 characters or more, or with a digit, `+`, `/` or `=`). Search reads a hit's file again
/// only for those.
fn may_hold_key_body(text: &str) -> bool {
    text.lines().any(|l| {
        let t = l.trim();
        !t.is_empty()
            && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'=')
            && (t.len() >= 16 || t.bytes().any(|b| b.is_ascii_digit() || b == b'+' || b == b'/' || b == b'='))
    })
}

/// Masks the snippets and context lines of search hits; returns what was found. A masked
/// line's highlights are dropped where the word they marked is gone or moved. `read` gives a
/// hit's file text (as indexed) by path; it is asked only for hits whose snippet shows a line
/// of base64, so a private key's body is masked even when the snippet or its chunk starts below
/// the key's `BEGIN` line (see [`FileMasker`]). Without it (`None`), the text alone decides.
pub fn redact_hits(
    hits: &mut [crate::engine::search::types::SearchHit],
    mut read: impl FnMut(&str) -> Option<String>,
) -> Vec<Finding> {
    let mut all = Vec::new();
    let mut files: std::collections::HashMap<String, Option<FileMasker>> = Default::default();
    for h in hits {
        let needs_file = may_hold_key_body(&h.snippet) || h.context.iter().any(|c| may_hold_key_body(&c.text));
        let masker = match needs_file {
            true => files.entry(h.path.clone()).or_insert_with(|| read(&h.path).map(|t| FileMasker::new(&t))).as_ref(),
            false => None,
        };
        let cut = |text: &str, line: u32| match masker {
            Some(m) => m.mask(text, line),
            None => mask(text),
        };
        let (masked, found) = cut(&h.snippet, h.snippet_line_start);
        if !found.is_empty() {
            let before: Vec<&str> = h.snippet.lines().collect();
            let after: Vec<&str> = masked.lines().collect();
            let start = h.snippet_line_start;
            h.highlights.retain_mut(|hl| {
                let i = hl.line.saturating_sub(start) as usize;
                let (Some(b), Some(a)) = (before.get(i), after.get(i)) else { return false };
                match moved_range(b, a, hl.start..hl.end) {
                    Some(r) => {
                        (hl.start, hl.end) = (r.start, r.end);
                        true
                    }
                    None => false,
                }
            });
            h.snippet = masked;
            all.extend(found);
        }
        for c in &mut h.context {
            let (masked, found) = cut(&c.text, c.line);
            if !found.is_empty() {
                c.text = masked;
                all.extend(found);
            }
        }
    }
    all
}

/// Where the word at `range` of the line `before` is in `after`, the line with something masked:
/// masking changes lengths (`alice@x.org` -> `[EMAIL]@x.org`), so a highlight after a masked
/// value moves. The word's k-th occurrence is the k-th in `after` when masking left their count
/// alone; otherwise it stands where it did before the first change or as far from the line's end
/// after the last. `None` when the word was masked away (or cannot be placed).
fn moved_range(before: &str, after: &str, range: std::ops::Range<usize>) -> Option<std::ops::Range<usize>> {
    let word = before.get(range.clone()).filter(|w| !w.is_empty())?;
    if before == after {
        return Some(range);
    }
    let was: Vec<usize> = before.match_indices(word).map(|(at, _)| at).collect();
    let now: Vec<usize> = after.match_indices(word).map(|(at, _)| at).collect();
    if let Some(k) = was.iter().position(|at| *at == range.start).filter(|_| was.len() == now.len()) {
        return Some(now[k]..now[k] + word.len());
    }
    let (b, a) = (before.as_bytes(), after.as_bytes());
    let same_head = b.iter().zip(a).take_while(|(x, y)| x == y).count();
    let same_tail = b.iter().rev().zip(a.iter().rev()).take_while(|(x, y)| x == y).count();
    let placed = if range.end <= same_head {
        range
    } else if range.start >= b.len().saturating_sub(same_tail) {
        let shift = |at: usize| at + a.len() - b.len();
        shift(range.start)..shift(range.end)
    } else {
        return None;
    };
    (after.get(placed.clone()) == Some(word)).then_some(placed)
}

/// True when `url`'s host is this machine (`localhost`, 127.0.0.0/8, `::1`).
pub fn is_loopback_url(url: &str) -> bool {
    let Ok(u) = url::Url::parse(url) else { return false };
    match u.host() {
        Some(url::Host::Domain(d)) => {
            d.eq_ignore_ascii_case("localhost") || d.to_ascii_lowercase().ends_with(".localhost")
        }
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// `[privacy] local_only`: a model endpoint off this machine is refused unless `allow_remote`.
pub fn check_model_endpoint(cfg: &crate::config::PrivacyConfig, base_url: &str) -> crate::error::Result<()> {
    if !cfg.local_only || cfg.allow_remote || is_loopback_url(base_url) {
        return Ok(());
    }
    Err(crate::error::Error::BadRequest(format!(
        "the model endpoint {base_url} is not on this machine and [privacy] local_only = true: nothing is sent \
         there. Use a local model, or set [privacy] allow_remote = true (context is masked for PII and secrets first)"
    )))
}

/// Masks what goes to a non-loopback model (the messages' texts); returns the report (`None`
/// for a loopback model).
pub fn guard_messages<'a>(base_url: &str, texts: impl Iterator<Item = &'a mut String>) -> Option<Vec<Finding>> {
    if is_loopback_url(base_url) {
        return None;
    }
    let mut all = Vec::new();
    for text in texts {
        let (masked, found) = mask(text);
        if !found.is_empty() {
            *text = masked;
            all.extend(found);
        }
    }
    Some(all)
}

/// The texts to embed as an embedding model at `base_url` may see them: masked when it is off
/// this machine (`[privacy] allow_remote`), as they are for a loopback one. Chunks were masked
/// for a remote embedder, while search queries, memories and profile preferences went as typed.
pub fn guard_embed_inputs(base_url: &str, texts: Vec<String>) -> Vec<String> {
    if is_loopback_url(base_url) {
        return texts;
    }
    texts.into_iter().map(|t| mask(&t).0).collect()
}

/// Counts per kind, for the redaction report ("2 EMAIL, 1 API_KEY").
pub fn summarize(found: &[Finding]) -> String {
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for f in found {
        *counts.entry(f.kind.label()).or_default() += 1;
    }
    counts.iter().map(|(k, n)| format!("{n} {k}")).collect::<Vec<_>>().join(", ")
}

/// A token that looks random enough to be a key: digits and letters mixed, not one character
/// repeated (placeholders like `sk_test_xxxxxxxxxxxxxxxx` are documentation, not secrets).
fn has_entropy(s: &str) -> bool {
    let body = s.rsplit(['_', '-', '.']).next().unwrap_or(s);
    let distinct: std::collections::HashSet<char> = s.chars().collect();
    let lowered = s.to_ascii_lowercase();
    // Slack's `xoxb-<team id>-<user id>-<secret>`: the numeric ids are the digits, the secret
    // part is letters of both cases (24 of them); the ids alone make it a token, not a word.
    let slack_ids = s.starts_with("xox")
        && s.split('-').filter(|p| p.len() >= 6 && p.bytes().all(|b| b.is_ascii_digit())).count() >= 1;
    distinct.len() >= 8
        && !lowered.contains("xxxxxx")
        && !lowered.contains("example")
        && !lowered.contains("your")
        && (body.chars().any(|c| c.is_ascii_digit()) || s.starts_with("AKIA") || body.len() >= 32 || slack_ids)
}

/// A password in a URL that is not a documentation placeholder: `{password}`, `${PASS}`,
/// `%(password)s`, `***` (already masked) or the bare words `password`, `pass`, `secret`.
fn url_password_ok(s: &str) -> bool {
    let userinfo = s.split_once("://").map_or(s, |(_, rest)| rest).trim_end_matches('@');
    let password = userinfo.split_once(':').map_or("", |(_, p)| p);
    let lowered = password.to_ascii_lowercase();
    let template = (password.starts_with('{') || password.starts_with("${") || password.starts_with("%("))
        && (password.ends_with('}') || password.ends_with(")s"));
    !password.is_empty()
        && !template
        && !password.chars().all(|c| c == '*')
        && !["%s", "password", "passwd", "pass", "pwd", "secret", "token"].contains(&lowered.as_str())
}

/// Real addresses, not package specs (`lodash@4.17.21` is kept out by the TLD rule already),
/// nor file names or decorators that happen to contain `@`.
fn email_ok(s: &str) -> bool {
    let (local, domain) = s.split_once('@').unwrap_or((s, ""));
    let tld = domain.rsplit('.').next().unwrap_or("");
    const FILE_EXTENSIONS: &[&str] = &[
        "png", "jpg", "jpeg", "gif", "svg", "js", "ts", "py", "rs", "go", "css", "html", "json", "md", "txt", "webp",
        "log", "pid", "sock", "lock", "yml", "yaml", "toml", "xml", "csv",
    ];
    !local.is_empty() && !FILE_EXTENSIONS.contains(&tld.to_ascii_lowercase().as_str())
}

/// Digits of a candidate.
fn digits(s: &str) -> Vec<u32> {
    s.chars().filter_map(|c| c.to_digit(10)).collect()
}

/// Luhn, on 13-19 digits with a card network's prefix.
fn card_ok(s: &str) -> bool {
    let d = digits(s);
    if !(13..=19).contains(&d.len()) {
        return false;
    }
    let prefix2 = d[0] * 10 + d[1];
    let prefix4 = prefix2 * 100 + d[2] * 10 + d[3];
    let network = d[0] == 4
        || (51..=55).contains(&prefix2)
        || (2221..=2720).contains(&prefix4)
        || prefix2 == 34
        || prefix2 == 37
        || prefix4 == 6011
        || prefix2 == 65
        || (3528..=3589).contains(&prefix4);
    if !network || d.iter().all(|&x| x == d[0]) {
        return false;
    }
    let sum: u32 = d
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &x)| {
            if i % 2 == 1 {
                if x * 2 > 9 {
                    x * 2 - 9
                } else {
                    x * 2
                }
            } else {
                x
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// ISO 13616 mod-97 check, and a length a country uses (15-34).
fn iban_ok(s: &str) -> bool {
    let compact: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    if !(15..=34).contains(&compact.len()) {
        return false;
    }
    let (head, tail) = compact.split_at(4);
    let mut rem: u64 = 0;
    for c in tail.chars().chain(head.chars()) {
        let v = match c.to_digit(36) {
            Some(v) => v as u64,
            None => return false,
        };
        rem = if v >= 10 { (rem * 100 + v) % 97 } else { (rem * 10 + v) % 97 };
    }
    rem == 1
}

/// A phone number: 9-15 digits (E.164), and not a date, a version or a long run of one digit.
fn phone_ok(s: &str) -> bool {
    let d = digits(s);
    // A number written with dots uses only dots (`415.555.0132`); `974.595 1003` is decimals
    // side by side (SVG path data, coordinates), not a phone number.
    let seps: std::collections::HashSet<char> = s.chars().filter(|c| matches!(c, '.' | ' ' | '-')).collect();
    let mixed_dots = seps.contains(&'.') && seps.len() > 1;
    (9..=15).contains(&d.len()) && !d.iter().all(|&x| x == d[0]) && !s.contains("..") && !mixed_dots
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<PiiKind> {
        detect(text).into_iter().map(|f| f.kind).collect()
    }

    #[test]
    fn a_pem_parser_that_names_the_markers_is_code_not_a_key() {
        let parser = "def read_key(lines):\n    for l in lines:\n        if l == \"-----BEGIN RSA PRIVATE KEY-----\":\n            start = True\n            body = []\n        elif l == \"-----END RSA PRIVATE KEY-----\":\n            return decode(body)\n";
        assert!(!kinds(parser).contains(&PiiKind::PrivateKey), "{:?}", detect(parser));
        // Shown whole (docdex get, /v1/open) or from the middle of the loop, the code stays.
        let masker = FileMasker::new(parser);
        assert_eq!(masker.mask(parser, 1).0, parser);
        let middle: String = parser.lines().skip(3).take(2).map(|l| format!("{l}\n")).collect();
        assert_eq!(masker.mask(&middle, 4).0, middle);
        // Markers named on adjacent lines, as constants.
        let consts = "BEGIN = \"-----BEGIN PRIVATE KEY-----\"\nEND = \"-----END PRIVATE KEY-----\"\n";
        assert!(!kinds(consts).contains(&PiiKind::PrivateKey), "{:?}", detect(consts));
        // A real key is still masked: whole, quoted in code, with armor headers, and from its middle.
        let body = pem::tests::fake_body(3, "");
        let key = format!(
            "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\n{}\n-----END RSA PRIVATE KEY-----\n",
            body.join("\n")
        );
        let masked = render(&key, &detect(&key));
        assert!(masked.starts_with("[PRIVATE_KEY]") && !body.iter().any(|b| masked.contains(b.as_str())), "{masked}");
        let java: String = key.lines().map(|l| format!("    \"{l}\\n\" +\n")).collect();
        assert!(kinds(&java).contains(&PiiKind::PrivateKey), "{java}");
        let masked = FileMasker::new(&key).mask(&body[1], 5).0;
        assert!(!masked.contains(&body[1]), "{masked}");
        // A marker alone (a truncated paste) is still taken for a key.
        assert_eq!(kinds("-----BEGIN OPENSSH PRIVATE KEY-----"), [PiiKind::PrivateKey]);
    }

    /// An AST sample starts at its node's column; the secret it shows is still found by what
    /// precedes it on the line, and one the column falls inside is shown masked whole.
    #[test]
    fn a_line_masked_from_a_column_keeps_what_the_whole_line_tells() {
        let line = "let n = 1; pub const DB_PASSWORD: &str = \"Tq8vR2mK9x!\"; let m = 2;";
        let masker = FileMasker::new(line);
        let whole = masker.mask(line, 1).0;
        assert!(!whole.contains("Tq8vR2mK9x"), "{whole}");
        let at = |s: &str| line.find(s).unwrap();
        let value = masker.mask_from(line, 1, at("\"Tq8"));
        assert!(value.starts_with('"') && !value.contains("Tq8vR2mK9x"), "{value}");
        assert!(whole.ends_with(&value), "the whole line's masking, cut: {value} / {whole}");
        let inside = masker.mask_from(line, 1, at("R2mK"));
        assert!(!inside.contains("R2mK") && whole.ends_with(&inside), "{inside}");
        assert_eq!(masker.mask_from(line, 1, at("let m")), "let m = 2;");
        assert_eq!(masker.mask_from(line, 1, 0), whole);
        assert_eq!(masker.mask_from(line, 1, 10_000), whole, "past the end: the whole line");
    }

    #[test]
    fn a_pattern_is_skipped_only_where_it_cannot_match() {
        let corpus = include_str!("../../tests/fixtures/pii/corpus.tsv");
        let texts: Vec<&str> = corpus.lines().filter_map(|l| l.split_once('\t')).map(|(_, t)| t).collect();
        assert!(texts.len() > 50, "the labelled corpus is read");
        for (i, d) in DETECTORS.iter().enumerate() {
            let re = regex(i).unwrap_or_else(|| panic!("{:?} does not compile", d.kind));
            let mut matched = 0;
            for t in &texts {
                if re.is_match(t) {
                    matched += 1;
                    assert!((d.may_match)(t), "{:?} matches but its pre-test refused: {t}", d.kind);
                }
            }
            assert!(matched > 0, "{:?}: the corpus exercises every pattern", d.kind);
        }
        // Plain code compiles nothing beyond what it could hold.
        assert!(!DETECTORS
            .iter()
            .any(|d| d.kind != PiiKind::Phone && (d.may_match)("fn parse(x: u32) -> i64 { 12345 }")));
        // Nor does what every Python or Rust snippet holds: decorators, hashes, links, numbers.
        for code in [
            "@property\ndef name(self):",
            "digest = hashlib.SHA256(data)",
            "see https://docs.python.org/3/library/http.client.html",
            "MAX = 2147483647 + 1000000",
            "x = (a + b) * 100",
            "version 3.11.7, 2024-01-15",
        ] {
            let hit: Vec<_> = DETECTORS.iter().filter(|d| (d.may_match)(code)).map(|d| d.kind).collect();
            assert!(hit.is_empty(), "{code}: {hit:?}");
        }
    }

    #[test]
    fn finds_and_masks() {
        let (masked, found) = mask("mail jane.doe@acme-corp.com or call +1 415 555 0132 now");
        assert_eq!(masked, "mail [EMAIL]@acme-corp.com or call [PHONE] now");
        assert_eq!(found.len(), 2);
        assert_eq!(kinds("key AKIAZ3MPLE7Q2WXYV4KD here"), [PiiKind::ApiKey]);
        assert_eq!(kinds("ghp_4fT9kQ2mZ8xR1vB7nL3pW6yH0sJ5dC2aE9uK"), [PiiKind::ApiKey]);
        assert_eq!(kinds("card 4111 1111 1111 1111."), [PiiKind::CardNumber]);
        assert_eq!(kinds("iban DE89 3704 0044 0532 0130 00"), [PiiKind::Iban]);
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
        assert_eq!(kinds(jwt), [PiiKind::Jwt]);
        let pem = "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\nabc\n-----END RSA PRIVATE KEY-----\nb";
        let (masked, _) = mask(pem);
        assert_eq!(masked, "a\n[PRIVATE_KEY]\n\n\n\nb", "line count kept");
    }

    #[test]
    fn url_credentials_keep_scheme_and_host() {
        let (masked, found) = mask("broker_url = 'redis://:Zq8Wx2Ec4Rv6@cache-01.acme.io:6379/0'");
        assert_eq!(masked, "broker_url = 'redis://[URL_CREDENTIALS]@cache-01.acme.io:6379/0'");
        assert_eq!(found.len(), 1);
        // A port after the host made the password look like an SSH remote's user, unmasked.
        let (masked, _) = mask("'sentinel://myuser:mypass@github.com:123/1;'");
        assert_eq!(masked, "'sentinel://[URL_CREDENTIALS]@github.com:123/1;'");
        // A token as the password is one credential, not a key plus a visible user name.
        let remote = "https://deploy-bot:ghp_4fT9kQ2mZ8xR1vB7nL3pW6yH0sJ5dC2aE9uK@github.com/acme/app.git";
        assert_eq!(mask(remote).0, "https://[URL_CREDENTIALS]@github.com/acme/app.git");
        assert_eq!(kinds("db+postgresql://scott:tiger@db.acme.com/orders"), [PiiKind::UrlCredentials]);
        assert_eq!(
            kinds("amqp://ops:hunter2x@mq.acme.dev, owner ops-team@acme.dev"),
            [PiiKind::UrlCredentials, PiiKind::Email]
        );
        // Not credentials: no password, a path or query after the host, a mail link, placeholders.
        for (text, want) in [
            ("https://fosstodon.org/@pytest", vec![]),
            ("ssh://git@github.com/acme/app.git", vec![]),
            ("git clone git@github.com:acme/app.git", vec![]),
            ("https://lists.acme.org/unsubscribe?email=jane.doe@acme.org", vec![PiiKind::Email]),
            ("https://acme.org:8443/u?email=jane.doe@acme.org", vec![PiiKind::Email]),
            ("<a href=\"mailto:jane.doe@acme.org\">", vec![PiiKind::Email]),
            ("pyamqp://{user}:{password}@{host}:5672//", vec![]),
            ("mongodb://user:password@example.com/db", vec![]),
            ("amqp://guest:**@localhost:5672//", vec![]),
            ("dynamodb://a:@localhost:8000", vec![]),
            ("'redis://localhost:6379','a.b@c.io'", vec![PiiKind::Email]),
        ] {
            assert_eq!(kinds(text), want, "{text}");
        }
        assert_eq!(summarize(&detect("redis://:Zq8Wx2Ec4Rv6@h.io and x@acme.io")), "1 EMAIL, 1 URL_CREDENTIALS");
    }

    #[test]
    fn loopback_endpoints() {
        assert!(is_loopback_url("http://127.0.0.1:11434"));
        assert!(is_loopback_url("http://localhost:8080/v1"));
        assert!(is_loopback_url("http://[::1]:1234"));
        assert!(!is_loopback_url("https://api.openai.com/v1"));
        assert!(!is_loopback_url("http://10.0.0.5:11434"));
        let strict = crate::config::PrivacyConfig::default();
        assert!(check_model_endpoint(&strict, "https://api.openai.com/v1").is_err());
        assert!(check_model_endpoint(&strict, "http://127.0.0.1:11434").is_ok());
        let open = crate::config::PrivacyConfig { allow_remote: true, ..Default::default() };
        assert!(check_model_endpoint(&open, "https://api.openai.com/v1").is_ok());
        let mut msgs = ["key AKIAZ3MPLE7Q2WXYV4KD".to_string()];
        assert!(guard_messages("http://127.0.0.1:1", msgs.iter_mut()).is_none());
        assert_eq!(guard_messages("https://api.example.net", msgs.iter_mut()).map(|f| f.len()), Some(1));
        assert_eq!(msgs[0], "key [API_KEY]");
        let query = || vec!["where is password = \"Sup3rS3cretPw\" read".to_string()];
        assert_eq!(guard_embed_inputs("http://localhost:11434", query()), query());
        assert_eq!(guard_embed_inputs("http://0.0.0.0:11434", query()), ["where is password = \"[SECRET]\" read"]);
    }

    /// A YAML file with an indented key after 30 settings, as an `openssl genrsa` key is pasted
    /// into deployment variables; returns the text and the key's first and last body lines.
    fn vars_yml() -> (String, u32, u32) {
        let body = pem::tests::fake_body(18, "      ");
        let mut lines = vec!["all:".to_string(), "  vars:".to_string()];
        lines.extend((0..30).map(|i| format!("    setting_{i}: value{i}")));
        lines.push("    tls_key: |".into());
        lines.push("      -----BEGIN RSA PRIVATE KEY-----".into());
        let first = lines.len() as u32 + 1;
        lines.extend(body);
        let last = lines.len() as u32;
        lines.push("      -----END RSA PRIVATE KEY-----".into());
        lines.push("    other: 1".into());
        (lines.join("\n") + "\n", first, last)
    }

    /// Lines `a..=b` (1-based) of `text`, as a snippet shows them.
    fn cut(text: &str, a: u32, b: u32) -> String {
        text.lines().skip(a as usize - 1).take((b + 1 - a) as usize).map(|l| format!("{l}\n")).collect()
    }

    #[test]
    fn a_key_cut_below_its_begin_line_is_masked_with_its_file_at_hand() {
        let (file, first, last) = vars_yml();
        let masker = FileMasker::new(&file);
        let key_line = |n: u32| file.lines().nth(n as usize - 1).unwrap().trim().to_string();
        // Any window of the key: a single body line, the short last line, the end marker.
        for (a, b) in [(first + 2, first + 4), (first + 5, first + 5), (last, last + 2), (first - 3, first), (40, 51)] {
            let snippet = cut(&file, a, b);
            let (masked, found) = masker.mask(&snippet, a);
            for n in a.max(first)..=b.min(last) {
                assert!(!masked.contains(&key_line(n)), "line {n} shown in {a}-{b}:\n{masked}");
            }
            assert!(found.iter().any(|f| f.kind == PiiKind::PrivateKey), "{a}-{b}");
            assert_eq!(masked.lines().count(), snippet.lines().count(), "line count kept");
        }
        // Lines outside the key are untouched.
        let (masked, found) = masker.mask(&cut(&file, 3, 6), 3);
        assert!(found.is_empty() && masked.contains("setting_1: value1"), "{masked}");
        // The text alone still masks a run of body lines (no marker in sight).
        let (masked, _) = mask(&cut(&file, first + 2, first + 6));
        assert!(!masked.contains(&key_line(first + 3)), "{masked}");
        // A certificate's body, which the file shows to be public, is not masked.
        let cert = file.replace("RSA PRIVATE KEY", "CERTIFICATE");
        let (masked, found) = FileMasker::new(&cert).mask(&cut(&cert, first + 2, first + 4), first + 2);
        assert!(found.is_empty() && masked.contains(&key_line(first + 3)), "{masked}");
    }

    #[test]
    fn search_hits_are_masked_with_their_file() {
        use crate::engine::search::types::SearchHit;
        let (file, first, _) = vars_yml();
        let hit = |a: u32, b: u32| SearchHit {
            chunk_id: format!("deploy/vars.yml:{a}-{b}"),
            path: "deploy/vars.yml".into(),
            line_start: a,
            line_end: b,
            snippet_line_start: a,
            snippet: cut(&file, a, b),
            lang: "yaml".into(),
            page_start: None,
            page_end: None,
            source: None,
            score: 1.0,
            highlights: Vec::new(),
            generation: 1,
            stale: false,
            source_missing: false,
            gone: false,
            context: Vec::new(),
            retrievers: Vec::new(),
        };
        // The snippet shows one key line: the text alone cannot tell; the file can.
        let mut hits = [hit(first + 4, first + 4), hit(3, 5)];
        let shown = hits[0].snippet.trim().to_string();
        let mut reads = Vec::new();
        let found = redact_hits(&mut hits, |p| {
            reads.push(p.to_string());
            Some(file.clone())
        });
        assert_eq!(summarize(&found), "1 PRIVATE_KEY");
        assert!(!hits[0].snippet.contains(&shown) && hits[0].snippet.contains("[PRIVATE_KEY]"), "{}", hits[0].snippet);
        assert_eq!(reads, ["deploy/vars.yml"], "read once, and only for the hit that shows base64");
    }

    #[test]
    fn gaps_the_tester_found_are_closed() {
        assert_eq!(kinds("SLACK=xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"), [PiiKind::ApiKey]);
        for (text, masked) in [
            (
                "aws_secret_access_key = \"wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Wx2Ec4Rv\"",
                "aws_secret_access_key = \"[SECRET]\"",
            ),
            ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Wx2Ec4Rv", "AWS_SECRET_ACCESS_KEY=[SECRET]"),
            ("password = \"Sup3rS3cretPw\"", "password = \"[SECRET]\""),
            ("api_token = \"a8f3k2m9q7x1z5\"", "api_token = \"[SECRET]\""),
            ("GITHUB_TOKEN=ghp_4fT9kQ2mZ8xR1vB7nL3pW6yH0sJ5dC2aE9uK", "GITHUB_TOKEN=[API_KEY]"),
            (
                "password = \"postgres://root:Sup3rS3cretPw@db:5432/app\"",
                "password = \"postgres://[URL_CREDENTIALS]@db:5432/app\"",
            ),
            ("password = getpass()", "password = getpass()"),
            ("token = self.next_token()", "token = self.next_token()"),
        ] {
            assert_eq!(mask(text).0, masked, "{text}");
        }
    }

    /// An American Express number is printed 4-6-5 (`3782 822463 10005`); the groups-of-four
    /// pattern read it as `3782 8224` and then failed on `63 10005`, so it was masked only
    /// without separators.
    #[test]
    fn amex_numbers_are_found_as_printed() {
        for text in [
            "Amex 3782-822463-10005 declined",
            "card: 3782 822463 10005",
            "3714-496353-98431",
            "378282246310005",
            "Amex 3400-777777-77779, exp 12/27",
        ] {
            assert_eq!(kinds(text), [PiiKind::CardNumber], "{text}");
        }
        assert_eq!(mask("paid with 3782 822463 10005.").0, "paid with [CARD].");
        for text in [
            // Luhn fails; a digit too many; not an Amex prefix; a 4-6-5 id of another network.
            "3782-822463-10006",
            "3782-822463-100051",
            "3882-822463-10005",
            "4111-111111-11111",
            "order 3782-822463-1000 shipped",
        ] {
            assert!(detect(text).is_empty(), "{text}: {:?}", detect(text));
        }
    }

    #[test]
    fn leaves_code_alone() {
        for clean in [
            "version = \"1.2.3\"; lodash@4.17.21; @pytest.mark.parametrize",
            "icon@2x.png and logo@3x.svg",
            "timestamp 2023-10-05 12:30:45, port 8080, 192.168.100.200",
            "card 4111 1111 1111 1112 fails Luhn",
            "sk_test_xxxxxxxxxxxxxxxxxxxxxxxx is a placeholder",
            "sha 0123456789abcdef0123456789abcdef01234567",
            "id = 1234567890123456",
            "GB00 0000 0000 0000 0000 00 has a bad check",
        ] {
            assert!(detect(clean).is_empty(), "{clean}: {:?}", detect(clean));
        }
    }
}
