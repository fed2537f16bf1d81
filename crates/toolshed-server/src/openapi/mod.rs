//! `GET /api/v1/openapi.json`: the API described as OpenAPI 3.0, built here beside the
//! routes. [`ROUTES`] is the list the router serves; a test checks the document names every
//! one of them. Here: how an operation is written and the document put together;
//! `operations` lists them, `dialect` generates the answers' schemas from the reply types
//! (`crate::reply`) in OpenAPI's dialect, `components` holds the shared ones.

use axum::Json;
use schemars::JsonSchema;
use serde_json::{Map, Value, json};
use toolshed_kit::args::lean_schema;

mod components;
mod dialect;
mod operations;

use dialect::Replies;
use operations::operations;

/// Every (method, path) the REST API serves, relative to `/api/v1`.
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/health"),
    ("GET", "/metrics"),
    ("GET", "/plugins"),
    ("POST", "/plugins"),
    ("GET", "/plugins/{id}/grants"),
    ("POST", "/plugins/{id}/grants"),
    ("GET", "/plugins/{id}"),
    ("DELETE", "/plugins/{id}"),
    ("POST", "/plugins/{id}/enable"),
    ("POST", "/plugins/{id}/disable"),
    ("POST", "/plugins/{id}/pause"),
    ("POST", "/plugins/{id}/resume"),
    ("POST", "/plugins/{id}/reload"),
    ("GET", "/plugins/{id}/verify"),
    ("GET", "/plugins/{id}/health"),
    ("GET", "/plugins/{id}/icon"),
    ("GET", "/plugins/{id}/tools"),
    ("POST", "/plugins/{id}/tools/execute"),
    ("GET", "/plugins/{id}/config"),
    ("PUT", "/plugins/{id}/config"),
    ("GET", "/mcp-servers"),
    ("POST", "/mcp-servers"),
    ("POST", "/mcp-servers/import"),
    ("GET", "/mcp-servers/{name}"),
    ("DELETE", "/mcp-servers/{name}"),
    ("POST", "/mcp-servers/{name}/accept"),
    ("GET", "/tools"),
    ("GET", "/tools/search"),
    ("GET", "/tools/groups"),
    ("GET", "/tools/{name}"),
    ("POST", "/tools/{name}/execute"),
    ("GET", "/memories"),
    ("POST", "/memories"),
    ("GET", "/memories/search"),
    ("GET", "/memories/{id}"),
    ("DELETE", "/memories/{id}"),
    ("POST", "/memories/{id}/restore"),
    ("GET", "/audit"),
    ("GET", "/approvals"),
    ("GET", "/approvals/{id}"),
    ("POST", "/approvals/{id}/approve"),
    ("POST", "/approvals/{id}/deny"),
    ("GET", "/questions"),
    ("POST", "/questions/{id}/answer"),
    ("GET", "/jobs"),
    ("GET", "/jobs/{id}"),
    ("POST", "/jobs/{id}/cancel"),
    ("GET", "/todos"),
    ("GET", "/schedules"),
    ("GET", "/stats"),
    ("POST", "/running/{plugin}/{id}/stop"),
    ("POST", "/upload"),
    ("GET", "/uploads/{file}"),
    ("GET", "/env"),
    ("PUT", "/env"),
    ("DELETE", "/env"),
    ("GET", "/commands"),
    ("POST", "/commands/{name}"),
    ("POST", "/commands/{name}/{id}"),
    ("GET", "/running"),
    ("GET", "/running/{plugin}/{id}/output"),
    ("GET", "/events"),
    ("GET", "/events/ws"),
    ("GET", "/openapi.json"),
];

pub(super) fn error_response(description: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    })
}

pub(super) fn json_response(description: &str, schema: Value) -> Value {
    json!({"description": description, "content": {"application/json": {"schema": schema}}})
}

pub(super) fn schema_ref(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

/// The error answers any authenticated operation can give.
fn common_errors(responses: &mut Map<String, Value>, authenticated: bool) {
    let mut add = |code: &str, text: &str| {
        responses
            .entry(code.to_string())
            .or_insert_with(|| error_response(text));
    };
    add(
        "400",
        "Bad request: invalid parameters or body, or credentials in the query string",
    );
    if authenticated {
        add(
            "401",
            "Missing or wrong bearer token (see WWW-Authenticate)",
        );
        add(
            "429",
            "Too many failed authentications from this address (see Retry-After)",
        );
    }
    add("403", "Foreign Host or Origin");
    add("405", "Method not allowed on this path");
    add("413", "Request body too large");
    add("431", "Request headers too large");
}

pub(super) fn path_param(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "path", "required": true, "description": description, "schema": {"type": "string"}})
}

/// A request body's schema, generated from the type its handler reads: the type's field
/// docs are the descriptions, its `#[schemars]` attributes the limits, and
/// `#[serde(deny_unknown_fields)]` the `additionalProperties: false`. The type's own doc
/// is for Rust readers; the operation's summary says what the body is.
pub(super) fn body_of<T: JsonSchema>() -> Value {
    let mut schema = typed::<T>();
    if let Value::Object(top) = &mut schema {
        top.shift_remove("description");
    }
    schema
}

/// `T`'s lean schema, its descriptions as flowing text (a doc comment's line breaks are
/// where the source wrapped).
fn typed<T: JsonSchema>() -> Value {
    fn unwrap_lines(value: &mut Value) {
        match value {
            Value::Object(map) => {
                for (key, child) in map.iter_mut() {
                    match child {
                        Value::String(text) if key == "description" => {
                            *text = dialect::flowing(text);
                        }
                        child => unwrap_lines(child),
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(unwrap_lines),
            _ => {}
        }
    }
    let mut schema = lean_schema::<T>();
    unwrap_lines(&mut schema);
    schema
}

/// The query parameters of the type a handler reads its query string into, one per field,
/// described by the field's doc.
pub(super) fn query_of<T: JsonSchema>() -> Vec<Value> {
    let schema = typed::<T>();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(fields) = schema["properties"].as_object() else {
        return Vec::new();
    };
    fields
        .iter()
        .map(|(name, field)| {
            let mut field = field.clone();
            let description = field
                .as_object_mut()
                .and_then(|f| f.shift_remove("description"));
            let mut param = json!({
                "name": name,
                "in": "query",
                "required": required.contains(&name.as_str()),
                "schema": field,
            });
            if let Some(description) = description {
                param["description"] = description;
            }
            param
        })
        .collect()
}

pub(super) struct Op {
    method: &'static str,
    path: &'static str,
    id: &'static str,
    summary: &'static str,
    parameters: Vec<Value>,
    body: Option<Value>,
    responses: Vec<(&'static str, Value)>,
    authenticated: bool,
}

pub(super) fn op(
    method: &'static str,
    path: &'static str,
    id: &'static str,
    summary: &'static str,
) -> Op {
    Op {
        method,
        path,
        id,
        summary,
        parameters: Vec::new(),
        body: None,
        responses: Vec::new(),
        authenticated: true,
    }
}

impl Op {
    pub(super) fn param(mut self, p: Value) -> Self {
        self.parameters.push(p);
        self
    }
    pub(super) fn params(mut self, ps: Vec<Value>) -> Self {
        self.parameters.extend(ps);
        self
    }
    pub(super) fn body(mut self, schema: Value) -> Self {
        self.body =
            Some(json!({"required": true, "content": {"application/json": {"schema": schema}}}));
        self
    }
    /// A body that is a file: its bytes, or a form with a file field.
    pub(super) fn file_body(mut self) -> Self {
        self.body = Some(json!({"required": false, "content": {
            "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
            "multipart/form-data": {"schema": {"type": "object", "properties": {
                "file": {"type": "string", "format": "binary"}}, "required": ["file"]}}
        }}));
        self
    }
    pub(super) fn optional_body(mut self, schema: Value) -> Self {
        self.body =
            Some(json!({"required": false, "content": {"application/json": {"schema": schema}}}));
        self
    }
    pub(super) fn respond(mut self, code: &'static str, response: Value) -> Self {
        self.responses.push((code, response));
        self
    }
    pub(super) fn open(mut self) -> Self {
        self.authenticated = false;
        self
    }
}

/// The OpenAPI 3.0 document of `/api/v1`, as `GET /api/v1/openapi.json` serves it: every
/// route of [`ROUTES`] with its parameters, bodies and answers.
pub fn document() -> Value {
    let mut replies = Replies::new();
    components::always(&mut replies);
    let mut paths = Map::new();
    for op in operations(&mut replies) {
        let mut responses = Map::new();
        for (code, response) in op.responses {
            responses.insert(code.to_string(), response);
        }
        common_errors(&mut responses, op.authenticated);
        let mut operation = json!({
            "operationId": op.id,
            "summary": op.summary,
            "parameters": op.parameters,
            "responses": responses,
        });
        if let Some(body) = op.body {
            operation["requestBody"] = body;
        }
        if !op.authenticated {
            operation["security"] = json!([]);
        }
        let item = paths
            .entry(format!("/api/v1{}", op.path))
            .or_insert_with(|| json!({}));
        item[op.method.to_lowercase()] = operation;
    }
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "toolshed REST API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The whole host over HTTP: plugins, tools, calls (sync and as jobs), live events. Every endpoint but /api/v1/health needs `Authorization: Bearer <token>` (`toolshed token`). Errors are {\"error\": {\"kind\", \"message\", \"details\"}}; a tool that ran and failed answers 200 with is_error=true."
        },
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": components::schemas(replies)
        },
        "paths": paths
    })
}

/// `GET /openapi.json`.
pub(crate) async fn serve() -> Json<Value> {
    Json(document())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde::Deserialize;

    /// A handler's query string.
    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Query {
        /// What to look for, wrapped
        /// over two lines.
        #[schemars(length(min = 1))]
        q: String,
        /// How many.
        #[schemars(range(min = 1, max = 9))]
        limit: Option<u32>,
    }

    /// A handler's body.
    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Body {
        /// Replace it.
        #[serde(default)]
        force: bool,
    }

    /// Open to more fields.
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Open {
        name: String,
    }

    #[test]
    fn query_parameters_and_bodies_come_from_the_handlers_types() {
        assert_eq!(
            query_of::<Query>(),
            vec![
                json!({"name": "q", "in": "query", "required": true,
                       "schema": {"type": "string", "minLength": 1},
                       "description": "What to look for, wrapped over two lines."}),
                json!({"name": "limit", "in": "query", "required": false,
                       "schema": {"type": "integer", "minimum": 1, "maximum": 9},
                       "description": "How many."}),
            ]
        );
        assert_eq!(
            body_of::<Body>(),
            json!({"type": "object", "properties": {"force": {"type": "boolean", "description": "Replace it."}},
                   "additionalProperties": false})
        );
        // A type that takes unknown fields is not documented as refusing them.
        assert_eq!(body_of::<Open>()["additionalProperties"], Value::Null);
    }
}
