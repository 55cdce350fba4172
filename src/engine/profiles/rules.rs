//! The constraint rule grammar: the machine-checkable part of a constraint, checked by the
//! pre-commit gatekeeper and drawn by the impact graph's risk overlay.
//!
//! ```text
//! rule = "no-import-cycles"
//!      | "forbid-import" PATTERN             package name (moment, @scope/pkg, lodash/fp),
//!                                            repo path or glob (src/legacy/**)
//!      | "forbid-node" LANGUAGE KIND [NAME]  a Tree-sitter node kind, optionally with exact text
//!      | "max-lines" N [GLOB]                files (matching GLOB) of at most N lines
//!      | "require-test-for" GLOB             changed files matching GLOB need a test file
//! ```
//!
//! Common phrasings are recognised without a model ([`recognise`]): "avoid circular
//! dependencies", "deprecate moment.js", "no any types", "keep files under 400 lines",
//! "require tests for src/api/**". A constraint without a rule is advice only.

use crate::engine::code::lang::Lang;

/// A parsed rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// No staged file may sit on an import cycle.
    NoImportCycles,
    /// No staged file may import what `pattern` names.
    ForbidImport {
        /// A package name, a repo path or a glob over either.
        pattern: String,
    },
    /// No node of `kind` (with text `name`, when given) in files of `language`.
    ForbidNode {
        /// A language name (`typescript` also covers `.tsx`, `javascript` `.jsx`).
        language: String,
        /// A Tree-sitter node kind of that grammar (`predefined_type`).
        kind: String,
        /// The node's exact text (`any`).
        name: Option<String>,
    },
    /// Files (matching `glob`) of at most `max` lines.
    MaxLines {
        /// The most lines allowed.
        max: u32,
        /// Only files matching this glob (all files when absent).
        glob: Option<String>,
    },
    /// A changed file matching `glob` needs a test file beside it or under a tests folder.
    RequireTestFor {
        /// Which files need tests.
        glob: String,
    },
}

/// One line per form, for error messages and docs.
pub const GRAMMAR: &str = "no-import-cycles | forbid-import <package, path or glob> | forbid-node <language> <node kind> [text] | max-lines <n> [glob] | require-test-for <glob>";

impl Rule {
    /// Parses and validates a rule; the error says what is wrong and shows the grammar.
    pub fn parse(text: &str) -> Result<Rule, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let bad = |why: String| Err(format!("{why} (rules: {GRAMMAR}; see docs/PROFILES.md)"));
        let rule = match words.as_slice() {
            [] => return bad("empty rule".into()),
            ["no-import-cycles"] => Rule::NoImportCycles,
            ["no-import-cycles", ..] => return bad("no-import-cycles takes no arguments".into()),
            ["forbid-import", pattern] => Rule::ForbidImport { pattern: pattern.to_string() },
            ["forbid-import", ..] => return bad("forbid-import takes one package, path or glob".into()),
            ["forbid-node", language, kind] => {
                Rule::ForbidNode { language: language.to_ascii_lowercase(), kind: kind.to_string(), name: None }
            }
            ["forbid-node", language, kind, name] => Rule::ForbidNode {
                language: language.to_ascii_lowercase(),
                kind: kind.to_string(),
                name: Some(name.to_string()),
            },
            ["forbid-node", ..] => return bad("forbid-node takes a language, a node kind and optionally a text".into()),
            ["max-lines", n] | ["max-lines", n, _] => {
                let max = n.parse::<u32>().map_err(|_| format!("max-lines needs a number of lines, got {n:?}"))?;
                Rule::MaxLines { max, glob: words.get(2).map(|g| g.to_string()) }
            }
            ["max-lines", ..] => return bad("max-lines takes a number and optionally a glob".into()),
            ["require-test-for", glob] => Rule::RequireTestFor { glob: glob.to_string() },
            ["require-test-for", ..] => return bad("require-test-for takes one glob".into()),
            [other, ..] => return bad(format!("unknown rule {other:?}")),
        };
        rule.validate()?;
        Ok(rule)
    }

    /// Refuses rules that cannot be checked or that forbid everything (a vacuous rule would
    /// block every commit, which is no preference anyone means).
    fn validate(&self) -> Result<(), String> {
        match self {
            Rule::NoImportCycles => Ok(()),
            Rule::ForbidImport { pattern } => {
                glob(pattern)?;
                if matches!(pattern.trim_matches('/'), "*" | "**" | "**/*" | "*/**") {
                    return Err(format!("forbid-import {pattern} would forbid every import"));
                }
                Ok(())
            }
            Rule::ForbidNode { language, kind, .. } => {
                let langs = languages(language);
                if langs.is_empty() {
                    let names: Vec<&str> = Lang::ALL.iter().map(|l| l.name()).collect();
                    return Err(format!("forbid-node: unknown language {language:?} (one of {})", names.join(", ")));
                }
                if !langs.iter().any(|l| l.grammar().id_for_node_kind(kind, true) != 0) {
                    return Err(format!(
                        "forbid-node: the {language} grammar has no node kind {kind:?} (`docdex ast` lists the kinds a file uses)"
                    ));
                }
                Ok(())
            }
            Rule::MaxLines { max, glob: g } => {
                if *max == 0 {
                    return Err("max-lines 0 would forbid every file".into());
                }
                if let Some(g) = g {
                    glob(g)?;
                }
                Ok(())
            }
            Rule::RequireTestFor { glob: g } => glob(g).map(|_| ()),
        }
    }

    /// The rule written back in its canonical form.
    pub fn canonical(&self) -> String {
        match self {
            Rule::NoImportCycles => "no-import-cycles".into(),
            Rule::ForbidImport { pattern } => format!("forbid-import {pattern}"),
            Rule::ForbidNode { language, kind, name: Some(n) } => format!("forbid-node {language} {kind} {n}"),
            Rule::ForbidNode { language, kind, name: None } => format!("forbid-node {language} {kind}"),
            Rule::MaxLines { max, glob: Some(g) } => format!("max-lines {max} {g}"),
            Rule::MaxLines { max, glob: None } => format!("max-lines {max}"),
            Rule::RequireTestFor { glob } => format!("require-test-for {glob}"),
        }
    }

    /// The rule's name (its first word).
    pub fn name(&self) -> &'static str {
        match self {
            Rule::NoImportCycles => "no-import-cycles",
            Rule::ForbidImport { .. } => "forbid-import",
            Rule::ForbidNode { .. } => "forbid-node",
            Rule::MaxLines { .. } => "max-lines",
            Rule::RequireTestFor { .. } => "require-test-for",
        }
    }
}

/// The grammars a rule's language name covers: `typescript` is `.ts` and `.tsx`,
/// `javascript` (or `jsx`) is `.js`/`.jsx`; other names are one grammar each.
pub fn languages(name: &str) -> Vec<Lang> {
    match name {
        "typescript" | "ts" => vec![Lang::TypeScript, Lang::Tsx],
        "javascript" | "js" | "jsx" => vec![Lang::JavaScript],
        other => Lang::ALL.into_iter().filter(|l| l.name() == other).collect(),
    }
}

/// Compiles a glob (`**` crosses directories, `*` does not).
pub fn glob(pattern: &str) -> Result<globset::GlobMatcher, String> {
    globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| format!("bad glob {pattern:?}: {e}"))
}

/// A rule for a constraint written in plain language, when it says something docdex can check
/// by itself ("avoid circular dependencies" → `no-import-cycles`). `None` means advice only.
pub fn recognise(text: &str) -> Option<Rule> {
    let lower = text.to_lowercase();
    let words = tokens(&lower);
    let has = |w: &str| words.iter().any(|x| x == w);
    let has_prefix = |p: &str| words.iter().any(|x| x.starts_with(p));
    let negated =
        ["no", "never", "avoid", "don't", "dont", "not", "forbid", "ban", "without", "stop", "disallow", "prohibit"]
            .iter()
            .any(|w| has(w));
    // Cycles.
    if (has_prefix("circular") || has_prefix("cyclic") || has_prefix("cycle"))
        && (has_prefix("depend") || has_prefix("import") || has_prefix("module") || has_prefix("reference"))
        && !has("allow")
    {
        return Some(Rule::NoImportCycles);
    }
    // TypeScript's `any`.
    if has("any") && negated && (has_prefix("type") || has("typescript") || has("ts") || has("explicit")) {
        return Some(Rule::ForbidNode {
            language: "typescript".into(),
            kind: "predefined_type".into(),
            name: Some("any".into()),
        });
    }
    if let Some(rule) = max_lines(&words) {
        return Some(rule);
    }
    if let Some(rule) = require_tests(text, &words) {
        return Some(rule);
    }
    forbidden_package(text, &words).map(|pattern| Rule::ForbidImport { pattern })
}

/// Words of lower-cased text: letters, digits and the characters package names use.
fn tokens(lower: &str) -> Vec<String> {
    lower
        .split(|c: char| !(c.is_alphanumeric() || "@/._-'*".contains(c)))
        .map(|w| w.trim_matches(|c: char| c == '.' || c == '\'' || c == '-'))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// "keep files under 400 lines", "no file longer than 300 lines", "max 500 lines per file".
fn max_lines(words: &[String]) -> Option<Rule> {
    let about_files = words.iter().any(|w| matches!(w.as_str(), "file" | "files" | "module" | "modules"));
    let i = words.iter().position(|w| w == "lines" || w == "loc")?;
    let n = words.get(i.checked_sub(1)?)?.parse::<u32>().ok().filter(|n| *n > 0)?;
    about_files.then_some(Rule::MaxLines { max: n, glob: None })
}

/// "require tests for src/api/**", "every file in src/core/* needs a test".
fn require_tests(text: &str, words: &[String]) -> Option<Rule> {
    if !words.iter().any(|w| w.starts_with("test")) {
        return None;
    }
    let g = text
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| "`'\",;:()".contains(c)).trim_end_matches('.'))
        .find(|w| (w.contains('/') || w.contains('*')) && glob(w).is_ok())?;
    Some(Rule::RequireTestFor { glob: g.to_string() })
}

/// Words that follow "avoid"/"don't use" but are not packages.
const NOT_PACKAGES: &[&str] = &[
    "the",
    "a",
    "an",
    "it",
    "this",
    "that",
    "these",
    "those",
    "them",
    "any",
    "all",
    "global",
    "globals",
    "var",
    "magic",
    "deep",
    "long",
    "large",
    "nested",
    "mutable",
    "unsafe",
    "inline",
    "console",
    "print",
    "prints",
    "raw",
    "new",
    "old",
    "more",
    "using",
    "use",
    "import",
    "importing",
    "of",
    "usage",
    "code",
    "functions",
    "classes",
    "comments",
    "abbreviations",
    "side",
    "default",
    "exports",
    "wildcard",
    "star",
];

/// "deprecate moment.js", "do not import lodash", "avoid the request library", "ban jquery".
fn forbidden_package(text: &str, words: &[String]) -> Option<String> {
    let library_hint = words.iter().any(|w| {
        matches!(
            w.as_str(),
            "library"
                | "libraries"
                | "package"
                | "packages"
                | "module"
                | "modules"
                | "dependency"
                | "dependencies"
                | "import"
                | "imports"
                | "importing"
                | "crate"
                | "crates"
                | "lib"
        )
    });
    let raw: Vec<&str> = text.split_whitespace().collect();
    for (i, w) in words.iter().enumerate() {
        let strong = matches!(w.as_str(), "deprecate" | "deprecated" | "ban" | "forbid" | "forbidden" | "prohibit");
        let weak = matches!(w.as_str(), "avoid" | "never" | "stop" | "don't" | "dont" | "not" | "no" | "drop");
        if !strong && !weak {
            continue;
        }
        // Skip filler between the verb and the name.
        let mut j = i + 1;
        while words.get(j).is_some_and(|x| {
            matches!(x.as_str(), "use" | "using" | "usage" | "of" | "the" | "import" | "importing" | "imports" | "more")
        }) {
            j += 1;
        }
        let Some(candidate) = words.get(j) else { continue };
        if NOT_PACKAGES.contains(&candidate.as_str()) || !package_like(candidate) {
            continue;
        }
        let looks_js = candidate.ends_with(".js") || candidate.contains('/') || candidate.starts_with('@');
        let quoted = raw
            .iter()
            .any(|r| (r.starts_with('`') || r.starts_with('"')) && r.to_lowercase().contains(candidate.as_str()));
        if strong || library_hint || looks_js || quoted {
            return Some(normalize_package(candidate));
        }
    }
    None
}

fn package_like(w: &str) -> bool {
    w.len() >= 2
        && w.chars().next().is_some_and(|c| c.is_ascii_alphanumeric() || c == '@')
        && w.chars().all(|c| c.is_ascii_alphanumeric() || "@/._-*".contains(c))
        && !w.chars().all(|c| c.is_ascii_digit())
}

/// `moment.js` is the `moment` package; other names are kept as written.
fn normalize_package(w: &str) -> String {
    match w.strip_suffix(".js") {
        Some(base) if !base.is_empty() && !base.contains('/') && !base.contains('.') => base.to_string(),
        _ => w.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grammar_parses_and_prints_back() {
        for text in [
            "no-import-cycles",
            "forbid-import moment",
            "forbid-import src/legacy/**",
            "forbid-node typescript predefined_type any",
            "forbid-node python call",
            "max-lines 400",
            "max-lines 200 src/**/*.ts",
            "require-test-for src/api/**",
        ] {
            let rule = Rule::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(rule.canonical(), text);
        }
        assert_eq!(Rule::parse("  forbid-import   lodash ").unwrap().canonical(), "forbid-import lodash");
    }

    #[test]
    fn bad_and_vacuous_rules_are_refused_with_the_reason() {
        let err = |t: &str| Rule::parse(t).unwrap_err();
        assert!(err("forbid-imports x").contains("unknown rule"), "{}", err("forbid-imports x"));
        assert!(err("max-lines ten").contains("number"));
        assert!(err("max-lines 0").contains("every file"));
        assert!(err("forbid-import **").contains("every import"));
        assert!(err("forbid-node cobol if").contains("unknown language"));
        assert!(err("forbid-node typescript no_such_kind").contains("no node kind"));
        assert!(err("no-import-cycles please").contains("no arguments"));
        assert!(err("").contains("empty"));
        assert!(err("require-test-for").contains("one glob"));
    }

    #[test]
    fn common_phrasings_are_recognised_without_a_model() {
        let rec = |t: &str| recognise(t).map(|r| r.canonical());
        assert_eq!(rec("Avoid circular dependencies").as_deref(), Some("no-import-cycles"));
        assert_eq!(rec("no import cycles between modules").as_deref(), Some("no-import-cycles"));
        assert_eq!(rec("Deprecate usage of moment.js").as_deref(), Some("forbid-import moment"));
        assert_eq!(rec("deprecate moment.js").as_deref(), Some("forbid-import moment"));
        assert_eq!(rec("Do not import lodash anywhere").as_deref(), Some("forbid-import lodash"));
        assert_eq!(rec("avoid the request library").as_deref(), Some("forbid-import request"));
        assert_eq!(rec("No any types").as_deref(), Some("forbid-node typescript predefined_type any"));
        assert_eq!(rec("never use `any` in TypeScript").as_deref(), Some("forbid-node typescript predefined_type any"));
        assert_eq!(rec("Keep files under 400 lines").as_deref(), Some("max-lines 400"));
        assert_eq!(rec("require tests for src/api/**").as_deref(), Some("require-test-for src/api/**"));
        // Advice only: nothing checkable in it.
        assert_eq!(rec("Prefer small, focused functions"), None);
        assert_eq!(rec("avoid deep nesting"), None);
        assert_eq!(rec("don't use var"), None);
        assert_eq!(rec("Never commit secrets"), None);
    }

    #[test]
    fn typescript_rules_cover_tsx() {
        assert_eq!(languages("typescript"), vec![Lang::TypeScript, Lang::Tsx]);
        assert_eq!(languages("rust"), vec![Lang::Rust]);
        assert!(languages("cobol").is_empty());
    }
}
