//! docdex's own judgement of a preference, without a model: is it harmful (spec 001 §8.3's
//! "bad apple"), does it contradict itself or a rule the agent keeps, which category does it
//! read as, and does a chat message carry a preference at all. The evolution pipeline applies
//! these before and after the model decides, so a refusal never depends on the model agreeing.

use super::types::{Category, Preference};

/// What a harmful preference asks to switch off or bypass, with the reason given.
const HARMFUL_TARGETS: &[(&[&str], &str)] = &[
    (&["lint", "linter", "linters", "linting", "eslint", "clippy", "pylint"], "it turns off linting"),
    (&["test", "tests", "testing"], "it turns off tests"),
    (&["type", "typecheck", "typechecking", "tsc", "mypy"], "it turns off type checking"),
    (&["security", "safety", "warning", "warnings", "audit", "sast"], "it silences security or safety checks"),
    (
        &[
            "ssl",
            "tls",
            "certificate",
            "certificates",
            "verification",
            "verify",
            "csrf",
            "cors",
            "auth",
            "authentication",
        ],
        "it switches off a security control",
    ),
    (&["review", "reviews", "ci", "pipeline", "hook", "hooks", "checks"], "it bypasses review or CI"),
];

/// Verbs that switch something off.
const DISABLING: &[&str] = &[
    "disable",
    "disabled",
    "disabling",
    "skip",
    "skipping",
    "ignore",
    "ignoring",
    "suppress",
    "silence",
    "bypass",
    "remove",
    "delete",
    "turn",
    "comment",
];

const NEGATIONS: &[&str] = &["never", "not", "don't", "dont", "no", "avoid", "without"];

fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '-' || c == '.' || c == '/' || c == '@'))
        .map(|w| w.trim_matches(|c: char| c == '.' || c == '\'' || c == '-').to_string())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Why a preference is harmful, if it is: it switches off linting, tests, type checks, security
/// controls or review, bypasses commit hooks, or puts secrets in the repository. "Never disable
/// the linter" is not harmful: a negation just before the verb turns it around.
pub fn harmful(text: &str) -> Option<String> {
    let lower = text.to_lowercase();
    if lower.contains("--no-verify") || lower.contains("no-verify") {
        return Some("harmful: it bypasses commit hooks (--no-verify)".into());
    }
    if lower.contains("chmod 777") || lower.contains("chmod -r 777") {
        return Some("harmful: it makes files writable by everyone (chmod 777)".into());
    }
    let w = words(text);
    let negated_before = |i: usize| w[i.saturating_sub(3)..i].iter().any(|x| NEGATIONS.contains(&x.as_str()));
    for (i, word) in w.iter().enumerate() {
        if !DISABLING.contains(&word.as_str()) || negated_before(i) {
            continue;
        }
        // "turn off", "comment out": the particle is part of the verb.
        if (word == "turn" && w.get(i + 1).is_none_or(|n| n != "off"))
            || (word == "comment" && w.get(i + 1).is_none_or(|n| n != "out"))
        {
            continue;
        }
        let window = &w[i + 1..(i + 7).min(w.len())];
        for (targets, why) in HARMFUL_TARGETS {
            if window.iter().any(|x| targets.contains(&x.as_str())) {
                return Some(format!("harmful: {why}"));
            }
        }
    }
    if let Some(why) = secret_placement(text).or_else(|| commits_dotenv(text)) {
        return Some(why);
    }
    let is_secret = |x: &String| {
        matches!(
            x.as_str(),
            "secret"
                | "secrets"
                | "password"
                | "passwords"
                | "credential"
                | "credentials"
                | "token"
                | "tokens"
                | "key"
                | "keys"
        )
    };
    for (i, word) in w.iter().enumerate() {
        let puts = matches!(word.as_str(), "commit" | "hardcode" | "hard-code" | "hardcoded" | "embed");
        if puts && !negated_before(i) && w[i + 1..(i + 6).min(w.len())].iter().any(is_secret) {
            return Some("harmful: it puts secrets into the repository".into());
        }
    }
    None
}

/// Nouns that name a secret on their own.
const SECRETS: &[&str] = &[
    "secret",
    "secrets",
    "password",
    "passwords",
    "passwd",
    "passphrase",
    "passphrases",
    "credential",
    "credentials",
    "apikey",
    "apikeys",
    "api_key",
    "api_keys",
];

/// Words before `key`/`token` that make it a secret ("AWS key", "access token"); a bare
/// "key" or "token" is as often a key binding or a design token.
const SECRET_QUALIFIERS: &[&str] = &[
    "api",
    "secret",
    "access",
    "private",
    "aws",
    "ssh",
    "signing",
    "encryption",
    "master",
    "gpg",
    "pgp",
    "account",
    "deploy",
    "auth",
    "bearer",
    "refresh",
    "session",
    "jwt",
    "oauth",
    "github",
    "gitlab",
    "slack",
    "npm",
    "personal",
    "user",
    "user's",
    "users",
];

/// Words after a secret noun that make it about secrets, not a secret: a password policy, a
/// secrets manager, token usage.
const NOT_A_SECRET: &[&str] = &[
    "hash",
    "hashes",
    "hashed",
    "hashing",
    "policy",
    "policies",
    "reset",
    "resets",
    "field",
    "fields",
    "length",
    "strength",
    "manager",
    "managers",
    "management",
    "rotation",
    "rule",
    "rules",
    "validation",
    "complexity",
    "input",
    "inputs",
    "form",
    "forms",
    "prompt",
    "scanner",
    "scanning",
    "detection",
    "store",
    "stores",
    "vault",
    "vaults",
    "count",
    "counts",
    "usage",
    "budget",
    "budgets",
    "limit",
    "limits",
    "expiry",
    "expiration",
    "lifetime",
    "ttl",
    "names",
];

/// Verbs that put what follows into the code or the repository, wherever it is said to go.
const INTO_CODE: &[&str] = &[
    "commit",
    "commits",
    "committed",
    "committing",
    "hardcode",
    "hardcodes",
    "hardcoded",
    "hardcoding",
    "hard-code",
    "hard-coded",
    "hard-coding",
    "embed",
    "embeds",
    "embedded",
    "embedding",
];

/// Verbs that write what follows to a log or the output.
const INTO_LOGS: &[&str] = &[
    "log", "logs", "logged", "logging", "print", "prints", "printed", "printing", "echo", "echoes", "echoed", "dump",
    "dumps", "dumped", "dumping", "expose", "exposes", "exposed", "exposing",
];

/// Verbs that put what follows somewhere, harmful for a secret when the place is code, the
/// repository or a config file ("put the password in settings.py", "secrets go in config").
const PLACING: &[&str] = &[
    "put", "puts", "putting", "store", "stores", "stored", "storing", "save", "saves", "saved", "saving", "keep",
    "keeps", "kept", "keeping", "write", "writes", "written", "writing", "wrote", "place", "places", "placed", "add",
    "adds", "added", "adding", "paste", "pasted", "include", "includes", "included", "leave", "go", "goes", "live",
    "lives", "belong", "belongs",
];

/// Places that are the code, the repository, a config file or a log.
const PLACES: &[&str] = &[
    "repository",
    "repositories",
    "repo",
    "repos",
    "code",
    "codebase",
    "source",
    "sources",
    "config",
    "configs",
    "configuration",
    "settings",
    "dockerfile",
    "image",
    "frontend",
    "bundle",
    "html",
    "readme",
    "comment",
    "comments",
    "url",
    "urls",
    "yaml",
    "yml",
    "json",
    "toml",
    "ini",
    "xml",
    "log",
    "logs",
    "stdout",
    "stderr",
    "console",
    "output",
    "terminal",
];

/// Extensions of files whose text is code or configuration (`config.py`, `settings.yaml`); a
/// `.env` file, kept out of git, is where secrets usually belong.
const CODE_EXTENSIONS: &[&str] = &[
    "py",
    "js",
    "ts",
    "tsx",
    "jsx",
    "mjs",
    "cjs",
    "rb",
    "go",
    "rs",
    "java",
    "kt",
    "cs",
    "php",
    "json",
    "yaml",
    "yml",
    "toml",
    "ini",
    "cfg",
    "conf",
    "xml",
    "properties",
    "sh",
    "swift",
    "c",
    "cpp",
    "h",
    "vue",
    "svelte",
    "tf",
];

/// Words after which a place is not where the secret goes ("keep secrets out of the
/// repository", "in the vault, not in config.py", "read them from config").
const AWAY: &[&str] = &[
    "not", "never", "no", "out", "outside", "away", "instead", "rather", "than", "except", "without", "from", "avoid",
];

/// Why a statement commits a `.env` file, if it does: that is where secrets live, kept out of
/// git, so committing one leaks them whatever the statement says about them. "Always commit the
/// .env file with the AWS secret key" was learnt: its secret was past the six words after the
/// verb, and the file itself was not seen as one. Not a template meant to be committed
/// (`.env.example`, `.sample`, `.template`, `.dist`), nor a file set apart ("everything except
/// the .env file", "the code, not .env") or a negated verb ("never commit .env").
fn commits_dotenv(text: &str) -> Option<String> {
    const TEMPLATES: &[&str] = &["example", "sample", "template", "dist", "defaults"];
    for clause in clauses(text) {
        let lower = clause.to_lowercase();
        let tokens: Vec<&str> = lower
            .split_whitespace()
            .map(|t| t.trim_matches(|c: char| matches!(c, '`' | '\'' | '"' | ',' | '(' | ')')))
            .collect();
        let dotenv = |t: &str| {
            t.strip_prefix(".env").is_some_and(|rest| {
                rest.is_empty() || rest.strip_prefix('.').is_some_and(|variant| !TEMPLATES.contains(&variant))
            })
        };
        for (v, verb) in tokens.iter().enumerate() {
            let negated = tokens[v.saturating_sub(3)..v].iter().any(|x| NEGATIONS.contains(x));
            if !INTO_CODE.contains(verb) || negated {
                continue;
            }
            let object = &tokens[v + 1..(v + 7).min(tokens.len())];
            let Some(at) = object.iter().position(|t| dotenv(t)) else { continue };
            if !object[..at].iter().any(|x| AWAY.contains(x) || NEGATIONS.contains(x)) {
                return Some(
                    "harmful: it commits a .env file, where secrets live (keep it out of git; commit a .env.example without values instead)"
                        .into(),
                );
            }
        }
    }
    None
}

/// A text's clauses: split at `;`, `!`, `?`, `:`, line breaks and a full stop that ends a
/// sentence (followed by a space or the end, so `config.py` stays one word).
fn clauses(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (i, c) in text.char_indices() {
        let ends = matches!(c, ';' | '!' | '?' | ':' | '\n')
            || (c == '.' && bytes.get(i + 1).is_none_or(|b| b.is_ascii_whitespace()));
        if ends {
            out.push(&text[start..i]);
            start = i + c.len_utf8();
        }
    }
    out.push(&text[start..]);
    out.into_iter().filter(|c| !c.trim().is_empty()).collect()
}

/// Whether `w[i]` names a secret: one of [`SECRETS`], or a qualified key or token ("AWS
/// key", "session token"); with `bare`, any key or token. Not when a word after it makes it
/// about secrets (a password policy), nor when it is negated or set apart ("never passwords",
/// "everything except tokens").
fn secret_at(w: &[String], i: usize, bare: bool) -> bool {
    let word = w[i].as_str();
    let keyish = matches!(word, "key" | "keys" | "token" | "tokens");
    let named = SECRETS.contains(&word)
        || (keyish && (bare || i.checked_sub(1).is_some_and(|p| SECRET_QUALIFIERS.contains(&w[p].as_str()))));
    let about = w.get(i + 1).is_some_and(|n| NOT_A_SECRET.contains(&n.as_str()));
    let set_apart =
        w[i.saturating_sub(3)..i].iter().any(|x| NEGATIONS.contains(&x.as_str()) || AWAY.contains(&x.as_str()));
    named && !about && !set_apart
}

/// Whether `word` is a place in code, the repository, a config file or a log.
fn is_place(word: &str) -> bool {
    PLACES.contains(&word)
        || word.rsplit_once('.').is_some_and(|(name, ext)| !name.is_empty() && CODE_EXTENSIONS.contains(&ext))
}

/// Why a statement puts a secret where it leaks, if it does: a secret with a verb that puts
/// it into code or the repository (commit, hardcode), one that writes it to a log or the
/// output (log, print), or one that puts it somewhere (put, store, keep) when that place is
/// code, the repository, a config file or a log. Only "commit", "hardcode" and "embed" were
/// caught, so "Put the AWS secret key in config.py" and "Log user passwords to stdout" were
/// learnt. A negation before the verb turns it around; a place after "not", "out of",
/// "instead of" or "from" is not where the secret goes.
fn secret_placement(text: &str) -> Option<String> {
    for clause in clauses(text) {
        let w = words(clause);
        let negated = |i: usize| w[i.saturating_sub(3)..i].iter().any(|x| NEGATIONS.contains(&x.as_str()));
        let is_verb = |i: usize| {
            let v = w[i].as_str();
            INTO_CODE.contains(&v) || INTO_LOGS.contains(&v) || PLACING.contains(&v)
        };
        for v in (0..w.len()).filter(|&i| is_verb(i) && !negated(i)) {
            let verb = w[v].as_str();
            let bare = INTO_CODE.contains(&verb);
            // Its object, up to the next verb ("log request ids and store passwords hashed"
            // logs no password); before it, for a passive or "secrets go in config".
            let after = (v + 1..(v + 7).min(w.len())).take_while(|&i| !is_verb(i)).find(|&i| secret_at(&w, i, bare));
            let passive = verb.ends_with("ed")
                || verb.ends_with("en")
                || matches!(verb, "go" | "goes" | "live" | "lives" | "belong" | "belongs" | "kept" | "put");
            let before =
                || (v.saturating_sub(4)..v).rev().take_while(|&i| !is_verb(i)).find(|&i| secret_at(&w, i, bare));
            let Some(s) = after.or_else(|| passive.then(before).flatten()) else { continue };
            if INTO_CODE.contains(&verb) {
                return Some("harmful: it puts secrets into the repository".into());
            }
            if INTO_LOGS.contains(&verb) {
                return Some("harmful: it writes secrets to logs or output, where they leak".into());
            }
            let from = v.min(s);
            let place = (from + 1..w.len()).find(|&j| is_place(&w[j]));
            let away = |j: usize| w[from..j].iter().any(|x| AWAY.contains(&x.as_str()));
            if let Some(j) = place.filter(|&j| !away(j)) {
                return Some(format!(
                    "harmful: it puts secrets into {} (keep them in the environment or a secret manager)",
                    if matches!(w[j].as_str(), "log" | "logs" | "stdout" | "stderr" | "console" | "output" | "terminal")
                    {
                        "logs or output"
                    } else {
                        "code, the repository or config files"
                    }
                ));
            }
        }
    }
    None
}

/// The packages or tools a text says to use, and the ones it says to avoid.
fn stances(text: &str) -> (Vec<String>, Vec<String>) {
    let w = words(text);
    let mut pro = Vec::new();
    let mut con = Vec::new();
    // Where the last "use X" / "prefer X" was: "prefer attrs over dataclasses" avoids what
    // follows "over" (a kept "prefer dataclasses" then contradicts it); "loop over items" does not.
    let mut last_pro: Option<usize> = None;
    for (i, word) in w.iter().enumerate() {
        let negated = w[i.saturating_sub(2)..i].iter().any(|x| NEGATIONS.contains(&x.as_str()) || x == "stop");
        let target = |j: usize| -> Option<String> {
            let mut j = j;
            while w.get(j).is_some_and(|x| matches!(x.as_str(), "the" | "a" | "using" | "of" | "usage")) {
                j += 1;
            }
            w.get(j)
                .filter(|x| x.len() >= 2 && !matches!(x.as_str(), "it" | "this" | "that" | "them"))
                .map(|x| x.strip_suffix(".js").filter(|b| !b.is_empty() && !b.contains('/')).unwrap_or(x).to_string())
        };
        match word.as_str() {
            "use" | "prefer" | "adopt" if !negated => {
                pro.extend(target(i + 1));
                last_pro = Some(i);
            }
            "use" | "using" | "import" | "importing" if negated => con.extend(target(i + 1)),
            "avoid" | "deprecate" | "ban" | "forbid" => con.extend(target(i + 1)),
            "over" if last_pro.is_some_and(|p| i - p <= 4) => con.extend(target(i + 1)),
            "instead" if w.get(i + 1).is_some_and(|x| x == "of") => con.extend(target(i + 2)),
            "rather" if w.get(i + 1).is_some_and(|x| x == "than") => con.extend(target(i + 2)),
            _ => {}
        }
    }
    (pro, con)
}

/// Whether two statements take opposite sides: one says to use what the other avoids, or only
/// one of them is negated ("use tabs" against "never use tabs for indentation"). Their words
/// can match closely while they say opposite things, so closeness alone never makes them the
/// same preference.
pub fn opposed(a: &str, b: &str) -> bool {
    let negated = |t: &str| words(t).iter().any(|w| NEGATIONS.contains(&w.as_str()));
    let ((ap, ac), (bp, bc)) = (stances(a), stances(b));
    negated(a) != negated(b) || ap.iter().any(|x| bc.contains(x)) || ac.iter().any(|x| bp.contains(x))
}

/// Why a statement contradicts itself ("use moment, but avoid moment"), if it does.
pub fn self_contradiction(text: &str) -> Option<String> {
    let (pro, con) = stances(text);
    pro.iter().find(|p| con.contains(p)).map(|p| format!("self-contradicting: it says both to use and to avoid {p}"))
}

/// Words that end a verb's object: what follows says where, how or when, not what.
const OBJECT_END: &[&str] = &[
    "in", "into", "to", "for", "from", "with", "by", "on", "at", "of", "via", "using", "when", "unless", "except",
    "outside", "inside", "before", "after", "during", "without", "instead", "rather", "than", "because", "so", "as",
    "if", "while", "that", "which", "where", "through", "over", "under", "but", "even",
];

/// Words of an object that do not tell one thing from another ("the", "your own").
const DETERMINERS: &[&str] = &[
    "the", "a", "an", "all", "any", "our", "your", "their", "its", "my", "his", "her", "these", "those", "this", "own",
];

/// A word reduced to its stem, enough to match "log", "logs", "logging" and "logged", or
/// "password" and "passwords".
fn stem(word: &str) -> String {
    let mut w = word.trim_end_matches("'s").to_string();
    for (suffix, with) in [("ies", "y"), ("ing", ""), ("ed", ""), ("s", "")] {
        if w.len() > suffix.len() + 1 && w.ends_with(suffix) && !(suffix == "s" && w.ends_with("ss")) {
            w.truncate(w.len() - suffix.len());
            w.push_str(with);
            break;
        }
    }
    if w.len() > 3 && w.ends_with('e') {
        w.pop();
    }
    let b = w.as_bytes();
    if b.len() > 3 && b[b.len() - 1] == b[b.len() - 2] && !b"aeiou".contains(&b[b.len() - 1]) {
        w.pop();
    }
    w
}

/// A clause's words with `,` kept as a word of its own (it separates the items of a list).
fn list_words(clause: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, part) in clause.split(',').enumerate() {
        if i > 0 {
            out.push(",".to_string());
        }
        out.extend(words(part));
    }
    out
}

/// The object after a verb at `at`: its items ("secrets, tokens or passwords" → three), each
/// the stems of its words, determiners left out; and where it ends.
fn object_items(w: &[String], at: usize) -> (Vec<Vec<String>>, usize) {
    let mut items = vec![Vec::new()];
    let mut end = at;
    while end < w.len() && !OBJECT_END.contains(&w[end].as_str()) {
        match w[end].as_str() {
            "," | "and" | "or" | "nor" => items.push(Vec::new()),
            x if DETERMINERS.contains(&x) => {}
            x => items.last_mut().into_iter().for_each(|i| i.push(stem(x))),
        }
        end += 1;
    }
    items.retain(|i| !i.is_empty());
    (items, end)
}

/// What a kept "never VERB OBJECT [how]" forbids: the verb's stem, the object's items and
/// the content words that qualify it ("never build SQL by concatenating strings": only SQL
/// built that way).
struct Ban {
    verb: String,
    items: Vec<Vec<String>>,
    how: Vec<String>,
}

/// The bans a text states: "never V X", "do not V X", "don't V X", "avoid V-ing X".
fn bans(text: &str) -> Vec<Ban> {
    let mut out = Vec::new();
    for clause in clauses(text) {
        let w = list_words(clause);
        for i in 0..w.len() {
            let verb_at = match w[i].as_str() {
                "never" if w.get(i + 1).is_some_and(|x| x == "ever") => i + 2,
                "never" | "don't" | "dont" => i + 1,
                "do" if w.get(i + 1).is_some_and(|x| x == "not") => i + 2,
                "avoid" if w.get(i + 1).is_some_and(|x| x.ends_with("ing")) => i + 1,
                _ => continue,
            };
            let Some(verb) = w.get(verb_at).filter(|v| v.len() >= 2 && v.chars().all(char::is_alphabetic)) else {
                continue;
            };
            // "never be stored": the passive names its object elsewhere.
            if matches!(verb.as_str(), "be" | "been" | "is" | "are" | "have" | "has") {
                continue;
            }
            let (items, end) = object_items(&w, verb_at + 1);
            let how = w[end..]
                .iter()
                .filter(|x| x.len() > 3 && !OBJECT_END.contains(&x.as_str()) && !DETERMINERS.contains(&x.as_str()))
                .map(|x| stem(x))
                .collect();
            if !items.is_empty() {
                out.push(Ban { verb: stem(verb), items, how });
            }
        }
    }
    out
}

/// What of `text` a kept ban forbids, if anything: the ban's verb, not negated, with an object
/// item that is the ban's or narrower or wider ("log user passwords" against "never log
/// passwords"), and the ban's qualifier when it has one. "Log request ids" is no "log
/// passwords".
fn breaks_ban(text: &str, ban: &Ban) -> Option<String> {
    for clause in clauses(text) {
        let w = list_words(clause);
        let stems: Vec<String> = w.iter().map(|x| stem(x)).collect();
        for i in (0..w.len()).filter(|&i| stems[i] == ban.verb) {
            let negated = w[i.saturating_sub(3)..i].iter().any(|x| NEGATIONS.contains(&x.as_str()) || x == "stop");
            if negated {
                continue;
            }
            let (items, _) = object_items(&w, i + 1);
            let within = |a: &[String], b: &[String]| a.iter().all(|x| b.contains(x));
            let hit = items.iter().find(|n| ban.items.iter().any(|k| within(k, n) || within(n, k)));
            let qualified = ban.how.is_empty() || ban.how.iter().any(|h| stems.contains(h));
            if let (Some(_), true) = (hit, qualified) {
                let (_, end) = object_items(&w, i + 1);
                return Some(w[i..end].iter().filter(|x| *x != ",").cloned().collect::<Vec<_>>().join(" "));
            }
        }
    }
    None
}

/// Why a new preference does what a kept one says never to do ("Log user passwords ..."
/// against "Never log secrets, tokens or passwords"), if it does. Only tools named after "use"
/// were compared, so such a statement was learnt beside the ban it breaks.
fn breaks_kept_ban(content: &str, kept: &[&Preference]) -> Option<String> {
    for p in kept {
        for ban in bans(&p.content) {
            if let Some(what) = breaks_ban(content, &ban) {
                return Some(format!(
                    "contradicts preference {} (\"{}\"): it says never to do what this says to do ({what}); update that one instead (docdex profile edit {})",
                    p.id, p.content, p.id
                ));
            }
        }
    }
    None
}

/// Why a new preference contradicts one the agent keeps (other than the one it replaces).
pub fn contradicts_kept(
    content: &str,
    rule: Option<&str>,
    kept: &[Preference],
    replacing: Option<&str>,
) -> Option<String> {
    let (pro, con) = stances(content);
    let forbidden: Vec<String> =
        rule.and_then(|r| r.strip_prefix("forbid-import ")).map(|p| vec![p.trim().to_string()]).unwrap_or_default();
    for p in kept.iter().filter(|p| Some(p.id.as_str()) != replacing) {
        let (kp, kc) = stances(&p.content);
        let kept_forbids = p.rule.as_deref().and_then(|r| r.strip_prefix("forbid-import ")).map(str::trim);
        let clash = pro
            .iter()
            .find(|x| kc.contains(x) || kept_forbids == Some(x.as_str()))
            .or_else(|| con.iter().chain(forbidden.iter()).find(|x| kp.contains(x)));
        if let Some(x) = clash {
            return Some(format!(
                "contradicts preference {} (\"{}\") about {x}; update that one instead (docdex profile edit {})",
                p.id, p.content, p.id
            ));
        }
    }
    let others: Vec<&Preference> = kept.iter().filter(|p| Some(p.id.as_str()) != replacing).collect();
    breaks_kept_ban(content, &others)
}

/// Verbs that make a statement tooling when what they take is a tool (`use pytest`, `switch to
/// pnpm`); what they take decides ([`STYLE_NOTIONS`]).
const TOOLING_VERBS: &[&str] = &["use", "using", "switch", "switching", "adopt", "migrate"];

/// Words that make a statement tooling whatever its verb.
const TOOLING_WORDS: &[&str] = &[
    "library",
    "framework",
    "tool",
    "package",
    "runner",
    "linter",
    "formatter",
    "vitest",
    "jest",
    "pnpm",
    "npm",
    "yarn",
];

/// Code-style notions, as [`words`] splits them (`snake_case` is `snake case`): "use early
/// returns", "use snake_case", "using type hints" are style, not tooling, though they hold
/// "use". Each entry is one word or several in a row.
const STYLE_NOTIONS: &[&str] = &[
    "early return",
    "early returns",
    "guard clause",
    "guard clauses",
    "snake case",
    "camelcase",
    "camel case",
    "pascalcase",
    "pascal case",
    "kebab-case",
    "kebab case",
    "screaming snake case",
    "type hints",
    "type hint",
    "type annotations",
    "f-strings",
    "f-string",
    "tabs",
    "spaces",
    "indentation",
    "naming",
    "names",
    "descriptive names",
    "docstrings",
    "comments",
    "semicolons",
    "single quotes",
    "double quotes",
    "trailing commas",
    "braces",
    "short functions",
    "pure functions",
    "immutability",
    "const",
    "arrow functions",
    "list comprehensions",
    "comprehensions",
    "pattern matching",
    "named exports",
    "default exports",
    "explicit types",
];

/// The category a statement reads as, when nobody said. "use", "using", "switch", "adopt" and
/// "migrate" make it tooling unless a code-style notion follows the verb ([`STYLE_NOTIONS`]:
/// "always use early returns" is style, "use pytest" tooling); a tool's word makes it tooling
/// wherever it stands ("prefer the vitest runner").
pub fn classify(text: &str) -> Category {
    let w = words(text);
    let has = |xs: &[&str]| w.iter().any(|x| xs.contains(&x.as_str()));
    if has(&["never", "avoid", "don't", "dont", "forbid", "ban", "deprecate", "must", "no"]) {
        return Category::Constraint;
    }
    if has(&[
        "before", "after", "first", "then", "step", "review", "commit", "commits", "pr", "release", "deploy", "plan",
    ]) {
        return Category::Workflow;
    }
    if has(TOOLING_WORDS) {
        return Category::Tooling;
    }
    let verbs: Vec<usize> = (0..w.len()).filter(|&i| TOOLING_VERBS.contains(&w[i].as_str())).collect();
    match verbs.iter().all(|&i| takes_style_notion(&w[i + 1..])) {
        true => Category::Style,
        false => Category::Tooling,
    }
}

/// Whether the words after a tooling verb name a code-style notion before they end or reach a
/// word that closes the verb's object (`in`, `for`, `when`, ..., or the next such verb): "use
/// early returns in python code", "using snake_case for variables"; not "use ruff to check the
/// tabs".
fn takes_style_notion(after: &[String]) -> bool {
    const CLOSES: &[&str] =
        &["in", "for", "when", "with", "to", "so", "because", "instead", "over", "and", "via", "by"];
    let end = after
        .iter()
        .position(|x| CLOSES.contains(&x.as_str()) || TOOLING_VERBS.contains(&x.as_str()))
        .unwrap_or(after.len());
    let object = &after[..end];
    (0..object.len()).any(|i| {
        STYLE_NOTIONS.iter().any(|n| {
            let n: Vec<&str> = n.split(' ').collect();
            object.len() - i >= n.len() && n.iter().zip(&object[i..]).all(|(a, b)| *a == b.as_str())
        })
    })
}

/// Words that open a question, or a request to the assistant, rather than a statement.
const ASKING: &[&str] = &[
    "why",
    "how",
    "what",
    "what's",
    "whats",
    "where",
    "when",
    "which",
    "who",
    "whom",
    "whose",
    "can",
    "could",
    "would",
    "should",
    "shall",
    "do",
    "does",
    "did",
    "is",
    "are",
    "was",
    "were",
    "will",
    "may",
    "might",
    "explain",
    "show",
    "tell",
    "describe",
    "find",
    "list",
    "give",
    "help",
    "summarize",
    "summarise",
    "compare",
    "walk",
];

/// True when some sentence of `text` asks something: it ends with `?`, or opens with a
/// question word or a request ("why do we use moment? explain the trade-offs", "show me where
/// we use redis"). Only the message's end was looked at, so such a message, which names a
/// preference's words, was learnt as a preference whenever no model could say otherwise.
pub fn asks(text: &str) -> bool {
    let lower = text.to_lowercase();
    let mut rest = lower.as_str();
    while !rest.trim().is_empty() {
        let end = rest.find(['.', '!', '?', '\n', ';']).unwrap_or(rest.len());
        let sentence = &rest[..end];
        if rest[end..].starts_with('?') {
            return true;
        }
        let w = words(sentence);
        let first = w.first().map_or("", String::as_str);
        // "Do not use lodash" instructs; "do we use lodash" asks.
        let instructs = first == "do" && w.get(1).is_some_and(|x| x == "not");
        if ASKING.contains(&first) && !instructs {
            return true;
        }
        rest = rest.get(end + 1..).unwrap_or("");
    }
    false
}

/// True when a chat message states a preference ("we're switching to vitest", "never use any
/// here", "I prefer tabs") rather than asking something (see [`asks`]).
pub fn carries_preference(text: &str) -> bool {
    let t = text.trim().to_lowercase();
    if t.is_empty() || t.len() > 2000 || asks(&t) {
        return false;
    }
    const MARKERS: &[&str] = &[
        "i prefer",
        "we prefer",
        "i'd prefer",
        "please always",
        "always use",
        "always write",
        "never use",
        "never write",
        "don't use",
        "do not use",
        "stop using",
        "we use ",
        "we're using",
        "we are using",
        "we are switching",
        "we're switching",
        "switch to ",
        "switching to ",
        "from now on",
        "remember that",
        "in this project we",
        "our convention",
        "we avoid",
        "please avoid",
        "please don't",
        "please do not",
        "prefer ",
        "we don't ",
        "we do not ",
    ];
    MARKERS.iter().any(|m| t.contains(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harm_is_recognised_and_negation_turns_it_around() {
        for bad in [
            "Disable all linters",
            "Ignore safety warnings",
            "skip the tests when in a hurry",
            "commit with --no-verify to save time",
            "Turn off TLS certificate verification in the client",
            "hardcode the API key in config.ts",
            "comment out failing tests",
        ] {
            assert!(harmful(bad).is_some(), "{bad}");
        }
        for fine in [
            "Never disable the linter",
            "Do not skip tests",
            "Use vitest for unit tests",
            "Never commit secrets",
            "Avoid circular dependencies",
            "Remove dead code",
            "Turn the feature flag on in staging",
        ] {
            assert_eq!(harmful(fine), None, "{fine}");
        }
    }

    #[test]
    fn a_secret_put_where_it_leaks_is_harmful_whatever_the_verb() {
        // Only "commit", "hardcode" and "embed" were caught: each of these was learnt.
        for bad in [
            "Put the AWS secret key in config.py",
            "Store credentials in the repository",
            "Put the database password in settings.py",
            "Log user passwords and tokens to stdout for debugging",
            "Print the access token to the console",
            "The API key goes in config.ts",
            "Passwords can be stored in settings.yaml",
            "Keep the Stripe API key in the config file",
        ] {
            assert!(harmful(bad).is_some_and(|w| w.contains("secrets")), "{bad}: {:?}", harmful(bad));
        }
        for fine in [
            "Store config in TOML files",
            "Log request ids",
            "Put tests next to the code",
            "Never log secrets, tokens or passwords.",
            "Never put secrets in config.py",
            "Keep secrets in environment variables, never in config.py",
            "Keep credentials out of the repository",
            "Store passwords hashed with argon2",
            "Store API keys in the secrets manager",
            "Read the API key from the environment",
            "Log request ids and store password hashes in the database",
            "Log token usage per request",
            "Put key bindings in keymap.toml",
            "Check the access token in the client",
            "Store the SSH key for git in ~/.ssh",
            "Put the deploy token in GitHub secrets",
            "No secrets in the repository",
            "Log every request, but never tokens or passwords",
        ] {
            assert_eq!(harmful(fine), None, "{fine}");
        }
    }

    #[test]
    fn committing_a_dotenv_file_is_harmful_and_its_template_is_fine() {
        for bad in [
            "always commit the .env file with the AWS secret key",
            "Commit .env so the team has the config",
            "git add and commit `.env.production` too",
            "Committing the .env.local file is fine",
        ] {
            assert!(harmful(bad).is_some_and(|w| w.contains(".env file")), "{bad}: {:?}", harmful(bad));
        }
        for fine in [
            "Commit .env.example with placeholder values",
            "Never commit the .env file",
            "Don't commit .env",
            "Commit everything except the .env file",
            "Commit the code, not the .env file",
            "Keep secrets in a .env file",
            "Load settings from .env with dotenv",
        ] {
            assert_eq!(harmful(fine), None, "{fine}");
        }
    }

    fn pref(id: &str, content: &str) -> Preference {
        Preference {
            id: id.into(),
            agent_id: "a".into(),
            content: content.into(),
            category: Category::Constraint,
            rule: None,
            last_updated: 1,
            source: super::super::types::PreferenceSource::Manual,
            embedded: false,
        }
    }

    #[test]
    fn doing_what_a_kept_never_forbids_contradicts_it() {
        let kept = [
            pref("p1", "Never log secrets, tokens or passwords."),
            pref("p2", "Use parameterised queries; never build SQL by concatenating strings."),
            pref("p3", "Never log full request bodies"),
            pref("p4", "Use a vetted library for cryptography; never write your own."),
            pref("p5", "Do not use default exports"),
        ];
        for (said, id) in [
            ("Log user passwords and tokens to stdout for debugging", "p1"),
            ("Logging secrets is fine in development", "p1"),
            ("Build SQL by concatenating strings when the query is dynamic", "p2"),
            ("Log request bodies for debugging", "p3"),
        ] {
            let why = contradicts_kept(said, None, &kept, None);
            assert!(why.as_deref().is_some_and(|w| w.contains(id) && w.contains("never")), "{said}: {why:?}");
        }
        for fine in [
            "Log request ids",
            "Build SQL with the query builder",
            "Write your own test helpers",
            "Use named exports",
            "Never log secrets in production either",
            "Log response status codes",
        ] {
            assert_eq!(contradicts_kept(fine, None, &kept, None), None, "{fine}");
        }
        // An update of the ban itself is no contradiction of it.
        assert_eq!(contradicts_kept("Log request bodies for debugging", None, &kept, Some("p3")), None);
    }

    #[test]
    fn opposite_statements_are_told_apart_from_repeats() {
        assert!(opposed("use tabs", "Never use tabs for indentation"));
        assert!(opposed("use lodash", "Avoid lodash"));
        assert!(!opposed("prefer early returns", "Prefer early returns over nested ifs"));
        assert!(!opposed("don't use default exports", "never use default exports"));
    }

    #[test]
    fn contradictions_within_and_against_kept_rules() {
        assert!(self_contradiction("Use moment.js for dates but avoid moment").is_some());
        assert_eq!(self_contradiction("Use dayjs and avoid moment"), None);
        let kept = Preference {
            id: "p1".into(),
            agent_id: "a".into(),
            content: "Use lodash for collections".into(),
            category: Category::Tooling,
            rule: None,
            last_updated: 1,
            source: super::super::types::PreferenceSource::Manual,
            embedded: false,
        };
        let why = contradicts_kept("Deprecate lodash", Some("forbid-import lodash"), std::slice::from_ref(&kept), None);
        assert!(why.is_some_and(|w| w.contains("p1")));
        assert_eq!(
            contradicts_kept("Deprecate lodash", Some("forbid-import lodash"), std::slice::from_ref(&kept), Some("p1")),
            None
        );
        assert_eq!(contradicts_kept("Use vitest", None, std::slice::from_ref(&kept), None), None);
        // "X over Y", "X instead of Y", "never import Y" avoid Y.
        let dataclasses =
            Preference { id: "p2".into(), content: "prefer dataclasses over namedtuples".into(), ..kept.clone() };
        let why = contradicts_kept("prefer attrs over dataclasses", None, std::slice::from_ref(&dataclasses), None);
        assert!(why.is_some_and(|w| w.contains("p2") && w.contains("dataclasses")));
        assert!(contradicts_kept("use attrs instead of dataclasses", None, std::slice::from_ref(&dataclasses), None)
            .is_some());
        assert_eq!(
            contradicts_kept("prefer dataclasses over dicts", None, std::slice::from_ref(&dataclasses), None),
            None
        );
        let json = Preference { id: "p3".into(), content: "Use json from the standard library".into(), ..kept };
        assert!(contradicts_kept("From now on we never import json; we prefer orjson", None, &[json], None).is_some());
        assert_eq!(stances("loop over items with an iterator").1, Vec::<String>::new());
    }

    #[test]
    fn categories_and_preference_statements() {
        assert_eq!(classify("Never use any"), Category::Constraint);
        assert_eq!(classify("Write the test first, then the code"), Category::Workflow);
        assert_eq!(classify("We are switching to vitest"), Category::Tooling);
        assert_eq!(classify("Prefer short functions"), Category::Style);
    }

    /// tour16 F7: any statement holding "use" was filed as tooling, so "always use early returns
    /// in python code" and "use snake_case" were tooling. What the verb takes decides now.
    #[test]
    fn use_of_a_code_style_notion_is_style_and_use_of_a_tool_is_tooling() {
        for text in [
            "from now on always use early returns in python code",
            "use snake_case for variables",
            "Use camelCase in JavaScript",
            "use guard clauses instead of nested ifs",
            "always use type hints",
            "use f-strings for formatting",
            "use tabs",
            "Use 4 spaces for indentation",
            "using descriptive names for tests",
            "prefer snake_case and use trailing commas",
        ] {
            assert_eq!(classify(text), Category::Style, "{text}");
        }
        for text in [
            "use pytest",
            "use ruff to check the tabs",
            "always use pnpm",
            "we are using uv for python projects",
            "use pytest and early returns",
            "use black",
            "use the vitest runner for type hints",
            "switch to poetry",
            "use ruff; use snake_case",
        ] {
            assert_eq!(classify(text), Category::Tooling, "{text}");
        }
        assert!(carries_preference("We are switching to vitest for this project."));
        assert!(carries_preference("From now on, never use default exports"));
        assert!(!carries_preference("Should I always use vitest?"));
        assert!(!carries_preference("How are sessions expired"));
        assert!(!carries_preference("Why do we use moment? Explain the trade-offs."));
        assert!(!carries_preference("Show me where we use redis"));
        assert!(!carries_preference("We use redis. How do I invalidate the user cache"));
        assert!(carries_preference("Use tabs. We prefer them over spaces!"));
        assert!(carries_preference("Do not use lodash; we use the standard library"));
    }
}
