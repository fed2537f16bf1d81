//! Identity: who is calling, and what their credential lets them do.
//!
//! A door authenticates a caller and hands the pipeline a [`Caller`]. The server's single
//! token (`<data-dir>/token`) is the **admin** credential: it may name any owner and do
//! anything, as before. **Agent tokens** (`toolshed token create --owner alice`) name their
//! owner: a call made with one runs as that owner, and a header or `_meta` handle may only
//! narrow it to a sub-owner (`alice/task-7`), never name another. Scopes limit what a
//! token may do (`tools:call`, `tools:list`, `plugins:admin`, `approvals:answer`,
//! `audit:read`).
//!
//! Agent tokens look like `tsk_<id>_<secret>`: the id finds the row, and only a SHA-256
//! digest of the secret is stored, compared in constant time. Revoking a token takes effect
//! on the next request that presents it: every request is checked against the database.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use sha2::{Digest, Sha256};
use toolshed_core::OwnerId;

use crate::review::{CompiledRules, Matcher, RuleError};
use crate::store::db::{Row, args, locks, serialize};
use crate::store::{StateStore, StoreError, now_ms};

/// The prefix of every agent token.
pub const TOKEN_PREFIX: &str = "tsk_";

/// The scopes a token may hold.
pub const SCOPES: &[&str] = &[
    "tools:call",
    "tools:list",
    "plugins:admin",
    "approvals:answer",
    "audit:read",
    "metrics:read",
    // How the token's MCP clients are given the tools (docs/mcp.md#presentation).
    "presentation:native",
    "presentation:code",
    "presentation:both",
];

/// The scopes of a token created without `--scope`.
pub const DEFAULT_SCOPES: &[&str] = &["tools:call", "tools:list"];

/// The most agent tokens kept (revoked ones included).
pub const MAX_TOKENS: usize = 10_000;

/// The longest owner id, sub-owners included.
pub const MAX_OWNER_LEN: usize = 128;

/// How often `last_used` is written for one token at most.
const LAST_USED_EVERY_MS: i64 = 60_000;

/// Who is calling, as a door authenticated them.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The owner a call runs as when it names none.
    pub owner: OwnerId,
    /// The agent token's id; `None` for the admin credential (or a local, trusted door).
    pub token_id: Option<String>,
    /// What it may do; `None`: everything (admin).
    pub scopes: Option<Vec<String>>,
    /// The tools it may see and call, from its `tool:RULE` scopes; `None`: all.
    pub tools: Option<Arc<CompiledRules>>,
}

impl Caller {
    /// The admin credential (or a trusted local door), calling as `owner` by default.
    pub fn admin(owner: OwnerId) -> Self {
        Self {
            owner,
            token_id: None,
            scopes: None,
            tools: None,
        }
    }

    /// Whether this caller is an agent token's (may only act as its own owner).
    pub fn is_agent(&self) -> bool {
        self.token_id.is_some()
    }

    /// Whether the caller holds `scope`.
    pub fn allows(&self, scope: &str) -> bool {
        self.scopes
            .as_ref()
            .is_none_or(|s| s.iter().any(|have| have == scope))
    }

    /// `Ok` when the caller holds `scope`, else why it is refused.
    pub fn require(&self, scope: &str) -> Result<(), IdentityError> {
        if self.allows(scope) {
            Ok(())
        } else {
            Err(IdentityError::MissingScope {
                scope: scope.to_string(),
                owner: self.owner.0.clone(),
            })
        }
    }

    /// The owner a call runs as when it asks for `requested` (a header, `_meta`, `--owner`):
    /// the admin may name anyone; an agent token only itself or a sub-owner of itself.
    pub fn owner_for(&self, requested: Option<&str>) -> Result<OwnerId, IdentityError> {
        let Some(requested) = requested else {
            return Ok(self.owner.clone());
        };
        check_owner(requested)?;
        if !self.is_agent() || within(requested, &self.owner.0) {
            return Ok(OwnerId::new(requested));
        }
        Err(IdentityError::NotYours {
            owner: self.owner.0.clone(),
            requested: requested.to_string(),
        })
    }

    /// Whether a thing owned by `owner` is this caller's to see (the admin sees all).
    pub fn owns(&self, owner: &str) -> bool {
        !self.is_agent() || within(owner, &self.owner.0)
    }
}

/// Whether `owner` is `base` or a sub-owner of it (`base/…`).
fn within(owner: &str, base: &str) -> bool {
    OwnerId::new(base).covers(owner)
}

/// `Ok` when `owner` is a usable owner id: 1 to [`MAX_OWNER_LEN`] letters, digits and
/// `. _ : @ -`, in `/`-separated non-empty parts.
pub fn check_owner(owner: &str) -> Result<(), IdentityError> {
    let ok = !owner.is_empty()
        && owner.len() <= MAX_OWNER_LEN
        && owner.split('/').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b".-_:@".contains(&b))
        });
    if ok {
        Ok(())
    } else {
        Err(IdentityError::InvalidOwner(
            owner.chars().take(MAX_OWNER_LEN).collect(),
        ))
    }
}

/// `Ok` when an agent token (or an OAuth token's claim) may act as `owner`: a valid owner
/// that is not one toolshed's doors use themselves — `rest` (REST calls that name no owner),
/// `cli` (`toolshed call`), `local` (the local user's memories), `mcp-http` (stateless MCP
/// requests), `mcp-…` (an MCP connection's own owner) — whose jobs, tasks, sessions and
/// memories such a token would otherwise see and change.
pub fn check_agent_owner(owner: &str) -> Result<(), IdentityError> {
    check_owner(owner)?;
    let base = owner.split('/').next().unwrap_or_default();
    if matches!(base, "rest" | "cli" | "local") || base.starts_with("mcp-") {
        return Err(IdentityError::ReservedOwner(base.to_string()));
    }
    Ok(())
}

/// The prefix of a scope that limits the tools a token may use (`tool:group:web`).
pub const TOOL_SCOPE: &str = "tool:";

/// The prefix of a scope that narrows the sandbox mode of a token's calls
/// (`sandbox:read-only`).
pub const SANDBOX_SCOPE: &str = "sandbox:";

/// The prefix of a scope that pins a token to one workspace (`workspace:/srv/app`,
/// `workspace:ssh://ci@build/srv/app`): its calls run there and nowhere else.
pub const WORKSPACE_SCOPE: &str = "workspace:";

/// Checks scope names; an error names the bad one and the valid ones.
pub fn check_scopes(scopes: &[String]) -> Result<(), IdentityError> {
    let invalid = |scope: &str, reason: String| IdentityError::InvalidScope {
        scope: scope.to_string(),
        reason,
    };
    let pins = scopes
        .iter()
        .filter(|s| s.starts_with(WORKSPACE_SCOPE))
        .count();
    for scope in scopes {
        if let Some(place) = scope.strip_prefix(WORKSPACE_SCOPE) {
            if pins > 1 {
                return Err(invalid(
                    scope,
                    "a token works in one workspace; give one workspace: scope".into(),
                ));
            }
            check_workspace_pin(place).map_err(|e| invalid(scope, e.to_string()))?;
        } else if let Some(rule) = scope.strip_prefix(TOOL_SCOPE) {
            Matcher::parse(rule).map_err(|e| invalid(scope, e.to_string()))?;
        } else if let Some(mode) = scope.strip_prefix(SANDBOX_SCOPE) {
            match toolshed_ops::sandbox::SandboxMode::parse(mode) {
                Ok(toolshed_ops::sandbox::SandboxMode::FullAccess) => {
                    return Err(invalid(
                        scope,
                        "a token can only narrow the sandbox; use sandbox:read-only or \
                         sandbox:workspace-write"
                            .into(),
                    ));
                }
                Ok(_) => {}
                Err(e) => return Err(invalid(scope, e.to_string())),
            }
        } else if !SCOPES.contains(&scope.as_str()) {
            return Err(IdentityError::UnknownScope(scope.clone()));
        }
    }
    Ok(())
}

/// Why a place cannot be a pinned workspace; the message names it and what to give.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PinError {
    /// It has a comma (scopes are kept comma-separated).
    #[error(
        "workspace `{0}` has a comma, which a pinned workspace may not have; rename the \
         directory or link to it"
    )]
    Comma(String),
    /// Neither an absolute path nor a remote URL.
    #[error(
        "workspace `{0}` is neither an absolute directory nor an ssh://, docker:// or \
         podman:// URL; name it by one of those"
    )]
    NotAbsolute(String),
    /// A remote URL that does not parse.
    #[error("{0}")]
    Url(String),
    /// A directory that is not there.
    #[error("workspace `{0}` is not a directory; create it first")]
    NotADirectory(String),
}

/// `Ok` when `place` can name a workspace a token or a profile is pinned to: an absolute
/// directory or an `ssh://`, `docker://` or `podman://` URL, without a comma (scopes are
/// kept comma-separated). Nothing is opened.
pub fn check_workspace_pin(place: &str) -> Result<(), PinError> {
    if place.contains(',') {
        return Err(PinError::Comma(place.to_string()));
    }
    if toolshed_ops::remote::url::is_remote(place) {
        return toolshed_ops::remote::url::RemoteUrl::parse(place)
            .map(drop)
            .map_err(|e| PinError::Url(e.to_string()));
    }
    if !std::path::Path::new(place).is_absolute() {
        return Err(PinError::NotAbsolute(place.to_string()));
    }
    Ok(())
}

/// The one spelling of a pinned workspace, as hosts name theirs
/// ([`crate::Host::workspace_name`]): a URL as it reads once parsed; a directory by its
/// real path, which must exist.
// Resolves the directory's links, as the host does when it opens it.
#[allow(clippy::disallowed_methods)]
pub fn workspace_pin(place: &str) -> Result<String, PinError> {
    let place = place.trim();
    check_workspace_pin(place)?;
    if toolshed_ops::remote::url::is_remote(place) {
        return toolshed_ops::remote::url::RemoteUrl::parse(place)
            .map(|url| url.display())
            .map_err(|e| PinError::Url(e.to_string()));
    }
    let real = std::fs::canonicalize(place)
        .ok()
        .filter(|p| p.is_dir())
        .ok_or_else(|| PinError::NotADirectory(place.to_string()))?;
    let real = real.to_string_lossy().into_owned();
    check_workspace_pin(&real)?;
    Ok(real)
}

/// Why an owner, a scope or an act of a caller is refused; the message says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    /// The caller's token lacks a scope the act needs.
    #[error(
        "this token lacks the `{scope}` scope; create one with `toolshed token create --owner \
         {owner} --scope {scope}`"
    )]
    MissingScope {
        /// The scope needed.
        scope: String,
        /// The token's owner.
        owner: String,
    },
    /// An agent token asked to act as an owner that is not itself or a sub-owner of it.
    #[error(
        "this token belongs to `{owner}` and may not act as `{requested}`; name `{owner}` or \
         a sub-owner such as `{owner}/task-1`"
    )]
    NotYours {
        /// The token's owner.
        owner: String,
        /// The owner asked for.
        requested: String,
    },
    /// Not an owner id (shown cut to [`MAX_OWNER_LEN`] characters).
    #[error(
        "owner `{0}` is not valid: use 1 to {MAX_OWNER_LEN} letters, digits and . _ : @ -, \
         with / between the parts of a sub-owner (alice/task-7)"
    )]
    InvalidOwner(String),
    /// An owner the doors use themselves, which an agent token may not take.
    #[error(
        "owner `{0}` is reserved: toolshed's doors act as it for callers that name no owner; \
         choose another name"
    )]
    ReservedOwner(String),
    /// A `tool:` or `sandbox:` scope whose value is not valid.
    #[error("scope `{scope}`: {reason}")]
    InvalidScope {
        /// The scope as given.
        scope: String,
        /// What is wrong with its value.
        reason: String,
    },
    /// Not a scope at all.
    #[error(
        "`{0}` is not a scope; use {scopes}, or tool:RULE (a tool name glob, tool:group:web, \
         tool:danger:low, …) to limit the tools it may use",
        scopes = SCOPES.join(", ")
    )]
    UnknownScope(String),
}

/// The tools `scopes` limit a token to: `None` when no `tool:` scope is given; an error
/// when a stored rule does not compile (they are checked when the token is made).
fn tool_rules(scopes: &[String]) -> Result<Option<Arc<CompiledRules>>, RuleError> {
    let allow: Vec<String> = scopes
        .iter()
        .filter_map(|s| s.strip_prefix(TOOL_SCOPE))
        .map(str::to_string)
        .collect();
    let sandbox = scopes
        .iter()
        .filter_map(|s| s.strip_prefix(SANDBOX_SCOPE))
        .filter_map(|m| toolshed_ops::sandbox::SandboxMode::parse(m).ok())
        .min();
    let workspace = scopes
        .iter()
        .find_map(|s| s.strip_prefix(WORKSPACE_SCOPE))
        .map(str::to_string);
    let mut rules = CompiledRules::allow_only("token scope", allow)?;
    if sandbox.is_some() || workspace.is_some() {
        let rules = rules.get_or_insert(CompiledRules::compile(
            "token scope",
            &crate::review::ReviewRules::default(),
        )?);
        rules.sandbox = sandbox;
        rules.workspace = workspace;
    }
    Ok(rules.map(Arc::new))
}

/// An agent token as stored: everything but the secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TokenRecord {
    /// Its id (the part after `tsk_`).
    pub id: String,
    /// The owner it acts as.
    pub owner: String,
    /// What it may do.
    pub scopes: Vec<String>,
    /// When it was created (Unix ms).
    pub created_ms: i64,
    /// When it stops working (Unix ms), if ever.
    pub expires_ms: Option<i64>,
    /// When it was last presented (Unix ms, to the minute).
    pub last_used_ms: Option<i64>,
    /// When it was revoked (Unix ms).
    pub revoked_ms: Option<i64>,
}

impl TokenRecord {
    /// The workspace this token is pinned to (its `workspace:` scope), if any.
    pub fn workspace(&self) -> Option<&str> {
        self.scopes
            .iter()
            .find_map(|s| s.strip_prefix(WORKSPACE_SCOPE))
    }

    /// The caller this token authenticates.
    pub fn caller(&self) -> Caller {
        let (scopes, tools) = match tool_rules(&self.scopes) {
            Ok(tools) => (self.scopes.clone(), tools),
            // Fails closed: no scope at all, so it may neither list nor call.
            Err(e) => {
                tracing::warn!(token = %self.id, error = %e, "a stored token scope does not compile");
                (Vec::new(), None)
            }
        };
        Caller {
            owner: OwnerId::new(self.owner.clone()),
            token_id: Some(self.id.clone()),
            scopes: Some(scopes),
            tools,
        }
    }
}

/// A token just created: its record and the secret, shown once.
#[derive(Debug)]
pub struct NewToken {
    /// The stored record.
    pub record: TokenRecord,
    /// The whole token to give the agent (`tsk_<id>_<secret>`); not stored.
    pub token: String,
}

fn random_hex(bytes: usize) -> Result<String, StoreError> {
    toolshed_core::secret::random_hex(bytes).map_err(|e| StoreError::Open {
        path: "token".into(),
        message: e.to_string(),
    })
}

fn digest(secret: &str) -> String {
    Sha256::digest(secret.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn record(row: &Row) -> Result<TokenRecord, StoreError> {
    let scopes = row.text(2)?;
    Ok(TokenRecord {
        id: row.text(0)?,
        owner: row.text(1)?,
        scopes: scopes
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
        created_ms: row.int(3)?,
        expires_ms: row.opt_int(4)?,
        last_used_ms: row.opt_int(5)?,
        revoked_ms: row.opt_int(6)?,
    })
}

const COLUMNS: &str = "id, owner, scopes, created_ms, expires_ms, last_used_ms, revoked_ms";

impl StateStore {
    /// Creates an agent token for `owner` with `scopes` (the default ones when empty),
    /// expiring after `expires` if given.
    pub fn create_token(
        &self,
        owner: &str,
        scopes: &[String],
        expires: Option<Duration>,
    ) -> Result<NewToken, StoreError> {
        let id = random_hex(6)?;
        let secret = random_hex(32)?;
        let scopes: Vec<String> = if scopes.is_empty() {
            DEFAULT_SCOPES.iter().map(|s| s.to_string()).collect()
        } else {
            scopes.to_vec()
        };
        let now = now_ms();
        let expires_ms =
            expires.map(|d| now.saturating_add(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)));
        let record = TokenRecord {
            id: id.clone(),
            owner: owner.to_string(),
            scopes: scopes.clone(),
            created_ms: now,
            expires_ms,
            last_used_ms: None,
            revoked_ms: None,
        };
        self.tx(|db| {
            serialize(db, locks::TOKENS)?;
            let count = db
                .query_one("SELECT count(*) FROM tokens", args![])?
                .int(0)?;
            if usize::try_from(count).unwrap_or(usize::MAX) >= MAX_TOKENS {
                return Err(StoreError::Full(format!(
                    "there are {MAX_TOKENS} tokens already; revoke old ones first"
                )));
            }
            db.execute(
                "INSERT INTO tokens (id, owner, scopes, hash, created_ms, expires_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                args![
                    &id,
                    owner,
                    scopes.join(","),
                    digest(&secret),
                    now,
                    expires_ms
                ],
            )?;
            Ok(())
        })?;
        Ok(NewToken {
            record,
            token: format!("{TOKEN_PREFIX}{id}_{secret}"),
        })
    }

    /// Every agent token, newest first.
    pub fn tokens(&self) -> Result<Vec<TokenRecord>, StoreError> {
        self.db(|db| {
            db.query(
                &format!("SELECT {COLUMNS} FROM tokens ORDER BY created_ms DESC, id"),
                args![],
            )?
            .iter()
            .map(record)
            .collect()
        })
    }

    /// Whether the agent token `id` is live: neither revoked nor expired.
    pub fn token_live(&self, id: &str) -> Result<bool, StoreError> {
        let now = now_ms();
        self.db(|db| {
            Ok(db
                .query_opt(
                    "SELECT 1 FROM tokens WHERE id = ?1 AND revoked_ms IS NULL
                     AND (expires_ms IS NULL OR expires_ms > ?2)",
                    args![id, now],
                )?
                .is_some())
        })
    }

    /// Revokes the token `id`; `false` when there is no such token (or it was revoked).
    /// Every toolshed sharing the database forgets it at once.
    pub fn revoke_token(&self, id: &str) -> Result<bool, StoreError> {
        let id = id.strip_prefix(TOKEN_PREFIX).unwrap_or(id);
        let id = id.split('_').next().unwrap_or(id);
        let revoked = self.db(|db| {
            let revoked = db.execute(
                "UPDATE tokens SET revoked_ms = ?2 WHERE id = ?1 AND revoked_ms IS NULL",
                args![id, now_ms()],
            )? > 0;
            #[cfg(feature = "postgres")]
            if revoked && db.dialect() == crate::store::db::Dialect::Postgres {
                crate::store::postgres::notify_revoked(db, id)?;
            }
            Ok(revoked)
        })?;
        self.token_cache().forget(id);
        Ok(revoked)
    }

    /// The token `presented` is, when it is a live agent token (not revoked, not expired).
    /// On a shared database a token read lately is not read again ([`Self::token_cache`]).
    pub fn authenticate(&self, presented: &str) -> Result<Option<TokenRecord>, StoreError> {
        let Some((id, secret)) = presented
            .strip_prefix(TOKEN_PREFIX)
            .and_then(|rest| rest.split_once('_'))
        else {
            return Ok(None);
        };
        let now = now_ms();
        let cached = match self.token_cache().get(id) {
            Some(cached) => cached,
            None => {
                let found = self.db(|db| {
                    db.query_opt(
                        &format!("SELECT {COLUMNS}, hash FROM tokens WHERE id = ?1"),
                        args![id],
                    )?
                    .map(|row| {
                        Ok(crate::store::token_cache::Cached {
                            record: record(&row)?,
                            hash: row.text(7)?,
                        })
                    })
                    .transpose()
                })?;
                let Some(found) = found else {
                    return Ok(None);
                };
                self.token_cache().put(id, found.clone());
                found
            }
        };
        let token = cached.record;
        let live = token.revoked_ms.is_none() && token.expires_ms.is_none_or(|e| e > now);
        if !toolshed_core::secret::constant_time_eq(
            cached.hash.as_bytes(),
            digest(secret).as_bytes(),
        ) || !live
        {
            return Ok(None);
        }
        if token
            .last_used_ms
            .is_none_or(|t| now - t >= LAST_USED_EVERY_MS)
        {
            self.db(|db| {
                db.execute(
                    "UPDATE tokens SET last_used_ms = ?2 WHERE id = ?1",
                    args![id, now],
                )
            })?;
            let mut used = token.clone();
            used.last_used_ms = Some(now);
            self.token_cache().put(
                id,
                crate::store::token_cache::Cached {
                    record: used,
                    hash: cached.hash,
                },
            );
        }
        Ok(Some(token))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn an_agent_may_not_act_as_an_owner_the_doors_use() {
        for reserved in ["rest", "cli", "local", "mcp-http", "mcp-18f-7", "rest/sub"] {
            let refused = check_agent_owner(reserved).unwrap_err();
            assert!(
                matches!(refused, IdentityError::ReservedOwner(_))
                    && refused.to_string().contains("reserved"),
                "{reserved}: {refused}"
            );
        }
        for fine in ["ada", "ada/task-7", "mcpx", "restful", "team.ci"] {
            assert!(check_agent_owner(fine).is_ok(), "{fine}");
        }
        assert!(check_agent_owner("a b").is_err());
    }

    #[test]
    fn tokens_authenticate_until_revoked_or_expired_and_store_no_secret() {
        let store = StateStore::open_in_memory().unwrap();
        let alice = store.create_token("alice", &[], None).unwrap();
        assert!(alice.token.starts_with("tsk_"));
        let found = store.authenticate(&alice.token).unwrap().unwrap();
        assert_eq!(found.owner, "alice");
        assert_eq!(found.scopes, DEFAULT_SCOPES);
        // A wrong secret with the right id, a made-up id, the admin shape: nothing.
        let (head, _) = alice.token.rsplit_once('_').unwrap();
        assert!(
            store
                .authenticate(&format!("{head}_{}", "0".repeat(64)))
                .unwrap()
                .is_none()
        );
        assert!(store.authenticate("tsk_000000000000_00").unwrap().is_none());
        assert!(store.authenticate(&"a".repeat(64)).unwrap().is_none());
        // The secret is nowhere in the table.
        let secret = alice.token.rsplit('_').next().unwrap();
        let rows: Vec<String> = store
            .with(|c| {
                let mut s = c.prepare("SELECT id || owner || scopes || hash FROM tokens")?;
                let r = s.query_map([], |r| r.get(0))?;
                Ok(r.collect::<Result<_, _>>()?)
            })
            .unwrap();
        assert!(rows.iter().all(|r| !r.contains(secret)));
        assert!(store.revoke_token(&alice.record.id).unwrap());
        assert!(store.authenticate(&alice.token).unwrap().is_none());
        assert!(!store.revoke_token(&alice.record.id).unwrap());
        let brief = store
            .create_token("bob", &[], Some(Duration::from_millis(0)))
            .unwrap();
        assert!(store.authenticate(&brief.token).unwrap().is_none());
        assert_eq!(store.tokens().unwrap().len(), 2);
    }

    #[test]
    fn an_agent_may_only_narrow_its_owner_and_the_admin_may_name_anyone() {
        let alice = TokenRecord {
            id: "1".into(),
            owner: "alice".into(),
            scopes: vec!["tools:call".into()],
            created_ms: 0,
            expires_ms: None,
            last_used_ms: None,
            revoked_ms: None,
        }
        .caller();
        assert_eq!(alice.owner_for(None).unwrap().0, "alice");
        assert_eq!(
            alice.owner_for(Some("alice/task-7")).unwrap().0,
            "alice/task-7"
        );
        for other in ["bob", "alicex", "alice2/x", "alice/", "/alice"] {
            assert!(alice.owner_for(Some(other)).is_err(), "{other}");
        }
        assert!(alice.owns("alice/task-1") && !alice.owns("bob"));
        assert!(alice.require("tools:call").is_ok());
        let refused = alice.require("plugins:admin").unwrap_err();
        assert!(refused.to_string().contains("plugins:admin"), "{refused}");
        assert_eq!(
            refused,
            IdentityError::MissingScope {
                scope: "plugins:admin".into(),
                owner: "alice".into()
            }
        );
        let admin = Caller::admin(OwnerId::new("rest"));
        assert_eq!(admin.owner_for(Some("bob")).unwrap().0, "bob");
        assert!(admin.owns("bob") && admin.allows("plugins:admin"));
        assert!(check_scopes(&["tools:call".into(), "root".into()]).is_err());
        assert!(check_scopes(&["tool:group:web".into(), "tool:calc*".into()]).is_ok());
        assert!(check_scopes(&["tool:danger:extreme".into()]).is_err());
    }
}
