//! The MCP method table: `impl ServerHandler for McpServer`. The greeting, the session's
//! watchers, logging, `subscriptions/listen` and custom requests are answered here;
//! listing, reading, calling and tasks are delegated to the modules that hold them.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
    CompleteResult, CustomRequest, CustomResult, GetPromptRequestParams, GetPromptResponse,
    GetSkillRequestParams, GetSkillResult, GetTaskParams, GetTaskResult, Implementation,
    InitializeRequestParams, InitializeResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListSkillsResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, SubscriptionFilter, Tool, UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use tokio_util::sync::CancellationToken;

use super::{ClientRoots, MAX_SUBSCRIPTIONS, McpServer, answers};

impl ServerHandler for McpServer {
    // Logging is deprecated by the newest revision; clients of the earlier ones use it.
    #[allow(deprecated)]
    fn get_info(&self) -> ServerConfig {
        if let Some(opening) = &self.binding.opening {
            opening.greeted.notify_one();
        }
        // Resources and prompts are offered whether or not a mounted server has any yet
        // (the host may still be opening when this is answered): lists are then empty.
        let config = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_prompts()
                .enable_logging()
                .enable_completions()
                .enable_skills()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("toolshed", env!("CARGO_PKG_VERSION")));
        match &self.instructions {
            Some(text) => config.with_instructions(text.as_ref()),
            None => config,
        }
    }

    /// Notes whether the client offers roots before the greeting is answered, so a door
    /// waiting for its workspace knows at once whether to wait for `roots/list`.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        if let Some(opening) = &self.binding.opening {
            opening
                .roots
                .send_replace(if request.capabilities.roots.is_some() {
                    ClientRoots::Asked
                } else {
                    ClientRoots::NotOffered
                });
        }
        context.peer.set_peer_info(request.clone());
        self.know_peer(&context.peer);
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.tool_list(request, context).await
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tool_get(name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.call_tool_with_span(request, context).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        self.resource_list(request, context).await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        self.resource_template_list(request, context).await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        self.resource_read(request, context).await
    }

    /// A session-era client subscribes to a resource: the plugin that has it (a mounted
    /// server that tells of changes) is asked, and each change it reports reaches the
    /// client as `notifications/resources/updated` until it unsubscribes or goes.
    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscribe_resource(request, context).await
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.unsubscribe_resource(request, _context).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        self.completion(request, context).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        self.task_get(request, context).await
    }

    /// Answers a task's questions (`inputRequests` of `tasks/get`); keys that wait for
    /// nothing are left, as the extension says.
    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.task_update(request, context).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.task_cancel(request, context).await
    }

    /// A request rmcp could not read as any method it knows: a known method whose params
    /// do not fit is the client's mistake, named as such; the Tasks methods that the
    /// extension's 2026 revision removed say what replaced them.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        let method = request.method.as_str();
        let message = match method {
            "tasks/get" | "tasks/update" | "tasks/cancel" => {
                return Err(McpError::invalid_params(
                    format!(
                        "invalid params for {method}: it needs {{\"taskId\": …}} (the id tools/call answered)"
                    ),
                    None,
                ));
            }
            "tasks/result" | "tasks/list" => format!(
                "{method} is not a method of the Tasks extension (io.modelcontextprotocol/tasks): tasks/get answers a task's result once it has one; GET /api/v1/jobs lists them"
            ),
            _ => format!("no method {method}"),
        };
        Err(McpError::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            message,
            None,
        ))
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, McpError> {
        self.skill_list(request, context).await
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, McpError> {
        self.skill_get(request, context).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        self.prompt_list(request, context).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        self.prompt_get(request, context).await
    }

    /// Legacy sessions (2025-11-25 and earlier): once the client is initialized, watch the
    /// catalog and send `notifications/tools/list_changed` when what it sees changes.
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let peer = context.peer;
        self.session_started(
            &peer,
            context.extensions.get::<http::request::Parts>().is_some(),
        );
        if let Some(opening) = &self.binding.opening
            && *opening.roots.borrow() == ClientRoots::Asked
        {
            let (roots, peer) = (opening.roots.clone(), peer.clone());
            // Roots are deprecated by the newest protocol revision, but the clients that
            // start toolshed (editors, agent CLIs) are of the revisions that have them.
            #[allow(deprecated)]
            tokio::spawn(async move {
                let listed = match peer.list_roots().await {
                    Ok(list) => {
                        ClientRoots::Listed(list.roots.into_iter().map(|r| r.uri).collect())
                    }
                    Err(e) => ClientRoots::Failed(e.to_string()),
                };
                roots.send_replace(listed);
            });
        }
        let watcher = Self {
            binding: self.binding.clone(),
            instructions: None,
            owner: self.owner.clone(),
            stop: self.stop.clone(),
            _stop_guard: CancellationToken::new().drop_guard(),
            log_level: self.log_level.clone(),
            peer: std::sync::OnceLock::new(),
            watching: std::sync::Mutex::default(),
            planning: std::sync::Mutex::default(),
        };
        tokio::spawn(async move {
            watcher
                .watch_list(CancellationToken::new(), || peer.notify_tool_list_changed())
                .await;
        });
    }

    /// `logging/setLevel`: from now on, what tools announce for this connection's owner
    /// (`process.exited`, `command_session.closed`, plugins' events) at or above `level`
    /// comes as `notifications/message`.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let bound = self.bound().await?;
        bound.check_token()?;
        let owner = self.owner_for(bound, &context)?;
        if self.log_level.set(request.level) {
            crate::logging::forward(
                &bound.host.services().notices,
                owner,
                self.log_level.clone(),
                context.peer.clone(),
                self.stop.clone(),
            );
        }
        Ok(())
    }

    /// 2026-07-28: `subscriptions/listen` with `toolsListChanged` is honoured.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // The resources asked for are taken as asked (at most MAX_SUBSCRIPTIONS): whether
        // a plugin tells of a resource's changes is known once listening, not before.
        let mut accepted = SubscriptionFilter::builder().tools_list_changed().build();
        accepted.resource_subscriptions = requested
            .resource_subscriptions
            .as_ref()
            .map(|uris| uris.iter().take(MAX_SUBSCRIPTIONS).cloned().collect())
            .filter(|uris: &Vec<String>| !uris.is_empty());
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let ended = context.request_context().ct.clone();
        // The resources it subscribes to, each watched until the subscription ends.
        if let Some(uris) = context.accepted().resource_subscriptions.clone() {
            let libraries = self
                .libraries_for(context.request_context(), "tools:call")
                .await?;
            let sink = context.sink().clone();
            let updated = answers::forwarding(ended.clone(), move |uri: String| {
                let sink = sink.clone();
                async move {
                    let _ = sink.notify_resource_updated(uri).await;
                }
            });
            // Side by side: one slow server does not hold up the others (each ask is given
            // at most 10 s).
            let watches = uris.iter().map(|uri| {
                let watch = libraries.watch(uri, updated.clone(), ended.child_token());
                async move {
                    if let Err(e) = watch.await {
                        tracing::debug!(uri = %uri, error = %e, "a subscribed resource is not watched");
                    }
                }
            });
            futures_util::future::join_all(watches).await;
        }
        if context.accepted().tools_list_changed != Some(true) {
            context.cancelled().await;
            return Ok(());
        }
        self.watch_list(ended, || context.sink().notify_tool_list_changed())
            .await;
        Ok(())
    }
}
