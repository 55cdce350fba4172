//! Files read out of a package archive (an npm tarball, a `.crate`, an sdist: a gzip'd tar;
//! a wheel's METADATA) in memory:
//! nothing is unpacked to disk, so no member path can lead anywhere; a member whose path is
//! absolute or climbs (`..`) is passed over all the same, and so is every link, device and
//! directory. Reading is bounded: at most `max_unpacked` bytes are inflated (a small archive
//! can inflate to gigabytes) and a member is kept only up to `max_member` bytes, as text.

use flate2::read::GzDecoder;
use std::io::Read;

/// A text file found in the archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Its path inside the archive, `/`-separated, as written there (`package/README.md`).
    pub path: String,
    /// Its text (invalid UTF-8 replaced).
    pub text: String,
}

/// What was read from one archive.
#[derive(Debug, Default)]
pub struct Members {
    /// The wanted members, in archive order.
    pub found: Vec<Member>,
    /// The archive went on past `max_unpacked` and was not read to its end.
    pub cut: bool,
}

/// Why an archive could not be read: corrupt, not gzip, not tar.
#[derive(Debug, thiserror::Error)]
#[error("not a readable package archive ({0})")]
pub struct BadArchive(String);

const BLOCK: usize = 512;

/// The regular files of the gzip'd tar `gz` whose confined path `wanted` accepts, read as text
/// (a member with a NUL byte early on is binary and skipped).
pub fn tar_gz(
    gz: &[u8],
    max_unpacked: u64,
    max_member: u64,
    wanted: impl Fn(&str) -> bool,
) -> Result<Members, BadArchive> {
    let mut r = GzDecoder::new(gz).take(max_unpacked);
    let mut out = Members::default();
    // A long name from a pax (`x`) or GNU (`L`) header, for the member after it.
    let mut long_name: Option<String> = None;
    let mut header = [0u8; BLOCK];
    loop {
        match read_block(&mut r, &mut header) {
            Ok(true) => {}
            Ok(false) => {
                out.cut = r.limit() == 0;
                return Ok(out);
            }
            Err(e) => {
                if r.limit() == 0 {
                    out.cut = true;
                    return Ok(out);
                }
                return Err(BadArchive(e.to_string()));
            }
        }
        if header.iter().all(|b| *b == 0) {
            return Ok(out);
        }
        let size = octal(&header[124..136]).ok_or_else(|| BadArchive("a header with no size".into()))?;
        let padded = size.div_ceil(BLOCK as u64) * BLOCK as u64;
        let kind = header[156];
        let name = long_name.take().unwrap_or_else(|| header_name(&header));
        let keep = matches!(kind, b'0' | 0 | b'7') && size <= max_member && confined(&name).is_some_and(|p| wanted(&p));
        let mut body = Vec::new();
        let read_body = keep || (matches!(kind, b'x' | b'L') && size <= 64 * 1024);
        if read_body {
            (&mut r).take(size).read_to_end(&mut body).map_err(|e| BadArchive(e.to_string()))?;
            skip(&mut r, padded - body.len() as u64)?;
        } else {
            skip(&mut r, padded)?;
        }
        if body.len() as u64 != size && read_body {
            out.cut = true;
            return Ok(out);
        }
        match kind {
            b'x' => long_name = pax_path(&body),
            b'L' => long_name = Some(String::from_utf8_lossy(&body).trim_end_matches('\0').to_string()),
            _ if keep && !crate::engine::fsutil::looks_binary(&body) => {
                let path = confined(&name).unwrap_or_default();
                out.found.push(Member { path, text: String::from_utf8_lossy(&body).into_owned() });
            }
            _ => {}
        }
    }
}

/// The `<name>.dist-info/METADATA` of a wheel (a zip), as (its path, text), at most `max`
/// bytes of it read however large it says it is.
pub fn wheel_metadata(zip: &[u8], max: u64) -> Result<(String, String), String> {
    let mut z = zip::ZipArchive::new(std::io::Cursor::new(zip)).map_err(|e| format!("not a readable wheel ({e})"))?;
    for i in 0..z.len() {
        let f = z.by_index(i).map_err(|e| format!("not a readable wheel ({e})"))?;
        let name = f.name().to_string();
        let Some(dir) = name.strip_suffix("/METADATA") else { continue };
        if !dir.ends_with(".dist-info") || dir.contains('/') || confined(&name).is_none() {
            continue;
        }
        let mut bytes = Vec::new();
        f.take(max).read_to_end(&mut bytes).map_err(|e| format!("{name}: {e}"))?;
        return Ok((name, String::from_utf8_lossy(&bytes).into_owned()));
    }
    Err("no .dist-info/METADATA in the wheel".into())
}

/// Reads one whole block: false at a clean end of the stream.
fn read_block(r: &mut impl Read, buf: &mut [u8; BLOCK]) -> std::io::Result<bool> {
    let mut got = 0;
    while got < BLOCK {
        match r.read(&mut buf[got..])? {
            0 if got == 0 => return Ok(false),
            0 => return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "a header cut short")),
            n => got += n,
        }
    }
    Ok(true)
}

fn skip(r: &mut impl Read, n: u64) -> Result<(), BadArchive> {
    std::io::copy(&mut r.take(n), &mut std::io::sink()).map(|_| ()).map_err(|e| BadArchive(e.to_string()))
}

/// The ustar name: `prefix/name` when the prefix field is used.
fn header_name(h: &[u8; BLOCK]) -> String {
    let field = |b: &[u8]| String::from_utf8_lossy(b.split(|c| *c == 0).next().unwrap_or(b)).into_owned();
    let name = field(&h[0..100]);
    let prefix = if &h[257..262] == b"ustar" { field(&h[345..500]) } else { String::new() };
    if prefix.is_empty() {
        name
    } else {
        format!("{prefix}/{name}")
    }
}

/// An octal size field (NUL- or space-terminated); the base-256 form of huge sizes counts as
/// too large to read.
fn octal(field: &[u8]) -> Option<u64> {
    if field.first().is_some_and(|b| b & 0x80 != 0) {
        return Some(u64::MAX / 2);
    }
    let s = std::str::from_utf8(field).ok()?.trim_matches(|c: char| c == '\0' || c == ' ');
    if s.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(s, 8).ok()
}

/// The `path` record of a pax extended header (`<len> path=<value>\n`).
fn pax_path(body: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(body);
    text.lines().find_map(|l| l.split_once(' ').and_then(|(_, kv)| kv.strip_prefix("path=")).map(str::to_string))
}

/// The member path with `./` parts dropped, or `None` when it is absolute or climbs.
fn confined(path: &str) -> Option<String> {
    if path.starts_with('/') || path.starts_with('\\') || path.contains('\\') {
        return None;
    }
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    (!parts.is_empty() && !parts.contains(&"..")).then(|| parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A gzip'd tar of `(path, kind, bytes)` members, written by hand as ustar.
    fn tgz(members: &[(&str, u8, &[u8])]) -> Vec<u8> {
        let mut tar = Vec::new();
        for (path, kind, body) in members {
            let mut h = [0u8; BLOCK];
            h[..path.len()].copy_from_slice(path.as_bytes());
            h[100..107].copy_from_slice(b"0000644");
            h[124..135].copy_from_slice(format!("{:011o}", body.len()).as_bytes());
            h[136..147].copy_from_slice(b"00000000000");
            h[156] = *kind;
            h[257..263].copy_from_slice(b"ustar\0");
            h[148..156].copy_from_slice(b"        ");
            let sum: u32 = h.iter().map(|b| *b as u32).sum();
            h[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
            tar.extend_from_slice(&h);
            tar.extend_from_slice(body);
            tar.resize(tar.len().div_ceil(BLOCK) * BLOCK, 0);
        }
        tar.extend_from_slice(&[0u8; 2 * BLOCK]);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&tar).unwrap();
        gz.finish().unwrap()
    }

    fn readme(p: &str) -> bool {
        p.rsplit('/').next().is_some_and(|n| n.to_ascii_lowercase().starts_with("readme"))
    }

    #[test]
    fn wanted_text_members_are_read_and_climbing_links_and_binary_ones_are_not() {
        let gz = tgz(&[
            ("package/package.json", b'0', b"{}"),
            ("package/../../README.md", b'0', b"climbs"),
            ("/README", b'0', b"absolute"),
            ("package/README.lnk", b'2', b""),
            ("package/README.bin", b'0', b"\0\0binary"),
            ("./package/README.md", b'0', b"# pad\n\nPads strings on the left."),
        ]);
        let m = tar_gz(&gz, 1 << 20, 1 << 20, readme).unwrap();
        assert_eq!(
            m.found,
            [Member { path: "package/README.md".into(), text: "# pad\n\nPads strings on the left.".into() }]
        );
        assert!(!m.cut);
    }

    #[test]
    fn inflation_and_member_size_are_bounded_and_garbage_is_an_error() {
        let big = vec![b'a'; 300_000];
        let gz = tgz(&[("package/big.js", b'0', &big), ("package/README.md", b'0', b"late")]);
        let m = tar_gz(&gz, 100_000, 1 << 20, readme).unwrap();
        assert!(m.found.is_empty() && m.cut, "{m:?}");
        let m = tar_gz(&gz, 1 << 20, 3, readme).unwrap();
        assert!(m.found.is_empty() && !m.cut, "a member over max_member is skipped: {m:?}");
        assert!(tar_gz(b"not gzip at all", 1 << 20, 1 << 20, readme).is_err());
    }
}
