//! The Tasks extension's methods and resource subscriptions, as this door answers them.

use std::sync::Arc;

use rmcp::model::{
    CancelTaskParams, GetTaskParams, GetTaskResult, SubscribeRequestParams,
    UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::library::library_error;
use super::listing::Bound;
use super::{MAX_SUBSCRIPTIONS, McpServer};

impl McpServer {
    /// The host and the task `id` of a `tasks/*` request, when its caller may use it.
    pub(super) async fn task_for(
        &self,
        context: &RequestContext<RoleServer>,
        id: &str,
    ) -> Result<(&Bound, toolshed_host::jobs::JobView), McpError> {
        let bound = self.bound().await?;
        bound.check_token()?;
        Self::require(bound, context, "tools:call")?;
        let view = self.task_of(bound, context, id)?;
        Ok((bound, view))
    }

    /// The job `id` when this request's caller may read it (an agent token reads its
    /// owner's, the admin token and a local client every one); otherwise as unknown as one
    /// that never was.
    fn task_of(
        &self,
        bound: &Bound,
        context: &RequestContext<RoleServer>,
        id: &str,
    ) -> Result<toolshed_host::jobs::JobView, McpError> {
        let caller = Self::caller_for(bound, context);
        bound
            .host
            .jobs()
            .get(id)
            .filter(|job| caller.as_ref().is_none_or(|c| c.owns(&job.owner)))
            .ok_or_else(|| crate::tasks::unknown(id))
    }

    pub(super) async fn task_get(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let (bound, view) = self.task_for(&context, &request.task_id).await?;
        let retention = bound.host.jobs().retention();
        Ok(GetTaskResult::new(crate::tasks::detailed(&view, retention)))
    }

    /// Answers a task's questions (`inputRequests` of `tasks/get`); keys that wait for
    /// nothing are left, as the extension says.
    pub(super) async fn task_update(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let (bound, view) = self.task_for(&context, &request.task_id).await?;
        let Ok(Value::Object(responses)) = serde_json::to_value(&request.input_responses) else {
            return Ok(());
        };
        // Each answer checked against what it answers before any is taken: a wrong one is
        // the client's to correct, and the question still waits.
        let waiting = view.input_requests.clone().unwrap_or(Value::Null);
        for (key, given) in &responses {
            let Some(asked) = waiting.get(key) else {
                continue;
            };
            let answer = toolshed_core::Answer::from_elicitation(given).ok_or_else(|| {
                McpError::invalid_params(
                    format!(
                        "inputResponses.{key} is not an answer: give {{\"action\": \"accept\", \"content\": {{…}}}}, or {{\"action\": \"decline\"}}"
                    ),
                    None,
                )
            })?;
            let question = toolshed_core::Question {
                message: asked["params"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                schema: asked["params"]["requestedSchema"].clone(),
            };
            crate::input::check_answer(&question, key, &answer)
                .map_err(|e| McpError::invalid_params(e.to_string(), None))?;
        }
        bound.host.jobs().answer_input(&view.id, &responses);
        Ok(())
    }

    pub(super) async fn task_cancel(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let (bound, view) = self.task_for(&context, &request.task_id).await?;
        if view.state != toolshed_host::jobs::JobState::Running {
            // Cancelling what has ended changes nothing; the ack says only that it was heard.
            return Ok(());
        }
        match bound.host.jobs().cancel(&view.id).await {
            // Ended meanwhile: as for one that had ended, nothing to do.
            Ok(_) | Err(toolshed_host::jobs::JobError::Ended(_)) => Ok(()),
            Err(toolshed_host::jobs::JobError::Conflict(message)) => Err(
                McpError::invalid_request(message, Some(json!({"taskId": view.id}))),
            ),
            Err(e) => Err(McpError::internal_error(e.to_string(), None)),
        }
    }

    /// A session-era client subscribes to a resource: the plugin that has it (a mounted
    /// server that tells of changes) is asked, and each change it reports reaches the
    /// client as `notifications/resources/updated` until it unsubscribes or goes.
    #[allow(deprecated)]
    pub(super) async fn subscribe_resource(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let libraries = self.libraries_for(&context, "tools:call").await?;
        let uri = request.uri;
        let stop = {
            let mut watching = self.watching.lock().unwrap_or_else(|p| p.into_inner());
            if watching.contains_key(&uri) {
                return Ok(());
            }
            if watching.len() >= MAX_SUBSCRIPTIONS {
                return Err(McpError::invalid_request(
                    format!(
                        "this connection has {MAX_SUBSCRIPTIONS} resources subscribed, the most it may; unsubscribe from one"
                    ),
                    None,
                ));
            }
            let stop = self.stop.child_token();
            watching.insert(uri.clone(), stop.clone());
            stop
        };
        let peer = context.peer.clone();
        let updated = forwarding(stop.clone(), move |uri: String| {
            let peer = peer.clone();
            async move {
                let params = rmcp::model::ResourceUpdatedNotificationParam::new(uri);
                let _ = peer.notify_resource_updated(params).await;
            }
        });
        if let Err(e) = libraries.watch(&uri, updated, stop.clone()).await {
            stop.cancel();
            self.watching
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&uri);
            return Err(library_error(e));
        }
        Ok(())
    }

    #[allow(deprecated)]
    pub(super) async fn unsubscribe_resource(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        if let Some(stop) = self
            .watching
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&request.uri)
        {
            stop.cancel();
        }
        Ok(())
    }
}

/// What tells a client of resource changes: one task sending them until `stop`, the
/// resources that changed since it last sent kept as a set (an update means "read it
/// again": a resource changed twice is told once, and no resource's news pushes out
/// another's).
pub(super) fn forwarding<F, Fut>(stop: CancellationToken, send: F) -> toolshed_core::ResourceUpdated
where
    F: Fn(String) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let changed: Arc<std::sync::Mutex<std::collections::BTreeSet<String>>> = Arc::default();
    let woken = Arc::new(tokio::sync::Notify::new());
    {
        let changed = changed.clone();
        let woken = woken.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = woken.notified() => {}
                }
                let batch = std::mem::take(&mut *changed.lock().unwrap_or_else(|p| p.into_inner()));
                for uri in batch {
                    send(uri).await;
                }
            }
        });
    }
    Arc::new(move |uri: &str| {
        let mut pending = changed.lock().unwrap_or_else(|p| p.into_inner());
        // Bounded by the resources watched (at most MAX_SUBSCRIPTIONS per connection).
        if pending.len() < MAX_SUBSCRIPTIONS {
            pending.insert(uri.to_string());
        }
        drop(pending);
        woken.notify_one();
    })
}
