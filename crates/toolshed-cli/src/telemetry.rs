//! OpenTelemetry export (`[telemetry]`, docs/telemetry.md): the spans the doors, the
//! pipeline and the operations open under the [`toolshed_core::TRACE`] target become one
//! trace per call, and the host's call events and live gauges become metrics, both sent over
//! OTLP/HTTP (protobuf) to the configured collector.
//!
//! The exporters run on the SDK's own threads and send through toolshed's HTTP client
//! ([`NetClient`]), on the async runtime, to the collector's host only (TLS included for an
//! `https` endpoint). Nothing here runs unless `otlp_endpoint` is set.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{Bytes, HttpError, Request, Response};
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::SdkLoggerProvider;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};
use toolshed_core::{CancellationToken, HttpClient as _, HttpRequest, NetPolicy};
use toolshed_host::config::TelemetryConfig;
use toolshed_host::{Event, Host};
use toolshed_ops::net::NetClient;
use tracing_subscriber::Registry;

/// The most response bytes read from the collector (its answer is a small status message).
const MAX_ANSWER_BYTES: usize = 64 << 10;

/// The running exporters, shut down (flushing what is left) when the process ends.
struct Exporters {
    traces: SdkTracerProvider,
    meters: SdkMeterProvider,
    logs: Option<SdkLoggerProvider>,
    /// Where the exporters' requests run: the server's runtime, then one of their own for
    /// the last flush.
    runtime: Arc<Mutex<tokio::runtime::Handle>>,
}

static EXPORTERS: OnceLock<Mutex<Option<Exporters>>> = OnceLock::new();

/// Where the exporters send, checked: the `/v1/traces` and `/v1/metrics` URLs and the one
/// host (with its port) they may reach.
#[derive(Debug, PartialEq)]
pub(crate) struct Endpoint {
    traces: String,
    metrics: String,
    logs: String,
    host: String,
}

/// Checks `[telemetry] otlp_endpoint`.
pub(crate) fn endpoint(base: &str) -> Result<Endpoint, String> {
    let bad = |why: &str| {
        format!(
            "[telemetry] otlp_endpoint = {base:?} {why}; give the collector's OTLP/HTTP base URL, \
             e.g. \"http://127.0.0.1:4318\""
        )
    };
    let url = url::Url::parse(base).map_err(|e| bad(&format!("is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("is not an http or https URL"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad(
            "has credentials in it; send them as [telemetry] headers instead",
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(bad("has a query or fragment"));
    }
    let Some(host) = url.host_str() else {
        return Err(bad("has no host"));
    };
    let port = url.port_or_known_default().unwrap_or(80);
    let path = url.path().trim_end_matches('/');
    let root = format!(
        "{}://{}{}",
        url.scheme(),
        &url[url::Position::BeforeHost..url::Position::AfterPort],
        path
    );
    Ok(Endpoint {
        traces: format!("{root}/v1/traces"),
        metrics: format!("{root}/v1/metrics"),
        logs: format!("{root}/v1/logs"),
        host: format!("{host}:{port}"),
    })
}

/// Starts the exporters when `[telemetry] otlp_endpoint` is set, returning the tracing
/// layer that turns the call spans into OpenTelemetry spans. Called once per process, from
/// inside the async runtime; a second call returns `None`.
pub(crate) fn start(
    config: &TelemetryConfig,
) -> Result<Option<Box<dyn tracing_subscriber::Layer<Registry> + Send + Sync>>, String> {
    use tracing_subscriber::Layer as _;
    let Some(base) = config.otlp_endpoint.as_deref() else {
        return Ok(None);
    };
    let endpoint = endpoint(base)?;
    let log_level = match config.logs.as_str() {
        "off" => None,
        level => Some(level.parse::<tracing::Level>().map_err(|_| {
            format!(
                "[telemetry] logs = {level:?} is not a level: use error, warn, info, debug or off"
            )
        })?),
    };
    let slot = EXPORTERS.get_or_init(Mutex::default);
    let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
    if slot.is_some() {
        return Ok(None);
    }
    let handle = tokio::runtime::Handle::try_current()
        .map_err(|_| "telemetry needs the async runtime".to_string())?;
    let runtime = Arc::new(Mutex::new(handle));
    let client = Arc::new(Sender {
        net: Arc::new(NetClient::new()),
        policy: NetPolicy::Only(vec![endpoint.host.clone()]),
        timeout: Duration::from_millis(config.timeout_ms.max(1)),
        runtime: runtime.clone(),
    });
    let headers: std::collections::HashMap<String, String> = config
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let timeout = Duration::from_millis(config.timeout_ms.max(1));
    let failed = |what: &str, e: &dyn std::fmt::Display| {
        format!("cannot start the OpenTelemetry {what} exporter: {e}")
    };
    let resource = Resource::builder()
        .with_service_name(config.service_name.clone())
        .with_attributes([
            KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
            KeyValue::new("service.instance.id", instance_id()),
        ])
        .build();

    let spans = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(endpoint.traces.clone())
        .with_timeout(timeout)
        .with_headers(headers.clone())
        .with_shared_http_client(client.clone())
        .build()
        .map_err(|e| failed("trace", &e))?;
    let batches = BatchSpanProcessor::builder(spans)
        .with_batch_config(
            BatchConfigBuilder::default()
                .with_scheduled_delay(Duration::from_millis(config.traces_interval_ms.max(1)))
                .build(),
        )
        .build();
    let traces = SdkTracerProvider::builder()
        .with_resource(resource.clone())
        .with_span_processor(batches)
        .build();

    let logs = match log_level {
        None => None,
        Some(_) => {
            let exporter = opentelemetry_otlp::LogExporter::builder()
                .with_http()
                .with_endpoint(endpoint.logs.clone())
                .with_timeout(timeout)
                .with_headers(headers.clone())
                .with_shared_http_client(client.clone())
                .build()
                .map_err(|e| failed("log", &e))?;
            Some(
                SdkLoggerProvider::builder()
                    .with_resource(resource.clone())
                    .with_batch_exporter(exporter)
                    .build(),
            )
        }
    };

    let metrics = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .with_endpoint(endpoint.metrics.clone())
        .with_timeout(timeout)
        .with_headers(headers)
        .with_shared_http_client(client)
        .build()
        .map_err(|e| failed("metric", &e))?;
    let reader = PeriodicReader::builder(metrics)
        .with_interval(Duration::from_millis(config.metrics_interval_ms.max(1)))
        .build();
    let meters = SdkMeterProvider::builder()
        .with_resource(resource)
        .with_reader(reader)
        .build();

    let layer = tracing_opentelemetry::layer()
        .with_tracer(traces.tracer("toolshed"))
        .with_location(false)
        .with_threads(false)
        .with_target(false)
        .with_level(false)
        .with_tracked_inactivity(false)
        .with_filter(
            tracing_subscriber::filter::Targets::new()
                .with_target(toolshed_core::TRACE, tracing::Level::TRACE),
        );
    // toolshed's log records (not the exporters' own, nor the HTTP client's that sends
    // them: a record about a send would be sent in turn).
    let log_layer = match (&logs, log_level) {
        (Some(provider), Some(level)) => Some(
            opentelemetry_appender_tracing::layer::OpenTelemetryTracingBridge::new(provider)
                .with_filter(
                    tracing_subscriber::filter::Targets::new()
                        .with_target("toolshed", level)
                        .with_target(
                            "toolshed_ops::net",
                            tracing::level_filters::LevelFilter::OFF,
                        ),
                ),
        ),
        _ => None,
    };
    // Side by side, each with its own filter (a Vec of layers keeps them apart).
    let mut layers: Vec<Box<dyn tracing_subscriber::Layer<Registry> + Send + Sync>> =
        vec![Box::new(layer)];
    if let Some(log_layer) = log_layer {
        layers.push(Box::new(log_layer));
    }
    *slot = Some(Exporters {
        traces,
        meters,
        logs,
        runtime,
    });
    toolshed_core::trace_context::install(Box::new(W3cBridge));
    toolshed_core::trace_context::set_http_headers(config.propagate_http);
    Ok(Some(Box::new(layers)))
}

/// W3C trace context in and out of the spans the layer exports.
struct W3cBridge;

impl toolshed_core::trace_context::Bridge for W3cBridge {
    fn set_parent(&self, span: &tracing::Span, parent: &toolshed_core::trace_context::TraceParent) {
        use opentelemetry::propagation::TextMapPropagator as _;
        use tracing_opentelemetry::OpenTelemetrySpanExt as _;
        let mut carrier = std::collections::HashMap::new();
        // Sampled whatever the caller says: a caller does not choose to leave its calls
        // out of toolshed's traces.
        let sampled = match parent.traceparent.rsplit_once('-') {
            Some((head, _flags)) => format!("{head}-01"),
            None => parent.traceparent.clone(),
        };
        carrier.insert("traceparent".to_string(), sampled);
        if let Some(state) = &parent.tracestate {
            carrier.insert("tracestate".to_string(), state.clone());
        }
        let context =
            opentelemetry_sdk::propagation::TraceContextPropagator::new().extract(&carrier);
        // A span the layer does not record (filtered out) has no parent to set.
        let _ = span.set_parent(context);
    }

    fn context_of(
        &self,
        span: &tracing::Span,
    ) -> Option<toolshed_core::trace_context::TraceParent> {
        use opentelemetry::propagation::TextMapPropagator as _;
        use tracing_opentelemetry::OpenTelemetrySpanExt as _;
        let mut carrier = std::collections::HashMap::new();
        opentelemetry_sdk::propagation::TraceContextPropagator::new()
            .inject_context(&span.context(), &mut carrier);
        let parent = carrier.get("traceparent")?;
        toolshed_core::trace_context::TraceParent::parse(
            parent,
            carrier.get("tracestate").map(String::as_str),
        )
    }
}

/// Counts the host's calls (by tool, plugin, door and outcome) and reads its live gauges,
/// for the metrics exporter; does nothing when telemetry is off. The counting task ends
/// with the host's event bus.
pub(crate) fn watch(host: &Host) {
    let Some(meter) = EXPORTERS.get().and_then(|slot| {
        let slot = slot.lock().unwrap_or_else(|p| p.into_inner());
        slot.as_ref().map(|e| e.meters.meter("toolshed"))
    }) else {
        return;
    };
    let calls = meter
        .u64_counter("toolshed.calls")
        .with_description("Tool calls, by tool, plugin, door and outcome")
        .build();
    let errors = meter
        .u64_counter("toolshed.call.errors")
        .with_description("Tool calls that failed, by tool, plugin, door and error type")
        .build();
    let durations = meter
        .f64_histogram("toolshed.call.duration")
        .with_unit("s")
        .with_description("How long tool calls took, by tool, plugin, door and outcome")
        .build();
    for (name, help, _) in host.services().gauges.read_all() {
        let services = host.services().clone();
        let wanted = name.clone();
        // Registered with the meter, which calls back at every export.
        let _gauge = meter
            .f64_observable_gauge(name)
            .with_description(help)
            .with_callback(move |observer| {
                if let Some((_, _, value)) = services
                    .gauges
                    .read_all()
                    .into_iter()
                    .find(|(name, _, _)| *name == wanted)
                {
                    observer.observe(value, &[]);
                }
            })
            .build();
    }
    let mut events = host.events().subscribe();
    let catalog = host.catalog().detached();
    tokio::spawn(async move {
        loop {
            let (tool, plugin, door, outcome, error, duration_ms) = match events.recv().await {
                Ok(Event::CallFinished {
                    tool,
                    plugin,
                    door,
                    duration_ms,
                    is_error,
                    ..
                }) => {
                    let outcome = if is_error { "tool_error" } else { "ok" };
                    let error = is_error.then(|| "tool_error".to_string());
                    (tool, plugin, door, outcome, error, duration_ms)
                }
                Ok(Event::CallFailed {
                    tool,
                    plugin,
                    door,
                    duration_ms,
                    kind,
                    ..
                }) => (tool, plugin, door, "error", Some(kind), duration_ms),
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            };
            // Names a caller made up are counted together, so that they cannot grow the
            // number of series without bound.
            let tool = if catalog.lookup(&tool).is_some() {
                tool
            } else {
                "(unknown)".to_string()
            };
            let mut attributes = vec![
                KeyValue::new("gen_ai.tool.name", tool),
                KeyValue::new("toolshed.plugin", plugin.unwrap_or_default()),
                KeyValue::new("toolshed.door", door),
            ];
            if let Some(kind) = error {
                attributes.push(KeyValue::new("error.type", kind.clone()));
                errors.add(1, &attributes);
                attributes.pop();
            }
            attributes.push(KeyValue::new("toolshed.outcome", outcome));
            calls.add(1, &attributes);
            durations.record(duration_ms as f64 / 1000.0, &attributes);
        }
    });
}

/// Sends what the exporters still hold and stops them, waiting at most [`FLUSH_LIMIT`] for
/// the collector. Call it after the server's runtime has stopped, so that the spans its
/// last tasks held are ended and go too: the sends run on a runtime of their own.
pub(crate) fn shutdown() {
    let Some(exporters) = EXPORTERS
        .get()
        .and_then(|slot| slot.lock().unwrap_or_else(|p| p.into_inner()).take())
    else {
        return;
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("warning: telemetry: the last spans and metrics were not sent: {e}");
            return;
        }
    };
    *exporters.runtime.lock().unwrap_or_else(|p| p.into_inner()) = runtime.handle().clone();
    // The SDK's threads wait for the sends, which run on the runtime's own worker.
    let (done, wait) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let failed: Vec<String> = [
            exporters.traces.shutdown().err(),
            exporters.meters.shutdown().err(),
            exporters.logs.and_then(|logs| logs.shutdown().err()),
        ]
        .into_iter()
        .flatten()
        .map(|e| e.to_string())
        .collect();
        let _ = done.send(failed);
    });
    match wait.recv_timeout(FLUSH_LIMIT) {
        Ok(failed) if failed.is_empty() => {}
        Ok(failed) => eprintln!(
            "warning: telemetry: the last spans or metrics were not sent: {}",
            failed.join("; ")
        ),
        Err(_) => eprintln!(
            "warning: telemetry: the collector did not take the last spans and metrics within {} s",
            FLUSH_LIMIT.as_secs()
        ),
    }
    runtime.shutdown_background();
}

/// The longest [`shutdown`] waits for the collector.
const FLUSH_LIMIT: Duration = Duration::from_secs(10);

/// `service.instance.id`: this host's name and this process's id.
fn instance_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    format!("{host}:{}", std::process::id())
}

/// The exporters' HTTP client: toolshed's own, reaching the collector's host only, with
/// each request run on the async runtime (the SDK's threads have none).
struct Sender {
    net: Arc<NetClient>,
    policy: NetPolicy,
    timeout: Duration,
    runtime: Arc<Mutex<tokio::runtime::Handle>>,
}

impl std::fmt::Debug for Sender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sender")
            .field("policy", &self.policy)
            .finish()
    }
}

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for Sender {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let request = HttpRequest {
            method: parts.method.to_string(),
            url: parts.uri.to_string(),
            headers: parts
                .headers
                .iter()
                .filter_map(|(k, v)| Some((k.to_string(), v.to_str().ok()?.to_string())))
                .collect(),
            body: Some(body.to_vec()),
            timeout: self.timeout,
            max_response_bytes: MAX_ANSWER_BYTES,
        };
        let net = self.net.clone();
        let policy = self.policy.clone();
        let runtime = self
            .runtime
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let answer = runtime
            .spawn(async move { net.send(request, &policy, &CancellationToken::new()).await })
            .await
            .map_err(|e| -> HttpError { Box::new(e) })?
            .map_err(|e| -> HttpError { e.to_string().into() })?;
        let mut response = Response::builder().status(answer.status);
        for (name, value) in answer.headers {
            response = response.header(name, value);
        }
        Ok(response.body(Bytes::from(answer.body))?)
    }
}

#[cfg(test)]
mod tests {
    use super::endpoint;

    #[test]
    fn endpoints_are_checked_and_get_the_signal_paths() {
        let e = endpoint("http://127.0.0.1:4318").unwrap();
        assert_eq!(e.traces, "http://127.0.0.1:4318/v1/traces");
        assert_eq!(e.metrics, "http://127.0.0.1:4318/v1/metrics");
        assert_eq!(e.logs, "http://127.0.0.1:4318/v1/logs");
        assert_eq!(e.host, "127.0.0.1:4318");
        let e = endpoint("https://otel.example/collector/").unwrap();
        assert_eq!(e.traces, "https://otel.example/collector/v1/traces");
        assert_eq!(e.host, "otel.example:443");
        for bad in [
            "127.0.0.1:4318",
            "ftp://h/",
            "http://u:p@h/",
            "http://h/?q=1",
            "nonsense",
        ] {
            let e = endpoint(bad).unwrap_err();
            assert!(e.contains("otlp_endpoint") && e.contains(bad), "{e}");
        }
    }
}
