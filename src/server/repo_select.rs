//! How a request names a repository: an absolute path, a `file://` URI (what
//! editors and MCP clients send as `rootUri`) or a repo id (the 64-hex
//! fingerprint the server hands out).

use super::error::ApiError;
use crate::error::quoted;
use std::path::PathBuf;

/// A parsed repository selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// A repo id (SHA-256 fingerprint).
    Id(String),
    /// A filesystem path.
    Path(PathBuf),
}

/// Parses a selector; relative paths are refused (the server's working directory means
/// nothing to a client).
pub fn parse_repo_selector(s: &str) -> Result<Selector, ApiError> {
    let s = s.trim();
    if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(Selector::Id(s.to_ascii_lowercase()));
    }
    let path = match s.strip_prefix("file://") {
        Some(rest) => {
            // file:///abs/path or file://localhost/abs/path
            let rest = rest.strip_prefix("localhost").unwrap_or(rest);
            PathBuf::from(percent_decode(rest)?)
        }
        None => PathBuf::from(s),
    };
    if !path.is_absolute() {
        return Err(ApiError::bad_request(format!(
            "repository {} must be an absolute path, a file:// URI or a repo id",
            quoted(s)
        )));
    }
    Ok(Selector::Path(path))
}

fn percent_decode(s: &str) -> Result<String, ApiError> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
            let byte = hex.and_then(|h| u8::from_str_radix(h, 16).ok());
            match byte {
                Some(b) => {
                    out.push(b);
                    i += 3;
                    continue;
                }
                None => return Err(ApiError::bad_request(format!("bad percent-encoding in file URI {}", quoted(s)))),
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).map_err(|_| ApiError::bad_request(format!("file URI {} is not UTF-8", quoted(s))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_parse() {
        assert_eq!(parse_repo_selector("/a/b").unwrap(), Selector::Path("/a/b".into()));
        assert_eq!(parse_repo_selector("file:///a/my%20repo").unwrap(), Selector::Path("/a/my repo".into()));
        assert_eq!(parse_repo_selector("file://localhost/a").unwrap(), Selector::Path("/a".into()));
        let id = "A".repeat(64);
        assert_eq!(parse_repo_selector(&id).unwrap(), Selector::Id("a".repeat(64)));
        assert_eq!(parse_repo_selector("relative/dir").unwrap_err().code, "bad_request");
        assert_eq!(parse_repo_selector("file:///a%zz").unwrap_err().code, "bad_request");
    }
}
