//! The resources, prompts, skills and completions of the plugins whose tools a caller sees:
//! listed with `tools:list`, read and got with `tools:call`.

use std::collections::BTreeSet;

use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, GetSkillRequestParams, GetSkillResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListSkillsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ResultType, Skill,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::Value;
use toolshed_host::commands;
use toolshed_host::library::{Libraries, LibraryError};
use toolshed_kit::declarations::{DECLARATIONS_URI, declarations};

use super::McpServer;
use super::listing::cacheable;

/// The skills the extension's rules accept: one that breaks them (a name its front matter
/// spells otherwise, a file listed twice) is left out, not the whole list refused.
fn valid_skills(skills: Vec<Skill>) -> Vec<Skill> {
    skills
        .into_iter()
        .filter(|skill| match skill.validate() {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(skill = %skill.uri, error = %e, "a skill breaks the skills extension's rules; left out");
                false
            }
        })
        .collect()
}

/// The items a plugin listed that parse as `T`; one that does not is left out (and
/// logged) rather than failing the whole list.
fn from_values<T: serde::de::DeserializeOwned>(values: Vec<Value>) -> Vec<T> {
    values
        .into_iter()
        .filter_map(|v| match serde_json::from_value(v) {
            Ok(item) => Some(item),
            Err(e) => {
                tracing::warn!(error = %e, "a plugin listed an item that is not valid MCP; left out");
                None
            }
        })
        .collect()
}

/// A resource or prompt that could not be served, as the MCP error a client expects:
/// resource-not-found (-32002) or invalid params for what does not exist, internal for
/// what failed.
pub(super) fn library_error(e: LibraryError) -> McpError {
    match e {
        LibraryError::NotFound(message) if message.starts_with("there is no prompt") => {
            McpError::invalid_params(message, None)
        }
        LibraryError::NotFound(message) => McpError::resource_not_found(message, None),
        LibraryError::Failed(message) => McpError::internal_error(message, None),
    }
}

/// A human command as an MCP prompt.
fn command_prompt(command: &commands::CommandInfo) -> Value {
    let arguments: Vec<Value> = command
        .argument
        .iter()
        .map(|(name, description)| {
            serde_json::json!({"name": name, "description": description, "required": true})
        })
        .collect();
    serde_json::json!({
        "name": command.name,
        "title": format!("toolshed: {}", command.name),
        "description": format!("{} Runs at once, without the model.", command.description),
        "arguments": arguments,
    })
}

impl McpServer {
    /// Runs human command `name` for this request's caller: its text is the prompt's one
    /// message, for the person who ran it.
    async fn run_command(
        &self,
        context: &RequestContext<RoleServer>,
        name: &str,
        arguments: serde_json::Map<String, Value>,
    ) -> Result<Value, McpError> {
        let bound = self.bound().await?;
        let owner = self.owner_for(bound, context)?;
        let caller = Self::caller_for(bound, context)
            .unwrap_or_else(|| toolshed_host::identity::Caller::admin(owner.clone()));
        let by = match &caller.token_id {
            Some(token) => format!("token {token} ({}) over MCP", caller.owner.0),
            None => format!("{} over MCP", owner.0),
        };
        let outcome =
            commands::run(&bound.host, &caller, &by, name, &arguments).map_err(|e| match e {
                commands::CommandError::Invalid(m) | commands::CommandError::NotFound(m) => {
                    McpError::invalid_params(m, None)
                }
                commands::CommandError::Denied(m) | commands::CommandError::Conflict(m) => {
                    McpError::invalid_request(m, None)
                }
                commands::CommandError::Failed(m) => McpError::internal_error(m, None),
            })?;
        Ok(serde_json::json!({
            "description": format!("toolshed {name}"),
            "messages": [{"role": "user", "content": {"type": "text", "text": outcome.text}}],
            "_meta": {"toolshed/command": outcome.data},
        }))
    }

    /// Whether this request's caller may use `run_code` (and so read the declarations of
    /// the tools it calls).
    async fn runs_code(&self, context: &RequestContext<RoleServer>) -> Result<bool, McpError> {
        let bound = self.bound().await?;
        Ok(Self::tools_for(bound, context)
            .iter()
            .any(|e| e.spec().name == "run_code"))
    }

    /// The resources and prompts this request's caller may use: those of the plugins
    /// whose tools it sees. Lists need `tools:list`; reading and getting need `tools:call`.
    pub(super) async fn libraries_for(
        &self,
        context: &RequestContext<RoleServer>,
        scope: &str,
    ) -> Result<Libraries, McpError> {
        let bound = self.bound().await?;
        bound.check_token()?;
        Self::require(bound, context, scope)?;
        let plugins: BTreeSet<String> = Self::tools_for(bound, context)
            .into_iter()
            .map(|e| e.plugin_id)
            .collect();
        Ok(bound.host.catalog().libraries(&plugins))
    }

    /// `resources/list`: the resources of the plugins whose tools the caller sees.
    pub(super) async fn resource_list(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let libraries = self.libraries_for(&context, "tools:list").await?;
        let mut resources = libraries.resources().await;
        if self.runs_code(&context).await? {
            resources.push(serde_json::json!({
                "uri": DECLARATIONS_URI,
                "name": "tools.d.ts",
                "title": "TypeScript declarations of the tools run_code can call",
                "description": "Each tool you may call from a run_code snippet, with its arguments as TypeScript types and its description: read it before writing a snippet.",
                "mimeType": "text/x-typescript",
            }));
        }
        Ok(cacheable!(
            ListResourcesResult::with_all_items(from_values(resources)),
            context
        ))
    }

    /// `resources/templates/list`: the resource templates of the plugins whose tools the
    /// caller sees.
    pub(super) async fn resource_template_list(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let libraries = self.libraries_for(&context, "tools:list").await?;
        Ok(cacheable!(
            ListResourceTemplatesResult::with_all_items(from_values(
                libraries.resource_templates().await
            )),
            context
        ))
    }

    /// `resources/read`: a resource, read by the plugin that has it.
    pub(super) async fn resource_read(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let libraries = self.libraries_for(&context, "tools:call").await?;
        let result = if request.uri == DECLARATIONS_URI && self.runs_code(&context).await? {
            let bound = self.bound().await?;
            let specs: Vec<toolshed_core::ToolSpec> = Self::tools_for(bound, &context)
                .iter()
                .map(|e| e.spec().clone())
                .collect();
            serde_json::json!({"contents": [{
                "uri": DECLARATIONS_URI,
                "mimeType": "text/x-typescript",
                "text": declarations(&specs),
            }]})
        } else {
            libraries
                .read_resource(&request.uri)
                .await
                .map_err(library_error)?
        };
        let mut result: ReadResourceResult = serde_json::from_value(result).map_err(|e| {
            McpError::internal_error(format!("a plugin's resource could not be read: {e}"), None)
        })?;
        // Read from JSON, unlike rmcp's constructors it carries no `resultType`, which
        // the 2026-07-28 era requires (rmcp takes it off for an older peer).
        result.result_type.get_or_insert(ResultType::COMPLETE);
        Ok(result.into())
    }

    /// `completion/complete`: the values a plugin suggests for a prompt's or resource
    /// template's argument, at most as many as the protocol allows.
    pub(super) async fn completion(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let libraries = self.libraries_for(&context, "tools:list").await?;
        let mut params = serde_json::to_value(&request)
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        // The caller's `_meta` is its own; the gateway adds the upstream request's.
        if let Value::Object(map) = &mut params {
            map.remove("_meta");
        }
        let completion = libraries.complete(params).await.map_err(library_error)?;
        let mut completion: CompletionInfo = serde_json::from_value(completion).map_err(|e| {
            McpError::internal_error(format!("a plugin's completion is not valid MCP: {e}"), None)
        })?;
        // At most what the protocol allows; the rest is said to be there.
        if completion.values.len() > CompletionInfo::MAX_VALUES {
            completion.values.truncate(CompletionInfo::MAX_VALUES);
            completion.has_more = Some(true);
        }
        Ok(CompleteResult::new(completion))
    }

    /// `skills/list`: the skills of the plugins whose tools the caller sees.
    pub(super) async fn skill_list(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, McpError> {
        let libraries = self.libraries_for(&context, "tools:list").await?;
        let skills: Vec<Skill> = from_values(libraries.skills().await);
        Ok(cacheable!(
            ListSkillsResult::with_all_items(skills),
            context
        ))
    }

    /// `skills/get`: the skill at a URI, when it keeps the skills extension's rules.
    pub(super) async fn skill_get(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, McpError> {
        let libraries = self.libraries_for(&context, "tools:call").await?;
        let skills = valid_skills(from_values(libraries.skills().await));
        let skill = skills
            .into_iter()
            .find(|s| s.uri == request.uri)
            .ok_or_else(|| {
                McpError::invalid_params(
                    format!(
                        "no skill at {}; skills/list gives the URIs of the SKILL.md of each",
                        request.uri
                    ),
                    None,
                )
            })?;
        Ok(cacheable!(GetSkillResult::new(skill), context))
    }

    /// `prompts/list`: the prompts of the plugins whose tools the caller sees.
    pub(super) async fn prompt_list(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let libraries = self.libraries_for(&context, "tools:list").await?;
        // The human commands first; a plugin's prompt of the same name is not listed.
        let mut prompts: Vec<Value> = commands::COMMANDS.iter().map(command_prompt).collect();
        prompts.extend(libraries.prompts().await.into_iter().filter(|p| {
            p["name"]
                .as_str()
                .is_none_or(|name| !commands::COMMANDS.iter().any(|c| c.name == name))
        }));
        Ok(cacheable!(
            ListPromptsResult::with_all_items(from_values(prompts)),
            context
        ))
    }

    /// `prompts/get`: a prompt, filled in by the plugin that has it.
    pub(super) async fn prompt_get(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let libraries = self.libraries_for(&context, "tools:call").await?;
        if let Ok(bound) = self.bound().await {
            let owner = self.owner_for(bound, &context)?;
            bound.host.prompt_submitted(
                &self.owner.0,
                &owner,
                &request.name,
                serde_json::to_value(&request.arguments).unwrap_or(Value::Null),
            );
        }
        let result = if commands::COMMANDS.iter().any(|c| c.name == request.name) {
            self.run_command(
                &context,
                &request.name,
                request.arguments.unwrap_or_default(),
            )
            .await?
        } else {
            libraries
                .get_prompt(&request.name, request.arguments.unwrap_or_default())
                .await
                .map_err(library_error)?
        };
        let mut result: GetPromptResult = serde_json::from_value(result).map_err(|e| {
            McpError::internal_error(format!("a plugin's prompt could not be read: {e}"), None)
        })?;
        result.result_type.get_or_insert(ResultType::COMPLETE);
        Ok(result.into())
    }
}
