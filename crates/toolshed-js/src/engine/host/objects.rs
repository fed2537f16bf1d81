//! The pieces of `context` and `ctx` that need no capability: `t`, `logger`, and the
//! `context` object given to `activate`.

use std::cell::Cell;
use std::rc::Rc;

use rquickjs::function::{Opt, Rest};
use rquickjs::{Coerced, Ctx, Function, Object, Value};
use serde_json::Map;

use super::super::convert::{Thrown, cap, describe, from_json, to_json, to_json_text};
use super::{MAX_LOG_LINES, MAX_MESSAGE_BYTES};
use crate::i18n::Translations;

/// How many log lines are left; shared by every logger object of one plugin and reset at
/// the start of each call and activation.
pub(crate) struct LogBudget {
    plugin_id: String,
    remaining: Cell<u32>,
}

impl LogBudget {
    pub(crate) fn new(plugin_id: &str) -> Self {
        Self {
            plugin_id: plugin_id.to_string(),
            remaining: Cell::new(MAX_LOG_LINES),
        }
    }

    pub(crate) fn reset(&self) {
        self.remaining.set(MAX_LOG_LINES);
    }

    fn emit(&self, level: Level, line: &str) {
        let left = self.remaining.get();
        if left == 0 {
            return;
        }
        self.remaining.set(left - 1);
        let plugin = self.plugin_id.as_str();
        match level {
            Level::Debug => tracing::debug!(plugin, "{line}"),
            Level::Info => tracing::info!(plugin, "{line}"),
            Level::Warn => tracing::warn!(plugin, "{line}"),
            Level::Error => tracing::error!(plugin, "{line}"),
        }
        if left == 1 {
            tracing::warn!(
                plugin,
                "the plugin wrote {MAX_LOG_LINES} log lines in one call; the rest of this call's lines are dropped"
            );
        }
    }
}

#[derive(Clone, Copy)]
enum Level {
    Debug,
    Info,
    Warn,
    Error,
}

/// What every plugin-facing object of one engine shares.
pub(crate) struct Shared {
    pub plugin_id: String,
    /// `context.plugin`: the id, the manifest's version and the plugin directory (empty
    /// for a module the host supplies).
    pub plugin: (String, String),
    pub translations: Rc<Translations>,
    pub log: Rc<LogBudget>,
    /// `context.env` and `ctx.env`: the variables the manifest's env contract names.
    pub env: Rc<Map<String, serde_json::Value>>,
}

/// The `t(key, vars)` function, also `t(key, fallback)` and `t(key, fallback, vars)`: a
/// string second argument is the text used when no language the plugin ships has the key.
pub(crate) fn t_function<'js>(
    ctx: &Ctx<'js>,
    translations: &Rc<Translations>,
) -> rquickjs::Result<Function<'js>> {
    let translations = translations.clone();
    Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>,
              key: Coerced<String>,
              second: Opt<Value<'js>>,
              third: Opt<Value<'js>>| {
            let as_vars = |v: Value<'js>| match to_json(&ctx, v) {
                Ok(Some(serde_json::Value::Object(m))) => Some(m),
                _ => None,
            };
            let (text, vars) = match (second.0, third.0) {
                (Some(s), third) if s.is_string() => (
                    s.as_string().and_then(|s| s.to_string().ok()),
                    third.filter(Value::is_object).and_then(as_vars),
                ),
                (Some(v), _) if v.is_object() => (None, as_vars(v)),
                _ => (None, None),
            };
            translations.translate(&key.0, text.as_deref(), vars.as_ref())
        },
    )?
    .with_name("t")
}

/// The `logger` object: `debug`, `info`, `warn`, `error`, each taking any values.
pub(super) fn logger_object<'js>(
    ctx: &Ctx<'js>,
    log: &Rc<LogBudget>,
) -> rquickjs::Result<Object<'js>> {
    let logger = Object::new(ctx.clone())?;
    for (name, level) in [
        ("debug", Level::Debug),
        ("info", Level::Info),
        ("warn", Level::Warn),
        // The seeds' name for it.
        ("warning", Level::Warn),
        ("error", Level::Error),
    ] {
        let log = log.clone();
        let f = Function::new(ctx.clone(), move |ctx: Ctx<'js>, args: Rest<Value<'js>>| {
            let mut line = String::new();
            for (i, arg) in args.0.into_iter().enumerate() {
                if line.len() > MAX_MESSAGE_BYTES {
                    break;
                }
                if i > 0 {
                    line.push(' ');
                }
                line.push_str(&log_text(&ctx, arg));
            }
            log.emit(level, &cap(line, MAX_MESSAGE_BYTES));
        })?
        .with_name(name)?;
        logger.set(name, f)?;
    }
    Ok(logger)
}

fn log_text<'js>(ctx: &Ctx<'js>, value: Value<'js>) -> String {
    if let Some(s) = value.as_string() {
        return s.to_string().unwrap_or_default();
    }
    if value.is_undefined() {
        return "undefined".into();
    }
    if value.as_exception().is_some() {
        return match describe(ctx, value) {
            Thrown::Error(text) | Thrown::StackOverflow(text) => text,
            Thrown::OutOfMemory => "out of memory".into(),
        };
    }
    match to_json_text(ctx, value) {
        Ok(Some(text)) => text,
        _ => "[value]".into(),
    }
}

/// The `context` given to `activate`: `id`, `config`, `t`, `logger`, `registerActions`.
pub(crate) fn activation_context<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    config: &Map<String, serde_json::Value>,
    register: Function<'js>,
) -> rquickjs::Result<Object<'js>> {
    let context = Object::new(ctx.clone())?;
    context.set("id", shared.plugin_id.as_str())?;
    let plugin = Object::new(ctx.clone())?;
    plugin.set("id", shared.plugin_id.as_str())?;
    plugin.set("version", shared.plugin.0.as_str())?;
    plugin.set("dir", shared.plugin.1.as_str())?;
    context.set("plugin", plugin)?;
    context.set(
        "config",
        from_json(ctx, &serde_json::Value::Object(config.clone()))?,
    )?;
    context.set("t", t_function(ctx, &shared.translations)?)?;
    context.set("logger", logger_object(ctx, &shared.log)?)?;
    context.set(
        "env",
        from_json(ctx, &serde_json::Value::Object((*shared.env).clone()))?,
    )?;
    context.set("registerActions", register)?;
    Ok(context)
}
