//! PII and secret detection and masking: e-mail addresses, phone numbers, API keys and tokens of
//! the common providers, JWTs, private keys, credentials in URLs (`scheme://user:password@host`),
//! IBANs (mod-97 checked) and payment card numbers (Luhn checked). Applied to search snippets (agents forward them to remote models) and to
//! whatever leaves the machine; `pii_redacted` in search JSON says whether anything was masked.
//!
//! Tuned for few false positives in source trees: every pattern needs a provider prefix, a
//! checksum or a telling shape (see docs/PRIVACY.md for precision and recall on a labelled
//! corpus and the false positives on real repositories).

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

/// Two capitals then two digits, the start every IBAN needs.
fn has_iban_start(text: &str) -> bool {
    text.as_bytes().windows(4).any(|w| {
        w[0].is_ascii_uppercase() && w[1].is_ascii_uppercase() && w[2].is_ascii_digit() && w[3].is_ascii_digit()
    })
}

const DETECTORS: &[Detector] = &[
    Detector {
        kind: PiiKind::PrivateKey,
        pattern: r"-----BEGIN (?:RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END [A-Z ]*PRIVATE KEY(?: BLOCK)?-----|\z)",
        check: always,
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
        may_match: |t| t.contains("://"),
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
        may_match: |t| t.contains('@'),
    },
    Detector {
        kind: PiiKind::Iban,
        pattern: r"\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b",
        check: iban_ok,
        may_match: has_iban_start,
    },
    // At least 4 + 4 + 4 + 1 digits.
    Detector {
        kind: PiiKind::CardNumber,
        pattern: r"\b[2-6][0-9]{3}(?:[ -]?[0-9]{4}){2}[ -]?[0-9]{1,7}\b",
        check: card_ok,
        may_match: |t| ascii_digits(t) >= 13,
    },
    // At least 5 digits (`+` form: 1 + 2 groups of 1 + 2) or 10 (the North American form).
    Detector {
        kind: PiiKind::Phone,
        pattern: r"(?:\+[1-9][0-9]{0,2}[ .-]?(?:\(?[0-9]{1,4}\)?[ .-]?){2,4}[0-9]{2,4}|\(?\b[2-9][0-9]{2}\)?[ .-][2-9][0-9]{2}[ .-][0-9]{4}\b)",
        check: phone_ok,
        may_match: |t| ascii_digits(t) >= 5,
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
        if !(d.may_match)(text) {
            continue;
        }
        let Some(re) = regex(i) else { continue };
        for m in re.find_iter(text) {
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
    }
    found.sort_by_key(|f| f.range.start);
    found
}

/// `text` with every finding masked, and the findings. An e-mail keeps its domain
/// (`[EMAIL]@company.com`), the rest become `[KIND]`; a private key keeps its line count so
/// line numbers after it stay true.
pub fn mask(text: &str) -> (String, Vec<Finding>) {
    let found = detect(text);
    if found.is_empty() {
        return (text.to_string(), found);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in &found {
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
    (out, found)
}

/// Masks the snippets and context lines of search hits; returns what was found. A masked
/// line's highlights are dropped where the word they marked is gone or moved.
pub fn redact_hits(hits: &mut [crate::engine::search::types::SearchHit]) -> Vec<Finding> {
    let mut all = Vec::new();
    for h in hits {
        let (masked, found) = mask(&h.snippet);
        if !found.is_empty() {
            let before: Vec<&str> = h.snippet.lines().collect();
            let after: Vec<&str> = masked.lines().collect();
            let start = h.snippet_line_start;
            h.highlights.retain(|hl| {
                let i = hl.line.saturating_sub(start) as usize;
                match (before.get(i), after.get(i)) {
                    (Some(b), Some(a)) => {
                        b == a
                            || (a.get(hl.start..hl.end).is_some() && a.get(hl.start..hl.end) == b.get(hl.start..hl.end))
                    }
                    _ => false,
                }
            });
            h.snippet = masked;
            all.extend(found);
        }
        for c in &mut h.context {
            let (masked, found) = mask(&c.text);
            if !found.is_empty() {
                c.text = masked;
                all.extend(found);
            }
        }
    }
    all
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
    distinct.len() >= 8
        && !lowered.contains("xxxxxx")
        && !lowered.contains("example")
        && !lowered.contains("your")
        && (body.chars().any(|c| c.is_ascii_digit()) || s.starts_with("AKIA") || body.len() >= 32)
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
