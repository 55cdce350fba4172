//! Syntax highlighting with syntect, reduced to semantic classes (keyword,
//! string, comment, ...) that the theme colours. Using classes instead of a
//! syntect colour theme keeps every colour in `themes/*.toml`, makes light,
//! dark, high-contrast and `NO_COLOR` work the same way, and lets snapshots
//! compare classes rather than RGB values.
//!
//! Loading syntect's grammars costs tens of milliseconds, so [`warm_up`] runs
//! it on a background thread at start and the preview is highlighted in the
//! engine worker, never on the UI thread.

use super::theme::Slot;
use std::sync::OnceLock;
use syntect::parsing::{ParseState, Scope, ScopeStack, SyntaxReference, SyntaxSet};

/// What a piece of source text is, for colouring.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SyntaxClass {
    /// Anything else.
    Plain,
    /// `fn`, `if`, `return`, `class`, ...
    Keyword,
    /// String and character literals.
    String,
    /// Comments.
    Comment,
    /// Function names at definition or call.
    Function,
    /// Type names.
    Type,
    /// Numeric literals.
    Number,
    /// Other constants (`true`, `None`, escapes).
    Constant,
    /// Operators.
    Operator,
    /// Brackets, separators.
    Punctuation,
    /// Macros.
    Macro,
    /// Attributes, annotations, decorators.
    Attribute,
}

impl SyntaxClass {
    /// The theme slot that colours this class (`None` for plain text).
    pub fn slot(self) -> Option<Slot> {
        Some(match self {
            SyntaxClass::Plain => return None,
            SyntaxClass::Keyword => Slot::SyntaxKeyword,
            SyntaxClass::String => Slot::SyntaxString,
            SyntaxClass::Comment => Slot::SyntaxComment,
            SyntaxClass::Function => Slot::SyntaxFunction,
            SyntaxClass::Type => Slot::SyntaxType,
            SyntaxClass::Number => Slot::SyntaxNumber,
            SyntaxClass::Constant => Slot::SyntaxConstant,
            SyntaxClass::Operator => Slot::SyntaxOperator,
            SyntaxClass::Punctuation => Slot::SyntaxPunctuation,
            SyntaxClass::Macro => Slot::SyntaxMacro,
            SyntaxClass::Attribute => Slot::SyntaxAttribute,
        })
    }
}

/// A run of text with one class.
pub type Segment = (SyntaxClass, String);
/// A highlighted line.
pub type StyledLine = Vec<Segment>;

/// syntect's bundled grammars, loaded once.
pub fn syntax_set() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

/// Loads the grammars on a background thread so the first preview does not wait.
pub fn warm_up() {
    let _ = std::thread::Builder::new().name("docdex-syntect".into()).spawn(|| {
        let _ = syntax_set();
        let _ = classifier();
    });
}

/// Scope prefixes in priority order, with their classes.
fn classifier() -> &'static Vec<(Scope, SyntaxClass)> {
    static RULES: OnceLock<Vec<(Scope, SyntaxClass)>> = OnceLock::new();
    RULES.get_or_init(|| {
        use SyntaxClass::*;
        let table: &[(&str, SyntaxClass)] = &[
            ("constant.numeric", Number),
            ("constant.character.escape", Constant),
            ("constant", Constant),
            ("keyword.operator", Operator),
            ("keyword", Keyword),
            ("storage", Keyword),
            ("entity.name.tag", Keyword),
            ("entity.name.function", Function),
            ("support.function", Function),
            ("variable.function", Function),
            ("entity.name.macro", Macro),
            ("support.macro", Macro),
            ("entity.name.type", Type),
            ("entity.name.class", Type),
            ("entity.name.struct", Type),
            ("entity.name.enum", Type),
            ("entity.name.trait", Type),
            ("entity.name.interface", Type),
            ("entity.other.inherited-class", Type),
            ("support.type", Type),
            ("support.class", Type),
            ("meta.annotation", Attribute),
            ("meta.attribute", Attribute),
            ("entity.other.attribute-name", Attribute),
            ("markup.heading", Keyword),
            ("punctuation", Punctuation),
        ];
        table.iter().filter_map(|(s, c)| Scope::new(s).ok().map(|s| (s, *c))).collect()
    })
}

fn scope(s: &str) -> Option<Scope> {
    Scope::new(s).ok()
}

/// The class of the innermost meaningful scope; comments and strings win at any depth.
fn classify(stack: &[Scope]) -> SyntaxClass {
    static OUTER: OnceLock<(Option<Scope>, Option<Scope>)> = OnceLock::new();
    let (comment, string) = OUTER.get_or_init(|| (scope("comment"), scope("string")));
    for s in stack {
        if comment.is_some_and(|c| c.is_prefix_of(*s)) {
            return SyntaxClass::Comment;
        }
        if string.is_some_and(|c| c.is_prefix_of(*s)) {
            return SyntaxClass::String;
        }
    }
    let rules = classifier();
    for s in stack.iter().rev() {
        if let Some((_, class)) = rules.iter().find(|(prefix, _)| prefix.is_prefix_of(*s)) {
            return *class;
        }
    }
    SyntaxClass::Plain
}

/// Finds a grammar for a path (by extension) or a language name; plain text otherwise.
pub fn syntax_for(path: &str, lang: &str) -> &'static SyntaxReference {
    let set = syntax_set();
    let ext = std::path::Path::new(path).extension().and_then(|e| e.to_str()).unwrap_or("");
    // Grammars syntect does not bundle, mapped to the nearest one it has.
    let alias = match (ext, lang) {
        ("ts" | "tsx" | "mts" | "cts" | "jsx" | "mjs" | "cjs", _) | (_, "typescript" | "tsx") => "js",
        ("kt" | "kts" | "dart" | "swift", _) | (_, "kotlin" | "dart" | "swift") => "java",
        ("toml", _) => "ini",
        _ => "",
    };
    set.find_syntax_by_extension(ext)
        .or_else(|| (!alias.is_empty()).then(|| set.find_syntax_by_extension(alias)).flatten())
        .or_else(|| (!lang.is_empty()).then(|| set.find_syntax_by_token(lang)).flatten())
        .unwrap_or_else(|| set.find_syntax_plain_text())
}

/// Highlights line by line, keeping parser state across lines (for streamed code blocks).
#[derive(Clone)]
pub struct LineHighlighter {
    state: ParseState,
    stack: ScopeStack,
}

impl LineHighlighter {
    /// A highlighter for one grammar.
    pub fn new(syntax: &SyntaxReference) -> Self {
        LineHighlighter { state: ParseState::new(syntax), stack: ScopeStack::new() }
    }

    /// A highlighter chosen from a path and/or language name.
    pub fn for_file(path: &str, lang: &str) -> Self {
        Self::new(syntax_for(path, lang))
    }

    /// Highlights one line (without its newline). Tabs become four spaces; control characters are dropped.
    pub fn line(&mut self, text: &str) -> StyledLine {
        let clean = sanitize(text);
        let with_nl = format!("{clean}\n");
        let ops = match self.state.parse_line(&with_nl, syntax_set()) {
            Ok(ops) => ops,
            Err(_) => return vec![(SyntaxClass::Plain, clean)],
        };
        let mut out: StyledLine = Vec::new();
        let mut pos = 0;
        let push = |class: SyntaxClass, s: &str, out: &mut StyledLine| {
            if s.is_empty() {
                return;
            }
            match out.last_mut() {
                Some((c, t)) if *c == class => t.push_str(s),
                _ => out.push((class, s.to_string())),
            }
        };
        for (at, op) in ops {
            let at = at.min(clean.len());
            if at > pos {
                push(classify(self.stack.as_slice()), &clean[pos..at], &mut out);
                pos = at;
            }
            let _ = self.stack.apply(&op);
        }
        if pos < clean.len() {
            push(classify(self.stack.as_slice()), &clean[pos..], &mut out);
        }
        out
    }
}

/// Tabs to four spaces, other control characters dropped (they would corrupt the screen).
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\t' => out.push_str("    "),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// Highlights whole lines of a file.
pub fn highlight(path: &str, lang: &str, lines: &[&str]) -> Vec<StyledLine> {
    let mut h = LineHighlighter::for_file(path, lang);
    lines.iter().map(|l| h.line(l)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classes(line: &StyledLine) -> Vec<(SyntaxClass, &str)> {
        line.iter().map(|(c, t)| (*c, t.as_str())).collect()
    }

    #[test]
    fn rust_keywords_strings_and_comments() {
        let out = highlight("a.rs", "rust", &["fn main() {", "    let s = \"hi\"; // note", "}"]);
        let first = classes(&out[0]);
        assert_eq!(first[0], (SyntaxClass::Keyword, "fn"), "{first:?}");
        assert!(first.iter().any(|(c, t)| *c == SyntaxClass::Function && *t == "main"), "{first:?}");
        let second = classes(&out[1]);
        assert!(second.iter().any(|(c, t)| *c == SyntaxClass::String && t.contains("hi")), "{second:?}");
        assert!(second.iter().any(|(c, t)| *c == SyntaxClass::Comment && t.contains("note")), "{second:?}");
        // Text is preserved exactly, tabs expanded.
        let joined: String = out[1].iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(joined, "    let s = \"hi\"; // note");
    }

    #[test]
    fn state_carries_across_lines() {
        let out = highlight("a.py", "python", &["x = '''start", "still string", "'''"]);
        assert_eq!(out[1], vec![(SyntaxClass::String, "still string".to_string())]);
    }

    #[test]
    fn unknown_files_are_plain_and_sanitized() {
        let out = highlight("notes.unknownext", "", &["a\tb\u{7}c"]);
        assert_eq!(out[0], vec![(SyntaxClass::Plain, "a    bc".to_string())]);
        assert_eq!(syntax_for("x.ts", "typescript").name, "JavaScript");
    }
}
