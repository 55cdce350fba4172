//! Python: packages in a top-level folder with no packaging file (`lib/acme/__init__.py`, no
//! `lib/pyproject.toml`), which a project puts on `sys.path` itself (`PYTHONPATH=lib`, a test
//! runner's `pythonpath`, an IDE's extra paths). Nothing in the tree says so, so such a folder
//! is a root for the rest of the repository only where the evidence holds ([`path_roots`]):
//! the name is a regular package of that folder alone, not the standard library's, not a
//! dependency the repository declares, and the folder is not one of examples or docs (run from
//! where they are, as celery's `examples/pydantic/` beside the installed `pydantic`).

use super::{file_name, join, PathSet, RepoFiles};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// The standard library's public top-level modules (`sys.stdlib_module_names` of Python 3.11,
/// `_`-names left out): a folder's `logging/` is a test fixture far more often than a shadow.
const STDLIB: &str = "abc aifc antigravity argparse array ast asynchat asyncio asyncore atexit audioop base64 bdb \
     binascii bisect builtins bz2 cProfile calendar cgi cgitb chunk cmath cmd code codecs codeop \
     collections colorsys compileall concurrent configparser contextlib contextvars copy copyreg \
     crypt csv ctypes curses dataclasses datetime dbm decimal difflib dis distutils doctest email \
     encodings ensurepip enum errno faulthandler fcntl filecmp fileinput fnmatch fractions ftplib \
     functools gc genericpath getopt getpass gettext glob graphlib grp gzip hashlib heapq hmac \
     html http idlelib imaplib imghdr imp importlib inspect io ipaddress itertools json keyword \
     lib2to3 linecache locale logging lzma mailbox mailcap marshal math mimetypes mmap \
     modulefinder msilib msvcrt multiprocessing netrc nis nntplib nt ntpath nturl2path numbers \
     opcode operator optparse os ossaudiodev pathlib pdb pickle pickletools pipes pkgutil \
     platform plistlib poplib posix posixpath pprint profile pstats pty pwd py_compile pyclbr \
     pydoc pydoc_data pyexpat queue quopri random re readline reprlib resource rlcompleter runpy \
     sched secrets select selectors shelve shlex shutil signal site smtpd smtplib sndhdr socket \
     socketserver spwd sqlite3 sre_compile sre_constants sre_parse ssl stat statistics string \
     stringprep struct subprocess sunau symtable sys sysconfig syslog tabnanny tarfile telnetlib \
     tempfile termios textwrap this threading time timeit tkinter token tokenize tomllib trace \
     traceback tracemalloc tty turtle turtledemo types typing unicodedata unittest urllib uu uuid \
     venv warnings wave weakref webbrowser winreg winsound wsgiref xdrlib xml xmlrpc zipapp \
     zipfile zipimport zlib zoneinfo";

/// Folders whose packages are examples, docs or benchmarks, run from where they are.
const NOT_ON_PATH: &[&str] = &[
    "examples",
    "example",
    "samples",
    "sample",
    "demo",
    "demos",
    "docs",
    "doc",
    "tutorial",
    "tutorials",
    "benchmarks",
];

/// Largest dependency file read, in bytes.
const MAX_DEPENDENCY_FILE: u64 = 1 << 20;

/// What a root and its names are, as [`super::python::PythonIndex`] found them.
pub struct Roots<'a> {
    pub roots: &'a [String],
    /// Per root: on every file's import path already.
    pub global: &'a [bool],
    /// Top-level name → the roots that have it (with whether as a module or regular package).
    pub tops: &'a HashMap<String, Vec<(usize, bool)>>,
    /// Directories holding an `__init__.py`.
    pub packages: &'a PathSet<String>,
}

/// Top-level package name → the folder (index into `roots`) that counts as on every file's
/// path for it: a top-level folder, not global, not of examples or docs, the only root that has
/// the name at all, and it has it as a regular package; the name neither the standard
/// library's nor a dependency the repository declares.
pub fn path_roots(repo: &Path, files: &RepoFiles, r: &Roots) -> HashMap<String, usize> {
    let mut out = HashMap::new();
    let mut declared: Option<HashSet<String>> = None;
    for (name, entries) in r.tops {
        let [(i, true)] = entries.as_slice() else { continue };
        let root = r.roots[*i].as_str();
        let candidate = !r.global.get(*i).copied().unwrap_or(true)
            && !root.is_empty()
            && !root.contains('/')
            && !NOT_ON_PATH.contains(&root.to_ascii_lowercase().as_str())
            && join(root, name).is_some_and(|d| r.packages.contains(&d))
            && !STDLIB.split_whitespace().any(|s| s == name);
        if !candidate {
            continue;
        }
        let declared = declared.get_or_insert_with(|| declared_dependencies(repo, files));
        if !declared.contains(&normalized(name)) {
            out.insert(name.clone(), *i);
        }
    }
    out
}

/// A distribution or import name as PEP 503 compares them: lowercase, `-` `_` `.` alike.
fn normalized(name: &str) -> String {
    name.to_ascii_lowercase().replace(['-', '.'], "_")
}

/// The names of the dependencies the repository declares: requirements files
/// (`requirements*.txt`, any `.txt` under a `requirements/` folder) and each
/// `pyproject.toml`'s `[project]` dependencies and optional ones, `[dependency-groups]` and
/// Poetry's. A distribution whose import name differs (`PyYAML`, imported as `yaml`) is not
/// recognized. `setup.py` and `setup.cfg` are not read.
fn declared_dependencies(repo: &Path, files: &RepoFiles) -> HashSet<String> {
    let mut out = HashSet::new();
    for f in files.iter() {
        let name = file_name(f);
        let in_requirements = f.split('/').rev().skip(1).any(|d| d.eq_ignore_ascii_case("requirements"));
        let requirements = name.ends_with(".txt") && (name.starts_with("requirements") || in_requirements);
        if !requirements && name != "pyproject.toml" {
            continue;
        }
        let Ok(Some(bytes)) = crate::engine::fsutil::read_repo_file_capped(repo, f, MAX_DEPENDENCY_FILE) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        if requirements {
            out.extend(text.lines().filter_map(requirement_name));
        } else {
            out.extend(pyproject_dependencies(&text));
        }
    }
    out
}

/// The distribution a requirement line names (`Requests[socks]>=2 ; ...`), normalized; none
/// for a comment, an option (`-r`, `-e`, `--hash`) or a URL.
fn requirement_name(line: &str) -> Option<String> {
    let line = line.trim();
    if line.is_empty() || line.starts_with(['#', '-']) || line.contains("://") {
        return None;
    }
    let end = line.find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))).unwrap_or(line.len());
    (end > 0).then(|| normalized(&line[..end]))
}

/// The dependencies a `pyproject.toml` declares (unreadable TOML: none).
fn pyproject_dependencies(text: &str) -> Vec<String> {
    let Ok(doc) = text.parse::<toml::Table>() else { return Vec::new() };
    let mut specs: Vec<String> = Vec::new();
    let strings = |v: Option<&toml::Value>| -> Vec<String> {
        v.and_then(toml::Value::as_array)
            .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
            .unwrap_or_default()
    };
    let project = doc.get("project");
    specs.extend(strings(project.and_then(|p| p.get("dependencies"))));
    let tables = [project.and_then(|p| p.get("optional-dependencies")), doc.get("dependency-groups")];
    for table in tables.into_iter().flatten().filter_map(toml::Value::as_table) {
        for v in table.values() {
            specs.extend(strings(Some(v)));
        }
    }
    let mut out: Vec<String> = specs.iter().filter_map(|s| requirement_name(s)).collect();
    let poetry = doc.get("tool").and_then(|t| t.get("poetry"));
    let groups = poetry.and_then(|p| p.get("group")).and_then(toml::Value::as_table);
    let poetry_tables = poetry
        .and_then(|p| p.get("dependencies"))
        .into_iter()
        .chain(groups.into_iter().flat_map(|g| g.values().filter_map(|v| v.get("dependencies"))));
    for t in poetry_tables.filter_map(toml::Value::as_table) {
        out.extend(t.keys().map(|k| normalized(k)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirement_lines_and_pyproject_tables_name_their_distributions() {
        let names: Vec<Option<String>> =
            ["Requests[socks]>=2 ; python_version>'3'", "# c", "-r base.txt", "zope.interface", "git+https://x/y"]
                .into_iter()
                .map(requirement_name)
                .collect();
        let s = |v: &str| Some(v.to_string());
        assert_eq!(names, [s("requests"), None, None, s("zope_interface"), None]);
        let toml = "[project]\ndependencies = ['click>=8']\n[project.optional-dependencies]\nyaml = ['PyYAML']\n                    [dependency-groups]\ndev = ['pytest']\n[tool.poetry.dependencies]\npython = '^3.9'\nRich = '*'\n                    [tool.poetry.group.test.dependencies]\nhypothesis = '*'\n";
        let mut got = pyproject_dependencies(toml);
        got.sort();
        assert_eq!(got, ["click", "hypothesis", "pytest", "python", "pyyaml", "rich"]);
    }
}
