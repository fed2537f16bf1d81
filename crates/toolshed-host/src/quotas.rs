//! Quotas: how many calls of which tools an owner may make per minute, and run at once.
//!
//! ```toml
//! [[quotas]]
//! name = "commands"
//! tools = ["group:exec"]        # review-rule forms; left out: every tool
//! calls_per_minute = 30
//! concurrent = 4
//! ```
//!
//! Counted per owner — a sub-owner (`alice/task-7`) counts as its owner (`alice`), so a
//! token cannot dodge a quota by naming new sub-owners — over a sliding minute. A call over
//! a quota is refused with `rate_limited` and the seconds after which a retry can succeed.
//! Counts live in the process: a restart starts them afresh.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use toolshed_core::{OwnerId, ToolError};

use crate::review::{Matcher, RuleError, Subject};

/// The window `calls_per_minute` counts over.
const WINDOW: Duration = Duration::from_secs(60);

/// The most (quota, owner) counters kept; idle ones are dropped first.
const MAX_COUNTERS: usize = 10_000;

/// One `[[quotas]]` entry.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct QuotaConfig {
    /// A name for messages (else `quotas[N]`).
    pub name: Option<String>,
    /// Which tools (review-rule forms); empty: every tool.
    pub tools: Vec<String>,
    /// The most calls per owner in any minute.
    pub calls_per_minute: Option<u32>,
    /// The most calls per owner running at once.
    pub concurrent: Option<u32>,
}

struct Compiled {
    label: String,
    tools: Vec<Matcher>,
    per_minute: Option<u32>,
    concurrent: Option<u32>,
}

#[derive(Debug, Default)]
struct Counter {
    calls: VecDeque<Instant>,
    running: u32,
}

type Counters = HashMap<(usize, String), Counter>;

/// The quotas, compiled, with their counters.
#[derive(Default)]
pub struct Quotas {
    rules: Vec<Compiled>,
    counters: Arc<Mutex<Counters>>,
}

impl std::fmt::Debug for Quotas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Quotas")
            .field("rules", &self.rules.len())
            .finish_non_exhaustive()
    }
}

/// Held while a call runs: counts it as running for its quotas.
#[derive(Debug)]
pub struct QuotaGuard {
    keys: Vec<(usize, String)>,
    counters: Arc<Mutex<Counters>>,
}

impl Drop for QuotaGuard {
    fn drop(&mut self) {
        if self.keys.is_empty() {
            return;
        }
        let mut counters = self.counters.lock().unwrap_or_else(|e| e.into_inner());
        for key in &self.keys {
            if let Some(c) = counters.get_mut(key) {
                c.running = c.running.saturating_sub(1);
            }
        }
    }
}

impl Quotas {
    /// Compiles `[[quotas]]`; an error names the entry.
    pub fn compile(config: &[QuotaConfig]) -> Result<Self, RuleError> {
        let mut rules = Vec::new();
        for (i, quota) in config.iter().enumerate() {
            let source = format!("quotas[{i}]");
            let error = |pattern: &str, message: String| RuleError {
                source_name: source.clone(),
                pattern: pattern.to_string(),
                message,
            };
            if quota.calls_per_minute.is_none() && quota.concurrent.is_none() {
                return Err(error(
                    "quota",
                    "limits nothing; give calls_per_minute, concurrent or both".into(),
                ));
            }
            if quota.calls_per_minute == Some(0) || quota.concurrent == Some(0) {
                return Err(error(
                    "quota",
                    "a limit of 0 refuses every call; deny the tools with a policy rule instead"
                        .into(),
                ));
            }
            let tools = quota
                .tools
                .iter()
                .map(|p| Matcher::parse(p).map_err(|m| error(p, m)))
                .collect::<Result<_, _>>()?;
            rules.push(Compiled {
                label: quota.name.clone().unwrap_or(source.clone()),
                tools,
                per_minute: quota.calls_per_minute,
                concurrent: quota.concurrent,
            });
        }
        Ok(Self {
            rules,
            counters: Arc::default(),
        })
    }

    /// Counts a call of `subject` by `owner`, or refuses it when a quota is used up. The
    /// guard keeps the call counted as running until it is dropped.
    pub fn acquire(&self, subject: &Subject<'_>, owner: &OwnerId) -> Result<QuotaGuard, ToolError> {
        let matching: Vec<usize> = self
            .rules
            .iter()
            .enumerate()
            .filter(|(_, r)| r.tools.is_empty() || r.tools.iter().any(|m| m.matches(subject)))
            .map(|(i, _)| i)
            .collect();
        let guard = QuotaGuard {
            keys: Vec::new(),
            counters: self.counters.clone(),
        };
        if matching.is_empty() {
            return Ok(guard);
        }
        let base = owner.0.split('/').next().unwrap_or_default().to_string();
        let now = Instant::now();
        let mut counters = self.counters.lock().unwrap_or_else(|e| e.into_inner());
        if counters.len() > MAX_COUNTERS {
            counters
                .retain(|_, c| c.running > 0 || c.calls.back().is_some_and(|t| now - *t < WINDOW));
        }
        // Check every matching quota before counting in any.
        for &i in &matching {
            let rule = &self.rules[i];
            let counter = counters.entry((i, base.clone())).or_default();
            while counter.calls.front().is_some_and(|t| now - *t >= WINDOW) {
                counter.calls.pop_front();
            }
            if let Some(limit) = rule.per_minute
                && counter.calls.len() >= limit as usize
            {
                let oldest = counter.calls.front().copied().unwrap_or(now);
                let retry_after = (oldest + WINDOW).saturating_duration_since(now);
                return Err(ToolError::RateLimited {
                    message: format!(
                        "quota `{}` allows {limit} calls of `{}`'s kind per minute for `{base}`, \
                         and they were made",
                        rule.label, subject.spec.name
                    ),
                    retry_after: retry_after.max(Duration::from_secs(1)),
                });
            }
            if let Some(limit) = rule.concurrent
                && counter.running >= limit
            {
                return Err(ToolError::RateLimited {
                    message: format!(
                        "quota `{}` allows {limit} such calls at once for `{base}`, and that \
                         many are running",
                        rule.label
                    ),
                    retry_after: Duration::from_secs(1),
                });
            }
        }
        let mut guard = guard;
        for i in matching {
            let counter = counters.entry((i, base.clone())).or_default();
            counter.calls.push_back(now);
            counter.running += 1;
            guard.keys.push((i, base.clone()));
        }
        Ok(guard)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use toolshed_core::{ErrorKind, ToolSpec};

    use super::*;

    #[test]
    fn the_sixth_call_in_a_minute_is_refused_with_a_retry_time_and_sub_owners_count_as_theirs() {
        let quotas = Quotas::compile(&[QuotaConfig {
            tools: vec!["group:exec".into()],
            calls_per_minute: Some(5),
            ..QuotaConfig::default()
        }])
        .unwrap();
        let exec = ToolSpec::new("exec_command", "x").group("exec");
        let calc = ToolSpec::new("calculator", "x").group("util");
        let (alice, bob) = (OwnerId::new("alice"), OwnerId::new("bob"));
        for i in 0..5 {
            let owner = OwnerId::new(format!("alice/task-{i}"));
            drop(quotas.acquire(&Subject::new(&exec, "p"), &owner).unwrap());
        }
        let err = quotas
            .acquire(&Subject::new(&exec, "p"), &alice)
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::RateLimited);
        let secs = err.details()["retry_after"].as_u64().unwrap();
        assert!((1..=60).contains(&secs), "{secs}");
        assert!(err.to_string().contains("retry after"), "{err}");
        // Other tools and other owners are not counted.
        quotas.acquire(&Subject::new(&calc, "p"), &alice).unwrap();
        quotas.acquire(&Subject::new(&exec, "p"), &bob).unwrap();
    }

    #[test]
    fn concurrent_calls_are_counted_until_they_end() {
        let quotas = Quotas::compile(&[QuotaConfig {
            concurrent: Some(1),
            ..QuotaConfig::default()
        }])
        .unwrap();
        let spec = ToolSpec::new("t", "x");
        let owner = OwnerId::new("a");
        let running = quotas.acquire(&Subject::new(&spec, "p"), &owner).unwrap();
        assert!(quotas.acquire(&Subject::new(&spec, "p"), &owner).is_err());
        drop(running);
        quotas.acquire(&Subject::new(&spec, "p"), &owner).unwrap();
        assert!(Quotas::compile(&[QuotaConfig::default()]).is_err());
    }
}
