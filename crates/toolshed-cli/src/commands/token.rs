//! `toolshed token create|list|revoke`: agent tokens.

use std::time::Duration;

use serde_json::json;
use toolshed_host::identity::{
    DEFAULT_SCOPES, SANDBOX_SCOPE, WORKSPACE_SCOPE, check_agent_owner, check_scopes, workspace_pin,
};
use toolshed_host::{Host, now_ms};

use crate::Failure;
use crate::cli::TokenCommand;
use crate::render::print_json;

/// Runs one token command.
pub(crate) fn run(host: &Host, command: TokenCommand) -> Result<(), Failure> {
    let tokens = host.tokens();
    let failed = |e: toolshed_host::StoreError| Failure::Runtime(e.to_string());
    match command {
        TokenCommand::Create {
            owner,
            scopes,
            expires,
            sandbox,
            pin,
            json,
        } => {
            check_agent_owner(&owner)?;
            let mut scopes: Vec<String> = scopes
                .into_iter()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect();
            let narrowing = [
                sandbox.map(|mode| format!("{SANDBOX_SCOPE}{mode}")),
                pin.map(|place| format!("{WORKSPACE_SCOPE}{place}")),
            ];
            for scope in narrowing.into_iter().flatten() {
                // Narrowing alone: what it may do stays the default.
                if scopes.is_empty() {
                    scopes.extend(DEFAULT_SCOPES.iter().map(|s| (*s).to_string()));
                }
                scopes.push(scope);
            }
            check_scopes(&scopes)?;
            // A pinned workspace is kept as hosts name theirs: a URL parsed, a directory
            // by its real path.
            for scope in &mut scopes {
                if let Some(place) = scope.strip_prefix(WORKSPACE_SCOPE) {
                    let pinned = workspace_pin(place).map_err(|e| Failure::Usage(e.to_string()))?;
                    *scope = format!("{WORKSPACE_SCOPE}{pinned}");
                }
            }
            let expires = expires.as_deref().map(parse_duration).transpose()?;
            let made = tokens.create(&owner, &scopes, expires).map_err(failed)?;
            if json {
                print_json(&json!({"token": made.token, "record": made.record}))?;
            } else {
                outln!("{}", made.token);
                eprintln!(
                    "token {} for owner {} ({}); shown once — store it now",
                    made.record.id,
                    made.record.owner,
                    made.record.scopes.join(", ")
                );
            }
            Ok(())
        }
        TokenCommand::List { json } => {
            let tokens = tokens.list().map_err(failed)?;
            if json {
                return print_json(&json!(tokens));
            }
            if tokens.is_empty() {
                outln!("no agent tokens; `toolshed token create --owner NAME` makes one");
            }
            for t in &tokens {
                let state = match (t.revoked_ms, t.expires_ms) {
                    (Some(_), _) => "revoked".to_string(),
                    (None, Some(e)) if e <= now_ms() => "expired".to_string(),
                    (None, Some(e)) => format!("expires in {}", human(e - now_ms())),
                    (None, None) => "active".to_string(),
                };
                let used = t.last_used_ms.map_or("never used".to_string(), |u| {
                    format!("used {} ago", human(now_ms() - u))
                });
                outln!(
                    "{:<12}  {:<20}  {:<40}  {state}, {used}",
                    t.id,
                    t.owner,
                    t.scopes.join(",")
                );
            }
            Ok(())
        }
        TokenCommand::Revoke { id } => {
            if tokens.revoke(&id).map_err(failed)? {
                outln!("revoked; requests with it are refused from now on");
                Ok(())
            } else {
                Err(Failure::Usage(format!(
                    "no active token `{}`; `toolshed token list` shows them",
                    id.chars().take(16).collect::<String>()
                )))
            }
        }
    }
}

/// `1d 2h` style, the largest unit only.
fn human(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86_400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

/// `90m`, `12h`, `30d`, `3600s`.
fn parse_duration(text: &str) -> Result<Duration, Failure> {
    let bad = || {
        Failure::Usage(format!(
            "--expires {text} is not a duration; give a number and a unit: 90m, 12h, 30d"
        ))
    };
    let (number, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?);
    let n: u64 = number.parse().map_err(|_| bad())?;
    let secs = match unit {
        "s" => n,
        "m" => n.saturating_mul(60),
        "h" => n.saturating_mul(3600),
        "d" => n.saturating_mul(86_400),
        _ => return Err(bad()),
    };
    if secs == 0 {
        return Err(bad());
    }
    Ok(Duration::from_secs(secs))
}
