//! The signal every server process stops on.

use std::future::Future;

/// Installs the SIGINT and SIGTERM handlers now and returns a future that resolves on either.
///
/// Installing eagerly matters: a handler installed only when the future is first polled leaves
/// a window (the server already listening, its accept loop not yet having polled the future)
/// in which a SIGTERM still has its default action and kills the process without a clean stop.
/// Must be called inside the runtime.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let term = signal(SignalKind::terminate()).ok();
        let int = signal(SignalKind::interrupt()).ok();
        async move {
            let wait = |s: Option<tokio::signal::unix::Signal>| async move {
                match s {
                    Some(mut s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = wait(term) => {}
                _ = wait(int) => {}
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// The exit status of a process ended by a second signal: 128 + SIGINT, as shells report a
/// process Ctrl-C ended.
pub const FORCED_EXIT_STATUS: i32 = 130;

/// After the first signal: the next SIGINT or SIGTERM exits the process at once with
/// [`FORCED_EXIT_STATUS`] (a clean stop waits up to the drain time for requests and for the
/// watchers' current batch, and a user pressing Ctrl-C again wants out now). Index writes
/// are transactions and the writer and daemon locks are OS locks, so nothing is left half
/// written or held. Must be called inside the runtime.
pub fn exit_on_next_signal() {
    let again = shutdown_signal();
    tokio::spawn(async move {
        again.await;
        eline!("docdex: second signal; exiting now (the index keeps what it committed)");
        std::process::exit(FORCED_EXIT_STATUS);
    });
}
