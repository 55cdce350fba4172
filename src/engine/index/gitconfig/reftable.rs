//! The branch `HEAD` names in a repository whose refs are kept in a reftable
//! (`git init --ref-format=reftable`): there the `HEAD` file only names the placeholder
//! `refs/heads/.invalid`, and the real `HEAD` is a record of the table stack
//! `reftable/tables.list` names (newest table last). Read natively and bounded (no git runs
//! here): the stack's list, and of each table only its first block, newest first; the first
//! table that holds a `HEAD` record decides (a symbolic ref names the branch; a deletion or an
//! object id, a detached `HEAD`, is no branch). Anything unexpected (an unknown version, a
//! damaged block, `HEAD` not decided within a table's first block) is no branch, as git
//! would not guess either.

use std::io::Read;
use std::path::{Path, PathBuf};

/// Most tables of a stack read (git compacts its stack to a few; a longer one is damaged).
const MAX_TABLES: usize = 256;
/// Largest `tables.list` read.
const MAX_LIST_BYTES: u64 = 64 * 1024;
/// Most bytes read of one table: its header and first block (git writes 4 KiB blocks).
const MAX_FIRST_BLOCK: u64 = 1024 * 1024;
/// `REFT`, the magic every table starts with.
const MAGIC: &[u8; 4] = b"REFT";

/// The stack's list, a watcher's cue: every ref update (a checkout too) rewrites it.
pub fn tables_list(gitdir: &Path) -> PathBuf {
    gitdir.join("reftable").join("tables.list")
}

/// The symbolic target of `HEAD` (`refs/heads/main`) in `gitdir`'s reftable stack; `None`
/// when there is none, `HEAD` is detached or deleted, or the stack cannot be read.
pub fn head_target(gitdir: &Path) -> Option<String> {
    let mut list = String::new();
    std::fs::File::open(tables_list(gitdir)).ok()?.take(MAX_LIST_BYTES).read_to_string(&mut list).ok()?;
    let names: Vec<&str> = list.lines().map(str::trim).filter(|n| !n.is_empty()).collect();
    for name in names.iter().rev().take(MAX_TABLES) {
        // A table is a plain file in `reftable/`: a name with a separator or `..` is not one.
        if name.contains(['/', '\\']) || name.starts_with('.') {
            return None;
        }
        match head_in_table(&gitdir.join("reftable").join(name))? {
            Found::Head(target) => return target,
            Found::Absent => continue,
        }
    }
    None
}

/// What one table says about `HEAD`.
enum Found {
    /// A `HEAD` record: its symbolic target, or `None` (deleted, or an object id).
    Head(Option<String>),
    /// No `HEAD` record: an older table decides.
    Absent,
}

/// `HEAD` in one table's first block; `None` when the table cannot be read or does not say.
fn head_in_table(path: &Path) -> Option<Found> {
    let mut bytes = Vec::new();
    std::fs::File::open(path).ok()?.take(MAX_FIRST_BLOCK).read_to_end(&mut bytes).ok()?;
    if bytes.get(..4)? != MAGIC {
        return None;
    }
    // Version 1: a 24-byte header and SHA-1 ids; version 2 adds the 4-byte hash id.
    let (header, hash_len) = match bytes.get(4)? {
        1 => (24, 20),
        2 => (28, if bytes.get(24..28)? == b"s256" { 32 } else { 20 }),
        _ => return None,
    };
    let block = bytes.get(header..)?;
    if block.first()? != &b'r' {
        // The first block holds no refs (a log-only table): no `HEAD` here.
        return Some(Found::Absent);
    }
    // The first block's length counts the file header too.
    let block_len = u24(block.get(1..4)?);
    let end = bytes.get(..block_len)?;
    let restarts = u16::from_be_bytes([*end.get(block_len.checked_sub(2)?)?, end[block_len - 1]]) as usize;
    let records_end = block_len.checked_sub(2 + 3 * restarts)?;
    scan_records(end.get(header + 4..records_end)?, hash_len)
}

/// Walks a ref block's records (sorted by name, each sharing a prefix with the one before)
/// until `HEAD` or a name after it.
fn scan_records(mut rec: &[u8], hash_len: usize) -> Option<Found> {
    let mut name: Vec<u8> = Vec::new();
    while !rec.is_empty() {
        let prefix = varint(&mut rec)? as usize;
        let suffix_and_type = varint(&mut rec)?;
        let (suffix, kind) = ((suffix_and_type >> 3) as usize, suffix_and_type & 7);
        name.truncate(prefix);
        if name.len() != prefix {
            return None;
        }
        name.extend_from_slice(take(&mut rec, suffix)?);
        varint(&mut rec)?; // the update index delta
        let target = match kind {
            0 => None,
            // One object id, or a peeled tag's two: a detached `HEAD`.
            1 | 2 => {
                take(&mut rec, kind as usize * hash_len)?;
                None
            }
            3 => {
                let len = varint(&mut rec)? as usize;
                Some(String::from_utf8(take(&mut rec, len)?.to_vec()).ok()?)
            }
            _ => return None,
        };
        match name.as_slice().cmp(b"HEAD".as_slice()) {
            std::cmp::Ordering::Equal => return Some(Found::Head(target)),
            std::cmp::Ordering::Greater => return Some(Found::Absent),
            std::cmp::Ordering::Less => {}
        }
    }
    // The block ended before any name after `HEAD`: a later block could hold it; not guessed.
    None
}

/// The next `n` bytes of `rec`, consumed.
fn take<'a>(rec: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    let (head, rest) = (rec.get(..n)?, rec.get(n..)?);
    *rec = rest;
    Some(head)
}

/// reftable's varint (git's offset encoding: big-endian 7-bit groups, each continuation adding one).
fn varint(rec: &mut &[u8]) -> Option<u64> {
    let mut byte = *take(rec, 1)?.first()?;
    let mut value = u64::from(byte & 0x7f);
    while byte & 0x80 != 0 {
        byte = *take(rec, 1)?.first()?;
        value = value.checked_add(1)?.checked_mul(128)? | u64::from(byte & 0x7f);
    }
    Some(value)
}

fn u24(b: &[u8]) -> usize {
    (usize::from(b[0]) << 16) | (usize::from(b[1]) << 8) | usize::from(b[2])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-table stack whose first block holds `records` (already encoded).
    fn stack(dir: &Path, records: &[u8]) {
        std::fs::create_dir_all(dir.join("reftable")).unwrap();
        let mut t = b"REFT\x01\x00\x10\x00".to_vec();
        t.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1]);
        let len = 24 + 4 + records.len() + 3 + 2;
        t.push(b'r');
        t.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8]);
        t.extend_from_slice(records);
        t.extend_from_slice(&[0, 0, 28, 0, 1]);
        std::fs::write(dir.join("reftable/t.ref"), t).unwrap();
        std::fs::write(dir.join("reftable/tables.list"), "t.ref\n").unwrap();
    }

    #[test]
    fn head_is_read_from_the_first_block_and_anything_odd_is_no_branch() {
        let dir = tempfile::tempdir().unwrap();
        let mut sym = vec![0, (4 << 3) | 3];
        sym.extend_from_slice(b"HEAD\x00\x0frefs/heads/main");
        stack(dir.path(), &sym);
        assert_eq!(head_target(dir.path()).as_deref(), Some("refs/heads/main"));
        // A detached HEAD (an object id) is no branch.
        let mut detached = vec![0, (4 << 3) | 1];
        detached.extend_from_slice(b"HEAD\x00");
        detached.extend_from_slice(&[7; 20]);
        stack(dir.path(), &detached);
        assert_eq!(head_target(dir.path()), None);
        // Truncated records, a table name that leaves the directory: no branch, no panic.
        stack(dir.path(), &sym[..sym.len() - 3]);
        assert_eq!(head_target(dir.path()), None);
        std::fs::write(dir.path().join("reftable/tables.list"), "../t.ref\n").unwrap();
        assert_eq!(head_target(dir.path()), None);
        assert_eq!(varint(&mut [0x80, 0x00].as_slice()), Some(128), "git's offset varint");
    }
}
