//! `docdex audit conflicts`: statements of the documentation that look alike but disagree.
//!
//! The documentation files (class `docs`: Markdown, text, reStructuredText, PDF, DOCX, HTML;
//! changelogs and release announcements are history, scripts are code and generated documents
//! state no author's claims, so all are left out; the class is decided again here, not taken
//! from the index) are cut into statements ([`claims`](super::claims));
//! statements that claim something checkable are paired by MinHash LSH over their shapes,
//! each candidate's exact Jaccard similarity is computed, and a pair at `min_sim` or more is a
//! conflict when one key has different values in the two (a number, with units folded; a
//! version; a default), or when only one of them is negated. The heuristic's reason is always
//! given; the configured chat model, when one answers, adds a one-sentence explanation (the
//! first failure stops asking, and the answer says why).

use super::claims::{self, Statement};
use super::minhash;
use super::types::*;
use super::{check_unit, indexed_files, line_starts, lines, map_files, round3, score_pairs, IndexedFile, MAX_PAIRS};
use crate::engine::cancel::CancelToken;
use crate::engine::index::files::{self, FileClass};
use crate::engine::llm::{ChatMessage, ChatRequest, Role, Sampling};
use crate::engine::Engine;
use crate::error::{Error, Result};
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;
use std::path::Path;
use std::time::{Duration, Instant};

/// Statements compared at most.
pub const MAX_STATEMENTS: usize = 100_000;
/// Time the model may take for all the explanations together.
const EXPLAIN_BUDGET: Duration = Duration::from_secs(60);
/// Tokens of one explanation.
const EXPLAIN_TOKENS: u32 = 120;

const SYSTEM: &str = "You check a project's documentation for contradictions. You are shown two passages \
from different places and what a heuristic found. Answer with one sentence that says what the two passages \
disagree about and what each one states, or that they do not really disagree.";

impl Engine {
    /// Pairs of similar documentation statements that disagree (see [`ConflictsRequest`]).
    pub fn audit_conflicts(&self, repo_path: &Path, req: &ConflictsRequest) -> Result<ConflictsResponse> {
        let started = Instant::now();
        let min_sim = check_unit("min_sim", req.min_sim.unwrap_or(DEFAULT_CONFLICT_MIN_SIM))?;
        let top = crate::engine::limits::count_in_range("top", req.top, DEFAULT_CONFLICT_TOP, MAX_CONFLICT_TOP)?;
        let repo = self.resolve_repo(repo_path)?;
        // The class the index stored is not trusted: an index built before a class rule changed
        // (announcements as history, scripts as code) would keep auditing what is no prose.
        let files: Vec<_> = indexed_files(&repo)?.into_iter().filter(|f| may_be_prose(&f.path)).collect();
        let (per_file, stale) = map_files(&repo, &files, file_statements)?;
        let mut limits = Vec::new();
        let mut notes = Vec::new();
        if stale > 0 {
            notes.push(format!(
                "{} changed since indexed and skipped (run `docdex index`)",
                crate::engine::fsutil::count(stale, "file")
            ));
        }
        let all: Vec<(String, Statement)> = per_file.into_iter().flatten().collect();
        let read = all.len();
        let (mut stmts, copies) = collapse_copies(all);
        let repeated = copies.iter().filter(|&&n| n > 0).count();
        if repeated > 0 {
            notes.push(format!(
                "{} said word for word in several places, each compared once (`copies` counts the other places)",
                crate::engine::fsutil::count(repeated, "statement")
            ));
        }
        if stmts.len() > MAX_STATEMENTS {
            limits.push(format!(
                "only the first {MAX_STATEMENTS} of {} distinct statements (in path order) were compared",
                stmts.len()
            ));
            stmts.truncate(MAX_STATEMENTS);
        }

        let sigs: Vec<Option<[u32; minhash::SIGNATURE_LEN]>> =
            stmts.iter().map(|(_, s)| minhash::set_signature(s.shape.iter().map(String::as_str))).collect();
        let keys: Vec<Vec<u64>> =
            sigs.iter().map(|s| s.as_ref().map(minhash::minhash_bands).unwrap_or_default()).collect();
        let (pairs, capped) = minhash::candidate_pairs(stmts.len(), |i| keys[i].clone(), MAX_PAIRS);
        if capped {
            limits.push(format!(
                "candidate pairs were capped ({MAX_PAIRS} pairs, {} statements per LSH bucket): some conflicts may be missing",
                minhash::MAX_BUCKET
            ));
        }
        let mut found = disagreeing(&stmts, &copies, &pairs, min_sim)?;
        let pairs_total = found.len();
        found.truncate(top);
        if req.explain.unwrap_or(true) && !found.is_empty() {
            if let Some(why) = self.explain_conflicts(&mut found) {
                notes.push(why);
            }
            // A stop during the explanations ends them as a failure would: nobody reads these.
            CancelToken::current().check()?;
        }
        Ok(ConflictsResponse {
            schema_version: 1,
            project_id: repo.fingerprint.clone(),
            repo: repo.root.clone(),
            kind: "conflicts".into(),
            min_similarity: min_sim,
            files: files.len().saturating_sub(stale) as u64,
            statements: read as u64,
            pairs_compared: pairs.len() as u64,
            capped: !limits.is_empty(),
            limits,
            pairs_total,
            pairs: found,
            notice: (!notes.is_empty()).then(|| notes.join("; ")),
            elapsed_ms: (started.elapsed().as_secs_f64() * 10_000.0).round() / 10.0,
        })
    }

    /// Asks the chat model to explain each pair, in order, until one fails or the time budget
    /// is spent; returns a note when some pairs kept the heuristic explanation.
    fn explain_conflicts(&self, pairs: &mut [ConflictPair]) -> Option<String> {
        let started = Instant::now();
        for (n, p) in pairs.iter_mut().enumerate() {
            if started.elapsed() > EXPLAIN_BUDGET {
                return Some(format!(
                    "the model's {}s budget was spent after {n} explanations: the rest are the heuristic's",
                    EXPLAIN_BUDGET.as_secs()
                ));
            }
            match self.explain_pair(p) {
                Ok(text) => {
                    p.explanation = text;
                    p.explained_by = "model".into();
                }
                Err(e) => {
                    return Some(format!("no model explanation ({e}): the explanations are the heuristic's reasons"));
                }
            }
        }
        None
    }

    fn explain_pair(&self, p: &ConflictPair) -> Result<String> {
        let provider = self.provider()?;
        let user = format!(
            "Passage A ({}:{}-{})\n{}\n\nPassage B ({}:{}-{})\n{}\n\nHeuristic: {}\nIn one sentence, how do passage A and passage B disagree?",
            p.a.path, p.a.line_start, p.a.line_end, p.a.text, p.b.path, p.b.line_start, p.b.line_end, p.b.text, p.reason
        );
        let mut messages = vec![ChatMessage::new(Role::System, SYSTEM), ChatMessage::new(Role::User, user)];
        // Documentation may hold secrets: a model off this machine gets them masked.
        crate::engine::privacy::guard_messages(provider.base_url(), messages.iter_mut().map(|m| &mut m.content));
        let req = ChatRequest {
            messages,
            max_tokens: Some(EXPLAIN_TOKENS),
            sampling: Sampling::temperature(0.0),
            ..Default::default()
        };
        let reply = self.stream_chat(req, &mut |_| ControlFlow::Continue(()))?;
        let text = reply.text.split_whitespace().collect::<Vec<_>>().join(" ");
        if text.is_empty() {
            return Err(Error::Upstream("the model answered nothing".into()));
        }
        Ok(text)
    }
}

/// The candidate pairs at least `min_sim` alike that disagree (a number, a version, a default,
/// a negation), most similar first; statements whose lines overlap in one file are not compared.
/// [`Error::Cancelled`] once the thread's ambient token trips (looked at between blocks of pairs).
fn disagreeing(
    stmts: &[(String, Statement)],
    copies: &[u64],
    pairs: &[(u32, u32)],
    min_sim: f32,
) -> Result<Vec<ConflictPair>> {
    let mut found = score_pairs(pairs, |i, j| {
        let ((pa, a), (pb, b)) = (&stmts[i as usize], &stmts[j as usize]);
        if pa == pb && a.line_start <= b.line_end && b.line_start <= a.line_end {
            return None;
        }
        if versions_of_one_document(pa, pb) {
            return None;
        }
        let sim = claims::similarity(a, b);
        if sim < min_sim {
            return None;
        }
        let (kind, reason) = claims::disagreement(a, b)?;
        let passage = |p: &String, s: &Statement, copies: u64| Passage {
            path: p.clone(),
            line_start: s.line_start,
            line_end: s.line_end,
            text: s.text.clone(),
            copies,
        };
        Some(ConflictPair {
            a: passage(pa, a, copies[i as usize]),
            b: passage(pb, b, copies[j as usize]),
            similarity: round3(sim),
            kind,
            explanation: reason.clone(),
            reason,
            explained_by: "heuristic".into(),
        })
    })?;
    found.sort_by(|x, y| {
        y.similarity
            .total_cmp(&x.similarity)
            .then_with(|| (&x.a.path, x.a.line_start, &x.b.path).cmp(&(&y.a.path, y.a.line_start, &y.b.path)))
    });
    Ok(found)
}

/// Whether two paths differ only in their digits (`Migration-Guide-V3.md` and `-V5.md`,
/// `docs/v1/api.md` and `docs/v2/api.md`): one document kept per release, which are meant to
/// state different versions and values (fastify's migration guides were "conflicts" over
/// their titles' version numbers).
fn versions_of_one_document(a: &str, b: &str) -> bool {
    let digits = |p: &str| p.chars().filter(|c| !c.is_ascii_digit()).collect::<String>();
    a != b && a.chars().any(|c| c.is_ascii_digit()) && digits(a) == digits(b)
}

/// Whether a path is a document by today's rules (its class by name, before its text is read).
fn may_be_prose(path: &str) -> bool {
    files::classify(path, files::language(Path::new(path))) == FileClass::Docs
}

/// Whether a file's text, as indexed, is prose to audit: a document by today's rules on its
/// name and text (a script without an extension is code), and not a catalogue a script wrote
/// (pytest's 16,000-line plugin list, "autogenerated by scripts/update-plugin-list.py",
/// flooded the answer with its packages' one-line summaries).
fn is_prose(path: &str, text: &str) -> bool {
    let class = files::classify_text(path, files::language(Path::new(path)), text);
    class == FileClass::Docs && !files::says_generated(text)
}

/// The statements of one indexed file's chunks, each once (none when it is no prose).
fn file_statements(file: &IndexedFile, text: &str) -> Vec<(String, Statement)> {
    if !is_prose(&file.path, text) {
        return Vec::new();
    }
    // Code in reStructuredText literal blocks is no claim (blanked, lines kept).
    let text = &*claims::mask_literal_blocks(text);
    let starts = line_starts(text);
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for &(a, b) in &file.ranges {
        for s in claims::statements(lines(text, &starts, a, b), a) {
            // Overlapping window chunks repeat a statement: keep it once.
            if seen.insert((s.line_start, s.text.clone())) {
                out.push((file.path.clone(), s));
            }
        }
    }
    out
}

/// Statements said word for word in several places, kept once (the first, in path order) with
/// how many other places say them. 300 copies of one sentence filled every LSH bucket it fell
/// in (256 members at most are paired), so the one statement contradicting them was never
/// compared; 200 copies made 200 reports of one conflict. Two copies never disagree.
fn collapse_copies(stmts: Vec<(String, Statement)>) -> (Vec<(String, Statement)>, Vec<u64>) {
    let mut first: HashMap<String, usize> = HashMap::new();
    let (mut out, mut copies) = (Vec::new(), Vec::new());
    for (path, s) in stmts {
        match first.entry(s.text.clone()) {
            Entry::Occupied(e) => copies[*e.get()] += 1,
            Entry::Vacant(e) => {
                e.insert(out.len());
                out.push((path, s));
                copies.push(0);
            }
        }
    }
    (out, copies)
}
