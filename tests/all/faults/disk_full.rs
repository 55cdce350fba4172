//! A full disk: the run fails with an error that says the disk is full and which generation
//! stays live; search keeps answering from it; status says the same; nothing half-built is
//! left taking space; with space again, the next run finishes the job.
//!
//! The docdex home is a small tmpfs mounted in a private mount namespace (`unshare -rm`, no
//! root needed where unprivileged user namespaces are allowed, as on this project's CI).

use crate::util::{write, Env};
use std::process::Command;

/// Runs `script` (sh) with `$HOME_DIR` on a fresh `size_kib` tmpfs; `None` when this machine
/// cannot make a private mount.
fn with_small_disk(env: &Env, size_kib: u64, script: &str) -> Option<String> {
    let home = env.home();
    std::fs::create_dir_all(&home).unwrap();
    let full = format!("set -u\nmount -t tmpfs -o size={size_kib}k tmpfs \"$HOME_DIR\" || exit 97\n{script}");
    let out = Command::new("unshare")
        .args(["-rm", "sh", "-c", &full])
        .env("HOME_DIR", &home)
        .env("DOCDEX_HOME", &home)
        .env("DOCDEX", env!("CARGO_BIN_EXE_docdex"))
        .env("NO_COLOR", "1")
        .env_remove("DOCDEX_AUTH_TOKEN")
        .output()
        .ok()?;
    if out.status.code() == Some(97) || (!out.status.success() && out.stdout.is_empty()) {
        eprintln!("skipping: no private tmpfs here: {}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
}

/// The text between `=== name` and the next `===` in the script's output.
fn section<'a>(out: &'a str, name: &str) -> &'a str {
    let start = out.find(&format!("=== {name}\n")).unwrap_or_else(|| panic!("no section {name} in:\n{out}"));
    let rest = &out[start + name.len() + 5..];
    &rest[..rest.find("=== ").unwrap_or(rest.len())]
}

#[test]
fn disk_full_keeps_the_previous_generation_and_says_so() {
    let env = Env::new();
    let repo = env.repo("r");
    for i in 0..400 {
        write(&repo, &format!("m{i}.py"), format!("def fn_{i}():\n    return 'yak{i} '\n").repeat(20));
    }
    write(&repo, "notes.md", "the first generation knows oldmarmot\n");
    let script = format!(
        r#"R={repo}
echo "=== first"; "$DOCDEX" index --repo "$R" --quiet 2>&1; echo "exit=$?"
echo "new content knows newmarmot" > "$R/notes.md"
# Fill the disk, leaving room for about half a generation: a rebuild fails partway.
gen=$(du -sk "$HOME_DIR"/state/repos/*/gen | cut -f1)
avail=$(df -k --output=avail "$HOME_DIR" | tail -1)
dd if=/dev/zero of="$HOME_DIR/filler" bs=1k count=$((avail - gen / 2)) 2>/dev/null
echo "=== rebuild"; "$DOCDEX" index --repo "$R" --rebuild --quiet 2>&1; echo "exit=$?"
echo "=== leftover"; ls "$HOME_DIR"/state/repos/*/ | grep -c 'gen.next' || true
echo "=== search"; "$DOCDEX" search --repo "$R" oldmarmot --json 2>&1; echo "exit=$?"
echo "=== status"; "$DOCDEX" status --repo "$R" --json 2>&1; echo "exit=$?"
# Completely full: an incremental run fails the same way.
dd if=/dev/zero of="$HOME_DIR/filler2" bs=1k count=100000 2>/dev/null
echo "=== incremental"; "$DOCDEX" index --repo "$R" --quiet 2>&1; echo "exit=$?"
echo "=== search2"; "$DOCDEX" search --repo "$R" knows --json 2>&1; echo "exit=$?"
echo "=== status2"; "$DOCDEX" status --repo "$R" --json 2>&1; echo "exit=$?"
rm -f "$HOME_DIR/filler" "$HOME_DIR/filler2"
echo "=== again"; "$DOCDEX" index --repo "$R" --quiet 2>&1; echo "exit=$?"
echo "=== search3"; "$DOCDEX" search --repo "$R" newmarmot --json 2>&1; echo "exit=$?"
echo "=== status3"; "$DOCDEX" status --repo "$R" --json 2>&1; echo "exit=$?"
echo "=== end"
"#,
        repo = repo.display()
    );
    let Some(out) = with_small_disk(&env, 3 * 1024, &script) else { return };
    assert!(section(&out, "first").contains("exit=0"), "{out}");

    let rebuild = section(&out, "rebuild");
    assert!(rebuild.contains("exit=1"), "{rebuild}");
    assert!(rebuild.contains("disk full") && rebuild.contains("generation 1 stays live and searchable"), "{rebuild}");
    assert_eq!(section(&out, "leftover").trim(), "0", "the half-built generation was removed: {out}");
    let search = section(&out, "search");
    assert!(
        search.contains("exit=0") && search.contains("notes.md"),
        "search answers from the kept generation: {search}"
    );
    let status = section(&out, "status");
    assert!(status.contains("exit=0") && status.contains("disk full"), "status tells the truth: {status}");
    assert!(!status.contains("not indexed"), "{status}");

    let incremental = section(&out, "incremental");
    assert!(incremental.contains("exit=1") && incremental.contains("disk full"), "{incremental}");
    assert!(incremental.contains("stays live and searchable"), "{incremental}");
    assert!(section(&out, "search2").contains("notes.md"), "search still answers: {out}");
    assert!(section(&out, "status2").contains("disk full"), "{out}");

    assert!(section(&out, "again").contains("exit=0"), "{out}");
    assert!(section(&out, "search3").contains("notes.md"), "the change made it in once there was space: {out}");
    let status3 = section(&out, "status3");
    assert!(status3.contains("\"ready\"") && !status3.contains("disk full"), "{status3}");
}

/// Tour 26 F4: on a full disk `memory list` and `memory store` (and the profile store) said only
/// "database ...: disk I/O error". A write now says the disk is full and that nothing was lost;
/// reading needs no space, so `memory list` and `memory recall` answer from the file alone (they
/// failed: a WAL database could not be opened without room for its shared-memory file); and
/// the memory is there once space is freed.
#[test]
fn memories_on_a_full_disk_say_so_and_are_kept() {
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "notes.md", "the notes\n");
    let script = format!(
        r#"R={repo}
"$DOCDEX" index --repo "$R" --quiet >/dev/null 2>&1
"$DOCDEX" memory store --repo "$R" "kept through a full disk" >/dev/null 2>&1
dd if=/dev/zero of="$HOME_DIR/filler" bs=1k 2>/dev/null
echo "=== list"; "$DOCDEX" memory list --repo "$R" 2>&1; echo "exit=$?"
echo "=== recall"; "$DOCDEX" memory recall --repo "$R" "full disk" 2>&1; echo "exit=$?"
echo "=== store"; "$DOCDEX" memory store --repo "$R" "another" 2>&1; echo "exit=$?"
echo "=== list2"; "$DOCDEX" memory list --repo "$R" --json 2>&1; echo "exit=$?"
rm "$HOME_DIR/filler"
echo "=== freed"; "$DOCDEX" memory list --repo "$R" 2>&1; echo "exit=$?"
"#,
        repo = repo.display()
    );
    let Some(out) = with_small_disk(&env, 1024, &script) else { return };
    // Reading needs no room: the store is read from its file alone.
    let list = section(&out, "list");
    assert!(list.contains("exit=0") && list.contains("kept through a full disk"), "{list}");
    let recall = section(&out, "recall");
    assert!(recall.contains("exit=0") && recall.contains("kept through a full disk"), "{recall}");
    // Writing does: it says the disk is full, and stores nothing.
    let store = section(&out, "store");
    assert!(store.contains("exit=1") && store.contains("disk holding it is full"), "{store}");
    assert!(store.contains("nothing stored in it was lost"), "{store}");
    let list2 = section(&out, "list2");
    assert!(list2.contains("exit=0") && list2.contains("kept through a full disk"), "{list2}");
    assert!(!list2.contains("another"), "{list2}");
    assert!(section(&out, "freed").contains("kept through a full disk"), "{out}");
}

/// On a full disk a recall whose memories have no vector yet cannot store theirs (the store is
/// read from its file alone): it answers by matching words and says the disk is full, not that
/// no embedder answered (the embedder did, for the query).
#[test]
fn a_recall_on_a_full_disk_says_why_it_matched_words() {
    use crate::util::llm_config;
    use docdex::testing::fake_ollama::{FakeOllama, FakeOllamaOptions};
    let server = FakeOllama::start(FakeOllamaOptions::default()).expect("fake");
    let env = Env::new();
    let repo = env.repo("r");
    write(&repo, "notes.md", "the notes\n");
    let script = format!(
        r#"R={repo}
cat > "$HOME_DIR/config.toml" <<'CFG'
{unreachable}
CFG
"$DOCDEX" index --repo "$R" --quiet >/dev/null 2>&1
"$DOCDEX" memory store --repo "$R" "kept through a full disk" >/dev/null 2>&1
cat > "$HOME_DIR/config.toml" <<'CFG'
{fake}
CFG
dd if=/dev/zero of="$HOME_DIR/filler" bs=1k 2>/dev/null
echo "=== recall"; "$DOCDEX" memory recall --repo "$R" "full disk" 2>&1; echo "exit=$?"
"#,
        repo = repo.display(),
        unreachable = llm_config("ollama", "http://127.0.0.1:9", "fake-chat", "fake-embed"),
        fake = llm_config("ollama", &server.url(), "fake-chat", "fake-embed"),
    );
    let Some(out) = with_small_disk(&env, 1024, &script) else { return };
    let recall = section(&out, "recall");
    assert!(recall.contains("exit=0") && recall.contains("kept through a full disk"), "{recall}");
    assert!(recall.contains("the disk holding the memories is full"), "{recall}");
    assert!(!recall.contains("no embedder answered"), "{recall}");
}

/// On a full disk `profile list` answers from the file alone, as `memory list` does (it failed
/// with the disk-full message: its reader opened the WAL database the usual way, which needs
/// room for the shared-memory file); `profile add` says the disk is full and adds nothing; once
/// space is freed both work as before.
#[test]
fn profiles_on_a_full_disk_are_listed_and_kept() {
    let env = Env::new();
    let script = r#"
"$DOCDEX" profile add --agent keeper --category style "kept through a full disk" >/dev/null 2>&1
dd if=/dev/zero of="$HOME_DIR/filler" bs=1k 2>/dev/null
echo "=== list"; "$DOCDEX" profile list --agent keeper 2>&1; echo "exit=$?"
echo "=== agents"; "$DOCDEX" profile list --json 2>&1; echo "exit=$?"
echo "=== add"; "$DOCDEX" profile add --agent keeper --category style "another" 2>&1; echo "exit=$?"
rm "$HOME_DIR/filler"
echo "=== freed"; "$DOCDEX" profile add --agent keeper --category style "after the space" >/dev/null 2>&1; "$DOCDEX" profile list --agent keeper 2>&1; echo "exit=$?"
"#;
    let Some(out) = with_small_disk(&env, 1024, script) else { return };
    let list = section(&out, "list");
    assert!(list.contains("exit=0") && list.contains("kept through a full disk"), "{list}");
    let agents = section(&out, "agents");
    assert!(agents.contains("exit=0") && agents.contains("keeper"), "{agents}");
    let add = section(&out, "add");
    assert!(add.contains("exit=1") && add.contains("disk holding it is full"), "{add}");
    let freed = section(&out, "freed");
    assert!(freed.contains("exit=0") && freed.contains("kept through a full disk"), "{freed}");
    assert!(freed.contains("after the space") && !freed.contains("another"), "{freed}");
}

/// Tour 33 F1: under `docdex watch`, a batch that failed for a full disk was dropped. Once
/// space was freed nothing retried it: the index stayed behind the disk, status said `ready`,
/// and `docdex index` said the watcher kept the index current. The watcher now owes a full run
/// and retries it until one succeeds.
#[test]
fn a_watcher_retries_a_batch_the_full_disk_failed() {
    let env = Env::new();
    let repo = env.repo("r");
    for i in 0..20 {
        write(&repo, &format!("s{i}.py"), format!("def fn_{i}():\n    return {i}\n"));
    }
    let script = format!(
        r#"R={repo}
"$DOCDEX" index --repo "$R" --quiet 2>&1 || exit 1
"$DOCDEX" watch --repo "$R" >/dev/null 2>&1 &
W=$!
sleep 2
dd if=/dev/zero of="$HOME_DIR/filler" bs=1k count=100000 2>/dev/null
i=0; while [ $i -lt 120 ]; do
  words=""; j=0; while [ $j -lt 200 ]; do words="$words word${{i}}x$j"; j=$((j+1)); done
  echo "osprey$i $words" > "$R/g$i.md"; i=$((i+1))
done
sleep 4
rm -f "$HOME_DIR/filler"
found=no; n=0
while [ $n -lt 80 ]; do
  if "$DOCDEX" search --repo "$R" osprey77 --json 2>/dev/null | grep -q '"g77.md"'; then found=yes; break; fi
  sleep 0.5; n=$((n+1))
done
echo "=== found"; echo "$found"
echo "=== status"; "$DOCDEX" status --repo "$R" --json 2>&1
kill $W; wait $W 2>/dev/null
echo "=== end"
"#,
        repo = repo.display()
    );
    let Some(out) = with_small_disk(&env, 3 * 1024, &script) else { return };
    assert_eq!(section(&out, "found").trim(), "yes", "the failed batch made it in once there was space: {out}");
    let status = section(&out, "status");
    assert!(status.contains("\"documents\": 140") || status.contains("\"documents\":140"), "{status}");
}
