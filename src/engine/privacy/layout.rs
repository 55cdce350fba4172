//! Where a `name: word` line sits: in YAML, or inside an object literal of code. The line alone
//! cannot tell: `  password: digest` is a YAML value and the last field of
//! `User.create({ email, password: digest })`, where `digest` is a variable. The lines around
//! it can: the bracket that encloses it, and the lines beside it. [`assign`](super::assign)
//! asks this before it masks one bare word given to a password's name.

/// Whether the line spanning `line_start..line_end` of `text` is a field of an object literal,
/// a call or a list of code: the nearest bracket left open above it (comments skipped) is
/// opened by code (`const creds = {`, `User.create({`, `login(`, a `{` alone), or, none open
/// above, a bracket closes below it (a literal cut at its top: `  email,⏎  password: digest⏎})`)
/// or the line above ends a field (`email,`). A bracket opened by a YAML key (`env: {`,
/// `- {`, `hosts: [`) on an unindented line is YAML's flow collection, and so is one nested in
/// it; a YAML comment ending with `,` above is not a field.
pub fn in_code_literal(text: &str, line_start: usize, line_end: usize) -> bool {
    let above = &text[..line_start];
    match open_above(above) {
        Some(opener) if opens(opener) => !yaml_flow(above, opener),
        _ => {
            let below = text.get(line_end..).unwrap_or("");
            let prev = code_lines(above).next_back().unwrap_or("");
            closes_below(below) || prev.trim_end().ends_with(',')
        }
    }
}

/// Whether a capitalised word (`password: Swordfish`) on the line starting at `line_start` sits
/// in YAML rather than among a class's or an interface's typed fields (`    password: Secret`,
/// `  email: EmailStr`): the nearest line above (comments skipped) is a YAML key of a block
/// (`database:`, not `try:` or `class Settings:`) or a `key: value` line whose value is not a
/// type's (`user: app`, `port: 5432`; not `user: str`, `user: User`, `id: int = 0`, `name:
/// string;`); with nothing above, the line must not be indented.
pub fn yaml_around(text: &str, line_start: usize) -> bool {
    let Some(prev) = code_lines(&text[..line_start]).next_back() else {
        return !text[line_start..].starts_with([' ', '\t']);
    };
    let item = prev.trim().trim_start_matches("- ").trim_start();
    let Some((key, value)) = item.split_once(':') else { return false };
    let key_ok = !key.is_empty()
        && key.trim_matches(['"', '\'']).bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        && !["try", "else", "finally", "default", "do"].contains(&key);
    let value = value.split(" #").next().unwrap_or(value).trim();
    key_ok && (value.is_empty() || plain_yaml_value(value))
}

/// A YAML scalar, not a type: `app`, `5432`, `db.internal`, `"x"`, `true`; not `str`, `User`,
/// `Optional[str]`, `int = 0`, `string;`, `string | null`.
fn plain_yaml_value(v: &str) -> bool {
    const TYPES: &[&str] = &[
        "str", "string", "int", "integer", "bool", "boolean", "float", "double", "bytes", "number", "any", "char",
        "object", "list", "dict",
    ];
    let bare = v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    let type_name =
        bare && v.starts_with(|c: char| c.is_ascii_uppercase()) && v.bytes().any(|b| b.is_ascii_lowercase());
    !v.contains(['=', '[', '(', '|', '?', '<', ';', '{'])
        && !v.ends_with(',')
        && !TYPES.contains(&v.to_ascii_lowercase().as_str())
        && !type_name
}

/// The lines of `text`, blank lines and comment lines (`#`, `//`, `*`) left out.
fn code_lines(text: &str) -> impl DoubleEndedIterator<Item = &str> {
    text.lines().filter(|l| {
        let t = l.trim();
        !t.is_empty() && !t.starts_with(['#', '*']) && !t.starts_with("//") && !t.starts_with("/*")
    })
}

/// Brackets a line opens less those it closes (`{`, `(`, `[` against `}`, `)`, `]`).
fn depth(line: &str) -> i64 {
    line.bytes().fold(0, |d, b| match b {
        b'{' | b'(' | b'[' => d + 1,
        b'}' | b')' | b']' => d - 1,
        _ => d,
    })
}

/// How many lines above or below a line are read for its brackets: an object literal is
/// shorter, and a file of many `password: word` lines must not cost their square.
const REACH: usize = 200;

/// The nearest line above (comments skipped) that opens a bracket still open at the end of
/// `above`, if any.
fn open_above(above: &str) -> Option<&str> {
    let mut d = 0;
    code_lines(above).rev().take(REACH).find(|l| {
        d += depth(l);
        d > 0
    })
}

/// Whether a line opens a literal, a call or a list as code writes one: it ends with the
/// bracket (`const creds = {`, `User.create({`, `login(`). A bracket left open in the middle
/// of a line (`note: runs nightly (UTC`) is prose's, and says nothing.
fn opens(line: &str) -> bool {
    line.trim_end().ends_with(['{', '(', '['])
}

/// Whether `below` closes a bracket it did not open (comments skipped), on a line that starts
/// with the closing bracket (`});`, `}`, `)`), as code closes a literal.
fn closes_below(below: &str) -> bool {
    let mut d = 0;
    code_lines(below).take(REACH).any(|l| {
        d += depth(l);
        d < 0 && l.trim_start().starts_with(['}', ')', ']'])
    })
}

/// Whether the bracket `opener` (a line of `above`) opens is YAML's flow collection: the line is
/// a YAML key or a list item that ends with `{` or `[` (`env: {`, `- {`, `hosts: [`), and it is
/// unindented or nested in another such collection.
fn yaml_flow<'t>(above: &'t str, opener: &'t str) -> bool {
    let t = opener.trim_end();
    if !t.ends_with(['{', '[']) {
        return false;
    }
    let head = t[..t.len() - 1].trim_end();
    let item = head.trim_start().trim_start_matches('-').trim_start();
    let key_ok = item.is_empty() && head.trim_start().starts_with('-')
        || item.strip_suffix(':').is_some_and(|k| {
            !k.is_empty()
                && k.trim_matches(['"', '\''])
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        });
    if !key_ok {
        return false;
    }
    if !opener.starts_with([' ', '\t']) {
        return true;
    }
    // Nested: the collection that holds it must be YAML's too (a JavaScript object's `db: {`
    // sits in `const config = {`). Offsets: `opener` is a slice of `above`.
    let start = opener.as_ptr() as usize - above.as_ptr() as usize;
    let outer = &above[..start];
    open_above(outer).is_some_and(|o| yaml_flow(outer, o))
}

/// Whether the field whose name starts at `name_at` and whose value ends at `value_end` (byte
/// offsets into `line`, one whole line) sits in a YAML flow mapping written on that one line:
/// `creds: {user: bob, password: hunter2}`, `- {user: bob, password: hunter2}`, `{password:
/// hunter2}`. The mapping opens after a YAML key or list item (not after code's `= {`,
/// `login({` or `const x = {`), closes at the line's end (a comment after it allowed; a `},`
/// is a field of a code literal), the fields before the name are the mapping's and the value
/// ends a field (`,` or `}` after it). The caller still asks [`in_code_literal`]: a
/// JavaScript object can nest one such line as its last field.
pub fn yaml_flow_field(line: &str, name_at: usize, value_end: usize) -> bool {
    let body = line.split(" #").next().unwrap_or(line).trim_end();
    let Some(open) = enclosing_brace(&line[..name_at]) else { return false };
    let fields = line[open + 1..name_at].trim_end();
    let fields_ok = (fields.is_empty() || fields.ends_with(',')) && !fields.contains(CODE_MARKS);
    let ends_field = line[value_end..].trim_start().starts_with([',', '}']);
    flow_head(&line[..open])
        && fields_ok
        && ends_field
        && value_end <= body.len()
        && body.ends_with('}')
        && depth(body) == 0
}

/// Characters no YAML flow mapping's fields hold on a line: a call's or an index's brackets,
/// an assignment, a statement's end, a template.
const CODE_MARKS: [char; 6] = ['(', ')', '=', ';', '[', '`'];

/// The offset of the `{` that opens the mapping the end of `before` is in (nested mappings
/// closed before it skipped: `{primary: {user: a}, password: ...`).
fn enclosing_brace(before: &str) -> Option<usize> {
    let mut d = 0i64;
    for (i, b) in before.bytes().enumerate().rev() {
        match b {
            b'}' => d += 1,
            b'{' if d == 0 => return Some(i),
            b'{' => d -= 1,
            _ => {}
        }
    }
    None
}

/// Whether what opens a one-line flow mapping is YAML's: a key or a list item, or nothing
/// (`creds: {`, `- {`, `{`), or such a mapping's field that is a mapping in turn, at any depth
/// (`db: {primary: {`, `db: {pool: 5, primary: {`); not code's `x = {` or `login({`.
fn flow_head(head: &str) -> bool {
    let mut parts = head.split('{');
    let first = parts.next().unwrap_or("").trim();
    let first = first.strip_prefix('-').map_or(first, str::trim_start);
    let key = |k: &str| {
        !k.is_empty()
            && k.trim_matches(['"', '\'']).bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    };
    let first_ok = first.is_empty() || first.strip_suffix(':').is_some_and(key);
    first_ok
        && parts.all(|p| {
            let p = p.trim();
            let last = p.rsplit([',', '}']).next().unwrap_or(p).trim();
            !p.contains(CODE_MARKS) && last.strip_suffix(':').is_some_and(key)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn literal(text: &str) -> bool {
        let start = text.find("password").expect("a password line");
        let start = text[..start].rfind('\n').map_or(0, |i| i + 1);
        let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
        in_code_literal(text, start, end)
    }

    #[test]
    fn object_literals_of_code_are_told_from_yaml() {
        for text in [
            "const user = await User.create({\n  email,\n  password: digest\n});",
            "const creds = {\n  username: name,\n  password: pwd\n};",
            "login(\n  password: swordfish\n)",
            "  email,\n  password: digest",
            "  password: digest\n});",
            "const config = {\n  db: {\n    user: app,\n    password: swordfish\n  }\n};",
            "{\n  password: swordfish\n}",
        ] {
            assert!(literal(text), "{text}");
        }
        for text in [
            "password: swordfish",
            "logging: { level: info }\npassword: swordfish",
            "# web, api,\npassword: swordfish",
            "resources: { cpu: 1, memory: 512Mi }\npassword: swordfish\nopts: { a: b }",
            "env: {\n  user: app,\n  password: swordfish\n}",
            "db: {\n  opts: {\n    user: app,\n    password: swordfish\n  }\n}",
            "args: [\n  \"--verbose\",\n]\npassword: swordfish",
            "note: runs nightly (UTC\npassword: swordfish",
            "password: swordfish\nnote: see step 2)",
        ] {
            assert!(!literal(text), "{text}");
        }
    }

    #[test]
    fn a_field_of_a_one_line_yaml_flow_mapping_is_told_from_code() {
        let field = |line: &str| {
            let at = line.find("password").expect("a password field");
            let end = at + line[at..].find([',', '}']).unwrap_or(line.len() - at);
            let end = line[..end].trim_end().len();
            yaml_flow_field(line, at, end)
        };
        for line in [
            "creds: {user: bob, password: hunter2}",
            "- {user: bob, password: hunter2}",
            "{password: hunter2}",
            "  db: { user: app, password: swordfish }  # staging",
            "\"creds\": {user: bob, password: hunter2, port: 5432}",
        ] {
            assert!(field(line), "{line}");
        }
        for line in [
            "const creds = {user: bob, password: pw2};",
            "login({user: bob, password: hunter2})",
            "  creds: {user: bob, password: hunter2},",
            "x = {password: hunter2}",
            "creds: {user: f(x), password: hunter2}",
            "creds: {user: bob, password: hunter2} = defaults",
            "creds: {user: bob, password: hunter2",
        ] {
            assert!(!field(line), "{line}");
        }
    }
}
