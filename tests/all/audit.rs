//! Audits (`docdex audit duplicates|conflicts`) on fixture docs the tests write: planted exact
//! copies, near copies and rewordings, planted contradictions and look-alikes that must NOT
//! be reported. Each test says which similarity path it covers: MinHash (no embedder) or
//! embeddings (the fake Ollama's deterministic bag-of-words vectors).

use crate::util::{dead_url, llm_config, quiet, write, Env};
use docdex::engine::protocol::{
    ConflictKind, ConflictsRequest, ConflictsResponse, DuplicateKind, DuplicatesRequest, DuplicatesResponse,
    SimilarityMethod,
};
use docdex::engine::IndexOptions;
use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
use docdex::Engine;
use std::path::Path;

/// About a hundred words on installing, one Markdown section (one chunk).
const INSTALL: &str = "# Installing the command line\n\nDownload the archive for your platform from the release page and unpack it into a directory on your path. \
The archive holds one static binary and a short manual. Run the binary once with the version flag to check that the shell \
finds it, then run the setup command, which writes a default configuration file into your home directory and creates the \
state folder beside it. Nothing else is written anywhere, and nothing is sent over the network. To remove the tool later, \
delete the binary, the configuration file and the state folder; there is no uninstaller because there is nothing else to undo \
at the end of the day.\n";

fn fixture(root: &Path) {
    write(root, "docs/install.md", INSTALL);
    // The same text wrapped differently: an exact duplicate (whitespace aside).
    write(root, "guide/install-copy.md", INSTALL.replace(". ", ".\n"));
    // One word changed at the very end: a near duplicate for any method.
    write(root, "guide/install-edited.md", INSTALL.replace("end of the day", "end of the week"));
    // The same sentences in another order, two words swapped for synonyms: a rewording.
    // Embeddings see the same words; 3-shingles across the new sentence joins do not match.
    let sentences: Vec<&str> = INSTALL.lines().nth(2).unwrap().split(". ").collect();
    let mut reordered: Vec<&str> = sentences.iter().rev().copied().collect();
    reordered.rotate_left(1);
    let reworded = format!("# Installing the command line\n\n{}\n", reordered.join(". ").replace("Download", "Fetch"));
    write(root, "notes/reworded.md", reworded.replace("short manual", "brief manual"));
    // A look-alike: same template and topic words, different content. Not a duplicate.
    write(
        root,
        "docs/server.md",
        "# Installing the server\n\nDownload the container image from the registry and start it with the compose file from the \
         examples folder. The image listens on one port and keeps its data in a named volume. Check the health endpoint to see \
         that the service answers, then create the first administrator account from the web page. Backups are copies of the \
         volume; restore one by stopping the container, replacing the volume and starting it again.\n",
    );
    // Short chunks repeat everywhere (a closing line, a heading): never reported.
    write(root, "docs/a.md", "# See also\n\nThe changelog.\n");
    write(root, "docs/b.md", "# See also\n\nThe changelog.\n");
    write(root, "src/lib.rs", "pub fn answer() -> u32 {\n    42\n}\n");
}

fn index(engine: &Engine, repo: &Path) {
    engine.index(repo, &IndexOptions::default(), &quiet()).expect("index");
}

fn paths(r: &DuplicatesResponse, kind: DuplicateKind) -> Vec<Vec<String>> {
    r.groups.iter().filter(|g| g.kind == kind).map(|g| g.items.iter().map(|i| i.path.clone()).collect()).collect()
}

#[test]
fn duplicates_by_minhash_find_copies_and_edits_but_not_rewordings_or_look_alikes() {
    // Path: MinHash (no embedder configured).
    let env = Env::new();
    let repo = env.repo("r");
    fixture(&repo);
    let engine = env.engine();
    index(&engine, &repo);
    let r = engine.audit_duplicates(&repo, &DuplicatesRequest::default()).expect("audit");
    assert_eq!(r.method, SimilarityMethod::Minhash, "{r:?}");
    assert!(r.notice.as_deref().is_some_and(|n| n.contains("MinHash")), "{:?}", r.notice);
    assert_eq!(r.threshold, 0.92);
    assert_eq!(paths(&r, DuplicateKind::Exact), [vec!["docs/install.md", "guide/install-copy.md"]], "{r:#?}");
    // The near group: the exact pair (compared once) and the edited copy; not the rewording.
    assert_eq!(
        paths(&r, DuplicateKind::Near),
        [vec!["docs/install.md", "guide/install-copy.md", "guide/install-edited.md"]],
        "{r:#?}"
    );
    let near = r.groups.iter().find(|g| g.kind == DuplicateKind::Near).unwrap();
    assert!(near.items.iter().all(|i| (0.92..1.0).contains(&i.score)), "{near:?}");
    assert_eq!(r.groups_total, 2);
    assert!(!r.capped && r.limits.is_empty());
    assert_eq!(r.schema_version, 1);
    assert_eq!(r.kind, "duplicates");

    // Even at a low threshold the look-alike on the same topic stays apart.
    let low = engine.audit_duplicates(&repo, &DuplicatesRequest { threshold: Some(0.5), limit: None }).unwrap();
    assert!(!low.groups.iter().flat_map(|g| &g.items).any(|i| i.path == "docs/server.md"), "{low:#?}");

    let bad = engine.audit_duplicates(&repo, &DuplicatesRequest { threshold: Some(1.5), limit: None }).unwrap_err();
    assert!(bad.to_string().contains("out of range"), "{bad}");
}

#[test]
fn duplicates_by_embeddings_also_find_the_rewording() {
    // Path: embeddings (fake Ollama: bags of words, so a reordering keeps its direction).
    let server = FakeOllama::start(FakeOllamaOptions::default()).expect("fake");
    let env = Env::new();
    let repo = env.repo("r");
    fixture(&repo);
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    index(&engine, &repo);
    let r = engine.audit_duplicates(&repo, &DuplicatesRequest::default()).expect("audit");
    assert_eq!(r.method, SimilarityMethod::Embeddings, "{r:?}");
    assert_eq!(paths(&r, DuplicateKind::Exact), [vec!["docs/install.md", "guide/install-copy.md"]]);
    assert_eq!(
        paths(&r, DuplicateKind::Near),
        [vec!["docs/install.md", "guide/install-copy.md", "guide/install-edited.md", "notes/reworded.md"]],
        "{r:#?}"
    );
}

#[test]
fn duplicates_over_the_cli_as_json_and_the_changed_file_is_skipped() {
    // Path: MinHash.
    let env = Env::new();
    let repo = env.repo("r");
    fixture(&repo);
    let r = repo.to_str().unwrap();
    assert!(env.run(&["index", "--repo", r]).status.success());
    let v = env.json(&["audit", "duplicates", "--repo", r, "--json"]);
    assert_eq!(v["type"], "duplicates");
    assert_eq!(v["method"], "minhash");
    assert_eq!(v["groups"][0]["kind"], "exact");
    assert_eq!(v["groups"][0]["items"][0]["path"], "docs/install.md");
    assert_eq!(v["groups"][0]["items"][0]["line_start"], 1);
    // Edited after indexing: its indexed lines no longer hold, so it is left out and counted.
    write(&repo, "guide/install-edited.md", "# Gone\n\nRewritten since.\n");
    let v = env.json(&["audit", "duplicates", "--repo", r, "--json"]);
    assert!(v["notice"].as_str().unwrap().contains("1 file changed since indexed and skipped"), "{v}");
    let human = env.run(&["audit", "duplicates", "--repo", r]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("exact duplicates (2 chunks)") && text.contains("docs/install.md:1-"), "{text}");
    // A limit out of range is refused as `audit conflicts --top` refuses it: 0 answered one
    // group, 20000 was taken though at most 10,000 are.
    for n in ["0", "10001", "20000"] {
        let out = env.run(&["audit", "duplicates", "--repo", r, "-n", n, "--json"]);
        assert!(!out.status.success(), "-n {n}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["error"]["code"], "bad_request", "{v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert_eq!(message, format!("limit {n} is out of range: give 1 to 10000"));
    }
    let v = env.json(&["audit", "duplicates", "--repo", r, "-n", "10000", "--json"]);
    assert_eq!(v["type"], "duplicates");
    let unindexed = env.repo("empty");
    let out = env.run(&["audit", "duplicates", "--repo", unindexed.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("index"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn duplicates_say_when_a_bound_cut_the_search() {
    // Path: MinHash. 300 near copies share every LSH bucket: more than a bucket may pair.
    let env = Env::new();
    let repo = env.repo("r");
    for i in 0..300 {
        write(&repo, &format!("docs/n{i}.md"), INSTALL.replace("end of the day", &format!("end of day {i}")));
    }
    let engine = env.engine();
    index(&engine, &repo);
    let r = engine.audit_duplicates(&repo, &DuplicatesRequest { threshold: None, limit: Some(5) }).unwrap();
    assert!(r.capped, "{r:?}");
    assert!(r.limits.iter().any(|l| l.contains("capped")), "{:?}", r.limits);
    assert_eq!(r.groups.len(), 1, "one group of near copies");
    assert!(r.groups[0].items.len() >= 256, "{}", r.groups[0].items.len());
}

/// Planted contradictions (a number, a version, a default, a negation) and look-alikes that
/// agree, spread over docs the way they drift in real projects.
fn conflict_fixture(root: &Path) {
    write(
        root,
        "docs/auth.md",
        "# Authentication\n\nRefresh tokens rotate every 24 hours and are stored in the session database.\n\n\
         Sessions expire after 24 hours of inactivity.\n\n\
         The server requires Python 3.10.2 or later.\n\n\
         Compression defaults to lz4 for new tables.\n\n\
         The cache directory is shared between users of one machine.\n\n\
         A token is not required for local clients on the loopback interface.\n\n\
         The read timeout is 30 seconds for every upstream request.\n",
    );
    write(
        root,
        "docs/security.md",
        "# Security\n\nRefresh tokens rotate every 7 days and are stored in the session database.\n\n\
         Sessions expire after 1 day of inactivity.\n\n\
         The server requires Python 3.11.4 or later.\n\n\
         Compression defaults to zstd for new tables.\n\n\
         The cache directory is not shared between users of one machine.\n\n\
         A token is optional for local clients on the loopback interface.\n\n\
         The write timeout is 60 seconds for every upstream request.\n\n\
         The default port was 8080 before version 2 of the server.\n",
    );
    write(root, "docs/ports.md", "# Ports\n\nThe default port is 9090 for the HTTP server of the project.\n");
    // Code is not documentation: different constants there are no contradiction.
    write(
        root,
        "src/config.py",
        "# Refresh tokens rotate every 12 hours and are stored in the session database.\nTTL = 12\n",
    );
    write(
        root,
        "CHANGELOG.md",
        "# Changes\n\nRefresh tokens rotate every 48 hours and are stored in the session database.\n",
    );
}

fn kinds(r: &ConflictsResponse) -> Vec<(ConflictKind, String, String)> {
    let mut v: Vec<_> = r.pairs.iter().map(|p| (p.kind, p.a.text.clone(), p.b.text.clone())).collect();
    v.sort_by(|a, b| a.1.cmp(&b.1));
    v
}

#[test]
fn conflicts_find_each_planted_contradiction_and_no_look_alike() {
    // Path: no model (the default endpoint is dead here): heuristic explanations.
    let env = Env::new();
    env.write_config(&llm_config("ollama", &dead_url(), "fake-chat", "fake-embed"));
    let repo = env.repo("r");
    conflict_fixture(&repo);
    let engine = env.engine();
    index(&engine, &repo);
    let r = engine.audit_conflicts(&repo, &ConflictsRequest::default()).expect("audit");
    let found = kinds(&r);
    let expected = [
        (ConflictKind::Default, "Compression defaults to lz4 for new tables."),
        (ConflictKind::Version, "The server requires Python 3.10.2 or later."),
        (ConflictKind::Number, "Refresh tokens rotate every 24 hours and are stored in the session database."),
        (ConflictKind::Negation, "The cache directory is shared between users of one machine."),
    ];
    assert_eq!(found.len(), expected.len(), "exactly the planted ones: {found:#?}");
    for (kind, text) in expected {
        assert!(found.iter().any(|(k, a, b)| *k == kind && (a == text || b == text)), "{kind:?} {text}: {found:#?}");
    }
    // Every pair crosses auth.md and security.md: the look-alikes (24 h = 1 day, not required =
    // optional, read vs write timeout, the port's history, code, the changelog) are not there.
    for p in &r.pairs {
        assert_eq!((p.a.path.as_str(), p.b.path.as_str()), ("docs/auth.md", "docs/security.md"), "{p:?}");
        assert_eq!(p.explained_by, "heuristic");
        assert_eq!(p.explanation, p.reason);
        assert!(p.similarity >= 0.8);
    }
    let number = r.pairs.iter().find(|p| p.kind == ConflictKind::Number).unwrap();
    assert!(number.reason.contains("1 day") && number.reason.contains("7 day"), "{}", number.reason);
    assert_eq!((number.a.line_start, number.b.line_start), (3, 3));
    assert!(r.notice.as_deref().is_some_and(|n| n.contains("no model explanation")), "{:?}", r.notice);
    assert_eq!(r.kind, "conflicts");
    assert_eq!(r.min_similarity, 0.8);
    assert!(!r.capped);

    let top = engine
        .audit_conflicts(&repo, &ConflictsRequest { top: Some(2), explain: Some(false), ..Default::default() })
        .unwrap();
    assert_eq!((top.pairs.len(), top.pairs_total), (2, 4));
    assert!(top.notice.is_none(), "not asked, so nothing to say about the model: {:?}", top.notice);
    assert!(engine.audit_conflicts(&repo, &ConflictsRequest { top: Some(0), ..Default::default() }).is_err());
}

#[test]
fn conflicts_are_explained_by_the_model_when_one_answers() {
    // Path: model explanation through the fake Ollama (scripted reply), embeddings present.
    let server = FakeOllama::start(FakeOllamaOptions::default()).expect("fake");
    let env = Env::new();
    let repo = env.repo("r");
    conflict_fixture(&repo);
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    index(&engine, &repo);
    let r = engine.audit_conflicts(&repo, &ConflictsRequest { top: Some(2), ..Default::default() }).expect("audit");
    assert_eq!(r.pairs.len(), 2);
    for p in &r.pairs {
        assert_eq!(p.explained_by, "model", "{p:?}");
        assert!(p.explanation.starts_with("FAKE ANSWER"), "{}", p.explanation);
        assert!(
            p.explanation.contains(&format!("{}:{}-{}", p.a.path, p.a.line_start, p.a.line_end)),
            "{}",
            p.explanation
        );
    }
    let asked = server.chats_with("how do passage A and passage B disagree");
    assert_eq!(asked.len(), 2, "one question per pair");
    assert!(asked[0].to_string().contains(&r.pairs[0].a.text), "the passages reach the model");
    assert!(r.notice.is_none(), "{:?}", r.notice);
}

#[test]
fn conflicts_over_the_cli_and_http() {
    // Path: heuristic (no model); the same engine call over the command line and HTTP.
    use crate::server_util::{client, Server};
    let env = Env::new();
    env.write_config(&llm_config("ollama", &dead_url(), "fake-chat", "fake-embed"));
    let repo = env.repo("r");
    conflict_fixture(&repo);
    let r = repo.to_str().unwrap();
    assert!(env.run(&["index", "--repo", r]).status.success());
    let v = env.json(&["audit", "conflicts", "--repo", r, "--top", "3", "--no-model", "--json"]);
    assert_eq!(v["type"], "conflicts");
    assert_eq!(v["pairs"].as_array().unwrap().len(), 3);
    assert_eq!(v["pairs_total"], 4);
    let human = env.run(&["audit", "conflicts", "--repo", r, "--min-sim", "0.8", "--no-model"]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("docs/auth.md:3") && text.contains("docs/security.md:3"), "{text}");
    let bad = env.run(&["audit", "conflicts", "--repo", r, "--min-sim", "2"]);
    assert!(!bad.status.success());

    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = Server::start(&env, &["serve", "--repo", r, "--no-watch"], &[]);
    rt.block_on(async {
        let resp = client()
            .post(server.url("/v1/audit/conflicts"))
            .json(&serde_json::json!({"top": 2, "explain": false}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        let v: serde_json::Value = resp.json().await.unwrap();
        assert_eq!(v["pairs"].as_array().unwrap().len(), 2, "{v}");
        let resp = client().post(server.url("/v1/audit/duplicates")).json(&serde_json::json!({})).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        let v: serde_json::Value = resp.json().await.unwrap();
        assert_eq!(v["type"], "duplicates");
        for limit in [0, 20_000] {
            let bad = client()
                .post(server.url("/v1/audit/duplicates"))
                .json(&serde_json::json!({"limit": limit}))
                .send()
                .await
                .unwrap();
            assert_eq!(bad.status().as_u16(), 400, "limit {limit}");
            let v: serde_json::Value = bad.json().await.unwrap();
            assert!(v.to_string().contains(&format!("limit {limit} is out of range")), "{v}");
        }
        let bad = client()
            .post(server.url("/v1/audit/conflicts"))
            .json(&serde_json::json!({"min_sim": 3.0}))
            .send()
            .await
            .unwrap();
        assert_eq!(bad.status().as_u16(), 400);
    });
}

#[test]
fn a_file_with_invalid_utf8_is_audited_and_embedded_not_called_changed() {
    // Path: embeddings (fake Ollama), then MinHash: both read the file as indexed.
    let server = FakeOllama::start(FakeOllamaOptions::default()).expect("fake");
    let env = Env::new();
    env.write_config(&llm_config("ollama", &server.url(), "fake-chat", "fake-embed"));
    let repo = env.repo("r");
    fixture(&repo);
    // Latin-1 bytes in a copy of the install guide: not UTF-8, indexed as Windows-1252 text.
    let mut latin1 = INSTALL.replace("Nothing else", "Caf\u{0}").into_bytes();
    let at = latin1.iter().position(|b| *b == 0).unwrap();
    latin1[at] = 0xe9;
    std::fs::write(repo.join("notes/latin1.md"), &latin1).unwrap();
    let engine = env.engine();
    index(&engine, &repo);
    let r = engine.audit_duplicates(&repo, &DuplicatesRequest::default()).expect("audit");
    assert_eq!(r.method, SimilarityMethod::Embeddings, "{r:?}");
    // Before: "1 files changed since they were indexed", and its chunks never embedded.
    let notice = r.notice.as_deref().unwrap_or("");
    assert!(!notice.contains("changed since") && !notice.contains("no embedding"), "{notice}");
    assert!(r.groups.iter().flat_map(|g| &g.items).any(|i| i.path == "notes/latin1.md"), "{r:#?}");
    let status = engine.status(&repo).expect("status");
    assert!(status.warnings.iter().all(|w| !w.contains("latin1")), "{:?}", status.warnings);
}

/// Prose without sentence punctuation (a README of one line per fact, bullets such as `•`, a
/// line of hundreds of words) was cut only at `.`, `!` and `?`: a whole paragraph became one
/// "statement", so the answer cited four facts for one, and unrelated facts of two such
/// paragraphs were paired as a conflict. Lines are statements where a paragraph has no
/// sentence punctuation, more bullet forms stand alone, and a statement is at most 60 words.
#[test]
fn conflicts_split_prose_without_full_stops_into_lines_and_bound_statements() {
    let env = Env::new();
    env.write_config(&llm_config("ollama", &dead_url(), "fake-chat", "fake-embed"));
    let repo = env.repo("r");
    let facts = |poll: u32, port: u32| {
        format!(
            "# Operations\n\nWorkers poll the job queue every {poll} seconds\nUploads larger than 10 MB are rejected by the gateway\n\
             Nightly backups are kept for 14 days in cold storage\n\n• The admin console listens on port {port}\n\
             • Sessions expire after 2 hours of inactivity\n"
        )
    };
    write(&repo, "docs/setup.md", facts(5, 8080));
    write(&repo, "docs/ops.md", facts(30, 8080).replace("Uploads larger", "Files larger"));
    let words: Vec<String> = (0..2990).map(|i| format!("term{i}")).collect();
    write(&repo, "docs/wall.md", format!("# Wall\n\n{} retries 3\n", words.join(" ")));
    write(&repo, "docs/wall2.md", format!("# Wall\n\n{} retries 4\n", words.join(" ")));
    index(&env.engine(), &repo);
    let r = env.engine().audit_conflicts(&repo, &ConflictsRequest { explain: Some(false), ..Default::default() });
    let r = r.expect("audit");
    let poll = r.pairs.iter().find(|p| p.a.text.starts_with("Workers poll")).expect("the poll interval conflict");
    assert_eq!(poll.a.text, "Workers poll the job queue every 30 seconds", "{poll:?}");
    assert_eq!(poll.b.text, "Workers poll the job queue every 5 seconds");
    assert_eq!((poll.a.line_start, poll.a.line_end, poll.b.line_start), (3, 3, 3));
    for p in &r.pairs {
        for text in [&p.a.text, &p.b.text] {
            assert!(
                text.split_whitespace().count() <= 60,
                "a bounded statement: {} words",
                text.split_whitespace().count()
            );
        }
        assert!(!p.a.text.contains("Nightly") && !p.a.text.contains("console"), "one fact each: {p:?}");
    }
    assert!(r.statements >= 10 + 2 * 2990 / 60, "{}", r.statements);
    let wall = r.pairs.iter().find(|p| p.a.path.starts_with("docs/wall")).expect("the walls' retries conflict");
    assert!(wall.a.text.ends_with("term2989 retries 3") || wall.a.text.ends_with("term2989 retries 4"), "{wall:?}");
}

/// Code in reStructuredText literal blocks (the indented block after `::`, a `.. code-block::`
/// body, a `>>>` doctest) was cut into statements like prose: two examples that set a timeout
/// differently were reported as conflicting "statements". Only the prose is compared now; a
/// prose contradiction in the same files is still found.
#[test]
fn conflicts_skip_code_in_rst_literal_blocks() {
    let env = Env::new();
    env.write_config(&llm_config("ollama", &dead_url(), "fake-chat", "fake-embed"));
    let repo = env.repo("r");
    let doc = |timeout: u32, workers: u32| {
        format!(
            "Client\n======\n\nOpen a connection with a short read timeout::\n\n    \
             client = connect(host, read timeout {timeout} seconds, retries 3)\n\n\
             .. code-block:: python\n\n    pool = Pool(size {timeout}, workers {workers})\n\n\
             >>> client.read timeout seconds {timeout}\n>>> pool.workers total {workers}\n\n\
             The worker pool starts {workers} workers for every client process.\n"
        )
    };
    write(&repo, "docs/client.rst", doc(30, 4));
    write(&repo, "docs/pool.rst", doc(60, 8));
    index(&env.engine(), &repo);
    let r = env.engine().audit_conflicts(&repo, &ConflictsRequest { explain: Some(false), ..Default::default() });
    let r = r.expect("audit");
    let texts: Vec<(&str, &str)> = r.pairs.iter().map(|p| (p.a.text.as_str(), p.b.text.as_str())).collect();
    assert_eq!(texts.len(), 1, "only the prose: {texts:#?}");
    assert!(texts[0].0.starts_with("The worker pool starts"), "{texts:#?}");
}

/// One statement copied into 300 files filled every LSH bucket it fell in (256 members at most
/// are paired), so the one file contradicting it was never compared: "0 conflicts" and a
/// "capped" note; at 200 copies the one conflict was reported 200 times (tour 24 F4). Copies
/// are compared once now, and the passage says how many other places state it.
#[test]
fn a_statement_copied_into_hundreds_of_files_still_meets_its_contradiction_once() {
    let env = Env::new();
    env.write_config(&llm_config("ollama", &dead_url(), "fake-chat", "fake-embed"));
    let repo = env.repo("copies");
    for i in 0..300 {
        write(&repo, &format!("copies/copy_{i:03}.md"), "The default timeout is 30 seconds for every request.\n");
    }
    write(&repo, "zz_guide.md", "The default timeout is 60 seconds for every request.\n");
    let r = repo.to_str().unwrap();
    assert!(env.run(&["index", "--repo", r]).status.success());
    let v = env.json(&["audit", "conflicts", "--repo", r, "--no-model", "--json"]);
    assert_eq!(v["pairs_total"], 1, "{v}");
    assert_eq!(v["capped"], false, "{v}");
    let pair = &v["pairs"][0];
    assert_eq!((pair["a"]["path"].as_str(), pair["a"]["copies"].as_u64()), (Some("copies/copy_000.md"), Some(299)));
    assert_eq!((pair["b"]["path"].as_str(), pair["b"].get("copies")), (Some("zz_guide.md"), None), "{pair}");
    let text =
        String::from_utf8_lossy(&env.run(&["audit", "conflicts", "--repo", r, "--no-model"]).stdout).into_owned();
    assert!(text.contains("a copies/copy_000.md:1-1 (and 299 other places word for word)"), "{text}");
}

/// A group of 3,000 identical files printed 3,000 lines before the summary; the text lists 20
/// members of a group and says how many more `--json` has (tour 24 F5).
#[test]
fn a_huge_duplicate_group_lists_twenty_members_and_counts_the_rest() {
    let env = Env::new();
    let repo = env.repo("clones");
    let text = "This paragraph explains how the rotation of widgets is configured by the operator in production.\n";
    for i in 0..60 {
        write(&repo, &format!("copies/f{i:02}.md"), text);
    }
    let r = repo.to_str().unwrap();
    assert!(env.run(&["index", "--repo", r]).status.success());
    let out = String::from_utf8_lossy(&env.run(&["audit", "duplicates", "--repo", r]).stdout).into_owned();
    assert!(out.contains("exact duplicates (60 chunks)"), "{out}");
    assert!(out.contains("copies/f19.md:1-1") && !out.contains("copies/f20.md"), "{out}");
    assert!(out.contains("… and 40 more (--json lists every one)"), "{out}");
    let v = env.json(&["audit", "duplicates", "--repo", r, "--json"]);
    assert_eq!(v["groups"][0]["items"].as_array().map(Vec::len), Some(60));
}

/// `--threshold -0.1` was taken by clap for an unknown flag `-0` ("unexpected argument"); a
/// negative number is now read as the value and refused by its range, and `-n` is checked
/// against the range its help states (the engine's caps), not refused as an "invalid digit".
#[test]
fn negative_and_out_of_range_audit_numbers_are_range_errors_and_help_states_the_ranges() {
    let env = Env::new();
    let repo = env.repo("r");
    conflict_fixture(&repo);
    let r = repo.to_str().unwrap();
    assert!(env.run(&["index", "--repo", r]).status.success());
    let cases: [(&[&str], &str); 6] = [
        (&["duplicates", "--threshold", "-0.1"], "threshold -0.1 is out of range"),
        (&["duplicates", "--threshold", "1.5"], "threshold 1.5 is out of range"),
        (&["conflicts", "--min-sim", "-0.5"], "min_sim -0.5 is out of range"),
        (&["conflicts", "-n", "-5"], "top -5 is out of range: give 1 to 500"),
        (&["conflicts", "--limit", "501"], "top 501 is out of range: give 1 to 500"),
        (&["duplicates", "-n", "-1"], "limit -1 is out of range: give 1 to 10000"),
    ];
    for (args, want) in cases {
        let mut all = vec!["audit"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--repo", r, "--no-model"][..if args[0] == "conflicts" { 3 } else { 2 }]);
        let out = env.run(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(want), "{all:?}: {out:?}");
        assert!(!err.contains("unexpected argument"), "{all:?}: {err}");
    }
    let help = |cmd: &str| String::from_utf8_lossy(&env.run(&["audit", cmd, "--help"]).stdout).into_owned();
    assert!(help("conflicts").contains("1 to 500"), "{}", help("conflicts"));
    assert!(help("duplicates").contains("1 to 10000"), "{}", help("duplicates"));
}

/// On celery's sources most reported conflicts were no contradictions: a release
/// announcement's values against the guide's, an init script without an extension read as
/// prose, one release's list item ("- 5.2.1: ..."), a version in a link's path, a number inside
/// inline code, "in 5.2 the limit is 5" against today's limit, and a unit taken from a word
/// apart from its number ("3 (m)" was 3 minutes). Each look-alike pair here is one of those and
/// must not be reported; the one planted contradiction (with a zero value) still is.
#[test]
fn conflicts_leave_out_release_notes_version_lists_urls_scripts_and_code() {
    let env = Env::new();
    env.write_config(&llm_config("ollama", &dead_url(), "fake-chat", "fake-embed"));
    let repo = env.repo("r");
    let guide = "Worker guide\n============\n\n\
                 The default prefetch multiplier is 4 for every worker process.\n\n\
                 The worker shutdown timeout is 30 seconds for every task.\n\n\
                 - The result backend retries 5 times and then stops.\n\n\
                 Read the worker manual at https://docs.example.org/en/v5.3.0/guide.html for the details.\n\n\
                 Start the worker with ``celery worker --concurrency 4`` on each host.\n\n\
                 The prefetch limit is 4 for all workers.\n\n\
                 The queue length limit is 3 per worker.\n\n\
                 The broker heartbeat is 10 s for each connection.\n";
    write(&repo, "docs/guide.rst", guide);
    write(
        &repo,
        "docs/announcement.rst",
        "Celery 5.2\n==========\n\nThe default prefetch multiplier is 8 for every worker process.\n",
    );
    write(
        &repo,
        "extra/celeryd",
        "#!/bin/sh -e\n# The worker shutdown timeout is 60 seconds for every task.\nexec celery worker\n",
    );
    let other = "Notes\n=====\n\n\
                 - 5.2.1: The result backend retries 3 times and then stops.\n\n\
                 Read the worker manual at https://docs.example.org/en/v5.2.0/guide.html for the details.\n\n\
                 Start the worker with ``celery worker --concurrency 8`` on each host.\n\n\
                 In 5.2 the prefetch limit is 5 for all workers.\n\n\
                 The queue length limit is 3 (m) per worker.\n\n\
                 The broker heartbeat is 0 s for each connection.\n";
    write(&repo, "docs/notes.rst", other);
    let engine = env.engine();
    index(&engine, &repo);
    let r = engine.audit_conflicts(&repo, &ConflictsRequest { explain: Some(false), ..Default::default() });
    let r = r.expect("audit");
    let texts: Vec<(&str, &str, &str)> =
        r.pairs.iter().map(|p| (p.a.text.as_str(), p.b.text.as_str(), p.reason.as_str())).collect();
    assert_eq!(texts.len(), 1, "only the planted one: {texts:#?}");
    assert!(texts[0].0.starts_with("The broker heartbeat"), "{texts:#?}");
    let why = texts[0].2;
    assert!(why.contains("10 s in a, 0 s in b") || why.contains("0 s in a, 10 s in b"), "a zero is 0 s: {why}");
}

/// A document kept once per release (fastify's `Migration-Guide-V3.md`, `-V4.md`, `-V5.md`) is
/// meant to state other versions than its siblings, and HTML in Markdown (a README's logos of
/// heights 25 and 35) is layout: neither is a conflict. Both were reported on the released
/// sources of fastify and tantivy; the planted contradiction beside them still is.
#[test]
fn conflicts_leave_out_per_release_copies_of_a_document_and_html_attributes() {
    let env = Env::new();
    env.write_config(&llm_config("ollama", &dead_url(), "fake-chat", "fake-embed"));
    let repo = env.repo("r");
    for (v, from) in [(3, 2), (4, 3), (5, 4)] {
        write(
            &repo,
            &format!("docs/Guides/Migration-Guide-V{v}.md"),
            format!("# V{v} Migration Guide\n\nThis guide is intended to help with migration from Fastify v{from} to v{v}.\n"),
        );
    }
    write(
        &repo,
        "README.md",
        "# Sponsors\n\n\
         <img align=\"center\" src=\"doc/assets/images/logo.png#gh-light-mode-only\" alt=\"Nuclia\" height=\"25\" width=\"auto\" /> &nbsp;\n\n\
         <img align=\"center\" src=\"doc/assets/images/logo-dark.png#gh-dark-mode-only\" alt=\"Nuclia\" height=\"35\" width=\"auto\" /> &nbsp;\n\n\
         The default request body limit is 1 MB for every route.\n",
    );
    write(&repo, "docs/Reference/Server.md", "# Server\n\nThe default request body limit is 4 MB for every route.\n");
    let engine = env.engine();
    index(&engine, &repo);
    let r = engine.audit_conflicts(&repo, &ConflictsRequest { explain: Some(false), ..Default::default() });
    let r = r.expect("audit");
    let texts: Vec<(&str, &str)> = r.pairs.iter().map(|p| (p.a.path.as_str(), p.b.path.as_str())).collect();
    assert_eq!(texts.len(), 1, "only the planted one: {texts:#?}");
    assert_eq!(texts[0], ("README.md", "docs/Reference/Server.md"), "{texts:#?}");
}
