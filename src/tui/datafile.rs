//! Themes and keymaps are TOML data files, shipped in the binary and
//! overridable by the user. This module reads them with source positions, so
//! every problem (bad syntax, an unknown action, a duplicate key, a colour
//! that does not exist) is reported as `path:line: cause`, and loads them the
//! same way for both ([`load_layered`]): the shipped file, then the user's file
//! laid over it, falling back without failing.

use std::fmt;
use std::ops::Range;
use std::path::Path;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// A problem in a theme or keymap file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataError {
    /// The file (or `<embedded name.toml>` for shipped data).
    pub path: String,
    /// 1-based line of the problem.
    pub line: usize,
    /// What is wrong and, where possible, what would be right.
    pub message: String,
    /// Further problems in the same file, (line, message): all are said at once, so one edit
    /// fixes them all rather than one per restart.
    pub more: Vec<(usize, String)>,
}

impl DataError {
    /// The first of `errors` carrying the rest; `None` when there are none.
    pub fn all(mut errors: Vec<DataError>) -> Option<DataError> {
        if errors.is_empty() {
            return None;
        }
        let mut first = errors.remove(0);
        first.more.extend(errors.into_iter().map(|e| (e.line, e.message)));
        Some(first)
    }
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.path, self.line, self.message)?;
        for (line, message) in &self.more {
            write!(f, "; line {line}: {message}")?;
        }
        Ok(())
    }
}

impl std::error::Error for DataError {}

/// One parsed file: its text (for line numbers) and where it came from.
pub struct Source<'a> {
    /// Display name used in errors.
    pub path: String,
    /// The file's text.
    pub text: &'a str,
}

impl<'a> Source<'a> {
    /// A source named `path`.
    pub fn new(path: impl Into<String>, text: &'a str) -> Self {
        Source { path: path.into(), text }
    }

    /// Parses the text as a TOML table with spans.
    pub fn parse(&self) -> Result<Spanned<DeTable<'a>>, DataError> {
        DeTable::parse(self.text).map_err(|e| {
            let line = e.span().map(|s| self.line_of(s.start)).unwrap_or(1);
            self.error_at_line(line, e.message().trim().to_string())
        })
    }

    /// 1-based line containing byte `offset`.
    pub fn line_of(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text.as_bytes()[..end].iter().filter(|&&b| b == b'\n').count() + 1
    }

    /// An error at the start of `span`.
    pub fn error(&self, span: Range<usize>, message: impl Into<String>) -> DataError {
        self.error_at_line(self.line_of(span.start), message.into())
    }

    fn error_at_line(&self, line: usize, message: String) -> DataError {
        DataError { path: self.path.clone(), line, message, more: Vec::new() }
    }

    /// The sub-table under `key`, or an error saying a table was expected.
    pub fn table<'t>(
        &self,
        key: &Spanned<toml::de::DeString<'a>>,
        value: &'t Spanned<DeValue<'a>>,
    ) -> Result<&'t DeTable<'a>, DataError> {
        value.get_ref().as_table().ok_or_else(|| {
            self.error(
                value.span(),
                format!(
                    "`{}` must be a table ([{}]), found a {}",
                    key.get_ref(),
                    key.get_ref(),
                    value.get_ref().type_str()
                ),
            )
        })
    }
}

/// A kind of data file the TUI ships and lets the user override.
pub struct DataKind {
    /// What one is called in messages: `theme`, `keymap`.
    pub noun: &'static str,
    /// The folder the shipped files come from (their embedded names): `themes`, `keymaps`.
    pub dir: &'static str,
    /// The shipped files, `(name, text)`; the first is the fallback when all else fails.
    pub shipped: &'static [(&'static str, &'static str)],
}

impl DataKind {
    /// The shipped text of `name`.
    pub fn shipped_text(&self, name: &str) -> Option<&'static str> {
        self.shipped.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
    }

    /// The display name of shipped file `name` (`<embedded themes/dark.toml>`).
    pub fn embedded_path(&self, name: &str) -> String {
        format!("<embedded {}/{name}.toml>", self.dir)
    }
}

/// Loads data file `name` of `kind`: the shipped file of that name, then
/// `<user_dir>/<name>.toml` laid over it, built by `build(name, layers)` from `(path, text)`
/// layers. Never fails: when the user's file is unreadable or wrong the shipped one stays in
/// effect, when that is missing or wrong the first shipped file does, and `last_resort` when
/// even that fails. Returns the value and the problems met, each saying what is used instead.
pub fn load_layered<T>(
    kind: &DataKind,
    name: &str,
    user_dir: &Path,
    build: impl Fn(&str, &[(String, &str)]) -> Result<T, DataError>,
    last_resort: impl FnOnce() -> T,
) -> (T, Vec<String>) {
    let noun = kind.noun;
    let fallback = kind.shipped.first().map(|(n, _)| *n).unwrap_or("built-in");
    let mut problems = Vec::new();
    let shipped_text = kind.shipped_text(name);
    let user_path = user_dir.join(format!("{name}.toml"));
    let user_text = match std::fs::read_to_string(&user_path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            problems.push(format!("{}: cannot read: {e}; using the shipped {noun}", user_path.display()));
            None
        }
    };
    if shipped_text.is_none() && user_text.is_none() {
        let known: Vec<&str> = kind.shipped.iter().map(|(n, _)| *n).collect();
        problems.push(format!(
            "no {noun} named {name:?} (shipped: {}; or create {}); using the {fallback} {noun}",
            known.join(", "),
            user_path.display()
        ));
    }
    let mut layers: Vec<(String, &str)> = Vec::new();
    if let Some(t) = shipped_text {
        layers.push((kind.embedded_path(name), t));
    }
    // Without a shipped file of that name, the first shipped one stands in, under its own name:
    // help and the status say what is in effect, not the name of a file that was left out.
    let (base, instead) = match shipped_text {
        Some(_) => (name, "the shipped".to_string()),
        None => (fallback, format!("the {fallback}")),
    };
    let shipped = build(base, &layers);
    if let Some(user) = &user_text {
        layers.push((user_path.display().to_string(), user.as_str()));
        match build(name, &layers) {
            Ok(v) => return (v, problems),
            Err(e) => problems.push(format!("{e}; using {instead} {noun}")),
        }
    }
    let value = match shipped {
        Ok(v) => v,
        Err(e) => {
            problems.push(format!("{e}; using the {fallback} {noun}"));
            build(fallback, &[]).unwrap_or_else(|_| last_resort())
        }
    };
    (value, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_name_the_line() {
        let src = Source::new("x.toml", "[a]\nb = 1\nc = = 2\n");
        let err = src.parse().err().unwrap_or_else(|| panic!("bad TOML parsed"));
        assert_eq!(err.path, "x.toml");
        assert_eq!(err.line, 3);
        assert!(err.to_string().starts_with("x.toml:3: "), "{err}");
    }

    #[test]
    fn line_of_counts_newlines() {
        let src = Source::new("y", "a\nb\nc");
        assert_eq!(src.line_of(0), 1);
        assert_eq!(src.line_of(2), 2);
        assert_eq!(src.line_of(4), 3);
        assert_eq!(src.line_of(99), 3);
    }

    /// A toy data kind: a file is a list of `key = "value"` lines; a value "bad" is an error.
    const KIND: DataKind = DataKind {
        noun: "widget",
        dir: "widgets",
        shipped: &[("plain", "a = \"1\"\n"), ("fancy", "a = \"2\"\nb = \"3\"\n")],
    };

    fn build(name: &str, layers: &[(String, &str)]) -> Result<String, DataError> {
        let mut out = format!("{name}:");
        for (path, text) in layers {
            let src = Source::new(path.clone(), text);
            let table = src.parse()?;
            for (k, v) in table.get_ref() {
                let v = v.get_ref().as_str().unwrap_or("");
                if v == "bad" {
                    return Err(src.error(k.span(), format!("`{}` is bad", k.get_ref())));
                }
                out.push_str(&format!(" {}={v}", k.get_ref()));
            }
        }
        Ok(out)
    }

    fn load(name: &str, user: Option<&str>) -> (String, Vec<String>) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        if let Some(text) = user {
            std::fs::write(dir.path().join(format!("{name}.toml")), text).unwrap_or_else(|e| panic!("write: {e}"));
        }
        load_layered(&KIND, name, dir.path(), build, || "last resort".to_string())
    }

    #[test]
    fn the_user_file_is_laid_over_the_shipped_one() {
        assert_eq!(load("fancy", None), ("fancy: a=2 b=3".to_string(), vec![]));
        assert_eq!(load("fancy", Some("b = \"9\"\n")).0, "fancy: a=2 b=3 b=9");
        assert_eq!(load("mine", Some("c = \"4\"\n")), ("mine: c=4".to_string(), vec![]));
    }

    #[test]
    fn problems_fall_back_and_say_to_what() {
        let (v, p) = load("fancy", Some("a = \"bad\"\n"));
        assert_eq!(v, "fancy: a=2 b=3", "the shipped file stays in effect");
        assert_eq!(p.len(), 1);
        assert!(p[0].ends_with("fancy.toml:1: `a` is bad; using the shipped widget"), "{p:?}");
        let (v, p) = load("nothing", None);
        assert_eq!(v, "plain:", "named after what is in effect");
        assert!(p[0].starts_with("no widget named \"nothing\" (shipped: plain, fancy; or create "), "{p:?}");
        assert!(p[0].ends_with("nothing.toml); using the plain widget"), "{p:?}");
        // A broken file of a new name: the first shipped one is in effect, and says so.
        let (v, p) = load("mine", Some("a = \"bad\"\n"));
        assert_eq!(v, "plain:");
        assert!(p[0].ends_with("mine.toml:1: `a` is bad; using the plain widget"), "{p:?}");
    }
}
