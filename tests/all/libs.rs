//! Library docs: dependencies detected from lockfiles, docs from a fixture cargo registry,
//! node_modules and a virtualenv's site-packages (offline), published docs from loopback
//! registries playing docs.rs, npm and PyPI, the per-repo libs index, `search --libs`, and
//! library passages in the chat waterfall's Tier 1.

use crate::server_util::{client, Server};
use crate::util::{llm_config, write, Env};
use crate::web_support::{doc_page, Fixture, Reply};
use docdex::engine::protocol::{
    ChatTurnRequest, LibsFetchRequest, LibsProgress, LibsSearchRequest, Slot, StepStatus, WebPolicy,
};
use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
use std::ops::ControlFlow;
use std::path::Path;

/// A project using one crate, one npm package and one Python package, each installed locally.
fn project(env: &Env) -> (std::path::PathBuf, std::path::PathBuf) {
    let repo = env.repo("app");
    write(&repo, "Cargo.toml", "[package]\nname = \"app\"\nversion = \"0.1.0\"\n[dependencies]\nwidgetlib = \"1\"\n");
    write(&repo, "Cargo.lock", "version = 3\n[[package]]\nname = \"widgetlib\"\nversion = \"1.2.3\"\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\n");
    write(&repo, "src/main.rs", "fn main() { widgetlib::reset_widget(1); }\n");
    write(&repo, "package.json", r#"{"name": "app", "dependencies": {"gizmo-kit": "^2.0.0"}}"#);
    write(
        &repo,
        "package-lock.json",
        r#"{"lockfileVersion": 3, "packages": {"node_modules/gizmo-kit": {"version": "2.0.1"}}}"#,
    );
    write(
        &repo,
        "node_modules/gizmo-kit/package.json",
        r#"{"name": "gizmo-kit", "version": "2.0.1", "description": "Gizmos that blink in sequence"}"#,
    );
    write(
        &repo,
        "node_modules/gizmo-kit/README.md",
        "# gizmo-kit\n\nCall `blinkAll(gizmos, intervalMs)` to make every gizmo blink in sequence.\n",
    );
    write(&repo, "requirements.txt", "quuxbus==3.1.0\n");
    let sp = ".venv/lib/python3.11/site-packages";
    write(&repo, &format!("{sp}/quuxbus-3.1.0.dist-info/METADATA"), "Metadata-Version: 2.1\nName: quuxbus\nVersion: 3.1.0\nSummary: A message bus for gadgets\n\nThe quux bus keeps the last hundred messages per topic for late subscribers.\n");
    write(&repo, &format!("{sp}/quuxbus-3.1.0.dist-info/top_level.txt"), "quuxbus\n");
    write(&repo, &format!("{sp}/quuxbus/__init__.py"), "\"\"\"Quux bus client.\"\"\"\n\ndef subscribe(topic, handler):\n    \"\"\"Subscribe handler to every message published under topic, replaying missed ones.\"\"\"\n    pass\n");
    let cargo = env.dir.path().join("cargo-home");
    let krate = cargo.join("registry/src/index.crates.io-1949cf8c6b5b557f/widgetlib-1.2.3");
    write(&krate, "README.md", "# widgetlib\n\nWidgets with knobs. See `reset_widget`.\n");
    write(
        &krate,
        "src/lib.rs",
        "//! Widgets with frobnicated knobs.\n\n/// Resets every knob of the widget to the defaults loaded at start-up.\npub fn reset_widget(id: u32) {}\n",
    );
    // Another version in the registry must not be read.
    write(&cargo.join("registry/src/index.crates.io-1949cf8c6b5b557f/widgetlib-0.9.0"), "README.md", "zyzzogeton\n");
    (repo, cargo)
}

fn registries() -> Fixture {
    Fixture::start("127.0.0.1", |target, base, _| {
        let path = target.split('?').next().unwrap_or("");
        match path {
            "/docsrs/widgetlib/1.2.3/widgetlib/" => Reply::html(doc_page(
                "widgetlib - Rust",
                "<p>The widgetlib crate documents reset_widget, which restores the knob defaults, and the Knob type, which holds one frobnicated setting per widget.</p><p>Widgets nest eight deep at most.</p>",
            )),
            "/npm/gizmo-kit" => {
                let mut r = Reply::html(r##"{"name":"gizmo-kit","readme":"# gizmo-kit\n\nblinkAll returns a promise that resolves when the last gizmo blinked."}"##);
                r.content_type = "application/json";
                r
            }
            "/pypi/pypi/quuxbus/3.1.0/json" => {
                let body = format!(
                    r#"{{"info":{{"description":"quuxbus: replay buffers for gadget topics","project_urls":{{"Documentation":"{base}/en/latest/reference/quux-docs"}}}}}}"#
                );
                let mut r = Reply::html(body);
                r.content_type = "application/json";
                r
            }
            "/en/latest/reference/quux-docs" => Reply::html(doc_page(
                "quuxbus documentation",
                "<p>Late subscribers replay the retained messages of a topic before they receive live ones, so no gadget misses a message.</p>",
            )),
            _ => Reply::html("not found").status(404),
        }
    })
}

fn libs_config(cargo: &Path, reg: &Fixture) -> String {
    format!(
        "[libs]\ncargo_home = \"{}\"\ndocs_rs_url = \"{}\"\nnpm_registry_url = \"{}\"\npypi_url = \"{}\"\n[web]\nallow_hosts = [\"127.0.0.1\"]\n[web.scraper]\nengine = \"http\"\n",
        cargo.display(),
        reg.url("/docsrs"),
        reg.url("/npm"),
        reg.url("/pypi")
    )
}

#[test]
fn local_sources_then_published_docs_are_cached_and_ingested_per_repo() {
    let env = Env::new();
    let reg = registries();
    let (repo, cargo) = project(&env);
    env.write_config(&libs_config(&cargo, &reg));
    let engine = env.engine();

    // Offline: installed sources only.
    let mut seen = Vec::new();
    let r = engine
        .libs_fetch(&repo, &LibsFetchRequest { refresh: false, offline: true }, &mut |p| {
            seen.push(match p {
                LibsProgress::Started { dep, index, total } => format!("start {index}/{total} {}", dep.name),
                LibsProgress::Done(p) => format!("done {}", p.name),
            })
        })
        .expect("libs fetch");
    let names: Vec<String> =
        r.packages.iter().map(|p| format!("{}:{}@{}", p.ecosystem.name(), p.name, p.version)).collect();
    assert_eq!(names, ["crates:widgetlib@1.2.3", "npm:gizmo-kit@2.0.1", "pypi:quuxbus@3.1.0"], "{r:?}");
    // Progress names each package as it starts (a slow registry can hold it), then when done.
    assert_eq!(
        seen,
        [
            "start 1/3 widgetlib",
            "done widgetlib",
            "start 2/3 gizmo-kit",
            "done gizmo-kit",
            "start 3/3 quuxbus",
            "done quuxbus"
        ]
    );
    assert!(r.packages.iter().all(|p| p.local_docs >= 2 && p.published_docs == 0 && p.chunks > 0), "{r:?}");
    assert!(reg.hits("/").is_empty(), "offline touched nothing");
    let hits =
        |q: &str| engine.libs_search(&repo, &LibsSearchRequest { query: q.into(), limit: Some(3) }).unwrap().hits;
    let h = hits("reset widget knobs defaults");
    assert_eq!(h[0].package, "widgetlib");
    assert_eq!(h[0].version, "1.2.3");
    assert!(h[0].citation.starts_with("widgetlib@1.2.3/"), "{:?}", h[0]);
    assert!(hits("blink gizmos in sequence")[0].package == "gizmo-kit");
    let q = hits("subscribe topic replay missed messages");
    assert_eq!(q[0].package, "quuxbus", "{q:?}");
    assert!(hits("zyzzogeton").is_empty(), "another version's sources were read");

    // Online: the published docs join, through the guarded fetcher, and land in cache/libs.
    let r = engine.libs_fetch(&repo, &LibsFetchRequest { refresh: true, offline: false }, &mut |_| {}).unwrap();
    assert!(r.packages.iter().all(|p| p.published_docs >= 1), "{r:?}");
    assert!(env.home().join("state/cache/libs/crates/widgetlib/1.2.3/docs.json").is_file());
    assert!(env.home().join("state/cache/libs/pypi/quuxbus/3.1.0/docs.json").is_file());
    let late = hits("late subscribers retained messages live");
    assert!(late.iter().any(|h| h.source.ends_with("/quux-docs")), "the PyPI documentation link was fetched: {late:?}");
    let requests = reg.hits("/").len();

    // Again without --refresh: everything from the cache, no request.
    let again = engine.libs_fetch(&repo, &LibsFetchRequest::default(), &mut |_| {}).unwrap();
    assert!(again.packages.iter().all(|p| p.cached), "{again:?}");
    assert_eq!(reg.hits("/").len(), requests);

    // `libs list` and `search --libs` on the command line.
    let list = env.json(&["libs", "list", "--repo", repo.to_str().unwrap(), "--json"]);
    assert_eq!(list["packages"].as_array().unwrap().len(), 3);
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let s = env.json(&["search", "--repo", repo.to_str().unwrap(), "reset widget knobs", "--libs", "--json"]);
    assert_eq!(s["libs"][0]["package"], "widgetlib", "{s}");
    // For people: a block after the code hits, each hit set apart, ending with a newline.
    let out = env.run(&["search", "--repo", repo.to_str().unwrap(), "reset widget knobs", "--libs"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\nlibrary docs\n\nwidgetlib@1.2.3") && text.ends_with('\n'), "{text:?}");
    // A published page's citation is a whole URL: people get the short label chat shows (the
    // host and the page), `--json` the full source.
    let out = env.run(&["search", "--repo", repo.to_str().unwrap(), "late subscribers retained messages", "--libs"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("quuxbus@3.1.0/127.0.0.1:") && text.contains("/…/reference/quux-docs"), "{text}");
    let heads: Vec<&str> = text.lines().filter(|l| l.starts_with("quuxbus@") || l.starts_with("widgetlib@")).collect();
    assert!(!heads.is_empty() && heads.iter().all(|l| !l.contains("http://")), "{text}");
    let s = env.json(&[
        "search",
        "--repo",
        repo.to_str().unwrap(),
        "late subscribers retained messages",
        "--libs",
        "--json",
    ]);
    let sources: Vec<&str> = s["libs"].as_array().unwrap().iter().filter_map(|h| h["source"].as_str()).collect();
    assert!(sources.iter().any(|s| s.starts_with("http://") && s.ends_with("/en/latest/reference/quux-docs")), "{s}");
    let plain = env.json(&["search", "--repo", repo.to_str().unwrap(), "reset widget knobs", "--json"]);
    assert!(plain.get("libs").is_none());

    // Over HTTP the search body is the same request: `libs: true` adds the library hits.
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap(), "--no-watch"], &[]);
    let post = |body: serde_json::Value| -> serde_json::Value {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            client().post(server.url("/v1/search")).json(&body).send().await.unwrap().json().await.unwrap()
        })
    };
    let v = post(serde_json::json!({"query": "reset widget knobs", "libs": true}));
    assert_eq!(v["libs"][0]["package"], "widgetlib", "{v}");
    assert_eq!(v["libs"][0]["version"], "1.2.3", "{v}");
    assert!(post(serde_json::json!({"query": "reset widget knobs"})).get("libs").is_none());
    server.terminate();

    // Another repository never sees this one's libs index, though the cache is shared.
    let other = env.repo("other");
    write(&other, "a.txt", "nothing\n");
    assert!(engine
        .libs_search(&other, &LibsSearchRequest { query: "reset widget".into(), limit: None })
        .unwrap()
        .hits
        .is_empty());
}

#[test]
fn unreachable_registries_are_said_plainly_and_tried_again_next_time() {
    let env = Env::new();
    let (repo, cargo) = project(&env);
    let r = repo.to_str().unwrap();
    let dead = crate::util::dead_url();
    env.write_config(&format!(
        "[libs]\ncargo_home = \"{}\"\ndocs_rs_url = \"{dead}/docsrs\"\nnpm_registry_url = \"{dead}/npm\"\npypi_url = \"{dead}/pypi\"\n[web]\nallow_hosts = [\"127.0.0.1\"]\n[web.scraper]\nengine = \"http\"\n",
        cargo.display()
    ));
    // The installed sources still make a libs index: exit 0, but the summary says what failed.
    let out = env.run(&["libs", "fetch", "--repo", r]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("warning: could not reach docs.rs (for 1 package"), "{err}");
    assert!(err.contains("the npm registry") && err.contains("PyPI"), "{err}");
    assert!(err.contains("`docdex libs fetch --offline`"), "{err}");
    let v = env.json(&["libs", "fetch", "--repo", r, "--json"]);
    assert!(v["registry_unreachable"].as_str().unwrap().contains("could not reach docs.rs"), "{v}");
    assert!(v["packages"].as_array().unwrap().iter().all(|p| p["local_docs"].as_u64() > Some(0)), "{v}");
    // --offline asks for no registry, so none is reported unreachable.
    let v = env.json(&["libs", "fetch", "--repo", r, "--offline", "--json"]);
    assert!(v.get("registry_unreachable").is_none(), "{v}");

    // The network back: the next fetch (no --refresh) gets the published docs, since a
    // registry never reached is not remembered as tried.
    let reg = registries();
    env.write_config(&libs_config(&cargo, &reg));
    let v = env.json(&["libs", "fetch", "--repo", r, "--json"]);
    assert!(v.get("registry_unreachable").is_none(), "{v}");
    assert!(v["packages"].as_array().unwrap().iter().all(|p| p["published_docs"].as_u64() >= Some(1)), "{v}");
}

#[test]
fn chat_uses_library_passages_as_tier_one_with_package_citations() {
    let env = Env::new();
    let reg = registries();
    let (repo, cargo) = project(&env);
    let server = FakeOllama::start(FakeOllamaOptions::default()).expect("fake");
    env.write_config(&format!(
        "{}{}",
        llm_config("ollama", &server.url(), "fake-chat", "fake-embed"),
        libs_config(&cargo, &reg)
    ));
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    let engine = env.engine();
    let ask = || {
        engine
            .chat(
                &repo,
                &ChatTurnRequest {
                    query: "how do I reset widget knobs".into(),
                    web: WebPolicy::Off,
                    ..Default::default()
                },
                &mut |_| ControlFlow::Continue(()),
            )
            .unwrap()
    };
    let before = ask();
    let step = before.trace.steps.iter().find(|s| s.name == "libs_index").unwrap();
    assert_eq!(step.status, StepStatus::Absent, "{step:?}");
    assert!(step.detail.contains("docdex libs fetch"), "{step:?}");

    let out = env.run(&["libs", "fetch", "--repo", r, "--offline"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let after = ask();
    let step = after.trace.steps.iter().find(|s| s.name == "libs_index").unwrap();
    assert_eq!(step.status, StepStatus::Ran, "{step:?}");
    assert!(step.detail.contains("widgetlib@1.2.3"), "{step:?}");
    let lib: Vec<_> = after.sources.iter().filter(|s| s.slot == Slot::Library).collect();
    assert!(!lib.is_empty(), "{:?}", after.sources);
    assert_eq!(lib[0].package.as_deref(), Some("crates:widgetlib@1.2.3"));
    let (_, body) = server.requests().into_iter().rev().find(|(p, _)| p == "/api/chat").unwrap();
    let system = body["messages"][0]["content"].as_str().unwrap().to_string();
    assert!(system.contains("## Library documentation") && system.contains("### widgetlib@1.2.3/"), "{system}");
}

#[test]
fn listing_before_any_fetch_says_so_and_json_keeps_the_error() {
    let env = Env::new();
    let repo = env.repo("bare");
    write(&repo, "src/main.rs", "fn main() {}\n");
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    let out = env.run(&["libs", "list", "--repo", r]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("no library docs for"), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("docdex libs fetch"), "{out:?}");
    let out = env.run(&["libs", "list", "--repo", r, "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json error");
    assert_eq!(v["error"]["code"], "not_found");
}

/// The root manifests are read like every repository file: a manifest that is a link to a
/// file outside the repository is not read (its dependencies were fetched), one that is a link
/// to a device no longer hangs `libs fetch` (it read /dev/zero until memory ran out), and a
/// manifest that does not parse says so (package.json was silently ignored; a path in
/// requirements.txt was a package without a name).
#[test]
fn odd_manifests_are_named_and_links_out_of_the_repository_are_not_read() {
    let env = Env::new();
    let repo = env.repo("odd");
    let outside = env.repo("elsewhere");
    write(&outside, "requirements.txt", "outsidepkg==9.9.9\n");
    write(&repo, "requirements.txt", "requests==2.31.0\n../vendor/local\n");
    write(&repo, "Cargo.toml", "[package]\nname = \"odd\"\n[dependencies]\nserde = \"1\"\n");
    write(&repo, "Cargo.lock", "version = [[ not toml");
    std::os::unix::fs::symlink(outside.join("requirements.txt"), repo.join("requirements-dev.txt")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", repo.join("package.json")).unwrap();
    let r = repo.to_str().unwrap();
    let t = std::time::Instant::now();
    let v = env.json(&["libs", "fetch", "--repo", r, "--offline", "--json"]);
    assert!(t.elapsed() < std::time::Duration::from_secs(30), "took {:?}", t.elapsed());
    let names: Vec<&str> = v["packages"].as_array().unwrap().iter().filter_map(|p| p["name"].as_str()).collect();
    assert_eq!(names, ["requests"], "{v}");
    let notes = v["notes"].to_string();
    assert!(!notes.contains("outsidepkg"), "{notes}");
    assert!(notes.contains("requirements-dev.txt: a symbolic link"), "{notes}");
    assert!(notes.contains("package.json: a symbolic link"), "{notes}");
    assert!(notes.contains("Cargo.lock: not valid TOML"), "{notes}");
    assert!(!notes.contains("Python package :"), "{notes}");
    std::fs::remove_file(repo.join("package.json")).unwrap();
    write(&repo, "package.json", "{\"dependencies\": {\"left-pad\": ");
    let v = env.json(&["libs", "fetch", "--repo", r, "--offline", "--json"]);
    assert!(v["notes"].to_string().contains("package.json: not valid JSON"), "{v}");
}

/// Installed sources in the repository are read within it and within bounds: a README in
/// node_modules that is a link to a file outside the repository was indexed into the libs
/// index (and served by `search --libs`), and one linked to /dev/zero hung `libs fetch`.
#[test]
fn installed_docs_are_read_inside_the_repository_and_bounded() {
    let env = Env::new();
    let repo = env.repo("linked");
    let outside = env.repo("private");
    write(&outside, "notes.md", "# Notes\n\nThe vault combination is zanzibar.\n");
    write(&repo, "package.json", r#"{"dependencies": {"left-pad": "^1.3.0", "streamer": "^2.0.0"}}"#);
    write(
        &repo,
        "package-lock.json",
        r#"{"lockfileVersion": 3, "packages": {"node_modules/left-pad": {"version": "1.3.0"}, "node_modules/streamer": {"version": "2.0.0"}}}"#,
    );
    write(
        &repo,
        "node_modules/left-pad/package.json",
        r#"{"name": "left-pad", "version": "1.3.0", "description": "Pads strings on the left."}"#,
    );
    std::os::unix::fs::symlink(outside.join("notes.md"), repo.join("node_modules/left-pad/README.md")).unwrap();
    write(
        &repo,
        "node_modules/streamer/package.json",
        r#"{"name": "streamer", "version": "2.0.0", "description": "Streams."}"#,
    );
    std::os::unix::fs::symlink("/dev/zero", repo.join("node_modules/streamer/README.md")).unwrap();
    let t = std::time::Instant::now();
    let v = env.json(&["libs", "fetch", "--repo", repo.to_str().unwrap(), "--offline", "--json"]);
    assert!(t.elapsed() < std::time::Duration::from_secs(30), "took {:?}", t.elapsed());
    for p in v["packages"].as_array().unwrap() {
        assert_eq!(p["local_docs"], 1, "only package.json's description: {p}");
    }
    let hits = env
        .engine()
        .libs_search(&repo, &LibsSearchRequest { query: "vault combination zanzibar".into(), limit: Some(5) })
        .expect("libs search");
    assert!(hits.hits.is_empty(), "{hits:?}");
}

/// A virtualenv in a cloned repository is the repository's to write: a `.dist-info/METADATA`
/// or a module that was a link to a file outside it was indexed (and served by `search --libs`),
/// as was a whole `.venv` linked elsewhere. A distribution without `top_level.txt` (hatchling,
/// flit: `attrs` installs `attr`) had only its description read; its modules come from RECORD.
#[test]
fn python_sources_are_read_inside_site_packages_and_modules_come_from_record() {
    let env = Env::new();
    let repo = env.repo("py");
    let outside = env.repo("private");
    write(&outside, "id.txt", "Metadata-Version: 2.1\n\nThe vault combination is zanzibar.\n");
    write(&outside, "mod/__init__.py", "\"\"\"Vault module: the pin is zanzibar.\"\"\"\n");
    write(
        &outside,
        "venv/lib/python3.12/site-packages/other-2.0.dist-info/METADATA",
        "Name: other\n\nzanzibar vault\n",
    );
    write(&repo, "requirements.txt", "evil==1.0\nattrs==23.2.0\n");
    let sp = repo.join(".venv/lib/python3.12/site-packages");
    write(&sp, "evil-1.0.dist-info/top_level.txt", "evilmod\n");
    std::os::unix::fs::symlink(outside.join("id.txt"), sp.join("evil-1.0.dist-info/METADATA")).unwrap();
    std::os::unix::fs::symlink(outside.join("mod"), sp.join("evilmod")).unwrap();
    write(&sp, "attrs-23.2.0.dist-info/METADATA", "Name: attrs\nSummary: Classes without boilerplate\n\nattrs body\n");
    write(
        &sp,
        "attrs-23.2.0.dist-info/RECORD",
        "attr/__init__.py,sha256=x,10\nattr/_make.py,sha256=x,10\nattrs/__init__.py,sha256=x,10\nattrs-23.2.0.dist-info/METADATA,,\n../../../bin/attrs-cli,,\n",
    );
    write(
        &sp,
        "attr/__init__.py",
        "def define(maybe_cls=None):\n    \"\"\"Define an attrs class with slotted frobnication.\"\"\"\n",
    );
    write(&sp, "attrs/__init__.py", "from attr import define\n");
    // A second project whose whole `venv` is a link out of it.
    let linked = env.repo("linkedvenv");
    write(&linked, "requirements.txt", "other==2.0\n");
    std::os::unix::fs::symlink(outside.join("venv"), linked.join("venv")).unwrap();

    let v = env.json(&["libs", "fetch", "--repo", repo.to_str().unwrap(), "--offline", "--json"]);
    let local = |name: &str| {
        v["packages"].as_array().unwrap().iter().find(|p| p["name"] == name).unwrap()["local_docs"].clone()
    };
    assert_eq!(local("evil"), 0, "{v}");
    assert_eq!(local("attrs"), 2, "METADATA and attr.define: {v}");
    let v = env.json(&["libs", "fetch", "--repo", linked.to_str().unwrap(), "--offline", "--json"]);
    assert_eq!(v["packages"][0]["local_docs"], 0, "{v}");
    let engine = env.engine();
    for r in [&repo, &linked] {
        let hits =
            engine.libs_search(r, &LibsSearchRequest { query: "vault zanzibar".into(), limit: Some(5) }).unwrap();
        assert!(hits.hits.is_empty(), "{hits:?}");
    }
    let hits = engine.libs_search(&repo, &LibsSearchRequest { query: "slotted frobnication".into(), limit: Some(5) });
    assert_eq!(hits.unwrap().hits[0].source, "attr/__init__.py");
}

/// A README of binary junk was indexed as a passage of replacement characters (shown by
/// `search --libs`, put into chat's context); a README over the per-package bound made the
/// package lose every installed doc, not only what did not fit.
#[test]
fn binary_readmes_are_skipped_and_huge_docs_are_cut_not_dropped() {
    let env = Env::new();
    let repo = env.repo("big");
    write(&repo, "package.json", r#"{"dependencies": {"junk": "1.0.0"}}"#);
    write(&repo, "node_modules/junk/package.json", r#"{"name": "junk", "version": "1.0.0", "description": "Junk."}"#);
    let mut bin: Vec<u8> = (0..20_000u32).map(|i| (i * 7919 % 251) as u8).collect();
    bin[10] = 0;
    std::fs::write(repo.join("node_modules/junk/README.md"), &bin).unwrap();
    write(&repo, "Cargo.toml", "[package]\nname = \"big\"\n[dependencies]\nhuge = \"1\"\n");
    write(&repo, "Cargo.lock", "[[package]]\nname = \"huge\"\nversion = \"1.0.0\"\n");
    let cargo = env.dir.path().join("cargo-home");
    let krate = cargo.join("registry/src/index.crates.io-1949cf8c6b5b557f/huge-1.0.0");
    let para = "The huge crate explains its knobs at length in this paragraph.\n\n";
    write(&krate, "README.md", format!("# huge\n\nThe opening says quokka.\n\n{}", para.repeat(8_000)));
    write(&krate, "src/lib.rs", "/// Turns the quokka dial.\npub fn dial() {}\n");
    env.write_config(&format!("[libs]\ncargo_home = \"{}\"\n", cargo.display()));

    let v = env.json(&["libs", "fetch", "--repo", repo.to_str().unwrap(), "--offline", "--json"]);
    let pkg = |name: &str| v["packages"].as_array().unwrap().iter().find(|p| p["name"] == name).unwrap().clone();
    assert_eq!(pkg("junk")["local_docs"], 1, "only the description: {v}");
    assert_eq!(pkg("huge")["local_docs"], 1, "the README, cut: {v}");
    assert!(pkg("huge")["notes"].to_string().contains("installed docs cut at 400 KB"), "{v}");
    let engine = env.engine();
    let hits = engine.libs_search(&repo, &LibsSearchRequest { query: "quokka".into(), limit: Some(5) }).unwrap();
    assert_eq!(hits.hits.len(), 1, "{hits:?}");
    assert!(hits.hits[0].text.contains("opening says quokka"), "{hits:?}");
    assert_eq!(pkg("junk")["chunks"], 1, "no passage of binary junk: {v}");
}

/// A registry that accepts connections and never answers cost every package the whole page
/// timeout (200 packages: an hour); after the first time-out the run asks it nothing more.
/// A package installed after the cache had only its published docs was served from the cache
/// without its installed sources until --refresh.
#[test]
fn a_dead_registry_is_asked_once_per_run_and_later_installs_are_read() {
    let env = Env::new();
    let repo = env.repo("slow");
    let names = ["aa-pkg", "bb-pkg", "cc-pkg"];
    let deps: Vec<String> = names.iter().map(|n| format!("\"{n}\": \"1.0.0\"")).collect();
    write(&repo, "package.json", format!("{{\"dependencies\": {{{}}}}}", deps.join(", ")));
    let locked: Vec<String> =
        names.iter().map(|n| format!("\"node_modules/{n}\": {{\"version\": \"1.0.0\"}}")).collect();
    write(&repo, "package-lock.json", format!("{{\"packages\": {{{}}}}}", locked.join(", ")));
    for n in names {
        write(
            &repo,
            &format!("node_modules/{n}/package.json"),
            format!(r#"{{"name": "{n}", "version": "1.0.0", "description": "The {n} package."}}"#),
        );
    }
    let slow = Fixture::start("127.0.0.1", |_, _, _| {
        let mut r = Reply::html("{}");
        r.delay = std::time::Duration::from_secs(60);
        r
    });
    let config = |npm: String| {
        format!("[libs]\nnpm_registry_url = \"{npm}\"\n[web]\nallow_hosts = [\"127.0.0.1\"]\n[web.scraper]\nengine = \"http\"\npage_load_timeout_secs = 1\n")
    };
    env.write_config(&config(slow.url("/npm")));
    let t = std::time::Instant::now();
    let v = env.json(&["libs", "fetch", "--repo", repo.to_str().unwrap(), "--json"]);
    assert!(t.elapsed() < std::time::Duration::from_secs(15), "took {:?}", t.elapsed());
    assert_eq!(slow.hits("/npm").len(), 1, "{v}");
    assert!(v["registry_unreachable"].as_str().unwrap().contains("the npm registry (for 3 packages"), "{v}");
    assert!(v["packages"][2]["notes"].to_string().contains("not asked for"), "{v}");
    assert!(v["packages"].as_array().unwrap().iter().all(|p| p["local_docs"] == 1), "{v}");

    // Published docs cached for a package not installed; installing it later adds its sources.
    let reg = Fixture::start("127.0.0.1", |target, _, _| {
        let mut r = Reply::html(format!(
            r##"{{"readme":"# {t}\n\nPublished readme of {t}."}}"##,
            t = target.trim_start_matches("/npm/")
        ));
        r.content_type = "application/json";
        r
    });
    env.write_config(&config(reg.url("/npm")));
    std::fs::remove_dir_all(repo.join("node_modules/aa-pkg")).unwrap();
    let v = env.json(&["libs", "fetch", "--repo", repo.to_str().unwrap(), "--json"]);
    assert_eq!(v["packages"][0]["local_docs"], 0, "{v}");
    assert_eq!(v["packages"][0]["published_docs"], 1, "{v}");
    write(
        &repo,
        "node_modules/aa-pkg/package.json",
        r#"{"name": "aa-pkg", "version": "1.0.0", "description": "Installed now."}"#,
    );
    let requests = reg.hits("/").len();
    let v = env.json(&["libs", "fetch", "--repo", repo.to_str().unwrap(), "--json"]);
    assert_eq!(v["packages"][0]["local_docs"], 1, "{v}");
    assert_eq!(v["packages"][0]["published_docs"], 1, "{v}");
    assert_eq!(reg.hits("/").len(), requests, "nothing fetched again");
}

/// The npm registry's document of a long-lived package holds every version's manifest
/// (typescript's is over 10 MB, @types/node's more), and one over `[web] max_page_bytes`
/// (5 MiB) gave the package no published README; registry documents have their own bound.
#[test]
fn a_registry_document_larger_than_a_page_still_gives_its_readme() {
    let env = Env::new();
    let repo = env.repo("bigdoc");
    write(&repo, "package.json", r#"{"dependencies": {"typish": "5.0.0"}}"#);
    write(&repo, "package-lock.json", r#"{"packages": {"node_modules/typish": {"version": "5.0.0"}}}"#);
    let reg = Fixture::start("127.0.0.1", |_, _, _| {
        let versions: Vec<String> = (0..3000)
            .map(|i| format!(r#""1.{i}.0": {{"name": "typish", "description": "{}"}}"#, "x".repeat(2000)))
            .collect();
        let mut r = Reply::html(format!(
            r##"{{"name": "typish", "readme": "# typish\n\nTypes with a wombat checker.", "versions": {{{}}}}}"##,
            versions.join(", ")
        ));
        r.content_type = "application/json";
        r
    });
    env.write_config(&format!(
        "[libs]\nnpm_registry_url = \"{}\"\n[web]\nallow_hosts = [\"127.0.0.1\"]\n[web.scraper]\nengine = \"http\"\n",
        reg.url("/npm")
    ));
    let v = env.json(&["libs", "fetch", "--repo", repo.to_str().unwrap(), "--json"]);
    assert_eq!(v["packages"][0]["published_docs"], 1, "{v}");
    let hits = env.engine().libs_search(&repo, &LibsSearchRequest { query: "wombat checker".into(), limit: Some(3) });
    assert_eq!(hits.unwrap().hits[0].package, "typish");
}

/// A test certificate authority (P-256, valid until 2125) and the certificate it signed for
/// 127.0.0.1, with that certificate's key: made once with openssl for the loopback HTTPS
/// registry below, trusted by nothing but `SSL_CERT_FILE`.
const TEST_CA: &str = "-----BEGIN CERTIFICATE-----\nMIIBmTCCAT+gAwIBAgIUK4KJKqsdHC3rgn28eZv35ZPAtdkwCgYIKoZIzj0EAwIw\nGTEXMBUGA1UEAwwOZG9jZGV4IHRlc3QgQ0EwIBcNMjYxMTI5MDgxNTEwWhgPMjEy\nNjExMDUwODE1MTBaMBkxFzAVBgNVBAMMDmRvY2RleCB0ZXN0IENBMFkwEwYHKoZI\nzj0CAQYIKoZIzj0DAQcDQgAE+0SGdWy+yxOMATwBjHGZHLTs7qdn3NbcsEv22qGP\nq5HeIRhRLSmc4lrcGIbZ3bRpYqmCUZnQa8fh6b36OT3UgKNjMGEwHQYDVR0OBBYE\nFI0x1sDjsD54BAhDLibhaIymwGEcMB8GA1UdIwQYMBaAFI0x1sDjsD54BAhDLibh\naIymwGEcMA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49\nBAMCA0gAMEUCIGTUjqnAdbpXKBF+M9XrmH3zmBA3dQYDnjEVLusa2nxuAiEAqSf0\n+rz9SwCSWxmhCxl8pK3Dc85cCQtqYkiUrQ2CU7c=\n-----END CERTIFICATE-----\n";
const TEST_LEAF: &str = "-----BEGIN CERTIFICATE-----\nMIIBwjCCAWegAwIBAgIUPgWROpXpKF/xwi1mzZbGhXquthIwCgYIKoZIzj0EAwIw\nGTEXMBUGA1UEAwwOZG9jZGV4IHRlc3QgQ0EwIBcNMjYxMTI5MDgxNTEwWhgPMjEy\nNjExMDUwODE1MTBaMBQxEjAQBgNVBAMMCTEyNy4wLjAuMTBZMBMGByqGSM49AgEG\nCCqGSM49AwEHA0IABC1S4ERfPF0hJFNeDUdvy532XWYW0wGz7yae9DkXVdx+YIxI\njXE+qvD4tUOHTCzMv6faWfQ9rIiL+j2cfUKjIRyjgY8wgYwwGgYDVR0RBBMwEYcE\nfwAAAYIJbG9jYWxob3N0MAkGA1UdEwQCMAAwDgYDVR0PAQH/BAQDAgeAMBMGA1Ud\nJQQMMAoGCCsGAQUFBwMBMB0GA1UdDgQWBBQ2vixsfeD/TtNiI9RHc/7pqoTDwDAf\nBgNVHSMEGDAWgBSNMdbA47A+eAQIQy4m4WiMpsBhHDAKBggqhkjOPQQDAgNJADBG\nAiEAuXURE2NPb2tpXz6iiKNgS0SsdtoQVH6bpR6IO+/2HEcCIQCJSU5Ej+43Rdtv\n30p10FsqzEDGdwEZ7FyCS+H+Lc1reQ==\n-----END CERTIFICATE-----\n";
const TEST_LEAF_KEY: &str = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgtBMfTgnrYvzO+vjp\n0aBzoQ/pSKhsSq+sHBKigP14SiuhRANCAAQtUuBEXzxdISRTXg1Hb8ud9l1mFtMB\ns+8mnvQ5F1XcfmCMSI1xPqrw+LVDh0wszL+n2ln0PayIi/o9nH1CoyEc\n-----END PRIVATE KEY-----\n";

/// A loopback HTTPS server under [`TEST_LEAF`] answering every request with `body` (JSON).
fn https_registry(body: &'static str) -> (String, std::thread::JoinHandle<()>) {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use std::io::{Read, Write};
    let certs = vec![CertificateDer::from_pem_slice(TEST_LEAF.as_bytes()).unwrap()];
    let key = PrivateKeyDer::from_pem_slice(TEST_LEAF_KEY.as_bytes()).unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let config = std::sync::Arc::new(config);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("https://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let handle = std::thread::spawn(move || {
        for conn in listener.incoming().take(4) {
            let Ok(tcp) = conn else { continue };
            let _ = tcp.set_read_timeout(Some(std::time::Duration::from_secs(10)));
            let tls = rustls::ServerConnection::new(config.clone()).unwrap();
            let mut stream = rustls::StreamOwned::new(tls, tcp);
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                match stream.read(&mut byte) {
                    Ok(1) => head.push(byte[0]),
                    _ => break,
                }
            }
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(reply.as_bytes());
            stream.conn.send_close_notify();
            let _ = stream.flush();
        }
    });
    (url, handle)
}

/// Behind a TLS-inspecting proxy the machine trusts the proxy's authority (curl, npm and pip
/// reach the registries), but docdex trusted only its built-in web roots, so every published
/// doc failed with `invalid peer certificate: UnknownIssuer`. It now also trusts
/// `SSL_CERT_FILE` (else the system bundle); an authority named nowhere is still refused.
#[test]
fn a_registry_signed_by_the_authority_in_ssl_cert_file_is_trusted() {
    let env = Env::new();
    let repo = env.repo("tls");
    write(&repo, "package.json", r#"{"dependencies": {"wombat": "1.0.0"}}"#);
    write(&repo, "package-lock.json", r#"{"packages": {"node_modules/wombat": {"version": "1.0.0"}}}"#);
    let (url, _server) = https_registry(r##"{"name": "wombat", "readme": "# wombat\n\nBurrows through numbats."}"##);
    env.write_config(&format!(
        "[libs]\nnpm_registry_url = \"{url}/npm\"\n[web]\nallow_hosts = [\"127.0.0.1\"]\n[web.scraper]\nengine = \"http\"\n"
    ));
    write(env.dir.path(), "ca.pem", TEST_CA);
    let r = repo.to_str().unwrap();
    let untrusted = env.run_env(&["libs", "fetch", "--repo", r, "--json"], &[("SSL_CERT_FILE", "/nonexistent/ca.pem")]);
    let v: serde_json::Value = serde_json::from_slice(&untrusted.stdout).unwrap();
    assert_eq!(v["packages"][0]["published_docs"], 0, "{v}");
    assert!(v["registry_unreachable"].as_str().unwrap().contains("UnknownIssuer"), "{v}");
    let ca = env.dir.path().join("ca.pem");
    let out = env.run_env(&["libs", "fetch", "--repo", r, "--json"], &[("SSL_CERT_FILE", ca.to_str().unwrap())]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["packages"][0]["published_docs"], 1, "{v} {}", String::from_utf8_lossy(&out.stderr));
}

/// Every documented item of a file was cited `package@version/<file>` (only a document's
/// later passages were numbered), and chat keeps one piece per citation: of the module docs
/// and `reset_widget`'s docs, both in widgetlib's src/lib.rs, the model saw only the first.
#[test]
fn items_documented_in_one_file_have_their_own_citations_and_all_reach_chat() {
    let env = Env::new();
    let (repo, cargo) = project(&env);
    let server = FakeOllama::start(FakeOllamaOptions::default()).expect("fake");
    env.write_config(&format!(
        "{}[libs]\ncargo_home = \"{}\"\n",
        llm_config("ollama", &server.url(), "fake-chat", "fake-embed"),
        cargo.display()
    ));
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    env.json(&["libs", "fetch", "--repo", r, "--offline", "--json"]);
    let engine = env.engine();
    let hits = engine
        .libs_search(&repo, &LibsSearchRequest { query: "widgets frobnicated knobs reset".into(), limit: Some(10) })
        .unwrap()
        .hits;
    let lib_rs: Vec<&str> = hits.iter().filter(|h| h.source == "src/lib.rs").map(|h| h.citation.as_str()).collect();
    assert_eq!(lib_rs.len(), 2, "{hits:?}");
    assert_ne!(lib_rs[0], lib_rs[1], "{hits:?}");
    let turn = engine
        .chat(
            &repo,
            &ChatTurnRequest {
                query: "widgets frobnicated knobs reset".into(),
                web: WebPolicy::Off,
                ..Default::default()
            },
            &mut |_| ControlFlow::Continue(()),
        )
        .unwrap();
    let cited: Vec<&str> = turn
        .sources
        .iter()
        .filter(|s| s.slot == Slot::Library && s.citation.contains("/src/lib.rs"))
        .map(|s| s.citation.as_str())
        .collect();
    assert_eq!(cited.len(), 2, "{:?}", turn.sources);
}

/// `cache/libs` outlives a docdex upgrade: an entry written by an older reading of the
/// installed sources (one that followed a link out of site-packages, indexed a binary README
/// or `pub(crate)` items) kept being served by every later fetch until --refresh. Such an
/// entry's installed docs are read again; its published docs are kept.
#[test]
fn cached_installed_docs_from_an_older_reading_are_read_again() {
    let env = Env::new();
    let repo = env.repo("upgraded");
    write(&repo, "package.json", r#"{"dependencies": {"gizmo": "1.0.0"}}"#);
    write(&repo, "package-lock.json", r#"{"packages": {"node_modules/gizmo": {"version": "1.0.0"}}}"#);
    write(
        &repo,
        "node_modules/gizmo/package.json",
        r#"{"name": "gizmo", "version": "1.0.0", "description": "Fresh gizmo text."}"#,
    );
    write(
        &env.home().join("state/cache/libs/npm/gizmo/1.0.0"),
        "docs.json",
        r#"{"fetched_at": 1, "published_tried": true, "notes": [],
            "local": [{"title": "README", "source": "README.md", "text": "The vault combination is zanzibar."}],
            "published": [{"title": "README (npm registry)", "source": "https://registry.npmjs.org/gizmo", "text": "Gizmos burrow like wombats."}]}"#,
    );
    let v = env.json(&["libs", "fetch", "--repo", repo.to_str().unwrap(), "--offline", "--json"]);
    assert_eq!(v["packages"][0]["local_docs"], 1, "{v}");
    assert_eq!(v["packages"][0]["published_docs"], 1, "{v}");
    let engine = env.engine();
    let search =
        |q: &str| engine.libs_search(&repo, &LibsSearchRequest { query: q.into(), limit: Some(5) }).unwrap().hits;
    assert!(search("vault zanzibar").is_empty());
    assert_eq!(search("wombats").len(), 1);
    assert_eq!(search("fresh").len(), 1);
    // Read again once: the entry is now the current reading's, served from the cache.
    let v = env.json(&["libs", "fetch", "--repo", repo.to_str().unwrap(), "--offline", "--json"]);
    assert_eq!(v["packages"][0]["cached"], true, "{v}");
}

/// A repository without manifests at its root got "0 packages" and nothing on why; and the
/// summary said "published docs not fetched (offline, [libs] fetch_published = false or the
/// web tier is off)" whichever held. Each now names its reason.
#[test]
fn the_summary_says_why_nothing_or_no_published_docs_were_fetched() {
    let env = Env::new();
    let repo = env.repo("nomanifest");
    write(&repo, "sub/Cargo.toml", "[package]\nname = \"sub\"\n[dependencies]\nserde = \"1\"\n");
    let r = repo.to_str().unwrap();
    let notes = |args: &[&str]| env.json(args)["notes"].to_string();
    let n = notes(&["libs", "fetch", "--repo", r, "--offline", "--json"]);
    assert!(
        n.contains("no Cargo.toml, package.json, requirements*.txt or pyproject.toml at the repository root"),
        "{n}"
    );
    assert!(n.contains("published docs not fetched (--offline)"), "{n}");
    write(&repo, "requirements.txt", "six==1.16.0\n");
    env.write_config("[libs]\nfetch_published = false\n");
    let n = notes(&["libs", "fetch", "--repo", r, "--json"]);
    assert!(
        !n.contains("no Cargo.toml") && n.contains("published docs not fetched ([libs] fetch_published = false)"),
        "{n}"
    );
    env.write_config("[web]\nenabled = false\n");
    let n = notes(&["libs", "fetch", "--repo", r, "--json"]);
    assert!(n.contains("published docs not fetched (the web tier is off: [web] enabled = false)"), "{n}");
}

/// `libs fetch` printed each package as progress on stderr, then again in the summary on
/// stdout: every package twice on a terminal. Progress is now a live line on a terminal
/// only; captured output names each package once, in the summary.
#[test]
fn fetch_names_each_package_once_when_output_is_captured() {
    let env = Env::new();
    let (repo, cargo) = project(&env);
    env.write_config(&format!("[libs]\ncargo_home = \"{}\"\n", cargo.display()));
    let out = env.run(&["libs", "fetch", "--repo", repo.to_str().unwrap(), "--offline"]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    for pkg in ["widgetlib@1.2.3", "gizmo-kit@2.0.1", "quuxbus@3.1.0"] {
        assert_eq!(stdout.matches(pkg).count(), 1, "{pkg} in the summary: {stdout}");
        assert_eq!(stderr.matches(pkg).count(), 0, "{pkg} as progress: {stderr}");
    }
    assert!(stderr.contains("3 packages"), "the summary line: {stderr}");
}

/// A crate shaped like memchr: one API documented once per platform (`src/arch/aarch64/...`,
/// `src/arch/x86_64/...`, `src/arch/all/...`) plus a copy-on-write byte string type.
fn per_platform_crate(env: &Env) -> (std::path::PathBuf, std::path::PathBuf) {
    let repo = env.repo("bytes-app");
    write(&repo, "Cargo.toml", "[package]\nname = \"app\"\nversion = \"0.1.0\"\n[dependencies]\nbytescan = \"2\"\n");
    write(&repo, "Cargo.lock", "version = 3\n[[package]]\nname = \"bytescan\"\nversion = \"2.7.0\"\n");
    write(&repo, "src/main.rs", "fn main() {}\n");
    let cargo = env.dir.path().join("cargo-home");
    let krate = cargo.join("registry/src/index.crates.io-1949cf8c6b5b557f/bytescan-2.7.0");
    write(&krate, "src/lib.rs", "//! Fast searching of byte slices.\npub mod arch;\npub mod cow;\n");
    write(
        &krate,
        "src/cow.rs",
        "/// A specialized copy-on-write byte string.\n///\n/// The purpose of this type is to permit usage of a \"borrowed or owned\n/// byte string\" in a way that keeps std/no-std compatibility: a plain\n/// byte slice, or owned bytes.\npub struct CowBytes<'a>(Imp<'a>);\n",
    );
    write(
        &krate,
        "src/memchr.rs",
        "/// Search for the first occurrence of a byte in a slice.\n///\n/// This returns the index corresponding to the first occurrence of `needle` in\n/// `haystack`, or `None` if one is not found. If an index is returned, it is\n/// guaranteed to be less than `haystack.len()`.\n///\n/// While this is semantically the same as something like\n/// `haystack.iter().position(|&b| b == needle)`, this routine will attempt to\n/// use highly optimized vector operations that can be an order of magnitude\n/// faster (or more).\npub fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {\n}\n\n/// How often the needle appears in the haystack.\npub fn count_bytes(needle: u8, haystack: &[u8]) -> usize {\n}\n\n/// Adds the count of bytes just seen to the running count of bytes.\npub fn tally(count: usize, bytes: &[u8]) -> usize {\n}\n",
    );
    let find = |tail: &str, unsafe_: &str| {
        format!(
            "/// Return the first occurrence of one of the needle bytes in the given\n/// haystack. If no such occurrence exists, then `None` is returned.\n///\n/// The occurrence is reported as an offset into `haystack`. Its maximum\n/// value{tail} is `haystack.len() - 1`.\npub {unsafe_}fn find(&self, haystack: &[u8]) -> Option<usize> {{\n}}\n"
        )
    };
    write(&krate, "src/arch/aarch64/neon/memchr.rs", find("", "unsafe "));
    write(&krate, "src/arch/x86_64/avx2/memchr.rs", find("", ""));
    write(&krate, "src/arch/x86_64/sse2/memchr.rs", find("", ""));
    // The generic copy says a little more: a near-duplicate, not an exact one.
    write(&krate, "src/arch/all/memchr.rs", find(" for a non-empty haystack", ""));
    (repo, cargo)
}

/// `search --libs` was plain BM25 over title and body: memchr's per-platform copies of one
/// item's docs crowded the hits, and for "first occurrence of a byte" the `CowBytes` struct
/// (one query word, many times, in a short passage) ranked above the `memchr()` function
/// whose docs say every word. Near-duplicates now collapse to the shortest path, the item's
/// name has its own boosted field, and a passage's score counts the share of query words it has.
#[test]
fn per_platform_copies_collapse_and_the_function_described_ranks_first() {
    let env = Env::new();
    let (repo, cargo) = per_platform_crate(&env);
    env.write_config(&format!("[libs]\ncargo_home = \"{}\"\n", cargo.display()));
    let engine = env.engine();
    engine.libs_fetch(&repo, &LibsFetchRequest { refresh: false, offline: true }, &mut |_| {}).unwrap();
    let search =
        |q: &str| engine.libs_search(&repo, &LibsSearchRequest { query: q.into(), limit: Some(5) }).unwrap().hits;
    let hits = search("first occurrence of a byte");
    let titles: Vec<&str> = hits.iter().map(|h| h.title.as_str()).collect();
    let finds: Vec<&str> = hits.iter().filter(|h| h.title.contains("fn find(")).map(|h| h.source.as_str()).collect();
    assert_eq!(finds, ["src/arch/all/memchr.rs"], "one copy, from the shortest path: {hits:?}");
    let mut top2 = titles[..2].to_vec();
    top2.sort();
    assert_eq!(
        top2,
        [
            "pub fn find(&self, haystack: &[u8]) -> Option<usize>",
            "pub fn memchr(needle: u8, haystack: &[u8]) -> Option<usize>"
        ],
        "both functions saying every query word first, the struct after: {titles:?}"
    );
    // The item's name: a query saying what a function does finds it before passages that
    // repeat the words.
    let hits = search("count bytes");
    assert_eq!(hits[0].title, "pub fn count_bytes(needle: u8, haystack: &[u8]) -> usize", "{hits:?}");
}

/// A gzip'd ustar archive of `(path, text)` files, as an npm tarball is.
fn tgz(files: &[(&str, &str)]) -> Vec<u8> {
    use std::io::Write;
    let mut tar = Vec::new();
    for (path, body) in files {
        let mut h = [0u8; 512];
        h[..path.len()].copy_from_slice(path.as_bytes());
        h[100..107].copy_from_slice(b"0000644");
        h[124..135].copy_from_slice(format!("{:011o}", body.len()).as_bytes());
        h[156] = b'0';
        h[257..263].copy_from_slice(b"ustar\0");
        h[148..156].copy_from_slice(b"        ");
        let sum: u32 = h.iter().map(|b| *b as u32).sum();
        h[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
        tar.extend_from_slice(&h);
        tar.extend_from_slice(body.as_bytes());
        tar.resize(tar.len().div_ceil(512) * 512, 0);
    }
    tar.extend_from_slice(&[0u8; 1024]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&tar).unwrap();
    gz.finish().unwrap()
}

/// A loopback registry serving bytes: `handler(path, base_url)` gives the status, content type
/// and body. Returns its base URL and the paths asked for.
fn byte_registry(
    handler: impl Fn(&str, &str) -> (u16, &'static str, Vec<u8>) + Send + Sync + 'static,
) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let seen: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
    let (b, s) = (base.clone(), seen.clone());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let _ = conn.set_read_timeout(Some(std::time::Duration::from_secs(10)));
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).is_ok_and(|n| n == 1) {
                head.push(byte[0]);
            }
            let path = String::from_utf8_lossy(&head).split_whitespace().nth(1).unwrap_or("/").to_string();
            s.lock().unwrap().push(path.clone());
            let (status, ct, body) = handler(&path, &b);
            let reply = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: {ct}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = conn.write_all(reply.as_bytes());
            let _ = conn.write_all(&body);
        }
    });
    (base, seen)
}

/// npm registries (and proxies in front of them) that serve the abbreviated package document
/// send no `readme`: every npm package had no published docs ("the npm registry has no README
/// for left-pad"). The README now comes from the version's tarball, read in memory: only a
/// README at the package root, never a member climbing out (`../`), a link, or a deeper one.
#[test]
fn npm_readmes_come_from_the_tarball_when_the_registry_document_has_none() {
    let env = Env::new();
    let repo = env.repo("tarballs");
    write(&repo, "package.json", r#"{"dependencies": {"padkit": "1.3.0", "@acme/deep": "2.0.0"}}"#);
    write(
        &repo,
        "package-lock.json",
        r#"{"packages": {"node_modules/padkit": {"version": "1.3.0"}, "node_modules/@acme/deep": {"version": "2.0.0"}}}"#,
    );
    let (base, seen) = byte_registry(|path, base| {
        let json = |s: String| (200, "application/json", s.into_bytes());
        let doc = |name: &str, file: &str, version: &str| {
            json(format!(
                r#"{{"name": "{name}", "dist-tags": {{"latest": "{version}"}}, "versions": {{"{version}": {{"dist": {{"tarball": "{base}/npm/{name}/-/{file}-{version}.tgz"}}}}}}}}"#
            ))
        };
        match path {
            "/npm/padkit" => doc("padkit", "padkit", "1.3.0"),
            "/npm/@acme%2Fdeep" => doc("@acme/deep", "deep", "2.0.0"),
            "/npm/padkit/-/padkit-1.3.0.tgz" => (
                200,
                "application/octet-stream",
                tgz(&[
                    ("package/package.json", "{}"),
                    ("package/../README.md", "Escaped the package."),
                    ("package/README.md", "# padkit\n\nPads strings on the left with wombat spaces."),
                ]),
            ),
            "/npm/@acme/deep/-/deep-2.0.0.tgz" => {
                (200, "application/octet-stream", tgz(&[("package/docs/README.md", "Nested numbat docs.")]))
            }
            _ => (404, "text/plain", b"not found".to_vec()),
        }
    });
    env.write_config(&format!(
        "[libs]\nnpm_registry_url = \"{base}/npm\"\n[web]\nallow_hosts = [\"127.0.0.1\"]\n[web.scraper]\nengine = \"http\"\n"
    ));
    let v = env.json(&["libs", "fetch", "--repo", repo.to_str().unwrap(), "--json"]);
    let pkg = |name: &str| v["packages"].as_array().unwrap().iter().find(|p| p["name"] == name).unwrap().clone();
    assert_eq!(pkg("padkit")["published_docs"], 1, "{v}");
    assert!(pkg("padkit")["notes"].to_string().contains("README read from the npm tarball"), "{v}");
    let deep = pkg("@acme/deep");
    assert_eq!(deep["published_docs"], 0, "{v}");
    assert!(
        deep["notes"]
            .to_string()
            .contains("no README for @acme/deep@2.0.0: not in the registry document, nor in its tarball"),
        "{v}"
    );
    assert!(v.get("registry_unreachable").is_none(), "an archive without a README is an answer: {v}");
    assert!(seen.lock().unwrap().iter().any(|p| p == "/npm/@acme/deep/-/deep-2.0.0.tgz"));
    let search = |q: &str| env.engine().libs_search(&repo, &LibsSearchRequest { query: q.into(), limit: Some(5) });
    let hits = search("pads strings wombat spaces").unwrap().hits;
    assert_eq!(hits[0].package, "padkit", "{hits:?}");
    assert!(hits[0].source.ends_with("padkit-1.3.0.tgz#package/README.md"), "{hits:?}");
    assert!(search("escaped the package").unwrap().hits.is_empty(), "a climbing member was read");
    assert!(search("nested numbat").unwrap().hits.is_empty(), "a README below the root was read");
}

/// An npm package whose tarball holds no README (and is not installed here) had nothing cached,
/// so every later `libs fetch` downloaded its registry document and its tarball (up to 32 MiB)
/// again for the same answer: the requests doubled with each run. One fetch asks once for each
/// document and tarball; that version's answer, README or none, is cached, so the next fetch
/// asks nothing, and `--refresh` asks again.
#[test]
fn an_npm_tarball_is_downloaded_once_and_its_answer_cached() {
    let env = Env::new();
    let repo = env.repo("once");
    write(&repo, "package.json", r#"{"dependencies": {"padkit": "1.3.0", "bare": "0.1.0"}}"#);
    write(
        &repo,
        "package-lock.json",
        r#"{"packages": {"node_modules/padkit": {"version": "1.3.0"}, "node_modules/bare": {"version": "0.1.0"}}}"#,
    );
    let (base, seen) = byte_registry(|path, base| {
        let doc = |name: &str, version: &str| {
            let body = format!(
                r#"{{"name": "{name}", "versions": {{"{version}": {{"dist": {{"tarball": "{base}/npm/{name}/-/{name}-{version}.tgz"}}}}}}}}"#
            );
            (200, "application/json", body.into_bytes())
        };
        match path {
            "/npm/padkit" => doc("padkit", "1.3.0"),
            "/npm/bare" => doc("bare", "0.1.0"),
            "/npm/padkit/-/padkit-1.3.0.tgz" => (
                200,
                "application/octet-stream",
                tgz(&[("package/README.md", "# padkit\n\nPads strings with platypus spaces.")]),
            ),
            "/npm/bare/-/bare-0.1.0.tgz" => (200, "application/octet-stream", tgz(&[("package/index.js", "")])),
            _ => (404, "text/plain", b"not found".to_vec()),
        }
    });
    env.write_config(&format!(
        "[libs]\nnpm_registry_url = \"{base}/npm\"\n[web]\nallow_hosts = [\"127.0.0.1\"]\n[web.scraper]\nengine = \"http\"\n"
    ));
    let r = repo.to_str().unwrap();
    let v = env.json(&["libs", "fetch", "--repo", r, "--json"]);
    let pkg = |name: &str| v["packages"].as_array().unwrap().iter().find(|p| p["name"] == name).unwrap().clone();
    assert_eq!(pkg("padkit")["published_docs"], 1, "{v}");
    assert_eq!(pkg("bare")["published_docs"], 0, "{v}");
    let asked = |p: &str| seen.lock().unwrap().iter().filter(|s| *s == p).count();
    for path in ["/npm/padkit", "/npm/padkit/-/padkit-1.3.0.tgz", "/npm/bare", "/npm/bare/-/bare-0.1.0.tgz"] {
        assert_eq!(asked(path), 1, "{path} asked for {} times: {:?}", asked(path), seen.lock().unwrap());
    }
    // Served from the cache: padkit's README is not fetched again.
    let before = seen.lock().unwrap().len();
    let cached = env.json(&["libs", "fetch", "--repo", r, "--json"]);
    let bare = cached["packages"].as_array().unwrap().iter().find(|p| p["name"] == "bare").unwrap().clone();
    assert_eq!(bare["cached"], true, "{cached}");
    assert!(bare["notes"].to_string().contains("no README for bare@0.1.0"), "the cached answer says why: {cached}");
    assert_eq!(asked("/npm/padkit/-/padkit-1.3.0.tgz"), 1, "{:?}", &seen.lock().unwrap()[before..]);
    assert_eq!(asked("/npm/bare/-/bare-0.1.0.tgz"), 1, "{:?}", &seen.lock().unwrap()[before..]);
    assert_eq!(seen.lock().unwrap().len(), before, "nothing asked again: {:?}", &seen.lock().unwrap()[before..]);
    let again = env.json(&["libs", "fetch", "--repo", r, "--refresh", "--json"]);
    let bare = again["packages"].as_array().unwrap().iter().find(|p| p["name"] == "bare").unwrap().clone();
    assert!(bare["notes"].to_string().contains("no README for bare@0.1.0"), "{again}");
    assert_eq!(asked("/npm/bare/-/bare-0.1.0.tgz"), 2, "--refresh asks again");
}

/// PyPI (or a proxy in front of it) answering 404 for `/pypi/NAME/VERSION/json` gave Python
/// packages no published docs. The project's page is read then: its description as it is when
/// it is the locked version's, else titled and noted with the version it describes; a locked
/// version PyPI never released is said to be missing, not described by another release.
#[test]
fn pypi_falls_back_to_the_project_page_and_says_which_version_it_describes() {
    let env = Env::new();
    let repo = env.repo("pyproj");
    write(&repo, "requirements.txt", "sixish==1.16.0\nexactly==2.0.0\nghostly==9.9.9\n");
    let (base, _seen) = byte_registry(|path, _| {
        let project = |name: &str, latest: &str, desc: &str| {
            let body = format!(
                r#"{{"info": {{"name": "{name}", "version": "{latest}", "description": "{desc}"}}, "releases": {{"1.16.0": [], "{latest}": []}}}}"#
            );
            (200, "application/json", body.into_bytes())
        };
        match path {
            "/pypi/sixish/json" => project("sixish", "1.17.0", "Sixish bridges two pythons with kangaroo shims."),
            "/pypi/exactly/json" => project("exactly", "2.0.0", "Exactly measures platypus lengths."),
            "/pypi/ghostly/json" => project("ghostly", "1.0.0", "Ghostly haunts."),
            _ => (404, "application/json", br#"{"message": "Not Found"}"#.to_vec()),
        }
    });
    env.write_config(&format!(
        "[libs]\npypi_url = \"{base}\"\n[web]\nallow_hosts = [\"127.0.0.1\"]\n[web.scraper]\nengine = \"http\"\n"
    ));
    let v = env.json(&["libs", "fetch", "--repo", repo.to_str().unwrap(), "--json"]);
    let pkg = |name: &str| v["packages"].as_array().unwrap().iter().find(|p| p["name"] == name).unwrap().clone();
    assert_eq!(pkg("exactly")["published_docs"], 1, "{v}");
    assert!(pkg("exactly").get("notes").is_none_or(|n| !n.to_string().contains("PyPI served")), "{v}");
    assert_eq!(pkg("sixish")["published_docs"], 1, "{v}");
    let notes = pkg("sixish")["notes"].to_string();
    assert!(
        notes.contains("PyPI served no page for sixish 1.16.0; its description is the latest release's (1.17.0)"),
        "{v}"
    );
    assert_eq!(pkg("ghostly")["published_docs"], 0, "{v}");
    assert!(pkg("ghostly")["notes"].to_string().contains("PyPI has no release 9.9.9 of ghostly"), "{v}");
    let search = |q: &str| env.engine().libs_search(&repo, &LibsSearchRequest { query: q.into(), limit: Some(5) });
    let hits = search("kangaroo shims").unwrap().hits;
    assert_eq!(hits[0].title, "project description of sixish 1.17.0 (PyPI)", "{hits:?}");
    assert_eq!(search("platypus lengths").unwrap().hits[0].title, "project description (PyPI)");
    assert!(search("ghostly haunts").unwrap().hits.is_empty());
}

/// `libs fetch --refresh --offline` (to read updated installed sources) dropped every
/// published doc from the index and, for an installed package, from the cache; so did
/// `--refresh` while the registries could not be reached. Both now keep the cached published
/// docs they cannot fetch anew, and say so when a registry failed.
#[test]
fn refreshing_without_a_registry_keeps_the_cached_published_docs() {
    let env = Env::new();
    let reg = registries();
    let (repo, cargo) = project(&env);
    let r = repo.to_str().unwrap();
    env.write_config(&libs_config(&cargo, &reg));
    let published = |v: &serde_json::Value| -> Vec<u64> {
        v["packages"].as_array().unwrap().iter().map(|p| p["published_docs"].as_u64().unwrap()).collect()
    };
    let v = env.json(&["libs", "fetch", "--repo", r, "--json"]);
    assert!(published(&v).iter().all(|n| *n >= 1), "{v}");
    write(&repo, "node_modules/gizmo-kit/README.md", "# gizmo-kit\n\nNow also wiggles every gizmo.\n");

    let v = env.json(&["libs", "fetch", "--repo", r, "--offline", "--refresh", "--json"]);
    assert!(published(&v).iter().all(|n| *n >= 1), "offline refresh dropped published docs: {v}");
    let search = |q: &str| env.engine().libs_search(&repo, &LibsSearchRequest { query: q.into(), limit: Some(3) });
    assert_eq!(search("wiggles every gizmo").unwrap().hits[0].package, "gizmo-kit", "installed sources read again");
    assert!(search("blinkAll returns a promise").unwrap().hits.iter().any(|h| h.source.contains("/npm/")));

    let dead = crate::util::dead_url();
    env.write_config(&format!(
        "[libs]\ncargo_home = \"{}\"\ndocs_rs_url = \"{dead}/docsrs\"\nnpm_registry_url = \"{dead}/npm\"\npypi_url = \"{dead}/pypi\"\n[web]\nallow_hosts = [\"127.0.0.1\"]\n[web.scraper]\nengine = \"http\"\n",
        cargo.display()
    ));
    let v = env.json(&["libs", "fetch", "--repo", r, "--refresh", "--json"]);
    assert!(v["registry_unreachable"].is_string(), "{v}");
    assert!(published(&v).iter().all(|n| *n >= 1), "a refresh on a dead network dropped published docs: {v}");
    assert!(v["packages"][0]["notes"].to_string().contains("published docs: the cached ones kept"), "{v}");
    assert!(search("blinkAll returns a promise").unwrap().hits.iter().any(|h| h.source.contains("/npm/")));
}

/// A crate not installed here had only docs.rs's crate page as its published docs, and on a
/// network that reaches crates.io (as cargo must) but not docs.rs, nothing at all. Its docs now
/// come from its archive on crates.io, read in memory as the installed sources are read: the
/// README and every public item's doc comments of that exact version. Installed later, the
/// crate is read locally and the archive's copy is dropped.
#[test]
fn a_crate_not_installed_is_documented_from_its_archive() {
    let env = Env::new();
    let repo = env.repo("crateapp");
    write(&repo, "Cargo.toml", "[package]\nname = \"app\"\nversion = \"0.1.0\"\n[dependencies]\nnumfmt = \"0.4\"\n");
    write(&repo, "Cargo.lock", "version = 3\n[[package]]\nname = \"numfmt\"\nversion = \"0.4.0\"\n");
    let lib = "//! Number formatting.\n\n/// Formats a number with echidna separators between thousands.\npub fn format(n: u64) -> String {\n}\n";
    let (base, seen) = byte_registry(move |path, _| match path {
        "/crates/numfmt/numfmt-0.4.0.crate" => (
            200,
            "application/gzip",
            tgz(&[
                ("numfmt-0.4.0/Cargo.toml", "[package]\nname = \"numfmt\"\n"),
                ("numfmt-0.4.0/README.md", "# numfmt\n\nPretty numbers for bandicoots."),
                ("numfmt-0.4.0/src/lib.rs", lib),
                ("numfmt-0.4.0/benches/fmt.rs", "/// Quokka benchmark.\npub fn bench() {}\n"),
            ]),
        ),
        _ => (404, "text/plain", b"not found".to_vec()),
    });
    let cargo = env.dir.path().join("cargo-home");
    std::fs::create_dir_all(&cargo).unwrap();
    env.write_config(&format!(
        "[libs]\ncargo_home = \"{}\"\ncrates_download_url = \"{base}/crates\"\ndocs_rs_url = \"{base}/docsrs\"\n[web]\nallow_hosts = [\"127.0.0.1\"]\n[web.scraper]\nengine = \"http\"\n",
        cargo.display()
    ));
    let r = repo.to_str().unwrap();
    let v = env.json(&["libs", "fetch", "--repo", r, "--json"]);
    assert_eq!(v["packages"][0]["local_docs"], 0, "{v}");
    assert_eq!(v["packages"][0]["published_docs"], 3, "README, module docs, format(): {v}");
    assert!(v["packages"][0]["notes"].to_string().contains("read from the crate's archive on crates.io"), "{v}");
    assert!(!seen.lock().unwrap().iter().any(|p| p.starts_with("/docsrs")), "docs.rs asked for an archive's docs");
    let search = |q: &str| env.engine().libs_search(&repo, &LibsSearchRequest { query: q.into(), limit: Some(5) });
    let hits = search("echidna separators").unwrap().hits;
    assert_eq!(hits[0].title, "pub fn format(n: u64) -> String", "{hits:?}");
    assert!(hits[0].source.ends_with("/crates/numfmt/numfmt-0.4.0.crate#numfmt-0.4.0/src/lib.rs"), "{hits:?}");
    assert!(search("bandicoots").unwrap().hits.len() == 1);
    assert!(search("quokka benchmark").unwrap().hits.is_empty(), "only src/ is documentation");

    // Installed now: read locally, the archive's copy dropped, nothing downloaded again.
    let krate = cargo.join("registry/src/index.crates.io-1949cf8c6b5b557f/numfmt-0.4.0");
    write(&krate, "src/lib.rs", lib);
    let asked = seen.lock().unwrap().len();
    let v = env.json(&["libs", "fetch", "--repo", r, "--json"]);
    assert_eq!(v["packages"][0]["published_docs"], 0, "{v}");
    assert_eq!(seen.lock().unwrap().len(), asked, "{v}");
    let hits = search("echidna separators").unwrap().hits;
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].source, "src/lib.rs", "{hits:?}");
}

/// A registry URL without its scheme (`npm_registry_url = "registry.npmjs.org"`) failed every
/// package alike with `"registry.npmjs.org/left-pad" is not a URL ...; give a full http(s) URL`,
/// naming neither the key nor the file. It is now said once, with both, and its packages ask
/// nothing (their installed sources are still indexed).
#[test]
fn a_registry_url_that_is_no_url_is_named_once_with_its_key() {
    let env = Env::new();
    let (repo, cargo) = project(&env);
    let dead = crate::util::dead_url();
    env.write_config(&format!(
        "[libs]\ncargo_home = \"{}\"\nnpm_registry_url = \"registry.npmjs.org\"\ndocs_rs_url = \"{dead}/docsrs\"\npypi_url = \"{dead}/pypi\"\n[web]\nallow_hosts = [\"127.0.0.1\"]\n[web.scraper]\nengine = \"http\"\n",
        cargo.display()
    ));
    let v = env.json(&["libs", "fetch", "--repo", repo.to_str().unwrap(), "--json"]);
    let config = env.home().join("config.toml");
    let want = format!(
        "[libs] npm_registry_url = \\\"registry.npmjs.org\\\" is not an http(s) URL, so its packages' published docs were not fetched; fix it in {}",
        config.display()
    );
    assert!(v["notes"].to_string().contains(&want), "{v}");
    let npm = v["packages"].as_array().unwrap().iter().find(|p| p["name"] == "gizmo-kit").unwrap().clone();
    assert!(npm["notes"].to_string().contains("published docs: not asked for ([libs] npm_registry_url"), "{v}");
    assert!(!npm["notes"].to_string().contains("is not a URL"), "{v}");
    assert!(npm["local_docs"].as_u64() >= Some(1), "{v}");
}

/// A zip holding one stored file, as a wheel holds its METADATA.
fn wheel(path: &str, text: &str) -> Vec<u8> {
    use std::io::Write;
    let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    z.start_file(path, opts).unwrap();
    z.write_all(text.as_bytes()).unwrap();
    z.finish().unwrap().into_inner()
}

/// When PyPI serves no page for the locked version, the project page's description is the
/// latest release's, another version's docs. The locked release's own is read from its
/// smallest sdist (PKG-INFO, old `Description:` header form too) or wheel (METADATA), whose
/// URL may be relative to the page (as the mirror here serves some); the latest's stands in
/// only when neither can be read.
#[test]
fn pypi_reads_the_locked_releases_own_description_from_its_sdist_or_wheel() {
    let env = Env::new();
    let repo = env.repo("pyfiles");
    write(&repo, "requirements.txt", "oldpkg==1.0.0\nwheelpkg==3.0.0\n");
    let (base, _seen) = byte_registry(|path, base| {
        let json = |s: String| (200, "application/json", s.into_bytes());
        let gz = |b: Vec<u8>| (200, "application/octet-stream", b);
        match path {
            "/pypi/oldpkg/json" => json(
                r#"{"info": {"version": "2.0.0", "description": "Oldpkg 2 counts koalas."}, "releases": {"2.0.0": [], "1.0.0": [{"filename": "oldpkg-1.0.0.tar.gz", "url": "../../files/oldpkg-1.0.0.tar.gz", "size": 300}]}}"#.into(),
            ),
            "/pypi/wheelpkg/json" => json(format!(
                r#"{{"info": {{"version": "3.1.0", "description": "Wheelpkg 3.1 herds cassowaries."}}, "releases": {{"3.1.0": [], "3.0.0": [{{"filename": "wheelpkg-3.0.0.tar.gz", "url": "{base}/files/huge.tar.gz", "size": 999999999}}, {{"filename": "wheelpkg-3.0.0-py3-none-any.whl", "url": "{base}/files/wheelpkg-3.0.0-py3-none-any.whl", "size": 400}}]}}}}"#
            )),
            "/files/oldpkg-1.0.0.tar.gz" => gz(tgz(&[(
                "oldpkg-1.0.0/PKG-INFO",
                "Metadata-Version: 1.1\nName: oldpkg\nVersion: 1.0.0\nSummary: Counting\nDescription: Oldpkg counts wallabies.\n        \n        One by one.\nPlatform: UNKNOWN\n",
            )])),
            "/files/wheelpkg-3.0.0-py3-none-any.whl" => gz(wheel(
                "wheelpkg-3.0.0.dist-info/METADATA",
                "Metadata-Version: 2.1\nName: wheelpkg\nVersion: 3.0.0\n\nWheelpkg herds emus.\n",
            )),
            _ => (404, "application/json", br#"{"message": "Not Found"}"#.to_vec()),
        }
    });
    env.write_config(&format!(
        "[libs]\npypi_url = \"{base}\"\n[web]\nallow_hosts = [\"127.0.0.1\"]\n[web.scraper]\nengine = \"http\"\n"
    ));
    let v = env.json(&["libs", "fetch", "--repo", repo.to_str().unwrap(), "--json"]);
    let pkg = |name: &str| v["packages"].as_array().unwrap().iter().find(|p| p["name"] == name).unwrap().clone();
    assert!(pkg("oldpkg")["notes"].to_string().contains("its description was read from oldpkg-1.0.0.tar.gz"), "{v}");
    let wheel_notes = pkg("wheelpkg")["notes"].to_string();
    assert!(wheel_notes.contains("its description was read from wheelpkg-3.0.0-py3-none-any.whl"), "{v}");
    let search = |q: &str| env.engine().libs_search(&repo, &LibsSearchRequest { query: q.into(), limit: Some(5) });
    let hits = search("counts wallabies one by one").unwrap().hits;
    assert_eq!(hits[0].title, "project description (PyPI)", "{hits:?}");
    assert!(hits[0].source.ends_with("/files/oldpkg-1.0.0.tar.gz#oldpkg-1.0.0/PKG-INFO"), "{hits:?}");
    assert_eq!(search("herds emus").unwrap().hits[0].package, "wheelpkg");
    assert!(search("koalas").unwrap().hits.is_empty(), "another release's description was indexed");
    assert!(search("cassowaries").unwrap().hits.is_empty(), "another release's description was indexed");
}

/// A package archive over docdex's 32 MiB bound was refused as "more than [web] max_page_bytes
/// (33554432)", a key the user had not set to that and that does not govern archives.
#[test]
fn an_archive_over_its_bound_is_refused_naming_that_bound() {
    let env = Env::new();
    let repo = env.repo("hugetar");
    write(&repo, "package.json", r#"{"dependencies": {"hugepkg": "1.0.0"}}"#);
    write(&repo, "package-lock.json", r#"{"packages": {"node_modules/hugepkg": {"version": "1.0.0"}}}"#);
    let (base, _seen) = byte_registry(|path, base| match path {
        "/npm/hugepkg" => (
            200,
            "application/json",
            format!(
                r#"{{"versions": {{"1.0.0": {{"dist": {{"tarball": "{base}/npm/hugepkg/-/hugepkg-1.0.0.tgz"}}}}}}}}"#
            )
            .into_bytes(),
        ),
        "/npm/hugepkg/-/hugepkg-1.0.0.tgz" => (200, "application/octet-stream", vec![0u8; (32 << 20) + 1]),
        _ => (404, "text/plain", b"not found".to_vec()),
    });
    env.write_config(&format!(
        "[libs]\nnpm_registry_url = \"{base}/npm\"\n[web]\nallow_hosts = [\"127.0.0.1\"]\n[web.scraper]\nengine = \"http\"\n"
    ));
    let v = env.json(&["libs", "fetch", "--repo", repo.to_str().unwrap(), "--json"]);
    let notes = v["packages"][0]["notes"].to_string();
    assert!(notes.contains("33554433 bytes is more than docdex's bound on package archives (33554432)"), "{v}");
    assert!(!notes.contains("max_page_bytes"), "{v}");
    assert!(v.get("registry_unreachable").is_none(), "a refused archive is an answer: {v}");
}

/// The one `libs_index` directory under the home's state.
fn libs_index_dir(home: &Path) -> std::path::PathBuf {
    let repos = home.join("state/repos");
    let mut found: Vec<_> = std::fs::read_dir(&repos)
        .unwrap()
        .flatten()
        .map(|e| e.path().join("libs_index"))
        .filter(|p| p.join("meta.json").is_file())
        .collect();
    assert_eq!(found.len(), 1, "one libs index under {}", repos.display());
    found.remove(0)
}

#[test]
fn a_rebuild_killed_mid_swap_leaves_the_previous_docs_searchable_and_no_leftovers() {
    let env = Env::new();
    let (repo, cargo) = per_platform_crate(&env);
    env.write_config(&format!("[libs]\ncargo_home = \"{}\"\n", cargo.display()));
    let engine = env.engine();
    let fetch = LibsFetchRequest { refresh: false, offline: true };
    engine.libs_fetch(&repo, &fetch, &mut |_| {}).unwrap();
    let dir = libs_index_dir(&env.home());
    // A rebuild by a process now gone, killed after moving the old index aside and before
    // installing its own (pids above the kernel's 4,194,304 maximum are never live); and another
    // one's half-built copy.
    let aside = dir.with_extension("old4294967");
    std::fs::rename(&dir, &aside).unwrap();
    let half = dir.with_extension("tmp4294968");
    write(&half, "meta.json", "{ half");
    let hits =
        engine.libs_search(&repo, &LibsSearchRequest { query: "count bytes".into(), limit: Some(5) }).unwrap().hits;
    assert!(!hits.is_empty(), "the set-aside index is put back and searched");
    assert!(dir.join("meta.json").is_file() && !aside.exists(), "restored in place");
    engine.libs_fetch(&repo, &fetch, &mut |_| {}).unwrap();
    let leftovers: Vec<_> = std::fs::read_dir(dir.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("libs_index."))
        .collect();
    assert!(leftovers.is_empty(), "no copies left beside the index: {leftovers:?}");
}

/// A crate's docs.rs page whose article is short (one sentence, under Readability's 200
/// characters) made Readability relax its rules, and the page's menu, ad, cookie banner and
/// footer were indexed as the crate's docs ("premium plan" found widgetlib). They are dropped
/// before Readability reads the page now; the short article is indexed whole.
#[test]
fn a_short_published_page_is_indexed_without_its_chrome() {
    let env = Env::new();
    let repo = env.repo("shortdocs");
    write(&repo, "Cargo.toml", "[package]\nname = \"app\"\nversion = \"0.1.0\"\n[dependencies]\nwidgetlib = \"1\"\n");
    write(&repo, "Cargo.lock", "version = 3\n[[package]]\nname = \"widgetlib\"\nversion = \"1.2.3\"\n");
    let cargo = env.dir.path().join("cargo-home");
    let krate = cargo.join("registry/src/index.crates.io-1949cf8c6b5b557f/widgetlib-1.2.3");
    write(&krate, "src/lib.rs", "//! Widgets.\n");
    let reg = Fixture::start("127.0.0.1", |target, _, _| match target.split('?').next().unwrap_or("") {
        "/docsrs/widgetlib/1.2.3/widgetlib/" => {
            let page = doc_page("widgetlib - Rust", "<p>Resets every knob to the capybara defaults.</p>");
            let banner = r#"<div id="cookie-consent">We use cookies to measure visits. Accept all</div>"#;
            Reply::html(page.replace("<body>", &format!("<body>{banner}")))
        }
        _ => Reply::html("not found").status(404),
    });
    let dead = crate::util::dead_url();
    env.write_config(&format!(
        "[libs]\ncargo_home = \"{}\"\ndocs_rs_url = \"{}\"\nnpm_registry_url = \"{dead}/npm\"\npypi_url = \"{dead}/pypi\"\n[web]\nallow_hosts = [\"127.0.0.1\"]\n[web.scraper]\nengine = \"http\"\n",
        cargo.display(),
        reg.url("/docsrs")
    ));
    let engine = env.engine();
    let r = engine.libs_fetch(&repo, &LibsFetchRequest { refresh: false, offline: false }, &mut |_| {}).expect("fetch");
    assert_eq!(r.packages[0].published_docs, 1, "{r:?}");
    let search = |q: &str| engine.libs_search(&repo, &LibsSearchRequest { query: q.into(), limit: Some(5) }).unwrap();
    let hits = search("capybara defaults").hits;
    assert!(hits.iter().any(|h| h.text.contains("Resets every knob to the capybara defaults")), "{hits:?}");
    for chrome in ["premium plan", "sign in to continue", "all rights reserved", "cookies measure visits"] {
        let found = search(chrome).hits;
        assert!(found.iter().all(|h| !h.source.contains("docsrs")), "{chrome}: {found:?}");
    }
}

/// A libs index built by an older analyzer (before index schema 10 Greek kept its accents,
/// before 9 `café` stayed `café` while queries now ask for `cafe`) is rebuilt from the cached
/// docs by the next search, nothing fetched; with the cache gone the old index is still searched.
#[test]
fn a_libs_index_from_an_older_analyzer_is_rebuilt_from_the_cache() {
    let env = Env::new();
    let (repo, cargo) = project(&env);
    env.write_config(&format!("[libs]\ncargo_home = \"{}\"\n", cargo.display()));
    let engine = env.engine();
    let fetch = LibsFetchRequest { refresh: false, offline: true };
    engine.libs_fetch(&repo, &fetch, &mut |_| {}).unwrap();
    let dir = libs_index_dir(&env.home());
    let marker = dir.join("docdex_analyzer");
    assert!(marker.is_file(), "a fetch records its analyzer");
    let search = |q: &str| -> Vec<String> {
        let req = LibsSearchRequest { query: q.into(), limit: Some(5) };
        engine.libs_search(&repo, &req).unwrap().hits.into_iter().map(|h| h.package).collect()
    };
    // The cached docs now say what the index does not hold, and the index loses its record, as
    // one an older docdex built has none: only a rebuild from the cache finds the new words.
    let cached = env.home().join("state/cache/libs/crates/widgetlib/1.2.3/docs.json");
    let text = std::fs::read_to_string(&cached).unwrap();
    assert!(text.contains("Widgets with knobs."), "{text}");
    std::fs::write(&cached, text.replace("Widgets with knobs.", "Widgets with knobs, served with café crème."))
        .unwrap();
    std::fs::remove_file(&marker).unwrap();
    assert_eq!(search("cafe creme"), ["widgetlib"], "rebuilt from the cache by the search");
    assert!(marker.is_file(), "the rebuilt index records its analyzer");
    // With the package's cache gone, the old index is searched as it is (the log says to fetch).
    std::fs::remove_file(&marker).unwrap();
    std::fs::remove_file(&cached).unwrap();
    assert_eq!(search("cafe creme"), ["widgetlib"]);
    assert!(!marker.is_file(), "not rebuilt without the docs");
}

/// A yarn or pnpm project that is not installed here had no npm docs: only package-lock.json
/// was read, and each dependency was `no lockfile entry and not installed; left out` beside a
/// yarn.lock or pnpm-lock.yaml that locks it. A crate under `[target.'cfg(..)'.dependencies]`
/// was not read either (`Cargo.toml: 0 dependencies`).
#[test]
fn yarn_and_pnpm_lockfiles_pin_npm_packages_and_target_crates_are_read() {
    let env = Env::new();
    let repo = env.repo("yarnapp");
    write(
        &repo,
        "package.json",
        r#"{"dependencies": {"left-pad": "^1.3.0"}, "devDependencies": {"@types/node": "^20"}}"#,
    );
    write(
        &repo,
        "yarn.lock",
        "# yarn lockfile v1\n\n\nleft-pad@^1.3.0:\n  version \"1.3.0\"\n  resolved \"https://registry.yarnpkg.com/left-pad/-/left-pad-1.3.0.tgz#5b8a\"\n\n\"@types/node@^20\":\n  version \"20.11.5\"\n",
    );
    write(&repo, "Cargo.toml", "[package]\nname = \"app\"\n[target.'cfg(unix)'.dependencies]\nmemchr = \"2\"\n");
    write(&repo, "Cargo.lock", "version = 3\n[[package]]\nname = \"memchr\"\nversion = \"2.7.4\"\n");
    let r = repo.to_str().unwrap();
    let pinned = |v: &serde_json::Value| -> Vec<String> {
        let packages = v["packages"].as_array().unwrap().iter();
        packages.map(|p| format!("{}@{}", p["name"].as_str().unwrap(), p["version"].as_str().unwrap())).collect()
    };
    let v = env.json(&["libs", "fetch", "--repo", r, "--offline", "--json"]);
    assert_eq!(pinned(&v), ["memchr@2.7.4", "@types/node@20.11.5", "left-pad@1.3.0"], "{v}");
    assert!(!v["notes"].to_string().contains("left out"), "{v}");
    std::fs::remove_file(repo.join("yarn.lock")).unwrap();
    write(
        &repo,
        "pnpm-lock.yaml",
        "lockfileVersion: '9.0'\n\nimporters:\n\n  .:\n    dependencies:\n      left-pad:\n        specifier: ^1.3.0\n        version: 1.3.0\n    devDependencies:\n      '@types/node':\n        specifier: ^20\n        version: 20.11.5(typescript@5.4.5)\n\npackages:\n\n  left-pad@1.3.0:\n    resolution: {integrity: sha512-x}\n",
    );
    let v = env.json(&["libs", "fetch", "--repo", r, "--offline", "--json"]);
    assert_eq!(pinned(&v), ["memchr@2.7.4", "@types/node@20.11.5", "left-pad@1.3.0"], "{v}");
}

/// What `libs fetch` and `libs list` say beyond the packages: how many came from the offline
/// cache (a second fetch was silent about serving every package as an earlier one left it);
/// a manifest docdex does not read (go.mod was ignored in silence); a package installed
/// without docs (it read "not installed"); an installed npm package of another version than
/// the lockfile's; a list of no libraries is an empty answer, in text and JSON.
#[test]
fn libs_notes_name_the_cache_unsupported_manifests_and_docless_installs() {
    let env = Env::new();
    let (repo, cargo) = project(&env);
    env.write_config(&format!("[libs]\ncargo_home = \"{}\"\n", cargo.display()));
    write(&repo, "go.mod", "module example.com/app\n\ngo 1.22\n");
    // Installed, but shipping no README and no description.
    write(
        &repo,
        "package.json",
        r#"{"name": "app", "dependencies": {"gizmo-kit": "^2.0.0", "bare-kit": "1.0.0", "old-kit": "^3.0.0"}}"#,
    );
    write(
        &repo,
        "package-lock.json",
        r#"{"packages": {"node_modules/gizmo-kit": {"version": "2.0.1"}, "node_modules/bare-kit": {"version": "1.0.0"}, "node_modules/old-kit": {"version": "3.1.0"}}}"#,
    );
    write(&repo, "node_modules/bare-kit/package.json", r#"{"name": "bare-kit", "version": "1.0.0"}"#);
    write(&repo, "node_modules/old-kit/package.json", r#"{"name": "old-kit", "version": "2.9.0"}"#);
    let r = repo.to_str().unwrap();
    let v = env.json(&["libs", "fetch", "--repo", r, "--offline", "--json"]);
    let notes = v["notes"].to_string();
    assert!(notes.contains("go.mod: Go modules are not supported yet"), "{notes}");
    assert!(notes.contains("npm package old-kit: node_modules has 2.9.0 but package-lock.json locks 3.1.0"), "{notes}");
    assert!(!notes.contains("offline cache"), "nothing was cached yet: {notes}");
    let pkg = |v: &serde_json::Value, name: &str| {
        v["packages"].as_array().unwrap().iter().find(|p| p["name"] == name).cloned().unwrap()
    };
    assert_eq!(
        pkg(&v, "bare-kit")["notes"][0],
        "installed here without documentation (no README, description, doc comments or docstrings)"
    );
    assert_eq!(pkg(&v, "old-kit")["notes"][0], "not installed here at this version (2.9.0 is installed)");

    // Again: the packages with docs are served from the cache, and the output says so.
    let out = env.run(&["libs", "fetch", "--repo", r, "--offline"]);
    assert!(out.status.success(), "{out:?}");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("widgetlib@1.2.3") && text.contains("(cached)"), "{text}");
    assert!(text.contains("5 packages (3 from the offline cache)"), "{text}");
    assert!(text.contains("3 packages (marked \"(cached)\") came from docdex's offline cache"), "{text}");
    assert!(text.contains("docdex libs fetch --refresh"), "{text}");

    // A repository with no libraries: an empty list, exit 0, in text and JSON.
    let empty = env.repo("nolibs");
    write(&empty, "src/main.rs", "fn main() {}\n");
    let e = empty.to_str().unwrap();
    env.json(&["libs", "fetch", "--repo", e, "--offline", "--json"]);
    let out = env.run(&["libs", "list", "--repo", e]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("no libraries in the libs index of"), "{out:?}");
    let out = env.run(&["libs", "list", "--repo", e, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["packages"], serde_json::json!([]), "{v}");
}
