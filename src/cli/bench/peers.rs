//! Time to a searchable index against the tools a user would pick instead of docdex, on the
//! same corpus in the same run: universal-ctags (a symbol index: go to a definition) and
//! Google's codesearch `cindex` (a trigram index: fast regex search). docdex's first index
//! builds both kinds in one pass (BM25 over every text file, Tree-sitter symbols, the import
//! graph), so it is judged against each and against the two together. ripgrep, the other
//! peer, has no index (every search scans): it is compared on search latency instead.
//!
//! Each peer writes its index under the bench's scratch directory, never into the corpus, and
//! runs with a time limit. A peer that is not installed is reported as skipped, with what to
//! install.

use serde::Serialize;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// No peer may take longer than this (a stuck tool must not hang the bench).
const PEER_TIME_LIMIT: Duration = Duration::from_secs(900);

/// One peer's first index of the corpus.
#[derive(Debug, Clone, Serialize)]
pub(super) struct PeerFigures {
    /// The command (`ctags`, `cindex`).
    pub(super) tool: &'static str,
    /// What its index answers.
    pub(super) kind: &'static str,
    /// First line of its `--version` (or the package name when it prints none).
    pub(super) version: String,
    /// Wall time to build its index, when it ran and succeeded.
    pub(super) seconds: Option<f64>,
    /// Size of the index it wrote.
    pub(super) index_bytes: u64,
    /// Why there is no time (not installed, failed, timed out).
    pub(super) note: String,
}

/// A peer: how to find it and how to index `corpus` into `dir`.
struct Peer {
    tool: &'static str,
    kind: &'static str,
    /// The Debian package that provides it (for the "install" hint).
    package: &'static str,
    version_args: &'static [&'static str],
    command: fn(corpus: &Path, dir: &Path) -> Command,
}

const PEERS: &[Peer] = &[
    Peer {
        tool: "ctags",
        kind: "symbols",
        package: "universal-ctags",
        version_args: &["--version"],
        command: |corpus, dir| {
            let mut c = Command::new("ctags");
            c.current_dir(corpus).args(["-R", "-f"]).arg(dir.join("tags")).arg(".");
            c
        },
    },
    Peer {
        tool: "cindex",
        kind: "trigram text",
        package: "codesearch",
        version_args: &[],
        command: |corpus, dir| {
            let mut c = Command::new("cindex");
            c.env("CSEARCHINDEX", dir.join("csearchindex")).arg(corpus);
            c
        },
    },
];

/// Indexes `corpus` with every peer found on `PATH`, each into its own directory under
/// `scratch`.
pub(super) fn measure(corpus: &Path, scratch: &Path) -> Vec<PeerFigures> {
    PEERS.iter().map(|p| measure_one(p, corpus, &scratch.join(format!("peer-{}", p.tool)))).collect()
}

fn measure_one(peer: &Peer, corpus: &Path, dir: &Path) -> PeerFigures {
    let mut fig = PeerFigures {
        tool: peer.tool,
        kind: peer.kind,
        version: String::new(),
        seconds: None,
        index_bytes: 0,
        note: String::new(),
    };
    let Some(version) = version(peer) else {
        fig.note = format!("{} not found on PATH: skipped (install {})", peer.tool, peer.package);
        return fig;
    };
    fig.version = version;
    if let Err(e) = std::fs::create_dir_all(dir) {
        fig.note = format!("{}: cannot create {}: {e}", peer.tool, dir.display());
        return fig;
    }
    let mut cmd = (peer.command)(corpus, dir);
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    match run_bounded(&mut cmd, PEER_TIME_LIMIT) {
        Ok((true, secs)) => {
            fig.seconds = Some(secs);
            fig.index_bytes = dir_bytes(dir);
        }
        Ok((false, _)) => fig.note = format!("{} failed on this corpus", peer.tool),
        Err(e) => fig.note = format!("{}: {e}", peer.tool),
    }
    fig
}

/// The tool's version line, or its package name when it has no version flag; `None` when it
/// cannot be started.
fn version(peer: &Peer) -> Option<String> {
    if peer.version_args.is_empty() {
        // `cindex` has no version flag: that it starts (usage on stderr) is enough.
        let started = Command::new(peer.tool).arg("-help").stdout(Stdio::null()).stderr(Stdio::null()).status();
        return started.ok().map(|_| format!("{} ({})", peer.tool, peer.package));
    }
    let o = Command::new(peer.tool).args(peer.version_args).stderr(Stdio::null()).output().ok()?;
    let text = String::from_utf8_lossy(&o.stdout);
    let line = text.lines().next().unwrap_or("").split(',').next().unwrap_or("").trim();
    Some(if line.is_empty() { peer.tool.to_string() } else { line.to_string() })
}

/// Runs `cmd` to completion within `limit`: (exited successfully, wall seconds). Past the
/// limit the child is killed and an error says so.
fn run_bounded(cmd: &mut Command, limit: Duration) -> Result<(bool, f64), String> {
    let started = Instant::now();
    let mut child = cmd.spawn().map_err(|e| format!("cannot start: {e}"))?;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok((status.success(), started.elapsed().as_secs_f64())),
            Ok(None) if started.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("stopped after {} s", limit.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(format!("lost the child process: {e}")),
        }
    }
}

/// Total size of the files directly in `dir` (peers write flat index files).
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| rd.flatten().filter_map(|e| e.metadata().ok()).filter(|m| m.is_file()).map(|m| m.len()).sum())
        .unwrap_or(0)
}

/// The report line: each peer's time and docdex's first index as a multiple of it, and of the
/// peers together (what a user runs to get both text search and symbols).
pub(super) fn line(peers: &[PeerFigures], docdex_s: f64) -> String {
    let mut parts: Vec<String> = peers
        .iter()
        .map(|p| match p.seconds {
            Some(s) => format!(
                "{} ({}, {}) {:.2} s, index {:.1} MiB: docdex {:.2}x",
                p.tool,
                p.kind,
                p.version,
                s,
                p.index_bytes as f64 / (1024.0 * 1024.0),
                docdex_s / s.max(1e-9)
            ),
            None => p.note.clone(),
        })
        .collect();
    if let Some(total) = together(peers) {
        parts.push(format!("together {total:.2} s: docdex {:.2}x", docdex_s / total.max(1e-9)));
    }
    parts.join("; ")
}

/// The peers' times summed, when every peer ran.
pub(super) fn together(peers: &[PeerFigures]) -> Option<f64> {
    let times: Option<Vec<f64>> = peers.iter().map(|p| p.seconds).collect();
    times.filter(|t| t.len() > 1).map(|t| t.iter().sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_peer_is_skipped_with_what_to_install_and_a_bounded_run_is_stopped() {
        let missing = Peer {
            tool: "docdex-no-such-peer-tool",
            kind: "symbols",
            package: "no-such-package",
            version_args: &["--version"],
            command: |_, _| Command::new("docdex-no-such-peer-tool"),
        };
        let dir = tempfile::tempdir().unwrap();
        let fig = measure_one(&missing, dir.path(), &dir.path().join("out"));
        assert_eq!(fig.seconds, None);
        assert!(fig.note.contains("install no-such-package"), "{}", fig.note);

        let mut sleeper = Command::new("sleep");
        sleeper.arg("5");
        let err = run_bounded(&mut sleeper, Duration::from_millis(50)).unwrap_err();
        assert!(err.contains("stopped after"), "{err}");
        let mut ok = Command::new("true");
        assert!(run_bounded(&mut ok, Duration::from_secs(5)).unwrap().0);
    }

    #[test]
    fn the_line_gives_docdex_as_a_multiple_of_each_peer_and_of_both() {
        let fig = |tool, secs| PeerFigures {
            tool,
            kind: "k",
            version: "v".into(),
            seconds: secs,
            index_bytes: 1024 * 1024,
            note: format!("{tool} not found"),
        };
        let both = [fig("ctags", Some(4.0)), fig("cindex", Some(1.0))];
        let l = line(&both, 10.0);
        assert!(l.contains("ctags (k, v) 4.00 s, index 1.0 MiB: docdex 2.50x"), "{l}");
        assert!(l.contains("together 5.00 s: docdex 2.00x"), "{l}");
        let one = [fig("ctags", Some(4.0)), fig("cindex", None)];
        let l = line(&one, 10.0);
        assert!(l.contains("cindex not found") && !l.contains("together"), "{l}");
    }

    /// The real tools, when installed (`.ci/run` installs both, and there they must run): each indexes a small tree
    /// into the scratch directory and leaves the corpus untouched.
    #[test]
    fn installed_peers_index_a_tree_without_writing_into_it() {
        let corpus = tempfile::tempdir().unwrap();
        std::fs::write(corpus.path().join("lib.py"), "def parse_header(line):\n    return line.split(':')\n").unwrap();
        std::fs::write(corpus.path().join("main.rs"), "fn main() { println!(\"hi\"); }\n").unwrap();
        let scratch = tempfile::tempdir().unwrap();
        for fig in measure(corpus.path(), scratch.path()) {
            if fig.version.is_empty() {
                // `.ci/run` installs both: there a missing peer is a broken setup, not a skip.
                assert!(std::env::var_os("CI").is_none(), "{}", fig.note);
                eline!("{}", fig.note);
                continue;
            }
            assert!(fig.seconds.is_some(), "{}: {}", fig.tool, fig.note);
            assert!(fig.index_bytes > 0, "{} wrote no index", fig.tool);
        }
        let mut names: Vec<String> = std::fs::read_dir(corpus.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into())
            .collect();
        names.sort();
        assert_eq!(names, ["lib.py", "main.rs"], "a peer wrote into the corpus");
    }
}
