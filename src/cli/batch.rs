//! `docdex search --batch FILE`: many queries in one process, one JSON result per query.

use super::output::{count, visible, Out};
use crate::engine::protocol::{BatchItem, SearchRequest};
use crate::engine::Engine;
use crate::error::Error;
use std::path::Path;

/// Reads the queries, runs them through one engine call and prints one JSON line per query
/// (or a line per query for people). Exit 1 when any query failed (every answer is printed
/// first), so a script notices without reading every line.
pub fn run(
    engine: &Engine,
    out: &Out,
    repo: &Path,
    file: &Path,
    defaults: &SearchRequest,
    json: bool,
) -> anyhow::Result<std::process::ExitCode> {
    let text = std::fs::read_to_string(file).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::BadRequest(format!("the query file {} does not exist", file.display())),
        _ => Error::io("reading the query file", file, e),
    })?;
    let reqs = parse(&text, defaults)?;
    let items = engine.search_batch(repo, &reqs)?;
    let failed = items.iter().filter(|i| i.error.is_some()).count();
    for item in &items {
        if json {
            out.json_line(&serde_json::to_string(item)?);
        } else {
            out.line(&visible(&describe(item)));
        }
    }
    if !json || failed > 0 {
        out.note(&format!("{}, {failed} failed", count(items.len(), "query")));
    }
    Ok(if failed > 0 { std::process::ExitCode::FAILURE } else { std::process::ExitCode::SUCCESS })
}

fn describe(item: &BatchItem) -> String {
    match (&item.response, &item.error) {
        (Some(r), _) => {
            let top = r.results.first().map(|h| format!("{}:{}-{}", h.path, h.line_start, h.line_end));
            let note = r.note.as_ref().map(|n| format!(" (note: {n})")).unwrap_or_default();
            format!(
                "{:>4}  {}  → {}; top {}{note}",
                item.index,
                item.query,
                count(r.total_hits, "hit"),
                top.unwrap_or("-".into())
            )
        }
        (None, Some(e)) => format!("{:>4}  {}  → error: {e}", item.index, item.query),
        (None, None) => format!("{:>4}  {}", item.index, item.query),
    }
}

/// The fields a query object takes: those of a search request, as `POST /v1/search` and MCP's
/// `docdex_search` take them (the repository is the command line's).
const QUERY_FIELDS: [&str; 6] = ["query", "limit", "cursor", "path_prefix", "lang", "libs"];

/// A JSON array, or JSON lines; each entry a query string or a search request object (its
/// unset fields taken from the command line's flags). An entry is named by its line in JSON
/// lines and by its place in an array. A field a request does not take (`path_prefx`) is an
/// error, as over HTTP and MCP: ignored, the misspelt filter searched the whole repository.
fn parse(text: &str, defaults: &SearchRequest) -> Result<Vec<SearchRequest>, Error> {
    let values: Vec<(String, serde_json::Value)> = match text.trim_start().starts_with('[') {
        true => serde_json::from_str::<Vec<serde_json::Value>>(text)
            .map_err(|e| Error::BadRequest(format!("the query file is not a JSON array: {e}")))?
            .into_iter()
            .enumerate()
            .map(|(i, v)| (format!("query {}", i + 1), v))
            .collect(),
        false => text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(n, l)| {
                let at = format!("query file line {}", n + 1);
                line_value(l).map(|v| (at.clone(), v)).map_err(|e| Error::BadRequest(format!("{at}: {e}")))
            })
            .collect::<Result<_, _>>()?,
    };
    values.into_iter().map(|(at, v)| request(&at, v, defaults)).collect()
}

/// One line of a lines file: JSON when it starts as a JSON string or object does (`"`, `{`),
/// else the line itself is the query, so a plain list of queries, one per line, works as is.
fn line_value(line: &str) -> Result<serde_json::Value, String> {
    let text = line.trim();
    match text.starts_with(['{', '"']) {
        true => serde_json::from_str(text).map_err(|e| {
            format!("not valid JSON ({e}); a line is a query in plain words, a JSON string or a search request object")
        }),
        false => Ok(serde_json::Value::String(text.to_string())),
    }
}

/// One entry of the query file as a request, `at` naming it in errors.
fn request(at: &str, v: serde_json::Value, defaults: &SearchRequest) -> Result<SearchRequest, Error> {
    match v {
        serde_json::Value::String(query) => Ok(SearchRequest { query, ..defaults.clone() }),
        serde_json::Value::Object(mut o) => {
            if let Some(k) = o.keys().find(|k| !QUERY_FIELDS.contains(&k.as_str())) {
                return Err(Error::BadRequest(format!(
                    "{at}: unknown field {}: a query takes {}",
                    crate::error::quoted(k),
                    QUERY_FIELDS.join(", ")
                )));
            }
            if let Ok(serde_json::Value::Object(d)) = serde_json::to_value(defaults) {
                for (k, v) in d {
                    if !v.is_null() {
                        o.entry(k).or_insert(v);
                    }
                }
            }
            serde_json::from_value(serde_json::Value::Object(o)).map_err(|e| Error::BadRequest(format!("{at}: {e}")))
        }
        other => Err(Error::BadRequest(format!(
            "{at}: a query is a string or a search request object ({{\"query\": ..., \"limit\": 3}}), not {}",
            crate::error::described(&other)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_and_lines() {
        let d = SearchRequest { limit: Some(3), ..Default::default() };
        let a = parse(r#"["alpha", {"query": "beta", "limit": 5}]"#, &d).unwrap();
        assert_eq!((a[0].query.as_str(), a[0].limit), ("alpha", Some(3)));
        assert_eq!((a[1].query.as_str(), a[1].limit), ("beta", Some(5)));
        let l = parse("\"one\"\n\n{\"query\": \"two\", \"lang\": \"rust\"}\n", &d).unwrap();
        assert_eq!(l.len(), 2);
        assert_eq!(l[1].lang.as_deref(), Some("rust"));
        // Plain lines are queries as written; a line that starts as JSON must be JSON.
        let plain = parse("where are sessions expired\n\n  retry with backoff  \n{\"query\": \"x\"}\n", &d).unwrap();
        let texts: Vec<&str> = plain.iter().map(|r| r.query.as_str()).collect();
        assert_eq!(texts, ["where are sessions expired", "retry with backoff", "x"]);
        let broken = parse("fine\n{\"query\": \n", &d).unwrap_err().to_string();
        assert!(broken.contains("line 2") && broken.contains("not valid JSON"), "{broken}");
        let wrong = parse("[1]", &d).unwrap_err().to_string();
        assert!(wrong.contains("query 1") && wrong.contains("not the number 1"), "{wrong}");
        let typo = parse("\"one\"\n\n{\"query\": \"two\", \"path_prefx\": \"src\"}\n", &d).unwrap_err().to_string();
        assert!(typo.contains("line 3") && typo.contains("path_prefx") && typo.contains("path_prefix"), "{typo}");
    }
}
