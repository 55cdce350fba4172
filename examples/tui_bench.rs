//! TUI benchmark: frame render time for the search pane with 10,000 results and for a
//! 200-node impact graph, and keystroke-to-screen latency while an index runs.
//!
//! `cargo run --release --example tui_bench -- [--files 20000] [--frames 400] [--keys 60]`
//!
//! Frames are drawn through ratatui's crossterm backend into a sink, so the time includes the
//! layout, every widget, the buffer diff and the escape sequences a terminal would receive;
//! each frame changes the selection so the diff is never empty. Frame times are reported as
//! the drawing thread's CPU time (what the work costs) and as wall time (what a busy machine
//! adds by preempting the thread). Keystroke latency runs the
//! real event loop, engine worker and engine: a synthetic corpus is indexed, every file is then
//! changed, and the workbench starts (which re-indexes in the background) while keys are typed
//! one at a time; the latency of a key is from sending it to the frame that shows it drawn.
//! Targets (issue 6): frames under 5 ms; typing never waits for the engine.

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use docdex::testing::tui_samples;
use docdex::tui::app::{App, AppOptions};
use docdex::tui::clock::SystemClock;
use docdex::tui::event::{AppEvent, EngineEvent, ProviderState, ProviderStatus, Request};
use docdex::tui::keymap::Keymap;
use docdex::tui::runtime::{run_loop, FrameObserver, Host};
use docdex::tui::theme::Theme;
use docdex::tui::widgets::preview::PreviewDoc;
use docdex::tui::worker::Worker;
use docdex::Engine;
use ratatui::backend::CrosstermBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::{Terminal, TerminalOptions, Viewport};
use std::io::Sink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Args {
    files: usize,
    frames: usize,
    keys: usize,
}

fn args() -> Args {
    let mut a = Args { files: 20_000, frames: 400, keys: 60 };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < argv.len() {
        let v = argv.get(i + 1).and_then(|v| v.parse().ok());
        match (argv[i].as_str(), v) {
            ("--files", Some(n)) => a.files = n,
            ("--frames", Some(n)) => a.frames = n,
            ("--keys", Some(n)) => a.keys = n,
            (other, _) => {
                eprintln!("unknown or incomplete argument {other}; use --files N --frames N --keys N");
                std::process::exit(2);
            }
        }
        i += 2;
    }
    a
}

/// p50, p95, p99 and max of durations, in milliseconds.
fn stats(mut v: Vec<Duration>) -> String {
    if v.is_empty() {
        return "no samples".into();
    }
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let at = |p: f64| ms(v[((v.len() - 1) as f64 * p).round() as usize]);
    format!(
        "p50 {:.2} / p95 {:.2} / p99 {:.2} / max {:.2} ms (n={})",
        at(0.5),
        at(0.95),
        at(0.99),
        ms(v[v.len() - 1]),
        v.len()
    )
}

fn options(repo: PathBuf) -> AppOptions {
    AppOptions {
        repo,
        theme: Theme::embedded("dark", false).and_then(Result::ok).unwrap_or_else(Theme::plain),
        keymap: Keymap::embedded("default").and_then(Result::ok).unwrap_or_default(),
        problems: Vec::new(),
        debounce: Duration::from_millis(120),
        provider: ProviderStatus {
            provider: "ollama".into(),
            model: "phi3.5:3.8b".into(),
            state: ProviderState::Unchecked,
        },
        home: docdex::config::home_dir(),
    }
}

fn key(code: KeyCode, mods: KeyModifiers) -> AppEvent {
    AppEvent::Input(Event::Key(KeyEvent::new(code, mods)))
}

fn sink_terminal(w: u16, h: u16) -> Terminal<CrosstermBackend<Sink>> {
    let opts = TerminalOptions { viewport: Viewport::Fixed(Rect::new(0, 0, w, h)) };
    match Terminal::with_options(CrosstermBackend::new(std::io::sink()), opts) {
        Ok(t) => t,
        Err(e) => panic!("terminal: {e}"),
    }
}

/// CPU time of the calling thread (immune to the preemption a busy machine adds to wall time).
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Draws `n` frames, calling `step` before each; returns (wall, thread CPU) per draw.
fn time_frames(
    app: &mut App,
    w: u16,
    h: u16,
    n: usize,
    mut step: impl FnMut(&mut App, usize),
) -> (Vec<Duration>, Vec<Duration>) {
    let mut term = sink_terminal(w, h);
    let _ = term.draw(|f| app.render(f));
    let mut wall = Vec::with_capacity(n);
    let mut cpu = Vec::with_capacity(n);
    for i in 0..n {
        step(app, i);
        let (t, c) = (Instant::now(), thread_cpu());
        let _ = term.draw(|f| app.render(f));
        wall.push(t.elapsed());
        cpu.push(thread_cpu().saturating_sub(c));
    }
    (wall, cpu)
}

/// A highlighted preview of real source (this crate's app module).
fn preview_doc() -> PreviewDoc {
    let text = include_str!("../src/tui/app.rs");
    let lines: Vec<&str> = text.lines().collect();
    PreviewDoc {
        path: "src/tui/app.rs".into(),
        first_line: 1,
        total_lines: lines.len() as u32,
        lines: docdex::tui::highlight::highlight("src/tui/app.rs", "rust", &lines),
        focus_line: 120,
        hit: (120, 140),
        matches: vec![(121, 4, 10)],
    }
}

fn search_frames(w: u16, h: u16, n: usize) -> (Vec<Duration>, Vec<Duration>) {
    let mut app = App::new(options(PathBuf::from("/bench/shop")), Arc::new(SystemClock));
    for c in "session".chars() {
        app.handle(key(KeyCode::Char(c), KeyModifiers::NONE));
    }
    std::thread::sleep(Duration::from_millis(130));
    app.handle(AppEvent::Tick);
    let seq =
        app.take_requests()
            .iter()
            .rev()
            .find_map(|r| if let Request::Search { seq, .. } = r { Some(*seq) } else { None });
    let resp = tui_samples::search_response("session", 10_000);
    app.handle(AppEvent::Engine(EngineEvent::SearchResults { seq: seq.unwrap_or(1), more: false, result: Ok(resp) }));
    let pseq =
        app.take_requests().iter().find_map(|r| if let Request::Preview { seq, .. } = r { Some(*seq) } else { None });
    let doc = preview_doc();
    app.handle(AppEvent::Engine(EngineEvent::Preview { seq: pseq.unwrap_or(1), result: Ok(doc.clone()) }));
    time_frames(&mut app, w, h, n, |app, i| {
        // Move through the list (every 50th frame a page), keeping the preview loaded.
        let code = if i % 50 == 49 { KeyCode::PageDown } else { KeyCode::Down };
        app.handle(key(code, KeyModifiers::NONE));
        let pseq =
            app.take_requests()
                .iter()
                .find_map(|r| if let Request::Preview { seq, .. } = r { Some(*seq) } else { None });
        if let Some(seq) = pseq {
            app.handle(AppEvent::Engine(EngineEvent::Preview { seq, result: Ok(doc.clone()) }));
        }
    })
}

fn impact_frames(w: u16, h: u16, n: usize) -> ((Vec<Duration>, Vec<Duration>), usize) {
    let mut app = App::new(options(PathBuf::from("/bench/shop")), Arc::new(SystemClock));
    app.handle(AppEvent::Engine(EngineEvent::SearchResults {
        seq: 0,
        more: false,
        result: Ok(tui_samples::search_response("session", 10)),
    }));
    app.handle(key(KeyCode::Char('g'), KeyModifiers::CONTROL));
    app.handle(key(KeyCode::Char('+'), KeyModifiers::NONE));
    app.handle(key(KeyCode::Char('+'), KeyModifiers::NONE));
    let seq =
        app.take_requests()
            .iter()
            .rev()
            .find_map(|r| if let Request::Impact { seq, .. } = r { Some(*seq) } else { None });
    app.handle(AppEvent::Engine(EngineEvent::Impact {
        seq: seq.unwrap_or(1),
        result: Ok(tui_samples::large_graph(200)),
    }));
    let shown = app.impact().model().map_or(0, |m| m.shown());
    let moves = [
        KeyCode::Left,
        KeyCode::Down,
        KeyCode::Down,
        KeyCode::Right,
        KeyCode::Right,
        KeyCode::Down,
        KeyCode::Left,
        KeyCode::Up,
    ];
    let times = time_frames(&mut app, w, h, n, |app, i| app.handle(key(moves[i % moves.len()], KeyModifiers::NONE)));
    (times, shown)
}

/// Writes `files` source-like files (about 2 KiB each) under `root`; `salt` changes every file.
fn write_corpus(root: &Path, files: usize, salt: &str) -> std::io::Result<u64> {
    let words = [
        "session", "expire", "handler", "request", "config", "parse", "token", "cache", "index", "store", "user",
        "render", "query", "buffer", "stream", "event", "worker", "queue", "retry", "timeout",
    ];
    let mut bytes = 0;
    for i in 0..files {
        let dir = root.join(format!("pkg{:03}", i % 200));
        std::fs::create_dir_all(&dir)?;
        let mut text = format!("// file {i} {salt}\n");
        for f in 0..24 {
            let a = words[(i + f) % words.len()];
            let b = words[(i * 7 + f * 3) % words.len()];
            text.push_str(&format!(
                "pub fn {a}_{b}_{f}(input: &str) -> Result<usize, Error> {{\n    let {b} = {a}_table(input)?;\n    Ok({b}.len() + {f})\n}}\n\n"
            ));
        }
        bytes += text.len() as u64;
        std::fs::write(dir.join(format!("m{i:05}.rs")), text)?;
    }
    Ok(bytes)
}

/// Sees frames: reports when the query box shows a given text.
struct Watch {
    tx: tokio::sync::mpsc::UnboundedSender<(String, bool, Instant)>,
}

impl FrameObserver for Watch {
    fn frame(&mut self, buffer: &Buffer, _took: Duration) {
        let row = |y: u16| (0..buffer.area.width).map(|x| buffer[(x, y)].symbol().to_string()).collect::<String>();
        let query = row(2);
        let status = row(buffer.area.height - 1);
        // While a run is going the status bar shows its phase and a percentage.
        let _ = self.tx.send((query, status.contains('%'), Instant::now()));
    }
}

struct NoEditor;

impl Host<CrosstermBackend<Sink>> for NoEditor {
    async fn open_editor(
        &mut self,
        _t: &mut Terminal<CrosstermBackend<Sink>>,
        _p: &Path,
        _l: u32,
    ) -> Result<String, String> {
        Ok(String::new())
    }
}

struct Latency {
    during_index: Vec<Duration>,
    after_index: Vec<Duration>,
    index_seconds: f64,
    corpus_mb: f64,
}

async fn keystroke_latency(files: usize, keys: usize) -> anyhow::Result<Latency> {
    let tmp = tempfile::tempdir()?;
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home)?;
    std::fs::write(home.join("config.toml"), "[llm]\nbase_url = \"http://127.0.0.1:9\"\n")?;
    let repo = tmp.path().join("corpus");
    write_corpus(&repo, files, "v1")?;
    let engine = Engine::open_at(&home)?;
    let quiet = |_: &docdex::engine::protocol::IndexProgress| {};
    engine.index(&repo, &Default::default(), &quiet)?;
    // Change every file so the workbench's catch-up run re-indexes all of them.
    let bytes = write_corpus(&repo, files, "v2")?;
    let repo = std::fs::canonicalize(&repo)?;
    let mut app = App::new(options(repo), Arc::new(SystemClock));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut worker = Worker::new(engine, tx.clone());
    let mut term = sink_terminal(120, 40);
    let (ftx, mut frames) = tokio::sync::mpsc::unbounded_channel();
    let mut observer = Watch { tx: ftx };
    let started = Instant::now();
    let driver = tokio::spawn(async move {
        let mut during = Vec::new();
        let mut after = Vec::new();
        let mut index_done: Option<Instant> = None;
        // Wait for the index run to start.
        while let Some((_, indexing, _)) = frames.recv().await {
            if indexing {
                break;
            }
        }
        // No spaces: every keystroke changes what the box shows.
        let text = "sessionexpiryhandler";
        let mut typed = String::new();
        for k in 0..keys {
            let c = text.chars().nth(k % text.chars().count()).unwrap_or(' ');
            if k > 0 && k % text.chars().count() == 0 {
                // Start over: clear the box.
                for _ in 0..typed.chars().count() {
                    let _ = tx.send(key(KeyCode::Backspace, KeyModifiers::NONE));
                }
                typed.clear();
                tokio::time::sleep(Duration::from_millis(40)).await;
            }
            typed.push(c);
            let want = format!("› {typed}");

            let sent = Instant::now();
            let _ = tx.send(key(KeyCode::Char(c), KeyModifiers::NONE));
            loop {
                let Some((query, indexing, at)) = frames.recv().await else { break };
                if !indexing && index_done.is_none() {
                    index_done = Some(at);
                }
                let shown = query.trim_end().trim_end_matches('│').trim_end();
                if shown.ends_with(&want) {
                    let lat = at.saturating_duration_since(sent);
                    if indexing {
                        during.push(lat);
                    } else {
                        after.push(lat);
                    }
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(60)).await;
        }
        // Let the index run finish (to report how long it took), then quit.
        while index_done.is_none() {
            match tokio::time::timeout(Duration::from_secs(600), frames.recv()).await {
                Ok(Some((_, false, at))) => index_done = Some(at),
                Ok(Some(_)) => {}
                _ => break,
            }
        }
        let _ = tx.send(key(KeyCode::Char('c'), KeyModifiers::CONTROL));
        (during, after, index_done)
    });
    let _ =
        run_loop(&mut term, &mut app, &mut rx, &mut worker, &mut NoEditor, &mut observer, std::future::pending()).await;
    worker.shutdown().await;
    let (during, after, index_done) = driver.await?;
    let index_seconds = index_done.map_or(f64::NAN, |t| t.saturating_duration_since(started).as_secs_f64());
    Ok(Latency { during_index: during, after_index: after, index_seconds, corpus_mb: bytes as f64 / 1_048_576.0 })
}

fn main() -> anyhow::Result<()> {
    let a = args();
    println!("# docdex TUI benchmark");
    println!();
    println!("| Measure | Value |");
    println!("|---|---|");
    for (w, h) in [(80u16, 24u16), (120, 40), (200, 60)] {
        let (wall, cpu) = search_frames(w, h, a.frames);
        println!("| Search pane, 10,000 results, {w}x{h}, frame CPU | {} |", stats(cpu));
        println!("| Search pane, 10,000 results, {w}x{h}, frame wall | {} |", stats(wall));
    }
    for (w, h) in [(80u16, 24u16), (120, 40), (200, 60)] {
        let ((wall, cpu), shown) = impact_frames(w, h, a.frames);
        println!("| Impact graph, {shown} nodes, {w}x{h}, frame CPU | {} |", stats(cpu));
        println!("| Impact graph, {shown} nodes, {w}x{h}, frame wall | {} |", stats(wall));
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let l = rt.block_on(keystroke_latency(a.files, a.keys))?;
    println!(
        "| Keystroke to screen while indexing ({} files, {:.1} MiB re-indexed in {:.1} s) | {} |",
        a.files,
        l.corpus_mb,
        l.index_seconds,
        stats(l.during_index)
    );
    println!("| Keystroke to screen after the index finished | {} |", stats(l.after_index));
    Ok(())
}
