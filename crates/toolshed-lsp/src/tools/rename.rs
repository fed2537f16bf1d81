//! `lsp_rename`: a rename computed by the server, checked against the files as they are
//! and applied to them all-or-nothing, under read-before-edit.

use std::path::PathBuf;

use serde_json::{Value, json};
use toolshed_core::{CallContext, ToolError, ToolOutput};
use toolshed_ops::{Change, Expect};

use super::Core;
use crate::READ_BEFORE_EDIT;
use crate::format;
use crate::requests::RenameArgs;
use crate::text::{self, Encoding};
use crate::uri::{path_of, uri_of};

impl Core {
    pub(super) async fn rename(
        &self,
        ctx: &CallContext,
        args: RenameArgs,
    ) -> Result<ToolOutput, ToolError> {
        let deadline = Self::deadline(ctx);
        let file = self.file(&args.path).await?;
        let (server, note) = self.server_for(&file).await?;
        let (line, character) = self.position(
            &file,
            args.line,
            args.column,
            args.symbol.as_deref(),
            server.encoding,
        )?;
        server.loaded(deadline).await;
        let answer = server
            .request(
                "textDocument/rename",
                json!({"textDocument": {"uri": uri_of(&file.abs)}, "position": {"line": line, "character": character}, "newName": args.new_name}),
                deadline,
            )
            .await
            .map_err(|e| self.server_error(&server, &e))?;
        let edit: Option<lsp_types::WorkspaceEdit> =
            serde_json::from_value(answer).map_err(|e| {
                ToolError::failed(format!(
                    "the language server's rename answer is not a workspace edit: {e}"
                ))
            })?;
        let edits = format::edits_of(edit.unwrap_or_default()).map_err(ToolError::failed)?;
        if edits.is_empty() {
            return Err(ToolError::NotFound(
                "the language server found nothing to rename there".into(),
            ));
        }
        // What every edit replaces: the name at the position asked about.
        let old_name = text::line_of(&file.text, line)
            .map(|l| text::word_at(l, text::from_server(l, character, server.encoding)))
            .filter(|w| !w.is_empty())
            .map(String::from);
        // Every file the rename touches: inside the workspace, as the server saw it, once.
        let mut planned: Vec<(String, PathBuf, String, String)> = Vec::new();
        for (uri, text_edits) in &edits {
            let abs = path_of(uri).ok_or_else(|| {
                ToolError::failed(format!("the rename names `{uri}`, which is not a file"))
            })?;
            let rel = self.relative(&abs).ok_or_else(|| ToolError::Denied {
                rule: "workspace".into(),
                message: format!(
                    "the rename would change `{}`, outside the workspace. No file was changed.",
                    abs.display()
                ),
            })?;
            let current = self.file(&rel).await?;
            if planned.iter().any(|(r, ..)| *r == current.rel) {
                return Err(ToolError::Conflict(format!(
                    "the server named `{}` twice (through a link?); the rename is refused. No file was changed.",
                    current.rel
                )));
            }
            if let Some(shown) = server.shown(uri)
                && shown != current.text
            {
                return Err(ToolError::Conflict(format!(
                    "`{rel}` changed while the rename was computed; run it again. No file was changed."
                )));
            }
            let new = apply(
                &current.text,
                text_edits,
                server.encoding,
                old_name.as_deref(),
            )
            .map_err(|e| ToolError::failed(format!("`{rel}`: {e}. No file was changed.")))?;
            planned.push((current.rel, current.abs, current.text, new));
        }
        // The files the server named are judged as if the call had named them: a policy
        // rule on `writes` and a read-only caller hold for each.
        let named: Vec<String> = planned.iter().map(|(rel, ..)| rel.clone()).collect();
        ctx.may_write(&named)?;
        let check = ctx
            .config
            .get(READ_BEFORE_EDIT)
            .and_then(Value::as_bool)
            .unwrap_or(true);
        if check {
            for (rel, _, before, _) in &planned {
                toolshed_kit::ledger::check(
                    self.read_log.as_ref(),
                    &ctx.owner,
                    rel,
                    rel,
                    before.as_bytes(),
                )
                .map_err(|e| match e {
                    ToolError::Conflict(m) => {
                        ToolError::Conflict(format!("{m}\nNo file was changed."))
                    }
                    other => other,
                })?;
            }
        }
        let commit: Vec<(String, String, String)> = planned
            .iter()
            .map(|(rel, _, before, after)| (rel.clone(), before.clone(), after.clone()))
            .collect();
        crate::on_files(&self.files, move |files| {
            let changes: Vec<Change<'_>> = commit
                .iter()
                .map(|(rel, before, after)| Change::Write {
                    path: rel,
                    data: after.as_bytes(),
                    expect: Expect::Content(before.as_bytes()),
                    parents: toolshed_ops::Parents::MustExist,
                })
                .collect();
            files.commit(&changes)
        })
        .await
        .map_err(|e| match e {
            ToolError::Conflict(m) => ToolError::Conflict(format!("{m}\nNo file was changed.")),
            other => ToolError::failed(format!("{other}\nNo file was changed.")),
        })?;
        let mut diffs = String::new();
        let mut files = Vec::new();
        let mut total = 0;
        for ((rel, abs, before, after), (_, text_edits)) in planned.iter().zip(&edits) {
            toolshed_kit::ledger::record(self.read_log.as_ref(), &ctx.owner, rel, after.as_bytes());
            let _ = server.show(abs, after).await;
            diffs.push_str(&toolshed_kit::diff::unified(rel, before, after, 1));
            total += text_edits.len();
            files.push(json!({"path": rel, "edits": text_edits.len()}));
        }
        let mut text = format!(
            "renamed to `{}`: {total} edits in {} files\n{diffs}",
            args.new_name,
            planned.len()
        );
        if let Some(note) = note {
            text = format!("{note}\n{text}");
        }
        Ok(ToolOutput::text_and_structured(
            text,
            json!({"new_name": args.new_name, "files": files, "edits": total}),
        ))
    }
}

/// `text` with `edits` (server positions) applied; overlapping edits are refused, and so
/// is an edit whose range does not hold `expected` (when given): the server computed it
/// from another version of the file.
pub(crate) fn apply(
    text: &str,
    edits: &[lsp_types::TextEdit],
    encoding: Encoding,
    expected: Option<&str>,
) -> Result<String, String> {
    let mut spans: Vec<(usize, usize, &str)> = Vec::with_capacity(edits.len());
    for e in edits {
        let start = text::byte_offset(text, e.range.start.line, e.range.start.character, encoding)
            .ok_or_else(|| {
                format!(
                    "an edit starts past the end (line {})",
                    e.range.start.line + 1
                )
            })?;
        let end = text::byte_offset(text, e.range.end.line, e.range.end.character, encoding)
            .ok_or_else(|| format!("an edit ends past the end (line {})", e.range.end.line + 1))?;
        if end < start {
            return Err("an edit ends before it starts".into());
        }
        if let Some(expected) = expected
            && text[start..end] != *expected
        {
            return Err(format!(
                "line {} holds `{}` where the server expected `{expected}`: it saw another version of the file; run the rename again",
                e.range.start.line + 1,
                &text[start..end]
            ));
        }
        spans.push((start, end, &e.new_text));
    }
    spans.sort_by_key(|s| (s.0, s.1));
    if spans.windows(2).any(|w| w[1].0 < w[0].1) {
        return Err("the server's edits overlap".into());
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end, new) in spans {
        out.push_str(&text[at..start]);
        out.push_str(new);
        at = end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}
