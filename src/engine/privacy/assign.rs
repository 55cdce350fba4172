//! Secrets without a provider prefix, found by the name they are assigned to:
//! `aws_secret_access_key = "..."`, `AWS_SECRET_ACCESS_KEY=...`, `password: "..."`,
//! `"api_token": "..."`. Only the value is masked. A value must be a literal (a function call,
//! an attribute or a variable is not a secret: `password = getpass()`,
//! `token = self.next_token()`), look like a secret (digits or symbols beside letters, or one
//! of the plain-word and short shapes of [`phrase`]) and not be a placeholder (`""`,
//! `changeme`, `${VAR}`, `<your-token>`, `xxx`).

use super::layout;
use super::phrase::{self, passphrase_words, placeholder};
use regex::Regex;
use std::ops::Range;
use std::sync::OnceLock;

/// The last word of a name that holds a secret; the name must end with one. `pass` and `pwd`
/// only as the last part of a longer name (`DB_PASS`, `MYSQL_PWD`; [`short_name_ok`]).
const NAME: &str = r"(?:password|passwd|passphrase|secret|token|api[_-]?key|apikey|private[_-]?key|access[_-]?key|secret[_-]?key|auth[_-]?key|signing[_-]?key|encryption[_-]?key|master[_-]?key|credentials?|pass|pwd)";

/// Words every match needs, lowercased: the pre-test that spares compiling the pattern.
const NEEDLES: &[&str] = &["pass", "pwd", "secret", "token", "key", "credential"];

/// Words that may follow a secret's name in a sentence before more words and `is` / `was`:
/// "the password *for* the admin account is ...", "the token *used* by CI was ...".
const PROSE_LINKS: &[&str] = &["for", "of", "to", "on", "at", "in", "from", "used", "with", "we", "you"];

fn pattern() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        let re = format!(
            concat!(
                // ASCII classes and boundary: Unicode `\w` under `{{0,39}}` compiled to an automaton
                // that took ~15 ms, paid by every `docdex search` process whose snippets hold
                // "key" or "token" (the whole-process p95 went from 12 to 26 ms). The name is
                // matched without Unicode case folding too (K, the Kelvin sign, is not a k):
                // 1.25 ms to compile with it, 0.75 without.
                r"(?-u:\b)(?P<name>(?i-u:[a-z0-9_.-]*?{name}))[\x22']?",
                // a type between name and value: `password: &str = "..."`, `token: String = ...`
                r"(?:[ \t]*:[ \t]*[&0-9A-Za-z_<>\[\]][&'0-9A-Za-z_<>\[\]. ]{{0,39}}?)?",
                // or prose: `the admin password is hunter2hunter2`, `the token was: ...`, with a
                // link word and up to five more words between (`the password for the admin
                // account is ...`)
                r"(?P<sep>[ \t]*(?::=|=>|=|:)[ \t]*",
                r"|[ \t]+(?:(?:{prep})(?:[ \t]+[A-Za-z0-9'-]+){{0,5}}?[ \t]+)?(?:is|was)(?:[ \t]*:)?[ \t]+)",
                r"(?P<v>\x22[^\x22\r\n]*\x22|'[^'\r\n]*'|`[^`\r\n]*`|[^\s\x22'`,;(){{}}\[\]<>=][^\s\x22'`,;(){{}}\[\]<>]*)",
                r"(?P<after>.?)"
            ),
            name = NAME,
            prep = PROSE_LINKS.join("|")
        );
        Regex::new(&re).ok()
    })
    .as_ref()
}

/// True when `text` could hold an assignment of a secret: a word of a secret's name whose word
/// ends, after an optional quote and blanks, at a `:` or `=`, or at blanks and `is` / `was` (a
/// sentence: every match of the pattern has one of them). "key" alone is in most code; compiling
/// the pattern costs ~0.75 ms, which a one-shot `docdex search` pays only when a snippet needs it.
pub fn may_match(text: &str) -> bool {
    // memchr's SIMD search, each needle's searcher built once: `str::match_indices` made each
    // needle a slower scan of its own, and this runs on every snippet.
    static FINDERS: OnceLock<Vec<memchr::memmem::Finder<'static>>> = OnceLock::new();
    let finders = FINDERS.get_or_init(|| NEEDLES.iter().map(|n| memchr::memmem::Finder::new(n.as_bytes())).collect());
    let lower = text.to_ascii_lowercase();
    let b = lower.as_bytes();
    finders.iter().any(|f| f.find_iter(b).any(|i| separator_follows(&b[i + f.needle().len()..])))
}

/// After the rest of a name's word (`word` of `password`), an optional closing quote and blanks:
/// a separator's first character, or (after one blank at least) `is` or `was` and then a blank
/// or a `:`, or a link word ([`PROSE_LINKS`]) with `is` or `was` further on its line (`rest` is
/// lower-cased).
fn separator_follows(rest: &[u8]) -> bool {
    let mut i = rest.iter().take_while(|b| b.is_ascii_alphanumeric() || **b == b'_').count();
    if matches!(rest.get(i), Some(b'"' | b'\'')) {
        i += 1;
    }
    let word_end = i;
    while matches!(rest.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    let prose = i > word_end && (verb_at(&rest[i..]) || linked_verb(&rest[i..]));
    matches!(rest.get(i), Some(b':' | b'=')) || prose
}

/// `is` or `was` then a blank or a `:`.
fn verb_at(rest: &[u8]) -> bool {
    [&b"is"[..], b"was"].iter().any(|w| rest.starts_with(w) && matches!(rest.get(w.len()), Some(b' ' | b'\t' | b':')))
}

/// A link word, a blank, and later on the same line a blank and `is` or `was` ([`verb_at`]).
fn linked_verb(rest: &[u8]) -> bool {
    let line = &rest[..rest.iter().position(|b| *b == b'\n').unwrap_or(rest.len())];
    PROSE_LINKS.iter().any(|w| line.starts_with(w.as_bytes()) && matches!(line.get(w.len()), Some(b' ' | b'\t')))
        && (1..line.len()).any(|j| matches!(line[j - 1], b' ' | b'\t') && verb_at(&line[j..]))
}

/// The byte ranges of the secret values assigned in `text` (inside the quotes, if quoted).
pub fn values(text: &str) -> Vec<Range<usize>> {
    if !may_match(text) {
        return Vec::new();
    }
    let Some(re) = pattern() else { return Vec::new() };
    let mut out: Vec<Range<usize>> = Vec::new();
    for c in re.captures_iter(text) {
        let (Some(name), Some(sep), Some(v)) = (c.name("name"), c.name("sep"), c.name("v")) else { continue };
        // A passphrase taken whole covers the words after its first one.
        if out.last().is_some_and(|r| v.start() < r.end) {
            continue;
        }
        if !short_name_ok(name.as_str(), sep.as_str()) {
            continue;
        }
        let m = Matched { name, sep, v, after: c.name("after").map_or("", |m| m.as_str()) };
        out.extend(secret_value(text, &m));
    }
    out
}

/// A name ending in `pass` or `pwd` names a password only as an environment variable's: in
/// capitals, the last part of a longer name after `_` (`DB_PASS`, `SMTP_PASS`, `MYSQL_PWD`), or
/// in lower case after `_` and a word naming what logs in ([`PASS_OWNERS`]: `db_pass`,
/// `smtp_pass`, `mysql_pwd`); never in a sentence. `bypass`, `PWD` (the working directory),
/// "the first pass is ..." and another lower-case name (`force_pass: true/false`,
/// `render_pass`, `first_pass`: a test's or a compiler's pass) are not passwords.
fn short_name_ok(name: &str, sep: &str) -> bool {
    let name = name.trim_matches(['"', '\'']);
    let sentence = sep.trim_start().starts_with(|c: char| c.is_ascii_alphabetic());
    let Some(prefix) = name.strip_suffix("PASS").or_else(|| name.strip_suffix("PWD")) else {
        let lower = name.to_ascii_lowercase();
        return (!lower.ends_with("pass") && !lower.ends_with("pwd")) || (!sentence && owned_pass(name));
    };
    let capitals = prefix.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    !sentence && capitals && prefix.len() > 1 && prefix.ends_with('_')
}

/// What logs in with a password, as the word before a lower-case `_pass` or `_pwd` says it
/// (`db_pass`, `smtp_pass`, `app.mysql_pwd`): a store, a mail or file server, an account. A
/// pass of a test, a compiler or a renderer (`first_pass`, `render_pass`, `force_pass`) is not
/// one of them.
const PASS_OWNERS: &str = concat!(
    "db database sql mysql mariadb pg postgres psql mssql oracle redis mongo mongodb ldap smtp mail ",
    "email imap pop pop3 ftp sftp ssh amqp rabbit rabbitmq proxy admin root user login auth basic http ",
    "api vpn wifi sasl keystore truststore registry",
);

/// `db_pass`, `smtp_pwd`: a lower-case name whose last part is `pass` or `pwd` after `_` and a
/// word of [`PASS_OWNERS`].
fn owned_pass(name: &str) -> bool {
    let Some(prefix) = name.strip_suffix("_pass").or_else(|| name.strip_suffix("_pwd")) else { return false };
    let owner = prefix.rsplit(['_', '.', '-']).next().unwrap_or(prefix);
    PASS_OWNERS.split(' ').any(|w| w == owner)
}

/// One match of the pattern: the name, the separator (with its blanks, or a sentence's words up
/// to `is` / `was`), the value (with its quotes) and the character after it.
struct Matched<'t> {
    name: regex::Match<'t>,
    sep: regex::Match<'t>,
    v: regex::Match<'t>,
    after: &'t str,
}

/// `"..."`, `'...'` or `` `...` ``.
fn is_quoted(raw: &str) -> bool {
    raw.len() >= 2 && raw.starts_with(['"', '\'', '`']) && raw.ends_with(&raw[..1])
}

/// The range of the secret `m` assigns, if its value is one.
fn secret_value(text: &str, m: &Matched) -> Option<Range<usize>> {
    let raw = m.v.as_str();
    let quoted = is_quoted(raw);
    let value = if quoted { &raw[1..raw.len() - 1] } else { raw };
    let start = m.v.start() + usize::from(quoted);
    if m.name.as_str().to_ascii_lowercase().ends_with("token") && colour_style(value) {
        return None;
    }
    if m.sep.as_str().trim_start().starts_with(|c: char| c.is_ascii_alphabetic()) {
        // A sentence: its full stop or colon is not part of the value.
        let value = if quoted { value } else { value.trim_end_matches(['.', ',', '!', '?', ':']) };
        if !prose_words_ok(m.sep.as_str()) {
            return None;
        }
        return match prose_ok(value) {
            true => Some(start..start + value.len()),
            false => phrase::in_sentence(text, m.name.as_str(), start),
        };
    }
    let line_start = text[..m.name.start()].rfind('\n').map_or(0, |i| i + 1);
    let before = &text[line_start..m.name.start()];
    if let Some(r) = passphrase(text, m, before)
        .or_else(|| yaml_word(text, m, before))
        .or_else(|| short_yaml(text, m, before))
        .or_else(|| flow_field(text, m, before))
    {
        return Some(r);
    }
    // A URL query's field (`?token=X&logo=codecov`) ends at the next `&`.
    let value = match !quoted && before.ends_with(['?', '&']) {
        true => value.split('&').next().unwrap_or(value),
        false => value,
    };
    let literal = if quoted {
        let line_end = text[m.v.end()..].find('\n').map_or(text.len(), |i| m.v.end() + i);
        let tail = &text[m.v.end()..line_end];
        quoted_ok(value)
            || phrase::quoted_word(value, m.name.as_str(), tail)
            || phrase::short_quoted(value, m.name.as_str(), tail)
    } else {
        let end = m.v.start() + value.len();
        let line_end = text[end..].find('\n').map_or(text.len(), |i| end + i);
        let after = if end < m.v.end() { &text[end..end + 1] } else { m.after };
        let (name, sep) = (m.name.as_str(), m.sep.as_str());
        bare_ok(value, &Assignment { name, sep, after, before, rest: &text[end..line_end] })
    };
    (literal && !placeholder(value) && !echoes_name(value, m.name.as_str())).then(|| start..start + value.len())
}

/// The words a sentence puts between a secret's name and `is` / `was` (`for the admin account`):
/// none of them code's (`if token in cache and user is admin1234:` compares).
fn prose_words_ok(sep: &str) -> bool {
    const CODE: &[&str] =
        &["and", "or", "not", "if", "else", "elif", "while", "lambda", "return", "is", "none", "true", "false", "null"];
    let words: Vec<&str> = sep.split_whitespace().collect();
    words.len() < 3 || !words[1..words.len() - 1].iter().any(|w| CODE.contains(&w.to_ascii_lowercase().as_str()))
}

/// A passphrase of several words given as the whole value of a config line, indented or not:
/// `password = Correct Horse Battery` (`.ini`, `.env`, `.properties`), `db_password: "two words
/// here"` (YAML, TOML, JSON), `  password: correct horse battery` (nested YAML), a comment after
/// it allowed. The line holds only the name, the separator and the value (after `export`, `set`
/// or, quoted, a YAML list's `-`); code cannot write
/// several bare words after `=` (`password = get_password()`, `let password = args.password;`
/// are one expression), and a quoted one must not read as a message ([`passphrase_words`]).
fn passphrase(text: &str, m: &Matched, before: &str) -> Option<Range<usize>> {
    let head = before.trim_end_matches(['"', '\'']).trim();
    let between = &text[m.name.end()..m.sep.start()];
    if !matches!(head, "" | "-" | "export" | "set") || !matches!(between, "" | "\"" | "'") {
        return None;
    }
    let sep = m.sep.as_str().trim();
    let line_end = text[m.v.start()..].find('\n').map_or(text.len(), |i| m.v.start() + i);
    let raw = m.v.as_str();
    if is_quoted(raw) {
        let tail = text[m.v.end()..line_end].trim();
        let whole = tail.is_empty() || tail == "," || tail.starts_with('#');
        let inner = &raw[1..raw.len() - 1];
        let words = passphrase_words(inner, true) || phrase::two_words(inner, m.name.as_str());
        let ok = whole && matches!(sep, "=" | ":" | "=>") && words;
        return ok.then(|| m.v.start() + 1..m.v.end() - 1);
    }
    let line = &text[m.v.start()..line_end];
    let comment = [" #", "\t#", " ;", "\t;"].iter().filter_map(|c| line.find(c)).min();
    let value = comment.map_or(line, |i| &line[..i]).trim_end();
    // Bare after `:`, nested in YAML; unindented, only a password's plain words: a line starting
    // `token: ` or `- secret: ` is as often a changelog's or a commit's subject (`token: refresh
    // before expiry`, `password: fix reset flow`).
    let nested = before.starts_with([' ', '\t']);
    let bare_sep = match sep {
        "=" => head != "-",
        ":" => head.is_empty() && (nested || phrase::password_name(m.name.as_str())),
        _ => false,
    };
    let two = phrase::two_words(value, m.name.as_str());
    let plain = sep != ":" || nested || phrase::plain_passphrase(value) || two;
    let ok = bare_sep && value.contains([' ', '\t']) && (passphrase_words(value, false) || two) && plain;
    ok.then(|| m.v.start()..m.v.start() + value.len())
}

/// One bare word as a password's YAML value ([`phrase::yaml_word`]), the line holding only the
/// name (after an optional list `-`), the `:` and the word, a comment allowed. A line inside an
/// object literal of code reads the same (`  password: digest` as the last field of
/// `User.create({ email, password: digest })`), so the bracket around it must not be code's
/// ([`layout::in_code_literal`]: YAML's `env: {` flow mapping is not). A capitalised word is a
/// typed field's in a class (`    password: Secret`) unless YAML is around it
/// ([`layout::yaml_around`]), and after a capitalised name it is a document's field
/// (`Password: Optional`, `Password: Swordfish`).
fn yaml_word(text: &str, m: &Matched, before: &str) -> Option<Range<usize>> {
    let head = before.trim();
    let between = &text[m.name.end()..m.sep.start()];
    let (v, name) = (m.v.as_str(), m.name.as_str());
    if !matches!(head, "" | "-") || !between.is_empty() || m.sep.as_str().trim() != ":" || !phrase::yaml_word(v, name) {
        return None;
    }
    let line_end = text[m.v.end()..].find('\n').map_or(text.len(), |i| m.v.end() + i);
    let rest = &text[m.v.end()..line_end];
    let whole = rest.trim().is_empty() || (rest.starts_with([' ', '\t']) && rest.trim_start().starts_with('#'));
    let line_start = m.name.start() - before.len();
    let capital = v.starts_with(|c: char| c.is_ascii_uppercase());
    let title_name = name.starts_with(|c: char| c.is_ascii_uppercase()) && name.bytes().any(|b| b.is_ascii_lowercase());
    let typed = capital && (title_name || !layout::yaml_around(text, line_start));
    let ok = whole && !typed && !layout::in_code_literal(text, line_start, line_end) && !echoes_name(v, name);
    ok.then(|| m.v.range())
}

/// A short bare value (3 to 7 characters) as a YAML line's whole value: `PASSWORD: hunter2`,
/// `DB_PASSWORD: s3cr3t`, `  smtp_pass: hunt3r` (docker-compose's `environment:`, a Helm
/// values file), a comment after it allowed; for a password's, a secret's or a key's name (a
/// token is longer; `credentials` is `fetch`'s mode). Under a name in capitals (an environment
/// variable's) a plain word will do (`SECRET_KEY: dev`), as after `=`; under another name the
/// value mixes letters and digits (a lone word is [`yaml_word`]'s), and a line inside an object
/// literal of code is left alone (`{ password: pw2 }`), as is a type (`u8`, `int64`).
fn short_yaml(text: &str, m: &Matched, before: &str) -> Option<Range<usize>> {
    let (v, name) = (m.v.as_str(), m.name.as_str());
    let between = &text[m.name.end()..m.sep.start()];
    let head_ok = matches!(before.trim(), "" | "-") && between.is_empty() && m.sep.as_str().trim() == ":";
    if !head_ok || !(3..=7).contains(&v.len()) || !short_value(v, name) {
        return None;
    }
    let line_end = text[m.v.end()..].find('\n').map_or(text.len(), |i| m.v.end() + i);
    let rest = &text[m.v.end()..line_end];
    let whole = rest.trim().is_empty() || (rest.starts_with([' ', '\t']) && rest.trim_start().starts_with('#'));
    let c = Classes::of(v);
    let env_style = name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    let shape = c.digit || (env_style && !v.starts_with(|ch: char| ch.is_ascii_uppercase()));
    let line_start = m.name.start() - before.len();
    let ok = whole && shape && !layout::in_code_literal(text, line_start, line_end);
    ok.then(|| m.v.range())
}

/// A short bare value a password's, a secret's or a key's name may hold (not a token's, nor
/// credentials): letters, or letters with digits, not a type (`u8`, `int64`), a setting, a
/// form's word, a placeholder or a word of a secret's name ([`phrase::plain_value`]).
fn short_value(v: &str, name: &str) -> bool {
    let lower_name = name.trim_matches(['"', '\'']).to_ascii_lowercase();
    let named = !["token", "credential", "credentials"].iter().any(|w| lower_name.ends_with(w));
    let lower = v.to_ascii_lowercase();
    named
        && v.bytes().any(|b| b.is_ascii_alphabetic())
        && !SECRET_WORDS.iter().any(|w| lower.contains(w))
        && !numeric_type(&lower)
        && phrase::plain_value(v)
}

/// A language's sized type (`u8`, `i64`, `f32`, `int64`, `uint32`, `float64`, `bytes32`) or a
/// digest's or an encoding's name (`sha256`, `md5`, `base64`, `utf8`): letters and digits, not
/// a password.
fn numeric_type(lower: &str) -> bool {
    const STEMS: &[&str] = &[
        "u", "i", "f", "int", "uint", "float", "complex", "bytes", "byte", "bits", "sha", "md", "base", "utf", "ucs",
        "crc", "aes", "rsa", "ed", "hs", "rs", "es", "ps", "x",
    ];
    let stem = lower.trim_end_matches(|c: char| c.is_ascii_digit());
    stem.len() < lower.len() && STEMS.contains(&stem)
}

/// A bare value as a field of a YAML flow mapping on one line (`creds: {user: bob, password:
/// hunter2}`, `db: { user: app, password: swordfish }`, [`layout::yaml_flow_field`]): letters
/// with digits (3 or more characters under a password's, a secret's or a key's name, 8 or more
/// under a token's), or a password's lower-case word ([`phrase::yaml_word`]). A capital starts
/// a type (`{password: Secret}`), and a mapping that is a code literal's field is left alone.
fn flow_field(text: &str, m: &Matched, before: &str) -> Option<Range<usize>> {
    let (v, name) = (m.v.as_str(), m.name.as_str());
    let line_start = m.name.start() - before.len();
    let line_end = text[m.v.end()..].find('\n').map_or(text.len(), |i| m.v.end() + i);
    let line = &text[line_start..line_end];
    let between = &text[m.name.end()..m.sep.start()];
    if m.sep.as_str().trim() != ":"
        || !between.is_empty()
        || !layout::yaml_flow_field(line, before.len(), m.v.end() - line_start)
        || v.starts_with(|c: char| c.is_ascii_uppercase())
    {
        return None;
    }
    let c = Classes::of(v);
    let lower_name = name.to_ascii_lowercase();
    let token =
        lower_name.ends_with("token") || lower_name.ends_with("credential") || lower_name.ends_with("credentials");
    let mixed = c.digit && c.lower && v.bytes().all(|b| b.is_ascii_alphanumeric()) && !numeric_type(v);
    let shape = match token {
        true => mixed && v.len() >= 8 && !SECRET_WORDS.iter().any(|w| v.contains(w)),
        false => (mixed && v.len() >= 3 && short_value(v, name)) || phrase::yaml_word(v, name),
    };
    let ok = shape && !layout::in_code_literal(text, line_start, line_end) && !echoes_name(v, name);
    ok.then(|| m.v.range())
}

/// A colour, alone or in a style (`#d8dee9`, `bold #fff`, `italic bg:#3b4252`): a Pygments
/// style's `Token.Keyword: '#81a1c1'` names a token of a lexer, not a secret, and neither does
/// a theme's `token: "#ffcc00"`. Asked under a token's name only: `password: "#abc123"` may
/// well be a password. Every word is a colour (`#` and 3, 4, 6 or 8 hex digits, or
/// after `bg:` / `border:`) or one of Pygments' style words; at least one is a colour.
fn colour_style(v: &str) -> bool {
    const WORDS: &[&str] =
        &["bold", "nobold", "italic", "noitalic", "underline", "nounderline", "roman", "sans", "mono", "noinherit"];
    let hex = |w: &str| {
        w.strip_prefix('#')
            .is_some_and(|h| matches!(h.len(), 3 | 4 | 6 | 8) && h.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    let mut colours = 0;
    let all = v.split_ascii_whitespace().all(|w| {
        let c = w.strip_prefix("bg:").or_else(|| w.strip_prefix("border:")).unwrap_or(w);
        let colour = hex(c);
        colours += usize::from(colour);
        colour || WORDS.contains(&w.to_ascii_lowercase().as_str())
    });
    all && colours > 0
}

/// `s3_secret_access_key = 's3-secret-access-key'`: the value repeats its name (documentation).
fn echoes_name(v: &str, name: &str) -> bool {
    let norm = |s: &str| s.to_ascii_lowercase().replace(['-', '.'], "_");
    let (v, name) = (norm(v), norm(name));
    v == name || name.ends_with(&v) || v.ends_with(&name)
}

/// What surrounds a bare value.
struct Assignment<'a> {
    name: &'a str,
    /// The separator with the blanks around it (`=`, ` = `, `: `, `:=`, `=>`).
    sep: &'a str,
    /// The character right after the value (empty at the end of the line).
    after: &'a str,
    /// The line before the name.
    before: &'a str,
    /// The line after the value.
    rest: &'a str,
}

/// A quoted literal that looks like a secret: 6 characters or more, no blank, letters with
/// digits or symbols (`hunter22`, `Sup3rS3cretPw`, `p@ss-word!`), or 20 and more of mixed
/// classes; a lone word (`"Identifier"`) or an environment variable's name is not one.
fn quoted_ok(v: &str) -> bool {
    let c = Classes::of(v);
    v.len() >= 6
        && !v.contains(char::is_whitespace)
        && !v.contains("::")
        && !env_name(v)
        && !path_or_url(v)
        && !rule_list(v)
        && c.count() >= 2
        && (c.digit || c.symbol || v.len() >= 20)
}

/// `required|string|min:8|confirmed`: a validation rule list (Laravel's `'password' => '...'`)
/// or a union of types (`string|null`): words joined by `|`, each with optional `:` arguments.
fn rule_list(v: &str) -> bool {
    v.contains('|')
        && v.split('|').all(|part| {
            let word = part.split(':').next().unwrap_or(part);
            !word.is_empty() && word.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
        })
}

/// `/etc/passwd`, `./secrets/token.txt`, `~/.ssh/id_rsa`, `https://...`: where a secret is kept,
/// not the secret (a URL's credentials are masked by their own rule).
fn path_or_url(v: &str) -> bool {
    v.starts_with(['/', '~'])
        || v.starts_with("./")
        || v.starts_with("../")
        || v.contains("://")
        || v.starts_with("urn:")
}

/// A bare value is a literal where the syntax says so: not a call, an index or an attribute
/// (`getpass()`, `os.environ["X"]`, `self.token`), not a reference (`$TOKEN`, `%(pw)s`, `&anchor`,
/// `*alias`) nor a path. An identifier-shaped value (`hunter2x`, `password_v2`) is a literal only
/// in shell and `.env` syntax (`API_TOKEN=...`, upper-case name, `=` without blanks), in YAML
/// (`password: ...` to the end of the line, with a digit), or when it mixes both cases and digits.
fn bare_ok(v: &str, a: &Assignment) -> bool {
    let c = Classes::of(v);
    if v.starts_with(['$', '%', '&', '*', '@', '!', '-', '#', '.', ':', '|'])
        || path_or_url(v)
        || a.after.starts_with(['(', '[', '.'])
        || rust_syntax(v, a)
        // `"...Credentials : true\r\n\r\n"`: a header inside a string literal, not a value.
        || v.contains('\\')
        || attribute_path(v)
        || env_name(v)
    {
        return false;
    }
    if v.len() < 8 {
        return short_bare(v, a);
    }
    let identifier = v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    let env_style = a.sep == "=" && a.name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    // The end of a YAML line, or a comment after the value (`token:abc123def456  # ci`).
    let line_ends =
        matches!(a.after, "" | "\r") || (a.rest.starts_with([' ', '\t']) && a.rest.trim_start().starts_with('#'));
    let yaml_style = a.sep.trim() == ":" && line_ends && c.digit && (c.lower || c.upper);
    match identifier {
        true => env_style || yaml_style || (c.lower && c.upper && c.digit) || config_value(v, a),
        false => env_style || (c.count() >= 2 && (c.digit || c.symbol)),
    }
}

/// An identifier-shaped value (`hunter2hunter2`) after `=` where config syntax, not code, says
/// it is a literal: a whole `key=value` line (`.env`, `.ini`, `.properties`, shell, optionally
/// after `export`/`set`, and only a comment after it) with a digit in the value or, unindented,
/// a lone word of 10+ letters ([`lone_word_line`]); or a string's or
/// a connection string's field (right after a quote, `;`, `&`, `?` or `--`, or after another
/// `key=value` field and a blank, as libpq writes `host=db password=...`). In code the same
/// shape is a keyword argument or a variable (`f(password=pw2)`, `password = password_v2`), so a
/// value that names a secret itself (`db_token2`) and a call argument are left alone.
fn config_value(v: &str, a: &Assignment) -> bool {
    let lower = v.to_ascii_lowercase();
    if a.sep.trim() != "=" || SECRET_WORDS.iter().any(|w| lower.contains(w)) {
        return false;
    }
    let whole_line = matches!(a.before.trim(), "" | "export" | "set")
        && (a.rest.trim().is_empty()
            || (a.rest.starts_with([' ', '\t']) && a.rest.trim_start().starts_with(['#', ';'])));
    let has_digit = v.bytes().any(|b| b.is_ascii_digit()) && v.bytes().any(|b| b.is_ascii_alphabetic());
    let field_end = a.rest.is_empty() || a.rest.starts_with([';', '&', ' ', '\t', '\r', '"', '\'', '`']);
    let quoted_or_field = a.before.ends_with(['"', '\'', '`', ';', '&', '?']) || a.before.ends_with("--");
    let dsn_field = a.before.ends_with(' ')
        && a.before.split_whitespace().next_back().is_some_and(|t| {
            let t = t.trim_start_matches(['"', '\'', '`']);
            t.split_once('=').is_some_and(|(k, v)| {
                !k.is_empty()
                    && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
                    && !v.is_empty()
                    && !v.contains([',', ';', '(', ')', '"', '\''])
            })
        });
    (whole_line && (has_digit || lone_word_line(v, a))) || (field_end && (quoted_or_field || dsn_field))
}

/// A whole `key=value` line, not indented, whose value is one word of 10 or more letters (8 or
/// more with `=` without blanks, not a form's or a setting's word: `password=swordfish`),
/// lower-case, capitalised or in capitals (`password=correcthorse`, `password = CorrectHorse`,
/// `db.password = letmeinplease`): how `.env`, `.ini`, `.properties` and shell files hold a
/// passphrase. Indented, the same line is a keyword argument on a line of its own
/// (`    password=dbpassword`) or an assignment in a function (`    password = CorrectHorse`
/// names a class); a `lowerCamel` word is a variable (`password = inputValue`); a shorter word
/// or a setting's word (`interactive`, `environment`, `NotImplemented`) is not a secret.
fn lone_word_line(v: &str, a: &Assignment) -> bool {
    const SETTINGS: &[&str] =
        &["environment", "interactive", "unspecified", "notrequired", "optional", "disabled", "notimplemented"];
    let lower_camel = v.starts_with(|c: char| c.is_ascii_lowercase()) && v.bytes().any(|b| b.is_ascii_uppercase());
    // `=` without blanks is a config file's or a shell's (`password=swordfish`); with blanks,
    // code's assignment too (`password = default`), so the word must be long.
    let min = if a.sep == "=" { 8 } else { 10 };
    !a.before.starts_with([' ', '\t'])
        && v.len() >= min
        && (v.len() >= 10 || phrase::plain_value(v))
        && v.bytes().all(|b| b.is_ascii_alphabetic())
        && !lower_camel
        && !SETTINGS.contains(&v.to_ascii_lowercase().as_str())
}

/// A bare value of 3 to 7 characters on a whole `NAME=value` line, `=` without blanks
/// (`PASSWORD=hunter2`, `DB_PASS=letmein`, `export SECRET_KEY=dev`, `db.password=tiger`): how
/// `.env`, shell and `.properties` files hold a short password. The name in capitals (an
/// environment variable's) or, unindented, any name (`password=hunter2`: indented, a keyword
/// argument on a line of its own). A password's, a secret's or a key's name, not a token's (a
/// real token is longer) nor credentials; letters, or letters with digits or symbols (digits
/// alone, 4 or more, for a password's name: `PASSWORD=1234`, not `MAX_PASS=3`), not a setting's,
/// a type's or a form's word (`PASSWORD=auto`, `SECRET=yes`), a placeholder or a name's echo.
fn short_bare(v: &str, a: &Assignment) -> bool {
    let lower_name = a.name.to_ascii_lowercase();
    let env_style = a.name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    let whole = matches!(a.before.trim(), "" | "export" | "set")
        && (env_style || !a.before.starts_with([' ', '\t']))
        && (a.rest.trim().is_empty() || (a.rest.starts_with([' ', '\t']) && a.rest.trim_start().starts_with('#')));
    let named = !["token", "credential", "credentials"].iter().any(|w| lower_name.ends_with(w));
    let digits = v.bytes().all(|b| b.is_ascii_digit());
    let shape = match digits {
        true => v.len() >= 4 && phrase::password_name(a.name),
        false => {
            v.len() >= 3
                && v.bytes().any(|b| b.is_ascii_alphabetic())
                && !SECRET_WORDS.iter().any(|w| v.to_ascii_lowercase().contains(w))
        }
    };
    a.sep == "=" && whole && named && shape && phrase::plain_value(v)
}

/// A value a sentence gives a secret's name (`the admin password is hunter2hunter2`,
/// `the token was: f9a8b7c6d5e4`): one run of 8 or more letters and digits (symbols allowed),
/// without the `-`, `_`, `.` or `/` of compound words, identifiers, versions and paths
/// (`base64-encoded`, `sha256_hex`, `v1.2.3`), and not naming a secret itself: in code `is`
/// compares (`if password is password1:`), in prose it says what something is.
fn prose_ok(v: &str) -> bool {
    let c = Classes::of(v);
    let lower = v.to_ascii_lowercase();
    v.len() >= 8
        && c.digit
        && (c.lower || c.upper)
        && !v.contains(|ch: char| ch.is_whitespace() || matches!(ch, '-' | '_' | '.' | '/' | '\\'))
        && !SECRET_WORDS.iter().any(|w| lower.contains(w))
        && !placeholder(v)
}

/// Words of a secret's name: a value holding one names a secret (a variable), it is not one.
const SECRET_WORDS: &[&str] = &["pass", "pwd", "secret", "token", "key", "cred"];

/// Rust that a name of a secret's shape (`Token`, `struct_token`) meets: a path (`Token::Eof`,
/// `token::literal`, `x: ::core::option::Option`, `input.parse::<T>()`), the end of a closure's
/// parameters (`|token: CancellationToken|`) or a macro call (`match_byte! {`). A scan of
/// crates.io sources found 914 `SECRET`s, 884 of them these.
fn rust_syntax(v: &str, a: &Assignment) -> bool {
    v.contains("::") || v.ends_with('|') || (v.ends_with('!') && a.rest.trim_start().starts_with(['{', '(', '[']))
}

/// `a.b.c`: identifiers joined by dots (an attribute, a module path), not a literal.
fn attribute_path(v: &str) -> bool {
    v.contains('.')
        && v.split('.').all(|p| {
            p.bytes().next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
                && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        })
}

/// `GITHUB_TOKEN`: the name of an environment variable, not its value.
fn env_name(v: &str) -> bool {
    v.bytes().next().is_some_and(|b| b.is_ascii_uppercase())
        && v.contains('_')
        && v.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// Which kinds of character a value mixes. An upper-case first letter alone (`Identifier`)
/// does not count as upper case; `_`, `-` and `.` do not count as symbols, nor does a letter
/// outside ASCII (`ñ`, `ö`).
#[derive(Default)]
struct Classes {
    lower: bool,
    upper: bool,
    digit: bool,
    symbol: bool,
}

impl Classes {
    fn of(v: &str) -> Classes {
        let mut c = Classes::default();
        for (i, ch) in v.chars().enumerate() {
            match ch {
                '0'..='9' => c.digit = true,
                '_' | '-' | '.' => {}
                // A letter of any script is a letter (`Contraseña` is a label, not a symbol's mix).
                _ if ch.is_uppercase() => c.upper |= i > 0,
                _ if ch.is_alphabetic() => c.lower = true,
                _ => c.symbol = true,
            }
        }
        c
    }

    fn count(&self) -> usize {
        [self.lower, self.upper, self.digit, self.symbol].iter().filter(|x| **x).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masked(text: &str) -> Vec<&str> {
        values(text).into_iter().map(|r| &text[r]).collect()
    }

    #[test]
    fn secrets_assigned_to_telling_names_are_found() {
        for (text, want) in [
            (
                "aws_secret_access_key = \"wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Wx2Ec4Rv\"",
                "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Wx2Ec4Rv",
            ),
            (
                "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Wx2Ec4Rv",
                "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Wx2Ec4Rv",
            ),
            ("password = \"Sup3rS3cretPw\"", "Sup3rS3cretPw"),
            ("api_token = 'a8f3k2m9q7x1z5'", "a8f3k2m9q7x1z5"),
            ("  \"db_password\": \"hunter22!\",", "hunter22!"),
            ("const PASSWORD: &str = \"Tq8vR2mK9x\";", "Tq8vR2mK9x"),
            ("    password: hunter2x", "hunter2x"),
            ("DB_PASSWORD=hunter2x", "hunter2x"),
            ("token := \"f9a8b7c6d5e4\"", "f9a8b7c6d5e4"),
            ("'client_secret' => 'Zq8Wx2Ec4Rv6'", "Zq8Wx2Ec4Rv6"),
            ("clientSecret: `p@ssw0rd-live`", "p@ssw0rd-live"),
        ] {
            assert_eq!(masked(text), [want], "{text}");
        }
    }

    /// An identifier-shaped value after a lower-case name (`password=hunter2hunter2`) was masked
    /// nowhere: it reads as a keyword argument in code. Config syntax and string fields make it a
    /// literal; code that passes a variable or an attribute keeps its text.
    #[test]
    fn identifier_shaped_values_are_secrets_in_config_syntax_only() {
        for (text, want) in [
            ("password=hunter2hunter2", "hunter2hunter2"),
            ("export password=hunter2hunter2", "hunter2hunter2"),
            ("db.password = hunter2hunter2", "hunter2hunter2"),
            ("spring.datasource.password=hunter2hunter2", "hunter2hunter2"),
            ("password = hunter2hunter2  ; the ini comment", "hunter2hunter2"),
            ("    password: hunter2hunter2", "hunter2hunter2"),
            ("Server=db;Database=app;User Id=sa;Password=hunterhunter;", "hunterhunter"),
            ("\"host=db.internal user=app password=hunter2hunter2 dbname=app\"", "hunter2hunter2"),
            ("jdbc:mysql://db/app?user=app&password=hunter2hunter2", "hunter2hunter2"),
            // A query string's field ends at the next `&` (the rest of the URL was masked too).
            ("![cov](https://codecov.io/gh/o/r/badge.svg?token=AB12CD34EF&logo=codecov)", "AB12CD34EF"),
            ("https://api.example.com/v1?api_key=Zq8Wx2Ec4Rv6&format=json", "Zq8Wx2Ec4Rv6"),
            ("mysql -u root --password=hunter2hunter2 app", "hunter2hunter2"),
            ("dsn = \"password=hunter2hunter2\"", "hunter2hunter2"),
            ("password=\"hunter2hunter2\"", "hunter2hunter2"),
            ("conn = connect(password=\"hunter2hunter2\")", "hunter2hunter2"),
            // A passphrase without a digit, on a whole unindented line of config syntax.
            ("password=correcthorse", "correcthorse"),
            ("export password=correcthorse", "correcthorse"),
            ("db.password = letmeinplease  # rotated monthly", "letmeinplease"),
            ("password=Correcthorse", "Correcthorse"),
            // `=` without blanks: 8 letters are enough (`.env`, shell, `.properties`).
            ("password=letmeinnn", "letmeinnn"),
        ] {
            assert_eq!(masked(text), [want], "{text}");
        }
        for text in [
            "password=password",
            "password=args.password",
            "token=self.token",
            "secret=get_secret()",
            "conn = connect(host=host, password=hunter2hunter2)",
            "connect(user=user, password=db_password2)",
            "        password=hunter2hunter2,",
            "password = password_v2",
            "token = access_token2",
            "password = hunter2hunter2;",
            // Indented: a keyword argument on a line of its own; a setting's word; too short.
            "    password=correcthorse",
            "password=interactive",
            "password = letmeinnn",
            "credentials=environment",
            "the password=hunter2hunter2 in prose",
        ] {
            assert!(values(text).is_empty(), "{text}: {:?}", masked(text));
        }
    }

    /// A bare value under 8 characters (`PASSWORD=hunter2`) was passed over, and a name ending
    /// in `_PASS` or `_PWD` (`DB_PASS=tr0ub4dor`) was not a secret's name. On a whole `NAME=value`
    /// line, `=` without blanks, both are a password now; a setting, a flag, a count, a
    /// reference, a keyword argument and a variable are not.
    #[test]
    fn short_bare_values_and_short_names_on_config_lines_are_found() {
        for (text, want) in [
            ("PASSWORD=hunter2", "hunter2"),
            ("DB_PASS=tr0ub4dor", "tr0ub4dor"),
            ("PASSWORD=letmein", "letmein"),
            ("export DB_PASSWORD=tiger", "tiger"),
            ("password=hunter2", "hunter2"),
            ("db.password=swordfish", "swordfish"),
            ("MYSQL_PWD=s3cr3t", "s3cr3t"),
            ("SMTP_PASS=hunter2  # local only", "hunter2"),
            ("SECRET_KEY=dev", "dev"),
            ("PASSWORD=1234", "1234"),
            ("    REDIS_PASSWORD=guest", "guest"),
        ] {
            assert_eq!(masked(text), [want], "{text}");
        }
        for text in [
            "PASSWORD=auto",
            "PASSWORD=yes",
            "PASSWORD=true",
            "PASSWORD=$DB_PASSWORD",
            "PASSWORD=xxx",
            "PASSWORD=<password>",
            "PASSWORD=password",
            "SECRET_KEY=key",
            "MAX_PASS=3",
            "NUM_PASS=1000",
            "USE_PASSWORD=1",
            "BYPASS=hunter2",
            "bypass=hunter2",
            "COMPASS=north",
            "PWD=/home/app",
            "first_pass = hunter2",
            "render_pass = \"shadow\"",
            "//!   force_pass: true/false",
            "db.pass=hunter2",
            "the first pass is hunter2x9",
            "    password=hunter2",
            "  password=tiger,",
            "connect(password=hunter2)",
            "password = hunter2",
            "password = swordfish",
            "GITHUB_TOKEN=abc",
            "TOKEN=eof",
            "password=prompt",
        ] {
            assert!(values(text).is_empty(), "{text}: {:?}", masked(text));
        }
    }

    /// A passphrase with capitals or blanks, or on an indented line, was passed over: only one
    /// lower-case word on a whole unindented line was masked. Code that assigns a variable, a call
    /// or an expression, and a quoted message or label, keep their text.
    #[test]
    fn passphrases_with_capitals_or_blanks_on_config_lines_are_found() {
        for (text, want) in [
            ("  password = Correct Horse Battery", "Correct Horse Battery"),
            ("password = correct horse battery staple", "correct horse battery staple"),
            ("\tpassword = hunter2 rules", "hunter2 rules"),
            ("PASSWORD=CorrectHorse", "CorrectHorse"),
            ("password=CorrectHorse", "CorrectHorse"),
            ("password = CORRECTHORSE", "CORRECTHORSE"),
            ("  db_password: \"two words here\"", "two words here"),
            ("  db_password: correct horse battery staple  # rotated", "correct horse battery staple"),
            ("- password: \"Correct Horse Battery\"", "Correct Horse Battery"),
            ("  \"password\": \"correct horse battery staple\",", "correct horse battery staple"),
            ("export DB_PASSWORD=\"Correct Horse Battery\"", "Correct Horse Battery"),
            ("    'password' => 'correct horse battery staple',", "correct horse battery staple"),
            ("password = Correct Horse Battery ; the ini comment", "Correct Horse Battery"),
        ] {
            assert_eq!(masked(text), [want], "{text}");
        }
        for text in [
            // Code: a call, an attribute, a variable, a class, an expression, a type.
            "password = get_password()",
            "let password = args.password;",
            "    password = CorrectHorse",
            "password = inputValue",
            "password = NotImplemented",
            "    password = a if b else c",
            "    token = await fetch_token",
            "    password: string | undefined",
            "    api_key: Optional[str] = None",
            "    password = generate_password length",
            "conn = connect(password=\"correct horse battery\")",
            "print(\"password = correct horse battery\")",
            "password = correct horse battery; user = admin",
            // Labels, messages and docstrings.
            "  password: \"Mot de passe\"",
            "  token: \"Jeton d'acces\"",
            "  password: \"Must be at least 8 characters\"",
            "    password: The user's password.",
            "  secret: \"Stored in the vault\"",
            "password: \"Enter the admin passphrase:\"",
            // A changelog's or a commit's subject: bare after `:` only nested in YAML.
            "token: refresh before expiry",
            "- secret: add rotation support",
            "  - password: Handle expiry correctly",
            // Too short to be a passphrase.
            "password = two words",
            "token = Bearer abc",
        ] {
            assert!(values(text).is_empty(), "{text}: {:?}", masked(text));
        }
    }

    /// A secret a sentence gives (`the admin password is hunter2hunter2`) was masked nowhere: no
    /// `=` or `:` followed the name. In code `is` compares, and prose says what a thing is.
    #[test]
    fn a_secret_given_in_a_sentence_is_found() {
        for (text, want) in [
            ("the admin password is hunter2hunter2", "hunter2hunter2"),
            ("The staging token was: f9a8b7c6d5e4.", "f9a8b7c6d5e4"),
            ("# db password is \"Tr0ub4dor&3\", rotate it", "Tr0ub4dor&3"),
            ("password: Tr0ub4dor&3 (rotate monthly)", "Tr0ub4dor&3"),
            // Words between the name and `is` / `was`.
            ("the password for the admin account is hunter2rules", "hunter2rules"),
            ("The token used by CI was: f9a8b7c6d5e4.", "f9a8b7c6d5e4"),
            ("the api_token of the billing service is Zq8Wx2Ec4Rv6", "Zq8Wx2Ec4Rv6"),
        ] {
            assert_eq!(masked(text), [want], "{text}");
        }
        for text in [
            "the secret is base64-encoded",
            "if password is password1:",
            "if token is None:",
            "assert token is not None",
            "the password is required",
            "the token is valid for 30 days",
            "the token is sha256_hex of the body",
            "the password is 8 characters or more",
            "the password isn't set",
            "if token in cache and user is admin1234:",
            "the password for the admin account is required",
            "the token for each request is valid for 30 days",
            "the password of user1 is base64-encoded",
            "the password for this account was changed in v2.3",
        ] {
            assert!(values(text).is_empty(), "{text}: {:?}", masked(text));
        }
    }

    /// The pre-test may skip the pattern only where it cannot match: every text the tests use,
    /// matched or not, with the pattern run regardless.
    #[test]
    fn the_pre_test_passes_every_text_the_pattern_matches() {
        let re = pattern().expect("the pattern compiles");
        let texts = [
            "aws_secret_access_key = \"wJalrXUtnFEMI/K7MDENG\"",
            "const PASSWORD: &str = \"Tq8vR2mK9x\";",
            "  \"db_password\": \"hunter22!\",",
            "'client_secret' => 'Zq8Wx2Ec4Rv6'",
            "token := \"f9a8b7c6d5e4\"",
            "Server=db;User Id=sa;Password=hunterhunter;",
            "api-key=abc123def456",
            "SECRET-KEY = 'Zq8Wx2Ec4Rv6'",
            "credentials\t:\thunter2x",
            "'Lock-Token': 'urn:uuid:a515cfa4'",
            "token: Option<String> = None",
            "the admin password is hunter2hunter2",
            "api_token\twas:\tf9a8b7c6d5e4",
            "password was  hunter2x",
            "the password for the admin account is hunter2rules",
            "Token used by CI was: f9a8",
            "the secret\tof it\tis\tx",
            "  password = Correct Horse Battery",
            "DB_PASS=tr0ub4dor",
            "MYSQL_PWD=s3cr3t",
        ];
        for text in texts {
            assert!(re.is_match(text), "the pattern should match {text}");
            assert!(may_match(text), "the pre-test skipped {text}");
        }
        for text in [
            "map.keys().count()",
            "fn tokenize(s: &str)",
            "monkeypatch.setattr(x, y)",
            "passes the test",
            "the password isn't set",
            "a password issue",
            "passwordis hunter2",
            "a password for everyone",
            "the tokens of a lexer are words",
            "the password for all\nis hunter2",
        ] {
            assert!(!re.is_match(text) && !may_match(text), "{text}");
        }
    }

    #[test]
    fn calls_variables_types_and_placeholders_are_not_secrets() {
        for text in [
            "password = getpass()",
            "token = self.next_token()",
            "token = os.environ[\"GITHUB_TOKEN\"]",
            "api_key = settings.OPENAI_API_KEY",
            "self.password = password",
            "password: str",
            "token: string;",
            "password = \"\"",
            "password = \"changeme\"",
            "api_token = \"${API_TOKEN}\"",
            "token = \"<your-token>\"",
            "secret = \"xxxxxxxxxxxx\"",
            "password: \"{{ vault_db_password }}\"",
            "token = \"Identifier\"",
            "token_type = \"bearer\"",
            "password_prompt = \"Enter your password: \"",
            "if password == \"hunter22\":",
            "PASSWORD=$DB_PASSWORD",
            "passwd = \"/etc/passwd\"",
            "let token = tokens2[i];",
            "secret_name = \"prod-db-creds-2\"",
            "password = password_v2",
            "OPENAI_API_KEY=your-api-key-here",
            // Found by a scan of eight open-source projects (docs/PRIVACY.md).
            "    s3_secret_access_key = 's3-secret-access-key'",
            "        \"HTTP/1.1 200 OK\\r\\nAccess-Control-Allow-Credentials : true\\r\\n\\r\\n\";",
            "        'Lock-Token': 'urn:uuid:a515cfa4-5da4-22e1-f5b5-00a0451e6bf7'",
            // Rust found by a scan of crates.io sources: paths, closures, macros.
            "            Token::TupleEnd,",
            "/// # use winnow::token::take_while;",
            "            xToken: ::core::option::Option<",
            "    type Token = private::IdentAny;",
            "                let struct_token = input.parse::<Token![struct]>()?;",
            "            let token = rng.random::<u128>();",
            "        let target_vec_push_token = |attempts: &mut ParseAttempts<R>| {",
            "        let takes_ownership = move |token: CancellationToken| {",
            "    let token = match_byte! { b,",
            "pub const TOKEN: &str = \"$serde_json::private::RawValue\";",
        ] {
            assert!(values(text).is_empty(), "{text}: {:?}", masked(text));
        }
    }

    /// Left over by the last change: a YAML value with a comment after it (`token:abc123def456
    /// # ci`), a short value after `:` (`PASSWORD: hunter2`), a lower-case `_pass` name
    /// (`db_pass = "s3cr3t"`) and a field of a YAML flow mapping on one line (`creds: {user:
    /// bob, password: hunter2}`) were passed over. Types, a test's pass and code's object
    /// literals keep their text.
    #[test]
    fn short_yaml_values_pass_names_and_one_line_flow_mappings_are_found() {
        for (text, want) in [
            ("api_token:abc123def456ghi789", "abc123def456ghi789"),
            ("token:abc123def456  # ci", "abc123def456"),
            ("auth_token: f9a8b7c6d5e4 # rotated", "f9a8b7c6d5e4"),
            ("PASSWORD: hunter2", "hunter2"),
            ("DB_PASSWORD: s3cr3t", "s3cr3t"),
            ("SECRET_KEY: dev", "dev"),
            ("password: hunt3r", "hunt3r"),
            ("db_pass = \"s3cr3t\"", "s3cr3t"),
            ("smtp_pass: hunter2x", "hunter2x"),
            ("smtp_pass: hunt3r", "hunt3r"),
            ("mysql_pwd=s3cr3t", "s3cr3t"),
            ("creds: {user: bob, password: hunter2}", "hunter2"),
            ("db: { user: app, password: swordfish }", "swordfish"),
            ("- {user: bob, password: hunter2}", "hunter2"),
            ("api: {url: x, api_token: abc123def456ghi}", "abc123def456ghi"),
        ] {
            assert_eq!(masked(text), [want], "{text}");
        }
        for text in [
            "smtp_pass: x",
            "first_pass: hunter2x",
            "render_pass = \"shad0w\"",
            "db.pass: hunt3r",
            "the smtp_pass is hunter2x9",
            "    token: u64",
            "secret_key: u64",
            "password: sha256",
            "PASSWORD: str",
            "PASSWORD: Secret",
            "token: abc12",
            "  password: pw2,",
            "const creds = {user: bob, password: pw2};",
            "login({user: bob, password: hunter2})",
            "creds: {user: string, password: string}",
            "creds: {user: User, password: Secret}",
            "const config = {\n  creds: {user: bob, password: hunter2}\n};",
            "  creds: {user: bob, password: hunter2},",
            "x = {password: hunter2}",
            "api: {url: x, api_token: abc123}",
            "db: {user: app, password: changeme}",
        ] {
            assert!(values(text).is_empty(), "{text}: {:?}", masked(text));
        }
    }

    /// A Pygments style's colours under `Token` keys were masked as secrets (`Token: '#d8dee9'`),
    /// and a password nested two mappings deep on one YAML line was passed over.
    #[test]
    fn colours_are_not_secrets_and_nested_flow_mappings_are_found() {
        for text in [
            "Token: '#d8dee9'",
            "    Token.Keyword: '#81a1c1',",
            "Token: \"bold #fff\"",
            "    Token.Comment: 'italic #616e87',",
            "    Token.Error: 'bg:#bf616a #ECEFF4',",
            "token: \"#ffcc0080\"",
            "db: {primary: {user: bob, password: changeme}}",
            "x = {db: {password: hunter2}}",
            "login({db: {password: hunter2}})",
            "db: {primary: {user: bob, password: hunter2}},",
        ] {
            assert!(values(text).is_empty(), "{text}: {:?}", masked(text));
        }
        for (text, want) in [
            ("Token: '#d8dee9x9'", "#d8dee9x9"),
            ("password: \"#abc123\"", "#abc123"),
            ("db: {primary: {user: bob, password: hunter2}}", "hunter2"),
            ("db: {primary: {password: hunter2, user: bob}}", "hunter2"),
            ("db: {pool: 5, primary: {user: bob, password: hunter2}}", "hunter2"),
            ("a: {b: {c: {password: hunter2}}}", "hunter2"),
            ("db: {replica: {user: a}, password: hunter2}", "hunter2"),
            ("- {db: {user: bob, password: hunter2}}", "hunter2"),
        ] {
            assert_eq!(masked(text), [want], "{text}");
        }
    }
}
