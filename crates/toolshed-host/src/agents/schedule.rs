//! `schedule_create`, `schedule_list`, `schedule_delete`, and the loop that runs what is
//! due ([`run_schedules`]).
//!
//! A schedule runs a tool call (or a workflow, through `workflow_run`) at a time or on a
//! cron expression, as the owner who made it and with the profile it called with, through
//! the pipeline; each run is a job (its result kept and announced as job events). The row
//! of a schedule holds its next due time; a run is claimed by moving that time on with a
//! conditional update, so that toolsheds sharing one database run a due time once. A due
//! time that passed before the toolshed finding it started running schedules was missed
//! (no toolshed ran then); it follows the schedule's `missed` policy: `skip` (the default)
//! or `run_once` — once, however many due times were missed.

use std::sync::{Arc, Weak};
use std::time::Duration;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolshed_core::{CallContext, OwnerId, ToolError, ToolOutput};
use toolshed_kit::args::parse;

use super::Shared;
use super::cron::When;
use super::spec::{Missed, Op, ScheduleCreateArgs, ScheduleDeleteArgs, ScheduleListArgs};
use crate::CallRequest;
use crate::store::db::args;
use crate::store::{StateStore, StoreError, now_ms};

/// What the schedules' loop needs of the host it runs in.
pub(crate) trait ScheduleHost: Send + Sync {
    /// The state store holding the schedules.
    fn store(&self) -> &Arc<StateStore>;

    /// The workspace this host serves ([`crate::Host::workspace_name`]): a schedule made
    /// by a token pinned to another is left to the host serving that one.
    fn workspace_name(&self) -> &str;

    /// Starts `request` as a job of its owner; the job's id.
    fn start_job(
        self: Arc<Self>,
        request: CallRequest,
    ) -> Result<String, Box<dyn std::error::Error + Send + Sync>>;
}

/// How often the loop looks for due schedules: a schedule added by a call (here or on
/// another toolshed of the database) is found within this; one indexed query each time.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// What a schedule runs and when, as stored (`schedules.spec`).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Spec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cron: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tz: Option<String>,
    tool: String,
    arguments: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    workflow: Option<String>,
    missed: Missed,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    profile: Option<String>,
    /// The narrowing of the call that made the schedule (its door's `--tools`, its token's
    /// tool scopes, the subagents it ran in): its runs are held to the same.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    narrowing: Vec<Narrowing>,
    /// The sandbox mode that call was narrowed to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sandbox: Option<String>,
    /// The agent token that call presented (its id): the schedule runs while it is live.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    credential: Option<String>,
}

/// One rule list of a schedule maker's narrowing, as kept.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Narrowing {
    source: String,
    rules: crate::review::ReviewRules,
}

impl Spec {
    fn when(&self) -> Result<When, super::cron::CronError> {
        When::parse(self.at.as_deref(), self.cron.as_deref(), self.tz.as_deref())
    }
}

fn stored(e: StoreError) -> ToolError {
    ToolError::Internal(format!("the state store failed: {e}"))
}

fn ts(ms: i64) -> Timestamp {
    Timestamp::from_millisecond(ms).unwrap_or(Timestamp::UNIX_EPOCH)
}

fn iso(ms: Option<i64>) -> Value {
    ms.map_or(Value::Null, |ms| json!(ts(ms).to_string()))
}

pub(super) async fn call(
    op: Op,
    shared: &Arc<Shared>,
    ctx: &CallContext,
    args: Value,
) -> Result<ToolOutput, ToolError> {
    match op {
        Op::ScheduleCreate => create(shared, ctx, parse(args)?).await,
        Op::ScheduleList => {
            let _: ScheduleListArgs = parse(args)?;
            let shared = shared.clone();
            let owner = ctx.owner.0.clone();
            tokio::task::spawn_blocking(move || list(&shared.store, &owner))
                .await
                .map_err(|e| ToolError::Internal(e.to_string()))?
        }
        _ => {
            let args: ScheduleDeleteArgs = parse(args)?;
            let shared = shared.clone();
            let owner = ctx.owner.0.clone();
            tokio::task::spawn_blocking(move || delete(&shared.store, &owner, &args.id))
                .await
                .map_err(|e| ToolError::Internal(e.to_string()))?
        }
    }
}

async fn create(
    shared: &Shared,
    ctx: &CallContext,
    args: ScheduleCreateArgs,
) -> Result<ToolOutput, ToolError> {
    let name = args.name.clone();
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(ToolError::invalid_at(
            "/name",
            format!("name `{name}`: use letters, digits, `-`, `_` and `.` (e.g. `nightly-report`)"),
        ));
    }
    let when =
        When::parse(args.at.as_deref(), args.cron.as_deref(), args.tz.as_deref()).map_err(|e| {
            let at = if args.cron.is_some() { "/cron" } else { "/at" };
            ToolError::invalid_at(at, e.to_string())
        })?;
    let now = Timestamp::now();
    let min = Duration::from_secs(shared.config.min_schedule_interval_secs);
    if let Some(gap) = when.min_interval(now)
        && gap < min
    {
        return Err(ToolError::invalid_at(
            "/cron",
            format!(
                "cron `{}` fires every {} s; schedules run at least {} s apart \
                 ([orchestration] min_schedule_interval_secs)",
                args.cron.as_deref().unwrap_or_default(),
                gap.as_secs(),
                min.as_secs()
            ),
        ));
    }
    let Some(next) = when.next_after(now) else {
        return Err(ToolError::invalid_at(
            if args.cron.is_some() { "/cron" } else { "/at" },
            "this schedule would never run: the time is past, or the expression matches no \
             date in the next five years",
        ));
    };
    let (tool, arguments) = match (&args.tool, &args.workflow) {
        (Some(tool), None) => (
            tool.clone(),
            args.arguments.clone().unwrap_or_else(|| json!({})),
        ),
        (None, Some(workflow)) => (
            "workflow_run".to_string(),
            json!({"name": workflow, "inputs": args.arguments.clone().unwrap_or_else(|| json!({}))}),
        ),
        _ => {
            return Err(ToolError::invalid(
                "give exactly one of `tool` (with its `arguments`) or `workflow` (with its \
                 inputs in `arguments`)",
            ));
        }
    };
    // What would refuse the call when it runs refuses the schedule now: an unknown tool,
    // one this caller may not use, arguments that do not fit.
    let nested = super::lineage(ctx)?;
    let dispatcher = nested
        .dispatcher()
        .ok_or_else(|| ToolError::Internal("the host is shutting down".into()))?;
    let probe = nested.agent_request(ctx, ctx.owner.clone(), &tool, arguments.clone(), &[]);
    dispatcher
        .preflight(&probe)
        .map_err(|e| ToolError::invalid(format!("the scheduled call would be refused now: {e}")))?;
    let spec = Spec {
        at: args.at.clone(),
        cron: args.cron.clone(),
        tz: args.tz.clone(),
        tool,
        arguments,
        workflow: args.workflow.clone(),
        missed: args.missed.unwrap_or_default(),
        profile: nested.profile().map(str::to_string),
        narrowing: nested
            .narrowings()
            .iter()
            .map(|n| Narrowing {
                source: n.source.clone(),
                rules: n.rules(),
            })
            .collect(),
        sandbox: nested.sandbox().map(|m| m.as_str().to_string()),
        credential: nested.credential().map(str::to_string),
    };
    let text = serde_json::to_string(&spec).map_err(|e| ToolError::Internal(e.to_string()))?;
    let id = format!(
        "sch-{}",
        toolshed_core::secret::random_hex(6).map_err(|e| ToolError::Internal(e.to_string()))?
    );
    let owner = ctx.owner.0.clone();
    let max = shared.config.max_schedules_per_owner;
    let next_ms = next.as_millisecond();
    let store = shared.store.clone();
    let (id2, name2, owner2) = (id.clone(), name.clone(), owner.clone());
    let outcome = tokio::task::spawn_blocking(move || {
        store.tx(|db| {
            let root = owner2.split('/').next().unwrap_or(&owner2).to_string();
            let count = db
                .query_one(
                    "SELECT COUNT(*) FROM schedules
                     WHERE owner = ?1 OR substr(owner, 1, length(?2)) = ?2",
                    args![&root, format!("{root}/")],
                )?
                .int(0)?;
            if count as usize >= max {
                return Ok(Err(format!(
                    "`{root}` keeps {count} schedules, the most it may ([orchestration] \
                     max_schedules_per_owner = {max}); delete one with schedule_delete"
                )));
            }
            if db
                .query_opt(
                    "SELECT id FROM schedules WHERE owner = ?1 AND name = ?2",
                    args![&owner2, &name2],
                )?
                .is_some()
            {
                return Ok(Err(format!(
                    "you have a schedule named `{name2}` already; delete it first or choose \
                     another name"
                )));
            }
            db.execute(
                "INSERT INTO schedules (id, owner, name, spec, next_ms, runs, created_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, 0, ?6)",
                args![&id2, &owner2, &name2, text, next_ms, now_ms()],
            )?;
            Ok(Ok(()))
        })
    })
    .await
    .map_err(|e| ToolError::Internal(e.to_string()))?
    .map_err(stored)?;
    outcome.map_err(ToolError::invalid)?;
    Ok(ToolOutput::text_and_structured(
        format!("Schedule {id} (`{name}`) runs next at {next}."),
        json!({"id": id, "name": name, "next": next.to_string(), "owner": owner}),
    ))
}

fn list(store: &StateStore, owner: &str) -> Result<ToolOutput, ToolError> {
    let rows = store
        .db(|db| {
            db.query(
                "SELECT id, owner, name, spec, next_ms, runs, last_ms, last_job, last_outcome
                 FROM schedules WHERE owner = ?1 OR substr(owner, 1, length(?2)) = ?2
                 ORDER BY created_ms",
                args![owner, format!("{owner}/")],
            )
        })
        .map_err(stored)?;
    let mut out = Vec::new();
    let mut text = String::new();
    for row in &rows {
        let get = || -> Result<Value, StoreError> {
            let spec: Value = serde_json::from_str(&row.text(3)?).unwrap_or(Value::Null);
            Ok(json!({
                "id": row.text(0)?, "owner": row.text(1)?, "name": row.text(2)?,
                "at": spec["at"], "cron": spec["cron"], "tz": spec["tz"],
                "tool": spec["tool"], "workflow": spec["workflow"], "missed": spec["missed"],
                "next": iso(row.opt_int(4)?), "runs": row.int(5)?,
                "last": iso(row.opt_int(6)?), "last_job": row.opt_text(7)?,
                "last_outcome": row.opt_text(8)?,
            }))
        };
        let s = get().map_err(stored)?;
        text.push_str(&format!(
            "{} `{}`: {} — next {}, {} run(s){}\n",
            s["id"].as_str().unwrap_or_default(),
            s["name"].as_str().unwrap_or_default(),
            s["workflow"].as_str().map_or_else(
                || s["tool"].as_str().unwrap_or_default().to_string(),
                |w| format!("workflow {w}")
            ),
            s["next"].as_str().unwrap_or("never"),
            s["runs"],
            s["last_outcome"]
                .as_str()
                .map(|o| format!(", last: {o}"))
                .unwrap_or_default()
        ));
        out.push(s);
    }
    if out.is_empty() {
        text = "You have no schedules.".into();
    }
    Ok(ToolOutput::text_and_structured(
        text.trim_end().to_string(),
        json!({"schedules": out}),
    ))
}

fn delete(store: &StateStore, owner: &str, id: &str) -> Result<ToolOutput, ToolError> {
    let removed = store
        .db(|db| {
            db.execute(
                "DELETE FROM schedules WHERE (id = ?1 OR name = ?1)
                     AND (owner = ?2 OR substr(owner, 1, length(?3)) = ?3)",
                args![id, owner, format!("{owner}/")],
            )
        })
        .map_err(stored)?;
    if removed == 0 {
        return Err(ToolError::NotFound(format!(
            "you have no schedule `{id}` (schedule_list shows yours)"
        )));
    }
    Ok(ToolOutput::text(format!("Schedule `{id}` deleted.")))
}

/// One due schedule, as read.
struct Due {
    id: String,
    owner: String,
    name: String,
    spec: Result<Spec, serde_json::Error>,
    next_ms: i64,
}

/// Runs the schedules of `host`'s state store as they come due, until the host is gone.
pub(crate) async fn run_schedules(host: Weak<dyn ScheduleHost>) {
    let started = now_ms();
    loop {
        let Some(strong) = host.upgrade() else { return };
        let wait = match run_due(&strong, started).await {
            Ok(wait) => wait,
            Err(e) => {
                tracing::warn!(error = %e, "running due schedules failed; trying again");
                LOOK_EVERY
            }
        };
        drop(strong);
        tokio::time::sleep(wait).await;
    }
}

/// Runs what is due now (a due time before `started` was missed); how long until the next
/// look.
async fn run_due(host: &Arc<dyn ScheduleHost>, started: i64) -> Result<Duration, StoreError> {
    let store = host.store().clone();
    let now = now_ms();
    // Room for due schedules another workspace's host runs, which stay due here.
    let (due, next) = tokio::task::spawn_blocking(move || {
        store.db(|db| {
            let due = db
                .query(
                    "SELECT id, owner, name, spec, next_ms FROM schedules
                     WHERE next_ms IS NOT NULL AND next_ms <= ?1 ORDER BY next_ms LIMIT 1000",
                    args![now],
                )?
                .iter()
                .map(|row| {
                    Ok(Due {
                        id: row.text(0)?,
                        owner: row.text(1)?,
                        name: row.text(2)?,
                        spec: serde_json::from_str(&row.text(3)?),
                        next_ms: row.int(4)?,
                    })
                })
                .collect::<Result<Vec<_>, StoreError>>()?;
            let next = db
                .query_one(
                    "SELECT MIN(next_ms) FROM schedules WHERE next_ms IS NOT NULL AND next_ms > ?1",
                    args![now],
                )?
                .opt_int(0)?;
            Ok((due, next))
        })
    })
    .await
    .map_err(|e| StoreError::Db(e.to_string()))??;
    for schedule in due {
        if let Ok(spec) = &schedule.spec
            && spec
                .narrowing
                .iter()
                .filter_map(|n| n.rules.workspace.as_deref())
                .any(|pinned| pinned != host.workspace_name())
        {
            continue;
        }
        fire(host, schedule, now, started).await?;
    }
    let wait = next.map_or(LOOK_EVERY, |at| {
        Duration::from_millis(u64::try_from(at - now).unwrap_or(0)).min(LOOK_EVERY)
    });
    Ok(wait.max(Duration::from_millis(200)))
}

/// Claims `schedule`'s due time and, when it should run, starts its call as a job.
async fn fire(
    host: &Arc<dyn ScheduleHost>,
    schedule: Due,
    now: i64,
    started: i64,
) -> Result<(), StoreError> {
    let (following, run, outcome) = match &schedule.spec {
        Err(e) => (
            None,
            false,
            format!("not run: its stored spec is damaged ({e})"),
        ),
        Ok(spec) => match spec.when() {
            Err(e) => (None, false, format!("not run: {e}")),
            Ok(when) => {
                let following = when.next_after(ts(now)).map(|t| t.as_millisecond());
                let missed = schedule.next_ms < started;
                match (missed, spec.missed) {
                    (true, Missed::Skip) => (
                        following,
                        false,
                        format!(
                            "skipped the run due {} (no toolshed was running; missed = skip)",
                            ts(schedule.next_ms)
                        ),
                    ),
                    _ => (following, true, String::new()),
                }
            }
        },
    };
    let store = host.store().clone();
    let (id, old) = (schedule.id.clone(), schedule.next_ms);
    let claimed = tokio::task::spawn_blocking(move || {
        store.db(|db| {
            db.execute(
                "UPDATE schedules SET next_ms = ?1, last_ms = ?2, runs = runs + ?3
                 WHERE id = ?4 AND next_ms = ?5",
                args![&following, now, i64::from(run), &id, old],
            )
        })
    })
    .await
    .map_err(|e| StoreError::Db(e.to_string()))??;
    if claimed == 0 {
        // Another toolshed on the same database took it.
        return Ok(());
    }
    let outcome = match (&schedule.spec, run) {
        (Ok(spec), true) => match start(host, &schedule, spec) {
            Ok(job) => {
                set_last(host, &schedule.id, Some(&job), "started")?;
                return Ok(());
            }
            Err(e) => format!("not run: {e}"),
        },
        _ => outcome,
    };
    tracing::info!(schedule = %schedule.id, name = %schedule.name, %outcome, "schedule");
    set_last(host, &schedule.id, None, &outcome)
}

fn set_last(
    host: &Arc<dyn ScheduleHost>,
    id: &str,
    job: Option<&str>,
    outcome: &str,
) -> Result<(), StoreError> {
    host.store().db(|db| {
        db.execute(
            "UPDATE schedules SET last_job = ?1, last_outcome = ?2 WHERE id = ?3",
            args![&job.map(str::to_string), outcome, id],
        )
    })?;
    Ok(())
}

/// Starts the scheduled call as a job of its owner; the job's id.
fn start(
    host: &Arc<dyn ScheduleHost>,
    schedule: &Due,
    spec: &Spec,
) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
    let mut request = CallRequest::new(
        spec.tool.clone(),
        spec.arguments.clone(),
        OwnerId::new(schedule.owner.clone()),
        "schedule",
    );
    if let Some(id) = &spec.credential
        && !host.store().token_live(id)?
    {
        return Err(format!(
            "the agent token {id} that made the schedule is revoked or expired; \
             schedule_delete it, or make it again with a live token"
        )
        .into());
    }
    request.credential = spec.credential.clone();
    request.profile = spec.profile.clone();
    for n in &spec.narrowing {
        request
            .narrowing
            .push(Arc::new(crate::review::CompiledRules::compile(
                &n.source, &n.rules,
            )?));
    }
    request.sandbox_ceiling = spec
        .sandbox
        .as_deref()
        .map(toolshed_ops::sandbox::SandboxMode::parse)
        .transpose()?;
    host.clone().start_job(request)
}
