//! The event loop (yazi's shape): everything that can happen (keys and mouse
//! from the input task, results from the engine worker) arrives on one
//! channel; the loop waits for the first event or the next timer (tick or a
//! debounce deadline), takes what else is queued (a bounded batch; a run of typed
//! characters goes in at once), hands new requests to the worker, performs effects
//! (the editor), and draws at most once per frame and only when something changed.
//!
//! The loop is generic over the ratatui backend and the [`Host`] that performs
//! effects, so tests and benchmarks run the very same loop on a `TestBackend`
//! with scripted input.

use super::app::{App, Effect};
use super::event::AppEvent;
use super::worker::Worker;
use crossterm::event::EventStream;
use futures::StreamExt;
use ratatui::backend::Backend;
use ratatui::buffer::Buffer;
use ratatui::Terminal;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tokio::sync::oneshot;

/// Shortest time between two frames (at most ~60 frames a second).
pub const FRAME: Duration = Duration::from_millis(16);
/// Tick period (spinners, polling, notices).
pub const TICK: Duration = Duration::from_millis(250);
/// Events handled between two looks at signals, timers and the frame.
pub const MAX_BATCH: usize = 4096;

/// Performs effects the app asks for that need the terminal.
#[allow(async_fn_in_trait)]
pub trait Host<B: Backend> {
    /// Runs the editor on `path` at `line` with the terminal handed over; returns a notice.
    async fn open_editor(&mut self, terminal: &mut Terminal<B>, path: &Path, line: u32) -> Result<String, String>;

    /// Gives the terminal back and stops the process until the shell resumes it (`ctrl+z`).
    /// Hosts without a real terminal do nothing.
    async fn suspend(&mut self, _terminal: &mut Terminal<B>) -> Result<(), String> {
        Ok(())
    }
}

/// Sees every frame drawn (benchmarks, end-to-end checks).
pub trait FrameObserver {
    /// A frame was drawn in `took`.
    fn frame(&mut self, buffer: &Buffer, took: Duration);
}

impl FrameObserver for () {
    fn frame(&mut self, _buffer: &Buffer, _took: Duration) {}
}

/// How the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The user quit.
    Quit,
    /// A termination signal arrived.
    Signal,
    /// Every event source closed.
    Closed,
}

/// Runs until the app quits, a signal arrives (`stop` resolves) or the channel closes.
pub async fn run_loop<B: Backend, H: Host<B>>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    rx: &mut UnboundedReceiver<AppEvent>,
    worker: &mut Worker,
    host: &mut H,
    observer: &mut dyn FrameObserver,
    stop: impl std::future::Future<Output = ()>,
) -> Result<Exit, B::Error> {
    tokio::pin!(stop);
    let mut next_tick = Instant::now() + TICK;
    let mut last_frame: Option<Instant> = None;
    loop {
        for r in app.take_requests() {
            worker.dispatch(r);
        }
        for effect in app.take_effects() {
            match effect {
                Effect::OpenEditor { path, line } => {
                    let result = host.open_editor(terminal, &path, line).await;
                    app.editor_finished(result);
                }
                Effect::Suspend => {
                    let result = host.suspend(terminal).await;
                    app.resumed(result);
                }
            }
        }
        if app.should_quit() {
            return Ok(Exit::Quit);
        }
        let now = Instant::now();
        let frame_due = last_frame.map_or(now, |t| t + FRAME);
        if app.is_dirty() && now >= frame_due {
            let started = Instant::now();
            let completed = terminal.draw(|f| app.render(f))?;
            observer.frame(completed.buffer, started.elapsed());
            app.mark_drawn();
            last_frame = Some(started);
        }
        let mut wake = next_tick;
        if let Some(d) = app.deadline() {
            wake = wake.min(d);
        }
        if app.is_dirty() {
            wake = wake.min(last_frame.map_or(now, |t| t + FRAME));
        }
        tokio::select! {
            ev = rx.recv() => match ev {
                Some(ev) => {
                    // Take what else is queued before drawing, but at most a batch: a flood of
                    // keys must not keep the loop from signals, `ctrl+c` or a frame.
                    let mut batch = vec![ev];
                    while batch.len() < MAX_BATCH {
                        match rx.try_recv() {
                            Ok(ev) => batch.push(ev),
                            Err(_) => break,
                        }
                    }
                    app.handle_all(batch);
                }
                None => return Ok(Exit::Closed),
            },
            _ = tokio::time::sleep_until(tokio::time::Instant::from_std(wake)) => {
                let now = Instant::now();
                if now >= next_tick || app.deadline().is_some_and(|d| now >= d) {
                    app.handle(AppEvent::Tick);
                    if now >= next_tick {
                        next_tick = now + TICK;
                    }
                }
            }
            _ = &mut stop => return Ok(Exit::Signal),
        }
    }
}

/// Controls the input task.
pub enum InputControl {
    /// Stop reading the terminal (another program takes it); acknowledged when stopped.
    Pause(oneshot::Sender<()>),
    /// Read the terminal again.
    Resume,
}

/// Spawns the task that reads terminal input into the app channel; returns its control handle.
pub fn spawn_input(tx: UnboundedSender<AppEvent>) -> mpsc::UnboundedSender<InputControl> {
    let (ctl_tx, mut ctl) = mpsc::unbounded_channel::<InputControl>();
    tokio::spawn(async move {
        let mut stream = Some(EventStream::new());
        loop {
            match stream.as_mut() {
                Some(s) => tokio::select! {
                    ev = s.next() => match ev {
                        Some(Ok(e)) => {
                            if tx.send(AppEvent::Input(e)).is_err() {
                                break;
                            }
                        }
                        Some(Err(e)) => {
                            tracing::warn!("terminal input: {e}");
                            break;
                        }
                        None => break,
                    },
                    c = ctl.recv() => match c {
                        Some(InputControl::Pause(ack)) => {
                            // Dropping the stream stops crossterm's reader thread, so the editor gets every key.
                            stream = None;
                            let _ = ack.send(());
                        }
                        Some(InputControl::Resume) => {}
                        None => break,
                    },
                },
                None => match ctl.recv().await {
                    Some(InputControl::Resume) => stream = Some(EventStream::new()),
                    Some(InputControl::Pause(ack)) => {
                        let _ = ack.send(());
                    }
                    None => break,
                },
            }
        }
    });
    ctl_tx
}
