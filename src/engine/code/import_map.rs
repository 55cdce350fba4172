//! `docdex.import_map.json`: import hints a repository gives where static resolution cannot
//! know the answer (the spec's "mapping overrides and pattern expansions (`targets` +
//! `expand`)").
//!
//! ```json
//! {
//!   "version": 1,
//!   "mappings": [
//!     { "spec": "legacy-config", "targets": ["config/legacy.js"] },
//!     { "source": "js/loader.js", "spec": "./themes/*", "expand": ["dark", "light"] },
//!     { "spec": "./widgets/*", "targets": ["js/widgets/*.js"], "confidence": 0.7 },
//!     { "spec": "@company/telemetry", "external": "telemetry" }
//!   ]
//! }
//! ```
//!
//! Each import is checked against the mappings in order; the first that matches replaces the
//! normal resolution (edges get the method `import_map`).
//! - `spec` matches the import's specifier exactly, or as a pattern where `*` matches anything.
//!   An unresolvable dynamic import is recorded with `*` for its unknown parts
//!   (`'./themes/' + name` is `./themes/*`), so a mapping can name it by that same pattern.
//! - `source` (optional) limits the mapping to importing files matching a glob (`*` within a
//!   path segment, `**` across segments).
//! - `targets`: repo-relative files. A `*` in a target is replaced by each `expand` value, else
//!   by what the `*` of `spec` matched; if no value is known it is a glob over the repository.
//! - `expand` without `targets`: the values replace the `*` of `spec`, and each resulting
//!   specifier is resolved as if written in the source.
//! - `external`: the import is an external package of that name.
//! - `confidence` (default 1.0) is given to the edges.
//!
//! A mapping whose targets are not repository files becomes a diagnostic; an unreadable file
//! becomes a graph warning and is ignored.

use super::imports::RawImport;
use super::resolve::{Resolution, Resolver, Target};
use super::types::{FileImports, Method};
use serde::Deserialize;
use std::path::Path;

/// The file name at the repository root.
pub const FILE_NAME: &str = "docdex.import_map.json";

/// The parsed file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportMap {
    /// Format version (1).
    #[serde(default = "one")]
    pub version: u32,
    /// The mappings, tried in order.
    #[serde(default)]
    pub mappings: Vec<Mapping>,
}

fn one() -> u32 {
    1
}

/// One mapping.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mapping {
    /// The specifier or pattern it applies to.
    pub spec: String,
    /// Glob of importing files it applies to (all when absent).
    #[serde(default)]
    pub source: Option<String>,
    /// Repo-relative target files (may contain `*`).
    #[serde(default)]
    pub targets: Vec<String>,
    /// Values substituted for `*`.
    #[serde(default)]
    pub expand: Vec<String>,
    /// Marks the import as this external package.
    #[serde(default)]
    pub external: Option<String>,
    /// Confidence of the edges (default 1.0).
    #[serde(default)]
    pub confidence: Option<f32>,
}

/// The most a hints file (`docdex.import_map.json`, `docdex.import_traces.jsonl`) may hold.
pub const MAX_HINT_BYTES: u64 = 16 * 1024 * 1024;

/// The text of the hints file `name` at the repository's root, read as every repository file
/// is (no link followed, a regular file only, at most [`MAX_HINT_BYTES`]): `Ok(None)` when
/// absent, `Err` with why it is not read. A plain read followed links: a hints file linked to
/// a file outside the repository had that file's lines parsed and quoted in the graph's
/// warnings, one linked to `/dev/zero` was read until memory ran out, a FIFO waited on for ever.
pub fn read_hint_file(root: &Path, name: &str) -> Result<Option<String>, String> {
    use crate::engine::fsutil;
    match fsutil::read_repo_file_capped(root, name, MAX_HINT_BYTES) {
        Ok(Some(bytes)) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
        Ok(None) => Err(format!("it is over the {} MiB a hints file may hold", MAX_HINT_BYTES >> 20)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) if fsutil::is_symlink_refusal(&e) => Err(
            "it is a symbolic link, and docdex reads it only as a regular file of the repository (a link may lead out of it)"
                .to_string(),
        ),
        Err(e) => Err(e.to_string()),
    }
}

impl ImportMap {
    /// Reads `docdex.import_map.json` at `root`: `(None, [])` when absent, `(None, [warning])`
    /// when unreadable or invalid.
    pub fn load(root: &Path) -> (Option<ImportMap>, Vec<String>) {
        let text = match read_hint_file(root, FILE_NAME) {
            Ok(Some(t)) => t,
            Ok(None) => return (None, Vec::new()),
            Err(why) => return (None, vec![format!("cannot read {FILE_NAME}: {why}; import hints ignored")]),
        };
        match serde_json::from_str::<ImportMap>(&text) {
            Ok(map) if map.version != 1 => (
                None,
                vec![format!(
                    "{FILE_NAME} has version {}, this docdex reads version 1; import hints ignored",
                    map.version
                )],
            ),
            Ok(map) => {
                let bad: Vec<String> = map
                    .mappings
                    .iter()
                    .enumerate()
                    .filter(|(_, m)| m.targets.is_empty() && m.expand.is_empty() && m.external.is_none())
                    .map(|(i, m)| {
                        format!(
                            "{FILE_NAME}: mapping {} ({}) has no targets, expand or external; it is ignored",
                            i + 1,
                            m.spec
                        )
                    })
                    .collect();
                (Some(map), bad)
            }
            Err(e) => (None, vec![format!("{FILE_NAME} is not valid: {e}; import hints ignored")]),
        }
    }

    /// The resolution the first matching mapping gives `imp` of `file`: `None` when no mapping
    /// matches, `Some(Err(reason))` when one matches but yields no repository file.
    pub fn apply(
        &self,
        file: &FileImports,
        imp: &RawImport,
        resolver: &Resolver,
    ) -> Option<Result<Resolution, String>> {
        self.mappings.iter().enumerate().find_map(|(i, m)| {
            if m.targets.is_empty() && m.expand.is_empty() && m.external.is_none() {
                return None;
            }
            if let Some(src) = &m.source {
                glob_match(src, &file.path, false)?;
            }
            let capture = spec_match(&m.spec, &imp.spec)?;
            Some(m.resolve(i + 1, file, imp, capture.as_deref(), resolver))
        })
    }
}

impl Mapping {
    fn resolve(
        &self,
        number: usize,
        file: &FileImports,
        imp: &RawImport,
        capture: Option<&str>,
        resolver: &Resolver,
    ) -> Result<Resolution, String> {
        if let Some(name) = &self.external {
            return Ok(Resolution::External(name.clone()));
        }
        let confidence = self.confidence.unwrap_or(1.0).clamp(0.0, 1.0);
        let values: Vec<&str> = if !self.expand.is_empty() {
            self.expand.iter().map(String::as_str).collect()
        } else {
            capture.into_iter().collect()
        };
        let mut found: Vec<String> = Vec::new();
        let mut missing: Vec<String> = Vec::new();
        if self.targets.is_empty() {
            for v in &values {
                let spec = self.spec.replacen('*', v, 1);
                match resolver.resolve(file, imp, &spec) {
                    Resolution::Files(t) => found.extend(t.into_iter().map(|t| t.path)),
                    Resolution::External(_) | Resolution::NotFound(_) => missing.push(spec),
                }
            }
        } else {
            for t in &self.targets {
                if !t.contains('*') {
                    push_file(resolver, t.clone(), &mut found, &mut missing);
                } else if !values.is_empty() {
                    for v in &values {
                        push_file(resolver, t.replace('*', v), &mut found, &mut missing);
                    }
                } else {
                    let mut hits: Vec<String> =
                        resolver.files().iter().filter(|f| glob_match(t, f, false).is_some()).cloned().collect();
                    hits.sort();
                    if hits.is_empty() {
                        missing.push(t.clone());
                    }
                    found.extend(hits);
                }
            }
        }
        found.dedup();
        if found.is_empty() {
            return Err(format!(
                "{FILE_NAME} mapping {number} ({}) matched, but {} {} not a file of the repository",
                self.spec,
                missing.join(", "),
                if missing.len() == 1 { "is" } else { "are" }
            ));
        }
        Ok(Resolution::Files(
            found.into_iter().map(|path| Target { path, method: Method::ImportMap, confidence }).collect(),
        ))
    }
}

fn push_file(resolver: &Resolver, path: String, found: &mut Vec<String>, missing: &mut Vec<String>) {
    if resolver.files().contains(&path) {
        found.push(path);
    } else {
        missing.push(path);
    }
}

/// Matches an import specifier against a mapping's `spec`: equal strings match (with no
/// capture), otherwise `*` in the mapping matches any run of characters. Returns the text the
/// first `*` matched.
fn spec_match(pattern: &str, spec: &str) -> Option<Option<String>> {
    if pattern == spec {
        return Some(None);
    }
    if !pattern.contains('*') {
        return None;
    }
    glob_match(pattern, spec, true).map(Some)
}

/// Most wildcards in one pattern; a pattern with more matches nothing. Matching recurses once
/// per wildcard, so the bound also bounds the stack.
const MAX_WILDCARDS: usize = 32;

/// Glob matching. `*` matches within a path segment (anything when `star_crosses`), `**` across
/// segments. Returns what the first wildcard matched.
///
/// Literal runs are compared in a loop and failed `(pattern, text)` positions are remembered:
/// the plain backtracking matcher recursed once per character (a long pattern matching a long
/// import overflowed the stack and aborted the index run) and was exponential in the wildcards
/// (`*a*a*a...b` against `aaaa...` never finished). This one is at most quadratic.
pub(crate) fn glob_match(pattern: &str, text: &str, star_crosses: bool) -> Option<String> {
    if pattern.matches('*').count() > MAX_WILDCARDS * 2 {
        return None;
    }
    let mut m = Matcher {
        p: pattern.chars().collect(),
        t: text.chars().collect(),
        star_crosses,
        first: None,
        failed: std::collections::HashSet::new(),
    };
    if m.matches(0, 0) {
        Some(m.first.map(|(a, b)| m.t[a..b].iter().collect()).unwrap_or_default())
    } else {
        None
    }
}

/// One glob match in progress.
struct Matcher {
    p: Vec<char>,
    t: Vec<char>,
    star_crosses: bool,
    /// What the first wildcard matched (text positions).
    first: Option<(usize, usize)>,
    /// `(pattern, text)` positions from which the rest cannot match. Pure, because only the
    /// first wildcard writes `first`, and only before it recurses.
    failed: std::collections::HashSet<(usize, usize)>,
}

impl Matcher {
    fn matches(&mut self, mut pi: usize, mut ti: usize) -> bool {
        while let Some(&c) = self.p.get(pi) {
            if c == '*' {
                break;
            }
            if self.t.get(ti) != Some(&c) {
                return false;
            }
            pi += 1;
            ti += 1;
        }
        if pi == self.p.len() {
            return ti == self.t.len();
        }
        if self.failed.contains(&(pi, ti)) {
            return false;
        }
        let double = self.p.get(pi + 1) == Some(&'*');
        let rest = if double { pi + 2 } else { pi + 1 };
        let crosses = double || self.star_crosses;
        for end in ti..=self.t.len() {
            if end > ti && !crosses && self.t[end - 1] == '/' {
                break;
            }
            let is_first = self.first.is_none();
            if is_first {
                self.first = Some((ti, end));
            }
            if self.matches(rest, end) {
                return true;
            }
            if is_first {
                self.first = None;
            }
        }
        self.failed.insert((pi, ti));
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_and_captures() {
        assert_eq!(glob_match("./themes/*", "./themes/dark", true), Some("dark".into()));
        assert_eq!(glob_match("js/*.js", "js/a.js", false), Some("a".into()));
        assert_eq!(glob_match("js/*.js", "js/x/a.js", false), None);
        assert_eq!(glob_match("js/**.js", "js/x/a.js", false), Some("x/a".into()));
        assert_eq!(glob_match("**/loader.js", "a/b/loader.js", false), Some("a/b".into()));
        assert_eq!(glob_match("a/*/c/*", "a/b/c/d", false), Some("b".into()));
        assert_eq!(spec_match("./themes/*", "./themes/*"), Some(None));
        assert_eq!(spec_match("legacy", "legacy"), Some(None));
        assert_eq!(spec_match("legacy", "legacy2"), None);
        assert_eq!(glob_match("a**", "a/b/c", false), Some("/b/c".into()));
        assert_eq!(glob_match("*", "", false), Some("".into()));
        assert_eq!(glob_match("x*y*z", "xAyBz", false), Some("A".into()));
    }
}
