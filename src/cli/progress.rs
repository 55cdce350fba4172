//! The indexing progress bar (files, MB, ETA) on a terminal's stderr.

use crate::engine::protocol::IndexProgress;
use crate::engine::protocol::ProgressSink;
use crate::engine::protocol::ProgressUnit;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

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
}

impl Bar {
    /// A bar; hidden unless `wanted` and stderr is a terminal.
    pub fn new(wanted: bool) -> Bar {
        if !wanted || !std::io::stderr().is_terminal() {
            return Bar { bar: None, said_searchable: AtomicBool::new(false) };
        }
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr_with_hz(10));
        let style = ProgressStyle::with_template(&format!(
            "{{spinner}} {{msg:>10}} [{}] {{bytes}}/{{total_bytes}} · {{prefix}} · ETA {{eta}}",
            bar_spec()
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(with_eta(style));
        Bar { bar: Some(bar), said_searchable: AtomicBool::new(false) }
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
            // phase's own count, in the unit the engine names.
            let (done, total, unit) = p.measure();
            if unit != ProgressUnit::Files {
                let unit = unit.noun(2);
                if b.message() != p.phase {
                    let style = ProgressStyle::with_template(&format!(
                        "{{spinner}} {{msg:>10}} [{}] {{pos}}/{{len}} {unit} · ETA {{eta}}",
                        bar_spec()
                    ))
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> ");
                    b.set_style(with_eta(style));
                    b.reset_eta();
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

/// The bar's `{eta}`: indicatif's estimate, or `…` while nothing is done yet (its estimate
/// is then 0s, which read as "done" beside `0/2158 chunks`).
fn with_eta(style: ProgressStyle) -> ProgressStyle {
    style.with_key("eta", |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
        let _ = w.write_str(&eta_text(state.pos(), state.eta()));
    })
}

fn eta_text(done: u64, eta: std::time::Duration) -> String {
    if done == 0 {
        "…".into()
    } else {
        format!("{:#}", indicatif::HumanDuration(eta))
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
        assert_eq!(eta_text(0, std::time::Duration::ZERO), "…");
        assert_eq!(eta_text(0, std::time::Duration::from_secs(90)), "…");
        assert_eq!(
            eta_text(5, std::time::Duration::from_secs(90)),
            format!("{:#}", indicatif::HumanDuration(std::time::Duration::from_secs(90)))
        );
    }
}
