//! Turning a language server's answers into what a model reads: `file:line:column: text`
//! lines, capped and paged, with the same facts as structured content.

use std::collections::HashMap;

use lsp_types::{
    DiagnosticSeverity, DocumentChangeOperation, DocumentChanges, DocumentSymbol,
    DocumentSymbolResponse, GotoDefinitionResponse, Hover, HoverContents, Location, MarkedString,
    OneOf, TextEdit, WorkspaceEdit, WorkspaceSymbolResponse,
};
use serde_json::{Value, json};
use toolshed_core::{CallContext, ToolOutput};

use super::server::Server;
use super::text::{self, Encoding};
use super::tools::{Core, File};
use super::uri::path_of;

/// The longest line text shown.
const MAX_LINE: usize = 200;
/// The most bytes of hover text.
const MAX_HOVER: usize = 8 * 1024;

/// A position shown to a model.
pub(crate) struct Place {
    path: String,
    line: u32,
    column: u32,
}

impl Place {
    /// From a server position in `text`.
    pub(crate) fn new(path: &str, line: u32, unit: u32, text: &str, encoding: Encoding) -> Self {
        let line_text = text::line_of(text, line).unwrap_or("");
        Self {
            path: path.into(),
            line: line + 1,
            column: text::from_server(line_text, unit, encoding),
        }
    }

    /// `path:line:column`.
    pub(crate) fn short(&self) -> String {
        format!("{}:{}:{}", self.path, self.line, self.column)
    }
}

/// An answer being put together.
pub(crate) struct Answer {
    lines: Vec<String>,
    structured: Value,
}

impl Answer {
    /// Puts `line` first.
    pub(crate) fn prefix(&mut self, line: &str) {
        self.lines.insert(0, line.to_string());
    }

    pub(crate) fn into_output(self) -> ToolOutput {
        ToolOutput::text_and_structured(self.lines.join("\n"), self.structured)
    }
}

/// A symbol from `workspace/symbol`.
#[derive(Debug, Clone)]
pub(crate) struct Symbol {
    pub name: String,
    pub kind: String,
    pub container: Option<String>,
    pub location: Option<Location>,
}

/// The name of a symbol kind.
fn kind_name(kind: lsp_types::SymbolKind) -> String {
    const NAMES: [&str; 26] = [
        "file",
        "module",
        "namespace",
        "package",
        "class",
        "method",
        "property",
        "field",
        "constructor",
        "enum",
        "interface",
        "function",
        "variable",
        "constant",
        "string",
        "number",
        "boolean",
        "array",
        "object",
        "key",
        "null",
        "enum member",
        "struct",
        "event",
        "operator",
        "type parameter",
    ];
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_u64())
        .and_then(|n| NAMES.get((n as usize).wrapping_sub(1)))
        .map_or_else(|| "symbol".into(), |n| (*n).to_string())
}

/// The locations of a definition, implementation or references answer.
pub(crate) fn locations(answer: Value) -> Vec<Location> {
    if answer.is_null() {
        return Vec::new();
    }
    match serde_json::from_value::<GotoDefinitionResponse>(answer) {
        Ok(GotoDefinitionResponse::Scalar(l)) => vec![l],
        Ok(GotoDefinitionResponse::Array(ls)) => ls,
        Ok(GotoDefinitionResponse::Link(links)) => links
            .into_iter()
            .map(|l| Location {
                uri: l.target_uri,
                range: l.target_selection_range,
            })
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// The symbols of a `workspace/symbol` answer.
pub(crate) fn symbols(answer: Value) -> Vec<Symbol> {
    match serde_json::from_value::<Option<WorkspaceSymbolResponse>>(answer) {
        Ok(Some(WorkspaceSymbolResponse::Flat(list))) => list
            .into_iter()
            .map(|s| Symbol {
                name: s.name,
                kind: kind_name(s.kind),
                container: s.container_name,
                location: Some(s.location),
            })
            .collect(),
        Ok(Some(WorkspaceSymbolResponse::Nested(list))) => list
            .into_iter()
            .map(|s| Symbol {
                name: s.name,
                kind: kind_name(s.kind),
                container: s.container_name,
                location: match s.location {
                    OneOf::Left(l) => Some(l),
                    OneOf::Right(_) => None,
                },
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The text edits of a rename, by URI; file operations (create, rename, delete) refused.
pub(crate) fn edits_of(edit: WorkspaceEdit) -> Result<Vec<(String, Vec<TextEdit>)>, String> {
    let mut by_uri: Vec<(String, Vec<TextEdit>)> = Vec::new();
    let mut add =
        |uri: String, edits: Vec<TextEdit>| match by_uri.iter_mut().find(|(u, _)| *u == uri) {
            Some((_, list)) => list.extend(edits),
            None => by_uri.push((uri, edits)),
        };
    let plain = |edits: Vec<OneOf<TextEdit, lsp_types::AnnotatedTextEdit>>| -> Vec<TextEdit> {
        edits
            .into_iter()
            .map(|e| match e {
                OneOf::Left(e) => e,
                OneOf::Right(a) => a.text_edit,
            })
            .collect()
    };
    match edit.document_changes {
        Some(DocumentChanges::Edits(list)) => {
            for e in list {
                add(
                    super::uri::normalize(e.text_document.uri.as_str()),
                    plain(e.edits),
                );
            }
        }
        Some(DocumentChanges::Operations(ops)) => {
            for op in ops {
                match op {
                    DocumentChangeOperation::Edit(e) => {
                        add(
                            super::uri::normalize(e.text_document.uri.as_str()),
                            plain(e.edits),
                        );
                    }
                    DocumentChangeOperation::Op(_) => {
                        return Err("this rename also creates, moves or deletes files, which lsp_rename does not do; rename the file with workspace_move, then the symbol. No file was changed.".into());
                    }
                }
            }
        }
        None => {
            let mut changes: Vec<_> = edit.changes.unwrap_or_default().into_iter().collect();
            changes.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
            for (uri, edits) in changes {
                add(super::uri::normalize(uri.as_str()), edits);
            }
        }
    }
    by_uri.retain(|(_, e)| !e.is_empty());
    Ok(by_uri)
}

/// Reads the lines that answers point at.
pub(crate) struct Reader<'a> {
    core: &'a Core,
    server: &'a Server,
    /// The call: a file its policy rules refuse to read is named, its text not shown.
    ctx: &'a CallContext,
    texts: HashMap<String, Option<String>>,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(core: &'a Core, server: &'a Server, ctx: &'a CallContext) -> Self {
        Self {
            core,
            server,
            ctx,
            texts: HashMap::new(),
        }
    }

    /// The workspace path of a URI and its text (`None` outside the workspace: never read).
    async fn text_of(&mut self, uri: &str) -> (String, Option<String>) {
        let Some(abs) = path_of(uri) else {
            return (uri.to_string(), None);
        };
        let Some(rel) = self.core.relative(&abs) else {
            return (abs.display().to_string(), None);
        };
        if !self.texts.contains_key(uri) {
            let refused = self.ctx.may_read(std::slice::from_ref(&rel)).is_err();
            let text = match self.server.shown(uri) {
                _ if refused => None,
                Some(t) => Some(t),
                None => self.core.file(&rel).await.ok().map(|f| f.text),
            };
            self.texts.insert(uri.to_string(), text);
        }
        (rel, self.texts.get(uri).cloned().flatten())
    }

    /// One location as `path:line:column: text` and as data.
    async fn place(&mut self, uri: &str, line: u32, unit: u32) -> (String, Value) {
        let encoding = self.server.encoding;
        self.place_in(uri, line, unit, encoding).await
    }

    /// [`Self::place`], for a position in `encoding` (another server's).
    async fn place_in(
        &mut self,
        uri: &str,
        line: u32,
        unit: u32,
        encoding: Encoding,
    ) -> (String, Value) {
        let (path, text) = self.text_of(uri).await;
        let (column, line_text) = match text.as_deref().and_then(|t| text::line_of(t, line)) {
            Some(l) => (
                text::from_server(l, unit, encoding),
                Some(clip(l.trim(), MAX_LINE)),
            ),
            None => (unit + 1, None),
        };
        let shown = match &line_text {
            Some(t) => format!("{path}:{}:{column}: {t}", line + 1),
            None => format!("{path}:{}:{column}", line + 1),
        };
        (
            shown,
            json!({"path": path, "line": line + 1, "column": column, "text": line_text}),
        )
    }

    /// Locations, paged.
    pub(crate) async fn locations(
        mut self,
        all: &[Location],
        offset: usize,
        limit: usize,
    ) -> Answer {
        let total = all.len();
        let mut lines = Vec::new();
        let mut data = Vec::new();
        for l in all.iter().skip(offset).take(limit) {
            let (shown, value) = self
                .place(l.uri.as_str(), l.range.start.line, l.range.start.character)
                .await;
            lines.push(shown);
            data.push(value);
        }
        if total == 0 {
            lines.push("nothing found".into());
        }
        Answer::page(lines, "locations", data, total, offset)
    }

    /// Workspace symbols, paged.
    pub(crate) async fn symbol_list(
        mut self,
        all: &[Symbol],
        offset: usize,
        limit: usize,
    ) -> Answer {
        let total = all.len();
        let mut lines = Vec::new();
        let mut data = Vec::new();
        for s in all.iter().skip(offset).take(limit) {
            let (at, value) = match &s.location {
                Some(l) => {
                    self.place(l.uri.as_str(), l.range.start.line, l.range.start.character)
                        .await
                }
                None => (String::new(), Value::Null),
            };
            let container = s
                .container
                .as_deref()
                .map(|c| format!(" (in {c})"))
                .unwrap_or_default();
            lines.push(format!("{} {}{container} — {at}", s.kind, s.name));
            data.push(json!({"name": s.name, "kind": s.kind, "container": s.container, "location": value}));
        }
        Answer::page(lines, "symbols", data, total, offset)
    }

    /// A file's outline, paged.
    pub(crate) fn outline(self, file: &File, answer: Value, offset: usize, limit: usize) -> Answer {
        let mut flat: Vec<(usize, String, String, u32, u32)> = Vec::new();
        match serde_json::from_value::<Option<DocumentSymbolResponse>>(answer) {
            Ok(Some(DocumentSymbolResponse::Nested(list))) => {
                fn walk(
                    list: &[DocumentSymbol],
                    depth: usize,
                    out: &mut Vec<(usize, String, String, u32, u32)>,
                ) {
                    for s in list {
                        out.push((
                            depth,
                            kind_name(s.kind),
                            s.name.clone(),
                            s.selection_range.start.line,
                            s.selection_range.start.character,
                        ));
                        if depth < 8 {
                            walk(s.children.as_deref().unwrap_or_default(), depth + 1, out);
                        }
                    }
                }
                walk(&list, 0, &mut flat);
            }
            Ok(Some(DocumentSymbolResponse::Flat(list))) => {
                for s in list {
                    let depth = usize::from(s.container_name.is_some());
                    flat.push((
                        depth,
                        kind_name(s.kind),
                        s.name,
                        s.location.range.start.line,
                        s.location.range.start.character,
                    ));
                }
            }
            _ => {}
        }
        let total = flat.len();
        let mut lines = vec![format!("symbols of {}", file.rel)];
        let mut data = Vec::new();
        for (depth, kind, name, line, unit) in flat.into_iter().skip(offset).take(limit) {
            let place = Place::new(&file.rel, line, unit, &file.text, self.server.encoding);
            lines.push(format!(
                "{}{kind} {name} — line {}",
                "  ".repeat(depth),
                place.line
            ));
            data.push(json!({"name": name, "kind": kind, "depth": depth, "line": place.line, "column": place.column}));
        }
        if total == 0 {
            lines.push("no symbols".into());
        }
        Answer::page(lines, "symbols", data, total, offset).with("path", json!(file.rel))
    }

    /// Diagnostics, errors first, paged.
    pub(crate) async fn diagnostics(
        mut self,
        mut all: Vec<(String, lsp_types::Diagnostic, Encoding)>,
        offset: usize,
        limit: usize,
    ) -> Answer {
        let rank = |d: &lsp_types::Diagnostic| match d.severity {
            Some(DiagnosticSeverity::ERROR) | None => 0,
            Some(DiagnosticSeverity::WARNING) => 1,
            Some(DiagnosticSeverity::INFORMATION) => 2,
            _ => 3,
        };
        all.sort_by(|a, b| {
            (rank(&a.1), &a.0, a.1.range.start.line).cmp(&(rank(&b.1), &b.0, b.1.range.start.line))
        });
        let total = all.len();
        let errors = all.iter().filter(|d| rank(&d.1) == 0).count();
        let mut lines = vec![format!(
            "{errors} errors, {} other diagnostics",
            total - errors
        )];
        let mut data = Vec::new();
        for (path, d, encoding) in all.into_iter().skip(offset).take(limit) {
            let severity = ["error", "warning", "info", "hint"][rank(&d) as usize];
            let workspace_uri = super::uri::uri_of(&self.core.settings().workspace.join(&path));
            let (at, place) = self
                .place_in(
                    &workspace_uri,
                    d.range.start.line,
                    d.range.start.character,
                    encoding,
                )
                .await;
            let (where_, text) = at
                .split_once(": ")
                .map_or((at.as_str(), ""), |(a, b)| (a, b));
            let code = match &d.code {
                Some(lsp_types::NumberOrString::String(s)) => format!(" [{s}]"),
                Some(lsp_types::NumberOrString::Number(n)) => format!(" [{n}]"),
                None => String::new(),
            };
            let source = d
                .source
                .as_deref()
                .map(|s| format!(" ({s})"))
                .unwrap_or_default();
            let message = clip(d.message.lines().next().unwrap_or(""), 400);
            lines.push(format!("{where_}: {severity}: {message}{code}{source}"));
            if !text.is_empty() {
                lines.push(format!("    {text}"));
            }
            data.push(json!({
                "path": place["path"], "line": place["line"], "column": place["column"], "text": place["text"],
                "severity": severity, "message": d.message, "code": code.trim().trim_matches(['[', ']']), "source": d.source,
            }));
        }
        Answer::page(lines, "diagnostics", data, total, offset).with("errors", json!(errors))
    }

    /// Hover text.
    pub(crate) fn hover(self, hover: Option<Hover>) -> Answer {
        let text = match hover.map(|h| h.contents) {
            Some(HoverContents::Markup(m)) => m.value,
            Some(HoverContents::Scalar(s)) => marked(s),
            Some(HoverContents::Array(list)) => list
                .into_iter()
                .map(marked)
                .collect::<Vec<_>>()
                .join("\n\n"),
            None => String::new(),
        };
        let text = clip(text.trim(), MAX_HOVER);
        let shown = if text.is_empty() {
            "nothing to show here".to_string()
        } else {
            text.clone()
        };
        Answer {
            lines: vec![shown],
            structured: json!({"hover": text}),
        }
    }
}

fn marked(s: MarkedString) -> String {
    match s {
        MarkedString::String(s) => s,
        MarkedString::LanguageString(l) => format!("```{}\n{}\n```", l.language, l.value),
    }
}

impl Answer {
    /// One page of `total` items (`data` of them shown from `offset`), the data under
    /// `key` with `total` and `next_offset`, and a line saying how to page on.
    fn page(
        mut lines: Vec<String>,
        key: &str,
        data: Vec<Value>,
        total: usize,
        offset: usize,
    ) -> Self {
        let shown = data.len();
        let next = (offset + shown < total).then_some(offset + shown);
        if let Some(n) = next {
            lines.push(format!("({shown} of {total} shown; offset {n} for more)"));
        }
        Self {
            lines,
            structured: json!({key: data, "total": total, "next_offset": next}),
        }
    }

    /// Adds a field to the structured content.
    fn with(mut self, key: &str, value: Value) -> Self {
        self.structured[key] = value;
        self
    }
}

/// `s` cut to at most `max` bytes, on a character boundary, marked when cut.
fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}
