//! The methods of the plugin manager's service: each checks the scope its REST twin
//! needs, decodes its message and answers through the host.

use std::future::Future;
use std::sync::Arc;

use axum::http;
use futures_util::Stream;
use serde_json::Value;
use tonic::body::Body;
use tonic::{Request, Response, Status};
use tracing::Instrument;

use toolshed_core::{Progress as ToolProgress, ToolOutput};
use toolshed_host::CallRequest;
use toolshed_host::identity::Caller;

use super::messages::{
    Content, Event, ExecuteEvent, ExecuteRequest, ExecuteResult, ListPluginsRequest,
    ListPluginsResponse, ListToolsRequest, ListToolsResponse, LogMessage, Plugin, PluginRef,
    Progress, Tool,
};
use super::{BoxFuture, PluginManager, status_of};

/// Events of a streamed call waiting to be sent: progress past it is dropped, never
/// the result (the poll-free stream must not hold a slow client's backlog without bound).
const STREAM_BACKLOG: usize = 64;

/// Sends `request` to `method`.
pub(super) async fn dispatch<B>(
    this: PluginManager,
    method: &str,
    caller: Caller,
    request: http::Request<B>,
) -> http::Response<Body>
where
    B: http_body::Body + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>> + Send,
{
    let scope = match method {
        "ListPlugins" | "GetPlugin" | "ListTools" => "tools:list",
        "Execute" | "ExecuteStream" => "tools:call",
        "EnablePlugin" | "DisablePlugin" | "PausePlugin" | "ResumePlugin" | "ReloadPlugin" => {
            "plugins:admin"
        }
        other => {
            return Status::unimplemented(format!(
                "{}/{other} is not a method; see proto/toolshed/v1/plugin_manager.proto",
                super::SERVICE
            ))
            .into_http();
        }
    };
    if !caller.allows(scope) {
        let (status, _, message) = crate::guard::Rejection::MissingScope(scope).parts();
        return Status::new(super::code_of(status), message).into_http();
    }
    let owner = match crate::api::owner(Some(&caller), request.headers()) {
        Ok(owner) => owner,
        Err(error) => return status_of(&error).into_http(),
    };
    let host = this.host.clone();
    match method {
        "ListPlugins" => {
            unary(
                &this,
                request,
                move |_: Request<ListPluginsRequest>| async move {
                    let plugins = host
                        .plugins()
                        .list()
                        .into_iter()
                        .map(Plugin::from)
                        .collect();
                    Ok(ListPluginsResponse { plugins })
                },
            )
            .await
        }
        "GetPlugin" => {
            unary(&this, request, move |r: Request<PluginRef>| async move {
                plugin(&host, &r.into_inner().id)
            })
            .await
        }
        "ListTools" => {
            unary(
                &this,
                request,
                move |r: Request<ListToolsRequest>| async move {
                    let wanted = r.into_inner().plugin_id;
                    if !wanted.is_empty() && host.plugins().info(&wanted).is_none() {
                        return Err(unknown_plugin(&wanted));
                    }
                    let tools = crate::api::usable(&host, Some(&caller))
                        .into_iter()
                        .filter(|t| wanted.is_empty() || t.plugin_id == wanted)
                        .map(|t| {
                            let spec = t.spec();
                            Tool {
                                name: spec.name.clone(),
                                plugin_id: t.plugin_id.clone(),
                                description: spec.description.clone(),
                                input_schema_json: spec.input_schema.to_string(),
                                complexity: if spec.complexity.is_simple() {
                                    "simple"
                                } else {
                                    "complex"
                                }
                                .to_string(),
                                group: spec.group.clone(),
                                read_only: spec.annotations.read_only,
                            }
                        })
                        .collect();
                    Ok(ListToolsResponse { tools })
                },
            )
            .await
        }
        "Execute" => {
            let stop = this.stop.clone();
            unary(
                &this,
                request,
                move |r: Request<ExecuteRequest>| async move {
                    let mut call = call_of(r.into_inner(), &caller, owner)?;
                    // A client that goes away (or whose deadline passes, or the door closing)
                    // cancels the call. It runs on its own task, so that a cancelled call
                    // still ends as one, killing what it started, and is recorded.
                    let cancel = stop.child_token();
                    let _cancel_on_drop = cancel.clone().drop_guard();
                    call.cancel = cancel;
                    let span = crate::api::door_span("POST", "grpc Execute", &call.tool);
                    let result =
                        tokio::spawn(async move { host.call(call).instrument(span).await })
                            .await
                            .map_err(|e| {
                                Status::internal(format!("the call's task failed: {e}"))
                            })?;
                    result_of(&result)
                },
            )
            .await
        }
        "ExecuteStream" => {
            let stop = this.stop.clone();
            streaming(
                &this,
                request,
                move |r: Request<ExecuteRequest>| async move {
                    let call = call_of(r.into_inner(), &caller, owner)?;
                    Ok(execute_streamed(host, call, stop))
                },
            )
            .await
        }
        lifecycle => {
            let lifecycle = lifecycle.to_string();
            unary(&this, request, move |r: Request<PluginRef>| async move {
                let id = r.into_inner().id;
                let plugins = host.plugins();
                let changed = match lifecycle.as_str() {
                    "EnablePlugin" => plugins.set_enabled(&id, true).await,
                    "DisablePlugin" => plugins.set_enabled(&id, false).await,
                    "PausePlugin" => plugins.set_paused(&id, true).await,
                    "ResumePlugin" => plugins.set_paused(&id, false).await,
                    _ => plugins.reload(&id).await,
                };
                changed.map_err(|e| status_of(&crate::api::registry_error(e)))?;
                plugin(&host, &id)
            })
            .await
        }
    }
}

/// Plugin `id` as it is now.
fn plugin(host: &toolshed_host::Host, id: &str) -> Result<Plugin, Status> {
    host.plugins()
        .info(id)
        .map(Plugin::from)
        .ok_or_else(|| unknown_plugin(id))
}

fn unknown_plugin(id: &str) -> Status {
    Status::not_found(format!("no plugin `{id}`; ListPlugins lists them"))
}

/// The pipeline's request for an `ExecuteRequest` of `caller`.
fn call_of(
    request: ExecuteRequest,
    caller: &Caller,
    owner: toolshed_core::OwnerId,
) -> Result<CallRequest, Status> {
    if request.tool.is_empty() {
        return Err(Status::invalid_argument(
            "`tool` is empty: name the tool to run (ListTools lists them)",
        ));
    }
    let arguments = if request.arguments_json.trim().is_empty() {
        Value::Object(Default::default())
    } else {
        match serde_json::from_str::<Value>(&request.arguments_json) {
            Ok(value @ Value::Object(_)) => value,
            Ok(_) => {
                return Err(Status::invalid_argument(
                    "`arguments_json` must be a JSON object, like {\"path\": \"README.md\"}",
                ));
            }
            Err(e) => {
                return Err(Status::invalid_argument(format!(
                    "`arguments_json` is not JSON: {e}"
                )));
            }
        }
    };
    let mut call = CallRequest::new(request.tool, arguments, owner, "grpc");
    call.caller_tools = caller.tools.clone();
    call.credential = caller.token_id.clone();
    if request.timeout_ms > 0 {
        call.timeout = Some(std::time::Duration::from_millis(request.timeout_ms));
    }
    if !request.idempotency_key.is_empty() {
        call.idempotency_key = Some(request.idempotency_key);
    }
    Ok(call)
}

/// The answer for a finished call: its output (a tool that ran and failed is
/// `is_error`), or the status of why it could not run.
fn result_of(result: &toolshed_host::CallResult) -> Result<ExecuteResult, Status> {
    let output = match &result.result {
        Ok(output) => output.clone(),
        Err(error) => {
            let rest = crate::ApiError::from(error);
            // gRPC has codes of its own for these two, where REST says 409 and 503.
            match error.kind() {
                toolshed_core::ErrorKind::Cancelled => {
                    return Err(Status::cancelled(rest.message));
                }
                toolshed_core::ErrorKind::Unconfigured => {
                    return Err(Status::failed_precondition(rest.message));
                }
                _ => {}
            }
            if rest.status != http::StatusCode::OK {
                return Err(status_of(&rest));
            }
            ToolOutput::text(error.to_string()).into_error()
        }
    };
    Ok(ExecuteResult {
        call_id: result.call_id.0.clone(),
        plugin_id: result.plugin_id.clone().unwrap_or_default(),
        is_error: output.is_error,
        content: output.content.iter().map(Content::from).collect(),
        structured_json: output
            .structured
            .as_ref()
            .map(Value::to_string)
            .unwrap_or_default(),
        duration_ms: u64::try_from(result.duration.as_millis()).unwrap_or(u64::MAX),
    })
}

/// Runs `call` on its own task, its progress and log messages going to the stream as
/// they come (dropped past [`STREAM_BACKLOG`] waiting), its result last. A client that
/// stops reading cancels it.
fn execute_streamed(
    host: Arc<toolshed_host::Host>,
    mut call: CallRequest,
    stop: tokio_util::sync::CancellationToken,
) -> impl Stream<Item = Result<ExecuteEvent, Status>> + Send + 'static {
    let (sender, receiver) = tokio::sync::mpsc::channel(STREAM_BACKLOG);
    let progress = sender.clone();
    call.progress = Some(toolshed_core::ProgressSink::new(move |p: ToolProgress| {
        let _ = progress.try_send(Ok(ExecuteEvent {
            event: Some(Event::Progress(Progress {
                progress: p.progress.unwrap_or_default(),
                has_progress: p.progress.is_some(),
                total: p.total.unwrap_or_default(),
                has_total: p.total.is_some(),
                message: p.message.unwrap_or_default(),
            })),
        }));
    }));
    let log = sender.clone();
    call.log = Some(toolshed_core::LogSink::new(move |message: Value| {
        let _ = log.try_send(Ok(ExecuteEvent {
            event: Some(Event::Log(LogMessage {
                json: message.to_string(),
            })),
        }));
    }));
    let cancel = stop.child_token();
    call.cancel = cancel.clone();
    let span = crate::api::door_span("POST", "grpc ExecuteStream", &call.tool);
    tokio::spawn(async move {
        let gone = sender.clone();
        let watch = tokio::spawn(async move {
            gone.closed().await;
            cancel.cancel();
        });
        let result = host.call(call).instrument(span).await;
        watch.abort();
        let last = result_of(&result).map(|r| ExecuteEvent {
            event: Some(Event::Result(r)),
        });
        let _ = sender.send(last).await;
    });
    futures_util::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|event| (event, receiver))
    })
}

/// Answers a unary request with `handler`.
async fn unary<B, Req, Resp, F, Fut>(
    this: &PluginManager,
    request: http::Request<B>,
    handler: F,
) -> http::Response<Body>
where
    B: http_body::Body + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>> + Send,
    Req: prost::Message + Default + Send + 'static,
    Resp: prost::Message + Send + 'static,
    F: FnOnce(Request<Req>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Resp, Status>> + Send + 'static,
{
    grpc::<Resp, Req>(this)
        .unary(Once(Some(handler)), request)
        .await
}

/// The gRPC codec of a method taking `Req` and answering `Resp`, within the door's limit
/// on what it reads.
fn grpc<Resp, Req>(this: &PluginManager) -> tonic::server::Grpc<tonic_prost::ProstCodec<Resp, Req>>
where
    Req: prost::Message + Default + Send + 'static,
    Resp: prost::Message + Send + 'static,
{
    tonic::server::Grpc::new(tonic_prost::ProstCodec::default())
        .max_decoding_message_size(this.max_message_bytes)
        .max_encoding_message_size(usize::MAX)
}

/// Answers a server-streaming request with `handler`.
async fn streaming<B, Req, S, F, Fut>(
    this: &PluginManager,
    request: http::Request<B>,
    handler: F,
) -> http::Response<Body>
where
    B: http_body::Body + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>> + Send,
    Req: prost::Message + Default + Send + 'static,
    S: Stream<Item = Result<ExecuteEvent, Status>> + Send + 'static,
    F: FnOnce(Request<Req>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<S, Status>> + Send + 'static,
{
    grpc::<ExecuteEvent, Req>(this)
        .server_streaming(Once(Some(handler)), request)
        .await
}

/// A handler called once, as a tower service (one is made per request).
struct Once<F>(Option<F>);

impl<Req, Resp, F, Fut> tower_service::Service<Request<Req>> for Once<F>
where
    F: FnOnce(Request<Req>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Resp, Status>> + Send + 'static,
    Resp: Send + 'static,
{
    type Response = Response<Resp>;
    type Error = Status;
    type Future = BoxFuture<Result<Response<Resp>, Status>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Status>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Req>) -> Self::Future {
        match self.0.take() {
            Some(handler) => {
                let answer = handler(request);
                Box::pin(async move { answer.await.map(Response::new) })
            }
            None => Box::pin(async { Err(Status::internal("a handler was called twice")) }),
        }
    }
}
