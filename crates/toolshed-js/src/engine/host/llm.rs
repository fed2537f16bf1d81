//! `ctx.llm.complete({messages, maxTokens, system?, temperature?})`: a model's answer,
//! from the calling MCP client (sampling) or the host's `[llm]` endpoint; and
//! `ctx.events.publish(type, data)`: an event `plugin.<id>.<type>` for the calling owner's
//! event streams; `ctx.config.set(key, value)`: a change to one of the plugin's own config
//! fields its manifest marks writable. Each needs its manifest capability and a person's
//! grant.

use std::rc::Rc;

use rquickjs::function::Opt;
use rquickjs::{Coerced, Ctx, Exception, Function, Object, Promise, Value};
use serde_json::{Value as Json, json};
use toolshed_core::{CallContext, ChatMessage, CompletionRequest, ToolError};

use super::{CallScope, HostError, HostValue, rejected};
use crate::engine::convert::to_json;

/// The most messages one completion may carry.
const MAX_MESSAGES: usize = 100;
/// The most text, all messages and the system prompt together.
const MAX_PROMPT_BYTES: usize = 256 * 1024;
/// `maxTokens` when the plugin leaves it out.
const DEFAULT_MAX_TOKENS: u32 = 1024;
/// The largest event a plugin publishes (its data as JSON).
const MAX_EVENT_BYTES: usize = 16 * 1024;

/// `ctx.llm`: `{ complete(request) }`.
pub(super) fn llm_object<'js>(
    ctx: &Ctx<'js>,
    scope: &Rc<CallScope>,
    prelude: &Object<'js>,
) -> rquickjs::Result<Value<'js>> {
    let s = scope.clone();
    let complete = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, request: Opt<Value<'js>>| complete(&ctx, &s, request.0),
    )?;
    frozen_with(ctx, prelude, "complete", complete)
}

/// A frozen object holding one function, `name`.
fn frozen_with<'js>(
    ctx: &Ctx<'js>,
    prelude: &Object<'js>,
    name: &str,
    function: Function<'js>,
) -> rquickjs::Result<Value<'js>> {
    let obj = Object::new(ctx.clone())?;
    obj.set(name, function.with_name(name)?)?;
    let freeze: Function = prelude.get("freeze")?;
    freeze.call((obj,))
}

fn complete<'js>(
    ctx: &Ctx<'js>,
    scope: &Rc<CallScope>,
    request: Option<Value<'js>>,
) -> rquickjs::Result<Promise<'js>> {
    if let Err(message) = scope.reach.check_llm() {
        return rejected(ctx, &message);
    }
    let request = match request.map(|v| to_json(ctx, v)) {
        Some(Ok(Some(json))) => json,
        _ => {
            return rejected(
                ctx,
                "llm.complete takes { messages: [{ role, content }], maxTokens?, system?, temperature? }",
            );
        }
    };
    if let Err(message) = parse_request(&request) {
        return rejected(ctx, &format!("llm.complete: {message}"));
    }
    let call = scope.call(ctx)?.clone();
    if call.sampler.is_none() {
        return rejected_unconfigured(ctx);
    }
    scope.start(ctx, async move {
        llm_request(&call, &request).await.map(HostValue::Json)
    })
}

/// `ctx.llm.complete(request)` for the call `call`, whatever runtime asked: the request
/// checked and capped, then the call's sampler (the client's, or `[llm]`'s endpoint).
pub(crate) async fn llm_request(call: &CallContext, request: &Json) -> Result<Json, HostError> {
    let request =
        parse_request(request).map_err(|m| HostError::from(format!("llm.complete: {m}")))?;
    let Some(sampler) = call.sampler.clone() else {
        return Err(HostError {
            kind: Some("unconfigured"),
            message: UNCONFIGURED.into(),
        });
    };
    match sampler.complete(request, &call.cancel).await {
        Ok(answer) => Ok(serde_json::to_value(answer).unwrap_or(Json::Null)),
        Err(e) => Err(HostError {
            kind: Some(e.kind().as_str()),
            message: match e {
                ToolError::Unconfigured { message, .. } => message,
                other => other.to_string(),
            },
        }),
    }
}

/// `ctx.ask(question, schema?)` for the call `call`: the person's answer
/// (`{action, content}`), through the calling client when it can ask, else over REST. No
/// grant is needed: the person sees every question and may decline it, and questions are
/// capped per owner.
pub(crate) async fn ask_request(
    call: &CallContext,
    question: &Json,
    schema: Option<&Json>,
) -> Result<Json, HostError> {
    let Some(message) = question.as_str() else {
        return Err(HostError::from(
            "ctx.ask takes (question: string, schema?: object schema of the answer's fields)"
                .to_string(),
        ));
    };
    let schema = schema.filter(|s| !s.is_null()).cloned();
    let question = toolshed_core::Question::new(message, schema)
        .map_err(|m| HostError::from(format!("ctx.ask: {m}")))?;
    let Some(asker) = call.asker.clone() else {
        return Err(HostError {
            kind: Some("unconfigured"),
            message: "ctx.ask: nobody can be asked outside a host".into(),
        });
    };
    asker
        .ask(&question, &call.cancel)
        .await
        .map(|answer| answer.to_json())
        .map_err(|e| HostError {
            kind: Some(e.kind().as_str()),
            message: e.to_string(),
        })
}

/// `ctx.ask`: a function of the QuickJS runtime.
pub(super) fn ask_function<'js>(
    ctx: &Ctx<'js>,
    scope: &Rc<CallScope>,
) -> rquickjs::Result<Function<'js>> {
    let s = scope.clone();
    Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, question: Opt<Value<'js>>, schema: Opt<Value<'js>>| {
            let question = match question.0.map(|v| to_json(&ctx, v)) {
                Some(Ok(Some(json))) => json,
                _ => Json::Null,
            };
            let schema = match schema.0.map(|v| to_json(&ctx, v)) {
                Some(Ok(json)) => json,
                _ => None,
            };
            let call = s.call(&ctx)?.clone();
            s.start(&ctx, async move {
                ask_request(&call, &question, schema.as_ref())
                    .await
                    .map(HostValue::Json)
            })
        },
    )?
    .with_name("ask")
}

/// Why no model can answer.
const UNCONFIGURED: &str = "unconfigured: no model can answer: the calling client does not offer MCP sampling, \
     and no endpoint is configured; set `[llm] base_url` (an OpenAI-compatible \
     endpoint, e.g. http://127.0.0.1:8080/v1) in your toolshed config, with its key in \
     $TOOLSHED_LLM_API_KEY";

fn rejected_unconfigured<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Promise<'js>> {
    let (promise, _resolve, reject) = ctx.promise()?;
    let error = super::error_value(ctx, UNCONFIGURED)?;
    if let Some(obj) = error.as_object() {
        obj.set("kind", "unconfigured")?;
    }
    reject.call::<_, ()>((error,))?;
    Ok(promise)
}

/// Checks what a plugin asked for and caps it.
fn parse_request(value: &Json) -> Result<CompletionRequest, String> {
    let obj = value.as_object().ok_or("the request must be an object")?;
    let list = obj
        .get("messages")
        .and_then(Json::as_array)
        .ok_or("`messages` must be an array of { role, content }")?;
    if list.is_empty() || list.len() > MAX_MESSAGES {
        return Err(format!("give 1 to {MAX_MESSAGES} messages"));
    }
    let mut size = 0;
    let mut messages = Vec::with_capacity(list.len());
    for (i, m) in list.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or("");
        if !matches!(role, "user" | "assistant") {
            return Err(format!(
                "messages[{i}].role must be `user` or `assistant` (put instructions in `system`)"
            ));
        }
        let content = m["content"]
            .as_str()
            .ok_or_else(|| format!("messages[{i}].content must be a string"))?;
        size += content.len();
        messages.push(ChatMessage::text(role, content));
    }
    let system = match obj.get("system") {
        None | Some(Json::Null) => None,
        Some(Json::String(s)) => {
            size += s.len();
            Some(s.clone())
        }
        Some(_) => return Err("`system` must be a string".into()),
    };
    if size > MAX_PROMPT_BYTES {
        return Err(format!(
            "the messages are {size} bytes; at most {MAX_PROMPT_BYTES} may be sent"
        ));
    }
    let max_tokens = match obj.get("maxTokens").or_else(|| obj.get("max_tokens")) {
        None | Some(Json::Null) => DEFAULT_MAX_TOKENS,
        Some(v) => v
            .as_u64()
            .filter(|n| (1..=u64::from(u32::MAX)).contains(n))
            .and_then(|n| u32::try_from(n).ok())
            .ok_or("`maxTokens` must be a positive integer")?,
    };
    let temperature = match obj.get("temperature") {
        None | Some(Json::Null) => None,
        Some(v) => Some(
            v.as_f64()
                .filter(|t| (0.0..=2.0).contains(t))
                .ok_or("`temperature` must be a number from 0 to 2")?,
        ),
    };
    Ok(CompletionRequest {
        messages,
        system,
        max_tokens,
        temperature,
        tools: Vec::new(),
        model: None,
    })
}

/// `ctx.events`: `{ publish(type, data) }`.
pub(super) fn events_object<'js>(
    ctx: &Ctx<'js>,
    scope: &Rc<CallScope>,
    prelude: &Object<'js>,
) -> rquickjs::Result<Value<'js>> {
    let s = scope.clone();
    let publish = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, kind: Coerced<String>, data: Opt<Value<'js>>| {
            publish(&ctx, &s, &kind.0, data.0)
        },
    )?;
    frozen_with(ctx, prelude, "publish", publish)
}

fn publish<'js>(
    ctx: &Ctx<'js>,
    scope: &Rc<CallScope>,
    kind: &str,
    data: Option<Value<'js>>,
) -> rquickjs::Result<()> {
    if let Err(message) = scope.reach.check_events() {
        return Err(Exception::throw_message(ctx, &message));
    }
    let data = match data.map(|v| to_json(ctx, v)) {
        None => Json::Null,
        Some(Ok(Some(json))) => json,
        Some(Ok(None)) => Json::Null,
        Some(Err(_)) => {
            return Err(Exception::throw_type(
                ctx,
                "events.publish: data must be JSON (objects, arrays, strings, numbers, booleans)",
            ));
        }
    };
    if let Err(why) = check_event(kind, &data) {
        return Err(Exception::throw_type(ctx, &why));
    }
    let owner = scope.call(ctx)?.owner.0.clone();
    scope.access.notices.publish(
        format!("plugin.{}.{kind}", scope.plugin_id),
        Some(&owner),
        json!({ "plugin_id": scope.plugin_id, "data": data }),
    );
    Ok(())
}

/// Whether an event of type `kind` carrying `data` may be published.
pub(crate) fn check_event(kind: &str, data: &Json) -> Result<(), String> {
    let valid = !kind.is_empty()
        && kind.len() <= 64
        && kind
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '.' | '-'));
    if !valid {
        return Err(format!(
            "events.publish: type `{}` must be 1 to 64 of a-z, 0-9, `_`, `.`, `-` (e.g. `note.added`)",
            kind.chars().take(64).collect::<String>()
        ));
    }
    let size = data.to_string().len();
    if size > MAX_EVENT_BYTES {
        return Err(format!(
            "events.publish: data is {size} bytes as JSON; at most {MAX_EVENT_BYTES}"
        ));
    }
    Ok(())
}

/// `ctx.config.set(key, value)`: through the host, which checks the field is writable
/// and the value fits, and stores it (later calls see it).
pub(super) fn config_set<'js>(
    ctx: &Ctx<'js>,
    scope: &Rc<CallScope>,
    key: &str,
    value: Option<Value<'js>>,
) -> rquickjs::Result<Promise<'js>> {
    if let Err(message) = scope.reach.check_config_write() {
        return rejected(ctx, &message);
    }
    let value = match value.map(|v| to_json(ctx, v)) {
        Some(Ok(Some(json))) => json,
        _ => return rejected(ctx, "config.set(key, value): value must be JSON data"),
    };
    let call = scope.call(ctx)?.clone();
    let Some(caller) = call.caller.clone() else {
        return rejected(
            ctx,
            "this toolshed host does not let plugins change their config",
        );
    };
    let (plugin, key) = (scope.plugin_id.clone(), key.to_string());
    scope.start(ctx, async move {
        caller
            .set_own_config(&plugin, &key, value)
            .await
            .map(|()| HostValue::Unit)
            .map_err(|e| HostError {
                kind: Some(e.kind().as_str()),
                message: e.to_string(),
            })
    })
}
