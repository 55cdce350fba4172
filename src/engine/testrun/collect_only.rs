//! A pytest run that collected tests and ran none (`--collect-only`, `--co`, in `[tests]
//! command` or `addopts`): its `2 tests collected in 0.01s` line is a count of zero tests run,
//! so the run is `no_tests`. It was `passed` ("the output gave no test counts"), as if the
//! collected tests had run green.

/// The tests a `--collect-only` summary line (its `=` frame taken off) says were collected:
/// `2 tests collected in 0.01s`, `1/3 tests collected (2 deselected) in 0.01s`, `1 test
/// collected in 0.01s`.
pub(super) fn collected(said: &str) -> Option<u32> {
    let (count, rest) = said.split_once(' ')?;
    let rest = rest.strip_prefix("tests collected").or_else(|| rest.strip_prefix("test collected"))?;
    if !rest.contains(" in ") {
        return None;
    }
    count.split('/').next()?.parse().ok()
}

/// The note for a run that collected tests and ran none, if its output says so.
pub(super) fn note(lines: &[String]) -> Option<String> {
    let n = lines.iter().rev().find_map(|l| collected(l.trim().trim_matches('=').trim()))?;
    Some(format!(
        "pytest collected {n} test{} and ran none (--collect-only): nothing was run",
        if n == 1 { "" } else { "s" }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collect_only_summaries_are_read() {
        assert_eq!(collected("2 tests collected in 0.01s"), Some(2));
        assert_eq!(collected("1 test collected in 0.01s"), Some(1));
        assert_eq!(collected("1/3 tests collected (2 deselected) in 0.01s"), Some(1));
        assert_eq!(collected("2 passed in 0.01s"), None);
        assert_eq!(collected("tests collected"), None);
        let lines =
            ["tests/test_a.py::test_a".to_string(), String::new(), "===== 3 tests collected in 0.09s =====".into()];
        assert_eq!(
            note(&lines).as_deref(),
            Some("pytest collected 3 tests and ran none (--collect-only): nothing was run")
        );
    }

    #[test]
    fn a_collect_only_run_counts_as_read_and_zero() {
        let o = super::super::parse::pytest("tests/test_a.py::test_a\n\n1 test collected in 0.01s\n", "/r", "");
        assert!(o.counted && o.passed + o.failed + o.skipped == 0, "{o:?}");
    }
}
