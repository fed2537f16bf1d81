//! Activation: evaluating the entry module, calling `activate(context)`, and the
//! `registerActions` function that collects the plugin's actions.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use rquickjs::{Ctx, Function, Module, Object, Persistent, Promise, Value};

use super::convert::{Thrown, caught, to_json};
use super::{Engine, Fault, Setup, Stop, host};
use crate::action::ActionDef;
use crate::limits::{show_bytes, show_duration};

/// The longest `deactivate()` may take: a plugin being stopped does not hold up the stop.
const DEACTIVATE_LIMIT: Duration = Duration::from_secs(2);

/// Which part of activation failed, for the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Evaluating the entry module.
    Load,
    /// Calling `activate` and checking what it registered.
    Activate,
}

/// One registered action and its `run` function.
pub(super) struct Registered {
    def: ActionDef,
    run: Persistent<Function<'static>>,
}

/// What `registerActions` collected during activation.
#[derive(Default)]
pub(super) struct Registry {
    /// Set once activation is over: later calls are refused.
    pub(super) closed: Cell<bool>,
    pub(super) called: Cell<bool>,
    pub(super) actions: RefCell<Vec<Registered>>,
    pub(super) error: RefCell<Option<String>>,
}

impl Registry {
    pub(super) fn clear(&self) {
        let drained: Vec<Registered> = self.actions.borrow_mut().drain(..).collect();
        drop(drained);
    }
}

impl Engine {
    /// Evaluates the entry module, calls its `activate(context)` and returns the actions it
    /// registered.
    pub(crate) async fn activate(&mut self) -> Result<Vec<ActionDef>, String> {
        let limit = self.setup.limits.activate_timeout;
        let deadline = Instant::now() + limit;
        self.shared.log.reset();
        self.guard.begin(limit, deadline, None);
        let result = self.activate_inner(limit, deadline).await;
        self.registry.closed.set(true);
        self.guard.end();
        let defs = result.map_err(|(stage, fault)| self.activation_message(stage, fault))?;
        Ok(defs)
    }

    async fn activate_inner(
        &mut self,
        limit: Duration,
        deadline: Instant,
    ) -> Result<Vec<ActionDef>, (Stage, Fault)> {
        let namespace = match &self.files {
            Some(files)
                if super::modules::is_commonjs(&self.setup.module_name, &self.setup.source) =>
            {
                self.load_commonjs(files.clone())
                    .map_err(|f| (Stage::Load, self.stopped_or(f)))?
            }
            _ => self.load_module(limit, deadline).await?,
        };
        self.exports = Some(namespace.clone());

        let prelude = self.prelude().map_err(|f| (Stage::Activate, f))?;
        let registry = self.registry.clone();
        let setup = self.setup.clone();
        let started = self.context.with(|ctx| {
            let inner = || -> Result<Option<Promise>, rquickjs::Error> {
                let namespace = namespace.clone().restore(&ctx)?;
                let activate: Value = namespace.get("activate")?;
                if !activate.is_function() {
                    return Ok(None);
                }
                let register = register_function(&ctx, registry, setup.clone())?;
                let context =
                    host::activation_context(&ctx, &self.shared, &setup.config, register)?;
                let prelude = prelude.restore(&ctx)?;
                let invoke: Function = prelude.get("invoke")?;
                invoke.call((activate, context)).map(Some)
            };
            match inner() {
                Ok(Some(p)) => Ok(Some(Persistent::save(&ctx, p))),
                Ok(None) => Ok(None),
                Err(e) => Err(Fault::Threw(caught(&ctx, e))),
            }
        });
        let Some(activated) = started.map_err(|f| (Stage::Activate, self.stopped_or(f)))? else {
            if !self.setup.catalog.is_empty() {
                return self
                    .bind_catalog(&namespace, true)
                    .map_err(|f| (Stage::Activate, f));
            }
            return Err((
                Stage::Activate,
                Fault::BadResult(format!(
                    "{} does not export a function named `activate`; add `export function activate(context) {{ context.registerActions([...]) }}`",
                    self.setup.module_name
                )),
            ));
        };
        self.settle(&activated, limit, deadline, None)
            .await
            .map_err(|f| (Stage::Activate, f))?;
        // A refused registration explains more than the exception it caused.
        if let Some(error) = self.registry.error.borrow().clone() {
            return Err((
                Stage::Activate,
                Fault::BadResult(format!("registerActions refused the actions: {error}")),
            ));
        }
        self.rejection(&activated)
            .map_err(|f| (Stage::Activate, f))?;
        // An Agent Spaces plugin that registered nothing may declare its actions in
        // workflow.js and tools.js instead.
        if self.setup.context_first && self.registry.actions.borrow().is_empty() {
            self.register_static()
                .map_err(|f| (Stage::Activate, self.stopped_or(f)))?;
            if let Some(error) = self.registry.error.borrow().clone() {
                return Err((
                    Stage::Activate,
                    Fault::BadResult(format!(
                        "the actions of workflow.js and tools.js were refused: {error}"
                    )),
                ));
            }
        }
        if !self.registry.called.get() && !self.setup.catalog.is_empty() {
            return self
                .bind_catalog(&namespace, true)
                .map_err(|f| (Stage::Activate, f));
        }
        // A plugin that registers no actions (a client part, a plugin whose tools are
        // all for another host's editor) keeps running with no tools, as documented.
        let registered: Vec<Registered> = self.registry.actions.borrow_mut().drain(..).collect();
        let mut defs = Vec::with_capacity(registered.len());
        for r in registered {
            self.runs.insert(r.def.name.clone(), r.run);
            defs.push(r.def);
        }
        // Tools the manifest lists that no action serves may be exported functions.
        let mut bound = self
            .bind_catalog(&namespace, false)
            .map_err(|f| (Stage::Activate, f))?;
        bound.retain(|b| !defs.iter().any(|d| d.spec.name == b.spec.name));
        defs.extend(bound);
        Ok(defs)
    }

    /// Registers the actions Agent Spaces' static `workflow.js` and `tools.js` declare
    /// (see `static_actions.js`), when the plugin has them.
    fn register_static(&mut self) -> Result<(), Fault> {
        let (Some(files), Some(dir)) = (self.files.clone(), self.setup.dir.clone()) else {
            return Ok(());
        };
        let present = |name: &str| dir.join(name).is_file();
        if !present(STATIC_FILES[0]) && !present(STATIC_FILES[1]) {
            return Ok(());
        }
        let prelude = self.prelude()?;
        let registry = self.registry.clone();
        let setup = self.setup.clone();
        self.context.with(|ctx| {
            let inner = || -> Result<(), rquickjs::Error> {
                let prelude = prelude.restore(&ctx)?;
                let commonjs: Function = prelude.get("commonjs")?;
                let mut loaded = Vec::new();
                for name in STATIC_FILES {
                    loaded.push(if present(name) {
                        let host = super::modules::cjs_host(&ctx, files.clone())?;
                        commonjs.call::<_, Value>((host, name.to_string()))?
                    } else {
                        Value::new_undefined(ctx.clone())
                    });
                }
                let make: Function = ctx.eval(crate::STATIC_ACTIONS)?;
                let list: Value = make.call((loaded[0].clone(), loaded[1].clone()))?;
                let register = register_function(&ctx, registry, setup)?;
                register.call::<_, Value>((list,))?;
                Ok(())
            };
            inner().map_err(|e| Fault::Threw(caught(&ctx, e)))
        })
    }

    /// Serves the manifest's tools (Fenix's `tool_catalog`) with the module's exported
    /// functions of the same names, each called as `fn(inputs, ctx)` like an action's
    /// `run`. With `all`, every listed tool must have its function; otherwise tools
    /// without one are skipped.
    fn bind_catalog(
        &mut self,
        namespace: &Persistent<Object<'static>>,
        all: bool,
    ) -> Result<Vec<ActionDef>, Fault> {
        let setup = self.setup.clone();
        let found = self.context.with(|ctx| {
            let exports = namespace
                .clone()
                .restore(&ctx)
                .map_err(|e| Fault::Internal(e.to_string()))?;
            let mut found = Vec::new();
            for spec in &setup.catalog {
                let value: Value = exports
                    .get(spec.name.as_str())
                    .map_err(|e| Fault::Threw(caught(&ctx, e)))?;
                match value.into_function() {
                    Some(f) => found.push((spec.clone(), Persistent::save(&ctx, f))),
                    None if all => {
                        return Err(Fault::BadResult(format!(
                            "the manifest lists the tool `{}`, but {} neither registers actions nor exports a function named `{}`; export `{}(inputs, ctx)` or register the actions in activate(context)",
                            spec.name, setup.module_name, spec.name, spec.name
                        )));
                    }
                    None => {}
                }
            }
            Ok(found)
        })?;
        let mut defs = Vec::with_capacity(found.len());
        for (spec, run) in found {
            let def = ActionDef::from_catalog(spec, &setup.prefix, setup.plane);
            self.runs.insert(def.name.clone(), run);
            defs.push(def);
        }
        Ok(defs)
    }

    /// Calls the plugin's `deactivate(context)`, if it exports one, within the activation
    /// limit (at most [`DEACTIVATE_LIMIT`]): on disable, reload, uninstall and shutdown.
    /// What goes wrong is logged; the plugin stops either way.
    pub(crate) async fn deactivate(&mut self) {
        // It runs because the plugin is shutting down: only its own deadline stops it.
        self.guard.stopping();
        if let Err(why) = self.call_export("deactivate", true).await {
            tracing::warn!(plugin = %self.setup.plugin_id, "{why}");
        }
    }

    /// Calls the plugin's `health()` export, if it has one, within [`DEACTIVATE_LIMIT`]:
    /// what it returns (`Nothing` without the export).
    pub(crate) async fn health(&mut self) -> Result<super::JsReturn, String> {
        self.call_export("health", false).await
    }

    /// Calls the export `name` — with the activation `context` when `with_context` — and
    /// waits, within the activation limit (at most [`DEACTIVATE_LIMIT`]), for what it
    /// returns; `Nothing` when there is no such export. The error says what went wrong,
    /// naming `name()`.
    async fn call_export(
        &mut self,
        name: &str,
        with_context: bool,
    ) -> Result<super::JsReturn, String> {
        let Some(exports) = self.exports.clone() else {
            return Ok(super::JsReturn::Nothing);
        };
        let prelude = self
            .prelude()
            .map_err(|_| format!("{name}(): the runtime's helpers are missing"))?;
        let limit = self.setup.limits.activate_timeout.min(DEACTIVATE_LIMIT);
        let deadline = Instant::now() + limit;
        self.shared.log.reset();
        self.guard.begin(limit, deadline, None);
        let (registry, setup) = (self.registry.clone(), self.setup.clone());
        let started = self.context.with(|ctx| {
            let inner = || -> Result<Option<Promise>, rquickjs::Error> {
                let export: Value = exports.restore(&ctx)?.get(name)?;
                if !export.is_function() {
                    return Ok(None);
                }
                let invoke: Function = prelude.restore(&ctx)?.get("invoke")?;
                if !with_context {
                    return invoke.call((export,)).map(Some);
                }
                // Registering is over: the context's registerActions refuses.
                let register = register_function(&ctx, registry, setup.clone())?;
                let context =
                    host::activation_context(&ctx, &self.shared, &setup.config, register)?;
                invoke.call((export, context)).map(Some)
            };
            match inner() {
                Ok(Some(p)) => Ok(Some(Persistent::save(&ctx, p))),
                Ok(None) => Ok(None),
                Err(e) => Err(Fault::Threw(caught(&ctx, e))),
            }
        });
        let outcome = match started {
            Ok(None) => Ok(super::JsReturn::Nothing),
            Ok(Some(promise)) => match self.settle(&promise, limit, deadline, None).await {
                Ok(()) => self.context.with(|ctx| {
                    let p = promise
                        .restore(&ctx)
                        .map_err(|e| Fault::Internal(e.to_string()))?;
                    match p.result::<Value>() {
                        None => Err(Fault::NeverSettles),
                        Some(Ok(value)) => super::fault::returned(&ctx, value, 64 * 1024),
                        Some(Err(e)) => Err(Fault::Threw(caught(&ctx, e))),
                    }
                }),
                Err(fault) => Err(fault),
            },
            Err(fault) => Err(self.stopped_or(fault)),
        };
        self.guard.end();
        outcome.map_err(|fault| match fault {
            Fault::Stopped(_) => {
                format!("{name}() did not finish within {}", show_duration(limit))
            }
            Fault::Threw(Thrown::Error(text)) => format!("{name}() threw: {text}"),
            Fault::NeverSettles => format!("{name}() returned a promise that can never settle"),
            other => format!("{name}() failed: {other:?}"),
        })
    }

    /// Evaluates the entry as an ES module (its imports resolved in the plugin directory)
    /// and returns its namespace.
    async fn load_module(
        &mut self,
        limit: Duration,
        deadline: Instant,
    ) -> Result<Persistent<Object<'static>>, (Stage, Fault)> {
        let module_name = self.setup.module_name.clone();
        let source = self.setup.source.clone();
        let loaded = self.context.with(|ctx| {
            let declared = Module::declare(ctx.clone(), module_name, source)
                .map_err(|e| Fault::Threw(caught(&ctx, e)))?;
            let (module, promise) = declared.eval().map_err(|e| Fault::Threw(caught(&ctx, e)))?;
            let namespace = module
                .namespace()
                .map_err(|e| Fault::Threw(caught(&ctx, e)))?;
            Ok((
                Persistent::save(&ctx, promise),
                Persistent::save(&ctx, namespace),
            ))
        });
        let (evaluated, namespace) = loaded.map_err(|f| (Stage::Load, self.stopped_or(f)))?;
        self.settle(&evaluated, limit, deadline, None)
            .await
            .map_err(|f| (Stage::Load, f))?;
        self.rejection(&evaluated).map_err(|f| (Stage::Load, f))?;
        Ok(namespace)
    }

    /// Runs the entry as CommonJS and returns its `module.exports`.
    fn load_commonjs(
        &mut self,
        files: std::rc::Rc<super::modules::Files>,
    ) -> Result<Persistent<Object<'static>>, Fault> {
        let prelude = self.prelude()?;
        let entry = self.setup.module_name.clone();
        self.context.with(|ctx| {
            let inner = || -> Result<Object, rquickjs::Error> {
                let prelude = prelude.restore(&ctx)?;
                let commonjs: Function = prelude.get("commonjs")?;
                let host = super::modules::cjs_host(&ctx, files)?;
                commonjs.call((host, entry.clone()))
            };
            match inner() {
                Ok(exports) => Ok(Persistent::save(&ctx, exports)),
                Err(rquickjs::Error::FromJs { .. }) => Err(Fault::BadResult(format!(
                    "{entry} sets `module.exports` to something other than an object; export an object with an `activate` function"
                ))),
                Err(e) => Err(Fault::Threw(caught(&ctx, e))),
            }
        })
    }

    fn activation_message(&self, stage: Stage, fault: Fault) -> String {
        let limits = &self.setup.limits;
        let entry = &self.setup.module_name;
        let doing = match stage {
            Stage::Load => format!("loading {entry}"),
            Stage::Activate => "activate()".to_string(),
        };
        match fault {
            Fault::Stopped(Stop::Cpu | Stop::Wall) => format!(
                "{doing} did not finish within the {} activation limit (an endless loop, or awaiting something slow?)",
                show_duration(limits.activate_timeout)
            ),
            Fault::Stopped(Stop::Cancelled | Stop::Shutdown) => {
                format!("the plugin was stopped during {doing}")
            }
            Fault::Threw(Thrown::Error(text)) if stage == Stage::Load => {
                format!("{entry} could not be loaded: {text}")
            }
            Fault::Threw(Thrown::Error(text)) => format!("activate() threw: {text}"),
            Fault::Threw(Thrown::OutOfMemory) => format!(
                "{doing} ran out of the plugin's {} memory limit",
                show_bytes(limits.memory_bytes)
            ),
            Fault::Threw(Thrown::StackOverflow(text)) => format!(
                "{doing} ran past the plugin's {} stack limit: {text}",
                show_bytes(limits.stack_bytes)
            ),
            Fault::NeverSettles => format!(
                "{doing} returned a promise that can never settle; host services are not available during activation, so there is nothing to wait for"
            ),
            Fault::BadResult(text) | Fault::Internal(text) => text,
            Fault::TooLarge(_) => format!("{doing} failed"),
        }
    }
}

/// Agent Spaces' static declarations, in the order their actions win.
const STATIC_FILES: [&str; 2] = ["workflow.js", "tools.js"];

/// The `context.registerActions` function: takes an array of actions or a factory
/// `(t) => [...]`, checks every action and records them; on a problem it records the reason
/// (so activation fails even if the script catches the error) and throws.
fn register_function<'js>(
    ctx: &Ctx<'js>,
    registry: Rc<Registry>,
    setup: Rc<Setup>,
) -> rquickjs::Result<Function<'js>> {
    Function::new(ctx.clone(), move |ctx: Ctx<'js>, arg: Value<'js>| {
        if registry.closed.get() {
            return Err(rquickjs::Exception::throw_message(
                &ctx,
                "registerActions only works while activate() runs; actions are fixed once the plugin is active",
            ));
        }
        registry.called.set(true);
        match collect_actions(&ctx, &registry, &setup, arg) {
            Ok(mut batch) => {
                registry.actions.borrow_mut().append(&mut batch);
                Ok(())
            }
            Err(Collect::Thrown(e)) => Err(e),
            Err(Collect::Invalid(message)) => {
                registry
                    .error
                    .borrow_mut()
                    .get_or_insert_with(|| message.clone());
                Err(rquickjs::Exception::throw_type(&ctx, &message))
            }
        }
    })?
    .with_name("registerActions")
}

enum Collect {
    /// A JavaScript exception is pending (the factory threw, an interrupt).
    Thrown(rquickjs::Error),
    /// The actions break a rule.
    Invalid(String),
}

fn collect_actions<'js>(
    ctx: &Ctx<'js>,
    registry: &Registry,
    setup: &Setup,
    arg: Value<'js>,
) -> Result<Vec<Registered>, Collect> {
    let factory = arg.as_function().cloned();
    let list = if let Some(factory) = &factory {
        let t = host::t_function(ctx, &setup.translations).map_err(Collect::Thrown)?;
        factory.call::<_, Value>((t,)).map_err(Collect::Thrown)?
    } else {
        arg
    };
    let Some(list) = list.into_array() else {
        return Err(Collect::Invalid(
            "registerActions takes an array of actions, or a function (t) => [...] returning one"
                .into(),
        ));
    };
    let existing: Vec<String> = registry
        .actions
        .borrow()
        .iter()
        .map(|r| r.def.name.clone())
        .collect();
    let total = existing.len() + list.len();
    if total > setup.limits.max_actions {
        return Err(Collect::Invalid(format!(
            "the plugin registers {total} actions; the limit is {}",
            setup.limits.max_actions
        )));
    }
    let mut names = existing;
    let mut batch = Vec::with_capacity(list.len());
    for (i, item) in list.iter::<Value>().enumerate() {
        let item = item.map_err(Collect::Thrown)?;
        let number = i + 1;
        let Some(obj) = item.as_object() else {
            return Err(Collect::Invalid(format!(
                "action #{number} is not an object; each action is {{ name, label, description, properties, run }}"
            )));
        };
        let run: Value = obj.get("run").map_err(Collect::Thrown)?;
        let json = match to_json(ctx, item.clone()) {
            Ok(Some(json)) => json,
            Ok(None) => serde_json::Value::Null,
            Err(Thrown::Error(why)) => {
                return Err(Collect::Invalid(format!(
                    "action #{number} cannot be read as data: {why}"
                )));
            }
            Err(_) => return Err(Collect::Invalid("out of memory reading the actions".into())),
        };
        // An Agent Spaces action marked `tool: false` is a node for its workflow editor,
        // not a tool for an agent: not served here.
        if json.get("tool") == Some(&serde_json::Value::Bool(false)) {
            continue;
        }
        let def = ActionDef::parse(&json, &setup.prefix, setup.plane).map_err(|e| {
            if e.starts_with("action `") {
                Collect::Invalid(e)
            } else {
                Collect::Invalid(format!("action #{number}: {e}"))
            }
        })?;
        let Some(run) = run.into_function() else {
            return Err(Collect::Invalid(format!(
                "action #{number} (`{}`): `run` must be a function (inputs, ctx) => result",
                def.name
            )));
        };
        if names.contains(&def.name) {
            return Err(Collect::Invalid(format!(
                "two actions are named `{}`; action names must be unique within a plugin",
                def.name
            )));
        }
        names.push(def.name.clone());
        batch.push(Registered {
            def,
            run: Persistent::save(ctx, run),
        });
    }
    if let Some(factory) = &factory {
        translate(ctx, setup, factory, &mut batch);
    }
    Ok(batch)
}

/// The titles and descriptions of the actions a factory `(t) => [...]` builds, in each
/// other language the plugin ships: the factory is called again with that language's `t`.
/// What fails to build in a language keeps the chosen language's text.
fn translate<'js>(
    ctx: &Ctx<'js>,
    setup: &Setup,
    factory: &Function<'js>,
    batch: &mut [Registered],
) {
    for (language, tables) in setup.translations.other_languages() {
        let Ok(t) = host::t_function(ctx, &Rc::new(tables)) else {
            continue;
        };
        let Ok(list) = factory.call::<_, Value>((t,)) else {
            let _ = ctx.catch();
            continue;
        };
        let Some(list) = list.into_array() else {
            continue;
        };
        for item in list.iter::<Value>().flatten() {
            let Ok(Some(json)) = to_json(ctx, item) else {
                continue;
            };
            let Ok(def) = ActionDef::parse(&json, &setup.prefix, setup.plane) else {
                continue;
            };
            if let Some(r) = batch.iter_mut().find(|r| r.def.name == def.name) {
                r.def.spec.translations.insert(
                    language.clone(),
                    toolshed_core::ToolText {
                        title: def.spec.title,
                        description: def.spec.description,
                    },
                );
            }
        }
    }
}
