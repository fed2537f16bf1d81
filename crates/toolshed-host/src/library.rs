//! Resources and prompts: what running plugins offer besides tools (a mounted MCP server's),
//! gathered for one caller.
//!
//! A caller sees the resources and prompts of the plugins whose tools it may see (so a rule
//! that hides `group:mcp:everything` hides that server's resources and prompts too). Lists
//! are merged in the registry's trust order; a plugin that fails to answer is left out of
//! a list (and logged) rather than failing it. A resource is read from each plugin in turn
//! until one has it (without listing anyone's resources first: a read costs one request per
//! plugin asked, never a listing); a prompt is got from the plugin that lists its name.

use std::sync::Arc;

use serde_json::{Map, Value};
use toolshed_core::Library;

/// The most items one merged list holds.
pub const MAX_LIBRARY_ITEMS: usize = 10_000;

/// Why a resource or prompt could not be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LibraryError {
    /// No plugin the caller sees has it.
    #[error("{0}")]
    NotFound(String),
    /// The plugin that has it failed to serve it.
    #[error("{0}")]
    Failed(String),
}

/// The libraries of the plugins one caller sees.
pub struct Libraries {
    entries: Vec<(String, Arc<dyn Library>)>,
}

impl Libraries {
    /// The libraries of these plugins (id and library), in trust order.
    pub(crate) fn new(entries: Vec<(String, Arc<dyn Library>)>) -> Self {
        Self { entries }
    }
}

impl Libraries {
    /// Whether no plugin offers anything.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    async fn gather<'a, F, Fut>(&'a self, what: &str, list: F) -> Vec<Value>
    where
        F: Fn(&'a Arc<dyn Library>) -> Fut,
        Fut: std::future::Future<Output = Result<Vec<Value>, toolshed_core::PluginError>>,
    {
        let mut all = Vec::new();
        for (id, library) in &self.entries {
            match list(library).await {
                Ok(items) => all.extend(items),
                Err(e) => {
                    tracing::warn!(plugin = %id, error = %e, "cannot list the plugin's {what}; left out")
                }
            }
            if all.len() >= MAX_LIBRARY_ITEMS {
                all.truncate(MAX_LIBRARY_ITEMS);
                tracing::warn!("more than {MAX_LIBRARY_ITEMS} {what}; the rest are left out");
                break;
            }
        }
        all
    }

    /// Every resource (`resources/list` items).
    pub async fn resources(&self) -> Vec<Value> {
        self.gather("resources", |l| l.resources()).await
    }

    /// Every resource template (`resources/templates/list` items).
    pub async fn resource_templates(&self) -> Vec<Value> {
        self.gather("resource templates", |l| l.resource_templates())
            .await
    }

    /// The `completion` of `completion/complete` with `params`: asked of the plugin whose
    /// prompt (by its listed name) or resource template (by its `uriTemplate`) the `ref`
    /// names; an empty one when none has it.
    pub async fn complete(&self, params: Value) -> Result<Value, LibraryError> {
        let reference = &params["ref"];
        for (_, library) in &self.entries {
            let owns = match reference["type"].as_str() {
                Some("ref/prompt") => library
                    .prompts()
                    .await
                    .unwrap_or_default()
                    .iter()
                    .any(|p| p["name"] == reference["name"]),
                Some("ref/resource") => library
                    .resource_templates()
                    .await
                    .unwrap_or_default()
                    .iter()
                    .any(|t| t["uriTemplate"] == reference["uri"]),
                _ => false,
            };
            if owns {
                return library
                    .complete(params.clone())
                    .await
                    .map_err(|e| LibraryError::Failed(e.0));
            }
        }
        Ok(serde_json::json!({"values": []}))
    }

    /// Every skill (`skills/list` items of the MCP skills extension).
    pub async fn skills(&self) -> Vec<Value> {
        self.gather("skills", |l| l.skills()).await
    }

    /// Every prompt (`prompts/list` items).
    pub async fn prompts(&self) -> Vec<Value> {
        self.gather("prompts", |l| l.prompts()).await
    }

    /// The `resources/read` result for `uri`.
    pub async fn read_resource(&self, uri: &str) -> Result<Value, LibraryError> {
        if self.entries.is_empty() {
            return Err(no_resource(uri));
        }
        let mut refusals = Vec::new();
        for (_, library) in &self.entries {
            match library.read_resource(uri).await {
                Ok(result) => return Ok(result),
                Err(e) => refusals.push(e.0),
            }
        }
        Err(LibraryError::NotFound(format!(
            "no plugin has the resource {uri:?} ({})",
            refusals.join("; ")
        )))
    }

    /// Asks the plugin that has the resource `uri` — the one a read of it is served by, as
    /// many servers take a subscription to anything — to tell `updated` of its changes
    /// until `stop` fires.
    pub async fn watch(
        &self,
        uri: &str,
        updated: toolshed_core::ResourceUpdated,
        stop: toolshed_core::CancellationToken,
    ) -> Result<(), LibraryError> {
        let mut refusals = Vec::new();
        for (_, library) in &self.entries {
            let read = tokio::time::timeout(
                std::time::Duration::from_secs(10),
                library.read_resource(uri),
            )
            .await;
            match read {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => {
                    refusals.push(e.0);
                    continue;
                }
                Err(_) => {
                    refusals.push("no answer to reading it within 10 s".into());
                    continue;
                }
            }
            // The library that has it answers: watched there, or not at all.
            return library.watch(uri, updated, stop).await.map_err(|e| {
                LibraryError::NotFound(format!("{uri:?} cannot be subscribed to: {}", e.0))
            });
        }
        Err(LibraryError::NotFound(if refusals.is_empty() {
            format!(
                "there is no resource {uri:?} to subscribe to: no plugin you can use offers resources"
            )
        } else {
            format!(
                "no plugin tells of changes to {uri:?} ({})",
                refusals.join("; ")
            )
        }))
    }

    /// The `prompts/get` result for the prompt `name`.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<Value, LibraryError> {
        for (_, library) in &self.entries {
            let listed = library.prompts().await.unwrap_or_default();
            if listed.iter().any(|p| p["name"].as_str() == Some(name)) {
                return library
                    .get_prompt(name, arguments)
                    .await
                    .map_err(|e| LibraryError::Failed(e.0));
            }
        }
        Err(LibraryError::NotFound(format!(
            "there is no prompt named {name:?}; prompts/list shows the prompts there are"
        )))
    }
}

fn no_resource(uri: &str) -> LibraryError {
    LibraryError::NotFound(format!(
        "there is no resource {uri:?}: no plugin you can use offers resources"
    ))
}
