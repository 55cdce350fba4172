//! Running another program (git, nvidia-smi) for a request, bounded: every request is bounded
//! in time and memory, and a helper program that hangs (a git waiting on a lock, a slow network
//! file system) or prints without end (a diff over a vendored tree) must not hold a request,
//! or the machine's memory, with it.

use crate::engine::cancel::CancelToken;
use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The bytes of stderr kept for a message (the rest is read and dropped).
const STDERR_KEPT: usize = 64 * 1024;

/// What a bounded run may take.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// Wall time from the start; then the program is killed.
    pub time: Duration,
    /// Bytes kept from stdout; past them the program is killed.
    pub stdout_bytes: usize,
}

/// Why a bounded run gave no output.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// It could not be started (`NotFound`: not installed or not on PATH).
    #[error("could not start it: {0}")]
    Start(#[source] std::io::Error),
    /// It ran past [`Bounds::time`] and was stopped.
    #[error("it took over {} s and was stopped", .0.as_secs())]
    TimedOut(Duration),
    /// It printed more than [`Bounds::stdout_bytes`] and was stopped.
    #[error("it printed over {} MiB and was stopped", .0 / (1024 * 1024))]
    TooLarge(usize),
    /// The request it ran for was cancelled by its caller; it was stopped.
    #[error("its caller left, so it was stopped")]
    Cancelled,
    /// Its status could not be read.
    #[error("lost track of it: {0}")]
    Wait(#[source] std::io::Error),
}

/// Runs `cmd` to its end with stdin closed and returns what it printed, reading stdout and
/// stderr while it runs (a full pipe would stall it). Stops it at the first of: `bounds.time`,
/// more than `bounds.stdout_bytes` of stdout, or the calling thread's [`CancelToken`] tripping.
pub fn output_within(cmd: &mut Command, bounds: Bounds) -> Result<Output, RunError> {
    let mut child =
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(RunError::Start)?;
    let overflow = Arc::new(AtomicBool::new(false));
    let stdout =
        drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>), bounds.stdout_bytes, Some(&overflow));
    // stderr is for a message: its first pages are enough.
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>), STDERR_KEPT, None);
    let cancel = CancelToken::current();
    let started = Instant::now();
    let stop = |child: &mut std::process::Child, why: RunError| {
        let _ = child.kill();
        let _ = child.wait();
        Err(why)
    };
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if overflow.load(Ordering::Relaxed) => {
                return stop(&mut child, RunError::TooLarge(bounds.stdout_bytes))
            }
            Ok(None) if cancel.is_cancelled() => return stop(&mut child, RunError::Cancelled),
            Ok(None) if started.elapsed() > bounds.time => return stop(&mut child, RunError::TimedOut(bounds.time)),
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return stop(&mut child, RunError::Wait(e)),
        }
    };
    let join = |h: std::thread::JoinHandle<Vec<u8>>| h.join().unwrap_or_default();
    let (stdout, stderr) = (join(stdout), join(stderr));
    // It may have exited right after printing too much.
    if overflow.load(Ordering::Relaxed) {
        return Err(RunError::TooLarge(bounds.stdout_bytes));
    }
    Ok(Output { status, stdout, stderr })
}

/// Reads `pipe` to its end on a thread of its own, keeping at most `cap` bytes. Past them it
/// sets `overflow` and stops reading (the program is then killed) when one is given, or reads
/// on and drops the rest (closing the pipe early would kill the program with SIGPIPE).
fn drain(
    pipe: Option<Box<dyn Read + Send>>,
    cap: usize,
    overflow: Option<&Arc<AtomicBool>>,
) -> std::thread::JoinHandle<Vec<u8>> {
    let overflow = overflow.cloned();
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let Some(mut pipe) = pipe else { return kept };
        let mut buf = [0u8; 16 * 1024];
        loop {
            let n = match pipe.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            let room = cap - kept.len();
            kept.extend_from_slice(&buf[..n.min(room)]);
            if n > room {
                if let Some(flag) = &overflow {
                    flag.store(true, Ordering::Relaxed);
                    break;
                }
            }
        }
        kept
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", script]);
        cmd
    }

    const ROOMY: Bounds = Bounds { time: Duration::from_secs(20), stdout_bytes: 1 << 20 };

    #[test]
    fn output_and_status_come_back() {
        let out = output_within(&mut sh("printf hello; printf oops >&2; exit 3"), ROOMY).unwrap();
        assert_eq!(out.stdout, b"hello");
        assert_eq!(out.stderr, b"oops");
        assert_eq!(out.status.code(), Some(3));
    }

    #[test]
    fn output_larger_than_a_pipe_does_not_stall_the_program() {
        // 1 MiB on each stream: far past a pipe's 64 KiB buffer.
        let script = "head -c 1048576 /dev/zero; head -c 1048576 /dev/zero >&2";
        let bounds = Bounds { stdout_bytes: 2 << 20, ..ROOMY };
        let out = output_within(&mut sh(script), bounds).unwrap();
        assert_eq!(out.stdout.len(), 1 << 20);
        assert_eq!(out.stderr.len(), STDERR_KEPT, "stderr is kept up to its cap and read to its end");
        assert!(out.status.success(), "the program was not cut off: {:?}", out.status);
    }

    #[test]
    fn a_program_past_its_time_is_stopped() {
        let started = Instant::now();
        let bounds = Bounds { time: Duration::from_millis(300), ..ROOMY };
        let err = output_within(&mut sh("sleep 30"), bounds).unwrap_err();
        assert!(matches!(err, RunError::TimedOut(_)), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_program_printing_without_end_is_stopped() {
        let bounds = Bounds { stdout_bytes: 100_000, ..ROOMY };
        let err = output_within(&mut sh("yes"), bounds).unwrap_err();
        assert!(matches!(err, RunError::TooLarge(100_000)), "{err}");
        // Exactly the cap is not too much.
        let out = output_within(&mut sh("head -c 100000 /dev/zero"), bounds).unwrap();
        assert_eq!(out.stdout.len(), 100_000);
    }

    #[test]
    fn a_cancelled_request_stops_its_program() {
        let token = CancelToken::new();
        token.cancel();
        let _ambient = token.enter();
        let err = output_within(&mut sh("sleep 30"), ROOMY).unwrap_err();
        assert!(matches!(err, RunError::Cancelled), "{err}");
    }

    #[test]
    fn a_missing_program_says_so() {
        let err = output_within(&mut Command::new("/nonexistent/docdex-test-program"), ROOMY).unwrap_err();
        assert!(matches!(&err, RunError::Start(e) if e.kind() == std::io::ErrorKind::NotFound), "{err}");
    }
}
