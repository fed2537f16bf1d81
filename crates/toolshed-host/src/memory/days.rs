//! The daily journal (one memory per owner and day, appended to) and compaction (many
//! memories of a namespace replaced by one summary, in two checked steps).

use super::*;

impl Memories {
    /// Today's date (`YYYY-MM-DD`) in the configured time zone.
    fn today(&self) -> Result<String> {
        let tz = match &self.config.time_zone {
            Some(name) => jiff::tz::TimeZone::get(name).map_err(|e| {
                MemoryError::Invalid(format!(
                    "[memory] time_zone `{name}` is not a time zone ({e}); use an IANA name such as Europe/Paris"
                ))
            })?,
            None => jiff::tz::TimeZone::system(),
        };
        let at = jiff::Timestamp::from_millisecond(self.now())
            .map_err(|e| MemoryError::Invalid(format!("the clock is out of range: {e}")))?;
        Ok(at.to_zoned_datetime(tz).date().to_string())
    }

    /// Appends `text` to the caller's journal entry of today, creating it if needed.
    pub fn append_daily(&self, owner: &str, text: &str) -> Result<Memory> {
        let text = text.trim();
        if text.is_empty() {
            return Err(MemoryError::Invalid(
                "`text` is empty: give what to add to today's journal".into(),
            ));
        }
        let day = self.today()?;
        let scope = scope_of(owner);
        let now = self.now();
        let max = self.config.max_bytes;
        let max_owner = self.config.max_owner_bytes;
        let text = text.to_string();
        self.write(Box::new(move |db| {
            let existing = db.query_opt(
                "SELECT n, text FROM memories m WHERE owner = ?1 AND namespace = ''
                 AND day = ?2 AND kind = 'daily' AND deleted_ms IS NULL
                 AND archived_in IS NULL",
                args![&scope, &day],
            )?;
            let Some(existing) = existing else {
                if let Err(e) = check_room(db, &scope, text.len() as i64, max_owner)? {
                    return Ok(Err(e));
                }
                let memory = row_memory(&db.query_one(
                    &format!(
                        "INSERT INTO memories (id, owner, namespace, kind, day, title, text,
                         tags, created_ms, updated_ms)
                         VALUES (?1, ?2, '', 'daily', ?3, ?4, ?5, ' journal ', ?6, ?6)
                         RETURNING {COLUMNS}"
                    ),
                    args![new_id("m"), &scope, &day, format!("Journal {day}"), &text, now],
                )?)?;
                return Ok(Ok(memory));
            };
            let (n, old) = (existing.int(0)?, existing.text(1)?);
            let joined = format!("{old}\n{text}");
            if joined.len() as u64 > max {
                return Ok(Err(MemoryError::Invalid(format!(
                    "today's journal would be {} bytes, past the {max} of one memory \
                     ([memory] max_bytes): store this as a memory of its own",
                    joined.len()
                ))));
            }
            if let Err(e) = check_room(db, &scope, text.len() as i64 + 1, max_owner)? {
                return Ok(Err(e));
            }
            let memory = row_memory(&db.query_one(
                &format!(
                    "UPDATE memories SET text = ?2, updated_ms = ?3 WHERE n = ?1 RETURNING {COLUMNS}"
                ),
                args![n, joined, now],
            )?)?;
            Ok(Ok(memory))
        }))
    }

    /// The caller's present memories of `namespace` changed before `before_ms`, oldest
    /// first, within `[memory] compact_bytes` (at least one), and the token that names
    /// exactly them.
    fn gather(
        &self,
        db: &mut dyn Db,
        scope: &str,
        namespace: &str,
        before_ms: i64,
    ) -> std::result::Result<(Vec<Memory>, String), StoreError> {
        let now = self.now();
        let rows = db.query(
            &format!(
                "SELECT {COLUMNS} FROM memories m WHERE m.owner = ?1 AND m.namespace = ?2
                 AND {} AND m.updated_ms < ?4 ORDER BY m.updated_ms, m.n",
                live(3)
            ),
            args![scope, namespace, now, before_ms],
        )?;
        let mut picked = Vec::new();
        let mut bytes = 0u64;
        for row in &rows {
            let memory = row_memory(row)?;
            bytes += memory.text.len() as u64;
            if !picked.is_empty() && bytes > self.config.compact_bytes {
                break;
            }
            picked.push(memory);
        }
        let token = compaction_token(scope, namespace, &picked);
        Ok((picked, token))
    }

    /// Compaction, first step: the material to summarise and the token for the second.
    pub fn compact_material(
        &self,
        owner: &str,
        namespace: Option<&str>,
        before_ms: Option<i64>,
    ) -> Result<(Vec<Memory>, String)> {
        let namespace = checked_namespace(namespace)?;
        let scope = self.owner_in(owner, &namespace);
        let before = before_ms.unwrap_or(i64::MAX);
        Ok(self
            .store
            .tx(|db| self.gather(db, &scope, &namespace, before))?)
    }

    /// Compaction, second step: replaces the memories `token` names with `summary`, in one
    /// transaction; each replaced memory is kept, archived under the summary's id.
    pub fn compact_apply(
        &self,
        owner: &str,
        namespace: Option<&str>,
        before_ms: Option<i64>,
        token: &str,
        summary: &str,
    ) -> Result<(Memory, usize)> {
        let summary = summary.trim();
        if summary.is_empty() {
            return Err(MemoryError::Invalid("`summary` is empty".into()));
        }
        self.check_size(summary)?;
        let namespace = checked_namespace(namespace)?;
        let scope = self.owner_in(owner, &namespace);
        let before = before_ms.unwrap_or(i64::MAX);
        let now = self.now();
        let max_owner = self.config.max_owner_bytes;
        let outcome = self.store.tx(|db| {
            serialize(db, locks::MEMORY)?;
            let (picked, expected) = self.gather(db, &scope, &namespace, before)?;
            if picked.is_empty() {
                return Ok(Err(MemoryError::Conflict(
                    "there is nothing to compact in this namespace (and before that time)".into(),
                )));
            }
            if expected != token {
                return Ok(Err(MemoryError::Conflict(
                    "the memories to compact changed since `token` was given (or it belongs to \
                     other arguments): call memory_compact_summary again without `summary` for \
                     the current material"
                        .into(),
                )));
            }
            if let Err(e) = check_room(db, &scope, summary.len() as i64, max_owner)? {
                return Ok(Err(e));
            }
            let id = new_id("m");
            let first = picked.first().map_or(now, |m| m.updated_ms);
            let last = picked.last().map_or(now, |m| m.updated_ms);
            let title = format!(
                "Summary of {} memories ({} to {})",
                picked.len(),
                day_of(first),
                day_of(last)
            );
            db.execute(
                "INSERT INTO memories (id, owner, namespace, kind, title, text, tags, created_ms,
                 updated_ms) VALUES (?1, ?2, ?3, 'summary', ?4, ?5, ' summary ', ?6, ?6)",
                args![&id, &scope, &namespace, title, summary, now],
            )?;
            for memory in &picked {
                db.execute(
                    "UPDATE memories SET archived_in = ?2 WHERE id = ?1 AND archived_in IS NULL",
                    args![&memory.id, &id],
                )?;
            }
            Ok(Ok((id, picked.len())))
        })??;
        let (id, count) = outcome;
        Ok((self.get(owner, &id)?, count))
    }
}

fn day_of(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.to_string()[..10].to_string())
        .unwrap_or_default()
}

/// The token naming exactly `picked` of `scope`/`namespace`: a digest of their ids and
/// versions, so that anything changed between the two steps is noticed.
fn compaction_token(scope: &str, namespace: &str, picked: &[Memory]) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    hash.update(scope.as_bytes());
    hash.update([0]);
    hash.update(namespace.as_bytes());
    for memory in picked {
        hash.update([0]);
        hash.update(memory.id.as_bytes());
        hash.update(memory.updated_ms.to_le_bytes());
    }
    let digest = hash.finalize();
    let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    format!("c-{hex}")
}
