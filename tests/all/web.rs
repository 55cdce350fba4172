//! The web tier against loopback fixture sites and Debian's real Chromium: discovery (results,
//! challenge, 429 backoff, proxy fallback, cache, spacing), fetching (extraction, redirects,
//! timeouts, per-domain delay, cache hits, the blocklist and the private-address rule), the
//! browser guard (no process left after `kill -9` or Ctrl-C), `check`, and Tier 2 of the chat
//! waterfall. No test touches the internet.

use crate::documents::HANG_GUARD;
use crate::util::{dead_url, llm_config, write, Env};
use crate::web_support::*;
use docdex::engine::protocol::{AnswerStatus, ChatTurnRequest, Slot, StepStatus, WebPolicy};
use docdex::engine::web::types::{
    DiscoveryStatus, FetchVia, PageStatus, WebFetchRequest, WebResearchRequest, WebSearchRequest,
};
use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
use std::ops::ControlFlow;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn fetch(engine: &docdex::Engine, url: &str) -> docdex::error::Result<docdex::engine::web::types::WebFetchResponse> {
    engine.web_fetch(&WebFetchRequest { url: url.into(), refresh: false, explicit: false })
}

/// One browser for the whole group: extraction, cache, redirect, spacing, timeout, blocklist
/// and the private-address rule, in one engine.
#[test]
fn chromium_fetches_clean_cache_and_guard_pages() {
    if !have_browser() {
        return;
    }
    let secret = secret_server();
    let site = Fixture::start("127.0.0.1", site(secret.url("/secret")));
    let env = Env::new();
    env.write_config(&web_config(&site.url("/html/"), "", "", ""));
    let engine = env.engine();

    // Extraction: the article as Markdown, without navigation, ads or footer.
    let first = fetch(&engine, &site.url("/doc/widgets")).expect("fetch");
    let p = &first.page;
    assert_eq!(p.via, FetchVia::Chromium, "{first:?}");
    assert!(!first.cached);
    assert_eq!(p.status, Some(200));
    assert!(p.readable);
    assert!(p.title.contains("Configuring widgets"), "{}", p.title);
    assert!(p.markdown.contains("frobnicate option"), "{}", p.markdown);
    assert!(p.markdown.contains("eight levels deep"), "{}", p.markdown);
    for clutter in ["premium plan", "Sign in to continue", "All rights reserved"] {
        assert!(!p.markdown.contains(clutter), "{clutter} kept: {}", p.markdown);
    }
    assert_eq!(p.content_hash.len(), 64);
    assert!(std::path::Path::new(&first.cache_key).is_file());
    assert!(std::path::Path::new(&first.cache_key.replace(".json", ".html")).is_file());
    // Images and stylesheets are never requested.
    assert!(site.hits("/pixel.png").is_empty() && site.hits("/style.css").is_empty());

    // A cache hit within the TTL never touches the network.
    let again = fetch(&engine, &site.url("/doc/widgets")).expect("fetch again");
    assert!(again.cached && again.page == first.page, "{again:?}");
    assert_eq!(site.hits("/doc/widgets").len(), 1, "the second fetch was served from the cache");
    assert!(again.ms < 50.0, "cache hit took {} ms", again.ms);

    // A redirect ends on its target.
    let moved = fetch(&engine, &site.url("/redirect")).expect("redirect");
    assert_eq!(moved.page.final_url, site.url("/doc/widgets"));
    assert!(moved.page.markdown.contains("frobnicate"));

    // Per-domain delay: every fetch from this host started at least 1 s after the previous one.
    let refreshed = engine
        .web_fetch(&WebFetchRequest { url: site.url("/doc/gadgets"), refresh: true, explicit: false })
        .expect("gadgets");
    assert!(refreshed.page.markdown.contains("quux bus"));
    // (The first request of each fetch: the redirect's own hop to /doc/widgets is the same fetch.)
    let mut starts: Vec<Instant> =
        ["/doc/widgets", "/redirect", "/doc/gadgets"].iter().map(|p| site.hits(p)[0].at).collect();
    starts.sort();
    for w in starts.windows(2) {
        let gap = w[1] - w[0];
        assert!(gap >= Duration::from_millis(990), "fetches {gap:?} apart");
    }

    // A page that tries to reach another loopback address gets nothing from it.
    let leaky = fetch(&engine, &site.url("/leaky")).expect("leaky page");
    assert!(leaky.page.markdown.contains("quux bus"));
    std::thread::sleep(Duration::from_millis(300));
    assert!(secret.hits("/").is_empty(), "the page reached 127.0.0.2: {:?}", secret.hits("/"));

    // Discovered URLs to private addresses or blocklisted hosts are refused; explicit ones
    // (the command line) may reach this machine, but never a blocklisted host or file://.
    let refused = fetch(&engine, &secret.url("/secret")).unwrap_err().to_string();
    assert!(refused.contains("allow_hosts"), "{refused}");
    let blocked = engine
        .web_fetch(&WebFetchRequest { url: "https://www.pinterest.com/x".into(), refresh: false, explicit: true })
        .unwrap_err()
        .to_string();
    assert!(blocked.contains("blocklist"), "{blocked}");
    let file = engine
        .web_fetch(&WebFetchRequest { url: "file:///etc/passwd".into(), refresh: false, explicit: true })
        .unwrap_err()
        .to_string();
    assert!(file.contains("only http and https"), "{file}");
    assert!(secret.hits("/").is_empty());

    // A page slower than page_load_timeout_secs fails with a clear error, in time.
    let t = Instant::now();
    let slow = fetch(&engine, &site.url("/slow")).unwrap_err().to_string();
    assert!(slow.contains("did not load within 8 s"), "{slow}");
    assert!(t.elapsed() < Duration::from_secs(20), "took {:?}", t.elapsed());
    // The browser is still usable afterwards.
    let after = engine
        .web_fetch(&WebFetchRequest { url: site.url("/doc/gadgets"), refresh: true, explicit: false })
        .expect("after a timeout");
    assert_eq!(after.page.via, FetchVia::Chromium);

    // Dropping the engine stops the browser and removes its lock files and profile.
    let home = env.home().display().to_string();
    assert!(!browser_processes(&home).is_empty(), "a browser runs while the engine lives");
    drop(engine);
    assert!(browser_processes(&home).is_empty(), "browser left after drop: {:?}", browser_processes(&home));
    let locks: Vec<_> = std::fs::read_dir(env.home().join("state/locks"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("browser-"))
        .collect();
    assert!(locks.is_empty(), "{locks:?}");
}

#[test]
fn discovery_parses_caches_spaces_and_reports_blocks() {
    let secret = secret_server();
    let site = Fixture::start("127.0.0.1", site(secret.url("/secret")));
    let env = Env::new();
    env.write_config(&web_config(&site.url("/html/"), "", "", ""));
    let engine = env.engine();
    let r = engine.web_search(&WebSearchRequest { query: "configure widgets".into(), limit: Some(10) }).unwrap();
    assert_eq!(r.status, DiscoveryStatus::Ok, "{r:?}");
    let urls: Vec<&str> = r.results.iter().map(|x| x.url.as_str()).collect();
    assert_eq!(
        urls,
        [site.url("/doc/widgets"), site.url("/doc/gadgets")],
        "ad, blocklisted and private results dropped"
    );
    assert_eq!(r.filtered, 2);
    assert_eq!(r.results[0].title, "Configuring widgets");
    assert_eq!(r.source, "primary");
    // The same query again: the cache, no request.
    let again = engine.web_search(&WebSearchRequest { query: "Configure widgets".into(), limit: Some(10) }).unwrap();
    assert!(again.cached && again.results == r.results);
    assert_eq!(site.hits("/html/").len(), 1);
    // Another query waits for the 2 s spacing, even from another process (the CLI).
    let out = env.run(&["web-search", "nothing at all", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let none: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(none["status"], "ok", "a no-results page is no results: {none}");
    assert_eq!(none["results"].as_array().unwrap().len(), 0);
    let hits = site.hits("/html/");
    assert_eq!(hits.len(), 2);
    assert!(hits[1].at - hits[0].at >= Duration::from_millis(1990), "{:?}", hits[1].at - hits[0].at);
    assert!(none["waited_ms"].as_u64().unwrap() > 1000, "{none}");
}

#[test]
fn a_challenge_is_blocked_and_the_proxy_takes_over() {
    let site = Fixture::start("127.0.0.1", site("http://127.0.0.2:9/secret".into()));
    let env = Env::new();
    env.write_config(&web_config(&site.url("/challenge/html/"), "", "", ""));
    let r = env.engine().web_search(&WebSearchRequest { query: "widgets".into(), limit: None }).unwrap();
    assert_eq!(r.status, DiscoveryStatus::Blocked, "a challenge is never 'no results': {r:?}");
    assert!(r.results.is_empty() && r.notes.iter().any(|n| n.contains("anomaly")), "{r:?}");
    let out = env.run(&["web-search", "widgets"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("blocked"));
    // Said once, as the answer's note: not a second time as a log line.
    assert_eq!(stderr.matches("anomaly").count(), 1, "{stderr}");
    assert!(!stderr.contains("WARN"), "{stderr}");

    let env = Env::new();
    env.write_config(&web_config(&site.url("/challenge/html/"), &site.url("/html/"), "", ""));
    let r = env.engine().web_search(&WebSearchRequest { query: "widgets".into(), limit: None }).unwrap();
    assert_eq!(r.status, DiscoveryStatus::Ok, "{r:?}");
    assert_eq!(r.source, "proxy");
    assert!(!r.results.is_empty());
}

#[test]
fn a_429_backs_off_then_retries() {
    let site = Fixture::start("127.0.0.1", site("http://127.0.0.2:9/secret".into()));
    let env = Env::new();
    env.write_config(&web_config(&site.url("/busy/html/"), "", "", ""));
    let t = Instant::now();
    let r = env.engine().web_search(&WebSearchRequest { query: "gadgets".into(), limit: None }).unwrap();
    assert_eq!(r.status, DiscoveryStatus::Ok, "{r:?}");
    assert!(r.notes.iter().any(|n| n.contains("HTTP 429") && n.contains("backing off 4 s")), "{r:?}");
    let hits = site.hits("/busy/html/");
    assert_eq!(hits.len(), 2);
    assert!(hits[1].at - hits[0].at >= Duration::from_millis(3990), "{:?}", hits[1].at - hits[0].at);
    assert!(t.elapsed() < Duration::from_secs(10));
}

#[test]
fn without_a_browser_pages_come_over_plain_http_with_the_same_extraction() {
    let site = Fixture::start("127.0.0.1", site("http://127.0.0.2:9/secret".into()));
    let env = Env::new();
    env.write_config(&web_config(&site.url("/html/"), "", "", "engine = \"http\"\n"));
    let r = fetch(&env.engine(), &site.url("/redirect")).expect("fetch");
    assert_eq!(r.page.via, FetchVia::Http);
    assert_eq!(r.page.final_url, site.url("/doc/widgets"));
    assert!(r.page.markdown.contains("frobnicate option") && !r.page.markdown.contains("premium plan"), "{r:?}");
    assert!(r.notes.iter().any(|n| n.contains("plain HTTP")), "{r:?}");
    // The CLI allows an explicit loopback URL and prints the Markdown.
    let out = env.run(&["web-fetch", &site.url("/doc/gadgets")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("quux bus"));
}

/// Fetched pages went to the parser and Readability whatever their size or attributes (only
/// indexed HTML files were read flat): one tag of 600,000 attributes (7 MB) kept a fetch busy
/// for minutes. A fetched page goes through the index's own check and is read flat, at once.
#[test]
fn a_page_the_parser_is_quadratic_on_is_fetched_flat() {
    let attrs: String = (0..600_000).map(|i| format!(" a{i}=\"x\"")).collect();
    let page =
        format!("<html><head><title>Rail survey</title></head><body><p{attrs}>Water rail census</p></body></html>");
    let site = Fixture::start("127.0.0.1", move |_, _, _| Reply::html(page.clone()));
    let env = Env::new();
    env.write_config(&web_config(&site.url("/html/"), "", "max_page_bytes = 16777216", "engine = \"http\"\n"));
    let t = Instant::now();
    let r = fetch(&env.engine(), &site.url("/wide")).expect("fetch");
    assert!(t.elapsed() < HANG_GUARD, "took {:?}: the bound no longer holds", t.elapsed());
    assert!(r.page.html_bytes > 7_000_000, "{}", r.page.html_bytes);
    assert!(r.page.markdown.contains("Water rail census"), "{}", r.page.markdown);
    assert_eq!((r.page.title.as_str(), r.page.readable), ("Rail survey", false));
}

/// Starts `docdex web-fetch <slow page>`, waits until the browser is loading it, then sends
/// `signal` to docdex and returns the home's browser processes `after` later.
fn interrupt_mid_fetch(signal: i32, next_run: bool, tmp: &std::path::Path) -> (Env, Vec<u32>) {
    let site = Fixture::start("127.0.0.1", site("http://127.0.0.2:9/secret".into()));
    let env = Env::new();
    env.write_config(&web_config(&site.url("/html/"), "", "", ""));
    let mut child = Command::new(env!("CARGO_BIN_EXE_docdex"))
        .args(["web-fetch", &site.url("/slow")])
        .env("DOCDEX_HOME", env.home())
        .env("TMPDIR", tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn docdex");
    assert!(site.wait_for("/slow", Duration::from_secs(60)), "the browser never asked for the page");
    let home = env.home().display().to_string();
    assert!(browser_processes(&home).len() >= 2, "a browser with its helpers is running");
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as i32, signal);
    }
    let _ = child.wait();
    // Before any later run reaps it, the browser's socket folder is in the home, not TMPDIR.
    assert_eq!(chromium_leftovers(tmp), Vec::<String>::new(), "left in TMPDIR by the stopped browser");
    if next_run {
        let out = env.run(&["browser", "list", "--json"]);
        let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let _ = list;
        return (env, browser_processes(&home));
    }
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(3) && !browser_processes(&home).is_empty() {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = browser_processes(&home);
    (env, left)
}

#[test]
fn kill_9_mid_fetch_leaves_no_browser_after_the_next_run() {
    if !have_browser() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (env, left) = interrupt_mid_fetch(libc::SIGKILL, true, tmp.path());
    assert!(left.is_empty(), "browser processes left: {left:?}");
    let socket_dirs = std::fs::read_dir(env.home().join("state/browser/tmp")).map(|d| d.count()).unwrap_or(0);
    assert_eq!(socket_dirs, 0, "the next run removed its singleton socket's folder");
    let locks: Vec<String> = std::fs::read_dir(env.home().join("state/locks"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("browser-"))
        .collect();
    assert!(locks.is_empty(), "the next run removed the dead browser's lock files: {locks:?}");
    let profiles = std::fs::read_dir(env.home().join("state/browser/profiles")).map(|d| d.count()).unwrap_or(0);
    assert_eq!(profiles, 0, "and its profile");
    assert_eq!(chromium_leftovers(tmp.path()), Vec::<String>::new(), "and its singleton socket's directory");
}

#[test]
fn ctrl_c_mid_fetch_takes_the_browser_down_with_docdex() {
    if !have_browser() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (_env, left) = interrupt_mid_fetch(libc::SIGINT, false, tmp.path());
    assert!(left.is_empty(), "browser processes left 3 s after Ctrl-C: {left:?}");
}

#[test]
fn check_launches_the_browser_and_reports_its_version() {
    if !have_browser() {
        return;
    }
    let env = Env::new();
    let out = env.run(&["check", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let item =
        report["items"].as_array().unwrap().iter().find(|i| i["name"] == "browser").expect("browser item").clone();
    assert_eq!(item["status"], "ok", "{item}");
    assert!(item["message"].as_str().unwrap().contains("Chrome/"), "{item}");
    assert!(browser_processes(&env.home().display().to_string()).is_empty());
    // A browser path that cannot start is a warning with a hint.
    let env = Env::new();
    write(&env.home(), "fake-chrome", "#!/bin/sh\nexit 3\n");
    let fake = env.home().join("fake-chrome");
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    env.write_config(&format!("[web.scraper]\nchrome_binary_path = \"{}\"\n", fake.display()));
    let out = env.run(&["check", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let item = report["items"].as_array().unwrap().iter().find(|i| i["name"] == "browser").unwrap().clone();
    assert_eq!(item["status"], "warn", "{item}");
    assert!(item["message"].as_str().unwrap().contains("exited during start-up"), "{item}");
    // The browser's keeper logged the same failure as a raw `WARN the browser exited on its
    // own` line above check's table (tour17); the table's item says it.
    for args in [&["check", "--json"][..], &["check"]] {
        let err = String::from_utf8_lossy(&env.run(args).stderr).into_owned();
        assert!(!err.contains("WARN") && !err.contains("exited on its own"), "{args:?}: {err}");
    }
}

/// Chromium puts its singleton socket (and, with `--disable-dev-shm-usage`, shared memory) in
/// TMPDIR and leaves the directory behind when it is killed: one `/tmp/org.chromium.*` per
/// browser docdex ever started. docdex removes it with the profile, and points the browser's
/// TMPDIR into its own state (`state/browser/tmp`), so even a kill that no later run reaps
/// leaves nothing in the system's.
#[test]
fn a_browser_leaves_nothing_in_the_temporary_directory() {
    if !have_browser() {
        return;
    }
    let env = Env::new();
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_docdex"))
        .args(["check", "--json"])
        .env("DOCDEX_HOME", env.home())
        .env("TMPDIR", tmp.path())
        .output()
        .expect("run docdex check");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let browser = report["items"].as_array().unwrap().iter().find(|i| i["name"] == "browser").unwrap().clone();
    assert_eq!(browser["status"], "ok", "the browser ran: {browser}");
    assert_eq!(chromium_leftovers(tmp.path()), Vec::<String>::new(), "left in TMPDIR");
}

/// What Chromium left in `tmp`.
fn chromium_leftovers(tmp: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.to_lowercase().contains("chromium"))
        .collect()
}

#[test]
fn browser_list_setup_and_install() {
    if !have_browser() {
        return;
    }
    let env = Env::new();
    let list = env.json(&["browser", "list", "--json"]);
    let first = &list["browsers"][0];
    assert_eq!(first["selected"], true);
    assert_eq!(first["source"], "path");
    let setup = env.json(&["browser", "setup", "--json"]);
    assert!(setup["version"].as_str().unwrap().contains("Chrome/"), "{setup}");
    let text = std::fs::read_to_string(env.home().join("config.toml")).unwrap();
    assert!(text.contains(&format!("chrome_binary_path = \"{}\"", setup["path"].as_str().unwrap())), "{text}");
    let list = env.json(&["browser", "list", "--json"]);
    assert_eq!(list["browsers"][0]["source"], "config");
    let out = env.run(&["browser", "install"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("never downloads") && said.contains("apt-get install chromium"), "{said}");
    let out = env.run(&["browser", "setup", "--path", "/nonexistent/chrome"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_waterfall_cites_web_passages_below_the_threshold_and_goes_on_offline() {
    let site = Fixture::start("127.0.0.1", site("http://127.0.0.2:9/secret".into()));
    let server = FakeOllama::start(FakeOllamaOptions::default()).expect("fake ollama");
    let env = Env::new();
    env.write_config(&format!(
        "{}{}",
        llm_config("ollama", &server.url(), "fake-chat", "fake-embed"),
        web_config(&site.url("/html/"), "", "", "engine = \"http\"\n")
    ));
    let repo = env.repo("proj");
    write(&repo, "src/lib.rs", "pub fn add(a: u32, b: u32) -> u32 { a + b }\n");
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let engine = env.engine();
    let ask = |q: &str, web: WebPolicy| {
        engine
            .chat(&repo, &ChatTurnRequest { query: q.into(), web, ..Default::default() }, &mut |_| {
                ControlFlow::Continue(())
            })
            .expect("chat")
    };
    let resp = ask("how do I reset a widget knob", WebPolicy::Auto);
    let step = resp.trace.steps.iter().find(|s| s.name == "web").unwrap();
    assert_eq!(step.status, StepStatus::Ran, "{step:?} {:?}", resp.trace.notices);
    let web = resp.trace.web.as_ref().expect("web trace");
    assert_eq!(web.query, "how do I reset a widget knob");
    assert_eq!(web.discovery, Some(DiscoveryStatus::Ok));
    assert_eq!(web.pages.len(), 2, "{web:?}");
    assert!(web.pages.iter().all(|p| p.status == PageStatus::Fetched && p.via == Some(FetchVia::Http)), "{web:?}");
    let sources: Vec<_> = resp.sources.iter().filter(|s| s.slot == Slot::Web).collect();
    assert!(!sources.is_empty(), "{:?}", resp.sources);
    assert_eq!(sources[0].url.as_deref(), Some(site.url("/doc/widgets").as_str()));
    assert_eq!(sources[0].citation, site.url("/doc/widgets"));
    // The prompt carries the passage under its URL.
    let (_, body) = server.requests().into_iter().rev().find(|(p, _)| p == "/api/chat").unwrap();
    let system = body["messages"][0]["content"].as_str().unwrap().to_string();
    assert!(
        system.contains("## Web pages") && system.contains(&format!("### {}", site.url("/doc/widgets"))),
        "{system}"
    );
    assert!(system.contains("reset_widget") || system.contains("reset\\_widget"), "{system}");
    assert!(resp.trace.timings_ms.web > 0.0);

    // Asked again: the pages come from the cache (discovery too).
    let again = ask("how do I reset a widget knob", WebPolicy::Force);
    let w = again.trace.web.as_ref().unwrap();
    assert_eq!(w.discovery_source, "cache");
    assert!(w.pages.iter().all(|p| p.status == PageStatus::Cached), "{w:?}");

    // Offline: a clear notice, and the answer goes on from local context.
    let env2 = Env::new();
    env2.write_config(&format!(
        "{}{}",
        llm_config("ollama", &server.url(), "fake-chat", "fake-embed"),
        web_config(&format!("{}/html/", dead_url()), "", "", "")
    ));
    let repo2 = env2.repo("proj");
    write(&repo2, "src/lib.rs", "pub fn add(a: u32, b: u32) -> u32 { a + b }\n");
    env2.json(&["index", "--repo", repo2.to_str().unwrap(), "--json"]);
    let resp = env2
        .engine()
        .chat(
            &repo2,
            &ChatTurnRequest { query: "widget knobs".into(), web: WebPolicy::Force, ..Default::default() },
            &mut |_| ControlFlow::Continue(()),
        )
        .unwrap();
    let step = resp.trace.steps.iter().find(|s| s.name == "web").unwrap();
    assert_eq!(step.status, StepStatus::Unavailable, "{step:?}");
    assert!(resp.trace.notices.iter().any(|n| n.contains("could not be reached")), "{:?}", resp.trace.notices);
    assert!(resp.answer.is_some(), "the model still answered");
}

#[test]
fn web_research_with_force_web_false_lets_the_gate_decide() {
    let site = Fixture::start("127.0.0.1", site("http://127.0.0.2:9/secret".into()));
    let env = Env::new();
    env.write_config(&web_config(&site.url("/html/"), "", "", "engine = \"http\"\n"));
    let repo = env.repo("proj");
    write(
        &repo,
        "src/tally.rs",
        "/// Sums the tally of every ledger entry, skipping voided entries.\n\
         pub fn ledger_tally(entries: &[Entry]) -> u64 { entries.iter().filter(|e| !e.voided).map(|e| e.amount).sum() }\n",
    );
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let engine = env.engine();
    let research = |q: &str, force_web| {
        engine
            .web_research_for(&repo, &WebResearchRequest { query: q.into(), force_web, ..Default::default() })
            .expect("research")
    };
    // The repository answers this one: the web stays untouched.
    let local = research("ledger tally voided entries", Some(false));
    let gate = local.gate.clone().expect("gate");
    assert!(!gate.researched && gate.local_confidence >= gate.threshold, "{gate:?}");
    assert!(local.passages.is_empty() && local.trace.discovery.is_none(), "{local:?}");
    assert!(local.trace.notes[0].contains("web_trigger_threshold"), "{:?}", local.trace.notes);
    assert!(site.hits("/html/").is_empty(), "no discovery request");
    // It does not answer this one: researched, with passages cited by URL.
    let web = research("how do I reset a widget knob", Some(false));
    let gate = web.gate.clone().expect("gate");
    assert!(gate.researched && gate.local_confidence < gate.threshold, "{gate:?}");
    assert_eq!(web.trace.discovery, Some(DiscoveryStatus::Ok), "{web:?}");
    assert!(web.passages.iter().any(|p| p.url == site.url("/doc/widgets")), "{:?}", web.passages);
    // Omitted (the tool's default): always researched, no gate.
    let forced = research("ledger tally voided entries", None);
    assert!(forced.gate.is_none() && forced.trace.discovery.is_some(), "{forced:?}");
}

#[test]
fn pages_are_capped_at_max_page_bytes_and_fetched_max_concurrent_fetches_at_once() {
    let slow_doc = || {
        let mut r = Reply::html(doc_page("Widgets", WIDGETS));
        r.delay = Duration::from_millis(700);
        r
    };
    let peer = Fixture::start("127.0.0.2", move |_, _, _| slow_doc());
    let peer_url = peer.url("/doc/b");
    let site = Fixture::start("127.0.0.1", move |target, base, _| {
        if target.starts_with("/html/") {
            let links = [(format!("{base}/doc/a"), "A", "widgets"), (peer_url.clone(), "B", "widgets")];
            Reply::html(results_page(&links))
        } else if target.starts_with("/big") {
            Reply::html(doc_page("Big", &WIDGETS.repeat(40)))
        } else {
            slow_doc()
        }
    });
    let env = Env::new();
    env.write_config(&format!(
        "[core]\nmax_concurrent_fetches = 1\n[web]\nddg_base_url = \"{}\"\nallow_hosts = [\"127.0.0.1\", \"127.0.0.2\"]\n\
         max_page_bytes = 4096\n[web.scraper]\nengine = \"http\"\n",
        site.url("/html/")
    ));
    let engine = env.engine();
    // A page over the cap is refused with the key to raise, and nothing is cached.
    let big = fetch(&engine, &site.url("/big")).unwrap_err().to_string();
    assert!(big.contains("max_page_bytes"), "{big}");
    assert!(fetch(&engine, &site.url("/big")).is_err(), "an oversized page is not cached");
    // Two pages on two hosts (no per-domain wait), one fetch permit: one after the other.
    let r = engine.web_research(&WebResearchRequest { query: "widgets".into(), ..Default::default() }).unwrap();
    assert_eq!(r.trace.pages.len(), 2, "{:?}", r.trace);
    let (a, b) = (site.hits("/doc/a"), peer.hits("/doc/b"));
    assert_eq!((a.len(), b.len()), (1, 1));
    let gap = if a[0].at < b[0].at { b[0].at - a[0].at } else { a[0].at - b[0].at };
    assert!(gap >= Duration::from_millis(650), "the second page started {gap:?} after the first");
}

/// A raw loopback server that streams an HTML page (or text in `content_type`) without a
/// Content-Length (chunked), up to `chunks` chunks of 8 KiB, stopping when the reader hangs up.
fn streaming_server(chunks: usize, content_type: &str) -> (std::net::SocketAddr, std::thread::JoinHandle<usize>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let head = format!("HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n\r\n");
    // Every connection is accepted: Chromium opens two to this server (one stays idle) and
    // which one carries the request is a race; a server that accepted only the first left the
    // request unanswered until the page timed out when the browser chose the second.
    let (sent_tx, sent_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let (Ok(mut conn), head, sent_tx) = (conn, head.clone(), sent_tx.clone()) else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                if !matches!(conn.read(&mut buf), Ok(n) if n > 0) {
                    return;
                }
                let _ = conn.write_all(head.as_bytes());
                let piece = format!("<p>{}</p>\n", "streamed words ".repeat(540));
                let mut sent = 0;
                for _ in 0..chunks {
                    if conn.write_all(format!("{:x}\r\n{piece}\r\n", piece.len()).as_bytes()).is_err() {
                        break;
                    }
                    sent += piece.len();
                    std::thread::sleep(Duration::from_millis(2));
                }
                let _ = conn.write_all(b"0\r\n\r\n");
                let _ = sent_tx.send(sent);
            });
        }
    });
    // The bytes streamed on the connection that carried the request.
    let handle = std::thread::spawn(move || sent_rx.recv_timeout(Duration::from_secs(120)).unwrap_or(usize::MAX));
    (addr, handle)
}

/// The browser is held to what plain HTTP reads: a binary or attachment response is refused
/// (Chromium used to save both into ~/Downloads, as it did a file a page's script offered as
/// a `blob:` download), a page over max_page_bytes is refused by its Content-Length or stopped
/// as it streams (it used to load until the timeout), a redirect the rules refuse says which
/// target and why, and a browser that dies mid-load fails the fetch at once.
#[test]
fn the_browser_never_downloads_and_refuses_what_plain_http_refuses() {
    if !have_browser() {
        return;
    }
    let nonce = uuid::Uuid::new_v4().simple().to_string();
    let (attach_name, blob_name) = (format!("docdex-test-{nonce}.bin"), format!("docdex-test-{nonce}-blob.txt"));
    let (a2, b2) = (attach_name.clone(), blob_name.clone());
    let site = Fixture::start("127.0.0.1", move |target, _base, _| {
        let raw = |content_type: &'static str, headers: Vec<(String, String)>, body: String| Reply {
            status: 200,
            content_type,
            headers,
            body,
            delay: Duration::ZERO,
        };
        let attachment = vec![("Content-Disposition".to_string(), format!("attachment; filename={a2}"))];
        let redirect =
            |to: &str| Reply { status: 302, ..raw("text/html", vec![("Location".into(), to.into())], String::new()) };
        match target {
            "/bin" => raw("application/octet-stream", attachment, "\u{1}\u{2}binary".repeat(100)),
            "/attached" => raw("text/html", attachment, "<html><body>attached page</body></html>".into()),
            "/pdf" => raw("application/pdf", vec![], "%PDF-1.4 not really".into()),
            "/big" => Reply::html(doc_page("Big", &WIDGETS.repeat(200))),
            "/to-link-local" => redirect("http://169.254.169.254/latest/meta-data"),
            "/to-file" => redirect("file:///etc/passwd"),
            "/blob" => Reply::html(format!(
                "<html><body><p>blob page text</p><script>const a=document.createElement('a');\
                 a.href=URL.createObjectURL(new Blob(['blob-download']));a.download='{b2}';\
                 document.body.appendChild(a);a.click();</script></body></html>"
            )),
            "/slow" => {
                let mut r = Reply::html(doc_page("Slow", WIDGETS));
                r.delay = Duration::from_secs(7);
                r
            }
            _ => Reply::html(doc_page("Widgets", WIDGETS)),
        }
    });
    let env = Env::new();
    env.write_config(&web_config(&site.url("/html/"), "", "max_page_bytes = 65536", ""));
    let engine = env.engine();
    let err = |path: &str| fetch(&engine, &site.url(path)).map(|r| r.page.html_bytes).unwrap_err().to_string();

    let bin = err("/bin");
    assert!(bin.contains("not a text page (application/octet-stream)"), "{bin}");
    assert!(err("/pdf").contains("not a text page (application/pdf)"));
    let attached = err("/attached");
    assert!(attached.contains("served as a download"), "{attached}");
    let blob = fetch(&engine, &site.url("/blob")).expect("the page itself is read");
    assert!(blob.page.markdown.contains("blob page text"), "{blob:?}");
    let t = Instant::now();
    let big = err("/big");
    assert!(big.contains("bytes is more than [web] max_page_bytes (65536)"), "{big}");
    assert!(t.elapsed() < Duration::from_secs(6), "refused by its length, not the timeout: {:?}", t.elapsed());
    let (addr, streamed) = streaming_server(4000, "text/html");
    let t = Instant::now();
    let stream = fetch(&engine, &format!("http://{addr}/stream")).map(|r| r.page.html_bytes).unwrap_err().to_string();
    assert!(stream.contains("larger than [web] max_page_bytes (65536)"), "{stream}");
    assert!(t.elapsed() < Duration::from_secs(7), "stopped as it streamed, not at the timeout: {:?}", t.elapsed());
    assert!(streamed.join().unwrap() < 4000 * 8000, "the browser stopped reading");
    let ll = err("/to-link-local");
    assert!(ll.contains("169.254.169.254") && ll.contains("link-local"), "{ll}");
    let file = err("/to-file");
    assert!(file.contains("not http or https"), "{file}");

    // Nothing was saved where the browser keeps downloads.
    std::thread::sleep(Duration::from_millis(500));
    let downloads = std::path::PathBuf::from(std::env::var("HOME").unwrap_or_default()).join("Downloads");
    let saved: Vec<_> = [&attach_name, &blob_name].iter().map(|n| downloads.join(n)).filter(|p| p.exists()).collect();
    for p in &saved {
        let _ = std::fs::remove_file(p);
    }
    assert!(saved.is_empty(), "the browser saved downloads: {saved:?}");

    // A browser killed mid-load fails the fetch at once; the next fetch starts a new one.
    let home = env.home().display().to_string();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| {
            let t = Instant::now();
            let r = engine.web_fetch(&WebFetchRequest { url: site.url("/slow"), refresh: true, explicit: false });
            let _ = tx.send((r.map(|_| ()).map_err(|e| e.to_string()), t.elapsed()));
        });
        assert!(site.wait_for("/slow", Duration::from_secs(20)), "the slow page was requested");
        for pid in browser_processes(&home) {
            // SAFETY: a signal to a browser process this test's engine started.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
    });
    let (gone, took) = rx.recv().unwrap();
    let gone = gone.unwrap_err();
    assert!(gone.contains("the browser exited while loading"), "{gone}");
    assert!(took < Duration::from_secs(6), "failed at once, not at the timeout: {took:?}");
    let after = fetch(&engine, &site.url("/doc/widgets")).expect("a new browser");
    assert_eq!(after.page.via, FetchVia::Chromium);
}

/// A `chrome_binary_path` that names no file was passed over in silence: `browser list`,
/// `check` and every fetch used the next browser found without a word. Each now says so.
#[test]
fn a_configured_browser_that_is_not_there_is_named() {
    let site = Fixture::start("127.0.0.1", site("http://127.0.0.2:9/secret".into()));
    let env = Env::new();
    let missing = env.dir.path().join("no-such-chrome");
    env.write_config(&web_config(
        &site.url("/html/"),
        "",
        "",
        &format!("engine = \"http\"\nchrome_binary_path = \"{}\"\n", missing.display()),
    ));
    let engine = env.engine();
    let hint = engine.browser_list().hint.unwrap_or_default();
    assert!(hint.contains(&format!("chrome_binary_path {} is not a file", missing.display())), "{hint}");
    let r = fetch(&engine, &site.url("/doc/widgets")).expect("fetch");
    assert!(r.notes.iter().any(|n| n.contains("is not a file") && n.contains("browser setup")), "{:?}", r.notes);
}

/// A rate-limit slot far in the future in the shared book (a clock set back, a corrupt file)
/// made every search sleep on it, for years; the largest number overflowed. Such a slot is
/// ignored and the search runs now.
#[test]
fn a_bogus_rate_limit_slot_is_not_slept_on() {
    let site = Fixture::start("127.0.0.1", site("http://127.0.0.2:9/secret".into()));
    let env = Env::new();
    env.write_config(&web_config(&site.url("/html/"), "", "", ""));
    let locks = env.home().join("state/locks");
    std::fs::create_dir_all(&locks).unwrap();
    std::fs::write(locks.join("web_spacing.json"), format!("{{\"discovery:127.0.0.1\": {}}}", u64::MAX)).unwrap();
    let t = Instant::now();
    let r = env.engine().web_search(&WebSearchRequest { query: "configure widgets".into(), limit: None }).unwrap();
    assert_eq!(r.status, DiscoveryStatus::Ok, "{r:?}");
    assert!(t.elapsed() < Duration::from_secs(10), "took {:?}", t.elapsed());
}

/// A page that opens JavaScript dialogs (`alert`, `confirm`, `prompt`, and a `beforeunload`
/// handler) held `web-fetch` and chat's web tier forever: nothing answered the dialog, and the
/// browser's commands waited on the halted page with no bound. The dialogs are now dismissed,
/// and the page is read well within `page_load_timeout_secs`.
#[test]
fn a_page_that_opens_dialogs_is_read_and_never_holds_the_fetch() {
    if !have_browser() {
        return;
    }
    let site = Fixture::start("127.0.0.1", |target, _, _| match target {
        "/alert" => Reply::html(format!(
            "{}<script>window.onbeforeunload = () => 'stay'; alert('hi'); confirm('sure?'); prompt('name?');\
             document.body.insertAdjacentHTML('beforeend', '<p>after the dialogs</p>');</script>",
            doc_page("Alerting page", WIDGETS)
        )),
        _ => Reply::html(doc_page("Gadgets", GADGETS)),
    });
    let env = Env::new();
    env.write_config(&web_config(&site.url("/html/"), "", "", ""));
    let engine = std::sync::Arc::new(env.engine());
    let (tx, rx) = std::sync::mpsc::channel();
    let (e2, url) = (engine.clone(), site.url("/alert"));
    std::thread::spawn(move || {
        let t = Instant::now();
        let _ = tx.send((fetch(&e2, &url).map_err(|e| e.to_string()), t.elapsed()));
    });
    let (page, took) = rx.recv_timeout(Duration::from_secs(40)).expect("the fetch ended (it used to hang forever)");
    let page = page.expect("the page is read");
    assert_eq!(page.page.via, FetchVia::Chromium);
    assert!(page.page.markdown.contains("frobnicate option"), "{}", page.page.markdown);
    assert!(took < Duration::from_secs(8), "within page_load_timeout_secs: {took:?}");
    // The browser is still usable afterwards.
    let next = fetch(&engine, &site.url("/gadgets")).expect("the next page");
    assert!(next.page.markdown.contains("quux bus"), "{next:?}");
}

/// `localhost.` (a trailing dot) is this machine to Chromium, but passed the rule that keeps
/// discovered URLs off it: a redirect to `http://localhost.:PORT/` fetched a local admin page,
/// and a page's script could reach it. Both are refused now, and nothing reaches the service.
#[test]
fn a_trailing_dot_host_does_not_reach_this_machine() {
    if !have_browser() {
        return;
    }
    let internal = Fixture::start("127.0.0.1", |_, _, _| Reply::html("<html><body>internal admin page</body></html>"));
    let port = internal.addr.port();
    let site = Fixture::start("127.0.0.1", move |target, _, _| match target {
        "/to-localhost-dot" | "/to-sub-localhost-dot" => {
            let host = if target == "/to-localhost-dot" { "localhost." } else { "admin.localhost." };
            let mut r = Reply::html("moved").status(302);
            r.headers.push(("Location".into(), format!("http://{host}:{port}/admin")));
            r
        }
        "/script" => Reply::html(format!(
            "{}<script>fetch('http://localhost.:{port}/sub').catch(()=>{{}}); \
             var i = new Image(); i.src = 'http://LOCALHOST.:{port}/img';</script>",
            doc_page("Scripted page", GADGETS)
        )),
        _ => Reply::html(doc_page("Gadgets", GADGETS)),
    });
    let env = Env::new();
    env.write_config(&web_config(&site.url("/html/"), "", "", ""));
    let engine = env.engine();
    for path in ["/to-localhost-dot", "/to-sub-localhost-dot"] {
        let e = fetch(&engine, &site.url(path)).map(|r| r.page.markdown).unwrap_err().to_string();
        assert!(e.contains("led to a URL docdex does not fetch") && e.contains("is this machine"), "{path}: {e}");
    }
    let scripted = fetch(&engine, &site.url("/script")).expect("the page itself is read");
    assert!(scripted.page.markdown.contains("quux bus"));
    std::thread::sleep(Duration::from_millis(300));
    assert!(internal.hits("/").is_empty(), "reached the local service: {:?}", internal.hits("/"));
}

/// A browser that never opens its DevTools socket cost every process 30 s before plain HTTP
/// took over; the wait is now a few seconds.
#[test]
fn a_browser_that_never_answers_falls_back_to_plain_http_soon() {
    let site = Fixture::start("127.0.0.1", |_, _, _| Reply::html(doc_page("Gadgets", GADGETS)));
    let env = Env::new();
    let hung = hung_browser(env.dir.path());
    env.write_config(&web_config(
        &site.url("/html/"),
        "",
        "",
        &format!("chrome_binary_path = \"{}\"\nlaunch_timeout_secs = 3\n", hung.display()),
    ));
    let engine = env.engine();
    let t = Instant::now();
    let r = fetch(&engine, &site.url("/gadgets")).expect("fetched over plain HTTP");
    assert_eq!(r.page.via, FetchVia::Http, "{r:?}");
    assert!(r.page.markdown.contains("quux bus"));
    assert!(t.elapsed() < Duration::from_secs(15), "fell back after {:?}", t.elapsed());
    let note = r.notes.iter().find(|n| n.contains("did not open its DevTools socket within 3s"));
    assert!(note.is_some_and(|n| n.contains("[web.scraper] launch_timeout_secs")), "{:?}", r.notes);
}

/// A chat whose web tier is fetching a page that answers after 20 s, its token tripped ~1 s
/// into the fetch (as the workbench's ctrl+s and a client hanging up do).
fn chat_stopped_during_a_slow_fetch(scraper: &str) {
    let site = Fixture::start("127.0.0.1", move |target, base, _| {
        if target.starts_with("/html/") {
            Reply::html(results_page(&[(format!("{base}/slow"), "Widgets", "widget knobs")]))
        } else {
            let mut r = Reply::html(doc_page("Widgets", WIDGETS));
            r.delay = Duration::from_secs(20);
            r
        }
    });
    let server = FakeOllama::start(FakeOllamaOptions::default()).expect("fake ollama");
    let env = Env::new();
    env.write_config(&format!(
        "{}[web]\nddg_base_url = \"{}\"\nallow_hosts = [\"127.0.0.1\"]\n[web.scraper]\npage_load_timeout_secs = 60\n{scraper}\n",
        llm_config("ollama", &server.url(), "fake-chat", "fake-embed"),
        site.url("/html/")
    ));
    let repo = env.repo("proj");
    write(&repo, "src/lib.rs", "pub fn add(a: u32, b: u32) -> u32 { a + b }\n");
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let req =
        ChatTurnRequest { query: "how do I reset a widget knob".into(), web: WebPolicy::Force, ..Default::default() };
    let cancel = req.cancel.clone();
    let stopper = std::thread::spawn(move || {
        assert!(site.wait_for("/slow", Duration::from_secs(30)), "the slow page was never asked for");
        std::thread::sleep(Duration::from_secs(1));
        let tripped = Instant::now();
        cancel.cancel();
        (tripped, site)
    });
    let resp = env.engine().chat(&repo, &req, &mut |_| ControlFlow::Continue(())).expect("chat");
    let ended = Instant::now();
    let (tripped, _site) = stopper.join().unwrap();
    let took = ended.saturating_duration_since(tripped);
    assert!(took < Duration::from_secs(8), "{scraper}: the turn ended {took:?} after the stop");
    assert_eq!(resp.llm.status, AnswerStatus::Stopped, "{scraper}: {:?}", resp.llm);
    let step = resp.trace.steps.iter().find(|s| s.name == "web").expect("web step");
    assert!(step.detail.contains("cancelled"), "{scraper}: {step:?}");
    assert!(
        !resp.trace.notices.iter().any(|n| n.contains("failed")),
        "{scraper}: a stop is no failure: {:?}",
        resp.trace.notices
    );
    assert!(server.requests().iter().all(|(p, _)| p != "/api/chat"), "{scraper}: the model was not asked");
}

#[test]
fn a_cancelled_chat_stops_the_web_tier_mid_fetch_over_http() {
    chat_stopped_during_a_slow_fetch("engine = \"http\"");
}

#[test]
fn a_cancelled_chat_stops_the_web_tier_mid_fetch_in_chromium() {
    if !have_browser() {
        return;
    }
    chat_stopped_during_a_slow_fetch("");
}

#[test]
fn web_research_under_a_tripped_token_ends_cancelled_before_discovery() {
    let site = Fixture::start("127.0.0.1", site("http://127.0.0.2:9/secret".into()));
    let env = Env::new();
    env.write_config(&web_config(&site.url("/html/"), "", "", "engine = \"http\"\n"));
    let token = docdex::engine::cancel::CancelToken::new();
    token.cancel();
    let _ambient = token.enter();
    let r = env.engine().web_research(&WebResearchRequest { query: "widget knobs".into(), ..Default::default() });
    assert!(matches!(r, Err(docdex::error::Error::Cancelled)), "{r:?}");
    assert!(site.hits("/html/").is_empty(), "nothing was asked of the endpoint");
}

/// Waits up to `limit` for the engine's page helper threads to end; the count left.
fn helpers_left(engine: &docdex::Engine, limit: Duration) -> usize {
    let t = Instant::now();
    loop {
        let n = engine.browser_page_helpers();
        if n == 0 || t.elapsed() > limit {
            return n;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A page's load helper waited for the page to settle for up to `page_load_timeout_secs`
/// after the page was stopped (a cancelled chat turn) or timed out: a renderer that never
/// settles held it the whole time (for a 60 s timeout, a minute after the turn ended). The
/// helpers (the load, the read, the tab's stop and close) end with the page now: after a
/// cancelled fetch, a timeout, a renderer spinning before and after its load.
#[test]
fn a_stopped_or_timed_out_page_leaves_no_helper_thread() {
    if !have_browser() {
        return;
    }
    let site = Fixture::start("127.0.0.1", |target, _, _| match target {
        "/slow" => {
            let mut r = Reply::html(doc_page("Slow", WIDGETS));
            r.delay = Duration::from_secs(30);
            r
        }
        "/spin" => Reply::html(format!("{}<script>for (;;) {{}}</script>", doc_page("Spin", GADGETS))),
        "/spin-late" => Reply::html(format!(
            "{}<script>addEventListener('load', () => setTimeout(() => {{ for (;;) {{}} }}, 0));</script>",
            doc_page("Spin late", GADGETS)
        )),
        _ => Reply::html(doc_page("Gadgets", GADGETS)),
    });
    let env = Env::new();
    let config = |secs: u64| {
        format!(
            "[web]\nddg_base_url = \"{}\"\nallow_hosts = [\"127.0.0.1\"]\n[web.scraper]\npage_load_timeout_secs = {secs}\n",
            site.url("/html/")
        )
    };
    env.write_config(&config(30));
    let engine = env.engine();
    fetch(&engine, &site.url("/gadgets")).expect("a page first");
    assert_eq!(helpers_left(&engine, Duration::from_secs(2)), 0, "after a page that loaded");

    // Cancelled mid-load, as a stopped chat turn does: waiting on the server, and with the
    // page's renderer spinning (the page never settles).
    for path in ["/slow", "/spin"] {
        let token = docdex::engine::cancel::CancelToken::new();
        let r = std::thread::scope(|s| {
            s.spawn(|| {
                assert!(site.wait_for(path, Duration::from_secs(10)), "{path} was never asked for");
                std::thread::sleep(Duration::from_millis(1000));
                token.cancel();
            });
            let _ambient = token.enter();
            engine.web_fetch(&WebFetchRequest { url: site.url(path), refresh: true, explicit: false })
        });
        assert!(matches!(r, Err(docdex::error::Error::Cancelled)), "{path}: {r:?}");
        assert_eq!(helpers_left(&engine, Duration::from_secs(3)), 0, "{path}: after a cancelled page");
    }
    drop(engine);

    env.write_config(&config(3));
    let engine = env.engine();
    for path in ["/slow", "/spin", "/spin-late"] {
        let r = engine.web_fetch(&WebFetchRequest { url: site.url(path), refresh: true, explicit: false });
        let e = r.map(|r| r.page.markdown).unwrap_err().to_string();
        assert!(e.contains("did not load within 3 s"), "{path}: {e}");
        assert_eq!(helpers_left(&engine, Duration::from_secs(3)), 0, "{path}: after a page that timed out");
    }
    let next = fetch(&engine, &site.url("/gadgets2")).expect("the browser still serves");
    assert!(next.page.markdown.contains("quux bus"));
}

/// Chromium used to resolve host names itself, after docdex checked them: a name docdex could
/// not resolve (or whose answer changed since, DNS rebinding) reached loopback from a page's
/// scripts, frames and redirects. Here `rebind.test` resolves for Chromium alone, to the
/// service on 127.0.0.2; every connection now goes through docdex's proxy, which resolves the
/// name itself, and nothing reaches the service. A URL the user typed still reaches this machine.
#[test]
fn a_name_only_the_browser_resolves_reaches_nothing_private() {
    if !have_browser() {
        return;
    }
    let secret = secret_server();
    let port = secret.addr.port();
    let site = Fixture::start("127.0.0.1", move |target, _, _| match target {
        "/rebind" => Reply::html(format!(
            "{}<iframe src='http://rebind.test:{port}/frame'></iframe><script>\
             fetch('http://rebind.test:{port}/fetch').catch(()=>{{}});\
             var x = new XMLHttpRequest(); x.open('GET', 'http://rebind.test:{port}/xhr'); x.send();\
             var s = document.createElement('script'); s.src = 'http://rebind.test:{port}/js'; \
             document.head.appendChild(s);</script>",
            doc_page("Rebinding page", GADGETS)
        )),
        "/to-rebind" => {
            let mut r = Reply::html("moved").status(302);
            r.headers.push(("Location".into(), format!("http://rebind.test:{port}/moved")));
            r
        }
        _ => Reply::html(doc_page("Gadgets", GADGETS)),
    });
    let env = Env::new();
    env.write_config(&web_config(&site.url("/html/"), "", "", ""));
    let engine = env.engine();
    engine.set_browser_args_for_tests(&["--host-resolver-rules=MAP rebind.test 127.0.0.2"]);

    let page = fetch(&engine, &site.url("/rebind")).expect("the page itself is read");
    assert!(page.page.markdown.contains("quux bus"), "{page:?}");
    let moved = fetch(&engine, &site.url("/to-rebind")).map(|r| r.page.markdown).unwrap_err().to_string();
    assert!(moved.contains("rebind.test does not resolve here"), "{moved}");
    std::thread::sleep(Duration::from_millis(500));
    assert!(secret.hits("/").is_empty(), "reached 127.0.0.2 through rebind.test: {:?}", secret.hits("/"));

    // What the user typed may be this machine, by name too; discovered, it is refused.
    let typed = format!("http://localhost:{}/typed", site.addr.port());
    let r = engine.web_fetch(&WebFetchRequest { url: typed.clone(), refresh: false, explicit: true });
    assert!(r.expect("a typed localhost URL").page.markdown.contains("quux bus"));
    let found = fetch(&engine, &typed).map(|r| r.page.markdown).unwrap_err().to_string();
    assert!(found.contains("is this machine"), "{found}");
}

/// Chromium shows an HTTP error with a body as a page, but fails one without a body
/// (`net::ERR_HTTP_RESPONSE_CODE_FAILURE`), as registries, proxies and APIs send them: the
/// fetch said so in Chromium's words, `libs fetch` took a bodiless 404 from docs.rs for an
/// unreachable registry and asked it nothing more, and a 503 went without the host's back-off.
/// Now it is `HTTP 404` / `HTTP 503`, as over plain HTTP, and a 503 backs the host off.
#[test]
fn an_error_answer_without_a_body_is_its_status_in_the_browser_too() {
    if !have_browser() {
        return;
    }
    let site = Fixture::start("127.0.0.1", |target, _, _| match target {
        "/gone" => Reply::html("").status(404),
        "/down" => Reply::html("").status(503),
        _ => Reply::html(doc_page("Widgets", WIDGETS)),
    });
    let env = Env::new();
    env.write_config(&web_config(&site.url("/html/"), "", "", ""));
    let engine = env.engine();
    let gone = fetch(&engine, &site.url("/gone")).unwrap_err().to_string();
    assert!(gone.ends_with("/gone: HTTP 404"), "{gone}");
    let down = fetch(&engine, &site.url("/down")).unwrap_err().to_string();
    assert!(down.ends_with("/down: HTTP 503"), "{down}");
    // The 503 pushed the host's next slot back (4x request_delay_ms), as plain HTTP does.
    let next = fetch(&engine, &site.url("/doc/widgets")).expect("a page after the 503");
    assert_eq!(next.page.via, FetchVia::Chromium, "{next:?}");
    assert!(next.waited_ms >= 2500, "waited only {} ms after a 503", next.waited_ms);
}

/// Over plain HTTP a `text/plain` page went to the HTML extractor as it came: its lines ran
/// together into one paragraph (`Title ===== Para one line two`) and `<b>` in it was read as
/// markup, while Chromium shows it as one preformatted block. Both fetchers now read it alike.
#[test]
fn a_text_page_keeps_its_lines_over_plain_http_as_in_the_browser() {
    const TEXT: &str = "Title\n=====\n\nfn main() {\n    let x = <b>1</b> & 2;\n}\n";
    let site = Fixture::start("127.0.0.1", |_, _, _| Reply { content_type: "text/plain", ..Reply::html(TEXT) });
    let read = |scraper: &str| {
        let env = Env::new();
        env.write_config(&web_config(&site.url("/html/"), "", "", scraper));
        fetch(&env.engine(), &site.url("/notes.txt")).expect("fetch").page
    };
    let http = read("engine = \"http\"\n");
    assert_eq!(http.via, FetchVia::Http);
    for line in ["Title\n=====\n", "fn main() {\n", "    let x = <b>1</b> & 2;\n}"] {
        assert!(http.markdown.contains(line), "{line:?} not kept: {}", http.markdown);
    }
    if have_browser() {
        let chromium = read("");
        assert_eq!(chromium.via, FetchVia::Chromium);
        assert_eq!(chromium.markdown, http.markdown, "the two fetchers read the page alike");
    }
}

/// An XML document was refused in the browser (`application/rls-services+xml`, what
/// `python3 -m http.server` serves `.rs` as, is a type Chromium downloads) but read over plain
/// HTTP (tour17). Both engines read XML as its source now, lines and tags kept: the browser
/// from its own response (requested once), and says so.
#[test]
fn an_xml_document_is_read_as_its_source_by_both_engines() {
    const XML: &str =
        "<?xml version=\"1.0\"?>\n<feed>\n  <title>Release notes</title>\n  <note><![CDATA[a < b]]></note>\n</feed>\n";
    let site = Fixture::start("127.0.0.1", |target, _, _| {
        let content_type = match target {
            "/app.xml" => "application/xml",
            "/text.xml" => "text/xml; charset=utf-8",
            _ => "application/rls-services+xml",
        };
        Reply { content_type, ..Reply::html(XML) }
    });
    for path in ["/app.xml", "/text.xml", "/main.rs"] {
        let read = |scraper: &str| {
            let env = Env::new();
            env.write_config(&web_config(&site.url("/html/"), "", "", scraper));
            fetch(&env.engine(), &site.url(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
        };
        let http = read("engine = \"http\"\n");
        assert_eq!(http.page.via, FetchVia::Http);
        for line in ["<feed>\n", "  <title>Release notes</title>\n", "<![CDATA[a < b]]>"] {
            assert!(http.page.markdown.contains(line), "{path}: {line:?} not kept: {}", http.page.markdown);
        }
        if have_browser() {
            let browser = read("");
            assert_eq!(browser.page.markdown, http.page.markdown, "{path}: the two engines read it alike");
            assert!(browser.notes.iter().any(|n| n.contains("an XML document")), "{path}: {:?}", browser.notes);
        }
    }
}

/// Chromium's failures reached the user in its own words (`Navigate failed:
/// net::ERR_TOO_MANY_REDIRECTS`) where plain HTTP said `more than 5 redirects`.
#[test]
fn a_redirect_loop_in_the_browser_is_said_in_words() {
    if !have_browser() {
        return;
    }
    let site = Fixture::start("127.0.0.1", |_, _, _| Reply {
        headers: vec![("Location".into(), "/loop".into())],
        ..Reply::html("").status(302)
    });
    let env = Env::new();
    env.write_config(&web_config(&site.url("/html/"), "", "", ""));
    let e = fetch(&env.engine(), &site.url("/loop")).unwrap_err().to_string();
    assert!(e.ends_with("/loop: redirects too many times (a redirect loop) (net::ERR_TOO_MANY_REDIRECTS)"), "{e}");
}

/// Plain HTTP named a refused redirect by its target alone (`file:///etc/passwd: only http and
/// https URLs are fetched, not file:`), as if the user had asked for it; the browser says the
/// page redirected there. Both now say it alike.
#[test]
fn a_refused_redirect_over_plain_http_is_named_as_the_browser_names_it() {
    let site = Fixture::start("127.0.0.1", |target, _, _| {
        let to = if target == "/to-file" { "file:///etc/passwd" } else { "http://169.254.169.254/latest/meta-data" };
        Reply { headers: vec![("Location".into(), to.into())], ..Reply::html("").status(302) }
    });
    let env = Env::new();
    env.write_config(&web_config(&site.url("/html/"), "", "", "engine = \"http\"\n"));
    let engine = env.engine();
    let file = fetch(&engine, &site.url("/to-file")).unwrap_err().to_string();
    assert_eq!(
        file,
        format!(
            "{}: redirects to a URL that is not http or https (file:, chrome:, ...), which is never followed",
            site.url("/to-file")
        )
    );
    let ll = fetch(&engine, &site.url("/to-link-local")).unwrap_err().to_string();
    assert!(ll.starts_with(&format!("{}: led to a URL docdex does not fetch: ", site.url("/to-link-local"))), "{ll}");
    assert!(ll.contains("169.254.169.254") && ll.contains("link-local"), "{ll}");
}

/// A loopback server that answers one connection at a time and keeps it open between
/// requests (HTTP/1.1 keep-alive) until it has been idle for 3 s, as a small single-threaded
/// server does: a client holding an idle connection holds every other one back that long. It
/// serves `content_type` and `body` for every path, and counts the requests per path.
struct SingleThreaded {
    addr: std::net::SocketAddr,
    hits: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>>,
}

impl SingleThreaded {
    fn start(content_type: &'static str, body: &'static [u8]) -> SingleThreaded {
        use std::io::{BufRead, BufReader, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let hits = std::sync::Arc::<std::sync::Mutex<std::collections::HashMap<String, usize>>>::default();
        let counted = hits.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let _ = conn.set_read_timeout(Some(Duration::from_secs(3)));
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut conn = conn;
                loop {
                    let mut line = String::new();
                    if !matches!(reader.read_line(&mut line), Ok(n) if n > 0) {
                        break;
                    }
                    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
                    while matches!(reader.read_line(&mut line), Ok(n) if n > 2) {
                        line.clear();
                    }
                    *counted.lock().unwrap().entry(path).or_insert(0) += 1;
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
                        body.len()
                    );
                    if conn.write_all(head.as_bytes()).and_then(|_| conn.write_all(body)).is_err() {
                        break;
                    }
                }
            }
        });
        SingleThreaded { addr, hits }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn hits(&self, path: &str) -> usize {
        self.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }
}

/// The browser failed an XML document when its headers arrived and it was read again over
/// plain HTTP: two requests, and against a single-threaded server the second waited behind
/// the browser's idle connection (until the server dropped it, or the page timeout: 15 s by
/// default). A document the browser does not render as a page (XML, a `text/csv` it
/// downloads, a text file) is now read from the browser's own response, once, in its
/// character set and within max_page_bytes.
#[test]
fn a_document_the_browser_does_not_render_is_requested_once() {
    if !have_browser() {
        return;
    }
    const XML: &[u8] = b"<?xml version=\"1.0\"?>\n<feed>\n  <title>Release notes</title>\n</feed>\n";
    let env = Env::new();
    env.write_config(&web_config("http://127.0.0.1:9/html/", "", "max_page_bytes = 65536", ""));
    let engine = env.engine();
    for (content_type, path, body, line) in [
        ("application/xml", "/feed.xml", XML, "  <title>Release notes</title>\n"),
        ("text/csv", "/table.csv", b"name,price\nwidget,3\n", "name,price\nwidget,3\n"),
        ("text/plain; charset=utf-8", "/notes.txt", XML, "  <title>Release notes</title>\n"),
        // Not UTF-8: the browser hands these bytes over in base64, read in their charset.
        ("text/plain; charset=iso-8859-1", "/latin1.txt", b"caf\xe9 cr\xe8me\n", "café crème"),
    ] {
        let server = SingleThreaded::start(content_type, body);
        let page = fetch(&engine, &server.url(path));
        assert_eq!(server.hits(path), 1, "{content_type}: requested {} times ({page:?})", server.hits(path));
        let page = page.unwrap_or_else(|e| panic!("{content_type}: {e}"));
        assert_eq!(page.page.via, FetchVia::Chromium, "{content_type}: {page:?}");
        assert!(page.page.markdown.contains(line), "{content_type}: {}", page.page.markdown);
    }
    let xml = fetch(&engine, &format!("http://{}/again.xml", SingleThreaded::start("text/xml", XML).addr)).unwrap();
    assert!(xml.notes.iter().any(|n| n.contains("an XML document (text/xml)")), "{:?}", xml.notes);
    // A page the browser renders is requested once too, from the same kind of server.
    let server = SingleThreaded::start("text/html", b"<html><body><p>a rendered page</p></body></html>");
    let page = fetch(&engine, &server.url("/page.html")).expect("an HTML page");
    assert_eq!(server.hits("/page.html"), 1);
    assert!(page.page.markdown.contains("a rendered page"), "{}", page.page.markdown);
    // A text document streamed past max_page_bytes without a length is stopped at the cap.
    let (addr, streamed) = streaming_server(4000, "text/plain");
    let big = fetch(&engine, &format!("http://{addr}/big.txt")).map(|r| r.page.html_bytes).unwrap_err().to_string();
    assert!(big.contains("larger than [web] max_page_bytes (65536)"), "{big}");
    assert!(streamed.join().unwrap() < 4000 * 8000, "the browser stopped reading");
}
