//! One walker policy for the full index and every watcher event: symlinks (to files and to
//! directories, made before or while the watcher runs), hidden files, `.env`, gitignored,
//! excluded, oversized and binary files never become searchable, however they arrive.

use crate::util::{eventually, hit_paths, write, Env, Watcher};
use std::path::Path;
use std::time::Duration;

/// Every indexed path (manifest entries that are in the index).
fn indexed_paths(engine: &docdex::Engine, repo: &Path) -> Vec<String> {
    let r = engine.resolve_repo(repo).unwrap();
    let m = docdex::engine::index::manifest::Manifest::load(&r.manifest_path());
    m.files.into_iter().filter(|(_, e)| e.skipped.is_none()).map(|(p, _)| p).collect()
}

#[test]
fn nothing_outside_the_repo_or_ignored_becomes_searchable_under_a_live_watcher() {
    let env = Env::new();
    let outside = env.repo("outside");
    write(&outside, "shadow", "root:quetzalsecret:19000:0:99999:7:::\ndaemon bin sys\n");
    for i in 0..30 {
        write(&outside, &format!("tree/f{i}.py"), format!("def outside_{i}(): return 'capybaraleak'\n"));
    }
    let repo = env.repo("r");
    write(&repo, ".gitignore", "vendor/\n*.log\n");
    write(&repo, "main.rs", "fn main() { okapi(); }\n");
    // A directory link that exists before the watcher starts: its target must not be watched.
    std::os::unix::fs::symlink(outside.join("tree"), repo.join("prelinked")).unwrap();
    env.write_config("[index]\nmax_file_size_bytes = 4096\n");
    let engine = env.engine();
    let _w = Watcher::start(&engine, &repo);
    assert_eq!(hit_paths(&engine, &repo, "okapi"), ["main.rs"]);

    // Made while the watcher runs.
    std::os::unix::fs::symlink(outside.join("shadow"), repo.join("x.py")).unwrap();
    std::os::unix::fs::symlink(&outside, repo.join("linkdir")).unwrap();
    write(&repo, ".env", "SECRET=tokquetzal\n");
    write(&repo, "vendor/x.go", "package vendor // capybaraleak vendored\n");
    write(&repo, "debug.log", "capybaraleak in a log\n");
    write(&repo, ".hidden/x.py", "capybaraleak = 'hidden'\n");
    write(&repo, "src/.secret.rs", "// capybaraleak hidden file in a visible dir\n");
    // Over the size limit, and binary: skipped under the watcher as by the full index.
    write(&repo, "big.py", format!("x = 'capybaraleak'\n{}", "# padding\n".repeat(1000)));
    write(&repo, "blob.py", b"capybaraleak = 1\n\0\x01\x02 binary\n");
    // A change inside the pre-existing linked directory's target.
    write(&outside, "tree/f0.py", "def outside_0(): return 'capybaraleak changed'\n");
    std::thread::sleep(Duration::from_millis(600));
    // A real change after all of them: once it is searchable, every earlier event was applied.
    write(&repo, "later.rs", "fn pangolin() {}\n");
    eventually("a real file", || hit_paths(&engine, &repo, "pangolin") == ["later.rs"]);
    std::thread::sleep(Duration::from_millis(600));

    for q in ["quetzalsecret", "daemon bin sys", "tokquetzal", "capybaraleak", "outside"] {
        let hits = hit_paths(&engine, &repo, q);
        assert!(hits.is_empty(), "{q:?} must not be searchable: {hits:?}");
    }
    let indexed = indexed_paths(&engine, &repo);
    assert_eq!(indexed, ["later.rs", "main.rs"], "only the real files are indexed");

    // A symlinked file swapped in for an indexed one leaves the index too.
    std::fs::remove_file(repo.join("main.rs")).unwrap();
    std::os::unix::fs::symlink(outside.join("shadow"), repo.join("main.rs")).unwrap();
    eventually("the swapped file leaves the index", || hit_paths(&engine, &repo, "okapi").is_empty());
    assert!(hit_paths(&engine, &repo, "quetzalsecret").is_empty());
}

#[test]
fn a_file_swapped_for_a_symlink_is_never_read_through_it_even_before_a_reindex() {
    let env = Env::new();
    let outside = env.repo("outside");
    write(&outside, "shadow", "root:quetzalsecret:19000:0:99999:7:::\n");
    let repo = env.repo("r");
    write(&repo, "handler.py", "def okapi_handler():\n    return 1\n");
    write(&repo, "sub/deep.py", "def okapi_deep():\n    return 2\n");
    let r = repo.to_str().unwrap();
    env.json(&["index", "--repo", r, "--json"]);
    // No watcher: the index still has these files when they become links out of the repo.
    std::fs::remove_file(repo.join("handler.py")).unwrap();
    std::os::unix::fs::symlink(outside.join("shadow"), repo.join("handler.py")).unwrap();
    std::fs::remove_dir_all(repo.join("sub")).unwrap();
    std::fs::create_dir_all(outside.join("sub")).unwrap();
    write(&outside, "sub/deep.py", "quetzalsecret in a linked directory\n");
    std::os::unix::fs::symlink(outside.join("sub"), repo.join("sub")).unwrap();

    for q in ["okapi handler", "okapi deep"] {
        let out = env.run(&["search", "--repo", r, q, "--json"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(!text.contains("quetzalsecret"), "a snippet was read through a symlink: {text}");
    }
    for args in [
        &["symbols", "--repo", r, "okapi_handler"][..],
        &["ast", "query", "--repo", r, "--kinds", "function_definition"][..],
    ] {
        let out = env.run(args);
        assert!(!String::from_utf8_lossy(&out.stdout).contains("quetzalsecret"), "{args:?}");
    }
    let out = env.run(&["get", "--repo", r, "handler.py"]);
    assert!(!out.status.success() && !String::from_utf8_lossy(&out.stdout).contains("quetzalsecret"));
    // A link that stays inside the repository is not followed by `get` either (one opener).
    write(&repo, "real.py", "def okapi_real():\n    return 3\n");
    std::os::unix::fs::symlink(repo.join("real.py"), repo.join("alias.py")).unwrap();
    let out = env.run(&["get", "--repo", r, "alias.py"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("symbolic link"), "{err}");
    let out = env.run(&["get", "--repo", r, "real.py"]);
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("okapi_real"));
    // The next run takes them out of the index and lists them as skipped symlinks.
    let summary = env.json(&["index", "--repo", r, "--json"]);
    assert_eq!(summary["files"], 1, "only real.py remains: {summary}");
    assert!(summary.to_string().contains("symlink"), "{summary}");
}

/// `docdex watch` as a child process, once its catch-up run is done; killed on drop.
struct WatchProcess(std::process::Child);

impl WatchProcess {
    fn start(env: &Env, repo: &Path) -> WatchProcess {
        let (w, reports) = WatchProcess::start_as(env, repo, hermetic(env));
        assert!(reports.is_empty(), "{reports:?}");
        w
    }

    /// Starts `docdex watch` through `cmd`, returning it with the reports before `ready`.
    fn start_as(env: &Env, repo: &Path, mut cmd: std::process::Command) -> (WatchProcess, Vec<String>) {
        use std::io::BufRead;
        let mut child = cmd
            .args(["watch", "--json", "--repo", repo.to_str().unwrap()])
            .env("DOCDEX_HOME", env.home())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn docdex watch");
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let mut before = Vec::new();
        loop {
            let Some(Ok(line)) = lines.next() else {
                let _ = child.wait();
                let mut err = String::new();
                std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
                panic!("the watcher ended before it was ready: {before:?} {err}");
            };
            if line.contains("\"ready\"") {
                break;
            }
            before.push(line);
        }
        // Keep reading so the watcher never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        (WatchProcess(child), before)
    }

    fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's pid.
        assert_eq!(unsafe { libc::kill(self.0.id() as i32, sig) }, 0);
    }
}

impl Drop for WatchProcess {
    fn drop(&mut self) {
        self.signal(libc::SIGCONT);
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_checkout_that_overflows_the_os_event_queue_still_converges() {
    use crate::util::git;
    // More file events than inotify queues (each rewritten file is an unlink, a create, a
    // write and a close): the kernel drops the rest and says so with one overflow event.
    let queue: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(16384);
    let files = (queue / 3 + 500).clamp(3000, 20000);
    let env = Env::new();
    let repo = env.repo("r");
    let body = |word: &str, i: usize| format!("fn f{i}() {{ {word}_{i}(); }}\n");
    for i in 0..files {
        write(&repo, &format!("src/d{}/f{i}.rs", i % 40), body("marmoset", i));
    }
    crate::util::git_commit_all(&repo);
    git(&repo, &["checkout", "-q", "-b", "next"]);
    for i in 0..files {
        write(&repo, &format!("src/d{}/f{i}.rs", i % 40), body("tamarin", i));
    }
    git(&repo, &["commit", "-q", "-am", "next"]);
    git(&repo, &["checkout", "-q", "main"]);
    let engine = env.engine();
    let watcher = WatchProcess::start(&env, &repo);
    assert!(!hit_paths(&engine, &repo, "marmoset").is_empty());

    // The watcher is stopped (a busy machine, a laptop lid) while the checkout rewrites
    // every file, so its queue overflows.
    watcher.signal(libc::SIGSTOP);
    git(&repo, &["checkout", "-q", "next"]);
    watcher.signal(libc::SIGCONT);

    eventually("every rewritten file searchable with its new content", || {
        hit_paths(&engine, &repo, "marmoset").is_empty() && !hit_paths(&engine, &repo, "tamarin").is_empty()
    });
    let indexed = indexed_paths(&engine, &repo);
    assert_eq!(indexed.len(), files);
}

/// The real binary, run as an unprivileged user when the tests run as root (root reads every
/// directory, so a permission can only be refused to another user).
pub(super) fn docdex_as(unprivileged: bool) -> std::process::Command {
    // SAFETY: geteuid has no preconditions.
    if unprivileged && unsafe { libc::geteuid() } == 0 {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_docdex")]);
        c
    } else {
        std::process::Command::new(env!("CARGO_BIN_EXE_docdex"))
    }
}

/// The home directory [`hermetic`] gives the binary (made on first use).
fn user_home(env: &Env) -> std::path::PathBuf {
    let home = env.dir.path().join("user");
    std::fs::create_dir_all(&home).unwrap();
    home
}

/// The real binary with a home directory of its own and no git config from outside: the
/// watcher also watches the user's git config and excludes file, which must be the test's.
fn hermetic(env: &Env) -> std::process::Command {
    let mut cmd = docdex_as(false);
    cmd.env("HOME", user_home(env)).env_remove("XDG_CONFIG_HOME").env_remove("GIT_CONFIG_GLOBAL");
    cmd
}

/// A home and repository `r` holding `files`, both owned by the unprivileged user
/// [`docdex_as`] runs as (when the tests run as root; else the current user's); `None`, with a
/// note, where there is no `setpriv` to switch users. Files written afterwards stay root's.
pub(super) fn unprivileged_env(files: &[(&str, &str)]) -> Option<(Env, std::path::PathBuf)> {
    use std::os::unix::fs::PermissionsExt;
    if std::process::Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("skipped: no setpriv to run docdex as another user");
        return None;
    }
    let env = Env::new();
    let repo = env.repo("r");
    for (rel, text) in files {
        write(&repo, rel, text);
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        std::fs::set_permissions(env.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::create_dir_all(env.home()).unwrap();
        chown_tree(env.dir.path());
    }
    Some((env, repo))
}

/// Gives `p` and everything under it to the unprivileged user (uid and gid 65534).
pub(super) fn chown_tree(p: &Path) {
    std::os::unix::fs::chown(p, Some(65534), Some(65534)).unwrap();
    for e in std::fs::read_dir(p).unwrap().flatten() {
        match e.file_type().unwrap().is_dir() {
            true => chown_tree(&e.path()),
            false => std::os::unix::fs::chown(e.path(), Some(65534), Some(65534)).unwrap(),
        }
    }
}

/// The paths `docdex search QUERY` finds, run as [`docdex_as`] runs the watcher.
fn search_as(env: &Env, repo: &Path, query: &str) -> Vec<String> {
    let out = docdex_as(true)
        .args(["search", "--json", "--repo", repo.to_str().unwrap(), query])
        .env("DOCDEX_HOME", env.home())
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let mut paths: Vec<String> =
        v["results"].as_array().into_iter().flatten().filter_map(|r| r["path"].as_str().map(String::from)).collect();
    paths.sort();
    paths.dedup();
    paths
}

#[test]
fn a_directory_the_watcher_may_not_read_is_named_and_the_rest_is_watched() {
    use std::os::unix::fs::PermissionsExt;
    // The unprivileged user owns everything but the data volume.
    let Some((env, repo)) = unprivileged_env(&[("src/main.rs", "fn okapi_main() {}\n")]) else { return };
    // A container's data volume inside the project, owned by another user.
    write(&repo, "pgdata/base/1.txt", "okapi row\n");
    let all = |p: &Path, mode: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    all(&repo.join("pgdata"), 0o700);
    if unsafe { libc::geteuid() } != 0 {
        all(&repo.join("pgdata"), 0o000);
    }

    let (watcher, reports) = WatchProcess::start_as(&env, &repo, docdex_as(true));
    let said = reports.join("\n");
    assert!(said.contains("not watching pgdata/") && said.contains("Permission denied"), "{said}");
    assert_eq!(search_as(&env, &repo, "okapi"), ["src/main.rs"]);

    // Edits beside it, in a directory made after the start included, are seen.
    write(&repo, "src/new.rs", "fn okapi_new() {}\n");
    write(&repo, "docs/guide.md", "okapi guide\n");
    eventually("edits beside the refused directory", || {
        search_as(&env, &repo, "okapi") == ["docs/guide.md", "src/main.rs", "src/new.rs"]
    });
    std::fs::create_dir_all(repo.join("docs/deeper")).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    write(&repo, "docs/deeper/more.md", "okapi deeper\n");
    eventually("a file in a directory made later", || {
        search_as(&env, &repo, "okapi deeper").contains(&"docs/deeper/more.md".to_string())
    });

    // Readable again: watched and indexed without a restart.
    all(&repo.join("pgdata"), 0o755);
    all(&repo.join("pgdata/base"), 0o755);
    eventually("the directory once readable", || {
        search_as(&env, &repo, "okapi row").contains(&"pgdata/base/1.txt".to_string())
    });
    write(&repo, "pgdata/base/2.txt", "okapi second row\n");
    eventually("an edit inside it", || {
        search_as(&env, &repo, "okapi second row").contains(&"pgdata/base/2.txt".to_string())
    });
    drop(watcher);
}

#[test]
fn a_directory_made_unreadable_while_watching_is_watched_once_it_is_opened_up() {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let Some((env, repo)) = unprivileged_env(&[("src/main.rs", "fn numbat_main() {}\n")]) else { return };
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let (watcher, reports) = WatchProcess::start_as(&env, &repo, docdex_as(true));
    assert!(reports.is_empty(), "{reports:?}");

    // A container makes its volume, unreadable to this user from its first instant...
    let vol = repo.join("vol");
    std::fs::DirBuilder::new().mode(if root { 0o700 } else { 0o000 }).create(&vol).unwrap();
    std::thread::sleep(Duration::from_millis(800));
    // ...and it is opened up later (chown, chmod).
    if root {
        std::os::unix::fs::chown(&vol, Some(65534), Some(65534)).unwrap();
    } else {
        std::fs::set_permissions(&vol, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::thread::sleep(Duration::from_millis(800));
    write(&repo, "vol/later.md", "numbat later\n");
    eventually("a file made in it once readable", || {
        search_as(&env, &repo, "numbat later").contains(&"vol/later.md".to_string())
    });
    drop(watcher);
}

/// The inodes of the directories a process's inotify instances watch (`/proc/PID/fdinfo`
/// lists each watch with its inode in hex).
fn watched_inodes(pid: u32) -> std::collections::HashSet<u64> {
    let mut out = std::collections::HashSet::new();
    for fd in std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().flatten() {
        if !std::fs::read_link(fd.path()).is_ok_and(|l| l.to_string_lossy().contains("inotify")) {
            continue;
        }
        let info = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{}", fd.file_name().to_string_lossy()));
        for line in info.unwrap_or_default().lines().filter(|l| l.starts_with("inotify wd:")) {
            if let Some(ino) = line.split_whitespace().find_map(|w| w.strip_prefix("ino:")) {
                out.insert(u64::from_str_radix(ino, 16).unwrap());
            }
        }
    }
    out
}

fn inode(p: &Path) -> u64 {
    std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap())
}

/// The inodes of `dirs` (repo-relative).
fn inodes(repo: &Path, dirs: &[&str]) -> std::collections::HashSet<u64> {
    dirs.iter().map(|d| inode(&repo.join(d))).collect()
}

/// The watcher put a recursive watch on the root: one inotify watch per directory of
/// `node_modules/`, `target/`, `.git/objects/` and every other ignored tree, which exhausts
/// `fs.inotify.max_user_watches` on a large JS or Rust repository (and wakes the watcher for
/// every build). It now watches exactly the directories the index walks (and the directories
/// of git's rule files), follows new ones, and moves its watches when `.gitignore` changes.
#[test]
fn the_watcher_watches_only_the_directories_the_index_walks() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, ".gitignore", "target/\nnode_modules/\ngen/\n");
    write(&repo, ".docdexignore", "private/\n");
    write(&repo, "src/lib.rs", "fn okapi_lib() {}\n");
    write(&repo, "src/a/b.rs", "fn dugong() {}\n");
    write(&repo, "gen/out.rs", "fn tapir() {}\n");
    write(&repo, "private/keys.rs", "fn narwhal() {}\n");
    for i in 0..40 {
        write(&repo, &format!("node_modules/pkg{i}/lib/index.js"), "module.exports = 1;\n");
        write(&repo, &format!("target/debug/build/c{i}/out/gen.rs"), "fn built() {}\n");
    }
    crate::util::git(&repo, &["init", "-q"]);
    let engine = env.engine();
    let watcher = WatchProcess::start(&env, &repo);
    let pid = watcher.0.id();
    // git's rule files: the repository's, and the user's `~/.gitconfig`.
    let rules: std::collections::HashSet<u64> =
        inodes(&repo, &[".git", ".git/info"]).into_iter().chain([inode(&user_home(&env))]).collect();

    let walked = ["", "src", "src/a"];
    let watched = watched_inodes(pid);
    let allowed: std::collections::HashSet<u64> = inodes(&repo, &walked).union(&rules).copied().collect();
    assert!(inodes(&repo, &walked).is_subset(&watched), "every walked directory is watched");
    assert!(
        watched.is_subset(&allowed),
        "{} watches, {} of them on ignored directories",
        watched.len(),
        watched.difference(&allowed).count()
    );

    // A directory made while watching is watched, with the one made inside it at once.
    write(&repo, "src/new/deeper/d.rs", "fn kinkajou() {}\n");
    eventually("the new directories watched", || {
        inodes(&repo, &["src/new", "src/new/deeper"]).is_subset(&watched_inodes(pid))
    });
    write(&repo, "src/new/deeper/later.rs", "fn wallaby() {}\n");
    eventually("a file made in it later", || hit_paths(&engine, &repo, "wallaby") == ["src/new/deeper/later.rs"]);
    assert_eq!(hit_paths(&engine, &repo, "kinkajou"), ["src/new/deeper/d.rs"]);
    // One made in an ignored tree is not: nothing there is watched, so nothing is even seen.
    std::fs::create_dir_all(repo.join("node_modules/fresh/dist")).unwrap();

    // `.gitignore` no longer ignores gen/ and now ignores src/a/: the watches follow at once.
    write(&repo, ".gitignore", "target/\nnode_modules/\nsrc/a/\n");
    let walked = ["", "src", "src/new", "src/new/deeper", "gen"];
    eventually("gen/ watched and indexed, src/a/ no longer watched", || {
        let w = watched_inodes(pid);
        inodes(&repo, &walked).is_subset(&w)
            && !w.contains(&inode(&repo.join("src/a")))
            && hit_paths(&engine, &repo, "tapir") == ["gen/out.rs"]
    });
    write(&repo, "gen/more.rs", "fn axolotl() {}\n");
    eventually("an edit in the un-ignored directory", || hit_paths(&engine, &repo, "axolotl") == ["gen/more.rs"]);
    let allowed: std::collections::HashSet<u64> = inodes(&repo, &walked).union(&rules).copied().collect();
    let watched = watched_inodes(pid);
    assert!(watched.is_subset(&allowed), "{} watches on ignored directories", watched.difference(&allowed).count());
    assert!(hit_paths(&engine, &repo, "narwhal").is_empty());
    assert!(hit_paths(&engine, &repo, "dugong").is_empty(), "src/a/ is ignored now");
    drop(watcher);
}

/// Makes `depth` nested directories named `name` under `dir` and a file `leaf` in the last,
/// through directory descriptors, so the absolute path may pass PATH_MAX (4096 bytes), which
/// no call taking a whole path accepts.
fn make_deep(dir: &Path, name: &str, depth: usize, leaf: &str, text: &str) {
    use std::ffi::CString;
    let c = |s: &str| CString::new(s).unwrap();
    let path = CString::new(dir.to_str().unwrap()).unwrap();
    // SAFETY: plain descriptor calls on NUL-terminated names; every descriptor is closed.
    unsafe {
        let mut fd = libc::open(path.as_ptr(), libc::O_DIRECTORY | libc::O_RDONLY);
        assert!(fd >= 0);
        for _ in 0..depth {
            assert_eq!(libc::mkdirat(fd, c(name).as_ptr(), 0o755), 0);
            let next = libc::openat(fd, c(name).as_ptr(), libc::O_DIRECTORY | libc::O_RDONLY);
            assert!(next >= 0);
            libc::close(fd);
            fd = next;
        }
        let f = libc::openat(fd, c(leaf).as_ptr(), libc::O_CREAT | libc::O_WRONLY, 0o644);
        assert!(f >= 0);
        assert_eq!(libc::write(f, text.as_ptr().cast(), text.len()), text.len() as isize);
        libc::close(f);
        libc::close(fd);
    }
}

/// A directory whose path is longer than the OS takes (PATH_MAX, 4096 bytes) could not be
/// watched, and the watcher passed over it without a word. It is now logged, named once, and
/// counted in `docdex status` as skipped files are; the rest of the repository is watched.
#[test]
fn a_directory_too_deep_to_watch_is_named_and_counted_in_the_status() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "main.rs", "fn okapi_main() {}\n");
    std::fs::create_dir(repo.join("deep")).unwrap();
    let name = "d".repeat(250);
    make_deep(&repo.join("deep"), &name, 20, "deep.rs", "fn okapi_deep() {}\n");
    let engine = env.engine();
    let (watcher, reports) = WatchProcess::start_as(&env, &repo, docdex_as(false));
    let said = reports.join("\n");
    assert!(said.contains("not watching deep/") && said.contains("File name too long"), "{said}");
    let status = engine.status(&repo).unwrap();
    let warnings = status.warnings.join("\n");
    assert!(warnings.contains("1 directory not watched: 1 File name too long"), "{warnings}");
    assert!(warnings.contains("not watched deep/ddd"), "{warnings}");

    write(&repo, "later.rs", "fn wallaby() {}\n");
    eventually("the rest is watched", || hit_paths(&engine, &repo, "wallaby") == ["later.rs"]);
    drop(watcher);
    // Once the watcher is gone, so is what it could not watch.
    eventually("the status after the watcher", || {
        engine.status(&repo).is_ok_and(|s| !s.warnings.iter().any(|w| w.contains("not watched")))
    });
}

/// A registered source (`docdex add`) was watched with one recursive inotify watch: one per
/// directory of its `node_modules/` and every other tree its ignore files leave out, which can
/// exhaust `fs.inotify.max_user_watches` on its own. A source is now watched as the repository
/// is: a watch on each directory its index walk enters (its ignore files and `--exclude`
/// applied), one on each directory made in it, and none once it is removed.
#[test]
fn a_source_is_watched_only_where_its_index_walks_and_not_once_removed() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "main.rs", "fn okapi_main() {}\n");
    let notes = env.repo("notes");
    write(&notes, ".gitignore", "node_modules/\n");
    write(&notes, "guide.md", "# Guide\n\nHerons wade.\n");
    write(&notes, "deep/egret.md", "Egrets nest in the reeds.\n");
    write(&notes, "drafts/wip.md", "Unfinished draft.\n");
    for i in 0..60 {
        write(&notes, &format!("node_modules/pkg{i}/lib/index.md"), "ignored\n");
    }
    let engine = env.engine();
    let req = docdex::engine::protocol::AddSourceRequest {
        path: notes.clone(),
        exclude: vec!["drafts".into()],
        ..Default::default()
    };
    engine.add_source(&repo, &req).unwrap();
    let watcher = WatchProcess::start(&env, &repo);
    let pid = watcher.0.id();

    let walked = inodes(&notes, &["", "deep"]);
    let ignored: std::collections::HashSet<u64> = (0..60)
        .flat_map(|i| [format!("node_modules/pkg{i}"), format!("node_modules/pkg{i}/lib")])
        .chain(["node_modules".to_string(), "drafts".to_string()])
        .map(|d| inode(&notes.join(d)))
        .collect();
    let watched = watched_inodes(pid);
    assert!(walked.is_subset(&watched), "every directory of the source the index walks is watched");
    assert_eq!(watched.intersection(&ignored).count(), 0, "no watch on the source's ignored or excluded directories");
    assert!(watched.len() < 10, "{} watches for 2 directories of the source and 1 of the repository", watched.len());

    // A directory made in the source is watched with the one made inside it, and followed.
    write(&notes, "deep/new/deeper/crane.md", "Cranes dance.\n");
    eventually("the new directories watched", || {
        inodes(&notes, &["deep/new", "deep/new/deeper"]).is_subset(&watched_inodes(pid))
    });
    write(&notes, "deep/new/deeper/later.md", "Ospreys fish at dawn.\n");
    eventually("a file made in it later", || {
        hit_paths(&engine, &repo, "ospreys") == ["//notes/deep/new/deeper/later.md"]
    });
    // One made in its ignored tree is not.
    std::fs::create_dir_all(notes.join("node_modules/fresh/dist")).unwrap();
    write(
        &notes,
        "later.md",
        "Kestrels hover.
",
    );
    eventually("an edit after it", || hit_paths(&engine, &repo, "kestrels") == ["//notes/later.md"]);
    assert!(!watched_inodes(pid).contains(&inode(&notes.join("node_modules/fresh"))));

    // Removed: every watch on the source goes.
    let source_dirs = inodes(&notes, &["", "deep", "deep/new", "deep/new/deeper"]);
    engine.remove_source(&repo, "notes").unwrap();
    eventually("the source unwatched and dropped", || {
        watched_inodes(pid).intersection(&source_dirs).count() == 0 && hit_paths(&engine, &repo, "herons").is_empty()
    });
    assert!(watched_inodes(pid).contains(&inode(&repo)), "the repository is still watched");
    drop(watcher);
}

/// The user's excludes file (`core.excludesFile` in `~/.gitconfig`, else
/// `$XDG_CONFIG_HOME/git/ignore`) lies outside the repository, and the watcher did not watch
/// it: an edit there applied only at the next full `docdex index`, so files it newly ignored
/// stayed searchable (and watched). The watcher now watches it, and the configs that name it,
/// as it watches `.git/info/exclude`: an edit moves the watches and runs a full update.
#[test]
fn an_edit_of_the_users_excludes_file_under_a_watcher_applies_at_once() {
    let env = Env::new();
    let home = user_home(&env);
    std::fs::write(home.join(".gitconfig"), "[core]\n\texcludesFile = ~/.gitignore_global\n").unwrap();
    std::fs::write(home.join(".gitignore_global"), "*.bak\n").unwrap();
    std::fs::create_dir_all(home.join(".config")).unwrap();
    let repo = env.repo("r");
    write(&repo, "main.rs", "fn okapi_main() {}\n");
    write(&repo, "gen/out.rs", "fn tapir_gen() {}\n");
    write(&repo, "notes.bak", "capybara backup notes\n");
    crate::util::git(&repo, &["init", "-q"]);
    let engine = env.engine();
    let watcher = WatchProcess::start(&env, &repo);
    let pid = watcher.0.id();
    assert_eq!(hit_paths(&engine, &repo, "tapir_gen"), ["gen/out.rs"]);
    assert!(hit_paths(&engine, &repo, "capybara").is_empty(), "the global excludes file applies from the start");

    // The excludes file now ignores gen/ and no longer *.bak.
    std::fs::write(home.join(".gitignore_global"), "gen/\n").unwrap();
    eventually("gen/ dropped and unwatched, notes.bak indexed", || {
        hit_paths(&engine, &repo, "tapir_gen").is_empty()
            && hit_paths(&engine, &repo, "capybara") == ["notes.bak"]
            && !watched_inodes(pid).contains(&inode(&repo.join("gen")))
    });

    // The config no longer names it: the default `~/.config/git/ignore` applies, made with its
    // directory while watching.
    std::fs::write(home.join(".gitconfig"), "[user]\n\tname = t\n").unwrap();
    eventually("gen/ back", || hit_paths(&engine, &repo, "tapir_gen") == ["gen/out.rs"]);
    std::fs::create_dir_all(home.join(".config/git")).unwrap();
    std::fs::write(home.join(".config/git/ignore"), "*.bak\n").unwrap();
    eventually("notes.bak dropped", || hit_paths(&engine, &repo, "capybara").is_empty());
    assert_eq!(hit_paths(&engine, &repo, "okapi_main"), ["main.rs"]);
    drop(watcher);
}

/// An `[includeIf "onbranch:..."]` in the user's config is decided by the repository's `HEAD`:
/// a checkout under a watcher must apply the excludes file it brings in (or drops), as an edit
/// of the config does. And `GIT_CONFIG_GLOBAL=/dev/null` (or `core.excludesFile = /dev/null`)
/// names no file: the watcher watched `/dev`, the directory of each config file, and woke for
/// every device event there.
#[test]
fn a_checkout_onto_a_branch_an_include_names_applies_its_excludes_under_a_watcher() {
    let env = Env::new();
    let home = user_home(&env);
    std::fs::write(home.join(".gitconfig"), "[includeIf \"onbranch:wip/\"]\n\tpath = ~/wip.inc\n").unwrap();
    std::fs::write(home.join("wip.inc"), "[core]\n\texcludesFile = ~/wip-ignore\n").unwrap();
    std::fs::write(home.join("wip-ignore"), "*.scratch\n").unwrap();
    let repo = env.repo("r");
    write(&repo, "main.rs", "fn okapi_main() {}\n");
    write(&repo, "notes.scratch", "capybara scratch notes\n");
    crate::util::git_commit_all(&repo);
    let mut cmd = hermetic(&env);
    cmd.env("GIT_CONFIG_GLOBAL", "/dev/null");
    let (watcher, reports) = WatchProcess::start_as(&env, &repo, cmd);
    assert!(reports.is_empty(), "{reports:?}");
    let watched = watched_inodes(watcher.0.id());
    assert!(watched.contains(&inode(&repo)));
    assert!(!watched.contains(&inode(Path::new("/dev"))), "/dev is watched for GIT_CONFIG_GLOBAL=/dev/null");
    drop(watcher);

    let engine = env.engine();
    let watcher = WatchProcess::start(&env, &repo);
    assert_eq!(hit_paths(&engine, &repo, "capybara"), ["notes.scratch"], "not on a wip/ branch");

    crate::util::git(&repo, &["checkout", "-q", "-b", "wip/x"]);
    eventually("notes.scratch dropped on wip/x", || hit_paths(&engine, &repo, "capybara").is_empty());
    crate::util::git(&repo, &["checkout", "-q", "main"]);
    eventually("notes.scratch back on main", || hit_paths(&engine, &repo, "capybara") == ["notes.scratch"]);
    drop(watcher);
}

/// A directory of a registered source that refuses a watch is named by its key in what the
/// watcher says and in `docdex status`, as the repository's are by their path.
#[test]
fn a_source_directory_too_deep_to_watch_is_named_by_its_key() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "main.rs", "fn okapi_main() {}\n");
    let notes = env.repo("notes");
    write(&notes, "guide.md", "Herons wade.\n");
    std::fs::create_dir(notes.join("deep")).unwrap();
    make_deep(&notes.join("deep"), &"d".repeat(250), 20, "deep.md", "Egrets nest.\n");
    let engine = env.engine();
    let req = docdex::engine::protocol::AddSourceRequest { path: notes.clone(), ..Default::default() };
    engine.add_source(&repo, &req).unwrap();
    let (watcher, reports) = WatchProcess::start_as(&env, &repo, hermetic(&env));
    let said = reports.join("\n");
    assert!(said.contains("not watching //notes/deep/ddd") && said.contains("File name too long"), "{said}");
    let warnings = engine.status(&repo).unwrap().warnings.join("\n");
    assert!(warnings.contains("1 directory not watched: 1 File name too long"), "{warnings}");
    assert!(warnings.contains("not watched //notes/deep/ddd"), "{warnings}");
    drop(watcher);
}

#[test]
fn a_repository_holding_docdexs_home_indexes_around_it() {
    // The home's config can hold the server's token, and its state changes on every run: a
    // watcher indexing it re-indexed its own writes forever, and `get` served the config.
    let env = Env::new();
    let proj = env.repo("proj");
    let home = proj.join("dxhome");
    write(&home, "config.toml", "[index]\nwatch_debounce_ms = 200\n# gryphonsecret\n");
    write(&proj, "main.rs", "fn main() { okapi(); }\n");
    let engine = docdex::Engine::open_at(&home).unwrap();
    engine.index(&proj, &Default::default(), &crate::util::quiet()).unwrap();
    assert_eq!(hit_paths(&engine, &proj, "okapi"), ["main.rs"]);
    assert!(hit_paths(&engine, &proj, "gryphonsecret").is_empty());
    let req = docdex::engine::protocol::FileRequest { path: "dxhome/config.toml".into(), ..Default::default() };
    let err = engine.get_file(&proj, &req).unwrap_err();
    assert_eq!(err.code(), "path_not_served", "{err}");

    let _w = Watcher::start(&engine, &proj);
    write(&proj, "more.rs", "fn pelican() {}\n");
    eventually("the watcher indexes more.rs", || hit_paths(&engine, &proj, "pelican") == ["more.rs"]);
    // Settled: the watcher's own writes under the home start no more runs.
    std::thread::sleep(Duration::from_millis(1500));
    let settled = engine.status(&proj).unwrap().generation;
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(engine.status(&proj).unwrap().generation, settled, "the watcher keeps indexing its own state");
    assert!(indexed_paths(&engine, &proj).iter().all(|p| !p.starts_with("dxhome")));
}

/// With a watcher running, impact on a file the watcher has not taken in yet said "`docdex
/// index` adds it", and `docdex index` then answered that the watcher keeps the index current,
/// nothing to do (tour16 F6). The advice names the watcher now, and the file comes in.
#[test]
fn impact_on_a_file_a_running_watcher_has_not_taken_in_yet_names_the_watcher() {
    use docdex::engine::code::impact::ImpactRequest;
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "app/main.py", "import app.db\n");
    write(&repo, "app/db.py", "X = 1\n");
    let engine = env.engine();
    engine.index(&repo, &Default::default(), &crate::util::quiet()).unwrap();
    let watcher = WatchProcess::start(&env, &repo);
    watcher.signal(libc::SIGSTOP);
    write(&repo, "app/cache.py", "import app.db\n");
    let req = ImpactRequest { file: "app/cache.py".into(), ..Default::default() };
    let err = engine.impact(&repo, &req).expect_err("not taken in yet").to_string();
    let pid = watcher.0.id();
    assert!(err.contains(&format!("the running watcher (pid {pid}) adds it within seconds")), "{err}");
    assert!(!err.contains("docdex index"), "{err}");
    watcher.signal(libc::SIGCONT);
    eventually("the watcher takes the new file into the graph", || engine.impact(&repo, &req).is_ok());
    drop(watcher);
    // With no watcher, impact brings the new file into the index itself and answers for it.
    write(&repo, "app/later.py", "import app.db\n");
    let req = ImpactRequest { file: "app/later.py".into(), ..Default::default() };
    let resp = engine.impact(&repo, &req).expect("indexed first, then answered");
    assert!(resp.outbound.iter().any(|d| d.path == "app/db.py"), "{:?}", resp.outbound);
}
