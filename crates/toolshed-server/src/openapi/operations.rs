//! Every operation of the REST API: its path, summary, parameters, body and answers. The
//! bodies and query parameters come from the types the handlers read
//! ([`body_of`](super::body_of), [`query_of`](super::query_of)), the answers' schemas from
//! the types they return ([`Replies`]); what each answer means is written here.

use serde_json::{Value, json};

use crate::api::{
    CommandAnswer, CommandList, ConfigUpdate, EnvLayers, GrantsChange, InstallBody, JobFilter,
    LocaleQuery, OwnerFilter, PluginExecute, PluginsQuery, RunningFilter, ToolFilter, ToolSearch,
};
use crate::approvals::{Answer, ApprovalFilter, AuditFilter};
use crate::gateway::{AcceptBody, AddBody, ImportBody};
use crate::memories::{ListQuery, NewMemory, SearchQuery};
use crate::reply::{
    Answered, Approval, ApprovalList, AuditPage, CallResult, Deleted, Health, Imported, Installed,
    Job, JobList, JobStarted, McpServer, McpServerDetail, McpServerList, Memory, MemoryMatches,
    MemoryPage, PluginConfig, PluginDetail, PluginGrants, PluginHealth, PluginList, PluginTools,
    QuestionList, Removed, RunningList, RunningOutput, ScheduleList, SearchResults, TodoLists,
    Tool, ToolGroups, ToolList, Uninstalled, Verified,
};
use crate::stream::EventQuery;

use super::dialect::Replies;
use super::{Op, body_of, error_response, json_response, op, path_param, query_of, schema_ref};

fn plugin_id() -> Value {
    path_param("id", "A plugin id, e.g. system.calculator")
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

pub(super) fn operations(r: &mut Replies) -> Vec<Op> {
    let not_found = || error_response("No such plugin, tool or job");
    let conflict = || error_response("Not possible in the current state");
    vec![
        op("GET", "/health", "health", "Whether the server is up (no token needed)")
            .open()
            .respond("200", json_response("Up", r.of::<Health>()))
            .respond("503", json_response("Shutting down (`draining`): send no more requests here", r.of::<Health>())),
        op("GET", "/metrics", "metrics", "Prometheus metrics: calls by tool and outcome, durations, jobs, live sessions and processes")
            .respond("200", json!({"description": "Prometheus text format", "content": {"text/plain": {"schema": {"type": "string"}}}})),
        op("GET", "/plugins", "listPlugins", "Every plugin with its state, tags, author, dependencies and manifest dialect")
            .params(query_of::<PluginsQuery>())
            .respond("400", error_response("The locale is not a language tag"))
            .respond("200", json_response("The plugins", r.of::<PluginList>())),
        op("GET", "/plugins/{id}", "getPlugin", "One plugin")
            .param(plugin_id())
            .params(query_of::<LocaleQuery>())
            .respond("200", json_response("The plugin", r.of::<PluginDetail>()))
            .respond("400", error_response("The locale is not a language tag"))
            .respond("404", not_found()),
        op("DELETE", "/plugins/{id}", "uninstallPlugin", "Uninstall a user plugin: stop it, remove its files, forget its state")
            .param(plugin_id())
            .respond("200", json_response("What was removed", r.of::<Uninstalled>()))
            .respond("404", not_found())
            .respond("409", error_response("A system or curated plugin cannot be uninstalled"))
            .respond("500", error_response("Its files could not be removed")),
        op("POST", "/plugins/{id}/enable", "enablePlugin", "Enable a plugin (persisted)")
            .param(plugin_id())
            .respond("200", json_response("The plugin now", r.of::<PluginDetail>()))
            .respond("404", not_found()),
        op("POST", "/plugins/{id}/disable", "disablePlugin", "Disable a plugin (persisted); its tools stop being callable")
            .param(plugin_id())
            .respond("200", json_response("The plugin now", r.of::<PluginDetail>()))
            .respond("404", not_found()),
        op("POST", "/plugins/{id}/pause", "pausePlugin", "Pause a running plugin (persisted): it stays loaded, its calls are refused until it is resumed")
            .param(plugin_id())
            .respond("200", json_response("The plugin now", r.of::<PluginDetail>()))
            .respond("404", not_found())
            .respond("409", error_response("The plugin is not running, or paused already")),
        op("POST", "/plugins/{id}/resume", "resumePlugin", "Resume a paused plugin: its calls go through again")
            .param(plugin_id())
            .respond("200", json_response("The plugin now", r.of::<PluginDetail>()))
            .respond("404", not_found())
            .respond("409", error_response("The plugin is not paused")),
        op("GET", "/plugins/{id}/health", "pluginHealth", "How the plugin is now: a JavaScript plugin's health() export is asked")
            .param(plugin_id())
            .respond("200", json_response("Its health", r.of::<PluginHealth>()))
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
            .respond("200", json_response("What changed since the install", r.of::<Verified>()))
            .respond("404", not_found())
            .respond("409", error_response("toolshed has no record of installing it")),
        op("POST", "/plugins/{id}/reload", "reloadPlugin", "Stop and start a running plugin")
            .param(plugin_id())
            .respond("200", json_response("The plugin now", r.of::<PluginDetail>()))
            .respond("404", not_found())
            .respond("409", error_response("The plugin is disabled")),
        op("POST", "/plugins", "installPlugin", "Install a plugin from a directory or a .tar.gz/.tgz/.zip file on the server's machine, and load it")
            .body(body_of::<InstallBody>())
            .respond("201", json_response("Installed", r.of::<Installed>()))
            .respond("200", json_response("Replaced (force)", r.of::<Installed>()))
            .respond("400", error_response("The source, checksum or archive was refused; nothing was installed"))
            .respond("409", error_response("A plugin with that id is installed (use force), or the id belongs to a built-in or curated plugin"))
            .respond("415", error_response("The body is not application/json")),
        op("GET", "/mcp-servers", "listMcpServers", "The MCP servers mounted as plugins (kind mcp), with what each runs")
            .respond("200", json_response("The servers", r.of::<McpServerList>())),
        op("POST", "/mcp-servers", "addMcpServer", "Mount an MCP server: a command run over stdio, or a URL reached over streamable HTTP (as `toolshed mcp add`); credential env and headers go to the secret store")
            .body(body_of::<AddBody>())
            .respond("201", json_response("Mounted and running", r.of::<McpServer>()))
            .respond("415", error_response("The body is not application/json"))
            .respond("422", error_response("It was installed but cannot start, or cannot be installed; the message says why")),
        op("POST", "/mcp-servers/import", "importMcpServers", "Mount every server of an mcpServers config (Claude Desktop, Claude Code, Cursor)")
            .body(body_of::<ImportBody>())
            .respond("200", json_response("Each server's outcome", r.of::<Imported>()))
            .respond("415", error_response("The body is not application/json"))
            .respond("422", error_response("A server could not be managed")),
        op("GET", "/mcp-servers/{name}", "getMcpServer", "One mounted server with its pinned tool digests and the tools it withholds")
            .param(path_param("name", "The server's name (or its plugin id, mcp.NAME)"))
            .respond("200", json_response("The server", r.of::<McpServerDetail>()))
            .respond("404", error_response("No such server"))
            .respond("422", error_response("Its pins cannot be read")),
        op("DELETE", "/mcp-servers/{name}", "removeMcpServer", "Unmount a server: its plugin, state and config")
            .param(path_param("name", "The server's name (or its plugin id, mcp.NAME)"))
            .respond("200", json_response("What was removed", r.of::<Removed>()))
            .respond("404", error_response("No such server"))
            .respond("422", error_response("It could not be removed")),
        op("POST", "/mcp-servers/{name}/accept", "acceptMcpServerTools", "Accept changed tool definitions (they are pinned again) and start the server again")
            .param(path_param("name", "The server's name (or its plugin id, mcp.NAME)"))
            .body(body_of::<AcceptBody>())
            .respond("200", json_response("The server now", r.of::<McpServer>()))
            .respond("404", error_response("No such server"))
            .respond("415", error_response("The body is not application/json"))
            .respond("422", error_response("It could not be started again")),
        op("GET", "/plugins/{id}/grants", "getPluginGrants", "What a plugin's manifest asks for and what it was granted")
            .param(plugin_id())
            .respond("200", json_response("Its grants", r.of::<PluginGrants>()))
            .respond("404", not_found()),
        op("POST", "/plugins/{id}/grants", "changePluginGrants", "Grant or take back capabilities (http:HOST[:PORT], fs-read:PATH, fs-write:PATH, tool:NAME, memory); the plugin reloads with them")
            .param(plugin_id())
            .body(body_of::<GrantsChange>())
            .respond("200", json_response("Its grants now", r.of::<PluginGrants>()))
            .respond("400", error_response("A grant is malformed, or the manifest does not ask for it"))
            .respond("404", not_found())
            .respond("415", error_response("The body is not application/json")),
        op("GET", "/plugins/{id}/tools", "listPluginTools", "The tools a plugin's manifest declares, and whether each is callable")
            .param(plugin_id())
            .params(query_of::<LocaleQuery>())
            .respond("200", json_response("Its tools", r.of::<PluginTools>()))
            .respond("400", error_response("The locale is not a language tag"))
            .respond("404", not_found()),
        op("POST", "/plugins/{id}/tools/execute", "executePluginTool", "Call one of this plugin's tools (toolName) through the pipeline, as Agent Spaces does; workspaceId, executorId, taskId and meta come back in the call's events (tool.executed, or the job's)")
            .param(plugin_id())
            .body(body_of::<PluginExecute>())
            .respond("200", json_response("The result; is_error=true when the tool ran and failed", r.of::<CallResult>()))
            .respond("202", json!({
                "description": "A job was started",
                "headers": {"Location": {"description": "The job's URL", "schema": {"type": "string"}}},
                "content": {"application/json": {"schema": r.of::<JobStarted>()}}
            }))
            .respond("403", error_response("Denied by review or policy, or needs approval"))
            .respond("404", error_response("No such plugin, or the tool is not this plugin's"))
            .respond("409", conflict())
            .respond("415", error_response("The body is not application/json"))
            .respond("429", error_response("A quota is used up (details.retry_after, Retry-After), too many jobs are running, or too many failed authentications"))
            .respond("500", error_response("A bug in toolshed"))
            .respond("503", error_response("The tool's plugin lacks configuration or environment variables"))
            .respond("504", error_response("The call's deadline passed")),
        op("GET", "/plugins/{id}/config", "getPluginConfig", "A plugin's config fields and values; secret values are never returned, only whether they are set")
            .param(plugin_id())
            .respond("200", json_response("The config", r.of::<PluginConfig>()))
            .respond("404", not_found()),
        op("PUT", "/plugins/{id}/config", "setPluginConfig", "Set config values, each checked against its field")
            .param(plugin_id())
            .body(body_of::<ConfigUpdate>())
            .respond("200", json_response("The config now", r.of::<PluginConfig>()))
            .respond("404", not_found())
            .respond("415", error_response("The body is not application/json")),
        op("GET", "/tools", "listTools", "The tools callers may see, optionally filtered")
            .params(query_of::<ToolFilter>())
            .respond("200", json_response("The tools", r.of::<ToolList>()))
            .respond("400", error_response("The locale is not a language tag, or the plane is not one")),
        op("GET", "/tools/search", "searchTools", "The tools the caller may use that best match what it wants to do, ranked (BM25 over names, titles, groups and descriptions)")
            .params(query_of::<ToolSearch>())
            .respond("200", json_response("The matches, best first", r.of::<SearchResults>())),
        op("GET", "/tools/groups", "listToolGroups", "The operator groups of the tools the caller may use, each with its label, description and tools")
            .respond("200", json_response("The groups", r.of::<ToolGroups>())),
        op("GET", "/tools/{name}", "getTool", "One tool with its input schema and annotations")
            .param(path_param("name", "A tool name, e.g. calculator"))
            .respond("200", json_response("The tool", r.of::<Tool>()))
            .respond("404", not_found()),
        op("POST", "/tools/{name}/execute", "executeTool", "Call a tool through the pipeline; with async=true start a job and answer 202")
            .param(path_param("name", "A tool name, e.g. calculator"))
            .body(schema_ref("ExecuteRequest"))
            .respond("200", json_response("The result; is_error=true when the tool ran and failed", r.of::<CallResult>()))
            .respond("202", json!({
                "description": "A job was started",
                "headers": {"Location": {"description": "The job's URL", "schema": {"type": "string"}}},
                "content": {"application/json": {"schema": r.of::<JobStarted>()}}
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
            .respond("200", json_response("A page; next_cursor leads to older memories", r.of::<MemoryPage>()))),
        memory_op(op("POST", "/memories", "storeMemory", "Remember something, or update memory `id` (a call of memory_store)")
            .body(body_of::<NewMemory>())
            .respond("201", json_response("Stored", r.of::<Memory>()))
            .respond("200", json_response("Updated (id)", r.of::<Memory>()))
            .respond("415", error_response("The body is not application/json"))),
        memory_op(op("GET", "/memories/search", "searchMemories", "Full-text search of the caller's memories, best first (a call of memory_search)")
            .params(query_of::<SearchQuery>())
            .respond("200", json_response("The matches, best first, matched terms in **bold** in each snippet", r.of::<MemoryMatches>()))),
        memory_op(op("GET", "/memories/{id}", "getMemory", "One of the caller's memories (a compacted one says so); a deleted one is 404 (restore it first)")
            .param(path_param("id", "A memory id, e.g. m-0123456789abcdef"))
            .respond("200", json_response("The memory", r.of::<Memory>()))),
        memory_op(op("DELETE", "/memories/{id}", "deleteMemory", "Delete a memory (restorable for [memory] deleted_days)")
            .param(path_param("id", "A memory id, e.g. m-0123456789abcdef"))
            .respond("200", json_response("What was deleted", r.of::<Deleted>()))),
        memory_op(op("POST", "/memories/{id}/restore", "restoreMemory", "Bring back a deleted or compacted memory")
            .param(path_param("id", "A memory id, e.g. m-0123456789abcdef"))
            .respond("200", json_response("The memory now", r.of::<Memory>()))),
        op("GET", "/audit", "listAudit", "Audit rows, newest first and paged: every call with its owner, door, outcome and, when it needed one, how its approval ended and who answered")
            .params(query_of::<AuditFilter>())
            .respond("200", json_response("The rows, newest first; next_cursor leads to older rows", r.of::<AuditPage>()))
            .respond("400", error_response("limit is out of range, or since, outcome or cursor is not valid")),
        op("GET", "/approvals", "listApprovals", "Calls waiting for a person's approval (with all=true, recent answered and expired requests too)")
            .params(query_of::<ApprovalFilter>())
            .respond("200", json_response("The requests, newest first", r.of::<ApprovalList>())),
        op("GET", "/approvals/{id}", "getApproval", "One approval request")
            .param(path_param("id", "A request id, e.g. ap-0123456789abcdef"))
            .respond("200", json_response("The request", r.of::<Approval>()))
            .respond("404", not_found()),
        op("POST", "/approvals/{id}/approve", "approve", "Let the waiting call run; `remember` approves the same tool with the same arguments for its owner from now on. The body is optional")
            .param(path_param("id", "A request id, e.g. ap-0123456789abcdef"))
            .optional_body(body_of::<Answer>())
            .respond("200", json_response("The request, approved", r.of::<Approval>()))
            .respond("404", not_found())
            .respond("409", error_response("The request is not pending any more (answered or expired)")),
        op("POST", "/approvals/{id}/deny", "deny", "Refuse the waiting call")
            .param(path_param("id", "A request id, e.g. ap-0123456789abcdef"))
            .respond("200", json_response("The request, denied", r.of::<Approval>()))
            .respond("404", not_found())
            .respond("409", error_response("The request is not pending any more (answered or expired)")),
        op("GET", "/questions", "listQuestions", "Questions tools asked a person (ask_user, a plugin's ctx.ask) that the calling client could not put to them, waiting for an answer; an agent token sees its own owner's")
            .respond("200", json_response("The questions, oldest first", r.of::<QuestionList>())),
        op("POST", "/questions/{id}/answer", "answerQuestion", "Answer a waiting question: accept with the fields its schema asks for, or decline; the asking call goes on with the answer")
            .param(path_param("id", "A question id, e.g. q-0123456789abcdef"))
            .body(body_of::<crate::questions::Body>())
            .respond("200", json_response("The question answered", r.of::<Answered>()))
            .respond("400", error_response("The body is not an answer"))
            .respond("403", error_response("The question is another owner's"))
            .respond("404", not_found()),
        op("GET", "/jobs", "listJobs", "Jobs kept (running, and finished ones until their retention passes)")
            .params(query_of::<JobFilter>())
            .respond("200", json_response("The jobs", r.of::<JobList>())),
        op("GET", "/jobs/{id}", "getJob", "One job: state, progress, result")
            .param(path_param("id", "A job id, e.g. job-1"))
            .respond("200", json_response("The job", r.of::<Job>()))
            .respond("404", not_found()),
        op("POST", "/jobs/{id}/cancel", "cancelJob", "Cancel a running job (its tool stops; a command's process tree is killed)")
            .param(path_param("id", "A job id, e.g. job-1"))
            .respond("200", json_response("The job now", r.of::<Job>()))
            .respond("404", not_found())
            .respond("409", error_response("The job has already ended")),
        op("GET", "/todos", "listTodos", "The todo lists agents keep with todo_write, newest first; an agent token sees its own owner's (and its sub-owners')")
            .params(query_of::<OwnerFilter>())
            .respond("200", json_response("The lists", r.of::<TodoLists>()))
            .respond("500", error_response("The state store failed")),
        op("GET", "/schedules", "listSchedules", "The schedules agents made with schedule_create, soonest first; an agent token sees its own owner's (and its sub-owners')")
            .params(query_of::<OwnerFilter>())
            .respond("200", json_response("The schedules", r.of::<ScheduleList>()))
            .respond("500", error_response("The state store failed")),
        op("POST", "/upload", "upload", "Store a file in the workspace's uploads/ folder under a fresh name: the body is the file's bytes (?name= names it) or a multipart/form-data form whose first file part is taken; at most the server's body limit")
            .params(query_of::<crate::api::UploadQuery>())
            .file_body()
            .respond("201", json_response("Where it is: its workspace path and download URL", r.of::<crate::api::Uploaded>()))
            .respond("400", error_response("A name over 255 characters, or a form without a file"))
            .respond("403", error_response("The workspace refused the write (a read-only sandbox, a hidden path)"))
            .respond("413", error_response("The body is over the server's limit")),
        op("GET", "/uploads/{file}", "downloadUpload", "A file of uploads/, as an attachment")
            .param(path_param("file", "Its name, as POST /upload answered"))
            .respond("200", json!({"description": "The file's bytes", "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}))
            .respond("404", not_found()),
        op("GET", "/env", "getEnv", "The layers of variables the caller's commands get, by name (never a value): the workspace's .env files, what plugins granted shell-env contribute, and the caller's session layer")
            .respond("200", json_response("The layers", r.of::<EnvLayers>())),
        op("PUT", "/env", "putEnv", "Replace the caller's session layer: variables its commands get over the .env files and plugins' contributions, under a call's own env; kept until cleared or the server stops")
            .body(crate::api::session_env_schema())
            .respond("200", json_response("The layers", r.of::<EnvLayers>()))
            .respond("400", error_response("A name or value the layer cannot hold"))
            .respond("409", conflict())
            .respond("415", error_response("The body is not application/json")),
        op("DELETE", "/env", "clearEnv", "Clear the caller's session layer")
            .respond("200", json_response("The layers", r.of::<EnvLayers>())),
        op("GET", "/commands", "listCommands", "The human commands (status, approvals, approve, deny): actions a person runs without the model, as MCP clients get them as prompts")
            .respond("200", json_response("The commands", r.of::<CommandList>())),
        op("POST", "/commands/{name}", "runCommand", "Run a human command that takes no argument: status or approvals")
            .param(json!({"name": "name", "in": "path", "required": true, "description": "status or approvals",
                          "schema": {"type": "string", "enum": ["status", "approvals"]}}))
            .respond("200", json_response("What it answered, as text and data", r.of::<CommandAnswer>()))
            .respond("404", error_response("No such command, or one that takes an id (approve, deny): POST /commands/{name}/{id}"))
            .respond("500", error_response("A bug in toolshed, or the state store failed")),
        op("POST", "/commands/{name}/{id}", "runCommandOn", "Approve or deny one waiting call, by its approval request's id")
            .param(json!({"name": "name", "in": "path", "required": true, "description": "approve or deny",
                          "schema": {"type": "string", "enum": ["approve", "deny"]}}))
            .param(path_param("id", "The approval request's id, e.g. ap-3"))
            .respond("200", json_response("What it answered, as text and data", r.of::<CommandAnswer>()))
            .respond("403", error_response("The caller may not answer that request"))
            .respond("404", error_response("No such command or approval request, or a command that takes no id"))
            .respond("409", conflict())
            .respond("500", error_response("A bug in toolshed, or the state store failed")),
        op("GET", "/stats", "getStats", "The audit log summed up over the last `minutes` (calls per bucket by outcome, latency percentiles of the busiest tools, the slowest and most failing tools, the busiest owners) and the server's samples (approvals waiting, processes, sessions, memory): what the dashboard draws")
            .params(query_of::<crate::stats::StatsQuery>())
            .respond("200", json_response("The figures", r.of::<crate::stats::Stats>()))
            .respond("400", error_response("`minutes` is out of range")),
        op("GET", "/running", "listRunning", "What plugins keep running for owners (background processes, command sessions, browser sessions), newest first, read without a tool call; an agent token sees its own owner's (and its sub-owners')")
            .params(query_of::<RunningFilter>())
            .respond("200", json_response("The items", r.of::<RunningList>())),
        op("GET", "/running/{plugin}/{id}/output", "getRunningOutput", "The last 64 KiB of one running item's output; reading it moves no cursor of its owner's")
            .param(path_param("plugin", "The plugin keeping it, e.g. system.process"))
            .param(path_param("id", "Its id, e.g. p1"))
            .respond("200", json_response("The item and its output", r.of::<RunningOutput>()))
            .respond("404", not_found()),
        op("POST", "/running/{plugin}/{id}/stop", "stopRunning", "Stop one running item (a command session, a background process, a browser page) with the call its plugin names, made through the pipeline as its owner and audited")
            .param(path_param("plugin", "The plugin keeping it, e.g. system.exec_command"))
            .param(path_param("id", "Its id, e.g. 3"))
            .respond("200", json_response("The stop call's result", r.of::<CallResult>()))
            .respond("403", error_response("Denied by review or policy, or needs approval"))
            .respond("404", not_found())
            .respond("409", conflict())
            .respond("429", error_response("A quota is used up"))
            .respond("500", error_response("A bug in toolshed")),
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
