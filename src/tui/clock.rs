//! Time as the TUI sees it. Debouncing, spinners and "indexed 3 min ago" all
//! read the clock through this trait, so tests and snapshots can pin time and
//! step it forward instead of sleeping.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A source of monotonic and wall-clock time.
pub trait Clock: Send + Sync {
    /// Monotonic time, for debouncing and animation.
    fn now(&self) -> Instant;
    /// Wall-clock time in milliseconds since the Unix epoch, for "3 min ago".
    fn epoch_ms(&self) -> u64;
}

/// The real clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn epoch_ms(&self) -> u64 {
        SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
    }
}

/// A clock that only moves when told to (tests, snapshots). Clones share the time.
#[derive(Debug, Clone)]
pub struct ManualClock {
    base: Instant,
    offset_ms: Arc<AtomicU64>,
    epoch_base_ms: u64,
}

impl ManualClock {
    /// A clock frozen at `epoch_ms` wall time.
    pub fn new(epoch_ms: u64) -> ManualClock {
        ManualClock { base: Instant::now(), offset_ms: Arc::new(AtomicU64::new(0)), epoch_base_ms: epoch_ms }
    }

    /// Moves time forward.
    pub fn advance(&self, by: Duration) {
        self.offset_ms.fetch_add(by.as_millis() as u64, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.base + Duration::from_millis(self.offset_ms.load(Ordering::SeqCst))
    }

    fn epoch_ms(&self) -> u64 {
        self.epoch_base_ms + self.offset_ms.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_advanced() {
        let c = ManualClock::new(1_000_000);
        let t0 = c.now();
        assert_eq!(c.now(), t0);
        c.advance(Duration::from_millis(250));
        assert_eq!(c.now() - t0, Duration::from_millis(250));
        assert_eq!(c.epoch_ms(), 1_000_250);
        let shared = c.clone();
        shared.advance(Duration::from_secs(1));
        assert_eq!(c.epoch_ms(), 1_001_250);
    }
}
