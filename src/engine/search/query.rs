//! What a query asks for, before it meets the index: its terms with weights, and the
//! identifiers its adjacent words could spell.
//!
//! - **Task words** ("fix", "add", "support", "instead", "properly", ...) describe the change a
//!   developer wants, not the code that has to change, so their terms weigh
//!   [`TASK_WORD_WEIGHT`] instead of 1 (a query made only of them still finds something).
//! - **Joined words**: two adjacent content words are also looked up joined, the way the
//!   analyzer writes a multi-part identifier whole (`event loop` -> `eventloop`, which
//!   `event_loop` and `eventLoop` index as), at [`JOINED_WEIGHT`]: a description that names a
//!   concept the code spells as one identifier finds it.
//!
//! Measured on the eval-dev tuning projects (docs/SEARCH.md).

use crate::engine::analysis;
use std::collections::HashSet;
use std::sync::LazyLock;

/// Weight of a task word's terms relative to other terms (0.3 ranked best among 0 to 1 on the
/// tuning projects; 0 would drop words some queries need).
pub const TASK_WORD_WEIGHT: f32 = 0.3;
/// Weight of a joined pair of adjacent words.
pub const JOINED_WEIGHT: f32 = 0.5;
/// At most this many joined pairs per query (long descriptions).
const MAX_JOINED: usize = 12;

/// Words that say what kind of change is wanted rather than where: commit and issue
/// vocabulary in general use, not taken from any evaluation set.
const TASK_WORDS: &[&str] = &[
    "fix",
    "fixes",
    "fixed",
    "fixing",
    "bug",
    "bugs",
    "issue",
    "issues",
    "add",
    "adds",
    "added",
    "adding",
    "support",
    "supports",
    "supported",
    "allow",
    "allows",
    "allowed",
    "change",
    "changes",
    "changed",
    "update",
    "updates",
    "updated",
    "remove",
    "removes",
    "removed",
    "make",
    "makes",
    "made",
    "use",
    "uses",
    "used",
    "using",
    "now",
    "new",
    "properly",
    "correctly",
    "correct",
    "incorrect",
    "incorrectly",
    "instead",
    "handle",
    "handles",
    "handled",
    "handling",
    "ensure",
    "ensures",
    "avoid",
    "avoids",
    "prevent",
    "prevents",
    "previously",
    "previous",
    "currently",
    "current",
    "case",
    "cases",
    "need",
    "needs",
    "needed",
    "improve",
    "improves",
    "improved",
    "better",
    "problem",
    "problems",
    "behavior",
    "behaviour",
    "work",
    "works",
    "working",
    "break",
    "breaks",
    "breaking",
    "commit",
    "refactor",
    "cleanup",
    "clean",
    "don",
    "doesn",
    "didn",
    "isn",
    "wasn",
    "won",
    "shouldn",
    "can",
    "cannot",
    "also",
    "like",
    "able",
    "possible",
    "actually",
    "way",
    "ways",
    "rather",
];

/// The terms task words analyze to.
static TASK_TERMS: LazyLock<HashSet<String>> =
    LazyLock::new(|| TASK_WORDS.iter().flat_map(|w| analysis::terms(w)).collect());

/// A query ready to be turned into index clauses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueryPlan {
    /// Distinct analyzed terms with their weights, in query order.
    pub terms: Vec<(String, f32)>,
    /// Adjacent content words joined (`eventloop`), each a single term.
    pub joined: Vec<String>,
}

impl QueryPlan {
    /// Plans `query`.
    pub fn of(query: &str) -> QueryPlan {
        let terms = analysis::query_terms(query)
            .into_iter()
            .map(|t| {
                let w = if TASK_TERMS.contains(&t) { TASK_WORD_WEIGHT } else { 1.0 };
                (t, w)
            })
            .collect::<Vec<_>>();
        let words: Vec<String> =
            query.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(analysis::fold).collect();
        let content = |w: &str| {
            let t = analysis::terms(w);
            !t.is_empty() && !t.iter().all(|t| TASK_TERMS.contains(t))
        };
        let mut joined: Vec<String> = Vec::new();
        for pair in words.windows(2) {
            if joined.len() >= MAX_JOINED {
                break;
            }
            let j = pair.concat();
            if content(&pair[0])
                && content(&pair[1])
                && j.len() <= analysis::MAX_WORD_BYTES
                && !joined.contains(&j)
                && !terms.iter().any(|(t, _)| *t == j)
            {
                joined.push(j);
            }
        }
        QueryPlan { terms, joined }
    }

    /// The terms alone (for confidence and snippets).
    pub fn term_list(&self) -> Vec<String> {
        self.terms.iter().map(|(t, _)| t.clone()).collect()
    }

    /// No term at all: nothing to search for.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pairs are folded as the index folds identifiers: `caféCrème` is indexed `cafecreme`.
    #[test]
    fn joined_pairs_are_folded_like_indexed_words() {
        let p = QueryPlan::of("café crème recipe");
        assert!(p.joined.contains(&"cafecreme".to_string()), "{:?}", p.joined);
        assert!(crate::engine::analysis::terms("caféCrème").contains(&"cafecreme".to_string()));
    }

    #[test]
    fn task_words_weigh_less_and_adjacent_words_are_joined() {
        let p = QueryPlan::of("Fix the event loop when a worker shuts down properly");
        let w = |t: &str| p.terms.iter().find(|(x, _)| x == t).map(|(_, w)| *w);
        assert_eq!(w("fix"), Some(TASK_WORD_WEIGHT));
        assert_eq!(w("proper"), Some(TASK_WORD_WEIGHT));
        assert_eq!(w("event"), Some(1.0));
        assert_eq!(w("worker"), Some(1.0));
        assert!(p.joined.contains(&"eventloop".to_string()), "{:?}", p.joined);
        // Neither function words nor task words form pairs.
        assert!(!p.joined.iter().any(|j| j.starts_with("fix") || j.contains("the")), "{:?}", p.joined);
        assert!(p.joined.contains(&"shutsdown".to_string()));
    }

    #[test]
    fn a_query_of_task_words_still_has_terms() {
        let p = QueryPlan::of("fix it");
        assert_eq!(p.terms, [("fix".to_string(), TASK_WORD_WEIGHT)]);
        assert!(p.joined.is_empty());
        assert!(QueryPlan::of("the of and").is_empty());
    }
}
