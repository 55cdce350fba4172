//! The TUI end to end: the real event loop with the real worker and engine (keys in, frames
//! out), and the real binary in a real terminal (tmux): type a query, see the hit, open the
//! impact pane, quit, and check that the terminal was given back in its normal state.

use crate::tui_support::{hermetic_config, shows, text};
use crate::util::{sample_repo, Env};
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use docdex::tui::app::App;
use docdex::tui::clock::SystemClock;
use docdex::tui::event::AppEvent;
use docdex::tui::runtime::{run_loop, Exit, FrameObserver, Host};
use docdex::tui::worker::Worker;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::Terminal;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Keeps the latest frame as text.
struct Screen(Arc<Mutex<String>>);

impl FrameObserver for Screen {
    fn frame(&mut self, buffer: &Buffer, _took: Duration) {
        if let Ok(mut s) = self.0.lock() {
            *s = text(buffer);
        }
    }
}

/// Records editor requests instead of running an editor.
#[derive(Default)]
struct RecordingHost {
    opened: Arc<Mutex<Vec<(PathBuf, u32)>>>,
}

impl Host<TestBackend> for RecordingHost {
    async fn open_editor(&mut self, _t: &mut Terminal<TestBackend>, path: &Path, line: u32) -> Result<String, String> {
        self.opened.lock().map_err(|e| e.to_string())?.push((path.to_path_buf(), line));
        Ok(format!("edited {}:{line}", path.display()))
    }
}

async fn wait_for(screen: &Arc<Mutex<String>>, what: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let s = screen.lock().map(|s| s.clone()).unwrap_or_default();
        if shows(&s, what) {
            return s;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what:?}; screen:\n{s}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn key(code: KeyCode, mods: KeyModifiers) -> AppEvent {
    AppEvent::Input(Event::Key(KeyEvent::new(code, mods)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_loop_indexes_searches_and_opens_the_editor() {
    let env = Env::new();
    hermetic_config(&env, "");
    let repo = env.repo("fixture");
    sample_repo(&repo);
    let repo = std::fs::canonicalize(&repo).expect("canonical");
    let engine = env.engine();
    let opts = docdex::tui::app_options(&engine, repo.clone());
    let mut app = App::new(opts, Arc::new(SystemClock));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut worker = Worker::new(engine, tx.clone());
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
    let shared = Arc::new(Mutex::new(String::new()));
    let mut observer = Screen(shared.clone());
    let mut host = RecordingHost::default();
    let opened = host.opened.clone();

    let driver = tokio::spawn(async move {
        // Not indexed at start: the app indexes in the background and says when it is ready.
        wait_for(&shared, "● ready 5 files").await;
        for c in "session".chars() {
            let _ = tx.send(key(KeyCode::Char(c), KeyModifiers::NONE));
        }
        wait_for(&shared, "src/auth/session.rs:1-6").await;
        wait_for(&shared, "  2▌pub struct SessionStore").await;
        let _ = tx.send(key(KeyCode::Enter, KeyModifiers::NONE));
        wait_for(&shared, "edited").await;
        let _ = tx.send(key(KeyCode::Char('c'), KeyModifiers::CONTROL));
    });
    let mut driver = driver;
    let exit = {
        let run =
            run_loop(&mut terminal, &mut app, &mut rx, &mut worker, &mut host, &mut observer, std::future::pending());
        tokio::pin!(run);
        let mut driver_done = false;
        let deadline = tokio::time::sleep(Duration::from_secs(60));
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                r = &mut run => break r.expect("drawing works"),
                d = &mut driver, if !driver_done => {
                    driver_done = true;
                    if let Err(e) = d {
                        std::panic::resume_unwind(e.into_panic());
                    }
                }
                _ = &mut deadline => panic!("the loop did not finish in time"),
            }
        }
    };
    assert_eq!(exit, Exit::Quit);
    let opened = opened.lock().expect("lock").clone();
    assert_eq!(opened.len(), 1);
    assert_eq!(opened[0].0, repo.join("src/auth/session.rs"));
    worker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_streams_from_a_model_server_and_stops_on_request() {
    use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
    let fake = FakeOllama::start(FakeOllamaOptions {
        models: vec!["phi3.5:3.8b".into()],
        token_delay_ms: 150,
        ..Default::default()
    })
    .expect("fake model server");
    let env = Env::new();
    std::fs::create_dir_all(env.home()).expect("home");
    std::fs::write(env.home().join("config.toml"), format!("[llm]\nbase_url = \"{}\"\n", fake.url())).expect("config");
    let repo = env.repo("fixture");
    sample_repo(&repo);
    let engine = env.engine();
    let opts = docdex::tui::app_options(&engine, std::fs::canonicalize(&repo).expect("canonical"));
    let mut app = App::new(opts, Arc::new(SystemClock));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut worker = Worker::new(engine, tx.clone());
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
    let shared = Arc::new(Mutex::new(String::new()));
    let mut observer = Screen(shared.clone());
    let driver = tokio::spawn(async move {
        wait_for(&shared, "llm ✓ phi3.5:3.8b").await;
        // The waterfall answers from the index: wait for the start-up run to land.
        wait_for(&shared, "● ready 5 files").await;
        let _ = tx.send(key(KeyCode::Char('3'), KeyModifiers::ALT));
        wait_for(&shared, "phi3.5:3.8b on ollama is ready").await;
        let question = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen";
        for c in question.chars() {
            let _ = tx.send(key(KeyCode::Char(c), KeyModifiers::NONE));
        }
        let _ = tx.send(key(KeyCode::Enter, KeyModifiers::NONE));
        // The answer grows a piece at a time; stop it after the first pieces.
        wait_for(&shared, "FAKE ANSWER").await;
        let _ = tx.send(key(KeyCode::Char('s'), KeyModifiers::CONTROL));
        let s = wait_for(&shared, "Stopped turn 1").await;
        assert!(!s.contains("fifteen\"."), "the answer was cut short: {s}");
        let _ = tx.send(key(KeyCode::Char('c'), KeyModifiers::CONTROL));
    });
    let exit = tokio::time::timeout(
        Duration::from_secs(60),
        run_loop(
            &mut terminal,
            &mut app,
            &mut rx,
            &mut worker,
            &mut RecordingHost::default(),
            &mut observer,
            std::future::pending(),
        ),
    )
    .await
    .expect("in time")
    .expect("draws");
    driver.await.expect("driver");
    assert_eq!(exit, Exit::Quit);
    assert_eq!(app.chat().cells().len(), 3, "question, partial answer, stop notice");
    worker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stop_key_ends_a_turn_before_the_first_token() {
    use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
    // The model takes 20 s to read the prompt; the stop must not wait for it.
    let fake = FakeOllama::start(FakeOllamaOptions {
        models: vec!["phi3.5:3.8b".into()],
        first_token_delay_ms: 20_000,
        ..Default::default()
    })
    .expect("fake model server");
    let env = Env::new();
    std::fs::create_dir_all(env.home()).expect("home");
    std::fs::write(env.home().join("config.toml"), format!("[llm]\nbase_url = \"{}\"\n", fake.url())).expect("config");
    let repo = env.repo("fixture");
    sample_repo(&repo);
    let engine = env.engine();
    let opts = docdex::tui::app_options(&engine, std::fs::canonicalize(&repo).expect("canonical"));
    let mut app = App::new(opts, Arc::new(SystemClock));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut worker = Worker::new(engine, tx.clone());
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).expect("terminal");
    let shared = Arc::new(Mutex::new(String::new()));
    let mut observer = Screen(shared.clone());
    let driver = tokio::spawn(async move {
        wait_for(&shared, "● ready 5 files").await;
        let _ = tx.send(key(KeyCode::Char('3'), KeyModifiers::ALT));
        wait_for(&shared, "phi3.5:3.8b on ollama is ready").await;
        for c in "how are sessions expired".chars() {
            let _ = tx.send(key(KeyCode::Char(c), KeyModifiers::NONE));
        }
        let _ = tx.send(key(KeyCode::Enter, KeyModifiers::NONE));
        wait_for(&shared, "asking the model").await;
        let pressed = Instant::now();
        let _ = tx.send(key(KeyCode::Char('s'), KeyModifiers::CONTROL));
        wait_for(&shared, "Stopped turn 1 before the model answered").await;
        let took = pressed.elapsed();
        let _ = tx.send(key(KeyCode::Char('c'), KeyModifiers::CONTROL));
        took
    });
    let exit = tokio::time::timeout(
        Duration::from_secs(60),
        run_loop(
            &mut terminal,
            &mut app,
            &mut rx,
            &mut worker,
            &mut RecordingHost::default(),
            &mut observer,
            std::future::pending(),
        ),
    )
    .await
    .expect("in time")
    .expect("draws");
    let took = driver.await.expect("driver");
    assert!(took < Duration::from_secs(5), "the stop did not wait for the first token ({took:?})");
    assert_eq!(exit, Exit::Quit);
    assert_eq!(app.chat().cells().len(), 2, "the question and the stop notice, no empty answer");
    worker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_ends_the_loop() {
    let env = Env::new();
    hermetic_config(&env, "");
    let repo = env.repo("fixture");
    sample_repo(&repo);
    let engine = env.engine();
    let opts = docdex::tui::app_options(&engine, std::fs::canonicalize(&repo).expect("canonical"));
    let mut app = App::new(opts, Arc::new(SystemClock));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut worker = Worker::new(engine, tx);
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).expect("terminal");
    let stop = tokio::time::sleep(Duration::from_millis(300));
    let exit = run_loop(&mut terminal, &mut app, &mut rx, &mut worker, &mut RecordingHost::default(), &mut (), stop)
        .await
        .expect("ok");
    assert_eq!(exit, Exit::Signal);
    worker.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// The real binary in tmux.

/// A private tmux server, killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn new() -> Tmux {
        let ok = Command::new("tmux").arg("-V").output().map(|o| o.status.success()).unwrap_or(false);
        assert!(ok, "tmux is required for the end-to-end TUI test (.ci/run installs it: apt-get install tmux)");
        Tmux { socket: format!("docdex-e2e-{}-{}", std::process::id(), rand_suffix()) }
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .arg("-f")
            .arg("/dev/null")
            .args(args)
            .output()
            .expect("tmux");
        assert!(out.status.success(), "tmux {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn capture(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "e2e"])
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "e2e"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    fn literal(&self, text: &str) {
        self.run(&["send-keys", "-t", "e2e", "-l", text]);
    }

    fn wait_for(&self, what: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(40);
        loop {
            let s = self.capture();
            if s.contains(what) {
                return s;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what:?}; screen:\n{s}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// [`Self::wait_for`], then the screen once two captures 150 ms apart agree: a capture can
    /// fall inside a frame's write (its first rows new, the rest still the last frame's).
    fn wait_settled(&self, what: &str) -> String {
        let mut last = self.wait_for(what);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            std::thread::sleep(Duration::from_millis(150));
            let now = self.capture();
            if now == last || Instant::now() > deadline {
                return now;
            }
            last = now;
        }
    }

    /// `esc` out of a text field, then wait until the app shows normal mode: sent while `esc`
    /// is still unread, the next key would share its read and arrive as alt+key (`esc` `6`
    /// becomes `alt+6`, which opens the pane but leaves the field in insert mode). The screen
    /// says INS first, so the NOR that follows can only be this `esc` read on its own.
    fn leave_field(&self) {
        self.wait_for(" INS  e2e");
        self.keys(&["Escape"]);
        self.wait_for(" NOR  e2e");
    }

    /// Resizes the window, then waits for a frame drawn at the new width (a bottom border
    /// `╰…╯` spanning it; tmux only cuts or pads the old frame). Keys sent sooner can become
    /// readable in the same poll as the resize signal, and crossterm's reader (0.29, mio)
    /// then returns the resize and leaves them unread until another key arrives.
    fn resize(&self, cols: usize, rows: usize) {
        self.run(&["resize-window", "-t", "e2e", "-x", &cols.to_string(), "-y", &rows.to_string()]);
        let deadline = Instant::now() + Duration::from_secs(40);
        loop {
            let s = self.capture();
            if s.lines().any(|l| l.starts_with('╰') && l.ends_with('╯') && l.chars().count() == cols) {
                return;
            }
            assert!(Instant::now() < deadline, "no frame drawn at {cols} columns; screen:\n{s}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn format(&self, f: &str) -> String {
        self.run(&["display-message", "-p", "-t", "e2e", f]).trim().to_string()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").arg("-L").arg(&self.socket).arg("kill-server").output();
    }
}

fn rand_suffix() -> u32 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0)
}

#[test]
fn the_real_binary_in_a_terminal() {
    use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
    // The model is the fake Ollama in this process, over loopback; BM25 only, so the hits
    // checked below do not depend on vectors.
    let fake = FakeOllama::start(FakeOllamaOptions::default()).expect("fake model server");
    let env = Env::new();
    env.write_config(&format!(
        "[llm]\nbase_url = \"{}\"\ndefault_model = \"fake-chat\"\nembedding_model = \"fake-embed\"\n[search]\nhybrid = false\n",
        fake.url()
    ));
    let repo = env.repo("e2e");
    sample_repo(&repo);
    let bin = env!("CARGO_BIN_EXE_docdex");
    let home = env.home();
    // A stand-in editor that shows it owns the terminal: it reads a line typed into it.
    let out = env.dir.path().join("editor-out.txt");
    // Named `vi` so docdex passes the line the vi way (`+N file`).
    let editor = env.dir.path().join("fake-bin").join("vi");
    std::fs::create_dir_all(editor.parent().expect("dir")).expect("mkdir");
    std::fs::write(
        &editor,
        format!(
            "#!/bin/sh\nprintf 'EDITOR-READY %s\\n' \"$*\"\nread answer\nprintf '%s|%s\\n' \"$*\" \"$answer\" > '{}'\n",
            out.display()
        ),
    )
    .expect("editor script");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let script = format!(
        "printf 'BEFORE-TUI\\n'; \
         env -u VISUAL EDITOR='{editor}' DOCDEX_HOME='{home}' '{bin}' tui --repo '{repo}'; echo \"EXIT1=$?\"; stty -a | tr '\\n' ' '; echo; \
         printf 'PRESS-ENTER\\n'; read _; \
         cd '{repo}' && DOCDEX_HOME='{home}' '{bin}'; echo \"EXIT2=$?\"; sleep 120",
        home = home.display(),
        repo = repo.display(),
        editor = editor.display(),
    );
    let t = Tmux::new();
    t.run(&["new-session", "-d", "-s", "e2e", "-x", "120", "-y", "40", "sh", "-c", &script]);
    // What the workbench writes to its terminal from here on (the editor handoff below gives the
    // terminal back and takes it again).
    let written = env.dir.path().join("pane-output.bin");
    t.run(&["pipe-pane", "-t", "e2e", "-O", &format!("cat >> '{}'", written.display())]);

    // The workbench comes up, indexes the repository, and answers a typed query.
    t.wait_for("● ready 5 files");
    assert_eq!(t.format("#{alternate_on}"), "1", "the TUI runs on the alternate screen");
    t.literal("session");
    t.wait_for("src/auth/session.rs:1-6");
    t.wait_for("  2▌pub struct SessionStore");
    // Enter hands the terminal to $EDITOR at the hit's line, then takes it back.
    t.keys(&["Enter"]);
    let s = t.wait_for("EDITOR-READY");
    assert_eq!(t.format("#{alternate_on}"), "0", "suspended while the editor runs: {s}");
    t.literal("typed-in-editor");
    t.keys(&["Enter"]);
    t.wait_for("1 Repos   2 Search");
    t.wait_for("edited ");
    let got = std::fs::read_to_string(&out).expect("the editor ran");
    let canonical = std::fs::canonicalize(&repo).expect("canonical");
    let want_file = canonical.join("src/auth/session.rs");
    assert!(got.starts_with('+'), "vi-style line argument: {got}");
    assert!(got.contains(&format!(" {}|typed-in-editor", want_file.display())), "{got}");
    assert_eq!(t.format("#{alternate_on}"), "1", "back on the alternate screen");
    // Keys in the kitty protocol's disambiguated form were asked for (`CSI > 1 u`), given back
    // for the editor (`CSI < 1 u`) and asked for again.
    let bytes = std::fs::read(&written).unwrap_or_default();
    let after = |from: usize, needle: &[u8]| {
        bytes.get(from..).and_then(|b| b.windows(needle.len()).position(|w| w == needle)).map(|i| from + i)
    };
    let push = after(0, b"\x1b[>1u");
    let pop = push.and_then(|i| after(i, b"\x1b[<1u"));
    let again = pop.and_then(|i| after(i, b"\x1b[>1u"));
    assert!(again.is_some(), "push {push:?}, pop {pop:?}, push again {again:?} in {} bytes", bytes.len());
    // Leave the query box and open the impact pane in one read, the way a terminal that speaks
    // the protocol sends `esc` then `6` typed at once: `CSI 27 u` is `esc` alone, never alt+6.
    t.wait_for(" INS  e2e");
    t.run(&["send-keys", "-t", "e2e", "-H", "1b", "5b", "32", "37", "75", "36"]);
    // (Read as alt+6, the query box would stay in insert mode: checked when Search is back.)
    t.wait_for("Impact · src/auth/session.rs");
    // The graph loads in the worker: wait for it to be drawn (or for why it cannot be).
    let deadline = Instant::now() + Duration::from_secs(40);
    let mut s = t.capture();
    while !(s.contains("needs the import graph") || s.contains("centre")) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        s = t.capture();
    }
    assert!(s.contains("needs the import graph") || s.contains("centre"), "{s}");
    // A chat turn: the answer streams from the model, citing the repository's code; its trace
    // and its reasoning-DAG session show in their panes.
    t.wait_for("llm ✓ fake-chat");
    t.keys(&["3"]);
    t.literal("where are stale sessions expired?");
    t.keys(&["Enter"]);
    t.wait_for("FAKE ANSWER to \"where are stale sessions expired?\"");
    t.wait_for("[1] src/auth/session.rs:1-6");
    t.leave_field();
    t.keys(&["4"]);
    let s = t.wait_settled("Waterfall trace · turn 1 of 1");
    assert!(s.contains("code_index") && s.contains("Token budget"), "{s}");
    t.keys(&["5"]);
    let s = t.wait_settled("Sessions (1)");
    assert!(s.contains("[UserRequest] where are stale sessions expired?"), "{s}");
    // DAG lines wrap rather than being cut; switching between the tree and the layers (whose
    // wrapped rows differ in number) leaves no row of the other view behind, at 80 columns too.
    t.resize(80, 24);
    t.wait_for("Steps · tree");
    for _ in 0..2 {
        t.keys(&["t"]);
        let s = t.wait_settled("Steps · layers");
        // The steps pane starts at column 26 (the sessions list takes a third of 80).
        let steps: Vec<String> = s.lines().map(|l| l.chars().skip(27).collect()).collect();
        assert!(!steps.iter().any(|l| l.contains("├─") || l.contains("└─")), "no tree row left in layers:\n{s}");
        assert!(s.contains("L0 ┃"), "{s}");
        t.keys(&["t"]);
        let s = t.wait_settled("Steps · tree");
        assert!(!s.contains("L0 ┃") && !s.contains("┃   ↓"), "no layer row left in the tree:\n{s}");
        assert!(s.contains("[UserRequest] where are stale"), "{s}");
    }
    t.resize(120, 40);
    t.wait_for("Sessions (1)");
    // Typing in normal mode is harmless: a sentence with every command letter of the DAG pane
    // and the search pane (q, t, n, p, j, k, g, G, h, l, i, /, ?) leaves the app running; on
    // Search it goes on in the query box (the `q` only asked; the `u` that answered went on).
    t.literal("quickly, the lazy dog jumps; now gnaw bones? pfft. Good!");
    t.keys(&["M-2"]);
    // The query box was left with esc before: Search is in normal mode. Wait for the Search
    // pane itself: the DAG pane's frame, still on screen until alt+2 is drawn, says NOR too.
    let s = t.wait_settled("╭ Search ");
    assert!(s.contains(" NOR  e2e"), "Search kept the normal mode esc left it in:\n{s}");
    t.literal("quickly, the lazy dog jumps; now gnaw bones? pfft. Good!");
    t.wait_for("› sessionuickly, the lazy dog jumps; now gnaw bones? pfft. Good!");
    // The mode line is the frame's last row: a capture can fall between the query line and it.
    let s = t.wait_for(" INS  e2e");
    assert!(s.contains("› sessionuickly, the lazy dog jumps; now gnaw bones? pfft. Good!"), "{s}");
    // The message log opens from the query box (f2) with the run's messages, and esc closes it.
    t.keys(&["F2"]);
    let s = t.wait_settled("Messages (");
    assert!(s.contains("indexed 5 files"), "{s}");
    t.keys(&["Escape"]);
    t.wait_for(" INS  e2e");
    // Quit (a letter asks first): the terminal is back to normal.
    // Separate writes: `esc` and the next key in one read would be alt+key.
    t.keys(&["Escape"]);
    t.wait_for(" NOR  e2e");
    std::thread::sleep(Duration::from_millis(300));
    t.keys(&["q"]);
    t.wait_for("Quit docdex?");
    t.keys(&["y"]);
    let s = t.wait_for("PRESS-ENTER");
    assert!(s.contains("BEFORE-TUI"), "the main screen is shown again: {s}");
    assert!(s.contains("EXIT1=0"), "{s}");
    assert!(!s.contains("1 Repos   2 Search"), "no TUI left on screen: {s}");
    let stty = s.lines().find(|l| l.contains("speed")).unwrap_or_default().to_string();
    let stty =
        format!("{stty} {}", s.lines().skip_while(|l| !l.contains("speed")).take(6).collect::<Vec<_>>().join(" "));
    assert!(stty.contains(" icanon") && !stty.contains("-icanon"), "canonical mode restored: {stty}");
    assert!(stty.contains(" echo ") && !stty.contains("-echo "), "echo restored: {stty}");
    assert_eq!(t.format("#{alternate_on}"), "0", "alternate screen left");
    assert_eq!(t.format("#{cursor_flag}"), "1", "cursor visible");
    assert_eq!(t.format("#{mouse_any_flag}"), "0", "mouse capture off");
    // Logs went to a file, never to the screen.
    let log = std::fs::read_to_string(home.join("state/logs/tui.log")).expect("tui.log");
    assert!(log.contains("docdex tui starting"), "{log}");
    assert!(log.contains("indexed 5 files"), "status messages are logged too: {log}");
    assert!(!s.contains("INFO"), "{s}");

    // `docdex` with no arguments on a terminal opens the workbench on the current repository.
    t.keys(&["Enter"]);
    t.wait_for("● ready 5 files");
    let s = t.capture();
    assert!(s.contains(" e2e │"), "the status bar names the repository: {s}");
    t.keys(&["C-c"]);
    let s = t.wait_for("EXIT2=");
    assert!(s.contains("EXIT2=0"), "{s}");
}

#[test]
fn ctrl_z_suspends_the_real_binary_and_fg_resumes_it() {
    // An interactive shell with job control, as a user has: ctrl+z hands the terminal back to
    // it (main screen, cursor, no mouse capture), `fg` brings the workbench back as it was.
    let env = Env::new();
    env.write_config("[llm]\nbase_url = \"http://127.0.0.1:9\"\n[search]\nhybrid = false\n");
    let repo = env.repo("e2e");
    sample_repo(&repo);
    let bin = env!("CARGO_BIN_EXE_docdex");
    let t = Tmux::new();
    t.run(&[
        "new-session",
        "-d",
        "-s",
        "e2e",
        "-x",
        "100",
        "-y",
        "30",
        "env PS1='PROMPT$ ' bash --norc --noprofile -i",
    ]);
    t.wait_for("PROMPT$");
    t.literal(&format!("DOCDEX_HOME='{}' '{bin}' tui --repo '{}'", env.home().display(), repo.display()));
    t.keys(&["Enter"]);
    t.wait_for("● ready 5 files");
    assert_eq!(t.format("#{alternate_on}"), "1");
    t.literal("sess");
    t.wait_for("› sess");
    t.keys(&["C-z"]);
    let s = t.wait_for("Stopped");
    assert_eq!(t.format("#{alternate_on}"), "0", "the main screen is back: {s}");
    assert_eq!(t.format("#{cursor_flag}"), "1", "cursor visible");
    assert_eq!(t.format("#{mouse_any_flag}"), "0", "mouse capture off");
    // The shell has the terminal (and its line editing) while docdex is stopped.
    t.literal("echo SHELL-$((40+2))");
    t.keys(&["Enter"]);
    t.wait_for("SHELL-42");
    t.literal("fg");
    t.keys(&["Enter"]);
    t.wait_for("› sess");
    assert_eq!(t.format("#{alternate_on}"), "1", "back on the alternate screen");
    // Raw mode again: keys reach the query box one by one, the query was kept.
    t.literal("ion");
    t.wait_for("› session");
    t.keys(&["C-c"]);
    // The shell's turn once the alternate screen is gone (keys sent earlier would reach docdex).
    let deadline = Instant::now() + Duration::from_secs(20);
    while t.format("#{alternate_on}") != "0" {
        assert!(Instant::now() < deadline, "docdex did not exit: {}", t.capture());
        std::thread::sleep(Duration::from_millis(50));
    }
    t.literal("echo EXIT-$?-END");
    t.keys(&["Enter"]);
    t.wait_for("EXIT-0-END");
}

#[test]
fn keys_typed_ahead_of_the_editor_closing_after_a_resize_are_read_at_once() {
    // The window is resized while $EDITOR runs, and keys are typed before docdex reads the
    // terminal again: its first look finds the resize and the keys together. crossterm's mio
    // reader (edge-triggered) returned the resize and left the keys unread until another key
    // came (held in 4 of 5 tries); the /dev/tty reader (`use-dev-tty`, level-triggered) reads
    // them. Three rounds, so a lucky one does not pass the test.
    let env = Env::new();
    env.write_config("[llm]\nbase_url = \"http://127.0.0.1:9\"\n[search]\nhybrid = false\n");
    let repo = env.repo("e2e");
    sample_repo(&repo);
    let editor = env.dir.path().join("fake-bin").join("vi");
    std::fs::create_dir_all(editor.parent().expect("dir")).expect("mkdir");
    // It takes its line, then stays a second: keys typed now wait for docdex.
    std::fs::write(&editor, "#!/bin/sh\nprintf 'EDITOR-READY\\n'\nread answer\nprintf 'EDITOR-DONE\\n'\nsleep 1\n")
        .expect("editor script");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let t = Tmux::new();
    let script = format!(
        "env -u VISUAL EDITOR='{}' DOCDEX_HOME='{}' '{}' tui --repo '{}'; sleep 120",
        editor.display(),
        env.home().display(),
        env!("CARGO_BIN_EXE_docdex"),
        repo.display()
    );
    t.run(&["new-session", "-d", "-s", "e2e", "-x", "120", "-y", "40", "sh", "-c", &script]);
    t.wait_for("● ready 5 files");
    t.literal("session");
    t.wait_for("  2▌pub struct SessionStore");
    let mut query = String::from("session");
    for (round, (cols, rows)) in [(100usize, 30usize), (120, 40), (100, 30)].into_iter().enumerate() {
        t.keys(&["Enter"]);
        t.wait_for("EDITOR-READY");
        t.run(&["resize-window", "-t", "e2e", "-x", &cols.to_string(), "-y", &rows.to_string()]);
        // docdex's SIGWINCH handler runs while the editor has the terminal.
        std::thread::sleep(Duration::from_millis(300));
        t.literal(&format!("answer{round}"));
        t.keys(&["Enter"]);
        t.wait_for("EDITOR-DONE");
        // Words that keep the hit, so the next enter opens the editor again.
        let ahead = [" handling", " session", "yy"][round];
        t.literal(ahead);
        query.push_str(ahead);
        let deadline = Instant::now() + Duration::from_secs(15);
        let mut s = t.capture();
        while !s.contains(&format!("› {query}")) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
            s = t.capture();
        }
        assert!(s.contains(&format!("› {query}")), "round {round}: keys typed ahead were not read:\n{s}");
    }
    t.keys(&["C-c"]);
}

#[test]
fn without_a_terminal_docdex_prints_help_and_tui_refuses() {
    let env = Env::new();
    let out = env.run(&[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Usage: docdex"), "{err}");
    assert!(err.contains("tui"), "the help lists the tui command: {err}");
    let out = env.run(&["tui"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("docdex tui needs a terminal"), "{err}");
}

/// The next watcher or index outcome for `repo` on `rx` (other events are skipped).
async fn next_outcome(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<AppEvent>,
    what: &str,
) -> docdex::tui::event::EngineEvent {
    use docdex::tui::event::EngineEvent;
    let deadline = Duration::from_secs(30);
    loop {
        let e = tokio::time::timeout(deadline, rx.recv()).await.unwrap_or_else(|_| panic!("waiting for {what}"));
        match e {
            Some(AppEvent::Engine(e @ (EngineEvent::Watch { .. } | EngineEvent::IndexFinished { .. }))) => return e,
            Some(_) => continue,
            None => panic!("channel closed waiting for {what}"),
        }
    }
}

#[test]
fn reindexing_a_repository_the_workbench_watches_pauses_its_watcher_instead_of_failing() {
    // A runtime of its own, shut down with a timeout: a failed assertion must not leave the test
    // waiting forever on the watcher's blocking thread.
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rt.block_on(reindex_beside_the_watcher())));
    rt.shutdown_timeout(Duration::from_secs(5));
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

async fn reindex_beside_the_watcher() {
    use docdex::tui::event::{EngineEvent, Request, WatchActivity};
    let env = Env::new();
    hermetic_config(&env, "");
    let repo = env.repo("watched");
    sample_repo(&repo);
    let repo = std::fs::canonicalize(&repo).expect("canonical");
    let engine = env.engine();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut worker = Worker::new(engine, tx);
    worker.dispatch(Request::Watch { repo: repo.clone(), on: true });
    let e = next_outcome(&mut rx, "the watcher").await;
    assert!(matches!(e, EngineEvent::Watch { activity: WatchActivity::Ready, .. }), "{e:?}");

    // Its own watcher holds the writer: the run waits for it rather than blaming "another process".
    worker.dispatch(Request::Index { repo: repo.clone(), rebuild: true });
    let mut e = next_outcome(&mut rx, "the paused watcher").await;
    if matches!(e, EngineEvent::Watch { activity: WatchActivity::Stopped, .. }) {
        e = next_outcome(&mut rx, "the index run").await;
    }
    let EngineEvent::IndexFinished { result, .. } = &e else { panic!("{e:?}") };
    assert!(result.is_ok(), "{result:?}");
    // And the watcher comes back by itself.
    let e = next_outcome(&mut rx, "the watcher again").await;
    assert!(matches!(e, EngineEvent::Watch { activity: WatchActivity::Ready, .. }), "{e:?}");

    // Asking for a watcher that runs says so instead of doing nothing.
    worker.dispatch(Request::Watch { repo: repo.clone(), on: true });
    let e = next_outcome(&mut rx, "the answer to a second watch").await;
    assert!(matches!(e, EngineEvent::Watch { activity: WatchActivity::Running, .. }), "{e:?}");
    worker.shutdown().await;
}
