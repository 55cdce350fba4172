//! Small filesystem helpers every state file goes through: atomic JSON writes
//! (temp file + fsync + rename, so a crash never leaves half a file) and
//! advisory locks (released by the OS when a process dies, even by kill -9).

use crate::error::{Error, IoContext, Result};
use serde::{de::DeserializeOwned, Serialize};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `value` as pretty JSON to `path` atomically.
pub fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| Error::CorruptState { path: path.into(), message: e.to_string() })?;
    write_atomic(path, &bytes)
}

/// Writes bytes to `path` atomically (same-directory temp file, fsync, rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    replace(path, bytes, true)
}

/// Writes `value` as pretty JSON to `path` by rename, without fsync: readers never see half a
/// file, but a power cut may keep the previous version. For advisory state that is rewritten
/// often (index progress, last-seen times), where an fsync per write cost 0.3 to 14 ms each on
/// a busy disk and made an unchanged re-index wait on the disk several times.
pub fn replace_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| Error::CorruptState { path: path.into(), message: e.to_string() })?;
    replace(path, &bytes, false)
}

/// Writes bytes to `path` by rename, without fsync, owner-only: for caches that can be rebuilt
/// (see [`replace_json`]).
pub fn replace_bytes(path: &Path, bytes: &[u8]) -> Result<()> {
    replace(path, bytes, false)
}

fn replace(path: &Path, bytes: &[u8], durable: bool) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.{}.tmp", std::process::id(), unique()));
    {
        let mut f = create_private(&tmp).at("creating", &tmp)?;
        f.write_all(bytes).at("writing", &tmp)?;
        if durable {
            f.sync_data().at("syncing", &tmp)?;
        }
    }
    std::fs::rename(&tmp, path).at("renaming into", path)
}

/// Rewrites an existing small file in place (no new file, no rename): the fallback for advisory
/// state when the disk is full, since a file under one block (4 KiB) can be rewritten up to
/// that size without allocating. Readers may see a torn write; only advisory files use it.
pub fn overwrite_in_place(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = OpenOptions::new().write(true).open(path).at("opening", path)?;
    f.write_all(bytes).at("writing", path)?;
    f.set_len(bytes.len() as u64).at("truncating", path)
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// Creates (truncating) a file only its owner may read or write (0600 on Unix). Every file
/// docdex writes goes through here or [`ensure_private_file`]: configuration (which can hold
/// the token), memories, chat logs, locks.
pub fn create_private(path: &Path) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    o.write(true).create(true).truncate(true);
    private_mode(&mut o);
    o.open(path)
}

/// Creates an empty owner-only file at `path` unless something is there already (SQLite then
/// opens it, and gives its WAL and shared-memory files the same mode).
pub fn ensure_private_file(path: &Path) -> Result<()> {
    let mut o = OpenOptions::new();
    o.write(true).create_new(true);
    private_mode(&mut o);
    match o.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(Error::io("creating", path, e)),
    }
}

/// Creates a directory and its missing parents, owner-only (0700 on Unix) for the ones it makes.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
}

fn private_mode(o: &mut OpenOptions) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    #[cfg(not(unix))]
    let _ = o;
}

/// Reads JSON from `path`; `Ok(None)` when the file does not exist.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<Option<T>> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::CorruptState { path: path.into(), message: e.to_string() }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io("reading", path, e)),
    }
}

/// An exclusive advisory lock on a file; released on drop or process death.
#[derive(Debug)]
pub struct FileLock {
    file: File,
    path: PathBuf,
}

impl FileLock {
    /// Blocks until the lock is held.
    pub fn acquire(path: &Path) -> Result<FileLock> {
        let file = open_lock_file(path)?;
        file.lock().at("locking", path)?;
        Ok(Self::stamp(file, path))
    }

    /// Takes the lock if free; `Ok(None)` when another process holds it.
    pub fn try_acquire(path: &Path) -> Result<Option<FileLock>> {
        let file = open_lock_file(path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(Self::stamp(file, path))),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(Error::io("locking", path, e)),
        }
    }

    fn stamp(file: File, path: &Path) -> FileLock {
        // Record the holder's pid so a waiting process can say who it waits for. One write of
        // a fixed width over the old pid: truncating first let a reader in between read
        // nothing, and name "pid 0".
        let pid = format!("{:<10}\n", std::process::id());
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileExt;
            let _ = file.write_all_at(pid.as_bytes(), 0);
        }
        #[cfg(not(unix))]
        {
            let _ = file.set_len(0);
            let _ = write!(&file, "{pid}");
        }
        FileLock { file, path: path.to_path_buf() }
    }

    /// The pid recorded by the current holder of the lock at `path` (0 if unknown).
    pub fn holder_pid(path: &Path) -> u32 {
        std::fs::read_to_string(path).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0)
    }

    /// The lock file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

fn open_lock_file(path: &Path) -> Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).at("creating directory", dir)?;
    }
    let mut o = OpenOptions::new();
    o.create(true).truncate(false).read(true).write(true);
    private_mode(&mut o);
    o.open(path).at("opening lock", path)
}

/// A file's modification time in nanoseconds since the epoch (0 when the platform has none).
pub fn mtime_ns(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// A file's status-change time in nanoseconds (0 where the platform has none). Unlike the
/// mtime, no one can set it back: a `chmod`, or content rewritten with its mtime restored
/// (`cp -p`, `rsync -t`, an archive extracted over it), moves it.
pub fn ctime_ns(meta: &std::fs::Metadata) -> i64 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        meta.ctime().saturating_mul(1_000_000_000).saturating_add(meta.ctime_nsec())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        0
    }
}

/// A directory's identity (device, inode): a directory made again at the same path is another
/// one, which an open watch or a run that began on the old one must not take for it.
pub fn dir_identity(dir: &Path) -> Option<(u64, u64)> {
    let meta = std::fs::metadata(dir).ok().filter(|m| m.is_dir())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        Some((0, 0))
    }
}

/// True if this process may create files in `dir` (`access(W_OK)`: permission bits and
/// read-only mounts). Elsewhere than Unix: false, so callers fall back to a probe file.
pub fn dir_writable(dir: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else { return false };
        // SAFETY: `c` is a valid NUL-terminated path that outlives the call; access only reads it.
        unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        false
    }
}

/// The first of `paths` that exists and that this process may not write (`access(W_OK)`:
/// permission bits and read-only mounts), with the OS's reason. Elsewhere than Unix: none.
pub fn first_unwritable(paths: &[PathBuf]) -> Option<(PathBuf, std::io::Error)> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        for p in paths {
            let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else { continue };
            // SAFETY: `c` is a valid NUL-terminated path that outlives the call; access only reads it.
            if unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::NotFound {
                    return Some((p.clone(), e));
                }
            }
        }
        None
    }
    #[cfg(not(unix))]
    {
        let _ = paths;
        None
    }
}

/// Opens the repository file `rel` (repo-relative) for reading the way docdex reads every
/// repository file, whatever happened to it since it was indexed: no symlink is followed at
/// any component, nothing outside `root` is reached, a FIFO or device never blocks the read
/// (`O_NONBLOCK`), and only a regular file is returned. On Linux one `openat2` with
/// `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` does it; elsewhere (or on kernels before 5.6) the
/// last component is opened with `O_NOFOLLOW` and its directory must canonicalize inside `root`.
/// A symlink anywhere is `ELOOP` (or `EXDEV` for a path leading out).
pub fn open_repo_file(root: &Path, rel: &str) -> std::io::Result<File> {
    let file = open_beneath(root, rel)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"));
    }
    Ok(file)
}

#[cfg(target_os = "linux")]
fn open_beneath(root: &Path, rel: &str) -> std::io::Result<File> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::io::{AsRawFd, FromRawFd};
    use std::sync::atomic::{AtomicBool, Ordering};
    static NO_OPENAT2: AtomicBool = AtomicBool::new(false);
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        let dir = open_root_dir(root)?;
        let path = std::ffi::CString::new(Path::new(rel).as_os_str().as_bytes())?;
        // SAFETY: open_how is plain data; zeroed is a valid value (no flags, no resolve bits).
        let mut how: libc::open_how = unsafe { std::mem::zeroed() };
        how.flags = (libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY) as u64;
        how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
        // SAFETY: the dirfd is open for the call, `path` is NUL-terminated, `how` outlives the call
        // and its size is passed; the returned fd (if any) is owned by the File made from it.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dir.as_raw_fd(),
                path.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        if fd >= 0 {
            // SAFETY: a new descriptor this process owns and nothing else refers to.
            return Ok(unsafe { File::from_raw_fd(fd as i32) });
        }
        let err = std::io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::ENOSYS) | Some(libc::EPERM) => NO_OPENAT2.store(true, Ordering::Relaxed),
            _ => return Err(err),
        }
    }
    open_no_follow_inside(root, rel)
}

/// The repository root itself, refused (`ELOOP`) when it is now a symbolic link: a root is
/// registered by its real path, so a link there means the folder was swapped for one (moved
/// away, a link left in its place), and a read through it reached files outside the
/// repository (tour36 F1).
fn open_root_dir(root: &Path) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NOFOLLOW | libc::O_DIRECTORY | libc::O_CLOEXEC);
    }
    o.open(root)
}

#[cfg(not(target_os = "linux"))]
fn open_beneath(root: &Path, rel: &str) -> std::io::Result<File> {
    open_no_follow_inside(root, rel)
}

fn open_no_follow_inside(root: &Path, rel: &str) -> std::io::Result<File> {
    drop(open_root_dir(root)?);
    let root = std::fs::canonicalize(root)?;
    let path = root.join(rel);
    let parent = path.parent().unwrap_or(&root);
    if !std::fs::canonicalize(parent)?.starts_with(&root) {
        return Err(std::io::Error::from_raw_os_error(libc::EXDEV));
    }
    let mut o = OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    o.open(path)
}

/// Bytes a binary sniff reads: the indexer's rule looks this far into a file.
pub const BINARY_SNIFF: usize = 8192;

/// The text of a file read outside the repository opener, bounded: only a regular file (a FIFO
/// or device never blocks nor streams forever), at most `max_bytes`, lossy UTF-8. With `inside`,
/// a file whose real path (links resolved) leaves that directory is not read.
pub fn read_regular_text(path: &Path, inside: Option<&Path>, max_bytes: u64) -> Option<String> {
    use std::io::Read;
    if let Some(root) = inside {
        let (real, root) = (std::fs::canonicalize(path).ok()?, std::fs::canonicalize(root).ok()?);
        if !real.starts_with(&root) {
            tracing::debug!(path = %path.display(), "file outside {}: not read", root.display());
            return None;
        }
    }
    let mut open = std::fs::OpenOptions::new();
    open.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        open.custom_flags(libc::O_NONBLOCK);
    }
    let file = open.open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(max_bytes).read_to_end(&mut bytes).ok()?;
    Some(decode_text_owned(bytes))
}

/// The indexer's rule for binary content, shared by every reader that must agree with it: a
/// NUL byte in the first [`BINARY_SNIFF`] bytes.
pub fn looks_binary(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(BINARY_SNIFF)];
    if let Some(text) = utf16_text(head) {
        // UTF-16 text (what Windows tools such as PowerShell's `>` write) is half NUL bytes;
        // it is text when its start decodes cleanly to characters that are not NUL.
        return text.contains(['\0', char::REPLACEMENT_CHARACTER]);
    }
    memchr::memchr(0, head).is_some()
}

/// The text of a file's bytes as every reader of indexed text takes it (the index, snippets,
/// `get`, chat context, embeddings: one decoding, so their line numbers and hashes agree). A
/// UTF-8 byte-order mark is dropped; UTF-16 with a byte-order mark is decoded; valid UTF-8 is
/// taken as is; bytes that are not UTF-8 and hold no multi-byte UTF-8 character at all are
/// Windows-1252 (a Latin-1 text keeps `héron` findable); anything else is UTF-8 with its bad
/// bytes replaced.
pub fn decode_text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if let Some(text) = utf16_text(bytes) {
        return Cow::Owned(text);
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) if !holds_utf8_sequences(bytes) => encoding_rs::WINDOWS_1252.decode_without_bom_handling(bytes).0,
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// [`decode_text`] into an owned string, without a copy when the bytes are UTF-8 already.
pub fn decode_text_owned(bytes: Vec<u8>) -> String {
    if bytes.starts_with(b"\xEF\xBB\xBF") || bytes.starts_with(b"\xFF\xFE") || bytes.starts_with(b"\xFE\xFF") {
        return decode_text(&bytes).into_owned();
    }
    String::from_utf8(bytes).unwrap_or_else(|e| decode_text(e.as_bytes()).into_owned())
}

/// The text of bytes that start with a UTF-16 byte-order mark (either order), else `None`.
fn utf16_text(bytes: &[u8]) -> Option<String> {
    let encoding = match bytes.get(..2)? {
        [0xFF, 0xFE] => encoding_rs::UTF_16LE,
        [0xFE, 0xFF] => encoding_rs::UTF_16BE,
        _ => return None,
    };
    Some(encoding.decode_without_bom_handling(&bytes[2..]).0.into_owned())
}

/// Whether some multi-byte UTF-8 character is in `bytes`: then a bad byte is damage in a UTF-8
/// file, not a file in a single-byte encoding.
fn holds_utf8_sequences(bytes: &[u8]) -> bool {
    let mut rest = bytes;
    loop {
        match std::str::from_utf8(rest) {
            Ok(valid) => return !valid.is_ascii(),
            Err(e) => {
                let (valid, after) = rest.split_at(e.valid_up_to());
                // Safe to read as text: `valid_up_to` bytes are UTF-8.
                if std::str::from_utf8(valid).is_ok_and(|v| !v.is_ascii()) {
                    return true;
                }
                match e.error_len() {
                    Some(n) => rest = &after[n..],
                    None => return false,
                }
            }
        }
    }
}

/// The most bytes [`read_repo_file`] reads of one file when no engine set it: the largest
/// `[index] max_file_size_bytes` a configuration may hold.
const MAX_READ_CEILING: u64 = 1 << 30;
/// The most bytes [`read_repo_file`] reads of one file: the largest `[index]
/// max_file_size_bytes` of the engines this process opened ([`raise_read_ceiling`]); 0 until
/// one is opened.
static READ_CEILING: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Lets [`read_repo_file`] read files up to `bytes` (an engine's `[index]
/// max_file_size_bytes`); only ever raised, so no engine of the process reads less than its
/// own limit.
pub fn raise_read_ceiling(bytes: u64) {
    READ_CEILING.fetch_max(bytes, std::sync::atomic::Ordering::Relaxed);
}

/// [`read_repo_file`]'s bound now.
pub fn read_ceiling() -> u64 {
    match READ_CEILING.load(std::sync::atomic::Ordering::Relaxed) {
        0 => MAX_READ_CEILING,
        n => n,
    }
}

/// Reads a whole repository file through [`open_repo_file`], up to [`read_ceiling`] bytes: a
/// file over it (an indexed file replaced by a huge one, a hard link swapped in between a check
/// and the read) is an `InvalidData` error, never read whole. Chat and context packs
/// (`extract::indexed_text`), AST samples, sources and the import graph read through here.
pub fn read_repo_file(root: &Path, rel: &str) -> std::io::Result<Vec<u8>> {
    let max = read_ceiling();
    read_repo_file_capped(root, rel, max)?.ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidData, format!("the file is over the {max}-byte read limit"))
    })
}

/// A repository file through [`open_repo_file`], at most `max_bytes`: `Ok(None)` when it holds
/// more (a file growing while read stops at the bound too), so no caller reads a huge file whole.
/// The size is that of the file opened (`fstat` on its descriptor), not of whatever the path
/// named when a caller checked it: a path swapped for a link to a 313 MB file between a check
/// and the read was read whole.
pub fn read_repo_file_capped(root: &Path, rel: &str, max_bytes: u64) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let file = open_repo_file(root, rel)?;
    let size = file.metadata()?.len();
    if size > max_bytes {
        return Ok(None);
    }
    let mut bytes = Vec::with_capacity(size as usize + 1);
    file.take(max_bytes.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= max_bytes).then_some(bytes))
}

/// Whether an error from [`open_repo_file`] means a symlink (or a path leading out of the repo).
pub fn is_symlink_refusal(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::EXDEV))
}

/// Bytes an unprivileged process can still write on the filesystem holding `dir`
/// (`statvfs`); `None` when unknown.
pub fn available_bytes(dir: &Path) -> Option<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
        let mut st = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
        // SAFETY: `c` is a valid NUL-terminated path; statvfs fills the struct we own.
        let rc = unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) };
        if rc != 0 {
            return None;
        }
        // SAFETY: statvfs returned 0, so it initialized the struct.
        let st = unsafe { st.assume_init() };
        #[allow(clippy::unnecessary_cast)] // c_ulong is not u64 everywhere
        Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        None
    }
}

/// True if a process with this pid is alive (Linux/Unix; conservative elsewhere).
pub fn pid_alive(pid: u32) -> bool {
    if pid == 0 {
        return false;
    }
    #[cfg(unix)]
    {
        // SAFETY: kill with signal 0 only checks for existence and permission.
        let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
        r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        true
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// `n` with its noun, singular for one ("1 file", "2 files", "3 queries", "2 matches"), so a
/// count a person reads agrees with its noun (the CLI and the engine's messages alike).
pub fn count<N: std::fmt::Display + PartialEq + From<u8>>(n: N, noun: &str) -> String {
    format!("{n} {}", noun_for(&n, noun))
}

/// `3 files`, `1 directory`, `2 files and 1 directory`: what was skipped or not indexed, an
/// unreadable directory counted as what it is (it was counted as a file).
pub fn files_and_dirs(files: usize, dirs: usize) -> String {
    match (files, dirs) {
        (files, 0) => count(files, "file"),
        (0, dirs) => count(dirs, "directory"),
        (files, dirs) => format!("{} and {}", count(files, "file"), count(dirs, "directory")),
    }
}

/// The noun alone as [`count`] writes it, for tables that align the number apart.
pub fn noun_for<N: PartialEq + From<u8>>(n: &N, noun: &str) -> String {
    if *n == N::from(1) {
        return noun.to_string();
    }
    let consonant_y = noun.strip_suffix('y').and_then(|s| s.chars().last()).is_some_and(|c| !"aeiou".contains(c));
    if consonant_y {
        format!("{}ies", &noun[..noun.len() - 1])
    } else if ["s", "x", "ch", "sh"].iter().any(|e| noun.ends_with(e)) {
        format!("{noun}es")
    } else {
        format!("{noun}s")
    }
}

/// How long ago `then_ms` was, as people say it: "just now", "42 s ago", "5 min ago",
/// "3 h ago", "2 d ago", "3 w ago", "2 y ago" (a time in the future reads "just now"). One
/// wording for the CLI and the workbench.
pub fn ago(now_ms: u64, then_ms: u64) -> String {
    let secs = now_ms.saturating_sub(then_ms) / 1000;
    match secs {
        0..=4 => "just now".to_string(),
        5..=59 => format!("{secs} s ago"),
        60..=3599 => format!("{} min ago", secs / 60),
        3600..=86_399 => format!("{} h ago", secs / 3600),
        86_400..=1_209_599 => format!("{} d ago", secs / 86_400),
        1_209_600..=31_535_999 => format!("{} w ago", secs / 604_800),
        _ => format!("{} y ago", secs / 31_536_000),
    }
}

/// A path as a user typed it, `~` and `~/x` read as the shell reads them (`$HOME`); anything
/// else, or no `$HOME`, as typed.
pub fn expand_tilde(typed: &str) -> PathBuf {
    let home = || std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    match typed.strip_prefix('~') {
        Some("") => home().unwrap_or_else(|| PathBuf::from(typed)),
        Some(rest) if rest.starts_with('/') => {
            home().map(|h| h.join(&rest[1..])).unwrap_or_else(|| PathBuf::from(typed))
        }
        _ => PathBuf::from(typed),
    }
}

#[cfg(test)]
mod ago_tests {
    use super::{ago, count};

    #[test]
    fn ago_reads_naturally() {
        assert_eq!(ago(10_000, 9_000), "just now");
        assert_eq!(ago(100_000, 58_000), "42 s ago");
        assert_eq!(ago(3_600_000, 3_300_000), "5 min ago");
        assert_eq!(ago(4 * 3_600_000, 3_600_000), "3 h ago");
        assert_eq!(ago(3 * 86_400_000, 86_400_000), "2 d ago");
        assert_eq!(ago(22 * 86_400_000, 0), "3 w ago");
        assert_eq!(ago(800 * 86_400_000, 0), "2 y ago");
        assert_eq!(ago(0, 5_000), "just now");
    }

    #[test]
    fn nouns_agree_with_their_counts() {
        assert_eq!(count(1usize, "file"), "1 file");
        assert_eq!(count(0u64, "file"), "0 files");
        assert_eq!(count(2u32, "query"), "2 queries");
        assert_eq!(count(3usize, "match"), "3 matches");
        assert_eq!(count(2usize, "day"), "2 days");
        assert_eq!(count(1u64, "memory"), "1 memory");
        assert_eq!(count(5u64, "unresolved import"), "5 unresolved imports");
    }
}

#[cfg(test)]
mod decode_tests {
    use super::{decode_text, decode_text_owned, looks_binary};

    fn utf16(text: &str, little: bool) -> Vec<u8> {
        let mut out = if little { vec![0xFF, 0xFE] } else { vec![0xFE, 0xFF] };
        for unit in text.encode_utf16() {
            out.extend(if little { unit.to_le_bytes() } else { unit.to_be_bytes() });
        }
        out
    }

    #[test]
    fn text_in_the_encodings_editors_write_decodes_to_the_same_characters() {
        assert_eq!(decode_text(b"\xEF\xBB\xBFfn main() {}\n"), "fn main() {}\n", "a UTF-8 byte-order mark is dropped");
        for little in [true, false] {
            let bytes = utf16("Get-Process | héron\r\n", little);
            assert!(!looks_binary(&bytes), "UTF-16 text is not binary");
            assert_eq!(decode_text(&bytes), "Get-Process | héron\r\n");
            assert_eq!(decode_text_owned(bytes), "Get-Process | héron\r\n");
        }
        assert_eq!(decode_text(b"le h\xe9ron gris\n"), "le héron gris\n", "Latin-1 without any UTF-8 character");
        assert_eq!(decode_text(b"caf\xc3\xa9 \xff\n"), "café \u{FFFD}\n", "a bad byte in UTF-8 text is damage");
        assert_eq!(decode_text_owned(b"plain".to_vec()), "plain");
    }

    #[test]
    fn binary_that_starts_like_utf16_is_still_binary() {
        // A byte-order mark then NUL characters or unpaired surrogates: not text.
        assert!(looks_binary(&[0xFF, 0xFE, 0, 0, 0, 0, 0x41, 0]));
        assert!(looks_binary(&[0xFF, 0xFE, 0x00, 0xD8, 0x41, 0x00]));
        assert!(looks_binary(b"ELF\0\x01"));
        assert!(!looks_binary(b"plain text"));
    }
}

#[cfg(test)]
mod tilde_tests {
    use super::expand_tilde;
    use std::path::PathBuf;

    #[test]
    fn a_typed_tilde_is_the_home_as_a_shell_reads_it() {
        assert_eq!(expand_tilde("src/main.rs"), PathBuf::from("src/main.rs"));
        assert_eq!(expand_tilde("~user/x"), PathBuf::from("~user/x"), "another user's home is not guessed");
        assert_eq!(expand_tilde("/a/~/b"), PathBuf::from("/a/~/b"));
        if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from) {
            assert_eq!(expand_tilde("~"), home);
            assert_eq!(expand_tilde("~/code/x"), home.join("code/x"));
        }
    }
}

#[cfg(test)]
mod read_ceiling_tests {
    use super::*;

    #[test]
    fn a_repository_file_over_the_read_ceiling_is_refused_not_read_whole() {
        // What an engine with the default limit sets; other tests may only have raised it.
        raise_read_ceiling(10 * 1024 * 1024);
        let max = read_ceiling();
        assert!(max < MAX_READ_CEILING, "an engine's limit bounds reads");
        let dir = tempfile::tempdir().expect("tempdir");
        let file = std::fs::File::create(dir.path().join("huge.txt")).expect("create");
        file.set_len(max + 1).expect("sparse file");
        let e = read_repo_file(dir.path(), "huge.txt").expect_err("over the ceiling");
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        std::fs::write(dir.path().join("small.txt"), "fine").expect("write");
        assert_eq!(read_repo_file(dir.path(), "small.txt").expect("read"), b"fine");
    }
}
