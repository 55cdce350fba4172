//! AST search support: how a file's node-kind counts and sample nodes are stored (two compact
//! text columns per file, so a whole repo's worth is written in one row per file and searched
//! with `instr`), and how node kinds named by a user are checked against the grammars.

use super::symbols::{AstSample, AstSummary, KindTable};
use super::Lang;
use crate::error::{Error, Result};

/// Encodes the counts as ` kind=count kind=count ` (sorted by kind, spaces at both ends), so
/// `instr(kinds, ' function_item=')` finds files that contain a kind.
pub fn encode_counts(ast: &AstSummary) -> String {
    let mut out = String::with_capacity(ast.counts.len() * 24 + 1);
    out.push(' ');
    for (kind, n) in &ast.counts {
        out.push_str(kind);
        out.push('=');
        out.push_str(&n.to_string());
        out.push(' ');
    }
    out
}

/// The needle that finds `kind` in [`encode_counts`] output.
pub fn count_needle(kind: &str) -> String {
    format!(" {kind}=")
}

/// The count of `kind` in an encoded count list (0 when absent).
pub fn count_of(encoded: &str, kind: &str) -> u32 {
    let needle = count_needle(kind);
    match encoded.find(&needle) {
        Some(i) => {
            let rest = &encoded[i + needle.len()..];
            rest.split(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0)
        }
        None => 0,
    }
}

/// Encodes the samples as `kind:line.column-end,line;kind:...`, grouped by kind: a node that
/// starts at column 0 leaves out `.column`, a one-line node its `-end`. The column (bytes, 0-based)
/// is what tells apart the samples of a minified file, all on line 1.
pub fn encode_samples(ast: &AstSummary) -> String {
    let mut samples: Vec<&AstSample> = ast.samples.iter().collect();
    samples.sort_by_key(|s| s.kind);
    let mut out = String::with_capacity(samples.len() * 12);
    let mut last: Option<&str> = None;
    for s in samples {
        if last == Some(s.kind) {
            out.push(',');
        } else {
            if last.is_some() {
                out.push(';');
            }
            out.push_str(s.kind);
            out.push(':');
            last = Some(s.kind);
        }
        out.push_str(&s.line_start.to_string());
        if s.column > 0 {
            out.push_str(&format!(".{}", s.column));
        }
        if s.line_end != s.line_start {
            out.push_str(&format!("-{}", s.line_end));
        }
    }
    out
}

/// A sample as [`decode_samples`] reads it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSample {
    /// Node kind.
    pub kind: String,
    /// 1-based first line.
    pub line_start: u32,
    /// 1-based last line.
    pub line_end: u32,
    /// 0-based byte column of the node's start in its first line.
    pub column: u32,
}

/// Decodes [`encode_samples`] output for the given kinds; a malformed entry is skipped.
pub fn decode_samples(encoded: &str, kinds: &[String]) -> Vec<StoredSample> {
    let mut out = Vec::new();
    for group in encoded.split(';') {
        let Some((kind, ranges)) = group.split_once(':') else { continue };
        if !kinds.iter().any(|k| k == kind) {
            continue;
        }
        for r in ranges.split(',') {
            let (start, end) = r.split_once('-').map_or((r, None), |(a, b)| (a, Some(b)));
            let (line, column) = start.split_once('.').map_or((start, None), |(l, c)| (l, Some(c)));
            let (Ok(line_start), Ok(column)) = (line.parse(), column.map_or(Ok(0), str::parse)) else { continue };
            let Ok(line_end) = end.map_or(Ok(line_start), str::parse) else { continue };
            out.push(StoredSample { kind: kind.to_string(), line_start, line_end, column });
        }
    }
    out
}

/// Checks that every kind names a node kind of at least one grammar; the error lists close
/// names so a typo is easy to fix.
pub fn validate_kinds(kinds: &[String]) -> Result<()> {
    if kinds.is_empty() {
        return Err(Error::BadRequest(
            "no node kinds given: pass Tree-sitter node kinds (`kinds`; the command line's --kinds), e.g. function_definition, class_definition"
                .into(),
        ));
    }
    for kind in kinds {
        check_name_len("node kind", kind)?;
        if kind.is_empty() || kind.contains(char::is_whitespace) || kind.contains('=') {
            return Err(Error::BadRequest(format!("bad node kind {kind:?}: kinds are words like function_item")));
        }
        if !Lang::ALL.iter().any(|l| KindTable::get(*l).has_kind(kind)) {
            let close = similar_kinds(kind, 8);
            let hint = if close.is_empty() {
                "node kinds are Tree-sitter names such as function_item (Rust) or function_definition (Python)"
                    .to_string()
            } else {
                format!("did you mean {}?", close.join(", "))
            };
            return Err(Error::BadRequest(format!("unknown node kind {kind:?} in every grammar; {hint}")));
        }
    }
    Ok(())
}

/// Checks that `field` is a field name in at least one grammar (`name`, `body`, `parameters`,
/// `return_type`, ...); the error lists close names.
pub fn validate_field(field: &str) -> Result<()> {
    check_name_len("field", field)?;
    if Lang::ALL.iter().any(|l| l.grammar().field_id_for_name(field).is_some()) {
        return Ok(());
    }
    let lower = field.to_ascii_lowercase();
    let mut close: Vec<String> = Vec::new();
    for l in Lang::ALL {
        let g = l.grammar();
        for id in 1..=g.field_count() as u16 {
            if let Some(name) = g.field_name_for_id(id) {
                if name.contains(lower.as_str()) || (name.len() > 3 && lower.contains(name)) {
                    close.push(name.to_string());
                }
            }
        }
    }
    close.sort_by(|a, b| (a.len(), a).cmp(&(b.len(), b)));
    close.dedup();
    close.truncate(8);
    let hint = if close.is_empty() {
        "fields are Tree-sitter field names such as name, body, parameters or return_type".to_string()
    } else {
        format!("did you mean {}?", close.join(", "))
    };
    Err(Error::BadRequest(format!("unknown field {field:?} in every grammar; {hint}")))
}

/// Longest node kind or field name accepted, in bytes. The grammars' longest names are under
/// 50 bytes; without a cap a 1.5 MB kind cost 13 s of CPU in the close-name search (a
/// substring test against every kind of 16 grammars) and was echoed back whole in the error.
pub const MAX_AST_NAME_BYTES: usize = 100;

/// Refuses a node kind or field name over [`MAX_AST_NAME_BYTES`], quoting only its start.
fn check_name_len(what: &str, name: &str) -> Result<()> {
    if name.len() <= MAX_AST_NAME_BYTES {
        return Ok(());
    }
    let start: String = name.chars().take(40).collect();
    let example = if what == "field" { "name or return_type" } else { "function_definition" };
    Err(Error::BadRequest(format!(
        "{what} too long: {} bytes (starts {start:?}); Tree-sitter {what}s are words of at most {MAX_AST_NAME_BYTES} bytes, e.g. {example}",
        name.len()
    )))
}

/// A node found by [`field_matches`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldMatch {
    /// Node kind.
    pub kind: String,
    /// 1-based first line.
    pub line_start: u32,
    /// 1-based last line.
    pub line_end: u32,
    /// 0-based byte column of the node's start in its first line.
    pub column: u32,
    /// The node's `name` child, or its own text when it is a leaf.
    pub label: Option<String>,
}

/// Whether `node` is a `name` that declares nothing: a parameter's or a call argument's
/// (Python's `timeout=5` in a signature or a call), or the last segment of a path (Rust's
/// `std::mem::MaybeUninit` and `Type::new`, Go's `pkg.Type`, C++'s `ns::f`, whose `scoped_*` and
/// `qualified_*` nodes name it `name`). Grammars give those a `name` field too, yet `--field
/// name` is for the names declarations give (a tour found 31 of rich's 32 `Console` matches
/// were parameters and keyword arguments, and 575 of hyper's `role.rs` matches were paths).
fn names_no_declaration(node: tree_sitter::Node) -> bool {
    node.parent().is_some_and(|p| {
        let kind = p.kind();
        kind.contains("parameter")
            || kind.contains("argument")
            || kind.starts_with("scoped_")
            || kind.starts_with("qualified_")
    })
}

/// Nodes of `kinds` in `tree` that fill the `field` of their parent (`identifier` nodes that are
/// a declaration's `name`, `block` nodes that are a loop's `body`, ...). With `name`, only
/// nodes whose label (see [`FieldMatch::label`]) equals it, ignoring case and underscores.
pub fn field_matches(
    tree: &tree_sitter::Tree,
    src: &str,
    kinds: &[String],
    field: &str,
    name: Option<&str>,
) -> Vec<FieldMatch> {
    let want_name = name.map(super::symbols::norm);
    let mut out = Vec::new();
    let mut cursor = tree.walk();
    loop {
        let node = cursor.node();
        if cursor.field_name() == Some(field)
            && node.is_named()
            && kinds.iter().any(|k| k == node.kind())
            && !(field == "name" && names_no_declaration(node))
        {
            let label = node
                .child_by_field_name("name")
                .or_else(|| (node.child_count() == 0).then_some(node))
                .and_then(|n| src.get(n.byte_range()))
                .map(|t| t.chars().take(200).collect::<String>());
            let keep = match (&want_name, &label) {
                (None, _) => true,
                (Some(w), Some(l)) => super::symbols::norm(l) == *w,
                (Some(_), None) => false,
            };
            if keep {
                out.push(FieldMatch {
                    kind: node.kind().to_string(),
                    line_start: node.start_position().row as u32 + 1,
                    line_end: node.end_position().row as u32 + 1,
                    column: u32::try_from(node.start_position().column).unwrap_or(u32::MAX),
                    label,
                });
            }
        }
        if cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return out;
            }
        }
    }
}

/// Named node kinds of any grammar that contain `kind` (or that it contains), shortest first.
fn similar_kinds(kind: &str, n: usize) -> Vec<String> {
    let lower = kind.to_ascii_lowercase();
    // (rank, name): a typo within two edits (`funtion_definition`, in no name and containing
    // none) first, then names containing it or contained in it.
    let mut found: Vec<(u8, &str)> = Vec::new();
    for l in Lang::ALL {
        let t = KindTable::get(l);
        for (name, named) in t.names.iter().zip(&t.named) {
            if !*named {
                continue;
            }
            if lower.len() > 4 && crate::engine::analysis::edit_distance(&lower, name, 2).is_some() {
                found.push((0, name));
            } else if name.contains(lower.as_str()) || (name.len() > 3 && lower.contains(name)) {
                found.push((1, name));
            }
        }
    }
    found.sort_by_key(|(rank, s)| (*rank, s.len(), *s));
    found.dedup();
    found.into_iter().take(n).map(|(_, s)| s.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(kind: &'static str, line_start: u32, line_end: u32, column: u32) -> AstSample {
        AstSample { kind, line_start, line_end, column }
    }

    fn stored(kind: &str, line_start: u32, line_end: u32, column: u32) -> StoredSample {
        StoredSample { kind: kind.into(), line_start, line_end, column }
    }

    #[test]
    fn counts_and_samples_round_trip() {
        let ast = AstSummary {
            counts: vec![("call", 12), ("function_definition", 2)],
            samples: vec![
                sample("function_definition", 1, 9, 0),
                sample("call", 3, 3, 4),
                sample("call", 5, 6, 0),
                sample("call", 5, 5, 1234),
            ],
        };
        let c = encode_counts(&ast);
        assert_eq!(c, " call=12 function_definition=2 ");
        assert_eq!(count_of(&c, "call"), 12);
        assert_eq!(count_of(&c, "function_definition"), 2);
        assert_eq!(count_of(&c, "definition"), 0);
        let s = encode_samples(&ast);
        assert_eq!(s, "call:3.4,5-6,5.1234;function_definition:1-9");
        assert_eq!(
            decode_samples(&s, &["call".into()]),
            vec![stored("call", 3, 3, 4), stored("call", 5, 6, 0), stored("call", 5, 5, 1234)]
        );
        assert_eq!(decode_samples(&s, &["function_definition".into()]), vec![stored("function_definition", 1, 9, 0)]);
        // A damaged entry is skipped, its neighbours kept.
        assert_eq!(decode_samples("call:x.1,2.y,3-z,4.2-5", &["call".into()]), vec![stored("call", 4, 5, 2)]);
    }

    #[test]
    fn unknown_kinds_are_refused_with_suggestions() {
        assert!(validate_kinds(&["function_item".into(), "ERROR".into()]).is_ok());
        let e = validate_kinds(&["function_itme".into()]).unwrap_err().to_string();
        assert!(e.contains("unknown node kind"), "{e}");
        let e = validate_kinds(&["functio".into()]).unwrap_err().to_string();
        assert!(e.contains("function_item") || e.contains("function_definition"), "{e}");
        assert!(validate_kinds(&[]).is_err());
    }

    #[test]
    fn a_typo_in_a_kind_gets_the_kind_it_misspells() {
        let e = validate_kinds(&["funtion_definition".into()]).unwrap_err().to_string();
        assert!(e.contains("did you mean function_definition"), "{e}");
        let e = validate_kinds(&["class_defintion".into()]).unwrap_err().to_string();
        assert!(e.contains("did you mean class_definition"), "{e}");
    }

    #[test]
    fn an_enormous_kind_or_field_is_refused_at_once_without_echoing_it() {
        let huge = "a".repeat(1_500_000);
        let t = std::time::Instant::now();
        let e = validate_kinds(std::slice::from_ref(&huge)).unwrap_err().to_string();
        assert!(e.contains("node kind too long: 1500000 bytes"), "{e}");
        assert!(e.len() < 300, "the error quotes only the start: {} bytes", e.len());
        let e = validate_field(&huge).unwrap_err().to_string();
        assert!(e.contains("field too long") && e.contains("e.g. name") && e.len() < 300, "{e}");
        assert!(t.elapsed() < std::time::Duration::from_secs(1), "{:?}", t.elapsed());
        let ok = "x".repeat(MAX_AST_NAME_BYTES);
        assert!(validate_kinds(&[ok]).unwrap_err().to_string().contains("unknown node kind"));
    }
}
