//! What the tools are asked: the arguments of each operation of `lsp` and of
//! `lsp_rename`, and how a call of `lsp` is read into its operation's own.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use toolshed_core::ToolError;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Definition,
    References,
    Implementation,
    Hover,
}

fn default_limit() -> usize {
    50
}

/// Where in the code: a position, or a symbol.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PositionArgs {
    /// File, workspace-relative
    #[serde(default)]
    pub(crate) path: Option<String>,
    /// 1-based line
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub(crate) line: Option<u32>,
    /// 1-based column, in characters
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub(crate) column: Option<u32>,
    /// A name instead of line/column: found in `path` (on `line` if given), else in the workspace
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub(crate) symbol: Option<String>,
    /// Server's language when no path is given
    #[serde(default)]
    pub(crate) language: Option<String>,
    /// Results to skip (paging)
    #[serde(default)]
    pub(crate) offset: usize,
    /// Most results
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 500))]
    pub(crate) limit: usize,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DocumentArgs {
    /// File, workspace-relative
    #[schemars(length(min = 1))]
    pub(crate) path: String,
    /// Results to skip (paging)
    #[serde(default)]
    pub(crate) offset: usize,
    /// Most results
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 500))]
    pub(crate) limit: usize,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WorkspaceSymbolArgs {
    /// Name or part of it
    #[schemars(length(max = 200))]
    pub(crate) query: String,
    /// Language of the server to ask; left out: every project's in the workspace
    #[serde(default)]
    pub(crate) language: Option<String>,
    /// Results to skip (paging)
    #[serde(default)]
    pub(crate) offset: usize,
    /// Most results
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 500))]
    pub(crate) limit: usize,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DiagnosticsArgs {
    /// File, workspace-relative; left out: every file the running servers reported on
    #[serde(default)]
    pub(crate) path: Option<String>,
    /// Results to skip (paging)
    #[serde(default)]
    pub(crate) offset: usize,
    /// Most results
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 500))]
    pub(crate) limit: usize,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RenameArgs {
    /// File, workspace-relative
    #[schemars(length(min = 1))]
    pub(crate) path: String,
    /// 1-based line
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub(crate) line: Option<u32>,
    /// 1-based column, in characters
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub(crate) column: Option<u32>,
    /// The name to rename, instead of line/column (found in `path`, on `line` if given)
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    pub(crate) symbol: Option<String>,
    /// The new name
    #[schemars(length(min = 1, max = 200))]
    pub(crate) new_name: String,
}

// What the `lsp` tool asks: every question, one tool (`lsp_rename`, which changes files,
// is a tool of its own). No doc comment: it would be the schema's description.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Operation {
    Definition,
    References,
    Implementation,
    Hover,
    DocumentSymbols,
    WorkspaceSymbols,
    Diagnostics,
}

impl Operation {
    /// The kind of a position query (definition, references, implementation, hover).
    pub(crate) fn kind(self) -> Kind {
        match self {
            Self::Definition => Kind::Definition,
            Self::References => Kind::References,
            Self::Implementation => Kind::Implementation,
            _ => Kind::Hover,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Definition => "definition",
            Self::References => "references",
            Self::Implementation => "implementation",
            Self::Hover => "hover",
            Self::DocumentSymbols => "document_symbols",
            Self::WorkspaceSymbols => "workspace_symbols",
            Self::Diagnostics => "diagnostics",
        }
    }
}

/// The `lsp` tool's arguments as a model reads them: every operation's, together. A call
/// is read again into its operation's own (which refuses what that operation does not
/// take).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // Only its schema is used.
pub(crate) struct LspArgs {
    operation: Operation,
    /// File, workspace-relative
    #[serde(default)]
    path: Option<String>,
    /// 1-based line
    #[serde(default)]
    #[schemars(range(min = 1))]
    line: Option<u32>,
    /// 1-based column, in characters
    #[serde(default)]
    #[schemars(range(min = 1))]
    column: Option<u32>,
    /// A name instead of line/column: found in `path` (on `line` if given), else in the workspace
    #[serde(default)]
    #[schemars(length(min = 1, max = 200))]
    symbol: Option<String>,
    /// workspace_symbols: name or part
    #[serde(default)]
    #[schemars(length(max = 200))]
    query: Option<String>,
    /// The server's language when no path is given
    #[serde(default)]
    language: Option<String>,
    /// Results to skip (paging)
    #[serde(default)]
    offset: usize,
    /// Most results
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 500))]
    limit: usize,
}

/// The `lsp` tool's arguments without `operation`, and the operation.
pub(crate) fn operation_of(args: Value) -> Result<(Operation, Value), ToolError> {
    let Value::Object(mut map) = args else {
        return Err(ToolError::invalid(
            "arguments must be an object with `operation`",
        ));
    };
    let operation = map.shift_remove("operation").ok_or_else(|| {
        ToolError::invalid("give `operation`: definition, references, implementation, hover, document_symbols, workspace_symbols or diagnostics")
    })?;
    let operation: Operation = serde_json::from_value(operation.clone()).map_err(|_| {
        ToolError::invalid(format!("`operation` {operation} is not one of definition, references, implementation, hover, document_symbols, workspace_symbols, diagnostics"))
    })?;
    Ok((operation, Value::Object(map)))
}

/// Reads an operation's own arguments, naming the operation when one does not belong.
pub(crate) fn parse_for<T: serde::de::DeserializeOwned>(
    operation: Operation,
    args: Value,
) -> Result<T, ToolError> {
    serde_json::from_value(args).map_err(|e| {
        ToolError::invalid(format!(
            "invalid arguments for operation `{}`: {e}",
            operation.name()
        ))
    })
}
