//! Where a runner's output places a failure: `path:line[:col]`, made relative to the
//! repository. Below the runner parsers (`parse`, `cargo`), which both read it.

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
