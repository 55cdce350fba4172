//! `docdex symbols`, `docdex symbols-status` and `docdex ast search|query`: thin adapters over
//! the engine's code-intelligence methods, printing for humans or as `--json`.

use super::output::{count, noun_for, shown, visible, Out};
use super::RepoArg;
use crate::engine::protocol::{
    AstMode, AstQueryRequest, AstQueryResponse, AstSearchRequest, AstSearchResponse, SymbolHit, SymbolsRequest,
    SymbolsResponse, SymbolsStatus,
};
use crate::engine::Engine;
use std::process::ExitCode;

/// Arguments of `docdex symbols`.
#[derive(Debug, clap::Args)]
pub struct SymbolsArgs {
    #[command(flatten)]
    repo: RepoArg,
    /// Name to look for (exact, prefix, word part or fuzzy matches, best first). Leave it out
    /// and give --file for the file's outline.
    query: Vec<String>,
    /// Only this kind: function, method, class, struct, enum, variant, interface, trait, impl,
    /// module, constant, variable, field, type, macro.
    #[arg(long, short = 'k')]
    kind: Option<String>,
    /// Only this file (repo-relative, or relative to the current directory inside the repo);
    /// without a query, its outline in order with nesting.
    #[arg(long, short = 'f')]
    file: Option<String>,
    /// Only this file or folder (whole path components: `src` is not `src2/`).
    #[arg(long = "path")]
    path_prefix: Option<String>,
    /// Only this language (rust, python, typescript, tsx, ...).
    #[arg(long)]
    lang: Option<String>,
    /// Results to show.
    #[arg(long, short = 'n', value_parser = super::count_up_to::<{crate::engine::protocol::MAX_CODE_RESULTS}>)]
    limit: Option<usize>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `docdex symbols-status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    #[command(flatten)]
    repo: RepoArg,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `docdex ast ...`.
#[derive(Debug, clap::Subcommand)]
pub enum AstCommand {
    /// Files containing Tree-sitter node kinds, most matches first.
    Search(AstSearchArgs),
    /// Per-file match counts and sample nodes with lines.
    Query(AstQueryArgs),
}

impl AstCommand {
    /// Whether `--json` was given.
    pub fn json(&self) -> bool {
        match self {
            AstCommand::Search(a) => a.json,
            AstCommand::Query(a) => a.json,
        }
    }
}

/// Arguments of `docdex ast search`.
#[derive(Debug, clap::Args)]
pub struct AstSearchArgs {
    #[command(flatten)]
    repo: RepoArg,
    /// Node kinds, comma-separated (e.g. function_item,impl_item; ERROR finds syntax errors).
    #[arg(long, required = true, value_delimiter = ',')]
    kinds: Vec<String>,
    /// Files must contain any (default) or all of the kinds.
    #[arg(long, default_value = "any", value_parser = ["any", "all"])]
    mode: String,
    /// Files to show.
    #[arg(long, short = 'n', value_parser = super::count_up_to::<{crate::engine::protocol::MAX_CODE_RESULTS}>)]
    limit: Option<usize>,
    /// Only this file or folder (whole path components: `src` is not `src2/`).
    #[arg(long = "path", visible_alias = "path-prefix")]
    path_prefix: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Arguments of `docdex ast query`.
#[derive(Debug, clap::Args)]
pub struct AstQueryArgs {
    #[command(flatten)]
    repo: RepoArg,
    /// Node kinds, comma-separated.
    #[arg(long, required = true, value_delimiter = ',')]
    kinds: Vec<String>,
    /// Files must contain any (default) or all of the kinds.
    #[arg(long, default_value = "any", value_parser = ["any", "all"])]
    mode: String,
    /// Only declarations of this name (ignoring case and underscores).
    #[arg(long)]
    name: Option<String>,
    /// Only nodes that fill this field of their parent node (a Tree-sitter field name such as
    /// name, body, parameters or return_type); parses the candidate files again.
    #[arg(long)]
    field: Option<String>,
    /// Only this file or folder (whole path components: `src` is not `src2/`).
    #[arg(long = "path", visible_alias = "path-prefix")]
    path_prefix: Option<String>,
    /// Files to show.
    #[arg(long, short = 'n', value_parser = super::count_up_to::<{crate::engine::protocol::MAX_CODE_RESULTS}>)]
    limit: Option<usize>,
    /// Sample nodes per file.
    #[arg(long)]
    sample_limit: Option<usize>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `docdex symbols`.
pub fn symbols(engine: &Engine, out: &Out, a: SymbolsArgs) -> anyhow::Result<()> {
    let path = a.repo.resolve()?;
    let query = Some(a.query.join(" ")).filter(|q| !q.trim().is_empty());
    let file = a.file.as_deref().map(|f| a.repo.user_path(f));
    let path_prefix = a.path_prefix.as_deref().map(|p| a.repo.user_path(p));
    let req = SymbolsRequest { query, kind: a.kind, file, path_prefix, lang: a.lang, limit: a.limit };
    let resp = engine.symbols(&path, &req)?;
    if a.json {
        out.json(&resp)
    } else {
        print_symbols(out, &resp);
        Ok(())
    }
}

/// Runs `docdex symbols-status`. A repository with no symbol store fails as `docdex status`
/// does (exit 3, naming `docdex index`); with `--json` the status document (`state:
/// not_built`) is still printed for scripts, the error going to stderr alone.
pub fn status(engine: &Engine, out: &Out, a: StatusArgs) -> anyhow::Result<ExitCode> {
    let path = a.repo.resolve()?;
    let s = engine.symbols_status(&path)?;
    let not_built = engine.symbols_not_built(&s);
    if !a.json {
        if let Some(e) = not_built {
            return Err(e.into());
        }
        print_status(out, &s);
        return Ok(ExitCode::SUCCESS);
    }
    out.json(&s)?;
    Ok(match not_built {
        Some(e) => {
            let e = anyhow::Error::new(e);
            eline!("{} {}", super::output::error_prefix(), super::output::guard(&format!("{e:#}"), false));
            ExitCode::from(super::exit_code(&e))
        }
        None => ExitCode::SUCCESS,
    })
}

/// Runs `docdex ast search|query`.
pub fn ast(engine: &Engine, out: &Out, cmd: AstCommand) -> anyhow::Result<()> {
    match cmd {
        AstCommand::Search(a) => {
            let path = a.repo.resolve()?;
            let req = AstSearchRequest {
                kinds: a.kinds,
                mode: a.mode.parse::<AstMode>()?,
                limit: a.limit,
                path_prefix: a.path_prefix.as_deref().map(|p| a.repo.user_path(p)),
            };
            let resp = engine.ast_search(&path, &req)?;
            if a.json {
                return out.json(&resp);
            }
            print_ast_search(out, &resp);
        }
        AstCommand::Query(a) => {
            let path = a.repo.resolve()?;
            let req = AstQueryRequest {
                kinds: a.kinds,
                mode: a.mode.parse::<AstMode>()?,
                name: a.name,
                field: a.field,
                path_prefix: a.path_prefix.as_deref().map(|p| a.repo.user_path(p)),
                limit: a.limit,
                sample_limit: a.sample_limit,
            };
            let resp = engine.ast_query(&path, &req)?;
            if a.json {
                return out.json(&resp);
            }
            print_ast_query(out, &resp);
        }
    }
    Ok(())
}

fn qualified(h: &SymbolHit) -> String {
    match &h.container {
        Some(c) => format!("{c}.{}", h.name),
        None => h.name.clone(),
    }
}

fn print_symbols(out: &Out, r: &SymbolsResponse) {
    if let Some(note) = &r.note {
        out.note(&format!("note: {}", visible(note)));
    }
    if r.mode == "outline" {
        let file = visible(r.file.as_deref().unwrap_or(""));
        let (listed, more) = if r.truncated {
            let listed = format!("{} of {}", r.results.len(), count(r.total, "symbol"));
            (listed, "; --limit lists up to 1000, --kind narrows")
        } else {
            (count(r.results.len(), "symbol"), "")
        };
        out.note(&format!("{listed} in {file} ({}){more}", shown(&r.repo)));
        for h in &r.results {
            out.line(&format!(
                "{:>5}  {}{} {}  {}",
                h.line_start,
                outline_indent(h.depth),
                out.paint("2", &format!("{:<9}", h.kind.name())),
                out.paint("1", &h.name),
                out.paint("2", &visible(&h.signature))
            ));
        }
        if r.results.is_empty() {
            out.line("no symbols (the file has no definitions docdex recognizes)");
        }
        return;
    }
    let q = r.query.as_deref().unwrap_or("");
    let more = if r.results.len() < r.total { " (-n shows more)" } else { "" };
    out.note(&format!(
        "{} of {} matching {q:?} in {}{more}",
        r.results.len(),
        count(r.total, "symbol"),
        shown(&r.repo)
    ));
    if r.results.is_empty() {
        out.line(&format!(
            "no symbol matches {q:?}; `docdex search {}` searches the text",
            visible(&crate::error::shell_word(q))
        ));
    }
    for h in &r.results {
        out.line(&format!(
            "{} {}  {}:{}{}",
            out.paint("2", &format!("{:<9}", h.kind.name())),
            out.paint("1", &qualified(h)),
            out.paint("36", &h.path),
            h.line_start,
            if h.stale { out.paint("33", "  (changed since indexed)") } else { String::new() },
        ));
        if !h.signature.is_empty() {
            out.line(&format!("          {}", out.paint("2", &visible(&h.signature))));
        }
    }
}

/// Deepest nesting an outline line is indented for; deeper symbols stay at that indent with
/// their depth written (`[d1400]`), so 1,400 nested definitions do not print 2,800 spaces.
const MAX_OUTLINE_INDENT: u32 = 16;

fn outline_indent(depth: u32) -> String {
    if depth <= MAX_OUTLINE_INDENT {
        "  ".repeat(depth as usize)
    } else {
        format!("{}[d{depth}] ", "  ".repeat(MAX_OUTLINE_INDENT as usize))
    }
}

fn print_status(out: &Out, s: &SymbolsStatus) {
    let state = match s.state.as_str() {
        "ready" => out.paint("1;32", "ready"),
        "lagging" => out.paint("1;33", "lagging"),
        other => out.paint("1;31", other),
    };
    out.line(&format!("symbols of {}: {state}", shown(&s.repo)));
    out.line(&format!(
        "  {} in {} ({} with syntax errors, {} not parsed); generation {} (text index {})",
        count(s.symbols, "symbol"),
        count(s.files, "file"),
        s.files_with_parse_errors,
        s.files_not_parsed,
        s.generation,
        s.index_generation
    ));
    out.line(&format!("  symbols_reindex_required: {}", s.symbols_reindex_required));
    for l in &s.languages {
        let drift = if l.drifted {
            out.paint("1;31", &format!(" DRIFT: indexed with {}", l.stored_grammar_version.as_deref().unwrap_or("?")))
        } else {
            String::new()
        };
        let available = if l.available { "" } else { " (grammar unavailable)" };
        out.line(&format!(
            "  {:<11} {:>6} {:<5} {:>8} {:<7}  {}{available}{drift}",
            l.lang,
            l.files,
            noun_for(&l.files, "file"),
            l.symbols,
            noun_for(&l.symbols, "symbol"),
            l.grammar_version
        ));
    }
    for m in &s.messages {
        out.line(&format!("{} {}", out.paint("33", "note:"), visible(m)));
    }
}

fn print_ast_search(out: &Out, r: &AstSearchResponse) {
    if let Some(n) = &r.note {
        out.note(&format!("note: {}", visible(n)));
    }
    let mode = if r.mode == AstMode::All { "all of" } else { "any of" };
    let kinds = r.kinds.join(", ");
    out.note(&match (r.total_files, r.results.len()) {
        (0, _) => format!("no file has {mode} {kinds}"),
        (total, shown) if shown < total => {
            format!("{shown} of the {total} files with {mode} {kinds} (--limit shows more)")
        }
        (total, _) => format!("{} with {mode} {kinds}", count(total, "file")),
    });
    for f in &r.results {
        let counts: Vec<String> = f.counts.iter().map(|(k, n)| format!("{k}={n}")).collect();
        out.line(&format!("{:>6}  {}  {}", f.total, out.paint("36", &f.path), out.paint("2", &counts.join(" "))));
    }
}

fn print_ast_query(out: &Out, r: &AstQueryResponse) {
    if let Some(n) = &r.note {
        out.note(&format!("note: {}", visible(n)));
    }
    out.note(&format!(
        "{} in {} ({} shown) for {}{}{}",
        count(r.total_matches, "match"),
        count(r.total_files, "file"),
        r.results.len(),
        r.kinds.join(", "),
        r.field.as_deref().map(|f| format!(" in field {f:?}")).unwrap_or_default(),
        r.name.as_deref().map(|n| format!(" named {n:?}")).unwrap_or_default()
    ));
    for f in &r.results {
        let counts: Vec<String> = f.counts.iter().map(|(k, n)| format!("{k}={n}")).collect();
        out.line(&format!("{}  {}", out.paint("36", &f.path), out.paint("2", &counts.join(" "))));
        for s in &f.samples {
            // With its column: two matches on one line printed as the same line twice (tour37 F9).
            let at = match s.column {
                Some(c) => format!("{}:{c}", s.line_start),
                None => s.line_start.to_string(),
            };
            let range = if s.line_end > s.line_start { format!("{at}-{}", s.line_end) } else { at };
            out.line(&format!("  {:>9}  {:<24} {}", range, out.paint("2", &s.kind), visible(&s.text)));
        }
    }
}
