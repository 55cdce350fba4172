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
    match ext {
        "rs" => "rust",
        "py" | "pyi" | "pyw" => "python",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "jsx",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "tsx",
        "go" => "go",
        "java" => "java",
        "kt" | "kts" => "kotlin",
        "cs" => "csharp",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" | "ipp" | "inl" => "cpp",
        "php" => "php",
        "swift" => "swift",
        "rb" | "rake" | "gemspec" => "ruby",
        "lua" => "lua",
        "dart" => "dart",
        "scala" | "sc" => "scala",
        "m" | "mm" => "objc",
        "r" => "r",
        "jl" => "julia",
        "ex" | "exs" => "elixir",
        "erl" | "hrl" => "erlang",
        "hs" => "haskell",
        "ml" | "mli" => "ocaml",
        "fs" | "fsx" => "fsharp",
        "clj" | "cljs" | "edn" => "clojure",
        "zig" => "zig",
        "nim" => "nim",
        "pl" | "pm" => "perl",
        "sh" | "bash" | "zsh" | "fish" => "shell",
        "ps1" | "psm1" => "powershell",
        "sql" => "sql",
        "vue" => "vue",
        "svelte" => "svelte",
        "css" | "scss" | "sass" | "less" => "css",
        "html" | "htm" | "xhtml" => "html",
        "pdf" => "pdf",
        "docx" => "docx",
        "xml" | "xsd" | "xsl" | "svg" | "plist" => "xml",
        "md" | "markdown" | "mdx" => "markdown",
        "rst" => "rst",
        "adoc" | "asciidoc" => "asciidoc",
        "txt" | "text" => "text",
        "json" | "jsonc" | "json5" | "jsonl" | "ndjson" => "json",
        "yaml" | "yml" => "yaml",
        "toml" => "toml",
        "ini" | "cfg" | "conf" | "properties" | "env" => "ini",
        "proto" => "protobuf",
        "graphql" | "gql" => "graphql",
        "tf" | "hcl" => "hcl",
        "gradle" => "groovy",
        "groovy" => "groovy",
        "cmake" => "cmake",
        "lock" => "lockfile",
        "csv" | "tsv" => "csv",
        "tex" => "latex",
        "el" => "elisp",
        "vim" => "vim",
        _ => "text",
    }
}

/// How a language is chunked.
pub fn chunk_style(lang: &str) -> ChunkStyle {
    match lang {
        // HTML and DOCX are indexed as the Markdown their extraction makes (`index::extract`).
        "markdown" | "rst" | "asciidoc" | "html" | "docx" => ChunkStyle::Markdown,
        "text" | "json" | "yaml" | "toml" | "ini" | "xml" | "pdf" | "csv" | "lockfile" | "go-mod" | "latex" => {
            ChunkStyle::Window
        }
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
    if matches!(stem, "changelog" | "changes" | "history" | "news" | "releases" | "release-notes" | "release_notes")
        || lower.contains("/changelog/")
        || lower.starts_with("changelog/")
    {
        return FileClass::Changelog;
    }
    if name.contains(".min.")
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
        ChunkStyle::Window if matches!(lang, "text" | "pdf" | "latex") => FileClass::Docs,
        ChunkStyle::Window => FileClass::Config,
        ChunkStyle::Code => FileClass::Source,
    }
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
pub fn classify_text(rel: &str, lang: &str, text: &str) -> FileClass {
    let class = classify(rel, lang);
    if class == FileClass::Source && says_generated(text) {
        return FileClass::Generated;
    }
    class
}

/// True when the first lines of a file carry a generated-code marker.
fn says_generated(text: &str) -> bool {
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
    }
}
