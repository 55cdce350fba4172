//! Where a runner's output places a failure: `path:line[:col]`, made relative to the
//! repository, and the package a go test line names. Below the runner parsers (`parse`,
//! `cargo`, `go_timeout`), which all read it.

use std::path::Path;

/// `path:line` at the end of a location (`/abs/x.test.js:5:3`, `src/lib.rs:10:5`), relative to
/// `root` when it is inside it.
pub(super) fn location(loc: &str, root: &str) -> (Option<String>, Option<u32>) {
    let loc = loc.trim().trim_matches(|c| c == '\'' || c == '"');
    let loc = loc.strip_prefix("file://").unwrap_or(loc);
    let mut parts = loc.rsplitn(3, ':');
    let (a, b, c) = (parts.next(), parts.next(), parts.next());
    let (file, line) = match (a, b, c) {
        (Some(col), Some(line), Some(file)) if col.parse::<u32>().is_ok() && line.parse::<u32>().is_ok() => {
            (file, line.parse().ok())
        }
        (Some(line), Some(file), _) if line.parse::<u32>().is_ok() => {
            let file = match c {
                Some(head) => format!("{head}:{file}"),
                None => file.to_string(),
            };
            return (Some(relative(&file, root)), line.parse().ok());
        }
        _ => return (None, None),
    };
    (Some(relative(file, root)), line)
}

pub(super) fn relative(file: &str, root: &str) -> String {
    let root = root.trim_end_matches('/');
    file.strip_prefix(root).map(|r| r.trim_start_matches('/').to_string()).unwrap_or_else(|| file.to_string())
}

/// A path go test printed (testify's `Error Trace` gives absolute ones) relative to the module's
/// directory `src` when it lies inside it, as given otherwise.
pub(super) fn module_relative(file: &str, src: Option<&Path>) -> String {
    let Some(src) = src.filter(|_| file.starts_with('/')) else { return file.to_string() };
    let inside = |dir: &Path| Path::new(file).strip_prefix(dir).ok().map(|r| r.to_string_lossy().into_owned());
    inside(src)
        .or_else(|| std::fs::canonicalize(src).ok().and_then(|real| inside(&real)))
        .unwrap_or_else(|| file.to_string())
}

/// The package of a go test package line: `ok  \tPKG\t0.01s`, `FAIL\tPKG\t0.01s`, `FAIL\tPKG
/// [build failed]`, `?   \tPKG\t[no test files]`.
pub(super) fn package_line(line: &str) -> Option<&str> {
    let rest = ["ok  \t", "FAIL\t", "?   \t"].iter().find_map(|p| line.strip_prefix(p))?;
    rest.split(['\t', ' ']).next().filter(|p| !p.is_empty())
}
