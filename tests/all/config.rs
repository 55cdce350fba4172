//! Config file creation, validation, environment overrides and state-dir errors.

use crate::util::Env;
use docdex::config::Config;
use std::path::Path;

#[test]
fn first_run_creates_config_with_every_section_and_default() {
    let env = Env::new();
    let _engine = env.engine();
    let text = std::fs::read_to_string(env.home().join("config.toml")).expect("config created");
    for section in ["[core]", "[llm]", "[search]", "[web]", "[web.scraper]", "[memory]", "[server]", "[index]"] {
        assert!(text.contains(section), "missing {section} in:\n{text}");
    }
    assert!(text.contains("http_bind_addr = \"127.0.0.1:3210\""));
    assert!(text.contains("web_trigger_threshold = 0.7"));
    assert!(text.contains("provider = \"ollama\""));
    assert!(text.contains("max_file_size_bytes = 10485760"));
    let (parsed, warnings) = Config::parse(&text, Path::new("config.toml")).expect("parse defaults");
    assert_eq!(parsed, Config::default());
    assert!(warnings.is_empty(), "{warnings:?}");
    for dir in ["state/repos", "state/cache/web", "state/cache/libs", "state/locks", "state/logs"] {
        assert!(env.home().join(dir).is_dir(), "{dir} not created");
    }
}

#[test]
fn unknown_key_warns_and_bad_value_names_key_and_file() {
    let (_, warnings) =
        Config::parse("[search]\nweb_trigger_treshold = 0.5\n[bogus]\nx = 1\n", Path::new("/h/config.toml"))
            .expect("parses");
    assert!(
        warnings.iter().any(|w| w.contains("search.web_trigger_treshold") && w.contains("/h/config.toml")),
        "{warnings:?}"
    );
    assert!(warnings.iter().any(|w| w.contains("`bogus`")), "{warnings:?}");

    let err = Config::parse("[search]\nweb_trigger_threshold = \"high\"\n", Path::new("/h/config.toml"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("/h/config.toml") && err.contains("web_trigger_threshold"), "{err}");

    let env = Env::new();
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(env.home().join("config.toml"), "[search]\nweb_trigger_threshold = 3.0\n").unwrap();
    let out = env.run(&["repo", "list"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("search.web_trigger_threshold") && stderr.contains("config.toml"), "{stderr}");
}

/// `[tests] timeout_secs = 0` was made a 1-second timeout in silence (the CLI and MCP refuse
/// 0): now an error naming the file, the key, the range and that 0 is not "no limit"; the
/// edges of the range load.
#[test]
fn a_zero_test_timeout_is_refused_naming_file_key_and_range() {
    let path = Path::new("/h/config.toml");
    let err = Config::parse_validated("[tests]\ntimeout_secs = 0\n", path).unwrap_err().to_string();
    for want in ["/h/config.toml", "tests.timeout_secs", "between 1 and 604800", "got 0", "no limit"] {
        assert!(err.contains(want), "{want:?} missing from: {err}");
    }
    let err = Config::parse_validated("[search]\nmax_web_hits = 0\n", path).unwrap_err().to_string();
    assert!(err.contains("search.max_web_hits") && err.contains("[web] enabled = false"), "{err}");
    for ok in ["[tests]\ntimeout_secs = 1\n", "[tests]\ntimeout_secs = 604800\n", "[search]\nmax_web_hits = 30\n"] {
        let (c, _) = Config::parse_validated(ok, path).unwrap_or_else(|e| panic!("{ok}: {e}"));
        assert!(c.tests.timeout_secs >= 1, "{ok}");
    }
    let err = Config::parse_validated("[tests]\ntimeout_secs = 604801\n", path).unwrap_err().to_string();
    assert!(err.contains("tests.timeout_secs") && !err.contains("no limit"), "{err}");
}

#[test]
fn search_fusion_is_boost_by_default_and_rrf_or_weighted_on_request() {
    use docdex::config::Fusion;
    assert_eq!(Config::default().search.fusion, Fusion::Boost);
    let (c, _) = Config::parse("[search]\nfusion = \"rrf\"\n", Path::new("/h/config.toml")).expect("parses");
    assert_eq!(c.search.fusion, Fusion::Rrf);
    let (c, warnings) =
        Config::parse("[search]\nfusion = \"weighted\"\n", Path::new("/h/config.toml")).expect("parses");
    assert_eq!(c.search.fusion, Fusion::Weighted);
    assert!(warnings.is_empty(), "{warnings:?}");
    let err = Config::parse("[search]\nfusion = \"average\"\n", Path::new("/h/config.toml")).unwrap_err().to_string();
    assert!(
        err.contains("fusion") && err.contains("boost") && err.contains("rrf") && err.contains("weighted"),
        "{err}"
    );
}

#[test]
fn env_overrides_apply_with_minimums() {
    let mut c = Config::default();
    let vars = |k: &str| match k {
        "DOCDEX_WEB_BLOCKLIST" => Some("example.com, docs.example.org".to_string()),
        "DOCDEX_WEB_MIN_SPACING_MS" => Some("500".to_string()),
        "DOCDEX_WEB_REQUEST_DELAY_MS" => Some("1500".to_string()),
        "DOCDEX_DDG_BASE_URL" => Some("http://127.0.0.1:9/html/".to_string()),
        "DOCDEX_ENABLE_MCP" => Some("0".to_string()),
        "DOCDEX_AUTH_TOKEN" => Some("s3cret".to_string()),
        _ => None,
    };
    let warnings = c.apply_env(vars);
    assert_eq!(c.web.blocklist, ["example.com", "docs.example.org"]);
    assert_eq!(c.web.min_spacing_ms, 2000, "clamped to the 2 s minimum");
    assert!(warnings.iter().any(|w| w.contains("DOCDEX_WEB_MIN_SPACING_MS")));
    assert_eq!(c.web.scraper.request_delay_ms, 1500);
    assert_eq!(c.web.ddg_base_url, "http://127.0.0.1:9/html/");
    assert!(!c.server.enable_mcp);
    assert_eq!(c.server.auth_token, "s3cret");
}

#[test]
fn unknown_provider_warns() {
    let env = Env::new();
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(env.home().join("config.toml"), "[llm]\nprovider = \"mystery\"\n").unwrap();
    let engine = env.engine();
    assert!(engine.config_warnings().iter().any(|w| w.contains("mystery")), "{:?}", engine.config_warnings());
}

#[test]
fn unwritable_state_dir_is_a_clear_error() {
    let env = Env::new();
    // A regular file where the home directory should be: not creatable even for root.
    let blocker = env.dir.path().join("blocker");
    std::fs::write(&blocker, "x").unwrap();
    let home = blocker.join("home");
    let err = match docdex::Engine::open_at(&home) {
        Ok(_) => panic!("opening under a file should fail"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("not writable") && err.contains("DOCDEX_HOME"), "{err}");
}
