//! What handlers share below the router: extractors that answer every failure
//! with the error contract ([`ApiJson`], [`ApiQuery`]), where a request names its
//! repository ([`selector`]: the `x-docdex-repo` header, then the body, then
//! `?repo=`), path confinement ([`confine`]), line ranges, and running an engine
//! call on the blocking pool ([`blocking`]). Every endpoint file and the MCP
//! handler import these; this file imports none of them.

use super::error::ApiError;
use crate::engine::protocol::RepoRef;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, StatusCode};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::path::{Component, Path};

/// Header naming the repository of a request.
pub const REPO_HEADER: &str = "x-docdex-repo";

/// `?repo=`: the repository, when not given by header.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct RepoQuery {
    /// The repository: absolute path, file:// URI or repo id (defaults to the served repo).
    #[serde(default)]
    pub repo: Option<String>,
}

/// The selector a request carries: header first, then body, then query. The header is read
/// as UTF-8 ([`repo_header_is_one_text`] has refused it otherwise): read as visible ASCII
/// only, a path such as `/home/josé/app` was dropped and the body's or the default
/// repository answered in its place.
pub fn selector(headers: &HeaderMap, body: Option<&str>, query: Option<&str>) -> Option<String> {
    let header = headers.get(REPO_HEADER).and_then(|v| std::str::from_utf8(v.as_bytes()).ok());
    header.or(body).or(query).map(str::to_string)
}

/// Refuses a request whose `x-docdex-repo` is not UTF-8 or is given more than once (`400
/// bad_request`), rather than answering from another repository than the one it names.
pub async fn repo_header_is_one_text(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let values: Vec<_> = req.headers().get_all(REPO_HEADER).iter().collect();
    let why = match values.as_slice() {
        [] => None,
        [one] if std::str::from_utf8(one.as_bytes()).is_ok() => None,
        [_] => Some(format!(
            "the {REPO_HEADER} header is not UTF-8: send the path as UTF-8, or as a file:// URI with percent-encoding"
        )),
        many => Some(format!("the {REPO_HEADER} header is given {} times: name one repository", many.len())),
    };
    match why {
        Some(why) => ApiError::bad_request(why).into_response(),
        None => next.run(req).await,
    }
}

/// Runs an engine call on the blocking pool.
pub async fn blocking<T, F>(f: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ApiError> + Send + 'static,
{
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", format!("request worker failed: {e}"))
    })?
}

/// Parses `A-B` or `A` into an inclusive line range.
pub fn parse_lines(s: &str) -> Result<(u32, u32), ApiError> {
    let bad = || {
        ApiError::bad_request(format!("bad lines {}: use A-B, e.g. 10-40, or a single line", crate::error::quoted(s)))
    };
    match s.split_once('-') {
        Some((a, b)) => Ok((a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?)),
        None => {
            let a = s.trim().parse().map_err(|_| bad())?;
            Ok((a, a))
        }
    }
}

/// Refuses a user-given path that leaves the repository: an absolute path outside its root,
/// or a relative one whose `..` climbs above it. Symlinks are not followed here: the engine
/// only answers from what it indexed, which never includes files outside the root. A path in
/// a registered source (`//notes/pool.md`) is refused saying sources are indexed as text only
/// (these endpoints read the repository's own files).
pub fn confine(repo: &RepoRef, path: &str) -> Result<(), ApiError> {
    let outside = || {
        let source = crate::engine::protocol::source_text_only(repo, path);
        ApiError::from(
            source.unwrap_or_else(|| crate::Error::OutsideRepo { path: path.to_string(), repo: repo.root.clone() }),
        )
    };
    let p = Path::new(path.trim());
    let relative = if p.is_absolute() {
        if let Ok(real) = std::fs::canonicalize(p) {
            return if real.starts_with(&repo.root) { Ok(()) } else { Err(outside()) };
        }
        // Not on disk: judge it by its text, `..` included.
        p.strip_prefix(&repo.root).map_err(|_| outside())?
    } else {
        p
    };
    let mut depth: i64 = 0;
    for c in relative.components() {
        match c {
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return Err(outside()),
        }
        if depth < 0 {
            return Err(outside());
        }
    }
    Ok(())
}

/// A JSON request body whose every failure (unreadable, too large, not JSON, wrong shape)
/// answers with the error contract instead of axum's plain-text rejection.
#[derive(Debug, Clone)]
pub struct ApiJson<T>(pub T);

/// A type [`ApiJson`] reads a body into, and what it refuses beyond what serde parses: serde
/// ignores a top-level field the type does not declare, so a misspelt one (`path_prefx`,
/// `budjet`) changed the answer without a word (an unfiltered search, a context pack 26 times
/// the budget asked for). The fields a body may carry are its schema's properties, the same the
/// OpenAPI document lists, plus [`JsonBody::ALIASES`].
pub trait JsonBody: DeserializeOwned + JsonSchema + 'static {
    /// Names accepted beside the schema's properties: serde aliases, which schemas do not list.
    const ALIASES: &'static [&'static str] = &[];
    /// Whether a top-level field the body does not know is refused (`400 bad_request`).
    /// OpenAI's chat body is open: its clients send fields docdex does not use.
    const STRICT: bool = true;
}

impl<S, T> FromRequest<S> for ApiJson<T>
where
    T: JsonBody,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let content_type = req.headers().get(axum::http::header::CONTENT_TYPE).map(|v| v.to_str().unwrap_or(""));
        if !content_type.is_some_and(is_json_media_type) {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                format!(
                    "send the body as JSON with `Content-Type: application/json` (got {})",
                    content_type.map_or("no Content-Type".to_string(), |c| format!("{c:?}"))
                ),
            ));
        }
        let limit = req.extensions().get::<BodyLimit>().map(|l| l.0).unwrap_or(0);
        let route = format!("{} {}", req.method(), req.uri().path());
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if let Some(stalled) = stalled_body(&rejection) {
                ApiError::new(StatusCode::REQUEST_TIMEOUT, "request_timeout", stalled)
            } else if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::payload_too_large(limit)
            } else {
                ApiError::bad_request(format!("could not read the request body: {}", rejection.body_text()))
            }
        })?;
        if bytes.is_empty() {
            return Err(ApiError::bad_request("empty request body: send a JSON object"));
        }
        let body: T = serde_json::from_slice(&bytes).map_err(|e| match not_an_object(&bytes) {
            Some(kind) => ApiError::bad_request(format!(
                "invalid JSON body: {route} takes a JSON object ({{\"field\": value, ...}}), not {kind}; its fields: {} (GET /v1/openapi.json describes them)",
                body_fields::<T>().join(", ")
            )),
            None => ApiError::bad_request(format!("invalid JSON body: {}", field_problem::<T>(&bytes, &e))),
        })?;
        if T::STRICT {
            refuse_unknown_fields::<T>(&bytes, &route)?;
        }
        Ok(ApiJson(body))
    }
}

/// What `bytes` holds when it is well-formed JSON but no object (`a list`, `the string "x"`):
/// serde would name the request type (`expected struct SearchBody`), which means nothing to a
/// caller.
fn not_an_object(bytes: &[u8]) -> Option<String> {
    let value = serde_json::from_slice::<serde_json::Value>(bytes).ok()?;
    (!value.is_object()).then(|| crate::error::described(&value))
}

/// Why `T` could not read `bytes`, naming the field at fault and what it takes as MCP tool
/// calls do (`` `limit` takes an integer of at least 0 (or null), not the string "5" ``):
/// serde's words named no field (`invalid type: string "5", expected usize`). A syntax error,
/// a missing field and a fault no field can be found for keep serde's words ([`body_problem`]).
fn field_problem<T: JsonBody>(bytes: &[u8], e: &serde_json::Error) -> String {
    let named = || {
        let value = serde_json::from_slice::<serde_json::Value>(bytes).ok()?;
        super::arguments::named(&body_schema::<T>(), &value, e)
    };
    match e.is_data().then(named).flatten() {
        Some(words) => words,
        None => super::arguments::plain_types(&body_problem(bytes, e)),
    }
}

/// `T`'s schema with every subschema inline (a flattened request's fields among the
/// properties), computed once per type.
fn body_schema<T: JsonBody>() -> std::sync::Arc<serde_json::Value> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    static CACHE: OnceLock<Mutex<HashMap<std::any::TypeId, Arc<serde_json::Value>>>> = OnceLock::new();
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    let schema = cache.entry(std::any::TypeId::of::<T>()).or_insert_with(|| {
        let settings = schemars::generate::SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true);
        Arc::new(settings.into_generator().into_root_schema_for::<T>().to_value())
    });
    Arc::clone(schema)
}

/// serde's message for a body `T` could not read, less a position that points nowhere: a
/// field of a flattened struct (the chat body's `temperature`) is read from a buffered copy of
/// the object, so its error, and a missing field's, is placed at the object's end. There the
/// message names the field itself (`temperature: expected a number, got "hot"`); a position
/// inside the body, and every syntax error's, is kept.
fn body_problem(bytes: &[u8], e: &serde_json::Error) -> String {
    let text = e.to_string();
    let Some(last) = bytes.iter().rposition(|b| !b.is_ascii_whitespace()) else {
        return text;
    };
    let line = 1 + bytes[..last].iter().filter(|b| **b == b'\n').count();
    let column = last - bytes[..last].iter().rposition(|b| *b == b'\n').map_or(0, |nl| nl + 1) + 1;
    if !e.is_data() || (e.line(), e.column()) != (line, column) {
        return text;
    }
    let at = format!(" at line {} column {}", e.line(), e.column());
    text.strip_suffix(&at).map_or(text.clone(), str::to_string)
}

/// `400 bad_request` naming the first top-level field of `bytes` that `T` does not take, with
/// the fields it does. Read after `T` parsed, so a malformed body keeps serde's message.
fn refuse_unknown_fields<T: JsonBody>(bytes: &[u8], route: &str) -> Result<(), ApiError> {
    let Ok(keys) = serde_json::from_slice::<std::collections::BTreeMap<String, serde::de::IgnoredAny>>(bytes) else {
        return Ok(());
    };
    let known = body_fields::<T>();
    let Some(unknown) = keys.keys().find(|k| !known.contains(k) && !T::ALIASES.contains(&k.as_str())) else {
        return Ok(());
    };
    let aliases = match T::ALIASES {
        [] => String::new(),
        names => format!("; also spelt {}", names.join(", ")),
    };
    Err(ApiError::bad_request(format!(
        "unknown field {} in the body of {route}: it takes {}{aliases} (GET /v1/openapi.json describes them)",
        crate::error::quoted(unknown),
        known.join(", ")
    )))
}

/// The top-level properties of `T`'s schema, computed once per type.
fn body_fields<T: JsonBody>() -> std::sync::Arc<Vec<String>> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    static CACHE: OnceLock<Mutex<HashMap<std::any::TypeId, Arc<Vec<String>>>>> = OnceLock::new();
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    let fields = cache.entry(std::any::TypeId::of::<T>()).or_insert_with(|| {
        let schema = schemars::schema_for!(T).to_value();
        let mut names = Vec::new();
        schema_properties(&schema, &schema, &mut names, 0);
        Arc::new(names)
    });
    Arc::clone(fields)
}

/// Collects the property names of `schema`, through `$ref`s into `root`'s definitions and the
/// `allOf` / `anyOf` / `oneOf` a flattened field or enum makes. MCP tool calls check their
/// arguments against the same names (`mcp::tools`).
pub(crate) fn schema_properties(
    schema: &serde_json::Value,
    root: &serde_json::Value,
    out: &mut Vec<String>,
    depth: usize,
) {
    if depth > 16 {
        return;
    }
    if let Some(target) = schema.get("$ref").and_then(|r| r.as_str()).and_then(|r| r.strip_prefix('#')) {
        if let Some(def) = root.pointer(target) {
            schema_properties(def, root, out, depth + 1);
        }
    }
    if let Some(props) = schema.get("properties").and_then(|p| p.as_object()) {
        out.extend(props.keys().filter(|k| !out.contains(k)).cloned().collect::<Vec<_>>());
    }
    for combinator in ["allOf", "anyOf", "oneOf"] {
        for sub in schema.get(combinator).and_then(|v| v.as_array()).into_iter().flatten() {
            schema_properties(sub, root, out, depth + 1);
        }
    }
}

/// The message of a body that stopped arriving ([`BodyStalled`](super::listen::BodyStalled)),
/// found anywhere in the rejection's cause chain.
pub(crate) fn stalled_body(rejection: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cause = Some(rejection);
    while let Some(e) = cause {
        if let Some(stalled) = e.downcast_ref::<super::listen::BodyStalled>() {
            return Some(stalled.to_string());
        }
        cause = e.source();
    }
    None
}

/// `application/json` or `application/<something>+json`, parameters (`; charset=utf-8`) allowed.
pub fn is_json_media_type(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    essence == "application/json" || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// The configured body limit, put in request extensions so rejections can name it.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimit(pub usize);

/// A query string whose failures (a missing or malformed parameter) answer with the error
/// contract instead of axum's plain-text rejection.
#[derive(Debug, Clone)]
pub struct ApiQuery<T>(pub T);

impl<S, T> axum::extract::FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| ApiQuery(q.0))
            .map_err(|rejection| ApiError::bad_request(query_problem(&rejection.body_text())))
    }
}

/// The query parameters a route takes: `listed` (its types' schema properties, as the OpenAPI
/// document lists them) and the serde `aliases` also read (`q` for `query`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryNames {
    /// The parameters, as documented.
    pub listed: Vec<String>,
    /// Other spellings serde accepts.
    pub aliases: Vec<String>,
}

/// The query parameters `T` reads: its schema's properties, and the names its derived
/// `Deserialize` accepts besides (serde aliases, which schemas do not list).
pub fn query_names<T: DeserializeOwned + JsonSchema>() -> QueryNames {
    let schema = schemars::schema_for!(T).to_value();
    let mut listed = Vec::new();
    schema_properties(&schema, &schema, &mut listed, 0);
    let aliases = serde_fields::<T>().iter().map(|f| f.to_string()).filter(|f| !listed.contains(f)).collect();
    QueryNames { listed, aliases }
}

/// The field names (aliases included) a derived `Deserialize` of a struct passes to
/// `deserialize_struct`; none for a struct with a flattened field or a hand-written impl.
fn serde_fields<T: DeserializeOwned>() -> &'static [&'static str] {
    let seen = std::cell::Cell::new(&[][..]);
    let _ = T::deserialize(FieldProbe(&seen));
    seen.get()
}

/// A deserializer that reads nothing, noting the fields a struct asks it for.
struct FieldProbe<'a>(&'a std::cell::Cell<&'static [&'static str]>);

impl<'de> serde::Deserializer<'de> for FieldProbe<'_> {
    type Error = serde::de::value::Error;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(serde::de::Error::custom("field probe"))
    }

    fn deserialize_struct<V: serde::de::Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.set(fields);
        Err(serde::de::Error::custom("field probe"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

/// The query parameters of each `GET` route that reads a query string, by its path.
pub type RouteQueries = std::sync::Arc<std::collections::HashMap<&'static str, QueryNames>>;

/// Refuses (`400 bad_request`) a `GET` whose query string holds a parameter its route does not
/// take: serde ignores it, so a misspelt one (`directon=out`, `path_prefx=src`, `limt=1`)
/// answered with the defaults as if it were right. JSON bodies and MCP arguments were already
/// held to their names. Only `GET`s: a `POST` reads its body, and OpenAI-style clients add
/// query parameters of their own (`api-version`) to the chat route.
pub async fn known_query_only(
    axum::extract::State(routes): axum::extract::State<RouteQueries>,
    req: Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let route = req.extensions().get::<axum::extract::MatchedPath>().map(|m| m.as_str().to_string());
    let is_get = req.method() == axum::http::Method::GET || req.method() == axum::http::Method::HEAD;
    let names = route.as_deref().filter(|_| is_get).and_then(|r| routes.get(r));
    if let (Some(route), Some(names), Some(query)) = (route.as_deref(), names, req.uri().query()) {
        if let Some(e) = unknown_query_parameter(query, &format!("GET {route}"), names) {
            return e.into_response();
        }
    }
    next.run(req).await
}

/// `400 bad_request` naming the first parameter of `query` that is not in `names`.
fn unknown_query_parameter(query: &str, route: &str, names: &QueryNames) -> Option<ApiError> {
    let known = |k: &str| names.listed.iter().chain(&names.aliases).any(|n| n == k);
    let (unknown, _) = url::form_urlencoded::parse(query.as_bytes()).find(|(k, _)| !known(k))?;
    let takes = match names.listed.as_slice() {
        [] => "it takes none".to_string(),
        listed => format!("it takes {}", listed.join(", ")),
    };
    Some(ApiError::bad_request(format!(
        "unknown query parameter {} for {route}: {takes} (GET /v1/openapi.json describes them)",
        crate::error::quoted(&unknown)
    )))
}

/// axum's rejection ("Failed to deserialize query string: missing field `file`") in the
/// words of the API, with where to look the parameters up.
fn query_problem(axum_text: &str) -> String {
    let detail = axum_text.strip_prefix("Failed to deserialize query string: ").unwrap_or(axum_text);
    format!(
        "bad query string: {}; GET /v1/openapi.json lists each route's parameters",
        detail.replace("missing field", "missing query parameter")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_string_problems_read_as_the_api_speaks() {
        assert_eq!(
            query_problem("Failed to deserialize query string: missing field `file`"),
            "bad query string: missing query parameter `file`; GET /v1/openapi.json lists each route's parameters"
        );
    }

    /// A position at the body's end (where serde places a flattened field's error or a
    /// missing field) is dropped; one inside the body, or a syntax error's, stays.
    #[test]
    fn a_body_problem_keeps_only_a_position_that_points_at_the_fault() {
        #[derive(Debug, serde::Deserialize)]
        struct Body {
            #[allow(dead_code)]
            n: u32,
            #[serde(flatten)]
            #[allow(dead_code)]
            sampling: crate::engine::llm::Sampling,
        }
        let problem = |body: &str| body_problem(body.as_bytes(), &serde_json::from_str::<Body>(body).unwrap_err());
        assert_eq!(problem("{\"n\": 1, \"temperature\": \"hot\"}\n"), "temperature: expected a number, got \"hot\"");
        assert_eq!(problem("{\n  \"n\": 2,\n  \"top_p\": true\n}"), "top_p: expected a number, got true");
        assert_eq!(problem("{}"), "missing field `n`");
        let inside = problem("{\"n\": \"x\", \"top_p\": 1}");
        assert!(inside.starts_with("invalid type: string") && inside.ends_with("at line 1 column 9"), "{inside}");
        assert!(problem("{\"n\": 1,").contains("at line 1 column"), "a syntax error keeps its place");
    }

    #[test]
    fn a_query_parameter_a_route_does_not_take_is_named_with_those_it_does() {
        #[derive(Debug, serde::Deserialize, JsonSchema)]
        #[allow(dead_code)]
        struct Impact {
            file: String,
            #[serde(default, alias = "q")]
            depth: Option<u32>,
        }
        let names = query_names::<Impact>();
        assert_eq!(names, QueryNames { listed: vec!["file".into(), "depth".into()], aliases: vec!["q".into()] });
        let refused = |q: &str| unknown_query_parameter(q, "GET /v1/graph/impact", &names).map(|e| e.message);
        assert_eq!(refused("file=a.py&depth=3&q=2"), None);
        assert_eq!(refused(""), None);
        assert_eq!(
            refused("file=a.py&dept=3").as_deref(),
            Some("unknown query parameter \"dept\" for GET /v1/graph/impact: it takes file, depth (GET /v1/openapi.json describes them)")
        );
        assert!(refused("fi%6Ce=a&x%20y=1").is_some_and(|m| m.contains("\"x y\"")), "keys are decoded");
    }

    #[test]
    fn line_ranges_parse() {
        assert_eq!(parse_lines("3-9").unwrap(), (3, 9));
        assert_eq!(parse_lines(" 4 ").unwrap(), (4, 4));
        assert_eq!(parse_lines("a-b").unwrap_err().code, "bad_request");
    }

    fn repo() -> RepoRef {
        RepoRef::new("/srv/repo".into(), "f".repeat(64), "/tmp/state".into())
    }

    #[test]
    fn paths_stay_inside_the_repository() {
        let r = repo();
        for ok in ["src/a.rs", "src/../b.rs", "./c", "/srv/repo/src/a.rs", "a/b/../../c"] {
            assert!(confine(&r, ok).is_ok(), "{ok}");
        }
        for bad in ["../x", "src/../../x", "/etc/passwd", "/srv/repository/a", "a/../../b", "/srv/repo/../../etc/x"] {
            let e = confine(&r, bad).unwrap_err();
            assert_eq!((e.code, e.status), ("path_outside_repo", StatusCode::FORBIDDEN), "{bad}");
        }
    }
}
