//! The storage contract: what every engine of the state store must do, run against the
//! embedded SQLite file and against a real Postgres. `scripts/test` starts a throwaway
//! Postgres cluster on a loopback port and sets `TOOLSHED_TEST_POSTGRES_URL` (an admin URL;
//! each test makes a database of its own there) and `TOOLSHED_REQUIRE_POSTGRES=1`, so the
//! Postgres half cannot be skipped there; run by hand without it, that half says it was
//! skipped.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;

use crate::approvals::{ApprovalState, NewApproval};
use crate::audit::AuditQuery;
use crate::config::StoreConfig;
use crate::install::provenance::Provenance;
use crate::job_store::{JobEnd, StoredEvent};
use crate::store::{AuditRecord, StateStore};

/// A store of each engine on a fresh database, with the directory its file lives in.
fn stores() -> Vec<(StateStore, tempfile::TempDir)> {
    let mut out = Vec::new();
    let dir = tempfile::tempdir().unwrap();
    out.push((
        StateStore::open(&dir.path().join("toolshed.db")).unwrap(),
        dir,
    ));
    match std::env::var("TOOLSHED_TEST_POSTGRES_URL") {
        Ok(admin) => {
            let dir = tempfile::tempdir().unwrap();
            let url = fresh_database(&admin);
            let store = StateStore::open_with(
                &dir.path().join("toolshed.db"),
                &StoreConfig {
                    url: Some(url),
                    max_connections: 4,
                    ..Default::default()
                },
            )
            .unwrap();
            assert_eq!(store.engine_name(), "postgres");
            out.push((store, dir));
        }
        Err(_) if std::env::var_os("TOOLSHED_REQUIRE_POSTGRES").is_some() => {
            panic!("TOOLSHED_REQUIRE_POSTGRES is set but TOOLSHED_TEST_POSTGRES_URL is not")
        }
        Err(_) => eprintln!(
            "the Postgres half of the storage contract was skipped: set TOOLSHED_TEST_POSTGRES_URL (scripts/test does)"
        ),
    }
    out
}

/// A new empty database on the server `admin` reaches; returns its URL.
pub(crate) fn fresh_database(admin: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        "toolshed_test_{}_{}_{}",
        std::process::id(),
        crate::store::now_ms(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    // On a thread of its own: the synchronous client must not run inside a test's runtime.
    let admin = admin.to_string();
    let created = name.clone();
    std::thread::spawn(move || {
        let mut client = postgres::Client::connect(&admin, postgres::NoTls).unwrap();
        client
            .batch_execute(&format!("CREATE DATABASE {created}"))
            .unwrap();
    })
    .join()
    .unwrap();
    let base = std::env::var("TOOLSHED_TEST_POSTGRES_URL").unwrap();
    let (server, _) = base.rsplit_once('/').unwrap();
    format!("{server}/{name}")
}

fn record(i: i64, tool: &str, owner: &str, outcome: &str) -> AuditRecord {
    AuditRecord {
        ts_ms: 1_000 + i,
        call_id: format!("c-{i}"),
        owner: owner.into(),
        door: "rest".into(),
        tool: tool.into(),
        plugin: Some("system.utils".into()),
        args_sha256: "00".into(),
        outcome: outcome.into(),
        error_kind: (outcome == "error").then(|| "not_found".to_string()),
        duration_ms: i,
        approval: None,
        parent: (i == 3).then(|| "c-2".to_string()),
        note: None,
    }
}

#[test]
fn plugin_state_config_grants_tools_and_provenance() {
    for (store, _dir) in stores() {
        let engine = store.engine_name();
        assert_eq!(store.plugin_enabled("p").unwrap(), None, "{engine}");
        store.set_plugin_enabled("p", false).unwrap();
        store.set_plugin_enabled("q", true).unwrap();
        store.set_plugin_enabled("p", true).unwrap();
        assert_eq!(store.plugin_enabled("p").unwrap(), Some(true), "{engine}");
        assert_eq!(
            store.plugin_states().unwrap(),
            BTreeMap::from([("p".to_string(), true), ("q".to_string(), true)]),
            "{engine}"
        );
        // Paused: kept beside the enabled state, a new row counted as enabled.
        assert!(store.paused_plugins().unwrap().is_empty(), "{engine}");
        store.set_plugin_paused("p", true).unwrap();
        store.set_plugin_paused("r", true).unwrap();
        assert_eq!(
            store.paused_plugins().unwrap(),
            ["p".to_string(), "r".to_string()].into(),
            "{engine}"
        );
        assert_eq!(store.plugin_enabled("r").unwrap(), Some(true), "{engine}");
        store.set_plugin_paused("r", false).unwrap();
        store.set_plugin_enabled("p", true).unwrap();
        assert_eq!(
            store.paused_plugins().unwrap(),
            ["p".to_string()].into(),
            "{engine}"
        );
        store.set_plugin_paused("p", false).unwrap();

        store
            .set_config_value("p", "region", &json!("eu"), false)
            .unwrap();
        store
            .set_config_value("p", "api_key", &json!("s3cret"), true)
            .unwrap();
        store
            .set_config_value("p", "limits", &json!({"n": 3}), false)
            .unwrap();
        store.forget_config_values();
        let values = store.config_values("p").unwrap();
        assert_eq!(values["region"], json!("eu"), "{engine}");
        assert_eq!(values["api_key"], json!("s3cret"), "{engine}");
        assert_eq!(values["limits"], json!({"n": 3}), "{engine}");
        // Secrets are sealed at rest, in either engine.
        let raw = store
            .db(|db| {
                db.query_one(
                    "SELECT value FROM config_values WHERE plugin_id = ?1 AND key = ?2",
                    crate::store::db::args!["p", "api_key"],
                )?
                .text(0)
            })
            .unwrap();
        assert!(
            raw.starts_with("sealed:") && !raw.contains("s3cret"),
            "{engine}: {raw}"
        );

        store
            .change_grants("p", &["http:a.example".into(), "fs-read:/x".into()], &[])
            .unwrap();
        store
            .change_grants("p", &["http:b.example".into()], &["fs-read:/x".into()])
            .unwrap();
        assert_eq!(
            store.grants("p").unwrap(),
            vec!["http:a.example", "http:b.example"],
            "{engine}"
        );
        assert_eq!(store.all_grants().unwrap().len(), 1, "{engine}");

        let spec: toolshed_core::ToolSpec = serde_json::from_value(json!({
            "name": "p_tool", "description": "d", "input_schema": {"type": "object"}
        }))
        .unwrap();
        store
            .set_plugin_tools("p", "k1", std::slice::from_ref(&spec))
            .unwrap();
        store.set_plugin_tools("p", "k2", &[spec]).unwrap();
        let tools = store.plugin_tools().unwrap();
        assert_eq!(tools["p"].0, "k2", "{engine}");
        assert_eq!(tools["p"].1[0].name, "p_tool", "{engine}");

        let provenance = Provenance {
            source: "https://plugins.example/p.tar.gz".into(),
            sha256: Some("ab".into()),
            tree_sha256: "cd".into(),
            installed_ms: 42,
            files: BTreeMap::from([("manifest.toml".to_string(), "ef".to_string())]),
            dependencies: Some(crate::install::npm::Dependencies {
                manager: "npm".into(),
                packages: 2,
                bytes: 4096,
                millis: 1500,
            }),
        };
        store.set_provenance("p", &provenance).unwrap();
        assert_eq!(store.provenance("p").unwrap(), Some(provenance), "{engine}");

        store.forget_plugin("p").unwrap();
        assert_eq!(store.plugin_enabled("p").unwrap(), None, "{engine}");
        assert!(store.config_values("p").unwrap().is_empty(), "{engine}");
        assert!(store.grants("p").unwrap().is_empty(), "{engine}");
        assert!(!store.plugin_tools().unwrap().contains_key("p"), "{engine}");
        assert_eq!(store.provenance("p").unwrap(), None, "{engine}");
        assert_eq!(store.plugin_enabled("q").unwrap(), Some(true), "{engine}");
    }
}

#[tokio::test]
async fn the_audit_log_pages_filters_and_queues() {
    for (store, _dir) in stores() {
        let engine = store.engine_name();
        for i in 1..=5 {
            let (tool, outcome) = if i % 2 == 0 {
                ("web_fetch", "error")
            } else {
                ("calculator", "ok")
            };
            store
                .append_audit(
                    &record(i, tool, if i < 4 { "alice" } else { "bob" }, outcome),
                    1000,
                )
                .unwrap();
        }
        store
            .queue_audit(record(6, "calculator", "bob", "tool_error"), 1000)
            .await;
        let page = |query: AuditQuery| store.audit_page(&query).unwrap();
        let all = page(AuditQuery {
            limit: 10,
            ..Default::default()
        });
        // Newest first, the queued row included.
        let ids: Vec<_> = all.rows.iter().map(|r| r.record.call_id.as_str()).collect();
        assert_eq!(ids, ["c-6", "c-5", "c-4", "c-3", "c-2", "c-1"], "{engine}");
        assert_eq!(
            all.rows[3].record,
            record(3, "calculator", "alice", "ok"),
            "{engine}"
        );
        let count = |q: AuditQuery| page(q).rows.len();
        let q = |f: &dyn Fn(&mut AuditQuery)| {
            let mut q = AuditQuery {
                limit: 10,
                ..Default::default()
            };
            f(&mut q);
            q
        };
        assert_eq!(count(q(&|q| q.tool = Some("web_*".into()))), 2, "{engine}");
        assert_eq!(
            count(q(&|q| q.tool = Some("calc?lator".into()))),
            4,
            "{engine}"
        );
        // `_` is a literal in a glob, not a wildcard.
        assert_eq!(
            count(q(&|q| q.tool = Some("web_fetch".into()))),
            2,
            "{engine}"
        );
        assert_eq!(count(q(&|q| q.tool = Some("web%".into()))), 0, "{engine}");
        assert_eq!(count(q(&|q| q.owner = Some("al*".into()))), 3, "{engine}");
        assert_eq!(count(q(&|q| q.since_ms = Some(1_004))), 3, "{engine}");
        assert_eq!(
            count(q(&|q| q.outcome = Some("error".into()))),
            2,
            "{engine}"
        );
        assert_eq!(count(q(&|q| q.parent = Some("c-2".into()))), 1, "{engine}");
        // Pages of two, following the cursor.
        let first = page(q(&|q| q.limit = 2));
        assert_eq!(first.rows.len(), 2, "{engine}");
        let before = first.next_cursor.unwrap().parse().unwrap();
        let second = page(q(&|q| {
            q.limit = 2;
            q.before = Some(before);
        }));
        assert_eq!(second.rows[0].record.call_id, "c-4", "{engine}");
        assert_eq!(store.recent_audit(1).unwrap()[0].call_id, "c-6", "{engine}");
    }
}

#[test]
fn the_read_log_keeps_the_last_digest() {
    for (store, _dir) in stores() {
        let engine = store.engine_name();
        assert_eq!(
            store.read_log_get("alice", "a.txt").unwrap(),
            None,
            "{engine}"
        );
        store.read_log_put("alice", "a.txt", &[1; 32]).unwrap();
        store.read_log_put("alice", "a.txt", &[2; 32]).unwrap();
        store.read_log_put("bob", "a.txt", &[3; 32]).unwrap();
        assert_eq!(
            store.read_log_get("alice", "a.txt").unwrap(),
            Some([2; 32]),
            "{engine}"
        );
        assert_eq!(
            store.read_log_get("bob", "a.txt").unwrap(),
            Some([3; 32]),
            "{engine}"
        );
    }
}

#[test]
fn tokens_authenticate_until_revoked() {
    for (store, _dir) in stores() {
        let engine = store.engine_name();
        let made = store.create_token("alice", &[], None).unwrap();
        let found = store.authenticate(&made.token).unwrap().unwrap();
        assert_eq!(found.owner, "alice", "{engine}");
        assert_eq!(store.tokens().unwrap().len(), 1, "{engine}");
        let (head, _) = made.token.rsplit_once('_').unwrap();
        assert!(
            store
                .authenticate(&format!("{head}_{}", "0".repeat(64)))
                .unwrap()
                .is_none(),
            "{engine}"
        );
        assert!(store.revoke_token(&made.record.id).unwrap(), "{engine}");
        assert!(
            store.authenticate(&made.token).unwrap().is_none(),
            "{engine}"
        );
        assert!(!store.revoke_token(&made.record.id).unwrap(), "{engine}");
        let brief = store
            .create_token("bob", &[], Some(Duration::from_millis(0)))
            .unwrap();
        assert!(
            store.authenticate(&brief.token).unwrap().is_none(),
            "{engine}"
        );
    }
}

#[test]
fn approvals_wait_are_answered_remembered_and_bounded() {
    for (store, _dir) in stores() {
        let engine = store.engine_name();
        let args = json!({"cmd": "make deploy"});
        let new = |timeout| NewApproval {
            tool: "exec_command",
            owner: "alice",
            arguments: &args,
            rule: "ask",
            reason: "deploys",
            timeout,
        };
        let asked = store
            .create_approval(&new(Duration::from_secs(60)), 2, u32::MAX)
            .unwrap();
        assert_eq!(asked.state, ApprovalState::Pending, "{engine}");
        assert_eq!(store.approvals(false, 10).unwrap().len(), 1, "{engine}");
        let second = store
            .create_approval(&new(Duration::from_secs(60)), 2, u32::MAX)
            .unwrap();
        let full = store
            .create_approval(&new(Duration::from_secs(60)), 2, u32::MAX)
            .unwrap_err();
        assert!(full.to_string().contains("max_pending"), "{engine}: {full}");
        let answered = store
            .answer_approval(&asked.id, true, "ops", true)
            .unwrap()
            .unwrap();
        assert_eq!(answered.state, ApprovalState::Approved, "{engine}");
        assert_eq!(answered.answered_by.as_deref(), Some("ops"), "{engine}");
        assert!(answered.remembered, "{engine}");
        // A second answer changes nothing.
        let again = store
            .answer_approval(&asked.id, false, "eve", false)
            .unwrap()
            .unwrap();
        assert_eq!(again.state, ApprovalState::Approved, "{engine}");
        assert!(
            store
                .approval_remembered("alice", "exec_command", &asked.digest)
                .unwrap(),
            "{engine}"
        );
        assert!(
            !store
                .approval_remembered("bob", "exec_command", &asked.digest)
                .unwrap(),
            "{engine}"
        );
        store.expire_approval(&second.id).unwrap();
        assert_eq!(
            store.approval(&second.id).unwrap().unwrap().state,
            ApprovalState::Expired,
            "{engine}"
        );
        let lapsed = store
            .create_approval(&new(Duration::from_millis(0)), 2, u32::MAX)
            .unwrap();
        assert_eq!(
            store.approvals(true, 10).unwrap().len(),
            3,
            "{engine}: the lapsed request is listed as expired"
        );
        assert!(store.approvals(false, 10).unwrap().is_empty(), "{engine}");
        assert!(
            store
                .answer_approval(&lapsed.id, true, "ops", false)
                .unwrap()
                .is_some_and(|r| r.state == ApprovalState::Expired),
            "{engine}"
        );
        assert_eq!(store.approval("ap-none").unwrap(), None, "{engine}");
    }
}

#[test]
fn jobs_sequences_and_events() {
    for (store, _dir) in stores() {
        let engine = store.engine_name();
        let a = store.job_create("calculator", "alice", 10, "i1").unwrap();
        let b = store.job_create("web_fetch", "bob", 11, "i1").unwrap();
        assert!(b > a, "{engine}");
        store
            .job_finish(
                a,
                JobEnd {
                    state: "succeeded",
                    finished_ms: 20,
                    progress_count: 2,
                    progress: &json!([{"message": "half"}]),
                    result: Some(&json!({"text": "42"})),
                    error: None,
                },
            )
            .unwrap();
        let done = store.job_get(a).unwrap().unwrap();
        assert_eq!(done.state, "succeeded", "{engine}");
        assert_eq!(done.result, Some(json!({"text": "42"})), "{engine}");
        assert_eq!(done.finished_ms, Some(20), "{engine}");
        assert_eq!(
            store.job_list(Some("bob"), None, 10).unwrap()[0].n,
            b,
            "{engine}"
        );
        assert_eq!(
            store.job_list(None, Some("running"), 10).unwrap().len(),
            1,
            "{engine}"
        );
        let mut counts = store.job_counts().unwrap();
        counts.sort();
        assert_eq!(
            counts,
            vec![("running".to_string(), 1), ("succeeded".to_string(), 1)],
            "{engine}"
        );
        store.job_sweep(21, 100).unwrap();
        assert_eq!(store.job_get(a).unwrap(), None, "{engine}");
        assert!(store.job_get(b).unwrap().is_some(), "{engine}");

        assert_eq!(
            store.reserve_sequence("events", 100).unwrap(),
            1,
            "{engine}"
        );
        assert_eq!(
            store.reserve_sequence("events", 100).unwrap(),
            101,
            "{engine}"
        );
        assert_eq!(store.reserve_sequence("other", 1).unwrap(), 1, "{engine}");

        for id in 1..=5 {
            store
                .append_event(&StoredEvent {
                    id,
                    kind: "job.finished".into(),
                    time_ms: 100 + id,
                    job_id: Some(format!("job-{id}")),
                    owner: (id % 2 == 0).then(|| "alice".to_string()),
                    data: json!({"n": id}),
                })
                .unwrap();
        }
        let recent = store.recent_events(3).unwrap();
        let ids: Vec<u64> = recent.iter().map(|e| e.id).collect();
        assert_eq!(ids, [3, 4, 5], "{engine}");
        assert_eq!(recent[1].owner.as_deref(), Some("alice"), "{engine}");
        assert_eq!(recent[2].data, json!({"n": 5}), "{engine}");
    }
}

#[test]
fn reserved_sequence_blocks_never_overlap_across_stores() {
    // Two stores on one database (two processes, or two replicas on Postgres) reserving at
    // once get disjoint blocks.
    let dir = tempfile::tempdir().unwrap();
    let mut pairs: Vec<(StateStore, StateStore)> = vec![(
        StateStore::open(&dir.path().join("toolshed.db")).unwrap(),
        StateStore::open(&dir.path().join("toolshed.db")).unwrap(),
    )];
    let other = tempfile::tempdir().unwrap();
    if let Ok(admin) = std::env::var("TOOLSHED_TEST_POSTGRES_URL") {
        let config = StoreConfig {
            url: Some(fresh_database(&admin)),
            max_connections: 4,
            ..Default::default()
        };
        pairs.push((
            StateStore::open_with(&other.path().join("a.db"), &config).unwrap(),
            StateStore::open_with(&other.path().join("b.db"), &config).unwrap(),
        ));
    }
    for (a, b) in pairs {
        let engine = a.engine_name();
        let (a, b) = (std::sync::Arc::new(a), std::sync::Arc::new(b));
        let run = |s: std::sync::Arc<StateStore>| {
            std::thread::spawn(move || {
                (0..50)
                    .map(|_| s.reserve_sequence("n", 10).unwrap())
                    .collect::<Vec<_>>()
            })
        };
        let (x, y) = (run(a.clone()), run(b.clone()));
        let mut all: Vec<u64> = x.join().unwrap();
        all.extend(y.join().unwrap());
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 100, "{engine}: overlapping blocks");
        assert!(all.windows(2).all(|w| w[1] - w[0] >= 10), "{engine}");
    }
}

#[test]
fn a_change_made_through_one_store_is_heard_by_another_on_the_same_postgres() {
    let Ok(admin) = std::env::var("TOOLSHED_TEST_POSTGRES_URL") else {
        assert!(
            std::env::var_os("TOOLSHED_REQUIRE_POSTGRES").is_none(),
            "TOOLSHED_REQUIRE_POSTGRES is set but TOOLSHED_TEST_POSTGRES_URL is not"
        );
        return;
    };
    let config = StoreConfig {
        url: Some(fresh_database(&admin)),
        max_connections: 2,
        ..Default::default()
    };
    // Two replicas: two data dirs, one database.
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = StateStore::open_with(&dir_a.path().join("toolshed.db"), &config).unwrap();
    let b = StateStore::open_with(&dir_b.path().join("toolshed.db"), &config).unwrap();
    let changes_b = dir_b.path().join(crate::store::CHANGES_FILE);
    let before = (
        b.data_version().unwrap(),
        std::fs::read(&changes_b).unwrap(),
    );
    // The listener may still be connecting: say it again until it is heard.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        a.set_plugin_enabled("p", false).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        if b.data_version().unwrap() != before.0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "b never heard a's change"
        );
    }
    assert_eq!(b.plugin_enabled("p").unwrap(), Some(false));
    assert_ne!(
        std::fs::read(&changes_b).unwrap(),
        before.1,
        "the watcher's file is rewritten"
    );
    // A store does not hear itself.
    let own = a.data_version().unwrap();
    a.set_plugin_enabled("p", true).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(a.data_version().unwrap(), own);
}

#[test]
fn a_token_revoked_on_one_replica_is_refused_by_another_that_cached_it() {
    let Ok(admin) = std::env::var("TOOLSHED_TEST_POSTGRES_URL") else {
        assert!(
            std::env::var_os("TOOLSHED_REQUIRE_POSTGRES").is_none(),
            "TOOLSHED_REQUIRE_POSTGRES is set but TOOLSHED_TEST_POSTGRES_URL is not"
        );
        return;
    };
    let config = StoreConfig {
        url: Some(fresh_database(&admin)),
        max_connections: 2,
        // Long enough that only the pushed revocation can make b forget it.
        token_cache_secs: 3600,
    };
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = StateStore::open_with(&dir_a.path().join("toolshed.db"), &config).unwrap();
    let b = StateStore::open_with(&dir_b.path().join("toolshed.db"), &config).unwrap();
    let made = a.create_token("alice", &[], None).unwrap();
    // b reads it once and keeps it: the database is not asked again.
    assert_eq!(b.authenticate(&made.token).unwrap().unwrap().owner, "alice");
    assert!(b.token_cache().get(&made.record.id).is_some());
    // A wrong secret with the cached id is still refused.
    let (head, _) = made.token.rsplit_once('_').unwrap();
    assert!(
        b.authenticate(&format!("{head}_{}", "0".repeat(64)))
            .unwrap()
            .is_none()
    );
    // Revoked through a: b refuses it as soon as the word arrives.
    assert!(a.revoke_token(&made.record.id).unwrap());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while b.authenticate(&made.token).unwrap().is_some() {
        assert!(
            std::time::Instant::now() < deadline,
            "b still accepts a token revoked through a"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // With the cache off, every request reads the database.
    let off = StoreConfig {
        token_cache_secs: 0,
        ..config
    };
    let dir_c = tempfile::tempdir().unwrap();
    let c = StateStore::open_with(&dir_c.path().join("toolshed.db"), &off).unwrap();
    let other = a.create_token("bob", &[], None).unwrap();
    assert!(c.authenticate(&other.token).unwrap().is_some());
    assert!(c.token_cache().get(&other.record.id).is_none());
}

#[test]
fn a_batch_of_audit_rows_goes_in_whole_in_order_and_intact() {
    for (store, _dir) in stores() {
        let engine = store.engine_name();
        // 700 rows: on Postgres chunks of 256, 256, 128, 32, 16, 8 and 4 rows.
        let mut rows: Vec<AuditRecord> = (0..700)
            .map(|i| {
                record(
                    i,
                    "calculator",
                    "alice",
                    if i % 7 == 0 { "error" } else { "ok" },
                )
            })
            .collect();
        rows[699].approval = Some("granted".into());
        rows[699].plugin = None;
        store
            .db(|db| crate::store::insert_audit_rows(db, &rows, 100_000))
            .unwrap_or_else(|e| panic!("{engine}: {e}"));
        let page = store
            .audit_page(&AuditQuery {
                limit: 1000,
                ..Default::default()
            })
            .unwrap()
            .rows;
        let stored: Vec<AuditRecord> = page.into_iter().rev().map(|r| r.record).collect();
        assert_eq!(stored.len(), 700, "{engine}");
        for (got, want) in stored.iter().zip(&rows) {
            assert_eq!(got, want, "{engine}");
        }
    }
}

#[test]
fn the_audit_log_stays_bounded_past_its_pruning_points() {
    for (store, _dir) in stores() {
        let engine = store.engine_name();
        // Pruning runs when an id is a multiple of 256: twice in 600 rows.
        for i in 0..600 {
            store
                .append_audit(&record(i, "calculator", "alice", "ok"), 300)
                .unwrap_or_else(|e| panic!("{engine}: row {i}: {e}"));
        }
        let rows = store
            .audit_page(&AuditQuery {
                limit: 1000,
                ..Default::default()
            })
            .unwrap()
            .rows;
        assert!(
            (300..=556).contains(&rows.len()),
            "{engine}: {} rows kept",
            rows.len()
        );
        assert_eq!(rows[0].record.call_id, "c-599", "{engine}");
    }
}

#[test]
fn a_shared_install_row_cannot_reach_outside_the_plugin_root() {
    let Ok(admin) = std::env::var("TOOLSHED_TEST_POSTGRES_URL") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = StateStore::open_with(
        &dir.path().join("toolshed.db"),
        &StoreConfig {
            url: Some(fresh_database(&admin)),
            max_connections: 2,
            ..Default::default()
        },
    )
    .unwrap();
    // A directory beside the plugin root, and a tombstone that names it by `..`, with the
    // digest its (empty) files have.
    let victim = dir.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    let digest = crate::install::provenance::tree_digest(
        &crate::install::provenance::hash_tree(&victim).unwrap(),
    );
    for id in ["../victim", "/tmp", "a/../../victim"] {
        store
            .db(|db| {
                db.execute(
                    "INSERT INTO plugin_archives (plugin_id, tree_sha256, archive, updated_ms)
                     VALUES (?1, ?2, NULL, 0)",
                    crate::store::db::args![id, &digest],
                )
            })
            .unwrap();
    }
    let replicated = store.replicate_installs().unwrap();
    assert!(replicated.removed.is_empty() && replicated.placed.is_empty());
    assert!(
        victim.is_dir(),
        "a row removed a directory outside the plugin root"
    );
}

#[test]
fn an_unreachable_database_is_named_with_the_reason_and_without_its_password() {
    let dir = tempfile::tempdir().unwrap();
    let err = StateStore::open_with(
        &dir.path().join("toolshed.db"),
        &StoreConfig {
            url: Some("postgres://toolshed:s3cret@127.0.0.1:1/toolshed".into()),
            max_connections: 1,
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("postgres://toolshed@127.0.0.1:1/toolshed")
            && err.contains("refused")
            && !err.contains("s3cret"),
        "{err}"
    );
}

#[test]
fn one_owners_flood_of_approvals_leaves_another_owner_able_to_ask() {
    // Failed before the per-owner share: the 100 pending requests were counted for all
    // owners together, so alice's flood refused bob at once.
    for (store, _dir) in stores() {
        let engine = store.engine_name();
        let args = json!({"cmd": "make deploy"});
        let new = |owner| NewApproval {
            tool: "exec_command",
            owner,
            arguments: &args,
            rule: "ask",
            reason: "deploys",
            timeout: Duration::from_secs(60),
        };
        let mut refused = 0;
        for i in 0..10_000 {
            let owner = if i % 2 == 0 { "alice" } else { "alice/agent-7" };
            match store.create_approval(&new(owner), 100, 20) {
                Ok(_) => {}
                Err(e) => {
                    assert!(
                        e.to_string().contains("max_pending_per_owner")
                            && e.to_string().contains("`alice`"),
                        "{engine}: {e}"
                    );
                    refused += 1;
                }
            }
        }
        assert_eq!(refused, 10_000 - 20, "{engine}: alice's share is 20");
        // A name that merely starts like alice's is another owner.
        store.create_approval(&new("alicex"), 100, 20).unwrap();
        let bob = store.create_approval(&new("bob"), 100, 20).unwrap();
        assert_eq!(bob.state, ApprovalState::Pending, "{engine}");
    }
}
