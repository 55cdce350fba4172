//! Search evaluation (`docdex eval`): how well search finds the files a change touched, on the
//! user's own repository. A query set (read from a file, or built from the repository's git
//! history by [`gitset`]) is run through [`Engine::search`] and scored per file, the way
//! `../shared/eval-dev/score.py` scores a search command: several hits in one file count once,
//! at the rank of the first. A second configuration can be scored on the same queries and
//! index (`--compare`), to see what a setting changes before adopting it.

pub mod gitset;
pub mod since;

use crate::config::Config;
use crate::engine::index::manifest::Manifest;
use crate::engine::index::types::{IndexProgress, ProgressUnit};
use crate::engine::index::ProgressSink;
use crate::engine::search::types::SearchRequest;
use crate::engine::{Engine, IndexOptions};
use crate::error::{Error, Result};
use gitset::{GitSetOptions, GitSetStats};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Hits asked of search per query (their distinct files form the ranking).
const EVAL_HITS: usize = 50;
/// Files of each ranking kept in the report: a shorter ranking is every file search found.
pub const KEPT_RANKING: usize = 20;

/// Where the queries come from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum QuerySource {
    /// Built from the repository's git history.
    Git(GitSetOptions),
    /// Read from a JSON-lines (or JSON array) file of `{"id", "query", "gold"}`.
    File(PathBuf),
    /// Given inline.
    Inline(Vec<EvalQuery>),
}

/// The second configuration `--compare` scores.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompareWith {
    /// A configuration file (a whole `config.toml`; keys it leaves out take their defaults).
    File(PathBuf),
    /// `section.key=value` settings applied on top of the current configuration.
    Overrides(Vec<String>),
}

/// An evaluation to run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct EvalRequest {
    /// The queries.
    pub source: QuerySource,
    /// Also score this configuration.
    #[serde(default)]
    pub compare: Option<CompareWith>,
    /// How many of the worst-ranked queries to list.
    #[serde(default = "default_worst")]
    pub worst: usize,
}

fn default_worst() -> usize {
    5
}

/// One configuration's scores.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct EvalRun {
    /// `current` or what was compared (a file path or the settings).
    pub label: String,
    /// How search retrieved (`bm25` or `hybrid`, from the first query's answer).
    pub mode: String,
    /// Why vectors did not take part, when search said so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
    /// What reading the compared configuration warned of (an unknown key is ignored, so a
    /// misspelt setting compares nothing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The averages.
    pub metrics: Metrics,
    /// Median search time per query, in milliseconds (in process).
    pub median_ms: f64,
    /// The worst-ranked queries' ids, worst first.
    pub worst: Vec<String>,
    /// Every query's outcome, in set order.
    pub outcomes: Vec<QueryOutcome>,
}

/// The report of `docdex eval`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct EvalReport {
    /// The repository evaluated.
    pub repo: PathBuf,
    /// Where the queries came from (`git`, or the file).
    pub source: String,
    /// How the git history was used, for a set built from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitSetStats>,
    /// The queries.
    pub queries: Vec<EvalQuery>,
    /// The current configuration's run, then the compared one.
    pub runs: Vec<EvalRun>,
}

impl Engine {
    /// Brings the repo's index up to date (`sink` sees the progress), builds or reads the query
    /// set, and scores search on it, with the current configuration and, when asked, a second.
    pub fn eval(&self, repo_path: &Path, req: &EvalRequest, sink: &dyn ProgressSink) -> Result<EvalReport> {
        let repo = self.resolve_repo(repo_path)?;
        let (mut queries, source, mut git) = match &req.source {
            QuerySource::Git(opts) => {
                if opts.n == 0 {
                    return Err(Error::BadRequest("-n (--limit, the number of queries) must be at least 1".into()));
                }
                let (q, stats) = gitset::build(&repo.root, opts)?;
                (q, "git".to_string(), Some(stats))
            }
            QuerySource::File(path) => (read_queries(path)?, path.display().to_string(), None),
            QuerySource::Inline(q) => (q.clone(), "inline".to_string(), None),
        };
        if git.is_none() {
            check_queries(&repo.root, &queries).map_err(|m| Error::BadRequest(format!("{source}: {m}")))?;
        }
        if queries.is_empty() {
            return Err(Error::BadRequest(match &git {
                Some(stats) => no_query_from_git(req, stats),
                None => format!("the query set {source} holds no queries"),
            }));
        }
        self.index(&repo.root, &IndexOptions::default(), sink)?;
        let manifest = Manifest::load(&repo.manifest_path());
        match git.as_mut() {
            None => check_indexed(&manifest, &repo.root, &queries)
                .map_err(|m| Error::BadRequest(format!("{source}: {m}")))?,
            Some(stats) => {
                queries = keep_indexed_answers(queries, &manifest, stats);
                if queries.is_empty() {
                    return Err(Error::BadRequest(no_query_from_git(req, stats)));
                }
            }
        }
        let key = match &req.source {
            QuerySource::File(path) => inside(&repo.root, path),
            _ => None,
        };
        let ctx =
            RunContext { root: &repo.root, queries: &queries, answer_key: key.as_deref(), worst: req.worst, sink };
        let mut runs = vec![run(self, &ctx, "current")?];
        if let Some(compare) = &req.compare {
            let (engine, label, warnings) = self.compare_engine(compare)?;
            let mut compared = run(&engine, &ctx, &label)?;
            compared.warnings.splice(0..0, warnings);
            runs.push(compared);
        }
        Ok(EvalReport { repo: repo.root.clone(), source, git, queries, runs })
    }

    /// An engine over the same state with the compared configuration.
    fn compare_engine(&self, with: &CompareWith) -> Result<(Engine, String, Vec<String>)> {
        let (mut config, path, warnings, label) = match with {
            CompareWith::File(path) => {
                let text = read_given(path, "the --compare config")?;
                // A file the user named that is not a config is bad input (exit 2), as a bad
                // `section.key=value` is; it was exit 1, an error of docdex's own.
                let (config, warnings) = Config::parse_validated(&text, path).map_err(|e| match e {
                    Error::Config { path, message } => {
                        Error::BadRequest(format!("--compare config {}: {message}", path.display()))
                    }
                    other => other,
                })?;
                (config, path.clone(), warnings, path.display().to_string())
            }
            CompareWith::Overrides(settings) => {
                let (config, warnings) = with_overrides(self.config(), settings, self.config_path())?;
                (config, self.config_path().to_path_buf(), warnings, settings.join(" "))
            }
        };
        // Same index and state whatever the file says: only search settings can differ.
        config.core.global_state_dir = self.config().core.global_state_dir.clone();
        let engine = Engine::with_config(&self.paths().home, config, path, warnings.clone())?;
        Ok((engine, label, warnings))
    }
}

/// Why the history gave no query, and what to do.
fn no_query_from_git(req: &EvalRequest, s: &GitSetStats) -> String {
    // --since was checked (since::check), so nothing read means nothing that new.
    let since = match &req.source {
        QuerySource::Git(o) if s.scanned == 0 => {
            o.since.as_deref().map(|d| format!("; no commit is newer than --since {d:?}"))
        }
        _ => None,
    };
    // Commits that qualified and were tried, yet made no query, were counted as qualified
    // with no word on why none is a query.
    let dropped = s.dropped_reasons();
    let dropped = if dropped.is_empty() { String::new() } else { format!(", dropped: {}", dropped.join(", ")) };
    let shallow = if s.shallow {
        "; this is a shallow clone (`git fetch --unshallow` fetches the rest of its history)"
    } else {
        ""
    };
    format!(
        "no commit in the history qualified as a query ({} read, {} with 1 to 4 source files and a descriptive subject{dropped}){}{shallow}: evaluate with --queries FILE",
        s.scanned,
        s.candidates,
        since.unwrap_or_default()
    )
}

/// `config` with `section.key=value` settings applied (values read as TOML, else as strings).
pub fn with_overrides(config: &Config, settings: &[String], origin: &Path) -> Result<(Config, Vec<String>)> {
    let base = toml::Table::try_from(config)
        .map_err(|e| Error::BadRequest(format!("cannot restate the configuration: {e}")))?;
    let mut table = base.clone();
    for s in settings {
        apply_setting(&mut table, s)?;
    }
    parse_table(&table, origin).map_err(|e| blame(&base, settings, origin, e))
}

/// Sets one `section.key=value` in a restated configuration; the key must exist.
fn apply_setting(table: &mut toml::Table, s: &str) -> Result<()> {
    let bad = |m: String| Error::BadRequest(m);
    let (key, value) = s.split_once('=').ok_or_else(|| {
        bad(format!("--compare setting {s:?} is not section.key=value (or a config file that exists)"))
    })?;
    let (section, name) = key
        .trim()
        .split_once('.')
        .ok_or_else(|| bad(format!("--compare setting {s:?}: name the section, as in search.hybrid=false")))?;
    let value: toml::Value = format!("v = {}", value.trim())
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(value.trim().to_string()));
    let Some(toml::Value::Table(sec)) = table.get_mut(section) else {
        return Err(bad(format!("--compare setting {s:?}: there is no [{section}] section")));
    };
    if !sec.contains_key(name) {
        return Err(bad(format!("--compare setting {s:?}: [{section}] has no key {name:?}")));
    }
    sec.insert(name.to_string(), value);
    Ok(())
}

fn parse_table(table: &toml::Table, origin: &Path) -> Result<(Config, Vec<String>)> {
    let text =
        toml::to_string(table).map_err(|e| Error::BadRequest(format!("cannot restate the configuration: {e}")))?;
    Config::parse_validated(&text, origin)
}

/// A bad value given with `--compare` as the setting's own error. The configuration is
/// restated to apply it, so the parser's "invalid config <your config.toml>: line 60" named a
/// file and a line the user never wrote; the setting that fails alone is named instead.
fn blame(base: &toml::Table, settings: &[String], origin: &Path, err: Error) -> Error {
    let Error::Config { message, .. } = &err else { return err };
    let reason = message.lines().map(str::trim).rfind(|l| !l.is_empty()).unwrap_or(message);
    let fails_alone = |s: &&String| {
        let mut t = base.clone();
        apply_setting(&mut t, s).is_ok() && parse_table(&t, origin).is_err()
    };
    let named = match settings.iter().find(fails_alone) {
        Some(s) => format!("setting {s:?}"),
        None => format!("settings {:?}", settings.join(" ")),
    };
    Error::BadRequest(format!("--compare {named}: {reason}"))
}

/// What every run of one evaluation shares.
struct RunContext<'a> {
    root: &'a Path,
    queries: &'a [EvalQuery],
    /// The query file's repo-relative path when it lies in the repository: indexed like any
    /// file, it holds every query word for word and its answers, so it is left out of rankings.
    answer_key: Option<&'a str>,
    /// How many worst misses to name.
    worst: usize,
    /// Sees each query scored (phase `evaluating`, queries in `files_done` / `files_total`):
    /// hundreds of hybrid searches, twice with `--compare`, run for minutes after the index.
    sink: &'a dyn ProgressSink,
}

/// `path`'s repo-relative form when it is a file inside `root`.
fn inside(root: &Path, path: &Path) -> Option<String> {
    let file = std::fs::canonicalize(path).ok()?;
    let root = std::fs::canonicalize(root).ok()?;
    let rel = file.strip_prefix(&root).ok()?;
    Some(rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/"))
}

/// With `[search] history` on, a query that did not come from this history (a query file) is
/// searched with every commit in view: one written from a commit of this repository then reads
/// its own answer in that commit's message.
fn history_warning(engine: &Engine, queries: &[EvalQuery]) -> Option<String> {
    let unsplit = queries.iter().filter(|q| q.before.is_none()).count();
    (engine.config().search.history && unsplit > 0).then(|| {
        format!(
            "[search] history is on and {unsplit} of {} queries came from a file: each is searched with the \
             whole git history in view, so one written from a commit of this repository finds that commit's \
             own message and scores too well (queries built with --from-git see only the commits before theirs)",
            queries.len()
        )
    })
}

/// Scores the queries with `engine`'s configuration.
fn run(engine: &Engine, ctx: &RunContext, label: &str) -> Result<EvalRun> {
    let (root, queries, worst) = (ctx.root, ctx.queries, ctx.worst);
    let mut metrics = Metrics::default();
    let mut outcomes = Vec::with_capacity(queries.len());
    let mut times = Vec::with_capacity(queries.len());
    let (mut mode, mut notice) = (String::new(), None);
    for (done, q) in queries.iter().enumerate() {
        ctx.sink.progress(&IndexProgress {
            phase: "evaluating".into(),
            files_done: done as u64,
            files_total: queries.len() as u64,
            unit: ProgressUnit::Queries,
            ..Default::default()
        });
        let t = Instant::now();
        let resp = engine.search(
            root,
            &SearchRequest {
                query: q.query.clone(),
                limit: Some(EVAL_HITS),
                history_before: q.before,
                ..Default::default()
            },
        )?;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        if mode.is_empty() {
            mode = resp.retrieval.mode.clone();
            notice = resp.retrieval.notice.clone();
        }
        let hits = resp.results.iter().map(|h| h.path.as_str()).filter(|p| Some(*p) != ctx.answer_key);
        let mut files = file_ranking(hits);
        files.truncate(KEPT_RANKING);
        let outcome = score_query(q, files);
        metrics.add(&outcome);
        outcomes.push(outcome);
    }
    ctx.sink.progress(&IndexProgress {
        phase: "evaluating".into(),
        files_done: queries.len() as u64,
        files_total: queries.len() as u64,
        unit: ProgressUnit::Queries,
        ..Default::default()
    });
    let median_ms = median(&mut times);
    let worst = worst_misses(&outcomes, worst);
    Ok(EvalRun {
        label: label.to_string(),
        mode,
        notice,
        warnings: history_warning(engine, queries).into_iter().collect(),
        metrics,
        median_ms: (median_ms * 100.0).round() / 100.0,
        worst,
        outcomes,
    })
}

/// The median (the mean of the middle two for an even count; 0 for none): the upper middle
/// alone called 1 and 3 ms a median of 3.
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// The ids of up to `k` queries that missed an answer in the top 10, worst first (lowest
/// reciprocal rank, then lowest recall). Misses are chosen before the cut, so a query that
/// found every answer late does not take a place and hide a real miss.
fn worst_misses(outcomes: &[QueryOutcome], k: usize) -> Vec<String> {
    let mut misses: Vec<&QueryOutcome> = outcomes.iter().filter(|o| o.recall(10) < 1.0).collect();
    misses.sort_by(|a, b| {
        a.reciprocal_rank
            .total_cmp(&b.reciprocal_rank)
            .then(a.recall(10).total_cmp(&b.recall(10)))
            .then(a.id.cmp(&b.id))
    });
    misses.into_iter().take(k).map(|o| o.id.clone()).collect()
}

/// One evaluation query: a plain-language description and the files a real change touched.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct EvalQuery {
    /// Stable id (for git-built sets, `<repo name>-<first 10 hex digits of the commit>`).
    pub id: String,
    /// The description search is given.
    pub query: String,
    /// Repo-relative paths of the files the change touched (the answer).
    pub gold: Vec<String>,
    /// For a query built from a commit, its committer time (Unix seconds): with `[search]
    /// history`, search sees only the commits made before it, not the answer's own.
    #[serde(skip)]
    #[schemars(skip)]
    pub before: Option<i64>,
}

/// A file the user named: one that is not there is bad input (exit 2), not a disk failure.
/// Read as docdex reads any text: a byte-order mark (PowerShell's `>` writes UTF-16) is no
/// part of the first line.
fn read_given(path: &Path, what: &str) -> Result<String> {
    if path.is_dir() {
        return Err(Error::BadRequest(format!("{what} {} is a directory, not a file", path.display())));
    }
    let bytes = std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::BadRequest(format!("{what} {} does not exist", path.display())),
        _ => Error::io("reading", path, e),
    })?;
    Ok(crate::engine::fsutil::decode_text_owned(bytes))
}

/// Checks a query set the user gave against the repository: ids are unique (the report names
/// queries by id) and every answer is a file in it. An answer search can never return (a
/// typo, a path outside, a file since removed) would count as a miss and pull every figure
/// down without a word.
fn check_queries(root: &Path, queries: &[EvalQuery]) -> std::result::Result<(), String> {
    let mut seen = std::collections::HashSet::new();
    if let Some(q) = queries.iter().find(|q| !seen.insert(q.id.as_str())) {
        return Err(format!("query id {:?} appears more than once; each query needs its own id", short(&q.id)));
    }
    // A query search refuses stopped the whole run after indexing, naming no query.
    if let Some((q, e)) =
        queries.iter().find_map(|q| crate::engine::limits::check_query(&q.query).err().map(|e| (q, e)))
    {
        return Err(format!("query {:?}: {e}", short(&q.id)));
    }
    refuse_answers(root, queries, |g| answer_problem(root, g))
}

/// An id or a path as an error quotes it: its first 100 characters. A 100,000-character id
/// came back whole, three times over.
fn short(text: &str) -> String {
    match text.char_indices().nth(100) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// Once the index is up to date: every answer is a file the index holds. One it leaves out
/// (hidden, ignored, excluded, binary, too large) is no answer search can give either; the
/// reasons named include hidden, which `.github/workflows/ci.yml` is and the message left out.
fn check_indexed(manifest: &Manifest, root: &Path, queries: &[EvalQuery]) -> std::result::Result<(), String> {
    if manifest.files.is_empty() {
        return Ok(()); // unreadable: search says what is wrong with the index
    }
    refuse_answers(root, queries, |g| {
        (!manifest.files.contains_key(normalize(g)))
            .then_some(
            "is not indexed (hidden: a dot file or under a dot folder; ignored by .gitignore or .docdexignore; [index] exclude; binary or too large)",
        )
    })
}

/// A set built from history without the answers the index leaves out (a committed `.venv/`,
/// an excluded folder): search cannot give them, and each was a silent miss. A query keeps at
/// least half of its answers, as when answers are missing, or is dropped.
fn keep_indexed_answers(queries: Vec<EvalQuery>, manifest: &Manifest, stats: &mut GitSetStats) -> Vec<EvalQuery> {
    if manifest.files.is_empty() {
        return queries; // unreadable: search says what is wrong with the index
    }
    let mut out = Vec::with_capacity(queries.len());
    for mut q in queries {
        let all = q.gold.len();
        q.gold.retain(|g| manifest.files.contains_key(normalize(g)));
        if q.gold.is_empty() || q.gold.len() * 2 < all {
            stats.dropped_unindexed += 1;
        } else {
            out.push(q);
        }
    }
    stats.queries = out.len();
    out
}

/// An error naming up to three answers `problem` finds fault with, if any.
fn refuse_answers(
    root: &Path,
    queries: &[EvalQuery],
    problem: impl Fn(&str) -> Option<&'static str>,
) -> std::result::Result<(), String> {
    let bad: Vec<String> = queries
        .iter()
        .flat_map(|q| q.gold.iter().map(move |g| (q, g)))
        .filter_map(|(q, g)| problem(g).map(|why| format!("query {:?}: answer {:?} {why}", short(&q.id), short(g))))
        .collect();
    match bad.len() {
        0 => Ok(()),
        n => Err(format!(
            "{}{}; answers are paths of files relative to {}",
            bad[..n.min(3)].join("; "),
            if n > 3 { format!(" (and {} more)", n - 3) } else { String::new() },
            root.display()
        )),
    }
}

/// Why an answer path cannot be found by search, if it cannot.
fn answer_problem(root: &Path, gold: &str) -> Option<&'static str> {
    let rel = normalize(gold);
    let path = Path::new(rel);
    if path.is_absolute() || path.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        return Some("is outside the repository");
    }
    crate::engine::fsutil::open_repo_file(root, rel).err().map(|_| "is not a file in the repository")
}

/// An answer path as search names files (`./a.rs` is `a.rs`).
fn normalize(path: &str) -> &str {
    path.trim_start_matches("./")
}

/// Reads a query set: JSON lines of `{"id", "query", "gold"}` (other fields, such as the dev
/// set's `repo`, are ignored), or one JSON array of such objects.
pub fn read_queries(path: &Path) -> Result<Vec<EvalQuery>> {
    let text = read_given(path, "the query set")?;
    parse_queries(&text).map_err(|m| Error::BadRequest(format!("{}: {m}", path.display())))
}

/// [`read_queries`] over text; the error names the offending line.
pub fn parse_queries(text: &str) -> std::result::Result<Vec<EvalQuery>, String> {
    let trimmed = text.trim_start();
    let set: Vec<EvalQuery> = if trimmed.starts_with('[') {
        serde_json::from_str(trimmed).map_err(|e| format!("not a JSON array of queries: {e}"))?
    } else {
        let mut out = Vec::new();
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let q: EvalQuery = serde_json::from_str(line)
                .map_err(|e| format!("line {}: expected {{\"id\", \"query\", \"gold\": [paths]}}: {e}", i + 1))?;
            out.push(q);
        }
        out
    };
    if let Some(q) = set.iter().find(|q| q.gold.is_empty() || q.query.trim().is_empty()) {
        return Err(format!("query {:?} has an empty query text or no gold files", q.id));
    }
    Ok(set)
}

/// Distinct files in the order their first hit appears.
pub fn file_ranking<'a>(paths: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in paths {
        if !out.iter().any(|f| f == p) {
            out.push(p.to_string());
        }
    }
    out
}

/// What one query scored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct QueryOutcome {
    /// The query's id.
    pub id: String,
    /// The query text.
    pub query: String,
    /// The answer files.
    pub gold: Vec<String>,
    /// 1-based rank of each gold file in the file ranking, `None` when absent.
    pub gold_ranks: Vec<Option<usize>>,
    /// 1 / rank of the first gold file within the top 10, 0 when none is there.
    pub reciprocal_rank: f64,
    /// The file ranking search returned (distinct files, first hit first).
    pub ranking: Vec<String>,
}

impl QueryOutcome {
    /// Share of the gold files within the top `k`.
    pub fn recall(&self, k: usize) -> f64 {
        if self.gold.is_empty() {
            return 0.0;
        }
        self.gold_ranks.iter().filter(|r| r.is_some_and(|r| r <= k)).count() as f64 / self.gold.len() as f64
    }
}

/// Scores a file ranking against a query's gold files.
pub fn score_query(q: &EvalQuery, ranking: Vec<String>) -> QueryOutcome {
    let norm = |p: &str| normalize(p).to_string();
    // One answer named twice (`a.rs` and `./a.rs`) counts once, as score.py's set of gold files.
    let mut gold: Vec<String> = Vec::with_capacity(q.gold.len());
    for g in q.gold.iter().map(|g| norm(g)) {
        if !gold.contains(&g) {
            gold.push(g);
        }
    }
    let gold_ranks: Vec<Option<usize>> =
        gold.iter().map(|g| ranking.iter().position(|f| norm(f) == *g).map(|i| i + 1)).collect();
    let first = gold_ranks.iter().flatten().min().copied();
    let reciprocal_rank = match first {
        Some(r) if r <= 10 => 1.0 / r as f64,
        _ => 0.0,
    };
    QueryOutcome { id: q.id.clone(), query: q.query.clone(), gold, gold_ranks, reciprocal_rank, ranking }
}

/// R@1, R@5, R@10 and MRR@10 averaged over queries.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Metrics {
    /// Queries scored.
    pub n: usize,
    /// Mean share of gold files ranked first.
    pub recall_at_1: f64,
    /// Mean share of gold files in the top 5.
    pub recall_at_5: f64,
    /// Mean share of gold files in the top 10.
    pub recall_at_10: f64,
    /// Mean reciprocal rank of the first gold file within the top 10.
    pub mrr_at_10: f64,
}

impl Metrics {
    /// Adds one query's outcome to the running means.
    pub fn add(&mut self, o: &QueryOutcome) {
        let n = self.n as f64;
        let mean = |old: f64, x: f64| (old * n + x) / (n + 1.0);
        self.recall_at_1 = mean(self.recall_at_1, o.recall(1));
        self.recall_at_5 = mean(self.recall_at_5, o.recall(5));
        self.recall_at_10 = mean(self.recall_at_10, o.recall(10));
        self.mrr_at_10 = mean(self.mrr_at_10, o.reciprocal_rank);
        self.n += 1;
    }

    /// Pools another set's means into this one (weighted by query count).
    pub fn merge(&mut self, other: &Metrics) {
        let (a, b) = (self.n as f64, other.n as f64);
        if a + b == 0.0 {
            return;
        }
        let mix = |x: f64, y: f64| (x * a + y * b) / (a + b);
        self.recall_at_1 = mix(self.recall_at_1, other.recall_at_1);
        self.recall_at_5 = mix(self.recall_at_5, other.recall_at_5);
        self.recall_at_10 = mix(self.recall_at_10, other.recall_at_10);
        self.mrr_at_10 = mix(self.mrr_at_10, other.mrr_at_10);
        self.n += other.n;
    }

    /// Column names matching [`Self::row`].
    pub fn header() -> String {
        format!("{:<12} {:>4} {:>6} {:>6} {:>6} {:>7}", "", "n", "R@1", "R@5", "R@10", "MRR@10")
    }

    /// One aligned table row.
    pub fn row(&self, name: &str) -> String {
        format!(
            "{name:<12} {:>4} {:>6.3} {:>6.3} {:>6.3} {:>7.3}",
            self.n, self.recall_at_1, self.recall_at_5, self.recall_at_10, self.mrr_at_10
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(gold: &[&str]) -> EvalQuery {
        EvalQuery {
            id: "q".into(),
            query: "x".into(),
            gold: gold.iter().map(|g| g.to_string()).collect(),
            before: None,
        }
    }

    #[test]
    fn scores_like_the_dev_set_scorer() {
        let ranking = file_ranking(["a.rs", "b.rs", "a.rs", "c.rs", "d.rs", "e.rs", "f.rs"]);
        assert_eq!(ranking, ["a.rs", "b.rs", "c.rs", "d.rs", "e.rs", "f.rs"]);
        let o = score_query(&q(&["c.rs", "./f.rs", "zz.rs"]), ranking);
        assert_eq!(o.gold_ranks, [Some(3), Some(6), None]);
        assert!((o.recall(5) - 1.0 / 3.0).abs() < 1e-9);
        assert!((o.recall(10) - 2.0 / 3.0).abs() < 1e-9);
        assert!((o.reciprocal_rank - 1.0 / 3.0).abs() < 1e-9);
        let mut m = Metrics::default();
        m.add(&o);
        m.add(&score_query(&q(&["a.rs"]), vec!["a.rs".into()]));
        assert_eq!(m.n, 2);
        assert!((m.mrr_at_10 - (1.0 / 3.0 + 1.0) / 2.0).abs() < 1e-9);
        assert!((m.recall_at_1 - 0.5).abs() < 1e-9);
        // An answer named twice counts once: found, it is half of {a, b}, not two thirds.
        let twice = score_query(&q(&["a.rs", "./a.rs", "b.rs"]), vec!["a.rs".into()]);
        assert_eq!(twice.gold, ["a.rs", "b.rs"]);
        assert!((twice.recall(1) - 0.5).abs() < 1e-9);
        // Beyond the top 10 a gold file counts for nothing in MRR@10.
        let far: Vec<String> = (0..12).map(|i| format!("{i}.rs")).collect();
        assert_eq!(score_query(&q(&["11.rs"]), far).reciprocal_rank, 0.0);
    }

    #[test]
    fn worst_misses_are_queries_that_missed_an_answer_even_behind_late_full_finds() {
        let ranked = |id: &str, gold: &[&str], ranking: &[&str]| {
            let q = EvalQuery { id: id.into(), ..q(gold) };
            score_query(&q, ranking.iter().map(|f| f.to_string()).collect())
        };
        let far: Vec<String> = (0..9).map(|i| format!("{i}.rs")).collect();
        let mut late: Vec<&str> = far.iter().map(String::as_str).collect();
        late.push("a.rs");
        let outcomes = [
            // Every answer found, at rank 10: the lowest reciprocal rank, but no miss.
            ranked("late", &["a.rs"], &late),
            ranked("half", &["a.rs", "b.rs"], &["a.rs"]),
            ranked("none", &["a.rs"], &["x.rs"]),
            ranked("third", &["a.rs", "b.rs"], &["x.rs", "y.rs", "a.rs"]),
        ];
        assert_eq!(worst_misses(&outcomes, 3), ["none", "third", "half"]);
        assert_eq!(worst_misses(&outcomes, 1), ["none"]);
    }

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(&mut [3.0, 1.0]), 2.0);
        assert_eq!(median(&mut [5.0, 1.0, 3.0]), 3.0);
        assert_eq!(median(&mut [4.0, 1.0, 10.0, 2.0]), 3.0);
        assert_eq!(median(&mut []), 0.0);
    }

    #[test]
    fn reads_json_lines_and_arrays_and_names_bad_lines() {
        let lines = "{\"id\":\"a\",\"repo\":\"r\",\"query\":\"fix it\",\"gold\":[\"x.py\"]}\n\n";
        assert_eq!(parse_queries(lines).unwrap()[0].gold, ["x.py"]);
        let array = "[{\"id\":\"a\",\"query\":\"fix it\",\"gold\":[\"x.py\"]}]";
        assert_eq!(parse_queries(array).unwrap().len(), 1);
        let err = parse_queries("{\"id\":\"a\",\"query\":\"q\",\"gold\":[\"x\"]}\nnot json\n").unwrap_err();
        assert!(err.starts_with("line 2:"), "{err}");
        assert!(parse_queries("{\"id\":\"a\",\"query\":\"q\",\"gold\":[]}").is_err());
    }
}
