//! Editing `config.toml` in place: set a few keys of one section and leave every
//! other byte (comments, ordering, other sections, formatting) as the user wrote
//! it. Used by `docdex llm-setup`. The result is parsed back before it is written;
//! if the edit would not produce the wanted values (unusual layouts such as dotted
//! keys or inline tables), nothing is written and the error says what to set by hand.

use super::Config;
use crate::engine::fsutil::write_atomic;
use crate::error::{Error, Result};
use std::path::Path;

/// Sets string `keys` in `[section]` of the config file at `path` (created when missing).
/// Returns the keys whose value changed.
pub fn set_string_keys(path: &Path, section: &str, keys: &[(&str, &str)]) -> Result<Vec<String>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(Error::io("reading", path, e)),
    };
    let (edited, changed) = edit(&text, section, keys);
    if changed.is_empty() {
        return Ok(changed);
    }
    verify(&edited, path, section, keys)?;
    write_atomic(path, edited.as_bytes())?;
    Ok(changed)
}

/// The edited text and the keys that changed.
pub fn edit(text: &str, section: &str, keys: &[(&str, &str)]) -> (String, Vec<String>) {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut changed = Vec::new();
    let header = lines.iter().position(|l| header_name(l).as_deref() == Some(section));
    let Some(header) = header else {
        let mut out = text.to_string();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!("[{section}]\n"));
        for (k, v) in keys {
            out.push_str(&format!("{k} = {}\n", quote(v)));
            changed.push(k.to_string());
        }
        return (out, changed);
    };
    let end = lines[header + 1..].iter().position(|l| header_name(l).is_some()).map_or(lines.len(), |i| header + 1 + i);
    let mut insert_at = header + 1;
    for (i, line) in lines.iter().enumerate().take(end).skip(header + 1) {
        if !line.trim().is_empty() && !line.trim_start().starts_with('#') {
            insert_at = i + 1;
        }
    }
    let mut additions = Vec::new();
    for (key, value) in keys {
        let found = (header + 1..end).find(|&i| line_key(&lines[i]).as_deref() == Some(*key));
        match found {
            Some(i) => {
                if current_string(&lines[i]).as_deref() != Some(*value) {
                    lines[i] = replace_value(&lines[i], value);
                    changed.push(key.to_string());
                }
            }
            None => {
                additions.push(format!("{key} = {}", quote(value)));
                changed.push(key.to_string());
            }
        }
    }
    for (n, add) in additions.into_iter().enumerate() {
        lines.insert(insert_at + n, add);
    }
    let mut out = lines.join("\n");
    if text.ends_with('\n') || text.is_empty() {
        out.push('\n');
    }
    (out, changed)
}

/// `name` for a `[name]` header line (not `[[array]]`), trimmed; `None` otherwise.
fn header_name(line: &str) -> Option<String> {
    let t = line.trim();
    if !t.starts_with('[') || t.starts_with("[[") {
        return None;
    }
    let close = t.find(']')?;
    let rest = t[close + 1..].trim();
    if !rest.is_empty() && !rest.starts_with('#') {
        return None;
    }
    Some(t[1..close].trim().to_string())
}

/// The bare key a `key = value` line sets.
fn line_key(line: &str) -> Option<String> {
    let t = line.trim_start();
    if t.starts_with('#') || t.starts_with('[') {
        return None;
    }
    let (k, _) = t.split_once('=')?;
    Some(k.trim().trim_matches('"').to_string())
}

/// The string value of a `key = "value"` line, if it is a plain basic string.
fn current_string(line: &str) -> Option<String> {
    let (_, v) = line.split_once('=')?;
    let (value, _) = split_string_value(v.trim_start())?;
    Some(value)
}

/// Splits `"value" # comment` into the unescaped value and what follows it.
fn split_string_value(v: &str) -> Option<(String, &str)> {
    let quote = v.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let mut out = String::new();
    let mut escaped = false;
    for (i, c) in v.char_indices().skip(1) {
        if quote == '"' && escaped {
            out.push(match c {
                'n' => '\n',
                't' => '\t',
                other => other,
            });
            escaped = false;
        } else if quote == '"' && c == '\\' {
            escaped = true;
        } else if c == quote {
            return Some((out, &v[i + 1..]));
        } else {
            out.push(c);
        }
    }
    None
}

/// The line with its value replaced, keeping indentation, key spelling and a trailing comment.
fn replace_value(line: &str, value: &str) -> String {
    let Some((key_part, v)) = line.split_once('=') else { return line.to_string() };
    let v = v.trim_start();
    let comment = match split_string_value(v) {
        Some((_, rest)) => rest.trim().strip_prefix('#').map(|c| format!(" #{c}")),
        None => v.find(" #").map(|i| format!(" {}", v[i..].trim())),
    };
    format!("{}= {}{}", key_part.trim_end().to_string() + " ", quote(value), comment.unwrap_or_default())
}

/// A TOML basic string.
fn quote(v: &str) -> String {
    toml::Value::String(v.to_string()).to_string()
}

/// Parses the edited text and checks the section now holds the wanted values.
fn verify(text: &str, path: &Path, section: &str, keys: &[(&str, &str)]) -> Result<()> {
    let manual = || {
        let wanted: Vec<String> = keys.iter().map(|(k, v)| format!("{k} = {}", quote(v))).collect();
        format!("set these under [{section}] yourself: {}", wanted.join(", "))
    };
    Config::parse(text, path).map_err(|e| Error::Config {
        path: path.into(),
        message: format!("editing it automatically would break it ({e}); {}", manual()),
    })?;
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| Error::Config { path: path.into(), message: format!("{e}; {}", manual()) })?;
    // A dotted section (`web.scraper`) is a table inside a table.
    let mut parts = section.split('.');
    let first = parts.next().and_then(|p| table.get(p));
    let sect = parts.fold(first, |t, p| t.and_then(|t| t.get(p)));
    let ok = keys.iter().all(|(k, v)| sect.and_then(|s| s.get(*k)).and_then(|x| x.as_str()) == Some(*v));
    if ok {
        Ok(())
    } else {
        Err(Error::Config {
            path: path.into(),
            message: format!("its layout could not be edited automatically; {}", manual()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const USER: &str = "# my docdex settings\n[core]\nlog_level = \"debug\" # noisy\n\n[llm]\n# which server\nprovider = \"ollama\"\n  default_model = 'old:1b'   # my pick\nbase_url = \"http://127.0.0.1:11434\"\n\n# search knobs\n[search]\ndefault_limit = 5\n";

    #[test]
    fn keys_are_edited_in_place_and_everything_else_kept() {
        let (out, changed) =
            edit(USER, "llm", &[("default_model", "phi3.5:3.8b"), ("embedding_model", "nomic-embed-text")]);
        assert_eq!(changed, ["default_model", "embedding_model"]);
        assert!(out.contains("  default_model = \"phi3.5:3.8b\" # my pick\n"), "{out}");
        assert!(
            out.contains(
                "base_url = \"http://127.0.0.1:11434\"\nembedding_model = \"nomic-embed-text\"\n\n# search knobs"
            ),
            "{out}"
        );
        for kept in
            ["# my docdex settings", "log_level = \"debug\" # noisy", "# which server", "[search]\ndefault_limit = 5\n"]
        {
            assert!(out.contains(kept), "lost {kept:?}: {out}");
        }
        verify(&out, Path::new("c.toml"), "llm", &[("default_model", "phi3.5:3.8b")]).unwrap();
        let (again, changed) = edit(&out, "llm", &[("default_model", "phi3.5:3.8b")]);
        assert!(changed.is_empty());
        assert_eq!(again, out);
    }

    #[test]
    fn a_missing_section_is_appended() {
        let (out, changed) = edit("[core]\nlog_level = \"info\"", "llm", &[("default_model", "m")]);
        assert_eq!(changed, ["default_model"]);
        assert_eq!(out, "[core]\nlog_level = \"info\"\n\n[llm]\ndefault_model = \"m\"\n");
        let (out, _) = edit("", "llm", &[("default_model", "m")]);
        assert_eq!(out, "[llm]\ndefault_model = \"m\"\n");
    }

    #[test]
    fn a_dotted_section_is_edited_in_place() {
        let text = "[web]\nenabled = true\n\n[web.scraper]\nheadless = true\n";
        let (out, changed) = edit(text, "web.scraper", &[("chrome_binary_path", "/usr/bin/chromium")]);
        assert_eq!(changed, ["chrome_binary_path"]);
        verify(&out, Path::new("c.toml"), "web.scraper", &[("chrome_binary_path", "/usr/bin/chromium")]).unwrap();
    }

    #[test]
    fn layouts_that_cannot_be_edited_are_refused() {
        let text = "llm = { default_model = \"x\" }\n";
        let (out, _) = edit(text, "llm", &[("default_model", "y")]);
        assert!(verify(&out, Path::new("c.toml"), "llm", &[("default_model", "y")]).is_err());
    }
}
