//! `workspace_stat`, `workspace_list`, `workspace_mkdir`, `workspace_move`,
//! `workspace_delete`.

use std::time::SystemTime;

use serde_json::{Value, json};
use toolshed_core::{ToolError, ToolOutput};
use toolshed_ops::{FileKind, Follow, Metadata, Overwrite, Parents};

use super::Env;
use super::spec::{DeleteArgs, ListArgs, MkdirArgs, MoveArgs, Sort, StatArgs};

fn kind_name(kind: FileKind) -> &'static str {
    match kind {
        FileKind::File => "file",
        FileKind::Dir => "dir",
        FileKind::Symlink => "symlink",
        FileKind::Other => "other",
    }
}

/// RFC 3339 in UTC, to the second.
pub(crate) fn timestamp(t: SystemTime) -> String {
    jiff::Timestamp::try_from(t)
        .map(|ts| ts.round(jiff::Unit::Second).unwrap_or(ts).to_string())
        .unwrap_or_default()
}

fn describe(m: &Metadata) -> Value {
    json!({
        "kind": kind_name(m.kind),
        "size": m.size,
        "mode": format!("{:o}", m.mode),
        "modified": timestamp(m.modified),
        "links": m.links,
        "link_target": m.link_target,
    })
}

pub(super) fn stat(env: &Env, args: Value) -> Result<ToolOutput, ToolError> {
    let args: StatArgs = crate::args::parse(args)?;
    let m = env.files.stat(&args.path, Follow::No)?;
    let mut text = format!(
        "`{}`: {}, {} bytes, mode {:o}, modified {}",
        args.path,
        kind_name(m.kind),
        m.size,
        m.mode,
        timestamp(m.modified)
    );
    if let Some(target) = &m.link_target {
        text.push_str(&format!(", points to `{target}`"));
    }
    if m.links > 1 && m.kind == FileKind::File {
        text.push_str(&format!(", {} hard links", m.links));
    }
    // What the caller may do with it (Neta's `access`): the kernel's answer, narrowed by
    // toolshed's own rules (the sandbox's hidden paths, a read-only mode or file).
    // A link that leads out of the workspace is described, and neither read nor written.
    let access = env
        .files
        .access(&args.path)
        .unwrap_or_else(|e| toolshed_ops::Access {
            read: false,
            write: false,
            exists: true,
            reason: Some(e.to_string()),
        });
    if let Some(reason) = access
        .reason
        .as_deref()
        .filter(|_| !access.read || !access.write)
    {
        text.push_str(&format!("; {reason}"));
    }
    let mut structured = describe(&m);
    structured["path"] = json!(args.path);
    structured["access"] = json!({"read": access.read, "write": access.write});
    Ok(ToolOutput::text_and_structured(text, structured))
}

fn human_size(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut size = n as f64;
    let mut unit = 0;
    while size >= 1024.0 && unit + 1 < UNITS.len() {
        size /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{size:.1} {}", UNITS[unit])
    }
}

pub(super) fn list(env: &Env, args: Value) -> Result<ToolOutput, ToolError> {
    let args: ListArgs = crate::args::parse(args)?;
    let max = args.max_entries;
    let mut listing = env.files.read_dir(&args.path)?;
    match args.sort {
        Sort::Name => {}
        Sort::Size => listing.entries.sort_by(|a, b| {
            b.metadata
                .size
                .cmp(&a.metadata.size)
                .then(a.name.cmp(&b.name))
        }),
        Sort::Modified => listing.entries.sort_by(|a, b| {
            b.metadata
                .modified
                .cmp(&a.metadata.modified)
                .then(a.name.cmp(&b.name))
        }),
    }
    if args.reverse {
        listing.entries.reverse();
    }
    let total = listing.entries.len();
    let shown = &listing.entries[..total.min(max)];
    let mut text = String::new();
    for e in shown {
        let name = match e.metadata.kind {
            FileKind::Dir => format!("{}/", e.name),
            FileKind::Symlink => format!(
                "{} -> {}",
                e.name,
                e.metadata.link_target.as_deref().unwrap_or("?")
            ),
            _ => e.name.clone(),
        };
        let size = if e.metadata.kind == FileKind::File {
            human_size(e.metadata.size)
        } else {
            "-".into()
        };
        text.push_str(&format!(
            "{size:>10}  {}  {name}\n",
            timestamp(e.metadata.modified)
        ));
    }
    if total == 0 {
        text.push_str(&format!("`{}` is empty\n", args.path));
    }
    if total > shown.len() || listing.truncated {
        text.push_str(&format!(
            "[{} of {}{} entries shown; raise max_entries or narrow the path]\n",
            shown.len(),
            total,
            if listing.truncated { "+" } else { "" }
        ));
    }
    let entries: Vec<Value> = shown
        .iter()
        .map(|e| {
            let mut v = describe(&e.metadata);
            v["name"] = json!(e.name);
            v
        })
        .collect();
    Ok(ToolOutput::text_and_structured(
        text,
        json!({"path": args.path, "entries": entries, "total": total, "truncated": total > shown.len() || listing.truncated}),
    ))
}

pub(super) fn mkdir(env: &Env, args: Value) -> Result<ToolOutput, ToolError> {
    let args: MkdirArgs = crate::args::parse(args)?;
    let parents = if args.parents {
        Parents::Create
    } else {
        Parents::MustExist
    };
    env.files.mkdir(&args.path, parents)?;
    Ok(ToolOutput::text_and_structured(
        format!("Directory `{}` exists", args.path),
        json!({"path": args.path}),
    ))
}

pub(super) fn move_(env: &Env, args: Value) -> Result<ToolOutput, ToolError> {
    let args: MoveArgs = crate::args::parse(args)?;
    let overwrite = if args.overwrite {
        // Replacing a file destroys its content: the same read-before-edit rule as a write.
        if let Ok(target) = env.files.stat(&args.to, Follow::No)
            && target.kind == FileKind::File
        {
            super::write::check_read(env, &args.to)?;
        }
        Overwrite::Yes
    } else {
        Overwrite::No
    };
    env.files
        .rename(&args.from, &args.to, overwrite)
        .map_err(|e| match e {
            toolshed_ops::OpsError::AlreadyExists { .. } => ToolError::Conflict(format!(
                "`{}` already exists; pass overwrite: true to replace it, or choose another name",
                args.to
            )),
            other => other.into(),
        })?;
    Ok(ToolOutput::text_and_structured(
        format!("Moved `{}` to `{}`", args.from, args.to),
        json!({"from": args.from, "to": args.to}),
    ))
}

pub(super) fn delete(env: &Env, args: Value) -> Result<ToolOutput, ToolError> {
    let args: DeleteArgs = crate::args::parse(args)?;
    let m = env.files.stat(&args.path, Follow::No)?;
    if m.kind == FileKind::Dir && !args.recursive {
        return Err(ToolError::invalid_at(
            "/recursive",
            format!(
                "`{}` is a directory; pass recursive: true to delete it and everything in it",
                args.path
            ),
        ));
    }
    env.files.remove(&args.path, args.recursive)?;
    Ok(ToolOutput::text_and_structured(
        format!("Deleted {} `{}`", kind_name(m.kind), args.path),
        json!({"path": args.path, "kind": kind_name(m.kind)}),
    ))
}
