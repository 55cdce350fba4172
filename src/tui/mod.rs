//! `docdex tui`: the keyboard-first workbench over the embedded engine.
//!
//! The shape (see `docs/TUI.md` and `docs/ARCHITECTURE.md`):
//! - [`runtime`]: the event loop; input and engine results meet on one channel, ticks and
//!   debounce deadlines come from the loop's timer, and frames are drawn at most once per
//!   frame, only when dirty;
//! - [`app`]: state and routing, synchronous and I/O-free (scenario tests drive it);
//! - [`panes`]: one module per pane behind the [`panes::Pane`] trait;
//! - [`widgets`]: drawing pieces over view-models (graph, trace, DAG, markdown, preview);
//! - [`worker`]: engine calls on blocking threads, results back as events;
//! - [`views`]: engine answers (chat trace, DAG, sources) as the panes' view-models;
//! - [`theme`] and [`keymap`]: colours and bindings as TOML data with user overrides;
//! - [`terminal`]: raw mode and its restoration on every way out.

pub mod action;
pub mod app;
pub mod clock;
pub mod datafile;
pub mod editor;
pub mod event;
pub mod highlight;
pub mod jobs;
pub mod keymap;
pub mod layout;
pub mod pane_id;
pub mod panes;
pub mod runtime;
pub mod terminal;
pub mod theme;
pub mod views;
pub mod widgets;
pub mod worker;

use crate::engine::Engine;
use anyhow::Context;
use app::{App, AppOptions};
use clock::SystemClock;
use event::AppEvent;
use keymap::Keymap;
use ratatui::backend::CrosstermBackend;
use runtime::{Exit, Host, InputControl};
use std::io::Stdout;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use theme::Theme;
use tokio::sync::mpsc;

/// How to start the workbench.
#[derive(Debug, Clone)]
pub struct TuiOptions {
    /// The repository to open.
    pub repo: PathBuf,
    /// Said at start (why the workbench opened on another repository than asked).
    pub notice: Option<String>,
}

/// Theme, keymap and the problems met loading them, from config and `DOCDEX_HOME`.
pub fn load_look(engine: &Engine) -> (Theme, Keymap, Vec<String>) {
    let cfg = &engine.config().tui;
    let home = &engine.paths().home;
    let theme = Theme::load(&cfg.theme, &home.join("themes"), theme::no_color_requested());
    let keymap = Keymap::load(&cfg.keymap, &home.join("keymaps"));
    let mut problems: Vec<String> = engine.config_warnings().to_vec();
    problems.extend(theme.problems);
    problems.extend(keymap.problems);
    (theme.theme, keymap.keymap, problems)
}

/// Options for an [`App`] over an engine and repository.
pub fn app_options(engine: &Engine, repo: PathBuf) -> AppOptions {
    let (theme, keymap, problems) = load_look(engine);
    AppOptions {
        repo,
        theme,
        keymap,
        problems,
        debounce: Duration::from_millis(engine.config().tui.search_debounce_ms),
        provider: app::configured_provider(&engine.config().llm),
        home: engine.paths().home.clone(),
    }
}

/// Runs the workbench on the terminal until the user quits. The terminal is restored on every
/// exit path; logs go to `<state>/logs/tui.log`, never to the screen.
pub fn run(engine: Engine, opts: TuiOptions) -> anyhow::Result<()> {
    let repo = engine.resolve_repo(&opts.repo)?.root;
    let log = init_file_logging(&engine);
    tracing::info!(repo = %repo.display(), "docdex tui starting");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("docdex-tui")
        .enable_all()
        .build()
        .context("starting the TUI runtime")?;
    let result = rt.block_on(run_async(engine, repo, opts.notice));
    rt.shutdown_timeout(Duration::from_secs(2));
    if let Err(e) = &result {
        tracing::error!("docdex tui failed: {e:#}");
        if let Some(path) = log {
            return result.with_context(|| format!("the TUI log is {}", path.display()));
        }
    }
    result
}

async fn run_async(engine: Engine, repo: PathBuf, notice: Option<String>) -> anyhow::Result<()> {
    highlight::warm_up();
    let mouse = engine.config().tui.mouse;
    let editor = engine.config().tui.editor.clone();
    let mut options = app_options(&engine, repo);
    options.problems.extend(notice);
    let (tx, mut rx) = mpsc::unbounded_channel::<AppEvent>();
    let (guard, mut terminal) = terminal::TerminalGuard::enter(mouse).context("setting up the terminal")?;
    let input = runtime::spawn_input(tx.clone());
    let mut worker = worker::Worker::new(engine, tx);
    let mut app = App::new(options, Arc::new(SystemClock));
    let mut host = TerminalHost { input, editor };
    let exit =
        runtime::run_loop(&mut terminal, &mut app, &mut rx, &mut worker, &mut host, &mut (), termination()).await;
    worker.shutdown().await;
    drop(guard);
    match exit {
        Ok(Exit::Signal) => tracing::info!("stopped by a signal"),
        Ok(_) => tracing::info!("quit"),
        Err(e) => return Err(anyhow::Error::new(e).context("drawing on the terminal")),
    }
    Ok(())
}

/// Resolves on SIGTERM, SIGHUP or SIGINT (Ctrl-C normally arrives as a key in raw mode).
async fn termination() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut term), Ok(mut hup), Ok(mut int)) =
            (signal(SignalKind::terminate()), signal(SignalKind::hangup()), signal(SignalKind::interrupt()))
        else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = hup.recv() => {}
            _ = int.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Performs effects on the real terminal.
struct TerminalHost {
    input: mpsc::UnboundedSender<InputControl>,
    editor: String,
}

impl Host<CrosstermBackend<Stdout>> for TerminalHost {
    async fn suspend(&mut self, term: &mut terminal::Tty) -> Result<(), String> {
        let (ack_tx, ack_rx) = tokio::sync::oneshot::channel();
        let _ = self.input.send(InputControl::Pause(ack_tx));
        let _ = ack_rx.await;
        terminal::suspend();
        #[cfg(unix)]
        // SAFETY: raise only sends a signal to this process; SIGTSTP's default action stops it
        // until the shell sends SIGCONT (`fg`), then raise returns.
        unsafe {
            libc::raise(libc::SIGTSTP);
        }
        let resumed = terminal::resume(term);
        let _ = self.input.send(InputControl::Resume);
        resumed.map_err(|e| format!("could not restore the screen after ctrl+z: {e}"))
    }

    async fn open_editor(&mut self, term: &mut terminal::Tty, path: &Path, line: u32) -> Result<String, String> {
        let visual = std::env::var("VISUAL").ok();
        let editor_env = std::env::var("EDITOR").ok();
        let argv = editor::command(&self.editor, visual.as_deref(), editor_env.as_deref(), path, line);
        let (ack_tx, ack_rx) = tokio::sync::oneshot::channel();
        let _ = self.input.send(InputControl::Pause(ack_tx));
        let _ = ack_rx.await;
        terminal::suspend();
        let status = tokio::process::Command::new(&argv[0]).args(&argv[1..]).status().await;
        let resumed = terminal::resume(term);
        let _ = self.input.send(InputControl::Resume);
        if let Err(e) = resumed {
            return Err(format!("could not restore the screen after the editor: {e}"));
        }
        match status {
            Ok(s) if s.success() => Ok(format!("edited {}:{line}", path.display())),
            Ok(s) => Err(format!("{} exited with {s}", argv[0])),
            Err(e) => Err(format!("cannot run {:?}: {e}. Set [tui] editor in config.toml or $EDITOR", argv[0])),
        }
    }
}

/// Sends logs to `<state>/logs/tui.log` (the screen belongs to the UI); returns the path.
fn init_file_logging(engine: &Engine) -> Option<PathBuf> {
    let dir = engine.paths().logs();
    std::fs::create_dir_all(&dir).ok()?;
    let path = dir.join("tui.log");
    let mut open = std::fs::OpenOptions::new();
    open.create(true).append(true);
    // Owner-only, as every file in the home: the log can quote queries and file text.
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
    let file = open.open(&path).ok()?;
    let default = engine.config().core.log_level.clone();
    let filter = tracing_subscriber::EnvFilter::try_from_env("DOCDEX_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let installed = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::sync::Mutex::new(file))
        .with_ansi(false)
        .with_target(false)
        .try_init()
        .is_ok();
    installed.then_some(path)
}
