//! Themes and keymaps are TOML data files, shipped in the binary and
//! overridable by the user. This module reads them with source positions, so
//! every problem (bad syntax, an unknown action, a duplicate key, a colour
//! that does not exist) is reported as `path:line: cause`.

use std::fmt;
use std::ops::Range;
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
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.path, self.line, self.message)
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
        DataError { path: self.path.clone(), line, message }
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
}
