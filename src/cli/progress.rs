//! The indexing progress bar (files, MB, ETA) on a terminal's stderr.
//!
//! The ETA is docdex's own ([`Eta`]), not indicatif's: a run goes through phases (the text
//! pass, then the parse pass, embedding) that each count from 0 at rates of their own, and
//! indicatif's estimate carried the last phase's rate over a phase change (or read 0s).

use crate::engine::protocol::IndexProgress;
use crate::engine::protocol::ProgressSink;
use crate::engine::protocol::ProgressUnit;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The bar's part of a template: cyan on blue, or plain when colours are off. indicatif's
/// styling (the `console` crate) reads `NO_COLOR` but lets `CLICOLOR_FORCE` override it, and
/// treats an empty `NO_COLOR` as set; docdex's rule ([`super::output::color_enabled`]: a
/// non-empty `NO_COLOR` always wins) decides here, so the bar never carries a colour the rest
/// of the output would not.
fn bar_spec() -> &'static str {
    if super::output::color_enabled(true) {
        "{bar:30.cyan/blue}"
    } else {
        "{bar:30}"
    }
}

/// A bar that draws only when stderr is a terminal and it is wanted.
pub struct Bar {
    bar: Option<ProgressBar>,
    /// Whether the line saying a text-first index is searchable was printed.
    said_searchable: AtomicBool,
    /// The ETA the bar shows, from the reports of the phase going on.
    eta: Arc<Mutex<Eta>>,
}

impl Bar {
    /// A bar; hidden unless `wanted` and stderr is a terminal.
    pub fn new(wanted: bool) -> Bar {
        let eta = Arc::new(Mutex::new(Eta::default()));
        if !wanted || !std::io::stderr().is_terminal() {
            return Bar { bar: None, said_searchable: AtomicBool::new(false), eta };
        }
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr_with_hz(10));
        let style = ProgressStyle::with_template(&format!(
            "{{spinner}} {{msg:>10}} [{}] {{bytes}}/{{total_bytes}} · {{prefix}} · ETA {{eta}}",
            bar_spec()
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(with_eta(style, &eta));
        Bar { bar: Some(bar), said_searchable: AtomicBool::new(false), eta }
    }

    /// Clears the bar.
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl ProgressSink for Bar {
    fn progress(&self, p: &IndexProgress) {
        if let Some(b) = &self.bar {
            // Embedding counts chunks and `docdex eval` queries, not bytes: the bar shows the
            // phase's own count, in the unit the engine names; a phase of files, its bytes.
            let (done, total, unit) = p.measure();
            let timed = if unit == ProgressUnit::Files { (p.bytes_done, p.bytes_total) } else { (done, total) };
            lock(&self.eta).observe(&p.phase, timed.0, timed.1, Instant::now());
            if unit != ProgressUnit::Files {
                let unit = unit.noun(2);
                if b.message() != p.phase {
                    let style = ProgressStyle::with_template(&format!(
                        "{{spinner}} {{msg:>10}} [{}] {{pos}}/{{len}} {unit} · ETA {{eta}}",
                        bar_spec()
                    ))
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> ");
                    b.set_style(with_eta(style, &self.eta));
                }
                b.set_length(total.max(1));
                b.set_position(done);
                b.set_message(p.phase.clone());
                return;
            }
            if p.phase == "parsing" && !self.said_searchable.swap(true, Ordering::Relaxed) {
                b.println("searchable now: every file answers as text; parsing for symbols and the impact graph");
            }
            b.set_length(p.bytes_total.max(1));
            b.set_position(p.bytes_done);
            b.set_message(p.phase.clone());
            b.set_prefix(format!("{}/{} files", p.files_done, p.files_total));
        }
    }
}

/// The bar's `{eta}`: [`Eta`]'s estimate, or `…` while it has none.
fn with_eta(style: ProgressStyle, eta: &Arc<Mutex<Eta>>) -> ProgressStyle {
    let eta = Arc::clone(eta);
    style.with_key("eta", move |_: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
        let _ = w.write_str(&eta_text(lock(&eta).estimate(Instant::now())));
    })
}

/// The estimator, even if a thread panicked holding it (it holds only numbers).
fn lock(eta: &Mutex<Eta>) -> std::sync::MutexGuard<'_, Eta> {
    eta.lock().unwrap_or_else(PoisonError::into_inner)
}

fn eta_text(eta: Option<Duration>) -> String {
    match eta {
        Some(eta) => format!("{:#}", indicatif::HumanDuration(eta)),
        None => "…".into(),
    }
}

/// Time left in the phase going on, from its own rate: what it has done since it started (or
/// since its count went back) over the time that took, times what is left. A new phase, or a count going back (a
/// run's parse pass counts from 0 after the text pass), starts the estimate again, so no phase
/// is timed by another's rate; there is none (`…`) until a phase has done some of its work
/// for [`Eta::SETTLE`].
#[derive(Debug, Default)]
pub(crate) struct Eta {
    phase: String,
    /// The count and time the estimate starts from.
    start: Option<(u64, Instant)>,
    /// The last report: count done, count in all.
    last: Option<(u64, u64)>,
}

impl Eta {
    /// How long a phase runs before its rate is trusted.
    const SETTLE: Duration = Duration::from_secs(1);

    /// Takes one report: `done` of `total` in `phase` at `now`.
    pub(crate) fn observe(&mut self, phase: &str, done: u64, total: u64, now: Instant) {
        let went_back = self.last.is_some_and(|(d, _)| done < d);
        if phase != self.phase || went_back || self.start.is_none() {
            self.phase = phase.to_string();
            self.start = Some((done, now));
        }
        self.last = Some((done, total));
    }

    /// The time left at `now`, if the phase has a rate yet.
    pub(crate) fn estimate(&self, now: Instant) -> Option<Duration> {
        let ((from, since), (done, total)) = (self.start?, self.last?);
        let elapsed = now.saturating_duration_since(since);
        if done <= from || elapsed < Self::SETTLE {
            return None;
        }
        let left = elapsed.as_secs_f64() * total.saturating_sub(done) as f64 / (done - from) as f64;
        Some(Duration::from_secs_f64(left))
    }
}

/// A one-line counter (`⠋ 3/7 packages · serde@1.0.200`, the count done and what is being
/// worked on) on a terminal's stderr; hidden otherwise, so captured output holds only the summary.
pub struct Ticker {
    bar: Option<ProgressBar>,
    unit: String,
}

impl Ticker {
    /// A ticker counting `unit`s; hidden unless `wanted` and stderr is a terminal.
    pub fn new(wanted: bool, unit: &str) -> Ticker {
        if !wanted || !std::io::stderr().is_terminal() {
            return Ticker { bar: None, unit: unit.into() };
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(10));
        let style = ProgressStyle::with_template(&format!("{{spinner}} {{pos}} {unit} · {{msg}}"))
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        bar.set_style(style);
        bar.enable_steady_tick(std::time::Duration::from_millis(100));
        Ticker { bar: Some(bar), unit: unit.into() }
    }

    /// Says how many there are once known: the line reads `2/7 packages · ...`.
    pub fn total(&self, n: u64) {
        if let Some(b) = &self.bar {
            if b.length() != Some(n) {
                let style =
                    ProgressStyle::with_template(&format!("{{spinner}} {{pos}}/{{len}} {} · {{msg}}", self.unit))
                        .unwrap_or_else(|_| ProgressStyle::default_spinner());
                b.set_style(style);
                b.set_length(n);
            }
        }
    }

    /// Names what is being worked on now, without counting it done.
    pub fn working_on(&self, what: &str) {
        if let Some(b) = &self.bar {
            b.set_message(what.to_string());
        }
    }

    /// Counts one more done.
    pub fn inc(&self) {
        if let Some(b) = &self.bar {
            b.inc(1);
        }
    }

    /// Clears the line.
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_waits_for_the_first_unit_done() {
        let t0 = Instant::now();
        let mut eta = Eta::default();
        eta.observe("embedding", 0, 2158, t0);
        assert_eq!(eta.estimate(t0 + Duration::from_secs(90)), None, "nothing done yet");
        assert_eq!(eta_text(None), "…");
        eta.observe("embedding", 100, 2158, t0 + Duration::from_secs(10));
        assert_eq!(eta.estimate(t0 + Duration::from_secs(10)), Some(Duration::from_secs_f64(205.8)));
        assert_eq!(
            eta_text(Some(Duration::from_secs(90))),
            format!("{:#}", indicatif::HumanDuration(Duration::from_secs(90)))
        );
    }

    /// A first index's text pass reads 100 MB in 10 s; its parse pass then counts 20 MB from 0,
    /// far slower. Each phase's ETA comes from its own rate: the parse pass has none until it
    /// has run a while (it was timed by the text pass's rate, or read 0s), then its own.
    #[test]
    fn a_phase_change_starts_the_estimate_again() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut eta = Eta::default();
        eta.observe("indexing", 0, 100, at(0));
        eta.observe("indexing", 50, 100, at(5));
        assert_eq!(eta.estimate(at(5)), Some(Duration::from_secs(5)));
        eta.observe("indexing", 100, 100, at(10));
        eta.observe("parsing", 0, 20, at(10));
        assert_eq!(eta.estimate(at(10)), None, "no rate of the parse pass yet");
        eta.observe("parsing", 2, 20, at(20));
        assert_eq!(eta.estimate(at(20)), Some(Duration::from_secs(90)), "2 in 10 s, 18 to go");
        // The same phase counting from 0 again starts again too.
        eta.observe("parsing", 1, 30, at(21));
        assert_eq!(eta.estimate(at(21)), None);
    }
}
