//! Source folders registered into a repository's index (`docdex add`): searchable with the
//! source named on each hit, listed with counts, removable, and confined to their roots
//! whichever way a file arrives (full index, watcher, API).

use crate::util::{eventually, hit_paths, quiet, write, Env, McpStdio, Watcher};
use docdex::engine::protocol::{AddSourceRequest, FileRequest, SearchRequest};
use docdex::engine::IndexOptions;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn add(path: &Path) -> AddSourceRequest {
    AddSourceRequest { path: path.to_path_buf(), ..Default::default() }
}

/// A repo, a notes folder beside it, and a secret file outside both.
fn setup(env: &Env) -> (PathBuf, PathBuf, PathBuf) {
    let repo = env.repo("repo");
    write(&repo, "src/lib.rs", "pub fn ledger_balance() {}\n");
    let notes = env.repo("notes");
    write(&notes, "heron.md", "# Field notes\n\nThe heron migration starts in early spring.\n");
    write(&notes, "deep/egret.md", "# Egrets\n\nEgrets nest in the reeds by the lake.\n");
    write(&notes, "scratch.log", "heron log noise\n");
    let outside = env.repo("outside");
    write(&outside, "secret.md", "The zebra password is hunter2.\n");
    (repo, notes, outside)
}

#[test]
fn a_source_is_searched_listed_read_and_removed() {
    let env = Env::new();
    let (repo, notes, outside) = setup(&env);
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &quiet()).unwrap();
    // A link inside the source to a file outside every root.
    std::os::unix::fs::symlink(outside.join("secret.md"), notes.join("linked.md")).unwrap();
    let src =
        engine.add_source(&repo, &AddSourceRequest { exclude: vec!["*.log".into()], ..add(&notes) }).expect("add");
    assert_eq!(src.name, "notes");
    engine.index(&repo, &IndexOptions::default(), &quiet()).unwrap();

    let req = SearchRequest { query: "heron migration".into(), limit: Some(10), ..Default::default() };
    let r = engine.search(&repo, &req).unwrap();
    assert_eq!(r.results[0].path, "//notes/heron.md");
    assert_eq!(r.results[0].source.as_deref(), Some("notes"));
    assert!(r.results[0].snippet.contains("heron migration starts"), "{}", r.results[0].snippet);
    assert!(!hit_paths(&engine, &repo, "heron").iter().any(|p| p.ends_with(".log")), "--exclude is honoured");
    let code = engine.search(&repo, &SearchRequest { query: "ledger balance".into(), ..Default::default() }).unwrap();
    assert_eq!((code.results[0].path.as_str(), code.results[0].source.as_deref()), ("src/lib.rs", None));
    assert!(hit_paths(&engine, &repo, "zebra password").is_empty(), "a link out of a source is never followed");

    let listed = engine.list_sources(&repo).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].files, 2);
    assert_eq!(listed[0].formats.get("markdown"), Some(&2));
    assert!(listed[0].bytes > 50);

    // Reading: by key, by absolute path inside the source; nothing outside the roots.
    let f = engine.get_file(&repo, &FileRequest::new("//notes/deep/egret.md", None)).unwrap();
    assert_eq!(f.path, "//notes/deep/egret.md");
    assert!(f.text.contains("reeds"));
    let f = engine.get_file(&repo, &FileRequest::new(notes.join("heron.md").to_str().unwrap(), None)).unwrap();
    assert_eq!(f.path, "//notes/heron.md");
    let folder = engine.get_file(&repo, &FileRequest::new("//notes", None)).unwrap_err().to_string();
    assert!(folder.contains("is the source folder") && folder.contains("give a file in it"), "{folder}");
    for bad in ["//notes/../outside/secret.md", "//notes/linked.md", "//other/heron.md"] {
        assert!(engine.get_file(&repo, &FileRequest::new(bad, None)).is_err(), "{bad} must be refused");
    }
    // Escaping a source is refused as such: the message names the source, not the repository.
    let escape = engine.get_file(&repo, &FileRequest::new("//notes/../outside/secret.md", None)).unwrap_err();
    assert_eq!(escape.code(), "path_outside_repo");
    let msg = escape.to_string();
    assert!(msg.contains("outside the registered source notes") && !msg.contains("repository"), "{msg}");
    let abs = outside.join("secret.md");
    assert!(engine.get_file(&repo, &FileRequest::new(abs.to_str().unwrap(), None)).is_err());

    // Refused registrations.
    assert!(engine.add_source(&repo, &add(&repo.join("src"))).is_err(), "inside the repo");
    assert!(engine.add_source(&repo, &add(&notes.join("deep"))).is_err(), "inside a source");
    assert!(engine.add_source(&repo, &add(&notes.join("heron.md"))).is_err(), "a file");
    assert!(engine.add_source(&repo, &add(&env.dir.path().join("missing"))).is_err(), "missing");
    assert!(engine.add_source(&repo, &add(env.dir.path())).is_err(), "contains the repo");

    // Removed: its files leave the index, counted as removals (a skipped binary or link was never in it).
    std::fs::write(notes.join("photo.bin"), [0u8, 159, 146, 150, 0, 1, 2]).unwrap();
    engine.index(&repo, &IndexOptions::default(), &quiet()).unwrap();
    assert_eq!(engine.list_sources(&repo).unwrap()[0].skipped, 2, "the binary and the link are skipped");
    engine.remove_source(&repo, "notes").unwrap();
    let summary = engine.index(&repo, &IndexOptions::default(), &quiet()).unwrap();
    assert_eq!(summary.deleted, 2, "{summary:?}");
    assert!(hit_paths(&engine, &repo, "heron").is_empty());
    assert_eq!(hit_paths(&engine, &repo, "ledger"), ["src/lib.rs"]);
    assert!(engine.list_sources(&repo).unwrap().is_empty());
    assert!(engine.remove_source(&repo, "notes").is_err());
}

#[test]
fn the_watcher_follows_a_source_and_never_a_link_out_of_it() {
    let env = Env::new();
    let (repo, notes, outside) = setup(&env);
    let engine = env.engine();
    engine.add_source(&repo, &add(&notes)).unwrap();
    let watcher = Watcher::start(&engine, &repo);
    assert_eq!(hit_paths(&engine, &repo, "egrets reeds")[0], "//notes/deep/egret.md");

    write(&notes, "deep/crane.md", "Cranes dance before they pair.\n");
    eventually("create in a source", || hit_paths(&engine, &repo, "cranes dance") == ["//notes/deep/crane.md"]);
    // A symlink created in the source under the live watcher, to a file and to a directory
    // outside: neither is read.
    std::os::unix::fs::symlink(outside.join("secret.md"), notes.join("deep/leak.md")).unwrap();
    std::os::unix::fs::symlink(&outside, notes.join("outside-dir")).unwrap();
    write(&notes, "deep/after.md", "Ospreys fish at dawn.\n");
    eventually("a later edit", || hit_paths(&engine, &repo, "ospreys") == ["//notes/deep/after.md"]);
    write(&outside, "secret.md", "The zebra password is hunter2, rotated.\n");
    std::thread::sleep(Duration::from_millis(600));
    assert!(hit_paths(&engine, &repo, "zebra password").is_empty(), "nothing outside a registered root");

    // A second source added while the watcher runs is indexed; removing it drops it.
    let more = env.repo("more");
    write(&more, "kestrel.md", "Kestrels hover over the verge.\n");
    engine.add_source(&repo, &add(&more)).unwrap();
    eventually("source added live", || hit_paths(&engine, &repo, "kestrels hover") == ["//more/kestrel.md"]);
    engine.remove_source(&repo, "more").unwrap();
    eventually("source removed live", || hit_paths(&engine, &repo, "kestrels").is_empty());
    std::fs::remove_file(notes.join("deep/crane.md")).unwrap();
    eventually("delete in a source", || hit_paths(&engine, &repo, "cranes").is_empty());

    watcher.stop();
}

#[test]
fn add_sources_and_remove_source_on_the_command_line() {
    let env = Env::new();
    let (repo, notes, _) = setup(&env);
    let (r, n) = (repo.to_str().unwrap(), notes.to_str().unwrap());
    let added = env.json(&["add", "--repo", r, n, "--include", "*.md", "--no-watch", "--json"]);
    assert_eq!(added["source"]["name"], "notes");
    assert_eq!(added["source"]["watch"], false);
    let listed = env.json(&["sources", "--repo", r, "--json"]);
    assert_eq!(listed[0]["files"], 2, "{listed}");
    assert_eq!(listed[0]["include"][0], "*.md");
    let text = String::from_utf8_lossy(&env.run(&["sources", "--repo", r]).stdout).into_owned();
    assert!(text.contains("notes") && text.contains("2 files") && text.contains("2 markdown"), "{text}");
    // Adding it again says it is there already.
    let out = env.run(&["add", "--repo", r, n, "--no-watch"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is already added, as the source notes"), "{out:?}");
    let hits = env.json(&["search", "--repo", r, "--json", "egrets nest reeds"]);
    assert_eq!(hits["results"][0]["source"], "notes");
    assert_eq!(hits["results"][0]["path"], "//notes/deep/egret.md");
    let out = env.run(&["remove-source", "--repo", r, n]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let hits = env.json(&["search", "--repo", r, "--json", "egrets nest reeds"]);
    assert!(hits["results"].as_array().unwrap().is_empty(), "{hits}");
    let out = env.run(&["add", "--repo", r, repo.join("src").to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("inside the repository"));
}

/// `docdex add /etc` and `docdex add ~/.ssh` were accepted: /etc's 300 readable files (passwd
/// among them) and the private keys were indexed and served. A source obeys the repository
/// root rule; one registered before that check is left out of the index and can be removed.
#[test]
fn a_system_or_credentials_folder_is_refused_as_a_source_and_never_indexed() {
    let env = Env::new();
    let (repo, _notes, _outside) = setup(&env);
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &quiet()).unwrap();
    let keys = env.repo("keys/.ssh");
    write(&keys, "id_ed25519", "PRIVATE KEY kestrel material\n");
    for bad in [Path::new("/etc"), keys.as_path()] {
        let err = engine.add_source(&repo, &add(bad)).expect_err("refused");
        let msg = err.to_string();
        assert!(msg.contains("refusing to add") && msg.contains("as a source"), "{msg}");
    }
    assert!(engine.list_sources(&repo).unwrap().is_empty());
    let out = env.run(&["add", "/etc", "--repo", repo.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("system directory"), "{out:?}");

    // Registered before the check: the index leaves it out; remove-source still takes it off.
    let state = engine.resolve_repo(&repo).unwrap().state_dir;
    let old = serde_json::json!([{ "name": "keys", "path": keys }]);
    std::fs::write(state.join("sources.json"), old.to_string()).unwrap();
    engine.index(&repo, &IndexOptions::default(), &quiet()).unwrap();
    assert!(hit_paths(&engine, &repo, "kestrel material").is_empty(), "a credentials folder is never indexed");
    engine.remove_source(&repo, "keys").expect("an old refused source can be removed");
    assert!(engine.list_sources(&repo).unwrap().is_empty());
}

/// A source folder deleted (or moved, or on a disk not mounted) was walked as empty: the next
/// index run silently dropped every file of it, and `docdex sources` listed it as if present.
/// Now it is listed as missing (`"missing": true`), an index run says so and keeps its files,
/// its hits say their source is missing, `get` names it; back on disk, it is indexed again.
#[test]
fn a_source_folder_gone_from_disk_is_listed_as_missing_and_its_files_are_kept() {
    let env = Env::new();
    let (repo, notes, _) = setup(&env);
    std::fs::write(notes.join("handbook.docx"), crate::documents::docx()).unwrap();
    let (r, n) = (repo.to_str().unwrap(), notes.to_str().unwrap());
    env.json(&["add", "--repo", r, n, "--no-watch", "--json"]);
    let away = notes.with_file_name("notes.unmounted");
    std::fs::rename(&notes, &away).unwrap();

    let listed = env.json(&["sources", "--repo", r, "--json"]);
    assert_eq!(listed[0]["missing"], true, "{listed}");
    let text = String::from_utf8_lossy(&env.run(&["sources", "--repo", r]).stdout).into_owned();
    assert!(text.contains("MISSING"), "{text}");
    let summary = env.engine().index(&repo, &IndexOptions::default(), &quiet()).unwrap();
    assert_eq!(summary.deleted, 0, "{summary:?}");
    let warning = summary.warnings.iter().find(|w| w.starts_with("source notes is missing")).expect("a warning");
    assert!(warning.contains("the 4 files indexed from it are kept"), "{warning}");
    let out = env.run(&["index", "--repo", r]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("source notes is missing"), "{out:?}");
    let status = env.engine().status(&repo).unwrap();
    assert!(status.warnings.iter().any(|w| w.starts_with("source notes is missing")), "{:?}", status.warnings);

    let req = SearchRequest { query: "heron migration".into(), limit: Some(10), ..Default::default() };
    let hit = env.engine().search(&repo, &req).unwrap().results.remove(0);
    assert_eq!((hit.path.as_str(), hit.source_missing), ("//notes/heron.md", true));
    let text = String::from_utf8_lossy(&env.run(&["search", "--repo", r, "heron migration"]).stdout).into_owned();
    assert!(text.contains("(source notes is missing"), "{text}");
    let err = env.engine().get_file(&repo, &FileRequest::new("//notes/heron.md", None)).unwrap_err();
    assert!(err.to_string().contains("the source notes is missing"), "{err}");
    // A document's snippet comes from the text kept when it was indexed (a text file's cannot).
    let doc_req = SearchRequest { query: "flamingo checklist".into(), limit: Some(10), ..Default::default() };
    let doc = env.engine().search(&repo, &doc_req).unwrap().results.remove(0);
    assert_eq!((doc.path.as_str(), doc.source_missing), ("//notes/handbook.docx", true));
    assert!(doc.snippet.contains("flamingo checklist"), "{doc:?}");

    std::fs::rename(&away, &notes).unwrap();
    write(&notes, "ibis.md", "# Ibis\n\nThe ibis feeds on the mudflats.\n");
    let summary = env.engine().index(&repo, &IndexOptions::default(), &quiet()).unwrap();
    assert!(summary.warnings.is_empty(), "{:?}", summary.warnings);
    assert_eq!(hit_paths(&env.engine(), &repo, "ibis mudflats"), ["//notes/ibis.md"]);
    let hit = env.engine().search(&repo, &req).unwrap().results.remove(0);
    assert!(!hit.source_missing && hit.snippet.contains("heron migration"), "{hit:?}");
    assert_eq!(env.json(&["sources", "--repo", r, "--json"])[0]["missing"], false);
}

/// A source folder replaced by a link (to `/etc`, say) was walked through the link: the next
/// index run indexed everything there and search showed it. The stored path is canonical, so
/// a path that now resolves elsewhere is a missing source: not walked, not read, said so.
#[test]
fn a_source_folder_replaced_by_a_link_is_missing_and_nothing_behind_the_link_is_indexed() {
    let env = Env::new();
    let (repo, notes, outside) = setup(&env);
    let engine = env.engine();
    engine.add_source(&repo, &add(&notes)).expect("add");
    engine.index(&repo, &IndexOptions::default(), &quiet()).unwrap();
    std::fs::rename(&notes, notes.with_file_name("notes.old")).unwrap();
    std::os::unix::fs::symlink(&outside, &notes).unwrap();
    let summary = engine.index(&repo, &IndexOptions::default(), &quiet()).unwrap();
    assert_eq!((summary.added, summary.deleted), (0, 0), "{summary:?}");
    let why = format!("now leads to {} through a link", std::fs::canonicalize(&outside).unwrap().display());
    assert!(summary.warnings.iter().any(|w| w.contains(&why)), "{:?}", summary.warnings);
    assert!(hit_paths(&engine, &repo, "zebra password").is_empty(), "nothing behind the link is indexed");
    let listed = engine.list_sources(&repo).unwrap();
    assert_eq!((listed[0].missing, listed[0].missing_why.as_deref()), (true, Some(why.as_str())));
    let req = SearchRequest { query: "heron migration".into(), limit: Some(10), ..Default::default() };
    let hit = engine.search(&repo, &req).unwrap().results.remove(0);
    assert!(hit.source_missing && hit.snippet.is_empty(), "nothing is read through the link: {hit:?}");
}

/// A source folder deleted under a live watcher and made again (a remount, a checkout): the OS
/// watch went with the old directory, so edits in the new one were never seen until a restart.
/// The watcher now watches the folder again when it is back, and indexes what it holds.
#[test]
fn the_watcher_follows_a_source_folder_that_comes_back() {
    let env = Env::new();
    let (repo, notes, _) = setup(&env);
    let engine = env.engine();
    engine.add_source(&repo, &add(&notes)).unwrap();
    let watcher = Watcher::start(&engine, &repo);
    assert_eq!(hit_paths(&engine, &repo, "egrets reeds")[0], "//notes/deep/egret.md");
    let away = env.dir.path().join("notes-away");
    std::fs::rename(&notes, &away).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // Back as a new directory, with a file the old one did not have.
    std::fs::create_dir_all(notes.join("deep")).unwrap();
    std::fs::copy(away.join("deep/egret.md"), notes.join("deep/egret.md")).unwrap();
    write(&notes, "ibis.md", "Ibises probe the mud flats.\n");
    eventually("the returned folder is indexed", || hit_paths(&engine, &repo, "ibises probe") == ["//notes/ibis.md"]);
    // And watched: an edit made after its return is found.
    std::thread::sleep(Duration::from_millis(300));
    write(&notes, "deep/stilt.md", "Stilts wade on long red legs.\n");
    eventually("an edit in the returned folder", || {
        hit_paths(&engine, &repo, "stilts wade") == ["//notes/deep/stilt.md"]
    });
    watcher.stop();
}

/// `docdex add` / `remove-source` while a watcher keeps the index: the watcher indexes the
/// change (it checks the list every second), and the command waits for that, so what it
/// prints and what `docdex sources` says next are true. It printed "up to date 1 file ...
/// nothing to do" and `docdex sources` listed the new source with 0 files.
#[test]
fn add_and_remove_source_under_a_running_watcher_report_what_the_watcher_indexed() {
    let env = Env::new();
    let (repo, notes, _) = setup(&env);
    let (r, n) = (repo.to_str().unwrap(), notes.to_str().unwrap());
    let watcher = Watcher::start(&env.engine(), &repo);
    let out = env.run(&["add", "--repo", r, n, "--exclude", "*.log"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    let pid = std::process::id();
    assert!(text.contains(&format!("the running watcher (pid {pid}) indexed the changed sources")), "{text}");
    assert!(text.contains("3 files") && !text.contains("nothing to do"), "the counts include the source: {text}");
    let listed = env.json(&["sources", "--repo", r, "--json"]);
    assert_eq!(listed[0]["files"], 2, "listed with its files at once: {listed}");

    let out = env.run(&["remove-source", "--repo", r, "notes", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["index"]["files"], 1, "{v}");
    assert!(v["index"].get("pending").is_none(), "{v}");
    assert!(hit_paths(&env.engine(), &repo, "heron migration").is_empty(), "dropped when remove-source returns");
    // A plain `index` with nothing changed still says so at once.
    let out = env.run(&["index", "--repo", r]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("keeps this index current; nothing to do"), "{out:?}");
    watcher.stop();
}

/// The file an editor opens for a key: a source's file where it is, the repository's beneath
/// it; a PDF or DOCX is refused (an editor shows its bytes), and so is a path out of the roots.
#[test]
fn the_editable_path_of_a_key_is_the_file_on_disk_beneath_its_root() {
    let env = Env::new();
    let (repo, notes, _outside) = setup(&env);
    write(&notes, "scan.pdf", "%PDF-1.4 not really\n");
    let engine = env.engine();
    engine.add_source(&repo, &add(&notes)).expect("add");
    engine.index(&repo, &IndexOptions::default(), &quiet()).unwrap();
    let canonical = |p: PathBuf| std::fs::canonicalize(p).unwrap();
    assert_eq!(engine.editable_path(&repo, "//notes/heron.md").unwrap(), canonical(notes.join("heron.md")));
    assert_eq!(engine.editable_path(&repo, "src/lib.rs").unwrap(), canonical(repo.join("src/lib.rs")));
    let pdf = engine.editable_path(&repo, "//notes/scan.pdf").unwrap_err().to_string();
    assert!(pdf.contains("is a PDF document") && pdf.contains("docdex get //notes/scan.pdf"), "{pdf}");
    assert!(engine.editable_path(&repo, "../outside/secret.md").is_err(), "outside the repository");
    assert!(engine.editable_path(&repo, "//nope/heron.md").is_err(), "no such source");
}

/// A search narrowed to a registered source by its key, as its hits' paths start (`--path
/// //notes/`, `path_prefix` over HTTP and MCP): it was refused as "outside the repository", so
/// a search could not be narrowed to a source at all.
#[test]
fn a_search_narrows_to_a_source_by_its_key() {
    let env = Env::new();
    let (repo, notes, _) = setup(&env);
    write(&repo, "docs/heron.md", "# Herons in the repository\n\nThe heron feeds at dawn.\n");
    let (r, n) = (repo.to_str().unwrap(), notes.to_str().unwrap());
    env.json(&["index", "--repo", r, "--json"]);
    env.json(&["add", "--repo", r, n, "--include", "*.md", "--no-watch", "--json"]);
    let paths = |prefix: &str| -> Vec<String> {
        let hits = env.json(&["search", "--repo", r, "--json", "--path", prefix, "heron"]);
        hits["results"].as_array().unwrap().iter().map(|h| h["path"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(paths("//notes/"), ["//notes/heron.md"]);
    assert_eq!(paths("//notes"), ["//notes/heron.md"]);
    assert_eq!(paths("docs/"), ["docs/heron.md"]);
    let egret = env.json(&["search", "--repo", r, "--json", "--path", "//notes/deep", "egrets"]);
    assert_eq!(egret["results"][0]["path"], "//notes/deep/egret.md", "{egret}");
    let none = env.json(&["search", "--repo", r, "--json", "--path", "//notes/deep/", "heron"]);
    assert!(none["results"].as_array().unwrap().is_empty(), "{none}");
    // An absolute path inside the source's folder is its key (it was "outside the repository").
    assert_eq!(paths(n), ["//notes/heron.md"]);
    let deep = notes.join("deep");
    let egret = env.json(&["search", "--repo", r, "--json", "--path", deep.to_str().unwrap(), "egrets"]);
    assert_eq!(egret["results"][0]["path"], "//notes/deep/egret.md", "{egret}");
    assert!(paths(&format!("{}/", deep.display())).is_empty(), "a folder of the source holding no heron");

    let out = env.run(&["search", "--repo", r, "--path", "//nope/", "heron"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no registered source named \"nope\"; its sources are notes"), "{err}");
    let out = env.run(&["search", "--repo", r, "--path", "//notes/../../", "heron"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("outside the registered source notes"), "{out:?}");
}

/// A source's file given to symbols, impact or run-tests (the path a search hit gave) was
/// refused as "outside the repository" with no word of why (tour14 F3): it says that sources
/// are indexed as text only, on the command line and over MCP (whose own path check spoke
/// first); a path outside every source is still outside the repository.
#[test]
fn symbols_impact_and_run_tests_on_a_source_file_say_sources_are_text_only() {
    let env = Env::new();
    let (repo, notes, _) = setup(&env);
    // A runner to detect, so run-tests reaches its target.
    write(&repo, "Cargo.toml", "[package]\nname = \"repo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n");
    let (r, n) = (repo.to_str().unwrap(), notes.to_str().unwrap());
    env.json(&["index", "--repo", r, "--json"]);
    env.json(&["add", "--repo", r, n, "--no-watch", "--json"]);
    let abs = notes.join("heron.md");
    let text_only =
        |err: &str| err.contains("lies in the registered source notes") && err.contains("indexed as text only");
    for args in [
        vec!["symbols", "--repo", r, "--file", "//notes/heron.md"],
        vec!["symbols", "--repo", r, "--path", "//notes/", "heron"],
        vec!["impact", "--repo", r, "//notes/heron.md"],
        vec!["impact", "--repo", r, abs.to_str().unwrap()],
        vec!["run-tests", "--repo", r, "--target", "//notes/heron.md"],
    ] {
        let out = env.run(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(text_only(&err), "{args:?}: {err}");
    }
    let out = env.run(&["impact", "--repo", r, "//nope/heron.md"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("outside the repository") && !text_only(&err), "{err}");

    let mut mcp = McpStdio::start(&env, &["--repo", r], serde_json::json!({}));
    for (tool, args) in [
        ("docdex_symbols", serde_json::json!({"file": "//notes/heron.md"})),
        ("docdex_impact", serde_json::json!({"file": "//notes/heron.md"})),
        ("docdex_run_tests", serde_json::json!({"target": "//notes/heron.md"})),
    ] {
        let res = mcp.call(tool, args);
        let text = res["content"][0]["text"].as_str().unwrap_or_default().to_string();
        assert_eq!(res["isError"], true, "{tool}: {res}");
        assert!(text.starts_with("path_outside_repo") && text_only(&text), "{tool}: {text}");
    }
}

/// A source's `--exclude` kept files out of search only: `get`, HTTP `/v1/open` and MCP
/// `docdex_open` served them (a private folder excluded from an agent's view was readable by
/// it). And `--include` admitted files the ignore files and the hidden rule keep out (a
/// `.gitignore`d note, with `--include '.*'` a `.env`), which search then showed and `get`
/// refused. A source's globs now narrow the walk's rules, for indexing and serving alike.
#[test]
fn a_source_s_globs_decide_what_is_served_as_what_is_indexed() {
    let env = Env::new();
    let (repo, notes, _) = setup(&env);
    write(&notes, "private/diary.md", "My diary: the pelican secret.\n");
    write(&notes, ".gitignore", "ignored.md\n");
    write(&notes, "ignored.md", "An ignored heron draft.\n");
    write(&notes, ".env", "ALPACA_TOKEN=1\n");
    let engine = env.engine();
    let req = AddSourceRequest {
        include: vec!["*.md".into(), ".*".into()],
        exclude: vec!["private/**".into()],
        ..add(&notes)
    };
    engine.add_source(&repo, &req).unwrap();
    engine.index(&repo, &IndexOptions::default(), &quiet()).unwrap();
    assert!(hit_paths(&engine, &repo, "pelican secret").is_empty());
    assert!(hit_paths(&engine, &repo, "alpaca token").is_empty(), "a dot file stays out");
    assert_eq!(hit_paths(&engine, &repo, "heron"), ["//notes/heron.md"], "an ignored file stays out");

    let refused = |file: &str| engine.get_file(&repo, &FileRequest::new(file, None)).unwrap_err();
    let diary = notes.join("private/diary.md");
    for file in ["//notes/private/diary.md", diary.to_str().unwrap(), "//notes/scratch.log"] {
        let e = refused(file);
        assert_eq!(e.code(), "path_not_served", "{file}: {e}");
        assert!(e.to_string().contains("left out by the source's `--exclude` or `--include`"), "{file}: {e}");
    }
    for file in ["//notes/ignored.md", "//notes/.env"] {
        let e = refused(file);
        assert!(e.to_string().contains("hidden or ignored"), "{file}: {e}");
    }
    assert!(engine.get_file(&repo, &FileRequest::new("//notes/heron.md", None)).is_ok());

    let r = repo.to_str().unwrap();
    let mut mcp = McpStdio::start(&env, &["--repo", r], serde_json::json!({}));
    let res = mcp.call("docdex_open", serde_json::json!({"path": "//notes/private/diary.md"}));
    let text = res["content"][0]["text"].as_str().unwrap_or_default().to_string();
    assert_eq!(res["isError"], true, "{res}");
    assert!(text.starts_with("path_not_served") && !text.contains("pelican"), "{text}");
}

/// `remove-source PATH` matched the path with links followed only: a source folder deleted from
/// disk could not be removed by the path `docdex sources` shows, and one replaced by a link to
/// another source's folder removed that other source.
#[test]
fn remove_source_by_path_takes_the_path_as_registered() {
    let env = Env::new();
    let (repo, notes, _) = setup(&env);
    let more = env.repo("more");
    write(&more, "kestrel.md", "Kestrels hover over the verge.\n");
    let engine = env.engine();
    engine.add_source(&repo, &add(&notes)).unwrap();
    engine.add_source(&repo, &add(&more)).unwrap();
    std::fs::rename(&notes, notes.with_file_name("notes.gone")).unwrap();
    std::os::unix::fs::symlink(&more, &notes).unwrap();
    let gone = engine.remove_source(&repo, notes.to_str().unwrap()).unwrap();
    assert_eq!(gone.name, "notes", "the source registered at that path, not the one the link leads to");
    let left: Vec<String> = engine.list_sources(&repo).unwrap().into_iter().map(|s| s.source.name).collect();
    assert_eq!(left, ["more"]);
    std::fs::remove_dir_all(&more).unwrap();
    assert_eq!(engine.remove_source(&repo, more.to_str().unwrap()).unwrap().name, "more", "a folder gone from disk");
    assert!(engine.list_sources(&repo).unwrap().is_empty());
}

/// `docdex add ~/notes` typed in a folder that is no repository (not in git, never indexed)
/// made that folder a repository and indexed all of it, naming neither; `sources` there said
/// "no sources". Without `--repo` they now say the folder is not indexed (exit 3), and `add`
/// and `remove-source` name the repository they changed.
#[test]
fn source_commands_in_a_folder_that_is_no_repository_say_so() {
    let env = Env::new();
    let (repo, notes, _) = setup(&env);
    let plain = env.repo("downloads");
    write(&plain, "big-download.txt", "not to be indexed\n");
    let run_in = |dir: &Path, args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_docdex"))
            .args(args)
            .current_dir(dir)
            .env("DOCDEX_HOME", env.home())
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    };
    for args in [&["add", notes.to_str().unwrap()][..], &["sources"], &["remove-source", "notes"]] {
        let out = run_in(&plain, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {err}");
        assert!(err.contains("is not indexed yet") && err.contains("downloads"), "{args:?}: {err}");
    }
    assert!(env.engine().list_repos().unwrap().is_empty(), "no repository was made");
    // In an indexed repository (here one outside git, found as registered) they name it.
    env.engine().index(&repo, &IndexOptions::default(), &quiet()).unwrap();
    let out = run_in(&repo, &["add", notes.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    let shown = repo.canonicalize().unwrap();
    assert!(err.contains(&format!("to the repository {}", shown.display())), "{err}");
    let out = run_in(&repo, &["remove-source", "notes"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("from the repository {}", shown.display())), "{err}");
}
