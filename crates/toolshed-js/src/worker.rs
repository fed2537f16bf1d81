//! The plugin's thread: it owns the [`Engine`], activates it, then serves calls one at a
//! time from a bounded queue until the plugin stops.

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};
use toolshed_core::{CancellationToken, Plane, ToolError};

use crate::action::ActionDef;
use crate::engine::{CallRequest, Engine, HostAccess, Setup};
use crate::grants::Reach;
use crate::i18n::Translations;
use crate::limits::JsLimits;

/// The largest entry file accepted.
pub(crate) const MAX_ENTRY_BYTES: u64 = 1024 * 1024;

/// What a plugin's thread is started with. Plain data, sent to the thread.
#[derive(Debug, Clone)]
pub(crate) struct WorkerConfig {
    pub plugin_id: String,
    /// The manifest's version, for `context.plugin`.
    pub version: String,
    pub prefix: String,
    pub plane: Plane,
    /// The manifest's tool list: tools a plugin may serve by exporting a function of the
    /// tool's name instead of registering an action (Fenix's `tool_catalog`).
    pub catalog: Vec<toolshed_core::ToolSpec>,
    pub dir: PathBuf,
    /// The entry's path relative to `dir`, checked by the loader; with `source`, only the
    /// module's name in stack traces.
    pub entry: String,
    /// The entry's source, for a module the host supplies (`run_code`'s) rather than a
    /// plugin directory; then `dir` is not read at all.
    pub source: Option<String>,
    pub config: Map<String, Value>,
    pub language: String,
    pub limits: JsLimits,
    pub reach: Arc<Reach>,
    pub access: HostAccess,
    /// Actions run as `run(ctx, args)` (Agent Spaces' order) rather than `run(args, ctx)`;
    /// decided by the manifest's dialect, once.
    pub context_first: bool,
    /// Why the plugin runs in Node.js rather than QuickJS (`None`: QuickJS), decided at
    /// load from its files.
    pub node: Option<String>,
    /// The variables the manifest's env contract names that are set, with their values:
    /// `context.env`/`ctx.env` (and the environment of a Node.js plugin's process).
    pub env: std::collections::BTreeMap<String, String>,
}

/// The request that asks the plugin's `health()` export instead of running an action (no
/// action can have this name).
pub(crate) const HEALTH_ACTION: &str = "\0health";

/// Why the plugin stopped working, shared between its thread and its handle.
pub(crate) type Failure = Arc<Mutex<Option<String>>>;

/// Reads the failure reason.
pub(crate) fn failure_reason(failure: &Failure) -> Option<String> {
    failure
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

pub(crate) fn set_failure(failure: &Failure, reason: String) {
    *failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason);
}

/// The host's side of a running plugin thread.
pub(crate) struct WorkerHandle {
    /// Where calls go.
    pub commands: mpsc::Sender<CallRequest>,
    /// Fired to stop the thread.
    pub shutdown: CancellationToken,
    /// Closed when the thread has finished (its runtime freed).
    pub exited: oneshot::Receiver<()>,
    /// Set when the plugin stopped working.
    pub failure: Failure,
}

/// The outcome of activation: the actions, or why activation failed.
pub(crate) type Ready = oneshot::Receiver<Result<Vec<ActionDef>, String>>;

/// Starts the plugin's thread; it loads the entry and activates it, then reports on the
/// returned [`Ready`] receiver.
pub(crate) fn spawn(config: WorkerConfig) -> Result<(WorkerHandle, Ready), String> {
    if config.node.is_some() {
        return crate::node::spawn(config);
    }
    let (commands_tx, commands_rx) = mpsc::channel(config.limits.max_queued_calls.max(1));
    let (ready_tx, ready_rx) = oneshot::channel();
    let (exited_tx, exited_rx) = oneshot::channel::<()>();
    let shutdown = CancellationToken::new();
    let failure: Failure = Arc::new(Mutex::new(None));
    // QuickJS measures its stack limit from where the host enters it; leave room above that
    // for the host's own frames.
    let stack = config
        .limits
        .stack_bytes
        .saturating_add(4 << 20)
        .max(8 << 20);
    let thread_shutdown = shutdown.clone();
    let thread_failure = failure.clone();
    let plugin_id = config.plugin_id.clone();
    std::thread::Builder::new()
        .name(format!("js:{}", config.plugin_id))
        .stack_size(stack)
        .spawn(move || {
            let _exited = exited_tx;
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
                thread_main(config, commands_rx, thread_shutdown, ready_tx, &thread_failure)
            }));
            if let Err(panic) = outcome {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                tracing::error!(plugin = %plugin_id, panic = %what, "the plugin's JavaScript thread panicked");
                set_failure(
                    &thread_failure,
                    format!("its JavaScript thread failed unexpectedly ({what}); reload the plugin"),
                );
            }
        })
        .map_err(|e| format!("cannot start a thread for the plugin: {e}"))?;
    Ok((
        WorkerHandle {
            commands: commands_tx,
            shutdown,
            exited: exited_rx,
            failure,
        },
        ready_rx,
    ))
}

fn thread_main(
    config: WorkerConfig,
    commands: mpsc::Receiver<CallRequest>,
    shutdown: CancellationToken,
    ready: oneshot::Sender<Result<Vec<ActionDef>, String>>,
    failure: &Failure,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(format!("cannot start the plugin's event loop: {e}")));
            return;
        }
    };
    runtime.block_on(serve(config, commands, shutdown, ready, failure));
}

async fn serve(
    config: WorkerConfig,
    mut commands: mpsc::Receiver<CallRequest>,
    shutdown: CancellationToken,
    ready: oneshot::Sender<Result<Vec<ActionDef>, String>>,
    failure: &Failure,
) {
    let setup = match load_setup(&config) {
        Ok(setup) => Rc::new(setup),
        Err(reason) => {
            let _ = ready.send(Err(reason));
            return;
        }
    };
    let (engine, actions) = match start(&setup, &shutdown).await {
        Ok(started) => started,
        Err(reason) => {
            let _ = ready.send(Err(reason));
            return;
        }
    };
    let names: Vec<String> = actions.iter().map(|a| a.name.clone()).collect();
    if ready.send(Ok(actions)).is_err() {
        return; // init gave up waiting
    }
    let mut engine = Some(engine);
    loop {
        let request = tokio::select! {
            biased;
            _ = shutdown.cancelled() => break,
            request = commands.recv() => match request {
                Some(request) => request,
                None => break,
            },
        };
        let Some(current) = engine.as_mut() else {
            let reason = failure_reason(failure).unwrap_or_default();
            let _ = request.reply.send(Err(ToolError::Failed(format!(
                "plugin `{}` is not working: {reason}",
                config.plugin_id
            ))));
            continue;
        };
        if request.action == HEALTH_ACTION {
            let health = current.health().await.map_err(ToolError::Failed);
            let _ = request.reply.send(health);
            continue;
        }
        let result = current
            .serve(&request)
            .await
            .map_err(|fault| current.tool_error(fault, &request));
        // The caller may have given up already; then nobody reads the reply.
        let _ = request.reply.send(result);
        let Some(reason) = current.needs_rebuild().map(str::to_string) else {
            continue;
        };
        if shutdown.is_cancelled() {
            break;
        }
        tracing::warn!(plugin = %config.plugin_id, %reason, "rebuilding the plugin's JavaScript runtime and running activate() again");
        engine = None; // free the old runtime before building the new one
        match start(&setup, &shutdown).await {
            Ok((fresh, actions)) => {
                let same = actions.iter().map(|a| &a.name).eq(names.iter());
                if same {
                    engine = Some(fresh);
                } else {
                    set_failure(
                        failure,
                        "after its runtime was rebuilt, activate() registered different actions; reload the plugin".into(),
                    );
                }
            }
            Err(why) => set_failure(
                failure,
                format!(
                    "its runtime was rebuilt because {reason}, and activating it again failed: {why}"
                ),
            ),
        }
    }
    if let Some(mut engine) = engine {
        engine.deactivate().await;
    }
}

async fn start(
    setup: &Rc<Setup>,
    shutdown: &CancellationToken,
) -> Result<(Engine, Vec<ActionDef>), String> {
    let mut engine = Engine::new(setup.clone(), shutdown.clone())?;
    let actions = engine.activate().await?;
    Ok((engine, actions))
}

fn load_setup(config: &WorkerConfig) -> Result<Setup, String> {
    let (source, translations) = match &config.source {
        Some(source) => (source.clone(), Translations::default()),
        None => (
            read_entry(&config.dir, &config.entry)?,
            Translations::load(&config.dir, &config.language)?,
        ),
    };
    Ok(Setup {
        plugin_id: config.plugin_id.clone(),
        version: config.version.clone(),
        prefix: config.prefix.clone(),
        plane: config.plane,
        catalog: config.catalog.clone(),
        module_name: config.entry.clone(),
        dir: config.source.is_none().then(|| config.dir.clone()),
        source,
        config: config.config.clone(),
        translations: Rc::new(translations),
        limits: config.limits.clone(),
        reach: config.reach.clone(),
        access: config.access.clone(),
        snippet: config.source.is_some(),
        context_first: config.context_first,
        env: config
            .env
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    })
}

/// Opens a file of the plugin (the entry, or a module it imports): a regular file of at
/// most [`MAX_ENTRY_BYTES`] inside the plugin directory, opened beneath it by the kernel
/// (no `..`, no link leading out, no link as the file itself), with its size. What was
/// checked is what is read: the same open file.
pub(crate) fn open_entry(dir: &Path, entry: &str) -> Result<(std::fs::File, u64), String> {
    let file = toolshed_ops::open_beneath(dir, Path::new(entry)).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            format!("the entry file `{entry}` does not exist in the plugin directory")
        }
        std::io::ErrorKind::PermissionDenied => format!(
            "the entry `{entry}` leads outside the plugin directory, or is a symbolic link \
             (links are not followed): {e}"
        ),
        std::io::ErrorKind::InvalidInput => {
            format!("the entry `{entry}` is not a regular file (symbolic links are not followed)")
        }
        _ => format!("cannot read the entry file `{entry}`: {e}"),
    })?;
    let size = file
        .metadata()
        .map_err(|e| format!("cannot read the entry file `{entry}`: {e}"))?
        .len();
    if size > MAX_ENTRY_BYTES {
        return Err(format!(
            "the entry file `{entry}` is {size} bytes; the limit is {MAX_ENTRY_BYTES}"
        ));
    }
    Ok((file, size))
}

/// Checks a file of the plugin as [`open_entry`] does; its size.
pub(crate) fn check_entry(dir: &Path, entry: &str) -> Result<u64, String> {
    open_entry(dir, entry).map(|(_, size)| size)
}

/// The text of an opened plugin file, at most [`MAX_ENTRY_BYTES`].
pub(crate) fn read_opened(file: std::fs::File, entry: &str) -> Result<String, String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    file.take(MAX_ENTRY_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read the entry file `{entry}`: {e}"))?;
    if bytes.len() as u64 > MAX_ENTRY_BYTES {
        return Err(format!(
            "the entry file `{entry}` is larger than {MAX_ENTRY_BYTES} bytes"
        ));
    }
    String::from_utf8(bytes).map_err(|_| format!("the entry file `{entry}` is not UTF-8 text"))
}

fn read_entry(dir: &Path, entry: &str) -> Result<String, String> {
    let (file, _) = open_entry(dir, entry)?;
    read_opened(file, entry)
}
