//! `GET /metrics`: Prometheus text. Call counts and durations come from the host's events;
//! live sessions and processes from the gauges plugins register.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use toolshed_host::{Event, Host};

use crate::api::AppState;

#[derive(Debug, Default)]
struct Calls {
    /// (tool, outcome) → count.
    counts: BTreeMap<(String, String), u64>,
    /// tool → (sum of seconds, count).
    durations: BTreeMap<String, (f64, u64)>,
    /// Events the counter missed by falling behind.
    missed: u64,
}

/// Call counters fed by the host's event bus.
#[derive(Debug, Default, Clone)]
pub(crate) struct Metrics(Arc<Mutex<Calls>>);

/// The most distinct tools counted (names come from the registry, but a plugin could have
/// many).
const MAX_SERIES: usize = 2000;

impl Metrics {
    /// Starts counting the host's calls; the task ends with `stop`.
    pub(crate) fn start(host: &Host, stop: tokio_util::sync::CancellationToken) -> Self {
        let metrics = Self::default();
        let mut events = host.events().subscribe();
        let counter = metrics.clone();
        let catalog = host.catalog().detached();
        tokio::spawn(async move {
            loop {
                let received = tokio::select! {
                    () = stop.cancelled() => return,
                    received = events.recv() => received,
                };
                match received {
                    Ok(Event::CallFinished {
                        tool,
                        duration_ms,
                        is_error,
                        ..
                    }) => counter.count(
                        &known(&catalog, tool),
                        if is_error { "tool_error" } else { "ok" },
                        duration_ms,
                    ),
                    Ok(Event::CallFailed {
                        tool,
                        duration_ms,
                        kind,
                        ..
                    }) => counter.count(&known(&catalog, tool), &kind, duration_ms),
                    Ok(_) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                        counter.0.lock().unwrap_or_else(|p| p.into_inner()).missed += n;
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
            }
        });
        metrics
    }

    fn count(&self, tool: &str, outcome: &str, duration_ms: u64) {
        let mut calls = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if calls.durations.len() >= MAX_SERIES && !calls.durations.contains_key(tool) {
            return;
        }
        *calls
            .counts
            .entry((tool.to_string(), outcome.to_string()))
            .or_default() += 1;
        let entry = calls.durations.entry(tool.to_string()).or_default();
        entry.0 += duration_ms as f64 / 1000.0;
        entry.1 += 1;
    }
}

/// A registered tool's name, or `(unknown)` for names a caller made up, so they cannot
/// crowd the real tools out of the series.
fn known(catalog: &toolshed_host::Catalog<'_>, tool: String) -> String {
    if catalog.lookup(&tool).is_some() {
        tool
    } else {
        "(unknown)".to_string()
    }
}

fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// `GET /metrics`.
pub(crate) async fn metrics(
    State(state): State<AppState>,
    metrics: axum::Extension<Metrics>,
) -> Response {
    let mut out = String::new();
    {
        let calls = metrics.0.0.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(
            out,
            "# HELP toolshed_calls_total Tool calls by tool and outcome (ok, tool_error, or the error kind)."
        );
        let _ = writeln!(out, "# TYPE toolshed_calls_total counter");
        for ((tool, outcome), n) in &calls.counts {
            let _ = writeln!(
                out,
                "toolshed_calls_total{{tool=\"{}\",outcome=\"{}\"}} {n}",
                label(tool),
                label(outcome)
            );
        }
        let _ = writeln!(
            out,
            "# HELP toolshed_call_duration_seconds Wall time of tool calls."
        );
        let _ = writeln!(out, "# TYPE toolshed_call_duration_seconds summary");
        for (tool, (sum, count)) in &calls.durations {
            let _ = writeln!(
                out,
                "toolshed_call_duration_seconds_sum{{tool=\"{}\"}} {sum}",
                label(tool)
            );
            let _ = writeln!(
                out,
                "toolshed_call_duration_seconds_count{{tool=\"{}\"}} {count}",
                label(tool)
            );
        }
        let _ = writeln!(
            out,
            "# HELP toolshed_metrics_missed_events_total Call events the counters missed by falling behind."
        );
        let _ = writeln!(out, "# TYPE toolshed_metrics_missed_events_total counter");
        let _ = writeln!(out, "toolshed_metrics_missed_events_total {}", calls.missed);
    }
    let _ = writeln!(out, "# HELP toolshed_jobs Jobs kept, by state.");
    let _ = writeln!(out, "# TYPE toolshed_jobs gauge");
    for (job_state, n) in state.jobs.counts() {
        let _ = writeln!(out, "toolshed_jobs{{state=\"{job_state}\"}} {n}");
    }
    for (name, help, value) in state.host.services().gauges.read_all() {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} gauge");
        let _ = writeln!(out, "{name} {value}");
    }
    let _ = writeln!(
        out,
        "# HELP toolshed_uptime_seconds Seconds since the server started."
    );
    let _ = writeln!(out, "# TYPE toolshed_uptime_seconds gauge");
    let _ = writeln!(
        out,
        "toolshed_uptime_seconds {}",
        state.started.elapsed().as_secs_f64()
    );
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        out,
    )
        .into_response()
}
