//! `docdex search --batch`: many queries in one process, each answer equal to the single search.

use crate::util::{sample_repo, write, Env};
use serde_json::Value;

#[test]
fn batch_results_equal_single_searches() {
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    let queries = env.dir.path().join("queries.jsonl");
    write(
        env.dir.path(),
        "queries.jsonl",
        "\"expire stale sessions\"\n{\"query\": \"parse config\", \"limit\": 1}\n\n{\"query\": \"render dashboard\", \"lang\": \"typescript\"}\n{\"query\": \"   \"}\n",
    );
    let out = env.run(&["search", "--repo", r, "--batch", queries.to_str().unwrap(), "--json", "-n", "5"]);
    // One query (the blank one) failed: every answer is printed, and the exit code says so.
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("4 queries, 1 failed"));
    let items: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON per line"))
        .collect();
    assert_eq!(items.len(), 4);
    let singles = [
        env.json(&["search", "--repo", r, "--json", "-n", "5", "expire stale sessions"]),
        env.json(&["search", "--repo", r, "--json", "-n", "1", "parse config"]),
        env.json(&["search", "--repo", r, "--json", "-n", "5", "--lang", "typescript", "render dashboard"]),
    ];
    for (i, single) in singles.iter().enumerate() {
        let batch = &items[i]["response"];
        assert_eq!(items[i]["index"], i);
        assert!(!single["results"].as_array().unwrap().is_empty(), "{single}");
        for key in ["results", "total_hits", "confidence", "next_cursor", "generation"] {
            assert_eq!(batch[key], single[key], "query {i}: {key} differs");
        }
    }
    assert_eq!(items[1]["response"]["results"].as_array().unwrap().len(), 1, "a per-query limit wins");
    assert_eq!(items[3]["error_code"], "bad_request", "{}", items[3]);
    assert!(items[3].get("response").is_none());

    // A JSON array works too; a malformed file is a clear error.
    write(env.dir.path(), "queries.json", r#"["session store", {"query": "parse config"}]"#);
    let arr = env.dir.path().join("queries.json");
    let out = env.run(&["search", "--repo", r, "--batch", arr.to_str().unwrap()]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("session store") && text.contains("src/auth/session.rs"), "{text}");
    // A plain list, one query per line, is read as written; a line that starts as JSON and is
    // not JSON is a clear error naming its line.
    write(env.dir.path(), "plain.txt", "session store\n\nparse config\n");
    let out =
        env.run(&["search", "--repo", r, "--json", "--batch", env.dir.path().join("plain.txt").to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let plain: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let queries: Vec<&str> = plain.iter().map(|v| v["query"].as_str().unwrap()).collect();
    assert_eq!(queries, ["session store", "parse config"]);
    assert_eq!(plain[0]["response"]["results"][0]["path"], "src/auth/session.rs", "{}", plain[0]);
    write(env.dir.path(), "bad.jsonl", "session store\n{\"query\": \n");
    let out = env.run(&["search", "--repo", r, "--batch", env.dir.path().join("bad.jsonl").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 2") && err.contains("not valid JSON"), "{err}");
    let out = env.run(&["search", "--repo", r, "--batch", "/no/such/queries.jsonl"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));
}

/// A query object with a field a search request does not take is refused, naming the field and
/// its line, as `POST /v1/search` and MCP's `docdex_search` refuse it (tour30 F4: the batch
/// ignored `path_prefx`, so the misspelt filter searched the whole repository).
#[test]
fn a_misspelt_field_in_a_query_file_is_refused_naming_its_line() {
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    write(
        env.dir.path(),
        "typo.jsonl",
        "\"session store\"\n\n{\"query\": \"parse config\", \"path_prefx\": \"web/\"}\n",
    );
    let out =
        env.run(&["search", "--repo", r, "--batch", env.dir.path().join("typo.jsonl").to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stdout));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 3") && err.contains("path_prefx") && err.contains("path_prefix"), "{err}");
    assert!(out.stdout.is_empty() || !String::from_utf8_lossy(&out.stdout).contains("\"results\""));
    // The fields it takes still pass.
    write(
        env.dir.path(),
        "ok.json",
        r#"[{"query": "parse config", "path_prefix": "src/", "lang": "python", "limit": 2, "libs": false}]"#,
    );
    let out = env.run(&["search", "--repo", r, "--batch", env.dir.path().join("ok.json").to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
