//! The engine: one QuickJS runtime and context for one plugin, living on the plugin's own
//! thread (the runtime is not `Send`).
//!
//! JavaScript runs only inside [`Engine::activate`] and [`Engine::serve`], and only while the
//! interrupt [`Guard`] is armed. Between runs of JavaScript the engine waits, on a
//! current-thread tokio runtime, for one of: a host operation finishing (then it settles the
//! promise the script awaits and runs the promise jobs that follow), the call's deadline,
//! its cancellation, or the plugin's shutdown.
//!
//! Every JavaScript value the host keeps across runs is a [`Persistent`], and all of them
//! are dropped in [`Engine`]'s `Drop` before the context and runtime: QuickJS aborts the
//! process if a runtime is freed while values it owns are still referenced.

mod activation;
mod alloc;
mod convert;
mod fault;
mod guard;
mod host;
mod modules;

use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rquickjs::promise::PromiseState;
use rquickjs::{Context, Function, Object, Persistent, Promise, Runtime, Value};
use serde_json::Map;
use tokio::runtime::Handle;
use tokio::sync::mpsc;
use toolshed_core::{CallContext, CancellationToken, Plane, ToolError};

use crate::grants::Reach;
use crate::i18n::Translations;
use crate::limits::{JsLimits, show_bytes};

use activation::Registry;
use convert::{Thrown, caught, from_json};
pub(crate) use fault::Fault;
use fault::{fault_to_error, returned};
use guard::Guard;
pub(crate) use guard::Stop;
use host::{CallScope, Completion, HostOps, LogBudget, Shared};
pub(crate) use host::{
    HostAccess, HostError, ask_request, check_event, llm_request, memory_request,
};

/// JavaScript helpers the host builds plugin-facing objects with.
const PRELUDE_SOURCE: &str = include_str!("prelude.js");

/// The prelude with `ctx.api`'s helpers (shared with the Node.js runtime) in place.
static PRELUDE: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| PRELUDE_SOURCE.replace("/*SPACES_API*/ null", crate::SPACES_API));
/// The globals every plugin runtime has (console, timers, URL, fetch, ...).
const GLOBALS: &str = include_str!("globals.js");

/// After a call ends, promise jobs it left behind may run this long before the runtime is
/// judged stuck and rebuilt.
const DRAIN_BUDGET: Duration = Duration::from_millis(200);
/// ... or this many jobs.
const MAX_DRAIN_JOBS: usize = 10_000;

/// Everything the engine needs to (re)build a plugin's runtime. Read on the plugin's thread.
pub(crate) struct Setup {
    /// The plugin id.
    pub plugin_id: String,
    /// The manifest's version.
    pub version: String,
    /// The tool name prefix.
    pub prefix: String,
    /// The manifest's plane, for the tool specs.
    pub plane: Plane,
    /// The manifest's tools, which exported functions of the same names may serve.
    pub catalog: Vec<toolshed_core::ToolSpec>,
    /// The entry's path relative to the plugin directory; also the module name in stacks.
    pub module_name: String,
    /// The plugin directory, whose files the entry may import (`None`: a module the host
    /// supplies, which imports nothing).
    pub dir: Option<std::path::PathBuf>,
    /// The entry's source.
    pub source: String,
    /// The configuration `activate` sees.
    pub config: Map<String, serde_json::Value>,
    /// The `t` tables.
    pub translations: Rc<Translations>,
    /// Resource limits.
    pub limits: JsLimits,
    /// What the plugin may reach.
    pub reach: Arc<Reach>,
    /// What it reaches it through.
    pub access: HostAccess,
    /// The module is the host's (`run_code`'s) and runs a caller's code: errors speak of
    /// "the code", not of a plugin that stays usable.
    pub snippet: bool,
    /// Actions are called `run(ctx, args)` (Agent Spaces), not `run(args, ctx)`.
    pub context_first: bool,
    /// The env contract's variables and their values.
    pub env: Map<String, serde_json::Value>,
}

/// What `run` returned, before the tool maps it to a [`toolshed_core::ToolOutput`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum JsReturn {
    /// `undefined` or `null`.
    Nothing,
    /// A string.
    Text(String),
    /// Anything else, as JSON.
    Json(serde_json::Value),
}

/// One call for the plugin's thread.
pub(crate) struct CallRequest {
    /// The action's own name.
    pub action: String,
    /// The inputs, defaults applied.
    pub inputs: serde_json::Value,
    /// The call's context (config, progress, tool caller, deadline).
    pub ctx: CallContext,
    /// Fired when the caller gives up; stops the call.
    pub cancel: CancellationToken,
    /// The host runtime, where host operations run.
    pub host: Handle,
    /// When the tool received the call.
    pub started: Instant,
    /// Where the result goes.
    pub reply: tokio::sync::oneshot::Sender<Result<JsReturn, ToolError>>,
}

/// One plugin's QuickJS runtime, context and the host state around them.
pub(crate) struct Engine {
    setup: Rc<Setup>,
    shared: Shared,
    registry: Rc<Registry>,
    runs: HashMap<String, Persistent<Function<'static>>>,
    prelude: Option<Persistent<Object<'static>>>,
    /// The entry's exports, once loaded: `deactivate` is found there.
    exports: Option<Persistent<Object<'static>>>,
    /// The plugin's files, for `require`.
    files: Option<Rc<modules::Files>>,
    /// The call running now: where timers and `fetch` start their host operations.
    current: host::Current,
    ops: Rc<HostOps>,
    guard: Rc<Guard>,
    done_rx: mpsc::UnboundedReceiver<Completion>,
    shutdown: CancellationToken,
    rebuild: Option<String>,
    /// How many allocations the memory limit refused, ever (see [`alloc`]).
    refusals: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// What the runtime's allocator holds, as the memory limit counts it.
    used: alloc::Usage,
    // Dropped last, in this order, after `Drop` released every persistent value above.
    context: Context,
    runtime: Runtime,
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.ops.clear();
        self.registry.clear();
        self.runs.clear();
        self.prelude = None;
        self.exports = None;
    }
}

impl Engine {
    /// A fresh runtime and context with the limits and the interrupt guard installed.
    pub(crate) fn new(setup: Rc<Setup>, shutdown: CancellationToken) -> Result<Self, String> {
        // The memory limit is the allocator's, which counts what it refuses.
        let (allocator, refusals, used) = alloc::Limited::new(setup.limits.memory_bytes);
        let runtime = Runtime::new_with_alloc(allocator)
            .map_err(|e| format!("cannot create a JavaScript runtime: {e}"))?;
        runtime.set_max_stack_size(setup.limits.stack_bytes);
        let guard = Rc::new(Guard::new(shutdown.clone()));
        let handler_guard = guard.clone();
        runtime.set_interrupt_handler(Some(Box::new(move || handler_guard.should_interrupt())));
        let files = setup.dir.clone().map(modules::Files::new);
        if let Some(files) = &files {
            runtime.set_loader(
                modules::PluginModules(files.clone()),
                modules::PluginModules(files.clone()),
            );
        }
        let context = Context::full(&runtime)
            .map_err(|e| format!("cannot create a JavaScript context: {e}"))?;
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        let shared = Shared {
            plugin_id: setup.plugin_id.clone(),
            plugin: (
                setup.version.clone(),
                setup
                    .dir
                    .as_ref()
                    .map(|d| d.display().to_string())
                    .unwrap_or_default(),
            ),
            translations: setup.translations.clone(),
            log: Rc::new(LogBudget::new(&setup.plugin_id)),
            env: Rc::new(setup.env.clone()),
        };
        let mut engine = Self {
            setup,
            shared,
            registry: Rc::new(Registry::default()),
            runs: HashMap::new(),
            prelude: None,
            exports: None,
            files,
            current: host::Current::default(),
            ops: Rc::new(HostOps::new(done_tx)),
            guard,
            done_rx,
            shutdown,
            rebuild: None,
            refusals,
            used,
            context,
            runtime,
        };
        let prelude = engine.context.with(|ctx| {
            ctx.eval::<Object, _>(PRELUDE.as_str())
                .map(|o| Persistent::save(&ctx, o))
                .map_err(|e| format!("cannot set up the plugin runtime: {:?}", caught(&ctx, e)))
        })?;
        engine.prelude = Some(prelude);
        // A plugin's globals; `run_code`'s snippets, one fresh runtime per call, go without
        // (defining them is most of what a new runtime costs).
        if engine.setup.snippet {
            return Ok(engine);
        }
        engine.context.with(|ctx| {
            ctx.eval::<Function, _>(GLOBALS)
                .and_then(|install| {
                    host::install_globals(&ctx, &engine.shared, &engine.current, install)
                })
                .map_err(|e| {
                    format!(
                        "cannot set up the plugin runtime's globals: {:?}",
                        caught(&ctx, e)
                    )
                })
        })?;
        Ok(engine)
    }

    fn prelude(&self) -> Result<Persistent<Object<'static>>, Fault> {
        self.prelude
            .clone()
            .ok_or_else(|| Fault::Internal("the runtime's helpers are missing".into()))
    }

    /// The guard's reason when it stopped JavaScript, else `fault`.
    fn stopped_or(&self, fault: Fault) -> Fault {
        match self.guard.fired() {
            Some(stop) => Fault::Stopped(stop),
            None => fault,
        }
    }

    /// QuickJS, out of memory while throwing (a growing `Map`, say), cannot allocate the
    /// error and throws `null`; by the time the call has unwound, the memory is freed
    /// again, so the heap cannot tell. A thrown `null` is the memory limit when the
    /// allocator refused an allocation during the call (more than `refused_before`), and
    /// the script's own `throw null` otherwise.
    fn oom_or(&self, fault: Fault, refused_before: u64) -> Fault {
        let refused = self.refusals.load(std::sync::atomic::Ordering::Relaxed) > refused_before;
        match fault {
            Fault::Threw(Thrown::Error(text)) if refused && text == convert::THREW_NULL => {
                Fault::Threw(Thrown::OutOfMemory)
            }
            fault => fault,
        }
    }

    /// `Err` with the rejection reason when the settled `promise` rejected.
    fn rejection(&self, promise: &Persistent<Promise<'static>>) -> Result<(), Fault> {
        let result = self.context.with(|ctx| {
            let p = promise
                .clone()
                .restore(&ctx)
                .map_err(|e| Fault::Internal(e.to_string()))?;
            match p.result::<Value>() {
                Some(Err(e)) => Err(Fault::Threw(caught(&ctx, e))),
                _ => Ok(()),
            }
        });
        result.map_err(|f| self.stopped_or(f))
    }

    /// Runs JavaScript until `promise` settles: promise jobs, then waiting for host
    /// operations, until the promise is no longer pending, the guard stops the script, the
    /// wall-clock `deadline` passes or `cancel` fires.
    async fn settle(
        &mut self,
        promise: &Persistent<Promise<'static>>,
        cpu: Duration,
        deadline: Instant,
        cancel: Option<&CancellationToken>,
    ) -> Result<(), Fault> {
        loop {
            self.guard.resume(cpu);
            self.run_jobs()?;
            if let Some(stop) = self.guard.fired() {
                return Err(Fault::Stopped(stop));
            }
            let state = self.context.with(|ctx| {
                promise
                    .clone()
                    .restore(&ctx)
                    .map(|p| p.state())
                    .map_err(|e| Fault::Internal(e.to_string()))
            })?;
            if state != PromiseState::Pending {
                return Ok(());
            }
            if self.ops.in_flight() == 0 {
                return Err(Fault::NeverSettles);
            }
            self.guard.pause();
            let done = tokio::select! {
                biased;
                _ = self.shutdown.cancelled(), if self.guard.shutdown_stops() => {
                    return Err(Fault::Stopped(Stop::Shutdown));
                }
                _ = cancelled(cancel) => return Err(Fault::Stopped(Stop::Cancelled)),
                _ = tokio::time::sleep_until(deadline.into()) => {
                    return Err(Fault::Stopped(Stop::Wall));
                }
                done = self.done_rx.recv() => done,
            };
            self.guard.resume(cpu);
            if let Some(done) = done {
                self.complete(done);
            }
        }
    }

    /// Runs queued promise jobs until none is left or the guard says stop.
    fn run_jobs(&self) -> Result<(), Fault> {
        while self.runtime.is_job_pending() {
            if let Some(stop) = self.guard.check() {
                return Err(Fault::Stopped(stop));
            }
            if let Err(job) = self.runtime.execute_pending_job() {
                // A job threw outside any promise (an interrupt, say): clear it.
                job.0.with(|ctx| drop(ctx.catch()));
                if let Some(stop) = self.guard.fired() {
                    return Err(Fault::Stopped(stop));
                }
            }
        }
        Ok(())
    }

    /// Settles the promise of a finished host operation.
    fn complete(&self, done: Completion) {
        let Some((resolve, reject)) = self.ops.take(done.id) else {
            return; // from a call that has ended
        };
        let Some(prelude) = self.prelude.clone() else {
            return;
        };
        self.context.with(|ctx| {
            let settle = || -> rquickjs::Result<()> {
                let resolve = resolve.restore(&ctx)?;
                let reject = reject.restore(&ctx)?;
                let prelude = prelude.restore(&ctx)?;
                let (message, kind) = match done.result {
                    Ok(value) => match host::host_value(&ctx, value, &prelude) {
                        Ok(js) => return resolve.call((js,)),
                        Err(e) => match caught(&ctx, e) {
                            Thrown::OutOfMemory => {
                                ("out of memory while receiving the result".into(), None)
                            }
                            Thrown::Error(t) | Thrown::StackOverflow(t) => (t, None),
                        },
                    },
                    Err(error) => (error.message, error.kind),
                };
                let error = convert::error_value(&ctx, &message)?;
                if let (Some(kind), Some(object)) = (kind, error.as_object()) {
                    object.set("kind", kind)?;
                }
                reject.call((error,))
            };
            if let Err(e) = settle() {
                let why = caught(&ctx, e);
                tracing::debug!(plugin = %self.setup.plugin_id, ?why, "could not settle a host promise");
            }
        });
    }

    /// Serves one call: builds `ctx`, runs the action's `run(inputs, ctx)` to the end and
    /// returns what it gave. Cleans up after it whatever the outcome.
    pub(crate) async fn serve(&mut self, req: &CallRequest) -> Result<JsReturn, Fault> {
        if req.cancel.is_cancelled() {
            return Err(Fault::Stopped(Stop::Cancelled));
        }
        if Instant::now() >= req.ctx.deadline {
            return Err(Fault::Stopped(Stop::Wall));
        }
        let Some(run) = self.runs.get(&req.action).cloned() else {
            return Err(Fault::Internal(format!(
                "action `{}` is not registered in this runtime",
                req.action
            )));
        };
        let scope = Rc::new(CallScope::new(
            &self.setup.plugin_id,
            &req.ctx,
            req.cancel.child_token(),
            self.setup.reach.clone(),
            self.setup.access.clone(),
            req.host.clone(),
            self.ops.clone(),
        ));
        let cpu = self.setup.limits.cpu_per_call;
        self.shared.log.reset();
        self.guard
            .begin(cpu, req.ctx.deadline, Some(req.cancel.clone()));
        *self.current.borrow_mut() = Some(scope.clone());
        let refused_before = self.refusals.load(std::sync::atomic::Ordering::Relaxed);
        let outcome = self
            .run_call(run, &scope, req, cpu)
            .await
            .map_err(|f| self.oom_or(f, refused_before));
        *self.current.borrow_mut() = None;
        scope.end();
        self.ops.clear();
        self.after_call(&outcome);
        outcome
    }

    async fn run_call(
        &mut self,
        run: Persistent<Function<'static>>,
        scope: &Rc<CallScope>,
        req: &CallRequest,
        cpu: Duration,
    ) -> Result<JsReturn, Fault> {
        let prelude = self.prelude()?;
        let started = self.context.with(|ctx| {
            let inner = || -> rquickjs::Result<Promise> {
                let prelude = prelude.restore(&ctx)?;
                let call_ctx = host::call_context(&ctx, &self.shared, scope, &prelude)?;
                let inputs = from_json(&ctx, &req.inputs)?;
                let run = run.restore(&ctx)?;
                let invoke: Function = prelude.get("invoke")?;
                if self.setup.context_first {
                    invoke.call((run, call_ctx, inputs))
                } else {
                    invoke.call((run, inputs, call_ctx))
                }
            };
            inner()
                .map(|p| Persistent::save(&ctx, p))
                .map_err(|e| Fault::Threw(caught(&ctx, e)))
        });
        let promise = started.map_err(|f| self.stopped_or(f))?;
        self.settle(&promise, cpu, req.ctx.deadline, Some(&req.cancel))
            .await?;
        self.guard.resume(cpu);
        let max = self.setup.limits.max_output_bytes;
        let result = self.context.with(|ctx| {
            let p = promise
                .restore(&ctx)
                .map_err(|e| Fault::Internal(e.to_string()))?;
            match p.result::<Value>() {
                None => Err(Fault::NeverSettles),
                Some(Ok(value)) => returned(&ctx, value, max),
                Some(Err(e)) => Err(Fault::Threw(caught(&ctx, e))),
            }
        });
        result.map_err(|f| self.stopped_or(f))
    }

    /// Tidies the runtime after a call: lets promise jobs the call left behind finish (they
    /// get a short budget), collects garbage after a fault, and decides whether the runtime
    /// must be rebuilt before the next call.
    fn after_call(&mut self, outcome: &Result<JsReturn, Fault>) {
        let limits = &self.setup.limits;
        if self.runtime.is_job_pending() {
            let budget = DRAIN_BUDGET.min(limits.cpu_per_call);
            self.guard.begin(budget, Instant::now() + budget, None);
            let mut ran = 0;
            while self.runtime.is_job_pending()
                && ran < MAX_DRAIN_JOBS
                && self.guard.check().is_none()
            {
                if let Err(job) = self.runtime.execute_pending_job() {
                    job.0.with(|ctx| drop(ctx.catch()));
                }
                ran += 1;
            }
            if self.runtime.is_job_pending() {
                self.rebuild = Some("promise jobs kept running after a call ended".into());
            }
        }
        self.guard.end();
        // Results of the call's host operations that arrived too late.
        while self.done_rx.try_recv().is_ok() {}
        let out_of_memory = matches!(outcome, Err(Fault::Threw(Thrown::OutOfMemory)));
        if out_of_memory || matches!(outcome, Err(Fault::Stopped(_) | Fault::Threw(_))) {
            self.runtime.run_gc();
        }
        if out_of_memory {
            // As the limit counts it (the allocator's bytes), not QuickJS's own tally.
            let used = self.used.get();
            if used > limits.memory_bytes / 4 * 3 {
                self.rebuild = Some(format!(
                    "it still held {} of its {} memory after running out and collecting garbage",
                    show_bytes(used),
                    show_bytes(limits.memory_bytes)
                ));
            }
        }
    }

    /// Why the runtime must be rebuilt before the next call, if it must.
    pub(crate) fn needs_rebuild(&self) -> Option<&str> {
        self.rebuild.as_deref()
    }

    /// The error a caller sees for `fault` in the call `req`.
    pub(crate) fn tool_error(&self, fault: Fault, req: &CallRequest) -> ToolError {
        fault_to_error(
            fault,
            &self.setup.plugin_id,
            &self.setup.limits,
            req,
            self.setup.snippet,
        )
    }
}

/// Waits for `cancel`, or forever without one.
async fn cancelled(cancel: Option<&CancellationToken>) {
    match cancel {
        Some(token) => token.cancelled().await,
        None => std::future::pending().await,
    }
}
