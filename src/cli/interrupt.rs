//! Ctrl-C as a stop request for one long engine call (`docdex graph rebuild`): the first
//! SIGINT or SIGTERM trips the call's [`CancelToken`], which it answers at its next look
//! (ending with `Error::Cancelled`, exit 130, having written nothing half-way); a second one
//! exits at once with 130, as `docdex watch` and `docdex serve` do. Without this the default
//! disposition killed the process wherever it was, with no word on what was kept.

use crate::engine::protocol::CancelToken;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Set by the handler; read by the thread that trips the token.
static HIT: AtomicBool = AtomicBool::new(false);

/// How often the watcher looks for a Ctrl-C (the most a stop waits before the work sees it).
const POLL: Duration = Duration::from_millis(20);

/// Runs `work` with a token ambient on this thread that trips on Ctrl-C; says whether one came.
/// The signal handlers are the default ones again when it returns.
pub fn stoppable<T>(work: impl FnOnce() -> T) -> (T, bool) {
    let token = CancelToken::new();
    let _handler = Handler::install();
    let done = AtomicBool::new(false);
    let out = std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                if HIT.load(Ordering::Relaxed) {
                    token.cancel();
                    return;
                }
                std::thread::sleep(POLL);
            }
        });
        let out = {
            let _ambient = token.enter();
            work()
        };
        done.store(true, Ordering::Relaxed);
        out
    });
    (out, HIT.load(Ordering::Relaxed))
}

/// SIGINT and SIGTERM caught until dropped.
struct Handler;

#[cfg(unix)]
extern "C" fn on_signal(_: libc::c_int) {
    if HIT.swap(true, Ordering::SeqCst) {
        // SAFETY: `_exit` is async-signal-safe; the writer lock is an OS lock and every write
        // the work makes is atomic, so nothing is left half-written.
        unsafe { libc::_exit(130) };
    }
}

impl Handler {
    fn install() -> Handler {
        HIT.store(false, Ordering::SeqCst);
        // SAFETY: the handler only performs an atomic swap and `_exit`, both async-signal-safe.
        #[cfg(unix)]
        unsafe {
            libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
            libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        }
        Handler
    }
}

impl Drop for Handler {
    fn drop(&mut self) {
        // SAFETY: restoring the default dispositions.
        #[cfg(unix)]
        unsafe {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
        }
    }
}
