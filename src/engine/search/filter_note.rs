//! The note of a search that found nothing because its path filter names no indexed file (a
//! typo, a folder spelt in another case): without it, "no results" read as "no such code".

use crate::engine::index::{manifest::Manifest, sources};
use crate::engine::repos::{self, RepoRef};

/// The note for `prefix` (as [`repos::repo_prefix`] gives it) when no indexed file of `repo` is
/// under it, naming a folder that differs only in case. `None` when some file is under it, for
/// a registered source's key (its files are not in the repository's manifest), and before the
/// first index run (nothing is indexed at all, which search says otherwise).
pub fn unmatched(repo: &RepoRef, prefix: &str) -> Option<String> {
    if prefix.starts_with(sources::PREFIX) {
        return None;
    }
    let manifest = Manifest::load(&repo.manifest_path());
    if manifest.files.is_empty() || manifest.files.keys().any(|f| repos::under_prefix(f, prefix)) {
        return None;
    }
    let lower = prefix.to_lowercase();
    let cased = manifest
        .files
        .keys()
        .find(|f| repos::under_prefix(&f.to_lowercase(), &lower))
        .map(|f| format!(" (did you mean {}?)", crate::error::quoted(f.get(..prefix.len()).unwrap_or(f))))
        .unwrap_or_default();
    Some(format!(
        "no indexed file is under {}{cased}: the path filter matches nothing (a repo-relative path, case-sensitive, whole folder names: `src`, not `sr`)",
        crate::error::quoted(prefix)
    ))
}
