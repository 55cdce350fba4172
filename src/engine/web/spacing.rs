//! Rate limits that hold across processes: at least `[web] min_spacing_ms` between two
//! discovery queries, at least `[web.scraper] request_delay_ms` between two fetches from one
//! domain, and a longer pause after a 429 or 5xx answer.
//!
//! Every docdex process on the machine shares one small JSON file of "next free slot" times
//! (`state/locks/web_spacing.json`), read and written under an OS file lock
//! (`web_spacing.lock`). Taking a slot is a reservation: the lock is held only while the file
//! is read and rewritten, never while waiting, so two processes asking at once get consecutive
//! slots instead of both waking at the same moment.

use crate::engine::fsutil::{now_ms, read_json, replace_json, FileLock};
use crate::error::Result;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Entries older than this are dropped when the file is rewritten.
const FORGET_AFTER_MS: u64 = 3_600_000;
/// A slot further ahead than this is not a real queue (the longest backoff is a minute): a
/// clock set back, a corrupt or hand-edited book. It is treated as free now instead of being
/// slept on (a slot in the year 5138 made every search wait forever; the largest number
/// overflowed).
const MAX_AHEAD_MS: u64 = 600_000;

/// The shared slot book.
#[derive(Debug, Clone)]
pub struct Spacer {
    lock: PathBuf,
    book: PathBuf,
}

impl Spacer {
    /// The book under `locks_dir`.
    pub fn new(locks_dir: &Path) -> Spacer {
        Spacer { lock: locks_dir.join("web_spacing.lock"), book: locks_dir.join("web_spacing.json") }
    }

    /// Reserves the next slot for `key` at least `gap` after the previous one; returns how
    /// long the caller must wait before using it (zero when the slot is now).
    pub fn reserve(&self, key: &str, gap: Duration) -> Result<Duration> {
        let _held = FileLock::acquire(&self.lock)?;
        let now = now_ms();
        let mut book: BTreeMap<String, u64> = read_json(&self.book).ok().flatten().unwrap_or_default();
        let booked = book.get(key).copied().unwrap_or(0);
        let free_at = if booked > now.saturating_add(MAX_AHEAD_MS) {
            tracing::warn!(key, booked, now, "a rate-limit slot far in the future was ignored");
            now
        } else {
            booked.max(now)
        };
        book.insert(key.to_string(), free_at.saturating_add(gap.as_millis() as u64));
        book.retain(|_, t| *t + FORGET_AFTER_MS > now);
        replace_json(&self.book, &book)?;
        Ok(Duration::from_millis(free_at - now))
    }

    /// Marks a request to `key` as just finished: the next one starts at least `gap` from now,
    /// so requests are spaced from the end of the previous one, however long it took.
    pub fn finished(&self, key: &str, gap: Duration) -> Result<()> {
        self.back_off(key, gap)
    }

    /// Pushes `key`'s next slot to at least `pause` from now (after a 429 or 5xx answer).
    pub fn back_off(&self, key: &str, pause: Duration) -> Result<()> {
        let _held = FileLock::acquire(&self.lock)?;
        let now = now_ms();
        let mut book: BTreeMap<String, u64> = read_json(&self.book).ok().flatten().unwrap_or_default();
        let until = now.saturating_add(pause.as_millis() as u64);
        let slot = book.entry(key.to_string()).or_insert(0);
        *slot = if *slot > now.saturating_add(MAX_AHEAD_MS) { until } else { (*slot).max(until) };
        replace_json(&self.book, &book)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_reservations_are_spaced_and_backoff_pushes_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let s = Spacer::new(dir.path());
        let gap = Duration::from_millis(2000);
        assert_eq!(s.reserve("ddg", gap).unwrap(), Duration::ZERO);
        let second = s.reserve("ddg", gap).unwrap();
        assert!(second > Duration::from_millis(1900) && second <= gap, "{second:?}");
        let third = s.reserve("ddg", gap).unwrap();
        assert!(third > Duration::from_millis(3900), "{third:?}");
        // Another key is independent; a second process sees the same book.
        assert_eq!(Spacer::new(dir.path()).reserve("example.org", gap).unwrap(), Duration::ZERO);
        s.back_off("example.org", Duration::from_secs(30)).unwrap();
        assert!(s.reserve("example.org", gap).unwrap() > Duration::from_secs(29));
    }

    #[test]
    fn a_slot_far_in_the_future_is_not_slept_on() {
        let dir = tempfile::tempdir().unwrap();
        let s = Spacer::new(dir.path());
        let gap = Duration::from_millis(2000);
        for bogus in [99_999_999_999_999u64, u64::MAX] {
            std::fs::write(dir.path().join("web_spacing.json"), format!("{{\"ddg\": {bogus}}}")).unwrap();
            assert_eq!(s.reserve("ddg", gap).unwrap(), Duration::ZERO, "{bogus}");
            let next = s.reserve("ddg", gap).unwrap();
            assert!(next <= gap, "the queue starts again from now: {next:?}");
            std::fs::write(dir.path().join("web_spacing.json"), format!("{{\"ddg\": {bogus}}}")).unwrap();
            s.back_off("ddg", Duration::from_secs(5)).unwrap();
            let after = s.reserve("ddg", gap).unwrap();
            assert!(after <= Duration::from_secs(5), "a backoff replaces a bogus slot: {after:?}");
        }
    }
}
