//! The passages of a page that answer a query best: the page's Markdown cut into blocks of
//! about [`TARGET_CHARS`] at paragraph boundaries, each scored by the share of the query's
//! terms it contains (with the code-aware analyzer the index uses, so `mpsc` and `channel()`
//! match like they do in search), ties broken by the earlier block.

use crate::engine::analysis;
use std::collections::HashSet;

/// Characters per passage, about.
pub const TARGET_CHARS: usize = 900;

/// A scored block of a page.
#[derive(Debug, Clone, PartialEq)]
pub struct Passage {
    /// The text.
    pub text: String,
    /// Share of the query's terms present (0..1).
    pub score: f32,
    /// Order in the page.
    pub index: usize,
}

/// The page cut into blocks of about [`TARGET_CHARS`] (a long paragraph is its own block;
/// fenced code is never split).
pub fn blocks(markdown: &str) -> Vec<String> {
    let mut paras: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut in_fence = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        }
        if line.trim().is_empty() && !in_fence {
            if !cur.trim().is_empty() {
                paras.push(std::mem::take(&mut cur));
            }
            cur.clear();
            continue;
        }
        cur.push_str(line);
        cur.push('\n');
    }
    if !cur.trim().is_empty() {
        paras.push(cur);
    }
    let mut out: Vec<String> = Vec::new();
    let mut acc = String::new();
    for p in paras {
        if !acc.is_empty() && acc.len() + p.len() > TARGET_CHARS {
            out.push(std::mem::take(&mut acc).trim().to_string());
        }
        if !acc.is_empty() {
            acc.push('\n');
        }
        acc.push_str(&p);
    }
    if !acc.trim().is_empty() {
        out.push(acc.trim().to_string());
    }
    out
}

/// The best `n` passages of `markdown` for `query`, best first. Blocks matching none of the
/// query's terms are left out; a query without content words keeps the page's opening.
pub fn best(markdown: &str, query: &str, n: usize) -> Vec<Passage> {
    let q: Vec<String> = analysis::query_terms(query);
    let all = blocks(markdown);
    if q.is_empty() {
        return all.into_iter().take(n).enumerate().map(|(index, text)| Passage { text, score: 0.0, index }).collect();
    }
    let mut scored: Vec<Passage> = all
        .into_iter()
        .enumerate()
        .filter_map(|(index, text)| {
            let present: HashSet<String> = analysis::terms(&text).into_iter().collect();
            let hits = q.iter().filter(|t| present.contains(*t)).count();
            (hits > 0).then(|| Passage { score: hits as f32 / q.len() as f32, text, index })
        })
        .collect();
    scored.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
    scored.truncate(n);
    scored
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_matching_block_wins_and_code_fences_stay_whole() {
        let filler = "Unrelated words about gardening and weather. ".repeat(30);
        let md = format!(
            "# Intro\n\n{filler}\n\nThe oneshot channel sends a single value to one receiver.\n\n```rust\nlet x = 1;\n\nlet y = 2;\n```\n\n{filler}"
        );
        let b = blocks(&md);
        assert!(b.iter().any(|p| p.contains("let x = 1;\n\nlet y = 2;")), "{b:?}");
        let top = best(&md, "how does a oneshot channel send a value", 2);
        assert!(top[0].text.contains("oneshot channel"), "{top:?}");
        assert!(top[0].score > 0.5, "{top:?}");
        assert!(top.iter().all(|p| !p.text.starts_with("Unrelated")), "{top:?}");
    }
}
