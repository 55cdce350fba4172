//! What the CLI's human output does to a terminal: text docdex did not write (a file's text
//! and name) is shown, never obeyed, with colors on too; docdex's own colors stay.

use crate::util::{write, Env};
use std::process::Output;

/// A file's own color code and window title, in its name and its text.
const RED: &str = "\u{1b}[31m";
const TITLE: &str = "\u{1b}]0;title\u{7}";

/// `args` run with colors forced on (as on a terminal), stdout and stderr together.
fn colored(env: &Env, args: &[&str]) -> (Output, String) {
    let out = env.run_env(args, &[("NO_COLOR", ""), ("CLICOLOR_FORCE", "1")]);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out, text)
}

/// None of the file's sequences reached the terminal raw.
fn shown_not_obeyed(args: &[&str], text: &str) {
    assert!(!text.contains(RED), "{args:?} let the file's color through: {text:?}");
    assert!(!text.contains("\u{1b}]") && !text.contains('\u{7}'), "{args:?} let the file's title through: {text:?}");
    assert!(text.contains("\\u{1b}[31m"), "{args:?} does not show the file's color code: {text:?}");
}

#[test]
fn a_files_color_codes_are_shown_with_colors_on_and_docdex_colors_stay() {
    let env = Env::new();
    // The repository's own name too: it heads status, search and the index summary.
    let repo = env.repo(&format!("esc{RED}"));
    let name = format!("k{RED}k.rs");
    write(&repo, &name, format!("fn kiwi_walrus() {{\n    let s = \"{RED}red {TITLE}\";\n}}\n"));
    write(&repo, "other.rs", "fn kiwi_walrus_too() { kiwi_walrus(); }\n");
    // Skipped as binary: the summary names it.
    write(&repo, &format!("b{RED}.bin"), b"\0\0\0binary");
    let r = repo.to_str().unwrap();
    let (out, text) = colored(&env, &["index", "--repo", r]);
    assert!(out.status.success(), "{text}");
    shown_not_obeyed(&["index"], &text);
    for args in [
        &["status", "--repo", r][..],
        &["repo", "list"][..],
        &["search", "--repo", r, "kiwi_walrus", "red"][..],
        &["get", "--repo", r, &name][..],
        &["symbols", "--repo", r, "kiwi_walrus"][..],
        &["impact", "--repo", r, &name][..],
        &["similar", "--repo", r, &name][..],
        &["ast", "query", "--repo", r, "--kinds", "string_literal"][..],
    ] {
        let (out, text) = colored(&env, args);
        assert!(out.status.success(), "{args:?}: {text}");
        shown_not_obeyed(args, &text);
    }
    // docdex's own colors are still there: the path heading and the highlighted word.
    let (_, text) = colored(&env, &["search", "--repo", r, "kiwi_walrus"]);
    assert!(text.contains("\u{1b}[1;33mkiwi_walrus\u{1b}[0m"), "{text:?}");
    assert!(text.contains("\u{1b}[1;35mk\\u{1b}[31mk.rs\u{1b}[0m"), "{text:?}");
    // --json stays exact.
    let v = env.json(&["search", "--repo", r, "kiwi_walrus", "--json"]);
    assert!(v["results"].as_array().unwrap().iter().any(|h| h["path"] == name.as_str()), "{v}");
}

#[test]
fn indexing_a_repository_whose_path_is_not_utf8_says_why_instead_of_a_corrupt_state_file() {
    use std::os::unix::ffi::OsStrExt;
    let env = Env::new();
    let repo = env.dir.path().join(std::ffi::OsStr::from_bytes(b"caf\xe9"));
    write(&repo, "a.rs", "fn a_walrus() {}\n");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_docdex"))
        .args(["index", "--repo"])
        .arg(&repo)
        .env("DOCDEX_HOME", env.home())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("is not valid UTF-8") && text.contains("rename the directory"), "{text}");
    assert!(!text.contains("corrupt"), "{text}");
}

#[test]
fn human_output_that_cannot_be_written_fails_the_command() {
    // `docdex status > out` on a full disk exited 0 with `out` cut short: human lines ignored
    // what the write returned (`--json` already failed).
    let full = std::path::Path::new("/dev/full");
    assert!(full.exists(), "the test needs Linux's /dev/full");
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "a.rs", "fn a_walrus() {}\n");
    let r = repo.to_str().unwrap();
    assert!(env.run(&["index", "--repo", r]).status.success());
    for args in [&["status", "--repo", r][..], &["search", "--repo", r, "a_walrus"][..]] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_docdex"))
            .args(args)
            .env("DOCDEX_HOME", env.home())
            .env("NO_COLOR", "1")
            .stdout(std::fs::OpenOptions::new().write(true).open(full).unwrap())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("writing to stdout: No space left on device"), "{args:?}: {err}");
    }
    // A reader that closes the pipe early is still no error.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_docdex"))
        .args(["status", "--repo", r])
        .env("DOCDEX_HOME", env.home())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_chat_sessions_question_in_dag_list_and_view_is_shown_not_obeyed() {
    use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
    let server = FakeOllama::start(FakeOllamaOptions::default()).expect("fake server");
    let env = Env::new();
    env.write_config(&format!(
        "{}\n[web]\nddg_base_url = \"{}/html/\"\n",
        crate::util::llm_config("ollama", &server.url(), "fake-chat", "fake-embed"),
        crate::util::dead_url()
    ));
    let repo = env.repo("proj");
    write(&repo, "src/session.rs", "/// Expires stale sessions.\npub fn expire_sessions() {}\n");
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    // A question pasted with a file's color code: the session's title.
    let v = env.json(&["chat", "--repo", r, "--json", "--query", &format!("how are {RED}sessions expired?")]);
    let id = v["session_id"].as_str().unwrap().to_string();
    for args in [&["dag", "list", "--repo", r][..], &["dag", "view", "--repo", r, &id][..]] {
        let (out, text) = colored(&env, args);
        assert!(out.status.success(), "{args:?}: {text}");
        shown_not_obeyed(args, &text);
    }
}

#[test]
fn hook_install_and_uninstall_show_a_repository_name_with_an_escape_sequence() {
    let env = Env::new();
    let repo = env.repo(&format!("h{RED}h"));
    let init = std::process::Command::new("git").args(["init", "-q"]).current_dir(&repo).output().unwrap();
    assert!(init.status.success());
    let r = repo.to_str().unwrap();
    for args in [&["hook", "install", "--repo", r][..], &["hook", "uninstall", "--repo", r][..]] {
        let (out, text) = colored(&env, args);
        assert!(out.status.success(), "{args:?}: {text}");
        shown_not_obeyed(args, &text);
    }
}

#[test]
fn a_bidi_override_in_a_file_or_its_name_is_shown_not_obeyed() {
    // "Trojan Source": U+202E reverses what follows on screen, so `x<RLO>sr.exe` read as
    // `xexe.rs` in a heading, and code read otherwise than it runs in a snippet.
    let env = Env::new();
    let repo = env.repo("bidi");
    write(&repo, "x\u{202e}sr.exe.rs", "fn kiwi_access() { let admin = \"user\u{202e} \u{2066}// check\u{2069}\"; }\n");
    let r = repo.to_str().unwrap();
    assert!(env.run(&["index", "--repo", r]).status.success());
    for args in [&["search", "--repo", r, "kiwi_access"][..], &["symbols", "--repo", r, "kiwi_access"][..]] {
        let out = env.run(args);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{args:?}: {text}");
        assert!(!text.contains('\u{202e}') && !text.contains('\u{2066}'), "{args:?}: {text:?}");
        assert!(text.contains("x\\u{202e}sr.exe.rs"), "{args:?}: {text}");
    }
    let (_, text) = colored(&env, &["search", "--repo", r, "kiwi_access"]);
    assert!(text.contains("user\\u{202e} \\u{2066}// check\\u{2069}"), "{text}");
}

/// What `docdex index --rebuild` wrote to a terminal (script(1)) with `vars` set.
fn index_on_a_terminal(env: &Env, repo: &std::path::Path, vars: &[(&str, &str)]) -> String {
    let log = env.dir.path().join("terminal.log");
    let command = format!(
        "{} --home {} index --repo {} --rebuild",
        env!("CARGO_BIN_EXE_docdex"),
        env.home().display(),
        repo.display()
    );
    let mut script = std::process::Command::new("script");
    script.args(["-qec", &command]).arg(&log).env("TERM", "xterm-256color");
    for var in ["NO_COLOR", "CLICOLOR_FORCE", "CLICOLOR"] {
        script.env_remove(var);
    }
    for (k, v) in vars {
        script.env(k, v);
    }
    let out = script.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&std::fs::read(&log).unwrap()).into_owned()
}

/// SGR sequences (`ESC [ ... m`) in `screen`.
fn sgr_codes(screen: &str) -> Vec<String> {
    let mut codes = Vec::new();
    let mut rest = screen;
    while let Some(i) = rest.find("\u{1b}[") {
        rest = &rest[i + 2..];
        let end = rest.find(|c: char| !(c.is_ascii_digit() || c == ';')).unwrap_or(rest.len());
        if rest[end..].starts_with('m') {
            codes.push(format!("ESC[{}m", &rest[..end]));
        }
    }
    codes
}

/// The indexing progress bar is coloured (cyan on blue) on a terminal, and with `NO_COLOR`
/// set (any non-empty value, no-color.org) it carried the colour on when `CLICOLOR_FORCE` was
/// set too, as the progress library lets it override; docdex's other output lets `NO_COLOR`
/// win. The bar now draws without a colour code whenever `NO_COLOR` is set.
#[test]
fn the_progress_bar_has_no_colour_under_no_color() {
    if std::process::Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no script(1) for a pseudo-terminal");
        return;
    }
    let env = Env::new();
    let repo = env.repo("bar");
    for i in 0..1500 {
        write(&repo, &format!("src/m{}/f{i}.rs", i % 20), format!("fn wombat_{i}() {{ let x = {i}; }}\n"));
    }
    // Colours on: the bar's own colour codes are there, so their absence below means something.
    let coloured = index_on_a_terminal(&env, &repo, &[]);
    assert!(coloured.contains("files · ETA"), "no bar drawn: {coloured:?}");
    assert!(!sgr_codes(&coloured).is_empty(), "no colour with colours on: {coloured:?}");
    for vars in [&[("NO_COLOR", "1")][..], &[("NO_COLOR", "yes"), ("CLICOLOR_FORCE", "1")][..]] {
        let screen = index_on_a_terminal(&env, &repo, vars);
        assert!(screen.contains("files · ETA"), "{vars:?}: no bar drawn: {screen:?}");
        assert_eq!(sgr_codes(&screen), Vec::<String>::new(), "{vars:?}: {screen:?}");
    }
}
