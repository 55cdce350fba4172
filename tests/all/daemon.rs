//! `docdex daemon status` and `docdex daemon stop` against a real daemon (tour12 F23: there was
//! no way to ask whether a daemon runs, and where, or to stop one without finding its pid).

use crate::server_util::Server;
use crate::util::Env;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn json_of(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("bad JSON: {e}: {}", text(out)))
}

#[test]
fn status_names_the_running_daemon_and_stop_ends_it_and_releases_the_lock() {
    let env = Env::new();
    let out = env.run(&["daemon", "status"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(text(&out).contains("no docdex daemon is running"), "{}", text(&out));
    assert_eq!(json_of(&env.run(&["daemon", "status", "--json"]))["running"], false);

    let mut daemon = Server::start(&env, &["daemon", "--no-watch"], &[]);
    let out = env.run(&["daemon", "status"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains(&format!("pid {} on http://{}", daemon.child.id(), daemon.addr)), "{said}");
    assert!(said.contains("since ") && said.contains(" UTC"), "{said}");
    let v = json_of(&env.run(&["daemon", "status", "--json"]));
    assert_eq!(v["running"], true, "{v}");
    assert_eq!(v["pid"], daemon.child.id(), "{v}");
    assert_eq!(v["addr"], daemon.addr.as_str(), "{v}");
    assert!(v["started_ms"].as_u64().is_some_and(|ms| ms > 0), "{v}");

    let out = env.run(&["daemon", "stop"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains(&format!("stopped the docdex daemon (pid {}", daemon.child.id())), "{said}");
    assert!(daemon.wait_exit(Duration::from_secs(5)).success(), "the daemon exits cleanly on SIGTERM");
    assert!(!env.home().join("daemon.lock").exists(), "the lock is released and its file removed");
    let out = env.run(&["daemon", "stop", "--json"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert_eq!(json_of(&out)["state"], "not_running");
    assert_eq!(env.run(&["daemon", "status"]).status.code(), Some(3));
}

#[test]
fn a_lock_file_naming_a_foreign_pid_is_never_signalled() {
    let env = Env::new();
    std::fs::create_dir_all(env.home()).unwrap();
    let lock = env.home().join("daemon.lock");
    let mut bystander = Command::new("sleep").arg("30").stdin(Stdio::null()).spawn().unwrap();
    let pid = bystander.id();
    std::fs::write(&lock, format!(r#"{{"pid":{pid},"addr":"127.0.0.1:3210","started_ms":1}}"#)).unwrap();

    // Left by a daemon killed with -9: nobody holds the lock, so nobody is running.
    let out = env.run(&["daemon", "stop"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(said.contains(&format!("names pid {pid}")) && said.contains("never signalled"), "{said}");
    let v = json_of(&env.run(&["daemon", "status", "--json"]));
    assert_eq!((v["running"].clone(), v["stale_pid"].clone()), (false.into(), pid.into()), "{v}");

    // Held, but by something that is not a docdex daemon: refused, nothing signalled.
    let held = std::fs::File::open(&lock).unwrap();
    held.try_lock().unwrap();
    assert_eq!(env.run(&["daemon", "status"]).status.code(), Some(0), "a held lock is a running holder");
    let out = env.run(&["daemon", "stop"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains(&format!("not stopping pid {pid}")) && said.contains("not `docdex daemon`"), "{said}");
    std::thread::sleep(Duration::from_millis(200));
    assert!(bystander.try_wait().unwrap().is_none(), "the bystander was not signalled");
    drop(held);
    let _ = bystander.kill();
    let _ = bystander.wait();
}

#[test]
fn bare_daemon_still_starts_and_flags_do_not_mix_with_subcommands() {
    let env = Env::new();
    let daemon = Server::start(&env, &["daemon", "--no-watch"], &[]);
    assert!(daemon.addr.starts_with("127.0.0.1:"), "{}", daemon.addr);
    let out = env.run(&["daemon", "--no-watch", "status"]);
    assert_eq!(out.status.code(), Some(2), "a flag of the server with a subcommand is a usage error: {}", text(&out));
}
