//! What a file is: its language (by extension or well-known name), how it is
//! chunked, and its ranking class (source, docs, config, test, or noise such
//! as lockfiles, changelogs and generated or minified files).

use std::path::Path;

/// How a file's text is cut into chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkStyle {
    /// Source code: top-level items and blank-line blocks.
    Code,
    /// Markdown: by headings.
    Markdown,
    /// Anything else: fixed windows with overlap.
    Window,
}

/// A file's ranking class, stored as a fast field and used as a prior.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u64)]
pub enum FileClass {
    /// Source code.
    Source = 0,
    /// Tests and specs.
    Test = 1,
    /// Prose documentation.
    Docs = 2,
    /// Configuration and data.
    Config = 3,
    /// Changelogs, release notes, history.
    Changelog = 4,
    /// Dependency lockfiles.
    Lockfile = 5,
    /// Generated, vendored or minified code.
    Generated = 6,
    /// Data and fixtures inside test directories (not code).
    TestData = 7,
    /// Examples, demos and benchmarks: code that illustrates rather than implements.
    Example = 8,
}

impl FileClass {
    /// Decodes the fast-field value.
    pub fn from_u64(v: u64) -> FileClass {
        match v {
            0 => FileClass::Source,
            1 => FileClass::Test,
            2 => FileClass::Docs,
            3 => FileClass::Config,
            4 => FileClass::Changelog,
            5 => FileClass::Lockfile,
            7 => FileClass::TestData,
            8 => FileClass::Example,
            _ => FileClass::Generated,
        }
    }

    /// Human name, also accepted in queries to lift the demotion ("changelog", "lockfile").
    pub fn name(self) -> &'static str {
        match self {
            FileClass::Source => "source",
            FileClass::Test => "test",
            FileClass::Docs => "docs",
            FileClass::Config => "config",
            FileClass::Changelog => "changelog",
            FileClass::Lockfile => "lockfile",
            FileClass::Generated => "generated",
            FileClass::TestData => "testdata",
            FileClass::Example => "example",
        }
    }
}

/// Why a document of a format docdex does not read is left out, and what to do, by extension
/// (`None` for any other file). Said so rather than "binary": the file is a document someone
/// meant to be found, and converting it is the way in.
pub fn unsupported_document(rel: &str) -> Option<String> {
    let (ext, instead) = unsupported_format(rel)?;
    Some(format!("unsupported document format (.{ext}): {instead} to index it"))
}

/// The formats docdex reads, for a message about one it does not.
pub const READ_FORMATS: &str =
    "PDF, DOCX and HTML documents, Jupyter notebooks, and text files (Markdown, code, config)";

/// [`unsupported_document`]'s parts: the extension (lowercase) and what to do instead
/// (`convert it to .docx or .pdf`), for `get` / `open` to refuse the file with the same words.
pub fn unsupported_format(rel: &str) -> Option<(String, &'static str)> {
    let (_, ext) = rel.rsplit_once('.')?;
    let ext = ext.to_ascii_lowercase();
    let instead = match ext.as_str() {
        // OpenDocument text, legacy Word, Apple Pages.
        "odt" | "ott" | "doc" | "pages" => "convert it to .docx or .pdf",
        // Spreadsheets.
        "ods" | "ots" | "xls" | "xlsx" | "numbers" => "export it to .csv",
        // Presentations (not `.key`: that is more often a private key than Keynote).
        "odp" | "otp" | "ppt" | "pptx" => "export it to .pdf",
        _ => return None,
    };
    Some((ext, instead))
}

/// Language (or format) name for a path; `None` for files we do not index as text by name.
pub fn language(path: &Path) -> &'static str {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let lower = name.to_ascii_lowercase();
    match lower.as_str() {
        "makefile" | "gnumakefile" => return "make",
        "dockerfile" => return "dockerfile",
        "cmakelists.txt" => return "cmake",
        "gemfile" | "rakefile" | "podfile" => return "ruby",
        "cargo.lock" | "poetry.lock" | "pipfile" => return "toml",
        "go.mod" | "go.sum" => return "go-mod",
        "justfile" => return "just",
        _ => {}
    }
    let ext = lower.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    LANGUAGES.iter().find(|l| l.extensions.contains(&ext)).map_or("text", |l| l.name)
}

/// A language (or format) the index names, with the file extensions that make it and the
/// other names a user may type for it (`py`, `golang`, `c++`): one table, so the indexer's
/// naming and every filter's aliases never disagree.
#[derive(Debug, Clone, Copy)]
pub struct Language {
    /// The name hits carry and filters match (`python`).
    pub name: &'static str,
    /// Extensions (lowercase, no dot) of files indexed under this name.
    pub extensions: &'static [&'static str],
    /// Other names for it besides the extensions.
    pub aliases: &'static [&'static str],
}

/// Every language name the index gives, in the order extensions are tried.
pub const LANGUAGES: &[Language] = &[
    Language { name: "rust", extensions: &["rs"], aliases: &[] },
    Language { name: "python", extensions: &["py", "pyi", "pyw"], aliases: &["python3", "py3"] },
    Language { name: "javascript", extensions: &["js", "mjs", "cjs"], aliases: &["node", "nodejs", "ecmascript"] },
    Language { name: "jsx", extensions: &["jsx"], aliases: &[] },
    Language { name: "typescript", extensions: &["ts", "mts", "cts"], aliases: &[] },
    Language { name: "tsx", extensions: &["tsx"], aliases: &[] },
    Language { name: "go", extensions: &["go"], aliases: &["golang"] },
    Language { name: "java", extensions: &["java"], aliases: &[] },
    Language { name: "kotlin", extensions: &["kt", "kts"], aliases: &[] },
    Language { name: "csharp", extensions: &["cs"], aliases: &["c#", "dotnet"] },
    Language { name: "c", extensions: &["c", "h"], aliases: &[] },
    Language { name: "cpp", extensions: &["cc", "cpp", "cxx", "hpp", "hh", "hxx", "ipp", "inl"], aliases: &["c++"] },
    Language { name: "php", extensions: &["php"], aliases: &[] },
    Language { name: "swift", extensions: &["swift"], aliases: &[] },
    Language { name: "ruby", extensions: &["rb", "rake", "gemspec"], aliases: &[] },
    Language { name: "lua", extensions: &["lua"], aliases: &[] },
    Language { name: "dart", extensions: &["dart"], aliases: &[] },
    Language { name: "scala", extensions: &["scala", "sc"], aliases: &[] },
    Language { name: "objc", extensions: &["m", "mm"], aliases: &["objective-c", "objectivec"] },
    Language { name: "r", extensions: &["r"], aliases: &[] },
    Language { name: "julia", extensions: &["jl"], aliases: &[] },
    Language { name: "elixir", extensions: &["ex", "exs"], aliases: &[] },
    Language { name: "erlang", extensions: &["erl", "hrl"], aliases: &[] },
    Language { name: "haskell", extensions: &["hs"], aliases: &[] },
    Language { name: "ocaml", extensions: &["ml", "mli"], aliases: &[] },
    Language { name: "fsharp", extensions: &["fs", "fsx"], aliases: &["f#"] },
    Language { name: "clojure", extensions: &["clj", "cljs", "edn"], aliases: &[] },
    Language { name: "zig", extensions: &["zig"], aliases: &[] },
    Language { name: "nim", extensions: &["nim"], aliases: &[] },
    Language { name: "perl", extensions: &["pl", "pm"], aliases: &[] },
    Language { name: "shell", extensions: &["sh", "bash", "zsh", "fish"], aliases: &["shellscript"] },
    Language { name: "powershell", extensions: &["ps1", "psm1"], aliases: &["pwsh"] },
    Language { name: "sql", extensions: &["sql"], aliases: &[] },
    Language { name: "vue", extensions: &["vue"], aliases: &[] },
    Language { name: "svelte", extensions: &["svelte"], aliases: &[] },
    Language { name: "css", extensions: &["css", "scss", "sass", "less"], aliases: &[] },
    Language { name: "html", extensions: &["html", "htm", "xhtml"], aliases: &[] },
    Language { name: "pdf", extensions: &["pdf"], aliases: &[] },
    Language { name: "docx", extensions: &["docx"], aliases: &[] },
    Language { name: "notebook", extensions: &["ipynb"], aliases: &["jupyter"] },
    Language { name: "xml", extensions: &["xml", "xsd", "xsl", "svg", "plist"], aliases: &[] },
    Language { name: "markdown", extensions: &["md", "markdown", "mdx"], aliases: &[] },
    Language { name: "rst", extensions: &["rst"], aliases: &[] },
    Language { name: "asciidoc", extensions: &["adoc", "asciidoc"], aliases: &[] },
    Language { name: "text", extensions: &["txt", "text"], aliases: &[] },
    Language { name: "json", extensions: &["json", "jsonc", "json5", "jsonl", "ndjson"], aliases: &[] },
    Language { name: "yaml", extensions: &["yaml", "yml"], aliases: &[] },
    Language { name: "toml", extensions: &["toml"], aliases: &[] },
    Language { name: "ini", extensions: &["ini", "cfg", "conf", "properties", "env"], aliases: &[] },
    Language { name: "protobuf", extensions: &["proto"], aliases: &[] },
    Language { name: "graphql", extensions: &["graphql", "gql"], aliases: &[] },
    Language { name: "hcl", extensions: &["tf", "hcl"], aliases: &["terraform"] },
    Language { name: "groovy", extensions: &["gradle", "groovy"], aliases: &[] },
    Language { name: "cmake", extensions: &["cmake"], aliases: &[] },
    Language { name: "lockfile", extensions: &["lock"], aliases: &[] },
    Language { name: "csv", extensions: &["csv", "tsv"], aliases: &[] },
    Language { name: "latex", extensions: &["tex"], aliases: &[] },
    Language { name: "elisp", extensions: &["el"], aliases: &["emacs-lisp"] },
    Language { name: "vim", extensions: &["vim"], aliases: &[] },
    Language { name: "make", extensions: &[], aliases: &["makefile"] },
    Language { name: "dockerfile", extensions: &[], aliases: &["docker"] },
    Language { name: "go-mod", extensions: &[], aliases: &["gomod"] },
    Language { name: "just", extensions: &[], aliases: &["justfile"] },
];

/// The index's name for what a user typed as a language (`py`, `.py`, `Python`, `golang`):
/// a name, an extension or an alias from [`LANGUAGES`]; `None` when it is none of them.
pub fn canonical_language(typed: &str) -> Option<&'static str> {
    let t = typed.trim().trim_start_matches('.').to_ascii_lowercase();
    if t.is_empty() {
        return None;
    }
    LANGUAGES
        .iter()
        .find(|l| l.name == t)
        .or_else(|| LANGUAGES.iter().find(|l| l.extensions.contains(&t.as_str()) || l.aliases.contains(&t.as_str())))
        .map(|l| l.name)
}

/// Language names that complete what a user is typing: names starting with it first, then
/// names one of whose extensions or aliases starts with it (`py` -> `python`), each once.
pub fn complete_language(typed: &str) -> Vec<&'static str> {
    let t = typed.trim().trim_start_matches('.').to_ascii_lowercase();
    let mut out: Vec<&'static str> = LANGUAGES.iter().filter(|l| l.name.starts_with(&t)).map(|l| l.name).collect();
    for l in LANGUAGES {
        let other = l.extensions.iter().chain(l.aliases).any(|a| a.starts_with(&t));
        if other && !out.contains(&l.name) {
            out.push(l.name);
        }
    }
    out
}

/// How a language is chunked.
pub fn chunk_style(lang: &str) -> ChunkStyle {
    match lang {
        // HTML and DOCX are indexed as the Markdown their extraction makes (`index::extract`); a
        // notebook's cells as plain text (its `# %%` markers are no Markdown headings).
        "markdown" | "rst" | "asciidoc" | "html" | "docx" => ChunkStyle::Markdown,
        "text" | "json" | "yaml" | "toml" | "ini" | "xml" | "pdf" | "csv" | "lockfile" | "go-mod" | "latex"
        | "notebook" => ChunkStyle::Window,
        _ => ChunkStyle::Code,
    }
}

/// The ranking class of a repo-relative path (forward slashes), given its language.
pub fn classify(rel: &str, lang: &str) -> FileClass {
    let lower = rel.to_ascii_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    const LOCKFILES: &[&str] = &[
        "cargo.lock",
        "package-lock.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "poetry.lock",
        "gemfile.lock",
        "composer.lock",
        "go.sum",
        "pipfile.lock",
        "mix.lock",
        "podfile.lock",
        "pubspec.lock",
        "flake.lock",
        "bun.lockb",
        "uv.lock",
        "npm-shrinkwrap.json",
        "packages.lock.json",
        "gradle.lockfile",
    ];
    if LOCKFILES.contains(&name) || name.ends_with(".lock") {
        return FileClass::Lockfile;
    }
    let stem = name.split('.').next().unwrap_or(name);
    if is_history(stem, &lower, chunk_style(lang) != ChunkStyle::Code) {
        return FileClass::Changelog;
    }
    if name.contains(".min.")
        || name == "pkg-info"
        || name.ends_with(".map")
        || name.ends_with(".pb.go")
        || name.ends_with("_pb2.py")
        || name.ends_with("_pb2_grpc.py")
        || name.contains(".generated.")
        || name.ends_with(".g.dart")
        || name.ends_with(".freezed.dart")
        || lower
            .split('/')
            .any(|seg| matches!(seg, "vendor" | "third_party" | "node_modules" | "dist" | "__generated__"))
        // Package metadata a build writes (it repeats the README and lists every classifier).
        || lower.split('/').rev().skip(1).any(|seg| seg.ends_with(".egg-info") || seg.ends_with(".dist-info"))
    {
        return FileClass::Generated;
    }
    let in_test_dir = lower.split('/').rev().skip(1).any(|seg| {
        matches!(seg, "test" | "tests" | "spec" | "specs" | "__tests__" | "testing" | "testdata" | "fixtures")
    });
    if in_test_dir
        || stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_spec")
        || name.contains(".test.")
        || name.contains(".spec.")
        || stem.ends_with("_tests")
        || stem == "tests"
        || name == "conftest.py"
        || camel_case_test(rel.rsplit('/').next().unwrap_or(rel).split('.').next().unwrap_or(""))
    {
        return if chunk_style(lang) == ChunkStyle::Code { FileClass::Test } else { FileClass::TestData };
    }
    let illustrative = lower.split('/').rev().skip(1).any(|seg| {
        matches!(
            seg,
            "example" | "examples" | "demo" | "demos" | "sample" | "samples" | "bench" | "benches" | "benchmarks"
        )
    });
    if illustrative && chunk_style(lang) == ChunkStyle::Code {
        return FileClass::Example;
    }
    match chunk_style(lang) {
        ChunkStyle::Markdown => FileClass::Docs,
        ChunkStyle::Window if matches!(lang, "text" | "pdf" | "latex" | "notebook") => FileClass::Docs,
        ChunkStyle::Window => FileClass::Config,
        ChunkStyle::Code => FileClass::Source,
    }
}

/// A changelog, release notes, a release announcement or history: any file in a `changelog/`
/// folder (pytest's fragments); a document (not code, where `history.py` is a module) by its
/// name (`CHANGELOG.md`, `NEWS`, `changelog-2.0.rst`, `whatsnew-3.0.rst`, `announcement.rst`,
/// `release-announcement-5.0.md`, `RELEASE_NOTES.md`) or in a `history/`, `releases/`,
/// `release-notes/`, `whatsnew/` or `announce/` folder. An announcement describes one release,
/// so its values are history as a changelog's are.
fn is_history(stem: &str, lower: &str, document: bool) -> bool {
    const NAMES: [&str; 14] = [
        "changelog",
        "changes",
        "history",
        "news",
        "releases",
        "release-notes",
        "release_notes",
        "releasenotes",
        "whatsnew",
        "announcement",
        "announcements",
        "announce",
        "release-announcement",
        "release_announcement",
    ];
    let dirs: Vec<&str> = lower.split('/').rev().skip(1).collect();
    if dirs.iter().any(|d| matches!(*d, "changelog" | "changelogs")) {
        return true;
    }
    if !document {
        return false;
    }
    let named = NAMES.iter().any(|h| {
        stem.strip_prefix(h).is_some_and(|rest| {
            rest.is_empty() || rest.starts_with(['-', '_']) || rest.starts_with(|c: char| c.is_ascii_digit())
        })
    });
    let folder =
        |d: &&str| matches!(*d, "history" | "releases" | "release-notes" | "whatsnew" | "announce" | "announcements");
    named || dirs.iter().any(folder)
}

/// `UserTest`, `ParserTests`: the test-class naming of Java, Kotlin, C# and PHP (a lowercase
/// letter or digit, then `Test` or `Tests` at the end). Plain words that end in "test"
/// (`unittest`, `doctest`, `latest`, `contest`) are not tests.
fn camel_case_test(stem: &str) -> bool {
    let base = stem.strip_suffix("Tests").or_else(|| stem.strip_suffix("Test"));
    base.and_then(|b| b.chars().last()).is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
}

/// [`classify`], plus the content check tools agree on: source whose opening lines say it was
/// generated ("@generated", "DO NOT EDIT", "Code generated by", "this file was generated", ...)
/// is [`FileClass::Generated`] wherever it lives (protobuf, API-client and table output). Loose
/// phrases such as "generated by" alone are not markers: docstrings use them for other things.
///
/// A file with no extension that starts with a shebang (`#!/bin/sh`, `#!/usr/bin/env python`:
/// an init script, a tool) is a program, [`FileClass::Source`], not the text its name made it.
pub fn classify_text(rel: &str, lang: &str, text: &str) -> FileClass {
    let mut class = classify(rel, lang);
    if class == FileClass::Docs && lang == "text" && is_script(rel, text) {
        class = FileClass::Source;
    }
    if class == FileClass::Source && says_generated(text) {
        return FileClass::Generated;
    }
    class
}

/// A file whose name has no extension and whose text starts with `#!`.
fn is_script(rel: &str, text: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    !name.contains('.') && text.trim_start_matches('\u{feff}').starts_with("#!")
}

/// True when the first lines of a file carry a generated-code marker (also used of documents:
/// a catalogue a script writes, such as pytest's plugin list, states no author's claims).
pub fn says_generated(text: &str) -> bool {
    const MARKERS: &[&str] = &[
        "@generated",
        "do not edit",
        "code generated by",
        "autogenerated",
        "auto-generated",
        "automatically generated",
        "this file is generated",
        "this file was generated",
        "file generated by",
        "is generated by",
        "was generated by",
    ];
    let mut end = text.match_indices('\n').nth(HEAD_LINES - 1).map_or(text.len(), |(i, _)| i).min(HEAD_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = text[..end].to_ascii_lowercase();
    MARKERS.iter().any(|m| head.contains(m))
}

/// How much of a file's start [`says_generated`] reads.
const HEAD_LINES: usize = 5;
const HEAD_BYTES: usize = 600;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_is_told_by_name_and_folder_for_documents_only() {
        for doc in [
            "docs/history/changelog-2.0.rst",
            "docs/history/whatsnew-5.1.rst",
            "doc/en/history.rst",
            "NEWS",
            "CHANGES.txt",
            "docs/release-notes/v2.md",
            "changelog/1234.bugfix.rst",
        ] {
            let lang = if doc.ends_with(".md") { "markdown" } else { "text" };
            assert_eq!(classify(doc, lang), FileClass::Changelog, "{doc}");
        }
        // A module named like history is code, and a guide that merely starts with the word is a guide.
        assert_eq!(classify("src/history.py", "python"), FileClass::Source);
        assert_eq!(classify("lib/history/store.rs", "rust"), FileClass::Source);
        assert_eq!(classify("docs/newsletter.md", "markdown"), FileClass::Docs);
        // Package metadata a build writes.
        assert_eq!(classify("PKG-INFO", "text"), FileClass::Generated);
        assert_eq!(classify("celery.egg-info/PKG-INFO", "text"), FileClass::Generated);
        assert_eq!(classify("pkg.dist-info/METADATA", "text"), FileClass::Generated);
        // Release announcements are history too.
        for doc in ["docs/announcement.rst", "RELEASE-ANNOUNCEMENT-5.0.md", "ReleaseNotes.md", "docs/announce/v2.txt"] {
            let lang = if doc.ends_with(".md") { "markdown" } else { "text" };
            assert_eq!(classify(doc, lang), FileClass::Changelog, "{doc}");
        }
        assert_eq!(classify("docs/announcing-things.md", "markdown"), FileClass::Docs);
    }

    #[test]
    fn a_file_without_an_extension_that_starts_with_a_shebang_is_code() {
        assert_eq!(
            classify_text("extra/generic-init.d/celeryd", "text", "#!/bin/sh -e\nexec celery\n"),
            FileClass::Source
        );
        assert_eq!(classify_text("bin/tool", "text", "#!/usr/bin/env python\nprint(1)\n"), FileClass::Source);
        // Prose without an extension, and a text file that merely starts with `#!`, stay documents.
        assert_eq!(classify_text("TODO", "text", "Things to do: more tests.\n"), FileClass::Docs);
        assert_eq!(classify_text("notes.txt", "text", "#! not a script\n"), FileClass::Docs);
    }

    #[test]
    fn classes() {
        assert_eq!(classify("Cargo.lock", "toml"), FileClass::Lockfile);
        assert_eq!(classify("CHANGELOG.md", "markdown"), FileClass::Changelog);
        assert_eq!(classify("src/auth/session.rs", "rust"), FileClass::Source);
        assert_eq!(classify("tests/test_auth.py", "python"), FileClass::Test);
        assert_eq!(classify("web/app.min.js", "javascript"), FileClass::Generated);
        assert_eq!(classify("docs/guide.md", "markdown"), FileClass::Docs);
        assert_eq!(classify("config/app.yaml", "yaml"), FileClass::Config);
        assert_eq!(classify("examples/basic_search.rs", "rust"), FileClass::Example);
        assert_eq!(classify("test/data/cases.txt", "text"), FileClass::TestData);
        assert_eq!(language(Path::new("a/b/Makefile")), "make");
        let generated = "// Code generated by protoc-gen-go. DO NOT EDIT.\npackage pb\n";
        assert_eq!(classify_text("pb/user.go", "go", generated), FileClass::Generated);
        assert_eq!(classify_text("x.rs", "rust", "// @generated by cargo-foo\nfn a() {}\n"), FileClass::Generated);
        assert_eq!(classify_text("tests/t.go", "go", generated), FileClass::Test, "only source is re-classed");
        let docstring = "\"\"\"Parser engine for the grammar tables generated by pgen.\"\"\"\n";
        assert_eq!(classify_text("pgen2/parse.py", "python", docstring), FileClass::Source);
        // A marker after the first five lines does not count; multi-byte text at the cut is fine.
        let late = "a\nb\nc\nd\ne\n// DO NOT EDIT\n";
        assert_eq!(classify_text("late.rs", "rust", late), FileClass::Source);
        let wide = "é".repeat(400);
        assert_eq!(classify_text("wide.rs", "rust", &wide), FileClass::Source);
        assert_eq!(language(Path::new("x.tsx")), "tsx");
        // Modules named after a testing tool or ending in "test" as a word are source.
        assert_eq!(classify("src/_pytest/unittest.py", "python"), FileClass::Source);
        assert_eq!(classify("lib/doctest.py", "python"), FileClass::Source);
        assert_eq!(classify("src/latest.rs", "rust"), FileClass::Source);
        assert_eq!(classify("src/UserTest.java", "java"), FileClass::Test);
        assert_eq!(classify("src/ParserTests.cs", "csharp"), FileClass::Test);
        assert_eq!(classify("pkg/parse_tests.rs", "rust"), FileClass::Test);
        assert_eq!(classify("src/tests.rs", "rust"), FileClass::Test);
        // pytest's fixture files sit beside the code they serve but are test scaffolding.
        assert_eq!(classify("t/unit/conftest.py", "python"), FileClass::Test);
        assert_eq!(classify("conftest.py", "python"), FileClass::Test);
    }
}
