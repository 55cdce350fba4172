//! Runtime import traces: edges a running program was seen to take, for the imports static
//! analysis cannot resolve (plugin loaders, computed module names).
//!
//! Two files are read, both optional, one JSON object per line:
//! `docdex.import_traces.jsonl` at the repository root (checked in by the team) and
//! `import_traces.jsonl` in the repo's state directory (written by local tooling):
//!
//! ```json
//! {"source": "app/loader.py", "target": "app/plugins/csv_export.py", "line": 12}
//! ```
//!
//! `source` and `target` are repository files (relative, or absolute under the root); `line`
//! (the import's line in `source`), `kind` (default `runtime`) and `confidence` (default 0.9)
//! are optional. A trace whose `line` is the line of an unresolved dynamic import of `source`
//! resolves that diagnostic. Bad lines become warnings naming the file and line; they never
//! stop the graph from being built.

use serde::Deserialize;
use std::collections::BTreeSet;
use std::path::Path;

/// The file read at the repository root.
pub const REPO_FILE: &str = "docdex.import_traces.jsonl";
/// The file read in the repo's state directory.
pub const STATE_FILE: &str = "import_traces.jsonl";
/// Confidence of a traced edge that does not state its own.
pub const DEFAULT_CONFIDENCE: f32 = 0.9;

/// One observed import.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceEdge {
    /// The importing file (repo-relative).
    pub source: String,
    /// The imported file (repo-relative).
    pub target: String,
    /// The import's line in `source`, when the trace knows it.
    pub line: Option<u32>,
    /// The statement form, `runtime` unless the trace says.
    pub kind: String,
    /// 0..1.
    pub confidence: f32,
}

#[derive(Deserialize)]
struct Line {
    source: String,
    target: String,
    #[serde(default)]
    line: Option<u32>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    confidence: Option<f32>,
}

/// The traces of the repository at `root` (and its state directory, when given), with
/// warnings for lines that could not be used. `known` holds the repository's files.
pub fn load(root: &Path, state_dir: Option<&Path>, known: &BTreeSet<String>) -> (Vec<TraceEdge>, Vec<String>) {
    let mut edges = Vec::new();
    let mut warnings = Vec::new();
    let files = std::iter::once((root.join(REPO_FILE), true)).chain(state_dir.map(|d| (d.join(STATE_FILE), false)));
    for (path, in_repo) in files {
        let read = match in_repo {
            true => super::import_map::read_hint_file(root, REPO_FILE),
            false => read_state_file(&path),
        };
        let text = match read {
            Ok(Some(text)) => text,
            Ok(None) => continue,
            Err(why) => {
                warnings.push(format!("{}: cannot read import traces: {why}", path.display()));
                continue;
            }
        };
        for (i, raw) in text.lines().enumerate() {
            match parse_line(root, raw, known) {
                Ok(Some(edge)) => edges.push(edge),
                Ok(None) => {}
                Err(why) => warnings.push(format!("{}:{}: import trace ignored: {why}", path.display(), i + 1)),
            }
        }
    }
    (edges, warnings)
}

/// The state directory's traces (docdex's own folder): a regular file of at most
/// [`super::import_map::MAX_HINT_BYTES`], `Ok(None)` when absent.
fn read_state_file(path: &Path) -> Result<Option<String>, String> {
    let max = super::import_map::MAX_HINT_BYTES;
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.to_string()),
        Ok(m) if !m.is_file() => Err("not a regular file".to_string()),
        Ok(m) if m.len() > max => Err(format!("it is over the {} MiB a hints file may hold", max >> 20)),
        Ok(_) => Ok(crate::engine::fsutil::read_regular_text(path, None, max)),
    }
}

/// One line: `Ok(None)` for blank lines and `#` comments.
fn parse_line(root: &Path, raw: &str, known: &BTreeSet<String>) -> Result<Option<TraceEdge>, String> {
    let raw = raw.trim();
    if raw.is_empty() || raw.starts_with('#') {
        return Ok(None);
    }
    let line: Line = serde_json::from_str(raw).map_err(|e| format!("not a trace object ({e})"))?;
    let source = repo_file(root, &line.source, known)?;
    let target = repo_file(root, &line.target, known)?;
    if source == target {
        return Err(format!("{source} imports itself"));
    }
    let confidence = line.confidence.unwrap_or(DEFAULT_CONFIDENCE);
    if !(0.0..=1.0).contains(&confidence) {
        return Err(format!("confidence {confidence} is outside 0..1"));
    }
    let kind = line.kind.filter(|k| !k.trim().is_empty()).unwrap_or_else(|| "runtime".into());
    Ok(Some(TraceEdge { source, target, line: line.line.filter(|&l| l > 0), kind, confidence }))
}

/// `path` as a repo-relative file that the index knows.
fn repo_file(root: &Path, path: &str, known: &BTreeSet<String>) -> Result<String, String> {
    let rel = crate::engine::repos::repo_relative(root, path).map_err(|_| format!("{path} leaves the repository"))?;
    if known.contains(&rel) {
        Ok(rel)
    } else {
        Err(format!("{path} is not an indexed file of the repository"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known() -> BTreeSet<String> {
        ["app/loader.py", "app/plugins/csv.py"].iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn lines_become_edges_or_named_warnings() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let abs = root.join("app/plugins/csv.py");
        let text = format!(
            "# observed in staging\n\n{}\n{}\nnot json\n{}\n{}\n",
            r#"{"source": "app/loader.py", "target": "./app/plugins/csv.py", "line": 12}"#,
            serde_json::json!({"source": "app/plugins/csv.py", "target": "app/loader.py", "kind": "callback", "confidence": 0.5}),
            r#"{"source": "app/loader.py", "target": "app/gone.py"}"#,
            r#"{"source": "app/loader.py", "target": "../etc/passwd"}"#,
        );
        std::fs::write(root.join(REPO_FILE), text).unwrap();
        let state = tempfile::tempdir().unwrap();
        let line = serde_json::json!({"source": "app/loader.py", "target": abs.to_string_lossy()});
        std::fs::write(state.path().join(STATE_FILE), format!("{line}\n")).unwrap();

        let (edges, warnings) = load(root, Some(state.path()), &known());
        assert_eq!(edges.len(), 3, "{edges:?}");
        assert_eq!(
            edges[0],
            TraceEdge {
                source: "app/loader.py".into(),
                target: "app/plugins/csv.py".into(),
                line: Some(12),
                kind: "runtime".into(),
                confidence: DEFAULT_CONFIDENCE
            }
        );
        assert_eq!((edges[1].kind.as_str(), edges[1].confidence), ("callback", 0.5));
        assert_eq!(edges[2].target, "app/plugins/csv.py", "absolute paths under the root are made relative");
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(
            warnings[0].ends_with(":5: import trace ignored: not a trace object (expected ident at line 1 column 2)")
        );
        assert!(warnings[1].contains(":6:") && warnings[1].contains("app/gone.py is not an indexed file"));
        assert!(warnings[2].contains("leaves the repository"));
    }

    #[test]
    fn no_files_no_edges() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(dir.path(), None, &known()), (vec![], vec![]));
    }
}
