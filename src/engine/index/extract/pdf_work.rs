//! The work extraction would do, bounded before it starts. pdf-extract decodes and parses a
//! page's content streams for every page that names them, and a form XObject's stream every
//! time a content stream draws it (`/X Do`): each stream may be within its bound while 200
//! pages sharing one 15 MiB content stream took 5.6 s (5,000 would take minutes), and a page
//! drawing one large form a million times, or forms drawing forms, far longer. The work of a
//! page is its content plus, for each `Do`, the work of what it draws (a form's own content and
//! draws); the pages' sum is bounded. Each stream is decoded here once, whatever its draws.

use super::Refusal;
use pdf_extract::{Dictionary, Document, Object, ObjectId};
use std::collections::{BTreeMap, HashMap};

/// The most content all pages together may make extraction decode and parse.
const MAX_WORK_BYTES: u64 = 256 * 1024 * 1024;

/// How deeply forms may draw one another (real documents nest a few).
const MAX_FORM_DEPTH: usize = 32;

/// Refuses a document whose first `max_pages` pages would make extraction decode and parse
/// more than [`MAX_WORK_BYTES`], or whose forms draw themselves (directly or round a loop:
/// pdf-extract recursed until the stack overflowed and aborted docdex) or nest deeper than
/// [`MAX_FORM_DEPTH`]. Draws are followed as pdf-extract follows them: the names a content
/// stream draws, looked up in its form's resources or, without them, its caller's. `sizes`
/// holds each stream's decoded size.
pub(super) fn check_work(
    doc: &Document,
    pages: &BTreeMap<u32, ObjectId>,
    sizes: &HashMap<ObjectId, u64>,
    max_pages: usize,
) -> Result<(), Refusal> {
    let mut walk = Walk { doc, sizes, memo: Memo::default(), path: Vec::new() };
    let mut total = 0u64;
    for page in pages.values().take(max_pages) {
        let resources = page_resources(doc, *page);
        for content in doc.get_page_contents(*page) {
            total = total.saturating_add(walk.work(content, resources)?);
        }
        if total > MAX_WORK_BYTES {
            return Err(Refusal::TooLarge(format!(
                "its pages would have extraction decode over {} MiB (the same streams drawn again and again)",
                MAX_WORK_BYTES / (1024 * 1024)
            )));
        }
    }
    Ok(())
}

/// A page's resources as pdf-extract finds them: its own, else the nearest inherited.
fn page_resources(doc: &Document, page: ObjectId) -> Option<&Dictionary> {
    let (inline, inherited) = doc.get_page_resources(page).ok()?;
    inline.or_else(|| inherited.first().and_then(|id| doc.get_dictionary(*id).ok()))
}

/// What is known of each stream: the names it draws (decoded once), and its work with given
/// resources (keyed by the resources' address).
#[derive(Default)]
struct Memo {
    draws: HashMap<ObjectId, HashMap<Vec<u8>, u64>>,
    work: HashMap<Key, u64>,
}

type Key = (ObjectId, usize);

struct Walk<'a> {
    doc: &'a Document,
    sizes: &'a HashMap<ObjectId, u64>,
    memo: Memo,
    /// The streams being drawn, outermost first (a page's content, then forms).
    path: Vec<Key>,
}

impl<'a> Walk<'a> {
    /// The work of decoding stream `id` and drawing what it names with `Do`, once per stream
    /// and resources.
    fn work(&mut self, id: ObjectId, resources: Option<&'a Dictionary>) -> Result<u64, Refusal> {
        let key = (id, resources.map_or(0, |r| r as *const Dictionary as usize));
        if let Some(w) = self.memo.work.get(&key) {
            return Ok(*w);
        }
        if self.path.contains(&key) {
            return Err(Refusal::Corrupt("a form XObject draws itself".into()));
        }
        if self.path.len() > MAX_FORM_DEPTH {
            return Err(Refusal::Corrupt(format!("form XObjects nest deeper than {MAX_FORM_DEPTH} levels")));
        }
        self.path.push(key);
        let w = self.draw_work(id, resources);
        self.path.pop();
        let w = w?;
        self.memo.work.insert(key, w);
        Ok(w)
    }

    fn draw_work(&mut self, id: ObjectId, resources: Option<&'a Dictionary>) -> Result<u64, Refusal> {
        let doc = self.doc;
        let own = self.sizes.get(&id).copied().unwrap_or(0);
        // Taken out while its targets are worked out, put back after.
        let names = match self.memo.draws.remove(&id) {
            Some(names) => names,
            None => match doc.get_object(id).and_then(Object::as_stream) {
                Ok(s) => draws(&decoded(s)),
                Err(_) => return Ok(own),
            },
        };
        let xobjects = resources
            .and_then(|r| r.get(b"XObject").ok())
            .and_then(|o| doc.dereference(o).ok())
            .and_then(|(_, o)| o.as_dict().ok());
        let mut work = Ok(own);
        for (name, count) in &names {
            let Some(target) = xobjects.and_then(|x| x.get(name).ok()).and_then(|o| o.as_reference().ok()) else {
                continue;
            };
            let Ok(stream) = doc.get_object(target).and_then(Object::as_stream) else { continue };
            let own_resources = stream.dict.get(b"Resources").ok().and_then(|o| doc.dereference(o).ok());
            let target_resources = own_resources.and_then(|(_, o)| o.as_dict().ok()).or(resources);
            work = match (work, self.work(target, target_resources)) {
                (Ok(w), Ok(each)) => Ok(w.saturating_add(each.saturating_mul(*count))),
                (Err(e), _) | (_, Err(e)) => Err(e),
            };
            if work.is_err() {
                break;
            }
        }
        self.memo.draws.insert(id, names);
        work
    }
}

/// A stream's decoded bytes, as pdf-extract reads them (the stored bytes when lopdf cannot
/// decode them). Sizes were bounded before.
fn decoded(stream: &pdf_extract::Stream) -> Vec<u8> {
    stream.decompressed_content().unwrap_or_else(|_| stream.content.clone())
}

/// The names a content stream draws with `Do`, with how often (a name's `#xx` escapes decoded,
/// as the content parser does). A `Do` inside a string or inline image counts too: at worst an
/// overestimate, of names that rarely exist.
fn draws(content: &[u8]) -> HashMap<Vec<u8>, u64> {
    let mut out: HashMap<Vec<u8>, u64> = HashMap::new();
    let delimiter = |c: u8| c.is_ascii_whitespace() || b"/[]<>()%{}".contains(&c);
    for at in memchr::memmem::find_iter(content, b"Do") {
        if content.get(at + 2).is_some_and(|c| !delimiter(*c)) || at == 0 || !delimiter(content[at - 1]) {
            continue;
        }
        let mut end = at;
        while end > 0 && content[end - 1].is_ascii_whitespace() {
            end -= 1;
        }
        let mut start = end;
        while start > 0 && !delimiter(content[start - 1]) {
            start -= 1;
        }
        if start == 0 || content[start - 1] != b'/' {
            continue;
        }
        *out.entry(unescape(&content[start..end])).or_default() += 1;
    }
    out
}

fn unescape(name: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len());
    let mut i = 0;
    while i < name.len() {
        let hex = (name[i] == b'#').then(|| name.get(i + 1..i + 3)).flatten();
        match hex.and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()) {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(name[i]);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_counted_by_name() {
        let d = draws(b"q /X1 Do Q /X1  Do\n/X#32 Do (Do) BT /F1 12 Tf ET /Im1 Do/X1 Do");
        assert_eq!(d.get(b"X1".as_slice()), Some(&3));
        assert_eq!(d.get(b"X2".as_slice()), Some(&1));
        assert_eq!(d.get(b"Im1".as_slice()), Some(&1));
        assert_eq!(d.len(), 3);
    }
}
