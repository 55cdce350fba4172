//! Search behaviour: ranking a developer expects, filters, cursors, snippets, confidence.

use crate::util::{distinct, hit_paths, quiet, sample_repo, write, Env};
use docdex::engine::protocol::SearchRequest;
use docdex::engine::IndexOptions;

fn indexed(env: &Env, name: &str, build: impl Fn(&std::path::Path)) -> std::path::PathBuf {
    let repo = env.repo(name);
    build(&repo);
    env.engine().index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    repo
}

#[test]
fn identifiers_match_whole_and_by_parts_case_insensitively() {
    let env = Env::new();
    let repo = indexed(&env, "r", sample_repo);
    let e = env.engine();
    assert_eq!(hit_paths(&e, &repo, "SessionStore")[0], "src/auth/session.rs");
    assert_eq!(hit_paths(&e, &repo, "session store")[0], "src/auth/session.rs");
    assert_eq!(hit_paths(&e, &repo, "expire_stale_sessions")[0], "src/auth/session.rs");
    assert_eq!(hit_paths(&e, &repo, "EXPIRE STALE")[0], "src/auth/session.rs");
    assert_eq!(hit_paths(&e, &repo, "user name")[0], "web/app.ts", "camelCase parts");
    assert_eq!(hit_paths(&e, &repo, "parsing configuration")[0], "src/parser.py", "stemmed plain language");
}

#[test]
fn a_query_with_no_searchable_word_says_why_it_found_nothing() {
    let env = Env::new();
    let repo = indexed(&env, "r", sample_repo);
    let e = env.engine();
    let ask = |q: &str| e.search(&repo, &SearchRequest { query: q.into(), ..Default::default() }).expect("search");
    let blob = "a".repeat(30) + &"9f".repeat(20);
    for q in ["how does the", "f", "a b c", blob.as_str()] {
        let r = ask(q);
        assert!(r.results.is_empty(), "{q}");
        let note = r.note.unwrap_or_default();
        assert!(note.contains("no searchable words") && note.contains("symbol search"), "{q}: {note}");
        assert!(note.contains("over 48 characters"), "{note}");
    }
    // A query whose words are searchable but match nothing has no such note, nor has a hit.
    let r = ask("zzzqqqxxyy");
    assert!(r.results.is_empty() && r.note.is_none());
    let r = ask("session");
    assert!(!r.results.is_empty() && r.note.is_none());
}

#[test]
fn a_limit_outside_a_page_says_what_it_was_taken_as() {
    let env = Env::new();
    let repo = indexed(&env, "r", sample_repo);
    let e = env.engine();
    let ask = |limit: usize| {
        e.search(&repo, &SearchRequest { query: "session".into(), limit: Some(limit), ..Default::default() })
            .expect("search")
    };
    let big = ask(5000);
    assert!(!big.results.is_empty() && big.results.len() <= docdex::engine::search::MAX_PAGE);
    let note = big.note.unwrap_or_default();
    assert!(note.contains("5000") && note.contains("200") && note.contains("next_cursor"), "{note}");
    let zero = ask(0);
    assert_eq!(zero.results.len(), 1);
    assert!(zero.note.unwrap_or_default().contains("taken as 1"));
    assert!(ask(10).note.is_none(), "a limit in range has no note");

    // The command line prints it too: after the hits, in a batch's line, and with --libs.
    let r = repo.to_str().unwrap();
    let human = |args: &[&str]| {
        let out = env.run(args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    let text = human(&["search", "--repo", r, "session", "--limit", "500"]);
    assert!(text.contains("note: limit 500 was cut to 200"), "{text}");
    let text = human(&["search", "--repo", r, "session", "--limit", "0"]);
    assert!(text.contains("note: limit 0 was taken as 1"), "{text}");
    let text = human(&["search", "--repo", r, "session", "--limit", "500", "--libs"]);
    assert!(text.contains("note: limit 500 was cut to 200"), "{text}");
    assert!(!human(&["search", "--repo", r, "session", "--limit", "5"]).contains("note: limit"));
    let queries = env.dir.path().join("queries.jsonl");
    std::fs::write(&queries, "\"session\"\n").unwrap();
    let text = human(&["search", "--repo", r, "--batch", queries.to_str().unwrap(), "--limit", "500"]);
    assert!(text.contains("note: limit 500 was cut to 200"), "{text}");
}

#[test]
fn a_query_that_is_a_file_name_puts_that_file_first() {
    let env = Env::new();
    let repo = indexed(&env, "r", |root| {
        write(root, "pkg/bar.py", "WIDTH = 1\n");
        let busy = "def progress_bar(bar):\n    # a bar of bars: bar, bar, bar\n    return bar\n";
        write(root, "pkg/progress_bar.py", busy);
        write(root, "pkg/foobar.py", busy);
        write(root, "docs/bar.md", "# bar\n");
    });
    let e = env.engine();
    let first = |q: &str| hit_paths(&e, &repo, q).first().cloned().unwrap_or_default();
    // Without the rule, the busier files win on their words.
    assert_eq!(first("bar"), "pkg/progress_bar.py");
    for q in ["bar.py", "pkg/bar.py", "./pkg/bar.py", "BAR.PY", "`bar.py`"] {
        assert_eq!(first(q), "pkg/bar.py", "{q}");
    }
    assert_eq!(first("bar.md"), "docs/bar.md");
    assert_eq!(first("progress_bar.py"), "pkg/progress_bar.py");
    // A dotted name that is no file type is not a file name.
    assert_ne!(first("bar.progress"), "");
}

#[test]
fn chinese_japanese_and_korean_text_is_found_by_a_phrase_inside_it() {
    let env = Env::new();
    let repo = indexed(&env, "r", |root| {
        write(root, "docs/zh.md", "# 说明\n\n这是对亚洲语言支持的测试，用于检查分词是否正确。\n");
        write(root, "docs/ja.md", "# 説明\n\nこのツールはコードを検索します。\n");
        write(root, "docs/ko.md", "# 설명\n\n한국어 문서를 검색합니다.\n");
        write(root, "src/main.rs", "fn main() {}\n");
    });
    let e = env.engine();
    let first = |q: &str| hit_paths(&e, &repo, q).first().cloned().unwrap_or_default();
    assert_eq!(first("测试"), "docs/zh.md");
    assert_eq!(first("分词"), "docs/zh.md");
    assert_eq!(first("検索"), "docs/ja.md");
    assert_eq!(first("검색"), "docs/ko.md");
    assert!(hit_paths(&e, &repo, "天气").is_empty(), "a pair the text does not hold finds nothing");
}

/// A query without accents found nothing in accented text ("cafe" missed "café", "resume"
/// missed "résumé", "uber" missed "Über"), nor the other way round, in prose and identifiers.
/// Letters with a plain Latin base are folded to ASCII at index and query time alike; the
/// highlight covers the accented word as written; Greek, Cyrillic and CJK keep their letters.
#[test]
fn accents_are_folded_so_a_plain_query_finds_accented_text_and_back() {
    let env = Env::new();
    let repo = indexed(&env, "r", |root| {
        write(root, "docs/menu.md", "# Menu\n\nLe café noir est servi au comptoir.\n");
        write(root, "docs/cv.md", "# Jobs\n\nSend your résumé to the hiring desk.\n");
        write(root, "src/client.rs", "pub struct ÜberClient;\nfn fahre_über_brücke() {}\n");
        write(root, "docs/de.md", "# Strassen\n\nDie Straße führt nach Łódź und Ærøskøbing.\n");
        // Decomposed (NFD) text, as macOS and some PDFs write it: e + U+0301.
        write(root, "docs/nfd.md", "# Notes\n\nA naive\u{301} fiance\u{301}e at the ope\u{301}ra.\n");
        write(root, "docs/plain.md", "# Plain\n\nThe cafeteria resumes uber-fast delivery.\n");
        write(root, "docs/ru.md", "# Ру\n\nЙогурт и кефир.\n");
        write(root, "docs/zh.md", "# 说明\n\n这是对亚洲语言支持的测试。\n");
    });
    let e = env.engine();
    let first = |q: &str| hit_paths(&e, &repo, q).first().cloned().unwrap_or_default();
    assert_eq!(first("cafe noir"), "docs/menu.md");
    assert_eq!(first("résumé"), "docs/cv.md");
    assert_eq!(first("resume hiring"), "docs/cv.md");
    assert_eq!(first("UberClient"), "src/client.rs");
    assert_eq!(first("uber_client"), "src/client.rs", "the whole identifier, folded");
    assert_eq!(first("fahreUberBrucke"), "src/client.rs");
    assert_eq!(first("uber brucke"), "src/client.rs");
    assert_eq!(first("strasse lodz"), "docs/de.md");
    assert_eq!(first("aeroskobing"), "docs/de.md");
    assert_eq!(first("naïve fiancée opéra"), "docs/nfd.md");
    assert_eq!(first("cafétéria résumes"), "docs/plain.md", "the other way round");
    assert_eq!(first("йогурт"), "docs/ru.md");
    assert!(hit_paths(&e, &repo, "иогурт").is_empty(), "Cyrillic й is no и with a mark dropped");
    assert_eq!(first("测试"), "docs/zh.md");
    // The highlight covers the accented word as the file writes it.
    let req = SearchRequest { query: "cafe".into(), limit: Some(5), ..Default::default() };
    let hit = e.search(&repo, &req).unwrap().results.into_iter().find(|h| h.path == "docs/menu.md").expect("hit");
    let file = std::fs::read_to_string(repo.join("docs/menu.md")).unwrap();
    let words: Vec<&str> =
        hit.highlights.iter().map(|h| &file.lines().nth(h.line as usize - 1).unwrap()[h.start..h.end]).collect();
    assert_eq!(words, ["café"], "{:?}", hit.highlights);
}

/// Greek is found without its accents (tonos, dialytika, final sigma), and a German umlaut
/// typed as its transliteration ("ueber", "Groesse") finds the umlaut; an umlaut in the query
/// still finds the umlaut, and English words meet no transliteration.
#[test]
fn greek_accents_and_umlaut_transliterations_are_found() {
    let env = Env::new();
    let repo = indexed(&env, "r", |root| {
        write(root, "docs/el.md", "# Οδηγός\n\nΗ ελληνική γλώσσα και το προϊόν. Ο λόγος.\n");
        write(root, "docs/de.md", "# Hinweise\n\nÜber die Größe der Äpfel.\n");
        write(root, "src/konto.rs", "pub fn überweisung_prüfen() {}\n");
        write(root, "docs/queue.md", "# Queue\n\nThe blue queue drains.\n");
    });
    let e = env.engine();
    let first = |q: &str| hit_paths(&e, &repo, q).first().cloned().unwrap_or_default();
    assert_eq!(first("ελληνικη γλωσσα"), "docs/el.md");
    assert_eq!(first("ΠΡΟΙΟΝ"), "docs/el.md");
    assert_eq!(first("λογος"), "docs/el.md", "final sigma is sigma, the tonos dropped");
    assert_eq!(first("ΛΌΓΟΣ"), "docs/el.md");
    assert_eq!(first("ueber groesse aepfel"), "docs/de.md");
    assert_eq!(first("über größe"), "docs/de.md");
    assert_eq!(first("uber grosse"), "docs/de.md");
    assert_eq!(first("ueberweisung pruefen"), "src/konto.rs");
    assert_eq!(first("ueberweisungPruefen"), "src/konto.rs", "the whole identifier, transliterated");
    let queue = hit_paths(&e, &repo, "blue queue");
    assert_eq!(queue, ["docs/queue.md"], "English words meet no transliteration");
    // The highlight covers the umlaut word as written.
    let req = SearchRequest { query: "ueber".into(), limit: Some(5), ..Default::default() };
    let hit = e.search(&repo, &req).unwrap().results.into_iter().find(|h| h.path == "docs/de.md").expect("hit");
    let file = std::fs::read_to_string(repo.join("docs/de.md")).unwrap();
    let words: Vec<&str> =
        hit.highlights.iter().map(|h| &file.lines().nth(h.line as usize - 1).unwrap()[h.start..h.end]).collect();
    assert_eq!(words, ["Über"], "{:?}", hit.highlights);
}

#[test]
fn a_test_named_longer_than_a_word_is_still_found_by_its_name() {
    let env = Env::new();
    let name = "test_merge_sorted_index_u64_asc_nulls_only_in_first_segment";
    let repo = indexed(&env, "r", |r| {
        sample_repo(r);
        write(r, "tests/merge.rs", format!("#[test]\nfn {name}() {{\n    check();\n}}\n"));
        write(r, "src/merge.rs", "/// Merges segments.\npub fn merge(a: &[u64]) -> Vec<u64> { a.to_vec() }\n");
        write(
            r,
            "src/blob.rs",
            "const KEY: &str = \"d41d8cd98f00b204e9800998ecf8427ed41d8cd98f00b204e9800998ecf8427e\";\n",
        );
    });
    let e = env.engine();
    assert_eq!(hit_paths(&e, &repo, name)[0], "tests/merge.rs", "the long name's parts find it");
    assert!(hit_paths(&e, &repo, "d41d8cd98f00b204e9800998ecf8427ed41d8cd98f00b204e9800998ecf8427e").is_empty());
}

#[test]
fn path_words_find_the_file() {
    let env = Env::new();
    let repo = indexed(&env, "r", |r| {
        sample_repo(r);
        write(r, "src/other.rs", "// talks about auth and session a lot: auth session auth session\nfn x() {}\n");
    });
    assert_eq!(hit_paths(&env.engine(), &repo, "session auth")[0], "src/auth/session.rs");
}

#[test]
fn source_outranks_lockfiles_and_changelogs_unless_asked() {
    let env = Env::new();
    let repo = indexed(&env, "r", |r| {
        write(r, "src/retry.rs", "/// Retry a request with backoff.\npub fn retry_with_backoff(attempts: u32) {}\n");
        write(r, "CHANGELOG.md", "# Changelog\n\n## 1.2\n- retry with backoff retry backoff retry backoff\n");
        write(r, "Cargo.lock", "[[package]]\nname = \"retry\"\nversion = \"0.1\"\n# backoff retry retry\n");
    });
    let e = env.engine();
    assert_eq!(hit_paths(&e, &repo, "retry backoff")[0], "src/retry.rs");
    assert_eq!(hit_paths(&e, &repo, "changelog retry backoff")[0], "CHANGELOG.md");
}

#[test]
fn files_marked_as_generated_rank_below_hand_written_code_unless_asked() {
    let env = Env::new();
    let repo = indexed(&env, "r", |r| {
        write(
            r,
            "api/client.go",
            "// Code generated by openapi-generator. DO NOT EDIT.\n\npackage api\n\n// Refresh the access token before it expires: refresh token expiry refresh.\nfunc RefreshToken() {}\n",
        );
        write(
            r,
            "auth/refresh.go",
            "package auth\n\n// Refresh the access token when it expires.\nfunc Refresh() {}\n",
        );
        // A docstring that mentions generated things is not a marker.
        write(
            r,
            "auth/tables.py",
            "\"\"\"Parser engine for the grammar tables generated by pgen.\"\"\"\n\ndef expiry_tables():\n    pass\n",
        );
    });
    let e = env.engine();
    assert_eq!(hit_paths(&e, &repo, "refresh the access token when it expires")[0], "auth/refresh.go");
    assert_eq!(hit_paths(&e, &repo, "generated client refresh token expiry")[0], "api/client.go");
    assert_eq!(hit_paths(&e, &repo, "expiry tables")[0], "auth/tables.py");
}

#[test]
fn top_results_are_diversified_across_files() {
    let env = Env::new();
    let repo = indexed(&env, "r", |r| {
        let big: String = (0..40)
            .map(|i| format!("fn tokenize_part_{i}() {{\n    tokenize(tokenize);\n}}\n\n"))
            .collect::<Vec<_>>()
            .concat();
        let mut chunked = String::new();
        for i in 0..30 {
            chunked.push_str(&big.replace("part_", &format!("p{i}_")));
            chunked.push_str("\n\n");
        }
        write(r, "src/big.rs", chunked);
        for i in 0..6 {
            write(r, &format!("src/small{i}.rs"), "fn tokenize_input() { tokenize(); }\n");
        }
    });
    let paths = hit_paths(&env.engine(), &repo, "tokenize");
    // Every file gets a place before the big one repeats itself.
    assert_eq!(distinct(paths[..7].to_vec()).len(), 7, "{paths:?}");
    assert_eq!(paths[0], "src/big.rs", "the strongest file still leads: {paths:?}");
}

#[test]
fn the_first_ten_hits_name_ten_files() {
    let env = Env::new();
    let repo = indexed(&env, "r", |r| {
        // One file answers strongly in many places; eleven answer weakly, once each.
        let strong: String = (0..40)
            .map(|i| format!("fn shard_rebalance_{i}() {{\n    rebalance(shard, shard, shard);\n}}\n\n"))
            .collect::<Vec<_>>()
            .concat();
        write(r, "src/strong.rs", strong.repeat(20));
        for i in 0..11 {
            let filler: String = (0..30).map(|j| format!("fn helper_{j}() {{ let x = {j}; }}\n")).collect();
            write(r, &format!("src/weak{i}.rs"), format!("// rebalance the shard\n{filler}"));
        }
    });
    let paths = hit_paths(&env.engine(), &repo, "rebalance shard");
    assert_eq!(paths[0], "src/strong.rs", "{paths:?}");
    assert_eq!(distinct(paths[..10].to_vec()).len(), 10, "ten hits, ten files: {paths:?}");
    assert!(paths[10..].contains(&"src/strong.rs".to_string()), "its other chunks follow: {paths:?}");
}

#[test]
fn a_module_many_files_import_ranks_above_an_equal_match_no_one_imports() {
    // The same two modules in two repositories; only which one the others import differs.
    let env = Env::new();
    let module = "def retry_with_backoff(attempts):\n    \"\"\"Retry the request with exponential backoff.\"\"\"\n    return attempts\n";
    for (name, imported) in [("a", "alpha"), ("b", "beta")] {
        let repo = indexed(&env, name, |r| {
            write(r, "alpha.py", module);
            write(r, "beta.py", module);
            for i in 0..8 {
                write(r, &format!("user{i}.py"), format!("import {imported}\n\ndef main{i}():\n    pass\n"));
            }
        });
        let paths = hit_paths(&env.engine(), &repo, "retry request backoff");
        assert_eq!(paths[0], format!("{imported}.py"), "the imported module leads: {paths:?}");
    }
}

#[test]
fn filters_by_path_prefix_and_language() {
    let env = Env::new();
    let repo = indexed(&env, "r", |r| {
        write(r, "src/a.rs", "fn ocelot() {}\n");
        write(r, "lib/b.py", "def ocelot(): pass\n");
        write(r, "docs/ocelot.md", "# Ocelot\n");
    });
    let e = env.engine();
    let search = |prefix: Option<&str>, lang: Option<&str>| {
        let req = SearchRequest {
            query: "ocelot".into(),
            path_prefix: prefix.map(String::from),
            lang: lang.map(String::from),
            ..Default::default()
        };
        let mut p: Vec<String> = e.search(&repo, &req).unwrap().results.into_iter().map(|h| h.path).collect();
        p.sort();
        p
    };
    assert_eq!(search(None, None), ["docs/ocelot.md", "lib/b.py", "src/a.rs"]);
    assert_eq!(search(Some("src"), None), ["src/a.rs"]);
    assert_eq!(search(Some("./lib/"), None), ["lib/b.py"]);
    assert_eq!(search(None, Some("python")), ["lib/b.py"]);
    assert_eq!(search(Some("src"), Some("python")), Vec::<String>::new());
    // An absolute directory inside the repo filters like its relative path; `py` is python.
    let abs = std::fs::canonicalize(&repo).unwrap().join("lib");
    assert_eq!(search(Some(abs.to_str().unwrap()), Some("py")), ["lib/b.py"]);
    // A prefix outside the repository and a language the index never gives are refused.
    let ask = |prefix: Option<&str>, lang: Option<&str>| {
        let req = SearchRequest {
            query: "ocelot".into(),
            path_prefix: prefix.map(String::from),
            lang: lang.map(String::from),
            ..Default::default()
        };
        e.search(&repo, &req).map(|_| ()).unwrap_err()
    };
    assert_eq!(ask(Some("../elsewhere"), None).code(), "path_outside_repo");
    let err = ask(None, Some("cobol"));
    assert!(err.code() == "bad_request" && err.to_string().contains("unknown language \"cobol\""), "{err}");
    // Symbols and AST filters take `./` and a trailing slash the same way.
    let sym = |prefix: &str| {
        let req = docdex::engine::protocol::SymbolsRequest {
            query: Some("ocelot".into()),
            path_prefix: Some(prefix.into()),
            ..Default::default()
        };
        e.symbols(&repo, &req).unwrap().results.into_iter().map(|h| h.path).collect::<Vec<_>>()
    };
    assert_eq!(sym("./lib/"), ["lib/b.py"]);
    assert_eq!(sym("./src"), ["src/a.rs"]);
}

#[test]
fn a_path_filter_matches_whole_folders_not_text_prefixes() {
    // `celery/app` is the folder (or a file of that name), never `celery/apps/`; as git's
    // pathspecs match. A trailing slash asks for the folder only.
    let env = Env::new();
    let repo = indexed(&env, "r", |r| {
        write(r, "pkg/app/worker.py", "def lynx_worker(): pass\n");
        write(r, "pkg/apps/other.py", "def lynx_other(): pass\n");
        write(r, "pkg/application.py", "def lynx_application(): pass\n");
        write(r, "notes/app", "lynx in a file with no extension\n");
        write(r, "notes/apps.txt", "lynx again\n");
    });
    let e = env.engine();
    let search = |prefix: &str| {
        let req = SearchRequest { query: "lynx".into(), path_prefix: Some(prefix.into()), ..Default::default() };
        let mut p: Vec<String> = e.search(&repo, &req).unwrap().results.into_iter().map(|h| h.path).collect();
        p.sort();
        p.dedup();
        p
    };
    assert_eq!(search("pkg/app"), ["pkg/app/worker.py"]);
    assert_eq!(search("pkg/app/"), ["pkg/app/worker.py"]);
    assert_eq!(search("pkg"), ["pkg/app/worker.py", "pkg/application.py", "pkg/apps/other.py"]);
    // A file is matched by its own whole path.
    assert_eq!(search("notes/app"), ["notes/app"]);
    let sym = |prefix: &str| {
        let req = docdex::engine::protocol::SymbolsRequest {
            query: Some("lynx".into()),
            path_prefix: Some(prefix.into()),
            ..Default::default()
        };
        let mut p: Vec<String> = e.symbols(&repo, &req).unwrap().results.into_iter().map(|h| h.path).collect();
        p.sort();
        p
    };
    assert_eq!(sym("pkg/app"), ["pkg/app/worker.py"]);
    assert_eq!(sym("./pkg/apps"), ["pkg/apps/other.py"]);
}

#[test]
fn every_page_of_a_query_reports_the_first_pages_confidence() {
    // Confidence was computed over the page returned: "otter beaver" read 1.00 on its first
    // page and 0.41 on the pages that hold only beavers.
    let env = Env::new();
    let repo = indexed(&env, "r", |r| {
        write(r, "m/both.rs", "fn otter_beaver() { otter(); beaver(); }\n");
        for i in 0..12 {
            write(r, &format!("m/f{i:02}.rs"), format!("fn beaver_{i}() {{ beaver(); }}\n"));
        }
    });
    let e = env.engine();
    let req = |cursor: Option<String>| SearchRequest {
        query: "otter beaver".into(),
        limit: Some(5),
        cursor,
        ..Default::default()
    };
    let first = e.search(&repo, &req(None)).expect("search");
    assert_eq!(first.results[0].path, "m/both.rs");
    let mut cursor = first.next_cursor.clone();
    let mut seen = vec![first.confidence];
    while !cursor.is_empty() {
        let page = e.search(&repo, &req(Some(cursor.clone()))).expect("page");
        seen.push(page.confidence);
        cursor = page.next_cursor;
    }
    assert_eq!(seen.len(), 3);
    assert!(seen.iter().all(|c| *c == first.confidence), "{seen:?}");
}

#[test]
fn cursors_are_deterministic_and_pages_do_not_overlap() {
    let env = Env::new();
    let repo = indexed(&env, "r", |r| {
        for i in 0..30 {
            write(r, &format!("m/f{i:02}.rs"), format!("fn beaver_{i}() {{ beaver(); }}\n"));
        }
    });
    let e = env.engine();
    let req = |limit, cursor: Option<String>| SearchRequest {
        query: "beaver".into(),
        limit: Some(limit),
        cursor,
        ..Default::default()
    };
    let p1 = e.search(&repo, &req(7, None)).unwrap();
    let again = e.search(&repo, &req(7, None)).unwrap();
    assert_eq!(p1.next_cursor, again.next_cursor);
    assert!(!p1.next_cursor.is_empty());
    let ids =
        |r: &docdex::engine::protocol::SearchResponse| r.results.iter().map(|h| h.chunk_id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&p1), ids(&again));
    let mut all = ids(&p1);
    let mut cursor = p1.next_cursor.clone();
    while !cursor.is_empty() {
        let page = e.search(&repo, &req(7, Some(cursor.clone()))).unwrap();
        all.extend(ids(&page));
        cursor = page.next_cursor;
    }
    assert_eq!(all.len(), 30);
    let unique: std::collections::HashSet<_> = all.iter().collect();
    assert_eq!(unique.len(), 30, "pages overlap");
    let one_page = e.search(&repo, &req(30, None)).unwrap();
    assert_eq!(ids(&one_page), all, "paging must equal one big page");
    // A cursor from another query is refused.
    let other = SearchRequest {
        query: "otter".into(),
        limit: Some(7),
        cursor: Some(p1.next_cursor.clone()),
        ..Default::default()
    };
    assert!(e.search(&repo, &other).is_err());
}

/// A first page asked without `limit` and its next page asked with the default spelled out are
/// the same query (tour30 F2: the cursor hashed the `limit` field as sent, so an HTTP client that
/// added `"limit": 10` to its second request was told the cursor belonged to another query).
#[test]
fn a_cursor_follows_the_page_size_served_not_how_it_was_asked() {
    let env = Env::new();
    let repo = indexed(&env, "r", |r| {
        for i in 0..30 {
            write(r, &format!("m/f{i:02}.rs"), format!("fn beaver_{i}() {{ beaver(); }}\n"));
        }
    });
    let e = env.engine();
    let req =
        |limit, cursor: Option<String>| SearchRequest { query: "beaver".into(), limit, cursor, ..Default::default() };
    let first = e.search(&repo, &req(None, None)).unwrap();
    assert_eq!(first.results.len(), 10);
    let second = e.search(&repo, &req(Some(10), Some(first.next_cursor.clone()))).expect("limit 10 spelled out");
    let unspelled = e.search(&repo, &req(None, Some(first.next_cursor.clone()))).unwrap();
    let ids =
        |r: &docdex::engine::protocol::SearchResponse| r.results.iter().map(|h| h.chunk_id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&second), ids(&unspelled));
    // limit 0 is served as 1: their cursors are one query's.
    let zero = e.search(&repo, &req(Some(0), None)).unwrap();
    assert!(e.search(&repo, &req(Some(1), Some(zero.next_cursor.clone()))).is_ok());
    // Another page size is still refused, and the error says what to keep.
    let err = e.search(&repo, &req(Some(7), Some(first.next_cursor.clone()))).unwrap_err().to_string();
    assert!(err.contains("limit"), "{err}");
}

/// A cursor counts into one index generation's ranking; used after the index changed it still
/// answers, from the new ranking, and says so (tour30 F3: pages silently skipped a hit that
/// moved up, or repeated one).
#[test]
fn a_cursor_used_after_the_index_changed_says_the_page_may_repeat_or_miss_hits() {
    let env = Env::new();
    let repo = indexed(&env, "r", |r| {
        for i in 0..6 {
            write(r, &format!("m/f{i:02}.rs"), format!("fn beaver_{i}() {{ beaver(); }}\n"));
        }
    });
    let e = env.engine();
    let req =
        |cursor: Option<String>| SearchRequest { query: "beaver".into(), limit: Some(2), cursor, ..Default::default() };
    let first = e.search(&repo, &req(None)).unwrap();
    let same = e.search(&repo, &req(Some(first.next_cursor.clone()))).unwrap();
    assert!(same.note.is_none(), "{:?}", same.note);
    write(&repo, "m/zz.rs", "fn beaver_beaver() { beaver(); beaver(); beaver(); }\n");
    e.index(&repo, &IndexOptions::default(), &quiet()).expect("reindex");
    let moved = e.search(&repo, &req(Some(first.next_cursor.clone()))).unwrap();
    assert_eq!(moved.results.len(), 2, "the page is still served");
    let note = moved.note.unwrap_or_default();
    assert!(note.contains("index changed") && note.contains(&format!("now {}", moved.generation)), "{note}");
    // Its own next cursor is the new generation's: no note from there on.
    let next = e.search(&repo, &req(Some(moved.next_cursor.clone()))).unwrap();
    assert!(next.note.is_none(), "{:?}", next.note);
}

/// Syntax other search tools read (`lang:python`, `path:src`, `-word`, `*.ts`) is searched as
/// words; the answer is the same, and its note says what was not interpreted and what to pass
/// instead (tour30 F6: `lang:python parse` returned Rust and TypeScript hits without a word).
#[test]
fn query_syntax_docdex_does_not_read_is_named_in_the_note() {
    let env = Env::new();
    let repo = indexed(&env, "r", sample_repo);
    let e = env.engine();
    let ask = |q: &str| e.search(&repo, &SearchRequest { query: q.into(), ..Default::default() }).expect("search");
    let r = ask("lang:python parse config");
    let note = r.note.clone().unwrap_or_default();
    assert!(note.contains("`lang:python` is not a filter") && note.contains("--lang"), "{note}");
    let ids =
        |r: &docdex::engine::protocol::SearchResponse| r.results.iter().map(|h| h.chunk_id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&r), ids(&ask("lang python parse config")), "the search itself is unchanged");
    let note = ask("path:src session -store").note.unwrap_or_default();
    assert!(
        note.contains("`path:src`") && note.contains("--path") && note.contains("`-store` does not exclude"),
        "{note}"
    );
    assert!(ask("web/*.ts user").note.unwrap_or_default().contains("not expanded"));
    for plain in ["session store", "SessionStore::new", "re-index the x-ray"] {
        assert_eq!(ask(plain).note, None, "{plain}");
    }
}

/// A path filter that matches no indexed file (a typo, another case) answers no hits with a
/// note saying the filter matched nothing, and names a folder differing only in case (tour30
/// F7: "no results" read as "no such code"). A filter that matches files but no hit stays quiet.
#[test]
fn a_path_filter_matching_no_file_says_so() {
    let env = Env::new();
    let repo = indexed(&env, "r", sample_repo);
    let e = env.engine();
    let ask = |q: &str, p: &str| {
        e.search(&repo, &SearchRequest { query: q.into(), path_prefix: Some(p.into()), ..Default::default() })
            .expect("search")
    };
    let r = ask("session", "SRC/auth");
    assert!(r.results.is_empty());
    let note = r.note.unwrap_or_default();
    assert!(note.contains("no indexed file is under \"SRC/auth\"") && note.contains("\"src/auth\""), "{note}");
    let note = ask("session", "sr").note.unwrap_or_default();
    assert!(note.contains("matches nothing") && !note.contains("did you mean"), "{note}");
    assert_eq!(ask("zzzqqqxxyy", "src/").note, None, "files are under src/, just no hit");
    assert!(!ask("session", "src/auth").results.is_empty());
}

#[test]
fn snippets_show_matching_lines_with_highlights() {
    let env = Env::new();
    let lines: String =
        (1..=40)
            .map(|i| {
                if i == 25 {
                    "    let flamingo_count = 3;\n".to_string()
                } else {
                    format!("    let filler_{i} = {i};\n")
                }
            })
            .collect();
    let repo = indexed(&env, "r", |r| write(r, "src/zoo.rs", format!("fn zoo() {{\n{lines}}}\n")));
    let resp = env.engine().search(&repo, &SearchRequest { query: "flamingo".into(), ..Default::default() }).unwrap();
    let hit = &resp.results[0];
    assert!(hit.snippet.contains("flamingo_count"), "{}", hit.snippet);
    assert!(hit.snippet_line_start <= 26 && hit.snippet_line_start >= 24);
    assert!(hit.highlights.iter().any(|h| h.line == 26), "{:?}", hit.highlights);
    assert!(hit.line_start <= 26 && hit.line_end >= 26);
    assert!(!hit.stale);
    assert_eq!(hit.generation, resp.generation);
}

#[test]
fn confidence_tracks_how_much_of_the_query_is_answered() {
    let env = Env::new();
    let repo = indexed(&env, "r", sample_repo);
    let e = env.engine();
    let conf = |q: &str| e.search(&repo, &SearchRequest { query: q.into(), ..Default::default() }).unwrap().confidence;
    let full = conf("expire stale sessions");
    let partial = conf("expire stale sessions kubernetes helm terraform");
    let none = conf("kubernetes helm terraform");
    assert!(full > 0.9, "{full}");
    assert!(partial < full && partial > 0.0, "{partial}");
    assert_eq!(none, 0.0);
}

#[test]
fn edited_file_is_flagged_stale_until_reindexed() {
    let env = Env::new();
    let repo = indexed(&env, "r", |r| write(r, "a.rs", "fn lemur() {}\n"));
    std::thread::sleep(std::time::Duration::from_millis(20));
    write(&repo, "a.rs", "fn lemur() { changed(); }\n");
    let resp = env.engine().search(&repo, &SearchRequest { query: "lemur".into(), ..Default::default() }).unwrap();
    assert!(resp.results[0].stale);
    assert!(!resp.results[0].gone, "changed, not gone");
}

/// A deleted file's hit read "(changed since indexed)" over an empty snippet (tour36 F5): it is
/// `gone`, and the command line says so.
#[test]
fn a_deleted_files_hit_is_gone_not_changed() {
    let env = Env::new();
    let repo = indexed(&env, "r", |r| {
        write(r, "a.rs", "fn marmot() {}\n");
        write(r, "b.rs", "fn marmot_helper() {}\n");
    });
    std::fs::remove_file(repo.join("a.rs")).unwrap();
    let resp = env.engine().search(&repo, &SearchRequest { query: "marmot".into(), ..Default::default() }).unwrap();
    let a = resp.results.iter().find(|h| h.path == "a.rs").expect("still indexed until the next run");
    assert!(a.gone && a.stale && a.snippet.is_empty(), "{a:?}");
    assert!(resp.results.iter().filter(|h| h.path == "b.rs").all(|h| !h.gone));
    let out = env.run(&["search", "--repo", repo.to_str().unwrap(), "marmot"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("a.rs:1-1") && text.contains("(gone since indexed"), "{text}");
    assert!(!text.contains("changed since indexed"), "{text}");
}

#[test]
fn reading_no_path_or_a_folder_says_what_to_give() {
    let env = Env::new();
    let repo = indexed(&env, "r", |r| write(r, "src/a.rs", "fn ocelot() {}\n"));
    let e = env.engine();
    let get = |p: &str| {
        e.get_file(&repo, &docdex::engine::protocol::FileRequest { path: p.into(), ..Default::default() })
            .unwrap_err()
            .to_string()
    };
    let empty = get("");
    assert!(empty.contains("no file given") && empty.contains("relative to the repository"), "{empty}");
    assert!(get("  ").contains("no file given"));
    let dir = get("src");
    assert!(dir.contains("src is a directory"), "{dir}");
}

/// A query that is a name spelt exactly as some definitions are puts those first: `Worker`
/// means `class Worker`, though `def worker` (whose docstring says Worker three times) matches
/// ignoring case and ranked first (a code-intelligence tour; celery's `search Celery` put `def
/// celery` above `class Celery`). Typed in lower case it means the function; a spelling no
/// definition has (`WORKER`) keeps both definitions first.
#[test]
fn a_name_spelt_as_typed_ranks_the_definition_spelt_so_first() {
    let env = Env::new();
    let repo = indexed(&env, "case", |r| {
        write(r, "app/base.py", "class Worker:\n    def start(self):\n        return 1\n");
        write(
            r,
            "cli/worker.py",
            "import click\n\n@click.command()\ndef worker(ctx):\n    \"\"\"Start a Worker.\n\n    The Worker runs tasks; see Worker options.\n    \"\"\"\n    return ctx\n",
        );
    });
    let e = env.engine();
    let first = |q: &str| distinct(hit_paths(&e, &repo, q));
    assert_eq!(first("Worker")[..2], ["app/base.py", "cli/worker.py"]);
    assert_eq!(first("worker")[..2], ["cli/worker.py", "app/base.py"]);
    let mut both = first("WORKER")[..2].to_vec();
    both.sort();
    assert_eq!(both, ["app/base.py", "cli/worker.py"]);
}
