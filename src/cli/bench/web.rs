//! `docdex bench-web`: the web tier's figures against a loopback fixture site (a
//! DuckDuckGo-like results page and documentation pages on 127.0.0.1 and 127.0.0.2), under a
//! temporary `DOCDEX_HOME`: browser start time; cold and warm (cache hit) page fetches through
//! headless Chromium and through plain HTTP; and the latency Tier 2 adds to a chat turn, on a
//! cache hit and on a miss. Waits imposed by the rate limits are reported apart and left out of
//! the fetch times. The browser is the one the user's `[web.scraper]` names, started with its
//! settings (binary, kind, headless, timeouts): a bench of another browser would not say what
//! the user gets, and a slow disk needs the user's longer `launch_timeout_secs` here too.

use super::machine::{machine_info, today_utc};
use crate::cli::output::Out;
use crate::config::{Config, ScraperConfig};
use crate::engine::protocol::{WebFetchRequest, WebResearchRequest};
use crate::engine::Engine;
use anyhow::Context;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Arguments of `docdex bench-web`.
#[derive(Debug, clap::Args)]
pub struct BenchWebArgs {
    /// Runs per measurement.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Serves the fixture site on `ip` until the process ends; returns its base URL.
fn fixture(ip: &str, peer: String) -> anyhow::Result<String> {
    let l = TcpListener::bind(format!("{ip}:0")).with_context(|| format!("binding {ip}"))?;
    let base = format!("http://{}", l.local_addr()?);
    let me = base.clone();
    std::thread::spawn(move || {
        for conn in l.incoming().flatten() {
            let (me, peer) = (me.clone(), peer.clone());
            std::thread::spawn(move || {
                let mut conn = conn;
                let mut buf = [0u8; 8192];
                let n = conn.read(&mut buf).unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).into_owned();
                let target = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                let body = if target.starts_with("/html/") {
                    let q = target.split_once("q=").map(|(_, q)| q).unwrap_or("x");
                    let link = |b: &str, p: &str| {
                        let u: String =
                            url::form_urlencoded::byte_serialize(format!("{b}/page/{q}-{p}").as_bytes()).collect();
                        format!(
                            r#"<div class="result"><a class="result__a" href="//duckduckgo.com/l/?uddg={u}">Widgets {p}</a><a class="result__snippet">knobs</a></div>"#
                        )
                    };
                    format!("<html><body>{}{}</body></html>", link(&me, "a"), link(&peer, "b"))
                } else {
                    page()
                };
                let _ = write!(
                    conn,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    Ok(base)
}

/// A documentation page of about 20 KB with navigation, ads and a footer around the article.
fn page() -> String {
    let para = "<p>Widgets are configured through the frobnicate option, which takes a list of knob names. \
                Each knob maps to a handler run when the widget renders; reset_widget restores the defaults.</p>";
    format!(
        "<!doctype html><html><head><title>Widgets guide</title></head><body><nav>{}</nav><div class=\"sidebar ad\">Buy now</div>\
         <article><h1>Widgets</h1>{}</article><footer>Copyright</footer></body></html>",
        "<a href=\"/x\">link</a> ".repeat(60),
        para.repeat(80)
    )
}

fn stats(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() as f64 - 1.0) * q).round() as usize];
    (at(0.5), at(0.95), v[0])
}

fn engine_at(home: &Path, ddg: &str, scraper: &ScraperConfig, engine_kind: &str) -> anyhow::Result<Engine> {
    let mut c = Config::default();
    c.web.ddg_base_url = format!("{ddg}/html/");
    c.web.allow_hosts = vec!["127.0.0.1".into(), "127.0.0.2".into()];
    c.web.scraper = ScraperConfig { engine: engine_kind.into(), ..scraper.clone() };
    Ok(Engine::with_config(home, c, home.join("config.toml"), Vec::new())?)
}

/// Runs the measurements and prints them: for each scraper engine (Chromium, then plain
/// HTTP) on a scratch home, browser start (Chromium only), page fetches and Tier 2. `scraper`
/// is the user's `[web.scraper]`: its browser and timeouts are the ones measured.
pub fn run(out: &Out, args: BenchWebArgs, scraper: &ScraperConfig) -> anyhow::Result<()> {
    let runs = args.runs.max(2);
    let scratch: PathBuf = std::env::temp_dir().join(format!("docdex-bench-web-{}", std::process::id()));
    // Pages only on 127.0.0.2, so a research run's two pages are on two hosts (no per-domain wait).
    let peer = pages_only("127.0.0.2")?;
    let site = fixture("127.0.0.1", peer)?;
    let mut figures = Figures::default();
    for kind in ["chromium", "http"] {
        let engine = engine_at(&scratch.join(kind), &site, scraper, kind)?;
        if kind == "chromium" {
            measure_browser_start(&engine, runs, &mut figures)?;
        }
        measure_fetches(&engine, &site, kind, runs, &mut figures)?;
        measure_tier2(&engine, kind, runs, &mut figures)?;
    }
    let _ = std::fs::remove_dir_all(&scratch);
    print_figures(out, figures, args.json)
}

/// The report: a table row per measurement and the same figures as JSON, in the order taken.
#[derive(Default)]
struct Figures {
    rows: Vec<(String, String)>,
    json: serde_json::Map<String, serde_json::Value>,
}

impl Figures {
    fn row(&mut self, measurement: impl Into<String>, figure: String) {
        self.rows.push((measurement.into(), figure));
    }
}

/// Browser start, spawn to DevTools connected, `runs` times.
fn measure_browser_start(engine: &Engine, runs: usize, figures: &mut Figures) -> anyhow::Result<()> {
    let mut starts = Vec::new();
    for _ in 0..runs {
        starts.push(engine.browser_probe(None).context("launching the browser")?.start_ms);
    }
    let (p50, p95, min) = stats(&mut starts);
    figures.row("browser start (spawn to DevTools connected)", format!("p50 {p50:.0} ms, p95 {p95:.0}, min {min:.0}"));
    figures.json.insert("browser_start_ms".into(), serde_json::json!({"p50": p50, "p95": p95, "min": min}));
    Ok(())
}

/// A new page fetched cold `runs` times (the first apart: it may start the browser, and rate
/// limit waits left out), each then fetched warm from the cache three times.
fn measure_fetches(engine: &Engine, site: &str, kind: &str, runs: usize, figures: &mut Figures) -> anyhow::Result<()> {
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    let mut first = None;
    for i in 0..runs {
        let url = format!("{site}/page/cold-{i}");
        let req = WebFetchRequest { url: url.clone(), refresh: true, explicit: true };
        let r = engine.web_fetch(&req).context("cold fetch")?;
        let ms = r.ms - r.waited_ms as f64;
        if i == 0 {
            first = Some(ms);
        } else {
            cold.push(ms);
        }
        for _ in 0..3 {
            let w = engine.web_fetch(&WebFetchRequest { url: url.clone(), refresh: false, explicit: true })?;
            warm.push(w.ms);
        }
    }
    let (c50, c95, cmin) = stats(&mut cold);
    let (w50, w95, _) = stats(&mut warm);
    figures.row(format!("{kind}: first fetch (incl. browser start)"), format!("{:.0} ms", first.unwrap_or(0.0)));
    figures.row(format!("{kind}: cold fetch, 20 KB page"), format!("p50 {c50:.1} ms, p95 {c95:.1}, min {cmin:.1}"));
    figures.row(format!("{kind}: warm fetch (cache hit)"), format!("p50 {w50:.3} ms, p95 {w95:.3}"));
    figures.json.insert(
        format!("{kind}_fetch"),
        serde_json::json!({"first": first, "cold_p50": c50, "cold_p95": c95, "warm_p50": w50, "warm_p95": w95}),
    );
    Ok(())
}

/// The latency Tier 2 adds to a chat turn, on a miss and on a cache hit.
fn measure_tier2(engine: &Engine, kind: &str, runs: usize, figures: &mut Figures) -> anyhow::Result<()> {
    let (m50, m95, wa50) = tier2_misses(engine, kind, runs)?;
    figures.row(
        format!("{kind}: Tier 2 on a miss (discovery + 2 pages)"),
        format!("p50 {m50:.0} ms, p95 {m95:.0} (plus {wa50:.0} ms waiting for the 2 s discovery spacing)"),
    );
    let (h50, h95) = tier2_hits(engine, kind, runs)?;
    figures.row(format!("{kind}: Tier 2 on a cache hit (target < 5 ms)"), format!("p50 {h50:.2} ms, p95 {h95:.2}"));
    figures.json.insert(
        format!("{kind}_tier2"),
        serde_json::json!({"miss_p50": m50, "miss_p95": m95, "hit_p50": h50, "hit_p95": h95}),
    );
    Ok(())
}

/// Tier 2 on a miss: a new question each run (discovery and both pages uncached). Returns the
/// p50 and p95 without rate-limit waits, and the p50 of those waits.
fn tier2_misses(engine: &Engine, kind: &str, runs: usize) -> anyhow::Result<(f64, f64, f64)> {
    let mut miss = Vec::new();
    let mut waited = Vec::new();
    for i in 0..runs {
        let r = engine
            .web_research(&WebResearchRequest { query: format!("{kind} widget knobs {i}"), ..Default::default() })?;
        let w = r.trace.discovery_waited_ms + r.trace.pages.iter().map(|p| p.waited_ms).sum::<u64>();
        waited.push(w as f64);
        miss.push(r.trace.ms - w as f64);
    }
    let (m50, m95, _) = stats(&mut miss);
    let (wa50, _, _) = stats(&mut waited);
    Ok((m50, m95, wa50))
}

/// Tier 2 on a hit: the first miss's question again, `runs` x 10 times, timed whole. Returns
/// p50 and p95; a run that was not answered from the cache fails the bench.
fn tier2_hits(engine: &Engine, kind: &str, runs: usize) -> anyhow::Result<(f64, f64)> {
    let q = WebResearchRequest { query: format!("{kind} widget knobs 0"), ..Default::default() };
    let mut hit = Vec::new();
    for _ in 0..runs * 10 {
        let t = Instant::now();
        let r = engine.web_research(&q)?;
        hit.push(t.elapsed().as_secs_f64() * 1e3);
        anyhow::ensure!(r.trace.discovery_source == "cache", "expected a cache hit");
    }
    let (h50, h95, _) = stats(&mut hit);
    Ok((h50, h95))
}

/// The figures as JSON with the machine, date and load average, or as a machine line and a
/// Markdown table.
fn print_figures(out: &Out, figures: Figures, json: bool) -> anyhow::Result<()> {
    let m = machine_info();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    if json {
        let mut json = figures.json;
        json.insert("machine".into(), serde_json::to_value(&m)?);
        json.insert("date".into(), today_utc().into());
        json.insert("loadavg".into(), load.trim().into());
        out.json(&serde_json::Value::Object(json))?;
        return Ok(());
    }
    out.line(&format!("{} ({} cores, {:.0} GiB), {}, load {}", m.cpu, m.cores, m.ram_gib, today_utc(), load.trim()));
    out.line("| measurement | figure |");
    out.line("| --- | --- |");
    for (k, v) in figures.rows {
        out.line(&format!("| {k} | {v} |"));
    }
    Ok(())
}

/// A server on `ip` that answers every request with [`page`]; returns its base URL.
fn pages_only(ip: &str) -> anyhow::Result<String> {
    let l = TcpListener::bind(format!("{ip}:0")).with_context(|| format!("binding {ip}"))?;
    let base = format!("http://{}", l.local_addr()?);
    std::thread::spawn(move || {
        for conn in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut conn = conn;
                let mut buf = [0u8; 8192];
                let _ = conn.read(&mut buf);
                let body = page();
                let _ = write!(
                    conn,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    Ok(base)
}
