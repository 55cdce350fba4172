//! `docdex tui` (and `docdex` with no arguments on a terminal): opens the
//! workbench on a repository. Everything else lives in `crate::tui`.

use super::RepoArg;
use crate::engine::Engine;
use crate::tui::TuiOptions;
use std::io::IsTerminal;
use std::path::PathBuf;

/// Arguments of `docdex tui`.
#[derive(Debug, clap::Args)]
pub struct TuiArgs {
    #[command(flatten)]
    pub(super) repo: RepoArg,
}

/// True when both stdin and stdout are terminals (the workbench needs both).
pub fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// Runs the workbench.
pub fn run(engine: Engine, args: &TuiArgs) -> anyhow::Result<()> {
    if !interactive() {
        return Err(crate::error::Error::BadRequest(
            "docdex tui needs a terminal (stdin and stdout must be a TTY); use the other commands in scripts".into(),
        )
        .into());
    }
    let repo = args.repo.resolve()?;
    let (repo, notice) = start_repo(&engine, repo, args.repo.repo.is_some())?;
    crate::tui::run(engine, TuiOptions { repo, notice })
}

/// The repository the workbench opens on. It indexes its start repository in the background,
/// so a directory no server would serve (`/`, the home directory, a system directory) is never
/// one: started there without `--repo`, it opens the repository indexed last instead (and says
/// so), or refuses when there is none.
fn start_repo(engine: &Engine, repo: PathBuf, explicit: bool) -> anyhow::Result<(PathBuf, Option<String>)> {
    let refused = match engine.resolve_repo(&repo).and_then(|r| engine.check_servable(&r)) {
        Err(e @ crate::error::Error::UnsafeRoot { .. }) => e,
        _ => return Ok((repo, None)),
    };
    let last = engine
        .list_repos()
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r.path.is_dir() && r.last_indexed_ms.is_some())
        .max_by_key(|r| r.last_indexed_ms);
    match last {
        Some(r) if !explicit => {
            let notice = format!(
                "{} is not a repository to index (it would take all of it): opened {}, indexed last; alt+1 lists the others",
                repo.display(),
                r.path.display()
            );
            Ok((r.path, Some(notice)))
        }
        // The refusal stays the error's type (exit 2, as every command refuses it), the advice after it.
        _ => Err(anyhow::anyhow!("run `docdex tui` inside a repository, or pass --repo PATH").context(refused)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workbench_never_starts_on_a_directory_no_server_would_serve() {
        let dir = tempfile::tempdir().expect("tempdir");
        let engine = Engine::open_at(&dir.path().join("home")).expect("engine");
        let root = PathBuf::from("/");
        // Nothing indexed yet: refused, with what to do.
        let err = start_repo(&engine, root.clone(), false).expect_err("/ is no repository");
        assert_eq!(super::super::exit_code(&err), 2, "a refusal, as `docdex index --repo /` exits");
        let e = format!("{err:#}");
        assert!(e.contains("refusing to index or serve /") && e.contains("inside a repository, or pass --repo"), "{e}");
        // With a repository indexed, it opens that one instead and says why.
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&repo).expect("mkdir");
        std::fs::write(repo.join("lib.rs"), "fn main() {}\n").expect("write");
        engine.index(&repo, &Default::default(), &|_: &crate::engine::protocol::IndexProgress| {}).expect("index");
        let (opened, notice) = start_repo(&engine, root.clone(), false).expect("opens the last repository");
        assert_eq!(opened, std::fs::canonicalize(&repo).expect("canonical"));
        assert!(notice.is_some_and(|n| n.contains("/ is not a repository") && n.contains("alt+1")));
        // Named with --repo, it is refused rather than swapped.
        assert!(start_repo(&engine, root, true).is_err());
        // A repository of its own opens as it is, with nothing to say.
        let (same, notice) = start_repo(&engine, repo.clone(), false).expect("a repository");
        assert_eq!((same, notice), (repo, None));
    }
}
