//! Paths and roots a client gives that must cost nothing and serve nothing they should not:
//! a path of tens of thousands of components (it took seconds to hours to resolve), a file
//! swapped for a huge one between the size check and the read, credential folders mounted or
//! met under a root, system directories, and a `..` the opener refuses.

use crate::server_util::{client, Server};
use crate::util::{quiet, sample_repo, write, Env, McpStdio};
use docdex::engine::protocol::FileRequest;
use docdex::engine::IndexOptions;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

async fn answer(resp: reqwest::Response) -> (u16, String, String) {
    let status = resp.status().as_u16();
    let v: Value = resp.json().await.unwrap_or(Value::Null);
    let field = |k: &str| v["error"][k].as_str().unwrap_or("").to_string();
    (status, field("code"), field("message"))
}

#[tokio::test]
async fn a_path_of_thousands_of_components_is_refused_at_once_on_every_surface() {
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    env.json(&["index", "--repo", repo.to_str().unwrap(), "--json"]);
    let server = Server::start(&env, &["serve", "--repo", repo.to_str().unwrap()], &[]);
    let c = client();
    // 30,000 components took 9.8 s in a release build (quadratic), 60,000 as a search's
    // path_prefix 17 s; the body limit allowed a million.
    // (10,000 here: a query string encodes each `/` in three bytes, and a URI may have 65,534.)
    let deep = "a/".repeat(10_000);
    let t = Instant::now();
    let r = c.get(server.url("/v1/open")).query(&[("path", deep.as_str())]).send().await.unwrap();
    let (status, code, message) = answer(r).await;
    assert_eq!((status, code.as_str()), (400, "bad_request"), "{message}");
    assert!(message.contains("4096 bytes"), "{message}");
    let r = c.post(server.url("/v1/search")).json(&json!({"query": "session", "path_prefix": "a/".repeat(60_000)}));
    let (status, _, message) = answer(r.send().await.unwrap()).await;
    assert_eq!(status, 400, "{message}");
    // Short in bytes, deep in components: the other limit names itself.
    let parts = "a/".repeat(300);
    for (route, key) in [("/v1/open", "path"), ("/v1/symbols", "file"), ("/v1/graph/impact", "file")] {
        let r = c.get(server.url(route)).query(&[(key, parts.as_str())]).send().await.unwrap();
        let (status, _, message) = answer(r).await;
        assert_eq!(status, 400, "{route}: {message}");
        assert!(message.contains("300 components, over the 256"), "{route}: {message}");
    }
    assert!(t.elapsed() < Duration::from_secs(5), "refusing took {:?}", t.elapsed());
    // A path at the limits is still a path: inside, and not there.
    let r = c.get(server.url("/v1/open")).query(&[("path", "a/".repeat(200).as_str())]).send().await.unwrap();
    assert_eq!(answer(r).await.1, "not_found");

    // MCP takes the same path.
    let mut mcp = McpStdio::start(&env, &["--repo", repo.to_str().unwrap()], json!({}));
    let r = mcp.call("docdex_open", json!({ "path": "a/".repeat(20_000) }));
    assert_eq!(r["isError"], true, "{r}");
    assert!(r["content"][0]["text"].as_str().unwrap_or("").contains("4096 bytes"), "{r}");
    let r = mcp.call("docdex_symbols", json!({ "query": "x", "path_prefix": parts }));
    assert!(r["content"][0]["text"].as_str().unwrap_or("").contains("over the 256"), "{r}");
}

#[test]
fn a_file_swapped_for_a_huge_one_after_the_size_check_is_never_read_whole() {
    let env = Env::new();
    env.write_config("[index]\nmax_file_size_bytes = 65536\n");
    let repo = env.repo("r");
    write(&repo, "docs/grow.md", "# grow\nline two\nline three\n");
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    // The reported race: a small file and a hard link to a big one swapped at the same path
    // (os.replace in a loop) while clients read it.
    let big = env.dir.path().join("big.md");
    std::fs::write(&big, "x\n".repeat(4 << 20)).expect("big file"); // 8 MiB
    let small = env.dir.path().join("small.md");
    std::fs::write(&small, "# grow\nline two\nline three\n").expect("small file");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (stop, target, tmp) = (stop.clone(), repo.join("docs/grow.md"), repo.join("docs/.grow.tmp"));
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::fs::remove_file(&tmp);
                let from = if i.is_multiple_of(2) { &big } else { &small };
                if std::fs::hard_link(from, &tmp).is_ok() {
                    let _ = std::fs::rename(&tmp, &target);
                }
                i += 1;
            }
        })
    };
    let (mut served, mut refused) = (0, 0);
    let deadline = Instant::now() + Duration::from_secs(4);
    while Instant::now() < deadline && (served < 20 || refused < 20) {
        match engine.get_file(&repo, &FileRequest::new("docs/grow.md", Some((1, 3)))) {
            Ok(f) => {
                assert!(f.total_lines <= 3, "read {} lines of a file over the 64 KiB limit", f.total_lines);
                served += 1;
            }
            Err(e) => {
                assert!(matches!(e.code(), "path_not_served" | "not_found"), "{e}");
                refused += 1;
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().expect("swapper");
    assert!(served > 0 && refused > 0, "the race ran both ways: {served} served, {refused} refused");
}

#[tokio::test]
async fn credential_folders_and_system_directories_are_never_mounted() {
    let env = Env::new();
    let user_home = env.dir.path().join("user");
    write(&user_home, ".config/gcloud/creds.yml", "client_secret: gcloud-secret-token\n");
    write(&user_home, ".config/gh/hosts.yml", "oauth_token: gho_secret\n");
    write(&user_home, ".cargo/credentials.toml", "[registry]\ntoken = \"cargo-secret\"\n");
    write(&user_home, ".local/share/keyrings/login.keyring", "secret");
    write(&user_home, ".m2/settings.xml", "<password>m2</password>");
    write(&user_home, ".cache/huggingface/token", "hf_secrettoken\n");
    let daemon = Server::start(&env, &["daemon"], &[("HOME", user_home.to_str().unwrap())]);
    let c = client();
    let mut roots: Vec<String> =
        [".config", ".config/gh", ".cargo", ".local/share", ".m2", ".cache", ".cache/huggingface"]
            .iter()
            .map(|d| format!("{}/{d}", user_home.display()))
            .collect();
    for system in
        ["/usr/lib", "/usr/bin", "/usr/include", "/usr/share/doc", "/var/lib/dpkg", "/var/backups", "/var/mail"]
    {
        if std::path::Path::new(system).is_dir() {
            roots.push(system.to_string());
        }
    }
    for root in &roots {
        let r = c.post(daemon.url("/v1/initialize")).json(&json!({ "rootUri": format!("file://{root}") }));
        let (status, code, message) = answer(r.send().await.unwrap()).await;
        assert_eq!((status, code.as_str()), (403, "forbidden_repo"), "{root}: {message}");
        assert!(message.contains("credentials") || message.contains("system directory"), "{root}: {message}");
    }
    // A refusal names what the folder holds.
    let r = c
        .post(daemon.url("/v1/initialize"))
        .json(&json!({ "rootUri": format!("file://{}/.cache", user_home.display()) }));
    let (_, _, message) = answer(r.send().await.unwrap()).await;
    assert!(message.contains("it holds ~/.cache/huggingface, which holds credentials"), "{message}");
    let status: Value = c.get(daemon.url("/v1/status")).send().await.unwrap().json().await.unwrap();
    assert_eq!(status["repos"].as_array().map(Vec::len), Some(0), "nothing was mounted: {status}");
    // A project folder in the home is fine.
    let project = user_home.join("code/app");
    sample_repo(&project);
    let r = c.post(daemon.url("/v1/initialize")).json(&json!({ "rootUri": format!("file://{}", project.display()) }));
    assert_eq!(r.send().await.unwrap().status(), 200);
    // `docdex add` refuses such a folder as a source too.
    let out = env.run_env(
        &["add", "--repo", project.to_str().unwrap(), user_home.join(".config").to_str().unwrap()],
        &[("HOME", user_home.to_str().unwrap())],
    );
    assert!(!out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stderr).contains("credentials"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn credential_files_under_a_root_are_never_indexed_or_served_even_with_hidden_files_included() {
    let env = Env::new();
    env.write_config("[index]\ninclude_hidden = true\n");
    let repo = env.repo("dotfiles");
    let secret = "zebracredential";
    for f in [
        ".ssh/config",
        ".aws/credentials",
        ".config/gh/hosts.yml",
        ".config/gcloud/creds.yml",
        ".cargo/credentials.toml",
        ".docker/config.json",
        ".netrc",
        ".npmrc",
        ".git-credentials",
        "deploy/id_ed25519",
        "keys/id_rsa",
        "cache/huggingface/token",
        "cache/huggingface/stored_tokens",
        ".huggingface/token",
    ] {
        write(&repo, f, format!("{secret} {f}\n"));
    }
    write(&repo, "README.md", "dotfiles, see zebracredential handling in docs\n");
    write(&repo, ".config/nvim/init.lua", "-- editor settings\n");
    write(&repo, "keys/id_rsa.pub", "ssh-ed25519 AAAA public\n");
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    let hits = crate::util::hit_paths(&engine, &repo, secret);
    assert_eq!(hits, vec!["README.md".to_string()], "only the README mentions it");
    for f in [
        ".ssh/config",
        ".netrc",
        ".cargo/credentials.toml",
        ".docker/config.json",
        "deploy/id_ed25519",
        "keys/id_rsa",
        "cache/huggingface/token",
    ] {
        let e = engine.get_file(&repo, &FileRequest::new(f, None)).expect_err(f);
        assert_eq!(e.code(), "path_not_served", "{f}: {e}");
    }
    // Hidden files that are not credentials are still served when included.
    assert!(engine.get_file(&repo, &FileRequest::new(".config/nvim/init.lua", None)).is_ok());
    assert!(engine.get_file(&repo, &FileRequest::new("keys/id_rsa.pub", None)).is_ok());
}

#[test]
fn a_dot_dot_through_the_root_is_named_as_such() {
    let env = Env::new();
    let repo = env.repo("r");
    sample_repo(&repo);
    let engine = env.engine();
    engine.index(&repo, &IndexOptions::default(), &quiet()).expect("index");
    let real = repo.canonicalize().expect("canonical");
    let name = real.file_name().and_then(|n| n.to_str()).expect("name");
    let given = format!("{}/../{name}/README.md", real.display());
    let e = engine.get_file(&repo, &FileRequest::new(&given, None)).expect_err("refused");
    let msg = e.to_string();
    assert!(msg.contains("`..`") && !msg.contains("symbolic link"), "{msg}");
}

/// Tour 33 F3: the walk crossed mount points, so a bind mount of `/etc` inside a repository
/// indexed `/etc` and `get` served `etcbind/shadow`, though `--repo /etc` is refused. A folder
/// on another file system is not walked (indexed, watched or served) unless `[index]
/// cross_file_systems` says so. The mount is a tmpfs in a private mount namespace (`unshare
/// -rm`); skipped where unprivileged namespaces are not allowed.
#[test]
fn a_file_system_mounted_inside_the_repository_is_not_walked() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "top.md", "a heron at the top\n");
    std::fs::create_dir_all(repo.join("mnt")).unwrap();
    let script = r#"set -u
mount -t tmpfs tmpfs "$R/mnt" || exit 97
echo "a heron in the mount" > "$R/mnt/inner.md"
echo "=== index"; "$DOCDEX" index --repo "$R" --json 2>&1
echo "=== search"; "$DOCDEX" search --repo "$R" heron --json 2>&1
echo "=== get"; "$DOCDEX" get --repo "$R" mnt/inner.md 2>&1; echo "exit=$?"
printf '[index]\ncross_file_systems = true\n' > "$DOCDEX_HOME/config.toml"
echo "=== crossed"; "$DOCDEX" index --repo "$R" --quiet 2>&1; "$DOCDEX" get --repo "$R" mnt/inner.md 2>&1; echo "exit=$?"
echo "=== end"
"#;
    std::fs::create_dir_all(env.home()).unwrap();
    let out = std::process::Command::new("unshare")
        .args(["-rm", "sh", "-c", script])
        .env("R", &repo)
        .env("DOCDEX_HOME", env.home())
        .env("DOCDEX", env!("CARGO_BIN_EXE_docdex"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    if out.status.code() == Some(97) || out.stdout.is_empty() {
        eprintln!("skipping: no private mount here: {}", String::from_utf8_lossy(&out.stderr));
        return;
    }
    let out = String::from_utf8_lossy(&out.stdout).into_owned();
    let section = |name: &str| {
        let start = out.find(&format!("=== {name}\n")).unwrap_or_else(|| panic!("no {name} in {out}"));
        let rest = &out[start..];
        rest[..rest[4..].find("=== ").map_or(rest.len(), |i| i + 4)].to_string()
    };
    let index = section("index");
    assert!(index.contains("\"mnt\"") && index.contains("another file system is mounted here"), "{index}");
    let search = section("search");
    assert!(search.contains("top.md") && !search.contains("inner.md"), "{search}");
    let get = section("get");
    assert!(get.contains("exit=2") && get.contains("another file system is mounted here"), "{get}");
    assert!(section("crossed").contains("a heron in the mount"), "{out}");
}
