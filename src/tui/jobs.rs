//! Latest-wins job slots (gitui's asyncjob): at most one job runs and at most
//! one waits; a new submission replaces the waiting one. Search-as-you-type
//! uses one slot, so a burst of keystrokes costs at most two searches and the
//! result shown is always for the newest query. Pure state, unit-tested; the
//! worker drives it.

/// One slot's state.
#[derive(Debug)]
pub struct LatestWins<T> {
    running: bool,
    pending: Option<T>,
    replaced: u64,
}

impl<T> Default for LatestWins<T> {
    fn default() -> Self {
        LatestWins { running: false, pending: None, replaced: 0 }
    }
}

impl<T> LatestWins<T> {
    /// Submits a job; returns it back when it should start now (nothing was running).
    pub fn submit(&mut self, job: T) -> Option<T> {
        if self.running {
            if self.pending.replace(job).is_some() {
                self.replaced += 1;
            }
            None
        } else {
            self.running = true;
            Some(job)
        }
    }

    /// The running job finished; returns the next one to start, if any.
    pub fn finish(&mut self) -> Option<T> {
        match self.pending.take() {
            Some(next) => Some(next),
            None => {
                self.running = false;
                None
            }
        }
    }

    /// True while a job runs.
    pub fn is_running(&self) -> bool {
        self.running
    }

    /// Jobs dropped because a newer one replaced them while waiting.
    pub fn replaced(&self) -> u64 {
        self.replaced
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_running_at_most_one_pending_latest_wins() {
        let mut s = LatestWins::default();
        assert_eq!(s.submit("a"), Some("a"));
        assert_eq!(s.submit("ab"), None);
        assert_eq!(s.submit("abc"), None);
        assert_eq!(s.submit("abcd"), None);
        assert_eq!(s.replaced(), 2);
        assert_eq!(s.finish(), Some("abcd"), "only the newest waiting job runs");
        assert!(s.is_running());
        assert_eq!(s.finish(), None);
        assert!(!s.is_running());
        assert_eq!(s.submit("x"), Some("x"), "idle again: starts at once");
    }
}
