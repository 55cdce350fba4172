//! A cancellation handle a caller trips from another thread to stop long work it started
//! (today: a chat turn, through `ChatTurnRequest::cancel`, and [`Engine::stream_chat_cancellable`]).
//!
//! Event callbacks can only stop work when an event arrives; a model reading a long prompt
//! sends none for seconds. The work polls this flag instead: between waterfall tiers and,
//! while waiting on the model, every [`CANCEL_TICK`].
//!
//! A turn also makes the token *ambient* on its thread ([`CancelToken::enter`]) for the calls
//! it makes through other capabilities (the query's embedding inside search, memory and
//! profile recall, the context-window lookup): their waits on the model server end when it
//! trips ([`Engine::block_on_server`]), so a hung server cannot hold a stopped turn for
//! `[llm] request_timeout_secs`.
//!
//! CPU- and disk-bound work stops too: it takes the ambient token once, on the thread that
//! starts it ([`CancelToken::current`], before it fans out to rayon's threads, which do not
//! share the ambient token), and looks at it at its loop boundaries ([`CancelToken::check`]):
//! a search between its candidate pool, its file ranking and each file read for snippets (and
//! inside them: per symbol name looked up, every 8 hits masked, and in Tantivy's collection
//! every 256 documents, `search::collect`), a graph walk per level of its breadth-first
//! search, an audit per file read and per block of compared pairs, the project map per tree
//! tried, the pre-commit gatekeeper and the risk overlay per rule and import cycle, an index
//! run per batch of files and before and during its impact graph's build, a graph rebuild per
//! file parsed and resolved, a test run while it waits on the runner (whose process group it
//! kills), a helper program such as git while it runs (`process`, which kills it). Each ends
//! with [`Error::Cancelled`]. A look is one relaxed atomic load: they sit between phases and
//! batches or every few hundred documents, never per term or per posting.
//!
//! [`Engine::stream_chat_cancellable`]: crate::Engine::stream_chat_cancellable
//! [`Engine::block_on_server`]: crate::Engine::block_on_server

use crate::error::{Error, Result};
use std::cell::RefCell;
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

    /// `Err(`[`Error::Cancelled`]`)` once the token is tripped: what long work calls at its
    /// loop boundaries, so a request whose client left stops instead of finishing for nobody.
    pub fn check(&self) -> Result<()> {
        if self.is_cancelled() {
            return Err(Error::Cancelled);
        }
        Ok(())
    }

    /// The flag itself, for work that takes a plain stop flag (an index run's batches).
    pub(crate) fn flag(&self) -> &AtomicBool {
        &self.0
    }

    /// The current thread's ambient token, or a fresh one nobody trips when no caller entered
    /// one (the CLI). Taken once where work starts: rayon's threads have no ambient token.
    pub(crate) fn current() -> CancelToken {
        CancelToken::ambient().unwrap_or_default()
    }

    /// Makes this token the current thread's ambient one until the guard drops (the previous
    /// one, if any, comes back then): every engine call made on this thread meanwhile answers
    /// to it (the server's work gate enters one per request; tests enter one to stop a call).
    pub fn enter(&self) -> AmbientGuard {
        let prev = AMBIENT.with(|a| a.replace(Some(self.clone())));
        AmbientGuard { prev }
    }

    /// The token the current thread's work answers to, if a caller entered one.
    pub(crate) fn ambient() -> Option<CancelToken> {
        AMBIENT.with(|a| a.borrow().clone())
    }
}

/// Resolves once `flag` is set (looked at every [`CANCEL_TICK`]); never otherwise. For work
/// that answers to a plain stop flag rather than a [`CancelToken`] (a keeper's shutdown,
/// which the embedding phase races its requests to the model server against).
pub(crate) async fn flag_set(flag: &AtomicBool) {
    while !flag.load(Ordering::SeqCst) {
        tokio::time::sleep(CANCEL_TICK).await;
    }
}

thread_local! {
    static AMBIENT: RefCell<Option<CancelToken>> = const { RefCell::new(None) };
}

/// Restores the thread's previous ambient token when dropped (see [`CancelToken::enter`]).
#[must_use = "the token is ambient only while the guard lives"]
pub struct AmbientGuard {
    prev: Option<CancelToken>,
}

impl Drop for AmbientGuard {
    fn drop(&mut self) {
        let prev = self.prev.take();
        AMBIENT.with(|a| *a.borrow_mut() = prev);
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

    #[test]
    fn an_entered_token_is_ambient_on_its_thread_until_the_guard_drops() {
        assert!(CancelToken::ambient().is_none());
        let outer = CancelToken::new();
        let inner = CancelToken::new();
        {
            let _o = outer.enter();
            {
                let _i = inner.enter();
                inner.cancel();
                assert!(CancelToken::ambient().is_some_and(|t| t.is_cancelled()));
                std::thread::spawn(|| assert!(CancelToken::ambient().is_none(), "other threads are untouched"))
                    .join()
                    .unwrap();
            }
            assert!(CancelToken::ambient().is_some_and(|t| !t.is_cancelled()), "the outer one is back");
        }
        assert!(CancelToken::ambient().is_none());
    }
}
