//! Pause points for the fault suite: `DOCDEX_TEST_PAUSE_AT=<name>` makes the process stop at
//! the named point of a run (after printing `docdex: paused at <name>` to stderr) until it is
//! killed, so a test can `kill -9` the real binary exactly inside a crash window (between the
//! symbol-store commit and the impact-graph write, just before a generation switch). Unset, a
//! pause point costs one cached environment lookup.

use std::sync::OnceLock;

/// Stops here forever when `DOCDEX_TEST_PAUSE_AT` names this point.
pub fn pause_point(name: &str) {
    static AT: OnceLock<Option<String>> = OnceLock::new();
    let at = AT.get_or_init(|| std::env::var("DOCDEX_TEST_PAUSE_AT").ok().filter(|s| !s.is_empty()));
    if at.as_deref() == Some(name) {
        eline!("docdex: paused at {name}");
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
}
