//! A bound on live MCP streamable-HTTP sessions.
//!
//! rmcp's [`LocalSessionManager`] keeps every session it creates until the session has been
//! idle for its keep-alive (5 minutes), with no limit on their number: a client sending
//! `initialize` in a loop (3,000 in a second cost 170 MB) could grow the process without bound.
//! [`BoundedSessions`] wraps it and holds at most `[server] max_mcp_sessions` live sessions
//! (default and most [`MAX_SESSIONS`]). When a new
//! one would pass the cap, the least recently used session that has sent nothing since its
//! `initialize` is ended for it (its client gets `404` and initializes again, as for an expired
//! session); when every session is in use, the new one is refused ([`SessionsFull`], which the
//! transport answers `503` with JSON-RPC `-32000`), so a flood of bare `initialize`s can never
//! push out the sessions agents are working in.
//!
//! A session is not ended for another within [`EVICTION_GRACE`] of its `initialize` (or its
//! last message): its client has had no time to send its first request. 200 clients starting at
//! once against 18 free places all had their `initialize` answered `200`, and each later
//! `initialize` ended an earlier one, so 179 of them got `404` on their very next message,
//! told their session had expired; now the ones past the cap are refused at `initialize`
//! (`503`, retry later) and every session that was answered `200` works.

use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, LocalSessionManagerError};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId, SessionManager};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Live streamable-HTTP MCP sessions the server keeps at most: the default and the largest
/// `[server] max_mcp_sessions` (with `streams::MAX_STREAMS_PER_SESSION` each, sessions alone
/// never fill `streams::MAX_GET_STREAMS`).
pub const MAX_SESSIONS: usize = 128;

/// Marks the refusal in the text rmcp puts in its `500` body, so the transport can answer it
/// as the `503` it is.
pub const SESSIONS_FULL_MARK: &str = "too many MCP sessions";

/// How long after its last message (its `initialize` at first) an unused session is safe
/// from being ended for a new one: clients send `notifications/initialized` and their first
/// request within milliseconds of `initialize`'s answer.
pub const EVICTION_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Why a session could not be created or used.
#[derive(Debug, thiserror::Error)]
pub enum SessionsError {
    /// Every slot holds a session in use.
    #[error(
        "{SESSIONS_FULL_MARK}: all {cap} are in use (`[server] max_mcp_sessions`) or were opened in the last 5 s; end one you no longer need (DELETE /v1/mcp with its Mcp-Session-Id), or retry in a few seconds (a session that sends nothing after its initialize is let go after 5 s for a new one; one in use after 5 idle minutes)"
    )]
    SessionsFull {
        /// The cap in force.
        cap: usize,
    },
    /// rmcp's own error.
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

/// Use of one session, for choosing which one to end.
#[derive(Debug, Clone, Copy)]
struct Usage {
    last: Instant,
    /// A request, a GET stream or a resume came after `initialize` (notifications do not count).
    used: bool,
}

#[derive(Debug, Default)]
struct Table {
    sessions: HashMap<SessionId, Usage>,
    /// Slots taken by sessions being created (counted so concurrent creations keep the cap).
    creating: usize,
}

/// [`LocalSessionManager`] with a cap on live sessions (see the module docs).
#[derive(Debug)]
pub struct BoundedSessions {
    inner: Arc<LocalSessionManager>,
    table: Mutex<Table>,
    cap: usize,
    live: Arc<AtomicUsize>,
}

impl BoundedSessions {
    /// A manager holding at most `cap` sessions, publishing their number in `live`.
    pub fn new(cap: usize, live: Arc<AtomicUsize>) -> BoundedSessions {
        BoundedSessions { inner: Arc::new(LocalSessionManager::default()), table: Mutex::default(), cap, live }
    }

    /// Runs `f` on the table (a poisoned lock still holds a consistent table: every change is
    /// one insert or remove) and publishes the session count.
    fn with_table<T>(&self, f: impl FnOnce(&mut Table) -> T) -> T {
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        let out = f(&mut table);
        self.live.store(table.sessions.len(), Ordering::Relaxed);
        out
    }

    /// Whether this manager holds session `id` (not ended, evicted or never made).
    pub fn holds(&self, id: &str) -> bool {
        let id: SessionId = id.to_string().into();
        self.with_table(|t| t.sessions.contains_key(&id))
    }

    /// Records use of `id`; false when this manager no longer holds it (ended or evicted).
    fn touch(&self, id: &SessionId, used: bool) -> bool {
        self.with_table(|t| match t.sessions.get_mut(id) {
            Some(u) => {
                u.last = Instant::now();
                u.used |= used;
                true
            }
            None => false,
        })
    }

    fn known(&self, id: &SessionId, used: bool) -> Result<(), SessionsError> {
        if self.touch(id, used) {
            Ok(())
        } else {
            Err(LocalSessionManagerError::SessionNotFound(id.clone()).into())
        }
    }
}

/// A slot counted in [`Table::creating`] until dropped. rmcp's `create_session` awaits a lock,
/// and a request dropped there (its client hung up) never reached the line that gave the slot
/// back: each such creation lowered the cap for good, until new sessions ended older ones
/// below it.
struct Creating<'a>(&'a BoundedSessions);

impl Drop for Creating<'_> {
    fn drop(&mut self) {
        self.0.with_table(|t| t.creating = t.creating.saturating_sub(1));
    }
}

impl SessionManager for BoundedSessions {
    type Error = SessionsError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let victim = self.with_table(|t| {
            let mut victim = None;
            if t.sessions.len() + t.creating >= self.cap {
                let evictable = |u: &Usage| !u.used && u.last.elapsed() >= EVICTION_GRACE;
                let idle = t.sessions.iter().filter(|(_, u)| evictable(u)).min_by_key(|(_, u)| u.last);
                let id = idle.map(|(id, _)| id.clone()).ok_or(SessionsError::SessionsFull { cap: self.cap })?;
                t.sessions.remove(&id);
                victim = Some(id);
            }
            t.creating += 1;
            Ok::<_, SessionsError>(victim)
        })?;
        if let Some(id) = victim {
            tracing::info!(session = %id, cap = self.cap, "MCP session cap reached: ending the least recently used unused session");
            // Closing waits on the session's worker; the new session need not.
            let inner = self.inner.clone();
            tokio::spawn(async move { inner.close_session(&id).await });
        }
        let slot = Creating(self);
        let created = self.inner.create_session().await;
        if let Ok((id, _)) = &created {
            self.with_table(|t| t.sessions.insert(id.clone(), Usage { last: Instant::now(), used: false }));
        }
        drop(slot);
        Ok(created?)
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.known(id, false)?;
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.touch(id, false) && self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.with_table(|t| t.sessions.remove(id));
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl futures::Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.known(id, true)?;
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.known(id, false)?;
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl futures::Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.known(id, true)?;
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl futures::Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.known(id, true)?;
        Ok(self.inner.resume(id, last_event_id).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_creation_abandoned_midway_gives_its_slot_back() {
        let live = Arc::new(AtomicUsize::new(0));
        let sessions = BoundedSessions::new(2, live.clone());
        {
            // rmcp's table is locked: the creation waits on it, and is dropped there.
            let _held = sessions.inner.sessions.read().await;
            let abandoned = tokio::time::timeout(std::time::Duration::from_millis(50), sessions.create_session()).await;
            assert!(abandoned.is_err(), "the creation should wait on the lock");
        }
        let (first, _t1) = sessions.create_session().await.unwrap();
        let (second, _t2) = sessions.create_session().await.unwrap();
        assert_eq!(live.load(Ordering::Relaxed), 2, "the abandoned creation still held a slot");
        assert!(sessions.has_session(&first).await.unwrap() && sessions.has_session(&second).await.unwrap());
    }
}
