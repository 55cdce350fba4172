//! The token budget: counting tokens, splitting the model's context window into slots
//! (about 10% system, 20% memory, 50% diff/repo/history/library/web, 20% generation), and
//! fitting snippets into it in priority order, so the prompt never overflows the window and
//! what gets left out is always the lowest priority, with a logged reason.
//!
//! Tokens are counted with a real BPE tokenizer (tiktoken's `cl100k_base`, or `o200k_base`
//! for models that use it). That is exact only for OpenAI models; for local models it is an
//! approximation, corrected by a ratio measured against the prompt token counts the model
//! server reports after each answer ([`RatioBook`]), and the trace says which applies.

use super::types::{BudgetShares, BudgetTrace, ChatSource, DropTrace, Slot, SlotTrace, TokenizerTrace};
use crate::engine::fsutil;
use crate::error::{Error, Result};
use rayon::prelude::*;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use tiktoken_rs::tokenizer::Tokenizer;
use tiktoken_rs::CoreBPE;

/// The spec's split of the window.
pub const SHARES: BudgetShares = BudgetShares { system: 10, memory: 20, context: 50, generation: 20 };

/// The profile slot's cap (spec 001 §2.3), and at most an eighth of the window.
pub const PROFILE_CAP: u32 = 1000;
/// The project map's cap (spec 001 §2.3), and at most a sixteenth of the window.
pub const MAP_CAP: u32 = 500;

/// Tokens a chat message costs beyond its content (role markers), as OpenAI counts them.
pub const MESSAGE_OVERHEAD: u32 = 4;

/// Bytes of a text counted per token of a limit before [`TokenCounter::count_within`] checks
/// whether the limit is passed (cl100k_base averages about 4 bytes a token on code and prose).
const COUNT_BYTES_PER_TOKEN: usize = 8;

/// Measured ratios are only trusted within this range (a server that reuses a cached prompt
/// reports far fewer tokens than it was sent).
const RATIO_RANGE: std::ops::RangeInclusive<f64> = 0.5..=2.5;

static CL100K: OnceLock<std::result::Result<CoreBPE, String>> = OnceLock::new();
static O200K: OnceLock<std::result::Result<CoreBPE, String>> = OnceLock::new();

fn load(which: Tokenizer) -> Result<&'static CoreBPE> {
    let (cell, build): (_, fn() -> anyhow::Result<CoreBPE>) = match which {
        Tokenizer::O200kBase => (&O200K, tiktoken_rs::o200k_base),
        _ => (&CL100K, tiktoken_rs::cl100k_base),
    };
    cell.get_or_init(|| build().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| Error::BadRequest(format!("cannot load the token counter: {e}")))
}

/// Loads the default tokenizer on a background thread, so its one-time setup (tens of
/// milliseconds) overlaps with retrieval instead of delaying the first token.
pub fn warm_up() {
    if CL100K.get().is_none() {
        let _ = std::thread::Builder::new().name("docdex-tokenizer".into()).spawn(|| load(Tokenizer::Cl100kBase));
    }
}

/// Counts tokens for one model.
pub struct TokenCounter {
    bpe: &'static CoreBPE,
    name: &'static str,
    exact: bool,
    ratio: f64,
    measured_on: Option<String>,
}

/// The correction a local model's counts get until its ratio is measured: their tokenizers
/// count code up to a third more tokens than `cl100k_base` (Gemma 3 270M through the shim:
/// 613 for 500; SentencePiece models such as Phi-3.5 more), and at 1.0 a first turn that
/// filled the budget overflowed the window by more than the answer's share leaves.
pub const UNMEASURED_RATIO: f64 = 1.25;

/// The margin on a measured ratio. A prompt's own ratio strays from the running average by a
/// few percent (code against prose: gemma3:270m measured 1.11 on prose, then counted a Rust
/// prompt 7.5 % above it), and at the measured ratio alone a prompt filling its budget left the
/// answer less than its cap before the window ran out (tour28 F3).
pub const CALIBRATED_MARGIN: f64 = 1.08;

/// The ratio to count with, given the one measured for the model (if any): the measured
/// ratio times [`CALIBRATED_MARGIN`].
pub fn with_margin(measured: f64) -> f64 {
    ((measured * CALIBRATED_MARGIN) * 1000.0).round() / 1000.0
}

impl TokenCounter {
    /// The counter for `model`: its own tokenizer when tiktoken knows it, else `cl100k_base`
    /// scaled by `ratio` (measured for this model earlier; `None` means not yet measured).
    pub fn for_model(model: &str, ratio: Option<f64>) -> Result<TokenCounter> {
        match tiktoken_rs::tokenizer::get_tokenizer(model) {
            Some(t @ (Tokenizer::Cl100kBase | Tokenizer::O200kBase)) => Ok(TokenCounter {
                bpe: load(t)?,
                name: if t == Tokenizer::O200kBase { "o200k_base" } else { "cl100k_base" },
                exact: true,
                ratio: 1.0,
                measured_on: None,
            }),
            _ => Ok(TokenCounter {
                bpe: load(Tokenizer::Cl100kBase)?,
                name: "cl100k_base",
                exact: false,
                ratio: ratio.unwrap_or(UNMEASURED_RATIO),
                measured_on: ratio.map(|_| model.to_string()),
            }),
        }
    }

    /// Tokens in `text` (never 0 for non-empty text).
    pub fn count(&self, text: &str) -> u32 {
        if text.is_empty() {
            return 0;
        }
        let raw = self.bpe.encode_ordinary(text).len() as f64;
        (raw * self.ratio).ceil().max(1.0) as u32
    }

    /// Tokens in `text`, counted only as far as it takes to tell it exceeds `limit`:
    /// `(count, true)` when exact, else `(n, false)` with `limit < n <= count`. Counting is the
    /// expensive part of fitting, and a one-line 8 MB file took seconds to count only to be
    /// dropped or replaced by its excerpt.
    pub fn count_within(&self, text: &str, limit: u32) -> (u32, bool) {
        let mut cap = (limit as usize).saturating_add(1).saturating_mul(COUNT_BYTES_PER_TOKEN).max(4096);
        while cap < text.len() {
            let n = self.count(&text[..super::excerpt::floor_boundary(text, cap)]);
            // A cut inside a word can split one token in two.
            if n.saturating_sub(2) > limit {
                return (n - 2, false);
            }
            // Text that packs many bytes into a token (runs of spaces): count further.
            cap = cap.saturating_mul(4);
        }
        (self.count(text), true)
    }

    /// The correction factor applied to raw counts.
    pub fn ratio(&self) -> f64 {
        self.ratio
    }

    /// True when this is the model's own tokenizer.
    pub fn exact(&self) -> bool {
        self.exact
    }

    /// How counting works, for the trace.
    pub fn trace(&self, model: &str) -> TokenizerTrace {
        let note = if self.exact {
            format!("{}, the tokenizer of {model}: exact", self.name)
        } else if let Some(m) = &self.measured_on {
            format!(
                "{} x {:.2}: an approximation for {m}, corrected by the ratio measured against the server's own prompt token counts, with an 8% margin",
                self.name, self.ratio
            )
        } else {
            format!(
                "{} x {:.2}: an approximation for {model} with a margin (its own tokenizer is not available here; the ratio is measured after the first answer)",
                self.name, self.ratio
            )
        };
        TokenizerTrace { name: self.name.to_string(), exact: self.exact, ratio: self.ratio, note }
    }
}

/// Per-model correction ratios (model tokens / cl100k tokens), measured from what servers
/// report and kept in `state/cache/token_ratios.json` so later processes start calibrated.
pub struct RatioBook {
    path: PathBuf,
    map: Mutex<Option<HashMap<String, f64>>>,
}

impl RatioBook {
    /// A book stored at `path` (read on first use).
    pub fn new(path: PathBuf) -> RatioBook {
        RatioBook { path, map: Mutex::new(None) }
    }

    fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, f64>) -> T) -> Option<T> {
        let mut guard = self.map.lock().ok()?;
        let map = guard.get_or_insert_with(|| fsutil::read_json(&self.path).ok().flatten().unwrap_or_default());
        Some(f(map))
    }

    /// The measured ratio for `key` (provider, server and model), if any.
    pub fn get(&self, key: &str) -> Option<f64> {
        self.with(|m| m.get(key).copied()).flatten()
    }

    /// Records a measurement: `reported` tokens by the server for a prompt we counted as
    /// `estimated` raw cl100k tokens. Implausible ratios are ignored; others are averaged in.
    pub fn record(&self, key: &str, estimated_raw: u32, reported: u32) -> Option<f64> {
        if estimated_raw < 32 || reported == 0 {
            return None;
        }
        let measured = f64::from(reported) / f64::from(estimated_raw);
        if !RATIO_RANGE.contains(&measured) {
            tracing::debug!(key, measured, "ignoring an implausible token ratio (cached prompt?)");
            return None;
        }
        let snapshot = self.with(|m| {
            let next = match m.get(key) {
                Some(old) => (old + measured) / 2.0,
                None => measured,
            };
            let next = (next * 1000.0).round() / 1000.0;
            m.insert(key.to_string(), next);
            (next, m.clone())
        })?;
        if let Err(e) = fsutil::write_json_atomic(&self.path, &snapshot.1) {
            tracing::debug!(error = %e, "could not save token ratios");
        }
        Some(snapshot.0)
    }
}

/// The window split into token amounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// The whole window.
    pub window: u32,
    /// The system share (instructions, profile rules, question).
    pub system: u32,
    /// The memory share.
    pub memory: u32,
    /// The context share (diff, repo, history, library, web).
    pub context: u32,
    /// Kept for the answer.
    pub generation: u32,
    /// The cap on generated tokens sent to the model: `max_answer_tokens`, at most the
    /// generation share.
    pub answer_cap: u32,
    /// The most the profile slot takes: [`PROFILE_CAP`], at most an eighth of the window.
    pub profile: u32,
    /// The most the project map takes: [`MAP_CAP`], at most a sixteenth of the window.
    pub map: u32,
}

/// Splits `window` by [`SHARES`].
pub fn plan(window: u32, max_answer_tokens: u32) -> Plan {
    let pct = |p: u32| (u64::from(window) * u64::from(p) / 100) as u32;
    let generation = pct(SHARES.generation);
    Plan {
        window,
        system: pct(SHARES.system),
        memory: pct(SHARES.memory),
        context: pct(SHARES.context),
        generation,
        answer_cap: max_answer_tokens.clamp(1, generation.max(1)),
        profile: PROFILE_CAP.min(window / 8),
        map: MAP_CAP.min(window / 16),
    }
}

/// A snippet ready to be budgeted: its prompt text already rendered.
#[derive(Debug, Clone)]
pub struct Piece {
    /// Its slot.
    pub slot: Slot,
    /// How it is cited (also the drop log's name for it).
    pub citation: String,
    /// The text exactly as it goes into the prompt.
    pub block: String,
    /// The source list entry (`None` for conversation history).
    pub source: Option<ChatSource>,
    /// A shorter rendering to use when the whole does not fit (a search hit's snippet).
    pub fallback: Option<Box<Piece>>,
    /// Position in the prompt within its slot (pieces are offered in priority order, which
    /// for history is newest first, but placed by this).
    pub order: usize,
}

/// What fitting decided.
#[derive(Debug, Default)]
pub struct Fitted {
    /// Pieces kept, in slot order, each slot's pieces in prompt order.
    pub kept: Vec<Piece>,
    /// Per slot (system first, generation last).
    pub slots: Vec<SlotTrace>,
    /// Dropped or trimmed pieces, in the order it happened.
    pub drops: Vec<DropTrace>,
    /// Estimated prompt tokens in all.
    pub prompt_tokens: u32,
}

/// The share of the context part a turn's web passages may reserve ahead of the other slots.
pub const WEB_RESERVE_PCT: u32 = 30;

/// The share of the context part the conversation's latest exchange may reserve ahead of the
/// diff and the repo (see [`reserves`]).
pub const HISTORY_RESERVE_PCT: u32 = 25;

/// The share of the context part a turn's library passages may reserve ahead of the diff and
/// the repo (see [`reserves`]).
pub const LIBRARY_RESERVE_PCT: u32 = 20;

/// The slots that share the context share, in priority order.
pub const CONTEXT_SLOTS: [Slot; 5] = [Slot::Diff, Slot::Repo, Slot::History, Slot::Library, Slot::Web];

/// Fits `pieces` into `plan`, highest priority first.
///
/// `mandatory` is the cost of the instructions and the question, which are never dropped.
/// `section_cost(slot)` is the cost of the heading a slot gets once it has a piece. The
/// profile slot takes at most `plan.profile` tokens and keeps the most similar preferences: once
/// one does not fit, every less similar one is dropped too (so what goes is always the least
/// similar). The project map takes at most `plan.map`. Memory takes its share plus what the
/// system share leaves, and the context slots (diff, repo, history, library, web, in that
/// order) everything that remains of the prompt part of the window. Elsewhere a piece that does
/// not fit is dropped (or replaced by its shorter fallback) and the next one is tried.
pub fn fit(
    plan: &Plan,
    counter: &TokenCounter,
    mandatory: u32,
    pieces: Vec<Piece>,
    section_cost: &dyn Fn(Slot) -> u32,
) -> Result<Fitted> {
    let prompt_budget = plan.window.saturating_sub(plan.generation);
    if mandatory > prompt_budget {
        // The model server's own overflow, found before asking it: clients that trim the
        // history on `context_length_exceeded` (LiteLLM) then do so for this one too.
        return Err(Error::ContextOverflow(format!(
            "the question and instructions take {mandatory} tokens, more than the {prompt_budget} a {}-token context window leaves for the prompt; shorten the question, or give the model a longer context (`[llm] context_tokens`, and the model's own context length when it reports less: its Modelfile `num_ctx`, or the server's context size)",
            plan.window
        )));
    }
    // Counting is the expensive part (a BPE pass over every snippet): do it on all cores.
    let counted: Vec<(Piece, u32)> = pieces
        .into_par_iter()
        .map(|p| {
            let cost = piece_cost(&p, counter, prompt_budget);
            (p, cost)
        })
        .collect();
    let mut by_slot: HashMap<Slot, Vec<(Piece, u32)>> = HashMap::new();
    for (p, cost) in counted {
        by_slot.entry(p.slot).or_default().push((p, cost));
    }
    let mut out = Fitted {
        slots: vec![SlotTrace { slot: Slot::System, allotted: plan.system, used: mandatory, items: 1, dropped: 0 }],
        prompt_tokens: mandatory,
        ..Default::default()
    };
    let mut remaining = prompt_budget - mandatory;
    let fill =
        |slot, cap, strict, remaining: &mut u32, by_slot: &mut HashMap<Slot, Vec<(Piece, u32)>>, out: &mut Fitted| {
            fill_slot(slot, cap, strict, remaining, by_slot, counter, section_cost, prompt_budget, out)
        };
    fill(Slot::Profile, plan.profile, true, &mut remaining, &mut by_slot, &mut out);
    fill(Slot::Map, plan.map, false, &mut remaining, &mut by_slot, &mut out);
    let memory_cap = plan.memory + plan.system.saturating_sub(mandatory);
    fill(Slot::Memory, memory_cap, false, &mut remaining, &mut by_slot, &mut out);
    let reserved = reserves(&by_slot, remaining, section_cost);
    remaining -= reserved.web + reserved.history + reserved.library;
    for slot in CONTEXT_SLOTS {
        match slot {
            Slot::History => remaining += reserved.history,
            Slot::Library => remaining += reserved.library,
            Slot::Web => remaining += reserved.web,
            _ => {}
        }
        // History is kept as the latest unbroken stretch of the conversation: an older message
        // that fits after a newer one did not would leave a question without its answer.
        fill(slot, u32::MAX, slot == Slot::History, &mut remaining, &mut by_slot, &mut out);
    }
    out.slots.push(SlotTrace { slot: Slot::Generation, allotted: plan.generation, used: 0, items: 0, dropped: 0 });
    Ok(out)
}

/// What the web, history and library slots keep of the context part before the diff and the
/// repo fill it.
struct Reserved {
    web: u32,
    history: u32,
    library: u32,
}

/// What the web, history and library slots keep of `remaining` before the diff and the repo fill it.
///
/// Web passages exist only when the local answer was weak or the web was asked for: up to
/// [`WEB_RESERVE_PCT`] of what is left is kept for them, so the repo's hits (which come first)
/// cannot crowd out what the web tier was run to find. The conversation's latest exchange
/// (the newest messages back to the newest question, with their heading) keeps up to
/// [`HISTORY_RESERVE_PCT`]: a follow-up ("and who calls it?") means nothing without it, and
/// a repository's hits used to fill the whole context part, so every follow-up in a session
/// went to the model without the conversation (tour28 F2). Library passages (present only
/// after `docdex libs fetch`, and only those search matched) keep up to
/// [`LIBRARY_RESERVE_PCT`]: weak repository hits took 6,427 tokens and left the library 223,
/// so its five best passages were dropped and the sixth kept (tour37 F3).
fn reserves(
    by_slot: &HashMap<Slot, Vec<(Piece, u32)>>,
    remaining: u32,
    section_cost: &dyn Fn(Slot) -> u32,
) -> Reserved {
    let need = |slot: Slot, costs: &mut dyn Iterator<Item = u32>| {
        let sum: u32 = costs.sum();
        if sum == 0 {
            0
        } else {
            sum + section_cost(slot)
        }
    };
    let web = by_slot.get(&Slot::Web).map_or(0, |v| need(Slot::Web, &mut v.iter().map(|(_, c)| *c)));
    let history = by_slot.get(&Slot::History).map_or(0, |v| {
        // Newest first: the answers after the newest question, and that question.
        let answers = v.iter().take_while(|(p, _)| is_answer(p)).count();
        need(Slot::History, &mut v.iter().take(answers + 1).map(|(_, c)| *c))
    });
    let library = by_slot.get(&Slot::Library).map_or(0, |v| need(Slot::Library, &mut v.iter().map(|(_, c)| *c)));
    let share = |pct: u32| (remaining as u64 * pct as u64 / 100) as u32;
    Reserved {
        web: web.min(share(WEB_RESERVE_PCT)),
        history: history.min(share(HISTORY_RESERVE_PCT)),
        library: library.min(share(LIBRARY_RESERVE_PCT)),
    }
}

/// Fills one slot from its pieces within `min(cap, remaining)`; returns the tokens used. With
/// `strict`, the first piece that does not fit ends the slot: the rest are dropped too.
#[allow(clippy::too_many_arguments)]
fn fill_slot(
    slot: Slot,
    cap: u32,
    strict: bool,
    remaining: &mut u32,
    by_slot: &mut HashMap<Slot, Vec<(Piece, u32)>>,
    counter: &TokenCounter,
    section_cost: &dyn Fn(Slot) -> u32,
    prompt_budget: u32,
    out: &mut Fitted,
) -> u32 {
    // Counts stop past the prompt's budget (`count_within`): a cost above it is a lower bound.
    let needs = |cost: u32| match cost > prompt_budget {
        true => format!("more than the {prompt_budget} tokens the whole prompt may use"),
        false => format!("{cost} tokens"),
    };
    let allotted = cap.min(*remaining);
    let mut trace = SlotTrace { slot, allotted, used: 0, items: 0, dropped: 0 };
    let mut kept: Vec<(Piece, u32)> = Vec::new();
    for (piece, cost) in by_slot.remove(&slot).unwrap_or_default() {
        let header = if kept.is_empty() { section_cost(slot) } else { 0 };
        let left = allotted - trace.used;
        let cost = cost + header;
        if strict && trace.dropped > 0 {
            trace.dropped += 1;
            let reason = match slot {
                Slot::History => "older than a message already left out: the history kept is the latest unbroken stretch of the conversation".into(),
                _ => format!("less similar to the question than one already left out of the {} slot", slot.name()),
            };
            drop_piece(out, &piece, cost, reason);
            continue;
        }
        if cost <= left {
            trace.used += cost;
            kept.push((piece, cost));
            continue;
        }
        // The first of its shorter versions (longest first) that fits.
        let fallback = std::iter::successors(piece.fallback.as_deref(), |f| f.fallback.as_deref())
            .map(|f| (f, piece_cost(f, counter, left) + header))
            .find(|(_, c)| *c <= left);
        if let Some((short, short_cost)) = fallback {
            drop_piece(
                out,
                &piece,
                cost,
                format!(
                    "trimmed to {} ({short_cost} tokens): the whole needs {}, {left} left in the {} slot",
                    short.citation,
                    needs(cost),
                    slot.name()
                ),
            );
            trace.used += short_cost;
            kept.push((short.clone(), short_cost));
            continue;
        }
        trace.dropped += 1;
        let reason = if allotted == 0 {
            format!("the {} slot has no room left ({} tokens allotted)", slot.name(), allotted)
        } else {
            format!("needs {}, {left} of the {} slot's {allotted} left", needs(cost), slot.name())
        };
        drop_piece(out, &piece, cost, reason);
    }
    kept.sort_by_key(|(p, _)| p.order);
    if slot == Slot::History {
        drop_orphan_answer(&mut kept, &mut trace, out);
    }
    trace.items = kept.len() as u32;
    *remaining -= trace.used;
    out.prompt_tokens += trace.used;
    out.kept.extend(kept.into_iter().map(|(p, _)| p));
    let used = trace.used;
    out.slots.push(trace);
    used
}

/// The kept history opens with a question: an answer whose question was left out would follow
/// the system message alone (strict chat templates refuse that order).
fn drop_orphan_answer(kept: &mut Vec<(Piece, u32)>, trace: &mut SlotTrace, out: &mut Fitted) {
    if kept.first().is_some_and(|(p, _)| is_answer(p)) {
        let (orphan, cost) = kept.remove(0);
        trace.used -= cost;
        trace.dropped += 1;
        drop_piece(
            out,
            &orphan,
            cost,
            "an answer whose question was left out: the history starts with a question".into(),
        );
    }
}

/// Whether a history piece is one of the model's earlier answers (`assistant message N`).
pub fn is_answer(p: &Piece) -> bool {
    p.slot == Slot::History && p.citation.starts_with("assistant")
}

/// The piece's tokens, counted no further than it takes to tell they exceed `limit` (what a
/// piece over the limit costs beyond it does not matter: it cannot be kept whole).
fn piece_cost(p: &Piece, counter: &TokenCounter, limit: u32) -> u32 {
    let overhead = if p.slot == Slot::History { MESSAGE_OVERHEAD } else { 0 };
    counter.count_within(&p.block, limit).0 + overhead
}

fn drop_piece(out: &mut Fitted, piece: &Piece, tokens: u32, reason: String) {
    tracing::info!(slot = piece.slot.name(), source = %piece.citation, tokens, %reason, "context budget drop");
    out.drops.push(DropTrace { slot: piece.slot, source: piece.citation.clone(), tokens, reason });
}

/// The budget part of the trace.
pub fn trace(plan: &Plan, window_source: &str, tokenizer: TokenizerTrace, fitted: &Fitted) -> BudgetTrace {
    BudgetTrace {
        context_window: plan.window,
        window_source: window_source.to_string(),
        max_answer_tokens: plan.answer_cap,
        tokenizer,
        shares: SHARES,
        slots: fitted.slots.clone(),
        prompt_tokens: fitted.prompt_tokens,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A local model whose ratio was measured at 1 (raw cl100k counts, for easy arithmetic).
    fn counter() -> TokenCounter {
        TokenCounter::for_model("local-model", Some(1.0)).unwrap()
    }

    #[test]
    fn a_local_model_is_counted_with_a_margin_until_its_ratio_is_measured() {
        let text = "fn expire_stale_sessions(&mut self) { self.sessions.retain(|s| s.fresh()); }";
        let raw = counter().count(text);
        let first = TokenCounter::for_model("local-model", None).unwrap();
        assert_eq!(first.count(text), (f64::from(raw) * UNMEASURED_RATIO).ceil() as u32);
        let t = first.trace("local-model");
        assert_eq!(t.ratio, UNMEASURED_RATIO);
        assert!(t.note.contains("margin") && t.note.contains("measured after the first answer"), "{}", t.note);
        // A model tiktoken knows is exact, with no margin.
        assert_eq!(TokenCounter::for_model("gpt-4o", None).unwrap().ratio(), 1.0);
    }

    fn piece(slot: Slot, name: &str, words: usize, order: usize) -> Piece {
        Piece { slot, citation: name.to_string(), block: " word".repeat(words), source: None, fallback: None, order }
    }

    #[test]
    fn plan_splits_the_window_by_the_spec_shares() {
        let p = plan(10_000, 4096);
        assert_eq!((p.system, p.memory, p.context, p.generation), (1000, 2000, 5000, 2000));
        assert_eq!(p.answer_cap, 2000, "the answer cap never exceeds the generation share");
        assert_eq!(plan(10_000, 512).answer_cap, 512);
    }

    #[test]
    fn counting_is_real_bpe_not_characters() {
        let c = counter();
        assert_eq!(c.count(""), 0);
        assert_eq!(c.count("hello world"), 2);
        assert!(!c.exact());
        let gpt = TokenCounter::for_model("gpt-4o-mini", None).unwrap();
        assert!(gpt.exact());
        assert_eq!(gpt.trace("gpt-4o-mini").name, "o200k_base");
        let scaled = TokenCounter::for_model("phi3.5", Some(1.5)).unwrap();
        assert_eq!(scaled.count("hello world"), 3);
        assert!(scaled.trace("phi3.5").note.contains("measured"));
    }

    #[test]
    fn lowest_priority_goes_first_and_every_drop_is_logged() {
        // Window 1000: prompt budget 800; system share 100, memory 200.
        let p = plan(1000, 100);
        let pieces = vec![
            piece(Slot::Web, "web-1", 150, 0),
            piece(Slot::Repo, "repo-1", 300, 0),
            piece(Slot::Repo, "repo-2", 200, 1),
            piece(Slot::Memory, "mem-1", 150, 0),
            piece(Slot::Diff, "diff-1", 100, 0),
        ];
        let f = fit(&p, &counter(), 50, pieces, &|_| 0).unwrap();
        let kept: Vec<&str> = f.kept.iter().map(|p| p.citation.as_str()).collect();
        // 800 - 50 mandatory - 150 memory = 600, of which web reserves its 150 (under 30 %):
        // 450 - 100 diff - 300 repo-1 = 50, so repo-2 is dropped and web-1 kept.
        assert_eq!(kept, ["mem-1", "diff-1", "repo-1", "web-1"]);
        assert_eq!(f.drops.len(), 1);
        assert_eq!(f.drops[0].source, "repo-2");
        assert_eq!(f.drops[0].slot, Slot::Repo);
        assert_eq!(f.prompt_tokens, 750);
        let repo = f.slots.iter().find(|s| s.slot == Slot::Repo).unwrap();
        assert_eq!((repo.allotted, repo.used, repo.items), (350, 300, 1));

        // Web beyond its reserve: it keeps 30 % of the context part, the rest goes in order.
        let pieces = vec![
            piece(Slot::Web, "web-1", 150, 0),
            piece(Slot::Web, "web-2", 150, 1),
            piece(Slot::Repo, "repo-1", 300, 0),
            piece(Slot::Repo, "repo-2", 100, 1),
            piece(Slot::Memory, "mem-1", 150, 0),
        ];
        let f = fit(&p, &counter(), 50, pieces, &|_| 0).unwrap();
        let kept: Vec<&str> = f.kept.iter().map(|p| p.citation.as_str()).collect();
        // 600 left: web reserves 180 of its 300; repo takes 400 of 420; web gets 200.
        assert_eq!(kept, ["mem-1", "repo-1", "repo-2", "web-1"]);
        let drops: Vec<&str> = f.drops.iter().map(|d| d.source.as_str()).collect();
        assert_eq!(drops, ["web-2"]);
        assert!(f.drops[0].reason.contains("web slot"), "{}", f.drops[0].reason);
    }

    #[test]
    fn library_passages_keep_their_reserve_ahead_of_the_repo() {
        // tour37 F3: weak repository hits filled everything and left the library's best
        // passages no room. 600 left after memory: the library reserves 120 (20 %) of its 300.
        let p = plan(1000, 100);
        let pieces = vec![
            piece(Slot::Library, "lib-1", 100, 0),
            piece(Slot::Library, "lib-2", 200, 1),
            piece(Slot::Repo, "repo-1", 300, 0),
            piece(Slot::Repo, "repo-2", 150, 1),
            piece(Slot::Repo, "repo-3", 100, 2),
            piece(Slot::Memory, "mem-1", 150, 0),
        ];
        let f = fit(&p, &counter(), 50, pieces, &|_| 0).unwrap();
        let kept: Vec<&str> = f.kept.iter().map(|p| p.citation.as_str()).collect();
        // The repo gets 480: repo-1 and repo-2, and repo-3 no longer fits; the library gets
        // the 30 left plus its 120, room for its best passage (before: 30, room for none).
        assert_eq!(kept, ["mem-1", "repo-1", "repo-2", "lib-1"]);
        let drops: Vec<&str> = f.drops.iter().map(|d| d.source.as_str()).collect();
        assert_eq!(drops, ["repo-3", "lib-2"]);
    }

    #[test]
    fn memory_is_capped_by_its_share_plus_what_the_system_left() {
        let p = plan(1000, 100);
        let pieces = vec![piece(Slot::Memory, "m1", 180, 0), piece(Slot::Memory, "m2", 100, 1)];
        // System share 100, mandatory 60: 40 left passes to memory (cap 240).
        let f = fit(&p, &counter(), 60, pieces, &|_| 0).unwrap();
        assert_eq!(f.kept.len(), 1);
        let mem = f.slots.iter().find(|s| s.slot == Slot::Memory).unwrap();
        assert_eq!((mem.allotted, mem.used, mem.dropped), (240, 180, 1));
        // What memory left flows on to the repo.
        let diff = f.slots.iter().find(|s| s.slot == Slot::Diff).unwrap();
        assert_eq!(diff.allotted, 800 - 60 - 180);
    }

    #[test]
    fn history_goes_oldest_first_and_is_placed_in_order() {
        let p = plan(1000, 100);
        // Offered newest first (order = position in the conversation).
        let pieces = vec![
            piece(Slot::History, "turn-3", 300, 2),
            piece(Slot::History, "turn-2", 300, 1),
            piece(Slot::History, "turn-1", 300, 0),
        ];
        let f = fit(&p, &counter(), 50, pieces, &|_| 0).unwrap();
        let kept: Vec<&str> = f.kept.iter().map(|p| p.citation.as_str()).collect();
        assert_eq!(kept, ["turn-2", "turn-3"]);
        assert_eq!(f.drops[0].source, "turn-1");
    }

    #[test]
    fn history_is_the_latest_unbroken_stretch_opening_with_a_question() {
        let p = plan(1000, 100);
        // Newest first: a big answer in the middle does not fit; nothing older may then be kept
        // (it left a question without its answer), and the kept stretch may not open with an
        // answer whose question was dropped.
        let pieces = vec![
            piece(Slot::History, "user message 6", 100, 5),
            piece(Slot::History, "assistant message 5", 100, 4),
            piece(Slot::History, "user message 4", 100, 3),
            piece(Slot::History, "assistant message 3", 2000, 2),
            piece(Slot::History, "user message 2", 10, 1),
            piece(Slot::History, "assistant message 1", 10, 0),
        ];
        let f = fit(&p, &counter(), 50, pieces, &|_| 0).unwrap();
        let kept: Vec<&str> = f.kept.iter().map(|p| p.citation.as_str()).collect();
        assert_eq!(kept, ["user message 4", "assistant message 5", "user message 6"]);
        let dropped: Vec<&str> = f.drops.iter().map(|d| d.source.as_str()).collect();
        assert_eq!(dropped, ["assistant message 3", "user message 2", "assistant message 1"]);
        assert!(f.drops[1].reason.contains("unbroken stretch"), "{}", f.drops[1].reason);
        // Only room for the newest answer and not its question: the answer goes too.
        let pieces =
            vec![piece(Slot::History, "assistant message 2", 100, 1), piece(Slot::History, "user message 1", 2000, 0)];
        let f = fit(&p, &counter(), 50, pieces, &|_| 0).unwrap();
        assert!(f.kept.is_empty(), "{:?}", f.kept.iter().map(|p| &p.citation).collect::<Vec<_>>());
        assert!(f.drops.last().unwrap().reason.contains("question was left out"));
        let h = f.slots.iter().find(|s| s.slot == Slot::History).unwrap();
        assert_eq!((h.used, h.items, h.dropped), (0, 0, 2));
        assert_eq!(f.prompt_tokens, 50, "the orphan's tokens are given back");
    }

    #[test]
    fn a_piece_too_big_whole_falls_back_to_its_snippet() {
        let p = plan(1000, 100);
        let mut big = piece(Slot::Repo, "a.rs:1-400", 2000, 0);
        big.fallback = Some(Box::new(piece(Slot::Repo, "a.rs:10-14", 40, 0)));
        let f = fit(&p, &counter(), 50, vec![big], &|_| 5).unwrap();
        assert_eq!(f.kept[0].citation, "a.rs:10-14");
        assert!(f.drops[0].reason.starts_with("trimmed to a.rs:10-14"), "{}", f.drops[0].reason);
        let repo = f.slots.iter().find(|s| s.slot == Slot::Repo).unwrap();
        assert_eq!(repo.used, 45, "section heading counted once");
    }

    #[test]
    fn a_huge_text_is_counted_only_until_it_passes_the_limit() {
        let c = counter();
        let words: String = (0..700_000).map(|i| format!("sigma{i} ")).collect();
        let (n, exact) = c.count_within(&words, 1000);
        // Stopped after a prefix: past the limit, nowhere near the millions of the whole.
        assert!(!exact && n > 1000 && n < 1000 * COUNT_BYTES_PER_TOKEN as u32, "{n}");
        assert_eq!(c.count_within("hello world", 1000), (2, true));
        let short = &words[..20_000];
        assert_eq!(c.count_within(short, 100_000), (c.count(short), true));
    }

    #[test]
    fn a_question_larger_than_the_window_is_a_clear_error() {
        let p = plan(1000, 100);
        let err = fit(&p, &counter(), 900, Vec::new(), &|_| 0).unwrap_err();
        assert!(err.to_string().contains("context_tokens"), "{err}");
        assert_eq!(err.code(), "context_length_exceeded");
    }

    #[test]
    fn ratios_are_measured_bounded_and_persisted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ratios.json");
        let book = RatioBook::new(path.clone());
        assert_eq!(book.get("m"), None);
        assert_eq!(book.record("m", 100, 120), Some(1.2));
        assert_eq!(book.record("m", 100, 10), None, "a cached prompt is not a measurement");
        assert_eq!(book.record("m", 100, 140), Some(1.3));
        assert_eq!(RatioBook::new(path).get("m"), Some(1.3));
    }
}
