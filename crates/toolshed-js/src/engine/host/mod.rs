//! What a plugin's JavaScript can reach: the `context` given to `activate`, the `ctx` given
//! to `run`, and the host operations behind `ctx.http`, `ctx.fs` and `ctx.tools`.
//!
//! A host operation is started from JavaScript on the plugin's thread, runs as a task on the
//! host's tokio runtime (where the HTTP client, the operations backend and the tool
//! pipeline live), and reports back over a channel; the engine then settles the promise the
//! script is awaiting. Every operation belongs to one call: when the call ends its token is
//! cancelled (stopping the task) and its promise resolvers are dropped, so a late result
//! never reaches the script.

mod fs;
mod globals;
mod http;
mod llm;
mod memory;
mod objects;

pub(crate) use llm::{ask_request, check_event, llm_request};
pub(crate) use memory::memory_request;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rquickjs::function::Opt;
use rquickjs::{Coerced, Ctx, Exception, Function, Object, Persistent, Promise, Value};
use serde_json::Map;
use tokio::runtime::Handle;
use tokio::sync::mpsc;
use toolshed_core::{CallContext, CancellationToken, HttpClient, HttpResponse, ToolOutput};
use toolshed_ops::FileOps;

use super::convert::{cap, error_value, from_json, to_json};
use crate::grants::Reach;

use fs::{Entry, fs_object};
pub(crate) use globals::{Current, install as install_globals};
use http::http_request;
use objects::logger_object;
pub(crate) use objects::{LogBudget, Shared, activation_context, t_function};

/// The most host operations one call may have in flight.
const MAX_PENDING_OPS: usize = 64;
/// The most log lines one call (or one activation) may write.
const MAX_LOG_LINES: u32 = 200;
/// The longest log line or progress message, in bytes.
const MAX_MESSAGE_BYTES: usize = 4096;
/// The most progress reports one call may send.
const MAX_PROGRESS: u32 = 1000;
/// The result of a host operation, made on the host runtime and turned into JavaScript on
/// the plugin's thread.
pub(crate) enum HostValue {
    Http(HttpResponse),
    Text(String),
    Unit,
    Entries(Vec<Entry>),
    Tool(ToolOutput),
    Json(serde_json::Value),
}

/// Why a host operation failed: the message its promise rejects with and, for a tool call
/// the pipeline refused or the tool failed, the error's kind (`denied`, `not_found`, ...),
/// which the `Error` carries as `kind`.
pub(crate) struct HostError {
    pub message: String,
    pub kind: Option<&'static str>,
}

impl From<String> for HostError {
    fn from(message: String) -> Self {
        Self {
            message,
            kind: None,
        }
    }
}

/// A finished host operation.
pub(crate) struct Completion {
    pub id: u64,
    pub result: Result<HostValue, HostError>,
}

type Resolvers = (Persistent<Function<'static>>, Persistent<Function<'static>>);

/// The promises scripts are awaiting on host operations.
pub(crate) struct HostOps {
    next_id: Cell<u64>,
    pending: RefCell<HashMap<u64, Resolvers>>,
    done: mpsc::UnboundedSender<Completion>,
}

impl HostOps {
    pub(crate) fn new(done: mpsc::UnboundedSender<Completion>) -> Self {
        Self {
            next_id: Cell::new(1),
            pending: RefCell::new(HashMap::new()),
            done,
        }
    }

    /// How many operations are in flight.
    pub(crate) fn in_flight(&self) -> usize {
        self.pending.borrow().len()
    }

    /// The resolve and reject functions of operation `id`, if it is still awaited.
    pub(crate) fn take(&self, id: u64) -> Option<Resolvers> {
        self.pending.borrow_mut().remove(&id)
    }

    /// Forgets every awaited operation; their promises never settle.
    pub(crate) fn clear(&self) {
        let drained: Vec<Resolvers> = self.pending.borrow_mut().drain().map(|(_, r)| r).collect();
        drop(drained);
    }
}

/// The host services a plugin's granted capabilities go through: the workspace's files for
/// `ctx.fs`, the HTTP client for `ctx.http`. Given to the loader once, by the host.
#[derive(Clone)]
pub(crate) struct HostAccess {
    /// The workspace's confined file operations.
    pub files: Arc<dyn FileOps>,
    /// The HTTP client; requests carry the plugin's granted hosts as their policy.
    pub http: Arc<dyn HttpClient>,
    /// Where `ctx.events.publish` announces (as `plugin.<id>.<type>`).
    pub notices: Arc<toolshed_ops::Notices>,
    /// Starts the Node.js runtime of plugins that need one, in the command sandbox.
    pub processes: Arc<dyn toolshed_ops::ProcessOps>,
}

impl std::fmt::Debug for HostAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HostAccess")
    }
}

/// One call's view of the host: what its `ctx` functions use. When the call ends the
/// call's context (progress sink, tool caller) is released and every function of its `ctx`
/// throws, so a `ctx` a script keeps in a global holds nothing of the call.
pub(crate) struct CallScope {
    plugin_id: String,
    call: RefCell<Option<CallContext>>,
    cancel: CancellationToken,
    deadline: Instant,
    reach: Arc<Reach>,
    access: HostAccess,
    host: Handle,
    ops: Rc<HostOps>,
    progress_left: Cell<u32>,
}

impl CallScope {
    /// A scope for `call`; `cancel` stops the call's host operations when fired.
    pub(crate) fn new(
        plugin_id: &str,
        call: &CallContext,
        cancel: CancellationToken,
        reach: Arc<Reach>,
        access: HostAccess,
        host: Handle,
        ops: Rc<HostOps>,
    ) -> Self {
        let mut call = call.clone();
        call.cancel = cancel.clone();
        Self {
            plugin_id: plugin_id.to_string(),
            deadline: call.deadline,
            call: RefCell::new(Some(call)),
            cancel,
            reach,
            access,
            host,
            ops,
            progress_left: Cell::new(MAX_PROGRESS),
        }
    }

    /// Ends the call: its host operations are cancelled and its `ctx` stops working.
    pub(crate) fn end(&self) {
        self.cancel.cancel();
        let released = self.call.borrow_mut().take();
        drop(released);
    }

    /// The call's context, or a JavaScript error when the call has ended.
    fn call(&self, ctx: &Ctx<'_>) -> rquickjs::Result<std::cell::Ref<'_, CallContext>> {
        std::cell::Ref::filter_map(self.call.borrow(), Option::as_ref).map_err(|_| {
            Exception::throw_message(
                ctx,
                "this ctx belongs to a call that has ended; use the ctx passed to the current run()",
            )
        })
    }

    fn time_left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// Starts `work` on the host runtime and returns the promise it settles.
    fn start<'js, F, E>(&self, ctx: &Ctx<'js>, work: F) -> rquickjs::Result<Promise<'js>>
    where
        F: Future<Output = Result<HostValue, E>> + Send + 'static,
        E: Into<HostError> + 'static,
    {
        if self.ops.in_flight() >= MAX_PENDING_OPS {
            return rejected(
                ctx,
                &format!(
                    "too many host operations at once: {MAX_PENDING_OPS} are already in flight in this call; await some before starting more"
                ),
            );
        }
        let (promise, resolve, reject) = ctx.promise()?;
        let id = self.ops.next_id.get();
        self.ops.next_id.set(id + 1);
        self.ops.pending.borrow_mut().insert(
            id,
            (
                Persistent::save(ctx, resolve),
                Persistent::save(ctx, reject),
            ),
        );
        let done = self.ops.done.clone();
        let cancel = self.cancel.clone();
        self.host.spawn(async move {
            let result = tokio::select! {
                biased;
                _ = cancel.cancelled() => return,
                r = work => r.map_err(Into::into),
            };
            // The plugin's thread may be gone; then nobody waits for this result.
            let _ = done.send(Completion { id, result });
        });
        Ok(promise)
    }
}

/// A promise already rejected with an `Error` carrying `message`.
fn rejected<'js>(ctx: &Ctx<'js>, message: &str) -> rquickjs::Result<Promise<'js>> {
    let (promise, _resolve, reject) = ctx.promise()?;
    reject.call::<_, ()>((error_value(ctx, message)?,))?;
    Ok(promise)
}

/// The `ctx` given to `run`: `config`, `t`, `logger`, `progress`, `cancelled`, and the
/// capabilities that are both declared and granted (`http`, `fs`, `tools`), and `memory`.
pub(crate) fn call_context<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    scope: &Rc<CallScope>,
    prelude: &Object<'js>,
) -> rquickjs::Result<Object<'js>> {
    let obj = Object::new(ctx.clone())?;
    obj.set("id", shared.plugin_id.as_str())?;
    let config = serde_json::Value::Object(scope.call(ctx)?.config.clone());
    let s = scope.clone();
    let set = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, key: Coerced<String>, value: Opt<Value<'js>>| {
            llm::config_set(&ctx, &s, &key.0, value.0)
        },
    )?
    .with_name("set")?;
    let with_set: Function = prelude.get("configSet")?;
    obj.set(
        "config",
        with_set.call::<_, Value>((from_json(ctx, &config)?, set))?,
    )?;
    obj.set("t", t_function(ctx, &shared.translations)?)?;
    obj.set("logger", logger_object(ctx, &shared.log)?)?;
    obj.set(
        "env",
        from_json(ctx, &serde_json::Value::Object((*shared.env).clone()))?,
    )?;

    let s = scope.clone();
    let progress = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, message: Coerced<String>| {
            let call = s.call(&ctx)?;
            let left = s.progress_left.get();
            if left > 0 {
                s.progress_left.set(left - 1);
                call.progress.message(cap(message.0, MAX_MESSAGE_BYTES));
            }
            Ok::<_, rquickjs::Error>(())
        },
    )?;
    obj.set("progress", progress.with_name("progress")?)?;

    let s = scope.clone();
    let cancelled = Function::new(ctx.clone(), move || {
        s.cancel.is_cancelled() || Instant::now() >= s.deadline
    })?;
    obj.set("cancelled", cancelled.with_name("cancelled")?)?;

    let s = scope.clone();
    let request = Function::new(ctx.clone(), move |ctx: Ctx<'js>, opts: Value<'js>| {
        http_request(&ctx, &s, opts)
    })?
    .with_name("request")?;
    if scope.reach.has_http() {
        let make: Function = prelude.get("http")?;
        obj.set("http", make.call::<_, Value>((request.clone(),))?)?;
    }
    // Agent Spaces' helpers, always there: without a grant each request rejects naming the
    // command that grants the host.
    let api: Function = prelude.get("spacesApi")?;
    obj.set("api", api.call::<_, Value>((request,))?)?;
    if scope.reach.has_fs() {
        obj.set("fs", fs_object(ctx, scope, prelude)?)?;
    }
    if scope.reach.has_tools() {
        let tools = Object::new(ctx.clone())?;
        let s = scope.clone();
        let call = Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, name: Coerced<String>, args: Opt<Value<'js>>| {
                tools_call(&ctx, &s, &name.0, args.0)
            },
        )?
        .with_name("call")?;
        tools.set("call", call)?;
        let freeze: Function = prelude.get("freeze")?;
        obj.set("tools", freeze.call::<_, Value>((tools,))?)?;
    }
    // Always there: without the grant, each operation rejects naming the command that
    // grants it.
    let s = scope.clone();
    let op = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, op: Coerced<String>, args: Opt<Value<'js>>| {
            memory::memory_op(&ctx, &s, &op.0, args.0)
        },
    )?
    .with_name("memory")?;
    let make: Function = prelude.get("memory")?;
    obj.set("memory", make.call::<_, Value>((op,))?)?;
    // Also always there, refusing without their grants.
    obj.set("llm", llm::llm_object(ctx, scope, prelude)?)?;
    obj.set("events", llm::events_object(ctx, scope, prelude)?)?;
    obj.set("ask", llm::ask_function(ctx, scope)?)?;
    Ok(obj)
}

fn tools_call<'js>(
    ctx: &Ctx<'js>,
    scope: &Rc<CallScope>,
    name: &str,
    args: Option<Value<'js>>,
) -> rquickjs::Result<Promise<'js>> {
    let call = scope.call(ctx)?.clone();
    if let Err(msg) = scope.reach.check_tool(name) {
        return rejected(ctx, &msg);
    }
    let args = match args {
        None => serde_json::Value::Object(Map::new()),
        Some(v) if v.is_undefined() || v.is_null() => serde_json::Value::Object(Map::new()),
        Some(v) => match to_json(ctx, v) {
            Ok(Some(json)) => json,
            _ => return rejected(ctx, "tools.call: the arguments must be a JSON object"),
        },
    };
    let Some(caller) = call.caller.clone() else {
        return rejected(
            ctx,
            "this toolshed host does not let plugins call tools (no tool caller is configured)",
        );
    };
    let plugin_id = scope.plugin_id.clone();
    let name = name.to_string();
    scope.start(ctx, async move {
        caller
            .call_tool(&call, &plugin_id, &name, args)
            .await
            .map(HostValue::Tool)
            .map_err(|e| HostError {
                message: e.to_string(),
                kind: Some(e.kind().as_str()),
            })
    })
}

/// A host operation's result as the JavaScript value its promise resolves to.
pub(crate) fn host_value<'js>(
    ctx: &Ctx<'js>,
    value: HostValue,
    prelude: &Object<'js>,
) -> rquickjs::Result<Value<'js>> {
    match value {
        HostValue::Unit => Ok(Value::new_undefined(ctx.clone())),
        HostValue::Text(text) => {
            rquickjs::String::from_str(ctx.clone(), &text).map(|s| s.into_value())
        }
        HostValue::Http(response) => {
            let headers = Object::new(ctx.clone())?;
            let mut joined: Vec<(String, String)> = Vec::new();
            for (name, value) in response.headers {
                let name = name.to_ascii_lowercase();
                match joined.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, v)) => {
                        v.push_str(", ");
                        v.push_str(&value);
                    }
                    None => joined.push((name, value)),
                }
            }
            for (name, value) in joined {
                headers.set(name, value)?;
            }
            let body = String::from_utf8_lossy(&response.body).into_owned();
            let bytes = rquickjs::ArrayBuffer::new(ctx.clone(), response.body)?;
            let make: Function = prelude.get("response")?;
            make.call((response.status, headers, body, response.truncated, bytes))
        }
        HostValue::Entries(entries) => {
            let list = rquickjs::Array::new(ctx.clone())?;
            for (i, e) in entries.into_iter().enumerate() {
                let o = Object::new(ctx.clone())?;
                o.set("name", e.name)?;
                o.set("type", e.kind)?;
                o.set("size", e.size as f64)?;
                list.set(i, o)?;
            }
            Ok(list.into_value())
        }
        HostValue::Tool(output) => {
            let o = Object::new(ctx.clone())?;
            o.set("text", output.text_joined())?;
            let structured = match &output.structured {
                Some(v) => from_json(ctx, v)?,
                None => Value::new_null(ctx.clone()),
            };
            o.set("structured", structured)?;
            o.set("isError", output.is_error)?;
            Ok(o.into_value())
        }
        HostValue::Json(value) => from_json(ctx, &value),
    }
}
