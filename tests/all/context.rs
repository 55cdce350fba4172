//! Context packs (`docdex context`, `POST /v1/context`'s engine call) and `impact --tests` on a
//! fixture git repository whose branch has committed, staged, dirty and untracked changes,
//! indexed for real; budgets checked with the real tokenizer.

use crate::util::{git, git_commit_all, quiet, write, Env};
use docdex::engine::protocol::{ChangeState, ContextFormat, ContextPack, ContextRequest, ContextRole};
use docdex::engine::waterfall::budget::TokenCounter;
use docdex::engine::IndexOptions;
use docdex::Engine;
use std::path::{Path, PathBuf};

const SESSION: &str = "\"\"\"Session storage.\"\"\"\n\n\nclass SessionStore:\n    def __init__(self, ttl):\n        self.ttl = ttl\n        self.sessions = {}\n\n    def expire_stale_sessions(self, now):\n        for key, started in list(self.sessions.items()):\n            if now - started > self.ttl:\n                del self.sessions[key]\n";

/// A Python project on branch `feature` forked from `main`: billing committed on the branch,
/// session staged, login dirty, audit untracked; tests import login (and through it session).
fn fixture(env: &Env) -> (PathBuf, Engine) {
    let repo = env.repo("proj");
    write(&repo, "app/__init__.py", "");
    write(&repo, "app/session.py", SESSION);
    write(
        &repo,
        "app/crypto.py",
        "def hash_password(raw):\n    \"\"\"Hash a password with a salt.\"\"\"\n    return 'h' + raw[::-1]\n",
    );
    write(
        &repo,
        "app/login.py",
        "from app.session import SessionStore\nfrom app.crypto import hash_password\n\n\ndef login(user, raw):\n    store = SessionStore(60)\n    return hash_password(raw)\n",
    );
    write(
        &repo,
        "app/api.py",
        "from app.login import login\n\n\ndef handle(req):\n    return login(req.user, req.password)\n",
    );
    write(&repo, "app/billing.py", "def total_invoice(lines):\n    return sum(lines)\n");
    write(
        &repo,
        "tests/test_login.py",
        "from app.login import login\n\n\ndef test_login():\n    assert login('u', 'pw')\n",
    );
    write(
        &repo,
        "tests/test_billing.py",
        "from app.billing import total_invoice\n\n\ndef test_total():\n    assert total_invoice([1, 2]) == 3\n",
    );
    write(&repo, "docs/sessions.md", "# Sessions\n\nStale sessions expire after the ttl configured for the store.\n");
    git_commit_all(&repo);
    git(&repo, &["checkout", "-q", "-b", "feature"]);
    write(&repo, "app/billing.py", "def total_invoice(lines):\n    return sum(lines)\n\n\ndef invoice_tax(lines, rate):\n    return total_invoice(lines) * rate\n");
    git(&repo, &["commit", "-q", "-am", "tax"]);
    write(&repo, "app/session.py", SESSION.replace("now - started > self.ttl", "now - started >= self.ttl"));
    git(&repo, &["add", "app/session.py"]);
    write(
        &repo,
        "app/login.py",
        "from app.session import SessionStore\nfrom app.crypto import hash_password\n\n\ndef login(user, raw):\n    store = SessionStore(60)\n    store.expire_stale_sessions(0)\n    return hash_password(raw)\n",
    );
    write(&repo, "app/audit.py", "def audit_session_expiry(store):\n    return len(store.sessions)\n");
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    (repo, engine)
}

fn pack(engine: &Engine, repo: &Path, task: &str, since: Option<&str>, budget: u32) -> ContextPack {
    let req = ContextRequest {
        task: task.into(),
        since: since.map(str::to_string),
        budget: Some(budget),
        format: Some(ContextFormat::Md),
    };
    engine.context(repo, &req).expect("context")
}

fn of_role(p: &ContextPack, role: ContextRole) -> Vec<String> {
    p.snippets.iter().filter(|s| s.role == role).map(|s| s.path.clone()).collect()
}

#[test]
fn a_pack_holds_every_kind_of_change_with_roles_reasons_and_real_token_counts() {
    let env = Env::new();
    let (repo, engine) = fixture(&env);
    let p = pack(&engine, &repo, "make stale sessions expire after the ttl", Some("main"), 8000);

    let states = |path: &str| p.changed.iter().find(|f| f.path == path).map(|f| f.states.clone());
    assert_eq!(states("app/billing.py"), Some(vec![ChangeState::Committed]), "{:?}", p.changed);
    assert_eq!(states("app/session.py"), Some(vec![ChangeState::Staged]));
    assert_eq!(states("app/login.py"), Some(vec![ChangeState::Dirty]));
    assert_eq!(states("app/audit.py"), Some(vec![ChangeState::Untracked]));
    assert!(p.base.is_some());

    // Changed regions come first, each saying where the change is.
    let changed: Vec<(&str, &str)> = p
        .snippets
        .iter()
        .filter(|s| s.role == ContextRole::Changed)
        .map(|s| (s.path.as_str(), s.reason.as_str()))
        .collect();
    assert_eq!(changed.len(), 4, "{changed:?}");
    assert!(p.snippets[..4].iter().all(|s| s.role == ContextRole::Changed));
    let reason = |path: &str| changed.iter().find(|(p, _)| *p == path).map(|(_, r)| *r).unwrap_or("");
    assert!(reason("app/billing.py").contains("committed on the branch since main"), "{}", reason("app/billing.py"));
    assert!(reason("app/session.py").contains("staged"));
    assert!(reason("app/login.py").contains("dirty"));
    assert!(reason("app/audit.py").contains("untracked"));
    let session = p.snippets.iter().find(|s| s.path == "app/session.py").unwrap();
    assert!(session.text.contains(">= self.ttl"), "the working tree's lines: {}", session.text);
    let billing = p.snippets.iter().find(|s| s.path == "app/billing.py").unwrap();
    assert!(billing.line_start <= 5 && billing.line_end >= 6, "the committed hunk: {billing:?}");

    // The definition a changed region names, tests that reach the changed files, importers.
    let defs: Vec<&str> =
        p.snippets.iter().filter(|s| s.role == ContextRole::Definition).map(|s| s.reason.as_str()).collect();
    assert!(
        p.snippets.iter().any(|s| s.role == ContextRole::Definition
            && s.path == "app/crypto.py"
            && s.reason.contains("`hash_password`")
            && s.reason.contains("app/login.py")),
        "{defs:?}"
    );
    let tests = of_role(&p, ContextRole::Test);
    assert!(tests.contains(&"tests/test_login.py".to_string()), "{tests:?}");
    assert!(tests.contains(&"tests/test_billing.py".to_string()), "{tests:?}");
    let login_test = p.snippets.iter().find(|s| s.path == "tests/test_login.py").unwrap();
    assert!(login_test.reason.contains("exercises app/login.py"), "{}", login_test.reason);
    // Every file here is readable: a test's 30-line window past the end of its 5 lines folds
    // into the snippet already holding the file, never "left out as unreadable".
    assert!(p.omitted.iter().all(|o| !o.reason.contains("readable")), "{:?}", p.omitted);
    println!("{}", p.markdown.as_deref().unwrap_or_default());
    assert!(of_role(&p, ContextRole::Importer).contains(&"app/api.py".to_string()), "{:?}", p.snippets);
    assert!(
        p.snippets.iter().any(|s| s.path == "docs/sessions.md" && s.role == ContextRole::Doc),
        "the doc hit for the task: {:?}",
        p.snippets.iter().map(|s| (&s.path, s.role)).collect::<Vec<_>>()
    );

    // No two snippets overlap; tokens are real cl100k counts of the Markdown.
    for (i, a) in p.snippets.iter().enumerate() {
        for b in &p.snippets[i + 1..] {
            assert!(a.path != b.path || a.line_end < b.line_start || b.line_end < a.line_start, "{a:?} / {b:?}");
        }
    }
    let counter = TokenCounter::for_model("gpt-4", None).unwrap();
    let md = p.markdown.clone().expect("markdown");
    assert_eq!(p.tokens, counter.count(&md));
    assert!(p.tokens <= p.budget);
    let sum: u32 = p.snippets.iter().map(|s| s.tokens).sum();
    assert!(sum <= p.tokens && sum > 0);
    assert!(md.contains("## app/login.py:") && md.contains("(changed)"), "{md}");
}

#[test]
fn a_small_budget_keeps_changes_first_within_their_share_and_says_what_it_left_out() {
    let env = Env::new();
    let (repo, engine) = fixture(&env);
    let counter = TokenCounter::for_model("gpt-4", None).unwrap();
    let big = pack(&engine, &repo, "make stale sessions expire after the ttl", Some("main"), 8000);
    for budget in [250, 400, 600] {
        let p = pack(&engine, &repo, "make stale sessions expire after the ttl", Some("main"), budget);
        assert!(p.tokens <= budget, "{} > {budget}", p.tokens);
        assert_eq!(p.tokens, counter.count(p.markdown.as_deref().unwrap()));
        assert!(p.snippets.len() < big.snippets.len(), "budget {budget}");
        assert!(!p.omitted.is_empty());
        assert!(p.omitted.iter().all(|o| !o.reason.is_empty()));
        // Changed regions come first, in at most half of what the heading leaves; the one that
        // did not fit there waits until after the task's top hits, which always get a place.
        let first_other = p.snippets.iter().position(|s| s.role != ContextRole::Changed).unwrap_or(p.snippets.len());
        assert!(first_other > 0, "budget {budget}: {:?}", p.snippets);
        let first: u32 = p.snippets[..first_other].iter().map(|s| s.tokens).sum();
        assert!(first <= budget / 2, "budget {budget}: {first} tokens of changes before the hits");
        assert!(p.snippets[first_other..].iter().any(|s| s.reason.starts_with("search hit #")), "budget {budget}");
    }
    let err = engine
        .context(&repo, &ContextRequest { task: "x".into(), budget: Some(10), ..Default::default() })
        .expect_err("tiny budget");
    assert!(err.to_string().contains("budget"), "{err}");
}

#[test]
fn without_since_only_uncommitted_work_counts_and_bad_refs_are_clear() {
    let env = Env::new();
    let (repo, engine) = fixture(&env);
    let p = pack(&engine, &repo, "invoice tax", None, 4000);
    let paths: Vec<&str> = p.changed.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["app/audit.py", "app/login.py", "app/session.py"]);
    assert!(p.snippets.iter().any(|s| s.path == "app/billing.py" && s.role != ContextRole::Changed), "a hit");
    let err = engine
        .context(
            &repo,
            &ContextRequest { task: "x".into(), since: Some("no-such-branch".into()), ..Default::default() },
        )
        .expect_err("bad ref");
    assert!(err.to_string().contains("no-such-branch"), "{err}");
    let err = engine
        .context(
            &repo,
            &ContextRequest { task: "x".into(), since: Some("--output=/tmp/x".into()), ..Default::default() },
        )
        .expect_err("option");
    assert!(
        err.to_string().contains("bad since ref \"--output=/tmp/x\" (`--since`, or `since` over HTTP and MCP)"),
        "{err}"
    );
}

#[test]
fn the_cli_prints_markdown_or_json_and_impact_lists_the_tests() {
    let env = Env::new();
    let (repo, _engine) = fixture(&env);
    let r = repo.to_str().unwrap();
    let out = env.run(&["context", "--repo", r, "--since", "main", "--budget", "3000", "expire", "stale", "sessions"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.starts_with("# Context for: expire stale sessions"), "{md}");
    assert!(md.contains("; changes since main (merge base "), "{md}");
    assert!(md.contains("- app/billing.py (modified: committed)"), "{md}");
    let json = env.json(&["context", "--repo", r, "--format", "json", "--budget", "3000", "expire stale sessions"]);
    assert!(json["tokens"].as_u64().unwrap() <= 3000);
    let same = env.json(&["context", "--repo", r, "--json", "--budget", "3000", "expire stale sessions"]);
    assert_eq!(same["snippets"], json["snippets"], "--json is --format json");
    assert!(json["snippets"].as_array().unwrap().iter().all(|s| s["role"].is_string() && s["reason"].is_string()));

    // A clean working tree: the heading says there is nothing uncommitted, not the opposite.
    crate::util::git(&repo, &["add", "-A"]);
    crate::util::git(&repo, &["commit", "-q", "-m", "all"]);
    let out = env.run(&["context", "--repo", r, "--budget", "500", "expire", "stale", "sessions"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("; no uncommitted changes on "), "{out:?}");
    // A one-line append is "changed: line N", not the diff's context lines before it.
    let session = repo.join("app/session.py");
    let before = std::fs::read_to_string(&session).unwrap();
    std::fs::write(&session, format!("{before}# expire stale sessions hourly\n")).unwrap();
    let out = env.run(&["context", "--repo", r, "--budget", "3000", "expire", "stale", "sessions"]);
    let md = String::from_utf8_lossy(&out.stdout);
    let appended = before.lines().count() + 1;
    assert!(
        md.contains(&format!("changed: line {appended}\n")) || md.contains(&format!("changed: line {appended})")),
        "{md}"
    );

    let tests = env.json(&["impact", "--repo", r, "--file", "app/session.py", "--tests", "--json"]);
    let found: Vec<(&str, u64)> = tests["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["path"].as_str().unwrap(), t["depth"].as_u64().unwrap()))
        .collect();
    assert_eq!(found, [("tests/test_login.py", 2)], "through app/login.py");
    assert_eq!(tests["tests"][0]["via"], serde_json::json!(["app/login.py", "app/session.py"]));
    let billing = env.json(&["impact", "--repo", r, "--file", "app/billing.py", "--tests", "--json"]);
    assert_eq!(billing["tests"][0]["path"], "tests/test_billing.py");
    assert_eq!(billing["tests"][0]["depth"], 0, "paired by name and by import: the name wins");
    let human = env.run(&["impact", "--repo", r, "--file", "app/crypto.py", "--tests"]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("tests/test_login.py"), "{text}");
    // tour16 F4: it read "1 test file exercise app/crypto.py:".
    assert!(text.starts_with("1 test file exercises app/crypto.py:\n"), "{text}");
}

#[tokio::test]
async fn post_v1_context_is_the_same_pack_over_http() {
    use crate::server_util::{client, Server};
    let env = Env::new();
    // The engine owns a runtime: build (and drop) it off the test's async context.
    let repo = std::thread::scope(|s| s.spawn(|| fixture(&env).0).join().unwrap());
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let body = serde_json::json!({"task": "expire stale sessions", "since": "main", "budget": 2500});
    let resp = client().post(server.url("/v1/context")).json(&body).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let v: serde_json::Value = resp.json().await.unwrap();
    assert!(v["tokens"].as_u64().unwrap() <= 2500, "{v}");
    assert!(v["markdown"].as_str().unwrap().starts_with("# Context for: expire stale sessions"));
    let roles: Vec<&str> = v["snippets"].as_array().unwrap().iter().filter_map(|s| s["role"].as_str()).collect();
    assert!(roles.contains(&"changed"), "{roles:?}");
    let bad = client().post(server.url("/v1/context")).json(&serde_json::json!({"task": ""})).send().await.unwrap();
    assert_eq!(bad.status().as_u16(), 400);
    let bad = client()
        .post(server.url("/v1/context"))
        .json(&serde_json::json!({"task": "x", "since": "nope-ref"}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status().as_u16(), 400);
}

#[test]
fn the_markdown_printed_shows_control_characters_and_json_keeps_them() {
    // A repository file with a title-setting OSC, a clear-screen CSI, a bell and a carriage
    // return: printed raw, the pack rewrote the terminal of whoever ran `docdex context`.
    let env = Env::new();
    let repo = env.repo("esc");
    let line = "    // \u{1b}]0;pwned\u{7} then \u{1b}[2J clear\r\tkept";
    write(&repo, "kiwi.rs", format!("pub fn kiwi_parser() {{\n{line}\n}}\n"));
    crate::util::git_commit_all(&repo);
    std::fs::write(repo.join("kiwi.rs"), format!("pub fn kiwi_parser() {{\n{line}\n    let x = 1;\n}}\n")).unwrap();
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    let out = env.run(&["context", "--repo", r, "kiwi", "parser"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(md.contains("## kiwi.rs:"), "{md}");
    assert!(!md.chars().any(|c| c.is_control() && c != '\n' && c != '\t'), "{md:?}");
    assert!(md.contains("// \\u{1b}]0;pwned\\u{7} then \\u{1b}[2J clear\\r\tkept"), "{md}");
    let json = env.json(&["context", "--repo", r, "--json", "kiwi", "parser"]);
    let text = json["snippets"][0]["text"].as_str().unwrap();
    assert!(text.contains(line), "--json is exact: {text:?}");
}

#[test]
fn untracked_secrets_and_build_output_stay_out_and_the_budget_holds() {
    let env = Env::new();
    let (repo, engine) = fixture(&env);
    // A dirty tracked file holding a credential, an untracked `.env`, compiled files and many
    // untracked scratch files: what a working tree looks like mid-task.
    write(
        &repo,
        "app/crypto.py",
        "DSN = 'postgres://admin:hunter22@db.internal/prod'\n\ndef hash_password(raw):\n    \"\"\"Hash a password with a salt.\"\"\"\n    return 'h' + raw[::-1]\n",
    );
    write(&repo, ".env", "OPENAI_API_KEY=sk-proj-Ab3dEf6hIj9kLmN0pQrStUvWxYz12345\n");
    for i in 0..27 {
        std::fs::create_dir_all(repo.join("app/__pycache__")).unwrap();
        std::fs::write(repo.join(format!("app/__pycache__/m{i}.cpython-311.pyc")), [0u8, 13, 13, 10, 0, 1, 2]).unwrap();
    }
    for i in 0..30 {
        write(&repo, &format!("scratch/note_{i:02}.py"), format!("def note_{i}():\n    return {i}\n"));
    }
    let long_task = format!("hash the password before login {}", "and keep every session short ".repeat(60));
    for (budget, task) in
        [(200, "hash the password before login"), (800, "hash the password before login"), (200, long_task.as_str())]
    {
        let p = pack(&engine, &repo, task, None, budget);
        assert!(p.tokens <= budget, "budget {budget}: {} tokens", p.tokens);
        assert!(!p.snippets.is_empty(), "budget {budget}: the heading left no room for snippets: {:?}", p.omitted);
        let md = p.markdown.clone().expect("markdown");
        // Their names are in the note (which says why each is left out), never their text.
        assert!(!md.contains("sk-proj") && !md.contains("## .env") && !md.contains("- .env"), "{md}");
        assert!(p.snippets.iter().all(|s| s.path != ".env" && !s.path.ends_with(".pyc")), "{md}");
        assert!(p.changed.iter().all(|f| f.path != ".env"), "{:?}", p.changed);
    }
    let p = pack(&engine, &repo, "hash the password before login", None, 8000);
    let crypto = p.snippets.iter().find(|s| s.path == "app/crypto.py").expect("the dirty file is in the pack");
    assert!(!crypto.text.contains("hunter22"), "{}", crypto.text);
    // The notes count what the kept snippets hold, and reach the Markdown agents receive.
    let shown: usize = p.snippets.iter().map(|s| s.text.matches("[URL_CREDENTIALS]").count()).sum();
    let note = format!(
        "{} masked in the snippets",
        if shown == 1 { "1 finding".to_string() } else { format!("{shown} findings") }
    );
    assert!(shown > 0 && p.notes.iter().any(|n| n.starts_with(&note)), "{shown}: {:?}", p.notes);
    assert!(p.notes.iter().any(|n| n.starts_with("28 changed files left out")), "{:?}", p.notes);
    let md = p.markdown.clone().expect("markdown");
    assert!(md.contains("Notes:") && md.contains(&note) && md.contains("28 changed files left out"), "{md}");
}

#[test]
fn no_citation_in_a_pack_runs_past_the_end_of_its_file() {
    // login.py's change is its 7th of 8 lines: the 3-line margin after it ran to line 10, and
    // the definition it names (`expire_stale_sessions`) was cited "named by app/login.py:4-10".
    let env = Env::new();
    let (repo, engine) = fixture(&env);
    let p = pack(&engine, &repo, "make stale sessions expire after the ttl", Some("main"), 8000);
    let lines = |path: &str| std::fs::read_to_string(repo.join(path)).unwrap().lines().count() as u32;
    let cite = regex::Regex::new(r"([\w/.]+\.py):(\d+)-(\d+)").unwrap();
    let mut seen = 0;
    for s in &p.snippets {
        assert!(s.line_end <= lines(&s.path), "{}:{}-{} ({} lines)", s.path, s.line_start, s.line_end, lines(&s.path));
        for c in cite.captures_iter(&s.reason) {
            let (path, end) = (&c[1], c[3].parse::<u32>().unwrap());
            assert!(end <= lines(path), "{path} has {} lines, cited to {end} in {:?}", lines(path), s.reason);
            seen += 1;
        }
    }
    assert!(seen > 0, "a definition names the change that called it: {:?}", p.snippets);
    let login = p.snippets.iter().find(|s| s.path == "app/login.py" && s.role == ContextRole::Changed).unwrap();
    assert_eq!((login.line_start, login.line_end), (4, 8));
}

#[test]
fn a_changed_link_to_a_file_outside_is_left_out_and_the_note_says_links() {
    let env = Env::new();
    let (repo, engine) = fixture(&env);
    let outside = env.home().join("outside-secret.txt");
    std::fs::write(&outside, "TOP SECRET OUTSIDE THE REPOSITORY\n").unwrap();
    std::os::unix::fs::symlink(&outside, repo.join("app/linked.py")).unwrap();
    let p = pack(&engine, &repo, "make stale sessions expire after the ttl", None, 8000);
    assert!(p.changed.iter().all(|f| f.path != "app/linked.py"), "{:?}", p.changed);
    let md = p.markdown.clone().unwrap_or_default();
    assert!(!md.contains("TOP SECRET") && !serde_json_text(&p).contains("TOP SECRET"), "the target was read");
    // Before, the note named hidden, ignored and binary files only; now it names the link.
    assert!(
        p.notes.iter().any(|n| n.contains("left out") && n.contains("symbolic link (never followed): app/linked.py")),
        "{:?}",
        p.notes
    );
}

#[test]
fn the_changed_files_left_out_are_named_each_with_its_own_reason() {
    // The note said "4 changed files left out: hidden, ignored or excluded (...), over `[index]
    // max_file_size_bytes`, symbolic links, untracked binaries, submodules or names not UTF-8"
    // and named no file, and the JSON had nothing more (tour13 F5).
    let env = Env::new();
    let (repo, _) = fixture(&env);
    env.write_config("[index]\nmax_file_size_bytes = 4096\n");
    let engine = env.engine();
    std::os::unix::fs::symlink("/etc/passwd", repo.join("passwd_link")).unwrap();
    std::fs::write(repo.join("blob.bin"), [0u8, 159, 146, 150, 0, 1, 2, 3]).unwrap();
    write(&repo, "huge.txt", "billing line\n".repeat(1000));
    write(&repo, ".hidden.py", "billing = 2\n");
    let p = pack(&engine, &repo, "billing", None, 8000);
    let reasons: Vec<(&str, &str)> = p.left_out.iter().map(|f| (f.path.as_str(), f.reason.as_str())).collect();
    assert_eq!(
        reasons,
        [
            (".hidden.py", "hidden (a dot file or folder)"),
            ("blob.bin", "untracked binary"),
            ("huge.txt", "over `[index] max_file_size_bytes`: 12.7 KB, over the 4.0 KB limit"),
            ("passwd_link", "symbolic link (never followed)"),
        ]
    );
    let note = "4 changed files left out, as docdex does not serve them: over `[index] max_file_size_bytes`: huge.txt (12.7 KB, over the 4.0 KB limit); symbolic link (never followed): passwd_link; hidden (a dot file or folder): .hidden.py; untracked binary: blob.bin";
    assert!(p.notes.iter().any(|n| n == note), "{:?}", p.notes);
    assert!(p.markdown.as_deref().unwrap_or_default().contains(note), "the Markdown the CLI prints names them too");
    let json = serde_json::to_value(&p).unwrap();
    assert_eq!(json["left_out"][3]["path"], "passwd_link", "{}", json["left_out"]);
}

fn serde_json_text(p: &ContextPack) -> String {
    serde_json::to_string(p).unwrap()
}

/// A file renamed after the index run: while another writer holds the index, the hit at its
/// old path is said to be gone and the note says lines may have moved; otherwise the pack
/// brings the rename into the index first and cites the file at its new path (tour35 F5).
#[test]
fn a_hit_whose_file_was_renamed_since_indexing_is_cited_at_its_new_path() {
    let env = Env::new();
    let (repo, engine) = fixture(&env);
    git(&repo, &["mv", "app/crypto.py", "app/hashing.py"]);
    let held = engine.open_index_session(&engine.resolve_repo(&repo).unwrap(), false).unwrap();
    let p = pack(&engine, &repo, "hash a password with a salt", None, 8000);
    let gone: Vec<_> = p.omitted.iter().filter(|o| o.citation.starts_with("app/crypto.py:")).collect();
    assert!(!gone.is_empty(), "{:?}", p.omitted);
    for o in gone {
        assert!(o.reason.starts_with("no longer in the working tree (deleted or renamed"), "{o:?}");
    }
    assert!(p.notes.iter().any(|n| n.contains("app/crypto.py may have moved")), "{:?}", p.notes);
    drop(held);
    let p = pack(&engine, &repo, "hash a password with a salt", None, 8000);
    assert!(!p.omitted.iter().any(|o| o.citation.starts_with("app/crypto.py:")), "{:?}", p.omitted);
    let cited = p.snippets.iter().find(|s| s.path == "app/hashing.py").expect("the new path is cited");
    assert!(cited.text.contains("def hash_password"), "{cited:?}");
    // The rename says where from, in the JSON and the Markdown.
    let moved = p.changed.iter().find(|f| f.path == "app/hashing.py").expect("listed as changed");
    assert_eq!((moved.change.as_str(), moved.old_path.as_deref()), ("renamed", Some("app/crypto.py")), "{moved:?}");
    assert!(
        p.markdown.as_deref().unwrap_or("").contains("app/hashing.py (renamed from app/crypto.py"),
        "{:?}",
        p.markdown
    );
}

#[test]
fn impact_of_the_repository_root_says_it_is_a_directory_not_outside() {
    let env = Env::new();
    let (repo, _engine) = fixture(&env);
    let r = repo.to_str().unwrap();
    for file in [".", "./", r] {
        let out = env.run(&["impact", "--repo", r, "--file", file]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file}: {err}");
        assert!(err.contains("is the repository root") && !err.contains("outside"), "{file}: {err}");
    }
}

#[test]
fn a_changed_submodule_is_left_out_and_the_note_says_submodules() {
    let env = Env::new();
    let (repo, engine) = fixture(&env);
    let lib = env.repo("lib");
    write(&lib, "vendor.py", "def vendored():\n    return 1\n");
    git_commit_all(&lib);
    git(&repo, &["-c", "protocol.file.allow=always", "submodule", "add", "-q", lib.to_str().unwrap(), "vendor"]);
    let p = pack(&engine, &repo, "make stale sessions expire after the ttl", None, 8000);
    assert!(p.changed.iter().all(|f| !f.path.starts_with("vendor")), "{:?}", p.changed);
    // The note's reasons were hidden, ignored, large, links and binaries: none of them fits.
    assert!(
        p.notes.iter().any(
            |n| n.contains("left out") && n.contains("submodule or nested repository (its own repository): vendor")
        ),
        "{:?}",
        p.notes
    );
}

#[test]
fn a_changed_file_whose_name_is_not_utf8_is_left_out_for_a_reason_the_note_names() {
    // Its name (read lossily from git) matched no file, so it was left out under a note listing
    // hidden, ignored, too large, links, binaries and submodules: none of which it was.
    use std::os::unix::ffi::OsStrExt;
    let env = Env::new();
    let (repo, engine) = fixture(&env);
    std::fs::write(repo.join(std::ffi::OsStr::from_bytes(b"bad\xffname.py")), "def kiwi():\n    pass\n").unwrap();
    let p = pack(&engine, &repo, "kiwi", None, 2000);
    let note = p.notes.iter().find(|n| n.contains("left out")).unwrap_or_else(|| panic!("{:?}", p.notes));
    assert!(note.contains("name not UTF-8 (the index does not take it): bad\u{FFFD}name.py"), "{note}");
}

#[test]
fn a_tracked_file_replaced_by_a_fifo_is_left_out_and_the_rest_of_the_pack_is_built() {
    // git diff of the working tree stops at a FIFO ("unsupported file type", exit 128), which
    // failed the whole pack. git lists no untracked FIFO, so a new one never shows.
    let env = Env::new();
    let (repo, engine) = fixture(&env);
    for name in ["app/crypto.py", "app/pipe.py"] {
        let _ = std::fs::remove_file(repo.join(name));
        let made = std::process::Command::new("mkfifo").arg(repo.join(name)).status().expect("mkfifo");
        assert!(made.success());
    }
    let p = pack(&engine, &repo, "make stale sessions expire after the ttl", Some("main"), 8000);
    let paths: Vec<&str> = p.changed.iter().map(|f| f.path.as_str()).collect();
    assert!(!paths.contains(&"app/crypto.py") && !paths.contains(&"app/pipe.py"), "{paths:?}");
    for kept in ["app/billing.py", "app/session.py", "app/login.py", "app/audit.py"] {
        assert!(paths.contains(&kept), "{kept} missing from {paths:?}");
    }
    assert!(of_role(&p, ContextRole::Changed).iter().any(|s| s == "app/login.py"), "{:?}", p.snippets);
    let note = p.notes.iter().find(|n| n.contains("FIFO")).unwrap_or_else(|| panic!("{:?}", p.notes));
    assert!(note.starts_with("1 changed path left out") && note.ends_with(": app/crypto.py"), "{note}");
}

#[test]
fn definitions_come_from_code_names_not_prose_dunders_or_the_naming_files_own() {
    // "fix rounding of discounted prices" on a shop: cart.py's change pulled session.py's
    // `__init__` (cart's own was in the snippet), pager.py's `show` (from the docstring's
    // "Show ..."), and invoice.py's `total` (cart calls its own). Only money.py's
    // `round_price`, which cart imports and calls, is a definition the change names.
    let env = Env::new();
    let repo = env.repo("shop");
    let cart = |doc: &str, body: &str| {
        format!(
            "from shop.money import round_price\n\n\nclass Cart:\n    def __init__(self, items):\n        \"\"\"{doc}\"\"\"\n        self.items = items\n\n    def total(self):\n        return sum(self.items)\n\n    def discounted(self, rate):\n        # Round each price after the discount.\n        return {body}\n"
        )
    };
    write(&repo, "shop/__init__.py", "");
    write(&repo, "shop/money.py", "def round_price(value):\n    return round(value, 2)\n");
    write(&repo, "shop/session.py", "class Session:\n    def __init__(self, user):\n        self.user = user\n");
    write(&repo, "shop/pager.py", "class Pager:\n    def show(self, text):\n        print(text)\n");
    write(&repo, "shop/invoice.py", "def total(lines):\n    return sum(lines)\n");
    write(&repo, "shop/cart.py", cart("Show the cart.", "[p * (1 - rate) for p in self.items]"));
    git_commit_all(&repo);
    git(&repo, &["checkout", "-q", "-b", "feature"]);
    write(
        &repo,
        "shop/cart.py",
        cart("Show the cart's prices.", "[round_price(p * (1 - rate)) for p in self.items] if self.total() else []"),
    );
    git(&repo, &["commit", "-q", "-am", "round"]);
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    let p = pack(&engine, &repo, "fix rounding of discounted prices", Some("main"), 8000);
    let defs: Vec<(&str, &str)> = p
        .snippets
        .iter()
        .filter(|s| s.reason.contains("defines `"))
        .map(|s| (s.path.as_str(), s.reason.as_str()))
        .collect();
    assert!(defs.iter().any(|(path, why)| *path == "shop/money.py" && why.contains("`round_price`")), "{defs:?}");
    for (path, why) in &defs {
        assert!(!["shop/session.py", "shop/pager.py", "shop/invoice.py"].contains(path), "{path}: {why}");
        assert!(!why.contains("`__init__`") && !why.contains("`show`") && !why.contains("`total`"), "{path}: {why}");
    }
}

#[test]
fn a_task_far_longer_than_the_budget_is_cut_in_the_heading_and_the_note_so_the_pack_fits() {
    // 10,000 `a`s answered `0 snippets, 1361 of 300 tokens`, 2,000 `日本語` 8472 of 300: the
    // note `search found nothing for "..."` quoted the task uncut, and the heading cut it in
    // characters, which are several tokens each in CJK.
    let env = Env::new();
    let repo = env.repo("long");
    write(&repo, "kiwi.rs", "pub fn kiwi_parser() {}\n");
    git_commit_all(&repo);
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    let counter = TokenCounter::for_model("gpt-4", None).unwrap();
    for (task, budget) in [("a".repeat(10_000), 300), ("日本語".repeat(2_000), 300), ("日本語".repeat(2_000), 200)]
    {
        let p = pack(&engine, &repo, &task, None, budget);
        let md = p.markdown.clone().unwrap();
        assert!(p.tokens <= budget, "{} of {budget}: {md}", p.tokens);
        assert!(counter.count(&md) <= budget, "{md}");
        assert!(md.starts_with("# Context for: "), "{md}");
        assert!(
            p.notes.iter().any(|n| n.starts_with("search found nothing for") && n.ends_with("…\"")),
            "{:?}",
            p.notes
        );
        assert_eq!(p.task, task, "the JSON keeps the whole task");
    }
}

/// tour 11 (M1): the one file holding the answer was a one-line 88 KB JSON file, whose hit
/// (and, untracked, its change) needed ~40,000 tokens and was left out whole, cut by lines to
/// nothing; the pack kept a filler file instead. It is now kept as an excerpt around the match.
#[test]
fn a_hit_on_a_very_long_line_is_kept_as_an_excerpt_around_its_match() {
    let env = Env::new();
    let repo = env.repo("longline");
    write(&repo, "long.txt", format!("{}persimmonword tail\nsecond line\n", "filler ".repeat(800)));
    let items: Vec<String> = (0..3000).map(|i| format!("{{\"id\": {i}, \"name\": \"n{i}\"}}")).collect();
    let json = format!("{{\"items\": [{}, {{\"secret_field\": \"persimmonword2\"}}]}}\n", items.join(","));
    write(&repo, "data.json", &json);
    git_commit_all(&repo);
    // Untracked too, as in the tour: the change and the hit are the same line.
    write(&repo, "extra.json", json.replace("persimmonword2", "persimmonword3"));
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    for (task, file, word) in [
        ("persimmonword2 secret_field", "data.json", "persimmonword2"),
        ("persimmonword3", "extra.json", "persimmonword3"),
    ] {
        let p = pack(&engine, &repo, task, None, 4000);
        let s = p.snippets.iter().find(|s| s.path == file).unwrap_or_else(|| panic!("{file} kept: {p:#?}"));
        assert!(s.text.contains(word) && s.trimmed, "{s:?}");
        assert!(s.text.len() < 1000 && s.tokens < 1000, "bounded: {} bytes, {} tokens", s.text.len(), s.tokens);
        assert!((s.line_start, s.line_end) == (1, 1), "{s:?}");
        let cut = p.omitted.iter().find(|o| o.citation == format!("{file}:1-1")).expect("the rest is listed");
        assert!(cut.reason.starts_with("cut to an excerpt: the whole needs"), "{cut:?}");
        assert!(p.tokens <= 4000, "{}", p.tokens);
    }
}

/// A pack on a file of megabytes reads only what it shows: an 8 MB one-line file was read,
/// decoded and masked whole (0.65 s of a release build for two) to show 900 bytes of it. The
/// excerpt still holds the match, with what is shown masked (a secret the window's edge cuts
/// too), and lines of a large file of short lines are shown as they are.
#[test]
fn a_pack_on_files_of_megabytes_takes_in_only_the_lines_and_windows_it_shows() {
    let env = Env::new();
    let repo = env.repo("bundle");
    let key = format!("ghp_{}", "Zq7Xw2Lm9Rt4Yp1Kd8Vb3Nc6Hs5Jf0Ga2Ue7");
    // The window starts 300 bytes before the match: the key straddles its edge.
    let tail = format!("{key} {} jane.doe@example.com var watermelonword=2;", "v".repeat(243));
    assert_eq!(tail.find("watermelonword"), Some(310), "the key starts 310 bytes before the match");
    let min = format!("{}{tail}{}", "var x=1;".repeat(300_000), "var y=2;".repeat(1000));
    write(&repo, "dist/app.min.js", &min);
    let log: Vec<String> = (0..60_000).map(|i| format!("entry {i} nothing to see here")).collect();
    let mut log_lines = log.clone();
    log_lines[40_000] = "entry 40000 the kumquatword failure".into();
    write(&repo, "logs/big.log", log_lines.join("\n") + "\n");
    git_commit_all(&repo);
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &quiet()).expect("index");

    let p = pack(&engine, &repo, "watermelonword", None, 8000);
    let s = p.snippets.iter().find(|s| s.path == "dist/app.min.js").unwrap_or_else(|| panic!("kept: {p:#?}"));
    assert!(s.text.contains("watermelonword") && s.trimmed && s.text.len() < 1500, "{}", s.text);
    assert!(s.text.contains("[EMAIL]@example.com") && !s.text.contains("jane.doe"), "{}", s.text);
    assert!(!s.text.contains(&key[key.len() - 12..]) && !s.text.contains("ghp_Zq7"), "a cut key shown: {}", s.text);
    let cut = p.omitted.iter().find(|o| o.citation == "dist/app.min.js:1-1").expect("the rest is listed");
    assert!(cut.reason.contains("bytes, not read"), "{cut:?}");
    // 2.4 MB of the file, of which a seed's head (16 KiB) and the window were taken in.
    assert!(p.timing.text_bytes < 64 * 1024, "read {} bytes as text", p.timing.text_bytes);
    assert!(p.tokens <= 8000);

    let p = pack(&engine, &repo, "kumquatword failure", None, 8000);
    let s = p.snippets.iter().find(|s| s.path == "logs/big.log").unwrap_or_else(|| panic!("kept: {p:#?}"));
    let want = log_lines[s.line_start as usize - 1..s.line_end as usize].join("\n");
    assert!(s.text == want && s.text.contains("kumquatword"), "{}-{}: {}", s.line_start, s.line_end, s.text);
    assert!(p.timing.text_bytes < 256 * 1024, "read {} bytes as text", p.timing.text_bytes);
}

/// A pack answers to its caller's cancellation token (the server trips it when the client
/// leaves): it stops between files and slots with `cancelled` (HTTP 503), as graph walks and
/// audits do; it ran to its end for nobody.
#[test]
fn a_pack_whose_callers_token_is_tripped_stops_cancelled() {
    use docdex::engine::protocol::CancelToken;
    let env = Env::new();
    let (repo, engine) = fixture(&env);
    let req = ContextRequest { task: "session expiry".into(), since: Some("main".into()), budget: None, format: None };
    let token = CancelToken::new();
    token.cancel();
    {
        let _ambient = token.enter();
        match engine.context(&repo, &req) {
            Err(docdex::error::Error::Cancelled) => {}
            other => panic!("expected Cancelled, got {other:?}"),
        }
    }
    assert!(!engine.context(&repo, &req).expect("a pack once no tripped token is ambient").snippets.is_empty());
}

/// A branch whose change is mostly a lockfile, the README, documents and snapshots, all
/// sorting before the one code file it changes; the task is about code the branch did not touch.
fn busy_branch(env: &Env) -> (PathBuf, Engine) {
    let repo = env.repo("busy");
    let prose = |topic: &str, n: usize| -> String {
        (0..n)
            .map(|i| format!("Paragraph {i} about {topic}: the quick brown fox jumps over the lazy dog again.\n"))
            .collect()
    };
    write(
        &repo,
        "src/payments/refund.py",
        "def refund_ledger_entries(ledger, order):\n    \"\"\"Refund an order: reverse its ledger entries.\"\"\"\n    for entry in ledger.entries_for(order):\n        ledger.post(entry.reversed())\n",
    );
    write(
        &repo,
        "src/zeta/ledger.py",
        "class Ledger:\n    def post(self, entry):\n        self.entries.append(entry)\n",
    );
    write(&repo, "Cargo.lock", "# lock\n");
    write(&repo, "README.md", "# Shop\n");
    for d in ["a", "b", "c", "d", "e"] {
        write(&repo, &format!("docs/{d}.md"), format!("# {d}\n"));
    }
    write(&repo, "snapshots/ui_ledger.snap", "---\n");
    git_commit_all(&repo);
    git(&repo, &["checkout", "-q", "-b", "feature"]);
    let lock: String = (0..80).map(|i| format!("[[package]]\nname = \"crate{i}\"\nversion = \"1.{i}.0\"\n")).collect();
    write(&repo, "Cargo.lock", format!("# lock\n{lock}"));
    write(&repo, "README.md", format!("# Shop\n{}", prose("the shop front", 60)));
    for d in ["a", "b", "c", "d", "e"] {
        write(&repo, &format!("docs/{d}.md"), format!("# {d}\n{}", prose("styling the catalogue", 60)));
    }
    write(&repo, "snapshots/ui_ledger.snap", format!("---\n{}", prose("a rendered ledger screen", 40)));
    write(
        &repo,
        "src/zeta/ledger.py",
        "class Ledger:\n    def post(self, entry):\n        self.entries.append(entry)\n\n    def entries_for(self, order):\n        return [e for e in self.entries if e.order == order]\n",
    );
    git(&repo, &["commit", "-q", "-am", "busy"]);
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    (repo, engine)
}

#[test]
fn a_branch_of_many_changes_leaves_room_for_the_tasks_hits_and_ranks_its_changes_by_the_task() {
    // The budget went to the changed hunks in path order (Cargo.lock, README.md, docs/, snapshots)
    // and every search hit for the task was left out (tour13 F15).
    let env = Env::new();
    let (repo, engine) = busy_branch(&env);
    let p = pack(&engine, &repo, "refund ledger entries", Some("main"), 3000);
    let kept: Vec<(&str, ContextRole)> = p.snippets.iter().map(|s| (s.path.as_str(), s.role)).collect();
    assert!(p.tokens <= 3000, "{}", p.tokens);
    assert!(kept.contains(&("src/payments/refund.py", ContextRole::Hit)), "the task's top hit: {kept:?}");
    // The changed file the task is about comes first, before the README and the documents.
    assert_eq!(kept.first(), Some(&("src/zeta/ledger.py", ContextRole::Changed)), "{kept:?}");
    // The lockfile's and the snapshot's hunks come after everything else, if at all.
    let bulk = |&(path, role): &(&str, ContextRole)| {
        role == ContextRole::Changed && (path == "Cargo.lock" || path.ends_with(".snap"))
    };
    if let Some(first_bulk) = kept.iter().position(bulk) {
        assert!(kept[first_bulk..].iter().all(bulk), "{kept:?}");
    }
    // What did not fit is said, with why.
    assert!(
        p.omitted.iter().any(|o| o.citation.starts_with("docs/") && o.reason.contains("budget")),
        "{:?}",
        p.omitted
    );
}

/// tour35 F2: a file edited after the last index run was cited by the index's line numbers: a
/// snippet said `defines 'add_entry'` over another function's lines. The pack brings edited
/// files into the index first, so every cited line is the file's as it is now.
#[test]
fn a_file_edited_since_the_index_is_cited_as_it_is_now() {
    let env = Env::new();
    let (repo, engine) = fixture(&env);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let crypto = std::fs::read_to_string(repo.join("app/crypto.py")).unwrap();
    write(&repo, "app/crypto.py", format!("{}{crypto}", "# licence header\n".repeat(10)));
    let p = pack(&engine, &repo, "hash a password with a salt", None, 4000);
    let cited: Vec<&docdex::engine::protocol::ContextSnippet> =
        p.snippets.iter().filter(|s| s.path == "app/crypto.py").collect();
    assert!(!cited.is_empty(), "{:#?}", p.snippets);
    for s in &cited {
        assert!(
            s.text.contains("def hash_password"),
            "cited lines {}-{} are not the function: {s:#?}",
            s.line_start,
            s.line_end
        );
        assert!(s.line_end >= 11, "{s:#?}");
    }
    assert!(!p.notes.iter().any(|n| n.contains("may have moved")), "{:?}", p.notes);
    // The index now has the edit: a search says nothing changed since.
    let hits = engine
        .search(
            &repo,
            &docdex::engine::protocol::SearchRequest { query: "hash password salt".into(), ..Default::default() },
        )
        .unwrap();
    let h = hits.results.iter().find(|h| h.path == "app/crypto.py").expect("crypto.py found");
    assert!(!h.stale && h.snippet_line_start >= 11, "{h:?}");
}

/// tour35 F7: a hit too long for a small budget was cut from its top, keeping a class's
/// `__init__` and leaving out the method the task named. The cut keeps the lines that hold the
/// task's words, and the omitted list names what went before and after them.
#[test]
fn a_hit_cut_to_fit_keeps_the_lines_the_task_is_about() {
    let env = Env::new();
    let repo = env.repo("shop");
    let mut cart = String::from("class Cart:\n    def __init__(self, owner):\n");
    for i in 0..30 {
        cart.push_str(&format!("        self.slot_{i} = owner.settings.get('slot_{i}', None)\n"));
    }
    cart.push_str("\n    def apply_discount(self, rate):\n        \"\"\"Apply a discount rate to every line.\"\"\"\n        return [line * (1 - rate) for line in self.lines]\n");
    write(&repo, "shop/cart.py", &cart);
    git(&repo, &["init", "-q"]);
    git_commit_all(&repo);
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    let p = pack(&engine, &repo, "apply a discount rate", None, 300);
    let kept = p.snippets.iter().find(|s| s.path == "shop/cart.py").expect("cart.py in the pack");
    assert!(kept.trimmed, "{kept:?}");
    assert!(kept.text.contains("def apply_discount"), "the matched method was cut: {kept:?}");
    assert!(p.omitted.iter().any(|o| o.citation.starts_with("shop/cart.py:1-")), "{:?}", p.omitted);
}
