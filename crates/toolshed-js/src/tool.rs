//! One registered action as a [`Tool`]: calls are forwarded to the plugin's thread.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use toolshed_core::{CallContext, Tool, ToolError, ToolOutput, ToolSpec};

use crate::action::{ActionDef, apply_defaults};
use crate::engine::{CallRequest, JsReturn};
use crate::worker::{Failure, failure_reason};

/// How long past the deadline the tool waits for the plugin's own answer (which says why
/// the call stopped) before giving up on it.
const REPLY_GRACE: Duration = Duration::from_millis(250);

/// The way from tools to one running plugin thread.
pub(crate) struct Link {
    pub plugin_id: String,
    pub commands: mpsc::Sender<CallRequest>,
    pub failure: Failure,
    pub max_queued: usize,
}

/// A JavaScript action served by its plugin's thread.
pub(crate) struct JsTool {
    def: ActionDef,
    link: Arc<Link>,
}

impl JsTool {
    pub(crate) fn new(def: ActionDef, link: Arc<Link>) -> Self {
        Self { def, link }
    }

    /// Whether its thread has failed or gone.
    pub(crate) fn failed(&self) -> bool {
        self.link.commands.is_closed() || failure_reason(&self.link.failure).is_some()
    }

    fn stopped(&self) -> ToolError {
        let id = &self.link.plugin_id;
        match failure_reason(&self.link.failure) {
            Some(reason) => ToolError::Failed(format!("plugin `{id}` is not working: {reason}")),
            None => ToolError::Failed(format!(
                "plugin `{id}` is stopped; enable or reload it to use its tools"
            )),
        }
    }
}

#[async_trait]
impl Tool for JsTool {
    fn spec(&self) -> &ToolSpec {
        &self.def.spec
    }

    async fn call(&self, ctx: CallContext, args: Value) -> Result<ToolOutput, ToolError> {
        let started = Instant::now();
        let host = tokio::runtime::Handle::try_current().map_err(|_| {
            ToolError::Internal("a JavaScript tool was called outside a tokio runtime".into())
        })?;
        let mut inputs = apply_defaults(args, &self.def.defaults);
        crate::agent_spaces::fill_from_config(&mut inputs, &self.def.config_defaults, &ctx.config);
        // If this future is dropped (the caller gave up), the plugin stops the call too.
        let cancel = ctx.cancel.child_token();
        let _stop_on_drop = cancel.clone().drop_guard();
        let (reply_tx, reply_rx) = oneshot::channel();
        let deadline = ctx.deadline;
        let caller_cancel = ctx.cancel.clone();
        let request = CallRequest {
            action: self.def.name.clone(),
            inputs,
            ctx,
            cancel,
            host,
            started,
            reply: reply_tx,
        };
        match self.link.commands.try_send(request) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => {
                return Err(ToolError::Failed(format!(
                    "plugin `{}` is busy: {} calls are already waiting for it (its calls run one at a time); retry shortly",
                    self.link.plugin_id, self.link.max_queued
                )));
            }
            Err(mpsc::error::TrySendError::Closed(_)) => return Err(self.stopped()),
        }
        let backstop = tokio::time::Instant::from_std(deadline + REPLY_GRACE);
        let reply = tokio::select! {
            biased;
            reply = reply_rx => reply,
            _ = caller_cancel.cancelled() => return Err(ToolError::Cancelled),
            _ = tokio::time::sleep_until(backstop) => {
                return Err(ToolError::Timeout(deadline.saturating_duration_since(started)));
            }
        };
        let returned = reply.map_err(|_| self.stopped())??;
        to_output(returned, &self.def)
    }
}

/// Maps what `run` returned to the tool's output (see the crate docs for the rules).
fn to_output(returned: JsReturn, def: &ActionDef) -> Result<ToolOutput, ToolError> {
    if def.reports
        && let JsReturn::Json(value) = &returned
        && let Some(report) = crate::agent_spaces::report(value)
    {
        return match report {
            Err(message) => Err(ToolError::Failed(message)),
            Ok(message) => {
                let data = serde_json::to_string_pretty(value.get("data").unwrap_or(&Value::Null))
                    .unwrap_or_default();
                let text = match message {
                    Some(m) if data != "null" => format!("{m}\n{data}"),
                    Some(m) => m,
                    None => data,
                };
                Ok(ToolOutput::text_and_structured(text, value.clone()))
            }
        };
    }
    if let Some(outputs) = &def.outputs {
        let value = match returned {
            JsReturn::Json(v) => v,
            JsReturn::Nothing => Value::Null,
            JsReturn::Text(t) => Value::String(t),
        };
        if let Some(why) = outputs.misfit(&value) {
            return Err(ToolError::Failed(format!(
                "action `{}` declares `outputs`, but run() returned something else ({why}); return an object with the declared fields",
                def.name
            )));
        }
        return Ok(ToolOutput::structured(value));
    }
    Ok(match returned {
        JsReturn::Nothing => ToolOutput::default(),
        JsReturn::Text(text) => ToolOutput::text(text),
        JsReturn::Json(value @ Value::Object(_)) => ToolOutput::structured(value),
        JsReturn::Json(value) => ToolOutput::text(
            serde_json::to_string_pretty(&value).unwrap_or_else(|_| value.to_string()),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolshed_core::{Content, Plane};

    fn def(v: Value) -> ActionDef {
        ActionDef::parse(&v, "p", Plane::Execution).unwrap()
    }

    #[test]
    fn maps_returns_to_outputs() {
        let plain = def(json!({"name": "a", "description": "d"}));
        assert_eq!(
            to_output(JsReturn::Text("hi".into()), &plain).unwrap(),
            ToolOutput::text("hi")
        );
        let obj = to_output(JsReturn::Json(json!({"a": 1})), &plain).unwrap();
        assert_eq!(obj.structured, Some(json!({"a": 1})));
        assert_eq!(obj.text_joined(), "{\n  \"a\": 1\n}");
        let arr = to_output(JsReturn::Json(json!([1, 2])), &plain).unwrap();
        assert_eq!(arr.structured, None);
        assert!(matches!(&arr.content[..], [Content::Text { .. }]));
        assert!(
            to_output(JsReturn::Nothing, &plain)
                .unwrap()
                .content
                .is_empty()
        );

        let typed = def(json!({"name": "a", "description": "d",
            "outputs": {"n": {"type": "number", "required": true}}}));
        assert!(to_output(JsReturn::Json(json!({"n": 2})), &typed).is_ok());
        let err = to_output(JsReturn::Text("x".into()), &typed).unwrap_err();
        assert!(err.to_string().contains("declares `outputs`"), "{err}");
    }
}
