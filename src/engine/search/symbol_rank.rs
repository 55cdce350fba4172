//! Symbol and AST ranking signals (`[search] symbol_ranking_enabled`, `ast_ranking_enabled`
//! and their `chat_*` variants).
//!
//! - **Symbol ranking**: when the query names a symbol (the whole query, or an
//!   identifier-shaped word in it, equals a definition's name ignoring case and `_`), the
//!   chunks holding those definitions are multiplied by a factor that grows with the kind's
//!   weight. When the whole query is the name of a type, function, method, module, macro or
//!   constant, its definitions are also placed above every other hit ("pinned"), so the
//!   definition ranks first however often the name is used elsewhere. Names defined more than
//!   [`MAX_DEFINITIONS`] times (`__init__`, `new`) are not distinctive and get no boost.
//! - **AST ranking**: every chunk indexes the names of the definitions that start in it (the
//!   `defs` field); query terms matching them add BM25 score, so a plain-language query whose
//!   words form a function's name (`expire stale sessions`) finds that function's chunk.

use crate::config::SearchConfig;
use crate::engine::cancel::CancelToken;
use crate::engine::code::query;
use crate::engine::code::store::{norm, SymbolReader};
use std::collections::HashMap;

/// Names with more definitions than this are not distinctive: no boost.
pub const MAX_DEFINITIONS: usize = 64;
/// Boost per unit of kind weight when the whole query is the name.
const WHOLE_QUERY_BOOST: f32 = 2.0;
/// Boost per unit of kind weight when one identifier in a longer query is the name.
const TOKEN_BOOST: f32 = 0.5;
/// Weight of a `defs` match relative to a body match. Tuned on the quality set: 0.25 is the
/// only weight tried (0.1 to 2.0) that lowers none of recall@5, recall@10 and MRR against the
/// index without it (docs/SEARCH.md).
pub const DEFS_BOOST: f32 = 0.25;
/// Queries of at most this many words are also tried joined (`session store` -> `SessionStore`).
const MAX_JOINED_WORDS: usize = 3;
/// Kinds at least this weighty are pinned above other hits when the whole query names them.
const PIN_WEIGHT: f32 = 0.6;

/// Which signals apply to one search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankingFlags {
    /// Boost chunks defining a symbol the query names.
    pub symbols: bool,
    /// Score query terms against the names of definitions in each chunk.
    pub ast: bool,
}

impl RankingFlags {
    /// The flags for a plain search, or for the chat waterfall's repo search.
    pub fn from_config(cfg: &SearchConfig, chat: bool) -> RankingFlags {
        if chat {
            RankingFlags { symbols: cfg.chat_symbol_ranking_enabled, ast: cfg.chat_ast_ranking_enabled }
        } else {
            RankingFlags { symbols: cfg.symbol_ranking_enabled, ast: cfg.ast_ranking_enabled }
        }
    }
}

/// Names to look up for a query: `(normalized name, the whole query is this name)`.
pub fn candidate_names(query: &str) -> Vec<(String, bool)> {
    let words: Vec<&str> = query.split_whitespace().collect();
    let mut out: Vec<(String, bool)> = Vec::new();
    let mut push = |name: String, whole: bool| {
        if name.len() >= 2 && !out.iter().any(|(n, _)| *n == name) {
            out.push((name, whole));
        }
    };
    if (1..=MAX_JOINED_WORDS).contains(&words.len()) {
        // The query's last qualified segment (`Store::size`, `os.path.join`) is the name.
        let joined: String = words
            .iter()
            .map(|w| w.rsplit(['.', ':', '#']).find(|s| !s.is_empty()).unwrap_or(w))
            .collect::<Vec<_>>()
            .join("");
        push(norm(&joined), true);
    }
    for token in query.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$')) {
        if is_identifier_shaped(token) {
            push(norm(token), words.len() == 1);
        }
    }
    out.truncate(6);
    out
}

/// A word that can only be code: `snake_case`, `camelCase`, `PascalCase` with a hump, or
/// letters and digits mixed (`utf8`, `h2o` excluded from plain words by shape).
fn is_identifier_shaped(w: &str) -> bool {
    let b = w.as_bytes();
    if b.len() < 3 || !b.iter().any(|c| c.is_ascii_alphabetic()) {
        return false;
    }
    let underscore = b.iter().skip(1).any(|c| *c == b'_') && b.iter().any(|c| c.is_ascii_alphanumeric());
    let hump = b.windows(2).any(|p| p[0].is_ascii_lowercase() && p[1].is_ascii_uppercase());
    let pascal = b[0].is_ascii_uppercase() && b[1..].iter().any(|c| c.is_ascii_lowercase()) && hump;
    underscore || hump || pascal
}

/// Where the query's named symbols are defined, as boosts on chunks.
#[derive(Debug, Default)]
pub struct DefinitionBoosts {
    /// File id (xxh3 of the path) -> (definition's first line, factor, pinned).
    by_file: HashMap<u64, Vec<(u32, f32, bool)>>,
}

impl DefinitionBoosts {
    /// Looks up candidate names (from [`candidate_names`]) in the symbol store; ends with
    /// [`crate::error::Error::Cancelled`] once `cancel` trips (looked at before each name's
    /// query: a search whose client left stops here too). `typed` is the query as typed: when
    /// it is a name spelt exactly as some weighty definitions are, only those are pinned.
    pub fn lookup_until(
        reader: &SymbolReader,
        names: &[(String, bool)],
        typed: &str,
        cancel: &CancelToken,
    ) -> crate::error::Result<DefinitionBoosts> {
        let mut boosts = DefinitionBoosts::default();
        for (name, whole) in names {
            cancel.check()?;
            let (name, whole) = (name.as_str(), *whole);
            let defs = match query::definitions(reader, name, MAX_DEFINITIONS + 1) {
                Ok(d) => d,
                Err(e) => {
                    tracing::debug!("symbol lookup failed: {e}");
                    continue;
                }
            };
            if defs.is_empty() || defs.len() > MAX_DEFINITIONS {
                continue;
            }
            let per_weight = if whole { WHOLE_QUERY_BOOST } else { TOKEN_BOOST };
            let spelt = if whole { spelt_as_typed(reader, typed) } else { Vec::new() };
            for d in defs {
                let factor = 1.0 + per_weight * d.kind.weight();
                let as_typed = spelt.is_empty() || spelt.iter().any(|(p, l)| *p == d.path && *l == d.line_start);
                let pinned = whole && d.kind.weight() >= PIN_WEIGHT && as_typed;
                let file = xxhash_rust::xxh3::xxh3_64(d.path.as_bytes());
                boosts.by_file.entry(file).or_default().push((d.line_start, factor, pinned));
            }
        }
        Ok(boosts)
    }

    /// No symbol named by the query.
    pub fn is_empty(&self) -> bool {
        self.by_file.is_empty()
    }

    /// Whether any definition is in this file (cheap pre-check before reading line columns).
    pub fn has_file(&self, file: u64) -> bool {
        self.by_file.contains_key(&file)
    }

    /// The factor for a chunk of `file` spanning lines `a..=b` (the largest among the
    /// definitions that start inside it, 1 when none does), and whether the chunk is pinned.
    pub fn factor(&self, file: u64, a: u32, b: u32) -> (f32, bool) {
        let Some(defs) = self.by_file.get(&file) else { return (1.0, false) };
        defs.iter().filter(|(l, _, _)| *l >= a && *l <= b).fold((1.0, false), |(f, p), (_, g, q)| (f.max(*g), p || *q))
    }
}

/// Where the weighty definitions (kinds pinned when the whole query names them) spelt exactly
/// as `typed` are (path, first line): `Worker` means `class Worker`, not `def worker`, though
/// names match ignoring case. Empty when `typed` is no single name or none is spelt so: then
/// every definition of the name is pinned, as before.
fn spelt_as_typed(reader: &SymbolReader, typed: &str) -> Vec<(String, u32)> {
    let single_name = !typed.is_empty() && typed.chars().all(|c| c.is_alphanumeric() || c == '_');
    if !single_name {
        return Vec::new();
    }
    let defs = query::exact_definitions(reader, typed, MAX_DEFINITIONS + 1).unwrap_or_default();
    defs.into_iter().filter(|d| d.kind.weight() >= PIN_WEIGHT).map(|d| (d.path, d.line_start)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_queries() {
        assert_eq!(candidate_names("SessionStore"), vec![("sessionstore".to_string(), true)]);
        assert_eq!(candidate_names("session store"), vec![("sessionstore".to_string(), true)]);
        assert_eq!(candidate_names("os.path.join"), vec![("join".to_string(), true)]);
        let long = candidate_names("where does parse_config read the file from disk");
        assert_eq!(long, vec![("parseconfig".to_string(), false)]);
        assert!(candidate_names("retry a failed network request today").is_empty());
    }

    #[test]
    fn identifier_shapes() {
        assert!(is_identifier_shaped("parse_config"));
        assert!(is_identifier_shaped("getUserName"));
        assert!(is_identifier_shaped("HttpServer"));
        assert!(!is_identifier_shaped("session"));
        assert!(!is_identifier_shaped("Session"));
        assert!(!is_identifier_shaped("_x"));
    }
}
