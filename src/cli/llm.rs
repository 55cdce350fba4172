//! `docdex llm-list` and `docdex llm-setup`: model recommendations for this
//! machine and guided setup of the model server, printed for humans or as JSON.

use super::output::{visible, Out};
use crate::engine::protocol::LlmListResponse;
use crate::engine::protocol::PullProgress;
use crate::engine::protocol::{LlmSetupReport, LlmSetupRequest};
use crate::engine::Engine;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Mutex;

/// `docdex llm-setup` flags.
#[derive(Debug, clap::Args)]
pub struct SetupArgs {
    /// Model to use for chat (an embedding model sets the embedder); default: the recommendation.
    #[arg(long)]
    model: Option<String>,
    /// Embedding model to use.
    #[arg(long)]
    embedding_model: Option<String>,
    /// Download missing models (nothing is downloaded without it).
    #[arg(long, short = 'y')]
    yes: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `docdex llm-list`.
pub fn list(engine: &Engine, out: &Out, json: bool) -> anyhow::Result<ExitCode> {
    let resp = engine.llm_list()?;
    if json {
        out.json(&resp)?;
    } else {
        print_list(out, &resp);
    }
    Ok(ExitCode::SUCCESS)
}

fn hardware_line(resp: &LlmListResponse) -> String {
    let hw = &resp.hardware;
    let gpu = match hw.gpus.first() {
        Some(g) => format!("{} ({} GB VRAM)", g.name, g.vram_gb),
        None => "no GPU".into(),
    };
    format!("machine: {} GB RAM, {gpu} ({}) -> tier {}", hw.ram_gb, hw.source, resp.tier)
}

fn print_list(out: &Out, resp: &LlmListResponse) {
    out.line(&hardware_line(resp));
    out.line(&format!("server:  {} at {}", resp.provider, resp.base_url));
    out.line("");
    out.line(&format!("  {:<20} {:<10} {:<12} {:>8}  {:<4}  {}", "MODEL", "KIND", "TIER", "SIZE", "FITS", "INSTALLED"));
    for m in &resp.models {
        let mark = if m.recommended { "*" } else { " " };
        let installed = match m.installed {
            Some(true) => "yes",
            Some(false) => "no",
            None => "?",
        };
        out.line(&format!(
            "{mark} {:<20} {:<10} {:<12} {:>5.2} GB  {:<4}  {installed}",
            m.model.name,
            m.model.kind,
            m.model.tier,
            m.model.size_gb,
            if m.fits { "yes" } else { "no" },
        ));
    }
    if !resp.other_installed.is_empty() {
        out.line(&format!("also installed: {}", visible(&resp.other_installed.join(", "))));
    }
    out.line("");
    out.line(&format!("recommended: chat {}, embedding {}", resp.recommended_chat, resp.recommended_embedding));
    out.line(&format!("configured:  chat {}, embedding {}", resp.configured_chat, resp.configured_embedding));
    for n in &resp.notices {
        out.note(&format!("note: {}", visible(n)));
    }
}

/// `docdex llm-setup`: exit 1 unless the server answered and every chosen model is installed.
pub fn setup(engine: &Engine, out: &Out, args: SetupArgs) -> anyhow::Result<ExitCode> {
    let req = LlmSetupRequest { model: args.model, embedding_model: args.embedding_model, yes: args.yes };
    let bar = PullBar::new(!args.json);
    let report = engine.llm_setup(&req, &|model, p| bar.update(model, p))?;
    bar.finish();
    if args.json {
        out.json(&report)?;
    } else {
        print_setup(out, &report);
    }
    Ok(if report.ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn print_setup(out: &Out, r: &LlmSetupReport) {
    if r.provider == "ollama" {
        match &r.ollama_binary {
            Some(p) => out.line(&format!("ollama binary: {}", p.display())),
            None => out.line("ollama binary: not found on PATH"),
        }
    }
    match (&r.server_error, r.server_reachable) {
        (_, true) => out.line(&format!(
            "server: {} at {} answered; installed: {}",
            r.provider,
            r.base_url,
            if r.installed.is_empty() { "none".to_string() } else { visible(&r.installed.join(", ")) }
        )),
        (Some(e), false) => out.line(&format!("server: {}", visible(e))),
        (None, false) => out.line(&format!("server: {} at {} did not answer", r.provider, r.base_url)),
    }
    for m in &r.models {
        let detail = m.error.as_deref().map(|e| format!(": {}", visible(e))).unwrap_or_default();
        out.line(&format!("{:<16} {:<24} {}{detail}", m.key, m.model, m.state));
    }
    if r.config_changed.is_empty() {
        out.line(&format!("config: {} unchanged", r.config_path.display()));
    } else {
        out.line(&format!("config: set [llm] {} in {}", r.config_changed.join(", "), r.config_path.display()));
    }
    for s in &r.next_steps {
        out.line(&format!("next: {s}"));
    }
}

/// Pull progress on stderr: a bar on a terminal, a line per status change otherwise.
struct PullBar {
    enabled: bool,
    bar: Option<ProgressBar>,
    last: Mutex<String>,
}

impl PullBar {
    fn new(enabled: bool) -> PullBar {
        let bar = (enabled && std::io::stderr().is_terminal()).then(|| {
            let b = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr_with_hz(10));
            let style = ProgressStyle::with_template("{msg} [{bar:30.cyan/blue}] {bytes}/{total_bytes}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
            b.set_style(style);
            b
        });
        PullBar { enabled, bar, last: Mutex::new(String::new()) }
    }

    fn update(&self, model: &str, p: &PullProgress) {
        if !self.enabled {
            return;
        }
        if let Some(b) = &self.bar {
            b.set_message(visible(&format!("{model}: {}", p.status)));
            b.set_length(p.total.unwrap_or(0).max(1));
            b.set_position(p.completed.unwrap_or(0));
            return;
        }
        // The server's words: shown, not obeyed.
        let line = visible(&match (p.completed, p.total) {
            (Some(c), Some(t)) if t > 0 => format!("pulling {model}: {} {}%", p.status, c * 100 / t),
            _ => format!("pulling {model}: {}", p.status),
        });
        if let Ok(mut last) = self.last.lock() {
            if *last != line {
                eline!("{line}");
                *last = line;
            }
        }
    }

    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
