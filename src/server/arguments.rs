//! Saying which tool argument or body field is wrong, and what it takes. Every tool's argument
//! type, and many HTTP bodies, are an engine request flattened beside the repository, and serde
//! reports a bad value without its name, in Rust's words (`docdex_search {"limit": "5"}` and
//! `POST /v1/search` answered `invalid type: string "5", expected usize`): a client could not
//! tell which field to fix, nor what a `usize` is. The field is found by the schema (a tool's
//! `inputSchema`, a body's schema), and named with the type, range or values the schema lists.

use serde_json::Value;

/// The words for a tool call whose arguments serde refused with `error`: the argument at fault
/// and what it takes, when one can be named; serde's own message otherwise (a missing field,
/// which serde names).
pub fn explain(schema: &Value, args: &Value, error: &serde_json::Error) -> String {
    named(schema, args, error).unwrap_or_else(|| plain_types(&error.to_string()))
}

/// [`explain`]'s words when they can name the argument at fault; `None` when they cannot.
pub fn named(schema: &Value, args: &Value, error: &serde_json::Error) -> Option<String> {
    let serde_words = error.to_string();
    let props = schema.get("properties").and_then(Value::as_object)?;
    let given = args.as_object()?;
    let misfit = given.iter().find_map(|(name, value)| {
        let prop = props.get(name)?;
        (!fits(prop, value)).then_some((name, value, prop))
    });
    if let Some((name, value, prop)) = misfit {
        return Some(format!("`{name}` takes {}, not {}", expected(prop), crate::error::described(value)));
    }
    // The type fits, the value does not (an integer past u32, a string no variant spells):
    // serde quotes the value, so the argument holding it is the one.
    let (name, _) = given.iter().find(|(name, value)| props.contains_key(*name) && quotes(&serde_words, value))?;
    Some(format!("`{name}`: {}", plain_types(&serde_words)))
}

/// Whether `value` has a type (or, for an enumeration, a value) `prop` allows.
fn fits(prop: &Value, value: &Value) -> bool {
    let consts = constants(prop);
    if !consts.is_empty() {
        return value.as_str().is_some_and(|v| consts.iter().any(|c| c == v)) || (value.is_null() && nullable(prop));
    }
    let types = types(prop);
    types.is_empty()
        || types.iter().any(|t| match t.as_str() {
            "string" => value.is_string(),
            "integer" => {
                value.as_i64().is_some_and(|n| prop.get("minimum").and_then(Value::as_i64).is_none_or(|m| n >= m))
            }
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            "object" => value.is_object(),
            "array" => value.is_array(),
            "null" => value.is_null(),
            _ => true,
        })
}

/// The `type` of a property, one name or several.
fn types(prop: &Value) -> Vec<String> {
    match prop.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).map(str::to_string).collect(),
        _ => Vec::new(),
    }
}

/// The `const` values of an enumeration (`oneOf` / `anyOf` of consts, nested once for an
/// optional one).
fn constants(prop: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for key in ["oneOf", "anyOf"] {
        for sub in prop.get(key).and_then(Value::as_array).into_iter().flatten() {
            if let Some(c) = sub.get("const").and_then(Value::as_str) {
                out.push(c.to_string());
            }
            out.extend(constants(sub));
        }
    }
    out
}

fn nullable(prop: &Value) -> bool {
    ["oneOf", "anyOf"].iter().any(|key| {
        prop.get(*key)
            .and_then(Value::as_array)
            .is_some_and(|subs| subs.iter().any(|s| s.get("type").and_then(Value::as_str) == Some("null")))
    })
}

/// What `prop` takes, in words: "an integer from 1 to 64 (or null)", "one of `in`, `out`, `both`".
fn expected(prop: &Value) -> String {
    let null = if nullable(prop) || types(prop).iter().any(|t| t == "null") { " (or null)" } else { "" };
    let consts = constants(prop);
    if !consts.is_empty() {
        let values: Vec<String> = consts.iter().map(|c| format!("`{c}`")).collect();
        return format!("one of {}{null}", values.join(", "));
    }
    let bound = |key: &str| prop.get(key).filter(|v| v.is_number()).map(Value::to_string);
    let range = match (bound("minimum"), bound("exclusiveMinimum"), bound("maximum")) {
        (Some(lo), _, Some(hi)) => format!(" from {lo} to {hi}"),
        (_, Some(lo), Some(hi)) => format!(" above {lo} and at most {hi}"),
        (Some(lo), _, None) => format!(" of at least {lo}"),
        (_, Some(lo), None) => format!(" above {lo}"),
        (None, None, Some(hi)) => format!(" of at most {hi}"),
        (None, None, None) => String::new(),
    };
    let names: Vec<&str> = types(prop)
        .iter()
        .filter_map(|t| match t.as_str() {
            "string" => Some("a string"),
            "integer" => Some("an integer"),
            "number" => Some("a number"),
            "boolean" => Some("true or false"),
            "object" => Some("a JSON object"),
            "array" => Some("a list"),
            _ => None,
        })
        .collect();
    match names.as_slice() {
        [] => "another value (tools/list gives its schema)".to_string(),
        [one] if *one == "an integer" || *one == "a number" => format!("{one}{range}{null}"),
        many => format!("{}{null}", many.join(" or ")),
    }
}

/// Whether serde's `message` quotes `value` (serde writes integers and floats in backticks,
/// strings in double quotes or, for a variant, backticks).
fn quotes(message: &str, value: &Value) -> bool {
    match value {
        Value::Number(n) => message.contains(&format!("`{n}`")),
        Value::String(s) if !s.is_empty() => message.contains(&format!("{s:?}")) || message.contains(&format!("`{s}`")),
        _ => false,
    }
}

/// serde's message with Rust's integer and float names in words.
pub fn plain_types(message: &str) -> String {
    let mut out = message.to_string();
    for (rust, words) in [
        ("expected usize", "expected an integer of at least 0"),
        ("expected u64", "expected an integer of at least 0"),
        ("expected u32", "expected an integer from 0 to 4294967295"),
        ("expected u16", "expected an integer from 0 to 65535"),
        ("expected u8", "expected an integer from 0 to 255"),
        ("expected f32", "expected a number"),
        ("expected f64", "expected a number"),
    ] {
        out = out.replace(rust, words);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refused(schema: &Value, args: Value) -> String {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Probe {
            query: String,
            limit: Option<u32>,
            direction: Option<String>,
        }
        let e = serde_json::from_value::<Probe>(args.clone()).expect_err("refused");
        explain(schema, &args, &e)
    }

    #[test]
    fn the_argument_at_fault_is_named_with_what_it_takes() {
        let schema = json!({"properties": {
            "query": {"type": "string"},
            "limit": {"type": ["integer", "null"], "minimum": 1, "maximum": 64},
            "direction": {"anyOf": [{"oneOf": [{"const": "in"}, {"const": "out"}]}, {"type": "null"}]},
        }});
        let m = refused(&schema, json!({"query": "a", "limit": "5"}));
        assert_eq!(m, "`limit` takes an integer from 1 to 64 (or null), not the string \"5\"");
        let m = refused(&schema, json!({"query": 7}));
        assert_eq!(m, "`query` takes a string, not the number 7");
        let m = refused(&schema, json!({"query": "a", "limit": -1}));
        assert!(m.starts_with("`limit` takes an integer from 1 to 64"), "{m}");
        // The type fits, the value is past u32: serde quotes it, so its argument is named.
        let m = refused(&schema, json!({"query": "a", "limit": 10_000_000_000u64}));
        assert_eq!(m, "`limit`: invalid value: integer `10000000000`, expected an integer from 0 to 4294967295");
        let m = refused(&schema, json!({"limit": 3}));
        assert_eq!(m, "missing field `query`");
        assert!(fits(&schema["properties"]["direction"], &json!("in")));
        assert!(!fits(&schema["properties"]["direction"], &json!("sideways")));
        assert_eq!(expected(&schema["properties"]["direction"]), "one of `in`, `out` (or null)");
    }
}
