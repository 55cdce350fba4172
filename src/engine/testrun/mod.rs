//! `docdex run-tests` ([`Engine::run_tests`]): detects the repository's test runner, runs it
//! (the whole suite, a target, or only the tests a change reaches) in its own process group
//! with a timeout, and reads its output into a structured result (`parse`).
//!
//! Runner detection, first match wins: `[tests] command` in the config; `Cargo.toml` (cargo
//! test, every test binary even after one fails); `go.mod` or `go.work` (go test); `package.json` (its
//! `test` script names vitest or jest: those, with the files; `node --test`: node's runner
//! with the TAP reporter; mocha: mocha with TAP; each with the script's environment and
//! options, `node::command`; any other script: npm test; no script: node's runner; npm's
//! placeholder script: no node suite); Python markers (`pyproject.toml`, `setup.py`, `setup.cfg`,
//! `pytest.ini`, `tox.ini`, `conftest.py`, `requirements.txt`) (pytest, run by the repository's
//! `.venv` or `venv` Python, else `$VIRTUAL_ENV`'s, else `python3`); `go.mod` files only below
//! the root (go test per module); a `tests` directory (pytest). The other runners whose suites
//! the repository also holds run after it, one after another, within the one timeout, and the
//! results are merged (`multi`).

mod affected;
mod cargo;
mod collect_only;
mod config_command;
mod go_timeout;
mod group;
mod hung;
mod jest;
mod js_stack;
mod kept;
mod location;
mod multi;
mod node;
mod parse;
mod pytest_config;
mod reporters;
mod runs;
mod testify;
pub mod types;

use crate::engine::cancel::CancelToken;
use crate::engine::code::test_files::is_test_path;
use crate::engine::Engine;
use crate::error::{Error, Result};
use kept::Kept;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use types::*;

/// Bytes of one output line kept (the rest is counted and cut).
const MAX_LINE_BYTES: usize = 16 * 1024;
/// How long the output may stay open after the run's process group is gone.
const OUTPUT_GRACE: Duration = Duration::from_secs(2);
/// Lines in `output_tail`.
const TAIL_LINES: usize = 60;
/// Bytes in `output_tail` at most.
const TAIL_BYTES: usize = 8 * 1024;

/// A detected runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Runner {
    Config,
    Cargo,
    Go,
    Node,
    Npm,
    Jest,
    Vitest,
    Pytest,
}

impl Runner {
    fn name(self) -> &'static str {
        match self {
            Runner::Config => "config",
            Runner::Cargo => "cargo",
            Runner::Go => "go",
            Runner::Node => "node",
            Runner::Npm => "npm",
            Runner::Jest => "jest",
            Runner::Vitest => "vitest",
            Runner::Pytest => "pytest",
        }
    }

    /// Whether a test file is one this runner runs.
    fn runs(self, path: &str) -> bool {
        let ext = path.rsplit('.').next().unwrap_or("");
        match self {
            Runner::Config => true,
            Runner::Cargo => ext == "rs",
            Runner::Go => ext == "go",
            Runner::Pytest => ext == "py",
            Runner::Node | Runner::Npm | Runner::Jest | Runner::Vitest => {
                matches!(ext, "js" | "mjs" | "cjs" | "jsx" | "ts" | "mts" | "cts" | "tsx")
            }
        }
    }
}

/// Which runner, and why.
fn detect(root: &Path, configured: &str) -> Result<(Runner, String)> {
    if !configured.trim().is_empty() {
        return Ok((Runner::Config, "[tests] command in the config".into()));
    }
    let has = |f: &str| root.join(f).is_file();
    if has("Cargo.toml") {
        return Ok((Runner::Cargo, "Cargo.toml at the root".into()));
    }
    if has("go.mod") {
        return Ok((Runner::Go, "go.mod at the root".into()));
    }
    if has("go.work") {
        return Ok((Runner::Go, "go.work at the root (a Go workspace)".into()));
    }
    let placeholder = has("package.json") && is_placeholder(&package_test_script(root)?);
    if has("package.json") && !placeholder {
        return node_runner(root);
    }
    let markers =
        ["pyproject.toml", "setup.py", "setup.cfg", "pytest.ini", "tox.ini", "conftest.py", "requirements.txt"];
    if let Some(m) = markers.iter().find(|m| has(m)) {
        return Ok((Runner::Pytest, format!("{m} at the root")));
    }
    // Go modules only below the root (no go.mod or go.work there): found no runner.
    if let Some(why) = nested_go_modules(root) {
        return Ok((Runner::Go, why));
    }
    if root.join("tests").is_dir() {
        return Ok((Runner::Pytest, "a tests directory (pytest's default layout)".into()));
    }
    if placeholder {
        return Err(Error::BadRequest(format!(
            "no test runner found in {}: package.json's test script is npm's placeholder (`{PLACEHOLDER_SCRIPT}`, as `npm init` writes it), which holds no tests, and there is no Cargo.toml, go.mod, pyproject.toml, setup.py, pytest.ini, conftest.py or tests/; set package.json's `scripts.test` (e.g. `node --test`) or `[tests] command` in the config (`docdex config` shows where it is)",
            root.display()
        )));
    }
    Err(Error::BadRequest(format!(
        "no test runner found in {}: none of Cargo.toml, go.mod (at the root or below it), package.json, pyproject.toml, setup.py, pytest.ini, conftest.py or tests/; set `[tests] command` in the config (`docdex config` shows where it is)",
        root.display()
    )))
}

/// What `npm init` writes as the test script.
const PLACEHOLDER_SCRIPT: &str = "echo \"Error: no test specified\" && exit 1";

/// Whether a test script is npm's placeholder (`echo "Error: no test specified" && exit 1`): it
/// runs no test, and fails. It was run as node's runner (or npm test, a failed suite).
fn is_placeholder(script: &str) -> bool {
    script.contains("no test specified")
}

/// The runner of the root's `package.json`, by its `test` script, and why.
fn node_runner(root: &Path) -> Result<(Runner, String)> {
    {
        let script = package_test_script(root)?;
        let runner = if let Some(r) = node::runner_of(&script) {
            r
        } else if script.contains("vitest") {
            Runner::Vitest
        } else if script.contains("jest") {
            Runner::Jest
        } else if script.contains("node --test") || script.is_empty() {
            Runner::Node
        } else {
            Runner::Npm
        };
        let why = if script.is_empty() {
            "package.json without a test script: node's built-in runner".to_string()
        } else {
            format!("package.json's test script `{script}`")
        };
        Ok((runner, why))
    }
}

/// Why Go, when `go.mod` files lie only below the root (`svc/go.mod`, `tools/go.mod`): each
/// module is then run on its own (`runs::go_parts`). `None` without any.
fn nested_go_modules(root: &Path) -> Option<String> {
    let modules = runs::go_modules(root);
    if modules.is_empty() {
        return None;
    }
    let mut named: Vec<String> = modules.iter().take(5).map(|m| format!("{m}/")).collect();
    if modules.len() > 5 {
        named.push(format!("{} more", modules.len() - 5));
    }
    Some(format!("go.mod in {} (none at the root, and no go.work)", named.join(", ")))
}

/// `scripts.test` of the root `package.json` (empty without one). A package.json that is not
/// JSON is bad input: read as "no script" it ran node's runner over whatever it found.
fn package_test_script(root: &Path) -> Result<String> {
    let bytes = crate::engine::fsutil::read_repo_file(root, "package.json")
        .map_err(|e| Error::BadRequest(format!("cannot read {}/package.json: {e}", root.display())))?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
        Error::BadRequest(format!(
            "{}/package.json is not valid JSON ({e}): fix it, or set `[tests] command` in the config (`docdex config` shows where it is)",
            root.display()
        ))
    })?;
    Ok(v["scripts"]["test"].as_str().unwrap_or_default().to_string())
}

/// Why the run shows the runner itself is missing or refused to start (not a failing suite), if
/// it does: pytest not in that Python or refusing its arguments or configuration (exit 4), jest
/// or vitest not installed for npx, or the shell not finding the test script's command (exit 127).
fn missing_runner(runner: Runner, argv: &[String], exit: Option<i32>, text: &str) -> Option<String> {
    let program = argv.first().map_or("python3", String::as_str);
    match runner {
        Runner::Pytest if exit == Some(1) && text.contains("No module named pytest") => Some(format!(
            "the test runner pytest is not installed for {program} (install it there, e.g. `{program} -m pip install pytest`, or set [tests] command)"
        )),
        // Exit 4: pytest refused its arguments or configuration and ran nothing.
        Runner::Pytest if exit == Some(4) => Some(format!(
            "pytest refused its arguments or configuration (its exit code 4), so no test ran: {}",
            parse::pytest_refused(&strip_ansi(text)).unwrap_or_else(|| "it named no reason; see its output".into())
        )),
        Runner::Jest | Runner::Vitest | Runner::Npm
            if exit != Some(0)
                && (text.contains("npx canceled due to missing packages") || text.contains("could not determine executable to run")) =>
        {
            let name = node::npx_runner(runner, argv)?;
            Some(format!(
                "the test runner {name} is not installed in this project (run `npm install` or `npm install --save-dev {name}`, or set [tests] command)"
            ))
        }
        Runner::Npm | Runner::Config if exit == Some(127) => {
            let said = text.lines().rev().find(|l| l.contains("not found")).unwrap_or("exit 127");
            Some(format!("the test command was not found ({}): install it, or set [tests] command", said.trim()))
        }
        _ => None,
    }
}

/// The repository's virtualenv whose Python is a dangling link (made by a Python since
/// removed or upgraded): passed over, its pytest went missing and python3's was asked.
fn broken_venv(root: &Path) -> Option<String> {
    [".venv", "venv"].iter().find_map(|venv| {
        let p = root.join(venv).join("bin/python");
        let link = std::fs::read_link(&p).ok()?;
        (!p.exists()).then(|| {
            format!(
                "{} links to {}, which no longer exists: recreate the virtualenv (`python3 -m venv --clear {venv}`, then install the project's requirements) or remove it",
                p.display(),
                link.display()
            )
        })
    })
}

/// The Python that runs pytest: the virtualenv of the directory pytest runs in (`run_dir`, a
/// project in a subdirectory), then the repository's, first.
fn python(root: &Path, run_dir: &str) -> String {
    let dirs = if run_dir.is_empty() { vec![root.to_path_buf()] } else { vec![root.join(run_dir), root.to_path_buf()] };
    for dir in dirs {
        for venv in [".venv", "venv"] {
            let p = dir.join(venv).join("bin/python");
            if p.exists() {
                return p.to_string_lossy().into_owned();
            }
        }
    }
    if let Some(v) = std::env::var_os("VIRTUAL_ENV").filter(|v| !v.is_empty()) {
        let p = PathBuf::from(v).join("bin/python");
        if p.exists() {
            return p.to_string_lossy().into_owned();
        }
    }
    "python3".into()
}

/// Node's default test file patterns, for a directory target (node 20 takes files only).
fn node_test_files(root: &Path, dir: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.join(dir)];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if name == "node_modules" || name.starts_with('.') {
                continue;
            }
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            } else if let Ok(rel) = p.strip_prefix(root) {
                let rel = rel.to_string_lossy().replace('\\', "/");
                let stem = name.split('.').next().unwrap_or("");
                let named =
                    name.contains(".test.") || name.contains("_test.") || stem == "test" || stem.starts_with("test-");
                if Runner::Node.runs(&rel) && (named || is_test_path(&rel)) {
                    out.push(rel);
                }
            }
        }
    }
    out.sort();
    out
}

/// A repo-relative path as a runner's operand: one starting with `-` (a file named
/// `--basetemp=..` exists and confines fine) would be read as an option, and pytest removes
/// its `--basetemp` directory.
fn operand(path: &str) -> String {
    if path.starts_with('-') {
        format!("./{path}")
    } else {
        path.to_string()
    }
}

/// The command line for `runner` over `targets` (repo-relative files or directories; empty
/// for the whole suite), with notes about what could not be narrowed.
///
/// pytest's cache goes to `pytest_cache` (under docdex's state for the repository), not into the
/// repository: `-p no:cacheprovider` kept it out too, but took the `cache` fixture away, and a
/// suite using it failed ("fixture 'cache' not found"). docdex's JavaScript reporters are in
/// `reporters` (`reporters::for_runner`).
fn command(
    root: &Path,
    runner: Runner,
    configured: &str,
    targets: &[String],
    (pytest_cache, reporters): (&Path, Option<&Path>),
    notes: &mut Vec<String>,
) -> Vec<String> {
    let targets: Vec<String> = targets.iter().map(|t| operand(t)).collect();
    let targets = targets.as_slice();
    match runner {
        Runner::Config => config_command::command(configured, targets),
        Runner::Cargo => cargo::command(root, targets, notes),
        Runner::Go => go_command(root, targets),
        Runner::Node | Runner::Npm | Runner::Jest | Runner::Vitest => {
            let script = package_test_script(root).unwrap_or_default();
            node::command(root, runner, &script, targets, reporters, notes)
        }
        Runner::Pytest => pytest_command(root, "", targets, pytest_cache, notes),
    }
}

/// The runner processes to start: one, in the root, for most runs; pytest once per
/// configuration its targets fall under (`pytest_parts`); go test once per module of a
/// repository with several (`runs::go_parts`).
fn plan(
    root: &Path,
    runner: Runner,
    configured: &str,
    targets: &[String],
    (pytest_cache, reporters): (&Path, Option<&Path>),
    notes: &mut Vec<String>,
) -> Result<Vec<runs::Part>> {
    match runner {
        Runner::Pytest if !targets.is_empty() => return Ok(pytest_parts(root, targets, pytest_cache, notes)),
        Runner::Pytest => return Ok(pytest_suite_parts(root, pytest_cache, notes)),
        Runner::Go => {
            if let Some(parts) = runs::go_parts(root, targets, notes)? {
                return Ok(parts);
            }
        }
        _ => {}
    }
    let command = command(root, runner, configured, targets, (pytest_cache, reporters), notes);
    Ok(vec![runs::Part { dir: String::new(), command }])
}

/// The whole suite: pytest once per configuration (`pytest_config::suite`), each from its
/// directory, the directories of those below it left to their own run (`--ignore`), as targets
/// under several configurations already ran.
fn pytest_suite_parts(root: &Path, pytest_cache: &Path, notes: &mut Vec<String>) -> Vec<runs::Part> {
    let (suite, suite_notes) = pytest_config::suite(root);
    suite_parts(root, "", suite, suite_notes, pytest_cache, notes)
}

/// The runs of `suite` (of the whole repository, or of the directory `target`) as parts: each
/// pytest from its configuration's directory, handed its paths, `--ignore` for the directories
/// of the configurations below it.
fn suite_parts(
    root: &Path,
    target: &str,
    suite: Vec<pytest_config::SuiteRun>,
    suite_notes: Vec<String>,
    pytest_cache: &Path,
    notes: &mut Vec<String>,
) -> Vec<runs::Part> {
    notes.extend(suite_notes);
    if suite.len() > 1 {
        let sources: Vec<String> =
            suite.iter().map(|r| r.source.clone().unwrap_or_else(|| "no configuration at the root".into())).collect();
        let what = match target.trim_end_matches('/') {
            "" => "the repository has".to_string(),
            t => format!("the target {t}/ runs"),
        };
        notes.push(format!(
            "{what} {} pytest configurations ({}): pytest ran once per configuration, from its directory, each leaving the directories of those below it to their own run (--ignore), and the results were merged",
            suite.len(),
            sources.join(", ")
        ));
    }
    suite
        .into_iter()
        .map(|run| {
            let mut command = pytest_command(root, &run.dir, &[], pytest_cache, notes);
            command.extend(run.ignore.iter().map(|d| format!("--ignore={d}")));
            command.extend(run.paths.iter().map(|p| operand(p)));
            runs::Part { dir: run.dir, command }
        })
        .collect()
}

/// pytest once per configuration the targets fall under, each from its configuration's
/// directory (its rootdir), as `cd sub && pytest` would run: its `addopts` paths mean what they
/// say there, and its `addopts` apply to its files only. A directory target with configurations
/// below it runs as the whole suite does, from that directory down; so does a configuration's
/// own directory, whose `testpaths` then apply.
fn pytest_parts(root: &Path, targets: &[String], pytest_cache: &Path, notes: &mut Vec<String>) -> Vec<runs::Part> {
    // A directory with configurations below it runs each (`pytest_config::suite_in`).
    if let [t] = targets {
        if !t.contains("::") && root.join(t).is_dir() {
            let (suite, suite_notes) = pytest_config::suite_in(root, t);
            let cfg = pytest_config::read(root, t);
            // `cd svc && pytest`: handed `.`, a test outside its testpaths ran.
            let own = cfg.source.is_some() && cfg.dir == t.trim_matches('/');
            let nested = suite.len() > 1 || suite.iter().any(|r| !r.ignore.is_empty()) || !suite_notes.is_empty();
            if own && suite.len() == 1 {
                notes.push(format!(
                    "pytest ran in {}/, the directory of its configuration {} (its rootdir), as its whole suite: its testpaths apply",
                    cfg.dir,
                    cfg.source.unwrap_or_default()
                ));
            }
            if (own || nested) && !suite.is_empty() {
                return suite_parts(root, t, suite, suite_notes, pytest_cache, notes);
            }
        }
    }
    let groups = pytest_config::groups(root, targets);
    if groups.len() > 1 {
        let sources: Vec<String> =
            groups.iter().map(|(_, source, _)| source.clone().unwrap_or_else(|| "no configuration".into())).collect();
        notes.push(format!(
            "the files run fall under {} pytest configurations ({}): pytest ran once per configuration, from its directory, and the results were merged",
            groups.len(),
            sources.join(", ")
        ));
    }
    let mut parts = Vec::new();
    for (dir, source, group) in groups {
        if !dir.is_empty() {
            let source = source.unwrap_or_default();
            notes.push(format!("pytest ran in {dir}/, the directory of its configuration {source} (its rootdir)"));
        }
        let inside: Vec<String> = group.iter().map(|t| within(t, &dir)).collect();
        let command = pytest_command(root, &dir, &inside, pytest_cache, notes);
        parts.push(runs::Part { dir, command });
    }
    parts
}

/// pytest's command line, run in `run_dir` (repo-relative; `targets` relative to it), around
/// the configuration's `addopts`: its report and traceback choices kept (`pytest_report_args`),
/// its cache under docdex's state unless `addopts` turns the
/// cache plugin off (`-p no:cacheprovider`; the option would name a plugin not loaded), and
/// `-v` enough to bring a `-qq` back to `-q`, whose summary line holds the counts.
fn pytest_command(
    root: &Path,
    run_dir: &str,
    targets: &[String],
    pytest_cache: &Path,
    notes: &mut Vec<String>,
) -> Vec<String> {
    let s = |x: &str| x.to_string();
    let opts = pytest_config::addopts(root, run_dir);
    let mut cmd = vec![python(root, run_dir), s("-m"), s("pytest")];
    cmd.extend(pytest_report_args(&opts));
    if !pytest_config::cache_disabled(&opts) {
        cmd.extend([s("-o"), format!("cache_dir={}", pytest_cache.display())]);
    }
    let quiet = pytest_config::too_quiet(&opts);
    if quiet > 0 {
        cmd.extend(std::iter::repeat_n(s("-v"), quiet));
        notes.push(format!(
            "pytest's addopts make it too quiet to print its counts (-qq): run with {} to bring it to -q",
            vec!["-v"; quiet].join(" ")
        ));
    }
    cmd.extend(targets.iter().map(|t| operand(t)));
    cmd
}

/// What pytest must print for its result to be read, around the user's `opts` (`addopts`,
/// `PYTEST_ADDOPTS`): `f` and `E` in the report chars, added to the user's own `-r` (pytest
/// keeps only the last `-r`, so a bare `-rfE` dropped their `-rs` skip reasons), nothing when
/// theirs already hold them (`-ra`); `--tb=line` only when they chose no `--tb` style (theirs
/// is kept, and its tracebacks are read: `parse::pytest`).
fn pytest_report_args(opts: &[String]) -> Vec<String> {
    let mut args = Vec::new();
    match pytest_config::report_chars(opts) {
        None => args.push("-rfE".to_string()),
        Some(chars) => {
            // `N` resets what came before it.
            let live = chars.rsplit('N').next().unwrap_or_default();
            let all = live.contains(['a', 'A']);
            let missing: String = ['f', 'E'].iter().filter(|c| !all && !live.contains(**c)).collect();
            if !missing.is_empty() {
                args.push(format!("-r{chars}{missing}"));
            }
        }
    }
    if !pytest_config::sets_tb(opts) {
        args.push("--tb=line".to_string());
    }
    args
}

/// `go test -v` over the packages (folders) that hold the targets, `./...` with none: a file is
/// its own package, a directory its package and every one below it (`./pkg/...`; it ran
/// `./pkg` alone, and a failing subpackage went unseen). Without `-v` a passing package prints
/// only `ok  pkg 0.01s`: its tests went uncounted (a green run read "0 passed").
fn go_command(root: &Path, targets: &[String]) -> Vec<String> {
    let s = |x: &str| x.to_string();
    let mut cmd = vec![s("go"), s("test"), s("-v")];
    if targets.is_empty() {
        cmd.push(s("./..."));
    }
    let mut pkgs: Vec<String> = Vec::new();
    for t in targets {
        let tree = root.join(t).is_dir();
        let dir = if tree { t.trim_end_matches('/') } else { t.rsplit_once('/').map(|(d, _)| d).unwrap_or(".") };
        let dir = if dir == "." || dir.is_empty() { s(".") } else { format!("./{}", dir.trim_start_matches("./")) };
        let pkg = if tree { format!("{}/...", dir.trim_end_matches("/.")) } else { dir };
        if !pkgs.contains(&pkg) {
            pkgs.push(pkg);
        }
    }
    cmd.extend(pkgs);
    cmd
}

/// What a finished (or killed) process left.
struct Finished {
    exit_code: Option<i32>,
    timed_out: bool,
    lines: Vec<String>,
    duration_ms: f64,
    /// What happened to processes the tests left behind, if anything.
    notes: Vec<String>,
    /// The timeout struck only as the runner's own (go test's `-timeout`, set from docdex's):
    /// the runner stopped its tests and exited, nothing was killed.
    runner_timeout: bool,
}

/// Reads `pipe` line by line into `kept`; a line's bytes past `MAX_LINE_BYTES` are counted,
/// not stored.
fn read_lines(pipe: impl Read, kept: &Mutex<Kept>) {
    let mut r = BufReader::new(pipe);
    let mut line: Vec<u8> = Vec::new();
    let mut cut = 0usize;
    let flush = |line: &mut Vec<u8>, cut: &mut usize| {
        let mut text = String::from_utf8_lossy(line).trim_end_matches('\r').to_string();
        if *cut > 0 {
            text.push_str(&format!(" [... {cut} more bytes of this line cut]"));
        }
        line.clear();
        *cut = 0;
        if let Ok(mut k) = kept.lock() {
            k.push(text);
        }
    };
    loop {
        let (used, ended) = match r.fill_buf() {
            Ok([]) => break,
            Ok(buf) => {
                let end = buf.iter().position(|b| *b == b'\n');
                let chunk = &buf[..end.unwrap_or(buf.len())];
                let room = MAX_LINE_BYTES.saturating_sub(line.len()).min(chunk.len());
                line.extend_from_slice(&chunk[..room]);
                cut += chunk.len() - room;
                (chunk.len() + usize::from(end.is_some()), end.is_some())
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        r.consume(used);
        if ended {
            flush(&mut line, &mut cut);
        }
    }
    if !line.is_empty() || cut > 0 {
        flush(&mut line, &mut cut);
    }
}

/// Starts the runner in `root` in a process group of its own, with colour off and piped output.
fn spawn_runner(root: &Path, program: &str, args: &[String]) -> Result<std::process::Child> {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("NO_COLOR", "1")
        .env("FORCE_COLOR", "0")
        .env("CARGO_TERM_COLOR", "never")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    cmd.spawn().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::BadRequest(format!("the test runner `{program}` is not installed or not on PATH"))
        } else {
            Error::io("starting the test runner in", root, e)
        }
    })
}

/// Waits for the runner; at `timeout` kills its whole group. The exit status (none when it
/// could not be read) and whether the timeout struck. When the thread's ambient token trips
/// (the client that asked for the run left), the group is killed at once and the run ends
/// with [`Error::Cancelled`]: nobody reads its result, and its tests would hold a work slot
/// and the machine's cores until the timeout.
fn wait_or_kill(
    child: &mut std::process::Child,
    root: &Path,
    started: Instant,
    timeout: Duration,
) -> Result<(Option<std::process::ExitStatus>, bool)> {
    let cancel = CancelToken::current();
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Ok((Some(s), false)),
            Ok(None) if cancel.is_cancelled() => {
                kill_group(child);
                tracing::info!(pid = child.id(), "test run cancelled by its caller: its process group was killed");
                return Err(Error::Cancelled);
            }
            Ok(None) if started.elapsed() >= timeout => {
                kill_group(child);
                return Ok((child.wait().ok(), true));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(Error::io("waiting for the test runner in", root, e)),
        }
    }
}

/// Kills the runner's process group and the runner, and reaps it.
fn kill_group(child: &mut std::process::Child) {
    group::kill_leftovers(child.id());
    let _ = child.kill();
    let _ = child.wait();
}

/// Runs `argv` in `root` in a new process group, interleaving stdout and stderr lines, and
/// kills the whole group at `timeout`, or when the runner exits and left processes behind.
fn execute(root: &Path, argv: &[String], timeout: Duration) -> Result<Finished> {
    let Some((program, args)) = argv.split_first() else {
        return Err(Error::BadRequest("empty test command".into()));
    };
    // A run of several runner processes stops before the next one once its caller left.
    CancelToken::current().check()?;
    let started = Instant::now();
    let mut child = spawn_runner(root, program, args)?;
    let kept: Arc<Mutex<Kept>> = Arc::default();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let pipes: [Option<Box<dyn Read + Send>>; 2] = [
        child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>),
        child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>),
    ];
    let mut readers = 0;
    for pipe in pipes.into_iter().flatten() {
        let (kept, done) = (kept.clone(), done_tx.clone());
        readers += 1;
        std::thread::spawn(move || {
            read_lines(pipe, &kept);
            let _ = done.send(());
        });
    }
    drop(done_tx);
    let (status, timed_out) = wait_or_kill(&mut child, root, started, timeout)?;
    let mut notes = Vec::new();
    if let Some(killed) = group::kill_leftovers(child.id()).filter(|_| !timed_out) {
        notes.push(group::leftovers_note(&killed));
    }
    // The output ends when its last writer does; one that left the group (setsid) is not
    // waited for beyond a short grace, nor past the timeout's own end.
    let grace = Instant::now() + OUTPUT_GRACE;
    for _ in 0..readers {
        if done_rx.recv_timeout(grace.saturating_duration_since(Instant::now())).is_err() {
            notes.push(format!(
                "the output stayed open {} s after the run ended (a process the tests started in a session of its own holds it): stopped reading it",
                OUTPUT_GRACE.as_secs()
            ));
            break;
        }
    }
    let (lines, cut) = kept.lock().map(|k| (k.lines(), k.note())).unwrap_or_default();
    notes.extend(cut);
    Ok(Finished {
        exit_code: if timed_out { None } else { status.and_then(|s| s.code()) },
        timed_out,
        lines,
        duration_ms: (started.elapsed().as_secs_f64() * 1e6).round() / 1e3,
        notes,
        runner_timeout: false,
    })
}

/// A repo-relative target relative to `dir`, one of its ancestors (`.` for `dir` itself).
fn within(target: &str, dir: &str) -> String {
    match target.strip_prefix(dir) {
        Some("") => ".".to_string(),
        Some(rest) if rest.starts_with('/') || rest.starts_with("::") => {
            let rest = rest.trim_start_matches('/');
            if rest.starts_with("::") {
                format!(".{rest}")
            } else {
                rest.to_string()
            }
        }
        _ => target.to_string(),
    }
}

/// Text without its ANSI escape sequences (colours a runner prints when its configuration
/// forces them, as pytest's `addopts = --color=yes` does whatever NO_COLOR says).
fn strip_ansi(text: &str) -> std::borrow::Cow<'_, str> {
    static ANSI: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    match ANSI.get_or_init(|| regex::Regex::new(r"\x1b\[[0-9;?]*[ -/]*[@-~]").ok()) {
        Some(re) if text.contains('\x1b') => re.replace_all(text, ""),
        _ => std::borrow::Cow::Borrowed(text),
    }
}

/// The counts and failures in a run's output, read as `runner` prints them (colours taken
/// off); for `npm test` and configured commands, whichever known shape finds the most tests.
/// `run_dir`: where pytest ran, relative to `root`.
fn parse_output(runner: Runner, text: &str, root: &str, run_dir: &str) -> parse::Outcome {
    let text = strip_ansi(text);
    let text = text.as_ref();
    match runner {
        Runner::Cargo => parse::cargo(text, root),
        Runner::Pytest => parse::pytest(text, root, run_dir),
        Runner::Node => parse::tap(text, root),
        Runner::Go => runs::go_outcome(text, Path::new(root), run_dir),
        Runner::Jest | Runner::Vitest => jest::read(text, root),
        Runner::Npm | Runner::Config => {
            let candidates = [
                parse::tap(text, root),
                parse::cargo(text, root),
                parse::pytest(text, root, ""),
                jest::read(text, root),
                parse::go(text, go_module(Path::new(root)).as_deref(), Some(Path::new(root))),
            ];
            // With no test counted anywhere, the reading that counted (a zero) wins, then one
            // that names a test left running (mocha's, killed in its first test).
            candidates
                .into_iter()
                .max_by_key(|o| (o.passed + o.failed + o.skipped, o.counted || o.none_found, !o.hung.is_empty()))
                .unwrap_or_default()
        }
    }
}

/// The module path in the root's `go.mod` (`module example.com/m`), which go test's package
/// lines start with: what is left is the package's folder.
fn go_module(root: &Path) -> Option<String> {
    let text = std::fs::read_to_string(root.join("go.mod")).ok()?;
    text.lines().find_map(|l| {
        let m = l.trim().strip_prefix("module")?.trim();
        let m = m.split("//").next().unwrap_or(m).trim().trim_matches('"');
        (!m.is_empty()).then(|| m.to_string())
    })
}

/// The output's last lines for `output_tail`, without the `# docdex:` lines of docdex's own
/// JavaScript reporters (`reporters`), which are for docdex to read, not for the reader.
fn tail(lines: &[String]) -> String {
    let shown: Vec<&str> =
        lines.iter().map(String::as_str).filter(|l| !l.trim_start().starts_with("# docdex:")).collect();
    let from = shown.len().saturating_sub(TAIL_LINES);
    let mut text = strip_ansi(&shown[from..].join("\n")).into_owned();
    if text.len() > TAIL_BYTES {
        let mut cut = text.len() - TAIL_BYTES;
        while !text.is_char_boundary(cut) {
            cut += 1;
        }
        text = text[cut..].to_string();
    }
    text
}

/// A repo-relative target that stays inside the repository and exists. For pytest, a node id
/// (`tests/test_cart.py::test_bad_qty`, `tests/test_x.py::TestA::test_b[1]`) is its file
/// confined and the rest kept.
fn confine_target(root: &Path, target: &str, runner: Runner) -> Result<String> {
    let (path, node) = match target.split_once("::") {
        Some((p, n)) if runner == Runner::Pytest && !p.is_empty() => (p, Some(n)),
        _ => (target, None),
    };
    let outside = || Error::OutsideRepo { path: target.to_string(), repo: root.to_path_buf() };
    let rel = crate::engine::repos::repo_relative(root, path)?;
    if rel.is_empty() {
        return Ok(rel);
    }
    let real = std::fs::canonicalize(root.join(&rel))
        .map_err(|_| Error::NotFound(format!("no file or directory {rel} in {}", root.display())))?;
    if !real.starts_with(root) {
        return Err(outside());
    }
    Ok(match node {
        Some(n) => format!("{rel}::{n}"),
        None => rel,
    })
}

/// Whether the run ran no test at all: pytest's exit 5 ("no tests collected"), a runner that
/// said it found none, or a clean exit whose counts (read, not missing) are all 0 (cargo's
/// `0 passed; ... 2 filtered out`).
fn ran_no_test(runner: Runner, exit: Option<i32>, o: &parse::Outcome) -> bool {
    let none = o.passed + o.failed + o.skipped == 0 && o.failures.is_empty();
    (runner == Runner::Pytest && exit == Some(5)) || (none && (o.none_found || (exit == Some(0) && o.counted)))
}

/// Fills in how the run went: status (timed out, no tests, passed, failed), counts, failures,
/// the output's tail and every note, the run's own last.
fn record_outcome(
    resp: &mut RunTestsResponse,
    runner: Runner,
    done: Finished,
    outcome: parse::Outcome,
    timeout: Duration,
    mut notes: Vec<String>,
) {
    resp.status = if done.timed_out {
        if !done.runner_timeout {
            notes.push(format!("killed after the {} s timeout", timeout.as_secs()));
        }
        TestStatus::TimedOut
    } else if ran_no_test(runner, done.exit_code, &outcome) {
        notes.push(match (runner, done.exit_code) {
            (Runner::Pytest, Some(5)) => "pytest collected no test (its exit code 5): nothing was run".to_string(),
            (Runner::Go, _) if outcome.none_found => {
                "go test found no test (its packages said [no test files] or [no tests to run]): nothing was run"
                    .to_string()
            }
            _ => collect_only::note(&done.lines)
                .unwrap_or_else(|| format!("{} ran no test: nothing matched", runner.name())),
        });
        TestStatus::NoTests
    } else if done.exit_code == Some(0) {
        TestStatus::Passed
    } else {
        TestStatus::Failed
    };
    if outcome.passed + outcome.failed + outcome.skipped == 0
        && !done.timed_out
        && !outcome.counted
        && !outcome.none_found
    {
        notes.push("the output gave no test counts".into());
    }
    resp.exit_code = done.exit_code;
    resp.duration_ms = done.duration_ms;
    resp.passed = outcome.passed;
    resp.failed = outcome.failed.max(outcome.failures.len() as u32);
    resp.skipped = outcome.skipped;
    resp.failures = outcome.failures;
    if done.timed_out {
        // The test that hangs, named (`hung`): the status alone did not say which.
        let hung = hung::failures(&outcome.hung, timeout.as_secs());
        if hung.is_empty() && outcome.stopped.is_empty() {
            notes.extend(hung::unnamed(runner));
        }
        resp.failed += hung.len() as u32;
        resp.failures.extend(hung);
    }
    resp.output_tail = tail(&done.lines);
    resp.notes.extend(notes);
    resp.notes.extend(outcome.notes);
    resp.notes.extend(done.notes);
}

impl Engine {
    /// Runs the repository's tests (all, `target`, or those the change reaches) with a
    /// timeout, and returns the structured result. A failing suite is a result, not an error;
    /// no runner, a runner not installed, or a target outside the repository is an error.
    pub fn run_tests(&self, repo_path: &Path, req: &RunTestsRequest) -> Result<RunTestsResponse> {
        // 0 was made 1 second silently: a run killed at once, reported as timed out.
        if req.timeout_secs == Some(0) {
            return Err(Error::BadRequest(
                "a timeout of 0 seconds would kill the run at once: give 1 or more, or leave it out for `[tests] timeout_secs`"
                    .into(),
            ));
        }
        let repo = self.resolve_repo(repo_path)?;
        let root = repo.root.clone();
        let cfg = &self.config().tests;
        let (detected, notes) = multi::detect_all(&root, &cfg.command)?;
        let timeout = Duration::from_secs(req.timeout_secs.unwrap_or(cfg.timeout_secs).max(1));
        let target = match req.target.as_deref().filter(|t| !t.trim().is_empty()) {
            Some(t) => {
                let pytest = detected.iter().any(|d| d.runner == Runner::Pytest);
                let first = detected.first().map_or(Runner::Config, |d| d.runner);
                let runner = if pytest { Runner::Pytest } else { first };
                // A source's file (`//notes/x.md`) is refused saying sources hold no tests.
                let confined = confine_target(&root, t, runner);
                Some(confined.map_err(|e| crate::engine::index::sources::or_text_only(&repo, t, e))?)
            }
            None => None,
        };
        let chosen: Vec<multi::Detected> = multi::route(&root, &detected, target.as_deref())
            .into_iter()
            .filter_map(|i| detected.get(i).cloned())
            .collect();
        let data_dir = repo.data_dir();
        if let [only] = chosen.as_slice() {
            let mut resp = self.run_one(&root, &data_dir, only, req, timeout, timeout)?;
            if resp.runs.len() < 2 {
                resp.runs.clear(); // `runs` is for a run of several processes
            }
            resp.notes.splice(0..0, notes);
            return Ok(resp);
        }
        let started = Instant::now();
        let mut shares = Vec::new();
        for det in chosen {
            let left = timeout.saturating_sub(started.elapsed());
            let share = if left.is_zero() {
                multi::Share::NotStarted
            } else {
                match self.run_one(&root, &data_dir, &det, req, left, timeout) {
                    Ok(r) => multi::Share::Ran(r),
                    // Its program missing (or its input refused): the others' results still count.
                    Err(e @ Error::BadRequest(_)) => multi::Share::Missing(e),
                    Err(e) => return Err(e),
                }
            };
            shares.push((det, share));
        }
        let mut resp = multi::merge(&root, shares, timeout.as_secs())?;
        resp.notes.extend(notes);
        Ok(resp)
    }

    /// One runner's run of the request, within `budget` (what is left of the run's `timeout`,
    /// which a note names when it strikes), as the response of a run of it alone.
    fn run_one(
        &self,
        root: &Path,
        data_dir: &Path,
        det: &multi::Detected,
        req: &RunTestsRequest,
        budget: Duration,
        timeout: Duration,
    ) -> Result<RunTestsResponse> {
        let runner = det.runner;
        let cfg = &self.config().tests;
        let mut notes = Vec::new();
        let mut resp = RunTestsResponse::not_run(root.to_path_buf(), runner.name(), det.why.clone());
        let Some(targets) = self.select_targets(root, req, runner, &mut resp)? else {
            return Ok(resp);
        };
        let pytest_cache = data_dir.join("pytest_cache");
        let reporters = reporters::for_runner(runner, data_dir, &mut notes);
        let dirs = (pytest_cache.as_path(), reporters.as_deref());
        let parts = plan(root, runner, &cfg.command, &targets, dirs, &mut notes)?;
        resp.command = parts.first().map(|p| p.command.clone()).unwrap_or_default();
        let broken = (runner == Runner::Pytest).then(|| broken_venv(root)).flatten();
        let root_text = root.to_string_lossy().into_owned();
        let read = |text: &str, dir: &str| parse_output(runner, text, &root_text, dir);
        // A missing runner is bad input, not a failing suite.
        let missing =
            |command: &[String], exit: Option<i32>, text: &str| match missing_runner(runner, command, exit, text) {
                Some(why) => Err(Error::BadRequest(match &broken {
                    Some(b) => format!("{why}; the repository's own virtualenv was passed over: {b}"),
                    None => why,
                })),
                None => Ok(()),
            };
        let (done, mut outcome, runs, not_run) = runs::run_parts(root, &parts, budget, &read, &missing)?;
        // The command as run: go test's with the `-timeout` the time left gave it.
        if let Some(run) = runs.first() {
            resp.command = run.command.clone();
        }
        if runner == Runner::Cargo && done.timed_out {
            // libtest running several tests at a time named none of them before it was killed.
            let running = cargo::running_at_timeout(root, &resp.command, &done.lines.join("\n"));
            if let Some(r) = running.filter(|r| !r.is_empty()) {
                outcome.hung = r;
            }
        }
        resp.runs = runs;
        if let Some(b) = &broken {
            let python = resp.command.first().cloned().unwrap_or_default();
            notes.push(format!("ran {python}, not the repository's virtualenv: {b}"));
        }
        record_outcome(&mut resp, runner, done, outcome, timeout, notes);
        runs::record_not_run(&mut resp, not_run);
        if resp.status == TestStatus::NoTests && !req.affected {
            if let Some(note) = self.tests_of_target(root, runner, &targets) {
                resp.notes.push(note);
            }
        }
        Ok(resp)
    }

    /// The files to hand the runner: the request's target (confined to the repository), narrowed
    /// with `--affected` to the test files the change reaches. `None` when the change reaches no
    /// test: the response then says so and nothing runs.
    fn select_targets(
        &self,
        root: &Path,
        req: &RunTestsRequest,
        runner: Runner,
        resp: &mut RunTestsResponse,
    ) -> Result<Option<Vec<String>>> {
        let mut targets: Vec<String> = Vec::new();
        if let Some(t) = req.target.as_deref().filter(|t| !t.trim().is_empty()) {
            let t = confine_target(root, t, runner)?;
            if !t.is_empty() {
                targets.push(t);
            }
        }
        if req.affected {
            let selected = self.affected_tests(root, req.since.as_deref(), runner, &mut resp.notes)?;
            let target = targets.first().map(|t| t.split("::").next().unwrap_or(t));
            let mut within: Vec<(String, String)> = selected
                .files
                .into_iter()
                .filter(|(p, _)| target.is_none_or(|t| p == t || p.starts_with(&format!("{t}/"))))
                .collect();
            if runner == Runner::Pytest {
                // pytest collects every file it is given, the ones its configuration excludes too.
                let (kept, note) = pytest_config::keep_collected(root, within);
                within = kept;
                resp.notes.extend(note);
                resp.notes.extend(pytest_config::computed_ignores_note(root, &within));
            }
            resp.selected = within.iter().map(|(p, why)| format!("{p}: {why}")).collect();
            if selected.whole_suite.is_some() {
                // A deleted file's importers are unknown: the whole suite (or the target), not nothing.
                return Ok(Some(targets));
            }
            if within.is_empty() {
                resp.notes.push("the change reaches no test file: nothing was run".into());
                return Ok(None);
            }
            targets = within.into_iter().map(|(p, _)| p).collect();
        } else if req.since.is_some() {
            return Err(Error::BadRequest("--since only applies with --affected".into()));
        }
        Ok(Some(targets))
    }

    /// After a run of one file that ran no test: the test files that exercise that file (the
    /// rules of `impact --tests`), so the caller knows what to run instead. `None` for a test
    /// file or a directory. Only tests the runner runs are named (for pytest, those its
    /// configuration collects).
    fn tests_of_target(&self, root: &Path, runner: Runner, targets: &[String]) -> Option<String> {
        let [target] = targets else { return None };
        let file = target.split("::").next().unwrap_or(target);
        if is_test_path(file) || !root.join(file).is_file() {
            return None;
        }
        let graph = match self.impact_graph(root) {
            Ok((_, g)) if g.contains(file) => g,
            _ => {
                return Some(format!(
                    "{file} is not a test file; index the repository to find the tests that exercise it (`docdex impact --file {file} --tests`)"
                ))
            }
        };
        let mut tests: Vec<(String, String)> = graph
            .tests_reaching(root, file)
            .into_iter()
            .filter(|t| t.path != file && runner.runs(&t.path))
            .map(|t| (t.path, t.reason))
            .collect();
        if runner == Runner::Pytest {
            tests = pytest_config::keep_collected(root, tests).0;
        }
        let tests: Vec<String> = tests.into_iter().map(|(p, _)| p).collect();
        if tests.is_empty() {
            return Some(format!("{file} holds no tests, and no test file reaches it through the import graph"));
        }
        let mut named = tests.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
        if tests.len() > 5 {
            named.push_str(&format!(", {} more", tests.len() - 5));
        }
        Some(format!(
            "{file} holds no tests; the test files that exercise it: {named} (give one as the target, or run a change's tests with --affected)"
        ))
    }

    /// "Not indexed" for `--affected` says that it is the option that needs the index (a run
    /// without it needs none); a first index run under way is named as such.
    fn affected_needs_index(&self, err: Error) -> Error {
        match self.explain_not_indexed(err) {
            Error::NotIndexed { path } => Error::AffectedNeedsIndex { path },
            other => other,
        }
    }

    /// The test files the change reaches, for `runner`, each with why; changed files the index
    /// would not walk are left out (a note counts them).
    fn affected_tests(
        &self,
        root: &Path,
        since: Option<&str>,
        runner: Runner,
        notes: &mut Vec<String>,
    ) -> Result<affected::Affected> {
        let mut changes = crate::engine::context::changes::collect(root, since)?;
        // Not a git repository (or no git): no change can be read, which is not "no change".
        if let Some(why) = changes.note.take() {
            return Err(Error::BadRequest(format!("--affected needs git to know what changed: {why}")));
        }
        // What the index would not walk (`.venv/`, ignored build output) is no change to test:
        // a virtualenv's vendored `tests/` ran as the change's tests.
        let left_out = changes.leave_out_unindexable(root, &self.config().index);
        notes.extend(crate::engine::context::changes::left_out_note(left_out));
        let (_, graph) = self.impact_graph(root).map_err(|e| self.affected_needs_index(e))?;
        let selected = affected::select(root, &changes, &graph, runner)?;
        notes.extend(selected.whole_suite.clone());
        Ok(selected)
    }
}
