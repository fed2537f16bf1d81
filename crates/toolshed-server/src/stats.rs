//! `GET /stats`: what the dashboard draws. The audit log summed up over a recent window
//! (calls per bucket by outcome, latency percentiles of the busiest tools, the slowest and
//! most failing tools, the busiest owners), and the server's own samples taken every
//! [`SAMPLE_EVERY`]: approvals waiting, processes and command sessions running, resident
//! memory.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Query, State};
use axum::{Extension, Json};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::{AppState, query};
use crate::error::ApiError;

/// How often the server samples its gauges.
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_secs(15);

/// The most samples kept: a day at one per [`SAMPLE_EVERY`].
const MAX_SAMPLES: usize = 24 * 60 * 4;

/// The longest window `GET /stats` sums up, in minutes (a day).
const MAX_MINUTES: i64 = 24 * 60;

/// The server's gauges at one moment.
#[derive(Debug, Clone, Copy, Default, Serialize, JsonSchema)]
pub(crate) struct Sample {
    /// When, in milliseconds since the Unix epoch.
    pub t_ms: i64,
    /// Calls waiting for a person's approval.
    pub approvals: u64,
    /// Background processes running.
    pub processes: u64,
    /// Command sessions running.
    pub sessions: u64,
    /// The server process's resident memory, in bytes.
    pub rss_bytes: u64,
}

impl Sample {
    /// The gauges now.
    pub(crate) async fn now(state: &AppState) -> Self {
        let approvals = state.host.approvals().detached();
        let approvals = tokio::task::spawn_blocking(move || {
            approvals.list(false, 1000).map(|l| l.len()).unwrap_or(0)
        })
        .await
        .unwrap_or(0);
        let gauge = |name: &str| {
            state
                .host
                .services()
                .gauges
                .read_all()
                .into_iter()
                .find(|(n, _, _)| n == name)
                .map_or(0, |(_, _, v)| v as u64)
        };
        Self {
            t_ms: toolshed_host::now_ms(),
            approvals: approvals as u64,
            processes: gauge("toolshed_live_processes"),
            sessions: gauge("toolshed_live_sessions"),
            rss_bytes: resident_bytes(),
        }
    }
}

/// This process's resident memory (`VmRSS` of /proc/self/status), 0 where unknown.
fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}

/// The samples taken, oldest first.
#[derive(Debug, Clone, Default)]
pub(crate) struct Samples(Arc<Mutex<VecDeque<Sample>>>);

impl Samples {
    /// Samples `state` every [`SAMPLE_EVERY`] until `stop`.
    pub(crate) fn start(state: AppState, stop: tokio_util::sync::CancellationToken) -> Self {
        let samples = Self::default();
        let kept = samples.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(SAMPLE_EVERY);
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    _ = tick.tick() => {}
                }
                let sample = Sample::now(&state).await;
                let mut all = kept.0.lock().unwrap_or_else(|p| p.into_inner());
                if all.len() >= MAX_SAMPLES {
                    all.pop_front();
                }
                all.push_back(sample);
            }
        });
        samples
    }

    fn since(&self, t_ms: i64) -> Vec<Sample> {
        let all = self.0.lock().unwrap_or_else(|p| p.into_inner());
        all.iter().filter(|s| s.t_ms >= t_ms).copied().collect()
    }
}

/// What `GET /stats` sums up.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StatsQuery {
    /// The window: the last this many minutes (1 to 1440; default 60).
    #[schemars(range(min = 1, max = 1440))]
    pub minutes: Option<i64>,
}

/// The numbers the dashboard draws.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct Stats {
    /// The audit log over the window.
    #[schemars(with = "serde_json::Value")]
    pub audit: toolshed_host::AuditStats,
    /// The server's samples over the window, oldest first.
    pub samples: Vec<Sample>,
    /// The gauges now.
    pub now: Sample,
}

/// `GET /stats`.
pub(crate) async fn stats(
    State(state): State<AppState>,
    samples: Extension<Samples>,
    params: Result<Query<StatsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Stats>, ApiError> {
    let params = query(params)?;
    let minutes = params.minutes.unwrap_or(60);
    if !(1..=MAX_MINUTES).contains(&minutes) {
        return Err(ApiError::bad_request(format!(
            "minutes={minutes} is out of range: give 1 to {MAX_MINUTES}"
        )));
    }
    let now_ms = toolshed_host::now_ms();
    let since_ms = now_ms - minutes * 60_000;
    // A point a minute for an hour; wider buckets for longer windows (at most ~120).
    let bucket_ms = (minutes * 60_000 / 120).max(60_000);
    let audit = state.host.audit().detached();
    let audit = tokio::task::spawn_blocking(move || audit.stats(since_ms, now_ms, bucket_ms))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))??;
    Ok(Json(Stats {
        audit,
        samples: samples.since(since_ms),
        now: Sample::now(&state).await,
    }))
}
