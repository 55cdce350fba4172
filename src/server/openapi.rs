//! The OpenAPI document (`GET /v1/openapi.json`) is generated from the same
//! table the router is built from: every route is registered through
//! [`Routes`], which records its method, path, summary and the schemars types
//! of its query, body and response. So the document cannot drift from the
//! router, and a test checks that each documented operation is served.

use axum::http::Method;
use axum::routing::MethodRouter;
use axum::Router;
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{json, Map, Value};

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
            body: None,
            response: None,
            responds: Responds::Json,
        }
    }

    /// Longer description.
    pub fn describe(mut self, text: &'static str) -> Self {
        self.description = text;
        self
    }

    /// Query parameters are the fields of `T` (call again to add another type's fields: a
    /// transport's own fields beside an engine request's).
    pub fn query<T: JsonSchema>(mut self) -> Self {
        self.query.push(params_of::<T>);
        self
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
    /// Registers `handler` for `method` at `path`.
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

/// Builds the OpenAPI 3.1 document for `ops`.
pub fn document(ops: &[Operation]) -> Value {
    let mut generator = SchemaSettings::openapi3()
        .with(|s| {
            s.meta_schema = None;
        })
        .into_generator();
    let error_ref = generator.subschema_for::<super::error::ErrorBody>().to_value();
    let mut paths: Map<String, Value> = Map::new();
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
        operation.insert("parameters".into(), Value::Array(params));
        if let Some(body) = op.body {
            let schema = body(&mut generator).to_value();
            operation.insert(
                "requestBody".into(),
                json!({"required": true, "content": {"application/json": {"schema": schema}}}),
            );
        }
        let success = match (op.responds, op.response) {
            (Responds::Accepted, _) => ("202", json!({"description": "Accepted"})),
            (Responds::EventStream, schema) => {
                let s = schema.map(|f| f(&mut generator).to_value()).unwrap_or(json!({"type": "string"}));
                ("200", json!({"description": "Server-sent events", "content": {"text/event-stream": {"schema": s}}}))
            }
            (Responds::Json, schema) => {
                let s = schema.map(|f| f(&mut generator).to_value()).unwrap_or(json!({}));
                ("200", json!({"description": "OK", "content": {"application/json": {"schema": s}}}))
            }
        };
        let error =
            json!({"description": "The error contract", "content": {"application/json": {"schema": error_ref}}});
        operation.insert("responses".into(), json!({ success.0: success.1, "default": error }));
        let entry = paths.entry(op.path.to_string()).or_insert_with(|| json!({}));
        if let Some(obj) = entry.as_object_mut() {
            obj.insert(op.method.as_str().to_lowercase(), Value::Object(operation));
        }
    }
    let schemas = generator.take_definitions(true);
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
