//! Plugin secrets at rest: sealed in the state database under the data dir's `secret.key`,
//! clear-text secrets from an older toolshed sealed on open, and a database copied without
//! its key reveals nothing.

use serde_json::json;
use toolshed_host::StateStore;

/// Every byte of the database and its write-ahead log.
fn database_bytes(dir: &std::path::Path) -> Vec<u8> {
    let mut bytes = Vec::new();
    for name in ["toolshed.db", "toolshed.db-wal"] {
        bytes.extend(std::fs::read(dir.join(name)).unwrap_or_default());
    }
    bytes
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn secrets_are_sealed_in_the_database_and_read_back_in_clear() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolshed.db");
    {
        let store = StateStore::open(&path).unwrap();
        store
            .set_config_value("p", "api_key", &json!("sk-live-canary-1234"), true)
            .unwrap();
        store
            .set_config_value("p", "region", &json!("eu-canary-west"), false)
            .unwrap();
    }
    let bytes = database_bytes(dir.path());
    assert!(
        !contains(&bytes, "sk-live-canary-1234"),
        "a secret is in clear text"
    );
    assert!(
        contains(&bytes, "eu-canary-west"),
        "the check can see clear text"
    );
    let store = StateStore::open(&path).unwrap();
    let values = store.config_values("p").unwrap();
    assert_eq!(values["api_key"], "sk-live-canary-1234");
    assert_eq!(values["region"], "eu-canary-west");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(dir.path().join("secret.key"))
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn clear_text_secrets_of_an_older_toolshed_are_sealed_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolshed.db");
    drop(StateStore::open(&path).unwrap());
    {
        // What an older toolshed left: the value in clear.
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute(
            "INSERT INTO config_values (plugin_id, key, value, secret, updated_at)
             VALUES ('p', 'token', '\"old-clear-canary\"', 1, 0)",
            [],
        )
        .unwrap();
    }
    let store = StateStore::open(&path).unwrap();
    assert_eq!(
        store.config_values("p").unwrap()["token"],
        "old-clear-canary"
    );
    drop(store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let stored: String = conn
        .query_row(
            "SELECT value FROM config_values WHERE key = 'token'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(
        stored.starts_with("sealed:v1:") && !stored.contains("canary"),
        "{stored}"
    );
}

#[test]
fn a_database_without_its_key_does_not_give_its_secrets_away() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolshed.db");
    {
        let store = StateStore::open(&path).unwrap();
        store
            .set_config_value("p", "api_key", &json!("k1"), true)
            .unwrap();
        store
            .set_config_value("p", "name", &json!("n"), false)
            .unwrap();
    }
    // Another data dir's key (as when the database is copied alone).
    std::fs::remove_file(dir.path().join("secret.key")).unwrap();
    let store = StateStore::open(&path).unwrap();
    let values = store.config_values("p").unwrap();
    assert!(values.get("api_key").is_none(), "{values:?}");
    assert_eq!(values["name"], "n");
}
