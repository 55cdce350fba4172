//! `docdex eval`: query sets built from a real git history (a fixture repository made here
//! with real git), scored through the engine and the real binary, compared across configs.

use crate::util::{quiet, write, Env};
use docdex::engine::eval::gitset::GitSetOptions;
use docdex::engine::eval::{CompareWith, EvalQuery, EvalRequest, QuerySource};
use docdex::engine::protocol::SearchRequest;
use docdex::engine::search::history::CommitHistory;
use std::path::Path;
use std::process::Command;

fn git(root: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "commit.gpgsign=false"])
        .args(["-c", "gc.auto=0"])
        .args(args)
        .current_dir(root)
        .env("GIT_AUTHOR_DATE", "2024-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2024-01-01T00:00:00Z")
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn commit(root: &Path, message: &str) {
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", message]);
}

fn commit_dated(root: &Path, message: &str, date: &str) {
    git(root, &["add", "-A"]);
    let out = Command::new("git")
        .args(["-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "commit.gpgsign=false"])
        .args(["-c", "gc.auto=0"])
        .args(["commit", "-q", "-m", message])
        .current_dir(root)
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
        .output()
        .expect("run git");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A small Python project whose history holds three commits that qualify as queries and many
/// that must not: docs, a version bump, a merge, tests only, a since-deleted file, a sweeping
/// refactor, a subject too short.
fn history_repo(env: &Env) -> std::path::PathBuf {
    let root = env.repo("shop");
    git(&root, &["init", "-q", "-b", "main"]);
    write(
        &root,
        "src/session.py",
        "class SessionStore:\n    def __init__(self, ttl):\n        self.ttl = ttl\n        self.items = {}\n",
    );
    write(
        &root,
        "src/billing/invoice.py",
        "def render_invoice(order):\n    lines = [item.name for item in order.items]\n    return lines\n",
    );
    write(
        &root,
        "src/config_loader.py",
        "def load_configuration(path):\n    with open(path) as handle:\n        return handle.read()\n",
    );
    write(&root, "src/legacy.py", "def old_helper():\n    return 'legacy helper output'\n");
    write(
        &root,
        "tests/test_session.py",
        "from src.session import SessionStore\n\ndef test_store():\n    assert SessionStore(1).ttl == 1\n",
    );
    write(&root, "README.md", "# Shop\n\nA small shop.\n");
    for i in 0..12 {
        write(&root, &format!("docs/page_{i}.md"), format!("# Page {i}\n"));
    }
    commit_dated(&root, "Initial import of the shop with sessions and invoices", "2023-01-01T00:00:00Z");

    write(
        &root,
        "src/session.py",
        "class SessionStore:\n    def __init__(self, ttl):\n        self.ttl = ttl\n        self.items = {}\n\n    def expire_idle(self, now):\n        stale = [key for key, seen in self.items.items() if now - seen > self.ttl]\n        for key in stale:\n            del self.items[key]\n",
    );
    write(&root, "tests/test_session.py", "from src.session import SessionStore\n\ndef test_expiry():\n    store = SessionStore(1)\n    store.expire_idle(10)\n");
    commit(
        &root,
        "fix(store): forget idle visitors once the configured timeout has passed (#12)\n\nThe SessionStore kept every visitor forever; expire_idle now drops entries older than the timeout.\n\nSigned-off-by: Someone <s@example.com>",
    );

    write(&root, "README.md", "# Shop\n\nA small shop. Sessions expire after the timeout.\n");
    commit(&root, "docs: explain how long visitors stay remembered in the readme");

    write(
        &root,
        "src/billing/invoice.py",
        "def render_invoice(order):\n    lines = [item.name for item in order.items]\n    lines.append('billing address: ' + order.customer.address)\n    lines.append('tax total: ' + str(order.tax))\n    return lines\n",
    );
    commit(&root, "Print the customer's billing address and the tax total on every bill");

    write(&root, "src/version.py", "VERSION = '1.2.0'\n");
    commit(&root, "Bump version to 1.2.0 for the next release");

    write(
        &root,
        "tests/test_session.py",
        "from src.session import SessionStore\n\ndef test_expiry():\n    assert SessionStore(2).ttl == 2\n",
    );
    commit(&root, "Make the expiry test use a longer timeout value");

    write(&root, "src/legacy.py", "def old_helper():\n    return 'legacy helper output, now with more words'\n");
    commit(&root, "Extend what the old helper returns to callers of it");
    std::fs::remove_file(root.join("src/legacy.py")).unwrap();
    commit(&root, "Remove the legacy module that nothing imports anymore");

    for i in 0..18 {
        write(&root, &format!("src/generated_{i}.py"), format!("VALUE_{i} = {i}\n"));
    }
    commit(&root, "Regenerate the value tables for every supported region at once");

    git(&root, &["checkout", "-q", "-b", "feature"]);
    write(
        &root,
        "src/config_loader.py",
        "def load_configuration(path):\n    with open(path) as handle:\n        text = handle.read()\n    return resolve_includes(text, seen=set())\n\ndef resolve_includes(text, seen):\n    return text\n",
    );
    commit(&root, "Follow nested include directives when reading settings files");
    git(&root, &["checkout", "-q", "main"]);
    git(
        &root,
        &[
            "-c",
            "user.email=t@example.com",
            "-c",
            "user.name=t",
            "merge",
            "-q",
            "--no-ff",
            "-m",
            "Merge branch feature into main for the include work",
            "feature",
        ],
    );

    write(&root, "src/util.py", "def clamp_value(value, low, high):\n    return max(low, min(value, high))\n");
    commit(&root, "fix: tidy up");
    root
}

fn git_request(n: usize, seed: u64) -> EvalRequest {
    EvalRequest { source: QuerySource::Git(GitSetOptions { n, since: None, seed }), compare: None, worst: 5 }
}

#[test]
fn a_query_set_from_git_history_keeps_only_commits_that_describe_a_source_change() {
    let env = Env::new();
    let root = history_repo(&env);
    let engine = env.engine();
    let report = engine.eval(&root, &git_request(50, 1), &quiet()).expect("eval");
    let by_gold = |g: &str| report.queries.iter().find(|q| q.gold == [g.to_string()]);

    // The fix: answer is the source file only (the test and README changes are not answers),
    // and the query names neither the file, its stem, the method, the class nor the issue.
    let fix = by_gold("src/session.py").expect("the session fix qualifies");
    assert!(fix.id.starts_with("shop-") && fix.id.len() == "shop-".len() + 10, "{}", fix.id);
    for gone in ["#12", "expire_idle", "SessionStore", "Signed-off-by", "fix(store)", "session.py"] {
        assert!(!fix.query.contains(gone), "{gone:?} left in {:?}", fix.query);
    }
    assert!(fix.query.starts_with("forget idle visitors"), "{}", fix.query);
    assert!(fix.query.contains("timeout"));

    let invoice = by_gold("src/billing/invoice.py").expect("the invoice change qualifies");
    assert!(invoice.query.contains("billing address"), "{}", invoice.query);
    // Merged in from a branch: the commit itself counts, the merge commit does not.
    let include = by_gold("src/config_loader.py").expect("the include commit qualifies");
    assert!(!include.query.contains("resolve_includes"));

    // The initial import (18 files), docs, version bumps, merges, tests only, a deleted file,
    // 18 files at once and a 2-word subject all stay out.
    assert_eq!(report.queries.len(), 3, "{:#?}", report.queries);
    let git = report.git.as_ref().expect("git stats");
    assert!(git.scanned >= 11 && git.candidates >= 3, "{git:?}");
    // Every tried commit is a query or dropped for a reason the report gives.
    assert_eq!(
        git.tried,
        git.queries + git.dropped_rewritten + git.dropped_redacted + git.dropped_unindexed,
        "{git:?}"
    );
    for q in &report.queries {
        assert!(!q.query.to_lowercase().contains("merge") && !q.query.contains("Bump"), "{}", q.query);
    }

    // Search is scored on the set: these descriptions share words with their answers.
    let run = &report.runs[0];
    assert_eq!(run.label, "current");
    assert_eq!(run.metrics.n, 3);
    assert!(run.metrics.recall_at_10 > 0.6, "{:?}", run.metrics);
    let o = run.outcomes.iter().find(|o| o.id == invoice.id).unwrap();
    assert_eq!(o.gold_ranks[0], Some(1), "{o:?}");
}

#[test]
fn the_set_is_deterministic_for_a_seed_and_honours_n_and_since() {
    let env = Env::new();
    let root = history_repo(&env);
    let engine = env.engine();
    let a = engine.eval(&root, &git_request(50, 7), &quiet()).unwrap();
    let b = engine.eval(&root, &git_request(50, 7), &quiet()).unwrap();
    assert_eq!(a.queries, b.queries);
    assert_eq!(a.runs[0].metrics, b.runs[0].metrics);
    let ids = |r: &docdex::engine::eval::EvalReport| r.queries.iter().map(|q| q.id.clone()).collect::<Vec<_>>();
    // Some seed orders the three differently (the order is the shuffled candidate order).
    let orders: std::collections::HashSet<Vec<String>> =
        (1..8).map(|s| ids(&engine.eval(&root, &git_request(50, s), &quiet()).unwrap())).collect();
    assert!(orders.len() > 1, "every seed gave the same order");

    let one = engine.eval(&root, &git_request(1, 7), &quiet()).unwrap();
    assert_eq!(one.queries.len(), 1);
    assert_eq!(one.queries[0], a.queries[0], "n takes the first of the same shuffled order");

    // Everything after the initial import is dated 2024: since 2023-06 keeps those commits,
    // since 2030 keeps none (a clear error, not an empty report).
    let since = |d: &str| EvalRequest {
        source: QuerySource::Git(GitSetOptions { n: 50, since: Some(d.into()), seed: 1 }),
        compare: None,
        worst: 3,
    };
    let recent = engine.eval(&root, &since("2023-06-01"), &quiet()).unwrap();
    assert_eq!(recent.queries.len(), 3);
    // The report says how far back the commits read go (git reads odd --since text as some
    // date without a word; this is where the user sees which).
    assert_eq!(recent.git.as_ref().and_then(|g| g.oldest.as_deref()), Some("2024-01-01"));
    assert_eq!(a.git.as_ref().and_then(|g| g.oldest.as_deref()), Some("2023-01-01"));
    let err = engine.eval(&root, &since("2030-01-01"), &quiet()).unwrap_err().to_string();
    assert!(err.contains("no commit") && err.contains("--queries"), "{err}");
}

#[test]
fn compare_scores_a_second_configuration_on_the_same_queries() {
    let env = Env::new();
    let root = history_repo(&env);
    let engine = env.engine();
    // A changelog that repeats the description would win without the class priors.
    write(
        &root,
        "CHANGELOG.md",
        "# Changes\n\n- Print the customer's billing address and the tax total on every bill\n",
    );
    let queries = vec![EvalQuery {
        id: "bill".into(),
        query: "Print the customer billing address and the tax total on every bill".into(),
        gold: vec!["src/billing/invoice.py".into()],
        before: None,
    }];
    let req = EvalRequest {
        source: QuerySource::Inline(queries.clone()),
        compare: Some(CompareWith::Overrides(vec!["search.demote_noise_files=false".into()])),
        worst: 5,
    };
    let report = engine.eval(&root, &req, &quiet()).unwrap();
    assert_eq!(report.runs.len(), 2);
    assert_eq!(report.runs[1].label, "search.demote_noise_files=false");
    assert_eq!(report.runs[0].outcomes[0].gold_ranks[0], Some(1));
    assert_eq!(report.runs[1].outcomes[0].ranking[0], "CHANGELOG.md", "{:?}", report.runs[1].outcomes[0]);
    assert!(report.runs[1].metrics.mrr_at_10 < report.runs[0].metrics.mrr_at_10);

    // A whole config file works the same way; keys it leaves out take their defaults.
    let file = env.dir.path().join("other.toml");
    std::fs::write(&file, "[search]\ndemote_noise_files = false\n").unwrap();
    let req = EvalRequest { compare: Some(CompareWith::File(file.clone())), ..req };
    let report = engine.eval(&root, &req, &quiet()).unwrap();
    assert_eq!(report.runs[1].label, file.display().to_string());
    assert_eq!(report.runs[1].outcomes[0].ranking[0], "CHANGELOG.md");

    // Settings that do not exist are refused with the reason.
    let bad = EvalRequest {
        source: QuerySource::Inline(queries),
        compare: Some(CompareWith::Overrides(vec!["search.no_such_key=1".into()])),
        worst: 5,
    };
    let err = engine.eval(&root, &bad, &quiet()).unwrap_err().to_string();
    assert!(err.contains("no_such_key"), "{err}");
}

#[test]
fn the_command_prints_the_table_and_worst_misses_or_json() {
    let env = Env::new();
    let root = history_repo(&env);
    let repo = root.to_str().unwrap();
    let out = env.run(&["eval", "--repo", repo, "--from-git", "--n", "10", "--compare", "search.hybrid=false"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("3 queries from git history (") && text.contains(" back to 2023-01-01, "), "{text}");
    assert!(text.contains("R@10") && text.contains("MRR@10"), "{text}");
    assert!(text.contains("current (bm25)") && text.contains("search.hybrid=false (bm25)"), "{text}");

    let v = env.json(&["eval", "--repo", repo, "--json", "--seed", "3"]);
    assert_eq!(v["source"], "git");
    assert_eq!(v["queries"].as_array().unwrap().len(), 3);
    assert!(v["runs"][0]["metrics"]["recall_at_10"].as_f64().unwrap() > 0.0);
    assert!(v["runs"][0]["outcomes"][0]["ranking"].is_array());

    // A query file: the dev set's format (extra fields ignored), with a miss listed as such.
    let file = env.dir.path().join("q.jsonl");
    std::fs::write(
        &file,
        "{\"id\":\"a\",\"repo\":\"shop\",\"query\":\"billing address and tax total on the bill\",\"gold\":[\"src/billing/invoice.py\"]}\n\
         {\"id\":\"b\",\"query\":\"quantum flux capacitor calibration\",\"gold\":[\"src/config_loader.py\"]}\n",
    )
    .unwrap();
    let out = env.run(&["eval", "--repo", repo, "--queries", file.to_str().unwrap(), "--worst", "1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("2 queries from"), "{text}");
    assert!(text.contains("worst misses (current):") && text.contains("  b  "), "{text}");
    assert!(text.contains("src/config_loader.py (not found)"), "{text}");
    // History options with a query file were ignored without a word (the whole file was scored).
    for flag in [["--since", "2024-01-01"], ["-n", "1"], ["--seed", "4"]] {
        let out = env.run(&["eval", "--repo", repo, "--queries", file.to_str().unwrap(), flag[0], flag[1]]);
        assert_eq!(out.status.code(), Some(2), "{flag:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used with"), "{out:?}");
    }
    // tour16 F3: the count's long name was `--n` (`-n, --n <N>` in the help, "cannot be used
    // with '--n <N>'"); it is `--limit`, as on every other command, and `--n` still works.
    let out = env.run(&["eval", "--repo", repo, "--queries", file.to_str().unwrap(), "-n", "1"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used with '--limit <N>'"), "{out:?}");
    let help = String::from_utf8_lossy(&env.run(&["eval", "--help"]).stdout).into_owned();
    assert!(help.contains("-n, --limit <N>") && !help.contains("--n <N>"), "{help}");

    // Bad input: not a git repository, a malformed query file, an unusable --compare.
    let plain = env.repo("plain");
    write(&plain, "a.py", "x = 1\n");
    let out = env.run(&["eval", "--repo", plain.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not inside a git work tree") && err.contains("--queries"), "{err}");
    std::fs::write(&file, "{\"id\": 1}\n").unwrap();
    let out = env.run(&["eval", "--repo", repo, "--queries", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 1"), "{}", String::from_utf8_lossy(&out.stderr));
    let out = env.run(&["eval", "--repo", repo, "--compare", "missing.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("neither a config file"));
    // A query file that is not there is bad input, said once.
    let out = env.run(&["eval", "--repo", repo, "--queries", "/no/such/queries.jsonl"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("the query set /no/such/queries.jsonl does not exist"), "{err}");
    // A --since git reads as nothing says so.
    let out = env.run(&["eval", "--repo", repo, "--from-git", "--since", "2999-01-01"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no commit is newer than --since"), "{out:?}");
}

/// An answer file replaced by a link since its commit (to a file outside the repository that
/// holds the very lines the commit added) was read through the link and made an answer; a
/// repository with no commits got git's raw "ambiguous argument 'HEAD'".
#[test]
fn an_answer_replaced_by_a_link_is_not_read_and_an_empty_history_says_what_to_do() {
    let env = Env::new();
    let root = env.repo("linked");
    git(&root, &["init", "-q", "-b", "main"]);
    let body = "fn parse_header(input: &str) -> usize {\n    input.split(',').count() + 41\n}\n";
    write(&root, "src/parser.rs", body);
    commit(&root, "Count header fields correctly when the input has trailing separators");
    let outside = env.dir.path().join("outside");
    write(&outside, "parser.rs", body);
    std::fs::remove_file(root.join("src/parser.rs")).unwrap();
    std::os::unix::fs::symlink(outside.join("parser.rs"), root.join("src/parser.rs")).unwrap();
    let engine = env.engine();
    let err = engine.eval(&root, &git_request(50, 1), &quiet()).expect_err("no answer survives");
    assert!(err.to_string().contains("no commit in the history qualified"), "{err}");

    let empty = env.repo("fresh");
    git(&empty, &["init", "-q", "-b", "main"]);
    write(&empty, "a.rs", "fn main() {}\n");
    let out = env.run(&["eval", "--repo", empty.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("has no commits yet") && err.contains("--queries FILE"), "{err}");
}

/// A repository whose `i18n.commitEncoding` is Latin-1: git printed its messages in Latin-1 and
/// every accented letter of the query became U+FFFD.
#[test]
fn a_latin1_commit_message_reads_as_its_words() {
    let env = Env::new();
    let root = env.repo("latin");
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["config", "i18n.commitEncoding", "ISO-8859-1"]);
    write(&root, "src/parser.rs", "fn parse_header(input: &str) -> usize {\n    input.split(',').count() + 41\n}\n");
    git(&root, &["add", "-A"]);
    let msg = env.dir.path().join("msg");
    std::fs::write(&msg, b"Corrige le d\xe9coupage des en-t\xeates quand la saisie finit par un s\xe9parateur\n")
        .unwrap();
    git(&root, &["commit", "-q", "-F", msg.to_str().unwrap()]);
    let report = env.engine().eval(&root, &git_request(50, 1), &quiet()).expect("eval");
    let q = &report.queries[0].query;
    assert!(q.contains("découpage") && q.contains("séparateur") && !q.contains('\u{fffd}'), "{q}");
}

/// A shallow clone: git shows the commit at its edge adding every file of its tree (its parent
/// was not fetched), so that commit became a query whose answer was the whole tree.
#[test]
fn a_shallow_clone_leaves_out_the_commits_at_its_edge_and_says_it_is_shallow() {
    let env = Env::new();
    let full = env.repo("full");
    git(&full, &["init", "-q", "-b", "main"]);
    for f in ["parser", "lexer", "printer"] {
        write(&full, &format!("src/{f}.py"), format!("def {f}_entry(text):\n    return text.strip()\n"));
    }
    commit(&full, "Initial import of the parser, lexer and printer modules");
    write(&full, "src/lexer.py", "def lexer_entry(text):\n    return text.strip().split()\n");
    commit(&full, "Split incoming text into separate tokens on any whitespace");
    write(&full, "src/printer.py", "def printer_entry(text):\n    return text.strip().upper()\n");
    commit(&full, "Make the printer shout every line it emits to the terminal");
    let clone = env.dir.path().join("repos").join("shallow");
    let url = format!("file://{}", full.display());
    git(env.dir.path(), &["clone", "-q", "--depth", "2", &url, clone.to_str().unwrap()]);

    let report = env.engine().eval(&clone, &git_request(50, 1), &quiet()).expect("eval");
    let git_stats = report.git.as_ref().expect("git stats");
    assert!(git_stats.shallow, "{git_stats:?}");
    // The split commit (at the edge) would have had all three files as its answer.
    assert_eq!(report.queries.len(), 1, "{:#?}", report.queries);
    assert_eq!(report.queries[0].gold, ["src/printer.py"]);
    let out = env.run(&["eval", "--repo", clone.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("a shallow clone"), "{text}");
    // A clone of one commit has nothing left, and the error says why.
    let single = env.dir.path().join("repos").join("single");
    git(env.dir.path(), &["clone", "-q", "--depth", "1", &url, single.to_str().unwrap()]);
    let err = env.engine().eval(&single, &git_request(50, 1), &quiet()).unwrap_err().to_string();
    assert!(err.contains("shallow clone") && err.contains("--unshallow"), "{err}");
}

/// A query file whose answers search can never return (outside the repository, a typo, a file
/// since removed) was scored as misses without a word, pulling every figure down; duplicate
/// ids made the worst-miss list show one query twice; a byte-order mark (PowerShell's `>`)
/// was "expected value at line 1 column 1"; a directory was an I/O failure (exit 1).
#[test]
fn a_query_file_search_cannot_answer_is_refused_naming_each_bad_answer() {
    let env = Env::new();
    let root = env.repo("plainrepo");
    write(&root, "src/billing.py", "def render_invoice(order):\n    return order.total_with_tax\n");
    let repo = root.to_str().unwrap();
    let file = env.dir.path().join("q.jsonl");
    let run_with = |text: &[u8]| {
        std::fs::write(&file, text).unwrap();
        let out = env.run(&["eval", "--repo", repo, "--queries", file.to_str().unwrap()]);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let line = |id: &str, gold: &str| {
        format!("{{\"id\":\"{id}\",\"query\":\"render the invoice total with tax\",\"gold\":[\"{gold}\"]}}\n")
    };

    let (code, _, err) = run_with(
        format!("{}{}{}", line("a", "../etc/passwd"), line("b", "/etc/passwd"), line("c", "src/biling.py")).as_bytes(),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(r#"query "a": answer "../etc/passwd" is outside the repository"#), "{err}");
    assert!(err.contains(r#"query "b": answer "/etc/passwd" is outside the repository"#), "{err}");
    assert!(err.contains(r#"query "c": answer "src/biling.py" is not a file in the repository"#), "{err}");

    let (code, _, err) =
        run_with(format!("{}{}", line("a", "src/billing.py"), line("a", "./src/billing.py")).as_bytes());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(r#"query id "a" appears more than once"#), "{err}");

    let (code, _, err) = run_with(b"\n\n");
    assert_eq!(code, Some(2));
    assert!(err.contains("holds no queries"), "{err}");

    // A UTF-8 byte-order mark, then UTF-16 with one: both read as the queries they hold.
    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend(line("a", "src/billing.py").bytes());
    let (code, out, err) = run_with(&bom);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("1 query from") && out.contains(" 1.000"), "{out}");
    let mut utf16 = vec![0xFF, 0xFE];
    utf16.extend(line("a", "./src/billing.py").encode_utf16().flat_map(u16::to_le_bytes));
    let (code, out, err) = run_with(&utf16);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains(" 1.000"), "{out}");

    let out = env.run(&["eval", "--repo", repo, "--queries", env.dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is a directory, not a file"), "{out:?}");

    // A file that is there but not indexed (here ignored) is no answer search can give either.
    git(&root, &["init", "-q", "-b", "main"]);
    write(&root, ".gitignore", "src/generated.py\n");
    write(&root, "src/generated.py", "def render_invoice_total():\n    return 'generated'\n");
    let (code, _, err) = run_with(line("g", "src/generated.py").as_bytes());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(r#"query "g": answer "src/generated.py" is not indexed"#), "{err}");
    // A hidden one: its reason is among those named (it was not: "ignored, excluded, binary").
    write(&root, ".github/workflows/ci.yml", "jobs:\n  test:\n    runs-on: ubuntu-latest\n");
    let (code, _, err) = run_with(line("h", ".github/workflows/ci.yml").as_bytes());
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(r#"answer ".github/workflows/ci.yml" is not indexed (hidden: a dot file or under a dot folder;"#),
        "{err}"
    );
}

/// A query file kept in the repository is indexed like any file and holds every query word for
/// word: it was ranked among the answers (first for a query no source file matched).
#[test]
fn a_query_file_inside_the_repository_is_not_ranked() {
    let env = Env::new();
    let root = env.repo("tiny");
    write(&root, "src/a.py", "def alpha():\n    return 'zebra giraffe'\n");
    write(&root, "src/b.py", "def beta():\n    return 'zebra'\n");
    write(
        &root,
        "eval/q.jsonl",
        "{\"id\":\"q1\",\"query\":\"zebra giraffe\",\"gold\":[\"src/b.py\"]}\n{\"id\":\"q2\",\"query\":\"platypus\",\"gold\":[\"src/a.py\"]}\n",
    );
    let req = EvalRequest { source: QuerySource::File(root.join("eval/q.jsonl")), compare: None, worst: 5 };
    let report = env.engine().eval(&root, &req, &quiet()).expect("eval");
    let outcomes = &report.runs[0].outcomes;
    assert_eq!(outcomes[0].ranking, ["src/a.py", "src/b.py"], "{outcomes:?}");
    assert_eq!(outcomes[0].gold_ranks, [Some(2)]);
    assert!(outcomes[1].ranking.is_empty(), "{outcomes:?}");
}

/// `--compare search.fusion=bogus` said "invalid config <home>/config.toml: TOML parse error at
/// line 60", a file and line the user never wrote (the configuration is restated to apply the
/// setting); an unknown key in a `--compare` file was ignored without a word, so a misspelt
/// setting compared the defaults.
#[test]
fn a_bad_compare_setting_is_named_and_unknown_keys_in_a_compare_file_are_shown() {
    let env = Env::new();
    let root = env.repo("cmp");
    write(&root, "src/billing.py", "def render_invoice(order):\n    return order.total_with_tax\n");
    let queries = vec![EvalQuery {
        id: "bill".into(),
        query: "render the invoice total with tax".into(),
        gold: vec!["src/billing.py".into()],
        before: None,
    }];
    let with = |settings: &[&str]| EvalRequest {
        source: QuerySource::Inline(queries.clone()),
        compare: Some(CompareWith::Overrides(settings.iter().map(|s| s.to_string()).collect())),
        worst: 5,
    };
    let engine = env.engine();
    let err = engine.eval(&root, &with(&["search.hybrid=false", "search.fusion=bogus"]), &quiet()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.starts_with(r#"--compare setting "search.fusion=bogus": unknown variant `bogus`"#), "{msg}");
    assert!(!msg.contains("config.toml") && !msg.contains("line "), "{msg}");
    assert_eq!(err.code(), "bad_request");
    let msg = engine.eval(&root, &with(&["search.keyword_weight=-3"]), &quiet()).unwrap_err().to_string();
    assert!(msg.contains(r#""search.keyword_weight=-3""#) && msg.contains("must not be negative"), "{msg}");

    let file = env.dir.path().join("other.toml");
    std::fs::write(&file, "[search]\nhybird = false\n").unwrap();
    let queries_file = env.dir.path().join("q.jsonl");
    std::fs::write(&queries_file, serde_json::to_string(&queries[0]).unwrap()).unwrap();
    let out = env.run(&[
        "eval",
        "--repo",
        root.to_str().unwrap(),
        "--queries",
        queries_file.to_str().unwrap(),
        "--compare",
        file.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(text.contains("warning: unknown key `search.hybird`"), "{text}");
}

/// After the index bar, scoring ran silent: hundreds of queries (hybrid ones wait on the
/// embedder), twice with --compare. Each run now reports its queries as they are scored.
#[test]
fn each_run_reports_its_queries_as_they_are_scored() {
    let env = Env::new();
    let root = env.repo("progress");
    write(&root, "src/billing.py", "def render_invoice(order):\n    return order.total_with_tax\n");
    let query = |id: &str| EvalQuery {
        id: id.into(),
        query: "render the invoice total with tax".into(),
        gold: vec!["src/billing.py".into()],
        before: None,
    };
    let req = EvalRequest {
        source: QuerySource::Inline(vec![query("a"), query("b"), query("c")]),
        compare: Some(CompareWith::Overrides(vec!["search.hybrid=false".into()])),
        worst: 5,
    };
    let seen = std::sync::Mutex::new(Vec::new());
    let sink = |p: &docdex::engine::protocol::IndexProgress| {
        if p.phase == "evaluating" {
            seen.lock().unwrap().push((p.files_done, p.files_total));
        }
    };
    env.engine().eval(&root, &req, &sink).expect("eval");
    let one_run = [(0, 3), (1, 3), (2, 3), (3, 3)];
    assert_eq!(*seen.lock().unwrap(), [one_run, one_run].concat());
}

/// With `diff.noprefix` set (a common personal git setting), `git show` printed `+++ src/a.py`
/// instead of `+++ b/src/a.py`, no added line was found, and every commit was dropped as
/// rewritten: "no commit in the history qualified".
#[test]
fn a_users_diff_prefix_settings_do_not_empty_the_set() {
    let env = Env::new();
    let root = env.repo("noprefix");
    git(&root, &["init", "-q", "-b", "main"]);
    write(&root, "src/lexer.py", "def lexer_entry(text):\n    return text.strip()\n");
    commit(&root, "Initial import of the lexer module for the project");
    write(&root, "src/lexer.py", "def lexer_entry(text):\n    return text.strip().split()\n");
    commit(&root, "Split incoming text into separate tokens on any whitespace");
    for setting in [["diff.noprefix", "true"], ["diff.mnemonicPrefix", "true"]] {
        git(&root, &["config", setting[0], setting[1]]);
        let report = env.engine().eval(&root, &git_request(50, 1), &quiet()).expect("eval");
        assert_eq!(report.queries.len(), 2, "{setting:?}: {:?}", report.git);
        git(&root, &["config", "--unset", setting[0]]);
    }
}

/// A history whose one qualifying commit made no query (its line rewritten since) said "1
/// with 1 to 4 source files and a descriptive subject" and nothing on why that one is no
/// query.
#[test]
fn an_empty_set_says_why_the_qualifying_commits_made_no_query() {
    let env = Env::new();
    let root = env.repo("rewritten");
    git(&root, &["init", "-q", "-b", "main"]);
    write(&root, "src/old_name.py", "def parse(text):\n    return text\n");
    commit(&root, "init");
    write(&root, "src/old_name.py", "def parse(text):\n    return text.strip().lower()\n");
    commit(&root, "Strip surrounding whitespace and lowercase the parsed text input");
    write(&root, "src/old_name.py", "def parse(text):\n    return text.casefold()\n");
    commit(&root, "again");
    let err = env.engine().eval(&root, &git_request(50, 1), &quiet()).unwrap_err().to_string();
    assert!(err.contains("1 with 1 to 4 source files"), "{err}");
    assert!(err.contains("dropped: 1 whose lines were rewritten or renamed since"), "{err}");
}

/// With `log.showSignature` set, git checked the signature of every signed commit eval read
/// (one gpg or ssh-keygen run each, thousands on a long signed history) for lines eval ignores.
#[test]
fn reading_the_history_checks_no_signatures() {
    let env = Env::new();
    let key = env.dir.path().join("key");
    let made = Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(&key).output();
    if !made.is_ok_and(|o| o.status.success()) {
        eprintln!("ssh-keygen is not available: nothing to sign with");
        return;
    }
    let root = env.repo("signed");
    git(&root, &["init", "-q", "-b", "main"]);
    let allowed = env.dir.path().join("allowed");
    let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
    std::fs::write(&allowed, format!("t@example.com {public}")).unwrap();
    for (k, v) in [
        ("gpg.format", "ssh"),
        ("user.signingkey", key.with_extension("pub").to_str().unwrap()),
        ("gpg.ssh.allowedSignersFile", allowed.to_str().unwrap()),
    ] {
        git(&root, &["config", k, v]);
    }
    write(&root, "src/lexer.py", "def lexer_entry(text):\n    return text.strip()\n");
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-S", "-m", "Initial import of the lexer module for the project"]);
    write(&root, "src/lexer.py", "def lexer_entry(text):\n    return text.strip().split()\n");
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-S", "-m", "Split incoming text into separate tokens on any whitespace"]);
    // From here on, every signature check git runs leaves a line in `calls`.
    let calls = env.dir.path().join("calls");
    let program = env.dir.path().join("count-ssh-keygen");
    write(
        env.dir.path(),
        "count-ssh-keygen",
        format!("#!/bin/sh\necho \"$@\" >> {}\nexec ssh-keygen \"$@\"\n", calls.display()),
    );
    std::fs::set_permissions(&program, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    git(&root, &["config", "gpg.ssh.program", program.to_str().unwrap()]);
    git(&root, &["config", "log.showSignature", "true"]);
    git(&root, &["log", "-1", "--format=%H"]);
    assert!(calls.exists(), "the counting program is not called: the test proves nothing");
    std::fs::remove_file(&calls).unwrap();

    let report = env.engine().eval(&root, &git_request(50, 1), &quiet()).expect("eval");
    assert_eq!(report.queries.len(), 2, "{:#?}", report.queries);
    assert!(!calls.exists(), "signatures checked: {:?}", std::fs::read_to_string(&calls));
}

/// A commit whose answer the index leaves out (a hidden folder) became a query search could
/// never answer: a silent miss in every figure.
#[test]
fn a_commit_whose_answer_is_not_indexed_makes_no_query() {
    let env = Env::new();
    let root = env.repo("hidden");
    git(&root, &["init", "-q", "-b", "main"]);
    write(&root, "src/lexer.py", "def lexer_entry(text):\n    return text.strip()\n");
    write(&root, ".hidden/helper.py", "def helper_entry(text):\n    return text\n");
    commit(&root, "init");
    write(&root, "src/lexer.py", "def lexer_entry(text):\n    return text.strip().split()\n");
    commit(&root, "Split incoming text into separate tokens on any whitespace");
    write(&root, ".hidden/helper.py", "def helper_entry(text):\n    return text.strip().lower()\n");
    commit(&root, "Make the helper lowercase every value it hands back to callers");
    let report = env.engine().eval(&root, &git_request(50, 1), &quiet()).expect("eval");
    let golds: Vec<&Vec<String>> = report.queries.iter().map(|q| &q.gold).collect();
    assert_eq!(golds, [&vec!["src/lexer.py".to_string()]], "{:#?}", report.queries);
    let git_stats = report.git.as_ref().unwrap();
    assert_eq!((git_stats.dropped_unindexed, git_stats.queries), (1, 1), "{git_stats:?}");
    assert_eq!(report.runs[0].metrics.n, 1);
}

/// Evaluating one package of a monorepo: git's --relative hid what a commit changed outside it,
/// so a change across two packages was a query whose answer was this package's half (eval-dev
/// leaves such commits out), and its files outside did not count towards the fifteen.
#[test]
fn in_a_subdirectory_a_commit_that_also_changed_source_outside_makes_no_query() {
    let env = Env::new();
    let top = env.repo("mono");
    git(&top, &["init", "-q", "-b", "main"]);
    write(&top, "packages/lexer/src/lexer.py", "def lexer_entry(text):\n    return text.strip()\n");
    write(&top, "packages/cli/src/cli.py", "def cli_entry(text):\n    return text\n");
    commit(&top, "init");
    write(&top, "packages/lexer/src/lexer.py", "def lexer_entry(text):\n    return text.strip().lower()\n");
    write(&top, "packages/cli/src/cli.py", "def cli_entry(text):\n    return text.lower()\n");
    commit(&top, "Lowercase the words the command line passes to the tokenizer");
    write(
        &top,
        "packages/lexer/src/lexer.py",
        "def lexer_entry(text):\n    return text.strip().lower()\n\ndef tokens(text):\n    return lexer_entry(text).split()\n",
    );
    commit(&top, "Split incoming text into separate tokens on any whitespace");
    write(
        &top,
        "packages/cli/src/cli.py",
        "def cli_entry(text):\n    return text.lower()\n\ndef usage():\n    return 'usage: cli TEXT'\n",
    );
    commit(&top, "Print the usage line when the command line is asked for help");
    let package = top.join("packages/lexer");
    let report = env.engine().eval(&package, &git_request(50, 1), &quiet()).expect("eval");
    // tour16 F9: only the package's commits are read (the window was the work tree's newest
    // commits, and one that never touched the package was counted as "also changing source
    // outside this directory"); the cross-package one is still left out, as such.
    let stats = report.git.as_ref().expect("git stats");
    assert_eq!(stats.scanned, 3, "init, the cross-package change and the split: {stats:?}");
    assert_eq!(stats.skipped.get("outside_directory"), Some(&1), "{stats:?}");
    let queries: Vec<(&str, &Vec<String>)> = report.queries.iter().map(|q| (q.query.as_str(), &q.gold)).collect();
    assert_eq!(queries.len(), 1, "{queries:#?}");
    assert!(queries[0].0.starts_with("Split incoming text"), "{queries:#?}");
    assert_eq!(queries[0].1, &["src/lexer.py".to_string()]);
    // From the top, the change across both packages is a query with both answers.
    let report = env.engine().eval(&top, &git_request(50, 1), &quiet()).expect("eval");
    let both = report.queries.iter().find(|q| q.query.starts_with("Lowercase")).expect("the cross-package query");
    assert_eq!(both.gold, ["packages/cli/src/cli.py", "packages/lexer/src/lexer.py"]);
}

/// An answer renamed after its commit was dropped (the path the commit changed no longer
/// exists), so a repository that moved its modules lost those commits' queries. It is now
/// followed through every later rename, a pure move and a move with edits, to its name today.
#[test]
fn an_answer_renamed_since_its_commit_is_followed_to_its_current_path() {
    let env = Env::new();
    let root = env.repo("moved");
    git(&root, &["init", "-q", "-b", "main"]);
    let body = "def parse(text):\n    cleaned = text.strip()\n    return cleaned\n\ndef tokens(text):\n    return parse(text).split()\n";
    write(&root, "src/parser.py", body);
    write(&root, "src/report.py", "def render(rows):\n    return '\\n'.join(rows)\n");
    commit(&root, "init");
    write(&root, "src/parser.py", body.replace("text.strip()", "text.strip().lower()"));
    commit(&root, "Lowercase the parsed text input so comparisons ignore letter case");
    write(
        &root,
        "src/report.py",
        "def render(rows):\n    header = 'quarterly summary table'\n    return header + '\\n'.join(rows)\n",
    );
    commit(&root, "Put a heading above every quarterly summary that gets printed");
    write(&root, "src/cache.py", "def warm(keys):\n    return {key: None for key in keys}\n");
    commit(&root, "init cache");
    write(&root, "src/cache.py", "def warm(keys):\n    return {key: len(key) for key in keys if key}\n");
    commit(&root, "Skip empty keys and remember their length while warming up");
    // Two moves of the parser (the second with an edit), one of the report; the cache becomes
    // a test helper, no longer an answer.
    for dir in ["src/text", "src/output", "lib", "tests"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    git(&root, &["mv", "src/parser.py", "src/text/parser.py"]);
    git(&root, &["mv", "src/report.py", "src/output/report.py"]);
    git(&root, &["mv", "src/cache.py", "tests/test_cache.py"]);
    commit(&root, "move");
    git(&root, &["mv", "src/text/parser.py", "lib/normalize.py"]);
    let moved = std::fs::read_to_string(root.join("lib/normalize.py")).unwrap();
    write(&root, "lib/normalize.py", format!("{moved}\ndef words(text):\n    return tokens(text)\n"));
    commit(&root, "move again");

    let report = env.engine().eval(&root, &git_request(50, 1), &quiet()).unwrap();
    let mut gold: Vec<Vec<String>> = report.queries.iter().map(|q| q.gold.clone()).collect();
    gold.sort();
    assert_eq!(gold, [vec!["lib/normalize.py".to_string()], vec!["src/output/report.py".to_string()]], "{report:#?}");
    let g = report.git.unwrap();
    assert_eq!((g.candidates, g.dropped_rewritten), (2, 0), "{g:?}");
}

/// git reads any `--since` text as some date without a word (`yesterdayy` as now, `2026-13-45`
/// as a day in November), so eval read a window the user never meant. Such text is refused,
/// before git runs, as a usage error naming the forms that are read as meant.
#[test]
fn an_invalid_since_date_is_refused_naming_the_accepted_forms() {
    let env = Env::new();
    let root = history_repo(&env);
    let repo = root.to_str().unwrap();
    for bad in ["yesterdayy", "2026-13-45", "2024-02-30", "2024-05"] {
        let out = env.run(&["eval", "--repo", repo, "--from-git", "--since", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("--since {bad:?}")) && err.contains("YYYY-MM-DD"), "{err}");
        assert!(err.contains("days ago") && err.contains("yesterday"), "{err}");
    }
    let json = env.run(&["eval", "--repo", repo, "--since", "banana", "--json"]);
    assert_eq!(json.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&json.stdout).contains("bad_request"), "{json:?}");
    for good in ["2023-06-01", "2023-06-01 12:00", "1000 weeks ago", "@1672531200"] {
        let out = env.run(&["eval", "--repo", repo, "--since", good, "--json"]);
        assert!(out.status.success(), "{good}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

/// git reads `--since today` as this very second, so a commit made an hour ago was "older" and
/// eval said no commit is newer than --since "today". It now reads from midnight.
#[test]
fn since_today_reads_the_commits_made_today() {
    let env = Env::new();
    let root = env.repo("today");
    git(&root, &["init", "-q", "-b", "main"]);
    write(&root, "src/parser.py", "def parse(text):\n    return text\n");
    commit_dated(&root, "init", "2023-01-01T00:00:00Z");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    if now % 86_400 < 10 {
        std::thread::sleep(std::time::Duration::from_secs(10));
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    write(&root, "src/parser.py", "def parse(text):\n    return text.strip().lower()\n");
    commit_dated(
        &root,
        "Strip surrounding whitespace and lowercase the parsed text input",
        &format!("{} +0000", now - 3),
    );
    let req = EvalRequest {
        source: QuerySource::Git(GitSetOptions { n: 5, since: Some("today".into()), seed: 1 }),
        compare: None,
        worst: 1,
    };
    let report = env.engine().eval(&root, &req, &quiet()).unwrap();
    assert_eq!(report.queries.len(), 1, "{:?}", report.git);
    assert_eq!(report.queries[0].gold, ["src/parser.py"]);
}

/// `--since` refused git's own date forms ("last monday", "march 1", "noon yesterday") with a
/// bad_request, though git reads them. Forms docdex does not know are now read by git's careful
/// date reader: they pass and window the history as git reads them, and only what git cannot
/// read either is refused.
#[test]
fn since_takes_the_weekday_and_month_forms_git_reads() {
    let env = Env::new();
    let root = env.repo("weekdays");
    git(&root, &["init", "-q", "-b", "main"]);
    write(&root, "src/parser.py", "def parse(text):\n    return text\n");
    commit_dated(&root, "Parse the incoming request text into separate tokens", "2023-01-01T00:00:00Z");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    write(&root, "src/parser.py", "def parse(text):\n    return text.strip().lower()\n");
    commit_dated(
        &root,
        "Strip surrounding whitespace and lowercase the parsed text input",
        &format!("{} +0000", now - 60),
    );
    let repo = root.to_str().unwrap();
    assert!(env.run(&["index", "--repo", repo]).status.success());
    // "last monday" is one to seven days back: the new commit is in, the 2023 one out.
    for since in ["last monday", "last sunday", "2 weeks ago"] {
        let v = env.json(&["eval", "--repo", repo, "--from-git", "--since", since, "-n", "5", "--json"]);
        let queries: Vec<&str> = v["queries"].as_array().unwrap().iter().filter_map(|q| q["query"].as_str()).collect();
        assert_eq!(queries.len(), 1, "{since}: {v}");
        assert!(queries[0].contains("whitespace"), "{since}: {queries:?}");
    }
    // A month and day git reads too: refused before, now passed to git (the set may be empty
    // in early March, when the commit of a minute ago is the only one after it; never refused).
    for since in ["march 1", "1 month ago", "noon yesterday"] {
        let out = env.run(&["eval", "--repo", repo, "--from-git", "--since", since, "--json"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(!text.contains("bad_request"), "{since}: {text}");
    }
    // What git cannot read either is still refused, naming the forms that work.
    let out = env.run(&["eval", "--repo", repo, "--from-git", "--since", "next fridya"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--since \"next fridya\"") && err.contains("last monday"), "{err}");
}

/// tour 11 (M3): git's careful reader half-reads partial dates without a word: `--since 2026`
/// was read as now ("no commit is newer"), `2025` as a year ago today, `5`, `xx 5` and `1
/// banana ago` as a day of this month. They are refused like `banana`; a bare year says which
/// date to give.
#[test]
fn a_partial_since_date_is_refused_not_misread() {
    let env = Env::new();
    let root = history_repo(&env);
    let repo = root.to_str().unwrap();
    for bad in ["2026", "2025", "5", "xx 5", "1 banana ago", "march"] {
        let out = env.run(&["eval", "--repo", repo, "--from-git", "--since", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("--since {bad:?} is not a date")) && err.contains("YYYY-MM-DD"), "{err}");
    }
    let out = env.run(&["eval", "--repo", repo, "--since", "2023", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stdout).contains("2023-01-01"), "{out:?}");
    for good in ["march 1 2023", "1 jan 2023"] {
        let out = env.run(&["eval", "--repo", repo, "--since", good, "--json"]);
        assert!(out.status.success(), "{good}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

/// tour 11 (M4, L7): commits whose subject merely contained "version", "format" or
/// "dependency" were dropped as noise with no word on why; they are queries now, real bumps
/// and docs commits are still skipped, and `skipped` counts each reason. An answer search did
/// not find while ranking fewer files than the report keeps was "not in the top 1".
#[test]
fn commits_are_skipped_by_their_kind_and_the_report_counts_why() {
    let env = Env::new();
    let root = env.repo("net");
    git(&root, &["init", "-q", "-b", "main"]);
    write(&root, "pkg/__init__.py", "");
    write(&root, "README.md", "# net\n");
    write(&root, "requirements.txt", "requests==2.31.0\n");
    commit(&root, "Start the networking package with its empty module");
    let changes = [
        ("pkg/config.py", "read_settings_text", "Read key value settings from the configuration text file format"),
        ("pkg/remote.py", "parse_reply_header", "Parse the version string that the remote server sends in replies"),
        ("pkg/retry.py", "retry_deadline_left", "Handle the dependency between retries and the total request deadline"),
        ("pkg/layout.py", "strip_comment_lines", "Allow comments and blank lines inside the settings file format"),
    ];
    for (file, name, subject) in changes {
        write(
            &root,
            file,
            format!("def {name}(text):\n    return [line for line in text.splitlines() if line.strip()]\n"),
        );
        commit(&root, subject);
    }
    write(&root, "requirements.txt", "requests==2.32.0\n");
    commit(&root, "Bump requests from 2.31.0 to 2.32.0");
    write(&root, "pkg/version.py", "VERSION = '1.3.0'\n");
    commit(&root, "Bump version to 1.3.0 for the next release");
    write(&root, "README.md", "# net\n\nReads settings and talks to servers.\n");
    commit(&root, "docs: describe what the package reads and whom it talks to");

    let repo = root.to_str().unwrap();
    let v = env.json(&["eval", "--repo", repo, "--from-git", "--json"]);
    let queries: Vec<&str> = v["queries"].as_array().unwrap().iter().map(|q| q["query"].as_str().unwrap()).collect();
    assert_eq!(queries.len(), 4, "{queries:?}");
    for word in ["version string", "dependency between", "file format", "blank lines"] {
        assert!(queries.iter().any(|q| q.contains(word)), "{word}: {queries:?}");
    }
    let skipped = &v["git"]["skipped"];
    assert_eq!(skipped["dependency_bump"], 1, "{skipped}");
    assert_eq!(skipped["version_bump"], 1, "{skipped}");
    assert_eq!(skipped["docs"], 1, "{skipped}");
    // Every commit read is a candidate or skipped for a counted reason.
    let counted: u64 = skipped.as_object().unwrap().values().map(|n| n.as_u64().unwrap()).sum();
    assert_eq!(counted + v["git"]["candidates"].as_u64().unwrap(), v["git"]["scanned"].as_u64().unwrap(), "{v}");
    let out = env.run(&["eval", "--repo", repo, "--from-git"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("\nskipped: ") && text.contains("1 dependency bump") && text.contains("1 docs commit"),
        "{text}"
    );

    // An answer search never returned, with a ranking shorter than the report keeps.
    let file = env.dir.path().join("q.jsonl");
    std::fs::write(&file, "{\"id\":\"a\",\"query\":\"strip comment lines settings\",\"gold\":[\"pkg/version.py\"]}\n")
        .unwrap();
    let out = env.run(&["eval", "--repo", repo, "--queries", file.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("pkg/version.py (not found; search found ") && !text.contains("not in the top"), "{text}");
}

/// tour 11 (L7): `docdex eval --repo .` said "evaluating search on ." where a run without
/// --repo named the repository's absolute path.
#[test]
fn the_repository_evaluated_is_named_by_its_absolute_path() {
    let env = Env::new();
    let root = history_repo(&env);
    let out = Command::new(env!("CARGO_BIN_EXE_docdex"))
        .args(["eval", "--repo", ".", "-n", "1"])
        .current_dir(&root)
        .env("DOCDEX_HOME", env.home())
        .env("NO_COLOR", "1")
        .output()
        .expect("run docdex");
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("evaluating search on {}", root.display())), "{err}");
}

/// A commit whose body is thousands of lines made a query of 100 KB or more, which search refuses: the
/// whole evaluation stopped with "query too long ... describe the task in fewer words" (tour 24 F1).
/// Its query is now the opening words, within what search takes.
#[test]
fn a_commit_with_an_enormous_message_makes_a_query_search_takes() {
    let env = Env::new();
    let root = env.repo("chatty");
    git(&root, &["init", "-q", "-b", "main"]);
    write(&root, "src/rotation.py", "def rotate(angle):\n    return angle % 360\n");
    commit(&root, "Initial import of the rotation helpers for the widgets");
    write(
        &root,
        "src/rotation.py",
        "def rotate(angle):\n    return angle % 360\n\ndef clamp(angle):\n    return max(0, angle)\n",
    );
    let body: String = (0..2_000).map(|i| format!("line {i} explains the rotation rework in detail\n")).collect();
    commit(&root, &format!("Keep negative widget angles from breaking the rotation\n\n{body}"));
    let report = env.engine().eval(&root, &git_request(5, 1), &quiet()).expect("eval");
    let query = report.queries.iter().map(|q| &q.query).find(|q| q.starts_with("Keep")).expect("the query");
    assert!(query.starts_with("Keep negative widget angles") && query.contains("line 0 explains"), "{query}");
    assert!(query.len() <= 4096, "{} bytes", query.len());
    assert_eq!(report.runs[0].metrics.n, 2);
}

/// A query file whose query search refuses (over 4,096 bytes) was read, the index brought up
/// to date, and the run stopped at that query naming none; an id or answer of 100,000
/// characters came back whole in the refusal (tour 24 F2, F6). Both are refused at once now,
/// naming the query by the start of its id.
#[test]
fn a_query_file_with_an_overlong_query_or_id_is_refused_up_front_and_quoted_short() {
    let env = Env::new();
    let root = env.repo("plain2");
    write(&root, "src/billing.py", "def render_invoice(order):\n    return order.total_with_tax\n");
    let file = env.dir.path().join("q.jsonl");
    let run_with = |text: String| {
        std::fs::write(&file, text).unwrap();
        let out = env.run(&["eval", "--repo", root.to_str().unwrap(), "--queries", file.to_str().unwrap()]);
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let long = "invoice ".repeat(1000);
    let (code, err) = run_with(format!("{{\"id\":\"wordy\",\"query\":\"{long}\",\"gold\":[\"src/billing.py\"]}}\n"));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(r#"query "wordy": query too long: 8000 bytes"#), "{err}");

    let (id, gold) = ("i".repeat(100_000), format!("src/{}", "p".repeat(100_000)));
    let (code, err) = run_with(format!("{{\"id\":\"{id}\",\"query\":\"render it\",\"gold\":[\"{gold}\"]}}\n"));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(&format!("query \"{}…\": answer \"src/{}…\" is not a file", "i".repeat(100), "p".repeat(96))),
        "{err}"
    );
    assert!(err.len() < 1000, "{} bytes", err.len());
}

/// `--compare FILE` with a file that is not a config (malformed TOML) exited 1, an error of
/// docdex's own, where every other bad `--compare` is bad input, exit 2 (tour 24 F3); a
/// directory was called "neither a config file that exists nor a setting" (F8).
#[test]
fn a_malformed_compare_file_is_bad_input_naming_the_flag() {
    let env = Env::new();
    let root = env.repo("cmp2");
    write(&root, "src/billing.py", "def render_invoice(order):\n    return order.total_with_tax\n");
    let queries = env.dir.path().join("q.jsonl");
    std::fs::write(&queries, "{\"id\":\"a\",\"query\":\"render the invoice total\",\"gold\":[\"src/billing.py\"]}\n")
        .unwrap();
    let config = env.dir.path().join("broken.toml");
    std::fs::write(&config, "[search\nfusion = \n").unwrap();
    let args = [
        "eval",
        "--repo",
        root.to_str().unwrap(),
        "--queries",
        queries.to_str().unwrap(),
        "--compare",
        config.to_str().unwrap(),
    ];
    let out = env.run(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("--compare config {}: TOML parse error", config.display())), "{err}");
    // A directory exists, though it is no config (tour 24 F8).
    let dir = env.dir.path().to_str().unwrap();
    let out = env.run(&["eval", "--repo", args[2], "--queries", args[4], "--compare", dir]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("--compare {dir:?} is a directory, not a config file")), "{err}");
}

/// `--since ''` (an unset shell variable) was read as no `--since` without a word, evaluating
/// the whole history (tour24 F7); it is a usage error, on the text and JSON paths alike, and the
/// engine itself refuses it (an empty `since` from any caller of `Engine::eval`) with the same
/// message: the refusal lives once, in `eval::since::check`.
#[test]
fn an_empty_since_is_refused_not_read_as_the_whole_history() {
    let env = Env::new();
    let root = history_repo(&env);
    let repo = root.to_str().unwrap();
    let engine = env.engine();
    for empty in ["", " \t "] {
        let req = EvalRequest {
            source: QuerySource::Git(GitSetOptions { n: 50, since: Some(empty.into()), seed: 1 }),
            compare: None,
            worst: 3,
        };
        let err = engine.eval(&root, &req, &quiet()).expect_err("an empty since is refused");
        assert!(matches!(err, docdex::error::Error::BadRequest(_)), "{empty:?}: {err:?}");
        assert!(err.to_string().contains("--since is empty") && err.to_string().contains("leave --since out"), "{err}");
    }
    drop(engine);
    for empty in ["", "  "] {
        let out = env.run(&["eval", "--repo", repo, "--from-git", "--since", empty]);
        assert_eq!(out.status.code(), Some(2), "{empty:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--since is empty") && err.contains("leave --since out"), "{err}");
    }
    let json = env.run(&["eval", "--repo", repo, "--since=", "--json"]);
    assert_eq!(json.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&json.stdout).contains("bad_request"), "{json:?}");
}

/// A repository where the words of a description sit in one file (`src/form.py`, the upload form) while
/// the change it describes was made in another (`src/transfer.py`), by a commit whose message
/// says so: only the history can tell them apart.
fn retry_repo(env: &Env) -> std::path::PathBuf {
    let root = env.repo("retry");
    git(&root, &["init", "-q", "-b", "main"]);
    write(
        &root,
        "src/form.py",
        "def upload_form():\n    \"\"\"The upload form, shown when the network is down.\"\"\"\n    return render('form')\n",
    );
    write(
        &root,
        "src/transfer.py",
        "def send_chunks(conn, blob):\n    # stops when a write fails over the network\n    for part in blob:\n        conn.write(part)\n",
    );
    write(&root, "src/report.py", "def monthly_report(rows):\n    return sum(r.total for r in rows)\n");
    commit_dated(&root, "Import the sources", "2024-01-01T00:00:00Z");
    write(
        &root,
        "src/transfer.py",
        "def send_chunks(conn, blob, tries=3):\n    # stops when a write fails over the network\n    for part in blob:\n        conn.write(part)\n",
    );
    commit_dated(&root, "Retry each upload when the network fails", "2024-02-01T00:00:00Z");
    root
}

#[test]
fn with_history_on_files_that_earlier_commits_like_the_query_touched_rank_higher() {
    let env = Env::new();
    let root = retry_repo(&env);
    let query = "retry an upload after the network fails";
    env.engine().index(&root, &docdex::engine::IndexOptions::default(), &quiet()).unwrap();
    assert_eq!(crate::util::hit_paths(&env.engine(), &root, query)[0], "src/form.py");
    let state_dir = env.engine().resolve_repo(&root).unwrap().state_dir;
    assert!(CommitHistory::cached(&state_dir).is_none(), "with the setting off, nothing reads the history");
    env.write_config("[search]\nhistory = true\n");
    let paths = crate::util::distinct(crate::util::hit_paths(&env.engine(), &root, query));
    // Read once, then kept beside the index for the commit HEAD names.
    let cached = CommitHistory::cached(&state_dir).expect("history cached");
    assert!(cached.files().contains(&"src/transfer.py".to_string()), "{cached:?}");
    assert_eq!(paths[0], "src/transfer.py", "{paths:?}");

    // A new commit moves HEAD: the history is read again, with it.
    write(&root, "src/report.py", "def monthly_report(rows, upload):\n    return sum(r.total for r in rows)\n");
    commit_dated(&root, "Retry uploads of the monthly report after network failures", "2024-03-01T00:00:00Z");
    env.engine().index(&root, &docdex::engine::IndexOptions::default(), &quiet()).unwrap();
    assert!(crate::util::hit_paths(&env.engine(), &root, query).contains(&"src/report.py".to_string()));
    let cached = CommitHistory::cached(&state_dir).expect("history cached");
    let head = Command::new("git").args(["rev-parse", "HEAD"]).current_dir(&root).output().unwrap();
    assert_eq!(cached.head, String::from_utf8_lossy(&head.stdout).trim());
    assert_eq!(cached.len(), 3, "{cached:?}");

    // With the setting on, an index run reads a moved HEAD's history itself: the search
    // after it does not wait for `git log`.
    write(&root, "src/form.py", "def upload_form(retry):\n    return render('form')\n");
    commit_dated(&root, "Offer a retry on the upload form", "2024-04-01T00:00:00Z");
    env.engine().index(&root, &docdex::engine::IndexOptions::default(), &quiet()).unwrap();
    let cached = CommitHistory::cached(&state_dir).expect("history cached by the index run");
    assert_eq!(cached.len(), 4, "read by `index`, before any search: {cached:?}");

    // Outside a git work tree search ranks as without the setting.
    let plain = env.repo("plain");
    write(&plain, "src/a.py", "def retry_upload():\n    pass\n");
    env.engine().index(&plain, &docdex::engine::IndexOptions::default(), &quiet()).unwrap();
    assert_eq!(crate::util::hit_paths(&env.engine(), &plain, query)[0], "src/a.py");
}

#[test]
fn a_query_built_from_a_commit_does_not_see_that_commit_in_the_history() {
    let env = Env::new();
    let root = retry_repo(&env);
    let req = EvalRequest {
        source: QuerySource::Git(GitSetOptions { n: 5, ..Default::default() }),
        compare: Some(CompareWith::Overrides(vec!["search.history=true".into()])),
        worst: 5,
    };
    let report = env.engine().eval(&root, &req, &quiet()).unwrap();
    assert_eq!(report.queries.len(), 1, "{:?}", report.queries);
    assert_eq!(report.queries[0].gold, ["src/transfer.py"]);
    // The only commit that names the answer is the query's own: hidden, the history adds
    // nothing, and both runs rank alike.
    let (plain, with) = (&report.runs[0].outcomes[0], &report.runs[1].outcomes[0]);
    assert_eq!(plain.ranking, with.ranking);
    assert_ne!(with.ranking[0], "src/transfer.py");
    // The same query searched with the whole history (as a user at HEAD would) reads its own
    // commit: the split is what keeps the evaluation honest.
    env.write_config("[search]\nhistory = true\n");
    let paths = crate::util::distinct(crate::util::hit_paths(&env.engine(), &root, &report.queries[0].query));
    assert_eq!(paths[0], "src/transfer.py", "{paths:?}");
    assert!(report.runs.iter().all(|r| r.warnings.is_empty()), "{:?}", report.runs[1].warnings);

    // A query file carries no commit times: with the history on, the run says what that means.
    let file = env.dir.path().join("queries.jsonl");
    std::fs::write(&file, serde_json::to_string(&report.queries[0]).unwrap()).unwrap();
    let req = EvalRequest { source: QuerySource::File(file), compare: None, worst: 5 };
    let from_file = env.engine().eval(&root, &req, &quiet()).unwrap();
    let warning = from_file.runs[0].warnings.join(" ");
    assert!(warning.contains("history is on") && warning.contains("1 of 1 queries came from a file"), "{warning}");
    assert_eq!(from_file.runs[0].outcomes[0].ranking[0], "src/transfer.py");
}

#[test]
fn where_vectors_take_part_the_history_is_left_out_and_without_them_it_counts() {
    use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
    let env = Env::new();
    let root = retry_repo(&env);
    let query = "retry an upload after the network fails";
    let server = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    let llm = crate::util::llm_config("ollama", &server.url(), "fake-chat", "fake-embed");
    env.write_config(&llm);
    env.engine().index(&root, &docdex::engine::IndexOptions::default(), &quiet()).unwrap();
    let ranked = |history: bool| {
        env.write_config(&format!("{llm}\n[search]\nhistory = {history}\n"));
        let req = SearchRequest { query: query.into(), ..Default::default() };
        let resp = env.engine().search(&root, &req).unwrap();
        (resp.retrieval.mode.clone(), crate::util::distinct(resp.results.into_iter().map(|h| h.path).collect()))
    };
    let (mode, without) = ranked(false);
    assert_eq!(mode, "hybrid");
    assert_eq!(ranked(true), (mode, without));
    // The embedder gone, search falls back to keywords, and there the history counts.
    drop(server);
    let (mode, paths) = ranked(true);
    assert_eq!(mode, "bm25");
    assert_eq!(paths[0], "src/transfer.py", "{paths:?}");
}
