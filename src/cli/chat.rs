//! `docdex chat`: one question (`docdex chat "..."` or `--query`) or an interactive session reading questions from
//! stdin, answered by [`Engine::chat`] with the answer printed as it streams, then the sources
//! (cited ones marked) and, with `--trace`, the waterfall trace. `--json` prints each turn's
//! whole response instead (one document for `--query`, one line per turn in a session).

use super::output::{visible, Out};
use super::RepoArg;
use crate::engine::protocol::{
    AnswerStatus, ChatSource, ChatTrace, ChatTurnEvent, ChatTurnRequest, ChatTurnResponse, DiffRequest,
    EvolutionAction, EvolutionOutcome, GateTrace, StepStatus, WebPolicy, WebTrace,
};
use crate::engine::protocol::{ChatMessage, Role};
use crate::engine::Engine;
use std::io::{BufRead, IsTerminal, Write};
use std::ops::ControlFlow;
use std::path::Path;
use std::process::ExitCode;

/// Flags of `docdex chat`.
#[derive(Debug, clap::Args)]
pub struct ChatArgs {
    #[command(flatten)]
    repo: RepoArg,
    /// The question (`docdex chat "why does X fail"`). Without it, an interactive session reads
    /// one question per line from stdin.
    #[arg(value_name = "QUESTION", conflicts_with = "query")]
    words: Vec<String>,
    /// The question, as a flag (the same as the positional QUESTION).
    #[arg(long, short = 'q')]
    query: Option<String>,
    /// The agent asking: its profile's preferences go into the context (Tier 0) and the turn is
    /// recorded under it in the reasoning DAG.
    #[arg(long)]
    agent: Option<String>,
    /// Ask for the web tier even when local results are confident.
    #[arg(long, conflicts_with = "no_web")]
    force_web: bool,
    /// Never ask for the web tier.
    #[arg(long)]
    no_web: bool,
    /// Print the waterfall trace after the answer: tiers, gate, budget per slot, drops, timings.
    #[arg(long)]
    trace: bool,
    /// Add the git diff to the context: `working` (the default), `staged`, or a range
    /// (`main..HEAD`, `HEAD~3`), expanded one hop through the impact graph.
    #[arg(long, num_args = 0..=1, default_missing_value = "working", value_name = "working|staged|RANGE")]
    diff: Option<String>,
    /// Only diff these paths (repeatable; needs --diff).
    #[arg(long = "path", requires = "diff", value_name = "PATH")]
    paths: Vec<String>,
    /// The chat model (default `[llm] default_model`).
    #[arg(long)]
    model: Option<String>,
    /// Print each turn's response as JSON (answer, sources, trace) instead of streaming text.
    #[arg(long)]
    json: bool,
}

impl ChatArgs {
    /// One question with the web tier forced (`docdex web-rag`).
    pub fn web_forced(repo: RepoArg, query: String, trace: bool, model: Option<String>, json: bool) -> ChatArgs {
        ChatArgs {
            repo,
            words: Vec::new(),
            query: Some(query),
            agent: None,
            force_web: true,
            no_web: false,
            trace,
            diff: None,
            paths: Vec::new(),
            model,
            json,
        }
    }

    /// True when `--json` was given.
    pub fn json(&self) -> bool {
        self.json
    }

    fn request(&self, query: String, history: Vec<ChatMessage>, session_id: Option<String>) -> ChatTurnRequest {
        ChatTurnRequest {
            query,
            history,
            session_id,
            agent_id: self.agent.clone(),
            web: if self.force_web {
                WebPolicy::Force
            } else if self.no_web {
                WebPolicy::Off
            } else {
                WebPolicy::Auto
            },
            diff: self.diff.clone().map(|target| DiffRequest { target, paths: self.paths.clone() }),
            model: self.model.clone(),
            max_answer_tokens: None,
            ..Default::default()
        }
    }
}

/// Runs `docdex chat`.
pub fn run(engine: &Engine, out: &Out, mut args: ChatArgs) -> anyhow::Result<ExitCode> {
    if args.query.is_none() && !args.words.is_empty() {
        args.query = Some(std::mem::take(&mut args.words).join(" "));
    }
    let repo = args.repo.resolve()?;
    let code = match args.query.clone() {
        Some(q) => {
            let resp = turn(engine, out, &args, &repo, args.request(q, Vec::new(), None), args.trace)?;
            Ok(match resp.llm.status {
                AnswerStatus::Answered => ExitCode::SUCCESS,
                // Ctrl-C: as a shell reports an interrupted command, so a script can tell a cut
                // answer from a whole one.
                // No one reading on (`| head`) is no interruption: the reader had what it wanted.
                AnswerStatus::Stopped if super::output::stdout_closed() => ExitCode::SUCCESS,
                AnswerStatus::Stopped => ExitCode::from(130),
                AnswerStatus::Unavailable | AnswerStatus::Failed => ExitCode::from(1),
            })
        }
        None => repl(engine, out, &args, &repo),
    };
    // A message that stated a preference is being learnt in the background: the answer is
    // already printed, so finish learning before the process exits.
    if !engine.profile_settle(std::time::Duration::from_secs(60)) {
        out.note("note: a profile update is still running and was left unfinished");
    }
    code
}

/// The interactive session: one question per line; `/new`, `/trace`, `/help`, `/exit`.
fn repl(engine: &Engine, out: &Out, args: &ChatArgs, repo: &Path) -> anyhow::Result<ExitCode> {
    let interactive = std::io::stdin().is_terminal();
    if interactive {
        out.note(&format!(
            "chatting about {} (one question per line; /help for commands, Ctrl-D to leave)",
            super::display_repo(repo)
        ));
    }
    let mut history: Vec<ChatMessage> = Vec::new();
    // Named here, not by the first answer: a turn that fails (a question too long for the
    // window) stays in the conversation's reasoning session instead of starting its own.
    let mut session = Some(uuid::Uuid::new_v4().to_string());
    let mut show_trace = args.trace;
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    // Questions piped in, answers to a reader that has gone: the rest would go to no one.
    while !super::output::stdout_closed() {
        if interactive {
            eline_partial!("> ");
            let _ = std::io::stderr().flush();
        }
        let Some(line) = lines.next() else { break };
        let line = line?;
        let q = line.trim();
        match q {
            "" => continue,
            "/exit" | "/quit" => break,
            "/new" => {
                history.clear();
                session = Some(uuid::Uuid::new_v4().to_string());
                out.note("new conversation");
                continue;
            }
            "/trace" => {
                show_trace = !show_trace;
                out.note(if show_trace { "trace on" } else { "trace off" });
                continue;
            }
            "/help" => {
                out.note(REPL_HELP);
                continue;
            }
            _ if is_command(q) => {
                // A mistyped command is no question: it was sent to the model as one.
                let name = q.split_whitespace().next().unwrap_or(q);
                out.note(&format!("unknown command {}: {REPL_HELP}", visible(name)));
                continue;
            }
            _ => {}
        }
        let req = args.request(q.to_string(), history.clone(), session.clone());
        let resp = match turn(engine, out, args, repo, req, show_trace) {
            Ok(r) => r,
            Err(e) => {
                eline!("{} {}", super::output::error_prefix(), super::output::guard(&format!("{e:#}"), false));
                continue;
            }
        };
        session = Some(resp.session_id.clone());
        if let Some(answer) = resp.history_answer() {
            history.push(ChatMessage::new(Role::User, resp.query));
            history.push(ChatMessage::new(Role::Assistant, answer));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The session's commands, as `/help` and an unknown command list them.
const REPL_HELP: &str =
    "commands: /new starts a new conversation, /trace toggles the trace, /help shows this, /exit or /quit leaves (or Ctrl-D)";

/// True when a session line is a command rather than a question: its first word is `/` and
/// letters only (`/bogus`, `/Trace`), so a question opening with a path (`/etc/hosts is read
/// where?`) is still a question.
fn is_command(line: &str) -> bool {
    let first = line.split_whitespace().next().unwrap_or("");
    first.strip_prefix('/').is_some_and(|name| !name.is_empty() && name.chars().all(|c| c.is_ascii_alphabetic()))
}

/// One turn: streams (human) or collects (JSON), then prints sources and the trace.
fn turn(
    engine: &Engine,
    out: &Out,
    args: &ChatArgs,
    repo: &Path,
    req: ChatTurnRequest,
    show_trace: bool,
) -> anyhow::Result<ChatTurnResponse> {
    let _interrupt = interrupt::Guard::install();
    let mut streamed = false;
    let mut on_event = |ev: ChatTurnEvent| {
        // Ctrl-C, or no one reading the answer any more (`docdex chat q | head -3`).
        if interrupt::hit() || super::output::stdout_closed() {
            return ControlFlow::Break(());
        }
        match ev {
            ChatTurnEvent::Token { text } if !args.json => {
                // A model may repeat a file's escape sequences: shown, not obeyed.
                let _ = super::output::write_stdout(super::output::visible_text(&text).as_bytes());
                streamed = true;
            }
            ChatTurnEvent::Notice { message } if !args.json => {
                if streamed {
                    let _ = super::output::write_stdout(b"\n");
                    streamed = false;
                }
                eline!("{} {}", super::output::warn_prefix(), super::output::visible(&message));
            }
            _ => {}
        }
        ControlFlow::Continue(())
    };
    let resp = interrupt::stopping(&req.cancel, || engine.chat(repo, &req, &mut on_event))?;
    if args.json {
        out.json_line(&if args.query.is_some() {
            serde_json::to_string_pretty(&resp)?
        } else {
            serde_json::to_string(&resp)?
        });
        return Ok(resp);
    }
    if streamed {
        out.line("");
    }
    if resp.llm.status == AnswerStatus::Stopped && !super::output::stdout_closed() {
        out.note("(answer stopped)");
    }
    if resp.answer.is_none() && resp.llm.status != AnswerStatus::Stopped {
        print_found(out, &resp);
    } else {
        print_sources(out, &resp.sources);
    }
    if show_trace {
        // Its notices were printed as warnings while the turn ran.
        print_trace(out, &resp.trace, &resp.trace.notices);
    }
    out.note(&format!(
        "session {} (turn {}): `docdex dag view {}`",
        short(&resp.session_id),
        resp.turn,
        short(&resp.session_id)
    ));
    // A message that stated a preference: what the profile learnt from it, once decided.
    if let Some(o) = engine.profile_learn_outcome(&resp.trace.request_id, LEARN_WAIT) {
        print_learnt(out, &o);
    }
    Ok(resp)
}

/// How long a turn waits for the model to decide what its message teaches the profile.
const LEARN_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// What a chat message taught the profile: the preference written (with its rule, which the
/// pre-commit gatekeeper enforces) and how to undo it, or why nothing was written. It was said
/// only in the reasoning DAG, so a commit-blocking rule could be learnt unseen.
fn print_learnt(out: &Out, o: &EvolutionOutcome) {
    let agent = &o.agent_id;
    let text = match (o.action, &o.preference) {
        (EvolutionAction::Add | EvolutionAction::Update, Some(p)) => {
            let rule = match &p.rule {
                Some(r) => format!(", rule `{r}`: the pre-commit gatekeeper refuses commits that break it"),
                None => String::new(),
            };
            let head = match &o.previous_content {
                Some(old) if o.action == EvolutionAction::Update => {
                    format!(
                        "profile: {agent}'s preference {} changed from \"{old}\" to \"{}\"",
                        short(&p.id),
                        p.content
                    )
                }
                _ => format!("profile: {agent} learnt \"{}\"", p.content),
            };
            format!(
                "{head} ({}{rule}); undo: `docdex profile edit {}` or `docdex profile remove {}`",
                p.category,
                short(&p.id),
                short(&p.id)
            )
        }
        _ => format!("profile: nothing learnt for {agent}: {}", o.reasoning),
    };
    out.line("");
    out.line(&out.paint("1", &text));
}

fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// The sources placed in the prompt; `*` marks those the answer cites.
fn print_sources(out: &Out, sources: &[ChatSource]) {
    if sources.is_empty() {
        out.line(&out.paint("2", "no sources: nothing in the index matched"));
        return;
    }
    let cited = sources.iter().filter(|s| s.cited).count();
    out.line("");
    out.line(&out.paint("1", &format!("sources ({cited} of {} cited)", sources.len())));
    for s in sources {
        let mark = if s.cited { out.paint("1;32", "*") } else { " ".into() };
        let note = if s.note.is_empty() { String::new() } else { format!("  {}", s.note) };
        out.line(&format!(
            "{mark} {}  {}{}",
            out.paint("1;35", &s.citation),
            out.paint("2", s.slot.name()),
            out.paint("2", &note)
        ));
    }
}

/// No answer: what was found, as `docdex search` shows it (each of the best sources with its
/// lines), then the rest as citations. It was the citations alone, under "sources (0 of 13
/// cited)", though nothing could cite them: less than `docdex search` shows.
fn print_found(out: &Out, resp: &ChatTurnResponse) {
    if resp.sources.is_empty() {
        out.line(&out.paint("2", "no sources: nothing in the index matched"));
        return;
    }
    let mut page = String::new();
    let mut line = |s: &str| {
        page.push_str(s);
        page.push('\n');
    };
    line("");
    let shown = resp.excerpts.len();
    line(&out.paint("1", &no_model_header(resp.sources.len(), shown)));
    for x in &resp.excerpts {
        line("");
        line(&format!("{}  {}", out.paint("1;35", &x.citation), out.paint("2", &format!("{:.2}", x.score))));
        for (i, text) in x.text.lines().enumerate() {
            let n = x.line_start + i as u32;
            line(&format!("{} {}", out.paint("32", &format!("{n:>5}:")), visible(text)));
        }
    }
    let rest: Vec<&ChatSource> =
        resp.sources.iter().filter(|s| !resp.excerpts.iter().any(|x| x.citation == s.citation)).collect();
    if !rest.is_empty() {
        line("");
        if shown > 0 {
            line(&out.paint("2", "also in the context:"));
        }
        for s in rest {
            let note = if s.note.is_empty() { String::new() } else { format!("  {}", s.note) };
            line(&format!(
                "  {}  {}{}",
                out.paint("1;35", &s.citation),
                out.paint("2", s.slot.name()),
                out.paint("2", &note)
            ));
        }
    }
    out.block(&page);
}

/// The trace as a few aligned blocks: steps, gate, web, budget, model and timings, without
/// the notices already printed (`said`): a step whose detail is one of them points at it
/// instead of saying it again (the fix-it message for a missing model was printed three times
/// with `--trace`: the warning, the `llm` step, the trace's note).
pub fn print_trace(out: &Out, t: &ChatTrace, said: &[String]) {
    out.line("");
    out.line(&out.paint("1", "trace"));
    print_steps(out, t, said);
    print_gate(out, &t.gate);
    if let Some(w) = &t.web {
        print_web(out, w);
    }
    print_budget(out, t);
    print_model_and_time(out, t);
    for n in t.notices.iter().filter(|n| !said.contains(n)) {
        out.line(&format!("note    {}", visible(n)));
    }
}

/// One line per waterfall step, coloured by how it went.
fn print_steps(out: &Out, t: &ChatTrace, said: &[String]) {
    for s in &t.steps {
        let status = serde_json::to_value(s.status).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
        let color = match s.status {
            StepStatus::Ran => "32",
            StepStatus::Skipped | StepStatus::Absent => "2",
            StepStatus::Unavailable => "33",
            StepStatus::Failed => "31",
        };
        out.line(&format!(
            "  {} {:<11} {} {:>8.1} ms  {}",
            s.tier,
            s.name,
            out.paint(color, &format!("{status:<11}")),
            s.ms,
            if said.contains(&s.detail) { "(the warning above)".to_string() } else { visible(&s.detail) }
        ));
    }
}

/// The confidence gate: whether local hits sufficed and whether the web was wanted.
fn print_gate(out: &Out, g: &GateTrace) {
    let top: Vec<String> = g.top_hits.iter().map(|h| format!("{} {:.2}", visible(&h.citation), h.score)).collect();
    out.line(&format!(
        "gate    confidence {:.2} vs threshold {:.2}: {}; web {}",
        g.confidence,
        g.threshold,
        if g.passed { "passed" } else { "below" },
        if g.web_wanted { "wanted" } else { "not wanted" }
    ));
    if !top.is_empty() {
        out.line(&format!("        top: {}", top.join(", ")));
    }
}

/// The web tier: discovery, then one line per fetched page.
fn print_web(out: &Out, w: &WebTrace) {
    let discovery = w.discovery.and_then(|d| serde_json::to_value(d).ok()).and_then(|v| v.as_str().map(String::from));
    out.line(&format!(
        "web     {:?}: discovery {} via {} ({} results, waited {} ms, {:.0} ms); total {:.0} ms",
        w.query,
        discovery.unwrap_or_else(|| "-".into()),
        if w.discovery_source.is_empty() { "-".to_string() } else { visible(&w.discovery_source) },
        w.results,
        w.discovery_waited_ms,
        w.discovery_ms,
        w.ms
    ));
    for p in &w.pages {
        let name = |v: serde_json::Value| v.as_str().map(String::from).unwrap_or_default();
        let status = serde_json::to_value(p.status).map(name).unwrap_or_default();
        let via = p.via.and_then(|v| serde_json::to_value(v).ok()).map(name).unwrap_or_default();
        out.line(&format!(
            "        {:<8} {:<8} {:>7.0} ms  waited {:>5} ms  {} passages  {}{}",
            status,
            via,
            p.ms,
            p.waited_ms,
            p.passages,
            visible(&p.url),
            p.error.as_deref().map(|e| format!("  ({})", visible(e))).unwrap_or_default()
        ));
    }
}

/// The token budget: the window, then each slot's allotment, use and drops.
fn print_budget(out: &Out, t: &ChatTrace) {
    let b = &t.budget;
    out.line(&format!(
        "budget  window {} tokens from {}; answer cap {}",
        b.context_window, b.window_source, b.max_answer_tokens
    ));
    out.line(&format!("        tokens: {}", b.tokenizer.note));
    out.line(&format!("        {:<11} {:>8} {:>8} {:>6} {:>8}", "slot", "allotted", "used", "items", "dropped"));
    for s in &b.slots {
        out.line(&format!(
            "        {:<11} {:>8} {:>8} {:>6} {:>8}  {}",
            s.slot.name(),
            s.allotted,
            s.used,
            s.items,
            s.dropped,
            bar(s.used, s.allotted)
        ));
    }
    for d in &t.drops {
        out.line(&format!(
            "drop    {} {} ({} tokens): {}",
            d.slot.name(),
            visible(&d.source),
            d.tokens,
            visible(&d.reason)
        ));
    }
}

/// The model that answered, its token counts, and where the time went.
fn print_model_and_time(out: &Out, t: &ChatTrace) {
    let m = &t.model;
    out.line(&format!(
        "model   {} via {} at {}: prompt {} tokens (ours){}{}",
        m.model,
        m.provider,
        m.base_url,
        m.prompt_tokens_estimated,
        m.prompt_tokens_reported.map(|n| format!(", {n} (server's)")).unwrap_or_default(),
        m.completion_tokens.map(|n| format!(", answer {n} tokens")).unwrap_or_default()
    ));
    let tm = &t.timings_ms;
    let opt = |v: Option<f64>| v.map(|x| format!("{x:.1}")).unwrap_or_else(|| "-".into());
    out.line(&format!(
        "time    retrieval {:.1} ms, web {:.1}, memory {:.1}, diff {:.1}, assembly {:.1}, first token {}, generation {}, total {:.1}",
        tm.retrieval,
        tm.web,
        tm.memory,
        tm.diff,
        tm.assembly,
        opt(tm.first_token),
        opt(tm.generation),
        tm.total
    ));
}

/// A ten-cell bar of `used` against `allotted`.
fn bar(used: u32, allotted: u32) -> String {
    if allotted == 0 {
        return String::new();
    }
    let filled = ((u64::from(used.min(allotted)) * 10).div_ceil(u64::from(allotted))) as usize;
    format!("[{}{}]", "#".repeat(filled), ".".repeat(10 - filled))
}

/// Ctrl-C while an answer streams stops that answer (not the program); outside a turn it
/// behaves as usual.
mod interrupt {
    use std::sync::atomic::{AtomicBool, Ordering};

    static HIT: AtomicBool = AtomicBool::new(false);

    /// True once Ctrl-C was pressed during the current turn.
    pub fn hit() -> bool {
        HIT.load(Ordering::Relaxed)
    }

    /// Runs `work` while a watcher trips `cancel` within 20 ms of a Ctrl-C: the turn's
    /// callback only runs when an event arrives, and none does while the model server reads
    /// the prompt or does not answer at all.
    pub fn stopping<T>(cancel: &crate::engine::protocol::CancelToken, work: impl FnOnce() -> T) -> T {
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    if hit() {
                        cancel.cancel();
                        return;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
            });
            let out = work();
            done.store(true, Ordering::Relaxed);
            out
        })
    }

    /// Catches SIGINT until dropped.
    pub struct Guard;

    #[cfg(unix)]
    extern "C" fn on_sigint(_: libc::c_int) {
        HIT.store(true, Ordering::Relaxed);
    }

    impl Guard {
        /// Starts catching Ctrl-C.
        pub fn install() -> Guard {
            HIT.store(false, Ordering::Relaxed);
            // SAFETY: the handler only performs an atomic store, which is async-signal-safe.
            #[cfg(unix)]
            unsafe {
                libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t);
            }
            Guard
        }
    }

    impl Drop for Guard {
        fn drop(&mut self) {
            // SAFETY: restoring the default disposition.
            #[cfg(unix)]
            unsafe {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
            }
        }
    }
}

/// The heading over what a chat without a model found: `sources` found, `shown` with lines
/// ("1 sources" was printed).
fn no_model_header(sources: usize, shown: usize) -> String {
    let found = match sources {
        1 => "1 source".to_string(),
        n => format!("{n} sources"),
    };
    match shown {
        0 => format!("found without a model: {found}"),
        1 if sources == 1 => format!("found without a model: {found}, with its lines"),
        n if n == sources => format!("found without a model: {found}, with their lines"),
        n => format!("found without a model: {found}, the best {n} with their lines"),
    }
}

#[cfg(test)]
mod tests {
    use super::no_model_header;

    #[test]
    fn the_no_model_heading_counts_in_words() {
        assert_eq!(no_model_header(1, 1), "found without a model: 1 source, with its lines");
        assert_eq!(no_model_header(3, 3), "found without a model: 3 sources, with their lines");
        assert_eq!(no_model_header(1, 0), "found without a model: 1 source");
        assert_eq!(no_model_header(7, 3), "found without a model: 7 sources, the best 3 with their lines");
    }
}
