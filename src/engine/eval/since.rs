//! `--since` for a query set from git history, checked before `git log` sees it. `git log`
//! reads any text as some date without a word (`yesterdayy` and `banana` as now, `2026-13-45`
//! as a day in November, `2024-05` as the 5th of this month), so eval would read a window the
//! user never meant. Forms whose meaning is plain pass unchanged but for `today`, which git
//! reads as this very second (so no commit was ever newer): it becomes `midnight`, the start of
//! today. git's own weekday and month forms ("last monday", "march 1", "noon yesterday") are
//! recognised word by word here and then confirmed by git's careful date reader (the one behind
//! expiry dates, which says when it understood nothing). That reader alone is not enough: it
//! half-reads what it partly knows (`2026` as now, `2025` as a year ago today, `5`, `xx 5` and
//! `1 banana ago` as a day of this month) without a word. Anything else is refused naming the
//! forms that work.

use crate::error::{Error, Result};
use std::path::Path;

/// The accepted forms, for the error that refuses anything else.
pub const ACCEPTED: &str = "a date YYYY-MM-DD (or YYYY/MM/DD), optionally with a time HH:MM[:SS] after a space or T and a zone Z or +HH:MM; \"N days ago\" (or \"N.days.ago\"; second, minute, hour, day, week, month, year; \"ago\" optional); \"last week\" (month, year, ...); yesterday, today or now; @UNIX_SECONDS; \"last monday\" (a weekday); \"march 1\" or \"1 march\" (a month and a day, optionally a year: \"march 1 2025\"); or \"noon yesterday\" (noon, midnight or tea, with yesterday or today)";

/// The refusal of an empty or blank `since` (an unset shell variable, an empty field from a
/// wrapper): it was read as no `since`, the whole history, without a word (tour24 F7). Refused
/// here, in the engine, so every caller gets the same answer.
pub const EMPTY: &str = "--since is empty: give a date (YYYY-MM-DD, \"3 weeks ago\", @UNIX_SECONDS, ...), or leave --since out to use the whole history";

/// The `--since` text git reads as the user meant `since`; a `bad_request` naming the
/// accepted forms when there is none. `root` is where git runs to read a form docdex does not
/// know itself.
pub fn check(root: &Path, since: &str) -> Result<String> {
    let s = since.trim();
    if s.is_empty() {
        return Err(Error::BadRequest(EMPTY.into()));
    }
    if s.eq_ignore_ascii_case("today") {
        return Ok("midnight".into());
    }
    if is_absolute(s) || is_relative(s) || is_timestamp(s) {
        return Ok(s.to_string());
    }
    // Anything else (`2026`, `5`, `xx 5`, `1 banana ago`, `2024-05`) git reads as some other day
    // without a word: refused here, never asked.
    if is_git_form(s) && git_reads(root, s)?.is_some() {
        return Ok(s.to_string());
    }
    let year = number(s, 4)
        .map(|y| format!(" (for the start of {y}, give {y}-01-01)"))
        .or_else(|| {
            leap_day(s).then(|| " (February 29 is a day of leap years only: give its year, \"feb 29 2024\")".into())
        })
        .unwrap_or_default();
    Err(Error::BadRequest(format!(
        "--since {since:?} is not a date git can read as meant (git would read it as some other date without a word){year}; use {ACCEPTED}"
    )))
}

const WEEKDAYS: &[&str] = &["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];
const MONTHS: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// The name's index in `names`, by its whole name or its first three letters (`mon`, `sep`).
fn named(names: &[&str], w: &str) -> Option<usize> {
    names.iter().position(|n| *n == w || (w.len() == 3 && n.starts_with(w)))
}

/// git's forms docdex passes on: `last WEEKDAY`; a month and a day in either order, optionally
/// then a year (`march 1`, `1st march 2025`); `noon|midnight|tea yesterday|today` in either order.
fn is_git_form(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    let words: Vec<&str> = lower.split(|c: char| c.is_whitespace() || c == ',').filter(|w| !w.is_empty()).collect();
    let time_of_day = |w: &str| matches!(w, "noon" | "midnight" | "tea");
    let day_word = |w: &str| matches!(w, "yesterday" | "today");
    match words[..] {
        ["last", day] => named(WEEKDAYS, day).is_some(),
        [x, y] if (time_of_day(x) && day_word(y)) || (day_word(x) && time_of_day(y)) => true,
        [x, y] => month_day(x, y, None) || month_day(y, x, None),
        [x, y, year] => month_day(x, y, Some(year)) || month_day(y, x, Some(year)),
        _ => false,
    }
}

/// `month` names a month and `day` (digits, `1st`, `22nd`) is a day it has, in `year` (four
/// digits from 1970) when one is given.
fn month_day(month: &str, day: &str, year: Option<&str>) -> bool {
    let Some(m) = named(MONTHS, month) else { return false };
    let digits = day.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &day[digits.len()..];
    if !matches!(suffix, "" | "st" | "nd" | "rd" | "th") || digits.is_empty() || digits.len() > 2 {
        return false;
    }
    let Ok(d) = digits.parse::<u32>() else { return false };
    let y = match year {
        Some(y) => match number(y, 4) {
            Some(y) if y >= 1970 => y,
            _ => return false,
        },
        // A year February has 28 days in: without a year git reads February 29 as this year's
        // (March 1 three years in four), so a day not in every year needs its year.
        None => 2023,
    };
    (1..=days_in(y, m as u32 + 1)).contains(&d)
}

/// `s` is February 29 without a year (`feb 29`, `29th February`), which git reads as March 1
/// in a year without one.
fn leap_day(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    let words: Vec<&str> = lower.split(|c: char| c.is_whitespace() || c == ',').filter(|w| !w.is_empty()).collect();
    let feb_29 = |m: &str, d: &str| named(MONTHS, m) == Some(1) && d.trim_end_matches(char::is_alphabetic) == "29";
    matches!(words[..], [x, y] if feb_29(x, y) || feb_29(y, x))
}

/// Days in month `m` (1 to 12) of year `y`; 0 for no month.
fn days_in(y: u32, m: u32) -> u32 {
    let leap = y.is_multiple_of(4) && (!y.is_multiple_of(100) || y.is_multiple_of(400));
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => 0,
    }
}

/// The Unix time git's careful date reader gives `s`, `None` when it could not read it. Its
/// special words (`never`, `all`, `false`: 0 or the end of time for an expiry date) mean
/// nothing to `git log --since` and count as unread.
fn git_reads(root: &Path, s: &str) -> Result<Option<u64>> {
    let setting = format!("docdex.since={s}");
    let args = ["-c", setting.as_str(), "config", "--type=expiry-date", "docdex.since"];
    let out = crate::engine::git::output(root, &args, "--since")?;
    if !out.status.success() {
        tracing::debug!(since = s, git = %String::from_utf8_lossy(&out.stderr).trim(), "git cannot read --since");
        return Ok(None);
    }
    let seconds = String::from_utf8_lossy(&out.stdout).trim().parse::<u64>().ok();
    Ok(seconds.filter(|t| *t > 0 && *t < u64::MAX))
}

const UNITS: &[&str] = &["second", "minute", "hour", "day", "week", "month", "year"];

fn is_unit(w: &str) -> bool {
    let w = w.to_ascii_lowercase();
    UNITS.iter().any(|u| w == *u || w.strip_suffix('s') == Some(u))
}

/// `3 days ago`, `3.days.ago`, `2 weeks`, `last month`, `yesterday`, `today`, `now`.
fn is_relative(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    if matches!(lower.as_str(), "yesterday" | "today" | "now") {
        return true;
    }
    let words: Vec<&str> = lower.split(|c: char| c.is_whitespace() || c == '.').filter(|w| !w.is_empty()).collect();
    let words = match words.split_last() {
        Some((&"ago", rest)) => rest,
        _ => &words[..],
    };
    match words {
        [n, unit] => (n.chars().all(|c| c.is_ascii_digit()) || *n == "last") && is_unit(unit),
        _ => false,
    }
}

/// `@1700000000`.
fn is_timestamp(s: &str) -> bool {
    s.strip_prefix('@').is_some_and(|d| !d.is_empty() && d.len() <= 12 && d.chars().all(|c| c.is_ascii_digit()))
}

/// `2024-05-06`, `2024/05/06`, with `[ T]HH:MM[:SS]` and a zone `Z`, `+HH:MM`, `-HHMM`.
fn is_absolute(s: &str) -> bool {
    let (date, time) = match s.find([' ', 'T']) {
        Some(i) => (&s[..i], Some(s[i + 1..].trim())),
        None => (s, None),
    };
    valid_date(date) && time.is_none_or(valid_time)
}

fn number(s: &str, digits: usize) -> Option<u32> {
    (s.len() == digits && s.chars().all(|c| c.is_ascii_digit())).then(|| s.parse().ok()).flatten()
}

fn valid_date(s: &str) -> bool {
    let sep = if s.contains('/') { '/' } else { '-' };
    let parts: Vec<&str> = s.split(sep).collect();
    let [y, m, d] = parts[..] else { return false };
    let (Some(y), Some(m), Some(d)) = (number(y, 4), number(m, 2), number(d, 2)) else { return false };
    y >= 1970 && (1..=days_in(y, m)).contains(&d)
}

fn valid_time(s: &str) -> bool {
    let (clock, zone) = match s.find(['Z', 'z', '+', '-']) {
        Some(i) => (s[..i].trim(), Some(s[i..].trim())),
        None => (s, None),
    };
    let parts: Vec<&str> = clock.split(':').collect();
    let hms: Option<Vec<u32>> = parts.iter().map(|p| number(p, 2)).collect();
    let clock_ok = match hms.as_deref() {
        Some([h, m]) => *h < 24 && *m < 60,
        Some([h, m, sec]) => *h < 24 && *m < 60 && *sec < 60,
        _ => false,
    };
    clock_ok && zone.is_none_or(valid_zone)
}

fn valid_zone(z: &str) -> bool {
    if z.eq_ignore_ascii_case("z") {
        return true;
    }
    let Some(rest) = z.strip_prefix(['+', '-']) else { return false };
    let digits = rest.replacen(':', "", 1);
    number(&digits, 4).is_some_and(|hm| hm / 100 <= 14 && hm % 100 < 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(since: &str) -> Result<String> {
        super::check(&std::env::temp_dir(), since)
    }

    #[test]
    fn dates_git_reads_as_meant_pass_and_the_rest_are_refused() {
        for ok in [
            "2024-05-06",
            "2024/05/06",
            "2024-02-29",
            "2024-05-06 10:00",
            "2024-05-06T10:00:00Z",
            "2024-05-06T10:00:00+02:00",
            "2024-05-06 10:00:00 -0500",
            "3 days ago",
            "3.days.ago",
            "2 weeks",
            "1 month ago",
            "last week",
            "Yesterday",
            "today",
            "now",
            "@1700000000",
            "  2024-05-06 ",
            // git's own forms, read by git.
            "last monday",
            "march 1",
            "noon yesterday",
            "2 weeks ago",
            "Last Sunday",
            "last fri",
            "1 march",
            "March 1, 2025",
            "1st march",
            "feb 29 2024",
            "29 February 2028",
            "yesterday noon",
            "midnight today",
        ] {
            assert!(check(ok).is_ok(), "{ok:?} refused: {:?}", check(ok));
        }
        // git reads `today` as now, after every commit; the start of today is meant.
        assert_eq!(check("Today").unwrap(), "midnight");
        assert_eq!(check(" 3 days ago ").unwrap(), "3 days ago");
        assert_eq!(check(" last monday ").unwrap(), "last monday");
        for bad in [
            "yesterdayy",
            "banana",
            "monday",
            "tomorrow",
            "next friday",
            "never",
            "all",
            "2026-13-45",
            "2023-02-29",
            "2024-04-31",
            "2024-05",
            "2024-5-6",
            "2024-05-06 25:00",
            "2024-05-06T10:61",
            "2024-05-06 lunch",
            "days ago",
            "@",
            "@12ab",
            // git half-reads these without a word: 2026 as now, 2025 as a year ago today, the
            // rest as a day of this month.
            "2026",
            "2025",
            "5",
            "xx 5",
            "1 banana ago",
            "march",
            "march 35",
            "feb 30",
            // git reads February 29 without a year as this year's: March 1 in three years of four.
            "feb 29",
            "29th february",
            "march 1 25",
            "monday 5",
            "last march",
            "noon",
            "yesterday 10:00",
            "2 weeks 3 days ago",
        ] {
            let err = check(bad).expect_err(bad).to_string();
            assert!(err.contains("YYYY-MM-DD") && err.contains("days ago") && err.contains("last monday"), "{err}");
        }
        assert!(check("2026").unwrap_err().to_string().contains("for the start of 2026, give 2026-01-01"));
        assert!(check("Feb 29").unwrap_err().to_string().contains("give its year, \"feb 29 2024\""));
        // Empty or blank: said so, never read as no `since` (tour24 F7).
        for empty in ["", " \t "] {
            assert!(matches!(check(empty), Err(Error::BadRequest(m)) if m == EMPTY), "{empty:?}");
        }
    }
}
