//! `docdex eval`: how well search finds the files a change touched, on this repository
//! (`Engine::eval`), printed as a table with the worst misses, or as JSON.

use super::output::{count, shown, visible_text, Out};
use super::progress;
use super::RepoArg;
use crate::engine::protocol::{
    CompareWith, EvalReport, EvalRequest, EvalRun, GitSetOptions, QueryOutcome, QuerySource, KEPT_RANKING,
};
use crate::engine::Engine;
use crate::error::Error;
use std::fmt::Write as _;
use std::path::PathBuf;

/// `docdex eval` flags.
#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    #[command(flatten)]
    repo: RepoArg,
    /// Build the queries from the repository's git history (the default without --queries).
    #[arg(long, conflicts_with = "queries")]
    from_git: bool,
    /// With --from-git: how many queries (`-n`, as every other command's `--limit`; `--n`, the
    /// flag's old long name, still works, tour16 F3).
    #[arg(long = "limit", short = 'n', alias = "n", default_value_t = 50, conflicts_with = "queries")]
    n: usize,
    /// With --from-git: only commits after this date: YYYY-MM-DD [HH:MM], "3 weeks ago",
    /// "last month", yesterday, @UNIX_SECONDS, "last monday", "march 1" [YEAR] or "noon
    /// yesterday"; anything else (a bare year, "xx 5") is refused, as git would misread it.
    #[arg(long, conflicts_with = "queries")]
    since: Option<String>,
    /// With --from-git: the shuffle seed (the same seed and history give the same queries).
    #[arg(long, default_value_t = 1, conflicts_with = "queries")]
    seed: u64,
    /// Read the queries from a file: JSON lines of {"id", "query", "gold": [paths]}.
    #[arg(long)]
    queries: Option<PathBuf>,
    /// Also score a second configuration: a config file, or section.key=value settings on top of
    /// the current one (repeat for several, e.g. --compare search.hybrid=false).
    #[arg(long, value_name = "CONFIG")]
    compare: Vec<String>,
    /// How many of the worst-ranked queries to show.
    #[arg(long, default_value_t = 5)]
    worst: usize,
    /// Print the whole report (every query's ranking) as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `eval`.
pub fn run(engine: &Engine, out: &Out, args: EvalArgs) -> anyhow::Result<()> {
    let path = args.repo.resolve()?;
    let source = match args.queries {
        Some(file) => QuerySource::File(file),
        None => QuerySource::Git(GitSetOptions { n: args.n, since: args.since, seed: args.seed }),
    };
    let compare = compare_with(&args.compare)?;
    if !args.json {
        // `--repo .` was printed as `.`: the repository by its absolute path, as without --repo.
        let shown_path = std::path::absolute(&path).unwrap_or_else(|_| path.clone());
        out.note(&format!("evaluating search on {}", shown(&shown_path)));
    }
    let bar = progress::Bar::new(!args.json);
    let report = engine.eval(&path, &EvalRequest { source, compare, worst: args.worst }, &bar);
    bar.finish();
    let report = report?;
    if args.json {
        out.json(&report)?;
    } else {
        // Queries come from commit messages and paths from the repository: shown, not obeyed.
        out.block(&visible_text(&render(&report)));
    }
    Ok(())
}

/// What `--compare` values ask for: one config file, or `section.key=value` settings.
fn compare_with(values: &[String]) -> Result<Option<CompareWith>, Error> {
    match values {
        [] => Ok(None),
        [one] if std::path::Path::new(one).is_file() => Ok(Some(CompareWith::File(PathBuf::from(one)))),
        settings => {
            // A file among several values was called "neither a config file that exists nor a
            // setting", though it exists.
            if let Some(f) = settings.iter().find(|s| std::path::Path::new(s).is_file()) {
                return Err(Error::BadRequest(format!(
                    "--compare {f:?} is a config file given with other --compare values: compare one file, or settings on top of the current configuration (put these settings in the file instead)"
                )));
            }
            if let Some(s) = settings.iter().find(|s| !s.contains('=')) {
                // A directory was "neither a config file that exists ..." though it exists.
                if std::path::Path::new(s).is_dir() {
                    return Err(Error::BadRequest(format!("--compare {s:?} is a directory, not a config file")));
                }
                return Err(Error::BadRequest(format!(
                    "--compare {s:?} is neither a config file that exists nor a section.key=value setting"
                )));
            }
            Ok(Some(CompareWith::Overrides(settings.to_vec())))
        }
    }
}

/// Why tried commits made no query, when some did not.
fn dropped(g: &crate::engine::protocol::GitSetStats) -> String {
    let why = g.dropped_reasons();
    if why.is_empty() {
        String::new()
    } else {
        format!("; dropped: {}", why.join(", "))
    }
}

/// Why commits read were not candidates (`skipped` in the JSON), on a line of its own.
fn skipped(g: &crate::engine::protocol::GitSetStats) -> String {
    let why = g.skipped_reasons();
    if why.is_empty() {
        String::new()
    } else {
        format!("\nskipped: {}", why.join(", "))
    }
}

/// The human report: where the queries came from, one row per configuration, the worst misses.
pub fn render(r: &EvalReport) -> String {
    let mut s = String::new();
    let _ = match &r.git {
        Some(g) => writeln!(
            s,
            "{} from git history ({} read{}, {} qualified, {} tried{}){}{}",
            count(r.queries.len(), "query"),
            count(g.scanned, "commit"),
            g.oldest.as_deref().map(|d| format!(" back to {d}")).unwrap_or_default(),
            g.candidates,
            g.tried,
            dropped(g),
            skipped(g),
            if g.shallow {
                "\nnote: a shallow clone: only its fetched history was read (`git fetch --unshallow` for all of it)"
            } else {
                ""
            }
        ),
        None => writeln!(s, "{} from {}", count(r.queries.len(), "query"), r.source),
    };
    // The label column fits the longest label whole: cut at 28 characters, a compared file's
    // name, the later settings and the mode were lost, and two compares could read alike.
    let labels: Vec<String> = r.runs.iter().map(|run| format!("{} ({})", run.label, run.mode)).collect();
    let width = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0).max(28);
    let _ = writeln!(
        s,
        "{:<width$} {:>4} {:>6} {:>6} {:>6} {:>7} {:>10}",
        "", "n", "R@1", "R@5", "R@10", "MRR@10", "median ms"
    );
    for (run, label) in r.runs.iter().zip(&labels) {
        let m = &run.metrics;
        let _ = writeln!(
            s,
            "{label:<width$} {:>4} {:>6.3} {:>6.3} {:>6.3} {:>7.3} {:>10.2}",
            m.n, m.recall_at_1, m.recall_at_5, m.recall_at_10, m.mrr_at_10, run.median_ms
        );
        if let Some(n) = &run.notice {
            let _ = writeln!(s, "  note: {n}");
        }
        for w in &run.warnings {
            let _ = writeln!(s, "  warning: {w}");
        }
    }
    for run in &r.runs {
        worst(&mut s, run);
    }
    s
}

fn worst(s: &mut String, run: &EvalRun) {
    if run.worst.is_empty() {
        return;
    }
    let _ = writeln!(s, "\nworst misses ({}):", run.label);
    for id in &run.worst {
        let Some(o) = run.outcomes.iter().find(|o| &o.id == id) else { continue };
        let _ =
            writeln!(s, "  {}  R@10 {:.2}  MRR {:.2}  {}", o.id, o.recall(10), o.reciprocal_rank, clip(&o.query, 100));
        let _ = writeln!(s, "      answer: {}", answers(o));
        let top: Vec<&str> = o.ranking.iter().take(3).map(String::as_str).collect();
        let _ = writeln!(s, "      found:  {}", if top.is_empty() { "nothing".to_string() } else { top.join(", ") });
    }
}

fn answers(o: &QueryOutcome) -> String {
    o.gold
        .iter()
        .zip(&o.gold_ranks)
        .map(|(g, r)| match r {
            Some(r) => format!("{g} (rank {r})"),
            None if o.ranking.is_empty() => format!("{g} (not found)"),
            // The ranking keeps 20 files: shorter, it is every file search found.
            None if o.ranking.len() < KEPT_RANKING => {
                format!("{g} (not found; search found {})", count(o.ranking.len(), "other file"))
            }
            None => format!("{g} (not in the top {})", o.ranking.len()),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut t: String = text.chars().take(max - 1).collect();
    t.push('…');
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(label: &str) -> EvalRun {
        EvalRun {
            label: label.into(),
            mode: "bm25".into(),
            notice: None,
            warnings: Vec::new(),
            metrics: serde_json::from_value(serde_json::json!({"n": 3, "recall_at_1": 0.5, "recall_at_5": 0.75, "recall_at_10": 1.0, "mrr_at_10": 0.625})).expect("metrics"),
            median_ms: 2.5,
            worst: Vec::new(),
            outcomes: Vec::new(),
        }
    }

    #[test]
    fn a_compare_file_with_other_values_is_named_as_a_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("other.toml");
        std::fs::write(&file, "[search]\nhybrid = false\n").expect("write");
        let file = file.to_string_lossy().into_owned();
        let both = [file.clone(), "search.hybrid=false".to_string()];
        let err = compare_with(&both).unwrap_err().to_string();
        assert!(err.contains("is a config file given with other --compare values"), "{err}");
        assert_eq!(compare_with(&both[..1]).unwrap(), Some(CompareWith::File(file.into())));
        let missing = ["nowhere.toml".to_string()];
        assert!(compare_with(&missing).unwrap_err().to_string().contains("neither a config file"));
        assert_eq!(compare_with(&both[1..]).unwrap(), Some(CompareWith::Overrides(both[1..].to_vec())));
    }

    #[test]
    fn long_compare_labels_are_printed_whole_with_their_mode_and_the_columns_line_up() {
        let long = "search.fusion=weighted search.keyword_weight=0.5";
        let report = EvalReport {
            repo: "/r".into(),
            source: "q.jsonl".into(),
            git: None,
            queries: Vec::new(),
            runs: vec![run("current"), run(long)],
        };
        let text = render(&report);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[2].starts_with("current (bm25) "), "{text}");
        assert!(lines[3].starts_with(&format!("{long} (bm25) ")), "{text}");
        // Every figure column ends where the header's does.
        let end = |l: &str, col: &str| l.find(col).map(|i| i + col.len());
        assert_eq!(end(lines[1], "MRR@10"), end(lines[2], "0.625"), "{text}");
        assert_eq!(end(lines[2], "0.625"), end(lines[3], "0.625"), "{text}");
    }
}
