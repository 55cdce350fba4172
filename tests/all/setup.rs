//! `docdex llm-list`, `llm-setup` and `check` through the real binary, against the
//! fake Ollama, with hardware tiers injected through `DOCDEX_HARDWARE`.

use crate::util::{dead_url, llm_config, Env};
use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
use serde_json::Value;

fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "bad JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn model<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["models"].as_array().unwrap().iter().find(|m| m["name"] == name).unwrap_or_else(|| panic!("{name} not listed"))
}

#[test]
fn llm_list_recommends_by_hardware_tier_and_marks_installed_models() {
    let server = FakeOllama::start(FakeOllamaOptions {
        models: vec!["phi3.5:3.8b".into(), "nomic-embed-text".into(), "mistral:7b".into()],
        ..Default::default()
    })
    .unwrap();
    let env = Env::new();
    env.write_config(&llm_config("ollama", &server.url(), "phi3.5:3.8b", "nomic-embed-text"));

    let v = json_of(&env.run_env(&["llm-list", "--json"], &[("DOCDEX_HARDWARE", "ram_gb=16")]));
    assert_eq!(v["tier"], "default");
    assert_eq!(v["hardware"]["source"], "DOCDEX_HARDWARE");
    assert_eq!(v["recommended_chat"], "phi3.5:3.8b");
    assert_eq!(v["recommended_embedding"], "nomic-embed-text");
    assert_eq!(model(&v, "phi3.5:3.8b")["installed"], true);
    assert_eq!(model(&v, "phi3.5:3.8b")["recommended"], true);
    assert_eq!(model(&v, "llama3.2:1b")["installed"], false);
    assert_eq!(v["other_installed"], serde_json::json!(["mistral:7b"]));

    // Below 8 GB: ultra-light only, and the configured phi3.5 draws a warning.
    let v = json_of(&env.run_env(&["llm-list", "--json"], &[("DOCDEX_HARDWARE", "ram_gb=6")]));
    assert_eq!(v["tier"], "ultra-light");
    assert_eq!(v["recommended_chat"], "llama3.2:1b");
    assert_eq!(v["recommended_embedding"], "all-minilm");
    assert_eq!(model(&v, "phi3.5:3.8b")["fits"], false);
    assert!(v["notices"].to_string().contains("configured default_model: phi3.5:3.8b is a default model"), "{v}");

    // 32 GB and a GPU: the 70B model is suggested only once it is installed.
    let v = json_of(&env.run_env(&["llm-list", "--json"], &[("DOCDEX_HARDWARE", "ram_gb=32,vram_gb=24")]));
    assert_eq!(v["tier"], "heavy");
    assert_eq!(v["recommended_chat"], "phi3.5:3.8b");
    assert!(v["notices"].to_string().contains("llama3.1:70b"), "{v}");
    let big =
        FakeOllama::start(FakeOllamaOptions { models: vec!["llama3.1:70b".into()], ..Default::default() }).unwrap();
    env.write_config(&llm_config("ollama", &big.url(), "phi3.5:3.8b", "nomic-embed-text"));
    let v = json_of(&env.run_env(&["llm-list", "--json"], &[("DOCDEX_HARDWARE", "ram_gb=32,vram_gb=24")]));
    assert_eq!(v["recommended_chat"], "llama3.1:70b");

    // Human output names the machine and the recommendation.
    let out = env.run_env(&["llm-list"], &[("DOCDEX_HARDWARE", "ram_gb=12")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("12 GB RAM, no GPU (DOCDEX_HARDWARE) -> tier light"), "{text}");
    assert!(text.contains("recommended: chat llama3.2:3b"), "{text}");
}

#[test]
fn llm_list_without_a_server_still_recommends() {
    let env = Env::new();
    env.write_config(&llm_config("ollama", &dead_url(), "phi3.5:3.8b", "nomic-embed-text"));
    let v = json_of(&env.run_env(&["llm-list", "--json"], &[("DOCDEX_HARDWARE", "ram_gb=16")]));
    assert_eq!(v["recommended_chat"], "phi3.5:3.8b");
    assert!(model(&v, "phi3.5:3.8b")["installed"].is_null());
    assert!(v["notices"].to_string().contains("installed models unknown: cannot reach the ollama server"), "{v}");
}

const USER_CONFIG: &str = "# my settings\n[llm]\n# the server\nprovider = \"ollama\"\nbase_url = \"BASE\" # local\ndefault_model = \"phi3.5:3.8b\"\n\n[search]\ndefault_limit = 7 # keep\n";

#[test]
fn llm_setup_pulls_only_with_yes_and_edits_the_config_in_place() {
    let server = FakeOllama::start(FakeOllamaOptions { models: vec![], ..Default::default() }).unwrap();
    let env = Env::new();
    let config = USER_CONFIG.replace("BASE", &server.url());
    env.write_config(&config);

    // Without --yes: nothing is downloaded, the config is untouched, the next step is named.
    let out = env.run_env(&["llm-setup", "--model", "llama3.2:1b", "--json"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let v = json_of(&out);
    assert_eq!(v["server_reachable"], true);
    assert_eq!(v["models"][0]["model"], "llama3.2:1b");
    assert_eq!(v["models"][0]["state"], "missing");
    assert!(v["next_steps"].to_string().contains("docdex llm-setup --model llama3.2:1b --yes"), "{v}");
    assert!(server.requests().iter().all(|(p, _)| p != "/api/pull"));
    assert_eq!(std::fs::read_to_string(env.home().join("config.toml")).unwrap(), config);

    // With --yes: pulled with progress, and only default_model changes in the file.
    let out = env.run_env(&["llm-setup", "--model", "llama3.2:1b", "--yes"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("pulling llama3.2:1b: downloading 50%"), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("llama3.2:1b") && stdout.contains("pulled"), "{stdout}");
    assert_eq!(server.requests().iter().filter(|(p, _)| p == "/api/pull").count(), 1);
    let edited = std::fs::read_to_string(env.home().join("config.toml")).unwrap();
    assert_eq!(edited, config.replace("default_model = \"phi3.5:3.8b\"", "default_model = \"llama3.2:1b\""));

    // An embedding model from the catalog sets embedding_model; already installed: no pull.
    let v = json_of(&env.run_env(&["llm-setup", "--model", "nomic-embed-text", "--yes", "--json"], &[]));
    assert_eq!(v["models"][0]["key"], "embedding_model");
    assert_eq!(v["models"][0]["state"], "pulled");
    let v = json_of(&env.run_env(&["llm-setup", "--model", "nomic-embed-text", "--json"], &[]));
    assert_eq!(v["models"][0]["state"], "installed");
    assert_eq!(v["config_changed"], serde_json::json!([]));
    let edited = std::fs::read_to_string(env.home().join("config.toml")).unwrap();
    assert!(
        edited.contains("default_model = \"llama3.2:1b\"\nembedding_model = \"nomic-embed-text\"\n\n[search]"),
        "{edited}"
    );
    assert!(edited.contains("# my settings") && edited.contains("default_limit = 7 # keep"));
}

#[test]
fn llm_setup_with_no_server_explains_how_to_start_one() {
    let env = Env::new();
    env.write_config(&llm_config("ollama", &dead_url(), "phi3.5:3.8b", "nomic-embed-text"));
    let out = env.run_env(&["llm-setup", "--json"], &[("DOCDEX_HARDWARE", "ram_gb=6"), ("PATH", "/nonexistent")]);
    assert_eq!(out.status.code(), Some(1));
    let v = json_of(&out);
    assert_eq!(v["server_reachable"], false);
    assert!(v["ollama_binary"].is_null());
    // The recommendation for a small machine, not yet checkable.
    assert_eq!(v["models"][0]["model"], "llama3.2:1b");
    assert_eq!(v["models"][0]["state"], "unknown");
    let steps = v["next_steps"].to_string();
    assert!(steps.contains("https://ollama.com/download") && steps.contains("ollama serve"), "{steps}");
}

fn item<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["items"].as_array().unwrap().iter().find(|i| i["name"] == name).unwrap_or_else(|| panic!("no {name} in {v}"))
}

#[test]
fn check_json_reports_each_prerequisite() {
    let server = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    let env = Env::new();
    let bind = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = bind.local_addr().unwrap().to_string();
    env.write_config(&format!(
        "{}\n[server]\nhttp_bind_addr = \"{busy}\"\n",
        llm_config("ollama", &server.url(), "fake-chat", "nomic-embed-text")
    ));
    let out = env.run_env(&["check", "--json"], &[("DOCDEX_HARDWARE", "ram_gb=16")]);
    let v = json_of(&out);
    assert_eq!(out.status.code(), Some(0), "warnings only: {v}");
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["ok"], true);
    for ok in ["config", "state_dir", "locks_dir", "registry", "llm_provider", "llm_server", "chat_model"] {
        assert_eq!(item(&v, ok)["status"], "ok", "{ok}: {v}");
    }
    let embed = item(&v, "embedding_model");
    assert_eq!(embed["status"], "warn");
    assert!(embed["hint"].as_str().unwrap().contains("docdex llm-setup --model nomic-embed-text --yes"));
    assert_eq!(item(&v, "http_bind")["status"], "warn");
    // Every grammar this build carries loads into a parser.
    assert_eq!(item(&v, "symbols")["status"], "ok");
    assert!(item(&v, "symbols")["message"].as_str().unwrap().contains("16 Tree-sitter grammars load: rust,"), "{v}");
    // The browser is launched once: ok where Chromium is installed (CI), a warning where not.
    let browser = item(&v, "browser")["status"].as_str().unwrap().to_string();
    assert!(["ok", "warn"].contains(&browser.as_str()), "{v}");
    assert_eq!(v["warnings"].as_u64().unwrap() as usize, 2 + usize::from(browser == "warn"));

    // Required: the missing model and the busy port fail, and the exit code says so.
    let out = env.run_env(&["check", "--json", "--require-llm", "--require-bind"], &[("DOCDEX_HARDWARE", "ram_gb=16")]);
    assert_eq!(out.status.code(), Some(1));
    let v = json_of(&out);
    assert_eq!(v["ok"], false);
    assert_eq!(item(&v, "embedding_model")["status"], "fail");
    assert_eq!(item(&v, "http_bind")["status"], "fail");
    assert_eq!(v["failures"], 2);
    drop(bind);
}

#[test]
fn check_warns_about_a_dead_server_and_an_oversized_model() {
    let env = Env::new();
    env.write_config(&llm_config("ollama", &dead_url(), "phi3.5:3.8b", "nomic-embed-text"));
    let out = env.run_env(&["check"], &[("DOCDEX_HARDWARE", "ram_gb=6")]);
    assert!(out.status.success(), "a missing model server is not a failure by default");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("warn llm_server") && text.contains("search works without it"), "{text}");
    // Its advice is the hint below it, not "`docdex check` diagnoses the setup": this is it.
    assert!(!text.contains("docdex check"), "{text}");
    assert!(text.contains("skip chat_model"), "{text}");
    assert!(text.contains("warn hardware") && text.contains("phi3.5:3.8b is a default model"), "{text}");
    assert!(text.contains("ready: 0 failed"), "{text}");
    let out = env.run_env(&["check", "--require-llm"], &[("DOCDEX_HARDWARE", "ram_gb=6")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("FAIL llm_server"));
}

/// tour12 F23: a port held by this home's daemon is named from its held `daemon.lock`, not a
/// warning that the address is in use.
#[test]
fn check_names_the_daemon_that_holds_the_port() {
    let env = Env::new();
    let daemon = crate::server_util::Server::start(&env, &["daemon", "--no-watch"], &[]);
    let pid = daemon.child.id();
    env.write_config(&format!(
        "{}\n[server]\nhttp_bind_addr = \"{}\"\n",
        llm_config("ollama", &dead_url(), "m", "e"),
        daemon.addr
    ));
    let out = env.run(&["check"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let says = format!("a docdex daemon (pid {pid}) serves {}", daemon.addr);
    let line = text.lines().find(|l| l.contains("http_bind")).unwrap_or_default();
    assert!(line.starts_with("ok ") && line.ends_with(&says), "{says}: {text}");
    assert!(out.status.success(), "{text}");
    // The server about to bind that address is refused, naming the daemon.
    let v = json_of(&env.run(&["check", "--json", "--require-bind"]));
    assert_eq!(item(&v, "http_bind")["status"], "fail", "{v}");
    assert!(item(&v, "http_bind")["message"].as_str().unwrap().contains(&format!("(pid {pid})")), "{v}");
    // Configured elsewhere: the daemon is information beside a free address.
    env.write_config(&format!(
        "{}\n[server]\nhttp_bind_addr = \"127.0.0.1:0\"\n",
        llm_config("ollama", &dead_url(), "m", "e")
    ));
    let v = json_of(&env.run(&["check", "--json"]));
    assert_eq!(item(&v, "http_bind")["status"], "ok", "{v}");
    assert_eq!(item(&v, "daemon")["status"], "info", "{v}");
    assert!(item(&v, "daemon")["message"].as_str().unwrap().contains(&daemon.addr), "{v}");
}

#[test]
fn check_fails_on_an_exposed_bind_without_a_token() {
    let env = Env::new();
    env.write_config(&format!(
        "{}\n[server]\nhttp_bind_addr = \"0.0.0.0:0\"\n",
        llm_config("ollama", &dead_url(), "m", "e")
    ));
    let v = json_of(&env.run(&["check", "--json"]));
    assert_eq!(item(&v, "http_bind")["status"], "fail");
    assert!(item(&v, "http_bind")["hint"].as_str().unwrap().contains("DOCDEX_AUTH_TOKEN"));
    assert_eq!(v["ok"], false);
}

#[test]
fn check_with_a_repo_reports_its_index_embeddings_and_memory() {
    let server = FakeOllama::start(FakeOllamaOptions::default()).unwrap();
    let env = Env::new();
    let repo = env.repo("r");
    crate::util::sample_repo(&repo);
    env.write_config(&llm_config("ollama", &server.url(), "fake-chat", "fake-embed"));
    let r = repo.to_str().unwrap();
    let v = json_of(&env.run(&["check", "--json", "--repo", r]));
    assert_eq!(item(&v, "repo_index")["status"], "warn", "not indexed yet: {v}");
    assert_eq!(item(&v, "repo_symbols")["status"], "info", "no symbol index yet: {v}");
    env.json(&["index", "--repo", r, "--json"]);
    env.json(&["memory", "store", "--repo", r, "--json", "remember", "this"]);
    let v = json_of(&env.run(&["check", "--json", "--repo", r]));
    assert_eq!(item(&v, "repo_index")["status"], "ok");
    assert_eq!(item(&v, "repo_state")["status"], "ok");
    let emb = item(&v, "repo_embeddings");
    assert_eq!(emb["status"], "ok");
    assert!(emb["message"].as_str().unwrap().contains("from fake-embed (64 dimensions)"), "{emb}");
    assert!(item(&v, "repo_memory")["message"].as_str().unwrap().contains("memory.db readable: 1 memory"));
    let symbols = item(&v, "repo_symbols");
    assert_eq!(symbols["status"], "ok");
    assert!(symbols["message"].as_str().unwrap().contains("symbols in 3 code files"), "{symbols}");

    // The embedding model changed: the repo's vectors are stale, and check says what to run.
    env.write_config(&llm_config("ollama", &server.url(), "fake-chat", "fake-chat"));
    let v = json_of(&env.run(&["check", "--json", "--repo", r]));
    let emb = item(&v, "repo_embeddings");
    assert_eq!(emb["status"], "warn");
    assert!(emb["message"].as_str().unwrap().contains("--reembed"), "{emb}");
}

#[test]
fn check_says_whether_the_history_ranking_has_a_history_to_read() {
    let env = Env::new();
    let repo = env.repo("h");
    crate::util::sample_repo(&repo);
    let r = repo.to_str().unwrap();
    let has_item = |v: &Value| v["items"].as_array().unwrap().iter().any(|i| i["name"] == "repo_history");
    // Off (the default): nothing to say.
    assert!(!has_item(&json_of(&env.run(&["check", "--json", "--repo", r]))));
    env.write_config("[search]\nhistory = true\n");
    let v = json_of(&env.run(&["check", "--json", "--repo", r]));
    let history = item(&v, "repo_history");
    assert_eq!(history["status"], "warn", "{history}");
    assert!(history["message"].as_str().unwrap().contains("no git history"), "{history}");
    assert!(history["hint"].as_str().is_some_and(|f| f.contains("history = false")), "{history}");
    crate::util::git_commit_all(&repo);
    let v = json_of(&env.run(&["check", "--json", "--repo", r]));
    let history = item(&v, "repo_history");
    assert_eq!(history["status"], "ok", "{history}");
    assert!(history["message"].as_str().unwrap().contains("1 commit naming source files"), "{history}");

    // A history git cannot read (the commit HEAD names is gone from the object store): search
    // works without it, the failure is kept for this HEAD, and check names it.
    let head = String::from_utf8(
        std::process::Command::new("git").args(["rev-parse", "HEAD"]).current_dir(&repo).output().unwrap().stdout,
    )
    .unwrap();
    let head = head.trim();
    std::fs::remove_file(repo.join(".git/objects").join(&head[..2]).join(&head[2..])).unwrap();
    std::fs::remove_file(repo.join(".git/index")).ok();
    let v = json_of(&env.run(&["check", "--json", "--repo", r]));
    let history = item(&v, "repo_history");
    assert_eq!(history["status"], "warn", "{history}");
    assert!(history["message"].as_str().unwrap().contains("failed"), "{history}");
    env.json(&["index", "--repo", r, "--json"]);
    let hits = env.json(&["search", "--repo", r, "--json", "session store"]);
    assert_eq!(hits["results"][0]["path"], "src/auth/session.rs", "{hits}");
}
