//! The command line of a JavaScript test run, made from the `package.json` test script's own
//! call of its runner (`NODE_OPTIONS=--experimental-vm-modules jest --config jest.unit.js`,
//! `node --import tsx --test 'test/*.test.ts'`, `mocha --recursive test/`): its environment
//! and options are kept, and its own test paths give way to the files asked for. docdex ran
//! `npx jest --ci FILES` or `node --test FILES` without them (an ESM suite failed, another
//! configuration was read), and `npm test -- FILES` ran a script's own paths as well as the
//! files (`mocha --recursive test/ FILE` ran the whole suite).

use super::reporters;
use super::{node_test_files, Runner};
use std::path::Path;

/// Options of node taking a value as the next word.
const NODE_VALUED: &[&str] = &[
    "--import",
    "--require",
    "-r",
    "--loader",
    "--experimental-loader",
    "--test-name-pattern",
    "--test-skip-pattern",
    "--test-concurrency",
    "--test-timeout",
    "--test-shard",
    "--env-file",
    "--conditions",
    "-C",
    "--test-reporter",
    "--test-reporter-destination",
    "--input-type",
];
/// Options of jest taking a value as the next word.
const JEST_VALUED: &[&str] = &[
    "--config",
    "-c",
    "--testNamePattern",
    "-t",
    "--testPathPattern",
    "--testPathIgnorePatterns",
    "--maxWorkers",
    "-w",
    "--reporters",
    "--testEnvironment",
    "--rootDir",
    "--roots",
    "--selectProjects",
    "--shard",
    "--testTimeout",
    "--coverageDirectory",
    "--outputFile",
    "--seed",
    "--testMatch",
    "--testRegex",
];
/// Options of vitest taking a value as the next word.
const VITEST_VALUED: &[&str] = &[
    "--config",
    "-c",
    "--root",
    "-r",
    "--dir",
    "--project",
    "--environment",
    "--reporter",
    "--pool",
    "--testNamePattern",
    "-t",
    "--shard",
    "--maxWorkers",
    "--minWorkers",
    "--mode",
    "--outputFile",
    "--exclude",
];
/// Options of mocha taking a value as the next word.
const MOCHA_VALUED: &[&str] = &[
    "--require",
    "-r",
    "--reporter",
    "-R",
    "--config",
    "--spec",
    "--timeout",
    "-t",
    "--ui",
    "-u",
    "--grep",
    "-g",
    "--fgrep",
    "-f",
    "--extension",
    "--ignore",
    "--exclude",
    "--file",
    "--slow",
    "-s",
    "--reporter-option",
    "--reporter-options",
    "-O",
    "--package",
    "--node-option",
    "-n",
    "--jobs",
    "-j",
    "--retries",
    "--import",
];

/// A runner a test script calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Node,
    Jest,
    Vitest,
    Mocha,
}

impl Kind {
    /// The runner docdex runs: `--ci` for jest, `run` (no watching) for vitest.
    fn base(self) -> &'static [&'static str] {
        match self {
            Kind::Node => &["node"],
            Kind::Jest => &["npx", "--no-install", "jest", "--ci"],
            Kind::Vitest => &["npx", "--no-install", "vitest", "run"],
            Kind::Mocha => &["npx", "--no-install", "mocha"],
        }
    }

    /// The reporters docdex reads, after the script's options: TAP from node and mocha (their
    /// counts and failures), mocha's in TAP 13 (each failure's message and stack in their own
    /// YAML keys), jest's and vitest's default (unless the script names its own), and beside
    /// each, docdex's own from `dir` (`reporters`), which names the tests as they start so a hung
    /// one is named. Without `dir` (it could not be written) the runner's reporters alone.
    fn forced(self, dir: Option<&Path>, own_reporter: bool) -> Vec<String> {
        let ours = |name: &str| dir.map(|d| d.join(name).to_string_lossy().into_owned());
        let mut out: Vec<String> = Vec::new();
        match self {
            Kind::Node => {
                out.push("--test-reporter=tap".into());
                if let Some(r) = ours(reporters::NODE) {
                    out.extend(["--test-reporter-destination=stdout".into(), format!("--test-reporter={r}")]);
                    out.push("--test-reporter-destination=stdout".into());
                }
            }
            Kind::Mocha => {
                out.extend(["--reporter".into(), ours(reporters::MOCHA).unwrap_or_else(|| "tap".into())]);
                out.extend(["--reporter-option".into(), "tapVersion=13".into()]);
            }
            Kind::Jest | Kind::Vitest => {
                let (flag, name) = if self == Kind::Jest {
                    ("--reporters", reporters::JEST)
                } else {
                    ("--reporter", reporters::VITEST)
                };
                if let Some(r) = ours(name) {
                    // Naming a reporter on the command line replaces the configured ones.
                    if !own_reporter {
                        out.push(format!("{flag}=default"));
                    }
                    out.push(format!("{flag}={r}"));
                }
            }
        }
        out
    }

    fn valued(self) -> &'static [&'static str] {
        match self {
            Kind::Node => NODE_VALUED,
            Kind::Jest => JEST_VALUED,
            Kind::Vitest => VITEST_VALUED,
            Kind::Mocha => MOCHA_VALUED,
        }
    }

    /// The script's options docdex replaces (the reporter it reads) or that never end (watch).
    fn dropped(self, option: &str) -> bool {
        let name = option.split('=').next().unwrap_or(option);
        match self {
            Kind::Node => matches!(name, "--test-reporter" | "--test-reporter-destination" | "--watch"),
            Kind::Jest => matches!(name, "--watch" | "--watchAll"),
            Kind::Vitest => matches!(name, "--watch" | "-w"),
            Kind::Mocha => matches!(
                name,
                "--reporter" | "-R" | "--reporter-option" | "--reporter-options" | "-O" | "--watch" | "-w"
            ),
        }
    }
}

/// One shell word of the script: as written (quotes kept) and as the shell reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Word {
    raw: String,
    text: String,
}

/// The script's commands (split at `&&`, `||`, `;`, `|`, `&` outside quotes), each its words.
fn commands(script: &str) -> Vec<Vec<Word>> {
    let mut out: Vec<Vec<Word>> = vec![Vec::new()];
    let mut word: Option<Word> = None;
    let mut quote: Option<char> = None;
    let mut chars = script.chars().peekable();
    while let Some(c) = chars.next() {
        let separator = quote.is_none() && (c.is_whitespace() || matches!(c, '&' | '|' | ';'));
        if separator {
            if let (Some(w), Some(cmd)) = (word.take(), out.last_mut()) {
                cmd.push(w);
            }
            if !c.is_whitespace() && out.last().is_some_and(|cmd| !cmd.is_empty()) {
                out.push(Vec::new());
            }
            continue;
        }
        let w = word.get_or_insert_with(|| Word { raw: String::new(), text: String::new() });
        w.raw.push(c);
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (Some('\''), _) => w.text.push(c),
            (_, '\\') => {
                if let Some(n) = chars.next() {
                    w.raw.push(n);
                    w.text.push(n);
                }
            }
            _ => w.text.push(c),
        }
    }
    if let (Some(w), Some(cmd)) = (word, out.last_mut()) {
        cmd.push(w);
    }
    out.retain(|cmd| !cmd.is_empty());
    out
}

/// The script's call of its runner: the environment it sets (`NAME=value`, also through
/// `cross-env`), the runner, its arguments, and how many other commands the script runs.
#[derive(Debug)]
struct Call {
    kind: Kind,
    env: Vec<Word>,
    args: Vec<Word>,
    others: Vec<String>,
}

/// The last command of the script that calls a runner, if its words before the runner are
/// only an environment (`NAME=value`, `cross-env`, `npx`): anything else (`dotenv --`) is a
/// program docdex does not know how to keep.
fn call(script: &str) -> Option<Call> {
    let cmds = commands(script);
    let (at, pos, kind) = cmds.iter().enumerate().rev().find_map(|(i, words)| {
        words.iter().enumerate().find_map(|(j, w)| {
            let name = w.text.rsplit('/').next().unwrap_or_default();
            let kind = match name {
                "jest" => Kind::Jest,
                "vitest" => Kind::Vitest,
                "mocha" | "_mocha" => Kind::Mocha,
                "node" if words[j + 1..].iter().any(|a| a.text == "--test") => Kind::Node,
                _ => return None,
            };
            Some((i, j, kind))
        })
    })?;
    let words = &cmds[at];
    let mut env = Vec::new();
    for w in &words[..pos] {
        if is_assignment(&w.text) {
            env.push(w.clone());
        } else if !matches!(w.text.as_str(), "cross-env" | "npx" | "--no-install" | "--yes" | "-y") {
            return None;
        }
    }
    let others = cmds
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != at)
        .map(|(_, ws)| ws.iter().map(|w| w.raw.as_str()).collect::<Vec<_>>().join(" "))
        .collect();
    Some(Call { kind, env, args: words[pos + 1..].to_vec(), others })
}

/// The runner a test script calls, when docdex can read its call (`None`: the caller's own
/// reading of the script decides): `node ... --test`, jest or vitest (mocha is run as npm's).
pub(super) fn runner_of(script: &str) -> Option<Runner> {
    match call(script)?.kind {
        Kind::Node => Some(Runner::Node),
        Kind::Jest => Some(Runner::Jest),
        Kind::Vitest => Some(Runner::Vitest),
        Kind::Mocha => None,
    }
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// The script's arguments split into the options kept (with their values) and its own test
/// paths (operands, and mocha's `--spec`), which the files asked for replace.
fn split_args(kind: Kind, args: &[Word]) -> (Vec<Word>, Vec<Word>) {
    let (mut options, mut paths) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let takes_value = a.text.starts_with('-') && !a.text.contains('=') && kind.valued().contains(&a.text.as_str());
        let group: Vec<Word> = args[i..(i + if takes_value { 2 } else { 1 }).min(args.len())].to_vec();
        i += group.len();
        if kind.dropped(&a.text) {
            continue;
        }
        let spec = kind == Kind::Mocha && a.text.split('=').next() == Some("--spec");
        // vitest's own command word: docdex runs `vitest run`.
        let sub = kind == Kind::Vitest && matches!(a.text.as_str(), "run" | "watch" | "dev");
        if sub {
            continue;
        }
        if spec || !a.text.starts_with('-') {
            paths.extend(group);
        } else {
            options.extend(group);
        }
    }
    (options, paths)
}

/// The command line of the JavaScript `runner` over `targets` (files or directories; none:
/// the script's own paths, else the runner's default), from the test `script`; docdex's
/// reporters from `reporters` (`Kind::forced`).
pub(super) fn command(
    root: &Path,
    runner: Runner,
    script: &str,
    targets: &[String],
    reporters: Option<&Path>,
    notes: &mut Vec<String>,
) -> Vec<String> {
    let s = |x: &str| x.to_string();
    // node 20 takes a directory, but its files must match node's own patterns.
    let mut files = Vec::new();
    for t in targets {
        if runner == Runner::Node && root.join(t).is_dir() {
            files.extend(node_test_files(root, t));
        } else {
            files.push(t.clone());
        }
    }
    let found = call(script).filter(|c| match (runner, c.kind) {
        (Runner::Node, k) => k == Kind::Node,
        (Runner::Jest, k) => k == Kind::Jest,
        (Runner::Vitest, k) => k == Kind::Vitest,
        // mocha run directly only when the script runs nothing else (`npm test` runs it all).
        (Runner::Npm, k) => k == Kind::Mocha && c.others.is_empty(),
        _ => false,
    });
    let Some(c) = found else {
        return fallback(runner, &files, reporters);
    };
    if !c.others.is_empty() {
        notes.push(format!(
            "the test script's other commands were not run ({}): docdex runs its {} call alone",
            c.others.iter().map(|o| format!("`{o}`")).collect::<Vec<_>>().join(", "),
            runner.name()
        ));
    }
    let (options, paths) = split_args(c.kind, &c.args);
    let own_reporter = options.iter().any(|o| o.text.starts_with("--reporter"));
    let mut words: Vec<Word> = c.env.clone();
    words.extend(c.kind.base().iter().map(|b| plain(b)));
    words.extend(options);
    let forced = c.kind.forced(reporters, own_reporter);
    words.extend(forced.iter().map(|f| option_word(f)));
    if files.is_empty() {
        words.extend(paths);
    } else {
        words.extend(files.iter().map(|f| Word { raw: super::config_command::word(f), text: f.clone() }));
    }
    // Plain words run as they are; an environment, quotes or a glob need the shell, as npm's.
    if c.env.is_empty() && words.iter().all(|w| w.raw == w.text && !w.raw.contains(['*', '?', '[', '{', '$', '~'])) {
        return words.into_iter().map(|w| w.text).collect();
    }
    vec![s("sh"), s("-c"), words.iter().map(|w| w.raw.as_str()).collect::<Vec<_>>().join(" ")]
}

/// The runner docdex started through `npx --no-install` in `argv` (jest, vitest, or mocha for a
/// script run as npm's), for the error when npx finds it not installed.
pub(super) fn npx_runner(runner: Runner, argv: &[String]) -> Option<&'static str> {
    match runner {
        Runner::Jest | Runner::Vitest => Some(runner.name()),
        // `npm test` may call npx itself: only docdex's own mocha call is named.
        Runner::Npm => argv.iter().any(|a| a.contains("npx --no-install mocha") || a == "mocha").then_some("mocha"),
        _ => None,
    }
}

/// An option docdex adds (`--reporter=/path/x.cjs`), quoted for the shell only when it needs it.
fn option_word(text: &str) -> Word {
    let safe = text.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c));
    let raw = if safe { text.to_string() } else { super::config_command::word(text) };
    Word { raw, text: text.to_string() }
}

fn plain(text: &str) -> Word {
    Word { raw: text.to_string(), text: text.to_string() }
}

/// The command without a script call docdex can read: the runner with the files, or `npm
/// test -- FILES` (npm appends them to the script).
fn fallback(runner: Runner, files: &[String], reporters: Option<&Path>) -> Vec<String> {
    let s = |x: &str| x.to_string();
    let kind = match runner {
        Runner::Node => Kind::Node,
        Runner::Jest => Kind::Jest,
        Runner::Vitest => Kind::Vitest,
        _ if files.is_empty() => return vec![s("npm"), s("test")],
        _ => return [s("npm"), s("test"), s("--")].into_iter().chain(files.iter().cloned()).collect(),
    };
    let mut cmd: Vec<String> = kind.base().iter().map(|b| s(b)).collect();
    if kind == Kind::Node {
        cmd.push(s("--test"));
    }
    cmd.extend(kind.forced(reporters, false));
    cmd.extend(files.iter().cloned());
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(runner: Runner, script: &str, targets: &[&str]) -> Vec<String> {
        let targets: Vec<String> = targets.iter().map(|t| t.to_string()).collect();
        command(Path::new("/nonexistent"), runner, script, &targets, None, &mut Vec::new())
    }

    #[test]
    fn plain_scripts_run_as_before() {
        assert_eq!(
            cmd(Runner::Node, "node --test", &["t/a.test.js"]),
            ["node", "--test", "--test-reporter=tap", "t/a.test.js"]
        );
        assert_eq!(cmd(Runner::Jest, "jest", &["t/a.test.js"]), ["npx", "--no-install", "jest", "--ci", "t/a.test.js"]);
        assert_eq!(cmd(Runner::Vitest, "vitest", &[]), ["npx", "--no-install", "vitest", "run"]);
        assert_eq!(
            cmd(Runner::Vitest, "vitest run", &["a.test.ts"]),
            ["npx", "--no-install", "vitest", "run", "a.test.ts"]
        );
        assert_eq!(cmd(Runner::Npm, "tap", &["t/a.js"]), ["npm", "test", "--", "t/a.js"]);
        assert_eq!(cmd(Runner::Npm, "node test/run.js", &[]), ["npm", "test"]);
    }

    #[test]
    fn the_scripts_options_and_environment_are_kept_and_its_paths_give_way_to_the_targets() {
        assert_eq!(
            cmd(Runner::Jest, "jest --config jest.unit.js --runInBand test/unit", &["test/unit/a.test.js"]),
            ["npx", "--no-install", "jest", "--ci", "--config", "jest.unit.js", "--runInBand", "test/unit/a.test.js"]
        );
        assert_eq!(
            cmd(Runner::Jest, "NODE_OPTIONS=--experimental-vm-modules npx jest --watch", &["t/a b.test.js"]),
            ["sh", "-c", "NODE_OPTIONS=--experimental-vm-modules npx --no-install jest --ci 't/a b.test.js'"]
        );
        assert_eq!(
            cmd(Runner::Node, "node --import tsx --test 'test/*.test.ts'", &[]),
            ["sh", "-c", "node --import tsx --test --test-reporter=tap 'test/*.test.ts'"]
        );
        assert_eq!(
            cmd(Runner::Node, "node --import tsx --test --test-reporter=spec test/", &["test/a.test.ts"]),
            ["node", "--import", "tsx", "--test", "--test-reporter=tap", "test/a.test.ts"]
        );
        assert_eq!(
            cmd(Runner::Npm, "mocha --recursive --reporter spec test/", &["test/b.spec.js"]),
            [
                "npx",
                "--no-install",
                "mocha",
                "--recursive",
                "--reporter",
                "tap",
                "--reporter-option",
                "tapVersion=13",
                "test/b.spec.js"
            ]
        );
        assert_eq!(
            cmd(Runner::Npm, "cross-env NODE_ENV=test mocha --spec 'test/**/*.js' -r ts-node/register", &[]),
            [
                "sh",
                "-c",
                "NODE_ENV=test npx --no-install mocha -r ts-node/register --reporter tap --reporter-option tapVersion=13 --spec 'test/**/*.js'"
            ]
        );
        // mocha chained with other commands stays `npm test`, which runs them all.
        assert_eq!(cmd(Runner::Npm, "eslint . && mocha", &["t/a.js"]), ["npm", "test", "--", "t/a.js"]);
        // vitest's own subcommand gives way to `run`.
        assert_eq!(
            cmd(Runner::Vitest, "vitest watch --pool forks", &[]),
            ["npx", "--no-install", "vitest", "run", "--pool", "forks"]
        );
    }

    #[test]
    fn the_runner_is_read_from_the_scripts_call() {
        assert_eq!(runner_of("node --import tsx --test test/"), Some(Runner::Node));
        assert_eq!(runner_of("NODE_OPTIONS=--experimental-vm-modules jest"), Some(Runner::Jest));
        assert_eq!(runner_of("node --test && vitest run"), Some(Runner::Vitest));
        assert_eq!(runner_of("mocha"), None);
        assert_eq!(runner_of("node test/run.js"), None);
        let words: Vec<String> = commands("a 'b c' \"d;e\" f\\ g; h&&i")
            .iter()
            .map(|c| c.iter().map(|w| w.text.clone()).collect::<Vec<_>>().join("|"))
            .collect();
        assert_eq!(words, ["a|b c|d;e|f g", "h", "i"]);
    }

    #[test]
    fn mochas_tap_is_counted_and_its_failures_named() {
        // mocha 11's `--reporter tap` output.
        let out = "ok 1 a passes\nnot ok 2 a fails\n  1 == 2\n  AssertionError [ERR_ASSERTION]: 1 == 2\n      at Context.<anonymous> (test/a.spec.js:2:88)\nok 3 b - b passes\n# tests 3\n# pass 2\n# fail 1\n1..3\n";
        let o = super::super::parse::tap(out, "/r");
        assert_eq!((o.passed, o.failed, o.counted), (2, 1, true));
        assert_eq!(o.failures.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(), ["a fails"]);
        // Its plain body: the message, then the stack, placed at the test function's frame.
        let f = &o.failures[0];
        assert_eq!(
            (f.message.as_deref(), f.file.as_deref(), f.line),
            (Some("1 == 2"), Some("test/a.spec.js"), Some(2))
        );
    }

    #[test]
    fn mochas_tap_13_gives_each_failure_its_message_and_the_line_in_its_test_file() {
        // mocha 11.8's `--reporter tap --reporter-option tapVersion=13`, with docdex's lines.
        let out = concat!(
            "TAP version 13\n",
            "# docdex:start {\"name\":\"math breaks\",\"file\":\"/r/test/a.spec.js\",\"nesting\":0}\n",
            "not ok 1 math breaks\n  ---\n    message: |-\n      Expected values to be strictly equal:\n      \n      2 !== 3\n      \n",
            "    stack: |-\n      AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n      \n      2 !== 3\n      \n",
            "          at Context.<anonymous> (test/a.spec.js:7:12)\n          at process.processImmediate (node:internal/timers:483:21)\n  ...\n",
            "# docdex:end {\"name\":\"math breaks\",\"file\":\"/r/test/a.spec.js\",\"nesting\":0}\n",
            "not ok 2 helper fails\n  ---\n    message: |-\n      n should be one\n    stack: |-\n",
            "      AssertionError [ERR_ASSERTION]: n should be one\n          at exports.check (test/helper.js:2:33)\n",
            "          at Context.<anonymous> (test/b.spec.js:2:28)\n  ...\n",
            "not ok 3 esm times out\n  ---\n    message: |-\n      Timeout of 50ms exceeded. For async tests and hooks, ensure \"done()\" is called; if returning a Promise, ensure it resolves. (/r/test/c.spec.mjs)\n",
            "    stack: |-\n      Error: Timeout of 50ms exceeded.\n          at listOnTimeout (node:internal/timers:581:17)\n  ...\n",
            "ok 4 later # SKIP -\n# tests 3\n# pass 0\n# fail 3\n1..4\n",
        );
        let o = super::super::parse::tap(out, "/r");
        assert_eq!((o.passed, o.failed, o.counted), (0, 3, true));
        let got: Vec<_> =
            o.failures.iter().map(|f| (f.name.as_str(), f.file.as_deref(), f.line, f.message.as_deref())).collect();
        assert_eq!(
            got,
            [
                ("math breaks", Some("test/a.spec.js"), Some(7), Some("Expected values to be strictly equal: 2 !== 3")),
                ("helper fails", Some("test/b.spec.js"), Some(2), Some("n should be one (asserted at test/helper.js:2)")),
                (
                    "esm times out",
                    Some("test/c.spec.mjs"),
                    None,
                    Some("Timeout of 50ms exceeded. For async tests and hooks, ensure \"done()\" is called; if returning a Promise, ensure it resolves. (/r/test/c.spec.mjs)")
                ),
            ]
        );
        assert!(o.hung.is_empty(), "{:?}", o.hung);
    }

    #[test]
    fn docdexs_reporters_run_beside_the_runners_own() {
        let dir = Path::new("/state/reporters");
        let cmd = |runner: Runner, script: &str| {
            command(Path::new("/nonexistent"), runner, script, &[], Some(dir), &mut Vec::new())
        };
        assert_eq!(
            cmd(Runner::Node, "node --test"),
            [
                "node",
                "--test",
                "--test-reporter=tap",
                "--test-reporter-destination=stdout",
                "--test-reporter=/state/reporters/node.mjs",
                "--test-reporter-destination=stdout"
            ]
        );
        assert_eq!(
            cmd(Runner::Npm, "mocha -O maxDiffSize=0 --reporter spec"),
            [
                "npx",
                "--no-install",
                "mocha",
                "--reporter",
                "/state/reporters/mocha.cjs",
                "--reporter-option",
                "tapVersion=13"
            ]
        );
        assert_eq!(
            cmd(Runner::Jest, "jest"),
            ["npx", "--no-install", "jest", "--ci", "--reporters=default", "--reporters=/state/reporters/jest.cjs"]
        );
        // A reporter the script names is kept in place of the default one.
        assert_eq!(
            cmd(Runner::Vitest, "vitest --reporter=verbose"),
            ["npx", "--no-install", "vitest", "run", "--reporter=verbose", "--reporter=/state/reporters/vitest.mjs"]
        );
        let spaced =
            command(Path::new("/x"), Runner::Jest, "FOO=1 jest", &[], Some(Path::new("/my state")), &mut Vec::new());
        assert_eq!(spaced[2], "FOO=1 npx --no-install jest --ci --reporters=default '--reporters=/my state/jest.cjs'");
    }

    #[test]
    fn other_commands_of_the_script_are_named_in_a_note() {
        let mut notes = Vec::new();
        let c = command(Path::new("/nonexistent"), Runner::Jest, "tsc -p . && jest", &[], None, &mut notes);
        assert_eq!(c, ["npx", "--no-install", "jest", "--ci"]);
        assert!(notes[0].contains("`tsc -p .`"), "{notes:?}");
        // A program before the runner that docdex does not know: the runner alone, as before.
        assert_eq!(
            cmd(Runner::Jest, "dotenv -e .env -- jest --ci", &["a.test.js"]),
            ["npx", "--no-install", "jest", "--ci", "a.test.js"]
        );
    }
}
