//! The document's shared schemas (`components/schemas`): what the answers hold.

use serde_json::{Value, json};

use crate::api::Execute;

use super::{body_of, schema_ref};

pub(super) fn nullable_string() -> Value {
    json!({"type": "string", "nullable": true})
}

pub(super) fn schemas() -> Value {
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
