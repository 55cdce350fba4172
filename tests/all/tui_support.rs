//! Driving the TUI in tests: an `App` over a real engine and a real fixture repository,
//! an injected clock, keys and mouse clicks as terminal events, requests executed by the real
//! engine (`worker::run_sync`) and fed back, and screens drawn on ratatui's `TestBackend`
//! compared with insta snapshots stored under `snapshots/`.

use crate::util::{sample_repo, Env};
use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use docdex::tui::app::App;
use docdex::tui::clock::ManualClock;
use docdex::tui::event::{AppEvent, EngineEvent, Request};
use docdex::tui::worker::run_sync;
use docdex::Engine;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::Terminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The fixed wall-clock time of every snapshot.
pub const NOW_MS: u64 = 1_700_000_000_000;

pub struct Harness {
    pub env: Env,
    pub repo: PathBuf,
    pub engine: Engine,
    pub app: App,
    pub clock: ManualClock,
    /// Every request the app sent, in order.
    pub sent: Vec<Request>,
}

/// A config whose model provider is a closed port, so the provider check fails the same way
/// everywhere (no test depends on a model server being absent or present).
pub fn hermetic_config(env: &Env, extra: &str) {
    write_config(env, &hermetic(extra));
}

fn write_config(env: &Env, text: &str) {
    std::fs::create_dir_all(env.home()).expect("home");
    std::fs::write(env.home().join("config.toml"), text).expect("config");
}

/// The text of [`hermetic_config`].
fn hermetic(extra: &str) -> String {
    format!("[llm]\nbase_url = \"http://127.0.0.1:9\"\n{extra}")
}

impl Harness {
    /// An app on the sample repository (not indexed yet).
    pub fn new() -> Harness {
        Self::with("")
    }

    /// An app with extra config lines.
    pub fn with(extra_config: &str) -> Harness {
        Self::with_files(extra_config, &[])
    }

    /// Like [`Harness::with`], with files written under DOCDEX_HOME first (user themes, keymaps).
    pub fn with_files(extra_config: &str, files: &[(&str, &str)]) -> Harness {
        Self::build(&hermetic(extra_config), files, sample_repo)
    }

    /// An app on the sample repository with this whole `config.toml` (a model server, ...).
    pub fn with_config(config: &str) -> Harness {
        Self::build(config, &[], sample_repo)
    }

    /// An app on a copy of a code fixture (`tests/fixtures/code/<name>`).
    pub fn on_fixture(name: &str) -> Harness {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/code").join(name);
        Self::build(&hermetic(""), &[], move |dst| copy_dir(&src, dst))
    }

    fn build(config: &str, files: &[(&str, &str)], setup: impl FnOnce(&std::path::Path)) -> Harness {
        let env = Env::new();
        write_config(&env, config);
        for (rel, text) in files {
            let p = env.home().join(rel);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        }
        let repo = env.repo("fixture");
        setup(&repo);
        let repo = std::fs::canonicalize(&repo).expect("canonical");
        let engine = env.engine();
        let clock = ManualClock::new(NOW_MS);
        let mut opts = docdex::tui::app_options(&engine, repo.clone());
        opts.debounce = Duration::from_millis(120);
        let app = App::new(opts, Arc::new(clock.clone()));
        Harness { env, repo, engine, app, clock, sent: Vec::new() }
    }

    /// A new run of the app on the same home and repository (nothing kept in memory).
    pub fn restart(mut self) -> Harness {
        let mut opts = docdex::tui::app_options(&self.engine, self.repo.clone());
        opts.debounce = Duration::from_millis(120);
        self.app = App::new(opts, Arc::new(self.clock.clone()));
        self.pump();
        self
    }

    /// Rebuilds the app (before start-up) with changed options, e.g. another theme.
    pub fn with_theme(mut self, theme: docdex::tui::theme::Theme) -> Harness {
        let mut opts = docdex::tui::app_options(&self.engine, self.repo.clone());
        opts.theme = theme;
        opts.debounce = Duration::from_millis(120);
        self.app = App::new(opts, Arc::new(self.clock.clone()));
        self
    }

    /// Takes the requests sent since the last call (and remembers them in `sent`).
    pub fn requests(&mut self) -> Vec<Request> {
        let r = self.app.take_requests();
        self.sent.extend(r.iter().cloned());
        r
    }

    /// Runs every pending request with the real engine and feeds the events back, until quiet.
    pub fn pump(&mut self) {
        for _ in 0..20 {
            let reqs = self.requests();
            if reqs.is_empty() {
                return;
            }
            for r in reqs {
                for e in run_sync(&self.engine, r) {
                    self.app.handle(AppEvent::Engine(e));
                }
            }
        }
    }

    /// Answers pending requests except the given kinds, which are dropped (recorded in `sent`).
    pub fn pump_except(&mut self, skip: impl Fn(&Request) -> bool) {
        for _ in 0..20 {
            let reqs = self.requests();
            if reqs.is_empty() {
                return;
            }
            for r in reqs {
                if skip(&r) {
                    continue;
                }
                for e in run_sync(&self.engine, r) {
                    self.app.handle(AppEvent::Engine(e));
                }
            }
        }
    }

    /// Starts up: loads repos, indexes the fixture, checks the provider.
    pub fn started(mut self) -> Harness {
        self.pump();
        self
    }

    /// Answers the newest impact request with `view`, as the worker would.
    pub fn answer_impact(&mut self, view: docdex::tui::widgets::graph::GraphView) {
        let seq = self
            .requests()
            .iter()
            .rev()
            .find_map(|r| if let Request::Impact { seq, .. } = r { Some(*seq) } else { None })
            .expect("an impact request");
        self.engine_event(EngineEvent::Impact { seq, result: Ok(view) });
    }

    pub fn engine_event(&mut self, e: EngineEvent) {
        self.app.handle(AppEvent::Engine(e));
    }

    pub fn key(&mut self, code: KeyCode) {
        self.key_mod(code, KeyModifiers::NONE);
    }

    pub fn ctrl(&mut self, c: char) {
        self.key_mod(KeyCode::Char(c), KeyModifiers::CONTROL);
    }

    pub fn alt(&mut self, c: char) {
        self.key_mod(KeyCode::Char(c), KeyModifiers::ALT);
    }

    pub fn key_mod(&mut self, code: KeyCode, mods: KeyModifiers) {
        self.app.handle(AppEvent::Input(Event::Key(KeyEvent::new(code, mods))));
    }

    pub fn typ(&mut self, s: &str) {
        for c in s.chars() {
            let mods = if c.is_ascii_uppercase() { KeyModifiers::SHIFT } else { KeyModifiers::NONE };
            self.key_mod(KeyCode::Char(c), mods);
        }
    }

    pub fn click(&mut self, column: u16, row: u16) {
        self.app.handle(AppEvent::Input(Event::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column,
            row,
            modifiers: KeyModifiers::NONE,
        })));
    }

    /// Moves the clock and ticks.
    pub fn wait(&mut self, ms: u64) {
        self.clock.advance(Duration::from_millis(ms));
        self.app.handle(AppEvent::Tick);
    }

    /// Types a query, lets the debounce pass and runs the search and preview.
    pub fn search(&mut self, q: &str) {
        self.typ(q);
        self.wait(200);
        self.pump();
    }

    /// The screen at a size, as text.
    pub fn screen(&self, w: u16, h: u16) -> String {
        text(&self.buffer(w, h))
    }

    /// The screen at a size, with styles.
    pub fn buffer(&self, w: u16, h: u16) -> Buffer {
        let mut term = Terminal::new(TestBackend::new(w, h)).expect("terminal");
        term.draw(|f| self.app.render(f)).expect("draw");
        term.backend().buffer().clone()
    }

    /// Snapshots the screen at 80x24 and 120x40.
    pub fn snap_both(&self, name: &str) {
        snap(&format!("{name}_80x24"), &self.screen(80, 24));
        snap(&format!("{name}_120x40"), &self.screen(120, 40));
    }
}

/// Copies a directory tree.
pub fn copy_dir(src: &std::path::Path, dst: &std::path::Path) {
    std::fs::create_dir_all(dst).expect("mkdir");
    for entry in std::fs::read_dir(src).expect("read_dir") {
        let entry = entry.expect("entry");
        let to = dst.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &to);
        } else {
            std::fs::copy(entry.path(), to).expect("copy");
        }
    }
}

/// A buffer as lines of text (wide characters once), trailing spaces kept so alignment shows.
pub fn text(buf: &Buffer) -> String {
    let mut out = String::new();
    let w = buf.area.width as usize;
    for row in buf.content.chunks(w) {
        let mut skip = 0usize;
        let mut line = String::new();
        for c in row {
            if skip == 0 {
                line.push_str(c.symbol());
            }
            skip = skip.max(unicode_width(c.symbol())).saturating_sub(1);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

pub fn unicode_width(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(s)
}

/// Replaces what varies between runs (timings, temporary paths) with placeholders.
pub fn filter(s: &str) -> String {
    // A timing at the right end of a frame's top edge (the search results' `── 24 ms ╮`): the
    // border before it takes up its digits, so the line keeps its width whatever the time.
    let edge = regex::Regex::new(r"(─+) (\d+) ms ╮").expect("regex");
    let s = edge.replace_all(s, |c: &regex::Captures<'_>| {
        format!("{} N ms ╮", "─".repeat(c[1].chars().count() + c[2].len() - 1))
    });
    // Other timings are drawn in fixed-width fields, so replacing them keeps the layout.
    let ms = regex::Regex::new(r"[ \d]{3}\d ms\b").expect("regex");
    let secs = regex::Regex::new(r"\b\d\.\d s\b").expect("regex");
    let tmp = regex::Regex::new(r"/tmp/\.tmp[A-Za-z0-9]+").expect("regex");
    let s = ms.replace_all(&s, "   N ms");
    let s = secs.replace_all(&s, "N.N s");
    tmp.replace_all(&s, "[TMP]").into_owned()
}

/// Asserts a snapshot under `snapshots/` (absolute path, so it works from any test module).
pub fn snap(name: &str, screen: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    let filtered = filter(screen);
    settings.bind(|| insta::assert_snapshot!(name, filtered));
}

/// True when some line of the screen contains `needle`.
pub fn shows(screen: &str, needle: &str) -> bool {
    screen.lines().any(|l| l.contains(needle))
}
