//! Embeddings and hybrid search against the fake Ollama over loopback: the embedding
//! phase and its content-hash cache, RRF fusion order, which retrievers contributed,
//! the BM25 fallback and its notices, model and dimension changes, `similar`.

use crate::util::{dead_url, llm_config, quiet, sample_repo, write, Env};
use docdex::config::Config;
use docdex::engine::check::{CheckOptions, CheckStatus};
use docdex::engine::protocol::{EmbedState, SearchRequest, SearchResponse, SimilarRequest};
use docdex::engine::IndexOptions;
use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
use docdex::Engine;
use std::collections::HashMap;
use std::path::Path;

fn fake() -> FakeOllama {
    FakeOllama::start(FakeOllamaOptions::default()).expect("fake")
}

/// Inputs the fake embedded, excluding docdex's probes.
fn embedded_inputs(server: &FakeOllama) -> Vec<String> {
    server
        .requests()
        .into_iter()
        .filter(|(p, _)| p == "/api/embed")
        .flat_map(|(_, b)| b["input"].as_array().cloned().unwrap_or_default())
        .filter_map(|v| v.as_str().map(str::to_string))
        .filter(|s| !s.contains("probe"))
        .collect()
}

fn embed_requests(server: &FakeOllama) -> usize {
    server.requests().iter().filter(|(p, _)| p == "/api/embed").count()
}

fn index(engine: &Engine, repo: &Path) -> docdex::engine::protocol::IndexSummary {
    engine.index(repo, &IndexOptions::default(), &quiet()).expect("index")
}

/// The sample repository, indexed with embeddings while the fake embedder ran; the embedder
/// is gone when this returns.
fn embedded_sample() -> (Env, std::path::PathBuf) {
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    let server = fake();
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    index(&engine, &repo);
    assert_eq!(search(&engine, &repo, "session store").retrieval.mode, "hybrid");
    (env, repo)
}

fn search(engine: &Engine, repo: &Path, q: &str) -> SearchResponse {
    engine.search(repo, &SearchRequest { query: q.into(), limit: Some(20), ..Default::default() }).expect("search")
}

#[test]
fn index_embeds_every_chunk_once_and_a_second_run_embeds_nothing() {
    let server = fake();
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    let s = index(&engine, &repo);
    let e = s.embeddings.expect("embedding summary");
    assert_eq!(e.state, EmbedState::Ready, "{e:?}");
    assert_eq!(e.model, "fake-embed");
    assert_eq!(e.dim, Some(64));
    assert_eq!(e.chunks, s.chunks, "every chunk has a vector");
    assert_eq!(e.chunks_embedded as usize, embedded_inputs(&server).len());
    assert_eq!(e.files_embedded, s.files);
    assert!(std::fs::metadata(engine.resolve_repo(&repo).unwrap().state_dir.join("vectors.db")).is_ok());

    // Nothing changed: the embedder is not even asked.
    let before = embed_requests(&server);
    let e = index(&engine, &repo).embeddings.unwrap();
    assert_eq!((e.state, e.chunks_embedded, e.files_embedded), (EmbedState::Ready, 0, 0));
    assert_eq!(embed_requests(&server), before);

    // One file changed: only its chunks go to the embedder.
    write(&repo, "src/parser.py", "def parse_toml(path):\n    \"\"\"Read TOML.\"\"\"\n    return open(path).read()\n");
    let seen = embedded_inputs(&server).len();
    let e = index(&engine, &repo).embeddings.unwrap();
    assert_eq!(e.files_embedded, 1);
    assert_eq!(e.chunks_embedded, 1);
    let new_inputs = &embedded_inputs(&server)[seen..];
    assert_eq!(new_inputs.len(), 1);
    assert!(new_inputs[0].contains("parse_toml"), "{new_inputs:?}");
}

#[test]
fn renames_and_reverts_reuse_cached_vectors() {
    let server = fake();
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    index(&engine, &repo);
    let seen = embedded_inputs(&server).len();

    std::fs::rename(repo.join("web/app.ts"), repo.join("web/dashboard.ts")).unwrap();
    let s = index(&engine, &repo);
    assert_eq!(s.renamed, 1);
    let e = s.embeddings.unwrap();
    assert_eq!((e.chunks_embedded, e.chunks_cached, e.files_embedded, e.files_removed), (0, 1, 1, 1), "{e:?}");
    assert_eq!(embedded_inputs(&server).len(), seen, "a rename embeds nothing");
    assert_eq!(search(&engine, &repo, "renderDashboard").results[0].path, "web/dashboard.ts");

    // Edit, then revert: the reverted text's vectors are still cached.
    let original = std::fs::read_to_string(repo.join("README.md")).unwrap();
    write(&repo, "README.md", "# Changed\n\nSomething else entirely.\n");
    assert_eq!(index(&engine, &repo).embeddings.unwrap().chunks_embedded, 1);
    write(&repo, "README.md", &original);
    let s = index(&engine, &repo);
    let readme_chunks = s.chunks - 4; // the four other files are one chunk each
    let e = s.embeddings.unwrap();
    assert_eq!((e.chunks_embedded, e.chunks_cached), (0, readme_chunks));
}

/// The summary's parts add up: every chunk the index holds is embedded now, served from the
/// cache, shares the text of another chunk of the run, or is blank (no vector).
#[test]
fn embedding_counts_add_up_to_the_index_chunks() {
    let server = fake();
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "a.md", "alpha beta gamma\n");
    write(&repo, "b.md", "alpha beta gamma\n");
    write(&repo, "blank.md", "\n\n\n");
    write(&repo, "c.py", "def f():\n    return 2\n");
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    let s = index(&engine, &repo);
    let e = s.embeddings.expect("embedding summary");
    assert_eq!((e.chunks_embedded, e.chunks_cached, e.chunks_repeated, e.chunks_blank), (2, 0, 1, 1), "{e:?}");
    assert_eq!(e.chunks_embedded + e.chunks_cached + e.chunks_repeated + e.chunks_blank, s.chunks);
    assert_eq!(e.chunks, 3, "the blank chunk has no vector");
    assert_eq!(embedded_inputs(&server).len(), 2, "one request per distinct text");
}

/// Files of one chunk each, with words shared with the query in different amounts.
fn fusion_repo(root: &Path) {
    write(root, "a.rs", "// ledger ledger ledger balance\nfn a() {}\n");
    write(root, "b.rs", "// ledger balance audit trail reconcile\nfn b() {}\n");
    write(root, "c.rs", "// audit trail reconcile monthly totals\nfn c() {}\n");
    write(root, "d.rs", "// monthly totals and unrelated words here\nfn d() {}\n");
    write(root, "e.rs", "// nothing in common at all zebra\nfn e() {}\n");
    write(root, "f.rs", "// ledger\nfn f() {}\n");
}

fn engine_with(env: &Env, url: &str, f: impl FnOnce(&mut Config)) -> Engine {
    let mut c = Config::default();
    c.llm.base_url = url.into();
    c.llm.embedding_model = "fake-embed".into();
    f(&mut c);
    Engine::with_config(&env.home(), c, env.home().join("config.toml"), Vec::new()).expect("engine")
}

#[test]
fn hybrid_search_orders_by_weighted_reciprocal_rank_fusion() {
    let server = fake();
    let env = Env::new();
    let repo = env.repo("r");
    fusion_repo(&repo);
    let hybrid = engine_with(&env, &server.url(), |c| c.search.fusion = docdex::config::Fusion::Rrf);
    index(&hybrid, &repo);
    let q = "ledger balance audit trail reconcile monthly totals";

    let keyword = engine_with(&env, &server.url(), |c| c.search.hybrid = false);
    let kw = search(&keyword, &repo, q);
    assert_eq!(kw.retrieval.mode, "bm25");
    let semantic_only = engine_with(&env, &server.url(), |c| {
        c.search.fusion = docdex::config::Fusion::Rrf;
        c.search.keyword_weight = 0.0;
    });
    let vec_only = search(&semantic_only, &repo, q);
    let kw_rank: HashMap<String, usize> = kw.results.iter().enumerate().map(|(i, h)| (h.path.clone(), i + 1)).collect();
    let vec_paths: Vec<String> = vec_only
        .results
        .iter()
        .filter(|h| h.retrievers.contains(&"vector".to_string()))
        .map(|h| h.path.clone())
        .collect();
    let vec_rank: HashMap<String, usize> = vec_paths.iter().enumerate().map(|(i, p)| (p.clone(), i + 1)).collect();
    assert!(vec_rank.len() >= 5, "the vector retriever ranks every file: {vec_paths:?}");

    // Expected: 0.25 / (60 + bm25 rank) + 0.75 / (60 + vector rank), the default weights.
    let mut expected: Vec<(f64, String)> = vec_rank
        .keys()
        .chain(kw_rank.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|p| {
            let r = |m: &HashMap<String, usize>, w: f64| m.get(p).map(|r| w / (60.0 + *r as f64)).unwrap_or(0.0);
            (r(&kw_rank, 0.25) + r(&vec_rank, 0.75), p.clone())
        })
        .collect();
    expected.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let fused = search(&hybrid, &repo, q);
    assert_eq!(fused.retrieval.mode, "hybrid");
    assert_eq!(fused.retrieval.embedding_model.as_deref(), Some("fake-embed"));
    assert_eq!(fused.retrieval.retrievers, ["bm25", "vector"]);
    assert!(fused.retrieval.notice.is_none());
    let got: Vec<&str> = fused.results.iter().map(|h| h.path.as_str()).collect();
    let want: Vec<&str> = expected.iter().map(|(_, p)| p.as_str()).collect();
    assert_eq!(got, want);
    for h in &fused.results {
        assert_eq!(h.retrievers.contains(&"bm25".to_string()), kw_rank.contains_key(&h.path), "{}", h.path);
        assert_eq!(h.retrievers.contains(&"vector".to_string()), vec_rank.contains_key(&h.path), "{}", h.path);
    }
    // The top hit was found by both and its score is normalised to the best possible, times
    // the confidence (no hit reads above it).
    assert!(
        fused.results[0].score > 0.9 * fused.confidence as f32 && fused.results[0].score <= fused.confidence as f32
    );
    assert!((0.0..=1.0).contains(&fused.confidence) && fused.confidence >= kw.confidence);

    // Filters apply to vector hits too.
    let req = SearchRequest { query: q.into(), lang: Some("markdown".into()), ..Default::default() };
    assert!(hybrid.search(&repo, &req).unwrap().results.is_empty());

    // `fusion = "weighted"` merges normalized scores: with the keyword side alone weighted it
    // keeps BM25's order, vector-only files after it at score 0; the scores order the page.
    let weighted = engine_with(&env, &server.url(), |c| {
        c.search.fusion = docdex::config::Fusion::Weighted;
        c.search.semantic_weight = 0.0;
        c.search.keyword_weight = 1.0;
    });
    let merged = search(&weighted, &repo, q);
    assert_eq!(merged.retrieval.mode, "hybrid");
    let kw_order: Vec<&str> = kw.results.iter().map(|h| h.path.as_str()).collect();
    let merged_order: Vec<&str> = merged.results.iter().map(|h| h.path.as_str()).collect();
    assert_eq!(&merged_order[..kw_order.len()], &kw_order[..], "{merged_order:?}");
    assert!((merged.results[0].score - merged.confidence as f32).abs() < 1e-3, "the best file scores the confidence");
    assert!(merged.results[kw_order.len()..].iter().all(|h| h.score == 0.0 && !h.retrievers.contains(&"bm25".into())));
    let weighted_both = engine_with(&env, &server.url(), |c| c.search.fusion = docdex::config::Fusion::Weighted);
    let both = search(&weighted_both, &repo, q);
    assert!(both.results.windows(2).all(|w| w[0].score >= w[1].score), "{:?}", both.results);
    assert!(both.results.iter().all(|h| (0.0..=1.0).contains(&h.score)));

    // The default, `fusion = "boost"`: both retrievers take part, the page is ordered by score
    // scaled so the best file scores the confidence, and BM25's first file, which the vectors also reach,
    // stays in the first three (closeness reorders close matches, it does not bury them).
    let boost = engine_with(&env, &server.url(), |_| {});
    let boosted = search(&boost, &repo, q);
    assert_eq!(boosted.retrieval.mode, "hybrid");
    assert_eq!(boosted.retrieval.retrievers, ["bm25", "vector"]);
    assert!((boosted.results[0].score - boosted.confidence as f32).abs() < 1e-3, "{:?}", boosted.results[0]);
    assert!(boosted.results.windows(2).all(|w| w[0].score >= w[1].score));
    let top3: Vec<&str> = boosted.results.iter().take(3).map(|h| h.path.as_str()).collect();
    assert!(top3.contains(&kw.results[0].path.as_str()), "{top3:?} against BM25's {}", kw.results[0].path);
}

#[test]
fn search_falls_back_to_bm25_with_a_notice_and_remembers_a_failing_embedder() {
    let (env, repo) = embedded_sample();
    // The server is gone: BM25 answers, and says why.
    let engine = env.engine();
    let r = search(&engine, &repo, "session store");
    assert_eq!(r.retrieval.mode, "bm25");
    assert_eq!(r.results[0].path, "src/auth/session.rs");
    assert_eq!(r.results[0].retrievers, ["bm25"]);
    let notice = r.retrieval.notice.unwrap();
    assert!(
        notice.contains("vector search unavailable") && notice.contains("cannot reach") && notice.contains("BM25 only"),
        "{notice}"
    );

    // An embedder that fails is asked once, then left alone for a while.
    let failing = FakeOllama::start(FakeOllamaOptions { fail_first: 1000, ..Default::default() }).unwrap();
    let engine = env.engine_for("ollama", &failing.url(), "fake-chat", "fake-embed");
    assert_eq!(search(&engine, &repo, "session").retrieval.mode, "bm25");
    let asked = embed_requests(&failing);
    assert_eq!(asked, 3, "one query, three attempts on a 500");
    assert_eq!(search(&engine, &repo, "dashboard").retrieval.mode, "bm25");
    assert_eq!(embed_requests(&failing), asked, "the failure was remembered");
}

#[test]
fn a_repo_without_embeddings_says_so_and_never_calls_the_embedder() {
    let server = fake();
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    // Indexed while no embedder ran: the index succeeds, BM25 only.
    let engine = env.engine_for("ollama", &dead_url(), "fake-chat", "fake-embed");
    let s = index(&engine, &repo);
    assert!(s.files > 0);
    let e = s.embeddings.unwrap();
    assert_eq!(e.state, EmbedState::Unavailable);
    let notice = e.notice.unwrap();
    assert!(
        notice.contains("embeddings skipped: cannot reach the ollama server") && notice.contains("BM25 only"),
        "{notice}"
    );
    assert!(!engine.resolve_repo(&repo).unwrap().state_dir.join("vectors.db").exists());

    // Searching with a live embedder configured: the repo has no vectors, so no call.
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    let r = search(&engine, &repo, "session store");
    assert_eq!(r.retrieval.mode, "bm25");
    assert!(r.retrieval.notice.unwrap().contains("no embeddings yet"));
    assert_eq!(embed_requests(&server), 0);

    // A missing embedding model: the notice names the command that installs it.
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "nomic-embed-text");
    let e = index(&engine, &repo).embeddings.unwrap();
    assert_eq!(e.state, EmbedState::Unavailable);
    assert!(e.notice.unwrap().contains("docdex llm-setup --model nomic-embed-text --yes"));
}

/// Files an embedding run left without vectors (the embedder gone before or during it) are
/// named by search, `status` and `check` until a run embeds them: hybrid search over a few
/// of the files said "hybrid" and nothing more (tour28 F1: the shim killed after 270 of 2,496
/// chunks left 296 of 338 files findable by keywords only, and `check` said "ok").
#[test]
fn files_an_embedding_run_left_without_vectors_are_named_until_embedded() {
    let (env, repo) = embedded_sample();
    for name in ["alpha", "beta", "gamma"] {
        write(&repo, &format!("src/{name}.py"), format!("def {name}_handler(request):\n    return request\n"));
    }
    let e = index(&env.engine_for("ollama", &dead_url(), "fake-chat", "fake-embed"), &repo).embeddings.unwrap();
    assert_eq!(e.state, EmbedState::Unavailable, "{e:?}");

    let server = fake();
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    let r = search(&engine, &repo, "session store");
    assert_eq!(r.retrieval.mode, "hybrid");
    let notice = r.retrieval.notice.expect("a notice naming the files without vectors");
    assert!(
        notice.contains("embeddings cover 5 of 8 files: 3 files have no vectors yet")
            && notice.contains("keywords only")
            && notice.contains("docdex index --repo"),
        "{notice}"
    );
    let status = engine.status(&repo).unwrap();
    assert!(status.warnings.iter().any(|w| w.contains("3 files have no vectors yet")), "{:?}", status.warnings);
    let check = engine.check(&CheckOptions { repo: Some(repo.clone()), ..Default::default() });
    let item = check.items.iter().find(|i| i.name == "repo_embeddings").unwrap();
    assert_eq!(item.status, CheckStatus::Warn, "{item:?}");
    assert!(item.message.contains("3 files have no vectors yet"), "{item:?}");

    // A run with the embedder back embeds them, and every surface is quiet again.
    let e = index(&engine, &repo).embeddings.unwrap();
    assert_eq!((e.state, e.files_embedded), (EmbedState::Ready, 3), "{e:?}");
    assert_eq!(search(&engine, &repo, "session store").retrieval.notice, None);
    assert!(!engine.status(&repo).unwrap().warnings.iter().any(|w| w.contains("no vectors")));
    let check = engine.check(&CheckOptions { repo: Some(repo.clone()), ..Default::default() });
    assert_eq!(check.items.iter().find(|i| i.name == "repo_embeddings").unwrap().status, CheckStatus::Ok);
}

#[test]
fn a_model_change_asks_for_a_reembed_and_reembed_switches_models() {
    let server = FakeOllama::start(FakeOllamaOptions {
        models: vec!["fake-embed".into(), "other-embed".into()],
        ..Default::default()
    })
    .unwrap();
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    let chunks = index(&engine, &repo).embeddings.unwrap().chunks;

    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "other-embed");
    let e = index(&engine, &repo).embeddings.unwrap();
    assert_eq!(e.state, EmbedState::Stale);
    let notice = e.notice.unwrap();
    assert!(
        notice.contains("made with fake-embed (64 dimensions)")
            && notice.contains("embedding_model is now other-embed")
            && notice.contains("--reembed"),
        "{notice}"
    );
    let r = search(&engine, &repo, "session");
    assert_eq!(r.retrieval.mode, "bm25");
    assert!(r.retrieval.notice.unwrap().contains("--reembed"));

    let e = engine
        .index(&repo, &IndexOptions { reembed: true, ..Default::default() }, &quiet())
        .unwrap()
        .embeddings
        .unwrap();
    assert_eq!((e.state, e.chunks, e.chunks_embedded), (EmbedState::Ready, chunks, chunks));
    assert_eq!(e.model, "other-embed");
    let r = search(&engine, &repo, "session");
    assert_eq!(r.retrieval.mode, "hybrid");
    assert_eq!(r.retrieval.embedding_model.as_deref(), Some("other-embed"));
}

#[test]
fn a_dimension_change_under_the_same_model_name_is_caught() {
    let (env, repo) = embedded_sample();
    let server = FakeOllama::start(FakeOllamaOptions { embed_dim: 32, ..Default::default() }).unwrap();
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    let r = search(&engine, &repo, "session");
    assert_eq!(r.retrieval.mode, "bm25");
    let notice = r.retrieval.notice.unwrap();
    assert!(notice.contains("32 dimensions") && notice.contains("have 64") && notice.contains("--reembed"), "{notice}");
    write(&repo, "new.rs", "fn fresh() {}\n");
    let e = index(&engine, &repo).embeddings.unwrap();
    assert_eq!(e.state, EmbedState::Stale);
    assert!(e.notice.unwrap().contains("--reembed"));
}

#[test]
fn similar_finds_files_by_vectors_and_by_terms_without_them() {
    let server = fake();
    let env = Env::new();
    let repo = env.repo("r");
    write(
        &repo,
        "billing/invoice.rs",
        "fn invoice_total(lines: &[Line]) -> Money { sum(lines) }\nfn invoice_tax() {}\n",
    );
    write(
        &repo,
        "billing/receipt.rs",
        "fn receipt_total(lines: &[Line]) -> Money { sum(lines) }\nfn receipt_tax() {}\n",
    );
    write(&repo, "ui/theme.rs", "fn palette() -> Colors { dark() }\nfn contrast() {}\n");
    write(&repo, "ui/layout.rs", "fn split(area: Rect) -> Vec<Rect> { columns(area) }\n");
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    index(&engine, &repo);
    let req = SimilarRequest { file: "billing/invoice.rs".into(), limit: Some(2) };
    let r = engine.similar(&repo, &req).unwrap();
    assert_eq!(r.mode, "vector");
    assert!(r.notice.is_none());
    assert_eq!(r.results.len(), 2);
    assert_eq!(r.results[0].path, "billing/receipt.rs");
    assert!(r.results.iter().all(|f| f.path != "billing/invoice.rs"));
    assert!(r.results[0].score > r.results[1].score);

    // Without vectors: the file's distinctive terms as a BM25 query, with a notice.
    let keyword = engine_with(&env, &server.url(), |c| c.search.hybrid = false);
    let r = keyword.similar(&repo, &req).unwrap();
    assert_eq!(r.mode, "bm25");
    assert!(r.notice.unwrap().contains("hybrid search is off"));
    assert_eq!(r.results[0].path, "billing/receipt.rs");

    // A count outside 1..=200 (HTTP and MCP pass it through) is answered at the bound, and said.
    let big = engine.similar(&repo, &SimilarRequest { file: req.file.clone(), limit: Some(500) }).unwrap();
    assert!(big.notice.as_deref().is_some_and(|n| n.contains("limit 500 was taken as 200")), "{:?}", big.notice);
    let kw = keyword.similar(&repo, &SimilarRequest { file: req.file.clone(), limit: Some(0) }).unwrap();
    let n = kw.notice.unwrap();
    assert!(n.contains("hybrid search is off") && n.contains("limit 0 was taken as 1"), "{n}");
    assert_eq!(kw.results.len(), 1);
    let err = engine.similar(&repo, &SimilarRequest { file: "nope.rs".into(), limit: None }).unwrap_err();
    assert!(err.to_string().contains("no such file"), "{err}");
}

#[test]
fn cli_index_and_search_json_carry_embeddings_and_retrievers() {
    let server = fake();
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    env.write_config(&llm_config("ollama", &server.url(), "fake-chat", "fake-embed"));
    let r = repo.to_str().unwrap();
    let v = env.json(&["index", "--repo", r, "--json"]);
    assert_eq!(v["embeddings"]["state"], "ready");
    assert_eq!(v["embeddings"]["chunks"], v["chunks"]);
    let v = env.json(&["search", "--repo", r, "--json", "session", "store"]);
    assert_eq!(v["retrieval"]["mode"], "hybrid");
    assert_eq!(v["retrieval"]["embedding_model"], "fake-embed");
    assert!(v["retrieval"]["embed_ms"].is_number());
    assert!(v["results"][0]["retrievers"].as_array().unwrap().iter().any(|x| x == "vector"));
    let out = env.run(&["search", "--repo", r, "session", "store"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("hybrid (fake-embed)") && text.contains("[bm25+vector]"), "{text}");
    let v = env.json(&["similar", "--repo", r, "--json", "src/auth/session.rs", "-n", "2"]);
    assert_eq!(v["mode"], "vector");
    assert_eq!(v["results"].as_array().unwrap().len(), 2);
    drop(server);
    let out = env.run(&["search", "--repo", r, "session", "store"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("note: vector search unavailable"), "{stderr}");
}

#[test]
fn the_watcher_embeds_what_it_indexes() {
    use docdex::engine::watch::WatchReport;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};
    let server = fake();
    let env = Env::new();
    let repo = env.repo("w");
    write(&repo, "start.rs", "fn armadillo() {}\n");
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    let stop = Arc::new(AtomicBool::new(false));
    let ready = Arc::new(AtomicBool::new(false));
    let handle = {
        let (engine, repo, stop, ready) = (engine.clone(), repo.clone(), stop.clone(), ready.clone());
        std::thread::spawn(move || {
            let report = move |r: WatchReport| {
                if let WatchReport::Ready(s) = r {
                    assert_eq!(s.embeddings.map(|e| e.chunks), Some(1));
                    ready.store(true, Ordering::SeqCst);
                }
            };
            engine.watch(&repo, &stop, &report)
        })
    };
    let deadline = Instant::now() + Duration::from_secs(15);
    while !ready.load(Ordering::SeqCst) {
        assert!(Instant::now() < deadline, "watcher never became ready");
        std::thread::sleep(Duration::from_millis(50));
    }
    write(&repo, "pangolin.rs", "fn pangolin_scales() {}\n");
    let found = |engine: &Engine| {
        search(engine, &repo, "pangolin_scales")
            .results
            .iter()
            .any(|h| h.path == "pangolin.rs" && h.retrievers.contains(&"vector".to_string()))
    };
    while !found(&engine) {
        assert!(Instant::now() < deadline + Duration::from_secs(15), "the new file never got a vector");
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::SeqCst);
    handle.join().unwrap().unwrap();
    let status = engine.status(&repo).unwrap();
    assert!(status.progress.is_none(), "embedding progress is cleared: {:?}", status.progress);
}

#[test]
fn a_definition_the_query_names_stays_first_in_hybrid_search() {
    let server = fake();
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "src/store.rs", "pub struct SessionStore {\n    ttl: u64,\n}\n\nimpl SessionStore {\n    pub fn new() -> Self { SessionStore { ttl: 0 } }\n}\n");
    // Closer to the query by the fake's bag of words than the definition itself.
    write(&repo, "src/notes.rs", "// session store session store session store\n");
    write(&repo, "src/other.rs", "fn unrelated() {}\n");
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    index(&engine, &repo);
    let r = search(&engine, &repo, "SessionStore");
    assert_eq!(r.retrieval.mode, "hybrid");
    assert_eq!(r.results[0].path, "src/store.rs", "{:?}", r.results.iter().map(|h| &h.path).collect::<Vec<_>>());
    // Without the pin the notes would win: they are the vector retriever's first.
    let notes = r.results.iter().find(|h| h.path == "src/notes.rs").expect("notes listed");
    assert!(notes.retrievers.contains(&"vector".to_string()));
    let semantic_only = engine_with(&env, &server.url(), |c| {
        c.search.keyword_weight = 0.0;
        c.search.symbol_ranking_enabled = false;
    });
    assert_eq!(search(&semantic_only, &repo, "SessionStore").results[0].path, "src/notes.rs");
}

#[test]
fn generated_files_are_ranked_down_among_vector_hits_too() {
    let server = fake();
    let env = Env::new();
    let repo = env.repo("r");
    // The generated file shares more words with the query; only its header says what it is.
    write(
        &repo,
        "gen.rs",
        "// Code generated by protoc-gen-rust. DO NOT EDIT.\n// ledger balance audit trail reconcile\nfn g() {}\n",
    );
    write(&repo, "hand.rs", "// ledger balance\nfn h() {}\n");
    let vectors_only = |demote: bool| {
        engine_with(&env, &server.url(), |c| {
            c.search.keyword_weight = 0.0;
            c.search.demote_noise_files = demote;
        })
    };
    index(&vectors_only(true), &repo);
    let q = "ledger balance audit trail reconcile";
    let paths = |e: &Engine| search(e, &repo, q).results.into_iter().map(|h| h.path).collect::<Vec<_>>();
    assert_eq!(paths(&vectors_only(false))[..2], ["gen.rs", "hand.rs"], "without priors the closer file leads");
    assert_eq!(paths(&vectors_only(true))[..2], ["hand.rs", "gen.rs"], "the generated file is ranked down");
}

#[test]
fn a_file_name_query_puts_that_file_first_in_hybrid_search_too() {
    let server = fake();
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "pkg/bar.py", "WIDTH = 1\n");
    let busy = "def progress_bar(bar):\n    # a bar of bars: bar, bar, bar\n    return bar\n";
    write(&repo, "pkg/progress_bar.py", busy);
    write(&repo, "pkg/foobar.py", busy);
    let engine = engine_with(&env, &server.url(), |_| {});
    index(&engine, &repo);
    let r = search(&engine, &repo, "bar.py");
    assert_eq!(r.retrieval.mode, "hybrid");
    assert_eq!(r.results[0].path, "pkg/bar.py", "{:?}", r.results.iter().map(|h| &h.path).collect::<Vec<_>>());
    let scores: Vec<f32> = r.results.iter().map(|h| h.score).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "scores stay in order: {scores:?}");
}

#[test]
fn reembed_with_no_embedder_fails_after_updating_the_text_index() {
    let env = Env::new();
    env.write_config(&llm_config("ollama", &dead_url(), "m", "fake-embed"));
    let repo = env.repo("r");
    fusion_repo(&repo);
    let out = env.run(&["index", "--repo", repo.to_str().unwrap(), "--reembed"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--reembed made no embeddings"), "{out:?}");
    // The text index itself was built.
    let v = env.json(&["status", "--repo", repo.to_str().unwrap(), "--json"]);
    assert_eq!(v["documents"], 6, "{v}");
}

#[test]
fn a_stuck_model_server_costs_a_search_a_moment_not_a_timeout() {
    use std::time::{Duration, Instant};
    let (env, repo) = embedded_sample();
    // The model server now accepts connections and never answers (stuck loading a model,
    // wedged behind a proxy): each one-shot search waited the whole request timeout.
    let (url, accepted) = crate::util::stuck_server();
    let config = llm_config("ollama", &url, "fake-chat", "fake-embed").replace("= 5", "= 60");
    env.write_config(&format!("{config}connect_timeout_ms = 400\n"));
    let started = Instant::now();
    let out = env.json(&["search", "--repo", repo.to_str().unwrap(), "--json", "session store"]);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "a search took {took:?}");
    assert_eq!(out["retrieval"]["mode"], "bm25", "{out}");
    assert_eq!(out["results"][0]["path"], "src/auth/session.rs", "{out}");
    let notice = out["retrieval"]["notice"].as_str().unwrap_or_default();
    assert!(notice.contains("did not answer within 400 ms") && notice.contains("BM25 only"), "{notice}");
    // The engine of a long-lived process remembers it: the next search does not ask again.
    let engine = env.engine();
    assert_eq!(search(&engine, &repo, "session store").retrieval.mode, "bm25");
    let asked = accepted.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(search(&engine, &repo, "dashboard").retrieval.mode, "bm25");
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), asked, "asked once per engine");
}

/// tour16 F2: `docdex index` behind a model server that accepts connections and never answers
/// waited the whole `[llm] request_timeout_secs` on its embedding probe (two minutes by
/// default) before indexing BM25 only. The probe passes the liveness check first: the index
/// run ends within `connect_timeout_ms` of its text pass, saying why it embedded nothing.
#[test]
fn an_index_run_behind_a_stuck_model_server_skips_embeddings_within_the_liveness_bound() {
    use std::time::{Duration, Instant};
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    let (url, _) = crate::util::stuck_server();
    let config = llm_config("ollama", &url, "fake-chat", "fake-embed").replace("= 5", "= 60");
    env.write_config(&format!("{config}connect_timeout_ms = 400\n"));
    let started = Instant::now();
    let out = env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "the index run took {took:?}");
    assert!(out["files"].as_u64().is_some_and(|n| n > 0), "the text pass ran: {out}");
    assert_eq!(out["embeddings"]["state"], "unavailable", "{out}");
    let notice = out["embeddings"]["notice"].as_str().unwrap_or_default();
    assert!(notice.contains("did not answer within 400 ms") && notice.contains("BM25 only"), "{out}");
}

/// `GET /v1/status` (`Engine::status`) during the embedding phase: its `files_total` was the
/// number of chunks to embed (2,158 "files" on a 300-file repository). Files are counted as
/// files there too; the chunks have fields of their own and `unit` says what the bar counts.
#[test]
fn status_while_embedding_counts_files_as_files_and_chunks_as_chunks() {
    use docdex::engine::protocol::{IndexProgress, ProgressUnit};
    let server = fake();
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    // One file of many chunks, so chunks and files differ.
    let long: String = (0..400).map(|i| format!("pub fn handler_{i}(x: u64) -> u64 {{ x + {i} }}\n\n")).collect();
    write(&repo, "src/handlers.rs", &long);
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    // The status the servers serve, read when the phase starts (written at once, not throttled).
    let seen = std::sync::Mutex::new(None);
    let sink = |p: &IndexProgress| {
        if p.phase == "embedding" {
            let mut s = seen.lock().expect("lock");
            if s.is_none() {
                *s = Some(engine.status(&repo).expect("status").progress.expect("progress"));
            }
        }
    };
    let summary = engine.index(&repo, &IndexOptions::default(), &sink).expect("index");
    let e = summary.embeddings.expect("embedded");
    let p = seen.into_inner().expect("lock").expect("an embedding phase was seen");
    assert_eq!(p.phase, "embedding");
    assert!(e.chunks_embedded > e.files_embedded, "the repository has more chunks than files: {e:?}");
    assert_eq!((p.files_done, p.files_total), (0, e.files_embedded), "files, not chunks: {p:?}");
    assert_eq!((p.chunks_done, p.chunks_total), (Some(0), Some(e.chunks_embedded)), "{p:?}");
    assert_eq!(p.measure(), (0, e.chunks_embedded, ProgressUnit::Chunks), "what a bar shows: {p:?}");
    // As the servers write it: the unit named, chunks in their own fields.
    let json = serde_json::to_value(&p).expect("json");
    assert_eq!(json["unit"], "chunks");
    assert_eq!(json["files_total"], e.files_embedded);
    assert_eq!(json["chunks_total"], e.chunks_embedded);
}

/// Pages of `q` at `limit`, following the cursor to the end.
fn pages(engine: &Engine, repo: &Path, q: &str, limit: usize) -> Vec<SearchResponse> {
    let mut out: Vec<SearchResponse> = Vec::new();
    let mut cursor = None;
    loop {
        let req = SearchRequest { query: q.into(), limit: Some(limit), cursor, ..Default::default() };
        let page = engine.search(repo, &req).expect("page");
        cursor = Some(page.next_cursor.clone()).filter(|c| !c.is_empty());
        out.push(page);
        if cursor.is_none() {
            return out;
        }
    }
}

/// A hit only the vectors found, sharing no word with the query and barely close to it, read
/// score 1.00 beside a confidence of 0.00 (a hit's score was relative to the best alone), and
/// each page a cursor reached reported its own confidence (1.00, then 0.00, then 0.40 for
/// "session store" a hit a page). Scores are now never above the confidence, every page of a
/// query reports the first page's, and the order is the one a single page has.
#[test]
fn hybrid_scores_stay_within_the_confidence_and_every_page_reports_the_first_pages() {
    let (env, repo) = embedded_sample();
    let server = fake();
    let engine = env.engine_for("ollama", &server.url(), "fake-chat", "fake-embed");
    // No word of this query is in the repository: the vectors alone find anything.
    let r = search(&engine, &repo, "zebra quantum");
    assert!(!r.results.is_empty() && r.results.iter().all(|h| h.retrievers == ["vector"]), "{r:?}");
    assert_eq!(r.confidence, 0.0);
    assert!(r.results.iter().all(|h| h.score == 0.0), "no hit claims more than the confidence: {:?}", r.results);
    for q in ["session store", "session zebra", "dashboard renderer", "zebra quantum"] {
        let whole = search(&engine, &repo, q);
        assert!(whole.results.iter().all(|h| h.score <= whole.confidence as f32), "{q}: {whole:?}");
        let paged = pages(&engine, &repo, q, 1);
        assert!(paged.len() > 2, "{q}: several pages");
        let first = paged[0].confidence;
        assert!(
            paged.iter().all(|p| p.confidence == first),
            "{q}: {:?}",
            paged.iter().map(|p| p.confidence).collect::<Vec<_>>()
        );
        // The order is unchanged: the pages read as the one page does.
        let ids =
            |hits: &[docdex::engine::protocol::SearchHit]| hits.iter().map(|h| h.chunk_id.clone()).collect::<Vec<_>>();
        let concatenated: Vec<String> = paged.iter().flat_map(|p| ids(&p.results)).collect();
        assert_eq!(concatenated, ids(&whole.results), "{q}");
    }
}
