//! `docdex audit duplicates|conflicts`: what the repository repeats, and where it contradicts
//! itself, over [`Engine::audit_duplicates`] and [`Engine::audit_conflicts`].

use super::output::Out;
use super::RepoArg;
use crate::engine::protocol::{DuplicateKind, DuplicatesRequest, DuplicatesResponse, DEFAULT_DUPLICATE_THRESHOLD};
use crate::engine::Engine;

/// `docdex audit` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum AuditAction {
    /// Exact and near-duplicate chunk groups (by embeddings when the repo has them, else MinHash).
    Duplicates {
        #[command(flatten)]
        repo: RepoArg,
        /// Least similarity of near duplicates (0..1): embedding cosine, or shingle Jaccard.
        #[arg(long, default_value_t = DEFAULT_DUPLICATE_THRESHOLD)]
        threshold: f32,
        /// Most groups shown.
        #[arg(long, short = 'n', default_value_t = 100)]
        limit: usize,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

impl AuditAction {
    /// Whether errors should be printed as JSON.
    pub fn json(&self) -> bool {
        match self {
            AuditAction::Duplicates { json, .. } => *json,
        }
    }
}

/// Runs `docdex audit`.
pub fn run(engine: &Engine, out: &Out, action: AuditAction) -> anyhow::Result<()> {
    match action {
        AuditAction::Duplicates { repo, threshold, limit, json } => {
            let req = DuplicatesRequest { threshold: Some(threshold), limit: Some(limit) };
            let resp = engine.audit_duplicates(&repo.resolve()?, &req)?;
            if json {
                out.json(&resp)?;
            } else {
                print_duplicates(out, &resp);
            }
        }
    }
    Ok(())
}

fn print_duplicates(out: &Out, r: &DuplicatesResponse) {
    for g in &r.groups {
        let kind = match g.kind {
            DuplicateKind::Exact => "exact",
            DuplicateKind::Near => "near",
        };
        out.line(&out.paint("1", &format!("{kind} duplicates ({} chunks) {}", g.items.len(), g.group_id)));
        for i in &g.items {
            out.line(&format!("  {}:{}-{}  {:.3}", i.path, i.line_start, i.line_end, i.score));
        }
    }
    let method = match r.method {
        crate::engine::protocol::SimilarityMethod::Embeddings => "embeddings (cosine)",
        crate::engine::protocol::SimilarityMethod::Minhash => "MinHash (word 3-shingles)",
    };
    out.note(&format!(
        "{} groups ({} shown) among {} chunks; near duplicates by {method} at {:.2}; {} pairs compared; {:.0} ms",
        r.groups_total,
        r.groups.len(),
        r.chunks,
        r.threshold,
        r.pairs_compared,
        r.elapsed_ms
    ));
    if let Some(n) = &r.notice {
        out.note(n);
    }
    for l in &r.limits {
        out.note(&format!("capped: {l}"));
    }
}
