//! Small tree helpers shared by the per-language extractors: node text, lines, an iterative
//! pre-order walk (generated code nests deep enough to overflow a recursive one), and
//! string-literal decoding.

use tree_sitter::Node;

/// Expression nesting the folders follow before giving up (guards the stack on generated code).
pub const MAX_FOLD_DEPTH: u32 = 48;

/// The file's text.
pub struct Src<'a> {
    text: &'a str,
}

impl<'a> Src<'a> {
    pub fn new(text: &'a str) -> Self {
        Src { text }
    }

    /// True if the file's text contains any of `needles` (a cheap test before walking a whole
    /// tree for forms that are rare).
    pub fn mentions(&self, needles: &[&str]) -> bool {
        mentions(self.text, needles)
    }

    /// The text a node covers ("" if the range is not on character boundaries).
    pub fn text(&self, node: Node) -> &'a str {
        self.text.get(node.byte_range()).unwrap_or("")
    }
}

/// True if `text` contains any of `needles`.
pub fn mentions(text: &str, needles: &[&str]) -> bool {
    needles.iter().any(|n| memchr::memmem::find(text.as_bytes(), n.as_bytes()).is_some())
}

/// 1-based line of a node's start.
pub fn line(node: Node) -> u32 {
    node.start_position().row as u32 + 1
}

/// Visits every node below `root` in pre-order; `visit` returns whether to descend into the node.
pub fn walk<'t>(root: Node<'t>, mut visit: impl FnMut(Node<'t>) -> bool) {
    let mut cursor = root.walk();
    loop {
        let descend = visit(cursor.node());
        if descend && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.node() == root {
                return;
            }
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return;
            }
        }
    }
}

/// Named children of a node.
pub fn named_children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

/// All children (named or not).
pub fn children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.children(&mut cursor).collect()
}

/// True if any direct child (named or anonymous) has this kind.
pub fn has_child_kind(node: Node, kind: &str) -> bool {
    children(node).iter().any(|c| c.kind() == kind)
}

/// The first descendant (pre-order, `node` included) of the given kind.
pub fn find_kind<'t>(node: Node<'t>, kind: &str) -> Option<Node<'t>> {
    let mut found = None;
    walk(node, |n| {
        if found.is_some() {
            return false;
        }
        if n.kind() == kind {
            found = Some(n);
            return false;
        }
        true
    });
    found
}

/// Strips one pair of matching quotes (`'`, `"`, `` ` ``) from a literal's text.
pub fn unquote(s: &str) -> &str {
    let s = s.trim();
    for q in ['"', '\'', '`'] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            return &s[1..s.len() - 1];
        }
    }
    s
}

/// Decodes the common backslash escapes of a string literal's body (`\n`, `\\`, `\'`, `\"`,
/// `\/`); anything else is kept as written.
pub fn unescape(s: &str) -> String {
    if !s.contains('\\') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(e @ ('\\' | '\'' | '"' | '/' | '`' | '$')) => out.push(e),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unquote_and_unescape() {
        assert_eq!(unquote("'a'"), "a");
        assert_eq!(unquote("\"a\""), "a");
        assert_eq!(unquote("`a`"), "a");
        assert_eq!(unquote("a"), "a");
        assert_eq!(unescape(r"a\/b\\c\x"), r"a/b\c\x");
    }
}
