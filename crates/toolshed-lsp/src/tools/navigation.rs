//! The questions about code: definition, references, implementation and hover at a
//! position or of a symbol named, a file's outline, and the workspace's symbols.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};
use toolshed_core::{CallContext, ToolError, ToolOutput};

use super::Core;
use crate::format;
use crate::requests::{DocumentArgs, Kind, PositionArgs, WorkspaceSymbolArgs};
use crate::server::Server;
use crate::uri::{path_of, uri_of};

impl Core {
    pub(super) async fn position_query(
        &self,
        kind: Kind,
        ctx: &CallContext,
        args: PositionArgs,
    ) -> Result<ToolOutput, ToolError> {
        let deadline = Self::deadline(ctx);
        let Some(path) = args.path.as_deref() else {
            let symbol = args.symbol.as_deref().ok_or_else(|| {
                ToolError::invalid(
                    "give `path` (with line and column, or symbol), or a `symbol` name",
                )
            })?;
            return self
                .by_name(
                    kind,
                    ctx,
                    symbol,
                    args.language.as_deref(),
                    args.offset,
                    args.limit,
                )
                .await;
        };
        let file = self.file(path).await?;
        let (server, note) = self.server_for(&file).await?;
        let (line, character) = self.position(
            &file,
            args.line,
            args.column,
            args.symbol.as_deref(),
            server.encoding,
        )?;
        server.loaded(deadline).await;
        let here = format::Place::new(&file.rel, line, character, &file.text, server.encoding);
        let mut out = self
            .ask_at(
                ctx,
                kind,
                &server,
                &file.abs,
                line,
                character,
                deadline,
                args.offset,
                args.limit,
            )
            .await?;
        out.prefix(&format!("{} at {}", kind_label(kind), here.short()));
        if let Some(note) = note {
            out.prefix(&note);
        }
        Ok(out.into_output())
    }

    /// A position request at (`line`, `character`) of `abs`.
    #[allow(clippy::too_many_arguments)]
    async fn ask_at(
        &self,
        ctx: &CallContext,
        kind: Kind,
        server: &Server,
        abs: &Path,
        line: u32,
        character: u32,
        deadline: Instant,
        offset: usize,
        limit: usize,
    ) -> Result<format::Answer, ToolError> {
        let at = json!({"textDocument": {"uri": uri_of(abs)}, "position": {"line": line, "character": character}});
        let method = match kind {
            Kind::Definition => "textDocument/definition",
            Kind::References => "textDocument/references",
            Kind::Implementation => "textDocument/implementation",
            _ => "textDocument/hover",
        };
        let mut params = at;
        if kind == Kind::References {
            params["context"] = json!({"includeDeclaration": true});
        }
        let answer = server
            .request(method, params, deadline)
            .await
            .map_err(|e| self.server_error(server, &e))?;
        let reader = format::Reader::new(self, server, ctx);
        if kind == Kind::Hover {
            let hover: Option<lsp_types::Hover> = serde_json::from_value(answer).ok();
            return Ok(reader.hover(hover));
        }
        let locations = format::locations(answer);
        Ok(reader.locations(&locations, offset, limit).await)
    }

    /// A position request for a symbol known only by name: looked up in the workspace's
    /// symbols; a definition is where the symbol is declared.
    async fn by_name(
        &self,
        kind: Kind,
        ctx: &CallContext,
        symbol: &str,
        language: Option<&str>,
        offset: usize,
        limit: usize,
    ) -> Result<ToolOutput, ToolError> {
        let deadline = Self::deadline(ctx);
        let mut matches: Vec<(Arc<Server>, format::Symbol)> = Vec::new();
        for (server, answer) in self.ask_projects(language, symbol, deadline).await? {
            for s in format::symbols(answer) {
                if s.name == symbol || s.name.strip_suffix("()").is_some_and(|n| n == symbol) {
                    matches.push((server.clone(), s));
                }
            }
        }
        if matches.is_empty() {
            return Err(ToolError::NotFound(format!(
                "no symbol named `{symbol}` in the workspace; `lsp` with operation `workspace_symbols` finds names by part"
            )));
        }
        if kind == Kind::Definition {
            let server = matches[0].0.clone();
            let reader = format::Reader::new(self, &server, ctx);
            let locations: Vec<_> = matches
                .iter()
                .filter_map(|(_, s)| s.location.clone())
                .collect();
            let mut out = reader.locations(&locations, offset, limit).await;
            out.prefix(&format!("definition of `{symbol}`"));
            return Ok(out.into_output());
        }
        let (server, first) = &matches[0];
        let location = first.location.clone().ok_or_else(|| {
            ToolError::NotFound(format!("the server gave no position for `{symbol}`"))
        })?;
        let abs = path_of(location.uri.as_str())
            .ok_or_else(|| ToolError::failed("the server named a location that is not a file"))?;
        let rel = self.relative(&abs).ok_or_else(|| {
            ToolError::invalid(format!(
                "`{symbol}` is defined outside the workspace ({})",
                abs.display()
            ))
        })?;
        let file = self.file(&rel).await?;
        server
            .show(&file.abs, &file.text)
            .await
            .map_err(|e| ToolError::failed(e.to_string()))?;
        let mut out = self
            .ask_at(
                ctx,
                kind,
                server,
                &file.abs,
                location.range.start.line,
                location.range.start.character,
                deadline,
                offset,
                limit,
            )
            .await?;
        out.prefix(&format!("{} of `{symbol}`", kind_label(kind)));
        Ok(out.into_output())
    }

    /// `workspace/symbol` of `query` asked of the server of every project (of `language`,
    /// if named). A project whose server cannot start is passed over, unless it was the
    /// one asked for or every one failed.
    async fn ask_projects(
        &self,
        language: Option<&str>,
        query: &str,
        deadline: Instant,
    ) -> Result<Vec<(Arc<Server>, Value)>, ToolError> {
        let mut answers = Vec::new();
        let mut first_error = None;
        for (lang, root) in self.projects(language).await? {
            let asked = async {
                let (server, _) = self.servers.get(&lang, &root).await?;
                self.refresh(&server, None).await?;
                server.loaded(deadline).await;
                let answer = server
                    .request("workspace/symbol", json!({"query": query}), deadline)
                    .await
                    .map_err(|e| self.server_error(&server, &e))?;
                Ok::<_, ToolError>((server, answer))
            };
            match asked.await {
                Ok(answer) => answers.push(answer),
                Err(e) if language.is_none() => {
                    tracing::debug!(language = %lang.name, root, error = %e, "a project's language server was passed over");
                    first_error.get_or_insert(e);
                }
                Err(e) => return Err(e),
            }
        }
        match first_error {
            Some(e) if answers.is_empty() => Err(e),
            _ => Ok(answers),
        }
    }

    pub(super) async fn document_symbols(
        &self,
        ctx: &CallContext,
        args: DocumentArgs,
    ) -> Result<ToolOutput, ToolError> {
        let deadline = Self::deadline(ctx);
        let file = self.file(&args.path).await?;
        let (server, note) = self.server_for(&file).await?;
        server.loaded(deadline).await;
        let answer = server
            .request(
                "textDocument/documentSymbol",
                json!({"textDocument": {"uri": uri_of(&file.abs)}}),
                deadline,
            )
            .await
            .map_err(|e| self.server_error(&server, &e))?;
        let reader = format::Reader::new(self, &server, ctx);
        let mut out = reader.outline(&file, answer, args.offset, args.limit);
        if let Some(note) = note {
            out.prefix(&note);
        }
        Ok(out.into_output())
    }

    pub(super) async fn workspace_symbols(
        &self,
        ctx: &CallContext,
        args: WorkspaceSymbolArgs,
    ) -> Result<ToolOutput, ToolError> {
        let deadline = Self::deadline(ctx);
        let mut all: Vec<(Arc<Server>, format::Symbol)> = Vec::new();
        for (server, answer) in self
            .ask_projects(args.language.as_deref(), &args.query, deadline)
            .await?
        {
            all.extend(
                format::symbols(answer)
                    .into_iter()
                    .map(|s| (server.clone(), s)),
            );
        }
        let Some(first) = all.first().map(|(s, _)| s.clone()) else {
            return Ok(ToolOutput::text_and_structured(
                format!("no symbol matches `{}`", args.query),
                json!({"symbols": [], "total": 0}),
            ));
        };
        let reader = format::Reader::new(self, &first, ctx);
        let symbols: Vec<format::Symbol> = all.into_iter().map(|(_, s)| s).collect();
        Ok(reader
            .symbol_list(&symbols, args.offset, args.limit)
            .await
            .into_output())
    }
}

fn kind_label(kind: Kind) -> &'static str {
    match kind {
        Kind::Definition => "definition",
        Kind::References => "references",
        Kind::Implementation => "implementations",
        Kind::Hover => "hover",
    }
}
