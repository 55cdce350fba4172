//! The corpus a bench runs on: a throw-away home and, for a subset, a copy of the
//! files picked by extension, size and count under the indexer's own rules.

use super::BenchArgs;
use crate::cli::output::Out;
use anyhow::Context;
use serde::Serialize;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

// ---------------------------------------------------------------- scratch space

/// Where the indexed tree came from.
#[derive(Debug, Serialize)]
pub(super) struct CorpusInfo {
    pub(super) source: PathBuf,
    pub(super) indexed_path: PathBuf,
    pub(super) copied_subset: bool,
    pub(super) subset_files: Option<u64>,
    pub(super) subset_bytes: Option<u64>,
}

/// A temporary directory (std only), removed on drop unless kept.
pub(super) struct Scratch {
    /// The temporary directory.
    pub(super) root: PathBuf,
    pub(super) keep: bool,
}

impl Scratch {
    pub(super) fn create(keep: bool) -> anyhow::Result<Scratch> {
        let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let root = std::env::temp_dir().join(format!("docdex-bench-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
        Ok(Scratch { root, keep })
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}

// ---------------------------------------------------------------- corpus

/// Uses the corpus in place, or copies the requested deterministic subset.
pub(super) fn prepare_corpus(
    out: &Out,
    source: &Path,
    scratch: &Scratch,
    args: &BenchArgs,
) -> anyhow::Result<CorpusInfo> {
    let mut info = CorpusInfo {
        source: source.to_path_buf(),
        indexed_path: source.to_path_buf(),
        copied_subset: false,
        subset_files: None,
        subset_bytes: None,
    };
    if !args.wants_subset() {
        return Ok(info);
    }
    let picked = select_subset(source, args)?;
    let dest = scratch.root.join("corpus");
    out.note(&format!("copying {} files into {}", picked.len(), dest.display()));
    for (rel, abs, _) in &picked {
        copy_file(abs, &dest.join(rel))?;
    }
    std::fs::create_dir_all(&dest).with_context(|| format!("creating {}", dest.display()))?;
    info.indexed_path = std::fs::canonicalize(&dest).with_context(|| format!("resolving {}", dest.display()))?;
    info.copied_subset = true;
    info.subset_files = Some(picked.len() as u64);
    info.subset_bytes = Some(picked.iter().map(|p| p.2).sum());
    Ok(info)
}

pub(super) fn copy_file(from: &Path, to: &Path) -> anyhow::Result<()> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::copy(from, to).with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    Ok(())
}

/// Files of the tree (ignore files and hidden entries honoured, like the
/// indexer), sorted by relative path, filtered, then taken in order until a
/// file-count or byte budget would be exceeded. Binary files are passed over.
pub(super) fn select_subset(root: &Path, args: &BenchArgs) -> anyhow::Result<Vec<(String, PathBuf, u64)>> {
    let mut all = list_files(root);
    all.sort_by(|a, b| a.0.cmp(&b.0));
    let max_files = args.max_files.unwrap_or(usize::MAX);
    let max_bytes = args.max_bytes.unwrap_or(u64::MAX);
    let mut picked = Vec::new();
    let mut bytes = 0u64;
    for (rel, abs, size) in all {
        if !keep_path(&rel, size, args) || is_binary(&abs) {
            continue;
        }
        if picked.len() >= max_files || bytes.saturating_add(size) > max_bytes {
            break;
        }
        bytes += size;
        picked.push((rel, abs, size));
    }
    if picked.is_empty() {
        anyhow::bail!("no file of {} matches the subset options", root.display());
    }
    Ok(picked)
}

pub(super) fn list_files(root: &Path) -> Vec<(String, PathBuf, u64)> {
    let mut all = Vec::new();
    for entry in ignore::WalkBuilder::new(root).follow_links(false).build().flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(md) = entry.metadata() else { continue };
        let rel = rel_path(root, entry.path());
        all.push((rel, entry.path().to_path_buf(), md.len()));
    }
    all
}

pub(super) fn keep_path(rel: &str, size: u64, args: &BenchArgs) -> bool {
    let ext_ok = args.ext.is_empty() || {
        let e = Path::new(rel).extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
        args.ext.iter().any(|want| want.trim_start_matches('.').eq_ignore_ascii_case(&e))
    };
    let dir_ok = !rel.split('/').rev().skip(1).any(|d| args.exclude_dir.iter().any(|x| x == d));
    let size_ok = args.max_file_bytes.is_none_or(|m| size <= m);
    ext_ok && dir_ok && size_ok
}

/// A NUL byte in the first 8 KiB (the indexer's rule); unreadable files count as binary.
pub(super) fn is_binary(path: &Path) -> bool {
    let mut buf = Vec::with_capacity(8192);
    match std::fs::File::open(path).and_then(|f| f.take(8192).read_to_end(&mut buf)) {
        Ok(_) => memchr::memchr(0, &buf).is_some(),
        Err(_) => true,
    }
}

/// Parses `14M`, `512K`, `1G`, `1000` (binary multiples).
pub(super) fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_uppercase();
    let t = t.trim_end_matches("IB").trim_end_matches('B');
    let (num, mult) = match t.chars().last() {
        Some('K') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M') => (&t[..t.len() - 1], 1 << 20),
        Some('G') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let n: f64 = num.trim().parse().map_err(|_| format!("bad size {s:?}: use e.g. 14M, 512K or 1000"))?;
    if !n.is_finite() || n < 0.0 {
        return Err(format!("bad size {s:?}"));
    }
    Ok((n * mult as f64) as u64)
}

/// `path` relative to `root`, with `/` separators (as the index names files).
pub(super) fn rel_path(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.to_string_lossy().replace(std::path::MAIN_SEPARATOR, "/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("14M"), Ok(14 << 20));
        assert_eq!(parse_size("20k"), Ok(20 << 10));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert!(parse_size("lots").is_err());
    }
}
