//! `docdex audit duplicates|conflicts`: what the repository repeats, and where it contradicts
//! itself, over [`Engine::audit_duplicates`] and [`Engine::audit_conflicts`].

use super::output::{count, visible, Out};
use super::RepoArg;
use crate::engine::protocol::{
    signed_count_in_range, ConflictsRequest, ConflictsResponse, DuplicateKind, DuplicatesRequest, DuplicatesResponse,
    DEFAULT_CONFLICT_MIN_SIM, DEFAULT_CONFLICT_TOP, DEFAULT_DUPLICATE_LIMIT, DEFAULT_DUPLICATE_THRESHOLD,
    MAX_CONFLICT_TOP, MAX_DUPLICATE_LIMIT,
};
use crate::engine::Engine;

/// `docdex audit` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum AuditAction {
    /// Exact and near-duplicate chunk groups (by embeddings when the repo has them, else MinHash).
    Duplicates {
        #[command(flatten)]
        repo: RepoArg,
        /// Least similarity of near duplicates, above 0 and at most 1: embedding cosine, or
        /// shingle Jaccard.
        // A negative number is read as a value (and refused by its range), not as a flag.
        #[arg(long, default_value_t = DEFAULT_DUPLICATE_THRESHOLD, allow_negative_numbers = true)]
        threshold: f32,
        /// Most groups shown: 1 to 10000.
        #[arg(long, short = 'n', default_value_t = DEFAULT_DUPLICATE_LIMIT as i64, allow_negative_numbers = true)]
        limit: i64,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Similar documentation passages that disagree: numbers, versions, defaults, negations.
    Conflicts {
        #[command(flatten)]
        repo: RepoArg,
        /// Least similarity of two statements, above 0 and at most 1 (their words with values
        /// masked).
        #[arg(long, default_value_t = DEFAULT_CONFLICT_MIN_SIM, allow_negative_numbers = true)]
        min_sim: f32,
        /// Most conflicts shown, most similar first: 1 to 500 (`--limit` / `-n` like elsewhere).
        #[arg(
            long,
            short = 'n',
            visible_alias = "limit",
            default_value_t = DEFAULT_CONFLICT_TOP as i64,
            allow_negative_numbers = true
        )]
        top: i64,
        /// Do not ask the chat model to explain them (the heuristic's reasons only).
        #[arg(long)]
        no_model: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

impl AuditAction {
    /// Whether errors should be printed as JSON.
    pub fn json(&self) -> bool {
        match self {
            AuditAction::Duplicates { json, .. } | AuditAction::Conflicts { json, .. } => *json,
        }
    }
}

/// Runs `docdex audit`.
pub fn run(engine: &Engine, out: &Out, action: AuditAction) -> anyhow::Result<()> {
    match action {
        AuditAction::Duplicates { repo, threshold, limit, json } => {
            let limit = signed_count_in_range("limit", limit, MAX_DUPLICATE_LIMIT)?;
            let req = DuplicatesRequest { threshold: Some(threshold), limit: Some(limit) };
            let resp = engine.audit_duplicates(&repo.resolve()?, &req)?;
            report(out, json, &resp, print_duplicates)
        }
        AuditAction::Conflicts { repo, min_sim, top, no_model, json } => {
            let top = signed_count_in_range("top", top, MAX_CONFLICT_TOP)?;
            let req = ConflictsRequest { min_sim: Some(min_sim), top: Some(top), explain: Some(!no_model) };
            let resp = engine.audit_conflicts(&repo.resolve()?, &req)?;
            report(out, json, &resp, print_conflicts)
        }
    }
}

/// The response as JSON, or for people.
fn report<T: serde::Serialize>(out: &Out, json: bool, resp: &T, print: fn(&Out, &T)) -> anyhow::Result<()> {
    if json {
        out.json(resp)?;
    } else {
        print(out, resp);
    }
    Ok(())
}

/// What both audits end with: the counts, why the result may be partial, and what was capped.
fn print_summary(out: &Out, summary: &str, notice: Option<&str>, limits: &[String]) {
    out.note(summary);
    if let Some(n) = notice {
        out.note(&visible(n));
    }
    for l in limits {
        out.note(&format!("capped: {}", visible(l)));
    }
}

fn print_conflicts(out: &Out, r: &ConflictsResponse) {
    for p in &r.pairs {
        let kind = serde_json::to_value(p.kind).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        out.line(&out.paint("1", &format!("{kind} conflict (similarity {:.2})", p.similarity)));
        for (side, x) in [("a", &p.a), ("b", &p.b)] {
            let copies = match x.copies {
                0 => String::new(),
                n => format!(" (and {} word for word)", count(n, "other place")),
            };
            out.line(&format!(
                "  {side} {}:{}-{}{copies}  {}",
                visible(&x.path),
                x.line_start,
                x.line_end,
                visible(&x.text)
            ));
        }
        out.line(&format!("  {} ({})", visible(&p.explanation), p.explained_by));
    }
    let summary = format!(
        "{} ({} shown) among {} of {}, at similarity {:.2}; {} compared; {:.0} ms",
        count(r.pairs_total, "conflict"),
        r.pairs.len(),
        count(r.statements, "statement"),
        count(r.files, "documentation file"),
        r.min_similarity,
        count(r.pairs_compared, "pair"),
        r.elapsed_ms
    );
    print_summary(out, &summary, r.notice.as_deref(), &r.limits);
}

/// Members of one duplicate group the text lists: a group of 3,000 copies printed 3,000 lines
/// (and a vendored tree of 200,000 would print them all) before the summary.
const SHOWN_MEMBERS: usize = 20;

fn print_duplicates(out: &Out, r: &DuplicatesResponse) {
    for g in &r.groups {
        let kind = match g.kind {
            DuplicateKind::Exact => "exact",
            DuplicateKind::Near => "near",
        };
        out.line(&out.paint("1", &format!("{kind} duplicates ({} chunks) {}", g.items.len(), g.group_id)));
        for i in g.items.iter().take(SHOWN_MEMBERS) {
            out.line(&format!("  {}:{}-{}  {:.3}", visible(&i.path), i.line_start, i.line_end, i.score));
        }
        if g.items.len() > SHOWN_MEMBERS {
            out.line(&format!("  … and {} more (--json lists every one)", g.items.len() - SHOWN_MEMBERS));
        }
    }
    let method = match r.method {
        crate::engine::protocol::SimilarityMethod::Embeddings => "embeddings (cosine)",
        crate::engine::protocol::SimilarityMethod::Minhash => "MinHash (word 3-shingles)",
    };
    let summary = format!(
        "{} ({} shown) among {}; near duplicates by {method} at {:.2}; {} compared; {:.0} ms",
        count(r.groups_total, "group"),
        r.groups.len(),
        count(r.chunks, "chunk"),
        r.threshold,
        r.pairs_compared,
        r.elapsed_ms
    );
    print_summary(out, &summary, r.notice.as_deref(), &r.limits);
}
