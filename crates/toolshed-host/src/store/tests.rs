//! The store's tests on the embedded engine: opening one file from many threads at once,
//! migrations and state kept across opens, `data_version`, a newer schema refused, and the
//! audit log's bound.

use super::*;

fn record(i: i64) -> AuditRecord {
    AuditRecord {
        ts_ms: i,
        call_id: format!("c{i}"),
        owner: "o".into(),
        door: "test".into(),
        tool: "calculator".into(),
        plugin: Some("system.calculator".into()),
        args_sha256: "00".into(),
        outcome: "ok".into(),
        error_kind: None,
        duration_ms: 1,
        approval: None,
        parent: None,
        note: None,
    }
}

#[test]
fn processes_opening_a_new_database_at_once_all_succeed() {
    // Two `toolshed` commands started together on a fresh data dir (a waiting call and
    // `toolshed approvals list`) both find schema version 0; only one may migrate.
    for _ in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolshed.db");
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(4));
        let opened: Vec<_> = (0..4)
            .map(|_| {
                let (path, barrier) = (path.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    StateStore::open(&path).map(|_| ())
                })
            })
            .collect();
        for handle in opened {
            handle.join().unwrap().unwrap();
        }
    }
}

/// The log keeps its newest rows and stays bounded, whatever the batches' sizes: it
/// is pruned each time the ids pass a multiple of 256.
#[test]
fn the_audit_log_keeps_the_newest_rows_within_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    let store = StateStore::open(&dir.path().join("toolshed.db")).unwrap();
    let count = |store: &StateStore| {
        store
            .tx(|db| db.query_one("SELECT count(*), min(id), max(id) FROM audit", &[]))
            .map(|row| {
                (
                    row.int(0).unwrap(),
                    row.int(1).unwrap(),
                    row.int(2).unwrap(),
                )
            })
            .unwrap()
    };
    let mut next = 1;
    for size in [1, 7, 250, 3, 300, 1, 1, 64, 200] {
        let batch: Vec<_> = (next..next + size).map(record).collect();
        store.tx(|db| insert_audit_rows(db, &batch, 100)).unwrap();
        next += size;
        let (rows, first, last) = count(&store);
        assert_eq!(last, next - 1);
        assert!(
            rows <= 100 + 256 + size,
            "{rows} rows after a batch of {size}"
        );
        assert_eq!(first, last - rows + 1, "the newest rows are kept");
    }
    // 827 rows written; the last batch (628-827) passed 768: the newest 100 kept.
    assert_eq!(count(&store), (100, 728, 827));
    // An empty batch writes nothing.
    store.tx(|db| insert_audit_rows(db, &[], 100)).unwrap();
    assert_eq!(count(&store).0, 100);
}

#[test]
fn migrates_a_file_once_and_keeps_state_across_opens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/toolshed.db");
    {
        let store = StateStore::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), MIGRATIONS.len());
        store.set_plugin_enabled("a", false).unwrap();
        store
            .set_config_value("a", "k", &serde_json::json!({"x": 1}), false)
            .unwrap();
        store.append_audit(&record(1), 10).unwrap();
    }
    let store = StateStore::open(&path).unwrap();
    assert_eq!(store.plugin_enabled("a").unwrap(), Some(false));
    assert_eq!(store.plugin_enabled("b").unwrap(), None);
    assert_eq!(
        store.config_values("a").unwrap()["k"],
        serde_json::json!({"x": 1})
    );
    assert_eq!(store.recent_audit(5).unwrap(), vec![record(1)]);
    let mode: String = store
        .with(|c| Ok(c.pragma_query_value(None, "journal_mode", |r| r.get(0))?))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[tokio::test]
async fn data_version_moves_for_other_connections_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolshed.db");
    let store = StateStore::open(&path).unwrap();
    let start = store.data_version().unwrap();
    store.set_plugin_enabled("a", false).unwrap();
    store.append_audit(&record(1), 10).unwrap();
    // Rows the audit writer thread commits go through the same connection.
    store.queue_audit(record(2), 10).await;
    store.flush_audit();
    assert_eq!(store.recent_audit(5).unwrap().len(), 2);
    assert_eq!(store.data_version().unwrap(), start, "own writes");
    let other = StateStore::open(&path).unwrap();
    other.set_plugin_enabled("a", true).unwrap();
    let moved = store.data_version().unwrap();
    assert_ne!(moved, start, "another connection committed");
    assert_eq!(store.data_version().unwrap(), moved, "nothing since");
}

#[test]
fn refuses_a_newer_schema() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolshed.db");
    let conn = Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    let err = StateStore::open(&path).unwrap_err().to_string();
    assert!(err.contains("schema version 99"), "{err}");
}

#[test]
fn audit_log_is_bounded() {
    let store = StateStore::open_in_memory().unwrap();
    for i in 1..=1024 {
        store.append_audit(&record(i), 100).unwrap();
    }
    let rows = store.recent_audit(10_000).unwrap();
    assert!(rows.len() <= 100 + 256, "{}", rows.len());
    assert_eq!(rows[0].ts_ms, 1024);
}
