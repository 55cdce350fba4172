//! The command line of a `[tests] command` (run by `sh -c`): the files to run are appended
//! after it, or put where it says `{targets}` (`make test FILES="{targets}"`, `pytest {targets}
//! -q`), each quoted for the shell as the text around the placeholder needs, so a file name
//! holding spaces, quotes or `$` is passed whole and never run as shell code.

/// Where a `[tests] command` wants the files it runs.
pub(super) const PLACEHOLDER: &str = "{targets}";

/// `sh -c` over `configured`: with [`PLACEHOLDER`], the targets replace it (nothing when there
/// are none); without, they are appended as `"$@"` (the shell's own positional arguments).
pub(super) fn command(configured: &str, targets: &[String]) -> Vec<String> {
    let s = |x: &str| x.to_string();
    if !configured.contains(PLACEHOLDER) {
        let mut cmd = vec![s("sh"), s("-c"), format!("{configured} \"$@\""), s("docdex-run-tests")];
        cmd.extend(targets.iter().cloned());
        return cmd;
    }
    vec![s("sh"), s("-c"), substitute(configured, targets), s("docdex-run-tests")]
}

/// The quoting context the shell is in at a point of a command line.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    Bare,
    Single,
    Double,
}

/// `configured` with each [`PLACEHOLDER`] replaced by the targets as one list of shell words
/// (`'a b.py' c.py`), written so that the shell reads exactly that list's text in the
/// placeholder's context: as words where it stands bare, as the list's text inside `"..."` or
/// `'...'` (for a command that reads it again: make's recipe, a nested `sh -c`).
fn substitute(configured: &str, targets: &[String]) -> String {
    let list: Vec<String> = targets.iter().map(|t| word(t)).collect();
    let list = list.join(" ");
    let mut out = String::with_capacity(configured.len() + list.len());
    let mut ctx = Context::Bare;
    let mut rest = configured;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with(PLACEHOLDER) {
            out.push_str(&in_context(&list, ctx));
            rest = &rest[PLACEHOLDER.len()..];
            continue;
        }
        let mut len = c.len_utf8();
        match (ctx, c) {
            (Context::Bare, '\'') => ctx = Context::Single,
            (Context::Single, '\'') => ctx = Context::Bare,
            (Context::Bare, '"') => ctx = Context::Double,
            (Context::Double, '"') => ctx = Context::Bare,
            // An escaped character is taken as it is, the placeholder's `{` too.
            (Context::Bare | Context::Double, '\\') => len += rest[1..].chars().next().map_or(0, char::len_utf8),
            _ => {}
        }
        out.push_str(&rest[..len]);
        rest = &rest[len..];
    }
    out
}

/// One target as a shell word: as it is when it holds only characters the shell leaves
/// alone, else single-quoted (a `'` inside written `'\''`).
pub(super) fn word(target: &str) -> String {
    let plain = !target.is_empty()
        && target
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | '+' | ',' | ':' | '@' | '%'));
    if plain {
        target.to_string()
    } else {
        format!("'{}'", target.replace('\'', "'\\''"))
    }
}

/// `list` written so that the shell, in `ctx`, reads exactly its text.
fn in_context(list: &str, ctx: Context) -> String {
    match ctx {
        Context::Bare => list.to_string(),
        // Inside '...' nothing is special but the closing quote.
        Context::Single => list.replace('\'', "'\\''"),
        Context::Double => {
            let mut out = String::with_capacity(list.len());
            for c in list.chars() {
                if matches!(c, '"' | '$' | '`' | '\\') {
                    out.push('\\');
                }
                out.push(c);
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// What `sh` makes of the command line: each word it runs `printf` with, one a line.
    fn sh_words(configured: &str, targets: &[&str]) -> String {
        let targets: Vec<String> = targets.iter().map(|t| t.to_string()).collect();
        let cmd = command(configured, &targets);
        let out = Command::new(&cmd[0]).args(&cmd[1..]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }

    #[test]
    fn without_the_placeholder_the_targets_are_appended() {
        let cmd = command("pytest -q", &["a.py".into()]);
        assert_eq!(cmd, ["sh", "-c", "pytest -q \"$@\"", "docdex-run-tests", "a.py"]);
        assert_eq!(sh_words("printf '%s\\n' x", &["a b.py", "$(touch /nope).py"]), "x\na b.py\n$(touch /nope).py\n");
    }

    #[test]
    fn bare_the_placeholder_is_one_word_per_target_in_place() {
        let cmd = command("pytest {targets} -q", &["tests/a.py".into(), "it's $HOME.py".into()]);
        assert_eq!(cmd[2], "pytest tests/a.py 'it'\\''s $HOME.py' -q");
        let tricky = ["a b.py", "$(echo hi).py", "`id`.py", "x\"y.py", "c'd.py", "semi;colon.py", "back\\slash.py"];
        let expect: String = tricky.iter().map(|t| format!("{t}\n")).collect();
        assert_eq!(sh_words("printf '%s\\n' {targets} end", &tricky), format!("{expect}end\n"));
        // No targets: nothing in its place.
        assert_eq!(sh_words("printf '%s\\n' {targets} end", &[]), "end\n");
    }

    #[test]
    fn inside_quotes_the_placeholder_is_the_lists_text_for_the_next_reader() {
        let tricky = ["a b.py", "$(echo hi).py", "c'd.py", "x\"y`z`.py"];
        // make's recipe (here a nested sh) reads FILES again as words.
        let double = sh_words("FILES=\"{targets}\"; eval \"printf '%s\\n' $FILES\"", &tricky);
        let expect: String = tricky.iter().map(|t| format!("{t}\n")).collect();
        assert_eq!(double, expect);
        let single = sh_words("sh -c 'printf \"%s\\n\" {targets}'", &tricky);
        assert_eq!(single, expect);
        assert_eq!(sh_words("printf '[%s]\\n' \"{targets}\"", &[]), "[]\n");
        // An escaped brace starts no placeholder.
        assert_eq!(substitute("echo \\{targets}", &["a".into()]), "echo \\{targets}");
    }
}
