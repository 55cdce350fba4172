//! The OpenAPI document (`GET /v1/openapi.json`) is generated from the same
//! table the router is built from, and from the handlers' own types: every
//! route is registered through [`Routes`], and [`Routes::get`] / [`Routes::post`]
//! read a handler's query, body and response types off its signature
//! ([`ApiQuery<T>`], [`ApiJson<T>`], `Json<T>`), so the document cannot drift from
//! the code. The schemas are the schemars ones the MCP tools use too: one schema
//! per type for both surfaces. A test checks that each documented operation is served.
//!
//! **Adding a route**: write the handler with the extractors of `extract`
//! (`ApiQuery<T>`, `ApiJson<T>`; `State`, `HeaderMap`, `Path` and `Extension` add
//! nothing) returning `Json<T>` or `Result<Json<T>, ApiError>`, then register it:
//! `routes.get("/v1/thing", thing, Operation::new("One line").describe("More."))`.
//! A handler whose types the document cannot read (it returns a bare `Response`,
//! or is a tower service) goes through [`Routes::route`] with its types named on the
//! [`Operation`] (`.query::<T>()`, `.body::<T>()`, `.response::<T>()`). Either way it
//! is listed; nothing else needs editing.

use super::error::ApiError;
use super::extract::{query_names, ApiJson, ApiQuery, QueryNames};
use axum::extract::{Extension, Path, State};
use axum::handler::Handler;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::sse::Sse;
use axum::response::Response;
use axum::routing::MethodRouter;
use axum::{Json, Router};
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};
use std::future::Future;

type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

fn schema_of<T: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    g.subschema_for::<T>()
}

fn params_of<T: JsonSchema>() -> Vec<Value> {
    let schema = SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator()
        .into_root_schema_for::<T>();
    let value = schema.to_value();
    let required: Vec<&str> =
        value["required"].as_array().map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    let Some(props) = value["properties"].as_object() else { return Vec::new() };
    props
        .iter()
        .map(|(name, s)| {
            let mut s = s.clone();
            let description = s.as_object_mut().and_then(|o| o.remove("description")).unwrap_or(Value::Null);
            json!({
                "name": name,
                "in": "query",
                "required": required.contains(&name.as_str()),
                "description": description,
                "schema": s,
            })
        })
        .collect()
}

/// How an operation answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Responds {
    /// `application/json` with the response schema.
    Json,
    /// `text/event-stream`.
    EventStream,
    /// `202 Accepted` with no body.
    Accepted,
}

/// One documented operation.
#[derive(Clone)]
pub struct Operation {
    /// HTTP method.
    pub method: Method,
    /// Path, with `{param}` segments.
    pub path: &'static str,
    /// One line.
    pub summary: &'static str,
    /// Longer text.
    pub description: &'static str,
    query: Vec<fn() -> Vec<Value>>,
    query_names: Vec<fn() -> QueryNames>,
    body: Option<SchemaFn>,
    response: Option<SchemaFn>,
    responds: Responds,
}

impl Operation {
    /// An operation answering JSON with no documented body yet.
    pub fn new(summary: &'static str) -> Operation {
        Operation {
            method: Method::GET,
            path: "",
            summary,
            description: "",
            query: Vec::new(),
            query_names: Vec::new(),
            body: None,
            response: None,
            responds: Responds::Json,
        }
    }

    /// The query, body and response read off `handler`'s signature, for a handler
    /// registered through [`Routes::route`] (wrapped in a layer, say).
    pub fn reads<H: DocumentedHandler<A>, A>(mut self, _handler: &H) -> Self {
        H::document(&mut self);
        self
    }

    /// Longer description.
    pub fn describe(mut self, text: &'static str) -> Self {
        self.description = text;
        self
    }

    /// Query parameters are the fields of `T` (call again to add another type's fields: a
    /// transport's own fields beside an engine request's).
    pub fn query<T: JsonSchema + DeserializeOwned>(mut self) -> Self {
        self.query.push(params_of::<T>);
        self.query_names.push(query_names::<T>);
        self
    }

    /// The query parameters a `GET` of this operation takes, when it reads a query string:
    /// what [`known_query_only`](super::extract::known_query_only) holds its requests to.
    pub fn query_parameters(&self) -> Option<QueryNames> {
        if self.query_names.is_empty() || self.method != Method::GET {
            return None;
        }
        let mut all = QueryNames::default();
        for names in &self.query_names {
            let more = names();
            all.listed.extend(more.listed.into_iter().filter(|n| !all.listed.contains(n)).collect::<Vec<_>>());
            all.aliases.extend(more.aliases);
        }
        Some(all)
    }

    /// The JSON request body is `T`.
    pub fn body<T: JsonSchema>(mut self) -> Self {
        self.body = Some(schema_of::<T>);
        self
    }

    /// The success response is `T` as JSON.
    pub fn response<T: JsonSchema>(mut self) -> Self {
        self.response = Some(schema_of::<T>);
        self
    }

    /// The response is a server-sent event stream (its events are `T`).
    pub fn event_stream<T: JsonSchema>(mut self) -> Self {
        self.response = Some(schema_of::<T>);
        self.responds = Responds::EventStream;
        self
    }

    /// The response is `202 Accepted`.
    pub fn accepted(mut self) -> Self {
        self.responds = Responds::Accepted;
        self
    }
}

/// What a handler argument adds to its operation: query parameters, a body, or nothing.
pub trait DocumentedInput {
    /// Records this argument's part of the request on `op`.
    fn document(_op: &mut Operation) {}
}

impl<S> DocumentedInput for State<S> {}
impl DocumentedInput for HeaderMap {}
impl DocumentedInput for Method {}
/// Path parameters are read off the route's `{segments}`.
impl<T> DocumentedInput for Path<T> {}
impl<T> DocumentedInput for Extension<T> {}

impl<T: JsonSchema + DeserializeOwned> DocumentedInput for ApiQuery<T> {
    fn document(op: &mut Operation) {
        op.query.push(params_of::<T>);
        op.query_names.push(query_names::<T>);
    }
}

impl DocumentedInput for super::mcp::sse::RpcBody {
    fn document(op: &mut Operation) {
        op.body = Some(schema_of::<serde_json::Value>);
    }
}

impl<T: JsonSchema> DocumentedInput for ApiJson<T> {
    fn document(op: &mut Operation) {
        op.body = Some(schema_of::<T>);
    }
}

/// A body whose refusal the handler answers itself (in the chat route's OpenAI shape).
impl<T: JsonSchema> DocumentedInput for Result<ApiJson<T>, ApiError> {
    fn document(op: &mut Operation) {
        op.body = Some(schema_of::<T>);
    }
}

/// What a handler's return type says of its success response.
pub trait DocumentedOutput {
    /// Records the response on `op`, unless the operation named one itself.
    fn document(_op: &mut Operation) {}
}

impl<T: JsonSchema> DocumentedOutput for Json<T> {
    fn document(op: &mut Operation) {
        op.response.get_or_insert(schema_of::<T>);
    }
}

impl<T: DocumentedOutput> DocumentedOutput for Result<T, ApiError> {
    fn document(op: &mut Operation) {
        T::document(op);
    }
}

/// Errors that need a header the contract has no field for (`Retry-After`).
impl<T: DocumentedOutput> DocumentedOutput for Result<T, Response> {
    fn document(op: &mut Operation) {
        T::document(op);
    }
}

impl<S> DocumentedOutput for Sse<S> {
    fn document(op: &mut Operation) {
        op.responds = Responds::EventStream;
    }
}

/// A bare status or response: the operation names what it answers (`.accepted()`,
/// `.response::<T>()`).
impl DocumentedOutput for StatusCode {}
impl DocumentedOutput for Response {}

/// A handler function whose arguments and result document themselves; implemented for
/// `async fn`s of up to six arguments, each [`DocumentedInput`], returning a
/// [`DocumentedOutput`].
pub trait DocumentedHandler<Args> {
    /// Records the handler's query, body and response on `op`.
    fn document(op: &mut Operation);
}

macro_rules! documented_handler {
    ($($arg:ident),*) => {
        impl<F, Fut, $($arg,)*> DocumentedHandler<($($arg,)*)> for F
        where
            F: FnOnce($($arg),*) -> Fut,
            Fut: Future,
            Fut::Output: DocumentedOutput,
            $($arg: DocumentedInput,)*
        {
            fn document(op: &mut Operation) {
                $(<$arg as DocumentedInput>::document(op);)*
                <Fut::Output as DocumentedOutput>::document(op);
            }
        }
    };
}

documented_handler!();
documented_handler!(A1);
documented_handler!(A1, A2);
documented_handler!(A1, A2, A3);
documented_handler!(A1, A2, A3, A4);
documented_handler!(A1, A2, A3, A4, A5);
documented_handler!(A1, A2, A3, A4, A5, A6);

/// A router under construction that documents every route it registers.
pub struct Routes<S> {
    router: Router<S>,
    ops: Vec<Operation>,
}

impl<S: Clone + Send + Sync + 'static> Default for Routes<S> {
    fn default() -> Self {
        Routes { router: Router::new(), ops: Vec::new() }
    }
}

impl<S: Clone + Send + Sync + 'static> Routes<S> {
    /// Registers `handler` for `GET path`, its query and response read off its signature.
    pub fn get<H, T, A>(self, path: &'static str, handler: H, op: Operation) -> Self
    where
        H: Handler<T, S> + DocumentedHandler<A>,
        T: 'static,
    {
        self.typed(Method::GET, path, axum::routing::get(handler), op, H::document)
    }

    /// Registers `handler` for `POST path`, its query, body and response read off its signature.
    pub fn post<H, T, A>(self, path: &'static str, handler: H, op: Operation) -> Self
    where
        H: Handler<T, S> + DocumentedHandler<A>,
        T: 'static,
    {
        self.typed(Method::POST, path, axum::routing::post(handler), op, H::document)
    }

    /// Like [`Routes::route`], with the types `document` reads off the handler.
    fn typed(
        self,
        method: Method,
        path: &'static str,
        handler: MethodRouter<S>,
        mut op: Operation,
        document: fn(&mut Operation),
    ) -> Self {
        document(&mut op);
        self.route(method, path, handler, op)
    }

    /// Registers `handler` for `method` at `path`, documented by `op` alone: for handlers
    /// [`Routes::get`] / [`Routes::post`] cannot read (a tower service, a bare `Response`).
    pub fn route(mut self, method: Method, path: &'static str, handler: MethodRouter<S>, op: Operation) -> Self {
        self.router = self.router.route(path, handler);
        self.ops.push(Operation { method, path, ..op });
        self
    }

    /// Registers `handler` (which answers several methods itself) at `path`.
    pub fn route_many(
        mut self,
        methods: &[Method],
        path: &'static str,
        handler: MethodRouter<S>,
        op: Operation,
    ) -> Self {
        self.router = self.router.route(path, handler);
        for m in methods {
            self.ops.push(Operation { method: m.clone(), path, ..op.clone() });
        }
        self
    }

    /// The documented operations so far.
    pub fn operations(&self) -> &[Operation] {
        &self.ops
    }

    /// The router and its operations.
    pub fn finish(self) -> (Router<S>, Vec<Operation>) {
        (self.router, self.ops)
    }
}

/// Integer inputs whose handler refuses values below `min` (or above `max`), by route and
/// name: the schemas read off the engine's types say `minimum: 0` for every unsigned integer,
/// and the document listed 0 for limits that answer `400 bad_request` to it. The MCP tools'
/// schemas are narrowed alike (`mcp::tools::RANGES`). A test checks that every entry names an
/// input of its route.
pub const RANGES: &[(&str, &str, u64, Option<u64>)] = &[
    ("/v1/open", "start_line", 1, None),
    ("/v1/open", "end_line", 1, None),
    ("/v1/open", "page", 1, None),
    ("/v1/symbols", "limit", 1, None),
    ("/v1/graph/impact", "depth", 1, Some(64)),
    ("/v1/graph/tests", "limit", 1, None),
    ("/v1/graph/diagnostics", "limit", 1, None),
    ("/v1/context", "budget", 200, Some(200_000)),
    ("/v1/audit/conflicts", "top", 1, Some(500)),
    ("/v1/audit/duplicates", "limit", 1, Some(10_000)),
    ("/v1/profile/search", "limit", 1, Some(100)),
    ("/v1/profile/list", "limit", 1, None),
    ("/v1/memory/recall", "limit", 1, None),
    ("/v1/memory", "limit", 1, None),
    ("/v1/dag/sessions", "limit", 1, None),
    ("/v1/dag/{session}", "limit", 1, None),
];

/// Sets `min` / `max` on an integer schema (a property or a query parameter's schema).
fn narrow(schema: &mut Value, min: u64, max: Option<u64>) {
    if let Some(obj) = schema.as_object_mut() {
        obj.insert("minimum".into(), min.into());
        if let Some(max) = max {
            obj.insert("maximum".into(), max.into());
        }
    }
}

/// Applies [`RANGES`] to `path`'s operation: its query parameters, and the properties of its
/// body schema, inline or behind a `$ref` into `schemas`.
fn narrow_operation(path: &str, operation: &mut Map<String, Value>, schemas: &mut Map<String, Value>) {
    for (_, field, min, max) in RANGES.iter().filter(|(route, ..)| *route == path) {
        for param in operation.get_mut("parameters").and_then(Value::as_array_mut).into_iter().flatten() {
            if param["name"] == *field && param["in"] == "query" {
                narrow(&mut param["schema"], *min, *max);
            }
        }
        let body = operation.get_mut("requestBody").and_then(|b| b.pointer_mut("/content/application~1json/schema"));
        let Some(body) = body else { continue };
        let target = match body.get("$ref").and_then(Value::as_str).and_then(|r| r.rsplit('/').next()) {
            Some(name) => schemas.get_mut(name),
            None => Some(body),
        };
        if let Some(prop) = target.and_then(|t| t.get_mut("properties")).and_then(|p| p.get_mut(*field)) {
            narrow(prop, *min, *max);
        }
    }
}

/// An operation's parameters: its path segments, its query fields and the repository header.
fn parameters(op: &Operation) -> Vec<Value> {
    let mut params: Vec<Value> = op
        .path
        .split('/')
        .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
        .collect();
    for q in &op.query {
        params.extend(q());
    }
    params.push(json!({
        "name": "x-docdex-repo", "in": "header", "required": false,
        "description": "The repository: absolute path, file:// URI or repo id (defaults to the served repo)",
        "schema": {"type": "string"}
    }));
    params
}

/// An operation's success status and response object (JSON, an event stream, or 202).
fn success_response(op: &Operation, generator: &mut SchemaGenerator) -> (&'static str, Value) {
    match (op.responds, op.response) {
        (Responds::Accepted, _) => ("202", json!({"description": "Accepted"})),
        (Responds::EventStream, schema) => {
            let s = schema.map(|f| f(generator).to_value()).unwrap_or(json!({"type": "string"}));
            ("200", json!({"description": "Server-sent events", "content": {"text/event-stream": {"schema": s}}}))
        }
        (Responds::Json, schema) => {
            let s = schema.map(|f| f(generator).to_value()).unwrap_or(json!({}));
            ("200", json!({"description": "OK", "content": {"application/json": {"schema": s}}}))
        }
    }
}

/// Builds the OpenAPI 3.1 document for `ops`.
pub fn document(ops: &[Operation]) -> Value {
    let mut generator = SchemaSettings::openapi3()
        .with(|s| {
            s.meta_schema = None;
        })
        .into_generator();
    let error_ref = generator.subschema_for::<super::error::ErrorBody>().to_value();
    let mut paths: Map<String, Value> = Map::new();
    let mut narrowed = Vec::with_capacity(ops.len());
    for op in ops {
        let mut operation = Map::new();
        operation.insert("summary".into(), json!(op.summary));
        if !op.description.is_empty() {
            operation.insert("description".into(), json!(op.description));
        }
        operation.insert(
            "operationId".into(),
            json!(format!(
                "{}_{}",
                op.method.as_str().to_lowercase(),
                op.path.trim_matches('/').replace(['/', '{', '}', '.'], "_")
            )),
        );
        operation.insert("parameters".into(), Value::Array(parameters(op)));
        if let Some(body) = op.body {
            let schema = body(&mut generator).to_value();
            operation.insert(
                "requestBody".into(),
                json!({"required": true, "content": {"application/json": {"schema": schema}}}),
            );
        }
        let success = success_response(op, &mut generator);
        let error =
            json!({"description": "The error contract", "content": {"application/json": {"schema": error_ref}}});
        operation.insert("responses".into(), json!({ success.0: success.1, "default": error }));
        narrowed.push((op.path, op.method.as_str().to_lowercase(), operation));
    }
    let mut schemas = generator.take_definitions(true);
    for (path, method, mut operation) in narrowed {
        narrow_operation(path, &mut operation, &mut schemas);
        let entry = paths.entry(path.to_string()).or_insert_with(|| json!({}));
        if let Some(obj) = entry.as_object_mut() {
            obj.insert(method, Value::Object(operation));
        }
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "docdex",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Local-first code and documentation search. Errors: {\"error\": {\"code\", \"message\"}}. With a token configured, send `Authorization: Bearer <token>`.",
        },
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}, {}],
        "paths": paths,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Filter {
        /// Only these.
        only: Option<String>,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Ask {
        text: String,
    }
    impl crate::server::extract::JsonBody for Ask {}

    #[derive(Serialize, JsonSchema)]
    struct Answer {
        words: Vec<String>,
    }

    async fn ask(
        State(()): State<()>,
        _h: HeaderMap,
        ApiQuery(_f): ApiQuery<Filter>,
        ApiJson(_a): ApiJson<Ask>,
    ) -> Result<Json<Answer>, ApiError> {
        Ok(Json(Answer { words: Vec::new() }))
    }

    async fn plain() -> StatusCode {
        StatusCode::ACCEPTED
    }

    #[test]
    fn a_handlers_signature_documents_its_query_body_and_response() {
        let routes = Routes::<()>::default().post("/v1/ask", ask, Operation::new("Ask")).get(
            "/v1/plain",
            plain,
            Operation::new("Plain").accepted(),
        );
        let doc = document(routes.operations());
        let op = &doc["paths"]["/v1/ask"]["post"];
        assert_eq!(op["requestBody"]["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/Ask");
        assert_eq!(
            op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/Answer"
        );
        let names: Vec<&str> = op["parameters"].as_array().unwrap().iter().filter_map(|p| p["name"].as_str()).collect();
        assert_eq!(names, ["only", "x-docdex-repo"]);
        assert!(doc["components"]["schemas"]["Answer"]["properties"]["words"].is_object());
        let plain = &doc["paths"]["/v1/plain"]["get"];
        assert!(plain.get("requestBody").is_none());
        assert_eq!(plain["responses"]["202"]["description"], "Accepted");
    }
}
