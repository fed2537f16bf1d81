//! `ctx.fs`: text files in granted parts of the workspace, through the call's operations
//! backend.

use std::rc::Rc;

use rquickjs::function::Opt;
use rquickjs::{Coerced, Ctx, Function, Object, Promise, Value};
use toolshed_ops::{FileKind, FileOps, OpsError, Parents};

use super::{CallScope, HostValue, rejected};
use crate::grants::{Reach, normalize_path};

/// The largest file `ctx.fs.readText` reads or `writeText` writes.
const FS_MAX_BYTES: u64 = 4 * 1024 * 1024;
/// The most entries `ctx.fs.list` returns.
const FS_MAX_ENTRIES: usize = 10_000;

/// One directory entry for `ctx.fs.list`.
pub(crate) struct Entry {
    pub(super) name: String,
    pub(super) kind: &'static str,
    pub(super) size: u64,
}

pub(super) fn fs_object<'js>(
    ctx: &Ctx<'js>,
    scope: &Rc<CallScope>,
    prelude: &Object<'js>,
) -> rquickjs::Result<Value<'js>> {
    let fs = Object::new(ctx.clone())?;
    let s = scope.clone();
    let read = Function::new(ctx.clone(), move |ctx: Ctx<'js>, path: Coerced<String>| {
        let call = s.call(&ctx)?;
        let path = match s.reach.check_read(&path.0) {
            Ok(p) => p,
            Err(msg) => return rejected(&ctx, &msg),
        };
        if let Err(e) = call.may_read(std::slice::from_ref(&path)) {
            return rejected(&ctx, &e.to_string());
        }
        drop(call);
        fs_op(&ctx, &s, move |files, reach| {
            let real = resolve_in_workspace(files, &path)?;
            if !reach.read_allows(&real) {
                return Err(escaped_root(&path, &real));
            }
            let contents = files
                .read(&path, FS_MAX_BYTES + 1)
                .map_err(|e| e.to_string())?;
            if contents.size > FS_MAX_BYTES {
                return Err(format!(
                    "`{path}` is {} bytes; readText reads files of at most {FS_MAX_BYTES} bytes",
                    contents.size
                ));
            }
            Ok(HostValue::Text(
                String::from_utf8_lossy(&contents.bytes).into_owned(),
            ))
        })
    })?
    .with_name("readText")?;
    fs.set("readText", read)?;

    let s = scope.clone();
    let write = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, path: Coerced<String>, text: Coerced<String>| {
            let call = s.call(&ctx)?;
            let path = match s.reach.check_write(&path.0) {
                Ok(p) => p,
                Err(msg) => return rejected(&ctx, &msg),
            };
            // The caller's read-only mode and the policy's rules on `writes` hold here as
            // for a tool that names the path.
            if let Err(e) = call.may_write(std::slice::from_ref(&path)) {
                return rejected(&ctx, &e.to_string());
            }
            drop(call);
            let bytes = text.0.into_bytes();
            if bytes.len() as u64 > FS_MAX_BYTES {
                return rejected(
                    &ctx,
                    &format!(
                        "the text is {} bytes; writeText writes at most {FS_MAX_BYTES} bytes",
                        bytes.len()
                    ),
                );
            }
            fs_op(&ctx, &s, move |files, reach| {
                let real = resolve_in_workspace(files, &path)?;
                if !reach.write_allows(&real) {
                    return Err(escaped_root(&path, &real));
                }
                files
                    .write(&path, &bytes, Parents::Create)
                    .map(|_| HostValue::Unit)
                    .map_err(|e| e.to_string())
            })
        },
    )?
    .with_name("writeText")?;
    fs.set("writeText", write)?;

    let s = scope.clone();
    let list = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, dir: Opt<Coerced<String>>| {
            let call = s.call(&ctx)?;
            let dir = dir.0.map(|d| d.0).unwrap_or_else(|| ".".into());
            let dir = match s.reach.check_read(&dir) {
                Ok(p) => p,
                Err(msg) => return rejected(&ctx, &msg),
            };
            if let Err(e) = call.may_read(std::slice::from_ref(&dir)) {
                return rejected(&ctx, &e.to_string());
            }
            drop(call);
            fs_op(&ctx, &s, move |files, reach| {
                let real = resolve_in_workspace(files, &dir)?;
                if !reach.read_allows(&real) {
                    return Err(escaped_root(&dir, &real));
                }
                let listing = files.read_dir(&dir).map_err(|e| e.to_string())?;
                let entries = listing
                    .entries
                    .into_iter()
                    .take(FS_MAX_ENTRIES)
                    .map(|e| Entry {
                        name: e.name,
                        kind: match e.metadata.kind {
                            FileKind::File => "file",
                            FileKind::Dir => "dir",
                            FileKind::Symlink => "symlink",
                            FileKind::Other => "other",
                        },
                        size: e.metadata.size,
                    })
                    .collect();
                Ok(HostValue::Entries(entries))
            })
        },
    )?
    .with_name("list")?;
    fs.set("list", list)?;

    let freeze: Function = prelude.get("freeze")?;
    freeze.call((fs,))
}

/// Runs a blocking file operation against the call's operations backend.
fn fs_op<'js, F>(ctx: &Ctx<'js>, scope: &CallScope, op: F) -> rquickjs::Result<Promise<'js>>
where
    F: FnOnce(&dyn FileOps, &Reach) -> Result<HostValue, String> + Send + 'static,
{
    let files = scope.access.files.clone();
    let reach = scope.reach.clone();
    scope.start(ctx, async move {
        tokio::task::spawn_blocking(move || op(files.as_ref(), &reach))
            .await
            .map_err(|e| format!("the file operation failed to run: {e}"))?
    })
}

/// Where `path` really leads, relative to the workspace root: symbolic links in its
/// existing part resolved, the part that does not exist yet appended as written.
fn resolve_in_workspace(files: &dyn FileOps, path: &str) -> Result<String, String> {
    let mut head = path.to_string();
    let mut missing: Vec<String> = Vec::new();
    loop {
        match files.realpath(&head) {
            Ok(real) => {
                let mut full = real;
                for name in missing.iter().rev() {
                    full = if full == "." {
                        name.clone()
                    } else {
                        format!("{full}/{name}")
                    };
                }
                return normalize_path(&full).map_err(|e| e.to_string());
            }
            Err(OpsError::NotFound { .. }) if head != "." => {
                let (parent, name) = match head.rsplit_once('/') {
                    Some((p, n)) => (p.to_string(), n.to_string()),
                    None => (".".to_string(), head.clone()),
                };
                missing.push(name);
                head = parent;
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

fn escaped_root(path: &str, real: &str) -> String {
    format!(
        "`{path}` leads to `{real}` through a symbolic link, outside the paths granted to this plugin"
    )
}
