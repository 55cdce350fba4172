//! The real terminal: raw mode, the alternate screen, mouse capture and
//! bracketed paste, and getting all of it back to normal on every way out,
//! a normal quit, an error (the guard's `Drop`), a panic (a hook that
//! restores before the message prints) and signals (the loop ends cleanly).
//! Also suspends the UI to run `$EDITOR` and resumes it afterwards.
//!
//! Keys are asked for in the kitty keyboard protocol's disambiguated form where the terminal
//! speaks it (kitty, foot, WezTerm, Alacritty, Ghostty, iTerm2): there `esc` arrives as a
//! sequence of its own, so `esc` followed at once by `6` is normal mode and pane 6, never
//! `alt+6`. Other terminals ignore the request and send keys as before.

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture, KeyboardEnhancementFlags,
    PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen};
use crossterm::{cursor, execute};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;
use std::io::{self, Stdout};
use std::sync::atomic::{AtomicBool, Ordering};

/// The terminal the app draws on.
pub type Tty = Terminal<CrosstermBackend<Stdout>>;

/// Whether mouse capture was turned on (so restore turns it off).
static MOUSE: AtomicBool = AtomicBool::new(false);
/// Whether the terminal is currently in TUI mode.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Owns TUI mode; restores the terminal when dropped.
pub struct TerminalGuard {
    _private: (),
}

impl TerminalGuard {
    /// Enters raw mode and the alternate screen (with mouse capture when asked) and installs the
    /// panic hook. Fails (with the terminal left as it was) when stdout is not a terminal.
    pub fn enter(mouse: bool) -> io::Result<(TerminalGuard, Tty)> {
        install_panic_hook();
        MOUSE.store(mouse, Ordering::SeqCst);
        activate()?;
        let guard = TerminalGuard { _private: () };
        let mut term = Terminal::new(CrosstermBackend::new(io::stdout()))?;
        full_redraw(&mut term)?;
        Ok((guard, term))
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

fn activate() -> io::Result<()> {
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let mut out = io::stdout();
    execute!(out, EnterAlternateScreen, EnableBracketedPaste, cursor::Hide)?;
    // After entering the alternate screen: the protocol keeps one stack per screen.
    execute!(out, PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES))?;
    if MOUSE.load(Ordering::SeqCst) {
        execute!(out, EnableMouseCapture)?;
    }
    Ok(())
}

/// Puts the terminal back: cooked mode, main screen, no mouse capture, the terminal's own key
/// encoding, cursor shown.
/// Safe to call more than once and from a panic hook.
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = io::stdout();
    if MOUSE.load(Ordering::SeqCst) {
        let _ = execute!(out, DisableMouseCapture);
    }
    let _ = execute!(out, PopKeyboardEnhancementFlags, DisableBracketedPaste, LeaveAlternateScreen, cursor::Show);
    let _ = disable_raw_mode();
}

/// Leaves TUI mode so another program can use the terminal.
pub fn suspend() {
    restore();
}

/// Re-enters TUI mode after [`suspend`] and forces a full redraw.
pub fn resume(term: &mut Tty) -> io::Result<()> {
    activate()?;
    full_redraw(term)
}

/// Clears the screen and makes the next frame paint every cell. (`Terminal::clear` would ask the
/// terminal for the cursor position, which reads stdin, and stdin is not being read right now.)
fn full_redraw(term: &mut Tty) -> io::Result<()> {
    let size = term.size()?;
    term.resize(ratatui::layout::Rect::new(0, 0, size.width, size.height))
}

/// The thread that owns the screen; a panic there ends the app, elsewhere it is logged.
static UI_THREAD: std::sync::OnceLock<std::thread::ThreadId> = std::sync::OnceLock::new();

fn install_panic_hook() {
    let _ = UI_THREAD.set(std::thread::current().id());
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            tracing::error!("panic: {info}");
            let on_ui = UI_THREAD.get().is_none_or(|id| *id == std::thread::current().id());
            if on_ui || !ACTIVE.load(Ordering::SeqCst) {
                // Give the terminal back first, so the message is readable.
                restore();
                previous(info);
            }
            // A panic on a worker thread is reported in its pane (the worker catches it);
            // printing it would scribble over the screen.
        }));
    });
}
