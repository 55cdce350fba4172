//! `docdex impact` (a file's dependencies and dependents, `impact diagnostics`) and
//! `docdex graph` (`cycles`, `rebuild`): argument parsing and printing over the engine's
//! impact methods. Every edge is printed `source -> target`: the source imports the target.

use super::output::{count, visible, Out};
use super::RepoArg;
use crate::engine::protocol::{
    CyclesResponse, Dependency, DiagnosticsRequest, DiagnosticsResponse, Direction, ImpactRequest, ImpactResponse,
    RebuildSummary, TestsRequest, TestsResponse, MAX_NODES_PER_SIDE,
};
use crate::engine::protocol::{Diagnostic, Edge};
use crate::engine::Engine;
use crate::error::Error;

/// `docdex impact`.
/// `docdex impact --repo P diagnostics` reaches the subcommand too: with clap's
/// `args_conflicts_with_subcommands`, any option before it made `diagnostics` the FILE.
#[derive(Debug, clap::Args)]
pub struct ImpactArgs {
    #[command(subcommand)]
    action: Option<ImpactAction>,
    #[command(flatten)]
    repo: RepoArg,
    /// The file to analyse (repo-relative, or relative to the current directory inside the
    /// repo; `ext:<package>` for an external package). Also accepted as `--file FILE`.
    #[arg(value_name = "FILE", conflicts_with = "file")]
    path: Option<String>,
    /// The same as the positional FILE.
    #[arg(long, short, value_name = "FILE")]
    file: Option<String>,
    /// Import hops to follow (1 to 64; default 1). Not with --tests or diagnostics, which
    /// follow no hops of their own choosing: refused there rather than ignored.
    #[arg(long, short)]
    depth: Option<u32>,
    /// in: files importing it; out: what it imports; both (the default). Not with --tests or
    /// diagnostics.
    #[arg(long, value_enum)]
    direction: Option<DirectionArg>,
    /// List the test files that exercise the file instead (by import, at any depth, or by name).
    #[arg(long)]
    tests: bool,
    /// Print the docdex.impact_graph JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Subcommand)]
enum ImpactAction {
    /// Imports that could not be resolved, by file (dynamic imports, missing files).
    Diagnostics {
        /// Only this file's.
        #[arg(long, short)]
        file: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum DirectionArg {
    In,
    Out,
    Both,
}

impl From<DirectionArg> for Direction {
    fn from(d: DirectionArg) -> Direction {
        match d {
            DirectionArg::In => Direction::In,
            DirectionArg::Out => Direction::Out,
            DirectionArg::Both => Direction::Both,
        }
    }
}

/// `docdex graph`.
#[derive(Debug, clap::Subcommand)]
pub enum GraphCommand {
    /// List import cycles (files that import each other, directly or through others).
    Cycles {
        #[command(flatten)]
        repo: RepoArg,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Re-parse the indexed code files and rebuild the impact graph without re-indexing.
    Rebuild {
        #[command(flatten)]
        repo: RepoArg,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

impl ImpactArgs {
    /// Whether errors should be printed as JSON.
    pub fn json(&self) -> bool {
        match &self.action {
            Some(ImpactAction::Diagnostics { json, .. }) => *json || self.json,
            None => self.json,
        }
    }
}

impl GraphCommand {
    /// Whether errors should be printed as JSON.
    pub fn json(&self) -> bool {
        match self {
            GraphCommand::Cycles { json, .. } | GraphCommand::Rebuild { json, .. } => *json,
        }
    }
}

/// `--depth` and `--direction` shape the neighbourhood `docdex impact F` lists; `what` (the
/// diagnostics, `--tests`) walks none of its own, so they were silently ignored there.
fn refuse_walk_flags(args: &ImpactArgs, what: &str, instead: &str) -> Result<(), Error> {
    let given: Vec<&str> = [(args.depth.is_some(), "--depth"), (args.direction.is_some(), "--direction")]
        .into_iter()
        .filter_map(|(set, flag)| set.then_some(flag))
        .collect();
    if given.is_empty() {
        return Ok(());
    }
    let verb = if given.len() > 1 { "mean" } else { "means" };
    Err(Error::BadRequest(format!("{} {verb} nothing for {what}: {instead}", given.join(" and "))))
}

/// The file `impact diagnostics` reports on: its own `--file`, or the FILE / `--file` given
/// before the subcommand (`docdex impact --file a.py diagnostics` listed the whole repository's).
fn diagnostics_file(args: &ImpactArgs, own: Option<String>) -> Result<Option<String>, Error> {
    let before = args.path.clone().or_else(|| args.file.clone());
    match (own, before) {
        (Some(a), Some(b)) if a != b => Err(Error::BadRequest(format!(
            "impact diagnostics was given two files, {b:?} and {a:?}: name one (`docdex impact diagnostics --file F`)"
        ))),
        (own, before) => Ok(own.or(before)),
    }
}

/// Runs `docdex impact ...`.
pub fn run_impact(engine: &Engine, out: &Out, args: ImpactArgs) -> anyhow::Result<()> {
    match args.action {
        Some(ImpactAction::Diagnostics { ref file, json }) => {
            refuse_walk_flags(
                &args,
                "impact diagnostics",
                "it lists each file's own unresolved imports (all files, or --file F's); for a file's neighbourhood run `docdex impact F --depth N`, whose --json nodes count their unresolved_imports",
            )?;
            if args.tests {
                return Err(Error::BadRequest(
                    "--tests and diagnostics are two questions: `docdex impact F --tests` or `docdex impact diagnostics`".into(),
                )
                .into());
            }
            let file = diagnostics_file(&args, file.clone())?.map(|f| args.repo.user_path(&f));
            let resp = engine.impact_diagnostics(&args.repo.resolve()?, &DiagnosticsRequest { file, limit: None })?;
            if json || args.json {
                out.json(&resp)?;
            } else {
                print_diagnostics(out, &resp);
            }
        }
        None => {
            let Some(file) = args.path.clone().or_else(|| args.file.clone()).map(|f| args.repo.user_path(&f)) else {
                return Err(Error::BadRequest(
                    "name a file: `docdex impact src/lib.rs` (repo-relative, or relative to the current directory), or use `docdex impact diagnostics`".into(),
                )
                .into());
            };
            if args.tests {
                refuse_walk_flags(
                    &args,
                    "--tests",
                    "it follows importers to any depth (tests import what they exercise); `docdex impact F --depth N --direction in` lists importers to a depth",
                )?;
                let resp = engine.impact_tests(&args.repo.resolve()?, &TestsRequest { file, limit: None })?;
                if args.json {
                    out.json(&resp)?;
                } else {
                    print_tests(out, &resp);
                }
                return Ok(());
            }
            let req = ImpactRequest {
                file,
                depth: Some(args.depth.unwrap_or(crate::engine::protocol::DEFAULT_DEPTH)),
                direction: Some(args.direction.unwrap_or(DirectionArg::Both).into()),
            };
            let resp = engine.impact(&args.repo.resolve()?, &req)?;
            if args.json {
                out.json(&resp)?;
            } else {
                print_impact(out, &resp);
            }
        }
    }
    Ok(())
}

fn print_tests(out: &Out, resp: &TestsResponse) {
    if resp.tests.is_empty() {
        out.line(&format!("no test file reaches {} through the import graph or by name", visible(&resp.file)));
        return;
    }
    // "1 test file exercise F" read wrong (tour16 F4): the verb agrees with the count.
    let verb = if resp.tests.len() == 1 { "exercises" } else { "exercise" };
    out.line(&format!("{} {verb} {}:", count(resp.tests.len(), "test file"), visible(&resp.file)));
    for t in resp.tests.iter().take(LISTED) {
        out.line(&format!("  {}  ({})", visible(&t.path), visible(&t.reason)));
    }
    if resp.tests.len() > LISTED {
        out.line(&format!("  ... and {} more (--json lists all)", resp.tests.len() - LISTED));
    }
}

/// Runs `docdex graph ...`.
pub fn run_graph(engine: &Engine, out: &Out, cmd: GraphCommand) -> anyhow::Result<()> {
    match cmd {
        GraphCommand::Cycles { repo, json } => {
            let resp = engine.graph_cycles(&repo.resolve()?)?;
            if json {
                out.json(&resp)?;
            } else {
                print_cycles(out, &resp);
            }
        }
        GraphCommand::Rebuild { repo, json } => {
            let repo = repo.resolve()?;
            let bar = super::progress::Bar::new(!json);
            let (resp, interrupted) = super::interrupt::stoppable(|| engine.rebuild_impact_graph(&repo, &bar));
            bar.finish();
            let resp = match resp {
                Err(Error::Cancelled) if interrupted => return Err(anyhow::Error::new(Error::Cancelled).context(
                    "graph rebuild stopped (Ctrl-C): nothing was written, the impact graph is still the last one built",
                )),
                other => other?,
            };
            if json {
                out.json(&resp)?;
            } else {
                print_rebuild(out, &resp);
            }
        }
    }
    Ok(())
}

fn edge_label(e: &Edge) -> String {
    let method = e.method.name();
    let line = if e.line > 0 { format!(" line {}", e.line) } else { String::new() };
    format!("{} {}  {method} {:.2}{line}", e.kind, e.spec, e.confidence)
}

/// A graph node as a line shows it (escaped with [`visible`]: it is a file's name).
fn display_id(id: &str) -> String {
    match id.strip_prefix(crate::engine::protocol::EXTERNAL_PREFIX) {
        Some(pkg) => format!("{} (external)", visible(pkg)),
        None => visible(id),
    }
}

/// Rows printed per list; `--json` has them all. A hub imported by 5,000 files printed 2,000
/// lines of importers (the node limit) while the list of affected files stopped at 50.
const LISTED: usize = 50;
/// Hops of a cycle's loop printed before its middle is elided (a 5,000-file loop was one 98 kB
/// line); the elision is the engine's, as in the gatekeeper's messages and the risk overlay.
const LOOP_HOPS: usize = 20;

/// One side's heading and its nearest `LISTED` dependencies; `cut` when the engine stopped
/// that side at its node limit, so the count is not the whole.
fn print_side(out: &Out, title: &str, deps: &[Dependency], cut: bool, none: &str) {
    out.line("");
    let n =
        if cut { format!("{} nearest; the rest cut at the node limit", deps.len()) } else { deps.len().to_string() };
    out.line(&format!("{} ({n})", out.paint("1", title)));
    if deps.is_empty() {
        out.line(&format!("  {none}"));
    }
    for d in deps.iter().take(LISTED) {
        let arrow = format!("{} -> {}", display_id(&d.edge.source), display_id(&d.edge.target));
        let depth = if d.depth > 1 { format!("depth {}, ", d.depth) } else { String::new() };
        out.line(&format!("  {arrow}  {}", out.paint("2", &format!("{depth}{}", edge_label(&d.edge)))));
    }
    if deps.len() > LISTED {
        out.line(&format!("  ... and {} more (--json lists all)", deps.len() - LISTED));
    }
}

/// `docdex impact --file F`.
pub fn print_impact(out: &Out, r: &ImpactResponse) {
    let root = r.nodes.first();
    let flags = [
        root.filter(|n| n.in_cycle).map(|_| out.paint("1;31", "in an import cycle")),
        root.filter(|n| n.unresolved_imports > 0)
            .map(|n| out.paint("33", &format!("{} unresolved imports", n.unresolved_imports))),
    ];
    let flags: Vec<String> = flags.into_iter().flatten().collect();
    out.line(&format!(
        "{} {}{}",
        out.paint("1", "impact of"),
        out.paint("1;35", &display_id(&r.file)),
        if flags.is_empty() { String::new() } else { format!("  ({})", flags.join(", ")) }
    ));
    out.line(&out.paint("2", &format!("{}; depth {}", r.edge_semantics, r.depth)));
    let cut = |deps: &[Dependency]| r.truncated && deps.len() >= MAX_NODES_PER_SIDE;
    if r.direction != Direction::Out {
        print_side(out, "imported by", &r.inbound, cut(&r.inbound), "nothing imports it");
    }
    if r.direction != Direction::In {
        print_side(out, "imports", &r.outbound, cut(&r.outbound), "no imports");
    }
    out.line("");
    out.line(&format!("{} {}", out.paint("1", "may change if it changes:"), count(r.affected.len(), "file")));
    for a in r.affected.iter().take(LISTED) {
        out.line(&format!("  {}", visible(a)));
    }
    if r.affected.len() > LISTED {
        out.line(&format!("  ... and {} more (--json lists all)", r.affected.len() - LISTED));
    }
    if !r.diagnostics.is_empty() {
        out.line("");
        out.line(&out.paint("33", &format!("unresolved imports ({})", r.diagnostics.len())));
        for d in &r.diagnostics {
            print_diagnostic(out, d);
        }
    }
    if r.truncated {
        let hint = if r.depth > 1 { "; lower --depth for the nearest levels in full" } else { "" };
        out.line(&out.paint(
            "33",
            &format!(
                "note: each side keeps its nearest {MAX_NODES_PER_SIDE} files (the node limit); \
                 'may change if it changes' still counts every dependent{hint}"
            ),
        ));
    }
    print_graph_warnings(out, &r.graph.warnings);
}

/// The graph's warnings (outdated stored imports, a migrated file, a deleted file), one line each.
fn print_graph_warnings(out: &Out, warnings: &[String]) {
    for w in warnings {
        out.line(&format!("{} {}", out.paint("33", "warning:"), visible(w)));
    }
}

fn print_diagnostic(out: &Out, d: &Diagnostic) {
    out.line(&format!("  line {}: {} {}  {}", d.line, d.kind, visible(&d.spec), out.paint("2", &d.reason)));
}

/// `docdex impact diagnostics`.
pub fn print_diagnostics(out: &Out, r: &DiagnosticsResponse) {
    print_graph_warnings(out, &r.graph.warnings);
    if r.files.is_empty() {
        out.line("every import was resolved (to a repository file or an external package)");
        return;
    }
    for f in &r.files {
        out.line(&out.paint("1;35", &f.path));
        for d in &f.diagnostics {
            print_diagnostic(out, d);
        }
    }
    let counts: Vec<String> = r.by_code.iter().map(|(c, n)| format!("{n} {c}")).collect();
    out.line("");
    out.line(&format!(
        "{} in {} ({})",
        count(r.total, "unresolved import"),
        count(r.files.len(), "file"),
        counts.join(", ")
    ));
}

/// `docdex graph cycles`.
pub fn print_cycles(out: &Out, r: &CyclesResponse) {
    print_graph_warnings(out, &r.graph.warnings);
    if r.cycles.is_empty() {
        out.line(&format!("no import cycles among {}", count(r.graph.stats.files, "file")));
        return;
    }
    for (i, c) in r.cycles.iter().enumerate() {
        out.line(&format!(
            "{} ({}): {}",
            out.paint("1;31", &format!("cycle {}", i + 1)),
            count(c.files.len(), "file"),
            visible(&crate::engine::protocol::loop_text(&c.path, LOOP_HOPS))
        ));
        if c.files.len() > c.path.len().saturating_sub(1) {
            for f in c.files.iter().take(20) {
                out.line(&format!("  {}", visible(f)));
            }
            if c.files.len() > 20 {
                out.line(&format!("  ... and {} more", c.files.len() - 20));
            }
        }
    }
    out.line("");
    out.line(&format!("{}, {} in cycles", count(r.cycles.len(), "cycle"), count(r.files_in_cycles, "file")));
}

/// `docdex graph rebuild`.
pub fn print_rebuild(out: &Out, r: &RebuildSummary) {
    out.line(&format!(
        "{} impact graph: {}, {}, {}, {} external, {} unresolved (parse {:.0} ms, build {:.0} ms)",
        out.paint("1;32", "rebuilt"),
        count(r.stats.files, "file"),
        count(r.stats.imports, "import"),
        count(r.stats.edges, "edge"),
        r.stats.external_edges,
        r.stats.unresolved,
        r.parse_ms,
        r.stats.build_ms
    ));
    for w in &r.warnings {
        out.line(&format!("{} {}", out.paint("33", "warning:"), visible(w)));
    }
}
