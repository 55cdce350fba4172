//! Context assembly: turns what the tiers found (memories, the diff and its neighbours,
//! search hits, earlier turns) into rendered prompt [`Piece`]s, each headed by the citation the
//! model is asked to use (`path:line_start-line_end`), and renders the kept pieces into chat
//! messages in the spec's order: instructions and profile rules, Memory, Diff, Repo,
//! Library/Web, then the conversation and the question.

use super::budget::Piece;
use super::diff::FileDiff;
use super::sources::{Neighbour, RecalledMemory};
use super::types::{ChatSource, Slot};
use crate::engine::index::files::language;
use crate::engine::llm::{ChatMessage, Role};
use crate::engine::profiles::types::{Category, PreferenceHit, ProjectMap};
use crate::engine::repos::RepoRef;
use crate::engine::search::types::SearchHit;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// Lines of a neighbour file shown around its import of (or by) a changed file.
const NEIGHBOUR_LINES: u32 = 40;

/// The instructions at the top of every prompt.
pub fn instructions(repo_name: &str) -> String {
    format!(
        "You are docdex, a local assistant answering questions about the code repository `{repo_name}`.\n\
         Answer from the context below. Each snippet starts with a header naming its source: \
         path:line_start-line_end for repository files, the package and version for library \
         documentation, the URL for web pages; cite the sources you rely on in exactly that form. \
         If the context does not contain the answer, say so instead of guessing."
    )
}

/// docdex's instructions followed by the caller's own (an OpenAI client's system messages),
/// under a heading saying whose they are; the context sections come after both.
pub fn with_caller(instructions: String, caller: Option<&str>) -> String {
    match caller.map(str::trim).filter(|c| !c.is_empty()) {
        Some(c) => format!("{instructions}\n\n## Instructions from the caller\n{c}"),
        None => instructions,
    }
}

/// The heading a slot's section gets in the prompt (empty for history, which is messages).
pub fn heading(slot: Slot, diff_label: &str, agent: Option<&str>) -> String {
    match slot {
        Slot::Profile => format!(
            "## How agent {} and the team want code written\n\
             Style and tooling are advice, constraints are rules, workflow steps shape how you plan the answer. \
             The repository context below is the technical truth: where it conflicts with these preferences, it wins.\n",
            agent.unwrap_or("-")
        ),
        Slot::Map => format!("## Project map for agent {} (the files that matter to it; the rest collapsed)\n", agent.unwrap_or("-")),
        Slot::Memory => "## Repo memory\n".into(),
        Slot::Diff => format!("## Diff under review: {diff_label}\n"),
        Slot::Repo => "## Repository snippets\n".into(),
        Slot::Library => "## Library documentation\n".into(),
        Slot::Web => "## Web pages\n".into(),
        Slot::System | Slot::History | Slot::Generation => String::new(),
    }
}

/// Renders the kept pieces into messages: one system message (instructions, then each slot's
/// section in priority order), the kept history, then the question.
pub fn render(
    instructions: &str,
    question: &str,
    kept: &[Piece],
    heading: &dyn Fn(Slot) -> String,
) -> Vec<ChatMessage> {
    let mut system = instructions.to_string();
    let mut current: Option<Slot> = None;
    let mut history = Vec::new();
    for p in kept {
        if p.slot == Slot::History {
            history.push(p);
            continue;
        }
        if current != Some(p.slot) {
            system.push_str("\n\n");
            system.push_str(&heading(p.slot));
            current = Some(p.slot);
        }
        system.push('\n');
        system.push_str(&p.block);
    }
    let mut messages = vec![ChatMessage::new(Role::System, system)];
    for h in history {
        let role = if h.citation.starts_with("assistant") { Role::Assistant } else { Role::User };
        messages.push(ChatMessage::new(role, h.block.clone()));
    }
    messages.push(ChatMessage::new(Role::User, question.to_string()));
    messages
}

/// `### citation (note)` then the text fenced with its language.
fn block(citation: &str, note: &str, lang: &str, text: &str) -> String {
    let f = fence(text);
    let lang = if lang == "text" { "" } else { lang };
    let note = if note.is_empty() { String::new() } else { format!(" ({note})") };
    format!("### {citation}{note}\n{f}{lang}\n{}\n{f}\n", text.trim_end_matches('\n'))
}

fn citation(path: &str, a: u32, b: u32) -> String {
    format!("{path}:{a}-{b}")
}

fn source(slot: Slot, path: &str, a: u32, b: u32, score: f32, note: &str) -> ChatSource {
    ChatSource {
        citation: citation(path, a, b),
        slot,
        path: Some(path.to_string()),
        line_start: Some(a),
        line_end: Some(b),
        score,
        note: note.to_string(),
        cited: false,
        url: None,
        package: None,
    }
}

/// The first and last line (1-based) of a masked finding.
type LineSpan = (u32, u32);

/// Reads repository files once each, refusing anything that resolves outside the root.
pub struct Files {
    repo: RepoRef,
    cache: HashMap<String, Option<Arc<Vec<String>>>>,
    /// Mask secrets and personal data as files are read ([`Files::masked`]).
    mask: bool,
    /// Per file, the first and last line of each masked finding.
    masked_lines: HashMap<String, Vec<LineSpan>>,
}

impl Files {
    /// A reader for the files of `repo` as the index holds them (a document's extracted text).
    pub fn new(repo: &RepoRef) -> Files {
        Files { repo: repo.clone(), cache: HashMap::new(), mask: false, masked_lines: HashMap::new() }
    }

    /// [`Files::new`] whose text has secrets and personal data masked, as search snippets do
    /// (`[privacy] redact_snippets`): for text handed to agents, which forward it to models.
    pub fn masked(repo: &RepoRef) -> Files {
        Files { mask: true, ..Files::new(repo) }
    }

    /// The file's lines, or `None` when it is missing, binary or outside the repository.
    pub fn lines(&mut self, rel: &str) -> Option<Arc<Vec<String>>> {
        if let Some(hit) = self.cache.get(rel) {
            return hit.clone();
        }
        let read = || -> Option<(Arc<Vec<String>>, Vec<LineSpan>)> {
            // One opener for every repository read: never through a link, never outside the root.
            let bytes = crate::engine::index::extract::indexed_text(&self.repo, rel).ok()?;
            if crate::engine::fsutil::looks_binary(&bytes) {
                return None;
            }
            let text = crate::engine::fsutil::decode_text(&bytes);
            let (masked_text, at_lines) = if self.mask {
                let (masked, found) = crate::engine::privacy::mask(&text);
                let line_of = |byte: usize| 1 + memchr::memchr_iter(b'\n', &text.as_bytes()[..byte]).count() as u32;
                let lines = found.iter().map(|f| (line_of(f.range.start), line_of(f.range.end))).collect();
                (std::borrow::Cow::Owned(masked), lines)
            } else {
                (std::borrow::Cow::Borrowed(text.as_ref()), Vec::new())
            };
            Some((Arc::new(masked_text.lines().map(str::to_string).collect()), at_lines))
        };
        let lines = read().map(|(lines, at_lines)| {
            if !at_lines.is_empty() {
                self.masked_lines.insert(rel.to_string(), at_lines);
            }
            lines
        });
        self.cache.insert(rel.to_string(), lines.clone());
        lines
    }

    /// How many masked findings lie in lines `a..=b` of `rel` (as read so far), in part: a
    /// private key that starts above the snippet counts too.
    pub fn masked_in(&self, rel: &str, a: u32, b: u32) -> usize {
        self.masked_lines.get(rel).map_or(0, |v| v.iter().filter(|(s, e)| *s <= b && a <= *e).count())
    }

    /// Lines `a..=b` (1-based, clamped), or `None` when the range is empty.
    pub fn slice(&mut self, rel: &str, a: u32, b: u32) -> Option<(u32, u32, String)> {
        let lines = self.lines(rel)?;
        let total = lines.len() as u32;
        let a = a.max(1);
        let b = b.min(total);
        if a > b {
            return None;
        }
        Some((a, b, lines[(a - 1) as usize..b as usize].join("\n")))
    }
}

/// Search hits as Repo pieces, best first: the whole chunk, with the hit's snippet lines as the
/// shorter fallback and, when what is left still holds a line longer than an excerpt (minified
/// code, a one-line JSON file), a bounded excerpt around the rarest of `terms` (the question's
/// query terms) as the last: cut by lines such a hit cannot shrink, and was dropped whole.
pub fn repo_pieces(files: &mut Files, hits: &[SearchHit], terms: &[String]) -> Vec<Piece> {
    let mut out = Vec::new();
    for (order, h) in hits.iter().enumerate() {
        let note = if h.stale { "changed since indexed" } else { "" };
        let Some((a, b, text)) = files.slice(&h.path, h.line_start, h.line_end) else { continue };
        let piece = |sa: u32, sb: u32, text: &str, note: &str, fallback: Option<Box<Piece>>| Piece {
            slot: Slot::Repo,
            citation: citation(&h.path, sa, sb),
            block: block(&citation(&h.path, sa, sb), note, &h.lang, text),
            source: Some(source(Slot::Repo, &h.path, sa, sb, h.score, note)),
            fallback,
            order,
        };
        let snippet_lines = h.snippet.lines().count() as u32;
        let snip_end = h.snippet_line_start + snippet_lines.saturating_sub(1);
        let snippet = (snippet_lines > 0 && (h.snippet_line_start > a || snip_end < b))
            .then(|| files.slice(&h.path, h.snippet_line_start, snip_end))
            .flatten();
        let shortest = snippet.as_ref().map_or(&text, |(_, _, t)| t);
        let excerpt = super::excerpt::has_long_line(shortest)
            .then(|| files.lines(&h.path))
            .flatten()
            .and_then(|lines| super::excerpt::excerpt(&lines, a, b, terms))
            .map(|e| {
                let note = if note.is_empty() {
                    "an excerpt of a long line".to_string()
                } else {
                    format!("{note}; an excerpt of a long line")
                };
                Box::new(piece(e.line_start, e.line_end, &e.text, &note, None))
            });
        let fallback = match snippet {
            Some((sa, sb, stext)) => Some(Box::new(piece(sa, sb, &stext, note, excerpt))),
            None => excerpt,
        };
        out.push(piece(a, b, &text, note, fallback));
    }
    out
}

/// Recalled preferences as Profile pieces, offered most similar first (so the least similar are
/// dropped first) and placed by category (style, tooling, constraint, workflow), then similarity.
pub fn profile_pieces(hits: &[PreferenceHit]) -> Vec<Piece> {
    hits.iter()
        .enumerate()
        .map(|(i, h)| {
            let p = &h.preference;
            let cite = profile_citation(&p.id);
            let tag = match (p.category, &p.rule) {
                (Category::Constraint, Some(rule)) => format!("constraint, checked at commit: {rule}"),
                (Category::Workflow, _) => "workflow: plan by it".to_string(),
                (c, _) => c.name().to_string(),
            };
            let rank = Category::ALL.iter().position(|c| *c == p.category).unwrap_or(0);
            Piece {
                slot: Slot::Profile,
                citation: cite.clone(),
                block: format!("- [{tag}] {}\n", p.content.trim()),
                source: Some(ChatSource {
                    citation: cite,
                    slot: Slot::Profile,
                    path: None,
                    line_start: None,
                    line_end: None,
                    score: h.similarity_score,
                    note: format!("{} · {}", p.category, p.agent_id),
                    cited: false,
                    url: None,
                    package: None,
                }),
                fallback: None,
                order: rank * 100_000 + i,
            }
        })
        .collect()
}

/// How a preference is cited (`profile:` and the first 8 characters of its id).
pub fn profile_citation(id: &str) -> String {
    format!("profile:{}", id.chars().take(8).collect::<String>())
}

/// The project map as the Map piece.
pub fn map_piece(map: &ProjectMap) -> Piece {
    let f = fence(&map.tree);
    Piece {
        slot: Slot::Map,
        citation: "project-map".into(),
        block: format!("{f}text\n{}{f}\n", map.tree),
        source: Some(ChatSource {
            citation: "project-map".into(),
            slot: Slot::Map,
            path: None,
            line_start: None,
            line_end: None,
            score: 0.0,
            note: format!("{} paths shown, {} hidden, depth {}", map.paths.len(), map.hidden_files, map.depth),
            cited: false,
            url: None,
            package: None,
        }),
        fallback: None,
        order: 0,
    }
}

/// Recalled memories as Memory pieces, closest first.
pub fn memory_pieces(memories: &[RecalledMemory]) -> Vec<Piece> {
    memories
        .iter()
        .enumerate()
        .map(|(order, m)| {
            let short: String = m.id.chars().take(8).collect();
            let cite = format!("memory:{short}");
            Piece {
                slot: Slot::Memory,
                citation: cite.clone(),
                block: format!("### {cite}\n{}\n", m.content.trim()),
                source: Some(ChatSource {
                    citation: cite,
                    slot: Slot::Memory,
                    path: None,
                    line_start: None,
                    line_end: None,
                    score: m.score,
                    note: String::new(),
                    cited: false,
                    url: None,
                    package: None,
                }),
                fallback: None,
                order,
            }
        })
        .collect()
}

/// Library passages as Library pieces, best first, cited as `package@version/source` in short
/// (`libs::label`: a docs.rs URL with its query string was the whole label under an answer);
/// the full address stays in the source's `url`. Two passages whose short labels would meet
/// keep their full citations, so each piece still has its own.
pub fn library_pieces(hits: &[crate::engine::libs::types::LibHit]) -> Vec<Piece> {
    use crate::engine::libs::label;
    let short: Vec<String> =
        hits.iter().map(|h| label::short_citation(&h.package, &h.version, &h.source, &h.citation)).collect();
    let shared = |i: usize| {
        short.iter().enumerate().any(|(j, s)| j != i && *s == short[i] && hits[j].citation != hits[i].citation)
    };
    hits.iter()
        .enumerate()
        .map(|(order, h)| {
            let citation = if shared(order) { h.citation.clone() } else { short[order].clone() };
            Piece {
                slot: Slot::Library,
                citation: citation.clone(),
                block: format!("### {citation} ({})\n{}\n", h.title.trim(), h.text.trim()),
                source: Some(ChatSource {
                    citation,
                    slot: Slot::Library,
                    path: None,
                    line_start: None,
                    line_end: None,
                    score: h.score,
                    note: label::short_note(&h.title),
                    cited: false,
                    url: h.source.starts_with("http").then(|| h.source.clone()),
                    package: Some(format!("{}:{}@{}", h.ecosystem.name(), h.package, h.version)),
                }),
                fallback: None,
                order,
            }
        })
        .collect()
}

/// Web passages as Web pieces, in the order research ranked them, cited by URL.
pub fn web_pieces(passages: &[crate::engine::web::types::WebPassage]) -> Vec<Piece> {
    passages
        .iter()
        .enumerate()
        .map(|(order, p)| {
            let title = if p.title.is_empty() { String::new() } else { format!(" ({})", p.title.trim()) };
            Piece {
                slot: Slot::Web,
                citation: p.url.clone(),
                block: format!("### {}{title}\n{}\n", p.url, p.text.trim()),
                source: Some(ChatSource {
                    citation: p.url.clone(),
                    slot: Slot::Web,
                    path: None,
                    line_start: None,
                    line_end: None,
                    score: p.score,
                    note: p.title.trim().to_string(),
                    cited: false,
                    url: Some(p.url.clone()),
                    package: None,
                }),
                fallback: None,
                order,
            }
        })
        .collect()
}

/// Changed files as Diff pieces (their patches), in diff order.
pub fn diff_pieces(changes: &[FileDiff]) -> Vec<Piece> {
    let mut out = Vec::new();
    for (order, f) in changes.iter().enumerate() {
        let mut note = f.change.name().to_string();
        if let Some(old) = &f.old_path {
            note = format!("renamed from {old}");
        }
        let (a, b) = f.line_range().unwrap_or((1, 1));
        let text = if f.binary {
            "(binary file)".to_string()
        } else if f.patch.is_empty() {
            "(no content change)".to_string()
        } else {
            f.patch.clone()
        };
        out.push(Piece {
            slot: Slot::Diff,
            citation: citation(&f.path, a, b),
            block: block(&citation(&f.path, a, b), &note, "diff", &text),
            source: Some(source(Slot::Diff, &f.path, a, b, 0.0, &note)),
            fallback: diff_fallbacks(f, &note, order),
            order,
        });
    }
    out
}

/// The shorter pieces of a long patch a small window is offered, longest first, when the
/// whole does not fit.
const DIFF_FALLBACK_LINES: [usize; 3] = [60, 30, 12];

/// A long patch's shorter versions as a fallback chain (the budget takes the first that fits):
/// without them a change too big for the window was dropped whole, and "what changed?" was
/// answered without the diff.
fn diff_fallbacks(f: &FileDiff, note: &str, order: usize) -> Option<Box<Piece>> {
    DIFF_FALLBACK_LINES.iter().rev().fold(None, |shorter, &limit| match diff_head(f, note, order, limit) {
        Some(mut p) => {
            p.fallback = shorter;
            Some(Box::new(p))
        }
        None => shorter,
    })
}

/// The patch's first hunks within `limit` lines (the first hunk cut when it alone is longer),
/// cited over the lines they cover; `None` when the whole patch is that short.
fn diff_head(f: &FileDiff, note: &str, order: usize, limit: usize) -> Option<Piece> {
    let mut lines: Vec<&str> = f.patch.lines().collect();
    // What the patch's own cap already left out ("... N more diff lines not shown").
    let capped = lines
        .last()
        .and_then(|l| l.strip_prefix("... ")?.strip_suffix(" more diff lines not shown")?.parse::<usize>().ok());
    if capped.is_some() {
        lines.pop();
    }
    if f.binary || f.hunks.is_empty() || lines.len() <= limit {
        return None;
    }
    let starts: Vec<usize> = (0..lines.len()).filter(|&i| lines[i].starts_with("@@")).collect();
    let whole = (1..=starts.len()).take_while(|&k| starts.get(k).copied().unwrap_or(lines.len()) <= limit).last();
    let (cut, kept) = match whole {
        Some(k) => (starts.get(k).copied().unwrap_or(lines.len()), k),
        None => (limit, 1),
    };
    let part = FileDiff { hunks: f.hunks.iter().take(kept).copied().collect(), ..f.clone() };
    let (a, b) = part.line_range()?;
    let text = format!(
        "{}\n... {} more diff lines not shown (the whole change does not fit the context window)",
        lines[..cut].join("\n"),
        lines.len() - cut + capped.unwrap_or(0)
    );
    let cite = citation(&f.path, a, b);
    Some(Piece {
        slot: Slot::Diff,
        block: block(&cite, note, "diff", &text),
        source: Some(source(Slot::Diff, &f.path, a, b, 0.0, note)),
        citation: cite,
        fallback: None,
        order,
    })
}

/// One-hop neighbours as Diff pieces after the patches: the lines around the import that
/// links them, or the top of the file when the line is unknown.
pub fn neighbour_pieces(files: &mut Files, neighbours: &[Neighbour], first_order: usize) -> Vec<Piece> {
    let mut out = Vec::new();
    for (i, n) in neighbours.iter().enumerate() {
        let centre = n.line.filter(|_| n.dependent).unwrap_or(1);
        let start = centre.saturating_sub(NEIGHBOUR_LINES / 4).max(1);
        let Some((a, b, text)) = files.slice(&n.path, start, start + NEIGHBOUR_LINES - 1) else { continue };
        let note = if n.dependent { format!("imports {}", n.changed) } else { format!("imported by {}", n.changed) };
        let lang = language(Path::new(&n.path));
        out.push(Piece {
            slot: Slot::Diff,
            citation: citation(&n.path, a, b),
            block: block(&citation(&n.path, a, b), &note, lang, &text),
            source: Some(source(Slot::Diff, &n.path, a, b, 0.0, &note)),
            fallback: None,
            order: first_order + i,
        });
    }
    out
}

/// Earlier messages as History pieces, newest first (so the oldest are dropped first).
pub fn history_pieces(history: &[ChatMessage]) -> Vec<Piece> {
    history
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role != Role::System && !m.content.trim().is_empty())
        .map(|(order, m)| {
            let who = if m.role == Role::Assistant { "assistant" } else { "user" };
            Piece {
                slot: Slot::History,
                citation: format!("{who} message {}", order + 1),
                block: m.content.clone(),
                source: None,
                fallback: None,
                order,
            }
        })
        .rev()
        .collect()
}

/// Marks the sources the answer cites (by citation, or by path for file sources).
pub fn mark_cited(sources: &mut [ChatSource], answer: &str) {
    for s in sources {
        s.cited = answer.contains(&s.citation) || s.path.as_deref().is_some_and(|p| answer.contains(p));
    }
}

/// A fence longer than any backtick run inside `text`, so code never closes it early (context
/// packs and the chat prompt both quote code in Markdown).
pub(crate) fn fence(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    "`".repeat(longest.max(2) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(slot: Slot, cite: &str, block: &str, order: usize) -> Piece {
        Piece { slot, citation: cite.into(), block: block.into(), source: None, fallback: None, order }
    }

    #[test]
    fn renders_sections_in_priority_order_then_history_then_the_question() {
        let kept = vec![
            p(Slot::Memory, "memory:1", "### memory:1\nuse tabs\n", 0),
            p(Slot::Diff, "a.rs:1-2", "### a.rs:1-2\n", 0),
            p(Slot::Repo, "b.rs:3-4", "### b.rs:3-4\n", 0),
            p(Slot::History, "user message 1", "earlier question", 0),
            p(Slot::History, "assistant message 2", "earlier answer", 1),
        ];
        let msgs = render("INSTRUCTIONS", "the question", &kept, &|s| heading(s, "working", None));
        assert_eq!(msgs.len(), 4);
        let sys = &msgs[0].content;
        let at = |s: &str| sys.find(s).unwrap_or_else(|| panic!("{s} missing from {sys}"));
        assert!(at("INSTRUCTIONS") < at("## Repo memory") && at("## Repo memory") < at("## Diff under review"));
        assert!(at("## Diff under review") < at("## Repository snippets") && at("a.rs:1-2") < at("b.rs:3-4"));
        assert_eq!((msgs[1].role, msgs[2].role, msgs[3].role), (Role::User, Role::Assistant, Role::User));
        assert_eq!(msgs[3].content, "the question");
    }

    #[test]
    fn fences_outgrow_backticks_inside() {
        let b = block("x.md:1-3", "", "markdown", "```rust\nfn a() {}\n```");
        assert!(b.starts_with("### x.md:1-3\n````markdown\n"), "{b}");
        assert!(b.ends_with("\n````\n"));
    }

    #[test]
    fn library_citations_are_short_and_keep_the_full_url_in_the_source() {
        use crate::engine::libs::types::{Ecosystem, LibHit};
        let hit = |source: &str, title: &str| LibHit {
            citation: format!("reqwest@0.12.9/{source}"),
            ecosystem: Ecosystem::Crates,
            package: "reqwest".into(),
            version: "0.12.9".into(),
            title: title.into(),
            source: source.into(),
            text: "A client.".into(),
            score: 1.0,
        };
        let long =
            "https://docs.rs/reqwest/0.12.9/reqwest/blocking/struct.Client.html?search=timeout&utm_source=docdex";
        let title = "Client in reqwest::blocking - Rust: A `Client` to make Requests with, which holds a connection pool internally";
        // Two pages whose short labels would be the same keep their full citations.
        let (a, b) = ("https://a.example/x/y/z/same/page.html?q=1", "https://a.example/v/w/z/same/page.html?q=2");
        let pieces = library_pieces(&[hit(long, title), hit("src/lib.rs", "module"), hit(a, "a"), hit(b, "b")]);
        let cited: Vec<&str> = pieces.iter().map(|p| p.citation.as_str()).collect();
        assert_eq!(cited[..2], ["reqwest@0.12.9/docs.rs/…/blocking/struct.Client.html", "reqwest@0.12.9/src/lib.rs"]);
        assert_eq!(cited[2..], [format!("reqwest@0.12.9/{a}"), format!("reqwest@0.12.9/{b}")]);
        let src = pieces[0].source.as_ref().expect("source");
        assert_eq!(
            (src.citation.as_str(), src.url.as_deref()),
            (cited[0], Some(long)),
            "the full URL stays for clients"
        );
        assert!(src.note.chars().count() <= 80 && src.note.ends_with('…'), "{}", src.note);
        // The model reads the label it is asked to cite, so its citations are matched.
        assert!(pieces[0].block.starts_with("### reqwest@0.12.9/docs.rs/…/blocking/struct.Client.html ("));
    }

    #[test]
    fn citations_are_marked_by_range_or_path() {
        let mut s = vec![source(Slot::Repo, "src/a.rs", 1, 5, 1.0, ""), source(Slot::Repo, "src/b.rs", 1, 5, 1.0, "")];
        mark_cited(&mut s, "see src/a.rs:1-5.");
        assert!(s[0].cited && !s[1].cited);
    }
}
