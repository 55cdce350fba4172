//! Documentation from the installed sources of a dependency, offline: the cargo registry's
//! unpacked crates (README, `//!` crate docs and `///` docs of public items in `src/`), the
//! project's `node_modules` (README, description), and its virtualenv's `site-packages`
//! (the distribution's METADATA long description, module and function/class docstrings).

use super::detect::{normalize_py, site_packages};
use super::types::{Dependency, Ecosystem};
use crate::engine::fsutil;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Text kept per package from its installed sources, at most.
pub const MAX_LOCAL_BYTES: usize = 400_000;
/// Source files read per package, at most.
pub(super) const MAX_FILES: usize = 200;

/// Bytes read from one installed file, at most (a README or module past this is cut).
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The text of an installed file, bounded (see [`fsutil::read_regular_text`]): at most
/// [`MAX_FILE_BYTES`]; not when its real path leaves `inside`, the package's own location (a
/// link in it to `/etc/passwd` or `~/.ssh` is no package's README); not when it is binary by
/// the indexer's rule (a NUL byte early on: junk in the libs index and in chat's context).
pub(super) fn read_text(path: &Path, inside: &Path) -> Option<String> {
    let text = fsutil::read_regular_text(path, Some(inside), MAX_FILE_BYTES)?;
    if fsutil::looks_binary(text.as_bytes()) {
        tracing::debug!(path = %path.display(), "binary installed file: not read");
        return None;
    }
    Some(text)
}

/// One document of a package.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LibDoc {
    /// README, an item's signature, a module.
    pub title: String,
    /// The file (relative to the package) or URL it came from.
    pub source: String,
    /// The text (Markdown or plain).
    pub text: String,
}

/// Where installed packages live.
#[derive(Debug, Clone)]
pub struct Roots {
    /// `$CARGO_HOME` (`[libs] cargo_home`, else the environment, else `~/.cargo`).
    pub cargo_home: PathBuf,
    /// The repository.
    pub repo: PathBuf,
}

/// The docs of `dep` from its installed sources (empty when it is not installed), and whether
/// they were cut at [`MAX_LOCAL_BYTES`].
pub fn docs(dep: &Dependency, roots: &Roots) -> (Vec<LibDoc>, bool) {
    let mut out = match dep.ecosystem {
        Ecosystem::Crates => crate_docs(dep, roots),
        Ecosystem::Npm => npm_docs(dep, roots),
        Ecosystem::Pypi => py_docs(dep, roots),
    };
    let cut = cap(&mut out, MAX_LOCAL_BYTES);
    (out, cut)
}

/// Why `dep` has no installed docs, for its notes: not installed here at all, installed at
/// another version (whose docs would describe another release), or installed but shipping
/// nothing docdex reads (a package without a README, description or doc comments was said to
/// be "not installed", which sent users to install what they had).
pub fn no_docs_note(dep: &Dependency, roots: &Roots) -> String {
    let installed = match dep.ecosystem {
        Ecosystem::Crates => crate_dir(&dep.name, &dep.version, &roots.cargo_home).map(|_| dep.version.clone()),
        Ecosystem::Npm => npm_installed_version(dep, roots),
        Ecosystem::Pypi => {
            site_packages(&roots.repo, true).iter().find_map(|sp| dist_info(sp, dep)).map(|_| dep.version.clone())
        }
    };
    match installed {
        None => NOT_INSTALLED.into(),
        Some(v) if v != dep.version => format!("not installed here at this version ({v} is installed)"),
        Some(_) => INSTALLED_WITHOUT_DOCS.into(),
    }
}

/// The note of a package not installed here.
pub const NOT_INSTALLED: &str = "not installed here (no local sources)";
/// The note of a package installed here that ships no docs docdex reads.
pub const INSTALLED_WITHOUT_DOCS: &str =
    "installed here without documentation (no README, description, doc comments or docstrings)";

/// Whether a note is one [`no_docs_note`] writes.
pub fn is_no_docs_note(note: &str) -> bool {
    note.starts_with("not installed here") || note == INSTALLED_WITHOUT_DOCS
}

/// The version of an npm package in the repository's `node_modules`, from its package.json.
fn npm_installed_version(dep: &Dependency, roots: &Roots) -> Option<String> {
    let dir = roots.repo.join("node_modules").join(&dep.name);
    let manifest = read_text(&dir.join("package.json"), &roots.repo)?;
    let v = serde_json::from_str::<serde_json::Value>(&manifest).ok()?;
    v.get("version").and_then(|v| v.as_str()).map(str::to_string)
}

/// Keeps the first `max` bytes of `docs`' text, in order, dropping empty ones; the document
/// that crosses the bound is cut at a paragraph (else line, else character) boundary rather
/// than dropped with everything after it (a 500 KB README cost a package all its docs).
/// Returns whether anything was left out.
pub fn cap(docs: &mut Vec<LibDoc>, max: usize) -> bool {
    docs.retain(|d| !d.text.trim().is_empty());
    let mut room = max;
    for (i, d) in docs.iter_mut().enumerate() {
        if d.text.len() <= room {
            room -= d.text.len();
            continue;
        }
        let mut end = room;
        while !d.text.is_char_boundary(end) {
            end -= 1;
        }
        let head = &d.text[..end];
        let end = head.rfind("\n\n").or_else(|| head.rfind('\n')).unwrap_or(end);
        d.text.truncate(end);
        let keep = if d.text.trim().is_empty() { i } else { i + 1 };
        docs.truncate(keep);
        return true;
    }
    false
}

/// The unpacked crate directory in the cargo registry.
pub fn crate_dir(name: &str, version: &str, cargo_home: &Path) -> Option<PathBuf> {
    let src = cargo_home.join("registry").join("src");
    std::fs::read_dir(src).ok()?.flatten().map(|e| e.path().join(format!("{name}-{version}"))).find(|p| p.is_dir())
}

fn readme(dir: &Path, inside: &Path) -> Option<(String, String)> {
    let rd = std::fs::read_dir(dir).ok()?;
    let mut names: Vec<String> = rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    let name = names.into_iter().find(|n| n.to_ascii_lowercase().starts_with("readme"))?;
    let text = read_text(&dir.join(&name), inside)?;
    Some((name, text))
}

fn crate_docs(dep: &Dependency, roots: &Roots) -> Vec<LibDoc> {
    let Some(dir) = crate_dir(&dep.name, &dep.version, &roots.cargo_home) else { return Vec::new() };
    let mut out = Vec::new();
    if let Some((name, text)) = readme(&dir, &dir) {
        out.push(LibDoc { title: "README".into(), source: name, text });
    }
    let mut files = Vec::new();
    collect_files(&dir.join("src"), "rs", &mut files);
    for f in files.into_iter().take(MAX_FILES) {
        let Some(text) = read_text(&f, &dir) else { continue };
        let rel = f.strip_prefix(&dir).unwrap_or(&f).display().to_string();
        out.extend(rust_doc_comments(&text, &rel));
    }
    out
}

fn collect_files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if out.len() >= MAX_FILES {
            return;
        }
        // Never follow symlinks out of the package.
        let Ok(meta) = std::fs::symlink_metadata(&p) else { continue };
        if meta.is_dir() {
            collect_files(&p, ext, out);
        } else if meta.is_file() && p.extension().is_some_and(|e| e == ext) {
            out.push(p);
        }
    }
}

/// Whether an item is public API: `pub`, not `pub(crate)`, `pub(super)`, `pub(in ...)`,
/// whose docs are the crate's own notes to itself, not its users' documentation.
fn is_public(item: &str) -> bool {
    item.strip_prefix("pub").is_some_and(|rest| rest.starts_with(char::is_whitespace))
}

/// `//!` module docs and `///` docs of `pub` items, each as a document titled by its item.
pub fn rust_doc_comments(text: &str, rel: &str) -> Vec<LibDoc> {
    let mut out = Vec::new();
    let mut module = String::new();
    let mut pending: Vec<&str> = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix("//!") {
            module.push_str(rest.strip_prefix(' ').unwrap_or(rest));
            module.push('\n');
        } else if let Some(rest) = t.strip_prefix("///") {
            pending.push(rest.strip_prefix(' ').unwrap_or(rest));
        } else if t.starts_with("#[") {
            continue;
        } else {
            if !pending.is_empty() && is_public(t) {
                let sig = t.trim_end_matches('{').trim().to_string();
                out.push(LibDoc {
                    title: sig.clone(),
                    source: rel.to_string(),
                    text: format!("`{sig}`\n\n{}", pending.join("\n")),
                });
            }
            pending.clear();
        }
    }
    if !module.trim().is_empty() {
        out.insert(0, LibDoc { title: format!("module {rel}"), source: rel.to_string(), text: module });
    }
    out
}

fn npm_docs(dep: &Dependency, roots: &Roots) -> Vec<LibDoc> {
    let dir = roots.repo.join("node_modules").join(&dep.name);
    let mut out = Vec::new();
    let manifest = read_text(&dir.join("package.json"), &roots.repo)
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok());
    let installed = manifest.as_ref().and_then(|m| m.get("version")).and_then(|v| v.as_str());
    if installed.is_some_and(|v| v != dep.version) {
        // Another version is installed: its docs would describe the wrong release.
        return out;
    }
    if let Some(desc) = manifest.as_ref().and_then(|m| m.get("description")).and_then(|v| v.as_str()) {
        out.push(LibDoc { title: "description".into(), source: "package.json".into(), text: desc.to_string() });
    }
    if let Some((name, text)) = readme(&dir, &roots.repo) {
        out.push(LibDoc { title: "README".into(), source: name, text });
    }
    out
}

/// The installed distribution of `dep` in `sp`: its `.dist-info` directory.
fn dist_info(sp: &Path, dep: &Dependency) -> Option<PathBuf> {
    let wanted = format!("{}-{}", normalize_py(&dep.name).replace('-', "_"), dep.version);
    std::fs::read_dir(sp).ok()?.flatten().map(|e| e.path()).find(|p| {
        let n = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        n.strip_suffix(".dist-info").is_some_and(|stem| {
            let (name, version) = stem.rsplit_once('-').unwrap_or((stem, ""));
            format!("{}-{version}", normalize_py(name).replace('-', "_")) == wanted
        })
    })
}

/// The top-level modules a distribution installs: `top_level.txt` (setuptools), else the
/// first parts of the paths in `RECORD` (hatchling, flit, poetry and maturin write no
/// top_level.txt, and `attrs` installs `attr`), else the distribution's own name.
fn top_level_modules(dist: &Path, sp: &Path, dep: &Dependency) -> Vec<String> {
    if let Some(t) = read_text(&dist.join("top_level.txt"), sp) {
        return t.lines().map(|l| l.trim().to_string()).filter(|l| !l.is_empty()).collect();
    }
    let mut out: Vec<String> = Vec::new();
    for line in read_text(&dist.join("RECORD"), sp).unwrap_or_default().lines() {
        let path = line.split(',').next().unwrap_or("").trim();
        let first = path.split('/').next().unwrap_or("");
        let module = if path.contains('/') { Some(first) } else { first.strip_suffix(".py") };
        let Some(m) = module else { continue };
        let skip = m.is_empty() || m.starts_with(['.', '_']) || m.ends_with(".dist-info") || m.ends_with(".data");
        if !skip && !out.iter().any(|o| o == m) {
            out.push(m.to_string());
        }
    }
    if out.is_empty() {
        out.push(normalize_py(&dep.name).replace('-', "_"));
    }
    out
}

/// Every file is read only when its real path stays in its site-packages directory: a
/// `.dist-info/METADATA` or a module that is a link out of it (to `~/.ssh`, say) is skipped.
fn py_docs(dep: &Dependency, roots: &Roots) -> Vec<LibDoc> {
    for sp in site_packages(&roots.repo, true) {
        let Some(dist) = dist_info(&sp, dep) else { continue };
        let mut out = Vec::new();
        if let Some(meta) = read_text(&dist.join("METADATA"), &sp) {
            let body = meta.split_once("\n\n").map(|(_, b)| b).unwrap_or("");
            let summary = meta.lines().find_map(|l| l.strip_prefix("Summary: ")).unwrap_or("");
            let text = format!("{summary}\n\n{body}");
            out.push(LibDoc { title: "project description".into(), source: "METADATA".into(), text });
        }
        for m in top_level_modules(&dist, &sp, dep) {
            let mut files = Vec::new();
            let dir = sp.join(&m);
            if dir.is_dir() {
                collect_files(&dir, "py", &mut files);
            } else if sp.join(format!("{m}.py")).is_file() {
                files.push(sp.join(format!("{m}.py")));
            }
            for f in files {
                let Some(text) = read_text(&f, &sp) else { continue };
                let rel = f.strip_prefix(&sp).unwrap_or(&f).display().to_string();
                out.extend(python_docstrings(&text, &rel));
            }
        }
        return out;
    }
    Vec::new()
}

/// The module docstring and the docstrings of `def`/`class` definitions, each a document.
pub fn python_docstrings(text: &str, rel: &str) -> Vec<LibDoc> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let first_code = lines.iter().position(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    if let Some(i) = first_code {
        if let Some(doc) = docstring_at(&lines, i) {
            out.push(LibDoc { title: format!("module {rel}"), source: rel.to_string(), text: doc });
        }
    }
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        let is_def = t.starts_with("def ") || t.starts_with("async def ") || t.starts_with("class ");
        if !is_def || t.trim_start_matches("async ").split_whitespace().nth(1).is_some_and(|n| n.starts_with('_')) {
            continue;
        }
        // The signature may span lines: the body starts after the line ending with ':'.
        let Some(end) = (i..lines.len().min(i + 20)).find(|&j| lines[j].trim_end().ends_with(':')) else { continue };
        let Some(body) = (end + 1..lines.len()).find(|&j| !lines[j].trim().is_empty()) else { continue };
        if let Some(doc) = docstring_at(&lines, body) {
            let sig = lines[i..=end].iter().map(|s| s.trim()).collect::<Vec<_>>().join(" ");
            out.push(LibDoc {
                title: sig.trim_end_matches(':').to_string(),
                source: rel.to_string(),
                text: format!("`{}`\n\n{doc}", sig.trim_end_matches(':')),
            });
        }
    }
    out
}

/// The triple-quoted string starting on line `i`, if one does.
fn docstring_at(lines: &[&str], i: usize) -> Option<String> {
    let t = lines.get(i)?.trim_start();
    let t = t.trim_start_matches(['r', 'u', 'R', 'U']);
    let quote = if t.starts_with("\"\"\"") {
        "\"\"\""
    } else if t.starts_with("'''") {
        "'''"
    } else {
        return None;
    };
    let rest = &t[3..];
    if let Some(end) = rest.find(quote) {
        return Some(rest[..end].trim().to_string());
    }
    let mut doc = vec![rest.to_string()];
    for l in lines.iter().skip(i + 1).take(400) {
        if let Some(end) = l.find(quote) {
            doc.push(l[..end].to_string());
            return Some(dedent(&doc));
        }
        doc.push(l.to_string());
    }
    None
}

fn dedent(lines: &[String]) -> String {
    let indent = lines
        .iter()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out: Vec<String> = vec![lines[0].trim().to_string()];
    out.extend(lines.iter().skip(1).map(|l| l.get(indent..).unwrap_or(l.trim()).to_string()));
    out.join("\n").trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> LibDoc {
        LibDoc { title: "t".into(), source: "s".into(), text: text.into() }
    }

    #[test]
    fn a_doc_past_the_bound_is_cut_at_a_paragraph_not_dropped_with_the_rest() {
        let mut docs = vec![doc("short"), doc(""), doc("first para\n\nsecond para that goes past"), doc("after")];
        assert!(cap(&mut docs, 20));
        let texts: Vec<&str> = docs.iter().map(|d| d.text.as_str()).collect();
        assert_eq!(texts, ["short", "first para"]);
        let mut small = vec![doc("a"), doc("b")];
        assert!(!cap(&mut small, 20));
        assert_eq!(small.len(), 2);
        // A character is never split.
        let mut wide = vec![doc("ééééé")];
        assert!(cap(&mut wide, 3));
        assert_eq!(wide[0].text, "é");
    }

    #[test]
    fn rust_docs_come_from_module_and_public_item_comments() {
        let src = "//! Widgets for everyone.\n//! Second line.\n\n/// Resets every knob.\n#[inline]\npub fn reset_widget(id: u32) {\n}\n\n/// private\nfn hidden() {}\n/// crate-private\npub(crate) fn helper() {}\n/// restricted\npub(super) struct Inner;\n/// published\npub struct Knob;\n";
        let docs = rust_doc_comments(src, "src/lib.rs");
        let titles: Vec<&str> = docs.iter().map(|d| d.title.as_str()).collect();
        assert_eq!(titles, ["module src/lib.rs", "pub fn reset_widget(id: u32)", "pub struct Knob;"], "{docs:?}");
        assert!(docs[0].text.contains("Widgets for everyone.\nSecond line."));
        assert!(docs[1].text.contains("Resets every knob."));
    }

    #[test]
    fn python_docstrings_of_module_functions_and_classes() {
        let src = "\"\"\"Gadget helpers.\"\"\"\n\nimport os\n\ndef subscribe(topic,\n              handler):\n    \"\"\"Subscribe to a topic.\n\n    Messages arrive in order.\n    \"\"\"\n    pass\n\nclass Bus:\n    '''The quux bus.'''\n\ndef _private():\n    \"\"\"no\"\"\"\n";
        let docs = python_docstrings(src, "gadgets/__init__.py");
        let titles: Vec<&str> = docs.iter().map(|d| d.title.as_str()).collect();
        assert_eq!(titles, ["module gadgets/__init__.py", "def subscribe(topic, handler)", "class Bus"], "{docs:?}");
        assert!(docs[1].text.contains("Subscribe to a topic.\n\nMessages arrive in order."), "{}", docs[1].text);
    }
}
