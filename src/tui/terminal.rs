//! The real terminal: raw mode, the alternate screen, mouse capture and
//! bracketed paste, and getting all of it back to normal on every way out,
//! a normal quit, an error (the guard's `Drop`), a panic (a hook that
//! restores before the message prints) and signals (the loop ends cleanly).
//! Also suspends the UI to run `$EDITOR` and resumes it afterwards.

use crossterm::event::{DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture};
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
        term.clear()?;
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
    if MOUSE.load(Ordering::SeqCst) {
        execute!(out, EnableMouseCapture)?;
    }
    Ok(())
}

/// Puts the terminal back: cooked mode, main screen, no mouse capture, cursor shown.
/// Safe to call more than once and from a panic hook.
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = io::stdout();
    if MOUSE.load(Ordering::SeqCst) {
        let _ = execute!(out, DisableMouseCapture);
    }
    let _ = execute!(out, DisableBracketedPaste, LeaveAlternateScreen, cursor::Show);
    let _ = disable_raw_mode();
}

/// Leaves TUI mode so another program can use the terminal.
pub fn suspend() {
    restore();
}

/// Re-enters TUI mode after [`suspend`] and forces a full redraw.
pub fn resume(term: &mut Tty) -> io::Result<()> {
    activate()?;
    term.clear()
}

fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            tracing::error!("panic: {info}");
            previous(info);
        }));
    });
}
