//! The state store's DDL as it was written by hand and released, one list per engine,
//! frozen here for the tests only (`super::tests`): the DDL rendered from the one
//! description (`super::MIGRATIONS`) must have the same effect on a database of each engine
//! after every migration, and a database of each released version must upgrade to what a
//! fresh one gets. Kept as the statements themselves rather than a dump of the final
//! schema because released databases went through exactly these, one version at a time.
//! Never edit; nothing outside the tests reads it.

/// The SQLite file's migrations as released: `PRAGMA user_version` = how many ran.
pub(super) const SQLITE: &[&str] = &[
    "CREATE TABLE plugin_state (
        plugin_id    TEXT PRIMARY KEY,
        enabled      INTEGER NOT NULL,
        source       TEXT,
        sha256       TEXT,
        installed_at INTEGER,
        updated_at   INTEGER NOT NULL
    );
    CREATE TABLE config_values (
        plugin_id  TEXT NOT NULL,
        key        TEXT NOT NULL,
        value      TEXT NOT NULL,
        secret     INTEGER NOT NULL DEFAULT 0,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (plugin_id, key)
    );
    CREATE TABLE audit (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        ts_ms       INTEGER NOT NULL,
        call_id     TEXT NOT NULL,
        owner       TEXT NOT NULL,
        door        TEXT NOT NULL,
        tool        TEXT NOT NULL,
        plugin      TEXT,
        args_sha256 TEXT NOT NULL,
        outcome     TEXT NOT NULL,
        error_kind  TEXT,
        duration_ms INTEGER NOT NULL
    );
    CREATE INDEX audit_ts ON audit (ts_ms);",
    "CREATE TABLE read_log (
        owner     TEXT NOT NULL,
        path      TEXT NOT NULL,
        sha256    BLOB NOT NULL,
        ts_ms     INTEGER NOT NULL,
        PRIMARY KEY (owner, path)
    );
    CREATE INDEX read_log_ts ON read_log (ts_ms);",
    "CREATE TABLE plugin_grants (
        plugin_id  TEXT NOT NULL,
        grant      TEXT NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (plugin_id, grant)
    );",
    "CREATE TABLE plugin_tools (
        plugin_id  TEXT PRIMARY KEY,
        load_key   TEXT NOT NULL,
        specs      TEXT NOT NULL,
        updated_at INTEGER NOT NULL
    );",
    "CREATE TABLE tokens (
        id           TEXT PRIMARY KEY,
        owner        TEXT NOT NULL,
        scopes       TEXT NOT NULL,
        hash         TEXT NOT NULL,
        created_ms   INTEGER NOT NULL,
        expires_ms   INTEGER,
        last_used_ms INTEGER,
        revoked_ms   INTEGER
    );",
    "CREATE TABLE approvals (
        id          TEXT PRIMARY KEY,
        tool        TEXT NOT NULL,
        owner       TEXT NOT NULL,
        digest      TEXT NOT NULL,
        summary     TEXT NOT NULL,
        rule        TEXT NOT NULL,
        reason      TEXT NOT NULL,
        created_ms  INTEGER NOT NULL,
        expires_ms  INTEGER NOT NULL,
        state       TEXT NOT NULL,
        answered_by TEXT,
        answered_ms INTEGER,
        remembered  INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX approvals_state ON approvals (state, created_ms);
    CREATE TABLE approval_grants (
        owner      TEXT NOT NULL,
        tool       TEXT NOT NULL,
        digest     TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        PRIMARY KEY (owner, tool, digest)
    );",
    "ALTER TABLE audit ADD COLUMN approval TEXT;",
    "CREATE TABLE jobs (
        n              INTEGER PRIMARY KEY AUTOINCREMENT,
        tool           TEXT NOT NULL,
        owner          TEXT NOT NULL,
        state          TEXT NOT NULL,
        created_ms     INTEGER NOT NULL,
        finished_ms    INTEGER,
        progress_count INTEGER NOT NULL DEFAULT 0,
        progress       TEXT,
        result         TEXT,
        error          TEXT,
        instance       TEXT NOT NULL
    );
    CREATE INDEX jobs_state ON jobs (state, instance);
    CREATE TABLE sequences (
        name  TEXT PRIMARY KEY,
        value INTEGER NOT NULL
    );",
    "ALTER TABLE audit ADD COLUMN parent TEXT;
    CREATE INDEX audit_parent ON audit (parent) WHERE parent IS NOT NULL;",
    // Memory: the tables, indexes and triggers of the memory tools (`crate::memory`).
    "CREATE TABLE memories (
        n           INTEGER PRIMARY KEY,
        id          TEXT NOT NULL UNIQUE,
        owner       TEXT NOT NULL,
        namespace   TEXT NOT NULL,
        kind        TEXT NOT NULL,
        day         TEXT,
        title       TEXT NOT NULL,
        text        TEXT NOT NULL,
        tags        TEXT NOT NULL,
        created_ms  INTEGER NOT NULL,
        updated_ms  INTEGER NOT NULL,
        expires_ms  INTEGER,
        deleted_ms  INTEGER,
        archived_in TEXT
    );
    CREATE INDEX memories_recent ON memories (owner, namespace, updated_ms);
    CREATE INDEX memories_gone ON memories (deleted_ms) WHERE deleted_ms IS NOT NULL;
    CREATE INDEX memories_expiry ON memories (expires_ms) WHERE expires_ms IS NOT NULL;
    CREATE INDEX memories_days ON memories (owner, namespace, day) WHERE day IS NOT NULL;
    CREATE VIRTUAL TABLE memories_fts USING fts5(
        title, text, tags, content = 'memories', content_rowid = 'n',
        tokenize = 'porter unicode61 remove_diacritics 2'
    );
    CREATE TABLE memory_usage (owner TEXT PRIMARY KEY, bytes INTEGER NOT NULL);
    CREATE TRIGGER memories_added AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts (rowid, title, text, tags)
            VALUES (new.n, new.title, new.text, new.tags);
        INSERT INTO memory_usage (owner, bytes) VALUES (new.owner, length(CAST(new.text AS BLOB)))
            ON CONFLICT (owner) DO UPDATE SET bytes = bytes + excluded.bytes;
    END;
    CREATE TRIGGER memories_removed AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, title, text, tags)
            VALUES ('delete', old.n, old.title, old.text, old.tags);
        UPDATE memory_usage SET bytes = bytes - length(CAST(old.text AS BLOB))
            WHERE owner = old.owner;
    END;
    CREATE TRIGGER memories_changed AFTER UPDATE OF title, text, tags ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, title, text, tags)
            VALUES ('delete', old.n, old.title, old.text, old.tags);
        INSERT INTO memories_fts (rowid, title, text, tags)
            VALUES (new.n, new.title, new.text, new.tags);
        UPDATE memory_usage
            SET bytes = bytes - length(CAST(old.text AS BLOB)) + length(CAST(new.text AS BLOB))
            WHERE owner = new.owner;
    END;",
    "CREATE TABLE plugin_installs (
        plugin_id    TEXT PRIMARY KEY,
        source       TEXT NOT NULL,
        sha256       TEXT,
        tree_sha256  TEXT NOT NULL,
        files        TEXT NOT NULL,
        installed_ms INTEGER NOT NULL
    );",
    "CREATE TABLE events (
        id      INTEGER PRIMARY KEY,
        kind    TEXT NOT NULL,
        time_ms INTEGER NOT NULL,
        job_id  TEXT,
        owner   TEXT,
        data    TEXT NOT NULL
    );",
    "ALTER TABLE plugin_installs ADD COLUMN dependencies TEXT;",
    // When an approved request's call ran: a yes is for one run.
    "ALTER TABLE approvals ADD COLUMN used_ms INTEGER;",
];

#[cfg(feature = "postgres")]
/// The Postgres versions as released: `toolshed_schema.version` = how many ran.
pub(super) const POSTGRES: &[&str] = &[
    "
    CREATE TABLE plugin_state (
        plugin_id    TEXT PRIMARY KEY,
        enabled      BIGINT NOT NULL,
        source       TEXT,
        sha256       TEXT,
        installed_at BIGINT,
        updated_at   BIGINT NOT NULL
    );
    CREATE TABLE config_values (
        plugin_id  TEXT NOT NULL,
        key        TEXT NOT NULL,
        value      TEXT NOT NULL,
        secret     BIGINT NOT NULL DEFAULT 0,
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (plugin_id, key)
    );
    CREATE TABLE audit (
        id          BIGSERIAL PRIMARY KEY,
        ts_ms       BIGINT NOT NULL,
        call_id     TEXT NOT NULL,
        owner       TEXT NOT NULL,
        door        TEXT NOT NULL,
        tool        TEXT NOT NULL,
        plugin      TEXT,
        args_sha256 TEXT NOT NULL,
        outcome     TEXT NOT NULL,
        error_kind  TEXT,
        duration_ms BIGINT NOT NULL,
        approval    TEXT,
        parent      TEXT
    );
    CREATE INDEX audit_ts ON audit (ts_ms);
    CREATE INDEX audit_parent ON audit (parent) WHERE parent IS NOT NULL;
    CREATE TABLE read_log (
        owner  TEXT NOT NULL,
        path   TEXT NOT NULL,
        sha256 BYTEA NOT NULL,
        ts_ms  BIGINT NOT NULL,
        PRIMARY KEY (owner, path)
    );
    CREATE INDEX read_log_ts ON read_log (ts_ms);
    CREATE TABLE plugin_grants (
        plugin_id  TEXT NOT NULL,
        \"grant\"    TEXT NOT NULL,
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (plugin_id, \"grant\")
    );
    CREATE TABLE plugin_tools (
        plugin_id  TEXT PRIMARY KEY,
        load_key   TEXT NOT NULL,
        specs      TEXT NOT NULL,
        updated_at BIGINT NOT NULL
    );
    CREATE TABLE tokens (
        id           TEXT PRIMARY KEY,
        owner        TEXT NOT NULL,
        scopes       TEXT NOT NULL,
        hash         TEXT NOT NULL,
        created_ms   BIGINT NOT NULL,
        expires_ms   BIGINT,
        last_used_ms BIGINT,
        revoked_ms   BIGINT
    );
    CREATE TABLE approvals (
        id          TEXT PRIMARY KEY,
        tool        TEXT NOT NULL,
        owner       TEXT NOT NULL,
        digest      TEXT NOT NULL,
        summary     TEXT NOT NULL,
        rule        TEXT NOT NULL,
        reason      TEXT NOT NULL,
        created_ms  BIGINT NOT NULL,
        expires_ms  BIGINT NOT NULL,
        state       TEXT NOT NULL,
        answered_by TEXT,
        answered_ms BIGINT,
        remembered  BIGINT NOT NULL DEFAULT 0
    );
    CREATE INDEX approvals_state ON approvals (state, created_ms);
    CREATE TABLE approval_grants (
        owner      TEXT NOT NULL,
        tool       TEXT NOT NULL,
        digest     TEXT NOT NULL,
        created_ms BIGINT NOT NULL,
        PRIMARY KEY (owner, tool, digest)
    );
    CREATE TABLE jobs (
        n              BIGSERIAL PRIMARY KEY,
        tool           TEXT NOT NULL,
        owner          TEXT NOT NULL,
        state          TEXT NOT NULL,
        created_ms     BIGINT NOT NULL,
        finished_ms    BIGINT,
        progress_count BIGINT NOT NULL DEFAULT 0,
        progress       TEXT,
        result         TEXT,
        error          TEXT,
        instance       TEXT NOT NULL
    );
    CREATE INDEX jobs_state ON jobs (state, instance);
    CREATE TABLE sequences (
        name  TEXT PRIMARY KEY,
        value BIGINT NOT NULL
    );
    CREATE TABLE plugin_installs (
        plugin_id    TEXT PRIMARY KEY,
        source       TEXT NOT NULL,
        sha256       TEXT,
        tree_sha256  TEXT NOT NULL,
        files        TEXT NOT NULL,
        installed_ms BIGINT NOT NULL
    );
    CREATE TABLE events (
        id      BIGINT PRIMARY KEY,
        kind    TEXT NOT NULL,
        time_ms BIGINT NOT NULL,
        job_id  TEXT,
        owner   TEXT,
        data    TEXT NOT NULL
    );",
    "
    CREATE TABLE plugin_archives (
        plugin_id   TEXT PRIMARY KEY,
        tree_sha256 TEXT NOT NULL,
        archive     BYTEA,
        updated_ms  BIGINT NOT NULL
    );",
    "
    CREATE TABLE memories (
        n           BIGSERIAL PRIMARY KEY,
        id          TEXT NOT NULL UNIQUE,
        owner       TEXT NOT NULL,
        namespace   TEXT NOT NULL,
        kind        TEXT NOT NULL,
        day         TEXT,
        title       TEXT NOT NULL,
        text        TEXT NOT NULL,
        tags        TEXT NOT NULL,
        created_ms  BIGINT NOT NULL,
        updated_ms  BIGINT NOT NULL,
        expires_ms  BIGINT,
        deleted_ms  BIGINT,
        archived_in TEXT,
        tsv         tsvector GENERATED ALWAYS AS (
            setweight(to_tsvector('english', title), 'A')
            || setweight(to_tsvector('english', tags), 'B')
            || setweight(to_tsvector('english', text), 'C')
        ) STORED
    );
    CREATE INDEX memories_search ON memories USING GIN (tsv);
    CREATE INDEX memories_recent ON memories (owner, namespace, updated_ms);
    CREATE INDEX memories_gone ON memories (deleted_ms) WHERE deleted_ms IS NOT NULL;
    CREATE INDEX memories_expiry ON memories (expires_ms) WHERE expires_ms IS NOT NULL;
    CREATE INDEX memories_days ON memories (owner, namespace, day) WHERE day IS NOT NULL;
    CREATE TABLE memory_usage (owner TEXT PRIMARY KEY, bytes BIGINT NOT NULL);
    CREATE FUNCTION toolshed_memory_usage() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP <> 'INSERT' THEN
            UPDATE memory_usage SET bytes = bytes - octet_length(OLD.text) WHERE owner = OLD.owner;
        END IF;
        IF TG_OP <> 'DELETE' THEN
            INSERT INTO memory_usage (owner, bytes) VALUES (NEW.owner, octet_length(NEW.text))
                ON CONFLICT (owner) DO UPDATE SET bytes = memory_usage.bytes + excluded.bytes;
        END IF;
        RETURN NULL;
    END $$;
    CREATE TRIGGER memories_usage AFTER INSERT OR DELETE OR UPDATE OF text, owner ON memories
        FOR EACH ROW EXECUTE FUNCTION toolshed_memory_usage();",
    "ALTER TABLE plugin_installs ADD COLUMN dependencies TEXT;",
    "ALTER TABLE approvals ADD COLUMN used_ms BIGINT;",
];
