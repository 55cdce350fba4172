//! The page tree as a lenient reader walks it: each node entered once, so a `/Kids` list that
//! names the node holding it (or a node above it) is a loop cut where it closes, not a walk
//! that never reaches the pages after it. lopdf's page walk follows such a loop until its step
//! limit (the file's object count) and returned no page at all: a file whose real page sat
//! beside the loop was `corrupt PDF (no pages)` (tour25 F5).

use pdf_extract::{Dictionary, Document, Object, ObjectId};
use std::collections::HashSet;

/// How deep page-tree nodes may nest (lopdf's own limit; a balanced tree of a million pages
/// is some ten levels deep).
const MAX_TREE_DEPTH: usize = 256;

/// Where a page tree loops: node `node`'s `/Kids` lists `kid`, which is `node` itself or a node
/// above it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct TreeLoop {
    pub node: ObjectId,
    pub kid: ObjectId,
}

impl TreeLoop {
    /// The loop in a user's words.
    pub fn words(&self) -> String {
        let (n, k) = (self.node.0, self.kid.0);
        if self.node == self.kid {
            format!("its page tree loops: the page list (/Kids) of object {n} lists object {n} itself")
        } else {
            format!("its page tree loops: the page list (/Kids) of object {n} lists object {k}, which holds it")
        }
    }
}

/// The pages the catalog's page tree reaches, in order (as lopdf lists them when there is no
/// loop: a page listed twice is listed twice), and its first loop. Each node is entered at
/// most once, so the walk ends whatever the tree holds.
pub(super) fn reachable_pages(doc: &Document) -> (Vec<ObjectId>, Option<TreeLoop>) {
    let mut pages = Vec::new();
    let mut first_loop = None;
    let root = doc.catalog().ok().and_then(|c| c.get(b"Pages").ok()).and_then(|o| o.as_reference().ok());
    let Some(root) = root else { return (pages, None) };
    let mut entered = HashSet::from([root]);
    // The nodes being walked, outermost first, with their kids and the next kid's index.
    let mut path: Vec<(ObjectId, Vec<ObjectId>, usize)> = vec![(root, kids(doc, root), 0)];
    while let Some((node, list, next)) = path.last_mut() {
        let Some(&kid) = list.get(*next) else {
            path.pop();
            continue;
        };
        *next += 1;
        let node = *node;
        match doc.get_dictionary(kid).and_then(Dictionary::get_type) {
            Ok(b"Page") => pages.push(kid),
            Ok(b"Pages") if path.iter().any(|(above, _, _)| *above == kid) => {
                tracing::debug!(?node, ?kid, "PDF page tree: /Kids loop cut");
                first_loop = first_loop.or(Some(TreeLoop { node, kid }));
            }
            // A node listed under two parents is walked once (lopdf bounds it the same way).
            Ok(b"Pages") if path.len() < MAX_TREE_DEPTH && entered.insert(kid) => {
                path.push((kid, kids(doc, kid), 0));
            }
            _ => {}
        }
    }
    (pages, first_loop)
}

/// A node's `/Kids`, the references in it (a direct array or one by reference).
fn kids(doc: &Document, node: ObjectId) -> Vec<ObjectId> {
    let list = doc.get_dictionary(node).and_then(|d| d.get_deref(b"Kids", doc)).and_then(Object::as_array);
    list.map(|l| l.iter().filter_map(|o| o.as_reference().ok()).collect()).unwrap_or_default()
}

/// Points the catalog at a flat page tree of `pages` (the ones to read), so pdf-extract, which
/// walks the tree again for every page it reads, meets neither a loop nor more pages than are
/// read. Pages keep their parents, so what they inherit is unchanged.
pub(super) fn flatten(doc: &mut Document, pages: impl Iterator<Item = ObjectId>) {
    let kids: Vec<Object> = pages.map(Object::Reference).collect();
    let mut tree = Dictionary::new();
    tree.set("Type", Object::Name(b"Pages".to_vec()));
    tree.set("Count", Object::Integer(kids.len() as i64));
    tree.set("Kids", Object::Array(kids));
    let id = doc.add_object(tree);
    if let Ok(catalog) = doc.catalog_mut() {
        catalog.set("Pages", Object::Reference(id));
    }
}
