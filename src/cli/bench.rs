//! `docdex bench`: measures indexing and search on a real source tree, in one
//! run, against ripgrep, and prints the figures (a human table, a Markdown
//! block for `docs/PERFORMANCE.md`, or `--json`).
//!
//! Everything happens under a fresh temporary `DOCDEX_HOME` (and, when a
//! subset is asked for, a temporary copy of the corpus), so the user's own
//! state is never touched. The temporary directory is removed at the end
//! unless `--keep` is given.
//!
//! What is measured, in order:
//! 0. a plain (text-only) rebuild, twice, for the code pass's cost;
//! 1. first index (`rebuild`, with the code pass: Tree-sitter symbols, AST
//!    counts, imports and the impact-graph rebuild), its phases as seen by the
//!    progress sink, per-language parse rates, and the peak RSS of this process
//!    (`VmHWM`, reset just before indexing);
//! 2. an unchanged re-index, a bare walk, and the index size on disk;
//! 3. warm in-process search latency over [`QUERIES`];
//! 4. whole-process latency of `docdex search --json` for a sample of them;
//! 5. `rg -i -c --no-messages -F -e WORD ...` over the corpus for the same sample.

#[path = "bench_hybrid.rs"]
pub mod hybrid;

use super::output::Out;
use crate::engine::index::{self, ProgressSink};
use crate::engine::protocol::{IndexProgress, IndexSummary, SearchRequest};
use crate::engine::{Engine, IndexOptions};
use anyhow::Context;
use serde::Serialize;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

/// Arguments of `docdex bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// The source tree to measure on.
    #[arg(long)]
    corpus: PathBuf,
    /// Copy at most this many files (in sorted path order) into a temporary corpus.
    #[arg(long)]
    max_files: Option<usize>,
    /// Stop copying before the subset exceeds this many bytes (K, M, G suffixes are binary: 14M = 14 MiB).
    #[arg(long, value_parser = parse_size)]
    max_bytes: Option<u64>,
    /// When copying, pass over files larger than this (K, M, G suffixes).
    #[arg(long, value_parser = parse_size)]
    max_file_bytes: Option<u64>,
    /// When copying, only files with these extensions (comma-separated or repeated, e.g. `py`).
    #[arg(long, value_delimiter = ',')]
    ext: Vec<String>,
    /// When copying, pass over paths with a directory of this name (repeatable, e.g. `site-packages`).
    #[arg(long)]
    exclude_dir: Vec<String>,
    /// Timed rounds over every query for warm in-process latency.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Queries (evenly sampled from the list) run as a whole `docdex search` process and through ripgrep.
    #[arg(long, default_value_t = 50)]
    process_queries: usize,
    /// Skip the ripgrep comparison.
    #[arg(long)]
    no_rg: bool,
    /// Keep the temporary home (and copied corpus) and print where it is.
    #[arg(long)]
    keep: bool,
    /// Print the results as JSON instead of tables.
    #[arg(long)]
    json: bool,
}

impl BenchArgs {
    fn wants_subset(&self) -> bool {
        self.max_files.is_some()
            || self.max_bytes.is_some()
            || self.max_file_bytes.is_some()
            || !self.ext.is_empty()
            || !self.exclude_dir.is_empty()
    }
}

/// The fixed query set: identifiers, plain-language descriptions and path-ish
/// words, generic enough to hit both a Python and a Rust code base.
pub const QUERIES: &[&str] = &[
    // Identifiers.
    "parse_args",
    "HTTPConnection",
    "read_to_string",
    "from_str",
    "to_string",
    "serialize",
    "deserialize",
    "TcpStream",
    "unwrap_or_default",
    "getattr",
    "isinstance",
    "__init__",
    "assertEqual",
    "setUp",
    "tearDown",
    "ValueError",
    "TypeError",
    "KeyError",
    "NotImplementedError",
    "RuntimeError",
    "StopIteration",
    "OSError",
    "FileNotFoundError",
    "TimeoutError",
    "ConnectionError",
    "HashMap",
    "BTreeMap",
    "OrderedDict",
    "defaultdict",
    "namedtuple",
    "dataclass",
    "staticmethod",
    "classmethod",
    "property",
    "contextmanager",
    "lru_cache",
    "functools.partial",
    "itertools.chain",
    "os.path.join",
    "os.environ",
    "sys.argv",
    "subprocess.run",
    "Popen",
    "json.loads",
    "json.dumps",
    "urlopen",
    "urlparse",
    "socket.create_connection",
    "SSLContext",
    "ThreadPoolExecutor",
    "asyncio.gather",
    "run_until_complete",
    "async_trait",
    "Arc",
    "Mutex",
    "RwLock",
    "AtomicUsize",
    "mpsc::channel",
    "spawn_blocking",
    "JoinHandle",
    "BufReader",
    "BufWriter",
    "read_line",
    "write_all",
    "flush",
    "Iterator",
    "IntoIterator",
    "next",
    "collect",
    "filter_map",
    "Default::default",
    "fmt::Display",
    "impl Debug",
    "Result",
    "Option",
    "Box<dyn Error>",
    "anyhow",
    "thiserror",
    "logging.getLogger",
    "logger.debug",
    "warnings.warn",
    "DeprecationWarning",
    "re.compile",
    "Regex::new",
    "match_indices",
    "split_whitespace",
    "strip_prefix",
    "startswith",
    "endswith",
    "encode",
    "decode",
    "utf8",
    "base64",
    "sha256",
    "hashlib",
    "md5",
    "random.randint",
    "Random",
    "datetime.now",
    "timedelta",
    "Duration::from_secs",
    "Instant::now",
    "SystemTime",
    "sleep",
    "Path",
    "PathBuf",
    "pathlib",
    "tempfile",
    "TemporaryDirectory",
    "shutil.copy",
    "rmtree",
    "mkdir",
    "create_dir_all",
    "open",
    "close",
    "__enter__",
    "__exit__",
    "__repr__",
    "__eq__",
    "__hash__",
    "__len__",
    "__getitem__",
    "iter",
    "len",
    "sorted",
    "max_by_key",
    "binary_search",
    "bisect",
    "heapq",
    "deque",
    "VecDeque",
    // Plain-language descriptions.
    "read a config file and handle missing sections",
    "retry a failed network request",
    "parse command line arguments",
    "open a file and read its lines",
    "write data to a temporary file",
    "handle a timeout when connecting to a server",
    "decode json from a string",
    "encode a url query string",
    "convert a string to an integer",
    "split a path into directory and file name",
    "walk a directory tree recursively",
    "compare two files for equality",
    "compute a hash of a file",
    "start a thread and wait for it to finish",
    "lock shared state between threads",
    "send a message over a channel",
    "run a subprocess and capture its output",
    "read environment variables with a default",
    "format a date as a string",
    "parse a date string",
    "measure elapsed time",
    "sort a list by a key",
    "remove duplicates from a list",
    "merge two dictionaries",
    "iterate over pairs of items",
    "cache the result of a function",
    "log an error with a traceback",
    "raise an exception when input is invalid",
    "validate user input",
    "escape html special characters",
    "parse an xml document",
    "read a csv file",
    "compress data with gzip",
    "extract a zip archive",
    "create a socket server",
    "accept incoming connections",
    "send an http request with headers",
    "follow redirects",
    "check if a file exists",
    "delete a directory and its contents",
    "copy a file preserving metadata",
    "read a file in binary mode",
    "buffered writes to disk",
    "serialize an object to bytes",
    "load a module dynamically",
    "find the line number of an error",
    "pretty print a data structure",
    "generate a random number",
    "shuffle a sequence",
    "match a regular expression",
    "replace text in a string",
    "wrap long lines of text",
    "count occurrences of words",
    "convert bytes to a hex string",
    "base64 encode binary data",
    "handle keyboard interrupt",
    "install a signal handler",
    "clean up resources on exit",
    "default value when key is missing",
    "iterate over files matching a pattern",
    "unit test for error handling",
    "mock a function in a test",
    "skip a test on windows",
    "assert that an exception is raised",
    "parse an email message",
    "quote a string for a shell",
    "read from standard input",
    "print to standard error",
    "set the logging level",
    "rotate log files",
    "schedule a task to run later",
    "cancel a running task",
    "wait for multiple futures",
    "limit the number of concurrent workers",
    "stream a large file in chunks",
    "convert between character encodings",
    "normalize unicode text",
    "case insensitive comparison",
    "trim whitespace from a string",
    "join strings with a separator",
    "binary search in a sorted list",
    "priority queue of tasks",
    "least recently used cache",
    "parse a version number",
    "compare version strings",
    "percent encode a path",
    "resolve a relative path",
    "get the current working directory",
    "change file permissions",
    "get the size of a file",
    "modification time of a file",
    "create a symbolic link",
    "memory mapped file",
    "lazy initialization of a global",
    // Path-ish words.
    "src/lib",
    "tests/test_",
    "email/parser",
    "http/client",
    "json/decoder",
    "util",
    "utils",
    "config",
    "encoding",
    "asyncio/tasks",
    "collections/abc",
    "io",
    "os.path",
    "unittest/mock",
    "logging/handlers",
    "xml/etree",
    "urllib/parse",
    "src/main.rs",
    "Cargo.toml",
    "setup.py",
    "__init__.py",
    "README",
    "LICENSE",
    "docs/index",
    "examples",
    "macros",
    "build.rs",
    "net/tcp",
    "serde/de",
    "fmt",
    "error.rs",
    "tests/common",
    "conftest",
    "compat",
    "types",
    "backend",
    "client",
    "server",
    "parser",
    "tokenizer",
    "lexer",
    "cli",
    "commands",
    "handlers",
];

/// The whole report (`--json` prints it).
#[derive(Debug, Serialize)]
struct Report {
    date: String,
    docdex_version: &'static str,
    build: &'static str,
    machine: Machine,
    /// CPU used by other processes during the run, as % of the machine (from `/proc/stat`);
    /// above a few percent the figures are contended and should be re-run.
    other_cpu_pct: Option<f64>,
    corpus: CorpusInfo,
    index: IndexFigures,
    code: CodeFigures,
    search: SearchFigures,
    process: Option<ProcessFigures>,
    ripgrep: RgFigures,
    /// Save-to-searchable latency under `docdex watch` (only on a copied corpus: it writes files).
    watch: Option<super::watch_latency::WatchFigures>,
    targets: Vec<Target>,
    markdown: String,
}

/// The machine the figures come from.
#[derive(Debug, Serialize)]
pub(super) struct Machine {
    pub(super) cpu: String,
    pub(super) cores: usize,
    pub(super) ram_gib: f64,
    pub(super) kernel: String,
}

/// Where the indexed tree came from.
#[derive(Debug, Serialize)]
struct CorpusInfo {
    source: PathBuf,
    indexed_path: PathBuf,
    copied_subset: bool,
    subset_files: Option<u64>,
    subset_bytes: Option<u64>,
}

/// Indexing figures.
#[derive(Debug, Serialize)]
struct IndexFigures {
    files: u64,
    chunks: u64,
    skipped: usize,
    errors: usize,
    bytes_read: u64,
    /// Bytes of the files that made it into the index (text only).
    indexed_bytes: u64,
    first_s: f64,
    /// Indexed (text) MiB per second of the first index.
    mib_per_s: f64,
    files_per_s: f64,
    phases: Phases,
    reindex_s: f64,
    reindex_unchanged: u64,
    reindex_pct_of_first: f64,
    walk_only_s: f64,
    index_bytes: u64,
    peak_rss_reset: bool,
    peak_rss_before_index_mib: f64,
    peak_rss_after_index_mib: f64,
    peak_rss_end_mib: f64,
}

/// The code pass of the first index against a plain (text-only) index of the same corpus.
#[derive(Debug, Serialize, Default)]
struct CodeFigures {
    /// Fastest of two plain rebuilds (no Tree-sitter pass), timed like the first index.
    plain_first_s: f64,
    /// CPU time (user + system, all threads) of that plain rebuild.
    plain_cpu_s: f64,
    /// CPU time of the first index with the code pass.
    full_cpu_s: f64,
    /// CPU over CPU: the ratio that a busy machine does not distort.
    cpu_ratio_to_plain: f64,
    /// First index with the code pass over the plain one (target < 2).
    ratio_to_plain: f64,
    /// Share of the first index's wall time the code pass adds: (full - plain) / full.
    added_share_pct: f64,
    files_parsed: u64,
    files_not_parsed: u64,
    files_with_parse_errors: u64,
    symbols: u64,
    /// Parse + extraction time summed over worker threads.
    extract_cpu_s: f64,
    /// Writing `symbols.db` on the writer thread.
    store_s: f64,
    /// The impact-graph rebuild call.
    graph_s: Option<f64>,
    symbols_db_bytes: u64,
    languages: Vec<LanguageFigures>,
    /// Warm search with the symbol and AST ranking signals on (default) and off, the same
    /// queries interleaved so both see the same machine.
    search_signals_on: Latency,
    search_signals_off: Latency,
}

/// Parse rate of one language (CPU time on one worker thread).
#[derive(Debug, Serialize)]
struct LanguageFigures {
    lang: String,
    files: u64,
    mib: f64,
    cpu_s: f64,
    files_per_cpu_s: f64,
    mib_per_cpu_s: f64,
}

/// Where the first index's time went, from the progress sink's phase changes.
#[derive(Debug, Serialize, Default)]
struct Phases {
    open_walk_diff_s: f64,
    read_chunk_add_s: f64,
    commit_s: f64,
    finish_merge_s: f64,
}

/// Warm in-process search latency.
#[derive(Debug, Serialize)]
struct SearchFigures {
    queries: usize,
    rounds: usize,
    latency: Latency,
    queries_with_hits: usize,
    engine_mean_search_ms: f64,
    engine_mean_rank_ms: f64,
    engine_mean_snippets_ms: f64,
    /// The slowest queries by their median over the rounds (ms), slowest first: where the
    /// p95 comes from.
    slowest: Vec<(String, f64)>,
}

/// Whole-process latency of `docdex search --json`.
#[derive(Debug, Serialize)]
struct ProcessFigures {
    queries: usize,
    failures: usize,
    latency: Latency,
    /// `docdex --version` spawned the same number of times: the floor of any docdex process.
    startup_floor: Latency,
}

/// The ripgrep comparison on the same sampled queries.
#[derive(Debug, Serialize, Default)]
struct RgFigures {
    available: bool,
    note: String,
    version: String,
    command: String,
    queries: usize,
    latency: Option<Latency>,
    rg_total_s: f64,
    docdex_in_process_total_s: f64,
    docdex_process_total_s: f64,
    speedup_in_process: f64,
    speedup_process: f64,
}

/// Latency percentiles in milliseconds.
#[derive(Debug, Serialize, Clone, Default)]
struct Latency {
    samples: usize,
    p50_ms: f64,
    p95_ms: f64,
    p99_ms: f64,
    mean_ms: f64,
    max_ms: f64,
}

/// One target and whether it was met (`None` when it does not apply).
#[derive(Debug, Serialize)]
struct Target {
    name: String,
    target: String,
    value: String,
    pass: Option<bool>,
}

/// Runs the benchmark.
pub fn run(_engine: &Engine, out: &Out, args: BenchArgs) -> anyhow::Result<()> {
    let source = std::fs::canonicalize(&args.corpus).with_context(|| format!("corpus {}", args.corpus.display()))?;
    if cfg!(debug_assertions) {
        out.note("warning: this is a debug build; figures are only meaningful from `cargo build --release`");
    }
    let scratch = Scratch::create(args.keep)?;
    let corpus = prepare_corpus(out, &source, &scratch, &args)?;
    let home = scratch.root.join("home");
    // This bench measures keyword search; `docdex bench-hybrid` measures embeddings.
    std::fs::create_dir_all(&home).with_context(|| format!("creating {}", home.display()))?;
    std::fs::write(home.join("config.toml"), "[search]\nhybrid = false\n").context("writing the bench config")?;
    let engine = Engine::open_at(&home).context("opening the bench home")?;
    let cpu_start = CpuSnapshot::take();
    out.note(&format!("indexing {} (fresh DOCDEX_HOME {})", corpus.indexed_path.display(), home.display()));
    out.note("plain (text-only) index, twice, for the code pass's share");
    let (plain_first_s, plain_cpu_s) = measure_plain_index(&engine, &corpus.indexed_path)?;
    let (mut index, mut code) = measure_index(&engine, &corpus.indexed_path)?;
    code.plain_first_s = plain_first_s;
    code.plain_cpu_s = plain_cpu_s;
    code.cpu_ratio_to_plain = code.full_cpu_s / plain_cpu_s.max(1e-9);
    code.ratio_to_plain = index.first_s / plain_first_s.max(1e-9);
    code.added_share_pct = 100.0 * (index.first_s - plain_first_s) / index.first_s.max(1e-9);
    out.note(&format!("searching: {} queries x {} rounds", QUERIES.len(), args.rounds));
    let (search, per_query) = measure_search(&engine, &corpus.indexed_path, args.rounds.max(1))?;
    let (on, off) = measure_signal_cost(&engine, &home, &corpus.indexed_path, args.rounds.max(1))?;
    code.search_signals_on = on;
    code.search_signals_off = off;
    let sample = sample_indices(QUERIES.len(), args.process_queries);
    let process = measure_process(out, &home, &corpus.indexed_path, &sample)?;
    let rg_sample = if args.no_rg { &[][..] } else { &sample[..] };
    let ripgrep = measure_rg(out, &corpus.indexed_path, rg_sample, &per_query, process.as_ref());
    index.peak_rss_end_mib = kib_to_mib(proc_status_kib("VmHWM:").unwrap_or(0));
    let watch = if corpus.copied_subset {
        out.note("timing save-to-searchable under the watcher");
        Some(super::watch_latency::measure(&engine, &corpus.indexed_path)?)
    } else {
        out.note(
            "watcher latency skipped: it writes files, so it runs only on a copied corpus (--max-files/--max-bytes)",
        );
        None
    };
    let others = cpu_start.zip(CpuSnapshot::take()).map(|(a, b)| a.others_pct(&b));
    let mut report = assemble(corpus, index, code, search, process, ripgrep, others);
    if watch.is_some() {
        report.watch = watch;
        report.targets = targets(&report);
        report.markdown = markdown(&report);
    }
    print_report(out, &report, args.json)?;
    if args.keep {
        out.note(&format!("kept {}", scratch.root.display()));
    }
    Ok(())
}

fn assemble(
    corpus: CorpusInfo,
    index: IndexFigures,
    code: CodeFigures,
    search: SearchFigures,
    process: Option<ProcessFigures>,
    ripgrep: RgFigures,
    other_cpu_pct: Option<f64>,
) -> Report {
    let mut report = Report {
        date: today_utc(),
        docdex_version: env!("CARGO_PKG_VERSION"),
        build: if cfg!(debug_assertions) { "debug" } else { "release" },
        machine: machine_info(),
        other_cpu_pct,
        corpus,
        index,
        code,
        search,
        process,
        ripgrep,
        watch: None,
        targets: Vec::new(),
        markdown: String::new(),
    };
    report.targets = targets(&report);
    report.markdown = markdown(&report);
    report
}

// ---------------------------------------------------------------- scratch space

/// A temporary directory (std only), removed on drop unless kept.
pub(super) struct Scratch {
    /// The temporary directory.
    pub(super) root: PathBuf,
    keep: bool,
}

impl Scratch {
    pub(super) fn create(keep: bool) -> anyhow::Result<Scratch> {
        let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let root = std::env::temp_dir().join(format!("docdex-bench-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
        Ok(Scratch { root, keep })
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}

// ---------------------------------------------------------------- corpus

/// Uses the corpus in place, or copies the requested deterministic subset.
fn prepare_corpus(out: &Out, source: &Path, scratch: &Scratch, args: &BenchArgs) -> anyhow::Result<CorpusInfo> {
    let mut info = CorpusInfo {
        source: source.to_path_buf(),
        indexed_path: source.to_path_buf(),
        copied_subset: false,
        subset_files: None,
        subset_bytes: None,
    };
    if !args.wants_subset() {
        return Ok(info);
    }
    let picked = select_subset(source, args)?;
    let dest = scratch.root.join("corpus");
    out.note(&format!("copying {} files into {}", picked.len(), dest.display()));
    for (rel, abs, _) in &picked {
        copy_file(abs, &dest.join(rel))?;
    }
    std::fs::create_dir_all(&dest).with_context(|| format!("creating {}", dest.display()))?;
    info.indexed_path = std::fs::canonicalize(&dest).with_context(|| format!("resolving {}", dest.display()))?;
    info.copied_subset = true;
    info.subset_files = Some(picked.len() as u64);
    info.subset_bytes = Some(picked.iter().map(|p| p.2).sum());
    Ok(info)
}

pub(super) fn copy_file(from: &Path, to: &Path) -> anyhow::Result<()> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::copy(from, to).with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
    Ok(())
}

/// Files of the tree (ignore files and hidden entries honoured, like the
/// indexer), sorted by relative path, filtered, then taken in order until a
/// file-count or byte budget would be exceeded. Binary files are passed over.
fn select_subset(root: &Path, args: &BenchArgs) -> anyhow::Result<Vec<(String, PathBuf, u64)>> {
    let mut all = list_files(root);
    all.sort_by(|a, b| a.0.cmp(&b.0));
    let max_files = args.max_files.unwrap_or(usize::MAX);
    let max_bytes = args.max_bytes.unwrap_or(u64::MAX);
    let mut picked = Vec::new();
    let mut bytes = 0u64;
    for (rel, abs, size) in all {
        if !keep_path(&rel, size, args) || is_binary(&abs) {
            continue;
        }
        if picked.len() >= max_files || bytes.saturating_add(size) > max_bytes {
            break;
        }
        bytes += size;
        picked.push((rel, abs, size));
    }
    if picked.is_empty() {
        anyhow::bail!("no file of {} matches the subset options", root.display());
    }
    Ok(picked)
}

pub(super) fn list_files(root: &Path) -> Vec<(String, PathBuf, u64)> {
    let mut all = Vec::new();
    for entry in ignore::WalkBuilder::new(root).follow_links(false).build().flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(md) = entry.metadata() else { continue };
        let rel = index::walk::rel_path(root, entry.path());
        all.push((rel, entry.path().to_path_buf(), md.len()));
    }
    all
}

fn keep_path(rel: &str, size: u64, args: &BenchArgs) -> bool {
    let ext_ok = args.ext.is_empty() || {
        let e = Path::new(rel).extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
        args.ext.iter().any(|want| want.trim_start_matches('.').eq_ignore_ascii_case(&e))
    };
    let dir_ok = !rel.split('/').rev().skip(1).any(|d| args.exclude_dir.iter().any(|x| x == d));
    let size_ok = args.max_file_bytes.is_none_or(|m| size <= m);
    ext_ok && dir_ok && size_ok
}

/// A NUL byte in the first 8 KiB (the indexer's rule); unreadable files count as binary.
pub(super) fn is_binary(path: &Path) -> bool {
    let mut buf = Vec::with_capacity(8192);
    match std::fs::File::open(path).and_then(|f| f.take(8192).read_to_end(&mut buf)) {
        Ok(_) => memchr::memchr(0, &buf).is_some(),
        Err(_) => true,
    }
}

/// Parses `14M`, `512K`, `1G`, `1000` (binary multiples).
fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_uppercase();
    let t = t.trim_end_matches("IB").trim_end_matches('B');
    let (num, mult) = match t.chars().last() {
        Some('K') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M') => (&t[..t.len() - 1], 1 << 20),
        Some('G') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let n: f64 = num.trim().parse().map_err(|_| format!("bad size {s:?}: use e.g. 14M, 512K or 1000"))?;
    if !n.is_finite() || n < 0.0 {
        return Err(format!("bad size {s:?}"));
    }
    Ok((n * mult as f64) as u64)
}

// ---------------------------------------------------------------- indexing

/// Records when each progress phase was first seen.
struct PhaseClock {
    seen: Mutex<Vec<(String, Instant)>>,
}

impl ProgressSink for PhaseClock {
    fn progress(&self, p: &IndexProgress) {
        if let Ok(mut seen) = self.seen.lock() {
            if !seen.iter().any(|(name, _)| name == &p.phase) {
                seen.push((p.phase.clone(), Instant::now()));
            }
        }
    }
}

impl PhaseClock {
    fn new() -> Self {
        PhaseClock { seen: Mutex::new(Vec::new()) }
    }

    fn at(&self, phase: &str) -> Option<Instant> {
        self.seen.lock().ok()?.iter().find(|(n, _)| n == phase).map(|(_, t)| *t)
    }

    /// Splits `start..end` at the first `indexing`, `committing` and `done` reports.
    fn phases(&self, start: Instant, end: Instant) -> Phases {
        let indexing = self.at("indexing").unwrap_or(start);
        let committing = self.at("committing").unwrap_or(indexing);
        let done = self.at("done").unwrap_or(end);
        let secs = |a: Instant, b: Instant| b.saturating_duration_since(a).as_secs_f64();
        Phases {
            open_walk_diff_s: secs(start, indexing),
            read_chunk_add_s: secs(indexing, committing),
            commit_s: secs(committing, done),
            finish_merge_s: secs(done, end),
        }
    }
}

/// The fastest of two plain rebuilds (text only, no code pass): wall and CPU seconds.
fn measure_plain_index(engine: &Engine, corpus: &Path) -> anyhow::Result<(f64, f64)> {
    let opts = IndexOptions { rebuild: true, skip_code: true, ..Default::default() };
    let mut best = (f64::MAX, f64::MAX);
    for _ in 0..2 {
        let cpu = process_cpu_seconds();
        let (r, s) = timed(|| engine.index(corpus, &opts, &|_: &IndexProgress| {}));
        r?;
        let cpu = process_cpu_seconds() - cpu;
        if s < best.0 {
            best = (s, cpu);
        }
    }
    Ok(best)
}

/// CPU time (user + system) of this process, all threads, in seconds.
pub(super) fn process_cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct we own.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return 0.0;
    }
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    t(u.ru_utime) + t(u.ru_stime)
}

/// The code pass's figures from the first index's summary.
fn code_figures(s: &IndexSummary, symbols_db_bytes: u64) -> CodeFigures {
    let Some(c) = &s.code else { return CodeFigures::default() };
    let languages = c
        .languages
        .iter()
        .map(|(lang, t)| {
            let mib = t.bytes as f64 / (1024.0 * 1024.0);
            LanguageFigures {
                lang: lang.clone(),
                files: t.files,
                mib,
                cpu_s: t.seconds,
                files_per_cpu_s: t.files as f64 / t.seconds.max(1e-9),
                mib_per_cpu_s: mib / t.seconds.max(1e-9),
            }
        })
        .collect();
    CodeFigures {
        files_parsed: c.files_parsed,
        files_not_parsed: c.files_not_parsed,
        files_with_parse_errors: c.files_with_parse_errors,
        symbols: c.symbols_extracted,
        extract_cpu_s: c.extract_seconds,
        store_s: c.store_seconds,
        graph_s: c.graph_seconds,
        symbols_db_bytes,
        languages,
        ..Default::default()
    }
}

fn measure_index(engine: &Engine, corpus: &Path) -> anyhow::Result<(IndexFigures, CodeFigures)> {
    let peak_rss_reset = reset_peak_rss();
    let before = proc_status_kib("VmHWM:").unwrap_or(0);
    let clock = PhaseClock::new();
    let cpu0 = process_cpu_seconds();
    let t0 = Instant::now();
    let first = engine.index(corpus, &IndexOptions { rebuild: true, ..Default::default() }, &clock)?;
    let t1 = Instant::now();
    let full_cpu_s = process_cpu_seconds() - cpu0;
    let after = proc_status_kib("VmHWM:").unwrap_or(0);
    let first_s = (t1 - t0).as_secs_f64();
    let (again, reindex_s) = timed(|| engine.index(corpus, &IndexOptions::default(), &|_: &IndexProgress| {}));
    let again = again?;
    let repo = engine.resolve_repo(corpus)?;
    let cfg = &engine.config().index;
    let (_, walk_only_s) =
        timed(|| index::walk::walk(&repo.root, std::slice::from_ref(&repo.root), cfg, index::thread_count(cfg)));
    let manifest = index::manifest::Manifest::load(&repo.manifest_path());
    let indexed_bytes: u64 = manifest.files.values().filter(|e| e.skipped.is_none()).map(|e| e.size).sum();
    let db = crate::engine::code::store::db_path(&repo);
    let db_bytes = ["", "-wal"]
        .iter()
        .filter_map(|s| std::fs::metadata(format!("{}{s}", db.display())).ok())
        .map(|m| m.len())
        .sum();
    let code = CodeFigures { full_cpu_s, ..code_figures(&first, db_bytes) };
    let figures = IndexFigures {
        indexed_bytes,
        mib_per_s: indexed_bytes as f64 / (1024.0 * 1024.0) / first_s.max(1e-9),
        phases: clock.phases(t0, t1),
        reindex_s,
        reindex_unchanged: again.unchanged,
        reindex_pct_of_first: 100.0 * reindex_s / first_s.max(1e-9),
        walk_only_s,
        index_bytes: dir_size(&repo.index_dir()),
        peak_rss_reset,
        peak_rss_before_index_mib: kib_to_mib(before),
        peak_rss_after_index_mib: kib_to_mib(after),
        peak_rss_end_mib: 0.0,
        ..index_counts(&first, first_s)
    };
    Ok((figures, code))
}

fn index_counts(s: &IndexSummary, first_s: f64) -> IndexFigures {
    IndexFigures {
        files: s.files,
        chunks: s.chunks,
        skipped: s.skipped.len(),
        errors: s.errors.len(),
        bytes_read: s.bytes_read,
        indexed_bytes: 0,
        first_s,
        mib_per_s: 0.0,
        files_per_s: s.files as f64 / first_s.max(1e-9),
        phases: Phases::default(),
        reindex_s: 0.0,
        reindex_unchanged: 0,
        reindex_pct_of_first: 0.0,
        walk_only_s: 0.0,
        index_bytes: 0,
        peak_rss_reset: false,
        peak_rss_before_index_mib: 0.0,
        peak_rss_after_index_mib: 0.0,
        peak_rss_end_mib: 0.0,
    }
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = Instant::now();
    let v = f();
    (v, t.elapsed().as_secs_f64())
}

/// Total size of the regular files under `dir`.
fn dir_size(dir: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(dir) else { return 0 };
    rd.flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map(|m| m.len()).unwrap_or(0),
            _ => 0,
        })
        .sum()
}

// ---------------------------------------------------------------- search

/// How many of the slowest warm queries the report names.
const SLOWEST_SHOWN: usize = 5;

/// Warm in-process latency; also returns each query's median (ms) for the rg ratio.
fn measure_search(engine: &Engine, corpus: &Path, rounds: usize) -> anyhow::Result<(SearchFigures, Vec<f64>)> {
    let req = |q: &str| SearchRequest { query: q.to_string(), ..Default::default() };
    let mut with_hits = 0;
    for q in QUERIES {
        if engine.search(corpus, &req(q))?.total_hits > 0 {
            with_hits += 1;
        }
    }
    let mut per_query: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); QUERIES.len()];
    let mut parts = [0.0f64; 3];
    for _ in 0..rounds {
        for (i, q) in QUERIES.iter().enumerate() {
            let t = Instant::now();
            let resp = engine.search(corpus, &req(q))?;
            per_query[i].push(ms(t.elapsed()));
            parts[0] += resp.timing_ms.search;
            parts[1] += resp.timing_ms.rank;
            parts[2] += resp.timing_ms.snippets;
        }
    }
    let all: Vec<f64> = per_query.iter().flatten().copied().collect();
    let n = all.len().max(1) as f64;
    let medians: Vec<f64> = per_query.iter().map(|v| latency(v).p50_ms).collect();
    let mut slowest: Vec<(String, f64)> = QUERIES.iter().map(|q| q.to_string()).zip(medians.iter().copied()).collect();
    slowest.sort_by(|a, b| b.1.total_cmp(&a.1));
    slowest.truncate(SLOWEST_SHOWN);
    let figures = SearchFigures {
        queries: QUERIES.len(),
        rounds,
        latency: latency(&all),
        queries_with_hits: with_hits,
        engine_mean_search_ms: parts[0] / n,
        engine_mean_rank_ms: parts[1] / n,
        engine_mean_snippets_ms: parts[2] / n,
        slowest,
    };
    Ok((figures, medians))
}

/// Warm latency with the ranking signals on and off, query by query in alternation.
fn measure_signal_cost(
    engine: &Engine,
    home: &Path,
    corpus: &Path,
    rounds: usize,
) -> anyhow::Result<(Latency, Latency)> {
    let mut config = engine.config().clone();
    config.search.symbol_ranking_enabled = false;
    config.search.ast_ranking_enabled = false;
    let off = Engine::with_config(home, config, engine.config_path().to_path_buf(), Vec::new())?;
    let req = |q: &str| SearchRequest { query: q.to_string(), ..Default::default() };
    for q in QUERIES {
        off.search(corpus, &req(q))?;
    }
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        for q in QUERIES {
            let t = Instant::now();
            engine.search(corpus, &req(q))?;
            a.push(ms(t.elapsed()));
            let t = Instant::now();
            off.search(corpus, &req(q))?;
            b.push(ms(t.elapsed()));
        }
    }
    Ok((latency(&a), latency(&b)))
}

/// `n` indices spread evenly over `0..len`.
fn sample_indices(len: usize, n: usize) -> Vec<usize> {
    let n = n.min(len);
    (0..n).map(|i| i * len / n).collect()
}

fn search_command(exe: &Path, home: &Path, corpus: &Path, query: &str) -> Command {
    let mut cmd = Command::new(exe);
    cmd.arg("search").arg("--repo").arg(corpus).arg("--json").arg("--").arg(query);
    cmd.env("DOCDEX_HOME", home).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

fn version_command(exe: &Path) -> Command {
    let mut cmd = Command::new(exe);
    cmd.arg("--version").stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

/// Spawns `docdex search --json` per sampled query; `None` when the sample is empty.
fn measure_process(out: &Out, home: &Path, corpus: &Path, sample: &[usize]) -> anyhow::Result<Option<ProcessFigures>> {
    if sample.is_empty() {
        return Ok(None);
    }
    let exe = std::env::current_exe().context("finding the docdex executable")?;
    out.note(&format!("whole-process search: {} queries via {}", sample.len(), exe.display()));
    let _ = search_command(&exe, home, corpus, "warm up").output();
    let mut times = Vec::with_capacity(sample.len());
    let mut failures = 0;
    for &i in sample {
        let t = Instant::now();
        let res = search_command(&exe, home, corpus, QUERIES[i]).output();
        times.push(ms(t.elapsed()));
        if !res.is_ok_and(|o| o.status.success()) {
            failures += 1;
        }
    }
    let floor: Vec<f64> = sample.iter().map(|_| timed(|| version_command(&exe).output()).1 * 1000.0).collect();
    Ok(Some(ProcessFigures {
        queries: sample.len(),
        failures,
        latency: latency(&times),
        startup_floor: latency(&floor),
    }))
}

// ---------------------------------------------------------------- ripgrep

/// English function words left out of rg patterns (`-e a` would match nearly every line).
const RG_SKIP_WORDS: &[&str] = &[
    "a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "is", "it", "its", "of", "on", "or", "that",
    "the", "this", "to", "when", "with",
];

/// The words of a query (runs of letters, digits and `_`), deduplicated, function words dropped.
fn query_words(q: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for w in q.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty()) {
        let skip = RG_SKIP_WORDS.iter().any(|s| s.eq_ignore_ascii_case(w));
        if !skip && !words.iter().any(|x| x.eq_ignore_ascii_case(w)) {
            words.push(w.to_string());
        }
    }
    words
}

fn rg_command(corpus: &Path, query: &str) -> Command {
    let mut cmd = Command::new("rg");
    cmd.args(["-i", "-c", "--no-messages", "-F"]);
    let mut words = query_words(query);
    if words.is_empty() {
        words.push(query.to_string());
    }
    for w in words {
        cmd.arg("-e").arg(w);
    }
    cmd.arg(corpus).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null());
    cmd
}

fn rg_version() -> Option<String> {
    let o = Command::new("rg").arg("--version").stderr(Stdio::null()).output().ok()?;
    let text = String::from_utf8_lossy(&o.stdout);
    o.status.success().then(|| text.lines().next().unwrap_or("rg").to_string())
}

/// Times rg over the sample and compares it with docdex on the same queries.
fn measure_rg(
    out: &Out,
    corpus: &Path,
    sample: &[usize],
    medians: &[f64],
    process: Option<&ProcessFigures>,
) -> RgFigures {
    let command = format!("rg -i -c --no-messages -F -e WORD1 -e WORD2 ... {}", corpus.display());
    let mut f = RgFigures { command, ..Default::default() };
    if sample.is_empty() {
        f.note = "skipped (--no-rg or --process-queries 0)".into();
        return f;
    }
    let Some(version) = rg_version() else {
        f.note = "rg not found on PATH: comparison skipped (install ripgrep)".into();
        out.note(&f.note);
        return f;
    };
    out.note(&format!("ripgrep: {} queries over {}", sample.len(), corpus.display()));
    let _ = rg_command(corpus, QUERIES[sample[0]]).output();
    let mut times = Vec::with_capacity(sample.len());
    for &i in sample {
        let t = Instant::now();
        let ok = rg_command(corpus, QUERIES[i]).output().is_ok_and(|o| o.status.code().is_some_and(|c| c <= 1));
        times.push(ms(t.elapsed()));
        if !ok {
            f.note = format!("rg failed on query {:?}", QUERIES[i]);
        }
    }
    f.available = true;
    f.version = version;
    f.queries = sample.len();
    f.rg_total_s = times.iter().sum::<f64>() / 1000.0;
    f.docdex_in_process_total_s = sample.iter().filter_map(|&i| medians.get(i)).sum::<f64>() / 1000.0;
    f.speedup_in_process = f.rg_total_s / f.docdex_in_process_total_s.max(1e-9);
    if let Some(p) = process {
        f.docdex_process_total_s = p.latency.mean_ms * sample.len() as f64 / 1000.0;
        f.speedup_process = f.rg_total_s / f.docdex_process_total_s.max(1e-9);
    }
    f.latency = Some(latency(&times));
    f
}

// ---------------------------------------------------------------- statistics and system facts

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Nearest-rank percentiles.
fn latency(samples: &[f64]) -> Latency {
    if samples.is_empty() {
        return Latency::default();
    }
    let mut v = samples.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| v[((p / 100.0 * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
    Latency {
        samples: v.len(),
        p50_ms: pct(50.0),
        p95_ms: pct(95.0),
        p99_ms: pct(99.0),
        mean_ms: v.iter().sum::<f64>() / v.len() as f64,
        max_ms: v[v.len() - 1],
    }
}

/// A `kB` field of `/proc/self/status` (`VmHWM:`, `VmRSS:`).
fn proc_status_kib(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line[key.len()..].split_whitespace().next()?.parse().ok()
}

/// Resets this process's peak RSS (Linux: writing 5 to `clear_refs`).
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Machine-wide and own CPU ticks, to tell how busy other processes kept the machine.
pub(super) struct CpuSnapshot {
    busy: u64,
    total: u64,
    own: u64,
}

impl CpuSnapshot {
    pub(super) fn take() -> Option<CpuSnapshot> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let nums: Vec<u64> =
            stat.lines().next()?.split_whitespace().skip(1).take(8).filter_map(|v| v.parse().ok()).collect();
        let idle = nums.get(3)? + nums.get(4)?;
        let total: u64 = nums.iter().sum();
        let own = std::fs::read_to_string("/proc/self/stat").ok()?;
        // Fields after the `(comm)`: utime, stime, cutime, cstime are the 12th to 15th.
        let rest = own.rsplit_once(')')?.1;
        let own: u64 = rest.split_whitespace().skip(11).take(4).filter_map(|v| v.parse::<u64>().ok()).sum();
        Some(CpuSnapshot { busy: total - idle, total, own })
    }

    /// Other processes' share of the machine's CPU between `self` and `later`, in percent.
    pub(super) fn others_pct(&self, later: &CpuSnapshot) -> f64 {
        let busy = later.busy.saturating_sub(self.busy);
        let own = later.own.saturating_sub(self.own);
        let total = later.total.saturating_sub(self.total).max(1);
        100.0 * busy.saturating_sub(own) as f64 / total as f64
    }
}

fn kib_to_mib(k: u64) -> f64 {
    k as f64 / 1024.0
}

pub(super) fn machine_info() -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let ram_kib: u64 = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    Machine {
        cpu,
        cores: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        ram_gib: ram_kib as f64 / (1024.0 * 1024.0),
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()).unwrap_or_default(),
    }
}

/// Today's UTC date as `YYYY-MM-DD` (civil-from-days, no subprocess).
pub(super) fn today_utc() -> String {
    let secs = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Howard Hinnant's days-since-epoch to (year, month, day).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = (if mp < 10 { mp + 3 } else { mp - 9 }) as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

// ---------------------------------------------------------------- targets and output

/// The 5,000-file / 14 MB indexing target applies to corpora up to this size.
const SMALL_CORPUS_FILES: u64 = 5_000;
const SMALL_CORPUS_BYTES: u64 = 15 * 1024 * 1024;

fn target(name: &str, target: &str, value: String, pass: Option<bool>) -> Target {
    Target { name: name.into(), target: target.into(), value, pass }
}

fn targets(r: &Report) -> Vec<Target> {
    let i = &r.index;
    let small = i.files <= SMALL_CORPUS_FILES && i.indexed_bytes <= SMALL_CORPUS_BYTES;
    let mut t = vec![
        target(
            "Warm search p95 (in-process)",
            "< 5 ms",
            format!("{:.2} ms", r.search.latency.p95_ms),
            Some(r.search.latency.p95_ms < 5.0),
        ),
        match &r.process {
            Some(p) => target(
                "Search p95 (whole process)",
                "< 10 ms",
                format!("{:.2} ms", p.latency.p95_ms),
                Some(p.latency.p95_ms < 10.0 && p.failures == 0),
            ),
            None => target("Search p95 (whole process)", "< 10 ms", "not run".into(), None),
        },
    ];
    let rg = &r.ripgrep;
    let speed =
        |x: f64| if rg.available && x > 0.0 { (format!("{x:.1}x"), Some(x >= 20.0)) } else { ("not run".into(), None) };
    let (v, p) = speed(rg.speedup_process);
    t.push(target("vs rg scan (whole process, same queries)", ">= 20x", v, p));
    let (v, p) = speed(rg.speedup_in_process);
    t.push(target("vs rg scan (in-process, same queries)", ">= 20x", v, p));
    // Issue 2's target is for the plain (text-only) index; the code pass has its own ratio target.
    let plain_s = if r.code.plain_first_s > 0.0 { r.code.plain_first_s } else { i.first_s };
    let idx_pass = small.then_some(plain_s < 0.5);
    let idx_target = if small { "< 0.5 s (5,000 files / 14 MB)" } else { "n/a (target is for 5,000 files / 14 MB)" };
    t.push(target("First index, plain (text only)", idx_target, format!("{plain_s:.2} s"), idx_pass));
    let c = &r.code;
    if c.plain_first_s > 0.0 {
        t.push(target(
            "Index with symbols and graph / plain index",
            "< 2x",
            format!(
                "{:.2}x ({:.2} s / {:.2} s); CPU {:.2}x ({:.2} / {:.2} CPU-s)",
                c.ratio_to_plain, i.first_s, c.plain_first_s, c.cpu_ratio_to_plain, c.full_cpu_s, c.plain_cpu_s
            ),
            Some(c.ratio_to_plain < 2.0),
        ));
    }
    t.push(target(
        "Peak RSS (process VmHWM)",
        "< 1 GiB",
        format!("{:.0} MiB", i.peak_rss_end_mib),
        Some(i.peak_rss_end_mib < 1024.0),
    ));
    t.push(target(
        "Unchanged re-index / first",
        "< 5 %",
        format!("{:.1} %", i.reindex_pct_of_first),
        Some(i.reindex_pct_of_first < 5.0),
    ));
    if let Some(w) = &r.watch {
        let value = format!("max {:.0} ms, p50 {:.0} ms, {} missed", w.max_ms(), w.p50_ms(), w.missed);
        t.push(target("Saved edit searchable (watcher)", "< 1 s", value, Some(w.max_ms() < 1000.0 && w.missed == 0)));
    }
    t
}

fn verdict(p: Option<bool>) -> &'static str {
    match p {
        Some(true) => "pass",
        Some(false) => "FAIL",
        None => "n/a",
    }
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0))
}

fn lat(l: &Latency) -> String {
    format!("p50 {:.2} / p95 {:.2} / p99 {:.2} ms (max {:.2}, n={})", l.p50_ms, l.p95_ms, l.p99_ms, l.max_ms, l.samples)
}

/// Label/value rows shared by the terminal table and the Markdown block.
fn rows(r: &Report) -> Vec<(String, String)> {
    let i = &r.index;
    let mut rows = vec![
        ("Corpus".to_string(), corpus_line(&r.corpus)),
        (
            "Files indexed / chunks".into(),
            format!("{} / {} ({} skipped, {} errors)", i.files, i.chunks, i.skipped, i.errors),
        ),
        ("Text indexed / bytes read".into(), format!("{} / {}", mib(i.indexed_bytes), mib(i.bytes_read))),
        (
            "First index (rebuild)".into(),
            format!("{:.3} s ({:.1} MiB/s of text, {:.0} files/s)", i.first_s, i.mib_per_s, i.files_per_s),
        ),
        ("  phases".into(), phases_line(&i.phases)),
        (
            "Unchanged re-index".into(),
            format!(
                "{:.3} s = {:.1} % of first ({} unchanged; bare walk {:.3} s)",
                i.reindex_s, i.reindex_pct_of_first, i.reindex_unchanged, i.walk_only_s
            ),
        ),
        (
            "Index size on disk".into(),
            format!("{} (+ symbols.db {})", mib(i.index_bytes), mib(r.code.symbols_db_bytes)),
        ),
        ("Code pass".into(), code_line(&r.code)),
        ("  parse rate per language".into(), languages_line(&r.code)),
        (
            "Warm search, signals on / off".into(),
            format!(
                "p50 {:.2} / {:.2} ms, p95 {:.2} / {:.2} ms (symbol + AST ranking on vs off, interleaved)",
                r.code.search_signals_on.p50_ms,
                r.code.search_signals_off.p50_ms,
                r.code.search_signals_on.p95_ms,
                r.code.search_signals_off.p95_ms
            ),
        ),
        ("Peak RSS (VmHWM, whole bench process)".into(), rss_line(i)),
        (
            "Warm search, in-process".into(),
            format!("{} ({} queries x {} rounds)", lat(&r.search.latency), r.search.queries, r.search.rounds),
        ),
        (
            "  engine timing means".into(),
            format!(
                "retrieve {:.2} / rank {:.2} / snippets {:.2} ms; {} of {} queries have hits",
                r.search.engine_mean_search_ms,
                r.search.engine_mean_rank_ms,
                r.search.engine_mean_snippets_ms,
                r.search.queries_with_hits,
                r.search.queries
            ),
        ),
        (
            "  slowest queries (median)".into(),
            r.search.slowest.iter().map(|(q, ms)| format!("\"{q}\" {ms:.2} ms")).collect::<Vec<_>>().join(", "),
        ),
    ];
    if let Some(p) = &r.process {
        rows.push(("Search, whole process".into(), format!("{} ({} failures)", lat(&p.latency), p.failures)));
        let f = &p.startup_floor;
        rows.push(("  `docdex --version` floor".into(), format!("p50 {:.2} / p95 {:.2} ms", f.p50_ms, f.p95_ms)));
    }
    rows.push(("ripgrep".into(), rg_line(&r.ripgrep)));
    rows
}

fn code_line(c: &CodeFigures) -> String {
    format!(
        "plain index {:.3} s ({:.2} CPU-s); with symbols+graph {:.2}x wall, {:.2}x CPU, adding {:.0} % of the first index; {} files parsed ({} not, {} with syntax errors), {} symbols; extraction {:.2} CPU-s, symbols.db {:.3} s, graph rebuild {}",
        c.plain_first_s,
        c.plain_cpu_s,
        c.ratio_to_plain,
        c.cpu_ratio_to_plain,
        c.added_share_pct,
        c.files_parsed,
        c.files_not_parsed,
        c.files_with_parse_errors,
        c.symbols,
        c.extract_cpu_s,
        c.store_s,
        c.graph_s.map(|g| format!("{:.3} s", g)).unwrap_or_else(|| "not run".into())
    )
}

fn languages_line(c: &CodeFigures) -> String {
    if c.languages.is_empty() {
        return "no code files".into();
    }
    c.languages
        .iter()
        .map(|l| {
            format!("{} {} files, {:.0} files/s, {:.1} MiB/s", l.lang, l.files, l.files_per_cpu_s, l.mib_per_cpu_s)
        })
        .collect::<Vec<_>>()
        .join("; ")
        + " (per core)"
}

fn corpus_line(c: &CorpusInfo) -> String {
    match (c.subset_files, c.subset_bytes) {
        (Some(f), Some(b)) => format!("{} files, {} copied from {}", f, mib(b), c.source.display()),
        _ => format!("{} (in place)", c.source.display()),
    }
}

fn phases_line(p: &Phases) -> String {
    format!(
        "open+walk+diff {:.3} s, read+chunk+add {:.3} s, commit {:.3} s, merge wait+finish {:.3} s",
        p.open_walk_diff_s, p.read_chunk_add_s, p.commit_s, p.finish_merge_s
    )
}

fn rss_line(i: &IndexFigures) -> String {
    let reset = if i.peak_rss_reset { "reset before indexing" } else { "NOT reset: includes start-up" };
    format!(
        "{:.0} MiB at end; {:.0} MiB before index, {:.0} MiB after first index ({reset})",
        i.peak_rss_end_mib, i.peak_rss_before_index_mib, i.peak_rss_after_index_mib
    )
}

fn rg_line(rg: &RgFigures) -> String {
    let Some(l) = rg.latency.as_ref().filter(|_| rg.available) else { return rg.note.clone() };
    let mut s = format!(
        "{}: p50 {:.1} ms, p95 {:.1} ms, total {:.2} s over {} queries; docdex same queries: {:.3} s in-process ({:.1}x), {:.2} s whole process ({:.1}x)",
        rg.version, l.p50_ms, l.p95_ms, rg.rg_total_s, rg.queries, rg.docdex_in_process_total_s, rg.speedup_in_process, rg.docdex_process_total_s, rg.speedup_process
    );
    if !rg.note.is_empty() {
        s.push_str(&format!(" [{}]", rg.note));
    }
    s
}

fn markdown(r: &Report) -> String {
    let m = &r.machine;
    let others = r
        .other_cpu_pct
        .map(|p| format!("; other processes used {p:.1} % of the CPU during the run"))
        .unwrap_or_default();
    let mut s = format!(
        "Machine: {} ({} cores), {:.1} GiB RAM, Linux {}; docdex {} ({} build); {}{others}\n\n| Measure | Value |\n|---|---|\n",
        m.cpu, m.cores, m.ram_gib, m.kernel, r.docdex_version, r.build, r.date
    );
    for (k, v) in rows(r) {
        s.push_str(&format!("| {} | {} |\n", k.trim().replace('|', "\\|"), v.replace('|', "\\|")));
    }
    s.push_str("\n| Target | Goal | Measured | Result |\n|---|---|---|---|\n");
    for t in &r.targets {
        s.push_str(&format!("| {} | {} | {} | {} |\n", t.name, t.target, t.value, verdict(t.pass)));
    }
    s
}

fn print_report(out: &Out, r: &Report, json: bool) -> anyhow::Result<()> {
    if json {
        return out.json(r);
    }
    let rows = rows(r);
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (k, v) in &rows {
        out.line(&format!("{k:<width$}  {v}"));
    }
    out.line("");
    let width = r.targets.iter().map(|t| t.name.len()).max().unwrap_or(0);
    for t in &r.targets {
        out.line(&format!("{:<width$}  {:<4}  {} (goal {})", t.name, verdict(t.pass), t.value, t.target));
    }
    if let Some(p) = r.other_cpu_pct.filter(|p| *p > 5.0) {
        out.line(&format!(
            "\nwarning: other processes used {p:.1} % of the CPU during the run; the timings are contended"
        ));
    }
    out.line("\n--- Markdown for docs/PERFORMANCE.md ---\n");
    out.line(&r.markdown);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_set_is_large_and_unique() {
        assert!(QUERIES.len() >= 200, "{} queries", QUERIES.len());
        let set: std::collections::HashSet<_> = QUERIES.iter().collect();
        assert_eq!(set.len(), QUERIES.len());
        assert!(QUERIES.iter().all(|q| !q.starts_with('-') && !query_words(q).is_empty()));
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("14M"), Ok(14 << 20));
        assert_eq!(parse_size("20k"), Ok(20 << 10));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert!(parse_size("lots").is_err());
    }

    #[test]
    fn percentiles_use_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let l = latency(&v);
        assert_eq!((l.p50_ms, l.p95_ms, l.p99_ms, l.max_ms), (50.0, 95.0, 99.0, 100.0));
        assert_eq!(latency(&[]).samples, 0);
    }

    #[test]
    fn dates_are_civil() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_779), (2026, 11, 22));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn samples_spread_evenly() {
        assert_eq!(sample_indices(10, 5), vec![0, 2, 4, 6, 8]);
        assert_eq!(sample_indices(3, 50), vec![0, 1, 2]);
    }

    #[test]
    fn query_words_split_like_identifiers() {
        assert_eq!(query_words("os.path.join"), ["os", "path", "join"]);
        assert_eq!(query_words("Box<dyn Error>"), ["Box", "dyn", "Error"]);
        assert_eq!(query_words("parse_args"), ["parse_args"]);
    }
}
