//! `workspace_write`: create or replace a whole file, atomically.

use serde_json::json;
use toolshed_core::{ToolError, ToolOutput};
use toolshed_ops::{Change, Expect, OpsError, Parents, Written};

use super::Env;
use super::read::MAX_TEXT_BYTES;
use super::spec::WriteArgs;

/// Checks that the caller has read the current version of `path`, if it exists and the
/// check is on. A missing file needs no read.
pub(super) fn check_read(env: &Env, path: &str) -> Result<(), ToolError> {
    if env.read_before_edit() {
        current(env, path)?;
    }
    Ok(())
}

/// Checks that the caller has read exactly `current` of `path`, if the check is on.
pub(super) fn check_seen(env: &Env, path: &str, current: &[u8]) -> Result<(), ToolError> {
    if !env.read_before_edit() {
        return Ok(());
    }
    let real = env.files.realpath(path)?;
    super::ledger::check(env.ledger.as_ref(), &env.owner, &real, path, current)
}

/// What `path` holds now (`None`: nothing), checked against what the caller has read.
/// A write then expects exactly this, so that whatever another writer does in between is
/// caught by the compare-and-swap instead of being overwritten.
fn current(env: &Env, path: &str) -> Result<Option<Vec<u8>>, ToolError> {
    match env.files.read(path, MAX_TEXT_BYTES + 1) {
        Ok(current) => {
            check_seen(env, path, &current.bytes)?;
            Ok(Some(current.bytes))
        }
        Err(OpsError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

pub(super) fn run(env: &Env, args: serde_json::Value) -> Result<ToolOutput, ToolError> {
    let args: WriteArgs = crate::args::parse(args)?;
    if args.content.len() as u64 > MAX_TEXT_BYTES {
        return Err(ToolError::invalid_at(
            "/content",
            format!(
                "the content is {} bytes; workspace_write writes up to {MAX_TEXT_BYTES} bytes",
                args.content.len()
            ),
        ));
    }
    let parents = if args.create_parents {
        Parents::Create
    } else {
        Parents::MustExist
    };
    // With read-before-edit on, the write replaces only what the caller read.
    let before = if env.read_before_edit() {
        Some(current(env, &args.path)?)
    } else {
        None
    };
    let path = args.path.as_str();
    let data = args.content.as_bytes();
    let result = match &before {
        None => env.files.write(path, data, parents),
        Some(before) => {
            let expect = before.as_deref().map_or(Expect::Missing, Expect::Content);
            env.files
                .commit(&[Change::Write {
                    path,
                    data,
                    expect,
                    parents,
                }])
                .map(|()| {
                    if before.is_none() {
                        Written::Created
                    } else {
                        Written::Replaced
                    }
                })
        }
    };
    let written = result.map_err(|e| match e {
        OpsError::NotFound { .. } if !args.create_parents => ToolError::NotFound(format!(
            "the directory of `{}` does not exist; pass create_parents: true to create it",
            args.path
        )),
        other => other.into(),
    })?;
    let real = env.files.realpath(&args.path)?;
    super::ledger::record(
        env.ledger.as_ref(),
        &env.owner,
        &real,
        args.content.as_bytes(),
    );
    let lines = args.content.lines().count();
    let verb = match written {
        Written::Created => "Created",
        Written::Replaced => "Replaced",
    };
    Ok(ToolOutput::text_and_structured(
        format!(
            "{verb} `{}` ({}, {})",
            args.path,
            toolshed_core::counted(args.content.len(), "byte", "bytes"),
            toolshed_core::counted(lines, "line", "lines"),
        ),
        json!({"path": args.path, "created": written == Written::Created, "bytes": args.content.len(), "lines": lines}),
    ))
}
