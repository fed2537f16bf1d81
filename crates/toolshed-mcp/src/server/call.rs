//! The `tools/call` door: the catalog's meta-tools (`tool_search`, `tool_call`), input
//! requests in both eras, a task for a long call, progress and the answer.

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, CallToolResponse};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::Value;
use toolshed_host::CallRequest;

use super::{McpServer, era_2026};
use crate::convert::{result_from_error, result_from_output};
use crate::progress::ProgressForwarder;

impl McpServer {
    /// `tools/call`: the door's span, the root of the call's trace and parented by the
    /// caller's trace context, around [`Self::call_tool_traced`].
    pub(super) async fn call_tool_with_span(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        use tracing::Instrument as _;
        // The host first: over stdio it may still be opening, and opening it is what sets
        // up the export of spans (a span made before that would go nowhere).
        self.bound().await?;
        // The door's span, the root of the call's trace, named and attributed as the
        // OpenTelemetry conventions for MCP say (docs/telemetry.md).
        let http = context.extensions.get::<http::request::Parts>();
        let span = tracing::info_span!(
            target: toolshed_core::TRACE,
            "tools/call",
            otel.name = %format_args!("tools/call {}", request.name),
            otel.kind = "server",
            mcp.method.name = "tools/call",
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = %request.name,
            jsonrpc.request.id = %context.id,
            mcp.protocol.version = context.protocol_version().map(|v| v.to_string()),
            mcp.session.id = http
                .and_then(|p| p.headers.get("mcp-session-id"))
                .and_then(|v| v.to_str().ok()),
            network.transport = if http.is_some() { "tcp" } else { "pipe" },
            error.type = tracing::field::Empty,
        );
        // A caller's trace context (`_meta`, else the HTTP headers) parents the door's span.
        let header = |name: &str| {
            http.and_then(|p| p.headers.get(name))
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let parent = context
            .meta
            .get_traceparent()
            .and_then(|given| {
                toolshed_core::trace_context::TraceParent::parse(
                    given,
                    context.meta.get_tracestate(),
                )
            })
            .or_else(|| {
                header("traceparent").and_then(|given| {
                    toolshed_core::trace_context::TraceParent::parse(
                        &given,
                        header("tracestate").as_deref(),
                    )
                })
            });
        if let Some(parent) = &parent {
            toolshed_core::trace_context::adopt(&span, parent);
        }
        let answer = self
            .call_tool_traced(request, context)
            .instrument(span.clone())
            .await;
        match &answer {
            Err(error) => {
                span.record("error.type", error.code.0.to_string().as_str());
            }
            Ok(response) if response_is_error(response) => {
                span.record("error.type", "tool_error");
            }
            Ok(_) => {}
        }
        answer
    }

    /// `tools/call` inside the door's span.
    pub(super) async fn call_tool_traced(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let bound = self.bound().await?;

        bound.check_token()?;
        Self::require(bound, &context, "tools:call")?;
        let owner = self.owner_for(bound, &context)?;
        self.begin_planning(bound, &owner, &context)?;
        let mut name = request.name.into_owned();
        let from_transport = context
            .extensions
            .get::<crate::TransportArguments>()
            .or_else(|| {
                let parts = context.extensions.get::<http::request::Parts>()?;
                parts.extensions.get::<crate::TransportArguments>()
            })
            .cloned()
            .unwrap_or_default();
        let mut arguments = request.arguments.unwrap_or_default();
        from_transport.put_back(&mut arguments);
        let mut arguments = Value::Object(arguments);
        let caller_narrowed = Self::caller_for(bound, &context).is_some_and(|c| c.tools.is_some());
        if bound.discovers(bound.mode(caller_narrowed)) {
            match name.as_str() {
                crate::discover::SEARCH => {
                    let visible = Self::tools_for(bound, &context);
                    let (mut result, found) =
                        crate::discover::search(&visible, &arguments, |found| {
                            bound.host.catalog().groups(found)
                        });
                    if let Some(names) = found {
                        // A stateless request's server lives for that request only: a
                        // list it kept would be gone by the next one.
                        let stateless = era_2026(&context)
                            && context.extensions.get::<http::request::Parts>().is_some();
                        if stateless {
                            crate::discover::say_not_kept(&mut result);
                        } else {
                            let mode = bound.mode(caller_narrowed);
                            // Only what the list leaves out: a listed tool is not "added",
                            // nor counted against the connection's limit.
                            let unlisted: Vec<String> = names
                                .into_iter()
                                .filter(|name| {
                                    visible
                                        .iter()
                                        .any(|e| &e.spec().name == name && !bound.listed(e, mode))
                                })
                                .collect();
                            let added = bound.activate(&unlisted);
                            crate::discover::say_activated(&mut result, &added);
                        }
                    }
                    return Ok(result.into());
                }
                crate::discover::CALL => match crate::discover::inner_call(arguments) {
                    Ok((inner, inner_arguments)) => {
                        name = inner;
                        arguments = inner_arguments;
                    }
                    Err(result) => return Ok((*result).into()),
                },
                _ => {}
            }
        }
        let caller = Self::caller_for(bound, &context);
        // An agent token's own client answering its own call's approval is self-approval:
        // only where [approvals] self_approval allows it.
        let self_answers = caller.as_ref().is_some_and(|c| c.is_agent())
            && bound.host.config().config.approvals.self_approval
                == toolshed_host::approvals::SelfApproval::Deny;
        // The 2026-07-28 era asks in a later request (input_required) what the session era
        // asks in this one (elicitation); the client must have declared elicitation.
        let asks_later = era_2026(&context)
            && context
                .client_capabilities()
                .is_some_and(|caps| caps.elicitation.is_some());
        if request.request_state.is_some() && !asks_later {
            return Err(McpError::invalid_params(
                "the call brings a requestState, but toolshed asks for input only of a \
                 2026-07-28 request whose client declares elicitation; call again without it",
                None,
            ));
        }
        let prior = if asks_later {
            crate::input::open(
                &bound.host,
                &owner.0,
                &name,
                &arguments,
                request.request_state.as_deref(),
            )?
        } else {
            crate::input::State::default()
        };
        let answered = match &prior.approval {
            Some(id) => Some(crate::input::take_approval(
                &bound.host,
                id,
                request
                    .input_responses
                    .as_ref()
                    .and_then(|r| r.get(crate::input::APPROVAL)),
                &format!("the MCP client of {}", owner.0),
                self_answers,
            )?),
            None => None,
        };
        let asked_with = asks_later.then(|| arguments.clone());
        let mut call = CallRequest::new(name.clone(), arguments, owner.clone(), "mcp");
        call.oversized = from_transport.oversized;
        call.credential = caller.as_ref().and_then(|c| c.token_id.clone());
        call.caller_tools = caller.and_then(|c| c.tools);
        call.cancel = context.ct.clone();
        call.answered_approval = answered;
        // An approval the call needs is asked in a later request too — unless the
        // caller's own client may not answer it (self-approval): then it waits for REST.
        let deferred = (asks_later && !self_answers)
            .then(|| Arc::new(toolshed_host::DeferredApproval::default()));
        call.defer_approval = deferred.clone();
        let round_trip = asks_later.then(|| {
            Arc::new(crate::input::RoundTripAsker::new(
                crate::input::with_responses(&prior, request.input_responses.as_ref()),
            ))
        });
        if let Some(asker) = &round_trip {
            call.asker = Some(asker.clone());
        } else if crate::approve::Elicitation::supported(&context.peer) {
            call.asker = Some(Arc::new(crate::input::ElicitAsker {
                peer: context.peer.clone(),
            }));
        }
        if !self_answers && crate::approve::Elicitation::supported(&context.peer) {
            call.approver = Some(Arc::new(crate::approve::Elicitation {
                peer: context.peer.clone(),
                owner: call.owner.0.clone(),
            }));
        }
        if crate::sampling::ClientSampler::supported(&context.peer) {
            call.sampler = Some(Arc::new(crate::sampling::ClientSampler {
                peer: context.peer.clone(),
            }));
        }
        // Log messages of the call (a mounted server's) reach the client: in the session era
        // at the level it set (all until it sets one); in the 2026-07-28 era when the
        // request asks for them (`logLevel` in its `_meta`), at that level and above.
        let floor = if era_2026(&context) {
            context
                .meta
                .log_level()
                .map(|l| Some(crate::logging::severity(l)))
        } else {
            Some(self.log_level.floor())
        };
        let logs = floor.map(|floor| {
            let (forwarder, sink) =
                crate::logging::LogForwarder::start(context.peer.clone(), floor);
            call.log = Some(sink);
            forwarder
        });
        call.profile = bound.session.profile.clone();
        call.selection = bound.session.selection.clone();
        let forwarder = match context.meta.get_progress_token() {
            Some(token) => {
                let (forwarder, sink) = ProgressForwarder::start(context.peer.clone(), token);
                call.progress = Some(sink);
                Some(forwarder)
            }
            None => None,
        };
        // A client that declared the Tasks extension gets a task for a call that runs long,
        // and for a call of a `complex` tool as soon as it runs.
        let mut after = bound.host.config().config.mcp.task_after_ms;
        if after > 0
            && bound
                .host
                .catalog()
                .lookup(&call.tool)
                .is_some_and(|t| t.spec().complexity == toolshed_core::Complexity::Complex)
        {
            after = 1;
        }
        let result = if after > 0
            && context
                .client_capabilities()
                .is_some_and(|caps| caps.supports_tasks())
        {
            let wait = std::time::Duration::from_millis(after);
            // A session-era client's elicitation reaches the person while it stays
            // connected, task or not; an input round trip ends with the request.
            let keeps_asking = round_trip.is_none() && call.asker.is_some();
            match crate::tasks::run(
                bound.host.clone(),
                call,
                context.ct.clone(),
                wait,
                keeps_asking,
            )
            .await
            {
                crate::tasks::Outcome::Done(result) => result,
                crate::tasks::Outcome::Task(view) => {
                    if let Some(forwarder) = forwarder {
                        forwarder.finish().await;
                    }
                    if let Some(logs) = logs {
                        logs.finish().await;
                    }
                    let retention = bound.host.jobs().retention();
                    return Ok(crate::tasks::created(&view, retention).into());
                }
            }
        } else {
            bound.host.call(call).await
        };
        if let Some(forwarder) = forwarder {
            forwarder.finish().await;
        }
        if let Some(logs) = logs {
            logs.finish().await;
        }
        let resolved = result.plugin_id.is_some();
        if let Some(arguments) = asked_with
            && let Some(asking) = crate::input::still_asking(
                &bound.host,
                crate::input::Call {
                    owner: &owner.0,
                    tool: &name,
                    arguments: &arguments,
                },
                deferred.and_then(|d| d.asked()),
                round_trip.as_deref(),
            )
        {
            return asking.map(Into::into);
        }
        match result.result {
            Ok(output) => Ok(result_from_output(output).into()),
            Err(error) => result_from_error(&name, resolved, error).map(Into::into),
        }
    }
}

/// Whether a `tools/call` answer reports the tool's failure.
fn response_is_error(response: &CallToolResponse) -> bool {
    matches!(response, CallToolResponse::Complete(result) if result.is_error == Some(true))
}
