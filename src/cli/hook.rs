//! `docdex hook pre-commit | install | uninstall`: the semantic gatekeeper's git side.
//!
//! `pre-commit` is a thin client (spec 001 §5.1): it reads the staged paths and their staged
//! content from git, sends them to `POST /v1/hooks/validate` on the running daemon or serve,
//! prints the violations and exits 1 on `fail`. Whenever no verdict can be had (no server
//! listening, a timeout, an error answer) it says so and exits 0: the hook fails open, so
//! docdex being down never blocks a commit. A server refusing the hook's token (401, 403) is
//! no downtime but a misconfiguration that would turn the gatekeeper off unseen: exit 2, with
//! how to pass the token. So is docdex answering that the agent to check does not exist (a
//! mistyped `--agent`), which `install` refuses up front.

use super::output::{shown, visible, warn_prefix, Out};
use crate::engine::protocol::{
    staged_text, HookStatus, HookValidateRequest, HookValidateResponse, StagedFile, Violation, TEAM_AGENT,
};
use crate::engine::Engine;
use crate::error::Error;
use anyhow::{bail, Context};
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

/// The hook's marker line: a pre-commit hook carrying it is docdex's to replace or remove.
const MARKER: &str = "# docdex-managed-hook";
/// Where an existing hook is kept while docdex's is installed (and run first by it).
const KEPT: &str = "pre-commit.before-docdex";
/// The last line of docdex's hook script: a digest of the lines above it, so an edit made since
/// `install` is seen and not deleted unsaid (tour35 F8).
const DIGEST: &str = "# docdex-digest: ";
/// The lines around docdex's check inside a husky user hook, which stays the user's file.
const BLOCK_BEGIN: &str = "# docdex-managed-hook begin";
const BLOCK_END: &str = "# docdex-managed-hook end";
/// The first line of a husky user hook docdex creates (git runs husky 8's hooks directly).
const SHEBANG: &str = "#!/usr/bin/env sh\n";
/// Staged content sent in one request, at most (the endpoint takes 32 MiB).
const MAX_REQUEST_CONTENT: usize = 24 * 1024 * 1024;
/// How long the hook waits for a verdict before failing open.
const VERDICT_TIMEOUT: Duration = Duration::from_secs(10);

/// `docdex hook`.
#[derive(Debug, clap::Args)]
pub struct HookArgs {
    #[command(subcommand)]
    action: HookAction,
}

#[derive(Debug, clap::Subcommand)]
enum HookAction {
    /// Check the staged files against the constraints' rules on the running docdex server
    /// (what the installed git hook runs). Exit 1 on violations; exit 2 for an unknown agent or
    /// a refused token; exit 0 when no server answers.
    PreCommit(PreCommitArgs),
    /// Install the git pre-commit hook in a repository (an existing hook is kept and run first).
    Install(InstallArgs),
    /// Remove docdex's pre-commit hook (putting back the one it replaced, if any).
    Uninstall(UninstallArgs),
}

#[derive(Debug, clap::Args)]
struct PreCommitArgs {
    /// The server to ask (default: DOCDEX_URL, then the running daemon's address from
    /// daemon.lock, then `[server] http_bind_addr`).
    #[arg(long)]
    url: Option<String>,
    /// Check this agent's constraints and the team's (default: the server's agent, else every
    /// agent's).
    #[arg(long)]
    agent: Option<String>,
    /// Print the server's answer as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
struct InstallArgs {
    /// The repository (default: the current directory's).
    #[arg(long)]
    repo: Option<PathBuf>,
    /// The agent whose constraints the hook checks (with the team's); it must exist in profile
    /// memory.
    #[arg(long)]
    agent: Option<String>,
    /// Replace docdex's hook even when it was edited since it was installed.
    #[arg(long)]
    force: bool,
}

#[derive(Debug, clap::Args)]
struct UninstallArgs {
    /// The repository (default: the current directory's).
    #[arg(long)]
    repo: Option<PathBuf>,
    /// Remove docdex's hook even when it was edited since it was installed.
    #[arg(long)]
    force: bool,
}

impl HookArgs {
    /// True for `pre-commit --json`.
    pub fn json(&self) -> bool {
        matches!(&self.action, HookAction::PreCommit(a) if a.json)
    }

    /// True for `pre-commit`, which must fail open even when docdex's state cannot be opened.
    pub fn fails_open(&self) -> bool {
        matches!(self.action, HookAction::PreCommit(_))
    }
}

/// Runs `docdex hook ...`.
pub fn run(engine: &Engine, out: &Out, home: Option<&Path>, args: HookArgs) -> anyhow::Result<ExitCode> {
    match args.action {
        HookAction::PreCommit(a) => Ok(pre_commit(engine, out, a)),
        HookAction::Install(a) => install(engine, out, home, a).map(|_| ExitCode::SUCCESS),
        HookAction::Uninstall(a) => uninstall(out, a).map(|_| ExitCode::SUCCESS),
    }
}

/// What the hook prints when it cannot get a verdict; always exit 0.
pub fn skip(why: &str, json: bool) -> ExitCode {
    eline!("{} docdex gave no verdict; skipping semantic checks ({})", warn_prefix(), visible(why));
    skipped_json(why, json)
}

/// Why no verdict came: nothing answered anywhere (`reached` false), or a server answered
/// without one (a refused token, an error, not docdex), which "daemon not found" misnamed.
struct NoVerdict {
    reached: bool,
    why: String,
    /// The server refused the hook's credentials (401, 403): the commit is refused.
    refused: bool,
    /// docdex answered that the agent whose constraints were asked for does not exist (or is
    /// no agent id): a misconfiguration, not downtime, so the commit is refused.
    unknown_agent: bool,
}

impl NoVerdict {
    /// No verdict for a reason that fails open: `reached` says whether a server answered.
    fn open(reached: bool, why: String) -> NoVerdict {
        NoVerdict { reached, why, refused: false, unknown_agent: false }
    }
}

/// Whether an error answer of `/v1/hooks/validate` says the agent does not exist: the code
/// `unknown_agent` (a missing agent, or an id no agent can have). A server from before that code
/// said it as `not_found` "no agent ..." (404) or `bad_request` "bad agent id ..." (400), which
/// is still read from its message. Any other error (a missing route, a busy store, an unknown
/// repository) is docdex not giving a verdict.
fn names_unknown_agent(status: u16, code: &str, message: &str) -> bool {
    code == "unknown_agent"
        || (status == 404 && code == "not_found" && message.starts_with("no agent "))
        || (status == 400 && code == "bad_request" && message.starts_with("bad agent id "))
}

/// Under `--json`, the answer when there is no verdict: `{"status": "skipped", "reason"}`.
/// stdout used to be empty, and a script reading one object read nothing.
fn skipped_json(why: &str, json: bool) -> ExitCode {
    if json {
        let _ = Out::stdout().json(&serde_json::json!({ "status": "skipped", "reason": why }));
    }
    ExitCode::SUCCESS
}

fn pre_commit(engine: &Engine, out: &Out, args: PreCommitArgs) -> ExitCode {
    let staged = match staged_files() {
        Ok(s) => s,
        Err(e) => {
            let why = format!("could not read the staged files ({e:#})");
            eline!("{} {}; skipping semantic checks", warn_prefix(), visible(&why));
            return skipped_json(&why, args.json);
        }
    };
    if staged.files.is_empty() {
        // Only files it cannot send (a name not UTF-8): said, not dropped in silence.
        for n in &staged.not_sent {
            eline!("{} {}", warn_prefix(), visible(n));
        }
        return skipped_json("no staged file to check", args.json);
    }
    if let Some(why) = malformed_url(args.url.as_deref()) {
        return misconfigured(&why, args.json);
    }
    let candidates = server_urls(engine, args.url.as_deref());
    let token = engine.config().server.auth_token.trim().to_string();
    let req = HookValidateRequest { files: staged.files, agent_id: args.agent };
    let body = serde_json::json!({
        "repo": staged.root.to_string_lossy(),
        "files": req.files,
        "agent_id": req.agent_id,
    });
    let mut answer = match ask(&candidates, &token, &body) {
        Ok(a) => a,
        Err(NoVerdict { refused: true, why, .. }) => return refused(&why, !token.is_empty(), args.json),
        Err(NoVerdict { unknown_agent: true, why, .. }) => {
            return unknown_agent(&why, req.agent_id.is_some(), args.json)
        }
        Err(NoVerdict { reached: true, why, .. }) => return skip(&why, args.json),
        Err(NoVerdict { reached: false, why, .. }) => {
            eline!("{} docdex daemon not found; skipping semantic checks ({})", warn_prefix(), visible(&why));
            return skipped_json(&why, args.json);
        }
    };
    // The files not sent are part of the answer, in `--json` too.
    answer.notices.splice(0..0, staged.not_sent);
    for n in &answer.notices {
        eline!("{} {}", warn_prefix(), visible(n));
    }
    if args.json {
        let _ = out.json(&answer);
    } else {
        report(out, &answer);
    }
    match answer.status {
        HookStatus::Pass => ExitCode::SUCCESS,
        HookStatus::Fail => ExitCode::from(1),
    }
}

/// Why the server address given (`--url`, else `DOCDEX_URL`) is no address at all, if it is
/// not one: an http(s) URL with a host. A typo there (`localhost:3210` without its scheme,
/// `htp://...`) is a misconfiguration, not downtime; it failed open with reqwest's "builder
/// error", so the gatekeeper was off for every commit behind one warning.
fn malformed_url(flag: Option<&str>) -> Option<String> {
    let (source, given) = match flag {
        Some(u) => ("--url", u.to_string()),
        None => ("DOCDEX_URL", std::env::var("DOCDEX_URL").ok()?),
    };
    let url = given.trim();
    let fine = reqwest::Url::parse(url).is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
    (!fine).then(|| {
        format!(
            "{source} \"{}\" is not a server address: give docdex's, such as http://127.0.0.1:3210 (`docdex daemon status` prints it), or leave {source} out to find the running daemon",
            visible(url)
        )
    })
}

/// A hook configured so that it cannot ask for a verdict (a malformed server address): exit
/// 2, saying what to fix and how to commit once without the check.
fn misconfigured(why: &str, json: bool) -> ExitCode {
    let reason =
        format!("docdex cannot run the pre-commit check: {why}; `git commit --no-verify` skips the check once");
    eline!("{} {reason}", super::output::error_prefix());
    if json {
        let _ = Out::stdout().json(&serde_json::json!({ "status": "refused", "reason": reason }));
    }
    ExitCode::from(2)
}

/// A server that refused the hook's token (401, 403): exit 2, saying how to pass the token
/// and how to commit once without the check. Failing open here turned the gatekeeper off for
/// every commit, with one warning line nobody reads; a server that is down still fails open.
fn refused(why: &str, sent_token: bool, json: bool) -> ExitCode {
    let which = if sent_token {
        "the token the hook sent (DOCDEX_AUTH_TOKEN or [server] auth_token) is not the server's --auth-token"
    } else {
        "the server requires a token and the hook sent none"
    };
    let reason = format!(
        "docdex refused the pre-commit check ({}): {which}; set DOCDEX_AUTH_TOKEN to the server's token in the environment git runs the hook in, or `[server] auth_token` in docdex's config.toml; `git commit --no-verify` skips the check once",
        visible(why)
    );
    eline!("{} {reason}", super::output::error_prefix());
    if json {
        let _ = Out::stdout().json(&serde_json::json!({ "status": "refused", "reason": reason }));
    }
    ExitCode::from(2)
}

/// docdex answered that the agent to check does not exist (a typo in `--agent`, or the
/// server's `--agent-id`): exit 2. Failing open here let every commit through unchecked, the
/// gatekeeper silently off, while the same commit with the right name is refused.
fn unknown_agent(why: &str, named: bool, json: bool) -> ExitCode {
    let fix = if named {
        "fix the hook's --agent (run `docdex hook install --agent NAME` again with an existing agent)"
    } else {
        "the server's agent (`serve --agent-id`, `[memory.profile] default_agent`) is not in profile memory: fix it, or pass --agent"
    };
    let reason = format!(
        "docdex refused the pre-commit check: {}; {fix}, or create the agent; `git commit --no-verify` skips the check once",
        visible(why)
    );
    eline!("{} {reason}", super::output::error_prefix());
    if json {
        let _ = Out::stdout().json(&serde_json::json!({ "status": "refused", "reason": reason }));
    }
    ExitCode::from(2)
}

/// The verdict in words, on stderr (what git shows for a hook).
fn report(out: &Out, a: &HookValidateResponse) {
    if a.status == HookStatus::Pass {
        eline!(
            "docdex: {} staged file{} pass {} rule{} ({:.1} ms)",
            a.checked_files,
            if a.checked_files == 1 { "" } else { "s" },
            a.rules.len(),
            if a.rules.len() == 1 { "" } else { "s" },
            a.elapsed_ms
        );
        return;
    }
    let n = a.violations.len();
    eline!(
        "{} commit refused: {n} violation{} of {}",
        out.paint("1;31", "docdex:"),
        if n == 1 { "" } else { "s" },
        whose(&a.violations)
    );
    for v in &a.violations {
        eline!("  {}:{}  {}", visible(&v.file), v.line, visible(&v.message));
        eline!(
            "      rule `{}` from {}'s \"{}\" (id {})",
            visible(&v.rule),
            visible(&v.agent_id),
            visible(&v.preference),
            v.preference_id
        );
    }
    eline!(
        "Fix them and commit again, or change the constraint: `docdex profile edit ID` / `docdex profile remove ID`."
    );
}

/// Whose constraints the violations break, by name: "pyjson's constraints", "the constraints
/// of pyjson and the team". The banner said "the team's" whatever agent the rules were of.
fn whose(violations: &[Violation]) -> String {
    let mut agents: Vec<&str> = Vec::new();
    for v in violations {
        if !agents.contains(&v.agent_id.as_str()) {
            agents.push(&v.agent_id);
        }
    }
    // The team's last: "pyjson and the team".
    agents.sort_by_key(|a| (*a == TEAM_AGENT, *a));
    let name = |a: &str| if a == TEAM_AGENT { "the team".to_string() } else { visible(a) };
    match agents.as_slice() {
        [one] => format!("{}'s constraints", name(one)),
        [rest @ .., last] => {
            let rest: Vec<String> = rest.iter().map(|a| name(a)).collect();
            format!("the constraints of {} and {}", rest.join(", "), name(last))
        }
        [] => "the constraints".to_string(),
    }
}

/// Where the server may be, in order: the flag, DOCDEX_URL, the daemon's lock file, the config.
fn server_urls(engine: &Engine, flag: Option<&str>) -> Vec<String> {
    let mut urls = Vec::new();
    if let Some(u) = flag.map(str::to_string).or_else(|| std::env::var("DOCDEX_URL").ok()) {
        urls.push(u.trim().trim_end_matches('/').to_string());
        return urls;
    }
    let lock = engine.paths().home.join("daemon.lock");
    if let Ok(text) = std::fs::read_to_string(&lock) {
        if let Some(addr) = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get("addr").and_then(|a| a.as_str()).map(str::to_string))
        {
            urls.push(format!("http://{}", loopback(&addr)));
        }
    }
    let configured = format!("http://{}", loopback(&engine.config().server.http_bind_addr));
    if !urls.contains(&configured) {
        urls.push(configured);
    }
    urls
}

/// A wildcard bind address is reached on loopback.
fn loopback(addr: &str) -> String {
    match addr.parse::<std::net::SocketAddr>() {
        Ok(a) if a.ip().is_unspecified() => format!("127.0.0.1:{}", a.port()),
        _ => addr.to_string(),
    }
}

/// Posts the request to the first server that accepts a connection; `Err` says why there is
/// no verdict.
fn ask(urls: &[String], token: &str, body: &serde_json::Value) -> Result<HookValidateResponse, NoVerdict> {
    let reached = |why: String| NoVerdict::open(true, why);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| NoVerdict::open(false, format!("no runtime: {e}")))?;
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(1))
        .timeout(VERDICT_TIMEOUT)
        .build()
        .map_err(|e| NoVerdict::open(false, format!("no HTTP client: {e}")))?;
    let mut why = Vec::new();
    for url in urls {
        let mut req = client.post(format!("{url}/v1/hooks/validate")).json(body);
        if !token.is_empty() {
            req = req.bearer_auth(token);
        }
        let sent = rt.block_on(async {
            let resp = req.send().await?;
            let status = resp.status();
            let text = resp.text().await?;
            Ok::<_, reqwest::Error>((status, text))
        });
        match sent {
            Err(e) if e.is_connect() => why.push(format!("nothing answers at {url}")),
            Err(e) if e.is_timeout() => {
                return Err(reached(format!("{url} gave no verdict within {} s", VERDICT_TIMEOUT.as_secs())))
            }
            Err(e) => return Err(reached(format!("{url}: {e}"))),
            Ok((status, text)) if !status.is_success() => {
                let error = serde_json::from_str::<serde_json::Value>(&text).ok();
                let field = |f: &str| error.as_ref().and_then(|v| v.pointer(f)).and_then(|m| m.as_str());
                let code = field("/error/code").unwrap_or_default().to_string();
                let msg = field("/error/message").map(str::to_string).unwrap_or(text);
                if names_unknown_agent(status.as_u16(), &code, &msg) {
                    return Err(NoVerdict { reached: true, why: msg, refused: false, unknown_agent: true });
                }
                let refused = matches!(status.as_u16(), 401 | 403);
                let why = format!("{url} answered {status}: {msg}");
                return Err(NoVerdict { reached: true, why, refused, unknown_agent: false });
            }
            Ok((_, text)) => {
                return serde_json::from_str(&text).map_err(|e| reached(format!("{url} answered something else: {e}")))
            }
        }
    }
    Err(NoVerdict::open(false, why.join("; ")))
}

/// The staged files of the repository git is committing in.
struct Staged {
    root: PathBuf,
    files: Vec<StagedFile>,
    not_sent: Vec<String>,
}

fn git<S: AsRef<OsStr>>(dir: Option<&Path>, args: &[S]) -> anyhow::Result<Vec<u8>> {
    let mut cmd = Command::new("git");
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    let out = cmd.args(args).output().context("running git")?;
    if !out.status.success() {
        let shown: Vec<_> = args.iter().map(|a| a.as_ref().to_string_lossy()).collect();
        bail!("git {}: {}", shown.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(out.stdout)
}

/// A path git printed on a line of its own, its bytes kept: on unix a name need not be UTF-8,
/// and the lossy text (`caf\u{fffd}`) named no directory ("not a directory: pass --repo").
fn git_path(stdout: &[u8]) -> PathBuf {
    let line = stdout.strip_suffix(b"\n").unwrap_or(stdout);
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        PathBuf::from(OsStr::from_bytes(line))
    }
    #[cfg(not(unix))]
    {
        PathBuf::from(String::from_utf8_lossy(line).trim())
    }
}

/// The root of the git repository at `dir` (else the current directory), for `install` and
/// `uninstall`, which take `--repo`.
fn top_level(dir: Option<&Path>) -> anyhow::Result<PathBuf> {
    top_level_or(dir, "run it inside one, or pass --repo")
}

/// The root of the git repository at `dir` (else the current directory). Not being in one is
/// a usage error (exit 2) that says what to do (`advice`: `pre-commit` takes no `--repo`, and
/// its message told to pass one), not git's own message.
fn top_level_or(dir: Option<&Path>, advice: &str) -> anyhow::Result<PathBuf> {
    let shown = || dir.map_or_else(|| "the current directory".to_string(), |d| d.display().to_string());
    if dir.is_some_and(|d| !d.is_dir()) {
        return Err(Error::BadRequest(format!("{} is not a directory: pass --repo a git repository", shown())).into());
    }
    let mut cmd = Command::new("git");
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    let out = cmd.args(["rev-parse", "--show-toplevel"]).output().context("running git")?;
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr).to_ascii_lowercase();
        if said.contains("not a git repository") {
            return Err(Error::BadRequest(format!("not a git repository ({}): {advice}", shown())).into());
        }
        if said.contains("must be run in a work tree") {
            return Err(Error::BadRequest(format!(
                "{} is a bare repository: nothing is committed there, so a pre-commit hook would never run; install it in a clone",
                shown()
            ))
            .into());
        }
        bail!("git rev-parse --show-toplevel: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(git_path(&out.stdout))
}

/// Staged paths (added, changed, deleted) with their staged content, read in one
/// `git cat-file --batch`, decoded as the index reads them (`staged_text`); binary and
/// oversized files are left out and named in `not_sent`.
fn staged_files() -> anyhow::Result<Staged> {
    let root = top_level_or(None, "git runs this hook in the repository it commits to; run it there")?;
    let listing = git(Some(&root), &["diff", "--cached", "--name-status", "--no-renames", "-z"])?;
    let fields: Vec<&[u8]> = listing.split(|b| *b == 0).filter(|f| !f.is_empty()).collect();
    let mut files = Vec::new();
    let mut wanted = Vec::new();
    let mut not_sent = Vec::new();
    for pair in fields.chunks(2) {
        let [status, path] = pair else { continue };
        // Named, not dropped in silence: the server knows a file by its UTF-8 path, and
        // `git cat-file --batch` reads one name a line.
        let path = match String::from_utf8(path.to_vec()) {
            Ok(p) if p.contains('\n') => {
                not_sent.push(format!("{p:?}: not checked (a line break in its name)"));
                continue;
            }
            Ok(p) => p,
            Err(_) => {
                let shown = String::from_utf8_lossy(path);
                not_sent
                    .push(format!("{shown}: not checked (its name is not valid UTF-8, and docdex does not index it)"));
                continue;
            }
        };
        if status.starts_with(b"D") {
            files.push(StagedFile { path, content: None, deleted: true });
        } else {
            wanted.push(path);
        }
    }
    let contents = cat_files(&root, &wanted)?;
    let mut total = 0usize;
    for (path, blob) in wanted.into_iter().zip(contents) {
        let Some(bytes) = blob else { continue };
        // Decoded as the index reads it; a binary or oversized file is named, not dropped.
        let text = match staged_text(&path, bytes) {
            Ok(text) => text,
            Err(why) => {
                not_sent.push(why);
                continue;
            }
        };
        total += text.len();
        if total > MAX_REQUEST_CONTENT {
            not_sent.push(format!("{path}: not checked (the staged files exceed {} MiB)", MAX_REQUEST_CONTENT >> 20));
            continue;
        }
        files.push(StagedFile { path, content: Some(text), deleted: false });
    }
    Ok(Staged { root, files, not_sent })
}

/// The staged blob of each path (`None` when git has none).
fn cat_files(root: &Path, paths: &[String]) -> anyhow::Result<Vec<Option<Vec<u8>>>> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let mut child = Command::new("git")
        .current_dir(root)
        .args(["cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("running git cat-file")?;
    let mut stdin = child.stdin.take().context("git cat-file stdin")?;
    let input: String = paths.iter().map(|p| format!(":{p}\n")).collect();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let mut reader = BufReader::new(child.stdout.take().context("git cat-file stdout")?);
    let mut out = Vec::with_capacity(paths.len());
    for _ in paths {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 {
            break;
        }
        let parts: Vec<&str> = header.split_whitespace().collect();
        match parts.as_slice() {
            [_, "blob", size] => {
                let size: usize = size.parse().context("git cat-file size")?;
                let mut buf = vec![0u8; size];
                reader.read_exact(&mut buf)?;
                let mut nl = [0u8; 1];
                reader.read_exact(&mut nl)?;
                out.push(Some(buf));
            }
            [_, _, size] => {
                // Not a blob (a submodule): skip its bytes.
                let size: u64 = size.parse().context("git cat-file size")?;
                std::io::copy(&mut (&mut reader).take(size + 1), &mut std::io::sink())?;
                out.push(None);
            }
            _ => out.push(None),
        }
    }
    let _ = writer.join();
    let _ = child.wait();
    Ok(out)
}

/// The repository's hooks directory (honours `core.hooksPath`).
fn hooks_dir(repo: Option<&Path>) -> anyhow::Result<PathBuf> {
    let root = top_level(repo)?;
    let rel = git(Some(&root), &["rev-parse", "--git-path", "hooks"])?;
    let rel = git_path(&rel);
    Ok(if rel.is_absolute() { rel } else { root.join(rel) })
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// `--home` and `--agent` as given at install, for the hook's `docdex hook pre-commit`.
fn hook_args(home: Option<&Path>, agent: Option<&str>) -> String {
    let mut args = String::new();
    if let Some(h) = home {
        args.push_str(&format!(" --home {}", quote(&h.to_string_lossy())));
    }
    args.push_str(" hook pre-commit");
    if let Some(a) = agent {
        args.push_str(&format!(" --agent {}", quote(a)));
    }
    args
}

/// The hook script: run the kept hook first, then `docdex hook pre-commit`; a missing
/// docdex binary fails open too. `exe` names this machine's binary (and `home` goes in as
/// `--home`); `None` for a hook in the work tree, which the team commits: it then finds
/// docdex as the husky block does ([`find_docdex`]).
fn script(exe: Option<&Path>, home: Option<&Path>, agent: Option<&str>) -> String {
    format!(
        "#!/bin/sh\n\
         {MARKER}\n\
         # The docdex semantic gatekeeper (docs/PROFILES.md), installed by `docdex hook install`;\n\
         # `docdex hook uninstall` removes it and puts back the hook that was here before, if any.\n\
         hooks=$(dirname \"$0\")\n\
         kept=\"$hooks/{KEPT}\"\n\
         if [ -x \"$kept\" ]; then\n\
         \x20 # An sh hook is sourced in a subshell, so its $0 is still .../pre-commit: husky's\n\
         \x20 # hooks find the user's script by that name and silently skip it under any other.\n\
         \x20 # With options on its #! line (sh -e), it runs as itself: sourcing would drop them.\n\
         \x20 case $(head -n 1 \"$kept\") in\n\
         \x20   '#!/bin/sh' | '#!/usr/bin/env sh') (. \"$kept\") || exit $? ;;\n\
         \x20   *) \"$kept\" \"$@\" || exit $? ;;\n\
         \x20 esac\n\
         fi\n\
         {run}",
        run = match exe {
            Some(exe) => format!(
                "docdex={exe}\n\
                 if [ ! -x \"$docdex\" ]; then docdex=$(command -v docdex || true); fi\n\
                 if [ -z \"$docdex\" ]; then\n\
                 \x20 echo \"docdex not found; skipping semantic checks\" >&2\n\
                 \x20 exit 0\n\
                 fi\n\
                 exec \"$docdex\"{args}\n",
                exe = quote(&exe.to_string_lossy()),
                args = hook_args(home, agent),
            ),
            None => format!(
                "{find}\
                 if [ -z \"$docdex_exe\" ] || [ ! -x \"$docdex_exe\" ]; then\n\
                 \x20 echo \"{MISSING}\" >&2\n\
                 \x20 exit 0\n\
                 fi\n\
                 docdex_home=$(git config --get docdex.home || true)\n\
                 exec \"$docdex_exe\" ${{docdex_home:+--home \"$docdex_home\"}}{args}\n",
                find = find_docdex(),
                args = hook_args(None, agent),
            ),
        },
    )
}

/// Shell lines setting `docdex_exe` without naming this machine's paths: the docdex on
/// `PATH`, else the one this clone's `git config docdex.path` names ([`set_clone_config`]).
fn find_docdex() -> &'static str {
    "# It runs the docdex on PATH, else the one `git config docdex.path` names in this clone.\n\
     docdex_exe=$(command -v docdex || true)\n\
     [ -n \"$docdex_exe\" ] || docdex_exe=$(git config --get docdex.path || true)\n"
}

/// docdex's check as lines appended to a husky user hook (run by `sh -e`, after the user's
/// commands). The hook is committed and shared, so it names no machine's paths: the docdex
/// on `PATH` runs, else the one this clone's own (never committed) `git config docdex.path`
/// names, with `docdex.home` as `--home` ([`set_clone_config`]); none: a message, exit 0.
fn block(agent: Option<&str>) -> String {
    format!(
        "{BLOCK_BEGIN}\n\
         # The docdex semantic gatekeeper (docs/PROFILES.md), added by `docdex hook install` here,\n\
         # where husky keeps the user's hook and never rewrites it; `docdex hook uninstall` removes it.\n\
         {find}\
         if [ -n \"$docdex_exe\" ] && [ -x \"$docdex_exe\" ]; then\n\
         \x20 docdex_home=$(git config --get docdex.home || true)\n\
         \x20 \"$docdex_exe\" ${{docdex_home:+--home \"$docdex_home\"}}{args} || exit $?\n\
         else\n\
         \x20 echo \"{MISSING}\" >&2\n\
         fi\n\
         {BLOCK_END}\n",
        find = find_docdex(),
        args = hook_args(None, agent),
    )
}

/// What the shared husky block says where docdex is not installed (it fails open).
const MISSING: &str =
    "docdex: not on PATH, so the team's semantic checks were skipped (install docdex and put it on PATH to run them)";

/// This clone's own settings for the shared husky block, in `.git/config` (never committed):
/// the installing binary as the fallback off `PATH`, and `--home` when one was given.
fn set_clone_config(root: &Path, exe: &Path, home: Option<&Path>) -> anyhow::Result<()> {
    git(Some(root), &[OsStr::new("config"), OsStr::new("docdex.path"), exe.as_os_str()])?;
    if let Some(h) = home {
        git(Some(root), &[OsStr::new("config"), OsStr::new("docdex.home"), h.as_os_str()])?;
    } else {
        // An earlier install's home must not linger (git exits 5 when there is none).
        let _ = git(Some(root), &["config", "--unset", "docdex.home"]);
    }
    Ok(())
}

/// The user's hook `user` with docdex's block after its commands; before a last line that
/// ends the script (`exit 0`, `exec npx lint-staged`), where a block after it never ran and
/// the check was silently off.
fn with_block(user: &str, block: &str) -> String {
    let mut lines: Vec<&str> = user.split_inclusive('\n').collect();
    let last = lines.iter().rposition(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    let ends_script = |l: &str| {
        let word = l.split_whitespace().next().unwrap_or_default();
        !l.starts_with(char::is_whitespace) && (word == "exit" || word == "exec")
    };
    let at = match last {
        Some(i) if ends_script(lines[i]) => i,
        _ => lines.len(),
    };
    let mut text: String = lines.drain(..at).collect();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(block);
    text.extend(lines);
    text
}

/// `text` without docdex's block, or `None` when it has none.
fn without_block(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let start = lines.iter().position(|l| l.trim_end() == BLOCK_BEGIN)?;
    let end = start + lines[start..].iter().position(|l| l.trim_end() == BLOCK_END)?;
    Some(lines[..start].concat() + &lines[end + 1..].concat())
}

/// The directory of husky's user hooks when `dir`, the hooks directory git runs, is husky's.
/// husky 9 points `core.hooksPath` at `.husky/_` (with `h`), which every `husky` (the
/// `prepare` script) rewrites, each hook there running `.husky/<hook>`; husky 8 points it at
/// `.husky` itself, whose `_/husky.sh` `husky install` rewrites. The user's `.husky/pre-commit`
/// neither touches, so docdex's check lives there.
fn husky_dir(dir: &Path) -> Option<PathBuf> {
    let v9 = dir.file_name().is_some_and(|n| n == "_") && (dir.join("h").is_file() || dir.join("husky.sh").is_file());
    if v9 {
        return dir.parent().map(Path::to_path_buf);
    }
    dir.join("_").join("husky.sh").is_file().then(|| dir.to_path_buf())
}

/// A regular file carrying the marker line; a link is never ours (writing to it would write
/// wherever it points), nor a user's hook holding docdex's block.
/// The docdex the user ran, as they named it (a path, or a name found on `PATH`) when that
/// is this binary: a link such as `/usr/local/bin/docdex` to a versioned install is kept as the
/// link, so the hook follows an upgrade that moves the target (it named the old version's
/// binary, which ran on after the upgrade while it stayed, tour35 F9). Else the binary itself.
fn invoked_exe() -> std::io::Result<PathBuf> {
    let real = std::env::current_exe()?;
    let named = std::env::args_os().next().map(PathBuf::from).and_then(|p| match p.components().count() {
        0 => None,
        1 => std::env::var_os("PATH")
            .and_then(|dirs| std::env::split_paths(&dirs).map(|d| d.join(&p)).find(|c| c.is_file())),
        _ => std::path::absolute(&p).ok(),
    });
    let same = |n: &Path| std::fs::canonicalize(n).ok() == std::fs::canonicalize(&real).ok();
    Ok(named.filter(|n| same(n)).unwrap_or(real))
}

/// `script` with its digest line.
fn with_digest(script: String) -> String {
    let digest = xxhash_rust::xxh3::xxh3_64(script.as_bytes());
    format!("{script}{DIGEST}{digest:016x}\n")
}

/// Whether docdex's hook at `path` was edited since it was written: its digest line no longer
/// matches the lines above it. A hook written before digests were kept has none: not edited.
fn edited(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else { return false };
    let Some(at) = text.rfind(&format!("\n{DIGEST}")) else { return false };
    let (body, line) = text.split_at(at + 1);
    let want = format!("{DIGEST}{:016x}", xxhash_rust::xxh3::xxh3_64(body.as_bytes()));
    line.trim_end() != want
}

/// Refuses to replace or remove docdex's hook at `path` when it was edited, unless `force`.
fn refuse_edited(path: &Path, force: bool, doing: &str) -> anyhow::Result<()> {
    if force || !edited(path) {
        return Ok(());
    }
    bail!(
        "{} was edited since docdex installed it, and {doing} would lose the edit: copy what you added \
         elsewhere, or pass --force",
        path.display()
    )
}

fn is_ours(path: &Path) -> bool {
    path.symlink_metadata().is_ok_and(|m| m.is_file())
        && std::fs::read_to_string(path).is_ok_and(|t| t.lines().any(|l| l == MARKER))
}

/// Whether git tracks `path` (a file the repository shares).
fn tracked(root: &Path, path: &Path) -> bool {
    let args = [OsStr::new("ls-files"), OsStr::new("--error-unmatch"), OsStr::new("--"), path.as_os_str()];
    present(path) && git(Some(root), &args).is_ok()
}

/// Whether anything is at `path`, a dangling link included (`exists` follows links).
fn present(path: &Path) -> bool {
    path.symlink_metadata().is_ok()
}

/// A hook the repository versions (`core.hooksPath` pointing into the work tree) is the
/// team's: renaming it would put a deletion and docdex's script in everyone's next commit.
fn refuse_tracked(root: &Path, hook: &Path) -> anyhow::Result<()> {
    if tracked(root, hook) {
        return Err(Error::BadRequest(format!(
            "{} is tracked by git (core.hooksPath points into the repository): docdex will not replace a hook the repository shares; add `docdex hook pre-commit` to it yourself, or install where core.hooksPath is unset",
            hook.display()
        ))
        .into());
    }
    Ok(())
}

/// A hooks directory outside both the work tree and the repository's git directory is a
/// `core.hooksPath` shared by other repositories (often set globally): installing "in this
/// repository" then changes every one of them, which the user should hear.
/// Whether the hooks directory `dir` lies in the work tree, outside the git directory: its
/// files are the repository's to commit.
fn in_work_tree(root: &Path, dir: &Path) -> bool {
    let Ok(common) = git(Some(root), &["rev-parse", "--path-format=absolute", "--git-common-dir"]) else {
        return false;
    };
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let d = real(dir);
    d.starts_with(real(root)) && !d.starts_with(real(&git_path(&common)))
}

fn shared_hooks_note(root: &Path, dir: &Path) -> Option<String> {
    let common = git(Some(root), &["rev-parse", "--path-format=absolute", "--git-common-dir"]).ok()?;
    let common = git_path(&common);
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let d = real(dir);
    (!d.starts_with(real(root)) && !d.starts_with(real(&common))).then(|| {
        format!(
            "note: core.hooksPath points outside this repository, at {}: the hook applies to every repository that uses it",
            shown(dir)
        )
    })
}

/// Refuses an `--agent` that is not in profile memory (with the agent it most likely
/// mistypes): the hook would ask for a check of nobody's constraints on every commit. A
/// profile memory that cannot be read is said and the hook installed; its check then decides.
fn check_agent(engine: &Engine, out: &Out, agent: Option<&str>) -> anyhow::Result<()> {
    let Some(agent) = agent else { return Ok(()) };
    match engine.profile_agent_exists(agent.trim()) {
        Ok(()) => Ok(()),
        Err(e @ (Error::UnknownAgent(_) | Error::BadRequest(_))) => {
            Err(anyhow::Error::new(e).context("hook install --agent: nothing installed"))
        }
        Err(e) => {
            out.note(&format!("could not check that agent {agent:?} exists ({e}); installing anyway"));
            Ok(())
        }
    }
}

fn install(engine: &Engine, out: &Out, home: Option<&Path>, args: InstallArgs) -> anyhow::Result<()> {
    check_agent(engine, out, args.agent.as_deref())?;
    let root = top_level(args.repo.as_deref())?;
    let dir = hooks_dir(Some(&root))?;
    let exe = invoked_exe().context("finding the docdex binary")?;
    let home = home.map(|h| std::path::absolute(h).unwrap_or_else(|_| h.to_path_buf()));
    if let Some(user_dir) = husky_dir(&dir) {
        remove_script(out, &dir, args.force)?;
        set_clone_config(&root, &exe, home.as_deref())?;
        return install_husky(out, &root, &dir, &user_dir.join("pre-commit"), &block(args.agent.as_deref()));
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let hook = dir.join("pre-commit");
    let kept = dir.join(KEPT);
    refuse_tracked(&root, &hook)?;
    if let Some(note) = shared_hooks_note(&root, &dir) {
        out.note(&note);
    }
    // A hooks directory in the work tree (`.githooks`) is committed with the repository: the
    // script there named this machine's binary and home, as the husky block did.
    let shared = in_work_tree(&root, &dir);
    if shared {
        set_clone_config(&root, &exe, home.as_deref())?;
    }
    // A link, even a dangling one, is someone's hook: kept, never written through.
    if present(&hook) && !is_ours(&hook) {
        if present(&kept) {
            bail!("{} exists and so does {}: move one of them away first", hook.display(), kept.display());
        }
        std::fs::rename(&hook, &kept).with_context(|| format!("keeping {}", hook.display()))?;
        out.line(&format!("kept the existing hook as {} (it runs first)", shown(&kept)));
    }
    if is_ours(&hook) {
        refuse_edited(&hook, args.force, "installing again")?;
    }
    std::fs::write(
        &hook,
        with_digest(script((!shared).then_some(exe.as_path()), home.as_deref(), args.agent.as_deref())),
    )
    .with_context(|| format!("writing {}", hook.display()))?;
    make_executable(&hook)?;
    out.line(&format!("installed {}", shown(&hook)));
    if shared {
        out.note(&format!(
            "{} is in the work tree: commit it to give everyone the check (it names no path of this machine: each clone runs the docdex on its PATH, and says the check was skipped where there is none)",
            shown(&hook)
        ));
    }
    Ok(())
}

/// Appends docdex's block to husky's user hook `hook` (created when missing), replacing the
/// block of an earlier install. A hook in `.husky/_` would be gone at the next `husky` run.
fn install_husky(out: &Out, root: &Path, dir: &Path, hook: &Path, block: &str) -> anyhow::Result<()> {
    // Left in husky's generated directory by an install before this one, after husky rewrote
    // the hook that ran it.
    let stale = dir.join(KEPT);
    if dir.file_name().is_some_and(|n| n == "_") && present(&stale) {
        std::fs::remove_file(&stale).with_context(|| format!("removing {}", stale.display()))?;
    }
    if present(hook) && !hook.symlink_metadata().is_ok_and(|m| m.is_file()) {
        return Err(Error::BadRequest(format!(
            "{} is not a regular file (a link?): docdex will not write through it; add `docdex hook pre-commit` to the hook yourself",
            hook.display()
        ))
        .into());
    }
    let existed = present(hook);
    let before = if existed {
        std::fs::read_to_string(hook).with_context(|| format!("reading {}", hook.display()))?
    } else {
        SHEBANG.to_string()
    };
    let text = with_block(&without_block(&before).unwrap_or(before), block);
    std::fs::write(hook, text).with_context(|| format!("writing {}", hook.display()))?;
    if !existed {
        make_executable(hook)?;
    }
    out.line(&format!("added docdex's check to husky's {} (husky's prepare step leaves it in place)", shown(hook)));
    if tracked(root, hook) {
        out.note(&format!(
            "{} is tracked by git: docdex's lines show as a change to it; commit them to give everyone the check (they name no path of this machine: each clone runs the docdex on its PATH, and says the check was skipped where there is none), or leave them out of your commits",
            shown(hook)
        ));
    }
    Ok(())
}

fn uninstall(out: &Out, args: UninstallArgs) -> anyhow::Result<()> {
    let root = top_level(args.repo.as_deref())?;
    let dir = hooks_dir(Some(&root))?;
    let mut removed = remove_script(out, &dir, args.force)?;
    if let Some(user_dir) = husky_dir(&dir) {
        removed |= remove_block(out, &root, &user_dir.join("pre-commit"))?;
    }
    if removed {
        // The clone's settings for a shared hook go with it (git exits 128 when there are none).
        let _ = git(Some(&root), &["config", "--remove-section", "docdex"]);
    }
    if !removed {
        out.line(&format!("no docdex hook in {}; nothing to remove", shown(&dir)));
    }
    Ok(())
}

/// Removes docdex's hook script from `dir`, putting back the hook it kept; false when there
/// is none.
fn remove_script(out: &Out, dir: &Path, force: bool) -> anyhow::Result<bool> {
    let hook = dir.join("pre-commit");
    let kept = dir.join(KEPT);
    if !is_ours(&hook) {
        return Ok(false);
    }
    refuse_edited(&hook, force, "removing it")?;
    std::fs::remove_file(&hook).with_context(|| format!("removing {}", hook.display()))?;
    if present(&kept) {
        std::fs::rename(&kept, &hook).with_context(|| format!("restoring {}", kept.display()))?;
        out.line(&format!("removed docdex's hook; restored the previous {}", shown(&hook)));
    } else {
        out.line(&format!("removed {}", shown(&hook)));
    }
    Ok(true)
}

/// Removes docdex's block from husky's user hook; the hook itself goes only when docdex
/// created it (nothing but the first line left) and git does not track it.
fn remove_block(out: &Out, root: &Path, hook: &Path) -> anyhow::Result<bool> {
    if !hook.symlink_metadata().is_ok_and(|m| m.is_file()) {
        return Ok(false);
    }
    let text = std::fs::read_to_string(hook).with_context(|| format!("reading {}", hook.display()))?;
    let Some(rest) = without_block(&text) else { return Ok(false) };
    if (rest.trim().is_empty() || rest == SHEBANG) && !tracked(root, hook) {
        std::fs::remove_file(hook).with_context(|| format!("removing {}", hook.display()))?;
        out.line(&format!("removed {}", shown(hook)));
    } else {
        std::fs::write(hook, rest).with_context(|| format!("writing {}", hook.display()))?;
        out.line(&format!("removed docdex's check from {}", shown(hook)));
    }
    Ok(true)
}

#[cfg(unix)]
fn make_executable(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("making {} executable", path.display()))
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> anyhow::Result<()> {
    Ok(())
}
