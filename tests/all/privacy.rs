//! PII and secret masking: precision and recall on a labelled corpus of realistic fake secrets
//! and code that must stay untouched (tests/fixtures/pii/corpus.tsv), and `pii_redacted` in
//! search JSON telling the truth; and no surface indexing `/`, the home directory or a system
//! directory (where `/etc/shadow` would be read like source).

use crate::util::{llm_config, write, Env};
use docdex::engine::privacy;
use docdex::engine::protocol::{ChatTurnRequest, SearchRequest};
use docdex::engine::IndexOptions;
use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
use std::ops::ControlFlow;

#[test]
fn labelled_corpus_precision_and_recall() {
    let corpus = include_str!("../fixtures/pii/corpus.tsv");
    let (mut tp, mut fp, mut fneg) = (0usize, 0usize, 0usize);
    let mut misses = Vec::new();
    for line in corpus.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let (labels, text) = line.split_once('\t').expect("label TAB text");
        let mut expected: Vec<&str> = if labels == "-" { Vec::new() } else { labels.split(',').collect() };
        // A `⏎` is a line break: the lines around a value decide some cases.
        let text = &text.replace('⏎', "\n");
        let found: Vec<&str> = privacy::detect(text).iter().map(|f| f.kind.label()).collect();
        for k in &found {
            match expected.iter().position(|e| e == k) {
                Some(i) => {
                    expected.remove(i);
                    tp += 1;
                }
                None => {
                    fp += 1;
                    misses.push(format!("false positive {k}: {text}"));
                }
            }
        }
        fneg += expected.len();
        misses.extend(expected.iter().map(|k| format!("missed {k}: {text}")));
    }
    let precision = tp as f64 / (tp + fp).max(1) as f64;
    let recall = tp as f64 / (tp + fneg).max(1) as f64;
    eprintln!("PII corpus: {tp} true positives, {fp} false positives, {fneg} missed; precision {precision:.3}, recall {recall:.3}");
    for m in &misses {
        eprintln!("  {m}");
    }
    assert!(tp >= 30, "the corpus has its positives");
    // Masking a line of code or prose that holds no secret destroys a snippet: none is allowed.
    assert_eq!(fp, 0, "false positives: {misses:?}");
    assert!(recall >= 0.9, "recall {recall:.3}: {misses:?}");
}

/// Secrets given by name (two-word passphrases, short quoted values, one bare word in YAML) and
/// the code, schemas, labels, prose and command lines that name a password, a token or a secret
/// without giving one (tests/fixtures/pii/secrets.tsv): every secret is masked, and nothing
/// else on any line is.
#[test]
fn secrets_by_name_corpus() {
    let corpus = include_str!("../fixtures/pii/secrets.tsv");
    let (mut caught, mut positives, mut negatives) = (0usize, 0usize, 0usize);
    let mut wrong = Vec::new();
    for line in corpus.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let (label, text) = line.split_once('\t').expect("label TAB text");
        let text = text.replace('⏎', "\n");
        let found: Vec<&str> = privacy::detect(&text).iter().map(|f| f.kind.label()).collect();
        let masked = privacy::mask(&text).0;
        match label {
            "-" => {
                negatives += 1;
                if !found.is_empty() {
                    wrong.push(format!("false positive {found:?}: {masked}"));
                }
            }
            _ => {
                positives += 1;
                if found == [label] {
                    caught += 1;
                } else {
                    wrong.push(format!("missed {label} (found {found:?}): {masked}"));
                }
            }
        }
    }
    let false_positives = wrong.iter().filter(|w| w.starts_with("false")).count();
    eprintln!(
        "secrets corpus: caught {caught}/{positives}, {false_positives} false positives on {negatives} negatives"
    );
    for w in &wrong {
        eprintln!("  {w}");
    }
    assert!(positives >= 25 && negatives >= 150, "the corpus is read");
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// The shapes the secrets corpus added (one bare word in YAML, two words, a short quoted value)
/// are masked where text is served: a search snippet and an opened file, the rest kept.
#[test]
fn plain_word_and_short_secrets_are_masked_in_snippets_and_opened_files() {
    use docdex::engine::protocol::FileRequest;
    let env = Env::new();
    let repo = env.repo("r");
    let yml = "# Staging database for the billing workers.\ndatabase:\n  user: app\n  password: swordfish\n  \
               replica_password: correct horse\n  client_secret: \"q9x\"\n  host: db.internal\n";
    write(&repo, "config/db.yml", yml);
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &crate::util::quiet()).unwrap();
    let shown =
        |t: &str| ["swordfish", "correct horse", "q9x"].into_iter().filter(|s| t.contains(s)).collect::<Vec<_>>();
    let req = SearchRequest { query: "staging database billing workers".into(), ..Default::default() };
    let r = engine.search(&repo, &req).unwrap();
    let hit = r.results.iter().find(|h| h.path == "config/db.yml").expect("config/db.yml is a hit");
    assert!(r.pii_redacted && hit.snippet.contains("password: [SECRET]"), "{}", hit.snippet);
    assert!(shown(&hit.snippet).is_empty(), "{}", hit.snippet);
    let f = engine.get_file(&repo, &FileRequest::new("config/db.yml", None)).unwrap();
    assert!(f.pii_redacted && shown(&f.text).is_empty(), "{}", f.text);
    for kept in ["password: [SECRET]", "replica_password: [SECRET]", "client_secret: \"[SECRET]\"", "user: app"] {
        assert!(f.text.contains(kept), "{kept}: {}", f.text);
    }
}

/// The shapes added after them (a token's or a secret's two words, a short `NAME=value`, a
/// `_PASS` name, a capitalised YAML word, a YAML word in a flow mapping) are masked in an opened
/// file, and the code beside them (a JavaScript object literal) is not.
#[test]
fn short_env_values_capitalised_yaml_words_and_flow_mappings_are_masked_in_opened_files() {
    use docdex::engine::protocol::FileRequest;
    let env = Env::new();
    let repo = env.repo("r");
    write(
        &repo,
        "deploy/app.env",
        "# billing worker\nPASSWORD=hunter2\nDB_PASS=tr0ub4dor\nAPI_TOKEN=correct horse\nMODE=auto\n",
    );
    write(
        &repo,
        "deploy/db.yml",
        "database:\n  user: app\n  password: Swordfish\nenv: {\n  user: app,\n  password: letmein\n}\n",
    );
    write(&repo, "src/login.js", "const creds = {\n  username: name,\n  password: swordfish\n};\n");
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &crate::util::quiet()).unwrap();
    let open = |path: &str| engine.get_file(&repo, &FileRequest::new(path, None)).unwrap();
    let f = open("deploy/app.env");
    assert!(f.pii_redacted, "{}", f.text);
    for kept in ["PASSWORD=[SECRET]", "DB_PASS=[SECRET]", "API_TOKEN=[SECRET]", "MODE=auto"] {
        assert!(f.text.contains(kept), "{kept}: {}", f.text);
    }
    let f = open("deploy/db.yml");
    assert!(f.pii_redacted && !f.text.contains("Swordfish") && !f.text.contains("letmein"), "{}", f.text);
    let f = open("src/login.js");
    assert!(!f.pii_redacted && f.text.contains("password: swordfish"), "{}", f.text);
}

/// The shapes left over by the last change, in files as they come: docker-compose's
/// `environment:` with a short value after `:`, lower-case `_pass` names, a one-line YAML flow
/// mapping and a token right after its colon, masked when opened; a JavaScript literal and a
/// renderer's pass kept.
#[test]
fn short_yaml_values_pass_names_and_one_line_flow_mappings_are_masked_in_opened_files() {
    use docdex::engine::protocol::FileRequest;
    let env = Env::new();
    let repo = env.repo("r");
    write(
        &repo,
        "deploy/compose.yml",
        "services:\n  db:\n    environment:\n      POSTGRES_PASSWORD: hunter2\n      POSTGRES_USER: app\n",
    );
    write(
        &repo,
        "deploy/mail.yml",
        "smtp_pass: hunt3r\ncreds: {user: bob, password: hunter2}\napi_token:abc123def456ghi789  # ci\nmode: auto\n",
    );
    write(&repo, "src/render.js", "const pass = {\n  render_pass: shad0w,\n  creds: {user: bob, password: pw2}\n};\n");
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &crate::util::quiet()).unwrap();
    let open = |path: &str| engine.get_file(&repo, &FileRequest::new(path, None)).unwrap();
    let f = open("deploy/compose.yml");
    assert!(f.pii_redacted && f.text.contains("POSTGRES_PASSWORD: [SECRET]"), "{}", f.text);
    assert!(f.text.contains("POSTGRES_USER: app"), "{}", f.text);
    let f = open("deploy/mail.yml");
    for kept in ["smtp_pass: [SECRET]", "password: [SECRET]}", "api_token:[SECRET]  # ci", "mode: auto"] {
        assert!(f.text.contains(kept), "{kept}: {}", f.text);
    }
    let f = open("src/render.js");
    assert!(!f.pii_redacted && f.text.contains("password: pw2"), "{}", f.text);
}

#[test]
fn search_json_says_when_snippets_were_masked() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "deploy.md", "# Deploy\n\nThe release bot uses GITHUB_TOKEN=ghp_4fT9kQ2mZ8xR1vB7nL3pW6yH0sJ5dC2aE9uK for tags.\nAsk olena.kovalenko@brightpath.io for access.\n");
    write(&repo, "clean.md", "# Rollback\n\nRevert the release tag and redeploy the previous build.\n");
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &crate::util::quiet()).unwrap();
    let search = |q: &str| engine.search(&repo, &SearchRequest { query: q.into(), ..Default::default() }).unwrap();
    let r = search("release bot tags token");
    assert!(r.pii_redacted);
    let snip = &r.results[0].snippet;
    assert!(snip.contains("GITHUB_TOKEN=[API_KEY]") && !snip.contains("ghp_"), "{snip}");
    assert!(snip.contains("[EMAIL]@brightpath.io") && !snip.contains("olena"), "{snip}");
    let r = search("rollback revert previous build");
    assert_eq!(r.results[0].path, "clean.md");
    assert!(!r.pii_redacted, "nothing masked, so false");

    // Off by configuration: the snippet is the file's text and the flag is false.
    env.write_config("[privacy]\nredact_snippets = false\n");
    let engine = env.engine();
    let r =
        engine.search(&repo, &SearchRequest { query: "release bot tags token".into(), ..Default::default() }).unwrap();
    assert!(!r.pii_redacted);
    assert!(r.results[0].snippet.contains("ghp_4fT9"));
}

/// Masking changes a line's length (`alice@x.io` -> `[EMAIL]@x.io`): the query's words after a
/// masked value keep their highlights, moved to where the masked line has them (tour30 F1: they
/// were dropped, so a hit's snippet showed its matching word unmarked).
#[test]
fn highlights_after_a_masked_value_move_with_the_text() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "contact.py", "owner = \"alice@example.com\"  # privacymarker\n");
    write(&repo, "two.md", "Mail bob@corp.io or carol@corp.io, the quokkaword owners, and quokkaword again.\n");
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &crate::util::quiet()).unwrap();
    let marked = |q: &str| {
        let r = engine.search(&repo, &SearchRequest { query: q.into(), ..Default::default() }).unwrap();
        assert!(r.pii_redacted, "{q}");
        let h = &r.results[0];
        let lines: Vec<&str> = h.snippet.lines().collect();
        let words: Vec<String> = h
            .highlights
            .iter()
            .map(|hl| lines[(hl.line - h.snippet_line_start) as usize][hl.start..hl.end].to_string())
            .collect();
        (h.snippet.clone(), words)
    };
    let (snip, words) = marked("privacymarker");
    assert!(snip.contains("[EMAIL]@example.com") && !snip.contains("alice"), "{snip}");
    assert_eq!(words, ["privacymarker"], "{snip}");
    // Between and after two masked values, each occurrence keeps its own place.
    let (snip, words) = marked("quokkaword");
    assert!(!snip.contains("bob@") && !snip.contains("carol@"), "{snip}");
    assert_eq!(words, ["quokkaword", "quokkaword"], "{snip}");
    // A word inside the masked value is gone, and so is its highlight.
    let (_, words) = marked("alice");
    assert!(words.is_empty(), "{words:?}");
}

#[test]
fn local_only_refuses_a_remote_model_endpoint_unless_allowed() {
    let env = Env::new();
    env.write_config("[llm]\nprovider = \"openai\"\nbase_url = \"https://models.example.net/v1\"\n");
    let err = env.engine().provider().err().expect("refused");
    assert!(err.to_string().contains("local_only") && err.to_string().contains("allow_remote"), "{err}");
    env.write_config(
        "[llm]\nprovider = \"openai\"\nbase_url = \"https://models.example.net/v1\"\n[privacy]\nallow_remote = true\n",
    );
    assert!(env.engine().provider().is_ok(), "allowed explicitly");
    env.write_config("[llm]\nprovider = \"ollama\"\nbase_url = \"http://127.0.0.1:9\"\n");
    assert!(env.engine().provider().is_ok(), "loopback is always fine");
}

/// A broker URL with a password in a config file: the snippet keeps scheme and host, masks
/// `user:password`, and `pii_redacted` is true; sent to a model off this machine, the same
/// context is masked and the chat trace's `privacy` step names the kind.
#[test]
fn url_credentials_are_masked_in_snippets_and_before_a_remote_model() {
    const URL: &str = "amqp://celery:Tq8vR2mK9x@rabbit.internal:5672//";
    let server = FakeOllama::start(FakeOllamaOptions::default()).expect("fake server");
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "settings.py", format!("# Where the workers fetch jobs from.\nBROKER_URL = \"{URL}\"\n"));
    write(&repo, "README.md", "# Workers\n\nThe workers fetch jobs from the broker named in settings.py.\n");
    env.write_config(&llm_config("ollama", &server.url(), "fake-chat", "fake-embed"));
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &crate::util::quiet()).unwrap();
    let r =
        engine.search(&repo, &SearchRequest { query: "broker url workers jobs".into(), ..Default::default() }).unwrap();
    let hit = r.results.iter().find(|h| h.path == "settings.py").expect("settings.py is a hit");
    assert!(r.pii_redacted);
    assert!(hit.snippet.contains("amqp://[URL_CREDENTIALS]@rabbit.internal:5672//"), "{}", hit.snippet);
    assert!(!hit.snippet.contains("Tq8vR2mK9x") && !hit.snippet.contains("[EMAIL]"), "{}", hit.snippet);

    // 0.0.0.0 reaches the fake on this machine but is not a loopback address: the endpoint
    // counts as remote, so it needs allow_remote and gets masked context.
    let remote = server.url().replace("127.0.0.1", "0.0.0.0");
    env.write_config(&format!(
        "{}[privacy]\nallow_remote = true\n",
        llm_config("ollama", &remote, "fake-chat", "fake-embed")
    ));
    let req = ChatTurnRequest { query: "which broker do the workers fetch jobs from?".into(), ..Default::default() };
    let resp = env.engine().chat(&repo, &req, &mut |_| ControlFlow::Continue(())).expect("chat");
    let step = resp.trace.steps.iter().find(|s| s.name == "privacy").expect("a privacy step");
    assert!(step.detail.contains("URL_CREDENTIALS") && step.detail.contains("0.0.0.0"), "{}", step.detail);
    let sent = server.requests().into_iter().rev().find(|(p, _)| p == "/api/chat").expect("a chat request").1;
    let sent = sent["messages"].to_string();
    assert!(sent.contains("[URL_CREDENTIALS]@rabbit.internal") && !sent.contains("Tq8vR2mK9x"), "{sent}");
}

/// Chunks went to the embedding model as they were, even to a model off this machine
/// (`allow_remote`), while chat masked its messages before sending them: they are masked now.
#[test]
fn chunks_sent_to_a_remote_embedder_are_masked() {
    let server = FakeOllama::start(FakeOllamaOptions::default()).expect("fake server");
    let env = Env::new();
    let repo = env.repo("r");
    let url = "amqp://celery:Tq8vR2mK9x@rabbit.internal:5672//";
    write(&repo, "settings.py", format!("# Where the workers fetch jobs from.\nBROKER_URL = \"{url}\"\n"));
    // 0.0.0.0 reaches the fake on this machine but is not a loopback address.
    let remote = server.url().replace("127.0.0.1", "0.0.0.0");
    env.write_config(&format!(
        "{}[privacy]\nallow_remote = true\n",
        llm_config("ollama", &remote, "fake-chat", "fake-embed")
    ));
    env.engine().index(&repo, &IndexOptions::default(), &crate::util::quiet()).unwrap();
    let sent: Vec<String> =
        server.requests().into_iter().filter(|(p, _)| p == "/api/embed").map(|(_, b)| b.to_string()).collect();
    assert!(sent.iter().any(|b| b.contains("[URL_CREDENTIALS]@rabbit.internal")), "{sent:?}");
    assert!(!sent.iter().any(|b| b.contains("Tq8vR2mK9x")), "{sent:?}");
}

/// A search query went to a remote embedder as typed while the chunks it is matched against were
/// masked: a pasted secret left the machine. Queries (and memories) are masked the same way.
#[test]
fn search_queries_sent_to_a_remote_embedder_are_masked() {
    let server = FakeOllama::start(FakeOllamaOptions::default()).expect("fake server");
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "settings.py", "# Where the workers fetch jobs from.\nBROKER_HOST = \"rabbit.internal\"\n");
    // 0.0.0.0 reaches the fake on this machine but is not a loopback address.
    let remote = server.url().replace("127.0.0.1", "0.0.0.0");
    env.write_config(&format!(
        "{}[privacy]\nallow_remote = true\n",
        llm_config("ollama", &remote, "fake-chat", "fake-embed")
    ));
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &crate::util::quiet()).unwrap();
    let query = "why does amqp://celery:Tq8vR2mK9x@rabbit.internal:5672// fail";
    let r = engine.search(&repo, &SearchRequest { query: query.into(), ..Default::default() }).unwrap();
    assert!(r.retrieval.notice.is_none(), "vectors took part: {:?}", r.retrieval.notice);
    let sent: Vec<String> =
        server.requests().into_iter().filter(|(p, _)| p == "/api/embed").map(|(_, b)| b.to_string()).collect();
    assert!(sent.iter().any(|b| b.contains("amqp://[URL_CREDENTIALS]@rabbit.internal")), "{sent:?}");
    assert!(!sent.iter().any(|b| b.contains("Tq8vR2mK9x")), "{sent:?}");
}

#[test]
fn no_surface_indexes_the_filesystem_root_the_home_or_a_system_directory() {
    let env = crate::util::Env::new();
    for bad in ["/", "/etc", "/usr"] {
        let out = env.run(&["index", "--repo", bad]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{bad}: {err}");
        assert!(err.contains(&format!("refusing to index or serve {bad} as a repository")), "{bad}: {err}");
    }
    // The engine refuses it whichever way it is asked (the workbench's add prompt and the
    // watcher open the same index session), and nothing was registered or written.
    let engine = env.engine();
    let e = engine.index(std::path::Path::new("/etc"), &Default::default(), &crate::util::quiet()).unwrap_err();
    assert_eq!(e.code(), "forbidden_repo");
    assert!(engine.list_repos().expect("registry").is_empty());
    let states = env.home().join("state").join("repos");
    assert!(!states.exists() || std::fs::read_dir(&states).expect("read").next().is_none(), "no state was written");
}

#[tokio::test]
async fn files_the_index_leaves_out_are_not_served_either() {
    let env = Env::new();
    env.write_config("[index]\nmax_file_size_bytes = 4096\n");
    let repo = env.repo("proj");
    write(&repo, "src/app.py", "def main():\n    return 1\n");
    write(&repo, ".env", "OPENAI_API_KEY=sk-proj-Ab3dEf6hIj9kLmN0pQrStUvWxYz12345\n");
    write(&repo, ".git/config", "[remote \"origin\"]\n\turl = https://user:hunter22@example.com/x.git\n");
    write(&repo, ".gitignore", "secrets/\n");
    write(&repo, "secrets/db.txt", "postgres://admin:hunter22@db/prod\n");
    write(&repo, "logs/big.log", "a line of a large log file\n".repeat(400));
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    let engine = env.engine();
    use docdex::engine::protocol::FileRequest;
    assert!(engine.get_file(&repo, &FileRequest::new("src/app.py", None)).is_ok(), "an indexed file is served");
    for (path, why) in [
        (".env", "hidden or ignored"),
        (".git/config", "inside `.git`, which is never indexed"),
        ("secrets/db.txt", "hidden or ignored"),
        ("logs/big.log", "10.5 KB, over the 4.0 KB limit"),
    ] {
        let e = engine.get_file(&repo, &FileRequest::new(path, Some((1, 1)))).unwrap_err();
        assert_eq!(e.code(), "path_not_served", "{path}: {e}");
        assert!(e.to_string().contains(why), "{path}: {e}");
    }
    // A missing file is not found; a path leaving the repository is outside whether or not
    // something exists there (no existence oracle).
    let code = |p: &str| engine.get_file(&repo, &FileRequest::new(p, None)).unwrap_err().code();
    assert_eq!(code("src/nope.py"), "not_found");
    // Through a link in the repository to a folder outside it: outside, existing or not.
    let away = env.repo("elsewhere");
    write(&away, "present.txt", "x\n");
    std::os::unix::fs::symlink(&away, repo.join("away")).unwrap();
    for outside in [
        "../nope.txt",
        "../proj/../../x",
        "/nonexistent/dir/x.py",
        "/etc/passwd",
        "away/present.txt",
        "away/absent.txt",
        "away/no/such/dir/x.py",
    ] {
        assert_eq!(code(outside), "path_outside_repo", "{outside}");
    }
    let impact = |f: &str| {
        let req = docdex::engine::protocol::ImpactRequest { file: f.into(), ..Default::default() };
        engine.impact(&repo, &req).unwrap_err().code()
    };
    assert_eq!(impact("away/present.txt"), impact("away/absent.txt"));
    // The command line says so and exits 2 (bad input), printing nothing of the file.
    let out = env.run(&["get", "--repo", r, ".env"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("sk-proj"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("neither indexes nor serves it"));
    // Over HTTP: 403 path_not_served.
    let server = crate::server_util::Server::start(&env, &["serve", "--repo", r], &[]);
    let c = crate::server_util::client();
    for path in [".env", ".git%2Fconfig", "secrets%2Fdb.txt", "logs%2Fbig.log"] {
        let resp = c.get(server.url(&format!("/v1/open?path={path}"))).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 403, "{path}");
        let body = resp.text().await.unwrap();
        assert!(body.contains("path_not_served") && !body.contains("hunter22") && !body.contains("sk-proj"), "{body}");
    }
}

/// A fake `openssl genrsa`-style key body: `n` lines of 64 base64 characters and a short last
/// one (deterministic xorshift, random-looking: both cases, digits, `+` and `/`).
fn fake_key_body(n: usize) -> Vec<String> {
    const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut line = |len: usize| -> String {
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                B64[(x % 64) as usize] as char
            })
            .collect()
    };
    let mut out: Vec<String> = (0..n).map(|_| line(64)).collect();
    out.push(format!("{}==", line(42)));
    out
}

/// The tester's repro: an indented RSA key in deploy variables after 30 settings. A search for a
/// fragment of one key line hits chunks that start below the `BEGIN` line (or whose snippet
/// does): no key line may show, in search (engine and command line) or a context pack.
#[test]
fn a_private_key_is_masked_wherever_a_snippet_or_chunk_cuts_it() {
    let env = Env::new();
    let repo = env.repo("r");
    let body = fake_key_body(18);
    let mut lines = vec!["all:".to_string(), "  vars:".to_string()];
    lines.extend((0..30).map(|i| format!("    setting_{i}: value{i}")));
    lines.push("    tls_key: |".into());
    lines.push("      -----BEGIN RSA PRIVATE KEY-----".into());
    lines.extend(body.iter().map(|l| format!("      {l}")));
    lines.push("      -----END RSA PRIVATE KEY-----".into());
    lines.push("    other: 1".into());
    write(&repo, "deploy/vars.yml", lines.join("\n") + "\n");
    write(&repo, "README.md", "# Deploy\n\nThe TLS key lives in the deploy variables.\n");
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &crate::util::quiet()).unwrap();
    let leaked = |text: &str| body.iter().filter(|l| text.contains(&l[8..40])).count();
    // The key's body is not indexed (a_private_keys_body_is_not_indexed): the chunks that cut
    // the key are found by the words around it.
    for query in ["setting_29 value29", "tls_key", "rsa private key"] {
        let r = engine.search(&repo, &SearchRequest { query: query.to_string(), ..Default::default() }).unwrap();
        let hits: Vec<_> = r.results.iter().filter(|h| h.path == "deploy/vars.yml").collect();
        assert!(!hits.is_empty(), "the key's chunks are found for {query}");
        for h in &hits {
            assert_eq!(leaked(&h.snippet), 0, "{}: {}", h.chunk_id, h.snippet);
            assert!(h.snippet.lines().count() > 0);
        }
        assert!(r.pii_redacted || hits.iter().all(|h| h.line_end < 34 && h.context.is_empty()), "{query}");
        let out = env.json(&["search", "--repo", repo.to_str().unwrap(), query, "--json"]);
        assert_eq!(leaked(&out.to_string()), 0, "command line: {out}");
        let req = docdex::engine::protocol::ContextRequest { task: format!("tls key {query}"), ..Default::default() };
        let pack = engine.context(&repo, &req).unwrap();
        for s in &pack.snippets {
            assert_eq!(leaked(&s.text), 0, "{}:{}-{}: {}", s.path, s.line_start, s.line_end, s.text);
        }
        // The pack's note counts the key once per snippet that shows part of it (lines 34-53),
        // not only in the snippet holding its BEGIN line.
        let showing =
            pack.snippets.iter().filter(|s| s.path == "deploy/vars.yml" && s.line_start <= 53 && 34 <= s.line_end);
        let n = showing.count();
        let note = format!("{n} finding{} masked in the snippets", if n == 1 { "" } else { "s" });
        assert!(n == 0 || pack.notes.iter().any(|x| x.starts_with(&note)), "{note}: {:?}", pack.notes);
    }
}

/// `deploy/vars.yml` with an RSA key (lines 4-23: BEGIN, 18 full body lines and a short one,
/// END) between settings; returns the text and the key's body lines.
fn vars_with_key() -> (String, Vec<String>) {
    let body = fake_key_body(18);
    let mut lines = vec!["cluster:".to_string(), "  replicas: three".into(), "  tls_key: |".into()];
    lines.push("    -----BEGIN RSA PRIVATE KEY-----".into());
    lines.extend(body.iter().map(|l| format!("    {l}")));
    lines.push("    -----END RSA PRIVATE KEY-----".into());
    lines.push("  region: europe".into());
    (lines.join("\n") + "\n", body)
}

/// A private key's body was indexed as words (base64 split at `+` and `/`; pieces under 48 bytes
/// kept), so a piece of a key line found the key's chunks. A word only the key holds now finds
/// nothing, while the file's other words still find it.
#[test]
fn a_private_keys_body_is_not_indexed() {
    let env = Env::new();
    let repo = env.repo("r");
    let (text, body) = vars_with_key();
    write(&repo, "deploy/vars.yml", &text);
    write(&repo, "README.md", "# Deploy\n\nThe cluster settings live in the deploy variables.\n");
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &crate::util::quiet()).unwrap();
    use docdex::engine::analysis::terms;
    let elsewhere: std::collections::HashSet<String> =
        terms(&text.lines().filter(|l| !body.iter().any(|b| l.contains(b.as_str()))).collect::<Vec<_>>().join("\n"))
            .into_iter()
            .chain(terms("Deploy The cluster settings live in the deploy variables"))
            .collect();
    let pieces: Vec<&str> = body
        .iter()
        .flat_map(|l| l.split(['+', '/', '=']))
        .filter(|w| w.len() >= 8 && terms(w).iter().all(|t| !elsewhere.contains(t)))
        .take(6)
        .collect();
    assert!(pieces.len() >= 4, "{pieces:?}");
    let search = |q: &str| engine.search(&repo, &SearchRequest { query: q.into(), ..Default::default() }).unwrap();
    for piece in pieces {
        let r = search(piece);
        assert!(r.results.iter().all(|h| h.path != "deploy/vars.yml"), "{piece}: {:?}", r.results);
    }
    for word in ["replicas", "europe", "tls_key"] {
        assert!(search(word).results.iter().any(|h| h.path == "deploy/vars.yml"), "{word}");
    }
}

/// `docdex get`, `GET /v1/open` and MCP `docdex_open` served a file's text unmasked while search
/// masked the same lines. They mask it now (a key cut by the range too), with `pii_redacted`;
/// `[privacy] redact_snippets = false` serves it as it is.
#[tokio::test]
async fn opened_files_are_masked_as_snippets_are() {
    let env = Env::new();
    let repo = env.repo("r");
    let (vars, body) = vars_with_key();
    write(&repo, "deploy/vars.yml", &vars);
    write(
        &repo,
        "config/app.ini",
        "[db]\nhost = db.internal\npassword = hunter2hunter2\nowner = jane.doe@acme-corp.com\n",
    );
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    let raw = |t: &str| {
        let mut shown: Vec<&str> = ["hunter2hunter2", "jane.doe"].into_iter().filter(|s| t.contains(s)).collect();
        shown.extend(body.iter().filter(|b| t.contains(&b[..40])).map(|_| "a key line"));
        shown
    };
    use docdex::engine::protocol::FileRequest;
    let engine = env.engine();
    for (path, range) in [("config/app.ini", None), ("deploy/vars.yml", None), ("deploy/vars.yml", Some((9, 12)))] {
        let f = engine.get_file(&repo, &FileRequest::new(path, range)).unwrap();
        assert!(raw(&f.text).is_empty() && f.pii_redacted, "{path} {range:?}: {}", f.text);
        let shown = f.text.split('\n').count() as u32;
        assert_eq!(shown, f.line_end + 1 - f.line_start, "{path}: the line count is kept");
    }
    let f = engine.get_file(&repo, &FileRequest::new("config/app.ini", None)).unwrap();
    assert!(f.text.contains("password = [SECRET]") && f.text.contains("[EMAIL]@acme-corp.com"), "{}", f.text);
    let cli = env.json(&["get", "--repo", r, "config/app.ini", "--json"]);
    assert!(raw(&cli.to_string()).is_empty() && cli["pii_redacted"] == true, "{cli}");
    let server = crate::server_util::Server::start(&env, &["serve", "--repo", r], &[]);
    let c = crate::server_util::client();
    for path in ["config%2Fapp.ini", "deploy%2Fvars.yml"] {
        let body = c.get(server.url(&format!("/v1/open?path={path}"))).send().await.unwrap().text().await.unwrap();
        assert!(raw(&body).is_empty() && body.contains("\"pii_redacted\":true"), "{body}");
    }
    let mut mcp = crate::util::McpStdio::start(&env, &["--repo", r], serde_json::json!({}));
    let answer = mcp.call("docdex_open", serde_json::json!({ "path": "deploy/vars.yml" }));
    let text = answer["content"][0]["text"].as_str().unwrap_or("").to_string();
    assert!(raw(&text).is_empty() && text.contains("[PRIVATE_KEY]"), "{answer}");
    // The opt-out shows the file as it is.
    env.write_config("[privacy]\nredact_snippets = false\n");
    let f = env.engine().get_file(&repo, &FileRequest::new("config/app.ini", None)).unwrap();
    assert!(f.text.contains("hunter2hunter2") && !f.pii_redacted, "{}", f.text);
}

/// Symbol signatures and AST samples are masked as search snippets are, on every surface
/// (they all ask the engine): the raw values came back before.
#[test]
fn symbols_and_ast_samples_are_masked() {
    let env = Env::new();
    let repo = env.repo("r");
    write(
        &repo,
        "src/keys.rs",
        concat!(
            "pub const DB_PASSWORD: &str = \"Tq8vR2mK9x!\";\n",
            "pub const AWS_KEY: &str = \"AKIAQWERTYUIOP987654\";\n",
            "pub const GH_TOKEN: &str = \"ghp_4fT9kQ2mZ8xR1vB7nL3pW6yH0sJ5dC2aE9uK\";\n",
            "pub const DB_URL: &str = \"postgres://root:Sup3rS3cretPw@db.internal:5432/app\";\n",
            "pub fn connect() -> u32 {\n    1\n}\n",
        ),
    );
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &crate::util::quiet()).unwrap();
    let raw = ["AKIAQWERTYUIOP987654", "ghp_4fT9", "Sup3rS3cretPw", "Tq8vR2mK9x"];
    let shows = |text: &str| raw.iter().filter(|r| text.contains(*r)).copied().collect::<Vec<_>>();
    use docdex::engine::protocol::{AstQueryRequest, SymbolsRequest};
    let by_name =
        engine.symbols(&repo, &SymbolsRequest { query: Some("AWS_KEY".into()), ..Default::default() }).unwrap();
    let sig = &by_name.results.iter().find(|h| h.name == "AWS_KEY").expect("AWS_KEY").signature;
    assert_eq!(sig, "pub const AWS_KEY: &str = \"[API_KEY]\"");
    let outline =
        engine.symbols(&repo, &SymbolsRequest { file: Some("src/keys.rs".into()), ..Default::default() }).unwrap();
    assert_eq!(outline.results.len(), 5);
    for h in &outline.results {
        assert!(shows(&h.signature).is_empty(), "{}", h.signature);
    }
    let req = AstQueryRequest { kinds: vec!["const_item".into()], sample_limit: Some(10), ..Default::default() };
    let ast = engine.ast_query(&repo, &req).unwrap();
    let samples: Vec<&str> = ast.results.iter().flat_map(|f| f.samples.iter().map(|s| s.text.as_str())).collect();
    assert_eq!(samples.len(), 3, "the first three of a kind are kept as samples");
    for s in &samples {
        assert!(shows(s).is_empty(), "{s}");
    }
    assert!(samples.contains(&"pub const DB_PASSWORD: &str = \"[SECRET]\";"), "{samples:?}");
    // Off by configuration: the values as written.
    env.write_config("[privacy]\nredact_snippets = false\n");
    let engine = env.engine();
    let ast = engine.ast_query(&repo, &req).unwrap();
    assert!(ast.results[0].samples.iter().any(|s| s.text.contains("AKIAQWERTYUIOP987654")));
}
