//! What pytest itself would collect: `testpaths` and `norecursedirs` from the repository's
//! pytest configuration, so `run-tests --affected` never hands pytest a file the project
//! excludes on purpose. pytest collects any file named on its command line, `norecursedirs` or
//! not, and pytest's own repository keeps test files under `testing/example_scripts` that fail
//! at collection by design: one such file interrupted the whole run ("1 error during
//! collection", 0 of 3,662 tests ran).
//!
//! The configuration is read from the root as pytest looks for it, first match wins:
//! `pytest.toml`, `.pytest.toml`, `pytest.ini`, `.pytest.ini`, `pyproject.toml`
//! (`[tool.pytest]` or `[tool.pytest.ini_options]`), `tox.ini` (`[pytest]`), `setup.cfg`
//! (`[tool:pytest]`).

use regex::Regex;
use std::path::Path;

/// pytest's `norecursedirs` when the configuration sets none.
const DEFAULT_NORECURSE: [&str; 9] =
    ["*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}"];
/// Files named in a note about what was left out, at most.
const NAMED: usize = 5;

/// The parts of a pytest configuration that decide which files it collects.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct PytestConfig {
    /// Where it was read (`pyproject.toml [tool.pytest.ini_options]`), `None` without one.
    pub source: Option<String>,
    /// `testpaths`: where a run without arguments collects (empty: everywhere).
    pub testpaths: Vec<String>,
    /// `norecursedirs`, or pytest's defaults when unset.
    pub norecursedirs: Vec<String>,
}

/// Reads the pytest configuration at `root` (defaults without one, or one that does not parse).
pub(super) fn read(root: &Path) -> PytestConfig {
    let text = |f: &str| std::fs::read_to_string(root.join(f)).ok();
    let found = ["pytest.toml", ".pytest.toml"]
        .iter()
        .find_map(|f| text(f).and_then(|t| from_toml(&t, &["pytest"]).map(|kv| (f.to_string(), kv))))
        .or_else(|| {
            ["pytest.ini", ".pytest.ini"].iter().find_map(|f| {
                // pytest.ini is the configuration even without a [pytest] section.
                text(f).map(|t| (f.to_string(), from_ini(&t, "pytest").unwrap_or_default()))
            })
        })
        .or_else(|| {
            let t = text("pyproject.toml")?;
            from_toml(&t, &["tool", "pytest", "ini_options"])
                .map(|kv| ("pyproject.toml [tool.pytest.ini_options]".to_string(), kv))
                .or_else(|| {
                    from_toml(&t, &["tool", "pytest"]).map(|kv| ("pyproject.toml [tool.pytest]".to_string(), kv))
                })
        })
        .or_else(|| from_ini(&text("tox.ini")?, "pytest").map(|kv| ("tox.ini [pytest]".to_string(), kv)))
        .or_else(|| from_ini(&text("setup.cfg")?, "tool:pytest").map(|kv| ("setup.cfg [tool:pytest]".to_string(), kv)));
    let (source, (testpaths, norecurse)) = match found {
        Some((s, kv)) => (Some(s), kv),
        None => (None, (None, None)),
    };
    PytestConfig {
        source,
        testpaths: testpaths.unwrap_or_default(),
        norecursedirs: norecurse.unwrap_or_else(|| DEFAULT_NORECURSE.iter().map(|s| s.to_string()).collect()),
    }
}

/// `testpaths` and `norecursedirs` of one configuration, each `None` when unset.
type Keys = (Option<Vec<String>>, Option<Vec<String>>);

/// The keys from the TOML table at `table` (`None` when the file has no such table).
fn from_toml(text: &str, table: &[&str]) -> Option<Keys> {
    let doc: toml::Table = toml::from_str(text).ok()?;
    let mut t = &doc;
    for key in table {
        t = t.get(*key)?.as_table()?;
    }
    let list = |k: &str| {
        t.get(k).map(|v| match v {
            toml::Value::Array(a) => a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect(),
            toml::Value::String(s) => split_args(s),
            _ => Vec::new(),
        })
    };
    Some((list("testpaths"), list("norecursedirs")))
}

/// The keys from section `section` of an INI file (`None` without the section). Values are
/// pytest's "args": whitespace-separated, continued on indented lines.
fn from_ini(text: &str, section: &str) -> Option<Keys> {
    let mut inside = false;
    let mut seen = false;
    let mut values: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') && trimmed.ends_with(']') {
            inside = trimmed[1..trimmed.len() - 1].trim() == section;
            seen |= inside;
            continue;
        }
        if !inside || trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            if let Some((_, v)) = values.last_mut() {
                v.push(' ');
                v.push_str(trimmed);
            }
        } else if let Some((k, v)) = trimmed.split_once(['=', ':']) {
            values.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    if !seen {
        return None;
    }
    let get = |k: &str| values.iter().rev().find(|(key, _)| key == k).map(|(_, v)| split_args(v));
    Some((get("testpaths"), get("norecursedirs")))
}

/// Whitespace-separated words, quotes around a word taken off.
fn split_args(value: &str) -> Vec<String> {
    value.split_whitespace().map(|w| w.trim_matches(|c| c == '"' || c == '\'').to_string()).collect()
}

/// Python's `fnmatch` as a regex: `*` matches anything (a `/` too), `?` one character,
/// `[seq]` / `[!seq]` a set.
fn fnmatch_regex(pattern: &str) -> Option<Regex> {
    let mut re = String::from("^");
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            '[' => {
                let mut set = String::new();
                let mut closed = false;
                for d in chars.by_ref() {
                    if d == ']' && !set.is_empty() {
                        closed = true;
                        break;
                    }
                    set.push(d);
                }
                if closed {
                    let (neg, body) = set.strip_prefix('!').map_or((false, set.as_str()), |b| (true, b));
                    let body = body.replace('\\', "\\\\").replace('[', "\\[");
                    re.push_str(&format!("[{}{body}]", if neg { "^" } else { "" }));
                } else {
                    re.push_str(&regex::escape(&format!("[{set}")));
                }
            }
            c => re.push_str(&regex::escape(&c.to_string())),
        }
    }
    re.push('$');
    Regex::new(&re).ok()
}

/// pytest's `fnmatch_ex` on directory `dir` (absolute): a pattern without `/` matches the
/// directory's name, one with `/` its whole path (as `*/PATTERN`).
fn norecurse_matches(pattern: &str, dir: &str) -> bool {
    let (subject, pattern) = if pattern.contains('/') {
        let p = if pattern.starts_with('/') { pattern.to_string() } else { format!("*/{pattern}") };
        (dir, p)
    } else {
        (dir.rsplit('/').next().unwrap_or(dir), pattern.to_string())
    };
    fnmatch_regex(&pattern).is_some_and(|r| r.is_match(subject))
}

/// Where `file` starts inside `testpaths` (the length of the matched test path), `None` when
/// outside all of them. A test path may be a glob, as pytest expands it.
fn within_testpaths(file: &str, testpaths: &[String]) -> Option<usize> {
    testpaths.iter().find_map(|tp| {
        let tp = tp.trim_start_matches("./").trim_end_matches('/');
        if tp.is_empty() || tp == "." {
            return Some(0);
        }
        if tp.contains(['*', '?', '[']) {
            let glob = globset::GlobBuilder::new(tp).literal_separator(true).build().ok()?.compile_matcher();
            let mut at = 0;
            for part in file.split('/') {
                at += part.len();
                if glob.is_match(&file[..at]) {
                    return Some(at);
                }
                at += 1;
            }
            return None;
        }
        (file == tp || file.starts_with(&format!("{tp}/"))).then_some(tp.len())
    })
}

/// Why pytest would not collect `file` (repo-relative) in a run of its own configuration, or
/// `None` when it would.
fn excluded(root: &Path, cfg: &PytestConfig, file: &str) -> Option<String> {
    let from = if cfg.testpaths.is_empty() { 0 } else { within_testpaths(file, &cfg.testpaths)? };
    let root = root.to_string_lossy();
    let root = root.trim_end_matches('/');
    let dirs = file.rsplit_once('/').map_or("", |(d, _)| d);
    let mut at = 0;
    for part in dirs.split('/').filter(|p| !p.is_empty()) {
        at += part.len();
        if at > from {
            let dir = format!("{root}/{}", &dirs[..at]);
            if let Some(p) = cfg.norecursedirs.iter().find(|p| norecurse_matches(p, &dir)) {
                return Some(format!("norecursedirs '{p}'"));
            }
        }
        at += 1;
    }
    None
}

/// Splits `selected` (repo-relative files with why) into what pytest collects and a note on
/// what it does not (outside `testpaths`, inside `norecursedirs`), `None` when all stay.
pub(super) fn keep_collected(root: &Path, selected: Vec<(String, String)>) -> (Vec<(String, String)>, Option<String>) {
    let cfg = read(root);
    let mut kept = Vec::new();
    let mut dropped: Vec<(String, String)> = Vec::new();
    for (path, why) in selected {
        let reason = if !cfg.testpaths.is_empty() && within_testpaths(&path, &cfg.testpaths).is_none() {
            Some(format!("outside testpaths ({})", cfg.testpaths.join(", ")))
        } else {
            excluded(root, &cfg, &path)
        };
        match reason {
            Some(r) => dropped.push((path, r)),
            None => kept.push((path, why)),
        }
    }
    (kept, note(&cfg, &dropped))
}

/// "pytest does not collect 14 of the selected test files, so they were not run: ..."
fn note(cfg: &PytestConfig, dropped: &[(String, String)]) -> Option<String> {
    if dropped.is_empty() {
        return None;
    }
    let mut reasons: Vec<(&str, Vec<&str>)> = Vec::new();
    for (path, why) in dropped {
        match reasons.iter_mut().find(|(r, _)| r == why) {
            Some((_, paths)) => paths.push(path),
            None => reasons.push((why, vec![path])),
        }
    }
    let parts: Vec<String> = reasons
        .iter()
        .map(|(why, paths)| {
            let mut named = paths.iter().take(NAMED).copied().collect::<Vec<_>>().join(", ");
            if paths.len() > NAMED {
                named.push_str(&format!(", {} more", paths.len() - NAMED));
            }
            format!("{} {why}: {named}", paths.len())
        })
        .collect();
    let source = cfg.source.as_deref().unwrap_or("pytest's defaults, no configuration found");
    Some(format!(
        "pytest's configuration ({source}) does not collect {}, so {} not run: {}",
        crate::engine::fsutil::count(dropped.len(), "selected test file"),
        if dropped.len() == 1 { "it was" } else { "they were" },
        parts.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnmatch_follows_python() {
        assert!(norecurse_matches(".*", "/r/.git"));
        assert!(norecurse_matches("*.egg", "/r/a/foo.egg"));
        assert!(norecurse_matches("{arch}", "/r/{arch}"));
        assert!(!norecurse_matches("build", "/r/builder"));
        assert!(norecurse_matches("testing/example_scripts", "/r/testing/example_scripts"));
        assert!(!norecurse_matches("testing/example_scripts", "/r/testing/example_scriptsx"));
        assert!(norecurse_matches("[!a]x", "/r/bx") && !norecurse_matches("[!a]x", "/r/ax"));
    }

    #[test]
    fn every_config_file_pytest_reads_is_read_in_its_order() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert_eq!(read(root).norecursedirs.len(), DEFAULT_NORECURSE.len());
        std::fs::write(root.join("setup.cfg"), "[metadata]\nname = x\n[tool:pytest]\ntestpaths = t1\n").unwrap();
        assert_eq!(read(root).testpaths, ["t1"]);
        std::fs::write(root.join("tox.ini"), "[tox]\n[pytest]\ntestpaths =\n    t2\n    t3\nnorecursedirs = a b\n")
            .unwrap();
        let c = read(root);
        assert_eq!(
            (c.testpaths, c.norecursedirs),
            (vec!["t2".to_string(), "t3".into()], vec!["a".to_string(), "b".into()])
        );
        // A pyproject.toml without pytest's table is not pytest's configuration.
        std::fs::write(root.join("pyproject.toml"), "[project]\nname = \"x\"\n").unwrap();
        assert_eq!(read(root).source.as_deref(), Some("tox.ini [pytest]"));
        std::fs::write(root.join("pyproject.toml"), "[tool.pytest.ini_options]\ntestpaths = [\"t4\"]\n").unwrap();
        assert_eq!(read(root).testpaths, ["t4"]);
        // pytest.ini wins, even without a [pytest] section: defaults then.
        std::fs::write(root.join("pytest.ini"), "").unwrap();
        let c = read(root);
        assert!(c.testpaths.is_empty() && c.norecursedirs.contains(&"build".to_string()), "{c:?}");
    }

    #[test]
    fn files_pytest_would_not_collect_are_left_out_with_why() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join("pyproject.toml"),
            "[tool.pytest.ini_options]\ntestpaths = [\"testing\"]\nnorecursedirs = [\"testing/example_scripts\", \".*\"]\n",
        )
        .unwrap();
        let sel = |p: &str| (p.to_string(), "why".to_string());
        let (kept, note) = keep_collected(
            root,
            vec![
                sel("testing/test_a.py"),
                sel("testing/example_scripts/acceptance/test_b.py"),
                sel("doc/en/test_c.py"),
                sel("testing/sub/test_d.py"),
            ],
        );
        let kept: Vec<&str> = kept.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(kept, ["testing/test_a.py", "testing/sub/test_d.py"]);
        let note = note.unwrap();
        assert!(
            note.contains("(pyproject.toml [tool.pytest.ini_options]) does not collect 2 selected test files"),
            "{note}"
        );
        assert!(
            note.contains("1 norecursedirs 'testing/example_scripts': testing/example_scripts/acceptance/test_b.py"),
            "{note}"
        );
        assert!(note.contains("1 outside testpaths (testing): doc/en/test_c.py"), "{note}");
        // Without a configuration, pytest's defaults: build/ is not collected.
        std::fs::remove_file(root.join("pyproject.toml")).unwrap();
        let (kept, note) = keep_collected(root, vec![sel("build/tests/test_x.py"), sel("tests/test_y.py")]);
        assert_eq!(kept.len(), 1);
        assert!(note.unwrap().contains("pytest's defaults"));
    }
}
