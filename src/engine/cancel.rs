//! A cancellation handle a caller trips from another thread to stop long work it started
//! (today: a chat turn, through `ChatTurnRequest::cancel`, and [`Engine::stream_chat_cancellable`]).
//!
//! Event callbacks can only stop work when an event arrives; a model reading a long prompt
//! sends none for seconds. The work polls this flag instead: between waterfall tiers and,
//! while waiting on the model, every [`CANCEL_TICK`].
//!
//! [`Engine::stream_chat_cancellable`]: crate::Engine::stream_chat_cancellable

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often a wait on the network looks at the flag (the longest a stop waits to be seen).
pub const CANCEL_TICK: Duration = Duration::from_millis(20);

/// A shared "stop now" flag. Clones share the flag; the default is a fresh flag that nobody
/// holds, so it is never tripped.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// A new, untripped token.
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// Asks the work holding a clone of this token to stop (idempotent, from any thread).
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether [`CancelToken::cancel`] was called on this token or a clone of it.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Resolves once the token is cancelled (checks every [`CANCEL_TICK`]); never otherwise.
    pub async fn cancelled(&self) {
        while !self.is_cancelled() {
            tokio::time::sleep(CANCEL_TICK).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_flag_and_the_default_is_untripped() {
        let token = CancelToken::default();
        let held = token.clone();
        assert!(!held.is_cancelled());
        token.cancel();
        assert!(held.is_cancelled() && token.is_cancelled());
        assert!(!CancelToken::new().is_cancelled(), "a new token is its own flag");
    }
}
