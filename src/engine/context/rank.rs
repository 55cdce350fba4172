//! The order a pack takes the changed files in. They were taken in path order, so on a branch
//! of many changes the budget went to `Cargo.lock`, `README.md` and `docs/` and every search hit
//! for the task was left out (tour13 F15). Now the files the task is about come first:
//!
//! 1. the changed files search found for the task, best hit first;
//! 2. the others whose path or changed lines hold one of the task's terms (code, then tests,
//!    then documents and configuration, then changelogs; more of the terms first);
//! 3. the rest, in the same order of kinds;
//! 4. lockfiles, generated or vendored files and test snapshots ([`is_bulk`]), whatever they hold:
//!    the pack offers their hunks after everything else.

use super::types::ChangedFile;
use crate::engine::analysis;
use crate::engine::index::files::{classify, language, FileClass};
use std::collections::HashSet;
use std::path::Path;

/// Bytes of a changed file's text (its patch, or an untracked file's first lines) searched for
/// the task's terms.
pub const TEXT_BYTES: usize = 8 * 1024;

/// A changed file's kind, as the ranking orders them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Code,
    Test,
    Other,
    History,
    Bulk,
}

fn kind(path: &str) -> Kind {
    if is_bulk(path) {
        return Kind::Bulk;
    }
    match classify(path, language(Path::new(path))) {
        FileClass::Source | FileClass::Example => Kind::Code,
        FileClass::Test => Kind::Test,
        FileClass::Changelog => Kind::History,
        _ => Kind::Other,
    }
}

/// A lockfile, a generated, minified or vendored file, or a test snapshot (`*.snap`, insta's
/// and jest's `__snapshots__/`): changed in bulk by tools, rarely what a task is about.
pub fn is_bulk(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    let snapshot = lower.ends_with(".snap")
        || lower.ends_with(".snap.new")
        || lower.split('/').rev().skip(1).any(|d| d == "__snapshots__");
    snapshot || matches!(classify(path, language(Path::new(path))), FileClass::Lockfile | FileClass::Generated)
}

/// A changed file's place: bulk last, then its hit's rank, no term matched, its kind, more terms
/// matched first.
type Key = (bool, usize, bool, Kind, std::cmp::Reverse<usize>);

/// The indices of `files` in the order a pack takes them for a task of `terms` whose search
/// hits are in the files `hits` (best first); `text` gives the part of a file's change to look for the terms in
/// (at most [`TEXT_BYTES`] are read of it).
pub fn order(
    files: &[ChangedFile],
    hits: &[&str],
    terms: &[String],
    mut text: impl FnMut(&ChangedFile) -> Option<String>,
) -> Vec<usize> {
    let mut keyed: Vec<(usize, Key)> = files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let kind = kind(&f.path);
            let hit = hits.iter().position(|h| *h == f.path).filter(|_| kind != Kind::Bulk);
            let matched = if kind == Kind::Bulk { 0 } else { matched_terms(&f.path, text(f).as_deref(), terms) };
            (i, (kind == Kind::Bulk, hit.unwrap_or(usize::MAX), matched == 0, kind, std::cmp::Reverse(matched)))
        })
        .collect();
    // Stable: files alike stay in path order.
    keyed.sort_by_key(|(_, key)| *key);
    keyed.into_iter().map(|(i, _)| i).collect()
}

/// How many of `terms` the path or the text holds (as the analyzer reads words: `kill_group`
/// holds `kill` and `group`).
fn matched_terms(path: &str, text: Option<&str>, terms: &[String]) -> usize {
    let mut bounded = text.unwrap_or_default();
    if bounded.len() > TEXT_BYTES {
        let mut end = TEXT_BYTES;
        while !bounded.is_char_boundary(end) {
            end -= 1;
        }
        bounded = &bounded[..end];
    }
    let found: HashSet<String> = analysis::terms(path).into_iter().chain(analysis::terms(bounded)).collect();
    terms.iter().filter(|t| found.contains(*t)).count()
}

/// The lines a patch (from its first hunk on, so no file headers) adds or removes, not its
/// hunk headers or context lines: what the change holds.
pub fn changed_lines(patch: &str) -> String {
    let mut out = String::new();
    for line in patch.lines() {
        if out.len() >= TEXT_BYTES {
            break;
        }
        if let Some(body) = line.strip_prefix('+').or_else(|| line.strip_prefix('-')) {
            out.push_str(body);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::context::types::ChangeState;

    fn changed(path: &str) -> ChangedFile {
        ChangedFile {
            path: path.into(),
            change: "modified".into(),
            states: vec![ChangeState::Committed],
            old_path: None,
        }
    }

    #[test]
    fn hits_then_code_holding_the_task_then_the_rest_and_lockfiles_and_snapshots_last() {
        let paths = [
            "Cargo.lock",
            "README.md",
            "docs/LEDGER.md",
            "snapshots/tui_ledger.snap",
            "src/api.rs",
            "src/ledger.rs",
            "src/refund.rs",
            "tests/refund_flow.rs",
            "web/app.min.js",
        ];
        let files: Vec<ChangedFile> = paths.iter().map(|p| changed(p)).collect();
        let text = |f: &ChangedFile| match f.path.as_str() {
            "README.md" => Some("Refunds post ledger entries.".to_string()),
            "src/api.rs" => Some("fn route() {}".to_string()),
            "Cargo.lock" | "snapshots/tui_ledger.snap" => Some("refund ledger".to_string()),
            _ => None,
        };
        let terms = analysis::query_terms("refund ledger entries");
        let got: Vec<&str> =
            order(&files, &["src/refund.rs", "Cargo.lock"], &terms, text).iter().map(|&i| paths[i]).collect();
        assert_eq!(
            got,
            [
                "src/refund.rs",
                "src/ledger.rs",
                "tests/refund_flow.rs",
                "README.md",
                "docs/LEDGER.md",
                "src/api.rs",
                "Cargo.lock",
                "snapshots/tui_ledger.snap",
                "web/app.min.js",
            ]
        );
    }

    #[test]
    fn changed_lines_are_the_added_and_removed_lines_only() {
        let patch = "@@ -1,3 +1,3 @@\n context\n-old line\n+new line\n--- removed -- line\n";
        assert_eq!(changed_lines(patch), "old line\nnew line\n-- removed -- line\n");
    }
}
