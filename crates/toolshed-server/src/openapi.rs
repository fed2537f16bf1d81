//! `GET /api/v1/openapi.json`: the API described as OpenAPI 3.0, built here beside the
//! routes. [`ROUTES`] is the list the router serves; a test checks the document names every
//! one of them.

use axum::Json;
use schemars::JsonSchema;
use serde_json::{Map, Value, json};
use toolshed_kit::args::lean_schema;

use crate::api::{
    ConfigUpdate, Execute, GrantsChange, InstallBody, JobFilter, LocaleQuery, PluginsQuery,
    ToolFilter, ToolSearch,
};
use crate::approvals::{Answer, ApprovalFilter, AuditFilter};
use crate::gateway::{AcceptBody, AddBody, ImportBody};
use crate::memories::{ListQuery, NewMemory, SearchQuery};
use crate::stream::EventQuery;

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
    ("POST", "/plugins/{id}/reload"),
    ("GET", "/plugins/{id}/verify"),
    ("GET", "/plugins/{id}/health"),
    ("GET", "/plugins/{id}/icon"),
    ("GET", "/plugins/{id}/tools"),
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
    ("GET", "/events"),
    ("GET", "/events/ws"),
    ("GET", "/openapi.json"),
];

fn error_response(description: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    })
}

fn json_response(description: &str, schema: Value) -> Value {
    json!({"description": description, "content": {"application/json": {"schema": schema}}})
}

fn schema_ref(name: &str) -> Value {
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

fn path_param(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "path", "required": true, "description": description, "schema": {"type": "string"}})
}

/// A request body's schema, generated from the type its handler reads: the type's field
/// docs are the descriptions, its `#[schemars]` attributes the limits, and
/// `#[serde(deny_unknown_fields)]` the `additionalProperties: false`. The type's own doc
/// is for Rust readers; the operation's summary says what the body is.
fn body_of<T: JsonSchema>() -> Value {
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
                            *text = text.replace('\n', " ");
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
fn query_of<T: JsonSchema>() -> Vec<Value> {
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

struct Op {
    method: &'static str,
    path: &'static str,
    id: &'static str,
    summary: &'static str,
    parameters: Vec<Value>,
    body: Option<Value>,
    responses: Vec<(&'static str, Value)>,
    authenticated: bool,
}

fn op(method: &'static str, path: &'static str, id: &'static str, summary: &'static str) -> Op {
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
    fn param(mut self, p: Value) -> Self {
        self.parameters.push(p);
        self
    }
    fn params(mut self, ps: Vec<Value>) -> Self {
        self.parameters.extend(ps);
        self
    }
    fn body(mut self, schema: Value) -> Self {
        self.body =
            Some(json!({"required": true, "content": {"application/json": {"schema": schema}}}));
        self
    }
    fn optional_body(mut self, schema: Value) -> Self {
        self.body =
            Some(json!({"required": false, "content": {"application/json": {"schema": schema}}}));
        self
    }
    fn respond(mut self, code: &'static str, response: Value) -> Self {
        self.responses.push((code, response));
        self
    }
    fn open(mut self) -> Self {
        self.authenticated = false;
        self
    }
}

fn plugin_id() -> Value {
    path_param("id", "A plugin id, e.g. system.calculator")
}

fn nullable_string() -> Value {
    json!({"type": "string", "nullable": true})
}

/// The answers of an operation that is a call of a memory tool.
fn memory_op(op: Op) -> Op {
    op.respond(
        "400",
        error_response("A value is not valid (the message names it and what to give)"),
    )
    .respond(
        "403",
        error_response("Denied by review or policy, or needs approval"),
    )
    .respond(
        "404",
        error_response("No such memory of the caller's, or the memory tools are disabled"),
    )
    .respond(
        "409",
        error_response("The caller's memories are full, or there is nothing to restore"),
    )
    .respond(
        "429",
        error_response("A quota is used up, or too many failed authentications"),
    )
    .respond("500", error_response("The state store failed"))
    .respond("504", error_response("The call's deadline passed"))
}

fn operations() -> Vec<Op> {
    let not_found = || error_response("No such plugin, tool or job");
    let conflict = || error_response("Not possible in the current state");
    vec![
        op("GET", "/health", "health", "Whether the server is up (no token needed)")
            .open()
            .respond("200", json_response("Up", schema_ref("Health"))),
        op("GET", "/metrics", "metrics", "Prometheus metrics: calls by tool and outcome, durations, jobs, live sessions and processes")
            .respond("200", json!({"description": "Prometheus text format", "content": {"text/plain": {"schema": {"type": "string"}}}})),
        op("GET", "/plugins", "listPlugins", "Every plugin with its state, tags, author, dependencies and manifest dialect")
            .params(query_of::<PluginsQuery>())
            .respond("400", error_response("The locale is not a language tag"))
            .respond("200", json_response("The plugins", json!({"type": "object", "required": ["plugins"], "properties": {"plugins": {"type": "array", "items": schema_ref("Plugin")}}}))),
        op("GET", "/plugins/{id}", "getPlugin", "One plugin")
            .param(plugin_id())
            .params(query_of::<LocaleQuery>())
            .respond("200", json_response("The plugin", schema_ref("Plugin")))
            .respond("400", error_response("The locale is not a language tag"))
            .respond("404", not_found()),
        op("DELETE", "/plugins/{id}", "uninstallPlugin", "Uninstall a user plugin: stop it, remove its files, forget its state")
            .param(plugin_id())
            .respond("200", json_response("What was removed", json!({"type": "object", "required": ["uninstalled"], "properties": {"uninstalled": schema_ref("Plugin")}})))
            .respond("404", not_found())
            .respond("409", error_response("A system or curated plugin cannot be uninstalled"))
            .respond("500", error_response("Its files could not be removed")),
        op("POST", "/plugins/{id}/enable", "enablePlugin", "Enable a plugin (persisted)")
            .param(plugin_id())
            .respond("200", json_response("The plugin now", schema_ref("Plugin")))
            .respond("404", not_found()),
        op("POST", "/plugins/{id}/disable", "disablePlugin", "Disable a plugin (persisted); its tools stop being callable")
            .param(plugin_id())
            .respond("200", json_response("The plugin now", schema_ref("Plugin")))
            .respond("404", not_found()),
        op("GET", "/plugins/{id}/health", "pluginHealth", "How the plugin is now: a JavaScript plugin's health() export is asked")
            .param(plugin_id())
            .respond("200", json_response("Its health", json!({"type": "object", "required": ["id", "state", "health", "message"], "properties": {
                "id": {"type": "string"},
                "state": {"type": "string", "enum": ["installed", "enabled", "running", "disabled", "degraded", "error", "uninstalled"]},
                "health": {"type": "string", "enum": ["ok", "degraded", "failed"]},
                "message": {"type": "string"}}})))
            .respond("404", not_found()),
        op("GET", "/plugins/{id}/icon", "pluginIcon", "The image the manifest's icon names (svg, png, jpg, webp; at most 256 KiB)")
            .param(plugin_id())
            .respond("200", json!({"description": "The icon", "content": {
                "image/svg+xml": {"schema": {"type": "string"}},
                "image/png": {"schema": {"type": "string", "format": "binary"}},
                "image/jpeg": {"schema": {"type": "string", "format": "binary"}},
                "image/webp": {"schema": {"type": "string", "format": "binary"}}}}))
            .respond("404", not_found()),
        op("GET", "/plugins/{id}/verify", "verifyPlugin", "Hash an installed plugin's files again and compare them with what its install recorded")
            .param(plugin_id())
            .respond("200", json_response("What changed since the install", json!({"type": "object", "required": ["id", "clean", "drift", "provenance"], "properties": {
                "id": {"type": "string"}, "clean": {"type": "boolean"},
                "drift": {"type": "object", "required": ["changed", "added", "removed"], "properties": {
                    "changed": {"type": "array", "items": {"type": "string"}},
                    "added": {"type": "array", "items": {"type": "string"}},
                    "removed": {"type": "array", "items": {"type": "string"}}}},
                "provenance": schema_ref("Provenance")}})))
            .respond("404", not_found())
            .respond("409", error_response("toolshed has no record of installing it")),
        op("POST", "/plugins/{id}/reload", "reloadPlugin", "Stop and start a running plugin")
            .param(plugin_id())
            .respond("200", json_response("The plugin now", schema_ref("Plugin")))
            .respond("404", not_found())
            .respond("409", error_response("The plugin is disabled")),
        op("POST", "/plugins", "installPlugin", "Install a plugin from a directory or a .tar.gz/.tgz/.zip file on the server's machine, and load it")
            .body(body_of::<InstallBody>())
            .respond("201", json_response("Installed", schema_ref("Installed")))
            .respond("200", json_response("Replaced (force)", schema_ref("Installed")))
            .respond("400", error_response("The source, checksum or archive was refused; nothing was installed"))
            .respond("409", error_response("A plugin with that id is installed (use force), or the id belongs to a built-in or curated plugin"))
            .respond("415", error_response("The body is not application/json")),
        op("GET", "/mcp-servers", "listMcpServers", "The MCP servers mounted as plugins (kind mcp), with what each runs")
            .respond("200", json_response("The servers", json!({"type": "object", "required": ["servers"], "properties": {"servers": {"type": "array", "items": schema_ref("McpServer")}}}))),
        op("POST", "/mcp-servers", "addMcpServer", "Mount an MCP server: a command run over stdio, or a URL reached over streamable HTTP (as `toolshed mcp add`); credential env and headers go to the secret store")
            .body(body_of::<AddBody>())
            .respond("201", json_response("Mounted and running", schema_ref("McpServer")))
            .respond("415", error_response("The body is not application/json"))
            .respond("422", error_response("It was installed but cannot start, or cannot be installed; the message says why")),
        op("POST", "/mcp-servers/import", "importMcpServers", "Mount every server of an mcpServers config (Claude Desktop, Claude Code, Cursor)")
            .body(body_of::<ImportBody>())
            .respond("200", json_response("Each server's outcome", json!({"type": "object", "required": ["mounted", "failed", "servers"], "properties": {
                "mounted": {"type": "integer"}, "failed": {"type": "integer"},
                "servers": {"type": "array", "items": {"type": "object", "required": ["name", "mounted"], "properties": {
                    "name": {"type": "string"}, "mounted": {"type": "boolean"}, "reason": {"type": "string"}, "server": schema_ref("McpServer")
                }}}
            }})))
            .respond("415", error_response("The body is not application/json"))
            .respond("422", error_response("A server could not be managed")),
        op("GET", "/mcp-servers/{name}", "getMcpServer", "One mounted server with its pinned tool digests and the tools it withholds")
            .param(path_param("name", "The server's name (or its plugin id, mcp.NAME)"))
            .respond("200", json_response("The server", schema_ref("McpServer")))
            .respond("404", error_response("No such server"))
            .respond("422", error_response("Its pins cannot be read")),
        op("DELETE", "/mcp-servers/{name}", "removeMcpServer", "Unmount a server: its plugin, state and config")
            .param(path_param("name", "The server's name (or its plugin id, mcp.NAME)"))
            .respond("200", json_response("What was removed", json!({"type": "object", "required": ["removed"], "properties": {"removed": {"type": "string"}}})))
            .respond("404", error_response("No such server"))
            .respond("422", error_response("It could not be removed")),
        op("POST", "/mcp-servers/{name}/accept", "acceptMcpServerTools", "Accept changed tool definitions (they are pinned again) and start the server again")
            .param(path_param("name", "The server's name (or its plugin id, mcp.NAME)"))
            .body(body_of::<AcceptBody>())
            .respond("200", json_response("The server now", schema_ref("McpServer")))
            .respond("404", error_response("No such server"))
            .respond("415", error_response("The body is not application/json"))
            .respond("422", error_response("It could not be started again")),
        op("GET", "/plugins/{id}/grants", "getPluginGrants", "What a plugin's manifest asks for and what it was granted")
            .param(plugin_id())
            .respond("200", json_response("Its grants", schema_ref("PluginGrants")))
            .respond("404", not_found()),
        op("POST", "/plugins/{id}/grants", "changePluginGrants", "Grant or take back capabilities (http:HOST[:PORT], fs-read:PATH, fs-write:PATH, tool:NAME, memory); the plugin reloads with them")
            .param(plugin_id())
            .body(body_of::<GrantsChange>())
            .respond("200", json_response("Its grants now", schema_ref("PluginGrants")))
            .respond("400", error_response("A grant is malformed, or the manifest does not ask for it"))
            .respond("404", not_found())
            .respond("415", error_response("The body is not application/json")),
        op("GET", "/plugins/{id}/tools", "listPluginTools", "The tools a plugin's manifest declares, and whether each is callable")
            .param(plugin_id())
            .params(query_of::<LocaleQuery>())
            .respond("200", json_response("Its tools", json!({"type": "object", "required": ["plugin_id", "tools"], "properties": {"plugin_id": {"type": "string"}, "tools": {"type": "array", "items": schema_ref("Tool")}}})))
            .respond("400", error_response("The locale is not a language tag"))
            .respond("404", not_found()),
        op("GET", "/plugins/{id}/config", "getPluginConfig", "A plugin's config fields and values; secret values are never returned, only whether they are set")
            .param(plugin_id())
            .respond("200", json_response("The config", schema_ref("PluginConfig")))
            .respond("404", not_found()),
        op("PUT", "/plugins/{id}/config", "setPluginConfig", "Set config values, each checked against its field")
            .param(plugin_id())
            .body(body_of::<ConfigUpdate>())
            .respond("200", json_response("The config now", schema_ref("PluginConfig")))
            .respond("404", not_found())
            .respond("415", error_response("The body is not application/json")),
        op("GET", "/tools", "listTools", "The tools callers may see, optionally filtered")
            .params(query_of::<ToolFilter>())
            .respond("200", json_response("The tools", json!({"type": "object", "required": ["tools"], "properties": {"tools": {"type": "array", "items": schema_ref("Tool")}}})))
            .respond("400", error_response("The locale is not a language tag")),
        op("GET", "/tools/search", "searchTools", "The tools the caller may use that best match what it wants to do, ranked (BM25 over names, titles, groups and descriptions)")
            .params(query_of::<ToolSearch>())
            .respond("200", json_response("The matches, best first", json!({"type": "object", "required": ["query", "results"], "properties": {
                "query": {"type": "string"},
                "results": {"type": "array", "items": {"type": "object", "required": ["name", "group", "plugin", "summary", "input_schema", "score"], "properties": {
                    "name": {"type": "string"}, "group": {"type": "string"}, "plugin": {"type": "string"},
                    "summary": {"type": "string"}, "input_schema": {"type": "object"}, "score": {"type": "number"}
                }}}
            }}))),
        op("GET", "/tools/{name}", "getTool", "One tool with its input schema and annotations")
            .param(path_param("name", "A tool name, e.g. calculator"))
            .respond("200", json_response("The tool", schema_ref("Tool")))
            .respond("404", not_found()),
        op("POST", "/tools/{name}/execute", "executeTool", "Call a tool through the pipeline; with async=true start a job and answer 202")
            .param(path_param("name", "A tool name, e.g. calculator"))
            .body(schema_ref("ExecuteRequest"))
            .respond("200", json_response("The result; is_error=true when the tool ran and failed", schema_ref("CallResult")))
            .respond("202", json!({
                "description": "A job was started",
                "headers": {"Location": {"description": "The job's URL", "schema": {"type": "string"}}},
                "content": {"application/json": {"schema": {"type": "object", "required": ["job", "location"], "properties": {"job": schema_ref("Job"), "location": {"type": "string"}}}}}
            }))
            .respond("403", error_response("Denied by review or policy, or needs approval"))
            .respond("404", not_found())
            .respond("409", conflict())
            .respond("415", error_response("The body is not application/json"))
            .respond("429", error_response("A quota is used up (details.retry_after, Retry-After), too many jobs are running, or too many failed authentications"))
            .respond("500", error_response("A bug in toolshed"))
            .respond("503", error_response("The tool's plugin lacks configuration or environment variables"))
            .respond("504", error_response("The call's deadline passed")),
        memory_op(op("GET", "/memories", "listMemories", "The caller's memories, newest first, a page at a time (a call of memory_list)")
            .params(query_of::<ListQuery>())
            .respond("200", json_response("A page; next_cursor leads to older memories", json!({"type": "object", "required": ["memories"], "properties": {"memories": {"type": "array", "items": schema_ref("Memory")}, "next_cursor": nullable_string()}})))),
        memory_op(op("POST", "/memories", "storeMemory", "Remember something, or update memory `id` (a call of memory_store)")
            .body(body_of::<NewMemory>())
            .respond("201", json_response("Stored", schema_ref("Memory")))
            .respond("200", json_response("Updated (id)", schema_ref("Memory")))
            .respond("415", error_response("The body is not application/json"))),
        memory_op(op("GET", "/memories/search", "searchMemories", "Full-text search of the caller's memories, best first (a call of memory_search)")
            .params(query_of::<SearchQuery>())
            .respond("200", json_response("The matches, best first, matched terms in **bold** in each snippet", json!({"type": "object", "required": ["results"], "properties": {"results": {"type": "array", "items": schema_ref("MemoryMatch")}}})))),
        memory_op(op("GET", "/memories/{id}", "getMemory", "One of the caller's memories (a compacted one says so); a deleted one is 404 (restore it first)")
            .param(path_param("id", "A memory id, e.g. m-0123456789abcdef"))
            .respond("200", json_response("The memory", schema_ref("Memory")))),
        memory_op(op("DELETE", "/memories/{id}", "deleteMemory", "Delete a memory (restorable for [memory] deleted_days)")
            .param(path_param("id", "A memory id, e.g. m-0123456789abcdef"))
            .respond("200", json_response("What was deleted", json!({"type": "object", "required": ["deleted"], "properties": {"deleted": schema_ref("Memory")}})))),
        memory_op(op("POST", "/memories/{id}/restore", "restoreMemory", "Bring back a deleted or compacted memory")
            .param(path_param("id", "A memory id, e.g. m-0123456789abcdef"))
            .respond("200", json_response("The memory now", schema_ref("Memory")))),
        op("GET", "/audit", "listAudit", "Audit rows, newest first and paged: every call with its owner, door, outcome and, when it needed one, how its approval ended and who answered")
            .params(query_of::<AuditFilter>())
            .respond("200", json_response("The rows, newest first; next_cursor leads to older rows", json!({"type": "object", "required": ["audit"], "properties": {"audit": {"type": "array", "items": {"type": "object"}}, "next_cursor": {"type": ["string", "null"]}}})))
            .respond("400", error_response("limit is out of range, or since, outcome or cursor is not valid")),
        op("GET", "/approvals", "listApprovals", "Calls waiting for a person's approval (with all=true, recent answered and expired requests too)")
            .params(query_of::<ApprovalFilter>())
            .respond("200", json_response("The requests, newest first", json!({"type": "object", "required": ["approvals"], "properties": {"approvals": {"type": "array", "items": schema_ref("Approval")}}}))),
        op("GET", "/approvals/{id}", "getApproval", "One approval request")
            .param(path_param("id", "A request id, e.g. ap-0123456789abcdef"))
            .respond("200", json_response("The request", schema_ref("Approval")))
            .respond("404", not_found()),
        op("POST", "/approvals/{id}/approve", "approve", "Let the waiting call run; `remember` approves the same tool with the same arguments for its owner from now on. The body is optional")
            .param(path_param("id", "A request id, e.g. ap-0123456789abcdef"))
            .optional_body(body_of::<Answer>())
            .respond("200", json_response("The request, approved", schema_ref("Approval")))
            .respond("404", not_found())
            .respond("409", error_response("The request is not pending any more (answered or expired)")),
        op("POST", "/approvals/{id}/deny", "deny", "Refuse the waiting call")
            .param(path_param("id", "A request id, e.g. ap-0123456789abcdef"))
            .respond("200", json_response("The request, denied", schema_ref("Approval")))
            .respond("404", not_found())
            .respond("409", error_response("The request is not pending any more (answered or expired)")),
        op("GET", "/questions", "listQuestions", "Questions tools asked a person (ask_user, a plugin's ctx.ask) that the calling client could not put to them, waiting for an answer; an agent token sees its own owner's")
            .respond("200", json_response("The questions, oldest first", json!({"type": "object", "required": ["questions"], "properties": {"questions": {"type": "array", "items": {"type": "object", "required": ["id", "owner", "message", "schema", "created_ms"], "properties": {"id": {"type": "string"}, "owner": {"type": "string"}, "message": {"type": "string"}, "schema": {"type": "object"}, "created_ms": {"type": "integer"}}}}}}))),
        op("POST", "/questions/{id}/answer", "answerQuestion", "Answer a waiting question: accept with the fields its schema asks for, or decline; the asking call goes on with the answer")
            .param(path_param("id", "A question id, e.g. q-0123456789abcdef"))
            .body(body_of::<crate::questions::Body>())
            .respond("200", json_response("The question answered", json!({"type": "object", "required": ["answered"], "properties": {"answered": {"type": "object"}}})))
            .respond("400", error_response("The body is not an answer"))
            .respond("403", error_response("The question is another owner's"))
            .respond("404", not_found()),
        op("GET", "/jobs", "listJobs", "Jobs kept (running, and finished ones until their retention passes)")
            .params(query_of::<JobFilter>())
            .respond("200", json_response("The jobs", json!({"type": "object", "required": ["jobs"], "properties": {"jobs": {"type": "array", "items": schema_ref("Job")}}}))),
        op("GET", "/jobs/{id}", "getJob", "One job: state, progress, result")
            .param(path_param("id", "A job id, e.g. job-1"))
            .respond("200", json_response("The job", schema_ref("Job")))
            .respond("404", not_found()),
        op("POST", "/jobs/{id}/cancel", "cancelJob", "Cancel a running job (its tool stops; a command's process tree is killed)")
            .param(path_param("id", "A job id, e.g. job-1"))
            .respond("200", json_response("The job now", schema_ref("Job")))
            .respond("404", not_found())
            .respond("409", error_response("The job has already ended")),
        op("GET", "/events", "streamEvents", "Server-Sent Events: job.started, job.progress, job.finished, job.failed, job.cancelled, plugin.state_changed. Resume with Last-Event-ID")
            .params(query_of::<EventQuery>())
            .respond("200", json!({"description": "An endless event stream; each event's `data` is an Event as JSON (or, with `event: events.missed`, a notice that events were missed)", "content": {"text/event-stream": {"schema": {
                "type": "object",
                "required": ["data"],
                "properties": {
                    "data": {"type": "string"},
                    "event": {"type": "string", "enum": ["job.started", "job.progress", "job.finished", "job.failed", "job.cancelled", "plugin.state_changed", "approval.requested", "approval.resolved", "events.missed"]},
                    "id": {"type": "string"},
                    "retry": {"type": "integer"}
                }
            }}}})),
        op("GET", "/events/ws", "streamEventsWebSocket", "The same events over a WebSocket, one JSON Event per text message")
            .params(query_of::<EventQuery>())
            .respond("101", json!({"description": "Switching to the WebSocket protocol"}))
            .respond("426", error_response("Not a WebSocket upgrade request")),
        op("GET", "/openapi.json", "openapi", "This document")
            .respond("200", json_response("OpenAPI 3.0", json!({"type": "object"}))),
    ]
}

fn schemas() -> Value {
    let nullable_string = nullable_string();
    json!({
        "Error": {
            "type": "object",
            "required": ["error"],
            "properties": {"error": {
                "type": "object",
                "required": ["kind", "message"],
                "properties": {
                    "kind": {"type": "string", "description": "invalid_request, invalid_arguments, unauthorized, forbidden, not_found, method_not_allowed, conflict, denied, needs_approval, timeout, cancelled, unconfigured, payload_too_large, headers_too_large, unsupported_media_type, rate_limited, too_many_jobs, internal"},
                    "message": {"type": "string"},
                    "details": {"nullable": true, "description": "More, when there is more (schema violations, missing variables)"}
                }
            }}
        },
        "Health": {
            "type": "object",
            "required": ["status", "version", "uptime_ms"],
            "properties": {"status": {"type": "string", "enum": ["ok"]}, "version": {"type": "string"}, "uptime_ms": {"type": "integer", "minimum": 0}}
        },
        "Plugin": {
            "type": "object",
            "required": ["id", "name", "version", "kind", "root", "state", "tools"],
            "properties": {
                "id": {"type": "string"}, "name": {"type": "string"}, "version": {"type": "string"},
                "description": {"type": "string"},
                "kind": {"type": "string", "enum": ["builtin", "js", "mcp"]},
                "root": {"type": "string", "enum": ["system", "curated", "user"]},
                "dir": nullable_string, "manifest_path": nullable_string,
                "state": {"type": "string", "enum": ["installed", "enabled", "running", "disabled", "degraded", "error", "uninstalled"]},
                "reason": nullable_string,
                "tools": {"type": "array", "items": {"type": "string"}},
                "provenance": {"nullable": true, "allOf": [schema_ref("Provenance")]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "author": nullable_string,
                "dependencies": {"type": "object", "additionalProperties": {"type": "string"}},
                "dialect": {"type": "string", "nullable": true, "description": "The format its manifest was written in, when another system's (agent-spaces, fenix, cyrene, npm)"},
                "runtime": {"type": "string", "description": "For a JavaScript plugin, what runs it: `quickjs`, or `node (why)` when it needs Node.js (a Node built-in module, npm dependencies)"}
            }
        },
        "Provenance": {
            "type": "object",
            "description": "Where an installed plugin came from (null for plugins toolshed did not install)",
            "required": ["source", "tree_sha256", "installed_ms"],
            "properties": {
                "source": {"type": "string"}, "sha256": nullable_string,
                "tree_sha256": {"type": "string"}, "installed_ms": {"type": "integer"}
            }
        },
        "McpServer": {
            "type": "object",
            "required": ["id", "name", "version", "kind", "root", "state", "tools", "target"],
            "properties": {
                "id": {"type": "string"}, "name": {"type": "string"}, "version": {"type": "string"},
                "description": {"type": "string"},
                "kind": {"type": "string", "enum": ["mcp"]},
                "root": {"type": "string", "enum": ["system", "curated", "user"]},
                "dir": nullable_string, "manifest_path": nullable_string,
                "state": {"type": "string", "enum": ["installed", "enabled", "running", "disabled", "degraded", "error", "uninstalled"]},
                "reason": nullable_string,
                "tools": {"type": "array", "items": {"type": "string"}},
                "target": {"type": "string", "description": "Its command line, or its URL"},
                "pins": {"type": "object", "properties": {
                    "tools": {"type": "object", "additionalProperties": {"type": "string"}},
                    "withheld": {"type": "array", "items": {"type": "string"}}
                }}
            }
        },
        "Installed": {
            "type": "object",
            "required": ["id", "version", "replaced", "plugin"],
            "properties": {
                "id": {"type": "string"}, "version": {"type": "string"}, "replaced": {"type": "boolean"},
                "plugin": {"nullable": true, "allOf": [schema_ref("Plugin")]}
            }
        },
        "PluginGrants": {
            "type": "object",
            "required": ["plugin_id", "grants"],
            "properties": {
                "plugin_id": {"type": "string"},
                "grants": {
                    "type": "object",
                    "required": ["declared", "wildcards", "granted"],
                    "properties": {
                        "declared": {"type": "array", "items": {"type": "string"}},
                        "wildcards": {"type": "array", "items": {"type": "string"}},
                        "granted": {"type": "array", "items": {"type": "string"}}
                    }
                }
            }
        },
        "Tool": {
            "type": "object",
            "required": ["name", "description", "input_schema"],
            "properties": {
                "name": {"type": "string"}, "title": nullable_string, "description": {"type": "string"},
                "input_schema": {"type": "object"}, "group": {"type": "string"},
                "annotations": {"type": "object"}, "plugin_id": {"type": "string"},
                "callable": {"type": "boolean"},
                "translations": {"type": "object", "description": "Its title and description in other languages, by language (absent with ?locale=, which picks one)", "additionalProperties": {"type": "object", "properties": {"title": {"type": "string"}, "description": {"type": "string"}}}}
            }
        },
        "PluginConfig": {
            "type": "object",
            "required": ["plugin_id", "fields"],
            "properties": {
                "plugin_id": {"type": "string"},
                "fields": {"type": "array", "items": {
                    "type": "object",
                    "required": ["key", "type", "secret", "set"],
                    "properties": {
                        "key": {"type": "string"}, "type": {"type": "string"}, "label": nullable_string,
                        "description": nullable_string, "secret": {"type": "boolean"}, "required": {"type": "boolean"},
                        "options": {"type": "array", "items": {}}, "set": {"type": "boolean"},
                        "default": {"nullable": true}, "value": {"nullable": true, "description": "Absent for secret fields"}
                    }
                }}
            }
        },
        "ExecuteRequest": body_of::<Execute>(),
        "CallResult": {
            "type": "object",
            "required": ["call_id", "is_error", "content", "duration_ms"],
            "properties": {
                "call_id": {"type": "string"}, "plugin_id": nullable_string, "is_error": {"type": "boolean"},
                "content": {"type": "array", "items": {"type": "object"}},
                "structured": {"nullable": true},
                "duration_ms": {"type": "integer", "minimum": 0}
            }
        },
        "Job": {
            "type": "object",
            "required": ["id", "tool", "owner", "state", "created_ms", "progress_count", "progress"],
            "properties": {
                "id": {"type": "string"}, "tool": {"type": "string"}, "owner": {"type": "string"},
                "state": {"type": "string", "enum": ["running", "succeeded", "failed", "cancelled"]},
                "created_ms": {"type": "integer"}, "finished_ms": {"type": "integer", "nullable": true},
                "progress_count": {"type": "integer", "minimum": 0},
                "progress": {"type": "array", "items": {"type": "object"}},
                "result": {"allOf": [schema_ref("CallResult")], "nullable": true},
                "error": {"type": "object", "nullable": true}
            }
        },
        "Memory": {
            "type": "object",
            "required": ["id", "namespace", "kind", "title", "text", "tags", "created_ms", "updated_ms"],
            "properties": {
                "id": {"type": "string"}, "namespace": {"type": "string"},
                "kind": {"type": "string", "enum": ["note", "daily", "summary"]},
                "title": {"type": "string"}, "text": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "created_ms": {"type": "integer"}, "updated_ms": {"type": "integer"},
                "expires_ms": {"type": "integer", "nullable": true},
                "deleted_ms": {"type": "integer", "nullable": true},
                "archived_in": nullable_string
            }
        },
        "MemoryMatch": {
            "type": "object",
            "required": ["id", "title", "namespace", "tags", "snippet", "score", "updated_ms"],
            "properties": {
                "id": {"type": "string"}, "title": {"type": "string"}, "namespace": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "snippet": {"type": "string"}, "score": {"type": "number"}, "updated_ms": {"type": "integer"}
            }
        },
        "Approval": {
            "type": "object",
            "required": ["id", "tool", "owner", "digest", "summary", "rule", "reason", "created_ms", "expires_ms", "state", "remembered"],
            "properties": {
                "id": {"type": "string"}, "tool": {"type": "string"}, "owner": {"type": "string"},
                "digest": {"type": "string"}, "summary": {"type": "string"},
                "rule": {"type": "string"}, "reason": {"type": "string"},
                "created_ms": {"type": "integer"}, "expires_ms": {"type": "integer"},
                "state": {"type": "string", "enum": ["pending", "approved", "denied", "expired"]},
                "answered_by": nullable_string, "answered_ms": {"type": "integer", "nullable": true},
                "remembered": {"type": "boolean"}
            }
        },
        "Event": {
            "type": "object",
            "required": ["id", "type", "time_ms", "data"],
            "properties": {
                "id": {"type": "integer"},
                "type": {"type": "string", "enum": ["job.started", "job.progress", "job.finished", "job.failed", "job.cancelled", "plugin.state_changed", "approval.requested", "approval.resolved"]},
                "time_ms": {"type": "integer"}, "job_id": {"type": "string"}, "owner": {"type": "string"},
                "data": {"type": "object"}
            }
        }
    })
}

/// The OpenAPI 3.1 document of `/api/v1`, as `GET /api/v1/openapi.json` serves it: every
/// route of [`ROUTES`] with its parameters, bodies and answers.
pub fn document() -> Value {
    let mut paths = Map::new();
    for op in operations() {
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
            "schemas": schemas()
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
