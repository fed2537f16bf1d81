//! `system.memory`: the memory tools over [`Memories`].

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use toolshed_core::{
    BuiltinPlugin, CallContext, Danger, Plugin, PluginKind, PluginManifest, Tool, ToolAnnotations,
    ToolError, ToolOutput, ToolSpec,
};

use super::{Found, Memories, Memory, MemoryError, NewMemory, Search};

/// The plugin id.
pub(super) const PLUGIN_ID: &str = "system.memory";
const GROUP: &str = "memory";

/// The memory tools' plugin, over `memories`.
pub fn plugin(memories: Memories) -> Arc<dyn Plugin> {
    let mut manifest = PluginManifest::new(
        PLUGIN_ID,
        env!("CARGO_PKG_VERSION"),
        "Memory",
        PluginKind::Builtin,
    );
    manifest.description =
        "Persistent, searchable notes kept across sessions (memory_store, memory_search, ...)."
            .into();
    manifest.tags = vec![GROUP.into()];
    let memories = Arc::new(memories);
    let tools: Vec<Arc<dyn Tool>> = OPS
        .iter()
        .map(|op| {
            Arc::new(MemoryTool {
                op: *op,
                spec: spec(*op),
                memories: memories.clone(),
            }) as Arc<dyn Tool>
        })
        .collect();
    Arc::new(BuiltinPlugin::new(manifest, tools))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Store,
    Search,
    Get,
    List,
    Delete,
    AppendDaily,
    Compact,
}

const OPS: [Op; 7] = [
    Op::Store,
    Op::Search,
    Op::Get,
    Op::List,
    Op::Delete,
    Op::AppendDaily,
    Op::Compact,
];

const WRITES: ToolAnnotations = ToolAnnotations {
    read_only: false,
    destructive: false,
    idempotent: false,
    open_world: false,
};

fn tags_schema(description: Option<&str>) -> Value {
    let mut schema =
        json!({"type": "array", "items": {"type": "string"}, "maxItems": super::MAX_TAGS});
    if let Some(description) = description {
        schema["description"] = description.into();
    }
    schema
}

fn spec(op: Op) -> ToolSpec {
    let (name, title, description, schema, annotations) = match op {
        Op::Store => (
            "memory_store",
            "Remember",
            "Remember something across sessions, or update memory `id`.",
            json!({"type": "object", "additionalProperties": false, "properties": {
                "text": {"type": "string", "minLength": 1},
                "title": {"type": "string", "maxLength": 200},
                "tags": tags_schema(None),
                "namespace": {"type": "string", "maxLength": 80, "description": "e.g. a project"},
                "id": {"type": "string"},
                "ttl": {"type": "string", "description": "Forget after e.g. `7d`"}
            }, "required": ["text"]}),
            WRITES,
        ),
        Op::Search => (
            "memory_search",
            "Recall",
            "Search your memories, best first: words, \"a phrase\", prefix*, OR, -word.",
            json!({"type": "object", "additionalProperties": false, "properties": {
                "query": {"type": "string", "minLength": 1, "maxLength": super::query::MAX_QUERY_LEN},
                "tags": tags_schema(None),
                "namespace": {"type": "string", "maxLength": 80},
                "limit": {"type": "integer", "minimum": 1, "maximum": super::MAX_PAGE, "default": 10},
                "since": {"type": "string", "description": "e.g. `7d`"}
            }, "required": ["query"]}),
            ToolAnnotations::PURE,
        ),
        Op::Get => (
            "memory_get",
            "Read a memory",
            "Read a memory.",
            json!({"type": "object", "additionalProperties": false, "properties": {
                "id": {"type": "string", "minLength": 1}
            }, "required": ["id"]}),
            ToolAnnotations::PURE,
        ),
        Op::List => (
            "memory_list",
            "List memories",
            "List your memories, newest first.",
            json!({"type": "object", "additionalProperties": false, "properties": {
                "namespace": {"type": "string", "maxLength": 80},
                "tags": tags_schema(None),
                "cursor": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1, "maximum": super::MAX_PAGE, "default": 20}
            }}),
            ToolAnnotations::PURE,
        ),
        Op::Delete => (
            "memory_delete",
            "Forget",
            "Delete a memory, or `restore` one.",
            json!({"type": "object", "additionalProperties": false, "properties": {
                "id": {"type": "string", "minLength": 1},
                "restore": {"type": "boolean"}
            }, "required": ["id"]}),
            ToolAnnotations {
                read_only: false,
                destructive: true,
                idempotent: true,
                open_world: false,
            },
        ),
        Op::AppendDaily => (
            "memory_append_daily",
            "Journal",
            "Add a line to today's journal.",
            json!({"type": "object", "additionalProperties": false, "properties": {
                "text": {"type": "string", "minLength": 1}
            }, "required": ["text"]}),
            WRITES,
        ),
        Op::Compact => (
            "memory_compact_summary",
            "Compact memories",
            "Replace old memories with your summary: first call gives them and a `token`, the \
             second passes `summary` and `token`.",
            json!({"type": "object", "additionalProperties": false, "properties": {
                "namespace": {"type": "string", "maxLength": 80},
                "before": {"type": "string", "description": "e.g. `30d`"},
                "summary": {"type": "string"},
                "token": {"type": "string"}
            }}),
            WRITES,
        ),
    };
    let mut spec = ToolSpec::new(name, description)
        .title(title)
        .group(GROUP)
        .input_schema(schema)
        .annotations(annotations);
    spec.danger = match op {
        Op::Delete | Op::Compact => Danger::Medium,
        _ => Danger::Low,
    };
    spec.mutates_state = !annotations.read_only;
    spec
}

struct MemoryTool {
    op: Op,
    spec: ToolSpec,
    memories: Arc<Memories>,
}

#[async_trait]
impl Tool for MemoryTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, ctx: CallContext, args: Value) -> Result<ToolOutput, ToolError> {
        let memories = self.memories.clone();
        let op = self.op;
        let owner = ctx.owner.0.clone();
        tokio::task::spawn_blocking(move || run(op, &memories, &owner, &args))
            .await
            .map_err(|e| ToolError::Internal(format!("the memory task failed: {e}")))?
    }
}

fn text_arg(args: &Value, key: &str) -> Option<String> {
    args.get(key).and_then(Value::as_str).map(str::to_string)
}

fn tags_arg(args: &Value) -> Vec<String> {
    args.get("tags")
        .and_then(Value::as_array)
        .map(|tags| {
            tags.iter()
                .filter_map(|t| t.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn error(e: MemoryError) -> ToolError {
    match e {
        MemoryError::Invalid(message) => ToolError::invalid(message),
        MemoryError::NotFound(message) => ToolError::NotFound(message),
        MemoryError::Conflict(message) => ToolError::Conflict(message),
        MemoryError::Store(e) => ToolError::Internal(e.to_string()),
        MemoryError::Unwritten(message) => ToolError::Internal(message),
    }
}

/// A time argument (`7d`, an RFC 3339 time, epoch milliseconds) as milliseconds back from
/// `now`, naming the argument when it is not one.
fn time_arg(args: &Value, key: &str, now: i64) -> Result<Option<i64>, ToolError> {
    match text_arg(args, key) {
        None => Ok(None),
        Some(text) => crate::kit::parse_since(&text, now)
            .map(Some)
            .map_err(|e| ToolError::invalid_at(format!("/{key}"), e.replacen("since", key, 1))),
    }
}

fn when(ms: i64) -> String {
    crate::kit::local_time(ms)
}

fn show(memory: &Memory) -> String {
    let mut head = format!("{} · {}", memory.id, when(memory.updated_ms));
    if !memory.namespace.is_empty() {
        head.push_str(&format!(" · namespace {}", memory.namespace));
    }
    if !memory.tags.is_empty() {
        head.push_str(&format!(" · #{}", memory.tags.join(" #")));
    }
    if let Some(ms) = memory.deleted_ms {
        head.push_str(&format!(
            " · DELETED {} (memory_delete with restore brings it back)",
            when(ms)
        ));
    }
    if let Some(summary) = &memory.archived_in {
        head.push_str(&format!(" · COMPACTED into {summary}"));
    }
    let title = if memory.title.is_empty() {
        String::new()
    } else {
        format!("{}\n", memory.title)
    };
    format!("{head}\n{title}{}", memory.text)
}

fn found_line(found: &Found) -> String {
    let title = if found.title.is_empty() {
        String::new()
    } else {
        format!(" {}:", found.title)
    };
    format!(
        "{} ({}, score {:.2}){title} {}",
        found.id,
        when(found.updated_ms),
        found.score,
        found.snippet.replace('\n', " ")
    )
}

fn run(op: Op, memories: &Memories, owner: &str, args: &Value) -> Result<ToolOutput, ToolError> {
    let now = memories.now();
    match op {
        Op::Store => {
            let ttl_ms = time_arg(args, "ttl", now)?.map(|then| now - then);
            let memory = memories
                .store(
                    owner,
                    NewMemory {
                        text: text_arg(args, "text").unwrap_or_default(),
                        title: text_arg(args, "title"),
                        tags: tags_arg(args),
                        namespace: text_arg(args, "namespace"),
                        id: text_arg(args, "id"),
                        ttl_ms,
                    },
                )
                .map_err(error)?;
            let verb = if memory.created_ms == memory.updated_ms {
                "Stored"
            } else {
                "Updated"
            };
            let mut out = ToolOutput::text(format!("{verb} memory {}.", memory.id));
            out.structured = Some(json!({"id": memory.id, "memory": memory.to_json()}));
            Ok(out)
        }
        Op::Search => {
            let search = Search {
                query: text_arg(args, "query").unwrap_or_default(),
                tags: tags_arg(args),
                namespace: text_arg(args, "namespace"),
                limit: args.get("limit").and_then(Value::as_u64).unwrap_or(10) as usize,
                since_ms: time_arg(args, "since", now)?,
            };
            let found = memories.search(owner, &search).map_err(error)?;
            let text = if found.is_empty() {
                format!(
                    "No memory matches {:?}. Try fewer or other words, or a prefix*.",
                    search.query
                )
            } else {
                found.iter().map(found_line).collect::<Vec<_>>().join("\n")
            };
            let mut out = ToolOutput::text(text);
            out.structured = Some(json!({"results": found}));
            Ok(out)
        }
        Op::Get => {
            let id = text_arg(args, "id").unwrap_or_default();
            let memory = memories.get(owner, &id).map_err(error)?;
            let mut out = ToolOutput::text(show(&memory));
            out.structured = Some(memory.to_json());
            Ok(out)
        }
        Op::List => {
            let limit = args.get("limit").and_then(Value::as_u64).unwrap_or(20) as usize;
            let (page, next) = memories
                .list(
                    owner,
                    text_arg(args, "namespace").as_deref(),
                    &tags_arg(args),
                    text_arg(args, "cursor").as_deref(),
                    limit,
                )
                .map_err(error)?;
            let mut text = if page.is_empty() {
                "No memories yet.".to_string()
            } else {
                page.iter()
                    .map(|m| {
                        let first: String = m
                            .text
                            .lines()
                            .next()
                            .unwrap_or("")
                            .chars()
                            .take(120)
                            .collect();
                        let title = if m.title.is_empty() {
                            first
                        } else {
                            m.title.clone()
                        };
                        format!("{} ({}) {title}", m.id, when(m.updated_ms))
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            if let Some(cursor) = &next {
                text.push_str(&format!("\nMore: memory_list with cursor {cursor:?}."));
            }
            let mut out = ToolOutput::text(text);
            out.structured = Some(json!({"memories": page, "next_cursor": next}));
            Ok(out)
        }
        Op::Delete => {
            let id = text_arg(args, "id").unwrap_or_default();
            let restore = args
                .get("restore")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let memory = if restore {
                memories.restore(owner, &id)
            } else {
                memories.delete(owner, &id)
            }
            .map_err(error)?;
            let text = if restore {
                format!("Restored memory {id}.")
            } else {
                format!(
                    "Deleted memory {id}; memory_delete with restore: true brings it back for {} days.",
                    memories.config.deleted_days
                )
            };
            let mut out = ToolOutput::text(text);
            out.structured = Some(memory.to_json());
            Ok(out)
        }
        Op::AppendDaily => {
            let text = text_arg(args, "text").unwrap_or_default();
            let memory = memories.append_daily(owner, &text).map_err(error)?;
            let mut out = ToolOutput::text(format!("Added to {} ({}).", memory.title, memory.id));
            out.structured = Some(memory.to_json());
            Ok(out)
        }
        Op::Compact => {
            let namespace = text_arg(args, "namespace");
            let before = time_arg(args, "before", now)?;
            match (text_arg(args, "summary"), text_arg(args, "token")) {
                (None, None) => {
                    let (picked, token) = memories
                        .compact_material(owner, namespace.as_deref(), before)
                        .map_err(error)?;
                    if picked.is_empty() {
                        return Ok(ToolOutput::text("Nothing to compact."));
                    }
                    let mut text = format!(
                        "Summarise these {} memories, then call memory_compact_summary again with \
                         the same namespace and before, `summary` and token {token:?}:\n",
                        picked.len()
                    );
                    for memory in &picked {
                        text.push_str(&format!("\n--- {}\n", show(memory)));
                    }
                    let mut out = ToolOutput::text(text);
                    out.structured = Some(json!({
                        "token": token,
                        "ids": picked.iter().map(|m| m.id.clone()).collect::<Vec<_>>(),
                    }));
                    Ok(out)
                }
                (Some(summary), Some(token)) => {
                    let (memory, count) = memories
                        .compact_apply(owner, namespace.as_deref(), before, &token, &summary)
                        .map_err(error)?;
                    let mut out = ToolOutput::text(format!(
                        "Replaced {count} memories with summary {} (each kept, restorable with \
                         memory_delete restore).",
                        memory.id
                    ));
                    out.structured = Some(json!({"summary": memory.to_json(), "replaced": count}));
                    Ok(out)
                }
                (Some(_), None) => Err(ToolError::invalid_at(
                    "/token",
                    "`summary` needs the `token` the first call gave: call without `summary` first",
                )),
                (None, Some(_)) => Err(ToolError::invalid_at(
                    "/summary",
                    "`token` goes with the `summary` you wrote of the material it came with",
                )),
            }
        }
    }
}
