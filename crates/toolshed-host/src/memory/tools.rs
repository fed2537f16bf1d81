//! `system.memory`: the memory tools over [`Memories`].

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolshed_core::{
    BuiltinPlugin, CallContext, Danger, Plugin, PluginKind, PluginManifest, Tool, ToolAnnotations,
    ToolError, ToolOutput, ToolSpec,
};
use toolshed_kit::args::{parse, schema};

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

// The arguments of each tool: their doc comments and `#[schemars]` bounds are the input
// schemas (`toolshed_kit::args`), and the same structs parse the calls.

/// `memory_store`.
#[derive(Debug, Deserialize, JsonSchema)]
struct StoreArgs {
    #[schemars(length(min = 1))]
    text: String,
    #[schemars(length(max = 200))]
    title: Option<String>,
    #[schemars(length(max = super::MAX_TAGS))]
    tags: Option<Vec<String>>,
    /// e.g. a project
    #[schemars(length(max = 80))]
    namespace: Option<String>,
    id: Option<String>,
    /// Forget after e.g. `7d`
    ttl: Option<String>,
}

/// `memory_search`.
#[derive(Debug, Deserialize, JsonSchema)]
struct SearchArgs {
    #[schemars(length(min = 1, max = super::query::MAX_QUERY_LEN))]
    query: String,
    #[schemars(length(max = super::MAX_TAGS))]
    tags: Option<Vec<String>>,
    #[schemars(length(max = 80))]
    namespace: Option<String>,
    #[serde(default = "ten")]
    #[schemars(range(min = 1, max = super::MAX_PAGE))]
    limit: usize,
    /// e.g. `7d`
    since: Option<String>,
}

/// `memory_get`.
#[derive(Debug, Deserialize, JsonSchema)]
struct GetArgs {
    #[schemars(length(min = 1))]
    id: String,
}

/// `memory_list`.
#[derive(Debug, Deserialize, JsonSchema)]
struct ListArgs {
    #[schemars(length(max = 80))]
    namespace: Option<String>,
    #[schemars(length(max = super::MAX_TAGS))]
    tags: Option<Vec<String>>,
    cursor: Option<String>,
    #[serde(default = "twenty")]
    #[schemars(range(min = 1, max = super::MAX_PAGE))]
    limit: usize,
}

/// `memory_delete`.
#[derive(Debug, Deserialize, JsonSchema)]
struct DeleteArgs {
    #[schemars(length(min = 1))]
    id: String,
    #[serde(default)]
    restore: bool,
}

/// `memory_append_daily`.
#[derive(Debug, Deserialize, JsonSchema)]
struct AppendDailyArgs {
    #[schemars(length(min = 1))]
    text: String,
}

/// `memory_compact_summary`.
#[derive(Debug, Deserialize, JsonSchema)]
struct CompactArgs {
    #[schemars(length(max = 80))]
    namespace: Option<String>,
    /// e.g. `30d`
    before: Option<String>,
    summary: Option<String>,
    token: Option<String>,
}

fn ten() -> usize {
    10
}

fn twenty() -> usize {
    20
}

fn spec(op: Op) -> ToolSpec {
    let (name, title, description, input, annotations) = match op {
        Op::Store => (
            "memory_store",
            "Remember",
            "Remember something across sessions, or update memory `id`.",
            schema::<StoreArgs>(),
            WRITES,
        ),
        Op::Search => (
            "memory_search",
            "Recall",
            "Search your memories, best first: words, \"a phrase\", prefix*, OR, -word.",
            schema::<SearchArgs>(),
            ToolAnnotations::PURE,
        ),
        Op::Get => (
            "memory_get",
            "Read a memory",
            "Read a memory.",
            schema::<GetArgs>(),
            ToolAnnotations::PURE,
        ),
        Op::List => (
            "memory_list",
            "List memories",
            "List your memories, newest first.",
            schema::<ListArgs>(),
            ToolAnnotations::PURE,
        ),
        Op::Delete => (
            "memory_delete",
            "Forget",
            "Delete a memory, or `restore` one.",
            schema::<DeleteArgs>(),
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
            schema::<AppendDailyArgs>(),
            WRITES,
        ),
        Op::Compact => (
            "memory_compact_summary",
            "Compact memories",
            "Replace old memories with your summary: first call gives them and a `token`, the \
             second passes `summary` and `token`.",
            schema::<CompactArgs>(),
            WRITES,
        ),
    };
    let mut spec = ToolSpec::new(name, description)
        .title(title)
        .group(GROUP)
        .input_schema(input)
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
        tokio::task::spawn_blocking(move || run(op, &memories, &owner, args))
            .await
            .map_err(|e| ToolError::Internal(format!("the memory task failed: {e}")))?
    }
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
/// `now`, naming the argument `key` when it is not one.
fn time_arg(value: Option<&str>, key: &str, now: i64) -> Result<Option<i64>, ToolError> {
    match value {
        None => Ok(None),
        Some(text) => crate::kit::parse_since(text, now)
            .map(Some)
            .map_err(|e| ToolError::invalid_at(format!("/{key}"), e.for_argument(key).to_string())),
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

fn run(op: Op, memories: &Memories, owner: &str, args: Value) -> Result<ToolOutput, ToolError> {
    let now = memories.now();
    match op {
        Op::Store => {
            let args: StoreArgs = parse(args)?;
            let ttl_ms = time_arg(args.ttl.as_deref(), "ttl", now)?.map(|then| now - then);
            let memory = memories
                .store(
                    owner,
                    NewMemory {
                        text: args.text,
                        title: args.title,
                        tags: args.tags.unwrap_or_default(),
                        namespace: args.namespace,
                        id: args.id,
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
            let args: SearchArgs = parse(args)?;
            let search = Search {
                since_ms: time_arg(args.since.as_deref(), "since", now)?,
                query: args.query,
                tags: args.tags.unwrap_or_default(),
                namespace: args.namespace,
                limit: args.limit,
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
            let GetArgs { id } = parse(args)?;
            let memory = memories.get(owner, &id).map_err(error)?;
            let mut out = ToolOutput::text(show(&memory));
            out.structured = Some(memory.to_json());
            Ok(out)
        }
        Op::List => {
            let args: ListArgs = parse(args)?;
            let (page, next) = memories
                .list(
                    owner,
                    args.namespace.as_deref(),
                    &args.tags.unwrap_or_default(),
                    args.cursor.as_deref(),
                    args.limit,
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
            let DeleteArgs { id, restore } = parse(args)?;
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
            let AppendDailyArgs { text } = parse(args)?;
            let memory = memories.append_daily(owner, &text).map_err(error)?;
            let mut out = ToolOutput::text(format!("Added to {} ({}).", memory.title, memory.id));
            out.structured = Some(memory.to_json());
            Ok(out)
        }
        Op::Compact => {
            let CompactArgs {
                namespace,
                before,
                summary,
                token,
            } = parse(args)?;
            let before = time_arg(before.as_deref(), "before", now)?;
            match (summary, token) {
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
