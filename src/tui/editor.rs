//! Opening a file at a line in the user's editor: which program (`[tui]
//! editor`, else `$VISUAL`, else `$EDITOR`, else `vi`) and how that program
//! spells "at this line" (`+N file` for the vi family, nano, emacs, micro,
//! kakoune; `--goto file:N` for VS Code and friends; `file:N` for Helix,
//! Sublime and Zed; `{file}` / `{line}` placeholders for anything else).

use std::path::Path;

/// Program and arguments to open `path` at `line`.
pub fn command(configured: &str, visual: Option<&str>, editor: Option<&str>, path: &Path, line: u32) -> Vec<String> {
    let chosen =
        [Some(configured), visual, editor].into_iter().flatten().map(str::trim).find(|s| !s.is_empty()).unwrap_or("vi");
    let mut words = split_words(chosen);
    if words.is_empty() {
        words.push("vi".into());
    }
    let file = path.display().to_string();
    let line = line.max(1);
    if words.iter().any(|w| w.contains("{file}") || w.contains("{line}")) {
        return words.into_iter().map(|w| w.replace("{file}", &file).replace("{line}", &line.to_string())).collect();
    }
    let program = Path::new(&words[0]).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    match program.as_str() {
        "code" | "code-insiders" | "codium" | "vscodium" | "cursor" => {
            words.push("--goto".into());
            words.push(format!("{file}:{line}"));
        }
        "hx" | "helix" | "subl" | "sublime_text" | "zed" | "zeditor" => words.push(format!("{file}:{line}")),
        "vi" | "vim" | "nvim" | "gvim" | "mvim" | "view" | "nano" | "pico" | "emacs" | "emacsclient" | "micro"
        | "kak" | "joe" | "jed" | "ne" | "mg" => {
            words.push(format!("+{line}"));
            words.push(file);
        }
        _ => words.push(file),
    }
    words
}

/// Splits a command line on whitespace, honouring single and double quotes.
pub fn split_words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in s.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (None, c) if c.is_whitespace() => {
                if !cur.is_empty() || any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            (None, c) => cur.push(c),
        }
    }
    if !cur.is_empty() || any {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(configured: &str, visual: Option<&str>, editor: Option<&str>) -> Vec<String> {
        command(configured, visual, editor, Path::new("/r/src/a b.rs"), 42)
    }

    #[test]
    fn picks_the_editor_in_order() {
        assert_eq!(cmd("", None, None), vec!["vi", "+42", "/r/src/a b.rs"]);
        assert_eq!(cmd("", None, Some("nano")), vec!["nano", "+42", "/r/src/a b.rs"]);
        assert_eq!(cmd("", Some("nvim"), Some("nano")), vec!["nvim", "+42", "/r/src/a b.rs"]);
        assert_eq!(cmd("hx", Some("nvim"), None), vec!["hx", "/r/src/a b.rs:42"]);
    }

    #[test]
    fn per_editor_line_syntax() {
        assert_eq!(cmd("code --wait", None, None), vec!["code", "--wait", "--goto", "/r/src/a b.rs:42"]);
        assert_eq!(
            cmd("/usr/bin/emacsclient -nw", None, None),
            vec!["/usr/bin/emacsclient", "-nw", "+42", "/r/src/a b.rs"]
        );
        assert_eq!(cmd("myed --line {line} '{file}'", None, None), vec!["myed", "--line", "42", "/r/src/a b.rs"]);
        assert_eq!(cmd("unknown-editor", None, None), vec!["unknown-editor", "/r/src/a b.rs"]);
    }

    #[test]
    fn quoting() {
        assert_eq!(split_words("a 'b c' \"d\" ''"), vec!["a", "b c", "d", ""]);
    }
}
