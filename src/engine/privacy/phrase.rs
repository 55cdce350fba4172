//! Passwords that are plain words, where only the name they are given to says they are secret:
//! a passphrase a sentence gives (`my passphrase is correct horse battery staple`), several bare
//! words after `:` on an unindented line (`passphrase: correct horse battery staple`), two plain
//! words as a config line's value (`password: correct horse`, `DB_PASSWORD=tiger lily`), one
//! quoted word without a digit (`password = "hunter"`), and one bare lower-case word in YAML
//! (`password: swordfish`). It also takes a quoted value of 5 characters or fewer given to a
//! password's, a secret's or a key's name, whatever its shape (`"secret": "abcde"`). Each shape is also how prose, a
//! changelog or code says something else (`the password is sent over TLS`, `password: fix reset
//! flow`, `password: "string"`), so these rules take only a password's name (`password`,
//! `passwd`, `passphrase`: a token or a secret is rarely a word) and words that read as neither
//! a description nor a commit's subject. It also holds what every passphrase rule asks of words
//! ([`passphrase_words`]) and the placeholders no rule masks ([`placeholder`]), which
//! `assign` uses.

/// Whether a secret's name (`db_password`, `"passphrase"`, `ADMIN_PASSWD`) names a password,
/// which people choose as words, not a token or a key.
pub fn password_name(name: &str) -> bool {
    let lower = name.trim_matches(['"', '\'']).to_ascii_lowercase();
    ["password", "passwd", "passphrase"].iter().any(|w| lower.ends_with(w))
}

/// Words that describe or instruct, beside the sentence words `passphrase_words` refuses:
/// prepositions, adverbs, quantities, a value's type or quality (`sent over TLS`, `never logged
/// anywhere`, `plain text string`, `case sensitive`).
const DESCRIBING: &str = concat!(
    "about above across after against along also always among another any anything anywhere around away back ",
    "before behind below between beyond both but case default different each either enough even ever every ",
    "everything except few first following here how into just last later less like long many more most much ",
    "near never next now off often once one only onto other otherwise out outside over own past per plus rather ",
    "really short since so some something sometimes soon still such sure than there though through too two ",
    "under until up upon usually very via what whatever where which while who why within without yet ",
    "string text value field type format plain encoded length characters chars strong weak empty blank ",
    "secure insecure valid hidden visible sensitive insensitive case-sensitive",
);

/// Verbs a commit's or a changelog's subject starts with (`password: fix reset flow`,
/// `passphrase: add strength meter`); `correct` is not one of them, being a passphrase's word.
const VERBS: &str = concat!(
    "add adds allow apply avoid bump change check choose clarify clean cleanup clear configure convert create ",
    "deprecate disable document drop enable enforce ensure expose extend fix fixes generate handle hide ",
    "implement improve include increase introduce keep leave limit log make mask merge migrate move normalize ",
    "prevent print prompt read refactor refresh reject remove rename replace require restore restrict return ",
    "reuse revert rework rotate run save send show simplify skip sort split store strip support switch test ",
    "trim tweak unify update upgrade use validate verify warn write",
);

/// Several plain words that read as a passphrase (`correct horse battery staple`), not as a
/// description (`sent over TLS`, `checked against known breaches`) or a commit's subject
/// (`fix reset flow for admins`): 3 to 8 words of letters and digits only, passing
/// [`passphrase_words`], none describing or instructing, no verb's or adverb's
/// ending (`-ed`, `-ing`, `-ly`) nor a noun's made from a verb (`-tion`) on a word of 5 letters
/// or more.
pub fn plain_passphrase(v: &str) -> bool {
    let words: Vec<&str> = v.split_whitespace().collect();
    (3..=8).contains(&words.len())
        && passphrase_words(v, false)
        && words.iter().all(|w| {
            let lower = w.to_ascii_lowercase();
            w.bytes().all(|b| b.is_ascii_alphanumeric())
                && !DESCRIBING.split(' ').any(|d| d == lower)
                && !VERBS.split(' ').any(|d| d == lower)
                && !derived(&lower)
        })
}

/// A word of 5 letters or more with a verb's, an adverb's or a verbal noun's ending
/// (`checked`, `running`, `correctly`, `rotation`): a description's, not a passphrase's.
fn derived(lower: &str) -> bool {
    lower.len() >= 5 && ["ed", "ing", "ly", "tion"].iter().any(|e| lower.ends_with(e))
}

/// The passphrase a sentence gives a password's name after `is` / `was`, starting at byte
/// `start` of `text` (`my passphrase is correct horse battery staple`): plain words running to
/// the end of the line or of the sentence (`.`, `,`, `;`, `!`, `)`), a
/// [`plain_passphrase`]. Its range, or none.
pub fn in_sentence(text: &str, name: &str, start: usize) -> Option<std::ops::Range<usize>> {
    if !password_name(name) {
        return None;
    }
    let line = &text[start..text[start..].find('\n').map_or(text.len(), |i| start + i)];
    let len = line.bytes().take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b' ' | b'\t')).count();
    let phrase = line[..len].trim_end();
    let tail = line[len..].trim_end();
    let ends = tail.is_empty()
        || (tail.starts_with(['.', ',', ';', '!', ')']) && !tail[1..].starts_with(char::is_alphanumeric));
    (ends && plain_passphrase(phrase)).then(|| start..start + phrase.len())
}

/// Whether a name is a token's, a secret's or a key's that a person may give words to
/// (`api_token`, `SECRET`, `client_secret`, `secret_key`, `apiKey`): not credentials (`fetch`'s
/// `credentials: "same origin"` is a mode), not a bare `token` nor one a parser, a lexer or a
/// flag names (`token`, `next_token`, `COMMENT_TOKEN`, `is_secret`, `show_secret`: a lexer's
/// kind, a switch).
pub fn credential_name(name: &str) -> bool {
    const NOT_QUALIFIERS: &str = concat!(
        "next prev previous cur curr current last first peek lookahead start end open close sep eof ",
        "expected actual input output this self tmp temp is has use show hide no with need needs ",
        "require raw new old comment string number ident identifier keyword operator punct space ",
        "whitespace newline indent dedent literal symbol char word text kind",
    );
    let name = name.trim_matches(['"', '\'']);
    let lower = name.to_ascii_lowercase();
    if lower.ends_with("credential") || lower.ends_with("credentials") || password_name(name) {
        return false;
    }
    let Some(word) = ["token", "secret", "key"].into_iter().find(|w| lower.ends_with(w)) else { return false };
    let prefix = lower[..lower.len() - word.len()].trim_end_matches(['_', '-', '.']);
    let qualifier = prefix.rsplit(['_', '-', '.']).next().unwrap_or("");
    !NOT_QUALIFIERS.split(' ').any(|w| w == qualifier) && (word != "token" || !prefix.is_empty())
}

/// Words a single quoted value of a password's name is when it is not a password: a type, a
/// validation rule, a mode, a hash's name, a strength (`password: "string"`,
/// `'password' => 'required'`, `password = "prompt"`, `password: "bcrypt"`).
const NOT_PASSWORDS: &str = concat!(
    "string number boolean object array integer secure securestring hidden masked plain plaintext ",
    "cleartext bcrypt scrypt argon argonid pbkdf hashed encrypted nullable confirmed present filled ",
    "sometimes default value field input prompt keyring keychain vault stdin random generate generated ",
    "unknown missing empty blank strong medium weak sensitive writeonly readonly include omit inherit ",
    "enabled disabled current sample dummy",
);

/// Words a short or lone value is when it is not a password: a language's types (`password:
/// str`, `"password": "string"`), a setting (`password: auto`), a form's or a strength meter's
/// words (`show_password: "Show"`, `password: "Try again"`), a changelog's nouns
/// (`password: typo`), an auth scheme or a backend (`password: ldap`; nsswitch.conf's sources:
/// `passwd: files systemd`) and a key's algorithm.
const NOT_SECRETS: &str = concat!(
    "str int bool bytes byte char text any void float double list dict map json uuid date time enum ",
    "bigint symbol never yes on off auto ask env file inline manual mandatory none ",
    "show hide try again wrong good bad fair great strength meter hint match mismatch ok okay done ",
    "save cancel submit error special character letter digit upper lower word words old current ",
    "typo typos docs tests misc chore wip hash ignore interactive environment variable anonymous basic ",
    "digest bearer oauth ldap local native internal external builtin system clear deny forbid permit ",
    "toggle reveal invisible dots bullets asterisks stars high low strict lenient minimal varchar ",
    "column blob binary agent help caps lock files compat systemd nis nisplus sss winbind ",
    // A key's algorithm or format (`signing_key = "HS256"`, `privateKey: "rsa"`).
    "rsa dsa ecdsa ec aes des hmac md5 sha sha1 hs256 hs384 hs512 rs256 rs384 rs512 es256 es384 ps256 ",
    "pem der jwk jks p12 pkcs",
);

/// Whether a lower-cased word describes, instructs, names a type, a rule or a mode, or is a
/// form's or a changelog's word ([`DESCRIBING`], [`VERBS`], [`NOT_PASSWORDS`], [`NOT_SECRETS`]).
fn listed(lower: &str) -> bool {
    [DESCRIBING, VERBS, NOT_PASSWORDS, NOT_SECRETS].iter().any(|list| list.split(' ').any(|w| w == lower))
}

/// A short or lone bare value that may be a password (`hunter2`, `swordfish`): a word of no
/// character of code or of a path, not a sentence's, a label's, a type's, a setting's or a
/// form's word (`auto`, `yes`, `optional`, `string`), not a placeholder.
pub fn plain_value(v: &str) -> bool {
    plain_word(v, true) && !listed(&v.to_ascii_lowercase()) && !placeholder(v)
}

/// After a quoted value, the rest of its line says the statement ends with it (`,`, `;`, `}`,
/// `)`, a comment): `password: "hidden" | "shown"` is a type.
fn statement_ends(tail: &str) -> bool {
    let tail = tail.trim();
    tail.is_empty() || tail.starts_with([',', ';', '}', ')', '#']) || tail.starts_with("//") || tail.starts_with("--")
}

/// Two plain words as a password's whole value (`password: correct horse`,
/// `passphrase = "purple monkey"`, `DB_PASSWORD=tiger lily`), or two lower-case words as a
/// token's, a secret's or a key's (`api_token = "correct horse"`, `SECRET=blue velvet`; see
/// [`credential_name`]: `token = Bearer abc` and a form's `token: "Network error"` are messages,
/// and a message or a label starts with a capital), 3 to 24 ASCII letters each and 8
/// or more in all, neither a word of a sentence, a label, a description, a verb, a type or a
/// form's word nor ending as a derived word (`plain text`, `Kata sandi`, `fix typo`, `Try
/// again`, `Special character`, `improve validation`).
pub fn two_words(v: &str, name: &str) -> bool {
    let words: Vec<&str> = v.split_whitespace().collect();
    let lower = words.iter().all(|w| w.bytes().all(|b| b.is_ascii_lowercase()));
    (password_name(name) || (credential_name(name) && lower))
        && words.len() == 2
        && words.iter().map(|w| w.len()).sum::<usize>() >= 8
        && words.iter().all(|w| {
            let lower = w.to_ascii_lowercase();
            (3..=24).contains(&w.len())
                && w.bytes().all(|b| b.is_ascii_alphabetic())
                && plain_word(w, false)
                && !listed(&lower)
                && !derived(&lower)
        })
        && !placeholder(v)
}

/// A quoted value of 1 to 5 characters given to a password's, a secret's or a key's name
/// (`password = "hunt2"`, `"secret": "abcde"`, `SECRET_KEY = 'dev'`): masked whatever its
/// shape, the statement ending with it, unless it is a placeholder (`""`, `"xxx"`, `"***"`,
/// `"N/A"`, `"TODO"`, `"EMPTY"`), a type, a mode or a form's word (`"str"`, `"Show"`, `"Weak"`),
/// a label (`"Senha"`), a command line's flag (`'password': '-p'`), code's (`"min:8"`, `"a|b"`,
/// `"(*)"`) or an HTML `accesskey="P"` (a keyboard shortcut). A token's name is left out: a
/// lexer's `token = "if"` is a kind, and a real token is longer (the other rules take it); so
/// are credentials (`credentials: "omit"` is `fetch`'s mode). `tail` is the line after the
/// closing quote.
pub fn short_quoted(v: &str, name: &str, tail: &str) -> bool {
    let name = name.trim_matches(['"', '\'']).to_ascii_lowercase();
    let named = !["token", "credential", "credentials", "pass", "pwd"].iter().any(|w| name.ends_with(w));
    let lower = v.to_ascii_lowercase();
    // The HTML attribute `accesskey="P"` is a keyboard shortcut.
    let shortcut = name.ends_with("accesskey") && v.len() == 1;
    named
        && !shortcut
        && statement_ends(tail)
        && (1..=5).contains(&v.len())
        && v.bytes().all(|b| b.is_ascii_graphic())
        && v.bytes().any(|b| b.is_ascii_alphanumeric())
        && !v.contains([':', '*', '&', '+'])
        && !v.starts_with('-')
        && plain_word(v, true)
        && !listed(&lower)
        && !placeholder(v)
}

/// One bare word given to a password's name as a YAML value (`password: swordfish`,
/// `  db_password: letmein`, `POSTGRES_PASSWORD: postgres`, `password: Swordfish`): 4 to 64
/// letters, lower-case or capitalised, not a type, a mode, a rule, a label, a changelog's word
/// or a derived word (`password: string`, `password: required`, `password: cleanup`,
/// `password: hashed`), nor a word naming a secret itself (`password: mypassword`,
/// `password: Password`). A capitalised word is also not a type's name (`Buffer`, `Optional`,
/// `Nullable`, `Hashable`: a word ending `-able` or `-ible`); `CamelCase` is always a type's
/// (`password: SecretStr`). Where the line sits is the caller's to judge (a JavaScript object's
/// last field, `password: digest`, reads the same; a capitalised word needs YAML around it).
pub fn yaml_word(v: &str, name: &str) -> bool {
    // Python's typing names too: typeshed's stubs write `PR_EMS_AB_USER_PASSWORD: Incomplete`.
    const TYPES: &str = concat!(
        "buffer option maybe model schema record entity struct class unicode mixed secure protected ",
        "private public opaque sealed final readonly nullable incomplete classvar literal union ",
        "sequence mapping tuple frozenset annotated noreturn typealias self type callable generic ",
        "protocol typeddict",
    );
    let lower = v.to_ascii_lowercase();
    let capital = v.starts_with(|c: char| c.is_ascii_uppercase());
    password_name(name)
        && (4..=64).contains(&v.len())
        && v.bytes().all(|b| b.is_ascii_alphabetic())
        && v.bytes().skip(1).all(|b| b.is_ascii_lowercase())
        && plain_word(v, false)
        && !listed(&lower)
        && !derived(&lower)
        && !(capital && (TYPES.split(' ').any(|w| w == lower) || lower.ends_with("able") || lower.ends_with("ible")))
        && !["pass", "pwd", "secret", "token", "cred"].iter().any(|w| lower.contains(w))
        && !placeholder(v)
}

/// One quoted word without a digit given to a password's name (`password = "hunter"`,
/// `"db_password": "letmein"`): 6 to 64 letters, lower-case or capitalised (`CamelCase` is a
/// type's or a kind's name: `token = "StringLiteral"`), not a type, a rule or a mode
/// ([`NOT_PASSWORDS`]), a label (`Passwort`) or a placeholder; and the statement ends with the
/// value (`password: "hidden" | "shown"` is a type). `tail` is the line after the closing quote.
pub fn quoted_word(v: &str, name: &str, tail: &str) -> bool {
    let ends = statement_ends(tail);
    let letters = (6..=64).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_alphabetic());
    // Letters only, so byte 1 is a character's start.
    let cased = letters && v[1..].bytes().all(|b| b.is_ascii_lowercase());
    let lower = v.to_ascii_lowercase();
    ends && cased
        && password_name(name)
        && !NOT_PASSWORDS.split(' ').any(|w| w == lower)
        && plain_word(v, true)
        && !placeholder(v)
}

/// Several words that read as a passphrase (`Correct Horse Battery`, `hunter2 rules`), not as a
/// message, a label or code: 2 to 8 words (3 or more, or 2 with a digit), 12 characters or more,
/// no character of code or of a path (`(`, `=`, `.`, `/`, `$`, ...; bare, no `_` either), no word
/// of a sentence or of code (`the`, `your`, `must`, `at`, `if`, `or`, `none`), none naming a
/// secret or a login in some language (`Mot de passe`, `Access token`, `Contraseña`), not
/// ending as a prompt (`?`, `:`), and not a placeholder.
pub fn passphrase_words(v: &str, quoted: bool) -> bool {
    let words: Vec<&str> = v.split_whitespace().collect();
    let digit = v.bytes().any(|b| b.is_ascii_digit());
    let shape = (2..=8).contains(&words.len())
        && (words.len() >= 3 || digit)
        && v.len() >= 12
        && v.bytes().any(|b| b.is_ascii_alphabetic())
        && !v.ends_with(['?', ':', '!'])
        && !v.ends_with('\u{2026}');
    shape && words.iter().all(|w| plain_word(w, quoted)) && !placeholder(v)
}

/// One word of a passphrase ([`passphrase_words`]): no character of code or of a path (bare, no
/// `_`, quote, `:`, `&`, `*` or `+` either), not a word of a sentence or of code, not naming a
/// secret or a login in some language (`Passwort`, `Kennwort`, `login`).
fn plain_word(w: &str, quoted: bool) -> bool {
    const CODE_CHARS: &[char] =
        &['(', ')', '[', ']', '{', '}', '<', '>', '=', ';', ',', '\\', '/', '.', '$', '`', '"', '|', '%'];
    const PROSE: &str = concat!(
        "a an the to of in on at for with by from as is are was were be been do does did not no ",
        "and or if else then you your we our my it its this that these those must should can could ",
        "will would may please than same see set stored min max minimum maximum least none null ",
        "nil true false undefined lambda await yield new typeof return unless when",
    );
    const LABELS: &str = concat!(
        "pass pwd secret token key cred kennwort contrase senha parol wachtwoord hasl jeton clave ",
        "login sign user account email e-mail enter confirm invalid required optional forgot reset ",
        "sandi laluan salasana heslo geslo lozinka adgangskode wagwoord",
    );
    let lower = w.to_ascii_lowercase();
    w.bytes().any(|b| b.is_ascii_alphanumeric())
        && !w.contains(CODE_CHARS)
        && (quoted || !w.contains(['_', '\'', ':', '&', '*', '+']))
        && !PROSE.split(' ').any(|p| p == lower)
        && !LABELS.split(' ').any(|l| lower.starts_with(l))
}

/// Documentation values and templates, not secrets.
pub fn placeholder(v: &str) -> bool {
    let lower = v.to_ascii_lowercase();
    const MARKS: &[&str] = &[
        "xxx",
        "***",
        "...",
        "your",
        "changeme",
        "change_me",
        "change-me",
        "placeholder",
        "redacted",
        "replace_me",
        "replaceme",
        "${",
        "{{",
        "%(",
        "<",
        ">",
    ];
    const WORDS: &[&str] = &[
        "password",
        "passwd",
        "secret",
        "token",
        "none",
        "null",
        "nil",
        "undefined",
        "true",
        "false",
        "required",
        "empty",
        "unset",
        "dummy",
        "todo",
        "tbd",
        "fixme",
        "n/a",
        "na",
        "-",
    ];
    MARKS.iter().any(|m| lower.contains(m))
        || WORDS.contains(&lower.as_str())
        || lower.starts_with("example")
        || (v.starts_with('{') && v.ends_with('}'))
}

#[cfg(test)]
mod tests {
    use super::super::assign::values;

    fn masked(text: &str) -> Vec<&str> {
        values(text).into_iter().map(|r| &text[r]).collect()
    }

    /// A passphrase in a sentence (`my passphrase is correct horse battery staple`) was passed
    /// over: after `is`, one run of letters with digits was taken. Sentences that say what a
    /// password is like, or that tokens and secrets are something, keep their words.
    #[test]
    fn a_passphrase_a_sentence_gives_is_found() {
        for (text, want) in [
            ("my passphrase is correct horse battery staple", "correct horse battery staple"),
            ("The wifi password is Correct Horse Battery Staple.", "Correct Horse Battery Staple"),
            ("the password for the admin account is purple monkey dishwasher, keep it", "purple monkey dishwasher"),
            ("# db passphrase was tangerine lantern orbit", "tangerine lantern orbit"),
        ] {
            assert_eq!(masked(text), [want], "{text}");
        }
        for text in [
            "the token is valid for 30 days",
            "the password is sent over TLS",
            "The password is checked against known breaches",
            "the passphrase is never logged or stored",
            "The password is case sensitive",
            "the password is at least twelve characters long",
            "the password is your login email",
            "my password is too weak",
            "the secret is shared between services",
            "the password is correct horse battery staple and the pin is blue",
            "the password is first name plus birth year",
            "the password is hashed with bcrypt cost twelve",
            "the passphrase is correct horse battery staple-ish",
            "if password is not None and user is admin:",
        ] {
            assert!(values(text).is_empty(), "{text}: {:?}", masked(text));
        }
    }

    /// Several bare words after `:` on an unindented line were passed over, as a changelog's
    /// subject reads the same. A password's name with plain words is a passphrase; a subject
    /// starts with a verb or says what changed.
    #[test]
    fn bare_words_after_a_colon_on_an_unindented_line_are_a_passphrase() {
        for (text, want) in [
            ("passphrase: correct horse battery staple", "correct horse battery staple"),
            ("password: correct horse battery", "correct horse battery"),
            ("db_password: purple monkey dishwasher  # rotate yearly", "purple monkey dishwasher"),
        ] {
            assert_eq!(masked(text), [want], "{text}");
        }
        for text in [
            "token: refresh before expiry",
            "secret: rotation support landed",
            "password: fix reset flow for admins",
            "password: add strength meter",
            "password: Handle expiry correctly",
            "password: plain text string",
            "Password: Minimum twelve characters recommended",
            "password: clarify error message",
            "passphrase: support longer phrases",
            "Password: Provided by ops team",
            "password:",
            "password: <redacted>",
        ] {
            assert!(values(text).is_empty(), "{text}: {:?}", masked(text));
        }
    }

    /// A quoted word without a digit (`password = "hunter"`) was passed over: `token = "Identifier"`
    /// is a lexer's. A password's name with a lower-case or capitalised word is a password; a type,
    /// a rule, a mode, a label or a kind's name is not.
    #[test]
    fn a_quoted_word_given_to_a_password_is_found() {
        for (text, want) in [
            ("password = \"hunter\"", "hunter"),
            ("  \"db_password\": \"letmein\",", "letmein"),
            ("'password' => 'Dragonfly',", "Dragonfly"),
            ("ADMIN_PASSWD: 'sunshine' # default", "sunshine"),
            // 5 letters: a short quoted value is a password too (`short_quoted`).
            ("password = \"admin\"", "admin"),
        ] {
            assert_eq!(masked(text), [want], "{text}");
        }
        for text in [
            "token = \"Identifier\"",
            "secret = \"production\"",
            "password = \"StringLiteral\"",
            "password: \"string\"",
            "'password' => 'required',",
            "password = \"prompt\"",
            "password: \"Passwort\"",
            "password: \"hidden\" | \"shown\"",
            "password = \"password\"",
            "password = \"changeme\"",
            "if password == \"hunter\":",
            "password: \"\"",
            "password = \"Contraseña\"",
        ] {
            assert!(values(text).is_empty(), "{text}: {:?}", masked(text));
        }
    }

    /// Two plain words as a password's value (`password: correct horse`) were passed over: a
    /// passphrase needed 3 words, or 2 with a digit. Two words given to a password's name are
    /// one now; a message, a label, a type or a changelog's subject of two words is not.
    #[test]
    fn two_word_passphrases_are_found() {
        for (text, want) in [
            ("password: correct horse", "correct horse"),
            ("passphrase = \"purple monkey\"", "purple monkey"),
            ("DB_PASSWORD=tiger lily", "tiger lily"),
            ("  password: correct horse", "correct horse"),
            ("password = tiger lily", "tiger lily"),
            ("export DB_PASSWORD=\"tiger lily\"", "tiger lily"),
            ("  \"password\": \"purple monkey\",", "purple monkey"),
            ("    'password' => 'Autumn Lantern',", "Autumn Lantern"),
            ("db_password: copper kettle  # rotated in March", "copper kettle"),
            // Two lower-case words given to a token's, a secret's or a key's name.
            ("api_token = \"correct horse\"", "correct horse"),
            ("SECRET=blue velvet", "blue velvet"),
            ("  client_secret: velvet meadow", "velvet meadow"),
            ("export API_TOKEN=\"copper kettle\"", "copper kettle"),
            ("  \"secret_key\": \"purple monkey\",", "purple monkey"),
            ("refreshToken: \"silver falcon\"", "silver falcon"),
        ] {
            assert_eq!(masked(text), [want], "{text}");
        }
        for text in [
            "password: not required",
            "password: plain text",
            "password: user defined",
            "password: fix typo",
            "password: improve validation",
            "password: Access denied",
            "password: environment variable",
            "  password: \"Kata sandi\"",
            "  password: \"Try again\"",
            "  password: \"Special character\"",
            "  new_password: \"New password\"",
            "PASSWORD=your password",
            "password = two words",
            "token = Bearer abc",
            "secret: see vault",
            "token: refresh tokens",
            "password = new String",
            "conn = connect(password=\"purple monkey\")",
            // A token's or a secret's words: a lexer's kind, a label, a message, a subject.
            "token_type = \"bearer token\"",
            "token = \"line comment\"",
            "next_token = \"block comment\"",
            "COMMENT_TOKEN = \"line comment\"",
            "TOKEN=blue velvet",
            "  token: \"Network failure\"",
            "api_token = \"Correct Horse\"",
            "  secret: \"Client secret\"",
            "secret: purple monkey",
            "token: expiry bugfix",
            "  credentials: \"same origin\"",
            "  is_secret: \"very much\"",
            "  secret_key: from vault",
        ] {
            assert!(values(text).is_empty(), "{text}: {:?}", masked(text));
        }
    }

    /// A quoted value of 5 characters or fewer (`password = "hunt2"`, `"secret": "abcde"`) was
    /// passed over: quoted values needed 6. Any length is masked now, for a password's, a
    /// secret's or a key's name; placeholders, types, modes, labels, flags, algorithms, a
    /// lexer's tokens and an HTML shortcut are not.
    #[test]
    fn short_quoted_values_are_found() {
        for (text, want) in [
            ("password = \"hunt2\"", "hunt2"),
            ("\"secret\": \"abcde\"", "abcde"),
            ("client_secret: \"q9x\"", "q9x"),
            ("PASSWORD = 'admin'", "admin"),
            ("  \"db_password\": \"root\",", "root"),
            ("SECRET_KEY = 'dev'", "dev"),
            ("const API_KEY = \"k3y9z\";", "k3y9z"),
            ("conn = psycopg2.connect(host=\"db\", password=\"tiger\")", "tiger"),
        ] {
            assert_eq!(masked(text), [want], "{text}");
        }
        for text in [
            "password = \"\"",
            "password = \"xxx\"",
            "password = \"****\"",
            "password = \"N/A\"",
            "password = \"TODO\"",
            "api_key=\"EMPTY\",",
            "schema = {\"username\": \"str\", \"password\": \"str\"}",
            "  password: \"Weak\"",
            "  show_password: \"Show\"",
            "  password: \"Senha\"",
            "'password' => 'min:8',",
            "        'password': '-p',",
            "signing_key = \"HS256\"",
            "  privateKey: \"rsa\"",
            "            token = \"if\"",
            "    token = \"EOF\"",
            "  credentials: \"omit\",",
            "<a href=\"#\" accesskey=\"s\">Search</a>",
            "password: \"a\" | \"b\"",
        ] {
            assert!(values(text).is_empty(), "{text}: {:?}", masked(text));
        }
    }

    /// One bare lower-case word as a password's YAML value (`password: swordfish`) was passed
    /// over: a bare value needed a digit. It is masked now, unless it is a type, a mode, a
    /// rule, a derived or a changelog's word, names a secret itself, or sits in an object
    /// literal of code (`layout::in_code_literal`). A capitalised word (`password: Swordfish`)
    /// is masked too where YAML is around it (`layout::yaml_around`).
    #[test]
    fn a_bare_word_in_yaml_is_found() {
        for (text, want) in [
            ("password: swordfish", "swordfish"),
            ("  password: swordfish", "swordfish"),
            ("- password: sunshine", "sunshine"),
            ("      POSTGRES_PASSWORD: postgres", "postgres"),
            ("  passwd: hunter  # default", "hunter"),
            ("database:\n  user: app\n  password: guest\n  host: db.internal", "guest"),
            // Capitalised, with YAML around it (or nothing, unindented).
            ("password: Swordfish", "Swordfish"),
            ("- password: Sunshine", "Sunshine"),
            ("database:\n  user: app\n  password: Swordfish", "Swordfish"),
            ("db:\n  port: 5432\n  password: Letmein", "Letmein"),
            // YAML's flow mapping and a comment ending with `,` are not code's object literal.
            ("env: {\n  user: app,\n  password: swordfish\n}", "swordfish"),
            ("# users, admins,\npassword: swordfish", "swordfish"),
            ("servers:\n  - { name: a, port: 80 }\npassword: swordfish", "swordfish"),
        ] {
            assert_eq!(masked(text), [want], "{text}");
        }
        for text in [
            "password: str",
            "    password: bytes",
            "password: string",
            "password: required",
            "password: hidden",
            "password: mypassword",
            "password: cleanup",
            "- password: refactoring",
            "password: ldap",
            "passwd:         files",
            "passwd:         files systemd",
            "  encrypted_password: digest",
            "Password: Swordfish",
            "password: swordfish, token: abc",
            "token: swordfish",
            "const user = await User.create({\n  email,\n  password: digest\n});",
            "const creds = {\n  username: name,\n  password: pwd\n};",
            "login(\n  password: swordfish\n)",
            "interface User {\n  email: string\n  password: string\n}",
            // Capitalised: a typed field, a type's name, a document's field.
            "    password: Swordfish",
            "class Settings(BaseModel):\n    user: str\n    password: Credential",
            "class Login:\n    username: str\n    password: Masked",
            "interface Login {\n  user: User\n  password: Hashed\n}",
            "try:\n    password: Swordfish",
            "password: Buffer",
            "password: Configurable",
            "password: Optional",
            "password: Encrypted",
            "PR_EMS_AB_USER_PASSWORD: Incomplete",
            // Code's object literals, opened above or closed below.
            "const config = {\n  db: {\n    user: app,\n    password: swordfish\n  }\n};",
            "module.exports = {\n  user: name,\n  password: swordfish\n}",
            "  password: digest\n});",
            "export default {\n  name: 'app',\n  // the db,\n  password: swordfish\n}",
        ] {
            assert!(values(text).is_empty(), "{text}: {:?}", masked(text));
        }
    }
}
