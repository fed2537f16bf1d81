//! A mounted server's resources and prompts, offered through toolshed.
//!
//! Resource URIs are passed through as the server gives them (a tool result's resource
//! link then reads through toolshed as it would directly); prompt names are prefixed like
//! the server's tools, so two servers' `summarize` prompts stay apart.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use toolshed_core::{Library, PluginError};

use crate::client::RpcError;
use crate::names;
use crate::upstream::Upstream;

/// What a server said it offers in its `initialize` result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Offers {
    pub resources: bool,
    pub prompts: bool,
    pub completions: bool,
    /// It tells of changes to a resource a client subscribed to.
    pub subscribe: bool,
}

impl Offers {
    /// Read from a server's `initialize` result.
    pub(crate) fn from_info(info: &Value) -> Self {
        let capabilities = &info["capabilities"];
        Self {
            resources: capabilities.get("resources").is_some_and(Value::is_object),
            prompts: capabilities.get("prompts").is_some_and(Value::is_object),
            completions: capabilities
                .get("completions")
                .is_some_and(Value::is_object),
            subscribe: capabilities["resources"]["subscribe"] == Value::Bool(true),
        }
    }

    pub(crate) fn any(self) -> bool {
        self.resources || self.prompts
    }
}

/// A mounted server's resources and prompts.
pub(crate) struct ServerLibrary {
    pub(crate) prefix: String,
    pub(crate) upstream: Arc<Upstream>,
    pub(crate) offers: Offers,
    /// Prompt names as listed → as the server names them, from the last listing.
    prompt_names: std::sync::Mutex<HashMap<String, String>>,
}

impl ServerLibrary {
    pub(crate) fn new(prefix: String, upstream: Arc<Upstream>, offers: Offers) -> Self {
        Self {
            prefix,
            upstream,
            offers,
            prompt_names: std::sync::Mutex::default(),
        }
    }

    fn failed(&self, what: &str, e: RpcError) -> PluginError {
        PluginError(match e {
            RpcError::Server { message } => {
                format!(
                    "MCP server `{}` refused {what}: {message}",
                    self.upstream.name
                )
            }
            RpcError::Closed(why) => format!("MCP server `{}`: {why}", self.upstream.name),
        })
    }

    async fn list(&self, method: &str, key: &str) -> Result<Vec<Value>, PluginError> {
        let _in_flight = self.upstream.begin();
        let client = self.upstream.peer().await.map_err(PluginError)?;
        client
            .list_all(method, key)
            .await
            .map_err(|e| self.failed(&format!("`{method}`"), e))
    }

    async fn request(&self, method: &str, params: Value) -> Result<Value, PluginError> {
        let _in_flight = self.upstream.begin();
        let client = self.upstream.peer().await.map_err(PluginError)?;
        client
            .request(method, params, None)
            .await
            .map_err(|e| self.failed(&format!("`{method}`"), e))
    }
}

#[async_trait]
impl Library for ServerLibrary {
    async fn resources(&self) -> Result<Vec<Value>, PluginError> {
        if !self.offers.resources {
            return Ok(Vec::new());
        }
        self.list("resources/list", "resources").await
    }

    async fn resource_templates(&self) -> Result<Vec<Value>, PluginError> {
        if !self.offers.resources {
            return Ok(Vec::new());
        }
        self.list("resources/templates/list", "resourceTemplates")
            .await
    }

    async fn read_resource(&self, uri: &str) -> Result<Value, PluginError> {
        if !self.offers.resources {
            return Err(PluginError(format!(
                "MCP server `{}` offers no resources",
                self.upstream.name
            )));
        }
        self.request("resources/read", json!({"uri": uri})).await
    }

    async fn complete(&self, mut params: Value) -> Result<Value, PluginError> {
        if !self.offers.completions {
            return Ok(json!({"values": []}));
        }
        // A prompt is asked for by the server's own name for it.
        if params["ref"]["type"] == "ref/prompt" {
            let listed = params["ref"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let original = self
                .prompt_names
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&listed)
                .cloned();
            if let Some(original) = original {
                params["ref"]["name"] = Value::String(original);
            }
        }
        let answer = self.request("completion/complete", params).await?;
        Ok(answer["completion"].clone())
    }

    async fn skills(&self) -> Result<Vec<Value>, PluginError> {
        // A mounted server's skills are not passed on yet (docs/mcp.md).
        Ok(Vec::new())
    }

    /// The server is asked once per resource, however many watch it, and told when the
    /// last stops watching.
    async fn watch(
        &self,
        uri: &str,
        updated: toolshed_core::ResourceUpdated,
        stop: toolshed_core::CancellationToken,
    ) -> Result<(), PluginError> {
        if !self.offers.subscribe {
            return Err(PluginError(format!(
                "MCP server `{}` does not tell of changes to its resources",
                self.upstream.name
            )));
        }
        let watchers = self.upstream.watchers.clone();
        // One ask at a time: a first watcher's subscribe and a last one's unsubscribe of
        // the same resource cannot cross (and none waits on a hung server for long).
        let asking = tokio::time::timeout(crate::watch::ASK_LIMIT, watchers.asking.lock())
            .await
            .map_err(|_| {
                PluginError(format!(
                    "MCP server `{}` is still being asked about other resources; try again",
                    self.upstream.name
                ))
            })?;
        // A server started here asks again for what was watched before this one.
        let client = self.upstream.peer().await.map_err(PluginError)?;
        let Some((id, first)) = watchers.add(uri, updated) else {
            return Err(PluginError(format!(
                "MCP server `{}` has {} resources watched, the most toolshed keeps; unsubscribe from one",
                self.upstream.name,
                crate::watch::MAX_WATCHED
            )));
        };
        if first {
            let asked = match tokio::time::timeout(crate::watch::ASK_LIMIT, client.watch(uri)).await
            {
                Ok(Ok(listen)) => Ok(listen),
                Ok(Err(e)) => Err(self.failed("`resources/subscribe`", e)),
                Err(_) => Err(PluginError(format!(
                    "MCP server `{}` did not answer resources/subscribe within 10 s",
                    self.upstream.name
                ))),
            };
            match asked {
                Ok(listen) => watchers.listening(uri, &client, listen),
                Err(e) => {
                    watchers.remove(uri, id);
                    return Err(e);
                }
            }
        }
        drop(asking);
        let upstream = self.upstream.clone();
        let uri = uri.to_string();
        tokio::spawn(async move {
            stop.cancelled().await;
            let _asking = watchers.asking.lock().await;
            if !watchers.remove(&uri, id) {
                return;
            }
            // Told only if it runs: a stopped server watches nothing, and is not started
            // to be told so.
            let told = async {
                match watchers.take_listen(&uri) {
                    Some((client, listen)) => client.unwatch(&uri, Some(listen)).await,
                    None => {
                        if let Some(client) = upstream.current().await {
                            client.unwatch(&uri, None).await;
                        }
                    }
                }
            };
            let _ = tokio::time::timeout(crate::watch::ASK_LIMIT, told).await;
        });
        Ok(())
    }

    async fn prompts(&self) -> Result<Vec<Value>, PluginError> {
        if !self.offers.prompts {
            return Ok(Vec::new());
        }
        let mut prompts = self.list("prompts/list", "prompts").await?;
        let originals: Vec<String> = prompts
            .iter()
            .map(|p| p["name"].as_str().unwrap_or_default().to_string())
            .collect();
        let mounted = names::mounted_names(&self.prefix, &originals);
        let mut map = HashMap::with_capacity(mounted.len());
        for ((prompt, original), name) in prompts.iter_mut().zip(originals).zip(mounted) {
            prompt["name"] = Value::String(name.clone());
            map.insert(name, original);
        }
        *self.prompt_names.lock().unwrap_or_else(|e| e.into_inner()) = map;
        Ok(prompts)
    }

    async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<Value, PluginError> {
        let known = |library: &Self| {
            library
                .prompt_names
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(name)
                .cloned()
        };
        let original = match known(self) {
            Some(original) => original,
            None => {
                self.prompts().await?;
                known(self).ok_or_else(|| {
                    PluginError(format!(
                        "MCP server `{}` has no prompt `{name}`",
                        self.upstream.name
                    ))
                })?
            }
        };
        self.request(
            "prompts/get",
            json!({"name": original, "arguments": arguments}),
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offers_are_read_from_the_capabilities() {
        let info = json!({"capabilities": {"tools": {}, "resources": {"subscribe": true}, "completions": {}}});
        assert_eq!(
            Offers::from_info(&info),
            Offers {
                resources: true,
                prompts: false,
                completions: true,
                subscribe: true,
            }
        );
        let plain = json!({"capabilities": {"resources": {}}});
        assert!(!Offers::from_info(&plain).subscribe);
        assert!(!Offers::from_info(&json!({})).any());
    }
}
