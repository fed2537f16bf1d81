//! `GET /api/v1/openapi.json`: the API described as OpenAPI 3.0, built here beside the
//! routes. [`ROUTES`] is the list the router serves; a test checks the document names every
//! one of them.

use axum::Json;
use serde_json::{Map, Value, json};

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

/// `?locale=`: names and descriptions in that language where the manifest translates them.
fn locale_param() -> Value {
    query_param(
        "locale",
        "Names and descriptions in this language where the plugin translates them (`zh`, `zh-CN`)",
        json!({"type": "string", "maxLength": 35, "pattern": "^[A-Za-z0-9_-]*$"}),
    )
}

fn query_param(name: &str, description: &str, schema: Value) -> Value {
    json!({"name": name, "in": "query", "required": false, "description": description, "schema": schema})
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
            .param(locale_param())
            .param(query_param(
                "tag",
                "Only plugins with this tag, in any language the manifest gives tags in",
                json!({"type": "string"}),
            ))
            .respond("400", error_response("The locale is not a language tag"))
            .respond("200", json_response("The plugins", json!({"type": "object", "required": ["plugins"], "properties": {"plugins": {"type": "array", "items": schema_ref("Plugin")}}}))),
        op("GET", "/plugins/{id}", "getPlugin", "One plugin")
            .param(plugin_id())
            .param(locale_param())
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
            .body(json!({"type": "object", "required": ["source"], "additionalProperties": false, "properties": {
                "source": {"type": "string", "minLength": 1, "description": "A directory or archive path on the server's machine, or an https URL of an archive (with sha256)"},
                "id": {"type": "string", "pattern": "^[a-z0-9][a-z0-9._-]{0,63}$", "description": "Refuse unless the plugin has this id"},
                "sha256": {"type": "string", "pattern": "^[0-9a-fA-F]{64}$", "description": "Refuse an archive unless its SHA-256 is this"},
                "force": {"type": "boolean", "description": "Replace an installed plugin with the same id"}
            }}))
            .respond("201", json_response("Installed", schema_ref("Installed")))
            .respond("200", json_response("Replaced (force)", schema_ref("Installed")))
            .respond("400", error_response("The source, checksum or archive was refused; nothing was installed"))
            .respond("409", error_response("A plugin with that id is installed (use force), or the id belongs to a built-in or curated plugin"))
            .respond("415", error_response("The body is not application/json")),
        op("GET", "/mcp-servers", "listMcpServers", "The MCP servers mounted as plugins (kind mcp), with what each runs")
            .respond("200", json_response("The servers", json!({"type": "object", "required": ["servers"], "properties": {"servers": {"type": "array", "items": schema_ref("McpServer")}}}))),
        op("POST", "/mcp-servers", "addMcpServer", "Mount an MCP server: a command run over stdio, or a URL reached over streamable HTTP (as `toolshed mcp add`); credential env and headers go to the secret store")
            .body(json!({"type": "object", "required": ["name"], "additionalProperties": false, "properties": {
                "name": {"type": "string", "pattern": "^[a-z0-9_-]{1,32}$", "description": "Its name: tools become NAME__TOOL, the plugin mcp.NAME"},
                "command": {"type": "array", "items": {"type": "string"}, "maxItems": 256, "description": "The command and its arguments (stdio)"},
                "url": {"type": "string", "description": "An http:// or https:// URL (streamable HTTP), instead of command"},
                "headers": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Headers sent to the url server"},
                "env": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Variables for the command"},
                "allow_hosts": {"type": "array", "items": {"type": "string"}, "maxItems": 64, "description": "Hosts it may reach (HOST or HOST:PORT; * for any public host); none: no network"},
                "eager": {"type": "boolean", "description": "Start it as soon as toolshed opens, not at its first call"},
                "sandbox": {"type": "string", "enum": ["read-only", "workspace-write", "full-access"]},
                "prefix": {"type": "string", "pattern": "^[A-Za-z0-9_-]{0,32}$", "description": "Tools and prompts become PREFIX__TOOL instead of NAME__TOOL; empty: their own names"},
                "sampling": {"type": "boolean", "description": "It may ask for model completions during a call (declares and grants llm)"},
                "force": {"type": "boolean", "description": "Replace a server of the same name"}
            }}))
            .respond("201", json_response("Mounted and running", schema_ref("McpServer")))
            .respond("415", error_response("The body is not application/json"))
            .respond("422", error_response("It was installed but cannot start, or cannot be installed; the message says why")),
        op("POST", "/mcp-servers/import", "importMcpServers", "Mount every server of an mcpServers config (Claude Desktop, Claude Code, Cursor)")
            .body(json!({"type": "object", "required": ["config"], "properties": {
                "config": {"type": "object", "description": "The config: {\"mcpServers\": {NAME: {command, args, env} | {url, headers}}}"},
                "force": {"type": "boolean"}
            }}))
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
            .body(json!({"type": "object", "additionalProperties": false, "properties": {
                "tools": {"type": "array", "items": {"type": "string"}, "description": "Tools to accept, as mounted or as the server names them"},
                "all": {"type": "boolean", "description": "Accept every tool"}
            }}))
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
            .body(json!({"type": "object", "additionalProperties": false, "properties": {
                "add": {"type": "array", "items": {"type": "string", "pattern": "^((http|fs-read|fs-write|tool):.+|memory)$"}, "maxItems": 64},
                "remove": {"type": "array", "items": {"type": "string", "pattern": "^((http|fs-read|fs-write|tool):.+|memory)$"}, "maxItems": 64}
            }}))
            .respond("200", json_response("Its grants now", schema_ref("PluginGrants")))
            .respond("400", error_response("A grant is malformed, or the manifest does not ask for it"))
            .respond("404", not_found())
            .respond("415", error_response("The body is not application/json")),
        op("GET", "/plugins/{id}/tools", "listPluginTools", "The tools a plugin's manifest declares, and whether each is callable")
            .param(plugin_id())
            .param(locale_param())
            .respond("200", json_response("Its tools", json!({"type": "object", "required": ["plugin_id", "tools"], "properties": {"plugin_id": {"type": "string"}, "tools": {"type": "array", "items": schema_ref("Tool")}}})))
            .respond("400", error_response("The locale is not a language tag"))
            .respond("404", not_found()),
        op("GET", "/plugins/{id}/config", "getPluginConfig", "A plugin's config fields and values; secret values are never returned, only whether they are set")
            .param(plugin_id())
            .respond("200", json_response("The config", schema_ref("PluginConfig")))
            .respond("404", not_found()),
        op("PUT", "/plugins/{id}/config", "setPluginConfig", "Set config values, each checked against its field")
            .param(plugin_id())
            .body(json!({"type": "object", "required": ["values"], "additionalProperties": false, "properties": {"values": {"type": "object", "additionalProperties": true}}}))
            .respond("200", json_response("The config now", schema_ref("PluginConfig")))
            .respond("404", not_found())
            .respond("415", error_response("The body is not application/json")),
        op("GET", "/tools", "listTools", "The tools callers may see, optionally filtered")
            .param(query_param("group", "Only this group", json!({"type": "string"})))
            .param(query_param("plugin", "Only this plugin's tools", json!({"type": "string"})))
            .param(query_param("q", "Only tools whose name, title or description contains this", json!({"type": "string"})))
            .param(locale_param())
            .respond("200", json_response("The tools", json!({"type": "object", "required": ["tools"], "properties": {"tools": {"type": "array", "items": schema_ref("Tool")}}})))
            .respond("400", error_response("The locale is not a language tag")),
        op("GET", "/tools/search", "searchTools", "The tools the caller may use that best match what it wants to do, ranked (BM25 over names, titles, groups and descriptions)")
            .param(json!({"name": "q", "in": "query", "required": true, "description": "What you want to do, e.g. `replace text in a file`", "schema": {"type": "string", "minLength": 1, "maxLength": 500}}))
            .param(query_param("limit", "The most tools returned (default 8)", json!({"type": "integer", "minimum": 1, "maximum": 50})))
            .param(query_param("profile", "Search what a caller using this profile sees", json!({"type": "string"})))
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
            .param(query_param("namespace", "Only this namespace", json!({"type": "string", "maxLength": 80})))
            .param(query_param("tags", "Only memories with all these tags, comma-separated", json!({"type": "string"})))
            .param(query_param("cursor", "The next_cursor of the previous page", json!({"type": "string"})))
            .param(query_param("limit", "The most memories (1 to 100; default 20)", json!({"type": "integer", "minimum": 1, "maximum": 100})))
            .respond("200", json_response("A page; next_cursor leads to older memories", json!({"type": "object", "required": ["memories"], "properties": {"memories": {"type": "array", "items": schema_ref("Memory")}, "next_cursor": nullable_string()}})))),
        memory_op(op("POST", "/memories", "storeMemory", "Remember something, or update memory `id` (a call of memory_store)")
            .body(json!({"type": "object", "required": ["text"], "additionalProperties": false, "properties": {
                "text": {"type": "string", "minLength": 1},
                "title": {"type": "string", "maxLength": 200},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 20},
                "namespace": {"type": "string", "maxLength": 80},
                "id": {"type": "string", "description": "Update this memory instead of storing a new one"},
                "ttl": {"type": "string", "description": "Forget after e.g. 7d"}
            }}))
            .respond("201", json_response("Stored", schema_ref("Memory")))
            .respond("200", json_response("Updated (id)", schema_ref("Memory")))
            .respond("415", error_response("The body is not application/json"))),
        memory_op(op("GET", "/memories/search", "searchMemories", "Full-text search of the caller's memories, best first (a call of memory_search)")
            .param(json!({"name": "q", "in": "query", "required": true, "description": "Words, \"a phrase\", prefix*, OR, -word", "schema": {"type": "string", "minLength": 1, "maxLength": toolshed_host::memory::MAX_QUERY_LEN}}))
            .param(query_param("namespace", "Only this namespace", json!({"type": "string", "maxLength": 80})))
            .param(query_param("tags", "Only memories with all these tags, comma-separated", json!({"type": "string"})))
            .param(query_param("limit", "The most results (1 to 100; default 10)", json!({"type": "integer", "minimum": 1, "maximum": 100})))
            .param(query_param("since", "Only memories changed since then: 7d, an RFC 3339 time or epoch milliseconds", json!({"type": "string"})))
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
            .param(query_param("limit", "How many rows (1 to 1000; default 100)", json!({"type": "integer", "minimum": 1, "maximum": 1000})))
            .param(query_param("tool", "Only calls of tools matching this glob (workspace_*)", json!({"type": "string"})))
            .param(query_param("owner", "Only calls of owners matching this glob (alice, alice/*)", json!({"type": "string"})))
            .param(query_param("since", "Only calls since then: 30m, 2h, 7d, an RFC 3339 time or epoch milliseconds", json!({"type": "string", "pattern": "^([0-9]+[smhd]?|[0-9]{4}-[0-9]{2}-[0-9]{2}T.+)?$"})))
            .param(query_param("outcome", "Only this outcome (empty, as a form left blank sends it: any)", json!({"type": "string", "enum": ["", "ok", "tool_error", "error"]})))
            .param(query_param("parent", "Only the calls made on behalf of this call id (a run_code snippet's tool calls)", json!({"type": "string", "maxLength": 64})))
            .param(query_param("cursor", "The next_cursor of the previous page", json!({"type": "string", "pattern": "^([1-9][0-9]{0,17})?$"})))
            .respond("200", json_response("The rows, newest first; next_cursor leads to older rows", json!({"type": "object", "required": ["audit"], "properties": {"audit": {"type": "array", "items": {"type": "object"}}, "next_cursor": {"type": ["string", "null"]}}})))
            .respond("400", error_response("limit is out of range, or since, outcome or cursor is not valid")),
        op("GET", "/approvals", "listApprovals", "Calls waiting for a person's approval (with all=true, recent answered and expired requests too)")
            .param(query_param("all", "Also the answered and expired requests", json!({"type": "boolean"})))
            .respond("200", json_response("The requests, newest first", json!({"type": "object", "required": ["approvals"], "properties": {"approvals": {"type": "array", "items": schema_ref("Approval")}}}))),
        op("GET", "/approvals/{id}", "getApproval", "One approval request")
            .param(path_param("id", "A request id, e.g. ap-0123456789abcdef"))
            .respond("200", json_response("The request", schema_ref("Approval")))
            .respond("404", not_found()),
        op("POST", "/approvals/{id}/approve", "approve", "Let the waiting call run; `remember` approves the same tool with the same arguments for its owner from now on. The body is optional")
            .param(path_param("id", "A request id, e.g. ap-0123456789abcdef"))
            .optional_body(json!({"type": "object", "additionalProperties": false, "properties": {"remember": {"type": "boolean"}}}))
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
            .body(json!({"type": "object", "required": ["action"], "additionalProperties": false, "properties": {"action": {"type": "string", "enum": ["accept", "decline", "cancel"]}, "content": {"type": "object"}}}))
            .respond("200", json_response("The question answered", json!({"type": "object", "required": ["answered"], "properties": {"answered": {"type": "object"}}})))
            .respond("400", error_response("The body is not an answer"))
            .respond("403", error_response("The question is another owner's"))
            .respond("404", not_found()),
        op("GET", "/jobs", "listJobs", "Jobs kept (running, and finished ones until their retention passes)")
            .param(query_param("owner", "Only this owner's jobs", json!({"type": "string"})))
            .param(query_param("state", "Only jobs in this state", json!({"type": "string", "enum": ["running", "succeeded", "failed", "cancelled"]})))
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
            .param(query_param("job", "Only this job's events", json!({"type": "string"})))
            .param(query_param("owner", "Only the events of this owner's jobs (plugin events always pass)", json!({"type": "string"})))
            .param(query_param("last_event_id", "Resume after this event id", json!({"type": "integer", "minimum": 0, "maximum": 9_007_199_254_740_991u64})))
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
            .param(query_param("job", "Only this job's events", json!({"type": "string"})))
            .param(query_param("owner", "Only the events of this owner's jobs", json!({"type": "string"})))
            .param(query_param("last_event_id", "Resume after this event id", json!({"type": "integer", "minimum": 0, "maximum": 9_007_199_254_740_991u64})))
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
        "ExecuteRequest": {
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "arguments": {"type": "object", "additionalProperties": true, "description": "The tool's arguments, checked against its input schema"},
                "async": {"type": "boolean", "description": "Start a job and answer 202 at once"},
                "timeout_ms": {"type": "integer", "minimum": 1, "description": "The call's deadline"}
            }
        },
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
