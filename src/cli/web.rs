//! `docdex web-search`, `web-fetch`, `web-rag` and `browser list|setup|install`: each one
//! engine call, printed for humans or as `--json`.

use super::output::{count, visible, visible_text, Out};
use super::RepoArg;
use crate::engine::protocol::{browser_install_help, DiscoveryStatus, WebFetchRequest, WebSearchRequest};
use crate::engine::Engine;
use clap::Subcommand;
use std::path::PathBuf;
use std::process::ExitCode;

/// `docdex web-search`.
#[derive(Debug, clap::Args)]
pub struct WebSearchArgs {
    /// What to search the web for.
    query: Vec<String>,
    /// Results at most (default `[search] max_web_hits`).
    #[arg(long, short = 'n', value_parser = super::count_up_to::<30>)]
    limit: Option<usize>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `docdex web-fetch`.
#[derive(Debug, clap::Args)]
pub struct WebFetchArgs {
    /// The page (http or https). A URL given here may point at this machine or a private
    /// network; URLs docdex discovers may not unless `[web] allow_hosts` names their host.
    url: String,
    /// Fetch again even when the cache has it.
    #[arg(long)]
    refresh: bool,
    /// Print JSON (the page with its Markdown and metadata).
    #[arg(long)]
    pub json: bool,
}

/// `docdex web-rag`.
#[derive(Debug, clap::Args)]
pub struct WebRagArgs {
    #[command(flatten)]
    repo: RepoArg,
    /// The question.
    query: Vec<String>,
    /// Print the waterfall trace after the answer.
    #[arg(long)]
    trace: bool,
    /// The chat model (default `[llm] default_model`).
    #[arg(long)]
    model: Option<String>,
    /// Print the whole response as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `docdex browser`.
#[derive(Debug, Subcommand)]
pub enum BrowserCommand {
    /// Browsers found (the one the web tier uses is marked), running ones, leftovers stopped.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Launch a browser once and save it as `[web.scraper] chrome_binary_path`.
    Setup {
        /// The browser executable (default: the first one found).
        #[arg(long)]
        path: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// How to install a browser on this system (docdex never downloads one).
    Install,
}

impl BrowserCommand {
    /// True when `--json` was given.
    pub fn json(&self) -> bool {
        matches!(self, BrowserCommand::List { json: true } | BrowserCommand::Setup { json: true, .. })
    }
}

/// Runs `docdex web-search`: exit 1 when discovery was blocked or failed.
pub fn search(engine: &Engine, out: &Out, args: WebSearchArgs) -> anyhow::Result<ExitCode> {
    let req = WebSearchRequest { query: args.query.join(" "), limit: args.limit };
    let resp = engine.web_search(&req)?;
    if args.json {
        out.json(&resp)?;
    } else {
        for r in &resp.results {
            // Titles, snippets and pages are the web's text: shown, never obeyed by the terminal.
            out.line(&format!("{:>2}. {}", r.rank, out.paint("1", &visible(&r.title))));
            out.line(&format!("    {}", out.paint("36", &r.url)));
            if !r.snippet.is_empty() {
                out.line(&format!("    {}", visible(&r.snippet)));
            }
        }
        let how = if resp.cached { "from the cache".to_string() } else { format!("via the {} endpoint", resp.source) };
        let waited = if resp.waited_ms > 0 {
            format!(", waited {} ms for the rate limit", resp.waited_ms)
        } else {
            String::new()
        };
        let status = match resp.status {
            DiscoveryStatus::Ok => {
                format!("{} {how} in {:.0} ms{waited}", count(resp.results.len(), "result"), resp.ms)
            }
            DiscoveryStatus::Blocked => "blocked: the search endpoint refused the query (no results are known)".into(),
            DiscoveryStatus::Failed => "failed: the search endpoint could not be used".into(),
        };
        out.note(&status);
        if resp.filtered > 0 {
            out.note(&format!(
                "{} left out by [web] blocklist / the private-address rule",
                count(resp.filtered, "result")
            ));
        }
        for n in &resp.notes {
            out.note(&visible(n));
        }
    }
    Ok(if resp.status == DiscoveryStatus::Ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// Runs `docdex web-fetch`.
pub fn fetch(engine: &Engine, out: &Out, args: WebFetchArgs) -> anyhow::Result<ExitCode> {
    let req = WebFetchRequest { url: args.url, refresh: args.refresh, explicit: true };
    let resp = engine.web_fetch(&req)?;
    if args.json {
        out.json(&resp)?;
    } else {
        let p = &resp.page;
        out.line(&format!("# {}", visible(&p.title)));
        out.line(&out.paint("2", &format!("<{}>", p.final_url)));
        out.line("");
        out.line(&visible_text(&p.markdown));
        let how = if resp.cached {
            "from the cache".to_string()
        } else {
            format!(
                "via {}",
                serde_json::to_value(p.via).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
            )
        };
        out.note(&format!(
            "{} bytes of HTML, {} of Markdown, {how} in {:.0} ms{}",
            p.html_bytes,
            p.markdown.len(),
            resp.ms,
            if resp.waited_ms > 0 {
                format!(" (waited {} ms for the per-domain delay)", resp.waited_ms)
            } else {
                String::new()
            }
        ));
        for n in &resp.notes {
            out.note(&visible(n));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `docdex web-rag`: a chat turn with the web tier forced.
pub fn rag(engine: &Engine, out: &Out, args: WebRagArgs) -> anyhow::Result<ExitCode> {
    let chat = super::chat::ChatArgs::web_forced(args.repo, args.query.join(" "), args.trace, args.model, args.json);
    super::chat::run(engine, out, chat)
}

/// Runs `docdex browser ...`.
pub fn browser(engine: &Engine, out: &Out, cmd: BrowserCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        BrowserCommand::List { json } => {
            let list = engine.browser_list();
            if json {
                out.json(&list)?;
            } else {
                if list.browsers.is_empty() {
                    out.line("no Chromium or Chrome found");
                }
                for b in &list.browsers {
                    let mark = if b.selected { out.paint("1;32", "*") } else { " ".into() };
                    out.line(&format!(
                        "{mark} {:<9} {}  {}",
                        b.kind,
                        visible(&b.path),
                        out.paint("2", &format!("({})", b.source))
                    ));
                }
                for r in &list.running {
                    out.note(&format!("running: pid {} for docdex pid {} ({})", r.pid, r.owner_pid, r.binary));
                }
                for r in &list.reaped {
                    out.note(&format!(
                        "stopped {} browser processes left by docdex pid {} (it was killed)",
                        r.killed, r.owner_pid
                    ));
                }
                if let Some(h) = &list.hint {
                    out.note(h);
                }
            }
            Ok(if list.browsers.is_empty() { ExitCode::from(1) } else { ExitCode::SUCCESS })
        }
        BrowserCommand::Setup { path, json } => {
            let r = engine.browser_setup(path.as_deref())?;
            if json {
                out.json(&r)?;
            } else {
                out.line(&visible(&format!("{} ({}, {})", r.path, r.kind, r.version)));
                let what = if r.changed.is_empty() {
                    "already set in".to_string()
                } else {
                    format!("saved {} in", r.changed.join(", "))
                };
                out.note(&format!("{what} {}", r.config_path));
            }
            Ok(ExitCode::SUCCESS)
        }
        BrowserCommand::Install => {
            out.line(&browser_install_help());
            let list = engine.browser_list();
            if let Some(b) = list.browsers.iter().find(|b| b.selected) {
                out.note(&format!("already found: {} ({})", b.path, b.kind));
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
