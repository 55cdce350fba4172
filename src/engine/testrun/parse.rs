//! Reading a test runner's output: counts, failing tests and where they failed, for cargo's
//! libtest, pytest (`-rfE`, any `--tb` style), node's test runner (`--test-reporter=tap`), go test,
//! and jest / vitest summaries.

use super::location::{location, module_relative, package_line, relative};
use super::testify::{self, Block};
use super::types::TestFailure;
use regex::Regex;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::OnceLock;

/// What a run's output says.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Tests that passed.
    pub passed: u32,
    /// Tests that failed (errors included).
    pub failed: u32,
    /// Tests skipped or ignored.
    pub skipped: u32,
    /// The failing tests.
    pub failures: Vec<TestFailure>,
    /// The runner's own counts were read (cargo's `test result:` lines, pytest's summary,
    /// TAP's `# pass`), so all-zero counts mean no test ran, not unreadable output.
    pub counted: bool,
    /// The runner said it found no test (jest's `No tests found`, vitest's `No test files found`).
    pub none_found: bool,
    /// The tests the output shows started and not finished (`hung`): when the run was killed at
    /// its timeout, the test that hangs.
    pub hung: Vec<super::hung::Running>,
    /// What else the output says that the counts do not (compiler errors past those listed).
    pub notes: Vec<String>,
    /// The packages go test's own `-timeout` stopped (`go_timeout`): their running tests are
    /// failures, and the run ended by that timeout though go test exited by itself.
    pub stopped: Vec<String>,
}

/// Longest failure message kept, in characters (a TAP `error: |-` block is joined into one line).
const MAX_MESSAGE_CHARS: usize = 400;

fn re(cell: &'static OnceLock<Option<Regex>>, pattern: &str) -> Option<&'static Regex> {
    cell.get_or_init(|| Regex::new(pattern).ok()).as_ref()
}

/// cargo test (libtest): `test a::b ... FAILED`, `thread 'a::b' panicked at src/x.rs:3:5:`,
/// and each binary's `test result:` line, summed.
pub fn cargo(out: &str, root: &str) -> Outcome {
    static RESULT: OnceLock<Option<Regex>> = OnceLock::new();
    static PANIC: OnceLock<Option<Regex>> = OnceLock::new();
    let mut o = Outcome::default();
    let mut at: HashMap<String, (String, u32, String)> = HashMap::new();
    let mut lines = out.lines().peekable();
    // The current test binary's results line by line: its summary replaces them, and a
    // binary killed at the timeout (no summary) is counted from them.
    let mut unsummed = (0u32, 0u32, 0u32);
    while let Some(line) = lines.next() {
        if let Some(c) = re(&RESULT, r"^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored")
            .and_then(|r| r.captures(line))
        {
            o.passed += c[1].parse::<u32>().unwrap_or(0);
            o.failed += c[2].parse::<u32>().unwrap_or(0);
            o.skipped += c[3].parse::<u32>().unwrap_or(0);
            o.counted = true;
            unsummed = (0, 0, 0);
        } else if line.starts_with("test ") && line.ends_with(" ... ok") {
            unsummed.0 += 1;
        } else if line.starts_with("test ") && line.contains(" ... ignored") {
            unsummed.2 += 1;
        } else if let Some(c) =
            re(&PANIC, r"^thread '([^']+)' \([0-9]+\) panicked at ([^:]+):(\d+):\d+:?$|^thread '([^']+)' panicked at ([^:]+):(\d+):\d+:?$")
                .and_then(|r| r.captures(line))
        {
            let (name, file, l) = match (c.get(1), c.get(4)) {
                (Some(n), _) => (n.as_str(), &c[2], &c[3]),
                (None, Some(n)) => (n.as_str(), &c[5], &c[6]),
                _ => continue,
            };
            let message = lines.peek().map(|m| m.trim().to_string()).unwrap_or_default();
            at.insert(name.to_string(), (relative(file, root), l.parse().unwrap_or(0), message));
        } else if let Some(name) = line.strip_prefix("test ").and_then(|l| l.strip_suffix(" ... FAILED")) {
            o.failures.push(TestFailure { name: name.to_string(), file: None, line: None, message: None, runner: None });
            unsummed.1 += 1;
        }
    }
    o.passed += unsummed.0;
    o.failed += unsummed.1;
    o.skipped += unsummed.2;
    for f in &mut o.failures {
        if let Some((file, line, message)) = at.get(&f.name) {
            f.file = Some(file.clone());
            f.line = Some(*line);
            f.message = Some(message.clone()).filter(|m| !m.is_empty());
        }
    }
    let (errors, more) = super::cargo::build_errors(out, root);
    if !errors.is_empty() {
        // Not "no test counts": no test ran because the tests did not build.
        o.counted = true;
        o.notes.push("the tests did not compile, so none ran: each compiler error is a failure".into());
    }
    o.failures.extend(errors);
    if more > 0 {
        o.notes.push(format!("{more} more compiler errors are not listed as failures: see the output"));
    }
    o.hung = super::hung::cargo(out);
    o
}

/// Where a pytest report line is: the `FAILURES` section (with `--tb=line` one `path:line:
/// message` crash line per failure, in the order of the summary), `ERRORS` (a block per error,
/// its exception on an `E   ` line), the short test summary, or elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Other,
    Failures,
    Errors,
    Summary,
}

/// What the report's sections say about one failure or error.
#[derive(Debug, Default, Clone)]
struct Detail {
    /// The `ERRORS` block's title (`collecting tests/test_x.py`, `at setup of test_y`).
    title: String,
    /// The traceback's locations, outermost first (`--tb=line` gives one, the crash's).
    places: Vec<(String, Option<u32>)>,
    message: Option<String>,
    /// The message is an indented `E` line, kept only until an exception's line comes.
    indented: bool,
    /// A `FAILURES` block under its `___ test_name ___` header (any `--tb` style but `line`).
    block: bool,
    /// Past the block's `--- Captured ... ---` output, which is the test's, not the traceback.
    captured: bool,
    /// `--tb=native`: the last unindented line after `Traceback (most recent call last):`,
    /// the exception.
    native: Option<String>,
}

/// pytest with `f` and `E` in its report chars, and `--tb=line` unless the user's `addopts`
/// chose another style: the final `N failed, M passed, K skipped in 0.1s` line, `FAILED
/// path::name - message` summaries (their messages cut to the terminal's width, so the full
/// first line is taken from the `FAILURES` section: a crash line, or a block's `E` line), and
/// the `ERRORS` blocks (a collection error's summary has no message: its `E   ` line does).
///
/// `run_dir` is where pytest ran, relative to `root` (`""` for the root): the paths it prints
/// relative (the summary's, a traceback's) are relative to it, and are made repo-relative.
pub fn pytest(out: &str, root: &str, run_dir: &str) -> Outcome {
    let place = |file: &str| {
        if file.starts_with('/') || run_dir.is_empty() {
            relative(file, root)
        } else {
            format!("{}/{file}", run_dir.trim_end_matches('/'))
        }
    };
    static WHERE: OnceLock<Option<Regex>> = OnceLock::new();
    let mut o = Outcome::default();
    let mut section = Section::Other;
    let (mut crashes, mut errors): (Vec<Detail>, Vec<Detail>) = (Vec::new(), Vec::new());
    let (mut failed_at, mut error_at): (Vec<usize>, Vec<usize>) = (Vec::new(), Vec::new());
    for line in out.lines() {
        let trimmed = line.trim();
        if trimmed.len() > 2 && trimmed.starts_with('=') && trimmed.ends_with('=') {
            section = match trimmed.trim_matches('=').trim() {
                "FAILURES" => Section::Failures,
                "ERRORS" => Section::Errors,
                "short test summary info" => Section::Summary,
                _ => Section::Other,
            };
        }
        match section {
            Section::Failures => failure_line(&mut crashes, line, &place),
            Section::Errors => {
                if let Some(title) = trimmed.strip_prefix('_').map(|t| t.trim_matches('_').trim()) {
                    if let Some(title) = title.strip_prefix("ERROR ") {
                        errors.push(Detail { title: title.to_string(), ..Detail::default() });
                    }
                } else if let Some(d) = errors.last_mut() {
                    error_detail(d, line, &place, &WHERE);
                }
            }
            Section::Summary => {
                let (kind, rest) = match (trimmed.strip_prefix("FAILED "), trimmed.strip_prefix("ERROR ")) {
                    (Some(r), _) => (&mut failed_at, r),
                    (None, Some(r)) => (&mut error_at, r),
                    _ => {
                        pytest_counts(trimmed, &mut o);
                        continue;
                    }
                };
                let (id, message) = rest.split_once(" - ").unwrap_or((rest, ""));
                kind.push(o.failures.len());
                o.failures.push(TestFailure {
                    name: place(id.trim()),
                    file: id.split("::").next().map(|f| place(f.trim())),
                    line: None,
                    message: Some(message.trim().to_string()).filter(|m| !m.is_empty()),
                    runner: None,
                });
            }
            Section::Other => pytest_counts(trimmed, &mut o),
        }
    }
    attach(&mut o.failures, &failed_at, &crashes, |f, d| {
        if d.block {
            f.name.rsplit("::").next().is_some_and(|n| n == d.title || d.title.ends_with(&format!(".{n}")))
        } else {
            d.places.first().map(|(file, _)| file) == f.file.as_ref()
        }
    });
    let unplaced = |name: &str| {
        let prefix = format!("{}/", run_dir.trim_end_matches('/'));
        name.strip_prefix(&prefix).filter(|_| !run_dir.is_empty()).unwrap_or(name).to_string()
    };
    attach(&mut o.failures, &error_at, &errors, |f, d| d.title == format!("collecting {}", unplaced(&f.name)));
    o.hung = super::hung::pytest(out, run_dir.trim_end_matches('/'));
    o
}

/// What pytest said when it refused its arguments or configuration before running anything
/// (its exit code 4): the `ERROR: not found: ...` / `error: unrecognized arguments: -n` lines
/// (with a following `(no match in any of ...)`) and the `inifile:` it read, so the user sees
/// what to fix (an `addopts` naming a plugin not installed, a mistyped node id) instead of a
/// failed suite with no failure. `None` when the output holds none of them.
pub fn pytest_refused(out: &str) -> Option<String> {
    let lines: Vec<&str> = out.lines().map(str::trim).collect();
    let mut said: Vec<String> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let error = line.contains(": error: ") || (line.starts_with("ERROR:") && !line.starts_with("ERROR: usage:"));
        if !error {
            continue;
        }
        let text = line.split_once(": error: ").map_or(*line, |(_, e)| e);
        let text = text.strip_prefix("ERROR:").map_or(text, str::trim);
        match lines.get(i + 1).filter(|n| n.starts_with("(no match")) {
            Some(more) => said.push(format!("{text} {more}")),
            None => said.push(text.to_string()),
        }
    }
    if said.is_empty() {
        return None;
    }
    let inifile = lines.iter().find_map(|l| l.strip_prefix("inifile:")).map(str::trim);
    let mut text = said.join("; ");
    if let Some(ini) = inifile.filter(|_| text.contains("unrecognized arguments")) {
        text.push_str(&format!(" (inifile {ini}: its addopts may name a plugin's option, the plugin not installed)"));
    }
    Some(text)
}

/// One line of an `ERRORS` block into its detail: the exception's `E   ` line (the first not
/// indented further: a SyntaxError's `File ...` and source lines are; an indented one when
/// there is no other, as `fixture 'cache' not found`), and the last traceback line `path:N: in
/// ...` (or a fixture error's bare `path:N`) as where it happened.
fn error_detail(d: &mut Detail, line: &str, place: &dyn Fn(&str) -> String, cell: &'static OnceLock<Option<Regex>>) {
    if let Some(e) = line.strip_prefix("E   ").filter(|e| !e.trim().is_empty()) {
        let indented = e.starts_with(char::is_whitespace);
        if d.message.is_none() || (d.indented && !indented) {
            d.message = Some(e.trim().to_string());
            d.indented = indented;
        }
    } else if let Some(c) = re(cell, r"^(\S+\.py):(\d+)(: in |$)").and_then(|r| r.captures(line)) {
        d.places.push((place(&c[1]), c[2].parse().ok()));
    }
}

/// One line of the `FAILURES` section. With `--tb=line` (no `___ name ___` headers) each
/// `path:N: message` line is one failure's crash; in any other style (the user's `--tb` in
/// `addopts`, which docdex leaves alone) each header opens a block whose `path:N:` lines
/// (`long`, `short`, `auto`) or `File "path", line N` lines (`native`) are its traceback and
/// whose first `E   ` line (or, native, the exception's line) is its message.
fn failure_line(crashes: &mut Vec<Detail>, line: &str, place: &dyn Fn(&str) -> String) {
    static CRASH: OnceLock<Option<Regex>> = OnceLock::new();
    let trimmed = line.trim();
    if let Some(title) = block_header(trimmed) {
        crashes.push(Detail { title: title.to_string(), block: true, ..Detail::default() });
        return;
    }
    match crashes.last_mut().filter(|d| d.block) {
        Some(d) => block_line(d, line, place),
        None => {
            if let Some(c) = re(&CRASH, r"^(\S+\.py):(\d+): (.*)$").and_then(|r| r.captures(line)) {
                crashes.push(Detail {
                    places: vec![(place(&c[1]), c[2].parse().ok())],
                    message: Some(c[3].trim().to_string()).filter(|m| !m.is_empty()),
                    ..Detail::default()
                });
            }
        }
    }
}

/// A failure block's header, `______ test_name ______`, its name (not the `_ _ _` line
/// between a traceback's files).
fn block_header(trimmed: &str) -> Option<&str> {
    let name = trimmed.strip_prefix("___")?.strip_suffix("___")?.trim_matches('_');
    (name.starts_with(' ') && name.ends_with(' ')).then(|| name.trim()).filter(|n| !n.is_empty())
}

/// One line inside a failure block: a traceback location, the `E   ` message, or (native) the
/// exception's line; nothing past the captured output.
fn block_line(d: &mut Detail, line: &str, place: &dyn Fn(&str) -> String) {
    static AT: OnceLock<Option<Regex>> = OnceLock::new();
    static NATIVE: OnceLock<Option<Regex>> = OnceLock::new();
    let trimmed = line.trim();
    if d.captured || (trimmed.starts_with("---") && trimmed.contains(" Captured ")) {
        d.captured = true;
    } else if let Some(c) = re(&AT, r"^(\S+\.py):(\d+):(?: |$)").and_then(|r| r.captures(line)) {
        d.places.push((place(&c[1]), c[2].parse().ok()));
    } else if let Some(c) = re(&NATIVE, r#"^\s*File "([^"]+\.py)", line (\d+)"#).and_then(|r| r.captures(line)) {
        d.places.push((place(&c[1]), c[2].parse().ok()));
        d.native.get_or_insert_with(String::new);
    } else if line.starts_with("E   ") {
        let e = line.strip_prefix("E   ").unwrap_or_default();
        let indented = e.starts_with(char::is_whitespace);
        if !e.trim().is_empty() && (d.message.is_none() || (d.indented && !indented)) {
            d.message = Some(e.trim().to_string());
            d.indented = indented;
        }
    } else if d.native.is_some() && !line.starts_with(char::is_whitespace) && !trimmed.is_empty() {
        d.native = Some(trimmed.to_string());
    }
}

/// The report's details onto the summary's entries (`at`, indexes into `failures`): in order
/// when there are as many (pytest writes both in report order), else the first detail that
/// `fits`. The line is taken only in the test's own file; the message when the summary gave
/// none or cut it (`AssertionError: a...`) and the detail's is that text in full.
fn attach(
    failures: &mut [TestFailure],
    at: &[usize],
    details: &[Detail],
    fits: impl Fn(&TestFailure, &Detail) -> bool,
) {
    let in_order = details.len() == at.len();
    for (k, &i) in at.iter().enumerate() {
        let Some(f) = failures.get_mut(i) else { continue };
        let d = if in_order { details.get(k) } else { details.iter().find(|d| fits(f, d)) };
        let Some(d) = d else { continue };
        if let Some((_, line)) = d.places.iter().rev().find(|(file, _)| Some(file) == f.file.as_ref()) {
            f.line = *line;
        }
        let native = d.native.as_deref().filter(|n| !n.is_empty());
        f.message = fuller(f.message.take(), d.message.as_deref().or(native));
    }
}

/// The summary's message, or the report's when the summary has none or cut it short.
fn fuller(summary: Option<String>, full: Option<&str>) -> Option<String> {
    let Some(full) = full else { return summary };
    match summary {
        None => Some(full.to_string()),
        Some(s) => match s.strip_suffix("...") {
            Some(cut) if full.starts_with(cut) => Some(full.to_string()),
            _ => Some(s),
        },
    }
}

/// The final `1 failed, 3 passed in 0.05s` line (or `no tests ran in 0.01s`) into the counts.
fn pytest_counts(trimmed: &str, o: &mut Outcome) {
    static COUNT: OnceLock<Option<Regex>> = OnceLock::new();
    let is_summary = trimmed.starts_with('=') && trimmed.contains(" in ") || trimmed.ends_with('s');
    if !is_summary || !trimmed.contains(" in ") {
        return;
    }
    // `no tests ran`, or `--collect-only`'s `2 tests collected in 0.01s`: none ran.
    let said = trimmed.trim_matches('=').trim();
    if said.starts_with("no tests ran in ") || super::collect_only::collected(said).is_some() {
        o.counted = true;
        return;
    }
    let mut counts = (0, 0, 0);
    let mut any = false;
    for c in re(&COUNT, r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")
        .map(|r| r.captures_iter(trimmed).collect::<Vec<_>>())
        .unwrap_or_default()
    {
        any = true;
        let n: u32 = c[1].parse().unwrap_or(0);
        match &c[2] {
            "passed" | "xpassed" => counts.0 += n,
            "failed" | "error" | "errors" => counts.1 += n,
            _ => counts.2 += n,
        }
    }
    if any {
        (o.passed, o.failed, o.skipped) = counts;
        o.counted = true;
    }
}

/// TAP (node's test runner with `--test-reporter=tap`, mocha's `--reporter tap`): `not ok N -
/// name`, the YAML block's `location:` and `error:` (quoted, or a `|-` block as `assert.equal`
/// writes it), mocha's `message:` and `stack:` (TAP 13) or its plain body (the message, then the
/// stack), a failure without `location:` placed from its stack (`js_stack`), and the `# pass` /
/// `# fail` / `# skipped` / `# todo` totals. A `not ok ... # TODO` (or `# SKIP`) is no failure:
/// node counts it under todo, not fail. The tests docdex's reporters show running: `hung`.
pub fn tap(out: &str, root: &str) -> Outcome {
    let mut run = TapRun::default();
    for line in out.lines() {
        run.line(line, root);
    }
    let mut o = run.finish(root);
    o.hung = super::reporters::running(out, root);
    o
}

/// Which YAML block scalar of a failure is being read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TapKey {
    /// `error:` (node) or `message:` (mocha): the failure's message.
    Message,
    /// `stack:`: where it failed, when no `location:` said.
    Stack,
}

/// What `tap` keeps between lines.
#[derive(Default)]
struct TapRun {
    o: Outcome,
    /// The failure whose YAML block (`location:`, `error:`) is being read.
    current: Option<usize>,
    /// Failures that are subtests (indented `not ok`).
    subtest_failures: Vec<usize>,
    /// A `|-` block being read: its failure, the key's indent, its lines, which key.
    block: Option<(usize, usize, Vec<String>, TapKey)>,
    /// mocha's plain body of the current failure (no YAML block): the `not ok`'s indent, its lines.
    plain: Option<(usize, Vec<String>)>,
    /// Test points inside the current top-level one.
    nested: u32,
    /// Top-level `ok` points that are node running a file without tests.
    empty_files: u32,
    /// `ok` points at any depth, passed and skipped (`# SKIP` / `# TODO`): the counts of a run
    /// killed before its totals, and mocha's skips (its totals leave them out).
    points: (u32, u32),
    /// A `# skipped` or `# todo` total was read (node's).
    skip_totals: bool,
    /// The output began as TAP does (`TAP version 13`), so its points may be counted.
    header: bool,
}

impl TapRun {
    fn line(&mut self, line: &str, root: &str) {
        let t = line.trim_start();
        let indent = line.len() - t.len();
        if self.in_block(t, indent, root) || self.in_plain(line, t, indent, root) {
            return;
        }
        self.count_nesting(t, indent);
        if let Some(rest) = t.strip_prefix("not ok ") {
            self.not_ok(rest, indent);
        } else if t.starts_with("ok ") {
            self.current = None;
        } else if !self.detail(t, indent, root) {
            self.totals(t);
        }
    }

    /// A line of an `error: |-` block (deeper than its key, or blank) is gathered; one back at
    /// the key's indent ends the block, its lines the failure's message. True for the block's.
    fn in_block(&mut self, t: &str, indent: usize, root: &str) -> bool {
        let Some((_, key, lines, _)) = self.block.as_mut() else { return false };
        if t.is_empty() || indent > *key {
            lines.push(t.trim_end().to_string());
            return true;
        }
        self.end_block(root);
        false
    }

    fn end_block(&mut self, root: &str) {
        let Some((i, _, lines, key)) = self.block.take() else { return };
        let f = &mut self.o.failures[i];
        match key {
            TapKey::Message if f.message.is_none() => f.message = joined(&lines),
            TapKey::Stack => super::js_stack::place_failure(f, &lines, root),
            TapKey::Message => {}
        }
    }

    /// A line of mocha's plain failure body (deeper than its `not ok`, before any YAML `---`) is
    /// gathered; anything else ends the body, read as the failure's message and stack. True for
    /// the body's lines.
    fn in_plain(&mut self, line: &str, t: &str, indent: usize, root: &str) -> bool {
        let Some((at, lines)) = self.plain.as_mut() else { return false };
        if t == "---" && lines.is_empty() {
            self.plain = None;
            return false;
        }
        if indent > *at && !t.starts_with("# docdex:") {
            lines.push(line.get(*at + 2..).unwrap_or(t).trim_end().to_string());
            return true;
        }
        self.end_plain(root);
        false
    }

    fn end_plain(&mut self, root: &str) {
        let (Some(i), Some((_, lines))) = (self.current, self.plain.take()) else { return };
        let (message, stack) = super::js_stack::split_plain(&lines);
        let f = &mut self.o.failures[i];
        f.message = f.message.take().or_else(|| joined(message));
        super::js_stack::place_failure(f, stack, root);
    }

    /// Counts the test points nested in the current top-level one; a top-level `ok` with none
    /// that names a script is node running a file without tests.
    fn count_nesting(&mut self, t: &str, indent: usize) {
        if let Some(rest) = t.strip_prefix("ok ") {
            let directive = rest.split_once(" # ").map(|(_, d)| d.trim_start().to_ascii_uppercase());
            match directive {
                Some(d) if d.starts_with("SKIP") || d.starts_with("TODO") => self.points.1 += 1,
                _ => self.points.0 += 1,
            }
        }
        if indent > 0 && (t.starts_with("ok ") || t.starts_with("not ok ")) {
            self.nested += 1;
        } else if let Some(rest) = t.strip_prefix("ok ").filter(|_| indent == 0) {
            if self.nested == 0 && ran_as_a_file(rest) {
                self.empty_files += 1;
            }
            self.nested = 0;
        } else if indent == 0 && t.starts_with("not ok ") {
            self.nested = 0;
        }
    }

    /// `not ok N - name`: a failure, unless its directive is `# TODO` or `# SKIP`.
    fn not_ok(&mut self, rest: &str, indent: usize) {
        self.current = None;
        // `not ok 2 - name` (node), `not ok 2 name` (mocha): the ` - ` is optional in TAP.
        let name = rest.trim_start_matches(|c: char| c.is_ascii_digit()).trim_start();
        let name = name.strip_prefix("- ").unwrap_or(name);
        let (name, directive) = name.split_once(" # ").unwrap_or((name, ""));
        let directive = directive.trim_start().to_ascii_uppercase();
        if directive.starts_with("TODO") || directive.starts_with("SKIP") {
            return;
        }
        self.o.failures.push(TestFailure {
            name: name.trim().to_string(),
            file: None,
            line: None,
            message: None,
            runner: None,
        });
        let i = self.o.failures.len() - 1;
        self.current = Some(i);
        self.plain = Some((indent, Vec::new()));
        if indent > 0 {
            self.subtest_failures.push(i);
        }
    }

    /// The current failure's `location:` or `error:` (quoted, or a `|-` block begun). True when
    /// the line was one.
    fn detail(&mut self, t: &str, indent: usize, root: &str) -> bool {
        let Some(i) = self.current else { return false };
        let f = &mut self.o.failures[i];
        if let Some(loc) = t.strip_prefix("location: ") {
            (f.file, f.line) = location(loc, root);
            return true;
        }
        let (key, value) =
            match (t.strip_prefix("error:").or_else(|| t.strip_prefix("message:")), t.strip_prefix("stack:")) {
                (Some(v), _) => (TapKey::Message, v.trim()),
                (None, Some(v)) => (TapKey::Stack, v.trim()),
                (None, None) => return false,
            };
        if value.starts_with('|') || value.starts_with('>') {
            self.block = Some((i, indent, Vec::new(), key));
        } else if key == TapKey::Message && f.message.is_none() {
            f.message = Some(yaml_scalar(value)).filter(|m| !m.is_empty());
        }
        true
    }

    /// node's `# pass` / `# fail` / `# skipped` / `# todo` totals.
    fn totals(&mut self, t: &str) {
        self.header |= t.starts_with("TAP version ");
        let o = &mut self.o;
        if let Some(n) = t.strip_prefix("# pass ") {
            o.passed = n.trim().parse().unwrap_or(0);
            o.counted = true;
        } else if let Some(n) = t.strip_prefix("# fail ") {
            o.failed = n.trim().parse().unwrap_or(0);
        } else if let Some(n) = t.strip_prefix("# skipped ").or_else(|| t.strip_prefix("# todo ")) {
            o.skipped += n.trim().parse::<u32>().unwrap_or(0);
            self.skip_totals = true;
        }
    }

    /// The outcome: an open block ended, node's files without tests taken off the passes, and
    /// a failing file's failures left to its failing subtests when it has any.
    fn finish(mut self, root: &str) -> Outcome {
        self.end_block(root);
        self.end_plain(root);
        // Killed before its totals (the timeout): the points that ended are what ran.
        if self.header && !self.o.counted {
            self.o.passed = self.points.0;
        }
        if self.header && !self.skip_totals {
            self.o.skipped = self.points.1;
        }
        // node runs a file without tests as one passing test named after the file.
        self.o.passed = self.o.passed.saturating_sub(self.empty_files);
        // A failing file (a top-level `not ok` named after it) repeats its failing subtests:
        // keep the subtests when there are any.
        if !self.subtest_failures.is_empty() {
            let keep: std::collections::HashSet<usize> = self.subtest_failures.into_iter().collect();
            let mut i = 0;
            self.o.failures.retain(|_| {
                i += 1;
                keep.contains(&(i - 1))
            });
        }
        self.o
    }
}

/// Whether a top-level `ok N - NAME` is node reporting a file it ran (NAME its absolute path,
/// a script), rather than a test.
fn ran_as_a_file(rest: &str) -> bool {
    let name = rest.split_once(" - ").map_or(rest, |(_, n)| n);
    let name = name.split(" # ").next().unwrap_or(name).trim();
    let ext = name.rsplit('.').next().unwrap_or("");
    name.starts_with('/') && matches!(ext, "js" | "mjs" | "cjs" | "jsx" | "ts" | "mts" | "cts" | "tsx")
}

/// A YAML block's lines as one message: the non-empty lines joined by a space, cut at
/// `MAX_MESSAGE_CHARS` (`Expected values to be strictly equal: 'a' !== 'b'`).
pub(super) fn joined(lines: &[String]) -> Option<String> {
    // A caret line under a diff (`        ^`) points at a column, which one line loses.
    let text = lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty() && !l.chars().all(|c| c == '^' || c == '~'))
        .collect::<Vec<_>>()
        .join(" ");
    Some(cut(&text)).filter(|m| !m.is_empty())
}

fn cut(text: &str) -> String {
    if text.chars().count() <= MAX_MESSAGE_CHARS {
        return text.to_string();
    }
    text.chars().take(MAX_MESSAGE_CHARS).chain(std::iter::once('…')).collect()
}

/// A one-line YAML scalar's text: `'it''s'` -> `it's`, `"a \"b\""` -> `a "b"`, plain as is.
fn yaml_scalar(v: &str) -> String {
    let v = v.trim();
    if v.len() >= 2 && v.starts_with('\'') && v.ends_with('\'') {
        return cut(&v[1..v.len() - 1].replace("''", "'"));
    }
    if v.len() >= 2 && v.starts_with('"') && v.ends_with('"') {
        let inner = &v[1..v.len() - 1];
        let mut out = String::new();
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('n') => out.push(' '),
                Some('t') => out.push('\t'),
                Some(other) => out.push(other),
                None => {}
            }
        }
        return cut(&out);
    }
    cut(v)
}

/// go test, `-v` output (plain output read too): `=== RUN   TestX` names the test that prints
/// `file_test.go:12: message` (before its `--- FAIL: TestX` with `-v`, after it without), the
/// top-level `--- PASS` / `--- FAIL` / `--- SKIP` lines are counted (subtests, indented, are not),
/// a failing subtest is the failure, named with its parent (`TestTable/three`; each failing
/// leaf subtest one failure) and placed where it failed (`go_pick`: the first line its source
/// shows a `t.Error`/`t.Fatal` call printed, read from `src`, the module's directory; go prints a
/// `t.Log` line just like it, so without the source the last line it printed),
/// and each package's closing line (`ok  `, `FAIL`, `?   `) turns the test files' base names
/// into repo-relative paths (`module`: go.mod's module path) and says whether it ran a test:
/// `[no test files]` and `[no tests to run]` did not, which makes a run of only those
/// `none_found`. A package that does not build (`FAIL pkg [build failed]`) is one failure, with
/// the compiler's first `path.go:L:C: message`.
pub fn go(out: &str, module: Option<&str>, src: Option<&Path>) -> Outcome {
    let mut o = Outcome::default();
    let mut g = GoRun { src: src.map(Path::to_path_buf), ..GoRun::default() };
    for line in out.lines() {
        g.line(line, module, &mut o);
    }
    o.counted = g.verbose;
    o.none_found = g.no_tests && !g.tested;
    o.hung = super::hung::go(out);
    let stopped = super::go_timeout::stopped(out, src);
    o.failed += stopped.failures.len() as u32;
    o.failures.extend(stopped.failures);
    o.stopped = stopped.packages;
    o
}

/// A `file.go:N: message` line: the file (a base name in the package's folder), line, message.
type GoSaid = (String, Option<u32>, String);

/// What `go` keeps between lines.
#[derive(Default)]
struct GoRun {
    /// The test `=== RUN` / `=== CONT` / `=== NAME` named last.
    running: Option<String>,
    /// Top-level tests `=== RUN` announced in this package and not yet ended: with `-v`, a
    /// `--- FAIL: X` for any other name is text a test printed, not go's (tour13 F4).
    announced: HashSet<String>,
    /// Failures (`o.failures` from this index) and top-level ones counted since the last
    /// package line: a package whose line is `ok` had none, so they were printed text.
    package_start: (usize, u32),
    /// A `panic: ...` since the last package line: what it said and where (the stack's frames).
    panic: Option<GoPanic>,
    /// Every `file.go:N: message` each test printed before its `--- FAIL` (`-v`), in order.
    said: HashMap<String, Vec<GoSaid>>,
    /// The lines each failure (by index) printed, from which its place is picked.
    printed: HashMap<usize, Vec<GoSaid>>,
    /// The failure a plain run's location lines follow.
    current: Option<usize>,
    /// Failures since the last package line, whose files are still base names.
    unplaced: Vec<usize>,
    /// After a `# pkg` header: the compiler's errors follow, unindented.
    building: bool,
    /// The compiler's first error since a `# pkg` header.
    build_error: Option<(String, Option<u32>, String)>,
    /// The top-level test running (announced or continued, not paused or ended): while it
    /// runs, a top-level `=== RUN` is text it printed (`printed_run`).
    active: Option<String>,
    /// Saw `=== RUN`: the counts are the whole run's (`-v`).
    verbose: bool,
    /// A package said `[no test files]` or `[no tests to run]`.
    no_tests: bool,
    /// A package ran tests (`ok` without `[no tests to run]`, or `FAIL`).
    tested: bool,
    /// The module's directory, where the test files' lines are read (`go_pick`).
    src: Option<std::path::PathBuf>,
    /// Test files read, by path (`None`: unreadable).
    sources: HashMap<std::path::PathBuf, Option<Vec<String>>>,
    /// A testify block being read, and the printed line it fills in.
    block: Option<(Block, Said)>,
}

/// A test's panic: go prints `panic: message`, then the goroutines' stacks, each frame's file
/// on a tab-indented `\t/abs/path/file.go:6 +0x2e` line (tour13 F14: its failure had no place).
#[derive(Default)]
struct GoPanic {
    message: String,
    /// The first frame in a `_test.go` file (of the module, when its directory is known).
    test_frame: Option<(String, u32)>,
    /// The first frame in the module's other files, when no test file's frame is found.
    module_frame: Option<(String, u32)>,
}

/// A stack frame's place, `\t/abs/dir/file.go:6 +0x2e`: the file and line.
fn go_frame(line: &str) -> Option<(String, u32)> {
    let rest = line.strip_prefix('\t')?;
    let loc = rest.split(" +0x").next().unwrap_or(rest).trim();
    let (file, l) = loc.rsplit_once(':')?;
    (file.starts_with('/') && file.ends_with(".go")).then_some(())?;
    Some((file.to_string(), l.parse().ok()?))
}

/// Which printed line a testify block fills in: the last a running test said (`-v`), or the
/// last a failure printed (plain output, where its lines follow its `--- FAIL`).
enum Said {
    Running(String),
    Failure(usize),
}

impl GoRun {
    fn line(&mut self, line: &str, module: Option<&str>, o: &mut Outcome) {
        let t = line.trim();
        let top = !line.starts_with([' ', '\t']);
        if self.in_block(line, t, o) {
            return;
        }
        if self.panic_line(line, t, top) {
            return;
        }
        if self.printed_run(t, top) {
            // An announcement printed by the test running: its result line is no result either.
        } else if let Some(name) = ["=== RUN ", "=== CONT ", "=== NAME "].iter().find_map(|p| t.strip_prefix(p)) {
            self.verbose |= t.starts_with("=== RUN ");
            if t.starts_with("=== RUN ") && top && !name.contains('/') {
                self.announced.insert(name.trim().to_string());
            }
            self.running = Some(name.trim().to_string());
            self.current = None;
        } else if top && self.verbose && self.printed_result(t) {
            // A result line for a test go did not announce: the test's own output.
        } else if let Some(rest) = t.strip_prefix("--- FAIL: ") {
            let name = rest.split_whitespace().next().unwrap_or(rest).to_string();
            if top {
                self.fail(name, o);
            } else {
                self.subtest_fail(name, o);
            }
        } else if t.starts_with("--- PASS: ") || t.starts_with("--- SKIP: ") {
            if top && t.starts_with("--- PASS: ") {
                o.passed += 1;
            } else if top {
                o.skipped += 1;
            }
            self.current = None;
        } else if let Some(pkg) = package_line(line) {
            self.package(pkg, line, module, o);
        } else if t.starts_with("# ") && top {
            self.building = true;
        } else if let Some((file, l, msg)) = go_location(t) {
            if top && self.building {
                let file = file.strip_prefix("./").unwrap_or(&file).to_string();
                self.build_error.get_or_insert((file, l, msg));
            } else if top {
                // Printed by the test itself (fmt.Println), not by t.Error: no location.
            } else if let Some(i) = self.current.filter(|i| !self.verbose || o.failures[*i].file.is_none()) {
                // Its lines follow the `--- FAIL` (plain output, or -v before go 1.14).
                let opens = msg.is_empty();
                let printed = self.printed.entry(i).or_default();
                printed.push((file, l, msg));
                place(&mut o.failures[i], printed.last());
                if opens {
                    self.block = Some((Block::new(testify::indent(line)), Said::Failure(i)));
                }
            } else if let Some(name) = self.running.clone() {
                if msg.is_empty() {
                    self.block = Some((Block::new(testify::indent(line)), Said::Running(name.clone())));
                }
                self.said.entry(name).or_default().push((file, l, msg));
            }
        }
    }

    /// An indented `--- FAIL: Parent/sub` (after its parent's line): the failure of its nearest
    /// failing ancestor listed so far becomes this subtest's, named with its parent and placed
    /// where it printed last; a sibling that failed too is a failure of its own.
    fn subtest_fail(&mut self, name: String, o: &mut Outcome) {
        let ancestor = self
            .unplaced
            .iter()
            .copied()
            .filter(|i| name.starts_with(&format!("{}/", o.failures[*i].name)))
            .max_by_key(|i| o.failures[*i].name.len());
        let said = self.said.get(&name).cloned().unwrap_or_default();
        let i = match ancestor {
            Some(i) => i,
            None => {
                o.failures.push(TestFailure {
                    name: name.clone(),
                    file: None,
                    line: None,
                    message: None,
                    runner: None,
                });
                self.unplaced.push(o.failures.len() - 1);
                o.failures.len() - 1
            }
        };
        let f = &mut o.failures[i];
        f.name = name;
        // Plain output: its lines follow. With -v and none of its own, its ancestor's stay.
        if !said.is_empty() || !self.verbose {
            place(f, said.last());
            self.printed.insert(i, said);
        }
        self.current = Some(i);
    }

    /// A top-level `--- FAIL: name`: one failure, with what it (or a subtest of it) printed.
    fn fail(&mut self, name: String, o: &mut Outcome) {
        o.failed += 1;
        let sub = format!("{name}/");
        let said = self
            .said
            .get(&name)
            .filter(|v| !v.is_empty())
            .or_else(|| self.said.iter().filter(|(k, _)| k.starts_with(&sub)).min_by_key(|(k, _)| *k).map(|(_, v)| v))
            .cloned()
            .unwrap_or_default();
        let mut f = TestFailure { name, file: None, line: None, message: None, runner: None };
        place(&mut f, said.last());
        o.failures.push(f);
        let i = o.failures.len() - 1;
        self.printed.insert(i, said);
        self.current = Some(i);
        self.unplaced.push(i);
    }

    /// Reads a panic's first line and its stack's frames (`true` when `line` was one of them).
    fn panic_line(&mut self, line: &str, t: &str, top: bool) -> bool {
        if let Some(msg) = t.strip_prefix("panic: ").filter(|_| top && self.panic.is_none()) {
            let message = format!("panic: {}", msg.strip_suffix(" [recovered]").unwrap_or(msg));
            self.panic = Some(GoPanic { message, ..GoPanic::default() });
            return true;
        }
        let Some((file, l)) = self.panic.as_ref().and_then(|_| go_frame(line)) else { return false };
        let inside = match &self.src {
            Some(src) => !module_relative(&file, Some(src)).starts_with('/'),
            None => file.ends_with("_test.go"),
        };
        let src = self.src.clone();
        if let Some(p) = self.panic.as_mut().filter(|_| inside) {
            let frame = (module_relative(&file, src.as_deref()), l);
            if file.ends_with("_test.go") {
                p.test_frame.get_or_insert(frame);
            } else {
                p.module_frame.get_or_insert(frame);
            }
        }
        true
    }

    /// At a package line: the panic read since the last one is the failure of the test that
    /// failed last (a panic on another goroutine has no `--- FAIL`: then the test running, a
    /// failure of its own), with the panic as message, placed at its frame in a test file.
    fn place_panic(&mut self, pkg: &str, o: &mut Outcome) {
        let Some(p) = self.panic.take() else { return };
        if p.message.starts_with("panic: test timed out after ") {
            return; // go's own -timeout: `go_timeout` names the tests it stopped
        }
        let i = match o.failures.len().checked_sub(1).filter(|i| *i >= self.package_start.0) {
            Some(i) => i,
            None => {
                let name = self.running.clone().unwrap_or_else(|| pkg.to_string());
                o.failed += 1;
                o.failures.push(TestFailure { name, file: None, line: None, message: None, runner: None });
                o.failures.len() - 1
            }
        };
        let f = &mut o.failures[i];
        if let Some((file, line)) = p.test_frame.or(p.module_frame) {
            (f.file, f.line) = (Some(file), Some(line));
        }
        f.message = Some(p.message);
    }

    /// Whether a top-level `=== RUN   X` is text the test running printed, not go's: go runs
    /// top-level tests one at a time (a parallel one pauses until the others end), so a new one
    /// is announced only when none runs. Tracks the top-level test running (`=== RUN`, `=== CONT`)
    /// and its end (`=== PAUSE`, its result line).
    fn printed_run(&mut self, t: &str, top: bool) -> bool {
        let word = |p: &str| t.strip_prefix(p).map(|r| r.split_whitespace().next().unwrap_or_default().to_string());
        if let Some(name) = word("=== RUN ").filter(|n| top && !n.contains('/')) {
            if self.active.as_ref().is_some_and(|a| *a != name) {
                return true;
            }
            self.active = Some(name);
        } else if let Some(name) = word("=== CONT ").or_else(|| word("=== NAME ")).filter(|n| !n.contains('/')) {
            self.active = Some(name);
        } else if let Some(name) = ["=== PAUSE ", "--- PASS: ", "--- FAIL: ", "--- SKIP: "].iter().find_map(|p| word(p))
        {
            self.active = self.active.take().filter(|a| *a != name);
        }
        false
    }

    /// Whether a top-level `--- PASS/FAIL/SKIP: name` line (with `-v`) is not go's: no running
    /// top-level test of that name was announced. Go's own ends the test's announcement.
    fn printed_result(&mut self, t: &str) -> bool {
        let Some(rest) = ["--- PASS: ", "--- FAIL: ", "--- SKIP: "].iter().find_map(|p| t.strip_prefix(p)) else {
            return false;
        };
        let name = rest.split_whitespace().next().unwrap_or(rest);
        !self.announced.remove(name)
    }

    /// A package's closing line: its failures' files placed, whether it ran a test, and a
    /// build failure as one failure. `ok` drops the failures read since the last package line:
    /// go says the package passed, so they were lines its tests printed.
    fn package(&mut self, pkg: &str, line: &str, module: Option<&str>, o: &mut Outcome) {
        if line.starts_with("ok") {
            let (from, top) = self.package_start;
            o.failures.truncate(from);
            o.failed = top;
            self.unplaced.retain(|i| *i < from);
        }
        let dir = module.and_then(|m| {
            if pkg == m {
                Some(String::new())
            } else {
                pkg.strip_prefix(m).and_then(|r| r.strip_prefix('/')).map(|d| format!("{d}/"))
            }
        });
        for i in std::mem::take(&mut self.unplaced) {
            if let (Some(dir), Some(printed)) = (&dir, self.printed.remove(&i)) {
                let picked = self.pick(dir, &printed).or(printed.last());
                place(&mut o.failures[i], picked);
            }
            if let (Some(dir), Some(f)) = (&dir, &o.failures[i].file) {
                if !f.contains('/') {
                    o.failures[i].file = Some(format!("{dir}{f}"));
                }
            }
        }
        if line.starts_with("FAIL") {
            self.place_panic(pkg, o);
        }
        self.panic = None;
        self.printed.clear();
        self.said.clear();
        self.announced.clear();
        self.active = None;
        self.building = false;
        self.running = None;
        self.current = None;
        if line.contains("[no test files]") || line.contains("[no tests to run]") {
            self.no_tests = true;
        } else if line.starts_with("FAIL") && (line.contains("[build failed]") || line.contains("[setup failed]")) {
            self.tested = true;
            o.failed += 1;
            let (file, l, msg) = match self.build_error.take() {
                Some((f, l, m)) => (Some(f), l, Some(m)),
                None => (None, None, None),
            };
            let message = msg.or_else(|| Some(line.trim().to_string()));
            o.failures.push(TestFailure { name: pkg.to_string(), file, line: l, message, runner: None });
        } else {
            self.tested = true;
        }
        self.package_start = (o.failures.len(), o.failed);
    }
}

impl GoRun {
    /// Reads `line` into the testify block open (below a location line without a message,
    /// indented deeper than it), and fills in the printed line it belongs to: the place from its
    /// `Error Trace`, the message from its `Error` and `Messages`. `false` when no block is open
    /// or the line ends it.
    fn in_block(&mut self, line: &str, t: &str, o: &mut Outcome) -> bool {
        let Some((block, said)) = self.block.as_mut() else { return false };
        let marker = ["=== ", "--- "].iter().any(|m| t.starts_with(m)) || package_line(line).is_some();
        if marker || testify::indent(line) <= block.indent {
            self.block = None;
            return false;
        }
        let src = self.src.clone();
        block.feed(t, &|file| module_relative(file, src.as_deref()));
        let entry = match said {
            Said::Running(name) => self.said.get_mut(name.as_str()).and_then(|v| v.last_mut()),
            Said::Failure(i) => self.printed.get_mut(i).and_then(|v| v.last_mut()),
        };
        if let Some(entry) = entry {
            if let Some((file, l)) = block.place() {
                (entry.0, entry.1) = (file, Some(l));
            }
            entry.2 = cut(&block.message());
            if let Said::Failure(i) = said {
                place(&mut o.failures[*i], Some(&*entry));
            }
        }
        true
    }

    /// Where a failing test failed, of the `printed` lines (in the package folder `dir` of the
    /// module): go prints a `t.Log` line as it prints a `t.Error`, so the source says which is
    /// which. The first whose line calls `Error`/`Errorf`/`Fatal`/`Fatalf`, else the first that
    /// calls no `Log`/`Skip` (a helper marked `t.Helper()` reports its caller's line), else `None`.
    fn pick<'a>(&mut self, dir: &str, printed: &'a [GoSaid]) -> Option<&'a GoSaid> {
        let src = self.src.clone()?;
        let kinds: Vec<Option<GoCall>> = printed
            .iter()
            .map(|(file, line, _)| {
                // A base name is in the package's folder; a testify frame is relative to the
                // module (or absolute, outside it).
                let path = if file.contains('/') { src.join(file) } else { src.join(dir).join(file) };
                let lines = self.sources.entry(path.clone()).or_insert_with(|| read_source(&path));
                let text = lines.as_ref()?.get(usize::try_from((*line)?).ok()?.checked_sub(1)?)?;
                Some(go_call(text))
            })
            .collect();
        let first = |want: GoCall| printed.iter().zip(&kinds).find(|(_, k)| **k == Some(want)).map(|(p, _)| p);
        first(GoCall::Fails).or_else(|| first(GoCall::Other))
    }
}

/// What a test file's line does, as far as its place in a failure goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GoCall {
    /// Calls `Error`, `Errorf`, `Fatal` or `Fatalf` (`t.Errorf(`, `s.T().Fatal(`, `assert.Error(`).
    Fails,
    /// Calls `Log`, `Logf`, `Skip` or `Skipf`: printed, but not where the test failed.
    Logs,
    /// Anything else: a helper's call, which go reports for a helper's failure.
    Other,
}

/// The call that starts a statement on a Go `line` (after `{` or `;` too, as in
/// `if err != nil { t.Fatal(err) }`): a method call in an argument (`fmt.Errorf("x")`,
/// `err.Error()`) is not one.
fn go_call(line: &str) -> GoCall {
    static CALL: OnceLock<Option<Regex>> = OnceLock::new();
    let Some(re) = re(&CALL, r"(?:^|[{;])\s*(?:\w+(?:\(\))?\.)+(Errorf?|Fatalf?|Logf?|Skipf?)\(") else {
        return GoCall::Other;
    };
    let calls: Vec<&str> = re.captures_iter(line).filter_map(|c| c.get(1)).map(|m| m.as_str()).collect();
    if calls.iter().any(|c| c.starts_with("Error") || c.starts_with("Fatal")) {
        GoCall::Fails
    } else if calls.is_empty() {
        GoCall::Other
    } else {
        GoCall::Logs
    }
}

/// A test file's lines, `None` when it cannot be read or is over 8 MiB (no test file is).
fn read_source(path: &Path) -> Option<Vec<String>> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > 8 * 1024 * 1024 {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    Some(text.lines().map(str::to_string).collect())
}

/// Sets a failure's place and message to a printed line (all `None` without one).
fn place(f: &mut TestFailure, said: Option<&GoSaid>) {
    (f.file, f.line, f.message) = match said {
        Some((file, line, msg)) => (Some(file.clone()), *line, Some(msg.clone())),
        None => (None, None, None),
    };
}

/// `file.go:12: message` or the compiler's `dir/file.go:5:28: message`; `file.go:12:` with no
/// message is testify's, whose block follows (`testify`).
fn go_location(t: &str) -> Option<(String, Option<u32>, String)> {
    let (loc, msg) = t.split_once(": ").or_else(|| Some((t.strip_suffix(':')?, "")))?;
    let mut parts = loc.split(':');
    let file = parts.next()?;
    let line = parts.next()?.parse().ok();
    if !file.ends_with(".go") || line.is_none() {
        return None;
    }
    Some((file.to_string(), line, msg.trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_sums_binaries_and_finds_panic_locations() {
        let out = "running 2 tests\ntest tests::good ... ok\ntest tests::bad ... FAILED\n\nfailures:\n\n---- tests::bad stdout ----\n\nthread 'tests::bad' (123) panicked at src/lib.rs:9:9:\nassertion `left == right` failed\n\ntest result: FAILED. 1 passed; 1 failed; 2 ignored; 0 measured; 0 filtered out\n\nrunning 1 test\ntest it ... ok\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured\n";
        let o = cargo(out, "/r");
        assert_eq!((o.passed, o.failed, o.skipped), (2, 1, 2));
        assert_eq!(o.failures[0].name, "tests::bad");
        assert_eq!((o.failures[0].file.as_deref(), o.failures[0].line), (Some("src/lib.rs"), Some(9)));
        assert_eq!(o.failures[0].message.as_deref(), Some("assertion `left == right` failed"));
    }

    #[test]
    fn a_cargo_binary_killed_before_its_summary_is_counted_from_its_lines() {
        let out = "running 1 test\ntest a ... ok\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured\n\nrunning 4 tests\ntest b ... ok\ntest c ... ignored, later\ntest d ... FAILED\ntest e has been running for over 60 seconds\n";
        let o = cargo(out, "/r");
        assert_eq!((o.passed, o.failed, o.skipped), (2, 1, 1));
    }

    #[test]
    fn pytest_reads_the_summary_and_the_line_tracebacks() {
        let out = "..F.s\n=================================== FAILURES ===================================\n/r/tests/test_x.py:7: assert 1 == 2\n=========================== short test summary info ============================\nFAILED tests/test_x.py::test_bad - assert 1 == 2\n==================== 1 failed, 3 passed, 1 skipped in 0.05s ====================\n";
        let o = pytest(out, "/r", "");
        assert_eq!((o.passed, o.failed, o.skipped), (3, 1, 1));
        assert_eq!(o.failures[0].name, "tests/test_x.py::test_bad");
        assert_eq!((o.failures[0].file.as_deref(), o.failures[0].line), (Some("tests/test_x.py"), Some(7)));
        assert_eq!(o.failures[0].message.as_deref(), Some("assert 1 == 2"));
    }

    #[test]
    fn pytest_refusing_its_arguments_says_what_it_refused() {
        let usage = "ERROR: usage: python -m pytest [options] [file_or_dir] [file_or_dir] [...]\npython -m pytest: error: unrecognized arguments: -n\n  inifile: /r/pyproject.toml\n  rootdir: /r\n";
        let said = pytest_refused(usage).unwrap_or_default();
        assert!(said.starts_with("unrecognized arguments: -n (inifile /r/pyproject.toml"), "{said}");
        let node = "ERROR: not found: /r/tests/test_a.py::nope\n(no match in any of [<Module test_a.py>])\n";
        assert_eq!(
            pytest_refused(node).as_deref(),
            Some("not found: /r/tests/test_a.py::nope (no match in any of [<Module test_a.py>])")
        );
        assert_eq!(pytest_refused("== 1 failed in 0.1s ==\nFAILED tests/t.py::x - ERROR: boom\n"), None);
    }

    #[test]
    fn tap_keeps_the_failing_subtests_with_their_locations() {
        let out = "TAP version 13\n# Subtest: /r/t/a.test.js\n    # Subtest: adds\n    ok 1 - adds\n    # Subtest: breaks\n    not ok 2 - breaks\n      ---\n      location: '/r/t/a.test.js:8:3'\n      error: 'Expected values to be strictly equal'\n      ...\n    1..2\nnot ok 1 - /r/t/a.test.js\n  ---\n  location: '/r/t/a.test.js:1:1'\n  ...\n# pass 1\n# fail 1\n# skipped 0\n# todo 0\n";
        let o = tap(out, "/r");
        assert_eq!((o.passed, o.failed, o.skipped), (1, 1, 0));
        assert_eq!(o.failures.len(), 1, "{:?}", o.failures);
        assert_eq!(o.failures[0].name, "breaks");
        assert_eq!((o.failures[0].file.as_deref(), o.failures[0].line), (Some("t/a.test.js"), Some(8)));
        assert_eq!(o.failures[0].message.as_deref(), Some("Expected values to be strictly equal"));
    }

    #[test]
    fn pytest_messages_cut_by_the_summary_come_whole_from_the_crash_lines() {
        // Real pytest 9 output (`-rfE --tb=line`): the summary cuts at 80 columns.
        let out = "=================================== FAILURES ===================================\nE   AssertionError: assert 941 == 936\n     +  where 941 = total('NY', 'SAVE10')\n/r/tests/test_cart.py:19: AssertionError: assert 941 == 936\nE   assert 941 == 936\n/r/tests/helpers.py:2: assert 941 == 936\nE   assert 1 == 2\n/r/tests/test_cart.py:30: assert 1 == 2\n=========================== short test summary info ============================\nFAILED tests/test_cart.py::test_total_with_coupon_and_tax - AssertionError: a...\nFAILED tests/test_cart.py::test_helper - assert 941 == 936\nFAILED tests/test_cart.py::test_plain - assert 1 == 2\n============== 3 failed, 4 passed in 0.03s ===============\n";
        let o = pytest(out, "/r", "");
        assert_eq!((o.passed, o.failed, o.counted), (4, 3, true));
        let got: Vec<(Option<u32>, Option<&str>)> = o.failures.iter().map(|f| (f.line, f.message.as_deref())).collect();
        assert_eq!(
            got,
            [
                (Some(19), Some("AssertionError: assert 941 == 936")),
                // Failed in a helper of another file: no line in the test's own file.
                (None, Some("assert 941 == 936")),
                (Some(30), Some("assert 1 == 2")),
            ]
        );
    }

    /// Real pytest 9.2 output for one file with `--tb=long`, `short` and `native` (pytest's
    /// own frames cut from the native tracebacks): the user's style, which docdex keeps.
    const PYTEST_LONG: &str = "=================================== FAILURES ===================================\n___________________________________ test_bad ___________________________________\n\n    def test_bad():\n        x = 1\n>       assert x == 2\nE       assert 1 == 2\n\ntests/test_x.py:8: AssertionError\n_________________________________ test_helper __________________________________\n\n    def test_helper():\n>       check(941)\n\ntests/test_x.py:10: \n_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ \n\nx = 941\n\n    def check(x):\n>       assert x == 936\n               ^^^^^^^^\nE       AssertionError\n\ntests/helpers.py:2: AssertionError\n----------------------------- Captured stdout call -----------------------------\ntests/test_x.py:99: printed by the test\n__________________________________ test_raise __________________________________\n\n    def test_raise():\n>       raise ValueError(\"boom with a long long long long long long long long long long long message\")\nE       ValueError: boom with a long long long long long long long long long long long message\n\ntests/test_x.py:12: ValueError\n=========================== short test summary info ============================\nFAILED tests/test_x.py::test_bad - assert 1 == 2\nFAILED tests/test_x.py::test_helper - AssertionError\nFAILED tests/test_x.py::test_raise - ValueError: boom with a long long long l...\n========================= 3 failed, 1 passed in 0.03s ==========================\n";
    const PYTEST_SHORT: &str = "=================================== FAILURES ===================================\n___________________________________ test_bad ___________________________________\ntests/test_x.py:8: in test_bad\n    assert x == 2\nE   assert 1 == 2\n_________________________________ test_helper __________________________________\ntests/test_x.py:10: in test_helper\n    check(941)\ntests/helpers.py:2: in check\n    assert x == 936\n           ^^^^^^^^\nE   AssertionError\n__________________________________ test_raise __________________________________\ntests/test_x.py:12: in test_raise\n    raise ValueError(\"boom with a long long long long long long long long long long long message\")\nE   ValueError: boom with a long long long long long long long long long long long message\n=========================== short test summary info ============================\nFAILED tests/test_x.py::test_bad - assert 1 == 2\nFAILED tests/test_x.py::test_helper - AssertionError\nFAILED tests/test_x.py::test_raise - ValueError: boom with a long long long l...\n========================= 3 failed, 1 passed in 0.03s ==========================\n";
    const PYTEST_NATIVE: &str = "=================================== FAILURES ===================================\n___________________________________ test_bad ___________________________________\nTraceback (most recent call last):\n  File \"/v/lib/python3.11/site-packages/_pytest/runner.py\", line 361, in from_call\n    result: TResult | None = func()\n                             ^^^^^^\n  File \"/r/tests/test_x.py\", line 8, in test_bad\n    assert x == 2\nAssertionError: assert 1 == 2\n_________________________________ test_helper __________________________________\nTraceback (most recent call last):\n  File \"/r/tests/test_x.py\", line 10, in test_helper\n    check(941)\n  File \"/r/tests/helpers.py\", line 2, in check\n    assert x == 936\n           ^^^^^^^^\nAssertionError\n__________________________________ test_raise __________________________________\nTraceback (most recent call last):\n  File \"/r/tests/test_x.py\", line 12, in test_raise\n    raise ValueError(\"boom with a long long long long long long long long long long long message\")\nValueError: boom with a long long long long long long long long long long long message\n=========================== short test summary info ============================\nFAILED tests/test_x.py::test_bad - assert 1 == 2\nFAILED tests/test_x.py::test_helper - AssertionError\nFAILED tests/test_x.py::test_raise - ValueError: boom with a long long long l...\n========================= 3 failed, 1 passed in 0.03s ==========================\n";

    #[test]
    fn pytest_tracebacks_in_the_users_own_style_are_read() {
        let long_message = "ValueError: boom with a long long long long long long long long long long long message";
        for out in [PYTEST_LONG, PYTEST_SHORT, PYTEST_NATIVE] {
            let o = pytest(out, "/r", "");
            assert_eq!((o.passed, o.failed), (1, 3), "{out}");
            let got: Vec<(&str, Option<u32>, Option<&str>)> =
                o.failures.iter().map(|f| (f.name.as_str(), f.line, f.message.as_deref())).collect();
            assert_eq!(
                got,
                [
                    ("tests/test_x.py::test_bad", Some(8), Some("assert 1 == 2")),
                    // The test's own frame, not the helper's (nor the captured output's).
                    ("tests/test_x.py::test_helper", Some(10), Some("AssertionError")),
                    ("tests/test_x.py::test_raise", Some(12), Some(long_message)),
                ],
                "{out}"
            );
        }
        // Blocks matched by name when the summary lists fewer failures than the report.
        let one = PYTEST_SHORT.replace("FAILED tests/test_x.py::test_bad - assert 1 == 2\n", "");
        let o = pytest(&one, "/r", "");
        assert_eq!((o.failures[0].name.as_str(), o.failures[0].line), ("tests/test_x.py::test_helper", Some(10)));
        assert_eq!(block_header("_ _ _ _ _ _ _"), None);
        assert_eq!(block_header("____ TestA.test_b[1] ____"), Some("TestA.test_b[1]"));
    }

    #[test]
    fn a_pytest_collection_error_has_its_exception_as_message() {
        let out = "collected 3 items / 1 error\n\n==================================== ERRORS ====================================\n_______________________ ERROR collecting tests/test_b.py _______________________\nImportError while importing test module '/r/tests/test_b.py'.\nTraceback:\n/usr/lib/python3.11/importlib/__init__.py:126: in import_module\n    return _bootstrap._gcd_import(name[level:], package, level)\ntests/test_b.py:1: in <module>\n    import nope_module\nE   ModuleNotFoundError: No module named 'nope_module'\n__________________________ ERROR at setup of test_err __________________________\nE     File \"/r/tests/x.py\", line 3\nE   ValueError: fixture blew up with a long long long long long long message text here\n=========================== short test summary info ============================\nERROR tests/test_b.py\nERROR tests/test_c.py::test_err - ValueError: fixture blew up with a long lon...\n!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!\n=============================== 2 errors in 0.18s ===============================\n";
        let o = pytest(out, "/r", "");
        assert_eq!(o.failed, 2);
        assert_eq!(o.failures[0].message.as_deref(), Some("ModuleNotFoundError: No module named 'nope_module'"));
        assert_eq!((o.failures[0].file.as_deref(), o.failures[0].line), (Some("tests/test_b.py"), Some(1)));
        assert_eq!(
            o.failures[1].message.as_deref(),
            Some("ValueError: fixture blew up with a long long long long long long message text here")
        );
        let fixture = "==================================== ERRORS ====================================\n_____________________ ERROR at setup of test_cache_makedir _____________________\nfile /r/testing/test_legacypath.py, line 88\n  def test_cache_makedir(cache: pytest.Cache) -> None:\nE       fixture 'cache' not found\n>       available fixtures: LineMatcher, capfd\n\n/r/testing/test_legacypath.py:88\n=========================== short test summary info ============================\nERROR testing/test_legacypath.py::test_cache_makedir\n= 3474 passed, 1 error in 284.20s (0:04:44) =\n";
        let f = pytest(fixture, "/r", "");
        assert_eq!((f.passed, f.failed), (3474, 1));
        assert_eq!(
            (f.failures[0].line, f.failures[0].message.as_deref()),
            (Some(88), Some("fixture 'cache' not found"))
        );
        let none = pytest(
            "collected 0 items\n\n============================ no tests ran in 0.01s =============================\n",
            "/r",
            "",
        );
        assert!(none.counted && none.passed + none.failed == 0);
    }

    #[test]
    fn tap_reads_error_blocks_and_a_failing_todo_is_no_failure() {
        // Real node 20 output for assert.equal from node:assert/strict, a todo and a skip.
        let out = "TAP version 13\n# Subtest: basic\nnot ok 1 - basic\n  ---\n  location: '/r/test/slug.test.js:4:1'\n  failureType: 'testCodeFailure'\n  error: |-\n    Expected values to be strictly equal:\n    \n    'hello world' !== 'hello-world'\n            ^\n    \n  code: 'ERR_ASSERTION'\n  ...\n# Subtest: quoted\nnot ok 2 - quoted\n  ---\n  error: \"'a-' == 'b'\"\n  ...\n# Subtest: ok one\nok 3 - ok one\n# Subtest: todo thing\nnot ok 4 - todo thing # TODO\n  ---\n  error: 'x'\n  ...\n# Subtest: later\nok 5 - later # SKIP\n1..5\n# tests 5\n# pass 1\n# fail 2\n# skipped 1\n# todo 1\n";
        let o = tap(out, "/r");
        assert_eq!((o.passed, o.failed, o.skipped), (1, 2, 2));
        let names: Vec<&str> = o.failures.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["basic", "quoted"]);
        assert_eq!(
            o.failures[0].message.as_deref(),
            Some("Expected values to be strictly equal: 'hello world' !== 'hello-world'")
        );
        assert_eq!((o.failures[0].file.as_deref(), o.failures[0].line), (Some("test/slug.test.js"), Some(4)));
        assert_eq!(o.failures[1].message.as_deref(), Some("'a-' == 'b'"));
        // A file without tests is run as one test named after it (node 20): no test ran.
        let empty = "TAP version 13\n# Subtest: /r/lib.js\nok 1 - /r/lib.js\n  ---\n  duration_ms: 133.0\n  ...\n1..1\n# tests 1\n# pass 1\n# fail 0\n";
        let e = tap(empty, "/r");
        assert_eq!((e.passed, e.counted), (0, true));
        // A file whose tests are its subtests counts them, not itself.
        let full = "# Subtest: /r/t/a.test.js\n    # Subtest: adds\n    ok 1 - adds\nok 1 - /r/t/a.test.js\n# pass 1\n";
        assert_eq!(tap(full, "/r").passed, 1);
    }

    #[test]
    fn go_and_jest_summaries() {
        let o = go(
            "=== RUN   TestA\n--- FAIL: TestA (0.00s)\n    a_test.go:12: want 2\n=== RUN   TestB\n--- PASS: TestB (0.00s)\nFAIL\n",
            None,
            None,
        );
        assert_eq!((o.passed, o.failed), (1, 1));
        assert_eq!((o.failures[0].file.as_deref(), o.failures[0].line), (Some("a_test.go"), Some(12)));
        let j = super::super::jest::read("  ● math › adds\nTests:       1 failed, 2 passed, 3 total\n", "/r");
        assert_eq!((j.passed, j.failed, j.failures.len()), (2, 1, 1));
    }

    /// Real `go test -v ./...` output (go 1.19): a package that does not build, one with a
    /// failing test and a passing subtest, one whose test file holds no test, one without test
    /// files, one with parallel tests (their log lines under `=== CONT`) and a failing subtest.
    const GO_V: &str = "# example.com/gom/broken [example.com/gom/broken.test]\nbroken/b_test.go:5:28: undefined: Foo\nFAIL\texample.com/gom/broken [build failed]\n=== RUN   TestAdd\n--- PASS: TestAdd (0.00s)\n=== RUN   TestSub\n=== RUN   TestSub/inner\n--- PASS: TestSub (0.00s)\n    --- PASS: TestSub/inner (0.00s)\n=== RUN   TestBad\n    calc_test.go:16: want 2\n--- FAIL: TestBad (0.00s)\nFAIL\nFAIL\texample.com/gom/calc\t0.006s\ntesting: warning: no tests to run\nPASS\nok  \texample.com/gom/empty\t(cached) [no tests to run]\n?   \texample.com/gom/lib\t[no test files]\n=== RUN   TestP1\n=== PAUSE TestP1\n=== RUN   TestP2\n=== PAUSE TestP2\n=== RUN   TestSubFail\n=== RUN   TestSubFail/a\n    par_test.go:17: sub bad\n--- FAIL: TestSubFail (0.00s)\n    --- FAIL: TestSubFail/a (0.00s)\n=== CONT  TestP1\n    par_test.go:7: p1 log\n    par_test.go:8: p1 bad\n--- FAIL: TestP1 (0.00s)\n=== CONT  TestP2\n    par_test.go:13: later\n--- SKIP: TestP2 (0.00s)\nFAIL\nFAIL\texample.com/gom/par\t0.005s\nFAIL\n";

    #[test]
    fn go_verbose_counts_top_level_tests_and_places_failures_in_their_package() {
        let o = go(GO_V, Some("example.com/gom"), None);
        assert_eq!((o.passed, o.failed, o.skipped, o.counted, o.none_found), (2, 4, 1, true, false));
        let f = |name: &str, file: &str, line: u32, message: &str| TestFailure {
            name: name.into(),
            file: Some(file.into()),
            line: Some(line),
            message: Some(message.into()),
            runner: None,
        };
        assert_eq!(
            o.failures,
            [
                f("example.com/gom/broken", "broken/b_test.go", 5, "undefined: Foo"),
                f("TestBad", "calc/calc_test.go", 16, "want 2"),
                f("TestSubFail/a", "par/par_test.go", 17, "sub bad"),
                // Its last line: the first was a log.
                f("TestP1", "par/par_test.go", 8, "p1 bad"),
            ]
        );
        // Plain output (a `[tests] command` of `go test ./...`): the location follows the FAIL.
        let plain = "--- FAIL: TestBad (0.00s)\n    calc_test.go:16: want 2\nFAIL\nFAIL\texample.com/gom/calc\t0.002s\nok  \texample.com/gom/empty\t0.006s [no tests to run]\n?   \texample.com/gom/lib\t[no test files]\nFAIL\n";
        let p = go(plain, Some("example.com/gom"), None);
        assert_eq!((p.failed, p.counted, p.none_found), (1, false, false));
        assert_eq!((p.failures[0].file.as_deref(), p.failures[0].line), (Some("calc/calc_test.go"), Some(16)));
    }

    /// Real go 1.19 output, `-v` and plain, of a table test whose parent logs before its cases
    /// (one failing after logging its case), a nested failing subtest, and parallel subtests.
    const GO_SUBTESTS_V: &str = "=== RUN   TestTable\n    p_test.go:6: starting the table\n=== RUN   TestTable/one\n    p_test.go:10: case one\n=== RUN   TestTable/two\n    p_test.go:10: case two\n=== RUN   TestTable/three\n    p_test.go:10: case three\n    p_test.go:12: double(3) = 6, want 7\n--- FAIL: TestTable (0.00s)\n    --- PASS: TestTable/one (0.00s)\n    --- PASS: TestTable/two (0.00s)\n    --- FAIL: TestTable/three (0.00s)\n=== RUN   TestNested\n=== RUN   TestNested/outer\n=== RUN   TestNested/outer/inner_ok\n=== RUN   TestNested/outer/inner_bad\n    p_test.go:22: nested broke\n--- FAIL: TestNested (0.00s)\n    --- FAIL: TestNested/outer (0.00s)\n        --- PASS: TestNested/outer/inner_ok (0.00s)\n        --- FAIL: TestNested/outer/inner_bad (0.00s)\n=== RUN   TestPar\n=== RUN   TestPar/a\n=== PAUSE TestPar/a\n=== RUN   TestPar/b\n=== PAUSE TestPar/b\n=== CONT  TestPar/a\n=== CONT  TestPar/b\n    p_test.go:33: par b bad\n--- FAIL: TestPar (0.00s)\n    --- PASS: TestPar/a (0.00s)\n    --- FAIL: TestPar/b (0.00s)\nFAIL\nFAIL\texample.com/gosub/p\t0.003s\nFAIL\n";
    const GO_SUBTESTS_PLAIN: &str = "--- FAIL: TestTable (0.00s)\n    p_test.go:6: starting the table\n    --- FAIL: TestTable/three (0.00s)\n        p_test.go:10: case three\n        p_test.go:12: double(3) = 6, want 7\n--- FAIL: TestNested (0.00s)\n    --- FAIL: TestNested/outer (0.00s)\n        --- FAIL: TestNested/outer/inner_bad (0.00s)\n            p_test.go:22: nested broke\n--- FAIL: TestPar (0.00s)\n    --- FAIL: TestPar/b (0.00s)\n        p_test.go:33: par b bad\nFAIL\nFAIL\texample.com/gosub/p\t0.002s\nFAIL\n";

    #[test]
    fn go_failing_subtests_are_named_with_their_parent_and_placed_where_they_failed() {
        let f = |name: &str, line: u32, message: &str| TestFailure {
            name: name.into(),
            file: Some("p/p_test.go".into()),
            line: Some(line),
            message: Some(message.into()),
            runner: None,
        };
        let want = [
            f("TestTable/three", 12, "double(3) = 6, want 7"),
            f("TestNested/outer/inner_bad", 22, "nested broke"),
            f("TestPar/b", 33, "par b bad"),
        ];
        for out in [GO_SUBTESTS_V, GO_SUBTESTS_PLAIN] {
            let o = go(out, Some("example.com/gosub"), None);
            assert_eq!(o.failures, want, "{out}");
            assert_eq!((o.passed, o.failed), (0, 3), "{out}");
        }
        // Two failing cases of one table: each is a failure.
        let two = GO_SUBTESTS_PLAIN.replace(
            "--- FAIL: TestNested (0.00s)",
            "    --- FAIL: TestTable/four (0.00s)\n        p_test.go:12: double(4) = 8, want 9\n--- FAIL: TestNested (0.00s)",
        );
        let names: Vec<String> = go(&two, None, None).failures.into_iter().map(|f| f.name).collect();
        assert_eq!(names, ["TestTable/three", "TestTable/four", "TestNested/outer/inner_bad", "TestPar/b"]);
    }

    #[test]
    fn go_result_lines_printed_by_a_test_are_not_counted() {
        // -v: results of tests go did not announce are printed text; an `ok` package failed none.
        let v = "=== RUN   TestPrints\n--- FAIL: TestGhost (0.00s)\n    ghost_test.go:3: boo\n--- PASS: TestPhantom (0.00s)\n--- PASS: TestPrints (0.00s)\n=== RUN   TestReal\n    p_test.go:14: later\n--- SKIP: TestReal (0.00s)\nPASS\nok  \texample.com/m/p\t0.01s\n";
        let o = go(v, Some("example.com/m"), None);
        assert_eq!((o.passed, o.failed, o.skipped, o.failures.len()), (1, 0, 1, 0));
        // Plain output: nothing announced, so only the package line can say the FAIL was printed.
        let plain = "--- FAIL: TestBad (0.00s)\n    b_test.go:5: no\nFAIL\nFAIL\texample.com/m/b\t0.01s\n--- FAIL: TestGhost (0.00s)\nok  \texample.com/m/p\t0.01s\n";
        let o = go(plain, Some("example.com/m"), None);
        assert_eq!((o.failed, o.failures.len()), (1, 1));
        assert_eq!((o.failures[0].name.as_str(), o.failures[0].file.as_deref()), ("TestBad", Some("b/b_test.go")));
    }

    #[test]
    fn a_go_announcement_a_running_test_prints_is_not_a_test() {
        // Real go 1.19 `-v` output: TestReal prints a fake announcement and result; TestBad fails,
        // so the package's `FAIL` line cannot say the printed failure was text.
        let v = "=== RUN   TestReal\n=== RUN   TestFake\n--- FAIL: TestFake (0.00s)\n--- PASS: TestReal (0.00s)\n=== RUN   TestBad\n    a_test.go:13: bad\n--- FAIL: TestBad (0.00s)\nFAIL\nFAIL\texample.com/gf/pkg\t0.002s\nFAIL\n";
        let o = go(v, Some("example.com/gf"), None);
        assert_eq!((o.passed, o.failed), (1, 1));
        let names: Vec<&str> = o.failures.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["TestBad"]);
        // Parallel tests paused and continued are go's own.
        let par = "=== RUN   TestP1\n=== PAUSE TestP1\n=== RUN   TestP2\n=== PAUSE TestP2\n=== CONT  TestP1\n--- PASS: TestP1 (0.00s)\n=== CONT  TestP2\n--- FAIL: TestP2 (0.00s)\nFAIL\nFAIL\tm/p\t0.01s\n";
        let o = go(par, Some("m"), None);
        assert_eq!((o.passed, o.failed, o.failures[0].name.as_str()), (1, 1, "TestP2"));
    }

    #[test]
    fn a_go_panic_is_the_failures_message_placed_at_its_frame_in_the_test_file() {
        // go 1.19's output for a nil map write in TestPanics (p/p_test.go:6).
        let out = "=== RUN   TestOk\n--- PASS: TestOk (0.00s)\n=== RUN   TestPanics\n--- FAIL: TestPanics (0.00s)\npanic: assignment to entry in nil map [recovered]\n\tpanic: assignment to entry in nil map\n\ngoroutine 19 [running]:\ntesting.tRunner.func1.2({0x508ec0, 0x551ca0})\n\t/usr/lib/go-1.19/src/testing/testing.go:1396 +0x24e\npanic({0x508ec0, 0x551ca0})\n\t/usr/lib/go-1.19/src/runtime/panic.go:884 +0x212\nexample.com/m/p.helper(...)\n\t/r/p/p.go:9\nexample.com/m/p.TestPanics(0xc000096680?)\n\t/r/p/p_test.go:6 +0x2e\ntesting.tRunner(0xc0000969c0, 0x52f2f0)\n\t/usr/lib/go-1.19/src/testing/testing.go:1446 +0x10b\nFAIL\texample.com/m/p\t0.007s\nFAIL\n";
        let o = go(out, Some("example.com/m"), Some(Path::new("/r")));
        assert_eq!((o.passed, o.failed, o.failures.len()), (1, 1, 1));
        let f = &o.failures[0];
        assert_eq!(
            (f.name.as_str(), f.file.as_deref(), f.line, f.message.as_deref()),
            ("TestPanics", Some("p/p_test.go"), Some(6), Some("panic: assignment to entry in nil map"))
        );
    }

    #[test]
    fn go_packages_without_tests_are_none_found_and_a_passing_plain_run_is_not() {
        // Real go 1.19 output: `go test ./lib` (no _test.go file), `go test -v ./empty` (a
        // test file without tests), and both in one run; each exits 0.
        for out in [
            "?   \texample.com/gom/lib\t[no test files]\n",
            "testing: warning: no tests to run\nPASS\nok  \texample.com/gom/empty\t0.005s [no tests to run]\n",
            "testing: warning: no tests to run\nPASS\nok  \texample.com/gom/empty\t(cached) [no tests to run]\n?   \texample.com/gom/lib\t[no test files]\n",
        ] {
            let o = go(out, Some("example.com/gom"), None);
            assert!(o.none_found && o.passed + o.failed + o.skipped == 0, "{out}: {o:?}");
        }
        // A plain run whose package passed ran tests, uncounted: not "none found".
        let o = go("ok  \texample.com/gom/calc\t0.002s\n?   \texample.com/gom/lib\t[no test files]\n", None, None);
        assert!(!o.none_found && !o.counted, "{o:?}");
        // A package that does not build is a failure, not "no tests", beside one without tests.
        let o = go("# example.com/gom/broken [example.com/gom/broken.test]\nbroken/b_test.go:5:28: undefined: Foo\nFAIL\texample.com/gom/broken [build failed]\n?   \texample.com/gom/lib\t[no test files]\nFAIL\n", None, None);
        assert!(!o.none_found && o.failed == 1, "{o:?}");
    }

    /// Real go 1.19 output, `-v` and plain, of tests that print after they fail: a case that
    /// logs its inputs after its `t.Errorf`, a test whose helper (`t.Helper()`, so the caller's
    /// line) fails between two `t.Logf`s, one calling `err.Error()` and `errors.New`, and an
    /// inline `{ t.Fatal(err) }`. The source, beside the output, as go read it.
    const GO_AFTER_SRC: &str = "package calc\n\nimport (\n\t\"errors\"\n\t\"testing\"\n)\n\nfunc check(t *testing.T, got int) {\n\tt.Helper()\n\tif got != 1 {\n\t\tt.Errorf(\"check: got %d\", got)\n\t}\n}\n\nfunc TestTable(t *testing.T) {\n\tt.Log(\"starting the table\")\n\tfor _, c := range []struct{ name string; in, want int }{{\"one\", 1, 2}, {\"three\", 3, 7}} {\n\t\tt.Run(c.name, func(t *testing.T) {\n\t\t\tt.Logf(\"case %s\", c.name)\n\t\t\tif c.in*2 != c.want {\n\t\t\t\tt.Errorf(\"double(%d) = %d, want %d\", c.in, c.in*2, c.want)\n\t\t\t\tt.Logf(\"inputs were %d\", c.in)\n\t\t\t}\n\t\t})\n\t}\n}\n\nfunc TestHelper(t *testing.T) {\n\terr := errors.New(\"boom\")\n\tt.Logf(\"before: %s\", err.Error())\n\tcheck(t, 2)\n\tt.Logf(\"after: %v\", errors.New(\"x\"))\n}\n\nfunc TestInline(t *testing.T) {\n\tif err := errors.New(\"no\"); err != nil { t.Fatal(err) }\n}\n";
    const GO_AFTER_V: &str = "=== RUN   TestTable\n    calc_test.go:16: starting the table\n=== RUN   TestTable/one\n    calc_test.go:19: case one\n=== RUN   TestTable/three\n    calc_test.go:19: case three\n    calc_test.go:21: double(3) = 6, want 7\n    calc_test.go:22: inputs were 3\n--- FAIL: TestTable (0.00s)\n    --- PASS: TestTable/one (0.00s)\n    --- FAIL: TestTable/three (0.00s)\n=== RUN   TestHelper\n    calc_test.go:30: before: boom\n    calc_test.go:31: check: got 2\n    calc_test.go:32: after: x\n--- FAIL: TestHelper (0.00s)\n=== RUN   TestInline\n    calc_test.go:36: no\n--- FAIL: TestInline (0.00s)\nFAIL\nFAIL\texample.com/m/calc\t0.004s\nFAIL\n";
    const GO_AFTER_PLAIN: &str = "--- FAIL: TestTable (0.00s)\n    calc_test.go:16: starting the table\n    --- FAIL: TestTable/three (0.00s)\n        calc_test.go:19: case three\n        calc_test.go:21: double(3) = 6, want 7\n        calc_test.go:22: inputs were 3\n--- FAIL: TestHelper (0.00s)\n    calc_test.go:30: before: boom\n    calc_test.go:31: check: got 2\n    calc_test.go:32: after: x\n--- FAIL: TestInline (0.00s)\n    calc_test.go:36: no\nFAIL\nFAIL\texample.com/m/calc\t0.003s\nFAIL\n";

    #[test]
    fn go_failures_are_placed_at_the_failing_call_not_a_log_printed_after_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("calc")).unwrap();
        std::fs::write(dir.path().join("calc/calc_test.go"), GO_AFTER_SRC).unwrap();
        let f = |name: &str, line: u32, message: &str| TestFailure {
            name: name.into(),
            file: Some("calc/calc_test.go".into()),
            line: Some(line),
            message: Some(message.into()),
            runner: None,
        };
        let want = [
            f("TestTable/three", 21, "double(3) = 6, want 7"),
            f("TestHelper", 31, "check: got 2"),
            f("TestInline", 36, "no"),
        ];
        for out in [GO_AFTER_V, GO_AFTER_PLAIN] {
            let o = go(out, Some("example.com/m"), Some(dir.path()));
            assert_eq!(o.failures, want, "{out}");
        }
        // Without the source a t.Log cannot be told from a t.Error: the last line printed.
        let o = go(GO_AFTER_V, Some("example.com/m"), None);
        assert_eq!((o.failures[0].line, o.failures[1].line), (Some(22), Some(32)));
    }

    /// Real go 1.19 output, `-v` and plain, of testify-style failures (testify 1.8's `Fail`:
    /// `t.Errorf("\n%s", ...)` of its labeled lines, `Error Trace` from the call stack): an
    /// `assert.Equal` after a `t.Log`, one in a helper (two frames), one in a subtest. `{M}` is the
    /// module's directory.
    const TESTIFY_SRC: &str = "package calc\n\nimport (\n\t\"testing\"\n\n\t\"example.com/tf/assert\"\n)\n\nfunc TestAdd(t *testing.T) {\n\tt.Log(\"adding\")\n\tassert.Equal(t, 3, Add(1, 1), \"one and one\")\n}\n\nfunc check(t *testing.T, got int) {\n\tassert.Equal(t, 4, got)\n}\n\nfunc TestHelper(t *testing.T) {\n\tcheck(t, Add(1, 2))\n}\n\nfunc TestTable(t *testing.T) {\n\tt.Run(\"two\", func(t *testing.T) {\n\t\tassert.Equal(t, 5, Add(2, 2))\n\t})\n}\n";
    const TESTIFY_V: &str = "?   \texample.com/tf/assert\t[no test files]\n=== RUN   TestAdd\n    calc_test.go:10: adding\n    calc_test.go:11: \n        \tError Trace:\t{M}/calc/calc_test.go:11\n        \tError:      \tNot equal: \n        \t            \texpected: 3\n        \t            \tactual  : 2\n        \tTest:       \tTestAdd\n        \tMessages:   \tone and one\n--- FAIL: TestAdd (0.00s)\n=== RUN   TestHelper\n    calc_test.go:15: \n        \tError Trace:\t{M}/calc/calc_test.go:15\n        \t            \t\t\t\t{M}/calc/calc_test.go:19\n        \tError:      \tNot equal: \n        \t            \texpected: 4\n        \t            \tactual  : 3\n        \tTest:       \tTestHelper\n--- FAIL: TestHelper (0.00s)\n=== RUN   TestTable\n=== RUN   TestTable/two\n    calc_test.go:24: \n        \tError Trace:\t{M}/calc/calc_test.go:24\n        \tError:      \tNot equal: \n        \t            \texpected: 5\n        \t            \tactual  : 4\n        \tTest:       \tTestTable/two\n--- FAIL: TestTable (0.00s)\n    --- FAIL: TestTable/two (0.00s)\n=== RUN   TestOk\n--- PASS: TestOk (0.00s)\nFAIL\nFAIL\texample.com/tf/calc\t0.003s\nFAIL\n";
    const TESTIFY_PLAIN: &str = "?   \texample.com/tf/assert\t[no test files]\n--- FAIL: TestAdd (0.00s)\n    calc_test.go:10: adding\n    calc_test.go:11: \n        \tError Trace:\t{M}/calc/calc_test.go:11\n        \tError:      \tNot equal: \n        \t            \texpected: 3\n        \t            \tactual  : 2\n        \tTest:       \tTestAdd\n        \tMessages:   \tone and one\n--- FAIL: TestHelper (0.00s)\n    calc_test.go:15: \n        \tError Trace:\t{M}/calc/calc_test.go:15\n        \t            \t\t\t\t{M}/calc/calc_test.go:19\n        \tError:      \tNot equal: \n        \t            \texpected: 4\n        \t            \tactual  : 3\n        \tTest:       \tTestHelper\n--- FAIL: TestTable (0.00s)\n    --- FAIL: TestTable/two (0.00s)\n        calc_test.go:24: \n            \tError Trace:\t{M}/calc/calc_test.go:24\n            \tError:      \tNot equal: \n            \t            \texpected: 5\n            \t            \tactual  : 4\n            \tTest:       \tTestTable/two\nFAIL\nFAIL\texample.com/tf/calc\t0.003s\nFAIL\n";

    #[test]
    fn testify_failures_are_placed_from_their_block_with_its_message() {
        // The location line has no message (`calc_test.go:11: `): it was no place, and the
        // failure was placed at the `t.Log` before it, or nowhere.
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("calc")).unwrap();
        std::fs::write(dir.path().join("calc/calc_test.go"), TESTIFY_SRC).unwrap();
        let m = dir.path().to_string_lossy();
        let f = |name: &str, line: u32, message: &str| TestFailure {
            name: name.into(),
            file: Some("calc/calc_test.go".into()),
            line: Some(line),
            message: Some(message.into()),
            runner: None,
        };
        let want = [
            f("TestAdd", 11, "Not equal: expected: 3 actual : 2; one and one"),
            f("TestHelper", 15, "Not equal: expected: 4 actual : 3"),
            f("TestTable/two", 24, "Not equal: expected: 5 actual : 4"),
        ];
        for out in [TESTIFY_V, TESTIFY_PLAIN] {
            let out = out.replace("{M}", &m);
            for src in [Some(dir.path()), None] {
                let o = go(&out, Some("example.com/tf"), src);
                let mut want = want.clone();
                if src.is_none() {
                    // Without the module's directory an absolute frame stays absolute.
                    for w in &mut want {
                        w.file = Some(format!("{m}/calc/calc_test.go"));
                    }
                }
                assert_eq!(o.failures, want, "{out}");
                assert_eq!((o.passed, o.failed), (if out.contains("=== RUN") { 1 } else { 0 }, 3));
            }
        }
        // testify before 1.8 printed base names: placed in the package's folder.
        let old = TESTIFY_V.replace("{M}/calc/", "");
        let o = go(&old, Some("example.com/tf"), None);
        assert_eq!(o.failures, want);
    }

    #[test]
    fn go_calls_are_read_where_a_statement_starts() {
        assert_eq!(go_call("\t\tt.Errorf(\"x %d\", 1)"), GoCall::Fails);
        assert_eq!(go_call("\tif err != nil { t.Fatal(err) }"), GoCall::Fails);
        assert_eq!(go_call("\ts.T().Fatalf(\"x\")"), GoCall::Fails);
        assert_eq!(go_call("\tassert.Error(t, err)"), GoCall::Fails);
        assert_eq!(go_call("\tt.Logf(\"got %s\", err.Error())"), GoCall::Logs);
        assert_eq!(go_call("\tt.Log(fmt.Errorf(\"x\"))"), GoCall::Logs);
        assert_eq!(go_call("\tt.Skip(\"later\")"), GoCall::Logs);
        assert_eq!(go_call("\tcheck(t, 2)"), GoCall::Other);
        assert_eq!(go_call("\trequire.NoError(t, err)"), GoCall::Other);
    }
}
