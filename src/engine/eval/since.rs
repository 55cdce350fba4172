//! `--since` for a query set from git history, checked before `git log` sees it. `git log`
//! reads any text as some date without a word (`yesterdayy` and `banana` as now, `2026-13-45`
//! as a day in November, `2024-05` as the 5th of this month), so eval would read a window the
//! user never meant. Forms whose meaning is plain pass unchanged but for `today`, which git
//! reads as this very second (so no commit was ever newer): it becomes `midnight`, the start of
//! today. Any other text goes to git's own careful date reader (the one behind expiry dates,
//! which says when it understood nothing), so git's weekday and month forms ("last monday",
//! "march 1", "noon yesterday") work as in `git log --since`; what git cannot read, and a
//! malformed numeric date, is refused naming the forms that work.

use crate::error::{Error, Result};
use std::path::Path;

/// The accepted forms, for the error that refuses anything else.
pub const ACCEPTED: &str = "a date YYYY-MM-DD (or YYYY/MM/DD), optionally with a time HH:MM[:SS] after a space or T and a zone Z or +HH:MM; \"N days ago\" (or \"N.days.ago\"; second, minute, hour, day, week, month, year; \"ago\" optional); \"last week\" (month, year, ...); yesterday, today or now; @UNIX_SECONDS; or any other date git reads, such as \"last monday\" or \"march 1\"";

/// The `--since` text git reads as the user meant `since`; a `bad_request` naming the
/// accepted forms when there is none. `root` is where git runs to read a form docdex does not
/// know itself.
pub fn check(root: &Path, since: &str) -> Result<String> {
    let s = since.trim();
    if s.eq_ignore_ascii_case("today") {
        return Ok("midnight".into());
    }
    if is_absolute(s) || is_relative(s) || is_timestamp(s) {
        return Ok(s.to_string());
    }
    // A numeric date or a timestamp that is not a valid one (`2026-13-45`, `2024-05`, `@12ab`)
    // is a typo git would read as some other day without a word: refused here, never asked.
    if !looks_numeric(s) && git_reads(root, s)?.is_some() {
        return Ok(s.to_string());
    }
    Err(Error::BadRequest(format!(
        "--since {since:?} is not a date git can read as meant (git would read it as some other date without a word); use {ACCEPTED}"
    )))
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

/// `2024-05-06 lunch`, `2024.5.6`, `05/06`: the first word is digits with a date separator;
/// or `@...`, a timestamp.
fn looks_numeric(s: &str) -> bool {
    let first = s.split([' ', 'T']).next().unwrap_or("");
    let date = first.chars().any(|c| c.is_ascii_digit())
        && first.chars().any(|c| matches!(c, '-' | '/' | '.'))
        && first.chars().all(|c| c.is_ascii_digit() || matches!(c, '-' | '/' | '.' | ':'));
    s.starts_with('@') || date
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
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    y >= 1970 && (1..=days).contains(&d)
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
            "",
        ] {
            let err = check(bad).expect_err(bad).to_string();
            assert!(err.contains("YYYY-MM-DD") && err.contains("days ago") && err.contains("last monday"), "{err}");
        }
    }
}
