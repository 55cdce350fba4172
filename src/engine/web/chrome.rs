//! A page's chrome, removed before Readability reads it: navigation, site headers and footers,
//! asides, cookie banners, ads, and blocks that are mostly links. Readability strips much of it
//! itself, but only while the article it finds is long enough: on a short page (a one-function
//! API page) it relaxes its rules and let the sidebar, the ads and the cookie banner back in.
//!
//! What goes, wherever it is: `nav`, `aside`, `dialog`, a landmark role other than the main one,
//! and an element whose class or id names a cookie banner (`cookie`, `consent`, `gdpr`) or an ad
//! (`ad`, `ads`, `sponsor`, ...). Outside an `article` or `main` element: `header` and `footer`,
//! an element whose class or id names a menu, a sidebar, a banner, a footer or navigation, and a
//! block mostly of links (3 or more, over half its text, under [`RICH_TEXT`] characters besides).
//! Inside an article such a class goes only on a block of links: the article's own text (a
//! `footer-note`, a section about a `Menu` type) stays. No element holding an `article`, `main` or
//! `h1` goes by its class, nor anything in a `pre` or `code`.

use dom_query::{Document, NodeId, NodeRef};
use std::collections::HashMap;

/// Landmark roles that are not the page's content.
const CHROME_ROLES: &[&str] =
    &["navigation", "banner", "contentinfo", "complementary", "menu", "menubar", "dialog", "alertdialog", "search"];
/// Class or id words (whole, or the start of one) naming navigation or page furniture.
const CHROME_WORDS: &[&str] =
    &["nav", "navbar", "navigation", "menu", "menubar", "sidebar", "banner", "footer", "breadcrumb", "breadcrumbs"];
/// Class or id words naming an ad.
const AD_WORDS: &[&str] =
    &["ad", "ads", "advert", "adverts", "advertisement", "advertising", "sponsor", "sponsored", "adsbygoogle", "promo"];
/// Anywhere in a class or id: a cookie or consent banner.
const COOKIE_WORDS: &[&str] = &["cookie", "consent", "gdpr"];
/// Characters of text besides links that make a block text rather than chrome.
const RICH_TEXT: usize = 200;
/// Links a block needs before it can be a block of links.
const MIN_LINKS: usize = 3;

/// What an element holds, counted once bottom up.
#[derive(Debug, Default, Clone, Copy)]
struct Stats {
    /// Characters of text, whitespace left out.
    chars: usize,
    /// Of which in links.
    link_chars: usize,
    links: usize,
    /// It holds an `article` or `main` element: the content, not chrome around it.
    holds_main: bool,
    /// It holds an `h1`: a wrapper of the content (or a site header, which goes by its tag).
    holds_h1: bool,
}

impl Stats {
    fn link_dense(&self) -> bool {
        self.links >= MIN_LINKS && self.link_chars * 2 > self.chars && self.chars - self.link_chars < RICH_TEXT
    }
}

/// Removes the chrome of `doc` (see the module's doc).
pub(super) fn strip(doc: &Document) {
    let root = doc.root();
    let stats = count(&root);
    let mut doomed: Vec<NodeRef<'_>> = Vec::new();
    // (node, inside an article or main element)
    let mut stack: Vec<(NodeRef<'_>, bool)> = vec![(root, false)];
    while let Some((node, in_article)) = stack.pop() {
        let name = node.node_name().map(|n| n.to_ascii_lowercase()).unwrap_or_default();
        if matches!(name.as_str(), "head" | "pre" | "code" | "script" | "style") {
            continue;
        }
        let s = stats.get(&node.id).copied().unwrap_or_default();
        if node.is_element() && is_chrome(&node, &name, s, in_article) {
            doomed.push(node);
            continue;
        }
        let inside = in_article || matches!(name.as_str(), "article" | "main") || role(&node) == "main";
        stack.extend(node.children_it(false).filter(|c| c.is_element()).map(|c| (c, inside)));
    }
    for node in doomed {
        node.remove_from_parent();
    }
}

/// Whether the element `node` (named `name`) is chrome.
fn is_chrome(node: &NodeRef<'_>, name: &str, s: Stats, in_article: bool) -> bool {
    if matches!(name, "html" | "body" | "article" | "main") {
        return false;
    }
    if s.holds_main {
        return false;
    }
    if matches!(name, "nav" | "aside" | "dialog") || CHROME_ROLES.contains(&role(node).as_str()) {
        return true;
    }
    if matches!(name, "header" | "footer") {
        return !in_article;
    }
    if s.holds_h1 {
        return false;
    }
    let words = class_words(node);
    let attrs = words.join(" ");
    if COOKIE_WORDS.iter().any(|w| attrs.contains(w)) || words.iter().any(|w| AD_WORDS.contains(&w.as_str())) {
        return true;
    }
    let named = words.iter().any(|w| CHROME_WORDS.iter().any(|c| w.starts_with(c)));
    match (in_article, named) {
        (true, named) => named && s.link_dense(),
        (false, true) => s.chars - s.link_chars < RICH_TEXT || s.link_chars * 10 > s.chars * 3,
        (false, false) => is_block(name) && s.link_dense(),
    }
}

/// Elements a block of links comes in.
fn is_block(name: &str) -> bool {
    matches!(name, "div" | "section" | "ul" | "ol" | "p" | "table" | "dl" | "span" | "form")
}

/// The element's `role`, lowercased.
fn role(node: &NodeRef<'_>) -> String {
    node.attr("role").map(|r| r.trim().to_ascii_lowercase()).unwrap_or_default()
}

/// The words of the element's class and id, lowercased (`ad-slot sideBar` is `ad`, `slot`,
/// `sidebar`).
fn class_words(node: &NodeRef<'_>) -> Vec<String> {
    let attrs = [node.attr("class"), node.attr("id")];
    attrs
        .iter()
        .flatten()
        .flat_map(|a| a.split(|c: char| !c.is_ascii_alphanumeric()).map(str::to_ascii_lowercase).collect::<Vec<_>>())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Every element's [`Stats`], in one pass after the last child (iterative: no tree is deep
/// enough to exhaust the stack).
fn count(root: &NodeRef<'_>) -> HashMap<NodeId, Stats> {
    let mut stats: HashMap<NodeId, Stats> = HashMap::new();
    let mut stack: Vec<(NodeRef<'_>, bool)> = vec![(*root, false)];
    while let Some((node, done)) = stack.pop() {
        if !done {
            stack.push((node, true));
            stack.extend(node.children_it(false).map(|c| (c, false)));
            continue;
        }
        let s = if node.is_text() {
            Stats { chars: node.text().chars().filter(|c| !c.is_whitespace()).count(), ..Stats::default() }
        } else {
            let mut s = node.children_it(false).fold(Stats::default(), |acc, c| {
                let c = stats.get(&c.id).copied().unwrap_or_default();
                Stats {
                    chars: acc.chars + c.chars,
                    link_chars: acc.link_chars + c.link_chars,
                    links: acc.links + c.links,
                    holds_main: acc.holds_main || c.holds_main,
                    holds_h1: acc.holds_h1 || c.holds_h1,
                }
            });
            let name = node.node_name().map(|n| n.to_ascii_lowercase()).unwrap_or_default();
            if name == "a" {
                s.links += 1;
                s.link_chars = s.chars;
            }
            s.holds_main |= matches!(name.as_str(), "article" | "main");
            s.holds_h1 |= name == "h1";
            s
        };
        stats.insert(node.id, s);
    }
    stats
}
