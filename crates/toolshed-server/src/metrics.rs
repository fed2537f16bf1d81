//! `GET /metrics`: Prometheus text. Call counts, durations (a histogram per tool) and calls
//! per owner come from the host's events; live sessions and processes from the gauges
//! plugins register; approvals waiting and the process's memory are read when scraped.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use toolshed_host::{Event, Host};

use crate::api::AppState;

/// The upper bounds of the call duration histogram's buckets, in seconds.
const BUCKETS: [f64; 13] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// One tool's call durations: a histogram.
#[derive(Debug, Default)]
struct Durations {
    /// Calls at or under each bound of [`BUCKETS`] (cumulative when written).
    buckets: [u64; BUCKETS.len()],
    sum: f64,
    count: u64,
}

#[derive(Debug, Default)]
struct Calls {
    /// (tool, outcome) → count.
    counts: BTreeMap<(String, String), u64>,
    /// tool → its durations.
    durations: BTreeMap<String, Durations>,
    /// owner (sub-owners counted with their owner) → calls.
    owners: BTreeMap<String, u64>,
    /// Events the counter missed by falling behind.
    missed: u64,
}

/// Call counters fed by the host's event bus.
#[derive(Debug, Default, Clone)]
pub(crate) struct Metrics(Arc<Mutex<Calls>>);

/// The most distinct tools counted (names come from the registry, but a plugin could have
/// many).
const MAX_SERIES: usize = 2000;

/// The most distinct owners counted; later ones are not.
const MAX_OWNERS: usize = 500;

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
                        owner,
                        ..
                    }) => counter.count(
                        &known(&catalog, tool),
                        if is_error { "tool_error" } else { "ok" },
                        duration_ms,
                        &owner,
                    ),
                    Ok(Event::CallFailed {
                        tool,
                        duration_ms,
                        kind,
                        owner,
                        ..
                    }) => counter.count(&known(&catalog, tool), &kind, duration_ms, &owner),
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

    fn count(&self, tool: &str, outcome: &str, duration_ms: u64, owner: &str) {
        let mut calls = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let owner = owner.split('/').next().unwrap_or_default();
        if calls.owners.len() < MAX_OWNERS || calls.owners.contains_key(owner) {
            *calls.owners.entry(owner.to_string()).or_default() += 1;
        }
        if calls.durations.len() >= MAX_SERIES && !calls.durations.contains_key(tool) {
            return;
        }
        *calls
            .counts
            .entry((tool.to_string(), outcome.to_string()))
            .or_default() += 1;
        let seconds = duration_ms as f64 / 1000.0;
        let entry = calls.durations.entry(tool.to_string()).or_default();
        if let Some(at) = BUCKETS.iter().position(|bound| seconds <= *bound) {
            entry.buckets[at] += 1;
        }
        entry.sum += seconds;
        entry.count += 1;
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
        let _ = writeln!(out, "# TYPE toolshed_call_duration_seconds histogram");
        for (tool, durations) in &calls.durations {
            let tool = label(tool);
            let mut below = 0;
            for (bound, n) in BUCKETS.iter().zip(durations.buckets) {
                below += n;
                let _ = writeln!(
                    out,
                    "toolshed_call_duration_seconds_bucket{{tool=\"{tool}\",le=\"{bound}\"}} {below}"
                );
            }
            let _ = writeln!(
                out,
                "toolshed_call_duration_seconds_bucket{{tool=\"{tool}\",le=\"+Inf\"}} {}",
                durations.count
            );
            let _ = writeln!(
                out,
                "toolshed_call_duration_seconds_sum{{tool=\"{tool}\"}} {}",
                durations.sum
            );
            let _ = writeln!(
                out,
                "toolshed_call_duration_seconds_count{{tool=\"{tool}\"}} {}",
                durations.count
            );
        }
        let _ = writeln!(
            out,
            "# HELP toolshed_owner_calls_total Tool calls by owner (sub-owners counted with their owner; at most {MAX_OWNERS} owners)."
        );
        let _ = writeln!(out, "# TYPE toolshed_owner_calls_total counter");
        for (owner, n) in &calls.owners {
            let _ = writeln!(
                out,
                "toolshed_owner_calls_total{{owner=\"{}\"}} {n}",
                label(owner)
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
    let sample = crate::stats::Sample::now(&state).await;
    let _ = writeln!(
        out,
        "# HELP toolshed_approvals_waiting Calls waiting for a person's approval."
    );
    let _ = writeln!(out, "# TYPE toolshed_approvals_waiting gauge");
    let _ = writeln!(out, "toolshed_approvals_waiting {}", sample.approvals);
    let _ = writeln!(
        out,
        "# HELP process_resident_memory_bytes Resident memory of the toolshed process."
    );
    let _ = writeln!(out, "# TYPE process_resident_memory_bytes gauge");
    let _ = writeln!(out, "process_resident_memory_bytes {}", sample.rss_bytes);
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
