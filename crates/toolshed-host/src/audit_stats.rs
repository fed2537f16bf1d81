//! The audit log summed up for pictures (the dashboard's charts, `GET /api/v1/stats`):
//! calls per time bucket by outcome, latency percentiles of the busiest tools over time,
//! the slowest and the most failing tools, and the busiest owners — over a recent window,
//! from at most [`MAX_STATS_ROWS`] of its newest calls.

use std::collections::{BTreeMap, HashMap};

use crate::store::db::args;
use crate::store::{StateStore, StoreError};

/// The most audit rows one summary reads (the newest of its window).
pub const MAX_STATS_ROWS: usize = 100_000;

/// How many tools, owners and series a summary names at most.
pub const STATS_TOP: usize = 8;

/// Calls of one time bucket, by outcome.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct CallBucket {
    /// The bucket's start, in milliseconds since the Unix epoch.
    pub start_ms: i64,
    /// Calls that succeeded.
    pub ok: u64,
    /// Calls whose tool ran and reported an error.
    pub tool_error: u64,
    /// Calls refused or failed before or while running (denied, invalid, timed out).
    pub error: u64,
}

/// Latency percentiles, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Percentiles {
    /// The median.
    pub p50: u64,
    /// The 95th percentile.
    pub p95: u64,
    /// The 99th percentile.
    pub p99: u64,
}

/// One tool's latency over time: a point per bucket it was called in.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LatencySeries {
    /// The tool.
    pub tool: String,
    /// (bucket start, percentiles of its calls in that bucket).
    pub points: Vec<(i64, Percentiles)>,
}

/// One tool over the whole window.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ToolSummary {
    /// The tool.
    pub tool: String,
    /// Its calls.
    pub calls: u64,
    /// Those that did not end `ok`.
    pub failures: u64,
    /// Its latency.
    pub latency: Percentiles,
}

/// What the audit log says about a recent window.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AuditStats {
    /// The window's start (milliseconds since the Unix epoch).
    pub since_ms: i64,
    /// The width of a bucket, in milliseconds.
    pub bucket_ms: i64,
    /// Every bucket of the window, oldest first (empty ones too).
    pub calls: Vec<CallBucket>,
    /// The busiest tools' latency per bucket.
    pub latency: Vec<LatencySeries>,
    /// The tools with the highest 95th percentile (at least 3 calls), slowest first.
    pub slowest: Vec<ToolSummary>,
    /// The tools with the most failed calls, most first.
    pub failing: Vec<ToolSummary>,
    /// The owners (sub-owners counted with their owner) with the most calls, most first.
    pub owners: Vec<(String, u64)>,
    /// Whether the window held more calls than were read ([`MAX_STATS_ROWS`]): the oldest
    /// buckets then count fewer than happened.
    pub truncated: bool,
}

/// The `q`-quantile of sorted `values` (nearest rank).
fn quantile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn percentiles(values: &mut [u64]) -> Percentiles {
    values.sort_unstable();
    Percentiles {
        p50: quantile(values, 0.50),
        p95: quantile(values, 0.95),
        p99: quantile(values, 0.99),
    }
}

/// One audit row as a summary reads it.
struct Call {
    ts_ms: i64,
    owner: String,
    tool: String,
    outcome: String,
    duration_ms: u64,
}

impl StateStore {
    /// The audit log from `since_ms` to `now_ms`, in buckets of `bucket_ms` (at least one
    /// second; at most 1000 buckets).
    pub fn audit_stats(
        &self,
        since_ms: i64,
        now_ms: i64,
        bucket_ms: i64,
    ) -> Result<AuditStats, StoreError> {
        let bucket_ms = bucket_ms.max(1000).max((now_ms - since_ms) / 1000 + 1);
        self.flush_audit();
        let limit = i64::try_from(MAX_STATS_ROWS).unwrap_or(i64::MAX);
        let rows = self.db(|db| {
            db.query(
                "SELECT ts_ms, owner, tool, outcome, duration_ms FROM audit
                 WHERE ts_ms >= ?1 ORDER BY id DESC LIMIT ?2",
                args![since_ms, limit],
            )?
            .iter()
            .map(|row| {
                Ok(Call {
                    ts_ms: row.int(0)?,
                    owner: row.text(1)?,
                    tool: row.text(2)?,
                    outcome: row.text(3)?,
                    duration_ms: u64::try_from(row.int(4)?).unwrap_or(0),
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()
        })?;
        Ok(summarize(&rows, since_ms, now_ms, bucket_ms))
    }
}

fn summarize(rows: &[Call], since_ms: i64, now_ms: i64, bucket_ms: i64) -> AuditStats {
    let start = since_ms - since_ms.rem_euclid(bucket_ms);
    let count = usize::try_from((now_ms - start) / bucket_ms + 1).unwrap_or(1);
    let mut calls: Vec<CallBucket> = (0..count)
        .map(|i| CallBucket {
            start_ms: start + i as i64 * bucket_ms,
            ..CallBucket::default()
        })
        .collect();
    let mut per_tool: HashMap<&str, (Vec<u64>, u64)> = HashMap::new();
    let mut per_tool_bucket: HashMap<(&str, usize), Vec<u64>> = HashMap::new();
    let mut owners: HashMap<&str, u64> = HashMap::new();
    for call in rows {
        let Ok(at) = usize::try_from((call.ts_ms - start) / bucket_ms) else {
            continue;
        };
        let Some(bucket) = calls.get_mut(at) else {
            continue;
        };
        match call.outcome.as_str() {
            "ok" => bucket.ok += 1,
            "tool_error" => bucket.tool_error += 1,
            _ => bucket.error += 1,
        }
        let tool = per_tool.entry(&call.tool).or_default();
        tool.0.push(call.duration_ms);
        tool.1 += u64::from(call.outcome != "ok");
        per_tool_bucket
            .entry((&call.tool, at))
            .or_default()
            .push(call.duration_ms);
        let owner = call.owner.split('/').next().unwrap_or_default();
        *owners.entry(owner).or_default() += 1;
    }
    let mut summaries: Vec<ToolSummary> = per_tool
        .into_iter()
        .map(|(tool, (mut durations, failures))| ToolSummary {
            tool: tool.to_string(),
            calls: durations.len() as u64,
            failures,
            latency: percentiles(&mut durations),
        })
        .collect();
    // The busiest tools' latency over time.
    summaries.sort_by(|a, b| b.calls.cmp(&a.calls).then(a.tool.cmp(&b.tool)));
    let latency = summaries
        .iter()
        .take(STATS_TOP.min(5))
        .map(|summary| {
            let mut points: BTreeMap<usize, Percentiles> = BTreeMap::new();
            for ((tool, at), durations) in &mut per_tool_bucket {
                if *tool == summary.tool {
                    points.insert(*at, percentiles(durations));
                }
            }
            LatencySeries {
                tool: summary.tool.clone(),
                points: points
                    .into_iter()
                    .map(|(at, p)| (calls[at].start_ms, p))
                    .collect(),
            }
        })
        .collect();
    let mut slowest: Vec<ToolSummary> =
        summaries.iter().filter(|s| s.calls >= 3).cloned().collect();
    slowest.sort_by(|a, b| b.latency.p95.cmp(&a.latency.p95).then(a.tool.cmp(&b.tool)));
    slowest.truncate(STATS_TOP);
    let mut failing: Vec<ToolSummary> = summaries.into_iter().filter(|s| s.failures > 0).collect();
    failing.sort_by(|a, b| b.failures.cmp(&a.failures).then(a.tool.cmp(&b.tool)));
    failing.truncate(STATS_TOP);
    let mut owners: Vec<(String, u64)> = owners
        .into_iter()
        .map(|(owner, n)| (owner.to_string(), n))
        .collect();
    owners.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    owners.truncate(STATS_TOP);
    AuditStats {
        since_ms,
        bucket_ms,
        calls,
        latency,
        slowest,
        failing,
        owners,
        truncated: rows.len() >= MAX_STATS_ROWS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(ts_ms: i64, owner: &str, tool: &str, outcome: &str, duration_ms: u64) -> Call {
        Call {
            ts_ms,
            owner: owner.into(),
            tool: tool.into(),
            outcome: outcome.into(),
            duration_ms,
        }
    }

    #[test]
    fn buckets_percentiles_and_the_top_lists_add_up() {
        let mut rows = Vec::new();
        // 100 fast reads by alice's tasks in the first minute, one slow failing grep by bob
        // in the third, three timed-out fetches in the second.
        for i in 0..100 {
            rows.push(call(
                60_000 + i,
                "alice/task-1",
                "workspace_read",
                "ok",
                1 + i as u64 % 10,
            ));
        }
        rows.push(call(180_500, "bob", "workspace_grep", "tool_error", 900));
        for i in 0..3 {
            rows.push(call(120_000 + i, "bob", "web_fetch", "error", 5000));
        }
        let stats = summarize(&rows, 60_000, 200_000, 60_000);
        assert_eq!(stats.calls.len(), 3);
        assert_eq!(
            stats
                .calls
                .iter()
                .map(|b| (b.ok, b.tool_error, b.error))
                .collect::<Vec<_>>(),
            [(100, 0, 0), (0, 0, 3), (0, 1, 0)]
        );
        let read = &stats.latency[0];
        assert_eq!(read.tool, "workspace_read");
        assert_eq!(
            read.points[0].1,
            Percentiles {
                p50: 5,
                p95: 10,
                p99: 10
            }
        );
        assert_eq!(stats.slowest[0].tool, "web_fetch");
        assert_eq!(stats.slowest[0].latency.p95, 5000);
        // Fewer than three calls: not ranked as slow.
        assert!(stats.slowest.iter().all(|s| s.tool != "workspace_grep"));
        assert_eq!(
            stats
                .failing
                .iter()
                .map(|s| (s.tool.as_str(), s.failures))
                .collect::<Vec<_>>(),
            [("web_fetch", 3), ("workspace_grep", 1)]
        );
        assert_eq!(
            stats.owners,
            [("alice".to_string(), 100), ("bob".to_string(), 4)]
        );
        assert!(!stats.truncated);
    }

    #[test]
    fn an_empty_window_has_empty_buckets_and_no_lists() {
        let stats = summarize(&[], 0, 3_600_000, 60_000);
        assert_eq!(stats.calls.len(), 61);
        assert!(
            stats
                .calls
                .iter()
                .all(|b| b.ok + b.tool_error + b.error == 0)
        );
        assert!(stats.latency.is_empty() && stats.slowest.is_empty() && stats.owners.is_empty());
    }
}
