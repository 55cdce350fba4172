//! The run's process group after its runner exits: what is still running in it is the tests'
//! (a server or `sleep &` a test started and never stopped) and is killed. A daemon that
//! detached into a session of its own (`setsid`, as sccache's server does) is outside the
//! group and never touched; one that stays in the group cannot be told from a leaked test
//! server and is killed with the rest, named in the run's notes (docs/CONTEXT.md).

/// Names shown in the note, at most.
const MAX_NAMED: usize = 5;
/// Characters of one process's command line shown, at most.
const MAX_COMMAND_CHARS: usize = 60;

/// Kills what is left of process group `group` once its leader is reaped. Returns the live
/// processes killed, each as `PID COMMAND` (`None` when none were left; an empty list where
/// the system cannot list them but the signal reached someone). An exited process its parent
/// never reaped (sccache's server launcher, reparented to an init or a container's PID 1 that
/// reaps late or never) keeps the group in existence, so `kill` succeeds on it; it is not
/// running and is not reported.
pub(super) fn kill_leftovers(group: u32) -> Option<Vec<String>> {
    let live = live_members(group);
    let signalled = signal_group(group);
    match live {
        Some(names) => (!names.is_empty()).then_some(names),
        None => signalled.then(Vec::new),
    }
}

/// The note for the processes `kill_leftovers` killed.
pub(super) fn leftovers_note(killed: &[String]) -> String {
    let what = match killed.len() {
        0 => "processes".to_string(),
        1 => "1 process".to_string(),
        n => format!("{n} processes"),
    };
    let mut listed = killed.iter().take(MAX_NAMED).cloned().collect::<Vec<_>>().join(", ");
    if killed.len() > MAX_NAMED {
        listed.push_str(&format!(", {} more", killed.len() - MAX_NAMED));
    }
    let listed = if listed.is_empty() { listed } else { format!(" ({listed})") };
    format!(
        "the tests left {what} running after the runner exited{listed}: killed; a build daemon among them survives a run only when started before it or detached into its own session (setsid)"
    )
}

/// SIGKILL to the whole group; true when it reached any member (a zombie included).
fn signal_group(group: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(id) = libc::pid_t::try_from(group) else { return false };
        // SAFETY: kill(2) on the run's own process group; no memory is touched. The group id
        // cannot name another group while this one has members (POSIX), and with none
        // left kill fails with ESRCH.
        unsafe { libc::kill(-id, libc::SIGKILL) == 0 }
    }
    #[cfg(not(unix))]
    {
        let _ = group;
        false
    }
}

/// The group's members that are still running, as `PID COMMAND`, from /proc; `None` where
/// there is no /proc to read.
fn live_members(group: u32) -> Option<Vec<String>> {
    let entries = std::fs::read_dir("/proc").ok()?;
    let mut live = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        if let Some((comm, true)) = member(&stat, group) {
            live.push(format!("{pid} {}", command_line(pid).unwrap_or(comm)));
        }
    }
    Some(live)
}

/// From a /proc/PID/stat line: the process's name, and whether it is a running member of
/// `group` (in it, and neither a zombie nor dead). `None` when the line does not parse.
fn member(stat: &str, group: u32) -> Option<(String, bool)> {
    // "PID (COMM) STATE PPID PGRP ...": COMM may hold spaces and parentheses.
    let open = stat.find('(')?;
    let (head, rest) = stat.rsplit_once(") ")?;
    let comm = head.get(open + 1..)?.to_string();
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    let pgrp: u32 = fields.nth(1)?.parse().ok()?;
    Some((comm, pgrp == group && !matches!(state, "Z" | "X" | "x")))
}

/// The process's command line, its arguments joined by spaces and cut short.
fn command_line(pid: u32) -> Option<String> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let text: String =
        String::from_utf8_lossy(&raw).split('\0').filter(|a| !a.is_empty()).collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        return None;
    }
    Some(if text.chars().count() > MAX_COMMAND_CHARS {
        text.chars().take(MAX_COMMAND_CHARS).chain(std::iter::once('…')).collect()
    } else {
        text
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_names_the_process_and_tells_a_zombie_from_a_running_member() {
        let running = "4242 (sleep) S 4200 4100 4100 0 -1 4194304";
        assert_eq!(member(running, 4100), Some(("sleep".to_string(), true)));
        assert_eq!(member(running, 4101), Some(("sleep".to_string(), false)));
        let zombie = "4243 (sccache) Z 1 4100 4100 0 -1";
        assert_eq!(member(zombie, 4100), Some(("sccache".to_string(), false)));
        let odd = "4244 (a) b (c) R 1 4100 4100 0";
        assert_eq!(member(odd, 4100), Some(("a) b (c".to_string(), true)));
        assert_eq!(member("garbage", 4100), None);
    }

    #[test]
    fn the_note_names_what_was_killed_and_counts_the_rest() {
        let one = leftovers_note(&["7 sleep 60".to_string()]);
        assert!(
            one.starts_with("the tests left 1 process running after the runner exited (7 sleep 60): killed"),
            "{one}"
        );
        let many: Vec<String> = (1..=7).map(|i| format!("{i} sleep")).collect();
        let note = leftovers_note(&many);
        assert!(note.contains("7 processes") && note.contains("5 sleep, 2 more)"), "{note}");
        let unnamed = leftovers_note(&[]);
        assert!(unnamed.starts_with("the tests left processes running after the runner exited: killed"), "{unnamed}");
    }
}
