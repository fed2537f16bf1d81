//! A loaded JavaScript plugin and its lifecycle: `init` starts its thread and activates
//! it, `stop` ends the thread.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use toolshed_core::{Health, Plugin, PluginError, PluginManifest, Tool};

use crate::limits::show_duration;
use crate::tool::{JsTool, Link};
use crate::worker::{self, WorkerConfig, WorkerHandle, failure_reason};

/// Extra time `init` allows past `activate_timeout` for starting the thread and reading
/// files; the engine enforces the activation limit itself.
const START_GRACE: Duration = Duration::from_secs(2);
/// How long `stop` waits for the thread to free its runtime.
const STOP_WAIT: Duration = Duration::from_secs(5);

/// A JavaScript plugin: a manifest and, once initialized, a thread serving its actions.
pub(crate) struct JsPlugin {
    manifest: PluginManifest,
    config: WorkerConfig,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    worker: Option<Running>,
    tools: Vec<Arc<dyn Tool>>,
}

struct Running {
    handle: WorkerHandle,
}

impl JsPlugin {
    pub(crate) fn new(manifest: PluginManifest, config: WorkerConfig) -> Self {
        Self {
            manifest,
            config,
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn take_worker(&self) -> Option<Running> {
        let mut state = self.lock();
        state.tools.clear();
        state.worker.take()
    }
}

async fn shut_down(id: &str, running: Running) {
    let Running { handle } = running;
    handle.shutdown.cancel();
    if tokio::time::timeout(STOP_WAIT, handle.exited)
        .await
        .is_err()
    {
        tracing::warn!(
            plugin = %id,
            "the plugin's JavaScript thread did not stop within {}; leaving it to finish on its own",
            show_duration(STOP_WAIT)
        );
    }
}

/// What the plugin's own `health()` export says (healthy when it has none). Returns at
/// once with the plugin busy: health is never queued behind calls.
async fn asked_health(
    id: &str,
    commands: &tokio::sync::mpsc::Sender<crate::engine::CallRequest>,
) -> Health {
    use crate::engine::JsReturn;
    let (reply_tx, reply_rx) = tokio::sync::oneshot::channel();
    let limit = HEALTH_WAIT;
    let mut ctx = toolshed_core::CallContext::for_test(limit);
    ctx.owner = toolshed_core::OwnerId::new(format!("plugin/{id}"));
    ctx.call_id = toolshed_core::CallId("health".into());
    let request = crate::engine::CallRequest {
        action: worker::HEALTH_ACTION.into(),
        inputs: serde_json::Value::Null,
        cancel: ctx.cancel.clone(),
        ctx,
        host: tokio::runtime::Handle::current(),
        started: std::time::Instant::now(),
        reply: reply_tx,
    };
    if commands.try_send(request).is_err() {
        return Health::Ok;
    }
    let said = match tokio::time::timeout(limit + Duration::from_secs(1), reply_rx).await {
        Ok(Ok(said)) => said,
        _ => return Health::Degraded("health() did not answer in time".into()),
    };
    let text =
        |v: &serde_json::Value, key: &str| v.get(key).and_then(|m| m.as_str()).map(str::to_string);
    match said {
        Err(e) => Health::Failed(e.to_string()),
        Ok(JsReturn::Nothing) => Health::Ok,
        Ok(JsReturn::Text(t)) if t.eq_ignore_ascii_case("ok") => Health::Ok,
        Ok(JsReturn::Text(t)) => Health::Degraded(t),
        Ok(JsReturn::Json(serde_json::Value::Bool(true))) => Health::Ok,
        Ok(JsReturn::Json(serde_json::Value::Bool(false))) => {
            Health::Failed("health() returned false".into())
        }
        Ok(JsReturn::Json(v)) => {
            let message = text(&v, "message").unwrap_or_default();
            match text(&v, "status").as_deref() {
                Some("ok" | "healthy") | None
                    if v.get("ok") != Some(&serde_json::Value::Bool(false)) =>
                {
                    Health::Ok
                }
                Some("degraded" | "warning") => Health::Degraded(message),
                _ => Health::Failed(if message.is_empty() {
                    format!("health() said {v}")
                } else {
                    message
                }),
            }
        }
    }
}

/// The longest a plugin's `health()` may take.
const HEALTH_WAIT: Duration = Duration::from_secs(2);

#[async_trait]
impl Plugin for JsPlugin {
    fn manifest(&self) -> &PluginManifest {
        &self.manifest
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.lock().tools.clone()
    }

    async fn init(&self) -> Result<(), PluginError> {
        if let Some(old) = self.take_worker() {
            shut_down(&self.manifest.id, old).await;
        }
        let (handle, ready) = worker::spawn(self.config.clone()).map_err(PluginError)?;
        let limit = self.config.limits.activate_timeout;
        let outcome = tokio::time::timeout(limit + START_GRACE, ready).await;
        let defs = match outcome {
            Ok(Ok(Ok(defs))) => defs,
            Ok(Ok(Err(reason))) => {
                shut_down(&self.manifest.id, Running { handle }).await;
                return Err(PluginError(reason));
            }
            Ok(Err(_)) => {
                let reason = failure_reason(&handle.failure)
                    .unwrap_or_else(|| "its JavaScript thread stopped during activation".into());
                return Err(PluginError(reason));
            }
            Err(_) => {
                handle.shutdown.cancel();
                return Err(PluginError(format!(
                    "activation did not finish within {} (the script may be stuck in a long native operation)",
                    show_duration(limit)
                )));
            }
        };
        let link = Arc::new(Link {
            plugin_id: self.manifest.id.clone(),
            commands: handle.commands.clone(),
            failure: handle.failure.clone(),
            max_queued: self.config.limits.max_queued_calls,
        });
        let tools: Vec<Arc<dyn Tool>> = defs
            .into_iter()
            .map(|def| Arc::new(JsTool::new(def, link.clone())) as Arc<dyn Tool>)
            .collect();
        let mut state = self.lock();
        state.tools = tools;
        state.worker = Some(Running { handle });
        Ok(())
    }

    async fn stop(&self) -> Result<(), PluginError> {
        if let Some(running) = self.take_worker() {
            shut_down(&self.manifest.id, running).await;
        }
        Ok(())
    }

    async fn health(&self) -> Health {
        let commands = {
            let state = self.lock();
            let Some(running) = &state.worker else {
                return Health::Failed("not started".into());
            };
            if let Some(reason) = failure_reason(&running.handle.failure) {
                return Health::Failed(reason);
            }
            if running.handle.commands.is_closed() {
                return Health::Failed(
                    "its JavaScript thread has stopped; reload the plugin".into(),
                );
            }
            running.handle.commands.clone()
        };
        asked_health(&self.manifest.id, &commands).await
    }
}

impl Drop for JsPlugin {
    fn drop(&mut self) {
        if let Some(running) = self.take_worker() {
            running.handle.shutdown.cancel();
        }
    }
}
