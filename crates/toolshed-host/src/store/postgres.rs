//! The Postgres engine (`[store] url = "postgres://…"`, docs/deploy.md): the state of
//! several toolshed processes on several machines in one database.
//!
//! The store's API is synchronous and is called from async tasks, blocking-pool threads
//! and plain threads alike, so the engine does not block on the caller's async runtime:
//! each connection is driven by a thread of its own (the `postgres` crate's synchronous
//! client), and a caller leases one for a statement or a transaction, sending it the
//! statements and waiting for the answers. At most [`Pool::max`] connections are open;
//! a caller waits for a free one. A connection that broke is replaced on the next lease.
//!
//! Statements are the store's own ([`super::db`]): numbered `?N` parameters become `$N`,
//! and each connection keeps its prepared statements.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::time::Duration;

use bytes::BytesMut;
use postgres::types::{IsNull, ToSql, Type};
use postgres::{Client, NoTls, Statement};

use super::StoreError;
use super::db::{Db, Dialect, Row, SqlValue};

/// The most prepared statements a connection keeps.
const MAX_STATEMENTS: usize = 512;

/// How long a caller waits for a free connection before giving up.
const LEASE_WAIT: Duration = Duration::from_secs(30);

/// A pool of connections to one database.
pub(crate) struct Pool {
    url: String,
    max: usize,
    state: Mutex<PoolState>,
    freed: Condvar,
}

#[derive(Default)]
struct PoolState {
    idle: Vec<Worker>,
    open: usize,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("url", &redact(&self.url))
            .field("max", &self.max)
            .finish()
    }
}

/// Where `url` leads, for messages: user, hosts, ports and database, never a password
/// (whatever form the URL takes: `postgres://…` or `host=… password=…`).
pub(crate) fn redact(url: &str) -> String {
    let Ok(config) = url.parse::<postgres::Config>() else {
        return "the configured [store] url (not a Postgres connection string)".into();
    };
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|host| match host {
            postgres::config::Host::Tcp(name) => name.clone(),
            postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    let ports: Vec<String> = config.get_ports().iter().map(u16::to_string).collect();
    format!(
        "postgres://{}@{}:{}/{}",
        config.get_user().unwrap_or("(default user)"),
        hosts.join(","),
        if ports.is_empty() {
            "5432".to_string()
        } else {
            ports.join(",")
        },
        config.get_dbname().unwrap_or("(default database)")
    )
}

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the store waits for one statement's answer before it gives the connection up.
const ANSWER_WAIT: Duration = Duration::from_secs(90);

/// What every connection is set to: no statement, lock wait or idle transaction lasts
/// forever (a server that froze while holding a lock frees it).
const SESSION_LIMITS: &str = "SET statement_timeout = '60s'; SET lock_timeout = '30s'; \
                              SET idle_in_transaction_session_timeout = '120s'";

/// Connects to `url` with a connect timeout and TCP keepalives.
fn connect(url: &str) -> Result<Client, postgres::Error> {
    let mut config: postgres::Config = url.parse()?;
    config
        .connect_timeout(CONNECT_TIMEOUT)
        .keepalives(true)
        .keepalives_idle(Duration::from_secs(30));
    config.connect(NoTls)
}

enum Job {
    Execute(String, Vec<SqlValue>),
    Query(String, Vec<SqlValue>),
    Batch(String),
}

enum Answer {
    Count(u64),
    Rows(Vec<Row>),
}

/// One connection and the thread that drives it.
struct Worker {
    jobs: mpsc::Sender<Job>,
    answers: mpsc::Receiver<Result<Answer, String>>,
    alive: Arc<AtomicBool>,
}

impl Pool {
    /// A pool of at most `max` connections to `url`; opens one now to check the URL.
    pub(crate) fn connect(url: &str, max: usize) -> Result<Self, StoreError> {
        let pool = Self {
            url: url.to_string(),
            max: max.max(1),
            state: Mutex::new(PoolState::default()),
            freed: Condvar::new(),
        };
        let first = pool.lease()?;
        drop(first);
        Ok(pool)
    }

    /// A connection for one caller, until the lease is dropped.
    pub(crate) fn lease(&self) -> Result<Lease<'_>, StoreError> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let deadline = std::time::Instant::now() + LEASE_WAIT;
        loop {
            while let Some(worker) = state.idle.pop() {
                if worker.alive.load(Ordering::Acquire) {
                    return Ok(Lease {
                        pool: self,
                        worker: Some(worker),
                        in_transaction: false,
                    });
                }
                state.open -= 1;
            }
            if state.open < self.max {
                state.open += 1;
                drop(state);
                return match Worker::start(&self.url) {
                    Ok(worker) => Ok(Lease {
                        pool: self,
                        worker: Some(worker),
                        in_transaction: false,
                    }),
                    Err(e) => {
                        self.state.lock().unwrap_or_else(|p| p.into_inner()).open -= 1;
                        self.freed.notify_one();
                        Err(e)
                    }
                };
            }
            let now = std::time::Instant::now();
            if now >= deadline {
                return Err(StoreError::Db(format!(
                    "no Postgres connection came free within {} s ({} in use); raise [store] max_connections",
                    LEASE_WAIT.as_secs(),
                    self.max
                )));
            }
            state = self
                .freed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    fn give_back(&self, worker: Worker) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if worker.alive.load(Ordering::Acquire) {
            state.idle.push(worker);
        } else {
            state.open -= 1;
        }
        drop(state);
        self.freed.notify_one();
    }
}

impl Worker {
    fn start(url: &str) -> Result<Self, StoreError> {
        let (jobs, job_queue) = mpsc::channel::<Job>();
        let (answer, answers) = mpsc::channel();
        let (ready, started) = mpsc::channel::<Result<(), String>>();
        let alive = Arc::new(AtomicBool::new(true));
        let shown = redact(url);
        let url = url.to_string();
        let flag = alive.clone();
        std::thread::Builder::new()
            .name("toolshed-postgres".into())
            .spawn(move || {
                let connected = connect(&url).and_then(|mut client| {
                    client.batch_execute(SESSION_LIMITS)?;
                    Ok(client)
                });
                let mut client = match connected {
                    Ok(client) => {
                        let _ = ready.send(Ok(()));
                        client
                    }
                    Err(e) => {
                        flag.store(false, Ordering::Release);
                        let _ = ready.send(Err(message(&e)));
                        return;
                    }
                };
                let mut statements: HashMap<String, Statement> = HashMap::new();
                while let Ok(job) = job_queue.recv() {
                    let outcome = run(&mut client, &mut statements, job);
                    if client.is_closed() {
                        flag.store(false, Ordering::Release);
                    }
                    if answer.send(outcome).is_err() || client.is_closed() {
                        break;
                    }
                }
                flag.store(false, Ordering::Release);
            })
            .map_err(|e| {
                StoreError::Db(format!("cannot start a Postgres connection thread: {e}"))
            })?;
        match started.recv() {
            Ok(Ok(())) => Ok(Self {
                jobs,
                answers,
                alive,
            }),
            Ok(Err(e)) => Err(StoreError::Db(format!(
                "cannot connect to Postgres at {shown}: {e}"
            ))),
            Err(_) => Err(StoreError::Db(
                "the Postgres connection thread ended".into(),
            )),
        }
    }
}

fn run(
    client: &mut Client,
    statements: &mut HashMap<String, Statement>,
    job: Job,
) -> Result<Answer, String> {
    let mut prepared = |client: &mut Client, sql: &str| -> Result<Statement, String> {
        if let Some(statement) = statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = client.prepare(sql).map_err(|e| message(&e))?;
        if statements.len() >= MAX_STATEMENTS {
            statements.clear();
        }
        statements.insert(sql.to_string(), statement.clone());
        Ok(statement)
    };
    match job {
        Job::Batch(sql) => client
            .batch_execute(&sql)
            .map(|()| Answer::Count(0))
            .map_err(|e| message(&e)),
        Job::Execute(sql, params) => {
            let statement = prepared(client, &sql)?;
            let params: Vec<Param<'_>> = params.iter().map(Param).collect();
            let refs: Vec<&(dyn ToSql + Sync)> =
                params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
            client
                .execute(&statement, &refs)
                .map(Answer::Count)
                .map_err(|e| message(&e))
        }
        Job::Query(sql, params) => {
            let statement = prepared(client, &sql)?;
            let params: Vec<Param<'_>> = params.iter().map(Param).collect();
            let refs: Vec<&(dyn ToSql + Sync)> =
                params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
            let rows = client.query(&statement, &refs).map_err(|e| message(&e))?;
            rows.iter()
                .map(row_of)
                .collect::<Result<Vec<_>, _>>()
                .map(Answer::Rows)
        }
    }
}

/// A Postgres error as a message: the server's own when it sent one.
fn message(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => {
            // The kind ("error connecting to server"), then why ("Connection refused").
            let mut text = e.to_string();
            let mut cause = std::error::Error::source(e);
            while let Some(inner) = cause {
                text.push_str(": ");
                text.push_str(&inner.to_string());
                cause = inner.source();
            }
            text
        }
    }
}

fn row_of(row: &postgres::Row) -> Result<Row, String> {
    let mut values = Vec::with_capacity(row.len());
    for (i, column) in row.columns().iter().enumerate() {
        let ty = column.type_();
        let wrong = |e: postgres::Error| format!("column {}: {e}", column.name());
        let value = match *ty {
            Type::INT8 => row
                .try_get::<_, Option<i64>>(i)
                .map_err(wrong)?
                .map(SqlValue::Int),
            Type::INT4 => row
                .try_get::<_, Option<i32>>(i)
                .map_err(wrong)?
                .map(|v| SqlValue::Int(v.into())),
            Type::INT2 => row
                .try_get::<_, Option<i16>>(i)
                .map_err(wrong)?
                .map(|v| SqlValue::Int(v.into())),
            Type::BOOL => row
                .try_get::<_, Option<bool>>(i)
                .map_err(wrong)?
                .map(SqlValue::from),
            Type::FLOAT8 => row
                .try_get::<_, Option<f64>>(i)
                .map_err(wrong)?
                .map(SqlValue::Real),
            Type::FLOAT4 => row
                .try_get::<_, Option<f32>>(i)
                .map_err(wrong)?
                .map(|v| SqlValue::Real(v.into())),
            Type::BYTEA => row
                .try_get::<_, Option<Vec<u8>>>(i)
                .map_err(wrong)?
                .map(SqlValue::Blob),
            Type::TEXT | Type::VARCHAR | Type::NAME | Type::BPCHAR => row
                .try_get::<_, Option<String>>(i)
                .map_err(wrong)?
                .map(SqlValue::Text),
            ref other => {
                return Err(format!(
                    "column {} has type {other}, which the store does not read; cast it in the query",
                    column.name()
                ));
            }
        };
        values.push(value.unwrap_or(SqlValue::Null));
    }
    Ok(Row(values))
}

/// A [`SqlValue`] as a Postgres parameter of whatever type the statement wants.
#[derive(Debug)]
struct Param<'a>(&'a SqlValue);

impl ToSql for Param<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        let refused = || -> Box<dyn std::error::Error + Sync + Send> {
            format!(
                "a {} value cannot be sent as a {ty} parameter",
                kind(self.0)
            )
            .into()
        };
        match self.0 {
            SqlValue::Null => Ok(IsNull::Yes),
            SqlValue::Int(v) => match *ty {
                Type::INT8 => v.to_sql(ty, out),
                Type::INT4 => i32::try_from(*v)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(*v)?.to_sql(ty, out),
                Type::BOOL => (*v != 0).to_sql(ty, out),
                Type::FLOAT8 => (*v as f64).to_sql(ty, out),
                Type::TEXT | Type::VARCHAR => v.to_string().to_sql(ty, out),
                _ => Err(refused()),
            },
            SqlValue::Real(v) => match *ty {
                Type::FLOAT8 => v.to_sql(ty, out),
                Type::FLOAT4 => (*v as f32).to_sql(ty, out),
                _ => Err(refused()),
            },
            SqlValue::Text(v) if <&str as ToSql>::accepts(ty) => v.as_str().to_sql(ty, out),
            SqlValue::Blob(v) if *ty == Type::BYTEA => v.as_slice().to_sql(ty, out),
            SqlValue::Text(_) | SqlValue::Blob(_) => Err(refused()),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
}

fn kind(value: &SqlValue) -> &'static str {
    match value {
        SqlValue::Null => "null",
        SqlValue::Int(_) => "integer",
        SqlValue::Real(_) => "real",
        SqlValue::Text(_) => "text",
        SqlValue::Blob(_) => "bytes",
    }
}

/// `?N` parameters as Postgres numbers them (`$N`); quoted text is left alone.
pub(crate) fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut quoted = false;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                quoted = !quoted;
                out.push(c);
            }
            '?' if !quoted && chars.peek().is_some_and(char::is_ascii_digit) => out.push('$'),
            c => out.push(c),
        }
    }
    out
}

/// A leased connection: statements run on it in order; dropping the lease gives it back
/// (rolling back a transaction left open).
pub(crate) struct Lease<'a> {
    pool: &'a Pool,
    worker: Option<Worker>,
    in_transaction: bool,
}

impl Lease<'_> {
    fn ask(&mut self, job: Job) -> Result<Answer, StoreError> {
        let lost = || StoreError::Db("the connection to Postgres was lost".into());
        let worker = self.worker.as_ref().ok_or_else(lost)?;
        worker.jobs.send(job).map_err(|_| lost())?;
        match worker.answers.recv_timeout(ANSWER_WAIT) {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(message)) => Err(StoreError::Db(format!("Postgres: {message}"))),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // The connection is given up: its thread ends once the statement does.
                worker.alive.store(false, Ordering::Release);
                self.in_transaction = false;
                Err(StoreError::Db(format!(
                    "Postgres did not answer within {} s",
                    ANSWER_WAIT.as_secs()
                )))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(lost()),
        }
    }

    /// Runs statements given as one text (migrations, `BEGIN`).
    pub(crate) fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        self.ask(Job::Batch(sql.to_string())).map(|_| ())
    }

    /// Starts a transaction.
    pub(crate) fn begin(&mut self) -> Result<(), StoreError> {
        self.batch("BEGIN")?;
        self.in_transaction = true;
        Ok(())
    }

    /// Commits the transaction.
    pub(crate) fn commit(&mut self) -> Result<(), StoreError> {
        self.in_transaction = false;
        self.batch("COMMIT")
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if self.in_transaction {
            let _ = self.batch("ROLLBACK");
        }
        if let Some(worker) = self.worker.take() {
            self.pool.give_back(worker);
        }
    }
}

impl Db for Lease<'_> {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn execute(&mut self, sql: &str, params: &[SqlValue]) -> Result<u64, StoreError> {
        match self.ask(Job::Execute(numbered(sql), params.to_vec()))? {
            Answer::Count(n) => Ok(n),
            Answer::Rows(rows) => Ok(rows.len() as u64),
        }
    }

    fn query(&mut self, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>, StoreError> {
        match self.ask(Job::Query(numbered(sql), params.to_vec()))? {
            Answer::Rows(rows) => Ok(rows),
            Answer::Count(_) => Ok(Vec::new()),
        }
    }
}

/// The channel toolsheds sharing a database tell each other on that plugin choices changed.
pub(crate) const CHANGES_CHANNEL: &str = "toolshed_changes";

/// Tells the others sharing the database that plugin choices changed; `me` is the sender's
/// id, so that it can ignore its own word.
pub(crate) fn notify_changed(db: &mut dyn Db, me: &str) -> Result<(), StoreError> {
    db.query(
        "SELECT pg_notify(?1, ?2)::text",
        &[SqlValue::from(CHANGES_CHANNEL), SqlValue::from(me)],
    )?;
    Ok(())
}

/// The channel a revoked agent token's id is said on, so that every toolshed forgets it.
pub(crate) const TOKENS_CHANNEL: &str = "toolshed_tokens";

/// Tells every toolshed sharing the database (this one too) that token `id` is revoked.
pub(crate) fn notify_revoked(db: &mut dyn Db, id: &str) -> Result<(), StoreError> {
    db.query(
        "SELECT pg_notify(?1, ?2)::text",
        &[SqlValue::from(TOKENS_CHANNEL), SqlValue::from(id)],
    )?;
    Ok(())
}

/// The channel toolsheds sharing a database tell each other on that they stored an event.
pub(crate) const EVENTS_CHANNEL: &str = "toolshed_events";

/// Tells the others that event `id` is stored (`<id> <sender>`).
pub(crate) fn notify_event(db: &mut dyn Db, id: u64, me: &str) -> Result<(), StoreError> {
    db.query(
        "SELECT pg_notify(?1, ?2)::text",
        &[
            SqlValue::from(EVENTS_CHANNEL),
            SqlValue::from(format!("{id} {me}")),
        ],
    )?;
    Ok(())
}

/// Listens on [`CHANGES_CHANNEL`] on a connection and thread of its own, telling `changes`
/// of every word from a toolshed other than `me`, and once each time it starts listening
/// (what was said before is not heard). Ends within a second of the store being dropped.
pub(crate) fn listen(
    url: &str,
    me: String,
    changes: std::sync::Weak<super::Changes>,
) -> Result<(), StoreError> {
    use postgres::fallible_iterator::FallibleIterator as _;
    let url = url.to_string();
    // Tells the store; `false` once it is gone.
    let heard = move |changes: &std::sync::Weak<super::Changes>| match changes.upgrade() {
        Some(changes) => {
            changes.heard();
            true
        }
        None => false,
    };
    std::thread::Builder::new()
        .name("toolshed-listen".into())
        .spawn(move || {
            loop {
                let connected = connect(&url).and_then(|mut client| {
                    client.batch_execute(&format!(
                        "LISTEN {CHANGES_CHANNEL}; LISTEN {EVENTS_CHANNEL}; LISTEN {TOKENS_CHANNEL}"
                    ))?;
                    Ok(client)
                });
                let mut client = match connected {
                    Ok(client) => client,
                    Err(e) => {
                        if changes.strong_count() == 0 {
                            return;
                        }
                        tracing::warn!(error = %message(&e), "cannot listen for other toolsheds' plugin changes; retrying");
                        std::thread::sleep(Duration::from_secs(2));
                        continue;
                    }
                };
                // What was said before this connection listened (at start, or while it was
                // down) is not heard: look once, as if it had been, and forget the tokens
                // read meanwhile (a revocation may have gone unheard).
                if let Some(changes) = changes.upgrade() {
                    changes.tokens.clear();
                }
                if !heard(&changes) {
                    return;
                }
                loop {
                    let word = client
                        .notifications()
                        .timeout_iter(Duration::from_secs(1))
                        .next();
                    match word {
                        Ok(Some(word)) if word.channel() == EVENTS_CHANNEL => {
                            let Some(changes) = changes.upgrade() else {
                                return;
                            };
                            if let Some((id, from)) = word.payload().split_once(' ')
                                && from != me
                                && let Ok(id) = id.parse()
                            {
                                changes.heard_event(id);
                            }
                        }
                        Ok(Some(word)) if word.channel() == TOKENS_CHANNEL => {
                            let Some(changes) = changes.upgrade() else {
                                return;
                            };
                            changes.tokens.forget(word.payload());
                        }
                        Ok(Some(word)) if word.payload() != me => {
                            if !heard(&changes) {
                                return;
                            }
                        }
                        Ok(Some(_)) => {}
                        Ok(None) if changes.strong_count() == 0 => return,
                        Ok(None) if client.is_closed() => break,
                        Ok(None) => {}
                        Err(e) => {
                            tracing::warn!(error = %message(&e), "lost the Postgres connection that listens for plugin changes; reconnecting");
                            break;
                        }
                    }
                }
            }
        })
        .map_err(|e| StoreError::Db(format!("cannot start the Postgres listener thread: {e}")))?;
    Ok(())
}

/// The advisory lock replicas take while migrating, so that one migrates and the others
/// wait (any constant; this one spells "tshd").
const MIGRATION_LOCK: i64 = 0x7473_6864;

/// Brings the database's schema up to this build's: under an advisory lock, so that
/// replicas starting together migrate once; refuses a database newer than this build.
pub(crate) fn migrate(pool: &Pool) -> Result<(), StoreError> {
    let mut db = pool.lease()?;
    db.begin()?;
    db.query(
        "SELECT pg_advisory_xact_lock(?1)::text",
        &[SqlValue::Int(MIGRATION_LOCK)],
    )?;
    db.batch("CREATE TABLE IF NOT EXISTS toolshed_schema (version BIGINT NOT NULL)")?;
    let found = db
        .query_opt("SELECT version FROM toolshed_schema", &[])?
        .map(|row| row.int(0))
        .transpose()?;
    let version = usize::try_from(found.unwrap_or(0)).unwrap_or(usize::MAX);
    let versions = super::schema::postgres::rendered();
    if version > versions.len() {
        return Err(StoreError::Db(format!(
            "the Postgres database has toolshed schema version {version}, newer than this build \
             knows ({}); upgrade toolshed or point [store] url at another database",
            versions.len()
        )));
    }
    for sql in &versions[version..] {
        db.batch(sql)?;
    }
    if found.is_none() {
        db.execute(
            "INSERT INTO toolshed_schema (version) VALUES (?1)",
            &[SqlValue::from(versions.len())],
        )?;
    } else {
        db.execute(
            "UPDATE toolshed_schema SET version = ?1",
            &[SqlValue::from(versions.len())],
        )?;
    }
    db.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_renumbered_outside_quotes() {
        assert_eq!(
            numbered("SELECT a FROM t WHERE b = ?1 AND c = '?2' AND d = ?12"),
            "SELECT a FROM t WHERE b = $1 AND c = '?2' AND d = $12"
        );
    }

    #[test]
    fn passwords_are_hidden() {
        for url in [
            "postgres://toolshed:s3cret@db:5432/toolshed",
            "host=db port=5432 user=toolshed password=s3cret dbname=toolshed",
            "postgres://toolshed@db:5432/toolshed?password=s3cret",
        ] {
            assert_eq!(redact(url), "postgres://toolshed@db:5432/toolshed", "{url}");
        }
        assert!(!redact("nonsense s3cret=").contains("s3cret"));
    }
}
