//! `workspace_write`: create or replace a whole file, atomically.

use serde_json::json;
use toolshed_core::{ToolError, ToolOutput};
use toolshed_ops::{OpsError, Parents, Written};

use super::Env;
use super::read::MAX_TEXT_BYTES;
use super::spec::WriteArgs;

/// Checks that the caller has read the current version of `path`, if it exists and the
/// check is on. A missing file needs no read.
pub(super) fn check_read(env: &Env, path: &str) -> Result<(), ToolError> {
    if !env.read_before_edit() {
        return Ok(());
    }
    match env.files.read(path, MAX_TEXT_BYTES + 1) {
        Ok(current) => {
            let real = env.files.realpath(path)?;
            super::ledger::check(env.ledger.as_ref(), &env.owner, &real, path, &current.bytes)
        }
        Err(OpsError::NotFound { .. }) => Ok(()),
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
    check_read(env, &args.path)?;
    let parents = if args.create_parents {
        Parents::Create
    } else {
        Parents::MustExist
    };
    let written = env
        .files
        .write(&args.path, args.content.as_bytes(), parents)
        .map_err(|e| match e {
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
            "{verb} `{}` ({} bytes, {lines} lines)",
            args.path,
            args.content.len()
        ),
        json!({"path": args.path, "created": written == Written::Created, "bytes": args.content.len(), "lines": lines}),
    ))
}
