//! cargo's side of `run-tests`: the `cargo test` command line for the targets (narrowed to a
//! workspace member with `-p` when they lie in one: a target in `crates/alpha/` ran the whole
//! workspace), and the compiler's errors when the tests do not build (the result had no file
//! or line, only cargo's exit 101), and the tests running when the timeout struck a test binary
//! that ran several at a time (`running_at_timeout`).

use super::hung::Running;
use super::types::TestFailure;
use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

/// How long listing a killed test binary's tests (`--list`) may take.
const LIST_TIMEOUT: Duration = Duration::from_secs(10);
/// Tests running side by side a message lists, at most.
const MAX_LISTED: usize = 5;

/// Compiler errors kept as failures, at most (a note counts the rest).
pub(super) const MAX_BUILD_ERRORS: usize = 10;

/// `cargo test --no-fail-fast`, narrowed to integration test targets (`tests/x.rs`) or the
/// library and a module filter (`src/a/b.rs` runs `--lib a::b::`); anything else runs all.
/// Targets inside a workspace member (`crates/alpha/tests/api.rs`) run that member alone
/// (`-p alpha-core`, its name read from its `Cargo.toml`), the filters read relative to it.
pub(super) fn command(root: &Path, targets: &[String], notes: &mut Vec<String>) -> Vec<String> {
    let s = |x: &str| x.to_string();
    // cargo stops at the first failing test binary by default, and the counts would
    // then read as if the rest had run; the other runners already run everything.
    let mut cmd = vec![s("cargo"), s("test"), s("--no-fail-fast")];
    let members: Vec<Option<Member>> = targets.iter().map(|t| member_of(root, t)).collect();
    let mut packages: Vec<Member> = Vec::new();
    for m in members.iter().flatten() {
        if !packages.contains(m) {
            notes.push(format!(
                "the target is in the workspace member {}/ (package {}): cargo ran that package alone (-p {})",
                m.dir, m.name, m.name
            ));
            packages.push(m.clone());
        }
    }
    // Targets of the root's own package beside members': `-p` of the members alone left it out.
    let root_package = package_name(&root.join("Cargo.toml")).filter(|_| !packages.is_empty());
    if let Some(name) = root_package.filter(|_| members.iter().any(Option::is_none)) {
        packages.push(Member { dir: String::new(), name });
    }
    for p in &packages {
        cmd.extend([s("-p"), p.name.clone()]);
    }
    // A filter means one thing in one package: targets in several run those packages whole.
    if packages.len() > 1 {
        notes.push(format!("the targets lie in {} packages: each ran whole", packages.len()));
        return cmd;
    }
    let inside: Vec<String> = targets
        .iter()
        .zip(&members)
        .map(|(t, m)| match m {
            Some(m) => t.strip_prefix(&m.dir).unwrap_or(t).trim_start_matches('/').to_string(),
            None => t.clone(),
        })
        .collect();
    cmd.extend(filters(&inside, notes));
    cmd
}

/// The target filters of `targets`, relative to their package's directory.
fn filters(targets: &[String], notes: &mut Vec<String>) -> Vec<String> {
    let s = |x: &str| x.to_string();
    let mut args = Vec::new();
    let mut lib = false;
    let mut filter: Option<String> = None;
    for t in targets {
        let parts: Vec<&str> = t.trim_end_matches('/').split('/').collect();
        match parts.as_slice() {
            [""] => {} // the member's own directory: its whole suite
            ["tests", file] if file.ends_with(".rs") => {
                args.extend([s("--test"), file.trim_end_matches(".rs").to_string()]);
            }
            ["tests", name, "main.rs"] => args.extend([s("--test"), name.to_string()]),
            ["tests"] => args.push(s("--tests")),
            ["src", rest @ ..] if t.ends_with(".rs") => {
                lib = true;
                let module: Vec<&str> = rest
                    .iter()
                    .map(|p| p.trim_end_matches(".rs"))
                    .filter(|p| !matches!(*p, "lib" | "main" | "mod"))
                    .collect();
                if !module.is_empty() && targets.len() == 1 {
                    filter = Some(format!("{}::", module.join("::")));
                }
            }
            _ => notes.push(format!("cargo cannot run {t} alone: running the whole suite")),
        }
    }
    if lib {
        args.push(s("--lib"));
    }
    args.extend(filter);
    args
}

/// A workspace member: its repo-relative directory and its package name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Member {
    dir: String,
    name: String,
}

/// The workspace member holding `target`: the nearest directory below the root, at or above
/// the target, whose `Cargo.toml` has a `[package]`, when the root's `Cargo.toml` is a
/// workspace listing it (`members`, globs as `crates/*`, and not `exclude`d). A crate the
/// workspace does not list (a fixture in `tests/fixtures/`) is no member: `-p` would not find it.
fn member_of(root: &Path, target: &str) -> Option<Member> {
    let path = target.split("::").next().unwrap_or(target).trim_end_matches('/');
    let workspace = read_toml(&root.join("Cargo.toml"))?;
    let ws = workspace.get("workspace")?;
    let patterns = |key: &str| -> Vec<String> {
        ws.get(key)
            .and_then(|v| v.as_array())
            .map(|a| a.iter().filter_map(|v| v.as_str()).map(|p| p.trim_matches('/').to_string()).collect())
            .unwrap_or_default()
    };
    let (members, exclude) = (patterns("members"), patterns("exclude"));
    let mut dir = if root.join(path).is_dir() { Some(path) } else { path.rsplit_once('/').map(|(d, _)| d) };
    while let Some(d) = dir.filter(|d| !d.is_empty() && *d != ".") {
        let d = d.trim_start_matches("./");
        if let Some(name) = package_name(&root.join(d).join("Cargo.toml")) {
            let listed = members.iter().any(|p| glob_match(p, d)) && !exclude.iter().any(|p| glob_match(p, d));
            return listed.then(|| Member { dir: d.to_string(), name });
        }
        dir = d.rsplit_once('/').map(|(p, _)| p);
    }
    None
}

fn read_toml(path: &Path) -> Option<toml::Table> {
    std::fs::read_to_string(path).ok()?.parse::<toml::Table>().ok()
}

/// `[package] name` of a manifest, when it has one.
fn package_name(manifest: &Path) -> Option<String> {
    let table = read_toml(manifest)?;
    table.get("package")?.get("name")?.as_str().map(str::to_string)
}

/// Whether a workspace `members` pattern (`crates/*`, `tools/cli`, `lib?`) matches the
/// repo-relative directory `dir`, segment by segment as cargo's globs do.
fn glob_match(pattern: &str, dir: &str) -> bool {
    let (p, d): (Vec<&str>, Vec<&str>) = (pattern.split('/').collect(), dir.split('/').collect());
    p.len() == d.len() && p.iter().zip(&d).all(|(p, d)| segment_match(p.as_bytes(), d.as_bytes()))
}

/// One path segment against a pattern of `*` (any run) and `?` (any one byte).
fn segment_match(p: &[u8], s: &[u8]) -> bool {
    match (p.first(), s.first()) {
        (None, None) => true,
        (Some(b'*'), _) => segment_match(&p[1..], s) || (!s.is_empty() && segment_match(p, &s[1..])),
        (Some(b'?'), Some(_)) => segment_match(&p[1..], &s[1..]),
        (Some(a), Some(b)) if a == b => segment_match(&p[1..], &s[1..]),
        _ => false,
    }
}

/// The compiler's errors in `cargo test`'s output when the tests did not build: each
/// `error[E0308]: mismatched types` (or `error: ...`) followed by its ` --> file:line:col`, one
/// failure named after the package that did not compile (`alpha-core`, from cargo's
/// `could not compile` line; not its target kind, `lib` or `lib test`, as which of those
/// builds fails first is a race), at its place (repo-relative), with the error as message. Read
/// only before the first test binary runs: a test's own output (a trybuild UI test) may quote
/// diagnostics. The same error of a crate's `lib` and `lib test` builds is one. At most
/// `MAX_BUILD_ERRORS`; the second value counts the rest.
pub(super) fn build_errors(out: &str, root: &str) -> (Vec<TestFailure>, usize) {
    let mut found: Vec<TestFailure> = Vec::new();
    let mut pending: Vec<TestFailure> = Vec::new();
    let mut error: Option<String> = None;
    for line in out.lines() {
        if line.trim_start().starts_with("Running ") || line.trim_start().starts_with("Doc-tests ") {
            break;
        }
        if let Some(loc) = line.trim_start().strip_prefix("--> ").filter(|_| line.starts_with(' ')) {
            if let Some(message) = error.take() {
                let (file, l) = super::location::location(loc, root);
                pending.push(TestFailure { name: String::new(), file, line: l, message: Some(message), runner: None });
            }
            continue;
        }
        error = None;
        if line.starts_with("error[") || (line.starts_with("error: ") && !line.starts_with("error: could not compile"))
        {
            error = Some(line.trim().to_string());
        } else if let Some(rest) = line.strip_prefix("error: could not compile `") {
            let name = crate_of(rest);
            for mut f in pending.drain(..) {
                f.name = name.clone();
                let same = |g: &TestFailure| g.file == f.file && g.line == f.line && g.message == f.message;
                if !found.iter().any(same) {
                    found.push(f);
                }
            }
        }
    }
    // Killed before cargo named the crate: the errors still count.
    for mut f in pending {
        f.name = "the build".into();
        found.push(f);
    }
    let more = found.len().saturating_sub(MAX_BUILD_ERRORS);
    found.truncate(MAX_BUILD_ERRORS);
    (found, more)
}

/// `alpha-core` from cargo's `could not compile `alpha-core` (lib test) due to 2 previous
/// errors` (past its opening backtick).
fn crate_of(rest: &str) -> String {
    rest.split_once('`').map_or(rest, |(name, _)| name).to_string()
}

/// The test binary running last in `cargo test`'s output: its path as cargo printed it, the
/// count its `running N tests` line gave, the tests whose result line it printed, and whether a
/// `test NAME ... ` line waits for its result (one test at a time: that line names it).
#[derive(Debug, Default, PartialEq, Eq)]
struct LastBinary {
    path: String,
    count: usize,
    ended: Vec<String>,
    open: bool,
}

/// The binary of the last `Running unittests src/lib.rs (target/debug/deps/x-1)` line and what
/// its output says; `None` after a `Doc-tests` line (rustdoc's tests cannot be listed) or
/// before any binary ran. Cargo's `Running` lines come on stderr and a binary's own lines on
/// stdout, so the captured output may hold a binary's `running N tests` before its `Running`
/// line: the k-th binary's lines are the k-th block from a `running N tests` line, each stream
/// in its own order.
fn last_binary(out: &str) -> Option<LastBinary> {
    let mut headers: Vec<Option<String>> = Vec::new();
    let mut blocks: Vec<LastBinary> = Vec::new();
    for line in out.lines() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix("Running ") {
            let path = rest.trim_end().strip_suffix(')').and_then(|r| r.rsplit_once(" (")).map(|(_, p)| p);
            headers.push(path.map(str::to_string));
        } else if t.starts_with("Doc-tests ") {
            headers.push(None);
        } else if let Some(n) = running_count(line) {
            blocks.push(LastBinary { count: n, ..LastBinary::default() });
        } else if let Some(b) = blocks.last_mut() {
            if let Some((name, result)) = line.strip_prefix("test ").and_then(|r| r.split_once(" ... ")) {
                b.open = result.trim().is_empty();
                if !b.open {
                    b.ended.push(name.to_string());
                }
            } else if line.starts_with("test ") && line.trim_end().ends_with(" ...") {
                b.open = true;
            }
        }
    }
    let last = headers.len().checked_sub(1)?;
    let path = headers.pop().flatten()?;
    let block = blocks.into_iter().nth(last).unwrap_or_default();
    Some(LastBinary { path, ..block })
}

/// The N of libtest's `running N tests` line.
fn running_count(line: &str) -> Option<usize> {
    let n = line.strip_prefix("running ")?;
    n.strip_suffix(" tests").or(n.strip_suffix(" test"))?.parse().ok()
}

/// The tests a binary killed at the timeout was running, when libtest ran several at a time:
/// it names a test only when it ends, so the binary's own list (`BINARY --list`, with the
/// run's filter) less the tests that ended, as `side_by_side` narrows it. `None` when the
/// output already says (one test at a time), when no test binary was running, or when the
/// list cannot be had or does not match the `running N tests` count (then the output's 60 s
/// warnings are all there is).
pub(super) fn running_at_timeout(root: &Path, command: &[String], out: &str) -> Option<Vec<Running>> {
    let bin = last_binary(out).filter(|b| !b.open && b.count > 0)?;
    let path = root.join(&bin.path);
    if !path.is_file() {
        tracing::debug!(path = %path.display(), "the killed test binary is gone: its tests cannot be listed");
        return None;
    }
    let mut argv = vec![path.to_string_lossy().into_owned(), "--list".into(), "--format".into(), "terse".into()];
    argv.extend(test_filter(command));
    let listed = match super::execute(root, &argv, LIST_TIMEOUT) {
        Ok(done) if done.exit_code == Some(0) => {
            done.lines.iter().filter_map(|l| l.strip_suffix(": test")).map(str::to_string).collect::<Vec<_>>()
        }
        Ok(_) | Err(_) => {
            tracing::debug!(binary = %path.display(), "listing the killed test binary's tests failed");
            return None;
        }
    };
    if listed.len() != bin.count {
        tracing::debug!(listed = listed.len(), ran = bin.count, "the test list does not match the run's count");
        return None;
    }
    Some(side_by_side(&listed, &bin.ended, test_threads(root)))
}

/// The positional filter of a `cargo test` command line this module built (`calc::` of
/// `cargo test --no-fail-fast --lib calc::`), which cargo passed on to each test binary.
fn test_filter(command: &[String]) -> Option<String> {
    let mut args = command.iter().skip(2);
    while let Some(a) = args.next() {
        if a == "-p" || a == "--test" {
            args.next();
        } else if !a.starts_with('-') {
            return Some(a.clone());
        }
    }
    None
}

/// How many tests libtest runs at once in a `cargo test` run from `root`: the
/// `RUST_TEST_THREADS` cargo hands the test binaries ([`threads_for`]), else the cores this
/// process may use (libtest's own rule, and the run's cores are ours). The repository's
/// `.cargo/config.toml` `[env]` was not read, so a project pinning one thread there (or
/// forcing a count over the environment's) had the wrong tests named at a timeout.
fn test_threads(root: &Path) -> usize {
    let env = std::env::var("RUST_TEST_THREADS").ok();
    threads_for(env.as_deref(), config_threads(root, root).as_ref())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// A `RUST_TEST_THREADS` entry of a cargo config's `[env]`: `"1"` or `{ value = "1", force = true }`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ConfigThreads {
    value: String,
    force: bool,
}

/// The thread count cargo's test binaries see, by cargo's rule for `[env]`: a config value
/// does not replace a variable already in the environment unless it is `force`d.
fn threads_for(env: Option<&str>, config: Option<&ConfigThreads>) -> Option<usize> {
    let value = match (env, config) {
        (_, Some(c)) if c.force => c.value.as_str(),
        (Some(e), _) => e,
        (None, Some(c)) => c.value.as_str(),
        (None, None) => return None,
    };
    value.trim().parse().ok().filter(|n: &usize| *n > 0)
}

/// The `[env] RUST_TEST_THREADS` cargo run in `cwd` reads from the repository's own config
/// files: `.cargo/config` (cargo prefers it when both exist) or `.cargo/config.toml` in
/// `cwd` and its parents, the nearest first, up to `root` and never above it (a config
/// outside the repository, or cargo's home, is not the repository's to read).
fn config_threads(cwd: &Path, root: &Path) -> Option<ConfigThreads> {
    for dir in cwd.ancestors().take_while(|d| d.starts_with(root)) {
        let file = [dir.join(".cargo/config"), dir.join(".cargo/config.toml")].into_iter().find(|f| f.is_file());
        let Some(file) = file else { continue };
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => t,
            Err(e) => {
                tracing::debug!(file = %file.display(), "reading the cargo config: {e}");
                continue;
            }
        };
        match env_threads(&text) {
            Ok(Some(found)) => return Some(found),
            Ok(None) => {}
            // cargo refuses such a file too: the run's own output says why.
            Err(e) => tracing::debug!(file = %file.display(), "the cargo config is not TOML: {e}"),
        }
    }
    None
}

/// `[env] RUST_TEST_THREADS` of one cargo config file's text, if it sets it.
fn env_threads(text: &str) -> Result<Option<ConfigThreads>, toml::de::Error> {
    let doc: toml::Table = toml::from_str(text)?;
    let entry = doc.get("env").and_then(|e| e.get("RUST_TEST_THREADS"));
    Ok(match entry {
        Some(toml::Value::String(v)) => Some(ConfigThreads { value: v.clone(), force: false }),
        Some(toml::Value::Table(t)) => t.get("value").and_then(toml::Value::as_str).map(|v| ConfigThreads {
            value: v.to_string(),
            force: t.get("force").and_then(toml::Value::as_bool).unwrap_or(false),
        }),
        _ => None,
    })
}

/// The tests running of `listed` (in libtest's order: by name, as `--list` prints them) when
/// those in `ended` had ended and libtest runs `threads` at a time: it starts them in that
/// order, the next as one ends, so the started ones are the first `ended + threads`, and the
/// running ones those of them not ended. Several are named each with the others: which of
/// them hangs the output cannot say.
fn side_by_side(listed: &[String], ended: &[String], threads: usize) -> Vec<Running> {
    let ended: HashSet<&str> = ended.iter().map(String::as_str).collect();
    let done = listed.iter().filter(|t| ended.contains(t.as_str())).count();
    let started = listed.len().min(done + threads.max(1));
    let running: Vec<&String> = listed[..started].iter().filter(|t| !ended.contains(t.as_str())).collect();
    let all: Vec<&str> = running.iter().map(|t| t.as_str()).collect();
    let shown = match all.len().checked_sub(MAX_LISTED) {
        Some(more) if more > 0 => format!("{}, and {more} more", all[..MAX_LISTED].join(", ")),
        _ => all.join(", "),
    };
    running
        .iter()
        .map(|t| {
            let what = match all.len() {
                1 => t.to_string(),
                n => format!(
                    "{t}, one of {n} tests libtest was running side by side, which names a test only when it ends ({shown})"
                ),
            };
            Running { name: t.to_string(), file: None, what }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// cargo 1.95's output for a workspace member whose library does not compile.
    const BROKEN: &str = "   Compiling alpha-core v0.1.0 (/r/crates/alpha)\nerror[E0308]: mismatched types\n --> crates/alpha/src/lib.rs:1:23\n  |\n1 | pub fn one() -> i32 { \"x\" }\n  |                 ---   ^^^ expected `i32`, found `&str`\n\nerror[E0425]: cannot find function `undefined_fn` in this scope\n --> crates/alpha/src/lib.rs:2:26\n  |\n\nwarning: unused variable: `q`\n --> crates/alpha/src/lib.rs:2:18\n\nSome errors have detailed explanations: E0308, E0425.\nerror: could not compile `alpha-core` (lib) due to 2 previous errors\nwarning: build failed, waiting for other jobs to finish...\nerror[E0308]: mismatched types\n --> /r/crates/alpha/src/lib.rs:1:23\nerror: could not compile `alpha-core` (lib test) due to 2 previous errors\n";

    #[test]
    fn compile_errors_are_failures_at_their_place_once_each() {
        let (found, more) = build_errors(BROKEN, "/r");
        type Row<'a> = (&'a str, Option<&'a str>, Option<u32>, Option<&'a str>);
        let got: Vec<Row> =
            found.iter().map(|f| (f.name.as_str(), f.file.as_deref(), f.line, f.message.as_deref())).collect();
        assert_eq!(
            got,
            [
                ("alpha-core", Some("crates/alpha/src/lib.rs"), Some(1), Some("error[E0308]: mismatched types")),
                (
                    "alpha-core",
                    Some("crates/alpha/src/lib.rs"),
                    Some(2),
                    Some("error[E0425]: cannot find function `undefined_fn` in this scope")
                ),
            ]
        );
        assert_eq!(more, 0);
        // A test's own output quoting a diagnostic is not a build error.
        let ran = "     Running tests/ui.rs (target/debug/deps/ui-1)\nerror[E0308]: mismatched types\n --> tests/ui/a.rs:1:1\n";
        assert!(build_errors(ran, "/r").0.is_empty());
        let many: String = (1..=12).map(|i| format!("error: bad {i}\n --> src/lib.rs:{i}:1\n")).collect();
        let (found, more) = build_errors(&many, "/r");
        assert_eq!((found.len(), more, found[0].name.as_str()), (MAX_BUILD_ERRORS, 2, "the build"));
    }

    #[test]
    fn the_last_binary_is_read_with_its_ended_tests() {
        let out = "     Running unittests src/lib.rs (target/debug/deps/a-1)\n\nrunning 1 test\ntest x ... ok\n\ntest result: ok. 1 passed;\n     Running tests/api.rs (/t/debug/deps/api-2)\n\nrunning 3 tests\ntest b ... ok\ntest c ... ignored, later\ntest d has been running for over 60 seconds\n";
        let b = last_binary(out).unwrap();
        assert_eq!(
            (b.path.as_str(), b.count, b.ended.as_slice(), b.open),
            ("/t/debug/deps/api-2", 3, &["b".to_string(), "c".to_string()][..], false)
        );
        assert!(last_binary(&format!("{out}test e ... ")).unwrap().open);
        assert_eq!(last_binary(&format!("{out}   Doc-tests a\n")), None);
        // stdout and stderr captured apart: a binary's first lines before cargo's Running line.
        let raced = "\nrunning 4 tests\n    Finished `test` profile\n     Running unittests src/lib.rs (/t/deps/hang-1)\ntest a ... ok\n";
        let b = last_binary(raced).unwrap();
        assert_eq!((b.path.as_str(), b.count, b.ended.as_slice()), ("/t/deps/hang-1", 4, &["a".to_string()][..]));
        let started = last_binary("     Running unittests src/lib.rs (/t/deps/x-1)\n").unwrap();
        assert_eq!((started.count, started.ended.len()), (0, 0), "started, nothing printed yet");
        assert_eq!(last_binary("   Compiling a v0.1.0\n"), None);
        let cmd = |c: &str| c.split(' ').map(str::to_string).collect::<Vec<_>>();
        assert_eq!(test_filter(&cmd("cargo test --no-fail-fast -p calc --lib calc::")), Some("calc::".into()));
        assert_eq!(test_filter(&cmd("cargo test --no-fail-fast --test api")), None);
    }

    #[test]
    fn side_by_side_names_the_started_tests_not_ended() {
        let list: Vec<String> = ["a", "b", "c", "d", "e"].iter().map(|s| s.to_string()).collect();
        let ended = |e: &[&str]| e.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let names = |r: Vec<Running>| r.into_iter().map(|r| r.name).collect::<Vec<_>>();
        // Every other test ended: the one left is the one running.
        let one = side_by_side(&list, &ended(&["a", "c", "d", "e"]), 2);
        assert_eq!((one[0].name.as_str(), one[0].what.as_str()), ("b", "b"));
        // Two at a time, b and c never end: d and e wait, not started.
        let two = side_by_side(&list, &ended(&["a"]), 2);
        assert_eq!(names(two.clone()), ["b", "c"]);
        assert_eq!(
            two[0].what,
            "b, one of 2 tests libtest was running side by side, which names a test only when it ends (b, c)"
        );
        assert_eq!(names(side_by_side(&list, &ended(&["b", "d"]), 3)), ["a", "c", "e"]);
        let many: Vec<String> = (0..8).map(|i| format!("t{i}")).collect();
        assert!(side_by_side(&many, &[], 8)[0].what.ends_with("(t0, t1, t2, t3, t4, and 3 more)"));
        assert!(side_by_side(&list, &list, 2).is_empty());
    }

    #[test]
    fn the_thread_count_is_read_from_the_repository_cargo_config_as_cargo_applies_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        let sub = root.join("crates/a");
        std::fs::create_dir_all(root.join(".cargo")).unwrap();
        std::fs::create_dir_all(sub.join(".cargo")).unwrap();
        // Above the repository: never read.
        std::fs::create_dir_all(dir.path().join(".cargo")).unwrap();
        std::fs::write(dir.path().join(".cargo/config.toml"), "[env]\nRUST_TEST_THREADS = \"7\"\n").unwrap();
        assert_eq!(config_threads(&root, &root), None);
        std::fs::write(root.join(".cargo/config.toml"), "[env]\nRUST_TEST_THREADS = \"1\"\n").unwrap();
        let plain = ConfigThreads { value: "1".into(), force: false };
        assert_eq!(config_threads(&root, &root), Some(plain.clone()));
        // The nearest file setting it wins; one that does not set it is passed over.
        std::fs::write(sub.join(".cargo/config.toml"), "[build]\njobs = 1\n").unwrap();
        assert_eq!(config_threads(&sub, &root), Some(plain.clone()));
        std::fs::write(sub.join(".cargo/config.toml"), "[env]\nRUST_TEST_THREADS = { value = \"3\", force = true }\n")
            .unwrap();
        let forced = ConfigThreads { value: "3".into(), force: true };
        assert_eq!(config_threads(&sub, &root), Some(forced.clone()));
        // `.cargo/config` beside `config.toml` is the one cargo reads.
        std::fs::write(root.join(".cargo/config"), "[env]\nRUST_TEST_THREADS = \"4\"\n").unwrap();
        assert_eq!(config_threads(&root, &root).map(|c| c.value), Some("4".into()));
        std::fs::write(root.join(".cargo/config"), "not toml [").unwrap();
        assert_eq!(config_threads(&root, &root), None);
        // cargo's rule: the environment's value stands unless the config's is forced.
        assert_eq!(threads_for(None, Some(&plain)), Some(1));
        assert_eq!(threads_for(Some("2"), Some(&plain)), Some(2));
        assert_eq!(threads_for(Some("1"), Some(&forced)), Some(3));
        assert_eq!(threads_for(Some("2"), None), Some(2));
        assert_eq!(threads_for(None, None), None);
        assert_eq!(threads_for(Some("0"), None), None);
        assert_eq!(threads_for(None, Some(&ConfigThreads { value: "many".into(), force: false })), None);
    }

    #[test]
    fn workspace_member_globs_match_segment_by_segment() {
        assert!(glob_match("crates/*", "crates/alpha"));
        assert!(!glob_match("crates/*", "crates/alpha/sub"));
        assert!(glob_match("tools/c?i", "tools/cli"));
        assert!(glob_match("*-core", "alpha-core"));
        assert!(!glob_match("crates/*", "other/alpha"));
    }

    #[test]
    fn a_target_in_a_member_runs_that_package_with_its_filter() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let w = |p: &str, text: &str| {
            std::fs::create_dir_all(root.join(p).parent().unwrap()).unwrap();
            std::fs::write(root.join(p), text).unwrap();
        };
        w("Cargo.toml", "[workspace]\nmembers = [\"crates/*\"]\nexclude = [\"crates/skip\"]\n");
        w("crates/alpha/Cargo.toml", "[package]\nname = \"alpha-core\"\nversion = \"0.1.0\"\n");
        w("crates/alpha/tests/api.rs", "");
        w("crates/alpha/src/calc/mod.rs", "");
        w("crates/skip/Cargo.toml", "[package]\nname = \"skip\"\n");
        w("crates/skip/src/lib.rs", "");
        let run = |targets: &[&str]| {
            let targets: Vec<String> = targets.iter().map(|t| t.to_string()).collect();
            let mut notes = Vec::new();
            (command(root, &targets, &mut notes).join(" "), notes)
        };
        assert_eq!(run(&["crates/alpha/tests/api.rs"]).0, "cargo test --no-fail-fast -p alpha-core --test api");
        assert_eq!(run(&["crates/alpha/src/calc/mod.rs"]).0, "cargo test --no-fail-fast -p alpha-core --lib calc::");
        let (cmd, notes) = run(&["crates/alpha"]);
        assert_eq!(cmd, "cargo test --no-fail-fast -p alpha-core");
        assert_eq!(
            notes,
            ["the target is in the workspace member crates/alpha/ (package alpha-core): cargo ran that package alone (-p alpha-core)"]
        );
        // Excluded from the workspace: no package to name, the whole suite.
        assert_eq!(run(&["crates/skip/src/lib.rs"]).0, "cargo test --no-fail-fast");
        assert_eq!(run(&["tests/x.rs"]).0, "cargo test --no-fail-fast --test x");
    }
}
