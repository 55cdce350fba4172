//! Readable text from a page: the article as Markdown (dom_smoothie's Readability port), with
//! the page's own text as the fallback when no article stands out.

use super::shallow;
use dom_smoothie::{Config, Readability, TextMode};

/// What extraction found.
#[derive(Debug, Clone, PartialEq)]
pub struct Extracted {
    /// The page or article title.
    pub title: String,
    /// The article (or the page text) as Markdown.
    pub markdown: String,
    /// Readability found an article.
    pub readable: bool,
}

/// Elements of at most this many are parsed (a pathological page stays bounded).
const MAX_ELEMENTS: usize = 200_000;
/// Characters an article needs before Readability stops relaxing its rules (its default, 500,
/// lets sidebars back in around a short documentation section).
const CHAR_THRESHOLD: usize = 200;

/// Extracts the readable article of `html` fetched from `url`: its relative links and images
/// made absolute against `url`. A page the parser and Readability would take superlinear time
/// on (nested deeper than any real one, over 2 MiB, or a tag of over 1,000 attributes:
/// [`shallow::too_costly`]) is read flat, in one pass; a deep enough tree also overflowed the
/// stack.
pub fn extract(html: &str, url: &str) -> Extracted {
    extract_at(html, Some(url))
}

/// Extracts the readable text of an indexed HTML file, as [`extract`] does a page, but with its
/// relative links and images as written (relative to the document, or to its `<base href>`):
/// resolved against a made-up URL they read `file:///care/feeding.html`, a path that is nowhere.
pub fn extract_document(html: &str) -> Extracted {
    extract_at(html, None)
}

fn extract_at(html: &str, url: Option<&str>) -> Extracted {
    if let Some(why) = shallow::too_costly(html) {
        tracing::debug!(url, "{why}: read flat");
        let (title, text) = shallow::flat_text(html);
        return Extracted { title, markdown: tidy(&text), readable: false };
    }
    let parsed = readability(html, url).or_else(|_| readability(html, None));
    if let Ok(mut r) = parsed {
        if let Ok(article) = r.parse() {
            let markdown = tidy(&article.text_content);
            if !markdown.trim().is_empty() {
                return Extracted { title: article.title.trim().to_string(), markdown, readable: true };
            }
        }
    }
    fallback(html)
}

/// Readability over `html`, its definition lists' terms and descriptions made paragraphs
/// first (the Markdown writer knows no `<dt>` or `<dd>`, and glued a term to its description:
/// "Termdescription") and its chrome removed ([`super::chrome`]: Readability relaxes its own
/// stripping on a page whose article is short, and kept the menus, ads and cookie banner).
fn readability(html: &str, url: Option<&str>) -> Result<Readability, dom_smoothie::ReadabilityError> {
    let cfg = Config {
        text_mode: TextMode::Markdown,
        max_elements_to_parse: MAX_ELEMENTS,
        char_threshold: CHAR_THRESHOLD,
        ..Default::default()
    };
    let doc = dom_query::Document::from(html);
    doc.select("dt, dd").rename("p");
    super::chrome::strip(&doc);
    Readability::with_document(doc, url, Some(cfg))
}

/// The page's title and the text of its body without scripts, styles and navigation.
fn fallback(html: &str) -> Extracted {
    let doc = scraper::Html::parse_document(html);
    let title = scraper::Selector::parse("title")
        .ok()
        .and_then(|s| doc.select(&s).next().map(|t| t.text().collect::<String>().trim().to_string()))
        .unwrap_or_default();
    let mut text = String::new();
    if let Ok(body) = scraper::Selector::parse("body") {
        if let Some(b) = doc.select(&body).next() {
            collect_text(b, &mut text);
        }
    }
    // (Plain text and fragments are parsed into the body too: a body without text is a page
    // of scripts or nothing, and its markup is never passed on as if it were text.)
    Extracted { title, markdown: tidy(&text), readable: false }
}

/// The text under `el`, block elements on their own lines, hidden and chrome elements left
/// out. Iterative, so no tree is deep enough to exhaust the stack.
fn collect_text(el: scraper::ElementRef<'_>, out: &mut String) {
    const SKIP: &[&str] = &["script", "style", "noscript", "nav", "header", "footer", "aside", "template"];
    const BLOCK: &[&str] =
        &["p", "div", "section", "article", "li", "tr", "br", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "dt", "dd"];
    // (node, its closing edge): children are pushed in reverse so they come out in order.
    let mut stack: Vec<_> = el.children().rev().map(|c| (c, false)).collect();
    while let Some((node, closing)) = stack.pop() {
        match node.value() {
            scraper::Node::Element(e) if !SKIP.contains(&e.name()) => {
                if BLOCK.contains(&e.name()) {
                    out.push('\n');
                }
                if !closing {
                    stack.push((node, true));
                    stack.extend(node.children().rev().map(|c| (c, false)));
                }
            }
            scraper::Node::Text(t) if !closing => out.push_str(t),
            _ => {}
        }
    }
}

/// Trims trailing spaces and collapses runs of blank lines.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.trim().is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = r#"<!doctype html><html><head><title>Tokio tutorial: channels</title></head><body>
<nav><a href="/">Home</a> | <a href="/blog">Blog</a> | <a href="/login">Sign in to continue</a></nav>
<div class="sidebar ad">Buy our premium plan today! Limited offer, subscribe now.</div>
<article><h1>Channels</h1>
<p>Tokio offers several channel flavours. The mpsc channel supports sending many values from many producers to a single consumer, and it is the one to reach for when tasks report work to a coordinator.</p>
<p>A oneshot channel sends a single value from a single producer to a single consumer. It is often used to send the result of a computation back to the task that asked for it, for example a response to a request.</p>
<pre><code>let (tx, mut rx) = mpsc::channel(32);</code></pre>
<p>The broadcast channel lets many producers send to many consumers, and every consumer sees every value. Watch channels keep only the most recent value.</p>
</article>
<footer>Copyright 2024 Example Corp. All rights reserved. Cookie settings.</footer>
</body></html>"#;

    #[test]
    fn the_article_is_kept_and_the_clutter_dropped() {
        let e = extract(PAGE, "https://example.org/tokio/channels");
        assert!(e.readable);
        assert!(e.title.contains("Channels") || e.title.contains("Tokio"), "{}", e.title);
        assert!(e.markdown.contains("oneshot channel sends a single value"), "{}", e.markdown);
        assert!(e.markdown.contains("mpsc::channel(32)"), "{}", e.markdown);
        for clutter in ["premium plan", "Sign in to continue", "All rights reserved"] {
            assert!(!e.markdown.contains(clutter), "{clutter} kept: {}", e.markdown);
        }
    }

    #[test]
    fn a_short_documentation_section_loses_its_sidebar_too() {
        let html = r#"<html><head><title>Widgets</title></head><body><nav><a href="/">Home</a></nav>
<div class="sidebar ad">Buy our premium plan today! Limited offer, subscribe now and save.</div>
<article><h1>Widgets</h1><p>Widgets are configured through the frobnicate option, which takes a list of knob names. Each knob name maps to a handler.</p>
<p>To reset a widget, call reset_widget with its identifier. The reset clears every knob and restores the defaults.</p></article>
<footer>Copyright Example Corp.</footer></body></html>"#;
        let e = extract(html, "https://e.org/widgets");
        assert!(e.markdown.contains("frobnicate option") && !e.markdown.contains("premium plan"), "{}", e.markdown);
    }

    #[test]
    fn a_page_without_an_article_keeps_its_text() {
        let e = extract(
            "<html><head><title>T</title><script>var x=1</script></head><body><p>short note</p></body></html>",
            "https://e.org/",
        );
        assert!(e.markdown.contains("short note"), "{e:?}");
        assert!(!e.markdown.contains("var x"), "{e:?}");
        let plain = extract("just text, no markup", "https://e.org/a.txt");
        assert!(plain.markdown.contains("just text"), "{plain:?}");
        // A page with no text at all has no Markdown: its markup is never passed on as text.
        for empty in ["<html><head></head><body></body></html>", "<html><body><script>var x=1</script></body></html>"] {
            let e = extract(empty, "https://e.org/empty");
            assert_eq!(e.markdown, "", "{e:?}");
        }
    }

    /// A fetched page's relative links are made absolute against its URL (an indexed file's stay
    /// as written: [`extract_document`]), and its definition terms are not glued to their
    /// descriptions, in an article or in the body text read whole.
    #[test]
    fn page_links_are_absolute_and_definitions_separated() {
        let html = r#"<html><head><title>Glossary</title></head><body><article><h1>Glossary</h1>
<p>The glossary below names the parts of a widget, each with the option that configures it. See <a href="knobs.html">knobs</a>.</p>
<dl><dt>Knob</dt><dd>a handler a widget calls</dd><dt>Frobnicate</dt><dd>the option listing knobs</dd></dl>
<p>Every widget is reset with reset_widget, which restores the defaults of all its knobs at once.</p></article></body></html>"#;
        let page = extract(html, "https://e.org/docs/glossary.html");
        assert!(page.markdown.contains("(https://e.org/docs/knobs.html)"), "{}", page.markdown);
        let local = extract_document(html);
        assert!(local.markdown.contains("(knobs.html)"), "{}", local.markdown);
        for e in [page, local, fallback(html)] {
            assert!(!e.markdown.contains("Knoba handler"), "{}", e.markdown);
            assert!(e.markdown.lines().any(|l| l.trim() == "Knob"), "{}", e.markdown);
        }
    }
    /// A short published page (an article under Readability's 200 characters) made Readability
    /// relax its rules, so the page's cookie banner, header, sidebar, ad, link lists and footer
    /// came back with the article; they are dropped before Readability now, whatever the page's
    /// length.
    #[test]
    fn a_short_page_loses_its_chrome_too() {
        let html = r##"<html><head><title>reset_widget in widgetlib - Rust</title></head><body>
<div id="cookie-consent">We use cookies to improve your experience on this site. <button>Accept all</button></div>
<header class="top"><a href="/">Docs home</a> <a href="/crates">All crates</a></header>
<div id="top-menu"><a href="/releases">Releases</a> <a href="/about">About us</a> <a href="/login">Log in</a></div>
<nav><ul><li><a href="/w">widgets</a></li><li><a href="/k">knobs</a></li></ul></nav>
<div class="sidebar-left"><p>Version 1.2.3 of widgetlib, published by the widget team.</p></div>
<div class="ad-slot">Sponsored: FastHost cloud servers, first month free.</div>
<div class="related-reading"><a href="/a">Frobnicate guide</a> | <a href="/b">Knob cookbook</a> | <a href="/c">Widget FAQ</a></div>
<main><h1>Function reset_widget</h1><p>Restores every knob of a widget to its defaults.</p></main>
<aside>Was this page helpful? Tell us.</aside>
<footer><p>Copyright Example Docs. Terms of use.</p></footer>
</body></html>"##;
        let e = extract(html, "https://docs.example/widgetlib/fn.reset_widget.html");
        assert!(e.markdown.contains("Restores every knob of a widget"), "{}", e.markdown);
        for chrome in [
            "cookies",
            "Docs home",
            "Releases",
            "widgets](",
            "published by the widget team",
            "FastHost",
            "Knob cookbook",
            "helpful",
            "Copyright",
        ] {
            assert!(!e.markdown.contains(chrome), "{chrome} kept: {}", e.markdown);
        }
    }

    /// A short real article, a three-paragraph API page with a code sample, an inline link and
    /// a section whose id is a menu's name, is kept whole: only chrome goes.
    #[test]
    fn a_short_api_page_is_kept_whole() {
        let html = r##"<html><head><title>Menu API</title></head><body>
<nav class="breadcrumbs"><a href="/">Home</a> / <a href="/api">API</a> / <a href="/api/menu">Menu</a></nav>
<article><h1>Menu</h1><section id="menu">
<p>A Menu holds items. See <a href="item.html">MenuItem</a>.</p>
<pre><code>let m = Menu::new();</code></pre>
<p>Call append to add an item at the end.</p>
<div class="footer-note"><p>Menus are drawn by the platform.</p></div>
</section></article></body></html>"##;
        let e = extract(html, "https://docs.example/api/menu.html");
        for kept in [
            "A Menu holds items",
            "[MenuItem](https://docs.example/api/item.html)",
            "Menu::new()",
            "Call append to add an item",
            "Menus are drawn by the platform",
        ] {
            assert!(e.markdown.contains(kept), "{kept} lost: {}", e.markdown);
        }
        assert!(!e.markdown.contains("Home"), "{}", e.markdown);
    }
}
