//! The tool endpoints: the catalog, searching it, one tool, and running one.

use tracing::Instrument as _;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};
use toolshed_core::ToolOutput;
use toolshed_host::identity::Caller;
use toolshed_host::{CallRequest, Subject};

use super::plugins::LocaleQuery;
use super::{AppState, owner, parsed_body, query};
use crate::error::{ApiError, status_of};
use crate::reply::{
    CallResult, JobStarted, SearchHit, SearchResults, Tool, ToolGroup, ToolGroups, ToolList, read,
};
use toolshed_host::jobs::record_outcome;

/// Filters of `GET /tools`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ToolFilter {
    /// Only this group.
    pub group: Option<String>,
    /// Only this plugin's tools.
    pub plugin: Option<String>,
    /// Only the tools of this plane: `execution` (Fenix's `execution_runtime` catalog) or
    /// `program` (toolshed itself).
    #[schemars(extend("enum" = ["execution", "execution_runtime", "program"]))]
    pub plane: Option<String>,
    /// Only tools whose name, title or description contains this (case-insensitive).
    pub q: Option<String>,
    /// Titles and descriptions in this language, where the tool has them (`zh`, `zh-CN`).
    #[schemars(length(max = 35), regex(pattern = r"^[A-Za-z0-9_-]*$"))]
    pub locale: Option<String>,
}

/// `GET /tools`.
pub(crate) async fn tools(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    filter: Result<Query<ToolFilter>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<ToolList>, ApiError> {
    let filter = query(filter)?;
    let locale = LocaleQuery {
        locale: filter.locale.clone(),
    };
    let locale = locale.locale()?;
    let needle = filter.q.as_deref().map(str::to_lowercase);
    let plane = match filter.plane.as_deref() {
        None => None,
        Some("execution" | "execution_runtime") => Some(toolshed_core::Plane::Execution),
        Some("program") => Some(toolshed_core::Plane::Program),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "plane `{other}` is not a plane: give execution (or execution_runtime) or program"
            )));
        }
    };
    let tools = usable(&state.host, caller.as_deref())
        .into_iter()
        .filter(|t| filter.group.as_ref().is_none_or(|g| &t.spec().group == g))
        .filter(|t| filter.plugin.as_ref().is_none_or(|p| &t.plugin_id == p))
        .filter(|t| plane.is_none_or(|p| t.spec().plane == p))
        .filter(|t| {
            needle.as_ref().is_none_or(|n| {
                let spec = t.spec();
                spec.name.to_lowercase().contains(n)
                    || spec.description.to_lowercase().contains(n)
                    || spec
                        .title
                        .as_deref()
                        .is_some_and(|title| title.to_lowercase().contains(n))
            })
        })
        .map(|t| match locale {
            Some(locale) => Tool::new(t.spec().in_language(locale), &t.plugin_id),
            None => Tool::new(t.spec().clone(), &t.plugin_id),
        })
        .collect();
    // Fenix's names for the two catalogs.
    let catalog = plane.map(|p| match p {
        toolshed_core::Plane::Execution => "execution_runtime",
        toolshed_core::Plane::Program => "program",
    });
    Ok(Json(ToolList { tools, catalog }))
}

/// The tools callers may see (the host's rules), narrowed to `caller`'s tool scopes.
pub(crate) fn usable(
    host: &toolshed_host::Host,
    caller: Option<&Caller>,
) -> Vec<toolshed_host::registry::ToolEntry> {
    let caller_tools = caller.and_then(|c| c.tools.clone());
    host.catalog()
        .tools()
        .into_iter()
        .filter(|t| host.dispatcher().visible(t, None))
        .filter(|t| {
            caller_tools
                .as_deref()
                .is_none_or(|r| r.refuse(&Subject::new(t.spec(), &t.plugin_id)).is_none())
        })
        .collect()
}

/// `GET /tools/groups`: the operator groups of the tools the caller may use, with their
/// labels and descriptions.
pub(crate) async fn groups(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
) -> Json<ToolGroups> {
    let groups = state
        .host
        .catalog()
        .groups(&usable(&state.host, caller.as_deref()))
        .into_iter()
        .map(ToolGroup::from)
        .collect();
    Json(ToolGroups { groups })
}

/// The query of `GET /tools/search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ToolSearch {
    /// What you want to do, e.g. `replace text in a file`.
    #[schemars(length(min = 1, max = 500))]
    pub q: String,
    /// The most tools returned (default 8).
    #[schemars(range(min = 1, max = toolshed_host::tool_search::MAX_SEARCH_RESULTS))]
    pub limit: Option<usize>,
    /// Search what a caller using this profile sees.
    pub profile: Option<String>,
}

/// `GET /tools/search`: the tools the caller may use that best match `q`, ranked.
pub(crate) async fn search_tools(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    search: Result<Query<ToolSearch>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<SearchResults>, ApiError> {
    let search = query(search)?;
    let limit = search.limit.unwrap_or(8);
    let max = toolshed_host::tool_search::MAX_SEARCH_RESULTS;
    if !(1..=max).contains(&limit) {
        return Err(ApiError::bad_request(format!(
            "limit {limit} is out of range: ask for 1 to {max} tools"
        )));
    }
    if search.q.trim().is_empty() || search.q.len() > 500 {
        return Err(ApiError::bad_request(
            "q is what you want to do, 1 to 500 bytes, e.g. q=replace+text+in+a+file",
        ));
    }
    let dispatcher = state.host.dispatcher();
    if let Some(profile) = &search.profile
        && dispatcher.review().profile(profile).is_none()
    {
        return Err(ApiError::bad_request(format!(
            "no profile `{profile}`: the profiles are {}",
            dispatcher.review().profile_names().join(", ")
        )));
    }
    let caller_tools = caller.as_deref().and_then(|c| c.tools.clone());
    let visible: Vec<toolshed_host::registry::ToolEntry> = state
        .host
        .catalog()
        .tools()
        .into_iter()
        .filter(|t| dispatcher.visible(t, search.profile.as_deref()))
        .filter(|t| {
            caller_tools
                .as_deref()
                .is_none_or(|r| r.refuse(&Subject::new(t.spec(), &t.plugin_id)).is_none())
        })
        .collect();
    let results = toolshed_host::tool_search::search(&visible, &search.q, limit)
        .into_iter()
        .map(|(t, score)| {
            read::<SearchHit>(
                toolshed_host::tool_search::found_json(&t, score),
                "a tool search hit",
            )
        })
        .collect::<Result<_, _>>()?;
    Ok(Json(SearchResults {
        query: search.q,
        results,
    }))
}

/// `GET /tools/{name}`.
pub(crate) async fn tool(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    Path(name): Path<String>,
) -> Result<Json<Tool>, ApiError> {
    let caller_tools = caller.as_deref().and_then(|c| c.tools.clone());
    state
        .host
        .dispatcher()
        .visible_tool(&name, None, caller_tools.as_deref())
        .map(|t| Json(Tool::new(t.spec().clone(), &t.plugin_id)))
        .ok_or_else(|| unknown_tool(&state, &name))
}

fn unknown_tool(state: &AppState, name: &str) -> ApiError {
    let names = state.host.catalog().tool_names();
    let close = toolshed_host::closest(name, names.iter().map(String::as_str), 3);
    let hint = if close.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", close.join(", "))
    };
    ApiError::not_found(format!(
        "no tool `{name}`{hint}; GET /api/v1/tools lists them"
    ))
}

/// The body of `POST /tools/{name}/execute`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Execute {
    /// The tool's arguments, checked against its input schema (default `{}`).
    #[serde(default, deserialize_with = "present")]
    pub arguments: Option<Map<String, Value>>,
    /// Start a job and answer `202` at once (the default for a `complex` tool).
    #[serde(default, rename = "async", deserialize_with = "present")]
    pub run_async: Option<bool>,
    /// The call's deadline, in milliseconds.
    #[serde(default, deserialize_with = "present")]
    #[schemars(range(min = 1))]
    pub timeout_ms: Option<u64>,
}

/// A field that may be left out but not given as `null` (the document says a number).
fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

/// The REST door's span around a call: the root of the call's trace, with the HTTP
/// conventions' name and attributes (docs/telemetry.md).
pub(crate) fn door_span(method: &'static str, route: &'static str, tool: &str) -> tracing::Span {
    tracing::info_span!(
        target: toolshed_core::TRACE,
        "rest",
        otel.name = %format_args!("{method} {route}"),
        otel.kind = "server",
        http.request.method = method,
        http.route = route,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %tool,
        error.type = tracing::field::Empty,
    )
}

/// Makes the caller's W3C trace context (`traceparent`, `tracestate` headers) the parent
/// of the door's span.
fn adopt_trace(span: &tracing::Span, headers: &HeaderMap) {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(parent) = header("traceparent").and_then(|given| {
        toolshed_core::trace_context::TraceParent::parse(given, header("tracestate"))
    }) {
        toolshed_core::trace_context::adopt(span, &parent);
    }
}

/// `POST /tools/{name}/execute`.
pub(crate) async fn execute(
    State(state): State<AppState>,
    Path(name): Path<String>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
    request: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, ApiError> {
    // Held until the call has answered: the arguments' tree lives that long.
    let limits = state.host.catalog().argument_limits(&name);
    let (request, room, oversized) =
        parsed_body::<Execute>(&state.trees, &headers, request, limits.as_ref()).await?;
    let owner = owner(caller.as_deref(), &headers)?;
    if let Some(ms) = request.timeout_ms {
        let max = state.host.config().config.limits.max_timeout_ms;
        if ms == 0 || ms > max {
            return Err(ApiError::bad_request(format!(
                "timeout_ms = {ms} is out of range: give 1 to {max} milliseconds"
            )));
        }
    }
    let arguments = Value::Object(request.arguments.unwrap_or_default());
    let mut call = CallRequest::new(name, arguments, owner, "rest");
    call.caller_tools = caller.as_deref().and_then(|c| c.tools.clone());
    call.credential = caller.as_deref().and_then(|c| c.token_id.clone());
    call.timeout = request.timeout_ms.map(std::time::Duration::from_millis);
    call.oversized = oversized;
    let route = Route {
        sync: "/api/v1/tools/{name}/execute",
        job: "/api/v1/tools/{name}/execute (job)",
    };
    let run_async = request
        .run_async
        .unwrap_or_else(|| runs_long(&state, &call.tool));
    answer(&state, call, run_async, Box::new(room), &headers, route).await
}

/// Whether `tool` is `complex` (its calls run as a job unless the caller says otherwise).
pub(super) fn runs_long(state: &AppState, tool: &str) -> bool {
    state
        .host
        .catalog()
        .lookup(tool)
        .is_some_and(|t| t.spec().complexity == toolshed_core::Complexity::Complex)
}

/// The HTTP routes a call came by, for its span.
pub(super) struct Route {
    /// A call answered in the response.
    pub sync: &'static str,
    /// A call started as a job.
    pub job: &'static str,
}

/// Runs `call` for a REST request: started as a job (`202`) with `run_async`, else run and
/// answered. `room` (the arguments' tree) is held until the call ends. A call with a
/// `context` announces its end with it (`tool.executed`); a job echoes it in its events.
pub(super) async fn answer(
    state: &AppState,
    mut call: CallRequest,
    run_async: bool,
    room: Box<dyn std::any::Any + Send>,
    headers: &HeaderMap,
    route: Route,
) -> Result<Response, ApiError> {
    let name = call.tool.clone();
    // For a tool idempotent by key (docs/plugins.md): the key of this request.
    call.idempotency_key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    if run_async {
        // An unknown or hidden tool, bad arguments or a policy refusal are the caller's
        // mistake now, not a failed job later: the pipeline's own checks, run ahead.
        state
            .host
            .dispatcher()
            .preflight(&call)
            .map_err(|e| ApiError::from(&e))?;
        // The job holds the arguments' room until it ends.
        // A job's call is the root of its own trace: this request is answered at once.
        let span = door_span("POST", route.job, &name);
        let job = state.jobs.start(state.host.clone(), call, room, span)?;
        let location = format!("/api/v1/jobs/{}", job.id);
        let mut response = (
            StatusCode::ACCEPTED,
            Json(JobStarted {
                job: job.into(),
                location: location.clone(),
            }),
        )
            .into_response();
        if let Ok(value) = HeaderValue::from_str(&location) {
            response.headers_mut().insert(header::LOCATION, value);
        }
        return Ok(response);
    }
    // A client that goes away cancels the call (and kills what it started), and so does
    // the end of a shutdown's grace period. The call runs on its own task, so that a
    // cancelled call still ends as one and is recorded in the audit.
    let cancel = state.calls_stop.child_token();
    let _cancel_on_drop = cancel.clone().drop_guard();
    call.cancel = cancel;
    let context = call.context.take();
    let owner = call.owner.0.clone();
    let span = door_span("POST", route.sync, &name);
    adopt_trace(&span, headers);
    let host = state.host.clone();
    let running = span.clone();
    let result = tokio::spawn(async move { host.call(call).instrument(running).await })
        .await
        .map_err(|e| ApiError::internal(format!("the call's task failed: {e}")))?;
    record_outcome(&span, &result);
    drop(room);
    if let Some(context) = context {
        state.events.publish(
            "tool.executed",
            None,
            Some(&owner),
            serde_json::json!({
                "call_id": result.call_id.0,
                "plugin_id": result.plugin_id,
                "tool": name,
                "is_error": result.result.as_ref().map_or(true, |o| o.is_error),
                "duration_ms": u64::try_from(result.duration.as_millis()).unwrap_or(u64::MAX),
                "context": context,
            }),
        );
    }
    match &result.result {
        Ok(output) => Ok(Json(CallResult::of(&result, output)).into_response()),
        Err(error) if status_of(error.kind()) == StatusCode::OK => {
            let output = ToolOutput::text(error.to_string()).into_error();
            Ok(Json(CallResult::of(&result, &output)).into_response())
        }
        Err(error) => Err(ApiError::from(error)),
    }
}
